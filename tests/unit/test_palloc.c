#include "weir_config.h"
#include "weir_core.h"
#include "weir_unit.h"


static int  cleanup_order[8];
static int  cleanup_n;


static void
record_cleanup(void *data)
{
    if (cleanup_n < (int) weir_nelems(cleanup_order)) {
        cleanup_order[cleanup_n++] = *(int *) data;
    }
}


static weir_uint_t
count_large(weir_pool_t *pool)
{
    weir_uint_t         n;
    weir_pool_large_t  *l;

    n = 0;

    for (l = pool->large; l; l = l->next) {
        n++;
    }

    return n;
}


WEIR_UNIT_TEST(palloc_small)
{
    weir_uint_t     i;
    unsigned char  *p, *q, *all[1000];
    weir_pool_t    *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    p = weir_palloc(pool, 10);
    q = weir_palloc(pool, 10);

    WEIR_REQUIRE(p != NULL && q != NULL);
    WEIR_CHECK((uintptr_t) p % WEIR_ALIGNMENT == 0);
    WEIR_CHECK((uintptr_t) q % WEIR_ALIGNMENT == 0);
    WEIR_CHECK(q >= p + 10);

    /* unaligned allocations are packed */
    p = weir_pnalloc(pool, 1);
    q = weir_pnalloc(pool, 1);
    WEIR_REQUIRE(p != NULL && q != NULL);
    WEIR_CHECK(q == p + 1);

    /* many blocks' worth: every piece is distinct and writable */
    for (i = 0; i < weir_nelems(all); i++) {
        all[i] = weir_palloc(pool, 100);
        WEIR_REQUIRE(all[i] != NULL);
        WEIR_CHECK((uintptr_t) all[i] % WEIR_ALIGNMENT == 0);
        weir_memset(all[i], (int) (i & 0xff), 100);
    }

    for (i = 0; i < weir_nelems(all); i++) {
        if (all[i][0] != (i & 0xff) || all[i][99] != (i & 0xff)) {
            WEIR_CHECK(all[i][0] == (i & 0xff));
            break;
        }
    }

    WEIR_CHECK(pool->d.next != NULL);
    WEIR_CHECK_INT(count_large(pool), 0);
}


WEIR_UNIT_TEST(palloc_pcalloc_zeroes)
{
    weir_uint_t     i;
    unsigned char  *p;
    weir_pool_t    *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    /* dirty the memory pcalloc will hand out after a reset */
    p = weir_palloc(pool, 300);
    WEIR_REQUIRE(p != NULL);
    weir_memset(p, 0xaa, 300);

    weir_reset_pool(pool);

    p = weir_pcalloc(pool, 300);
    WEIR_REQUIRE(p != NULL);

    for (i = 0; i < 300; i++) {
        if (p[i] != 0) {
            break;
        }
    }

    WEIR_CHECK_INT(i, 300);
}


WEIR_UNIT_TEST(palloc_large_and_pfree)
{
    unsigned char  *p, *q, *small;
    weir_pool_t    *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    p = weir_palloc(pool, WEIR_MAX_ALLOC_FROM_POOL + 100);
    WEIR_REQUIRE(p != NULL);
    weir_memset(p, 1, WEIR_MAX_ALLOC_FROM_POOL + 100);

    WEIR_CHECK_INT(count_large(pool), 1);
    WEIR_CHECK(pool->large->alloc == p);

    small = weir_palloc(pool, 16);
    WEIR_REQUIRE(small != NULL);

    WEIR_CHECK_INT(weir_pfree(pool, small), WEIR_DECLINED);
    WEIR_CHECK_INT(weir_pfree(pool, p), WEIR_OK);
    WEIR_CHECK_INT(weir_pfree(pool, p), WEIR_DECLINED);

    /* the freed slot is reused, not a new one added */
    q = weir_pnalloc(pool, 100000);
    WEIR_REQUIRE(q != NULL);
    WEIR_CHECK_INT(count_large(pool), 1);
    WEIR_CHECK(pool->large->alloc == q);

    q = weir_palloc(pool, 100000);
    WEIR_REQUIRE(q != NULL);
    WEIR_CHECK_INT(count_large(pool), 2);
}


WEIR_UNIT_TEST(palloc_memalign)
{
    unsigned char  *p;
    weir_pool_t    *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    p = weir_pmemalign(pool, 100, 4096);
    WEIR_REQUIRE(p != NULL);
    WEIR_CHECK((uintptr_t) p % 4096 == 0);
    weir_memset(p, 0, 100);

    WEIR_CHECK_INT(weir_pfree(pool, p), WEIR_OK);
}


WEIR_UNIT_TEST(palloc_memalign_reuses_freed_slot)
{
    weir_uint_t     i;
    unsigned char  *p;
    weir_pool_t    *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    /* a keep-alive connection's header buffer: allocated and freed once
     * per request, the pool must not grow a slot each time */

    for (i = 0; i < 100; i++) {
        p = weir_pmemalign(pool, 1024, WEIR_ALIGNMENT);
        WEIR_REQUIRE(p != NULL);
        WEIR_CHECK_INT(weir_pfree(pool, p), WEIR_OK);
    }

    WEIR_CHECK_INT(count_large(pool), 1);
}


