#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"

/*
 * "hash KEY [consistent]": the peer follows from a key evaluated per
 * request (variables allowed: "$arg_k", "$remote_addr$uri").
 *
 * Plain: crc32 of the key modulo the total weight walks the weighted
 * list of peers; a peer that is down, failed or already tried makes the
 * request rehash (crc32 of the try number and the key, added to the
 * previous value), at most 20 times, then round robin takes over.
 *
 * Consistent (ketama-like): each peer has 160 points per unit of weight
 * on a ring of 32-bit values (crc32 of its server name and address,
 * chained point by point), the key's crc32 finds the first point at or
 * after it (binary search) and unusable peers are skipped point by
 * point. Removing a peer only moves the keys that were on its points.
 *
 * No backup peers with hash: a key must keep its peer. Built on round
 * robin's peers, per-request data and free hook. The walk over the
 * peers runs under the group's lock (a "zone"), the key's hash and the
 * search of the ring (configuration) outside it.
 */


#define WEIR_HTTP_UPSTREAM_HASH_TRIES   20
#define WEIR_HTTP_UPSTREAM_HASH_POINTS  160
/* 2^24 points (400 MB of ring): a total weight of 104857 */
#define WEIR_HTTP_UPSTREAM_HASH_MAX_POINTS  (1 << 24)


typedef struct {
    uint32_t                         hash;
    weir_uint_t                      index;     /* in the peer list */
    weir_http_upstream_rr_peer_t    *peer;
} weir_http_upstream_chash_point_t;


typedef struct {
    weir_http_complex_value_t       *key;       /* NULL: not this balancer */
    weir_uint_t                      consistent;
    weir_uint_t                      total_weight;

    weir_uint_t                      npoints;
    weir_http_upstream_chash_point_t  *points;  /* sorted by hash */
} weir_http_upstream_hash_srv_conf_t;


typedef struct {
    /* first: round robin's init and hooks see it as theirs */
    weir_http_upstream_rr_peer_data_t    rrp;

    weir_http_upstream_hash_srv_conf_t  *conf;
    weir_str_t                           key;
    weir_uint_t                          tries;
    weir_uint_t                          rehash;
    uint32_t                             hash;
    unsigned                             started:1;
} weir_http_upstream_hash_peer_data_t;


static weir_int_t weir_http_upstream_init_hash(weir_conf_t *cf,
    weir_http_upstream_srv_conf_t *us);
static weir_int_t weir_http_upstream_init_chash(weir_conf_t *cf,
    weir_http_upstream_srv_conf_t *us);
static weir_int_t weir_http_upstream_init_hash_peer(weir_http_request_t *r,
    weir_http_upstream_srv_conf_t *us);
static weir_int_t weir_http_upstream_get_hash_peer(weir_peer_connection_t *pc,
    void *data);
static weir_int_t weir_http_upstream_get_chash_peer(
    weir_peer_connection_t *pc, void *data);
static weir_int_t weir_http_upstream_hash_use(weir_peer_connection_t *pc,
    weir_http_upstream_hash_peer_data_t *hp,
    weir_http_upstream_rr_peer_t *peer, weir_uint_t p, time_t now);
static weir_uint_t weir_http_upstream_hash_usable(
    weir_http_upstream_hash_peer_data_t *hp,
    weir_http_upstream_rr_peer_t *peer, weir_uint_t p, time_t now);
static int weir_http_upstream_chash_cmp(const void *one, const void *two);
static uint32_t weir_http_upstream_crc32_update(uint32_t crc,
    const unsigned char *p, size_t len);

static void *weir_http_upstream_hash_create_conf(weir_conf_t *cf);
static char *weir_http_upstream_hash(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);


