#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"
#include "weir_http_upstream_int.h"


/*
 * The upstream core (weir_http_upstream.c): the Upgrade tunnel. After a
 * 101 the request's two connections (the origin's, and the client's
 * through its protocol's tunnel hooks) exchange bytes both ways until
 * both directions have ended or the idle timer fires. The origin's may
 * be a stream connection (a WebSocket over an HTTP/2 origin's Extended
 * CONNECT): its bytes are the stream's DATA, its half-close the
 * protocol's request_done.
 */


/* one end of a tunnel: the origin (r NULL) or the client (r) */
typedef struct {
    weir_connection_t           *c;
    weir_http_request_t         *r;
    weir_http_upstream_t        *u;
} weir_http_upstream_end_t;


static weir_int_t weir_http_upstream_tunnel_move(
    weir_http_upstream_end_t *src, weir_http_upstream_end_t *dst,
    weir_buf_t *b, unsigned *eof, unsigned *shut);


/* ---- the Upgrade tunnel ----------------------------------------------- */

void
weir_http_upstream_start_tunnel(weir_http_upstream_t *u)
{
    size_t                     size;
    weir_int_t                 rc;
    weir_str_t                 preread;
    weir_connection_t         *cc;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;

    r = u->request;
    ctx = u->pipe;
    cc = r->connection;

    /* the client end is the protocol's (r->proto->tunnel) */
    if (r != r->main || r->proto == NULL || r->proto->tunnel == NULL
        || r->proto->tunnel->start(r, &preread) != WEIR_OK)
    {
        weir_log_error(WEIR_LOG_ERR, cc->log, 0,
                       "upstream switched protocols for a client that "
                       "cannot follow");
        u->peer.keepalive = 0;
        weir_http_upstream_finalize(u, WEIR_HTTP_BAD_GATEWAY);
        return;
    }

    if (ctx->sending) {
        weir_http_upstream_stop_body(u);
    }

    u->upgrade = 1;
    u->peer.keepalive = 0;
    r->keepalive = 0;
    r->lingering_close = 0;

    if (u->process_header && !u->connect) {
        rc = u->process_header(r);

        if (rc != WEIR_OK) {
            weir_http_upstream_finalize(u, rc >= WEIR_HTTP_SPECIAL_RESPONSE
                                           ? rc
                                           : WEIR_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }
    }

    if (u->connect) {
        r->headers_out.status = WEIR_HTTP_OK;
        weir_str_set(&r->headers_out.status_line,
                     "200 Connection established");

    } else {
        r->headers_out.status = WEIR_HTTP_SWITCHING_PROTOCOLS;
    }

    r->headers_out.content_length_n = -1;
    r->header_only = 1;

    cc->log->action = "sending to client";

    rc = weir_http_send_header(r);

    u->header_sent = r->header_sent;

    if (rc == WEIR_ERROR || rc > WEIR_OK) {
        weir_http_upstream_finalize(u, r->header_sent ? WEIR_ERROR : rc);
        return;
    }

    if (u->connect && u->intercept) {
        rc = u->intercept(u, &preread);

        if (rc == WEIR_OK) {
            /* the connections are the interceptor's now */
            u->peer.keepalive = 0;
            weir_http_upstream_finalize(u, WEIR_OK);
            return;
        }

        if (rc != WEIR_DECLINED) {
            weir_http_upstream_finalize(u, WEIR_ERROR);
            return;
        }
    }

    size = u->conf->buffer_size;

    ctx->down = weir_create_temp_buf(r->pool, size);

    if (preread.len > size) {
        size = preread.len;
    }

    ctx->up = weir_create_temp_buf(r->pool, size);

    if (ctx->up == NULL || ctx->down == NULL) {
        weir_http_upstream_finalize(u, WEIR_ERROR);
        return;
    }

    /* what the origin sent after its 101 goes to the client first; what
     * the client sent after its request head goes to the origin (a
     * session's stream has no u->buffer: its DATA waits in the stream) */
    if (u->buffer.pos != u->buffer.last) {
        ctx->down->last = weir_cpymem(ctx->down->last, u->buffer.pos,
                                  (size_t) (u->buffer.last - u->buffer.pos));
        u->buffer.pos = u->buffer.last;
    }

    if (preread.len) {
        ctx->up->last = weir_cpymem(ctx->up->last, preread.data,
                                    preread.len);
    }

    ctx->tunnel = 1;

    if (cc->read->timer_set) {
        weir_event_del_timer(cc->read);
    }

    r->read_event_handler = weir_http_upstream_tunnel;
    r->write_event_handler = weir_http_upstream_tunnel;

    weir_http_upstream_tunnel(r);
}


/*
 * The two ends of a tunnel: the origin connection, whose I/O is its own,
 * and the client's, through its protocol (r set: r->proto->tunnel);
 * both signal readiness with c's events.
 */

static ssize_t
weir_http_upstream_end_recv(weir_http_upstream_end_t *e, unsigned char *buf,
    size_t size)
{
    if (e->r) {
        return e->r->proto->tunnel->recv(e->r, buf, size);
    }

    return e->c->recv(e->c, buf, size);
}


static ssize_t
weir_http_upstream_end_send(weir_http_upstream_end_t *e, unsigned char *buf,
    size_t size)
{
    if (e->r) {
        return e->r->proto->tunnel->send(e->r, buf, size);
    }

    return e->c->send(e->c, buf, size);
}


static weir_int_t
weir_http_upstream_end_half_close(weir_http_upstream_end_t *e)
{
    if (e->r) {
        return e->r->proto->tunnel->half_close(e->r);
    }

    if (weir_http_upstream_is_stream(e->c)) {
        /* a stream of a session (RFC 8441): the client's side is all
         * sent, the stream's END_STREAM follows what is queued */
        if (e->u->proto->request_done) {
            e->u->proto->request_done(e->u);
        }

        return WEIR_OK;
    }

    return weir_connection_half_close(e->c);
}


static weir_uint_t
weir_http_upstream_end_pending(weir_http_upstream_end_t *e)
{
    if (e->r) {
        return e->r->proto->tunnel->pending
               && e->r->proto->tunnel->pending(e->r);
    }

    return e->c->ssl && e->c->ssl->ops->pending(e->c);
}


/* src -> b -> dst; WEIR_OK or WEIR_ERROR (a connection broke) */

static weir_int_t
weir_http_upstream_tunnel_move(weir_http_upstream_end_t *src,
    weir_http_upstream_end_t *dst, weir_buf_t *b, unsigned *eof,
    unsigned *shut)
{
    ssize_t  n;

    for ( ;; ) {
        if (b->pos < b->last && dst->c->write->ready) {
            n = weir_http_upstream_end_send(dst, b->pos,
                                            (size_t) (b->last - b->pos));

            if (n == WEIR_ERROR) {
                return WEIR_ERROR;
            }

            if (n > 0) {
                b->pos += n;
            }
        }

        if (b->pos == b->last) {
            b->pos = b->start;
            b->last = b->start;
        }

        if (*eof && b->pos == b->last) {

            /* the end of one direction, passed on as such: under TLS a
             * close_notify, then the FIN (a close_notify waiting for
             * room is sent again from dst's write event); a failure is
             * the end of this direction as before, the other goes on */

            if (!*shut
                && weir_http_upstream_end_half_close(dst) != WEIR_AGAIN)
            {
                *shut = 1;
            }

            return WEIR_OK;
        }

        if (!src->c->read->ready && weir_http_upstream_end_pending(src)) {
            /* decrypted bytes wait in the TLS library: no event comes */
            src->c->read->ready = 1;
        }

        if (*eof || b->last == b->end || !src->c->read->ready) {
            return WEIR_OK;
        }

        n = weir_http_upstream_end_recv(src, b->last,
                                        (size_t) (b->end - b->last));

        if (n == WEIR_AGAIN) {
            if (b->pos == b->last || !dst->c->write->ready) {
                return WEIR_OK;
            }

            continue;
        }

        if (n == WEIR_ERROR) {
            return WEIR_ERROR;
        }

        if (n == 0) {
            *eof = 1;
            continue;
        }

        b->last += n;
    }
}


void
weir_http_upstream_tunnel(weir_http_request_t *r)
{
    off_t                      sent;
    unsigned                   active;
    size_t                     pend;
    weir_int_t                 rc;
    weir_connection_t         *c, *cc;
    weir_http_upstream_t      *u;
    weir_http_upstream_end_t   origin, client;
    weir_http_upstream_ctx_t  *ctx;

    u = r->upstream;
    ctx = u->pipe;
    c = u->peer.connection;
    cc = r->connection;

    origin.c = c;
    origin.r = NULL;
    origin.u = u;
    client.c = cc;
    client.r = r;
    client.u = u;

    if (ctx->finalized) {
        return;
    }

    cc->log->action = "proxying upgraded connection";

    if (c->read->timedout || c->write->timedout || cc->read->timedout
        || cc->write->timedout)
    {
        weir_log_error(WEIR_LOG_INFO, cc->log, WEIR_ETIMEDOUT,
                       "upgraded connection timed out");
        r->keepalive = 0;
        weir_http_upstream_finalize(u, WEIR_OK);
        return;
    }

    /* the 101 head may still be queued for the client */
    if (r->out || cc->buffered) {
        rc = weir_http_output_filter(r, NULL);

        if (rc == WEIR_ERROR) {
            weir_http_upstream_finalize(u, WEIR_ERROR);
            return;
        }
    }

    pend = ctx->up->last - ctx->up->pos + ctx->down->last - ctx->down->pos;
    sent = c->sent + cc->sent;

    if (!r->out && !cc->buffered) {
        if (weir_http_upstream_tunnel_move(&origin, &client, ctx->down,
                                           &ctx->down_eof, &ctx->down_shut)
            != WEIR_OK)
        {
            r->keepalive = 0;
            weir_http_upstream_finalize(u, WEIR_OK);
            return;
        }
    }

    if (weir_http_upstream_tunnel_move(&client, &origin, ctx->up,
                                       &ctx->up_eof, &ctx->up_shut)
        != WEIR_OK)
    {
        r->keepalive = 0;
        weir_http_upstream_finalize(u, WEIR_OK);
        return;
    }

    if (ctx->up_shut && ctx->down_shut) {
        r->keepalive = 0;
        weir_http_upstream_finalize(u, WEIR_OK);
        return;
    }

    /* bytes moved (read and written at once leave pend as it was) */
    active = (pend != (size_t) (ctx->up->last - ctx->up->pos
                                + ctx->down->last - ctx->down->pos))
             || sent != c->sent + cc->sent
             || c->read->ready || cc->read->ready;

    /* one idle timer for both directions */
    if (active || !c->read->timer_set) {
        weir_event_add_timer(c->read, u->conf->read_timeout);
    }

    if (weir_handle_read_event(c->read, 0) != WEIR_OK
        || weir_handle_read_event(cc->read, 0) != WEIR_OK
        || weir_handle_write_event(c->write, 0) != WEIR_OK
        || weir_handle_write_event(cc->write, 0) != WEIR_OK)
    {
        weir_http_upstream_finalize(u, WEIR_ERROR);
    }
}
