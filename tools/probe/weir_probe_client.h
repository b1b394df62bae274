/*
 * weir_probe_client.h: what the client's HTTP/1 half (weir_probe_client.c)
 * shares with its HTTP/2 half (weir_probe_client_h2.c), its byte movers
 * (weir_probe_client_io.c) and its report (weir_probe_client_report.c):
 * the options, the figures, the connection and its byte movers, the
 * report.
 */

#ifndef _WEIR_PROBE_CLIENT_H_INCLUDED_
#define _WEIR_PROBE_CLIENT_H_INCLUDED_


#define PROBE_OK       0
#define PROBE_ERROR   -1
#define PROBE_AGAIN   -2
#define PROBE_STATUS  -3    /* a response with an unwanted status */

#define PROBE_BUF_SIZE     16384
#define PROBE_HOLD_BUF     4096
#define PROBE_HOLD_BURST   200
#define PROBE_MAX_URLS     64
#define PROBE_MAX_HEADERS  16
/* --proxy: the longest CONNECT answer head, the statuses told apart */
#define PROBE_PROXY_HEAD   4096
#define PROBE_PROXY_CODES  8

/* connection states */
#define PROBE_CLOSED       0
#define PROBE_CONNECTING   1
#define PROBE_HANDSHAKE    2
#define PROBE_ACTIVE       3
#define PROBE_WAITING      4

/* response parser states */
#define PROBE_P_HEAD       0
#define PROBE_P_LENGTH     1
#define PROBE_P_CHUNK      2
#define PROBE_P_DATA       3
#define PROBE_P_DATA_CRLF  4
#define PROBE_P_TRAILER    5
#define PROBE_P_EOF        6
#define PROBE_P_DONE       7
#define PROBE_P_WS_HEAD    8
#define PROBE_P_WS_DATA    9


typedef struct probe_conn_s  probe_conn_t;


/* moves bytes; recv returns 0 at EOF, PROBE_AGAIN or PROBE_ERROR */
typedef struct {
    const char  *name;
    int        (*handshake)(probe_conn_t *c);
    ssize_t    (*recv)(probe_conn_t *c, u_char *buf, size_t size);
    ssize_t    (*send)(probe_conn_t *c, const u_char *buf, size_t size);
    void       (*close)(probe_conn_t *c);
} probe_io_t;


/*
 * One protocol: connect opens the transport, write_request sends the
 * current request (PROBE_OK when all of it is out), read_response reads
 * (PROBE_OK when the response is complete). An HTTP/2 protocol would keep
 * its streams in proto_data and count one completion per stream.
 */
typedef struct {
    const char  *name;
    int        (*connect)(probe_conn_t *c);
    int        (*write_request)(probe_conn_t *c);
    int        (*read_response)(probe_conn_t *c);
    void       (*close)(probe_conn_t *c);
} probe_proto_t;


typedef struct {
    char                      text[512];
    char                      host[256];     /* Host: (with the port) */
    char                      sni[256];      /* a name, never an address */
    char                      name[256];     /* the host alone */
    char                      port[8];
    char                      authority[272];  /* host:port, always */
    u_char                   *connect;       /* --proxy: the CONNECT */
    size_t                    connect_len;
    struct sockaddr_storage   addr;
    socklen_t                 addrlen;
    unsigned                  tls:1;
    u_char                   *request;       /* or the WebSocket frame */
    size_t                    request_len;
    u_char                   *upgrade;       /* the WebSocket handshake */
    size_t                    upgrade_len;
    char                      accept[PROBE_WS_ACCEPT_LEN];
    const char               *path;          /* in text */
    void                     *h2;            /* the HTTP/2 request */
} probe_url_t;


struct probe_conn_s {
    int                  fd;
    unsigned             state;
    probe_url_t         *url;
    probe_url_t         *conn_url;       /* where fd is connected */
    const probe_io_t    *io;
    const probe_proto_t *proto;
    void                *ssl;
    probe_conn_t        *next_idle;
    probe_conn_t        *pause_prev;     /* the queue of paused readers */
    probe_conn_t        *pause_next;
    uint64_t             pause_until;
    size_t               pause_count;    /* read since the last pause */
    uint64_t             ws_total;       /* payload of the echoed message */

    uint64_t             start;
    uint64_t             deadline;
    size_t               sent;
    uint64_t             bytes_in;

