#include "weir_config.h"
#include "weir_core.h"

/*
 * Red-black tree after CLRS, with a shared black sentinel instead of NULL
 * leaves. Rotations keep the root pointer in the tree object.
 */


static weir_inline void
weir_rbtree_rotate_left(weir_rbtree_node_t **root,
    weir_rbtree_node_t *sentinel, weir_rbtree_node_t *x)
{
    weir_rbtree_node_t  *y;

    y = x->right;
    x->right = y->left;

    if (y->left != sentinel) {
        y->left->parent = x;
    }

    y->parent = x->parent;

    if (x == *root) {
        *root = y;

    } else if (x == x->parent->left) {
        x->parent->left = y;

    } else {
        x->parent->right = y;
    }

    y->left = x;
    x->parent = y;
}


static weir_inline void
weir_rbtree_rotate_right(weir_rbtree_node_t **root,
    weir_rbtree_node_t *sentinel, weir_rbtree_node_t *x)
{
    weir_rbtree_node_t  *y;

    y = x->left;
    x->left = y->right;

    if (y->right != sentinel) {
        y->right->parent = x;
    }

    y->parent = x->parent;

    if (x == *root) {
        *root = y;

    } else if (x == x->parent->right) {
        x->parent->right = y;

    } else {
        x->parent->left = y;
    }

    y->right = x;
    x->parent = y;
}


void
weir_rbtree_insert(weir_rbtree_t *tree, weir_rbtree_node_t *node)
{
    weir_rbtree_node_t  **root, *u, *sentinel;

    root = &tree->root;
    sentinel = tree->sentinel;

    if (*root == sentinel) {
        node->parent = NULL;
        node->left = sentinel;
        node->right = sentinel;
        weir_rbt_black(node);
        *root = node;
        return;
    }

    tree->insert(*root, node, sentinel);

    /* restore the red-black properties going up from the new red node */

    while (node != *root && weir_rbt_is_red(node->parent)) {

        if (node->parent == node->parent->parent->left) {
            u = node->parent->parent->right;

            if (weir_rbt_is_red(u)) {
                weir_rbt_black(node->parent);
                weir_rbt_black(u);
                weir_rbt_red(node->parent->parent);
                node = node->parent->parent;

            } else {
                if (node == node->parent->right) {
                    node = node->parent;
                    weir_rbtree_rotate_left(root, sentinel, node);
                }

                weir_rbt_black(node->parent);
                weir_rbt_red(node->parent->parent);
                weir_rbtree_rotate_right(root, sentinel,
                                         node->parent->parent);
            }

        } else {
            u = node->parent->parent->left;

            if (weir_rbt_is_red(u)) {
                weir_rbt_black(node->parent);
                weir_rbt_black(u);
                weir_rbt_red(node->parent->parent);
                node = node->parent->parent;

            } else {
                if (node == node->parent->left) {
                    node = node->parent;
                    weir_rbtree_rotate_right(root, sentinel, node);
                }

                weir_rbt_black(node->parent);
                weir_rbt_red(node->parent->parent);
                weir_rbtree_rotate_left(root, sentinel, node->parent->parent);
            }
        }
    }

    weir_rbt_black(*root);
}


void
weir_rbtree_insert_value(weir_rbtree_node_t *temp, weir_rbtree_node_t *node,
    weir_rbtree_node_t *sentinel)
{
    weir_rbtree_node_t  **p;

    for ( ;; ) {
        p = (node->key < temp->key) ? &temp->left : &temp->right;

        if (*p == sentinel) {
            break;
        }

        temp = *p;
    }

    *p = node;
    node->parent = temp;
    node->left = sentinel;
    node->right = sentinel;
    weir_rbt_red(node);
}


/* timer keys are millisecond deadlines that may wrap: compare by the sign
 * of the difference, never by magnitude */

void
weir_rbtree_insert_timer_value(weir_rbtree_node_t *temp,
    weir_rbtree_node_t *node, weir_rbtree_node_t *sentinel)
{
    weir_rbtree_node_t  **p;

    for ( ;; ) {
        p = ((weir_rbtree_key_int_t) (node->key - temp->key) < 0)
            ? &temp->left : &temp->right;

        if (*p == sentinel) {
            break;
        }

        temp = *p;
    }

    *p = node;
    node->parent = temp;
    node->left = sentinel;
    node->right = sentinel;
    weir_rbt_red(node);
}


