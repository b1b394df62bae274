#include "weir_config.h"
#include "weir_core.h"
#include "weir_unit.h"

#include "test_conf_modules.h"


/*
 * The configuration parser against a fake module table: each test writes
 * its configuration into a file of a private temporary directory, parses
 * it with a hand-built cycle and checks the values set or the exact error
 * line logged.
 */

#define WEIR_TEST_MAX_FILES  64


typedef struct {
    weir_pool_t             *pool;
    weir_cycle_t            *cycle;
    weir_conf_t              cf;
    weir_test_core_conf_t   *core;
    weir_test_block_conf_t  *block;
    weir_str_t               file;      /* the last file written */
} weir_test_conf_t;


static const char *weir_test_dir(void);
static void weir_test_cleanup(void);
static weir_int_t weir_test_write(const char *name, const char *text,
    size_t len, weir_str_t *path);
static weir_int_t weir_test_setup(weir_test_conf_t *t, weir_pool_t *pool);
static char *weir_test_parse(weir_test_conf_t *t, const char *name,
    const char *text);
static int weir_test_logged(const char *level, const char *msg,
    weir_str_t *file, weir_uint_t line);
static int weir_test_error(const char *text, const char *msg,
    weir_uint_t line);
static int weir_test_arg(weir_test_conf_t *t, weir_uint_t i,
    const char *expected, size_t len);


static char   weir_test_dir_name[64];
static char  *weir_test_files[WEIR_TEST_MAX_FILES];
static int    weir_test_nfiles;


/* a private directory, removed with what was written to it at exit */

static const char *
weir_test_dir(void)
{
    if (weir_test_dir_name[0] != '\0') {
        return weir_test_dir_name;
    }

    snprintf(weir_test_dir_name, sizeof(weir_test_dir_name),
             "/tmp/weir-test-conf-XXXXXX");

    if (mkdtemp(weir_test_dir_name) == NULL) {
        printf("mkdtemp() failed: %s\n", strerror(errno));
        weir_test_dir_name[0] = '\0';
        return NULL;
    }

    atexit(weir_test_cleanup);

    return weir_test_dir_name;
}


static void
weir_test_cleanup(void)
{
    int  i;

    /* files first, then directories, in reverse order of creation */

    for (i = weir_test_nfiles - 1; i >= 0; i--) {
        if (unlink(weir_test_files[i]) == -1 && errno == EISDIR) {
            (void) rmdir(weir_test_files[i]);
        }

        if (errno == EPERM) {
            (void) rmdir(weir_test_files[i]);
        }

        free(weir_test_files[i]);
    }

    weir_test_nfiles = 0;

    if (weir_test_dir_name[0] != '\0') {
        (void) rmdir(weir_test_dir_name);
    }
}


static void
weir_test_remember(const char *path)
{
    int  i;

    for (i = 0; i < weir_test_nfiles; i++) {
        if (strcmp(weir_test_files[i], path) == 0) {
            return;
        }
    }

    if (weir_test_nfiles < WEIR_TEST_MAX_FILES) {
        weir_test_files[weir_test_nfiles] = strdup(path);

        if (weir_test_files[weir_test_nfiles]) {
            weir_test_nfiles++;
        }
    }
}


static weir_int_t
weir_test_mkdir(const char *name)
{
    char         path[256];
    const char  *dir;

    dir = weir_test_dir();
    if (dir == NULL) {
        return WEIR_ERROR;
    }

    snprintf(path, sizeof(path), "%s/%s", dir, name);

    if (mkdir(path, 0700) == -1 && errno != EEXIST) {
        return WEIR_ERROR;
    }

    weir_test_remember(path);

    return WEIR_OK;
}


/* writes dir/name; path gets the full name (static storage per call) */

static weir_int_t
weir_test_write(const char *name, const char *text, size_t len,
    weir_str_t *path)
{
    int          fd;
    const char  *dir;
    static char  full[256];

    dir = weir_test_dir();
    if (dir == NULL) {
        return WEIR_ERROR;
    }

    snprintf(full, sizeof(full), "%s/%s", dir, name);

    fd = open(full, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd == -1) {
        printf("open(%s) failed: %s\n", full, strerror(errno));
        return WEIR_ERROR;
    }

    if (weir_write_fd(fd, text, len) != (ssize_t) len) {
        close(fd);
        return WEIR_ERROR;
    }

    close(fd);

    weir_test_remember(full);

    if (path) {
        path->len = strlen(full);
        path->data = (unsigned char *) full;
    }

    return WEIR_OK;
}


static weir_int_t
weir_test_setup(weir_test_conf_t *t, weir_pool_t *pool)
{
    const char  *dir;

    weir_memzero(t, sizeof(weir_test_conf_t));

    dir = weir_test_dir();

    if (pool == NULL || dir == NULL) {
        return WEIR_ERROR;
    }

    t->pool = pool;

    t->cycle = weir_test_conf_cycle(pool, weir_unit_log(), dir);
    if (t->cycle == NULL) {
        return WEIR_ERROR;
    }

    if (weir_test_conf_init(&t->cf, t->cycle) != WEIR_OK) {
        return WEIR_ERROR;
    }

    t->core = t->cycle->conf_ctx[weir_test_core_module.index];
    t->block = t->cycle->conf_ctx[weir_test_block_module.index];

    return WEIR_OK;
}


/* writes the text as dir/name and parses it as the main file */

