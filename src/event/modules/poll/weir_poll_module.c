#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"

#include <poll.h>


/*
 * The portable backend: level-triggered poll(2). Each registered
 * descriptor has one slot of the pollfd array, shared by its read and
 * write events (both hold the slot number in ev->index); a parallel
 * array maps the slot back to its connection. Removing a slot moves the
 * last one into the hole, so the array stays dense.
 *
 * Every ready event is posted and run after the scan, never from inside
 * it: a handler that closes a connection changes the array, which must
 * not happen while it is being walked.
 */


static weir_int_t weir_poll_init(weir_cycle_t *cycle, weir_msec_t timer);
static void weir_poll_done(weir_cycle_t *cycle);
static weir_int_t weir_poll_add_event(weir_event_t *ev, weir_int_t event,
    weir_uint_t flags);
static weir_int_t weir_poll_del_event(weir_event_t *ev, weir_int_t event,
    weir_uint_t flags);
static weir_int_t weir_poll_process_events(weir_cycle_t *cycle,
    weir_msec_t timer, weir_uint_t flags);


static struct pollfd        *weir_poll_event_list;
static weir_connection_t   **weir_poll_conn_list;
static weir_uint_t           weir_poll_nevents;
static weir_uint_t           weir_poll_nalloc;


static weir_str_t  weir_poll_name = weir_string("poll");


static weir_event_module_t  weir_poll_module_ctx = {
    &weir_poll_name,
    NULL,
    NULL,

    {
        weir_poll_add_event,
        weir_poll_del_event,
        weir_poll_add_event,
        weir_poll_del_event,
        NULL,
        NULL,
        weir_poll_process_events,
        weir_poll_init,
        weir_poll_done
    }
};


