#include "weir_http_mitm.h"

#include <arpa/inet.h>

/*
 * The certificate cache (per worker and configuration: a hash of
 * entries keyed by name, port and CA, with a LRU list bounded at
 * WEIR_HTTP_MITM_CACHE_SIZE) and the look at an origin that fills it.
 *
 * A name not in the cache: an entry is made, pending, and the client
 * connection that asked waits in it, as does every other one that asks
 * for the same name meanwhile (one look, one mint, whoever waits). The
 * look is a TLS handshake on the CONNECT's own origin connection, with
 * the client's SNI and its ALPN offer (h2 and http/1.1 only), verified
 * with the forward proxy's context (proxy_ssl_trusted_certificate, the
 * system store otherwise). The origin's certificate gives the names of
 * the leaf and its ALPN choice the client's; then the connection is
 * closed (the requests make their own, pooled). An origin that does not
 * verify still gets a leaf, so that its clients read a 502 page naming
 * the failure rather than a bare handshake error; that verdict is kept
 * WEIR_HTTP_MITM_FAIL_TTL seconds. A look that could not complete the
 * handshake is not kept at all.
 *
 * With mitm_certificate_store, a name that neither this worker's cache
 * nor the shared zone has is read from the store before the look, by
 * whoever would look (so once for all the workers, with a zone), and
 * the leaf of a successful look is written there.
 */


typedef struct {
    weir_http_mitm_cert_t       *entry;
    weir_http_mitm_main_conf_t  *mmcf;
    weir_connection_t           *c;
    weir_str_t                   name;      /* checked, and SNI */
    weir_uint_t                  verify;
    weir_log_t                   log;
    weir_event_t                 start;     /* posted: the look begins
                                               from the event loop */
    weir_str_t                   alpn;      /* offered, wire form */
    EVP_PKEY                    *key;       /* the leaves' */
} weir_http_mitm_look_t;


static weir_http_mitm_cert_t *weir_http_mitm_lookup(
    weir_http_mitm_main_conf_t *mmcf, weir_http_mitm_conn_t *mc,
    uint32_t hash);
static weir_http_mitm_cert_t *weir_http_mitm_insert(
    weir_http_mitm_main_conf_t *mmcf, weir_http_mitm_conn_t *mc,
    uint32_t hash);
static void weir_http_mitm_remove(weir_http_mitm_main_conf_t *mmcf,
    weir_http_mitm_cert_t *e);
static void weir_http_mitm_use(weir_http_mitm_conn_t *mc,
    weir_http_mitm_cert_t *e);
static weir_int_t weir_http_mitm_look(weir_http_mitm_conn_t *mc,
    weir_http_mitm_cert_t *e);
static void weir_http_mitm_look_start(weir_event_t *ev);
static void weir_http_mitm_look_done(weir_connection_t *c);
static void weir_http_mitm_look_end(weir_http_mitm_look_t *lk, X509 *origin,
    const char *error, weir_uint_t alpn, weir_uint_t keep);
static void weir_http_mitm_close_origin(weir_connection_t *c);
static void weir_http_mitm_held_handler(weir_event_t *ev);
static void weir_http_mitm_poll(weir_event_t *ev);
static void weir_http_mitm_give_error(weir_http_mitm_conn_t *mc,
    const char *error);
static void weir_http_mitm_fill(weir_http_mitm_cert_t *e, X509 *leaf,
    weir_uint_t alpn, const char *error);
static void weir_http_mitm_finish(weir_http_mitm_cert_t *e, X509 *leaf,
    weir_uint_t alpn, const char *error, weir_uint_t keep);
static void weir_http_mitm_free_entry(weir_http_mitm_cert_t *e);
static weir_uint_t weir_http_mitm_offers_h2(weir_str_t *offer);
static void weir_http_mitm_look_info(char *buf, size_t size,
    const char *error, X509 *origin, SSL *ssl);
static X509 *weir_http_mitm_load(weir_http_mitm_conn_t *mc,
    weir_http_mitm_cert_t *e, weir_uint_t *alpn, char *info);
static void weir_http_mitm_log_counts(weir_http_mitm_cert_t *e,
    const char *what, weir_uint_t counts[WEIR_HTTP_MITM_COUNTS],
    weir_log_t *log);


