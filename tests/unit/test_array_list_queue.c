#include "weir_config.h"
#include "weir_core.h"
#include "weir_unit.h"


typedef struct {
    weir_queue_t   queue;
    int            key;
    int            seq;
} test_item_t;


static weir_int_t
item_cmp(const weir_queue_t *one, const weir_queue_t *two)
{
    const test_item_t  *a, *b;

    a = weir_queue_data(one, const test_item_t, queue);
    b = weir_queue_data(two, const test_item_t, queue);

    return a->key - b->key;
}


WEIR_UNIT_TEST(array_push_growth)
{
    int           *elt, *elts;
    weir_uint_t    i;
    weir_array_t  *a;
    weir_pool_t   *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    a = weir_array_create(pool, 2, sizeof(int));
    WEIR_REQUIRE(a != NULL);
    WEIR_CHECK_INT(a->nelts, 0);
    WEIR_CHECK_INT(a->nalloc, 2);

    for (i = 0; i < 100; i++) {
        elt = weir_array_push(a);
        WEIR_REQUIRE(elt != NULL);
        *elt = (int) i * 3;

        /* something else in the pool: growing must move and copy */
        if (i % 10 == 0) {
            WEIR_REQUIRE(weir_palloc(pool, 24) != NULL);
        }
    }

    WEIR_CHECK_INT(a->nelts, 100);
    WEIR_CHECK(a->nalloc >= 100);

    elts = a->elts;

    for (i = 0; i < 100; i++) {
        if (!WEIR_CHECK_INT(elts[i], (int) i * 3)) {
            break;
        }
    }

    elt = weir_array_push_n(a, 50);
    WEIR_REQUIRE(elt != NULL);
    WEIR_CHECK_INT(a->nelts, 150);
    WEIR_CHECK(a->nalloc >= 150);
    weir_memzero(elt, 50 * sizeof(int));

    elts = a->elts;
    WEIR_CHECK_INT(elts[99], 297);
}


WEIR_UNIT_TEST(array_grow_in_place)
{
    int           *elt, *before;
    weir_uint_t    i;
    weir_array_t   a;
    weir_pool_t   *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    WEIR_REQUIRE(weir_array_init(&a, pool, 4, sizeof(int)) == WEIR_OK);

    before = a.elts;

    /* the array ends the pool's block: it extends without moving */
    for (i = 0; i < 8; i++) {
        elt = weir_array_push(&a);
        WEIR_REQUIRE(elt != NULL);
        *elt = (int) i;
    }

    WEIR_CHECK(a.elts == before);
    WEIR_CHECK_INT(a.nelts, 8);
    WEIR_CHECK_INT(((int *) a.elts)[7], 7);

    /* an array created empty still grows */
    WEIR_REQUIRE(weir_array_init(&a, pool, 0, sizeof(int)) == WEIR_OK);
    elt = weir_array_push(&a);
    WEIR_REQUIRE(elt != NULL);
    *elt = 5;
    WEIR_CHECK_INT(a.nelts, 1);
}


WEIR_UNIT_TEST(list_parts)
{
    int           *elt, *first, *data;
    weir_uint_t    i, n, parts;
    weir_list_t   *list;
    weir_list_part_t  *part;
    weir_pool_t   *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    list = weir_list_create(pool, 3, sizeof(int));
    WEIR_REQUIRE(list != NULL);

    first = NULL;

    for (i = 0; i < 10; i++) {
        elt = weir_list_push(list);
        WEIR_REQUIRE(elt != NULL);
        *elt = (int) i;

        if (i == 0) {
            first = elt;
        }
    }

    /* elements never move */
    WEIR_CHECK(first == list->part.elts);
    WEIR_CHECK_INT(*first, 0);

    /* the iteration the header describes */
    part = &list->part;
    data = part->elts;
    n = 0;
    parts = 1;

    for (i = 0; /* void */ ; i++) {
        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            data = part->elts;
            i = 0;
            parts++;
        }

        if (!WEIR_CHECK_INT(data[i], n)) {
            break;
        }

        n++;
    }

    WEIR_CHECK_INT(n, 10);
    WEIR_CHECK_INT(parts, 4);
    WEIR_CHECK_INT(list->last->nelts, 1);
}


