#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_http.h"
#include "weir.h"

/*
 * HTTP/1.0 and HTTP/1.1 downstream connections: reading the request head,
 * request bodies and interim responses, and what happens after a
 * request: keep-alive (an idle connection keeps no buffer), the next
 * pipelined request, lingering close, or close. The response (framing
 * and writing) is in weir_http_v1_write.c.
 */


/* per connection, in c->pool (hc->proto_ctx) */
typedef struct {
    /* keepalive_drain_timeout of the last request's location */
    weir_msec_t                  drain_timeout;
    /* idle in a shutting-down worker: c->close now closes it */
    unsigned                     draining:1;
} weir_http_v1_conn_t;


static void weir_http_v1_empty_handler(weir_event_t *ev);
static void weir_http_v1_read_head_handler(weir_event_t *rev);
static void weir_http_v1_read_head(weir_http_request_t *r);
static ssize_t weir_http_v1_read_request_header(weir_http_request_t *r);
static weir_int_t weir_http_v1_alloc_large_header_buffer(
    weir_http_request_t *r);
static weir_buf_t *weir_http_v1_header_buf(weir_connection_t *c,
    weir_http_connection_t *hc, size_t size);
static void weir_http_v1_free_header_bufs(weir_connection_t *c,
    weir_http_connection_t *hc, weir_buf_t *keep);
static weir_int_t weir_http_v1_process_request_line(weir_http_request_t *r);
static weir_int_t weir_http_v1_process_header_line(weir_http_request_t *r);
static weir_int_t weir_http_v1_process_request_header(
    weir_http_request_t *r);
static weir_int_t weir_http_v1_check_buffered_body(weir_http_request_t *r);
static void weir_http_v1_process_request(weir_http_request_t *r);
static void weir_http_v1_head_error(weir_http_request_t *r,
    weir_int_t status, const char *reason);

static weir_int_t weir_http_v1_read_body(weir_http_request_t *r);
static weir_int_t weir_http_v1_discard_body(weir_http_request_t *r);
static weir_uint_t weir_http_v1_body_received(weir_http_request_t *r);
static weir_int_t weir_http_v1_send_continue(weir_http_request_t *r);
static weir_int_t weir_http_v1_send_interim(weir_http_request_t *r,
    weir_uint_t status, weir_list_t *headers);
static weir_int_t weir_http_v1_test_closed(weir_http_request_t *r,
    weir_err_t *err);
static void weir_http_v1_location_config(weir_http_request_t *r);
static weir_int_t weir_http_v1_tunnel_start(weir_http_request_t *r,
    weir_str_t *preread);
static ssize_t weir_http_v1_tunnel_recv(weir_http_request_t *r,
    unsigned char *buf, size_t size);
static ssize_t weir_http_v1_tunnel_send(weir_http_request_t *r,
    unsigned char *buf, size_t size);
static weir_int_t weir_http_v1_tunnel_half_close(weir_http_request_t *r);
static weir_uint_t weir_http_v1_tunnel_pending(weir_http_request_t *r);


static const weir_http_tunnel_io_t  weir_http_v1_tunnel = {
    .start = weir_http_v1_tunnel_start,
    .recv = weir_http_v1_tunnel_recv,
    .send = weir_http_v1_tunnel_send,
    .half_close = weir_http_v1_tunnel_half_close,
    .pending = weir_http_v1_tunnel_pending
};
static void weir_http_v1_request_done(weir_http_request_t *r,
    weir_int_t rc);

static weir_int_t weir_http_v1_body_consumed(weir_http_request_t *r);
static void weir_http_lingering_close_handler(weir_event_t *rev);
static void weir_http_lingering_half_close_handler(weir_event_t *wev);
static weir_msec_t weir_http_v1_drain_left(weir_msec_t drain);
static void weir_http_v1_drain(weir_connection_t *c, weir_msec_t left);


weir_http_proto_t  weir_http_v1_proto = {
    .name = "HTTP/1.1",
    .send_header = weir_http_v1_send_header,
    .send_body = weir_http_v1_send_body,
    .read_body = weir_http_v1_read_body,
    .read_unbuffered = weir_http_read_unbuffered_request_body_stream,
    .discard_body = weir_http_v1_discard_body,
    .body_received = weir_http_v1_body_received,
    .send_continue = weir_http_v1_send_continue,
    .send_interim = weir_http_v1_send_interim,
    .test_closed = weir_http_v1_test_closed,
    .location_config = weir_http_v1_location_config,
    .trailers_allowed = weir_http_v1_trailers_allowed,
    .tunnel = &weir_http_v1_tunnel,
    .request_done = weir_http_v1_request_done
};


static weir_int_t weir_http_v1_h2c_preface(weir_connection_t *c,
    weir_http_connection_t *hc, weir_buf_t *b);


static weir_http_core_srv_conf_t *
weir_http_v1_default_srv_conf(weir_connection_t *c)
{
    weir_http_connection_t  *hc;

    hc = c->data;

    return hc->conf_ctx->srv_conf[weir_http_core_module.ctx_index];
}


void
weir_http_close_connection(weir_connection_t *c)
{
    weir_pool_t  *pool;

    c->destroyed = 1;

    pool = c->pool;

    weir_close_connection(c);

    weir_destroy_pool(pool);
}


static void
weir_http_v1_empty_handler(weir_event_t *ev)
{
    (void) ev;
}


/*
 * A new connection: wait for its first bytes with no buffer allocated
 * (the buffer is allocated only when the socket is readable).
 */

void
weir_http_v1_init_connection(weir_connection_t *c)
{
    weir_event_t                *rev;
    weir_http_v1_conn_t         *v1c;
    weir_http_connection_t      *hc;
    weir_http_core_srv_conf_t   *cscf;

    hc = c->data;

    v1c = weir_pcalloc(c->pool, sizeof(weir_http_v1_conn_t));
    if (v1c == NULL) {
        weir_http_close_connection(c);
        return;
    }

    hc->proto_ctx = v1c;

    cscf = weir_http_v1_default_srv_conf(c);

    rev = c->read;
    rev->handler = weir_http_v1_wait_request_handler;
    c->write->handler = weir_http_v1_empty_handler;

    weir_event_add_timer(rev, cscf->client_header_timeout);
    weir_reusable_connection(c, 1);

    if (weir_handle_read_event(rev, 0) != WEIR_OK) {
        weir_http_close_connection(c);
        return;
    }

    if (c->ssl) {
        /* after the handshake the request may be in the socket or
         * decrypted in the TLS library, its event consumed by the
         * handshake: one read finds out */
        rev->ready = 1;
    }

    if (rev->ready) {
        /* deferred accept: the data is already there */
        weir_post_event(rev, &weir_posted_events);
    }
}


/*
 * A connection handed over with bytes already read (the plain HTTP that
 * followed an intercepted CONNECT): they are the start of its first
 * request, parsed at once.
 */

