#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"


/*
 * The HTTP/1.1 origin protocol: pure transforms between the neutral
 * request/response of weir_http_upstream.h and HTTP/1 bytes. No I/O and
 * no timers here: the core reads and writes, this file only frames and
 * parses. docs/dev/upstream-v1.md lists what is rejected and why.
 */


/* the response head parser */
#define WEIR_HTTP_UPSTREAM_V1_STATUS    0
#define WEIR_HTTP_UPSTREAM_V1_HEADERS   1
#define WEIR_HTTP_UPSTREAM_V1_HEAD_DONE 2

/* how the response body ends */
#define WEIR_HTTP_UPSTREAM_V1_LENGTH    0
#define WEIR_HTTP_UPSTREAM_V1_CHUNKED   1
#define WEIR_HTTP_UPSTREAM_V1_CLOSE     2

/* a chunk-size line or the CRLF after chunk data, in a recycled buffer */
#define WEIR_HTTP_UPSTREAM_V1_FRAME_SIZE  32

/* interim (1xx) heads accepted before the final one, per attempt: each
 * one costs a header list, and an origin must not make that endless */
#define WEIR_HTTP_UPSTREAM_V1_MAX_INTERIM  32

/* bytes of a bad line quoted in a log line */
#define WEIR_HTTP_UPSTREAM_V1_QUOTE  128


typedef struct {
    weir_http_status_t           status;
    weir_http_chunked_t          chunked;
    unsigned char               *head_start;    /* of the head being parsed */
    weir_buf_t                  *trailer;       /* response trailer lines
                                                   put together */
    off_t                        sent;          /* request body bytes framed */
    off_t                        rest;          /* response body bytes due */
    weir_uint_t                  state;         /* head parser */
    weir_uint_t                  interim;       /* 1xx heads, this attempt */
    weir_uint_t                  framing;       /* response body */
    unsigned                     keep_alive:1;  /* "Connection: keep-alive" */
    unsigned                     done:1;        /* emit_last called */
    unsigned                     extra:1;       /* bytes after the end */
    unsigned                     last_sent:1;   /* request body framed whole */
} weir_http_upstream_v1_ctx_t;


static weir_int_t weir_http_upstream_v1_create_request(
    weir_http_upstream_t *u);
static weir_int_t weir_http_upstream_v1_encode_body(weir_http_upstream_t *u,
    weir_chain_t *in, weir_chain_t **out);
static weir_int_t weir_http_upstream_v1_encode_chunked(
    weir_http_upstream_t *u, weir_http_upstream_v1_ctx_t *ctx,
    weir_chain_t *in, weir_chain_t **ll);
static weir_int_t weir_http_upstream_v1_trailers_size(
    weir_http_upstream_t *u, size_t *len);
static unsigned char *weir_http_upstream_v1_write_trailers(
    weir_http_upstream_t *u, unsigned char *p);
static void weir_http_upstream_v1_reinit(weir_http_upstream_t *u);
static weir_int_t weir_http_upstream_v1_process_header(
    weir_http_upstream_t *u);
static weir_int_t weir_http_upstream_v1_status_line(weir_http_upstream_t *u,
    weir_http_upstream_v1_ctx_t *ctx);
static weir_int_t weir_http_upstream_v1_add_header(weir_http_upstream_t *u,
    weir_http_upstream_v1_ctx_t *ctx);
static weir_int_t weir_http_upstream_v1_head_done(weir_http_upstream_t *u,
    weir_http_upstream_v1_ctx_t *ctx);
static void weir_http_upstream_v1_reinit_head(weir_http_upstream_t *u);
static weir_int_t weir_http_upstream_v1_input_filter_init(
    weir_http_upstream_t *u);
static weir_int_t weir_http_upstream_v1_input_filter(weir_http_upstream_t *u,
    weir_buf_t *b);
static weir_int_t weir_http_upstream_v1_chunked_filter(
    weir_http_upstream_t *u, weir_http_upstream_v1_ctx_t *ctx,
    weir_buf_t *b);
static weir_int_t weir_http_upstream_v1_trailer(weir_http_upstream_t *u,
    weir_http_upstream_v1_ctx_t *ctx, weir_buf_t *b, weir_uint_t end);
static weir_int_t weir_http_upstream_v1_trailer_field(
    weir_http_upstream_t *u, weir_http_upstream_v1_ctx_t *ctx,
    unsigned char *line);
static weir_int_t weir_http_upstream_v1_body_end(weir_http_upstream_t *u,
    weir_http_upstream_v1_ctx_t *ctx, weir_buf_t *b);
static weir_uint_t weir_http_upstream_v1_keepalive(weir_http_upstream_t *u);

static weir_http_upstream_v1_ctx_t *weir_http_upstream_v1_get_ctx(
    weir_http_upstream_t *u);
static weir_chain_t *weir_http_upstream_v1_frame(weir_http_upstream_t *u,
    size_t size);
static weir_uint_t weir_http_upstream_v1_bad_target(weir_str_t *s);
static weir_uint_t weir_http_upstream_v1_own_name(weir_http_header_t *h);
static weir_uint_t weir_http_upstream_v1_framing_name(weir_http_header_t *h);
static off_t weir_http_upstream_v1_parse_length(weir_str_t *value);
static char *weir_http_upstream_v1_quote(char *buf, size_t size,
    unsigned char *p, unsigned char *last);


weir_http_upstream_proto_t  weir_http_upstream_v1_proto = {
    weir_string("http/1.1"),
    80,
    weir_http_upstream_v1_create_request,
    weir_http_upstream_v1_encode_body,
    weir_http_upstream_v1_reinit,
    weir_http_upstream_v1_process_header,
    weir_http_upstream_v1_reinit_head,
    weir_http_upstream_v1_input_filter_init,
    weir_http_upstream_v1_input_filter,
    weir_http_upstream_v1_keepalive,
    NULL,                                   /* one request at a time */
    NULL,
    0
};


/* ---- the request ---------------------------------------------------- */

/*
 * "METHOD URI HTTP/1.x", Host, the headers of u->req.headers, the
 * framing chosen here, the empty line: one buffer, sized first. Every
 * piece that came from configuration or variables is checked so that
 * no CR, LF or NUL can split the request (smuggling).
 */

