#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"
#include "weir_unit.h"

#include <poll.h>


/*
 * The round-robin balancer, driven without processes: groups are built
 * from "server" entries as the upstream block would, requests are a
 * pool with an upstream object, and time is weir's cached clock.
 */

typedef struct {
    const char   *addr;
    weir_uint_t   weight;
    weir_uint_t   max_fails;
    time_t        fail_timeout;
    weir_uint_t   max_conns;
    unsigned      backup:1;
    unsigned      down:1;
} test_rr_server_t;


typedef struct {
    weir_pool_t                     *pool;
    weir_conf_t                      cf;
    weir_http_upstream_srv_conf_t    us;
    weir_http_request_t             *r;
} test_rr_t;


static weir_int_t
test_rr_group(test_rr_t *t, test_rr_server_t *servers)
{
    weir_str_t                    text;
    weir_array_t                  addrs;
    weir_http_upstream_server_t  *s;

    weir_memzero(t, sizeof(test_rr_t));

    t->pool = weir_unit_pool();
    if (t->pool == NULL) {
        return WEIR_ERROR;
    }

    t->cf.pool = t->pool;
    t->cf.temp_pool = t->pool;
    t->cf.log = weir_unit_log();

    weir_str_set(&t->us.host, "backend");

    t->us.servers = weir_array_create(t->pool, 4,
                                      sizeof(weir_http_upstream_server_t));
    if (t->us.servers == NULL) {
        return WEIR_ERROR;
    }

    for ( /* void */ ; servers->addr; servers++) {
        s = weir_array_push(t->us.servers);
        if (s == NULL) {
            return WEIR_ERROR;
        }

        weir_memzero(s, sizeof(weir_http_upstream_server_t));
        weir_memzero(&addrs, sizeof(weir_array_t));

        text.data = (unsigned char *) servers->addr;
        text.len = strlen(servers->addr);

        if (weir_parse_addr_port(t->pool, &text, 80, &addrs) != NULL) {
            return WEIR_ERROR;
        }

        s->name = text;
        s->addrs = addrs.elts;
        s->naddrs = addrs.nelts;
        s->weight = servers->weight ? servers->weight : 1;
        s->max_fails = servers->max_fails;
        s->fail_timeout = servers->fail_timeout ? servers->fail_timeout : 10;
        s->max_conns = servers->max_conns;
        s->backup = servers->backup;
        s->down = servers->down;
    }

    return weir_http_upstream_init_round_robin(&t->cf, &t->us);
}


/* a new request with its upstream object and the balancer's state */

static weir_peer_connection_t *
test_rr_request(test_rr_t *t)
{
    weir_http_request_t  *r;

    r = weir_pcalloc(t->pool, sizeof(weir_http_request_t));
    if (r == NULL) {
        return NULL;
    }

    r->pool = t->pool;

    r->upstream = weir_pcalloc(t->pool, sizeof(weir_http_upstream_t));
    if (r->upstream == NULL) {
        return NULL;
    }

    r->upstream->request = r;
    r->upstream->peer.log = weir_unit_log();

    if (t->us.peer.init(r, &t->us) != WEIR_OK) {
        return NULL;
    }

    t->r = r;

    return &r->upstream->peer;
}


/* one request: get a peer, then free it with state; the peer's port or
 * 0 when the balancer had none (BUSY) */

static unsigned
test_rr_pick(test_rr_t *t, weir_uint_t state)
{
    unsigned                 port;
    weir_peer_connection_t  *pc;

    pc = test_rr_request(t);
    if (pc == NULL) {
        return 1;
    }

    if (pc->get(pc, pc->data) != WEIR_OK) {
        return 0;
    }

    port = weir_inet_get_port(pc->sockaddr);

    pc->free(pc, pc->data, state);

    return port;
}


WEIR_UNIT_TEST(http_upstream_rr_smooth_weights)
{
    char        seq[16];
    unsigned    port;
    test_rr_t   t;
    weir_uint_t i;

    test_rr_server_t  servers[] = {
        { "127.0.0.1:8001", 5, 1, 10, 0, 0, 0 },
        { "127.0.0.1:8002", 1, 1, 10, 0, 0, 0 },
        { "127.0.0.1:8003", 1, 1, 10, 0, 0, 0 },
        { NULL, 0, 0, 0, 0, 0, 0 }
    };

    WEIR_REQUIRE(test_rr_group(&t, servers) == WEIR_OK);

    WEIR_CHECK_INT(((weir_http_upstream_rr_peers_t *) t.us.peer.data)
                   ->total_weight, 7);

    for (i = 0; i < 14; i++) {
        port = test_rr_pick(&t, 0);
        seq[i] = (char) (port >= 8001 && port <= 8003 ? 'a' + port - 8001
                                                      : '?');
    }

    seq[14] = '\0';

    /* nginx's smooth sequence, twice */
    WEIR_CHECK_STR(seq, "aabacaaaabacaa");
}


