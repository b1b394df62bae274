#include "weir_config.h"
#include "weir_core.h"
#include "weir_unit.h"


#define ZONE_SIZE   (1024 * 1024)
#define MAX_LIVE    4096


typedef struct {
    unsigned char   *p;
    size_t           size;
    unsigned char    fill;
} live_t;


static uint64_t        slab_seed;
static weir_cycle_t    slab_cycle;
static volatile weir_cycle_t  *saved_cycle;


static weir_uint_t
slab_random(void)
{
    slab_seed ^= slab_seed << 13;
    slab_seed ^= slab_seed >> 7;
    slab_seed ^= slab_seed << 17;

    return (weir_uint_t) slab_seed;
}


/*
 * A zone in malloc'd memory: the allocator does not care whether it is
 * shared. The slab logs to the current cycle's log: point a fake cycle at
 * the unit log while a test runs.
 */

static weir_slab_pool_t *
zone_create(size_t size, const char *name)
{
    unsigned char     *mem;
    weir_slab_pool_t  *sp;

    if (weir_pagesize == 0) {
        weir_pagesize = (weir_uint_t) sysconf(_SC_PAGESIZE);
    }

    weir_slab_sizes_init();

    mem = malloc(size);
    if (mem == NULL) {
        return NULL;
    }

    /* only the header needs to be zero, but a clean zone eases debugging */
    weir_memzero(mem, size);

    sp = (weir_slab_pool_t *) mem;
    sp->end = mem + size;
    sp->min_shift = 3;
    sp->addr = mem;
    sp->log_ctx = (unsigned char *) name;

    if (weir_cycle != &slab_cycle) {
        saved_cycle = weir_cycle;
    }

    slab_cycle.log = weir_unit_log();
    weir_cycle = &slab_cycle;

    weir_slab_init(sp);

    return sp;
}


static void
zone_destroy(weir_slab_pool_t *sp)
{
    weir_shmtx_destroy(&sp->mutex);
    free(sp->addr);
    weir_cycle = saved_cycle;
}


static int
live_cmp(const void *one, const void *two)
{
    const live_t  *a, *b;

    a = one;
    b = two;

    return (a->p > b->p) - (a->p < b->p);
}


/* every live block keeps its fill byte and none overlaps another */

static int
check_live(weir_slab_pool_t *sp, live_t *live, weir_uint_t n)
{
    size_t       j;
    weir_uint_t  i;

    for (i = 0; i < n; i++) {
        for (j = 0; j < live[i].size; j++) {
            if (live[i].p[j] != live[i].fill) {
                return WEIR_CHECK(live[i].p[j] == live[i].fill);
            }
        }

        if (!WEIR_CHECK(live[i].p >= sp->start
                        && live[i].p + live[i].size <= sp->end))
        {
            return 0;
        }
    }

    qsort(live, n, sizeof(live_t), live_cmp);

    for (i = 1; i < n; i++) {
        if (!WEIR_CHECK(live[i - 1].p + live[i - 1].size <= live[i].p)) {
            return 0;
        }
    }

    return 1;
}


static size_t
expected_alignment(size_t size)
{
    size_t  a;

    if (size > weir_pagesize / 2) {
        return weir_pagesize;
    }

    for (a = 8; a < size; a <<= 1) { /* void */ }

    return a;
}


