#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"
#include "weir_http_upstream_int.h"

#include <sys/uio.h>


/*
 * The upstream core (weir_http_upstream.c): the response. Reads the
 * head (interim responses, a status proxy_next_upstream retries,
 * intercepted errors, a 101 to the tunnel), sends it to the client, and
 * relays the body with bounded buffers: views into raw buffers the
 * origin is read into, a temporary file when the client is slow and
 * buffering is on.
 */


/* origin bytes one event may read: a fast origin whose response goes to
 * the temporary file would otherwise keep the worker until the end */
#define WEIR_HTTP_UPSTREAM_READ_BUDGET  (128 * 1024)
/* the smallest buffer read into for the rest of a body of known length */
#define WEIR_HTTP_UPSTREAM_MIN_RAW  256

/* memory buffers one readv() of the origin fills at most */
#define WEIR_HTTP_UPSTREAM_READV        16


static void weir_http_upstream_parsed_head(weir_http_upstream_t *u);
static weir_int_t weir_http_upstream_interim(weir_http_upstream_t *u);
static void weir_http_upstream_head_parsed(weir_http_upstream_t *u,
    weir_int_t rc);
static void weir_http_upstream_head_done(weir_http_upstream_t *u);
static weir_uint_t weir_http_upstream_status_ft(weir_uint_t status);
static weir_uint_t weir_http_upstream_has_error_page(weir_http_request_t *r,
    weir_uint_t status);
static weir_uint_t weir_http_upstream_client_blocked(weir_http_request_t *r);
static weir_uint_t weir_http_upstream_more_raws(weir_http_upstream_t *u,
    weir_http_upstream_raw_t **more);
static weir_buf_t *weir_http_upstream_read_buf(weir_http_upstream_t *u,
    weir_uint_t spill);
static weir_int_t weir_http_upstream_pass(weir_http_upstream_t *u);
static void weir_http_upstream_update_busy(weir_http_upstream_t *u);
static weir_http_upstream_raw_t *weir_http_upstream_raw(
    weir_http_upstream_t *u, weir_buf_t *b);
static weir_int_t weir_http_upstream_spill(weir_http_upstream_t *u,
    unsigned char *start, unsigned char *end);


/* ---- the response head ------------------------------------------------ */

void
weir_http_upstream_process_head(weir_http_upstream_t *u)
{
    ssize_t                    n;
    weir_int_t                 rc;
    weir_err_t                 err;
    weir_buf_t                *b;
    weir_connection_t         *c, *cc;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;

    r = u->request;
    ctx = u->pipe;
    c = u->peer.connection;
    cc = r->connection;
    b = &u->buffer;

    if (u->proto->parsed_head) {
        weir_http_upstream_parsed_head(u);
        return;
    }

    for ( ;; ) {

        if (b->last == b->end) {
            cc->log->action = "reading response header from upstream";
            weir_log_error(WEIR_LOG_ERR, cc->log, 0,
                           "upstream sent too big header");
            weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_INVALID_HEADER);
            return;
        }

        n = c->recv(c, b->last, (size_t) (b->end - b->last));
        err = weir_socket_errno;

        cc->log->action = "reading response header from upstream";

        if (n == WEIR_AGAIN) {
            if (!ctx->sending && !c->read->timer_set) {
                weir_event_add_timer(c->read, u->conf->read_timeout);
            }

            if (weir_handle_read_event(c->read, 0) != WEIR_OK) {
                weir_http_upstream_finalize(u,
                                            WEIR_HTTP_INTERNAL_SERVER_ERROR);
            }

            return;
        }

        if (n == 0 || n == WEIR_ERROR) {
            if (weir_http_upstream_cached_retry(u)) {
                return;
            }

            if (n == 0) {
                weir_log_error(WEIR_LOG_ERR, cc->log, 0,
                               "upstream prematurely closed connection");

            } else {
                weir_log_error(WEIR_LOG_ERR, cc->log, err, "recv() failed");
            }

            weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_ERROR);
            return;
        }

        u->response_started = 1;
        u->cur->bytes_received += n;
        b->last += n;

        for ( ;; ) {
            rc = u->proto->process_header(u);

            if (rc != WEIR_HTTP_UPSTREAM_INTERIM) {
                break;
            }

            if (weir_http_upstream_interim(u) != WEIR_OK) {
                return;
            }
        }

        if (rc == WEIR_AGAIN) {
            continue;
        }

        weir_http_upstream_head_parsed(u, rc);
        return;
    }
}