WEIR_UNIT_TEST(http_upstream_rr_equal_weights_alternate)
{
    test_rr_t   t;

    test_rr_server_t  servers[] = {
        { "127.0.0.1:8001", 1, 1, 10, 0, 0, 0 },
        { "127.0.0.1:8002", 1, 1, 10, 0, 0, 0 },
        { NULL, 0, 0, 0, 0, 0, 0 }
    };

    WEIR_REQUIRE(test_rr_group(&t, servers) == WEIR_OK);

    WEIR_CHECK_INT(test_rr_pick(&t, 0), 8001);
    WEIR_CHECK_INT(test_rr_pick(&t, 0), 8002);
    WEIR_CHECK_INT(test_rr_pick(&t, 0), 8001);
    WEIR_CHECK_INT(test_rr_pick(&t, 0), 8002);
}


WEIR_UNIT_TEST(http_upstream_rr_down_never_chosen)
{
    test_rr_t    t;
    weir_uint_t  i;

    test_rr_server_t  servers[] = {
        { "127.0.0.1:8001", 1, 1, 10, 0, 0, 1 },
        { "127.0.0.1:8002", 1, 1, 10, 0, 0, 0 },
        { "127.0.0.1:8003", 1, 1, 10, 0, 0, 1 },
        { NULL, 0, 0, 0, 0, 0, 0 }
    };

    WEIR_REQUIRE(test_rr_group(&t, servers) == WEIR_OK);

    for (i = 0; i < 6; i++) {
        WEIR_CHECK_INT(test_rr_pick(&t, 0), 8002);
    }

    /* only the one peer that is not down counts as a try */
    WEIR_REQUIRE(test_rr_request(&t) != NULL);
    WEIR_CHECK_INT(t.r->upstream->peer.tries, 1);
}


WEIR_UNIT_TEST(http_upstream_rr_all_down_is_busy)
{
    test_rr_t   t;

    test_rr_server_t  servers[] = {
        { "127.0.0.1:8001", 1, 1, 10, 0, 0, 1 },
        { "127.0.0.1:8002", 1, 1, 10, 0, 0, 1 },
        { NULL, 0, 0, 0, 0, 0, 0 }
    };

    WEIR_REQUIRE(test_rr_group(&t, servers) == WEIR_OK);

    WEIR_CHECK_INT(test_rr_pick(&t, 0), 0);
}


WEIR_UNIT_TEST(http_upstream_rr_backup_after_primaries_fail)
{
    time_t                   saved;
    unsigned                 port, seen;
    weir_uint_t              i;
    test_rr_t                t;
    weir_peer_connection_t  *pc;

    test_rr_server_t  servers[] = {
        { "127.0.0.1:8001", 1, 1, 10, 0, 0, 0 },
        { "127.0.0.1:8002", 1, 1, 10, 0, 0, 0 },
        { "127.0.0.1:8009", 1, 1, 10, 0, 1, 0 },
        { NULL, 0, 0, 0, 0, 0, 0 }
    };

    saved = weir_cached_time_sec;
    weir_cached_time_sec = 100000;

    WEIR_REQUIRE(test_rr_group(&t, servers) == WEIR_OK);

    /* healthy primaries: the backup is never used */
    WEIR_CHECK_INT(test_rr_pick(&t, 0), 8001);
    WEIR_CHECK_INT(test_rr_pick(&t, 0), 8002);

    /* one request retried over every peer: primaries, then the backup */
    pc = test_rr_request(&t);
    WEIR_REQUIRE(pc != NULL);
    WEIR_CHECK_INT(pc->tries, 3);

    WEIR_REQUIRE(pc->get(pc, pc->data) == WEIR_OK);
    WEIR_CHECK_INT(weir_inet_get_port(pc->sockaddr), 8001);
    pc->free(pc, pc->data, WEIR_PEER_FAILED|WEIR_PEER_NEXT);

    WEIR_REQUIRE(pc->get(pc, pc->data) == WEIR_OK);
    WEIR_CHECK_INT(weir_inet_get_port(pc->sockaddr), 8002);
    pc->free(pc, pc->data, WEIR_PEER_FAILED|WEIR_PEER_NEXT);

    WEIR_CHECK(weir_unit_log_has("upstream server temporarily disabled"));

    WEIR_REQUIRE(pc->get(pc, pc->data) == WEIR_OK);
    WEIR_CHECK_INT(weir_inet_get_port(pc->sockaddr), 8009);
    pc->free(pc, pc->data, 0);
    WEIR_CHECK_INT(pc->tries, 0);

    /* both primaries are out for fail_timeout: new requests go to the
     * backup */
    WEIR_CHECK_INT(test_rr_pick(&t, 0), 8009);
    WEIR_CHECK_INT(test_rr_pick(&t, 0), 8009);

    /* after fail_timeout the primaries are probed, and come back */
    weir_cached_time_sec += 11;
    seen = 0;

    for (i = 0; i < 4; i++) {
        port = test_rr_pick(&t, 0);
        seen |= (port == 8001) ? 1 : (port == 8002) ? 2 : 4;
    }

    WEIR_CHECK_INT(seen, 3);

    weir_cached_time_sec = saved;
}


