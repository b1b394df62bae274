#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir.h"


#define WEIR_BIND_TRIES        5
#define WEIR_BIND_RETRY_MSEC   500
#define WEIR_DRAIN_MAX         32


static weir_int_t weir_add_inherited_socket(weir_cycle_t *cycle,
    weir_fd_t s);
static weir_int_t weir_open_listening_socket(weir_cycle_t *cycle,
    weir_listening_t *ls);
static void weir_unlink_stale_unix_socket(weir_cycle_t *cycle,
    weir_listening_t *ls);
static void weir_drain_connections(weir_cycle_t *cycle);
static unsigned char *weir_accept_log_error(weir_log_t *log,
    unsigned char *buf, size_t len);


/* "N worker_connections are not enough" is logged at most once a second:
 * an overloaded worker would otherwise write a line per accept */
static time_t  weir_connections_warn_time;


weir_listening_t *
weir_create_listening(weir_conf_t *cf, struct sockaddr *sockaddr,
    socklen_t socklen)
{
    size_t             len;
    weir_listening_t  *ls;
    struct sockaddr   *sa;
    unsigned char      text[WEIR_SOCKADDR_STRLEN + sizeof(":65535")];

    if (cf->cycle->listening.elts == NULL) {
        if (weir_array_init(&cf->cycle->listening, cf->cycle->pool, 4,
                            sizeof(weir_listening_t))
            != WEIR_OK)
        {
            return NULL;
        }
    }

    ls = weir_array_push(&cf->cycle->listening);
    if (ls == NULL) {
        return NULL;
    }

    weir_memzero(ls, sizeof(weir_listening_t));

    /* a full sockaddr union: weir_cmp_sockaddr() and getsockname() may
     * look at more than socklen bytes of a unix address */
    sa = weir_pcalloc(cf->pool, sizeof(weir_sockaddr_t));
    if (sa == NULL) {
        return NULL;
    }

    if (socklen > sizeof(weir_sockaddr_t)) {
        socklen = sizeof(weir_sockaddr_t);
    }

    weir_memcpy(sa, sockaddr, socklen);

    ls->sockaddr = sa;
    ls->socklen = socklen;

    len = weir_sock_ntop(sa, socklen, text, sizeof(text), 1);

    ls->addr_text.data = weir_pnalloc(cf->pool, len + 1);
    if (ls->addr_text.data == NULL) {
        return NULL;
    }

    weir_memcpy(ls->addr_text.data, text, len);
    ls->addr_text.data[len] = '\0';
    ls->addr_text.len = len;

    ls->fd = -1;
    ls->type = SOCK_STREAM;
    ls->backlog = 511;
    ls->rcvbuf = -1;
    ls->sndbuf = -1;
    ls->pool_size = 256;

    if (sa->sa_family == AF_INET6) {
        ls->ipv6only = 1;
    }

    if (cf->log) {
        ls->log = *cf->log;
    }

    ls->log.handler = weir_accept_log_error;
    ls->log.data = &ls->addr_text;
    ls->logp = &cf->cycle->new_log;

    return ls;
}


/* what accept and listening errors add to a log line */

static unsigned char *
weir_accept_log_error(weir_log_t *log, unsigned char *buf, size_t len)
{
    weir_str_t  *addr;

    addr = log->data;

    if (addr == NULL) {
        return buf;
    }

    return weir_slprintf(buf, buf + len,
                         " while accepting new connection on %.*s",
                         WEIR_STR_ARG(*addr));
}


weir_int_t
weir_clone_listening(weir_cycle_t *cycle, weir_listening_t *ls)
{
#if (WEIR_HAVE_REUSEPORT)

    weir_int_t          n, i;
    weir_core_conf_t   *ccf;
    weir_listening_t    ols;

    if (!ls->reuseport || ls->worker != 0) {
        return WEIR_OK;
    }

    ols = *ls;

    ccf = (weir_core_conf_t *) weir_get_conf(cycle->conf_ctx,
                                             weir_core_module);

    n = (ccf && ccf->worker_processes > 0) ? ccf->worker_processes : 1;

    for (i = 1; i < n; i++) {

        ls = weir_array_push(&cycle->listening);
        if (ls == NULL) {
            return WEIR_ERROR;
        }

        *ls = ols;
        ls->worker = (weir_uint_t) i;

        /* the template's log.data points at its own addr_text, which
         * the push may have moved: each copy points at its own */
        ls->log.data = &ls->addr_text;
    }

    ls = cycle->listening.elts;

    for (i = 0; i < (weir_int_t) cycle->listening.nelts; i++) {
        if (ls[i].log.handler == weir_accept_log_error) {
            ls[i].log.data = &ls[i].addr_text;
        }
    }

#else

    (void) cycle;
    (void) ls;

#endif

    return WEIR_OK;
}


