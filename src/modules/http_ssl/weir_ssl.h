#ifndef _WEIR_SSL_H_INCLUDED_
#define _WEIR_SSL_H_INCLUDED_

/*
 * TLS with OpenSSL 3, the library half of the ssl module: contexts,
 * certificates, the session cache shared by the workers, ticket keys,
 * and TLS on a weir_connection_t (handshake, recv, send, writev,
 * shutdown). Protocol-neutral: weir_http_ssl_module.c (termination) and
 * weir_http_proxy_ssl_module.c (TLS to origins) use it; the MITM and
 * HTTP/2 modules will too. Everything here is part of the ssl module's
 * addon (one .so when dynamic), so nothing outside the module may call
 * it directly: the HTTP core reaches the module through
 * weir_http_ssl_hooks_t, and a connection's TLS through c->ssl->ops.
 */

#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

/* protocol bits for weir_ssl_create (ssl_protocols) */
#define WEIR_SSL_TLSv1      0x0008
#define WEIR_SSL_TLSv1_1    0x0010
#define WEIR_SSL_TLSv1_2    0x0020
#define WEIR_SSL_TLSv1_3    0x0040
#define WEIR_SSL_DEFAULT_PROTOCOLS  (WEIR_SSL_TLSv1_2|WEIR_SSL_TLSv1_3)

typedef struct {
    SSL_CTX                     *ctx;
    weir_log_t                  *log;
    size_t                       buffer_size;   /* writev coalescing, 16k */
} weir_ssl_t;

/* weir_ssl_create_connection flags */
#define WEIR_SSL_CLIENT   0x01      /* we connect (origin side) */

/*
 * TLS state of one connection, in c->pool; c->ssl points at .base.
 * The module's own code may look inside; the core sees only .base.
 */
typedef struct {
    weir_ssl_connection_t        base;          /* first: c->ssl */
    SSL                         *connection;
    weir_int_t                   last;          /* last SSL_get_error */
    weir_buf_t                  *buf;           /* writev coalescing */
    size_t                       buffer_size;

    /* called when an asynchronous handshake ends (c->ssl->handshaked
     * tells how); set by the caller of weir_ssl_handshake */
    void                       (*handler)(weir_connection_t *c);
    /* the read/write handlers to put back after the handshake */
    weir_event_handler_pt        saved_read_handler;
    weir_event_handler_pt        saved_write_handler;

    void                        *data;          /* the user's (http
                                                   connection, upstream) */

    unsigned                     handshaked:1;
    unsigned                     handshake_rejected:1;
    unsigned                     renegotiation:1;
    unsigned                     buffer:1;
    unsigned                     no_wait_shutdown:1;
    unsigned                     no_send_shutdown:1;
    unsigned                     shutdown_without_free:1;
    /* a half close's close_notify is sealed but not yet written (the
     * socket was full): only then may SSL_shutdown be called again, as
     * once it is out, SSL_shutdown would read (and drop) the peer's
     * data waiting for its close_notify */
    unsigned                     shutdown_pending:1;
    unsigned                     handshake_buffer_set:1;
    unsigned                     sendfile:1;
    unsigned                     client:1;
    unsigned                     in_early:1;
    /* the last read wanted more from a drained socket: what OpenSSL
     * holds (read ahead) is only part of a record, and the next read
     * event brings the rest; see weir_ssl_pending_op */
    unsigned                     drained:1;
    /* a callback of the handshake waits for an asynchronous step (see
     * weir_ssl_handshake) */
    unsigned                     waiting:1;
} weir_ssl_conn_t;

#define weir_ssl_conn(c)  ((weir_ssl_conn_t *) (c)->ssl)

/* a certificate chain + key pair as loaded (several per server: RSA and
 * ECDSA side by side; OpenSSL picks by what the client supports) */

/* ---- contexts ------------------------------------------------------- */

