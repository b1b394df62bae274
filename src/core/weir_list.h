#ifndef _WEIR_LIST_H_INCLUDED_
#define _WEIR_LIST_H_INCLUDED_

/* A list of fixed-size arrays ("parts"): elements never move, so pointers
 * to them stay valid while the list grows. */

typedef struct weir_list_part_s  weir_list_part_t;

struct weir_list_part_s {
    void              *elts;
    weir_uint_t        nelts;
    weir_list_part_t  *next;
};

typedef struct {
    weir_list_part_t  *last;
    weir_list_part_t   part;
    size_t             size;
    weir_uint_t        nalloc;
    weir_pool_t       *pool;
} weir_list_t;

weir_list_t *weir_list_create(weir_pool_t *pool, weir_uint_t n, size_t size);
void *weir_list_push(weir_list_t *list);

static weir_inline weir_int_t
weir_list_init(weir_list_t *list, weir_pool_t *pool, weir_uint_t n,
    size_t size)
{
    list->part.elts = weir_palloc(pool, n * size);
    if (list->part.elts == NULL) {
        return WEIR_ERROR;
    }

    list->part.nelts = 0;
    list->part.next = NULL;
    list->last = &list->part;
    list->size = size;
    list->nalloc = n;
    list->pool = pool;

    return WEIR_OK;
}

/* the same, but the first part is allocated by the first push: for the
 * lists that are nearly always empty (trailers); part.elts stays NULL
 * until then, with part.nelts 0 */
static weir_inline void
weir_list_init_lazy(weir_list_t *list, weir_pool_t *pool, weir_uint_t n,
    size_t size)
{
    list->part.elts = NULL;
    list->part.nelts = 0;
    list->part.next = NULL;
    list->last = &list->part;
    list->size = size;
    list->nalloc = n;
    list->pool = pool;
}

/*
 * Iterate:
 *
 *   part = &list.part; data = part->elts;
 *   for (i = 0 ;; i++) {
 *       if (i >= part->nelts) {
 *           if (part->next == NULL) break;
 *           part = part->next; data = part->elts; i = 0;
 *       }
 *       ... data[i] ...
 *   }
 */

#endif /* _WEIR_LIST_H_INCLUDED_ */
