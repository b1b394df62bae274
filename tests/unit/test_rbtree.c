#include "weir_config.h"
#include "weir_core.h"
#include "weir_unit.h"


#define TEST_NODES  1000


typedef struct {
    weir_rbtree_node_t   node;
    weir_uint_t          in_tree;
} test_node_t;


static uint64_t  rb_seed;


static weir_uint_t
rb_random(void)
{
    /* xorshift64: the same sequence on every run */
    rb_seed ^= rb_seed << 13;
    rb_seed ^= rb_seed >> 7;
    rb_seed ^= rb_seed << 17;

    return (weir_uint_t) rb_seed;
}


static int
key_cmp(const void *one, const void *two)
{
    weir_rbtree_key_t  a, b;

    a = *(const weir_rbtree_key_t *) one;
    b = *(const weir_rbtree_key_t *) two;

    return (a > b) - (a < b);
}


/*
 * Checks the red-black rules below node and the parent links; returns the
 * black height, or -1 after a failed check.
 */

static int
rb_check(weir_rbtree_node_t *node, weir_rbtree_node_t *sentinel)
{
    int  left, right;

    if (node == sentinel) {
        return 1;
    }

    if (weir_rbt_is_red(node)) {
        if (!WEIR_CHECK(weir_rbt_is_black(node->left)
                        && weir_rbt_is_black(node->right)))
        {
            return -1;
        }
    }

    if (node->left != sentinel && !WEIR_CHECK(node->left->parent == node)) {
        return -1;
    }

    if (node->right != sentinel && !WEIR_CHECK(node->right->parent == node))
    {
        return -1;
    }

    left = rb_check(node->left, sentinel);
    right = rb_check(node->right, sentinel);

    if (left < 0 || right < 0 || !WEIR_CHECK_INT(left, right)) {
        return -1;
    }

    return left + (weir_rbt_is_black(node) ? 1 : 0);
}


/* walks the tree with min/next and compares with the sorted reference */

static int
rb_compare(weir_rbtree_t *tree, test_node_t *nodes, weir_uint_t n)
{
    weir_uint_t           i, count;
    weir_rbtree_key_t     ref[TEST_NODES];
    weir_rbtree_node_t   *node;

    count = 0;

    for (i = 0; i < n; i++) {
        if (nodes[i].in_tree) {
            ref[count++] = nodes[i].node.key;
        }
    }

    qsort(ref, count, sizeof(weir_rbtree_key_t), key_cmp);

    if (count == 0) {
        return WEIR_CHECK(tree->root == tree->sentinel);
    }

    if (!WEIR_CHECK(weir_rbt_is_black(tree->root))
        || rb_check(tree->root, tree->sentinel) < 0)
    {
        return 0;
    }

    node = weir_rbtree_min(tree->root, tree->sentinel);

    for (i = 0; i < count; i++) {
        if (!WEIR_CHECK(node != NULL)
            || !WEIR_CHECK_INT(node->key, ref[i]))
        {
            return 0;
        }

        node = weir_rbtree_next(tree, node);
    }

    return WEIR_CHECK(node == NULL);
}