/* once per process (OpenSSL init, ex_data indexes); WEIR_OK/WEIR_ERROR */
weir_int_t weir_ssl_init(weir_log_t *log);

/* indexes for SSL_get_ex_data / SSL_CTX_get_ex_data */
extern int  weir_ssl_connection_index;     /* SSL -> weir_connection_t */
extern int  weir_ssl_server_conf_index;    /* SSL_CTX -> user's conf */
extern int  weir_ssl_ticket_keys_index;    /* SSL_CTX -> key array */

/*
 * A new context (TLS_method), protocols a WEIR_SSL_* mask, data stored
 * at weir_ssl_server_conf_index; sets sane options (no compression, no
 * renegotiation, SSL_MODE_RELEASE_BUFFERS, partial writes allowed,
 * session id context). A pool cleanup on cf->pool frees it. Errors are
 * logged with weir_conf_log_error (file:line) and the OpenSSL reason.
 */
weir_int_t weir_ssl_create(weir_conf_t *cf, weir_ssl_t *ssl,
    weir_uint_t protocols, void *data);

/*
 * Loads certs[i] with keys[i] (PEM files; relative paths from the
 * prefix/conf dir as nginx: weir_conf_full_name), a chain in the same
 * file as the leaf. passwords: NULL, or the lines of ssl_password_file
 * tried in turn for encrypted keys. Several pairs: each is added
 * (SSL_CTX_use_certificate + use_PrivateKey per pair: OpenSSL keeps one
 * per key type, so RSA + ECDSA work side by side); a mismatched key is
 * "... key values mismatch" with file:line.
 */
weir_int_t weir_ssl_certificates(weir_conf_t *cf, weir_ssl_t *ssl,
    weir_array_t *certs, weir_array_t *keys, weir_array_t *passwords);
/* the lines of a password file (NULL on error, logged) */
weir_array_t *weir_ssl_read_password_file(weir_conf_t *cf,
    weir_str_t *file);

weir_int_t weir_ssl_ciphers(weir_conf_t *cf, weir_ssl_t *ssl,
    weir_str_t *ciphers, weir_uint_t prefer_server_ciphers);
/* "auto", or a colon-separated group list (SSL_CTX_set1_groups_list) */
weir_int_t weir_ssl_ecdh_curve(weir_conf_t *cf, weir_ssl_t *ssl,
    weir_str_t *name);
/* ssl_conf_command NAME VALUE pairs (weir_keyval_t) via SSL_CONF_CTX */
weir_int_t weir_ssl_conf_commands(weir_conf_t *cf, weir_ssl_t *ssl,
    weir_array_t *commands);

/* client certificates: verify the peer against cert (a CA file), depth */
weir_int_t weir_ssl_client_certificate(weir_conf_t *cf, weir_ssl_t *ssl,
    weir_str_t *cert, weir_int_t depth);
/* origins: the CAs to verify servers with (a file; empty: the system's
 * default store) */
weir_int_t weir_ssl_trusted_certificate(weir_conf_t *cf, weir_ssl_t *ssl,
    weir_str_t *cert, weir_int_t depth);
/* certificate revocation lists (a PEM file of one or more): every
 * certificate of the peer's chain is checked against them */
weir_int_t weir_ssl_crl(weir_conf_t *cf, weir_ssl_t *ssl, weir_str_t *crl);

/*
 * The server-side session cache: builtin (per worker, OpenSSL's),
 * shm_zone (shared by the workers: a slab zone with an rbtree of
 * sessions keyed by id and a LRU queue, expiring after timeout; the new,
 * get and remove callbacks), or off. sess_ctx: the session id context
 * (e.g. a hash of the server's certificates, so a session cannot move to
 * a server block with other certificates).
 */
#define WEIR_SSL_NO_SCACHE       -2
#define WEIR_SSL_NONE_SCACHE     -3
#define WEIR_SSL_NO_BUILTIN_SCACHE  -4
#define WEIR_SSL_DFLT_BUILTIN_SCACHE  -5

