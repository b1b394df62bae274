#include "weir_config.h"
#include "weir_core.h"

#include "../unit/test_conf_modules.h"


/*
 * The configuration parser fuzzer: each input is written to a file of a
 * private directory and parsed with the fake module table of the unit
 * tests, on a fresh cycle whose pool is destroyed afterwards (so that
 * LeakSanitizer sees anything kept elsewhere). An input starting with
 * byte 0x01 is parsed as a -g parameter instead, from an exactly sized
 * heap copy, so that a read past its end is caught.
 *
 * include is fuzzed too, but only with plain names: those resolve inside
 * the private directory, and a fuzzed "include /dev/stdin" cannot hang
 * the run.
 */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *weir_fuzz_include(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static void weir_fuzz_writer(weir_log_t *log, weir_uint_t level,
    unsigned char *buf, size_t len);
static void weir_fuzz_cleanup(void);


static weir_command_t  weir_fuzz_conf_commands[] = {

    { weir_string("include"),
      WEIR_ANY_CONF|WEIR_CONF_TAKE1,
      weir_fuzz_include,
      0,
      0,
      NULL },

      weir_null_command
};


static weir_module_t  weir_fuzz_conf_module = {
    WEIR_MODULE_V1,
    NULL,
    weir_fuzz_conf_commands,
    WEIR_CONF_MODULE,
    NULL, NULL, NULL, NULL, NULL,
    WEIR_MODULE_V1_PADDING
};


static char        weir_fuzz_dir[64];
static char        weir_fuzz_file[128];
static char        weir_fuzz_other[128];
static int         weir_fuzz_fd = -1;
static weir_log_t  weir_fuzz_log;


int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    int          fd;
    weir_uint_t  i;

    (void) argc;
    (void) argv;

    weir_time_init();
    weir_use_stderr = 0;

    /* the log is formatted in full, then dropped */
    weir_fuzz_log.log_level = WEIR_LOG_DEBUG;
    weir_fuzz_log.writer = weir_fuzz_writer;

    snprintf(weir_fuzz_dir, sizeof(weir_fuzz_dir),
             "/tmp/weir-fuzz-conf-XXXXXX");

    if (mkdtemp(weir_fuzz_dir) == NULL) {
        fprintf(stderr, "mkdtemp() failed: %s\n", strerror(errno));
        abort();
    }

    snprintf(weir_fuzz_file, sizeof(weir_fuzz_file), "%s/fuzz.conf",
             weir_fuzz_dir);

    weir_fuzz_fd = open(weir_fuzz_file, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (weir_fuzz_fd == -1) {
        fprintf(stderr, "open(%s) failed: %s\n", weir_fuzz_file,
                strerror(errno));
        abort();
    }

    /* a second file for includes to find */

    snprintf(weir_fuzz_other, sizeof(weir_fuzz_other), "%s/other.conf",
             weir_fuzz_dir);

    fd = open(weir_fuzz_other, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd == -1
        || weir_write_fd(fd, "t_str_array other;\n", 19) != 19)
    {
        abort();
    }

    close(fd);

    atexit(weir_fuzz_cleanup);

    for (i = 0; weir_test_conf_modules[i]; i++) {
        if (weir_test_conf_modules[i] == &weir_conf_module) {
            weir_test_conf_modules[i] = &weir_fuzz_conf_module;
        }
    }

    return 0;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char  *param;
    weir_str_t      name;
    weir_conf_t     cf;
    weir_pool_t    *pool;
    weir_cycle_t   *cycle;

    if (weir_fuzz_fd == -1) {
        LLVMFuzzerInitialize(NULL, NULL);
    }

    pool = weir_create_pool(WEIR_DEFAULT_POOL_SIZE, &weir_fuzz_log);
    if (pool == NULL) {
        return 0;
    }

    cycle = weir_test_conf_cycle(pool, &weir_fuzz_log, weir_fuzz_dir);

    if (cycle == NULL || weir_test_conf_init(&cf, cycle) != WEIR_OK) {
        weir_destroy_pool(pool);
        return 0;
    }

    if (size > 0 && data[0] == 0x01) {
        param = malloc(size - 1 ? size - 1 : 1);

        if (param) {
            memcpy(param, data + 1, size - 1);

            cycle->conf_param.len = size - 1;
            cycle->conf_param.data = param;

            (void) weir_conf_param(&cf);

            free(param);
        }

        weir_destroy_pool(pool);
        return 0;
    }

    if (ftruncate(weir_fuzz_fd, 0) == -1
        || (size && pwrite(weir_fuzz_fd, data, size, 0) != (ssize_t) size))
    {
        abort();
    }

    name.len = strlen(weir_fuzz_file);
    name.data = (unsigned char *) weir_fuzz_file;

    weir_dump_config = 1;

    (void) weir_conf_parse(&cf, &name);

    weir_dump_config = 0;

    weir_destroy_pool(pool);

    return 0;
}


static char *
weir_fuzz_include(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_str_t  *value;

    value = cf->args->elts;

    if (value[1].len == 0
        || memchr(value[1].data, '/', value[1].len) != NULL
        || memchr(value[1].data, '\0', value[1].len) != NULL)
    {
        return "takes a plain name in the fuzzer";
    }

    return weir_conf_include(cf, cmd, conf);
}


static void
weir_fuzz_writer(weir_log_t *log, weir_uint_t level, unsigned char *buf,
    size_t len)
{
    (void) log;
    (void) level;
    (void) buf;
    (void) len;
}


static void
weir_fuzz_cleanup(void)
{
    if (weir_fuzz_fd != -1) {
        close(weir_fuzz_fd);
        weir_fuzz_fd = -1;
    }

    (void) unlink(weir_fuzz_file);
    (void) unlink(weir_fuzz_other);
    (void) rmdir(weir_fuzz_dir);
}
