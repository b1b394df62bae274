#include "weir_config.h"
#include "weir_core.h"
#include "weir.h"

#ifdef WEIR_HAVE_HTTP
#include "weir_http.h"
#endif


static weir_int_t weir_get_options(int argc, char *const *argv);
static weir_int_t weir_process_options(weir_cycle_t *cycle);
static void weir_show_version_info(void);
static void weir_dump_configuration(weir_cycle_t *cycle);


static weir_uint_t   weir_show_help;
static weir_uint_t   weir_show_version;
static weir_uint_t   weir_show_configure;
static char         *weir_prefix;
static char         *weir_error_log;
static char         *weir_conf_file;
static char         *weir_conf_params;
static char         *weir_signal;


int
main(int argc, char *const *argv)
{
    weir_log_t        *log;
    weir_cycle_t      *cycle, init_cycle;
    weir_core_conf_t  *ccf;
    weir_int_t         rc;

    if (weir_get_options(argc, argv) != WEIR_OK) {
        return 1;
    }

    if (weir_show_version) {
        weir_show_version_info();

        if (!weir_test_config) {
            return 0;
        }
    }

    weir_time_init();

    weir_pid = getpid();
    weir_parent = getppid();

    log = weir_log_init((unsigned char *) (weir_prefix ? weir_prefix
                                                       : WEIR_PREFIX),
                        (unsigned char *) (weir_error_log
                                           ? weir_error_log
                                           : WEIR_ERROR_LOG_PATH));

    if (weir_test_config) {
        log->log_level = WEIR_LOG_INFO;
    }

    weir_memzero(&init_cycle, sizeof(weir_cycle_t));
    init_cycle.log = log;
    weir_cycle = &init_cycle;

    init_cycle.pool = weir_create_pool(1024, log);
    if (init_cycle.pool == NULL) {
        return 1;
    }

    weir_os_argv = (char **) argv;
    weir_os_argc = argc;
    weir_os_environ = environ;

    cycle = NULL;

    if (weir_process_options(&init_cycle) != WEIR_OK) {
        goto failed;
    }

    if (weir_os_init(log) != WEIR_OK) {
        goto failed;
    }

    if (weir_preinit_modules() != WEIR_OK) {
        goto failed;
    }

    if (weir_signal) {
        weir_process = WEIR_PROCESS_SIGNALLER;

    } else if (getenv(WEIR_VAR) != NULL) {
        /* a binary upgrade: the old master passed its sockets */

        if (weir_set_inherited_sockets(&init_cycle) != WEIR_OK) {
            goto failed;
        }

        weir_inherited = 1;
    }

    cycle = weir_init_cycle(&init_cycle);

    if (cycle == NULL) {
        if (weir_test_config) {
            weir_log_stderr(0, "configuration file %.*s test failed",
                            WEIR_STR_ARG(init_cycle.conf_file));
        }

        goto failed;
    }

    if (weir_test_config) {
        if (weir_export_ca && !weir_export_done) {
            weir_log_stderr(0, "no server of %.*s has \"mitm on\" "
                            "(or weir has no mitm module): no CA to export",
                            WEIR_STR_ARG(cycle->conf_file));
            weir_destroy_pool(cycle->pool);
            weir_destroy_pool(init_cycle.pool);
            return 1;
        }

        if (!weir_quiet_mode) {
            weir_log_stderr(0, "configuration file %.*s test is successful",
                            WEIR_STR_ARG(cycle->conf_file));
        }

        if (weir_dump_config) {
            weir_dump_configuration(cycle);
        }

        weir_destroy_pool(cycle->pool);
        weir_destroy_pool(init_cycle.pool);
        return 0;
    }

    if (weir_signal) {
        rc = weir_signal_process(cycle, weir_signal);

        weir_destroy_pool(cycle->pool);
        weir_destroy_pool(init_cycle.pool);
        return (int) rc;
    }

    weir_cycle = cycle;

    ccf = (weir_core_conf_t *) weir_get_conf(cycle->conf_ctx,
                                             weir_core_module);

    if (ccf->master && weir_process == WEIR_PROCESS_SINGLE) {
        weir_process = WEIR_PROCESS_MASTER;
    }

    if (weir_init_signals(cycle->log) != WEIR_OK) {
        goto failed;
    }

    if (!weir_inherited && ccf->daemon) {
        if (weir_daemon(cycle->log) != WEIR_OK) {
            goto failed;
        }

        weir_daemonized = 1;
    }

    if (weir_inherited) {
        weir_daemonized = 1;
    }

    weir_pid = getpid();

    if (weir_create_pidfile(&ccf->pid, cycle->log) != WEIR_OK) {
        goto failed;
    }

    if (weir_log_redirect_stderr(cycle) != WEIR_OK) {
        goto failed;
    }

    if (log->file->fd != STDERR_FILENO) {
        if (close(log->file->fd) == -1) {
            weir_log_error(WEIR_LOG_ALERT, cycle->log, weir_errno,
                           "close() built-in log failed");
        }

        log->file->fd = STDERR_FILENO;
    }

    weir_use_stderr = 0;

    if (weir_process == WEIR_PROCESS_SINGLE) {
        weir_single_process_cycle(cycle);

    } else {
        weir_master_process_cycle(cycle);
    }

    /* the process cycles exit(); this is not reached */

    return 0;

failed:

    /* nothing may stay allocated on the way out: the sanitizer build
     * reports it, and tests read those reports */

    if (cycle) {
        weir_destroy_pool(cycle->pool);
    }

    weir_destroy_pool(init_cycle.pool);

    return 1;
}


