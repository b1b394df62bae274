#include "weir_config.h"
#include "weir_core.h"
#include "weir_unit.h"


#define WEIR_UNIT_LOG_SIZE    (64 * 1024)
#define WEIR_UNIT_MAX_POOLS   64


static void weir_unit_log_writer(weir_log_t *log, weir_uint_t level,
    unsigned char *buf, size_t len);
static int weir_unit_cmp(const void *one, const void *two);
static int weir_unit_selected(weir_unit_test_t *test, int argc, char **argv);
static void weir_unit_run(weir_unit_test_t *test);
static void weir_unit_print_value(const char *label, const void *p,
    size_t len);


static weir_unit_test_t  *weir_unit_tests;
static weir_uint_t        weir_unit_ntests;

/* failed checks of the test being run */
static weir_uint_t        weir_unit_failed_checks;

static weir_log_t         weir_unit_log_object;
static char               weir_unit_log_buf[WEIR_UNIT_LOG_SIZE];
static size_t             weir_unit_log_len;

static weir_pool_t       *weir_unit_pools[WEIR_UNIT_MAX_POOLS];
static weir_uint_t        weir_unit_npools;


void
weir_unit_register(weir_unit_test_t *test)
{
    test->next = weir_unit_tests;
    weir_unit_tests = test;
    weir_unit_ntests++;
}


int
weir_unit_check(int ok, const char *file, int line, const char *expr)
{
    if (ok) {
        return 1;
    }

    weir_unit_failed_checks++;
    printf("%s:%d: check failed: %s\n", file, line, expr);

    return 0;
}


int
weir_unit_check_int(intmax_t a, intmax_t b, const char *file, int line,
    const char *ea, const char *eb)
{
    if (a == b) {
        return 1;
    }

    weir_unit_failed_checks++;
    printf("%s:%d: check failed: %s == %s (%jd != %jd)\n",
           file, line, ea, eb, a, b);

    return 0;
}


int
weir_unit_check_str(const char *a, const char *b, const char *file,
    int line, const char *ea, const char *eb)
{
    if (a == NULL || b == NULL) {
        if (a == b) {
            return 1;
        }

    } else if (strcmp(a, b) == 0) {
        return 1;
    }

    weir_unit_failed_checks++;
    printf("%s:%d: check failed: %s == %s\n", file, line, ea, eb);
    weir_unit_print_value("got", a, a ? strlen(a) : 0);
    weir_unit_print_value("expected", b, b ? strlen(b) : 0);

    return 0;
}


int
weir_unit_check_mem(const void *p, size_t len, const char *lit,
    size_t lit_len, const char *file, int line, const char *ep)
{
    if (p != NULL && len == lit_len && memcmp(p, lit, len) == 0) {
        return 1;
    }

    if (p == NULL && lit_len == 0) {
        return 1;
    }

    weir_unit_failed_checks++;
    printf("%s:%d: check failed: %s (%zu bytes, expected %zu)\n",
           file, line, ep, len, lit_len);
    weir_unit_print_value("got", p, len);
    weir_unit_print_value("expected", lit, lit_len);

    return 0;
}


/* shows a value with control and non-ASCII bytes escaped, cut at 200 */

static void
weir_unit_print_value(const char *label, const void *p, size_t len)
{
    size_t                i, n;
    const unsigned char  *s;

    if (p == NULL) {
        printf("    %s: NULL\n", label);
        return;
    }

    s = p;
    n = len > 200 ? 200 : len;

    printf("    %s: \"", label);

    for (i = 0; i < n; i++) {
        if (s[i] == '"' || s[i] == '\\') {
            printf("\\%c", s[i]);

        } else if (s[i] >= 0x20 && s[i] < 0x7f) {
            putchar(s[i]);

        } else {
            printf("\\x%02x", s[i]);
        }
    }

    printf("\"%s\n", n < len ? "..." : "");
}


static void
weir_unit_log_writer(weir_log_t *log, weir_uint_t level, unsigned char *buf,
    size_t len)
{
    size_t  room;

    (void) log;
    (void) level;

    room = sizeof(weir_unit_log_buf) - 1 - weir_unit_log_len;

    if (len > room) {
        len = room;
    }

    memcpy(weir_unit_log_buf + weir_unit_log_len, buf, len);
    weir_unit_log_len += len;
    weir_unit_log_buf[weir_unit_log_len] = '\0';
}


