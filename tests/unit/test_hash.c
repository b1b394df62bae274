#include "weir_config.h"
#include "weir_core.h"
#include "weir_unit.h"


static weir_int_t
add_key(weir_array_t *keys, const char *name, void *value)
{
    weir_hash_key_t  *k;

    k = weir_array_push(keys);
    if (k == NULL) {
        return WEIR_ERROR;
    }

    k->key.len = strlen(name);
    k->key.data = (unsigned char *) name;
    k->key_hash = 0;
    k->value = value;

    return WEIR_OK;
}


static void *
find(weir_hash_t *hash, const char *name)
{
    size_t  len;

    len = strlen(name);

    return weir_hash_find(hash, weir_hash_key((unsigned char *) name, len),
                          (unsigned char *) name, len);
}


WEIR_UNIT_TEST(hash_build_and_find)
{
    weir_uint_t    i;
    weir_hash_t    hash;
    weir_array_t  *keys;
    weir_pool_t   *pool;
    static int     values[5];

    static const char  *names[] = {
        "host", "content-length", "accept", "x", "transfer-encoding"
    };

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    keys = weir_array_create(pool, 4, sizeof(weir_hash_key_t));
    WEIR_REQUIRE(keys != NULL);

    for (i = 0; i < weir_nelems(names); i++) {
        WEIR_REQUIRE(add_key(keys, names[i], &values[i]) == WEIR_OK);
    }

    WEIR_REQUIRE(weir_hash_init(&hash, pool, keys) == WEIR_OK);

    WEIR_CHECK_INT(hash.nelts, weir_nelems(names));
    WEIR_CHECK(hash.size >= 2 * hash.nelts);
    WEIR_CHECK((hash.size & (hash.size - 1)) == 0);

    for (i = 0; i < weir_nelems(names); i++) {
        WEIR_CHECK(find(&hash, names[i]) == &values[i]);
    }

    /* missing keys, prefixes and longer keys */
    WEIR_CHECK(find(&hash, "hos") == NULL);
    WEIR_CHECK(find(&hash, "hostx") == NULL);
    WEIR_CHECK(find(&hash, "") == NULL);
    WEIR_CHECK(find(&hash, "referer") == NULL);

    /* byte comparison: case matters unless the caller lowercases */
    WEIR_CHECK(find(&hash, "Host") == NULL);
}


WEIR_UNIT_TEST(hash_case_insensitive)
{
    void          *value;
    unsigned char  name[32];
    weir_uint_t    key;
    weir_hash_t    hash;
    weir_array_t  *keys;
    weir_pool_t   *pool;
    static int     v1, v2;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    keys = weir_array_create(pool, 2, sizeof(weir_hash_key_t));
    WEIR_REQUIRE(keys != NULL);

    WEIR_REQUIRE(add_key(keys, "content-type", &v1) == WEIR_OK);
    WEIR_REQUIRE(add_key(keys, "etag", &v2) == WEIR_OK);
    WEIR_REQUIRE(weir_hash_init(&hash, pool, keys) == WEIR_OK);

    /* key_lc lowercases in place as it hashes */
    weir_memcpy(name, "Content-TYPE", 12);
    key = weir_hash_key_lc(name, 12);
    WEIR_CHECK_MEM(name, 12, "content-type");
    WEIR_CHECK_INT(key, weir_hash_key((unsigned char *) "content-type", 12));
    WEIR_CHECK(weir_hash_find(&hash, key, name, 12) == &v1);

    /* strlow leaves the source alone */
    key = weir_hash_strlow(name, (unsigned char *) "ETag", 4);
    WEIR_CHECK_MEM(name, 4, "etag");
    value = weir_hash_find(&hash, key, name, 4);
    WEIR_CHECK(value == &v2);
}


WEIR_UNIT_TEST(hash_duplicates_and_many)
{
    char           *name;
    weir_uint_t     i;
    weir_hash_t     hash;
    weir_array_t   *keys;
    weir_pool_t    *pool;
    static int      values[300];
    static char     names[300][16];

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    keys = weir_array_create(pool, 16, sizeof(weir_hash_key_t));
    WEIR_REQUIRE(keys != NULL);

    for (i = 0; i < 300; i++) {
        name = names[i];
        (void) snprintf(name, sizeof(names[i]), "key-%lu",
                        (unsigned long) i);
        WEIR_REQUIRE(add_key(keys, name, &values[i]) == WEIR_OK);
    }

    /* a duplicate: the first value wins */
    WEIR_REQUIRE(add_key(keys, "key-7", &values[0]) == WEIR_OK);

    WEIR_REQUIRE(weir_hash_init(&hash, pool, keys) == WEIR_OK);
    WEIR_CHECK_INT(hash.nelts, 300);

    for (i = 0; i < 300; i++) {
        if (!WEIR_CHECK(find(&hash, names[i]) == &values[i])) {
            break;
        }
    }

    WEIR_CHECK(find(&hash, "key-300") == NULL);
}


WEIR_UNIT_TEST(hash_empty)
{
    weir_hash_t    hash;
    weir_array_t  *keys;
    weir_pool_t   *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    keys = weir_array_create(pool, 1, sizeof(weir_hash_key_t));
    WEIR_REQUIRE(keys != NULL);

    WEIR_REQUIRE(weir_hash_init(&hash, pool, keys) == WEIR_OK);
    WEIR_CHECK_INT(hash.nelts, 0);
    WEIR_CHECK(find(&hash, "anything") == NULL);

    /* a table that was never built finds nothing either */
    weir_memzero(&hash, sizeof(hash));
    WEIR_CHECK(find(&hash, "anything") == NULL);
}