static void
weir_print(const char *text)
{
    (void) weir_write_fd(STDERR_FILENO, text, weir_strlen(text));
}


static void
weir_show_version_info(void)
{
    weir_uint_t  i;

    weir_print("weir version: " WEIR_VER "\n");

    if (weir_show_help) {
        weir_print(
            "Usage: weir [-?hvVtTq] [-s signal] [-p prefix]\n"
            "            [-e filename] [-c filename] [-g directives]"
                                                           " [-E pem|der]\n"
            "\n"
            "Options:\n"
            "  -?,-h         : this help\n"
            "  -v            : show version and exit\n"
            "  -V            : show version, build options and modules,"
                                                              " and exit\n"
            "  -t            : test the configuration and exit\n"
            "  -T            : test the configuration, dump it and exit\n"
            "  -q            : suppress non-error messages while testing\n"
            "  -s signal     : send a signal to the master process: "
                                            "stop, quit, reopen, reload\n"
            "  -p prefix     : set the prefix path (default: "
                                                     WEIR_PREFIX ")\n"
            "  -e filename   : set the startup error log file (default: "
                                                WEIR_ERROR_LOG_PATH ")\n"
            "  -c filename   : set the configuration file (default: "
                                                     WEIR_CONF_PATH ")\n"
            "  -g directives : set global directives outside the"
                                               " configuration file\n"
            "  -E pem|der    : print the interception CA's certificate"
                                               " and exit\n");
    }

    if (weir_show_configure) {
        weir_print("built by " WEIR_COMPILER "\n");
        weir_print("configure arguments:" WEIR_CONFIGURE "\n");
        weir_print("module abi signature: " WEIR_MODULE_SIGNATURE "\n");
        weir_print("modules:");

        for (i = 0; weir_module_names[i]; i++) {
            weir_print(" ");
            weir_print(weir_module_names[i]);
        }

        weir_print("\n");

#ifdef WEIR_HAVE_HTTP
        (void) weir_http_show_chains(STDERR_FILENO);
#endif
    }
}


static weir_int_t
weir_get_options(int argc, char *const *argv)
{
    const char  *p;
    int          i;

    for (i = 1; i < argc; i++) {

        p = argv[i];

        if (*p++ != '-') {
            weir_log_stderr(0, "invalid option: \"%s\"", argv[i]);
            return WEIR_ERROR;
        }

        while (*p) {

            switch (*p++) {

            case '?':
            case 'h':
                weir_show_version = 1;
                weir_show_help = 1;
                break;

            case 'v':
                weir_show_version = 1;
                break;

            case 'V':
                weir_show_version = 1;
                weir_show_configure = 1;
                break;

            case 't':
                weir_test_config = 1;
                break;

            case 'T':
                weir_test_config = 1;
                weir_dump_config = 1;
                break;

            case 'q':
                weir_quiet_mode = 1;
                break;

            case 'p':
            case 'e':
            case 'c':
            case 'g':
            case 's':
            case 'E':

                {
                    char         opt = p[-1];
                    char        *value;

                    if (*p) {
                        value = (char *) p;

                    } else if (argv[++i]) {
                        value = argv[i];

                    } else {
                        weir_log_stderr(0, "option \"-%c\" requires %s", opt,
                                        opt == 'p' ? "directory name"
                                        : opt == 'g' ? "parameter"
                                        : opt == 's' ? "parameter"
                                        : opt == 'E' ? "pem or der"
                                        : "file name");
                        return WEIR_ERROR;
                    }

                    switch (opt) {
                    case 'p':
                        weir_prefix = value;
                        break;
                    case 'e':
                        weir_error_log = value;
                        break;
                    case 'c':
                        weir_conf_file = value;
                        break;
                    case 'g':
                        weir_conf_params = value;
                        break;
                    case 'E':
                        /* the interception CA: a configuration test that
                         * prints it (the mitm module) */
                        if (weir_strcmp(value, "pem") == 0
                            || weir_strcmp(value, "der") == 0)
                        {
                            weir_export_ca = (value[0] == 'p') ? 1 : 2;
                            weir_test_config = 1;
                            weir_quiet_mode = 1;
                            break;
                        }

                        weir_log_stderr(0, "invalid option: \"-E %s\"",
                                        value);
                        return WEIR_ERROR;
                    default: /* 's' */
                        if (weir_strcmp(value, "stop") == 0
                            || weir_strcmp(value, "quit") == 0
                            || weir_strcmp(value, "reopen") == 0
                            || weir_strcmp(value, "reload") == 0)
                        {
                            weir_signal = value;
                            break;
                        }

                        weir_log_stderr(0, "invalid option: \"-s %s\"",
                                        value);
                        return WEIR_ERROR;
                    }
                }

                goto next;

            default:
                weir_log_stderr(0, "invalid option: \"%c\"", p[-1]);
                return WEIR_ERROR;
            }
        }

    next:

        continue;
    }

    return WEIR_OK;
}


