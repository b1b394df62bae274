#include "weir_config.h"
#include "weir_core.h"


weir_buf_t *
weir_create_temp_buf(weir_pool_t *pool, size_t size)
{
    weir_buf_t  *b;

    b = weir_calloc_buf(pool);
    if (b == NULL) {
        return NULL;
    }

    b->start = weir_palloc(pool, size);
    if (b->start == NULL) {
        return NULL;
    }

    b->pos = b->start;
    b->last = b->start;
    b->end = b->last + size;
    b->temporary = 1;

    return b;
}


weir_chain_t *
weir_alloc_chain_link(weir_pool_t *pool, weir_chain_t **free)
{
    weir_chain_t  *cl;

    if (free && *free) {
        cl = *free;
        *free = cl->next;
        cl->next = NULL;
        return cl;
    }

    cl = weir_palloc(pool, sizeof(weir_chain_t));
    if (cl == NULL) {
        return NULL;
    }

    cl->next = NULL;

    return cl;
}


weir_chain_t *
weir_create_chain_of_bufs(weir_pool_t *pool, weir_bufs_t *bufs)
{
    unsigned char  *p;
    weir_int_t      i;
    weir_buf_t     *b;
    weir_chain_t   *chain, *cl, **ll;

    p = weir_palloc(pool, bufs->num * bufs->size);
    if (p == NULL) {
        return NULL;
    }

    ll = &chain;

    for (i = 0; i < bufs->num; i++) {

        b = weir_calloc_buf(pool);
        if (b == NULL) {
            return NULL;
        }

        b->pos = p;
        b->last = p;
        b->temporary = 1;

        b->start = p;
        p += bufs->size;
        b->end = p;

        cl = weir_alloc_chain_link(pool, NULL);
        if (cl == NULL) {
            return NULL;
        }

        cl->buf = b;
        *ll = cl;
        ll = &cl->next;
    }

    *ll = NULL;

    return chain;
}


weir_int_t
weir_chain_add_copy(weir_pool_t *pool, weir_chain_t **chain,
    weir_chain_t *in)
{
    weir_chain_t  *cl, **ll;

    ll = chain;

    for (cl = *chain; cl; cl = cl->next) {
        ll = &cl->next;
    }

    while (in) {
        cl = weir_alloc_chain_link(pool, NULL);
        if (cl == NULL) {
            *ll = NULL;
            return WEIR_ERROR;
        }

        cl->buf = in->buf;
        *ll = cl;
        ll = &cl->next;
        in = in->next;
    }

    *ll = NULL;

    return WEIR_OK;
}


weir_chain_t *
weir_chain_get_free_buf(weir_pool_t *p, weir_chain_t **free)
{
    weir_chain_t  *cl;

    if (*free) {
        cl = *free;
        *free = cl->next;
        cl->next = NULL;
        return cl;
    }

    cl = weir_alloc_chain_link(p, NULL);
    if (cl == NULL) {
        return NULL;
    }

    cl->buf = weir_calloc_buf(p);
    if (cl->buf == NULL) {
        return NULL;
    }

    cl->next = NULL;

    return cl;
}


void
weir_chain_update_chains(weir_pool_t *p, weir_chain_t **free,
    weir_chain_t **busy, weir_chain_t **out, weir_buf_tag_t tag)
{
    weir_chain_t  *cl;

    (void) p;

    if (*out) {
        if (*busy == NULL) {
            *busy = *out;

        } else {
            for (cl = *busy; cl->next; cl = cl->next) { /* void */ }

            cl->next = *out;
        }

        *out = NULL;
    }

    while (*busy) {
        cl = *busy;

        if (cl->buf->tag != tag) {
            *busy = cl->next;
            continue;
        }

        if (weir_buf_size(cl->buf) != 0) {
            break;
        }

        cl->buf->pos = cl->buf->start;
        cl->buf->last = cl->buf->start;

        *busy = cl->next;
        cl->next = *free;
        *free = cl;
    }
}


off_t
weir_chain_size(weir_chain_t *in)
{
    off_t  size;

    for (size = 0; in; in = in->next) {
        if (!weir_buf_special(in->buf)) {
            size += weir_buf_size(in->buf);
        }
    }

    return size;
}


weir_chain_t *
weir_chain_update_sent(weir_chain_t *in, off_t sent)
{
    off_t  size;

    for ( /* void */ ; in; in = in->next) {

        if (weir_buf_special(in->buf)) {
            continue;
        }

        if (sent == 0) {
            break;
        }

        size = weir_buf_size(in->buf);

        if (sent >= size) {
            sent -= size;

            if (weir_buf_in_memory(in->buf)) {
                in->buf->pos = in->buf->last;
            }

            if (in->buf->in_file) {
                in->buf->file_pos = in->buf->file_last;
            }

            continue;
        }

        if (weir_buf_in_memory(in->buf)) {
            in->buf->pos += (size_t) sent;
        }

        if (in->buf->in_file) {
            in->buf->file_pos += sent;
        }

        break;
    }

    return in;
}
