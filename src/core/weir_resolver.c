/*
 * weir_resolver.c: run-time DNS on c-ares, in the event loop (see
 * weir_resolver.h for the interface and the caching rules).
 *
 * c-ares owns its sockets: it tells us through the socket-state callback
 * which descriptors to watch, and we hand readiness back with
 * ares_process_fd(). Each descriptor gets a weir_connection_t (its events
 * only; c-ares opens and closes the socket). One timer per channel is
 * armed at ares_timeout() for its retransmissions. Each waiting caller
 * has its own timer, resolver_timeout.
 */

#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_event_posted.h"
#include "weir_resolver.h"

#if (WEIR_HAVE_CARES)

#include <ares.h>
#include <netdb.h>

typedef struct {
    weir_rbtree_node_t          node;       /* key: hash of the name */
    weir_queue_t                lru;        /* head: most recently used */
    weir_resolver_t            *resolver;
    unsigned char              *name;       /* lowercase */
    size_t                      len;
    time_t                      expire;
    int                         status;     /* ARES_SUCCESS or the error */
    weir_uint_t                 naddrs;
    weir_sockaddr_t            *addrs;
    socklen_t                  *socklens;
    weir_queue_t                waiters;
    unsigned                    pending:1;
} weir_resolver_node_t;

struct weir_resolver_s {
    /* configuration */
    char                       *servers;    /* "127.0.0.1:53,[::1]:53" */
    time_t                      valid;      /* 0: the TTL */
    weir_uint_t                 max_nodes;
    unsigned                    ipv4:1;
    unsigned                    ipv6:1;
    weir_str_t                  where;      /* "file:line" */

    /* this worker's */
    ares_channel                channel;
    unsigned                    opened:1;
    unsigned                    failed:1;
    weir_log_t                 *log;
    weir_event_t                timer;
    weir_rbtree_t               tree;
    weir_rbtree_node_t          sentinel;
    weir_queue_t                lru;
    weir_uint_t                 nnodes;
    weir_array_t                conns;      /* of weir_connection_t *  */
};

static weir_uint_t  weir_resolver_library_ok;

static void weir_resolver_cleanup(void *data);
static weir_int_t weir_resolver_open(weir_resolver_t *res);
static void weir_resolver_sock_state(void *data, ares_socket_t fd,
    int readable, int writable);
static void weir_resolver_io_handler(weir_event_t *ev);
static void weir_resolver_timer_handler(weir_event_t *ev);
static void weir_resolver_arm(weir_resolver_t *res);
static void weir_resolver_insert(weir_rbtree_node_t *temp,
    weir_rbtree_node_t *node, weir_rbtree_node_t *sentinel);
static weir_int_t weir_resolver_cmp(unsigned char *n1, size_t l1,
    unsigned char *n2, size_t l2);
static weir_resolver_node_t *weir_resolver_lookup(weir_resolver_t *res,
    unsigned char *name, size_t len, uint32_t hash);
static weir_resolver_node_t *weir_resolver_new_node(weir_resolver_t *res,
    unsigned char *name, size_t len, uint32_t hash);
static void weir_resolver_free_node(weir_resolver_node_t *rn);
static void weir_resolver_trim(weir_resolver_t *res);
static void weir_resolver_query(weir_resolver_node_t *rn);
static void weir_resolver_answer(void *arg, int status, int timeouts,
    struct ares_addrinfo *ai);
static void weir_resolver_fill(weir_resolver_ctx_t *ctx,
    weir_resolver_node_t *rn);
static void weir_resolver_ctx_timeout(weir_event_t *ev);
static void weir_resolver_ctx_cleanup(void *data);


/* ---- configuration ---------------------------------------------------- */

