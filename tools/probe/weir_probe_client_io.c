/*
 * weir-probe client, the byte movers (probe_io_t): plain TCP, TLS, and
 * TLS inside a CONNECT tunnel through an HTTP proxy (--proxy), each a
 * handshake, a recv, a send and a close over a connection's fd. The
 * protocols above them (weir_probe_client.c, weir_probe_client_h2.c)
 * pick one per URL and never touch the socket or the SSL themselves.
 */

#include "weir_config.h"
#include "weir_core.h"
#include "weir_probe.h"
#include "weir_probe_client.h"

#if (WEIR_HAVE_OPENSSL)
#include <openssl/ssl.h>
#include <openssl/err.h>
#endif


static ssize_t probe_plain_recv(probe_conn_t *c, u_char *buf, size_t size);
static ssize_t probe_plain_send(probe_conn_t *c, const u_char *buf,
    size_t size);
static int probe_plain_handshake(probe_conn_t *c);
static void probe_plain_close(probe_conn_t *c);

#if (WEIR_HAVE_OPENSSL)
static int probe_tls_handshake(probe_conn_t *c);
static ssize_t probe_tls_recv(probe_conn_t *c, u_char *buf, size_t size);
static ssize_t probe_tls_send(probe_conn_t *c, const u_char *buf,
    size_t size);
static void probe_tls_close(probe_conn_t *c);
static int probe_proxy_handshake(probe_conn_t *c);
static int probe_proxy_connect(probe_conn_t *c);
static int probe_proxy_answer(probe_conn_t *c, u_char *p, size_t len);
static void probe_proxy_record(probe_conn_t *c, int status,
    u_char *line, size_t len);
#endif


const probe_io_t  probe_plain_io = {
    "tcp",
    probe_plain_handshake,
    probe_plain_recv,
    probe_plain_send,
    probe_plain_close
};

#if (WEIR_HAVE_OPENSSL)
const probe_io_t  probe_tls_io = {
    "tls",
    probe_tls_handshake,
    probe_tls_recv,
    probe_tls_send,
    probe_tls_close
};

/* the same TLS, after the CONNECT: the handshake differs */
const probe_io_t  probe_proxy_tls_io = {
    "proxy+tls",
    probe_proxy_handshake,
    probe_tls_recv,
    probe_tls_send,
    probe_tls_close
};

static SSL_CTX   *probe_ssl_ctx;
static unsigned   probe_verify_said;
static unsigned   probe_proxy_said;
#endif


/* plain TCP */

static int
probe_plain_handshake(probe_conn_t *c)
{
    (void) c;

    return PROBE_OK;
}


static ssize_t
probe_plain_recv(probe_conn_t *c, u_char *buf, size_t size)
{
    ssize_t  n;

    n = recv(c->fd, buf, size, 0);

    if (n == -1) {
        return (errno == EAGAIN || errno == EINTR) ? PROBE_AGAIN
                                                   : PROBE_ERROR;
    }

    return n;
}


static ssize_t
probe_plain_send(probe_conn_t *c, const u_char *buf, size_t size)
{
    ssize_t  n;

    n = send(c->fd, buf, size, MSG_NOSIGNAL);

    if (n == -1) {
        return (errno == EAGAIN || errno == EINTR) ? PROBE_AGAIN
                                                   : PROBE_ERROR;
    }

    return n;
}


static void
probe_plain_close(probe_conn_t *c)
{
    close(c->fd);
}


#if (WEIR_HAVE_OPENSSL)

/*
 * TLS: no certificate checks (the probe measures, it does not trust),
 * unless --cacert names the CAs to trust: then the chain is verified and
 * the URL's host (a name or an address) must be in the certificate
 */

int
probe_tls_init(int h2)
{
    static const u_char  alpn[] = "\x08http/1.1";
    static const u_char  alpn_h2[] = "\x02h2";

    if (probe_ssl_ctx != NULL) {
        return PROBE_OK;            /* the first TLS URL made it */
    }

    probe_ssl_ctx = SSL_CTX_new(TLS_client_method());
    if (probe_ssl_ctx == NULL) {
        fprintf(stderr, "weir-probe: SSL_CTX_new() failed\n");
        return PROBE_ERROR;
    }

    if (probe_conf.cacert != NULL) {
        if (SSL_CTX_load_verify_locations(probe_ssl_ctx, probe_conf.cacert,
                                          NULL)
            != 1)
        {
            fprintf(stderr, "weir-probe: --cacert %s: no certificate "
                    "loaded from it\n", probe_conf.cacert);
            ERR_clear_error();
            return PROBE_ERROR;
        }

        SSL_CTX_set_verify(probe_ssl_ctx, SSL_VERIFY_PEER, NULL);

    } else {
        SSL_CTX_set_verify(probe_ssl_ctx, SSL_VERIFY_NONE, NULL);
    }

    SSL_CTX_set_mode(probe_ssl_ctx, SSL_MODE_ENABLE_PARTIAL_WRITE
                                    | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);

    if ((h2 ? SSL_CTX_set_alpn_protos(probe_ssl_ctx, alpn_h2,
                                      sizeof(alpn_h2) - 1)
            : SSL_CTX_set_alpn_protos(probe_ssl_ctx, alpn, sizeof(alpn) - 1))
        != 0)
    {
        fprintf(stderr, "weir-probe: SSL_CTX_set_alpn_protos() failed\n");
        return PROBE_ERROR;
    }

    return PROBE_OK;
}