static char *
weir_test_parse(weir_test_conf_t *t, const char *name, const char *text)
{
    weir_str_t  path;

    if (weir_test_write(name, text, strlen(text), &path) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    t->file.len = path.len;
    t->file.data = (unsigned char *) weir_pstrdupz(t->pool, &path);
    if (t->file.data == NULL) {
        return WEIR_CONF_ERROR;
    }

    weir_unit_log_reset();

    return weir_conf_parse(&t->cf, &t->file);
}


/*
 * Was "[level] ...#0: msg in file:line" logged? With file NULL the
 * message ends the line; with line 0 it ends with " in command line".
 */

static int
weir_test_logged(const char *level, const char *msg, weir_str_t *file,
    weir_uint_t line)
{
    int   found;
    char  needle[1024], head[32];

    snprintf(head, sizeof(head), "[%s] ", level);

    if (file == NULL) {
        snprintf(needle, sizeof(needle), "#0: %s\n", msg);

    } else if (line == 0) {
        snprintf(needle, sizeof(needle), "#0: %s in command line\n", msg);

    } else {
        snprintf(needle, sizeof(needle), "#0: %s in %.*s:%lu\n", msg,
                 WEIR_STR_ARG(*file), (unsigned long) line);
    }

    found = weir_unit_log_has(needle) && weir_unit_log_has(head);

    if (!found) {
        printf("    expected: %s%s    logged:   %s", head, needle,
               weir_unit_log_text());
    }

    return found;
}


/* parses text with a fresh cycle: it must fail with msg at line */

static int
weir_test_error(const char *text, const char *msg, weir_uint_t line)
{
    int               ok;
    char             *rv;
    weir_pool_t      *pool;
    weir_test_conf_t  t;

    pool = weir_create_pool(WEIR_DEFAULT_POOL_SIZE, weir_unit_log());
    if (pool == NULL) {
        return 0;
    }

    ok = 0;

    if (weir_test_setup(&t, pool) == WEIR_OK) {
        rv = weir_test_parse(&t, "error.conf", text);

        if (rv != WEIR_CONF_ERROR) {
            printf("    \"%s\" parsed without error\n", text);

        } else {
            ok = weir_test_logged("emerg", msg, &t.file, line);
        }
    }

    weir_destroy_pool(pool);

    return ok;
}


/* is argument i of the last t_args exactly the len bytes expected? */

static int
weir_test_arg(weir_test_conf_t *t, weir_uint_t i, const char *expected,
    size_t len)
{
    weir_str_t  *args;

    if (t->core->args == NULL || i >= t->core->args->nelts) {
        printf("    no argument %lu\n", (unsigned long) i);
        return 0;
    }

    args = t->core->args->elts;

    if (args[i].len != len || memcmp(args[i].data, expected, len) != 0) {
        printf("    argument %lu: \"%.*s\", expected \"%.*s\"\n",
               (unsigned long) i, WEIR_STR_ARG(args[i]), (int) len, expected);
        return 0;
    }

    /* handlers may use the data as a C string */
    return args[i].data[len] == '\0';
}

#define WEIR_CHECK_ARG(t, i, lit)                                             \
    WEIR_CHECK(weir_test_arg(t, i, lit, sizeof(lit) - 1))


WEIR_UNIT_TEST(conf_setters_good)
{
    char              path[256];
    weir_str_t       *s;
    weir_keyval_t    *kv;
    weir_test_conf_t  t;

    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);

    WEIR_REQUIRE(weir_test_parse(&t, "good.conf",
        "t_flag on;\n"
        "t_str hello;\n"
        "t_str_array one;\n"
        "t_str_array two;\n"
        "t_keyval k1 v1;\n"
        "t_keyval k2 \"v 2\";\n"
        "t_num 42;\n"
        "t_bounded 10;\n"
        "t_at_least 1000;\n"
        "t_size 8k;\n"
        "t_off 2g;\n"
        "t_msec 1m30s;\n"
        "t_sec 1h;\n"
        "t_bufs 8 4k;\n"
        "t_enum GREEN;\n"
        "t_bitmask a c;\n"
        "t_path logs/x.log;\n") == WEIR_CONF_OK);

    WEIR_CHECK_INT(t.core->flag, 1);
    WEIR_CHECK_MEM(t.core->str.data, t.core->str.len, "hello");

    WEIR_REQUIRE(t.core->str_array != WEIR_CONF_UNSET_PTR
                 && t.core->str_array != NULL);
    WEIR_CHECK_INT(t.core->str_array->nelts, 2);
    s = t.core->str_array->elts;
    WEIR_CHECK_MEM(s[0].data, s[0].len, "one");
    WEIR_CHECK_MEM(s[1].data, s[1].len, "two");

    WEIR_REQUIRE(t.core->keyval != NULL);
    WEIR_CHECK_INT(t.core->keyval->nelts, 2);
    kv = t.core->keyval->elts;
    WEIR_CHECK_MEM(kv[0].key.data, kv[0].key.len, "k1");
    WEIR_CHECK_MEM(kv[0].value.data, kv[0].value.len, "v1");
    WEIR_CHECK_MEM(kv[1].key.data, kv[1].key.len, "k2");
    WEIR_CHECK_MEM(kv[1].value.data, kv[1].value.len, "v 2");

    WEIR_CHECK_INT(t.core->num, 42);
    WEIR_CHECK_INT(t.core->bounded, 10);
    WEIR_CHECK_INT(t.core->at_least, 1000);
    WEIR_CHECK_INT(t.core->size, 8192);
    WEIR_CHECK_INT(t.core->off, (off_t) 2 * 1024 * 1024 * 1024);
    WEIR_CHECK_INT(t.core->msec, 90000);
    WEIR_CHECK_INT(t.core->sec, 3600);
    WEIR_CHECK_INT(t.core->bufs.num, 8);
    WEIR_CHECK_INT(t.core->bufs.size, 4096);
    WEIR_CHECK_INT(t.core->enum_value, 2);
    WEIR_CHECK_INT(t.core->bitmask, 0x0002|0x0008);

    snprintf(path, sizeof(path), "%s/logs/x.log", weir_test_dir());
    WEIR_CHECK_STR(t.core->path.data, path);
    WEIR_CHECK_INT(t.core->path.len, strlen(path));

    WEIR_CHECK(!weir_unit_log_has("[emerg]"));
    WEIR_CHECK(!weir_unit_log_has("[warn]"));
}


WEIR_UNIT_TEST(conf_setters_variants)
{
    weir_test_conf_t  t;

    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);

    /* flags are case-insensitive; times and sizes take every unit */
    WEIR_REQUIRE(weir_test_parse(&t, "variants.conf",
        "t_flag OFF;\n"
        "t_size 1024;\n"
        "t_off 3m;\n"
        "t_msec 250ms;\n"
        "t_sec 2d;\n"
        "t_enum red;\n"
        "t_bitmask B;\n"
        "t_path /abs/path;\n"
        "t_num 0;\n") == WEIR_CONF_OK);

    WEIR_CHECK_INT(t.core->flag, 0);
    WEIR_CHECK_INT(t.core->size, 1024);
    WEIR_CHECK_INT(t.core->off, 3 * 1024 * 1024);
    WEIR_CHECK_INT(t.core->msec, 250);
    WEIR_CHECK_INT(t.core->sec, 2 * 86400);
    WEIR_CHECK_INT(t.core->enum_value, 1);
    WEIR_CHECK_INT(t.core->bitmask, 0x0004);
    WEIR_CHECK_STR(t.core->path.data, "/abs/path");
    WEIR_CHECK_INT(t.core->num, 0);

    /* a plain number of t_msec is seconds */
    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);
    WEIR_REQUIRE(weir_test_parse(&t, "variants.conf",
                                 "t_msec 5;\nt_sec 1m 30s;\n")
                 == WEIR_CONF_ERROR);
    WEIR_CHECK_INT(t.core->msec, 5000);
    WEIR_CHECK(weir_test_logged("emerg",
               "invalid number of arguments in \"t_sec\" directive",
               &t.file, 2));

    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);
    WEIR_REQUIRE(weir_test_parse(&t, "variants.conf",
                                 "t_sec \"1m 30s\";\n") == WEIR_CONF_OK);
    WEIR_CHECK_INT(t.core->sec, 90);
}


