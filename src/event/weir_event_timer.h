#ifndef _WEIR_EVENT_TIMER_H_INCLUDED_
#define _WEIR_EVENT_TIMER_H_INCLUDED_

#define WEIR_TIMER_INFINITE  (weir_msec_t) -1
/* re-arming for a later deadline within this keeps the node */
#define WEIR_TIMER_LAZY_DELAY  300

weir_int_t weir_event_timer_init(weir_log_t *log);
/* ms until the nearest timer, or WEIR_TIMER_INFINITE */
weir_msec_t weir_event_find_timer(void);
void weir_event_expire_timers(void);
/* nonzero when only cancelable timers remain (shutdown may finish) */
weir_int_t weir_event_no_timers_left(void);

extern weir_rbtree_t  weir_event_timer_rbtree;

void weir_event_add_timer(weir_event_t *ev, weir_msec_t timer);
void weir_event_del_timer(weir_event_t *ev);

#endif /* _WEIR_EVENT_TIMER_H_INCLUDED_ */
