#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_http.h"
#include "weir_http_upstream_int.h"

/*
 * The session pool: multiplexed sessions to origins (HTTP/2 now), per
 * worker and group (us->sessions; one pool for requests without a
 * group). It wraps the peer hooks the keep-alive pool wrapped before it,
 * so the balancer still chooses every attempt's peer and hears how it
 * went:
 *
 *   get:   the balancer's peer, then a session to that (address, key)
 *          that is not draining and has room: a stream on it is the
 *          attempt's connection (WEIR_DONE, as a cached connection).
 *          None: WEIR_OK, the core connects, and once the connection
 *          (and its TLS) is up, weir_http_upstream_session_start makes
 *          it a session and opens the stream.
 *   free:  closes the stream (reset unless complete); a failure of the
 *          whole session reaches the balancer once.
 *
 * While an attempt opens a session (connect, TLS, nothing known of the
 * origin's SETTINGS yet), later attempts to the same (address, key) wait
 * for it rather than open a connection each: a burst of requests to a
 * fresh origin opens one connection per WEIR_HTTP_UPSTREAM_SESSION_ROOM
 * streams, not one per request. The waiters are woken when the session
 * is up (a stream on it, or on another with room, or, when none has
 * room, a connection of their own) or when the opener goes away (one of
 * them opens instead); when the opener's connection fails they go to
 * the next peer as it does (proxy_next_upstream) and only the opener's
 * failure is counted. With proxy_http_version auto the opener may learn
 * that the origin chose HTTP/1.1 (weir_http_upstream_session_declined):
 * then no session comes, and its waiters each connect alone, at once,
 * rather than wait for one another in turn.
 *
 * A session with no open stream is idle: it is closed after
 * keepalive_timeout, and when more than "keepalive N" sessions of the
 * group are idle, the one idle longest is closed. keepalive_requests
 * streams per session and keepalive_time drain a session (no new
 * stream; it closes when its last stream ends).
 */


/* the streams a session being opened is expected to take (RFC 9113
 * recommends origins allow 100 at least): the opener and its waiters */
#define WEIR_HTTP_UPSTREAM_SESSION_ROOM  100


typedef struct {
    weir_queue_t                          sessions; /* all of the pool */
    weir_queue_t                          opening;  /* openers */
    weir_queue_t                          idle;     /* head: newest */
    weir_uint_t                           nidle;
    weir_http_upstream_keepalive_conf_t   conf;
} weir_http_upstream_session_pool_t;


typedef struct weir_http_upstream_session_peer_s
    weir_http_upstream_session_peer_t;

/* per request: the hooks called through */
struct weir_http_upstream_session_peer_s {
    weir_http_upstream_session_pool_t    *pool;
    weir_http_upstream_t                 *upstream;
    weir_http_upstream_session_t         *session;  /* of the stream */
    void                                 *data;
    weir_event_get_peer_pt                original_get_peer;
    weir_event_free_peer_pt               original_free_peer;

    /* this attempt opens a session (in pool->opening): the waiters */
    weir_queue_t                          opening;
    weir_queue_t                          waiters;
    weir_uint_t                           nwaiters;

    /* this attempt waits for the session of opener */
    weir_http_upstream_session_peer_t    *opener;
    weir_queue_t                          wait_queue; /* in its waiters */
    weir_event_t                          wait;   /* woken, timed out */
    weir_uint_t                           opener_ft; /* how it failed */

    unsigned                              is_opener:1;
    unsigned                              opener_failed:1;
    /* woken by an opener whose origin chose HTTP/1.1: connects alone,
     * waits for no one */
    unsigned                              alone:1;
    /* the opener's failure was counted: this attempt's is not */
    unsigned                              not_counted:1;
};


static weir_int_t weir_http_upstream_session_get(weir_peer_connection_t *pc,
    void *data);
static void weir_http_upstream_session_free(weir_peer_connection_t *pc,
    void *data, weir_uint_t state);
static weir_http_upstream_session_pool_t *weir_http_upstream_session_pool(
    weir_http_upstream_srv_conf_t *us);
static weir_connection_t *weir_http_upstream_session_open(
    weir_http_upstream_session_peer_t *sp, weir_http_upstream_session_t *s);
