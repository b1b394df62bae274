#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"

#include <sys/epoll.h>


/*
 * The Linux backend. Connections are registered edge-triggered (EPOLLET)
 * for both directions at once; listening sockets level-triggered. One
 * epoll registration exists per descriptor, so adding or removing one
 * direction while the other is registered is an EPOLL_CTL_MOD.
 *
 * The registration's data is the connection pointer with the event's
 * instance bit in its lowest bit: a connection closed and reused while
 * an event for its old descriptor is still in the batch returned by
 * epoll_wait() then has a different instance, and the event is dropped.
 */

#define WEIR_EPOLL_EVENTS  512

#ifndef EPOLLRDHUP
#define EPOLLRDHUP  0
#endif


static weir_int_t weir_epoll_init(weir_cycle_t *cycle, weir_msec_t timer);
static void weir_epoll_done(weir_cycle_t *cycle);
static weir_int_t weir_epoll_add_event(weir_event_t *ev, weir_int_t event,
    weir_uint_t flags);
static weir_int_t weir_epoll_del_event(weir_event_t *ev, weir_int_t event,
    weir_uint_t flags);
static weir_int_t weir_epoll_add_connection(weir_connection_t *c);
static weir_int_t weir_epoll_del_connection(weir_connection_t *c,
    weir_uint_t flags);
static weir_int_t weir_epoll_process_events(weir_cycle_t *cycle,
    weir_msec_t timer, weir_uint_t flags);
static void weir_epoll_post(weir_event_t *ev, weir_uint_t flags);


static int                  weir_epoll_fd = -1;
static struct epoll_event  *weir_epoll_event_list;
static weir_uint_t          weir_epoll_nevents;


static weir_str_t  weir_epoll_name = weir_string("epoll");


static weir_event_module_t  weir_epoll_module_ctx = {
    &weir_epoll_name,
    NULL,
    NULL,

    {
        weir_epoll_add_event,
        weir_epoll_del_event,
        weir_epoll_add_event,
        weir_epoll_del_event,
        weir_epoll_add_connection,
        weir_epoll_del_connection,
        weir_epoll_process_events,
        weir_epoll_init,
        weir_epoll_done
    }
};


weir_module_t  weir_epoll_module = {
    WEIR_MODULE_V1,
    &weir_epoll_module_ctx,
    NULL,
    WEIR_EVENT_MODULE,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    WEIR_MODULE_V1_PADDING
};


static weir_int_t
weir_epoll_init(weir_cycle_t *cycle, weir_msec_t timer)
{
    (void) timer;

    if (weir_epoll_fd == -1) {
        weir_epoll_fd = epoll_create1(EPOLL_CLOEXEC);

        if (weir_epoll_fd == -1) {
            weir_log_error(WEIR_LOG_EMERG, cycle->log, weir_errno,
                           "epoll_create1() failed");
            return WEIR_ERROR;
        }
    }

    if (weir_epoll_event_list == NULL) {
        weir_epoll_nevents = WEIR_EPOLL_EVENTS;

        weir_epoll_event_list = weir_alloc(sizeof(struct epoll_event)
                                           * weir_epoll_nevents,
                                           cycle->log);
        if (weir_epoll_event_list == NULL) {
            return WEIR_ERROR;
        }
    }

    weir_event_actions = weir_epoll_module_ctx.actions;

    weir_event_flags = WEIR_USE_CLEAR_EVENT
                       |WEIR_USE_GREEDY_EVENT
                       |WEIR_USE_EPOLL_EVENT;

    return WEIR_OK;
}


static void
weir_epoll_done(weir_cycle_t *cycle)
{
    if (weir_epoll_fd != -1 && close(weir_epoll_fd) == -1) {
        weir_log_error(WEIR_LOG_ALERT, cycle->log, weir_errno,
                       "epoll close() failed");
    }

    weir_epoll_fd = -1;

    weir_free(weir_epoll_event_list);

    weir_epoll_event_list = NULL;
    weir_epoll_nevents = 0;
}