WEIR_UNIT_TEST(http_upstream_rr_max_fails_and_fail_timeout)
{
    time_t                         saved;
    unsigned                       port;
    test_rr_t                      t;
    weir_uint_t                    i;
    weir_http_upstream_rr_peer_t  *a;

    test_rr_server_t  servers[] = {
        { "127.0.0.1:8001", 1, 2, 30, 0, 0, 0 },
        { "127.0.0.1:8002", 1, 2, 30, 0, 0, 0 },
        { NULL, 0, 0, 0, 0, 0, 0 }
    };

    saved = weir_cached_time_sec;
    weir_cached_time_sec = 200000;

    WEIR_REQUIRE(test_rr_group(&t, servers) == WEIR_OK);

    a = ((weir_http_upstream_rr_peers_t *) t.us.peer.data)->peer;

    /* first failure of a: still usable */
    WEIR_CHECK_INT(test_rr_pick(&t, WEIR_PEER_FAILED), 8001);
    WEIR_CHECK_INT(a->state->fails, 1);
    WEIR_CHECK(weir_http_upstream_rr_peer_usable(a, weir_time()));

    WEIR_CHECK_INT(test_rr_pick(&t, 0), 8002);

    /* a success within fail_timeout of the failure does not forget it:
     * failures are counted within fail_timeout, as nginx does */
    WEIR_CHECK_INT(test_rr_pick(&t, 0), 8001);
    WEIR_CHECK_INT(a->state->fails, 1);
    WEIR_CHECK(!weir_unit_log_has("temporarily disabled"));

    WEIR_CHECK_INT(test_rr_pick(&t, 0), 8002);

    /* the second failure: out */
    weir_cached_time_sec += 5;
    WEIR_CHECK_INT(test_rr_pick(&t, WEIR_PEER_FAILED), 8001);
    WEIR_CHECK_INT(a->state->fails, 2);
    WEIR_CHECK(weir_unit_log_has("upstream server temporarily disabled"));
    WEIR_CHECK(!weir_http_upstream_rr_peer_usable(a, weir_time()));

    for (i = 0; i < 5; i++) {
        WEIR_CHECK_INT(test_rr_pick(&t, 0), 8002);
    }

    /* still out at fail_timeout ... */
    weir_cached_time_sec += 30;
    WEIR_CHECK_INT(test_rr_pick(&t, 0), 8002);

    /* ... past it one request probes a, and its success brings a back */
    weir_cached_time_sec += 1;
    WEIR_CHECK(weir_http_upstream_rr_peer_usable(a, weir_time()));

    port = 0;

    for (i = 0; i < 3; i++) {
        port = test_rr_pick(&t, 0);
        if (port == 8001) {
            break;
        }
    }

    WEIR_CHECK_INT(port, 8001);
    WEIR_CHECK_INT(a->state->fails, 0);
    WEIR_CHECK(weir_http_upstream_rr_peer_usable(a, weir_time()));

    weir_cached_time_sec = saved;
}


WEIR_UNIT_TEST(http_upstream_rr_failed_probe_keeps_peer_out)
{
    time_t      saved;
    test_rr_t   t;
    weir_uint_t i;
    weir_peer_connection_t        *pc;
    weir_http_upstream_rr_peer_t  *a;

    test_rr_server_t  servers[] = {
        { "127.0.0.1:8001", 1, 1, 10, 0, 0, 0 },
        { "127.0.0.1:8002", 1, 1, 10, 0, 0, 0 },
        { NULL, 0, 0, 0, 0, 0, 0 }
    };

    saved = weir_cached_time_sec;
    weir_cached_time_sec = 300000;

    WEIR_REQUIRE(test_rr_group(&t, servers) == WEIR_OK);

    a = ((weir_http_upstream_rr_peers_t *) t.us.peer.data)->peer;

    WEIR_CHECK_INT(test_rr_pick(&t, WEIR_PEER_FAILED), 8001);
    WEIR_CHECK(!weir_http_upstream_rr_peer_usable(a, weir_time()));

    weir_cached_time_sec += 11;

    /* the probe is handed out: a second request meanwhile skips a */
    pc = NULL;

    for (i = 0; i < 4; i++) {
        pc = test_rr_request(&t);
        WEIR_REQUIRE(pc != NULL);
        WEIR_REQUIRE(pc->get(pc, pc->data) == WEIR_OK);

        if (weir_inet_get_port(pc->sockaddr) == 8001) {
            break;
        }

        /* a's weight recovers one step per pick after its failure */
        pc->free(pc, pc->data, 0);
    }

    WEIR_CHECK_INT(weir_inet_get_port(pc->sockaddr), 8001);
    WEIR_CHECK_INT(test_rr_pick(&t, 0), 8002);
    WEIR_CHECK_INT(test_rr_pick(&t, 0), 8002);

    /* the probe fails: out for another fail_timeout */
    pc->free(pc, pc->data, WEIR_PEER_FAILED);
    WEIR_CHECK_INT(a->state->fails, 2);

    weir_cached_time_sec += 5;
    WEIR_CHECK_INT(test_rr_pick(&t, 0), 8002);
    WEIR_CHECK_INT(test_rr_pick(&t, 0), 8002);

    weir_cached_time_sec = saved;
}


