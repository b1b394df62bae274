#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"


/*
 * The default balancer: smooth weighted round robin (each pick adds
 * every usable peer's effective weight to its current weight, takes the
 * peer with the highest current weight and takes the total back from
 * it), backup peers used only when no primary one is usable, passive
 * health (max_fails within fail_timeout): per worker, or shared by the
 * workers through the group's zone ("zone"; the lock rules are in
 * weir_http_upstream.h).
 */

static weir_http_upstream_rr_peers_t *weir_http_upstream_rr_build(
    weir_conf_t *cf, weir_http_upstream_srv_conf_t *us, weir_uint_t backup);
static weir_http_upstream_rr_peer_t *weir_http_upstream_get_peer(
    weir_http_upstream_rr_peer_data_t *rrp, time_t now, weir_uint_t *index);
static weir_int_t weir_http_upstream_rr_tried_init(weir_http_request_t *r,
    weir_http_upstream_rr_peer_data_t *rrp);
static size_t weir_http_upstream_zone_group_size(
    weir_http_upstream_srv_conf_t *us);
static unsigned char *weir_http_upstream_zone_move(
    weir_http_upstream_rr_peers_t *peers, unsigned char *p);


weir_int_t
weir_http_upstream_init_round_robin(weir_conf_t *cf,
    weir_http_upstream_srv_conf_t *us)
{
    weir_http_upstream_rr_peers_t  *peers, *backup;

    us->peer.init = weir_http_upstream_init_round_robin_peer;

    if (us->servers == NULL || us->servers->nelts == 0) {
        weir_log_error(WEIR_LOG_EMERG, cf->log, 0,
                       "no servers in upstream \"%.*s\" in %s:%lu",
                       WEIR_STR_ARG(us->host),
                       us->file_name ? (char *) us->file_name : "-",
                       (unsigned long) us->line);
        return WEIR_ERROR;
    }

    peers = weir_http_upstream_rr_build(cf, us, 0);
    if (peers == NULL) {
        return WEIR_ERROR;
    }

    if (peers->number == 0) {
        weir_log_error(WEIR_LOG_EMERG, cf->log, 0,
                       "no servers in upstream \"%.*s\" in %s:%lu "
                       "(only backup ones)",
                       WEIR_STR_ARG(us->host),
                       us->file_name ? (char *) us->file_name : "-",
                       (unsigned long) us->line);
        return WEIR_ERROR;
    }

    backup = weir_http_upstream_rr_build(cf, us, 1);
    if (backup == NULL) {
        return WEIR_ERROR;
    }

    if (backup->number) {
        /* the fast path of one peer never switches to the backups, and a
         * lone backup peer is marked failed like any other (nginx) */
        peers->single = 0;
        backup->single = 0;
        peers->next = backup;
    }

    us->peer.data = peers;

    return WEIR_OK;
}


/* the primary (backup 0) or backup peers of the group's "server" lines:
 * one peer per address */

static weir_http_upstream_rr_peers_t *
weir_http_upstream_rr_build(weir_conf_t *cf,
    weir_http_upstream_srv_conf_t *us, weir_uint_t backup)
{
    weir_uint_t                      i, j, n, w, t;
    weir_http_upstream_rr_peer_t    *peer, **tail;
    weir_http_upstream_rr_peers_t   *peers;
    weir_http_upstream_rr_state_t   *state;
    weir_http_upstream_server_t     *server;

    server = us->servers->elts;

    n = 0;
    w = 0;
    t = 0;

    for (i = 0; i < us->servers->nelts; i++) {
        if (server[i].backup != backup) {
            continue;
        }

        n += server[i].naddrs;
        w += server[i].naddrs * server[i].weight;

        if (!server[i].down) {
            t += server[i].naddrs;
        }
    }

    peers = weir_pcalloc(cf->pool, sizeof(weir_http_upstream_rr_peers_t));
    if (peers == NULL) {
        return NULL;
    }

    peers->number = n;
    peers->total_weight = w;
    peers->weighted = (w != n);
    peers->single = (n == 1);
    peers->tries = t;
    peers->name = &us->host;

    if (n == 0) {
        return peers;
    }

    peer = weir_pcalloc(cf->pool, sizeof(weir_http_upstream_rr_peer_t) * n);
    if (peer == NULL) {
        return NULL;
    }

    /* per worker until a zone, if any, takes the state over */
    state = weir_pcalloc(cf->pool, sizeof(weir_http_upstream_rr_state_t) * n);
    if (state == NULL) {
        return NULL;
    }

    n = 0;
    tail = &peers->peer;

    for (i = 0; i < us->servers->nelts; i++) {
        if (server[i].backup != backup) {
            continue;
        }

        for (j = 0; j < server[i].naddrs; j++) {
            peer[n].sockaddr = server[i].addrs[j].sockaddr;
            peer[n].socklen = server[i].addrs[j].socklen;
            peer[n].name = server[i].addrs[j].name;
            peer[n].server = server[i].name;
            peer[n].weight = (weir_int_t) server[i].weight;
            peer[n].max_fails = server[i].max_fails;
            peer[n].fail_timeout = server[i].fail_timeout;
            peer[n].max_conns = server[i].max_conns;
            peer[n].down = server[i].down;

            peer[n].state = &state[n];
            state[n].effective_weight = (weir_int_t) server[i].weight;

            *tail = &peer[n];
            tail = &peer[n].next;

            n++;
        }
    }

    return peers;
}


