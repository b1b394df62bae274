#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_unit.h"


/*
 * Event timers and posted events, driven by a fake clock: the tests set
 * weir_current_msec themselves and never call weir_time_update().
 */

#define TEST_TIMER_EVENTS  8


static weir_event_t  test_timer_ev[TEST_TIMER_EVENTS];
static int           test_timer_order[64];
static weir_uint_t   test_timer_fired;


static void
test_timer_reset(weir_msec_t now)
{
    weir_uint_t  i;

    weir_current_msec = now;

    (void) weir_event_timer_init(weir_unit_log());

    weir_memzero(test_timer_ev, sizeof(test_timer_ev));
    weir_memzero(test_timer_order, sizeof(test_timer_order));
    test_timer_fired = 0;

    for (i = 0; i < TEST_TIMER_EVENTS; i++) {
        test_timer_ev[i].log = weir_unit_log();
    }
}


static void
test_timer_record(weir_event_t *ev)
{
    if (test_timer_fired < weir_nelems(test_timer_order)) {
        test_timer_order[test_timer_fired] = (int) (ev - test_timer_ev);
    }

    test_timer_fired++;
}


/* re-arms itself once, 100 ms later */
static void
test_timer_rearm(weir_event_t *ev)
{
    test_timer_record(ev);

    if (test_timer_fired == 1) {
        ev->timedout = 0;
        weir_event_add_timer(ev, 100);
    }
}


/* removes the timer of the next event */
static void
test_timer_del_next(weir_event_t *ev)
{
    test_timer_record(ev);

    weir_event_del_timer(ev + 1);
}


WEIR_UNIT_TEST(timer_empty_tree)
{
    test_timer_reset(1000);

    WEIR_CHECK(weir_event_find_timer() == WEIR_TIMER_INFINITE);
    WEIR_CHECK_INT(weir_event_no_timers_left(), 1);

    weir_event_expire_timers();
    WEIR_CHECK_INT(test_timer_fired, 0);
}


WEIR_UNIT_TEST(timer_expire_in_deadline_order)
{
    weir_uint_t  i;

    test_timer_reset(1000);

    for (i = 0; i < 4; i++) {
        test_timer_ev[i].handler = test_timer_record;
    }

    /* added out of order: 300, 100, 400, 200 ms */
    weir_event_add_timer(&test_timer_ev[0], 300);
    weir_event_add_timer(&test_timer_ev[1], 100);
    weir_event_add_timer(&test_timer_ev[2], 400);
    weir_event_add_timer(&test_timer_ev[3], 200);

    for (i = 0; i < 4; i++) {
        WEIR_CHECK(test_timer_ev[i].timer_set);
    }

    WEIR_CHECK_INT(weir_event_find_timer(), 100);

    /* nothing is due yet */
    weir_current_msec = 1099;
    weir_event_expire_timers();
    WEIR_CHECK_INT(test_timer_fired, 0);
    WEIR_CHECK_INT(weir_event_find_timer(), 1);

    /* a deadline is due at its exact millisecond */
    weir_current_msec = 1100;
    weir_event_expire_timers();
    WEIR_CHECK_INT(test_timer_fired, 1);
    WEIR_CHECK_INT(test_timer_order[0], 1);
    WEIR_CHECK(test_timer_ev[1].timedout);
    WEIR_CHECK(!test_timer_ev[1].timer_set);
    WEIR_CHECK_INT(weir_event_find_timer(), 100);

    /* a late loop runs everything due, earliest first */
    weir_current_msec = 5000;
    weir_event_expire_timers();
    WEIR_CHECK_INT(test_timer_fired, 4);
    WEIR_CHECK_INT(test_timer_order[1], 3);
    WEIR_CHECK_INT(test_timer_order[2], 0);
    WEIR_CHECK_INT(test_timer_order[3], 2);

    WEIR_CHECK(weir_event_find_timer() == WEIR_TIMER_INFINITE);

    for (i = 0; i < 4; i++) {
        WEIR_CHECK(!test_timer_ev[i].timer_set);
        WEIR_CHECK(test_timer_ev[i].timedout);
    }
}


WEIR_UNIT_TEST(timer_find_overdue_is_zero)
{
    test_timer_reset(1000);

    test_timer_ev[0].handler = test_timer_record;
    weir_event_add_timer(&test_timer_ev[0], 10);

    weir_current_msec = 2000;
    WEIR_CHECK_INT(weir_event_find_timer(), 0);

    weir_event_expire_timers();
    WEIR_CHECK_INT(test_timer_fired, 1);
}


