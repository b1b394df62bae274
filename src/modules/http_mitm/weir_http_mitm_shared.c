#include "weir_http_mitm.h"

#include <openssl/x509.h>

/*
 * mitm_certificate_cache shared:NAME:SIZE: the leaves minted by any
 * worker, in a slab zone that every worker sees and that a reload keeps
 * (same name and size). Each worker's own cache (weir_http_mitm_origin.c)
 * stays in front of it and holds the decoded certificates; this zone
 * holds them in DER, with the origin's ALPN choice and verdict, keyed by
 * (name, port, SHA-256 of the CA) so that a reload with another CA
 * never serves a leaf of the old one. The zone also holds the one key
 * of all its leaves (DER, made by the master on the zone's first use),
 * so that a leaf minted by one worker, or before a reload, goes with the
 * key every worker has. With mitm_certificate_store, a new zone takes
 * the store's key (weir_http_mitm_store.c), so that the leaves on disk
 * go with it too.
 *
 * Single flight across workers: the first worker to miss a name puts a
 * pending node with its pid and starts the look; the others, finding it,
 * poll the node (weir_http_mitm_shared_get again) until it is complete,
 * or take the look over when it stays pending longer than
 * WEIR_HTTP_MITM_LOOK_MAX seconds (its worker died, or its look was
 * lost).
 */


#define WEIR_HTTP_MITM_SHARED_BUCKETS  4096


typedef struct weir_http_mitm_shnode_s  weir_http_mitm_shnode_t;

struct weir_http_mitm_shnode_s {
    weir_http_mitm_shnode_t     *next;          /* in its bucket */
    weir_queue_t                 lru;
    uint32_t                     hash;
    in_port_t                    port;
    unsigned char                ca[32];
    weir_pid_t                   pid;           /* looking; 0: complete */
    time_t                       since;
    time_t                       expires;
    weir_uint_t                  alpn;
    size_t                       name_len;
    size_t                       error_len;
    size_t                       der_len;
    unsigned char                data[1];       /* name, error, DER */
};

typedef struct {
    weir_http_mitm_shnode_t    **buckets;
    weir_queue_t                 lru;
    weir_uint_t                  minted;
    weir_atomic_t                served;        /* no lock on a hit */
    weir_uint_t                  evicted;
    weir_atomic_t                stored;        /* no lock for a write */
    weir_uint_t                  loaded;
    size_t                       key_len;
    unsigned char               *key;           /* DER of the leaves' key */
} weir_http_mitm_shctx_t;


static weir_int_t weir_http_mitm_shared_init(weir_shm_zone_t *shm_zone,
    void *data);
static weir_http_mitm_shnode_t *weir_http_mitm_shared_find(
    weir_http_mitm_shctx_t *sh, weir_str_t *name, in_port_t port,
    const unsigned char *ca, uint32_t hash);
static weir_http_mitm_shnode_t *weir_http_mitm_shared_alloc(
    weir_slab_pool_t *shpool, weir_http_mitm_shctx_t *sh, size_t size);
static void weir_http_mitm_shared_unlink(weir_slab_pool_t *shpool,
    weir_http_mitm_shctx_t *sh, weir_http_mitm_shnode_t *node);


/* mitm_certificate_cache shared:NAME:SIZE | off */

char *
weir_http_mitm_cache_directive(weir_conf_t *cf, weir_command_t *cmd,
    void *conf)
{
    ssize_t                     n;
    weir_str_t                 *value, name, size;
    weir_uint_t                 j, len;
    weir_http_mitm_zone_t      *zone;
    weir_http_mitm_srv_conf_t  *mscf = conf;

    (void) cmd;

    if (mscf->zone != WEIR_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (weir_str_eq_lit(&value[1], "off")) {
        mscf->zone = NULL;
        return WEIR_CONF_OK;
    }

    len = sizeof("shared:") - 1;

    if (value[1].len <= len
        || weir_strncmp(value[1].data, "shared:", len) != 0)
    {
        goto invalid;
    }

    name.data = value[1].data + len;
    name.len = 0;

    for (j = len; j < value[1].len && value[1].data[j] != ':'; j++) {
        name.len++;
    }

    if (name.len == 0 || j == value[1].len) {
        goto invalid;
    }

    size.data = value[1].data + j + 1;
    size.len = value[1].len - j - 1;

    n = weir_parse_size(&size);

    if (n == WEIR_ERROR) {
        goto invalid;
    }

    if (n < (ssize_t) (16 * weir_pagesize)) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "mitm certificate cache \"%.*s\" is too small "
                            "(%zu bytes at least)", WEIR_STR_ARG(value[1]),
                            (size_t) (16 * weir_pagesize));
        return WEIR_CONF_ERROR;
    }

    zone = weir_pcalloc(cf->pool, sizeof(weir_http_mitm_zone_t));
    if (zone == NULL) {
        return WEIR_CONF_ERROR;
    }

    zone->shm_zone = weir_shared_memory_add(cf, &name, (size_t) n,
                                            &weir_http_mitm_module);
    if (zone->shm_zone == NULL) {
        return WEIR_CONF_ERROR;
    }

    zone->shm_zone->init = weir_http_mitm_shared_init;

    /* until the zone's init: the configuration, for the store's key */
    zone->shm_zone->data = weir_http_conf_get_module_main_conf(cf,
                                                     weir_http_mitm_module);
    mscf->zone = zone;

    return WEIR_CONF_OK;