/* the tried bitmap: in rrp->data when the larger list fits in a word */

static weir_int_t
weir_http_upstream_rr_tried_init(weir_http_request_t *r,
    weir_http_upstream_rr_peer_data_t *rrp)
{
    weir_uint_t  n;

    n = rrp->peers->number;

    if (rrp->peers->next && rrp->peers->next->number > n) {
        n = rrp->peers->next->number;
    }

    if (n <= WEIR_HTTP_UPSTREAM_TRIED_BITS) {
        rrp->tried = &rrp->data;
        rrp->data = 0;
        return WEIR_OK;
    }

    n = (n + (WEIR_HTTP_UPSTREAM_TRIED_BITS - 1))
        / WEIR_HTTP_UPSTREAM_TRIED_BITS;

    rrp->tried = weir_pcalloc(r->pool, n * sizeof(uintptr_t));
    if (rrp->tried == NULL) {
        return WEIR_ERROR;
    }

    return WEIR_OK;
}


weir_int_t
weir_http_upstream_init_round_robin_peer(weir_http_request_t *r,
    weir_http_upstream_srv_conf_t *us)
{
    weir_uint_t                         tries;
    weir_http_upstream_t               *u;
    weir_http_upstream_rr_peer_data_t  *rrp;

    u = r->upstream;

    if (us->peer.data == NULL) {
        weir_log_error(WEIR_LOG_ALERT, r->connection->log, 0,
                       "upstream \"%.*s\" has no peers",
                       WEIR_STR_ARG(us->host));
        return WEIR_ERROR;
    }

    /* a balancer built on round robin may have allocated it already */
    rrp = u->peer.data;

    if (rrp == NULL) {
        rrp = weir_pcalloc(r->pool,
                           sizeof(weir_http_upstream_rr_peer_data_t));
        if (rrp == NULL) {
            return WEIR_ERROR;
        }

        u->peer.data = rrp;
    }

    rrp->peers = us->peer.data;
    rrp->current = NULL;

    if (weir_http_upstream_rr_tried_init(r, rrp) != WEIR_OK) {
        return WEIR_ERROR;
    }

    tries = rrp->peers->tries
            + (rrp->peers->next ? rrp->peers->next->tries : 0);

    u->peer.get = weir_http_upstream_get_round_robin_peer;
    u->peer.free = weir_http_upstream_free_round_robin_peer;
    /* at least one attempt: with every peer down it is answered BUSY */
    u->peer.tries = tries ? tries : 1;

    return WEIR_OK;
}