void
weir_http_v1_init_connection_preread(weir_connection_t *c,
    unsigned char *data, size_t len)
{
    size_t                      size;
    weir_buf_t                 *b;
    weir_http_connection_t     *hc;
    weir_http_core_srv_conf_t  *cscf;

    weir_http_v1_init_connection(c);

    if (len == 0 || c->destroyed) {
        return;
    }

    hc = c->data;
    cscf = weir_http_v1_default_srv_conf(c);
    size = weir_max(cscf->client_header_buffer_size, len);

    b = weir_http_v1_header_buf(c, hc, size);
    if (b == NULL) {
        weir_http_close_connection(c);
        return;
    }

    b->last = weir_cpymem(b->start, data, len);
    c->buffer = b;
    hc->pipeline = 1;

    if (!c->read->posted) {
        weir_post_event(c->read, &weir_posted_events);
    }
}


static weir_buf_t *
weir_http_v1_header_buf(weir_connection_t *c, weir_http_connection_t *hc,
    size_t size)
{
    weir_buf_t              *b;
    weir_chain_t            *cl;

    if (hc->free) {
        cl = hc->free;
        hc->free = cl->next;
        b = cl->buf;

    } else {
        cl = weir_palloc(c->pool, sizeof(weir_chain_t));
        if (cl == NULL) {
            return NULL;
        }

        b = weir_palloc(c->pool, sizeof(weir_buf_t));
        if (b == NULL) {
            return NULL;
        }

        cl->buf = b;
    }

    weir_memzero(b, sizeof(weir_buf_t));

    /* a large allocation always, so that weir_pfree() gives it back when
     * the connection goes idle */
    b->start = weir_pmemalign(c->pool, size, WEIR_ALIGNMENT);
    if (b->start == NULL) {
        cl->next = hc->free;
        hc->free = cl;
        return NULL;
    }

    b->pos = b->start;
    b->last = b->start;
    b->end = b->start + size;
    b->temporary = 1;

    cl->next = hc->busy;
    hc->busy = cl;

    return b;
}


static void
weir_http_v1_free_header_bufs(weir_connection_t *c,
    weir_http_connection_t *hc, weir_buf_t *keep)
{
    weir_chain_t  *cl, *next, *kept;

    kept = NULL;

    for (cl = hc->busy; cl; cl = next) {
        next = cl->next;

        if (cl->buf == keep) {
            cl->next = NULL;
            kept = cl;
            continue;
        }

        if (cl->buf->start) {
            (void) weir_pfree(c->pool, cl->buf->start);
            cl->buf->start = NULL;
        }

        cl->next = hc->free;
        hc->free = cl;
    }

    hc->busy = kept;
    hc->nbusy = 0;
}


/*
 * The read handler of an idle connection (new, or kept alive between
 * requests). Bytes left over from a pipelined request are already in
 * c->buffer; otherwise a buffer is taken only for the read, and given
 * back when nothing arrived.
 */

/* are request bytes waiting, in our buffer or in the socket? */

static weir_uint_t
weir_http_v1_input_pending(weir_connection_t *c)
{
    char  ch;

    if (c->buffer && c->buffer->pos < c->buffer->last) {
        return 1;
    }

    if (c->ssl && c->ssl->ops->pending(c)) {
        /* decrypted already, inside the TLS library */
        return 1;
    }

    return recv(c->fd, &ch, 1, MSG_PEEK) > 0;
}


/*
 * h2c with prior knowledge (RFC 9113 3.3): on a plain address with
 * HTTP/2 enabled, a connection whose first bytes are the client preface
 * is handed to the HTTP/2 module with every byte read so far; anything
 * else is HTTP/1.1. WEIR_OK: handed over (c is not ours any more),
 * WEIR_AGAIN: the bytes so far begin the preface and more are needed
 * (read as much as there is), WEIR_DECLINED: HTTP/1.
 */

static weir_int_t
weir_http_v1_h2c_preface(weir_connection_t *c, weir_http_connection_t *hc,
    weir_buf_t *b)
{
    size_t                       n, len;
    ssize_t                      got;
    unsigned char               *copy;
    weir_http_core_main_conf_t  *cmcf;

    static const char  preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

    cmcf = hc->conf_ctx->main_conf[weir_http_core_module.ctx_index];

    if (cmcf->v2 == NULL || !cmcf->v2->enabled(c)) {
        return WEIR_DECLINED;
    }

    for ( ;; ) {
        len = b->last - b->pos;
        n = len < sizeof(preface) - 1 ? len : sizeof(preface) - 1;

        if (weir_memcmp(b->pos, preface, n) != 0) {
            return WEIR_DECLINED;
        }

        if (n == sizeof(preface) - 1) {
            break;
        }

        if (b->last == b->end) {
            return WEIR_DECLINED;
        }

        got = c->recv(c, b->last, b->end - b->last);

        if (got == WEIR_AGAIN) {
            return WEIR_AGAIN;
        }

        if (got == WEIR_ERROR || got == 0) {
            /* the HTTP/1 reader finds the close */
            return WEIR_DECLINED;
        }

        b->last += got;
    }

    /* the v2 module gets a copy: the head buffers go back now */

    copy = weir_alloc(len, c->log);
    if (copy == NULL) {
        return WEIR_DECLINED;
    }

    weir_memcpy(copy, b->pos, len);

    weir_http_v1_free_header_bufs(c, hc, NULL);
    c->buffer = NULL;
    c->idle = 0;

    cmcf->v2->init_connection(c, copy, len);

    weir_free(copy);

    return WEIR_OK;
}


