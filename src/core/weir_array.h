#ifndef _WEIR_ARRAY_H_INCLUDED_
#define _WEIR_ARRAY_H_INCLUDED_

/* A growable array in pool memory. Growing may move the elements: never
 * keep pointers into an array that is still being appended to. */

typedef struct {
    void         *elts;
    weir_uint_t   nelts;
    size_t        size;
    weir_uint_t   nalloc;
    weir_pool_t  *pool;
} weir_array_t;

weir_array_t *weir_array_create(weir_pool_t *p, weir_uint_t n, size_t size);
void weir_array_destroy(weir_array_t *a);
void *weir_array_push(weir_array_t *a);
void *weir_array_push_n(weir_array_t *a, weir_uint_t n);

static weir_inline weir_int_t
weir_array_init(weir_array_t *array, weir_pool_t *pool, weir_uint_t n,
    size_t size)
{
    array->nelts = 0;
    array->size = size;
    array->nalloc = n;
    array->pool = pool;

    array->elts = weir_palloc(pool, n * size);
    if (array->elts == NULL) {
        return WEIR_ERROR;
    }

    return WEIR_OK;
}

#endif /* _WEIR_ARRAY_H_INCLUDED_ */
