#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"
#include "weir_http_upstream_int.h"
#include "weir_resolver.h"


/*
 * The upstream core: one weir_http_upstream_t per proxied request. It
 * connects to a peer the balancer chooses, writes the request the
 * protocol handler serialized (and the request body, buffered or
 * streamed), reads the response head, relays it and the body to the
 * client with bounded buffers (a temporary file when the client is slow
 * and buffering is on), retries per proxy_next_upstream, and turns a 101
 * into a byte tunnel. docs/dev/upstream.md describes the design.
 *
 * This file is its lifecycle: creation and start, connecting (and TLS
 * to the origin), retries, finalizing and the event handlers. The rest
 * is in weir_http_upstream_send.c (the request), _relay.c (the response),
 * _tunnel.c (the tunnel), _variables.c ($upstream_*) and _conf.c (the
 * configuration); weir_http_upstream_int.h is what they share.
 */


static void weir_http_upstream_cleanup(void *data);
static weir_int_t weir_http_upstream_choose(weir_http_upstream_t *u);
static void weir_http_upstream_start_connect(weir_http_upstream_t *u);
static weir_int_t weir_http_upstream_resolve(weir_http_upstream_t *u);
static weir_int_t weir_http_upstream_filter_addrs(weir_http_upstream_t *u,
    weir_http_upstream_resolved_t *rs);
static void weir_http_upstream_resolve_handler(weir_resolver_ctx_t *rctx);
static weir_int_t weir_http_upstream_resolved(weir_http_upstream_t *u,
    weir_resolver_ctx_t *rctx);
static void weir_http_upstream_connect(weir_http_upstream_t *u);
static void weir_http_upstream_connected(weir_http_upstream_t *u);
static weir_int_t weir_http_upstream_choose_proto(weir_http_upstream_t *u);
static void weir_http_upstream_ssl_handshake(weir_http_upstream_t *u);

/* set while the ssl module's upstream_handshake runs: a done called from
 * inside it is not at the top of an event handler (the worker is single
 * threaded; a flag in u could be freed by the time the hook returns) */
static weir_uint_t  weir_http_upstream_in_handshake_call;
static weir_int_t weir_http_upstream_own(weir_http_upstream_t *u,
    weir_connection_t *c);
static void weir_http_upstream_take_connection(weir_http_upstream_t *u,
    weir_connection_t *c);
static void weir_http_upstream_free_peer(weir_http_upstream_t *u,
    weir_uint_t state);
static void weir_http_upstream_close(weir_connection_t *c);
static weir_int_t weir_http_upstream_ssl_key(weir_http_upstream_t *u);
static void weir_http_upstream_retry(weir_http_upstream_t *u);
static void weir_http_upstream_end_attempt(weir_http_upstream_t *u);
static void weir_http_upstream_handler(weir_event_t *ev);
static void weir_http_upstream_write_handler(weir_http_upstream_t *u,
    weir_event_t *wev);
static void weir_http_upstream_read_handler(weir_http_upstream_t *u,
    weir_event_t *rev);
static weir_chain_t *weir_http_upstream_copy_chain(weir_http_request_t *r,
    weir_chain_t *in);
static void weir_http_upstream_downstream(weir_http_request_t *r);
static void weir_http_upstream_abort_check(weir_http_request_t *r);


/* ---- hop-by-hop headers ----------------------------------------------- */

static weir_str_t  weir_http_upstream_hop[] = {
    weir_string("connection"),
    weir_string("keep-alive"),
    weir_string("te"),
    weir_string("trailer"),
    weir_string("transfer-encoding"),
    weir_string("upgrade"),
    weir_string("proxy-connection"),
    weir_string("proxy-authenticate"),
    weir_string("proxy-authorization"),
    weir_null_string
};


weir_uint_t
weir_http_upstream_hop_by_hop(weir_http_header_t *h,
    weir_http_header_t *connection)
{
    weir_str_t  *s;

    /* an interned name says it at once; only a name that was never
     * looked up (token 0 is also "not interned") is compared */
    if (h->token != WEIR_HTTP_HDR_UNKNOWN) {
        if (weir_http_header_defs[h->token].flags
            & WEIR_HTTP_HDR_F_HOP_BY_HOP)
        {
            return 1;
        }

        goto listed;
    }

    for (s = weir_http_upstream_hop; s->len; s++) {
        if (h->key.len == s->len
            && weir_strncasecmp(h->key.data, s->data, s->len) == 0)
        {
            return 1;
        }
    }

listed:

    for ( /* void */ ; connection; connection = connection->next) {
        if (weir_http_list_has_token(&connection->value, h->key.data,
                                     h->key.len))
        {
            return 1;
        }
    }

    return 0;
}


/* ---- creation and start ----------------------------------------------- */

weir_int_t
weir_http_upstream_create(weir_http_request_t *r)
{
    weir_pool_cleanup_t       *cln;
    weir_http_upstream_t      *u;
    weir_http_upstream_ctx_t  *ctx;

    if (r->upstream) {
        return WEIR_OK;
    }

    u = weir_pcalloc(r->pool, sizeof(weir_http_upstream_t));
    ctx = weir_pcalloc(r->pool, sizeof(weir_http_upstream_ctx_t));
    if (u == NULL || ctx == NULL) {
        return WEIR_ERROR;
    }

    u->state = weir_array_create(r->pool, 2,
                                 sizeof(weir_http_upstream_state_t));
    if (u->state == NULL) {
        return WEIR_ERROR;
    }

    cln = weir_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return WEIR_ERROR;
    }

    cln->handler = weir_http_upstream_cleanup;
    cln->data = u;

    u->request = r;
    u->pipe = ctx;
    u->peer.log = r->connection->log;
    u->peer.log_error = 1;
    u->length = -1;
    u->last_out = &u->out_bufs;
    u->headers_in.content_length_n = -1;

    r->upstream = u;

    return WEIR_OK;
}


/* the request pool goes: whatever is still open with it */

static void
weir_http_upstream_cleanup(void *data)
{
    weir_http_upstream_t      *u = data;
    weir_http_upstream_ctx_t  *ctx;

    ctx = u->pipe;
    ctx->finalized = 1;

    if (u->peer.connection || ctx->peer_held) {
        u->peer.keepalive = 0;
        weir_http_upstream_free_peer(u, 0);
    }
}