static int
probe_tls_handshake(probe_conn_t *c)
{
    int              rc, err;
    SSL             *ssl;
    long             vr;
    const char      *name;
    struct in6_addr  addr;

    ssl = c->ssl;

    if (ssl == NULL) {
        ssl = SSL_new(probe_ssl_ctx);
        if (ssl == NULL) {
            return PROBE_ERROR;
        }

        c->ssl = ssl;

        if (SSL_set_fd(ssl, c->fd) != 1) {
            return PROBE_ERROR;
        }

        SSL_set_connect_state(ssl);

        name = c->vname != NULL ? c->vname : c->url->name;

        if (c->url->sni[0] != '\0') {
            (void) SSL_set_tlsext_host_name(ssl, c->vname != NULL
                                                 ? c->vname : c->url->sni);
        }

        if (probe_conf.cacert != NULL) {
            /*
             * the host check: an IP address against the iPAddress
             * names, a name against the DNS names (and the CN)
             */
            if (inet_pton(AF_INET, name, &addr) == 1
                || inet_pton(AF_INET6, name, &addr) == 1)
            {
                rc = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl),
                                                   name);

            } else {
                rc = SSL_set1_host(ssl, name);
            }

            if (rc != 1) {
                ERR_clear_error();
                return PROBE_ERROR;
            }
        }
    }

    rc = SSL_do_handshake(ssl);
    if (rc == 1) {
        return PROBE_OK;
    }

    err = SSL_get_error(ssl, rc);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        return PROBE_AGAIN;
    }

    ERR_clear_error();

    if (probe_conf.cacert != NULL && !probe_verify_said) {
        vr = SSL_get_verify_result(ssl);

        if (vr != X509_V_OK) {
            /* once: the figures count the rest */
            probe_verify_said = 1;
            fprintf(stderr, "weir-probe: %s: certificate verification "
                    "failed (%s): counted as connect errors\n",
                    c->url->text, X509_verify_cert_error_string(vr));
        }
    }

    return PROBE_ERROR;
}


static ssize_t
probe_tls_recv(probe_conn_t *c, u_char *buf, size_t size)
{
    int  n, err;

    n = SSL_read(c->ssl, buf, size > INT_MAX ? INT_MAX : (int) size);
    if (n > 0) {
        return n;
    }

    err = SSL_get_error(c->ssl, n);

    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        return PROBE_AGAIN;
    }

    if (err == SSL_ERROR_ZERO_RETURN) {
        return 0;
    }

    ERR_clear_error();

    /* a close without close_notify ends a read-until-close body too */
    return err == SSL_ERROR_SYSCALL || err == SSL_ERROR_SSL ? 0 : PROBE_ERROR;
}


static ssize_t
probe_tls_send(probe_conn_t *c, const u_char *buf, size_t size)
{
    int  n, err;

    n = SSL_write(c->ssl, buf, size > INT_MAX ? INT_MAX : (int) size);
    if (n > 0) {
        return n;
    }

    err = SSL_get_error(c->ssl, n);

    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        return PROBE_AGAIN;
    }

    ERR_clear_error();

    return PROBE_ERROR;
}


static void
probe_tls_close(probe_conn_t *c)
{
    if (c->ssl != NULL) {
        /* one try at close_notify; the socket closes regardless */
        (void) SSL_shutdown(c->ssl);
        ERR_clear_error();
        SSL_free(c->ssl);
        c->ssl = NULL;
    }

    close(c->fd);
}

/*
 * TLS through --proxy: CONNECT host:port to the proxy (the fd is
 * connected to it), its answer, then the TLS handshake with the origin
 * over the same socket. All of it is the connection's setup: it runs
 * under the connect's -T like the TCP connect and the TLS handshake.
 */

static int
probe_proxy_handshake(probe_conn_t *c)
{
    int  rc;

    if (!c->tunnel) {
        rc = probe_proxy_connect(c);
        if (rc != PROBE_OK) {
            return rc;
        }

        c->tunnel = 1;
        c->status = 0;              /* the response's, not the proxy's */
    }

    return probe_tls_handshake(c);
}


/*
 * Sends the CONNECT, then reads the answer's head with MSG_PEEK and
 * takes exactly the head off the socket: whatever the proxy sent after
 * a 2xx head (nothing, normally) stays in the socket for TLS to read.
 * Bytes peeked without the head's end in them are all head, so they are
 * taken (the socket is drained, as edge-triggered events want).
 */