weir_int_t
weir_set_inherited_sockets(weir_cycle_t *cycle)
{
    char           *inherited;
    weir_int_t      s;
    unsigned char  *p, *start;

    inherited = getenv(WEIR_VAR);

    if (inherited == NULL) {
        return WEIR_OK;
    }

    weir_log_error(WEIR_LOG_NOTICE, cycle->log, 0,
                   "using inherited sockets from \"%s\"", inherited);

    if (cycle->listening.elts == NULL) {
        if (weir_array_init(&cycle->listening, cycle->pool, 10,
                            sizeof(weir_listening_t))
            != WEIR_OK)
        {
            return WEIR_ERROR;
        }
    }

    /* "3;4;5;": the separator may also be ':', the last one may miss */

    for (start = p = (unsigned char *) inherited; /* void */; p++) {

        if (*p != ':' && *p != ';' && *p != '\0') {
            continue;
        }

        if (p != start) {
            s = weir_atoi(start, (size_t) (p - start));

            if (s == WEIR_ERROR || s > INT_MAX) {
                weir_log_error(WEIR_LOG_EMERG, cycle->log, 0,
                               "invalid socket number \"%s\" in " WEIR_VAR
                               " environment variable, ignoring the rest"
                               " of the variable", inherited);
                break;
            }

            if (weir_add_inherited_socket(cycle, (weir_fd_t) s)
                == WEIR_ERROR)
            {
                return WEIR_ERROR;
            }
        }

        if (*p == '\0') {
            break;
        }

        start = p + 1;
    }

    weir_inherited = 1;

    return WEIR_OK;
}


/* WEIR_ERROR only when memory runs out; a socket that cannot be used is
 * logged and skipped */

static weir_int_t
weir_add_inherited_socket(weir_cycle_t *cycle, weir_fd_t s)
{
    int                value;
    size_t             len;
    weir_sockaddr_t    sa;
    socklen_t          olen, socklen;
    unsigned char      text[WEIR_SOCKADDR_STRLEN + sizeof(":65535")];
    weir_listening_t  *ls;

    weir_memzero(&sa, sizeof(weir_sockaddr_t));
    socklen = sizeof(weir_sockaddr_t);

    if (getsockname(s, &sa.sockaddr, &socklen) == -1) {
        weir_log_error(WEIR_LOG_CRIT, cycle->log, weir_socket_errno,
                       "getsockname() of the inherited socket #%d failed",
                       s);
        return WEIR_DECLINED;
    }

    if (socklen > sizeof(weir_sockaddr_t)) {
        socklen = sizeof(weir_sockaddr_t);
    }

    switch (sa.sockaddr.sa_family) {
    case AF_INET:
    case AF_INET6:
    case AF_UNIX:
        break;

    default:
        weir_log_error(WEIR_LOG_CRIT, cycle->log, 0,
                       "the inherited socket #%d has an unsupported "
                       "protocol family", s);
        return WEIR_DECLINED;
    }

    ls = weir_array_push(&cycle->listening);
    if (ls == NULL) {
        return WEIR_ERROR;
    }

    weir_memzero(ls, sizeof(weir_listening_t));

    ls->sockaddr = weir_pcalloc(cycle->pool, sizeof(weir_sockaddr_t));
    if (ls->sockaddr == NULL) {
        return WEIR_ERROR;
    }

    weir_memcpy(ls->sockaddr, &sa, socklen);
    ls->socklen = socklen;

    len = weir_sock_ntop(ls->sockaddr, socklen, text, sizeof(text), 1);

    ls->addr_text.data = weir_pnalloc(cycle->pool, len + 1);
    if (ls->addr_text.data == NULL) {
        return WEIR_ERROR;
    }

    weir_memcpy(ls->addr_text.data, text, len);
    ls->addr_text.data[len] = '\0';
    ls->addr_text.len = len;

    ls->fd = s;
    ls->inherited = 1;
    ls->open = 1;
    ls->bound = 1;
    ls->backlog = 511;
    ls->rcvbuf = -1;
    ls->sndbuf = -1;
    ls->pool_size = 256;
    ls->log = *cycle->log;
    ls->log.handler = NULL;
    ls->log.data = NULL;
    ls->logp = &cycle->new_log;

    olen = sizeof(int);

    if (getsockopt(s, SOL_SOCKET, SO_TYPE, (void *) &value, &olen) == -1) {
        weir_log_error(WEIR_LOG_CRIT, cycle->log, weir_socket_errno,
                       "getsockopt(SO_TYPE) %.*s failed",
                       WEIR_STR_ARG(ls->addr_text));
        ls->ignore = 1;
        return WEIR_DECLINED;
    }

    ls->type = value;

    if (ls->type == SOCK_STREAM) {
        ls->listen = 1;
    }

#if (WEIR_HAVE_REUSEPORT) && defined(SO_REUSEPORT)
    olen = sizeof(int);

    if (getsockopt(s, SOL_SOCKET, SO_REUSEPORT, (void *) &value, &olen)
        == 0)
    {
        ls->reuseport = value ? 1 : 0;
    }

    if (ls->reuseport) {
        weir_uint_t        i;
        weir_listening_t  *prev;

        /* the old master lists a reuseport address once per worker, in
         * worker order: the n-th socket of an address served worker n */

        prev = cycle->listening.elts;

        for (i = 0; i + 1 < cycle->listening.nelts; i++) {
            if (prev[i].reuseport && prev[i].inherited
                && weir_cmp_sockaddr(prev[i].sockaddr, prev[i].socklen,
                                     ls->sockaddr, ls->socklen, 1)
                   == WEIR_OK)
            {
                ls->worker++;
            }
        }
    }
#endif

    if (sa.sockaddr.sa_family == AF_INET6) {
        olen = sizeof(int);

        if (getsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, (void *) &value, &olen)
            == 0)
        {
            ls->ipv6only = value ? 1 : 0;
        }
    }

    return WEIR_OK;
}


