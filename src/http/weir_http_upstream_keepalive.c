#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_http.h"

/*
 * The keep-alive pool of origin connections. Every group has one per
 * worker (us->keepalive), allocated from the cycle pool the first time a
 * request of this worker uses the group: the cycle is the worker's own
 * copy, so the pool is per worker and dies with the cycle.
 *
 * The pool wraps the balancer's get/free hooks for each request: get
 * asks the balancer for a peer, then hands out an idle connection to
 * that peer if one is cached; free caches a reusable connection and
 * always tells the balancer how the attempt went.
 *
 * "That peer" is the address and the key of the attempt (pc->key: empty
 * for plain TCP, the TLS settings of the handshake otherwise): idle
 * connections are kept in one queue per (address, key), found through a
 * hash, so that neither a lookup nor a connection made with other TLS
 * settings costs a scan of the group's connections. A global queue in
 * caching order picks the connection to close when the pool is full.
 *
 * An idle connection belongs to the pool alone: c->data is its cache
 * item, its log is the cycle's, its read handler closes it on anything
 * (EOF, data, error, timeout, c->close from a worker short of
 * connections or shutting down) and its write handler does nothing.
 */


#define WEIR_HTTP_UPSTREAM_KEEPALIVE_N         32
#define WEIR_HTTP_UPSTREAM_KEEPALIVE_TIMEOUT   60000
#define WEIR_HTTP_UPSTREAM_KEEPALIVE_REQUESTS  1000
#define WEIR_HTTP_UPSTREAM_KEEPALIVE_TIME      3600000


/* numbers are weir_int_t: weir_conf_set_num_slot writes them */
typedef struct {
    weir_int_t                           max_cached;
    weir_int_t                           requests;
    weir_msec_t                          timeout;
    weir_msec_t                          time;
} weir_http_upstream_keepalive_srv_conf_t;


typedef struct {
    weir_http_upstream_keepalive_conf_t  conf;   /* resolved */
    weir_queue_t                         cache;  /* idle; head: newest */
    weir_queue_t                         free;   /* unused items */
    weir_queue_t                         free_peers;
    weir_queue_t                        *buckets;
    weir_uint_t                          mask;   /* buckets - 1 */
    weir_log_t                          *log;    /* the cycle's */
} weir_http_upstream_keepalive_cache_t;


/* the idle connections to one (address, key); in a bucket while it has
 * some, in cache->free_peers otherwise */
typedef struct {
    weir_queue_t                         queue;
    weir_queue_t                         idle;   /* head: newest */
    weir_uint_t                          hash;
    socklen_t                            socklen;
    weir_sockaddr_t                      sockaddr;
    size_t                               key_len;
    unsigned char                        key[WEIR_PEER_KEY_MAX];
} weir_http_upstream_keepalive_peer_t;


typedef struct {
    weir_http_upstream_keepalive_cache_t   *cache;
    weir_queue_t                         queue;  /* cache->cache or free */
    weir_queue_t                         peer_queue; /* peer->idle */
    weir_http_upstream_keepalive_peer_t    *peer;
    weir_connection_t                   *connection;
} weir_http_upstream_keepalive_item_t;


/* per request: the balancer's hooks, called through */
typedef struct {
    weir_http_upstream_keepalive_cache_t   *cache;
    void                                *data;
    weir_event_get_peer_pt               original_get_peer;
    weir_event_free_peer_pt              original_free_peer;
    /* a cached connection of this request failed: the next attempt
     * connects anew (the other idle ones are likely stale too) */
    unsigned                             fresh:1;
} weir_http_upstream_keepalive_peer_data_t;


static weir_int_t weir_http_upstream_get_keepalive_peer(
    weir_peer_connection_t *pc, void *data);
static void weir_http_upstream_free_keepalive_peer(
    weir_peer_connection_t *pc, void *data, weir_uint_t state);
static weir_uint_t weir_http_upstream_keepalive_reusable(
    weir_http_upstream_keepalive_cache_t *cache, weir_peer_connection_t *pc,
    weir_uint_t state);
static void weir_http_upstream_keepalive_dummy_handler(weir_event_t *ev);
static void weir_http_upstream_keepalive_close_handler(weir_event_t *ev);
static void weir_http_upstream_keepalive_close(weir_connection_t *c);
static void weir_http_upstream_keepalive_empty(void *data);
static weir_uint_t weir_http_upstream_keepalive_hash(struct sockaddr *sa,
    weir_str_t *key);
