#ifndef _WEIR_HTTP_V2_H_INCLUDED_
#define _WEIR_HTTP_V2_H_INCLUDED_

/*
 * HTTP/2 to clients, on nghttp2 (the ssize_t API of 1.52). Three files:
 * weir_http_v2_module.c (directives, the hooks of cmcf->v2, $http2),
 * weir_http_v2.c (the session: reading, the coalesced write path,
 * SETTINGS, limits, timeouts, GOAWAY) and weir_http_v2_stream.c (one
 * request per stream on a fake connection, the weir_http_proto_t of
 * HTTP/2). docs/dev/http2.md describes the model.
 */

#include <nghttp2/nghttp2.h>


#define WEIR_HTTP_V2_PREFACE      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define WEIR_HTTP_V2_PREFACE_LEN  (sizeof(WEIR_HTTP_V2_PREFACE) - 1)


typedef struct {
    size_t                       recv_buffer_size;
} weir_http_v2_main_conf_t;


typedef struct {
    weir_flag_t                  enable;
    weir_uint_t                  max_concurrent_streams;
    size_t                       chunk_size;
    size_t                       stream_window;
    size_t                       connection_window;
} weir_http_v2_srv_conf_t;


/* abuse counters: frames of a kind that carry no request progress,
 * counted per one-second window (weir_http_v2_flood()) */
#define WEIR_HTTP_V2_FLOOD_REFUSED    0   /* refused (REFUSED_STREAM) */
#define WEIR_HTTP_V2_FLOOD_RESET      1   /* reset by the client before the
                                             response */
#define WEIR_HTTP_V2_FLOOD_WINDOW     2   /* WINDOW_UPDATE beyond the DATA
                                             sent */
#define WEIR_HTTP_V2_FLOOD_PRIORITY   3
#define WEIR_HTTP_V2_FLOOD_DATA       4   /* empty or tiny DATA, not last */
#define WEIR_HTTP_V2_FLOOD_N          5


typedef struct weir_http_v2_conn_s    weir_http_v2_conn_t;


/*
 * The output of an nghttp2 session, server or client
 * (weir_http_v2_wire.c): frames nghttp2 gave and the socket has not
 * taken yet, out (the worker's shared buffer during a flush; one of the
 * session's own while bytes wait after it, freed when the session is
 * idle) then pend, the rest of the last piece nghttp2 returned (valid
 * until its next mem_send).
 */
typedef struct {
    unsigned char               *out;
    unsigned char               *out_pos;
    unsigned char               *out_last;
    size_t                       out_size;
    const unsigned char         *pend;
    size_t                       pend_len;

    /* called with each piece collected while set (it clears it) */
    void                       (*patch)(void *data, unsigned char *p,
                                        size_t len);
    void                        *patch_data;

    unsigned                     posted:1;      /* the write event */
    unsigned                     blocked:1;     /* the socket is full */
    unsigned                     broken:1;      /* a socket error */
    unsigned                     shared:1;      /* out is the worker's */
} weir_http_v2_wire_t;

weir_int_t weir_http_v2_wire_flush(weir_http_v2_wire_t *w,
    nghttp2_session *session, weir_connection_t *c,
    weir_msec_t send_timeout, weir_uint_t idle);
void weir_http_v2_wire_free(weir_http_v2_wire_t *w);

/* weir_http_v2_upstream.c: HTTP/2 to origins */
extern weir_http_upstream_proto_t  weir_http_v2_upstream_proto;

/* weir_http_v2_wire.c: a stream's fake events leave the timers and the
 * posted queue (the stream goes, client's or origin's) */
void weir_http_v2_events_done(weir_event_t *rev, weir_event_t *wev);

/* weir_http_v2.c: the worker's receive buffer, at least size bytes */
unsigned char *weir_http_v2_recv_buffer(size_t size, weir_log_t *log);

typedef struct weir_http_v2_stream_s  weir_http_v2_stream_t;


/* per connection, in c->pool (hc->proto_ctx) */
struct weir_http_v2_conn_s {
    weir_connection_t           *connection;
    weir_http_connection_t      *http_connection;
    nghttp2_session             *session;
    weir_http_v2_srv_conf_t     *h2scf;

    weir_http_v2_wire_t          wire;      /* the output */

    weir_queue_t                 streams;   /* open, of the stream type */
    weir_uint_t                  nstreams;
    weir_uint_t                  nrequests;
    weir_uint_t                  keepalive_requests;
    weir_http_v2_stream_t       *free_streams;  /* recycled, in c->pool */

    weir_msec_t                  idle_timeout;
    weir_msec_t                  header_timeout;

