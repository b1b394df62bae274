#ifndef _WEIR_HTTP_UPSTREAM_H_INCLUDED_
#define _WEIR_HTTP_UPSTREAM_H_INCLUDED_

/*
 * The upstream framework: one weir_http_upstream_t per proxied request.
 * docs/dev/upstream.md is the design; this header is the contract
 * between its pieces:
 *
 *   weir_http_upstream.c              the core: connect, retries,
 *                                     timeouts, 502/504, finalizing;
 *                                     with _send.c (the request),
 *                                     _relay.c (the response, with
 *                                     back-pressure, buffering and temp
 *                                     files) and _tunnel.c (the
 *                                     Upgrade tunnel), sharing
 *                                     weir_http_upstream_int.h
 *   weir_http_upstream_variables.c    the $upstream_* variables
 *   weir_http_upstream_v1.c           the HTTP/1.1 protocol handler: pure
 *                                     transforms between the neutral
 *                                     request/response and HTTP/1 bytes
 *   weir_http_upstream_conf.c         the upstream{} block, "server",
 *                                     "zone", implicit upstreams of
 *                                     proxy_pass, names resolved at start;
 *                                     weir_http_upstream_merge_conf
 *   weir_http_upstream_round_robin.c  the default balancer (smooth
 *                                     weighted round robin, backup, down,
 *                                     max_fails/fail_timeout), the peer
 *                                     state in a zone
 *   weir_http_upstream_keepalive.c    the keep-alive pool (on by default)
 *   src/modules/http_upstream_{least_conn,hash,random}  balancers
 *   src/modules/http_proxy            the proxy module (proxy_pass ...)
 *
 * The core never looks at a wire format: everything it knows about
 * HTTP/1 it learns through u->proto (weir_http_upstream_proto_t), so that
 * HTTP/2 and HTTP/3 origins plug in as further handlers, and nothing
 * here looks at r->proto either (any client protocol, any origin one).
 */

typedef struct weir_http_upstream_srv_conf_s   weir_http_upstream_srv_conf_t;
typedef struct weir_http_upstream_proto_s      weir_http_upstream_proto_t;
typedef struct weir_http_upstream_session_ops_s
    weir_http_upstream_session_ops_t;


/* ---- configuration shared by the modules that use the core ---------- */

/* proxy_next_upstream bits */
#define WEIR_HTTP_UPSTREAM_FT_ERROR           0x00000002
#define WEIR_HTTP_UPSTREAM_FT_TIMEOUT         0x00000004
#define WEIR_HTTP_UPSTREAM_FT_INVALID_HEADER  0x00000008
#define WEIR_HTTP_UPSTREAM_FT_HTTP_500        0x00000010
#define WEIR_HTTP_UPSTREAM_FT_HTTP_502        0x00000020
#define WEIR_HTTP_UPSTREAM_FT_HTTP_503        0x00000040
#define WEIR_HTTP_UPSTREAM_FT_HTTP_504        0x00000080
#define WEIR_HTTP_UPSTREAM_FT_HTTP_403        0x00000100
#define WEIR_HTTP_UPSTREAM_FT_HTTP_404        0x00000200
#define WEIR_HTTP_UPSTREAM_FT_HTTP_429        0x00000400
#define WEIR_HTTP_UPSTREAM_FT_NOLIVE          0x40000000
#define WEIR_HTTP_UPSTREAM_FT_NON_IDEMPOTENT  0x10000000
#define WEIR_HTTP_UPSTREAM_FT_OFF             0x80000000

#define WEIR_HTTP_UPSTREAM_FT_STATUS  (WEIR_HTTP_UPSTREAM_FT_HTTP_500         \
                                       |WEIR_HTTP_UPSTREAM_FT_HTTP_502        \
                                       |WEIR_HTTP_UPSTREAM_FT_HTTP_503        \
                                       |WEIR_HTTP_UPSTREAM_FT_HTTP_504        \
                                       |WEIR_HTTP_UPSTREAM_FT_HTTP_403        \
                                       |WEIR_HTTP_UPSTREAM_FT_HTTP_404        \
                                       |WEIR_HTTP_UPSTREAM_FT_HTTP_429)

/* for weir_conf_set_bitmask_slot: error timeout invalid_header http_500
 * http_502 http_503 http_504 http_403 http_404 http_429 non_idempotent
 * off (weir_http_upstream_conf.c) */
extern weir_conf_bitmask_t  weir_http_upstream_next_masks[];

/*
 * What a module that uses the core (the proxy module) configures per
 * location, embedded in its loc conf, merged with
 * weir_http_upstream_merge_conf(). Unset values are WEIR_CONF_UNSET*.
 */