weir_log_t *
weir_unit_log(void)
{
    weir_log_t  *log;

    log = &weir_unit_log_object;

    weir_memzero(log, sizeof(weir_log_t));
    log->log_level = WEIR_LOG_DEBUG;
    log->writer = weir_unit_log_writer;

    weir_unit_log_reset();

    return log;
}


const char *
weir_unit_log_text(void)
{
    return weir_unit_log_buf;
}


int
weir_unit_log_has(const char *needle)
{
    return strstr(weir_unit_log_buf, needle) != NULL;
}


void
weir_unit_log_reset(void)
{
    weir_unit_log_len = 0;
    weir_unit_log_buf[0] = '\0';
}


weir_pool_t *
weir_unit_pool(void)
{
    weir_pool_t  *pool;

    if (weir_unit_npools == WEIR_UNIT_MAX_POOLS) {
        printf("weir_unit_pool(): more than %d pools in one test\n",
               WEIR_UNIT_MAX_POOLS);
        return NULL;
    }

    pool = weir_create_pool(WEIR_DEFAULT_POOL_SIZE, &weir_unit_log_object);
    if (pool == NULL) {
        return NULL;
    }

    weir_unit_pools[weir_unit_npools++] = pool;

    return pool;
}


static int
weir_unit_cmp(const void *one, const void *two)
{
    int                      rc;
    const weir_unit_test_t  *a, *b;

    a = *(weir_unit_test_t * const *) one;
    b = *(weir_unit_test_t * const *) two;

    rc = strcmp(a->file, b->file);
    if (rc != 0) {
        return rc;
    }

    return (a->line > b->line) - (a->line < b->line);
}


static int
weir_unit_selected(weir_unit_test_t *test, int argc, char **argv)
{
    int  i;

    if (argc < 2) {
        return 1;
    }

    for (i = 1; i < argc; i++) {
        if (strstr(test->name, argv[i]) != NULL) {
            return 1;
        }
    }

    return 0;
}


static void
weir_unit_run(weir_unit_test_t *test)
{
    weir_uint_t  i;

    weir_unit_failed_checks = 0;

    /* each test starts from the same state whatever the previous did */
    (void) weir_unit_log();
    weir_use_stderr = 0;
    weir_time_update();

    test->handler();

    for (i = 0; i < weir_unit_npools; i++) {
        weir_destroy_pool(weir_unit_pools[i]);
    }

    weir_unit_npools = 0;
}


int
main(int argc, char **argv)
{
    int                 list;
    weir_uint_t         i, n, passed, failed;
    weir_unit_test_t   *test, **tests;

    /* keep the order of output lines when a crash cuts the run short */
    setvbuf(stdout, NULL, _IOLBF, 0);

    list = (argc == 2 && strcmp(argv[1], "-l") == 0);

    tests = malloc((weir_unit_ntests + 1) * sizeof(weir_unit_test_t *));
    if (tests == NULL) {
        printf("malloc() failed\n");
        return 2;
    }

    n = 0;

    for (test = weir_unit_tests; test; test = test->next) {
        tests[n++] = test;
    }

    qsort(tests, n, sizeof(weir_unit_test_t *), weir_unit_cmp);

    if (list) {
        for (i = 0; i < n; i++) {
            printf("%s\n", tests[i]->name);
        }

        free(tests);
        return 0;
    }

    weir_time_init();

    passed = 0;
    failed = 0;

    for (i = 0; i < n; i++) {
        if (!weir_unit_selected(tests[i], argc, argv)) {
            continue;
        }

        weir_unit_run(tests[i]);

        if (weir_unit_failed_checks) {
            printf("FAIL %s\n", tests[i]->name);
            failed++;

        } else {
            printf("ok %s\n", tests[i]->name);
            passed++;
        }
    }

    free(tests);

    if (passed + failed == 0 && argc > 1) {
        printf("no test matches the arguments\n");
        printf("0 passed, 0 failed\n");
        return 1;
    }

    printf("%lu passed, %lu failed\n",
           (unsigned long) passed, (unsigned long) failed);

    return failed ? 1 : 0;
}