    /* abuse counters of the current one-second window */
    weir_msec_t                  flood_start;
    weir_uint_t                  flood[WEIR_HTTP_V2_FLOOD_N];
    weir_uint_t                  flood_limit[WEIR_HTTP_V2_FLOOD_N];
    weir_uint_t                  data_sent;     /* DATA frames, this window */

    /* the stream ids the client skipped (the last few ranges): a
     * HEADERS on one later is a new stream below the last, a
     * PROTOCOL_ERROR (RFC 9113 5.1.1) that nghttp2 does not see */
    int32_t                      max_headers_id;
    int32_t                      skipped[4][2];
    weir_uint_t                  nskipped;

    weir_event_t                 shutdown;  /* the second GOAWAY */
    int32_t                      last_stream_id;

    unsigned                     ssl:1;
    unsigned                     closing:1;     /* GOAWAY sent, ends
                                                   when no stream left */
    unsigned                     goaway_final:1;
    unsigned                     in_handler:1;  /* guard: close later */
    unsigned                     close_pending:1;
    unsigned                     destroyed:1;
    unsigned                     settings_sent:1;   /* the first SETTINGS */
    unsigned                     failed:1;      /* ends on an error GOAWAY,
                                                   logged */
    unsigned                     goaway_sent:1; /* a GOAWAY went to the
                                                   output */
    unsigned                     broken:1;      /* the socket failed, the
                                                   client closed, or a
                                                   send timed out */
    unsigned                     finalizing:1;
};


/*
 * Per stream, with its fake connection: allocated from c->pool and
 * recycled through h2c->free_streams (so the connection's memory is
 * bounded by the streams open at once, not by the requests served);
 * the request and everything it allocates live in r->pool.
 */
struct weir_http_v2_stream_s {
    weir_queue_t                 queue;     /* in h2c->streams */
    weir_http_v2_stream_t       *next_free;
    weir_connection_t            conn;
    weir_event_t                 rev;
    weir_event_t                 wev;
    weir_log_t                   log;
    weir_http_log_ctx_t          log_ctx;
    weir_http_v2_conn_t         *h2c;
    weir_http_request_t         *request;
    weir_connection_t           *fc;        /* the fake connection */
    int32_t                      id;

    /* request pseudo-headers as received */
    weir_str_t                   method;
    weir_str_t                   path;
    weir_str_t                   scheme;
    weir_str_t                   authority;
    weir_str_t                   protocol;  /* Extended CONNECT */
    size_t                       header_bytes;
    weir_uint_t                  nheaders;

    /* the request body */
    off_t                        body_received;
    weir_buf_t                  *body_buf;  /* memory block being filled */
    size_t                       unconsumed;    /* DATA not yet credited */
    weir_chain_t                *pre;       /* DATA before read_body */
    weir_chain_t               **pre_last;
    /* streamed (request_body_no_buffering): DATA not handed yet, the
     * blocks the consumer holds, blocks to reuse (all of ub_size) */
    weir_chain_t                *ub_in;
    weir_chain_t               **ub_in_last;
    weir_chain_t                *ub_tail;  /* ub_in's last, if any */
    weir_chain_t                *ub_busy;
    weir_chain_t                *ub_free;
    size_t                       ub_size;
    weir_http_header_t          *cookies;   /* crumbs, joined at the end */
    weir_uint_t                  bad_status;

    /* the response body waiting for nghttp2's data provider */
    weir_chain_t                *out;
    weir_chain_t                *free;
    weir_buf_t                  *file_buf;
    off_t                        out_bytes;

    /* a WebSocket tunnel (Extended CONNECT, RFC 8441): the client's
     * DATA not yet taken (at most the stream window), and the bytes
     * for it, queued on out */
    weir_buf_t                  *tun_in;
    weir_buf_t                  *tun_out;

    unsigned                     headers_done:1;
    unsigned                     in_regular:1;  /* past the pseudo-headers */
    unsigned                     bad:1;         /* refuse at the end */
    unsigned                     end_stream:1;  /* the client's END_STREAM */
    unsigned                     reading:1;     /* read_body was called */
    unsigned                     discard:1;
    unsigned                     data_deferred:1;
    unsigned                     last_queued:1;
    unsigned                     response_submitted:1;
    unsigned                     closed:1;      /* nghttp2 closed it */
    unsigned                     done:1;        /* the request was freed */
    unsigned                     started:1;     /* the phases run */
    unsigned                     trailers:1;
    unsigned                     unbuffered:1;  /* the body is streamed */
    unsigned                     ub_waiting:1;  /* its consumer waits for
                                                   DATA */
    unsigned                     websocket:1;   /* :protocol websocket */
    unsigned                     connect:1;     /* a plain CONNECT (RFC
                                                   9113 8.5) */
    unsigned                     tunnel:1;      /* its tunnel started */
    unsigned                     drop_body:1;   /* a 502 for its 2xx */
    unsigned                     head_pending:1; /* a response without a
                                                    body: its HEADERS not
                                                    out yet */
};