WEIR_UNIT_TEST(conf_setters_bad)
{
    WEIR_CHECK(weir_test_error("t_flag maybe;",
               "invalid value \"maybe\" in \"t_flag\" directive, "
               "it must be \"on\" or \"off\"", 1));
    WEIR_CHECK(weir_test_error("\n\nt_flag 1;",
               "invalid value \"1\" in \"t_flag\" directive, "
               "it must be \"on\" or \"off\"", 3));

    WEIR_CHECK(weir_test_error("t_num 4x;",
               "\"t_num\" directive invalid value", 1));
    WEIR_CHECK(weir_test_error("t_num -1;",
               "\"t_num\" directive invalid value", 1));
    WEIR_CHECK(weir_test_error("t_num 99999999999999999999999;",
               "\"t_num\" directive invalid value", 1));
    WEIR_CHECK(weir_test_error("t_num \"\";",
               "\"t_num\" directive invalid value", 1));

    WEIR_CHECK(weir_test_error("t_bounded 0;",
               "\"t_bounded\" directive must be between 1 and 10", 1));
    WEIR_CHECK(weir_test_error("t_bounded 11;",
               "\"t_bounded\" directive must be between 1 and 10", 1));
    WEIR_CHECK(weir_test_error("t_at_least 0;",
               "\"t_at_least\" directive must be equal or more than 1", 1));

    WEIR_CHECK(weir_test_error("t_size 1x;",
               "\"t_size\" directive invalid value", 1));
    WEIR_CHECK(weir_test_error("t_size k;",
               "\"t_size\" directive invalid value", 1));
    WEIR_CHECK(weir_test_error("t_off -1;",
               "\"t_off\" directive invalid value", 1));
    WEIR_CHECK(weir_test_error("t_msec 1q;",
               "\"t_msec\" directive invalid value", 1));
    WEIR_CHECK(weir_test_error("t_msec s;",
               "\"t_msec\" directive invalid value", 1));
    WEIR_CHECK(weir_test_error("t_sec 10ms;",
               "\"t_sec\" directive invalid value", 1));
    WEIR_CHECK(weir_test_error("t_bufs 0 4k;",
               "\"t_bufs\" directive invalid value", 1));
    WEIR_CHECK(weir_test_error("t_bufs 8 0;",
               "\"t_bufs\" directive invalid value", 1));
    WEIR_CHECK(weir_test_error("t_bufs x 4k;",
               "\"t_bufs\" directive invalid value", 1));
    WEIR_CHECK(weir_test_error("t_bufs 8 4q;",
               "\"t_bufs\" directive invalid value", 1));

    WEIR_CHECK(weir_test_error("t_enum purple;",
               "invalid value \"purple\" in \"t_enum\" directive", 1));
    WEIR_CHECK(weir_test_error("t_bitmask a z;",
               "invalid value \"z\" in \"t_bitmask\" directive", 1));
}


WEIR_UNIT_TEST(conf_setters_duplicate)
{
    WEIR_CHECK(weir_test_error("t_flag on;\nt_flag off;",
               "\"t_flag\" directive is duplicate", 2));
    WEIR_CHECK(weir_test_error("t_str a;\nt_str a;",
               "\"t_str\" directive is duplicate", 2));
    WEIR_CHECK(weir_test_error("t_num 1;\n\nt_num 1;",
               "\"t_num\" directive is duplicate", 3));
    WEIR_CHECK(weir_test_error("t_size 1;\nt_size 2;",
               "\"t_size\" directive is duplicate", 2));
    WEIR_CHECK(weir_test_error("t_off 1;\nt_off 2;",
               "\"t_off\" directive is duplicate", 2));
    WEIR_CHECK(weir_test_error("t_msec 1;\nt_msec 2;",
               "\"t_msec\" directive is duplicate", 2));
    WEIR_CHECK(weir_test_error("t_sec 1;\nt_sec 2;",
               "\"t_sec\" directive is duplicate", 2));
    WEIR_CHECK(weir_test_error("t_bufs 1 1k;\nt_bufs 2 1k;",
               "\"t_bufs\" directive is duplicate", 2));
    WEIR_CHECK(weir_test_error("t_enum red;\nt_enum blue;",
               "\"t_enum\" directive is duplicate", 2));
    WEIR_CHECK(weir_test_error("t_bitmask a;\nt_bitmask b;",
               "\"t_bitmask\" directive is duplicate", 2));
    WEIR_CHECK(weir_test_error("t_path a;\nt_path b;",
               "\"t_path\" directive is duplicate", 2));
    WEIR_CHECK(weir_test_error("t_block {\n b_num 1;\n b_num 2;\n}",
               "\"b_num\" directive is duplicate", 3));
}


WEIR_UNIT_TEST(conf_bitmask_duplicate_value)
{
    weir_test_conf_t  t;

    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);

    WEIR_CHECK(weir_test_parse(&t, "bitmask.conf", "t_bitmask a b a;\n")
               == WEIR_CONF_OK);
    WEIR_CHECK_INT(t.core->bitmask, 0x0002|0x0004);
    WEIR_CHECK(weir_test_logged("warn",
               "duplicate value \"a\" in \"t_bitmask\" directive",
               &t.file, 1));
}


