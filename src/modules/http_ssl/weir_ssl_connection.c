/*
 * TLS with OpenSSL 3 (weir_ssl.c): TLS on a weir_connection_t. Creating
 * it, the handshake, recv, send and writev (through a write buffer),
 * pending, peek, shutdown and half close with close_notify (c->ssl->ops),
 * sessions for a client, checks of the peer's certificate, and what the
 * $ssl_* variables read.
 */

#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_ssl.h"
#include "weir_ssl_int.h"


static void weir_ssl_cleanup_connection(void *data);
static void weir_ssl_handshake_handler(weir_event_t *ev);
static weir_uint_t weir_ssl_iov_starts_with(struct iovec *iov, int cnt,
    unsigned char *p, size_t len);
static ssize_t weir_ssl_handle_result(weir_connection_t *c, int n,
    const char *text, weir_uint_t reading);
static void weir_ssl_shutdown_op(weir_connection_t *c);
static weir_int_t weir_ssl_half_close_op(weir_connection_t *c);
static weir_uint_t weir_ssl_pending_op(weir_connection_t *c);
static ssize_t weir_ssl_peek_op(weir_connection_t *c);
static weir_int_t weir_ssl_bio_to_str(BIO *bio, weir_pool_t *pool,
    weir_str_t *s);


static const weir_ssl_connection_ops_t  weir_ssl_ops = {
    weir_ssl_shutdown_op,
    weir_ssl_pending_op,
    weir_ssl_half_close_op,
    weir_ssl_peek_op
};


/* ---- connections ---------------------------------------------------- */

weir_int_t
weir_ssl_create_connection(weir_ssl_t *ssl, weir_connection_t *c,
    weir_uint_t flags)
{
    weir_ssl_conn_t      *sslc;
    weir_pool_cleanup_t  *cln;

    sslc = weir_pcalloc(c->pool, sizeof(weir_ssl_conn_t));
    if (sslc == NULL) {
        return WEIR_ERROR;
    }

    cln = weir_pool_cleanup_add(c->pool, 0);
    if (cln == NULL) {
        return WEIR_ERROR;
    }

    sslc->base.ops = &weir_ssl_ops;
    sslc->buffer_size = ssl->buffer_size ? ssl->buffer_size
                                         : WEIR_SSL_BUFSIZE;
    sslc->client = (flags & WEIR_SSL_CLIENT) ? 1 : 0;

    ERR_clear_error();

    sslc->connection = SSL_new(ssl->ctx);

    if (sslc->connection == NULL) {
        weir_ssl_error(WEIR_LOG_ALERT, c->log, 0, "SSL_new() failed");
        return WEIR_ERROR;
    }

    /* from here the SSL goes with the pool if nothing frees it before */
    cln->handler = weir_ssl_cleanup_connection;
    cln->data = sslc;

    if (SSL_set_fd(sslc->connection, c->fd) == 0) {
        weir_ssl_error(WEIR_LOG_ALERT, c->log, 0, "SSL_set_fd() failed");
        return WEIR_ERROR;
    }

    if (sslc->client) {
        SSL_set_connect_state(sslc->connection);

    } else {
        SSL_set_accept_state(sslc->connection);
    }

    if (SSL_set_ex_data(sslc->connection, weir_ssl_connection_index, c)
        == 0
        || SSL_set_ex_data(sslc->connection, weir_ssl_session_ctx_index,
                           ssl->ctx)
           == 0)
    {
        weir_ssl_error(WEIR_LOG_ALERT, c->log, 0,
                       "SSL_set_ex_data() failed");
        return WEIR_ERROR;
    }

    c->ssl = &sslc->base;
    c->recv = weir_ssl_recv;
    c->send = weir_ssl_send;
    c->writev = weir_ssl_writev;
    c->sendfile = 0;

    return WEIR_OK;
}


static void
weir_ssl_cleanup_connection(void *data)
{
    weir_ssl_conn_t  *sslc = data;

    if (sslc->connection) {
        SSL_free(sslc->connection);
        sslc->connection = NULL;
    }

    if (sslc->buf && sslc->buf->start) {
        /* weir_ssl_writev's, taken from the heap while bytes wait */
        weir_free(sslc->buf->start);
        sslc->buf->start = NULL;
    }
}