static weir_uint_t weir_http_upstream_session_usable(
    weir_http_upstream_session_pool_t *pool, weir_http_upstream_session_t *s);
static void weir_http_upstream_session_idle_handler(weir_event_t *ev);
static void weir_http_upstream_session_remove(
    weir_http_upstream_session_t *s);
static void weir_http_upstream_session_end_stream(
    weir_http_upstream_session_peer_t *sp, weir_peer_connection_t *pc,
    weir_uint_t complete);
static weir_int_t weir_http_upstream_session_find(
    weir_http_upstream_session_peer_t *sp, weir_peer_connection_t *pc);
static void weir_http_upstream_session_wake_all(
    weir_http_upstream_session_peer_t *sp, weir_uint_t failed,
    weir_uint_t alone);
static void weir_http_upstream_session_unpark(
    weir_http_upstream_session_peer_t *sp);
static void weir_http_upstream_session_wait_handler(weir_event_t *ev);
static weir_uint_t weir_http_upstream_session_failure(
    weir_http_upstream_session_t *s);


/* requests without a group (proxy_pass to an address made of variables
 * that name no block) share this worker's pool */
static weir_http_upstream_session_pool_t  *weir_http_upstream_session_default;


weir_int_t
weir_http_upstream_session_init_peer(weir_http_request_t *r,
    weir_http_upstream_srv_conf_t *us)
{
    weir_http_upstream_t               *u;
    weir_http_upstream_session_peer_t  *sp;

    u = r->upstream;

    sp = weir_pcalloc(r->pool, sizeof(weir_http_upstream_session_peer_t));
    if (sp == NULL) {
        return WEIR_ERROR;
    }

    sp->pool = weir_http_upstream_session_pool(us);
    if (sp->pool == NULL) {
        return WEIR_ERROR;
    }

    sp->upstream = u;
    sp->data = u->peer.data;
    sp->original_get_peer = u->peer.get;
    sp->original_free_peer = u->peer.free;

    sp->wait.data = sp;
    sp->wait.handler = weir_http_upstream_session_wait_handler;
    sp->wait.log = r->connection->log;

    if (!u->ssl && u->peer.key.len == 0) {
        /* cleartext: apart from the HTTP/1.1 connections to the same
         * address (TLS keys carry the ALPN offered) */
        weir_str_set(&u->peer.key, "h2c");
    }

    u->peer.data = sp;
    u->peer.get = weir_http_upstream_session_get;
    u->peer.free = weir_http_upstream_session_free;

    return WEIR_OK;
}


static weir_http_upstream_session_pool_t *
weir_http_upstream_session_pool(weir_http_upstream_srv_conf_t *us)
{
    weir_cycle_t                       *cycle;
    weir_http_upstream_session_pool_t  *pool;

    if (us && us->sessions) {
        return us->sessions;
    }

    if (us == NULL && weir_http_upstream_session_default) {
        return weir_http_upstream_session_default;
    }

    cycle = (weir_cycle_t *) weir_cycle;

    pool = weir_pcalloc(cycle->pool,
                        sizeof(weir_http_upstream_session_pool_t));
    if (pool == NULL) {
        return NULL;
    }

    weir_queue_init(&pool->sessions);
    weir_queue_init(&pool->opening);
    weir_queue_init(&pool->idle);
    weir_http_upstream_keepalive_conf(us, &pool->conf);

    if (us) {
        us->sessions = pool;

    } else {
        weir_http_upstream_session_default = pool;
    }

    return pool;
}


static weir_int_t
weir_http_upstream_session_get(weir_peer_connection_t *pc, void *data)
{
    weir_http_upstream_session_peer_t  *sp = data;

    weir_int_t  rc;

    rc = sp->original_get_peer(pc, sp->data);

    if (rc != WEIR_OK || sp->upstream->proto->session == NULL) {
        /*
         * WEIR_DONE: an idle HTTP/1.1 connection of the keep-alive pool.
         * The keys of h2c and of "h2"-only TLS keep HTTP/1.1 connections
         * apart; with proxy_http_version auto it is one whose origin
         * chose http/1.1, and the attempt speaks that (so does a request
         * that went to HTTP/1.1 for an earlier attempt: no stream then)
         */
        return rc;
    }

    sp->not_counted = 0;

    return weir_http_upstream_session_find(sp, pc);
}


