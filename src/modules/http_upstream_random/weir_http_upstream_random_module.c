#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"

/*
 * "random [two [least_conn]]": a peer drawn at random with a probability
 * proportional to its weight; with "two", two distinct peers are drawn
 * and the one with fewer active connections for its weight (of this
 * worker, or of every worker with a "zone") wins ("power of two
 * choices": it spreads like least_conn without every worker herding onto
 * the same idle peer). A drawn peer that is down, failed or already
 * tried is drawn again, at most 20 times, then round robin takes over.
 * No backup peers, as nginx. Built on round robin's peers, per-request
 * data and free hook. The draws run under the group's lock.
 */


#define WEIR_HTTP_UPSTREAM_RANDOM_TRIES  20


typedef struct {
    weir_uint_t                      range;     /* sum of weights so far */
    weir_http_upstream_rr_peer_t    *peer;
} weir_http_upstream_random_range_t;


typedef struct {
    weir_uint_t                          set;   /* the directive was seen */
    weir_uint_t                          two;
    weir_uint_t                          total;
    weir_uint_t                          number;
    weir_http_upstream_random_range_t   *ranges;
} weir_http_upstream_random_srv_conf_t;


typedef struct {
    /* first: round robin's init and hooks see it as theirs */
    weir_http_upstream_rr_peer_data_t       rrp;

    weir_http_upstream_random_srv_conf_t   *conf;
    weir_uint_t                             tries;
} weir_http_upstream_random_peer_data_t;


static weir_int_t weir_http_upstream_init_random(weir_conf_t *cf,
    weir_http_upstream_srv_conf_t *us);
static weir_int_t weir_http_upstream_init_random_peer(weir_http_request_t *r,
    weir_http_upstream_srv_conf_t *us);
static weir_int_t weir_http_upstream_get_random_peer(
    weir_peer_connection_t *pc, void *data);
static weir_int_t weir_http_upstream_get_random2_peer(
    weir_peer_connection_t *pc, void *data);
static weir_uint_t weir_http_upstream_random_draw(
    weir_http_upstream_random_srv_conf_t *rcf);
static weir_uint_t weir_http_upstream_random_usable(
    weir_http_upstream_random_peer_data_t *rp, weir_uint_t i, time_t now);
static weir_int_t weir_http_upstream_random_use(weir_peer_connection_t *pc,
    weir_http_upstream_random_peer_data_t *rp, weir_uint_t i, time_t now);

static void *weir_http_upstream_random_create_conf(weir_conf_t *cf);
static char *weir_http_upstream_random(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);