/* a stream whose DATA becomes a tunnel's bytes once the origin agrees:
 * WebSocket's Extended CONNECT, or a forward proxy's CONNECT */
#define weir_http_v2_tunnel_stream(st)  ((st)->websocket || (st)->connect)


/* weir_http_v2_mem.c */
nghttp2_mem *weir_http_v2_mem(void);

/* weir_http_v2.c */
void weir_http_v2_init_connection(weir_connection_t *c,
    unsigned char *data, size_t len);
weir_uint_t weir_http_v2_enabled(weir_connection_t *c);
/* asks for the write path to run once this event-loop pass is done */
void weir_http_v2_post_write(weir_http_v2_conn_t *h2c);
void weir_http_v2_write_now(weir_http_v2_conn_t *h2c);
/* the session may be done (no stream, closing): close it */
void weir_http_v2_check_close(weir_http_v2_conn_t *h2c);
/* counts a frame of a flood kind: 0, or NGHTTP2_ERR_CALLBACK_FAILURE
 * (logged, GOAWAY ENHANCE_YOUR_CALM queued) for the callback to return */
int weir_http_v2_flood(weir_http_v2_conn_t *h2c, weir_uint_t kind);
/* on_begin_headers: 1 if the stream is refused (RST_STREAM
 * REFUSED_STREAM queued), 0 if it may open, or a callback error */
int weir_http_v2_refuse_stream(weir_http_v2_conn_t *h2c, int32_t id);

/* weir_http_v2_stream.c: nghttp2 callbacks for streams */
int weir_http_v2_on_begin_headers(nghttp2_session *session,
    const nghttp2_frame *frame, void *user_data);
int weir_http_v2_on_header(nghttp2_session *session,
    const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
    const uint8_t *value, size_t valuelen, uint8_t flags, void *user_data);
int weir_http_v2_on_frame_recv_stream(weir_http_v2_conn_t *h2c,
    const nghttp2_frame *frame);
int weir_http_v2_on_data_chunk(nghttp2_session *session, uint8_t flags,
    int32_t stream_id, const uint8_t *data, size_t len, void *user_data);
int weir_http_v2_on_stream_close(nghttp2_session *session,
    int32_t stream_id, uint32_t error_code, void *user_data);
/* the session goes: every stream's request is told (c->error) */
void weir_http_v2_close_streams(weir_http_v2_conn_t *h2c);

/* weir_http_v2_body.c: a streamed request body. ub_start from read_body
 * (WEIR_OK: all of it went, WEIR_AGAIN or an HTTP status), ub_put from
 * the DATA callback (WEIR_OK or WEIR_ERROR), read_unbuffered the proto
 * hook */
weir_int_t weir_http_v2_ub_start(weir_http_v2_stream_t *st);
weir_int_t weir_http_v2_ub_put(weir_http_v2_stream_t *st,
    const unsigned char *data, size_t len);
weir_int_t weir_http_v2_read_unbuffered(weir_http_request_t *r);
/* weir_http_v2_stream.c: the status that ends reading st's body, or 0 */
weir_int_t weir_http_v2_body_failed(weir_http_v2_stream_t *st);
/* the stream's output is all out: its writer goes on */
void weir_http_v2_wake_writer(weir_http_v2_stream_t *st);

/* a header of the request with its token; its handler runs later */
weir_http_header_t *weir_http_v2_push_header(weir_http_request_t *r,
    weir_str_t *name, weir_str_t *value);

/* weir_http_v2_tunnel.c: Extended CONNECT (RFC 8441) */
/* a CONNECT with :protocol into a WebSocket Upgrade request: WEIR_OK, or
 * the status to refuse it with */
/* a plain CONNECT's :authority as its target (weir_http_v2_tunnel.c);
 * WEIR_OK or WEIR_ERROR (logged: a 400) */
weir_int_t weir_http_v2_connect_target(weir_http_v2_stream_t *st);
weir_int_t weir_http_v2_websocket(weir_http_v2_stream_t *st);
/* DATA on the stream is a tunnel's bytes (not counted as a flood) */
weir_uint_t weir_http_v2_is_tunnel(weir_http_v2_conn_t *h2c, int32_t id);
/* the RST_STREAM code that ends a tunnel's stream, (uint32_t) -1: none */
uint32_t weir_http_v2_tunnel_reset_code(weir_http_v2_stream_t *st);

extern const weir_http_tunnel_io_t  weir_http_v2_tunnel;
extern weir_module_t       weir_http_v2_module;
extern weir_http_proto_t   weir_http_v2_proto;

#endif /* _WEIR_HTTP_V2_H_INCLUDED_ */