WEIR_UNIT_TEST(http_upstream_rr_tried_not_chosen_again)
{
    test_rr_t                t;
    in_port_t                first, second;
    weir_peer_connection_t  *pc;

    test_rr_server_t  servers[] = {
        { "127.0.0.1:8001", 100, 0, 10, 0, 0, 0 },
        { "127.0.0.1:8002", 1, 0, 10, 0, 0, 0 },
        { NULL, 0, 0, 0, 0, 0, 0 }
    };

    WEIR_REQUIRE(test_rr_group(&t, servers) == WEIR_OK);

    /* max_fails=0: a failure never marks the peer, only the request's
     * bitmap keeps the retry away from it */
    pc = test_rr_request(&t);
    WEIR_REQUIRE(pc != NULL);
    WEIR_CHECK_INT(pc->tries, 2);

    WEIR_REQUIRE(pc->get(pc, pc->data) == WEIR_OK);
    first = weir_inet_get_port(pc->sockaddr);
    pc->free(pc, pc->data, WEIR_PEER_FAILED|WEIR_PEER_NEXT);

    WEIR_REQUIRE(pc->get(pc, pc->data) == WEIR_OK);
    second = weir_inet_get_port(pc->sockaddr);
    pc->free(pc, pc->data, WEIR_PEER_FAILED|WEIR_PEER_NEXT);

    WEIR_CHECK_INT(first, 8001);
    WEIR_CHECK_INT(second, 8002);
    WEIR_CHECK_INT(pc->tries, 0);

    /* nothing left for this request */
    WEIR_CHECK_INT(pc->get(pc, pc->data), WEIR_BUSY);

    /* the next request starts over with the heavy peer */
    WEIR_CHECK_INT(test_rr_pick(&t, 0), 8001);
}


WEIR_UNIT_TEST(http_upstream_rr_max_conns)
{
    test_rr_t                t;
    weir_peer_connection_t  *pc1, *pc2, *pc3;

    test_rr_server_t  servers[] = {
        { "127.0.0.1:8001", 1, 1, 10, 1, 0, 0 },
        { "127.0.0.1:8002", 1, 1, 10, 1, 0, 0 },
        { NULL, 0, 0, 0, 0, 0, 0 }
    };

    WEIR_REQUIRE(test_rr_group(&t, servers) == WEIR_OK);

    pc1 = test_rr_request(&t);
    WEIR_REQUIRE(pc1 != NULL);
    WEIR_REQUIRE(pc1->get(pc1, pc1->data) == WEIR_OK);

    pc2 = test_rr_request(&t);
    WEIR_REQUIRE(pc2 != NULL);
    WEIR_REQUIRE(pc2->get(pc2, pc2->data) == WEIR_OK);

    WEIR_CHECK(weir_inet_get_port(pc1->sockaddr)
               != weir_inet_get_port(pc2->sockaddr));

    /* both at max_conns=1 */
    pc3 = test_rr_request(&t);
    WEIR_REQUIRE(pc3 != NULL);
    WEIR_CHECK_INT(pc3->get(pc3, pc3->data), WEIR_BUSY);

    /* one connection ends: its peer takes the next request */
    pc1->free(pc1, pc1->data, 0);
    WEIR_REQUIRE(pc3->get(pc3, pc3->data) == WEIR_OK);
    WEIR_CHECK_INT(weir_inet_get_port(pc3->sockaddr),
                   weir_inet_get_port(pc1->sockaddr));

    pc2->free(pc2, pc2->data, 0);
    pc3->free(pc3, pc3->data, 0);
}


WEIR_UNIT_TEST(http_upstream_rr_single_peer)
{
    test_rr_t                t;
    weir_peer_connection_t  *pc;

    test_rr_server_t  servers[] = {
        { "127.0.0.1:8001", 1, 1, 10, 0, 0, 0 },
        { NULL, 0, 0, 0, 0, 0, 0 }
    };

    WEIR_REQUIRE(test_rr_group(&t, servers) == WEIR_OK);

    WEIR_CHECK(((weir_http_upstream_rr_peers_t *) t.us.peer.data)->single);

    /* a failure does not take the only peer out */
    WEIR_CHECK_INT(test_rr_pick(&t, WEIR_PEER_FAILED), 8001);
    WEIR_CHECK_INT(test_rr_pick(&t, WEIR_PEER_FAILED), 8001);
    WEIR_CHECK_INT(test_rr_pick(&t, 0), 8001);

    pc = test_rr_request(&t);
    WEIR_REQUIRE(pc != NULL);
    WEIR_CHECK_INT(pc->tries, 1);
    WEIR_REQUIRE(pc->get(pc, pc->data) == WEIR_OK);
    pc->free(pc, pc->data, WEIR_PEER_FAILED|WEIR_PEER_NEXT);
    WEIR_CHECK_INT(pc->tries, 0);
}


WEIR_UNIT_TEST(http_upstream_rr_only_backup_is_error)
{
    test_rr_t   t;

    test_rr_server_t  servers[] = {
        { "127.0.0.1:8001", 1, 1, 10, 0, 1, 0 },
        { NULL, 0, 0, 0, 0, 0, 0 }
    };

    WEIR_CHECK_INT(test_rr_group(&t, servers), WEIR_ERROR);
    WEIR_CHECK(weir_unit_log_has("no servers in upstream \"backend\""));
}


