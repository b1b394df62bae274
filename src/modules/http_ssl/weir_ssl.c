/*
 * TLS with OpenSSL 3: the library half of the ssl module (see
 * weir_ssl.h). Contexts and their configuration, the session cache
 * shared by the workers, ticket keys, and TLS on a weir_connection_t.
 *
 * Non-blocking throughout: every SSL_* call that may touch the socket
 * maps SSL_get_error to the event flags (WANT_READ clears c->read->ready,
 * WANT_WRITE clears c->write->ready) and to WEIR_AGAIN; nothing here ever
 * waits for the peer.
 */

#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_ssl.h"

#include <openssl/rand.h>
#include <openssl/core_names.h>


#define WEIR_SSL_BUFSIZE            16384
#define WEIR_SSL_MAX_SESSION_SIZE   4096


typedef struct {
    size_t                  size;           /* 16 or 32: AES-128/256 */
    unsigned char           name[16];
    unsigned char           hmac_key[32];
    unsigned char           aes_key[32];
} weir_ssl_ticket_key_t;


/* one session in the shared cache: the node and the DER in one block */
typedef struct {
    weir_rbtree_node_t      node;           /* key: hash of the id */
    weir_queue_t            queue;          /* expiry, oldest last */
    time_t                  expire;
    unsigned char           id_len;
    unsigned char           id[SSL_MAX_SSL_SESSION_ID_LENGTH];
    size_t                  len;
    unsigned char           data[];
} weir_ssl_sess_node_t;


typedef struct {
    weir_rbtree_t           rbtree;
    weir_rbtree_node_t      sentinel;
    weir_queue_t            expire_queue;
} weir_ssl_session_cache_t;


static void weir_ssl_clear_error(void);
static void weir_ssl_conf_error(weir_conf_t *cf, const char *fmt, ...)
    WEIR_PRINTF(2, 3);
static unsigned char *weir_ssl_errors(unsigned char *p, unsigned char *last);
static void weir_ssl_connection_error(weir_connection_t *c, int sslerr,
    weir_err_t err, const char *text);
static void weir_ssl_cleanup_ctx(void *data);
static void weir_ssl_cleanup_connection(void *data);
static void weir_ssl_cleanup_ticket_keys(void *data);
static weir_int_t weir_ssl_full_name(weir_conf_t *cf, weir_str_t *name,
    weir_str_t *full);
static int weir_ssl_password_callback(char *buf, int size, int rwflag,
    void *userdata);
static int weir_ssl_verify_callback(int ok, X509_STORE_CTX *x509_store);
static void weir_ssl_handshake_handler(weir_event_t *ev);
static weir_uint_t weir_ssl_iov_starts_with(struct iovec *iov, int cnt,
    unsigned char *p, size_t len);
static ssize_t weir_ssl_handle_result(weir_connection_t *c, int n,
    const char *text, weir_uint_t reading);
static void weir_ssl_shutdown_op(weir_connection_t *c);
static weir_int_t weir_ssl_half_close_op(weir_connection_t *c);
static weir_uint_t weir_ssl_pending_op(weir_connection_t *c);
static ssize_t weir_ssl_peek_op(weir_connection_t *c);
static int weir_ssl_new_session(SSL *ssl, SSL_SESSION *sess);
static SSL_SESSION *weir_ssl_get_cached_session(SSL *ssl,
    const unsigned char *id, int len, int *copy);
static void weir_ssl_remove_session(SSL_CTX *ctx, SSL_SESSION *sess);
static weir_ssl_sess_node_t *weir_ssl_session_lookup(
    weir_ssl_session_cache_t *cache, const unsigned char *id, size_t len,
    weir_uint_t hash);
static void weir_ssl_expire_sessions(weir_ssl_session_cache_t *cache,
    weir_slab_pool_t *shpool, weir_uint_t n);
static void weir_ssl_session_rbtree_insert_value(weir_rbtree_node_t *temp,
    weir_rbtree_node_t *node, weir_rbtree_node_t *sentinel);
static weir_uint_t weir_ssl_session_hash(const unsigned char *id,
    size_t len);
static int weir_ssl_ticket_key_callback(SSL *ssl, unsigned char *name,
    unsigned char *iv, EVP_CIPHER_CTX *ectx, EVP_MAC_CTX *hctx, int enc);
static weir_int_t weir_ssl_bio_to_str(BIO *bio, weir_pool_t *pool,
    weir_str_t *s);


int  weir_ssl_connection_index = -1;
int  weir_ssl_server_conf_index = -1;
int  weir_ssl_ticket_keys_index = -1;

/* internal: SSL_CTX -> its session cache zone; SSL -> the SSL_CTX it
 * was created from (OpenSSL runs the session and ticket callbacks of
 * that one even after SNI switched the connection to another context) */
static int  weir_ssl_session_cache_index = -1;
static int  weir_ssl_session_ctx_index = -1;


static const weir_ssl_connection_ops_t  weir_ssl_ops = {
    weir_ssl_shutdown_op,
    weir_ssl_pending_op,
    weir_ssl_half_close_op,
    weir_ssl_peek_op
};


/* ---- contexts ------------------------------------------------------- */

weir_int_t
weir_ssl_init(weir_log_t *log)
{
    if (weir_ssl_connection_index != -1) {
        return WEIR_OK;
    }

    if (OPENSSL_init_ssl(OPENSSL_INIT_LOAD_CONFIG, NULL) == 0) {
        weir_ssl_error(WEIR_LOG_ALERT, log, 0, "OPENSSL_init_ssl() failed");
        return WEIR_ERROR;
    }

    ERR_clear_error();

    weir_ssl_connection_index = SSL_get_ex_new_index(0, NULL, NULL, NULL,
                                                     NULL);
    weir_ssl_session_ctx_index = SSL_get_ex_new_index(0, NULL, NULL, NULL,
                                                      NULL);
    weir_ssl_server_conf_index = SSL_CTX_get_ex_new_index(0, NULL, NULL,
                                                          NULL, NULL);
    weir_ssl_ticket_keys_index = SSL_CTX_get_ex_new_index(0, NULL, NULL,
                                                          NULL, NULL);
    weir_ssl_session_cache_index = SSL_CTX_get_ex_new_index(0, NULL, NULL,
                                                            NULL, NULL);

    if (weir_ssl_connection_index == -1
        || weir_ssl_session_ctx_index == -1
        || weir_ssl_server_conf_index == -1
        || weir_ssl_ticket_keys_index == -1
        || weir_ssl_session_cache_index == -1)
    {
        weir_ssl_error(WEIR_LOG_ALERT, log, 0,
                       "SSL_get_ex_new_index() failed");
        weir_ssl_connection_index = -1;
        return WEIR_ERROR;
    }

    return WEIR_OK;
}