static weir_http_upstream_keepalive_peer_t *
    weir_http_upstream_keepalive_find(
    weir_http_upstream_keepalive_cache_t *cache, weir_peer_connection_t *pc,
    weir_uint_t hash);
static void weir_http_upstream_keepalive_unlink(
    weir_http_upstream_keepalive_item_t *item);
static weir_http_upstream_keepalive_cache_t *
    weir_http_upstream_keepalive_get_cache(weir_http_upstream_srv_conf_t *us);

static void *weir_http_upstream_keepalive_create_conf(weir_conf_t *cf);
static char *weir_http_upstream_named_keepalive(weir_conf_t *cf,
    weir_command_t *cmd, void *conf);
static void weir_http_upstream_keepalive_exit_process(weir_cycle_t *cycle);


/* the pool's items are allocated per worker at its first request: a
 * size no worker could hold is refused at configuration time */
static weir_conf_num_bounds_t  weir_http_upstream_keepalive_bounds = {
    weir_conf_check_num_bounds, 0, 65536
};


static weir_command_t  weir_http_upstream_keepalive_commands[] = {

    { weir_string("keepalive"),
      WEIR_HTTP_UPS_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_num_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_upstream_keepalive_srv_conf_t, max_cached),
      &weir_http_upstream_keepalive_bounds },

    { weir_string("keepalive_timeout"),
      WEIR_HTTP_UPS_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_msec_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_upstream_keepalive_srv_conf_t, timeout),
      NULL },

    { weir_string("keepalive_requests"),
      WEIR_HTTP_UPS_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_num_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_upstream_keepalive_srv_conf_t, requests),
      NULL },

    { weir_string("keepalive_time"),
      WEIR_HTTP_UPS_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_msec_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_upstream_keepalive_srv_conf_t, time),
      NULL },

    { weir_string("named_peers_keepalive"),
      WEIR_HTTP_MAIN_CONF|WEIR_CONF_1MORE,
      weir_http_upstream_named_keepalive,
      0,
      0,
      NULL },

    weir_null_command
};


static weir_http_module_t  weir_http_upstream_keepalive_module_ctx = {
    NULL,                                  /* preconfiguration */
    NULL,                                  /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    weir_http_upstream_keepalive_create_conf, /* create server conf */
    NULL,                                  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL,                                  /* merge location configuration */

    NULL,                                  /* phase handlers */
    NULL,                                  /* header filters */
    NULL,                                  /* body filters */
    NULL                                   /* request body filters */
};


weir_module_t  weir_http_upstream_keepalive_module = {
    WEIR_MODULE_V1,
    &weir_http_upstream_keepalive_module_ctx, /* module context */
    weir_http_upstream_keepalive_commands, /* module directives */
    WEIR_HTTP_MODULE,                      /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    weir_http_upstream_keepalive_exit_process, /* exit process */
    NULL,                                  /* exit master */
    WEIR_MODULE_V1_PADDING
};


/*
 * named_peers_keepalive N [requests=N] [timeout=TIME] [time=TIME]: the
 * pools of the peers named at request time (proxy_pass with variables,
 * a forward proxy's origins), which have no upstream block to say it.
 * N 0: no pool.
 */

