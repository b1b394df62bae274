#include "weir_config.h"
#include "weir_core.h"


static char *weir_error_log(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static void weir_log_insert(weir_log_t *log, weir_log_t *new_log);


static weir_command_t  weir_errlog_commands[] = {

    { weir_string("error_log"),
      WEIR_MAIN_CONF|WEIR_CONF_1MORE,
      weir_error_log,
      0,
      0,
      NULL },

      weir_null_command
};


static weir_core_module_t  weir_errlog_module_ctx = {
    weir_string("errlog"),
    NULL,
    NULL
};


weir_module_t  weir_errlog_module = {
    WEIR_MODULE_V1,
    &weir_errlog_module_ctx,
    weir_errlog_commands,
    WEIR_CORE_MODULE,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    WEIR_MODULE_V1_PADDING
};


static weir_log_t        weir_log;
static weir_open_file_t  weir_log_file;
weir_uint_t              weir_use_stderr = 1;


static const char  *weir_log_levels[] = {
    "stderr", "emerg", "alert", "crit", "error", "warn", "notice", "info",
    "debug"
};


unsigned char *
weir_log_errno(unsigned char *buf, unsigned char *last, weir_err_t err)
{
    return weir_slprintf(buf, last, " (%d: %s)", err, strerror(err));
}


void
weir_log_error_core(weir_uint_t level, weir_log_t *log, const char *file,
    int line, weir_err_t err, const char *fmt, ...)
{
    va_list         args;
    unsigned char  *p, *last, *msg, *msg_end;
    unsigned char   errstr[WEIR_MAX_ERROR_STR];
    unsigned char   short_line[WEIR_MAX_ERROR_STR];
    weir_uint_t     wrote_stderr, is_stderr;
    size_t          n;

    last = errstr + WEIR_MAX_ERROR_STR - 1;   /* room for the newline */

    p = weir_slprintf(errstr, last, "%.*s [%s] %d#0: ",
                      WEIR_STR_ARG(weir_cached_err_log_time),
                      weir_log_levels[level],
                      (int) (weir_pid ? weir_pid : getpid()));

    if (log->connection) {
        p = weir_slprintf(p, last, "*%lu ", (unsigned long) log->connection);
    }

    msg = p;

    va_start(args, fmt);
    p = weir_vslprintf(p, last, fmt, args);
    va_end(args);

    if (err) {
        p = weir_log_errno(p, last, err);
    }

    if (level != WEIR_LOG_DEBUG && log->action) {
        p = weir_slprintf(p, last, " while %s", log->action);
    }

    if (level != WEIR_LOG_DEBUG && log->handler) {
        p = log->handler(log, p, (size_t) (last - p));
    }

    /* debug lines name their source; other lines keep one stable text
     * whatever the build, so that operators and tests can match them */

    if (level == WEIR_LOG_DEBUG) {
        p = weir_slprintf(p, last, " [%s:%d]", file, line);
    }

    msg_end = p;
    *p++ = '\n';

    wrote_stderr = 0;

    while (log) {

        if (log->log_level < level) {
            break;
        }

        if (log->writer) {
            log->writer(log, level, errstr, (size_t) (p - errstr));
            goto next;
        }

        if (log->file == NULL) {
            goto next;
        }

        is_stderr = (log->file->fd == STDERR_FILENO);

        if (is_stderr && weir_use_stderr) {
            /* the command-line form while weir still owns a terminal */
            goto next;
        }

        if (is_stderr) {
            wrote_stderr = 1;
        }

        /* a full disk must not make every log line a failed syscall */
        if (log->disk_full_time == weir_time()) {
            goto next;
        }

        n = (size_t) (p - errstr);

        if (weir_write_fd(log->file->fd, errstr, n) == -1
            && errno == ENOSPC)
        {
            log->disk_full_time = weir_time();
        }

    next:

        log = log->next;
    }

    if (!weir_use_stderr || level > WEIR_LOG_WARN || wrote_stderr) {
        return;
    }

    n = (size_t) (msg_end - msg);

    p = weir_slprintf(short_line, short_line + sizeof(short_line) - 1,
                      "weir: [%s] %.*s", weir_log_levels[level], (int) n,
                      (char *) msg);
    *p++ = '\n';

    (void) weir_write_fd(STDERR_FILENO, short_line, (size_t) (p - short_line));
}


void
weir_log_stderr(weir_err_t err, const char *fmt, ...)
{
    unsigned char   errstr[WEIR_MAX_ERROR_STR];
    unsigned char  *p, *last;
    va_list         args;

    last = errstr + WEIR_MAX_ERROR_STR - 1;

    p = weir_slprintf(errstr, last, "weir: ");

    va_start(args, fmt);
    p = weir_vslprintf(p, last, fmt, args);
    va_end(args);

    if (err) {
        p = weir_log_errno(p, last, err);
    }

    *p++ = '\n';

    (void) weir_write_fd(STDERR_FILENO, errstr, (size_t) (p - errstr));
}


weir_log_t *
weir_log_init(unsigned char *prefix, unsigned char *error_log)
{
    char    *name;
    size_t   plen, nlen;

    weir_log.file = &weir_log_file;
    weir_log.log_level = WEIR_LOG_NOTICE;
    weir_log_file.fd = STDERR_FILENO;
    weir_log_file.name.len = sizeof("stderr") - 1;
    weir_log_file.name.data = (unsigned char *) "stderr";

    if (error_log == NULL || error_log[0] == '\0'
        || weir_strcmp(error_log, "stderr") == 0)
    {
        return &weir_log;
    }

    nlen = weir_strlen(error_log);

    if (error_log[0] != '/' && prefix) {
        plen = weir_strlen(prefix);
        name = malloc(plen + 1 + nlen + 1);
        if (name == NULL) {
            return &weir_log;
        }

        snprintf(name, plen + 1 + nlen + 1, "%s%s%s", (char *) prefix,
                 (plen && prefix[plen - 1] != '/') ? "/" : "",
                 (char *) error_log);

    } else {
        name = strdup((char *) error_log);
        if (name == NULL) {
            return &weir_log;
        }
    }

    /* the default log may not exist yet (a fresh prefix): then the
     * startup log stays on stderr */

    weir_log_file.fd = open(name, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
                            WEIR_FILE_DEFAULT_ACCESS);

    if (weir_log_file.fd == -1) {
        weir_log_file.fd = STDERR_FILENO;
        free(name);
        return &weir_log;
    }

    weir_log_file.name.len = weir_strlen(name);
    weir_log_file.name.data = (unsigned char *) name;

    return &weir_log;
}


weir_int_t
weir_log_redirect_stderr(weir_cycle_t *cycle)
{
    weir_log_t  *log;

    if (cycle->log_use_stderr) {
        return WEIR_OK;
    }

    log = weir_log_get_file_log(cycle->log);

    if (log == NULL || log->file == NULL
        || log->file->fd == STDERR_FILENO)
    {
        return WEIR_OK;
    }

    if (dup2(log->file->fd, STDERR_FILENO) == -1) {
        weir_log_error(WEIR_LOG_ALERT, cycle->log, weir_errno,
                       "dup2(STDERR) failed");
        return WEIR_ERROR;
    }

    return WEIR_OK;
}


weir_log_t *
weir_log_get_file_log(weir_log_t *head)
{
    weir_log_t  *log;

    for (log = head; log; log = log->next) {
        if (log->file != NULL) {
            return log;
        }
    }

    return NULL;
}


static weir_int_t
weir_log_set_levels(weir_conf_t *cf, weir_log_t *log)
{
    weir_uint_t   i, n;
    weir_str_t   *value;

    value = cf->args->elts;

    if (cf->args->nelts == 2) {
        log->log_level = WEIR_LOG_ERR;
        return WEIR_OK;
    }

    for (i = 2; i < cf->args->nelts; i++) {

        for (n = 1; n <= WEIR_LOG_DEBUG; n++) {
            if (value[i].len == weir_strlen(weir_log_levels[n])
                && weir_strncmp(value[i].data, weir_log_levels[n],
                                value[i].len) == 0)
            {
                if (log->log_level != 0) {
                    weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                        "duplicate log level \"%.*s\"",
                                        WEIR_STR_ARG(value[i]));
                    return WEIR_ERROR;
                }

                log->log_level = n;
                break;
            }
        }

        if (n > WEIR_LOG_DEBUG) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid log level \"%.*s\"",
                                WEIR_STR_ARG(value[i]));
            return WEIR_ERROR;
        }
    }