static weir_int_t
weir_http_upstream_v1_create_request(weir_http_upstream_t *u)
{
    char                           quote[4 * WEIR_HTTP_UPSTREAM_V1_QUOTE
                                         + 8];
    size_t                         len;
    weir_uint_t                    i, chunked, zero;
    weir_buf_t                    *b;
    weir_log_t                    *log;
    weir_chain_t                  *cl;
    unsigned char                 *p;
    weir_list_part_t              *part;
    weir_http_header_t            *h;
    weir_http_request_t           *r;
    weir_http_upstream_request_t  *req;

    r = u->request;
    req = &u->req;
    log = r->connection->log;

    if (weir_http_upstream_v1_get_ctx(u) == NULL) {
        return WEIR_ERROR;
    }

    /* what is refused is quoted: it must not split the log either */

    if (!weir_http_valid_header_name(&req->method_name)) {
        weir_log_error(WEIR_LOG_ERR, log, 0,
                       "invalid method \"%s\" of the request to upstream",
                       weir_quote_for_log(quote, sizeof(quote),
                                          req->method_name.data,
                                          req->method_name.len));
        return WEIR_ERROR;
    }

    if (weir_http_upstream_v1_bad_target(&req->uri)) {
        weir_log_error(WEIR_LOG_ERR, log, 0,
                       "invalid URI \"%s\" of the request to upstream: "
                       "empty, or whitespace or a control character in it",
                       weir_quote_for_log(quote, sizeof(quote),
                                          req->uri.data,
                                          req->uri.len));
        return WEIR_ERROR;
    }

    if (req->authority.len && weir_http_upstream_v1_bad_target(&req->authority))
    {
        weir_log_error(WEIR_LOG_ERR, log, 0,
                       "invalid Host \"%s\" of the request to upstream: "
                       "whitespace or a control character in it",
                       weir_quote_for_log(quote, sizeof(quote),
                                          req->authority.data,
                                          req->authority.len));
        return WEIR_ERROR;
    }

    chunked = 0;
    zero = 0;

    if (req->has_body) {
        if (req->body_length < 0) {
            if (req->http_version < WEIR_HTTP_VERSION_11) {
                weir_log_error(WEIR_LOG_ALERT, log, 0,
                               "a request body of unknown length cannot be "
                               "sent to an HTTP/1.0 upstream: it must be "
                               "buffered first");
                return WEIR_ERROR;
            }

            chunked = 1;
        }

    } else if (req->method
               & (WEIR_HTTP_POST | WEIR_HTTP_PUT | WEIR_HTTP_PATCH))
    {
        zero = 1;
    }

    len = req->method_name.len + 1 + req->uri.len
          + sizeof(" HTTP/1.1\r\n") - 1
          + sizeof("Host: \r\n") - 1 + req->authority.len;

    part = &req->headers.part;
    h = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].hash == 0 || h[i].value.len == 0) {
            continue;
        }

        if (weir_http_upstream_v1_own_name(&h[i])) {
            /* weir writes Host and the framing itself, never twice */
            weir_log_debug(log, 0, "upstream request: \"%.*s\" skipped",
                           WEIR_STR_ARG(h[i].key));
            continue;
        }

        if (h[i].token == WEIR_HTTP_HDR_UNKNOWN
            && !weir_http_valid_header_name(&h[i].key))
        {
            weir_log_error(WEIR_LOG_ERR, log, 0,
                           "invalid header name \"%s\" in the request "
                           "to upstream",
                           weir_quote_for_log(quote,
                               sizeof(quote), h[i].key.data, h[i].key.len));
            return WEIR_ERROR;
        }

        if (!weir_http_valid_header_value(&h[i].value)) {
            weir_log_error(WEIR_LOG_ERR, log, 0,
                           "CR, LF or NUL in the value of header \"%s\" "
                           "of the request to upstream",
                           weir_quote_for_log(quote,
                               sizeof(quote), h[i].key.data, h[i].key.len));
            return WEIR_ERROR;
        }

        len += h[i].key.len + sizeof(": \r\n") - 1 + h[i].value.len;
    }

    if (chunked) {
        len += sizeof("Transfer-Encoding: chunked\r\n") - 1;

    } else if (req->has_body || zero) {
        len += sizeof("Content-Length: \r\n") - 1 + WEIR_INT_T_LEN;
    }

    len += sizeof("\r\n") - 1;

    b = weir_create_temp_buf(r->pool, len);
    if (b == NULL) {
        return WEIR_ERROR;
    }

    cl = weir_alloc_chain_link(r->pool, NULL);
    if (cl == NULL) {
        return WEIR_ERROR;
    }

    p = b->last;

    p = weir_cpymem(p, req->method_name.data, req->method_name.len);
    *p++ = ' ';
    p = weir_cpymem(p, req->uri.data, req->uri.len);

    if (req->http_version < WEIR_HTTP_VERSION_11) {
        p = weir_cpymem(p, " HTTP/1.0\r\n", sizeof(" HTTP/1.0\r\n") - 1);

    } else {
        p = weir_cpymem(p, " HTTP/1.1\r\n", sizeof(" HTTP/1.1\r\n") - 1);
    }

    p = weir_cpymem(p, "Host: ", sizeof("Host: ") - 1);
    p = weir_cpymem(p, req->authority.data, req->authority.len);
    *p++ = '\r'; *p++ = '\n';

    part = &req->headers.part;
    h = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].hash == 0 || h[i].value.len == 0
            || weir_http_upstream_v1_own_name(&h[i]))
        {
            continue;
        }

        p = weir_cpymem(p, h[i].key.data, h[i].key.len);
        *p++ = ':'; *p++ = ' ';
        p = weir_cpymem(p, h[i].value.data, h[i].value.len);
        *p++ = '\r'; *p++ = '\n';
    }

    if (chunked) {
        p = weir_cpymem(p, "Transfer-Encoding: chunked\r\n",
                        sizeof("Transfer-Encoding: chunked\r\n") - 1);

    } else if (req->has_body || zero) {
        p = weir_cpymem(p, "Content-Length: ",
                        sizeof("Content-Length: ") - 1);
        p = weir_sprint_uint(p, (uint64_t) (req->has_body ? req->body_length
                                                          : 0));
        *p++ = '\r'; *p++ = '\n';
    }

    *p++ = '\r'; *p++ = '\n';

    b->last = p;

    weir_log_debug(log, 0, "upstream request head:\n\"%.*s\"",
                   (int) (b->last - b->pos), (const char *) b->pos);

    cl->buf = b;
    cl->next = NULL;
    u->request_bufs = cl;

    return WEIR_OK;
}