void
weir_http_v1_wait_request_handler(weir_event_t *rev)
{
    ssize_t                      n;
    weir_buf_t                  *b;
    weir_msec_t                  left;
    weir_connection_t           *c;
    weir_http_request_t         *r;
    weir_http_v1_conn_t         *v1c;
    weir_http_v1_stream_t       *st;
    weir_http_connection_t      *hc;
    weir_http_core_srv_conf_t   *cscf;

    c = rev->data;
    hc = c->data;

    if (rev->timedout) {
        /* idle: nothing was received, so there is no one to answer */
        weir_http_close_connection(c);
        return;
    }

    if (c->close) {

        /*
         * The worker is shutting down (weir_close_idle_connections) or
         * out of connections (weir_drain_connections). A request that
         * has already arrived is still served, and so is the first one of
         * a connection accepted just before the listening sockets closed:
         * its client had no chance to send it yet, and
         * client_header_timeout or worker_shutdown_timeout bound the
         * wait. A keep-alive connection with nothing to read is drained
         * on a shutdown: its client may have sent a request that is still
         * on its way, and a client that does not retry would lose it, so
         * the connection stays for keepalive_drain_timeout and its next
         * request is answered with "Connection: close". A draining
         * connection told again is closed.
         */

        if (!weir_http_v1_input_pending(c)) {
            if (hc->requests > 0) {
                v1c = hc->proto_ctx;

                if (weir_exiting && !v1c->draining) {
                    left = weir_http_v1_drain_left(v1c->drain_timeout);

                    if (left > 0) {
                        c->close = 0;
                        weir_http_v1_drain(c, left);
                        return;
                    }
                }

                weir_http_close_connection(c);
                return;
            }

            c->close = 0;
            return;
        }

        c->close = 0;
    }

    cscf = weir_http_v1_default_srv_conf(c);

    b = c->buffer;

    if (b == NULL || b->start == NULL) {
        b = weir_http_v1_header_buf(c, hc, cscf->client_header_buffer_size);
        if (b == NULL) {
            weir_http_close_connection(c);
            return;
        }

        c->buffer = b;
    }

    if (b->pos == b->last) {

        b->pos = b->start;
        b->last = b->start;

        n = c->recv(c, b->last, b->end - b->last);

        if (n == WEIR_AGAIN) {

        again:

            if (!rev->timer_set) {
                weir_event_add_timer(rev, cscf->client_header_timeout);
            }

            if (weir_handle_read_event(rev, 0) != WEIR_OK) {
                weir_http_close_connection(c);
                return;
            }

            /* an idle connection keeps no buffer (but the first bytes
             * of an HTTP/2 preface stay) */
            if (b->pos == b->last) {
                weir_http_v1_free_header_bufs(c, hc, NULL);
                c->buffer = NULL;
            }

            if (!c->reusable) {
                weir_reusable_connection(c, 1);
            }

            return;
        }

        if (n == WEIR_ERROR || n == 0) {
            weir_http_close_connection(c);
            return;
        }

        b->last += n;
    }

    if (c->requests == 0 && c->ssl == NULL) {
        switch (weir_http_v1_h2c_preface(c, hc, b)) {
        case WEIR_OK:
            return;
        case WEIR_AGAIN:
            goto again;
        default:
            break;
        }
    }

    hc->pipeline = 0;
    c->idle = 0;
    weir_reusable_connection(c, 0);

    c->log->action = "reading client request line";

    r = weir_http_create_request(c, hc);
    if (r == NULL) {
        weir_http_close_connection(c);
        return;
    }

    st = weir_pcalloc(r->pool, sizeof(weir_http_v1_stream_t));
    if (st == NULL) {
        /* not logged (nothing was read), but out of the reading count
         * and of the connection's log context, as any freed request */
        r->logged = 1;
        weir_http_free_request(r, 0);
        weir_http_close_connection(c);
        return;
    }

    r->stream = st;
    r->proto = &weir_http_v1_proto;
    r->header_in = b;

    c->data = r;

    rev->handler = weir_http_v1_read_head_handler;

    /* the whole head must arrive within client_header_timeout from its
     * first byte: one byte every few seconds does not keep it alive.
     * weir_http_v1_read_request_header() arms it before it waits, so a
     * head that came whole in this read never touches the timer tree */
    if (rev->timer_set) {
        weir_event_del_timer(rev);
    }

    weir_http_v1_read_head(r);
}


static void
weir_http_v1_read_head_handler(weir_event_t *rev)
{
    weir_connection_t    *c;
    weir_http_request_t  *r;

    c = rev->data;
    r = c->data;

    if (rev->timedout) {
        c->timedout = 1;
        weir_log_error(WEIR_LOG_INFO, c->log, WEIR_ETIMEDOUT,
                       "client timed out");

        /* part of the head was received: the client is still there to
         * read a 408 */
        weir_http_v1_head_error(r, WEIR_HTTP_REQUEST_TIME_OUT, NULL);
        return;
    }

    if (c->close) {
        c->error = 1;
        weir_http_finalize_request(r, WEIR_HTTP_CLOSE);
        return;
    }

    weir_http_v1_read_head(r);
}


/* answers a malformed or unanswerable head with status and closes */

static void
weir_http_v1_head_error(weir_http_request_t *r, weir_int_t status,
    const char *reason)
{
    if (reason) {
        weir_log_error(WEIR_LOG_INFO, r->connection->log, 0, "%s", reason);
    }

    r->keepalive = 0;
    r->lingering_close = 1;

    weir_http_finalize_request(r, status);
}


/*
 * Parses what is in r->header_in, reading more as needed. Every exit
 * either waits for an event or has finalized r (which may be freed: r
 * is not touched after a finalize).
 */

static void
weir_http_v1_read_head(weir_http_request_t *r)
{
    ssize_t                      n;
    weir_int_t                   rc;
    weir_buf_t                  *b;
    weir_connection_t           *c;
    weir_http_v1_stream_t       *st;
    weir_http_core_srv_conf_t   *cscf;

    c = r->connection;
    st = r->stream;

    /* the whole head is parsed with the settings of the server that
     * the address (or the SNI) selected: Host is looked up after it */
    cscf = weir_http_get_module_srv_conf(r, weir_http_core_module);
    r->strict_line_endings = cscf->strict_line_endings ? 1 : 0;

    for ( ;; ) {

        b = r->header_in;

        if (!st->headers) {

            rc = weir_http_parse_request_line(r, b);

            if (rc == WEIR_OK) {
                if (weir_http_v1_process_request_line(r) != WEIR_OK) {
                    return;
                }

                continue;
            }

            if (rc != WEIR_AGAIN) {
                switch (rc) {

                case WEIR_HTTP_PARSE_INVALID_VERSION:
                    weir_http_v1_head_error(r,
                        WEIR_HTTP_VERSION_NOT_SUPPORTED,
                        "client sent unsupported HTTP version");
                    return;

                case WEIR_HTTP_PARSE_TOO_LONG_URI:
                    weir_http_v1_head_error(r,
                        WEIR_HTTP_REQUEST_URI_TOO_LARGE,
                        "client sent too long URI");
                    return;

                case WEIR_HTTP_PARSE_INVALID_METHOD:
                    weir_http_v1_head_error(r, WEIR_HTTP_BAD_REQUEST,
                                            "client sent invalid method");
                    return;

                default:
                    weir_http_v1_head_error(r, WEIR_HTTP_BAD_REQUEST,
                                            "client sent invalid request");
                    return;
                }
            }

        } else {

            cscf = weir_http_get_module_srv_conf(r, weir_http_core_module);

            rc = weir_http_parse_header_line(r, b,
                                             cscf->underscores_in_headers);

            if (rc == WEIR_OK) {
                if (weir_http_v1_process_header_line(r) != WEIR_OK) {
                    return;
                }

                continue;
            }

            if (rc == WEIR_HTTP_PARSE_HEADER_DONE) {

                r->request_length += b->pos - st->line_start;
                r->header_size = r->request_length;

                if (weir_http_v1_process_request_header(r) != WEIR_OK) {
                    return;
                }

                weir_http_v1_process_request(r);
                return;
            }

            if (rc != WEIR_AGAIN) {
                weir_log_error(WEIR_LOG_INFO, c->log, 0,
                               "client sent invalid header line");
                weir_http_v1_head_error(r, WEIR_HTTP_BAD_REQUEST, NULL);
                return;
            }
        }

        /* WEIR_AGAIN: the parser consumed everything it was given */

        if (b->last == b->end) {
            rc = weir_http_v1_alloc_large_header_buffer(r);

            if (rc == WEIR_ERROR) {
                weir_http_v1_head_error(r, WEIR_HTTP_INTERNAL_SERVER_ERROR,
                                        NULL);
                return;
            }

            if (rc == WEIR_DECLINED) {
                if (!st->headers) {
                    weir_http_v1_head_error(r,
                        WEIR_HTTP_REQUEST_URI_TOO_LARGE,
                        "client sent too long URI");

                } else {
                    weir_http_v1_head_error(r,
                        WEIR_HTTP_REQUEST_HEADER_TOO_LARGE,
                        "client sent too long header line");
                }

                return;
            }
        }

        n = weir_http_v1_read_request_header(r);

        if (n == WEIR_AGAIN || n == WEIR_ERROR) {
            return;
        }
    }
}


