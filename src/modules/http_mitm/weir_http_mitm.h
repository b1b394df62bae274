#ifndef _WEIR_HTTP_MITM_H_INCLUDED_
#define _WEIR_HTTP_MITM_H_INCLUDED_

/*
 * TLS interception in a forward proxy (docs/mitm.md, and
 * docs/dev/mitm.md for how it works). The files:
 *
 *   weir_http_mitm_module.c   directives, which CONNECTs are decrypted,
 *                             the client's handshake and what follows it
 *   weir_http_mitm_ca.c       the CA (loaded, or created on first start)
 *                             and the leaf certificates minted from it
 *   weir_http_mitm_key.c      the leaves' key in the form a certificate
 *                             takes fastest (OpenSSL 3.0)
 *   weir_http_mitm_origin.c   the per-worker certificate cache, and the
 *                             look at an origin (TLS, verification, its
 *                             names and ALPN choice) that fills it, once
 *                             for all the clients that wait for one name
 *   weir_http_mitm_shared.c   the cache shared by the workers
 *   weir_http_mitm_store.c    the leaves kept on disk across restarts
 *   weir_http_mitm_onboard.c  the onboarding page
 */

#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"
#include "weir_ssl.h"


#define WEIR_HTTP_MITM_ALPN_NONE    0
#define WEIR_HTTP_MITM_ALPN_HTTP11  1
#define WEIR_HTTP_MITM_ALPN_H2      2
/* or'ed to NONE or HTTP11: the look did not offer h2 (its client did
 * not), so whether the origin speaks it is not known */
#define WEIR_HTTP_MITM_ALPN_UNASKED 4
#define weir_http_mitm_alpn(a)      ((a) & 3)
/* may the origin speak h2: it chose it, or it was not asked */
#define weir_http_mitm_maybe_h2(a)                                           \
    ((a) == WEIR_HTTP_MITM_ALPN_H2 || ((a) & WEIR_HTTP_MITM_ALPN_UNASKED))

/* per worker; the shared cache is a later step (docs/mitm.md) */
#define WEIR_HTTP_MITM_CACHE_SIZE   1000
#define WEIR_HTTP_MITM_BUCKETS      1024
/* how long an origin that failed verification is remembered */
#define WEIR_HTTP_MITM_FAIL_TTL     30
#define WEIR_HTTP_MITM_MAX_NAME     253
/* what a look learnt, as one string (weir_http_mitm_look_info) */
#define WEIR_HTTP_MITM_INFO         512
/* did that look find the origin wanting? (a reason first) */
#define weir_http_mitm_failed(info)                                          \
    ((info) != NULL && (info)[0] != '\0' && (info)[0] != '\n')
/* a look another worker started and has not ended after this many
 * seconds is taken over (that worker died, or lost it) */
#define WEIR_HTTP_MITM_LOOK_MAX     75
/* how often a worker looks whether another worker's look ended */
#define WEIR_HTTP_MITM_POLL         10

/* the counters of the caches, as stub_status and the log show them */
#define WEIR_HTTP_MITM_MINTED       0
#define WEIR_HTTP_MITM_SERVED       1
#define WEIR_HTTP_MITM_EVICTED      2
#define WEIR_HTTP_MITM_STORED       3   /* entries written to the store */
#define WEIR_HTTP_MITM_LOADED       4   /* leaves read from it, not minted */
#define WEIR_HTTP_MITM_COUNTS       5

/* counts[] from a holder of the five counters: a worker's main conf or
 * the shared zone's context, whose fields have the same names */
#define weir_http_mitm_get_counts(counts, from)                              \
    do {                                                                     \
        (counts)[WEIR_HTTP_MITM_MINTED] = (from)->minted;                    \
        (counts)[WEIR_HTTP_MITM_SERVED] = (from)->served;                    \
        (counts)[WEIR_HTTP_MITM_EVICTED] = (from)->evicted;                  \
        (counts)[WEIR_HTTP_MITM_STORED] = (from)->stored;                    \
        (counts)[WEIR_HTTP_MITM_LOADED] = (from)->loaded;                    \
    } while (0)

