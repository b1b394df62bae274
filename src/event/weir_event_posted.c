#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"


weir_queue_t  weir_posted_accept_events;
weir_queue_t  weir_posted_events;
weir_queue_t  weir_posted_next_events;


/*
 * Runs every event of the queue, including events that the handlers post
 * while it runs. An event is unlinked before its handler runs, so the
 * handler may post it again or close its connection (which unlinks the
 * connection's other posted event).
 */

void
weir_event_process_posted(weir_cycle_t *cycle, weir_queue_t *posted)
{
    weir_queue_t  *q;
    weir_event_t  *ev;

    (void) cycle;

    if (posted->next == NULL) {
        /* the queue was never initialised: nothing was ever posted */
        return;
    }

    while (!weir_queue_empty(posted)) {

        q = weir_queue_head(posted);
        ev = weir_queue_data(q, weir_event_t, queue);

        weir_delete_posted_event(ev);

        ev->handler(ev);
    }
}


/* hands the events that yielded to the pass that starts now */

void
weir_event_move_posted_next(weir_cycle_t *cycle)
{
    weir_queue_t  *q;
    weir_event_t  *ev;

    (void) cycle;

    while (!weir_queue_empty(&weir_posted_next_events)) {
        q = weir_queue_head(&weir_posted_next_events);
        ev = weir_queue_data(q, weir_event_t, queue);

        weir_delete_posted_event(ev);
        weir_post_event(ev, &weir_posted_events);
    }
}
