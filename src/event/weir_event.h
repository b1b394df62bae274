#ifndef _WEIR_EVENT_H_INCLUDED_
#define _WEIR_EVENT_H_INCLUDED_

/*
 * The event loop. One event-actions interface, implemented by one module
 * per backend (epoll, poll, kqueue); the "use" directive or the first
 * available backend picks it. Each connection has a read and a write
 * event; handlers run from weir_process_events_and_timers(), which waits
 * for I/O until the nearest timer, runs expired timers and then the
 * posted queues.
 */

#define WEIR_INVALID_INDEX  0xd0d0d0d0

struct weir_event_s {
    void                  *data;        /* the connection, usually */

    unsigned               write:1;
    unsigned               accept:1;
    unsigned               instance:1;  /* detects stale epoll events */
    unsigned               active:1;    /* registered with the backend */
    unsigned               disabled:1;
    unsigned               ready:1;
    unsigned               oneshot:1;
    unsigned               complete:1;
    unsigned               eof:1;
    unsigned               error:1;
    unsigned               timedout:1;
    unsigned               timer_set:1;
    unsigned               delayed:1;
    unsigned               deferred_accept:1;
    unsigned               pending_eof:1;
    unsigned               posted:1;
    unsigned               closed:1;
    unsigned               channel:1;
    unsigned               resolver:1;
    unsigned               cancelable:1; /* does not hold off shutdown */
    /* added by the event helper: registered edge-triggered (EPOLLET,
     * EV_CLEAR), so that changing the other direction of the same fd
     * keeps the trigger mode */
    unsigned               clear:1;

    int                    available;   /* bytes, or accepts, when known */

    weir_event_handler_pt  handler;

    weir_uint_t            index;       /* poll: slot in the pollfd array */

    weir_log_t            *log;

    weir_rbtree_node_t     timer;

    weir_queue_t           queue;       /* posted queue link */
};

typedef struct {
    weir_int_t  (*add)(weir_event_t *ev, weir_int_t event, weir_uint_t flags);
    weir_int_t  (*del)(weir_event_t *ev, weir_int_t event, weir_uint_t flags);

    weir_int_t  (*enable)(weir_event_t *ev, weir_int_t event,
                          weir_uint_t flags);
    weir_int_t  (*disable)(weir_event_t *ev, weir_int_t event,
                           weir_uint_t flags);

    weir_int_t  (*add_conn)(weir_connection_t *c);
    weir_int_t  (*del_conn)(weir_connection_t *c, weir_uint_t flags);

    weir_int_t  (*process_events)(weir_cycle_t *cycle, weir_msec_t timer,
                                  weir_uint_t flags);

    weir_int_t  (*init)(weir_cycle_t *cycle, weir_msec_t timer);
    void        (*done)(weir_cycle_t *cycle);
} weir_event_actions_t;

extern weir_event_actions_t   weir_event_actions;

/* what the chosen backend does (set by its init) */
#define WEIR_USE_LEVEL_EVENT     0x00000001
#define WEIR_USE_ONESHOT_EVENT   0x00000002
#define WEIR_USE_CLEAR_EVENT     0x00000004   /* edge-triggered */
#define WEIR_USE_KQUEUE_EVENT    0x00000008
#define WEIR_USE_GREEDY_EVENT    0x00000020   /* read until EAGAIN */
#define WEIR_USE_EPOLL_EVENT     0x00000040
#define WEIR_USE_FD_EVENT        0x00000400   /* poll */

extern weir_uint_t  weir_event_flags;

/* event kinds passed to add/del */
#define WEIR_READ_EVENT     1
#define WEIR_WRITE_EVENT    2

/* flags for add/del */
#define WEIR_LEVEL_EVENT    0
#define WEIR_CLEAR_EVENT    0x1      /* edge-triggered (EPOLLET/EV_CLEAR) */
#define WEIR_ONESHOT_EVENT  0x2
#define WEIR_EXCLUSIVE_EVENT 0x4
#define WEIR_CLOSE_EVENT    0x8      /* the fd is being closed: skip syscall */
#define WEIR_DISABLE_EVENT  0x10
#define WEIR_FLUSH_EVENT    0x20

/* flags for process_events */
#define WEIR_UPDATE_TIME    1
#define WEIR_POST_EVENTS    2

#define weir_process_events   weir_event_actions.process_events
#define weir_done_events      weir_event_actions.done
#define weir_add_event        weir_event_actions.add
#define weir_del_event        weir_event_actions.del
#define weir_add_conn         weir_event_actions.add_conn
#define weir_del_conn         weir_event_actions.del_conn

typedef struct {
    weir_uint_t    connections;
    weir_uint_t    use;             /* ctx_index of the backend module */
    weir_flag_t    multi_accept;
    weir_flag_t    accept_mutex;    /* reserved; reuseport is preferred */
    weir_msec_t    accept_mutex_delay;
    unsigned char *name;            /* the backend's name */
} weir_event_conf_t;

typedef struct {
    weir_str_t              *name;
    void                  *(*create_conf)(weir_cycle_t *cycle);
    char                  *(*init_conf)(weir_cycle_t *cycle, void *conf);
    weir_event_actions_t     actions;
} weir_event_module_t;

#define WEIR_EVENT_CONF      0x02000000
#define WEIR_EVENT_MODULE_CONF 0

extern weir_module_t        weir_events_module;
extern weir_module_t        weir_event_core_module;

/* the conf of event module "module" in this cycle */
#define weir_event_get_conf(conf_ctx, module)                                 \
    (*((void ***) (conf_ctx)[weir_events_module.index]))[module.ctx_index]

/* call to (re)arm a read/write interest after handling an event: with an
 * edge-triggered backend this adds the event once; with poll it adds or
 * removes it according to ev->ready */
weir_int_t weir_handle_read_event(weir_event_t *rev, weir_uint_t flags);
weir_int_t weir_handle_write_event(weir_event_t *wev, size_t lowat);

/* runs one loop iteration: wait for I/O up to the nearest timer, then
 * expired timers and posted events */
void weir_process_events_and_timers(weir_cycle_t *cycle);

/* the accept handler of a listening connection */
void weir_event_accept(weir_event_t *ev);
/* stop or start accepting on this worker (graceful shutdown, overload) */
weir_int_t weir_enable_accept_events(weir_cycle_t *cycle);
weir_int_t weir_disable_accept_events(weir_cycle_t *cycle, weir_uint_t all);

extern weir_uint_t            weir_accept_disabled;
/* added by the event helper: the core's timer_resolution in a worker (0:
 * none), and the shared counter that numbers connections ("*N" in logs)
 * across all workers */
extern weir_msec_t            weir_event_timer_resolution;
extern weir_atomic_t         *weir_connection_counter;
extern weir_atomic_t         *weir_stat_accepted;
extern weir_atomic_t         *weir_stat_handled;
extern weir_atomic_t         *weir_stat_requests;
extern weir_atomic_t         *weir_stat_active;
extern weir_atomic_t         *weir_stat_reading;
extern weir_atomic_t         *weir_stat_writing;
extern weir_atomic_t         *weir_stat_waiting;

#include "weir_event_timer.h"
#include "weir_event_posted.h"
#include "weir_event_connect.h"

#endif /* _WEIR_EVENT_H_INCLUDED_ */
