#include "weir_config.h"
#include "weir_core.h"


/*
 * Layout of a zone:
 *
 *   weir_slab_pool_t | slot list heads | stats | page descriptors | pages
 *
 * One list head and one weir_slab_stat_t per slot size (min_size, twice
 * that, ... up to half a page); one descriptor per page. Pages start at
 * an address aligned to the page size, so every slot is aligned to its
 * own size.
 *
 * The low two bits of a descriptor's prev say what its page is (the
 * descriptors are word aligned, so a pointer never uses them):
 *
 *   FREE   part of a run of free pages. The first page of a run holds
 *          the run's length in slab and is linked in pool->free; the
 *          last page of a longer run points back to the first with prev,
 *          so that freeing the pages that follow a run finds its start.
 *          Other pages of a run are zero.
 *   PAGES  part of a run handed out whole: slab is the run's length on
 *          its first page, 0 on the others.
 *   SMALL  split into slots smaller than page/HALF; a bitmap of the slots
 *          takes the first slots of the page itself. slab holds the shift
 *          of the slot size in its low half and the number of slots in
 *          use (the bitmap's own included) in its high half.
 *   MID    split into slots of page/HALF or more: at most HALF of them,
 *          so the bitmap fits in the high half of slab, the shift in the
 *          low half.
 *
 * A slot page is linked in the list of its size while it has a free slot;
 * it goes back to the free pages as soon as its last slot is freed.
 */


#define WEIR_SLAB_FREE         0
#define WEIR_SLAB_PAGES        1
#define WEIR_SLAB_SMALL        2
#define WEIR_SLAB_MID          3

#define WEIR_SLAB_TYPE_MASK    (uintptr_t) 3

#define WEIR_SLAB_WORD_BITS    (8 * sizeof(uintptr_t))
#define WEIR_SLAB_HALF         (WEIR_SLAB_WORD_BITS / 2)
#define WEIR_SLAB_LOW_MASK     (((uintptr_t) 1 << WEIR_SLAB_HALF) - 1)

#define WEIR_SLAB_DEFAULT_MIN_SHIFT  3

#define weir_slab_type(page)   ((page)->prev & WEIR_SLAB_TYPE_MASK)
#define weir_slab_link(page)                                                  \
    ((weir_slab_page_t *) ((page)->prev & ~WEIR_SLAB_TYPE_MASK))
#define weir_slab_shift(page)                                                 \
    ((weir_uint_t) ((page)->slab & WEIR_SLAB_LOW_MASK))
#define weir_slab_high(page)   ((page)->slab >> WEIR_SLAB_HALF)

#define weir_slab_slots(pool)                                                 \
    ((weir_slab_page_t *) ((unsigned char *) (pool)                          \
                           + sizeof(weir_slab_pool_t)))


static weir_slab_page_t *weir_slab_alloc_pages(weir_slab_pool_t *pool,
    weir_uint_t pages);
static void weir_slab_free_pages(weir_slab_pool_t *pool,
    weir_slab_page_t *page, weir_uint_t pages);
static void *weir_slab_alloc_slot(weir_slab_pool_t *pool, weir_uint_t shift);
static void weir_slab_init_slot_page(weir_slab_pool_t *pool,
    weir_slab_page_t *page, weir_uint_t shift);
static void *weir_slab_take_slot(weir_slab_pool_t *pool,
    weir_slab_page_t *page);
static void weir_slab_free_slot(weir_slab_pool_t *pool,
    weir_slab_page_t *page, unsigned char *p);
static weir_uint_t weir_slab_usable(weir_uint_t shift);
static void weir_slab_insert(weir_slab_page_t *head, weir_slab_page_t *page,
    uintptr_t type);
static void weir_slab_remove(weir_slab_page_t *page);
static unsigned char *weir_slab_page_addr(weir_slab_pool_t *pool,
    weir_slab_page_t *page);
static void weir_slab_set_name(weir_slab_pool_t *pool);
static size_t weir_slab_zone_head(weir_uint_t min_shift);
static weir_log_t *weir_slab_log(void);
static void weir_slab_error(weir_slab_pool_t *pool, weir_uint_t level,
    const char *text);


static weir_uint_t  weir_slab_page_size;
static weir_uint_t  weir_slab_page_shift;
/* the largest slot: larger requests take whole pages */
static weir_uint_t  weir_slab_max_size;
/* the smallest slot size whose bitmap fits in a descriptor */
static weir_uint_t  weir_slab_mid_size;