/* the head parser's verdict on a complete head, for both kinds of
 * protocol */

static void
weir_http_upstream_head_parsed(weir_http_upstream_t *u, weir_int_t rc)
{
    if (rc == WEIR_HTTP_UPSTREAM_INVALID_HEADER) {
        /* logged by the handler */
        weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_INVALID_HEADER);
        return;
    }

    if (rc != WEIR_OK) {
        weir_http_upstream_finalize(u, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    weir_http_upstream_head_done(u);
}


/*
 * The head of a protocol whose session parses it (HTTP/2): no bytes
 * pass through u->buffer; the stream's read event comes back here when
 * a head or the end of the stream arrives.
 */

static void
weir_http_upstream_parsed_head(weir_http_upstream_t *u)
{
    weir_int_t                 rc;
    weir_connection_t         *c, *cc;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;

    r = u->request;
    ctx = u->pipe;
    c = u->peer.connection;
    cc = r->connection;

    cc->log->action = "reading response header from upstream";

    for ( ;; ) {
        rc = u->proto->process_header(u);

        if (rc == WEIR_AGAIN) {
            if (!ctx->sending && !c->read->timer_set) {
                weir_event_add_timer(c->read, u->conf->read_timeout);
            }

            return;
        }

        if (rc == WEIR_HTTP_UPSTREAM_CLOSED) {
            /* logged by the handler */
            if (weir_http_upstream_cached_retry(u)) {
                return;
            }

            weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_ERROR);
            return;
        }

        u->response_started = 1;

        if (rc != WEIR_HTTP_UPSTREAM_INTERIM) {
            break;
        }

        if (weir_http_upstream_interim(u) != WEIR_OK) {
            return;
        }
    }

    weir_http_upstream_head_parsed(u, rc);
}


/* an interim head in u->headers_in goes to the client (HTTP/1.1 and
 * HTTP/2 clients; dropped for HTTP/1.0); WEIR_ERROR: finalized */

static weir_int_t
weir_http_upstream_interim(weir_http_upstream_t *u)
{
    weir_int_t            rc;
    weir_http_request_t  *r;

    r = u->request;
    rc = WEIR_DECLINED;

    if (r->proto && r->proto->send_interim && !r->header_sent) {
        rc = r->proto->send_interim(r, u->headers_in.status_n,
                                    &u->headers_in.headers);
    }

    if (rc == WEIR_ERROR) {
        weir_http_upstream_finalize(u, WEIR_ERROR);
        return WEIR_ERROR;
    }

    u->proto->reinit_head(u);

    return WEIR_OK;
}


static weir_uint_t
weir_http_upstream_status_ft(weir_uint_t status)
{
    switch (status) {
    case 500:
        return WEIR_HTTP_UPSTREAM_FT_HTTP_500;
    case 502:
        return WEIR_HTTP_UPSTREAM_FT_HTTP_502;
    case 503:
        return WEIR_HTTP_UPSTREAM_FT_HTTP_503;
    case 504:
        return WEIR_HTTP_UPSTREAM_FT_HTTP_504;
    case 403:
        return WEIR_HTTP_UPSTREAM_FT_HTTP_403;
    case 404:
        return WEIR_HTTP_UPSTREAM_FT_HTTP_404;
    case 429:
        return WEIR_HTTP_UPSTREAM_FT_HTTP_429;
    }

    return 0;
}


static weir_uint_t
weir_http_upstream_has_error_page(weir_http_request_t *r, weir_uint_t status)
{
    weir_uint_t                 i;
    weir_http_err_page_t       *ep;
    weir_http_core_loc_conf_t  *clcf;

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    if (clcf->error_pages == NULL || r->error_page) {
        return 0;
    }

    ep = clcf->error_pages->elts;

    for (i = 0; i < clcf->error_pages->nelts; i++) {
        if ((weir_uint_t) ep[i].status == status) {
            return 1;
        }
    }

    return 0;
}