weir_int_t
weir_ssl_handshake(weir_connection_t *c)
{
    int               n, sslerr;
    weir_err_t        err;
    unsigned long     e;
    weir_ssl_conn_t  *sslc;

    sslc = weir_ssl_conn(c);

    if (sslc == NULL || sslc->connection == NULL) {
        return WEIR_ERROR;
    }

    weir_ssl_clear_error();

    n = SSL_do_handshake(sslc->connection);

    weir_log_debug(c->log, 0, "SSL_do_handshake: %d", n);

    if (n == 1) {
        sslc->handshaked = 1;
        sslc->drained = 0;
        sslc->waiting = 0;

        weir_log_debug(c->log, 0, "SSL: %s, cipher: \"%s\"",
                       SSL_get_version(sslc->connection),
                       SSL_get_cipher_name(sslc->connection));

        return WEIR_OK;
    }

    sslerr = SSL_get_error(sslc->connection, n);
    err = (sslerr == SSL_ERROR_SYSCALL) ? weir_errno : 0;

    sslc->last = sslerr;

    if (sslerr == SSL_ERROR_WANT_CLIENT_HELLO_CB
        || sslerr == SSL_ERROR_WANT_X509_LOOKUP)
    {
        /* the asynchronous step: a callback of the handshake waits for
         * work of its own and calls weir_ssl_handshake_resume when it
         * is done; the connection's events are parked until then */
        sslc->waiting = 1;
        c->read->handler = weir_ssl_handshake_handler;
        c->write->handler = weir_ssl_handshake_handler;
        return WEIR_AGAIN;
    }

    sslc->waiting = 0;

    if (sslerr == SSL_ERROR_WANT_READ || sslerr == SSL_ERROR_WANT_WRITE) {
        c->read->handler = weir_ssl_handshake_handler;
        c->write->handler = weir_ssl_handshake_handler;

        if (sslerr == SSL_ERROR_WANT_READ) {
            c->read->ready = 0;
            sslc->drained = 1;

        } else {
            c->write->ready = 0;
        }

        if (weir_handle_read_event(c->read, 0) != WEIR_OK) {
            return WEIR_ERROR;
        }

        if (sslerr == SSL_ERROR_WANT_WRITE
            && weir_handle_write_event(c->write, 0) != WEIR_OK)
        {
            return WEIR_ERROR;
        }

        return WEIR_AGAIN;
    }

    c->read->error = 1;

    e = ERR_peek_last_error();

    if (sslerr == SSL_ERROR_ZERO_RETURN
        || (sslerr == SSL_ERROR_SYSCALL && err == 0)
        || (sslerr == SSL_ERROR_SSL
            && ERR_GET_LIB(e) == ERR_LIB_SSL
            && ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING))
    {
        weir_log_error(sslc->client ? WEIR_LOG_ERR : WEIR_LOG_INFO, c->log,
                       0, "peer closed connection in SSL handshake");
        ERR_clear_error();
        c->read->eof = 1;
        return WEIR_ERROR;
    }

    weir_ssl_connection_error(c, sslerr, err, "SSL_do_handshake() failed");

    return WEIR_ERROR;
}


/*
 * Both events of a connection in an asynchronous handshake come here.
 * When it ends (done, failed, or the caller's timer fired: ev->timedout)
 * the handlers saved by the caller, if any, are put back and then
 * sslc->handler(c) runs once; it checks sslc->handshaked (and
 * c->read->timedout / c->write->timedout).
 */

static void
weir_ssl_handshake_handler(weir_event_t *ev)
{
    weir_int_t          rc;
    weir_ssl_conn_t    *sslc;
    weir_connection_t  *c;

    c = ev->data;
    sslc = weir_ssl_conn(c);

    if (ev->timedout || (sslc->waiting && c->close)) {
        /* the caller's timer, or the worker is shutting down */
        c->timedout = ev->timedout;
        sslc->waiting = 0;
        rc = WEIR_ERROR;

    } else if (sslc->waiting) {
        /* the step is not done: what the peer sends meanwhile waits in
         * the socket (a level-triggered backend would report it again
         * and again: the read event goes until the handshake resumes) */
        if (ev == c->read && ev->active
            && !(weir_event_flags & WEIR_USE_CLEAR_EVENT))
        {
            (void) weir_del_event(ev, WEIR_READ_EVENT, 0);
        }

        return;

    } else {
        rc = weir_ssl_handshake(c);

        if (rc == WEIR_AGAIN) {
            return;
        }
    }

    (void) rc;

    if (sslc->saved_read_handler) {
        c->read->handler = sslc->saved_read_handler;
    }

    if (sslc->saved_write_handler) {
        c->write->handler = sslc->saved_write_handler;
    }

    if (sslc->handler) {
        sslc->handler(c);
    }
}


/*
 * The end of an asynchronous step (see weir_ssl_handshake): the
 * handshake goes on at once, as if an event had come, and ends as any
 * asynchronous one does (sslc->handler). Call it from the event loop,
 * never from inside the step's own callback.
 */

void
weir_ssl_handshake_resume(weir_connection_t *c)
{
    weir_ssl_conn_t  *sslc;

    sslc = weir_ssl_conn(c);

    if (sslc == NULL || !sslc->waiting) {
        return;
    }

    sslc->waiting = 0;

    /* the event the handshake handler needs: c->read carries the
     * handshake timer, so a timeout fired meanwhile is seen there */
    weir_ssl_handshake_handler(c->read);
}


/*
 * Bytes read from the socket before TLS was put on it (a ClientHello
 * that came with the CONNECT head): a filter BIO in front of the
 * socket's gives them to OpenSSL first. The bytes are copied.
 */

typedef struct {
    unsigned char   *pos;
    unsigned char   *last;
} weir_ssl_preread_t;

static BIO_METHOD  *weir_ssl_preread_method;

static int
weir_ssl_preread_read(BIO *b, char *buf, int size)
{
    int                  n;
    BIO                 *next;
    weir_ssl_preread_t  *pr;

    pr = BIO_get_data(b);
    next = BIO_next(b);

    BIO_clear_retry_flags(b);

    if (pr && pr->pos < pr->last) {
        n = (int) weir_min((size_t) size, (size_t) (pr->last - pr->pos));
        weir_memcpy(buf, pr->pos, (size_t) n);
        pr->pos += n;
        return n;
    }

    if (next == NULL) {
        return 0;
    }

    n = BIO_read(next, buf, size);
    BIO_copy_next_retry(b);

    return n;
}