weir_resolver_t *
weir_resolver_create(weir_conf_t *cf)
{
    size_t                len;
    weir_int_t            n;
    weir_str_t           *value, s;
    weir_uint_t           i, j, naddrs;
    weir_addr_t          *a;
    weir_array_t          addrs;
    unsigned char        *p, *last;
    weir_resolver_t      *res;
    weir_pool_cleanup_t  *cln;

    value = cf->args->elts;

    res = weir_pcalloc(cf->pool, sizeof(weir_resolver_t));
    if (res == NULL) {
        return NULL;
    }

    res->ipv4 = 1;
    res->ipv6 = 1;
    res->max_nodes = WEIR_RESOLVER_DEFAULT_CACHE;

    if (weir_array_init(&addrs, cf->pool, 2, sizeof(weir_addr_t))
        != WEIR_OK)
    {
        return NULL;
    }

    for (i = 1; i < cf->args->nelts; i++) {

        if (value[i].len > 6
            && weir_strncmp(value[i].data, "valid=", 6) == 0)
        {
            s.data = value[i].data + 6;
            s.len = value[i].len - 6;
            n = weir_parse_time(&s, 1);
            if (n == WEIR_ERROR || n == 0) {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "invalid parameter \"%.*s\"",
                                    WEIR_STR_ARG(value[i]));
                return NULL;
            }
            res->valid = (time_t) n;
            continue;
        }

        if (value[i].len > 5
            && weir_strncmp(value[i].data, "ipv6=", 5) == 0)
        {
            if (value[i].len == 7
                && weir_strncmp(value[i].data + 5, "on", 2) == 0)
            {
                res->ipv6 = 1;

            } else if (value[i].len == 8
                       && weir_strncmp(value[i].data + 5, "off", 3) == 0)
            {
                res->ipv6 = 0;

            } else {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "invalid parameter \"%.*s\"",
                                    WEIR_STR_ARG(value[i]));
                return NULL;
            }
            continue;
        }

        if (value[i].len > 6
            && weir_strncmp(value[i].data, "cache=", 6) == 0)
        {
            n = weir_atoi(value[i].data + 6, value[i].len - 6);
            if (n == WEIR_ERROR || n < 1) {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "invalid parameter \"%.*s\"",
                                    WEIR_STR_ARG(value[i]));
                return NULL;
            }
            res->max_nodes = (weir_uint_t) n;
            continue;
        }

        /* an address: an IP literal, [v6] or a name resolved now, with
         * port 53 unless one is given */

        if (weir_strlchr(value[i].data, value[i].data + value[i].len, '=')
            != NULL)
        {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid parameter \"%.*s\"",
                                WEIR_STR_ARG(value[i]));
            return NULL;
        }

        if (value[i].len > 5
            && weir_strncmp(value[i].data, "unix:", 5) == 0)
        {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "a resolver address cannot be a unix "
                                "socket: \"%.*s\"", WEIR_STR_ARG(value[i]));
            return NULL;
        }

        naddrs = addrs.nelts;
        p = (unsigned char *) weir_parse_addr_port(cf->pool, &value[i], 53,
                                                   &addrs);
        if (p != NULL) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "%s in resolver \"%.*s\"", (char *) p,
                                WEIR_STR_ARG(value[i]));
            return NULL;
        }

        if (addrs.nelts == naddrs) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "no address for resolver \"%.*s\"",
                                WEIR_STR_ARG(value[i]));
            return NULL;
        }
    }

    if (addrs.nelts == 0) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "\"resolver\" needs at least one address");
        return NULL;
    }

    if (!res->ipv4 && !res->ipv6) {
        return NULL;
    }

    /* the servers as c-ares takes them: "a:p,[b]:p" */

    a = addrs.elts;
    len = 0;

    for (j = 0; j < addrs.nelts; j++) {
        len += a[j].name.len + 1;
    }

    res->servers = weir_pnalloc(cf->pool, len + 1);
    if (res->servers == NULL) {
        return NULL;
    }

    p = (unsigned char *) res->servers;
    last = p + len + 1;

    for (j = 0; j < addrs.nelts; j++) {
        p = weir_slprintf(p, last, "%s%.*s", j ? "," : "",
                          WEIR_STR_ARG(a[j].name));
    }

    *p = '\0';

    if (weir_pstrfmt(cf->pool, &res->where, "%.*s:%lu",
                     cf->conf_file ? (int) cf->conf_file->file.name.len : 1,
                     cf->conf_file ? (char *) cf->conf_file->file.name.data
                                   : "-",
                     (unsigned long) (cf->conf_file
                                      ? cf->conf_file->line : 0))
        != WEIR_OK)
    {
        return NULL;
    }

    cln = weir_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NULL;
    }

    cln->handler = weir_resolver_cleanup;
    cln->data = res;

    return res;
}