/*
 * A stream for the attempt on a session to pc's (address, key) with
 * room: WEIR_DONE (pc->connection is the stream). Else one being opened
 * that has room left: WEIR_AGAIN, the attempt waits (pc->connection
 * NULL). Else WEIR_OK: the core connects, and the attempt is the opener
 * others wait for. WEIR_ERROR: no stream could be made.
 */

static weir_int_t
weir_http_upstream_session_find(weir_http_upstream_session_peer_t *sp,
    weir_peer_connection_t *pc)
{
    weir_uint_t                         room;
    weir_queue_t                       *q, *next;
    weir_connection_t                  *fc;
    weir_http_upstream_session_t       *s;
    weir_http_upstream_session_peer_t  *op;

    for (q = weir_queue_head(&sp->pool->sessions);
         q != weir_queue_sentinel(&sp->pool->sessions);
         q = next)
    {
        /* usable() may take s out of the pool */
        next = weir_queue_next(q);
        s = weir_queue_data(q, weir_http_upstream_session_t, queue);

        if (s->socklen != pc->socklen || s->key_len != pc->key.len
            || weir_memcmp(&s->sockaddr, pc->sockaddr, pc->socklen) != 0
            || (pc->key.len
                && weir_memcmp(s->key, pc->key.data, pc->key.len) != 0))
        {
            continue;
        }

        if (!weir_http_upstream_session_usable(sp->pool, s)
            || !s->ops->has_room(s, sp->upstream))
        {
            continue;
        }

        fc = weir_http_upstream_session_open(sp, s);
        if (fc == NULL) {
            return WEIR_ERROR;
        }

        weir_log_debug(pc->log, 0, "upstream session: stream on *%lu",
                       (unsigned long) s->connection->number);

        pc->connection = fc;
        pc->cached = 1;

        return WEIR_DONE;
    }

    if (sp->alone || pc->key.len > WEIR_PEER_KEY_MAX
        || pc->socklen > (socklen_t) sizeof(weir_sockaddr_t))
    {
        /* the origin chose HTTP/1.1 for the opener this attempt waited
         * for (proxy_http_version auto), it connects at once; a key too
         * long to pool: the session would be this attempt's only */
        return WEIR_OK;
    }

    room = weir_min((weir_uint_t) WEIR_HTTP_UPSTREAM_SESSION_ROOM,
                    sp->upstream->conf->http2_max_streams);

    for (q = weir_queue_head(&sp->pool->opening);
         q != weir_queue_sentinel(&sp->pool->opening);
         q = weir_queue_next(q))
    {
        op = weir_queue_data(q, weir_http_upstream_session_peer_t, opening);

        if (op->upstream->peer.socklen != pc->socklen
            || op->upstream->peer.key.len != pc->key.len
            || weir_memcmp(op->upstream->peer.sockaddr, pc->sockaddr,
                           pc->socklen) != 0
            || (pc->key.len
                && weir_memcmp(op->upstream->peer.key.data, pc->key.data,
                               pc->key.len) != 0))
        {
            continue;
        }

        if (op->nwaiters + 1 >= room) {
            continue;
        }

        weir_queue_insert_tail(&op->waiters, &sp->wait_queue);
        op->nwaiters++;
        sp->opener = op;

        if (!sp->wait.timer_set) {
            weir_event_add_timer(&sp->wait,
                                 sp->upstream->conf->connect_timeout);
        }

        weir_log_debug(pc->log, 0, "upstream session: waiting for one "
                       "being opened");

        pc->connection = NULL;

        return WEIR_AGAIN;
    }

    /* this attempt opens one: later attempts wait for it */
    weir_queue_init(&sp->waiters);
    sp->nwaiters = 0;
    sp->is_opener = 1;
    sp->opener_failed = 0;
    weir_queue_insert_tail(&sp->pool->opening, &sp->opening);

    return WEIR_OK;
}


/* the opener's session is up, or it went away: the waiters look again
 * (posted: each from its own event); failed, its connection failed */