static int
weir_ssl_preread_write(BIO *b, const char *buf, int size)
{
    int   n;
    BIO  *next;

    next = BIO_next(b);

    if (next == NULL) {
        return 0;
    }

    BIO_clear_retry_flags(b);
    n = BIO_write(next, buf, size);
    BIO_copy_next_retry(b);

    return n;
}


static long
weir_ssl_preread_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    BIO                 *next;
    weir_ssl_preread_t  *pr;

    pr = BIO_get_data(b);
    next = BIO_next(b);

    if (cmd == BIO_CTRL_PENDING && pr && pr->pos < pr->last) {
        return (long) (pr->last - pr->pos);
    }

    return next ? BIO_ctrl(next, cmd, num, ptr) : 0;
}


static int
weir_ssl_preread_destroy(BIO *b)
{
    weir_ssl_preread_t  *pr;

    pr = BIO_get_data(b);

    if (pr) {
        weir_free(pr);
        BIO_set_data(b, NULL);
    }

    return 1;
}


weir_int_t
weir_ssl_set_preread(weir_connection_t *c, unsigned char *data, size_t len)
{
    BIO                 *f, *rb, *wb;
    weir_ssl_conn_t     *sslc;
    weir_ssl_preread_t  *pr;

    sslc = weir_ssl_conn(c);

    if (len == 0) {
        return WEIR_OK;
    }

    if (weir_ssl_preread_method == NULL) {
        /* once per process; freed with the process */
        weir_ssl_preread_method = BIO_meth_new(
            BIO_get_new_index() | BIO_TYPE_FILTER, "weir preread");

        if (weir_ssl_preread_method == NULL
            || !BIO_meth_set_read(weir_ssl_preread_method,
                                  weir_ssl_preread_read)
            || !BIO_meth_set_write(weir_ssl_preread_method,
                                   weir_ssl_preread_write)
            || !BIO_meth_set_ctrl(weir_ssl_preread_method,
                                  weir_ssl_preread_ctrl)
            || !BIO_meth_set_destroy(weir_ssl_preread_method,
                                     weir_ssl_preread_destroy))
        {
            weir_ssl_error(WEIR_LOG_ALERT, c->log, 0,
                           "BIO_meth_new() failed");
            return WEIR_ERROR;
        }
    }

    /* the copy goes with the BIO, which goes with the SSL */
    pr = weir_alloc(sizeof(weir_ssl_preread_t) + len, c->log);
    if (pr == NULL) {
        return WEIR_ERROR;
    }

    pr->pos = (unsigned char *) (pr + 1);
    pr->last = weir_cpymem(pr->pos, data, len);

    f = BIO_new(weir_ssl_preread_method);
    rb = BIO_new_socket(c->fd, BIO_NOCLOSE);
    wb = BIO_new_socket(c->fd, BIO_NOCLOSE);

    if (f == NULL || rb == NULL || wb == NULL) {
        weir_free(pr);
        BIO_free(f);
        BIO_free(rb);
        BIO_free(wb);
        weir_ssl_error(WEIR_LOG_ALERT, c->log, 0, "BIO_new() failed");
        return WEIR_ERROR;
    }

    BIO_set_data(f, pr);
    BIO_set_init(f, 1);
    BIO_push(f, rb);

    /* the socket BIOs SSL_set_fd made are freed here */
    SSL_set_bio(sslc->connection, f, wb);

    return WEIR_OK;
}


/*
 * Reads until buf is full or the socket is drained. With an
 * edge-triggered backend a full buffer leaves c->read->ready set, as
 * more may wait in the socket or inside OpenSSL (ops->pending).
 *
 * A short read drains the socket, as in weir_unix_recv: when OpenSSL
 * held nothing before the call, its read-ahead asked the socket for a
 * whole buffer (more than one full record, WEIR_SSL_SHORT_READ); if the
 * socket gave less and OpenSSL holds nothing after it, the socket is
 * empty and its next bytes bring a new event. Stopping there saves the
 * read() that would fail with EAGAIN: one system call per request.
 */

#define WEIR_SSL_SHORT_READ  16384

ssize_t
weir_ssl_recv(weir_connection_t *c, unsigned char *buf, size_t size)
{
    int               n, held;
    BIO              *rbio;
    ssize_t           rc, bytes;
    uint64_t          nread;
    weir_ssl_conn_t  *sslc;

    sslc = weir_ssl_conn(c);

    if (sslc == NULL || sslc->connection == NULL) {
        c->read->ready = 0;
        c->read->error = 1;
        return WEIR_ERROR;
    }

    if (c->read->eof && !SSL_pending(sslc->connection)) {
        c->read->ready = 0;
        return 0;
    }

    bytes = 0;

    held = SSL_has_pending(sslc->connection);
    rbio = SSL_get_rbio(sslc->connection);
    nread = rbio ? BIO_number_read(rbio) : 0;

    /* once: a successful SSL_read queues no error */
    weir_ssl_clear_error();

    for ( ;; ) {
        n = SSL_read(sslc->connection, buf,
                     size > INT_MAX ? INT_MAX : (int) size);

        weir_log_debug(c->log, 0, "SSL_read: %d", n);

        if (n > 0) {
            sslc->drained = 0;
            bytes += n;
            size -= n;
            buf += n;

            if (size == 0) {
                c->read->ready = 1;
                return bytes;
            }

            if (!held && rbio && !c->read->pending_eof
                && BIO_number_read(rbio) - nread < WEIR_SSL_SHORT_READ
                && !SSL_has_pending(sslc->connection))
            {
                c->read->ready = 0;
                sslc->drained = 1;
                return bytes;
            }

            continue;
        }

        rc = weir_ssl_handle_result(c, n, "SSL_read() failed", 1);

        if (bytes) {
            if (rc != WEIR_AGAIN) {
                /* the EOF or error shows on the next call */
                c->read->ready = 1;
                c->read->error = 0;
                c->read->eof = 0;
            }

            return bytes;
        }

        switch (rc) {

        case 0:
            c->read->ready = 0;
            c->read->eof = 1;
            return 0;

        case WEIR_AGAIN:
            return WEIR_AGAIN;

        default:
            c->read->ready = 0;
            c->read->error = 1;
            c->error = 1;
            return WEIR_ERROR;
        }
    }
}