static ssize_t
weir_http_v1_read_request_header(weir_http_request_t *r)
{
    ssize_t                      n;
    weir_buf_t                  *b;
    weir_event_t                *rev;
    weir_connection_t           *c;
    weir_http_core_srv_conf_t   *cscf;

    c = r->connection;
    rev = c->read;
    b = r->header_in;

    if (!rev->ready && c->ssl && c->ssl->ops->pending(c)) {
        /* decrypted bytes wait in the TLS library: no event comes */
        rev->ready = 1;
    }

    n = rev->ready ? c->recv(c, b->last, b->end - b->last) : WEIR_AGAIN;

    if (n == WEIR_AGAIN) {
        if (!rev->timer_set) {
            cscf = weir_http_get_module_srv_conf(r, weir_http_core_module);
            weir_event_add_timer(rev, cscf->client_header_timeout);
        }

        if (weir_handle_read_event(rev, 0) != WEIR_OK) {
            c->error = 1;
            weir_http_finalize_request(r, WEIR_ERROR);
            return WEIR_ERROR;
        }

        return WEIR_AGAIN;
    }

    if (n == 0) {
        weir_log_error(WEIR_LOG_INFO, c->log, 0,
                       "client prematurely closed connection");
    }

    if (n == 0 || n == WEIR_ERROR) {
        c->error = 1;
        r->headers_out.status = WEIR_HTTP_BAD_REQUEST;
        weir_http_finalize_request(r, WEIR_HTTP_CLIENT_CLOSED_REQUEST);
        return WEIR_ERROR;
    }

    b->last += n;

    return n;
}


/*
 * The buffer is full and the current line is incomplete: move the
 * partial line into a large buffer. Lines already parsed stay where they
 * are (headers point into them); the old buffers are freed when the
 * request ends. WEIR_DECLINED: the line does not fit in one large
 * buffer, or all large buffers are in use.
 */

static weir_int_t
weir_http_v1_alloc_large_header_buffer(weir_http_request_t *r)
{
    size_t                       size;
    weir_buf_t                  *old, *nb;
    unsigned char               *start;
    weir_connection_t           *c;
    weir_http_v1_stream_t       *st;
    weir_http_connection_t      *hc;
    weir_http_core_srv_conf_t   *cscf;

    c = r->connection;
    hc = r->http_connection;
    st = r->stream;
    old = r->header_in;

    cscf = weir_http_get_module_srv_conf(r, weir_http_core_module);

    if (!st->headers) {
        start = r->request_start ? r->request_start : old->pos;

    } else {
        start = st->line_start ? st->line_start : old->pos;
    }

    if (start < old->start || start > old->last) {
        start = old->pos;
    }

    size = old->last - start;

    if (size >= cscf->large_client_header_buffers.size) {
        return WEIR_DECLINED;
    }

    if (hc->nbusy >= cscf->large_client_header_buffers.num) {
        return WEIR_DECLINED;
    }

    nb = weir_http_v1_header_buf(c, hc,
                                 cscf->large_client_header_buffers.size);
    if (nb == NULL) {
        return WEIR_ERROR;
    }

    hc->nbusy++;

    if (size) {
        weir_memcpy(nb->start, start, size);
    }

#define weir_http_v1_move(p)                                                  \
    if ((p) && (p) >= start && (p) <= old->last) {                           \
        (p) = nb->start + ((p) - start);                                      \
    }

    weir_http_v1_move(r->request_start);
    weir_http_v1_move(r->request_end);
    weir_http_v1_move(r->method_end);
    weir_http_v1_move(r->uri_start);
    weir_http_v1_move(r->uri_end);
    weir_http_v1_move(r->uri_ext);
    weir_http_v1_move(r->args_start);
    weir_http_v1_move(r->schema_start);
    weir_http_v1_move(r->schema_end);
    weir_http_v1_move(r->host_start);
    weir_http_v1_move(r->host_end);
    weir_http_v1_move(r->port_start);
    weir_http_v1_move(r->port_end);
    weir_http_v1_move(r->header_name_start);
    weir_http_v1_move(r->header_name_end);
    weir_http_v1_move(r->header_start);
    weir_http_v1_move(r->header_end);
    weir_http_v1_move(st->line_start);

#undef weir_http_v1_move

    nb->pos = nb->start + (old->pos - start);
    nb->last = nb->start + size;

    r->header_in = nb;
    c->buffer = nb;

    return WEIR_OK;
}


static weir_int_t
weir_http_v1_process_request_line(weir_http_request_t *r)
{
    size_t                       len;
    weir_int_t                   rc;
    weir_str_t                   host;
    unsigned char               *path_end;
    weir_connection_t           *c;
    weir_http_v1_stream_t       *st;
    weir_http_core_srv_conf_t   *cscf;

    c = r->connection;
    st = r->stream;

    cscf = weir_http_get_module_srv_conf(r, weir_http_core_module);

    r->request_length = r->header_in->pos - r->request_start;

    if (r->http_version > WEIR_HTTP_VERSION_11) {
        /* HTTP/1.2 .. 1.9: served as the highest minor we know */
        r->http_version = WEIR_HTTP_VERSION_11;
    }

    path_end = r->args_start ? r->args_start - 1 : r->uri_end;

    if (r->empty_path_in_uri) {
        r->uri.len = 1;
        r->uri.data = (unsigned char *) "/";

    } else if (r->complex_uri || r->quoted_uri) {

        len = r->uri_end - r->uri_start + 1;

        r->uri.data = weir_pnalloc(r->pool, len);
        if (r->uri.data == NULL) {
            weir_http_close_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
            return WEIR_ERROR;
        }

        rc = weir_http_parse_complex_uri(r, cscf->merge_slashes);

        if (rc != WEIR_OK) {
            r->uri.len = 0;
            weir_http_v1_head_error(r, WEIR_HTTP_BAD_REQUEST,
                                    "client sent invalid request");
            return WEIR_ERROR;
        }

    } else {
        r->uri.data = r->uri_start;
        r->uri.len = path_end - r->uri_start;

        if (r->uri_ext && r->uri_ext < path_end) {
            r->exten.data = r->uri_ext;
            r->exten.len = path_end - r->uri_ext;
        }
    }

    r->valid_unparsed_uri = r->empty_path_in_uri ? 0 : 1;

    if (r->host_start && r->host_end && r->method != WEIR_HTTP_CONNECT) {

        /* absolute-form: the target carries the authority */

        host.data = r->host_start;
        host.len = r->host_end - r->host_start;

        r->authority.data = r->host_start;
        r->authority.len = (r->port_end ? r->port_end : r->host_end)
                           - r->host_start;

        rc = weir_http_validate_host(&host, r->pool, 1);

        if (rc == WEIR_DECLINED) {
            weir_http_v1_head_error(r, WEIR_HTTP_BAD_REQUEST,
                                    "client sent invalid host in request "
                                    "line");
            return WEIR_ERROR;
        }

        if (rc == WEIR_ERROR) {
            weir_http_close_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
            return WEIR_ERROR;
        }

        r->headers_in.server = host;

        if (r->schema_start && r->schema_end) {
            r->schema.data = r->schema_start;
            r->schema.len = r->schema_end - r->schema_start;
        }
    }

    st->headers = 1;
    st->line_start = r->header_in->pos;

    c->log->action = "reading client request headers";

    return WEIR_OK;
}