weir_int_t weir_ssl_session_cache(weir_conf_t *cf, weir_ssl_t *ssl,
    weir_str_t *sess_ctx, ssize_t builtin_session_cache,
    weir_shm_zone_t *shm_zone, time_t timeout);
/* the init of a session cache zone (weir_shared_memory_add(...)->init);
 * keeps the sessions of the old cycle's zone across a reload */
weir_int_t weir_ssl_session_cache_init(weir_shm_zone_t *shm_zone,
    void *data);

/*
 * Ticket keys from files (ssl_session_ticket_key, several): 80 bytes
 * (16 name, 32 HMAC, 32 AES-256) or 48 (16, 16, 16: AES-128) as nginx;
 * the first encrypts, all decrypt (a ticket under another key is
 * renewed). Without files and with tickets on, one random key per
 * process (so tickets only resume on the same worker: documented). With
 * tickets off, SSL_OP_NO_TICKET.
 */
weir_int_t weir_ssl_session_ticket_keys(weir_conf_t *cf, weir_ssl_t *ssl,
    weir_array_t *paths);
weir_int_t weir_ssl_session_tickets(weir_conf_t *cf, weir_ssl_t *ssl,
    weir_flag_t enable);


/* ---- connections ---------------------------------------------------- */

/*
 * Puts TLS on c (flags: WEIR_SSL_CLIENT for the origin side): allocates
 * a weir_ssl_conn_t in c->pool, SSL_new, SSL_set_fd, sets c->ssl,
 * c->recv = weir_ssl_recv, c->send = weir_ssl_send, c->writev =
 * weir_ssl_writev, c->sendfile = 0. WEIR_OK or WEIR_ERROR.
 */
weir_int_t weir_ssl_create_connection(weir_ssl_t *ssl, weir_connection_t *c,
    weir_uint_t flags);

/*
 * Drives the handshake. WEIR_OK: done (weir_ssl_conn(c)->handshaked).
 * WEIR_AGAIN: it goes on from c's events (this installs its own read
 * and write handlers and arms the events; when the handshake ends -
 * done, failed, or the caller's timer fired: then c->timedout is set -
 * it puts back saved_read_handler / saved_write_handler where the
 * caller set them (NULL: left as they are) and calls
 * weir_ssl_conn(c)->handler(c) once, which checks handshaked).
 * WEIR_ERROR: failed (logged at info for client-side
 * errors of a peer, at error for origins: the OpenSSL reason, "while SSL
 * handshaking" is the log action of the caller).
 * Timers stay the caller's business.
 */
weir_int_t weir_ssl_handshake(weir_connection_t *c);

/*
 * The asynchronous certificate step, for any server-side user: a
 * client-hello callback (SSL_CTX_set_client_hello_cb) or a certificate
 * callback that must wait for work of its own - an origin to connect
 * to, a certificate to mint - starts that work and returns
 * SSL_CLIENT_HELLO_RETRY (the certificate callback: -1). The handshake
 * then returns WEIR_AGAIN as for any wait, with the connection's events
 * parked (what the client sends meanwhile stays in the socket; the
 * caller's handshake timer still runs). When the work is done, from the
 * event loop, weir_ssl_handshake_resume(c) runs the handshake again:
 * OpenSSL calls the callback again, which now finds what it needs, and
 * the handshake ends as any asynchronous one (sslc->handler). A timer
 * that fires meanwhile ends it as failed (c->timedout); the step then
 * finds the connection gone or no longer waiting, so its resume does
 * nothing.
 */
void weir_ssl_handshake_resume(weir_connection_t *c);

/*
 * Bytes that were read from c's socket before TLS was put on it (the
 * ClientHello that came in the same read as a CONNECT head): OpenSSL
 * reads them first, then the socket. Copied; call right after
 * weir_ssl_create_connection. WEIR_OK or WEIR_ERROR.
 */