/* "from cache": served less minted, a leaf given without a mint for it */
#define weir_http_mitm_from_cache(counts)                                    \
    ((counts)[WEIR_HTTP_MITM_SERVED] > (counts)[WEIR_HTTP_MITM_MINTED]       \
     ? (counts)[WEIR_HTTP_MITM_SERVED] - (counts)[WEIR_HTTP_MITM_MINTED] : 0)

/* a certification authority: the certificate, its key, and the chain
 * sent after a leaf (the CA itself) */
typedef struct {
    X509                        *cert;
    EVP_PKEY                    *key;
    STACK_OF(X509)              *chain;
    weir_str_t                   path;          /* of the certificate */
    unsigned char                fingerprint[32];   /* SHA-256 */
} weir_http_mitm_ca_t;

/* mitm_certificate_cache shared:NAME:SIZE (weir_http_mitm_shared.c) */
typedef struct {
    weir_shm_zone_t             *shm_zone;
    EVP_PKEY                    *key;           /* decoded, per worker */
} weir_http_mitm_zone_t;

/* mitm_certificate_store PATH [slots=N] (weir_http_mitm_store.c) */
typedef struct {
    weir_str_t                   path;          /* full, NUL-terminated */
    weir_uint_t                  slots;
    char                        *file;          /* an entry's name */
    char                        *temp;          /* and its temporary one */
} weir_http_mitm_store_t;

/* a host pattern of mitm_hosts / mitm_bypass */
#define WEIR_HTTP_MITM_EXACT    0
#define WEIR_HTTP_MITM_SUFFIX   1       /* ".a.test": it and sub-names */
#define WEIR_HTTP_MITM_SUB      2       /* "*.a.test": sub-names only */
#define WEIR_HTTP_MITM_REGEX    3
#define WEIR_HTTP_MITM_CIDR     4

typedef struct {
    weir_uint_t                  type;
    weir_str_t                   name;          /* lowercase; the suffix
                                                   with its dot */
    weir_regex_t                *regex;
    weir_cidr_t                  cidr;
} weir_http_mitm_rule_t;

typedef struct weir_http_mitm_cert_s  weir_http_mitm_cert_t;
typedef struct weir_http_mitm_conn_s  weir_http_mitm_conn_t;

/*
 * What is known of one (name, port, CA): the leaf minted for it, the
 * origin's ALPN choice and its verdict; or, while pending, the look at
 * the origin under way and the clients waiting for it.
 */
struct weir_http_mitm_cert_s {
    weir_http_mitm_cert_t       *next;          /* in its bucket */
    weir_queue_t                 lru;
    uint32_t                     hash;
    weir_str_t                   name;
    in_port_t                    port;
    weir_http_mitm_ca_t         *ca;

    X509                        *leaf;
    const char                  *error;         /* the origin failed */
    time_t                       expires;
    weir_uint_t                  alpn;

    weir_queue_t                 waiters;       /* of weir_http_mitm_conn_t */
    /* another worker looks: polled, with a waiter's origin connection
     * kept in case the look comes to this worker after all */
    weir_event_t                 poll;
    weir_connection_t           *spare;
    weir_http_mitm_zone_t       *zone;
    struct weir_http_mitm_main_conf_s  *mmcf;
    char                         errbuf[WEIR_HTTP_MITM_INFO];
    unsigned                     pending:1;
};

typedef struct {
    weir_flag_t                  enable;
    weir_str_t                   certificate;
    weir_str_t                   certificate_key;
    weir_str_t                   ca_directory;
    weir_array_t                *hosts;         /* of rules; NULL: all */
    weir_array_t                *bypass;
    weir_msec_t                  handshake_timeout;
    weir_http_mitm_zone_t       *zone;          /* NULL: per worker */
    weir_str_t                   onboarding;    /* the page's host, or "" */
    weir_str_t                   ca_pem;        /* its downloads */
    weir_str_t                   ca_der;
    char                         ca_fingerprint[32 * 3 + 1];

    weir_http_mitm_ca_t         *ca;
    weir_ssl_t                   ssl;           /* the clients' side */
} weir_http_mitm_srv_conf_t;

