#include "weir_config.h"
#include "weir_core.h"


/*
 * The configuration reader. A file is read through a fixed buffer that is
 * refilled as the tokenizer consumes it; the token being read when the
 * buffer runs out is moved to the buffer's start first, so one token may
 * be at most WEIR_CONF_BUFFER bytes long. Finished tokens are copied into
 * cf->pool: directive handlers may keep pointers to them for the cycle's
 * life.
 */

#define WEIR_CONF_BUFFER  4096


typedef enum {
    weir_conf_parse_file = 0,
    weir_conf_parse_block,
    weir_conf_parse_param
} weir_conf_parse_type_e;


static weir_int_t weir_conf_handler(weir_conf_t *cf, weir_int_t last);
static weir_int_t weir_conf_read_token(weir_conf_t *cf);
static weir_int_t weir_conf_fill(weir_conf_t *cf, unsigned char **start);
static weir_int_t weir_conf_push_word(weir_conf_t *cf, unsigned char *start,
    unsigned char *end);
static weir_int_t weir_conf_add_dump(weir_conf_t *cf, weir_str_t *name,
    weir_fd_t fd);
static void weir_conf_flush_files(weir_cycle_t *cycle);


static weir_command_t  weir_conf_commands[] = {

    { weir_string("include"),
      WEIR_ANY_CONF|WEIR_CONF_TAKE1,
      weir_conf_include,
      0,
      0,
      NULL },

      weir_null_command
};


weir_module_t  weir_conf_module = {
    WEIR_MODULE_V1,
    NULL,                                  /* module context */
    weir_conf_commands,                    /* module directives */
    WEIR_CONF_MODULE,                      /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    weir_conf_flush_files,                 /* exit process */
    NULL,                                  /* exit master */
    WEIR_MODULE_V1_PADDING
};


/* the accepted argument counts, indexed by the number of arguments */
static weir_uint_t  weir_conf_argument_number[] = {
    WEIR_CONF_NOARGS,
    WEIR_CONF_TAKE1,
    WEIR_CONF_TAKE2,
    WEIR_CONF_TAKE3,
    WEIR_CONF_TAKE4,
    WEIR_CONF_TAKE5,
    WEIR_CONF_TAKE6,
    WEIR_CONF_TAKE7
};


char *
weir_conf_param(weir_conf_t *cf)
{
    char              *rv;
    weir_str_t        *param;
    weir_buf_t         b;
    weir_conf_file_t   conf_file, *prev;

    param = &cf->cycle->conf_param;

    if (param->len == 0) {
        return WEIR_CONF_OK;
    }

    weir_memzero(&conf_file, sizeof(weir_conf_file_t));
    weir_memzero(&b, sizeof(weir_buf_t));

    /* the parameter is parsed in place: an invalid fd tells the reader
     * that there is nothing to refill, and the missing name that errors
     * are reported "in command line" */

    b.start = param->data;
    b.pos = param->data;
    b.last = param->data + param->len;
    b.end = b.last;
    b.temporary = 1;

    conf_file.file.fd = WEIR_INVALID_FILE;
    conf_file.file.log = cf->log;
    conf_file.buffer = &b;
    conf_file.line = 1;

    prev = cf->conf_file;
    cf->conf_file = &conf_file;

    rv = weir_conf_parse(cf, NULL);

    cf->conf_file = prev;

    return rv;
}