weir_int_t
weir_http_mitm_find(weir_http_mitm_conn_t *mc)
{
    X509                        *leaf;
    uint32_t                     hash;
    weir_int_t                   rc;
    weir_uint_t                  alpn;
    const char                  *error;
    weir_http_mitm_cert_t       *e;
    weir_http_mitm_zone_t       *zone;
    weir_http_mitm_main_conf_t  *mmcf;
    char                         info[WEIR_HTTP_MITM_INFO];

    mmcf = mc->mmcf;
    zone = mc->mscf->zone;

    if (mc->leaf) {
        /* the wait is over: what the look left for this client */
        return WEIR_OK;
    }

    if (mc->waiting) {
        return WEIR_AGAIN;
    }

    if (mc->looked) {
        /* waited, and the look gave no certificate (logged) */
        return WEIR_ERROR;
    }

    hash = weir_http_mitm_hash(&mc->name, mc->port,
                               mc->mscf->ca->fingerprint);
    e = weir_http_mitm_lookup(mmcf, mc, hash);

    if (e && !e->pending && e->expires <= weir_time()) {
        weir_http_mitm_remove(mmcf, e);
        e = NULL;
    }

    if (e && !e->pending && e->leaf) {
        weir_http_mitm_use(mc, e);
        return WEIR_OK;
    }

    if (e == NULL && zone) {
        /* not in this worker: maybe minted by another, or before a
         * reload */
        rc = weir_http_mitm_shared_get(zone, mc, &leaf, &error);

        if (rc == WEIR_ERROR) {
            return WEIR_ERROR;
        }

        if (rc == WEIR_OK) {
            e = weir_http_mitm_insert(mmcf, mc, hash);
            if (e == NULL) {
                X509_free(leaf);
                return WEIR_ERROR;
            }

            e->zone = zone;
            weir_http_mitm_fill(e, leaf, mc->alpn, error);
            weir_http_mitm_use(mc, e);
            return WEIR_OK;
        }

        if (rc == WEIR_BUSY) {
            /* another worker looks: wait for its result, keeping this
             * client's origin connection in case it fails */
            e = weir_http_mitm_insert(mmcf, mc, hash);
            if (e == NULL) {
                return WEIR_ERROR;
            }

            e->zone = zone;
            e->spare = mc->origin;
            mc->origin = NULL;
            weir_http_mitm_hold_origin(e->spare, &e->spare);

            e->poll.handler = weir_http_mitm_poll;
            e->poll.data = e;
            e->poll.log = weir_cycle->log;
            weir_event_add_timer(&e->poll, WEIR_HTTP_MITM_POLL);

            goto wait;
        }

        /* WEIR_DECLINED: this worker looks */
    }

    if (e == NULL) {
        e = weir_http_mitm_insert(mmcf, mc, hash);
        if (e == NULL) {
            return WEIR_ERROR;
        }

        e->zone = zone;

        /* this worker is the one to look (the zone's pending node is
         * its): the store first */
        leaf = mmcf->store ? weir_http_mitm_load(mc, e, &alpn, info) : NULL;

        if (leaf) {
            weir_http_mitm_fill(e, leaf, alpn, info);
            weir_http_mitm_use(mc, e);
            return WEIR_OK;
        }

        if (mc->origin == NULL) {
            /* cannot happen: a CONNECT comes with its connection */
            weir_log_error(WEIR_LOG_ERR, mc->c->log, 0,
                           "no origin connection to look at \"%.*s\"",
                           WEIR_STR_ARG(mc->name));
            weir_http_mitm_remove(mmcf, e);
            return WEIR_ERROR;
        }

        if (weir_http_mitm_look(mc, e) != WEIR_OK) {
            weir_http_mitm_remove(mmcf, e);
            return WEIR_ERROR;
        }

    } else if (mc->origin) {
        /* another client's look is under way: wait for it */
        if (e->spare == NULL && e->poll.timer_set) {
            e->spare = mc->origin;
            weir_http_mitm_hold_origin(e->spare, &e->spare);

        } else {
            weir_http_mitm_close_origin(mc->origin);
        }

        mc->origin = NULL;
    }

wait:

    weir_queue_insert_tail(&e->waiters, &mc->queue);
    mc->waiting = e;

    return WEIR_AGAIN;
}


/*
 * Another worker's look: its result, once the shared zone has it; the
 * look itself when that worker gave up (the node went, or stayed
 * pending too long).
 */