void
weir_http_upstream_init(weir_http_request_t *r)
{
    weir_connection_t          *c;
    weir_http_upstream_t       *u;
    weir_http_upstream_ctx_t   *ctx;
    weir_http_request_body_t   *rb;

    u = r->upstream;
    c = r->connection;

    if (u == NULL) {
        weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    ctx = u->pipe;

    if (ctx->started) {
        /* a streamed body: more data (or its end) is in rb->bufs */
        if (ctx->finalized || ctx->in_post) {
            return;
        }

        weir_http_upstream_take_body(u);

        if (ctx->finalized) {
            return;
        }

        if (ctx->peer_held && !ctx->connecting && ctx->sending) {
            weir_http_upstream_send(u);
        }

        return;
    }

    ctx->started = 1;
    u->buffering = u->conf->buffering ? 1 : 0;
    u->request_buffering = r->request_body_no_buffering ? 0 : 1;
    u->start_time = weir_current_msec;

    if (u->request_buffering && c->read->timer_set) {
        weir_event_del_timer(c->read);
    }

    if (u->create_request && u->create_request(r) != WEIR_OK) {
        weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    if (u->proto->create_request(u) != WEIR_OK) {
        weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    rb = r->request_body;

    if (u->request_buffering && u->req.has_body && rb) {
        ctx->body_proto = NULL;

        if (u->proto->encode_body(u,
                                  weir_http_upstream_copy_chain(r, rb->bufs),
                                  &ctx->body_proto)
            != WEIR_OK)
        {
            weir_log_error(WEIR_LOG_ERR, c->log, 0,
                           "cannot frame the request body for upstream");
            weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }

        u->request_body_sent = 0;
    }

    if (!u->proto->parsed_head || u->alt_proto) {
        /* the head is read as bytes (a session's comes parsed: no
         * buffer; with proxy_http_version auto the origin may choose
         * HTTP/1.1) */
        u->buffer.start = weir_pnalloc(r->pool, u->conf->buffer_size);
        if (u->buffer.start == NULL) {
            weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }

        u->buffer.end = u->buffer.start + u->conf->buffer_size;
    }

    u->buffer.pos = u->buffer.start;
    u->buffer.last = u->buffer.start;
    u->buffer.temporary = 1;

    if (u->uri.len == 0) {
        u->uri = u->req.uri;
    }

    if (weir_http_upstream_choose(u) != WEIR_OK) {
        /* WEIR_AGAIN: a name being resolved; weir_http_upstream_resolved()
         * goes on */
        return;
    }

    weir_http_upstream_start_connect(u);
}


/* the peer is chosen: take the client's events, then connect */

static void
weir_http_upstream_start_connect(weir_http_upstream_t *u)
{
    weir_http_upstream_ctx_t  *ctx = u->pipe;

    weir_http_upstream_client_handlers(u);

    if (!u->request_buffering) {
        weir_http_upstream_take_body(u);

        if (ctx->finalized) {
            return;
        }
    }

    weir_http_upstream_connect(u);
}


/* sets up u->peer from the group; finalizes and returns WEIR_ERROR on
 * failure */

static weir_int_t
weir_http_upstream_choose(weir_http_upstream_t *u)
{
    weir_uint_t                        i;
    weir_http_request_t               *r;
    weir_http_upstream_resolved_t     *rs;
    weir_http_upstream_srv_conf_t     *us, **uscfp;
    weir_http_upstream_main_conf_t    *umcf;

    r = u->request;
    us = u->upstream;

    if (us == NULL && u->resolved) {
        rs = u->resolved;

        umcf = weir_http_get_module_main_conf(r, weir_http_upstream_module);

        if (rs->addrs && (rs->deny || rs->no_loop)
            && weir_http_upstream_filter_addrs(u, rs) != WEIR_OK)
        {
            return WEIR_ERROR;
        }

        if (rs->addrs) {
            /* the pools of every peer named at request time */
            us = umcf ? umcf->resolved : NULL;

            if (weir_http_upstream_create_round_robin_peer(r, rs->addrs,
                                                           rs->naddrs,
                                                           &rs->host)
                != WEIR_OK
                || (!u->connect
                    && weir_http_upstream_keepalive_init_peer(r, us)
                       != WEIR_OK)
                || (u->proto->session && us
                    && weir_http_upstream_session_init_peer(r, us)
                       != WEIR_OK))
            {
                weir_http_finalize_request(r,
                                           WEIR_HTTP_INTERNAL_SERVER_ERROR);
                return WEIR_ERROR;
            }

            return WEIR_OK;
        }
        uscfp = umcf ? umcf->upstreams.elts : NULL;

        for (i = 0; umcf && !rs->by_name && i < umcf->upstreams.nelts; i++)
        {
            if (uscfp[i]->host.len == rs->host.len
                && weir_strncasecmp(uscfp[i]->host.data, rs->host.data,
                                    rs->host.len) == 0
                && (uscfp[i]->no_port || rs->no_port
                    || uscfp[i]->port == rs->port))
            {
                us = uscfp[i];
                break;
            }
        }

        if (us == NULL) {
            return weir_http_upstream_resolve(u);
        }

        u->upstream = us;
    }

    if (us == NULL || us->peer.init == NULL) {
        weir_log_error(WEIR_LOG_ALERT, r->connection->log, 0,
                       "no upstream configuration");
        weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return WEIR_ERROR;
    }

    if (us->peer.init(r, us) != WEIR_OK
        || weir_http_upstream_keepalive_init_peer(r, us) != WEIR_OK
        || (u->proto->session
            && weir_http_upstream_session_init_peer(r, us) != WEIR_OK))
    {
        weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return WEIR_ERROR;
    }

    return WEIR_OK;
}


/*
 * proxy_pass with variables naming neither an address nor a group: the
 * location's resolver looks the name up (nginx's semantics). Without a
 * resolver, or when the name cannot be resolved, the client gets a 502
 * and the log says which name and why.
 */

static weir_int_t
weir_http_upstream_resolve(weir_http_upstream_t *u)
{
    weir_int_t                      rc;
    weir_msec_t                     timeout;
    weir_resolver_t                *res;
    weir_http_request_t            *r;
    weir_resolver_ctx_t            *rctx;
    weir_http_upstream_resolved_t  *rs;

    r = u->request;
    rs = u->resolved;

    res = weir_http_resolver(r, &timeout);

    if (res == NULL) {
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "no resolver defined to resolve %.*s",
                       WEIR_STR_ARG(rs->host));
        weir_http_finalize_request(r, WEIR_HTTP_BAD_GATEWAY);
        return WEIR_ERROR;
    }

    rctx = weir_pcalloc(r->pool, sizeof(weir_resolver_ctx_t));
    if (rctx == NULL) {
        weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return WEIR_ERROR;
    }

    rctx->resolver = res;
    rctx->name = rs->host;
    rctx->port = rs->port;
    rctx->timeout = timeout;
    rctx->pool = r->pool;
    rctx->log = r->connection->log;
    rctx->handler = weir_http_upstream_resolve_handler;
    rctx->data = u;

    r->connection->log->action = "resolving";

    rc = weir_resolve(rctx);

    if (rc == WEIR_AGAIN) {
        /* the request waits; its client events do nothing meanwhile */
        r->read_event_handler = weir_http_block_reading;
        r->write_event_handler = weir_http_request_empty_handler;
        return WEIR_AGAIN;
    }

    if (rc == WEIR_ERROR) {
        weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return WEIR_ERROR;
    }

    return weir_http_upstream_resolved(u, rctx);
}


static void
weir_http_upstream_resolve_handler(weir_resolver_ctx_t *rctx)
{
    weir_connection_t     *c;
    weir_http_upstream_t  *u = rctx->data;

    c = u->request->connection;

    if (weir_http_upstream_resolved(u, rctx) == WEIR_OK) {
        weir_http_upstream_start_connect(u);
    }

    weir_http_run_posted_requests(c);
}


static weir_int_t
weir_http_upstream_resolved(weir_http_upstream_t *u,
    weir_resolver_ctx_t *rctx)
{
    weir_http_request_t            *r;
    weir_http_upstream_resolved_t  *rs;

    r = u->request;
    rs = u->resolved;

    if (rctx->status != WEIR_OK) {
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "%.*s could not be resolved (%s)",
                       WEIR_STR_ARG(rs->host), rctx->error);
        weir_http_finalize_request(r, WEIR_HTTP_BAD_GATEWAY);
        return WEIR_ERROR;
    }

    rs->addrs = rctx->addrs;
    rs->naddrs = rctx->naddrs;

    return weir_http_upstream_choose(u);
}


/*
 * A forward proxy's destinations: the addresses a name gave that are in
 * the deny list, or that are weir's own listening sockets (a request to
 * itself would loop), are dropped; with none left the request is a 403
 * naming the address.
 */
static weir_int_t
weir_http_upstream_filter_addrs(weir_http_upstream_t *u,
    weir_http_upstream_resolved_t *rs)
{
    const char           *why;
    weir_uint_t           i, j, k, n, wildcard;
    weir_addr_t          *a;
    weir_cidr_t          *cidr;
    weir_listening_t     *ls;
    struct sockaddr      *sa;
    weir_http_request_t  *r;

    r = u->request;
    a = rs->addrs;
    n = 0;
    why = NULL;

    for (i = 0; i < rs->naddrs; i++) {
        sa = a[i].sockaddr;

        if (rs->deny) {
            cidr = rs->deny->elts;

            for (k = 0; k < rs->deny->nelts; k++) {
                if (weir_cidr_match(&cidr[k], sa)) {
                    break;
                }
            }

            if (k < rs->deny->nelts) {
                why = "in forward_proxy_deny";
                weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                               "%.*s (%.*s) refused: the address is %s",
                               WEIR_STR_ARG(rs->host),
                               WEIR_STR_ARG(a[i].name), why);
                continue;
            }
        }

        if (rs->no_loop) {
            ls = weir_cycle->listening.elts;

            for (j = 0; j < weir_cycle->listening.nelts; j++) {
                if (ls[j].sockaddr->sa_family != sa->sa_family
                    || weir_inet_get_port(ls[j].sockaddr)
                       != weir_inet_get_port(sa))
                {
                    continue;
                }

                /* a wildcard listener takes any local address: the
                 * loopback ones are the ones known to be local */
                wildcard = (sa->sa_family == AF_INET)
                    ? ((struct sockaddr_in *) (void *) ls[j].sockaddr)
                          ->sin_addr.s_addr == htonl(INADDR_ANY)
                    : IN6_IS_ADDR_UNSPECIFIED(
                          &((struct sockaddr_in6 *) (void *)
                            ls[j].sockaddr)->sin6_addr);

                if (weir_cmp_sockaddr(ls[j].sockaddr, ls[j].socklen, sa,
                                      a[i].socklen, 1) == WEIR_OK
                    || (wildcard
                        && ((sa->sa_family == AF_INET
                             && (ntohl(((struct sockaddr_in *) (void *) sa)
                                       ->sin_addr.s_addr) >> 24) == 127)
                            || (sa->sa_family == AF_INET6
                                && IN6_IS_ADDR_LOOPBACK(
                                       &((struct sockaddr_in6 *) (void *) sa)
                                           ->sin6_addr)))))
                {
                    break;
                }
            }

            if (j < weir_cycle->listening.nelts) {
                why = "weir's own listening address (a loop)";
                weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                               "%.*s (%.*s) refused: the address is %s",
                               WEIR_STR_ARG(rs->host),
                               WEIR_STR_ARG(a[i].name), why);
                continue;
            }
        }

        a[n++] = a[i];
    }

    rs->naddrs = n;

    if (n == 0) {
        weir_http_finalize_request(r, WEIR_HTTP_FORBIDDEN);
        return WEIR_ERROR;
    }

    return WEIR_OK;
}


