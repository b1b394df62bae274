#ifndef _WEIR_CONNECTION_H_INCLUDED_
#define _WEIR_CONNECTION_H_INCLUDED_

/*
 * Listening sockets and connections. A cycle owns an array of
 * weir_listening_t built from the configuration; a reload keeps the open
 * socket of every listening entry whose address (and options that need a
 * new socket) did not change, so no connection is refused.
 *
 * Connections come from a per-worker preallocated array of
 * worker_connections entries, each with its read and write event.
 */

struct weir_listening_s {
    weir_fd_t            fd;

    struct sockaddr     *sockaddr;
    socklen_t            socklen;
    weir_str_t           addr_text;     /* "127.0.0.1:8080" */

    int                  type;          /* SOCK_STREAM, SOCK_DGRAM */
    int                  backlog;
    int                  rcvbuf;
    int                  sndbuf;

    /* called for every accepted connection */
    weir_connection_handler_pt   handler;

    void                *servers;       /* owner's data (http: its ports) */

    weir_log_t           log;
    weir_log_t          *logp;

    size_t               pool_size;

    weir_listening_t    *previous;      /* the entry of the old cycle */
    weir_connection_t   *connection;    /* this worker's accept connection */

    weir_uint_t          worker;        /* reuseport: the worker it serves */

    unsigned             open:1;
    unsigned             remain:1;      /* kept from the old cycle */
    unsigned             ignore:1;
    unsigned             bound:1;
    unsigned             inherited:1;   /* from a binary upgrade */
    unsigned             nonblocking:1;
    unsigned             listen:1;
    unsigned             ipv6only:1;
    unsigned             reuseport:1;
    unsigned             add_reuseport:1;
    unsigned             deferred_accept:1;
    unsigned             default_server:1;
};

/*
 * TLS on a connection (added for the TLS issue). The core knows no TLS
 * library: a module that puts TLS on a connection (the ssl module, built
 * in or loaded) hangs its state on c->ssl, a struct whose first member is
 * this header, and replaces c->recv, c->send and c->writev. The core only
 * ever calls the two operations below.
 */
typedef struct weir_ssl_connection_s  weir_ssl_connection_t;

typedef struct {
    /* sends close_notify if it can without blocking, then forgets the
     * TLS state (never waits): weir_close_connection calls it first */
    void               (*shutdown)(weir_connection_t *c);
    /* is decrypted data buffered inside the TLS library (so that a read
     * must be tried although the socket has nothing)? */
    weir_uint_t        (*pending)(weir_connection_t *c);
    /* a half close: sends close_notify now and keeps the TLS state for
     * reading what the peer still sends. WEIR_OK when it went out (or
     * cannot be sent: no handshake, a failed connection), WEIR_AGAIN
     * when the socket is full (c->write->ready cleared: call again on
     * the write event), WEIR_ERROR (logged). Called by
     * weir_connection_half_close before its shutdown(SHUT_WR) */
    weir_int_t         (*half_close)(weir_connection_t *c);
    /* is the peer still there, seen through TLS? Decrypts what the
     * socket holds without consuming it: > 0 application data waits,
     * 0 the peer closed (close_notify or a FIN), WEIR_AGAIN nothing to
     * tell yet (no whole record), WEIR_ERROR (the connection failed;
     * logged). A raw peek of the socket cannot tell a record of data
     * from an alert that closes */
    ssize_t            (*peek)(weir_connection_t *c);
} weir_ssl_connection_ops_t;

struct weir_ssl_connection_s {
    const weir_ssl_connection_ops_t  *ops;
};

struct weir_connection_s {
    void                *data;
    weir_event_t        *read;
    weir_event_t        *write;

    weir_fd_t            fd;

    ssize_t            (*recv)(weir_connection_t *c, unsigned char *buf,
                               size_t size);
    ssize_t            (*send)(weir_connection_t *c, unsigned char *buf,
                               size_t size);
    /*
     * Added for TLS: writes iov[0 .. cnt - 1] in order, as much as the
     * socket takes. Returns the bytes written (> 0), WEIR_AGAIN (nothing
     * could be written: c->write->ready is cleared) or WEIR_ERROR (logged
     * with weir_connection_error, c->error set). Plain sockets:
     * weir_unix_writev (one writev()); TLS: the module's, which
     * coalesces small pieces into TLS records. Every writer of a
     * connection (HTTP/1 responses, the upstream core, tunnels) goes
     * through c->recv, c->send and c->writev, never the fd itself, and
     * uses sendfile() only when c->ssl is NULL.
     */
    ssize_t            (*writev)(weir_connection_t *c, struct iovec *iov,
                                 int cnt);

    /* TLS state, NULL on a plain connection (see above) */
    weir_ssl_connection_t  *ssl;

    weir_listening_t    *listening;

    off_t                sent;

    weir_log_t          *log;
    weir_pool_t         *pool;

    int                  type;

    struct sockaddr     *sockaddr;
    socklen_t            socklen;
    weir_str_t           addr_text;