typedef struct {
    weir_http_upstream_srv_conf_t  *upstream;   /* NULL: from variables */

    weir_msec_t                     connect_timeout;    /* 60s */
    weir_msec_t                     send_timeout;       /* 60s */
    weir_msec_t                     read_timeout;       /* 60s */
    weir_msec_t                     next_upstream_timeout;  /* 0: none */
    weir_uint_t                     next_upstream_tries;    /* 0: none */
    weir_uint_t                     http2_max_streams;      /* 128: streams
                                                               of a session
                                                               to an origin
                                                               at most */
    weir_msec_t                     http2_ping_idle;    /* 5s: a session
                                                           idle that long
                                                           is PINGed when
                                                           reused; 0: not */
    weir_uint_t                     next_upstream;      /* FT_ bits; default
                                                           error|timeout */

    size_t                          buffer_size;        /* 4k|8k: the head
                                                           buffer, and the
                                                           one buffer of
                                                           buffering off */
    weir_bufs_t                     bufs;               /* 8 4k|8k */
    size_t                          busy_buffers_size;  /* 2 * buffer */
    off_t                           max_temp_file_size; /* 1024m; 0: none */
    size_t                          temp_file_write_size; /* 2 * buffer */

    weir_flag_t                     buffering;          /* on */
    weir_flag_t                     request_buffering;  /* on */
    weir_flag_t                     intercept_errors;   /* off */
    weir_flag_t                     ignore_client_abort;/* off */
    weir_flag_t                     pass_trailers;      /* on */
    weir_flag_t                     socket_keepalive;   /* off */
    weir_flag_t                     strict_line_endings; /* off: a bare LF
                                                            ends a line of
                                                            an HTTP/1 head */

    /* response header names (lowercase) never relayed to the client, and
     * the ones relayed although hidden by default */
    weir_hash_t                     hide_headers_hash;
    weir_array_t                   *hide_headers;       /* of weir_str_t */
    weir_array_t                   *pass_headers;       /* of weir_str_t */

    weir_str_t                      module;             /* "proxy", for
                                                           log lines */
} weir_http_upstream_conf_t;

/*
 * Fills the unset values of conf from prev, then the defaults above, and
 * builds conf->hide_headers_hash from default_hide (lowercase names, NULL
 * terminated) + hide_headers - pass_headers. Returns WEIR_CONF_OK or an
 * error string.
 */
char *weir_http_upstream_merge_conf(weir_conf_t *cf,
    weir_http_upstream_conf_t *conf, weir_http_upstream_conf_t *prev,
    weir_str_t *default_hide);


/* ---- the neutral request to the origin and its answer ---------------- */

/*
 * What the origin is asked, filled by the module's create_request
 * callback. The protocol handler serializes it; nobody copies client
 * bytes to the origin (smuggling: docs/dev/upstream.md).
 */
typedef struct {
    weir_uint_t                  method;        /* WEIR_HTTP_GET ... */
    weir_str_t                   method_name;   /* "GET" */
    weir_str_t                   scheme;        /* "http" */
    weir_str_t                   authority;     /* Host / :authority */
    weir_str_t                   uri;           /* path and ?args, escaped */
    /* weir_http_header_t, key and value as to send; the handler skips
     * entries with hash 0 and entries with an empty value. Host,
     * Content-Length and Transfer-Encoding are never in this list: the
     * handler writes them from authority and body_length */
    weir_list_t                  headers;
    /* -1: a body of unknown length (HTTP/1.1: sent chunked); 0: none */
    off_t                        body_length;
    weir_uint_t                  http_version;  /* WEIR_HTTP_VERSION_10/11 */
    unsigned                     has_body:1;    /* a body follows (also
                                                   when body_length is 0
                                                   and the method needs a
                                                   "Content-Length: 0") */
    unsigned                     upgrade:1;     /* asks for an Upgrade */
    unsigned                     send_trailers:1; /* request trailers of
                                                   r->headers_in.trailers
                                                   go with a chunked body */
} weir_http_upstream_request_t;

/* the origin's response head, as the protocol handler parsed it */
typedef struct {
    weir_list_t                  headers;       /* of weir_http_header_t,
                                                   key as received, value
                                                   trimmed, lowcase_key,
                                                   hash, token */
    weir_list_t                  trailers;      /* after a chunked body */

    weir_uint_t                  status_n;
    weir_str_t                   status_line;   /* "200 OK" (code + reason) */
    weir_uint_t                  http_version;

    /* first occurrence of these (NULL: none) */
    weir_http_header_t          *connection;
    weir_http_header_t          *content_length;
    weir_http_header_t          *transfer_encoding;
    weir_http_header_t          *upgrade;
    weir_http_header_t          *keep_alive;
    weir_http_header_t          *location;
    weir_http_header_t          *refresh;
    weir_http_header_t          *date;
    weir_http_header_t          *server;
    weir_http_header_t          *content_type;

    off_t                        content_length_n;  /* -1: unknown */

    unsigned                     chunked:1;
    unsigned                     connection_close:1;
    unsigned                     no_body:1;     /* HEAD, 204, 304, 1xx */
} weir_http_upstream_headers_in_t;


/* ---- protocol handlers ---------------------------------------------- */

/* process_header results besides WEIR_OK, WEIR_AGAIN, WEIR_ERROR */
#define WEIR_HTTP_UPSTREAM_INVALID_HEADER  40
/* an interim 1xx head (not 101) is in u->headers_in: the core relays it
 * and calls process_header again for the next head */