WEIR_UNIT_TEST(timer_delete)
{
    test_timer_reset(1000);

    test_timer_ev[0].handler = test_timer_record;
    test_timer_ev[1].handler = test_timer_record;

    weir_event_add_timer(&test_timer_ev[0], 100);
    weir_event_add_timer(&test_timer_ev[1], 200);

    weir_event_del_timer(&test_timer_ev[0]);
    WEIR_CHECK(!test_timer_ev[0].timer_set);

    /* deleting twice is harmless */
    weir_event_del_timer(&test_timer_ev[0]);

    WEIR_CHECK_INT(weir_event_find_timer(), 200);

    weir_current_msec = 10000;
    weir_event_expire_timers();

    WEIR_CHECK_INT(test_timer_fired, 1);
    WEIR_CHECK_INT(test_timer_order[0], 1);
    WEIR_CHECK(!test_timer_ev[0].timedout);
}


WEIR_UNIT_TEST(timer_lazy_rearm)
{
    weir_rbtree_key_t  key;

    test_timer_reset(1000);

    test_timer_ev[0].handler = test_timer_record;

    weir_event_add_timer(&test_timer_ev[0], 1000);
    key = test_timer_ev[0].timer.key;
    WEIR_CHECK_INT(key, 2000);

    /* re-armed 100 ms later for the same 1000 ms: within the lazy delay,
     * the node and its deadline stay */
    weir_current_msec = 1100;
    weir_event_add_timer(&test_timer_ev[0], 1000);
    WEIR_CHECK_INT(test_timer_ev[0].timer.key, key);
    WEIR_CHECK(test_timer_ev[0].timer_set);

    /* a later deadline just under the lazy delay: still kept */
    weir_event_add_timer(&test_timer_ev[0],
                         1000 - 100 + (WEIR_TIMER_LAZY_DELAY - 1));
    WEIR_CHECK_INT(test_timer_ev[0].timer.key, key);

    /* an earlier deadline, even by 1 ms, must fire earlier: re-inserted */
    weir_event_add_timer(&test_timer_ev[0], 1000 - 100 - 1);
    WEIR_CHECK_INT(test_timer_ev[0].timer.key, key - 1);
    key = test_timer_ev[0].timer.key;

    weir_event_add_timer(&test_timer_ev[0],
                         1000 - 100 - 1 - (WEIR_TIMER_LAZY_DELAY - 1));
    WEIR_CHECK_INT(test_timer_ev[0].timer.key,
                   key - (WEIR_TIMER_LAZY_DELAY - 1));
    WEIR_CHECK_INT(weir_event_find_timer(),
                   1000 - 100 - 1 - (WEIR_TIMER_LAZY_DELAY - 1));

    /* a later move of the lazy delay or more re-inserts */
    weir_event_add_timer(&test_timer_ev[0], 1000 + WEIR_TIMER_LAZY_DELAY);
    WEIR_CHECK_INT(test_timer_ev[0].timer.key,
                   1100 + 1000 + WEIR_TIMER_LAZY_DELAY);

    weir_event_add_timer(&test_timer_ev[0], 10);
    WEIR_CHECK_INT(test_timer_ev[0].timer.key, 1110);
    WEIR_CHECK_INT(weir_event_find_timer(), 10);

    weir_current_msec = 1110;
    weir_event_expire_timers();
    WEIR_CHECK_INT(test_timer_fired, 1);
    WEIR_CHECK(weir_event_find_timer() == WEIR_TIMER_INFINITE);
}


WEIR_UNIT_TEST(timer_handler_rearms_itself)
{
    test_timer_reset(1000);

    test_timer_ev[0].handler = test_timer_rearm;
    weir_event_add_timer(&test_timer_ev[0], 50);

    /* the handler re-arms for 100 ms later: not due in the same pass */
    weir_current_msec = 1050;
    weir_event_expire_timers();
    WEIR_CHECK_INT(test_timer_fired, 1);
    WEIR_CHECK(test_timer_ev[0].timer_set);
    WEIR_CHECK_INT(weir_event_find_timer(), 100);

    weir_current_msec = 1150;
    weir_event_expire_timers();
    WEIR_CHECK_INT(test_timer_fired, 2);
    WEIR_CHECK(!test_timer_ev[0].timer_set);
}


