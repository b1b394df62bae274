#include "weir_config.h"
#include "weir_core.h"
#include "weir_unit.h"


/* a chain of temporary buffers holding len[i] bytes each */

static weir_chain_t *
make_chain(weir_pool_t *pool, const size_t *len, weir_uint_t n,
    weir_buf_tag_t tag)
{
    weir_uint_t    i;
    weir_buf_t    *b;
    weir_chain_t  *chain, *cl, **ll;

    ll = &chain;

    for (i = 0; i < n; i++) {
        b = weir_create_temp_buf(pool, len[i] ? len[i] : 1);
        cl = weir_alloc_chain_link(pool, NULL);

        if (b == NULL || cl == NULL) {
            return NULL;
        }

        weir_memset(b->start, 'a' + (int) i, len[i]);
        b->last = b->pos + len[i];
        b->tag = tag;

        cl->buf = b;
        *ll = cl;
        ll = &cl->next;
    }

    *ll = NULL;

    return chain;
}


static weir_chain_t *
flush_link(weir_pool_t *pool)
{
    weir_chain_t  *cl;

    cl = weir_alloc_chain_link(pool, NULL);
    if (cl == NULL) {
        return NULL;
    }

    cl->buf = weir_calloc_buf(pool);
    if (cl->buf == NULL) {
        return NULL;
    }

    cl->buf->flush = 1;

    return cl;
}


WEIR_UNIT_TEST(buf_temp)
{
    weir_buf_t   *b;
    weir_pool_t  *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    b = weir_create_temp_buf(pool, 100);
    WEIR_REQUIRE(b != NULL);

    WEIR_CHECK(b->pos == b->start);
    WEIR_CHECK(b->last == b->start);
    WEIR_CHECK(b->end == b->start + 100);
    WEIR_CHECK(b->temporary);
    WEIR_CHECK(weir_buf_in_memory(b));
    WEIR_CHECK(!weir_buf_special(b));
    WEIR_CHECK_INT(weir_buf_size(b), 0);

    b->last = weir_cpymem(b->last, "hello", 5);
    WEIR_CHECK_INT(weir_buf_size(b), 5);
    WEIR_CHECK_MEM(b->pos, b->last - b->pos, "hello");
}


WEIR_UNIT_TEST(buf_chain_of_bufs)
{
    weir_int_t     n;
    weir_bufs_t    bufs;
    weir_chain_t  *chain, *cl;
    weir_pool_t   *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    bufs.num = 3;
    bufs.size = 16;

    chain = weir_create_chain_of_bufs(pool, &bufs);
    WEIR_REQUIRE(chain != NULL);

    n = 0;

    for (cl = chain; cl; cl = cl->next) {
        WEIR_CHECK(cl->buf->end - cl->buf->start == 16);
        WEIR_CHECK(cl->buf->temporary);

        if (cl->next) {
            WEIR_CHECK(cl->next->buf->start == cl->buf->end);
        }

        n++;
    }

    WEIR_CHECK_INT(n, 3);
}


WEIR_UNIT_TEST(buf_chain_size)
{
    static const size_t   len[] = { 10, 20, 0, 7 };
    weir_chain_t         *chain, *cl;
    weir_pool_t          *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    chain = make_chain(pool, len, weir_nelems(len), NULL);
    WEIR_REQUIRE(chain != NULL);

    WEIR_CHECK_INT(weir_chain_size(chain), 37);

    /* a flush mark carries no bytes */
    cl = flush_link(pool);
    WEIR_REQUIRE(cl != NULL);
    cl->next = chain;

    WEIR_CHECK_INT(weir_chain_size(cl), 37);
    WEIR_CHECK_INT(weir_chain_size(NULL), 0);
}


WEIR_UNIT_TEST(buf_chain_update_sent)
{
    static const size_t   len[] = { 10, 20, 30 };
    weir_chain_t         *chain, *cl, *rest;
    weir_pool_t          *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    chain = make_chain(pool, len, weir_nelems(len), NULL);
    WEIR_REQUIRE(chain != NULL);

    /* nothing sent: the first link is still the first to send */
    WEIR_CHECK(weir_chain_update_sent(chain, 0) == chain);

    /* 25 bytes: all of the first buffer, 15 of the second */
    rest = weir_chain_update_sent(chain, 25);

    WEIR_CHECK(rest == chain->next);
    WEIR_CHECK(chain->buf->pos == chain->buf->last);
    WEIR_CHECK_INT(weir_buf_size(chain->next->buf), 5);
    WEIR_CHECK_MEM(chain->next->buf->pos, 5, "bbbbb");
    WEIR_CHECK_INT(weir_chain_size(chain), 35);

    /* the rest, exactly; a trailing flush mark is not waited for */
    cl = flush_link(pool);
    WEIR_REQUIRE(cl != NULL);
    chain->next->next->next = cl;

    rest = weir_chain_update_sent(rest, 35);
    WEIR_CHECK(rest == NULL);
    WEIR_CHECK_INT(weir_chain_size(chain), 0);
}