/* the configuration's pool goes (a worker's exit, or a failed or
 * replaced configuration in the master, where nothing was opened) */

static void
weir_resolver_cleanup(void *data)
{
    weir_resolver_t       *res = data;
    weir_queue_t          *q;
    weir_resolver_node_t  *rn;

    if (!res->opened) {
        return;
    }

    res->opened = 0;

    if (res->timer.timer_set) {
        weir_event_del_timer(&res->timer);
    }

    /* answers with ARES_EDESTRUCTION, which touch nothing; the sockets
     * are closed through the state callback first */
    ares_destroy(res->channel);

    while (!weir_queue_empty(&res->lru)) {
        q = weir_queue_head(&res->lru);
        rn = weir_queue_data(q, weir_resolver_node_t, lru);
        weir_resolver_free_node(rn);
    }
}


/* ---- the channel ------------------------------------------------------ */

static weir_int_t
weir_resolver_open(weir_resolver_t *res)
{
    int                  rc;
    struct ares_options  opts;

    if (res->opened) {
        return WEIR_OK;
    }

    if (res->failed) {
        return WEIR_ERROR;
    }

    res->log = weir_cycle->log;

    if (!weir_resolver_library_ok) {
        rc = ares_library_init(ARES_LIB_INIT_ALL);
        if (rc != ARES_SUCCESS) {
            weir_log_error(WEIR_LOG_ALERT, res->log, 0,
                           "ares_library_init() failed: %s",
                           ares_strerror(rc));
            res->failed = 1;
            return WEIR_ERROR;
        }

        weir_resolver_library_ok = 1;
    }

    weir_memzero(&opts, sizeof(struct ares_options));

    /* DNS only (no hosts file, no search domains): what the names of
     * requests mean must not depend on the machine's resolv.conf */
    opts.flags = ARES_FLAG_NOSEARCH | ARES_FLAG_NOALIASES;
    opts.lookups = (char *) "b";
    opts.ndots = 1;
    opts.timeout = 2000;
    opts.tries = 3;
    opts.sock_state_cb = weir_resolver_sock_state;
    opts.sock_state_cb_data = res;

    rc = ares_init_options(&res->channel, &opts,
                           ARES_OPT_FLAGS | ARES_OPT_LOOKUPS | ARES_OPT_NDOTS
                           | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES
                           | ARES_OPT_SOCK_STATE_CB);
    if (rc != ARES_SUCCESS) {
        weir_log_error(WEIR_LOG_ALERT, res->log, 0,
                       "ares_init_options() failed: %s", ares_strerror(rc));
        res->failed = 1;
        return WEIR_ERROR;
    }

    rc = ares_set_servers_ports_csv(res->channel, res->servers);
    if (rc != ARES_SUCCESS) {
        weir_log_error(WEIR_LOG_ALERT, res->log, 0,
                       "resolver \"%s\" (%.*s): %s", res->servers,
                       WEIR_STR_ARG(res->where), ares_strerror(rc));
        ares_destroy(res->channel);
        res->failed = 1;
        return WEIR_ERROR;
    }

    if (weir_array_init(&res->conns, weir_cycle->pool, 4,
                        sizeof(weir_connection_t *))
        != WEIR_OK)
    {
        ares_destroy(res->channel);
        res->failed = 1;
        return WEIR_ERROR;
    }

    weir_rbtree_init(&res->tree, &res->sentinel, weir_resolver_insert);
    weir_queue_init(&res->lru);

    res->timer.handler = weir_resolver_timer_handler;
    res->timer.data = res;
    res->timer.log = res->log;
    res->timer.cancelable = 1;

    res->opened = 1;

    return WEIR_OK;
}