WEIR_UNIT_TEST(slab_mixed_sizes)
{
    size_t             size;
    weir_uint_t        i, n, op, pfree;
    unsigned char     *p;
    weir_slab_pool_t  *sp;
    static live_t      live[MAX_LIVE];

    static const size_t  sizes[] = {
        1, 7, 8, 9, 16, 24, 33, 64, 100, 128, 129, 500, 1024, 2000, 2048,
        2049, 4096, 5000, 12288, 20000
    };

    sp = zone_create(ZONE_SIZE, "test");
    WEIR_REQUIRE(sp != NULL);

    WEIR_CHECK(sp->pfree > 0);
    WEIR_CHECK((uintptr_t) sp->start % weir_pagesize == 0);
    WEIR_CHECK(sp->start + sp->pfree * weir_pagesize <= sp->end);

    pfree = sp->pfree;
    slab_seed = 0x2545f4914f6cdd1dULL;
    n = 0;

    for (op = 0; op < 20000; op++) {

        if (n < MAX_LIVE && (n == 0 || slab_random() % 100 < 55)) {

            if (slab_random() % 4 == 0) {
                size = 1 + slab_random() % 9000;

            } else {
                size = sizes[slab_random() % weir_nelems(sizes)];
            }

            p = weir_slab_alloc(sp, size);

            if (p == NULL) {
                /* the zone is full: that is fine, free something */
                WEIR_CHECK(weir_unit_log_has("no memory in zone \"test\""));
                weir_unit_log_reset();
                continue;
            }

            if (!WEIR_CHECK((uintptr_t) p % expected_alignment(size) == 0))
            {
                break;
            }

            live[n].p = p;
            live[n].size = size;
            live[n].fill = (unsigned char) (op & 0xff);
            weir_memset(p, live[n].fill, size);
            n++;

        } else {
            i = slab_random() % n;

            weir_slab_free(sp, live[i].p);
            live[i] = live[--n];
        }

        if (op % 2000 == 0 && !check_live(sp, live, n)) {
            break;
        }
    }

    WEIR_CHECK(check_live(sp, live, n));

    for (i = 0; i < n; i++) {
        weir_slab_free(sp, live[i].p);
    }

    /* everything is back, in one run: the free runs merged */
    WEIR_CHECK_INT(sp->pfree, pfree);

    /* only the copy of the zone's name is left, in an 8-byte slot */
    WEIR_CHECK_STR(sp->log_ctx, "test");
    WEIR_CHECK((unsigned char *) sp->log_ctx >= sp->start
               && (unsigned char *) sp->log_ctx < sp->end);
    WEIR_CHECK_INT(sp->stats[0].used, 1);

    for (i = 1; ((weir_uint_t) 8 << i) < weir_pagesize; i++) {
        WEIR_CHECK_INT(sp->stats[i].used, 0);
        WEIR_CHECK_INT(sp->stats[i].total, 0);
    }

    p = weir_slab_alloc(sp, pfree * weir_pagesize);
    WEIR_CHECK(p != NULL);
    WEIR_CHECK_INT(sp->pfree, 0);

    if (p) {
        weir_slab_free(sp, p);
    }

    WEIR_CHECK(!weir_unit_log_has("[alert]"));

    zone_destroy(sp);
}


WEIR_UNIT_TEST(slab_exhaustion)
{
    weir_uint_t        i, n, max, pfree;
    unsigned char    **all, *p;
    weir_slab_pool_t  *sp;

    sp = zone_create(ZONE_SIZE, "exhaust");
    WEIR_REQUIRE(sp != NULL);

    pfree = sp->pfree;
    max = ZONE_SIZE / 64 + 1;

    all = malloc(max * sizeof(unsigned char *));
    if (all == NULL) {
        zone_destroy(sp);
        WEIR_REQUIRE(all != NULL);
    }

    for (n = 0; n < max; n++) {
        all[n] = weir_slab_alloc(sp, 64);

        if (all[n] == NULL) {
            break;
        }

        weir_memset(all[n], (int) (n & 0xff), 64);
    }

    /* the bound was never reached: the zone ran out first */
    WEIR_CHECK(n < max);
    WEIR_CHECK(n > 0);
    WEIR_CHECK_INT(sp->pfree, 0);
    WEIR_CHECK(weir_unit_log_has("[crit]"));
    WEIR_CHECK(weir_unit_log_has(
                   "weir_slab_alloc() failed: no memory in zone \"exhaust\""));

    /* so does every other size (the name's page still has 8-byte slots) */
    weir_unit_log_reset();
    WEIR_CHECK(weir_slab_alloc(sp, 16) == NULL);
    WEIR_CHECK(weir_slab_alloc(sp, 3000) == NULL);
    WEIR_CHECK(weir_slab_alloc(sp, 3 * weir_pagesize) == NULL);
    WEIR_CHECK(weir_unit_log_has("no memory"));
    WEIR_CHECK(sp->stats[1].fails > 0);

    /* log_nomem off: failures are silent */
    weir_unit_log_reset();
    sp->log_nomem = 0;
    WEIR_CHECK(weir_slab_alloc(sp, 64) == NULL);
    WEIR_CHECK_STR(weir_unit_log_text(), "");
    sp->log_nomem = 1;

    for (i = 0; i < n; i++) {
        if (all[i][0] != (i & 0xff) || all[i][63] != (i & 0xff)) {
            WEIR_CHECK(all[i][63] == (i & 0xff));
            break;
        }
    }

    /* free every other one: no page becomes empty, yet slots come back */
    for (i = 0; i < n; i += 2) {
        weir_slab_free(sp, all[i]);
    }

    WEIR_CHECK_INT(sp->pfree, 0);

    for (i = 0; i < n; i += 2) {
        all[i] = weir_slab_alloc(sp, 64);

        if (!WEIR_CHECK(all[i] != NULL)) {
            break;
        }
    }

    for (i = 0; i < n; i++) {
        if (all[i]) {
            weir_slab_free(sp, all[i]);
        }
    }

    WEIR_CHECK_INT(sp->pfree, pfree);

    /* the memory is reusable for any size now */
    p = weir_slab_alloc(sp, pfree * weir_pagesize);
    WEIR_CHECK(p != NULL);

    if (p) {
        weir_slab_free(sp, p);
    }

    free(all);

    WEIR_CHECK(!weir_unit_log_has("[alert]"));

    zone_destroy(sp);
}


