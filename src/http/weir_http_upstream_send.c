#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"
#include "weir_http_upstream_int.h"

#include <sys/sendfile.h>
#include <sys/uio.h>


/*
 * The upstream core (weir_http_upstream.c): sending the request. The
 * head the protocol handler serialized and the request body (buffered:
 * a copy per attempt; streamed: framed as the body reader hands it on)
 * go out with writev(), sendfile() for a body in a file (read into
 * memory for a TLS origin), with back-pressure on the client body.
 */


#define WEIR_HTTP_UPSTREAM_IOVS  64
/* a request body file read per send to a TLS origin */
#define WEIR_HTTP_UPSTREAM_FILE_COPY  16384


static weir_int_t weir_http_upstream_write_chain(weir_http_upstream_t *u,
    weir_chain_t *in, off_t *written);
static ssize_t weir_http_upstream_send_file_copy(weir_connection_t *c,
    weir_buf_t *b, ssize_t *want);
static void weir_http_upstream_body_sent(weir_http_upstream_t *u);


/* ---- sending the request ---------------------------------------------- */

/* streamed body: takes what the body reader has, frames it after what is
 * still unsent */

void
weir_http_upstream_take_body(weir_http_upstream_t *u)
{
    weir_chain_t              *in, *cl, *out, **ll;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;
    weir_http_request_body_t  *rb;

    r = u->request;
    ctx = u->pipe;
    rb = r->request_body;

    if (rb == NULL || rb->bufs == NULL || ctx->body_last
        || ctx->body_stopped || !u->req.has_body)
    {
        return;
    }

    in = rb->bufs;
    rb->bufs = NULL;

    for (cl = in; cl; cl = cl->next) {
        if (cl->buf->last_buf) {
            ctx->body_last = 1;
        }

        ll = &ctx->taken;
        while (*ll) {
            ll = &(*ll)->next;
        }

        *ll = weir_alloc_chain_link(r->pool, NULL);
        if (*ll == NULL) {
            weir_http_upstream_finalize(u, WEIR_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }

        (*ll)->buf = cl->buf;
        (*ll)->next = NULL;
    }

    out = NULL;

    if (u->proto->encode_body(u, in, &out) != WEIR_OK) {
        /* the body reader keeps a body within its framing: the handler
         * logged what it refused */
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "cannot frame the request body for upstream");
        weir_http_upstream_finalize(u, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    for (ll = &ctx->body; *ll; ll = &(*ll)->next) { /* void */ }

    *ll = out;
}


void
weir_http_upstream_send(weir_http_upstream_t *u)
{
    off_t                      head_size, written;
    weir_int_t                 rc;
    weir_chain_t              *cl, **ll, *all;
    weir_connection_t         *c;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;

    r = u->request;
    ctx = u->pipe;
    c = u->peer.connection;

    if (!ctx->sending || c == NULL || ctx->in_post) {
        return;
    }

    r->connection->log->action = "sending request to upstream";

    for ( ;; ) {
        head_size = weir_chain_size(ctx->head);

        /* head and body go out in one writev */
        all = ctx->head;

        for (ll = &all; *ll; ll = &(*ll)->next) { /* void */ }

        *ll = ctx->body;

        rc = weir_http_upstream_write_chain(u, all, &written);

        /* detach the body again */
        for (cl = ctx->head; cl && cl->next != ctx->body; cl = cl->next) {
            /* void */
        }

        if (cl) {
            cl->next = NULL;
        }

        if (written > 0) {
            ctx->sent_any = 1;
            u->cur->bytes_sent += written;

            if (written > head_size && !u->request_buffering) {
                /* a streamed body cannot be read again: no retry; a
                 * buffered one is resent from its copy */
                ctx->body_consumed = 1;
            }
        }

        /* drop what was written */
        while (ctx->head
               && (weir_buf_special(ctx->head->buf)
                   || weir_buf_size(ctx->head->buf) == 0))
        {
            ctx->head = ctx->head->next;
        }

        while (ctx->body
               && (weir_buf_special(ctx->body->buf)
                   || weir_buf_size(ctx->body->buf) == 0))
        {
            ctx->body = ctx->body->next;
        }

        if (rc == WEIR_ERROR) {
            if (ctx->head_done) {
                /* the origin answered and closed: the response goes on */
                weir_http_upstream_stop_body(u);
                return;
            }

            if (weir_http_upstream_cached_retry(u)) {
                return;
            }

            weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_ERROR);
            return;
        }

        if (ctx->head || ctx->body) {
            /* the socket is full: the client body waits (back-pressure) */
            if (!c->write->timer_set) {
                weir_event_add_timer(c->write, u->conf->send_timeout);
            }

            if (weir_handle_write_event(c->write, 0) != WEIR_OK) {
                weir_http_upstream_finalize(u,
                                            WEIR_HTTP_INTERNAL_SERVER_ERROR);
            }

            return;
        }

        if (c->write->timer_set) {
            weir_event_del_timer(c->write);
        }

        if (u->request_buffering || !u->req.has_body || ctx->body_last) {
            break;
        }

        /* streamed: what was taken is written, the reader may reuse it */
        for (cl = ctx->taken; cl; cl = cl->next) {
            cl->buf->pos = cl->buf->last;
        }

        ctx->taken = NULL;

        ctx->in_post = 1;
        rc = weir_http_read_unbuffered_request_body(r);
        ctx->in_post = 0;

        if (rc != WEIR_OK && rc != WEIR_AGAIN) {
            if (ctx->head_done) {
                weir_http_upstream_stop_body(u);
                return;
            }

            weir_http_upstream_finalize(u, rc);
            return;
        }

        if (r->request_body->bufs == NULL) {
            if (rc == WEIR_OK) {
                /* the body ended with nothing more to frame */
                ctx->body_last = 1;
                break;
            }

            /* the post handler brings more */
            return;
        }

        weir_http_upstream_take_body(u);

        if (ctx->finalized) {
            return;
        }
    }

    weir_http_upstream_body_sent(u);
}


/* the whole request is written */

static void
weir_http_upstream_body_sent(weir_http_upstream_t *u)
{
    weir_chain_t              *cl;
    weir_connection_t         *c;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;

    r = u->request;
    ctx = u->pipe;
    c = u->peer.connection;

    for (cl = ctx->taken; cl; cl = cl->next) {
        cl->buf->pos = cl->buf->last;
    }

    ctx->taken = NULL;
    u->request_sent = 1;
    u->request_body_sent = 1;
    ctx->sending = 0;

    if (u->proto->request_done) {
        u->proto->request_done(u);
    }

    if (!u->request_buffering) {
        /* the body is all read: watch for a client that goes away */
        weir_http_upstream_client_handlers(u);
    }

    if (ctx->head_done) {
        /* full duplex: the response is being relayed already */
        return;
    }

    r->connection->log->action = "reading response header from upstream";

    if (!c->read->timer_set) {
        weir_event_add_timer(c->read, u->conf->read_timeout);
    }

    if (c->read->ready || (c->ssl && c->ssl->ops->pending(c))) {
        weir_http_upstream_process_head(u);
    }
}


/* the response is complete (or the origin stopped taking the request
 * while its response flows) before the request body was all sent: stop
 * sending it; the client connection closes unless its body was read */

void
weir_http_upstream_stop_body(weir_http_upstream_t *u)
{
    weir_connection_t         *c;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;

    r = u->request;
    ctx = u->pipe;
    c = r->connection;

    if (!ctx->sending) {
        return;
    }

    ctx->sending = 0;
    ctx->body_stopped = 1;
    ctx->head = NULL;
    ctx->body = NULL;
    u->early_response = 1;
    u->peer.keepalive = 0;

    if (u->peer.connection && u->peer.connection->write->timer_set) {
        weir_event_del_timer(u->peer.connection->write);
    }

    if (r->reading_body || (!u->request_buffering && !ctx->body_last)) {
        r->reading_body = 0;
        r->keepalive = 0;
        r->lingering_close = 1;
        r->read_event_handler = weir_http_block_reading;

        if (c->read->timer_set) {
            weir_event_del_timer(c->read);
        }
    }
}


/*
 * Writes in to the origin: runs of memory buffers with c->writev, file
 * buffers with sendfile (plain) or read into memory and sent through
 * c->send (TLS). WEIR_OK: all written; WEIR_AGAIN: the socket is full;
 * WEIR_ERROR: logged. *written: bytes written by this call.
 */

static weir_int_t
weir_http_upstream_write_chain(weir_http_upstream_t *u, weir_chain_t *in,
    off_t *written)
{
    int                 cnt;
    off_t               off;
    size_t              size;
    ssize_t             n, want;
    weir_err_t          err;
    weir_buf_t         *b;
    weir_chain_t       *cl;
    weir_connection_t  *c;
    struct iovec        iov[WEIR_HTTP_UPSTREAM_IOVS];

    c = u->peer.connection;
    *written = 0;

    for ( ;; ) {

        while (in && (weir_buf_special(in->buf)
                      || weir_buf_size(in->buf) == 0))
        {
            in = in->next;
        }

        if (in == NULL) {
            return WEIR_OK;
        }

        b = in->buf;

        if (weir_buf_in_memory(b)) {
            cnt = 0;
            want = 0;

            for (cl = in; cl && cnt < WEIR_HTTP_UPSTREAM_IOVS; cl = cl->next)
            {
                if (weir_buf_special(cl->buf)) {
                    continue;
                }

                if (!weir_buf_in_memory(cl->buf)) {
                    break;
                }

                size = (size_t) (cl->buf->last - cl->buf->pos);

                if (size == 0) {
                    continue;
                }

                iov[cnt].iov_base = cl->buf->pos;
                iov[cnt].iov_len = size;
                cnt++;
                want += size;
            }

            /* counts c->sent; logs and sets c->error on failure */
            n = c->writev(c, iov, cnt);

            if (n == WEIR_ERROR) {
                c->write->error = 1;
                return WEIR_ERROR;
            }

            if (n == WEIR_AGAIN || n == 0) {
                c->write->ready = 0;
                return WEIR_AGAIN;
            }

            *written += n;

            in = weir_chain_update_sent(in, n);

            if (n < want) {
                c->write->ready = 0;
                return WEIR_AGAIN;
            }

            continue;
        }

        if (c->ssl || !c->sendfile) {
            /* TLS encrypts in user space, a stream's connection frames
             * in user space: no sendfile() */
            n = weir_http_upstream_send_file_copy(c, b, &want);

            if (n == WEIR_ERROR) {
                return WEIR_ERROR;
            }

            if (n == WEIR_AGAIN) {
                return WEIR_AGAIN;
            }

            *written += n;

            in = weir_chain_update_sent(in, n);

            if (n < want) {
                c->write->ready = 0;
                return WEIR_AGAIN;
            }

            continue;
        }

        off = b->file_pos;
        want = (ssize_t) (b->file_last - b->file_pos);

        if (want > 1024 * 1024) {
            want = 1024 * 1024;
        }

        n = sendfile(c->fd, b->file->fd, &off, (size_t) want);

        if (n == 0) {
            weir_log_error(WEIR_LOG_ALERT, c->log, 0,
                           "sendfile() reported that \"%.*s\" was "
                           "truncated", WEIR_STR_ARG(b->file->name));
            return WEIR_ERROR;
        }

        if (n == -1) {
            err = weir_socket_errno;

            if (err == WEIR_EINTR) {
                continue;
            }

            if (err == WEIR_EAGAIN || err == EWOULDBLOCK) {
                c->write->ready = 0;
                return WEIR_AGAIN;
            }

            c->write->error = 1;
            weir_log_error(WEIR_LOG_ERR, c->log, err, "sendfile() failed");
            return WEIR_ERROR;
        }

        c->sent += n;
        *written += n;

        in = weir_chain_update_sent(in, n);

        if (n < want) {
            c->write->ready = 0;
            return WEIR_AGAIN;
        }
    }
}


/*
 * A file buffer to a TLS origin: reads a piece at b->file_pos into a
 * buffer on the stack and sends it with c->send. The piece is read again
 * from the file when the send must be retried, so a TLS library that
 * wants the same bytes on a retry gets them. Returns the bytes sent (*want
 * the piece's size), WEIR_AGAIN or WEIR_ERROR (logged). Does not touch b.
 */

static ssize_t
weir_http_upstream_send_file_copy(weir_connection_t *c, weir_buf_t *b,
    ssize_t *want)
{
    size_t         size;
    ssize_t        n;
    unsigned char  buf[WEIR_HTTP_UPSTREAM_FILE_COPY];

    size = (size_t) (b->file_last - b->file_pos);

    if (size > sizeof(buf)) {
        size = sizeof(buf);
    }

    n = pread(b->file->fd, buf, size, b->file_pos);

    if (n == -1) {
        weir_log_error(WEIR_LOG_CRIT, c->log, errno,
                       "pread() \"%.*s\" failed",
                       WEIR_STR_ARG(b->file->name));
        return WEIR_ERROR;
    }

    if (n == 0) {
        weir_log_error(WEIR_LOG_ALERT, c->log, 0,
                       "file \"%.*s\" was truncated while being sent",
                       WEIR_STR_ARG(b->file->name));
        return WEIR_ERROR;
    }

    *want = n;

    /* counts c->sent; logs and sets the error flags on failure */
    n = c->send(c, buf, (size_t) n);

    if (n == 0) {
        c->write->ready = 0;
        return WEIR_AGAIN;
    }

    return n;
}