weir_int_t
weir_http_upstream_create_round_robin_peer(weir_http_request_t *r,
    weir_addr_t *addrs, weir_uint_t naddrs, weir_str_t *host)
{
    weir_uint_t                         i;
    weir_http_upstream_t               *u;
    weir_http_upstream_rr_peer_t       *peer, **tail;
    weir_http_upstream_rr_peers_t      *peers;
    weir_http_upstream_rr_state_t      *state;
    weir_http_upstream_rr_peer_data_t  *rrp;

    u = r->upstream;

    if (naddrs == 0) {
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "no addresses for upstream \"%.*s\"",
                       WEIR_STR_ARG(*host));
        return WEIR_ERROR;
    }

    rrp = u->peer.data;

    if (rrp == NULL) {
        rrp = weir_pcalloc(r->pool,
                           sizeof(weir_http_upstream_rr_peer_data_t));
        if (rrp == NULL) {
            return WEIR_ERROR;
        }

        u->peer.data = rrp;
    }

    peers = weir_pcalloc(r->pool, sizeof(weir_http_upstream_rr_peers_t));
    if (peers == NULL) {
        return WEIR_ERROR;
    }

    peer = weir_pcalloc(r->pool, sizeof(weir_http_upstream_rr_peer_t)
                                 * naddrs);
    if (peer == NULL) {
        return WEIR_ERROR;
    }

    state = weir_pcalloc(r->pool, sizeof(weir_http_upstream_rr_state_t)
                                  * naddrs);
    if (state == NULL) {
        return WEIR_ERROR;
    }

    peers->single = (naddrs == 1);
    peers->number = naddrs;
    peers->total_weight = naddrs;
    peers->tries = naddrs;
    peers->name = host;

    tail = &peers->peer;

    for (i = 0; i < naddrs; i++) {
        peer[i].sockaddr = addrs[i].sockaddr;
        peer[i].socklen = addrs[i].socklen;
        peer[i].name = addrs[i].name;
        peer[i].server = *host;
        peer[i].weight = 1;
        peer[i].max_fails = 1;
        peer[i].fail_timeout = 10;
        peer[i].state = &state[i];
        state[i].effective_weight = 1;

        *tail = &peer[i];
        tail = &peer[i].next;
    }

    rrp->peers = peers;
    rrp->current = NULL;

    if (weir_http_upstream_rr_tried_init(r, rrp) != WEIR_OK) {
        return WEIR_ERROR;
    }

    u->peer.get = weir_http_upstream_get_round_robin_peer;
    u->peer.free = weir_http_upstream_free_round_robin_peer;
    u->peer.tries = naddrs;

    return WEIR_OK;
}


weir_uint_t
weir_http_upstream_rr_peer_usable(weir_http_upstream_rr_peer_t *peer,
    time_t now)
{
    weir_http_upstream_rr_state_t  *st;

    if (peer->down) {
        return 0;
    }

    st = peer->state;

    /* failed max_fails times: out until fail_timeout after the last
     * failure or probe (checked), then one request may probe it */
    if (peer->max_fails
        && st->fails >= peer->max_fails
        && now - st->checked <= peer->fail_timeout)
    {
        return 0;
    }

    if (peer->max_conns && st->conns >= peer->max_conns) {
        return 0;
    }

    return 1;
}


weir_int_t
weir_http_upstream_get_round_robin_peer(weir_peer_connection_t *pc,
    void *data)
{
    weir_int_t                          rc;
    weir_shmtx_t                       *mutex;
    weir_http_upstream_rr_peer_data_t  *rrp;

    rrp = data;

    /* the primary peers' lock, which is also the backups' */
    mutex = rrp->peers->mutex;

    if (mutex) {
        weir_shmtx_lock(mutex);
    }

    rc = weir_http_upstream_get_round_robin_peer_locked(pc, rrp);

    if (mutex) {
        weir_shmtx_unlock(mutex);
    }

    return rc;
}


weir_int_t
weir_http_upstream_get_round_robin_peer_locked(weir_peer_connection_t *pc,
    weir_http_upstream_rr_peer_data_t *rrp)
{
    time_t                              now;
    weir_int_t                          rc;
    weir_uint_t                         p;
    weir_http_upstream_rr_peer_t       *peer;
    weir_http_upstream_rr_peers_t      *peers;

    pc->cached = 0;
    pc->connection = NULL;

    rrp->current = NULL;

    now = weir_time();
    p = 0;

    for ( ;; ) {
        peers = rrp->peers;

        if (peers->single) {
            peer = peers->peer;

            /* one peer: failures do not take it out, there is no other
             * to send the request to */
            if (peer->down
                || (peer->max_conns
                    && peer->state->conns >= peer->max_conns)
                || weir_http_upstream_rr_tried(rrp, 0))
            {
                peer = NULL;
            }

        } else {
            peer = weir_http_upstream_get_peer(rrp, now, &p);
        }

        if (peer) {
            break;
        }

        rc = weir_http_upstream_rr_use_backups(pc, rrp);
        if (rc != WEIR_OK) {
            return rc;
        }
    }

    (void) weir_http_upstream_rr_use_peer(pc, rrp, peer, p, now);

    weir_log_debug(pc->log, 0, "get rr peer %.*s, conns:%lu",
                   WEIR_STR_ARG(peer->name),
                   (unsigned long) peer->state->conns);

    return WEIR_OK;
}