WEIR_UNIT_TEST(http_upstream_rr_create_peer)
{
    weir_str_t               text, host;
    weir_array_t             addrs;
    weir_pool_t             *pool;
    weir_http_request_t     *r;
    weir_peer_connection_t  *pc;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    weir_str_set(&text, "127.0.0.1:8005");
    weir_str_set(&host, "origin.test");
    weir_memzero(&addrs, sizeof(weir_array_t));
    WEIR_REQUIRE(weir_parse_addr_port(pool, &text, 80, &addrs) == NULL);

    r = weir_pcalloc(pool, sizeof(weir_http_request_t));
    WEIR_REQUIRE(r != NULL);
    r->pool = pool;
    r->upstream = weir_pcalloc(pool, sizeof(weir_http_upstream_t));
    WEIR_REQUIRE(r->upstream != NULL);

    pc = &r->upstream->peer;
    pc->log = weir_unit_log();

    WEIR_REQUIRE(weir_http_upstream_create_round_robin_peer(r, addrs.elts,
                                                            addrs.nelts,
                                                            &host)
                 == WEIR_OK);

    WEIR_CHECK_INT(pc->tries, 1);
    WEIR_REQUIRE(pc->get(pc, pc->data) == WEIR_OK);
    WEIR_CHECK_INT(weir_inet_get_port(pc->sockaddr), 8005);
    WEIR_CHECK_MEM(pc->name->data, pc->name->len, "127.0.0.1:8005");
    pc->free(pc, pc->data, WEIR_PEER_FAILED);
    WEIR_CHECK_INT(pc->tries, 0);
}


/*
 * weir_event_connect_peer() against real loopback sockets, with a fake
 * cycle (two free connections) and a fake level-triggered backend that
 * records what was registered.
 */

typedef struct {
    weir_cycle_t         cycle;
    weir_connection_t    conns[2];
    weir_event_t         rev[2];
    weir_event_t         wev[2];
    volatile weir_cycle_t  *saved_cycle;
    weir_event_actions_t    saved_actions;
    weir_uint_t             saved_flags;
    struct sockaddr_in      sin;
    weir_str_t              name;
    weir_int_t              get_rc;
} test_connect_t;


static weir_uint_t  test_connect_reads, test_connect_writes;


static weir_int_t
test_connect_add(weir_event_t *ev, weir_int_t event, weir_uint_t flags)
{
    (void) flags;

    if (event == WEIR_READ_EVENT) {
        test_connect_reads++;

    } else {
        test_connect_writes++;
    }

    ev->active = 1;

    return WEIR_OK;
}


static weir_int_t
test_connect_del(weir_event_t *ev, weir_int_t event, weir_uint_t flags)
{
    (void) event;
    (void) flags;

    ev->active = 0;

    return WEIR_OK;
}


static weir_int_t
test_connect_get(weir_peer_connection_t *pc, void *data)
{
    test_connect_t  *t;

    t = data;

    if (t->get_rc != WEIR_OK) {
        return t->get_rc;
    }

    pc->sockaddr = (struct sockaddr *) &t->sin;
    pc->socklen = sizeof(struct sockaddr_in);
    pc->name = &t->name;

    return WEIR_OK;
}


static void
test_connect_setup(test_connect_t *t, weir_peer_connection_t *pc)
{
    weir_uint_t  i;

    weir_memzero(t, sizeof(test_connect_t));
    weir_memzero(pc, sizeof(weir_peer_connection_t));

    for (i = 0; i < 2; i++) {
        t->conns[i].read = &t->rev[i];
        t->conns[i].write = &t->wev[i];
        t->conns[i].fd = -1;
        t->conns[i].data = (i == 0) ? &t->conns[1] : NULL;
    }

    t->cycle.free_connections = &t->conns[0];
    t->cycle.free_connection_n = 2;
    t->cycle.connection_n = 2;

    t->saved_cycle = weir_cycle;
    t->saved_actions = weir_event_actions;
    t->saved_flags = weir_event_flags;

    weir_cycle = &t->cycle;
    weir_memzero(&weir_event_actions, sizeof(weir_event_actions_t));
    weir_event_actions.add = test_connect_add;
    weir_event_actions.del = test_connect_del;
    weir_event_flags = WEIR_USE_LEVEL_EVENT|WEIR_USE_FD_EVENT;

    test_connect_reads = 0;
    test_connect_writes = 0;

    t->sin.sin_family = AF_INET;
    t->sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    weir_str_set(&t->name, "127.0.0.1:test");
    t->get_rc = WEIR_OK;

    pc->get = test_connect_get;
    pc->data = t;
    pc->log = weir_unit_log();
}


static void
test_connect_teardown(test_connect_t *t)
{
    weir_cycle = t->saved_cycle;
    weir_event_actions = t->saved_actions;
    weir_event_flags = t->saved_flags;
}


/* a listening loopback socket on a free port, or -1 */

static int
test_connect_listener(struct sockaddr_in *sin)
{
    int        s;
    socklen_t  len;

    s = socket(AF_INET, SOCK_STREAM, 0);
    if (s == -1) {
        return -1;
    }

    sin->sin_port = 0;

    if (bind(s, (struct sockaddr *) sin, sizeof(struct sockaddr_in)) == -1
        || listen(s, 4) == -1)
    {
        close(s);
        return -1;
    }

    len = sizeof(struct sockaddr_in);

    if (getsockname(s, (struct sockaddr *) sin, &len) == -1) {
        close(s);
        return -1;
    }

    return s;
}