static void
weir_http_upstream_session_wake_all(weir_http_upstream_session_peer_t *sp,
    weir_uint_t failed, weir_uint_t alone)
{
    weir_uint_t                         ft;
    weir_queue_t                       *q;
    weir_http_upstream_state_t         *cur;
    weir_http_upstream_session_peer_t  *w;

    if (!sp->is_opener) {
        return;
    }

    /* the waiters fail as the opener did: next() has set its status */
    cur = sp->upstream->cur;
    ft = (cur && cur->status == WEIR_HTTP_GATEWAY_TIME_OUT)
         ? WEIR_HTTP_UPSTREAM_FT_TIMEOUT : WEIR_HTTP_UPSTREAM_FT_ERROR;

    sp->is_opener = 0;
    weir_queue_remove(&sp->opening);

    while (!weir_queue_empty(&sp->waiters)) {
        q = weir_queue_head(&sp->waiters);
        w = weir_queue_data(q, weir_http_upstream_session_peer_t,
                            wait_queue);
        weir_queue_remove(q);

        w->opener = NULL;
        w->opener_failed = failed;
        w->opener_ft = ft;
        w->alone = alone;
        weir_post_event(&w->wait, &weir_posted_events);
    }

    sp->nwaiters = 0;
}


/* the attempt waits no more (it goes, or it is woken) */

static void
weir_http_upstream_session_unpark(weir_http_upstream_session_peer_t *sp)
{
    if (sp->opener) {
        weir_queue_remove(&sp->wait_queue);
        sp->opener->nwaiters--;
        sp->opener = NULL;
    }

    if (sp->wait.timer_set) {
        weir_event_del_timer(&sp->wait);
    }

    if (sp->wait.posted) {
        weir_delete_posted_event(&sp->wait);
    }
}


static void
weir_http_upstream_session_wait_handler(weir_event_t *ev)
{
    weir_http_upstream_session_peer_t *sp = ev->data;

    weir_int_t              rc;
    weir_http_upstream_t   *u;

    u = sp->upstream;

    if (ev->timedout) {
        ev->timedout = 0;
        weir_http_upstream_session_unpark(sp);

        weir_log_error(WEIR_LOG_ERR, ev->log, WEIR_ETIMEDOUT,
                       "upstream timed out (waiting for the connection "
                       "being opened to %.*s)",
                       WEIR_STR_ARG(*u->peer.name));

        /* the opener's connect timeout fires first as a rule, and
         * counts; this one does not again */
        sp->not_counted = 1;
        weir_http_upstream_session_resume(u, WEIR_ERROR,
                                          WEIR_HTTP_UPSTREAM_FT_TIMEOUT);
        return;
    }

    if (sp->opener) {
        /* still waiting */
        return;
    }

    if (sp->opener_failed) {
        weir_http_upstream_session_unpark(sp);
        sp->not_counted = 1;
        weir_http_upstream_session_resume(u, WEIR_ERROR, sp->opener_ft);
        return;
    }

    rc = weir_http_upstream_session_find(sp, &u->peer);

    if (rc == WEIR_AGAIN) {
        /* waits for another one being opened */
        return;
    }

    weir_http_upstream_session_unpark(sp);

    switch (rc) {

    case WEIR_DONE:
        weir_http_upstream_session_resume(u, WEIR_OK, 0);
        return;

    case WEIR_OK:
        /* none has room: a connection of its own, the opener now */
        weir_http_upstream_session_resume(u, WEIR_DECLINED, 0);
        return;

    default:
        weir_http_upstream_session_resume(u, WEIR_ERROR,
                                          WEIR_HTTP_UPSTREAM_FT_ERROR);
    }
}


/* may s take another stream: keepalive_requests, keepalive_time */

static weir_uint_t
weir_http_upstream_session_usable(weir_http_upstream_session_pool_t *pool,
    weir_http_upstream_session_t *s)
{
    if (s->draining) {
        return 0;
    }

    if (s->requests >= (weir_uint_t) pool->conf.requests
        || weir_current_msec - s->start_time >= pool->conf.time)
    {
        weir_http_upstream_session_drain(s);
        return 0;
    }

    return 1;
}