void
weir_rbtree_delete(weir_rbtree_t *tree, weir_rbtree_node_t *node)
{
    weir_uint_t           red;
    weir_rbtree_node_t  **root, *sentinel, *subst, *temp, *w;

    root = &tree->root;
    sentinel = tree->sentinel;

    if (node->left == sentinel) {
        temp = node->right;
        subst = node;

    } else if (node->right == sentinel) {
        temp = node->left;
        subst = node;

    } else {
        subst = weir_rbtree_min(node->right, sentinel);
        temp = subst->right;
    }

    if (subst == *root) {
        *root = temp;
        weir_rbt_black(temp);

        node->left = NULL;
        node->right = NULL;
        node->parent = NULL;
        node->key = 0;

        return;
    }

    red = weir_rbt_is_red(subst);

    if (subst == subst->parent->left) {
        subst->parent->left = temp;

    } else {
        subst->parent->right = temp;
    }

    if (subst == node) {
        temp->parent = subst->parent;

    } else {

        if (subst->parent == node) {
            temp->parent = subst;

        } else {
            temp->parent = subst->parent;
        }

        subst->left = node->left;
        subst->right = node->right;
        subst->parent = node->parent;
        weir_rbt_copy_color(subst, node);

        if (node == *root) {
            *root = subst;

        } else {
            if (node == node->parent->left) {
                node->parent->left = subst;
            } else {
                node->parent->right = subst;
            }
        }

        if (subst->left != sentinel) {
            subst->left->parent = subst;
        }

        if (subst->right != sentinel) {
            subst->right->parent = subst;
        }
    }

    node->left = NULL;
    node->right = NULL;
    node->parent = NULL;
    node->key = 0;

    if (red) {
        return;
    }

    /* a black node was removed: push the extra black up */

    while (temp != *root && weir_rbt_is_black(temp)) {

        if (temp == temp->parent->left) {
            w = temp->parent->right;

            if (weir_rbt_is_red(w)) {
                weir_rbt_black(w);
                weir_rbt_red(temp->parent);
                weir_rbtree_rotate_left(root, sentinel, temp->parent);
                w = temp->parent->right;
            }

            if (weir_rbt_is_black(w->left) && weir_rbt_is_black(w->right)) {
                weir_rbt_red(w);
                temp = temp->parent;

            } else {
                if (weir_rbt_is_black(w->right)) {
                    weir_rbt_black(w->left);
                    weir_rbt_red(w);
                    weir_rbtree_rotate_right(root, sentinel, w);
                    w = temp->parent->right;
                }

                weir_rbt_copy_color(w, temp->parent);
                weir_rbt_black(temp->parent);
                weir_rbt_black(w->right);
                weir_rbtree_rotate_left(root, sentinel, temp->parent);
                temp = *root;
            }

        } else {
            w = temp->parent->left;

            if (weir_rbt_is_red(w)) {
                weir_rbt_black(w);
                weir_rbt_red(temp->parent);
                weir_rbtree_rotate_right(root, sentinel, temp->parent);
                w = temp->parent->left;
            }

            if (weir_rbt_is_black(w->left) && weir_rbt_is_black(w->right)) {
                weir_rbt_red(w);
                temp = temp->parent;

            } else {
                if (weir_rbt_is_black(w->left)) {
                    weir_rbt_black(w->right);
                    weir_rbt_red(w);
                    weir_rbtree_rotate_left(root, sentinel, w);
                    w = temp->parent->left;
                }

                weir_rbt_copy_color(w, temp->parent);
                weir_rbt_black(temp->parent);
                weir_rbt_black(w->left);
                weir_rbtree_rotate_right(root, sentinel, temp->parent);
                temp = *root;
            }
        }
    }

    weir_rbt_black(temp);
}


weir_rbtree_node_t *
weir_rbtree_next(weir_rbtree_t *tree, weir_rbtree_node_t *node)
{
    weir_rbtree_node_t  *root, *sentinel, *parent;

    sentinel = tree->sentinel;

    if (node->right != sentinel) {
        return weir_rbtree_min(node->right, sentinel);
    }

    root = tree->root;

    for ( ;; ) {
        parent = node->parent;

        if (node == root) {
            return NULL;
        }

        if (node == parent->left) {
            return parent;
        }

        node = parent;
    }
}