weir_int_t weir_ssl_set_preread(weir_connection_t *c, unsigned char *data,
    size_t len);

/*
 * Inside a client-hello callback: the server name the client sent
 * (SNI; name->len 0 without one) and its ALPN offer (the wire form,
 * length-prefixed names; len 0 without one). Pointers into OpenSSL's
 * copy of the ClientHello: valid during the callback.
 */
void weir_ssl_client_hello_server_name(SSL *ssl, weir_str_t *name);
void weir_ssl_client_hello_alpn(SSL *ssl, weir_str_t *alpn);

ssize_t weir_ssl_recv(weir_connection_t *c, unsigned char *buf,
    size_t size);
ssize_t weir_ssl_send(weir_connection_t *c, unsigned char *buf,
    size_t size);
/* writev coalesces iov pieces into TLS records through a per-connection
 * buffer; it returns only bytes that went out, and expects the next call
 * to start with the bytes not yet returned (as every writer does): see
 * weir_ssl_connection.c. send goes through the same buffer. */
ssize_t weir_ssl_writev(weir_connection_t *c, struct iovec *iov, int cnt);

/* client side: the session to offer / the one negotiated (the caller
 * owns the reference it gets: SSL_SESSION_free). Under TLS 1.3 the
 * session comes with the origin's NewSessionTicket after the handshake:
 * get1 returns NULL until then, so save it after reading a response */
weir_int_t weir_ssl_set_session(weir_connection_t *c, SSL_SESSION *session);
SSL_SESSION *weir_ssl_get1_session(weir_connection_t *c);

/* origin verification after the handshake: chain result and host name
 * (SAN dNSName/iPAddress, CN fallback) */
weir_int_t weir_ssl_check_host(weir_connection_t *c, weir_str_t *name);
long weir_ssl_verify_result(weir_connection_t *c);

/* the queued OpenSSL errors, appended to a log line: "(SSL: ...)" */
void weir_ssl_error(weir_uint_t level, weir_log_t *log, weir_err_t err,
    const char *fmt, ...);

/* values for variables; s->len 0 when unknown */
weir_int_t weir_ssl_get_protocol(weir_connection_t *c, weir_pool_t *pool,
    weir_str_t *s);
weir_int_t weir_ssl_get_cipher_name(weir_connection_t *c, weir_pool_t *pool,
    weir_str_t *s);
weir_int_t weir_ssl_get_session_reused(weir_connection_t *c,
    weir_pool_t *pool, weir_str_t *s);
weir_int_t weir_ssl_get_server_name(weir_connection_t *c, weir_pool_t *pool,
    weir_str_t *s);
weir_int_t weir_ssl_get_alpn_protocol(weir_connection_t *c,
    weir_pool_t *pool, weir_str_t *s);
weir_int_t weir_ssl_get_client_verify(weir_connection_t *c,
    weir_pool_t *pool, weir_str_t *s);
weir_int_t weir_ssl_get_subject_dn(weir_connection_t *c, weir_pool_t *pool,
    weir_str_t *s);
weir_int_t weir_ssl_get_issuer_dn(weir_connection_t *c, weir_pool_t *pool,
    weir_str_t *s);
weir_int_t weir_ssl_get_serial_number(weir_connection_t *c,
    weir_pool_t *pool, weir_str_t *s);
weir_int_t weir_ssl_get_fingerprint(weir_connection_t *c, weir_pool_t *pool,
    weir_str_t *s);

/* the proxy_ssl module's client context for a forward proxy's origins
 * in r's location (weir_http_proxy_ssl_module.c); NULL: none */
struct weir_http_request_s;
weir_ssl_t *weir_http_proxy_ssl_forward_ssl(struct weir_http_request_s *r,
    weir_uint_t *verify);

#endif /* _WEIR_SSL_H_INCLUDED_ */
