#include "weir_config.h"
#include "weir_core.h"


weir_array_t *
weir_array_create(weir_pool_t *p, weir_uint_t n, size_t size)
{
    weir_array_t  *a;

    a = weir_palloc(p, sizeof(weir_array_t));
    if (a == NULL) {
        return NULL;
    }

    if (weir_array_init(a, p, n, size) != WEIR_OK) {
        return NULL;
    }

    return a;
}


void
weir_array_destroy(weir_array_t *a)
{
    weir_pool_t  *p;

    p = a->pool;

    /* give the memory back only when it is the pool's last allocation */

    if ((unsigned char *) a->elts + a->size * a->nalloc == p->d.last) {
        p->d.last -= a->size * a->nalloc;
    }

    if ((unsigned char *) a + sizeof(weir_array_t) == p->d.last) {
        p->d.last = (unsigned char *) a;
    }
}


static weir_int_t
weir_array_grow(weir_array_t *a, weir_uint_t n)
{
    void         *new;
    size_t        size;
    weir_uint_t   nalloc;
    weir_pool_t  *p;

    p = a->pool;
    size = a->size * a->nalloc;

    /* extend in place when the array ends the pool's current block */

    if ((unsigned char *) a->elts + size == p->d.last
        && p->d.last + a->size * n <= p->d.end)
    {
        p->d.last += a->size * n;
        a->nalloc += n;
        return WEIR_OK;
    }

    nalloc = 2 * ((n >= a->nalloc) ? n : a->nalloc);

    new = weir_palloc(p, nalloc * a->size);
    if (new == NULL) {
        return WEIR_ERROR;
    }

    weir_memcpy(new, a->elts, size);
    a->elts = new;
    a->nalloc = nalloc;

    return WEIR_OK;
}


void *
weir_array_push(weir_array_t *a)
{
    void  *elt;

    if (a->nelts == a->nalloc) {
        if (weir_array_grow(a, a->nalloc ? 1 : 4) != WEIR_OK) {
            return NULL;
        }
    }

    elt = (unsigned char *) a->elts + a->size * a->nelts;
    a->nelts++;

    return elt;
}


void *
weir_array_push_n(weir_array_t *a, weir_uint_t n)
{
    void  *elt;

    if (a->nelts + n > a->nalloc) {
        if (weir_array_grow(a, n) != WEIR_OK) {
            return NULL;
        }
    }

    elt = (unsigned char *) a->elts + a->size * a->nelts;
    a->nelts += n;

    return elt;
}