static char *
weir_http_upstream_named_keepalive(weir_conf_t *cf, weir_command_t *cmd,
    void *conf)
{
    weir_int_t                            n;
    weir_str_t                           *value, v;
    weir_uint_t                           i;
    weir_msec_t                           ms;
    weir_http_upstream_keepalive_conf_t  *kc;
    weir_http_upstream_main_conf_t       *umcf;

    (void) cmd;
    (void) conf;

    umcf = weir_http_conf_get_module_main_conf(cf, weir_http_upstream_module);

    if (umcf->resolved->keepalive_conf) {
        return "is duplicate";
    }

    kc = weir_palloc(cf->pool, sizeof(weir_http_upstream_keepalive_conf_t));
    if (kc == NULL) {
        return WEIR_CONF_ERROR;
    }

    kc->requests = WEIR_HTTP_UPSTREAM_KEEPALIVE_REQUESTS;
    kc->timeout = WEIR_HTTP_UPSTREAM_KEEPALIVE_TIMEOUT;
    kc->time = WEIR_HTTP_UPSTREAM_KEEPALIVE_TIME;

    value = cf->args->elts;

    n = weir_atoi(value[1].data, value[1].len);

    if (n == WEIR_ERROR || n > 65536) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "invalid number of connections \"%.*s\"",
                            WEIR_STR_ARG(value[1]));
        return WEIR_CONF_ERROR;
    }

    kc->max_cached = n;

    for (i = 2; i < cf->args->nelts; i++) {
        v = value[i];

        if (v.len > 9 && weir_strncmp(v.data, "requests=", 9) == 0) {
            n = weir_atoi(v.data + 9, v.len - 9);

            if (n == WEIR_ERROR || n == 0) {
                goto invalid;
            }

            kc->requests = n;
            continue;
        }

        if (v.len > 8 && weir_strncmp(v.data, "timeout=", 8) == 0) {
            v.data += 8;
            v.len -= 8;
            ms = (weir_msec_t) weir_parse_time(&v, 0);

            if (ms == (weir_msec_t) WEIR_ERROR) {
                goto invalid;
            }

            kc->timeout = ms;
            continue;
        }

        if (v.len > 5 && weir_strncmp(v.data, "time=", 5) == 0) {
            v.data += 5;
            v.len -= 5;
            ms = (weir_msec_t) weir_parse_time(&v, 0);

            if (ms == (weir_msec_t) WEIR_ERROR) {
                goto invalid;
            }

            kc->time = ms;
            continue;
        }

        goto invalid;
    }

    umcf->resolved->keepalive_conf = kc;

    return WEIR_CONF_OK;

invalid:

    weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                        "invalid parameter \"%.*s\"", WEIR_STR_ARG(value[i]));
    return WEIR_CONF_ERROR;
}


/*
 * Called by the core right after the balancer's init for each request.
 * A group without a pool ("keepalive 0") is left alone. Peers named at
 * request time (proxy_pass with variables, a forward proxy) share the
 * pool of umcf->resolved, with the default settings.
 */

weir_int_t
weir_http_upstream_keepalive_init_peer(weir_http_request_t *r,
    weir_http_upstream_srv_conf_t *us)
{
    weir_http_upstream_t                      *u;
    weir_http_upstream_keepalive_cache_t      *cache;
    weir_http_upstream_keepalive_peer_data_t  *kp;

    if (us == NULL || r->upstream == NULL) {
        return WEIR_OK;
    }

    cache = weir_http_upstream_keepalive_get_cache(us);

    if (cache == NULL) {
        return WEIR_OK;
    }

    if (cache == WEIR_CONF_UNSET_PTR) {
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "could not allocate the keep-alive pool of "
                       "upstream \"%.*s\"", (int) us->host.len,
                       us->host.data);
        return WEIR_ERROR;
    }

    kp = weir_palloc(r->pool, sizeof(weir_http_upstream_keepalive_peer_data_t));
    if (kp == NULL) {
        return WEIR_ERROR;
    }

    u = r->upstream;

    kp->cache = cache;
    kp->data = u->peer.data;
    kp->original_get_peer = u->peer.get;
    kp->original_free_peer = u->peer.free;
    kp->fresh = 0;

    u->peer.data = kp;
    u->peer.get = weir_http_upstream_get_keepalive_peer;
    u->peer.free = weir_http_upstream_free_keepalive_peer;

    return WEIR_OK;
}


void
weir_http_upstream_keepalive_conf(weir_http_upstream_srv_conf_t *us,
    weir_http_upstream_keepalive_conf_t *conf)
{
    weir_http_upstream_keepalive_srv_conf_t  *kcf;

    kcf = NULL;

    if (us && us->srv_conf) {
        kcf = us->srv_conf[weir_http_upstream_keepalive_module.ctx_index];
    }

    conf->max_cached = WEIR_HTTP_UPSTREAM_KEEPALIVE_N;
    conf->requests = WEIR_HTTP_UPSTREAM_KEEPALIVE_REQUESTS;
    conf->timeout = WEIR_HTTP_UPSTREAM_KEEPALIVE_TIMEOUT;
    conf->time = WEIR_HTTP_UPSTREAM_KEEPALIVE_TIME;

    if (us && us->keepalive_conf) {
        *conf = *us->keepalive_conf;
        return;
    }

    if (kcf == NULL) {
        return;
    }

    if (kcf->max_cached != WEIR_CONF_UNSET) {
        conf->max_cached = kcf->max_cached;
    }

    if (kcf->requests != WEIR_CONF_UNSET) {
        conf->requests = kcf->requests;
    }

    if (kcf->timeout != WEIR_CONF_UNSET_MSEC) {
        conf->timeout = kcf->timeout;
    }

    if (kcf->time != WEIR_CONF_UNSET_MSEC) {
        conf->time = kcf->time;
    }
}