static weir_chain_t *
weir_http_upstream_copy_chain(weir_http_request_t *r, weir_chain_t *in)
{
    weir_buf_t    *b;
    weir_chain_t  *out, **ll, *cl;

    out = NULL;
    ll = &out;

    for ( /* void */ ; in; in = in->next) {
        b = weir_alloc_buf(r->pool);
        cl = weir_alloc_chain_link(r->pool, NULL);
        if (b == NULL || cl == NULL) {
            return NULL;
        }

        *b = *in->buf;
        cl->buf = b;
        cl->next = NULL;
        *ll = cl;
        ll = &cl->next;
    }

    return out;
}


/* ---- connecting ------------------------------------------------------- */

static void
weir_http_upstream_connect(weir_http_upstream_t *u)
{
    weir_int_t                   rc;
    weir_event_get_peer_pt       get;
    weir_connection_t           *c;
    weir_http_request_t         *r;
    weir_http_upstream_ctx_t    *ctx;
    weir_http_upstream_state_t  *st;

    r = u->request;
    ctx = u->pipe;

    r->connection->log->action = "connecting to upstream";

    st = weir_array_push(u->state);
    if (st == NULL) {
        weir_http_upstream_finalize(u, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    weir_memzero(st, sizeof(weir_http_upstream_state_t));
    st->connect_time = (weir_msec_t) -1;
    st->header_time = (weir_msec_t) -1;
    st->response_time = (weir_msec_t) -1;
    st->response_length = -1;
    u->cur = st;
    u->tries++;

    ctx->attempt_start = weir_current_msec;
    ctx->sent_any = 0;
    ctx->head_done = 0;
    u->response_started = 0;
    u->peer.keepalive = 0;
    u->peer.start_time = weir_current_msec;

    if (u->ssl && u->peer.key.data == NULL) {
        /* once per request: the key depends on the location and the
         * origin's name, not on the peer an attempt picks */
        if (weir_http_upstream_ssl_key(u) != WEIR_OK) {
            weir_http_upstream_finalize(u, WEIR_HTTP_BAD_GATEWAY);
            return;
        }
    }

    if (ctx->same_peer) {
        /* the special retry after a stale cached connection: the peer
         * held, a fresh connection to its address */
        ctx->same_peer = 0;
        get = u->peer.get;
        u->peer.get = weir_event_get_peer;

        rc = weir_event_connect_peer(&u->peer);

        u->peer.get = get;

    } else {
        /* set again by get when it chooses a peer */
        u->peer.sockaddr = NULL;
        rc = weir_event_connect_peer(&u->peer);
    }

    if (u->peer.name) {
        st->peer = u->peer.name;
    }

    if (rc == WEIR_BUSY) {
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "no live upstreams");
        weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_NOLIVE);
        return;
    }

    if (rc == WEIR_ERROR) {
        /* socket() or the connection table failed after get chose a
         * peer: the peer is given back (not a failure of its own) */
        if (u->peer.sockaddr) {
            ctx->peer_held = 1;
        }

        weir_http_upstream_finalize(u, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    ctx->peer_held = 1;

    if (rc == WEIR_AGAIN && u->peer.connection == NULL) {
        /* the session layer parked the attempt: a session to the peer is
         * being opened, weir_http_upstream_session_resume() follows */
        return;
    }

    if (rc == WEIR_DECLINED) {
        /* logged by the connect code: "connect() to ... failed" */
        weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_ERROR);
        return;
    }

    c = u->peer.connection;

    if (weir_http_upstream_own(u, c) != WEIR_OK) {
        return;
    }

    if (rc == WEIR_AGAIN) {
        ctx->connecting = 1;
        weir_event_add_timer(c->write, u->conf->connect_timeout);
        return;
    }

    /* WEIR_OK, or WEIR_DONE: a cached connection */
    weir_http_upstream_connected(u);
}


/*
 * A parked attempt goes on (weir_http_upstream_session.c): WEIR_OK, the
 * stream of a session in u->peer.connection; WEIR_DECLINED, no session
 * had room: a fresh connection to the same peer (not a new try); else
 * the attempt failed with ft, as proxy_next_upstream says.
 */

void
weir_http_upstream_session_resume(weir_http_upstream_t *u, weir_int_t rc,
    weir_uint_t ft)
{
    weir_connection_t         *cc;
    weir_http_upstream_ctx_t  *ctx;

    ctx = u->pipe;
    cc = u->request->connection;

    if (ctx->finalized) {
        return;
    }

    switch (rc) {

    case WEIR_OK:
        if (weir_http_upstream_own(u, u->peer.connection) == WEIR_OK) {
            weir_http_upstream_connected(u);
        }

        break;

    case WEIR_DECLINED:
        ctx->same_peer = 1;
        u->tries--;
        weir_http_upstream_retry(u);
        break;

    default:
        weir_http_upstream_next(u, ft);
    }

    weir_http_run_posted_requests(cc);
}


/* the attempt's connection c becomes the request's (a pool of its own,
 * the core's handlers); WEIR_ERROR: the request is finalized */

static weir_int_t
weir_http_upstream_own(weir_http_upstream_t *u, weir_connection_t *c)
{
    if (c->pool == NULL) {
        c->pool = weir_create_pool(128, u->request->connection->log);
        if (c->pool == NULL) {
            weir_http_upstream_finalize(u, WEIR_HTTP_INTERNAL_SERVER_ERROR);
            return WEIR_ERROR;
        }
    }

    weir_http_upstream_take_connection(u, c);

    return WEIR_OK;
}


static void
weir_http_upstream_take_connection(weir_http_upstream_t *u,
    weir_connection_t *c)
{
    weir_http_request_t  *r;

    r = u->request;

    c->data = r;
    c->log = r->connection->log;
    c->read->log = c->log;
    c->write->log = c->log;
    c->pool->log = c->log;
    c->read->handler = weir_http_upstream_handler;
    c->write->handler = weir_http_upstream_handler;

    if (weir_http_upstream_is_stream(c)) {
        /* a stream of a session: the session owns the socket */
        c->sendfile = 0;
        return;
    }

    c->sendfile = 1;

    if (u->conf->socket_keepalive) {
        int  on = 1;

        (void) setsockopt(c->fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
    }
}


static void
weir_http_upstream_connected(weir_http_upstream_t *u)
{
    weir_connection_t         *c;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;

    r = u->request;
    ctx = u->pipe;
    c = u->peer.connection;

    if (u->ssl && c->ssl == NULL && !weir_http_upstream_is_stream(c)) {
        /* a fresh connection to an https:// origin (a cached one, or a
         * session's, has its TLS already) */
        weir_http_upstream_ssl_handshake(u);
        return;
    }

    ctx->connecting = 0;

    if (c->write->timer_set) {
        weir_event_del_timer(c->write);
    }

    if (u->alt_proto && !weir_http_upstream_is_stream(c)
        && weir_http_upstream_choose_proto(u) != WEIR_OK)
    {
        weir_http_upstream_finalize(u, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    if (u->proto->session && !weir_http_upstream_is_stream(c)) {
        /* a fresh connection for a multiplexed protocol: it becomes a
         * session of the pool, this attempt one of its streams */
        if (weir_http_upstream_session_start(u) != WEIR_OK) {
            weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_ERROR);
            return;
        }

        c = u->peer.connection;
        weir_http_upstream_take_connection(u, c);
    }

    if (weir_http_upstream_is_stream(c)) {
        /* the stream's head went to the session: the origin may act on
         * it (REFUSED_STREAM and GOAWAY say when it did not) */
        ctx->sent_any = 1;
    }

    /* as nginx's $upstream_connect_time: the TLS handshake included */
    u->cur->connect_time = weir_current_msec - ctx->attempt_start;

    if (u->connect) {
        /* a CONNECT: the connection is the answer; nothing is sent, the
         * client's bytes go through as they are */
        ctx->sending = 0;
        u->request_sent = 1;
        u->headers_in.status_n = WEIR_HTTP_OK;
        u->cur->status = WEIR_HTTP_OK;
        weir_http_upstream_start_tunnel(u);
        return;
    }

    if (u->proto->reinit) {
        u->proto->reinit(u);
    }

    u->buffer.pos = u->buffer.start;
    u->buffer.last = u->buffer.start;

    /* a fresh copy of the head (and of a buffered body) per attempt: a
     * retry resends from the start */
    ctx->head = weir_http_upstream_copy_chain(r, u->request_bufs);

    if (u->request_bufs && ctx->head == NULL) {
        weir_http_upstream_finalize(u, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    if (u->request_buffering) {
        ctx->body = weir_http_upstream_copy_chain(r, ctx->body_proto);

        if (ctx->body_proto && ctx->body == NULL) {
            weir_http_upstream_finalize(u, WEIR_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }

    } else if (ctx->taken) {
        /*
         * A streamed body taken before this attempt was framed with the
         * handler's state that reinit() has just reset: frame it again
         * from the start, or the handler counts it short (none of it
         * was written: a retry is only made before that).
         */
        ctx->body = NULL;

        if (u->proto->encode_body(u, ctx->taken, &ctx->body) != WEIR_OK) {
            weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                           "cannot frame the request body for upstream");
            weir_http_upstream_finalize(u, WEIR_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }
    }

    ctx->sending = 1;
    u->request_sent = 0;

    weir_http_upstream_send(u);
}


/*
 * proxy_http_version auto: the attempt speaks what the origin chose. A
 * connection from the keep-alive pool is an HTTP/1.1 one (sessions are
 * never there); a fresh one says with ALPN. The request is built again
 * by the protocol taken (u->req is neutral); a buffered body has a known
 * length, which both protocols pass as it is, and a streamed one is
 * framed again by connected().
 */

static weir_int_t
weir_http_upstream_choose_proto(weir_http_upstream_t *u)
{
    weir_uint_t                  h2;
    weir_http_upstream_proto_t  *p;

    h2 = (!u->peer.cached && u->origin_h2);

    if (h2 == (u->proto->session != NULL)) {
        return WEIR_OK;
    }

    p = u->proto;
    u->proto = u->alt_proto;
    u->alt_proto = p;
    u->proto_ctx = NULL;

    if (!h2) {
        /* the attempts that waited for this one's session connect */
        weir_http_upstream_session_declined(u);
    }

    weir_log_debug(u->request->connection->log, 0,
                   "upstream: the origin speaks %.*s",
                   WEIR_STR_ARG(u->proto->name));

    return u->proto->create_request(u);
}


/* the TLS key of the request (weir_http_ssl_hooks_t.upstream_key) */

static weir_int_t
weir_http_upstream_ssl_key(weir_http_upstream_t *u)
{
    weir_http_core_main_conf_t  *cmcf;

    cmcf = weir_http_get_module_main_conf(u->request, weir_http_core_module);

    if (cmcf->ssl == NULL || cmcf->ssl->upstream_key == NULL) {
        weir_log_error(WEIR_LOG_ERR, u->request->connection->log, 0,
                       "TLS to upstream requires the ssl module");
        return WEIR_ERROR;
    }

    return cmcf->ssl->upstream_key(u);
}


/*
 * TLS to the origin: the ssl module (cmcf->ssl) takes c's handlers for
 * the handshake and ends it with weir_http_upstream_ssl_done. The
 * connect timer on c->write, armed here when the connect completed at
 * once, bounds the handshake.
 */

static void
weir_http_upstream_ssl_handshake(weir_http_upstream_t *u)
{
    weir_int_t                   rc;
    weir_uint_t                  saved;
    weir_connection_t           *c;
    weir_http_request_t         *r;
    weir_http_upstream_ctx_t    *ctx;
    weir_http_core_main_conf_t  *cmcf;

    r = u->request;
    ctx = u->pipe;
    c = u->peer.connection;

    cmcf = weir_http_get_module_main_conf(r, weir_http_core_module);

    r->connection->log->action = "SSL handshaking to upstream";

    if (cmcf->ssl == NULL || cmcf->ssl->upstream_handshake == NULL) {
        /* the configuration refuses https:// without the module: a
         * protocol module that sets u->ssl on its own could get here */
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "TLS to upstream requires the ssl module");
        weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_ERROR);
        return;
    }

    ctx->connecting = 1;
    ctx->handshaking = 1;

    if (!c->write->timer_set) {
        weir_event_add_timer(c->write, u->conf->connect_timeout);
    }

    /* weir_http_upstream_ssl_done may run before this returns (and may
     * finalize the request): nothing of u is touched after WEIR_OK */
    saved = weir_http_upstream_in_handshake_call;
    weir_http_upstream_in_handshake_call = 1;

    rc = cmcf->ssl->upstream_handshake(u);

    weir_http_upstream_in_handshake_call = saved;

    if (rc != WEIR_OK) {
        /* done was not called: u is still ours */
        ctx->handshaking = 0;
        r->connection->log->action = "SSL handshaking to upstream";
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "cannot start TLS to upstream");
        weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_ERROR);
        return;
    }
}


void
weir_http_upstream_ssl_done(weir_http_upstream_t *u, weir_int_t rc)
{
    weir_uint_t                in_call;
    weir_connection_t         *c, *cc;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;

    r = u->request;
    ctx = u->pipe;
    c = u->peer.connection;
    cc = r->connection;

    in_call = weir_http_upstream_in_handshake_call;

    if (!ctx->handshaking || ctx->finalized || c == NULL) {
        weir_log_error(WEIR_LOG_ALERT, cc->log, 0,
                       "upstream TLS handshake ended twice or too late");
        return;
    }

    ctx->handshaking = 0;

    /* the core's handlers back (the module restores its own, this makes
     * sure of it) */
    c->read->handler = weir_http_upstream_handler;
    c->write->handler = weir_http_upstream_handler;

    if (rc != WEIR_OK) {
        if (c->write->timedout) {
            cc->log->action = "SSL handshaking to upstream";
            weir_log_error(WEIR_LOG_ERR, cc->log, WEIR_ETIMEDOUT,
                           "upstream timed out");
            weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_TIMEOUT);

        } else {
            /* the module logged why */
            weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_ERROR);
        }

    } else if (c->ssl == NULL) {
        weir_log_error(WEIR_LOG_ALERT, cc->log, 0,
                       "upstream TLS handshake reported done without TLS");
        weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_ERROR);

    } else {
        cc->log->action = "sending request to upstream";
        weir_http_upstream_connected(u);
    }

    if (!in_call) {
        /* called from the module's event handler, not from ours */
        weir_http_run_posted_requests(cc);
    }
}