invalid:

    weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                        "invalid mitm_certificate_cache \"%.*s\" (use "
                        "shared:NAME:SIZE or off)", WEIR_STR_ARG(value[1]));
    return WEIR_CONF_ERROR;
}


/*
 * In the master, once per zone and configuration: the old cycle's
 * context is kept (a reload keeps the leaves and their key); a new zone
 * gets its buckets and the leaves' key: the store's, or a new one.
 */

static weir_int_t
weir_http_mitm_shared_init(weir_shm_zone_t *shm_zone, void *data)
{
    int                          len;
    EVP_PKEY                    *key;
    unsigned char               *p;
    weir_slab_pool_t            *shpool;
    weir_http_mitm_shctx_t      *sh;
    weir_http_mitm_main_conf_t  *mmcf;

    if (data) {
        shm_zone->data = data;
        return WEIR_OK;
    }

    mmcf = shm_zone->data;

    shpool = (weir_slab_pool_t *) shm_zone->shm.addr;

    if (shm_zone->shm.exists && shpool->data) {
        shm_zone->data = shpool->data;
        return WEIR_OK;
    }

    sh = weir_slab_calloc(shpool, sizeof(weir_http_mitm_shctx_t));
    if (sh == NULL) {
        return WEIR_ERROR;
    }

    sh->buckets = weir_slab_calloc(shpool, WEIR_HTTP_MITM_SHARED_BUCKETS
                                           * sizeof(void *));
    if (sh->buckets == NULL) {
        return WEIR_ERROR;
    }

    weir_queue_init(&sh->lru);

    if (mmcf && mmcf->store && mmcf->leaf_key) {
        key = mmcf->leaf_key;
        EVP_PKEY_up_ref(key);

    } else {
        key = weir_http_mitm_leaf_key(shm_zone->shm.log);
        if (key == NULL) {
            return WEIR_ERROR;
        }
    }

    len = i2d_PrivateKey(key, NULL);

    if (len <= 0) {
        EVP_PKEY_free(key);
        return WEIR_ERROR;
    }

    sh->key = weir_slab_alloc(shpool, (size_t) len);
    if (sh->key == NULL) {
        EVP_PKEY_free(key);
        return WEIR_ERROR;
    }

    p = sh->key;
    sh->key_len = (size_t) i2d_PrivateKey(key, &p);
    EVP_PKEY_free(key);

    shpool->data = sh;
    shm_zone->data = sh;

    /* a full zone is routine: the oldest leaves go */
    shpool->log_nomem = 0;

    return WEIR_OK;
}


/* the leaves' key, decoded once per worker */

EVP_PKEY *
weir_http_mitm_shared_key(weir_http_mitm_zone_t *zone, weir_log_t *log)
{
    const unsigned char     *p;
    weir_http_mitm_shctx_t  *sh;

    if (zone->key) {
        return zone->key;
    }

    sh = zone->shm_zone->data;
    p = sh->key;

    zone->key = d2i_AutoPrivateKey(NULL, &p, (long) sh->key_len);

    if (zone->key == NULL) {
        weir_ssl_error(WEIR_LOG_ALERT, log, 0, "the key of mitm certificate "
                       "cache \"%.*s\" cannot be read",
                       WEIR_STR_ARG(zone->shm_zone->shm.name));
    }

    return zone->key;
}


/*
 * What the zone knows of mc->name: WEIR_OK (complete: *leaf decoded,
 * mc->alpn, *error copied into mc's pool), WEIR_BUSY (another worker is
 * looking), WEIR_DECLINED (nothing, or stale: mc's worker is to look,
 * and a pending node with its pid is there now, unless the zone was
 * full), WEIR_ERROR.
 */

