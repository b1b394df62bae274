#ifndef _WEIR_SLAB_H_INCLUDED_
#define _WEIR_SLAB_H_INCLUDED_

/*
 * A slab allocator over one shared memory zone: pages of the zone are
 * handed out whole for large requests and split into power-of-two slots
 * for small ones. The _locked variants expect the caller to hold
 * pool->mutex; the others take it.
 */

typedef struct weir_slab_page_s  weir_slab_page_t;

struct weir_slab_page_s {
    uintptr_t           slab;
    weir_slab_page_t   *next;
    uintptr_t           prev;
};

typedef struct {
    weir_uint_t         total;
    weir_uint_t         used;
    weir_uint_t         reqs;
    weir_uint_t         fails;
} weir_slab_stat_t;

typedef struct {
    weir_shmtx_sh_t     lock;

    size_t              min_size;
    size_t              min_shift;

    weir_slab_page_t   *pages;
    weir_slab_page_t   *last;
    weir_slab_page_t    free;

    weir_slab_stat_t   *stats;
    weir_uint_t         pfree;

    unsigned char      *start;
    unsigned char      *end;

    weir_shmtx_t        mutex;

    /* the zone's name in messages ("... in zone \"%s\""), NUL-terminated;
     * set before weir_slab_init it is copied into the zone (so it
     * outlives the cycle that named it), else it is "" (&zero) */
    unsigned char      *log_ctx;
    unsigned char       zero;

    unsigned            log_nomem:1;

    void               *data;
    void               *addr;
} weir_slab_pool_t;

/* page geometry from weir_pagesize; weir_slab_init calls it if needed */
void weir_slab_sizes_init(void);
/* the caller sets addr, end and min_shift; log_ctx must be NULL (as in a
 * fresh anonymous mapping) or point to the zone's name */
void weir_slab_init(weir_slab_pool_t *pool);
/* what a zone of size bytes holds: its pages for allocations (the zone
 * starting on a page boundary, slots from 1 << min_shift, 0: default),
 * the smallest size that holds pages pages, and the most pages one
 * allocation of size bytes takes; for checking a configuration before
 * its zones exist */
weir_uint_t weir_slab_zone_pages(size_t size, weir_uint_t min_shift);
size_t weir_slab_zone_size(weir_uint_t pages, weir_uint_t min_shift);
weir_uint_t weir_slab_alloc_pages_max(size_t size);
void *weir_slab_alloc(weir_slab_pool_t *pool, size_t size);
void *weir_slab_alloc_locked(weir_slab_pool_t *pool, size_t size);
void *weir_slab_calloc(weir_slab_pool_t *pool, size_t size);
void *weir_slab_calloc_locked(weir_slab_pool_t *pool, size_t size);
void weir_slab_free(weir_slab_pool_t *pool, void *p);
void weir_slab_free_locked(weir_slab_pool_t *pool, void *p);

#endif /* _WEIR_SLAB_H_INCLUDED_ */
