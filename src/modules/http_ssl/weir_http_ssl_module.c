#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_http.h"
#include "weir_ssl.h"

#include <openssl/ocsp.h>

/*
 * TLS termination: "listen ... ssl" and the ssl_* directives. The
 * module fills the core's TLS hooks table (cmcf->ssl) with
 * init_connection, which peeks at the first byte a client sends (a
 * plain HTTP request gets a plain 400 page), runs the handshake under
 * ssl_handshake_timeout, lets SNI choose the server block (and its
 * certificates) and ALPN the protocol, and then hands the connection
 * to HTTP/1. The TLS library work (contexts, certificates, the shared
 * session cache, ticket keys, TLS I/O) is weir_ssl*.c's; this file is
 * the HTTP side: configuration, callbacks, variables and the check of
 * client certificates. docs/http/ssl.md describes the directives.
 */


#define WEIR_HTTP_SSL_VERIFY_OFF             0
#define WEIR_HTTP_SSL_VERIFY_ON              1
#define WEIR_HTTP_SSL_VERIFY_OPTIONAL        2
#define WEIR_HTTP_SSL_VERIFY_OPTIONAL_NO_CA  3

/*
 * Where a directive was written, so that errors found when the
 * contexts are built (in merge, after parsing) still name the file and
 * line of the directive at fault.
 */
typedef struct {
    weir_str_t                   file;
    weir_uint_t                  line;
} weir_http_ssl_where_t;

enum {
    WEIR_HTTP_SSL_AT_CERTIFICATE = 0,
    WEIR_HTTP_SSL_AT_CIPHERS,
    WEIR_HTTP_SSL_AT_ECDH_CURVE,
    WEIR_HTTP_SSL_AT_CONF_COMMAND,
    WEIR_HTTP_SSL_AT_VERIFY,
    WEIR_HTTP_SSL_AT_CLIENT_CERTIFICATE,
    WEIR_HTTP_SSL_AT_SESSION_CACHE,
    WEIR_HTTP_SSL_AT_TICKET_KEY,
    WEIR_HTTP_SSL_AT_PROTOCOLS,
    WEIR_HTTP_SSL_AT_STAPLING,
    WEIR_HTTP_SSL_NAT
};

typedef struct {
    weir_ssl_t                   ssl;           /* ctx NULL: no
                                                   certificates here */

    weir_flag_t                  prefer_server_ciphers;
    weir_uint_t                  protocols;
    weir_uint_t                  verify;
    weir_int_t                   verify_depth;
    size_t                       buffer_size;

    ssize_t                      builtin_session_cache;
    weir_shm_zone_t             *shm_zone;
    time_t                       session_timeout;
    weir_flag_t                  session_tickets;
    weir_array_t                *session_ticket_keys;   /* of weir_str_t */

    weir_array_t                *certificates;          /* of weir_str_t */
    weir_array_t                *certificate_keys;      /* of weir_str_t */
    weir_array_t                *passwords;
    weir_array_t                *conf_commands;         /* weir_keyval_t */

    weir_str_t                   ciphers;
    weir_str_t                   ecdh_curve;
    weir_str_t                   client_certificate;

    weir_msec_t                  handshake_timeout;

    weir_flag_t                  stapling;
    weir_str_t                   stapling_file;
    weir_str_t                   staple;        /* the DER response */

    weir_http_ssl_where_t        block;         /* "server {" or "http {" */
    weir_http_ssl_where_t        at[WEIR_HTTP_SSL_NAT];
} weir_http_ssl_srv_conf_t;

/* a generic setter that also records where its directive was written */
typedef struct {
    char                      *(*set)(weir_conf_t *cf, weir_command_t *cmd,
                                      void *conf);
    weir_uint_t                  at;
    void                        *post;      /* the setter's cmd->post */
} weir_http_ssl_slot_t;

typedef weir_int_t (*weir_http_ssl_get_pt)(weir_connection_t *c,
    weir_pool_t *pool, weir_str_t *s);


static weir_int_t weir_http_ssl_preconfiguration(weir_conf_t *cf);
static weir_int_t weir_http_ssl_postconfiguration(weir_conf_t *cf);
static void *weir_http_ssl_create_srv_conf(weir_conf_t *cf);
static char *weir_http_ssl_merge_srv_conf(weir_conf_t *cf, void *parent,
    void *child);
static char *weir_http_ssl_build(weir_conf_t *cf,
    weir_http_ssl_srv_conf_t *conf, weir_conf_file_t *file);
static void weir_http_ssl_at(weir_http_ssl_srv_conf_t *conf,
    weir_conf_file_t *file, weir_uint_t at);
static weir_int_t weir_http_ssl_session_id_context(weir_conf_t *cf,
    weir_http_ssl_srv_conf_t *conf, weir_str_t *sess_ctx);

