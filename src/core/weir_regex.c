#include "weir_config.h"
#include "weir_core.h"

#ifdef WEIR_HAVE_PCRE2
#define PCRE2_CODE_UNIT_WIDTH  8
#include <pcre2.h>
#endif


/*
 * Regexes are compiled while the configuration is parsed, but whether to
 * JIT them is known only at its end ("pcre_jit" may follow them), so the
 * regex module's conf lists what was compiled and init_conf JIT-compiles
 * the list. A regex compiled later (outside a configuration) is JITed at
 * once when the current configuration enables it.
 *
 * All matches share one pcre2_match_data, sized for the regex with the
 * most captures; workers are single-threaded, and the data is only used
 * inside weir_regex_exec.
 */


typedef struct {
    weir_flag_t       pcre_jit;
    weir_list_t      *regexes;      /* of weir_regex_elt_t * */
} weir_regex_conf_t;


#ifdef WEIR_HAVE_PCRE2

/* lives in the pool of the regex: its cleanup frees the code */
typedef struct {
    pcre2_code       *code;
    weir_str_t        pattern;
} weir_regex_elt_t;


static void weir_regex_cleanup(void *data);
static weir_int_t weir_regex_match_data_grow(weir_uint_t pairs);
static void weir_regex_jit(weir_regex_elt_t *elt, weir_log_t *log);
static void weir_regex_forget(void *data);

#endif

static void *weir_regex_create_conf(weir_cycle_t *cycle);
static char *weir_regex_init_conf(weir_cycle_t *cycle, void *conf);
static char *weir_regex_pcre_jit(weir_conf_t *cf, void *post, void *data);


static weir_conf_post_t  weir_regex_pcre_jit_post = {
    weir_regex_pcre_jit
};


static weir_command_t  weir_regex_commands[] = {

    { weir_string("pcre_jit"),
      WEIR_MAIN_CONF|WEIR_DIRECT_CONF|WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      0,
      offsetof(weir_regex_conf_t, pcre_jit),
      &weir_regex_pcre_jit_post },

      weir_null_command
};


static weir_core_module_t  weir_regex_module_ctx = {
    weir_string("regex"),
    weir_regex_create_conf,
    weir_regex_init_conf
};


weir_module_t  weir_regex_module = {
    WEIR_MODULE_V1,
    &weir_regex_module_ctx,
    weir_regex_commands,
    WEIR_CORE_MODULE,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    WEIR_MODULE_V1_PADDING
};


#ifdef WEIR_HAVE_PCRE2

/* the list of the configuration being parsed, NULL outside of one */
static weir_list_t         *weir_regex_pending;
/* JIT for regexes compiled after the configuration (pcre_jit of the
 * configuration in force) */
static weir_uint_t          weir_regex_jit_enabled;

static pcre2_match_data    *weir_regex_match_data;
static weir_uint_t          weir_regex_match_data_size;   /* pairs */

static pcre2_match_context *weir_regex_match_context;
static pcre2_jit_stack     *weir_regex_jit_stack;

#endif


weir_int_t
weir_regex_init(void)
{
    return WEIR_OK;
}


#ifdef WEIR_HAVE_PCRE2

weir_int_t
weir_regex_compile(weir_regex_compile_t *rc)
{
    int                    errcode;
    uint32_t               options, n;
    PCRE2_SIZE             erroff;
    PCRE2_SPTR             names;
    pcre2_code            *code;
    weir_regex_t          *re;
    weir_regex_elt_t      *elt, **eltp;
    weir_pool_cleanup_t   *cln;
    unsigned char          msg[256];

    options = 0;

    if (rc->options & WEIR_REGEX_CASELESS) {
        options |= PCRE2_CASELESS;
    }

    if (rc->options & WEIR_REGEX_MULTILINE) {
        options |= PCRE2_MULTILINE;
    }

    /* a pattern is a counted string: it may hold NULs, and needs none */

    code = pcre2_compile(rc->pattern.len ? rc->pattern.data
                                         : (PCRE2_SPTR) "",
                         rc->pattern.len, options, &errcode, &erroff, NULL);

    if (code == NULL) {
        if (pcre2_get_error_message(errcode, msg, sizeof(msg)) < 0) {
            (void) snprintf((char *) msg, sizeof(msg), "error %d",
                            errcode);
        }

        if (erroff > rc->pattern.len) {
            erroff = rc->pattern.len;
        }

        if (weir_pstrfmt(rc->pool, &rc->err,
                         "pcre2_compile() failed: %s in \"%.*s\" at "
                         "\"%.*s\"", (char *) msg, WEIR_STR_ARG(rc->pattern),
                         (int) (rc->pattern.len - erroff),
                         (char *) rc->pattern.data + erroff)
            != WEIR_OK)
        {
            weir_str_set(&rc->err, "pcre2_compile() failed: no memory");
        }

        return WEIR_ERROR;
    }

    cln = weir_pool_cleanup_add(rc->pool, sizeof(weir_regex_elt_t));
    if (cln == NULL) {
        pcre2_code_free(code);
        goto nomem;
    }

    elt = cln->data;
    elt->code = code;
    elt->pattern = rc->pattern;

    cln->handler = weir_regex_cleanup;

    re = weir_pcalloc(rc->pool, sizeof(weir_regex_t));
    if (re == NULL) {
        goto nomem;
    }

    re->code = code;

    n = 0;
    (void) pcre2_pattern_info(code, PCRE2_INFO_CAPTURECOUNT, &n);
    re->captures = n;

    n = 0;
    (void) pcre2_pattern_info(code, PCRE2_INFO_NAMECOUNT, &n);
    re->named_captures = n;

    if (re->named_captures) {
        n = 0;
        (void) pcre2_pattern_info(code, PCRE2_INFO_NAMEENTRYSIZE, &n);
        re->name_size = n;

        names = NULL;
        (void) pcre2_pattern_info(code, PCRE2_INFO_NAMETABLE, &names);
        re->names = (unsigned char *) names;
    }

    rc->regex = re;
    rc->captures = re->captures;
    rc->named_captures = re->named_captures;
    rc->name_size = re->name_size;
    rc->names = re->names;

    if (weir_regex_pending) {
        eltp = weir_list_push(weir_regex_pending);
        if (eltp == NULL) {
            goto nomem;
        }

        *eltp = elt;

    } else if (weir_regex_jit_enabled) {
        weir_regex_jit(elt, rc->pool->log);
    }

    return WEIR_OK;

nomem:

    weir_str_set(&rc->err, "pcre2_compile() failed: no memory");

    return WEIR_ERROR;
}


