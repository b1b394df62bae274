#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"

/*
 * "least_conn": the usable peer with the fewest active connections for
 * its weight (conns / weight; of this worker, or of every worker with a
 * "zone"), smooth weighted round robin among the peers that tie, backup
 * peers when no primary one is usable. Built on round robin: its peers,
 * its per-request data (tried bitmap) and its free hook, which counts
 * failures and connections. The pick runs under the group's lock.
 */


static weir_int_t weir_http_upstream_init_least_conn(weir_conf_t *cf,
    weir_http_upstream_srv_conf_t *us);
static weir_int_t weir_http_upstream_init_least_conn_peer(
    weir_http_request_t *r, weir_http_upstream_srv_conf_t *us);
static weir_int_t weir_http_upstream_get_least_conn_peer(
    weir_peer_connection_t *pc, void *data);
static weir_http_upstream_rr_peer_t *weir_http_upstream_least_conn_pick(
    weir_http_upstream_rr_peer_data_t *rrp, time_t now, weir_uint_t *index);
static char *weir_http_upstream_least_conn(weir_conf_t *cf,
    weir_command_t *cmd, void *conf);


static weir_command_t  weir_http_upstream_least_conn_commands[] = {

    { weir_string("least_conn"),
      WEIR_HTTP_UPS_CONF|WEIR_CONF_NOARGS,
      weir_http_upstream_least_conn,
      0,
      0,
      NULL },

    weir_null_command
};


static weir_http_module_t  weir_http_upstream_least_conn_module_ctx = {
    NULL,                                  /* preconfiguration */
    NULL,                                  /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL,                                  /* merge location configuration */

    NULL,                                  /* phase handlers */
    NULL,                                  /* header filters */
    NULL,                                  /* body filters */
    NULL                                   /* request body filters */
};


weir_module_t  weir_http_upstream_least_conn_module = {
    WEIR_MODULE_V1,
    &weir_http_upstream_least_conn_module_ctx, /* module context */
    weir_http_upstream_least_conn_commands, /* module directives */
    WEIR_HTTP_MODULE,                      /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    WEIR_MODULE_V1_PADDING
};


static weir_int_t
weir_http_upstream_init_least_conn(weir_conf_t *cf,
    weir_http_upstream_srv_conf_t *us)
{
    if (weir_http_upstream_init_round_robin(cf, us) != WEIR_OK) {
        return WEIR_ERROR;
    }

    us->peer.init = weir_http_upstream_init_least_conn_peer;

    return WEIR_OK;
}


static weir_int_t
weir_http_upstream_init_least_conn_peer(weir_http_request_t *r,
    weir_http_upstream_srv_conf_t *us)
{
    if (weir_http_upstream_init_round_robin_peer(r, us) != WEIR_OK) {
        return WEIR_ERROR;
    }

    r->upstream->peer.get = weir_http_upstream_get_least_conn_peer;

    return WEIR_OK;
}


static weir_int_t
weir_http_upstream_get_least_conn_peer(weir_peer_connection_t *pc,
    void *data)
{
    weir_http_upstream_rr_peer_data_t  *rrp = data;

    time_t                          now;
    weir_int_t                      rc;
    weir_uint_t                     p;
    weir_shmtx_t                   *mutex;
    weir_http_upstream_rr_peer_t   *best;

    if (rrp->peers->single) {
        /* round robin's fast path: a lone peer is never marked down */
        return weir_http_upstream_get_round_robin_peer(pc, rrp);
    }

    pc->cached = 0;
    pc->connection = NULL;

    rrp->current = NULL;

    now = weir_time();

    /* the primary peers' lock, which is also the backups' */
    mutex = rrp->peers->mutex;

    if (mutex) {
        weir_shmtx_lock(mutex);
    }

    for ( ;; ) {
        best = weir_http_upstream_least_conn_pick(rrp, now, &p);

        if (best) {
            break;
        }

        rc = weir_http_upstream_rr_use_backups(pc, rrp);
        if (rc != WEIR_OK) {
            if (mutex) {
                weir_shmtx_unlock(mutex);
            }

            return rc;
        }
    }

    (void) weir_http_upstream_rr_use_peer(pc, rrp, best, p, now);

    weir_log_debug(pc->log, 0, "get least_conn peer %.*s, conns:%lu",
                   WEIR_STR_ARG(best->name),
                   (unsigned long) best->state->conns);

    if (mutex) {
        weir_shmtx_unlock(mutex);
    }

    return WEIR_OK;
}