static weir_int_t
weir_http_v1_process_header_line(weir_http_request_t *r)
{
    size_t                       len;
    weir_http_header_t          *h;
    weir_connection_t           *c;
    weir_http_v1_stream_t       *st;
    weir_http_header_def_t      *def;
    weir_http_core_srv_conf_t   *cscf;

    c = r->connection;
    st = r->stream;

    cscf = weir_http_get_module_srv_conf(r, weir_http_core_module);

    r->request_length += r->header_in->pos - st->line_start;
    st->line_start = r->header_in->pos;

    if (++r->headers_n > cscf->max_headers) {
        weir_http_v1_head_error(r, WEIR_HTTP_REQUEST_HEADER_TOO_LARGE,
                                "client sent too many header lines");
        return WEIR_ERROR;
    }

    len = r->header_name_end - r->header_name_start;

    if (r->invalid_header) {
        r->invalid_header = 0;

        if (cscf->ignore_invalid_headers) {
            weir_log_error(WEIR_LOG_INFO, c->log, 0,
                           "client sent invalid header line: \"%.*s\"",
                           (int) len, (const char *) r->header_name_start);
            return WEIR_OK;
        }
    }

    h = weir_list_push(&r->headers_in.headers);
    if (h == NULL) {
        weir_http_close_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return WEIR_ERROR;
    }

    h->hash = r->header_hash ? r->header_hash : 1;
    h->key.data = r->header_name_start;
    h->key.len = len;
    h->value.data = r->header_start ? r->header_start : r->header_name_end;
    h->value.len = r->header_start ? r->header_end - r->header_start : 0;
    h->next = NULL;

    h->lowcase_key = weir_pnalloc(r->pool, len ? len : 1);
    if (h->lowcase_key == NULL) {
        weir_http_close_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return WEIR_ERROR;
    }

    if (len <= sizeof(r->lowcase_header) && r->lowcase_index == len) {
        weir_memcpy(h->lowcase_key, r->lowcase_header, len);
        h->token = weir_http_header_token(h->lowcase_key, len,
                                          r->header_hash);

    } else {
        /* longer than any interned name */
        weir_strlow(h->lowcase_key, h->key.data, len);
        h->token = WEIR_HTTP_HDR_UNKNOWN;
    }

    def = &weir_http_header_defs[h->token];

    if (def->handler && def->handler(r, h, def->offset) != WEIR_OK) {
        /* the request is finalized (and maybe freed) */
        return WEIR_ERROR;
    }

    return WEIR_OK;
}


static weir_int_t
weir_http_v1_process_request_header(weir_http_request_t *r)
{
    if (r->http_version >= WEIR_HTTP_VERSION_11
        && r->headers_in.host == NULL)
    {
        weir_http_v1_head_error(r, WEIR_HTTP_BAD_REQUEST,
                                "client sent HTTP/1.1 request without "
                                "\"Host\" header");
        return WEIR_ERROR;
    }

    if (r->headers_in.transfer_encoding) {

        if (r->headers_in.content_length) {
            weir_http_v1_head_error(r, WEIR_HTTP_BAD_REQUEST,
                                    "client sent \"Content-Length\" and "
                                    "\"Transfer-Encoding\" headers at the "
                                    "same time");
            return WEIR_ERROR;
        }

        if (r->http_version < WEIR_HTTP_VERSION_11) {
            /* RFC 9112 6.1: an HTTP/1.0 message with Transfer-Encoding
             * is faulty */
            weir_http_v1_head_error(r, WEIR_HTTP_BAD_REQUEST,
                                    "client sent \"Transfer-Encoding\" "
                                    "in an HTTP/1.0 request");
            return WEIR_ERROR;
        }
    }

    if (r->method == WEIR_HTTP_CONNECT
        && !((weir_http_core_srv_conf_t *)
             weir_http_get_module_srv_conf(r, weir_http_core_module))
            ->allow_connect)
    {
        weir_http_v1_head_error(r, WEIR_HTTP_NOT_ALLOWED,
                                "client sent CONNECT method");
        return WEIR_ERROR;
    }

    if (r->method == WEIR_HTTP_TRACE) {
        weir_http_v1_head_error(r, WEIR_HTTP_NOT_ALLOWED,
                                "client sent TRACE method");
        return WEIR_ERROR;
    }

    if (r->http_version >= WEIR_HTTP_VERSION_11) {
        r->keepalive = (r->headers_in.connection_type
                        != WEIR_HTTP_CONNECTION_CLOSE);

    } else {
        r->keepalive = (r->headers_in.connection_type
                        == WEIR_HTTP_CONNECTION_KEEP_ALIVE);
    }

    /* a body may leave unread bytes behind an early answer: close by
     * lingering over them (lingering_close on) */
    r->lingering_close = (r->headers_in.content_length_n > 0
                          || r->headers_in.chunked);

    return weir_http_v1_check_buffered_body(r);
}


/*
 * The part of a chunked body that came with the head is checked before
 * the request runs. A handler that does not read the body (return, a
 * static file, an error page) answers at once, and the discard that
 * follows would find bad framing only after a 200 went out, or in the
 * background: the client (or a hop that frames the body another way)
 * would see an answer to a request weir should have refused. The bytes
 * stay where they are: a scratch parser reads a copy of the buffer. The
 * rest of the body, if any, is checked when it is read or discarded.
 * WEIR_OK, or WEIR_ERROR when r was finalized with 400.
 */

static weir_int_t
weir_http_v1_check_buffered_body(weir_http_request_t *r)
{
    off_t                 n;
    weir_int_t            rc;
    weir_buf_t            b;
    weir_http_chunked_t   ctx;

    if (!r->headers_in.chunked || r->header_in == NULL
        || r->header_in->pos == r->header_in->last)
    {
        return WEIR_OK;
    }

    b = *r->header_in;
    weir_memzero(&ctx, sizeof(weir_http_chunked_t));

    for ( ;; ) {
        rc = weir_http_parse_chunked(r, &b, &ctx);

        if (rc == WEIR_OK) {
            /* at least one data byte: every turn makes progress */
            n = b.last - b.pos;
            if (n > ctx.size) {
                n = ctx.size;
            }

            b.pos += n;
            ctx.size -= n;
            continue;
        }

        if (rc == WEIR_HTTP_PARSE_TRAILER) {
            continue;
        }

        if (rc == WEIR_DONE || rc == WEIR_AGAIN) {
            return WEIR_OK;
        }

        weir_http_v1_head_error(r, WEIR_HTTP_BAD_REQUEST,
                                "client sent invalid chunked body");
        return WEIR_ERROR;
    }
}


