#ifndef _WEIR_REGEX_H_INCLUDED_
#define _WEIR_REGEX_H_INCLUDED_

/*
 * A thin wrapper over PCRE2 (8-bit): compile at configuration time (with
 * JIT when the library has it), match at run time into a captures array of
 * int pairs. Without PCRE2 (configure --without-pcre2) compiling fails with
 * a clear message.
 */

#define WEIR_REGEX_NO_MATCHED   -1
#define WEIR_REGEX_CASELESS     0x1
#define WEIR_REGEX_MULTILINE    0x2

typedef struct {
    void            *code;          /* pcre2_code * */
    weir_int_t       captures;      /* number of capture groups */
    weir_int_t       named_captures;
    weir_int_t       name_size;
    unsigned char   *names;
} weir_regex_t;

typedef struct {
    weir_str_t       pattern;
    weir_pool_t     *pool;
    weir_uint_t      options;

    weir_regex_t    *regex;
    weir_int_t       captures;
    weir_int_t       named_captures;
    weir_int_t       name_size;
    unsigned char   *names;
    weir_str_t       err;           /* message when compile fails */
} weir_regex_compile_t;

weir_int_t weir_regex_init(void);
weir_int_t weir_regex_compile(weir_regex_compile_t *rc);
/*
 * Matches s against re; captures (may be NULL) receives size/2 (start, end)
 * pairs. Returns the number of pairs set (>0), WEIR_REGEX_NO_MATCHED, or
 * another negative value on error.
 * (The count is PCRE2's: the whole match plus the groups up to the last
 * one that matched; it can exceed size/2, of which only size/2 pairs are
 * copied. A group that did not take part is -1, -1.)
 */
weir_int_t weir_regex_exec(weir_regex_t *re, weir_str_t *s, int *captures,
    weir_uint_t size);

/* the core module with the "pcre_jit" directive (added for the tests and
 * for weir_get_conf) */
extern weir_module_t  weir_regex_module;

#endif /* _WEIR_REGEX_H_INCLUDED_ */
