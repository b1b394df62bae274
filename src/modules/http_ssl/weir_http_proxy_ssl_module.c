#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"
#include "weir_ssl.h"

#include <arpa/inet.h>

/*
 * TLS to origins: the proxy_ssl_* directives and the upstream side of the
 * ssl module's hooks (weir_http_ssl_hooks_t.upstream_handshake). The
 * upstream core connects, then calls the hook for a request whose
 * proxy_pass is https://; this module puts TLS on the connection with
 * the request's location configuration (SNI, ALPN, verification, client
 * certificate, session reuse), drives the handshake and answers with
 * weir_http_upstream_ssl_done. A pooled keep-alive connection keeps its
 * TLS (c->ssl) and is not handshaken again. docs/http/proxy.md, "TLS to
 * origins", describes the directives.
 *
 * What may be reused by whom: before its first connect, a request gets
 * a key (weir_http_ssl_hooks_t.upstream_key) made of its client context
 * and the name it checks and sends. Locations whose proxy_ssl_* settings
 * are the same share one context (weir_http_proxy_ssl_set_ssl finds it),
 * so the context stands for the trust store, CRL, depth, client
 * certificate, protocols, ciphers, ALPN and commands. The keep-alive
 * pool hands a connection only to a request with the same key, and a
 * session is cached and offered under the same key: a connection or a
 * session made under other settings never serves a request.
 */


/* sessions kept per context and worker, for resumption with origins */
#define WEIR_HTTP_PROXY_SSL_SESSIONS  32
#define WEIR_HTTP_PROXY_SSL_NAME_MAX  255

/*
 * The key of a request (u->peer.key): the context, the flags, then the
 * name. The context is its pointer: contexts live as long as the cycle,
 * and one is made per distinct set of settings.
 */
#define WEIR_HTTP_PROXY_SSL_KEY_SNI   1
#define WEIR_HTTP_PROXY_SSL_KEY_H2    2     /* ALPN "h2" */
#define WEIR_HTTP_PROXY_SSL_KEY_AUTO  4     /* ALPN "h2,http/1.1" */
#define WEIR_HTTP_PROXY_SSL_KEY_HEAD  (sizeof(void *) + 1)

/* proxy_ssl_verify and proxy_ssl_server_name not set: off (nginx's
 * default) for a reverse proxy's requests, on for a forward proxy's,
 * whose origins the clients name */
#define WEIR_HTTP_PROXY_SSL_FORWARD   2

_Static_assert(WEIR_HTTP_PROXY_SSL_KEY_HEAD + WEIR_HTTP_PROXY_SSL_NAME_MAX
               <= WEIR_PEER_KEY_MAX,
               "WEIR_PEER_KEY_MAX is too small for a TLS key");

/*
 * The last session an origin gave for one (address, key). Per worker:
 * the array is in the configuration, and each worker writes its own copy
 * after fork.
 */
typedef struct {
    SSL_SESSION                 *session;
    weir_uint_t                  used;          /* LRU stamp */
    socklen_t                    socklen;
    struct sockaddr_storage      sockaddr;
    size_t                       key_len;
    unsigned char                key[WEIR_HTTP_PROXY_SSL_KEY_HEAD
                                     + WEIR_HTTP_PROXY_SSL_NAME_MAX];
} weir_http_proxy_ssl_session_t;

typedef struct weir_http_proxy_ssl_loc_conf_s  weir_http_proxy_ssl_loc_conf_t;

/* one client TLS context per distinct set of settings, shared by every
 * location that has them, with its session cache */
typedef struct {
    weir_ssl_t                       ssl;
    /* what it was made of (weir_http_proxy_ssl_same_ctx compares) */
    weir_http_proxy_ssl_loc_conf_t  *conf;
    weir_uint_t                      stamp;
    weir_http_proxy_ssl_session_t    sessions[WEIR_HTTP_PROXY_SSL_SESSIONS];
} weir_http_proxy_ssl_ctx_t;

typedef struct {
    /* every context of this configuration, to free their sessions when
     * a worker exits (of weir_http_proxy_ssl_ctx_t *) */
    weir_array_t                     contexts;
} weir_http_proxy_ssl_main_conf_t;

struct weir_http_proxy_ssl_loc_conf_s {
    weir_flag_t                      verify;
    weir_flag_t                      server_name;
    weir_flag_t                      session_reuse;
    weir_int_t                       verify_depth;
    weir_uint_t                      protocols;
    weir_str_t                       ciphers;
    weir_str_t                       trusted_certificate;
    weir_str_t                       crl;
    weir_str_t                       certificate;
    weir_str_t                       certificate_key;
    weir_str_t                       password_file;
    weir_array_t                    *conf_commands;
    weir_http_complex_value_t       *name;

    weir_http_proxy_ssl_ctx_t       *ctx;
    /* for a forward proxy's requests: ctx, or the same settings with
     * verification on when proxy_ssl_verify is not set */
    weir_http_proxy_ssl_ctx_t       *forward_ctx;
};

/*
 * Per origin connection, in c->pool, at weir_ssl_conn(c)->data: what the
 * new-session callback needs for the whole life of the connection (it
 * may fire long after the handshake: TLS 1.3 tickets come with the
 * first response), and the request while the handshake runs.
 */
typedef struct {
    weir_http_upstream_t            *upstream;  /* NULL once done */
    weir_http_proxy_ssl_ctx_t       *ctx;
    struct sockaddr_storage          sockaddr;
    socklen_t                        socklen;
    weir_str_t                       key;       /* u->peer.key, copied */
    weir_str_t                       name;      /* in key: for SNI and the
                                                   host check */
    long                             verify_error;  /* the first */
    weir_event_handler_pt            read_handler;
    weir_event_handler_pt            write_handler;
} weir_http_proxy_ssl_conn_t;