static weir_connection_t *
weir_http_upstream_session_open(weir_http_upstream_session_peer_t *sp,
    weir_http_upstream_session_t *s)
{
    weir_connection_t  *fc;

    fc = s->ops->open_stream(s, sp->upstream);
    if (fc == NULL) {
        return NULL;
    }

    if (s->streams++ == 0 && s->idle_queue.next) {
        /* busy again */
        weir_queue_remove(&s->idle_queue);
        s->idle_queue.next = NULL;
        sp->pool->nidle--;

        if (s->idle.timer_set) {
            weir_event_del_timer(&s->idle);
        }

        weir_reusable_connection(s->connection, 0);
    }

    s->requests++;
    sp->session = s;

    return fc;
}


weir_int_t
weir_http_upstream_session_start(weir_http_upstream_t *u)
{
    weir_connection_t                  *c, *fc;
    weir_peer_connection_t             *pc;
    weir_http_upstream_session_t       *s;
    weir_http_upstream_session_peer_t  *sp;

    pc = &u->peer;
    sp = pc->data;
    c = pc->connection;

    if (pc->free != weir_http_upstream_session_free) {
        weir_log_error(WEIR_LOG_ALERT, u->request->connection->log, 0,
                       "upstream session without its pool");
        return WEIR_ERROR;
    }

    s = u->proto->session->create(u, c);
    if (s == NULL) {
        return WEIR_ERROR;
    }

    s->ops = u->proto->session;
    s->connection = c;
    s->start_time = weir_current_msec;

    s->idle.data = s;
    s->idle.handler = weir_http_upstream_session_idle_handler;
    s->idle.log = weir_cycle->log;
    s->idle.cancelable = 1;

    if (pc->socklen <= (socklen_t) sizeof(weir_sockaddr_t)
        && pc->key.len <= WEIR_PEER_KEY_MAX)
    {
        s->socklen = pc->socklen;
        weir_memcpy(&s->sockaddr, pc->sockaddr, pc->socklen);
        s->key_len = pc->key.len;

        if (pc->key.len) {
            weir_memcpy(s->key, pc->key.data, pc->key.len);
        }

        s->pool = sp->pool;
        weir_queue_insert_head(&sp->pool->sessions, &s->queue);

    } else {
        /* a key too long to keep (as the keep-alive pool's): this
         * attempt's session only, closed with its stream */
        s->draining = 1;
    }

    /* the core forgets the connection: the session has it */
    pc->connection = NULL;

    fc = weir_http_upstream_session_open(sp, s);
    if (fc == NULL) {
        s->ops->close(s);
        return WEIR_ERROR;
    }

    pc->connection = fc;

    /* the waiters find it (or another with room) */
    weir_http_upstream_session_wake_all(sp, 0, 0);

    return WEIR_OK;
}


void
weir_http_upstream_session_declined(weir_http_upstream_t *u)
{
    if (u->peer.free == weir_http_upstream_session_free) {
        weir_http_upstream_session_wake_all(u->peer.data, 0, 1);
    }
}


static void
weir_http_upstream_session_free(weir_peer_connection_t *pc, void *data,
    weir_uint_t state)
{
    weir_http_upstream_session_peer_t  *sp = data;

    weir_http_upstream_session_t  *s;

    s = sp->session;

    /* a waiting attempt waits no more; an opener's waiters look again,
     * or, when its connection failed, go as it does */
    weir_http_upstream_session_unpark(sp);
    weir_http_upstream_session_wake_all(sp, (state & WEIR_PEER_FAILED) != 0,
                                        0);

    if (sp->not_counted) {
        sp->not_counted = 0;
        state &= ~WEIR_PEER_FAILED;
    }

    if (s && pc->connection) {
        if ((state & WEIR_PEER_FAILED) && s->broken
            && !weir_http_upstream_session_failure(s))
        {
            /* the session's connection failed and one stream told the
             * balancer: passive health counts a session once */
            state &= ~WEIR_PEER_FAILED;
        }

        weir_http_upstream_session_end_stream(sp, pc,
            pc->keepalive && !(state & WEIR_PEER_FAILED));
    }

    /* an HTTP/1.1 connection of proxy_http_version auto goes to the
     * keep-alive pool as usual; a stream's is gone (pc->connection) */
    sp->original_free_peer(pc, sp->data, state);
}