weir_int_t
weir_ssl_create(weir_conf_t *cf, weir_ssl_t *ssl, weir_uint_t protocols,
    void *data)
{
    int                   min, max, v;
    long                  no;
    weir_uint_t           i;
    weir_pool_cleanup_t  *cln;

    static const struct {
        weir_uint_t  bit;
        int          version;
        long         op;
    } vers[] = {
        { WEIR_SSL_TLSv1,   TLS1_VERSION,   SSL_OP_NO_TLSv1 },
        { WEIR_SSL_TLSv1_1, TLS1_1_VERSION, SSL_OP_NO_TLSv1_1 },
        { WEIR_SSL_TLSv1_2, TLS1_2_VERSION, SSL_OP_NO_TLSv1_2 },
        { WEIR_SSL_TLSv1_3, TLS1_3_VERSION, SSL_OP_NO_TLSv1_3 },
    };

    if (weir_ssl_init(cf->log) != WEIR_OK) {
        return WEIR_ERROR;
    }

    ssl->ctx = NULL;
    ssl->log = cf->log;

    if (ssl->buffer_size == 0) {
        ssl->buffer_size = WEIR_SSL_BUFSIZE;
    }

    if ((protocols & (WEIR_SSL_TLSv1|WEIR_SSL_TLSv1_1|WEIR_SSL_TLSv1_2
                      |WEIR_SSL_TLSv1_3)) == 0)
    {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "no SSL protocols enabled");
        return WEIR_ERROR;
    }

    cln = weir_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return WEIR_ERROR;
    }

    ssl->ctx = SSL_CTX_new(TLS_method());

    if (ssl->ctx == NULL) {
        weir_ssl_conf_error(cf, "SSL_CTX_new() failed");
        return WEIR_ERROR;
    }

    cln->handler = weir_ssl_cleanup_ctx;
    cln->data = ssl->ctx;

    if (SSL_CTX_set_ex_data(ssl->ctx, weir_ssl_server_conf_index, data)
        == 0)
    {
        weir_ssl_conf_error(cf, "SSL_CTX_set_ex_data() failed");
        return WEIR_ERROR;
    }

    SSL_CTX_set_options(ssl->ctx, SSL_OP_NO_COMPRESSION
                                  |SSL_OP_NO_RENEGOTIATION
                                  |SSL_OP_SINGLE_DH_USE
                                  |SSL_OP_SINGLE_ECDH_USE);

    /* a peer that closes without close_notify is an error that the
     * connection code tells apart (truncation matters on origins) */
    SSL_CTX_clear_options(ssl->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);

    /* versions: the lowest and highest asked for, and the ones missing
     * in between switched off one by one */
    min = 0;
    max = 0;
    no = 0;

    for (i = 0; i < sizeof(vers) / sizeof(vers[0]); i++) {
        if (protocols & vers[i].bit) {
            if (min == 0) {
                min = vers[i].version;
            }

            max = vers[i].version;
        }
    }

    for (i = 0; i < sizeof(vers) / sizeof(vers[0]); i++) {
        v = vers[i].version;

        if (v > min && v < max && !(protocols & vers[i].bit)) {
            no |= vers[i].op;
        }
    }

    if (SSL_CTX_set_min_proto_version(ssl->ctx, min) == 0
        || SSL_CTX_set_max_proto_version(ssl->ctx, max) == 0)
    {
        weir_ssl_conf_error(cf, "SSL_CTX_set_min/max_proto_version() "
                            "failed");
        return WEIR_ERROR;
    }

    if (no) {
        SSL_CTX_set_options(ssl->ctx, no);
    }

    SSL_CTX_set_mode(ssl->ctx, SSL_MODE_RELEASE_BUFFERS
                               |SSL_MODE_ENABLE_PARTIAL_WRITE
                               |SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);

    /*
     * Read-ahead: a read takes from the socket as much as the record
     * buffer holds, not a 5-byte header and then the record body, so a
     * request costs one read() and the EAGAIN that ends it, as in nginx.
     * What OpenSSL read ahead and has not decrypted yet is not seen by
     * SSL_pending(): weir_ssl_pending_op looks at SSL_has_pending().
     */
    SSL_CTX_set_read_ahead(ssl->ctx, 1);

    if (SSL_CTX_set_session_id_context(ssl->ctx,
                                       (const unsigned char *) "weir", 4)
        == 0)
    {
        weir_ssl_conf_error(cf, "SSL_CTX_set_session_id_context() failed");
        return WEIR_ERROR;
    }

    ERR_clear_error();

    return WEIR_OK;
}


static void
weir_ssl_cleanup_ctx(void *data)
{
    SSL_CTX_free((SSL_CTX *) data);
}


static weir_int_t
weir_ssl_full_name(weir_conf_t *cf, weir_str_t *name, weir_str_t *full)
{
    *full = *name;

    if (weir_conf_full_name(cf->cycle, full, 1) != WEIR_OK) {
        return WEIR_ERROR;
    }

    return WEIR_OK;
}


static int
weir_ssl_password_callback(char *buf, int size, int rwflag, void *userdata)
{
    size_t       len;
    weir_str_t  *pwd;

    pwd = userdata;

    (void) rwflag;

    if (pwd == NULL || size <= 0) {
        /* no password: fail at once rather than prompt on a terminal */
        return 0;
    }

    len = pwd->len;

    if (len > (size_t) size) {
        len = size;
    }

    weir_memcpy(buf, pwd->data, len);

    return (int) len;
}