/*
 * Returns what pcre2_match() does: the number of pairs the match set
 * (the whole match and the groups up to the last one that matched; a group
 * that did not take part is -1, -1), WEIR_REGEX_NO_MATCHED, or another
 * negative PCRE2 error code. Only the first size / 2 pairs are copied to
 * captures, which may be NULL with size 0 to ask only whether s matches.
 */

weir_int_t
weir_regex_exec(weir_regex_t *re, weir_str_t *s, int *captures,
    weir_uint_t size)
{
    int          rc;
    weir_uint_t  i, n;
    PCRE2_SIZE  *ov;
    PCRE2_SPTR   subject;

    if (weir_regex_match_data_size < (weir_uint_t) re->captures + 1) {
        if (weir_regex_match_data_grow(re->captures + 1) != WEIR_OK) {
            return PCRE2_ERROR_NOMEMORY;
        }
    }

    subject = s->len ? s->data : (PCRE2_SPTR) "";

    rc = pcre2_match(re->code, subject, s->len, 0, 0, weir_regex_match_data,
                     weir_regex_match_context);

    if (rc == PCRE2_ERROR_JIT_STACKLIMIT && weir_regex_jit_stack == NULL) {

        /* a deep match outgrew the 32K default machine stack: give JIT
         * a stack of its own that can grow to 1M, once for all */

        if (weir_regex_match_context == NULL) {
            weir_regex_match_context = pcre2_match_context_create(NULL);
        }

        if (weir_regex_match_context) {
            weir_regex_jit_stack = pcre2_jit_stack_create(32 * 1024,
                                                          1024 * 1024, NULL);
        }

        if (weir_regex_jit_stack) {
            pcre2_jit_stack_assign(weir_regex_match_context, NULL,
                                   weir_regex_jit_stack);

            rc = pcre2_match(re->code, subject, s->len, 0, 0,
                             weir_regex_match_data,
                             weir_regex_match_context);
        }
    }

    if (rc < 0) {
        return rc;
    }

    /* the match data always has room for every group: rc > 0 */

    n = size / 2;

    if (n > (weir_uint_t) rc) {
        n = rc;
    }

    ov = pcre2_get_ovector_pointer(weir_regex_match_data);

    for (i = 0; i < 2 * n; i++) {
        captures[i] = (ov[i] == PCRE2_UNSET) ? -1 : (int) ov[i];
    }

    return rc;
}


static weir_int_t
weir_regex_match_data_grow(weir_uint_t pairs)
{
    pcre2_match_data  *md;

    md = pcre2_match_data_create((uint32_t) pairs, NULL);
    if (md == NULL) {
        return WEIR_ERROR;
    }

    if (weir_regex_match_data) {
        pcre2_match_data_free(weir_regex_match_data);
    }

    weir_regex_match_data = md;
    weir_regex_match_data_size = pairs;

    return WEIR_OK;
}


static void
weir_regex_jit(weir_regex_elt_t *elt, weir_log_t *log)
{
    int            rc;
    unsigned char  msg[256];

    rc = pcre2_jit_compile(elt->code, PCRE2_JIT_COMPLETE);

    if (rc != 0) {
        if (pcre2_get_error_message(rc, msg, sizeof(msg)) < 0) {
            (void) snprintf((char *) msg, sizeof(msg), "error %d", rc);
        }

        /* the interpreter still matches: only slower */
        weir_log_error(WEIR_LOG_INFO, log, 0,
                       "pcre2_jit_compile() failed: %s in \"%.*s\", ignored",
                       (char *) msg, WEIR_STR_ARG(elt->pattern));
    }
}