static int
test_connect_wait_writable(int fd)
{
    struct pollfd  pfd;

    pfd.fd = fd;
    pfd.events = POLLOUT;
    pfd.revents = 0;

    return poll(&pfd, 1, 2000) == 1;
}


WEIR_UNIT_TEST(event_connect_peer_connects)
{
    int                      ls, nodelay;
    socklen_t                len;
    weir_int_t               rc;
    test_connect_t           t;
    weir_connection_t       *c;
    weir_peer_connection_t   pc;

    test_connect_setup(&t, &pc);

    ls = test_connect_listener(&t.sin);
    if (!WEIR_CHECK(ls != -1)) {
        test_connect_teardown(&t);
        return;
    }

    rc = weir_event_connect_peer(&pc);

    WEIR_CHECK(rc == WEIR_OK || rc == WEIR_AGAIN);
    c = pc.connection;

    if (WEIR_CHECK(c != NULL)) {
        WEIR_CHECK(c->fd != -1);
        WEIR_CHECK(c->recv == weir_unix_recv);
        WEIR_CHECK(c->send == weir_unix_send);
        WEIR_CHECK(c->pool == NULL);
        WEIR_CHECK(c->log == pc.log);
        WEIR_CHECK(c->number != 0);
        WEIR_CHECK_INT(t.cycle.free_connection_n, 1);
        WEIR_CHECK_INT(test_connect_reads, 1);
        WEIR_CHECK_INT(test_connect_writes, rc == WEIR_AGAIN ? 1 : 0);
        WEIR_CHECK(fcntl(c->fd, F_GETFL) & O_NONBLOCK);
        WEIR_CHECK(fcntl(c->fd, F_GETFD) & FD_CLOEXEC);

        nodelay = 0;
        len = sizeof(int);
        WEIR_CHECK(getsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &nodelay,
                              &len) == 0 && nodelay);

        if (rc == WEIR_AGAIN) {
            WEIR_CHECK(test_connect_wait_writable(c->fd));
        }

        WEIR_CHECK_INT(weir_event_connect_result(&pc), WEIR_OK);

        weir_close_connection(c);
        WEIR_CHECK_INT(t.cycle.free_connection_n, 2);
    }

    close(ls);
    test_connect_teardown(&t);
}


WEIR_UNIT_TEST(event_connect_peer_refused)
{
    int                      ls;
    weir_int_t               rc;
    test_connect_t           t;
    weir_peer_connection_t   pc;

    test_connect_setup(&t, &pc);

    /* a port that was free a moment ago: nothing listens there */
    ls = test_connect_listener(&t.sin);
    if (!WEIR_CHECK(ls != -1)) {
        test_connect_teardown(&t);
        return;
    }

    close(ls);

    rc = weir_event_connect_peer(&pc);

    if (rc == WEIR_AGAIN) {
        WEIR_CHECK(test_connect_wait_writable(pc.connection->fd));
        WEIR_CHECK_INT(weir_event_connect_result(&pc), WEIR_ERROR);
        weir_close_connection(pc.connection);

    } else {
        WEIR_CHECK_INT(rc, WEIR_DECLINED);
        WEIR_CHECK(pc.connection == NULL);
    }

    WEIR_CHECK(weir_unit_log_has("connect() to 127.0.0.1:test failed"));
    WEIR_CHECK(weir_unit_log_has("[error]"));
    WEIR_CHECK_INT(t.cycle.free_connection_n, 2);

    test_connect_teardown(&t);
}


WEIR_UNIT_TEST(event_connect_peer_unix)
{
    int                      ls;
    weir_int_t               rc;
    test_connect_t           t;
    struct sockaddr_un       sun;
    weir_peer_connection_t   pc;

    test_connect_setup(&t, &pc);

    weir_memzero(&sun, sizeof(struct sockaddr_un));
    sun.sun_family = AF_UNIX;
    snprintf(sun.sun_path, sizeof(sun.sun_path), "/tmp/weir-unit-%d.sock",
             (int) getpid());
    (void) unlink(sun.sun_path);

    /* no such socket yet: this peer fails, the next may be tried */
    t.get_rc = WEIR_OK;
    pc.get = weir_event_get_peer;
    pc.sockaddr = (struct sockaddr *) &sun;
    pc.socklen = sizeof(struct sockaddr_un);
    pc.name = &t.name;

    WEIR_CHECK_INT(weir_event_connect_peer(&pc), WEIR_DECLINED);
    WEIR_CHECK(pc.connection == NULL);

    ls = socket(AF_UNIX, SOCK_STREAM, 0);
    WEIR_REQUIRE(ls != -1);

    if (WEIR_CHECK(bind(ls, (struct sockaddr *) &sun,
                        sizeof(struct sockaddr_un)) == 0
                   && listen(ls, 4) == 0))
    {
        rc = weir_event_connect_peer(&pc);
        WEIR_CHECK(rc == WEIR_OK || rc == WEIR_AGAIN);

        if (WEIR_CHECK(pc.connection != NULL)) {
            WEIR_CHECK_INT(pc.connection->tcp_nodelay,
                           WEIR_TCP_NODELAY_DISABLED);
            weir_close_connection(pc.connection);
        }
    }

    close(ls);
    (void) unlink(sun.sun_path);
    test_connect_teardown(&t);
}