weir_int_t
weir_http_upstream_rr_use_peer(weir_peer_connection_t *pc,
    weir_http_upstream_rr_peer_data_t *rrp,
    weir_http_upstream_rr_peer_t *peer, weir_uint_t i, time_t now)
{
    rrp->current = peer;
    rrp->tried[i / WEIR_HTTP_UPSTREAM_TRIED_BITS] |=
        (uintptr_t) 1 << i % WEIR_HTTP_UPSTREAM_TRIED_BITS;

    pc->sockaddr = peer->sockaddr;
    pc->socklen = peer->socklen;
    pc->name = &peer->name;

    peer->state->conns++;

    /* a peer past its fail_timeout: this request is its probe, the
     * others (in every worker, with a zone) wait fail_timeout more */
    if (now - peer->state->checked > peer->fail_timeout) {
        peer->state->checked = now;
    }

    return WEIR_OK;
}


weir_int_t
weir_http_upstream_rr_use_backups(weir_peer_connection_t *pc,
    weir_http_upstream_rr_peer_data_t *rrp)
{
    weir_uint_t                     i, n;
    weir_http_upstream_rr_peers_t  *peers;

    peers = rrp->peers;

    if (peers->next == NULL) {
        weir_log_debug(pc->log, 0, "no live peer in upstream \"%.*s\"",
                       WEIR_STR_ARG(*peers->name));

        pc->name = peers->name;
        pc->sockaddr = NULL;
        pc->socklen = 0;

        return WEIR_BUSY;
    }

    weir_log_debug(pc->log, 0, "upstream \"%.*s\": trying backup peers",
                   WEIR_STR_ARG(*peers->name));

    rrp->peers = peers->next;

    n = (rrp->peers->number + (WEIR_HTTP_UPSTREAM_TRIED_BITS - 1))
        / WEIR_HTTP_UPSTREAM_TRIED_BITS;

    for (i = 0; i < n; i++) {
        rrp->tried[i] = 0;
    }

    return WEIR_OK;
}


/* smooth weighted round robin over the usable peers not tried yet */

static weir_http_upstream_rr_peer_t *
weir_http_upstream_get_peer(weir_http_upstream_rr_peer_data_t *rrp,
    time_t now, weir_uint_t *index)
{
    weir_int_t                      total;
    weir_uint_t                     i, p;
    weir_http_upstream_rr_peer_t   *peer, *best;
    weir_http_upstream_rr_state_t  *st;

    best = NULL;
    total = 0;
    p = 0;

    for (peer = rrp->peers->peer, i = 0; peer; peer = peer->next, i++) {

        if (weir_http_upstream_rr_tried(rrp, i)) {
            continue;
        }

        if (!weir_http_upstream_rr_peer_usable(peer, now)) {
            continue;
        }

        st = peer->state;

        st->current_weight += st->effective_weight;
        total += st->effective_weight;

        /* a peer that failed recovers its weight one step per pick */
        if (st->effective_weight < peer->weight) {
            st->effective_weight++;
        }

        if (best == NULL
            || st->current_weight > best->state->current_weight)
        {
            best = peer;
            p = i;
        }
    }

    if (best == NULL) {
        return NULL;
    }

    best->state->current_weight -= total;

    /* weir_http_upstream_rr_use_peer marks it tried */
    *index = p;

    return best;
}