/*
 * The group's pool, allocated on first use in this worker: NULL when the
 * pool is off, WEIR_CONF_UNSET_PTR when the allocation failed.
 */

static weir_http_upstream_keepalive_cache_t *
weir_http_upstream_keepalive_get_cache(weir_http_upstream_srv_conf_t *us)
{
    weir_uint_t                               i, nbuckets;
    weir_cycle_t                             *cycle;
    weir_queue_t                             *buckets;
    weir_pool_cleanup_t                      *cln;
    weir_http_upstream_keepalive_item_t      *items;
    weir_http_upstream_keepalive_peer_t      *peers;
    weir_http_upstream_keepalive_cache_t     *cache;
    weir_http_upstream_keepalive_conf_t       conf;

    if (us->keepalive) {
        return us->keepalive;
    }

    weir_http_upstream_keepalive_conf(us, &conf);

    if (conf.max_cached == 0) {
        return NULL;
    }

    /* as many buckets as connections, a power of two: a peer's lookup
     * meets about one other peer */
    nbuckets = 8;

    while (nbuckets < (weir_uint_t) conf.max_cached) {
        nbuckets <<= 1;
    }

    cycle = (weir_cycle_t *) weir_cycle;

    cache = weir_palloc(cycle->pool,
                        sizeof(weir_http_upstream_keepalive_cache_t));
    items = weir_pcalloc(cycle->pool, (size_t) conf.max_cached
                         * sizeof(weir_http_upstream_keepalive_item_t));
    peers = weir_pcalloc(cycle->pool, (size_t) conf.max_cached
                         * sizeof(weir_http_upstream_keepalive_peer_t));
    buckets = weir_palloc(cycle->pool, nbuckets * sizeof(weir_queue_t));

    /* the cycle may go before the process does (a reload without a
     * master process): its idle connections go with it */
    cln = weir_pool_cleanup_add(cycle->pool, 0);

    if (cache == NULL || items == NULL || peers == NULL || buckets == NULL
        || cln == NULL)
    {
        return WEIR_CONF_UNSET_PTR;
    }

    cln->handler = weir_http_upstream_keepalive_empty;
    cln->data = cache;

    cache->conf = conf;
    cache->log = cycle->log;
    cache->buckets = buckets;
    cache->mask = nbuckets - 1;

    weir_queue_init(&cache->cache);
    weir_queue_init(&cache->free);
    weir_queue_init(&cache->free_peers);

    for (i = 0; i < nbuckets; i++) {
        weir_queue_init(&buckets[i]);
    }

    /* a peer entry per item at most: every entry in a bucket holds one
     * connection or more */
    for (i = 0; i < (weir_uint_t) conf.max_cached; i++) {
        items[i].cache = cache;
        weir_queue_insert_head(&cache->free, &items[i].queue);
        weir_queue_init(&peers[i].idle);
        weir_queue_insert_head(&cache->free_peers, &peers[i].queue);
    }

    us->keepalive = cache;

    return cache;
}


static weir_int_t
weir_http_upstream_get_keepalive_peer(weir_peer_connection_t *pc,
    void *data)
{
    weir_http_upstream_keepalive_peer_data_t  *kp = data;

    weir_int_t                            rc;
    weir_connection_t                    *c;
    weir_http_upstream_keepalive_item_t  *item;
    weir_http_upstream_keepalive_peer_t  *peer;

    pc->cached = 0;
    pc->connection = NULL;

    rc = kp->original_get_peer(pc, kp->data);

    if (rc != WEIR_OK || kp->fresh) {
        return rc;
    }

    peer = weir_http_upstream_keepalive_find(kp->cache, pc,
               weir_http_upstream_keepalive_hash(pc->sockaddr, &pc->key));
    if (peer == NULL) {
        return WEIR_OK;
    }

    /* the most recently cached connection to this peer first: it is the
     * least likely to have been closed by the origin */

    item = weir_queue_data(weir_queue_head(&peer->idle),
                           weir_http_upstream_keepalive_item_t, peer_queue);

    c = item->connection;

    weir_http_upstream_keepalive_unlink(item);

    weir_reusable_connection(c, 0);
    c->idle = 0;
    c->data = NULL;

    if (c->read->timer_set) {
        weir_event_del_timer(c->read);
    }

    c->read->cancelable = 0;

    weir_log_debug(pc->log, 0,
                   "upstream keepalive: reusing connection *%lu "
                   "fd:%d to %.*s", (unsigned long) c->number, c->fd,
                   pc->name ? (int) pc->name->len : 0,
                   pc->name ? (char *) pc->name->data : "");

    pc->connection = c;
    pc->cached = 1;

    return WEIR_DONE;
}