char *
weir_conf_parse(weir_conf_t *cf, weir_str_t *filename)
{
    char                    *rv;
    weir_fd_t                fd;
    weir_int_t               rc;
    weir_str_t               name;
    weir_buf_t               buf;
    weir_conf_file_t        *prev, conf_file;
    weir_conf_parse_type_e   type;
    unsigned char            buffer[WEIR_CONF_BUFFER];

    fd = WEIR_INVALID_FILE;
    prev = NULL;

    if (filename) {

        /* a NUL-terminated copy for open(), error messages and -T */
        name.len = filename->len;
        name.data = (unsigned char *) weir_pstrdupz(cf->pool, filename);
        if (name.data == NULL) {
            return WEIR_CONF_ERROR;
        }

        fd = open((const char *) name.data, O_RDONLY | O_CLOEXEC);

        if (fd == -1) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, weir_errno,
                                "open() \"%.*s\" failed",
                                WEIR_STR_ARG(name));
            return WEIR_CONF_ERROR;
        }

        prev = cf->conf_file;

        weir_memzero(&conf_file, sizeof(weir_conf_file_t));
        weir_memzero(&buf, sizeof(weir_buf_t));

        buf.start = buffer;
        buf.pos = buffer;
        buf.last = buffer;
        buf.end = buffer + WEIR_CONF_BUFFER;
        buf.temporary = 1;

        conf_file.file.fd = fd;
        conf_file.file.name = name;
        conf_file.file.offset = 0;
        conf_file.file.log = cf->log;
        conf_file.buffer = &buf;
        conf_file.dump = NULL;
        conf_file.line = 1;

        cf->conf_file = &conf_file;

        type = weir_conf_parse_file;

        if (weir_dump_config
            && weir_conf_add_dump(cf, &name, fd) != WEIR_OK)
        {
            goto failed;
        }

    } else if (cf->conf_file == NULL) {
        /* a block handler called outside of any file */
        weir_log_error(WEIR_LOG_ALERT, cf->log, 0,
                       "weir_conf_parse() without a file");
        return WEIR_CONF_ERROR;

    } else if (cf->conf_file->file.fd != WEIR_INVALID_FILE) {
        type = weir_conf_parse_block;

    } else {
        type = weir_conf_parse_param;
    }

    for ( ;; ) {
        rc = weir_conf_read_token(cf);

        if (rc == WEIR_ERROR) {
            goto failed;
        }

        if (rc == WEIR_CONF_BLOCK_DONE) {

            if (type != weir_conf_parse_block) {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0, "unexpected \"}\"");
                goto failed;
            }

            goto done;
        }

        if (rc == WEIR_CONF_FILE_DONE) {

            if (type == weir_conf_parse_block) {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "unexpected end of file, "
                                    "expecting \"}\"");
                goto failed;
            }

            goto done;
        }

        if (rc == WEIR_CONF_BLOCK_START && type == weir_conf_parse_param) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "block directives are not supported "
                                "in -g option");
            goto failed;
        }

        /* a directive: rc is WEIR_OK (";") or WEIR_CONF_BLOCK_START */

        if (cf->handler) {

            /* the block's own handler (types {} and the like) takes
             * every line as data, so nested blocks make no sense there */

            if (rc == WEIR_CONF_BLOCK_START) {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "unexpected \"{\"");
                goto failed;
            }

            rv = (*cf->handler)(cf, NULL, cf->handler_conf);

            if (rv == WEIR_CONF_OK) {
                continue;
            }

            if (rv != WEIR_CONF_ERROR) {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0, "%s", rv);
            }

            goto failed;
        }

        if (weir_conf_handler(cf, rc) != WEIR_OK) {
            goto failed;
        }
    }

failed:

    rc = WEIR_ERROR;
    goto finish;

done:

    rc = WEIR_OK;

finish:

    if (filename) {
        if (close(fd) == -1) {
            weir_log_error(WEIR_LOG_ALERT, cf->log, weir_errno,
                           "close() \"%.*s\" failed", WEIR_STR_ARG(name));
            rc = WEIR_ERROR;
        }

        cf->conf_file = prev;
    }

    return rc == WEIR_OK ? WEIR_CONF_OK : WEIR_CONF_ERROR;
}


/*
 * Finds the directive in cf->args among the modules that may appear here
 * and calls its handler. last is how the directive ended: WEIR_OK for ";",
 * WEIR_CONF_BLOCK_START for "{".
 */

