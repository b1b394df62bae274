#include "weir_http_mitm.h"

#include <sys/stat.h>
#include <fcntl.h>
#include <openssl/pem.h>

/*
 * mitm_certificate_store PATH [slots=N]: the leaves minted, on disk, so
 * that a restart does not mint them again. An entry is what the shared
 * zone holds of a name (weir_http_mitm_shared.c): the leaf in DER, the
 * origin's ALPN choice and what the look at it learnt, keyed by (name,
 * port, SHA-256 of the CA); and the SHA-256 of the public key the leaf
 * is for. It lives in one of N slots, weir_http_mitm_hash() % N, in
 * PATH/<slot / 256>/<slot> (hex): a name that falls on a taken slot
 * replaces its entry. So the store never holds more than N entries, of
 * a few kilobytes at most each (WEIR_HTTP_MITM_STORE_MAX).
 *
 * The one key of all the leaves is PATH/leaf.key (PEM, 0600), made on
 * the first start and read by the master at each configuration: a leaf
 * is of no use without it. A new shared zone takes it; a zone that a
 * reload kept has its own, and the entries made for another key are
 * skipped.
 *
 * The workers read an entry (one open() and read() of a small file) on
 * a miss of their caches, and write one (to a temporary file in the
 * slot's directory, renamed over the entry) after a mint. That is
 * blocking disk I/O in the event loop, accepted as nginx does for small
 * files. A file that is not an entry (truncated, changed, another
 * version: its SHA-256 at the end says) is skipped with a warning, one
 * for another name (a slot shared), another key, an expired leaf or
 * another verification setting at debug; each is replaced at the next
 * mint.
 *
 * An entry, integers in network order:
 *
 *     0   8  "weirMLF1"
 *     8   2  port
 *    10   1  the origin's ALPN choice (WEIR_HTTP_MITM_ALPN_*)
 *    11   1  1: the origin was verified
 *    12   8  expires (seconds since the epoch)
 *    20  32  SHA-256 of the CA's certificate
 *    52  32  SHA-256 of the leaf's public key (SubjectPublicKeyInfo)
 *    84   2  length of the name
 *    86   2  length of the look's information (weir_http_mitm_look_info)
 *    88   4  length of the leaf's DER
 *    92      the name, the information, the DER
 *       32  SHA-256 of all the bytes before it
 */


#define WEIR_HTTP_MITM_STORE_MAGIC     "weirMLF1"
#define WEIR_HTTP_MITM_STORE_HEAD      92
#define WEIR_HTTP_MITM_STORE_MAX       65536
#define WEIR_HTTP_MITM_STORE_SLOTS     16384
#define WEIR_HTTP_MITM_STORE_MIN       16
#define WEIR_HTTP_MITM_STORE_LIMIT     16777216
/* "/0000/00000000" and ".<pid>.tmp" */
#define WEIR_HTTP_MITM_STORE_NAME      (sizeof("/0000/00000000..tmp") + 20)


static weir_int_t weir_http_mitm_store_key(weir_conf_t *cf,
    weir_http_mitm_store_t *store, EVP_PKEY **key);
static void weir_http_mitm_store_free_key(void *data);
static weir_int_t weir_http_mitm_key_fingerprint(EVP_PKEY *key,
    unsigned char *md);
static weir_uint_t weir_http_mitm_store_slot(weir_http_mitm_store_t *store,
    weir_http_mitm_cert_t *e);
static void weir_http_mitm_store_name(weir_http_mitm_store_t *store,
    weir_uint_t slot);
static weir_fd_t weir_http_mitm_store_create(weir_http_mitm_store_t *store,
    weir_log_t *log);


/* one entry read or written at a time: the worker is one thread */
static unsigned char  weir_http_mitm_store_buf[WEIR_HTTP_MITM_STORE_MAX];


static void
weir_http_mitm_put16(unsigned char *p, weir_uint_t n)
{
    p[0] = (unsigned char) (n >> 8);
    p[1] = (unsigned char) n;
}


