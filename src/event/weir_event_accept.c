#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"


/* after EMFILE/ENFILE, accepting pauses this long: descriptors come back
 * as connections close */
#define WEIR_ACCEPT_RETRY_MSEC   100

/* accepts per event when out of connections: each is closed at once, and
 * a bounded batch keeps the loop serving the connections it has */
#define WEIR_ACCEPT_DROP_MAX     64


static weir_fd_t weir_event_accept_socket(weir_fd_t lfd,
    struct sockaddr *sa, socklen_t *socklen);
static void weir_close_accepted_connection(weir_connection_t *c);


/* the "too many open files" warning is rate limited like the
 * worker_connections one */
static time_t  weir_accept_warn_time;

/* numbers connections when the shared counter is not mapped (a process
 * that did not run the event module's init, such as a unit test) */
static weir_atomic_uint_t  weir_accept_local_number;


void
weir_event_accept(weir_event_t *ev)
{
    size_t               len, size;
    weir_fd_t            s;
    weir_err_t           err;
    weir_uint_t          n, dropped, level;
    weir_log_t          *log;
    socklen_t            socklen;
    weir_cycle_t        *cycle;
    weir_event_t        *rev, *wev;
    weir_sockaddr_t      sa;
    weir_listening_t    *ls;
    weir_connection_t   *c, *lc;
    weir_event_conf_t   *ecf;

    cycle = (weir_cycle_t *) weir_cycle;

    if (ev->timedout) {
        /* the pause after EMFILE is over */
        ev->timedout = 0;

        if (weir_enable_accept_events(cycle) != WEIR_OK) {
            return;
        }
    }

    ecf = weir_event_get_conf(cycle->conf_ctx, weir_event_core_module);

    lc = ev->data;
    ls = lc->listening;

    ev->ready = 0;

    dropped = 0;

    /*
     * multi_accept: until the queue is empty. Otherwise one connection
     * per event: listening sockets are registered level-triggered, so
     * the rest wakes the loop again. The bound keeps one busy listening
     * socket from starving the connections already accepted.
     */

    for (n = 0; n < cycle->connection_n + WEIR_ACCEPT_DROP_MAX; n++) {

        socklen = sizeof(weir_sockaddr_t);
        weir_memzero(&sa, sizeof(struct sockaddr));

        s = weir_event_accept_socket(lc->fd, &sa.sockaddr, &socklen);

        if (s == (weir_fd_t) -1) {
            err = weir_socket_errno;

            if (err == WEIR_EAGAIN || err == EWOULDBLOCK) {
                return;
            }

            if (err == WEIR_ECONNABORTED || err == EPROTO
                || err == WEIR_EINTR)
            {
                /* the client gave up before we took it: nothing lost */
                weir_log_error(WEIR_LOG_INFO, ev->log, err,
                               "accept() failed");

                if (ecf->multi_accept) {
                    continue;
                }

                return;
            }

            if (err == WEIR_EMFILE || err == WEIR_ENFILE) {
                if (weir_accept_warn_time != weir_time()) {
                    weir_accept_warn_time = weir_time();

                    weir_log_error(WEIR_LOG_WARN, ev->log, err,
                                   "accept() failed, pausing accepts "
                                   "for %dms", WEIR_ACCEPT_RETRY_MSEC);
                }

                if (weir_disable_accept_events(cycle, 1) != WEIR_OK) {
                    return;
                }

                weir_event_add_timer(ev, WEIR_ACCEPT_RETRY_MSEC);

                return;
            }

            level = (err == WEIR_ENOBUFS || err == WEIR_ENOMEM)
                    ? WEIR_LOG_CRIT : WEIR_LOG_ERR;

            weir_log_error(level, ev->log, err, "accept() failed");

            return;
        }

        if (weir_stat_accepted) {
            (void) weir_atomic_fetch_add(weir_stat_accepted, 1);
        }

        c = weir_get_connection(s, ev->log);

        if (c == NULL) {
            /* out of connections (logged, rate limited): the client
             * sees its connection closed rather than a hang */

            if (close(s) == -1) {
                weir_log_error(WEIR_LOG_ERR, ev->log, weir_socket_errno,
                               "close() socket %d failed", s);
            }

            if (++dropped >= WEIR_ACCEPT_DROP_MAX) {
                return;
            }

            continue;
        }

        c->type = SOCK_STREAM;

        if (weir_stat_active) {
            (void) weir_atomic_fetch_add(weir_stat_active, 1);
        }

        c->listening = ls;

        c->pool = weir_create_pool(ls->pool_size > WEIR_MIN_POOL_SIZE
                                   ? ls->pool_size : WEIR_MIN_POOL_SIZE,
                                   ev->log);
        if (c->pool == NULL) {
            weir_close_accepted_connection(c);
            return;
        }

        if (socklen > sizeof(weir_sockaddr_t)) {
            socklen = sizeof(weir_sockaddr_t);
        }

        /*
         * The address takes what it needs (16 bytes for IPv4, not the 128
         * of weir_sockaddr_t), and so does its text below: with what
         * HTTP adds, a connection then stays within the first block of
         * its pool (connection_pool_size), which an idle keep-alive
         * connection keeps.
         */
        len = socklen < sizeof(struct sockaddr) ? sizeof(struct sockaddr)
                                                : socklen;

        c->sockaddr = weir_palloc(c->pool, len);
        if (c->sockaddr == NULL) {
            weir_close_accepted_connection(c);
            return;
        }

        weir_memzero(c->sockaddr, len);
        weir_memcpy(c->sockaddr, &sa, socklen);
        c->socklen = socklen;

        log = weir_palloc(c->pool, sizeof(weir_log_t));
        if (log == NULL) {
            weir_close_accepted_connection(c);
            return;
        }

        *log = ls->log;

        /* the listening socket's "while accepting" context is not this
         * connection's: its owner sets its own */
        log->handler = NULL;
        log->data = NULL;
        log->action = NULL;

        c->recv = weir_unix_recv;
        c->send = weir_unix_send;
        c->writev = weir_unix_writev;
        c->ssl = NULL;

        c->log = log;
        c->pool->log = log;

        c->local_sockaddr = ls->sockaddr;
        c->local_socklen = ls->socklen;

        rev = c->read;
        wev = c->write;

        /* a new socket has room to write: the first send needs no event */
        wev->ready = 1;

        rev->log = log;
        wev->log = log;

        c->number = weir_connection_counter
                    ? weir_atomic_fetch_add(weir_connection_counter, 1)
                    : ++weir_accept_local_number;

        log->connection = c->number;

        c->start_time = weir_current_msec;

        if (weir_stat_handled) {
            (void) weir_atomic_fetch_add(weir_stat_handled, 1);
        }

        switch (c->sockaddr->sa_family) {

        case AF_INET:
            size = INET_ADDRSTRLEN;
            break;

        case AF_INET6:
            size = INET6_ADDRSTRLEN;
            break;

        default:
            size = WEIR_SOCKADDR_STRLEN;
            break;
        }

        /* without the port (the last argument of weir_sock_ntop) */
        c->addr_text.data = weir_pnalloc(c->pool, size);
        if (c->addr_text.data == NULL) {
            weir_close_accepted_connection(c);
            return;
        }

        len = weir_sock_ntop(c->sockaddr, c->socklen, c->addr_text.data,
                             size, 0);
        c->addr_text.len = len;

        if (c->sockaddr->sa_family == AF_INET
            || c->sockaddr->sa_family == AF_INET6)
        {
            /* failures are logged at info and the connection goes on:
             * small writes are only slower without it */
            (void) weir_tcp_nodelay(c);

        } else {
            c->tcp_nodelay = WEIR_TCP_NODELAY_DISABLED;
        }

        if (ls->handler == NULL) {
            weir_close_accepted_connection(c);
            return;
        }

        ls->handler(c);

        if (!ecf->multi_accept) {
            return;
        }
    }
}


/* a non-blocking, close-on-exec socket, or -1 with errno set */

static weir_fd_t
weir_event_accept_socket(weir_fd_t lfd, struct sockaddr *sa,
    socklen_t *socklen)
{
    weir_fd_t   s;
#if !(WEIR_HAVE_ACCEPT4)
    weir_err_t  err;
#endif

#if (WEIR_HAVE_ACCEPT4)

    s = accept4(lfd, sa, socklen, SOCK_NONBLOCK|SOCK_CLOEXEC);

#else

    s = accept(lfd, sa, socklen);

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


static void
weir_close_accepted_connection(weir_connection_t *c)
{
    weir_fd_t  fd;

    weir_free_connection(c);

    fd = c->fd;
    c->fd = (weir_fd_t) -1;

    if (close(fd) == -1) {
        weir_log_error(WEIR_LOG_ERR, c->log, weir_socket_errno,
                       "close() socket %d failed", fd);
    }

    if (c->pool) {
        weir_destroy_pool(c->pool);
        c->pool = NULL;
    }

    if (weir_stat_active) {
        (void) weir_atomic_fetch_add(weir_stat_active, -1);
    }
}