static void
weir_http_mitm_poll(weir_event_t *ev)
{
    X509                   *leaf;
    weir_int_t              rc;
    const char             *error;
    weir_queue_t           *q;
    weir_connection_t      *spare;
    weir_http_mitm_cert_t  *e;
    weir_http_mitm_conn_t  *mc;

    e = ev->data;

    if (weir_queue_empty(&e->waiters)) {
        /* no one waits any more: nothing to keep */
        weir_http_mitm_remove(e->mmcf, e);
        return;
    }

    q = weir_queue_head(&e->waiters);
    mc = weir_queue_data(q, weir_http_mitm_conn_t, queue);

    rc = weir_http_mitm_shared_get(e->zone, mc, &leaf, &error);

    switch (rc) {

    case WEIR_BUSY:
        weir_event_add_timer(&e->poll, WEIR_HTTP_MITM_POLL);
        return;

    case WEIR_OK:
        weir_http_mitm_finish(e, leaf, mc->alpn, error, 1);
        return;

    case WEIR_DECLINED:
        spare = e->spare;
        e->spare = NULL;

        if (spare) {
            mc->origin = spare;
            weir_http_mitm_hold_origin(spare, &mc->origin);

            if (weir_http_mitm_look(mc, e) == WEIR_OK) {
                return;
            }

            if (mc->origin) {
                weir_http_mitm_close_origin(mc->origin);
                mc->origin = NULL;
            }
        }

        weir_log_error(WEIR_LOG_ERR, mc->c->log, 0,
                       "the look at the origin of \"%.*s\" was lost",
                       WEIR_STR_ARG(e->name));
        /* fall through */

    default:
        weir_http_mitm_finish(e, NULL, 0, NULL, 0);
        return;
    }
}


void
weir_http_mitm_forget(weir_http_mitm_conn_t *mc)
{
    if (mc->waiting) {
        weir_queue_remove(&mc->queue);
        mc->waiting = NULL;
    }

    if (mc->origin) {
        weir_http_mitm_close_origin(mc->origin);
        mc->origin = NULL;
    }

    if (mc->leaf) {
        X509_free(mc->leaf);
        mc->leaf = NULL;
    }
}


/* an entry's leaf and verdict, copied into mc (the entry may go) */

static void
weir_http_mitm_use(weir_http_mitm_conn_t *mc, weir_http_mitm_cert_t *e)
{
    weir_queue_remove(&e->lru);
    weir_queue_insert_head(&mc->mmcf->lru, &e->lru);

    X509_up_ref(e->leaf);
    mc->leaf = e->leaf;
    mc->alpn = e->alpn;
    weir_http_mitm_give_error(mc, e->error);

    /* the origin connection was for a look: not needed */
    if (mc->origin) {
        weir_http_mitm_close_origin(mc->origin);
        mc->origin = NULL;
    }
}


/* the verdict, in mc's pool: it outlives the entry */

static void
weir_http_mitm_give_error(weir_http_mitm_conn_t *mc, const char *info)
{
    weir_str_t      s, *field[4];
    weir_uint_t     i;
    unsigned char  *p, *last, *nl;

    mc->target.error = NULL;
    mc->origin_subject.len = 0;
    mc->origin_protocol.len = 0;
    mc->origin_cipher.len = 0;

    if (info == NULL
        || weir_pstrfmt(mc->c->pool, &s, "%s", info) != WEIR_OK)
    {
        return;
    }

    /* "reason\nsubject\nprotocol\ncipher" (weir_http_mitm_look_info),
     * or a reason alone */
    field[0] = NULL;
    field[1] = &mc->origin_subject;
    field[2] = &mc->origin_protocol;
    field[3] = &mc->origin_cipher;

    p = s.data;
    last = s.data + s.len;

    for (i = 0; i < 4 && p <= last; i++) {
        nl = weir_strlchr(p, last, '\n');

        if (nl == NULL) {
            nl = last;
        }

        *nl = '\0';

        if (i == 0) {
            mc->target.error = (nl > p) ? (const char *) p : NULL;

        } else {
            field[i]->data = p;
            field[i]->len = (size_t) (nl - p);
        }

        p = nl + 1;
    }
}


/* a complete entry: the leaf (its reference is the entry's now) */

static void
weir_http_mitm_fill(weir_http_mitm_cert_t *e, X509 *leaf, weir_uint_t alpn,
    const char *error)
{
    e->pending = 0;
    e->leaf = leaf;
    e->alpn = alpn;
    e->error = NULL;

    if (error) {
        (void) weir_cpystrn((unsigned char *) e->errbuf,
                            (unsigned char *) error, sizeof(e->errbuf));
        e->error = e->errbuf;
    }

    e->expires = weir_http_mitm_failed(error)
                 ? weir_time() + WEIR_HTTP_MITM_FAIL_TTL
                 : leaf ? weir_http_mitm_leaf_expires(leaf)
                 : (time_t) WEIR_MAX_TIME_T_VALUE;
}