WEIR_UNIT_TEST(conf_quoting)
{
    weir_test_conf_t  t;

    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);

    WEIR_REQUIRE(weir_test_parse(&t, "quote.conf",
        "t_args \"a b\" 'c d' \"x\\\"y\" 'it\\'s' \"tab\\there\"\n"
        "       \"nl\\nx\" 'cr\\rx' \"back\\\\slash\" \"keep\\d\"\n"
        "       bare\\\"q \"\" '' \"semi;brace{}\" 'dq\"in' \"sq'in\";\n")
        == WEIR_CONF_OK);

    WEIR_CHECK_INT(t.core->args_calls, 1);
    WEIR_REQUIRE(t.core->args != NULL);
    WEIR_CHECK_INT(t.core->args->nelts, 15);

    WEIR_CHECK_ARG(&t, 0, "a b");
    WEIR_CHECK_ARG(&t, 1, "c d");
    WEIR_CHECK_ARG(&t, 2, "x\"y");
    WEIR_CHECK_ARG(&t, 3, "it's");
    WEIR_CHECK_ARG(&t, 4, "tab\there");
    WEIR_CHECK_ARG(&t, 5, "nl\nx");
    WEIR_CHECK_ARG(&t, 6, "cr\rx");
    WEIR_CHECK_ARG(&t, 7, "back\\slash");
    WEIR_CHECK_ARG(&t, 8, "keep\\d");
    WEIR_CHECK_ARG(&t, 9, "bare\"q");
    WEIR_CHECK_ARG(&t, 10, "");
    WEIR_CHECK_ARG(&t, 11, "");
    WEIR_CHECK_ARG(&t, 12, "semi;brace{}");
    WEIR_CHECK_ARG(&t, 13, "dq\"in");
    WEIR_CHECK_ARG(&t, 14, "sq'in");

    /* a quoted string ends a word, then ";" or "{" may follow at once */
    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);
    WEIR_REQUIRE(weir_test_parse(&t, "quote.conf",
                                 "t_args \"a\";t_num 1;") == WEIR_CONF_OK);
    WEIR_CHECK_INT(t.core->args->nelts, 1);
    WEIR_CHECK_ARG(&t, 0, "a");
    WEIR_CHECK_INT(t.core->num, 1);

    /* ")" after a quote is a word of its own: if ($a = "b") */
    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);
    WEIR_REQUIRE(weir_test_parse(&t, "quote.conf",
                                 "t_args ($a = \"b\");") == WEIR_CONF_OK);
    WEIR_CHECK_INT(t.core->args->nelts, 4);
    WEIR_CHECK_ARG(&t, 0, "($a");
    WEIR_CHECK_ARG(&t, 1, "=");
    WEIR_CHECK_ARG(&t, 2, "b");
    WEIR_CHECK_ARG(&t, 3, ")");

    /* a newline inside quotes is kept and counted */
    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);
    WEIR_REQUIRE(weir_test_parse(&t, "quote.conf",
                                 "t_args \"one\ntwo\";\nfoo;\n")
                 == WEIR_CONF_ERROR);
    WEIR_CHECK_ARG(&t, 0, "one\ntwo");
    WEIR_CHECK(weir_test_logged("emerg", "unknown directive \"foo\"",
                                &t.file, 3));

    /* an escaped space joins a word; the backslash stays */
    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);
    WEIR_REQUIRE(weir_test_parse(&t, "quote.conf",
                                 "t_args a\\ b c;") == WEIR_CONF_OK);
    WEIR_CHECK_INT(t.core->args->nelts, 2);
    WEIR_CHECK_ARG(&t, 0, "a\\ b");
    WEIR_CHECK_ARG(&t, 1, "c");

    WEIR_CHECK(weir_test_error("t_args \"a\"b;", "unexpected \"b\"", 1));
    WEIR_CHECK(weir_test_error("t_args\n'a''b';", "unexpected \"'\"", 2));
    WEIR_CHECK(weir_test_error("t_args \"open;\n\n",
               "unexpected end of file, expecting \";\" or \"}\"", 3));
}


WEIR_UNIT_TEST(conf_variables)
{
    weir_test_conf_t  t;

    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);

    WEIR_REQUIRE(weir_test_parse(&t, "vars.conf",
        "t_args $var ${var}x \"${a}{b}\" a${b}c ${x} a}b $;\n"
        "t_num 3;\n") == WEIR_CONF_OK);

    WEIR_REQUIRE(t.core->args != NULL);
    WEIR_CHECK_INT(t.core->args->nelts, 7);
    WEIR_CHECK_ARG(&t, 0, "$var");
    WEIR_CHECK_ARG(&t, 1, "${var}x");
    WEIR_CHECK_ARG(&t, 2, "${a}{b}");
    WEIR_CHECK_ARG(&t, 3, "a${b}c");
    WEIR_CHECK_ARG(&t, 4, "${x}");
    WEIR_CHECK_ARG(&t, 5, "a}b");
    WEIR_CHECK_ARG(&t, 6, "$");
    WEIR_CHECK_INT(t.core->num, 3);

    /* without "$" a "{" opens a block */
    WEIR_CHECK(weir_test_error("t_args a{b};",
               "directive \"t_args\" is not terminated by \";\"", 1));
}


WEIR_UNIT_TEST(conf_comments)
{
    weir_test_conf_t  t;

    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);

    WEIR_REQUIRE(weir_test_parse(&t, "comments.conf",
        "# leading comment; t_num 5;\n"
        "t_num 1; # trailing { } ;\n"
        "t_args a#b \"c#d\" # to the end of the line ;\n"
        "   e;   #\n"
        "\n"
        "#t_str commented;\n"
        "# the last line has no newline") == WEIR_CONF_OK);

    WEIR_CHECK_INT(t.core->num, 1);
    WEIR_CHECK(t.core->str.data == NULL);
    WEIR_REQUIRE(t.core->args != NULL);
    WEIR_CHECK_INT(t.core->args->nelts, 3);
    WEIR_CHECK_ARG(&t, 0, "a#b");
    WEIR_CHECK_ARG(&t, 1, "c#d");
    WEIR_CHECK_ARG(&t, 2, "e");

    /* line numbers keep counting through comments */
    WEIR_CHECK(weir_test_error("# one\n# two\nfoo; # three",
               "unknown directive \"foo\"", 3));
}


WEIR_UNIT_TEST(conf_whitespace)
{
    weir_test_conf_t  t;

    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);
    WEIR_CHECK(weir_test_parse(&t, "empty.conf", "") == WEIR_CONF_OK);

    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);
    WEIR_CHECK(weir_test_parse(&t, "blank.conf", " \n\t\r\n  \n")
               == WEIR_CONF_OK);

    /* CRLF line ends, tabs and directives sharing a line */
    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);
    WEIR_REQUIRE(weir_test_parse(&t, "crlf.conf",
                                 "t_num\t7;\r\nt_str x; t_flag on;\r\n")
                 == WEIR_CONF_OK);
    WEIR_CHECK_INT(t.core->num, 7);
    WEIR_CHECK_MEM(t.core->str.data, t.core->str.len, "x");
    WEIR_CHECK_INT(t.core->flag, 1);

    WEIR_CHECK(weir_test_error("t_num 1;\r\n\r\nfoo;\r\n",
               "unknown directive \"foo\"", 3));
}