static int
probe_proxy_connect(probe_conn_t *c)
{
    u_char       *p, *e, *line;
    size_t        from, take, len;
    ssize_t       n;
    probe_url_t  *u;

    u = c->url;
    line = c->vname != NULL ? c->vconnect : u->connect;
    len = c->vname != NULL ? c->vconnect_len : u->connect_len;

    while (c->proxy_sent < len) {
        n = send(c->fd, line + c->proxy_sent, len - c->proxy_sent,
                 MSG_NOSIGNAL);

        if (n == -1) {
            return (errno == EAGAIN || errno == EINTR) ? PROBE_AGAIN
                                                       : PROBE_ERROR;
        }

        c->proxy_sent += (size_t) n;
    }

    if (c->buf == NULL) {
        return PROBE_ERROR;
    }

    p = c->buf;

    for ( ;; ) {
        n = recv(c->fd, p + c->proxy_have, PROBE_PROXY_HEAD - c->proxy_have,
                 MSG_PEEK);

        if (n == -1) {
            if (errno == EAGAIN || errno == EINTR) {
                return PROBE_AGAIN;
            }

            probe_proxy_record(c, 0, NULL, 0);
            return PROBE_ERROR;
        }

        if (n == 0) {
            /* closed before (the end of) an answer */
            probe_proxy_record(c, 0, NULL, 0);
            return PROBE_ERROR;
        }

        /* the end of the head may straddle the bytes already taken */
        from = c->proxy_have > 3 ? c->proxy_have - 3 : 0;
        e = probe_head_end(p + from, c->proxy_have + (size_t) n - from);
        take = e != NULL ? (size_t) (e + 4 - p) - c->proxy_have : (size_t) n;

        n = recv(c->fd, p + c->proxy_have, take, 0);

        if (n != (ssize_t) take) {
            probe_proxy_record(c, 0, NULL, 0);
            return PROBE_ERROR;
        }

        c->proxy_have += take;

        if (e == NULL) {
            if (c->proxy_have == PROBE_PROXY_HEAD) {
                /* an answer too long */
                probe_proxy_record(c, 0, p, c->proxy_have);
                return PROBE_ERROR;
            }

            continue;
        }

        take = c->proxy_have;
        c->proxy_have = 0;

        if (probe_proxy_answer(c, p, take) == PROBE_AGAIN) {
            continue;                   /* an interim 1xx, the next head */
        }

        if (c->status / 100 != 2) {
            probe_proxy_record(c, c->status, p, take);
            return PROBE_ERROR;
        }

        probe_proxy_record(c, c->status, NULL, 0);    /* counts a 2xx */

        return PROBE_OK;
    }
}


/* the status of the answer's head in [p, p + len), into c->status */

static int
probe_proxy_answer(probe_conn_t *c, u_char *p, size_t len)
{
    if (len < 12 || memcmp(p, "HTTP/1.", 7) != 0
        || (p[7] != '0' && p[7] != '1') || p[8] != ' '
        || p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9'
        || p[11] < '0' || p[11] > '9')
    {
        c->status = 0;              /* not HTTP: a failure too */
        return PROBE_OK;
    }

    c->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');

    return c->status < 200 ? PROBE_AGAIN : PROBE_OK;
}


/*
 * Counts a CONNECT answer by status during the measured time (0: none,
 * or not HTTP); the first failure is said once on stderr, with the
 * answer's first line when there was one.
 */

static void
probe_proxy_record(probe_conn_t *c, int status, u_char *line,
    size_t len)
{
    int      i;
    u_char  *q;

    if (probe_now() >= probe_measure_from) {
        for (i = 0; i < PROBE_PROXY_CODES; i++) {
            if (probe_stats.proxy_count[i] == 0) {
                probe_stats.proxy_code[i] = status;
            }

            if (probe_stats.proxy_code[i] == status) {
                probe_stats.proxy_count[i]++;
                break;
            }
        }

        if (i == PROBE_PROXY_CODES) {
            probe_stats.proxy_other++;
        }
    }

    if (status / 100 == 2 || probe_proxy_said) {
        return;
    }

    probe_proxy_said = 1;

    /* the first line, if it is printable, at most 80 bytes of it */
    for (q = line; q != NULL && q < line + len && q < line + 80; q++) {
        if (*q < 0x20 || *q >= 0x7f) {
            break;
        }
    }

    if (line == NULL) {
        fprintf(stderr, "weir-probe: proxy %s closed CONNECT %s without "
                "an answer: counted as connect errors\n", probe_conf.proxy,
                c->url->authority);
        return;
    }

    fprintf(stderr, "weir-probe: proxy %s answered CONNECT %s with "
            "\"%.*s\"%s: counted as connect errors\n", probe_conf.proxy,
            c->url->authority, (int) (q - line), (char *) line,
            status == 0 ? " (no valid head)" : "");
}

#endif