    struct sockaddr     *local_sockaddr;
    socklen_t            local_socklen;

    weir_buf_t          *buffer;

    weir_queue_t         queue;         /* reusable (idle) connections */

    weir_atomic_uint_t   number;        /* "*N" in log lines */
    weir_msec_t          start_time;
    weir_uint_t          requests;

    unsigned             buffered:8;
    unsigned             log_error:3;
    unsigned             timedout:1;
    unsigned             error:1;
    unsigned             destroyed:1;
    unsigned             idle:1;
    unsigned             reusable:1;
    unsigned             close:1;
    unsigned             shared:1;
    unsigned             sendfile:1;
    unsigned             tcp_nodelay:2;
    /* SO_SNDLOWAT was set (send_lowat): once per connection */
    unsigned             sndlowat:1;
};

#define WEIR_TCP_NODELAY_UNSET  0
#define WEIR_TCP_NODELAY_SET    1
#define WEIR_TCP_NODELAY_DISABLED 2

/* adds a listening entry to cf->cycle->listening, copying sockaddr */
weir_listening_t *weir_create_listening(weir_conf_t *cf,
    struct sockaddr *sockaddr, socklen_t socklen);
/* clones a reuseport entry once per worker (worker = 1 .. n-1) */
weir_int_t weir_clone_listening(weir_cycle_t *cycle, weir_listening_t *ls);
/* reads the sockets inherited through the WEIR environment variable */
weir_int_t weir_set_inherited_sockets(weir_cycle_t *cycle);
/* opens (binds, listens) every entry that is not kept from old_cycle;
 * retries EADDRINUSE a few times as a new binary may race the old one */
weir_int_t weir_open_listening_sockets(weir_cycle_t *cycle);
/* applies backlog, buffers and options to sockets kept or inherited */
void weir_configure_listening_sockets(weir_cycle_t *cycle);
/* closes this worker's listening sockets (graceful stop, no accepting) */
void weir_close_listening_sockets(weir_cycle_t *cycle);
/* added by the event helper: a reuseport entry (ls->worker 0) gets one
 * copy per worker process, worker 1..n-1, appended to cycle->listening.
 * Call once per entry after the configuration is parsed; the push may
 * move cycle->listening.elts, so reload the array pointer after it. */
weir_int_t weir_clone_listening(weir_cycle_t *cycle, weir_listening_t *ls);

weir_connection_t *weir_get_connection(weir_fd_t s, weir_log_t *log);
void weir_free_connection(weir_connection_t *c);
/* removes the events, closes the socket and frees the connection; the
 * caller destroys c->pool */
void weir_close_connection(weir_connection_t *c);
/* marks c idle (keep-alive): such connections are closed first when a
 * worker runs out of connections, and closed or drained when it shuts
 * down (weir_close_idle_connections) */
void weir_reusable_connection(weir_connection_t *c, weir_uint_t reusable);
void weir_close_idle_connections(weir_cycle_t *cycle);
/*
 * Ends what c sends and keeps it open for reading (the tunnel's end of
 * one direction, lingering close): under TLS a close_notify first, then
 * shutdown(SHUT_WR). WEIR_OK: done (calling again is harmless);
 * WEIR_AGAIN: the close_notify waits for room in the socket
 * (c->write->ready cleared): call again on the write event; WEIR_ERROR:
 * failed, logged.
 */
weir_int_t weir_connection_half_close(weir_connection_t *c);

/* c->local_sockaddr, asked of the kernel once when it is a wildcard
 * (c->local_socklen is its length); NULL on failure (logged) */
struct sockaddr *weir_connection_local_sockaddr(weir_connection_t *c);

weir_int_t weir_tcp_nodelay(weir_connection_t *c);

/*
 * The first byte waiting in c's socket, left there (MSG_PEEK), to tell
 * TLS from plain text: WEIR_OK (*byte set), WEIR_AGAIN (nothing yet:
 * c->read->ready cleared), WEIR_DONE (the peer closed), WEIR_ERROR
 * (logged at info).
 */
weir_int_t weir_connection_peek(weir_connection_t *c, unsigned char *byte);
/* logs a connection error at a level that fits it (reset by peer is info)
 * and returns WEIR_ERROR */
weir_int_t weir_connection_error(weir_connection_t *c, weir_err_t err,
    const char *text);

ssize_t weir_unix_recv(weir_connection_t *c, unsigned char *buf,
    size_t size);
ssize_t weir_unix_send(weir_connection_t *c, unsigned char *buf,
    size_t size);
/* added for TLS: see c->writev */
ssize_t weir_unix_writev(weir_connection_t *c, struct iovec *iov, int cnt);
/* reads into iov[0 .. cnt - 1] in order with one readv(): what
 * weir_unix_recv is for one buffer (a short read clears c->read->ready).
 * Plain sockets only: callers check that c->ssl is NULL */
ssize_t weir_unix_readv(weir_connection_t *c, struct iovec *iov, int cnt);

#endif /* _WEIR_CONNECTION_H_INCLUDED_ */