/*
 * The peer with the lowest conns/weight among the usable ones not tried
 * yet (compared as conns_a * weight_b < conns_b * weight_a), and among
 * several with that ratio the one smooth weighted round robin picks.
 */

static weir_http_upstream_rr_peer_t *
weir_http_upstream_least_conn_pick(weir_http_upstream_rr_peer_data_t *rrp,
    time_t now, weir_uint_t *index)
{
    weir_int_t                      total;
    weir_uint_t                     i, p, many;
    weir_http_upstream_rr_peer_t   *peer, *best;
    weir_http_upstream_rr_state_t  *st;

    best = NULL;
    many = 0;
    p = 0;

    for (peer = rrp->peers->peer, i = 0; peer; peer = peer->next, i++) {

        if (weir_http_upstream_rr_tried(rrp, i)) {
            continue;
        }

        if (!weir_http_upstream_rr_peer_usable(peer, now)) {
            continue;
        }

        if (best == NULL
            || peer->state->conns * (weir_uint_t) best->weight
               < best->state->conns * (weir_uint_t) peer->weight)
        {
            best = peer;
            many = 0;
            p = i;

        } else if (peer->state->conns * (weir_uint_t) best->weight
                   == best->state->conns * (weir_uint_t) peer->weight)
        {
            many = 1;
        }
    }

    if (best == NULL) {
        return NULL;
    }

    if (many) {

        /* the ties come at or after the first best one */

        total = 0;

        for (peer = best, i = p; peer; peer = peer->next, i++) {

            if (weir_http_upstream_rr_tried(rrp, i)) {
                continue;
            }

            if (peer->state->conns * (weir_uint_t) best->weight
                != best->state->conns * (weir_uint_t) peer->weight)
            {
                continue;
            }

            if (!weir_http_upstream_rr_peer_usable(peer, now)) {
                continue;
            }

            st = peer->state;

            st->current_weight += st->effective_weight;
            total += st->effective_weight;

            if (st->effective_weight < peer->weight) {
                st->effective_weight++;
            }

            if (st->current_weight > best->state->current_weight) {
                best = peer;
                p = i;
            }
        }

        best->state->current_weight -= total;
    }

    /* weir_http_upstream_rr_use_peer marks it tried */
    *index = p;

    return best;
}


static char *
weir_http_upstream_least_conn(weir_conf_t *cf, weir_command_t *cmd,
    void *conf)
{
    weir_http_upstream_srv_conf_t  *us;

    (void) cmd;
    (void) conf;

    us = weir_http_conf_get_module_srv_conf(cf, weir_http_upstream_module);

    if (us->peer.init_upstream) {
        weir_conf_log_error(WEIR_LOG_WARN, cf, 0,
                            "load balancing method redefined");
    }

    us->peer.init_upstream = weir_http_upstream_init_least_conn;

    us->flags = WEIR_HTTP_UPSTREAM_CREATE
                |WEIR_HTTP_UPSTREAM_WEIGHT
                |WEIR_HTTP_UPSTREAM_MAX_CONNS
                |WEIR_HTTP_UPSTREAM_MAX_FAILS
                |WEIR_HTTP_UPSTREAM_FAIL_TIMEOUT
                |WEIR_HTTP_UPSTREAM_DOWN
                |WEIR_HTTP_UPSTREAM_BACKUP;

    return WEIR_CONF_OK;
}
