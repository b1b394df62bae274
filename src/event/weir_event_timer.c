#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"


/*
 * Timers live in one red-black tree per worker, keyed by their deadline
 * in weir_current_msec units. Keys are compared through a signed
 * difference, so a deadline past a wrap of the millisecond clock still
 * sorts after the ones before it.
 */

weir_rbtree_t               weir_event_timer_rbtree;
static weir_rbtree_node_t   weir_event_timer_sentinel;


weir_int_t
weir_event_timer_init(weir_log_t *log)
{
    (void) log;

    weir_rbtree_init(&weir_event_timer_rbtree, &weir_event_timer_sentinel,
                     weir_rbtree_insert_timer_value);

    return WEIR_OK;
}


weir_msec_t
weir_event_find_timer(void)
{
    weir_msec_int_t      timer;
    weir_rbtree_node_t  *node, *root, *sentinel;

    root = weir_event_timer_rbtree.root;
    sentinel = weir_event_timer_rbtree.sentinel;

    if (root == sentinel) {
        return WEIR_TIMER_INFINITE;
    }

    node = weir_rbtree_min(root, sentinel);

    timer = (weir_msec_int_t) ((weir_rbtree_key_t) node->key
                               - (weir_rbtree_key_t) weir_current_msec);

    return (weir_msec_t) (timer > 0 ? timer : 0);
}


/*
 * Runs the handler of every timer whose deadline has come. The node is
 * out of the tree before the handler runs, so a handler may re-arm its
 * own timer, delete others, or free its event.
 */

void
weir_event_expire_timers(void)
{
    weir_event_t        *ev;
    weir_rbtree_node_t  *node, *root, *sentinel;

    sentinel = weir_event_timer_rbtree.sentinel;

    for ( ;; ) {
        root = weir_event_timer_rbtree.root;

        if (root == sentinel) {
            return;
        }

        node = weir_rbtree_min(root, sentinel);

        if ((weir_rbtree_key_int_t) ((weir_rbtree_key_t) node->key
                                     - (weir_rbtree_key_t) weir_current_msec)
            > 0)
        {
            return;
        }

        ev = weir_rbtree_data(node, weir_event_t, timer);

        weir_rbtree_delete(&weir_event_timer_rbtree, &ev->timer);

        ev->timer.left = NULL;
        ev->timer.right = NULL;
        ev->timer.parent = NULL;

        ev->timer_set = 0;
        ev->timedout = 1;

        ev->handler(ev);
    }
}


weir_int_t
weir_event_no_timers_left(void)
{
    weir_event_t        *ev;
    weir_rbtree_node_t  *node, *root, *sentinel;

    sentinel = weir_event_timer_rbtree.sentinel;
    root = weir_event_timer_rbtree.root;

    if (root == sentinel) {
        return 1;
    }

    for (node = weir_rbtree_min(root, sentinel);
         node;
         node = weir_rbtree_next(&weir_event_timer_rbtree, node))
    {
        ev = weir_rbtree_data(node, weir_event_t, timer);

        if (!ev->cancelable) {
            return 0;
        }
    }

    return 1;
}


void
weir_event_add_timer(weir_event_t *ev, weir_msec_t timer)
{
    weir_rbtree_key_t      key;
    weir_rbtree_key_int_t  diff;

    key = (weir_rbtree_key_t) (weir_current_msec + timer);

    if (ev->timer_set) {

        /* a keep-alive or read timeout is re-armed after every read: a
         * deadline that moves later by less than the lazy delay keeps its
         * node, which saves two tree operations per event and fires at
         * most the lazy delay early; a deadline moved earlier is always
         * honoured, since firing late breaks a caller's bound */

        diff = (weir_rbtree_key_int_t) (key - ev->timer.key);

        if (diff >= 0 && diff < WEIR_TIMER_LAZY_DELAY) {
            return;
        }

        weir_event_del_timer(ev);
    }

    ev->timer.key = key;

    weir_rbtree_insert(&weir_event_timer_rbtree, &ev->timer);

    ev->timer_set = 1;
}


void
weir_event_del_timer(weir_event_t *ev)
{
    if (!ev->timer_set) {
        return;
    }

    weir_rbtree_delete(&weir_event_timer_rbtree, &ev->timer);

    ev->timer.left = NULL;
    ev->timer.right = NULL;
    ev->timer.parent = NULL;

    ev->timer_set = 0;
}