static void
weir_http_upstream_free_keepalive_peer(weir_peer_connection_t *pc,
    void *data, weir_uint_t state)
{
    weir_http_upstream_keepalive_peer_data_t  *kp = data;

    weir_uint_t                            hash;
    weir_queue_t                          *q;
    weir_connection_t                     *c;
    weir_http_upstream_keepalive_item_t   *item;
    weir_http_upstream_keepalive_peer_t   *peer;
    weir_http_upstream_keepalive_cache_t  *cache;

    cache = kp->cache;
    c = pc->connection;

    if (c != NULL) {
        /* one more request was carried by this connection */
        c->requests++;
    }

    if (pc->cached && (state & (WEIR_PEER_NEXT|WEIR_PEER_FAILED))) {
        kp->fresh = 1;
    }

    if (!weir_http_upstream_keepalive_reusable(cache, pc, state)) {
        goto done;
    }

    if (weir_handle_read_event(c->read, 0) != WEIR_OK) {
        goto done;
    }

    if (weir_queue_empty(&cache->free)) {

        /* full: the least recently cached connection makes room (and
         * with it, maybe, a peer entry) */

        q = weir_queue_last(&cache->cache);
        item = weir_queue_data(q, weir_http_upstream_keepalive_item_t, queue);

        weir_log_debug(cache->log, 0,
                       "upstream keepalive: pool full, closing *%lu",
                       (unsigned long) item->connection->number);

        weir_http_upstream_keepalive_close(item->connection);
        weir_http_upstream_keepalive_unlink(item);
    }

    hash = weir_http_upstream_keepalive_hash(pc->sockaddr, &pc->key);

    peer = weir_http_upstream_keepalive_find(cache, pc, hash);

    if (peer == NULL) {
        /* never empty here: there are as many entries as items, and
         * every entry in use holds an item */
        q = weir_queue_head(&cache->free_peers);
        weir_queue_remove(q);

        peer = weir_queue_data(q, weir_http_upstream_keepalive_peer_t,
                               queue);
        peer->hash = hash;
        peer->socklen = pc->socklen;
        weir_memcpy(&peer->sockaddr, pc->sockaddr, pc->socklen);
        peer->key_len = pc->key.len;

        if (pc->key.len) {
            weir_memcpy(peer->key, pc->key.data, pc->key.len);
        }

        weir_queue_insert_head(&cache->buckets[hash & cache->mask],
                               &peer->queue);
    }

    q = weir_queue_head(&cache->free);
    item = weir_queue_data(q, weir_http_upstream_keepalive_item_t, queue);

    weir_queue_remove(q);
    weir_queue_insert_head(&cache->cache, q);
    weir_queue_insert_head(&peer->idle, &item->peer_queue);

    item->peer = peer;
    item->connection = c;

    pc->connection = NULL;

    c->read->delayed = 0;

    /* a read timer still set is re-armed below as the idle timer: with
     * equal timeouts it keeps its node (weir_event_add_timer is lazy) */

    if (c->write->timer_set) {
        weir_event_del_timer(c->write);
    }

    c->write->handler = weir_http_upstream_keepalive_dummy_handler;
    c->read->handler = weir_http_upstream_keepalive_close_handler;

    c->data = item;
    c->idle = 1;
    c->log = cache->log;
    c->read->log = cache->log;
    c->write->log = cache->log;

    if (c->pool) {
        c->pool->log = cache->log;
    }

    weir_reusable_connection(c, 1);

    /* an idle connection must not hold off a graceful shutdown */
    c->read->cancelable = 1;
    weir_event_add_timer(c->read, cache->conf.timeout);

    weir_log_debug(cache->log, 0,
                   "upstream keepalive: caching connection *%lu fd:%d, "
                   "%lu requests", (unsigned long) c->number, c->fd,
                   (unsigned long) c->requests);

    if (c->read->ready) {
        /* the origin sent something or closed while we were busy */
        weir_http_upstream_keepalive_close_handler(c->read);
    }

done:

    kp->original_free_peer(pc, kp->data, state);
}