static void
weir_http_upstream_close(weir_connection_t *c)
{
    weir_pool_t  *pool;

    pool = c->pool;
    weir_close_connection(c);

    if (pool) {
        weir_destroy_pool(pool);
    }
}


/* the attempt with the current peer is over: hand the peer back (the
 * pool may take a reusable connection), close what is left */

static void
weir_http_upstream_free_peer(weir_http_upstream_t *u, weir_uint_t state)
{
    weir_connection_t         *c;
    weir_peer_connection_t    *pc;
    weir_http_upstream_ctx_t  *ctx;

    pc = &u->peer;
    ctx = u->pipe;
    c = pc->connection;

    if (c) {
        if (state & WEIR_PEER_FAILED) {
            pc->keepalive = 0;
        }

        /* a pool re-arms the read timer as its idle timer (lazily, so
         * the node may stay); what no pool takes is closed below */
        if (c->read->timer_set && !pc->keepalive) {
            weir_event_del_timer(c->read);
        }

        if (c->write->timer_set) {
            weir_event_del_timer(c->write);
        }

        if (c->read->posted) {
            /* a read budget was spent: not for the pool's handler */
            weir_delete_posted_event(c->read);
        }

        if (pc->keepalive) {
            /* the pool sets its own handlers and log; nothing of this
             * request may be reached from it */
            c->data = NULL;
        }
    }

    if (ctx->peer_held) {
        ctx->peer_held = 0;
        pc->free(pc, pc->data, state);
    }

    if (pc->connection) {
        weir_http_upstream_close(pc->connection);
        pc->connection = NULL;
    }

    ctx->connecting = 0;
    ctx->sending = 0;
}


