#ifndef _WEIR_EVENT_CONNECT_H_INCLUDED_
#define _WEIR_EVENT_CONNECT_H_INCLUDED_

/*
 * Outgoing connections (to origins). A peer connection asks a balancer
 * for an address through its get hook, opens a non-blocking socket and
 * starts connect(). The balancer learns how the attempt went through its
 * free hook. A keep-alive pool wraps both hooks: its get may hand out an
 * idle cached connection instead (WEIR_DONE), its free may keep the
 * connection instead of closing it.
 */

typedef struct weir_peer_connection_s  weir_peer_connection_t;

/*
 * get: choose the peer of one attempt, fill pc->sockaddr, socklen and
 * name, and mark it tried for this request: get does not hand it out
 * again in the same request (a lone peer included). The address stays
 * valid and unchanged until the matching free, so the caller may open
 * another connection to the same peer in between without calling get or
 * free (the upstream core does this once, after a cached connection
 * turned out to be stale): still one attempt, one count in conns, one
 * free. Calling get again before freeing the current attempt is not
 * allowed. Returns
 * WEIR_OK (connect to it), WEIR_DONE (pc->connection is an open,
 * connected, cached connection to use as it is), WEIR_BUSY (no live
 * peer: every one is down or failed) or WEIR_ERROR.
 */
typedef weir_int_t (*weir_event_get_peer_pt)(weir_peer_connection_t *pc,
    void *data);
/*
 * free: the attempt with the last peer that get chose is over. state is
 * 0 (it went well), or WEIR_PEER_FAILED (counts against max_fails) and
 * WEIR_PEER_NEXT (the request moves on to another peer) as bits. With
 * pc->keepalive set and no WEIR_PEER_FAILED, a pool may take
 * pc->connection (it then sets pc->connection to NULL); a balancer that
 * closes nothing leaves pc->connection alone and the caller closes it.
 * Decrements pc->tries.
 */
typedef void (*weir_event_free_peer_pt)(weir_peer_connection_t *pc,
    void *data, weir_uint_t state);

#define WEIR_PEER_KEY_MAX    320

#define WEIR_PEER_KEEPALIVE  1
#define WEIR_PEER_NEXT       2
#define WEIR_PEER_FAILED     4

struct weir_peer_connection_s {
    weir_connection_t          *connection;

    struct sockaddr            *sockaddr;
    socklen_t                   socklen;
    weir_str_t                 *name;       /* "127.0.0.1:8081" */

    weir_uint_t                 tries;      /* attempts left */
    weir_msec_t                 start_time;

    weir_event_get_peer_pt      get;
    weir_event_free_peer_pt     free;
    void                       *data;

    int                         rcvbuf;

    weir_log_t                 *log;

    unsigned                    cached:1;   /* get returned WEIR_DONE */
    unsigned                    keepalive:1;/* the caller says: reusable */
    /*
     * With the address, what makes two connections to a peer
     * interchangeable: a pool hands out a cached connection only to a
     * request whose key is byte for byte the one the connection was made
     * with. Empty for plain TCP; for TLS, the ssl module's summary of
     * everything that decides the handshake and its verification (the
     * client context with its trust store, CRL, client certificate,
     * protocols, ciphers and ALPN; the name checked and sent as SNI).
     * Set by the caller before get; at most WEIR_PEER_KEY_MAX bytes are
     * pooled.
     */
    weir_str_t                  key;

    unsigned                    log_error:2;
};

/*
 * Gets a peer (pc->get) and starts a non-blocking connect to it. The new
 * connection (pc->connection) has no pool (c->pool NULL, the caller
 * creates one if it wants), c->log = pc->log, its events' log pc->log,
 * TCP_NODELAY set, and is registered with the event backend (both
 * directions, edge-triggered where the backend is).
 *
 * Returns WEIR_OK (connected at once), WEIR_AGAIN (in progress: wait for
 * the write event, then check with weir_event_connect_result), WEIR_DONE
 * (a cached connection from the pool), WEIR_BUSY (no live peer),
 * WEIR_DECLINED (this peer failed at once, e.g. connect() refused on
 * loopback: pc->connection is closed and NULL, pc->free was NOT called;
 * the caller frees the peer with WEIR_PEER_FAILED and tries the next
 * one) or WEIR_ERROR (out of sockets or connections: no peer to blame).
 */
weir_int_t weir_event_connect_peer(weir_peer_connection_t *pc);

/* after the write event of an in-progress connect: WEIR_OK (connected)
 * or WEIR_ERROR (refused, unreachable: logged at error with the errno,
 * "connect() to NAME failed") */
weir_int_t weir_event_connect_result(weir_peer_connection_t *pc);

/* a get hook for a peer chosen outside a balancer: WEIR_OK when
 * pc->sockaddr and pc->name are set, else WEIR_ERROR */
weir_int_t weir_event_get_peer(weir_peer_connection_t *pc, void *data);

#endif /* _WEIR_EVENT_CONNECT_H_INCLUDED_ */