weir_int_t
weir_open_listening_sockets(weir_cycle_t *cycle)
{
    weir_uint_t        i, tries, failed;
    weir_int_t         rc;
    weir_listening_t  *ls;
    struct timespec    ts;

    failed = 0;

    for (tries = WEIR_BIND_TRIES; tries; tries--) {
        failed = 0;

        ls = cycle->listening.elts;

        for (i = 0; i < cycle->listening.nelts; i++) {

            if (ls[i].ignore || ls[i].fd != -1 || ls[i].inherited) {
                continue;
            }

            rc = weir_open_listening_socket(cycle, &ls[i]);

            if (rc == WEIR_ERROR) {
                return WEIR_ERROR;
            }

            if (rc == WEIR_AGAIN) {
                failed = 1;
            }
        }

        if (!failed) {
            break;
        }

        /* an old binary may still be releasing the address (binary
         * upgrade, or a restart right after a stop): wait a little */

        if (tries > 1) {
            weir_log_error(WEIR_LOG_NOTICE, cycle->log, 0,
                           "try again to bind() after %dms",
                           WEIR_BIND_RETRY_MSEC);

            ts.tv_sec = 0;
            ts.tv_nsec = WEIR_BIND_RETRY_MSEC * 1000000L;

            while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
                /* the rest of the interval */
            }
        }
    }

    if (failed) {
        weir_log_error(WEIR_LOG_EMERG, cycle->log, 0, "still could not bind()");
        return WEIR_ERROR;
    }

    return WEIR_OK;
}


/*
 * Opens one listening socket. WEIR_AGAIN: the address is in use (the
 * caller retries); WEIR_ERROR: a fatal error, logged.
 */

static weir_int_t
weir_open_listening_socket(weir_cycle_t *cycle, weir_listening_t *ls)
{
    int          reuse, ipv6only;
    weir_fd_t    s;
    weir_err_t   err;

    s = socket(ls->sockaddr->sa_family, ls->type, 0);

    if (s == -1) {
        weir_log_error(WEIR_LOG_EMERG, cycle->log, weir_socket_errno,
                       "socket() %.*s failed", WEIR_STR_ARG(ls->addr_text));
        return WEIR_ERROR;
    }

    if (ls->sockaddr->sa_family != AF_UNIX) {
        reuse = 1;

        if (setsockopt(s, SOL_SOCKET, SO_REUSEADDR, (const void *) &reuse,
                       sizeof(int))
            == -1)
        {
            weir_log_error(WEIR_LOG_EMERG, cycle->log, weir_socket_errno,
                           "setsockopt(SO_REUSEADDR) %.*s failed",
                           WEIR_STR_ARG(ls->addr_text));
            goto failed;
        }
    }

    if (ls->reuseport && ls->sockaddr->sa_family != AF_UNIX) {
#if (WEIR_HAVE_REUSEPORT) && defined(SO_REUSEPORT)
        reuse = 1;

        if (setsockopt(s, SOL_SOCKET, SO_REUSEPORT, (const void *) &reuse,
                       sizeof(int))
            == -1)
        {
            weir_log_error(WEIR_LOG_EMERG, cycle->log, weir_socket_errno,
                           "setsockopt(SO_REUSEPORT) %.*s failed",
                           WEIR_STR_ARG(ls->addr_text));
            goto failed;
        }
#else
        weir_log_error(WEIR_LOG_EMERG, cycle->log, 0,
                       "reuseport is not supported on this platform, "
                       "listening on %.*s", WEIR_STR_ARG(ls->addr_text));
        goto failed;
#endif
    }

    if (ls->sockaddr->sa_family == AF_INET6) {
        ipv6only = ls->ipv6only ? 1 : 0;

        if (setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY,
                       (const void *) &ipv6only, sizeof(int))
            == -1)
        {
            weir_log_error(WEIR_LOG_EMERG, cycle->log, weir_socket_errno,
                           "setsockopt(IPV6_V6ONLY) %.*s failed, ignored",
                           WEIR_STR_ARG(ls->addr_text));
        }
    }

    if (weir_nonblocking(s) == -1) {
        weir_log_error(WEIR_LOG_EMERG, cycle->log, weir_socket_errno,
                       "fcntl(O_NONBLOCK) %.*s failed",
                       WEIR_STR_ARG(ls->addr_text));
        goto failed;
    }

    if (weir_cloexec(s) == -1) {
        weir_log_error(WEIR_LOG_EMERG, cycle->log, weir_socket_errno,
                       "fcntl(FD_CLOEXEC) %.*s failed",
                       WEIR_STR_ARG(ls->addr_text));
        goto failed;
    }

    if (ls->sockaddr->sa_family == AF_UNIX) {
        weir_unlink_stale_unix_socket(cycle, ls);
    }

    if (bind(s, ls->sockaddr, ls->socklen) == -1) {
        err = weir_socket_errno;

        /* "weir -t" next to a running server: the address is its own */
        if (err != WEIR_EADDRINUSE || !weir_test_config) {
            weir_log_error(WEIR_LOG_EMERG, cycle->log, err,
                           "bind() to %.*s failed",
                           WEIR_STR_ARG(ls->addr_text));
        }

        (void) close(s);

        if (err != WEIR_EADDRINUSE) {
            return WEIR_ERROR;
        }

        return weir_test_config ? WEIR_OK : WEIR_AGAIN;
    }

    if (ls->sockaddr->sa_family == AF_UNIX) {
        /* clients and workers running as another user must connect */
        if (chmod(((struct sockaddr_un *) ls->sockaddr)->sun_path, 0666)
            == -1)
        {
            weir_log_error(WEIR_LOG_ERR, cycle->log, weir_errno,
                           "chmod() \"%.*s\" failed",
                           WEIR_STR_ARG(ls->addr_text));
        }
    }

    if (ls->type != SOCK_STREAM) {
        ls->fd = s;
        ls->bound = 1;
        ls->open = 1;
        return WEIR_OK;
    }

    if (listen(s, ls->backlog) == -1) {
        err = weir_socket_errno;

        /* a socket of another process with SO_REUSEPORT may take the
         * address between bind() and listen() */
        if (err != WEIR_EADDRINUSE || !weir_test_config) {
            weir_log_error(WEIR_LOG_EMERG, cycle->log, err,
                           "listen() to %.*s, backlog %d failed",
                           WEIR_STR_ARG(ls->addr_text), ls->backlog);
        }

        (void) close(s);

        if (err != WEIR_EADDRINUSE) {
            return WEIR_ERROR;
        }

        return weir_test_config ? WEIR_OK : WEIR_AGAIN;
    }

    ls->listen = 1;
    ls->bound = 1;
    ls->open = 1;
    ls->fd = s;

    return WEIR_OK;