static uint32_t
weir_epoll_trigger(weir_uint_t flags)
{
    uint32_t  events;

    events = 0;

    if (flags & WEIR_CLEAR_EVENT) {
        events |= EPOLLET;
    }

#ifdef EPOLLEXCLUSIVE
    if (flags & WEIR_EXCLUSIVE_EVENT) {
        events |= EPOLLEXCLUSIVE;
    }
#endif

    return events;
}


static weir_int_t
weir_epoll_add_event(weir_event_t *ev, weir_int_t event, weir_uint_t flags)
{
    int                  op;
    uint32_t             events, prev;
    weir_event_t        *e;
    weir_connection_t   *c;
    struct epoll_event   ee;

    c = ev->data;

    if (event == WEIR_READ_EVENT) {
        e = c->write;
        prev = EPOLLOUT;
        events = EPOLLIN|EPOLLRDHUP;

    } else {
        e = c->read;
        prev = EPOLLIN|EPOLLRDHUP;
        events = EPOLLOUT;
    }

    events |= weir_epoll_trigger(flags);

#ifdef EPOLLEXCLUSIVE
    if (events & EPOLLEXCLUSIVE) {
        /* the kernel refuses EPOLLRDHUP next to it; a listening socket
         * has no half-closed state to report anyway */
        events &= ~(uint32_t) EPOLLRDHUP;
    }
#endif

    if (e->active) {
        op = EPOLL_CTL_MOD;
        events |= prev;

        /* one trigger mode per descriptor: the other direction keeps
         * the one it was registered with */
        if (e->clear) {
            events |= EPOLLET;
        }

    } else {
        op = EPOLL_CTL_ADD;
    }

    ee.events = events;
    ee.data.ptr = (void *) ((uintptr_t) c | ev->instance);

    if (epoll_ctl(weir_epoll_fd, op, c->fd, &ee) == -1) {
        weir_log_error(WEIR_LOG_ALERT, ev->log, weir_errno,
                       "epoll_ctl(%d, %d) failed", op, c->fd);
        return WEIR_ERROR;
    }

    ev->active = 1;
    ev->clear = (events & EPOLLET) ? 1 : 0;

    if (op == EPOLL_CTL_MOD) {
        e->clear = ev->clear;
    }

    return WEIR_OK;
}


static weir_int_t
weir_epoll_del_event(weir_event_t *ev, weir_int_t event, weir_uint_t flags)
{
    int                  op;
    uint32_t             prev;
    weir_event_t        *e;
    weir_connection_t   *c;
    struct epoll_event   ee;

    /* a descriptor being closed leaves the epoll set by itself, as long
     * as no other process shares it (listening sockets never use this) */

    if (flags & WEIR_CLOSE_EVENT) {
        ev->active = 0;
        return WEIR_OK;
    }

    c = ev->data;

    if (event == WEIR_READ_EVENT) {
        e = c->write;
        prev = EPOLLOUT;

    } else {
        e = c->read;
        prev = EPOLLIN|EPOLLRDHUP;
    }

    if (e->active) {
        op = EPOLL_CTL_MOD;
        ee.events = prev | (e->clear ? EPOLLET : 0);
        ee.data.ptr = (void *) ((uintptr_t) c | ev->instance);

    } else {
        op = EPOLL_CTL_DEL;
        ee.events = 0;
        ee.data.ptr = NULL;
    }

    if (epoll_ctl(weir_epoll_fd, op, c->fd, &ee) == -1) {
        weir_log_error(WEIR_LOG_ALERT, ev->log, weir_errno,
                       "epoll_ctl(%d, %d) failed", op, c->fd);
        return WEIR_ERROR;
    }

    ev->active = 0;

    return WEIR_OK;
}


static weir_int_t
weir_epoll_add_connection(weir_connection_t *c)
{
    struct epoll_event  ee;

    ee.events = EPOLLIN|EPOLLOUT|EPOLLET|EPOLLRDHUP;
    ee.data.ptr = (void *) ((uintptr_t) c | c->read->instance);

    if (epoll_ctl(weir_epoll_fd, EPOLL_CTL_ADD, c->fd, &ee) == -1) {
        weir_log_error(WEIR_LOG_ALERT, c->log, weir_errno,
                       "epoll_ctl(EPOLL_CTL_ADD, %d) failed", c->fd);
        return WEIR_ERROR;
    }

    c->read->active = 1;
    c->write->active = 1;
    c->read->clear = 1;
    c->write->clear = 1;

    return WEIR_OK;
}