/* c-ares wants (or no longer wants) a socket watched */

static void
weir_resolver_sock_state(void *data, ares_socket_t fd, int readable,
    int writable)
{
    weir_uint_t          i;
    weir_event_t        *rev, *wev;
    weir_resolver_t     *res = data;
    weir_connection_t   *c, **cp;

    cp = res->conns.elts;
    c = NULL;

    for (i = 0; i < res->conns.nelts; i++) {
        if (cp[i]->fd == fd) {
            c = cp[i];
            break;
        }
    }

    if (!readable && !writable) {
        if (c == NULL) {
            return;
        }

        /* c-ares closes the socket next: the kernel drops it from the
         * backend's set, as for any closed descriptor */
        if (weir_event_actions.del_conn) {
            (void) weir_del_conn(c, WEIR_CLOSE_EVENT);

        } else {
            if (c->read->active) {
                (void) weir_del_event(c->read, WEIR_READ_EVENT,
                                      WEIR_CLOSE_EVENT);
            }

            if (c->write->active) {
                (void) weir_del_event(c->write, WEIR_WRITE_EVENT,
                                      WEIR_CLOSE_EVENT);
            }
        }

        if (c->read->posted) {
            weir_delete_posted_event(c->read);
        }

        if (c->write->posted) {
            weir_delete_posted_event(c->write);
        }

        c->read->closed = 1;
        c->write->closed = 1;

        cp[i] = cp[res->conns.nelts - 1];
        res->conns.nelts--;

        weir_free_connection(c);
        c->fd = (weir_fd_t) -1;
        return;
    }

    if (c == NULL) {
        c = weir_get_connection(fd, res->log);
        if (c == NULL) {
            /* no free connection: the query times out */
            return;
        }

        cp = weir_array_push(&res->conns);
        if (cp == NULL) {
            weir_free_connection(c);
            return;
        }

        *cp = c;

        c->data = res;
        c->log = res->log;
        c->shared = 0;
        c->read->handler = weir_resolver_io_handler;
        c->write->handler = weir_resolver_io_handler;
        c->read->log = res->log;
        c->write->log = res->log;
        c->read->cancelable = 1;
        c->write->cancelable = 1;
    }

    rev = c->read;
    wev = c->write;

    if (weir_event_flags & WEIR_USE_CLEAR_EVENT) {
        /* edge-triggered: both directions once, for the socket's life */
        if (!rev->active && !wev->active) {
            if (weir_event_actions.add_conn) {
                (void) weir_add_conn(c);

            } else {
                (void) weir_add_event(rev, WEIR_READ_EVENT,
                                      WEIR_CLEAR_EVENT);
                (void) weir_add_event(wev, WEIR_WRITE_EVENT,
                                      WEIR_CLEAR_EVENT);
            }
        }

        return;
    }

    if (readable && !rev->active) {
        (void) weir_add_event(rev, WEIR_READ_EVENT, WEIR_LEVEL_EVENT);
    }

    if (writable && !wev->active) {
        (void) weir_add_event(wev, WEIR_WRITE_EVENT, WEIR_LEVEL_EVENT);

    } else if (!writable && wev->active) {
        (void) weir_del_event(wev, WEIR_WRITE_EVENT, WEIR_LEVEL_EVENT);
    }
}