/*
 * Derives the page geometry from weir_pagesize (4096 when it is not known
 * yet). weir_slab_init calls it when nobody did; call it again only before
 * any zone is initialised.
 */

void
weir_slab_sizes_init(void)
{
    weir_uint_t  n;

    weir_slab_page_size = weir_pagesize ? weir_pagesize : 4096;

    for (n = weir_slab_page_size, weir_slab_page_shift = 0;
         n > 1;
         n >>= 1)
    {
        weir_slab_page_shift++;
    }

    weir_slab_max_size = weir_slab_page_size / 2;
    weir_slab_mid_size = weir_slab_page_size / WEIR_SLAB_HALF;
}


/*
 * The caller sets addr, end and min_shift (0 means 3). log_ctx is NULL (a
 * fresh anonymous mapping has it so) or points to a NUL-terminated zone
 * name, which is copied into the zone, so that messages about the zone
 * stay valid after the configuration that named it is gone. A zone user
 * may later point log_ctx at a string kept in the zone itself.
 */

void
weir_slab_init(weir_slab_pool_t *pool)
{
    size_t              size;
    weir_uint_t         i, n, classes;
    unsigned char      *p, *start;
    weir_slab_page_t   *slots;

    if (weir_slab_page_shift == 0) {
        weir_slab_sizes_init();
    }

    if (pool->min_shift == 0) {
        pool->min_shift = WEIR_SLAB_DEFAULT_MIN_SHIFT;
    }

    if (pool->min_shift >= weir_slab_page_shift) {
        pool->min_shift = weir_slab_page_shift - 1;
    }

    pool->min_size = (size_t) 1 << pool->min_shift;

    pool->zero = '\0';
    pool->log_nomem = 1;

    /* NULL log: the lock outlives the cycle that creates it */
    (void) weir_shmtx_create(&pool->mutex, &pool->lock, NULL);

    pool->free.slab = 0;
    pool->free.next = &pool->free;
    pool->free.prev = (uintptr_t) &pool->free;

    classes = weir_slab_page_shift - pool->min_shift;

    slots = weir_slab_slots(pool);

    if ((unsigned char *) (slots + classes) + classes
        * sizeof(weir_slab_stat_t) > pool->end)
    {
        /* no room even for the lists: every allocation will fail */
        pool->stats = NULL;
        pool->pages = &pool->free;
        pool->last = &pool->free;
        pool->start = pool->end;
        pool->pfree = 0;
        pool->log_ctx = &pool->zero;

        weir_log_error(WEIR_LOG_ALERT, weir_slab_log(), 0,
                       "shared memory zone of %zu bytes is too small",
                       (size_t) (pool->end - (unsigned char *) pool));
        return;
    }

    for (i = 0; i < classes; i++) {
        slots[i].slab = 0;
        slots[i].next = &slots[i];
        slots[i].prev = (uintptr_t) &slots[i];
    }

    p = (unsigned char *) (slots + classes);

    pool->stats = (weir_slab_stat_t *) p;
    weir_memzero(pool->stats, classes * sizeof(weir_slab_stat_t));

    p += classes * sizeof(weir_slab_stat_t);

    pool->pages = (weir_slab_page_t *) p;

    size = p < pool->end ? (size_t) (pool->end - p) : 0;
    n = size / (weir_slab_page_size + sizeof(weir_slab_page_t));

    /* the alignment of the first page may cost a page */

    for ( ;; ) {
        start = weir_align_ptr(p + n * sizeof(weir_slab_page_t),
                               weir_slab_page_size);

        if (n == 0 || start + n * weir_slab_page_size <= pool->end) {
            break;
        }

        n--;
    }

    weir_memzero(pool->pages, n * sizeof(weir_slab_page_t));

    pool->start = start;
    pool->last = pool->pages + n;
    pool->pfree = n;

    if (n) {
        pool->pages[0].slab = n;
        weir_slab_insert(&pool->free, &pool->pages[0], WEIR_SLAB_FREE);

        if (n > 1) {
            pool->pages[n - 1].prev = (uintptr_t) &pool->pages[0]
                                      | WEIR_SLAB_FREE;
        }
    }

    weir_slab_set_name(pool);
}



/*
 * The pages weir_slab_init gives a zone of size bytes that starts on a
 * page boundary (as a mapping does), with slots from 1 << min_shift (0:
 * the default): the same arithmetic as weir_slab_init, so that a
 * configuration can be checked against its zone before the zone exists
 * (weir -t maps none). tests/unit/test_slab.c holds the two together.
 */