static weir_int_t
weir_conf_handler(weir_conf_t *cf, weir_int_t last)
{
    char            *rv;
    void            *conf, **confp;
    weir_uint_t      i, found, nargs;
    weir_str_t      *name;
    weir_module_t   *module;
    weir_command_t  *cmd;
    weir_cycle_t    *cycle;

    cycle = cf->cycle;
    name = cf->args->elts;
    nargs = cf->args->nelts;
    found = 0;

    for (i = 0; i < cycle->modules_n; i++) {

        module = cycle->modules[i];

        if (module == NULL) {
            break;
        }

        cmd = module->commands;

        if (cmd == NULL) {
            continue;
        }

        for ( /* void */ ; cmd->name.len; cmd++) {

            if (!weir_str_eq(name, &cmd->name)) {
                continue;
            }

            /* known, so an error is "not allowed here"; but a directive
             * of the same name may be valid here in another module:
             * keep looking */

            found = 1;

            if (module->type != WEIR_CONF_MODULE
                && module->type != cf->module_type)
            {
                continue;
            }

            if (!(cmd->type & cf->cmd_type)) {
                continue;
            }

            if (!(cmd->type & WEIR_CONF_BLOCK) && last != WEIR_OK) {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "directive \"%.*s\" is not terminated "
                                    "by \";\"", WEIR_STR_ARG(*name));
                return WEIR_ERROR;
            }

            if ((cmd->type & WEIR_CONF_BLOCK)
                && last != WEIR_CONF_BLOCK_START)
            {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "directive \"%.*s\" has no opening "
                                    "\"{\"", WEIR_STR_ARG(*name));
                return WEIR_ERROR;
            }

            if (!(cmd->type & WEIR_CONF_ANY)) {

                if (cmd->type & WEIR_CONF_FLAG) {
                    if (nargs != 2) {
                        goto invalid;
                    }

                } else if (cmd->type & WEIR_CONF_1MORE) {
                    if (nargs < 2) {
                        goto invalid;
                    }

                } else if (cmd->type & WEIR_CONF_2MORE) {
                    if (nargs < 3) {
                        goto invalid;
                    }

                } else if (nargs > WEIR_CONF_MAX_ARGS) {
                    goto invalid;

                } else if (!(cmd->type
                             & weir_conf_argument_number[nargs - 1]))
                {
                    goto invalid;
                }
            }

            conf = NULL;

            if (module->type == WEIR_CORE_MODULE
                || module->type == WEIR_CONF_MODULE)
            {
                if (cycle->conf_ctx) {
                    if (cmd->type & WEIR_DIRECT_CONF) {
                        conf = cycle->conf_ctx[module->index];

                    } else {
                        conf = &cycle->conf_ctx[module->index];
                    }
                }

            } else if (cf->ctx) {
                confp = *(void ***) ((char *) cf->ctx + cmd->conf);

                if (confp) {
                    conf = confp[module->ctx_index];
                }
            }

            rv = cmd->set(cf, cmd, conf);

            if (rv == WEIR_CONF_OK) {
                return WEIR_OK;
            }

            if (rv == WEIR_CONF_ERROR) {
                return WEIR_ERROR;
            }

            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0, "\"%.*s\" directive %s",
                                WEIR_STR_ARG(*name), rv);

            return WEIR_ERROR;
        }
    }

    if (found) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "\"%.*s\" directive is not allowed here",
                            WEIR_STR_ARG(*name));
        return WEIR_ERROR;
    }

    weir_conf_log_error(WEIR_LOG_EMERG, cf, 0, "unknown directive \"%.*s\"",
                        WEIR_STR_ARG(*name));

    return WEIR_ERROR;

invalid:

    weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                        "invalid number of arguments in \"%.*s\" directive",
                        WEIR_STR_ARG(*name));

    return WEIR_ERROR;
}


#define weir_conf_is_space(ch)                                                \
    ((ch) == ' ' || (ch) == '\t' || (ch) == WEIR_CR || (ch) == WEIR_LF)


/*
 * Reads one directive into cf->args. Returns WEIR_OK (it ended with ";"),
 * WEIR_CONF_BLOCK_START ("{"), WEIR_CONF_BLOCK_DONE (a "}" alone),
 * WEIR_CONF_FILE_DONE (end of input between directives) or WEIR_ERROR
 * (logged).
 */