WEIR_UNIT_TEST(buf_chain_update_sent_file)
{
    weir_buf_t    *b;
    weir_chain_t  *cl;
    weir_pool_t   *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    b = weir_calloc_buf(pool);
    cl = weir_alloc_chain_link(pool, NULL);
    WEIR_REQUIRE(b != NULL && cl != NULL);

    b->in_file = 1;
    b->file_pos = 100;
    b->file_last = 1100;
    cl->buf = b;
    cl->next = NULL;

    WEIR_CHECK_INT(weir_chain_size(cl), 1000);
    WEIR_CHECK(weir_chain_update_sent(cl, 400) == cl);
    WEIR_CHECK_INT(b->file_pos, 500);
    WEIR_CHECK(weir_chain_update_sent(cl, 600) == NULL);
    WEIR_CHECK_INT(b->file_pos, 1100);
}


WEIR_UNIT_TEST(buf_update_chains_by_tag)
{
    static const size_t   len[] = { 4, 4, 4 };
    static int            tag_a, tag_b;
    weir_chain_t         *out, *busy, *free, *cl, *l1, *l2, *l3;
    weir_pool_t          *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    out = make_chain(pool, len, weir_nelems(len), &tag_a);
    WEIR_REQUIRE(out != NULL);

    l1 = out;
    l2 = out->next;
    l3 = out->next->next;

    l2->buf->tag = &tag_b;

    /* l1 and l2 were sent, l3 only in part */
    l1->buf->pos = l1->buf->last;
    l2->buf->pos = l2->buf->last;
    l3->buf->pos += 2;

    busy = NULL;
    free = NULL;

    weir_chain_update_chains(pool, &free, &busy, &out, &tag_a);

    WEIR_CHECK(out == NULL);
    WEIR_CHECK(busy == l3);
    WEIR_CHECK(free == l1);
    WEIR_CHECK(l1->next == NULL);

    /* a recycled buffer is empty again and rewound */
    WEIR_CHECK(l1->buf->pos == l1->buf->start);
    WEIR_CHECK(l1->buf->last == l1->buf->start);

    /* the buffer of another tag is not ours to recycle */
    for (cl = free; cl; cl = cl->next) {
        WEIR_CHECK(cl != l2);
    }

    /* l3 finishes later */
    l3->buf->pos = l3->buf->last;

    weir_chain_update_chains(pool, &free, &busy, &out, &tag_a);

    WEIR_CHECK(busy == NULL);
    WEIR_CHECK(free == l3);
    WEIR_CHECK(l3->next == l1);

    /* free links are handed out again before new ones */
    cl = weir_chain_get_free_buf(pool, &free);
    WEIR_CHECK(cl == l3);
    WEIR_CHECK(cl->next == NULL);
    WEIR_CHECK(free == l1);

    cl = weir_alloc_chain_link(pool, &free);
    WEIR_CHECK(cl == l1);
    WEIR_CHECK(free == NULL);

    cl = weir_chain_get_free_buf(pool, &free);
    WEIR_REQUIRE(cl != NULL);
    WEIR_CHECK(cl->buf != NULL && cl != l1 && cl != l3);
}


WEIR_UNIT_TEST(buf_chain_add_copy)
{
    static const size_t   len[] = { 1, 2 };
    weir_chain_t         *a, *b, *copy, *cl;
    weir_uint_t           n;
    weir_pool_t          *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    a = make_chain(pool, len, 2, NULL);
    b = make_chain(pool, len, 2, NULL);
    WEIR_REQUIRE(a != NULL && b != NULL);

    copy = NULL;
    WEIR_CHECK_INT(weir_chain_add_copy(pool, &copy, a), WEIR_OK);
    WEIR_CHECK_INT(weir_chain_add_copy(pool, &copy, b), WEIR_OK);

    n = 0;

    for (cl = copy; cl; cl = cl->next) {
        n++;
    }

    WEIR_CHECK_INT(n, 4);
    WEIR_REQUIRE(copy != NULL && copy->next != NULL);
    WEIR_CHECK(copy != a && copy->buf == a->buf);
    WEIR_CHECK(copy->next->next->buf == b->buf);
    WEIR_CHECK_INT(weir_chain_size(copy), 6);
}
