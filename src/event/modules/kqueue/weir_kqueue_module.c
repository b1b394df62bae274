#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"

#if (WEIR_HAVE_KQUEUE)

#include <sys/event.h>


/*
 * The BSD and macOS backend. Each event is its own kevent filter
 * (EVFILT_READ, EVFILT_WRITE); connections use EV_CLEAR (edge), listening
 * sockets are level-triggered. Changes are applied at once rather than
 * batched with the next wait: a failed change is then reported for the
 * event that caused it.
 *
 * The kevent's udata is the event pointer with its instance bit in the
 * lowest bit, so that an event of a connection closed (and its slot
 * reused) earlier in the same batch is recognised as stale.
 */

#define WEIR_KQUEUE_EVENTS  512

/* NetBSD declares udata as intptr_t, the others as void * */
#if defined(__NetBSD__)
#define weir_kqueue_udata(p)   ((intptr_t) (p))
#else
#define weir_kqueue_udata(p)   ((void *) (p))
#endif


static weir_int_t weir_kqueue_init(weir_cycle_t *cycle, weir_msec_t timer);
static void weir_kqueue_done(weir_cycle_t *cycle);
static weir_int_t weir_kqueue_add_event(weir_event_t *ev, weir_int_t event,
    weir_uint_t flags);
static weir_int_t weir_kqueue_del_event(weir_event_t *ev, weir_int_t event,
    weir_uint_t flags);
static weir_int_t weir_kqueue_process_events(weir_cycle_t *cycle,
    weir_msec_t timer, weir_uint_t flags);


static int             weir_kqueue_fd = -1;
static struct kevent  *weir_kqueue_event_list;
static weir_uint_t     weir_kqueue_nevents;


static weir_str_t  weir_kqueue_name = weir_string("kqueue");


static weir_event_module_t  weir_kqueue_module_ctx = {
    &weir_kqueue_name,
    NULL,
    NULL,

    {
        weir_kqueue_add_event,
        weir_kqueue_del_event,
        weir_kqueue_add_event,
        weir_kqueue_del_event,
        NULL,
        NULL,
        weir_kqueue_process_events,
        weir_kqueue_init,
        weir_kqueue_done
    }
};