static void
weir_http_upstream_head_done(weir_http_upstream_t *u)
{
    weir_int_t                 rc;
    weir_uint_t                ft, status, i;
    weir_buf_t                *b;
    weir_list_part_t          *part;
    weir_connection_t         *c, *cc;
    weir_http_header_t        *h, *t, *ho;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;

    r = u->request;
    ctx = u->pipe;
    c = u->peer.connection;
    cc = r->connection;

    ctx->head_done = 1;
    status = u->headers_in.status_n;
    u->cur->status = status;
    u->cur->header_time = weir_current_msec - ctx->attempt_start;

    /*
     * The read timer stays for the body: the relay re-arms it (lazily)
     * or removes it while the client is the one to wait for, and a
     * connection that goes back to the pool keeps the node for its idle
     * timer. The tunnel's idle time counts from the 101.
     */

    if (status == WEIR_HTTP_SWITCHING_PROTOCOLS) {
        if (c->read->timer_set) {
            weir_event_del_timer(c->read);
        }

        if (!u->req.upgrade) {
            weir_log_error(WEIR_LOG_ERR, cc->log, 0,
                           "upstream sent unexpected 101 status");
            weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_INVALID_HEADER);
            return;
        }

        weir_http_upstream_start_tunnel(u);
        return;
    }

    ft = weir_http_upstream_status_ft(status);

    if (ft && (u->conf->next_upstream & ft)
        && weir_http_upstream_may_retry(u, ft))
    {
        weir_http_upstream_next(u, ft);
        return;
    }

    if (u->conf->intercept_errors && status >= WEIR_HTTP_SPECIAL_RESPONSE
        && weir_http_upstream_has_error_page(r, status))
    {
        /* as nginx: the page replaces the origin's answer, but a 401
         * without the origin's challenges cannot be answered */
        if (status == WEIR_HTTP_UNAUTHORIZED) {
            t = NULL;
            part = &u->headers_in.headers.part;
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

                if (h[i].hash == 0
                    || h[i].token != WEIR_HTTP_HDR_WWW_AUTHENTICATE)
                {
                    continue;
                }

                ho = weir_list_push(&r->headers_out.headers);
                if (ho == NULL) {
                    weir_http_upstream_finalize(u,
                                            WEIR_HTTP_INTERNAL_SERVER_ERROR);
                    return;
                }

                *ho = h[i];
                ho->next = NULL;

                if (t == NULL) {
                    r->headers_out.www_authenticate = ho;

                } else {
                    t->next = ho;
                }

                t = ho;
            }
        }

        u->peer.keepalive = 0;
        weir_http_upstream_finalize(u, status);
        return;
    }

    /* a response before the whole request was sent: full duplex, the
     * body goes on being sent while the response is relayed (an origin
     * may stream it back as it reads it); sending stops only when the
     * response is complete first (weir_http_upstream_process) */

    if (u->process_header) {
        rc = u->process_header(r);

        if (rc != WEIR_OK) {
            weir_http_upstream_finalize(u, rc >= WEIR_HTTP_SPECIAL_RESPONSE
                                           ? rc
                                           : WEIR_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }
    }

    cc->log->action = "sending to client";

    rc = weir_http_send_header(r);

    /* not sent when a header filter refused it before it went out */
    u->header_sent = r->header_sent;

    if (rc == WEIR_ERROR || rc > WEIR_OK || r->post_action) {
        weir_http_upstream_finalize(u, rc);
        return;
    }

    if (u->proto->input_filter_init(u) != WEIR_OK) {
        weir_http_upstream_finalize(u, WEIR_ERROR);
        return;
    }

    /* the response body: the bytes after the head first */

    ctx->relay = 1;
    ctx->maxraws = u->buffering ? (weir_uint_t) u->conf->bufs.num : 1;
    ctx->raw_size = u->buffering ? u->conf->bufs.size : u->conf->buffer_size;

    ctx->raws = weir_pcalloc(r->pool, (ctx->maxraws + 1)
                                      * sizeof(weir_http_upstream_raw_t));
    if (ctx->raws == NULL) {
        weir_http_upstream_finalize(u, WEIR_ERROR);
        return;
    }

    b = &u->buffer;

    ctx->raws[0].buf = b;
    ctx->raws[0].head = 1;
    ctx->nraws = 1;
    /* a parsed head leaves u->buffer empty (none allocated) */
    ctx->read_full = (b->start && b->last == b->end);

    cc->log->action = "reading upstream";

    if (b->pos < b->last) {
        if (u->proto->input_filter(u, b) != WEIR_OK) {
            weir_http_upstream_finalize(u, WEIR_ERROR);
            return;
        }
    }

    if (!u->body_done && u->length == 0) {
        if (weir_http_upstream_emit_last(u) != WEIR_OK) {
            weir_http_upstream_finalize(u, WEIR_ERROR);
            return;
        }
    }

    weir_http_upstream_process(u);
}