static void
weir_http_upstream_end_attempt(weir_http_upstream_t *u)
{
    weir_http_upstream_ctx_t  *ctx;

    ctx = u->pipe;

    if (u->cur && u->cur->response_time == (weir_msec_t) -1) {
        u->cur->response_time = weir_current_msec - ctx->attempt_start;
    }
}


weir_uint_t
weir_http_upstream_may_retry(weir_http_upstream_t *u, weir_uint_t ft)
{
    weir_uint_t                next;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;

    r = u->request;
    ctx = u->pipe;
    next = u->conf->next_upstream;

    if (u->header_sent || r->header_sent || ft == WEIR_HTTP_UPSTREAM_FT_NOLIVE
        || (next & WEIR_HTTP_UPSTREAM_FT_OFF) || !(next & ft))
    {
        return 0;
    }

    /*
     * peer.tries counts the attempts the balancer has left, the current
     * one until its peer is freed: a bad status is judged while the peer
     * is held, so it needs another attempt beyond this one, or the
     * answer in hand is the one relayed (as nginx's "peer.tries > 1").
     */
    if (u->peer.tries <= (weir_uint_t) (ctx->peer_held ? 1 : 0)) {
        return 0;
    }

    if (u->conf->next_upstream_tries
        && u->tries >= u->conf->next_upstream_tries)
    {
        return 0;
    }

    if (u->conf->next_upstream_timeout
        && weir_current_msec - u->start_time
           >= u->conf->next_upstream_timeout)
    {
        return 0;
    }

    if (ctx->body_consumed || (!u->request_buffering && ctx->taken == NULL
                               && u->request_body_sent))
    {
        /* a streamed body cannot be read again */
        return 0;
    }

    if (ctx->sent_any
        && !(next & WEIR_HTTP_UPSTREAM_FT_NON_IDEMPOTENT)
        && !(r->method & (WEIR_HTTP_GET | WEIR_HTTP_HEAD | WEIR_HTTP_PUT
                          | WEIR_HTTP_DELETE | WEIR_HTTP_OPTIONS
                          | WEIR_HTTP_TRACE)))
    {
        return 0;
    }

    return 1;
}