/*
 * Known length: the same buffers, counted. Chunked: one chunk for all
 * the data of in ("SIZE\r\n", the data buffers, "\r\n"), and at last_buf
 * the last chunk, the request trailers and the final CRLF. The framing
 * buffers come from u->frame_free, tagged with this proto.
 */

static weir_int_t
weir_http_upstream_v1_encode_body(weir_http_upstream_t *u, weir_chain_t *in,
    weir_chain_t **out)
{
    off_t                         size;
    weir_buf_t                   *b;
    weir_log_t                   *log;
    weir_chain_t                 *cl, *ln, **ll;
    weir_http_upstream_v1_ctx_t  *ctx;

    log = u->request->connection->log;

    ctx = weir_http_upstream_v1_get_ctx(u);
    if (ctx == NULL) {
        return WEIR_ERROR;
    }

    for (ll = out; *ll; ll = &(*ll)->next) { /* void */ }

    if (u->req.body_length < 0 && u->req.has_body) {
        return weir_http_upstream_v1_encode_chunked(u, ctx, in, ll);
    }

    for (cl = in; cl; cl = cl->next) {
        b = cl->buf;

        if (!weir_buf_special(b)) {
            size = weir_buf_size(b);

            if (ctx->last_sent || size > u->req.body_length - ctx->sent) {
                weir_log_error(WEIR_LOG_ERR, log, 0,
                               "client sent more body than Content-Length: "
                               "%lld bytes", (long long) u->req.body_length);
                return WEIR_ERROR;
            }

            ctx->sent += size;
        }

        if (b->last_buf) {
            if (ctx->sent != u->req.body_length) {
                weir_log_error(WEIR_LOG_ERR, log, 0,
                               "request body ended after %lld of %lld "
                               "bytes of its Content-Length",
                               (long long) ctx->sent,
                               (long long) u->req.body_length);
                return WEIR_ERROR;
            }

            ctx->last_sent = 1;
        }

        ln = weir_alloc_chain_link(u->request->pool, NULL);
        if (ln == NULL) {
            return WEIR_ERROR;
        }

        ln->buf = b;
        *ll = ln;
        ll = &ln->next;
    }

    *ll = NULL;

    return WEIR_OK;
}


static weir_int_t
weir_http_upstream_v1_encode_chunked(weir_http_upstream_t *u,
    weir_http_upstream_v1_ctx_t *ctx, weir_chain_t *in, weir_chain_t **ll)
{
    off_t          size;
    size_t         len;
    weir_uint_t    last;
    weir_buf_t    *b;
    weir_chain_t  *cl, *ln;

    size = 0;
    last = 0;

    for (cl = in; cl; cl = cl->next) {
        if (cl->buf->last_buf) {
            last = 1;
        }

        if (!weir_buf_special(cl->buf)) {
            size += weir_buf_size(cl->buf);
        }
    }

    if (ctx->last_sent) {
        if (size == 0) {
            return WEIR_OK;
        }

        weir_log_error(WEIR_LOG_ERR, u->request->connection->log, 0,
                       "request body data after its end");
        return WEIR_ERROR;
    }

    if (size) {
        ln = weir_http_upstream_v1_frame(u, WEIR_HTTP_UPSTREAM_V1_FRAME_SIZE);
        if (ln == NULL) {
            return WEIR_ERROR;
        }

        b = ln->buf;
        b->last = weir_sprint_hex(b->last, (uint64_t) size);
        *b->last++ = '\r'; *b->last++ = '\n';

        *ll = ln;
        ll = &ln->next;

        for (cl = in; cl; cl = cl->next) {
            if (weir_buf_special(cl->buf) || weir_buf_size(cl->buf) == 0) {
                continue;
            }

            ln = weir_alloc_chain_link(u->request->pool, NULL);
            if (ln == NULL) {
                return WEIR_ERROR;
            }

            ln->buf = cl->buf;
            *ll = ln;
            ll = &ln->next;
        }

        ctx->sent += size;
    }

    if (size == 0 && !last) {
        *ll = NULL;
        return WEIR_OK;
    }

    /* the CRLF after the data, then the last chunk and the trailers */

    len = sizeof("\r\n0\r\n\r\n") - 1;

    if (last && weir_http_upstream_v1_trailers_size(u, &len) != WEIR_OK) {
        return WEIR_ERROR;
    }

    ln = weir_http_upstream_v1_frame(u, len);
    if (ln == NULL) {
        return WEIR_ERROR;
    }

    b = ln->buf;

    if (size) {
        *b->last++ = '\r'; *b->last++ = '\n';
    }

    if (last) {
        *b->last++ = '0'; *b->last++ = '\r'; *b->last++ = '\n';
        b->last = weir_http_upstream_v1_write_trailers(u, b->last);
        *b->last++ = '\r'; *b->last++ = '\n';
        b->last_buf = 1;
        ctx->last_sent = 1;
    }

    *ll = ln;
    ln->next = NULL;

    return WEIR_OK;
}


/*
 * The request trailers of a chunked body (u->req.send_trailers), those
 * that may go: their size is added to *len; WEIR_ERROR (logged) when one
 * could split the request.
 */

static weir_int_t
weir_http_upstream_v1_trailers_size(weir_http_upstream_t *u, size_t *len)
{
    char                 quote[4 * WEIR_HTTP_UPSTREAM_V1_QUOTE + 8];
    weir_uint_t          i;
    weir_list_part_t    *part;
    weir_http_header_t  *h;

    if (!u->req.send_trailers) {
        return WEIR_OK;
    }

    part = &u->request->headers_in.trailers.part;
    h = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].hash == 0 || weir_http_upstream_v1_framing_name(&h[i])) {
            continue;
        }

        if (!weir_http_valid_header_name(&h[i].key)
            || !weir_http_valid_header_value(&h[i].value))
        {
            weir_log_error(WEIR_LOG_ERR, u->request->connection->log, 0,
                           "invalid trailer field \"%s\" in the request "
                           "to upstream",
                           weir_quote_for_log(quote,
                               sizeof(quote), h[i].key.data, h[i].key.len));
            return WEIR_ERROR;
        }

        *len += h[i].key.len + sizeof(": \r\n") - 1 + h[i].value.len;
    }

    return WEIR_OK;
}


/* writes what weir_http_upstream_v1_trailers_size() counted */

