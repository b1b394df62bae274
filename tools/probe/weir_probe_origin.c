/*
 * weir-probe origin: a benchmark HTTP/1.1 server on one epoll loop.
 *
 * Answers by path: /tiny, /size/N, /chunked/N, /delay/MS/<path>, /echo,
 * /early, /stats, /ws (see tools/probe/README.md). Keep-alive and
 * pipelining; request bodies (content-length or chunked) are read on every
 * path. /ws upgrades to WebSocket and echoes frames.
 */

#include "weir_config.h"
#include "weir_core.h"
#include "weir_probe.h"
#include "weir_probe_origin.h"

#include <sys/timerfd.h>

#if (WEIR_HAVE_OPENSSL)
#include <openssl/ssl.h>
#include <openssl/err.h>
#endif




typedef struct {
    uint64_t            at;
    po_conn_t          *c;
    uint64_t            serial;
} po_timer_t;


static void po_accept(po_listener_t *ls);
static void po_handle(po_conn_t *c);
static void po_ws_handle(po_conn_t *c);
static int po_ws_frames(po_conn_t *c);
static int po_preface(po_conn_t *c);
static int po_tls_listener(po_listener_t *ls, const char *cert,
    const char *key);
static int po_parse_head(po_conn_t *c);
static int po_body(po_conn_t *c);
static void po_start(po_conn_t *c);
static void po_fill(po_conn_t *c);
static po_timer_t *po_timer_min(void);
static void po_timer_pop(void);
static void po_tfd_arm(uint64_t at);
static void po_tfd_drain(void);
static void po_usage(void);


static int                    po_ep = -1;

/*
 * The delays of /delay/MS/ end on a timerfd armed at the earliest one's
 * absolute time (nanoseconds), not on epoll_wait's timeout, which counts
 * whole milliseconds and so answered up to 1 ms late: at 128 clients
 * of a 15 ms origin that alone cost 3-6 % of the throughput bound.
 */
static int                    po_tfd = -1;
static int                    po_tfd_kind = PO_TIMERFD;
static uint64_t               po_tfd_at;     /* armed for; 0: disarmed */
static po_conn_t             *po_free;
static po_conn_t             *po_all;
static uint64_t               po_serial;
uint64_t                      po_accepted;
uint64_t                      po_requests;
uint64_t                      po_open;
static po_timer_t            *po_timers;
static size_t                 po_ntimers;
static size_t                 po_timers_size;
u_char                        po_pattern[PO_CHUNK];
static volatile sig_atomic_t  po_stop;

/* 64 bytes: the /tiny body */
#define PO_TINY_BODY                                                          \
    "weir-probe origin: a tiny response of sixty-four bytes, exactly\n"

const char  po_tiny[] = PO_TINY_BODY;

/* the whole keep-alive HTTP/1.1 answer to /tiny, as po_start() formats it */
static const char  po_tiny_response[] =
    "HTTP/1.1 200 OK\r\nServer: weir-probe\r\n"
    "Content-Type: text/plain\r\nContent-Length: 64\r\n\r\n" PO_TINY_BODY;


static void
po_signal(int signo)
{
    (void) signo;
    po_stop = 1;
}