static void
weir_http_upstream_retry(weir_http_upstream_t *u)
{
    weir_http_request_t  *r;

    r = u->request;

    if (u->reinit_request && u->reinit_request(r) != WEIR_OK) {
        weir_http_upstream_finalize(u, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    u->keepalive = 0;
    u->early_response = 0;
    u->length = -1;

    weir_http_upstream_connect(u);
}


/* a request sent on a cached connection that the origin closed before
 * any byte of a response: the origin cannot have processed it */

weir_uint_t
weir_http_upstream_cached_retry(weir_http_upstream_t *u)
{
    weir_connection_t         *c;
    weir_http_upstream_ctx_t  *ctx;

    ctx = u->pipe;

    if ((!u->peer.cached && !u->unprocessed) || u->response_started
        || ctx->cached_retried || ctx->body_consumed || u->header_sent)
    {
        return 0;
    }

    ctx->cached_retried = 1;

    if (u->unprocessed) {
        weir_log_error(WEIR_LOG_INFO, u->request->connection->log, 0,
                       "upstream did not process the request, retrying "
                       "on another connection");

    } else if (u->peer.connection
               && weir_http_upstream_is_stream(u->peer.connection))
    {
        weir_log_error(WEIR_LOG_INFO, u->request->connection->log, 0,
                       "upstream session failed before it answered, "
                       "retrying on another connection");

    } else {
        weir_log_error(WEIR_LOG_INFO, u->request->connection->log, 0,
                       "upstream closed a kept-alive connection, retrying "
                       "on another connection");
    }

    u->unprocessed = 0;

    weir_http_upstream_end_attempt(u);

    /*
     * The peer is not to blame: it stays chosen (not freed to the
     * balancer, which would count a try and not hand the same peer out
     * again in this request, a single one included), only the stale
     * connection is closed and a fresh one opened to the same address.
     * This attempt does not count against next_upstream_tries.
     */

    c = u->peer.connection;

    if (c) {
        if (c->read->timer_set) {
            weir_event_del_timer(c->read);
        }

        if (c->write->timer_set) {
            weir_event_del_timer(c->write);
        }

        if (weir_http_upstream_is_stream(c)) {
            /* the stream goes, its session stays the pool's */
            weir_http_upstream_session_detach(u);

        } else {
            weir_http_upstream_close(c);
        }

        u->peer.connection = NULL;
    }

    u->peer.keepalive = 0;
    u->peer.cached = 0;
    ctx->connecting = 0;
    ctx->sending = 0;
    ctx->same_peer = 1;
    u->tries--;

    weir_http_upstream_retry(u);

    return 1;
}


void
weir_http_upstream_next(weir_http_upstream_t *u, weir_uint_t ft)
{
    weir_uint_t           state, status;
    weir_http_request_t  *r;

    r = u->request;

    switch (ft) {
    case WEIR_HTTP_UPSTREAM_FT_HTTP_403:
    case WEIR_HTTP_UPSTREAM_FT_HTTP_404:
    case WEIR_HTTP_UPSTREAM_FT_HTTP_429:
        state = WEIR_PEER_NEXT;
        break;
    default:
        state = WEIR_PEER_NEXT | WEIR_PEER_FAILED;
    }

    switch (ft) {
    case WEIR_HTTP_UPSTREAM_FT_TIMEOUT:
    case WEIR_HTTP_UPSTREAM_FT_HTTP_504:
        status = WEIR_HTTP_GATEWAY_TIME_OUT;
        break;
    case WEIR_HTTP_UPSTREAM_FT_HTTP_500:
        status = WEIR_HTTP_INTERNAL_SERVER_ERROR;
        break;
    case WEIR_HTTP_UPSTREAM_FT_HTTP_503:
        status = 503;
        break;
    case WEIR_HTTP_UPSTREAM_FT_HTTP_403:
        status = 403;
        break;
    case WEIR_HTTP_UPSTREAM_FT_HTTP_404:
        status = 404;
        break;
    case WEIR_HTTP_UPSTREAM_FT_HTTP_429:
        status = 429;
        break;
    default:
        status = WEIR_HTTP_BAD_GATEWAY;
    }

    weir_http_upstream_end_attempt(u);

    if (u->cur && u->cur->status == 0) {
        /* $upstream_status of a failed attempt, as nginx */
        u->cur->status = status;
    }

    if (ft != WEIR_HTTP_UPSTREAM_FT_NOLIVE) {
        u->peer.keepalive = 0;
        weir_http_upstream_free_peer(u, state);
    }

    if (r->connection->error) {
        weir_http_upstream_finalize(u, WEIR_HTTP_CLIENT_CLOSED_REQUEST);
        return;
    }

    if (!weir_http_upstream_may_retry(u, ft)) {
        weir_http_upstream_finalize(u, status);
        return;
    }

    weir_log_debug(r->connection->log, 0, "upstream: next peer, ft 0x%lx",
                   (unsigned long) ft);

    weir_http_upstream_retry(u);
}


void
weir_http_upstream_finalize(weir_http_upstream_t *u, weir_int_t rc)
{
    weir_connection_t          *c;
    weir_http_request_t        *r;
    weir_http_upstream_ctx_t   *ctx;
    weir_http_core_loc_conf_t  *clcf;

    r = u->request;
    ctx = u->pipe;
    c = r->connection;

    if (ctx->finalized) {
        return;
    }

    ctx->finalized = 1;

    weir_log_debug(c->log, 0, "finalize http upstream request: %d", (int) rc);

    weir_http_upstream_end_attempt(u);

    if (u->peer.connection || ctx->peer_held) {
        if (rc != WEIR_OK) {
            u->peer.keepalive = 0;
        }

        weir_http_upstream_free_peer(u, 0);
    }

    if (u->finalize_request) {
        u->finalize_request(r, rc);
    }

    c->log->action = "sending to client";

    if (r->read_event_handler == weir_http_upstream_abort_check
        || r->read_event_handler == weir_http_upstream_tunnel)
    {
        r->read_event_handler = weir_http_block_reading;
    }

    r->write_event_handler = weir_http_request_empty_handler;

    if (c->read->timer_set && !r->reading_body && !r->discard_body) {
        weir_event_del_timer(c->read);
    }

    if (rc == WEIR_OK && !c->error && (r->out || c->buffered)) {
        /* the response is complete but still queued for a slow client
         * (a temporary file may hold most of it): the writer that
         * finishes it re-arms send_timeout on each write event, the
         * timer must be there until the first one */
        clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

        if (!c->write->timer_set) {
            weir_event_add_timer(c->write, clcf->send_timeout);
        }

    } else if (c->write->timer_set) {
        weir_event_del_timer(c->write);
    }

    if ((u->header_sent || r->header_sent)
        && rc >= WEIR_HTTP_SPECIAL_RESPONSE)
    {
        rc = WEIR_ERROR;
    }

    if (rc == WEIR_ERROR && (u->header_sent || r->header_sent)) {
        r->keepalive = 0;
        c->error = 1;
    }

    weir_http_finalize_request(r, rc);
}


/* ---- events ----------------------------------------------------------- */

static void
weir_http_upstream_handler(weir_event_t *ev)
{
    weir_connection_t         *c, *cc;
    weir_http_request_t       *r;
    weir_http_upstream_t      *u;
    weir_http_upstream_ctx_t  *ctx;

    c = ev->data;
    r = c->data;

    if (r == NULL) {
        return;
    }

    u = r->upstream;
    ctx = u->pipe;
    cc = r->connection;

    if (ctx->finalized) {
        return;
    }

    if (r->main->terminated || cc->close) {
        /* the request is going away: the pool cleanup closes the rest */
        weir_http_upstream_finalize(u, WEIR_ERROR);
        weir_http_run_posted_requests(cc);
        return;
    }

    if (ev->write) {
        weir_http_upstream_write_handler(u, ev);

    } else {
        weir_http_upstream_read_handler(u, ev);
    }

    weir_http_run_posted_requests(cc);
}


static void
weir_http_upstream_write_handler(weir_http_upstream_t *u, weir_event_t *wev)
{
    weir_connection_t         *c;
    weir_http_upstream_ctx_t  *ctx;

    ctx = u->pipe;
    c = u->request->connection;

    if (ctx->tunnel) {
        weir_http_upstream_tunnel(u->request);
        return;
    }

    if (ctx->connecting) {
        if (wev->timedout) {
            c->log->action = "connecting to upstream";
            weir_log_error(WEIR_LOG_ERR, c->log, WEIR_ETIMEDOUT,
                           "upstream timed out");
            weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_TIMEOUT);
            return;
        }

        c->log->action = "connecting to upstream";

        if (weir_event_connect_result(&u->peer) != WEIR_OK) {
            weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_ERROR);
            return;
        }

        weir_http_upstream_connected(u);
        return;
    }

    if (ctx->sending) {
        if (wev->timedout) {
            c->log->action = "sending request to upstream";
            weir_log_error(WEIR_LOG_ERR, c->log, WEIR_ETIMEDOUT,
                           "upstream timed out");

            if (ctx->head_done) {
                /* the response is being relayed: stop sending */
                weir_http_upstream_stop_body(u);
                return;
            }

            weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_TIMEOUT);
            return;
        }

        weir_http_upstream_send(u);
    }
}