static weir_int_t
weir_epoll_del_connection(weir_connection_t *c, weir_uint_t flags)
{
    struct epoll_event  ee;

    if (flags & WEIR_CLOSE_EVENT) {
        c->read->active = 0;
        c->write->active = 0;
        return WEIR_OK;
    }

    ee.events = 0;
    ee.data.ptr = NULL;

    if (epoll_ctl(weir_epoll_fd, EPOLL_CTL_DEL, c->fd, &ee) == -1) {
        weir_log_error(WEIR_LOG_ALERT, c->log, weir_errno,
                       "epoll_ctl(EPOLL_CTL_DEL, %d) failed", c->fd);
        return WEIR_ERROR;
    }

    c->read->active = 0;
    c->write->active = 0;

    return WEIR_OK;
}


static weir_int_t
weir_epoll_process_events(weir_cycle_t *cycle, weir_msec_t timer,
    weir_uint_t flags)
{
    int                  events, wait;
    uint32_t             revents;
    weir_int_t           i;
    weir_err_t           err;
    weir_uint_t          instance;
    weir_event_t        *rev, *wev;
    weir_connection_t   *c;

    if (timer == WEIR_TIMER_INFINITE) {
        wait = -1;

    } else if (timer > INT_MAX) {
        wait = INT_MAX;

    } else {
        wait = (int) timer;
    }

    events = epoll_wait(weir_epoll_fd, weir_epoll_event_list,
                        (int) weir_epoll_nevents, wait);

    err = (events == -1) ? weir_errno : 0;

    if (flags & WEIR_UPDATE_TIME) {
        weir_time_update();
    }

    if (err) {
        if (err == WEIR_EINTR) {
            /* a signal: the caller looks at its flags next */
            return WEIR_OK;
        }

        weir_log_error(WEIR_LOG_ALERT, cycle->log, err,
                       "epoll_wait() failed");
        return WEIR_ERROR;
    }

    if (events == 0) {
        if (timer != WEIR_TIMER_INFINITE) {
            return WEIR_OK;
        }

        weir_log_error(WEIR_LOG_ALERT, cycle->log, 0,
                       "epoll_wait() returned no events without timeout");
        return WEIR_ERROR;
    }

    for (i = 0; i < events; i++) {
        c = weir_epoll_event_list[i].data.ptr;

        instance = (uintptr_t) c & 1;
        c = (weir_connection_t *) ((uintptr_t) c & (uintptr_t) ~1);

        rev = c->read;

        if (c->fd == (weir_fd_t) -1 || rev->instance != instance) {
            /* the connection was closed (and maybe reused) by a handler
             * that ran for an earlier event of this batch */
            continue;
        }

        revents = weir_epoll_event_list[i].events;

        /* an error or a hang-up is reported to whichever direction is
         * registered: its handler finds out with the next read or write */
        if (revents & (EPOLLERR|EPOLLHUP)) {
            revents |= EPOLLIN|EPOLLOUT;
        }

        if ((revents & EPOLLIN) && rev->active) {

            if (revents & EPOLLRDHUP) {
                rev->pending_eof = 1;
            }

            rev->ready = 1;
            rev->available = -1;

            weir_epoll_post(rev, flags);
        }

        wev = c->write;

        if ((revents & EPOLLOUT) && wev->active) {

            if (c->fd == (weir_fd_t) -1 || wev->instance != instance) {
                /* the read handler closed the connection */
                continue;
            }

            wev->ready = 1;

            weir_epoll_post(wev, flags);
        }
    }

    return WEIR_OK;
}


static void
weir_epoll_post(weir_event_t *ev, weir_uint_t flags)
{
    if (flags & WEIR_POST_EVENTS) {
        if (ev->accept) {
            weir_post_event(ev, &weir_posted_accept_events);

        } else {
            weir_post_event(ev, &weir_posted_events);
        }

        return;
    }

    ev->handler(ev);
}