WEIR_UNIT_TEST(event_connect_peer_get_and_limits)
{
    int                      ls;
    test_connect_t           t;
    weir_connection_t       *c;
    weir_peer_connection_t   pc;

    test_connect_setup(&t, &pc);

    /* the balancer's answers pass through */
    t.get_rc = WEIR_BUSY;
    WEIR_CHECK_INT(weir_event_connect_peer(&pc), WEIR_BUSY);
    t.get_rc = WEIR_ERROR;
    WEIR_CHECK_INT(weir_event_connect_peer(&pc), WEIR_ERROR);
    t.get_rc = WEIR_DONE;
    WEIR_CHECK_INT(weir_event_connect_peer(&pc), WEIR_DONE);
    WEIR_CHECK(pc.cached);
    WEIR_CHECK_INT(t.cycle.free_connection_n, 2);

    /* out of connections */
    t.get_rc = WEIR_OK;
    ls = test_connect_listener(&t.sin);
    WEIR_REQUIRE(ls != -1);

    c = t.cycle.free_connections;
    t.cycle.free_connections = NULL;
    t.cycle.free_connection_n = 0;

    WEIR_CHECK_INT(weir_event_connect_peer(&pc), WEIR_ERROR);
    WEIR_CHECK(weir_unit_log_has("worker_connections are not enough"));

    t.cycle.free_connections = c;
    t.cycle.free_connection_n = 2;

    /* no address to connect to */
    pc.get = weir_event_get_peer;
    pc.sockaddr = NULL;
    WEIR_CHECK_INT(weir_event_connect_peer(&pc), WEIR_ERROR);

    close(ls);
    test_connect_teardown(&t);
}


/* ---- review r2: limits, leaks and the retry after a stale connection */


/* the open descriptors of this process */

static int
test_rr_fds(void)
{
    int   fd, n;

    n = 0;

    for (fd = 0; fd < 1024; fd++) {
        if (fcntl(fd, F_GETFD) != -1) {
            n++;
        }
    }

    return n;
}


static weir_int_t
test_connect_add_fails(weir_event_t *ev, weir_int_t event, weir_uint_t flags)
{
    (void) ev;
    (void) event;
    (void) flags;

    return WEIR_ERROR;
}


WEIR_UNIT_TEST(event_connect_peer_error_paths_leak_nothing)
{
    int                      ls, fds;
    test_connect_t           t;
    weir_connection_t       *c;
    weir_peer_connection_t   pc;

    test_connect_setup(&t, &pc);

    ls = test_connect_listener(&t.sin);
    WEIR_REQUIRE(ls != -1);

    fds = test_rr_fds();

    /* out of connections: the socket is closed again */
    c = t.cycle.free_connections;
    t.cycle.free_connections = NULL;
    t.cycle.free_connection_n = 0;

    WEIR_CHECK_INT(weir_event_connect_peer(&pc), WEIR_ERROR);
    WEIR_CHECK(pc.connection == NULL);
    WEIR_CHECK_INT(test_rr_fds(), fds);

    t.cycle.free_connections = c;
    t.cycle.free_connection_n = 2;

    /* the backend refuses the descriptor: socket and connection go
     * back */
    weir_event_actions.add = test_connect_add_fails;

    WEIR_CHECK_INT(weir_event_connect_peer(&pc), WEIR_ERROR);
    WEIR_CHECK(pc.connection == NULL);
    WEIR_CHECK_INT(test_rr_fds(), fds);
    WEIR_CHECK_INT(t.cycle.free_connection_n, 2);

    close(ls);
    test_connect_teardown(&t);
}


/* one request tries every peer in turn: the tried bitmap must cover
 * groups larger than one word, primary and backup */

static weir_uint_t
test_rr_try_all(test_rr_t *t, unsigned base, weir_uint_t n, unsigned bbase,
    weir_uint_t nb)
{
    unsigned                 port;
    weir_uint_t              i, got;
    unsigned char            seen[256];
    weir_peer_connection_t  *pc;

    weir_memzero(seen, sizeof(seen));

    pc = test_rr_request(t);
    if (pc == NULL) {
        return 0;
    }

    got = 0;

    for (i = 0; i < n + nb + 2; i++) {
        if (pc->get(pc, pc->data) != WEIR_OK) {
            break;
        }

        port = weir_inet_get_port(pc->sockaddr);

        if (port >= base && port < base + n && !seen[port - base]) {
            seen[port - base] = 1;
            got++;

        } else if (port >= bbase && port < bbase + nb
                   && !seen[128 + port - bbase])
        {
            /* the backups only once every primary was tried */
            if (got < n) {
                return 0;
            }

            seen[128 + port - bbase] = 1;
            got++;

        } else {
            return 0;
        }

        /* not WEIR_PEER_FAILED: max_fails would take peers out of the
         * next requests, not of this one */
        pc->free(pc, pc->data, WEIR_PEER_NEXT);
    }

    return got;
}


