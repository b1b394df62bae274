#include "weir_config.h"
#include "weir_core.h"


weir_list_t *
weir_list_create(weir_pool_t *pool, weir_uint_t n, size_t size)
{
    weir_list_t  *list;

    list = weir_palloc(pool, sizeof(weir_list_t));
    if (list == NULL) {
        return NULL;
    }

    if (weir_list_init(list, pool, n, size) != WEIR_OK) {
        return NULL;
    }

    return list;
}


void *
weir_list_push(weir_list_t *l)
{
    void              *elt;
    weir_list_part_t  *last;

    last = l->last;

    if (last->elts == NULL) {
        /* weir_list_init_lazy: the first part */
        last->elts = weir_palloc(l->pool, l->nalloc * l->size);
        if (last->elts == NULL) {
            return NULL;
        }

    } else if (last->nelts == l->nalloc) {

        last = weir_palloc(l->pool, sizeof(weir_list_part_t));
        if (last == NULL) {
            return NULL;
        }

        last->elts = weir_palloc(l->pool, l->nalloc * l->size);
        if (last->elts == NULL) {
            return NULL;
        }

        last->nelts = 0;
        last->next = NULL;

        l->last->next = last;
        l->last = last;
    }

    elt = (char *) last->elts + l->size * last->nelts;
    last->nelts++;

    return elt;
}