#define WEIR_HTTP_UPSTREAM_INTERIM         41

/*
 * An origin protocol. For HTTP/1.1 (weir_http_upstream_v1.c) each hook
 * is a transform over buffers; the core does every read, write, timer
 * and allocation decision around them. All memory comes from
 * u->request->pool unless said otherwise.
 */
struct weir_http_upstream_proto_s {
    weir_str_t                   name;          /* "http/1.1" */
    weir_uint_t                  default_port;  /* 80 */

    /*
     * Serializes u->req (the request line or pseudo-headers, headers,
     * framing) into u->request_bufs: a chain of memory buffers. Called
     * once per request; a retry resends the same chain from the start
     * (the core keeps the original pos of each buffer).
     */
    weir_int_t  (*create_request)(weir_http_upstream_t *u);

    /*
     * Frames request body data for the origin: in is plain body data
     * (memory or file buffers, the last one with last_buf when the body
     * ends; in may be NULL with only_last set). Appends links to *out:
     * the same buffers for a body of known length, or chunk-size lines,
     * the data and CRLFs for chunked (the last chunk, the request
     * trailers when u->req.send_trailers, and the final CRLF after
     * last_buf). Framing buffers may be recycled through u->frame_free.
     * Returns WEIR_OK or WEIR_ERROR (more data than body_length says).
     */
    weir_int_t  (*encode_body)(weir_http_upstream_t *u, weir_chain_t *in,
                               weir_chain_t **out);

    /* resets the response-head parser (before each attempt) */
    void        (*reinit)(weir_http_upstream_t *u);

    /*
     * Parses the response head from u->buffer [pos, last) into
     * u->headers_in, advancing pos. WEIR_AGAIN: need more bytes (the
     * core reads more into u->buffer; a head that fills it is an invalid
     * header: "upstream sent too big header"). WEIR_OK: the head is
     * complete, pos is at the first body byte. WEIR_HTTP_UPSTREAM_INTERIM:
     * an interim (1xx, not 101) head is complete; the core relays it,
     * calls reinit_head and calls again. WEIR_HTTP_UPSTREAM_INVALID_HEADER:
     * malformed, or both Content-Length and Transfer-Encoding, or an
     * invalid length (logged at error by the handler naming what was
     * wrong: "upstream sent invalid header ... while reading response
     * header from upstream").
     */
    weir_int_t  (*process_header)(weir_http_upstream_t *u);
    /* clears u->headers_in for the next head after an interim one */
    void        (*reinit_head)(weir_http_upstream_t *u);

    /*
     * Body decoding, set up once the head is complete (u->headers_in,
     * u->req.method known): u->length is set to the bytes still
     * expected, -1 when unknown (close-delimited or chunked), 0 when the
     * response has no body.
     */
    weir_int_t  (*input_filter_init)(weir_http_upstream_t *u);
    /*
     * Decodes the bytes [b->pos, b->last) just read from the origin (b
     * is one of the core's raw buffers, b->pos is where the new bytes
     * begin), handing each piece of body data to the core with
     * weir_http_upstream_emit(u, b, start, end) (no copy: the piece stays
     * in b) and the end of the body with weir_http_upstream_emit_last(u)
     * once (trailers already in u->headers_in.trailers). Consumes all
     * of it (b->pos = b->last). Bytes after the end of the response set
     * u->keepalive = 0 and are dropped (logged at warn "upstream sent
     * more data than specified"). Returns WEIR_OK or WEIR_ERROR (invalid
     * chunked framing: logged at error).
     * With b == NULL: the origin closed the connection; emits the end
     * when the body was close-delimited, else returns WEIR_ERROR
     * ("upstream prematurely closed connection").
     */
    weir_int_t  (*input_filter)(weir_http_upstream_t *u, weir_buf_t *b);

    /*
     * Once the response body ended: may the connection carry another
     * request? (HTTP/1.1: the response was complete and length-framed or
     * chunked, no "Connection: close" from the origin, HTTP/1.1 origin,
     * the whole request including the body was sent, no extra bytes.)
     */
    weir_uint_t (*keepalive)(weir_http_upstream_t *u);

    /*
     * The session layer (docs/dev/upstream.md, "Sessions"): NULL for a
     * byte-stream protocol that carries one request at a time on the
     * origin connection itself (HTTP/1.1). A multiplexed protocol
     * (HTTP/2) gives each attempt a stream connection on a shared
     * session instead: u->peer.connection is then a connection with fd
     * -1 whose recv/writev/send move body bytes of that stream, whose
     * read and write events the session posts, and on which the core
     * arms its timers as on any connection.
     */
    weir_http_upstream_session_ops_t  *session;

    /* optional: the whole request (head and body) was written to the
     * connection (HTTP/2: the stream's END_STREAM) */
    void        (*request_done)(weir_http_upstream_t *u);

    /*
     * The session delivers response heads already parsed (HTTP/2):
     * process_header reads no bytes of u->buffer and returns WEIR_AGAIN
     * until a head is there (the read event is posted then), or
     * WEIR_HTTP_UPSTREAM_CLOSED when the stream ended before one.
     */
    unsigned                     parsed_head:1;
};