static weir_int_t
weir_conf_read_token(weir_conf_t *cf)
{
    unsigned char  *start, ch;
    weir_int_t      rc;
    weir_uint_t     found, need_space, last_space, sharp_comment, variable;
    weir_uint_t     quoted, s_quoted, d_quoted, start_line;
    weir_buf_t     *b;

    found = 0;
    need_space = 0;
    last_space = 1;
    sharp_comment = 0;
    variable = 0;
    quoted = 0;
    s_quoted = 0;
    d_quoted = 0;

    cf->args->nelts = 0;
    b = cf->conf_file->buffer;

    /* the first byte of the token being read; NULL between tokens */
    start = NULL;
    start_line = cf->conf_file->line;

    for ( ;; ) {

        if (b->pos >= b->last) {

            rc = weir_conf_fill(cf, &start);

            if (rc == WEIR_ERROR) {
                return WEIR_ERROR;
            }

            if (rc == WEIR_DECLINED) {
                /* point at the line where the runaway token began */
                cf->conf_file->line = start_line;
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "too long parameter, probably "
                                    "missing terminating quote");
                return WEIR_ERROR;
            }

            if (rc == WEIR_DONE) {

                if (cf->args->nelts > 0 || !last_space) {

                    if (cf->conf_file->file.fd == WEIR_INVALID_FILE) {
                        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                            "unexpected end of parameter, "
                                            "expecting \";\"");
                        return WEIR_ERROR;
                    }

                    weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                        "unexpected end of file, "
                                        "expecting \";\" or \"}\"");
                    return WEIR_ERROR;
                }

                return WEIR_CONF_FILE_DONE;
            }
        }

        ch = *b->pos++;

        if (ch == WEIR_LF) {
            cf->conf_file->line++;
            sharp_comment = 0;
        }

        if (sharp_comment) {
            continue;
        }

        if (quoted) {
            quoted = 0;
            continue;
        }

        if (need_space) {

            if (weir_conf_is_space(ch)) {
                last_space = 1;
                need_space = 0;
                continue;
            }

            if (ch == ';') {
                return WEIR_OK;
            }

            if (ch == '{') {
                return WEIR_CONF_BLOCK_START;
            }

            if (ch != ')') {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "unexpected \"%c\"", ch);
                return WEIR_ERROR;
            }

            /* `if ($a = "b")`: the ")" is a word of its own */
            last_space = 1;
            need_space = 0;
        }

        if (last_space) {

            if (weir_conf_is_space(ch)) {
                continue;
            }

            start = b->pos - 1;
            start_line = cf->conf_file->line;

            switch (ch) {

            case ';':
            case '{':
                if (cf->args->nelts == 0) {
                    weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                        "unexpected \"%c\"", ch);
                    return WEIR_ERROR;
                }

                return (ch == '{') ? WEIR_CONF_BLOCK_START : WEIR_OK;

            case '}':
                if (cf->args->nelts != 0) {
                    weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                        "unexpected \"}\"");
                    return WEIR_ERROR;
                }

                return WEIR_CONF_BLOCK_DONE;

            case '#':
                sharp_comment = 1;
                start = NULL;
                continue;

            case '\\':
                quoted = 1;
                break;

            case '"':
                start++;
                d_quoted = 1;
                break;

            case '\'':
                start++;
                s_quoted = 1;
                break;

            case '$':
                variable = 1;
                break;

            default:
                break;
            }

            last_space = 0;
            continue;
        }

        /* inside a word */

        if (ch == '{' && variable) {
            /* "${name}": the brace belongs to the variable */
            continue;
        }

        variable = 0;

        if (ch == '\\') {
            quoted = 1;
            continue;
        }

        if (ch == '$') {
            variable = 1;
            continue;
        }

        if (d_quoted) {
            if (ch == '"') {
                d_quoted = 0;
                need_space = 1;
                found = 1;
            }

        } else if (s_quoted) {
            if (ch == '\'') {
                s_quoted = 0;
                need_space = 1;
                found = 1;
            }

        } else if (weir_conf_is_space(ch) || ch == ';' || ch == '{') {
            last_space = 1;
            found = 1;
        }

        if (!found) {
            continue;
        }

        found = 0;

        if (weir_conf_push_word(cf, start, b->pos - 1) != WEIR_OK) {
            return WEIR_ERROR;
        }

        start = NULL;

        if (ch == ';') {
            return WEIR_OK;
        }

        if (ch == '{') {
            return WEIR_CONF_BLOCK_START;
        }
    }
}


/*
 * Refills the buffer, keeping the unfinished token that starts at *start.
 * Returns WEIR_OK, WEIR_DONE at the end of input, WEIR_DECLINED when the
 * token alone fills the buffer, or WEIR_ERROR (logged).
 */

static weir_int_t
weir_conf_fill(weir_conf_t *cf, unsigned char **start)
{
    size_t             len, room, copy;
    ssize_t            n;
    weir_buf_t        *b, *dump;
    weir_conf_file_t  *file;

    file = cf->conf_file;
    b = file->buffer;

    if (file->file.fd == WEIR_INVALID_FILE) {
        /* a -g parameter: the whole text was in the buffer */
        return WEIR_DONE;
    }

    len = *start ? (size_t) (b->pos - *start) : 0;

    if (len >= (size_t) (b->end - b->start)) {
        return WEIR_DECLINED;
    }

    if (len) {
        weir_memmove(b->start, *start, len);
    }

    room = (size_t) (b->end - b->start) - len;

    for ( ;; ) {
        n = read(file->file.fd, b->start + len, room);

        if (n == -1 && weir_errno == WEIR_EINTR) {
            continue;
        }

        break;
    }

    if (n == -1) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, weir_errno,
                            "read() \"%.*s\" failed",
                            WEIR_STR_ARG(file->file.name));
        return WEIR_ERROR;
    }

    if (n == 0) {
        return WEIR_DONE;
    }

    file->file.offset += n;

    if (*start) {
        *start = b->start;
    }

    b->pos = b->start + len;
    b->last = b->pos + n;

    dump = file->dump;

    if (dump) {
        /* the file may have grown since it was sized for the dump */
        copy = weir_min((size_t) n, (size_t) (dump->end - dump->last));
        dump->last = weir_cpymem(dump->last, b->pos, copy);
    }

    return WEIR_OK;
}


/* copies the word [start, end) into cf->args, resolving the escapes */

