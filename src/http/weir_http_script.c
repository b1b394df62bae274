#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_http.h"


/*
 * Complex values.
 *
 * "/data/$host${uri}x$1" compiles, once, into two short programs over the
 * same pieces:
 *
 *   lengths:  CONST 7 (all literal bytes)  VAR host  VAR uri  CAPTURE 1
 *   values:   COPY "/data/"  VAR host  VAR uri  COPY "x"  CAPTURE 1
 *
 * Evaluation runs the lengths program to size one allocation, then the
 * values program to fill it. Both read variables through
 * r->variables, so a value computed for the length is the very value
 * copied (the no-cacheable ones are flushed once, before the lengths).
 *
 * Syntax: "$name" (letters, digits, "_"), "${name}" to end a name
 * inside text, "$0".."$9" the captures of the last regex match, and
 * "\$" for a literal dollar sign. A name not registered by the end of
 * the http block is a configuration error (weir_http_variables_init_vars
 * reports it at the line of its first use).
 */


#define WEIR_HTTP_SCRIPT_END        0
#define WEIR_HTTP_SCRIPT_CONST      1   /* lengths: arg bytes */
#define WEIR_HTTP_SCRIPT_COPY       2   /* values: arg bytes of text */
#define WEIR_HTTP_SCRIPT_VAR        3   /* arg: variable index */
#define WEIR_HTTP_SCRIPT_CAPTURE    4   /* arg: capture number */

typedef struct {
    weir_uint_t                  op;
    weir_uint_t                  arg;
    unsigned char               *text;
} weir_http_script_code_t;

/* the compiled form behind cv->lengths and cv->values */
typedef struct {
    weir_http_script_code_t     *code;      /* ends with SCRIPT_END */
    weir_str_t                   prefix;    /* for relative paths */
    unsigned                     zero:1;
} weir_http_script_t;

/* a compilation in progress */
typedef struct {
    weir_conf_t                 *cf;
    weir_str_t                  *source;
    weir_array_t                 lengths;   /* weir_http_script_code_t */
    weir_array_t                 values;
    weir_array_t                 flushes;   /* weir_uint_t */
    size_t                       literal;   /* literal bytes so far */
    unsigned char               *text;      /* unescaped literal text */
    unsigned char               *text_end;
    weir_uint_t                  escapes;
} weir_http_script_compile_t;


static weir_int_t weir_http_script_compile(weir_http_script_compile_t *sc);
static weir_int_t weir_http_script_add_code(weir_array_t *a, weir_uint_t op,
    weir_uint_t arg, unsigned char *text);
static weir_int_t weir_http_script_add_var(weir_http_script_compile_t *sc,
    weir_str_t *name);
static weir_int_t weir_http_script_flush_text(
    weir_http_script_compile_t *sc, unsigned char *start);
static weir_int_t weir_http_script_full_name(weir_conf_t *cf,
    weir_http_compile_complex_value_t *ccv, weir_str_t *value);
static weir_int_t weir_http_script_prefix(weir_conf_t *cf,
    weir_http_compile_complex_value_t *ccv, weir_str_t *prefix);
static weir_int_t weir_http_script_capture(weir_http_request_t *r,
    weir_uint_t n, weir_str_t *value);


weir_uint_t
weir_http_script_variables_count(weir_str_t *value)
{
    size_t       i;
    weir_uint_t  n;

    n = 0;

    for (i = 0; i < value->len; i++) {
        if (value->data[i] == '$') {
            n++;
        }
    }

    return n;
}


static weir_uint_t
weir_http_script_name_char(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')
           || (ch >= '0' && ch <= '9') || ch == '_';
}