static void
weir_http_v1_process_request(weir_http_request_t *r)
{
    weir_int_t          rc;
    weir_connection_t  *c;

    c = r->connection;

    /* without Host (HTTP/1.0) the lookup is for the empty name, so that
     * server_name "" picks such requests, as in nginx */

    rc = weir_http_set_virtual_server(r, &r->headers_in.server);

    if (rc == WEIR_ERROR) {
        weir_http_close_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    if (rc == WEIR_HTTP_MISDIRECTED_REQUEST) {
        /* TLS: the Host is for another server block than the SNI's
         * (logged); the body, if any, is not read */
        weir_http_v1_head_error(r, rc, NULL);
        return;
    }

    if (c->read->timer_set) {
        weir_event_del_timer(c->read);
    }

    weir_http_request_head_done(r);

    c->log->action = NULL;

    c->read->handler = weir_http_request_handler;
    c->write->handler = weir_http_request_handler;
    r->read_event_handler = weir_http_block_reading;

    weir_http_handler(r);

    weir_http_run_posted_requests(c);
}


/* ---------------------------------------------------------------------
 * request bodies and interim responses
 */

static weir_int_t
weir_http_v1_read_body(weir_http_request_t *r)
{
    return weir_http_read_request_body_stream(r);
}


static weir_int_t
weir_http_v1_discard_body(weir_http_request_t *r)
{
    return weir_http_discard_request_body_stream(r);
}


/* body bytes after the head in the read buffer: the client sent its
 * body without waiting for a 100 (no read happens between the head and
 * the first read of the body, so the buffer tells) */

static weir_uint_t
weir_http_v1_body_received(weir_http_request_t *r)
{
    return r->header_in && r->header_in->pos < r->header_in->last;
}


/*
 * "Expect: 100-continue": the body code calls this once, just before the
 * body is first read (it checks the expectation and r->expect_tested).
 */

/*
 * An interim response relayed from an origin (103 Early Hints, 102...):
 * queued before the final head and written as the socket allows.
 */

static weir_int_t
weir_http_v1_send_interim(weir_http_request_t *r, weir_uint_t status,
    weir_list_t *headers)
{
    size_t               len;
    weir_uint_t          i;
    weir_buf_t          *b;
    const char          *reason;
    unsigned char       *p, *last;
    weir_list_part_t    *part;
    weir_http_header_t  *h;

    if (r->http_version < WEIR_HTTP_VERSION_11 || r->header_sent
        || status < 100 || status > 199
        || status == WEIR_HTTP_SWITCHING_PROTOCOLS)
    {
        return WEIR_DECLINED;
    }

    reason = weir_http_status_reason(status);

    len = sizeof("HTTP/1.1 999 \r\n\r\n") - 1
          + (reason ? weir_strlen(reason) : 0);

    for (part = &headers->part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (h[i].hash) {
                len += weir_http_v1_header_size(&h[i]);
            }
        }
    }

    /* one more byte: weir_slprintf always leaves room for a NUL */
    b = weir_create_temp_buf(r->pool, len + 1);
    if (b == NULL) {
        return WEIR_ERROR;
    }

    p = b->last;
    last = b->end;

    p = weir_slprintf(p, last, "HTTP/1.1 %lu %s\r\n", (unsigned long) status,
                      reason ? reason : "");

    for (part = &headers->part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (h[i].hash) {
                p = weir_slprintf(p, last, "%.*s: %.*s\r\n",
                                  WEIR_STR_ARG(h[i].key),
                                  WEIR_STR_ARG(h[i].value));
            }
        }
    }

    p = weir_slprintf(p, last, "\r\n");
    b->last = p;

    if (weir_http_v1_queue(r, b) != WEIR_OK) {
        return WEIR_ERROR;
    }

    return weir_http_v1_write(r);
}


static weir_int_t
weir_http_v1_send_continue(weir_http_request_t *r)
{
    ssize_t             n;
    weir_connection_t  *c;

    static const char  cont[] = "HTTP/1.1 100 Continue\r\n\r\n";

    c = r->connection;

    if (r->header_in && r->header_in->pos < r->header_in->last) {
        /* the client did not wait */
        return WEIR_OK;
    }

    n = c->send(c, (unsigned char *) cont, sizeof(cont) - 1);

    if (n == (ssize_t) sizeof(cont) - 1) {
        return WEIR_OK;
    }

    if (n == WEIR_AGAIN || (n >= 0 && n < (ssize_t) sizeof(cont) - 1)) {
        /* a fresh socket that cannot take 25 bytes: the client sends
         * the body after its own timeout anyway; a half-sent interim
         * response cannot be completed, so the connection must close */
        if (n > 0) {
            c->error = 1;
            return WEIR_ERROR;
        }

        return WEIR_OK;
    }

    c->error = 1;

    return WEIR_ERROR;
}


/*
 * Has the client gone while its response is produced? A FIN (eof,
 * pending_eof), a socket error, or under TLS a close_notify: the TLS
 * layer decrypts to tell (a raw peek would take any record, an alert
 * included, for a pipelined request). Bytes that wait are a pipelined
 * request: left for after the response.
 */

static weir_int_t
weir_http_v1_test_closed(weir_http_request_t *r, weir_err_t *err)
{
    char                buf[1];
    ssize_t             n;
    weir_event_t       *rev;
    weir_connection_t  *c;

    c = r->connection;
    rev = c->read;

    *err = 0;

    if (rev->pending_eof || rev->eof) {
        rev->eof = 1;
        return WEIR_DONE;
    }

    if (c->ssl && c->ssl->ops->peek) {
        n = c->ssl->ops->peek(c);

        if (n == 0 || n == WEIR_ERROR) {
            rev->eof = 1;
            return WEIR_DONE;
        }

        if (n == WEIR_AGAIN) {
            /* part of a record, or a handshake message: the read event
             * stays armed for the rest */
            return WEIR_OK;
        }

    } else {
        n = recv(c->fd, buf, 1, MSG_PEEK);

        if (n == 0) {
            rev->eof = 1;
            return WEIR_DONE;
        }

        if (n == -1) {
            *err = weir_socket_errno;

            if (*err != WEIR_EAGAIN && *err != EWOULDBLOCK) {
                rev->eof = 1;
                return WEIR_DONE;
            }

            *err = 0;
        }
    }

    /* data is waiting (a pipelined request): level-triggered backends
     * would report it again and again, so stop reading for now */

    if ((weir_event_flags & WEIR_USE_LEVEL_EVENT) && rev->active) {
        if (weir_del_event(rev, WEIR_READ_EVENT, 0) != WEIR_OK) {
            return WEIR_ERROR;
        }
    }

    return WEIR_OK;
}


/*
 * The location's settings for the connection: sendfile (never under
 * TLS: it encrypts in user space), tcp_nodelay (once set, kept), and a
 * location with keepalive_timeout 0 or past keepalive_requests refuses
 * keep-alive for the request, whatever location answers it in the end.
 */