WEIR_UNIT_TEST(slab_page_merging)
{
    weir_uint_t        i, pfree;
    unsigned char     *p[6], *big;
    weir_slab_pool_t  *sp;

    sp = zone_create(64 * 1024, "merge");
    WEIR_REQUIRE(sp != NULL);

    pfree = sp->pfree;
    WEIR_REQUIRE(pfree >= 6);

    for (i = 0; i < 6; i++) {
        p[i] = weir_slab_alloc(sp, weir_pagesize);
        WEIR_REQUIRE(p[i] != NULL);
    }

    /* free 1 and 3, then 2 between them: one run of three pages */
    weir_slab_free(sp, p[1]);
    weir_slab_free(sp, p[3]);
    weir_slab_free(sp, p[2]);

    big = weir_slab_alloc(sp, 3 * weir_pagesize);
    WEIR_CHECK(big == p[1]);

    weir_slab_free(sp, big);

    /* a run of two pages freed next to a run of three before it */
    weir_slab_free(sp, p[4]);
    weir_slab_free(sp, p[5]);
    weir_slab_free(sp, p[0]);

    WEIR_CHECK_INT(sp->pfree, pfree);

    big = weir_slab_alloc(sp, pfree * weir_pagesize);
    WEIR_CHECK(big == p[0]);
    WEIR_CHECK_INT(sp->pfree, 0);

    weir_slab_free(sp, big);
    WEIR_CHECK_INT(sp->pfree, pfree);

    WEIR_CHECK(!weir_unit_log_has("[alert]"));

    zone_destroy(sp);
}


WEIR_UNIT_TEST(slab_stats_and_calloc)
{
    weir_uint_t        i, k;
    unsigned char     *p[3], *q;
    weir_slab_pool_t  *sp;

    sp = zone_create(ZONE_SIZE, NULL);
    WEIR_REQUIRE(sp != NULL);

    /* 100 bytes go to 128-byte slots: class 4 from 8 bytes */
    k = 4;

    for (i = 0; i < 3; i++) {
        p[i] = weir_slab_alloc(sp, 100);
        WEIR_REQUIRE(p[i] != NULL);
        WEIR_CHECK((uintptr_t) p[i] % 128 == 0);
    }

    WEIR_CHECK_INT(sp->stats[k].reqs, 3);
    WEIR_CHECK_INT(sp->stats[k].used, 3);
    WEIR_CHECK_INT(sp->stats[k].total, weir_pagesize / 128);
    WEIR_CHECK_INT(sp->stats[k].fails, 0);

    /* slots of one size share a page */
    WEIR_CHECK(p[1] - p[0] < (ptrdiff_t) weir_pagesize
               && p[0] - p[1] < (ptrdiff_t) weir_pagesize);

    /* 8-byte slots keep their bitmap in the page: fewer usable slots */
    q = weir_slab_alloc(sp, 8);
    WEIR_REQUIRE(q != NULL);
    WEIR_CHECK(sp->stats[0].total > 0
               && sp->stats[0].total < weir_pagesize / 8);
    WEIR_CHECK_INT(sp->stats[0].used, 1);
    weir_slab_free(sp, q);
    WEIR_CHECK_INT(sp->stats[0].used, 0);
    WEIR_CHECK_INT(sp->stats[0].total, 0);

    weir_memset(p[0], 0xff, 100);
    weir_slab_free(sp, p[0]);

    WEIR_CHECK_INT(sp->stats[k].used, 2);

    /* the freed slot comes back first, zeroed by calloc */
    q = weir_slab_calloc(sp, 100);
    WEIR_REQUIRE(q != NULL);
    WEIR_CHECK(q == p[0]);

    for (i = 0; i < 100; i++) {
        if (!WEIR_CHECK_INT(q[i], 0)) {
            break;
        }
    }

    weir_slab_free(sp, q);
    weir_slab_free(sp, p[1]);
    weir_slab_free(sp, p[2]);

    /* the empty page went back to the free pages */
    WEIR_CHECK_INT(sp->stats[k].used, 0);
    WEIR_CHECK_INT(sp->stats[k].total, 0);
    WEIR_CHECK_INT(sp->stats[k].reqs, 4);

    zone_destroy(sp);
}