/* may the connection of this attempt go back to the pool? */

static weir_uint_t
weir_http_upstream_keepalive_reusable(
    weir_http_upstream_keepalive_cache_t *cache, weir_peer_connection_t *pc,
    weir_uint_t state)
{
    weir_connection_t  *c;

    c = pc->connection;

    if (c == NULL || !pc->keepalive || (state & WEIR_PEER_FAILED)) {
        return 0;
    }

    if (c->error || c->close || c->destroyed
        || c->read->eof || c->read->error || c->read->timedout
        || c->write->error || c->write->timedout)
    {
        return 0;
    }

    if (weir_terminate || weir_exiting || weir_quit) {
        return 0;
    }

    if (pc->socklen == 0 || pc->socklen > sizeof(weir_sockaddr_t)
        || pc->key.len > WEIR_PEER_KEY_MAX)
    {
        return 0;
    }

    if (c->requests >= (weir_uint_t) cache->conf.requests) {
        weir_log_debug(pc->log, 0,
                       "upstream keepalive: *%lu reached "
                       "keepalive_requests", (unsigned long) c->number);
        return 0;
    }

    if (c->start_time != 0
        && weir_current_msec - c->start_time >= cache->conf.time)
    {
        weir_log_debug(pc->log, 0,
                       "upstream keepalive: *%lu reached keepalive_time",
                       (unsigned long) c->number);
        return 0;
    }

    return 1;
}


static void
weir_http_upstream_keepalive_dummy_handler(weir_event_t *ev)
{
    (void) ev;
}


/*
 * Anything on an idle connection ends it: the origin closed it or sent
 * bytes no request asked for (both make it unusable), the idle timer
 * expired, or the worker wants the connection back (c->close).
 */

static void
weir_http_upstream_keepalive_close_handler(weir_event_t *ev)
{
    ssize_t                               n;
    char                                  buf[1];
    weir_connection_t                    *c;
    weir_http_upstream_keepalive_item_t  *item;

    c = ev->data;
    n = -1;

    if (c->close || ev->timedout) {
        goto close;
    }

    n = recv(c->fd, buf, 1, MSG_PEEK);

    if (n == -1 && weir_socket_errno == WEIR_EAGAIN) {
        ev->ready = 0;

        if (weir_handle_read_event(ev, 0) != WEIR_OK) {
            goto close;
        }

        return;
    }

close:

    item = c->data;

    weir_log_debug(c->log, 0,
                   "upstream keepalive: closing idle connection *%lu "
                   "(%s)", (unsigned long) c->number,
                   c->close ? "reclaimed"
                   : ev->timedout ? "keepalive_timeout"
                   : n == 0 ? "closed by upstream" : "unexpected data");

    weir_http_upstream_keepalive_close(c);

    if (item != NULL) {
        weir_http_upstream_keepalive_unlink(item);
    }
}


/* the rule: whoever closes an origin connection destroys its pool */

static void
weir_http_upstream_keepalive_close(weir_connection_t *c)
{
    weir_pool_t  *pool;

    pool = c->pool;

    c->idle = 0;

    weir_close_connection(c);

    if (pool) {
        weir_destroy_pool(pool);
    }
}


void
weir_http_upstream_keepalive_close_all(weir_cycle_t *cycle)
{
    weir_uint_t                            i;
    weir_http_upstream_srv_conf_t        **usp;
    weir_http_upstream_main_conf_t        *umcf;

    if (cycle == NULL || cycle->conf_ctx == NULL) {
        return;
    }

    umcf = weir_http_cycle_get_module_main_conf(cycle,
                                                weir_http_upstream_module);

    if (umcf == NULL || umcf->upstreams.elts == NULL) {
        return;
    }

    usp = umcf->upstreams.elts;

    for (i = 0; i < umcf->upstreams.nelts; i++) {

        if (usp[i] == NULL || usp[i]->keepalive == NULL) {
            continue;
        }

        weir_http_upstream_keepalive_empty(usp[i]->keepalive);
    }
}


/* closes every idle connection of one group's pool */