static void
weir_http_v1_location_config(weir_http_request_t *r)
{
    weir_connection_t          *c;
    weir_http_core_loc_conf_t  *clcf;

    c = r->connection;
    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    c->sendfile = (clcf->sendfile == 1 && c->ssl == NULL) ? 1 : 0;

    if (clcf->tcp_nodelay == 1
        && c->tcp_nodelay == WEIR_TCP_NODELAY_UNSET)
    {
        /* failure is logged by weir_tcp_nodelay and is harmless */
        (void) weir_tcp_nodelay(c);
    }

    if (r->keepalive) {
        if (clcf->keepalive_timeout == 0) {
            r->keepalive = 0;

        } else if (clcf->keepalive_requests != WEIR_CONF_UNSET_UINT
                   && r->http_connection->requests
                      >= clcf->keepalive_requests)
        {
            r->keepalive = 0;
        }
    }
}


/* ---------------------------------------------------------------------
 * the client end of a tunnel: the connection itself
 */

static weir_int_t
weir_http_v1_tunnel_start(weir_http_request_t *r, weir_str_t *preread)
{
    weir_buf_t  *hb;

    hb = r->header_in;

    /* an HTTP/1.0 client knows no 101 (but may CONNECT) */
    if ((r->http_version != WEIR_HTTP_VERSION_11
         && r->method != WEIR_HTTP_CONNECT)
        || hb == NULL)
    {
        return WEIR_DECLINED;
    }

    preread->data = hb->pos;
    preread->len = (size_t) (hb->last - hb->pos);

    hb->pos = hb->last;

    return WEIR_OK;
}


static ssize_t
weir_http_v1_tunnel_recv(weir_http_request_t *r, unsigned char *buf,
    size_t size)
{
    return r->connection->recv(r->connection, buf, size);
}


static ssize_t
weir_http_v1_tunnel_send(weir_http_request_t *r, unsigned char *buf,
    size_t size)
{
    return r->connection->send(r->connection, buf, size);
}


static weir_int_t
weir_http_v1_tunnel_half_close(weir_http_request_t *r)
{
    return weir_connection_half_close(r->connection);
}


static weir_uint_t
weir_http_v1_tunnel_pending(weir_http_request_t *r)
{
    weir_connection_t  *c;

    c = r->connection;

    return c->ssl && c->ssl->ops->pending(c);
}


/* ---------------------------------------------------------------------
 * after the request
 */

/*
 * Is there no request body left on the wire? The body code
 * (weir_http_request_body.c) leaves r->request_body->rest == 0 or
 * last_sent set once a body was read or discarded to its end.
 */

static weir_int_t
weir_http_v1_body_consumed(weir_http_request_t *r)
{
    if (r->discard_body || r->reading_body) {
        return 0;
    }

    if (r->headers_in.content_length_n <= 0 && !r->headers_in.chunked) {
        return 1;
    }

    if (r->request_body
        && (r->request_body->rest == 0 || r->request_body->last_sent))
    {
        return 1;
    }

    return 0;
}


/*
 * Called by weir_http_free_request when the count reached zero and the
 * log phase ran. Takes what the connection keeps (pipelined bytes),
 * destroys r->pool, then keeps the connection alive, lingers or closes.
 */

static void
weir_http_v1_request_done(weir_http_request_t *r, weir_int_t rc)
{
    size_t                       n, size;
    weir_buf_t                  *b, *nb;
    weir_uint_t                  keepalive, linger, reset;
    weir_msec_t                  keepalive_timeout, drain;
    struct linger                lg;
    weir_event_t                *rev, *wev;
    weir_connection_t           *c;
    weir_http_v1_conn_t         *v1c;
    weir_http_connection_t      *hc;
    weir_http_core_srv_conf_t   *cscf;
    weir_http_core_loc_conf_t   *clcf;
    void                       (*takeover)(weir_connection_t *c);

    (void) rc;

    c = r->connection;
    hc = r->http_connection;
    v1c = hc->proto_ctx;
    rev = c->read;
    wev = c->write;

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    keepalive = r->keepalive && r->response_sent && !r->terminated
                && !c->error && !c->timedout && !c->close
                && weir_http_v1_body_consumed(r);

    drain = 0;

    if (keepalive && weir_exiting) {
        /* the response promised keep-alive before the shutdown began: the
         * client may already be sending its next request, so the
         * connection drains as the idle ones do (0: closes at once) */
        drain = weir_http_v1_drain_left(clcf->keepalive_drain_timeout);
        keepalive = (drain > 0);
    }

    linger = 0;

    if (!keepalive && !c->error && !c->timedout) {
        switch (clcf->lingering_close) {

        case WEIR_HTTP_LINGERING_ALWAYS:
            linger = 1;
            break;

        case WEIR_HTTP_LINGERING_ON:
            linger = r->lingering_close || !weir_http_v1_body_consumed(r)
                     || rev->ready || rev->pending_eof;
            break;

        default:
            break;
        }
    }

    reset = c->timedout && clcf->reset_timedout_connection == 1;

    keepalive_timeout = clcf->keepalive_timeout;
    v1c->drain_timeout = clcf->keepalive_drain_timeout;

    /* pipelined bytes move to a fresh buffer before the request's
     * buffers (in c->pool) are given back */

    nb = NULL;
    b = r->header_in;
    n = (keepalive && b && b->start) ? (size_t) (b->last - b->pos) : 0;

    if (n) {
        cscf = hc->conf_ctx->srv_conf[weir_http_core_module.ctx_index];

        size = cscf->client_header_buffer_size;

        if (size < n) {
            size = n;
        }

        nb = weir_http_v1_header_buf(c, hc, size);

        if (nb == NULL) {
            keepalive = 0;

        } else {
            nb->last = weir_cpymem(nb->start, b->pos, n);
        }
    }

    weir_destroy_pool(r->pool);

    /* r is gone */

    c->data = hc;
    c->log->action = NULL;

    if (hc->takeover) {
        takeover = hc->takeover;
        hc->takeover = NULL;

        if (!c->error && !c->timedout && !c->close) {
            weir_http_v1_free_header_bufs(c, hc, NULL);
            c->buffer = NULL;
            c->sent = 0;

            if (rev->timer_set) {
                weir_event_del_timer(rev);
            }

            if (wev->timer_set) {
                weir_event_del_timer(wev);
            }

            takeover(c);
            return;
        }

        keepalive = 0;
        linger = 0;
    }

    if (!keepalive) {
        if (linger) {
            weir_http_v1_free_header_bufs(c, hc, NULL);
            c->buffer = NULL;
            weir_http_lingering_close(c, clcf);
            return;
        }

        if (reset) {
            /* reset_timedout_connection: a RST frees the unsent
             * response in the socket buffers at once, where a close
             * would keep it for a client that stopped reading */
            lg.l_onoff = 1;
            lg.l_linger = 0;

            if (setsockopt(c->fd, SOL_SOCKET, SO_LINGER, (const void *) &lg,
                           sizeof(struct linger))
                == -1)
            {
                weir_log_error(WEIR_LOG_CRIT, c->log, weir_socket_errno,
                               "setsockopt(SO_LINGER) failed");
            }
        }

        weir_http_close_connection(c);
        return;
    }

    weir_http_v1_free_header_bufs(c, hc, nb);
    c->buffer = nb;

    /* $bytes_sent counts one response */
    c->sent = 0;

    if (rev->timer_set) {
        weir_event_del_timer(rev);
    }

    if (wev->timer_set) {
        weir_event_del_timer(wev);
    }

    rev->handler = weir_http_v1_wait_request_handler;
    wev->handler = weir_http_v1_empty_handler;

    if (nb) {
        /* the next request is already here: start it after this pass,
         * so its response follows this one (with "Connection: close"
         * when the worker is shutting down) */
        hc->pipeline = 1;
        weir_post_event(rev, &weir_posted_events);
        return;
    }

    c->log->action = "keepalive";
    c->idle = 1;

    weir_reusable_connection(c, 1);

    if (drain) {
        v1c->draining = 1;
        keepalive_timeout = weir_min(keepalive_timeout, drain);
    }

    weir_event_add_timer(rev, keepalive_timeout);

    if (weir_handle_read_event(rev, 0) != WEIR_OK) {
        weir_http_close_connection(c);
        return;
    }

    if (c->ssl && c->ssl->ops->pending(c)) {
        /* a pipelined request decrypted in the TLS library: no event
         * comes for it */
        rev->ready = 1;
    }

    if (rev->ready) {
        weir_post_event(rev, &weir_posted_events);
    }
}