int
probe_origin_main(int argc, char **argv)
{
    int                       i, n, nls, one, timeout;
    char                      host[256];
    uint64_t                  now;
    socklen_t                 len;
    po_timer_t               *t;
    po_conn_t                *c;
    po_listener_t             ls[PO_MAX_LISTEN];
    struct sigaction          sa;
    struct epoll_event        ee, events[256];
    struct sockaddr_storage   ss;

    nls = 0;

    po_ep = epoll_create1(EPOLL_CLOEXEC);
    if (po_ep == -1) {
        perror("weir-probe origin: epoll_create1()");
        return 2;
    }

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            po_usage();
            return 0;
        }

        if (strcmp(argv[i], "--tls") == 0) {
            if (nls == 0 || i + 2 >= argc || ls[nls - 1].ssl_ctx != NULL) {
                fprintf(stderr, "weir-probe origin: --tls CERT KEY follows "
                        "the -l it makes TLS\n");
                return 2;
            }

            if (po_tls_listener(&ls[nls - 1], argv[i + 1], argv[i + 2])
                != PO_OK)
            {
                return 2;
            }

            i += 2;
            continue;
        }

        if (strcmp(argv[i], "-l") != 0 || i + 1 == argc) {
            po_usage();
            return 2;
        }

        i++;

        if (nls == PO_MAX_LISTEN
            || probe_parse_addr(argv[i], &ss, &len, host, sizeof(host),
                                NULL)
               != 0)
        {
            fprintf(stderr, "weir-probe origin: invalid -l \"%s\" "
                    "(a numeric ADDR:PORT)\n", argv[i]);
            return 2;
        }

        ls[nls].kind = PO_LISTENER;
        ls[nls].ssl_ctx = NULL;
        ls[nls].fd = socket(ss.ss_family,
                            SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (ls[nls].fd == -1) {
            perror("weir-probe origin: socket()");
            return 2;
        }

        one = 1;
        (void) setsockopt(ls[nls].fd, SOL_SOCKET, SO_REUSEADDR, &one,
                          sizeof(one));

        if (bind(ls[nls].fd, (struct sockaddr *) &ss, len) == -1
            || listen(ls[nls].fd, 4096) == -1)
        {
            fprintf(stderr, "weir-probe origin: %s: %s\n", argv[i],
                    strerror(errno));
            return 2;
        }

        len = sizeof(ss);
        if (getsockname(ls[nls].fd, (struct sockaddr *) &ss, &len) == 0) {
            printf("weir-probe origin: listening on %s%s%s:%d\n",
                   ss.ss_family == AF_INET6 ? "[" : "", host,
                   ss.ss_family == AF_INET6 ? "]" : "",
                   ntohs(((struct sockaddr_in *) &ss)->sin_port));
        }

        ee.events = EPOLLIN;
        ee.data.ptr = &ls[nls];

        if (epoll_ctl(po_ep, EPOLL_CTL_ADD, ls[nls].fd, &ee) == -1) {
            perror("weir-probe origin: epoll_ctl()");
            return 2;
        }

        nls++;
    }

    if (nls == 0) {
        po_usage();
        return 2;
    }

    /* without a timerfd, epoll_wait's millisecond timeout still works */
    po_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (po_tfd != -1) {
        ee.events = EPOLLIN;
        ee.data.ptr = &po_tfd_kind;

        if (epoll_ctl(po_ep, EPOLL_CTL_ADD, po_tfd, &ee) == -1) {
            close(po_tfd);
            po_tfd = -1;
        }
    }

    for (i = 0; i < PO_CHUNK; i++) {
        po_pattern[i] = (u_char) ('a' + i % 26);
    }

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = po_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    fflush(stdout);

    while (!po_stop) {
        /* bounded: a signal just before epoll_wait is seen within 100 ms */
        timeout = 100;

        t = po_timer_min();
        if (t != NULL) {
            now = probe_now();
            n = t->at > now
                ? (int) ((t->at - now + PROBE_NS_PER_MS - 1)
                         / PROBE_NS_PER_MS)
                : 0;
            timeout = n < timeout ? n : timeout;

            if (po_tfd != -1 && t->at > now && t->at != po_tfd_at) {
                po_tfd_arm(t->at);
            }
        }

        n = epoll_wait(po_ep, events, 256, timeout);

        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }

            perror("weir-probe origin: epoll_wait()");
            return 2;
        }

        /*
         * connections first, new ones after: a FIN that came before a new
         * connection's SYN is seen first, so /stats counts it closed
         */

        for (i = 0; i < n; i++) {
            if (*(int *) events[i].data.ptr == PO_LISTENER) {
                continue;
            }

            if (*(int *) events[i].data.ptr == PO_TIMERFD) {
                /* expired: the timers are run below, after the events */
                po_tfd_drain();
                continue;
            }

            c = events[i].data.ptr;

            if (events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP
                                    | EPOLLERR))
            {
                c->readable = 1;
            }

            if (events[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
                /* the FIN came with the data: read until recv() says so */
                c->eof = 1;
            }

            po_handle(c);
        }

        for (i = 0; i < n; i++) {
            if (*(int *) events[i].data.ptr == PO_LISTENER) {
                po_accept(events[i].data.ptr);
            }
        }

        now = probe_now();

        for ( ;; ) {
            t = po_timer_min();
            if (t == NULL || t->at > now) {
                break;
            }

            c = t->c;
            if (t->serial != c->serial) {
                po_timer_pop();
                continue;
            }

            po_timer_pop();
            c->timer = 0;
            po_handle(c);
        }
    }

    printf("weir-probe origin: accepted %llu connections, %llu requests\n",
           (unsigned long long) po_accepted,
           (unsigned long long) po_requests);
    fflush(stdout);

#if (WEIR_HAVE_OPENSSL)
    for (i = 0; i < nls; i++) {
        /* the connections' SSLs hold references of their own */
        SSL_CTX_free(ls[i].ssl_ctx);
    }
#endif

    return 0;
}


/* recv() and send() alike, over TLS too: -1 with errno EAGAIN to wait */

ssize_t
po_io_recv(po_conn_t *c, u_char *buf, size_t size)
{
#if (WEIR_HAVE_OPENSSL)
    int  n, err;

    if (c->ssl != NULL) {
        n = SSL_read(c->ssl, buf, size > INT_MAX ? INT_MAX : (int) size);
        if (n > 0) {
            return n;
        }

        err = SSL_get_error(c->ssl, n);
        ERR_clear_error();

        if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
            errno = EAGAIN;
            return -1;
        }

        if (err == SSL_ERROR_ZERO_RETURN) {
            return 0;
        }

        errno = EIO;
        return -1;
    }
#endif

    return recv(c->fd, buf, size, 0);
}


ssize_t
po_io_send(po_conn_t *c, const u_char *buf, size_t size)
{
#if (WEIR_HAVE_OPENSSL)
    int  n, err;

    if (c->ssl != NULL) {
        n = SSL_write(c->ssl, buf, size > INT_MAX ? INT_MAX : (int) size);
        if (n > 0) {
            return n;
        }

        err = SSL_get_error(c->ssl, n);
        ERR_clear_error();

        errno = (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE)
                ? EAGAIN : EIO;
        return -1;
    }
#endif

    return send(c->fd, buf, size, MSG_NOSIGNAL);
}


#if (WEIR_HAVE_OPENSSL)

/* ALPN: h2 when offered (and built with nghttp2), else http/1.1 */

static int
po_alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned int inlen, void *arg)
{
    unsigned int  i;

    (void) ssl;
    (void) arg;

#if (WEIR_HAVE_NGHTTP2)
    for (i = 0; i < inlen && i + 1 + in[i] <= inlen; i += 1 + in[i]) {
        if (in[i] == 2 && memcmp(&in[i + 1], "h2", 2) == 0) {
            *out = &in[i + 1];
            *outlen = 2;
            return SSL_TLSEXT_ERR_OK;
        }
    }
#endif

    for (i = 0; i < inlen && i + 1 + in[i] <= inlen; i += 1 + in[i]) {
        if (in[i] == 8 && memcmp(&in[i + 1], "http/1.1", 8) == 0) {
            *out = &in[i + 1];
            *outlen = 8;
            return SSL_TLSEXT_ERR_OK;
        }
    }

    return SSL_TLSEXT_ERR_NOACK;
}

#endif