/* u->alpn: what a TLS origin is offered (the context's "http/1.1", or
 * "h2" alone, or "h2" then "http/1.1"); part of the pool key */
#define WEIR_HTTP_UPSTREAM_ALPN_DEFAULT    0
#define WEIR_HTTP_UPSTREAM_ALPN_H2         1
#define WEIR_HTTP_UPSTREAM_ALPN_AUTO       2

/* process_header of a parsed_head protocol: the stream ended (reset, the
 * session closed) before a head; u->unprocessed says whether the origin
 * is known not to have processed the request (REFUSED_STREAM, above a
 * GOAWAY's last stream id) */
#define WEIR_HTTP_UPSTREAM_CLOSED          42

extern weir_http_upstream_proto_t  weir_http_upstream_v1_proto;

/* where hi links the first field of token (weir_http_upstream_v1.c) */
weir_http_header_t **weir_http_upstream_header_link(
    weir_http_upstream_headers_in_t *hi, weir_uint_t token);


/* ---- the session layer ---------------------------------------------- */

/*
 * A multiplexed session to an origin, shared by the requests of a worker
 * (weir_http_upstream_session.c keeps the pool). The protocol embeds it
 * first in its own session object and implements the ops.
 */
typedef struct weir_http_upstream_session_s  weir_http_upstream_session_t;

struct weir_http_upstream_session_ops_s {
    /* the fresh origin connection c of u (connected, TLS done) becomes
     * a session: the protocol owns c from now on. NULL: failed (logged),
     * c is still the core's */
    weir_http_upstream_session_t *(*create)(weir_http_upstream_t *u,
                                            weir_connection_t *c);
    /* a stream for u on s with u's request head submitted: its
     * connection (c->data is for the core to set), or NULL (logged) */
    weir_connection_t  *(*open_stream)(weir_http_upstream_session_t *s,
                                       weir_http_upstream_t *u);
    /* the attempt on the stream is over: complete (the response ended,
     * the request was all sent) or not (the stream is reset) */
    void                (*close_stream)(weir_http_upstream_session_t *s,
                                        weir_connection_t *fc,
                                        weir_uint_t complete);
    /* may s open another stream for u now (the origin's
     * SETTINGS_MAX_CONCURRENT_STREAMS, u->conf->http2_max_streams)? */
    weir_uint_t         (*has_room)(weir_http_upstream_session_t *s,
                                    weir_http_upstream_t *u);
    /* ends s (a GOAWAY, then the connection closes when it can) */
    void                (*close)(weir_http_upstream_session_t *s);
};

struct weir_http_upstream_session_s {
    weir_queue_t                       queue;   /* in its pool */
    weir_queue_t                       idle_queue;  /* while no stream */
    void                              *pool;    /* NULL: out of it */
    weir_http_upstream_session_ops_t  *ops;
    weir_connection_t                 *connection;
    weir_event_t                       idle;    /* keepalive_timeout */
    weir_uint_t                        streams; /* open */
    weir_uint_t                        requests;/* streams opened */
    weir_msec_t                        start_time;
    socklen_t                          socklen;
    weir_sockaddr_t                    sockaddr;
    size_t                             key_len;
    unsigned char                      key[WEIR_PEER_KEY_MAX];
    unsigned                           draining:1;  /* no new stream */
    unsigned                           broken:1;    /* the connection
                                                       failed (the
                                                       protocol sets it) */
    unsigned                           failed:1;    /* one failure was
                                                       counted for it */
};

/*
 * For the protocols: the session can take no new stream (a GOAWAY, an
 * error); and it is gone (the connection closed): out of the pool. The
 * protocol frees its session once it is gone and no stream is open.
 */
void weir_http_upstream_session_drain(weir_http_upstream_session_t *s);


/* ---- peers and balancers -------------------------------------------- */

/* how a balancer plugs in: init_upstream at configuration time (after
 * the upstream block is parsed), init per request; init sets
 * u->peer.get, u->peer.free, u->peer.data and u->peer.tries */
typedef weir_int_t (*weir_http_upstream_init_pt)(weir_conf_t *cf,
    weir_http_upstream_srv_conf_t *us);
typedef weir_int_t (*weir_http_upstream_init_peer_pt)(weir_http_request_t *r,
    weir_http_upstream_srv_conf_t *us);

typedef struct {
    weir_http_upstream_init_pt        init_upstream;
    weir_http_upstream_init_peer_pt   init;
    void                             *data;     /* the balancer's */
} weir_http_upstream_peer_t;

/* one "server" line of an upstream block (or the address of an implicit
 * upstream): a name may resolve to several addresses, each a peer */
typedef struct {
    weir_str_t                   name;          /* as written */
    weir_addr_t                 *addrs;
    weir_uint_t                  naddrs;
    weir_uint_t                  weight;        /* 1 */
    weir_uint_t                  max_fails;     /* 1; 0: never marked */
    time_t                       fail_timeout;  /* 10s */
    weir_msec_t                  slow_start;    /* reserved, 0 */
    weir_uint_t                  max_conns;     /* 0: no limit */
    unsigned                     down:1;
    unsigned                     backup:1;
} weir_http_upstream_server_t;