WEIR_UNIT_TEST(slab_bad_free)
{
    unsigned char     *p, *q, *big;
    weir_slab_pool_t  *sp;

    sp = zone_create(ZONE_SIZE, "bad");
    WEIR_REQUIRE(sp != NULL);

    p = weir_slab_alloc(sp, 32);
    q = weir_slab_alloc(sp, 500);
    big = weir_slab_alloc(sp, 3 * weir_pagesize);
    WEIR_REQUIRE(p != NULL && q != NULL && big != NULL);

    weir_slab_free(sp, p + 4);
    WEIR_CHECK(weir_unit_log_has("[alert]"));
    WEIR_CHECK(weir_unit_log_has("wrong chunk in zone \"bad\""));

    weir_unit_log_reset();
    weir_slab_free(sp, big + weir_pagesize);
    WEIR_CHECK(weir_unit_log_has("wrong page"));

    weir_unit_log_reset();
    weir_slab_free(sp, (unsigned char *) sp);
    WEIR_CHECK(weir_unit_log_has("outside of the zone"));

    /* keep one more 512-byte slot in use so that the page stays */
    WEIR_REQUIRE(weir_slab_alloc(sp, 500) != NULL);

    weir_unit_log_reset();
    weir_slab_free(sp, q);
    WEIR_CHECK_STR(weir_unit_log_text(), "");
    weir_slab_free(sp, q);
    WEIR_CHECK(weir_unit_log_has("chunk is already free"));

    weir_unit_log_reset();
    weir_slab_free(sp, big);
    WEIR_CHECK_STR(weir_unit_log_text(), "");
    weir_slab_free(sp, big);
    WEIR_CHECK(weir_unit_log_has("page is already free"));

    zone_destroy(sp);
}


WEIR_UNIT_TEST(slab_tiny_zone)
{
    weir_slab_pool_t  *sp;

    /* no room for a single page: every allocation fails, nothing breaks */
    sp = zone_create(sizeof(weir_slab_pool_t) + 1024, NULL);
    WEIR_REQUIRE(sp != NULL);

    WEIR_CHECK_INT(sp->pfree, 0);
    WEIR_CHECK(weir_slab_alloc(sp, 8) == NULL);
    WEIR_CHECK(weir_unit_log_has("no memory in zone \"\""));

    zone_destroy(sp);

    /* not even room for the lists */
    sp = zone_create(sizeof(weir_slab_pool_t) + 16, "tiny");
    WEIR_REQUIRE(sp != NULL);

    WEIR_CHECK(weir_unit_log_has("[alert]"));
    WEIR_CHECK(weir_unit_log_has("is too small"));
    WEIR_CHECK(weir_slab_alloc(sp, 8) == NULL);
    weir_slab_free(sp, (unsigned char *) sp + 8);

    zone_destroy(sp);
}


/*
 * weir_slab_zone_pages must say what weir_slab_init will give a zone of
 * that size (a configuration is checked with it before any zone exists),
 * and weir_slab_zone_size is the smallest size that gives so many pages.
 */

