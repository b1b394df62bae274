#include "weir_config.h"
#include "weir_core.h"
#include "weir_unit.h"

#ifdef WEIR_HAVE_PCRE2
#define PCRE2_CODE_UNIT_WIDTH  8
#include <pcre2.h>
#endif


static weir_regex_t *
compile(weir_pool_t *pool, const char *pattern, weir_uint_t options)
{
    weir_regex_compile_t  rc;

    weir_memzero(&rc, sizeof(rc));
    rc.pattern.len = strlen(pattern);
    rc.pattern.data = (unsigned char *) pattern;
    rc.pool = pool;
    rc.options = options;

    if (weir_regex_compile(&rc) != WEIR_OK) {
        printf("    %.*s\n", WEIR_STR_ARG(rc.err));
        return NULL;
    }

    return rc.regex;
}


static weir_int_t
exec(weir_regex_t *re, const char *subject, int *captures, weir_uint_t size)
{
    weir_str_t  s;

    s.len = strlen(subject);
    s.data = (unsigned char *) subject;

    return weir_regex_exec(re, &s, captures, size);
}


#ifdef WEIR_HAVE_PCRE2

WEIR_UNIT_TEST(regex_captures)
{
    int            cap[30];
    weir_regex_t  *re;
    weir_pool_t   *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    re = compile(pool, "^(\\w+)@(\\w+)\\.com$", 0);
    WEIR_REQUIRE(re != NULL);
    WEIR_CHECK_INT(re->captures, 2);
    WEIR_CHECK_INT(re->named_captures, 0);

    WEIR_CHECK_INT(exec(re, "alice@example.com", cap, 30), 3);
    WEIR_CHECK_INT(cap[0], 0);
    WEIR_CHECK_INT(cap[1], 17);
    WEIR_CHECK_INT(cap[2], 0);
    WEIR_CHECK_INT(cap[3], 5);
    WEIR_CHECK_INT(cap[4], 6);
    WEIR_CHECK_INT(cap[5], 13);

    WEIR_CHECK_INT(exec(re, "alice@example.org", cap, 30),
                   WEIR_REGEX_NO_MATCHED);
    WEIR_CHECK_INT(exec(re, "", cap, 30), WEIR_REGEX_NO_MATCHED);

    /* only asking whether it matches */
    WEIR_CHECK_INT(exec(re, "bob@host.com", NULL, 0), 3);
}


WEIR_UNIT_TEST(regex_captures_partial)
{
    int            cap[6];
    weir_regex_t  *re;
    weir_pool_t   *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    /* a group that does not take part is -1, -1 */
    re = compile(pool, "(a)|(b)", 0);
    WEIR_REQUIRE(re != NULL);

    WEIR_CHECK_INT(exec(re, "xb", cap, 6), 3);
    WEIR_CHECK_INT(cap[0], 1);
    WEIR_CHECK_INT(cap[1], 2);
    WEIR_CHECK_INT(cap[2], -1);
    WEIR_CHECK_INT(cap[3], -1);
    WEIR_CHECK_INT(cap[4], 1);
    WEIR_CHECK_INT(cap[5], 2);

    /* room for the whole match only: the rest is left alone */
    cap[2] = 77;
    cap[3] = 77;
    WEIR_CHECK_INT(exec(re, "b", cap, 2), 3);
    WEIR_CHECK_INT(cap[0], 0);
    WEIR_CHECK_INT(cap[1], 1);
    WEIR_CHECK_INT(cap[2], 77);
    WEIR_CHECK_INT(cap[3], 77);

    /* more groups than any regex so far: the match data grows */
    re = compile(pool, "(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)(k)(l)(m)", 0);
    WEIR_REQUIRE(re != NULL);
    WEIR_CHECK_INT(exec(re, "abcdefghijklm", NULL, 0), 14);
}