#define WEIR_HTTP_UPSTREAM_CREATE        0x0001
#define WEIR_HTTP_UPSTREAM_WEIGHT        0x0002
#define WEIR_HTTP_UPSTREAM_MAX_FAILS     0x0004
#define WEIR_HTTP_UPSTREAM_FAIL_TIMEOUT  0x0008
#define WEIR_HTTP_UPSTREAM_DOWN          0x0010
#define WEIR_HTTP_UPSTREAM_BACKUP        0x0020
#define WEIR_HTTP_UPSTREAM_MAX_CONNS     0x0100

struct weir_http_upstream_srv_conf_s {
    weir_http_upstream_peer_t    peer;
    void                       **srv_conf;  /* the block's module confs */

    weir_array_t                *servers;   /* of
                                               weir_http_upstream_server_t */
    weir_uint_t                  flags;     /* what the balancer allows
                                               on "server" lines */
    weir_str_t                   host;      /* block name, or the host of
                                               an implicit upstream */
    unsigned char               *file_name;
    weir_uint_t                  line;
    in_port_t                    port;
    weir_uint_t                  no_port;   /* implicit without a port */

    /* the keep-alive pool of this group (weir_http_upstream_keepalive.c;
     * NULL when "keepalive 0") */
    void                        *keepalive;
    /* its session pool (weir_http_upstream_session.c), NULL until a
     * request of this worker needs one */
    void                        *sessions;

    /* "zone": the shared memory zone that holds the run-time state of
     * the group's peers (NULL: per worker), and where the directive is */
    weir_shm_zone_t             *shm_zone;
    unsigned char               *zone_file_name;
    weir_uint_t                  zone_line;

    /* the settings of its pools when they come from no block: those of
     * named_peers_keepalive for the peers named at request time (NULL:
     * the block's directives, or the defaults) */
    struct weir_http_upstream_keepalive_conf_s  *keepalive_conf;
};

/* the upstream module's main conf: every group, explicit or implicit */
typedef struct {
    weir_hash_t                  headers_in_hash;   /* reserved */
    weir_array_t                 upstreams;  /* of
                                                weir_http_upstream_srv_conf_t *
                                              */
    /* the pools (keep-alive, sessions) of the peers named at request
     * time (proxy_pass with variables, a forward proxy's targets): one
     * for all, keyed by address and TLS, with the settings of
     * named_peers_keepalive */
    weir_http_upstream_srv_conf_t  *resolved;
} weir_http_upstream_main_conf_t;

/*
 * Finds or adds the group for url (weir_http_upstream_conf.c):
 * - flags WEIR_HTTP_UPSTREAM_CREATE (the upstream block itself): a block
 *   of the same name twice is an error ("duplicate upstream");
 * - otherwise (proxy_pass http://NAME[:port]): a group named NAME without
 *   a port matches a block of that name, even one defined further down
 *   the configuration (the match is completed in init_main_conf);
 *   host:port with no block of that name is an implicit group whose
 *   address is resolved now (weir_parse_addr_port: IP literal or name;
 *   a name that does not resolve is "host not found in upstream ..."
 *   with file:line), with every address a peer and default parameters.
 * Returns the group or NULL (error logged with weir_conf_log_error).
 */
weir_http_upstream_srv_conf_t *weir_http_upstream_add(weir_conf_t *cf,
    weir_str_t *host, in_port_t port, weir_uint_t no_port,
    weir_uint_t flags);

/*
 * Round robin (weir_http_upstream_round_robin.c): the default balancer
 * and the base the others build on. max_fails failures within
 * fail_timeout mark a peer unavailable for fail_timeout; then one
 * request probes it, a success makes it available again.
 *
 * A peer's configuration (address, weight, limits) is in the cycle's
 * pool, its run-time state behind peer->state: in the pool too, per
 * worker, as nginx without "zone"; or, for a group with "zone", in the
 * shared memory zone, the same for every worker, read and changed only
 * under the group's lock (peers->mutex, NULL without a zone: no lock).
 * A balancer's get takes it once around its whole choice (rrp->peers may
 * switch to the backups meanwhile: they share the primary's lock), and
 * round robin's free takes it once.
 */
typedef struct weir_http_upstream_rr_peer_s   weir_http_upstream_rr_peer_t;
typedef struct weir_http_upstream_rr_peers_s  weir_http_upstream_rr_peers_t;

typedef struct {
    weir_int_t                       current_weight;
    weir_int_t                       effective_weight;

    weir_uint_t                      conns;     /* active connections */

    weir_uint_t                      fails;
    time_t                           accessed;  /* last failure */
    time_t                           checked;   /* last probe / success */
} weir_http_upstream_rr_state_t;

struct weir_http_upstream_rr_peer_s {
    struct sockaddr                 *sockaddr;
    socklen_t                        socklen;
    weir_str_t                       name;      /* "127.0.0.1:8081" */
    weir_str_t                       server;    /* the "server" argument */