/*
 * n is the result of SSL_read or SSL_write (<= 0). Returns WEIR_AGAIN
 * (event flags cleared), 0 (close_notify, reading only) or WEIR_ERROR
 * (logged).
 */

static ssize_t
weir_ssl_handle_result(weir_connection_t *c, int n, const char *text,
    weir_uint_t reading)
{
    int               sslerr;
    weir_err_t        err;
    unsigned long     e;
    weir_ssl_conn_t  *sslc;

    sslc = weir_ssl_conn(c);

    sslerr = SSL_get_error(sslc->connection, n);
    err = (sslerr == SSL_ERROR_SYSCALL) ? weir_errno : 0;

    sslc->last = sslerr;

    weir_log_debug(c->log, 0, "SSL_get_error: %d", sslerr);

    switch (sslerr) {

    case SSL_ERROR_WANT_READ:
        /* also while writing: a key update or a post-handshake message
         * must be read first */
        c->read->ready = 0;
        sslc->drained = 1;

        if (!reading) {
            c->write->ready = 0;

            if (weir_handle_read_event(c->read, 0) != WEIR_OK) {
                return WEIR_ERROR;
            }
        }

        return WEIR_AGAIN;

    case SSL_ERROR_WANT_WRITE:
        c->write->ready = 0;

        if (reading) {
            /*
             * Reading needs to send (a KeyUpdate answer) and the socket
             * is full: wait for the write event; its handler writes or
             * reads again, and either call resumes the pending record.
             */
            c->read->ready = 0;

            if (weir_handle_write_event(c->write, 0) != WEIR_OK) {
                return WEIR_ERROR;
            }
        }

        return WEIR_AGAIN;

    case SSL_ERROR_ZERO_RETURN:
        /* close_notify */
        sslc->no_wait_shutdown = 1;
        sslc->no_send_shutdown = !reading;

        if (reading) {
            return 0;
        }

        weir_log_error(WEIR_LOG_INFO, c->log, 0,
                       "peer closed TLS connection while writing");
        c->write->error = 1;
        return WEIR_ERROR;

    case SSL_ERROR_SSL:
        e = ERR_peek_last_error();

        if (reading
            && ERR_GET_LIB(e) == ERR_LIB_SSL
            && ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING)
        {
            sslc->no_wait_shutdown = 1;
            sslc->no_send_shutdown = 1;

            if (!sslc->client) {
                /* a client leaving without close_notify: a plain close
                 * (requests are framed, nothing can be truncated) */
                ERR_clear_error();
                return 0;
            }

            /* an origin: the response may be cut short */
            weir_log_error(WEIR_LOG_ERR, c->log, 0,
                           "peer closed connection without sending TLS "
                           "close_notify");
            ERR_clear_error();
            return WEIR_ERROR;
        }

        break;

    case SSL_ERROR_SYSCALL:
        if (err == 0 && reading) {
            /* EOF in the middle of nothing (OpenSSL < 3 style) */
            sslc->no_wait_shutdown = 1;
            sslc->no_send_shutdown = 1;
            return 0;
        }

        break;

    default:
        break;
    }

    sslc->no_wait_shutdown = 1;
    sslc->no_send_shutdown = 1;

    if (reading) {
        c->read->error = 1;

    } else {
        c->write->error = 1;
    }

    weir_ssl_connection_error(c, sslerr, err, text);

    return WEIR_ERROR;
}


ssize_t
weir_ssl_send(weir_connection_t *c, unsigned char *buf, size_t size)
{
    struct iovec  iov;

    /* through the writev buffer, so that bytes copied there by an
     * earlier call and still unwritten keep their place in the stream */
    iov.iov_base = buf;
    iov.iov_len = size;

    return weir_ssl_writev(c, &iov, 1);
}