static void
weir_http_upstream_keepalive_empty(void *data)
{
    weir_http_upstream_keepalive_cache_t  *cache = data;

    weir_queue_t                         *q;
    weir_http_upstream_keepalive_item_t  *item;

    while (!weir_queue_empty(&cache->cache)) {
        q = weir_queue_head(&cache->cache);
        item = weir_queue_data(q, weir_http_upstream_keepalive_item_t,
                               queue);

        if (item->connection) {
            weir_http_upstream_keepalive_close(item->connection);
        }

        weir_http_upstream_keepalive_unlink(item);
    }
}


/*
 * The peer of a connection: its address as weir_cmp_sockaddr compares it
 * (family, address, port) and its key.
 */

static weir_uint_t
weir_http_upstream_keepalive_hash(struct sockaddr *sa, weir_str_t *key)
{
    size_t               i, len;
    weir_uint_t          hash;
    unsigned char       *p;
    struct sockaddr_in  *sin;
    struct sockaddr_in6 *sin6;

    switch (sa->sa_family) {

    case AF_INET:
        sin = (struct sockaddr_in *) sa;
        hash = sin->sin_port;
        p = (unsigned char *) &sin->sin_addr;
        len = sizeof(struct in_addr);
        break;

    case AF_INET6:
        sin6 = (struct sockaddr_in6 *) sa;
        hash = sin6->sin6_port;
        p = (unsigned char *) &sin6->sin6_addr;
        len = sizeof(struct in6_addr);
        break;

    default:
        /* weir_cmp_sockaddr tells them apart */
        hash = sa->sa_family;
        p = NULL;
        len = 0;
        break;
    }

    for (i = 0; i < len; i++) {
        hash = weir_hash(hash, p[i]);
    }

    for (i = 0; i < key->len; i++) {
        hash = weir_hash(hash, key->data[i]);
    }

    return hash;
}


/* the entry of pc's (address, key), or NULL when none is cached */

static weir_http_upstream_keepalive_peer_t *
weir_http_upstream_keepalive_find(weir_http_upstream_keepalive_cache_t *cache,
    weir_peer_connection_t *pc, weir_uint_t hash)
{
    weir_queue_t                         *q, *bucket;
    weir_http_upstream_keepalive_peer_t  *peer;

    bucket = &cache->buckets[hash & cache->mask];

    for (q = weir_queue_head(bucket);
         q != weir_queue_sentinel(bucket);
         q = weir_queue_next(q))
    {
        peer = weir_queue_data(q, weir_http_upstream_keepalive_peer_t, queue);

        if (peer->hash == hash
            && peer->key_len == pc->key.len
            && (pc->key.len == 0
                || weir_memcmp(peer->key, pc->key.data, pc->key.len) == 0)
            && weir_cmp_sockaddr(&peer->sockaddr.sockaddr, peer->socklen,
                                 pc->sockaddr, pc->socklen, 1)
               == WEIR_OK)
        {
            return peer;
        }
    }

    return NULL;
}


/* takes an item out of the pool (its connection is the caller's): the
 * item is free again, and so is its peer entry when it was the last */

static void
weir_http_upstream_keepalive_unlink(weir_http_upstream_keepalive_item_t *item)
{
    weir_http_upstream_keepalive_peer_t   *peer;
    weir_http_upstream_keepalive_cache_t  *cache;

    cache = item->cache;
    peer = item->peer;

    weir_queue_remove(&item->queue);
    weir_queue_insert_head(&cache->free, &item->queue);
    weir_queue_remove(&item->peer_queue);

    item->connection = NULL;
    item->peer = NULL;

    if (weir_queue_empty(&peer->idle)) {
        weir_queue_remove(&peer->queue);
        weir_queue_insert_head(&cache->free_peers, &peer->queue);
    }
}


static void
weir_http_upstream_keepalive_exit_process(weir_cycle_t *cycle)
{
    weir_http_upstream_keepalive_close_all(cycle);
    weir_http_upstream_session_close_all(cycle);
}


static void *
weir_http_upstream_keepalive_create_conf(weir_conf_t *cf)
{
    weir_http_upstream_keepalive_srv_conf_t  *conf;

    conf = weir_palloc(cf->pool,
                       sizeof(weir_http_upstream_keepalive_srv_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    conf->max_cached = WEIR_CONF_UNSET;
    conf->requests = WEIR_CONF_UNSET;
    conf->timeout = WEIR_CONF_UNSET_MSEC;
    conf->time = WEIR_CONF_UNSET_MSEC;

    return conf;
}