weir_int_t
weir_http_mitm_shared_get(weir_http_mitm_zone_t *zone,
    weir_http_mitm_conn_t *mc, X509 **leaf, const char **error)
{
    size_t                    size;
    uint32_t                  hash;
    const unsigned char      *ca;
    time_t                    now;
    weir_uint_t               alpn;
    weir_str_t                err;
    unsigned char            *der;
    const unsigned char      *p;
    weir_slab_pool_t         *shpool;
    weir_http_mitm_shctx_t   *sh;
    weir_http_mitm_shnode_t  *node;

    shpool = (weir_slab_pool_t *) zone->shm_zone->shm.addr;
    sh = zone->shm_zone->data;
    now = weir_time();

    *leaf = NULL;
    *error = NULL;
    der = NULL;
    ca = mc->mscf->ca->fingerprint;
    hash = weir_http_mitm_hash(&mc->name, mc->port, ca);
    err.len = 0;
    alpn = 0;

    weir_shmtx_lock(&shpool->mutex);

    node = weir_http_mitm_shared_find(sh, &mc->name, mc->port, ca, hash);

    if (node && node->pid == 0 && node->expires > now) {
        weir_queue_remove(&node->lru);
        weir_queue_insert_head(&sh->lru, &node->lru);

        size = node->der_len;
        alpn = node->alpn;
        err.len = node->error_len;

        /* copied out: the node may go once the lock is released */
        der = weir_pnalloc(mc->c->pool, size + err.len + 1);

        if (der) {
            weir_memcpy(der, node->data + node->name_len + node->error_len,
                        size);
            err.data = der + size;
            weir_memcpy(err.data, node->data + node->name_len, err.len);
            err.data[err.len] = '\0';
        }

        weir_shmtx_unlock(&shpool->mutex);

        if (der == NULL) {
            return WEIR_ERROR;
        }

        p = der;
        *leaf = d2i_X509(NULL, &p, (long) size);

        if (*leaf == NULL) {
            weir_ssl_error(WEIR_LOG_ALERT, mc->c->log, 0,
                           "a certificate of mitm certificate cache "
                           "\"%.*s\" cannot be read",
                           WEIR_STR_ARG(zone->shm_zone->shm.name));
            return WEIR_ERROR;
        }

        mc->alpn = alpn;
        *error = err.len ? (const char *) err.data : NULL;

        return WEIR_OK;
    }

    if (node && node->pid != 0 && node->pid != weir_pid
        && now - node->since < WEIR_HTTP_MITM_LOOK_MAX)
    {
        weir_shmtx_unlock(&shpool->mutex);
        return WEIR_BUSY;
    }

    if (node) {
        /* expired, or its look was lost: this worker looks again */
        node->pid = weir_pid;
        node->since = now;
        weir_shmtx_unlock(&shpool->mutex);
        return WEIR_DECLINED;
    }

    node = weir_http_mitm_shared_alloc(shpool, sh,
                                       sizeof(weir_http_mitm_shnode_t)
                                       + mc->name.len);
    if (node) {
        node->hash = hash;
        node->port = mc->port;
        weir_memcpy(node->ca, ca, 32);
        node->pid = weir_pid;
        node->since = now;
        node->name_len = mc->name.len;
        weir_memcpy(node->data, mc->name.data, mc->name.len);

        node->next = sh->buckets[hash % WEIR_HTTP_MITM_SHARED_BUCKETS];
        sh->buckets[hash % WEIR_HTTP_MITM_SHARED_BUCKETS] = node;
        weir_queue_insert_head(&sh->lru, &node->lru);
    }

    weir_shmtx_unlock(&shpool->mutex);

    return WEIR_DECLINED;
}


/*
 * The end of this worker's look (or its read of the store, loaded): the
 * leaf goes into the node (made anew with room for it), or, without
 * one, the node goes so that another worker may look again. Returns
 * the zone's counters for the log line.
 */

void
weir_http_mitm_shared_put(weir_http_mitm_zone_t *zone,
    weir_http_mitm_cert_t *e, X509 *leaf, weir_uint_t loaded,
    weir_uint_t counts[WEIR_HTTP_MITM_COUNTS])
{
    int                       len;
    size_t                    elen;
    uint32_t                  hash;
    unsigned char            *p;
    const unsigned char      *ca;
    weir_slab_pool_t         *shpool;
    weir_http_mitm_shctx_t   *sh;
    weir_http_mitm_shnode_t  *node, *fresh;

    shpool = (weir_slab_pool_t *) zone->shm_zone->shm.addr;
    sh = zone->shm_zone->data;
    ca = e->ca->fingerprint;
    hash = weir_http_mitm_hash(&e->name, e->port, ca);

    len = leaf ? i2d_X509(leaf, NULL) : 0;
    elen = e->error ? weir_strlen(e->error) : 0;

    weir_shmtx_lock(&shpool->mutex);

    node = weir_http_mitm_shared_find(sh, &e->name, e->port, ca, hash);

    if (node && node->pid != weir_pid) {
        /* another worker took the look over meanwhile: its result */
        node = NULL;
        goto done;
    }

    if (node) {
        weir_http_mitm_shared_unlink(shpool, sh, node);
    }

    if (len <= 0) {
        goto done;
    }

    if (loaded) {
        sh->loaded++;

    } else {
        sh->minted++;
    }

    fresh = weir_http_mitm_shared_alloc(shpool, sh,
                                        sizeof(weir_http_mitm_shnode_t)
                                        + e->name.len + elen + (size_t) len);
    if (fresh == NULL) {
        goto done;
    }

    fresh->hash = hash;
    fresh->port = e->port;
    weir_memcpy(fresh->ca, ca, 32);
    fresh->pid = 0;
    fresh->since = weir_time();
    fresh->expires = e->expires;
    fresh->alpn = e->alpn;
    fresh->name_len = e->name.len;
    fresh->error_len = elen;
    fresh->der_len = (size_t) len;

    p = weir_cpymem(fresh->data, e->name.data, e->name.len);
    p = weir_cpymem(p, e->error ? e->error : "", elen);
    (void) i2d_X509(leaf, &p);

    fresh->next = sh->buckets[hash % WEIR_HTTP_MITM_SHARED_BUCKETS];
    sh->buckets[hash % WEIR_HTTP_MITM_SHARED_BUCKETS] = fresh;
    weir_queue_insert_head(&sh->lru, &fresh->lru);

done:

    weir_http_mitm_get_counts(counts, sh);

    weir_shmtx_unlock(&shpool->mutex);
}


