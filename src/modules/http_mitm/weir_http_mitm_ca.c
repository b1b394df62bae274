#include "weir_http_mitm.h"

#include <sys/stat.h>
#include <fcntl.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

/*
 * The interception CA and the leaves minted from it. The CA is the
 * operator's (mitm_certificate / mitm_certificate_key, PEM, RSA or EC)
 * or one weir makes on its first start in mitm_ca_directory and keeps
 * there (weir-ca.pem, weir-ca.key 0600). Its key must not be readable
 * by anyone but its owner: whoever holds it can read every intercepted
 * connection. Each load logs the path and the SHA-256 fingerprint, so
 * that the operator can check what a client was told to trust.
 *
 * Leaves: one P-256 key per configuration for all of them, a random
 * 128-bit serial, valid from a day before now (clock skew) for 365 days
 * (browsers take at most 398), the names of the origin's certificate and
 * the name the client asked for as subjectAltName (the CN repeats the
 * first name, for old clients).
 */


#define WEIR_HTTP_MITM_LEAF_DAYS   365
#define WEIR_HTTP_MITM_CA_DAYS     3650
#define WEIR_HTTP_MITM_BACKDATE    86400


static weir_int_t weir_http_mitm_check_key_mode(weir_conf_t *cf,
    weir_str_t *key);
static void weir_http_mitm_log_ca(weir_conf_t *cf, weir_http_mitm_ca_t *ca,
    const char *what);
static weir_http_mitm_ca_t *weir_http_mitm_ca_alloc(weir_conf_t *cf,
    X509 *cert, EVP_PKEY *key, weir_str_t *path);
static weir_int_t weir_http_mitm_add_ext(X509 *cert, X509 *issuer, int nid,
    const char *value);
static weir_int_t weir_http_mitm_random_serial(X509 *cert);


static void
weir_http_mitm_conf_ssl_error(weir_conf_t *cf, const char *fmt,
    weir_str_t *name)
{
    unsigned long  e;
    char           buf[256];

    e = ERR_peek_last_error();
    buf[0] = '\0';

    if (e) {
        ERR_error_string_n(e, buf, sizeof(buf));
    }

    ERR_clear_error();

    weir_conf_log_error(WEIR_LOG_EMERG, cf, 0, fmt, WEIR_STR_ARG(*name),
                        buf[0] ? buf : "no reason given");
}


weir_http_mitm_ca_t *
weir_http_mitm_load_ca(weir_conf_t *cf, weir_str_t *cert, weir_str_t *key)
{
    BIO                  *bio;
    X509                 *x;
    EVP_PKEY             *pkey;
    weir_str_t            c, k;
    weir_http_mitm_ca_t  *ca;

    c = *cert;
    k = *key;

    if (weir_conf_full_name(cf->cycle, &c, 1) != WEIR_OK
        || weir_conf_full_name(cf->cycle, &k, 1) != WEIR_OK)
    {
        return NULL;
    }

    if (weir_http_mitm_check_key_mode(cf, &k) != WEIR_OK) {
        return NULL;
    }

    bio = BIO_new_file((char *) c.data, "r");
    if (bio == NULL) {
        weir_http_mitm_conf_ssl_error(cf, "cannot read mitm_certificate "
                                      "\"%.*s\" (%s)", &c);
        return NULL;
    }

    x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
    BIO_free(bio);

    if (x == NULL) {
        weir_http_mitm_conf_ssl_error(cf, "no certificate in "
                                      "mitm_certificate \"%.*s\" (%s)", &c);
        return NULL;
    }

    bio = BIO_new_file((char *) k.data, "r");
    if (bio == NULL) {
        X509_free(x);
        weir_http_mitm_conf_ssl_error(cf, "cannot read mitm_certificate_key "
                                      "\"%.*s\" (%s)", &k);
        return NULL;
    }

    pkey = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    BIO_free(bio);

    if (pkey == NULL) {
        X509_free(x);
        weir_http_mitm_conf_ssl_error(cf, "no key in mitm_certificate_key "
                                      "\"%.*s\" (%s)", &k);
        return NULL;
    }

    if (X509_check_private_key(x, pkey) != 1) {
        X509_free(x);
        EVP_PKEY_free(pkey);
        weir_http_mitm_conf_ssl_error(cf, "mitm_certificate_key \"%.*s\" "
                                      "is not the key of the certificate "
                                      "(%s)", &k);
        return NULL;
    }

    if (X509_check_ca(x) == 0) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0, "mitm_certificate "
                            "\"%.*s\" is not a CA certificate",
                            WEIR_STR_ARG(c));
        X509_free(x);
        EVP_PKEY_free(pkey);
        return NULL;
    }

    ca = weir_http_mitm_ca_alloc(cf, x, pkey, &c);

    if (ca) {
        weir_http_mitm_log_ca(cf, ca, "uses");
    }

    return ca;
}


