#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"
#include "weir_unit.h"


/*
 * The upstream zone ("zone"): two groups in one shared mapping, as the
 * cycle would make it; the zone's init moves their peers' state and
 * locks there, and a forked "worker" that fails a peer takes it out for
 * this process too.
 */

typedef struct {
    const char   *addr;
    unsigned      backup:1;
} test_zone_server_t;


static weir_cycle_t           zone_cycle;
static volatile weir_cycle_t *zone_saved_cycle;


static weir_int_t
test_zone_group(weir_conf_t *cf, weir_http_upstream_srv_conf_t *us,
    const char *name, test_zone_server_t *servers)
{
    weir_str_t                    text;
    weir_array_t                  addrs;
    weir_http_upstream_server_t  *s;

    weir_memzero(us, sizeof(weir_http_upstream_srv_conf_t));

    us->host.data = (unsigned char *) name;
    us->host.len = strlen(name);

    us->servers = weir_array_create(cf->pool, 4,
                                    sizeof(weir_http_upstream_server_t));
    if (us->servers == NULL) {
        return WEIR_ERROR;
    }

    for ( /* void */ ; servers->addr; servers++) {
        s = weir_array_push(us->servers);
        if (s == NULL) {
            return WEIR_ERROR;
        }

        weir_memzero(s, sizeof(weir_http_upstream_server_t));
        weir_memzero(&addrs, sizeof(weir_array_t));

        text.data = (unsigned char *) servers->addr;
        text.len = strlen(servers->addr);

        if (weir_parse_addr_port(cf->pool, &text, 80, &addrs) != NULL) {
            return WEIR_ERROR;
        }

        s->name = text;
        s->addrs = addrs.elts;
        s->naddrs = addrs.nelts;
        s->weight = 1;
        s->max_fails = 1;
        s->fail_timeout = 30;
        s->backup = servers->backup;
    }

    return weir_http_upstream_init_round_robin(cf, us);
}


static weir_peer_connection_t *
test_zone_request(weir_pool_t *pool, weir_http_upstream_srv_conf_t *us)
{
    weir_http_request_t  *r;

    r = weir_pcalloc(pool, sizeof(weir_http_request_t));
    if (r == NULL) {
        return NULL;
    }

    r->pool = pool;

    r->upstream = weir_pcalloc(pool, sizeof(weir_http_upstream_t));
    if (r->upstream == NULL) {
        return NULL;
    }

    r->upstream->request = r;
    r->upstream->peer.log = weir_unit_log();

    if (us->peer.init(r, us) != WEIR_OK) {
        return NULL;
    }

    return &r->upstream->peer;
}


static weir_uint_t
test_zone_in(weir_shm_t *shm, void *p, size_t size)
{
    return (unsigned char *) p >= shm->addr
           && (unsigned char *) p + size <= shm->addr + shm->size;
}