static int
po_tls_listener(po_listener_t *ls, const char *cert, const char *key)
{
#if (WEIR_HAVE_OPENSSL)
    SSL_CTX  *ctx;

    ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) {
        fprintf(stderr, "weir-probe origin: SSL_CTX_new() failed\n");
        return PO_ERROR;
    }

    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE
                          | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);

    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1
        || SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1
        || SSL_CTX_check_private_key(ctx) != 1)
    {
        fprintf(stderr, "weir-probe origin: --tls %s %s: cannot load the "
                "certificate and its key\n", cert, key);
        SSL_CTX_free(ctx);
        return PO_ERROR;
    }

    SSL_CTX_set_alpn_select_cb(ctx, po_alpn_select, NULL);
    ls->ssl_ctx = ctx;

    return PO_OK;
#else
    (void) ls;
    (void) cert;
    (void) key;

    fprintf(stderr, "weir-probe origin: --tls: built without OpenSSL\n");

    return PO_ERROR;
#endif
}


/*
 * Before HTTP/1: the TLS handshake on a --tls listener (ALPN h2 makes the
 * connection HTTP/2), or on a plain one a look at the first bytes, which
 * are HTTP/2 when they are the client preface (h2c, prior knowledge).
 * PO_OK when the connection is ready for HTTP/1, PO_DONE when it went to
 * HTTP/2, PO_AGAIN to wait, PO_ERROR to close.
 */

#define PO_DONE  -3

static int
po_preface(po_conn_t *c)
{
    int                   rc;
    size_t                n;
    static const char     preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
#if (WEIR_HAVE_OPENSSL)
    int                   err;
    unsigned int          alen;
    const unsigned char  *alpn;

    if (c->ssl != NULL && !c->tls_done) {
        rc = SSL_do_handshake(c->ssl);

        if (rc != 1) {
            err = SSL_get_error(c->ssl, rc);
            ERR_clear_error();

            return err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE
                   ? PO_AGAIN : PO_ERROR;
        }

        c->tls_done = 1;
        c->sniffed = 1;

        SSL_get0_alpn_selected(c->ssl, &alpn, &alen);

#if (WEIR_HAVE_NGHTTP2)
        if (alen == 2 && memcmp(alpn, "h2", 2) == 0) {
            return po_h2_init(c) == PO_OK ? PO_DONE : PO_ERROR;
        }
#else
        (void) alpn;
        (void) alen;
#endif

        return PO_OK;
    }
#endif

    while (!c->sniffed) {
        n = c->ilast - c->ipos;

        if (n >= sizeof(preface) - 1) {
            c->sniffed = 1;

            if (memcmp(c->in + c->ipos, preface, sizeof(preface) - 1) != 0) {
                return PO_OK;
            }

#if (WEIR_HAVE_NGHTTP2)
            return po_h2_init(c) == PO_OK ? PO_DONE : PO_ERROR;
#else
            return PO_ERROR;
#endif
        }

        if (memcmp(c->in + c->ipos, preface, n) != 0) {
            c->sniffed = 1;
            return PO_OK;
        }

        if (!c->readable) {
            return PO_AGAIN;
        }

        rc = po_recv(c);

        if (rc == PO_ERROR) {
            return PO_ERROR;
        }
    }

    return PO_OK;
}


static void
po_usage(void)
{
    printf("usage: weir-probe origin -l ADDR:PORT [--tls CERT KEY] "
           "[-l ADDR:PORT ...]\n"
           "  --tls CERT KEY  the -l before it is TLS (ALPN h2 or "
           "http/1.1)\n"
           "  HTTP/2: over TLS by ALPN, on a plain listener by the "
           "preface (h2c)\n"
           "  paths: /tiny /size/N /chunked/N /delay/MS/<path> /echo "
           "/early /stats /ws\n"
           "  prints the accepted connections on SIGTERM or SIGINT\n");
}