    u_char              *buf;            /* and a proxy's CONNECT answer */
    size_t               pos;
    size_t               last;

    unsigned             pstate;
    int                  status;
    int64_t              rest;

    unsigned             request_done:1;
    unsigned             response_done:1;
    unsigned             close_after:1;
    unsigned             upgraded:1;     /* the WebSocket handshake done */
    unsigned             ws_fin:1;
    unsigned             ws_data:1;
    unsigned             paused:1;
    unsigned             pause_hit:1;
    unsigned             tunnel:1;       /* the proxy answered CONNECT 2xx */

    size_t               proxy_sent;     /* of the CONNECT */
    size_t               proxy_have;     /* of its answer, in buf */

    /* --new-host: this connection's own name, and its CONNECT */
    char                *vname;
    u_char              *vconnect;
    size_t               vconnect_len;
};


typedef struct {
    uint64_t       requests;
    uint64_t       bytes_in;
    uint64_t       bytes_out;
    uint64_t       err_connect;
    uint64_t       err_timeout;
    uint64_t       err_read;
    uint64_t       err_write;
    uint64_t       err_refused;    /* HTTP/2: REFUSED_STREAM, GOAWAY */
    uint64_t       status[6];
    /*
     * --proxy: CONNECT answers by status (0: not HTTP, or none before a
     * close); those past PROBE_PROXY_CODES statuses in proxy_other
     */
    int            proxy_code[PROBE_PROXY_CODES];
    uint64_t       proxy_count[PROBE_PROXY_CODES];
    uint64_t       proxy_other;
    probe_hist_t   hist;
} probe_stats_t;


typedef struct {
    int            connections;
    double         duration;
    double         warmup;
    double         rate;
    uint64_t       total;
    double         timeout;
    unsigned       new_conn:1;
    unsigned       csv:1;
    unsigned       csv_header:1;
    unsigned       post:1;         /* a method with a body */
    unsigned       h2:1;
    unsigned       ws:1;
    unsigned       new_host:1;     /* a name never seen a connection */
    int            streams;        /* -m: HTTP/2 streams a connection */
    const char    *method;
    size_t         body;
    size_t         ws_bytes;
    size_t         pause_bytes;
    uint64_t       pause_ns;
    int            rcvbuf;
    const char    *proxy;          /* --proxy HOST:PORT, as given */
    struct sockaddr_storage  proxy_addr;
    socklen_t      proxy_addrlen;
    const char    *cacert;         /* --cacert: verify, trusting these */
    int            nurls;
    probe_url_t    urls[PROBE_MAX_URLS];
    int            nheaders;
    const char    *headers[PROBE_MAX_HEADERS];
} probe_client_conf_t;


/* the run's state: one loop, one thread (weir_probe_client.c) */
extern probe_client_conf_t           probe_conf;
extern probe_stats_t                 probe_stats;
extern int                           probe_ep;
extern uint64_t                      probe_measure_from;
extern uint64_t                      probe_timeout_ns;
extern uint64_t                      probe_next_url;
extern volatile sig_atomic_t         probe_stop;

extern const probe_proto_t           probe_h1_proto;

int probe_h1_connect(probe_conn_t *c);

/*
 * the byte movers (weir_probe_client_io.c); probe_tls_init() makes the
 * one TLS context (ALPN h2 or http/1.1, and --cacert) on its first call,
 * later calls keep it; probe_proxy_tls_io is TLS inside a CONNECT tunnel
 * through --proxy (its handshake sends the CONNECT and reads the answer
 * first)
 */
extern const probe_io_t              probe_plain_io;
#if (WEIR_HAVE_OPENSSL)
extern const probe_io_t              probe_tls_io;
extern const probe_io_t              probe_proxy_tls_io;
int probe_tls_init(int h2);
#endif

/* the report, text or CSV (weir_probe_client_report.c) */
void probe_report(probe_client_conf_t *cf, probe_stats_t *st,
    double elapsed, double cpu_user, double cpu_sys);

/*
 * HTTP/2 (weir_probe_client_h2.c): probe_h2_run() is the whole run with
 * --h2, report included, and returns the exit status;
 * probe_h2_build() prepares a URL's request once.
 */
int probe_h2_run(void);
int probe_h2_build(probe_url_t *u);


#endif /* _WEIR_PROBE_CLIENT_H_INCLUDED_ */