static weir_int_t weir_http_proxy_ssl_key(weir_http_upstream_t *u);
static weir_int_t weir_http_proxy_ssl_contexts(weir_conf_t *cf,
    weir_http_proxy_ssl_loc_conf_t *conf);
static weir_int_t weir_http_proxy_ssl_handshake(weir_http_upstream_t *u);
static void weir_http_proxy_ssl_handshake_handler(weir_connection_t *c);
static void weir_http_proxy_ssl_finish(weir_connection_t *c);
static weir_int_t weir_http_proxy_ssl_name(weir_http_upstream_t *u,
    weir_http_proxy_ssl_loc_conf_t *plcf, weir_str_t *name,
    weir_uint_t *sni);
static weir_http_proxy_ssl_session_t *weir_http_proxy_ssl_find_session(
    weir_http_proxy_ssl_ctx_t *ctx, weir_http_proxy_ssl_conn_t *pc,
    weir_uint_t create);
static int weir_http_proxy_ssl_new_session(SSL *ssl, SSL_SESSION *sess);
static void weir_http_proxy_ssl_forget_session(
    weir_http_proxy_ssl_conn_t *pc);
static int weir_http_proxy_ssl_verify_callback(int ok,
    X509_STORE_CTX *x509_store);
static void weir_http_proxy_ssl_free_sessions(weir_http_proxy_ssl_ctx_t *ctx);
static void weir_http_proxy_ssl_cleanup_ctx(void *data);

static weir_int_t weir_http_proxy_ssl_preconfiguration(weir_conf_t *cf);
static void *weir_http_proxy_ssl_create_main_conf(weir_conf_t *cf);
static void *weir_http_proxy_ssl_create_loc_conf(weir_conf_t *cf);
static char *weir_http_proxy_ssl_merge_loc_conf(weir_conf_t *cf,
    void *parent, void *child);
static weir_uint_t weir_http_proxy_ssl_conf_set(
    weir_http_proxy_ssl_loc_conf_t *conf);
static weir_uint_t weir_http_proxy_ssl_same_ctx(
    weir_http_proxy_ssl_loc_conf_t *a, weir_http_proxy_ssl_loc_conf_t *b);
static weir_int_t weir_http_proxy_ssl_set_ssl(weir_conf_t *cf,
    weir_http_proxy_ssl_loc_conf_t *conf);
static void weir_http_proxy_ssl_exit_process(weir_cycle_t *cycle);


static weir_conf_bitmask_t  weir_http_proxy_ssl_protocols[] = {
    { weir_string("TLSv1"), WEIR_SSL_TLSv1 },
    { weir_string("TLSv1.1"), WEIR_SSL_TLSv1_1 },
    { weir_string("TLSv1.2"), WEIR_SSL_TLSv1_2 },
    { weir_string("TLSv1.3"), WEIR_SSL_TLSv1_3 },
    { weir_null_string, 0 }
};


static weir_command_t  weir_http_proxy_ssl_commands[] = {

    { weir_string("proxy_ssl_verify"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_ssl_loc_conf_t, verify),
      NULL },

    { weir_string("proxy_ssl_trusted_certificate"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_str_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_ssl_loc_conf_t, trusted_certificate),
      NULL },

    { weir_string("proxy_ssl_crl"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_str_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_ssl_loc_conf_t, crl),
      NULL },

    { weir_string("proxy_ssl_verify_depth"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_num_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_ssl_loc_conf_t, verify_depth),
      NULL },

    { weir_string("proxy_ssl_name"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_http_set_complex_value_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_ssl_loc_conf_t, name),
      NULL },

    { weir_string("proxy_ssl_server_name"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_ssl_loc_conf_t, server_name),
      NULL },

    { weir_string("proxy_ssl_protocols"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_1MORE,
      weir_conf_set_bitmask_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_ssl_loc_conf_t, protocols),
      &weir_http_proxy_ssl_protocols },

    { weir_string("proxy_ssl_ciphers"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_str_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_ssl_loc_conf_t, ciphers),
      NULL },

    { weir_string("proxy_ssl_certificate"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_str_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_ssl_loc_conf_t, certificate),
      NULL },

    { weir_string("proxy_ssl_certificate_key"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_str_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_ssl_loc_conf_t, certificate_key),
      NULL },

    { weir_string("proxy_ssl_password_file"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_str_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_ssl_loc_conf_t, password_file),
      NULL },

    { weir_string("proxy_ssl_session_reuse"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_ssl_loc_conf_t, session_reuse),
      NULL },

    { weir_string("proxy_ssl_conf_command"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE2,
      weir_conf_set_keyval_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_ssl_loc_conf_t, conf_commands),
      NULL },

    weir_null_command
};


static weir_http_module_t  weir_http_proxy_ssl_module_ctx = {
    weir_http_proxy_ssl_preconfiguration,  /* preconfiguration */
    NULL,                                  /* postconfiguration */

    weir_http_proxy_ssl_create_main_conf,  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    weir_http_proxy_ssl_create_loc_conf,   /* create location configuration */
    weir_http_proxy_ssl_merge_loc_conf,    /* merge location configuration */

    NULL,                                  /* phase handlers */
    NULL,                                  /* header filters */
    NULL,                                  /* body filters */
    NULL                                   /* request body filters */
};


weir_module_t  weir_http_proxy_ssl_module = {
    WEIR_MODULE_V1,
    &weir_http_proxy_ssl_module_ctx,       /* module context */
    weir_http_proxy_ssl_commands,          /* module directives */
    WEIR_HTTP_MODULE,                      /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    weir_http_proxy_ssl_exit_process,      /* exit process */
    NULL,                                  /* exit master */
    WEIR_MODULE_V1_PADDING
};