static void
weir_http_upstream_read_handler(weir_http_upstream_t *u, weir_event_t *rev)
{
    weir_connection_t         *c;
    weir_http_upstream_ctx_t  *ctx;

    ctx = u->pipe;
    c = u->request->connection;

    if (ctx->tunnel) {
        weir_http_upstream_tunnel(u->request);
        return;
    }

    if (ctx->connecting) {
        return;
    }

    if (ctx->relay) {
        if (rev->timedout) {
            rev->timedout = 0;
            c->log->action = "reading upstream";
            weir_log_error(WEIR_LOG_ERR, c->log, WEIR_ETIMEDOUT,
                           "upstream timed out");
            weir_http_upstream_finalize(u, WEIR_ERROR);
            return;
        }

        weir_http_upstream_process(u);
        return;
    }

    if (rev->timedout) {
        c->log->action = "reading response header from upstream";
        weir_log_error(WEIR_LOG_ERR, c->log, WEIR_ETIMEDOUT,
                       "upstream timed out");
        weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_TIMEOUT);
        return;
    }

    weir_http_upstream_process_head(u);
}


/* the client side while the core owns the request */

void
weir_http_upstream_client_handlers(weir_http_upstream_t *u)
{
    weir_http_request_t  *r;

    r = u->request;

    if (!r->reading_body) {
        r->read_event_handler = u->conf->ignore_client_abort
                                ? weir_http_block_reading
                                : weir_http_upstream_abort_check;
    }

    r->write_event_handler = weir_http_upstream_downstream;
}


