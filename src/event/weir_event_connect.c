#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"


static weir_fd_t weir_event_connect_socket(int family);
static weir_uint_t weir_event_connect_peer_error(weir_err_t err,
    int family);


/* numbers connections when the shared counter is not mapped (a process
 * that did not run the event module's init, such as a unit test) */
static weir_atomic_uint_t  weir_connect_local_number;


weir_int_t
weir_event_connect_peer(weir_peer_connection_t *pc)
{
    int                 rc, family;
    weir_fd_t           s;
    weir_err_t          err;
    weir_int_t          ret;
    weir_uint_t         level, event;
    weir_event_t       *rev, *wev;
    weir_connection_t  *c;

    ret = pc->get(pc, pc->data);

    if (ret != WEIR_OK) {
        /* WEIR_DONE: a cached connection is in pc->connection already;
         * WEIR_BUSY, WEIR_ERROR: nothing to connect to */
        if (ret == WEIR_DONE) {
            pc->cached = 1;
        }

        return ret;
    }

    pc->cached = 0;
    pc->connection = NULL;

    family = pc->sockaddr->sa_family;

    s = weir_event_connect_socket(family);

    if (s == (weir_fd_t) -1) {
        err = weir_socket_errno;

        level = (err == WEIR_EMFILE || err == WEIR_ENFILE)
                ? WEIR_LOG_CRIT : WEIR_LOG_ALERT;

        weir_log_error(level, pc->log, err, "socket() failed");
        return WEIR_ERROR;
    }

    c = weir_get_connection(s, pc->log);

    if (c == NULL) {
        /* weir_get_connection() logged "N worker_connections are not
         * enough" (rate limited) */

        if (close(s) == -1) {
            weir_log_error(WEIR_LOG_ALERT, pc->log, weir_socket_errno,
                           "close() socket %d failed", s);
        }

        return WEIR_ERROR;
    }

    c->type = SOCK_STREAM;

    if (pc->rcvbuf) {
        if (setsockopt(s, SOL_SOCKET, SO_RCVBUF,
                       (const void *) &pc->rcvbuf, sizeof(int))
            == -1)
        {
            weir_log_error(WEIR_LOG_ALERT, pc->log, weir_socket_errno,
                           "setsockopt(SO_RCVBUF) failed");
            goto failed;
        }
    }

    if (family == AF_INET || family == AF_INET6) {
        rc = 1;

        if (setsockopt(s, IPPROTO_TCP, TCP_NODELAY, (const void *) &rc,
                       sizeof(int))
            == -1)
        {
            /* small writes are only slower without it */
            weir_log_error(WEIR_LOG_INFO, pc->log, weir_socket_errno,
                           "setsockopt(TCP_NODELAY) failed");
            c->tcp_nodelay = WEIR_TCP_NODELAY_DISABLED;

        } else {
            c->tcp_nodelay = WEIR_TCP_NODELAY_SET;
        }

    } else {
        c->tcp_nodelay = WEIR_TCP_NODELAY_DISABLED;
    }

    c->recv = weir_unix_recv;
    c->send = weir_unix_send;
    c->writev = weir_unix_writev;
    c->ssl = NULL;

    c->log_error = pc->log_error;

    rev = c->read;
    wev = c->write;

    rev->log = pc->log;
    wev->log = pc->log;

    pc->connection = c;

    c->number = weir_connection_counter
                ? weir_atomic_fetch_add(weir_connection_counter, 1)
                : ++weir_connect_local_number;

    c->start_time = weir_current_msec;

    if (weir_add_conn) {
        if (weir_add_conn(c) == WEIR_ERROR) {
            goto failed;
        }
    }

    weir_log_debug(pc->log, 0, "connect to %.*s, fd:%d #%lu",
                   WEIR_STR_ARG(*pc->name), s, (unsigned long) c->number);

    rc = connect(s, pc->sockaddr, pc->socklen);

    if (rc == -1) {
        err = weir_socket_errno;

        if (err != WEIR_EINPROGRESS) {

            if (weir_event_connect_peer_error(err, family)) {
                /* this peer's fault: the caller tries the next one */
                weir_log_error(WEIR_LOG_ERR, c->log, err,
                               "connect() to %.*s failed",
                               WEIR_STR_ARG(*pc->name));
                ret = WEIR_DECLINED;

            } else {
                /* out of local ports, buffers ...: no peer to blame */
                weir_log_error(WEIR_LOG_CRIT, c->log, err,
                               "connect() to %.*s failed",
                               WEIR_STR_ARG(*pc->name));
                ret = WEIR_ERROR;
            }

            weir_close_connection(c);
            pc->connection = NULL;

            return ret;
        }
    }

    if (weir_add_conn) {
        if (rc == -1) {
            weir_log_debug(pc->log, 0, "connect to %.*s in progress",
                           WEIR_STR_ARG(*pc->name));
            return WEIR_AGAIN;
        }

        weir_log_debug(pc->log, 0, "connected to %.*s",
                       WEIR_STR_ARG(*pc->name));

        wev->ready = 1;

        return WEIR_OK;
    }

    /*
     * A backend without add_conn (poll, kqueue): the read event now; the
     * write event is what tells an in-progress connect has ended. With a
     * level-triggered backend a write event left armed on a connected
     * socket would fire on every loop, so it is added only for that.
     */

    event = (weir_event_flags & WEIR_USE_CLEAR_EVENT)
            ? WEIR_CLEAR_EVENT : WEIR_LEVEL_EVENT;

    if (weir_add_event(rev, WEIR_READ_EVENT, event) != WEIR_OK) {
        goto failed;
    }

    if (rc == -1 || (weir_event_flags & WEIR_USE_CLEAR_EVENT)) {
        if (weir_add_event(wev, WEIR_WRITE_EVENT, event) != WEIR_OK) {
            goto failed;
        }
    }

    if (rc == -1) {
        weir_log_debug(pc->log, 0, "connect to %.*s in progress",
                       WEIR_STR_ARG(*pc->name));
        return WEIR_AGAIN;
    }

    weir_log_debug(pc->log, 0, "connected to %.*s", WEIR_STR_ARG(*pc->name));

    wev->ready = 1;

    return WEIR_OK;

failed:

    weir_close_connection(c);
    pc->connection = NULL;

    return WEIR_ERROR;
}