WEIR_UNIT_TEST(conf_canonical_errors)
{
    WEIR_CHECK(weir_test_error("t_num 1;\n\nfoo;\n",
               "unknown directive \"foo\"", 3));
    WEIR_CHECK(weir_test_error("t_num 1;\n\nFoo;\n",
               "unknown directive \"Foo\"", 3));

    WEIR_CHECK(weir_test_error("t_block {\n\n    t_num 1;\n}\n",
               "\"t_num\" directive is not allowed here", 3));
    WEIR_CHECK(weir_test_error("\n\nb_num 1;\n",
               "\"b_num\" directive is not allowed here", 3));
    WEIR_CHECK(weir_test_error("t_block {\n inner x {\n  b_only;\n }\n}\n",
               "\"b_only\" directive is not allowed here", 3));
    WEIR_CHECK(weir_test_error("t_block {\n i_num 1;\n}\n",
               "\"i_num\" directive is not allowed here", 2));

    WEIR_CHECK(weir_test_error("\n\nt_flag;\n",
               "invalid number of arguments in \"t_flag\" directive", 3));
    WEIR_CHECK(weir_test_error("t_flag on off;",
               "invalid number of arguments in \"t_flag\" directive", 1));
    WEIR_CHECK(weir_test_error("t_num;",
               "invalid number of arguments in \"t_num\" directive", 1));
    WEIR_CHECK(weir_test_error("t_num 1 2;",
               "invalid number of arguments in \"t_num\" directive", 1));
    WEIR_CHECK(weir_test_error("t_argc_noargs x;",
               "invalid number of arguments in \"t_argc_noargs\" directive",
               1));
    WEIR_CHECK(weir_test_error("t_argc_take13 a b;",
               "invalid number of arguments in \"t_argc_take13\" directive",
               1));
    WEIR_CHECK(weir_test_error("t_argc_2more a;",
               "invalid number of arguments in \"t_argc_2more\" directive",
               1));
    WEIR_CHECK(weir_test_error("t_bitmask;",
               "invalid number of arguments in \"t_bitmask\" directive", 1));
    WEIR_CHECK(weir_test_error("t_argc_take7 1 2 3 4 5 6 7 8;",
               "invalid number of arguments in \"t_argc_take7\" directive",
               1));
    WEIR_CHECK(weir_test_error("t_bufs 8;",
               "invalid number of arguments in \"t_bufs\" directive", 1));

    WEIR_CHECK(weir_test_error("t_num 1;\nt_num 2;",
               "\"t_num\" directive is duplicate", 2));

    WEIR_CHECK(weir_test_error("t_block {\n b_num 1;\n\n\n\n\n\n",
               "unexpected end of file, expecting \"}\"", 8));
    WEIR_CHECK(weir_test_error("t_block {\n inner a {\n}\n",
               "unexpected end of file, expecting \"}\"", 4));
    WEIR_CHECK(weir_test_error("t_num 1",
               "unexpected end of file, expecting \";\" or \"}\"", 1));
    WEIR_CHECK(weir_test_error("t_num 1\n\n",
               "unexpected end of file, expecting \";\" or \"}\"", 3));
    WEIR_CHECK(weir_test_error("t_num 1;\nt_num",
               "unexpected end of file, expecting \";\" or \"}\"", 2));
    WEIR_CHECK(weir_test_error("t_args 'a",
               "unexpected end of file, expecting \";\" or \"}\"", 1));
    WEIR_CHECK(weir_test_error("t_args a\\",
               "unexpected end of file, expecting \";\" or \"}\"", 1));

    WEIR_CHECK(weir_test_error("t_num 1;\n\n\n}\n", "unexpected \"}\"", 4));
    WEIR_CHECK(weir_test_error("t_block {\n}\n}\n", "unexpected \"}\"", 3));
    WEIR_CHECK(weir_test_error("t_num 1 }", "unexpected \"}\"", 1));
    WEIR_CHECK(weir_test_error("\n{\n", "unexpected \"{\"", 2));
    WEIR_CHECK(weir_test_error("t_num 1;\n;\n", "unexpected \";\"", 2));
    WEIR_CHECK(weir_test_error("t_num 1;;", "unexpected \";\"", 1));

    WEIR_CHECK(weir_test_error("\nt_block;\n",
               "directive \"t_block\" has no opening \"{\"", 2));
    WEIR_CHECK(weir_test_error("t_block {\n inner x;\n}\n",
               "directive \"inner\" has no opening \"{\"", 2));
    WEIR_CHECK(weir_test_error("t_num 1 {\n}\n",
               "directive \"t_num\" is not terminated by \";\"", 1));
}


WEIR_UNIT_TEST(conf_open_failed)
{
    char              msg[512];
    char             *rv;
    weir_str_t        name;
    weir_test_conf_t  t;

    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);

    /* the main file: nothing is being read, so no " in file:line" */

    snprintf(msg, sizeof(msg), "%s/none.conf", weir_test_dir());
    name.len = strlen(msg);
    name.data = (unsigned char *) msg;

    rv = weir_conf_parse(&t.cf, &name);
    WEIR_CHECK(rv == WEIR_CONF_ERROR);

    snprintf(msg, sizeof(msg),
             "open() \"%s/none.conf\" failed (%d: %s)",
             weir_test_dir(), ENOENT, strerror(ENOENT));
    WEIR_CHECK(weir_test_logged("emerg", msg, NULL, 0));
}


WEIR_UNIT_TEST(conf_too_long)
{
    char              *text, *p;
    size_t             i;
    weir_str_t        *s;
    weir_test_conf_t   t;

    text = malloc(64 * 1024);
    WEIR_REQUIRE(text != NULL);

    /* an unterminated quote swallows the rest: reported where it began */

    p = text;
    p += sprintf(p, "t_num 1;\n\nt_args \"");

    for (i = 0; i < 5000; i++) {
        *p++ = (i % 80 == 79) ? '\n' : 'x';
    }

    p += sprintf(p, ";\n");

    WEIR_CHECK(weir_test_error(text,
               "too long parameter, probably missing terminating quote", 3));

    /* a word of 4000 bytes crossing the refill point is whole */

    p = text;

    for (i = 0; i < 3000; i++) {
        *p++ = ' ';
    }

    p += sprintf(p, "t_args ");

    for (i = 0; i < 4000; i++) {
        *p++ = (char) ('a' + i % 26);
    }

    p += sprintf(p, " end;\n");

    /* and many directives across several buffers, lines still right */

    for (i = 0; i < 500; i++) {
        p += sprintf(p, "t_str_array \"value %lu\";\n", (unsigned long) i);
    }

    p += sprintf(p, "t_num 99;\n");
    *p = '\0';

    if (WEIR_CHECK(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK)
        && WEIR_CHECK(weir_test_parse(&t, "long.conf", text)
                      == WEIR_CONF_OK))
    {
        WEIR_CHECK_INT(t.core->args->nelts, 2);
        s = t.core->args->elts;
        WEIR_CHECK_INT(s[0].len, 4000);
        WEIR_CHECK(s[0].data[0] == 'a' && s[0].data[3999] == 'a' + 3999 % 26);
        WEIR_CHECK_MEM(s[1].data, s[1].len, "end");

        WEIR_CHECK_INT(t.core->str_array->nelts, 500);
        s = t.core->str_array->elts;
        WEIR_CHECK_MEM(s[499].data, s[499].len, "value 499");
        WEIR_CHECK_INT(t.core->num, 99);
    }

    p += sprintf(p, "foo;\n");

    WEIR_CHECK(weir_test_error(text, "unknown directive \"foo\"", 503));

    /* exactly a buffer long is too long; one less fits */

    p = text;
    p += sprintf(p, "t_args ");

    for (i = 0; i < 4096; i++) {
        *p++ = 'y';
    }

    p += sprintf(p, ";\n");

    WEIR_CHECK(weir_test_error(text,
               "too long parameter, probably missing terminating quote", 1));

    p = text;
    p += sprintf(p, "t_args ");

    for (i = 0; i < 4095; i++) {
        *p++ = 'y';
    }

    p += sprintf(p, ";\n");

    if (WEIR_CHECK(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK)
        && WEIR_CHECK(weir_test_parse(&t, "long.conf", text)
                      == WEIR_CONF_OK))
    {
        s = t.core->args->elts;
        WEIR_CHECK_INT(s[0].len, 4095);
    }

    free(text);
}