static unsigned char *
weir_http_upstream_v1_write_trailers(weir_http_upstream_t *u,
    unsigned char *p)
{
    weir_uint_t          i;
    weir_list_part_t    *part;
    weir_http_header_t  *h;

    if (!u->req.send_trailers) {
        return p;
    }

    part = &u->request->headers_in.trailers.part;
    h = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].hash == 0 || weir_http_upstream_v1_framing_name(&h[i])) {
            continue;
        }

        p = weir_cpymem(p, h[i].key.data, h[i].key.len);
        *p++ = ':'; *p++ = ' ';
        p = weir_cpymem(p, h[i].value.data, h[i].value.len);
        *p++ = '\r'; *p++ = '\n';
    }

    return p;
}


/* ---- the response head ---------------------------------------------- */

static void
weir_http_upstream_v1_reinit(weir_http_upstream_t *u)
{
    weir_http_upstream_v1_ctx_t  *ctx;

    weir_http_upstream_v1_reinit_head(u);

    /* the client request's head is parsed: its parser state is free */
    u->request->state = 0;

    ctx = u->proto_ctx;

    if (ctx == NULL) {
        return;
    }

    /* a retry frames the whole body again */
    ctx->sent = 0;
    ctx->last_sent = 0;

    ctx->interim = 0;
    ctx->trailer = NULL;
    ctx->done = 0;
    ctx->extra = 0;
    ctx->framing = WEIR_HTTP_UPSTREAM_V1_LENGTH;
    weir_memzero(&ctx->chunked, sizeof(weir_http_chunked_t));
}


static void
weir_http_upstream_v1_reinit_head(weir_http_upstream_t *u)
{
    weir_http_upstream_v1_ctx_t  *ctx;

    /* new lists for the next head: the core may still relay the last */
    weir_memzero(&u->headers_in, sizeof(weir_http_upstream_headers_in_t));
    u->headers_in.content_length_n = -1;

    ctx = u->proto_ctx;

    if (ctx) {
        ctx->state = WEIR_HTTP_UPSTREAM_V1_STATUS;
        ctx->head_start = NULL;
        ctx->keep_alive = 0;
        weir_memzero(&ctx->status, sizeof(weir_http_status_t));
    }
}


/*
 * Parses the head in u->buffer with the HTTP/1 parsers; their state is
 * in u->request, whose own head is parsed already (the chunked request
 * body parser keeps its state in its own context, not in r).
 */

static weir_int_t
weir_http_upstream_v1_process_header(weir_http_upstream_t *u)
{
    char                          quote[4 * WEIR_HTTP_UPSTREAM_V1_QUOTE + 8];
    weir_int_t                    rc;
    weir_buf_t                   *b;
    weir_http_request_t          *r;
    weir_http_upstream_v1_ctx_t  *ctx;

    r = u->request;
    b = &u->buffer;

    ctx = weir_http_upstream_v1_get_ctx(u);
    if (ctx == NULL) {
        return WEIR_ERROR;
    }

    if (ctx->state == WEIR_HTTP_UPSTREAM_V1_HEAD_DONE) {
        return WEIR_OK;
    }

    /* the client's head is parsed already: the bit is the origin's now
     * (proxy_strict_line_endings) */
    r->strict_line_endings = u->conf->strict_line_endings ? 1 : 0;

    if (ctx->state == WEIR_HTTP_UPSTREAM_V1_STATUS) {
        rc = weir_http_upstream_v1_status_line(u, ctx);
        if (rc != WEIR_OK) {
            return rc;
        }
    }

    for ( ;; ) {
        rc = weir_http_parse_header_line(r, b, 1);

        switch (rc) {

        case WEIR_OK:
            rc = weir_http_upstream_v1_add_header(u, ctx);
            if (rc != WEIR_OK) {
                return rc;
            }

            continue;

        case WEIR_AGAIN:
            return WEIR_AGAIN;

        case WEIR_HTTP_PARSE_HEADER_DONE:
            return weir_http_upstream_v1_head_done(u, ctx);

        default:
            weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                           "upstream sent invalid header: \"%s\"",
                           weir_http_upstream_v1_quote(quote, sizeof(quote),
                               r->header_name_start,
                               b->pos < b->last ? b->pos + 1 : b->pos));
            return WEIR_HTTP_UPSTREAM_INVALID_HEADER;
        }
    }
}


static weir_int_t
weir_http_upstream_v1_status_line(weir_http_upstream_t *u,
    weir_http_upstream_v1_ctx_t *ctx)
{
    char                              quote[4 * WEIR_HTTP_UPSTREAM_V1_QUOTE
                                            + 8];
    weir_int_t                        rc;
    weir_buf_t                       *b;
    weir_str_t                        line;
    weir_uint_t                       version, major, minor;
    weir_http_request_t              *r;
    weir_http_upstream_headers_in_t  *hi;

    r = u->request;
    b = &u->buffer;
    hi = &u->headers_in;

    if (ctx->head_start == NULL) {
        /* a new head */
        ctx->head_start = b->pos;
        hi->content_length_n = -1;

        if (hi->headers.pool == NULL
            && weir_list_init(&hi->headers, r->pool, 8,
                              sizeof(weir_http_header_t))
               != WEIR_OK)
        {
            return WEIR_ERROR;
        }
    }

    /* the status line parser writes the version into r: keep the
     * client's */
    version = r->http_version;
    major = r->http_major;
    minor = r->http_minor;

    rc = weir_http_parse_status_line(r, b, &ctx->status);

    r->http_version = version;
    r->http_major = major;
    r->http_minor = minor;

    if (rc == WEIR_AGAIN) {
        return WEIR_AGAIN;
    }

    if (rc != WEIR_OK) {
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "upstream sent no valid HTTP/1.x header: \"%s\"",
                       weir_http_upstream_v1_quote(quote, sizeof(quote),
                           ctx->head_start,
                           b->pos < b->last ? b->pos + 1 : b->pos));
        return WEIR_HTTP_UPSTREAM_INVALID_HEADER;
    }

    line.data = ctx->status.start;
    line.len = ctx->status.end - ctx->status.start;

    if (ctx->status.code > 599) {
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "upstream sent invalid status code %lu: \"%s\"",
                       (unsigned long) ctx->status.code,
                       weir_http_upstream_v1_quote(quote, sizeof(quote),
                           line.data, line.data + line.len));
        return WEIR_HTTP_UPSTREAM_INVALID_HEADER;
    }

    /* "HTTP/1.x " comes before the code: the parser takes nothing else;
     * a later 1.x is read as 1.1 (RFC 9112 2.3) */
    hi->status_n = ctx->status.code;
    hi->http_version = ctx->status.http_version;

    line.data += sizeof("HTTP/1.1 ") - 1;
    line.len -= sizeof("HTTP/1.1 ") - 1;

    hi->status_line.data = weir_pnalloc(r->pool, line.len + 1);
    if (hi->status_line.data == NULL) {
        return WEIR_ERROR;
    }

    weir_memcpy(hi->status_line.data, line.data, line.len);
    hi->status_line.data[line.len] = '\0';
    hi->status_line.len = line.len;

    weir_log_debug(r->connection->log, 0, "upstream status %lu \"%.*s\"",
                   (unsigned long) hi->status_n,
                   WEIR_STR_ARG(hi->status_line));

    ctx->state = WEIR_HTTP_UPSTREAM_V1_HEADERS;

    return WEIR_OK;
}