static weir_http_mitm_shnode_t *
weir_http_mitm_shared_find(weir_http_mitm_shctx_t *sh, weir_str_t *name,
    in_port_t port, const unsigned char *ca, uint32_t hash)
{
    weir_http_mitm_shnode_t  *node;

    for (node = sh->buckets[hash % WEIR_HTTP_MITM_SHARED_BUCKETS];
         node;
         node = node->next)
    {
        if (node->hash == hash && node->port == port
            && node->name_len == name->len
            && weir_memcmp(node->ca, ca, 32) == 0
            && weir_memcmp(node->data, name->data, name->len) == 0)
        {
            return node;
        }
    }

    return NULL;
}


/* with the lock held; a full zone gives up its oldest complete leaves */

static weir_http_mitm_shnode_t *
weir_http_mitm_shared_alloc(weir_slab_pool_t *shpool,
    weir_http_mitm_shctx_t *sh, size_t size)
{
    weir_uint_t               i;
    weir_queue_t             *q;
    weir_http_mitm_shnode_t  *node;

    for (i = 0; i < 32; i++) {
        node = weir_slab_calloc_locked(shpool, size);

        if (node) {
            return node;
        }

        for (q = weir_queue_last(&sh->lru);
             q != weir_queue_sentinel(&sh->lru);
             q = weir_queue_prev(q))
        {
            node = weir_queue_data(q, weir_http_mitm_shnode_t, lru);

            if (node->pid == 0) {
                break;
            }
        }

        if (q == weir_queue_sentinel(&sh->lru)) {
            return NULL;
        }

        weir_http_mitm_shared_unlink(shpool, sh, node);
        sh->evicted++;
    }

    return NULL;
}


static void
weir_http_mitm_shared_unlink(weir_slab_pool_t *shpool,
    weir_http_mitm_shctx_t *sh, weir_http_mitm_shnode_t *node)
{
    weir_http_mitm_shnode_t  **pn;

    for (pn = &sh->buckets[node->hash % WEIR_HTTP_MITM_SHARED_BUCKETS];
         *pn;
         pn = &(*pn)->next)
    {
        if (*pn == node) {
            *pn = node->next;
            break;
        }
    }

    weir_queue_remove(&node->lru);
    weir_slab_free_locked(shpool, node);
}


/* a leaf given to a client: those not minted for it came from a cache
 * (or from a look another client waited for) */

void
weir_http_mitm_shared_served(weir_http_mitm_zone_t *zone)
{
    weir_http_mitm_shctx_t  *sh;

    sh = zone->shm_zone->data;

    (void) weir_atomic_fetch_add(&sh->served, 1);
}


/* an entry written to the store */

void
weir_http_mitm_shared_stored(weir_http_mitm_zone_t *zone)
{
    weir_http_mitm_shctx_t  *sh;

    sh = zone->shm_zone->data;

    (void) weir_atomic_fetch_add(&sh->stored, 1);
}


void
weir_http_mitm_shared_counts(weir_http_mitm_zone_t *zone,
    weir_uint_t counts[WEIR_HTTP_MITM_COUNTS])
{
    weir_slab_pool_t        *shpool;
    weir_http_mitm_shctx_t  *sh;

    shpool = (weir_slab_pool_t *) zone->shm_zone->shm.addr;
    sh = zone->shm_zone->data;

    weir_shmtx_lock(&shpool->mutex);

    weir_http_mitm_get_counts(counts, sh);

    weir_shmtx_unlock(&shpool->mutex);
}