void
weir_http_upstream_free_round_robin_peer(weir_peer_connection_t *pc,
    void *data, weir_uint_t state)
{
    time_t                              now;
    weir_uint_t                         fails, disabled;
    weir_shmtx_t                       *mutex;
    weir_http_upstream_rr_peer_t       *peer;
    weir_http_upstream_rr_state_t      *st;
    weir_http_upstream_rr_peer_data_t  *rrp;

    rrp = data;
    peer = rrp->current;

    if (pc->tries) {
        pc->tries--;
    }

    if (peer == NULL) {
        /* get found no peer (BUSY), or this attempt was freed already */
        return;
    }

    rrp->current = NULL;

    st = peer->state;
    mutex = rrp->peers->mutex;

    weir_log_debug(pc->log, 0, "free rr peer %.*s, state:%lu",
                   WEIR_STR_ARG(peer->name), (unsigned long) state);

    if (rrp->peers->single) {
        if (mutex) {
            weir_shmtx_lock(mutex);
        }

        if (st->conns) {
            st->conns--;
        }

        if (mutex) {
            weir_shmtx_unlock(mutex);
        }

        /* nothing else to try, and nothing to mark */
        pc->tries = 0;
        return;
    }

    now = weir_time();
    disabled = 0;
    fails = 0;

    if (mutex) {
        weir_shmtx_lock(mutex);
    }

    if (st->conns) {
        st->conns--;
    }

    if (state & WEIR_PEER_FAILED) {
        st->fails++;
        st->accessed = now;
        st->checked = now;

        if (peer->max_fails) {
            st->effective_weight -= peer->weight
                                    / (weir_int_t) peer->max_fails;

            if (st->fails >= peer->max_fails) {
                disabled = 1;
                fails = st->fails;
            }
        }

        if (st->effective_weight < 0) {
            st->effective_weight = 0;
        }

    } else {
        /* a success after the last failure (the probe worked) */
        if (st->accessed < st->checked) {
            st->fails = 0;
        }
    }

    if (mutex) {
        weir_shmtx_unlock(mutex);
    }

    /* no write to the log under the lock */
    if (disabled) {
        weir_log_error(WEIR_LOG_WARN, pc->log, 0,
                       "upstream server temporarily disabled: "
                       "%.*s in upstream \"%.*s\" for %lds "
                       "after %lu failures",
                       WEIR_STR_ARG(peer->name),
                       WEIR_STR_ARG(*rrp->peers->name),
                       (long) peer->fail_timeout,
                       (unsigned long) fails);
    }
}


/*
 * The zone of "zone NAME" holds, for every group that names it, in the
 * order of the upstream main conf's list, one block:
 *
 *   the group's lock | the state of each primary peer | of each backup
 *
 * all of them in one slab allocation, so that the configuration check
 * below knows exactly what the zone must hold. The zone holds no pointer
 * (the peers in the cycle's pool point into it). A reload never takes it
 * over (noreuse, as nginx): the new cycle's groups start afresh.
 */

#define WEIR_HTTP_UPSTREAM_ZONE_LOCK                                          \
    weir_align(sizeof(weir_shmtx_sh_t), WEIR_ALIGNMENT)

/* the slot size the cycle gives its zones' slab pools */
#define WEIR_HTTP_UPSTREAM_ZONE_MIN_SHIFT  3


static size_t
weir_http_upstream_zone_group_size(weir_http_upstream_srv_conf_t *us)
{
    weir_uint_t                     n;
    weir_http_upstream_rr_peers_t  *peers;

    peers = us->peer.data;
    n = peers->number + (peers->next ? peers->next->number : 0);

    return WEIR_HTTP_UPSTREAM_ZONE_LOCK
           + n * weir_align(sizeof(weir_http_upstream_rr_state_t),
                            WEIR_ALIGNMENT);
}