WEIR_UNIT_TEST(rbtree_random)
{
    weir_uint_t          i, op, k;
    weir_rbtree_t        tree;
    weir_rbtree_node_t   sentinel;
    static test_node_t   nodes[TEST_NODES];

    rb_seed = 0x9e3779b97f4a7c15ULL;

    weir_memzero(nodes, sizeof(nodes));
    weir_rbtree_init(&tree, &sentinel, weir_rbtree_insert_value);

    /* 1,000 inserts, some of them duplicate keys */
    for (i = 0; i < TEST_NODES; i++) {
        nodes[i].node.key = rb_random() % 5000;
        nodes[i].in_tree = 1;
        weir_rbtree_insert(&tree, &nodes[i].node);
    }

    WEIR_REQUIRE(rb_compare(&tree, nodes, TEST_NODES));

    /* then 1,000 random deletes and re-inserts */
    for (op = 0; op < 1000; op++) {
        k = rb_random() % TEST_NODES;

        if (nodes[k].in_tree) {
            weir_rbtree_delete(&tree, &nodes[k].node);
            nodes[k].in_tree = 0;

        } else {
            nodes[k].node.key = rb_random() % 5000;
            weir_rbtree_insert(&tree, &nodes[k].node);
            nodes[k].in_tree = 1;
        }

        if (op % 100 == 0) {
            WEIR_REQUIRE(rb_compare(&tree, nodes, TEST_NODES));
        }
    }

    WEIR_REQUIRE(rb_compare(&tree, nodes, TEST_NODES));

    /* and empty it, in index order (not key order) */
    for (i = 0; i < TEST_NODES; i++) {
        if (nodes[i].in_tree) {
            weir_rbtree_delete(&tree, &nodes[i].node);
            nodes[i].in_tree = 0;
        }

        if (i % 250 == 0) {
            WEIR_REQUIRE(rb_compare(&tree, nodes, TEST_NODES));
        }
    }

    WEIR_CHECK(tree.root == &sentinel);
}


WEIR_UNIT_TEST(rbtree_sequential)
{
    weir_uint_t          i;
    weir_rbtree_t        tree;
    weir_rbtree_node_t   sentinel;
    static test_node_t   nodes[TEST_NODES];

    weir_memzero(nodes, sizeof(nodes));
    weir_rbtree_init(&tree, &sentinel, weir_rbtree_insert_value);

    /* ascending keys: the worst case for an unbalanced tree */
    for (i = 0; i < TEST_NODES; i++) {
        nodes[i].node.key = i;
        nodes[i].in_tree = 1;
        weir_rbtree_insert(&tree, &nodes[i].node);
    }

    WEIR_REQUIRE(rb_compare(&tree, nodes, TEST_NODES));

    WEIR_CHECK(weir_rbtree_min(tree.root, &sentinel) == &nodes[0].node);

    /* deleting the minimum again and again, as timers expire */
    for (i = 0; i < TEST_NODES / 2; i++) {
        WEIR_REQUIRE(weir_rbtree_min(tree.root, &sentinel)
                     == &nodes[i].node);
        weir_rbtree_delete(&tree, &nodes[i].node);
        nodes[i].in_tree = 0;
    }

    WEIR_REQUIRE(rb_compare(&tree, nodes, TEST_NODES));
}


WEIR_UNIT_TEST(rbtree_timer_wraparound)
{
    weir_uint_t          i;
    weir_rbtree_t        tree;
    weir_rbtree_key_t    base;
    weir_rbtree_node_t   sentinel, *node;
    static test_node_t   nodes[5];

    /* deadlines around the point where the clock wraps to 0 */
    static const weir_rbtree_key_int_t  offsets[] = { 10, -10, 0, 5, -5 };
    static const weir_uint_t            order[] = { 1, 4, 2, 3, 0 };

    base = WEIR_MAX_UINT_T_VALUE - 2;

    weir_memzero(nodes, sizeof(nodes));
    weir_rbtree_init(&tree, &sentinel, weir_rbtree_insert_timer_value);

    for (i = 0; i < weir_nelems(nodes); i++) {
        nodes[i].node.key = base + (weir_rbtree_key_t) offsets[i];
        weir_rbtree_insert(&tree, &nodes[i].node);
    }

    /* base + 5 and base + 10 are small numbers now, yet come last */
    WEIR_CHECK(nodes[3].node.key < 10 && nodes[0].node.key < 10);

    node = weir_rbtree_min(tree.root, &sentinel);

    for (i = 0; i < weir_nelems(order); i++) {
        if (!WEIR_CHECK(node == &nodes[order[i]].node)) {
            break;
        }

        node = weir_rbtree_next(&tree, node);
    }

    WEIR_CHECK(i < weir_nelems(order) || node == NULL);
}