weir_int_t
weir_ssl_certificates(weir_conf_t *cf, weir_ssl_t *ssl, weir_array_t *certs,
    weir_array_t *keys, weir_array_t *passwords)
{
    BIO          *bio;
    X509         *x509, *leaf;
    EVP_PKEY     *pkey;
    weir_str_t   *cert, *key, *pwd, cfile, kfile;
    weir_uint_t   i, n, tries;
    unsigned long err;

    if (certs == NULL || certs->nelts == 0) {
        return WEIR_OK;
    }

    if (keys == NULL || keys->nelts < certs->nelts) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "no \"ssl_certificate_key\" is defined for "
                            "certificate \"%.*s\"",
                            (int) ((weir_str_t *) certs->elts)
                                      [keys ? keys->nelts : 0].len,
                            ((weir_str_t *) certs->elts)
                                      [keys ? keys->nelts : 0].data);
        return WEIR_ERROR;
    }

    cert = certs->elts;
    key = keys->elts;

    for (i = 0; i < certs->nelts; i++) {

        if (weir_ssl_full_name(cf, &cert[i], &cfile) != WEIR_OK
            || weir_ssl_full_name(cf, &key[i], &kfile) != WEIR_OK)
        {
            return WEIR_ERROR;
        }

        /* the leaf, then the chain that follows it in the same file */

        ERR_clear_error();

        bio = BIO_new_file((char *) cfile.data, "r");
        if (bio == NULL) {
            weir_ssl_conf_error(cf, "cannot load certificate \"%s\": "
                                "BIO_new_file() failed", cfile.data);
            return WEIR_ERROR;
        }

        x509 = PEM_read_bio_X509_AUX(bio, NULL, weir_ssl_password_callback,
                                     NULL);
        if (x509 == NULL) {
            weir_ssl_conf_error(cf, "cannot load certificate \"%s\": "
                                "PEM_read_bio_X509_AUX() failed",
                                cfile.data);
            BIO_free(bio);
            return WEIR_ERROR;
        }

        if (SSL_CTX_use_certificate(ssl->ctx, x509) == 0) {
            weir_ssl_conf_error(cf, "cannot load certificate \"%s\": "
                                "SSL_CTX_use_certificate() failed",
                                cfile.data);
            X509_free(x509);
            BIO_free(bio);
            return WEIR_ERROR;
        }

        /* the chain of this key type only: use_certificate made it the
         * current one; the leaf is kept to check the key against it */
        leaf = x509;
        (void) SSL_CTX_clear_chain_certs(ssl->ctx);

        for ( ;; ) {
            x509 = PEM_read_bio_X509(bio, NULL, weir_ssl_password_callback,
                                     NULL);
            if (x509 == NULL) {
                err = ERR_peek_last_error();

                if (ERR_GET_LIB(err) == ERR_LIB_PEM
                    && ERR_GET_REASON(err) == PEM_R_NO_START_LINE)
                {
                    /* end of file */
                    ERR_clear_error();
                    break;
                }

                weir_ssl_conf_error(cf, "cannot load certificate \"%s\": "
                                    "PEM_read_bio_X509() failed",
                                    cfile.data);
                X509_free(leaf);
                BIO_free(bio);
                return WEIR_ERROR;
            }

            if (SSL_CTX_add1_chain_cert(ssl->ctx, x509) == 0) {
                weir_ssl_conf_error(cf, "cannot load certificate \"%s\": "
                                    "SSL_CTX_add1_chain_cert() failed",
                                    cfile.data);
                X509_free(x509);
                X509_free(leaf);
                BIO_free(bio);
                return WEIR_ERROR;
            }

            X509_free(x509);
        }

        BIO_free(bio);

        /* the key: each password in turn, or none */

        tries = (passwords && passwords->nelts) ? passwords->nelts : 1;
        pwd = (passwords && passwords->nelts) ? passwords->elts : NULL;
        pkey = NULL;

        for (n = 0; n < tries; n++) {
            ERR_clear_error();

            bio = BIO_new_file((char *) kfile.data, "r");
            if (bio == NULL) {
                weir_ssl_conf_error(cf, "cannot load certificate key "
                                    "\"%s\": BIO_new_file() failed",
                                    kfile.data);
                X509_free(leaf);
                return WEIR_ERROR;
            }

            pkey = PEM_read_bio_PrivateKey(bio, NULL,
                                           weir_ssl_password_callback,
                                           pwd ? &pwd[n] : NULL);
            BIO_free(bio);

            if (pkey) {
                break;
            }
        }

        if (pkey == NULL) {
            weir_ssl_conf_error(cf, "cannot load certificate key \"%s\": "
                                "PEM_read_bio_PrivateKey() failed%s",
                                kfile.data,
                                passwords ? " with every password of "
                                            "ssl_password_file" : "");
            X509_free(leaf);
            return WEIR_ERROR;
        }

        ERR_clear_error();

        /* OpenSSL files a key by its type: a key of another type than
         * the certificate would be taken without a word */
        if (X509_check_private_key(leaf, pkey) != 1) {
            weir_ssl_conf_error(cf, "cannot load certificate key \"%s\" "
                                "for certificate \"%s\": "
                                "X509_check_private_key() failed",
                                kfile.data, cfile.data);
            X509_free(leaf);
            EVP_PKEY_free(pkey);
            return WEIR_ERROR;
        }

        X509_free(leaf);

        if (SSL_CTX_use_PrivateKey(ssl->ctx, pkey) == 0) {
            weir_ssl_conf_error(cf, "cannot load certificate key \"%s\": "
                                "SSL_CTX_use_PrivateKey() failed",
                                kfile.data);
            EVP_PKEY_free(pkey);
            return WEIR_ERROR;
        }

        EVP_PKEY_free(pkey);
    }

    ERR_clear_error();

    return WEIR_OK;
}