WEIR_UNIT_TEST(slab_zone_geometry)
{
    size_t             size, sizes[8];
    weir_uint_t        i, pages;
    unsigned char     *mem;
    weir_slab_pool_t  *sp;

    if (weir_pagesize == 0) {
        weir_pagesize = (weir_uint_t) sysconf(_SC_PAGESIZE);
    }

    weir_slab_sizes_init();

    sizes[0] = 8 * weir_pagesize;
    sizes[1] = 8 * weir_pagesize + 1;
    sizes[2] = 8 * weir_pagesize - 1;
    sizes[3] = 64 * 1024 + 100;
    sizes[4] = 1024 * 1024;
    sizes[5] = sizeof(weir_slab_pool_t) + 1024;
    sizes[6] = 3 * weir_pagesize + 777;
    sizes[7] = 10 * 1024 * 1024 + 4095;

    for (i = 0; i < 8; i++) {
        size = sizes[i];

        if (posix_memalign((void **) &mem, weir_pagesize, size) != 0) {
            WEIR_CHECK(0);
            return;
        }

        weir_memzero(mem, sizeof(weir_slab_pool_t));

        sp = (weir_slab_pool_t *) mem;
        sp->end = mem + size;
        sp->min_shift = 3;
        sp->addr = mem;

        weir_slab_init(sp);

        pages = weir_slab_zone_pages(size, 3);
        WEIR_CHECK_INT(pages, sp->pfree);

        if (pages) {
            WEIR_CHECK(weir_slab_zone_size(pages, 3) <= size);
            WEIR_CHECK(weir_slab_zone_pages(weir_slab_zone_size(pages, 3), 3)
                       == pages);
            WEIR_CHECK(weir_slab_zone_pages(weir_slab_zone_size(pages, 3)
                                            - 1, 3)
                       == pages - 1);
        }

        weir_shmtx_destroy(&sp->mutex);
        free(mem);
    }

    WEIR_CHECK_INT(weir_slab_alloc_pages_max(1), 1);
    WEIR_CHECK_INT(weir_slab_alloc_pages_max(weir_pagesize / 2), 1);
    WEIR_CHECK_INT(weir_slab_alloc_pages_max(weir_pagesize / 2 + 1), 1);
    WEIR_CHECK_INT(weir_slab_alloc_pages_max(weir_pagesize + 1), 2);
}


/*
 * The real thing: a shared zone, a forked "worker" that allocates in it,
 * and one that dies holding the lock.
 */

WEIR_UNIT_TEST(slab_shared_zone_and_lock)
{
    int                status;
    pid_t              pid;
    weir_shm_t         shm;
    unsigned char     *p;
    weir_slab_pool_t  *sp;

    saved_cycle = weir_cycle;
    slab_cycle.log = weir_unit_log();
    weir_cycle = &slab_cycle;

    weir_memzero(&shm, sizeof(shm));
    shm.size = 256 * 1024;
    weir_str_set(&shm.name, "shared");
    shm.log = weir_unit_log();

    if (!WEIR_CHECK_INT(weir_shm_alloc(&shm), WEIR_OK)) {
        weir_cycle = saved_cycle;
        return;
    }

    sp = (weir_slab_pool_t *) shm.addr;
    sp->end = shm.addr + shm.size;
    sp->min_shift = 3;
    sp->addr = shm.addr;
    weir_slab_init(sp);

    pid = fork();

    if (pid == 0) {
        p = weir_slab_alloc(sp, 64);
        if (p) {
            weir_memcpy(p, "from the child", 15);
        }

        sp->data = p;
        _exit(p ? 0 : 1);
    }

    WEIR_REQUIRE(pid > 0);
    WEIR_CHECK(waitpid(pid, &status, 0) == pid);
    WEIR_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    WEIR_REQUIRE(sp->data != NULL);
    WEIR_CHECK_STR(sp->data, "from the child");
    WEIR_CHECK_INT(sp->stats[3].used, 1);

    /* the parent's allocations do not collide with the child's */
    p = weir_slab_alloc(sp, 64);
    WEIR_CHECK(p != NULL && p != sp->data);

    /* a worker that dies holding the lock */
    pid = fork();

    if (pid == 0) {
        weir_shmtx_lock(&sp->mutex);
        _exit(0);
    }

    WEIR_REQUIRE(pid > 0);
    WEIR_CHECK(waitpid(pid, &status, 0) == pid);

    weir_unit_log_reset();
    weir_shmtx_lock(&sp->mutex);
    WEIR_CHECK(weir_unit_log_has(
                   "[error]"));
    WEIR_CHECK(weir_unit_log_has(
                   "shared lock recovered from a dead worker"));

    /* held by us: trylock fails; released: it works, and so does the
     * slab, which takes the same lock */
    WEIR_CHECK_INT(weir_shmtx_trylock(&sp->mutex), 0);
    weir_shmtx_unlock(&sp->mutex);
    WEIR_CHECK_INT(weir_shmtx_trylock(&sp->mutex), 1);
    weir_shmtx_unlock(&sp->mutex);

    weir_slab_free(sp, p);
    weir_slab_free(sp, sp->data);
    WEIR_CHECK_INT(sp->stats[3].used, 0);

    weir_unit_log_reset();
    weir_shmtx_lock(&sp->mutex);
    weir_shmtx_unlock(&sp->mutex);
    WEIR_CHECK_STR(weir_unit_log_text(), "");

    weir_shmtx_destroy(&sp->mutex);
    weir_shm_free(&shm);
    WEIR_CHECK(shm.addr == NULL);

    weir_cycle = saved_cycle;
}