static void
weir_http_mitm_put32(unsigned char *p, uint32_t n)
{
    weir_http_mitm_put16(p, n >> 16);
    weir_http_mitm_put16(p + 2, n & 0xffff);
}


static weir_uint_t
weir_http_mitm_get16(const unsigned char *p)
{
    return ((weir_uint_t) p[0] << 8) | p[1];
}


static uint32_t
weir_http_mitm_get32(const unsigned char *p)
{
    return ((uint32_t) weir_http_mitm_get16(p) << 16)
           | (uint32_t) weir_http_mitm_get16(p + 2);
}


/* mitm_certificate_store PATH [slots=N] | off */

char *
weir_http_mitm_store_directive(weir_conf_t *cf, weir_command_t *cmd,
    void *conf)
{
    size_t                       len;
    EVP_PKEY                    *key;
    weir_int_t                   n;
    weir_str_t                  *value, path;
    weir_uint_t                  i, slots;
    struct stat                  st;
    weir_pool_cleanup_t         *cln;
    weir_http_mitm_store_t      *store;
    weir_http_mitm_main_conf_t  *mmcf = conf;

    (void) cmd;

    if (mmcf->store != WEIR_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (weir_str_eq_lit(&value[1], "off")) {
        if (cf->args->nelts > 2) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid parameter \"%.*s\" after \"off\"",
                                WEIR_STR_ARG(value[2]));
            return WEIR_CONF_ERROR;
        }

        mmcf->store = NULL;
        return WEIR_CONF_OK;
    }

    slots = WEIR_HTTP_MITM_STORE_SLOTS;

    for (i = 2; i < cf->args->nelts; i++) {
        len = sizeof("slots=") - 1;

        if (value[i].len <= len
            || weir_strncmp(value[i].data, "slots=", len) != 0)
        {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid parameter \"%.*s\" (use "
                                "slots=N)", WEIR_STR_ARG(value[i]));
            return WEIR_CONF_ERROR;
        }

        n = weir_atoi(value[i].data + len, value[i].len - len);

        if (n == WEIR_ERROR || n < WEIR_HTTP_MITM_STORE_MIN
            || n > WEIR_HTTP_MITM_STORE_LIMIT)
        {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid \"%.*s\" (a number of slots from "
                                "%d to %d)", WEIR_STR_ARG(value[i]),
                                WEIR_HTTP_MITM_STORE_MIN,
                                WEIR_HTTP_MITM_STORE_LIMIT);
            return WEIR_CONF_ERROR;
        }

        slots = (weir_uint_t) n;
    }

    path = value[1];

    while (path.len > 1 && path.data[path.len - 1] == '/') {
        path.len--;
    }

    if (path.len == 0) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "empty mitm_certificate_store path");
        return WEIR_CONF_ERROR;
    }

    if (weir_conf_full_name(cf->cycle, &path, 0) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    if (mkdir((char *) path.data, 0700) == -1 && errno != EEXIST) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, weir_errno,
                            "mkdir() \"%.*s\" failed", WEIR_STR_ARG(path));
        return WEIR_CONF_ERROR;
    }

    if (stat((char *) path.data, &st) == -1) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, weir_errno,
                            "stat() \"%.*s\" failed", WEIR_STR_ARG(path));
        return WEIR_CONF_ERROR;
    }

    if (!S_ISDIR(st.st_mode)) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "mitm_certificate_store \"%.*s\" is not a "
                            "directory", WEIR_STR_ARG(path));
        return WEIR_CONF_ERROR;
    }

    store = weir_pcalloc(cf->pool, sizeof(weir_http_mitm_store_t));
    if (store == NULL) {
        return WEIR_CONF_ERROR;
    }

    store->path = path;
    store->slots = slots;
    store->file = weir_pnalloc(cf->pool, path.len + WEIR_HTTP_MITM_STORE_NAME);
    store->temp = weir_pnalloc(cf->pool, path.len + WEIR_HTTP_MITM_STORE_NAME);

    if (store->file == NULL || store->temp == NULL) {
        return WEIR_CONF_ERROR;
    }

    if (weir_http_mitm_store_key(cf, store, &key) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    cln = weir_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        EVP_PKEY_free(key);
        return WEIR_CONF_ERROR;
    }

    /* the one key of every leaf of this configuration (the merge of the
     * servers makes one only when there is no store) */
    mmcf->leaf_key = key;
    cln->handler = weir_http_mitm_store_free_key;
    cln->data = mmcf;

    mmcf->store = store;

    return WEIR_CONF_OK;
}