/*
 * Writes iov[] through the connection's buffer (up to
 * sslc->buffer_size, from the heap while there are bytes to write, and
 * freed once all is written or by the connection's pool cleanup):
 * pieces are copied into it so that small ones
 * make full TLS records, and every SSL_write is of the buffer, so a
 * retried SSL_write repeats exactly the bytes (and length) of the one
 * that wanted to write.
 *
 * The return value counts only bytes OpenSSL took (SSL_write > 0: sent
 * as TLS records). Bytes copied into the buffer but not yet taken are
 * not counted: the caller offers them again at the start of its next
 * call, and they are skipped there (the buffer already holds them). So
 * the caller's accounting stays the one of a plain writev: advance by
 * what was returned, and call again with the rest. c->sent counts what
 * went out; c->write->ready is cleared when not everything did.
 *
 * A caller that gives up on bytes after WEIR_AGAIN (a plain socket would
 * simply not have sent them: an interim "100 Continue") cannot take
 * them back here: OpenSSL has already sealed them into the record that
 * wanted to write. When the next call does not begin with the buffered
 * bytes, that record goes out first (not counted: they are not the
 * caller's bytes any more), the unsealed rest of the buffer is dropped,
 * and the new bytes follow.
 */

static weir_uint_t
weir_ssl_iov_starts_with(struct iovec *iov, int cnt, unsigned char *p,
    size_t len)
{
    int     i;
    size_t  n;

    for (i = 0; i < cnt && len; i++) {
        n = iov[i].iov_len < len ? iov[i].iov_len : len;

        if (n && weir_memcmp(iov[i].iov_base, p, n) != 0) {
            return 0;
        }

        p += n;
        len -= n;
    }

    return len == 0;
}


ssize_t
weir_ssl_writev(weir_connection_t *c, struct iovec *iov, int cnt)
{
    int               i, n;
    size_t            total, offset, skip, len, room, size;
    ssize_t           sent, rc;
    weir_uint_t       orphan;
    weir_buf_t       *b;
    weir_ssl_conn_t  *sslc;

    sslc = weir_ssl_conn(c);

    if (sslc == NULL || sslc->connection == NULL) {
        c->write->error = 1;
        c->error = 1;
        return WEIR_ERROR;
    }

    total = 0;

    for (i = 0; i < cnt; i++) {
        total += iov[i].iov_len;
    }

    b = sslc->buf;

    if (b == NULL || b->start == NULL) {
        if (total == 0) {
            return 0;
        }

        if (b == NULL) {
            b = weir_calloc_buf(c->pool);
            if (b == NULL) {
                c->write->error = 1;
                c->error = 1;
                return WEIR_ERROR;
            }

            b->temporary = 1;
            sslc->buf = b;
        }

        /* no bigger than what there is to write: a small response
         * takes a small block, which the allocator recycles cheaply */
        size = total < sslc->buffer_size ? total : sslc->buffer_size;

        b->start = weir_alloc(size, c->log);
        if (b->start == NULL) {
            c->write->error = 1;
            c->error = 1;
            return WEIR_ERROR;
        }

        b->pos = b->start;
        b->last = b->start;
        b->end = b->start + size;
    }

    /* bytes of iov already in the buffer (copied by an earlier call) */
    offset = b->last - b->pos;
    orphan = 0;

    if (offset
        && !weir_ssl_iov_starts_with(iov, cnt, b->pos, offset))
    {
        weir_log_debug(c->log, 0, "SSL writev: %zu bytes given up", offset);
        orphan = 1;
        offset = 0;
    }

    sent = 0;

    /* once: a successful SSL_write queues no error */
    weir_ssl_clear_error();

    for ( ;; ) {

        if (b->pos == b->last) {
            orphan = 0;
            b->pos = b->start;
            b->last = b->start;

            /* fill from iov, past the offset bytes already handled */
            skip = offset;

            for (i = 0; i < cnt && b->last < b->end; i++) {
                len = iov[i].iov_len;

                if (skip >= len) {
                    skip -= len;
                    continue;
                }

                room = b->end - b->last;
                len -= skip;

                if (len > room) {
                    len = room;
                }

                b->last = weir_cpymem(b->last,
                                      (unsigned char *) iov[i].iov_base
                                      + skip, len);
                skip = 0;
            }

            offset += b->last - b->pos;

            if (b->pos == b->last) {
                /* everything went out: an idle keep-alive connection
                 * holds no buffer (as in nginx) */
                weir_free(b->start);
                b->start = NULL;
                b->pos = NULL;
                b->last = NULL;
                b->end = NULL;

                break;
            }
        }

        len = b->last - b->pos;

        n = SSL_write(sslc->connection, b->pos,
                      len > INT_MAX ? INT_MAX : (int) len);

        weir_log_debug(c->log, 0, "SSL_write: %d of %zu", n, len);

        if (n > 0) {
            c->sent += n;

            if (orphan) {
                /* the sealed record is out, the rest was never sent */
                b->pos = b->last;
                continue;
            }

            b->pos += n;
            sent += n;
            continue;
        }

        rc = weir_ssl_handle_result(c, n, "SSL_write() failed", 0);

        if (rc == WEIR_AGAIN) {
            c->write->ready = 0;
            return sent ? sent : WEIR_AGAIN;
        }

        c->error = 1;
        return WEIR_ERROR;
    }

    if ((size_t) sent < total) {
        c->write->ready = 0;
    }

    return sent;
}


static weir_uint_t
weir_ssl_pending_op(weir_connection_t *c)
{
    weir_ssl_conn_t  *sslc;

    sslc = weir_ssl_conn(c);

    if (sslc == NULL || sslc->connection == NULL) {
        return 0;
    }

    /*
     * Decrypted bytes (SSL_pending), or records read ahead and not yet
     * decrypted (SSL_has_pending) - unless the last read found the
     * socket drained with only part of a record: then nothing can be
     * read before the socket's next event, and saying "pending" would
     * make the caller read in vain, again and again.
     */

    if (SSL_pending(sslc->connection) > 0) {
        return 1;
    }

    return !sslc->drained && SSL_has_pending(sslc->connection);
}