    weir_int_t                       weight;
    weir_uint_t                      max_conns;
    weir_uint_t                      max_fails;
    time_t                           fail_timeout;
    weir_uint_t                      down;

    weir_http_upstream_rr_state_t   *state;
    weir_http_upstream_rr_peer_t    *next;
};

struct weir_http_upstream_rr_peers_s {
    weir_uint_t                      number;
    weir_uint_t                      total_weight;
    weir_uint_t                      tries;     /* peers that may be tried */
    unsigned                         single:1;
    unsigned                         weighted:1;
    weir_str_t                      *name;      /* the group */
    weir_http_upstream_rr_peers_t   *next;      /* the backup peers */
    weir_http_upstream_rr_peer_t    *peer;      /* a list */

    /* the group's lock in its zone, shared by the primary and the backup
     * peers (it is the primary's lock); NULL: no zone, no lock */
    weir_shmtx_t                    *mutex;
    weir_shmtx_t                     lock;
};

/* per request: which peers were tried (a bitmap over peers->number) */
typedef struct {
    weir_http_upstream_rr_peers_t   *peers;
    weir_http_upstream_rr_peer_t    *current;
    uintptr_t                       *tried;
    uintptr_t                        data;
} weir_http_upstream_rr_peer_data_t;

weir_int_t weir_http_upstream_init_round_robin(weir_conf_t *cf,
    weir_http_upstream_srv_conf_t *us);
weir_int_t weir_http_upstream_init_round_robin_peer(weir_http_request_t *r,
    weir_http_upstream_srv_conf_t *us);
/* a one-off group for proxy_pass with variables that named an address
 * (u->resolved); no block, no health kept beyond the request */
weir_int_t weir_http_upstream_create_round_robin_peer(weir_http_request_t *r,
    weir_addr_t *addrs, weir_uint_t naddrs, weir_str_t *host);
weir_int_t weir_http_upstream_get_round_robin_peer(
    weir_peer_connection_t *pc, void *data);
/* the same with the group's lock held (a balancer falling back to round
 * robin inside its own get) */
weir_int_t weir_http_upstream_get_round_robin_peer_locked(
    weir_peer_connection_t *pc, weir_http_upstream_rr_peer_data_t *rrp);
void weir_http_upstream_free_round_robin_peer(weir_peer_connection_t *pc,
    void *data, weir_uint_t state);
/* is peer usable now (down, max_fails within fail_timeout, max_conns)?
 * (with the group's lock held) */
weir_uint_t weir_http_upstream_rr_peer_usable(
    weir_http_upstream_rr_peer_t *peer, time_t now);

/* the tried bitmap: was peer number i of rrp->peers tried already? */
#define WEIR_HTTP_UPSTREAM_TRIED_BITS  (8 * sizeof(uintptr_t))
#define weir_http_upstream_rr_tried(rrp, i)                                   \
    ((rrp)->tried[(i) / WEIR_HTTP_UPSTREAM_TRIED_BITS]                        \
     & ((uintptr_t) 1 << (i) % WEIR_HTTP_UPSTREAM_TRIED_BITS))

/*
 * Every balancer's last step: peer (number i of rrp->peers) becomes this
 * attempt's. Marks it tried and current, fills pc->sockaddr, socklen and
 * name, counts the connection, and makes this request the probe of a
 * peer past its fail_timeout (with the group's lock held). Returns
 * WEIR_OK.
 */
weir_int_t weir_http_upstream_rr_use_peer(weir_peer_connection_t *pc,
    weir_http_upstream_rr_peer_data_t *rrp,
    weir_http_upstream_rr_peer_t *peer, weir_uint_t i, time_t now);
/*
 * No primary peer is usable: the backups become rrp->peers with a fresh
 * tried bitmap. WEIR_OK, or WEIR_BUSY when there are none (pc->name is
 * then the group's name, pc->sockaddr NULL).
 */
weir_int_t weir_http_upstream_rr_use_backups(weir_peer_connection_t *pc,
    weir_http_upstream_rr_peer_data_t *rrp);

/*
 * "zone" (the directive in weir_http_upstream_conf.c, these two in
 * weir_http_upstream_round_robin.c): the zone's init, which moves the
 * lock and the peers' state of every group that names the zone into it,
 * and the check, once every group has built its peers (also under -t,
 * which maps no zone), that each zone has a size and room for its groups
 * (WEIR_OK, or WEIR_ERROR logged with the directive's file:line).
 */
weir_int_t weir_http_upstream_init_zone(weir_shm_zone_t *zone, void *data);
weir_int_t weir_http_upstream_check_zones(weir_conf_t *cf,
    weir_http_upstream_main_conf_t *umcf);

/*
 * The keep-alive pool (weir_http_upstream_keepalive.c), in every group
 * by default ("keepalive N" in the block, 32 by default, 0 turns it off;
 * implicit groups get the default): called by the core right after the
 * balancer's init, it wraps u->peer.get/free/data.
 * Per worker, per group: at most N idle connections, a connection is
 * matched by peer address and pc->key (the TLS settings that made it:
 * the proxy_ssl module's upstream_key hook), hashed by both. An idle
 * connection is closed after keepalive_timeout (60s), after
 * keepalive_requests (1000) requests, or when the origin closes it or
 * sends anything while idle.
 */
