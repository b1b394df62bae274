#include "weir_config.h"
#include "weir_core.h"


static void *weir_palloc_small(weir_pool_t *pool, size_t size,
    weir_uint_t align);
static void *weir_palloc_block(weir_pool_t *pool, size_t size);
static void *weir_palloc_large(weir_pool_t *pool, size_t size);
static void *weir_pool_track_large(weir_pool_t *pool, void *p);
static void *weir_pool_block_get(size_t size, weir_log_t *log);
static void weir_pool_block_put(weir_pool_t *block);


/*
 * Freed pool blocks of WEIR_POOL_CACHE_BLOCK bytes (the default
 * request_pool_size, and so every block of a request's pool) wait here
 * for the next pool instead of going back to malloc: a proxied request
 * creates a pool and a second block and frees both, and taking them from
 * this stack is a few instructions where posix_memalign() and free()
 * are a few hundred. At most WEIR_POOL_CACHE_MAX blocks (256 KiB) stay;
 * more go back to malloc. Per process (a worker is single-threaded). The
 * pointers live outside the blocks, so under AddressSanitizer a cached
 * block is poisoned whole and a use after the pool's destruction is still
 * caught.
 */
#define WEIR_POOL_CACHE_BLOCK  4096
#define WEIR_POOL_CACHE_MAX    64

static void        *weir_pool_cache[WEIR_POOL_CACHE_MAX];
static weir_uint_t  weir_pool_cache_n;

#if defined(__SANITIZE_ADDRESS__)
#define WEIR_POOL_ASAN  1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WEIR_POOL_ASAN  1
#endif
#endif

#if (WEIR_POOL_ASAN)
#include <sanitizer/asan_interface.h>
#define weir_pool_poison(p, n)    ASAN_POISON_MEMORY_REGION(p, n)
#define weir_pool_unpoison(p, n)  ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define weir_pool_poison(p, n)
#define weir_pool_unpoison(p, n)
#endif


void *
weir_alloc(size_t size, weir_log_t *log)
{
    void  *p;

    p = malloc(size);
    if (p == NULL) {
        weir_log_error(WEIR_LOG_EMERG, log, weir_errno,
                       "malloc(%zu) failed", size);
    }

    return p;
}


void *
weir_calloc(size_t size, weir_log_t *log)
{
    void  *p;

    p = weir_alloc(size, log);

    if (p) {
        weir_memzero(p, size);
    }

    return p;
}


static void *
weir_memalign(size_t alignment, size_t size, weir_log_t *log)
{
    void  *p;
    int    err;

    err = posix_memalign(&p, alignment, size);

    if (err) {
        weir_log_error(WEIR_LOG_EMERG, log, err,
                       "posix_memalign(%zu, %zu) failed", alignment, size);
        p = NULL;
    }

    return p;
}


weir_pool_t *
weir_create_pool(size_t size, weir_log_t *log)
{
    weir_pool_t  *p;

    if (size < WEIR_MIN_POOL_SIZE) {
        size = WEIR_MIN_POOL_SIZE;
    }

    p = weir_pool_block_get(size, log);
    if (p == NULL) {
        return NULL;
    }

    p->d.last = (unsigned char *) p + sizeof(weir_pool_t);
    p->d.end = (unsigned char *) p + size;
    p->d.next = NULL;
    p->d.failed = 0;

    size = size - sizeof(weir_pool_t);
    p->max = (size < WEIR_MAX_ALLOC_FROM_POOL) ? size
                                               : WEIR_MAX_ALLOC_FROM_POOL;

    p->current = p;
    p->large = NULL;
    p->cleanup = NULL;
    p->log = log;

    return p;
}


void
weir_destroy_pool(weir_pool_t *pool)
{
    weir_pool_t          *p, *n;
    weir_pool_large_t    *l;
    weir_pool_cleanup_t  *c;

    for (c = pool->cleanup; c; c = c->next) {
        if (c->handler) {
            c->handler(c->data);
        }
    }

    for (l = pool->large; l; l = l->next) {
        if (l->alloc) {
            weir_free(l->alloc);
        }
    }

    for (p = pool, n = pool->d.next; /* void */; p = n, n = n->d.next) {
        weir_pool_block_put(p);

        if (n == NULL) {
            break;
        }
    }
}


void
weir_reset_pool(weir_pool_t *pool)
{
    weir_pool_t        *p;
    weir_pool_large_t  *l;

    for (l = pool->large; l; l = l->next) {
        if (l->alloc) {
            weir_free(l->alloc);
        }
    }

    for (p = pool; p; p = p->d.next) {
        p->d.last = (unsigned char *) p + sizeof(weir_pool_t);
        p->d.failed = 0;
    }

    pool->d.last = (unsigned char *) pool + sizeof(weir_pool_t);
    pool->current = pool;
    pool->large = NULL;
}


void *
weir_palloc(weir_pool_t *pool, size_t size)
{
    if (size <= pool->max) {
        return weir_palloc_small(pool, size, 1);
    }

    return weir_palloc_large(pool, size);
}


void *
weir_pnalloc(weir_pool_t *pool, size_t size)
{
    if (size <= pool->max) {
        return weir_palloc_small(pool, size, 0);
    }

    return weir_palloc_large(pool, size);
}