failed:

    (void) close(s);

    return WEIR_ERROR;
}


/*
 * A unix socket file left by a server that died blocks bind(). It is
 * removed only when it is a socket and nothing answers on it: a live
 * server's socket (weir -t next to it, a second instance) stays, and
 * bind() then reports the address in use.
 */

static void
weir_unlink_stale_unix_socket(weir_cycle_t *cycle, weir_listening_t *ls)
{
    int                  fd;
    char                *path;
    struct stat          st;
    struct sockaddr_un  *saun;

    if (weir_test_config) {
        return;
    }

    saun = (struct sockaddr_un *) ls->sockaddr;
    path = saun->sun_path;

    if (path[0] == '\0') {
        /* abstract namespace: no file */
        return;
    }

    if (lstat(path, &st) == -1 || !S_ISSOCK(st.st_mode)) {
        return;
    }

    fd = socket(AF_UNIX, ls->type | SOCK_CLOEXEC, 0);
    if (fd == -1) {
        return;
    }

    if (connect(fd, ls->sockaddr, ls->socklen) == 0
        || (errno != ECONNREFUSED && errno != ENOENT))
    {
        (void) close(fd);
        return;
    }

    (void) close(fd);

    if (unlink(path) == -1) {
        weir_log_error(WEIR_LOG_ERR, cycle->log, weir_errno,
                       "unlink() stale socket \"%s\" failed", path);
        return;
    }

    weir_log_error(WEIR_LOG_NOTICE, cycle->log, 0,
                   "removed stale unix socket \"%s\"", path);
}


void
weir_configure_listening_sockets(weir_cycle_t *cycle)
{
    int                value;
    weir_uint_t        i;
    weir_listening_t  *ls;

    ls = cycle->listening.elts;

    for (i = 0; i < cycle->listening.nelts; i++) {

        if (ls[i].fd == -1 || ls[i].ignore) {
            continue;
        }

        if (ls[i].logp) {
            ls[i].log = *ls[i].logp;
            ls[i].log.handler = weir_accept_log_error;
            ls[i].log.data = &ls[i].addr_text;
            ls[i].log.connection = 0;
            ls[i].log.action = NULL;
        }

        if (ls[i].rcvbuf != -1) {
            value = ls[i].rcvbuf;

            if (setsockopt(ls[i].fd, SOL_SOCKET, SO_RCVBUF,
                           (const void *) &value, sizeof(int))
                == -1)
            {
                weir_log_error(WEIR_LOG_ERR, cycle->log, weir_socket_errno,
                               "setsockopt(SO_RCVBUF, %d) %.*s failed, "
                               "ignored", value,
                               WEIR_STR_ARG(ls[i].addr_text));
            }
        }

        if (ls[i].sndbuf != -1) {
            value = ls[i].sndbuf;

            if (setsockopt(ls[i].fd, SOL_SOCKET, SO_SNDBUF,
                           (const void *) &value, sizeof(int))
                == -1)
            {
                weir_log_error(WEIR_LOG_ERR, cycle->log, weir_socket_errno,
                               "setsockopt(SO_SNDBUF, %d) %.*s failed, "
                               "ignored", value,
                               WEIR_STR_ARG(ls[i].addr_text));
            }
        }

        if (ls[i].type == SOCK_STREAM && ls[i].listen) {

            /* listen() again on a listening socket changes its backlog:
             * a kept or inherited socket gets the new configuration's */

            if (listen(ls[i].fd, ls[i].backlog) == -1) {
                weir_log_error(WEIR_LOG_ERR, cycle->log, weir_socket_errno,
                               "listen() to %.*s, backlog %d failed, "
                               "ignored", WEIR_STR_ARG(ls[i].addr_text),
                               ls[i].backlog);
            }
        }
    }
}


