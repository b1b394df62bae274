#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_http.h"
#include "weir_http_v2.h"


/*
 * nghttp2's allocator (nghttp2_mem) for every session of the worker.
 *
 * A session allocates about five small blocks per stream (the stream,
 * its outbound items, the copy of the response's header list, decoded
 * header names and values) and frees them when the stream closes: with
 * malloc() and free() that was ~1,100 instructions per request on a tiny
 * proxied GET. Here blocks of up to WEIR_H2_MEM_MAX bytes, rounded up to
 * a multiple of WEIR_H2_MEM_STEP, go back to a free list of their size
 * and are taken from it again: a few instructions each. Larger blocks
 * (the session's 16 KiB frame buffer, HPACK tables) go to malloc.
 *
 * Each block has a header in front (its usable size, and the free-list
 * link while it is free), so free() needs no size and the free lists
 * never write into the blocks themselves: under AddressSanitizer a free
 * block is poisoned whole and a use after nghttp2 freed it is caught as
 * before. At most WEIR_H2_MEM_CACHE bytes wait in the lists; blocks
 * beyond that go back to malloc. Per process: a worker is one thread.
 */

#define WEIR_H2_MEM_STEP     32
#define WEIR_H2_MEM_MAX      512
#define WEIR_H2_MEM_CLASSES  (WEIR_H2_MEM_MAX / WEIR_H2_MEM_STEP)
#define WEIR_H2_MEM_CACHE    (1024 * 1024)


typedef union weir_h2_mem_hdr_u  weir_h2_mem_hdr_t;

union weir_h2_mem_hdr_u {
    struct {
        size_t              size;
        weir_h2_mem_hdr_t  *next;
    } b;
    max_align_t             align;
};


#if defined(__SANITIZE_ADDRESS__)
#define WEIR_H2_MEM_ASAN  1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WEIR_H2_MEM_ASAN  1
#endif
#endif

#if (WEIR_H2_MEM_ASAN)
#include <sanitizer/asan_interface.h>
#define weir_h2_mem_poison(p, n)    ASAN_POISON_MEMORY_REGION(p, n)
#define weir_h2_mem_unpoison(p, n)  ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define weir_h2_mem_poison(p, n)
#define weir_h2_mem_unpoison(p, n)
#endif


static void *weir_http_v2_mem_malloc(size_t size, void *data);
static void weir_http_v2_mem_free(void *ptr, void *data);
static void *weir_http_v2_mem_calloc(size_t nmemb, size_t size, void *data);
static void *weir_http_v2_mem_realloc(void *ptr, size_t size, void *data);


static weir_h2_mem_hdr_t  *weir_h2_mem_free_list[WEIR_H2_MEM_CLASSES];
static size_t              weir_h2_mem_cached;

static nghttp2_mem  weir_h2_mem = {
    NULL,
    weir_http_v2_mem_malloc,
    weir_http_v2_mem_free,
    weir_http_v2_mem_calloc,
    weir_http_v2_mem_realloc
};


nghttp2_mem *
weir_http_v2_mem(void)
{
    return &weir_h2_mem;
}


static void *
weir_http_v2_mem_malloc(size_t size, void *data)
{
    size_t              cls;
    weir_h2_mem_hdr_t  *h;

    (void) data;

    if (size <= WEIR_H2_MEM_MAX) {
        cls = (size + WEIR_H2_MEM_STEP - 1) / WEIR_H2_MEM_STEP;
        cls = cls ? cls - 1 : 0;
        size = (cls + 1) * WEIR_H2_MEM_STEP;

        h = weir_h2_mem_free_list[cls];

        if (h) {
            weir_h2_mem_free_list[cls] = h->b.next;
            weir_h2_mem_cached -= size;
            weir_h2_mem_unpoison(h + 1, size);
            return h + 1;
        }
    }

    if (size > (size_t) -1 - sizeof(weir_h2_mem_hdr_t)) {
        return NULL;
    }

    h = malloc(sizeof(weir_h2_mem_hdr_t) + size);
    if (h == NULL) {
        return NULL;
    }

    h->b.size = size;
    h->b.next = NULL;

    return h + 1;
}


static void
weir_http_v2_mem_free(void *ptr, void *data)
{
    size_t              cls;
    weir_h2_mem_hdr_t  *h;

    (void) data;

    if (ptr == NULL) {
        return;
    }

    h = (weir_h2_mem_hdr_t *) ptr - 1;

    if (h->b.size <= WEIR_H2_MEM_MAX
        && weir_h2_mem_cached + h->b.size <= WEIR_H2_MEM_CACHE)
    {
        cls = h->b.size / WEIR_H2_MEM_STEP - 1;
        h->b.next = weir_h2_mem_free_list[cls];
        weir_h2_mem_free_list[cls] = h;
        weir_h2_mem_cached += h->b.size;
        weir_h2_mem_poison(ptr, h->b.size);
        return;
    }

    free(h);
}


static void *
weir_http_v2_mem_calloc(size_t nmemb, size_t size, void *data)
{
    void  *p;

    if (size && nmemb > (size_t) -1 / size) {
        return NULL;
    }

    p = weir_http_v2_mem_malloc(nmemb * size, data);
    if (p) {
        weir_memzero(p, nmemb * size);
    }

    return p;
}


static void *
weir_http_v2_mem_realloc(void *ptr, size_t size, void *data)
{
    void               *p;
    weir_h2_mem_hdr_t  *h;

    if (ptr == NULL) {
        return weir_http_v2_mem_malloc(size, data);
    }

    if (size == 0) {
        weir_http_v2_mem_free(ptr, data);
        return NULL;
    }

    h = (weir_h2_mem_hdr_t *) ptr - 1;

    if (size <= h->b.size) {
        return ptr;
    }

    p = weir_http_v2_mem_malloc(size, data);
    if (p == NULL) {
        return NULL;
    }

    weir_memcpy(p, ptr, h->b.size);
    weir_http_v2_mem_free(ptr, data);

    return p;
}