static void
weir_resolver_io_handler(weir_event_t *ev)
{
    int                 fd, n;
    char                byte;
    weir_resolver_t    *res;
    weir_connection_t  *c;

    c = ev->data;
    res = c->data;
    fd = c->fd;

    if (ev->write) {
        ev->ready = 0;
        ares_process_fd(res->channel, ARES_SOCKET_BAD, fd);
        weir_resolver_arm(res);
        return;
    }

    /* c-ares reads one datagram per call on some versions: with an
     * edge-triggered backend, read until nothing is left (bounded) */

    for (n = 0; n < 64; n++) {
        ares_process_fd(res->channel, fd, ARES_SOCKET_BAD);

        if (c->fd != fd || c->read->closed) {
            /* closed by c-ares meanwhile (the connection is free) */
            break;
        }

        if (recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) <= 0) {
            break;
        }
    }

    if (c->fd == fd && !c->read->closed) {
        ev->ready = 0;
    }

    weir_resolver_arm(res);
}


static void
weir_resolver_timer_handler(weir_event_t *ev)
{
    weir_resolver_t  *res = ev->data;

    ares_process_fd(res->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
    weir_resolver_arm(res);
}


static void
weir_resolver_arm(weir_resolver_t *res)
{
    weir_msec_t      ms;
    struct timeval   tv, *tvp;

    if (!res->opened) {
        return;
    }

    tvp = ares_timeout(res->channel, NULL, &tv);

    if (tvp == NULL) {
        if (res->timer.timer_set) {
            weir_event_del_timer(&res->timer);
        }
        return;
    }

    ms = (weir_msec_t) tvp->tv_sec * 1000 + (weir_msec_t) tvp->tv_usec / 1000
         + 1;

    weir_event_add_timer(&res->timer, ms);
}


/* ---- the cache -------------------------------------------------------- */

/* by hash, then by name: equal hashes of different names stay findable */

static weir_int_t
weir_resolver_cmp(unsigned char *n1, size_t l1, unsigned char *n2, size_t l2)
{
    if (l1 != l2) {
        return (l1 < l2) ? -1 : 1;
    }

    return weir_memcmp(n1, n2, l1);
}


static void
weir_resolver_insert(weir_rbtree_node_t *temp, weir_rbtree_node_t *node,
    weir_rbtree_node_t *sentinel)
{
    weir_rbtree_node_t     **p;
    weir_resolver_node_t    *rn, *rt;

    for ( ;; ) {
        if (node->key != temp->key) {
            p = (node->key < temp->key) ? &temp->left : &temp->right;

        } else {
            rn = (weir_resolver_node_t *) node;
            rt = (weir_resolver_node_t *) temp;
            p = (weir_resolver_cmp(rn->name, rn->len, rt->name, rt->len) < 0)
                ? &temp->left : &temp->right;
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


static weir_resolver_node_t *
weir_resolver_lookup(weir_resolver_t *res, unsigned char *name, size_t len,
    uint32_t hash)
{
    weir_int_t             rc;
    weir_rbtree_node_t    *node, *sentinel;
    weir_resolver_node_t  *rn;

    node = res->tree.root;
    sentinel = res->tree.sentinel;

    while (node != sentinel) {
        if (hash < node->key) {
            node = node->left;
            continue;
        }

        if (hash > node->key) {
            node = node->right;
            continue;
        }

        rn = (weir_resolver_node_t *) node;

        rc = weir_resolver_cmp(name, len, rn->name, rn->len);
        if (rc == 0) {
            return rn;
        }

        node = (rc < 0) ? node->left : node->right;
    }

    return NULL;
}


static weir_resolver_node_t *
weir_resolver_new_node(weir_resolver_t *res, unsigned char *name,
    size_t len, uint32_t hash)
{
    weir_resolver_node_t  *rn;

    weir_resolver_trim(res);

    rn = weir_calloc(sizeof(weir_resolver_node_t) + len, res->log);
    if (rn == NULL) {
        return NULL;
    }

    rn->resolver = res;
    rn->name = (unsigned char *) (rn + 1);
    rn->len = len;
    weir_memcpy(rn->name, name, len);
    rn->node.key = hash;
    weir_queue_init(&rn->waiters);

    weir_rbtree_insert(&res->tree, &rn->node);
    weir_queue_insert_head(&res->lru, &rn->lru);
    res->nnodes++;

    return rn;
}


static void
weir_resolver_free_node(weir_resolver_node_t *rn)
{
    weir_resolver_t  *res = rn->resolver;

    weir_rbtree_delete(&res->tree, &rn->node);
    weir_queue_remove(&rn->lru);
    res->nnodes--;

    weir_free(rn->addrs);
    weir_free(rn->socklens);
    weir_free(rn);
}


/* room for one more: expired answers go first, then the least recently
 * used ones; a name with a query under way stays */

static void
weir_resolver_trim(weir_resolver_t *res)
{
    weir_uint_t            n;
    weir_queue_t          *q, *prev;
    weir_resolver_node_t  *rn;

    if (res->nnodes < res->max_nodes) {
        return;
    }

    n = 0;

    for (q = weir_queue_last(&res->lru);
         q != weir_queue_sentinel(&res->lru) && n < 64;
         q = prev)
    {
        prev = weir_queue_prev(q);
        rn = weir_queue_data(q, weir_resolver_node_t, lru);
        n++;

        if (!rn->pending) {
            weir_resolver_free_node(rn);

            if (res->nnodes < res->max_nodes) {
                return;
            }
        }
    }
}


/* ---- lookups ---------------------------------------------------------- */

weir_int_t
weir_resolve(weir_resolver_ctx_t *ctx)
{
    size_t                 len;
    uint32_t               hash;
    unsigned char          name[WEIR_RESOLVER_MAX_NAME + 1];
    weir_resolver_t       *res;
    weir_pool_cleanup_t   *cln;
    weir_resolver_node_t  *rn;

    res = ctx->resolver;
    ctx->status = WEIR_ERROR;
    ctx->addrs = NULL;
    ctx->naddrs = 0;

    len = ctx->name.len;

    if (len && ctx->name.data[len - 1] == '.') {
        len--;
    }

    if (len == 0 || len > WEIR_RESOLVER_MAX_NAME) {
        ctx->error = "invalid name";
        return WEIR_OK;
    }

    weir_strlow(name, ctx->name.data, len);

    if (weir_resolver_open(res) != WEIR_OK) {
        return WEIR_ERROR;
    }

    hash = (uint32_t) weir_hash_key(name, len);

    rn = weir_resolver_lookup(res, name, len, hash);

    if (rn != NULL && !rn->pending && rn->expire > weir_time()) {
        weir_queue_remove(&rn->lru);
        weir_queue_insert_head(&res->lru, &rn->lru);
        weir_resolver_fill(ctx, rn);
        return WEIR_OK;
    }

    if (rn == NULL) {
        rn = weir_resolver_new_node(res, name, len, hash);
        if (rn == NULL) {
            return WEIR_ERROR;
        }
    }

    if (!rn->pending) {
        weir_resolver_query(rn);

        if (!rn->pending) {
            /* answered at once (a failure c-ares saw without asking) */
            weir_resolver_fill(ctx, rn);
            weir_resolver_arm(res);
            return WEIR_OK;
        }

        weir_resolver_arm(res);
    }

    if (!ctx->cleanup) {
        cln = weir_pool_cleanup_add(ctx->pool, 0);
        if (cln == NULL) {
            return WEIR_ERROR;
        }

        cln->handler = weir_resolver_ctx_cleanup;
        cln->data = ctx;
        ctx->cleanup = 1;
    }

    ctx->node = rn;
    ctx->waiting = 1;
    weir_queue_insert_tail(&rn->waiters, &ctx->queue);

    ctx->event.handler = weir_resolver_ctx_timeout;
    ctx->event.data = ctx;
    ctx->event.log = ctx->log;
    weir_event_add_timer(&ctx->event, ctx->timeout ? ctx->timeout : 30000);

    return WEIR_AGAIN;
}


void
weir_resolve_cancel(weir_resolver_ctx_t *ctx)
{
    if (!ctx->waiting) {
        return;
    }

    ctx->waiting = 0;
    weir_queue_remove(&ctx->queue);

    if (ctx->event.timer_set) {
        weir_event_del_timer(&ctx->event);
    }
}


static void
weir_resolver_ctx_cleanup(void *data)
{
    weir_resolve_cancel(data);
}


static void
weir_resolver_ctx_timeout(weir_event_t *ev)
{
    weir_resolver_ctx_t  *ctx = ev->data;

    weir_resolve_cancel(ctx);

    ctx->status = WEIR_ERROR;
    ctx->error = "timed out";
    ctx->addrs = NULL;
    ctx->naddrs = 0;

    ctx->handler(ctx);
}


static void
weir_resolver_query(weir_resolver_node_t *rn)
{
    char                        name[WEIR_RESOLVER_MAX_NAME + 1];
    weir_resolver_t            *res = rn->resolver;
    struct ares_addrinfo_hints  hints;

    weir_memcpy(name, rn->name, rn->len);
    name[rn->len] = '\0';

    weir_memzero(&hints, sizeof(struct ares_addrinfo_hints));
    hints.ai_family = (res->ipv4 && res->ipv6) ? AF_UNSPEC
                      : (res->ipv6 ? AF_INET6 : AF_INET);
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = ARES_AI_NOSORT;

    rn->pending = 1;

    weir_log_debug(res->log, 0, "resolver: querying \"%s\"", name);

    ares_getaddrinfo(res->channel, name, NULL, &hints, weir_resolver_answer,
                     rn);
}


static void
weir_resolver_answer(void *arg, int status, int timeouts,
    struct ares_addrinfo *ai)
{
    int                         ttl;
    time_t                      valid;
    weir_uint_t                 n, pass;
    weir_queue_t               *q;
    weir_resolver_t            *res;
    weir_resolver_ctx_t        *ctx;
    weir_resolver_node_t       *rn = arg;
    struct ares_addrinfo_node  *an;

    (void) timeouts;

    if (status == ARES_EDESTRUCTION) {
        if (ai) {
            ares_freeaddrinfo(ai);
        }
        return;
    }

    res = rn->resolver;
    rn->pending = 0;

    weir_free(rn->addrs);
    weir_free(rn->socklens);
    rn->addrs = NULL;
    rn->socklens = NULL;
    rn->naddrs = 0;

    ttl = -1;

    if (status == ARES_SUCCESS && ai) {
        n = 0;
        for (an = ai->nodes; an; an = an->ai_next) {
            if (an->ai_family == AF_INET || an->ai_family == AF_INET6) {
                n++;
            }
        }

        if (n > WEIR_RESOLVER_MAX_ADDRS) {
            n = WEIR_RESOLVER_MAX_ADDRS;
        }

        if (n) {
            rn->addrs = weir_alloc(n * sizeof(weir_sockaddr_t), res->log);
            rn->socklens = weir_alloc(n * sizeof(socklen_t), res->log);
            if (rn->addrs == NULL || rn->socklens == NULL) {
                n = 0;
                status = ARES_ENOMEM;
            }
        }

        /* IPv4 first, then IPv6, each in the server's order */

        for (pass = 0; pass < 2 && rn->naddrs < n; pass++) {
            for (an = ai->nodes; an && rn->naddrs < n; an = an->ai_next) {
                if (an->ai_family != (pass ? AF_INET6 : AF_INET)
                    || an->ai_addrlen > sizeof(weir_sockaddr_t))
                {
                    continue;
                }

                weir_memcpy(&rn->addrs[rn->naddrs], an->ai_addr,
                            an->ai_addrlen);
                rn->socklens[rn->naddrs] = an->ai_addrlen;
                rn->naddrs++;

                if (ttl < 0 || an->ai_ttl < ttl) {
                    ttl = an->ai_ttl;
                }
            }
        }

        if (status == ARES_SUCCESS && rn->naddrs == 0) {
            status = ARES_ENODATA;
        }
    }

    if (ai) {
        ares_freeaddrinfo(ai);
    }

    rn->status = status;

    switch (status) {

    case ARES_SUCCESS:
        valid = res->valid ? res->valid : (ttl > 0 ? ttl : 0);
        break;

    case ARES_ENOTFOUND:
    case ARES_ENODATA:
    case ARES_EBADNAME:
        valid = res->valid ? res->valid : WEIR_RESOLVER_NEGATIVE_TTL;
        break;

    default:
        valid = WEIR_RESOLVER_FAILURE_TTL;
        break;
    }

    rn->expire = weir_time() + valid;

    weir_log_debug(res->log, 0, "resolver: \"%.*s\": %s, %u address(es), "
                   "kept %ds", (int) rn->len, rn->name, ares_strerror(status),
                   (unsigned) rn->naddrs, (int) valid);

    /* each waiter leaves the queue before its handler runs: a handler
     * may cancel others or start new lookups */

    while (!weir_queue_empty(&rn->waiters)) {
        q = weir_queue_head(&rn->waiters);
        ctx = weir_queue_data(q, weir_resolver_ctx_t, queue);

        weir_resolve_cancel(ctx);
        weir_resolver_fill(ctx, rn);
        ctx->handler(ctx);
    }
}


/* the node's answer into the caller's pool, with its port */

static void
weir_resolver_fill(weir_resolver_ctx_t *ctx, weir_resolver_node_t *rn)
{
    size_t            len;
    weir_uint_t       i;
    weir_addr_t      *a;
    unsigned char    *text;
    struct sockaddr  *sa;

    ctx->addrs = NULL;
    ctx->naddrs = 0;

    if (rn->status != ARES_SUCCESS) {
        ctx->status = WEIR_ERROR;
        ctx->error = (rn->status == ARES_ETIMEOUT)
                     ? "timed out" : ares_strerror(rn->status);
        return;
    }

    a = weir_palloc(ctx->pool, rn->naddrs * sizeof(weir_addr_t));
    if (a == NULL) {
        ctx->status = WEIR_ERROR;
        ctx->error = "out of memory";
        return;
    }

    for (i = 0; i < rn->naddrs; i++) {
        sa = weir_palloc(ctx->pool, rn->socklens[i]);     /* aligned */
        text = weir_pnalloc(ctx->pool, WEIR_SOCKADDR_STRLEN);
        if (sa == NULL || text == NULL) {
            ctx->status = WEIR_ERROR;
            ctx->error = "out of memory";
            return;
        }

        weir_memcpy(sa, &rn->addrs[i], rn->socklens[i]);

        if (sa->sa_family == AF_INET6) {
            ((struct sockaddr_in6 *) sa)->sin6_port = htons(ctx->port);

        } else {
            ((struct sockaddr_in *) sa)->sin_port = htons(ctx->port);
        }

        len = weir_sock_ntop(sa, rn->socklens[i], text, WEIR_SOCKADDR_STRLEN,
                             1);

        a[i].sockaddr = sa;
        a[i].socklen = rn->socklens[i];
        a[i].name.data = text;
        a[i].name.len = len;
    }

    ctx->addrs = a;
    ctx->naddrs = rn->naddrs;
    ctx->status = WEIR_OK;
    ctx->error = NULL;
}


#else /* !WEIR_HAVE_CARES */

weir_resolver_t *
weir_resolver_create(weir_conf_t *cf)
{
    weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                        "\"resolver\" needs weir built with c-ares "
                        "(on Debian: apt-get install libc-ares-dev, then "
                        "configure again)");
    return NULL;
}


weir_int_t
weir_resolve(weir_resolver_ctx_t *ctx)
{
    ctx->status = WEIR_ERROR;
    ctx->error = "no resolver";
    return WEIR_ERROR;
}


void
weir_resolve_cancel(weir_resolver_ctx_t *ctx)
{
    (void) ctx;
}

#endif