static void
weir_http_mitm_store_free_key(void *data)
{
    weir_http_mitm_main_conf_t  *mmcf = data;

    EVP_PKEY_free(mmcf->leaf_key);
    mmcf->leaf_key = NULL;
}


/*
 * PATH/leaf.key: read when it is there (refused when its group or
 * others may read it, as the CA's key is), else made (P-256) and written
 * 0600, created exclusively.
 */

static weir_int_t
weir_http_mitm_store_key(weir_conf_t *cf, weir_http_mitm_store_t *store,
    EVP_PKEY **key)
{
    int           fd;
    BIO          *bio;
    EVP_PKEY     *pkey;
    weir_str_t    k;
    struct stat   st;

    *key = NULL;

    if (weir_pstrfmt(cf->pool, &k, "%s/leaf.key", (char *) store->path.data)
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    /* (the directory is the workers' user's: no link is followed) */
    if (lstat((char *) k.data, &st) == 0) {
        if (!S_ISREG(st.st_mode)) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "the mitm leaf key \"%.*s\" is not a "
                                "regular file", WEIR_STR_ARG(k));
            return WEIR_ERROR;
        }

        if (st.st_mode & (S_IRWXG | S_IRWXO)) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "the mitm leaf key \"%.*s\" is readable by "
                                "others (mode %04o): make it 0600",
                                WEIR_STR_ARG(k),
                                (unsigned) (st.st_mode & 07777));
            return WEIR_ERROR;
        }

        fd = open((char *) k.data, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        bio = (fd != -1) ? BIO_new_fd(fd, BIO_CLOSE) : NULL;

        if (bio == NULL && fd != -1) {
            close(fd);
        }

        pkey = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
        BIO_free(bio);

        if (pkey == NULL) {
            ERR_clear_error();
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "cannot read the mitm leaf key \"%.*s\" "
                                "(delete it to make a new one)",
                                WEIR_STR_ARG(k));
            return WEIR_ERROR;
        }

        *key = pkey;
        return WEIR_OK;
    }

    if (errno != ENOENT) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, weir_errno,
                            "lstat() \"%.*s\" failed", WEIR_STR_ARG(k));
        return WEIR_ERROR;
    }

    pkey = weir_http_mitm_leaf_key(cf->log);
    if (pkey == NULL) {
        return WEIR_ERROR;
    }

    if (weir_http_mitm_write_key(cf, &k, pkey) != WEIR_OK) {
        EVP_PKEY_free(pkey);
        return WEIR_ERROR;
    }

    weir_log_error(WEIR_LOG_NOTICE, cf->log, 0,
                   "mitm created the leaf key \"%.*s\"", WEIR_STR_ARG(k));

    *key = pkey;
    return WEIR_OK;
}


/* the workers' user may write there (the master may be root) */

weir_int_t
weir_http_mitm_store_init(weir_cycle_t *cycle, weir_http_mitm_store_t *store)
{
    weir_core_conf_t  *ccf;

    ccf = (weir_core_conf_t *) weir_get_conf(cycle->conf_ctx,
                                             weir_core_module);

    if (geteuid() == 0 && ccf->user != (uid_t) WEIR_CONF_UNSET_UINT) {
        if (chown((char *) store->path.data, ccf->user, ccf->group) == -1) {
            weir_log_error(WEIR_LOG_EMERG, cycle->log, weir_errno,
                           "chown(\"%s\", %d) failed",
                           (char *) store->path.data, (int) ccf->user);
            return WEIR_ERROR;
        }
    }

    return WEIR_OK;
}


/* the SHA-256 of key's SubjectPublicKeyInfo */