/* ---- relaying the body ------------------------------------------------ */

weir_int_t
weir_http_upstream_emit(weir_http_upstream_t *u, weir_buf_t *b,
    unsigned char *start, unsigned char *end)
{
    weir_buf_t                *v;
    weir_chain_t              *cl;
    weir_http_upstream_raw_t  *raw;
    weir_http_upstream_ctx_t  *ctx;

    ctx = u->pipe;

    if (start == end) {
        return WEIR_OK;
    }

    if (u->cur) {
        if (u->cur->response_length < 0) {
            u->cur->response_length = 0;
        }

        u->cur->response_length += end - start;
    }

    if (ctx->spilling && b == ctx->spill) {
        return weir_http_upstream_spill(u, start, end);
    }

    cl = weir_chain_get_free_buf(u->request->pool, &u->free_bufs);
    if (cl == NULL) {
        return WEIR_ERROR;
    }

    v = cl->buf;
    weir_memzero(v, sizeof(weir_buf_t));

    v->pos = start;
    v->last = end;
    v->start = start;
    v->end = end;
    v->temporary = 1;
    v->shadow = b;
    v->tag = (weir_buf_tag_t) &weir_http_upstream_module;

    if (!u->buffering) {
        v->flush = 1;
    }

    raw = weir_http_upstream_raw(u, b);
    if (raw) {
        raw->views++;
    }

    cl->next = NULL;
    *u->last_out = cl;
    u->last_out = &cl->next;

    return WEIR_OK;
}


weir_int_t
weir_http_upstream_emit_last(weir_http_upstream_t *u)
{
    weir_uint_t           i;
    weir_buf_t           *v;
    weir_chain_t         *cl;
    weir_list_part_t     *part;
    weir_http_header_t   *h, *t;
    weir_http_request_t  *r;

    r = u->request;

    if (u->body_done) {
        return WEIR_OK;
    }

    u->body_done = 1;

    if (u->cur && u->cur->response_length < 0) {
        u->cur->response_length = 0;
    }

    if (u->conf->pass_trailers && r->proto->trailers_allowed
        && r->proto->trailers_allowed(r))
    {
        part = &u->headers_in.trailers.part;
        h = part->elts;

        for (i = 0; part->elts; i++) {
            if (i >= part->nelts) {
                if (part->next == NULL) {
                    break;
                }

                part = part->next;
                h = part->elts;
                i = 0;
            }

            if (h[i].hash == 0 || weir_http_upstream_hop_by_hop(&h[i], NULL))
            {
                continue;
            }

            t = weir_list_push(&r->headers_out.trailers);
            if (t == NULL) {
                return WEIR_ERROR;
            }

            *t = h[i];
            t->next = NULL;
            r->expect_trailers = 1;
        }
    }

    cl = weir_chain_get_free_buf(r->pool, &u->free_bufs);
    if (cl == NULL) {
        return WEIR_ERROR;
    }

    v = cl->buf;
    weir_memzero(v, sizeof(weir_buf_t));
    v->last_buf = 1;
    v->flush = 1;
    v->tag = (weir_buf_tag_t) &weir_http_upstream_module;

    cl->next = NULL;
    *u->last_out = cl;
    u->last_out = &cl->next;

    return WEIR_OK;
}


static weir_http_upstream_raw_t *
weir_http_upstream_raw(weir_http_upstream_t *u, weir_buf_t *b)
{
    weir_uint_t                i;
    weir_http_upstream_ctx_t  *ctx;

    ctx = u->pipe;

    for (i = 0; i < ctx->nraws; i++) {
        if (ctx->raws[i].buf == b) {
            return &ctx->raws[i];
        }
    }

    return NULL;
}