weir_uint_t
weir_slab_zone_pages(size_t size, weir_uint_t min_shift)
{
    size_t       head, start;
    weir_uint_t  n;

    head = weir_slab_zone_head(min_shift);

    if (head >= size) {
        return 0;
    }

    n = (size - head) / (weir_slab_page_size + sizeof(weir_slab_page_t));

    for ( ;; ) {
        start = weir_align(head + n * sizeof(weir_slab_page_t),
                           (size_t) weir_slab_page_size);

        if (n == 0 || start + n * weir_slab_page_size <= size) {
            return n;
        }

        n--;
    }
}


/*
 * The smallest zone that weir_slab_zone_pages gives pages pages: the
 * head and the page descriptors rounded up to a page, then the pages
 * (fewer bytes cannot fit the pages after the aligned descriptors).
 */

size_t
weir_slab_zone_size(weir_uint_t pages, weir_uint_t min_shift)
{
    size_t  head;

    head = weir_slab_zone_head(min_shift);

    return weir_align(head + pages * sizeof(weir_slab_page_t),
                      (size_t) weir_slab_page_size)
           + (size_t) pages * weir_slab_page_size;
}


/* the most pages one allocation of size bytes may take: a slot takes a
 * page when no page of its size has a free one */

weir_uint_t
weir_slab_alloc_pages_max(size_t size)
{
    if (weir_slab_page_shift == 0) {
        weir_slab_sizes_init();
    }

    if (size <= weir_slab_max_size) {
        return 1;
    }

    return (weir_uint_t) ((size + weir_slab_page_size - 1)
                          >> weir_slab_page_shift);
}


/* the pool, the slot list heads and the stats before the descriptors */

static size_t
weir_slab_zone_head(weir_uint_t min_shift)
{
    if (weir_slab_page_shift == 0) {
        weir_slab_sizes_init();
    }

    if (min_shift == 0) {
        min_shift = WEIR_SLAB_DEFAULT_MIN_SHIFT;
    }

    if (min_shift >= weir_slab_page_shift) {
        min_shift = weir_slab_page_shift - 1;
    }

    return sizeof(weir_slab_pool_t)
           + (weir_slab_page_shift - min_shift)
             * (sizeof(weir_slab_page_t) + sizeof(weir_slab_stat_t));
}

static void
weir_slab_set_name(weir_slab_pool_t *pool)
{
    size_t          len;
    unsigned char  *name;

    if (pool->log_ctx == NULL || pool->log_ctx == &pool->zero) {
        pool->log_ctx = &pool->zero;
        return;
    }

    len = weir_strlen(pool->log_ctx);

    pool->log_nomem = 0;
    name = weir_slab_alloc_locked(pool, len + 1);
    pool->log_nomem = 1;

    if (name == NULL) {
        pool->log_ctx = &pool->zero;
        return;
    }

    weir_memcpy(name, pool->log_ctx, len + 1);
    pool->log_ctx = name;
}


void *
weir_slab_alloc(weir_slab_pool_t *pool, size_t size)
{
    void  *p;

    weir_shmtx_lock(&pool->mutex);
    p = weir_slab_alloc_locked(pool, size);
    weir_shmtx_unlock(&pool->mutex);

    return p;
}


void *
weir_slab_alloc_locked(weir_slab_pool_t *pool, size_t size)
{
    void              *p;
    weir_uint_t        shift, n;
    weir_slab_page_t  *page;

    if (pool->stats == NULL) {
        goto failed;
    }

    if (size > weir_slab_max_size) {
        n = (size >> weir_slab_page_shift)
            + ((size & (weir_slab_page_size - 1)) ? 1 : 0);

        page = weir_slab_alloc_pages(pool, n);
        if (page == NULL) {
            goto failed;
        }

        return weir_slab_page_addr(pool, page);
    }

    for (shift = pool->min_shift; ((size_t) 1 << shift) < size; shift++) {
        /* void */
    }

    p = weir_slab_alloc_slot(pool, shift);
    if (p != NULL) {
        return p;
    }

failed:

    if (pool->log_nomem) {
        weir_log_error(WEIR_LOG_CRIT, weir_slab_log(), 0,
                       "weir_slab_alloc() failed: no memory in zone \"%s\"",
                       (char *) pool->log_ctx);
    }

    return NULL;
}


