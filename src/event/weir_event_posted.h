#ifndef _WEIR_EVENT_POSTED_H_INCLUDED_
#define _WEIR_EVENT_POSTED_H_INCLUDED_

/* events to run after the current I/O pass (accepts first, then others) */

#define weir_post_event(ev, q)                                                \
    if (!(ev)->posted) {                                                      \
        (ev)->posted = 1;                                                     \
        weir_queue_insert_tail(q, &(ev)->queue);                              \
    }

#define weir_delete_posted_event(ev)                                          \
    (ev)->posted = 0;                                                         \
    weir_queue_remove(&(ev)->queue);

void weir_event_process_posted(weir_cycle_t *cycle, weir_queue_t *posted);

extern weir_queue_t  weir_posted_accept_events;
extern weir_queue_t  weir_posted_events;

/* added: events that yield the worker on purpose (a fast connection's
 * write or read budget spent): they run after the NEXT I/O pass, so the
 * other ready connections run in between; posting them to
 * weir_posted_events from a posted handler would run them again at once */
void weir_event_move_posted_next(weir_cycle_t *cycle);

extern weir_queue_t  weir_posted_next_events;

#endif /* _WEIR_EVENT_POSTED_H_INCLUDED_ */