WEIR_UNIT_TEST(conf_nested_blocks)
{
    weir_test_conf_t        t;
    weir_test_blk_conf_t   *bcf, *icf;
    weir_test_blk2_conf_t  *b2cf;

    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);

    WEIR_REQUIRE(weir_test_parse(&t, "nested.conf",
        "t_num 1;\n"
        "t_block {\n"
        "    b_num 3;\n"
        "    b_only;\n"
        "    b2_str hello;\n"
        "    inner one {\n"
        "        i_num 4;\n"
        "    }\n"
        "    inner two { i_num 5; }\n"
        "    inner three{}\n"
        "}\n"
        "t_str after;\n") == WEIR_CONF_OK);

    WEIR_CHECK_INT(t.core->num, 1);
    WEIR_CHECK_MEM(t.core->str.data, t.core->str.len, "after");
    WEIR_CHECK_INT(t.block->blocks, 1);

    WEIR_REQUIRE(weir_test_last_block != NULL);

    bcf = weir_test_last_block->main_conf[weir_test_blk_module.ctx_index];
    b2cf = weir_test_last_block->main_conf[weir_test_blk2_module.ctx_index];

    WEIR_CHECK_INT(weir_test_blk2_module.ctx_index, 1);
    WEIR_CHECK_INT(bcf->num, 3);
    WEIR_CHECK_INT(bcf->only, 1);
    WEIR_CHECK_INT(bcf->inner_blocks, 3);
    WEIR_CHECK_MEM(bcf->inner_name.data, bcf->inner_name.len, "three");
    WEIR_CHECK_MEM(b2cf->str.data, b2cf->str.len, "hello");

    /* the last inner block set nothing */
    WEIR_REQUIRE(weir_test_last_inner != NULL);
    icf = weir_test_last_inner->inner_conf[weir_test_blk_module.ctx_index];
    WEIR_CHECK_INT(icf->num, WEIR_CONF_UNSET);

    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);
    WEIR_REQUIRE(weir_test_parse(&t, "nested.conf",
        "t_block {\n"
        "    inner two { i_num 5; }\n"
        "}\n") == WEIR_CONF_OK);
    icf = weir_test_last_inner->inner_conf[weir_test_blk_module.ctx_index];
    WEIR_CHECK_INT(icf->num, 5);

    /* two blocks at the main level */
    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);
    WEIR_REQUIRE(weir_test_parse(&t, "nested.conf",
                                 "t_block { }\nt_block {\n}\n")
                 == WEIR_CONF_OK);
    WEIR_CHECK_INT(t.block->blocks, 2);

    WEIR_CHECK(weir_test_error(
        "t_block {\n inner a {\n  i_num x;\n }\n}\n",
        "\"i_num\" directive invalid value", 3));
}


WEIR_UNIT_TEST(conf_block_handler)
{
    weir_keyval_t     *kv;
    weir_test_conf_t   t;

    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);

    WEIR_REQUIRE(weir_test_parse(&t, "types.conf",
        "t_types {\n"
        "    text/html   html;\n"
        "    image/png   png;  # a comment\n"
        "    t_num       1;\n"
        "}\n"
        "t_num 2;\n") == WEIR_CONF_OK);

    WEIR_REQUIRE(t.block->types != NULL);
    WEIR_CHECK_INT(t.block->types->nelts, 3);
    kv = t.block->types->elts;
    WEIR_CHECK_MEM(kv[0].key.data, kv[0].key.len, "text/html");
    WEIR_CHECK_MEM(kv[0].value.data, kv[0].value.len, "html");
    WEIR_CHECK_MEM(kv[2].key.data, kv[2].key.len, "t_num");
    WEIR_CHECK_INT(t.core->num, 2);

    WEIR_CHECK(weir_test_error("t_types {\n a b;\n a b c;\n}\n",
                               "invalid type line", 3));
    WEIR_CHECK(weir_test_error("t_types {\n a {\n }\n}\n",
                               "unexpected \"{\"", 2));
}