void *
weir_slab_calloc(weir_slab_pool_t *pool, size_t size)
{
    void  *p;

    weir_shmtx_lock(&pool->mutex);
    p = weir_slab_calloc_locked(pool, size);
    weir_shmtx_unlock(&pool->mutex);

    return p;
}


void *
weir_slab_calloc_locked(weir_slab_pool_t *pool, size_t size)
{
    void  *p;

    p = weir_slab_alloc_locked(pool, size);
    if (p) {
        weir_memzero(p, size);
    }

    return p;
}


void
weir_slab_free(weir_slab_pool_t *pool, void *p)
{
    weir_shmtx_lock(&pool->mutex);
    weir_slab_free_locked(pool, p);
    weir_shmtx_unlock(&pool->mutex);
}


/* a pointer that did not come from this zone is logged and left alone */

void
weir_slab_free_locked(weir_slab_pool_t *pool, void *p)
{
    weir_uint_t        n;
    unsigned char     *addr;
    weir_slab_page_t  *page;

    addr = p;
    n = (weir_uint_t) (pool->last - pool->pages);

    if (n == 0
        || addr < pool->start
        || addr >= pool->start + (n << weir_slab_page_shift))
    {
        weir_slab_error(pool, WEIR_LOG_ALERT,
                        "weir_slab_free(): pointer outside of the zone");
        return;
    }

    page = &pool->pages[(addr - pool->start) >> weir_slab_page_shift];

    switch (weir_slab_type(page)) {

    case WEIR_SLAB_SMALL:
    case WEIR_SLAB_MID:
        weir_slab_free_slot(pool, page, addr);
        return;

    case WEIR_SLAB_PAGES:

        if (((uintptr_t) (addr - pool->start) & (weir_slab_page_size - 1))
            || page->slab == 0)
        {
            weir_slab_error(pool, WEIR_LOG_ALERT,
                            "weir_slab_free(): pointer to a wrong page");
            return;
        }

        weir_slab_free_pages(pool, page, page->slab);
        return;

    default: /* WEIR_SLAB_FREE */
        weir_slab_error(pool, WEIR_LOG_ALERT,
                        "weir_slab_free(): page is already free");
        return;
    }
}


/* first fit: zones are small and long-lived, their free list short */

static weir_slab_page_t *
weir_slab_alloc_pages(weir_slab_pool_t *pool, weir_uint_t pages)
{
    weir_uint_t        i, len;
    weir_slab_page_t  *page, *rest;

    for (page = pool->free.next; page != &pool->free; page = page->next) {

        len = page->slab;

        if (len < pages) {
            continue;
        }

        weir_slab_remove(page);

        if (len > pages) {
            rest = page + pages;
            rest->slab = len - pages;
            weir_slab_insert(&pool->free, rest, WEIR_SLAB_FREE);

            if (len - pages > 1) {
                /* the run's last page already marks its end: re-point */
                page[len - 1].prev = (uintptr_t) rest | WEIR_SLAB_FREE;
            }
        }

        page->slab = pages;
        page->next = NULL;
        page->prev = WEIR_SLAB_PAGES;

        for (i = 1; i < pages; i++) {
            page[i].slab = 0;
            page[i].next = NULL;
            page[i].prev = WEIR_SLAB_PAGES;
        }

        pool->pfree -= pages;

        return page;
    }

    return NULL;
}


static void
weir_slab_free_pages(weir_slab_pool_t *pool, weir_slab_page_t *page,
    weir_uint_t pages)
{
    weir_slab_page_t  *next, *prev, *head;

    pool->pfree += pages;

    weir_memzero(page, pages * sizeof(weir_slab_page_t));

    next = page + pages;

    if (next < pool->last
        && weir_slab_type(next) == WEIR_SLAB_FREE
        && next->slab != 0)
    {
        weir_slab_remove(next);
        pages += next->slab;
        weir_memzero(next, sizeof(weir_slab_page_t));
    }

    if (page > pool->pages) {
        prev = page - 1;

        if (weir_slab_type(prev) == WEIR_SLAB_FREE) {
            head = (prev->slab != 0) ? prev : weir_slab_link(prev);

            if (head != NULL) {
                weir_slab_remove(head);
                pages += head->slab;

                /* the old end of the run is inside the merged one now */
                weir_memzero(prev, sizeof(weir_slab_page_t));
                page = head;
            }
        }
    }

    page->slab = pages;
    weir_slab_insert(&pool->free, page, WEIR_SLAB_FREE);

    if (pages > 1) {
        page[pages - 1].slab = 0;
        page[pages - 1].next = NULL;
        page[pages - 1].prev = (uintptr_t) page | WEIR_SLAB_FREE;
    }
}


