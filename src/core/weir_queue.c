#include "weir_config.h"
#include "weir_core.h"


weir_queue_t *
weir_queue_middle(weir_queue_t *queue)
{
    weir_queue_t  *middle, *next;

    middle = weir_queue_head(queue);

    if (middle == weir_queue_last(queue)) {
        return middle;
    }

    next = weir_queue_head(queue);

    for ( ;; ) {
        middle = weir_queue_next(middle);
        next = weir_queue_next(next);

        if (next == weir_queue_last(queue)) {
            return middle;
        }

        next = weir_queue_next(next);

        if (next == weir_queue_last(queue)) {
            return middle;
        }
    }
}


/* a stable insertion sort: queues sorted here are short (locations,
 * handlers), and stability keeps configuration order among equals */

void
weir_queue_sort(weir_queue_t *queue,
    weir_int_t (*cmp)(const weir_queue_t *, const weir_queue_t *))
{
    weir_queue_t  *q, *prev, *next;

    q = weir_queue_head(queue);

    if (q == weir_queue_last(queue)) {
        return;
    }

    for (q = weir_queue_next(q); q != weir_queue_sentinel(queue); q = next) {

        prev = weir_queue_prev(q);
        next = weir_queue_next(q);

        weir_queue_remove(q);

        do {
            if (cmp(prev, q) <= 0) {
                break;
            }

            prev = weir_queue_prev(prev);

        } while (prev != weir_queue_sentinel(queue));

        weir_queue_insert_after(prev, q);
    }
}
