#ifndef _WEIR_HTTP_UPSTREAM_INT_H_INCLUDED_
#define _WEIR_HTTP_UPSTREAM_INT_H_INCLUDED_

/*
 * The upstream core's own interface, shared by its files and by no one
 * else (modules use weir_http_upstream.h):
 *
 *   weir_http_upstream.c         the lifecycle: creation and start,
 *                                connecting (and TLS), retries
 *                                (proxy_next_upstream), finalizing, the
 *                                event handlers of both connections
 *   weir_http_upstream_send.c    sending the request and its body
 *                                (buffered or streamed)
 *   weir_http_upstream_relay.c   the response head, and the body relayed
 *                                to the client with bounded buffers and
 *                                the temporary file
 *   weir_http_upstream_tunnel.c  the Upgrade tunnel after a 101
 */


/* a raw buffer origin bytes are read into; views point into it */
typedef struct {
    weir_buf_t                  *buf;
    weir_uint_t                  views;     /* passed on, not yet sent */
    unsigned                     head:1;    /* u->buffer: never re-read */
} weir_http_upstream_raw_t;


/* the core's state (u->pipe) */
typedef struct {
    /* request side */
    weir_chain_t                *head;      /* this attempt's copy */
    weir_chain_t                *body;      /* encoded, unsent */
    weir_chain_t                *body_proto;/* buffered: encoded once */
    weir_chain_t                *taken;     /* streamed: client buffers */

    /* response side */
    weir_http_upstream_raw_t    *raws;
    weir_uint_t                  nraws;
    weir_uint_t                  maxraws;
    size_t                       raw_size;
    weir_http_upstream_raw_t    *cur;
    weir_buf_t                  *spill;     /* read buffer for the file */
    weir_file_t                 *file;
    off_t                        file_offset;
    weir_uint_t                  file_views;

    /* tunnel: client -> origin (up), origin -> client (down) */
    weir_buf_t                  *up;
    weir_buf_t                  *down;

    weir_msec_t                  attempt_start;

    unsigned                     started:1;
    unsigned                     finalized:1;
    unsigned                     peer_held:1;
    unsigned                     connecting:1;
    unsigned                     sending:1;     /* request not all sent */
    unsigned                     head_done:1;
    unsigned                     relay:1;
    unsigned                     tunnel:1;
    unsigned                     spilling:1;
    unsigned                     read_full:1;   /* the last read filled
                                                   all it was given */
    unsigned                     sent_any:1;    /* this attempt */
    unsigned                     body_consumed:1;   /* streamed, sent */
    unsigned                     body_last:1;   /* streamed: last_buf in */
    unsigned                     in_post:1;
    unsigned                     cached_retried:1;
    unsigned                     same_peer:1;   /* reconnect, no balancer */
    unsigned                     origin_eof:1;
    unsigned                     stopped:1;     /* no buffer to read into */
    unsigned                     body_stopped:1;/* the rest of the request
                                                   is not sent */
    unsigned                     handshaking:1; /* TLS to the origin: the
                                                   ssl module has c */

    /* not bit-fields: the tunnel passes their addresses */
    unsigned                     up_eof;
    unsigned                     down_eof;
    unsigned                     up_shut;
    unsigned                     down_shut;
} weir_http_upstream_ctx_t;


/* weir_http_upstream.c */
void weir_http_upstream_next(weir_http_upstream_t *u,
    weir_uint_t ft);
weir_uint_t weir_http_upstream_may_retry(weir_http_upstream_t *u,
    weir_uint_t ft);
weir_uint_t weir_http_upstream_cached_retry(weir_http_upstream_t *u);
void weir_http_upstream_finalize(weir_http_upstream_t *u,
    weir_int_t rc);
void weir_http_upstream_client_handlers(weir_http_upstream_t *u);


/* weir_http_upstream_send.c */
void weir_http_upstream_take_body(weir_http_upstream_t *u);
void weir_http_upstream_send(weir_http_upstream_t *u);
void weir_http_upstream_stop_body(weir_http_upstream_t *u);


/* weir_http_upstream_relay.c */
void weir_http_upstream_process_head(weir_http_upstream_t *u);
void weir_http_upstream_process(weir_http_upstream_t *u);


/* weir_http_upstream_tunnel.c */
void weir_http_upstream_start_tunnel(weir_http_upstream_t *u);
void weir_http_upstream_tunnel(weir_http_request_t *r);


#endif /* _WEIR_HTTP_UPSTREAM_INT_H_INCLUDED_ */