static void *
weir_slab_alloc_slot(weir_slab_pool_t *pool, weir_uint_t shift)
{
    weir_uint_t         slot;
    weir_slab_page_t   *head, *page;

    slot = shift - pool->min_shift;
    head = &weir_slab_slots(pool)[slot];

    pool->stats[slot].reqs++;

    page = head->next;

    if (page == head) {
        page = weir_slab_alloc_pages(pool, 1);

        if (page == NULL) {
            pool->stats[slot].fails++;
            return NULL;
        }

        weir_slab_init_slot_page(pool, page, shift);
        weir_slab_insert(head, page, weir_slab_type(page));

        pool->stats[slot].total += weir_slab_usable(shift);
    }

    pool->stats[slot].used++;

    return weir_slab_take_slot(pool, page);
}


static void
weir_slab_init_slot_page(weir_slab_pool_t *pool, weir_slab_page_t *page,
    weir_uint_t shift)
{
    weir_uint_t     i, nslots, reserved;
    uintptr_t      *bitmap;

    nslots = weir_slab_page_size >> shift;

    page->next = NULL;

    if (((weir_uint_t) 1 << shift) >= weir_slab_mid_size) {
        page->slab = shift;
        page->prev = WEIR_SLAB_MID;
        return;
    }

    /* the bitmap has a bit for its own slots: they are never handed out */

    bitmap = (uintptr_t *) weir_slab_page_addr(pool, page);
    reserved = weir_slab_page_size >> shift;
    reserved = ((reserved / 8) + ((weir_uint_t) 1 << shift) - 1) >> shift;

    weir_memzero(bitmap, nslots / 8);

    for (i = 0; i < reserved; i++) {
        bitmap[i / WEIR_SLAB_WORD_BITS] |= (uintptr_t) 1
                                           << (i % WEIR_SLAB_WORD_BITS);
    }

    page->slab = ((uintptr_t) reserved << WEIR_SLAB_HALF) | shift;
    page->prev = WEIR_SLAB_SMALL;
}


/* slots of a page that can be handed out */

static weir_uint_t
weir_slab_usable(weir_uint_t shift)
{
    weir_uint_t  nslots;

    nslots = weir_slab_page_size >> shift;

    if (((weir_uint_t) 1 << shift) >= weir_slab_mid_size) {
        return nslots;
    }

    return nslots - (((nslots / 8) + ((weir_uint_t) 1 << shift) - 1)
                     >> shift);
}


/* page is in its size's list, so it has a free slot */

static void *
weir_slab_take_slot(weir_slab_pool_t *pool, weir_slab_page_t *page)
{
    weir_uint_t     shift, nslots, nwords, i, bit;
    uintptr_t       bits, full, *bitmap;
    unsigned char  *addr;

    shift = weir_slab_shift(page);
    nslots = weir_slab_page_size >> shift;
    addr = weir_slab_page_addr(pool, page);

    if (weir_slab_type(page) == WEIR_SLAB_MID) {
        full = ((uintptr_t) 1 << nslots) - 1;
        bits = weir_slab_high(page);
        bit = (weir_uint_t) __builtin_ctzl((unsigned long) (~bits & full));

        bits |= (uintptr_t) 1 << bit;
        page->slab = (bits << WEIR_SLAB_HALF) | shift;

        if (bits == full) {
            weir_slab_remove(page);
        }

        return addr + ((size_t) bit << shift);
    }

    bitmap = (uintptr_t *) addr;
    nwords = nslots / WEIR_SLAB_WORD_BITS;

    for (i = 0; i < nwords; i++) {
        if (bitmap[i] != ~(uintptr_t) 0) {
            break;
        }
    }

    if (i == nwords) {
        /* cannot happen: a full page is not in the list */
        weir_slab_error(pool, WEIR_LOG_ALERT,
                        "weir_slab_alloc(): full page in the free list");
        weir_slab_remove(page);
        return NULL;
    }

    bit = (weir_uint_t) __builtin_ctzl((unsigned long) ~bitmap[i]);
    bitmap[i] |= (uintptr_t) 1 << bit;

    page->slab += (uintptr_t) 1 << WEIR_SLAB_HALF;

    if (weir_slab_high(page) == nslots) {
        weir_slab_remove(page);
    }

    return addr + ((i * WEIR_SLAB_WORD_BITS + bit) << shift);
}


