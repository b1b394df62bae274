#ifndef _WEIR_STRING_H_INCLUDED_
#define _WEIR_STRING_H_INCLUDED_

/* Counted strings. data is not NUL-terminated unless a function says so.
 * Print them with "%.*s" and WEIR_STR_ARG(s), so that -Wformat checks
 * every format string. */

typedef struct {
    size_t          len;
    unsigned char  *data;
} weir_str_t;

typedef struct {
    weir_str_t      key;
    weir_str_t      value;
} weir_keyval_t;

#define weir_string(str)     { sizeof(str) - 1, (unsigned char *) str }
#define weir_null_string     { 0, NULL }
#define weir_str_set(str, text)                                               \
    (str)->len = sizeof(text) - 1; (str)->data = (unsigned char *) text
#define weir_str_null(str)   (str)->len = 0; (str)->data = NULL

#define WEIR_STR_FMT         "%.*s"
#define WEIR_STR_ARG(s)      (int) (s).len, (const char *) (s).data

#define weir_tolower(c)                                                       \
    (unsigned char) ((c >= 'A' && c <= 'Z') ? (c | 0x20) : c)
#define weir_toupper(c)                                                       \
    (unsigned char) ((c >= 'a' && c <= 'z') ? (c & ~0x20) : c)

#define weir_strncmp(s1, s2, n)                                               \
    strncmp((const char *) s1, (const char *) s2, n)
#define weir_strcmp(s1, s2)  strcmp((const char *) s1, (const char *) s2)
#define weir_strlen(s)       strlen((const char *) s)
#define weir_strchr(s1, c)                                                    \
    (unsigned char *) strchr((const char *) s1, (int) c)
#define weir_strstr(s1, s2)                                                   \
    (unsigned char *) strstr((const char *) s1, (const char *) s2)

#define weir_memzero(buf, n)       (void) memset(buf, 0, n)
#define weir_memset(buf, c, n)     (void) memset(buf, c, n)
#define weir_memcpy(dst, src, n)   (void) memcpy(dst, src, n)
#define weir_cpymem(dst, src, n)                                              \
    (((unsigned char *) memcpy(dst, src, n)) + (n))
#define weir_memmove(dst, src, n)  (void) memmove(dst, src, n)
#define weir_memcmp(s1, s2, n)                                                \
    memcmp((const char *) s1, (const char *) s2, n)

/* does weir_str_t s equal the literal? */
#define weir_str_eq_lit(s, lit)                                               \
    ((s)->len == sizeof(lit) - 1                                             \
     && weir_memcmp((s)->data, lit, sizeof(lit) - 1) == 0)

void weir_strlow(unsigned char *dst, unsigned char *src, size_t n);
weir_int_t weir_strcasecmp(unsigned char *s1, unsigned char *s2);
weir_int_t weir_strncasecmp(unsigned char *s1, unsigned char *s2, size_t n);
weir_int_t weir_str_eq(weir_str_t *a, weir_str_t *b);
/* [p, p + len) for a log line: at most (size - 8) / 4 input bytes, the
 * printable ones as they are and the rest (and " and \\) as \\xHH, "..."
 * when cut; NUL-terminated in buf, which is returned */
char *weir_quote_for_log(char *buf, size_t size, unsigned char *p,
    size_t len);
weir_int_t weir_str_caseeq(weir_str_t *a, weir_str_t *b);
unsigned char *weir_strlchr(unsigned char *p, unsigned char *last,
    unsigned char c);
unsigned char *weir_cpystrn(unsigned char *dst, unsigned char *src, size_t n);
unsigned char *weir_pstrdup(weir_pool_t *pool, weir_str_t *src);
/* a NUL-terminated copy in pool memory */
char *weir_pstrdupz(weir_pool_t *pool, weir_str_t *src);

/* decimal parsing: WEIR_ERROR on anything but digits or on overflow */
weir_int_t weir_atoi(unsigned char *line, size_t n);
ssize_t weir_atosz(unsigned char *line, size_t n);
off_t weir_atoof(unsigned char *line, size_t n);
weir_int_t weir_hextoi(unsigned char *line, size_t n);

/* "10", "10k", "10m", "10g" -> bytes; WEIR_ERROR when invalid */
ssize_t weir_parse_size(weir_str_t *line);
off_t weir_parse_offset(weir_str_t *line);
/* "500ms", "30s", "1m 30s", "2h", "1d", "1w"; is_sec: plain number means
 * seconds and the result is in seconds, else milliseconds */
weir_int_t weir_parse_time(weir_str_t *line, weir_uint_t is_sec);

/* snprintf that returns the end of what was written (never past last) */
unsigned char *weir_slprintf(unsigned char *buf, unsigned char *last,
    const char *fmt, ...) WEIR_PRINTF(3, 4);
unsigned char *weir_vslprintf(unsigned char *buf, unsigned char *last,
    const char *fmt, va_list args);
/* formats into pool memory; the result is NUL-terminated, len excludes it */
weir_int_t weir_pstrfmt(weir_pool_t *pool, weir_str_t *out,
    const char *fmt, ...) WEIR_PRINTF(3, 4);

/* n in decimal or lowercase hex at p, no NUL; returns the end. The caller
 * leaves room for WEIR_INT_T_LEN bytes. For the per-response paths, where
 * a printf call costs more than building the rest of the header. */
unsigned char *weir_sprint_uint(unsigned char *p, uint64_t n);
unsigned char *weir_sprint_hex(unsigned char *p, uint64_t n);

#endif /* _WEIR_STRING_H_INCLUDED_ */