/*
 * What is left of the drain of a shutting-down worker's idle connections:
 * drain (keepalive_drain_timeout) from the start of the shutdown, so that
 * no connection, whenever it became idle, keeps the worker longer than
 * that; 0 when it is over or was 0 (close at once, as nginx does).
 * worker_shutdown_timeout still closes everything at its own deadline.
 */

static weir_msec_t
weir_http_v1_drain_left(weir_msec_t drain)
{
    weir_msec_int_t  left;

    left = (weir_msec_int_t) (weir_exiting_msec + drain - weir_current_msec);

    return left > 0 ? (weir_msec_t) left : 0;
}


/*
 * Keeps an idle connection of a shutting-down worker for at most left ms
 * (or its keep-alive deadline, when that comes first): a request that
 * arrives is served with "Connection: close" (the worker is exiting), a
 * silent connection is closed by its timer like any idle one.
 */

static void
weir_http_v1_drain(weir_connection_t *c, weir_msec_t left)
{
    weir_event_t            *rev;
    weir_http_v1_conn_t     *v1c;
    weir_http_connection_t  *hc;

    hc = c->data;
    v1c = hc->proto_ctx;
    rev = c->read;

    v1c->draining = 1;
    c->log->action = "draining keepalive";

    if (rev->timer_set
        && (weir_msec_int_t) (rev->timer.key - weir_current_msec)
           <= (weir_msec_int_t) left)
    {
        return;
    }

    weir_event_add_timer(rev, left);
}


/*
 * Kept for the header's contract. Keep-alive is decided, and the
 * connection moved to its idle state, by request_done when the request
 * is freed; a module only clears r->keepalive to refuse it.
 */

void
weir_http_v1_set_keepalive(weir_http_request_t *r)
{
    (void) r;
}


/*
 * Closing with unread input would make the kernel answer that input
 * with a RST, which can destroy what is still in flight to the client
 * (the end of the response, an HTTP/2 GOAWAY). So: shut down our side
 * (close_notify first under TLS, or the client cannot tell the end from
 * a cut), read and drop what comes until the client closes,
 * lingering_timeout passes without data, lingering_time is over, or the
 * worker wants the connection (c->close). The caller has freed its
 * protocol's buffers; c->data is the weir_http_connection_t. HTTP/1
 * after a response, HTTP/2 after its last GOAWAY.
 */

void
weir_http_lingering_close(weir_connection_t *c,
    weir_http_core_loc_conf_t *clcf)
{
    weir_event_t            *rev, *wev;
    weir_http_connection_t  *hc;

    hc = c->data;
    rev = c->read;
    wev = c->write;

    hc->lingering_timeout = clcf->lingering_timeout;
    hc->lingering_deadline = weir_time()
                             + (time_t) (clcf->lingering_time / 1000);

    rev->handler = weir_http_lingering_close_handler;
    wev->handler = weir_http_v1_empty_handler;

    if (wev->timer_set) {
        weir_event_del_timer(wev);
    }

    if (wev->posted) {
        weir_delete_posted_event(wev);
    }

    if (rev->timer_set) {
        weir_event_del_timer(rev);
    }

    if (weir_handle_read_event(rev, 0) != WEIR_OK) {
        weir_http_close_connection(c);
        return;
    }

    c->log->action = "lingering close";

    switch (weir_connection_half_close(c)) {

    case WEIR_OK:
        break;

    case WEIR_AGAIN:
        wev->handler = weir_http_lingering_half_close_handler;

        if (weir_handle_write_event(wev, 0) != WEIR_OK) {
            weir_http_close_connection(c);
            return;
        }

        break;

    default:
        weir_http_close_connection(c);
        return;
    }

    weir_event_add_timer(rev, hc->lingering_timeout);

    if (rev->ready || (c->ssl && c->ssl->ops->pending(c))) {
        rev->ready = 1;

        if (!rev->posted) {
            weir_post_event(rev, &weir_posted_events);
        }
    }
}


/* the close_notify of a lingering close, when the socket had no room */

static void
weir_http_lingering_half_close_handler(weir_event_t *wev)
{
    weir_int_t          rc;
    weir_connection_t  *c;

    c = wev->data;

    rc = weir_connection_half_close(c);

    if (rc == WEIR_ERROR) {
        weir_http_close_connection(c);
        return;
    }

    if (rc == WEIR_OK) {
        wev->handler = weir_http_v1_empty_handler;
    }

    /* WEIR_AGAIN waits for the next write event; after WEIR_OK this
     * takes a level-triggered write event back */
    if (weir_handle_write_event(wev, 0) != WEIR_OK) {
        weir_http_close_connection(c);
    }
}


static void
weir_http_lingering_close_handler(weir_event_t *rev)
{
    ssize_t                  n;
    time_t                   left;
    weir_msec_t              timer;
    weir_connection_t       *c;
    weir_http_connection_t  *hc;
    unsigned char            buf[WEIR_HTTP_LINGERING_BUFFER_SIZE];

    c = rev->data;
    hc = c->data;

    if (rev->timedout || c->close) {
        weir_http_close_connection(c);
        return;
    }

    left = hc->lingering_deadline - weir_time();

    if (left <= 0) {
        weir_http_close_connection(c);
        return;
    }

    do {
        n = c->recv(c, buf, WEIR_HTTP_LINGERING_BUFFER_SIZE);

        if (n == WEIR_ERROR || n == 0) {
            weir_http_close_connection(c);
            return;
        }

    } while (rev->ready);

    if (weir_handle_read_event(rev, 0) != WEIR_OK) {
        weir_http_close_connection(c);
        return;
    }

    timer = (weir_msec_t) left * 1000;

    if (timer > hc->lingering_timeout) {
        timer = hc->lingering_timeout;
    }

    if (rev->timer_set) {
        weir_event_del_timer(rev);
    }

    weir_event_add_timer(rev, timer);
}