WEIR_UNIT_TEST(http_upstream_rr_tried_bitmap_large_groups)
{
    char                  *addr;
    test_rr_t              t;
    weir_uint_t            i;
    test_rr_server_t       servers[180];
    weir_pool_t           *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    /* 70 primary peers */
    for (i = 0; i < 70; i++) {
        addr = weir_pnalloc(pool, 32);
        WEIR_REQUIRE(addr != NULL);
        snprintf(addr, 32, "127.0.0.1:%u", (unsigned) (9000 + i));
        weir_memzero(&servers[i], sizeof(test_rr_server_t));
        servers[i].addr = addr;
        servers[i].weight = 1 + i % 3;
    }

    weir_memzero(&servers[70], sizeof(test_rr_server_t));

    WEIR_REQUIRE(test_rr_group(&t, servers) == WEIR_OK);
    WEIR_CHECK_INT(test_rr_try_all(&t, 9000, 70, 0, 0), 70);

    /* 2 primary and 100 backup peers: the backups' bitmap is the larger
     * one */
    for (i = 0; i < 102; i++) {
        addr = weir_pnalloc(pool, 32);
        WEIR_REQUIRE(addr != NULL);
        snprintf(addr, 32, "127.0.0.1:%u",
                 (unsigned) (i < 2 ? 9100 + i : 9200 + i - 2));
        weir_memzero(&servers[i], sizeof(test_rr_server_t));
        servers[i].addr = addr;
        servers[i].backup = (i >= 2);
    }

    weir_memzero(&servers[102], sizeof(test_rr_server_t));

    WEIR_REQUIRE(test_rr_group(&t, servers) == WEIR_OK);
    WEIR_CHECK_INT(test_rr_try_all(&t, 9100, 2, 9200, 100), 102);
}


/* a lone backup peer is no "single" group: its failures count as any
 * other peer's (nginx: backup->single = 0) */

WEIR_UNIT_TEST(http_upstream_rr_single_backup_counts_failures)
{
    time_t                   saved;
    test_rr_t                t;
    weir_peer_connection_t  *pc;

    test_rr_server_t  servers[] = {
        { "127.0.0.1:8001", 1, 1, 10, 0, 0, 1 },
        { "127.0.0.1:8002", 1, 1, 10, 0, 1, 0 },
        { NULL, 0, 0, 0, 0, 0, 0 }
    };

    saved = weir_cached_time_sec;
    weir_cached_time_sec = 400000;

    WEIR_REQUIRE(test_rr_group(&t, servers) == WEIR_OK);

    pc = test_rr_request(&t);
    WEIR_REQUIRE(pc != NULL);
    WEIR_CHECK_INT(pc->tries, 1);
    WEIR_REQUIRE(pc->get(pc, pc->data) == WEIR_OK);
    WEIR_CHECK_INT(weir_inet_get_port(pc->sockaddr), 8002);

    weir_unit_log_reset();
    pc->free(pc, pc->data, WEIR_PEER_FAILED);
    WEIR_CHECK(weir_unit_log_has("upstream server temporarily disabled"));

    /* out for fail_timeout, as a primary peer would be */
    WEIR_CHECK_INT(test_rr_pick(&t, 0), 0);

    weir_cached_time_sec += 11;
    WEIR_CHECK_INT(test_rr_pick(&t, 0), 8002);

    weir_cached_time_sec = saved;
}


/*
 * The retry after a stale cached connection (weir_http_upstream.c,
 * same_peer): the core keeps the attempt's peer (no free, no second get)
 * and connects again to pc->sockaddr through weir_event_get_peer. What
 * the balancers must guarantee for that: the address and name get set
 * stay valid and unchanged until free, a lone peer included, and the one
 * free at the end releases the peer once and counts nothing else.
 */

WEIR_UNIT_TEST(http_upstream_rr_peer_held_across_a_reconnect)
{
    test_rr_t                      t;
    socklen_t                      socklen;
    weir_str_t                    *name;
    struct sockaddr               *sockaddr;
    weir_peer_connection_t        *pc;
    weir_http_upstream_rr_peer_t  *a;

    test_rr_server_t  one[] = {
        { "127.0.0.1:8001", 1, 1, 10, 0, 0, 0 },
        { NULL, 0, 0, 0, 0, 0, 0 }
    };

    WEIR_REQUIRE(test_rr_group(&t, one) == WEIR_OK);
    a = ((weir_http_upstream_rr_peers_t *) t.us.peer.data)->peer;

    pc = test_rr_request(&t);
    WEIR_REQUIRE(pc != NULL);
    WEIR_REQUIRE(pc->get(pc, pc->data) == WEIR_OK);

    sockaddr = pc->sockaddr;
    socklen = pc->socklen;
    name = pc->name;
    WEIR_CHECK_INT(a->state->conns, 1);

    /* what the core does: the held peer, through the plain get hook */
    WEIR_CHECK_INT(weir_event_get_peer(pc, NULL), WEIR_OK);
    WEIR_CHECK(pc->sockaddr == sockaddr && pc->socklen == socklen
               && pc->name == name);
    WEIR_CHECK_INT(weir_inet_get_port(pc->sockaddr), 8001);
    WEIR_CHECK_INT(a->state->conns, 1);

    pc->free(pc, pc->data, 0);
    WEIR_CHECK_INT(a->state->conns, 0);
    WEIR_CHECK_INT(a->state->fails, 0);
    WEIR_CHECK_INT(pc->tries, 0);
}