/* the client is slow and every memory buffer waits for it: body data goes
 * to the temporary file, passed on as file buffers */

static weir_int_t
weir_http_upstream_spill(weir_http_upstream_t *u, unsigned char *start,
    unsigned char *end)
{
    ssize_t                    n;
    weir_buf_t                *v, *prev;
    weir_chain_t              *cl, *ll;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;

    r = u->request;
    ctx = u->pipe;

    if (ctx->file == NULL) {
        ctx->file = weir_http_open_temp_file(r);
        if (ctx->file == NULL) {
            return WEIR_ERROR;
        }

        weir_log_error(WEIR_LOG_WARN, r->connection->log, 0,
                       "an upstream response is buffered to a temporary "
                       "file");
    }

    while (start < end) {
        n = pwrite(ctx->file->fd, start, (size_t) (end - start),
                   ctx->file_offset);

        if (n == -1) {
            if (weir_errno == WEIR_EINTR) {
                continue;
            }

            weir_log_error(WEIR_LOG_CRIT, r->connection->log, weir_errno,
                           "pwrite() \"%.*s\" failed",
                           WEIR_STR_ARG(ctx->file->name));
            return WEIR_ERROR;
        }

        /* extend the last file buffer not yet passed on, or add one */
        prev = NULL;

        for (ll = u->out_bufs; ll; ll = ll->next) {
            prev = ll->buf;
        }

        if (prev && prev->in_file && prev->file == ctx->file
            && prev->file_last == ctx->file_offset)
        {
            prev->file_last += n;

        } else {
            cl = weir_chain_get_free_buf(r->pool, &u->free_bufs);
            if (cl == NULL) {
                return WEIR_ERROR;
            }

            v = cl->buf;
            weir_memzero(v, sizeof(weir_buf_t));
            v->in_file = 1;
            v->temp_file = 1;
            v->file = ctx->file;
            v->file_pos = ctx->file_offset;
            v->file_last = ctx->file_offset + n;
            v->tag = (weir_buf_tag_t) &weir_http_upstream_module;

            ctx->file_views++;

            cl->next = NULL;
            *u->last_out = cl;
            u->last_out = &cl->next;
        }

        ctx->file_offset += n;
        start += n;
    }

    return WEIR_OK;
}


/* a buffer to read origin bytes into, or NULL: nothing may be read now
 * (or, spill 0, nothing but into the temporary file) */

static weir_buf_t *
weir_http_upstream_read_buf(weir_http_upstream_t *u, weir_uint_t spill)
{
    size_t                     size;
    weir_uint_t                i;
    weir_buf_t                *b;
    weir_http_upstream_raw_t  *raw;
    weir_http_upstream_ctx_t  *ctx;

    ctx = u->pipe;
    ctx->spilling = 0;

    if (ctx->cur && ctx->cur->buf->last < ctx->cur->buf->end) {
        return ctx->cur->buf;
    }

    for (i = 0; i < ctx->nraws; i++) {
        raw = &ctx->raws[i];

        if (!raw->head && raw->views == 0) {
            raw->buf->pos = raw->buf->start;
            raw->buf->last = raw->buf->start;
            ctx->cur = raw;
            return raw->buf;
        }
    }

    if (ctx->nraws <= ctx->maxraws) {
        size = ctx->raw_size;

        if (u->length >= 0 && u->length < (off_t) size) {
            /* the rest of a body of known length fits in less: a small
             * response holds a small buffer (one byte more, for the
             * read that sees the end) */
            size = weir_min(weir_max((size_t) u->length + 1,
                                     (size_t) WEIR_HTTP_UPSTREAM_MIN_RAW),
                            ctx->raw_size);
        }

        b = weir_create_temp_buf(u->request->pool, size);
        if (b == NULL) {
            return NULL;
        }

        raw = &ctx->raws[ctx->nraws++];
        raw->buf = b;
        raw->views = 0;
        ctx->cur = raw;

        return b;
    }

    if (spill && u->buffering && u->conf->max_temp_file_size > 0
        && ctx->file_offset < u->conf->max_temp_file_size)
    {
        if (ctx->spill == NULL) {
            ctx->spill = weir_create_temp_buf(u->request->pool,
                                              ctx->raw_size);
            if (ctx->spill == NULL) {
                return NULL;
            }
        }

        ctx->spill->pos = ctx->spill->start;
        ctx->spill->last = ctx->spill->start;

        if (u->conf->max_temp_file_size - ctx->file_offset
            < (off_t) (ctx->spill->end - ctx->spill->start))
        {
            ctx->spill->end = ctx->spill->start
                              + (size_t) (u->conf->max_temp_file_size
                                          - ctx->file_offset);
        } else {
            ctx->spill->end = ctx->spill->start + ctx->raw_size;
        }

        ctx->spilling = 1;

        return ctx->spill;
    }

    return NULL;
}