WEIR_UNIT_TEST(timer_handler_deletes_another)
{
    test_timer_reset(1000);

    test_timer_ev[0].handler = test_timer_del_next;
    test_timer_ev[1].handler = test_timer_record;

    weir_event_add_timer(&test_timer_ev[0], 10);
    weir_event_add_timer(&test_timer_ev[1], 20);

    /* both due; the first handler removes the second before its turn */
    weir_current_msec = 1100;
    weir_event_expire_timers();

    WEIR_CHECK_INT(test_timer_fired, 1);
    WEIR_CHECK_INT(test_timer_order[0], 0);
    WEIR_CHECK(!test_timer_ev[1].timer_set);
    WEIR_CHECK(!test_timer_ev[1].timedout);
}


WEIR_UNIT_TEST(timer_clock_wraps)
{
    weir_msec_t  start;

    /* 100 ms before the millisecond clock wraps */
    start = (weir_msec_t) ((weir_rbtree_key_t) -100);

    test_timer_reset(start);

    test_timer_ev[0].handler = test_timer_record;
    test_timer_ev[1].handler = test_timer_record;
    test_timer_ev[2].handler = test_timer_record;

    weir_event_add_timer(&test_timer_ev[0], 300);    /* after the wrap */
    weir_event_add_timer(&test_timer_ev[1], 50);     /* before it */
    weir_event_add_timer(&test_timer_ev[2], 150);    /* after it */

    WEIR_CHECK_INT(weir_event_find_timer(), 50);

    weir_current_msec = start + 50;
    weir_event_expire_timers();
    WEIR_CHECK_INT(test_timer_fired, 1);
    WEIR_CHECK_INT(test_timer_order[0], 1);

    /* past the wrap: the clock reads 50 */
    weir_current_msec = (weir_msec_t) (weir_rbtree_key_t) (start + 150);
    WEIR_CHECK_INT(weir_event_find_timer(), 0);

    weir_event_expire_timers();
    WEIR_CHECK_INT(test_timer_fired, 2);
    WEIR_CHECK_INT(test_timer_order[1], 2);
    WEIR_CHECK_INT(weir_event_find_timer(), 150);

    weir_current_msec = (weir_msec_t) (weir_rbtree_key_t) (start + 300);
    weir_event_expire_timers();
    WEIR_CHECK_INT(test_timer_fired, 3);
    WEIR_CHECK_INT(test_timer_order[2], 0);
}


WEIR_UNIT_TEST(timer_cancelable_does_not_hold_shutdown)
{
    test_timer_reset(1000);

    test_timer_ev[0].handler = test_timer_record;
    test_timer_ev[1].handler = test_timer_record;
    test_timer_ev[2].handler = test_timer_record;

    test_timer_ev[0].cancelable = 1;
    test_timer_ev[1].cancelable = 1;

    weir_event_add_timer(&test_timer_ev[0], 100);
    weir_event_add_timer(&test_timer_ev[1], 300);
    WEIR_CHECK_INT(weir_event_no_timers_left(), 1);

    /* one request timer, in the middle of the tree */
    weir_event_add_timer(&test_timer_ev[2], 200);
    WEIR_CHECK_INT(weir_event_no_timers_left(), 0);

    weir_event_del_timer(&test_timer_ev[2]);
    WEIR_CHECK_INT(weir_event_no_timers_left(), 1);

    weir_event_del_timer(&test_timer_ev[0]);
    weir_event_del_timer(&test_timer_ev[1]);
    WEIR_CHECK(weir_event_find_timer() == WEIR_TIMER_INFINITE);
}


WEIR_UNIT_TEST(timer_many_random)
{
    weir_uint_t    i, n, fired;
    weir_msec_t    last;
    weir_event_t  *evs;
    unsigned int   seed;

    test_timer_reset(50000);

    n = 1000;

    evs = weir_pcalloc(weir_unit_pool(), n * sizeof(weir_event_t));
    WEIR_REQUIRE(evs != NULL);

    seed = 12345;

    for (i = 0; i < n; i++) {
        seed = seed * 1103515245 + 12345;
        evs[i].log = weir_unit_log();
        evs[i].handler = test_timer_record;
        weir_event_add_timer(&evs[i], (seed >> 8) % 10000);
    }

    /* every other one goes away again */
    for (i = 0; i < n; i += 2) {
        weir_event_del_timer(&evs[i]);
    }

    /* step the clock; each pass must leave nothing due behind */
    fired = 0;
    last = weir_current_msec;

    while (weir_event_find_timer() != WEIR_TIMER_INFINITE) {
        weir_current_msec = last + weir_event_find_timer();
        last = weir_current_msec;

        weir_event_expire_timers();

        WEIR_CHECK(weir_event_find_timer() > 0);

        if (++fired > n) {
            break;
        }
    }

    WEIR_CHECK_INT(test_timer_fired, n / 2);

    for (i = 0; i < n; i++) {
        WEIR_CHECK_INT(evs[i].timer_set, 0);
        WEIR_CHECK_INT(evs[i].timedout, i % 2);
    }
}


