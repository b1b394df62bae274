/*
 * TLS with OpenSSL 3: the library half of the ssl module (see
 * weir_ssl.h). Contexts and their configuration, the session cache
 * shared by the workers, ticket keys, and TLS on a weir_connection_t.
 *
 * Non-blocking throughout: every SSL_* call that may touch the socket
 * maps SSL_get_error to the event flags (WANT_READ clears c->read->ready,
 * WANT_WRITE clears c->write->ready) and to WEIR_AGAIN; nothing here ever
 * waits for the peer.
 *
 * This file holds the contexts, their certificates and verification
 * settings, and the errors; weir_ssl_session.c the session cache and
 * tickets, weir_ssl_connection.c TLS on a connection; weir_ssl_int.h is
 * what they share.
 */

#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_ssl.h"
#include "weir_ssl_int.h"


static unsigned char *weir_ssl_errors(unsigned char *p, unsigned char *last);
static void weir_ssl_cleanup_ctx(void *data);
static int weir_ssl_password_callback(char *buf, int size, int rwflag,
    void *userdata);
static int weir_ssl_verify_callback(int ok, X509_STORE_CTX *x509_store);


int  weir_ssl_connection_index = -1;
int  weir_ssl_server_conf_index = -1;
int  weir_ssl_ticket_keys_index = -1;

/* internal: SSL_CTX -> its session cache zone; SSL -> the SSL_CTX it
 * was created from (OpenSSL runs the session and ticket callbacks of
 * that one even after SNI switched the connection to another context) */
int  weir_ssl_session_cache_index = -1;
int  weir_ssl_session_ctx_index = -1;


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


weir_int_t
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


/* ---- errors --------------------------------------------------------- */

/*
 * Before an SSL_read/SSL_write/SSL_do_handshake whose SSL_get_error
 * reads the queue: an empty queue is the common case, and peeking costs
 * a third of clearing (ERR_clear_error resets every slot of the queue).
 */

void
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


void
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

void
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


/* ---- the ClientHello, inside a client-hello callback ------------------- */

#define WEIR_SSL_EXT_ALPN  TLSEXT_TYPE_application_layer_protocol_negotiation

void
weir_ssl_client_hello_server_name(SSL *ssl, weir_str_t *name)
{
    size_t                len, nlen;
    const unsigned char  *p;

    name->len = 0;
    name->data = NULL;

    /* server_name_list: a 2-byte length, then (type, 2-byte length,
     * name) entries; the first host_name is the one (RFC 6066) */
    if (!SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &p, &len)
        || len < 2)
    {
        return;
    }

    if ((size_t) ((p[0] << 8) | p[1]) + 2 != len) {
        return;
    }

    p += 2;
    len -= 2;

    while (len >= 3) {
        nlen = (size_t) ((p[1] << 8) | p[2]);

        if (nlen + 3 > len) {
            return;
        }

        if (p[0] == TLSEXT_NAMETYPE_host_name) {
            name->data = (unsigned char *) p + 3;
            name->len = nlen;
            return;
        }

        p += nlen + 3;
        len -= nlen + 3;
    }
}


void
weir_ssl_client_hello_alpn(SSL *ssl, weir_str_t *alpn)
{
    size_t                len;
    const unsigned char  *p;

    alpn->len = 0;
    alpn->data = NULL;

    if (!SSL_client_hello_get0_ext(ssl, WEIR_SSL_EXT_ALPN, &p, &len)
        || len < 2
        || (size_t) ((p[0] << 8) | p[1]) + 2 != len)
    {
        return;
    }

    alpn->data = (unsigned char *) p + 2;
    alpn->len = len - 2;
}