static weir_command_t  weir_http_upstream_random_commands[] = {

    { weir_string("random"),
      WEIR_HTTP_UPS_CONF|WEIR_CONF_NOARGS|WEIR_CONF_TAKE12,
      weir_http_upstream_random,
      WEIR_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    weir_null_command
};


static weir_http_module_t  weir_http_upstream_random_module_ctx = {
    NULL,                                  /* preconfiguration */
    NULL,                                  /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    weir_http_upstream_random_create_conf, /* create server configuration */
    NULL,                                  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL,                                  /* merge location configuration */

    NULL,                                  /* phase handlers */
    NULL,                                  /* header filters */
    NULL,                                  /* body filters */
    NULL                                   /* request body filters */
};


weir_module_t  weir_http_upstream_random_module = {
    WEIR_MODULE_V1,
    &weir_http_upstream_random_module_ctx, /* module context */
    weir_http_upstream_random_commands,    /* module directives */
    WEIR_HTTP_MODULE,                      /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    WEIR_MODULE_V1_PADDING
};


static weir_int_t
weir_http_upstream_init_random(weir_conf_t *cf,
    weir_http_upstream_srv_conf_t *us)
{
    weir_uint_t                            i, total;
    weir_http_upstream_rr_peer_t          *peer;
    weir_http_upstream_rr_peers_t         *peers;
    weir_http_upstream_random_range_t     *ranges;
    weir_http_upstream_random_srv_conf_t  *rcf;

    if (weir_http_upstream_init_round_robin(cf, us) != WEIR_OK) {
        return WEIR_ERROR;
    }

    rcf = us->srv_conf[weir_http_upstream_random_module.ctx_index];
    peers = us->peer.data;

    ranges = weir_palloc(cf->pool, peers->number
                         * sizeof(weir_http_upstream_random_range_t));
    if (ranges == NULL) {
        return WEIR_ERROR;
    }

    total = 0;

    for (peer = peers->peer, i = 0; peer && i < peers->number;
         peer = peer->next, i++)
    {
        total += (weir_uint_t) peer->weight;
        ranges[i].range = total;
        ranges[i].peer = peer;
    }

    if (total == 0) {
        weir_log_error(WEIR_LOG_EMERG, cf->log, 0,
                       "no weighted servers in upstream \"%.*s\"",
                       WEIR_STR_ARG(us->host));
        return WEIR_ERROR;
    }

    rcf->ranges = ranges;
    rcf->number = i;
    rcf->total = total;

    us->peer.init = weir_http_upstream_init_random_peer;

    return WEIR_OK;
}


static weir_int_t
weir_http_upstream_init_random_peer(weir_http_request_t *r,
    weir_http_upstream_srv_conf_t *us)
{
    weir_http_upstream_t                   *u;
    weir_http_upstream_random_srv_conf_t   *rcf;
    weir_http_upstream_random_peer_data_t  *rp;

    u = r->upstream;

    rp = weir_pcalloc(r->pool,
                      sizeof(weir_http_upstream_random_peer_data_t));
    if (rp == NULL) {
        return WEIR_ERROR;
    }

    u->peer.data = &rp->rrp;

    if (weir_http_upstream_init_round_robin_peer(r, us) != WEIR_OK) {
        return WEIR_ERROR;
    }

    rcf = us->srv_conf[weir_http_upstream_random_module.ctx_index];

    rp->conf = rcf;

    u->peer.get = rcf->two ? weir_http_upstream_get_random2_peer
                           : weir_http_upstream_get_random_peer;

    return WEIR_OK;
}


/* a peer index drawn with probability weight / total */

static weir_uint_t
weir_http_upstream_random_draw(weir_http_upstream_random_srv_conf_t *rcf)
{
    weir_uint_t  x, lo, hi, mid;

    x = (weir_uint_t) random() % rcf->total;

    /* the first range above x */

    lo = 0;
    hi = rcf->number - 1;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;

        if (rcf->ranges[mid].range <= x) {
            lo = mid + 1;

        } else {
            hi = mid;
        }
    }

    return lo;
}


static weir_uint_t
weir_http_upstream_random_usable(weir_http_upstream_random_peer_data_t *rp,
    weir_uint_t i, time_t now)
{
    if (weir_http_upstream_rr_tried(&rp->rrp, i)) {
        return 0;
    }

    return weir_http_upstream_rr_peer_usable(rp->conf->ranges[i].peer, now);
}


/* the chosen peer becomes this attempt's, as round robin would do it */

static weir_int_t
weir_http_upstream_random_use(weir_peer_connection_t *pc,
    weir_http_upstream_random_peer_data_t *rp, weir_uint_t i, time_t now)
{
    weir_http_upstream_rr_peer_t  *peer;

    peer = rp->conf->ranges[i].peer;

    weir_log_debug(pc->log, 0, "get random peer %.*s, conns:%lu",
                   WEIR_STR_ARG(peer->name),
                   (unsigned long) peer->state->conns);

    return weir_http_upstream_rr_use_peer(pc, &rp->rrp, peer, i, now);
}


static weir_int_t
weir_http_upstream_get_random_peer(weir_peer_connection_t *pc, void *data)
{
    weir_http_upstream_random_peer_data_t  *rp = data;

    time_t         now;
    weir_int_t     rc;
    weir_uint_t    i;
    weir_shmtx_t  *mutex;

    if (rp->tries > WEIR_HTTP_UPSTREAM_RANDOM_TRIES
        || rp->rrp.peers->single)
    {
        return weir_http_upstream_get_round_robin_peer(pc, &rp->rrp);
    }

    pc->cached = 0;
    pc->connection = NULL;

    rp->rrp.current = NULL;

    now = weir_time();

    mutex = rp->rrp.peers->mutex;

    if (mutex) {
        weir_shmtx_lock(mutex);
    }

    for ( ;; ) {
        i = weir_http_upstream_random_draw(rp->conf);

        if (weir_http_upstream_random_usable(rp, i, now)) {
            rc = weir_http_upstream_random_use(pc, rp, i, now);
            break;
        }

        if (++rp->tries > WEIR_HTTP_UPSTREAM_RANDOM_TRIES) {
            rc = weir_http_upstream_get_round_robin_peer_locked(pc,
                                                                &rp->rrp);
            break;
        }
    }

    if (mutex) {
        weir_shmtx_unlock(mutex);
    }

    return rc;
}