static char *weir_http_ssl_set_slot(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static char *weir_http_ssl_password_file(weir_conf_t *cf,
    weir_command_t *cmd, void *conf);
static char *weir_http_ssl_session_cache(weir_conf_t *cf,
    weir_command_t *cmd, void *conf);

static void weir_http_ssl_init_connection(weir_connection_t *c);
static void weir_http_ssl_peek_handler(weir_event_t *rev);
static void weir_http_ssl_plain_http(weir_connection_t *c);
static void weir_http_ssl_handshake_handler(weir_connection_t *c);
static void weir_http_ssl_empty_handler(weir_event_t *ev);
static int weir_http_ssl_servername(SSL *ssl_conn, int *ad, void *arg);
static weir_uint_t weir_http_ssl_resumption_allowed(SSL *ssl_conn,
    weir_connection_t *c, weir_http_ssl_srv_conf_t *sscf,
    const char *servername);
static weir_uint_t weir_http_ssl_alpn_is_h2(weir_connection_t *c);
static int weir_http_ssl_alpn_select(SSL *ssl_conn,
    const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned int inlen, void *arg);
static int weir_http_ssl_verify_callback(int ok, X509_STORE_CTX *store);
static weir_int_t weir_http_ssl_stapling(weir_conf_t *cf,
    weir_http_ssl_srv_conf_t *conf);
static int weir_http_ssl_status_callback(SSL *ssl_conn, void *arg);
static void weir_http_ssl_conf_error(weir_conf_t *cf, const char *call,
    weir_str_t *file);

static weir_int_t weir_http_ssl_verify_handler(weir_http_request_t *r);
static weir_int_t weir_http_ssl_reject(weir_http_request_t *r,
    const char *reason);
static weir_uint_t weir_http_ssl_verify_error_optional(long n);

static weir_int_t weir_http_ssl_add_variables(weir_conf_t *cf);
static weir_int_t weir_http_ssl_variable(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_ssl_get_session_id(weir_connection_t *c,
    weir_pool_t *pool, weir_str_t *s);


/* the protocols ALPN may choose, in the server's order of preference
 * (the HTTP/2 module will put "h2" first) */
static const unsigned char  weir_http_ssl_alpn[] = "\x08http/1.1";
/* with HTTP/2 enabled for the connection: h2 first */
static const unsigned char  weir_http_ssl_alpn_h2[] = "\x02h2\x08http/1.1";


static weir_conf_bitmask_t  weir_http_ssl_protocols[] = {
    { weir_string("TLSv1"), WEIR_SSL_TLSv1 },
    { weir_string("TLSv1.1"), WEIR_SSL_TLSv1_1 },
    { weir_string("TLSv1.2"), WEIR_SSL_TLSv1_2 },
    { weir_string("TLSv1.3"), WEIR_SSL_TLSv1_3 },
    { weir_null_string, 0 }
};

static weir_conf_enum_t  weir_http_ssl_verify[] = {
    { weir_string("off"), WEIR_HTTP_SSL_VERIFY_OFF },
    { weir_string("on"), WEIR_HTTP_SSL_VERIFY_ON },
    { weir_string("optional"), WEIR_HTTP_SSL_VERIFY_OPTIONAL },
    { weir_string("optional_no_ca"), WEIR_HTTP_SSL_VERIFY_OPTIONAL_NO_CA },
    { weir_null_string, 0 }
};


static weir_http_ssl_slot_t  weir_http_ssl_certificate_slot = {
    weir_conf_set_str_array_slot, WEIR_HTTP_SSL_AT_CERTIFICATE, NULL
};

static weir_http_ssl_slot_t  weir_http_ssl_protocols_slot = {
    weir_conf_set_bitmask_slot, WEIR_HTTP_SSL_AT_PROTOCOLS,
    weir_http_ssl_protocols
};

static weir_http_ssl_slot_t  weir_http_ssl_ciphers_slot = {
    weir_conf_set_str_slot, WEIR_HTTP_SSL_AT_CIPHERS, NULL
};

static weir_http_ssl_slot_t  weir_http_ssl_conf_command_slot = {
    weir_conf_set_keyval_slot, WEIR_HTTP_SSL_AT_CONF_COMMAND, NULL
};

static weir_http_ssl_slot_t  weir_http_ssl_ecdh_curve_slot = {
    weir_conf_set_str_slot, WEIR_HTTP_SSL_AT_ECDH_CURVE, NULL
};

static weir_http_ssl_slot_t  weir_http_ssl_ticket_key_slot = {
    weir_conf_set_str_array_slot, WEIR_HTTP_SSL_AT_TICKET_KEY, NULL
};

static weir_http_ssl_slot_t  weir_http_ssl_verify_slot = {
    weir_conf_set_enum_slot, WEIR_HTTP_SSL_AT_VERIFY, weir_http_ssl_verify
};

static weir_http_ssl_slot_t  weir_http_ssl_stapling_file_slot = {
    weir_conf_set_str_slot, WEIR_HTTP_SSL_AT_STAPLING, NULL
};

static weir_http_ssl_slot_t  weir_http_ssl_client_certificate_slot = {
    weir_conf_set_str_slot, WEIR_HTTP_SSL_AT_CLIENT_CERTIFICATE, NULL
};


static weir_command_t  weir_http_ssl_commands[] = {

    { weir_string("ssl_certificate"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_http_ssl_set_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_ssl_srv_conf_t, certificates),
      &weir_http_ssl_certificate_slot },

    { weir_string("ssl_certificate_key"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_http_ssl_set_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_ssl_srv_conf_t, certificate_keys),
      &weir_http_ssl_certificate_slot },

    { weir_string("ssl_password_file"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_http_ssl_password_file,
      WEIR_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { weir_string("ssl_protocols"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_1MORE,
      weir_http_ssl_set_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_ssl_srv_conf_t, protocols),
      &weir_http_ssl_protocols_slot },

    { weir_string("ssl_ciphers"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_http_ssl_set_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_ssl_srv_conf_t, ciphers),
      &weir_http_ssl_ciphers_slot },

    { weir_string("ssl_conf_command"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE2,
      weir_http_ssl_set_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_ssl_srv_conf_t, conf_commands),
      &weir_http_ssl_conf_command_slot },

    { weir_string("ssl_ecdh_curve"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_http_ssl_set_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_ssl_srv_conf_t, ecdh_curve),
      &weir_http_ssl_ecdh_curve_slot },

    { weir_string("ssl_prefer_server_ciphers"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_ssl_srv_conf_t, prefer_server_ciphers),
      NULL },

    { weir_string("ssl_buffer_size"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_size_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_ssl_srv_conf_t, buffer_size),
      NULL },

    { weir_string("ssl_session_cache"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE12,
      weir_http_ssl_session_cache,
      WEIR_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { weir_string("ssl_session_timeout"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_sec_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_ssl_srv_conf_t, session_timeout),
      NULL },

    { weir_string("ssl_session_tickets"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_ssl_srv_conf_t, session_tickets),
      NULL },

    { weir_string("ssl_session_ticket_key"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_http_ssl_set_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_ssl_srv_conf_t, session_ticket_keys),
      &weir_http_ssl_ticket_key_slot },

    { weir_string("ssl_handshake_timeout"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_msec_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_ssl_srv_conf_t, handshake_timeout),
      NULL },

    { weir_string("ssl_verify_client"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_http_ssl_set_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_ssl_srv_conf_t, verify),
      &weir_http_ssl_verify_slot },

    { weir_string("ssl_client_certificate"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_http_ssl_set_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_ssl_srv_conf_t, client_certificate),
      &weir_http_ssl_client_certificate_slot },

    { weir_string("ssl_verify_depth"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_num_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_ssl_srv_conf_t, verify_depth),
      NULL },

    { weir_string("ssl_stapling"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_ssl_srv_conf_t, stapling),
      NULL },

    { weir_string("ssl_stapling_file"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_http_ssl_set_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_ssl_srv_conf_t, stapling_file),
      &weir_http_ssl_stapling_file_slot },

    weir_null_command
};


/* client certificates are checked once the request's server is known:
 * first thing after the head is read */
static weir_http_phase_decl_t  weir_http_ssl_phases[] = {
    { WEIR_HTTP_POST_READ_PHASE, 100, "ssl", weir_http_ssl_verify_handler },
    { 0, 0, NULL, NULL }
};


static weir_http_module_t  weir_http_ssl_module_ctx = {
    weir_http_ssl_preconfiguration,        /* preconfiguration */
    weir_http_ssl_postconfiguration,       /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    weir_http_ssl_create_srv_conf,         /* create server configuration */
    weir_http_ssl_merge_srv_conf,          /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL,                                  /* merge location configuration */

    weir_http_ssl_phases,                  /* phase handlers */
    NULL,                                  /* header filters */
    NULL,                                  /* body filters */
    NULL                                   /* request body filters */
};


weir_module_t  weir_http_ssl_module = {
    WEIR_MODULE_V1,
    &weir_http_ssl_module_ctx,             /* module context */
    weir_http_ssl_commands,                /* module directives */
    WEIR_HTTP_MODULE,                      /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    WEIR_MODULE_V1_PADDING
};


/* the getters of the variables, indexed by the variable's data */
static weir_http_ssl_get_pt  weir_http_ssl_getters[] = {
    weir_ssl_get_protocol,
    weir_ssl_get_cipher_name,
    weir_ssl_get_session_reused,
    weir_http_ssl_get_session_id,
    weir_ssl_get_server_name,
    weir_ssl_get_alpn_protocol,
    weir_ssl_get_client_verify,
    weir_ssl_get_subject_dn,
    weir_ssl_get_issuer_dn,
    weir_ssl_get_serial_number,
    weir_ssl_get_fingerprint
};

static weir_str_t  weir_http_ssl_variable_names[] = {
    weir_string("ssl_protocol"),
    weir_string("ssl_cipher"),
    weir_string("ssl_session_reused"),
    weir_string("ssl_session_id"),
    weir_string("ssl_server_name"),
    weir_string("ssl_alpn_protocol"),
    weir_string("ssl_client_verify"),
    weir_string("ssl_client_s_dn"),
    weir_string("ssl_client_i_dn"),
    weir_string("ssl_client_serial"),
    weir_string("ssl_client_fingerprint"),
    weir_null_string
};


/* nginx's 497 page, sent as a 400 (see weir_http_ssl_plain_http) */
static const char  weir_http_ssl_plain_page[] =
    "<html>\r\n"
    "<head><title>400 The plain HTTP request was sent to HTTPS port"
    "</title></head>\r\n"
    "<body>\r\n"
    "<center><h1>400 Bad Request</h1></center>\r\n"
    "<center>The plain HTTP request was sent to HTTPS port</center>\r\n"
    "<hr><center>weir</center>\r\n"
    "</body>\r\n"
    "</html>\r\n";


/* ---- configuration ------------------------------------------------- */

static weir_int_t
weir_http_ssl_preconfiguration(weir_conf_t *cf)
{
    weir_http_ssl_hooks_t       *hooks;
    weir_http_core_main_conf_t  *cmcf;

    if (weir_ssl_init(cf->log) != WEIR_OK) {
        return WEIR_ERROR;
    }

    /*
     * The table belongs to this configuration; the proxy ssl module
     * (listed after this one in the addon) fills upstream_handshake in
     * its own preconfiguration.
     */

    hooks = weir_pcalloc(cf->pool, sizeof(weir_http_ssl_hooks_t));
    if (hooks == NULL) {
        return WEIR_ERROR;
    }

    hooks->init_connection = weir_http_ssl_init_connection;

    cmcf = weir_http_conf_get_module_main_conf(cf, weir_http_core_module);
    cmcf->ssl = hooks;

    return weir_http_ssl_add_variables(cf);
}


static void *
weir_http_ssl_create_srv_conf(weir_conf_t *cf)
{
    weir_http_ssl_srv_conf_t  *sscf;

    sscf = weir_pcalloc(cf->pool, sizeof(weir_http_ssl_srv_conf_t));
    if (sscf == NULL) {
        return NULL;
    }

    /*
     * set by weir_pcalloc():
     *     sscf->ssl = { NULL, ... };
     *     sscf->protocols = 0;
     *     sscf->shm_zone = NULL;
     *     sscf->ciphers = sscf->ecdh_curve = { 0, NULL };
     *     sscf->client_certificate = { 0, NULL };
     *     sscf->at[] = { { 0, NULL }, 0 };
     */

    sscf->prefer_server_ciphers = WEIR_CONF_UNSET;
    sscf->verify = WEIR_CONF_UNSET_UINT;
    sscf->verify_depth = WEIR_CONF_UNSET;
    sscf->buffer_size = WEIR_CONF_UNSET_SIZE;
    sscf->builtin_session_cache = WEIR_CONF_UNSET;
    sscf->session_timeout = WEIR_CONF_UNSET;
    sscf->session_tickets = WEIR_CONF_UNSET;
    sscf->session_ticket_keys = WEIR_CONF_UNSET_PTR;
    sscf->certificates = WEIR_CONF_UNSET_PTR;
    sscf->certificate_keys = WEIR_CONF_UNSET_PTR;
    sscf->passwords = WEIR_CONF_UNSET_PTR;
    sscf->conf_commands = WEIR_CONF_UNSET_PTR;
    sscf->handshake_timeout = WEIR_CONF_UNSET_MSEC;
    sscf->stapling = WEIR_CONF_UNSET;

    if (cf->conf_file) {
        sscf->block.file = cf->conf_file->file.name;
        sscf->block.line = cf->conf_file->line;
    }

    return sscf;
}


static char *
weir_http_ssl_merge_srv_conf(weir_conf_t *cf, void *parent, void *child)
{
    weir_http_ssl_srv_conf_t  *prev = parent;
    weir_http_ssl_srv_conf_t  *conf = child;

    char              *rv;
    weir_uint_t        i;
    weir_conf_file_t   file, *saved;

    weir_conf_merge_value(conf->prefer_server_ciphers,
                          prev->prefer_server_ciphers, 0);
    weir_conf_merge_bitmask_value(conf->protocols, prev->protocols,
                                  WEIR_SSL_DEFAULT_PROTOCOLS);
    weir_conf_merge_uint_value(conf->verify, prev->verify,
                               WEIR_HTTP_SSL_VERIFY_OFF);
    weir_conf_merge_value(conf->verify_depth, prev->verify_depth, 1);
    weir_conf_merge_size_value(conf->buffer_size, prev->buffer_size,
                               16384);

    /* the zone comes with the ssl_session_cache that named it: a level
     * with its own ssl_session_cache takes nothing from above */
    if (conf->builtin_session_cache == WEIR_CONF_UNSET) {
        conf->builtin_session_cache = prev->builtin_session_cache;
        conf->shm_zone = prev->shm_zone;
    }

    if (conf->builtin_session_cache == WEIR_CONF_UNSET) {
        conf->builtin_session_cache = WEIR_SSL_NONE_SCACHE;
    }

    weir_conf_merge_value(conf->session_timeout, prev->session_timeout, 300);
    weir_conf_merge_value(conf->session_tickets, prev->session_tickets, 1);
    weir_conf_merge_ptr_value(conf->session_ticket_keys,
                              prev->session_ticket_keys, NULL);

    weir_conf_merge_ptr_value(conf->certificates, prev->certificates, NULL);
    weir_conf_merge_ptr_value(conf->certificate_keys,
                              prev->certificate_keys, NULL);
    weir_conf_merge_ptr_value(conf->passwords, prev->passwords, NULL);
    weir_conf_merge_ptr_value(conf->conf_commands, prev->conf_commands,
                              NULL);

    weir_conf_merge_str_value(conf->ciphers, prev->ciphers,
                              "HIGH:!aNULL:!MD5");
    weir_conf_merge_str_value(conf->ecdh_curve, prev->ecdh_curve, "auto");
    weir_conf_merge_str_value(conf->client_certificate,
                              prev->client_certificate, "");

    weir_conf_merge_msec_value(conf->handshake_timeout,
                               prev->handshake_timeout, 60000);
    weir_conf_merge_value(conf->stapling, prev->stapling, 0);
    weir_conf_merge_str_value(conf->stapling_file, prev->stapling_file, "");

    for (i = 0; i < WEIR_HTTP_SSL_NAT; i++) {
        if (conf->at[i].file.len == 0) {
            conf->at[i] = prev->at[i];
        }
    }

    conf->ssl.log = cf->log;
    conf->ssl.buffer_size = conf->buffer_size;

    if (conf->certificates == NULL) {
        /* no TLS context here: a "listen ... ssl" that reaches this
         * server is refused in postconfiguration */
        return WEIR_CONF_OK;
    }

    /*
     * The contexts are built now, after parsing: errors are reported at
     * the directive that caused them, so cf->conf_file is pointed at a
     * copy whose name and line change (and is restored on every exit).
     */

    saved = cf->conf_file;

    if (saved == NULL) {
        return weir_http_ssl_build(cf, conf, NULL);
    }

    file = *saved;
    cf->conf_file = &file;

    rv = weir_http_ssl_build(cf, conf, &file);

    cf->conf_file = saved;

    return rv;
}


/* one server's SSL_CTX from its merged configuration */

static char *
weir_http_ssl_build(weir_conf_t *cf, weir_http_ssl_srv_conf_t *conf,
    weir_conf_file_t *file)
{
    weir_str_t  *cert, sess_ctx;

    weir_http_ssl_at(conf, file, WEIR_HTTP_SSL_AT_CERTIFICATE);

    if (conf->certificate_keys == NULL
        || conf->certificate_keys->nelts < conf->certificates->nelts)
    {
        cert = conf->certificates->elts;

        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "no \"ssl_certificate_key\" is defined for "
                            "certificate \"%.*s\"",
                            WEIR_STR_ARG(cert[conf->certificates->nelts - 1]));
        return WEIR_CONF_ERROR;
    }

    weir_http_ssl_at(conf, file, WEIR_HTTP_SSL_AT_PROTOCOLS);

    if (weir_ssl_create(cf, &conf->ssl, conf->protocols, conf) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    conf->ssl.log = cf->log;
    conf->ssl.buffer_size = conf->buffer_size;

    /*
     * A client that ends its half of the connection without close_notify
     * (a plain shutdown(SHUT_WR) under TLS) has only said it is done
     * sending: OpenSSL 3 otherwise makes that a fatal error, after which
     * nothing more can be written to it (the rest of a response, the
     * origin's side of an upgraded connection). On the context, so that
     * an SNI switch (which copies the options) keeps it.
     */
    SSL_CTX_set_options(conf->ssl.ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);

    SSL_CTX_set_tlsext_servername_callback(conf->ssl.ctx,
                                           weir_http_ssl_servername);
    SSL_CTX_set_alpn_select_cb(conf->ssl.ctx, weir_http_ssl_alpn_select,
                               NULL);

    weir_http_ssl_at(conf, file, WEIR_HTTP_SSL_AT_CERTIFICATE);

    if (weir_ssl_certificates(cf, &conf->ssl, conf->certificates,
                              conf->certificate_keys, conf->passwords)
        != WEIR_OK)
    {
        return WEIR_CONF_ERROR;
    }

    weir_http_ssl_at(conf, file, WEIR_HTTP_SSL_AT_CIPHERS);

    if (weir_ssl_ciphers(cf, &conf->ssl, &conf->ciphers,
                         (weir_uint_t) conf->prefer_server_ciphers)
        != WEIR_OK)
    {
        return WEIR_CONF_ERROR;
    }

    weir_http_ssl_at(conf, file, WEIR_HTTP_SSL_AT_ECDH_CURVE);

    if (weir_ssl_ecdh_curve(cf, &conf->ssl, &conf->ecdh_curve) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    if (conf->verify != WEIR_HTTP_SSL_VERIFY_OFF) {

        weir_http_ssl_at(conf, file, WEIR_HTTP_SSL_AT_VERIFY);

        if (conf->client_certificate.len == 0
            && conf->verify != WEIR_HTTP_SSL_VERIFY_OPTIONAL_NO_CA)
        {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "no \"ssl_client_certificate\" for "
                                "\"ssl_verify_client\"");
            return WEIR_CONF_ERROR;
        }

        if (conf->client_certificate.len) {
            weir_http_ssl_at(conf, file,
                             WEIR_HTTP_SSL_AT_CLIENT_CERTIFICATE);

            if (weir_ssl_client_certificate(cf, &conf->ssl,
                                            &conf->client_certificate,
                                            conf->verify_depth)
                != WEIR_OK)
            {
                return WEIR_CONF_ERROR;
            }
        }

        /*
         * As nginx: the handshake never fails for a client certificate;
         * the verification result is checked per request (400 with the
         * reason), so "optional" modes and error pages work.
         */

        SSL_CTX_set_verify(conf->ssl.ctx, SSL_VERIFY_PEER,
                           weir_http_ssl_verify_callback);
        SSL_CTX_set_verify_depth(conf->ssl.ctx, (int) conf->verify_depth);
    }

    if (weir_http_ssl_session_id_context(cf, conf, &sess_ctx) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    weir_http_ssl_at(conf, file, WEIR_HTTP_SSL_AT_SESSION_CACHE);

    if (weir_ssl_session_cache(cf, &conf->ssl, &sess_ctx,
                               conf->builtin_session_cache, conf->shm_zone,
                               conf->session_timeout)
        != WEIR_OK)
    {
        return WEIR_CONF_ERROR;
    }

    weir_http_ssl_at(conf, file, WEIR_HTTP_SSL_AT_TICKET_KEY);

    if (weir_ssl_session_tickets(cf, &conf->ssl, conf->session_tickets)
        != WEIR_OK)
    {
        return WEIR_CONF_ERROR;
    }

    if (conf->session_tickets && conf->session_ticket_keys
        && weir_ssl_session_ticket_keys(cf, &conf->ssl,
                                        conf->session_ticket_keys)
           != WEIR_OK)
    {
        return WEIR_CONF_ERROR;
    }

    if (conf->stapling) {
        weir_http_ssl_at(conf, file, WEIR_HTTP_SSL_AT_STAPLING);

        if (weir_http_ssl_stapling(cf, conf) != WEIR_OK) {
            return WEIR_CONF_ERROR;
        }
    }

    /* last, so that a command may override what the directives set */

    if (conf->conf_commands) {
        weir_http_ssl_at(conf, file, WEIR_HTTP_SSL_AT_CONF_COMMAND);

        if (weir_ssl_conf_commands(cf, &conf->ssl, conf->conf_commands)
            != WEIR_OK)
        {
            return WEIR_CONF_ERROR;
        }
    }

    return WEIR_CONF_OK;
}


/*
 * OCSP stapling from a file (ssl_stapling_file: a DER OCSP response, as
 * "openssl ocsp -respout" writes it), read when the configuration is
 * read and sent to every client that asks. weir does not query OCSP
 * responders: refresh the file and reload.
 */

static weir_int_t
weir_http_ssl_stapling(weir_conf_t *cf, weir_http_ssl_srv_conf_t *conf)
{
    int             len;
    BIO            *bio;
    weir_str_t      name;
    unsigned char  *p;
    OCSP_RESPONSE  *resp;

    if (conf->stapling_file.len == 0) {
        weir_conf_log_error(WEIR_LOG_WARN, cf, 0,
                            "\"ssl_stapling\" ignored: weir staples only "
                            "from \"ssl_stapling_file\"");
        return WEIR_OK;
    }

    name = conf->stapling_file;

    if (weir_conf_full_name(cf->cycle, &name, 1) != WEIR_OK) {
        return WEIR_ERROR;
    }

    ERR_clear_error();

    bio = BIO_new_file((char *) name.data, "rb");
    if (bio == NULL) {
        weir_http_ssl_conf_error(cf, "BIO_new_file", &name);
        return WEIR_ERROR;
    }

    resp = d2i_OCSP_RESPONSE_bio(bio, NULL);

    BIO_free(bio);

    if (resp == NULL) {
        weir_http_ssl_conf_error(cf, "d2i_OCSP_RESPONSE_bio", &name);
        return WEIR_ERROR;
    }

    len = i2d_OCSP_RESPONSE(resp, NULL);

    if (len <= 0) {
        OCSP_RESPONSE_free(resp);
        weir_http_ssl_conf_error(cf, "i2d_OCSP_RESPONSE", &name);
        return WEIR_ERROR;
    }

    conf->staple.data = weir_pnalloc(cf->pool, (size_t) len);
    if (conf->staple.data == NULL) {
        OCSP_RESPONSE_free(resp);
        return WEIR_ERROR;
    }

    p = conf->staple.data;
    len = i2d_OCSP_RESPONSE(resp, &p);

    OCSP_RESPONSE_free(resp);

    if (len <= 0) {
        weir_http_ssl_conf_error(cf, "i2d_OCSP_RESPONSE", &name);
        return WEIR_ERROR;
    }

    conf->staple.len = (size_t) len;

    SSL_CTX_set_tlsext_status_cb(conf->ssl.ctx,
                                 weir_http_ssl_status_callback);
    SSL_CTX_set_tlsext_status_arg(conf->ssl.ctx, &conf->staple);

    return WEIR_OK;
}


/* "<call>("file") failed (SSL: reason) in file:line" */

static void
weir_http_ssl_conf_error(weir_conf_t *cf, const char *call, weir_str_t *file)
{
    char           reason[256];
    unsigned long  n;

    n = ERR_peek_last_error();

    if (n) {
        ERR_error_string_n(n, reason, sizeof(reason));

    } else {
        weir_memcpy(reason, "no reason", sizeof("no reason"));
    }

    ERR_clear_error();

    weir_conf_log_error(WEIR_LOG_EMERG, cf, 0, "%s(\"%.*s\") failed (SSL: %s)",
                        call, WEIR_STR_ARG(*file), reason);
}


/* a client asked for the certificate status: a copy of the staple
 * (OpenSSL frees it with the connection) */

static int
weir_http_ssl_status_callback(SSL *ssl_conn, void *arg)
{
    weir_str_t     *staple;
    unsigned char  *p;

    staple = arg;

    if (staple == NULL || staple->len == 0) {
        return SSL_TLSEXT_ERR_NOACK;
    }

    p = OPENSSL_malloc(staple->len);
    if (p == NULL) {
        return SSL_TLSEXT_ERR_NOACK;
    }

    weir_memcpy(p, staple->data, staple->len);

    if (SSL_set_tlsext_status_ocsp_resp(ssl_conn, p, (long) staple->len)
        == 0)
    {
        OPENSSL_free(p);
        return SSL_TLSEXT_ERR_NOACK;
    }

    return SSL_TLSEXT_ERR_OK;
}


/* points the configuration file copy at the directive `at` (or at the
 * block when it was inherited from nowhere) */

static void
weir_http_ssl_at(weir_http_ssl_srv_conf_t *conf, weir_conf_file_t *file,
    weir_uint_t at)
{
    weir_http_ssl_where_t  *w;

    if (file == NULL) {
        return;
    }

    w = conf->at[at].file.len ? &conf->at[at] : &conf->block;

    if (w->file.len == 0) {
        return;
    }

    file->file.name = w->file;
    file->line = w->line;
}


/*
 * The session id context: a hash of the server's certificates and of
 * its client verification settings, so that a session (from the shared
 * cache or a ticket) resumes only on a server block that would have
 * accepted the same full handshake. It is the same across workers and
 * reloads as long as those do not change.
 */

static weir_int_t
weir_http_ssl_session_id_context(weir_conf_t *cf,
    weir_http_ssl_srv_conf_t *conf, weir_str_t *sess_ctx)
{
    int             rc;
    X509           *cert;
    EVP_MD_CTX     *md;
    unsigned int    len;
    unsigned char   buf[EVP_MAX_MD_SIZE], verify;

    md = EVP_MD_CTX_new();
    if (md == NULL) {
        weir_ssl_error(WEIR_LOG_EMERG, cf->log, 0, "EVP_MD_CTX_new() failed");
        return WEIR_ERROR;
    }

    if (EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 0) {
        weir_ssl_error(WEIR_LOG_EMERG, cf->log, 0,
                       "EVP_DigestInit_ex() failed");
        goto failed;
    }

    for (rc = SSL_CTX_set_current_cert(conf->ssl.ctx, SSL_CERT_SET_FIRST);
         rc;
         rc = SSL_CTX_set_current_cert(conf->ssl.ctx, SSL_CERT_SET_NEXT))
    {
        cert = SSL_CTX_get0_certificate(conf->ssl.ctx);
        if (cert == NULL) {
            continue;
        }

        if (X509_digest(cert, EVP_sha256(), buf, &len) == 0
            || EVP_DigestUpdate(md, buf, len) == 0)
        {
            weir_ssl_error(WEIR_LOG_EMERG, cf->log, 0,
                           "X509_digest() failed");
            goto failed;
        }
    }

    verify = (unsigned char) conf->verify;

    if (EVP_DigestUpdate(md, &verify, 1) == 0
        || EVP_DigestUpdate(md, conf->client_certificate.data,
                            conf->client_certificate.len)
           == 0
        || EVP_DigestFinal_ex(md, buf, &len) == 0)
    {
        weir_ssl_error(WEIR_LOG_EMERG, cf->log, 0,
                       "EVP_DigestFinal_ex() failed");
        goto failed;
    }

    EVP_MD_CTX_free(md);

    if (len > SSL_MAX_SID_CTX_LENGTH) {
        len = SSL_MAX_SID_CTX_LENGTH;
    }

    sess_ctx->data = weir_pnalloc(cf->pool, len);
    if (sess_ctx->data == NULL) {
        return WEIR_ERROR;
    }

    weir_memcpy(sess_ctx->data, buf, len);
    sess_ctx->len = len;

    return WEIR_OK;

failed:

    EVP_MD_CTX_free(md);

    return WEIR_ERROR;
}


/*
 * Every server block that a "listen ... ssl" address may select needs a
 * certificate (its own or the http level's): refused here, with the
 * place of the server block, as nginx words it.
 */

static weir_int_t
weir_http_ssl_postconfiguration(weir_conf_t *cf)
{
    weir_uint_t                   p, a, s;
    weir_http_conf_port_t        *port;
    weir_http_conf_addr_t        *addr;
    weir_http_ssl_srv_conf_t     *sscf;
    weir_http_core_srv_conf_t   **cscfp, *cscf;
    weir_http_core_main_conf_t   *cmcf;

    cmcf = weir_http_conf_get_module_main_conf(cf, weir_http_core_module);

    if (cmcf->ports == NULL) {
        return WEIR_OK;
    }

    port = cmcf->ports->elts;

    for (p = 0; p < cmcf->ports->nelts; p++) {

        addr = port[p].addrs.elts;

        for (a = 0; a < port[p].addrs.nelts; a++) {

            if (!addr[a].opt.ssl) {
                continue;
            }

            cscfp = addr[a].servers.elts;

            for (s = 0; s <= addr[a].servers.nelts; s++) {

                cscf = (s == addr[a].servers.nelts) ? addr[a].default_server
                                                    : cscfp[s];
                if (cscf == NULL) {
                    continue;
                }

                sscf = cscf->ctx->srv_conf[weir_http_ssl_module.ctx_index];

                if (sscf->ssl.ctx) {
                    continue;
                }

                weir_log_error(WEIR_LOG_EMERG, cf->log, 0,
                               "no \"ssl_certificate\" is defined for "
                               "the \"listen ... ssl\" directive in %s:%lu",
                               cscf->file_name ? (char *) cscf->file_name
                                               : "?",
                               (unsigned long) cscf->line);
                return WEIR_ERROR;
            }
        }
    }

    return WEIR_OK;
}


/* a generic setter (slot->set) that records where the directive is */

static char *
weir_http_ssl_set_slot(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    char                      *rv;
    weir_command_t             plain;
    weir_http_ssl_slot_t      *slot;
    weir_http_ssl_where_t     *w;
    weir_http_ssl_srv_conf_t  *sscf;

    sscf = conf;
    slot = cmd->post;

    plain = *cmd;
    plain.post = slot->post;

    rv = slot->set(cf, &plain, conf);

    if (rv != WEIR_CONF_OK) {
        return rv;
    }

    w = &sscf->at[slot->at];

    if (w->file.len == 0 && cf->conf_file) {
        w->file = cf->conf_file->file.name;
        w->line = cf->conf_file->line;
    }

    return WEIR_CONF_OK;
}


static char *
weir_http_ssl_password_file(weir_conf_t *cf, weir_command_t *cmd,
    void *conf)
{
    weir_str_t                *value;
    weir_http_ssl_srv_conf_t  *sscf;

    (void) cmd;

    sscf = conf;

    if (sscf->passwords != WEIR_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    sscf->passwords = weir_ssl_read_password_file(cf, &value[1]);
    if (sscf->passwords == NULL) {
        return WEIR_CONF_ERROR;
    }

    return WEIR_CONF_OK;
}


/*
 * ssl_session_cache off | none | [builtin[:size]] [shared:name:size]
 */

static char *
weir_http_ssl_session_cache(weir_conf_t *cf, weir_command_t *cmd,
    void *conf)
{
    size_t                     len;
    ssize_t                    n;
    weir_str_t                *value, name, size;
    weir_uint_t                i, j;
    weir_http_ssl_srv_conf_t  *sscf;

    (void) cmd;

    sscf = conf;

    if (sscf->builtin_session_cache != WEIR_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {

        if (weir_str_eq_lit(&value[i], "off")) {
            if (cf->args->nelts != 2) {
                goto invalid;
            }

            sscf->builtin_session_cache = WEIR_SSL_NO_SCACHE;
            continue;
        }

        if (weir_str_eq_lit(&value[i], "none")) {
            if (cf->args->nelts != 2) {
                goto invalid;
            }

            sscf->builtin_session_cache = WEIR_SSL_NONE_SCACHE;
            continue;
        }

        if (weir_str_eq_lit(&value[i], "builtin")) {
            sscf->builtin_session_cache = WEIR_SSL_DFLT_BUILTIN_SCACHE;
            continue;
        }

        len = sizeof("builtin:") - 1;

        if (value[i].len > len
            && weir_strncmp(value[i].data, "builtin:", len) == 0)
        {
            n = weir_atosz(value[i].data + len, value[i].len - len);
            if (n <= 0) {
                goto invalid;
            }

            sscf->builtin_session_cache = n;
            continue;
        }

        len = sizeof("shared:") - 1;

        if (value[i].len > len
            && weir_strncmp(value[i].data, "shared:", len) == 0)
        {
            if (sscf->shm_zone) {
                goto invalid;
            }

            name.data = value[i].data + len;
            name.len = 0;

            for (j = len; j < value[i].len; j++) {
                if (value[i].data[j] == ':') {
                    break;
                }

                name.len++;
            }

            if (name.len == 0 || j == value[i].len) {
                goto invalid;
            }

            size.data = value[i].data + j + 1;
            size.len = value[i].len - j - 1;

            n = weir_parse_size(&size);

            if (n == WEIR_ERROR) {
                goto invalid;
            }

            if (n < (ssize_t) (8 * weir_pagesize)) {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "session cache \"%.*s\" is too small",
                                    WEIR_STR_ARG(value[i]));
                return WEIR_CONF_ERROR;
            }

            sscf->shm_zone = weir_shared_memory_add(cf, &name, (size_t) n,
                                                    &weir_http_ssl_module);
            if (sscf->shm_zone == NULL) {
                return WEIR_CONF_ERROR;
            }

            sscf->shm_zone->init = weir_ssl_session_cache_init;
            continue;
        }

        goto invalid;
    }

    if (sscf->shm_zone && sscf->builtin_session_cache == WEIR_CONF_UNSET) {
        sscf->builtin_session_cache = WEIR_SSL_NO_BUILTIN_SCACHE;
    }

    if (cf->conf_file) {
        sscf->at[WEIR_HTTP_SSL_AT_SESSION_CACHE].file =
                                                    cf->conf_file->file.name;
        sscf->at[WEIR_HTTP_SSL_AT_SESSION_CACHE].line = cf->conf_file->line;
    }

    return WEIR_CONF_OK;

invalid:

    weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                        "invalid session cache \"%.*s\"",
                        WEIR_STR_ARG(value[i]));

    return WEIR_CONF_ERROR;
}


/* ---- connections --------------------------------------------------- */

/*
 * hooks->init_connection: the connection was accepted on a "listen ...
 * ssl" address. The handshake timer starts now and bounds everything
 * up to the end of the handshake.
 */

static void
weir_http_ssl_init_connection(weir_connection_t *c)
{
    weir_event_t              *rev;
    weir_http_connection_t    *hc;
    weir_http_ssl_srv_conf_t  *sscf;

    hc = c->data;

    sscf = hc->conf_ctx->srv_conf[weir_http_ssl_module.ctx_index];

    if (sscf->ssl.ctx == NULL) {
        /* postconfiguration refuses this; never trust it blindly */
        weir_log_error(WEIR_LOG_ERR, c->log, 0,
                       "no TLS context for the default server");
        weir_http_close_connection(c);
        return;
    }

    c->log->action = "SSL handshaking";

    rev = c->read;
    rev->handler = weir_http_ssl_peek_handler;
    c->write->handler = weir_http_ssl_empty_handler;

    weir_event_add_timer(rev, sscf->handshake_timeout);

    if (rev->ready) {
        /* deferred accept: the ClientHello is already there */
        weir_http_ssl_peek_handler(rev);
        return;
    }

    if (weir_handle_read_event(rev, 0) != WEIR_OK) {
        weir_http_close_connection(c);
        return;
    }
}


/*
 * The first byte tells TLS (a handshake record, 0x16) from anything
 * else, which is answered as a plain HTTP request to the TLS port.
 */

static void
weir_http_ssl_peek_handler(weir_event_t *rev)
{
    weir_connection_t         *c;
    weir_ssl_conn_t           *sc;
    weir_http_connection_t    *hc;
    weir_http_ssl_srv_conf_t  *sscf;
    unsigned char              buf[1];

    c = rev->data;
    hc = c->data;

    if (rev->timedout) {
        weir_log_error(WEIR_LOG_INFO, c->log, WEIR_ETIMEDOUT,
                       "client timed out");
        c->timedout = 1;
        weir_http_close_connection(c);
        return;
    }

    switch (weir_connection_peek(c, buf)) {

    case WEIR_OK:
        break;

    case WEIR_AGAIN:
        if (weir_handle_read_event(rev, 0) != WEIR_OK) {
            weir_http_close_connection(c);
        }

        return;

    case WEIR_DONE:
        weir_log_debug(c->log, 0, "client closed connection before "
                       "the TLS handshake");
        /* fall through */

    default:
        weir_http_close_connection(c);
        return;
    }

    if (buf[0] != 0x16) {
        weir_http_ssl_plain_http(c);
        return;
    }

    sscf = hc->conf_ctx->srv_conf[weir_http_ssl_module.ctx_index];

    if (weir_ssl_create_connection(&sscf->ssl, c, 0) != WEIR_OK) {
        weir_http_close_connection(c);
        return;
    }

    sc = weir_ssl_conn(c);
    sc->handler = weir_http_ssl_handshake_handler;
    sc->data = hc;

    switch (weir_ssl_handshake(c)) {

    case WEIR_AGAIN:
        /* weir_ssl_connection.c drives it from the events and calls the
         * handler; the handshake timer stays armed on c->read */
        return;

    case WEIR_OK:
        weir_http_ssl_handshake_handler(c);
        return;

    default:
        weir_http_close_connection(c);
        return;
    }
}


/*
 * A plain HTTP request on the TLS port. nginx answers with its 497
 * ("400 The plain HTTP request was sent to HTTPS port") through the
 * whole request machinery; weir answers the same page at once, without
 * parsing the request, and closes. What the client sent is read first
 * (as much as is there), so that closing does not reset the connection
 * under the answer.
 */

static void
weir_http_ssl_plain_http(weir_connection_t *c)
{
    ssize_t         n;
    weir_uint_t     i;
    unsigned char  *p, buf[4096];

    weir_log_error(WEIR_LOG_INFO, c->log, 0,
                   "client sent plain HTTP request to HTTPS port");

    for (i = 0; i < 16; i++) {
        n = recv(c->fd, (char *) buf, sizeof(buf), 0);

        if (n < (ssize_t) sizeof(buf)) {
            break;
        }
    }

    c->log->action = "sending to client";

    p = weir_slprintf(buf, buf + sizeof(buf),
                      "HTTP/1.1 400 Bad Request\r\n"
                      "Server: weir\r\n"
                      "Content-Type: text/html\r\n"
                      "Content-Length: %u\r\n"
                      "Connection: close\r\n"
                      "\r\n"
                      "%s",
                      (unsigned) (sizeof(weir_http_ssl_plain_page) - 1),
                      weir_http_ssl_plain_page);

    /* one small write to a fresh socket: whatever it does not take is
     * lost, and the client sees a cut page at worst */
    (void) c->send(c, buf, (size_t) (p - buf));

    (void) shutdown(c->fd, SHUT_WR);

    weir_http_close_connection(c);
}


/* the end of the handshake (weir_ssl_conn(c)->handler) */

static void
weir_http_ssl_handshake_handler(weir_connection_t *c)
{
    weir_ssl_conn_t             *sc;
    weir_http_connection_t      *hc;
    weir_http_core_main_conf_t  *cmcf;

    sc = weir_ssl_conn(c);

    if (c->read->timedout) {
        weir_log_error(WEIR_LOG_INFO, c->log, WEIR_ETIMEDOUT,
                       "client timed out");
        c->timedout = 1;
        weir_http_close_connection(c);
        return;
    }

    if (sc == NULL || !sc->handshaked) {
        /* weir_ssl_connection.c has logged why (at info: a client's
         * error) */
        weir_http_close_connection(c);
        return;
    }

    if (c->read->timer_set) {
        weir_event_del_timer(c->read);
    }

    c->log->action = "waiting for request";

    /*
     * ALPN chose "http/1.1" or nothing: HTTP/1. The client may have sent
     * its request with the end of the handshake, and the TLS library may
     * hold it already: let HTTP/1 try to read at once.
     */

    c->read->ready = 1;

    if (weir_http_ssl_alpn_is_h2(c)) {
        hc = c->data;
        cmcf = hc->conf_ctx->main_conf[weir_http_core_module.ctx_index];
        cmcf->v2->init_connection(c, NULL, 0);
        return;
    }

    weir_http_v1_init_connection(c);
}


/* did ALPN choose "h2" (which it offers only with HTTP/2 enabled)? */

static weir_uint_t
weir_http_ssl_alpn_is_h2(weir_connection_t *c)
{
    unsigned int                 len;
    const unsigned char         *data;
    weir_ssl_conn_t             *sc;
    weir_http_connection_t      *hc;
    weir_http_core_main_conf_t  *cmcf;

    hc = c->data;
    cmcf = hc->conf_ctx->main_conf[weir_http_core_module.ctx_index];
    sc = weir_ssl_conn(c);

    if (cmcf->v2 == NULL || sc == NULL) {
        return 0;
    }

    SSL_get0_alpn_selected(sc->connection, &data, &len);

    return len == 2 && data[0] == 'h' && data[1] == '2';
}


static void
weir_http_ssl_empty_handler(weir_event_t *ev)
{
    (void) ev;
}


/*
 * SNI: the name selects the server block with the same rules as Host,
 * and its TLS context (certificates, verification, options) replaces
 * the default server's. hc->ssl_server is set whenever the client sent
 * a valid name (to the default server when no server_name matched), so
 * that a request whose Host selects another server block gets 421.
 */

static int
weir_http_ssl_servername(SSL *ssl_conn, int *ad, void *arg)
{
    weir_int_t                   rc;
    weir_str_t                   host;
    const char                  *servername;
    weir_connection_t           *c;
    weir_http_connection_t      *hc;
    weir_http_ssl_srv_conf_t    *sscf;
    weir_http_core_srv_conf_t   *cscf;

    (void) arg;

    c = SSL_get_ex_data(ssl_conn, weir_ssl_connection_index);
    if (c == NULL) {
        return SSL_TLSEXT_ERR_NOACK;
    }

    servername = SSL_get_servername(ssl_conn, TLSEXT_NAMETYPE_host_name);

    if (servername == NULL || servername[0] == '\0') {
        /* the default server: still no session of another name may
         * resume on it when it verifies clients */
        hc = c->data;
        sscf = hc->conf_ctx->srv_conf[weir_http_ssl_module.ctx_index];

        if (!weir_http_ssl_resumption_allowed(ssl_conn, c, sscf, NULL)) {
            *ad = SSL_AD_ACCESS_DENIED;
            return SSL_TLSEXT_ERR_ALERT_FATAL;
        }

        return SSL_TLSEXT_ERR_OK;
    }

    host.len = weir_strlen(servername);

    host.data = (unsigned char *) servername;

    weir_log_debug(c->log, 0, "SSL server name: \"%s\"", servername);

    hc = c->data;
    cscf = NULL;

    rc = weir_http_find_server(c, &host, 1, &cscf);

    if (rc == WEIR_ERROR || cscf == NULL) {
        weir_log_error(WEIR_LOG_INFO, c->log, 0,
                       "client sent invalid server name \"%.*s\"",
                       (int) weir_min(host.len, 256), servername);
        *ad = SSL_AD_UNRECOGNIZED_NAME;
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    }

    hc->ssl_servername = host;
    hc->ssl_server = cscf;
    hc->conf_ctx = cscf->ctx;

    sscf = cscf->ctx->srv_conf[weir_http_ssl_module.ctx_index];

    if (!weir_http_ssl_resumption_allowed(ssl_conn, c, sscf, servername)) {
        *ad = SSL_AD_ACCESS_DENIED;
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    }

    if (sscf->ssl.ctx == NULL
        || sscf->ssl.ctx == SSL_get_SSL_CTX(ssl_conn))
    {
        return SSL_TLSEXT_ERR_OK;
    }

    if (SSL_set_SSL_CTX(ssl_conn, sscf->ssl.ctx) == NULL) {
        weir_ssl_error(WEIR_LOG_ERR, c->log, 0, "SSL_set_SSL_CTX() failed");
        *ad = SSL_AD_INTERNAL_ERROR;
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    }

    /* SSL_set_SSL_CTX() takes the certificates only: the verification
     * and the options of the new context are copied by hand */

    SSL_set_verify(ssl_conn, SSL_CTX_get_verify_mode(sscf->ssl.ctx),
                   SSL_CTX_get_verify_callback(sscf->ssl.ctx));
    SSL_set_verify_depth(ssl_conn, SSL_CTX_get_verify_depth(sscf->ssl.ctx));

    SSL_clear_options(ssl_conn, SSL_get_options(ssl_conn)
                                & ~SSL_CTX_get_options(sscf->ssl.ctx));
    SSL_set_options(ssl_conn, SSL_CTX_get_options(sscf->ssl.ctx));

    return SSL_TLSEXT_ERR_OK;
}


/*
 * TLS 1.3 resumes a session (ticket or cache) before SNI has chosen the
 * server block, and OpenSSL checks no session id context there: a
 * session made on one server block would resume on another of the same
 * address, with the client certificate (or the absence of one) that the
 * first accepted. A server block that verifies clients therefore takes
 * only its own sessions: the session's server name must be the one
 * sent now (none for none). TLS 1.2 keeps the session's name through
 * resumption, so the check passes there and the 421 rule applies.
 */

static weir_uint_t
weir_http_ssl_resumption_allowed(SSL *ssl_conn, weir_connection_t *c,
    weir_http_ssl_srv_conf_t *sscf, const char *servername)
{
    const char   *name;
    SSL_SESSION  *sess;

    if (sscf == NULL || sscf->verify == WEIR_HTTP_SSL_VERIFY_OFF
        || sscf->verify == WEIR_CONF_UNSET_UINT)
    {
        return 1;
    }

    sess = SSL_get0_session(ssl_conn);

    if (sess == NULL || !SSL_session_reused(ssl_conn)) {
        return 1;
    }

    name = SSL_SESSION_get0_hostname(sess);

    if (name == NULL && servername == NULL) {
        return 1;
    }

    if (name && servername && weir_strcasecmp((unsigned char *) name,
                                              (unsigned char *) servername)
                              == 0)
    {
        return 1;
    }

    weir_log_error(WEIR_LOG_INFO, c->log, 0,
                   "client resumed a session of \"%s\" with server name "
                   "\"%s\" on a server that verifies client certificates: "
                   "refused", name ? name : "", servername ? servername : "");

    return 0;
}


/*
 * ALPN: http/1.1 when offered. A client that offers protocols, none of
 * which weir speaks, gets the no_application_protocol alert; a client
 * that offers none speaks HTTP/1.1.
 */

static int
weir_http_ssl_alpn_select(SSL *ssl_conn, const unsigned char **out,
    unsigned char *outlen, const unsigned char *in, unsigned int inlen,
    void *arg)
{
    size_t                       srvlen;
    unsigned char               *selected;
    const unsigned char         *srv;
    weir_connection_t           *c;
    weir_http_connection_t      *hc;
    weir_http_core_main_conf_t  *cmcf;

    (void) arg;

    c = SSL_get_ex_data(ssl_conn, weir_ssl_connection_index);

    selected = NULL;
    srv = weir_http_ssl_alpn;
    srvlen = sizeof(weir_http_ssl_alpn) - 1;

    if (c) {
        /* SNI has selected the server block by now (hc->conf_ctx) */
        hc = c->data;
        cmcf = hc->conf_ctx->main_conf[weir_http_core_module.ctx_index];

        if (cmcf->v2 && cmcf->v2->enabled(c)) {
            srv = weir_http_ssl_alpn_h2;
            srvlen = sizeof(weir_http_ssl_alpn_h2) - 1;
        }
    }

    if (SSL_select_next_proto(&selected, outlen, srv, (unsigned int) srvlen,
                              in, inlen)
        != OPENSSL_NPN_NEGOTIATED)
    {
        if (c) {
            weir_log_error(WEIR_LOG_INFO, c->log, 0,
                           "client offered no supported application "
                           "protocol (ALPN)");
        }

        return SSL_TLSEXT_ERR_ALERT_FATAL;
    }

    *out = selected;

    if (c) {
        weir_log_debug(c->log, 0, "SSL ALPN selected: %.*s",
                       (int) *outlen, (const char *) selected);
    }

    return SSL_TLSEXT_ERR_OK;
}


/* the handshake never fails on the client's certificate: the request
 * checks the result (weir_http_ssl_verify_handler) */

static int
weir_http_ssl_verify_callback(int ok, X509_STORE_CTX *store)
{
    (void) ok;
    (void) store;

    return 1;
}


/* ---- requests ------------------------------------------------------ */

/*
 * ssl_verify_client: the request's server (after Host selection; with
 * SNI the 421 rule makes it the handshake's) decides. A client without
 * a required certificate, or with one that did not verify, gets 400
 * with the reason, as nginx's 496 and 495 pages say it.
 */

static weir_int_t
weir_http_ssl_verify_handler(weir_http_request_t *r)
{
    long                       rc;
    X509                      *cert;
    weir_connection_t         *c;
    weir_ssl_conn_t           *sc;
    weir_http_ssl_srv_conf_t  *sscf;

    c = r->connection;

    if (c->ssl == NULL) {
        return WEIR_DECLINED;
    }

    sscf = weir_http_get_module_srv_conf(r, weir_http_ssl_module);

    if (sscf == NULL || sscf->verify == WEIR_HTTP_SSL_VERIFY_OFF) {
        return WEIR_DECLINED;
    }

    sc = weir_ssl_conn(c);

    if (sc->connection == NULL) {
        return WEIR_DECLINED;
    }

    rc = SSL_get_verify_result(sc->connection);

    if (rc != X509_V_OK
        && (sscf->verify != WEIR_HTTP_SSL_VERIFY_OPTIONAL_NO_CA
            || !weir_http_ssl_verify_error_optional(rc)))
    {
        weir_log_error(WEIR_LOG_INFO, c->log, 0,
                       "client SSL certificate verify error: (%ld:%s)",
                       rc, X509_verify_cert_error_string(rc));

        return weir_http_ssl_reject(r, "The SSL certificate error");
    }

    if (sscf->verify == WEIR_HTTP_SSL_VERIFY_ON) {
        cert = SSL_get1_peer_certificate(sc->connection);

        if (cert == NULL) {
            weir_log_error(WEIR_LOG_INFO, c->log, 0,
                           "client sent no required SSL certificate");

            return weir_http_ssl_reject(r,
                                        "No required SSL certificate was "
                                        "sent");
        }

        X509_free(cert);
    }

    return WEIR_DECLINED;
}


/* 400 with the reason on the page; the session is dropped from the
 * cache so that the client cannot resume around the check */

static weir_int_t
weir_http_ssl_reject(weir_http_request_t *r, const char *reason)
{
    SSL_CTX           *ctx;
    weir_int_t         rc;
    weir_str_t         body, type;
    SSL_SESSION       *sess;
    weir_ssl_conn_t   *sc;

    sc = weir_ssl_conn(r->connection);

    sess = SSL_get0_session(sc->connection);
    ctx = SSL_get_SSL_CTX(sc->connection);

    if (sess && ctx) {
        SSL_CTX_remove_session(ctx, sess);
    }

    if (weir_pstrfmt(r->pool, &body,
                     "<html>\r\n"
                     "<head><title>400 %s</title></head>\r\n"
                     "<body>\r\n"
                     "<center><h1>400 Bad Request</h1></center>\r\n"
                     "<center>%s</center>\r\n"
                     "<hr><center>weir</center>\r\n"
                     "</body>\r\n"
                     "</html>\r\n", reason, reason)
        != WEIR_OK)
    {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    weir_str_set(&type, "text/html");

    r->keepalive = 0;

    rc = weir_http_send_response(r, WEIR_HTTP_BAD_REQUEST, &type, &body);

    weir_http_finalize_request(r, rc);

    return WEIR_DONE;
}


static weir_uint_t
weir_http_ssl_verify_error_optional(long n)
{
    return n == X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT
           || n == X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN
           || n == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT
           || n == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY
           || n == X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE;
}


/* ---- variables ----------------------------------------------------- */

static weir_int_t
weir_http_ssl_add_variables(weir_conf_t *cf)
{
    weir_uint_t            i;
    weir_http_variable_t  *v;

    for (i = 0; weir_http_ssl_variable_names[i].len; i++) {
        v = weir_http_add_variable(cf, &weir_http_ssl_variable_names[i], 0);
        if (v == NULL) {
            return WEIR_ERROR;
        }

        v->get_handler = weir_http_ssl_variable;
        v->data = i;
    }

    return WEIR_OK;
}


/* not found on a plain connection, and when TLS knows no value */

static weir_int_t
weir_http_ssl_variable(weir_http_request_t *r, weir_http_variable_value_t *v,
    uintptr_t data)
{
    weir_str_t  s;

    if (r->connection->ssl == NULL
        || data >= sizeof(weir_http_ssl_getters)
                   / sizeof(weir_http_ssl_getters[0]))
    {
        v->not_found = 1;
        return WEIR_OK;
    }

    s.len = 0;
    s.data = NULL;

    if (weir_http_ssl_getters[data](r->connection, r->pool, &s) != WEIR_OK) {
        return WEIR_ERROR;
    }

    if (s.len == 0) {
        v->not_found = 1;
        return WEIR_OK;
    }

    v->len = s.len;
    v->data = s.data;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return WEIR_OK;
}


/* $ssl_session_id: the session's id in hex ("" with tickets in TLS 1.3
 * before the server sets one) */

static weir_int_t
weir_http_ssl_get_session_id(weir_connection_t *c, weir_pool_t *pool,
    weir_str_t *s)
{
    unsigned int          len, i;
    SSL_SESSION          *sess;
    weir_ssl_conn_t      *sc;
    const unsigned char  *id;
    static const char     hex[] = "0123456789abcdef";

    s->len = 0;

    sc = weir_ssl_conn(c);

    if (sc == NULL || sc->connection == NULL) {
        return WEIR_OK;
    }

    sess = SSL_get0_session(sc->connection);
    if (sess == NULL) {
        return WEIR_OK;
    }

    id = SSL_SESSION_get_id(sess, &len);
    if (len == 0) {
        return WEIR_OK;
    }

    s->data = weir_pnalloc(pool, 2 * len);
    if (s->data == NULL) {
        return WEIR_ERROR;
    }

    for (i = 0; i < len; i++) {
        s->data[2 * i] = (unsigned char) hex[id[i] >> 4];
        s->data[2 * i + 1] = (unsigned char) hex[id[i] & 0xf];
    }

    s->len = 2 * len;

    return WEIR_OK;
}