/*
 * SSL_peek of one byte: the record stays in the library for the next
 * SSL_read (weir_ssl_pending_op then reports it, so the protocol reads
 * it without an event), an alert or a FIN shows as 0.
 */

static ssize_t
weir_ssl_peek_op(weir_connection_t *c)
{
    int               n;
    unsigned char     ch;
    weir_ssl_conn_t  *sslc;

    sslc = weir_ssl_conn(c);

    if (sslc == NULL || sslc->connection == NULL) {
        return WEIR_ERROR;
    }

    if (SSL_pending(sslc->connection) > 0) {
        return 1;
    }

    weir_ssl_clear_error();

    n = SSL_peek(sslc->connection, &ch, 1);

    weir_log_debug(c->log, 0, "SSL_peek: %d", n);

    if (n > 0) {
        sslc->drained = 0;
        return n;
    }

    return weir_ssl_handle_result(c, n, "SSL_peek() failed", 1);
}


/*
 * close_notify once, without waiting for the peer's, and the SSL freed.
 * Quiet (nothing sent) when the peer is gone, the connection failed or
 * timed out, or the handshake never ended. Idempotent.
 */

static void
weir_ssl_shutdown_op(weir_connection_t *c)
{
    int               n;
    SSL              *ssl;
    weir_ssl_conn_t  *sslc;

    sslc = weir_ssl_conn(c);

    if (sslc == NULL || sslc->connection == NULL) {
        return;
    }

    ssl = sslc->connection;

    if (sslc->shutdown_without_free) {
        return;
    }

    if (SSL_get_shutdown(ssl) & SSL_SENT_SHUTDOWN) {

        /* half closed already: its close_notify went out, or gets one
         * more try (SSL_set_shutdown below would send a second one) */

        if (sslc->shutdown_pending && !c->error && !c->write->error) {
            weir_ssl_clear_error();
            (void) SSL_shutdown(ssl);
        }

    } else if (SSL_in_init(ssl)
               || c->timedout || c->error || c->read->error
               || c->write->error || sslc->no_send_shutdown)
    {
        SSL_set_quiet_shutdown(ssl, 1);

    } else {
        /* we do not wait for the peer's close_notify */
        SSL_set_shutdown(ssl, SSL_RECEIVED_SHUTDOWN);

        weir_ssl_clear_error();

        n = SSL_shutdown(ssl);

        weir_log_debug(c->log, 0, "SSL_shutdown: %d", n);

        (void) n;
    }

    weir_ssl_clear_error();

    SSL_free(ssl);
    sslc->connection = NULL;
}


/*
 * close_notify for a half close (see weir_ssl_connection_ops_t): the SSL
 * stays, so what the peer still sends can be read (OpenSSL reads
 * application data after sending its close_notify). Sent once; after
 * WEIR_AGAIN the next call writes the sealed alert.
 */

static weir_int_t
weir_ssl_half_close_op(weir_connection_t *c)
{
    int               n, sslerr;
    SSL              *ssl;
    weir_err_t        err;
    weir_ssl_conn_t  *sslc;

    sslc = weir_ssl_conn(c);

    if (sslc == NULL || sslc->connection == NULL) {
        return WEIR_OK;
    }

    ssl = sslc->connection;

    if (SSL_get_shutdown(ssl) & SSL_SENT_SHUTDOWN) {
        if (!sslc->shutdown_pending) {
            return WEIR_OK;
        }

    } else if (SSL_in_init(ssl) || c->error || c->write->error
               || sslc->no_send_shutdown)
    {
        /* nothing can be sent any more: the FIN alone */
        return WEIR_OK;
    }

    weir_ssl_clear_error();

    n = SSL_shutdown(ssl);

    weir_log_debug(c->log, 0, "SSL_shutdown: %d", n);

    if (n >= 0) {
        /* 0: ours went out, the peer's is still to come; 1: both */
        sslc->shutdown_pending = 0;
        return WEIR_OK;
    }

    sslerr = SSL_get_error(ssl, n);
    err = (sslerr == SSL_ERROR_SYSCALL) ? weir_errno : 0;

    switch (sslerr) {

    case SSL_ERROR_WANT_WRITE:
        sslc->shutdown_pending = 1;
        c->write->ready = 0;
        return WEIR_AGAIN;

    case SSL_ERROR_WANT_READ:
        /* ours is out and SSL_shutdown went on to wait for the peer's,
         * which a half close does not do */
        sslc->shutdown_pending = 0;
        return WEIR_OK;

    default:
        sslc->shutdown_pending = 0;
        c->write->error = 1;
        weir_ssl_connection_error(c, sslerr, err, "SSL_shutdown() failed");
        weir_ssl_clear_error();
        return WEIR_ERROR;
    }
}


weir_int_t
weir_ssl_set_session(weir_connection_t *c, SSL_SESSION *session)
{
    weir_ssl_conn_t  *sslc;

    sslc = weir_ssl_conn(c);

    if (session == NULL || sslc == NULL || sslc->connection == NULL) {
        return WEIR_OK;
    }

    if (SSL_set_session(sslc->connection, session) == 0) {
        weir_ssl_error(WEIR_LOG_ERR, c->log, 0, "SSL_set_session() failed");
        return WEIR_ERROR;
    }

    return WEIR_OK;
}