static weir_int_t
weir_conf_push_word(weir_conf_t *cf, unsigned char *start,
    unsigned char *end)
{
    unsigned char  *src, *dst;
    weir_str_t     *word;

    word = weir_array_push(cf->args);
    if (word == NULL) {
        return WEIR_ERROR;
    }

    word->data = weir_pnalloc(cf->pool, (size_t) (end - start) + 1);
    if (word->data == NULL) {
        return WEIR_ERROR;
    }

    dst = word->data;
    src = start;

    while (src < end) {

        if (*src == '\\' && src + 1 < end) {

            switch (src[1]) {

            case '"':
            case '\'':
            case '\\':
                src++;
                break;

            case 't':
                *dst++ = '\t';
                src += 2;
                continue;

            case 'r':
                *dst++ = '\r';
                src += 2;
                continue;

            case 'n':
                *dst++ = '\n';
                src += 2;
                continue;

            default:
                /* kept as written: regexes need "\d", "\." ... */
                break;
            }
        }

        *dst++ = *src++;
    }

    *dst = '\0';
    word->len = (size_t) (dst - word->data);

    return WEIR_OK;
}


/* keeps the text of each file once for weir -T */

static weir_int_t
weir_conf_add_dump(weir_conf_t *cf, weir_str_t *name, weir_fd_t fd)
{
    size_t             size;
    struct stat        st;
    weir_uint_t        i;
    weir_buf_t        *buf;
    weir_array_t      *dumps;
    weir_conf_dump_t  *cd;

    dumps = &cf->cycle->config_dump;

    if (dumps->size != sizeof(weir_conf_dump_t)) {
        /* the cycle keeps no dump (not set up for -T) */
        return WEIR_OK;
    }

    cd = dumps->elts;

    for (i = 0; i < dumps->nelts; i++) {
        if (weir_str_eq(&cd[i].name, name)) {
            return WEIR_OK;
        }
    }

    if (fstat(fd, &st) == -1) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, weir_errno,
                            "fstat() \"%.*s\" failed", WEIR_STR_ARG(*name));
        return WEIR_ERROR;
    }

    size = (size_t) st.st_size;

    buf = weir_calloc_buf(cf->cycle->pool);
    if (buf == NULL) {
        return WEIR_ERROR;
    }

    buf->start = weir_pnalloc(cf->cycle->pool, size ? size : 1);
    if (buf->start == NULL) {
        return WEIR_ERROR;
    }

    buf->pos = buf->start;
    buf->last = buf->start;
    buf->end = buf->start + size;
    buf->temporary = 1;

    cd = weir_array_push(dumps);
    if (cd == NULL) {
        return WEIR_ERROR;
    }

    cd->name = *name;
    cd->buffer = buf;

    cf->conf_file->dump = buf;

    return WEIR_OK;
}


char *
weir_conf_include(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    int          rc;
    char        *rv;
    size_t       i;
    glob_t       gl;
    weir_str_t  *value, file, name;

    (void) cmd;
    (void) conf;

    value = cf->args->elts;
    file = value[1];

    if (weir_conf_full_name(cf->cycle, &file, 1) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    if (cf->include_depth >= WEIR_CONF_MAX_INCLUDE_DEPTH) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0, "too many nested includes");
        return WEIR_CONF_ERROR;
    }

    if (strpbrk((const char *) file.data, "*?[") == NULL) {
        cf->include_depth++;
        rv = weir_conf_parse(cf, &file);
        cf->include_depth--;

        return rv;
    }

    weir_memzero(&gl, sizeof(glob_t));

    /* glob() sorts the names, so includes run in a stable order */
    rc = glob((const char *) file.data, 0, NULL, &gl);

    if (rc == GLOB_NOMATCH) {
        globfree(&gl);
        return WEIR_CONF_OK;
    }

    if (rc != 0) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, rc == GLOB_ABORTED ? errno : 0,
                            "glob() \"%.*s\" failed", WEIR_STR_ARG(file));
        globfree(&gl);
        return WEIR_CONF_ERROR;
    }

    rv = WEIR_CONF_OK;

    cf->include_depth++;

    for (i = 0; i < gl.gl_pathc; i++) {
        name.len = weir_strlen(gl.gl_pathv[i]);
        name.data = (unsigned char *) gl.gl_pathv[i];

        /* weir_conf_parse copies the name it keeps */
        rv = weir_conf_parse(cf, &name);

        if (rv != WEIR_CONF_OK) {
            break;
        }
    }

    cf->include_depth--;

    globfree(&gl);

    return rv;
}


