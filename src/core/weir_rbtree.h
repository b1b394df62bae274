#ifndef _WEIR_RBTREE_H_INCLUDED_
#define _WEIR_RBTREE_H_INCLUDED_

/* An intrusive red-black tree. Nodes with equal keys are allowed; the
 * insert function decides where they go (timers use
 * weir_rbtree_insert_timer_value, which compares keys with wrap-around). */

typedef weir_uint_t  weir_rbtree_key_t;
typedef weir_int_t   weir_rbtree_key_int_t;

typedef struct weir_rbtree_node_s  weir_rbtree_node_t;

struct weir_rbtree_node_s {
    weir_rbtree_key_t     key;
    weir_rbtree_node_t   *left;
    weir_rbtree_node_t   *right;
    weir_rbtree_node_t   *parent;
    unsigned char         color;
    unsigned char         data;
};

typedef struct weir_rbtree_s  weir_rbtree_t;

typedef void (*weir_rbtree_insert_pt)(weir_rbtree_node_t *root,
    weir_rbtree_node_t *node, weir_rbtree_node_t *sentinel);

struct weir_rbtree_s {
    weir_rbtree_node_t     *root;
    weir_rbtree_node_t     *sentinel;
    weir_rbtree_insert_pt   insert;
};

#define weir_rbtree_init(tree, s, i)                                          \
    weir_rbtree_sentinel_init(s);                                             \
    (tree)->root = s;                                                         \
    (tree)->sentinel = s;                                                     \
    (tree)->insert = i

#define weir_rbtree_data(node, type, link)                                    \
    (type *) ((unsigned char *) (node) - offsetof(type, link))

void weir_rbtree_insert(weir_rbtree_t *tree, weir_rbtree_node_t *node);
void weir_rbtree_delete(weir_rbtree_t *tree, weir_rbtree_node_t *node);
void weir_rbtree_insert_value(weir_rbtree_node_t *root,
    weir_rbtree_node_t *node, weir_rbtree_node_t *sentinel);
void weir_rbtree_insert_timer_value(weir_rbtree_node_t *root,
    weir_rbtree_node_t *node, weir_rbtree_node_t *sentinel);
weir_rbtree_node_t *weir_rbtree_next(weir_rbtree_t *tree,
    weir_rbtree_node_t *node);

#define weir_rbt_red(node)          ((node)->color = 1)
#define weir_rbt_black(node)        ((node)->color = 0)
#define weir_rbt_is_red(node)       ((node)->color)
#define weir_rbt_is_black(node)     (!weir_rbt_is_red(node))
#define weir_rbt_copy_color(n1, n2) (n1->color = n2->color)

#define weir_rbtree_sentinel_init(node)  weir_rbt_black(node)

static weir_inline weir_rbtree_node_t *
weir_rbtree_min(weir_rbtree_node_t *node, weir_rbtree_node_t *sentinel)
{
    while (node->left != sentinel) {
        node = node->left;
    }

    return node;
}

#endif /* _WEIR_RBTREE_H_INCLUDED_ */
