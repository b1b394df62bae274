#ifndef _WEIR_PALLOC_H_INCLUDED_
#define _WEIR_PALLOC_H_INCLUDED_

/*
 * Memory pools: one per lifetime (cycle, connection, request, temporary).
 * Small allocations are carved from pool blocks and freed only with the
 * pool; allocations above the block's limit go to the "large" list and
 * may be released early with weir_pfree(). Cleanup handlers run in reverse
 * order of registration when the pool is destroyed.
 */

#define WEIR_MAX_ALLOC_FROM_POOL   (4096 - 1)
#define WEIR_DEFAULT_POOL_SIZE     (16 * 1024)
#define WEIR_POOL_ALIGNMENT        16
#define WEIR_MIN_POOL_SIZE                                                    \
    weir_align((sizeof(weir_pool_t) + 2 * sizeof(weir_pool_large_t)),        \
               WEIR_POOL_ALIGNMENT)

typedef void (*weir_pool_cleanup_pt)(void *data);

typedef struct weir_pool_cleanup_s  weir_pool_cleanup_t;

struct weir_pool_cleanup_s {
    weir_pool_cleanup_pt   handler;
    void                  *data;
    weir_pool_cleanup_t   *next;
};

typedef struct weir_pool_large_s  weir_pool_large_t;

struct weir_pool_large_s {
    weir_pool_large_t     *next;
    void                  *alloc;
};

typedef struct {
    unsigned char         *last;
    unsigned char         *end;
    weir_pool_t           *next;
    weir_uint_t            failed;
} weir_pool_data_t;

struct weir_pool_s {
    weir_pool_data_t       d;
    size_t                 max;
    weir_pool_t           *current;
    weir_pool_large_t     *large;
    weir_pool_cleanup_t   *cleanup;
    weir_log_t            *log;
};

void *weir_alloc(size_t size, weir_log_t *log);
void *weir_calloc(size_t size, weir_log_t *log);
#define weir_free  free

weir_pool_t *weir_create_pool(size_t size, weir_log_t *log);
void weir_destroy_pool(weir_pool_t *pool);
/* freed request-sized blocks kept for the next pool (see weir_palloc.c) */
weir_uint_t weir_pool_cached_blocks(void);

/* frees the large allocations and rewinds the blocks for reuse */
void weir_reset_pool(weir_pool_t *pool);

void *weir_palloc(weir_pool_t *pool, size_t size);     /* aligned */
void *weir_pnalloc(weir_pool_t *pool, size_t size);    /* unaligned */
void *weir_pcalloc(weir_pool_t *pool, size_t size);    /* aligned, zeroed */
void *weir_pmemalign(weir_pool_t *pool, size_t size, size_t alignment);
weir_int_t weir_pfree(weir_pool_t *pool, void *p);

/* size: bytes of data to allocate for the cleanup (0 for none) */
weir_pool_cleanup_t *weir_pool_cleanup_add(weir_pool_t *p, size_t size);

typedef struct {
    weir_fd_t              fd;
    unsigned char         *name;
    weir_log_t            *log;
} weir_pool_cleanup_file_t;

void weir_pool_cleanup_file(void *data);

#endif /* _WEIR_PALLOC_H_INCLUDED_ */
