#include "weir_config.h"
#include "weir_core.h"


weir_uint_t
weir_hash_key(unsigned char *data, size_t len)
{
    weir_uint_t  i, key;

    key = 0;

    for (i = 0; i < len; i++) {
        key = weir_hash(key, data[i]);
    }

    return key;
}


weir_uint_t
weir_hash_key_lc(unsigned char *data, size_t len)
{
    weir_uint_t  i, key;

    key = 0;

    for (i = 0; i < len; i++) {
        data[i] = weir_tolower(data[i]);
        key = weir_hash(key, data[i]);
    }

    return key;
}


weir_uint_t
weir_hash_strlow(unsigned char *dst, unsigned char *src, size_t n)
{
    weir_uint_t  key;

    key = 0;

    while (n--) {
        *dst = weir_tolower(*src);
        key = weir_hash(key, *dst);
        dst++;
        src++;
    }

    return key;
}


weir_int_t
weir_hash_init(weir_hash_t *hash, weir_pool_t *pool, weir_array_t *keys)
{
    weir_uint_t       i, size, b;
    weir_hash_key_t  *k;
    weir_hash_elt_t  *elt, **pp;

    size = 1;

    /* load factor at most one half */
    while (size < keys->nelts * 2) {
        size <<= 1;
    }

    hash->buckets = weir_pcalloc(pool, size * sizeof(weir_hash_elt_t *));
    if (hash->buckets == NULL) {
        return WEIR_ERROR;
    }

    hash->size = size;
    hash->nelts = 0;

    k = keys->elts;

    for (i = 0; i < keys->nelts; i++) {
        if (k[i].key_hash == 0) {
            k[i].key_hash = weir_hash_key(k[i].key.data, k[i].key.len);
        }

        b = k[i].key_hash & (size - 1);

        for (pp = &hash->buckets[b]; *pp; pp = &(*pp)->next) {
            if ((*pp)->len == k[i].key.len
                && weir_memcmp((*pp)->name, k[i].key.data, k[i].key.len) == 0)
            {
                break;
            }
        }

        if (*pp) {
            continue;
        }

        elt = weir_palloc(pool, offsetof(weir_hash_elt_t, name)
                                + k[i].key.len + 1);
        if (elt == NULL) {
            return WEIR_ERROR;
        }

        elt->next = NULL;
        elt->value = k[i].value;
        elt->key_hash = k[i].key_hash;
        elt->len = k[i].key.len;
        weir_memcpy(elt->name, k[i].key.data, k[i].key.len);
        elt->name[k[i].key.len] = '\0';

        *pp = elt;
        hash->nelts++;
    }

    return WEIR_OK;
}


void *
weir_hash_find(weir_hash_t *hash, weir_uint_t key, unsigned char *name,
    size_t len)
{
    weir_hash_elt_t  *elt;

    if (hash->size == 0) {
        return NULL;
    }

    for (elt = hash->buckets[key & (hash->size - 1)]; elt; elt = elt->next) {
        if (elt->key_hash == key && elt->len == len
            && weir_memcmp(elt->name, name, len) == 0)
        {
            return elt->value;
        }
    }

    return NULL;
}