static void
weir_http_upstream_abort_check(weir_http_request_t *r)
{
    weir_connection_t     *c;
    weir_http_upstream_t  *u;

    u = r->upstream;
    c = r->connection;

    weir_http_test_reading(r);

    /* weir_http_test_reading() finalized with 499 on a close: the
     * origin connection goes with the request (not kept) */
    if (c->error && u && !((weir_http_upstream_ctx_t *) u->pipe)->finalized)
    {
        ((weir_http_upstream_ctx_t *) u->pipe)->finalized = 1;
        weir_http_upstream_end_attempt(u);
        u->peer.keepalive = 0;
        weir_http_upstream_free_peer(u, 0);
    }
}


/* the client's write event: room to relay more */

static void
weir_http_upstream_downstream(weir_http_request_t *r)
{
    weir_connection_t         *c;
    weir_http_upstream_t      *u;
    weir_http_upstream_ctx_t  *ctx;

    c = r->connection;
    u = r->upstream;
    ctx = u->pipe;

    if (ctx->finalized) {
        return;
    }

    if (c->write->timedout) {
        c->timedout = 1;
        c->error = 1;
        c->log->action = "sending to client";
        weir_log_error(WEIR_LOG_INFO, c->log, WEIR_ETIMEDOUT,
                       "client timed out");
        weir_http_upstream_finalize(u, WEIR_ERROR);
        return;
    }

    if (ctx->tunnel) {
        weir_http_upstream_tunnel(r);
        return;
    }

    if (ctx->relay) {
        weir_http_upstream_process(u);
    }
}
