#ifndef _WEIR_UNIT_H_INCLUDED_
#define _WEIR_UNIT_H_INCLUDED_

/*
 * A tiny unit-test framework. A test file looks like:
 *
 *     #include "weir_config.h"
 *     #include "weir_core.h"
 *     #include "weir_unit.h"
 *
 *     WEIR_UNIT_TEST(string_atoi)
 *     {
 *         WEIR_CHECK_INT(weir_atoi((unsigned char *) "42", 2), 42);
 *     }
 *
 * WEIR_UNIT_TEST(name) defines the test function and registers it from a
 * constructor, so a test file needs no table. Names are C identifiers
 * and should be unique in the whole binary; tests run sorted by file
 * name, then by line.
 *
 * Every check records a failure (file:line and the expression, with the
 * values for the typed checks) and lets the test go on; each check is an
 * expression worth 1 when it passed, 0 when it failed, so a test can stop
 * where going on makes no sense:
 *
 *     p = weir_palloc(pool, 10);
 *     if (!WEIR_CHECK(p != NULL)) {
 *         return;
 *     }
 *
 * or shorter, WEIR_REQUIRE(p != NULL), which returns from the test.
 *
 * The runner (weir_unit_main.c) runs every test, or those whose names
 * contain one of its arguments; "-l" lists the test names. It prints a
 * line per failed check, "ok NAME" or "FAIL NAME" per test, then exactly
 * "N passed, M failed" (tests, not checks), and exits 1 when M > 0.
 */

typedef void (*weir_unit_test_pt)(void);

typedef struct weir_unit_test_s  weir_unit_test_t;

struct weir_unit_test_s {
    const char          *name;
    const char          *file;
    int                  line;
    weir_unit_test_pt    handler;
    weir_unit_test_t    *next;
};


#define WEIR_UNIT_TEST(name)                                                  \
    static void weir_unit_test_##name(void);                                  \
                                                                              \
    static weir_unit_test_t  weir_unit_desc_##name = {                        \
        #name, __FILE__, __LINE__, weir_unit_test_##name, NULL                \
    };                                                                        \
                                                                              \
    __attribute__((constructor)) static void                                  \
    weir_unit_register_##name(void)                                           \
    {                                                                         \
        weir_unit_register(&weir_unit_desc_##name);                           \
    }                                                                         \
                                                                              \
    static void                                                               \
    weir_unit_test_##name(void)


#define WEIR_CHECK(cond)                                                      \
    weir_unit_check((cond) ? 1 : 0, __FILE__, __LINE__, #cond)

/* integers of any type, compared as intmax_t: each side evaluated once */
#define WEIR_CHECK_INT(a, b)                                                  \
    weir_unit_check_int((intmax_t) (a), (intmax_t) (b), __FILE__, __LINE__,  \
                        #a, #b)

/* NUL-terminated strings; either may be NULL (equal only to NULL) */
#define WEIR_CHECK_STR(a, b)                                                  \
    weir_unit_check_str((const char *) (a), (const char *) (b), __FILE__,    \
                        __LINE__, #a, #b)

/* len bytes at p against a string literal (its length, without NUL) */
#define WEIR_CHECK_MEM(p, len, lit)                                           \
    weir_unit_check_mem((const void *) (p), (size_t) (len), lit,            \
                        sizeof(lit) - 1, __FILE__, __LINE__, #p)

/* a check that ends the test when it fails */
#define WEIR_REQUIRE(cond)                                                    \
    do {                                                                      \
        if (!WEIR_CHECK(cond)) {                                              \
            return;                                                           \
        }                                                                     \
    } while (0)


void weir_unit_register(weir_unit_test_t *test);

int weir_unit_check(int ok, const char *file, int line, const char *expr);
int weir_unit_check_int(intmax_t a, intmax_t b, const char *file, int line,
    const char *ea, const char *eb);
int weir_unit_check_str(const char *a, const char *b, const char *file,
    int line, const char *ea, const char *eb);
int weir_unit_check_mem(const void *p, size_t len, const char *lit,
    size_t lit_len, const char *file, int line, const char *ep);

/*
 * A log that writes every line (all levels, debug included) into a memory
 * buffer instead of a file, for asserting what code logged. Each call
 * returns the same log object with its fields reset (connection, action,
 * handler, next) and the buffer emptied; the buffer is also emptied
 * before each test. Text beyond 64 KiB is dropped.
 */
weir_log_t *weir_unit_log(void);
/* everything logged since the last reset, NUL-terminated */
const char *weir_unit_log_text(void);
/* is needle in the captured text? */
int weir_unit_log_has(const char *needle);
void weir_unit_log_reset(void);

/*
 * A fresh pool (WEIR_DEFAULT_POOL_SIZE, logging into the unit log). The
 * framework destroys it when the current test ends: do not destroy it.
 * NULL only when memory runs out.
 */
weir_pool_t *weir_unit_pool(void);

#endif /* _WEIR_UNIT_H_INCLUDED_ */