/*
 * The leaf of e (pending, this worker's to fill) from the store, with
 * the origin's ALPN choice and what the look learnt (info); the shared
 * zone's node is complete then. NULL: the store has none that fits.
 */

static X509 *
weir_http_mitm_load(weir_http_mitm_conn_t *mc, weir_http_mitm_cert_t *e,
    weir_uint_t *alpn, char *info)
{
    X509                        *leaf;
    weir_uint_t                  counts[WEIR_HTTP_MITM_COUNTS];
    weir_http_mitm_main_conf_t  *mmcf;

    mmcf = e->mmcf;

    leaf = weir_http_mitm_store_get(mmcf->store, e, mc->leaf_key, mc->verify,
                                    alpn, info, mc->c->log);
    if (leaf == NULL) {
        return NULL;
    }

    mmcf->loaded++;

    weir_http_mitm_get_counts(counts, mmcf);

    if (e->zone) {
        e->alpn = *alpn;
        e->error = info;
        e->expires = weir_http_mitm_leaf_expires(leaf);
        weir_http_mitm_shared_put(e->zone, e, leaf, 1, counts);
    }

    weir_http_mitm_log_counts(e, "loaded from the store the certificate "
                              "for", counts, mc->c->log);

    return leaf;
}


/* "mitm minted a certificate for NAME", and the counters */

static void
weir_http_mitm_log_counts(weir_http_mitm_cert_t *e, const char *what,
    weir_uint_t counts[WEIR_HTTP_MITM_COUNTS], weir_log_t *log)
{
    unsigned char   *p, buf[64];

    p = buf;

    if (e->mmcf->store) {
        p = weir_slprintf(buf, buf + sizeof(buf), ", stored %lu, loaded %lu",
                          (unsigned long) counts[WEIR_HTTP_MITM_STORED],
                          (unsigned long) counts[WEIR_HTTP_MITM_LOADED]);
    }

    weir_log_error(WEIR_LOG_INFO, log, 0,
                   "mitm %s \"%.*s\" (minted %lu, from cache %lu, "
                   "evicted %lu%.*s%s)", what, WEIR_STR_ARG(e->name),
                   (unsigned long) counts[WEIR_HTTP_MITM_MINTED],
                   (unsigned long) weir_http_mitm_from_cache(counts),
                   (unsigned long) counts[WEIR_HTTP_MITM_EVICTED],
                   (int) (p - buf), buf,
                   e->zone ? ", all workers" : ", this worker");
}


/* ---- the cache -------------------------------------------------------- */

/* FNV-1a over the name, the port and the CA's fingerprint: the key of
 * both caches (the worker's also compares the CA itself) */

uint32_t
weir_http_mitm_hash(weir_str_t *name, in_port_t port,
    const unsigned char *ca)
{
    size_t    i;
    uint32_t  h;

    h = 2166136261u;

    for (i = 0; i < name->len; i++) {
        h = (h ^ name->data[i]) * 16777619u;
    }

    h = (h ^ (port & 0xff)) * 16777619u;
    h = (h ^ (port >> 8)) * 16777619u;

    for (i = 0; i < 32; i++) {
        h = (h ^ ca[i]) * 16777619u;
    }

    return h;
}


static weir_http_mitm_cert_t *
weir_http_mitm_lookup(weir_http_mitm_main_conf_t *mmcf,
    weir_http_mitm_conn_t *mc, uint32_t hash)
{
    weir_http_mitm_cert_t  *e;

    if (mmcf->buckets == NULL) {
        return NULL;
    }

    for (e = mmcf->buckets[hash % WEIR_HTTP_MITM_BUCKETS]; e; e = e->next) {
        if (e->hash == hash && e->port == mc->port && e->ca == mc->mscf->ca
            && weir_str_eq(&e->name, &mc->name))
        {
            return e;
        }
    }

    return NULL;
}