/* a copy of the header line the parser just took, linked and checked */

static weir_int_t
weir_http_upstream_v1_add_header(weir_http_upstream_t *u,
    weir_http_upstream_v1_ctx_t *ctx)
{
    off_t                             n;
    size_t                            klen, vlen;
    weir_log_t                       *log;
    weir_uint_t                       hash;
    unsigned char                    *p;
    weir_http_header_t               *h, **link, *prev;
    weir_http_request_t              *r;
    weir_http_upstream_headers_in_t  *hi;

    r = u->request;
    hi = &u->headers_in;
    log = r->connection->log;

    klen = r->header_name_end - r->header_name_start;
    vlen = r->header_end - r->header_start;

    h = weir_list_push(&hi->headers);
    if (h == NULL) {
        return WEIR_ERROR;
    }

    /* u->buffer may be reused for the body: the head is copied out */
    p = weir_pnalloc(r->pool, klen + 1 + vlen + 1 + klen);
    if (p == NULL) {
        return WEIR_ERROR;
    }

    h->key.data = p;
    h->key.len = klen;
    p = weir_cpymem(p, r->header_name_start, klen);
    *p++ = '\0';

    h->value.data = p;
    h->value.len = vlen;
    p = weir_cpymem(p, r->header_start, vlen);
    *p++ = '\0';

    h->lowcase_key = p;

    /* the parser lowercased and hashed the name as it went */
    if (klen <= sizeof(r->lowcase_header) && r->lowcase_index == klen) {
        weir_memcpy(p, r->lowcase_header, klen);
        hash = r->header_hash;

    } else {
        hash = weir_hash_strlow(p, h->key.data, klen);
    }

    /* 0 marks a deleted header */
    h->hash = hash ? hash : 1;
    h->token = weir_http_header_token(h->lowcase_key, klen, hash);
    h->next = NULL;

    weir_log_debug(log, 0, "upstream header: \"%.*s: %.*s\"",
                   WEIR_STR_ARG(h->key), WEIR_STR_ARG(h->value));

    switch (h->token) {

    case WEIR_HTTP_HDR_CONTENT_LENGTH:
        n = weir_http_upstream_v1_parse_length(&h->value);

        if (n < 0) {
            weir_log_error(WEIR_LOG_ERR, log, 0,
                           "upstream sent invalid \"Content-Length\" header: "
                           "\"%.*s: %.*s\"",
                           WEIR_STR_ARG(h->key), WEIR_STR_ARG(h->value));
            return WEIR_HTTP_UPSTREAM_INVALID_HEADER;
        }

        prev = hi->content_length;

        if (prev && n != hi->content_length_n) {
            weir_log_error(WEIR_LOG_ERR, log, 0,
                           "upstream sent duplicate header line: "
                           "\"%.*s: %.*s\", previous value: \"%.*s: %.*s\"",
                           WEIR_STR_ARG(h->key), WEIR_STR_ARG(h->value),
                           WEIR_STR_ARG(prev->key),
                           WEIR_STR_ARG(prev->value));
            return WEIR_HTTP_UPSTREAM_INVALID_HEADER;
        }

        hi->content_length_n = n;
        break;

    case WEIR_HTTP_HDR_TRANSFER_ENCODING:
        prev = hi->transfer_encoding;

        if (prev) {
            weir_log_error(WEIR_LOG_ERR, log, 0,
                           "upstream sent duplicate header line: "
                           "\"%.*s: %.*s\", previous value: \"%.*s: %.*s\"",
                           WEIR_STR_ARG(h->key), WEIR_STR_ARG(h->value),
                           WEIR_STR_ARG(prev->key),
                           WEIR_STR_ARG(prev->value));
            return WEIR_HTTP_UPSTREAM_INVALID_HEADER;
        }

        if (h->value.len != sizeof("chunked") - 1
            || weir_strncasecmp(h->value.data, (unsigned char *) "chunked",
                                sizeof("chunked") - 1)
               != 0)
        {
            weir_log_error(WEIR_LOG_ERR, log, 0,
                           "upstream sent unknown \"Transfer-Encoding\": "
                           "\"%.*s\"", WEIR_STR_ARG(h->value));
            return WEIR_HTTP_UPSTREAM_INVALID_HEADER;
        }

        hi->chunked = 1;
        break;

    case WEIR_HTTP_HDR_CONNECTION:
        if (weir_http_list_has_token(&h->value, (unsigned char *) "close",
                                     sizeof("close") - 1))
        {
            hi->connection_close = 1;
        }

        if (weir_http_list_has_token(&h->value,
                                     (unsigned char *) "keep-alive",
                                     sizeof("keep-alive") - 1))
        {
            ctx->keep_alive = 1;
        }

        break;

    default:
        break;
    }

    link = weir_http_upstream_header_link(hi, h->token);

    if (link) {
        /* the first one is linked, later ones of the name chain on */
        while (*link) {
            link = &(*link)->next;
        }

        *link = h;
    }

    return WEIR_OK;
}


/*
 * Where the response head keeps the first field of a name the core and
 * the modules look up (NULL: kept only in the list), for every origin
 * protocol: Connection, Content-Length, Transfer-Encoding, Upgrade,
 * Keep-Alive, Location, Refresh, Date, Server, Content-Type.
 */