/* a key file anyone but its owner can read is refused */

static weir_int_t
weir_http_mitm_check_key_mode(weir_conf_t *cf, weir_str_t *key)
{
    struct stat  st;

    if (stat((char *) key->data, &st) == -1) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, weir_errno,
                            "stat() \"%.*s\" failed", WEIR_STR_ARG(*key));
        return WEIR_ERROR;
    }

    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "the interception CA key \"%.*s\" is readable "
                            "by others (mode %04o): make it 0600",
                            WEIR_STR_ARG(*key),
                            (unsigned) (st.st_mode & 07777));
        return WEIR_ERROR;
    }

    return WEIR_OK;
}


/*
 * The CA of mitm_ca_directory: loaded when it is there, else made (a
 * P-256 key, "CN=weir interception CA", ten years) and written there,
 * the key 0600 and created exclusively.
 */

weir_http_mitm_ca_t *
weir_http_mitm_create_ca(weir_conf_t *cf, weir_str_t *dir)
{
    BIO                  *bio;
    X509                 *x;
    EVP_PKEY             *pkey;
    X509_NAME            *name;
    weir_str_t            d, c, k;
    weir_http_mitm_ca_t  *ca;

    d = *dir;

    if (weir_conf_full_name(cf->cycle, &d, 0) != WEIR_OK) {
        return NULL;
    }

    /* NUL-terminated, as weir_pstrfmt makes them */
    if (weir_pstrfmt(cf->pool, &c, "%.*s/weir-ca.pem", WEIR_STR_ARG(d))
            != WEIR_OK
        || weir_pstrfmt(cf->pool, &k, "%.*s/weir-ca.key", WEIR_STR_ARG(d))
           != WEIR_OK)
    {
        return NULL;
    }

    if (access((char *) c.data, F_OK) == 0) {
        return weir_http_mitm_load_ca(cf, &c, &k);
    }

    if (mkdir((char *) d.data, 0700) == -1 && errno != EEXIST) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, weir_errno,
                            "mkdir() \"%.*s\" failed", WEIR_STR_ARG(d));
        return NULL;
    }

    pkey = EVP_EC_gen("P-256");
    x = X509_new();

    if (pkey == NULL || x == NULL) {
        goto failed;
    }

    if (!X509_set_version(x, 2)
        || weir_http_mitm_random_serial(x) != WEIR_OK
        || X509_gmtime_adj(X509_getm_notBefore(x),
                           -WEIR_HTTP_MITM_BACKDATE) == NULL
        || X509_gmtime_adj(X509_getm_notAfter(x),
                           (long) WEIR_HTTP_MITM_CA_DAYS * 86400) == NULL
        || !X509_set_pubkey(x, pkey))
    {
        goto failed;
    }

    name = X509_get_subject_name(x);

    if (!X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                                    (unsigned char *) "weir", -1, -1, 0)
        || !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                       (unsigned char *)
                                       "weir interception CA", -1, -1, 0)
        || !X509_set_issuer_name(x, name)
        || weir_http_mitm_add_ext(x, x, NID_basic_constraints,
                                  "critical,CA:TRUE,pathlen:0") != WEIR_OK
        || weir_http_mitm_add_ext(x, x, NID_key_usage,
                                  "critical,keyCertSign,cRLSign") != WEIR_OK
        || weir_http_mitm_add_ext(x, x, NID_subject_key_identifier, "hash")
           != WEIR_OK
        || X509_sign(x, pkey, EVP_sha256()) == 0)
    {
        goto failed;
    }

    if (weir_http_mitm_write_key(cf, &k, pkey) != WEIR_OK) {
        X509_free(x);
        EVP_PKEY_free(pkey);
        return NULL;
    }

    bio = BIO_new_file((char *) c.data, "w");

    if (bio == NULL || !PEM_write_bio_X509(bio, x)) {
        BIO_free(bio);
        goto failed;
    }

    BIO_free(bio);

    ca = weir_http_mitm_ca_alloc(cf, x, pkey, &c);

    if (ca) {
        weir_http_mitm_log_ca(cf, ca, "created");
    }

    return ca;

