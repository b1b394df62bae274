/*
 * The one file of the module that uses OpenSSL's deprecated EC_KEY API,
 * for speed: OpenSSL 3.0 puts the public half of a provider key into a
 * certificate (X509_set_pubkey) by encoding it with an OSSL_ENCODER and
 * decoding that again with an OSSL_DECODER, about 160 us on this kind of
 * machine, most of a mint; the same key held as a legacy EC_KEY is
 * encoded directly, in about 4 us. Every leaf carries the same key, so
 * its legacy copy is made once, when the key is first minted for, and
 * kept (with a reference to the key it copies, so that a key made later
 * at the same address is never taken for it).
 */

#define OPENSSL_SUPPRESS_DEPRECATED  1

#include "weir_http_mitm.h"

#include <openssl/ec.h>


EVP_PKEY *
weir_http_mitm_pubkey(EVP_PKEY *key)
{
    EC_KEY           *ec;
    EVP_PKEY         *legacy;
    static EVP_PKEY  *of, *copy;

    if (key == of) {
        return copy;
    }

    if (EVP_PKEY_get_base_id(key) != EVP_PKEY_EC) {
        /* not the leaves' P-256 key: as it is */
        return key;
    }

    ec = EVP_PKEY_get1_EC_KEY(key);
    if (ec == NULL) {
        goto plain;
    }

    legacy = EVP_PKEY_new();

    if (legacy == NULL || !EVP_PKEY_assign_EC_KEY(legacy, ec)) {
        EC_KEY_free(ec);
        EVP_PKEY_free(legacy);
        goto plain;
    }

    /* legacy owns ec now */

    if (!EVP_PKEY_up_ref(key)) {
        EVP_PKEY_free(legacy);
        goto plain;
    }

    EVP_PKEY_free(of);
    EVP_PKEY_free(copy);

    of = key;
    copy = legacy;

    return copy;

plain:

    ERR_clear_error();
    return key;
}