weir_http_header_t **
weir_http_upstream_header_link(weir_http_upstream_headers_in_t *hi,
    weir_uint_t token)
{
    switch (token) {

    case WEIR_HTTP_HDR_CONNECTION:
        return &hi->connection;

    case WEIR_HTTP_HDR_CONTENT_LENGTH:
        return &hi->content_length;

    case WEIR_HTTP_HDR_TRANSFER_ENCODING:
        return &hi->transfer_encoding;

    case WEIR_HTTP_HDR_UPGRADE:
        return &hi->upgrade;

    case WEIR_HTTP_HDR_KEEP_ALIVE:
        return &hi->keep_alive;

    case WEIR_HTTP_HDR_LOCATION:
        return &hi->location;

    case WEIR_HTTP_HDR_REFRESH:
        return &hi->refresh;

    case WEIR_HTTP_HDR_DATE:
        return &hi->date;

    case WEIR_HTTP_HDR_SERVER:
        return &hi->server;

    case WEIR_HTTP_HDR_CONTENT_TYPE:
        return &hi->content_type;

    default:
        return NULL;
    }
}


static weir_int_t
weir_http_upstream_v1_head_done(weir_http_upstream_t *u,
    weir_http_upstream_v1_ctx_t *ctx)
{
    weir_log_t                       *log;
    weir_uint_t                       status;
    weir_http_upstream_headers_in_t  *hi;

    hi = &u->headers_in;
    log = u->request->connection->log;
    status = hi->status_n;

    /* RFC 9112 6.1 and 6.3: both framings is how requests get smuggled */
    if (hi->chunked && hi->content_length) {
        weir_log_error(WEIR_LOG_ERR, log, 0,
                       "upstream sent \"Content-Length\" and "
                       "\"Transfer-Encoding\" headers at the same time");
        return WEIR_HTTP_UPSTREAM_INVALID_HEADER;
    }

    if (hi->chunked && hi->http_version < WEIR_HTTP_VERSION_11) {
        weir_log_error(WEIR_LOG_ERR, log, 0,
                       "upstream sent \"Transfer-Encoding\" in an HTTP/1.0 "
                       "response");
        return WEIR_HTTP_UPSTREAM_INVALID_HEADER;
    }

    if (hi->http_version < WEIR_HTTP_VERSION_11 && !ctx->keep_alive) {
        hi->connection_close = 1;
    }

    if (status < WEIR_HTTP_OK && status != WEIR_HTTP_SWITCHING_PROTOCOLS) {
        if (++ctx->interim > WEIR_HTTP_UPSTREAM_V1_MAX_INTERIM) {
            weir_log_error(WEIR_LOG_ERR, log, 0,
                           "upstream sent more than %d interim responses",
                           WEIR_HTTP_UPSTREAM_V1_MAX_INTERIM);
            return WEIR_HTTP_UPSTREAM_INVALID_HEADER;
        }

        hi->no_body = 1;
        ctx->state = WEIR_HTTP_UPSTREAM_V1_STATUS;
        ctx->head_start = NULL;

        weir_log_debug(log, 0, "upstream interim response %lu",
                       (unsigned long) status);

        return WEIR_HTTP_UPSTREAM_INTERIM;
    }

    if (status < WEIR_HTTP_OK || status == WEIR_HTTP_NO_CONTENT
        || status == WEIR_HTTP_NOT_MODIFIED || u->req.method == WEIR_HTTP_HEAD)
    {
        hi->no_body = 1;
    }

    ctx->state = WEIR_HTTP_UPSTREAM_V1_HEAD_DONE;

    return WEIR_OK;
}


/* ---- the response body ---------------------------------------------- */

/*
 * A body known to be empty (no_body, "Content-Length: 0") ends here, with
 * emit_last before any input_filter call: the core calls input_filter
 * for the bytes after the head only when there are some, and those are
 * then extra bytes (keep-alive off, a warning).
 */

static weir_int_t
weir_http_upstream_v1_input_filter_init(weir_http_upstream_t *u)
{
    weir_http_upstream_v1_ctx_t      *ctx;
    weir_http_upstream_headers_in_t  *hi;

    ctx = weir_http_upstream_v1_get_ctx(u);
    if (ctx == NULL) {
        return WEIR_ERROR;
    }

    hi = &u->headers_in;

    ctx->done = 0;
    ctx->extra = 0;
    ctx->trailer = NULL;

    if (hi->no_body) {
        ctx->framing = WEIR_HTTP_UPSTREAM_V1_LENGTH;
        u->length = 0;

    } else if (hi->chunked) {
        ctx->framing = WEIR_HTTP_UPSTREAM_V1_CHUNKED;
        weir_memzero(&ctx->chunked, sizeof(weir_http_chunked_t));
        u->length = -1;

    } else if (hi->content_length && hi->content_length_n >= 0) {
        ctx->framing = WEIR_HTTP_UPSTREAM_V1_LENGTH;
        u->length = hi->content_length_n;

    } else {
        ctx->framing = WEIR_HTTP_UPSTREAM_V1_CLOSE;
        u->length = -1;
    }

    weir_log_debug(u->request->connection->log, 0,
                   "upstream body: framing %lu, length %lld",
                   (unsigned long) ctx->framing, (long long) u->length);

    ctx->rest = u->length;

    if (u->length == 0) {
        ctx->done = 1;
        return weir_http_upstream_emit_last(u);
    }

    return WEIR_OK;
}


static weir_int_t
weir_http_upstream_v1_input_filter(weir_http_upstream_t *u, weir_buf_t *b)
{
    off_t                         n;
    weir_http_upstream_v1_ctx_t  *ctx;

    ctx = weir_http_upstream_v1_get_ctx(u);
    if (ctx == NULL) {
        return WEIR_ERROR;
    }

    if (b == NULL) {
        /* the origin closed the connection */

        if (ctx->done) {
            return WEIR_OK;
        }

        if (ctx->framing == WEIR_HTTP_UPSTREAM_V1_CLOSE) {
            ctx->done = 1;
            u->length = 0;
            return weir_http_upstream_emit_last(u);
        }

        /* the core logs "upstream prematurely closed connection" */
        weir_log_debug(u->request->connection->log, 0,
                       "upstream closed before the end of the body: "
                       "framing %lu, %lld bytes expected",
                       (unsigned long) ctx->framing, (long long) ctx->rest);
        return WEIR_ERROR;
    }

    if (ctx->done) {
        return weir_http_upstream_v1_body_end(u, ctx, b);
    }

    switch (ctx->framing) {

    case WEIR_HTTP_UPSTREAM_V1_CHUNKED:
        return weir_http_upstream_v1_chunked_filter(u, ctx, b);

    case WEIR_HTTP_UPSTREAM_V1_CLOSE:
        if (b->pos < b->last) {
            if (weir_http_upstream_emit(u, b, b->pos, b->last) != WEIR_OK) {
                return WEIR_ERROR;
            }

            b->pos = b->last;
        }

        return WEIR_OK;

    default: /* WEIR_HTTP_UPSTREAM_V1_LENGTH */
        n = b->last - b->pos;

        if (n > ctx->rest) {
            n = ctx->rest;
        }

        if (n > 0) {
            if (weir_http_upstream_emit(u, b, b->pos, b->pos + n) != WEIR_OK)
            {
                return WEIR_ERROR;
            }

            b->pos += n;
            ctx->rest -= n;
            u->length = ctx->rest;
        }

        if (ctx->rest > 0) {
            return WEIR_OK;
        }

        ctx->done = 1;

        if (weir_http_upstream_emit_last(u) != WEIR_OK) {
            return WEIR_ERROR;
        }

        return weir_http_upstream_v1_body_end(u, ctx, b);
    }
}