/*
 * Stops this process accepting at once: the accept events go away from
 * the event backend (a real removal: the master still holds the same
 * socket, so closing our descriptor alone would leave it registered),
 * then our descriptors are closed. Accepted connections are untouched.
 */

void
weir_close_listening_sockets(weir_cycle_t *cycle)
{
    weir_uint_t         i;
    weir_listening_t   *ls;
    weir_connection_t  *c;
    struct sockaddr_un *saun;

    weir_accept_disabled = 1;

    ls = cycle->listening.elts;

    for (i = 0; i < cycle->listening.nelts; i++) {

        c = ls[i].connection;

        if (c) {
            if (c->read->active && weir_event_actions.del) {
                (void) weir_del_event(c->read, WEIR_READ_EVENT, 0);
            }

            if (c->read->timer_set) {
                weir_event_del_timer(c->read);
            }

            if (c->read->posted) {
                weir_delete_posted_event(c->read);
            }

            c->read->closed = 1;
            c->write->closed = 1;
            c->fd = -1;

            weir_free_connection(c);

            ls[i].connection = NULL;
        }

        if (ls[i].fd == -1) {
            continue;
        }

        if (close(ls[i].fd) == -1) {
            weir_log_error(WEIR_LOG_EMERG, cycle->log, weir_socket_errno,
                           "close() socket %.*s failed",
                           WEIR_STR_ARG(ls[i].addr_text));
        }

        /*
         * The socket file goes only when the master (or a single process)
         * stops for good: not in a worker, not while a new binary uses
         * the same socket, not in a new binary whose old master still
         * serves it.
         */

        if (ls[i].sockaddr->sa_family == AF_UNIX
            && (weir_process == WEIR_PROCESS_MASTER
                || weir_process == WEIR_PROCESS_SINGLE)
            && weir_new_binary == 0
            && (!ls[i].inherited || getppid() != weir_parent))
        {
            saun = (struct sockaddr_un *) ls[i].sockaddr;

            if (saun->sun_path[0] != '\0' && unlink(saun->sun_path) == -1) {
                weir_log_error(WEIR_LOG_ERR, cycle->log, weir_errno,
                               "unlink() \"%s\" failed", saun->sun_path);
            }
        }

        ls[i].fd = -1;
    }
}


weir_connection_t *
weir_get_connection(weir_fd_t s, weir_log_t *log)
{
    weir_uint_t          instance;
    weir_cycle_t        *cycle;
    weir_event_t        *rev, *wev;
    weir_connection_t   *c;

    cycle = (weir_cycle_t *) weir_cycle;

    c = cycle->free_connections;

    if (c == NULL) {
        weir_drain_connections(cycle);
        c = cycle->free_connections;
    }

    if (c == NULL) {
        if (weir_connections_warn_time != weir_time()) {
            weir_connections_warn_time = weir_time();

            weir_log_error(WEIR_LOG_WARN, log, 0,
                           "%lu worker_connections are not enough",
                           (unsigned long) cycle->connection_n);
        }

        return NULL;
    }

    cycle->free_connections = c->data;
    cycle->free_connection_n--;

    rev = c->read;
    wev = c->write;

    weir_memzero(c, sizeof(weir_connection_t));

    c->read = rev;
    c->write = wev;
    c->fd = s;
    c->log = log;

    /* plain until a module puts TLS on it (c->ssl is NULL) */
    c->writev = weir_unix_writev;

    /* an event of the previous user of this slot may still be in the
     * backend's current batch: flipping the instance bit makes it stale */
    instance = rev->instance;

    weir_memzero(rev, sizeof(weir_event_t));
    weir_memzero(wev, sizeof(weir_event_t));

    rev->instance = !instance;
    wev->instance = !instance;

    rev->index = WEIR_INVALID_INDEX;
    wev->index = WEIR_INVALID_INDEX;

    rev->data = c;
    wev->data = c;

    rev->log = log;
    wev->log = log;

    wev->write = 1;

    return c;
}