static void
po_accept(po_listener_t *ls)
{
    int                  fd, one;
    po_conn_t           *c;
    struct epoll_event   ee;

    for ( ;; ) {
        fd = accept4(ls->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd == -1) {
            if (errno == EINTR || errno == ECONNABORTED) {
                continue;
            }

            /* EAGAIN, or out of descriptors: try at the next event */
            return;
        }

        c = po_free;

        if (c != NULL) {
            po_free = c->next_free;

        } else {
            c = calloc(1, sizeof(po_conn_t));
            if (c == NULL) {
                close(fd);
                continue;
            }

            c->kind = PO_CONN;
            c->next_all = po_all;
            po_all = c;
            c->in = malloc(PO_IN_SIZE);
            c->out = malloc(PO_OUT_SIZE);

            if (c->in == NULL || c->out == NULL) {
                /* kept on po_all, without buffers: never handed out */
                free(c->in);
                free(c->out);
                c->in = NULL;
                c->out = NULL;
                close(fd);
                continue;
            }
        }

        c->fd = fd;
        c->serial = ++po_serial;
        c->ipos = 0;
        c->ilast = 0;
        c->opos = 0;
        c->olast = 0;
        c->have_head = 0;
        c->timer = 0;
        c->readable = 1;
        c->eof = 0;
        c->ws = 0;
        c->ws_closing = 0;
        c->sniffed = 0;
        c->tls_done = 0;
        c->h2 = NULL;
        c->ssl = NULL;

#if (WEIR_HAVE_OPENSSL)
        if (ls->ssl_ctx != NULL) {
            c->ssl = SSL_new(ls->ssl_ctx);

            if (c->ssl == NULL || SSL_set_fd(c->ssl, fd) != 1) {
                ERR_clear_error();
                SSL_free(c->ssl);
                c->ssl = NULL;
                close(fd);
                c->next_free = po_free;
                po_free = c;
                continue;
            }

            SSL_set_accept_state(c->ssl);
        }
#endif

        one = 1;
        (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

        ee.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
        ee.data.ptr = c;

        if (epoll_ctl(po_ep, EPOLL_CTL_ADD, fd, &ee) == -1) {
            close(fd);
            c->next_free = po_free;
            po_free = c;
            continue;
        }

        po_accepted++;
        po_open++;

        po_handle(c);
    }
}


void
po_close(po_conn_t *c)
{
#if (WEIR_HAVE_NGHTTP2)
    if (c->h2 != NULL) {
        po_h2_free(c);
    }
#endif

#if (WEIR_HAVE_OPENSSL)
    if (c->ssl != NULL) {
        SSL_free(c->ssl);
        c->ssl = NULL;
    }
#endif

    close(c->fd);
    c->fd = -1;
    c->serial = ++po_serial;
    c->next_free = po_free;
    po_free = c;
    po_open--;
}


/* runs one connection until every step would block or wait for a timer */

static void
po_handle(po_conn_t *c)
{
    int       progress, rc;
    size_t    need;
    ssize_t   n;
    uint64_t  now;

#if (WEIR_HAVE_NGHTTP2)
    if (c->h2 != NULL) {
        po_h2_handle(c);
        return;
    }
#endif

    if (c->ws) {
        po_ws_handle(c);
        return;
    }

    if (!c->sniffed) {
        rc = po_preface(c);

        if (rc == PO_ERROR) {
            po_close(c);
            return;
        }

        if (rc == PO_AGAIN) {
            return;
        }

#if (WEIR_HAVE_NGHTTP2)
        if (rc == PO_DONE) {
            po_h2_handle(c);
            return;
        }
#endif
    }

    for ( ;; ) {
        progress = 0;

        if (!c->have_head) {
            rc = po_parse_head(c);

            if (rc == PO_ERROR) {
                po_close(c);
                return;
            }

            if (rc == PO_OK) {
                progress = 1;
            }
        }

        if (c->have_head) {
            if (!c->started && !c->timer) {
                now = probe_now();

                if (c->start_at > now) {
                    po_timer_add(c, c->start_at);

                    if (!c->timer) {
                        progress = 1;       /* no timer: no delay */
                    }

                } else if (c->route != PO_EARLY_RESP
                           || c->body_read >= PO_EARLY
                           || c->bstate == PO_B_DONE)
                {
                    po_start(c);
                    progress = 1;

                    if (c->route == PO_WS) {
                        /* frames may follow the head in c->in already */
                        c->ws = 1;
                        c->wstate = PO_W_HEAD;
                        c->ws_frag = 0;
                        po_ws_handle(c);
                        return;
                    }
                }
            }

            rc = po_body(c);

            if (rc == PO_ERROR) {
                po_close(c);
                return;
            }

            if (rc == PO_OK) {
                progress = 1;
            }

            if (c->started && !c->resp_done) {
                po_fill(c);
            }
        }

        if (c->olast > c->opos) {
            n = po_io_send(c, c->out + c->opos, c->olast - c->opos);

            if (n > 0) {
                c->opos += (size_t) n;
                progress = 1;

                if (c->opos == c->olast) {
                    c->opos = 0;
                    c->olast = 0;
                }

            } else if (n == -1 && errno != EAGAIN && errno != EINTR) {
                po_close(c);
                return;
            }
        }

        if (c->have_head && c->resp_done && c->olast == 0
            && c->bstate == PO_B_DONE)
        {
            if (!c->keepalive) {
                po_close(c);
                return;
            }

            c->have_head = 0;
            continue;
        }

        /* read when the head is incomplete or body bytes can go on */

        need = !c->have_head
               || (c->bstate != PO_B_DONE
                   && (c->route != PO_ECHO
                       || (c->started && PO_OUT_SIZE - c->olast > 64)));

        if (need && c->ipos == c->ilast) {
            c->ipos = 0;
            c->ilast = 0;
        }

        if (need && c->ilast == PO_IN_SIZE && c->ipos > 0) {
            memmove(c->in, c->in + c->ipos, c->ilast - c->ipos);
            c->ilast -= c->ipos;
            c->ipos = 0;
        }

        /*
         * a short read drained the socket: with edge-triggered events the
         * next bytes raise an event of their own, so no read is wasted on
         * EAGAIN after every request; but a FIN that came with the data
         * raises none, so with EPOLLRDHUP seen reads go on until recv()
         * returns 0
         */

        if (need && c->readable && c->ilast < PO_IN_SIZE) {
            rc = po_recv(c);

            if (rc == PO_ERROR) {
                po_close(c);
                return;
            }

            progress |= (rc == PO_OK);
        }

        if (!progress) {
            return;
        }
    }
}


/*
 * Reads what fits into c->in: PO_OK when it read something, PO_AGAIN if
 * not, PO_ERROR at the end of the stream or on an error (the caller
 * closes). A short read drained the socket (see po_handle).
 */

int
po_recv(po_conn_t *c)
{
    ssize_t  n;

    n = po_io_recv(c, c->in + c->ilast, PO_IN_SIZE - c->ilast);

    if (n > 0) {
        /* over TLS a short read says nothing of the socket */
        if ((size_t) n < PO_IN_SIZE - c->ilast && !c->eof && c->ssl == NULL)
        {
            c->readable = 0;
        }

        c->ilast += (size_t) n;
        return PO_OK;
    }

    if (n == 0 || errno != EINTR) {
        if (n == -1 && errno == EAGAIN) {
            c->readable = 0;
            return PO_AGAIN;
        }

        return PO_ERROR;
    }

    return PO_AGAIN;
}


/*
 * A WebSocket connection after the 101: frames from c->in are echoed to
 * c->out as they stream in, so a payload of any length needs no more
 * than the two buffers.
 */

static void
po_ws_handle(po_conn_t *c)
{
    int      progress, rc;
    ssize_t  n;

    for ( ;; ) {
        progress = 0;

        if (!c->ws_closing) {
            rc = po_ws_frames(c);

            if (rc == PO_ERROR) {
                po_close(c);
                return;
            }

            if (rc == PO_OK) {
                progress = 1;
            }
        }

        if (c->olast > c->opos) {
            n = po_io_send(c, c->out + c->opos, c->olast - c->opos);

            if (n > 0) {
                c->opos += (size_t) n;
                progress = 1;

                if (c->opos == c->olast) {
                    c->opos = 0;
                    c->olast = 0;
                }

            } else if (n == -1 && errno != EAGAIN && errno != EINTR) {
                po_close(c);
                return;
            }
        }

        if (c->ws_closing) {
            if (c->olast == 0) {
                /* the close frame is out: the server closes first */
                po_close(c);
                return;
            }

            if (!progress) {
                return;
            }

            continue;
        }

        if (c->ipos == c->ilast) {
            c->ipos = 0;
            c->ilast = 0;
        }

        if (c->ilast == PO_IN_SIZE && c->ipos > 0) {
            memmove(c->in, c->in + c->ipos, c->ilast - c->ipos);
            c->ilast -= c->ipos;
            c->ipos = 0;
        }

        if (c->readable && c->ilast < PO_IN_SIZE) {
            rc = po_recv(c);

            if (rc == PO_ERROR) {
                po_close(c);
                return;
            }

            progress |= (rc == PO_OK);
        }

        if (!progress) {
            return;
        }
    }
}


/*
 * Echoes frames from c->in to c->out: each frame goes back unmasked with
 * its FIN bit, opcode and length (a ping as a pong), so a fragmented
 * message comes back fragmented alike. A close is echoed, then the
 * connection closes. A frame breaking RFC 6455 closes it at once.
 * PO_OK when it moved anything, PO_AGAIN if not, PO_ERROR on a bad frame.
 */

static int
po_ws_frames(po_conn_t *c)
{
    int        progress, i;
    u_char    *p, *o, op, fin;
    size_t     avail, room, take, hlen, k, m;
    uint64_t   len;

    progress = 0;

    for ( ;; ) {
        p = c->in + c->ipos;
        avail = c->ilast - c->ipos;
        room = PO_OUT_SIZE - c->olast;

        if (c->wstate == PO_W_HEAD) {
            if (avail < 2) {
                return progress ? PO_OK : PO_AGAIN;
            }

            fin = p[0] & 0x80;
            op = p[0] & 0x0f;
            len = p[1] & 0x7f;
            hlen = 2 + (len == 126 ? 2 : len == 127 ? 8 : 0) + 4;

            if ((p[0] & 0x70) != 0          /* RSV bits: no extension */
                || (p[1] & 0x80) == 0       /* a client masks every frame */
                || (op > 2 && op < 8) || op > 10
                || (op >= 8 && (!fin || len > 125))
                || (op == 0 && !c->ws_frag)
                || ((op == 1 || op == 2) && c->ws_frag))
            {
                return PO_ERROR;
            }

            if (avail < hlen) {
                return progress ? PO_OK : PO_AGAIN;
            }

            if (room < 14) {
                return progress ? PO_OK : PO_AGAIN;
            }

            if (len == 126) {
                len = (uint64_t) p[2] << 8 | p[3];

            } else if (len == 127) {
                len = 0;
                for (i = 0; i < 8; i++) {
                    len = len << 8 | p[2 + i];
                }

                if (len >> 63) {
                    return PO_ERROR;
                }
            }

            memcpy(c->mask, p + hlen - 4, 4);
            c->ws_mpos = 0;
            c->wrest = (int64_t) len;
            c->ipos += hlen;

            if (op < 8) {
                c->ws_frag = !fin;
            }

            /* the echo's head: unmasked, a ping answered by a pong */
            o = c->out + c->olast;
            o[0] = (u_char) (fin | (op == 9 ? 10 : op));

            if (len < 126) {
                o[1] = (u_char) len;
                c->olast += 2;

            } else if (len < 65536) {
                o[1] = 126;
                o[2] = (u_char) (len >> 8);
                o[3] = (u_char) len;
                c->olast += 4;

            } else {
                o[1] = 127;
                for (i = 0; i < 8; i++) {
                    o[2 + i] = (u_char) (len >> (56 - 8 * i));
                }
                c->olast += 10;
            }

            c->wstate = PO_W_DATA;
            progress = 1;

            /* a close is echoed whole, then the connection closes */
            c->ws_close = op == 8;

            if (c->wrest == 0) {
                c->wstate = PO_W_HEAD;

                if (c->ws_close) {
                    c->ws_closing = 1;
                    return PO_OK;
                }
            }

            continue;
        }

        /* PO_W_DATA: unmask what is here into the room there is */

        take = avail < room ? avail : room;
        if ((int64_t) take > c->wrest) {
            take = (size_t) c->wrest;
        }

        if (take == 0) {
            return progress ? PO_OK : PO_AGAIN;
        }

        o = c->out + c->olast;
        m = c->ws_mpos;

        for (k = 0; k < take; k++) {
            o[k] = p[k] ^ c->mask[(m + k) & 3];
        }

        c->ws_mpos = (m + take) & 3;
        c->olast += take;
        c->ipos += take;
        c->wrest -= (int64_t) take;
        progress = 1;

        if (c->wrest == 0) {
            c->wstate = PO_W_HEAD;

            if (c->ws_close) {
                c->ws_closing = 1;
                return PO_OK;
            }
        }
    }
}


/* the request head in c->in: PO_OK when one was taken, PO_AGAIN if none */

static int
po_parse_head(po_conn_t *c)
{
    int        http10, close, keepalive, chunked, has_length;
    int        upgrade, conn_upgrade, version13;
    char      *e, path[256];
    u_char    *p, *end, *eol, *sp, *uri, *colon, *v;
    size_t     ulen;
    int64_t    length;
    uint64_t   delay;

    p = c->in + c->ipos;
    end = probe_head_end(p, c->ilast - c->ipos);

    if (end == NULL) {
        return (c->ilast == PO_IN_SIZE && c->ipos == 0) ? PO_ERROR
                                                         : PO_AGAIN;
    }

    end += 4;
    eol = probe_crlf(p, (size_t) (end - p));

    sp = memchr(p, ' ', (size_t) (eol - p));
    if (sp == NULL) {
        return PO_ERROR;
    }

    uri = sp + 1;
    sp = memchr(uri, ' ', (size_t) (eol - uri));
    if (sp == NULL || eol - sp != 9 || memcmp(sp + 1, "HTTP/1.", 7) != 0) {
        return PO_ERROR;
    }

    http10 = sp[8] == '0';
    ulen = (size_t) (sp - uri);
    if (ulen >= sizeof(path)) {
        ulen = sizeof(path) - 1;
    }

    memcpy(path, uri, ulen);
    path[ulen] = '\0';

    close = 0;
    keepalive = 0;
    chunked = 0;
    has_length = 0;
    length = 0;
    upgrade = 0;
    conn_upgrade = 0;
    version13 = 0;
    c->accept[0] = '\0';

    for (p = eol + 2; p < end - 2; p = eol + 2) {
        eol = probe_crlf(p, (size_t) (end - p));

        colon = memchr(p, ':', (size_t) (eol - p));
        if (colon == NULL) {
            return PO_ERROR;
        }

        for (v = colon + 1; v < eol && (*v == ' ' || *v == '\t'); v++) {
            /* void */
        }

        if (probe_h1_header(p, colon, "content-length")) {
            errno = 0;
            length = strtoll((char *) v, &e, 10);
            if (errno || (u_char *) e == v || length < 0) {
                return PO_ERROR;
            }
            has_length = 1;

        } else if (probe_h1_header(p, colon, "transfer-encoding")) {
            chunked = probe_h1_value_has(v, eol, "chunked");

        } else if (probe_h1_header(p, colon, "connection")) {
            close = probe_h1_value_has(v, eol, "close");
            keepalive = probe_h1_value_has(v, eol, "keep-alive");
            conn_upgrade = probe_h1_value_has(v, eol, "upgrade");

        } else if (probe_h1_header(p, colon, "upgrade")) {
            upgrade = probe_h1_value_has(v, eol, "websocket");

        } else if (probe_h1_header(p, colon, "sec-websocket-version")) {
            version13 = eol - v >= 2 && v[0] == '1' && v[1] == '3';

        } else if (probe_h1_header(p, colon, "sec-websocket-key")) {
            for (e = (char *) eol;
                 (u_char *) e > v && (e[-1] == ' ' || e[-1] == '\t');
                 e--)
            {
                /* void */
            }

            if ((u_char *) e - v == 24) {
                probe_ws_accept(v, 24, c->accept);
            }
        }
    }

    c->ipos = (size_t) (end - c->in);
    c->have_head = 1;
    c->http10 = http10;
    c->keepalive = http10 ? keepalive && !close : !close;
    c->started = 0;
    c->resp_done = 0;
    c->resp_chunked = 0;
    c->body_read = 0;
    c->start_at = 0;
    c->rest = 0;

    if (chunked) {
        c->bstate = PO_B_SIZE;

    } else if (has_length && length > 0) {
        c->bstate = PO_B_LENGTH;
        c->brest = length;

    } else {
        c->bstate = PO_B_DONE;
        c->brest = 0;
    }

    po_requests++;

    /* /delay/MS/<path>: MS first, then <path> ("/tiny" when empty) */

    uri = (u_char *) path;

    if (strncmp(path, "/delay/", 7) == 0) {
        delay = strtoull(path + 7, &e, 10);
        if (delay > 3600000) {
            delay = 3600000;
        }

        c->start_at = probe_now() + delay * PROBE_NS_PER_MS;
        uri = (u_char *) (*e == '/' && e[1] != '\0' ? e : "/tiny");
    }

    e = strchr((char *) uri, '?');
    if (e != NULL) {
        *e = '\0';
    }

    if (strcmp((char *) uri, "/tiny") == 0) {
        c->route = PO_TINY;

    } else if (strncmp((char *) uri, "/size/", 6) == 0
               || strncmp((char *) uri, "/chunked/", 9) == 0)
    {
        c->route = uri[1] == 's' ? PO_SIZE : PO_CHUNKED;
        v = uri + (uri[1] == 's' ? 6 : 9);
        errno = 0;
        length = strtoll((char *) v, &e, 10);

        if (errno || (u_char *) e == v || *e != '\0' || length < 0) {
            c->route = PO_NOT_FOUND;
        }

        c->rest = length;

    } else if (strcmp((char *) uri, "/echo") == 0) {
        c->route = PO_ECHO;
        c->resp_chunked = chunked;
        c->rest = chunked ? 0 : length;

    } else if (strcmp((char *) uri, "/early") == 0) {
        c->route = PO_EARLY_RESP;

    } else if (strcmp((char *) uri, "/stats") == 0) {
        c->route = PO_STATS;

    } else if (strcmp((char *) uri, "/ws") == 0) {
        c->route = upgrade && conn_upgrade && version13 && c->accept[0]
                   && !http10 && c->bstate == PO_B_DONE
                   ? PO_WS : PO_BAD_WS;

    } else {
        c->route = PO_NOT_FOUND;
    }

    return PO_OK;
}


/* the response head, and the whole of a small response */

static void
po_start(po_conn_t *c)
{
    int          n;
    char        *out;
    size_t       size;
    const char  *conn;

    c->started = 1;
    out = (char *) c->out + c->olast;
    size = PO_OUT_SIZE - c->olast;
    conn = !c->keepalive ? "Connection: close\r\n"
           : c->http10 ? "Connection: keep-alive\r\n" : "";

    switch (c->route) {

    case PO_TINY:
        if (*conn == '\0' && size >= sizeof(po_tiny_response) - 1) {
            /* the benchmarks' hot path: no formatting */
            n = sizeof(po_tiny_response) - 1;
            memcpy(out, po_tiny_response, (size_t) n);
            c->resp_done = 1;
            break;
        }

        n = snprintf(out, size, "HTTP/1.1 200 OK\r\nServer: weir-probe\r\n"
                     "Content-Type: text/plain\r\nContent-Length: %zu\r\n"
                     "%s\r\n%s", sizeof(po_tiny) - 1, conn, po_tiny);
        c->resp_done = 1;
        break;

    case PO_SIZE:
    case PO_CHUNKED:
    case PO_ECHO:
        if (c->route == PO_CHUNKED || c->resp_chunked) {
            c->resp_chunked = 1;
            n = snprintf(out, size, "HTTP/1.1 200 OK\r\nServer: weir-probe"
                         "\r\nContent-Type: application/octet-stream\r\n"
                         "Transfer-Encoding: chunked\r\n%s\r\n", conn);

        } else {
            n = snprintf(out, size, "HTTP/1.1 200 OK\r\nServer: weir-probe"
                         "\r\nContent-Type: application/octet-stream\r\n"
                         "Content-Length: %lld\r\n%s\r\n",
                         (long long) c->rest, conn);
        }
        break;

    case PO_EARLY_RESP:
        n = snprintf(out, size, "HTTP/1.1 200 OK\r\nServer: weir-probe\r\n"
                     "Content-Length: 6\r\n%s\r\nearly\n", conn);
        c->resp_done = 1;
        break;

    case PO_STATS:
        n = snprintf(out, size, "HTTP/1.1 200 OK\r\nServer: weir-probe\r\n"
                     "Content-Type: text/plain\r\nContent-Length: %d\r\n"
                     "%s\r\n",
                     snprintf(NULL, 0, "connections %llu\nrequests %llu\n"
                              "open %llu\n",
                              (unsigned long long) po_accepted,
                              (unsigned long long) po_requests,
                              (unsigned long long) po_open),
                     conn);
        if (n > 0 && (size_t) n < size) {
            n += snprintf(out + n, size - (size_t) n,
                          "connections %llu\nrequests %llu\nopen %llu\n",
                          (unsigned long long) po_accepted,
                          (unsigned long long) po_requests,
                          (unsigned long long) po_open);
        }
        c->resp_done = 1;
        break;

    case PO_WS:
        n = snprintf(out, size, "HTTP/1.1 101 Switching Protocols\r\n"
                     "Server: weir-probe\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n"
                     "\r\n", c->accept);
        c->resp_done = 1;
        break;

    case PO_BAD_WS:
        n = snprintf(out, size, "HTTP/1.1 400 Bad Request\r\nServer: "
                     "weir-probe\r\nContent-Length: 24\r\n%s\r\n"
                     "not a WebSocket upgrade\n", conn);
        c->resp_done = 1;
        break;

    default:
        n = snprintf(out, size, "HTTP/1.1 404 Not Found\r\nServer: "
                     "weir-probe\r\nContent-Length: 10\r\n%s\r\n"
                     "not found\n", conn);
        c->resp_done = 1;
        break;
    }

    /* the buffer is empty at the start of a response: all of it fits */
    if (n > 0 && (size_t) n < size) {
        c->olast += (size_t) n;
    }
}


/* generated bodies (/size, /chunked) into the output buffer */

static void
po_fill(po_conn_t *c)
{
    int      n;
    size_t   take, room;

    if (c->route == PO_ECHO) {
        if (c->bstate == PO_B_DONE) {
            if (c->resp_chunked) {
                if (PO_OUT_SIZE - c->olast < 5) {
                    return;
                }

                memcpy(c->out + c->olast, "0\r\n\r\n", 5);
                c->olast += 5;
            }

            c->resp_done = 1;
        }

        return;
    }

    for ( ;; ) {
        room = PO_OUT_SIZE - c->olast;

        if (c->rest == 0) {
            if (c->resp_chunked) {
                if (room < 5) {
                    return;
                }

                memcpy(c->out + c->olast, "0\r\n\r\n", 5);
                c->olast += 5;
            }

            c->resp_done = 1;
            return;
        }

        if (c->resp_chunked) {
            if (room < 32) {
                return;
            }

            take = (size_t) c->rest < PO_CHUNK ? (size_t) c->rest : PO_CHUNK;
            if (take > room - 16) {
                take = room - 16;
            }

            n = snprintf((char *) c->out + c->olast, room, "%zx\r\n", take);
            c->olast += (size_t) n;
            memcpy(c->out + c->olast, po_pattern, take);
            c->olast += take;
            memcpy(c->out + c->olast, "\r\n", 2);
            c->olast += 2;

        } else {
            if (room == 0) {
                return;
            }

            take = (size_t) c->rest < room ? (size_t) c->rest : room;
            if (take > PO_CHUNK) {
                take = PO_CHUNK;
            }

            memcpy(c->out + c->olast, po_pattern, take);
            c->olast += take;
        }

        c->rest -= (int64_t) take;
    }
}


/*
 * Consumes request body bytes in c->in: drained, or with /echo copied
 * to the output once the response head is out. PO_OK when it took any.
 */

static int
po_body(po_conn_t *c)
{
    int       n, progress;
    u_char   *p, *end, *eol;
    size_t    avail, take, room;
    int64_t   size;
    unsigned  d;

    progress = 0;

    for ( ;; ) {
        p = c->in + c->ipos;
        end = c->in + c->ilast;
        avail = (size_t) (end - p);

        switch (c->bstate) {

        case PO_B_LENGTH:
        case PO_B_DATA:
            if (avail == 0) {
                return progress ? PO_OK : PO_AGAIN;
            }

            take = (int64_t) avail < c->brest ? avail : (size_t) c->brest;

            if (c->route == PO_ECHO) {
                if (!c->started) {
                    return progress ? PO_OK : PO_AGAIN;
                }

                room = PO_OUT_SIZE - c->olast;
                room = room > 16 ? room - 16 : 0;
                take = take < room ? take : room;

                if (take == 0) {
                    return progress ? PO_OK : PO_AGAIN;
                }

                if (c->resp_chunked) {
                    n = snprintf((char *) c->out + c->olast, 16, "%zx\r\n",
                                 take);
                    c->olast += (size_t) n;
                }

                memcpy(c->out + c->olast, p, take);
                c->olast += take;

                if (c->resp_chunked) {
                    memcpy(c->out + c->olast, "\r\n", 2);
                    c->olast += 2;
                }
            }

            c->ipos += take;
            c->brest -= (int64_t) take;
            c->body_read += take;
            progress = 1;

            if (c->brest == 0) {
                c->bstate = c->bstate == PO_B_LENGTH ? PO_B_DONE : PO_B_CRLF;
            }

            break;

        case PO_B_SIZE:
            eol = probe_crlf(p, avail);
            if (eol == NULL) {
                if (avail > 1024) {
                    return PO_ERROR;
                }

                return progress ? PO_OK : PO_AGAIN;
            }

            size = 0;
            for (d = 0; p + d < eol; d++) {
                if (p[d] >= '0' && p[d] <= '9') {
                    size = size * 16 + (p[d] - '0');

                } else if ((p[d] | 0x20) >= 'a' && (p[d] | 0x20) <= 'f') {
                    size = size * 16 + ((p[d] | 0x20) - 'a' + 10);

                } else if (p[d] == ';' || p[d] == ' ' || p[d] == '\t') {
                    break;

                } else {
                    return PO_ERROR;
                }

                if (size > ((int64_t) 1 << 48)) {
                    return PO_ERROR;
                }
            }

            if (d == 0) {
                return PO_ERROR;
            }

            c->ipos += (size_t) (eol + 2 - p);
            c->brest = size;
            c->bstate = size ? PO_B_DATA : PO_B_TRAILER;
            progress = 1;
            break;

        case PO_B_CRLF:
            if (avail < 2) {
                return progress ? PO_OK : PO_AGAIN;
            }

            if (p[0] != '\r' || p[1] != '\n') {
                return PO_ERROR;
            }

            c->ipos += 2;
            c->bstate = PO_B_SIZE;
            progress = 1;
            break;

        case PO_B_TRAILER:
            eol = probe_crlf(p, avail);
            if (eol == NULL) {
                return progress ? PO_OK : PO_AGAIN;
            }

            c->ipos += (size_t) (eol + 2 - p);
            if (eol == p) {
                c->bstate = PO_B_DONE;
            }
            progress = 1;
            break;

        default:
            return progress ? PO_OK : PO_AGAIN;
        }
    }
}


/* timers: a binary min-heap; a closed connection's entries go stale */

void
po_timer_add(po_conn_t *c, uint64_t at)
{
    size_t       i, parent, size;
    po_timer_t  *t, tmp;

    if (po_ntimers == po_timers_size) {
        size = po_timers_size ? po_timers_size * 2 : 256;
        t = realloc(po_timers, size * sizeof(po_timer_t));
        if (t == NULL) {
            /* no timer: answer without the delay rather than never */
            c->start_at = 0;
            return;
        }

        po_timers = t;
        po_timers_size = size;
    }

    i = po_ntimers++;
    po_timers[i].at = at;
    po_timers[i].c = c;
    po_timers[i].serial = c->serial;
    c->timer = 1;

    while (i > 0) {
        parent = (i - 1) / 2;
        if (po_timers[parent].at <= po_timers[i].at) {
            break;
        }

        tmp = po_timers[parent];
        po_timers[parent] = po_timers[i];
        po_timers[i] = tmp;
        i = parent;
    }
}


static void
po_tfd_arm(uint64_t at)
{
    struct itimerspec  its;

    memset(&its, 0, sizeof(its));
    its.it_value.tv_sec = (time_t) (at / PROBE_NS_PER_SEC);
    its.it_value.tv_nsec = (long) (at % PROBE_NS_PER_SEC);

    if (timerfd_settime(po_tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0) {
        po_tfd_at = at;
    }
}


static void
po_tfd_drain(void)
{
    uint64_t  expirations;

    /* the count is not needed; reading it rearms the edge */
    (void) !read(po_tfd, &expirations, sizeof(expirations));
    po_tfd_at = 0;
}


static po_timer_t *
po_timer_min(void)
{
    return po_ntimers ? &po_timers[0] : NULL;
}


static void
po_timer_pop(void)
{
    size_t      i, l, r, m;
    po_timer_t  tmp;

    po_timers[0] = po_timers[--po_ntimers];
    i = 0;

    for ( ;; ) {
        l = 2 * i + 1;
        r = l + 1;
        m = i;

        if (l < po_ntimers && po_timers[l].at < po_timers[m].at) {
            m = l;
        }

        if (r < po_ntimers && po_timers[r].at < po_timers[m].at) {
            m = r;
        }

        if (m == i) {
            return;
        }

        tmp = po_timers[m];
        po_timers[m] = po_timers[i];
        po_timers[i] = tmp;
        i = m;
    }
}