SSL_SESSION *
weir_ssl_get1_session(weir_connection_t *c)
{
    SSL_SESSION      *sess;
    weir_ssl_conn_t  *sslc;

    sslc = weir_ssl_conn(c);

    if (sslc == NULL || sslc->connection == NULL) {
        return NULL;
    }

    sess = SSL_get1_session(sslc->connection);

    /* with TLS 1.3 the resumable session comes after the handshake, with
     * the server's NewSessionTicket: until then there is none */
    if (sess && !SSL_SESSION_is_resumable(sess)) {
        SSL_SESSION_free(sess);
        return NULL;
    }

    return sess;
}


weir_int_t
weir_ssl_check_host(weir_connection_t *c, weir_str_t *name)
{
    int               rc;
    X509             *cert;
    weir_ssl_conn_t  *sslc;
    char              host[256];

    sslc = weir_ssl_conn(c);

    if (sslc == NULL || sslc->connection == NULL || name->len == 0
        || name->len >= sizeof(host))
    {
        return WEIR_ERROR;
    }

    cert = SSL_get0_peer_certificate(sslc->connection);
    if (cert == NULL) {
        return WEIR_ERROR;
    }

    weir_memcpy(host, name->data, name->len);
    host[name->len] = '\0';

    /* an IP literal matches iPAddress entries; a name dNSName ones, or
     * the CN when there are none */
    rc = X509_check_ip_asc(cert, host, 0);

    if (rc == -2) {
        /* not an IP address */
        rc = X509_check_host(cert, host, name->len, 0, NULL);
    }

    ERR_clear_error();

    return (rc == 1) ? WEIR_OK : WEIR_ERROR;
}


long
weir_ssl_verify_result(weir_connection_t *c)
{
    weir_ssl_conn_t  *sslc;

    sslc = weir_ssl_conn(c);

    if (sslc == NULL || sslc->connection == NULL) {
        return X509_V_ERR_UNSPECIFIED;
    }

    return SSL_get_verify_result(sslc->connection);
}


/* ---- variables ------------------------------------------------------ */

static weir_int_t
weir_ssl_set_str(weir_pool_t *pool, weir_str_t *s, const char *v)
{
    weir_str_t  src;

    if (v == NULL) {
        s->len = 0;
        s->data = NULL;
        return WEIR_OK;
    }

    src.len = weir_strlen(v);
    src.data = (unsigned char *) v;

    s->data = weir_pstrdup(pool, &src);
    if (s->data == NULL) {
        s->len = 0;
        return WEIR_ERROR;
    }

    s->len = src.len;

    return WEIR_OK;
}


static SSL *
weir_ssl_of(weir_connection_t *c)
{
    weir_ssl_conn_t  *sslc;

    sslc = weir_ssl_conn(c);

    return (sslc == NULL) ? NULL : sslc->connection;
}


weir_int_t
weir_ssl_get_protocol(weir_connection_t *c, weir_pool_t *pool, weir_str_t *s)
{
    SSL  *ssl = weir_ssl_of(c);

    return weir_ssl_set_str(pool, s, ssl ? SSL_get_version(ssl) : NULL);
}


weir_int_t
weir_ssl_get_cipher_name(weir_connection_t *c, weir_pool_t *pool,
    weir_str_t *s)
{
    SSL  *ssl = weir_ssl_of(c);

    return weir_ssl_set_str(pool, s, ssl ? SSL_get_cipher_name(ssl) : NULL);
}


weir_int_t
weir_ssl_get_session_reused(weir_connection_t *c, weir_pool_t *pool,
    weir_str_t *s)
{
    SSL  *ssl = weir_ssl_of(c);

    if (ssl == NULL) {
        return weir_ssl_set_str(pool, s, NULL);
    }

    return weir_ssl_set_str(pool, s, SSL_session_reused(ssl) ? "r" : ".");
}


weir_int_t
weir_ssl_get_server_name(weir_connection_t *c, weir_pool_t *pool,
    weir_str_t *s)
{
    SSL  *ssl = weir_ssl_of(c);

    return weir_ssl_set_str(pool, s,
                            ssl ? SSL_get_servername(ssl,
                                                TLSEXT_NAMETYPE_host_name)
                                : NULL);
}


weir_int_t
weir_ssl_get_alpn_protocol(weir_connection_t *c, weir_pool_t *pool,
    weir_str_t *s)
{
    unsigned int          len;
    const unsigned char  *data;
    weir_str_t            src;
    SSL                  *ssl = weir_ssl_of(c);

    s->len = 0;
    s->data = NULL;

    if (ssl == NULL) {
        return WEIR_OK;
    }

    SSL_get0_alpn_selected(ssl, &data, &len);

    if (len == 0) {
        return WEIR_OK;
    }

    src.len = len;
    src.data = (unsigned char *) data;

    s->data = weir_pstrdup(pool, &src);
    if (s->data == NULL) {
        return WEIR_ERROR;
    }

    s->len = len;

    return WEIR_OK;
}