void
weir_http_upstream_session_detach(weir_http_upstream_t *u)
{
    weir_http_upstream_session_peer_t  *sp;

    sp = u->peer.data;

    if (u->peer.free == weir_http_upstream_session_free && sp->session
        && u->peer.connection)
    {
        weir_http_upstream_session_end_stream(sp, &u->peer, 0);
    }
}


/* the stream of pc->connection ends; its session may become idle */

static void
weir_http_upstream_session_end_stream(weir_http_upstream_session_peer_t *sp,
    weir_peer_connection_t *pc, weir_uint_t complete)
{
    weir_http_upstream_session_t       *s, *old;
    weir_http_upstream_session_pool_t  *pool;

    s = sp->session;
    sp->session = NULL;
    pool = s->pool;

    s->streams--;

    if (s->streams == 0 && pool && !s->draining
        && weir_http_upstream_session_usable(pool, s)
        && !(weir_terminate || weir_exiting || weir_quit))
    {
        /* idle: kept for keepalive_timeout, "keepalive N" per group at
         * most */
        weir_queue_insert_head(&pool->idle, &s->idle_queue);
        pool->nidle++;
        weir_event_add_timer(&s->idle, pool->conf.timeout);
        weir_reusable_connection(s->connection, 1);

        while (pool->nidle > (weir_uint_t) pool->conf.max_cached) {
            old = weir_queue_data(weir_queue_last(&pool->idle),
                                  weir_http_upstream_session_t, idle_queue);
            weir_http_upstream_session_remove(old);

            if (old != s) {
                old->ops->close(old);
            }
        }

    } else if (s->streams == 0) {
        weir_http_upstream_session_remove(s);
    }

    /* last: closing the stream of a session that is out of the pool with
     * no stream left closes the session */
    s->ops->close_stream(s, pc->connection, complete);

    pc->connection = NULL;
}


void
weir_http_upstream_session_drain(weir_http_upstream_session_t *s)
{
    s->draining = 1;
    weir_http_upstream_session_remove(s);
}


/* a failure of the broken session s, reported by the first of its
 * streams only: 1 the first time */

static weir_uint_t
weir_http_upstream_session_failure(weir_http_upstream_session_t *s)
{
    if (s->failed) {
        return 0;
    }

    s->failed = 1;
    return 1;
}


/* out of the pool: no stream is handed out on s any more */

static void
weir_http_upstream_session_remove(weir_http_upstream_session_t *s)
{
    weir_http_upstream_session_pool_t  *pool;

    pool = s->pool;

    if (pool == NULL) {
        return;
    }

    if (s->idle_queue.next) {
        weir_queue_remove(&s->idle_queue);
        s->idle_queue.next = NULL;
        pool->nidle--;
    }

    if (s->idle.timer_set) {
        weir_event_del_timer(&s->idle);
    }

    weir_queue_remove(&s->queue);
    s->pool = NULL;
}


static void
weir_http_upstream_session_idle_handler(weir_event_t *ev)
{
    weir_http_upstream_session_t  *s = ev->data;

    weir_log_debug(ev->log, 0, "upstream session *%lu: idle, closing",
                   (unsigned long) s->connection->number);

    weir_http_upstream_session_remove(s);
    s->ops->close(s);
}


/* the worker exits: every session of its pools goes */

void
weir_http_upstream_session_close_all(weir_cycle_t *cycle)
{
    weir_uint_t                         i;
    weir_queue_t                       *q;
    weir_http_upstream_srv_conf_t     **uscfp;
    weir_http_upstream_main_conf_t     *umcf;
    weir_http_upstream_session_t       *s;
    weir_http_upstream_session_pool_t  *pool;

    umcf = weir_http_cycle_get_module_main_conf(cycle,
                                                weir_http_upstream_module);

    for (i = 0; umcf && i <= umcf->upstreams.nelts; i++) {

        if (i == umcf->upstreams.nelts) {
            pool = weir_http_upstream_session_default;
            weir_http_upstream_session_default = NULL;

        } else {
            uscfp = umcf->upstreams.elts;
            pool = uscfp[i]->sessions;
        }

        while (pool && !weir_queue_empty(&pool->sessions)) {
            q = weir_queue_head(&pool->sessions);
            s = weir_queue_data(q, weir_http_upstream_session_t, queue);
            weir_http_upstream_session_remove(s);
            s->ops->close(s);
        }
    }
}