/* posted events */

static void
test_posted_record(weir_event_t *ev)
{
    test_timer_record(ev);
}


/* posts event 3 while the queue runs */
static void
test_posted_chain(weir_event_t *ev)
{
    test_timer_record(ev);

    weir_post_event(&test_timer_ev[3], &weir_posted_events);
}


WEIR_UNIT_TEST(posted_events_run_in_order)
{
    test_timer_reset(1000);

    weir_queue_init(&weir_posted_events);

    test_timer_ev[0].handler = test_posted_record;
    test_timer_ev[1].handler = test_posted_chain;
    test_timer_ev[2].handler = test_posted_record;
    test_timer_ev[3].handler = test_posted_record;

    weir_post_event(&test_timer_ev[0], &weir_posted_events);
    weir_post_event(&test_timer_ev[1], &weir_posted_events);
    weir_post_event(&test_timer_ev[2], &weir_posted_events);

    /* posting twice keeps one entry */
    weir_post_event(&test_timer_ev[0], &weir_posted_events);

    WEIR_CHECK(test_timer_ev[0].posted);

    /* a posted event may be withdrawn (its connection closed) */
    weir_delete_posted_event(&test_timer_ev[2]);
    WEIR_CHECK(!test_timer_ev[2].posted);

    weir_event_process_posted(NULL, &weir_posted_events);

    WEIR_CHECK_INT(test_timer_fired, 3);
    WEIR_CHECK_INT(test_timer_order[0], 0);
    WEIR_CHECK_INT(test_timer_order[1], 1);
    WEIR_CHECK_INT(test_timer_order[2], 3);

    WEIR_CHECK(weir_queue_empty(&weir_posted_events));
    WEIR_CHECK(!test_timer_ev[0].posted);
    WEIR_CHECK(!test_timer_ev[3].posted);
}


/* yields: posts itself for the next I/O pass, as a write budget does */
static void
test_posted_yield(weir_event_t *ev)
{
    test_timer_record(ev);

    weir_post_event(ev, &weir_posted_next_events);
}


WEIR_UNIT_TEST(posted_next_events_wait_for_the_next_pass)
{
    test_timer_reset(1000);

    weir_queue_init(&weir_posted_events);
    weir_queue_init(&weir_posted_next_events);

    test_timer_ev[0].handler = test_posted_yield;
    test_timer_ev[1].handler = test_posted_record;

    weir_post_event(&test_timer_ev[0], &weir_posted_events);

    /* an event that re-posts itself to the next pass runs once per
     * pass, not again in the same one */
    weir_event_process_posted(NULL, &weir_posted_events);

    WEIR_CHECK_INT(test_timer_fired, 1);
    WEIR_CHECK(test_timer_ev[0].posted);
    WEIR_CHECK(weir_queue_empty(&weir_posted_events));

    /* the next pass: it runs before what that pass's I/O posts */
    weir_event_move_posted_next(NULL);
    weir_post_event(&test_timer_ev[1], &weir_posted_events);

    WEIR_CHECK(weir_queue_empty(&weir_posted_next_events));

    weir_event_process_posted(NULL, &weir_posted_events);

    WEIR_CHECK_INT(test_timer_fired, 3);
    WEIR_CHECK_INT(test_timer_order[0], 0);
    WEIR_CHECK_INT(test_timer_order[1], 0);
    WEIR_CHECK_INT(test_timer_order[2], 1);

    /* withdrawn from the next queue like from any other */
    WEIR_CHECK(test_timer_ev[0].posted);
    weir_delete_posted_event(&test_timer_ev[0]);
    WEIR_CHECK(weir_queue_empty(&weir_posted_next_events));
}