weir_module_t  weir_kqueue_module = {
    WEIR_MODULE_V1,
    &weir_kqueue_module_ctx,
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
weir_kqueue_init(weir_cycle_t *cycle, weir_msec_t timer)
{
    (void) timer;

    /* a kqueue is not inherited across fork(): each worker makes its own */

    if (weir_kqueue_fd == -1) {
        weir_kqueue_fd = kqueue();

        if (weir_kqueue_fd == -1) {
            weir_log_error(WEIR_LOG_EMERG, cycle->log, weir_errno,
                           "kqueue() failed");
            return WEIR_ERROR;
        }

        if (weir_cloexec(weir_kqueue_fd) == -1) {
            weir_log_error(WEIR_LOG_ALERT, cycle->log, weir_errno,
                           "fcntl(FD_CLOEXEC) on kqueue failed");
        }
    }

    if (weir_kqueue_event_list == NULL) {
        weir_kqueue_nevents = WEIR_KQUEUE_EVENTS;

        weir_kqueue_event_list = weir_alloc(sizeof(struct kevent)
                                            * weir_kqueue_nevents,
                                            cycle->log);
        if (weir_kqueue_event_list == NULL) {
            return WEIR_ERROR;
        }
    }

    weir_event_actions = weir_kqueue_module_ctx.actions;

    weir_event_flags = WEIR_USE_CLEAR_EVENT|WEIR_USE_KQUEUE_EVENT;

    return WEIR_OK;
}


static void
weir_kqueue_done(weir_cycle_t *cycle)
{
    if (weir_kqueue_fd != -1 && close(weir_kqueue_fd) == -1) {
        weir_log_error(WEIR_LOG_ALERT, cycle->log, weir_errno,
                       "kqueue close() failed");
    }

    weir_kqueue_fd = -1;

    weir_free(weir_kqueue_event_list);

    weir_kqueue_event_list = NULL;
    weir_kqueue_nevents = 0;
}


static weir_int_t
weir_kqueue_change(weir_event_t *ev, int filter, unsigned int kflags)
{
    weir_connection_t  *c;
    struct kevent       kev;
    struct timespec     ts;

    c = ev->data;

    EV_SET(&kev, c->fd, filter, kflags, 0, 0,
           weir_kqueue_udata((uintptr_t) ev | ev->instance));

    ts.tv_sec = 0;
    ts.tv_nsec = 0;

    if (kevent(weir_kqueue_fd, &kev, 1, NULL, 0, &ts) == -1) {
        weir_log_error(WEIR_LOG_ALERT, ev->log, weir_errno,
                       "kevent(%d, %d, 0x%x) failed", c->fd, filter,
                       kflags);
        return WEIR_ERROR;
    }

    return WEIR_OK;
}


static weir_int_t
weir_kqueue_add_event(weir_event_t *ev, weir_int_t event, weir_uint_t flags)
{
    int           filter;
    unsigned int  kflags;

    filter = (event == WEIR_READ_EVENT) ? EVFILT_READ : EVFILT_WRITE;

    kflags = EV_ADD|EV_ENABLE;

    if (flags & WEIR_CLEAR_EVENT) {
        kflags |= EV_CLEAR;
    }

    if (flags & WEIR_ONESHOT_EVENT) {
        kflags |= EV_ONESHOT;
    }

    if (weir_kqueue_change(ev, filter, kflags) != WEIR_OK) {
        return WEIR_ERROR;
    }

    ev->active = 1;
    ev->clear = (flags & WEIR_CLEAR_EVENT) ? 1 : 0;
    ev->oneshot = (flags & WEIR_ONESHOT_EVENT) ? 1 : 0;

    return WEIR_OK;
}


static weir_int_t
weir_kqueue_del_event(weir_event_t *ev, weir_int_t event, weir_uint_t flags)
{
    int  filter;

    /* closing the descriptor removes its filters: no system call */
    if (flags & WEIR_CLOSE_EVENT) {
        ev->active = 0;
        return WEIR_OK;
    }

    filter = (event == WEIR_READ_EVENT) ? EVFILT_READ : EVFILT_WRITE;

    if (weir_kqueue_change(ev, filter, EV_DELETE) != WEIR_OK) {
        return WEIR_ERROR;
    }

    ev->active = 0;

    return WEIR_OK;
}


static weir_int_t
weir_kqueue_process_events(weir_cycle_t *cycle, weir_msec_t timer,
    weir_uint_t flags)
{
    int               events, i;
    weir_err_t        err;
    weir_uint_t       instance;
    weir_event_t     *ev;
    struct timespec   ts, *tp;

    if (timer == WEIR_TIMER_INFINITE) {
        tp = NULL;

    } else {
        ts.tv_sec = (time_t) (timer / 1000);
        ts.tv_nsec = (long) ((timer % 1000) * 1000000);
        tp = &ts;
    }

    events = kevent(weir_kqueue_fd, NULL, 0, weir_kqueue_event_list,
                    (int) weir_kqueue_nevents, tp);

    err = (events == -1) ? weir_errno : 0;

    if (flags & WEIR_UPDATE_TIME) {
        weir_time_update();
    }

    if (err) {
        if (err == WEIR_EINTR) {
            return WEIR_OK;
        }

        weir_log_error(WEIR_LOG_ALERT, cycle->log, err, "kevent() failed");
        return WEIR_ERROR;
    }

    if (events == 0) {
        if (timer != WEIR_TIMER_INFINITE) {
            return WEIR_OK;
        }

        weir_log_error(WEIR_LOG_ALERT, cycle->log, 0,
                       "kevent() returned no events without timeout");
        return WEIR_ERROR;
    }

    for (i = 0; i < events; i++) {

        if (weir_kqueue_event_list[i].flags & EV_ERROR) {
            weir_log_error(WEIR_LOG_ALERT, cycle->log,
                           (weir_err_t) weir_kqueue_event_list[i].data,
                           "kevent() error on %d filter:%d",
                           (int) weir_kqueue_event_list[i].ident,
                           (int) weir_kqueue_event_list[i].filter);
            continue;
        }

        ev = (weir_event_t *) weir_kqueue_event_list[i].udata;

        instance = (uintptr_t) ev & 1;
        ev = (weir_event_t *) ((uintptr_t) ev & (uintptr_t) ~1);

        if (ev->closed || ev->instance != instance || !ev->active) {
            /* closed (maybe reused) by an earlier handler of this batch */
            continue;
        }

        if (ev->oneshot) {
            ev->active = 0;
        }

        switch (weir_kqueue_event_list[i].filter) {

        case EVFILT_READ:
        case EVFILT_WRITE:

            ev->available = (int) weir_kqueue_event_list[i].data;

            if (weir_kqueue_event_list[i].flags & EV_EOF) {
                ev->pending_eof = 1;

                if (weir_kqueue_event_list[i].fflags) {
                    ev->error = 1;
                }
            }

            ev->ready = 1;

            break;

        default:
            weir_log_error(WEIR_LOG_ALERT, cycle->log, 0,
                           "unexpected kevent() filter %d",
                           (int) weir_kqueue_event_list[i].filter);
            continue;
        }

        if (flags & WEIR_POST_EVENTS) {
            if (ev->accept) {
                weir_post_event(ev, &weir_posted_accept_events);

            } else {
                weir_post_event(ev, &weir_posted_events);
            }

            continue;
        }

        ev->handler(ev);
    }

    return WEIR_OK;
}

#endif /* WEIR_HAVE_KQUEUE */