typedef struct weir_http_mitm_main_conf_s {
    EVP_PKEY                    *leaf_key;      /* every leaf's: P-256 */
    weir_http_mitm_store_t      *store;         /* NULL: off */

    /* the certificate cache of this configuration, per worker */
    weir_http_mitm_cert_t      **buckets;
    weir_queue_t                 lru;           /* most recent first */
    weir_uint_t                  count;
    weir_uint_t                  minted;
    weir_uint_t                  served;        /* leaves given to clients:
                                                   less minted, from a
                                                   cache */
    weir_uint_t                  evicted;
    weir_uint_t                  stored;
    weir_uint_t                  loaded;
} weir_http_mitm_main_conf_t;

/*
 * One intercepted CONNECT, in the client connection's pool: from the
 * "200 Connection established" to the end of the client's handshake,
 * then the target of all its requests (hc->forward->data).
 */
struct weir_http_mitm_conn_s {
    weir_connection_t           *c;             /* the client's */
    weir_http_connection_t      *hc;
    weir_http_mitm_srv_conf_t   *mscf;
    weir_http_mitm_main_conf_t  *mmcf;
    weir_http_core_srv_conf_t   *cscf;          /* the CONNECT's server */

    weir_http_forward_target_t   target;
    weir_str_t                   host;          /* of the CONNECT */
    in_port_t                    port;
    weir_str_t                   preread;       /* sent after the head */

    /* the origin connection of the CONNECT (TCP, connected): looked at
     * when the name is not in the cache, else closed */
    weir_connection_t           *origin;
    weir_ssl_t                  *origin_ssl;    /* the forward context */
    EVP_PKEY                    *leaf_key;      /* of every leaf */
    weir_uint_t                  verify;
    weir_msec_t                  origin_timeout;

    weir_str_t                   sni;           /* the client's, or "" */
    weir_str_t                   alpn_offer;    /* wire form, copied */
    weir_str_t                   name;          /* what the leaf is for */

    weir_http_mitm_cert_t       *waiting;       /* the entry waited for */
    weir_queue_t                 queue;         /* in its waiters */
    X509                        *leaf;          /* given when it is done */
    weir_uint_t                  alpn;          /* the origin's choice */
    weir_str_t                   origin_subject;    /* as the look saw */
    weir_str_t                   origin_protocol;
    weir_str_t                   origin_cipher;

    unsigned                     hello:1;       /* ClientHello read */
    unsigned                     served:1;      /* the leaf went out */
    unsigned                     looked:1;      /* a wait ended */
};


/* weir_http_mitm_ca.c */
weir_http_mitm_ca_t *weir_http_mitm_load_ca(weir_conf_t *cf,
    weir_str_t *cert, weir_str_t *key);
weir_http_mitm_ca_t *weir_http_mitm_create_ca(weir_conf_t *cf,
    weir_str_t *dir);
EVP_PKEY *weir_http_mitm_leaf_key(weir_log_t *log);
/* key into path (a new file, 0600; a partial one removed), logged */
weir_int_t weir_http_mitm_write_key(weir_conf_t *cf, weir_str_t *path,
    EVP_PKEY *key);
/* until when a cache may serve leaf: a day before its notAfter */
time_t weir_http_mitm_leaf_expires(X509 *leaf);
/* a leaf for name (an IP literal becomes an iPAddress SAN), carrying
 * the DNS and IP names of origin (may be NULL); NULL on failure
 * (logged) */
X509 *weir_http_mitm_mint(weir_http_mitm_ca_t *ca, EVP_PKEY *key,
    weir_str_t *name, X509 *origin, weir_log_t *log);
void weir_http_mitm_free_ca(void *data);