WEIR_UNIT_TEST(palloc_block_cache)
{
    weir_uint_t     i, n, base;
    unsigned char  *p;
    weir_pool_t    *pool, *first, *pools[80], *drain[64];

    /* earlier tests may have left blocks: take them out first */

    for (n = 0; n < 64 && weir_pool_cached_blocks() > 0; n++) {
        drain[n] = weir_create_pool(4096, weir_unit_log());
        WEIR_REQUIRE(drain[n] != NULL);
    }

    WEIR_CHECK_INT(weir_pool_cached_blocks(), 0);

    /* a request's pool and its second block come back from the cache */

    pool = weir_create_pool(4096, weir_unit_log());
    WEIR_REQUIRE(pool != NULL);

    for (i = 0; i < 3; i++) {
        p = weir_palloc(pool, 3000);              /* 2nd and 3rd block */
        WEIR_REQUIRE(p != NULL);
        weir_memset(p, 0xa5, 3000);
    }

    first = pool;
    base = weir_pool_cached_blocks();
    weir_destroy_pool(pool);
    WEIR_CHECK_INT(weir_pool_cached_blocks(), base + 3);

    pool = weir_create_pool(4096, weir_unit_log());
    WEIR_REQUIRE(pool != NULL);
    WEIR_CHECK_INT(weir_pool_cached_blocks(), base + 2);

    /* the most recently freed block: the last of the previous pool */
    WEIR_CHECK(pool != first);
    WEIR_CHECK(pool->d.next == NULL && pool->large == NULL
               && pool->cleanup == NULL && pool->current == pool);
    WEIR_CHECK(pool->d.last == (unsigned char *) pool + sizeof(weir_pool_t));
    WEIR_CHECK(pool->d.end == (unsigned char *) pool + 4096);

    p = weir_pcalloc(pool, 4096 - sizeof(weir_pool_t));
    WEIR_CHECK(p != NULL && p[0] == 0 && p[4096 - sizeof(weir_pool_t) - 1]
                            == 0);
    weir_destroy_pool(pool);

    /* other sizes are not kept */

    base = weir_pool_cached_blocks();
    pool = weir_create_pool(1024, weir_unit_log());
    WEIR_REQUIRE(pool != NULL);
    weir_destroy_pool(pool);
    WEIR_CHECK_INT(weir_pool_cached_blocks(), base);

    /* bounded: 80 pools freed at once leave at most 64 blocks */

    for (i = 0; i < 80; i++) {
        pools[i] = weir_create_pool(4096, weir_unit_log());
        WEIR_REQUIRE(pools[i] != NULL);
    }

    WEIR_CHECK_INT(weir_pool_cached_blocks(), 0);

    for (i = 0; i < 80; i++) {
        weir_destroy_pool(pools[i]);
    }

    WEIR_CHECK_INT(weir_pool_cached_blocks(), 64);

    for (i = 0; i < n; i++) {
        weir_destroy_pool(drain[i]);
    }

    WEIR_CHECK_INT(weir_pool_cached_blocks(), 64);
}


WEIR_UNIT_TEST(palloc_tiny_pool)
{
    unsigned char  *p;
    weir_pool_t    *pool;

    /* rounded up to the minimum; everything then goes to "large" */
    pool = weir_create_pool(1, weir_unit_log());
    WEIR_REQUIRE(pool != NULL);

    p = weir_palloc(pool, 64);
    WEIR_CHECK(p != NULL);

    if (p) {
        weir_memset(p, 0, 64);
    }

    weir_destroy_pool(pool);
}


WEIR_UNIT_TEST(palloc_cleanup_order)
{
    int                   i;
    weir_pool_t          *pool;
    weir_pool_cleanup_t  *cln;

    pool = weir_create_pool(1024, weir_unit_log());
    WEIR_REQUIRE(pool != NULL);

    cleanup_n = 0;

    for (i = 1; i <= 3; i++) {
        cln = weir_pool_cleanup_add(pool, sizeof(int));
        if (!WEIR_CHECK(cln != NULL && cln->data != NULL)) {
            weir_destroy_pool(pool);
            return;
        }

        *(int *) cln->data = i;
        cln->handler = record_cleanup;
    }

    /* an entry without handler is skipped */
    cln = weir_pool_cleanup_add(pool, 0);
    WEIR_CHECK(cln != NULL && cln->data == NULL && cln->handler == NULL);

    weir_destroy_pool(pool);

    WEIR_CHECK_INT(cleanup_n, 3);
    WEIR_CHECK_INT(cleanup_order[0], 3);
    WEIR_CHECK_INT(cleanup_order[1], 2);
    WEIR_CHECK_INT(cleanup_order[2], 1);
}


WEIR_UNIT_TEST(palloc_reset)
{
    unsigned char  *first, *p;
    weir_uint_t     i;
    weir_pool_t    *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    first = weir_palloc(pool, 32);
    WEIR_REQUIRE(first != NULL);

    for (i = 0; i < 100; i++) {
        WEIR_REQUIRE(weir_palloc(pool, 1000) != NULL);
    }

    WEIR_REQUIRE(weir_palloc(pool, 50000) != NULL);
    WEIR_CHECK_INT(count_large(pool), 1);

    weir_reset_pool(pool);

    WEIR_CHECK(pool->large == NULL);
    WEIR_CHECK(pool->current == pool);

    /* the blocks are rewound and reused from the first one */
    p = weir_palloc(pool, 32);
    WEIR_CHECK(p == first);

    for (i = 0; i < 100; i++) {
        p = weir_palloc(pool, 1000);
        WEIR_REQUIRE(p != NULL);
        weir_memset(p, 0, 1000);
    }
}