static const unsigned char  weir_http_proxy_ssl_alpn[] = "\x08http/1.1";


/* ---- the handshake ---------------------------------------------------- */

/*
 * weir_http_ssl_hooks_t.upstream_key: the request's location decides the
 * context, the name comes from proxy_ssl_name or proxy_pass. The key is
 * in r->pool; the handshake takes the context and the name from it.
 */

static weir_int_t
weir_http_proxy_ssl_key(weir_http_upstream_t *u)
{
    unsigned char                   *p;
    weir_uint_t                      sni;
    weir_str_t                       name;
    weir_http_proxy_ssl_ctx_t       *ctx;
    weir_http_proxy_ssl_loc_conf_t  *plcf;

    plcf = weir_http_get_module_loc_conf(u->request,
                                         weir_http_proxy_ssl_module);

    ctx = u->forward ? plcf->forward_ctx : plcf->ctx;

    if (ctx == NULL) {
        /* cannot happen: every location has one after merging */
        weir_log_error(WEIR_LOG_ERR, u->request->connection->log, 0,
                       "no TLS context for upstream \"%.*s\"",
                       WEIR_STR_ARG(u->uri));
        return WEIR_ERROR;
    }

    if (weir_http_proxy_ssl_name(u, plcf, &name, &sni) != WEIR_OK) {
        return WEIR_ERROR;
    }

    p = weir_pnalloc(u->request->pool,
                     WEIR_HTTP_PROXY_SSL_KEY_HEAD + name.len);
    if (p == NULL) {
        return WEIR_ERROR;
    }

    u->peer.key.data = p;
    u->peer.key.len = WEIR_HTTP_PROXY_SSL_KEY_HEAD + name.len;

    weir_memcpy(p, &ctx, sizeof(void *));
    p += sizeof(void *);
    *p++ = (unsigned char) ((sni ? WEIR_HTTP_PROXY_SSL_KEY_SNI : 0)
                            | (u->alpn == WEIR_HTTP_UPSTREAM_ALPN_H2
                               ? WEIR_HTTP_PROXY_SSL_KEY_H2 : 0)
                            | (u->alpn == WEIR_HTTP_UPSTREAM_ALPN_AUTO
                               ? WEIR_HTTP_PROXY_SSL_KEY_AUTO : 0));
    weir_memcpy(p, name.data, name.len);

    return WEIR_OK;
}


/*
 * weir_http_ssl_hooks_t.upstream_handshake: u->peer.connection is
 * connected and has no TLS yet; u->peer.key is set. WEIR_OK: started,
 * and weir_http_upstream_ssl_done will be called exactly once (maybe
 * before this returns: then u may be gone, so nothing touches it after
 * that). WEIR_ERROR: could not start (logged), done is not called.
 */