weir_int_t
weir_ssl_ciphers(weir_conf_t *cf, weir_ssl_t *ssl, weir_str_t *ciphers,
    weir_uint_t prefer_server_ciphers)
{
    char  *s;

    if (ciphers && ciphers->len) {
        s = weir_pstrdupz(cf->pool, ciphers);
        if (s == NULL) {
            return WEIR_ERROR;
        }

        ERR_clear_error();

        if (SSL_CTX_set_cipher_list(ssl->ctx, s) == 0) {
            weir_ssl_conf_error(cf, "SSL_CTX_set_cipher_list(\"%s\") failed",
                                s);
            return WEIR_ERROR;
        }
    }

    if (prefer_server_ciphers) {
        SSL_CTX_set_options(ssl->ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
    }

    return WEIR_OK;
}


weir_int_t
weir_ssl_ecdh_curve(weir_conf_t *cf, weir_ssl_t *ssl, weir_str_t *name)
{
    char  *s;

    if (name == NULL || name->len == 0 || weir_str_eq_lit(name, "auto")) {
        /* OpenSSL 3 picks among its default groups */
        return WEIR_OK;
    }

    s = weir_pstrdupz(cf->pool, name);
    if (s == NULL) {
        return WEIR_ERROR;
    }

    ERR_clear_error();

    if (SSL_CTX_set1_groups_list(ssl->ctx, s) == 0) {
        weir_ssl_conf_error(cf, "SSL_CTX_set1_groups_list(\"%s\") failed", s);
        return WEIR_ERROR;
    }

    return WEIR_OK;
}


weir_int_t
weir_ssl_conf_commands(weir_conf_t *cf, weir_ssl_t *ssl,
    weir_array_t *commands)
{
    int             rc;
    char           *key, *value;
    weir_uint_t     i;
    weir_keyval_t  *kv;
    SSL_CONF_CTX   *cctx;

    if (commands == NULL || commands->nelts == 0) {
        return WEIR_OK;
    }

    cctx = SSL_CONF_CTX_new();
    if (cctx == NULL) {
        weir_ssl_conf_error(cf, "SSL_CONF_CTX_new() failed");
        return WEIR_ERROR;
    }

    SSL_CONF_CTX_set_flags(cctx, SSL_CONF_FLAG_FILE|SSL_CONF_FLAG_SERVER
                                 |SSL_CONF_FLAG_CLIENT
                                 |SSL_CONF_FLAG_CERTIFICATE
                                 |SSL_CONF_FLAG_SHOW_ERRORS);

    SSL_CONF_CTX_set_ssl_ctx(cctx, ssl->ctx);

    kv = commands->elts;

    for (i = 0; i < commands->nelts; i++) {
        key = weir_pstrdupz(cf->pool, &kv[i].key);
        value = weir_pstrdupz(cf->pool, &kv[i].value);

        if (key == NULL || value == NULL) {
            SSL_CONF_CTX_free(cctx);
            return WEIR_ERROR;
        }

        ERR_clear_error();

        rc = SSL_CONF_cmd(cctx, key, value);

        if (rc <= 0) {
            weir_ssl_conf_error(cf, "SSL_CONF_cmd(\"%s\", \"%s\") failed%s",
                                key, value,
                                rc == -2 ? ": unknown command" : "");
            SSL_CONF_CTX_free(cctx);
            return WEIR_ERROR;
        }
    }

    if (SSL_CONF_CTX_finish(cctx) != 1) {
        weir_ssl_conf_error(cf, "SSL_CONF_CTX_finish() failed");
        SSL_CONF_CTX_free(cctx);
        return WEIR_ERROR;
    }

    SSL_CONF_CTX_free(cctx);

    return WEIR_OK;
}


/*
 * Peers' certificates are checked after the handshake (the HTTP module
 * answers 400 or lets "optional" through; the proxy module checks the
 * result and the name), so the handshake itself never fails on them.
 */

static int
weir_ssl_verify_callback(int ok, X509_STORE_CTX *x509_store)
{
    (void) ok;
    (void) x509_store;

    return 1;
}


weir_int_t
weir_ssl_client_certificate(weir_conf_t *cf, weir_ssl_t *ssl,
    weir_str_t *cert, weir_int_t depth)
{
    weir_str_t             file;
    STACK_OF(X509_NAME)   *list;

    SSL_CTX_set_verify(ssl->ctx, SSL_VERIFY_PEER, weir_ssl_verify_callback);
    SSL_CTX_set_verify_depth(ssl->ctx, (int) depth);

    if (cert == NULL || cert->len == 0) {
        return WEIR_OK;
    }

    if (weir_ssl_full_name(cf, cert, &file) != WEIR_OK) {
        return WEIR_ERROR;
    }

    ERR_clear_error();

    if (SSL_CTX_load_verify_locations(ssl->ctx, (char *) file.data, NULL)
        == 0)
    {
        weir_ssl_conf_error(cf, "SSL_CTX_load_verify_locations(\"%s\") "
                            "failed", file.data);
        return WEIR_ERROR;
    }

    /* the CAs named in the CertificateRequest */
    list = SSL_load_client_CA_file((char *) file.data);
    if (list == NULL) {
        weir_ssl_conf_error(cf, "SSL_load_client_CA_file(\"%s\") failed",
                            file.data);
        return WEIR_ERROR;
    }

    SSL_CTX_set_client_CA_list(ssl->ctx, list);

    ERR_clear_error();

    return WEIR_OK;
}


weir_int_t
weir_ssl_trusted_certificate(weir_conf_t *cf, weir_ssl_t *ssl,
    weir_str_t *cert, weir_int_t depth)
{
    weir_str_t  file;

    SSL_CTX_set_verify(ssl->ctx, SSL_VERIFY_PEER, weir_ssl_verify_callback);
    SSL_CTX_set_verify_depth(ssl->ctx, (int) depth);

    ERR_clear_error();

    if (cert == NULL || cert->len == 0) {
        if (SSL_CTX_set_default_verify_paths(ssl->ctx) == 0) {
            weir_ssl_conf_error(cf, "SSL_CTX_set_default_verify_paths() "
                                "failed");
            return WEIR_ERROR;
        }

        return WEIR_OK;
    }

    if (weir_ssl_full_name(cf, cert, &file) != WEIR_OK) {
        return WEIR_ERROR;
    }

    if (SSL_CTX_load_verify_locations(ssl->ctx, (char *) file.data, NULL)
        == 0)
    {
        weir_ssl_conf_error(cf, "SSL_CTX_load_verify_locations(\"%s\") "
                            "failed", file.data);
        return WEIR_ERROR;
    }

    ERR_clear_error();

    return WEIR_OK;
}


weir_int_t
weir_ssl_crl(weir_conf_t *cf, weir_ssl_t *ssl, weir_str_t *crl)
{
    weir_str_t     file;
    X509_STORE    *store;
    X509_LOOKUP   *lookup;

    if (crl->len == 0) {
        return WEIR_OK;
    }

    if (weir_ssl_full_name(cf, crl, &file) != WEIR_OK) {
        return WEIR_ERROR;
    }

    ERR_clear_error();

    store = SSL_CTX_get_cert_store(ssl->ctx);

    if (store == NULL) {
        weir_ssl_conf_error(cf, "SSL_CTX_get_cert_store() failed");
        return WEIR_ERROR;
    }

    lookup = X509_STORE_add_lookup(store, X509_LOOKUP_file());

    if (lookup == NULL) {
        weir_ssl_conf_error(cf, "X509_STORE_add_lookup() failed");
        return WEIR_ERROR;
    }

    if (X509_LOOKUP_load_file(lookup, (char *) file.data, X509_FILETYPE_PEM)
        == 0)
    {
        weir_ssl_conf_error(cf, "X509_LOOKUP_load_file(\"%s\") failed",
                            file.data);
        return WEIR_ERROR;
    }

    X509_STORE_set_flags(store,
                         X509_V_FLAG_CRL_CHECK|X509_V_FLAG_CRL_CHECK_ALL);

    ERR_clear_error();

    return WEIR_OK;
}


/* ---- the shared session cache --------------------------------------- */

weir_int_t
weir_ssl_session_cache(weir_conf_t *cf, weir_ssl_t *ssl,
    weir_str_t *sess_ctx, ssize_t builtin_session_cache,
    weir_shm_zone_t *shm_zone, time_t timeout)
{
    long           mode;
    unsigned int   len;
    unsigned char  md[EVP_MAX_MD_SIZE];

    if (sess_ctx && sess_ctx->len) {
        if (sess_ctx->len > SSL_MAX_SID_CTX_LENGTH) {
            /* too long for OpenSSL: its digest identifies it as well */
            if (EVP_Digest(sess_ctx->data, sess_ctx->len, md, &len,
                           EVP_sha256(), NULL)
                == 0)
            {
                weir_ssl_conf_error(cf, "EVP_Digest() failed");
                return WEIR_ERROR;
            }

        } else {
            len = sess_ctx->len;
            weir_memcpy(md, sess_ctx->data, len);
        }

        if (SSL_CTX_set_session_id_context(ssl->ctx, md, len) == 0) {
            weir_ssl_conf_error(cf, "SSL_CTX_set_session_id_context() "
                                "failed");
            return WEIR_ERROR;
        }
    }

    if (timeout > 0) {
        SSL_CTX_set_timeout(ssl->ctx, (long) timeout);
    }

    if (builtin_session_cache == WEIR_SSL_NO_SCACHE
        || builtin_session_cache == WEIR_SSL_NONE_SCACHE)
    {
        SSL_CTX_set_session_cache_mode(ssl->ctx, SSL_SESS_CACHE_OFF);
        return WEIR_OK;
    }

    mode = SSL_SESS_CACHE_SERVER;

    if (shm_zone && builtin_session_cache == WEIR_SSL_NO_BUILTIN_SCACHE) {
        mode |= SSL_SESS_CACHE_NO_INTERNAL;
    }

    SSL_CTX_set_session_cache_mode(ssl->ctx, mode);

    if (builtin_session_cache >= 0) {
        SSL_CTX_sess_set_cache_size(ssl->ctx, builtin_session_cache);
    }

    if (shm_zone) {
        SSL_CTX_sess_set_new_cb(ssl->ctx, weir_ssl_new_session);
        SSL_CTX_sess_set_get_cb(ssl->ctx, weir_ssl_get_cached_session);
        SSL_CTX_sess_set_remove_cb(ssl->ctx, weir_ssl_remove_session);

        if (SSL_CTX_set_ex_data(ssl->ctx, weir_ssl_session_cache_index,
                                shm_zone)
            == 0)
        {
            weir_ssl_conf_error(cf, "SSL_CTX_set_ex_data() failed");
            return WEIR_ERROR;
        }
    }

    return WEIR_OK;
}


weir_int_t
weir_ssl_session_cache_init(weir_shm_zone_t *shm_zone, void *data)
{
    weir_slab_pool_t          *shpool;
    weir_ssl_session_cache_t  *cache;

    if (data) {
        /* the old cycle's zone, taken over with its sessions */
        shm_zone->data = data;
        return WEIR_OK;
    }

    shpool = (weir_slab_pool_t *) shm_zone->shm.addr;

    if (shm_zone->shm.exists && shpool->data) {
        shm_zone->data = shpool->data;
        return WEIR_OK;
    }

    cache = weir_slab_alloc(shpool, sizeof(weir_ssl_session_cache_t));
    if (cache == NULL) {
        return WEIR_ERROR;
    }

    weir_rbtree_init(&cache->rbtree, &cache->sentinel,
                     weir_ssl_session_rbtree_insert_value);

    weir_queue_init(&cache->expire_queue);

    shpool->data = cache;
    shm_zone->data = cache;

    /* a full cache is routine: the cache logs its own warning */
    shpool->log_nomem = 0;

    return WEIR_OK;
}


static weir_shm_zone_t *
weir_ssl_session_zone(SSL_CTX *ctx)
{
    if (ctx == NULL) {
        return NULL;
    }

    return SSL_CTX_get_ex_data(ctx, weir_ssl_session_cache_index);
}


static SSL_CTX *
weir_ssl_session_ctx(SSL *ssl)
{
    SSL_CTX  *ctx;

    ctx = SSL_get_ex_data(ssl, weir_ssl_session_ctx_index);

    return ctx ? ctx : SSL_get_SSL_CTX(ssl);
}


static weir_uint_t
weir_ssl_session_hash(const unsigned char *id, size_t len)
{
    size_t    i;
    uint32_t  h;

    /* FNV-1a: ids are random, any spread will do */
    h = 2166136261u;

    for (i = 0; i < len; i++) {
        h ^= id[i];
        h *= 16777619u;
    }

    return h;
}


static int
weir_ssl_new_session(SSL *ssl, SSL_SESSION *sess)
{
    int                        len;
    time_t                     timeout;
    unsigned int               id_len;
    unsigned char             *p;
    const unsigned char       *id;
    weir_log_t                *log;
    weir_shm_zone_t           *zone;
    weir_slab_pool_t          *shpool;
    weir_connection_t         *c;
    weir_ssl_sess_node_t      *sn;
    weir_ssl_session_cache_t  *cache;
    unsigned char              buf[WEIR_SSL_MAX_SESSION_SIZE];

    zone = weir_ssl_session_zone(weir_ssl_session_ctx(ssl));
    c = SSL_get_ex_data(ssl, weir_ssl_connection_index);

    if (zone == NULL || zone->data == NULL || c == NULL) {
        return 0;
    }

    log = c->log;

    len = i2d_SSL_SESSION(sess, NULL);

    /* sessions with a client certificate may be larger: not cached */
    if (len <= 0 || len > WEIR_SSL_MAX_SESSION_SIZE) {
        weir_log_debug(log, 0, "ssl session of %d bytes not cached", len);
        return 0;
    }

    p = buf;
    (void) i2d_SSL_SESSION(sess, &p);

    id = SSL_SESSION_get_id(sess, &id_len);

    if (id_len == 0 || id_len > SSL_MAX_SSL_SESSION_ID_LENGTH) {
        return 0;
    }

    timeout = (time_t) SSL_SESSION_get_timeout(sess);

    shpool = (weir_slab_pool_t *) zone->shm.addr;
    cache = zone->data;

    weir_shmtx_lock(&shpool->mutex);

    /* two expired sessions out for every new one */
    weir_ssl_expire_sessions(cache, shpool, 1);

    sn = weir_slab_alloc_locked(shpool, sizeof(weir_ssl_sess_node_t) + len);

    if (sn == NULL) {
        /* the oldest goes even if it is still valid, and once more */
        weir_ssl_expire_sessions(cache, shpool, 0);

        sn = weir_slab_alloc_locked(shpool,
                                    sizeof(weir_ssl_sess_node_t) + len);
        if (sn == NULL) {
            weir_shmtx_unlock(&shpool->mutex);

            weir_log_error(WEIR_LOG_WARN, log, 0,
                           "could not allocate new session in SSL session "
                           "shared cache \"%.*s\"",
                           (int) zone->shm.name.len, zone->shm.name.data);
            return 0;
        }
    }

    sn->node.key = weir_ssl_session_hash(id, id_len);
    sn->id_len = (unsigned char) id_len;
    weir_memcpy(sn->id, id, id_len);
    sn->len = len;
    weir_memcpy(sn->data, buf, len);
    sn->expire = weir_time() + timeout;

    weir_rbtree_insert(&cache->rbtree, &sn->node);
    weir_queue_insert_head(&cache->expire_queue, &sn->queue);

    weir_shmtx_unlock(&shpool->mutex);

    weir_log_debug(log, 0, "ssl new session: %08lx:%u:%d",
                   (unsigned long) sn->node.key, id_len, len);

    /* 0: OpenSSL keeps its reference, the cache holds a copy */
    return 0;
}


static weir_ssl_sess_node_t *
weir_ssl_session_lookup(weir_ssl_session_cache_t *cache,
    const unsigned char *id, size_t len, weir_uint_t hash)
{
    weir_int_t             rc;
    weir_rbtree_node_t    *node, *sentinel;
    weir_ssl_sess_node_t  *sn;

    node = cache->rbtree.root;
    sentinel = cache->rbtree.sentinel;

    while (node != sentinel) {

        if (hash < node->key) {
            node = node->left;
            continue;
        }

        if (hash > node->key) {
            node = node->right;
            continue;
        }

        sn = (weir_ssl_sess_node_t *) node;

        if (len != sn->id_len) {
            rc = (len < sn->id_len) ? -1 : 1;

        } else {
            rc = weir_memcmp(id, sn->id, len);
        }

        if (rc == 0) {
            return sn;
        }

        node = (rc < 0) ? node->left : node->right;
    }

    return NULL;
}


static SSL_SESSION *
weir_ssl_get_cached_session(SSL *ssl, const unsigned char *id, int len,
    int *copy)
{
    size_t                     n;
    SSL_SESSION               *sess;
    weir_shm_zone_t           *zone;
    weir_slab_pool_t          *shpool;
    weir_ssl_sess_node_t      *sn;
    weir_ssl_session_cache_t  *cache;
    const unsigned char       *p;
    unsigned char              buf[WEIR_SSL_MAX_SESSION_SIZE];

    *copy = 0;

    zone = weir_ssl_session_zone(weir_ssl_session_ctx(ssl));

    if (zone == NULL || zone->data == NULL || len <= 0
        || len > SSL_MAX_SSL_SESSION_ID_LENGTH)
    {
        return NULL;
    }

    shpool = (weir_slab_pool_t *) zone->shm.addr;
    cache = zone->data;

    n = 0;

    weir_shmtx_lock(&shpool->mutex);

    sn = weir_ssl_session_lookup(cache, id, len,
                                 weir_ssl_session_hash(id, len));

    if (sn) {
        if (sn->expire > weir_time() && sn->len <= sizeof(buf)) {
            n = sn->len;
            weir_memcpy(buf, sn->data, n);

        } else {
            weir_queue_remove(&sn->queue);
            weir_rbtree_delete(&cache->rbtree, &sn->node);
            weir_slab_free_locked(shpool, sn);
        }
    }

    weir_shmtx_unlock(&shpool->mutex);

    if (n == 0) {
        return NULL;
    }

    p = buf;
    sess = d2i_SSL_SESSION(NULL, &p, (long) n);

    if (sess == NULL) {
        ERR_clear_error();
    }

    return sess;
}


static void
weir_ssl_remove_session(SSL_CTX *ctx, SSL_SESSION *sess)
{
    unsigned int               len;
    const unsigned char       *id;
    weir_shm_zone_t           *zone;
    weir_slab_pool_t          *shpool;
    weir_ssl_sess_node_t      *sn;
    weir_ssl_session_cache_t  *cache;

    zone = weir_ssl_session_zone(ctx);

    if (zone == NULL || zone->data == NULL) {
        return;
    }

    id = SSL_SESSION_get_id(sess, &len);

    if (len == 0 || len > SSL_MAX_SSL_SESSION_ID_LENGTH) {
        return;
    }

    shpool = (weir_slab_pool_t *) zone->shm.addr;
    cache = zone->data;

    weir_shmtx_lock(&shpool->mutex);

    sn = weir_ssl_session_lookup(cache, id, len,
                                 weir_ssl_session_hash(id, len));

    if (sn) {
        weir_queue_remove(&sn->queue);
        weir_rbtree_delete(&cache->rbtree, &sn->node);
        weir_slab_free_locked(shpool, sn);
    }

    weir_shmtx_unlock(&shpool->mutex);
}


/*
 * n == 1: removes up to two expired sessions; n == 0: the oldest one
 * whatever its age, then up to two expired ones. Under the lock.
 */

static void
weir_ssl_expire_sessions(weir_ssl_session_cache_t *cache,
    weir_slab_pool_t *shpool, weir_uint_t n)
{
    time_t                 now;
    weir_queue_t          *q;
    weir_ssl_sess_node_t  *sn;

    now = weir_time();

    while (n < 3) {

        if (weir_queue_empty(&cache->expire_queue)) {
            return;
        }

        q = weir_queue_last(&cache->expire_queue);
        sn = weir_queue_data(q, weir_ssl_sess_node_t, queue);

        if (n++ != 0 && sn->expire > now) {
            return;
        }

        weir_queue_remove(q);
        weir_rbtree_delete(&cache->rbtree, &sn->node);
        weir_slab_free_locked(shpool, sn);
    }
}


static void
weir_ssl_session_rbtree_insert_value(weir_rbtree_node_t *temp,
    weir_rbtree_node_t *node, weir_rbtree_node_t *sentinel)
{
    weir_int_t             rc;
    weir_rbtree_node_t   **p;
    weir_ssl_sess_node_t  *a, *b;

    for ( ;; ) {

        if (node->key < temp->key) {
            p = &temp->left;

        } else if (node->key > temp->key) {
            p = &temp->right;

        } else {
            a = (weir_ssl_sess_node_t *) node;
            b = (weir_ssl_sess_node_t *) temp;

            if (a->id_len != b->id_len) {
                rc = (a->id_len < b->id_len) ? -1 : 1;

            } else {
                rc = weir_memcmp(a->id, b->id, a->id_len);
            }

            p = (rc < 0) ? &temp->left : &temp->right;
        }

        if (*p == sentinel) {
            break;
        }

        temp = *p;
    }

    *p = node;
    node->parent = temp;
    node->left = sentinel;
    node->right = sentinel;
    weir_rbt_red(node);
}


/* ---- session tickets ------------------------------------------------- */

weir_int_t
weir_ssl_session_tickets(weir_conf_t *cf, weir_ssl_t *ssl, weir_flag_t enable)
{
    (void) cf;

    if (!enable) {
        SSL_CTX_set_options(ssl->ctx, SSL_OP_NO_TICKET);
        return WEIR_OK;
    }

    /*
     * Without key files OpenSSL's own random keys are used: they belong to
     * the SSL_CTX, created in the master before it forks, so every worker
     * of a configuration shares them; a reload makes new ones.
     */
    SSL_CTX_clear_options(ssl->ctx, SSL_OP_NO_TICKET);

    return WEIR_OK;
}


weir_int_t
weir_ssl_session_ticket_keys(weir_conf_t *cf, weir_ssl_t *ssl,
    weir_array_t *paths)
{
    int                     fd;
    ssize_t                 n;
    weir_str_t             *path, file;
    weir_uint_t             i;
    weir_array_t           *keys;
    struct stat             st;
    weir_pool_cleanup_t    *cln;
    weir_ssl_ticket_key_t  *key;
    unsigned char           buf[80];

    if (paths == NULL || paths->nelts == 0) {
        return WEIR_OK;
    }

    keys = weir_array_create(cf->pool, paths->nelts,
                             sizeof(weir_ssl_ticket_key_t));
    if (keys == NULL) {
        return WEIR_ERROR;
    }

    cln = weir_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return WEIR_ERROR;
    }

    cln->handler = weir_ssl_cleanup_ticket_keys;
    cln->data = keys;

    path = paths->elts;

    for (i = 0; i < paths->nelts; i++) {

        if (weir_ssl_full_name(cf, &path[i], &file) != WEIR_OK) {
            return WEIR_ERROR;
        }

        fd = weir_open_file(file.data, WEIR_FILE_RDONLY, WEIR_FILE_OPEN, 0);
        if (fd == -1) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, weir_errno,
                                "open() \"%s\" failed", file.data);
            return WEIR_ERROR;
        }

        if (fstat(fd, &st) == -1) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, weir_errno,
                                "fstat() \"%s\" failed", file.data);
            (void) close(fd);
            return WEIR_ERROR;
        }

        if (st.st_size != 48 && st.st_size != 80) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "\"%s\" must be 48 or 80 bytes",
                                file.data);
            (void) close(fd);
            return WEIR_ERROR;
        }

        n = read(fd, buf, (size_t) st.st_size);

        if (n != st.st_size) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf,
                                n == -1 ? weir_errno : 0,
                                "read() \"%s\" failed%s", file.data,
                                n == -1 ? "" : ": short read");
            (void) close(fd);
            OPENSSL_cleanse(buf, sizeof(buf));
            return WEIR_ERROR;
        }

        (void) close(fd);

        key = weir_array_push(keys);
        if (key == NULL) {
            OPENSSL_cleanse(buf, sizeof(buf));
            return WEIR_ERROR;
        }

        weir_memzero(key, sizeof(weir_ssl_ticket_key_t));

        if (n == 48) {
            key->size = 16;
            weir_memcpy(key->name, buf, 16);
            weir_memcpy(key->hmac_key, buf + 16, 16);
            weir_memcpy(key->aes_key, buf + 32, 16);

        } else {
            key->size = 32;
            weir_memcpy(key->name, buf, 16);
            weir_memcpy(key->hmac_key, buf + 16, 32);
            weir_memcpy(key->aes_key, buf + 48, 32);
        }

        OPENSSL_cleanse(buf, sizeof(buf));
    }

    if (SSL_CTX_set_ex_data(ssl->ctx, weir_ssl_ticket_keys_index, keys) == 0)
    {
        weir_ssl_conf_error(cf, "SSL_CTX_set_ex_data() failed");
        return WEIR_ERROR;
    }

    if (SSL_CTX_set_tlsext_ticket_key_evp_cb(ssl->ctx,
                                             weir_ssl_ticket_key_callback)
        == 0)
    {
        weir_ssl_conf_error(cf, "SSL_CTX_set_tlsext_ticket_key_evp_cb() "
                            "failed");
        return WEIR_ERROR;
    }

    return WEIR_OK;
}