void
weir_free_connection(weir_connection_t *c)
{
    weir_cycle_t  *cycle;

    cycle = (weir_cycle_t *) weir_cycle;

    c->data = cycle->free_connections;
    cycle->free_connections = c;
    cycle->free_connection_n++;
}


void
weir_close_connection(weir_connection_t *c)
{
    weir_fd_t    fd;
    weir_err_t   err;
    weir_uint_t  level;

    if (c->fd == -1) {
        weir_log_error(WEIR_LOG_ALERT, c->log, 0,
                       "connection already closed");
        return;
    }

    if (c->ssl) {
        /* close_notify if it goes out at once; frees nothing that the
         * connection's pool does not own */
        c->ssl->ops->shutdown(c);
        c->ssl = NULL;
    }

    if (c->read->timer_set) {
        weir_event_del_timer(c->read);
    }

    if (c->write->timer_set) {
        weir_event_del_timer(c->write);
    }

    /* the descriptor is ours alone: closing it removes it from epoll and
     * kqueue, so the backends skip the system call (WEIR_CLOSE_EVENT) */

    if (!c->shared) {
        if (weir_event_actions.del_conn) {
            (void) weir_del_conn(c, WEIR_CLOSE_EVENT);

        } else if (weir_event_actions.del) {
            if (c->read->active || c->read->disabled) {
                (void) weir_del_event(c->read, WEIR_READ_EVENT,
                                      WEIR_CLOSE_EVENT);
            }

            if (c->write->active || c->write->disabled) {
                (void) weir_del_event(c->write, WEIR_WRITE_EVENT,
                                      WEIR_CLOSE_EVENT);
            }
        }
    }

    if (c->read->posted) {
        weir_delete_posted_event(c->read);
    }

    if (c->write->posted) {
        weir_delete_posted_event(c->write);
    }

    c->read->closed = 1;
    c->write->closed = 1;

    weir_reusable_connection(c, 0);

    /* an accepted connection (not the listening one, which accepts) was
     * counted as active by weir_event_accept() */
    if (c->listening && !c->read->accept && weir_stat_active) {
        (void) weir_atomic_fetch_add(weir_stat_active, -1);
    }

    fd = c->fd;
    c->fd = -1;

    weir_free_connection(c);

    if (c->shared) {
        return;
    }

    if (close(fd) == -1) {
        err = weir_socket_errno;

        level = (err == WEIR_ECONNRESET || err == WEIR_ENOTCONN)
                ? WEIR_LOG_INFO : WEIR_LOG_ALERT;

        weir_log_error(level, c->log, err, "close() socket %d failed", fd);
    }
}


void
weir_reusable_connection(weir_connection_t *c, weir_uint_t reusable)
{
    weir_cycle_t  *cycle;

    cycle = (weir_cycle_t *) weir_cycle;

    if (c->reusable) {
        weir_queue_remove(&c->queue);
        cycle->reusable_connections_n--;

        if (weir_stat_waiting) {
            (void) weir_atomic_fetch_add(weir_stat_waiting, -1);
        }
    }

    c->reusable = reusable ? 1 : 0;

    if (reusable) {
        if (cycle->reusable_connections_queue.next == NULL) {
            weir_queue_init(&cycle->reusable_connections_queue);
        }

        /* the head is the most recently idle: draining takes the tail */
        weir_queue_insert_head(&cycle->reusable_connections_queue,
                               &c->queue);
        cycle->reusable_connections_n++;

        if (weir_stat_waiting) {
            (void) weir_atomic_fetch_add(weir_stat_waiting, 1);
        }
    }
}


/*
 * Out of connections: the oldest idle ones give theirs back. Each owner
 * sees c->close in its read handler and closes; this frees at most a
 * few dozen at a time, and at least one when any is idle.
 */

static void
weir_drain_connections(weir_cycle_t *cycle)
{
    weir_uint_t         i, n;
    weir_queue_t       *q;
    weir_connection_t  *c;

    if (cycle->reusable_connections_queue.next == NULL
        || cycle->reusable_connections_n == 0)
    {
        return;
    }

    if (cycle->connections_reuse_time != weir_time()) {
        cycle->connections_reuse_time = weir_time();

        weir_log_error(WEIR_LOG_WARN, cycle->log, 0,
                       "%lu worker_connections are not enough, "
                       "reusing connections",
                       (unsigned long) cycle->connection_n);
    }

    n = weir_max(weir_min(WEIR_DRAIN_MAX,
                          cycle->reusable_connections_n / 8), 1);

    for (i = 0; i < n; i++) {
        if (weir_queue_empty(&cycle->reusable_connections_queue)) {
            break;
        }

        q = weir_queue_last(&cycle->reusable_connections_queue);
        c = weir_queue_data(q, weir_connection_t, queue);

        c->close = 1;
        c->read->handler(c->read);
    }
}


/*
 * Graceful shutdown: an idle (keep-alive) or reusable connection has no
 * request in flight. Its owner's read handler sees c->close (with
 * weir_exiting set) and either closes it now or keeps it for a bounded
 * drain, so that a request its client already sent is not lost; a
 * second c->close (out of connections, worker_shutdown_timeout) closes.
 */