/* weir_http_mitm_key.c: key, or a copy of it that a certificate takes
 * faster (OpenSSL 3.0), for X509_set_pubkey */
EVP_PKEY *weir_http_mitm_pubkey(EVP_PKEY *key);

/* weir_http_mitm_shared.c */
char *weir_http_mitm_cache_directive(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
EVP_PKEY *weir_http_mitm_shared_key(weir_http_mitm_zone_t *zone,
    weir_log_t *log);
weir_int_t weir_http_mitm_shared_get(weir_http_mitm_zone_t *zone,
    weir_http_mitm_conn_t *mc, X509 **leaf, const char **error);
/* loaded: the leaf came from the store, it was not minted */
void weir_http_mitm_shared_put(weir_http_mitm_zone_t *zone,
    weir_http_mitm_cert_t *e, X509 *leaf, weir_uint_t loaded,
    weir_uint_t counts[WEIR_HTTP_MITM_COUNTS]);
void weir_http_mitm_shared_served(weir_http_mitm_zone_t *zone);
void weir_http_mitm_shared_stored(weir_http_mitm_zone_t *zone);
/* the zone's counters, by the WEIR_HTTP_MITM_MINTED... indices */
void weir_http_mitm_shared_counts(weir_http_mitm_zone_t *zone,
    weir_uint_t counts[WEIR_HTTP_MITM_COUNTS]);

/* weir_http_mitm_store.c */
char *weir_http_mitm_store_directive(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
/* in the master, once the configuration is accepted */
weir_int_t weir_http_mitm_store_init(weir_cycle_t *cycle,
    weir_http_mitm_store_t *store);
/*
 * The leaf the store keeps for (e->name, e->port, e->ca), signed for
 * key and looked at with verify as given: NULL when there is none that
 * fits (logged at debug, or at warn for a corrupt file). *alpn and info
 * (WEIR_HTTP_MITM_INFO bytes) get what the look at the origin learnt.
 */
X509 *weir_http_mitm_store_get(weir_http_mitm_store_t *store,
    weir_http_mitm_cert_t *e, EVP_PKEY *key, weir_uint_t verify,
    weir_uint_t *alpn, char *info, weir_log_t *log);
/* writes the entry of a successful look (replacing what its slot had);
 * WEIR_ERROR: not written (logged) */
weir_int_t weir_http_mitm_store_put(weir_http_mitm_store_t *store,
    weir_http_mitm_cert_t *e, X509 *leaf, EVP_PKEY *key, weir_uint_t verify,
    weir_uint_t alpn, const char *info, weir_log_t *log);

/* weir_http_mitm_onboard.c */
weir_int_t weir_http_mitm_onboard_handler(weir_http_request_t *r);
weir_int_t weir_http_mitm_onboard_init(weir_conf_t *cf,
    weir_http_mitm_srv_conf_t *mscf);

/* weir_http_mitm_origin.c */
uint32_t weir_http_mitm_hash(weir_str_t *name, in_port_t port,
    const unsigned char *ca);
/*
 * The leaf for mc->name, now (WEIR_OK: mc->leaf, mc->alpn,
 * mc->target.error set), or WEIR_AGAIN: mc waits for the look at the
 * origin, and weir_ssl_handshake_resume(mc->c) follows, from the event
 * loop. WEIR_ERROR: nothing can be done (logged).
 */
weir_int_t weir_http_mitm_find(weir_http_mitm_conn_t *mc);
/* mc goes before its wait ended (its connection closes) */
void weir_http_mitm_forget(weir_http_mitm_conn_t *mc);
void weir_http_mitm_cache_free(weir_http_mitm_main_conf_t *mmcf);
/* c (an origin connection, idle) is kept at *slot until it is used */
void weir_http_mitm_hold_origin(weir_connection_t *c,
    weir_connection_t **slot);

extern weir_module_t  weir_http_mitm_module;

#endif /* _WEIR_HTTP_MITM_H_INCLUDED_ */