WEIR_UNIT_TEST(shm_alloc_failure)
{
    weir_shm_t  shm;

    weir_memzero(&shm, sizeof(shm));
    shm.size = (size_t) -1 / 2;
    weir_str_set(&shm.name, "huge");
    shm.log = weir_unit_log();

    WEIR_CHECK_INT(weir_shm_alloc(&shm), WEIR_ERROR);
    WEIR_CHECK(shm.addr == NULL);
    WEIR_CHECK(weir_unit_log_has("[alert]"));
    WEIR_CHECK(weir_unit_log_has("zone \"huge\""));
}


/* workers that allocate and free at the same time, under the zone's lock */

static int
slab_worker(weir_slab_pool_t *sp, weir_uint_t id)
{
    size_t          size, j;
    weir_uint_t     i, k;
    unsigned char  *held[16];
    size_t          sizes[16];

    slab_seed = 0x1234567ULL + id * 7919;

    weir_memzero(held, sizeof(held));

    for (i = 0; i < 30000; i++) {
        k = slab_random() % 16;

        if (held[k]) {
            for (j = 0; j < sizes[k]; j++) {
                if (held[k][j] != (unsigned char) (id + k)) {
                    return 1;
                }
            }

            weir_slab_free(sp, held[k]);
            held[k] = NULL;
            continue;
        }

        size = 1 + slab_random() % 3000;
        held[k] = weir_slab_alloc(sp, size);

        if (held[k] == NULL) {
            return 2;
        }

        sizes[k] = size;
        weir_memset(held[k], (int) (id + k), size);
    }

    for (k = 0; k < 16; k++) {
        if (held[k]) {
            weir_slab_free(sp, held[k]);
        }
    }

    /* the worker's own copy of the unit log */
    return weir_unit_log_has("[alert]") ? 3 : 0;
}


WEIR_UNIT_TEST(slab_concurrent_workers)
{
    int                status;
    pid_t              pids[4];
    weir_uint_t        i, pfree;
    weir_shm_t         shm;
    weir_slab_pool_t  *sp;

    weir_memzero(&shm, sizeof(shm));
    shm.size = 1024 * 1024;
    weir_str_set(&shm.name, "workers");
    shm.log = weir_unit_log();

    saved_cycle = weir_cycle;
    slab_cycle.log = weir_unit_log();
    weir_cycle = &slab_cycle;

    if (!WEIR_CHECK_INT(weir_shm_alloc(&shm), WEIR_OK)) {
        weir_cycle = saved_cycle;
        return;
    }

    sp = (weir_slab_pool_t *) shm.addr;
    sp->end = shm.addr + shm.size;
    sp->min_shift = 3;
    sp->addr = shm.addr;
    weir_slab_init(sp);

    pfree = sp->pfree;

    for (i = 0; i < weir_nelems(pids); i++) {
        pids[i] = fork();

        if (pids[i] == 0) {
            _exit(slab_worker(sp, i));
        }

        WEIR_CHECK(pids[i] > 0);
    }

    for (i = 0; i < weir_nelems(pids); i++) {
        if (pids[i] <= 0) {
            continue;
        }

        status = -1;
        WEIR_CHECK(waitpid(pids[i], &status, 0) == pids[i]);
        WEIR_CHECK(WIFEXITED(status));
        WEIR_CHECK_INT(WEXITSTATUS(status), 0);
    }

    /* everything the workers took came back, merged */
    WEIR_CHECK_INT(sp->pfree, pfree);

    for (i = 0; ((weir_uint_t) 8 << i) < weir_pagesize; i++) {
        WEIR_CHECK_INT(sp->stats[i].used, 0);
    }

    WEIR_CHECK(!weir_unit_log_has("[alert]"));

    weir_shmtx_destroy(&sp->mutex);
    weir_shm_free(&shm);

    weir_cycle = saved_cycle;
}