WEIR_UNIT_TEST(regex_caseless)
{
    weir_regex_t  *re;
    weir_pool_t   *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    re = compile(pool, "^/api/v[0-9]+$", 0);
    WEIR_REQUIRE(re != NULL);
    WEIR_CHECK_INT(exec(re, "/api/v2", NULL, 0), 1);
    WEIR_CHECK_INT(exec(re, "/API/V2", NULL, 0), WEIR_REGEX_NO_MATCHED);

    re = compile(pool, "^/api/v[0-9]+$", WEIR_REGEX_CASELESS);
    WEIR_REQUIRE(re != NULL);
    WEIR_CHECK_INT(exec(re, "/API/V2", NULL, 0), 1);
    WEIR_CHECK_INT(exec(re, "/api/x2", NULL, 0), WEIR_REGEX_NO_MATCHED);

    re = compile(pool, "^b$", WEIR_REGEX_MULTILINE);
    WEIR_REQUIRE(re != NULL);
    WEIR_CHECK_INT(exec(re, "a\nb\nc", NULL, 0), 1);
}


WEIR_UNIT_TEST(regex_named_captures)
{
    int             cap[9];
    weir_regex_t   *re;
    weir_pool_t    *pool;
    unsigned char  *entry;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    re = compile(pool, "(?<year>\\d{4})-(?<mon>\\d\\d)-(\\d\\d)", 0);
    WEIR_REQUIRE(re != NULL);

    WEIR_CHECK_INT(re->captures, 3);
    WEIR_CHECK_INT(re->named_captures, 2);

    /* entries: a two-byte group number, the name, NUL; sorted by name */
    WEIR_CHECK_INT(re->name_size, 2 + sizeof("year"));
    WEIR_REQUIRE(re->names != NULL);

    entry = re->names;
    WEIR_CHECK_INT(entry[0] << 8 | entry[1], 2);
    WEIR_CHECK_STR(entry + 2, "mon");

    entry += re->name_size;
    WEIR_CHECK_INT(entry[0] << 8 | entry[1], 1);
    WEIR_CHECK_STR(entry + 2, "year");

    WEIR_CHECK_INT(exec(re, "on 2026-11-29", cap, 9), 4);
    WEIR_CHECK_INT(cap[2], 3);
    WEIR_CHECK_INT(cap[3], 7);
    WEIR_CHECK_INT(cap[6], 11);
    WEIR_CHECK_INT(cap[7], 13);
}


WEIR_UNIT_TEST(regex_compile_errors)
{
    weir_regex_compile_t   rc;
    weir_pool_t           *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    weir_memzero(&rc, sizeof(rc));
    weir_str_set(&rc.pattern, "(abc");
    rc.pool = pool;

    WEIR_CHECK_INT(weir_regex_compile(&rc), WEIR_ERROR);
    WEIR_CHECK(rc.regex == NULL);
    WEIR_CHECK_MEM(rc.err.data, rc.err.len,
                   "pcre2_compile() failed: missing closing parenthesis"
                   " in \"(abc\" at \"\"");

    weir_memzero(&rc, sizeof(rc));
    weir_str_set(&rc.pattern, "ab)cd");
    rc.pool = pool;

    WEIR_CHECK_INT(weir_regex_compile(&rc), WEIR_ERROR);
    WEIR_CHECK_MEM(rc.err.data, rc.err.len,
                   "pcre2_compile() failed: unmatched closing parenthesis"
                   " in \"ab)cd\" at \")cd\"");

    weir_memzero(&rc, sizeof(rc));
    weir_str_set(&rc.pattern, "x{2,1}");
    rc.pool = pool;

    WEIR_CHECK_INT(weir_regex_compile(&rc), WEIR_ERROR);
    WEIR_CHECK(rc.err.len > sizeof("pcre2_compile() failed: ") - 1);
    WEIR_CHECK(weir_strstr(rc.err.data, "in \"x{2,1}\" at \"") != NULL);
}


WEIR_UNIT_TEST(regex_empty)
{
    int            cap[2];
    weir_str_t     s;
    weir_regex_t  *re;
    weir_pool_t   *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    re = compile(pool, "^$", 0);
    WEIR_REQUIRE(re != NULL);

    /* an empty subject need not have data */
    s.len = 0;
    s.data = NULL;
    WEIR_CHECK_INT(weir_regex_exec(re, &s, cap, 2), 1);
    WEIR_CHECK_INT(cap[0], 0);
    WEIR_CHECK_INT(cap[1], 0);

    re = compile(pool, "", 0);
    WEIR_REQUIRE(re != NULL);
    WEIR_CHECK_INT(exec(re, "anything", NULL, 0), 1);
}