weir_int_t
weir_conf_full_name(weir_cycle_t *cycle, weir_str_t *name,
    weir_uint_t conf_prefix)
{
    weir_str_t  *prefix;

    prefix = conf_prefix ? &cycle->conf_prefix : &cycle->prefix;

    return weir_get_full_name(cycle->pool, prefix, name);
}


weir_open_file_t *
weir_conf_open_file(weir_cycle_t *cycle, weir_str_t *name)
{
    weir_str_t         full;
    weir_uint_t        i, is_stderr;
    weir_list_part_t  *part;
    weir_open_file_t  *file;

    if (name == NULL || name->data == NULL || name->len == 0
        || weir_str_eq_lit(name, "stderr"))
    {
        is_stderr = 1;
        weir_str_set(&full, "stderr");

    } else {
        is_stderr = 0;
        full = *name;

        if (weir_conf_full_name(cycle, &full, 0) != WEIR_OK) {
            return NULL;
        }
    }

    part = &cycle->open_files.part;
    file = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            file = part->elts;
            i = 0;
        }

        if (weir_str_eq(&file[i].name, &full)) {
            return &file[i];
        }
    }

    file = weir_list_push(&cycle->open_files);
    if (file == NULL) {
        return NULL;
    }

    /* weir_init_cycle opens the files; only stderr is open already */
    file->fd = is_stderr ? STDERR_FILENO : WEIR_INVALID_FILE;
    file->name = full;
    file->flush = NULL;
    file->data = NULL;

    return file;
}


static void
weir_conf_flush_files(weir_cycle_t *cycle)
{
    weir_uint_t        i;
    weir_list_part_t  *part;
    weir_open_file_t  *file;

    part = &cycle->open_files.part;
    file = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            file = part->elts;
            i = 0;
        }

        if (file[i].flush) {
            file[i].flush(&file[i], cycle->log);
        }
    }
}


void
weir_conf_log_error(weir_uint_t level, weir_conf_t *cf, weir_err_t err,
    const char *fmt, ...)
{
    va_list            args;
    weir_log_t        *log;
    unsigned char     *p, *last;
    unsigned char      errstr[WEIR_MAX_CONF_ERRSTR];
    weir_conf_file_t  *file;

    last = errstr + WEIR_MAX_CONF_ERRSTR;

    va_start(args, fmt);
    p = weir_vslprintf(errstr, last, fmt, args);
    va_end(args);

    /* the errno text goes before " in file:line", so it is added here
     * rather than by weir_log_error() */

    if (err) {
        p = weir_log_errno(p, last, err);
    }

    file = cf->conf_file;

    if (file == NULL) {
        /* nothing is being read yet (the main file failed to open) */

    } else if (file->file.name.data == NULL) {
        p = weir_slprintf(p, last, " in command line");

    } else {
        p = weir_slprintf(p, last, " in %.*s:%lu",
                          WEIR_STR_ARG(file->file.name),
                          (unsigned long) file->line);
    }

    log = cf->log ? cf->log : cf->cycle->log;

    weir_log_error(level, log, 0, "%.*s", (int) (p - errstr),
                   (char *) errstr);
}


/* the generic setters: each writes through cmd->offset into conf */

char *
weir_conf_set_flag_slot(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_str_t        *value;
    weir_flag_t       *fp;
    weir_conf_post_t  *post;

    fp = (weir_flag_t *) ((char *) conf + cmd->offset);

    if (*fp != WEIR_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len == 2
        && weir_strncasecmp(value[1].data, (unsigned char *) "on", 2) == 0)
    {
        *fp = 1;

    } else if (value[1].len == 3
               && weir_strncasecmp(value[1].data, (unsigned char *) "off", 3)
                  == 0)
    {
        *fp = 0;

    } else {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "invalid value \"%.*s\" in \"%.*s\" directive, "
                            "it must be \"on\" or \"off\"",
                            WEIR_STR_ARG(value[1]), WEIR_STR_ARG(cmd->name));
        return WEIR_CONF_ERROR;
    }

    if (cmd->post) {
        post = cmd->post;
        return post->post_handler(cf, post, fp);
    }

    return WEIR_CONF_OK;
}


char *
weir_conf_set_str_slot(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_str_t        *field, *value;
    weir_conf_post_t  *post;

    field = (weir_str_t *) ((char *) conf + cmd->offset);

    if (field->data) {
        return "is duplicate";
    }

    value = cf->args->elts;

    *field = value[1];

    if (cmd->post) {
        post = cmd->post;
        return post->post_handler(cf, post, field);
    }

    return WEIR_CONF_OK;
}


