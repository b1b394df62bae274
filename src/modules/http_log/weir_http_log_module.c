#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_http.h"

/*
 * The access log: "log_format" compiles a line template of literals and
 * variables once; "access_log" binds a file (kept open by the cycle, so
 * USR1 reopens it) and a format to a context; the log-phase handler
 * renders one line per request.
 *
 * Buffered logs keep their buffer in the open file's data, so that every
 * access_log naming the same file shares one buffer and lines stay whole
 * and in order. A buffer is written out when a line does not fit, when
 * its flush timer fires, and through weir_open_file_t.flush, which the
 * cycle calls before reopening (USR1), before closing the files of an old
 * cycle (reload) and when a process exits.
 */


#ifndef WEIR_HTTP_LOG_PATH
#define WEIR_HTTP_LOG_PATH  "logs/access.log"
#endif

#define WEIR_HTTP_LOG_ESCAPE_DEFAULT  0
#define WEIR_HTTP_LOG_ESCAPE_JSON     1
#define WEIR_HTTP_LOG_ESCAPE_NONE     2

#define WEIR_HTTP_LOG_OP_LITERAL      0
#define WEIR_HTTP_LOG_OP_VARIABLE     1
#define WEIR_HTTP_LOG_OP_REMOTE_USER  2

#define WEIR_HTTP_LOG_DEFAULT_BUFFER  65536


typedef struct {
    weir_uint_t              type;
    weir_str_t               literal;
    weir_uint_t              index;         /* of the variable */
} weir_http_log_op_t;


typedef struct {
    weir_str_t               name;
    weir_array_t            *ops;           /* of weir_http_log_op_t */
    weir_uint_t              escape;
} weir_http_log_fmt_t;


typedef struct {
    weir_array_t             formats;       /* of weir_http_log_fmt_t */
} weir_http_log_main_conf_t;


/* lives in weir_open_file_t.data of a buffered log's file */
typedef struct {
    unsigned char           *start;
    unsigned char           *pos;
    unsigned char           *last;
    weir_msec_t              flush;         /* 0: only when full */
    weir_event_t            *event;
} weir_http_log_buf_t;


typedef struct {
    weir_open_file_t        *file;
    weir_http_log_fmt_t     *format;
    time_t                   error_time;    /* last write error logged */
} weir_http_log_t;


typedef struct {
    weir_array_t            *logs;          /* of weir_http_log_t */
    weir_flag_t              off;           /* WEIR_CONF_UNSET: not set */
} weir_http_log_loc_conf_t;


static weir_int_t weir_http_log_handler(weir_http_request_t *r);
static void weir_http_log_write(weir_http_request_t *r, weir_http_log_t *log,
    unsigned char *line, size_t len);
static void weir_http_log_flush(weir_open_file_t *file, weir_log_t *log);
static void weir_http_log_flush_handler(weir_event_t *ev);
static size_t weir_http_log_escape(weir_uint_t escape, unsigned char *dst,
    unsigned char *src, size_t size);
static weir_int_t weir_http_log_remote_user(weir_http_request_t *r,
    weir_str_t *user);

static void *weir_http_log_create_main_conf(weir_conf_t *cf);
static void *weir_http_log_create_loc_conf(weir_conf_t *cf);
static char *weir_http_log_merge_loc_conf(weir_conf_t *cf, void *parent,
    void *child);