/*
 * The regex module's life in a configuration: regexes compiled while it
 * is parsed are JIT-compiled by init_conf when pcre_jit is on.
 */

WEIR_UNIT_TEST(regex_module_jit)
{
    int                   cap[4];
    char                 *rv;
    void                 *conf;
    size_t                jitsize;
    uint32_t              jit;
    weir_str_t            s;
    weir_cycle_t          cycle;
    weir_regex_t         *re, *later;
    unsigned char        *long_subject;
    weir_core_module_t   *ctx;

    weir_memzero(&cycle, sizeof(cycle));
    cycle.pool = weir_unit_pool();
    cycle.log = weir_unit_log();
    WEIR_REQUIRE(cycle.pool != NULL);

    ctx = weir_regex_module.ctx;
    WEIR_CHECK_INT(weir_regex_module.type, WEIR_CORE_MODULE);
    WEIR_CHECK_MEM(ctx->name.data, ctx->name.len, "regex");
    WEIR_CHECK(weir_regex_module.commands != NULL
               && weir_str_eq_lit(&weir_regex_module.commands[0].name,
                                  "pcre_jit"));

    conf = ctx->create_conf(&cycle);
    WEIR_REQUIRE(conf != NULL);

    re = compile(cycle.pool, "^/(\\d+)/", 0);
    WEIR_REQUIRE(re != NULL);

    /* not JITed until the configuration is complete */
    jitsize = 0;
    (void) pcre2_pattern_info(re->code, PCRE2_INFO_JITSIZE, &jitsize);
    WEIR_CHECK_INT(jitsize, 0);

    rv = ctx->init_conf(&cycle, conf);
    WEIR_CHECK(rv == WEIR_CONF_OK);

    jit = 0;
    (void) pcre2_config(PCRE2_CONFIG_JIT, &jit);

#ifdef WEIR_HAVE_PCRE2_JIT
    if (jit) {
        /* pcre_jit defaults to on */
        jitsize = 0;
        (void) pcre2_pattern_info(re->code, PCRE2_INFO_JITSIZE, &jitsize);
        WEIR_CHECK(jitsize > 0);

        /* compiled after the configuration: JITed at once */
        later = compile(cycle.pool, "x(y)z", 0);
        WEIR_REQUIRE(later != NULL);

        jitsize = 0;
        (void) pcre2_pattern_info(later->code, PCRE2_INFO_JITSIZE,
                                  &jitsize);
        WEIR_CHECK(jitsize > 0);
    }
#endif

    WEIR_CHECK_INT(exec(re, "/123/x", cap, 4), 2);
    WEIR_CHECK_INT(cap[2], 1);
    WEIR_CHECK_INT(cap[3], 4);

    /* a repeated group over a long subject outgrows JIT's default 32K
     * stack (PCRE2_ERROR_JIT_STACKLIMIT): exec retries with a bigger one */
    later = compile(cycle.pool, "^(a|b)*$", 0);
    WEIR_REQUIRE(later != NULL);

    long_subject = weir_pnalloc(cycle.pool, 10000);
    WEIR_REQUIRE(long_subject != NULL);
    weir_memset(long_subject, 'a', 10000);

    s.len = 10000;
    s.data = long_subject;
    WEIR_CHECK_INT(weir_regex_exec(later, &s, cap, 4), 2);
    WEIR_CHECK_INT(cap[1], 10000);

    WEIR_CHECK(!weir_unit_log_has("[emerg]"));
    WEIR_CHECK(!weir_unit_log_has("[alert]"));
}

#else /* !WEIR_HAVE_PCRE2 */

WEIR_UNIT_TEST(regex_unsupported)
{
    weir_regex_compile_t   rc;
    weir_pool_t           *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    weir_memzero(&rc, sizeof(rc));
    weir_str_set(&rc.pattern, "^a$");
    rc.pool = pool;

    WEIR_CHECK_INT(weir_regex_compile(&rc), WEIR_ERROR);
    WEIR_CHECK_MEM(rc.err.data, rc.err.len, "regex is not supported: "
                   "configure without --without-pcre2");

    (void) compile;
    (void) exec;
}

#endif