weir_int_t weir_http_upstream_keepalive_init_peer(weir_http_request_t *r,
    weir_http_upstream_srv_conf_t *us);
/* closes every idle cached connection of this worker (graceful stop) */
void weir_http_upstream_keepalive_close_all(weir_cycle_t *cycle);

/* the keep-alive settings of a group (the defaults for us NULL or a
 * group without the directives): sessions follow them too */
typedef struct weir_http_upstream_keepalive_conf_s {
    weir_int_t                   max_cached;
    weir_int_t                   requests;
    weir_msec_t                  timeout;
    weir_msec_t                  time;
} weir_http_upstream_keepalive_conf_t;

void weir_http_upstream_keepalive_conf(weir_http_upstream_srv_conf_t *us,
    weir_http_upstream_keepalive_conf_t *conf);

/*
 * The session pool (weir_http_upstream_session.c): for a protocol with
 * sessions, called after the keep-alive pool's init, it wraps
 * u->peer.get/free again: get hands out a stream on a session to the
 * chosen peer that has room (WEIR_DONE), free closes the stream.
 * weir_http_upstream_session_start makes a fresh connection a session
 * and puts a stream of it in u->peer.connection.
 */
weir_int_t weir_http_upstream_session_init_peer(weir_http_request_t *r,
    weir_http_upstream_srv_conf_t *us);
weir_int_t weir_http_upstream_session_start(weir_http_upstream_t *u);
/* proxy_http_version auto: the origin of the attempt's fresh connection
 * chose HTTP/1.1, no session comes of it; its waiters connect alone */
void weir_http_upstream_session_declined(weir_http_upstream_t *u);
/* a parked attempt (get returned WEIR_AGAIN with no connection: it waits
 * for a session being opened) goes on: see weir_http_upstream.c */
void weir_http_upstream_session_resume(weir_http_upstream_t *u,
    weir_int_t rc, weir_uint_t ft);
/* the attempt's stream goes (reset), the peer stays held (a retry on a
 * fresh connection to the same peer follows) */
void weir_http_upstream_session_detach(weir_http_upstream_t *u);
/* is c a stream connection of a session? */
#define weir_http_upstream_is_stream(c)  ((c)->fd == (weir_fd_t) -1)
void weir_http_upstream_session_close_all(weir_cycle_t *cycle);


/* ---- the per-request upstream object -------------------------------- */

/* one attempt at one peer, for $upstream_* variables and the log */
typedef struct {
    weir_uint_t                  status;        /* 0: no response */
    weir_msec_t                  response_time;
    weir_msec_t                  connect_time;  /* (weir_msec_t) -1: none */
    weir_msec_t                  header_time;
    off_t                        bytes_received;
    off_t                        bytes_sent;
    off_t                        response_length;
    weir_str_t                  *peer;          /* address name */
} weir_http_upstream_state_t;

/* proxy_pass with variables: what the variables named */
typedef struct {
    weir_str_t                   host;
    in_port_t                    port;
    weir_uint_t                  no_port;
    weir_addr_t                 *addrs;     /* NULL: host names a group or
                                               needs resolving */
    weir_uint_t                  naddrs;
    unsigned                     by_name:1; /* a host, never a group (a
                                               forward proxy's target) */
    unsigned                     no_loop:1; /* never one of weir's own
                                               listening addresses */
    weir_array_t                *deny;      /* of weir_cidr_t: addresses
                                               never connected to */
} weir_http_upstream_resolved_t;

struct weir_http_upstream_s {
    weir_http_request_t             *request;
    weir_http_upstream_conf_t       *conf;
    weir_http_upstream_srv_conf_t   *upstream;  /* the group, or NULL */
    weir_http_upstream_resolved_t   *resolved;  /* or this */
    weir_http_upstream_proto_t      *proto;
    void                            *proto_ctx; /* the handler's state */
    /* u->alpn AUTO: the protocol of an attempt whose origin chose the
     * other one (proto and alt_proto swap; the core rebuilds the
     * request with the new one) */
    weir_http_upstream_proto_t      *alt_proto;

    weir_peer_connection_t           peer;

    /* the module's callbacks */
    weir_int_t                     (*create_request)(weir_http_request_t *r);
    weir_int_t                     (*reinit_request)(weir_http_request_t *r);
    /* the head is in u->headers_in (final, not 1xx): fill r->headers_out
     * (status, headers, content length) from it; may return an HTTP
     * status (>= 500) to fail the attempt */
    weir_int_t                     (*process_header)(weir_http_request_t *r);
    void                           (*finalize_request)(weir_http_request_t *r,
                                                       weir_int_t rc);
    /*
     * A CONNECT's interception (the mitm module): once the origin is
     * connected and "200 Connection established" is on its way, called
     * with what the client sent after its head. WEIR_DECLINED: the
     * tunnel goes on; WEIR_OK: the callee took u->peer.connection
     * (and set it to NULL) and the client connection (see
     * weir_http_connection_t.takeover): the core finalizes the request;
     * WEIR_ERROR: it fails as a tunnel that could not start.
     */
    weir_int_t                     (*intercept)(weir_http_upstream_t *u,
                                                weir_str_t *preread);

