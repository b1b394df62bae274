/*
 * weir_probe_origin.h: what the origin's HTTP/1 half (weir_probe_origin.c)
 * shares with its HTTP/2 half (weir_probe_origin_h2.c).
 */

#ifndef _WEIR_PROBE_ORIGIN_H_INCLUDED_
#define _WEIR_PROBE_ORIGIN_H_INCLUDED_


#define PO_OK          0
#define PO_ERROR      -1
#define PO_AGAIN      -2

#define PO_IN_SIZE     16384
#define PO_OUT_SIZE    32768
#define PO_CHUNK       8192
#define PO_EARLY       8192
#define PO_MAX_LISTEN  16

#define PO_LISTENER    1
#define PO_CONN        2
#define PO_TIMERFD     3

/* routes */
#define PO_TINY        0
#define PO_SIZE        1
#define PO_CHUNKED     2
#define PO_ECHO        3
#define PO_EARLY_RESP  4
#define PO_STATS       5
#define PO_NOT_FOUND   6
#define PO_WS          7
#define PO_BAD_WS      8

/* WebSocket frame states */
#define PO_W_HEAD      0
#define PO_W_DATA      1

/* request body states */
#define PO_B_NONE      0
#define PO_B_LENGTH    1
#define PO_B_SIZE      2
#define PO_B_DATA      3
#define PO_B_CRLF      4
#define PO_B_TRAILER   5
#define PO_B_DONE      6


typedef struct {
    int                 kind;
    int                 fd;
    void               *ssl_ctx;     /* --tls: an SSL_CTX */
} po_listener_t;


typedef struct po_conn_s  po_conn_t;

struct po_conn_s {
    int                 kind;
    int                 fd;
    po_conn_t          *next_free;
    po_conn_t          *next_all;    /* keeps open ones reachable */
    uint64_t            serial;      /* tells stale timers apart */

    u_char             *in;
    size_t              ipos;
    size_t              ilast;
    u_char             *out;
    size_t              opos;
    size_t              olast;

    unsigned            route;
    unsigned            bstate;
    int64_t             brest;       /* of the body or of the chunk */
    uint64_t            body_read;
    int64_t             rest;        /* response body bytes to produce */
    uint64_t            start_at;

    unsigned            have_head:1;
    unsigned            http10:1;
    unsigned            keepalive:1;
    unsigned            started:1;
    unsigned            resp_done:1;
    unsigned            resp_chunked:1;
    unsigned            timer:1;
    unsigned            readable:1;  /* no short read since the last event */
    unsigned            eof:1;       /* the peer's FIN is pending */
    unsigned            ws:1;
    unsigned            ws_closing:1;
    unsigned            ws_frag:1;   /* inside a fragmented message */
    unsigned            ws_close:1;  /* the frame being echoed is a close */
    unsigned            ws_mpos:2;
    unsigned            tls_done:1;  /* the TLS handshake is over */
    unsigned            sniffed:1;   /* HTTP/1, not an h2 preface */

    void               *ssl;         /* an SSL on a --tls listener */
    void               *h2;          /* the HTTP/2 state, po_h2_t */

    unsigned            wstate;
    int64_t             wrest;       /* payload bytes of the frame to echo */
    u_char              mask[4];
    char                accept[PROBE_WS_ACCEPT_LEN];
};


extern uint64_t      po_requests;
extern uint64_t      po_accepted;
extern uint64_t      po_open;
extern u_char        po_pattern[PO_CHUNK];
extern const char    po_tiny[];

void po_close(po_conn_t *c);
int po_recv(po_conn_t *c);
void po_timer_add(po_conn_t *c, uint64_t at);
ssize_t po_io_recv(po_conn_t *c, u_char *buf, size_t size);
ssize_t po_io_send(po_conn_t *c, const u_char *buf, size_t size);

/*
 * HTTP/2 (weir_probe_origin_h2.c): po_h2_init() starts the session of a
 * connection that chose h2 (ALPN, or the client's preface on a plain
 * listener: the preface is still in c->in and goes to nghttp2 too);
 * po_h2_handle() runs it until every step would block; po_h2_free()
 * frees it (po_close() calls it).
 */
int po_h2_init(po_conn_t *c);
void po_h2_handle(po_conn_t *c);
void po_h2_free(po_conn_t *c);


#endif /* _WEIR_PROBE_ORIGIN_H_INCLUDED_ */