weir_int_t
weir_http_compile_complex_value(weir_http_compile_complex_value_t *ccv)
{
    ssize_t                      size;
    weir_str_t                   v, full;
    weir_http_script_t          *lengths, *values;
    weir_http_complex_value_t   *cv;
    weir_http_script_compile_t   sc;
    weir_uint_t                 *flush;
    weir_conf_t                 *cf;

    cf = ccv->cf;
    v = *ccv->value;
    cv = ccv->complex_value;

    weir_memzero(cv, sizeof(weir_http_complex_value_t));
    cv->value = v;

    if (weir_http_script_variables_count(&v) == 0) {

        /* a plain value: resolved once here */

        if (ccv->conf_prefix || ccv->root_prefix) {
            full = v;

            if (weir_http_script_full_name(cf, ccv, &full) != WEIR_OK) {
                return WEIR_ERROR;
            }

            cv->value = full;

        } else if (ccv->zero) {
            cv->value.data = (unsigned char *) weir_pstrdupz(cf->pool, &v);
            if (cv->value.data == NULL) {
                return WEIR_ERROR;
            }
        }

        size = weir_parse_size(&cv->value);

        if (size >= 0) {
            cv->u.size = (size_t) size;
        }

        return WEIR_OK;
    }

    weir_memzero(&sc, sizeof(weir_http_script_compile_t));
    sc.cf = cf;
    sc.source = &v;

    if (weir_array_init(&sc.lengths, cf->pool, 8,
                        sizeof(weir_http_script_code_t))
        != WEIR_OK
        || weir_array_init(&sc.values, cf->pool, 8,
                           sizeof(weir_http_script_code_t))
           != WEIR_OK
        || weir_array_init(&sc.flushes, cf->pool, 4, sizeof(weir_uint_t))
           != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    sc.text = weir_pnalloc(cf->pool, v.len);
    if (sc.text == NULL) {
        return WEIR_ERROR;
    }

    sc.text_end = sc.text;

    if (weir_http_script_compile(&sc) != WEIR_OK) {
        return WEIR_ERROR;
    }

    if (sc.lengths.nelts == 0) {

        /* only escapes ("\$"): a plain value after all */

        cv->value.len = (size_t) (sc.text_end - sc.text);
        cv->value.data = sc.text;

        if (ccv->conf_prefix || ccv->root_prefix || ccv->zero) {
            full = cv->value;

            if (ccv->conf_prefix || ccv->root_prefix) {
                if (weir_http_script_full_name(cf, ccv, &full) != WEIR_OK) {
                    return WEIR_ERROR;
                }

            } else {
                full.data = (unsigned char *) weir_pstrdupz(cf->pool, &full);
                if (full.data == NULL) {
                    return WEIR_ERROR;
                }
            }

            cv->value = full;
        }

        return WEIR_OK;
    }

    if (sc.literal) {
        if (weir_http_script_add_code(&sc.lengths, WEIR_HTTP_SCRIPT_CONST,
                                      sc.literal, NULL)
            != WEIR_OK)
        {
            return WEIR_ERROR;
        }
    }

    if (weir_http_script_add_code(&sc.lengths, WEIR_HTTP_SCRIPT_END, 0, NULL)
        != WEIR_OK
        || weir_http_script_add_code(&sc.values, WEIR_HTTP_SCRIPT_END, 0,
                                     NULL)
           != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    flush = weir_array_push(&sc.flushes);
    if (flush == NULL) {
        return WEIR_ERROR;
    }

    *flush = (weir_uint_t) -1;

    lengths = weir_pcalloc(cf->pool, sizeof(weir_http_script_t));
    values = weir_pcalloc(cf->pool, sizeof(weir_http_script_t));
    if (lengths == NULL || values == NULL) {
        return WEIR_ERROR;
    }

    lengths->code = sc.lengths.elts;
    values->code = sc.values.elts;
    lengths->zero = values->zero = ccv->zero;

    if (ccv->conf_prefix || ccv->root_prefix) {
        if (weir_http_script_prefix(cf, ccv, &values->prefix) != WEIR_OK) {
            return WEIR_ERROR;
        }

        lengths->prefix = values->prefix;
    }

    cv->lengths = lengths;
    cv->values = values;
    cv->flushes = sc.flushes.elts;

    return WEIR_OK;
}


static weir_int_t
weir_http_script_compile(weir_http_script_compile_t *sc)
{
    weir_uint_t     bracket;
    weir_str_t      name;
    unsigned char  *p, *last, *start, ch;

    p = sc->source->data;
    last = p + sc->source->len;
    start = sc->text_end;

    while (p < last) {

        if (*p == '\\' && p + 1 < last && p[1] == '$') {
            *sc->text_end++ = '$';
            p += 2;
            continue;
        }

        if (*p != '$') {
            *sc->text_end++ = *p++;
            continue;
        }

        /* a variable: first the text before it */

        if (weir_http_script_flush_text(sc, start) != WEIR_OK) {
            return WEIR_ERROR;
        }

        p++;

        if (p == last) {
            weir_conf_log_error(WEIR_LOG_EMERG, sc->cf, 0,
                                "invalid variable name in \"%.*s\"",
                                WEIR_STR_ARG(*sc->source));
            return WEIR_ERROR;
        }

        ch = *p;

        if (ch >= '0' && ch <= '9') {

            /* "$1abc" is capture 1 and the text "abc" */

            if (weir_http_script_add_code(&sc->lengths,
                                          WEIR_HTTP_SCRIPT_CAPTURE,
                                          (weir_uint_t) (ch - '0'), NULL)
                != WEIR_OK
                || weir_http_script_add_code(&sc->values,
                                             WEIR_HTTP_SCRIPT_CAPTURE,
                                             (weir_uint_t) (ch - '0'), NULL)
                   != WEIR_OK)
            {
                return WEIR_ERROR;
            }

            p++;
            start = sc->text_end;
            continue;
        }

        bracket = 0;

        if (ch == '{') {
            bracket = 1;
            p++;
        }

        name.data = p;

        while (p < last && weir_http_script_name_char(*p)) {
            p++;
        }

        name.len = (size_t) (p - name.data);

        if (bracket) {
            if (p == last || *p != '}') {
                weir_conf_log_error(WEIR_LOG_EMERG, sc->cf, 0,
                                    "the closing bracket in \"%.*s\" "
                                    "variable is missing",
                                    WEIR_STR_ARG(name));
                return WEIR_ERROR;
            }

            p++;
        }

        if (name.len == 0) {
            weir_conf_log_error(WEIR_LOG_EMERG, sc->cf, 0,
                                "invalid variable name in \"%.*s\"",
                                WEIR_STR_ARG(*sc->source));
            return WEIR_ERROR;
        }

        if (weir_http_script_add_var(sc, &name) != WEIR_OK) {
            return WEIR_ERROR;
        }

        start = sc->text_end;
    }

    return weir_http_script_flush_text(sc, start);
}


/* emits the literal text collected since start */
static weir_int_t
weir_http_script_flush_text(weir_http_script_compile_t *sc,
    unsigned char *start)
{
    size_t  len;

    len = (size_t) (sc->text_end - start);

    if (len == 0) {
        return WEIR_OK;
    }

    sc->literal += len;

    return weir_http_script_add_code(&sc->values, WEIR_HTTP_SCRIPT_COPY, len,
                                     start);
}


static weir_int_t
weir_http_script_add_var(weir_http_script_compile_t *sc, weir_str_t *name)
{
    weir_int_t    index;
    weir_uint_t  *flush;

    index = weir_http_get_variable_index(sc->cf, name);

    if (index == WEIR_ERROR) {
        return WEIR_ERROR;
    }

    flush = weir_array_push(&sc->flushes);
    if (flush == NULL) {
        return WEIR_ERROR;
    }

    *flush = (weir_uint_t) index;

    if (weir_http_script_add_code(&sc->lengths, WEIR_HTTP_SCRIPT_VAR,
                                  (weir_uint_t) index, NULL)
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    return weir_http_script_add_code(&sc->values, WEIR_HTTP_SCRIPT_VAR,
                                     (weir_uint_t) index, NULL);
}


static weir_int_t
weir_http_script_add_code(weir_array_t *a, weir_uint_t op, weir_uint_t arg,
    unsigned char *text)
{
    weir_http_script_code_t  *code;

    code = weir_array_push(a);
    if (code == NULL) {
        return WEIR_ERROR;
    }

    code->op = op;
    code->arg = arg;
    code->text = text;

    return WEIR_OK;
}


/* a plain path made absolute against the configured prefix (the
 * result is NUL-terminated) */
static weir_int_t
weir_http_script_full_name(weir_conf_t *cf,
    weir_http_compile_complex_value_t *ccv, weir_str_t *value)
{
    return weir_conf_full_name(cf->cycle, value, ccv->conf_prefix);
}


/* the prefix a relative result gets at run time, ending with "/" */
static weir_int_t
weir_http_script_prefix(weir_conf_t *cf,
    weir_http_compile_complex_value_t *ccv, weir_str_t *prefix)
{
    weir_str_t     *p;
    unsigned char  *data;

    p = ccv->conf_prefix ? &cf->cycle->conf_prefix : &cf->cycle->prefix;

    if (p->len == 0 || p->data[p->len - 1] == '/') {
        *prefix = *p;
        return WEIR_OK;
    }

    data = weir_pnalloc(cf->pool, p->len + 1);
    if (data == NULL) {
        return WEIR_ERROR;
    }

    weir_memcpy(data, p->data, p->len);
    data[p->len] = '/';

    prefix->data = data;
    prefix->len = p->len + 1;

    return WEIR_OK;
}


static weir_int_t
weir_http_script_capture(weir_http_request_t *r, weir_uint_t n,
    weir_str_t *value)
{
    int  start, end;

    n *= 2;

    if (r->captures == NULL || r->captures_data == NULL
        || n + 1 >= r->ncaptures)
    {
        value->len = 0;
        value->data = NULL;
        return WEIR_DECLINED;
    }

    start = r->captures[n];
    end = r->captures[n + 1];

    if (start < 0 || end < start) {
        value->len = 0;
        value->data = NULL;
        return WEIR_DECLINED;
    }

    value->data = r->captures_data + start;
    value->len = (size_t) (end - start);

    return WEIR_OK;
}


weir_int_t
weir_http_complex_value(weir_http_request_t *r,
    weir_http_complex_value_t *val, weir_str_t *value)
{
    size_t                       len, reserve;
    weir_str_t                   cap;
    weir_uint_t                 *index;
    unsigned char               *buf, *p;
    weir_http_script_t          *lengths, *values;
    weir_http_script_code_t     *code;
    weir_http_variable_value_t  *vv;

    if (val->lengths == NULL) {
        *value = val->value;
        return WEIR_OK;
    }

    /* recompute the values that may change during a request once, so
     * that both passes below see the same bytes */

    if (r->variables == NULL) {
        return WEIR_ERROR;
    }

    for (index = val->flushes; *index != (weir_uint_t) -1; index++) {
        vv = &r->variables[*index];

        if (vv->no_cacheable) {
            vv->valid = 0;
            vv->not_found = 0;
        }
    }

    lengths = val->lengths;
    values = val->values;

    len = 0;

    for (code = lengths->code; code->op != WEIR_HTTP_SCRIPT_END; code++) {

        switch (code->op) {

        case WEIR_HTTP_SCRIPT_CONST:
            len += code->arg;
            break;

        case WEIR_HTTP_SCRIPT_VAR:
            vv = weir_http_get_indexed_variable(r, code->arg);
            if (vv == NULL) {
                return WEIR_ERROR;
            }

            if (!vv->not_found) {
                len += vv->len;
            }

            break;

        case WEIR_HTTP_SCRIPT_CAPTURE:
            (void) weir_http_script_capture(r, code->arg, &cap);
            len += cap.len;
            break;
        }
    }

    /* a relative path gets the prefix: room for it in front */

    reserve = lengths->prefix.len;

    /* always NUL-terminated: "zero" users rely on it, others ignore it */

    buf = weir_pnalloc(r->pool, reserve + len + 1);
    if (buf == NULL) {
        return WEIR_ERROR;
    }

    p = buf + reserve;

    for (code = values->code; code->op != WEIR_HTTP_SCRIPT_END; code++) {

        switch (code->op) {

        case WEIR_HTTP_SCRIPT_COPY:
            p = weir_cpymem(p, code->text, code->arg);
            break;

        case WEIR_HTTP_SCRIPT_VAR:
            vv = weir_http_get_indexed_variable(r, code->arg);
            if (vv == NULL) {
                return WEIR_ERROR;
            }

            if (!vv->not_found && vv->len) {
                p = weir_cpymem(p, vv->data, vv->len);
            }

            break;

        case WEIR_HTTP_SCRIPT_CAPTURE:
            if (weir_http_script_capture(r, code->arg, &cap) == WEIR_OK) {
                p = weir_cpymem(p, cap.data, cap.len);
            }

            break;
        }
    }

    if ((size_t) (p - buf - reserve) != len) {

        /* a handler gave a different value the second time */

        weir_log_error(WEIR_LOG_ALERT, r->connection->log, 0,
                       "complex value \"%.*s\" changed while evaluated",
                       WEIR_STR_ARG(val->value));
        return WEIR_ERROR;
    }

    *p = '\0';

    value->data = buf + reserve;
    value->len = len;

    if (reserve && !(len && buf[reserve] == '/')) {
        weir_memcpy(buf, lengths->prefix.data, reserve);
        value->data = buf;
        value->len = reserve + len;
    }

    return WEIR_OK;
}


size_t
weir_http_complex_value_size(weir_http_request_t *r,
    weir_http_complex_value_t *val, size_t default_value)
{
    ssize_t     size;
    weir_str_t  value;

    if (val->lengths == NULL) {
        size = weir_parse_size(&val->value);
        return size < 0 ? default_value : (size_t) size;
    }

    if (weir_http_complex_value(r, val, &value) != WEIR_OK) {
        return default_value;
    }

    size = weir_parse_size(&value);

    if (size < 0) {
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "invalid size \"%.*s\"", WEIR_STR_ARG(value));
        return default_value;
    }

    return (size_t) size;
}


static char *
weir_http_set_complex_value(weir_conf_t *cf, weir_command_t *cmd,
    void *conf, weir_uint_t zero)
{
    char                               *p;
    weir_str_t                         *value;
    weir_http_complex_value_t         **cv;
    weir_conf_post_t                   *post;
    weir_http_compile_complex_value_t   ccv;

    p = conf;

    cv = (weir_http_complex_value_t **) (p + cmd->offset);

    if (*cv != NULL && *cv != WEIR_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    *cv = weir_palloc(cf->pool, sizeof(weir_http_complex_value_t));
    if (*cv == NULL) {
        return WEIR_CONF_ERROR;
    }

    value = cf->args->elts;

    weir_memzero(&ccv, sizeof(weir_http_compile_complex_value_t));
    ccv.cf = cf;
    ccv.value = &value[1];
    ccv.complex_value = *cv;
    ccv.zero = zero;

    if (weir_http_compile_complex_value(&ccv) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    if (cmd->post) {
        post = cmd->post;
        return post->post_handler(cf, post, *cv);
    }

    return WEIR_CONF_OK;
}


char *
weir_http_set_complex_value_slot(weir_conf_t *cf, weir_command_t *cmd,
    void *conf)
{
    return weir_http_set_complex_value(cf, cmd, conf, 0);
}


char *
weir_http_set_complex_value_zero_slot(weir_conf_t *cf, weir_command_t *cmd,
    void *conf)
{
    return weir_http_set_complex_value(cf, cmd, conf, 1);
}
