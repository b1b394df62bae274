#ifndef _WEIR_LOG_H_INCLUDED_
#define _WEIR_LOG_H_INCLUDED_

/*
 * The error log. A line looks like:
 *
 *   2026/11/29 23:59:59 [error] 1234#0: *17 message (err: text),
 *       while <action>, client: ...
 *
 * "*17" is the connection number (log->connection) when there is one;
 * " while <action>" comes from log->action, and log->handler appends
 * context (client, server, request) owned by whoever set it. Debug lines
 * also carry the source file:line; weir_log_debug() compiles to nothing
 * unless configure ran --with-debug.
 */

#define WEIR_LOG_STDERR   0
#define WEIR_LOG_EMERG    1
#define WEIR_LOG_ALERT    2
#define WEIR_LOG_CRIT     3
#define WEIR_LOG_ERR      4
#define WEIR_LOG_WARN     5
#define WEIR_LOG_NOTICE   6
#define WEIR_LOG_INFO     7
#define WEIR_LOG_DEBUG    8

#define WEIR_MAX_ERROR_STR  2048

typedef unsigned char *(*weir_log_handler_pt)(weir_log_t *log,
    unsigned char *buf, size_t len);
typedef void (*weir_log_writer_pt)(weir_log_t *log, weir_uint_t level,
    unsigned char *buf, size_t len);

struct weir_log_s {
    weir_uint_t           log_level;
    weir_open_file_t     *file;

    weir_uint_t           connection;
    time_t                disk_full_time;

    weir_log_handler_pt   handler;
    void                 *data;

    weir_log_writer_pt    writer;
    void                 *wdata;

    /* the "while ..." part of a line: a literal, set before each step */
    const char           *action;

    weir_log_t           *next;
};

#define weir_log_error(level, log, ...)                                       \
    do {                                                                      \
        if ((log)->log_level >= (weir_uint_t) (level)) {                      \
            weir_log_error_core(level, log, __FILE__, __LINE__,               \
                                __VA_ARGS__);                                 \
        }                                                                     \
    } while (0)

#ifdef WEIR_DEBUG
#define weir_log_debug(log, ...)                                              \
    do {                                                                      \
        if ((log)->log_level >= WEIR_LOG_DEBUG) {                             \
            weir_log_error_core(WEIR_LOG_DEBUG, log, __FILE__, __LINE__,      \
                                __VA_ARGS__);                                 \
        }                                                                     \
    } while (0)
#else
#define weir_log_debug(log, ...)  do { /* compiled out */ } while (0)
#endif

void weir_log_error_core(weir_uint_t level, weir_log_t *log,
    const char *file, int line, weir_err_t err, const char *fmt, ...)
    WEIR_PRINTF(6, 7);

/* "weir: [level] message" to stderr, for the command line and -t */
void weir_log_stderr(weir_err_t err, const char *fmt, ...) WEIR_PRINTF(2, 3);
/* appends " (errno: strerror)" to buf */
unsigned char *weir_log_errno(unsigned char *buf, unsigned char *last,
    weir_err_t err);

/* the startup log: stderr until the configured error_log is opened */
weir_log_t *weir_log_init(unsigned char *prefix, unsigned char *error_log);
/* parses "error_log file|stderr [level]" arguments into *head (a list) */
char *weir_log_set_log(weir_conf_t *cf, weir_log_t **head);
/* points fd 2 at the cycle's first error log file */
weir_int_t weir_log_redirect_stderr(weir_cycle_t *cycle);
weir_log_t *weir_log_get_file_log(weir_log_t *head);

extern weir_module_t  weir_errlog_module;
extern weir_uint_t    weir_use_stderr;

#endif /* _WEIR_LOG_H_INCLUDED_ */