WEIR_UNIT_TEST(conf_include)
{
    char              msg[512];
    weir_str_t       *s;
    weir_test_conf_t  t;

    WEIR_REQUIRE(weir_test_mkdir("conf.d") == WEIR_OK);
    WEIR_REQUIRE(weir_test_mkdir("empty.d") == WEIR_OK);

    WEIR_REQUIRE(weir_test_write("inc1.conf", "t_num 7;\n", 9, NULL)
                 == WEIR_OK);
    WEIR_REQUIRE(weir_test_write("conf.d/b.conf", "t_str_array b;\n", 15,
                                 NULL) == WEIR_OK);
    WEIR_REQUIRE(weir_test_write("conf.d/a.conf", "t_str_array a;\n", 15,
                                 NULL) == WEIR_OK);
    WEIR_REQUIRE(weir_test_write("conf.d/c.conf", "t_str_array c;", 14,
                                 NULL) == WEIR_OK);
    WEIR_REQUIRE(weir_test_write("conf.d/skip.txt", "foo;\n", 5, NULL)
                 == WEIR_OK);
    WEIR_REQUIRE(weir_test_write("blk.conf", "b_num 5;\n", 9, NULL)
                 == WEIR_OK);

    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);

    WEIR_REQUIRE(weir_test_parse(&t, "main.conf",
        "include inc1.conf;\n"
        "include conf.d/*.conf;\n"
        "include empty.d/*.conf;\n"
        "include conf.d/[x]*.conf;\n"
        "t_block {\n"
        "    include blk.conf;\n"
        "}\n"
        "t_str x;\n") == WEIR_CONF_OK);

    WEIR_CHECK_INT(t.core->num, 7);
    WEIR_CHECK_MEM(t.core->str.data, t.core->str.len, "x");

    WEIR_REQUIRE(t.core->str_array != WEIR_CONF_UNSET_PTR);
    WEIR_CHECK_INT(t.core->str_array->nelts, 3);
    s = t.core->str_array->elts;
    WEIR_CHECK_MEM(s[0].data, s[0].len, "a");
    WEIR_CHECK_MEM(s[1].data, s[1].len, "b");
    WEIR_CHECK_MEM(s[2].data, s[2].len, "c");

    WEIR_REQUIRE(weir_test_last_block != NULL);
    WEIR_CHECK_INT(((weir_test_blk_conf_t *)
                    weir_test_last_block->main_conf[0])->num, 5);

    /* an absolute name is kept */
    snprintf(msg, sizeof(msg), "include %s/inc1.conf;\n", weir_test_dir());
    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);
    WEIR_CHECK(weir_test_parse(&t, "main.conf", msg) == WEIR_CONF_OK);
    WEIR_CHECK_INT(t.core->num, 7);

    /* a missing file, with no glob character, is an error */
    snprintf(msg, sizeof(msg),
             "open() \"%s/missing.conf\" failed (%d: %s)",
             weir_test_dir(), ENOENT, strerror(ENOENT));
    WEIR_CHECK(weir_test_error("t_num 1;\ninclude missing.conf;\n", msg, 2));

    WEIR_CHECK(weir_test_error("include;",
               "invalid number of arguments in \"include\" directive", 1));
    WEIR_CHECK(weir_test_error("include a b;",
               "invalid number of arguments in \"include\" directive", 1));
}


WEIR_UNIT_TEST(conf_include_errors)
{
    weir_str_t        inc;
    weir_test_conf_t  t;

    /* an error in an included file names that file and its line */

    WEIR_REQUIRE(weir_test_write("bad.conf", "t_num 1;\n\nfoo;\n", 15, &inc)
                 == WEIR_OK);
    inc.data = (unsigned char *) strdup((char *) inc.data);
    WEIR_REQUIRE(inc.data != NULL);

    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);
    WEIR_CHECK(weir_test_parse(&t, "main.conf", "\ninclude bad.conf;\n")
               == WEIR_CONF_ERROR);
    WEIR_CHECK(weir_test_logged("emerg", "unknown directive \"foo\"", &inc,
                                3));

    /* a "}" in an included file does not close the includer's block */

    WEIR_REQUIRE(weir_test_write("bad.conf", "b_num 1;\n}\n", 11, NULL)
                 == WEIR_OK);
    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);
    WEIR_CHECK(weir_test_parse(&t, "main.conf",
                               "t_block {\n include bad.conf;\n}\n")
               == WEIR_CONF_ERROR);
    WEIR_CHECK(weir_test_logged("emerg", "unexpected \"}\"", &inc, 2));

    /* after an include the includer's own lines are counted right */

    WEIR_REQUIRE(weir_test_write("ok.conf", "t_num 1;\n\n\n\n", 12, NULL)
                 == WEIR_OK);
    WEIR_CHECK(weir_test_error("include ok.conf;\nt_str a;\nfoo;\n",
                               "unknown directive \"foo\"", 3));

    /* a file that includes itself */

    free(inc.data);

    WEIR_REQUIRE(weir_test_write("self.conf", "t_str_array x;\n"
                                 "include self.conf;\n", 34, &inc)
                 == WEIR_OK);
    inc.data = (unsigned char *) strdup((char *) inc.data);
    WEIR_REQUIRE(inc.data != NULL);
    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);
    WEIR_CHECK(weir_test_parse(&t, "main.conf", "include self.conf;\n")
               == WEIR_CONF_ERROR);
    WEIR_CHECK(weir_test_logged("emerg", "too many nested includes", &inc,
                                2));
    WEIR_CHECK_INT(t.core->str_array->nelts, WEIR_CONF_MAX_INCLUDE_DEPTH);
    WEIR_CHECK_INT(t.cf.include_depth, 0);

    free(inc.data);
}


WEIR_UNIT_TEST(conf_param)
{
    weir_test_conf_t  t;

    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);

    weir_str_set(&t.cycle->conf_param, "t_num 5; t_str 'a b';");
    WEIR_CHECK(weir_conf_param(&t.cf) == WEIR_CONF_OK);
    WEIR_CHECK_INT(t.core->num, 5);
    WEIR_CHECK_MEM(t.core->str.data, t.core->str.len, "a b");
    WEIR_CHECK(t.cf.conf_file == NULL);

    /* then the file, as weir_init_cycle does */
    WEIR_CHECK(weir_test_parse(&t, "param.conf", "t_num 6;\n")
               == WEIR_CONF_ERROR);
    WEIR_CHECK(weir_test_logged("emerg", "\"t_num\" directive is duplicate",
                                &t.file, 1));

    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);
    weir_str_set(&t.cycle->conf_param, "");
    WEIR_CHECK(weir_conf_param(&t.cf) == WEIR_CONF_OK);

    weir_str_set(&t.cycle->conf_param, "t_num 5");
    WEIR_CHECK(weir_conf_param(&t.cf) == WEIR_CONF_ERROR);
    WEIR_CHECK(weir_test_logged("emerg",
               "unexpected end of parameter, expecting \";\"", &t.file, 0));

    weir_unit_log_reset();
    weir_str_set(&t.cycle->conf_param, "foo;");
    WEIR_CHECK(weir_conf_param(&t.cf) == WEIR_CONF_ERROR);
    WEIR_CHECK(weir_test_logged("emerg", "unknown directive \"foo\"",
                                &t.file, 0));

    weir_unit_log_reset();
    weir_str_set(&t.cycle->conf_param, "t_block { }");
    WEIR_CHECK(weir_conf_param(&t.cf) == WEIR_CONF_ERROR);
    WEIR_CHECK(weir_test_logged("emerg",
               "block directives are not supported in -g option",
               &t.file, 0));

    weir_unit_log_reset();
    weir_str_set(&t.cycle->conf_param, "}");
    WEIR_CHECK(weir_conf_param(&t.cf) == WEIR_CONF_ERROR);
    WEIR_CHECK(weir_test_logged("emerg", "unexpected \"}\"", &t.file, 0));

    weir_unit_log_reset();
    weir_str_set(&t.cycle->conf_param, "t_flag yes;");
    WEIR_CHECK(weir_conf_param(&t.cf) == WEIR_CONF_ERROR);
    WEIR_CHECK(weir_test_logged("emerg",
               "invalid value \"yes\" in \"t_flag\" directive, "
               "it must be \"on\" or \"off\"", &t.file, 0));
    WEIR_CHECK(t.cf.conf_file == NULL);
}