static weir_http_mitm_cert_t *
weir_http_mitm_insert(weir_http_mitm_main_conf_t *mmcf,
    weir_http_mitm_conn_t *mc, uint32_t hash)
{
    weir_queue_t           *q;
    weir_http_mitm_cert_t  *e, *old;

    if (mmcf->buckets == NULL) {
        mmcf->buckets = weir_alloc(WEIR_HTTP_MITM_BUCKETS
                                   * sizeof(weir_http_mitm_cert_t *),
                                   mc->c->log);
        if (mmcf->buckets == NULL) {
            return NULL;
        }

        weir_memzero(mmcf->buckets,
                     WEIR_HTTP_MITM_BUCKETS * sizeof(weir_http_mitm_cert_t *));
        weir_queue_init(&mmcf->lru);
    }

    /* full: the least recently used entry that no one waits for goes */
    if (mmcf->count >= WEIR_HTTP_MITM_CACHE_SIZE) {
        for (q = weir_queue_last(&mmcf->lru);
             q != weir_queue_sentinel(&mmcf->lru);
             q = weir_queue_prev(q))
        {
            old = weir_queue_data(q, weir_http_mitm_cert_t, lru);

            if (!old->pending) {
                weir_http_mitm_remove(mmcf, old);
                mmcf->evicted++;
                break;
            }
        }
    }

    e = weir_alloc(sizeof(weir_http_mitm_cert_t) + mc->name.len, mc->c->log);
    if (e == NULL) {
        return NULL;
    }

    weir_memzero(e, sizeof(weir_http_mitm_cert_t));

    e->hash = hash;
    e->port = mc->port;
    e->ca = mc->mscf->ca;
    e->mmcf = mmcf;
    e->name.data = (unsigned char *) (e + 1);
    e->name.len = mc->name.len;
    weir_memcpy(e->name.data, mc->name.data, mc->name.len);
    e->pending = 1;
    weir_queue_init(&e->waiters);

    e->next = mmcf->buckets[hash % WEIR_HTTP_MITM_BUCKETS];
    mmcf->buckets[hash % WEIR_HTTP_MITM_BUCKETS] = e;
    weir_queue_insert_head(&mmcf->lru, &e->lru);
    mmcf->count++;

    return e;
}


static void
weir_http_mitm_remove(weir_http_mitm_main_conf_t *mmcf,
    weir_http_mitm_cert_t *e)
{
    weir_http_mitm_cert_t  **pe;

    for (pe = &mmcf->buckets[e->hash % WEIR_HTTP_MITM_BUCKETS];
         *pe;
         pe = &(*pe)->next)
    {
        if (*pe == e) {
            *pe = e->next;
            break;
        }
    }

    weir_queue_remove(&e->lru);
    mmcf->count--;

    weir_http_mitm_free_entry(e);
}


static void
weir_http_mitm_free_entry(weir_http_mitm_cert_t *e)
{
    if (e->poll.timer_set) {
        weir_event_del_timer(&e->poll);
    }

    if (e->spare) {
        weir_http_mitm_close_origin(e->spare);
        e->spare = NULL;
    }

    if (e->leaf) {
        X509_free(e->leaf);
    }

    weir_free(e);
}


void
weir_http_mitm_cache_free(weir_http_mitm_main_conf_t *mmcf)
{
    weir_uint_t             i;
    weir_http_mitm_cert_t  *e, *next;

    if (mmcf->buckets == NULL) {
        return;
    }

    for (i = 0; i < WEIR_HTTP_MITM_BUCKETS; i++) {
        for (e = mmcf->buckets[i]; e; e = next) {
            next = e->next;
            weir_http_mitm_free_entry(e);
        }
    }

    weir_free(mmcf->buckets);
    mmcf->buckets = NULL;
    mmcf->count = 0;
}


/* ---- the look at the origin ------------------------------------------ */

/* does an offer in wire form (weir_http_mitm_alpn_offer's) name h2? */

static weir_uint_t
weir_http_mitm_offers_h2(weir_str_t *offer)
{
    size_t          n;
    unsigned char  *p, *last;

    p = offer->data;
    last = p + offer->len;

    while (p < last) {
        n = *p++;

        if (n > (size_t) (last - p)) {
            break;
        }

        if (n == 2 && p[0] == 'h' && p[1] == '2') {
            return 1;
        }

        p += n;
    }

    return 0;
}


/* the client's ALPN offer, h2 and http/1.1 only, in its order */

static weir_int_t
weir_http_mitm_alpn_offer(weir_http_mitm_conn_t *mc, weir_pool_t *pool,
    weir_str_t *out)
{
    size_t          n;
    weir_uint_t     h2, h11;
    unsigned char  *p, *last, *o;

    h2 = 0;
    h11 = 0;
    out->len = 0;
    out->data = weir_pnalloc(pool, 12);

    if (out->data == NULL) {
        return WEIR_ERROR;
    }

    o = out->data;
    p = mc->alpn_offer.data;
    last = p + mc->alpn_offer.len;

    while (p < last) {
        n = *p++;

        if (n > (size_t) (last - p)) {
            break;
        }

        /* each once: 3 + 9 bytes at most */
        if ((n == 2 && !h2 && weir_strncmp(p, "h2", 2) == 0)
            || (n == 8 && !h11 && weir_strncmp(p, "http/1.1", 8) == 0))
        {
            h2 |= (n == 2);
            h11 |= (n == 8);
            *o++ = (unsigned char) n;
            o = weir_cpymem(o, p, n);
        }

        p += n;
    }

    out->len = (size_t) (o - out->data);

    return WEIR_OK;
}