char *
weir_conf_set_str_array_slot(weir_conf_t *cf, weir_command_t *cmd,
    void *conf)
{
    weir_str_t         *value, *s;
    weir_array_t      **a;
    weir_conf_post_t   *post;

    a = (weir_array_t **) ((char *) conf + cmd->offset);

    if (*a == WEIR_CONF_UNSET_PTR || *a == NULL) {
        *a = weir_array_create(cf->pool, 4, sizeof(weir_str_t));
        if (*a == NULL) {
            return WEIR_CONF_ERROR;
        }
    }

    s = weir_array_push(*a);
    if (s == NULL) {
        return WEIR_CONF_ERROR;
    }

    value = cf->args->elts;

    *s = value[1];

    if (cmd->post) {
        post = cmd->post;
        return post->post_handler(cf, post, s);
    }

    return WEIR_CONF_OK;
}


char *
weir_conf_set_keyval_slot(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_str_t         *value;
    weir_array_t      **a;
    weir_keyval_t      *kv;
    weir_conf_post_t   *post;

    a = (weir_array_t **) ((char *) conf + cmd->offset);

    if (*a == WEIR_CONF_UNSET_PTR || *a == NULL) {
        *a = weir_array_create(cf->pool, 4, sizeof(weir_keyval_t));
        if (*a == NULL) {
            return WEIR_CONF_ERROR;
        }
    }

    kv = weir_array_push(*a);
    if (kv == NULL) {
        return WEIR_CONF_ERROR;
    }

    value = cf->args->elts;

    kv->key = value[1];
    kv->value = value[2];

    if (cmd->post) {
        post = cmd->post;
        return post->post_handler(cf, post, kv);
    }

    return WEIR_CONF_OK;
}