WEIR_UNIT_TEST(conf_dump)
{
    char              *big, *p;
    size_t             i, big_len;
    weir_str_t         inc;
    weir_buf_t        *b;
    weir_conf_dump_t  *cd;
    weir_test_conf_t   t;

    big = malloc(16 * 1024);
    WEIR_REQUIRE(big != NULL);

    p = big;

    for (i = 0; i < 600; i++) {
        p += sprintf(p, "t_str_array v%lu;\n", (unsigned long) i);
    }

    big_len = (size_t) (p - big);

    WEIR_REQUIRE(weir_test_write("dumped.conf", big, big_len, &inc)
                 == WEIR_OK);
    inc.data = (unsigned char *) strdup((char *) inc.data);
    WEIR_REQUIRE(inc.data != NULL);

    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);

    weir_dump_config = 1;

    WEIR_CHECK(weir_test_parse(&t, "main.conf",
                               "include dumped.conf;\n"
                               "# twice, dumped once\n"
                               "t_block { include dumped.conf; }")
               == WEIR_CONF_ERROR);

    weir_dump_config = 0;

    /* the second include fails (t_str_array is not allowed in t_block),
     * but the file was read twice: it is kept once */

    WEIR_CHECK(weir_test_logged("emerg",
               "\"t_str_array\" directive is not allowed here", &inc, 1));

    WEIR_REQUIRE(t.cycle->config_dump.nelts == 2);
    cd = t.cycle->config_dump.elts;

    WEIR_CHECK_STR(cd[0].name.data, (char *) t.file.data);
    b = cd[0].buffer;
    WEIR_CHECK_MEM(b->pos, b->last - b->pos,
                   "include dumped.conf;\n"
                   "# twice, dumped once\n"
                   "t_block { include dumped.conf; }");

    WEIR_CHECK_STR(cd[1].name.data, (char *) inc.data);
    b = cd[1].buffer;
    WEIR_CHECK_INT(b->last - b->pos, big_len);
    WEIR_CHECK(memcmp(b->pos, big, big_len) == 0);

    /* without -T nothing is kept */
    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);
    WEIR_CHECK(weir_test_parse(&t, "main.conf", "t_num 1;")
               == WEIR_CONF_OK);
    WEIR_CHECK_INT(t.cycle->config_dump.nelts, 0);

    free(inc.data);
    free(big);
}


WEIR_UNIT_TEST(conf_full_name)
{
    weir_str_t        name;
    weir_test_conf_t  t;

    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);

    weir_str_set(&t.cycle->prefix, "/usr/local/weir/");
    weir_str_set(&t.cycle->conf_prefix, "/etc/weir");

    weir_str_set(&name, "logs/error.log");
    WEIR_CHECK(weir_conf_full_name(t.cycle, &name, 0) == WEIR_OK);
    WEIR_CHECK_STR(name.data, "/usr/local/weir/logs/error.log");
    WEIR_CHECK_INT(name.len, strlen("/usr/local/weir/logs/error.log"));

    weir_str_set(&name, "mime.types");
    WEIR_CHECK(weir_conf_full_name(t.cycle, &name, 1) == WEIR_OK);
    WEIR_CHECK_STR(name.data, "/etc/weir/mime.types");

    weir_str_set(&name, "/var/log/x");
    WEIR_CHECK(weir_conf_full_name(t.cycle, &name, 1) == WEIR_OK);
    WEIR_CHECK_STR(name.data, "/var/log/x");
}


WEIR_UNIT_TEST(conf_open_file)
{
    weir_str_t         name;
    weir_open_file_t  *a, *b, *e1, *e2, *e3, *c;
    weir_test_conf_t   t;

    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);

    weir_str_set(&t.cycle->prefix, "/srv/weir");

    weir_str_set(&name, "logs/a.log");
    a = weir_conf_open_file(t.cycle, &name);
    WEIR_REQUIRE(a != NULL);
    WEIR_CHECK_STR(a->name.data, "/srv/weir/logs/a.log");
    WEIR_CHECK_INT(a->fd, WEIR_INVALID_FILE);
    WEIR_CHECK(a->flush == NULL);

    /* the same file, named either way, is one entry */
    weir_str_set(&name, "/srv/weir/logs/a.log");
    b = weir_conf_open_file(t.cycle, &name);
    WEIR_CHECK(a == b);

    weir_str_set(&name, "logs/c.log");
    c = weir_conf_open_file(t.cycle, &name);
    WEIR_CHECK(c != NULL && c != a);

    e1 = weir_conf_open_file(t.cycle, NULL);
    weir_str_set(&name, "stderr");
    e2 = weir_conf_open_file(t.cycle, &name);
    weir_str_null(&name);
    e3 = weir_conf_open_file(t.cycle, &name);

    WEIR_REQUIRE(e1 != NULL);
    WEIR_CHECK(e1 == e2 && e2 == e3);
    WEIR_CHECK_INT(e1->fd, STDERR_FILENO);
    WEIR_CHECK_STR(e1->name.data, "stderr");

    WEIR_CHECK_INT(t.cycle->open_files.part.nelts, 3);
}


WEIR_UNIT_TEST(conf_log_error_format)
{
    weir_test_conf_t  t;
    weir_conf_file_t  file;
    char              msg[256];

    WEIR_REQUIRE(weir_test_setup(&t, weir_unit_pool()) == WEIR_OK);

    weir_conf_log_error(WEIR_LOG_EMERG, &t.cf, 0, "plain %d", 1);
    WEIR_CHECK(weir_test_logged("emerg", "plain 1", NULL, 0));

    weir_memzero(&file, sizeof(weir_conf_file_t));
    weir_str_set(&file.file.name, "/p/weir.conf");
    file.line = 3;
    t.cf.conf_file = &file;

    weir_unit_log_reset();
    weir_conf_log_error(WEIR_LOG_WARN, &t.cf, EACCES, "open() \"%s\" failed",
                        "/x");
    snprintf(msg, sizeof(msg), "open() \"/x\" failed (%d: %s)", EACCES,
             strerror(EACCES));
    WEIR_CHECK(weir_test_logged("warn", msg, &file.file.name, 3));

    t.cf.conf_file = NULL;
}