/*
 * The memory buffers a read into ctx->cur may go on into (one readv() on
 * a plain connection): the free ones, and new ones while the rest of a
 * body of known length fills them (never more than proxy_buffers).
 * Returns how many, in more[].
 */

static weir_uint_t
weir_http_upstream_more_raws(weir_http_upstream_t *u,
    weir_http_upstream_raw_t **more)
{
    off_t                      want;
    weir_buf_t                *b;
    weir_uint_t                i, n;
    weir_http_upstream_raw_t  *raw;
    weir_http_upstream_ctx_t  *ctx;

    ctx = u->pipe;

    if (!u->buffering || ctx->cur == NULL) {
        return 0;
    }

    n = 0;

    for (i = 0; i < ctx->nraws && n < WEIR_HTTP_UPSTREAM_READV; i++) {
        raw = &ctx->raws[i];

        if (raw == ctx->cur || raw->head || raw->views) {
            continue;
        }

        raw->buf->pos = raw->buf->start;
        raw->buf->last = raw->buf->start;
        more[n++] = raw;
    }

    /*
     * New buffers only while the origin sends faster than it is read
     * (the last read filled all it was given), for the bytes of the body
     * that the buffers taken so far cannot hold: a slow origin never
     * makes a request hold all of proxy_buffers at once.
     */

    if (!ctx->read_full) {
        return n;
    }

    want = u->length - (off_t) (ctx->cur->buf->end - ctx->cur->buf->last)
           - (off_t) n * (off_t) ctx->raw_size;

    while (want > 0 && ctx->nraws <= ctx->maxraws
           && n < WEIR_HTTP_UPSTREAM_READV)
    {
        b = weir_create_temp_buf(u->request->pool, ctx->raw_size);
        if (b == NULL) {
            break;
        }

        raw = &ctx->raws[ctx->nraws++];
        raw->buf = b;
        raw->views = 0;
        more[n++] = raw;

        want -= (off_t) ctx->raw_size;
    }

    return n;
}


/* passes what was emitted to the client and frees what was sent */

static weir_int_t
weir_http_upstream_pass(weir_http_upstream_t *u)
{
    weir_int_t            rc;
    weir_chain_t        **ll;
    weir_http_request_t  *r;

    r = u->request;

    if (u->out_bufs == NULL && !r->out && !r->connection->buffered) {
        /* a protocol that sends on its own (HTTP/2: nghttp2's data
         * provider) may have consumed the busy buffers since the last
         * pass, and cleared c->buffered: they are free now */
        weir_http_upstream_update_busy(u);
        return WEIR_OK;
    }

    rc = weir_http_output_filter(r, u->out_bufs);

    for (ll = &u->busy_bufs; *ll; ll = &(*ll)->next) { /* void */ }

    *ll = u->out_bufs;
    u->out_bufs = NULL;
    u->last_out = &u->out_bufs;

    weir_http_upstream_update_busy(u);

    return rc;
}


static void
weir_http_upstream_update_busy(weir_http_upstream_t *u)
{
    weir_buf_t                *b;
    weir_chain_t              *cl, *out, **ll;
    weir_http_upstream_raw_t  *raw;
    weir_http_upstream_ctx_t  *ctx;

    ctx = u->pipe;
    ll = &u->busy_bufs;

    while (*ll) {
        cl = *ll;
        b = cl->buf;

        if (!weir_buf_special(b) && weir_buf_size(b) != 0) {
            ll = &cl->next;
            continue;
        }

        /*
         * A buffer the writer has consumed may still be linked in its
         * queue: the HTTP/1 writer without sendfile reads a file range
         * into a buffer of its own put before it, and leaves the range's
         * link behind that until the copy is sent. Reused now, the
         * buffer would go out a second time with new data.
         */

        for (out = u->request->out; out; out = out->next) {
            if (out->buf == b) {
                break;
            }
        }

        if (out) {
            ll = &cl->next;
            continue;
        }

        if (b->shadow) {
            raw = weir_http_upstream_raw(u, b->shadow);
            if (raw && raw->views) {
                raw->views--;
            }
        }

        if (b->in_file && b->file == ctx->file && ctx->file_views) {
            ctx->file_views--;
        }

        *ll = cl->next;
        cl->next = u->free_bufs;
        u->free_bufs = cl;
    }
}