char *
weir_conf_set_num_slot(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_int_t        *np;
    weir_str_t        *value;
    weir_conf_post_t  *post;

    np = (weir_int_t *) ((char *) conf + cmd->offset);

    if (*np != WEIR_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    *np = weir_atoi(value[1].data, value[1].len);

    if (*np == WEIR_ERROR) {
        return "invalid value";
    }

    if (cmd->post) {
        post = cmd->post;
        return post->post_handler(cf, post, np);
    }

    return WEIR_CONF_OK;
}


char *
weir_conf_set_size_slot(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    size_t            *sp;
    ssize_t            size;
    weir_str_t        *value;
    weir_conf_post_t  *post;

    sp = (size_t *) ((char *) conf + cmd->offset);

    if (*sp != WEIR_CONF_UNSET_SIZE) {
        return "is duplicate";
    }

    value = cf->args->elts;

    size = weir_parse_size(&value[1]);

    if (size == (ssize_t) WEIR_ERROR) {
        return "invalid value";
    }

    *sp = (size_t) size;

    if (cmd->post) {
        post = cmd->post;
        return post->post_handler(cf, post, sp);
    }

    return WEIR_CONF_OK;
}


char *
weir_conf_set_off_slot(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    off_t             *op;
    weir_str_t        *value;
    weir_conf_post_t  *post;

    op = (off_t *) ((char *) conf + cmd->offset);

    if (*op != WEIR_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    *op = weir_parse_offset(&value[1]);

    if (*op == (off_t) WEIR_ERROR) {
        return "invalid value";
    }

    if (cmd->post) {
        post = cmd->post;
        return post->post_handler(cf, post, op);
    }

    return WEIR_CONF_OK;
}


char *
weir_conf_set_msec_slot(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_int_t         ms;
    weir_msec_t       *msp;
    weir_str_t        *value;
    weir_conf_post_t  *post;

    msp = (weir_msec_t *) ((char *) conf + cmd->offset);

    if (*msp != WEIR_CONF_UNSET_MSEC) {
        return "is duplicate";
    }

    value = cf->args->elts;

    ms = weir_parse_time(&value[1], 0);

    if (ms == WEIR_ERROR) {
        return "invalid value";
    }

    *msp = (weir_msec_t) ms;

    if (cmd->post) {
        post = cmd->post;
        return post->post_handler(cf, post, msp);
    }

    return WEIR_CONF_OK;
}


char *
weir_conf_set_sec_slot(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    time_t            *sp;
    weir_int_t         s;
    weir_str_t        *value;
    weir_conf_post_t  *post;

    sp = (time_t *) ((char *) conf + cmd->offset);

    if (*sp != WEIR_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    s = weir_parse_time(&value[1], 1);

    if (s == WEIR_ERROR) {
        return "invalid value";
    }

    *sp = (time_t) s;

    if (cmd->post) {
        post = cmd->post;
        return post->post_handler(cf, post, sp);
    }

    return WEIR_CONF_OK;
}


char *
weir_conf_set_bufs_slot(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    ssize_t            size;
    weir_int_t         num;
    weir_str_t        *value;
    weir_bufs_t       *bufs;
    weir_conf_post_t  *post;

    bufs = (weir_bufs_t *) ((char *) conf + cmd->offset);

    /* zero buffers is the unset state: see weir_conf_merge_bufs_value */
    if (bufs->num) {
        return "is duplicate";
    }

    value = cf->args->elts;

    num = weir_atoi(value[1].data, value[1].len);

    if (num == WEIR_ERROR || num == 0) {
        return "invalid value";
    }

    size = weir_parse_size(&value[2]);

    if (size == (ssize_t) WEIR_ERROR || size == 0) {
        return "invalid value";
    }

    bufs->num = num;
    bufs->size = (size_t) size;

    if (cmd->post) {
        post = cmd->post;
        return post->post_handler(cf, post, bufs);
    }

    return WEIR_CONF_OK;
}


char *
weir_conf_set_enum_slot(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_uint_t       *np, i;
    weir_str_t        *value;
    weir_conf_enum_t  *e;

    np = (weir_uint_t *) ((char *) conf + cmd->offset);

    if (*np != WEIR_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;
    e = cmd->post;

    for (i = 0; e[i].name.len != 0; i++) {
        if (weir_str_caseeq(&e[i].name, &value[1])) {
            *np = e[i].value;
            return WEIR_CONF_OK;
        }
    }

    weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                        "invalid value \"%.*s\" in \"%.*s\" directive",
                        WEIR_STR_ARG(value[1]), WEIR_STR_ARG(cmd->name));

    return WEIR_CONF_ERROR;
}


/*
 * Every value named is OR-ed in. Masks leave bit 0 free: that is
 * WEIR_CONF_BITMASK_SET, which merge defaults carry so that a default can
 * be told from a configured value.
 */

char *
weir_conf_set_bitmask_slot(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_uint_t          *np, i, m;
    weir_str_t           *value;
    weir_conf_bitmask_t  *mask;

    np = (weir_uint_t *) ((char *) conf + cmd->offset);

    if (*np != 0) {
        return "is duplicate";
    }

    value = cf->args->elts;
    mask = cmd->post;

    for (i = 1; i < cf->args->nelts; i++) {

        for (m = 0; mask[m].name.len != 0; m++) {
            if (weir_str_caseeq(&mask[m].name, &value[i])) {
                break;
            }
        }

        if (mask[m].name.len == 0) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid value \"%.*s\" in \"%.*s\" directive",
                                WEIR_STR_ARG(value[i]),
                                WEIR_STR_ARG(cmd->name));
            return WEIR_CONF_ERROR;
        }

        if (*np & mask[m].mask) {
            weir_conf_log_error(WEIR_LOG_WARN, cf, 0,
                                "duplicate value \"%.*s\" in \"%.*s\" "
                                "directive", WEIR_STR_ARG(value[i]),
                                WEIR_STR_ARG(cmd->name));
            continue;
        }

        *np |= mask[m].mask;
    }

    return WEIR_CONF_OK;
}


char *
weir_conf_set_path_slot(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_str_t        *field, *value, path;
    weir_conf_post_t  *post;

    field = (weir_str_t *) ((char *) conf + cmd->offset);

    if (field->data) {
        return "is duplicate";
    }

    value = cf->args->elts;
    path = value[1];

    if (weir_conf_full_name(cf->cycle, &path, 0) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    *field = path;

    if (cmd->post) {
        post = cmd->post;
        return post->post_handler(cf, post, field);
    }

    return WEIR_CONF_OK;
}


/*
 * A post handler for num slots. The message it returns is formatted in
 * cf->pool so that the parser can print it after the directive name.
 */

char *
weir_conf_check_num_bounds(weir_conf_t *cf, void *post, void *data)
{
    weir_int_t              *np;
    weir_str_t               msg;
    weir_conf_num_bounds_t  *bounds;

    np = data;
    bounds = post;

    if (bounds->high == -1) {
        if (*np >= bounds->low) {
            return WEIR_CONF_OK;
        }

        if (weir_pstrfmt(cf->pool, &msg, "must be equal or more than %ld",
                         (long) bounds->low)
            != WEIR_OK)
        {
            return WEIR_CONF_ERROR;
        }

        return (char *) msg.data;
    }

    if (*np >= bounds->low && *np <= bounds->high) {
        return WEIR_CONF_OK;
    }

    if (weir_pstrfmt(cf->pool, &msg, "must be between %ld and %ld",
                     (long) bounds->low, (long) bounds->high)
        != WEIR_OK)
    {
        return WEIR_CONF_ERROR;
    }

    return (char *) msg.data;
}
