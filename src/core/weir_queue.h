#ifndef _WEIR_QUEUE_H_INCLUDED_
#define _WEIR_QUEUE_H_INCLUDED_

/* An intrusive doubly linked circular list: the sentinel is a queue too. */

typedef struct weir_queue_s  weir_queue_t;

struct weir_queue_s {
    weir_queue_t  *prev;
    weir_queue_t  *next;
};

#define weir_queue_init(q)                                                    \
    (q)->prev = q;                                                            \
    (q)->next = q

#define weir_queue_empty(h)     ((h) == (h)->prev)

#define weir_queue_insert_head(h, x)                                          \
    (x)->next = (h)->next;                                                    \
    (x)->next->prev = x;                                                      \
    (x)->prev = h;                                                            \
    (h)->next = x

#define weir_queue_insert_after   weir_queue_insert_head

#define weir_queue_insert_tail(h, x)                                          \
    (x)->prev = (h)->prev;                                                    \
    (x)->prev->next = x;                                                      \
    (x)->next = h;                                                            \
    (h)->prev = x

#define weir_queue_head(h)      (h)->next
#define weir_queue_last(h)      (h)->prev
#define weir_queue_sentinel(h)  (h)
#define weir_queue_next(q)      (q)->next
#define weir_queue_prev(q)      (q)->prev

#define weir_queue_remove(x)                                                  \
    (x)->next->prev = (x)->prev;                                              \
    (x)->prev->next = (x)->next;                                              \
    (x)->prev = NULL;                                                         \
    (x)->next = NULL

#define weir_queue_data(q, type, link)                                        \
    (type *) ((unsigned char *) q - offsetof(type, link))

weir_queue_t *weir_queue_middle(weir_queue_t *queue);
void weir_queue_sort(weir_queue_t *queue,
    weir_int_t (*cmp)(const weir_queue_t *, const weir_queue_t *));

#endif /* _WEIR_QUEUE_H_INCLUDED_ */