static void
weir_slab_free_slot(weir_slab_pool_t *pool, weir_slab_page_t *page,
    unsigned char *p)
{
    weir_uint_t     shift, nslots, n, slot, was_full, empty;
    uintptr_t       bits, full, mask, *bitmap;
    unsigned char  *addr;

    shift = weir_slab_shift(page);
    nslots = weir_slab_page_size >> shift;
    addr = weir_slab_page_addr(pool, page);
    n = (weir_uint_t) (p - addr);

    if (n & (((weir_uint_t) 1 << shift) - 1)) {
        weir_slab_error(pool, WEIR_LOG_ALERT,
                        "weir_slab_free(): pointer to a wrong chunk");
        return;
    }

    n >>= shift;

    if (weir_slab_type(page) == WEIR_SLAB_MID) {
        full = ((uintptr_t) 1 << nslots) - 1;
        bits = weir_slab_high(page);
        mask = (uintptr_t) 1 << n;

        if (!(bits & mask)) {
            weir_slab_error(pool, WEIR_LOG_ALERT,
                            "weir_slab_free(): chunk is already free");
            return;
        }

        was_full = (bits == full);
        bits &= ~mask;
        page->slab = (bits << WEIR_SLAB_HALF) | shift;
        empty = (bits == 0);

    } else {
        bitmap = (uintptr_t *) addr;
        mask = (uintptr_t) 1 << (n % WEIR_SLAB_WORD_BITS);

        if (n < nslots - weir_slab_usable(shift)) {
            weir_slab_error(pool, WEIR_LOG_ALERT,
                            "weir_slab_free(): pointer to a wrong chunk");
            return;
        }

        if (!(bitmap[n / WEIR_SLAB_WORD_BITS] & mask)) {
            weir_slab_error(pool, WEIR_LOG_ALERT,
                            "weir_slab_free(): chunk is already free");
            return;
        }

        was_full = (weir_slab_high(page) == nslots);
        bitmap[n / WEIR_SLAB_WORD_BITS] &= ~mask;
        page->slab -= (uintptr_t) 1 << WEIR_SLAB_HALF;
        empty = (weir_slab_high(page) == nslots - weir_slab_usable(shift));
    }

    slot = shift - pool->min_shift;
    pool->stats[slot].used--;

    if (empty) {
        if (!was_full) {
            weir_slab_remove(page);
        }

        pool->stats[slot].total -= weir_slab_usable(shift);
        weir_slab_free_pages(pool, page, 1);
        return;
    }

    if (was_full) {
        weir_slab_insert(&weir_slab_slots(pool)[slot], page,
                         weir_slab_type(page));
    }
}


/* the type bits of each prev stay with their own descriptor */

static void
weir_slab_insert(weir_slab_page_t *head, weir_slab_page_t *page,
    uintptr_t type)
{
    page->next = head->next;
    page->prev = (uintptr_t) head | type;

    head->next->prev = (uintptr_t) page | weir_slab_type(head->next);
    head->next = page;
}


static void
weir_slab_remove(weir_slab_page_t *page)
{
    weir_slab_page_t  *prev;

    prev = weir_slab_link(page);

    prev->next = page->next;
    page->next->prev = (uintptr_t) prev | weir_slab_type(page->next);

    page->next = NULL;
    page->prev = weir_slab_type(page);
}


static unsigned char *
weir_slab_page_addr(weir_slab_pool_t *pool, weir_slab_page_t *page)
{
    return pool->start
           + ((size_t) (page - pool->pages) << weir_slab_page_shift);
}


/* a zone outlives the cycle that made it: log to the current one */

static weir_log_t *
weir_slab_log(void)
{
    static weir_log_t        stderr_log;
    static weir_open_file_t  stderr_file;

    if (weir_cycle && weir_cycle->log) {
        return weir_cycle->log;
    }

    stderr_file.fd = STDERR_FILENO;
    stderr_log.file = &stderr_file;
    stderr_log.log_level = WEIR_LOG_NOTICE;

    return &stderr_log;
}


static void
weir_slab_error(weir_slab_pool_t *pool, weir_uint_t level, const char *text)
{
    weir_log_error(level, weir_slab_log(), 0, "%s in zone \"%s\"", text,
                   (char *) pool->log_ctx);
}