/* the client cannot take anything now: what it has waits, and its write
 * event (armed or posted) comes back to weir_http_upstream_process */

static weir_uint_t
weir_http_upstream_client_blocked(weir_http_request_t *r)
{
    weir_connection_t  *cc;

    cc = r->connection;

    return (r->out || cc->buffered)
           && (!cc->write->ready || cc->write->posted);
}


/*
 * Moves the response body: reads the origin while a buffer is free,
 * passes what is decoded, stops reading while the client is slow (its
 * write event resumes), finishes when the body ended and was passed on.
 *
 * Buffered, what is read is passed on only when the origin has nothing
 * more for now or every buffer is full (as nginx's event pipe does): the
 * client gets it in one writev() instead of one per read. Unbuffered,
 * every read is passed on at once.
 */

void
weir_http_upstream_process(weir_http_upstream_t *u)
{
    off_t                      sent;
    size_t                     total;
    ssize_t                    n;
    weir_int_t                 rc;
    weir_err_t                 err;
    weir_buf_t                *b;
    size_t                     size;
    weir_uint_t                pass, passed, i, nb;
    struct iovec               iov[WEIR_HTTP_UPSTREAM_READV + 1];
    weir_http_upstream_raw_t  *more[WEIR_HTTP_UPSTREAM_READV];
    weir_connection_t         *c, *cc;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;
    weir_http_core_loc_conf_t *clcf;

    r = u->request;
    ctx = u->pipe;
    c = u->peer.connection;
    cc = r->connection;
    total = 0;
    sent = cc->sent;
    pass = 0;
    passed = 0;

    for ( ;; ) {
        cc->log->action = "sending to client";

        /*
         * While the client cannot take anything (its write event is armed
         * or posted and comes back here), what is read stays in
         * u->out_bufs: passing every piece would only queue it, one link
         * per read, behind what waits (each pass walks that queue);
         * kept back, consecutive pieces of the temporary file make one
         * file buffer.
         */

        if (u->body_done
            || (pass && !weir_http_upstream_client_blocked(r)))
        {
            rc = weir_http_upstream_pass(u);

            if (rc == WEIR_ERROR || cc->error) {
                cc->error = 1;
                weir_http_upstream_finalize(u, WEIR_ERROR);
                return;
            }

            passed = 1;
        }

        pass = 0;

        if (u->body_done) {
            if (ctx->sending) {
                /* the response is complete, the request is not: what is
                 * left of it is not sent */
                weir_http_upstream_stop_body(u);
            }

            if (c) {
                u->keepalive = u->proto->keepalive(u) ? 1 : 0;
                u->peer.keepalive = (u->keepalive && !u->early_response
                                     && u->request_sent && !ctx->sending);
            }

            weir_http_upstream_finalize(u, WEIR_OK);
            return;
        }

        cc->log->action = "reading upstream";

        if (ctx->origin_eof || c == NULL) {
            break;
        }

        b = weir_http_upstream_read_buf(u, 0);

        if (b == NULL) {
            if (!passed && !weir_http_upstream_client_blocked(r)) {
                /* every memory buffer is full: the client may take them
                 * (and free them) before anything goes to a file */
                pass = 1;
                continue;
            }

            b = weir_http_upstream_read_buf(u, 1);
        }

        if (b == NULL) {
            /* every buffer waits for the client */
            ctx->stopped = 1;
            break;
        }

        ctx->stopped = 0;

        if (!c->read->ready) {
            if (c->ssl == NULL || !c->ssl->ops->pending(c)) {
                break;
            }

            /* decrypted bytes wait in the TLS library: no event comes */
            c->read->ready = 1;
        }

        if (total >= WEIR_HTTP_UPSTREAM_READ_BUDGET) {
            /* the other connections first: on after the next I/O pass */
            weir_post_event(c->read, &weir_posted_next_events);
            break;
        }

        nb = 0;

        if (c->ssl == NULL && !ctx->spilling
            && !weir_http_upstream_is_stream(c))
        {
            nb = weir_http_upstream_more_raws(u, more);
        }

        if (nb == 0) {
            n = c->recv(c, b->last, (size_t) (b->end - b->last));

        } else {
            iov[0].iov_base = b->last;
            iov[0].iov_len = (size_t) (b->end - b->last);

            for (i = 0; i < nb; i++) {
                iov[i + 1].iov_base = more[i]->buf->last;
                iov[i + 1].iov_len = (size_t) (more[i]->buf->end
                                               - more[i]->buf->last);
            }

            n = weir_unix_readv(c, iov, (int) nb + 1);
        }

        err = weir_socket_errno;

        if (n == WEIR_AGAIN) {
            break;
        }

        if (n == 0 || n == WEIR_ERROR) {
            ctx->origin_eof = 1;

            if (n == WEIR_ERROR) {
                weir_log_error(WEIR_LOG_ERR, cc->log, err, "recv() failed");
            }

            if (n == WEIR_ERROR
                || u->proto->input_filter(u, NULL) != WEIR_OK
                || !u->body_done)
            {
                weir_log_error(WEIR_LOG_ERR, cc->log, 0,
                               "upstream prematurely closed connection");

                /* what was read goes out, then the connection closes */
                u->peer.keepalive = 0;
                (void) weir_http_upstream_pass(u);
                r->keepalive = 0;
                weir_http_upstream_finalize(u, WEIR_ERROR);
                return;
            }

            continue;
        }

        u->cur->bytes_received += n;
        total += n;

        size = (size_t) (b->end - b->last);

        for (i = 0; i < nb; i++) {
            size += iov[i + 1].iov_len;
        }

        ctx->read_full = ((size_t) n == size);

        /* each buffer filled goes through the input filter in turn */

        for (i = 0; ; i++) {
            size = weir_min((size_t) n, (size_t) (b->end - b->last));

            b->pos = b->last;
            b->last += size;
            n -= size;

            if (u->proto->input_filter(u, b) != WEIR_OK) {
                u->peer.keepalive = 0;
                (void) weir_http_upstream_pass(u);
                r->keepalive = 0;
                weir_http_upstream_finalize(u, WEIR_ERROR);
                return;
            }

            if (n == 0 || i == nb) {
                break;
            }

            ctx->cur = more[i];
            b = more[i]->buf;
        }

        pass = !u->buffering;
        passed = 0;
    }

    /* what was read (and what waited) goes to the client before waiting */

    if (!passed && !weir_http_upstream_client_blocked(r)) {
        cc->log->action = "sending to client";

        rc = weir_http_upstream_pass(u);

        if (rc == WEIR_ERROR || cc->error) {
            cc->error = 1;
            weir_http_upstream_finalize(u, WEIR_ERROR);
            return;
        }

        cc->log->action = "reading upstream";
    }

    /* wait: for the origin (read timer), or for the client */

    if (c && !ctx->origin_eof) {
        if (ctx->stopped) {
            if (c->read->timer_set) {
                weir_event_del_timer(c->read);
            }

            if ((weir_event_flags & WEIR_USE_LEVEL_EVENT) && c->read->active
                && !weir_http_upstream_is_stream(c))
            {
                (void) weir_del_event(c->read, WEIR_READ_EVENT, 0);
            }

        } else {
            weir_event_add_timer(c->read, u->conf->read_timeout);

            if (weir_handle_read_event(c->read, 0) != WEIR_OK) {
                weir_http_upstream_finalize(u, WEIR_ERROR);
                return;
            }
        }
    }

    if (r->out || cc->buffered) {
        clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

        /* send_timeout bounds the time between two writes: progress
         * re-arms it */
        if (!cc->write->timer_set || cc->sent != sent) {
            weir_event_add_timer(cc->write, clcf->send_timeout);
        }

    } else if (cc->write->timer_set) {
        weir_event_del_timer(cc->write);
    }
}
