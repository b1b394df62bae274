#ifndef WEIR_HTTP_V2_UPSTREAM_H
#define WEIR_HTTP_V2_UPSTREAM_H

#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"
#include "weir_http_v2.h"

/*
 * HTTP/2 to origins, inside the v2 module: what the session and stream
 * code (weir_http_v2_upstream.c) and nghttp2's callbacks on what the
 * origin sends (weir_http_v2_upstream_frames.c) share. docs/dev/upstream.md
 * "Sessions".
 */


/* the stream window weir gives an origin, and the connection window */
#define WEIR_HTTP_V2_UP_STREAM_WINDOW   (256 * 1024)
#define WEIR_HTTP_V2_UP_CONN_WINDOW     (32 * 1024 * 1024)
/* the request body bytes a stream queues for its data provider */
#define WEIR_HTTP_V2_UP_SEND_QUEUE      (64 * 1024)
#define WEIR_HTTP_V2_UP_BLOCK           (16 * 1024)
#define WEIR_HTTP_V2_UP_SMALL_BLOCK     1024
/* interim heads before the final one, as the HTTP/1.1 handler */
#define WEIR_HTTP_V2_UP_MAX_INTERIM     32

/*
 * An origin is not trusted more than a client (docs/http/http2.md,
 * Limits): frames that carry no progress, per one-second window, end the
 * session past these; nghttp2 bounds the acknowledgements it queues and
 * the entries of a SETTINGS.
 */
#define WEIR_HTTP_V2_UP_FLOOD_PING      0   /* PING and SETTINGS to ack */
#define WEIR_HTTP_V2_UP_FLOOD_RESET     1   /* RST_STREAM */
#define WEIR_HTTP_V2_UP_FLOOD_WINDOW    2   /* WINDOW_UPDATE */
#define WEIR_HTTP_V2_UP_FLOOD_DATA      3   /* tiny DATA, not last */
#define WEIR_HTTP_V2_UP_FLOOD_N         4
#define WEIR_HTTP_V2_UP_FLOOD_FRAMES    1000
#define WEIR_HTTP_V2_UP_TINY_DATA       64
/* tiny DATA frames of a stream that are no flood: a response's edges
 * (a gRPC message before the trailers, a last chunk) */
#define WEIR_HTTP_V2_UP_TINY_FREE       2
/* CONTINUATION frames of one head or trailer section */
#define WEIR_HTTP_V2_UP_MAX_CONTINUATION  32
#define WEIR_HTTP_V2_UP_MAX_ACKS        1000
#define WEIR_HTTP_V2_UP_MAX_SETTINGS    32


typedef struct weir_http_v2_up_s      weir_http_v2_up_t;
typedef struct weir_http_v2_ups_s     weir_http_v2_ups_t;
typedef struct weir_http_v2_uphead_s  weir_http_v2_uphead_t;


struct weir_http_v2_up_s {
    weir_http_upstream_session_t   s;       /* first: the pool's part */
    nghttp2_session               *session;
    weir_connection_t             *connection;
    weir_http_v2_wire_t            wire;
    weir_msec_t                    send_timeout;
    weir_queue_t                   streams; /* of weir_http_v2_ups_t */
    weir_uint_t                    nstreams;
    size_t                         recv_size;
    weir_msec_t                    flood_start;
    weir_uint_t                    flood[WEIR_HTTP_V2_UP_FLOOD_N];
    weir_uint_t                    continuations;
    unsigned                       in_handler:1;
    unsigned                       dead:1;      /* the connection failed
                                                   or closed */
    unsigned                       goaway:1;    /* one came or went */
    unsigned                       closed:1;    /* the socket is gone */
    unsigned                       settings_in:1;   /* the origin's first
                                                       SETTINGS came */
    unsigned                       ping_out:1;  /* a PING on reuse waits
                                                   for the origin */
    weir_msec_t                    idle_since;  /* the last stream ended */
    weir_event_t                   ping;        /* its answer's timer */
};


/* a response head as it arrives, handed to the core whole */
struct weir_http_v2_uphead_s {
    weir_http_v2_uphead_t           *next;
    weir_http_upstream_headers_in_t  hi;
    size_t                           size;
};


struct weir_http_v2_ups_s {
    weir_queue_t                   queue;   /* in h2->streams */
    weir_http_v2_up_t             *h2;
    weir_http_upstream_t          *upstream;
    weir_connection_t              conn;
    weir_event_t                   rev;
    weir_event_t                   wev;
    int32_t                        id;

    /* the response */
    weir_http_v2_uphead_t         *heads;   /* complete, not yet taken */
    weir_http_v2_uphead_t        **last_head;
    weir_http_v2_uphead_t         *cur;     /* arriving */
    weir_list_t                    trailers;
    weir_chain_t                  *in;      /* DATA not yet taken */
    weir_chain_t                 **last_in;
    size_t                         in_bytes;
    weir_chain_t                  *free;    /* blocks of both queues */
    weir_uint_t                    ninterim;
    uint32_t                       error_code;

    /* the request body */
    weir_chain_t                  *out;
    weir_chain_t                 **last_out;
    size_t                         out_bytes;
    off_t                          sent;    /* body bytes framed */

    unsigned                       final_head:1;    /* taken by the core */
    unsigned                       final_in:1;      /* it arrived */
    unsigned                       end_in:1;        /* END_STREAM came */
    unsigned                       closed:1;        /* nghttp2 closed it */
    unsigned                       failed:1;        /* reset, session gone,
                                                       invalid response */
    unsigned                       body_eof:1;      /* END_STREAM to send */
    unsigned                       deferred:1;
    unsigned                       has_trailers:1;
    unsigned                       invalid:1;       /* nghttp2 refused the
                                                       response */
    unsigned                       reset_in:1;      /* the origin's
                                                       RST_STREAM */
    unsigned                       waiting:1;       /* an Extended CONNECT
                                                       for the origin's
                                                       SETTINGS */
    unsigned                       tiny_in:2;       /* tiny DATA frames
                                                       not counted (2) */
};


/* per request (u->proto_ctx): the request head, built once */
typedef struct {
    nghttp2_nv                    *nva;
    size_t                         nvlen;
    off_t                          framed;  /* body bytes encoded */
    weir_http_v2_ups_t            *stream;  /* of the current attempt */
    weir_str_t                     ws_key;  /* the client's
                                               Sec-WebSocket-Key */
    unsigned                       websocket:1; /* an Extended CONNECT */
} weir_http_v2_up_ctx_t;


#define weir_http_v2_up_stream_of(c)                                         \
    ((weir_http_v2_ups_t *) ((unsigned char *) (c)                           \
                             - offsetof(weir_http_v2_ups_t, conn)))


weir_int_t weir_http_v2_up_put(weir_http_v2_ups_t *st, weir_chain_t **head,
    weir_chain_t ***last, const void *data, size_t len);
void weir_http_v2_up_wake(weir_http_v2_ups_t *st, weir_uint_t write);
void weir_http_v2_up_submit_waiting(weir_http_v2_up_t *h2);

/* weir_http_v2_upstream_frames.c */
extern nghttp2_session_callbacks  *weir_http_v2_up_callbacks;
weir_int_t weir_http_v2_up_init_callbacks(void);

#endif /* WEIR_HTTP_V2_UPSTREAM_H */