WEIR_UNIT_TEST(http_upstream_zone_shared_state)
{
    int                               status;
    pid_t                             pid;
    unsigned                          port;
    weir_uint_t                       n;
    weir_conf_t                       cf;
    weir_shm_zone_t                   zone;
    weir_slab_pool_t                 *sp;
    weir_peer_connection_t           *pc;
    weir_http_upstream_rr_peer_t     *peer;
    weir_http_upstream_rr_peers_t    *one, *two, *ps;
    weir_http_upstream_srv_conf_t     us1, us2, *usp[2];
    weir_http_upstream_main_conf_t    umcf;

    test_zone_server_t  servers1[] = {
        { "127.0.0.1:8001", 0 }, { "127.0.0.1:8002", 0 },
        { "127.0.0.1:8003", 1 }, { NULL, 0 }
    };
    test_zone_server_t  servers2[] = {
        { "127.0.0.1:8011", 0 }, { "127.0.0.1:8012", 0 }, { NULL, 0 }
    };

    weir_memzero(&cf, sizeof(weir_conf_t));
    cf.pool = weir_unit_pool();
    cf.temp_pool = cf.pool;
    cf.log = weir_unit_log();
    WEIR_REQUIRE(cf.pool != NULL);

    WEIR_REQUIRE(test_zone_group(&cf, &us1, "one", servers1) == WEIR_OK);
    WEIR_REQUIRE(test_zone_group(&cf, &us2, "two", servers2) == WEIR_OK);

    one = us1.peer.data;
    two = us2.peer.data;

    /* per worker, no lock, until a zone takes the state */
    WEIR_CHECK(one->mutex == NULL && one->next->mutex == NULL);
    WEIR_CHECK(two->mutex == NULL);

    zone_saved_cycle = weir_cycle;
    zone_cycle.log = weir_unit_log();
    weir_cycle = &zone_cycle;

    weir_memzero(&zone, sizeof(weir_shm_zone_t));
    weir_str_set(&zone.shm.name, "z");
    zone.shm.log = weir_unit_log();
    zone.data = &umcf;

    us1.shm_zone = &zone;
    us2.shm_zone = &zone;

    usp[0] = &us1;
    usp[1] = &us2;
    weir_memzero(&umcf, sizeof(weir_http_upstream_main_conf_t));
    umcf.upstreams.elts = usp;
    umcf.upstreams.nelts = 2;
    umcf.upstreams.size = sizeof(weir_http_upstream_srv_conf_t *);

    /* no group gave the zone a size */
    weir_unit_log_reset();
    WEIR_CHECK_INT(weir_http_upstream_check_zones(&cf, &umcf), WEIR_ERROR);
    WEIR_CHECK(weir_unit_log_has("zero size shared memory zone \"z\""));

    zone.shm.size = 64 * 1024;
    WEIR_CHECK_INT(weir_http_upstream_check_zones(&cf, &umcf), WEIR_OK);

    if (!WEIR_CHECK_INT(weir_shm_alloc(&zone.shm), WEIR_OK)) {
        weir_cycle = zone_saved_cycle;
        return;
    }

    /* as the cycle prepares a zone */
    sp = (weir_slab_pool_t *) zone.shm.addr;
    sp->end = zone.shm.addr + zone.shm.size;
    sp->min_shift = 3;
    sp->addr = zone.shm.addr;
    sp->log_ctx = (unsigned char *) "z";
    weir_slab_init(sp);

    WEIR_CHECK_INT(weir_http_upstream_init_zone(&zone, NULL), WEIR_OK);

    /* each group has its lock, the backups share the primaries' one, and
     * every state is in the zone, copied from the pool */
    WEIR_CHECK(one->mutex == &one->lock);
    WEIR_CHECK(one->next->mutex == &one->lock);
    WEIR_CHECK(two->mutex == &two->lock);
    WEIR_CHECK(test_zone_in(&zone.shm, one->lock.sh,
                            sizeof(weir_shmtx_sh_t)));
    WEIR_CHECK(test_zone_in(&zone.shm, two->lock.sh,
                            sizeof(weir_shmtx_sh_t)));
    WEIR_CHECK(one->lock.sh != two->lock.sh);

    n = 0;

    for (ps = one; ps; ps = ps->next) {
        for (peer = ps->peer; peer; peer = peer->next) {
            WEIR_CHECK(test_zone_in(&zone.shm, peer->state,
                               sizeof(weir_http_upstream_rr_state_t)));
            WEIR_CHECK_INT(peer->state->effective_weight, 1);
            WEIR_CHECK_INT(peer->state->conns, 0);
            n++;
        }
    }

    for (peer = two->peer; peer; peer = peer->next) {
        WEIR_CHECK(test_zone_in(&zone.shm, peer->state,
                                sizeof(weir_http_upstream_rr_state_t)));
        n++;
    }

    WEIR_CHECK_INT(n, 5);

    /* a "worker" fails the first peer of group one, which smooth round
     * robin picks first, and keeps a connection to group two's first */
    pid = fork();

    if (pid == 0) {
        pc = test_zone_request(cf.pool, &us1);
        if (pc == NULL || pc->get(pc, pc->data) != WEIR_OK
            || weir_inet_get_port(pc->sockaddr) != 8001)
        {
            _exit(1);
        }

        pc->free(pc, pc->data, WEIR_PEER_FAILED);

        pc = test_zone_request(cf.pool, &us2);
        if (pc == NULL || pc->get(pc, pc->data) != WEIR_OK
            || weir_inet_get_port(pc->sockaddr) != 8011)
        {
            _exit(2);
        }

        _exit(0);
    }

    WEIR_REQUIRE(pid > 0);
    WEIR_CHECK(waitpid(pid, &status, 0) == pid);
    WEIR_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    /* this process sees the failure: 8001 is out, 8002 is next */
    WEIR_CHECK_INT(one->peer->state->fails, 1);
    WEIR_CHECK(!weir_http_upstream_rr_peer_usable(one->peer, weir_time()));

    pc = test_zone_request(cf.pool, &us1);
    WEIR_REQUIRE(pc != NULL);
    WEIR_REQUIRE(pc->get(pc, pc->data) == WEIR_OK);
    port = weir_inet_get_port(pc->sockaddr);
    WEIR_CHECK_INT(port, 8002);
    pc->free(pc, pc->data, 0);

    /* and the other worker's connection, and the weights it moved:
     * group two's round robin goes on with its second peer */
    WEIR_CHECK_INT(two->peer->state->conns, 1);

    pc = test_zone_request(cf.pool, &us2);
    WEIR_REQUIRE(pc != NULL);
    WEIR_REQUIRE(pc->get(pc, pc->data) == WEIR_OK);
    WEIR_CHECK_INT(weir_inet_get_port(pc->sockaddr), 8012);
    pc->free(pc, pc->data, 0);
    WEIR_CHECK_INT(two->peer->next->state->conns, 0);

    /* nothing was logged at alert or above (the failure is at warn) */
    WEIR_CHECK(!weir_unit_log_has("[alert]"));
    WEIR_CHECK(!weir_unit_log_has("[crit]"));

    weir_shmtx_destroy(&one->lock);
    weir_shmtx_destroy(&two->lock);
    weir_shmtx_destroy(&sp->mutex);
    weir_shm_free(&zone.shm);

    weir_cycle = zone_saved_cycle;
}