WEIR_UNIT_TEST(list_lazy)
{
    int           *elt;
    weir_uint_t    i;
    weir_list_t    list;
    weir_pool_t   *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    weir_list_init_lazy(&list, pool, 2, sizeof(int));

    /* empty: nothing allocated, and iterating finds nothing */
    WEIR_CHECK(list.part.elts == NULL);
    WEIR_CHECK_INT(list.part.nelts, 0);
    WEIR_CHECK(list.part.next == NULL);

    for (i = 0; i < 5; i++) {
        elt = weir_list_push(&list);
        WEIR_REQUIRE(elt != NULL);
        *elt = (int) i;
    }

    WEIR_CHECK(list.part.elts != NULL);
    WEIR_CHECK_INT(list.part.nelts, 2);
    WEIR_CHECK_INT(((int *) list.part.elts)[1], 1);
    WEIR_REQUIRE(list.part.next != NULL);
    WEIR_CHECK_INT(((int *) list.part.next->elts)[0], 2);
    WEIR_CHECK_INT(list.last->nelts, 1);
}


WEIR_UNIT_TEST(queue_basics)
{
    weir_queue_t   head, *q;
    test_item_t    items[5];
    weir_uint_t    i;

    weir_queue_init(&head);
    WEIR_CHECK(weir_queue_empty(&head));

    for (i = 0; i < 5; i++) {
        items[i].key = (int) i;
        weir_queue_insert_tail(&head, &items[i].queue);
    }

    WEIR_CHECK(!weir_queue_empty(&head));
    WEIR_CHECK(weir_queue_head(&head) == &items[0].queue);
    WEIR_CHECK(weir_queue_last(&head) == &items[4].queue);

    /* the middle of an odd count is the centre one */
    q = weir_queue_middle(&head);
    WEIR_CHECK(weir_queue_data(q, test_item_t, queue) == &items[2]);

    weir_queue_remove(&items[2].queue);
    WEIR_CHECK(weir_queue_next(&items[1].queue) == &items[3].queue);
    WEIR_CHECK(weir_queue_prev(&items[3].queue) == &items[1].queue);

    weir_queue_insert_head(&head, &items[2].queue);
    WEIR_CHECK(weir_queue_head(&head) == &items[2].queue);

    i = 0;

    for (q = weir_queue_head(&head);
         q != weir_queue_sentinel(&head);
         q = weir_queue_next(q))
    {
        i++;
    }

    WEIR_CHECK_INT(i, 5);

    weir_queue_init(&head);
    weir_queue_insert_tail(&head, &items[0].queue);
    WEIR_CHECK(weir_queue_middle(&head) == &items[0].queue);
}


WEIR_UNIT_TEST(queue_sort_stable)
{
    int            last_key, last_seq;
    weir_uint_t    i;
    weir_queue_t   head, *q;
    test_item_t   *item;
    static test_item_t  items[200];

    static const int  keys[] = { 3, 1, 2, 1, 3, 2, 1, 0, 3, 0 };

    weir_queue_init(&head);

    for (i = 0; i < weir_nelems(items); i++) {
        items[i].key = keys[i % weir_nelems(keys)] + (int) (i % 7 == 0);
        items[i].seq = (int) i;
        weir_queue_insert_tail(&head, &items[i].queue);
    }

    weir_queue_sort(&head, item_cmp);

    last_key = -1;
    last_seq = -1;
    i = 0;

    for (q = weir_queue_head(&head);
         q != weir_queue_sentinel(&head);
         q = weir_queue_next(q))
    {
        item = weir_queue_data(q, test_item_t, queue);

        if (!WEIR_CHECK(item->key >= last_key)) {
            break;
        }

        /* equal keys keep their insertion order */
        if (item->key == last_key && !WEIR_CHECK(item->seq > last_seq)) {
            break;
        }

        WEIR_CHECK(weir_queue_prev(weir_queue_next(q)) == q);

        last_key = item->key;
        last_seq = item->seq;
        i++;
    }

    WEIR_CHECK_INT(i, weir_nelems(items));

    /* sorting an empty or a one-element queue is a no-op */
    weir_queue_init(&head);
    weir_queue_sort(&head, item_cmp);
    WEIR_CHECK(weir_queue_empty(&head));
}