static weir_int_t
weir_http_mitm_key_fingerprint(EVP_PKEY *key, unsigned char *md)
{
    int             len;
    unsigned char  *p, der[2048];

    len = i2d_PUBKEY(key, NULL);

    if (len <= 0 || len > (int) sizeof(der)) {
        return WEIR_ERROR;
    }

    p = der;

    if (i2d_PUBKEY(key, &p) != len
        || !EVP_Digest(der, (size_t) len, md, NULL, EVP_sha256(), NULL))
    {
        return WEIR_ERROR;
    }

    return WEIR_OK;
}


static weir_uint_t
weir_http_mitm_store_slot(weir_http_mitm_store_t *store,
    weir_http_mitm_cert_t *e)
{
    return weir_http_mitm_hash(&e->name, e->port, e->ca->fingerprint)
           % store->slots;
}


/* store->file and store->temp for slot */

static void
weir_http_mitm_store_name(weir_http_mitm_store_t *store, weir_uint_t slot)
{
    size_t  size;

    size = store->path.len + WEIR_HTTP_MITM_STORE_NAME;

    (void) weir_slprintf((unsigned char *) store->file,
                         (unsigned char *) store->file + size,
                         "%s/%04x/%08x", (char *) store->path.data,
                         (unsigned) (slot / 256), (unsigned) slot);
    (void) weir_slprintf((unsigned char *) store->temp,
                         (unsigned char *) store->temp + size,
                         "%s.%ld.tmp", store->file, (long) weir_pid);
}