static weir_int_t
weir_http_proxy_ssl_handshake(weir_http_upstream_t *u)
{
    SSL                             *ssl;
    weir_int_t                       rc;
    weir_uint_t                      flags;
    weir_connection_t               *c;
    weir_ssl_conn_t                 *sc;
    weir_http_proxy_ssl_conn_t      *pc;
    weir_http_proxy_ssl_session_t   *s;

    c = u->peer.connection;

    if (u->peer.key.len < WEIR_HTTP_PROXY_SSL_KEY_HEAD) {
        weir_log_error(WEIR_LOG_ERR, c->log, 0,
                       "no TLS key for upstream \"%.*s\"",
                       WEIR_STR_ARG(u->uri));
        return WEIR_ERROR;
    }

    c->log->action = "SSL handshaking to upstream";

    pc = weir_pcalloc(c->pool, sizeof(weir_http_proxy_ssl_conn_t));
    if (pc == NULL) {
        return WEIR_ERROR;
    }

    pc->upstream = u;

    if (u->peer.sockaddr
        && u->peer.socklen <= (socklen_t) sizeof(struct sockaddr_storage))
    {
        weir_memcpy(&pc->sockaddr, u->peer.sockaddr, u->peer.socklen);
        pc->socklen = u->peer.socklen;
    }

    /* a copy in c->pool, with a NUL after the name for OpenSSL: the
     * connection may outlive the request (pool) */
    pc->key.len = u->peer.key.len;
    pc->key.data = weir_pnalloc(c->pool, u->peer.key.len + 1);
    if (pc->key.data == NULL) {
        return WEIR_ERROR;
    }

    weir_memcpy(pc->key.data, u->peer.key.data, u->peer.key.len);
    pc->key.data[pc->key.len] = '\0';

    weir_memcpy(&pc->ctx, pc->key.data, sizeof(void *));
    flags = pc->key.data[sizeof(void *)];
    pc->name.data = pc->key.data + WEIR_HTTP_PROXY_SSL_KEY_HEAD;
    pc->name.len = pc->key.len - WEIR_HTTP_PROXY_SSL_KEY_HEAD;

    if (weir_ssl_create_connection(&pc->ctx->ssl, c, WEIR_SSL_CLIENT)
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    sc = weir_ssl_conn(c);
    ssl = sc->connection;

    if (flags & (WEIR_HTTP_PROXY_SSL_KEY_H2 | WEIR_HTTP_PROXY_SSL_KEY_AUTO)) {
        /* the context offers "http/1.1"; HTTP/2 to the origin offers
         * "h2" alone (proxy_http_version 2) or first (auto) */
        if (SSL_set_alpn_protos(ssl,
                (flags & WEIR_HTTP_PROXY_SSL_KEY_H2)
                ? (const unsigned char *) "\x02h2"
                : (const unsigned char *) "\x02h2\x08http/1.1",
                (flags & WEIR_HTTP_PROXY_SSL_KEY_H2) ? 3 : 12)
            != 0)
        {
            weir_ssl_error(WEIR_LOG_ERR, c->log, 0,
                           "SSL_set_alpn_protos() failed");
            return WEIR_ERROR;
        }
    }

    u->origin_h2 = 0;

    if (flags & WEIR_HTTP_PROXY_SSL_KEY_SNI) {
        if (SSL_set_tlsext_host_name(ssl, (char *) pc->name.data) != 1) {
            weir_ssl_error(WEIR_LOG_ERR, c->log, 0,
                           "SSL_set_tlsext_host_name(\"%.*s\") failed",
                           WEIR_STR_ARG(pc->name));
            return WEIR_ERROR;
        }
    }

    if (pc->ctx->conf->session_reuse && pc->socklen) {
        s = weir_http_proxy_ssl_find_session(pc->ctx, pc, 0);

        if (s && s->session) {
            if (weir_ssl_set_session(c, s->session) != WEIR_OK) {
                /* not fatal: a full handshake */
                weir_http_proxy_ssl_forget_session(pc);
            }

            weir_log_debug(c->log, 0, "upstream SSL session offered");
        }
    }

    /* weir_ssl_handshake installs its own handlers while it waits */
    pc->read_handler = c->read->handler;
    pc->write_handler = c->write->handler;
    sc->saved_read_handler = c->read->handler;
    sc->saved_write_handler = c->write->handler;
    sc->handler = weir_http_proxy_ssl_handshake_handler;
    sc->data = pc;

    rc = weir_ssl_handshake(c);

    if (rc == WEIR_AGAIN) {
        return WEIR_OK;
    }

    /* WEIR_OK or WEIR_ERROR: sc->handshaked tells which */
    weir_http_proxy_ssl_finish(c);

    return WEIR_OK;
}


static void
weir_http_proxy_ssl_handshake_handler(weir_connection_t *c)
{
    weir_http_proxy_ssl_finish(c);
}


/* the handshake is over, one way or the other: check the origin, then
 * hand the connection back to the core; u may be freed by the call to
 * weir_http_upstream_ssl_done, so it is the last thing done */

static void
weir_http_proxy_ssl_finish(weir_connection_t *c)
{
    long                             rc;
    weir_ssl_conn_t                 *sc;
    weir_http_upstream_t            *u;
    weir_http_proxy_ssl_conn_t      *pc;

    sc = weir_ssl_conn(c);
    pc = sc->data;
    u = pc->upstream;

    if (u == NULL) {
        /* done was called already */
        return;
    }

    pc->upstream = NULL;

    c->read->handler = pc->read_handler;
    c->write->handler = pc->write_handler;

    if (!sc->handshaked) {
        /* the TLS layer logged the reason; a timeout (the core's connect
         * timer, c->write->timedout) is logged by the core */
        weir_http_proxy_ssl_forget_session(pc);
        weir_http_upstream_ssl_done(u, WEIR_ERROR);
        return;
    }

    if (pc->ctx->conf->verify) {
        rc = weir_ssl_verify_result(c);

        if (rc != X509_V_OK && pc->verify_error != X509_V_OK) {
            rc = pc->verify_error;
        }

        if (rc != X509_V_OK) {
            weir_log_error(WEIR_LOG_ERR, c->log, 0,
                           "upstream SSL certificate verify error: "
                           "(%ld:%s)", rc,
                           X509_verify_cert_error_string(rc));
            weir_http_proxy_ssl_forget_session(pc);
            weir_http_upstream_ssl_done(u, WEIR_ERROR);
            return;
        }

        if (weir_ssl_check_host(c, &pc->name) != WEIR_OK) {
            weir_log_error(WEIR_LOG_ERR, c->log, 0,
                           "upstream SSL certificate does not match "
                           "\"%.*s\"", WEIR_STR_ARG(pc->name));
            weir_http_proxy_ssl_forget_session(pc);
            weir_http_upstream_ssl_done(u, WEIR_ERROR);
            return;
        }
    }

    weir_log_debug(c->log, 0, "upstream SSL handshake done, reused: %d",
                   SSL_session_reused(sc->connection));

    {
        unsigned int          len;
        const unsigned char  *data;

        SSL_get0_alpn_selected(sc->connection, &data, &len);
        u->origin_h2 = (len == 2 && data[0] == 'h' && data[1] == '2');
    }

    weir_http_upstream_ssl_done(u, WEIR_OK);
}


/*
 * The TLS name of the origin: proxy_ssl_name, or the host of proxy_pass
 * ($proxy_host without the port), with a ":port" stripped as nginx does
 * (a name taken from $http_host may carry one). *sni: whether it goes
 * into the ClientHello (proxy_ssl_server_name on, and not an IP literal:
 * RFC 6066 forbids them). For the host check, "[::1]" becomes "::1".
 */

static weir_int_t
weir_http_proxy_ssl_name(weir_http_upstream_t *u,
    weir_http_proxy_ssl_loc_conf_t *plcf, weir_str_t *name, weir_uint_t *sni)
{
    char               buf[64];
    unsigned char     *p, *last;
    struct in6_addr    a6;
    struct in_addr     a4;

    *sni = 0;

    if (plcf->name) {
        if (weir_http_complex_value(u->request, plcf->name, name)
            != WEIR_OK)
        {
            return WEIR_ERROR;
        }

    } else if (u->resolved) {
        *name = u->resolved->host;

    } else if (u->upstream) {
        *name = u->upstream->host;

    } else {
        name->len = 0;
        name->data = (unsigned char *) "";
    }

    if (name->len == 0) {
        return WEIR_OK;
    }

    p = name->data;
    last = name->data + name->len;

    if (*p == '[') {
        p = weir_strlchr(p, last, ']');

        if (p) {
            /* an IPv6 literal: never SNI; checked without brackets */
            name->data++;
            name->len = p - name->data;
            return WEIR_OK;
        }

        p = name->data;
    }

    p = weir_strlchr(p, last, ':');

    if (p) {
        name->len = p - name->data;
    }

    if (name->len > WEIR_HTTP_PROXY_SSL_NAME_MAX) {
        weir_log_error(WEIR_LOG_ERR, u->request->connection->log, 0,
                       "upstream SSL name \"%.*s\" is too long",
                       WEIR_STR_ARG(*name));
        return WEIR_ERROR;
    }

    if (name->len == 0
        || plcf->server_name == 0
        || (plcf->server_name == WEIR_HTTP_PROXY_SSL_FORWARD && !u->forward))
    {
        return WEIR_OK;
    }

    if (name->len < sizeof(buf)) {
        weir_memcpy(buf, name->data, name->len);
        buf[name->len] = '\0';

        if (inet_pton(AF_INET, buf, &a4) == 1
            || inet_pton(AF_INET6, buf, &a6) == 1)
        {
            return WEIR_OK;
        }
    }

    *sni = 1;

    return WEIR_OK;
}


/* ---- sessions --------------------------------------------------------- */

/*
 * The cache slot for pc's (address, key): the existing one, or with
 * create the oldest slot (emptied) to fill. NULL: none.
 */

static weir_http_proxy_ssl_session_t *
weir_http_proxy_ssl_find_session(weir_http_proxy_ssl_ctx_t *ctx,
    weir_http_proxy_ssl_conn_t *pc, weir_uint_t create)
{
    weir_uint_t                     i;
    weir_http_proxy_ssl_session_t  *s, *oldest;

    if (pc->key.len > sizeof(ctx->sessions[0].key) || pc->socklen == 0) {
        return NULL;
    }

    oldest = NULL;

    for (i = 0; i < WEIR_HTTP_PROXY_SSL_SESSIONS; i++) {
        s = &ctx->sessions[i];

        if (s->session
            && s->socklen == pc->socklen
            && s->key_len == pc->key.len
            && weir_memcmp(&s->sockaddr, &pc->sockaddr, pc->socklen) == 0
            && weir_memcmp(s->key, pc->key.data, pc->key.len) == 0)
        {
            s->used = ++ctx->stamp;
            return s;
        }

        if (oldest == NULL
            || (oldest->session && (s->session == NULL
                                    || s->used < oldest->used)))
        {
            oldest = s;
        }
    }

    if (!create || oldest == NULL) {
        return NULL;
    }

    if (oldest->session) {
        SSL_SESSION_free(oldest->session);
        oldest->session = NULL;
    }

    weir_memcpy(&oldest->sockaddr, &pc->sockaddr, pc->socklen);
    oldest->socklen = pc->socklen;
    weir_memcpy(oldest->key, pc->key.data, pc->key.len);
    oldest->key_len = pc->key.len;
    oldest->used = ++ctx->stamp;

    return oldest;
}


/*
 * SSL_CTX_sess_set_new_cb: the origin gave a session (at the end of a
 * TLS 1.2 handshake; with a NewSessionTicket in TLS 1.3, which may be
 * read long after the handshake). Keeps the last one per (address,
 * key). Returns 1 when the reference is kept, 0 when OpenSSL keeps it.
 */

static int
weir_http_proxy_ssl_new_session(SSL *ssl, SSL_SESSION *sess)
{
    weir_connection_t               *c;
    weir_http_proxy_ssl_conn_t      *pc;
    weir_http_proxy_ssl_session_t   *s;

    c = SSL_get_ex_data(ssl, weir_ssl_connection_index);

    if (c == NULL || c->ssl == NULL) {
        return 0;
    }

    pc = weir_ssl_conn(c)->data;

    if (pc == NULL || !pc->ctx->conf->session_reuse
        || !SSL_SESSION_is_resumable(sess))
    {
        return 0;
    }

    s = weir_http_proxy_ssl_find_session(pc->ctx, pc, 1);

    if (s == NULL) {
        return 0;
    }

    if (s->session) {
        SSL_SESSION_free(s->session);
    }

    s->session = sess;

    weir_log_debug(c->log, 0, "upstream SSL session saved");

    return 1;
}


static void
weir_http_proxy_ssl_forget_session(weir_http_proxy_ssl_conn_t *pc)
{
    weir_http_proxy_ssl_session_t  *s;

    s = weir_http_proxy_ssl_find_session(pc->ctx, pc, 0);

    if (s && s->session) {
        SSL_SESSION_free(s->session);
        s->session = NULL;
    }
}


static void
weir_http_proxy_ssl_free_sessions(weir_http_proxy_ssl_ctx_t *ctx)
{
    weir_uint_t  i;

    for (i = 0; i < WEIR_HTTP_PROXY_SSL_SESSIONS; i++) {
        if (ctx->sessions[i].session) {
            SSL_SESSION_free(ctx->sessions[i].session);
            ctx->sessions[i].session = NULL;
        }
    }
}


/* cf->pool cleanup, registered after weir_ssl_create's own, so it runs
 * before the SSL_CTX is freed (the master on a reload; a worker's
 * copies go in exit_process) */

static void
weir_http_proxy_ssl_cleanup_ctx(void *data)
{
    weir_http_proxy_ssl_free_sessions(data);
}


static void
weir_http_proxy_ssl_exit_process(weir_cycle_t *cycle)
{
    weir_uint_t                        i;
    weir_http_proxy_ssl_ctx_t        **ctxs;
    weir_http_proxy_ssl_main_conf_t   *pmcf;

    pmcf = weir_http_cycle_get_module_main_conf(cycle,
                                                weir_http_proxy_ssl_module);
    if (pmcf == NULL) {
        return;
    }

    ctxs = pmcf->contexts.elts;

    for (i = 0; i < pmcf->contexts.nelts; i++) {
        weir_http_proxy_ssl_free_sessions(ctxs[i]);
    }
}


/*
 * The origin's chain is judged after the handshake (with the reason in
 * the log), not by failing the handshake itself. The first error is
 * kept: the verification goes on after it, and what it runs into next
 * (e.g. "unable to get local issuer certificate" after "certificate
 * chain too long") says less.
 */

static int
weir_http_proxy_ssl_verify_callback(int ok, X509_STORE_CTX *x509_store)
{
    SSL                         *ssl;
    weir_connection_t           *c;
    weir_http_proxy_ssl_conn_t  *pc;

    if (ok) {
        return 1;
    }

    ssl = X509_STORE_CTX_get_ex_data(x509_store,
                                     SSL_get_ex_data_X509_STORE_CTX_idx());
    if (ssl == NULL) {
        return 1;
    }

    c = SSL_get_ex_data(ssl, weir_ssl_connection_index);

    if (c == NULL || c->ssl == NULL) {
        return 1;
    }

    pc = weir_ssl_conn(c)->data;

    if (pc && pc->verify_error == X509_V_OK) {
        pc->verify_error = X509_STORE_CTX_get_error(x509_store);
    }

    return 1;
}


/* ---- configuration ---------------------------------------------------- */

/*
 * The termination module (weir_http_ssl_module) comes first in the addon,
 * so its preconfiguration normally creates the hooks table and
 * initializes the TLS library; without it (or should the order change)
 * the table is created here, and only upstream_handshake is set.
 */

static weir_int_t
weir_http_proxy_ssl_preconfiguration(weir_conf_t *cf)
{
    weir_http_core_main_conf_t  *cmcf;

    cmcf = weir_http_conf_get_module_main_conf(cf, weir_http_core_module);

    if (cmcf->ssl == NULL) {
        cmcf->ssl = weir_pcalloc(cf->pool, sizeof(weir_http_ssl_hooks_t));
        if (cmcf->ssl == NULL) {
            return WEIR_ERROR;
        }
    }

    cmcf->ssl->upstream_handshake = weir_http_proxy_ssl_handshake;
    cmcf->ssl->upstream_key = weir_http_proxy_ssl_key;

    return WEIR_OK;
}


static void *
weir_http_proxy_ssl_create_main_conf(weir_conf_t *cf)
{
    weir_http_proxy_ssl_main_conf_t  *pmcf;

    pmcf = weir_pcalloc(cf->pool, sizeof(weir_http_proxy_ssl_main_conf_t));
    if (pmcf == NULL) {
        return NULL;
    }

    if (weir_array_init(&pmcf->contexts, cf->pool, 4,
                        sizeof(weir_http_proxy_ssl_ctx_t *))
        != WEIR_OK)
    {
        return NULL;
    }

    return pmcf;
}


static void *
weir_http_proxy_ssl_create_loc_conf(weir_conf_t *cf)
{
    weir_http_proxy_ssl_loc_conf_t  *conf;

    conf = weir_pcalloc(cf->pool, sizeof(weir_http_proxy_ssl_loc_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    /*
     * set by weir_pcalloc():
     *
     *     conf->protocols = 0;
     *     conf->ciphers = { 0, NULL };
     *     conf->trusted_certificate = { 0, NULL };
     *     conf->crl = { 0, NULL };
     *     conf->certificate = { 0, NULL };
     *     conf->certificate_key = { 0, NULL };
     *     conf->password_file = { 0, NULL };
     *     conf->name = NULL;
     *     conf->ctx = NULL;
     */

    conf->verify = WEIR_CONF_UNSET;
    conf->server_name = WEIR_CONF_UNSET;
    conf->session_reuse = WEIR_CONF_UNSET;
    conf->verify_depth = WEIR_CONF_UNSET;
    conf->conf_commands = WEIR_CONF_UNSET_PTR;

    return conf;
}


/* does this level set any directive that changes the TLS context? */

static weir_uint_t
weir_http_proxy_ssl_conf_set(weir_http_proxy_ssl_loc_conf_t *conf)
{
    return conf->verify != WEIR_CONF_UNSET
           || conf->verify_depth != WEIR_CONF_UNSET
           || conf->session_reuse != WEIR_CONF_UNSET
           || conf->protocols != 0
           || conf->ciphers.data != NULL
           || conf->trusted_certificate.data != NULL
           || conf->crl.data != NULL
           || conf->certificate.data != NULL
           || conf->certificate_key.data != NULL
           || conf->password_file.data != NULL
           || conf->conf_commands != WEIR_CONF_UNSET_PTR;
}


/*
 * Would a and b (merged) make the same client context? Files are
 * compared by name: they are read once, when the configuration is.
 */

static weir_uint_t
weir_http_proxy_ssl_same_ctx(weir_http_proxy_ssl_loc_conf_t *a,
    weir_http_proxy_ssl_loc_conf_t *b)
{
    weir_uint_t     i;
    weir_keyval_t  *ka, *kb;

    if (a->verify != b->verify
        || a->session_reuse != b->session_reuse
        || a->verify_depth != b->verify_depth
        || a->protocols != b->protocols
        || !weir_str_eq(&a->ciphers, &b->ciphers)
        || !weir_str_eq(&a->trusted_certificate, &b->trusted_certificate)
        || !weir_str_eq(&a->crl, &b->crl)
        || !weir_str_eq(&a->certificate, &b->certificate)
        || !weir_str_eq(&a->certificate_key, &b->certificate_key)
        || !weir_str_eq(&a->password_file, &b->password_file))
    {
        return 0;
    }

    if (a->conf_commands == b->conf_commands) {
        return 1;
    }

    if (a->conf_commands == NULL || b->conf_commands == NULL
        || a->conf_commands->nelts != b->conf_commands->nelts)
    {
        return 0;
    }

    ka = a->conf_commands->elts;
    kb = b->conf_commands->elts;

    for (i = 0; i < a->conf_commands->nelts; i++) {
        if (!weir_str_eq(&ka[i].key, &kb[i].key)
            || !weir_str_eq(&ka[i].value, &kb[i].value))
        {
            return 0;
        }
    }

    return 1;
}


/*
 * One TLS context per level that configures one: a level that sets no
 * proxy_ssl_* directive of its own shares its parent's (created here for
 * the parent when it has none yet, so that all the locations of a
 * configuration without proxy_ssl_* directives share one context, and a
 * location that never proxies to https:// costs nothing of its own).
 * proxy_ssl_name and proxy_ssl_server_name are per request and do not
 * need a context of their own.
 */

static char *
weir_http_proxy_ssl_merge_loc_conf(weir_conf_t *cf, void *parent,
    void *child)
{
    weir_http_proxy_ssl_loc_conf_t  *prev = parent;
    weir_http_proxy_ssl_loc_conf_t  *conf = child;

    weir_uint_t  own;

    own = weir_http_proxy_ssl_conf_set(conf);

    weir_conf_merge_value(conf->verify, prev->verify,
                          WEIR_HTTP_PROXY_SSL_FORWARD);
    weir_conf_merge_value(conf->server_name, prev->server_name,
                          WEIR_HTTP_PROXY_SSL_FORWARD);
    weir_conf_merge_value(conf->session_reuse, prev->session_reuse, 1);
    weir_conf_merge_value(conf->verify_depth, prev->verify_depth, 1);
    weir_conf_merge_bitmask_value(conf->protocols, prev->protocols,
                                  (WEIR_CONF_BITMASK_SET
                                   |WEIR_SSL_DEFAULT_PROTOCOLS));
    weir_conf_merge_str_value(conf->ciphers, prev->ciphers, "DEFAULT");
    weir_conf_merge_str_value(conf->trusted_certificate,
                              prev->trusted_certificate, "");
    weir_conf_merge_str_value(conf->crl, prev->crl, "");
    weir_conf_merge_str_value(conf->certificate, prev->certificate, "");
    weir_conf_merge_str_value(conf->certificate_key, prev->certificate_key,
                              "");
    weir_conf_merge_str_value(conf->password_file, prev->password_file, "");
    weir_conf_merge_ptr_value(conf->conf_commands, prev->conf_commands,
                              NULL);

    if (conf->name == NULL) {
        conf->name = prev->name;
    }

    if (conf->verify_depth < 0) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "invalid \"proxy_ssl_verify_depth\" %d",
                            (int) conf->verify_depth);
        return WEIR_CONF_ERROR;
    }

    if (!own && prev->ctx) {
        conf->ctx = prev->ctx;
        conf->forward_ctx = prev->forward_ctx;
        return WEIR_CONF_OK;
    }

    if (weir_http_proxy_ssl_contexts(cf, conf) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    if (!own) {
        /* the same values as the parent's once merged: its siblings
         * take the same context */
        prev->ctx = conf->ctx;
        prev->forward_ctx = conf->forward_ctx;
    }

    return WEIR_CONF_OK;
}


/*
 * conf->ctx and conf->forward_ctx: one context when proxy_ssl_verify
 * was set, else two made from copies of the settings whose verify is
 * off (ctx) and on (forward_ctx). Contexts are shared as always, so a
 * configuration pays for each distinct one once.
 */

static weir_int_t
weir_http_proxy_ssl_contexts(weir_conf_t *cf,
    weir_http_proxy_ssl_loc_conf_t *conf)
{
    weir_uint_t                      i;
    weir_http_proxy_ssl_loc_conf_t  *v;

    if (conf->verify != WEIR_HTTP_PROXY_SSL_FORWARD) {
        if (weir_http_proxy_ssl_set_ssl(cf, conf) != WEIR_OK) {
            return WEIR_ERROR;
        }

        conf->forward_ctx = conf->ctx;
        return WEIR_OK;
    }

    for (i = 0; i < 2; i++) {
        v = weir_palloc(cf->pool, sizeof(weir_http_proxy_ssl_loc_conf_t));
        if (v == NULL) {
            return WEIR_ERROR;
        }

        *v = *conf;
        v->verify = i;
        v->ctx = NULL;

        if (weir_http_proxy_ssl_set_ssl(cf, v) != WEIR_OK) {
            return WEIR_ERROR;
        }

        if (i == 0) {
            conf->ctx = v->ctx;

        } else {
            conf->forward_ctx = v->ctx;
        }
    }

    return WEIR_OK;
}


/*
 * For another module of the ssl addon that talks TLS to a forward
 * proxy's origin outside the upstream core (the mitm module's look at
 * the origin before it mints): the context r's location would use, and
 * whether it verifies. The caller checks the name itself.
 */

weir_ssl_t *
weir_http_proxy_ssl_forward_ssl(weir_http_request_t *r, weir_uint_t *verify)
{
    weir_http_proxy_ssl_loc_conf_t  *plcf;

    plcf = weir_http_get_module_loc_conf(r, weir_http_proxy_ssl_module);

    if (plcf->forward_ctx == NULL) {
        return NULL;
    }

    *verify = plcf->forward_ctx->conf->verify ? 1 : 0;

    return &plcf->forward_ctx->ssl;
}


/* builds conf->ctx from the merged values; errors are logged with the
 * file:line and the OpenSSL reason */

static weir_int_t
weir_http_proxy_ssl_set_ssl(weir_conf_t *cf,
    weir_http_proxy_ssl_loc_conf_t *conf)
{
    weir_str_t                        *s;
    weir_uint_t                        i;
    weir_array_t                      *certs, *keys, *passwords;
    weir_pool_cleanup_t               *cln;
    weir_http_proxy_ssl_ctx_t         *ctx, **pctx;
    weir_http_proxy_ssl_main_conf_t   *pmcf;

    if (conf->certificate.len && conf->certificate_key.len == 0) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "no \"proxy_ssl_certificate_key\" is defined "
                            "for certificate \"%.*s\"",
                            WEIR_STR_ARG(conf->certificate));
        return WEIR_ERROR;
    }

    if (conf->certificate_key.len && conf->certificate.len == 0) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "no \"proxy_ssl_certificate\" is defined "
                            "for key \"%.*s\"",
                            WEIR_STR_ARG(conf->certificate_key));
        return WEIR_ERROR;
    }

    pmcf = weir_http_conf_get_module_main_conf(cf,
                                               weir_http_proxy_ssl_module);

    /* the same settings as another location's: the same context, so
     * that the two share pooled connections and sessions */

    pctx = pmcf->contexts.elts;

    for (i = 0; i < pmcf->contexts.nelts; i++) {
        if (weir_http_proxy_ssl_same_ctx(pctx[i]->conf, conf)) {
            conf->ctx = pctx[i];
            return WEIR_OK;
        }
    }

    ctx = weir_pcalloc(cf->pool, sizeof(weir_http_proxy_ssl_ctx_t));
    if (ctx == NULL) {
        return WEIR_ERROR;
    }

    ctx->conf = conf;

    ctx->ssl.log = cf->log;

    if (weir_ssl_create(cf, &ctx->ssl, conf->protocols, NULL) != WEIR_OK) {
        return WEIR_ERROR;
    }

    cln = weir_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return WEIR_ERROR;
    }

    cln->handler = weir_http_proxy_ssl_cleanup_ctx;
    cln->data = ctx;

    pctx = weir_array_push(&pmcf->contexts);
    if (pctx == NULL) {
        return WEIR_ERROR;
    }

    *pctx = ctx;

    if (conf->certificate.len) {
        passwords = NULL;

        if (conf->password_file.len) {
            passwords = weir_ssl_read_password_file(cf,
                                                    &conf->password_file);
            if (passwords == NULL) {
                return WEIR_ERROR;
            }
        }

        certs = weir_array_create(cf->temp_pool, 1, sizeof(weir_str_t));
        keys = weir_array_create(cf->temp_pool, 1, sizeof(weir_str_t));
        if (certs == NULL || keys == NULL) {
            return WEIR_ERROR;
        }

        s = weir_array_push(certs);
        if (s == NULL) {
            return WEIR_ERROR;
        }

        *s = conf->certificate;

        s = weir_array_push(keys);
        if (s == NULL) {
            return WEIR_ERROR;
        }

        *s = conf->certificate_key;

        if (weir_ssl_certificates(cf, &ctx->ssl, certs, keys, passwords)
            != WEIR_OK)
        {
            return WEIR_ERROR;
        }
    }

    if (weir_ssl_ciphers(cf, &ctx->ssl, &conf->ciphers, 0) != WEIR_OK) {
        return WEIR_ERROR;
    }

    if (conf->verify) {
        if (weir_ssl_trusted_certificate(cf, &ctx->ssl,
                                         &conf->trusted_certificate,
                                         conf->verify_depth)
            != WEIR_OK)
        {
            return WEIR_ERROR;
        }

        if (conf->crl.len
            && weir_ssl_crl(cf, &ctx->ssl, &conf->crl) != WEIR_OK)
        {
            return WEIR_ERROR;
        }

        /* the verdict is taken after the handshake, with a log line */
        SSL_CTX_set_verify(ctx->ssl.ctx, SSL_VERIFY_PEER,
                           weir_http_proxy_ssl_verify_callback);
        SSL_CTX_set_verify_depth(ctx->ssl.ctx, (int) conf->verify_depth);
    }

    if (SSL_CTX_set_alpn_protos(ctx->ssl.ctx, weir_http_proxy_ssl_alpn,
                                sizeof(weir_http_proxy_ssl_alpn) - 1)
        != 0)
    {
        weir_ssl_error(WEIR_LOG_EMERG, cf->log, 0,
                       "SSL_CTX_set_alpn_protos() failed");
        return WEIR_ERROR;
    }

    if (conf->session_reuse) {
        /* sessions go only to the callback: OpenSSL's internal cache is
         * a server-side thing */
        SSL_CTX_set_session_cache_mode(ctx->ssl.ctx,
                                       SSL_SESS_CACHE_CLIENT
                                       |SSL_SESS_CACHE_NO_INTERNAL);
        SSL_CTX_sess_set_new_cb(ctx->ssl.ctx,
                                weir_http_proxy_ssl_new_session);

    } else {
        SSL_CTX_set_session_cache_mode(ctx->ssl.ctx, SSL_SESS_CACHE_OFF);
    }

    if (conf->conf_commands) {
        if (weir_ssl_conf_commands(cf, &ctx->ssl, conf->conf_commands)
            != WEIR_OK)
        {
            return WEIR_ERROR;
        }
    }

    conf->ctx = ctx;

    return WEIR_OK;
}