static void
weir_ssl_cleanup_ticket_keys(void *data)
{
    weir_array_t  *keys = data;

    OPENSSL_cleanse(keys->elts, keys->nelts * keys->size);
}


/*
 * enc: a new ticket under the first key. Decryption: the key named in
 * the ticket; 0 when none (a full handshake), 2 for a key other than
 * the first (OpenSSL then issues a fresh ticket under the first).
 */

static int
weir_ssl_ticket_key_callback(SSL *ssl, unsigned char *name,
    unsigned char *iv, EVP_CIPHER_CTX *ectx, EVP_MAC_CTX *hctx, int enc)
{
    int                     rc;
    weir_uint_t             i;
    weir_array_t           *keys;
    const EVP_CIPHER       *cipher;
    weir_connection_t      *c;
    weir_ssl_ticket_key_t  *key;
    OSSL_PARAM              params[3];

    keys = SSL_CTX_get_ex_data(weir_ssl_session_ctx(ssl),
                               weir_ssl_ticket_keys_index);
    c = SSL_get_ex_data(ssl, weir_ssl_connection_index);

    if (keys == NULL || keys->nelts == 0) {
        return 0;
    }

    key = keys->elts;

    if (enc == 1) {
        i = 0;

    } else {
        for (i = 0; i < keys->nelts; i++) {
            if (weir_memcmp(name, key[i].name, 16) == 0) {
                break;
            }
        }

        if (i == keys->nelts) {
            if (c) {
                weir_log_debug(c->log, 0, "ssl ticket decrypt: key not found");
            }

            return 0;
        }
    }

    cipher = (key[i].size == 16) ? EVP_aes_128_cbc() : EVP_aes_256_cbc();

    params[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY,
                                                  key[i].hmac_key,
                                                  key[i].size);
    params[1] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                                 (char *) "SHA256", 0);
    params[2] = OSSL_PARAM_construct_end();

    if (enc == 1) {
        if (RAND_bytes(iv, EVP_CIPHER_get_iv_length(cipher)) != 1) {
            goto failed;
        }

        if (EVP_EncryptInit_ex(ectx, cipher, NULL, key[i].aes_key, iv) != 1)
        {
            goto failed;
        }

        if (EVP_MAC_CTX_set_params(hctx, params) != 1) {
            goto failed;
        }

        weir_memcpy(name, key[i].name, 16);

        return 1;
    }

    if (EVP_MAC_CTX_set_params(hctx, params) != 1) {
        goto failed;
    }

    if (EVP_DecryptInit_ex(ectx, cipher, NULL, key[i].aes_key, iv) != 1) {
        goto failed;
    }

    /*
     * 2 also under TLS 1.3 whatever the key: OpenSSL sends a TLS 1.3
     * client no new ticket after a resumption unless asked to renew, and
     * clients use a ticket once
     */
    rc = (i == 0 && SSL_version(ssl) != TLS1_3_VERSION) ? 1 : 2;

    return rc;