void
weir_close_idle_connections(weir_cycle_t *cycle)
{
    weir_uint_t         i;
    weir_connection_t  *c;

    c = cycle->connections;

    if (c == NULL) {
        return;
    }

    for (i = 0; i < cycle->connection_n; i++) {

        if (c[i].fd == -1 || c[i].read == NULL || c[i].read->accept) {
            continue;
        }

        if (c[i].idle || c[i].reusable) {
            c[i].close = 1;
            c[i].read->handler(c[i].read);
        }
    }
}


/*
 * A half close is protocol-neutral: whatever c speaks, the peer must be
 * able to tell the end of the stream from a cut. A TLS peer can only
 * through close_notify (OpenSSL 3 takes a bare FIN as a truncation
 * attack), so the TLS layer sends it before the FIN.
 */

weir_int_t
weir_connection_half_close(weir_connection_t *c)
{
    weir_int_t  rc;

    if (c->ssl && c->ssl->ops->half_close) {
        rc = c->ssl->ops->half_close(c);

        if (rc != WEIR_OK) {
            return rc;
        }
    }

    if (shutdown(c->fd, SHUT_WR) == -1) {
        return weir_connection_error(c, weir_socket_errno,
                                     "shutdown() failed");
    }

    return WEIR_OK;
}


/*
 * The address the client reached. A connection accepted on a wildcard
 * socket knows only "0.0.0.0" (or "::") until it asks the kernel, once:
 * the answer replaces c->local_sockaddr for the connection's lifetime. A
 * connection without a socket of its own (fd -1: a stream of a
 * multiplexed connection) answers with what it was given, its parent's.
 */

struct sockaddr *
weir_connection_local_sockaddr(weir_connection_t *c)
{
    socklen_t             len;
    weir_sockaddr_t       sa;
    struct sockaddr      *local;
    struct sockaddr_in   *sin;
    struct sockaddr_in6  *sin6;

    local = c->local_sockaddr;

    if (local) {
        switch (local->sa_family) {

        case AF_INET:
            sin = (struct sockaddr_in *) local;
            if (sin->sin_addr.s_addr != htonl(INADDR_ANY)) {
                return local;
            }
            break;

        case AF_INET6:
            sin6 = (struct sockaddr_in6 *) local;
            if (!IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr)) {
                return local;
            }
            break;

        default:
            return local;
        }
    }

    if (c->fd == (weir_fd_t) -1) {
        return local;
    }

    len = sizeof(weir_sockaddr_t);

    if (getsockname(c->fd, &sa.sockaddr, &len) == -1) {
        weir_log_error(WEIR_LOG_CRIT, c->log, weir_socket_errno,
                       "getsockname() failed");
        return NULL;
    }

    local = weir_palloc(c->pool, len);
    if (local == NULL) {
        return NULL;
    }

    weir_memcpy(local, &sa, len);

    c->local_sockaddr = local;
    c->local_socklen = len;

    return local;
}


weir_int_t
weir_tcp_nodelay(weir_connection_t *c)
{
    int  tcp_nodelay;

    if (c->tcp_nodelay != WEIR_TCP_NODELAY_UNSET) {
        return WEIR_OK;
    }

    if (c->type != SOCK_STREAM
        || c->sockaddr == NULL
        || (c->sockaddr->sa_family != AF_INET
            && c->sockaddr->sa_family != AF_INET6))
    {
        c->tcp_nodelay = WEIR_TCP_NODELAY_DISABLED;
        return WEIR_OK;
    }

    tcp_nodelay = 1;

    if (setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY,
                   (const void *) &tcp_nodelay, sizeof(int))
        == -1)
    {
        c->tcp_nodelay = WEIR_TCP_NODELAY_DISABLED;
        return weir_connection_error(c, weir_socket_errno,
                                     "setsockopt(TCP_NODELAY) failed");
    }

    c->tcp_nodelay = WEIR_TCP_NODELAY_SET;

    return WEIR_OK;
}


weir_int_t
weir_connection_error(weir_connection_t *c, weir_err_t err,
    const char *text)
{
    weir_uint_t  level;

    switch (err) {

    /* what a peer does to us: worth a line at info, not an error */
    case ECONNRESET:
    case EPIPE:
    case ENOTCONN:
    case ETIMEDOUT:
    case ECONNREFUSED:
    case ENETDOWN:
    case ENETUNREACH:
    case EHOSTDOWN:
    case EHOSTUNREACH:
        level = WEIR_LOG_INFO;
        break;

    default:
        level = WEIR_LOG_ERR;
        break;
    }

    weir_log_error(level, c->log, err, "%s", text);

    return WEIR_ERROR;
}