failed:

    X509_free(x);
    EVP_PKEY_free(pkey);
    weir_http_mitm_conf_ssl_error(cf, "cannot create the interception CA "
                                  "in \"%.*s\" (%s)", &d);
    return NULL;
}


/*
 * A private key written to a file that must not exist yet, 0600 from
 * its creation; a file left half written is removed. Logged.
 */

weir_int_t
weir_http_mitm_write_key(weir_conf_t *cf, weir_str_t *path, EVP_PKEY *key)
{
    int    fd;
    FILE  *fp;

    fd = open((char *) path->data, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
              0600);
    if (fd == -1) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, weir_errno,
                            "open() \"%.*s\" failed", WEIR_STR_ARG(*path));
        return WEIR_ERROR;
    }

    fp = fdopen(fd, "w");

    if (fp == NULL) {
        close(fd);
        goto failed;
    }

    if (!PEM_write_PrivateKey(fp, key, NULL, NULL, 0, NULL, NULL)) {
        fclose(fp);
        goto failed;
    }

    if (fclose(fp) != 0) {
        goto failed;
    }

    return WEIR_OK;

failed:

    weir_conf_log_error(WEIR_LOG_EMERG, cf, weir_errno,
                        "writing \"%.*s\" failed", WEIR_STR_ARG(*path));
    ERR_clear_error();
    (void) unlink((char *) path->data);
    return WEIR_ERROR;
}


static weir_http_mitm_ca_t *
weir_http_mitm_ca_alloc(weir_conf_t *cf, X509 *cert, EVP_PKEY *key,
    weir_str_t *path)
{
    weir_pool_cleanup_t  *cln;
    weir_http_mitm_ca_t  *ca;

    ca = weir_pcalloc(cf->pool, sizeof(weir_http_mitm_ca_t));
    cln = weir_pool_cleanup_add(cf->pool, 0);

    if (ca == NULL || cln == NULL) {
        X509_free(cert);
        EVP_PKEY_free(key);
        return NULL;
    }

    ca->cert = cert;
    ca->key = key;
    ca->path = *path;

    if (!X509_digest(cert, EVP_sha256(), ca->fingerprint, NULL)) {
        return NULL;
    }

    cln->handler = weir_http_mitm_free_ca;
    cln->data = ca;

    ca->chain = sk_X509_new_null();

    if (ca->chain == NULL || !sk_X509_push(ca->chain, cert)) {
        return NULL;
    }

    X509_up_ref(cert);

    return ca;
}


void
weir_http_mitm_free_ca(void *data)
{
    weir_http_mitm_ca_t  *ca = data;

    if (ca->chain) {
        sk_X509_pop_free(ca->chain, X509_free);
        ca->chain = NULL;
    }

    X509_free(ca->cert);
    EVP_PKEY_free(ca->key);
    ca->cert = NULL;
    ca->key = NULL;
}


static void
weir_http_mitm_log_ca(weir_conf_t *cf, weir_http_mitm_ca_t *ca,
    const char *what)
{
    unsigned int    i, n;
    unsigned char   md[EVP_MAX_MD_SIZE];
    unsigned char   hex[EVP_MAX_MD_SIZE * 3 + 1], *p;

    if (!X509_digest(ca->cert, EVP_sha256(), md, &n)) {
        return;
    }

    p = hex;

    for (i = 0; i < n; i++) {
        p = weir_slprintf(p, hex + sizeof(hex), i ? ":%02X" : "%02X",
                          (unsigned) md[i]);
    }

    weir_log_error(WEIR_LOG_NOTICE, cf->log, 0,
                   "mitm %s the interception CA \"%.*s\", SHA-256 "
                   "fingerprint %.*s", what, WEIR_STR_ARG(ca->path),
                   (int) (p - hex), hex);
}