weir_int_t
weir_http_upstream_check_zones(weir_conf_t *cf,
    weir_http_upstream_main_conf_t *umcf)
{
    size_t                           total;
    weir_uint_t                      i, j, pages, need;
    weir_shm_zone_t                 *zone;
    weir_http_upstream_srv_conf_t  **uscfp, *us, *over;

    uscfp = umcf->upstreams.elts;

    for (i = 0; i < umcf->upstreams.nelts; i++) {
        zone = uscfp[i]->shm_zone;

        if (zone == NULL) {
            continue;
        }

        /* the zone's first group checks it for all of them */
        for (j = 0; j < i; j++) {
            if (uscfp[j]->shm_zone == zone) {
                break;
            }
        }

        if (j < i) {
            continue;
        }

        us = uscfp[i];

        if (zone->shm.size == 0) {
            weir_log_error(WEIR_LOG_EMERG, cf->log, 0,
                           "zero size shared memory zone \"%.*s\" in %s:%lu",
                           WEIR_STR_ARG(zone->shm.name),
                           us->zone_file_name
                           ? (char *) us->zone_file_name : "-",
                           (unsigned long) us->zone_line);
            return WEIR_ERROR;
        }

        pages = weir_slab_zone_pages(zone->shm.size,
                                     WEIR_HTTP_UPSTREAM_ZONE_MIN_SHIFT);

        /* the zone's name, which the slab keeps for its messages, and
         * the block of every group */
        total = 0;
        need = 0;
        over = NULL;

        for (j = i; j < umcf->upstreams.nelts; j++) {
            if (uscfp[j]->shm_zone != zone) {
                continue;
            }

            total += weir_http_upstream_zone_group_size(uscfp[j]);

            need = weir_slab_alloc_pages_max(zone->shm.name.len + 1)
                   + weir_slab_alloc_pages_max(total);

            if (need > pages && over == NULL) {
                over = uscfp[j];
            }
        }

        if (over) {
            weir_log_error(WEIR_LOG_EMERG, cf->log, 0,
                           "zone \"%.*s\" is too small for upstream "
                           "\"%.*s\" (at least %zu bytes are needed) "
                           "in %s:%lu",
                           WEIR_STR_ARG(zone->shm.name),
                           WEIR_STR_ARG(over->host),
                           weir_slab_zone_size(need,
                                           WEIR_HTTP_UPSTREAM_ZONE_MIN_SHIFT),
                           over->zone_file_name
                           ? (char *) over->zone_file_name : "-",
                           (unsigned long) over->zone_line);
            return WEIR_ERROR;
        }
    }

    return WEIR_OK;
}


/* the group's lock and its peers' state go to p, the peers point there */

static unsigned char *
weir_http_upstream_zone_move(weir_http_upstream_rr_peers_t *peers,
    unsigned char *p)
{
    weir_http_upstream_rr_peer_t   *peer;
    weir_http_upstream_rr_peers_t  *ps;
    weir_http_upstream_rr_state_t  *st;

    /* NULL log: the lock logs to the cycle in use when it logs */
    if (weir_shmtx_create(&peers->lock, (weir_shmtx_sh_t *) p, NULL)
        != WEIR_OK)
    {
        return NULL;
    }

    p += WEIR_HTTP_UPSTREAM_ZONE_LOCK;

    for (ps = peers; ps; ps = ps->next) {
        ps->mutex = &peers->lock;

        for (peer = ps->peer; peer; peer = peer->next) {
            st = (weir_http_upstream_rr_state_t *) p;
            *st = *peer->state;
            peer->state = st;

            p += weir_align(sizeof(weir_http_upstream_rr_state_t),
                            WEIR_ALIGNMENT);
        }
    }

    return p;
}


/*
 * The zone's init (the master, when the cycle maps its zones; never
 * under -t): data is an old cycle's zone data, never given here as the
 * zone is not reused.
 */

weir_int_t
weir_http_upstream_init_zone(weir_shm_zone_t *zone, void *data)
{
    size_t                            size;
    weir_uint_t                       i;
    unsigned char                    *p;
    weir_slab_pool_t                 *shpool;
    weir_http_upstream_srv_conf_t   **uscfp;
    weir_http_upstream_main_conf_t   *umcf;

    (void) data;

    umcf = zone->data;
    uscfp = umcf->upstreams.elts;
    shpool = (weir_slab_pool_t *) zone->shm.addr;

    size = 0;

    for (i = 0; i < umcf->upstreams.nelts; i++) {
        if (uscfp[i]->shm_zone == zone) {
            size += weir_http_upstream_zone_group_size(uscfp[i]);
        }
    }

    if (size == 0) {
        return WEIR_OK;
    }

    /* weir_http_upstream_check_zones made sure it fits */
    p = weir_slab_calloc(shpool, size);
    if (p == NULL) {
        weir_log_error(WEIR_LOG_EMERG, zone->shm.log, 0,
                       "could not allocate %zu bytes of upstream zone "
                       "\"%.*s\"", size, WEIR_STR_ARG(zone->shm.name));
        return WEIR_ERROR;
    }

    for (i = 0; i < umcf->upstreams.nelts; i++) {
        if (uscfp[i]->shm_zone != zone) {
            continue;
        }

        p = weir_http_upstream_zone_move(uscfp[i]->peer.data, p);
        if (p == NULL) {
            return WEIR_ERROR;
        }
    }

    return WEIR_OK;
}