failed:

    if (c) {
        weir_ssl_error(WEIR_LOG_ALERT, c->log, 0,
                       "session ticket key callback failed");

    } else {
        ERR_clear_error();
    }

    return -1;
}


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

        weir_log_debug(c->log, 0, "SSL: %s, cipher: \"%s\"",
                       SSL_get_version(sslc->connection),
                       SSL_get_cipher_name(sslc->connection));

        return WEIR_OK;
    }

    sslerr = SSL_get_error(sslc->connection, n);
    err = (sslerr == SSL_ERROR_SYSCALL) ? weir_errno : 0;

    sslc->last = sslerr;

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

    if (ev->timedout) {
        c->timedout = 1;
        rc = WEIR_ERROR;

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


/* ---- errors --------------------------------------------------------- */

/*
 * Before an SSL_read/SSL_write/SSL_do_handshake whose SSL_get_error
 * reads the queue: an empty queue is the common case, and peeking costs
 * a third of clearing (ERR_clear_error resets every slot of the queue).
 */

static void
weir_ssl_clear_error(void)
{
    if (ERR_peek_error() != 0) {
        ERR_clear_error();
    }
}


/* appends " (SSL: error:...:reason:...)" with every queued error, and
 * empties the queue */

static unsigned char *
weir_ssl_errors(unsigned char *p, unsigned char *last)
{
    int             flags;
    const char     *data;
    unsigned long   n;
    weir_uint_t     first;
    char            ebuf[256];

    first = 1;

    for ( ;; ) {
        n = ERR_get_error_all(NULL, NULL, NULL, &data, &flags);

        if (n == 0) {
            break;
        }

        if (p >= last - 1) {
            continue;
        }

        ERR_error_string_n(n, ebuf, sizeof(ebuf));

        p = weir_slprintf(p, last, "%s%s", first ? " (SSL: " : " ", ebuf);

        if ((flags & ERR_TXT_STRING) && data && *data) {
            p = weir_slprintf(p, last, ":%s", data);
        }

        first = 0;
    }

    if (!first) {
        p = weir_slprintf(p, last, ")");
    }

    return p;
}


void
weir_ssl_error(weir_uint_t level, weir_log_t *log, weir_err_t err,
    const char *fmt, ...)
{
    va_list         args;
    unsigned char  *p, *last;
    unsigned char   errstr[WEIR_MAX_ERROR_STR];

    last = errstr + sizeof(errstr) - 1;

    va_start(args, fmt);
    p = weir_vslprintf(errstr, last, fmt, args);
    va_end(args);

    if (log->log_level < level) {
        ERR_clear_error();
        return;
    }

    p = weir_ssl_errors(p, last);
    *p = '\0';

    weir_log_error(level, log, err, "%s", errstr);
}


static void
weir_ssl_conf_error(weir_conf_t *cf, const char *fmt, ...)
{
    va_list         args;
    unsigned char  *p, *last;
    unsigned char   errstr[WEIR_MAX_ERROR_STR];

    last = errstr + sizeof(errstr) - 1;

    va_start(args, fmt);
    p = weir_vslprintf(errstr, last, fmt, args);
    va_end(args);

    p = weir_ssl_errors(p, last);
    *p = '\0';

    weir_conf_log_error(WEIR_LOG_EMERG, cf, 0, "%s", errstr);
}


/*
 * Levels: what a peer can cause is info on our server side (a client
 * with a bad hello, a reset), error towards origins; the rest crit.
 */

static void
weir_ssl_connection_error(weir_connection_t *c, int sslerr, weir_err_t err,
    const char *text)
{
    weir_uint_t       level;
    unsigned long     e;
    weir_ssl_conn_t  *sslc;

    sslc = weir_ssl_conn(c);

    if (sslerr == SSL_ERROR_SYSCALL) {
        if (err == WEIR_ECONNRESET || err == EPIPE || err == ENOTCONN
            || err == ETIMEDOUT || err == ECONNREFUSED || err == ENETDOWN
            || err == ENETUNREACH || err == EHOSTDOWN || err == EHOSTUNREACH)
        {
            level = sslc->client ? WEIR_LOG_ERR : WEIR_LOG_INFO;

        } else {
            level = WEIR_LOG_CRIT;
        }

    } else if (sslerr == SSL_ERROR_SSL) {
        e = ERR_peek_last_error();

        if (sslc->client) {
            level = WEIR_LOG_ERR;

        } else if (ERR_GET_LIB(e) == ERR_LIB_SSL) {
            level = WEIR_LOG_INFO;

        } else {
            level = WEIR_LOG_CRIT;
        }

    } else {
        level = sslc->client ? WEIR_LOG_ERR : WEIR_LOG_INFO;
    }

    weir_ssl_error(level, c->log, err, "%s", text);
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