ssize_t
weir_unix_recv(weir_connection_t *c, unsigned char *buf, size_t size)
{
    ssize_t        n;
    weir_err_t     err;
    weir_event_t  *rev;

    rev = c->read;

    for ( ;; ) {
        n = recv(c->fd, buf, size, 0);

        if (n == 0) {
            rev->ready = 0;
            rev->eof = 1;
            return 0;
        }

        if (n > 0) {
            /* a short read drained the socket: with an edge-triggered
             * backend the next data brings a new event, with poll the
             * level does; unless the peer already closed its side */
            if ((size_t) n < size && !rev->pending_eof) {
                rev->ready = 0;
            }

            return n;
        }

        err = weir_socket_errno;

        if (err == WEIR_EINTR) {
            continue;
        }

        if (err == WEIR_EAGAIN || err == EWOULDBLOCK) {
            rev->ready = 0;
            return WEIR_AGAIN;
        }

        rev->ready = 0;
        rev->error = 1;

        (void) weir_connection_error(c, err, "recv() failed");

        return WEIR_ERROR;
    }
}


ssize_t
weir_unix_readv(weir_connection_t *c, struct iovec *iov, int cnt)
{
    int            i;
    size_t         size;
    ssize_t        n;
    weir_err_t     err;
    weir_event_t  *rev;

    rev = c->read;

    size = 0;

    for (i = 0; i < cnt; i++) {
        size += iov[i].iov_len;
    }

    for ( ;; ) {
        n = readv(c->fd, iov, cnt);

        if (n == 0) {
            rev->ready = 0;
            rev->eof = 1;
            return 0;
        }

        if (n > 0) {
            if ((size_t) n < size && !rev->pending_eof) {
                rev->ready = 0;
            }

            return n;
        }

        err = weir_socket_errno;

        if (err == WEIR_EINTR) {
            continue;
        }

        if (err == WEIR_EAGAIN || err == EWOULDBLOCK) {
            rev->ready = 0;
            return WEIR_AGAIN;
        }

        rev->ready = 0;
        rev->error = 1;

        (void) weir_connection_error(c, err, "readv() failed");

        return WEIR_ERROR;
    }
}


ssize_t
weir_unix_send(weir_connection_t *c, unsigned char *buf, size_t size)
{
    int            flags;
    ssize_t        n;
    weir_err_t     err;
    weir_event_t  *wev;

    wev = c->write;

#ifdef MSG_NOSIGNAL
    flags = MSG_NOSIGNAL;
#else
    flags = 0;
#endif

    if (size == 0) {
        return 0;
    }

    for ( ;; ) {
        n = send(c->fd, buf, size, flags);

        if (n > 0) {
            if ((size_t) n < size) {
                wev->ready = 0;
            }

            c->sent += n;

            return n;
        }

        err = weir_socket_errno;

        if (n == 0) {
            weir_log_error(WEIR_LOG_ALERT, c->log, err,
                           "send() returned zero");
            wev->ready = 0;
            return n;
        }

        if (err == WEIR_EINTR) {
            continue;
        }

        if (err == WEIR_EAGAIN || err == EWOULDBLOCK) {
            wev->ready = 0;
            return WEIR_AGAIN;
        }

        wev->error = 1;

        (void) weir_connection_error(c, err, "send() failed");

        return WEIR_ERROR;
    }
}


/*
 * One writev() of iov[0 .. cnt - 1]. Like weir_unix_send it counts what
 * went out in c->sent and clears c->write->ready when the socket took
 * less than offered (or nothing: WEIR_AGAIN).
 */

ssize_t
weir_unix_writev(weir_connection_t *c, struct iovec *iov, int cnt)
{
    int            i;
    size_t         total;
    ssize_t        n;
    weir_err_t     err;
    weir_event_t  *wev;

    wev = c->write;

    total = 0;

    for (i = 0; i < cnt; i++) {
        total += iov[i].iov_len;
    }

    if (total == 0) {
        return 0;
    }

    for ( ;; ) {
        n = writev(c->fd, iov, cnt);

        if (n > 0) {
            if ((size_t) n < total) {
                wev->ready = 0;
            }

            c->sent += n;

            return n;
        }

        err = weir_socket_errno;

        if (n == 0) {
            weir_log_error(WEIR_LOG_ALERT, c->log, err,
                           "writev() returned zero");
            wev->ready = 0;
            return WEIR_AGAIN;
        }

        if (err == WEIR_EINTR) {
            continue;
        }

        if (err == WEIR_EAGAIN || err == EWOULDBLOCK) {
            wev->ready = 0;
            return WEIR_AGAIN;
        }

        wev->error = 1;
        c->error = 1;

        (void) weir_connection_error(c, err, "writev() failed");

        return WEIR_ERROR;
    }
}


weir_int_t
weir_connection_peek(weir_connection_t *c, unsigned char *byte)
{
    ssize_t     n;
    weir_err_t  err;

    n = recv(c->fd, (char *) byte, 1, MSG_PEEK);

    if (n == 1) {
        return WEIR_OK;
    }

    if (n == 0) {
        return WEIR_DONE;
    }

    err = weir_socket_errno;

    if (err == WEIR_EAGAIN || err == EINTR) {
        c->read->ready = 0;
        return WEIR_AGAIN;
    }

    weir_log_error(WEIR_LOG_INFO, c->log, err, "recv() failed");

    return WEIR_ERROR;
}