static void
weir_regex_cleanup(void *data)
{
    weir_regex_elt_t  *elt = data;

    if (elt->code) {
        pcre2_code_free(elt->code);
        elt->code = NULL;
    }
}


/* a configuration that failed never reaches init_conf: its list goes with
 * its pool, and later compiles must not use it */

static void
weir_regex_forget(void *data)
{
    if (weir_regex_pending == data) {
        weir_regex_pending = NULL;
    }
}

#else /* !WEIR_HAVE_PCRE2 */

weir_int_t
weir_regex_compile(weir_regex_compile_t *rc)
{
    weir_str_set(&rc->err, "regex is not supported: "
                 "configure without --without-pcre2");

    return WEIR_ERROR;
}


weir_int_t
weir_regex_exec(weir_regex_t *re, weir_str_t *s, int *captures,
    weir_uint_t size)
{
    (void) re;
    (void) s;
    (void) captures;
    (void) size;

    return WEIR_REGEX_NO_MATCHED - 1;
}

#endif


static void *
weir_regex_create_conf(weir_cycle_t *cycle)
{
    weir_regex_conf_t  *rcf;

#ifdef WEIR_HAVE_PCRE2
    weir_pool_cleanup_t  *cln;
#endif

    rcf = weir_pcalloc(cycle->pool, sizeof(weir_regex_conf_t));
    if (rcf == NULL) {
        return NULL;
    }

    rcf->pcre_jit = WEIR_CONF_UNSET;

#ifdef WEIR_HAVE_PCRE2

    rcf->regexes = weir_list_create(cycle->pool, 8,
                                    sizeof(weir_regex_elt_t *));
    if (rcf->regexes == NULL) {
        return NULL;
    }

    cln = weir_pool_cleanup_add(cycle->pool, 0);
    if (cln == NULL) {
        return NULL;
    }

    cln->handler = weir_regex_forget;
    cln->data = rcf->regexes;

    weir_regex_pending = rcf->regexes;

#endif

    return rcf;
}


static char *
weir_regex_init_conf(weir_cycle_t *cycle, void *conf)
{
    weir_regex_conf_t  *rcf = conf;

#ifdef WEIR_HAVE_PCRE2
    uint32_t            jit;
    weir_uint_t         i, pairs, n;
    weir_list_part_t   *part;
    weir_regex_elt_t  **elts;
#endif

    weir_conf_init_value(rcf->pcre_jit, 1);

#ifdef WEIR_HAVE_PCRE2

    jit = 0;

#ifdef WEIR_HAVE_PCRE2_JIT
    if (rcf->pcre_jit && pcre2_config(PCRE2_CONFIG_JIT, &jit) < 0) {
        jit = 0;
    }
#endif

    pairs = 1;
    part = &rcf->regexes->part;
    elts = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            elts = part->elts;
            i = 0;
        }

        if (elts[i]->code == NULL) {
            continue;
        }

        n = 0;
        (void) pcre2_pattern_info(elts[i]->code, PCRE2_INFO_CAPTURECOUNT,
                                  &n);

        if (n + 1 > pairs) {
            pairs = n + 1;
        }

        if (rcf->pcre_jit && jit) {
            weir_regex_jit(elts[i], cycle->log);
        }
    }

    if (weir_regex_match_data_size < pairs
        && weir_regex_match_data_grow(pairs) != WEIR_OK)
    {
        weir_log_error(WEIR_LOG_EMERG, cycle->log, 0,
                       "pcre2_match_data_create(%lu) failed",
                       (unsigned long) pairs);
        return WEIR_CONF_ERROR;
    }

    weir_regex_pending = NULL;
    weir_regex_jit_enabled = (rcf->pcre_jit && jit);

#else

    (void) cycle;

#endif

    return WEIR_CONF_OK;
}


static char *
weir_regex_pcre_jit(weir_conf_t *cf, void *post, void *data)
{
    weir_flag_t  *fp = data;

#if (defined WEIR_HAVE_PCRE2 && defined WEIR_HAVE_PCRE2_JIT)
    uint32_t      jit;
#endif

    (void) post;

    if (!*fp) {
        return WEIR_CONF_OK;
    }

#if (defined WEIR_HAVE_PCRE2 && defined WEIR_HAVE_PCRE2_JIT)

    jit = 0;

    if (pcre2_config(PCRE2_CONFIG_JIT, &jit) >= 0 && jit == 1) {
        return WEIR_CONF_OK;
    }

    weir_conf_log_error(WEIR_LOG_WARN, cf, 0,
                        "PCRE2 library does not support JIT");

#else

    weir_conf_log_error(WEIR_LOG_WARN, cf, 0,
                        "\"pcre_jit\" is not supported by this build "
                        "of weir, ignored");

#endif

    *fp = 0;

    return WEIR_CONF_OK;
}
