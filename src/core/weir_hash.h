#ifndef _WEIR_HASH_H_INCLUDED_
#define _WEIR_HASH_H_INCLUDED_

/*
 * A read-only hash built once at configuration time from an array of
 * weir_hash_key_t and looked up at run time. Keys are compared as bytes;
 * build with lowercased keys and look up with weir_hash_key_lc() for
 * case-insensitive tables (header names, server names).
 */

typedef struct {
    weir_str_t       key;
    weir_uint_t      key_hash;
    void            *value;
} weir_hash_key_t;

typedef struct weir_hash_elt_s  weir_hash_elt_t;

struct weir_hash_elt_s {
    weir_hash_elt_t  *next;
    void             *value;
    weir_uint_t       key_hash;
    size_t            len;
    unsigned char     name[1];
};

typedef struct {
    weir_hash_elt_t **buckets;
    weir_uint_t       size;     /* a power of two */
    weir_uint_t       nelts;
} weir_hash_t;

#define weir_hash(key, c)   ((weir_uint_t) (key) * 31 + (c))

weir_uint_t weir_hash_key(unsigned char *data, size_t len);
/* lowercases data into itself as it hashes */
weir_uint_t weir_hash_key_lc(unsigned char *data, size_t len);
/* lowercases src into dst as it hashes */
weir_uint_t weir_hash_strlow(unsigned char *dst, unsigned char *src,
    size_t n);

/* keys: array of weir_hash_key_t (key_hash filled in by the caller or 0 to
 * compute it); duplicate keys: the first wins. */
weir_int_t weir_hash_init(weir_hash_t *hash, weir_pool_t *pool,
    weir_array_t *keys);
void *weir_hash_find(weir_hash_t *hash, weir_uint_t key, unsigned char *name,
    size_t len);

#endif /* _WEIR_HASH_H_INCLUDED_ */
