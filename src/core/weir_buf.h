#ifndef _WEIR_BUF_H_INCLUDED_
#define _WEIR_BUF_H_INCLUDED_

/*
 * Buffers and chains. A buffer describes memory [pos, last) inside
 * [start, end) and/or a file range [file_pos, file_last). last_buf and
 * flush are set explicitly by whoever produces the buffer, never inferred.
 * Filters keep free and busy chains and recycle buffers by tag.
 */

typedef void *weir_buf_tag_t;

typedef struct weir_buf_s  weir_buf_t;

struct weir_buf_s {
    unsigned char   *pos;
    unsigned char   *last;
    off_t            file_pos;
    off_t            file_last;

    unsigned char   *start;
    unsigned char   *end;
    weir_buf_tag_t   tag;
    weir_file_t     *file;
    weir_buf_t      *shadow;

    unsigned         temporary:1;   /* memory may be changed */
    unsigned         memory:1;      /* read-only memory */
    unsigned         mmap:1;
    unsigned         recycled:1;
    unsigned         in_file:1;
    unsigned         flush:1;
    unsigned         sync:1;
    unsigned         last_buf:1;    /* the end of the whole body */
    unsigned         last_in_chain:1;
    unsigned         last_shadow:1;
    unsigned         temp_file:1;
};

struct weir_chain_s {
    weir_buf_t      *buf;
    weir_chain_t    *next;
};

typedef struct {
    weir_int_t       num;
    size_t           size;
} weir_bufs_t;

#define weir_buf_in_memory(b)       ((b)->temporary || (b)->memory || (b)->mmap)
#define weir_buf_in_memory_only(b)  (weir_buf_in_memory(b) && !(b)->in_file)
#define weir_buf_special(b)                                                   \
    (((b)->flush || (b)->last_buf || (b)->sync)                               \
     && !weir_buf_in_memory(b) && !(b)->in_file)
#define weir_buf_size(b)                                                      \
    (weir_buf_in_memory(b) ? (off_t) ((b)->last - (b)->pos)                   \
                           : ((b)->file_last - (b)->file_pos))

#define weir_alloc_buf(pool)   weir_palloc(pool, sizeof(weir_buf_t))
#define weir_calloc_buf(pool)  weir_pcalloc(pool, sizeof(weir_buf_t))

/* a temporary buffer with size bytes of memory */
weir_buf_t *weir_create_temp_buf(weir_pool_t *pool, size_t size);
weir_chain_t *weir_create_chain_of_bufs(weir_pool_t *pool, weir_bufs_t *bufs);

/* chain links are recycled through pool->chain-like free lists kept by the
 * caller: weir_alloc_chain_link takes from *free first */
weir_chain_t *weir_alloc_chain_link(weir_pool_t *pool, weir_chain_t **free);
#define weir_free_chain(free, cl)                                             \
    (cl)->next = *(free);                                                     \
    *(free) = cl

/* appends copies of the links of in to *chain */
weir_int_t weir_chain_add_copy(weir_pool_t *pool, weir_chain_t **chain,
    weir_chain_t *in);
weir_chain_t *weir_chain_get_free_buf(weir_pool_t *p, weir_chain_t **free);
/* moves consumed buffers of *busy (and *out) to *free when tag matches */
void weir_chain_update_chains(weir_pool_t *p, weir_chain_t **free,
    weir_chain_t **busy, weir_chain_t **out, weir_buf_tag_t tag);
off_t weir_chain_size(weir_chain_t *in);
/* advances the buffers of in by sent bytes; returns the first not done */
weir_chain_t *weir_chain_update_sent(weir_chain_t *in, off_t sent);

#endif /* _WEIR_BUF_H_INCLUDED_ */