static weir_int_t
weir_http_upstream_v1_chunked_filter(weir_http_upstream_t *u,
    weir_http_upstream_v1_ctx_t *ctx, weir_buf_t *b)
{
    off_t                n;
    weir_int_t           rc;
    weir_http_chunked_t  *ch;

    ch = &ctx->chunked;

    for ( ;; ) {
        rc = weir_http_parse_chunked(u->request, b, ch);

        switch (rc) {

        case WEIR_OK:
            n = b->last - b->pos;

            if (n > ch->size) {
                n = ch->size;
            }

            if (weir_http_upstream_emit(u, b, b->pos, b->pos + n) != WEIR_OK)
            {
                return WEIR_ERROR;
            }

            b->pos += n;
            ch->size -= n;
            continue;

        case WEIR_HTTP_PARSE_TRAILER:
            if (weir_http_upstream_v1_trailer(u, ctx, b, 1) != WEIR_OK) {
                return WEIR_ERROR;
            }

            continue;

        case WEIR_DONE:
            ctx->done = 1;
            u->length = 0;

            if (weir_http_upstream_emit_last(u) != WEIR_OK) {
                return WEIR_ERROR;
            }

            return weir_http_upstream_v1_body_end(u, ctx, b);

        case WEIR_AGAIN:
            /* b is used up: keep the part of a trailer line it had */
            if (weir_http_upstream_v1_trailer(u, ctx, b, 0) != WEIR_OK) {
                return WEIR_ERROR;
            }

            b->pos = b->last;
            return WEIR_OK;

        default:
            weir_log_error(WEIR_LOG_ERR, u->request->connection->log, 0,
                           "upstream sent invalid chunked response");
            return WEIR_ERROR;
        }
    }
}


/*
 * Takes the piece of a trailer field line that the chunked parser's last
 * call saw, and the field once the line ends. The raw buffer b is read
 * into again later, so every piece is copied to ctx->trailer: the fields
 * taken keep pointing into it and only an unfinished line moves when it
 * is full (the parser caps the whole section, so this is bounded).
 */

static weir_int_t
weir_http_upstream_v1_trailer(weir_http_upstream_t *u,
    weir_http_upstream_v1_ctx_t *ctx, weir_buf_t *b, weir_uint_t end)
{
    size_t          n, len, size;
    weir_buf_t     *tb, *nb;
    unsigned char  *line;

    if (ctx->chunked.trailer_start == NULL) {
        return WEIR_OK;
    }

    n = b->pos - ctx->chunked.trailer_start;
    tb = ctx->trailer;
    len = tb ? (size_t) (tb->last - tb->pos) : 0;

    if (tb == NULL || (size_t) (tb->end - tb->last) < n) {
        size = 2 * (len + n);
        if (size < 256) {
            size = 256;
        }

        nb = weir_create_temp_buf(u->request->pool, size);
        if (nb == NULL) {
            return WEIR_ERROR;
        }

        if (len) {
            nb->last = weir_cpymem(nb->last, tb->pos, len);
        }

        ctx->trailer = nb;
        tb = nb;
    }

    tb->last = weir_cpymem(tb->last, ctx->chunked.trailer_start, n);

    if (!end) {
        return WEIR_OK;
    }

    line = tb->pos;
    tb->pos = tb->last;

    return weir_http_upstream_v1_trailer_field(u, ctx, line);
}


