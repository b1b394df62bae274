/*
 * TLS with OpenSSL 3 (weir_ssl.c): sessions. The session cache shared by
 * the workers (ssl_session_cache shared:name:size: an rbtree and an
 * expiry queue in a slab zone, sessions stored as DER) and session
 * tickets with keys from ssl_session_ticket_key files.
 */

#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_ssl.h"
#include "weir_ssl_int.h"

#include <openssl/rand.h>
#include <openssl/core_names.h>


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


static void weir_ssl_cleanup_ticket_keys(void *data);
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