EVP_PKEY *
weir_http_mitm_leaf_key(weir_log_t *log)
{
    EVP_PKEY  *pkey;

    pkey = EVP_EC_gen("P-256");

    if (pkey == NULL) {
        weir_ssl_error(WEIR_LOG_EMERG, log, 0, "EVP_EC_gen() failed");
    }

    return pkey;
}


time_t
weir_http_mitm_leaf_expires(X509 *leaf)
{
    int  day, sec;

    if (!ASN1_TIME_diff(&day, &sec, NULL, X509_get0_notAfter(leaf))) {
        ERR_clear_error();
        return weir_time();
    }

    return weir_time() + (time_t) day * 86400 + sec - WEIR_HTTP_MITM_BACKDATE;
}


static weir_int_t
weir_http_mitm_random_serial(X509 *cert)
{
    BIGNUM        *bn;
    ASN1_INTEGER  *serial;
    unsigned char  buf[16];

    if (RAND_bytes(buf, sizeof(buf)) != 1) {
        return WEIR_ERROR;
    }

    buf[0] &= 0x7f;     /* positive */
    buf[0] |= 0x01;     /* and 16 bytes long */

    bn = BN_bin2bn(buf, sizeof(buf), NULL);
    if (bn == NULL) {
        return WEIR_ERROR;
    }

    serial = X509_get_serialNumber(cert);

    if (BN_to_ASN1_INTEGER(bn, serial) == NULL) {
        BN_free(bn);
        return WEIR_ERROR;
    }

    BN_free(bn);

    return WEIR_OK;
}


static weir_int_t
weir_http_mitm_add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX       ctx;
    X509_EXTENSION  *ext;

    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);

    ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (ext == NULL) {
        return WEIR_ERROR;
    }

    if (!X509_add_ext(cert, ext, -1)) {
        X509_EXTENSION_free(ext);
        return WEIR_ERROR;
    }

    X509_EXTENSION_free(ext);

    return WEIR_OK;
}


/* adds name (an IP literal: iPAddress) to names unless it is there */

static weir_int_t
weir_http_mitm_add_name(GENERAL_NAMES *names, weir_str_t *name)
{
    int              i, type;
    char             buf[WEIR_HTTP_MITM_MAX_NAME + 1];
    GENERAL_NAME    *gn;
    ASN1_STRING     *s;
    ASN1_OCTET_STRING  *ip;

    if (name->len == 0 || name->len > WEIR_HTTP_MITM_MAX_NAME) {
        return WEIR_OK;
    }

    weir_memcpy(buf, name->data, name->len);
    buf[name->len] = '\0';

    ip = a2i_IPADDRESS(buf);
    ERR_clear_error();

    type = ip ? GEN_IPADD : GEN_DNS;

    for (i = 0; i < sk_GENERAL_NAME_num(names); i++) {
        gn = sk_GENERAL_NAME_value(names, i);

        if (gn->type != type) {
            continue;
        }

        s = (type == GEN_DNS) ? gn->d.dNSName : gn->d.iPAddress;

        if (type == GEN_DNS
            && (size_t) ASN1_STRING_length(s) == name->len
            && weir_strncasecmp((unsigned char *) ASN1_STRING_get0_data(s),
                                name->data, name->len) == 0)
        {
            return WEIR_OK;
        }

        if (type == GEN_IPADD && ASN1_STRING_cmp(s, ip) == 0) {
            ASN1_OCTET_STRING_free(ip);
            return WEIR_OK;
        }
    }

    gn = GENERAL_NAME_new();
    if (gn == NULL) {
        ASN1_OCTET_STRING_free(ip);
        return WEIR_ERROR;
    }

    if (ip) {
        GENERAL_NAME_set0_value(gn, GEN_IPADD, ip);

    } else {
        s = ASN1_IA5STRING_new();

        if (s == NULL || !ASN1_STRING_set(s, name->data, (int) name->len)) {
            ASN1_IA5STRING_free(s);
            GENERAL_NAME_free(gn);
            return WEIR_ERROR;
        }

        GENERAL_NAME_set0_value(gn, GEN_DNS, s);
    }

    if (!sk_GENERAL_NAME_push(names, gn)) {
        GENERAL_NAME_free(gn);
        return WEIR_ERROR;
    }

    return WEIR_OK;
}