static weir_int_t
weir_http_mitm_look(weir_http_mitm_conn_t *mc, weir_http_mitm_cert_t *e)
{
    weir_connection_t      *c;
    weir_http_mitm_look_t  *lk;

    c = mc->origin;

    lk = weir_pcalloc(c->pool, sizeof(weir_http_mitm_look_t));
    if (lk == NULL) {
        return WEIR_ERROR;
    }

    lk->entry = e;
    lk->mmcf = mc->mmcf;
    lk->c = c;
    lk->verify = mc->verify;
    lk->key = mc->leaf_key;

    lk->name.data = weir_pnalloc(c->pool, mc->name.len + 1);
    if (lk->name.data == NULL) {
        return WEIR_ERROR;
    }

    lk->name.len = mc->name.len;
    weir_memcpy(lk->name.data, mc->name.data, mc->name.len);
    lk->name.data[lk->name.len] = '\0';

    if (weir_http_mitm_alpn_offer(mc, c->pool, &lk->alpn) != WEIR_OK) {
        return WEIR_ERROR;
    }

    /* the origin connection is the look's now: nothing of the CONNECT's
     * request (gone) or of the client may be reached from it */
    lk->log = *c->log;
    lk->log.handler = NULL;
    lk->log.data = NULL;
    lk->log.action = "looking at the origin";
    c->log = &lk->log;
    c->read->log = &lk->log;
    c->write->log = &lk->log;
    c->data = lk;

    if (weir_ssl_create_connection(mc->origin_ssl, c, WEIR_SSL_CLIENT)
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    mc->origin = NULL;

    if (c->read->timer_set) {
        weir_event_del_timer(c->read);
    }

    /* the whole look: the CONNECT's proxy_connect_timeout */
    weir_event_add_timer(c->write, mc->origin_timeout);

    /* from the event loop: the caller is inside OpenSSL's callback */
    lk->start.handler = weir_http_mitm_look_start;
    lk->start.data = lk;
    lk->start.log = &lk->log;
    weir_post_event(&lk->start, &weir_posted_events);

    return WEIR_OK;
}


static void
weir_http_mitm_look_start(weir_event_t *ev)
{
    SSL                    *ssl;
    weir_int_t              rc;
    struct in6_addr         a6;
    weir_ssl_conn_t        *sc;
    weir_connection_t      *c;
    weir_http_mitm_look_t  *lk;

    lk = ev->data;
    c = lk->c;
    sc = weir_ssl_conn(c);
    ssl = sc->connection;

    if (lk->alpn.len
        && SSL_set_alpn_protos(ssl, lk->alpn.data, (unsigned) lk->alpn.len)
           != 0)
    {
        weir_http_mitm_look_end(lk, NULL, "SSL_set_alpn_protos() failed",
                                0, 0);
        return;
    }

    /* SNI is a host name, never an address (RFC 6066) */
    if (inet_pton(AF_INET, (char *) lk->name.data, &a6) != 1
        && inet_pton(AF_INET6, (char *) lk->name.data, &a6) != 1
        && SSL_set_tlsext_host_name(ssl, (char *) lk->name.data) != 1)
    {
        weir_http_mitm_look_end(lk, NULL, "SSL_set_tlsext_host_name() failed",
                                0, 0);
        return;
    }

    sc->handler = weir_http_mitm_look_done;
    sc->data = lk;

    rc = weir_ssl_handshake(c);

    if (rc == WEIR_AGAIN) {
        return;
    }

    weir_http_mitm_look_done(c);
}


static void
weir_http_mitm_look_done(weir_connection_t *c)
{
    X509                   *origin;
    long                    v;
    unsigned int            len;
    weir_uint_t             alpn;
    const char             *error;
    weir_ssl_conn_t        *sc;
    const unsigned char    *data;
    weir_http_mitm_look_t  *lk;
    char                    info[WEIR_HTTP_MITM_INFO];

    sc = weir_ssl_conn(c);
    lk = sc->data;

    if (c->write->timedout || c->read->timedout) {
        weir_log_error(WEIR_LOG_ERR, c->log, WEIR_ETIMEDOUT,
                       "the origin of \"%s\" timed out in its TLS handshake",
                       (char *) lk->name.data);
        weir_http_mitm_look_end(lk, NULL,
                                "the origin timed out in its TLS handshake",
                                0, 0);
        return;
    }

    if (!sc->handshaked) {
        /* the TLS layer logged the reason */
        weir_log_error(WEIR_LOG_ERR, c->log, 0,
                       "TLS handshake with the origin of \"%s\" failed",
                       (char *) lk->name.data);
        weir_http_mitm_look_end(lk, NULL,
                                "the TLS handshake with the origin failed",
                                0, 0);
        return;
    }

    SSL_get0_alpn_selected(sc->connection, &data, &len);

    alpn = WEIR_HTTP_MITM_ALPN_NONE;

    if (len == 2 && data[0] == 'h' && data[1] == '2') {
        alpn = WEIR_HTTP_MITM_ALPN_H2;

    } else if (len == 8) {
        alpn = WEIR_HTTP_MITM_ALPN_HTTP11;
    }

    if (alpn != WEIR_HTTP_MITM_ALPN_H2
        && !weir_http_mitm_offers_h2(&lk->alpn))
    {
        /* a client without h2 came first: a later one that offers it
         * is not told the origin refused it (it was not asked) */
        alpn |= WEIR_HTTP_MITM_ALPN_UNASKED;
    }

    origin = SSL_get1_peer_certificate(sc->connection);
    error = NULL;

    if (lk->verify) {
        v = weir_ssl_verify_result(c);

        if (origin == NULL) {
            error = "the origin sent no certificate";

        } else if (v != X509_V_OK) {
            error = X509_verify_cert_error_string(v);

        } else if (weir_ssl_check_host(c, &lk->name) != WEIR_OK) {
            error = "the origin's certificate does not match the name";
        }

        if (error) {
            weir_log_error(WEIR_LOG_ERR, c->log, 0,
                           "origin certificate of \"%s\" failed "
                           "verification: %s", (char *) lk->name.data,
                           error);
        }
    }

    weir_http_mitm_look_info(info, sizeof(info), error, origin,
                             sc->connection);

    weir_http_mitm_look_end(lk, origin, info, alpn, 1);

    X509_free(origin);
}


/*
 * What a look learnt besides the leaf, as one string that goes where a
 * reason alone would (the cache, the shared zone): the reason verification
 * failed (empty: it did not), the origin's subject (RFC 2253), its TLS
 * protocol and cipher, separated by newlines, which none of them holds.
 */

static void
weir_http_mitm_look_info(char *buf, size_t size, const char *error,
    X509 *origin, SSL *ssl)
{
    BIO    *bio;
    char   *subject;
    long    n;

    bio = NULL;
    subject = NULL;
    n = 0;

    if (origin) {
        bio = BIO_new(BIO_s_mem());

        if (bio
            && X509_NAME_print_ex(bio, X509_get_subject_name(origin), 0,
                                  XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB)
               >= 0)
        {
            n = BIO_get_mem_data(bio, &subject);
        }
    }

    (void) weir_slprintf((unsigned char *) buf,
                         (unsigned char *) buf + size - 1,
                         "%s\n%.*s\n%s\n%s", error ? error : "",
                         (int) weir_min(n, 256), subject ? subject : "",
                         SSL_get_version(ssl), SSL_get_cipher_name(ssl));
    buf[size - 1] = '\0';

    BIO_free(bio);
}


/*
 * The end of a look: a leaf for the name (with the origin's names when
 * its certificate came), given to every client that waits, and kept in
 * the cache when keep says so.
 */

static void
weir_http_mitm_look_end(weir_http_mitm_look_t *lk, X509 *origin,
    const char *error, weir_uint_t alpn, weir_uint_t keep)
{
    X509                        *leaf;
    weir_uint_t                  counts[WEIR_HTTP_MITM_COUNTS];
    weir_connection_t           *c;
    weir_http_mitm_cert_t       *e;
    weir_http_mitm_main_conf_t  *mmcf;

    e = lk->entry;
    mmcf = lk->mmcf;
    c = lk->c;

    leaf = weir_http_mitm_mint(e->ca, lk->key, &e->name, origin, c->log);

    if (leaf) {
        mmcf->minted++;
    }

    /* a verdict that is not a failure goes to disk, before the other
     * workers are told (they count it then) */
    if (leaf && keep && mmcf->store && !weir_http_mitm_failed(error)
        && weir_http_mitm_store_put(mmcf->store, e, leaf, lk->key,
                                    lk->verify, alpn, error, c->log)
           == WEIR_OK)
    {
        mmcf->stored++;

        if (e->zone) {
            weir_http_mitm_shared_stored(e->zone);
        }
    }

    weir_http_mitm_get_counts(counts, mmcf);

    if (e->zone) {
        /* the other workers see it now (or may look again without it) */
        e->alpn = alpn;
        e->error = error;
        e->expires = weir_http_mitm_failed(error)
                     ? weir_time() + WEIR_HTTP_MITM_FAIL_TTL
                     : leaf ? weir_http_mitm_leaf_expires(leaf)
                     : (time_t) WEIR_MAX_TIME_T_VALUE;
        weir_http_mitm_shared_put(e->zone, e, (leaf && keep) ? leaf : NULL,
                                  0, counts);
    }

    if (leaf) {
        weir_http_mitm_log_counts(e, "minted a certificate for", counts,
                                  c->log);
    }

    weir_http_mitm_close_origin(c);

    weir_http_mitm_finish(e, leaf, alpn, error, keep);
}


/*
 * A pending entry is done: every waiter gets its reference to the leaf
 * (none: the callback fails their handshakes) and is resumed; the entry
 * keeps the leaf when keep says so, else it goes.
 */

static void
weir_http_mitm_finish(weir_http_mitm_cert_t *e, X509 *leaf, weir_uint_t alpn,
    const char *error, weir_uint_t keep)
{
    weir_queue_t                *q, todo;
    weir_http_mitm_conn_t       *mc;
    weir_http_mitm_main_conf_t  *mmcf;

    mmcf = e->mmcf;

    if (e->poll.timer_set) {
        weir_event_del_timer(&e->poll);
    }

    if (e->spare) {
        /* kept for a look that is not needed any more */
        weir_http_mitm_close_origin(e->spare);
        e->spare = NULL;
    }

    weir_http_mitm_fill(e, leaf, alpn, error);

    /* the waiters move to a list of their own, the entry may go; each is
     * resumed once it is out of the list, as resuming may close it (or
     * another waiter: its cleanup takes it out of the list) */
    weir_queue_init(&todo);

    while (!weir_queue_empty(&e->waiters)) {
        q = weir_queue_head(&e->waiters);
        weir_queue_remove(q);
        weir_queue_insert_tail(&todo, q);
    }

    if (leaf) {
        /* each waiter's reference, taken before the entry may go */
        for (q = weir_queue_head(&todo); q != weir_queue_sentinel(&todo);
             q = weir_queue_next(q))
        {
            mc = weir_queue_data(q, weir_http_mitm_conn_t, queue);
            X509_up_ref(leaf);
            mc->leaf = leaf;
            mc->alpn = alpn;
            weir_http_mitm_give_error(mc, error);
        }
    }

    if (leaf == NULL || !keep) {
        weir_http_mitm_remove(mmcf, e);
    }

    while (!weir_queue_empty(&todo)) {
        q = weir_queue_head(&todo);
        mc = weir_queue_data(q, weir_http_mitm_conn_t, queue);

        weir_queue_remove(q);
        mc->waiting = NULL;
        mc->looked = 1;

        weir_ssl_handshake_resume(mc->c);
    }
}


/*
 * An origin connection kept for a look that may come (*slot points at
 * it): nothing is read from it; when the origin closes it or sends
 * anything, or the worker shuts down, it is closed and *slot cleared.
 */

void
weir_http_mitm_hold_origin(weir_connection_t *c, weir_connection_t **slot)
{
    c->data = slot;
    c->read->handler = weir_http_mitm_held_handler;
    c->write->handler = weir_http_mitm_held_handler;
}


static void
weir_http_mitm_held_handler(weir_event_t *ev)
{
    weir_connection_t   *c, **slot;

    c = ev->data;

    if (ev->write && !c->close) {
        return;
    }

    slot = c->data;
    *slot = NULL;

    weir_log_debug(c->log, 0, "a held origin connection closes");

    weir_http_mitm_close_origin(c);
}


static void
weir_http_mitm_close_origin(weir_connection_t *c)
{
    weir_pool_t  *pool;

    if (c->read->timer_set) {
        weir_event_del_timer(c->read);
    }

    if (c->write->timer_set) {
        weir_event_del_timer(c->write);
    }

    pool = c->pool;

    weir_close_connection(c);

    if (pool) {
        weir_destroy_pool(pool);
    }
}
