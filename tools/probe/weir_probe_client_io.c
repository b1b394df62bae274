/*
 * weir-probe client, the byte movers (probe_io_t): plain TCP and TLS,
 * each a handshake, a recv, a send and a close over a connection's fd.
 * The protocols above them (weir_probe_client.c, weir_probe_client_h2.c)
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

static SSL_CTX  *probe_ssl_ctx;
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

/* TLS: no certificate checks, the probe measures, it does not trust */

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

    SSL_CTX_set_verify(probe_ssl_ctx, SSL_VERIFY_NONE, NULL);
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
    int   rc, err;
    SSL  *ssl;

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

        if (c->url->sni[0] != '\0') {
            (void) SSL_set_tlsext_host_name(ssl, c->url->sni);
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

#endif