#ifndef WEIR_DEBUG
    if (log->log_level == WEIR_LOG_DEBUG) {
        weir_conf_log_error(WEIR_LOG_WARN, cf, 0,
                            "debug logging is not compiled in "
                            "(configure --with-debug): \"info\" is used");
        log->log_level = WEIR_LOG_INFO;
    }
#endif

    return WEIR_OK;
}


char *
weir_log_set_log(weir_conf_t *cf, weir_log_t **head)
{
    weir_log_t  *new_log;
    weir_str_t  *value, name;

    if (*head != NULL && (*head)->log_level == 0) {
        new_log = *head;

    } else {
        new_log = weir_pcalloc(cf->pool, sizeof(weir_log_t));
        if (new_log == NULL) {
            return WEIR_CONF_ERROR;
        }

        if (*head == NULL) {
            *head = new_log;
        }
    }

    value = cf->args->elts;

    if (weir_str_eq_lit(&value[1], "stderr")) {
        weir_str_null(&name);
        cf->cycle->log_use_stderr = 1;

    } else {
        name = value[1];
    }

    new_log->file = weir_conf_open_file(cf->cycle, &name);
    if (new_log->file == NULL) {
        return WEIR_CONF_ERROR;
    }

    if (weir_log_set_levels(cf, new_log) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    if (*head != new_log) {
        weir_log_insert(*head, new_log);
    }

    return WEIR_CONF_OK;
}


/* keeps the list sorted by level, highest first, so that the check in
 * weir_log_error() against the head admits every line some log wants */

static void
weir_log_insert(weir_log_t *log, weir_log_t *new_log)
{
    weir_log_t  tmp;

    if (new_log->log_level > log->log_level) {
        /* log is the head the caller holds: swap contents in place */
        tmp = *log;
        *log = *new_log;
        *new_log = tmp;

        log->next = new_log;
        return;
    }

    while (log->next) {
        if (new_log->log_level > log->next->log_level) {
            new_log->next = log->next;
            log->next = new_log;
            return;
        }

        log = log->next;
    }

    log->next = new_log;
}


static char *
weir_error_log(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_log_t  *dummy;

    (void) cmd;
    (void) conf;

    dummy = &cf->cycle->new_log;

    return weir_log_set_log(cf, &dummy);
}