static weir_int_t
weir_http_upstream_get_random2_peer(weir_peer_connection_t *pc, void *data)
{
    weir_http_upstream_random_peer_data_t  *rp = data;

    time_t                          now;
    weir_int_t                      rc;
    weir_uint_t                     i, prev, have_prev;
    weir_shmtx_t                   *mutex;
    weir_http_upstream_rr_peer_t   *a, *b;

    if (rp->tries > WEIR_HTTP_UPSTREAM_RANDOM_TRIES
        || rp->rrp.peers->single || rp->conf->number < 2)
    {
        return weir_http_upstream_get_round_robin_peer(pc, &rp->rrp);
    }

    pc->cached = 0;
    pc->connection = NULL;

    rp->rrp.current = NULL;

    now = weir_time();

    have_prev = 0;
    prev = 0;

    mutex = rp->rrp.peers->mutex;

    if (mutex) {
        weir_shmtx_lock(mutex);
    }

    for ( ;; ) {
        i = weir_http_upstream_random_draw(rp->conf);

        if (weir_http_upstream_random_usable(rp, i, now)) {

            if (!have_prev) {
                prev = i;
                have_prev = 1;

            } else if (i != prev) {
                break;
            }
        }

        if (++rp->tries > WEIR_HTTP_UPSTREAM_RANDOM_TRIES) {

            /* only one usable peer was found: take it */
            if (have_prev) {
                rc = weir_http_upstream_random_use(pc, rp, prev, now);

            } else {
                rc = weir_http_upstream_get_round_robin_peer_locked(pc,
                                                                &rp->rrp);
            }

            goto done;
        }
    }

    /* fewer connections for its weight wins; a tie keeps the first */

    a = rp->conf->ranges[i].peer;
    b = rp->conf->ranges[prev].peer;

    if (a->state->conns * (weir_uint_t) b->weight
        >= b->state->conns * (weir_uint_t) a->weight)
    {
        i = prev;
    }

    rc = weir_http_upstream_random_use(pc, rp, i, now);

done:

    if (mutex) {
        weir_shmtx_unlock(mutex);
    }

    return rc;
}


static void *
weir_http_upstream_random_create_conf(weir_conf_t *cf)
{
    weir_http_upstream_random_srv_conf_t  *conf;

    conf = weir_pcalloc(cf->pool,
                        sizeof(weir_http_upstream_random_srv_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    return conf;
}


static char *
weir_http_upstream_random(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_http_upstream_random_srv_conf_t  *rcf = conf;

    weir_str_t                     *value;
    weir_http_upstream_srv_conf_t  *us;

    (void) cmd;

    if (rcf->set) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (cf->args->nelts > 1) {
        if (value[1].len != sizeof("two") - 1
            || weir_strncmp(value[1].data, "two", 3) != 0)
        {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid parameter \"%.*s\"",
                                WEIR_STR_ARG(value[1]));
            return WEIR_CONF_ERROR;
        }

        rcf->two = 1;
    }

    if (cf->args->nelts > 2) {
        /* the one method of comparing the two */
        if (value[2].len != sizeof("least_conn") - 1
            || weir_strncmp(value[2].data, "least_conn", value[2].len) != 0)
        {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid parameter \"%.*s\"",
                                WEIR_STR_ARG(value[2]));
            return WEIR_CONF_ERROR;
        }
    }

    rcf->set = 1;

    us = weir_http_conf_get_module_srv_conf(cf, weir_http_upstream_module);

    if (us->peer.init_upstream) {
        weir_conf_log_error(WEIR_LOG_WARN, cf, 0,
                            "load balancing method redefined");
    }

    us->peer.init_upstream = weir_http_upstream_init_random;

    /* no backup, as nginx's random */
    us->flags = WEIR_HTTP_UPSTREAM_CREATE
                |WEIR_HTTP_UPSTREAM_WEIGHT
                |WEIR_HTTP_UPSTREAM_MAX_CONNS
                |WEIR_HTTP_UPSTREAM_MAX_FAILS
                |WEIR_HTTP_UPSTREAM_FAIL_TIMEOUT
                |WEIR_HTTP_UPSTREAM_DOWN;

    return WEIR_CONF_OK;
}