X509 *
weir_http_mitm_store_get(weir_http_mitm_store_t *store,
    weir_http_mitm_cert_t *e, EVP_PKEY *key, weir_uint_t verify,
    weir_uint_t *alpn, char *info, weir_log_t *log)
{
    X509                 *leaf;
    size_t                n, name_len, info_len, der_len;
    time_t                expires;
    ssize_t               r;
    weir_uint_t           i;
    weir_fd_t             fd;
    const char           *why;
    unsigned char        *buf, *p;
    const unsigned char  *d;
    unsigned char         md[32], kmd[32];

    buf = weir_http_mitm_store_buf;

    weir_http_mitm_store_name(store, weir_http_mitm_store_slot(store, e));

    fd = open(store->file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

    if (fd == -1) {
        if (errno == ENOENT) {
            weir_log_debug(log, 0, "mitm store: nothing in \"%s\" for "
                           "\"%.*s\"", store->file, WEIR_STR_ARG(e->name));
        } else {
            weir_log_error(WEIR_LOG_ERR, log, weir_errno,
                           "open() \"%s\" failed", store->file);
        }

        return NULL;
    }

    /* a file longer than the buffer is no entry: reading it all is
     * enough to know (a short read only ends at the end of the file) */
    n = 0;
    r = 0;

    for ( ;; ) {
        r = read(fd, buf + n, WEIR_HTTP_MITM_STORE_MAX - n);

        if (r == -1 && errno == EINTR) {
            continue;
        }

        if (r <= 0) {
            break;
        }

        n += (size_t) r;

        if (n == WEIR_HTTP_MITM_STORE_MAX) {
            break;
        }
    }

    if (r == -1) {
        weir_log_error(WEIR_LOG_ERR, log, weir_errno,
                       "read() \"%s\" failed", store->file);
        close(fd);
        return NULL;
    }

    close(fd);

    why = NULL;

    if (n < WEIR_HTTP_MITM_STORE_HEAD + 32 || n == WEIR_HTTP_MITM_STORE_MAX
        || weir_memcmp(buf, WEIR_HTTP_MITM_STORE_MAGIC, 8) != 0)
    {
        why = "not an entry";
        goto corrupt;
    }

    if (!EVP_Digest(buf, n - 32, md, NULL, EVP_sha256(), NULL)
        || weir_memcmp(md, buf + n - 32, 32) != 0)
    {
        why = "its SHA-256 does not match";
        goto corrupt;
    }

    name_len = weir_http_mitm_get16(buf + 84);
    info_len = weir_http_mitm_get16(buf + 86);
    der_len = weir_http_mitm_get32(buf + 88);

    if (WEIR_HTTP_MITM_STORE_HEAD + name_len + info_len + der_len + 32 != n
        || info_len >= WEIR_HTTP_MITM_INFO
        || buf[10] > (WEIR_HTTP_MITM_ALPN_UNASKED | WEIR_HTTP_MITM_ALPN_HTTP11))
    {
        why = "bad lengths";
        goto corrupt;
    }

    p = buf + WEIR_HTTP_MITM_STORE_HEAD;

    if (weir_http_mitm_get16(buf + 8) != e->port || name_len != e->name.len
        || weir_memcmp(p, e->name.data, name_len) != 0
        || weir_memcmp(buf + 20, e->ca->fingerprint, 32) != 0)
    {
        weir_log_debug(log, 0, "mitm store: \"%s\" is for another name, "
                       "port or CA than \"%.*s\"", store->file,
                       WEIR_STR_ARG(e->name));
        return NULL;
    }

    expires = 0;

    for (i = 0; i < 8; i++) {
        expires = (time_t) (((uint64_t) expires << 8) | buf[12 + i]);
    }

    if (expires <= weir_time()) {
        weir_log_debug(log, 0, "mitm store: the leaf in \"%s\" has expired",
                       store->file);
        return NULL;
    }

    if ((weir_uint_t) buf[11] != (verify ? 1u : 0u)) {
        weir_log_debug(log, 0, "mitm store: \"%s\" was looked at with "
                       "verification %s", store->file,
                       buf[11] ? "on" : "off");
        return NULL;
    }

    if (weir_http_mitm_key_fingerprint(key, kmd) != WEIR_OK) {
        weir_ssl_error(WEIR_LOG_ERR, log, 0, "the leaves' public key cannot "
                       "be encoded");
        return NULL;
    }

    if (weir_memcmp(buf + 52, kmd, 32) != 0) {
        weir_log_debug(log, 0, "mitm store: \"%s\" is for another leaf key",
                       store->file);
        return NULL;
    }

    d = p + name_len + info_len;
    leaf = d2i_X509(NULL, &d, (long) der_len);

    if (leaf == NULL || d != p + name_len + info_len + der_len) {
        X509_free(leaf);
        ERR_clear_error();
        why = "no certificate";
        goto corrupt;
    }

    /* what the leaf itself is for, not the field alone */
    if (weir_http_mitm_key_fingerprint(X509_get0_pubkey(leaf), md)
            != WEIR_OK
        || weir_memcmp(md, kmd, 32) != 0)
    {
        X509_free(leaf);
        ERR_clear_error();
        weir_log_debug(log, 0, "mitm store: the leaf in \"%s\" is for "
                       "another key", store->file);
        return NULL;
    }

    weir_memcpy(info, p + name_len, info_len);
    info[info_len] = '\0';
    *alpn = buf[10];

    weir_log_debug(log, 0, "mitm store: \"%.*s\" from \"%s\"",
                   WEIR_STR_ARG(e->name), store->file);

    return leaf;

corrupt:

    weir_log_error(WEIR_LOG_WARN, log, 0,
                   "mitm store: \"%s\" is corrupt (%s), skipped",
                   store->file, why);
    return NULL;
}


weir_int_t
weir_http_mitm_store_put(weir_http_mitm_store_t *store,
    weir_http_mitm_cert_t *e, X509 *leaf, EVP_PKEY *key, weir_uint_t verify,
    weir_uint_t alpn, const char *info, weir_log_t *log)
{
    int             len;
    size_t          info_len, n, i;
    uint64_t        expires;
    weir_fd_t       fd;
    unsigned char  *buf, *p;

    buf = weir_http_mitm_store_buf;
    info_len = info ? weir_strlen(info) : 0;

    if (info_len >= WEIR_HTTP_MITM_INFO) {
        info_len = WEIR_HTTP_MITM_INFO - 1;
    }

    len = i2d_X509(leaf, NULL);

    if (len <= 0
        || WEIR_HTTP_MITM_STORE_HEAD + e->name.len + info_len + (size_t) len
           + 32 >= WEIR_HTTP_MITM_STORE_MAX)
    {
        weir_log_error(WEIR_LOG_INFO, log, 0, "mitm store: the leaf of "
                       "\"%.*s\" is too large to keep", WEIR_STR_ARG(e->name));
        return WEIR_ERROR;
    }

    weir_memcpy(buf, WEIR_HTTP_MITM_STORE_MAGIC, 8);
    weir_http_mitm_put16(buf + 8, e->port);
    buf[10] = (unsigned char) alpn;
    buf[11] = verify ? 1 : 0;

    expires = (uint64_t) weir_http_mitm_leaf_expires(leaf);

    for (i = 0; i < 8; i++) {
        buf[12 + i] = (unsigned char) (expires >> (56 - 8 * i));
    }

    weir_memcpy(buf + 20, e->ca->fingerprint, 32);

    if (weir_http_mitm_key_fingerprint(key, buf + 52) != WEIR_OK) {
        weir_ssl_error(WEIR_LOG_ERR, log, 0, "the leaves' public key cannot "
                       "be encoded");
        return WEIR_ERROR;
    }

    weir_http_mitm_put16(buf + 84, e->name.len);
    weir_http_mitm_put16(buf + 86, info_len);
    weir_http_mitm_put32(buf + 88, (uint32_t) len);

    p = weir_cpymem(buf + WEIR_HTTP_MITM_STORE_HEAD, e->name.data,
                    e->name.len);
    p = weir_cpymem(p, info, info_len);
    (void) i2d_X509(leaf, &p);

    n = (size_t) (p - buf);

    if (!EVP_Digest(buf, n, p, NULL, EVP_sha256(), NULL)) {
        weir_ssl_error(WEIR_LOG_ERR, log, 0, "EVP_Digest() failed");
        return WEIR_ERROR;
    }

    n += 32;

    weir_http_mitm_store_name(store, weir_http_mitm_store_slot(store, e));

    fd = weir_http_mitm_store_create(store, log);
    if (fd == -1) {
        return WEIR_ERROR;
    }

    if (weir_write_fd(fd, buf, n) != (ssize_t) n) {
        weir_log_error(WEIR_LOG_ERR, log, weir_errno,
                       "write() \"%s\" failed", store->temp);
        close(fd);
        goto failed;
    }

    if (close(fd) == -1) {
        weir_log_error(WEIR_LOG_ERR, log, weir_errno,
                       "close() \"%s\" failed", store->temp);
        goto failed;
    }

    if (rename(store->temp, store->file) == -1) {
        weir_log_error(WEIR_LOG_ERR, log, weir_errno,
                       "rename() \"%s\" to \"%s\" failed", store->temp,
                       store->file);
        goto failed;
    }

    weir_log_debug(log, 0, "mitm store: \"%.*s\" into \"%s\"",
                   WEIR_STR_ARG(e->name), store->file);

    return WEIR_OK;

failed:

    (void) unlink(store->temp);
    return WEIR_ERROR;
}


/* the temporary file of an entry, 0600; the slot's directory is made
 * on its first entry */

static weir_fd_t
weir_http_mitm_store_create(weir_http_mitm_store_t *store, weir_log_t *log)
{
    char        *slash;
    weir_fd_t    fd;
    weir_uint_t  tries;

    for (tries = 0; tries < 3; tries++) {
        fd = open(store->temp,
                  O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);

        if (fd != -1) {
            return fd;
        }

        if (errno == EEXIST) {
            /* left by a worker of this pid that died while writing */
            (void) unlink(store->temp);
            continue;
        }

        if (errno != ENOENT) {
            break;
        }

        slash = strrchr(store->temp, '/');
        *slash = '\0';

        if (mkdir(store->temp, 0700) == -1 && errno != EEXIST) {
            weir_log_error(WEIR_LOG_ERR, log, weir_errno,
                           "mkdir() \"%s\" failed", store->temp);
            *slash = '/';
            return -1;
        }

        *slash = '/';
    }

    weir_log_error(WEIR_LOG_ERR, log, weir_errno,
                   "open() \"%s\" failed", store->temp);

    return -1;
}