weir_int_t
weir_event_connect_result(weir_peer_connection_t *pc)
{
    int                 err;
    socklen_t           len;
    weir_connection_t  *c;

    c = pc->connection;

    err = 0;
    len = sizeof(int);

    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, (void *) &err, &len) == -1) {
        err = weir_socket_errno;
    }

    if (err) {
        c->error = 1;

        weir_log_error(WEIR_LOG_ERR, c->log, err, "connect() to %.*s failed",
                       WEIR_STR_ARG(*pc->name));

        return WEIR_ERROR;
    }

    weir_log_debug(c->log, 0, "connected to %.*s", WEIR_STR_ARG(*pc->name));

    return WEIR_OK;
}


/*
 * The peer was chosen by the caller (pc->sockaddr, socklen and name are
 * set): nothing to choose. Without an address there is nothing to
 * connect to, and the attempt fails.
 */

weir_int_t
weir_event_get_peer(weir_peer_connection_t *pc, void *data)
{
    (void) data;

    if (pc->sockaddr == NULL || pc->name == NULL) {
        weir_log_error(WEIR_LOG_ALERT, pc->log, 0,
                       "no peer address to connect to");
        return WEIR_ERROR;
    }

    return WEIR_OK;
}


/* a non-blocking, close-on-exec stream socket, or -1 with errno set */

static weir_fd_t
weir_event_connect_socket(int family)
{
    weir_fd_t   s;
#if !(defined SOCK_NONBLOCK && defined SOCK_CLOEXEC)
    weir_err_t  err;
#endif

#if (defined SOCK_NONBLOCK && defined SOCK_CLOEXEC)

    s = socket(family, SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC, 0);

#else

    s = socket(family, SOCK_STREAM, 0);

    if (s == -1) {
        return -1;
    }

    if (weir_nonblocking(s) == -1 || weir_cloexec(s) == -1) {
        err = weir_socket_errno;
        (void) close(s);
        weir_set_errno(err);
        return -1;
    }

#endif

    return s;
}


/* does a failed connect() blame the peer (try the next one) rather than
 * this host (out of ports, buffers, descriptors)? */

static weir_uint_t
weir_event_connect_peer_error(weir_err_t err, int family)
{
    switch (err) {

    case ECONNREFUSED:
    case ECONNRESET:
    case ENETDOWN:
    case ENETUNREACH:
    case EHOSTUNREACH:
#ifdef EHOSTDOWN
    case EHOSTDOWN:
#endif
    case ETIMEDOUT:
        return 1;

    /* a unix socket: no such path, no permission, or (Linux) the listen
     * queue is full */
    case ENOENT:
    case EACCES:
    case ENOTSOCK:
    case EAGAIN:
        return family == AF_UNIX;

    default:
        return 0;
    }
}