    weir_http_upstream_request_t     req;
    weir_chain_t                    *request_bufs;  /* the serialized head
                                                       (and a buffered
                                                       body) */
    weir_http_upstream_headers_in_t  headers_in;

    /* response side */
    weir_buf_t                       buffer;    /* head buffer (buffer_size),
                                                   then the first body buffer */
    off_t                            length;    /* body bytes still expected,
                                                   -1 unknown */
    weir_chain_t                    *out_bufs;  /* emitted, not yet passed */
    weir_chain_t                   **last_out;
    weir_chain_t                    *free_bufs; /* links and view buffers */
    weir_chain_t                    *busy_bufs; /* passed, not yet sent */
    weir_chain_t                    *frame_free;/* framing bufs for the
                                                   handler (encode_body) */
    void                            *pipe;      /* the core's buffering
                                                   and temp-file state */

    weir_array_t                    *state;     /* of
                                                   weir_http_upstream_state_t,
                                                   one per attempt */
    weir_http_upstream_state_t      *cur;       /* current attempt */

    weir_str_t                       schema;    /* "http://" */
    weir_str_t                       uri;       /* for logs */

    weir_msec_t                      start_time;    /* first attempt */
    weir_uint_t                      tries;

    unsigned                         request_sent:1;    /* head + body */
    unsigned                         request_body_sent:1;
    unsigned                         request_body_blocked:1;
    unsigned                         header_sent:1;     /* to the client */
    unsigned                         response_started:1;/* any byte read */
    unsigned                         body_done:1;       /* emit_last seen */
    unsigned                         keepalive:1;       /* handler says ok */
    unsigned                         upgrade:1;         /* tunnel */
    unsigned                         connect:1;         /* a CONNECT: once
                                                           connected, a 200
                                                           and a tunnel */
    unsigned                         buffering:1;
    unsigned                         request_buffering:1;
    unsigned                         store:1;           /* reserved */
    unsigned                         aborted:1;
    unsigned                         ssl:1;             /* TLS to the
                                                           origin
                                                           (https://) */
    unsigned                         early_response:1;  /* the response
                                                           ended before the
                                                           request body was
                                                           all sent: the
                                                           rest is not */
    unsigned                         alpn:2;            /* TLS: what to
                                                           offer, below */
    unsigned                         origin_h2:1;       /* ALPN chose h2 */
    unsigned                         forward:1;         /* a forward
                                                           proxy's: the
                                                           client named the
                                                           origin */
    unsigned                         unprocessed:1;     /* the origin did
                                                           not process this
                                                           attempt (HTTP/2
                                                           REFUSED_STREAM,
                                                           GOAWAY) */
};

/*
 * The module's content handler does:
 *
 *     if (weir_http_upstream_create(r) != WEIR_OK) return 500;
 *     u = r->upstream; fill u->conf, u->upstream or u->resolved,
 *     u->proto, u->schema, the callbacks;
 *     r->request_body_no_buffering = !u->conf->request_buffering;
 *     rc = weir_http_read_client_request_body(r, weir_http_upstream_init);
 *     if (rc >= WEIR_HTTP_SPECIAL_RESPONSE || rc == WEIR_ERROR) return rc;
 *     return WEIR_DONE;
 *
 * From then on the core owns the request until it finalizes it.
 */
weir_int_t weir_http_upstream_create(weir_http_request_t *r);
void weir_http_upstream_init(weir_http_request_t *r);

/* for the protocol handler's input_filter: a piece of body data
 * [start, end) inside the raw buffer b, and the end of the body */
weir_int_t weir_http_upstream_emit(weir_http_upstream_t *u, weir_buf_t *b,
    unsigned char *start, unsigned char *end);
weir_int_t weir_http_upstream_emit_last(weir_http_upstream_t *u);

/* added for TLS: the ssl module's end of the upstream handshake
 * (weir_http_ssl_hooks_t.upstream_handshake): WEIR_OK -> the request is
 * sent; WEIR_ERROR -> this peer failed (FT_ERROR: next peer or 502) */
void weir_http_upstream_ssl_done(weir_http_upstream_t *u, weir_int_t rc);

/* hop-by-hop header? (Connection, Keep-Alive, TE, Trailer,
 * Transfer-Encoding, Upgrade, Proxy-Connection, Proxy-Authenticate,
 * Proxy-Authorization, and the names that h's Connection header lists
 * when connection is not NULL) */
weir_uint_t weir_http_upstream_hop_by_hop(weir_http_header_t *h,
    weir_http_header_t *connection);

extern weir_module_t  weir_http_upstream_module;

#endif /* _WEIR_HTTP_UPSTREAM_H_INCLUDED_ */