weir_module_t  weir_poll_module = {
    WEIR_MODULE_V1,
    &weir_poll_module_ctx,
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
weir_poll_init(weir_cycle_t *cycle, weir_msec_t timer)
{
    weir_uint_t           n;
    struct pollfd        *list;
    weir_connection_t   **conns;

    (void) timer;

    /* one slot per connection at most */
    n = cycle->connection_n ? cycle->connection_n : 1;

    if (weir_poll_event_list == NULL || n > weir_poll_nalloc) {

        list = weir_alloc(sizeof(struct pollfd) * n, cycle->log);
        if (list == NULL) {
            return WEIR_ERROR;
        }

        conns = weir_alloc(sizeof(weir_connection_t *) * n, cycle->log);
        if (conns == NULL) {
            weir_free(list);
            return WEIR_ERROR;
        }

        if (weir_poll_event_list) {
            weir_memcpy(list, weir_poll_event_list,
                        sizeof(struct pollfd) * weir_poll_nevents);
            weir_memcpy(conns, weir_poll_conn_list,
                        sizeof(weir_connection_t *) * weir_poll_nevents);

            weir_free(weir_poll_event_list);
            weir_free(weir_poll_conn_list);
        }

        weir_poll_event_list = list;
        weir_poll_conn_list = conns;
        weir_poll_nalloc = n;
    }

    weir_event_actions = weir_poll_module_ctx.actions;

    weir_event_flags = WEIR_USE_LEVEL_EVENT|WEIR_USE_FD_EVENT;

    return WEIR_OK;
}


static void
weir_poll_done(weir_cycle_t *cycle)
{
    (void) cycle;

    weir_free(weir_poll_event_list);
    weir_free(weir_poll_conn_list);

    weir_poll_event_list = NULL;
    weir_poll_conn_list = NULL;
    weir_poll_nevents = 0;
    weir_poll_nalloc = 0;
}


static weir_int_t
weir_poll_add_event(weir_event_t *ev, weir_int_t event, weir_uint_t flags)
{
    short               events;
    weir_uint_t         slot;
    weir_event_t       *e;
    weir_connection_t  *c;

    (void) flags;

    c = ev->data;

    if (ev->index != WEIR_INVALID_INDEX) {
        weir_log_error(WEIR_LOG_ALERT, ev->log, 0,
                       "poll event fd:%d ev:%d is already set",
                       c->fd, (int) event);
        return WEIR_OK;
    }

    if (event == WEIR_READ_EVENT) {
        e = c->write;
        events = POLLIN;

    } else {
        e = c->read;
        events = POLLOUT;
    }

    if (e == NULL || e->index == WEIR_INVALID_INDEX) {

        if (weir_poll_nevents >= weir_poll_nalloc) {
            weir_log_error(WEIR_LOG_ALERT, ev->log, 0,
                           "poll: no free slot for fd:%d", c->fd);
            return WEIR_ERROR;
        }

        slot = weir_poll_nevents++;

        weir_poll_event_list[slot].fd = c->fd;
        weir_poll_event_list[slot].events = events;
        weir_poll_event_list[slot].revents = 0;
        weir_poll_conn_list[slot] = c;

    } else {
        slot = e->index;
        weir_poll_event_list[slot].events |= events;
    }

    ev->index = slot;
    ev->active = 1;

    return WEIR_OK;
}


static weir_int_t
weir_poll_del_event(weir_event_t *ev, weir_int_t event, weir_uint_t flags)
{
    short               events;
    weir_uint_t         slot, last;
    weir_event_t       *e;
    weir_connection_t  *c, *moved;

    (void) flags;

    c = ev->data;

    ev->active = 0;

    if (ev->index == WEIR_INVALID_INDEX) {
        return WEIR_OK;
    }

    slot = ev->index;
    ev->index = WEIR_INVALID_INDEX;

    if (event == WEIR_READ_EVENT) {
        e = c->write;
        events = POLLIN;

    } else {
        e = c->read;
        events = POLLOUT;
    }

    if (slot >= weir_poll_nevents) {
        weir_log_error(WEIR_LOG_ALERT, ev->log, 0,
                       "poll: invalid slot %lu for fd:%d",
                       (unsigned long) slot, c->fd);
        return WEIR_ERROR;
    }

    if (e && e->index == slot) {
        /* the other direction keeps the slot */
        weir_poll_event_list[slot].events &= (short) ~events;
        return WEIR_OK;
    }

    /* the slot is free: the last one moves into it */

    last = --weir_poll_nevents;

    if (slot < last) {
        weir_poll_event_list[slot] = weir_poll_event_list[last];
        moved = weir_poll_conn_list[last];
        weir_poll_conn_list[slot] = moved;

        if (moved->read->index == last) {
            moved->read->index = slot;
        }

        if (moved->write->index == last) {
            moved->write->index = slot;
        }
    }

    return WEIR_OK;
}


static weir_int_t
weir_poll_process_events(weir_cycle_t *cycle, weir_msec_t timer,
    weir_uint_t flags)
{
    int                 ready, wait;
    short               revents, events;
    weir_uint_t         i, n, found;
    weir_err_t          err;
    weir_event_t       *ev;
    weir_connection_t  *c;

    if (timer == WEIR_TIMER_INFINITE) {
        wait = -1;

    } else if (timer > INT_MAX) {
        wait = INT_MAX;

    } else {
        wait = (int) timer;
    }

    ready = poll(weir_poll_event_list, (nfds_t) weir_poll_nevents, wait);

    err = (ready == -1) ? weir_errno : 0;

    if (flags & WEIR_UPDATE_TIME) {
        weir_time_update();
    }

    if (err) {
        if (err == WEIR_EINTR) {
            return WEIR_OK;
        }

        weir_log_error(WEIR_LOG_ALERT, cycle->log, err, "poll() failed");
        return WEIR_ERROR;
    }

    if (ready == 0) {
        if (timer != WEIR_TIMER_INFINITE) {
            return WEIR_OK;
        }

        weir_log_error(WEIR_LOG_ALERT, cycle->log, 0,
                       "poll() returned no events without timeout");
        return WEIR_ERROR;
    }

    n = weir_poll_nevents;
    found = 0;

    for (i = 0; i < n && found < (weir_uint_t) ready; i++) {

        revents = weir_poll_event_list[i].revents;

        if (revents == 0) {
            continue;
        }

        found++;

        events = weir_poll_event_list[i].events;
        c = weir_poll_conn_list[i];

        if (revents & POLLNVAL) {
            weir_log_error(WEIR_LOG_ALERT, cycle->log, 0,
                           "poll() error fd:%d ev:%04x rev:%04x",
                           weir_poll_event_list[i].fd,
                           (unsigned) (unsigned short) events,
                           (unsigned) (unsigned short) revents);
            continue;
        }

        /* an error or a hang-up wakes whichever direction is wanted */
        if (revents & (POLLERR|POLLHUP)) {
            revents |= (short) (events & (POLLIN|POLLOUT));
        }

        if ((revents & POLLIN) && c->read->active) {
            ev = c->read;
            ev->ready = 1;
            ev->available = -1;

            if (ev->accept) {
                weir_post_event(ev, &weir_posted_accept_events);

            } else {
                weir_post_event(ev, &weir_posted_events);
            }
        }

        if ((revents & POLLOUT) && c->write->active) {
            ev = c->write;
            ev->ready = 1;

            weir_post_event(ev, &weir_posted_events);
        }
    }

    if (!(flags & WEIR_POST_EVENTS)) {
        weir_event_process_posted(cycle, &weir_posted_accept_events);
        weir_event_process_posted(cycle, &weir_posted_events);
    }

    return WEIR_OK;
}