weir_int_t
weir_ssl_get_client_verify(weir_connection_t *c, weir_pool_t *pool,
    weir_str_t *s)
{
    long   rc;
    SSL   *ssl = weir_ssl_of(c);

    if (ssl == NULL) {
        return weir_ssl_set_str(pool, s, NULL);
    }

    if (SSL_get0_peer_certificate(ssl) == NULL) {
        return weir_ssl_set_str(pool, s, "NONE");
    }

    rc = SSL_get_verify_result(ssl);

    if (rc == X509_V_OK) {
        return weir_ssl_set_str(pool, s, "SUCCESS");
    }

    if (weir_pstrfmt(pool, s, "FAILED:%s", X509_verify_cert_error_string(rc))
        != WEIR_OK)
    {
        s->len = 0;
        return WEIR_ERROR;
    }

    return WEIR_OK;
}


static weir_int_t
weir_ssl_bio_to_str(BIO *bio, weir_pool_t *pool, weir_str_t *s)
{
    long           len;
    char          *data;
    weir_str_t     src;

    len = BIO_get_mem_data(bio, &data);

    s->len = 0;
    s->data = NULL;

    if (len <= 0) {
        return WEIR_OK;
    }

    src.len = len;
    src.data = (unsigned char *) data;

    s->data = weir_pstrdup(pool, &src);
    if (s->data == NULL) {
        return WEIR_ERROR;
    }

    s->len = len;

    return WEIR_OK;
}


static weir_int_t
weir_ssl_get_name(weir_connection_t *c, weir_pool_t *pool, weir_str_t *s,
    weir_uint_t issuer)
{
    BIO         *bio;
    X509        *cert;
    X509_NAME   *name;
    weir_int_t   rc;
    SSL         *ssl = weir_ssl_of(c);

    s->len = 0;
    s->data = NULL;

    if (ssl == NULL) {
        return WEIR_OK;
    }

    cert = SSL_get0_peer_certificate(ssl);
    if (cert == NULL) {
        return WEIR_OK;
    }

    name = issuer ? X509_get_issuer_name(cert) : X509_get_subject_name(cert);
    if (name == NULL) {
        return WEIR_OK;
    }

    bio = BIO_new(BIO_s_mem());
    if (bio == NULL) {
        weir_ssl_error(WEIR_LOG_ALERT, c->log, 0, "BIO_new() failed");
        return WEIR_ERROR;
    }

    if (X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253) < 0) {
        weir_ssl_error(WEIR_LOG_ALERT, c->log, 0,
                       "X509_NAME_print_ex() failed");
        BIO_free(bio);
        return WEIR_ERROR;
    }

    rc = weir_ssl_bio_to_str(bio, pool, s);

    BIO_free(bio);

    return rc;
}


weir_int_t
weir_ssl_get_subject_dn(weir_connection_t *c, weir_pool_t *pool,
    weir_str_t *s)
{
    return weir_ssl_get_name(c, pool, s, 0);
}


weir_int_t
weir_ssl_get_issuer_dn(weir_connection_t *c, weir_pool_t *pool,
    weir_str_t *s)
{
    return weir_ssl_get_name(c, pool, s, 1);
}


weir_int_t
weir_ssl_get_serial_number(weir_connection_t *c, weir_pool_t *pool,
    weir_str_t *s)
{
    BIO         *bio;
    X509        *cert;
    weir_int_t   rc;
    SSL         *ssl = weir_ssl_of(c);

    s->len = 0;
    s->data = NULL;

    if (ssl == NULL) {
        return WEIR_OK;
    }

    cert = SSL_get0_peer_certificate(ssl);
    if (cert == NULL) {
        return WEIR_OK;
    }

    bio = BIO_new(BIO_s_mem());
    if (bio == NULL) {
        weir_ssl_error(WEIR_LOG_ALERT, c->log, 0, "BIO_new() failed");
        return WEIR_ERROR;
    }

    /* hex, uppercase, as nginx */
    if (i2a_ASN1_INTEGER(bio, X509_get0_serialNumber(cert)) < 0) {
        weir_ssl_error(WEIR_LOG_ALERT, c->log, 0,
                       "i2a_ASN1_INTEGER() failed");
        BIO_free(bio);
        return WEIR_ERROR;
    }

    rc = weir_ssl_bio_to_str(bio, pool, s);

    BIO_free(bio);

    return rc;
}


weir_int_t
weir_ssl_get_fingerprint(weir_connection_t *c, weir_pool_t *pool,
    weir_str_t *s)
{
    X509           *cert;
    unsigned int    i, len;
    unsigned char  *p;
    unsigned char   md[EVP_MAX_MD_SIZE];
    SSL            *ssl = weir_ssl_of(c);

    static const char  hex[] = "0123456789abcdef";

    s->len = 0;
    s->data = NULL;

    if (ssl == NULL) {
        return WEIR_OK;
    }

    cert = SSL_get0_peer_certificate(ssl);
    if (cert == NULL) {
        return WEIR_OK;
    }

    if (X509_digest(cert, EVP_sha1(), md, &len) == 0) {
        weir_ssl_error(WEIR_LOG_ALERT, c->log, 0, "X509_digest() failed");
        return WEIR_ERROR;
    }

    p = weir_pnalloc(pool, 2 * len);
    if (p == NULL) {
        return WEIR_ERROR;
    }

    s->data = p;
    s->len = 2 * len;

    for (i = 0; i < len; i++) {
        *p++ = hex[md[i] >> 4];
        *p++ = hex[md[i] & 0xf];
    }

    return WEIR_OK;
}