X509 *
weir_http_mitm_mint(weir_http_mitm_ca_t *ca, EVP_PKEY *key, weir_str_t *name,
    X509 *origin, weir_log_t *log)
{
    int              i;
    X509            *x;
    X509_NAME       *subject;
    GENERAL_NAME    *gn, *copy;
    GENERAL_NAMES   *names, *from;
    weir_str_t       cn;

    x = X509_new();
    names = GENERAL_NAMES_new();

    if (x == NULL || names == NULL) {
        goto failed;
    }

    /* the origin's DNS and IP names, then the one asked for */

    from = origin ? X509_get_ext_d2i(origin, NID_subject_alt_name, NULL,
                                     NULL)
                  : NULL;

    for (i = 0; from && i < sk_GENERAL_NAME_num(from); i++) {
        gn = sk_GENERAL_NAME_value(from, i);

        if (gn->type != GEN_DNS && gn->type != GEN_IPADD) {
            continue;
        }

        copy = GENERAL_NAME_dup(gn);

        if (copy == NULL || !sk_GENERAL_NAME_push(names, copy)) {
            GENERAL_NAME_free(copy);
            GENERAL_NAMES_free(from);
            goto failed;
        }
    }

    GENERAL_NAMES_free(from);

    if (weir_http_mitm_add_name(names, name) != WEIR_OK) {
        goto failed;
    }

    cn = *name;

    if (cn.len > 64) {
        cn.len = 64;    /* the CN's upper bound; the SAN has it whole */
    }

    subject = X509_get_subject_name(x);

    if (!X509_set_version(x, 2)
        || weir_http_mitm_random_serial(x) != WEIR_OK
        || X509_gmtime_adj(X509_getm_notBefore(x),
                           -WEIR_HTTP_MITM_BACKDATE) == NULL
        || X509_gmtime_adj(X509_getm_notAfter(x),
                           (long) WEIR_HTTP_MITM_LEAF_DAYS * 86400) == NULL
        || !X509_set_pubkey(x, weir_http_mitm_pubkey(key))
        || (cn.len
            && !X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8,
                                           cn.data, (int) cn.len, -1, 0))
        || !X509_set_issuer_name(x, X509_get_subject_name(ca->cert))
        || !X509_add1_ext_i2d(x, NID_subject_alt_name, names, 0, 0)
        || weir_http_mitm_add_ext(x, ca->cert, NID_basic_constraints,
                                  "critical,CA:FALSE") != WEIR_OK
        || weir_http_mitm_add_ext(x, ca->cert, NID_key_usage,
                                  "critical,digitalSignature") != WEIR_OK
        || weir_http_mitm_add_ext(x, ca->cert, NID_ext_key_usage,
                                  "serverAuth") != WEIR_OK
        || weir_http_mitm_add_ext(x, ca->cert, NID_subject_key_identifier,
                                  "hash") != WEIR_OK
        || weir_http_mitm_add_ext(x, ca->cert, NID_authority_key_identifier,
                                  "keyid") != WEIR_OK
        || X509_sign(x, ca->key, EVP_sha256()) == 0)
    {
        goto failed;
    }

    GENERAL_NAMES_free(names);

    return x;

failed:

    GENERAL_NAMES_free(names);
    X509_free(x);
    weir_ssl_error(WEIR_LOG_ALERT, log, 0,
                   "minting a certificate for \"%.*s\" failed",
                   WEIR_STR_ARG(*name));
    return NULL;
}