static char *weir_http_log_set_format(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static char *weir_http_log_set_log(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static weir_http_log_fmt_t *weir_http_log_find_format(weir_conf_t *cf,
    weir_str_t *name);
static char *weir_http_log_compile_format(weir_conf_t *cf,
    weir_http_log_fmt_t *fmt, weir_str_t *args, weir_uint_t n);


static weir_command_t  weir_http_log_commands[] = {

    { weir_string("log_format"),
      WEIR_HTTP_MAIN_CONF|WEIR_CONF_2MORE,
      weir_http_log_set_format,
      WEIR_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { weir_string("access_log"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_HTTP_LIF_CONF|WEIR_HTTP_LMT_CONF|WEIR_CONF_1MORE,
      weir_http_log_set_log,
      WEIR_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    weir_null_command
};


static weir_http_phase_decl_t  weir_http_log_phases[] = {
    { WEIR_HTTP_LOG_PHASE, 100, "log", weir_http_log_handler },
    { 0, 0, NULL, NULL }
};


static weir_http_module_t  weir_http_log_module_ctx = {
    NULL,                                  /* preconfiguration */
    NULL,                                  /* postconfiguration */

    weir_http_log_create_main_conf,        /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    weir_http_log_create_loc_conf,         /* create location configuration */
    weir_http_log_merge_loc_conf,          /* merge location configuration */

    weir_http_log_phases,                  /* phase handlers */
    NULL,                                  /* header filters */
    NULL,                                  /* body filters */
    NULL                                   /* request body filters */
};


weir_module_t  weir_http_log_module = {
    WEIR_MODULE_V1,
    &weir_http_log_module_ctx,             /* module context */
    weir_http_log_commands,                /* module directives */
    WEIR_HTTP_MODULE,                      /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    WEIR_MODULE_V1_PADDING
};


static weir_str_t  weir_http_log_combined_name = weir_string("combined");

static weir_str_t  weir_http_log_combined[] = {
    weir_string("$remote_addr - $remote_user [$time_local] "),
    weir_string("\"$request\" $status $body_bytes_sent "),
    weir_string("\"$http_referer\" \"$http_user_agent\"")
};


static weir_int_t
weir_http_log_handler(weir_http_request_t *r)
{
    size_t                         len;
    weir_uint_t                    i, j, nops;
    weir_str_t                    *vals, user;
    unsigned char                 *line, *p;
    weir_http_log_t               *log;
    weir_http_log_op_t            *op;
    weir_http_log_fmt_t           *fmt;
    weir_http_log_loc_conf_t      *lcf;
    weir_http_variable_value_t    *vv;

    lcf = weir_http_get_module_loc_conf(r, weir_http_log_module);

    if (lcf == NULL || lcf->off == 1 || lcf->logs == NULL) {
        return WEIR_OK;
    }

    log = lcf->logs->elts;

    for (i = 0; i < lcf->logs->nelts; i++) {

        fmt = log[i].format;
        op = fmt->ops->elts;
        nops = fmt->ops->nelts;

        /* the values are taken once: some ($msec, $request_time) would
         * change between the sizing and the copying pass */

        vals = weir_palloc(r->pool, nops * sizeof(weir_str_t));
        if (vals == NULL) {
            return WEIR_ERROR;
        }

        len = sizeof("\n") - 1;

        for (j = 0; j < nops; j++) {

            switch (op[j].type) {

            case WEIR_HTTP_LOG_OP_LITERAL:
                vals[j] = op[j].literal;
                len += vals[j].len;
                continue;

            case WEIR_HTTP_LOG_OP_REMOTE_USER:
                if (weir_http_log_remote_user(r, &user) != WEIR_OK) {
                    return WEIR_ERROR;
                }

                vals[j] = user;
                break;

            default:
                vv = weir_http_get_indexed_variable(r, op[j].index);

                if (vv == NULL || vv->not_found || !vv->valid) {
                    vals[j].len = 0;
                    vals[j].data = NULL;

                } else {
                    vals[j].len = vv->len;
                    vals[j].data = vv->data;
                }

                break;
            }

            if (vals[j].data == NULL) {
                /* a missing value: "-" ("" in JSON, so that the format's
                 * own quotes still make a valid string) */
                if (fmt->escape != WEIR_HTTP_LOG_ESCAPE_JSON) {
                    weir_str_set(&vals[j], "-");
                } else {
                    weir_str_set(&vals[j], "");
                }
            }

            len += weir_http_log_escape(fmt->escape, NULL, vals[j].data,
                                        vals[j].len);
        }

        line = weir_pnalloc(r->pool, len);
        if (line == NULL) {
            return WEIR_ERROR;
        }

        p = line;

        for (j = 0; j < nops; j++) {
            if (op[j].type == WEIR_HTTP_LOG_OP_LITERAL) {
                p = weir_cpymem(p, vals[j].data, vals[j].len);

            } else {
                p += weir_http_log_escape(fmt->escape, p, vals[j].data,
                                          vals[j].len);
            }
        }

        *p++ = '\n';

        weir_http_log_write(r, &log[i], line, p - line);
    }

    return WEIR_OK;
}


static void
weir_http_log_write(weir_http_request_t *r, weir_http_log_t *log,
    unsigned char *line, size_t len)
{
    ssize_t               n;
    weir_err_t            err;
    weir_http_log_buf_t  *buffer;

    buffer = log->file->data;

    if (buffer != NULL) {

        if (len > (size_t) (buffer->last - buffer->pos)) {
            weir_http_log_flush(log->file, r->connection->log);
        }

        if (len <= (size_t) (buffer->last - buffer->pos)) {
            buffer->pos = weir_cpymem(buffer->pos, line, len);

            if (buffer->flush && buffer->event
                && !buffer->event->timer_set)
            {
                weir_event_add_timer(buffer->event, buffer->flush);
            }

            return;
        }

        /* a line longer than the whole buffer goes out directly, after
         * what the buffer held */
    }

    if (log->file->fd == WEIR_INVALID_FILE) {
        return;
    }

    n = weir_write_fd(log->file->fd, line, len);

    if (n == (ssize_t) len) {
        return;
    }

    /* one complaint per second at most: a full disk would otherwise
     * double every request's work */

    err = (n == -1) ? weir_errno : 0;

    if (weir_time() == log->error_time) {
        return;
    }

    log->error_time = weir_time();

    weir_log_error(WEIR_LOG_CRIT, r->connection->log, err,
                   "write() to \"%s\" failed (%zd of %zu written)",
                   (char *) log->file->name.data, n, len);
}


static void
weir_http_log_flush(weir_open_file_t *file, weir_log_t *log)
{
    size_t                len;
    ssize_t               n;
    weir_http_log_buf_t  *buffer;

    buffer = file->data;

    if (buffer == NULL) {
        return;
    }

    len = buffer->pos - buffer->start;

    if (buffer->event && buffer->event->timer_set) {
        weir_event_del_timer(buffer->event);
    }

    if (len == 0) {
        return;
    }

    buffer->pos = buffer->start;

    if (file->fd == WEIR_INVALID_FILE) {
        return;
    }

    n = weir_write_fd(file->fd, buffer->start, len);

    if (n == -1) {
        weir_log_error(WEIR_LOG_CRIT, log, weir_errno,
                       "write() to \"%s\" failed", (char *) file->name.data);

    } else if ((size_t) n != len) {
        weir_log_error(WEIR_LOG_CRIT, log, 0,
                       "write() to \"%s\" was incomplete: %zd of %zu",
                       (char *) file->name.data, n, len);
    }
}


static void
weir_http_log_flush_handler(weir_event_t *ev)
{
    weir_http_log_flush(ev->data, ev->log);
}


/*
 * Escapes src into dst (dst NULL: only counts) and returns the length.
 * default: '"', '\\', control bytes and bytes >= 0x7f become \xHH.
 * json: '"' and '\\' are backslashed, control bytes become \n, \r, \t,
 * \b, \f or \u00HH; other bytes pass (the log stays UTF-8 if the input
 * was). none: copied as is.
 */

static size_t
weir_http_log_escape(weir_uint_t escape, unsigned char *dst,
    unsigned char *src, size_t size)
{
    size_t          n, i;
    unsigned char   c, e;

    static const char  hex[] = "0123456789ABCDEF";

    if (escape == WEIR_HTTP_LOG_ESCAPE_NONE) {
        if (dst) {
            weir_memcpy(dst, src, size);
        }

        return size;
    }

    n = 0;

    for (i = 0; i < size; i++) {
        c = src[i];

        if (escape == WEIR_HTTP_LOG_ESCAPE_DEFAULT) {

            if (c == '"' || c == '\\' || c < 0x20 || c >= 0x7f) {
                if (dst) {
                    dst[n] = '\\';
                    dst[n + 1] = 'x';
                    dst[n + 2] = hex[c >> 4];
                    dst[n + 3] = hex[c & 0xf];
                }

                n += 4;
                continue;
            }

        } else {

            e = 0;

            switch (c) {
            case '"':  e = '"'; break;
            case '\\': e = '\\'; break;
            case '\n': e = 'n'; break;
            case '\r': e = 'r'; break;
            case '\t': e = 't'; break;
            case '\b': e = 'b'; break;
            case '\f': e = 'f'; break;
            default:   break;
            }

            if (e) {
                if (dst) {
                    dst[n] = '\\';
                    dst[n + 1] = e;
                }

                n += 2;
                continue;
            }

            if (c < 0x20) {
                if (dst) {
                    weir_memcpy(&dst[n], "\\u00", 4);
                    dst[n + 4] = hex[c >> 4];
                    dst[n + 5] = hex[c & 0xf];
                }

                n += 6;
                continue;
            }
        }

        if (dst) {
            dst[n] = c;
        }

        n++;
    }

    return n;
}


/* the user name of "Authorization: Basic", NULL data when there is none */

static weir_int_t
weir_http_log_remote_user(weir_http_request_t *r, weir_str_t *user)
{
    size_t           i, n;
    uint32_t         acc;
    weir_uint_t      bits;
    unsigned char   *p, *end, *out, c;
    int              v;

    user->len = 0;
    user->data = NULL;

    if (r->headers_in.authorization == NULL) {
        return WEIR_OK;
    }

    p = r->headers_in.authorization->value.data;
    end = p + r->headers_in.authorization->value.len;

    if (end - p < 6 || weir_strncasecmp(p, (unsigned char *) "Basic ", 6)
                       != 0)
    {
        return WEIR_OK;
    }

    p += 6;

    while (p < end && *p == ' ') {
        p++;
    }

    n = end - p;

    out = weir_pnalloc(r->pool, n);
    if (out == NULL) {
        return WEIR_ERROR;
    }

    acc = 0;
    bits = 0;
    i = 0;

    for ( /* void */ ; p < end; p++) {
        c = *p;

        if (c >= 'A' && c <= 'Z') {
            v = c - 'A';
        } else if (c >= 'a' && c <= 'z') {
            v = c - 'a' + 26;
        } else if (c >= '0' && c <= '9') {
            v = c - '0' + 52;
        } else if (c == '+') {
            v = 62;
        } else if (c == '/') {
            v = 63;
        } else if (c == '=') {
            break;
        } else {
            return WEIR_OK;         /* not base64: no user */
        }

        acc = (acc << 6) | (uint32_t) v;
        bits += 6;

        if (bits >= 8) {
            bits -= 8;
            out[i++] = (unsigned char) (acc >> bits);
            acc &= ((uint32_t) 1 << bits) - 1;
        }
    }

    for (n = 0; n < i; n++) {
        if (out[n] == ':') {
            break;
        }
    }

    if (n == i) {
        return WEIR_OK;             /* no "user:password" */
    }

    user->len = n;
    user->data = out;

    return WEIR_OK;
}


static void *
weir_http_log_create_main_conf(weir_conf_t *cf)
{
    weir_http_log_main_conf_t  *conf;

    conf = weir_pcalloc(cf->pool, sizeof(weir_http_log_main_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    if (weir_array_init(&conf->formats, cf->pool, 4,
                        sizeof(weir_http_log_fmt_t))
        != WEIR_OK)
    {
        return NULL;
    }

    return conf;
}


static void *
weir_http_log_create_loc_conf(weir_conf_t *cf)
{
    weir_http_log_loc_conf_t  *conf;

    conf = weir_pcalloc(cf->pool, sizeof(weir_http_log_loc_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    conf->logs = NULL;
    conf->off = WEIR_CONF_UNSET;

    return conf;
}


static char *
weir_http_log_merge_loc_conf(weir_conf_t *cf, void *parent, void *child)
{
    weir_http_log_loc_conf_t  *prev = parent;
    weir_http_log_loc_conf_t  *conf = child;

    weir_str_t        name;
    weir_http_log_t  *log;

    if (conf->logs || conf->off == 1) {
        return WEIR_CONF_OK;
    }

    if (prev->logs || prev->off == 1) {
        conf->logs = prev->logs;
        conf->off = prev->off;
        return WEIR_CONF_OK;
    }

    /* nothing configured above: the default log, shared by everyone who
     * inherits from here */

    conf->logs = weir_array_create(cf->pool, 1, sizeof(weir_http_log_t));
    if (conf->logs == NULL) {
        return WEIR_CONF_ERROR;
    }

    log = weir_array_push(conf->logs);
    if (log == NULL) {
        return WEIR_CONF_ERROR;
    }

    weir_memzero(log, sizeof(weir_http_log_t));

    weir_str_set(&name, WEIR_HTTP_LOG_PATH);

    log->file = weir_conf_open_file(cf->cycle, &name);
    if (log->file == NULL) {
        return WEIR_CONF_ERROR;
    }

    log->format = weir_http_log_find_format(cf, &weir_http_log_combined_name);
    if (log->format == NULL) {
        return WEIR_CONF_ERROR;
    }

    prev->logs = conf->logs;

    return WEIR_CONF_OK;
}


/* a format by name; "combined" is compiled on first use */

static weir_http_log_fmt_t *
weir_http_log_find_format(weir_conf_t *cf, weir_str_t *name)
{
    weir_uint_t                 i;
    weir_http_log_fmt_t        *fmt;
    weir_http_log_main_conf_t  *lmcf;

    lmcf = weir_http_conf_get_module_main_conf(cf, weir_http_log_module);

    fmt = lmcf->formats.elts;

    for (i = 0; i < lmcf->formats.nelts; i++) {
        if (weir_str_eq(&fmt[i].name, name)) {
            return &fmt[i];
        }
    }

    if (!weir_str_eq(name, &weir_http_log_combined_name)) {
        return NULL;
    }

    fmt = weir_array_push(&lmcf->formats);
    if (fmt == NULL) {
        return NULL;
    }

    fmt->name = weir_http_log_combined_name;
    fmt->escape = WEIR_HTTP_LOG_ESCAPE_DEFAULT;

    fmt->ops = weir_array_create(cf->pool, 16, sizeof(weir_http_log_op_t));
    if (fmt->ops == NULL) {
        return NULL;
    }

    if (weir_http_log_compile_format(cf, fmt, weir_http_log_combined,
                                     sizeof(weir_http_log_combined)
                                     / sizeof(weir_str_t))
        != WEIR_CONF_OK)
    {
        return NULL;
    }

    return fmt;
}


static char *
weir_http_log_set_format(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_http_log_main_conf_t  *lmcf = conf;

    weir_str_t             *value;
    weir_uint_t             i, first;
    weir_http_log_fmt_t    *fmt;

    (void) cmd;

    value = cf->args->elts;

    fmt = lmcf->formats.elts;

    for (i = 0; i < lmcf->formats.nelts; i++) {
        if (weir_str_eq(&fmt[i].name, &value[1])) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "duplicate \"log_format\" name \"%.*s\"",
                                WEIR_STR_ARG(value[1]));
            return WEIR_CONF_ERROR;
        }
    }

    if (weir_str_eq(&value[1], &weir_http_log_combined_name)) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "duplicate \"log_format\" name \"%.*s\"",
                            WEIR_STR_ARG(value[1]));
        return WEIR_CONF_ERROR;
    }

    fmt = weir_array_push(&lmcf->formats);
    if (fmt == NULL) {
        return WEIR_CONF_ERROR;
    }

    fmt->name = value[1];
    fmt->escape = WEIR_HTTP_LOG_ESCAPE_DEFAULT;

    first = 2;

    if (value[2].len > 7
        && weir_strncmp(value[2].data, "escape=", 7) == 0)
    {
        if (weir_str_eq_lit(&value[2], "escape=default")) {
            fmt->escape = WEIR_HTTP_LOG_ESCAPE_DEFAULT;

        } else if (weir_str_eq_lit(&value[2], "escape=json")) {
            fmt->escape = WEIR_HTTP_LOG_ESCAPE_JSON;

        } else if (weir_str_eq_lit(&value[2], "escape=none")) {
            fmt->escape = WEIR_HTTP_LOG_ESCAPE_NONE;

        } else {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "unknown log format escaping \"%.*s\"",
                                WEIR_STR_ARG(value[2]));
            return WEIR_CONF_ERROR;
        }

        first = 3;

        if (cf->args->nelts == 3) {
            return "invalid number of arguments";
        }
    }

    fmt->ops = weir_array_create(cf->pool, 16, sizeof(weir_http_log_op_t));
    if (fmt->ops == NULL) {
        return WEIR_CONF_ERROR;
    }

    return weir_http_log_compile_format(cf, fmt, &value[first],
                                        cf->args->nelts - first);
}


/* the format's arguments are concatenated, as nginx does */

static char *
weir_http_log_compile_format(weir_conf_t *cf, weir_http_log_fmt_t *fmt,
    weir_str_t *args, weir_uint_t n)
{
    size_t               i;
    weir_int_t           index;
    weir_str_t           var;
    weir_uint_t          a, bracket;
    unsigned char       *p, *end, *start;
    weir_http_log_op_t  *op;

    for (a = 0; a < n; a++) {

        p = args[a].data;
        end = p + args[a].len;

        while (p < end) {

            start = p;

            if (*p != '$') {
                while (p < end && *p != '$') {
                    p++;
                }

                op = weir_array_push(fmt->ops);
                if (op == NULL) {
                    return WEIR_CONF_ERROR;
                }

                op->type = WEIR_HTTP_LOG_OP_LITERAL;
                op->literal.len = p - start;
                op->literal.data = start;
                op->index = 0;
                continue;
            }

            p++;
            bracket = 0;

            if (p < end && *p == '{') {
                bracket = 1;
                p++;
            }

            var.data = p;

            while (p < end
                   && ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')
                       || (*p >= '0' && *p <= '9') || *p == '_'))
            {
                p++;
            }

            var.len = p - var.data;

            if (bracket) {
                if (p == end || *p != '}') {
                    weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                        "the closing bracket in \"%.*s\" "
                                        "variable is missing",
                                        WEIR_STR_ARG(var));
                    return WEIR_CONF_ERROR;
                }

                p++;
            }

            if (var.len == 0) {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "invalid parameter \"%.*s\"",
                                    WEIR_STR_ARG(args[a]));
                return WEIR_CONF_ERROR;
            }

            op = weir_array_push(fmt->ops);
            if (op == NULL) {
                return WEIR_CONF_ERROR;
            }

            op->literal.len = 0;
            op->literal.data = NULL;
            op->index = 0;

            if (weir_str_eq_lit(&var, "remote_user")) {
                op->type = WEIR_HTTP_LOG_OP_REMOTE_USER;
                continue;
            }

            /* variable names are case-insensitive */
            for (i = 0; i < var.len; i++) {
                if (var.data[i] >= 'A' && var.data[i] <= 'Z') {
                    break;
                }
            }

            if (i < var.len) {
                start = weir_pnalloc(cf->pool, var.len);
                if (start == NULL) {
                    return WEIR_CONF_ERROR;
                }

                weir_strlow(start, var.data, var.len);
                var.data = start;
            }

            index = weir_http_get_variable_index(cf, &var);
            if (index == WEIR_ERROR) {
                return WEIR_CONF_ERROR;
            }

            op->type = WEIR_HTTP_LOG_OP_VARIABLE;
            op->index = (weir_uint_t) index;
        }
    }

    return WEIR_CONF_OK;
}


static char *
weir_http_log_set_log(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_http_log_loc_conf_t  *llcf = conf;

    ssize_t                size;
    weir_int_t             flush;
    weir_str_t            *value, name, s;
    weir_uint_t            i, buffered;
    weir_event_t          *ev;
    weir_http_log_t       *log;
    weir_http_log_buf_t   *buffer;

    (void) cmd;

    value = cf->args->elts;

    if (weir_str_eq_lit(&value[1], "off")) {
        if (cf->args->nelts != 2) {
            return "invalid number of arguments";
        }

        if (llcf->logs) {
            return "is duplicate";
        }

        llcf->off = 1;
        return WEIR_CONF_OK;
    }

    if (llcf->off == 1) {
        return "is duplicate";
    }

    if (weir_strncmp(value[1].data, "syslog:", 7) == 0) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "syslog is not supported in \"access_log\"");
        return WEIR_CONF_ERROR;
    }

    for (i = 0; i < value[1].len; i++) {
        if (value[1].data[i] == '$') {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "variables in \"access_log\" paths are not "
                                "supported: \"%.*s\"",
                                WEIR_STR_ARG(value[1]));
            return WEIR_CONF_ERROR;
        }
    }

    if (llcf->logs == NULL) {
        llcf->logs = weir_array_create(cf->pool, 2, sizeof(weir_http_log_t));
        if (llcf->logs == NULL) {
            return WEIR_CONF_ERROR;
        }
    }

    llcf->off = 0;

    log = weir_array_push(llcf->logs);
    if (log == NULL) {
        return WEIR_CONF_ERROR;
    }

    weir_memzero(log, sizeof(weir_http_log_t));

    log->file = weir_conf_open_file(cf->cycle, &value[1]);
    if (log->file == NULL) {
        return WEIR_CONF_ERROR;
    }

    name = weir_http_log_combined_name;
    i = 2;

    if (cf->args->nelts > 2
        && weir_strncmp(value[2].data, "buffer=", 7) != 0
        && weir_strncmp(value[2].data, "flush=", 6) != 0)
    {
        name = value[2];
        i = 3;
    }

    log->format = weir_http_log_find_format(cf, &name);
    if (log->format == NULL) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "unknown log format \"%.*s\"",
                            WEIR_STR_ARG(name));
        return WEIR_CONF_ERROR;
    }

    size = 0;
    flush = 0;
    buffered = 0;

    for ( /* void */ ; i < cf->args->nelts; i++) {

        if (weir_strncmp(value[i].data, "buffer=", 7) == 0) {
            s.len = value[i].len - 7;
            s.data = value[i].data + 7;

            size = weir_parse_size(&s);

            if (size <= 0) {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "invalid buffer size \"%.*s\"",
                                    WEIR_STR_ARG(s));
                return WEIR_CONF_ERROR;
            }

            buffered = 1;
            continue;
        }

        if (weir_strncmp(value[i].data, "flush=", 6) == 0) {
            s.len = value[i].len - 6;
            s.data = value[i].data + 6;

            flush = weir_parse_time(&s, 0);

            if (flush == WEIR_ERROR || flush == 0) {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "invalid flush time \"%.*s\"",
                                    WEIR_STR_ARG(s));
                return WEIR_CONF_ERROR;
            }

            buffered = 1;
            continue;
        }

        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "invalid parameter \"%.*s\"",
                            WEIR_STR_ARG(value[i]));
        return WEIR_CONF_ERROR;
    }

    if (!buffered) {
        return WEIR_CONF_OK;
    }

    if (size == 0) {
        size = WEIR_HTTP_LOG_DEFAULT_BUFFER;
    }

    buffer = log->file->data;

    if (buffer) {
        /* another access_log already buffers this file */
        if ((ssize_t) (buffer->last - buffer->start) != size
            || buffer->flush != (weir_msec_t) flush)
        {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "access_log \"%.*s\" already defined "
                                "with conflicting parameters",
                                WEIR_STR_ARG(value[1]));
            return WEIR_CONF_ERROR;
        }

        return WEIR_CONF_OK;
    }

    buffer = weir_pcalloc(cf->pool, sizeof(weir_http_log_buf_t));
    if (buffer == NULL) {
        return WEIR_CONF_ERROR;
    }

    buffer->start = weir_pnalloc(cf->pool, size);
    if (buffer->start == NULL) {
        return WEIR_CONF_ERROR;
    }

    buffer->pos = buffer->start;
    buffer->last = buffer->start + size;
    buffer->flush = (weir_msec_t) flush;

    if (flush) {
        ev = weir_pcalloc(cf->pool, sizeof(weir_event_t));
        if (ev == NULL) {
            return WEIR_CONF_ERROR;
        }

        ev->data = log->file;
        ev->handler = weir_http_log_flush_handler;
        ev->log = &cf->cycle->new_log;
        /* a pending flush must not hold off a graceful shutdown: the
         * exit hook writes the buffer anyway */
        ev->cancelable = 1;

        buffer->event = ev;
    }

    log->file->data = buffer;
    log->file->flush = weir_http_log_flush;

    return WEIR_CONF_OK;
}