static weir_int_t
weir_http_upstream_v1_trailer_field(weir_http_upstream_t *u,
    weir_http_upstream_v1_ctx_t *ctx, unsigned char *line)
{
    size_t                            len;
    weir_uint_t                       hash;
    weir_http_header_t                f, *h;
    weir_http_request_t              *r;
    weir_http_upstream_headers_in_t  *hi;

    r = u->request;
    hi = &u->headers_in;
    len = ctx->chunked.trailer_name_len;

    f.lowcase_key = weir_pnalloc(r->pool, len);
    if (f.lowcase_key == NULL) {
        return WEIR_ERROR;
    }

    hash = weir_hash_strlow(f.lowcase_key, line, len);

    f.hash = hash ? hash : 1;
    f.token = weir_http_header_token(f.lowcase_key, len, hash);
    f.key.data = line;
    f.key.len = len;
    f.value.data = line + ctx->chunked.trailer_value_start;
    f.value.len = ctx->chunked.trailer_value_end
                  - ctx->chunked.trailer_value_start;
    f.next = NULL;

    /* nothing may take a trailer for the framing or the connection */
    if (weir_http_upstream_v1_framing_name(&f)) {
        weir_log_error(WEIR_LOG_INFO, r->connection->log, 0,
                       "upstream sent \"%.*s\" trailer field, ignored",
                       WEIR_STR_ARG(f.key));
        return WEIR_OK;
    }

    if (hi->trailers.pool == NULL
        && weir_list_init(&hi->trailers, r->pool, 4,
                          sizeof(weir_http_header_t))
           != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    h = weir_list_push(&hi->trailers);
    if (h == NULL) {
        return WEIR_ERROR;
    }

    *h = f;

    weir_log_debug(r->connection->log, 0, "upstream trailer: \"%.*s: %.*s\"",
                   WEIR_STR_ARG(h->key), WEIR_STR_ARG(h->value));

    return WEIR_OK;
}


/* after the end of the body: whatever else came is dropped */

static weir_int_t
weir_http_upstream_v1_body_end(weir_http_upstream_t *u,
    weir_http_upstream_v1_ctx_t *ctx, weir_buf_t *b)
{
    if (b->pos == b->last) {
        return WEIR_OK;
    }

    u->keepalive = 0;

    if (!ctx->extra) {
        ctx->extra = 1;

        weir_log_error(WEIR_LOG_WARN, u->request->connection->log, 0,
                       "upstream sent more data than specified in %s: "
                       "%lld bytes ignored",
                       ctx->framing == WEIR_HTTP_UPSTREAM_V1_CHUNKED
                           ? "the chunked framing"
                           : u->headers_in.no_body
                               ? "a response without a body"
                               : "\"Content-Length\" header",
                       (long long) (b->last - b->pos));
    }

    b->pos = b->last;

    return WEIR_OK;
}


static weir_uint_t
weir_http_upstream_v1_keepalive(weir_http_upstream_t *u)
{
    weir_http_upstream_v1_ctx_t  *ctx;

    ctx = u->proto_ctx;

    if (ctx == NULL
        || !ctx->done
        || ctx->extra
        || ctx->framing == WEIR_HTTP_UPSTREAM_V1_CLOSE
        || u->headers_in.connection_close
        || u->headers_in.status_n == WEIR_HTTP_SWITCHING_PROTOCOLS
        || u->upgrade
        || !u->request_sent
        || u->early_response)
    {
        return 0;
    }

    return 1;
}


/* ---- helpers -------------------------------------------------------- */

static weir_http_upstream_v1_ctx_t *
weir_http_upstream_v1_get_ctx(weir_http_upstream_t *u)
{
    weir_http_upstream_v1_ctx_t  *ctx;

    if (u->proto_ctx) {
        return u->proto_ctx;
    }

    ctx = weir_pcalloc(u->request->pool, sizeof(weir_http_upstream_v1_ctx_t));
    if (ctx == NULL) {
        return NULL;
    }

    u->proto_ctx = ctx;

    return ctx;
}


/* a framing buffer of at least size bytes, recycled by the core through
 * u->frame_free (the tag is this proto) */

static weir_chain_t *
weir_http_upstream_v1_frame(weir_http_upstream_t *u, size_t size)
{
    weir_buf_t     *b;
    weir_chain_t   *cl;
    unsigned char  *start, *end;

    cl = weir_chain_get_free_buf(u->request->pool, &u->frame_free);
    if (cl == NULL) {
        return NULL;
    }

    b = cl->buf;
    start = b->start;
    end = b->end;

    if (start == NULL || (size_t) (end - start) < size) {
        if (size < WEIR_HTTP_UPSTREAM_V1_FRAME_SIZE) {
            size = WEIR_HTTP_UPSTREAM_V1_FRAME_SIZE;
        }

        start = weir_pnalloc(u->request->pool, size);
        if (start == NULL) {
            return NULL;
        }

        end = start + size;
    }

    weir_memzero(b, sizeof(weir_buf_t));

    b->start = start;
    b->end = end;
    b->pos = start;
    b->last = start;
    b->temporary = 1;
    b->tag = (weir_buf_tag_t) &weir_http_upstream_v1_proto;

    cl->next = NULL;

    return cl;
}


/* an empty target, whitespace or a control character */

static weir_uint_t
weir_http_upstream_v1_bad_target(weir_str_t *s)
{
    size_t  i;

    if (s->len == 0) {
        return 1;
    }

    for (i = 0; i < s->len; i++) {
        if (s->data[i] <= ' ' || s->data[i] == 0x7f) {
            return 1;
        }
    }

    return 0;
}


/* Host, Content-Length, Transfer-Encoding: this handler writes them */

static weir_uint_t
weir_http_upstream_v1_own_name(weir_http_header_t *h)
{
    size_t       i;
    weir_str_t  *n;

    static weir_str_t  names[] = {
        weir_string("host"),
        weir_string("content-length"),
        weir_string("transfer-encoding"),
        weir_null_string
    };

    /* the list may carry no token: compare the names */
    for (n = names; n->len; n++) {
        if (h->key.len != n->len) {
            continue;
        }

        for (i = 0; i < n->len; i++) {
            if (weir_tolower(h->key.data[i]) != n->data[i]) {
                break;
            }
        }

        if (i == n->len) {
            return 1;
        }
    }

    return 0;
}


/* a name no trailer may carry: framing, routing, the connection */

static weir_uint_t
weir_http_upstream_v1_framing_name(weir_http_header_t *h)
{
    if (weir_http_upstream_v1_own_name(h)) {
        return 1;
    }

    if (h->token < WEIR_HTTP_HDR_LAST_
        && (weir_http_header_defs[h->token].flags
            & WEIR_HTTP_HDR_F_HOP_BY_HOP))
    {
        return 1;
    }

    return weir_http_upstream_hop_by_hop(h, NULL) ? 1 : 0;
}


/*
 * Content-Length: digits, or a list of equal ones ("5, 5", RFC 9110
 * 8.6); -1 for anything else, an overflow included.
 */

static off_t
weir_http_upstream_v1_parse_length(weir_str_t *value)
{
    off_t           n, len;
    weir_uint_t     digits;
    unsigned char  *p, *last;

    p = value->data;
    last = p + value->len;
    len = -1;

    for ( ;; ) {
        while (p < last && (*p == ' ' || *p == '\t')) {
            p++;
        }

        n = 0;
        digits = 0;

        while (p < last && *p >= '0' && *p <= '9') {
            if (n > (WEIR_MAX_OFF_T_VALUE - (*p - '0')) / 10) {
                return -1;
            }

            n = n * 10 + (*p - '0');
            digits++;
            p++;
        }

        if (digits == 0 || (len >= 0 && n != len)) {
            return -1;
        }

        len = n;

        while (p < last && (*p == ' ' || *p == '\t')) {
            p++;
        }

        if (p == last) {
            return len;
        }

        if (*p++ != ',') {
            return -1;
        }
    }
}


/* does the comma-separated list hold token (lowercase), any case? */

/* [p, last), at most WEIR_HTTP_UPSTREAM_V1_QUOTE bytes of it, printable,
 * NUL-terminated in buf (4 bytes per input byte and 8 more) */

static char *
weir_http_upstream_v1_quote(char *buf, size_t size, unsigned char *p,
    unsigned char *last)
{
    if (p == NULL || last < p) {
        last = p;
    }

    return weir_quote_for_log(buf, size, p, last - p);
}


