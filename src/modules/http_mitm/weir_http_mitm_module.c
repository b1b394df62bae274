#include "weir_http_mitm.h"

#include <arpa/inet.h>
#include <openssl/pem.h>

/*
 * The mitm module: TLS interception in a forward proxy (docs/mitm.md).
 *
 * A CONNECT goes as a tunnel does (the forward proxy's checks, the
 * resolver, the connect with proxy_next_upstream, 502 when the origin
 * cannot be reached) until the origin is connected and the "200
 * Connection established" is on its way. Then the upstream core asks
 * here (weir_http_upstream_t.intercept): a host mitm_hosts selects and
 * mitm_bypass does not is decrypted. The module takes the client
 * connection, for when the CONNECT request is done (hc->takeover), and
 * the origin's, for the look at the origin.
 *
 * The first byte after the CONNECT decides: not a TLS handshake, and the
 * connection is HTTP/1 whose requests go to http://TARGET. A handshake:
 * weir's own TLS, whose client-hello callback reads the SNI and the ALPN
 * offer and asks the certificate cache for the name; a name not there
 * makes the handshake wait (the ssl module's asynchronous step) for a
 * look at the origin with that SNI and offer, which gives the leaf's
 * names and the ALPN to choose. After the handshake the connection is a
 * normal HTTP/1.1 or HTTP/2 one of the CONNECT's server block, whatever
 * its requests' Host, and its requests go to https://TARGET through the
 * forward proxy (hc->forward).
 */


static weir_int_t weir_http_mitm_intercept(weir_http_upstream_t *u,
    weir_str_t *preread);
static weir_uint_t weir_http_mitm_selected(weir_http_mitm_srv_conf_t *mscf,
    weir_str_t *host, struct sockaddr *sa);
static weir_uint_t weir_http_mitm_match(weir_array_t *rules,
    weir_str_t *host, struct sockaddr *sa);
static void weir_http_mitm_takeover(weir_connection_t *c);
static void weir_http_mitm_peek_handler(weir_event_t *rev);
static void weir_http_mitm_start(weir_http_mitm_conn_t *mc,
    unsigned char first);
static void weir_http_mitm_handshake_done(weir_connection_t *c);
static int weir_http_mitm_client_hello(SSL *ssl, int *al, void *arg);
static int weir_http_mitm_alpn_select(SSL *ssl, const unsigned char **out,
    unsigned char *outlen, const unsigned char *in, unsigned int inlen,
    void *arg);
static void weir_http_mitm_cleanup(void *data);
static void weir_http_mitm_empty_handler(weir_event_t *ev);

static weir_int_t weir_http_mitm_postconfiguration(weir_conf_t *cf);
static unsigned char *weir_http_mitm_status(weir_http_request_t *r,
    unsigned char *p, unsigned char *last);
static weir_int_t weir_http_mitm_export(weir_conf_t *cf,
    weir_http_core_main_conf_t *cmcf);
static void *weir_http_mitm_create_main_conf(weir_conf_t *cf);
static char *weir_http_mitm_init_main_conf(weir_conf_t *cf, void *conf);
static void *weir_http_mitm_create_srv_conf(weir_conf_t *cf);
static char *weir_http_mitm_merge_srv_conf(weir_conf_t *cf, void *parent,
    void *child);