/* an absolute prefix, ending with "/": workers never depend on the
 * directory weir was started from */

static weir_int_t
weir_set_prefix(weir_cycle_t *cycle, const char *prefix)
{
    size_t          len;
    char            cwd[PATH_MAX];
    unsigned char  *p;
    weir_str_t      s;

    len = weir_strlen(prefix);

    if (prefix[0] == '/') {
        s.len = len;
        s.data = (unsigned char *) prefix;

    } else {
        if (getcwd(cwd, sizeof(cwd)) == NULL) {
            weir_log_stderr(weir_errno, "[emerg] getcwd() failed");
            return WEIR_ERROR;
        }

        if (weir_pstrfmt(cycle->pool, &s, "%s/%s", cwd, prefix) != WEIR_OK) {
            return WEIR_ERROR;
        }

        len = s.len;
    }

    p = weir_pnalloc(cycle->pool, len + 2);
    if (p == NULL) {
        return WEIR_ERROR;
    }

    weir_memcpy(p, s.data, len);

    if (len == 0 || p[len - 1] != '/') {
        p[len++] = '/';
    }

    p[len] = '\0';

    cycle->prefix.len = len;
    cycle->prefix.data = p;

    return WEIR_OK;
}


static weir_int_t
weir_process_options(weir_cycle_t *cycle)
{
    unsigned char  *p;
    size_t          len;

    if (weir_set_prefix(cycle, weir_prefix ? weir_prefix : WEIR_PREFIX)
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    if (weir_conf_file) {
        cycle->conf_file.len = weir_strlen(weir_conf_file);
        cycle->conf_file.data = (unsigned char *) weir_conf_file;

    } else {
        weir_str_set(&cycle->conf_file, WEIR_CONF_PATH);
    }

    if (weir_conf_full_name(cycle, &cycle->conf_file, 0) != WEIR_OK) {
        return WEIR_ERROR;
    }

    /* included files are relative to the main file's directory */

    for (p = cycle->conf_file.data + cycle->conf_file.len - 1;
         p > cycle->conf_file.data;
         p--)
    {
        if (*p == '/') {
            break;
        }
    }

    len = (size_t) (p - cycle->conf_file.data) + 1;

    cycle->conf_prefix.data = weir_pnalloc(cycle->pool, len + 1);
    if (cycle->conf_prefix.data == NULL) {
        return WEIR_ERROR;
    }

    weir_memcpy(cycle->conf_prefix.data, cycle->conf_file.data, len);
    cycle->conf_prefix.data[len] = '\0';
    cycle->conf_prefix.len = len;

    if (weir_error_log) {
        cycle->error_log.len = weir_strlen(weir_error_log);
        cycle->error_log.data = (unsigned char *) weir_error_log;

    } else {
        weir_str_set(&cycle->error_log, WEIR_ERROR_LOG_PATH);
    }

    if (weir_conf_params) {
        cycle->conf_param.len = weir_strlen(weir_conf_params);
        cycle->conf_param.data = (unsigned char *) weir_conf_params;
    }

    if (weir_test_config) {
        cycle->log->log_level = WEIR_LOG_INFO;
    }

    return WEIR_OK;
}


static void
weir_dump_configuration(weir_cycle_t *cycle)
{
    weir_uint_t        i;
    weir_conf_dump_t  *cd;
    weir_buf_t        *b;
    char               line[PATH_MAX + 64];
    int                n;

    cd = cycle->config_dump.elts;

    for (i = 0; i < cycle->config_dump.nelts; i++) {

        n = snprintf(line, sizeof(line), "# configuration file %.*s:\n",
                     WEIR_STR_ARG(cd[i].name));

        if (n > 0) {
            (void) weir_write_fd(STDOUT_FILENO, line,
                                 weir_min((size_t) n, sizeof(line) - 1));
        }

        b = cd[i].buffer;

        if (b && b->pos < b->last) {
            (void) weir_write_fd(STDOUT_FILENO, b->pos,
                                 (size_t) (b->last - b->pos));

            if (b->last[-1] != '\n') {
                (void) weir_write_fd(STDOUT_FILENO, "\n", 1);
            }
        }

        (void) weir_write_fd(STDOUT_FILENO, "\n", 1);
    }
}