static weir_command_t  weir_http_upstream_hash_commands[] = {

    { weir_string("hash"),
      WEIR_HTTP_UPS_CONF|WEIR_CONF_TAKE12,
      weir_http_upstream_hash,
      WEIR_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    weir_null_command
};


static weir_http_module_t  weir_http_upstream_hash_module_ctx = {
    NULL,                                  /* preconfiguration */
    NULL,                                  /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    weir_http_upstream_hash_create_conf,   /* create server configuration */
    NULL,                                  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL,                                  /* merge location configuration */

    NULL,                                  /* phase handlers */
    NULL,                                  /* header filters */
    NULL,                                  /* body filters */
    NULL                                   /* request body filters */
};


weir_module_t  weir_http_upstream_hash_module = {
    WEIR_MODULE_V1,
    &weir_http_upstream_hash_module_ctx,   /* module context */
    weir_http_upstream_hash_commands,      /* module directives */
    WEIR_HTTP_MODULE,                      /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    WEIR_MODULE_V1_PADDING
};


/* CRC-32 (IEEE 802.3, reflected), four bits at a time */

static const uint32_t  weir_http_upstream_crc32_table16[16] = {
    0x00000000, 0x1db71064, 0x3b6e20c8, 0x26d930ac,
    0x76dc4190, 0x6b6b51f4, 0x4db26158, 0x5005713c,
    0xedb88320, 0xf00f9344, 0xd6d6a3e8, 0xcb61b38c,
    0x9b64c2b0, 0x86d3d2d4, 0xa00ae278, 0xbdbdf21c
};

#define weir_http_upstream_crc32_init()    0xffffffff
#define weir_http_upstream_crc32_final(c)  ((c) ^ 0xffffffff)


static uint32_t
weir_http_upstream_crc32_update(uint32_t crc, const unsigned char *p,
    size_t len)
{
    while (len--) {
        crc ^= *p++;
        crc = weir_http_upstream_crc32_table16[crc & 0xf] ^ (crc >> 4);
        crc = weir_http_upstream_crc32_table16[crc & 0xf] ^ (crc >> 4);
    }

    return crc;
}


static weir_int_t
weir_http_upstream_hash_total(weir_http_upstream_srv_conf_t *us)
{
    weir_http_upstream_rr_peer_t        *peer;
    weir_http_upstream_rr_peers_t       *peers;
    weir_http_upstream_hash_srv_conf_t  *hcf;

    hcf = us->srv_conf[weir_http_upstream_hash_module.ctx_index];
    peers = us->peer.data;

    hcf->total_weight = 0;

    for (peer = peers->peer; peer; peer = peer->next) {
        hcf->total_weight += (weir_uint_t) peer->weight;
    }

    return hcf->total_weight ? WEIR_OK : WEIR_ERROR;
}


static weir_int_t
weir_http_upstream_init_hash(weir_conf_t *cf,
    weir_http_upstream_srv_conf_t *us)
{
    if (weir_http_upstream_init_round_robin(cf, us) != WEIR_OK) {
        return WEIR_ERROR;
    }

    if (weir_http_upstream_hash_total(us) != WEIR_OK) {
        weir_log_error(WEIR_LOG_EMERG, cf->log, 0,
                       "no weighted servers in upstream \"%.*s\"",
                       WEIR_STR_ARG(us->host));
        return WEIR_ERROR;
    }

    us->peer.init = weir_http_upstream_init_hash_peer;

    return WEIR_OK;
}


static weir_int_t
weir_http_upstream_init_chash(weir_conf_t *cf,
    weir_http_upstream_srv_conf_t *us)
{
    uint32_t                              base, hash;
    weir_uint_t                           i, j, n, npoints;
    unsigned char                         prev[4];
    weir_http_upstream_rr_peer_t         *peer;
    weir_http_upstream_rr_peers_t        *peers;
    weir_http_upstream_chash_point_t     *points;
    weir_http_upstream_hash_srv_conf_t   *hcf;

    if (weir_http_upstream_init_hash(cf, us) != WEIR_OK) {
        return WEIR_ERROR;
    }

    hcf = us->srv_conf[weir_http_upstream_hash_module.ctx_index];
    peers = us->peer.data;

    /* weights are at most 1000000 each ("server"): no overflow here */
    if (hcf->total_weight
        > WEIR_HTTP_UPSTREAM_HASH_MAX_POINTS / WEIR_HTTP_UPSTREAM_HASH_POINTS)
    {
        weir_log_error(WEIR_LOG_EMERG, cf->log, 0,
                       "total weight %lu of upstream \"%.*s\" in %s:%lu is "
                       "too large for \"hash ... consistent\" (at most %lu)",
                       (unsigned long) hcf->total_weight,
                       WEIR_STR_ARG(us->host),
                       us->file_name ? (char *) us->file_name : "-",
                       (unsigned long) us->line,
                       (unsigned long) (WEIR_HTTP_UPSTREAM_HASH_MAX_POINTS
                                        / WEIR_HTTP_UPSTREAM_HASH_POINTS));
        return WEIR_ERROR;
    }

    npoints = hcf->total_weight * WEIR_HTTP_UPSTREAM_HASH_POINTS;

    points = weir_palloc(cf->pool,
                         npoints * sizeof(weir_http_upstream_chash_point_t));
    if (points == NULL) {
        weir_log_error(WEIR_LOG_EMERG, cf->log, 0,
                       "could not allocate the hash ring of upstream "
                       "\"%.*s\" in %s:%lu", WEIR_STR_ARG(us->host),
                       us->file_name ? (char *) us->file_name : "-",
                       (unsigned long) us->line);
        return WEIR_ERROR;
    }

    n = 0;

    for (peer = peers->peer, i = 0; peer; peer = peer->next, i++) {

        /* the server name as written and the address: a name that
         * resolves to several addresses still gives distinct points */

        base = weir_http_upstream_crc32_init();
        base = weir_http_upstream_crc32_update(base, peer->server.data,
                                               peer->server.len);
        base = weir_http_upstream_crc32_update(base,
                                               (unsigned char *) "", 1);
        base = weir_http_upstream_crc32_update(base, peer->name.data,
                                               peer->name.len);

        weir_memzero(prev, sizeof(prev));

        for (j = 0;
             j < (weir_uint_t) peer->weight * WEIR_HTTP_UPSTREAM_HASH_POINTS;
             j++)
        {
            hash = weir_http_upstream_crc32_update(base, prev, 4);
            hash = weir_http_upstream_crc32_final(hash);

            points[n].hash = hash;
            points[n].index = i;
            points[n].peer = peer;
            n++;

            prev[0] = (unsigned char) (hash & 0xff);
            prev[1] = (unsigned char) ((hash >> 8) & 0xff);
            prev[2] = (unsigned char) ((hash >> 16) & 0xff);
            prev[3] = (unsigned char) ((hash >> 24) & 0xff);
        }
    }

    qsort(points, n, sizeof(weir_http_upstream_chash_point_t),
          weir_http_upstream_chash_cmp);

    hcf->points = points;
    hcf->npoints = n;

    return WEIR_OK;
}


static int
weir_http_upstream_chash_cmp(const void *one, const void *two)
{
    const weir_http_upstream_chash_point_t  *a = one, *b = two;

    if (a->hash != b->hash) {
        return a->hash < b->hash ? -1 : 1;
    }

    /* equal hashes: a stable order, whatever qsort does */
    return a->index < b->index ? -1 : (a->index > b->index);
}


static weir_int_t
weir_http_upstream_init_hash_peer(weir_http_request_t *r,
    weir_http_upstream_srv_conf_t *us)
{
    weir_http_upstream_t                 *u;
    weir_http_upstream_hash_srv_conf_t   *hcf;
    weir_http_upstream_hash_peer_data_t  *hp;

    u = r->upstream;

    hp = weir_pcalloc(r->pool, sizeof(weir_http_upstream_hash_peer_data_t));
    if (hp == NULL) {
        return WEIR_ERROR;
    }

    u->peer.data = &hp->rrp;

    if (weir_http_upstream_init_round_robin_peer(r, us) != WEIR_OK) {
        return WEIR_ERROR;
    }

    hcf = us->srv_conf[weir_http_upstream_hash_module.ctx_index];

    if (weir_http_complex_value(r, hcf->key, &hp->key) != WEIR_OK) {
        return WEIR_ERROR;
    }

    weir_log_debug(r->connection->log, 0, "upstream hash key:\"%.*s\"",
                   WEIR_STR_ARG(hp->key));

    hp->conf = hcf;

    u->peer.get = hcf->consistent ? weir_http_upstream_get_chash_peer
                                  : weir_http_upstream_get_hash_peer;

    return WEIR_OK;
}


static weir_uint_t
weir_http_upstream_hash_usable(weir_http_upstream_hash_peer_data_t *hp,
    weir_http_upstream_rr_peer_t *peer, weir_uint_t p, time_t now)
{
    if (weir_http_upstream_rr_tried(&hp->rrp, p)) {
        return 0;
    }

    return weir_http_upstream_rr_peer_usable(peer, now);
}


/* the chosen peer becomes this attempt's, as round robin would do it */

static weir_int_t
weir_http_upstream_hash_use(weir_peer_connection_t *pc,
    weir_http_upstream_hash_peer_data_t *hp,
    weir_http_upstream_rr_peer_t *peer, weir_uint_t p, time_t now)
{
    weir_log_debug(pc->log, 0, "get hash peer %.*s, try:%lu",
                   WEIR_STR_ARG(peer->name), (unsigned long) hp->tries);

    return weir_http_upstream_rr_use_peer(pc, &hp->rrp, peer, p, now);
}


static weir_int_t
weir_http_upstream_get_hash_peer(weir_peer_connection_t *pc, void *data)
{
    weir_http_upstream_hash_peer_data_t  *hp = data;

    time_t                          now;
    size_t                          size;
    uint32_t                        hash;
    weir_int_t                      rc;
    weir_uint_t                     w, p;
    weir_shmtx_t                   *mutex;
    unsigned char                   buf[WEIR_INT_T_LEN];
    weir_http_upstream_rr_peer_t   *peer;

    if (hp->tries > WEIR_HTTP_UPSTREAM_HASH_TRIES
        || hp->rrp.peers->single || hp->key.len == 0)
    {
        return weir_http_upstream_get_round_robin_peer(pc, &hp->rrp);
    }

    pc->cached = 0;
    pc->connection = NULL;

    hp->rrp.current = NULL;

    now = weir_time();

    mutex = hp->rrp.peers->mutex;

    if (mutex) {
        weir_shmtx_lock(mutex);
    }

    for ( ;; ) {

        hash = weir_http_upstream_crc32_init();

        if (hp->rehash > 0) {
            size = (size_t) (weir_slprintf(buf, buf + sizeof(buf), "%lu",
                                           (unsigned long) hp->rehash)
                             - buf);
            hash = weir_http_upstream_crc32_update(hash, buf, size);
        }

        hash = weir_http_upstream_crc32_update(hash, hp->key.data,
                                               hp->key.len);
        hash = weir_http_upstream_crc32_final(hash);

        hp->hash += hash;
        hp->rehash++;

        w = hp->hash % hp->conf->total_weight;

        peer = hp->rrp.peers->peer;
        p = 0;

        while (w >= (weir_uint_t) peer->weight) {
            w -= (weir_uint_t) peer->weight;
            peer = peer->next;
            p++;
        }

        if (weir_http_upstream_hash_usable(hp, peer, p, now)) {
            rc = weir_http_upstream_hash_use(pc, hp, peer, p, now);
            break;
        }

        if (++hp->tries > WEIR_HTTP_UPSTREAM_HASH_TRIES) {
            rc = weir_http_upstream_get_round_robin_peer_locked(pc,
                                                                &hp->rrp);
            break;
        }
    }

    if (mutex) {
        weir_shmtx_unlock(mutex);
    }

    return rc;
}


static weir_int_t
weir_http_upstream_get_chash_peer(weir_peer_connection_t *pc, void *data)
{
    weir_http_upstream_hash_peer_data_t  *hp = data;

    time_t                              now;
    uint32_t                            hash;
    weir_int_t                          rc;
    weir_uint_t                         lo, hi, mid, npoints;
    weir_shmtx_t                       *mutex;
    weir_http_upstream_chash_point_t   *points, *point;

    npoints = hp->conf->npoints;

    if (hp->tries > WEIR_HTTP_UPSTREAM_HASH_TRIES
        || hp->rrp.peers->single || hp->key.len == 0 || npoints == 0)
    {
        return weir_http_upstream_get_round_robin_peer(pc, &hp->rrp);
    }

    pc->cached = 0;
    pc->connection = NULL;

    hp->rrp.current = NULL;

    points = hp->conf->points;

    if (!hp->started) {
        hash = weir_http_upstream_crc32_init();
        hash = weir_http_upstream_crc32_update(hash, hp->key.data,
                                               hp->key.len);
        hash = weir_http_upstream_crc32_final(hash);

        /* the first point at or after the key's hash (wrapping) */

        lo = 0;
        hi = npoints;

        while (lo < hi) {
            mid = lo + (hi - lo) / 2;

            if (points[mid].hash < hash) {
                lo = mid + 1;

            } else {
                hi = mid;
            }
        }

        hp->hash = (uint32_t) (lo % npoints);
        hp->started = 1;
    }

    now = weir_time();

    mutex = hp->rrp.peers->mutex;

    if (mutex) {
        weir_shmtx_lock(mutex);
    }

    for ( ;; ) {
        point = &points[hp->hash % npoints];

        if (weir_http_upstream_hash_usable(hp, point->peer, point->index,
                                           now))
        {
            rc = weir_http_upstream_hash_use(pc, hp, point->peer,
                                             point->index, now);
            break;
        }

        hp->hash = (uint32_t) ((hp->hash + 1) % npoints);

        if (++hp->tries > WEIR_HTTP_UPSTREAM_HASH_TRIES) {
            rc = weir_http_upstream_get_round_robin_peer_locked(pc,
                                                                &hp->rrp);
            break;
        }
    }

    if (mutex) {
        weir_shmtx_unlock(mutex);
    }

    return rc;
}


static void *
weir_http_upstream_hash_create_conf(weir_conf_t *cf)
{
    weir_http_upstream_hash_srv_conf_t  *conf;

    conf = weir_pcalloc(cf->pool, sizeof(weir_http_upstream_hash_srv_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    /* key NULL, consistent 0, no points */

    return conf;
}


static char *
weir_http_upstream_hash(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_http_upstream_hash_srv_conf_t  *hcf = conf;

    weir_str_t                         *value;
    weir_http_upstream_srv_conf_t      *us;
    weir_http_compile_complex_value_t   ccv;

    (void) cmd;

    if (hcf->key != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (cf->args->nelts == 3) {
        if (value[2].len != sizeof("consistent") - 1
            || weir_strncmp(value[2].data, "consistent", value[2].len) != 0)
        {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid parameter \"%.*s\"",
                                WEIR_STR_ARG(value[2]));
            return WEIR_CONF_ERROR;
        }

        hcf->consistent = 1;
    }

    hcf->key = weir_pcalloc(cf->pool, sizeof(weir_http_complex_value_t));
    if (hcf->key == NULL) {
        return WEIR_CONF_ERROR;
    }

    weir_memzero(&ccv, sizeof(weir_http_compile_complex_value_t));

    ccv.cf = cf;
    ccv.value = &value[1];
    ccv.complex_value = hcf->key;

    if (weir_http_compile_complex_value(&ccv) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    us = weir_http_conf_get_module_srv_conf(cf, weir_http_upstream_module);

    if (us->peer.init_upstream) {
        weir_conf_log_error(WEIR_LOG_WARN, cf, 0,
                            "load balancing method redefined");
    }

    us->peer.init_upstream = hcf->consistent
                             ? weir_http_upstream_init_chash
                             : weir_http_upstream_init_hash;

    /* no backup: the upstream block rejects "backup" on server lines,
     * before or after this directive */
    us->flags = WEIR_HTTP_UPSTREAM_CREATE
                |WEIR_HTTP_UPSTREAM_WEIGHT
                |WEIR_HTTP_UPSTREAM_MAX_CONNS
                |WEIR_HTTP_UPSTREAM_MAX_FAILS
                |WEIR_HTTP_UPSTREAM_FAIL_TIMEOUT
                |WEIR_HTTP_UPSTREAM_DOWN;

    return WEIR_CONF_OK;
}