void *
weir_pcalloc(weir_pool_t *pool, size_t size)
{
    void  *p;

    p = weir_palloc(pool, size);
    if (p) {
        weir_memzero(p, size);
    }

    return p;
}


static weir_inline void *
weir_palloc_small(weir_pool_t *pool, size_t size, weir_uint_t align)
{
    unsigned char  *m;
    weir_pool_t    *p;

    p = pool->current;

    do {
        m = p->d.last;

        if (align) {
            m = weir_align_ptr(m, WEIR_ALIGNMENT);
        }

        if (m <= p->d.end && (size_t) (p->d.end - m) >= size) {
            p->d.last = m + size;
            return m;
        }

        p = p->d.next;

    } while (p);

    return weir_palloc_block(pool, size);
}


static void *
weir_palloc_block(weir_pool_t *pool, size_t size)
{
    unsigned char  *m;
    size_t          psize;
    weir_pool_t    *p, *new;

    psize = (size_t) (pool->d.end - (unsigned char *) pool);

    m = weir_pool_block_get(psize, pool->log);
    if (m == NULL) {
        return NULL;
    }

    new = (weir_pool_t *) m;

    new->d.end = m + psize;
    new->d.next = NULL;
    new->d.failed = 0;

    m += sizeof(weir_pool_data_t);
    m = weir_align_ptr(m, WEIR_ALIGNMENT);
    new->d.last = m + size;

    /* a block that failed to satisfy four requests stops being searched */
    for (p = pool->current; p->d.next; p = p->d.next) {
        if (p->d.failed++ > 4) {
            pool->current = p->d.next;
        }
    }

    p->d.next = new;

    return m;
}


static void *
weir_pool_block_get(size_t size, weir_log_t *log)
{
    void  *p;

    if (size == WEIR_POOL_CACHE_BLOCK && weir_pool_cache_n) {
        p = weir_pool_cache[--weir_pool_cache_n];
        weir_pool_unpoison(p, WEIR_POOL_CACHE_BLOCK);
        return p;
    }

    return weir_memalign(WEIR_POOL_ALIGNMENT, size, log);
}


static void
weir_pool_block_put(weir_pool_t *block)
{
    if (block->d.end - (unsigned char *) block == WEIR_POOL_CACHE_BLOCK
        && weir_pool_cache_n < WEIR_POOL_CACHE_MAX)
    {
        weir_pool_poison(block, WEIR_POOL_CACHE_BLOCK);
        weir_pool_cache[weir_pool_cache_n++] = block;
        return;
    }

    weir_free(block);
}


weir_uint_t
weir_pool_cached_blocks(void)
{
    return weir_pool_cache_n;
}


static void *
weir_palloc_large(weir_pool_t *pool, size_t size)
{
    void  *p;

    p = weir_alloc(size, pool->log);
    if (p == NULL) {
        return NULL;
    }

    return weir_pool_track_large(pool, p);
}


void *
weir_pmemalign(weir_pool_t *pool, size_t size, size_t alignment)
{
    void  *p;

    p = weir_memalign(alignment, size, pool->log);
    if (p == NULL) {
        return NULL;
    }

    return weir_pool_track_large(pool, p);
}


/*
 * Puts p on the pool's large list (freed with the pool), reusing a slot
 * weir_pfree() emptied among the first few: a keep-alive connection
 * takes and frees a buffer this way once per request, and a new slot
 * each time would grow its pool without bound. Frees p and returns NULL
 * when no slot can be had.
 */

static void *
weir_pool_track_large(weir_pool_t *pool, void *p)
{
    weir_uint_t         n;
    weir_pool_large_t  *large;

    n = 0;

    for (large = pool->large; large; large = large->next) {
        if (large->alloc == NULL) {
            large->alloc = p;
            return p;
        }

        if (n++ > 3) {
            break;
        }
    }

    large = weir_palloc_small(pool, sizeof(weir_pool_large_t), 1);
    if (large == NULL) {
        weir_free(p);
        return NULL;
    }

    large->alloc = p;
    large->next = pool->large;
    pool->large = large;

    return p;
}


weir_int_t
weir_pfree(weir_pool_t *pool, void *p)
{
    weir_pool_large_t  *l;

    for (l = pool->large; l; l = l->next) {
        if (p == l->alloc) {
            weir_free(l->alloc);
            l->alloc = NULL;

            return WEIR_OK;
        }
    }

    return WEIR_DECLINED;
}


weir_pool_cleanup_t *
weir_pool_cleanup_add(weir_pool_t *p, size_t size)
{
    weir_pool_cleanup_t  *c;

    c = weir_palloc(p, sizeof(weir_pool_cleanup_t));
    if (c == NULL) {
        return NULL;
    }

    if (size) {
        c->data = weir_palloc(p, size);
        if (c->data == NULL) {
            return NULL;
        }

    } else {
        c->data = NULL;
    }

    c->handler = NULL;
    c->next = p->cleanup;

    p->cleanup = c;

    return c;
}


void
weir_pool_cleanup_file(void *data)
{
    weir_pool_cleanup_file_t  *c = data;

    if (c->fd != WEIR_INVALID_FILE && close(c->fd) == -1) {
        weir_log_error(WEIR_LOG_ALERT, c->log, weir_errno,
                       "close() \"%s\" failed", c->name);
    }
}