static char *weir_http_mitm_rules(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static weir_int_t weir_http_mitm_init_module(weir_cycle_t *cycle);
static void weir_http_mitm_exit_process(weir_cycle_t *cycle);
static void weir_http_mitm_free_key(void *data);
static weir_int_t weir_http_mitm_variable(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);


static weir_command_t  weir_http_mitm_commands[] = {

    { weir_string("mitm"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_mitm_srv_conf_t, enable),
      NULL },

    { weir_string("mitm_certificate"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_str_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_mitm_srv_conf_t, certificate),
      NULL },

    { weir_string("mitm_certificate_key"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_str_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_mitm_srv_conf_t, certificate_key),
      NULL },

    { weir_string("mitm_ca_directory"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_str_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_mitm_srv_conf_t, ca_directory),
      NULL },

    { weir_string("mitm_hosts"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_1MORE,
      weir_http_mitm_rules,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_mitm_srv_conf_t, hosts),
      NULL },

    { weir_string("mitm_bypass"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_1MORE,
      weir_http_mitm_rules,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_mitm_srv_conf_t, bypass),
      NULL },

    { weir_string("mitm_certificate_cache"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_http_mitm_cache_directive,
      WEIR_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { weir_string("mitm_certificate_store"),
      WEIR_HTTP_MAIN_CONF|WEIR_CONF_TAKE12,
      weir_http_mitm_store_directive,
      WEIR_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { weir_string("mitm_onboarding"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_str_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_mitm_srv_conf_t, onboarding),
      NULL },

    { weir_string("mitm_handshake_timeout"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_msec_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_mitm_srv_conf_t, handshake_timeout),
      NULL },

      weir_null_command
};


/* before the forward proxy's (100): the onboarding host is never
 * looked up */
static weir_http_phase_decl_t  weir_http_mitm_phases[] = {
    { WEIR_HTTP_CONTENT_PHASE, 90, "mitm_onboarding",
      weir_http_mitm_onboard_handler },
    { 0, 0, NULL, NULL }
};


static weir_http_module_t  weir_http_mitm_module_ctx = {
    NULL,                                  /* preconfiguration */
    weir_http_mitm_postconfiguration,      /* postconfiguration */

    weir_http_mitm_create_main_conf,       /* create main configuration */
    weir_http_mitm_init_main_conf,         /* init main configuration */

    weir_http_mitm_create_srv_conf,        /* create server configuration */
    weir_http_mitm_merge_srv_conf,         /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL,                                  /* merge location configuration */

    weir_http_mitm_phases,                 /* phase handlers */
    NULL,                                  /* header filters */
    NULL,                                  /* body filters */
    NULL                                   /* request body filters */
};


weir_module_t  weir_http_mitm_module = {
    WEIR_MODULE_V1,
    &weir_http_mitm_module_ctx,            /* module context */
    weir_http_mitm_commands,               /* module directives */
    WEIR_HTTP_MODULE,                      /* module type */
    NULL,                                  /* init master */
    weir_http_mitm_init_module,            /* init module */
    NULL,                                  /* init process */
    weir_http_mitm_exit_process,           /* exit process */
    NULL,                                  /* exit master */
    WEIR_MODULE_V1_PADDING
};


/* $mitm, $mitm_sni, $mitm_origin_alpn, $mitm_origin_verify */
#define WEIR_HTTP_MITM_VAR_STATE    0
#define WEIR_HTTP_MITM_VAR_SNI      1
#define WEIR_HTTP_MITM_VAR_ALPN     2
#define WEIR_HTTP_MITM_VAR_VERIFY   3
#define WEIR_HTTP_MITM_VAR_SUBJECT  4
#define WEIR_HTTP_MITM_VAR_PROTOCOL 5
#define WEIR_HTTP_MITM_VAR_CIPHER   6

static weir_str_t  weir_http_mitm_variable_names[] = {
    weir_string("mitm"),
    weir_string("mitm_sni"),
    weir_string("mitm_origin_alpn"),
    weir_string("mitm_origin_verify"),
    weir_string("mitm_origin_subject"),
    weir_string("mitm_origin_protocol"),
    weir_string("mitm_origin_cipher"),
    weir_null_string
};

/* the module's request context of a CONNECT that was tunnelled */
static char  weir_http_mitm_tunnelled;


/* ---- which CONNECTs --------------------------------------------------- */

static weir_int_t
weir_http_mitm_intercept(weir_http_upstream_t *u, weir_str_t *preread)
{
    weir_uint_t                  verify;
    weir_ssl_t                  *ssl;
    weir_str_t                   host;
    weir_connection_t           *c, *oc;
    weir_pool_cleanup_t         *cln;
    weir_http_request_t         *r;
    weir_http_mitm_conn_t       *mc;
    weir_http_connection_t      *hc;
    weir_http_mitm_srv_conf_t   *mscf;

    r = u->request;
    c = r->connection;
    hc = r->http_connection;
    oc = u->peer.connection;

    mscf = weir_http_get_module_srv_conf(r, weir_http_mitm_module);

    if (!mscf->enable || u->resolved == NULL || oc == NULL
        || hc->forward != NULL)
    {
        /* (a CONNECT inside an intercepted connection is tunnelled) */
        weir_http_set_ctx(r, &weir_http_mitm_tunnelled, weir_http_mitm_module);
        return WEIR_DECLINED;
    }

    host = u->resolved->host;

    if (host.len > 2 && host.data[0] == '[') {
        host.data++;
        host.len -= 2;
    }

    if (!weir_http_mitm_selected(mscf, &host, u->peer.sockaddr)) {
        weir_http_set_ctx(r, &weir_http_mitm_tunnelled, weir_http_mitm_module);
        return WEIR_DECLINED;
    }

    if (r->proto != &weir_http_v1_proto) {
        /* a CONNECT stream of HTTP/2: tunnelled (docs/mitm.md) */
        weir_log_error(WEIR_LOG_INFO, c->log, 0,
                       "CONNECT over HTTP/2 to \"%.*s\" is tunnelled, not "
                       "decrypted", WEIR_STR_ARG(host));
        weir_http_set_ctx(r, &weir_http_mitm_tunnelled, weir_http_mitm_module);
        return WEIR_DECLINED;
    }

    ssl = weir_http_proxy_ssl_forward_ssl(r, &verify);

    if (ssl == NULL) {
        weir_log_error(WEIR_LOG_ERR, c->log, 0,
                       "no TLS context for the origins of \"%.*s\"",
                       WEIR_STR_ARG(host));
        return WEIR_ERROR;
    }

    mc = weir_pcalloc(c->pool, sizeof(weir_http_mitm_conn_t));
    cln = weir_pool_cleanup_add(c->pool, 0);

    if (mc == NULL || cln == NULL) {
        return WEIR_ERROR;
    }

    mc->c = c;
    mc->hc = hc;
    mc->mscf = mscf;
    mc->mmcf = weir_http_get_module_main_conf(r, weir_http_mitm_module);
    mc->cscf = weir_http_get_module_srv_conf(r, weir_http_core_module);
    mc->port = u->resolved->port;
    mc->origin_ssl = ssl;
    mc->verify = verify;
    mc->origin_timeout = u->conf->connect_timeout;
    mc->target.data = mc;
    mc->leaf_key = mscf->zone ? weir_http_mitm_shared_key(mscf->zone, c->log)
                              : mc->mmcf->leaf_key;

    if (mc->leaf_key == NULL) {
        return WEIR_ERROR;
    }

    if (weir_pstrfmt(c->pool, &mc->target.authority, "%.*s:%u",
                     WEIR_STR_ARG(u->resolved->host), (unsigned) mc->port)
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    mc->host.data = weir_pnalloc(c->pool, host.len + 1);
    if (mc->host.data == NULL) {
        return WEIR_ERROR;
    }

    mc->host.len = host.len;
    weir_memcpy(mc->host.data, host.data, host.len);
    mc->host.data[host.len] = '\0';
    weir_strlow(mc->host.data, mc->host.data, host.len);

    if (preread->len) {
        mc->preread.data = weir_pnalloc(c->pool, preread->len);
        if (mc->preread.data == NULL) {
            return WEIR_ERROR;
        }

        mc->preread.len = preread->len;
        weir_memcpy(mc->preread.data, preread->data, preread->len);
    }

    cln->handler = weir_http_mitm_cleanup;
    cln->data = mc;

    /* the origin connection is this module's until the look (or until
     * it turns out not to be needed); nothing of the request may be
     * reached from its events */
    u->peer.connection = NULL;
    mc->origin = oc;

    if (oc->read->timer_set) {
        weir_event_del_timer(oc->read);
    }

    if (oc->write->timer_set) {
        weir_event_del_timer(oc->write);
    }

    weir_http_mitm_hold_origin(oc, &mc->origin);

    hc->forward = &mc->target;
    hc->takeover = weir_http_mitm_takeover;

    return WEIR_OK;
}


static weir_uint_t
weir_http_mitm_selected(weir_http_mitm_srv_conf_t *mscf, weir_str_t *host,
    struct sockaddr *sa)
{
    if (mscf->hosts && !weir_http_mitm_match(mscf->hosts, host, sa)) {
        return 0;
    }

    return !(mscf->bypass && weir_http_mitm_match(mscf->bypass, host, sa));
}


static weir_uint_t
weir_http_mitm_match(weir_array_t *rules, weir_str_t *host,
    struct sockaddr *sa)
{
    size_t                  len;
    weir_str_t              name;
    weir_uint_t             i;
    weir_http_mitm_rule_t  *rule;
    unsigned char           buf[WEIR_HTTP_MITM_MAX_NAME];

    len = weir_min(host->len, sizeof(buf));
    weir_strlow(buf, host->data, len);
    name.data = buf;
    name.len = len;

    rule = rules->elts;

    for (i = 0; i < rules->nelts; i++) {

        switch (rule[i].type) {

        case WEIR_HTTP_MITM_EXACT:
            if (weir_str_eq(&name, &rule[i].name)) {
                return 1;
            }
            break;

        case WEIR_HTTP_MITM_SUFFIX:
        case WEIR_HTTP_MITM_SUB:
            /* ".a.test": a.test too; "*.a.test": only below it */
            if (rule[i].type == WEIR_HTTP_MITM_SUFFIX
                && name.len == rule[i].name.len - 1
                && weir_memcmp(name.data, rule[i].name.data + 1, name.len)
                   == 0)
            {
                return 1;
            }

            if (name.len > rule[i].name.len
                && weir_memcmp(name.data + name.len - rule[i].name.len,
                               rule[i].name.data, rule[i].name.len) == 0)
            {
                return 1;
            }
            break;

        case WEIR_HTTP_MITM_REGEX:
            if (weir_regex_exec(rule[i].regex, &name, NULL, 0) >= 0) {
                return 1;
            }
            break;

        default: /* WEIR_HTTP_MITM_CIDR */
            if (sa && weir_cidr_match(&rule[i].cidr, sa)) {
                return 1;
            }
            break;
        }
    }

    return 0;
}


/* ---- the client connection ------------------------------------------- */

/* the CONNECT request is done: the connection is this module's */

static void
weir_http_mitm_takeover(weir_connection_t *c)
{
    weir_event_t            *rev;
    weir_http_mitm_conn_t   *mc;
    weir_http_connection_t  *hc;

    hc = c->data;
    mc = hc->forward->data;

    c->log->action = "reading the intercepted connection";

    rev = c->read;

    weir_event_add_timer(rev, mc->mscf->handshake_timeout);

    if (mc->preread.len) {
        weir_http_mitm_start(mc, mc->preread.data[0]);
        return;
    }

    rev->handler = weir_http_mitm_peek_handler;
    c->write->handler = weir_http_mitm_empty_handler;

    if (weir_handle_read_event(rev, 0) != WEIR_OK) {
        weir_http_close_connection(c);
        return;
    }

    if (rev->ready) {
        weir_http_mitm_peek_handler(rev);
    }
}


static void
weir_http_mitm_peek_handler(weir_event_t *rev)
{
    unsigned char            first;
    weir_connection_t       *c;
    weir_http_mitm_conn_t   *mc;
    weir_http_connection_t  *hc;

    c = rev->data;
    hc = c->data;
    mc = hc->forward->data;

    if (rev->timedout) {
        weir_log_error(WEIR_LOG_INFO, c->log, WEIR_ETIMEDOUT,
                       "client timed out after CONNECT \"%.*s\"",
                       WEIR_STR_ARG(mc->target.authority));
        c->timedout = 1;
        weir_http_close_connection(c);
        return;
    }

    switch (weir_connection_peek(c, &first)) {

    case WEIR_OK:
        weir_http_mitm_start(mc, first);
        return;

    case WEIR_AGAIN:
        if (weir_handle_read_event(rev, 0) != WEIR_OK) {
            weir_http_close_connection(c);
        }

        return;

    case WEIR_DONE:
        weir_log_debug(c->log, 0, "client closed the connection after "
                       "CONNECT");
        /* fall through */

    default:
        weir_http_close_connection(c);
        return;
    }
}


/* a TLS handshake (0x16), or plain HTTP */

static void
weir_http_mitm_start(weir_http_mitm_conn_t *mc, unsigned char first)
{
    weir_int_t               rc;
    weir_connection_t       *c;
    weir_ssl_conn_t         *sc;
    weir_http_connection_t  *hc;

    c = mc->c;
    hc = mc->hc;

    hc->fixed_server = mc->cscf;
    hc->conf_ctx = mc->cscf->ctx;

    if (first != 0x16) {
        /* plain HTTP inside the CONNECT: to http://TARGET; the requests
         * make their own connections */
        if (mc->origin) {
            weir_http_mitm_forget(mc);
        }

        if (c->read->timer_set) {
            weir_event_del_timer(c->read);
        }

        c->log->action = "waiting for request";
        weir_http_v1_init_connection_preread(c, mc->preread.data,
                                             mc->preread.len);
        return;
    }

    if (weir_ssl_create_connection(&mc->mscf->ssl, c, 0) != WEIR_OK
        || weir_ssl_set_preread(c, mc->preread.data, mc->preread.len)
           != WEIR_OK)
    {
        weir_http_close_connection(c);
        return;
    }

    c->log->action = "SSL handshaking with an intercepted client";

    sc = weir_ssl_conn(c);
    sc->handler = weir_http_mitm_handshake_done;
    sc->data = mc;

    rc = weir_ssl_handshake(c);

    if (rc == WEIR_AGAIN) {
        return;
    }

    weir_http_mitm_handshake_done(c);
}


static int
weir_http_mitm_client_hello(SSL *ssl, int *al, void *arg)
{
    weir_int_t              rc;
    weir_str_t              sni, offer;
    weir_ssl_conn_t        *sc;
    weir_connection_t      *c;
    weir_http_mitm_conn_t  *mc;

    (void) arg;

    c = SSL_get_ex_data(ssl, weir_ssl_connection_index);
    sc = weir_ssl_conn(c);
    mc = sc->data;

    if (!mc->hello) {
        mc->hello = 1;

        weir_ssl_client_hello_server_name(ssl, &sni);

        if (sni.len) {
            /* lowercase, checked, in c->pool: as SNI is for servers */
            if (weir_http_validate_host(&sni, c->pool, 1) == WEIR_OK) {
                mc->sni = sni;

            } else {
                weir_log_error(WEIR_LOG_INFO, c->log, 0,
                               "client sent invalid server name \"%.*s\", "
                               "\"%.*s\" is used", WEIR_STR_ARG(sni),
                               WEIR_STR_ARG(mc->host));
            }
        }

        weir_ssl_client_hello_alpn(ssl, &offer);

        if (offer.len) {
            mc->alpn_offer.data = weir_pnalloc(c->pool, offer.len);
            if (mc->alpn_offer.data == NULL) {
                *al = SSL_AD_INTERNAL_ERROR;
                return SSL_CLIENT_HELLO_ERROR;
            }

            mc->alpn_offer.len = offer.len;
            weir_memcpy(mc->alpn_offer.data, offer.data, offer.len);
        }

        mc->name = mc->sni.len ? mc->sni : mc->host;
    }

    rc = weir_http_mitm_find(mc);

    if (rc == WEIR_AGAIN) {
        return SSL_CLIENT_HELLO_RETRY;
    }

    if (rc != WEIR_OK || mc->leaf == NULL) {
        *al = SSL_AD_INTERNAL_ERROR;
        return SSL_CLIENT_HELLO_ERROR;
    }

    if (SSL_use_cert_and_key(ssl, mc->leaf, mc->leaf_key,
                             mc->mscf->ca->chain, 1)
        != 1)
    {
        weir_ssl_error(WEIR_LOG_ALERT, c->log, 0,
                       "SSL_use_cert_and_key() failed");
        *al = SSL_AD_INTERNAL_ERROR;
        return SSL_CLIENT_HELLO_ERROR;
    }

    mc->served = 1;
    mc->mmcf->served++;

    if (mc->mscf->zone) {
        weir_http_mitm_shared_served(mc->mscf->zone);
    }

    return SSL_CLIENT_HELLO_SUCCESS;
}


/*
 * The origin's choice, when the client offered it; else http/1.1 when
 * it offered that, else h2 (bridged to the origin by the core); no
 * ALPN at all when neither was offered.
 */

static int
weir_http_mitm_alpn_select(SSL *ssl, const unsigned char **out,
    unsigned char *outlen, const unsigned char *in, unsigned int inlen,
    void *arg)
{
    unsigned int                 i, n;
    const unsigned char         *h2, *h11;
    weir_connection_t           *c;
    weir_http_mitm_conn_t       *mc;
    weir_http_core_main_conf_t  *cmcf;

    (void) arg;

    c = SSL_get_ex_data(ssl, weir_ssl_connection_index);
    mc = weir_ssl_conn(c)->data;
    cmcf = mc->cscf->ctx->main_conf[weir_http_core_module.ctx_index];

    h2 = NULL;
    h11 = NULL;

    for (i = 0; i < inlen; i += n + 1) {
        n = in[i];

        if (n > inlen - i - 1) {
            break;
        }

        if (n == 2 && in[i + 1] == 'h' && in[i + 2] == '2') {
            h2 = &in[i + 1];

        } else if (n == 8 && weir_strncmp(&in[i + 1], "http/1.1", 8) == 0) {
            h11 = &in[i + 1];
        }
    }

    if (cmcf->v2 == NULL) {
        h2 = NULL;
    }

    if (h2 && (weir_http_mitm_maybe_h2(mc->alpn) || h11 == NULL)) {
        *out = h2;
        *outlen = 2;
        return SSL_TLSEXT_ERR_OK;
    }

    if (h11) {
        *out = h11;
        *outlen = 8;
        return SSL_TLSEXT_ERR_OK;
    }

    return SSL_TLSEXT_ERR_NOACK;
}


static void
weir_http_mitm_handshake_done(weir_connection_t *c)
{
    unsigned int                 len;
    weir_uint_t                  h2;
    weir_ssl_conn_t             *sc;
    const unsigned char         *data;
    weir_http_mitm_conn_t       *mc;
    weir_http_connection_t      *hc;
    weir_http_core_main_conf_t  *cmcf;

    sc = weir_ssl_conn(c);
    mc = sc->data;
    hc = mc->hc;

    if (c->read->timedout) {
        weir_log_error(WEIR_LOG_INFO, c->log, WEIR_ETIMEDOUT,
                       "client timed out in the TLS handshake for \"%.*s\"",
                       WEIR_STR_ARG(mc->name.len ? mc->name : mc->host));
        c->timedout = 1;
        weir_http_close_connection(c);
        return;
    }

    if (!sc->handshaked) {
        if (mc->served) {
            /* an alert after weir's flight, or a close: a client that
             * does not trust the CA, or pins the origin's key */
            weir_log_error(WEIR_LOG_INFO, c->log, 0,
                           "client rejected the certificate minted for "
                           "\"%.*s\"", WEIR_STR_ARG(mc->name));
        }

        weir_http_close_connection(c);
        return;
    }

    if (c->read->timer_set) {
        weir_event_del_timer(c->read);
    }

    hc->ssl = 1;
    hc->ssl_servername = mc->sni;
    mc->target.ssl = 1;

    c->log->action = "waiting for request";

    /* the request may have come with the end of the handshake */
    c->read->ready = 1;

    SSL_get0_alpn_selected(sc->connection, &data, &len);

    h2 = (len == 2 && data[0] == 'h' && data[1] == '2');

    /* the origin chose h2; or an HTTP/2 client comes after a look that
     * did not ask for it: its requests offer the origin both (auto) */
    mc->target.origin_h2 = (mc->alpn == WEIR_HTTP_MITM_ALPN_H2)
                           || (h2 && (mc->alpn & WEIR_HTTP_MITM_ALPN_UNASKED));

    if (h2) {
        cmcf = mc->cscf->ctx->main_conf[weir_http_core_module.ctx_index];
        cmcf->v2->init_connection(c, NULL, 0);
        return;
    }

    weir_http_v1_init_connection(c);
}


static void
weir_http_mitm_cleanup(void *data)
{
    weir_http_mitm_conn_t  *mc = data;

    weir_http_mitm_forget(mc);
}


static void
weir_http_mitm_empty_handler(weir_event_t *ev)
{
    (void) ev;
}


/* ---- variables -------------------------------------------------------- */

static weir_int_t
weir_http_mitm_variable(weir_http_request_t *r, weir_http_variable_value_t *v,
    uintptr_t data)
{
    const char             *s;
    weir_str_t             *f;
    weir_http_mitm_conn_t  *mc;
    weir_http_connection_t *hc;

    hc = r->http_connection;
    mc = (hc && hc->forward) ? hc->forward->data : NULL;
    s = NULL;

    switch (data) {

    case WEIR_HTTP_MITM_VAR_STATE:
        if (mc) {
            s = (r->method == WEIR_HTTP_CONNECT && !mc->target.ssl)
                ? "intercepted"
                : mc->target.ssl ? "decrypted" : "plain";

        } else if (weir_http_get_module_ctx(r, weir_http_mitm_module)
                   == &weir_http_mitm_tunnelled)
        {
            s = "tunnel";
        }
        break;

    case WEIR_HTTP_MITM_VAR_SNI:
        if (mc && mc->sni.len) {
            v->data = mc->sni.data;
            v->len = mc->sni.len;
            goto found;
        }
        break;

    case WEIR_HTTP_MITM_VAR_ALPN:
        if (mc && mc->hello) {
            s = (mc->alpn == WEIR_HTTP_MITM_ALPN_H2) ? "h2"
                : (weir_http_mitm_alpn(mc->alpn)
                   == WEIR_HTTP_MITM_ALPN_HTTP11) ? "http/1.1" : "";
        }
        break;

    case WEIR_HTTP_MITM_VAR_VERIFY:
        if (mc && mc->hello) {
            s = !mc->verify ? "off"
                : mc->target.error ? mc->target.error : "OK";
        }
        break;

    default:
        /* what the look at the origin saw (when this name was first
         * met, for a leaf from a cache) */
        if (mc == NULL) {
            break;
        }

        f = (data == WEIR_HTTP_MITM_VAR_SUBJECT) ? &mc->origin_subject
            : (data == WEIR_HTTP_MITM_VAR_PROTOCOL) ? &mc->origin_protocol
            : &mc->origin_cipher;

        if (f->len) {
            v->data = f->data;
            v->len = f->len;
            goto found;
        }

        break;
    }

    if (s == NULL) {
        v->not_found = 1;
        return WEIR_OK;
    }

    v->data = (unsigned char *) s;
    v->len = weir_strlen(s);

found:

    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return WEIR_OK;
}


/* ---- configuration ---------------------------------------------------- */

static weir_int_t
weir_http_mitm_postconfiguration(weir_conf_t *cf)
{
    weir_uint_t                  i;
    weir_http_variable_t        *var;
    weir_http_status_line_t     *line;
    weir_http_mitm_srv_conf_t   *mscf;
    weir_http_core_srv_conf_t  **cscfp;
    weir_http_core_main_conf_t  *cmcf;

    cmcf = weir_http_conf_get_module_main_conf(cf, weir_http_core_module);
    cmcf->connect_intercept = weir_http_mitm_intercept;

    /* stub_status keeps nginx's four lines unless something is
     * intercepted */
    cscfp = cmcf->servers.elts;

    for (i = 0; i < cmcf->servers.nelts; i++) {
        mscf = cscfp[i]->ctx->srv_conf[weir_http_mitm_module.ctx_index];

        if (!mscf->enable) {
            continue;
        }

        line = weir_array_push(&cmcf->status_lines);
        if (line == NULL) {
            return WEIR_ERROR;
        }

        line->max = sizeof("MITM certificates: minted  from cache  "
                           "evicted  stored  loaded  (this worker)\n")
                    + 5 * 20;
        line->write = weir_http_mitm_status;
        break;
    }

    if (weir_export_ca && !weir_export_done
        && weir_http_mitm_export(cf, cmcf) != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    for (i = 0; weir_http_mitm_variable_names[i].len; i++) {
        var = weir_http_add_variable(cf, &weir_http_mitm_variable_names[i],
                                     WEIR_HTTP_VAR_NOCACHEABLE);
        if (var == NULL) {
            return WEIR_ERROR;
        }

        var->get_handler = weir_http_mitm_variable;
        var->data = i;
    }

    return WEIR_OK;
}


/*
 * stub_status: the certificates minted, served from a cache and evicted;
 * with a store, those written to it and read from it. With a shared
 * zone, the zone's counts (every worker, since the zone was made); else
 * this worker's.
 */

static unsigned char *
weir_http_mitm_status(weir_http_request_t *r, unsigned char *p,
    unsigned char *last)
{
    weir_uint_t                  counts[WEIR_HTTP_MITM_COUNTS];
    weir_http_mitm_srv_conf_t   *mscf;
    weir_http_mitm_main_conf_t  *mmcf;

    mscf = weir_http_get_module_srv_conf(r, weir_http_mitm_module);
    mmcf = weir_http_get_module_main_conf(r, weir_http_mitm_module);

    if (mscf->zone) {
        weir_http_mitm_shared_counts(mscf->zone, counts);

    } else {
        weir_http_mitm_get_counts(counts, mmcf);
    }

    p = weir_slprintf(p, last, "MITM certificates: minted %lu from cache "
                      "%lu evicted %lu",
                      (unsigned long) counts[WEIR_HTTP_MITM_MINTED],
                      (unsigned long) weir_http_mitm_from_cache(counts),
                      (unsigned long) counts[WEIR_HTTP_MITM_EVICTED]);

    if (mmcf->store) {
        p = weir_slprintf(p, last, " stored %lu loaded %lu",
                          (unsigned long) counts[WEIR_HTTP_MITM_STORED],
                          (unsigned long) counts[WEIR_HTTP_MITM_LOADED]);
    }

    return weir_slprintf(p, last, "%s\n", mscf->zone ? "" : " (this worker)");
}


/*
 * weir -E pem|der: the CA of the first server with mitm on, to stdout
 * (what a client is told to trust; docs/mitm.md)
 */

static weir_int_t
weir_http_mitm_export(weir_conf_t *cf, weir_http_core_main_conf_t *cmcf)
{
    int                          rc;
    BIO                         *out;
    weir_uint_t                  i;
    weir_http_mitm_srv_conf_t   *mscf;
    weir_http_core_srv_conf_t  **cscfp;

    cscfp = cmcf->servers.elts;

    for (i = 0; i < cmcf->servers.nelts; i++) {
        mscf = cscfp[i]->ctx->srv_conf[weir_http_mitm_module.ctx_index];

        if (!mscf->enable || mscf->ca == NULL) {
            continue;
        }

        out = BIO_new_fp(stdout, BIO_NOCLOSE);
        if (out == NULL) {
            return WEIR_ERROR;
        }

        rc = (weir_export_ca == 1) ? PEM_write_bio_X509(out, mscf->ca->cert)
                                   : i2d_X509_bio(out, mscf->ca->cert);

        (void) BIO_flush(out);
        BIO_free(out);

        if (!rc) {
            weir_ssl_error(WEIR_LOG_EMERG, cf->log, 0,
                           "writing the interception CA failed");
            return WEIR_ERROR;
        }

        weir_export_done = 1;
        break;
    }

    return WEIR_OK;
}


static void *
weir_http_mitm_create_main_conf(weir_conf_t *cf)
{
    weir_http_mitm_main_conf_t  *mmcf;

    mmcf = weir_pcalloc(cf->pool, sizeof(weir_http_mitm_main_conf_t));
    if (mmcf == NULL) {
        return NULL;
    }

    weir_queue_init(&mmcf->lru);
    mmcf->store = WEIR_CONF_UNSET_PTR;

    return mmcf;
}


static char *
weir_http_mitm_init_main_conf(weir_conf_t *cf, void *conf)
{
    weir_http_mitm_main_conf_t  *mmcf = conf;

    (void) cf;

    if (mmcf->store == WEIR_CONF_UNSET_PTR) {
        mmcf->store = NULL;
    }

    return WEIR_CONF_OK;
}


static void *
weir_http_mitm_create_srv_conf(weir_conf_t *cf)
{
    weir_http_mitm_srv_conf_t  *conf;

    conf = weir_pcalloc(cf->pool, sizeof(weir_http_mitm_srv_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    conf->enable = WEIR_CONF_UNSET;
    conf->hosts = WEIR_CONF_UNSET_PTR;
    conf->bypass = WEIR_CONF_UNSET_PTR;
    conf->handshake_timeout = WEIR_CONF_UNSET_MSEC;
    conf->zone = WEIR_CONF_UNSET_PTR;

    return conf;
}


static char *
weir_http_mitm_merge_srv_conf(weir_conf_t *cf, void *parent, void *child)
{
    weir_http_mitm_srv_conf_t  *prev = parent;
    weir_http_mitm_srv_conf_t  *conf = child;

    SSL_CTX                     *ctx;
    weir_pool_cleanup_t         *cln;
    weir_http_mitm_main_conf_t  *mmcf;

    weir_conf_merge_value(conf->enable, prev->enable, 0);
    weir_conf_merge_str_value(conf->certificate, prev->certificate, "");
    weir_conf_merge_str_value(conf->certificate_key, prev->certificate_key,
                              "");
    weir_conf_merge_str_value(conf->ca_directory, prev->ca_directory,
                              "mitm");
    weir_conf_merge_ptr_value(conf->hosts, prev->hosts, NULL);
    weir_conf_merge_ptr_value(conf->bypass, prev->bypass, NULL);
    weir_conf_merge_msec_value(conf->handshake_timeout,
                               prev->handshake_timeout, 60000);
    weir_conf_merge_ptr_value(conf->zone, prev->zone, NULL);
    weir_conf_merge_str_value(conf->onboarding, prev->onboarding, "");

    if (weir_str_eq_lit(&conf->onboarding, "off")) {
        conf->onboarding.len = 0;
    }

    if (!conf->enable) {
        return WEIR_CONF_OK;
    }

    if (conf->certificate.len != 0 && conf->certificate_key.len == 0) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "no \"mitm_certificate_key\" is defined for "
                            "\"mitm_certificate\" \"%.*s\"",
                            WEIR_STR_ARG(conf->certificate));
        return WEIR_CONF_ERROR;
    }

    if (conf->certificate_key.len != 0 && conf->certificate.len == 0) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "no \"mitm_certificate\" is defined for "
                            "\"mitm_certificate_key\" \"%.*s\"",
                            WEIR_STR_ARG(conf->certificate_key));
        return WEIR_CONF_ERROR;
    }

    if (conf->certificate.len) {
        conf->ca = weir_http_mitm_load_ca(cf, &conf->certificate,
                                          &conf->certificate_key);

    } else {
        conf->ca = weir_http_mitm_create_ca(cf, &conf->ca_directory);
    }

    if (conf->ca == NULL) {
        return WEIR_CONF_ERROR;
    }

    mmcf = weir_http_conf_get_module_main_conf(cf, weir_http_mitm_module);

    if (mmcf->leaf_key == NULL) {
        mmcf->leaf_key = weir_http_mitm_leaf_key(cf->log);

        cln = weir_pool_cleanup_add(cf->pool, 0);

        if (mmcf->leaf_key == NULL || cln == NULL) {
            return WEIR_CONF_ERROR;
        }

        cln->handler = weir_http_mitm_free_key;
        cln->data = mmcf;
    }

    if (conf->onboarding.len) {
        weir_strlow(conf->onboarding.data, conf->onboarding.data,
                    conf->onboarding.len);

        if (weir_http_mitm_onboard_init(cf, conf) != WEIR_OK) {
            return WEIR_CONF_ERROR;
        }
    }

    conf->ssl.log = cf->log;

    if (weir_ssl_create(cf, &conf->ssl, WEIR_SSL_DEFAULT_PROTOCOLS, conf)
        != WEIR_OK)
    {
        return WEIR_CONF_ERROR;
    }

    ctx = conf->ssl.ctx;

    /* the leaf is chosen per client, once its ClientHello is read; no
     * resumption (a session would skip the look at a changed origin) */
    SSL_CTX_set_client_hello_cb(ctx, weir_http_mitm_client_hello, NULL);
    SSL_CTX_set_alpn_select_cb(ctx, weir_http_mitm_alpn_select, NULL);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);

    return WEIR_CONF_OK;
}


static void
weir_http_mitm_free_key(void *data)
{
    weir_http_mitm_main_conf_t  *mmcf = data;

    EVP_PKEY_free(mmcf->leaf_key);
    mmcf->leaf_key = NULL;
}


/*
 * mitm_hosts / mitm_bypass PATTERN ...: a name ("a.test"), ".a.test"
 * (it and its sub-names), "*.a.test" (sub-names only), "~regex" (on the
 * lowercase name), or an address or CIDR (the literal CONNECT host, and
 * the address connected to). Repeated directives add to the list.
 */

static char *
weir_http_mitm_rules(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    char                   *p = conf;
    weir_int_t              rc;
    weir_str_t             *value, v;
    weir_uint_t             i;
    weir_array_t          **rules;
    weir_regex_compile_t    rx;
    weir_http_mitm_rule_t  *rule;

    rules = (weir_array_t **) (p + cmd->offset);

    if (*rules == WEIR_CONF_UNSET_PTR) {
        *rules = weir_array_create(cf->pool, cf->args->nelts,
                                   sizeof(weir_http_mitm_rule_t));
        if (*rules == NULL) {
            return WEIR_CONF_ERROR;
        }
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {
        v = value[i];

        rule = weir_array_push(*rules);
        if (rule == NULL) {
            return WEIR_CONF_ERROR;
        }

        weir_memzero(rule, sizeof(weir_http_mitm_rule_t));

        if (v.len == 0 || v.len > WEIR_HTTP_MITM_MAX_NAME) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid pattern \"%.*s\" in \"%.*s\"",
                                WEIR_STR_ARG(v),
                                WEIR_STR_ARG(cmd->name));
            return WEIR_CONF_ERROR;
        }

        if (v.data[0] == '~') {
            weir_memzero(&rx, sizeof(weir_regex_compile_t));
            rx.pattern.data = v.data + 1;
            rx.pattern.len = v.len - 1;
            rx.pool = cf->pool;

            if (weir_regex_compile(&rx) != WEIR_OK) {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "invalid regex \"%.*s\" in \"%.*s\": "
                                    "%.*s", WEIR_STR_ARG(rx.pattern),
                                    WEIR_STR_ARG(cmd->name),
                                    WEIR_STR_ARG(rx.err));
                return WEIR_CONF_ERROR;
            }

            rule->type = WEIR_HTTP_MITM_REGEX;
            rule->regex = rx.regex;
            continue;
        }

        rc = weir_parse_cidr(&v, &rule->cidr);

        if (rc != WEIR_ERROR) {
            if (rc == WEIR_DECLINED) {
                weir_conf_log_error(WEIR_LOG_WARN, cf, 0,
                                    "low address bits of \"%.*s\" are "
                                    "meaningless", WEIR_STR_ARG(v));
            }

            rule->type = WEIR_HTTP_MITM_CIDR;
            continue;
        }

        if (v.len > 2 && v.data[0] == '*' && v.data[1] == '.') {
            rule->type = WEIR_HTTP_MITM_SUB;
            v.data++;
            v.len--;

        } else if (v.len > 1 && v.data[0] == '.') {
            rule->type = WEIR_HTTP_MITM_SUFFIX;

        } else {
            rule->type = WEIR_HTTP_MITM_EXACT;
        }

        if (weir_strlchr(v.data, v.data + v.len, '*')
            || weir_strlchr(v.data, v.data + v.len, '/'))
        {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid pattern \"%.*s\" in \"%.*s\"",
                                WEIR_STR_ARG(value[i]),
                                WEIR_STR_ARG(cmd->name));
            return WEIR_CONF_ERROR;
        }

        rule->name.data = weir_pnalloc(cf->pool, v.len);
        if (rule->name.data == NULL) {
            return WEIR_CONF_ERROR;
        }

        rule->name.len = v.len;
        weir_strlow(rule->name.data, v.data, v.len);
    }

    return WEIR_CONF_OK;
}


/* in the master, once the configuration is accepted */

static weir_int_t
weir_http_mitm_init_module(weir_cycle_t *cycle)
{
    weir_http_mitm_main_conf_t  *mmcf;

    mmcf = weir_http_cycle_get_module_main_conf(cycle, weir_http_mitm_module);

    if (mmcf == NULL || mmcf->store == NULL) {
        return WEIR_OK;
    }

    return weir_http_mitm_store_init(cycle, mmcf->store);
}


static void
weir_http_mitm_exit_process(weir_cycle_t *cycle)
{
    weir_http_mitm_main_conf_t  *mmcf;

    mmcf = weir_http_cycle_get_module_main_conf(cycle, weir_http_mitm_module);

    if (mmcf) {
        weir_http_mitm_cache_free(mmcf);
    }
}
