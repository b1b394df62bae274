#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_http.h"


/*
 * The request object and its one lifetime rule (docs/dev/lifetimes.md):
 * r->main->count references, one finalize exit, and freeing (log phase,
 * the protocol's request_done, which destroys r->pool) only when the
 * count drops to zero.
 */


/* r->http_state: which shared counter the request is in */
#define WEIR_HTTP_STATE_NONE     0
#define WEIR_HTTP_STATE_READING  1
#define WEIR_HTTP_STATE_WRITING  2


static weir_int_t weir_http_process_header(weir_http_request_t *r,
    weir_http_header_t *h, weir_uint_t offset);
static weir_int_t weir_http_process_unique_header(weir_http_request_t *r,
    weir_http_header_t *h, weir_uint_t offset);
static weir_int_t weir_http_process_host(weir_http_request_t *r,
    weir_http_header_t *h, weir_uint_t offset);
static weir_int_t weir_http_process_connection(weir_http_request_t *r,
    weir_http_header_t *h, weir_uint_t offset);
static weir_int_t weir_http_process_content_length(weir_http_request_t *r,
    weir_http_header_t *h, weir_uint_t offset);
static weir_int_t weir_http_process_transfer_encoding(
    weir_http_request_t *r, weir_http_header_t *h, weir_uint_t offset);
static weir_int_t weir_http_process_user_agent(weir_http_request_t *r,
    weir_http_header_t *h, weir_uint_t offset);
static weir_int_t weir_http_process_expect(weir_http_request_t *r,
    weir_http_header_t *h, weir_uint_t offset);
static weir_int_t weir_http_process_chained(weir_http_request_t *r,
    weir_http_header_t *h, weir_uint_t offset);

static void weir_http_terminate_request(weir_http_request_t *r,
    weir_int_t rc);
static void weir_http_terminate_handler(weir_event_t *ev);
static void weir_http_finalize_connection(weir_http_request_t *r);
static void weir_http_writer(weir_http_request_t *r);
static void weir_http_set_request_state(weir_http_request_t *r,
    weir_uint_t state);
static unsigned char *weir_http_log_error(weir_log_t *log,
    unsigned char *buf, size_t len);
static weir_int_t weir_http_token_eq(unsigned char *p, size_t len,
    const char *token);


#define WEIR_HTTP_HIN(field)  offsetof(weir_http_headers_in_t, field)

#define WEIR_HTTP_HBH   WEIR_HTTP_HDR_F_HOP_BY_HOP
#define WEIR_HTTP_ONE   WEIR_HTTP_HDR_F_SINGLE
#define WEIR_HTTP_LST   WEIR_HTTP_HDR_F_LIST

/*
 * Indexed by token: the entry for token T is weir_http_header_defs[T].
 * Headers marked SINGLE are rejected with 400 when repeated, because two
 * values would be read differently by different hops (request
 * smuggling) or make the request ambiguous.
 */
weir_http_header_def_t  weir_http_header_defs[] = {

    { weir_null_string, WEIR_HTTP_HDR_UNKNOWN, 0, NULL, 0 },

    { weir_string("Host"), WEIR_HTTP_HDR_HOST, WEIR_HTTP_ONE,
      weir_http_process_host, WEIR_HTTP_HIN(host) },

    { weir_string("Connection"), WEIR_HTTP_HDR_CONNECTION,
      WEIR_HTTP_HBH | WEIR_HTTP_LST,
      weir_http_process_connection, WEIR_HTTP_HIN(connection) },

    { weir_string("Keep-Alive"), WEIR_HTTP_HDR_KEEP_ALIVE, WEIR_HTTP_HBH,
      weir_http_process_header, WEIR_HTTP_HIN(keep_alive) },

    { weir_string("Content-Length"), WEIR_HTTP_HDR_CONTENT_LENGTH,
      WEIR_HTTP_ONE,
      weir_http_process_content_length, WEIR_HTTP_HIN(content_length) },

    { weir_string("Transfer-Encoding"), WEIR_HTTP_HDR_TRANSFER_ENCODING,
      WEIR_HTTP_HBH | WEIR_HTTP_ONE | WEIR_HTTP_LST,
      weir_http_process_transfer_encoding,
      WEIR_HTTP_HIN(transfer_encoding) },

    { weir_string("TE"), WEIR_HTTP_HDR_TE, WEIR_HTTP_HBH | WEIR_HTTP_LST,
      weir_http_process_header, WEIR_HTTP_HIN(te) },

    { weir_string("Trailer"), WEIR_HTTP_HDR_TRAILER,
      WEIR_HTTP_HBH | WEIR_HTTP_LST, NULL, 0 },

    { weir_string("Upgrade"), WEIR_HTTP_HDR_UPGRADE,
      WEIR_HTTP_HBH | WEIR_HTTP_LST,
      weir_http_process_header, WEIR_HTTP_HIN(upgrade) },

    { weir_string("Expect"), WEIR_HTTP_HDR_EXPECT, WEIR_HTTP_ONE,
      weir_http_process_expect, WEIR_HTTP_HIN(expect) },

    { weir_string("Proxy-Connection"), WEIR_HTTP_HDR_PROXY_CONNECTION,
      WEIR_HTTP_HBH, NULL, 0 },

    { weir_string("Proxy-Authorization"), WEIR_HTTP_HDR_PROXY_AUTHORIZATION,
      WEIR_HTTP_HBH, NULL, 0 },

    { weir_string("Proxy-Authenticate"), WEIR_HTTP_HDR_PROXY_AUTHENTICATE,
      WEIR_HTTP_HBH, NULL, 0 },

    { weir_string("User-Agent"), WEIR_HTTP_HDR_USER_AGENT, 0,
      weir_http_process_user_agent, WEIR_HTTP_HIN(user_agent) },

    { weir_string("Referer"), WEIR_HTTP_HDR_REFERER, 0,
      weir_http_process_header, WEIR_HTTP_HIN(referer) },

    { weir_string("Cookie"), WEIR_HTTP_HDR_COOKIE, 0,
      weir_http_process_chained, WEIR_HTTP_HIN(cookie) },

    { weir_string("Authorization"), WEIR_HTTP_HDR_AUTHORIZATION,
      WEIR_HTTP_ONE,
      weir_http_process_unique_header, WEIR_HTTP_HIN(authorization) },

    { weir_string("Content-Type"), WEIR_HTTP_HDR_CONTENT_TYPE, 0,
      weir_http_process_header, WEIR_HTTP_HIN(content_type) },

    { weir_string("Content-Encoding"), WEIR_HTTP_HDR_CONTENT_ENCODING,
      WEIR_HTTP_LST, NULL, 0 },

    { weir_string("Accept"), WEIR_HTTP_HDR_ACCEPT, WEIR_HTTP_LST, NULL, 0 },

    { weir_string("Accept-Encoding"), WEIR_HTTP_HDR_ACCEPT_ENCODING,
      WEIR_HTTP_LST,
      weir_http_process_header, WEIR_HTTP_HIN(accept_encoding) },

    { weir_string("Accept-Language"), WEIR_HTTP_HDR_ACCEPT_LANGUAGE,
      WEIR_HTTP_LST, NULL, 0 },

    { weir_string("If-Modified-Since"), WEIR_HTTP_HDR_IF_MODIFIED_SINCE,
      WEIR_HTTP_ONE,
      weir_http_process_unique_header, WEIR_HTTP_HIN(if_modified_since) },

    { weir_string("If-Unmodified-Since"), WEIR_HTTP_HDR_IF_UNMODIFIED_SINCE,
      WEIR_HTTP_ONE,
      weir_http_process_unique_header, WEIR_HTTP_HIN(if_unmodified_since) },

    /* lists (RFC 9110 13.1.1, 13.1.2): every line is chained, so that
     * a tag on the second line counts as much as one on the first */

    { weir_string("If-Match"), WEIR_HTTP_HDR_IF_MATCH, WEIR_HTTP_LST,
      weir_http_process_chained, WEIR_HTTP_HIN(if_match) },

    { weir_string("If-None-Match"), WEIR_HTTP_HDR_IF_NONE_MATCH,
      WEIR_HTTP_LST,
      weir_http_process_chained, WEIR_HTTP_HIN(if_none_match) },

    { weir_string("If-Range"), WEIR_HTTP_HDR_IF_RANGE, WEIR_HTTP_ONE,
      weir_http_process_unique_header, WEIR_HTTP_HIN(if_range) },

    { weir_string("Range"), WEIR_HTTP_HDR_RANGE, WEIR_HTTP_ONE,
      weir_http_process_unique_header, WEIR_HTTP_HIN(range) },

    { weir_string("X-Forwarded-For"), WEIR_HTTP_HDR_X_FORWARDED_FOR,
      WEIR_HTTP_LST,
      weir_http_process_chained, WEIR_HTTP_HIN(x_forwarded_for) },

    { weir_string("X-Real-IP"), WEIR_HTTP_HDR_X_REAL_IP, 0, NULL, 0 },

    { weir_string("Forwarded"), WEIR_HTTP_HDR_FORWARDED, WEIR_HTTP_LST,
      NULL, 0 },

    { weir_string("Via"), WEIR_HTTP_HDR_VIA, WEIR_HTTP_LST, NULL, 0 },

    { weir_string("Server"), WEIR_HTTP_HDR_SERVER, 0, NULL, 0 },

    { weir_string("Date"), WEIR_HTTP_HDR_DATE, 0, NULL, 0 },

    { weir_string("Location"), WEIR_HTTP_HDR_LOCATION, 0, NULL, 0 },

    { weir_string("Refresh"), WEIR_HTTP_HDR_REFRESH, 0, NULL, 0 },

    { weir_string("Last-Modified"), WEIR_HTTP_HDR_LAST_MODIFIED, 0,
      NULL, 0 },

    { weir_string("ETag"), WEIR_HTTP_HDR_ETAG, 0, NULL, 0 },

    { weir_string("Content-Range"), WEIR_HTTP_HDR_CONTENT_RANGE, 0,
      NULL, 0 },

    { weir_string("Accept-Ranges"), WEIR_HTTP_HDR_ACCEPT_RANGES,
      WEIR_HTTP_LST, NULL, 0 },

    { weir_string("WWW-Authenticate"), WEIR_HTTP_HDR_WWW_AUTHENTICATE, 0,
      NULL, 0 },

    { weir_string("Expires"), WEIR_HTTP_HDR_EXPIRES, 0, NULL, 0 },

    { weir_string("Cache-Control"), WEIR_HTTP_HDR_CACHE_CONTROL,
      WEIR_HTTP_LST, NULL, 0 },

    { weir_string("Vary"), WEIR_HTTP_HDR_VARY, WEIR_HTTP_LST, NULL, 0 },

    { weir_string("Set-Cookie"), WEIR_HTTP_HDR_SET_COOKIE, 0, NULL, 0 },

    { weir_string("Alt-Svc"), WEIR_HTTP_HDR_ALT_SVC, WEIR_HTTP_LST,
      NULL, 0 },

    { weir_null_string, WEIR_HTTP_HDR_LAST_, 0, NULL, 0 }
};


/*
 * The token lookup: an open-addressing table built on first use from
 * weir_http_header_defs[] (process-wide, read-only afterwards, so a fork
 * shares it). The hash is the one the parser computes over the
 * lowercased name (weir_hash), so a lookup costs one probe in practice.
 */

#define WEIR_HTTP_HDR_HASH_SIZE  256
#define WEIR_HTTP_HDR_NAME_MAX   32

/*
 * An open-addressing table of the interned names: a slot holds the token
 * and the full hash of its lowercase name, so a lookup compares names only
 * when the hashes are equal, and then against the lowercase copy.
 */
typedef struct {
    weir_uint_t    hash;
    weir_uint_t    token;
} weir_http_hdr_slot_t;

static weir_http_hdr_slot_t  weir_http_hdr_hash[WEIR_HTTP_HDR_HASH_SIZE];
static unsigned char  weir_http_hdr_lowcase[WEIR_HTTP_HDR_LAST_]
                                           [WEIR_HTTP_HDR_NAME_MAX];
static weir_uint_t    weir_http_hdr_hash_ready;


static void
weir_http_header_hash_init(void)
{
    size_t          i;
    weir_uint_t     t, key, slot;
    weir_str_t     *name;
    unsigned char  *low;

    for (t = 1; t < WEIR_HTTP_HDR_LAST_; t++) {
        name = &weir_http_header_defs[t].name;
        low = weir_http_hdr_lowcase[t];
        key = 0;

        /* the longest interned name is "Proxy-Authorization" */
        if (name->len > WEIR_HTTP_HDR_NAME_MAX) {
            continue;
        }

        for (i = 0; i < name->len; i++) {
            low[i] = weir_tolower(name->data[i]);
            key = weir_hash(key, low[i]);
        }

        slot = key % WEIR_HTTP_HDR_HASH_SIZE;

        while (weir_http_hdr_hash[slot].token) {
            slot = (slot + 1) % WEIR_HTTP_HDR_HASH_SIZE;
        }

        weir_http_hdr_hash[slot].hash = key;
        weir_http_hdr_hash[slot].token = t;
    }

    weir_http_hdr_hash_ready = 1;
}


weir_uint_t
weir_http_header_token(unsigned char *lowcase, size_t len, weir_uint_t hash)
{
    weir_uint_t            slot, n;
    weir_http_hdr_slot_t  *e;

    if (!weir_http_hdr_hash_ready) {
        weir_http_header_hash_init();
    }

    slot = hash % WEIR_HTTP_HDR_HASH_SIZE;

    for (n = 0; n < WEIR_HTTP_HDR_HASH_SIZE; n++) {
        e = &weir_http_hdr_hash[slot];

        if (e->token == 0) {
            return WEIR_HTTP_HDR_UNKNOWN;
        }

        if (e->hash == hash
            && weir_http_header_defs[e->token].name.len == len
            && weir_memcmp(weir_http_hdr_lowcase[e->token], lowcase, len)
               == 0)
        {
            return e->token;
        }

        slot = (slot + 1) % WEIR_HTTP_HDR_HASH_SIZE;
    }

    return WEIR_HTTP_HDR_UNKNOWN;
}


/* header handlers: WEIR_OK, or WEIR_ERROR after finalizing the request */

static weir_int_t
weir_http_process_header(weir_http_request_t *r, weir_http_header_t *h,
    weir_uint_t offset)
{
    weir_http_header_t  **ph;

    ph = (weir_http_header_t **) ((char *) &r->headers_in + offset);

    if (*ph == NULL) {
        *ph = h;
    }

    return WEIR_OK;
}


static weir_int_t
weir_http_process_chained(weir_http_request_t *r, weir_http_header_t *h,
    weir_uint_t offset)
{
    weir_http_header_t  **ph;

    ph = (weir_http_header_t **) ((char *) &r->headers_in + offset);

    while (*ph) {
        ph = &(*ph)->next;
    }

    *ph = h;
    h->next = NULL;

    return WEIR_OK;
}


static weir_int_t
weir_http_process_unique_header(weir_http_request_t *r,
    weir_http_header_t *h, weir_uint_t offset)
{
    weir_http_header_t  **ph;

    ph = (weir_http_header_t **) ((char *) &r->headers_in + offset);

    if (*ph == NULL) {
        *ph = h;
        return WEIR_OK;
    }

    weir_log_error(WEIR_LOG_INFO, r->connection->log, 0,
                   "client sent duplicate header line: \"%.*s: %.*s\", "
                   "previous value: \"%.*s: %.*s\"",
                   WEIR_STR_ARG(h->key), WEIR_STR_ARG(h->value),
                   WEIR_STR_ARG((*ph)->key), WEIR_STR_ARG((*ph)->value));

    r->keepalive = 0;
    weir_http_finalize_request(r, WEIR_HTTP_BAD_REQUEST);

    return WEIR_ERROR;
}


static weir_int_t
weir_http_process_host(weir_http_request_t *r, weir_http_header_t *h,
    weir_uint_t offset)
{
    weir_int_t   rc;
    weir_str_t   host;

    (void) offset;

    if (r->headers_in.host) {
        weir_log_error(WEIR_LOG_INFO, r->connection->log, 0,
                       "client sent duplicate host header: \"%.*s: %.*s\", "
                       "previous value: \"%.*s: %.*s\"",
                       WEIR_STR_ARG(h->key), WEIR_STR_ARG(h->value),
                       WEIR_STR_ARG(r->headers_in.host->key),
                       WEIR_STR_ARG(r->headers_in.host->value));

        r->keepalive = 0;
        weir_http_finalize_request(r, WEIR_HTTP_BAD_REQUEST);
        return WEIR_ERROR;
    }

    r->headers_in.host = h;

    host = h->value;

    rc = weir_http_validate_host(&host, r->pool, 0);

    if (rc == WEIR_DECLINED) {
        weir_log_error(WEIR_LOG_INFO, r->connection->log, 0,
                       "client sent invalid host header");
        r->keepalive = 0;
        weir_http_finalize_request(r, WEIR_HTTP_BAD_REQUEST);
        return WEIR_ERROR;
    }

    if (rc == WEIR_ERROR) {
        weir_http_close_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return WEIR_ERROR;
    }

    /* the absolute-form target names the authority and wins over Host
     * (RFC 9112, 3.2.2) */
    if (r->headers_in.server.len == 0) {
        r->headers_in.server = host;
    }

    return WEIR_OK;
}


static weir_int_t
weir_http_process_connection(weir_http_request_t *r, weir_http_header_t *h,
    weir_uint_t offset)
{
    unsigned char  *p, *last, *start;

    if (weir_http_process_chained(r, h, offset) != WEIR_OK) {
        return WEIR_ERROR;
    }

    p = h->value.data;
    last = p + h->value.len;

    while (p < last) {

        while (p < last && (*p == ' ' || *p == '\t' || *p == ',')) {
            p++;
        }

        start = p;

        while (p < last && *p != ',' && *p != ' ' && *p != '\t') {
            p++;
        }

        if (p == start) {
            continue;
        }

        if (weir_http_token_eq(start, p - start, "close")) {
            r->headers_in.connection_type = WEIR_HTTP_CONNECTION_CLOSE;

        } else if (weir_http_token_eq(start, p - start, "keep-alive")) {
            if (r->headers_in.connection_type != WEIR_HTTP_CONNECTION_CLOSE)
            {
                r->headers_in.connection_type =
                                              WEIR_HTTP_CONNECTION_KEEP_ALIVE;
            }
        }

        /* "upgrade" and other tokens only name hop-by-hop headers */
    }

    return WEIR_OK;
}


static weir_int_t
weir_http_process_content_length(weir_http_request_t *r,
    weir_http_header_t *h, weir_uint_t offset)
{
    off_t   n;
    size_t  i;

    (void) offset;

    if (r->headers_in.content_length) {
        /* a repeated Content-Length, even with the same value, is how
         * smuggling attempts look: refuse it */
        weir_log_error(WEIR_LOG_INFO, r->connection->log, 0,
                       "client sent duplicate \"Content-Length\" header");
        goto invalid;
    }

    r->headers_in.content_length = h;

    for (i = 0; i < h->value.len; i++) {
        if (h->value.data[i] < '0' || h->value.data[i] > '9') {
            break;
        }
    }

    n = (h->value.len && i == h->value.len)
        ? weir_atoof(h->value.data, h->value.len) : -1;

    if (n < 0) {
        weir_log_error(WEIR_LOG_INFO, r->connection->log, 0,
                       "client sent invalid \"Content-Length\" header");
        goto invalid;
    }

    r->headers_in.content_length_n = n;

    return WEIR_OK;

invalid:

    r->keepalive = 0;
    weir_http_finalize_request(r, WEIR_HTTP_BAD_REQUEST);

    return WEIR_ERROR;
}


/*
 * Only a single "chunked" coding is accepted. A list that ends with
 * "chunked" but applies other codings before it is well-formed but not
 * supported (501); a list whose final coding is not "chunked" leaves the
 * body length undefined and is rejected with 400 (RFC 9112, 6.3).
 */

static weir_int_t
weir_http_process_transfer_encoding(weir_http_request_t *r,
    weir_http_header_t *h, weir_uint_t offset)
{
    unsigned char  *p, *last, *start, *ltoken;
    size_t          llen;
    weir_uint_t     n, chunked;
    weir_int_t      status;

    (void) offset;

    status = WEIR_HTTP_BAD_REQUEST;

    if (r->headers_in.transfer_encoding) {
        weir_log_error(WEIR_LOG_INFO, r->connection->log, 0,
                       "client sent duplicate \"Transfer-Encoding\" header");
        goto invalid;
    }

    r->headers_in.transfer_encoding = h;

    p = h->value.data;
    last = p + h->value.len;
    n = 0;
    chunked = 0;
    ltoken = NULL;
    llen = 0;

    while (p < last) {

        while (p < last && (*p == ' ' || *p == '\t')) {
            p++;
        }

        start = p;

        while (p < last && *p != ',' && *p != ' ' && *p != '\t'
               && *p != ';')
        {
            p++;
        }

        if (p == start) {
            goto bad;
        }

        n++;
        ltoken = start;
        llen = p - start;

        if (weir_http_token_eq(start, llen, "chunked")) {
            chunked++;
        }

        while (p < last && (*p == ' ' || *p == '\t')) {
            p++;
        }

        if (p < last && *p == ';') {
            /* coding parameters: none is defined for what we accept */
            goto bad;
        }

        if (p < last) {
            if (*p != ',') {
                goto bad;
            }

            p++;

            if (p == last) {
                goto bad;
            }
        }
    }

    if (n == 0 || ltoken == NULL
        || !weir_http_token_eq(ltoken, llen, "chunked") || chunked > 1)
    {
        goto bad;
    }

    if (n > 1) {
        weir_log_error(WEIR_LOG_INFO, r->connection->log, 0,
                       "client sent unknown \"Transfer-Encoding\": \"%.*s\"",
                       WEIR_STR_ARG(h->value));
        status = WEIR_HTTP_NOT_IMPLEMENTED;
        goto invalid;
    }

    r->headers_in.chunked = 1;

    return WEIR_OK;

bad:

    weir_log_error(WEIR_LOG_INFO, r->connection->log, 0,
                   "client sent invalid \"Transfer-Encoding\": \"%.*s\"",
                   WEIR_STR_ARG(h->value));

invalid:

    r->keepalive = 0;
    weir_http_finalize_request(r, status);

    return WEIR_ERROR;
}


static weir_int_t
weir_http_process_user_agent(weir_http_request_t *r, weir_http_header_t *h,
    weir_uint_t offset)
{
    if (r->headers_in.user_agent) {
        return WEIR_OK;
    }

    r->headers_in.user_agent = h;

    (void) offset;

    if (h->value.len >= 5 && weir_strncasecmp(h->value.data,
                                              (unsigned char *) "curl/", 5)
                             == 0)
    {
        r->headers_in.curl = 1;
    }

    return WEIR_OK;
}


static weir_int_t
weir_http_process_expect(weir_http_request_t *r, weir_http_header_t *h,
    weir_uint_t offset)
{
    if (weir_http_process_unique_header(r, h, offset) != WEIR_OK) {
        return WEIR_ERROR;
    }

    if (weir_http_token_eq(h->value.data, h->value.len, "100-continue")) {
        /* answered only when the body is about to be read, and only to
         * HTTP/1.1 clients (an HTTP/1.0 client does not expect it) */
        if (r->http_version >= WEIR_HTTP_VERSION_11) {
            r->expect_continue = 1;
        }

        return WEIR_OK;
    }

    weir_log_error(WEIR_LOG_INFO, r->connection->log, 0,
                   "client sent unsupported expectation: \"%.*s\"",
                   WEIR_STR_ARG(h->value));

    weir_http_finalize_request(r, WEIR_HTTP_EXPECTATION_FAILED);

    return WEIR_ERROR;
}


static weir_int_t
weir_http_token_eq(unsigned char *p, size_t len, const char *token)
{
    size_t  n;

    n = strlen(token);

    return len == n && weir_strncasecmp(p, (unsigned char *) token, n) == 0;
}


/*
 * The accept handler of every HTTP listening socket: find the address
 * configuration this connection came in on, and hand the connection to
 * its protocol (HTTP/1 for now).
 */

void
weir_http_init_connection(weir_connection_t *c)
{
    weir_uint_t                  i;
    weir_http_port_t            *port;
    weir_http_addr_conf_t       *addr_conf;
    weir_http_connection_t      *hc;
    weir_http_core_main_conf_t  *cmcf;

    hc = weir_pcalloc(c->pool, sizeof(weir_http_connection_t));
    if (hc == NULL) {
        weir_http_close_connection(c);
        return;
    }

    c->data = hc;

    port = c->listening->servers;
    addr_conf = NULL;

    if (port == NULL || port->naddrs == 0) {
        weir_log_error(WEIR_LOG_ALERT, c->log, 0,
                       "listening socket without HTTP servers");
        weir_http_close_connection(c);
        return;
    }

    if (port->naddrs > 1) {

        /* a wildcard bind serves several addresses: the local address
         * of this connection picks the configuration */

        if (weir_connection_local_sockaddr(c) == NULL) {
            weir_http_close_connection(c);
            return;
        }

        for (i = 0; i < port->naddrs - 1; i++) {
            if (weir_cmp_sockaddr(c->local_sockaddr, c->local_socklen,
                                  (struct sockaddr *) &port->addrs[i],
                                  port->socklens[i], 0)
                == WEIR_OK)
            {
                break;
            }
        }

        /* the last one is the wildcard (or the only one that is left) */
        addr_conf = &port->confs[i];

    } else {
        addr_conf = &port->confs[0];
    }

    hc->addr_conf = addr_conf;
    hc->conf_ctx = addr_conf->default_server->ctx;

    if (weir_http_init_connection_log(c) != WEIR_OK) {
        weir_http_close_connection(c);
        return;
    }

    c->log->action = "waiting for request";

    if (addr_conf->ssl) {
        /* "listen ... ssl": the ssl module runs the handshake and hands
         * the connection to the protocol ALPN chose */
        hc->ssl = 1;

        cmcf = hc->conf_ctx->main_conf[weir_http_core_module.ctx_index];

        if (cmcf->ssl == NULL) {
            /* the configuration refuses it: cannot happen */
            weir_log_error(WEIR_LOG_ALERT, c->log, 0,
                           "a TLS address without the ssl module");
            weir_http_close_connection(c);
            return;
        }

        cmcf->ssl->init_connection(c);
        return;
    }

    weir_http_v1_init_connection(c);
}


/*
 * c->log gets the HTTP context (the client, and the request once there
 * is one) in c->pool. The accept handler calls it for a transport
 * connection; a protocol that runs a request on a connection object of
 * its own (an HTTP/2 stream) calls it for that one, whose c->log is its
 * own copy, so that the stream's log lines name the stream's request.
 */

weir_int_t
weir_http_init_connection_log(weir_connection_t *c)
{
    weir_http_log_ctx_t  *ctx;

    ctx = weir_palloc(c->pool, sizeof(weir_http_log_ctx_t));
    if (ctx == NULL) {
        return WEIR_ERROR;
    }

    ctx->connection = c;
    ctx->request = NULL;
    ctx->current_request = NULL;

    c->log->connection = c->number;
    c->log->handler = weir_http_log_error;
    c->log->data = ctx;

    c->log_error = 1;

    return WEIR_OK;
}


/*
 * A request on c for the transport connection hc. For HTTP/1, c is the
 * accepted connection and hc its c->data; for a multiplexed protocol c
 * is the stream's own connection object (c->data becomes the request)
 * and hc the transport's, shared by its streams: the request counts as
 * one of hc's (keepalive_requests, $connection_requests).
 */

weir_http_request_t *
weir_http_create_request(weir_connection_t *c, weir_http_connection_t *hc)
{
    weir_pool_t                 *pool;
    weir_http_request_t         *r;
    weir_http_log_ctx_t         *ctx;
    weir_http_core_srv_conf_t   *cscf;
    weir_http_core_main_conf_t  *cmcf;

    hc->requests++;

    cscf = hc->conf_ctx->srv_conf[weir_http_core_module.ctx_index];

    pool = weir_create_pool(cscf->request_pool_size, c->log);
    if (pool == NULL) {
        return NULL;
    }

    r = weir_pcalloc(pool, sizeof(weir_http_request_t));
    if (r == NULL) {
        weir_destroy_pool(pool);
        return NULL;
    }

    r->pool = pool;
    r->signature = WEIR_HTTP_REQUEST_SIGNATURE;
    r->connection = c;
    r->http_connection = hc;

    r->main_conf = hc->conf_ctx->main_conf;
    r->srv_conf = hc->conf_ctx->srv_conf;
    r->loc_conf = hc->conf_ctx->loc_conf;

    r->read_event_handler = weir_http_block_reading;
    r->write_event_handler = weir_http_request_empty_handler;

    /*
     * 8 entries, not 16: most requests and responses have fewer (a list
     * grows by parts of as many when they do not), and every entry is 64
     * bytes of the request's pool. Trailers are rare: their lists take
     * memory only when one comes.
     */

    if (weir_list_init(&r->headers_in.headers, r->pool, 8,
                       sizeof(weir_http_header_t))
        != WEIR_OK
        || weir_list_init(&r->headers_out.headers, r->pool, 8,
                          sizeof(weir_http_header_t))
           != WEIR_OK)
    {
        weir_destroy_pool(pool);
        return NULL;
    }

    weir_list_init_lazy(&r->headers_in.trailers, r->pool, 2,
                        sizeof(weir_http_header_t));
    weir_list_init_lazy(&r->headers_out.trailers, r->pool, 2,
                        sizeof(weir_http_header_t));

    r->ctx = weir_pcalloc(r->pool, sizeof(void *) * weir_http_max_module);
    if (r->ctx == NULL) {
        weir_destroy_pool(pool);
        return NULL;
    }

    cmcf = hc->conf_ctx->main_conf[weir_http_core_module.ctx_index];

    r->variables = weir_pcalloc(r->pool, cmcf->variables.nelts
                                         * sizeof(weir_http_variable_value_t)
                                         + 1);
    if (r->variables == NULL) {
        weir_destroy_pool(pool);
        return NULL;
    }

    ctx = weir_palloc(r->pool, sizeof(weir_http_log_ctx_t));
    if (ctx == NULL) {
        weir_destroy_pool(pool);
        return NULL;
    }

    ctx->connection = c;
    ctx->request = r;
    ctx->current_request = r;
    r->log_ctx = ctx;

    /* the connection's log context now names this request */
    if (c->log->data && c->log->handler == weir_http_log_error) {
        ((weir_http_log_ctx_t *) c->log->data)->request = r;
        ((weir_http_log_ctx_t *) c->log->data)->current_request = r;
    }

    r->main = r;
    r->count = 1;

    r->start_sec = weir_time();
    r->start_msec = weir_current_msec;

    r->method = WEIR_HTTP_UNKNOWN;
    r->http_version = WEIR_HTTP_VERSION_10;

    r->headers_in.content_length_n = -1;
    r->headers_in.keep_alive_n = -1;
    r->headers_out.content_length_n = -1;
    r->headers_out.last_modified_time = -1;

    if (c->ssl) {
        r->schema.len = sizeof("https") - 1;
        r->schema.data = (unsigned char *) "https";

    } else {
        r->schema.len = sizeof("http") - 1;
        r->schema.data = (unsigned char *) "http";
    }

    r->uri_changes = WEIR_HTTP_MAX_URI_CHANGES + 1;
    r->subrequests = 0;

    hc->request = r;

    if (weir_stat_requests) {
        (void) weir_atomic_fetch_add(weir_stat_requests, 1);
    }

    weir_http_set_request_state(r, WEIR_HTTP_STATE_READING);

    return r;
}


/* moves the request between the shared reading/writing counters */

static void
weir_http_set_request_state(weir_http_request_t *r, weir_uint_t state)
{
    if (r->http_state == state) {
        return;
    }

    if (r->http_state == WEIR_HTTP_STATE_READING && weir_stat_reading) {
        (void) weir_atomic_fetch_add(weir_stat_reading, -1);

    } else if (r->http_state == WEIR_HTTP_STATE_WRITING
               && weir_stat_writing)
    {
        (void) weir_atomic_fetch_add(weir_stat_writing, -1);
    }

    if (state == WEIR_HTTP_STATE_READING && weir_stat_reading) {
        (void) weir_atomic_fetch_add(weir_stat_reading, 1);

    } else if (state == WEIR_HTTP_STATE_WRITING && weir_stat_writing) {
        (void) weir_atomic_fetch_add(weir_stat_writing, 1);
    }

    r->http_state = state;
}


/* the head is read: from now on the request counts as "writing" */

void
weir_http_request_head_done(weir_http_request_t *r)
{
    weir_http_set_request_state(r, WEIR_HTTP_STATE_WRITING);
}


/*
 * The single exit of a request. rc:
 * - WEIR_DONE: the caller gave its reference back (e.g. a body reader
 *   that finished); drop it;
 * - WEIR_DECLINED: continue the phases with the content handler unset;
 * - WEIR_ERROR, 499, 444, or a broken connection: no response is
 *   possible; terminate;
 * - a status >= 300 (or 201, 204) not yet answered: the special response
 *   (error page) is sent, and its result finalizes the request again;
 * - WEIR_OK/WEIR_AGAIN/2xx: the response is under way; when output is
 *   still buffered the writer waits for the write event; otherwise the
 *   request is done and its own reference is dropped.
 */

void
weir_http_finalize_request(weir_http_request_t *r, weir_int_t rc)
{
    weir_connection_t  *c;

    c = r->connection;

    weir_log_debug(c->log, 0, "http finalize request: %d, \"%.*s?%.*s\"",
                   (int) rc, WEIR_STR_ARG(r->uri), WEIR_STR_ARG(r->args));

    if (rc == WEIR_DONE) {
        weir_http_close_request(r, 0);
        return;
    }

    if (r->main->terminated) {
        /* a terminate is pending: outer frames only unwind */
        return;
    }

    if (rc == WEIR_OK && r->filter_finalize) {
        c->error = 1;
    }

    if (rc == WEIR_ERROR && r->filter_finalize && r->err_status
        && r->header_sent && !c->error)
    {
        /* a filter replaced the response (a 412) and the replacement went
         * out: the WEIR_ERROR it gave back only stopped the original
         * handler, so finish it like any response rather than cut the
         * connection its header promised to keep; the writer's own
         * WEIR_OK later must not count as the original handler going on */
        r->filter_finalize = 0;
        rc = WEIR_OK;
    }

    if (rc == WEIR_DECLINED) {
        r->content_handler = NULL;
        r->write_event_handler = weir_http_core_run_phases;
        weir_http_core_run_phases(r);
        return;
    }

    if (rc == WEIR_ERROR
        || rc == WEIR_HTTP_CLIENT_CLOSED_REQUEST
        || rc == WEIR_HTTP_CLOSE
        || c->error)
    {
        if (rc > 0 && r->headers_out.status == 0) {
            r->headers_out.status = rc;
        }

        weir_http_terminate_request(r, rc);
        return;
    }

    if (rc >= WEIR_HTTP_SPECIAL_RESPONSE
        || rc == WEIR_HTTP_CREATED
        || rc == WEIR_HTTP_NO_CONTENT)
    {
        if (r->header_sent) {
            /* too late for an error page: the client sees a cut
             * response, which is what it is */
            weir_log_error(WEIR_LOG_INFO, c->log, 0,
                           "status %d after the response header was sent",
                           (int) rc);
            c->error = 1;
            weir_http_terminate_request(r, rc);
            return;
        }

        if (r->http_state == WEIR_HTTP_STATE_READING) {
            /* an error in the head: its framing is not to be trusted
             * (Content-Length with Transfer-Encoding...), so no body is
             * discarded by it; the request asks its protocol to close
             * the connection after the answer (r->keepalive) and to
             * expect unread input (r->lingering_close): HTTP/1 lingers
             * over it, a multiplexed protocol keeps its session */
            r->headers_in.content_length_n = -1;
            r->headers_in.chunked = 0;
            r->keepalive = 0;
            r->lingering_close = 1;
        }

        /* a background discard's timer is the protocol's: it stays */
        if (c->read->timer_set && !r->discard_body) {
            weir_event_del_timer(c->read);
        }

        if (c->write->timer_set) {
            weir_event_del_timer(c->write);
        }

        c->read->handler = weir_http_request_handler;
        c->write->handler = weir_http_request_handler;

        weir_http_finalize_request(r,
                                   weir_http_special_response_handler(r, rc));
        return;
    }

    if (r->buffered || c->buffered || r->out) {

        /* output is pending: the writer finishes it on write events */

        r->write_event_handler = weir_http_writer;

        if (!r->done) {
            r->done = 1;
        }

        if (c->write->ready && !c->write->delayed) {
            /* the next send may succeed at once: try it after this
             * pass rather than recursing */
            weir_post_event(c->write, &weir_posted_events);
        }

        return;
    }

    r->done = 1;
    r->response_sent = 1;
    r->write_event_handler = weir_http_request_empty_handler;

    /* a body still being discarded keeps its own read handler (and its
     * reference) */
    if (!r->discard_body && !r->reading_body) {
        r->read_event_handler = weir_http_block_reading;
    }

    weir_http_finalize_connection(r);
}


static void
weir_http_finalize_connection(weir_http_request_t *r)
{
    weir_connection_t          *c;

    c = r->connection;

    /* a body being read or discarded keeps its timer (the protocol's) */
    if (c->read->timer_set && !r->discard_body && !r->reading_body) {
        weir_event_del_timer(c->read);
    }

    if (c->write->timer_set) {
        weir_event_del_timer(c->write);
    }

    weir_http_close_request(r, 0);
}


/* writes what is still buffered, then finalizes */

static void
weir_http_writer(weir_http_request_t *r)
{
    weir_int_t                  rc;
    weir_event_t               *wev;
    weir_connection_t          *c;
    weir_http_core_loc_conf_t  *clcf;

    c = r->connection;
    wev = c->write;

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    if (wev->timedout) {
        weir_log_error(WEIR_LOG_INFO, c->log, WEIR_ETIMEDOUT,
                       "client timed out");
        c->timedout = 1;
        c->error = 1;
        weir_http_finalize_request(r, WEIR_HTTP_REQUEST_TIME_OUT);
        return;
    }

    if (!wev->ready) {
        if (!wev->timer_set) {
            weir_event_add_timer(wev, clcf->send_timeout);
        }

        if (weir_handle_write_event(wev, clcf->send_lowat) != WEIR_OK) {
            weir_http_close_request(r, 0);
        }

        return;
    }

    rc = weir_http_output_filter(r, NULL);

    if (r->buffered || c->buffered || r->out) {
        if (rc == WEIR_ERROR) {
            c->error = 1;
            weir_http_finalize_request(r, WEIR_ERROR);
            return;
        }

        if (!wev->delayed) {
            weir_event_add_timer(wev, clcf->send_timeout);
        }

        if (weir_handle_write_event(wev, clcf->send_lowat) != WEIR_OK) {
            weir_http_close_request(r, 0);
        }

        return;
    }

    r->write_event_handler = weir_http_request_empty_handler;

    weir_http_finalize_request(r, rc == WEIR_AGAIN ? WEIR_OK : rc);
}


/*
 * Nothing more will be sent: drop all references at once (the body
 * reader, timers and the protocol's own hold); the connection is closed
 * by request_done because c->error or r->keepalive == 0 says so.
 *
 * The request is not freed here but from a posted event: the caller may
 * sit deep in a nested run of the phases (an error_page or index
 * internal redirect) whose outer frames still use r and give their own
 * reference back with WEIR_DONE when they unwind.
 */

static void
weir_http_terminate_request(weir_http_request_t *r, weir_int_t rc)
{
    weir_connection_t    *c;
    weir_http_request_t  *mr;

    mr = r->main;
    c = mr->connection;

    mr->keepalive = 0;
    mr->terminated = 1;

    if (rc > 0 && (mr->headers_out.status == 0 || c->sent == 0)) {
        mr->headers_out.status = rc;
    }

    mr->read_event_handler = weir_http_block_reading;
    mr->write_event_handler = weir_http_request_empty_handler;

    c->write->handler = weir_http_terminate_handler;
    weir_post_event(c->write, &weir_posted_events);
}


static void
weir_http_terminate_handler(weir_event_t *ev)
{
    weir_connection_t    *c;
    weir_http_request_t  *r;

    c = ev->data;
    r = c->data;

    r->main->count = 1;

    weir_http_close_request(r, 0);
}


void
weir_http_close_request(weir_http_request_t *r, weir_int_t rc)
{
    weir_connection_t  *c;

    r = r->main;
    c = r->connection;

    if (r->count == 0) {
        weir_log_error(WEIR_LOG_ALERT, c->log, 0,
                       "http request count is zero");
    }

    r->count--;

    if (r->count || r->blocked) {
        return;
    }

    weir_http_free_request(r, rc);
}


/*
 * Frees a request whose count is zero: the log phase runs once, then the
 * protocol's request_done takes what it must keep (pipelined bytes,
 * keep-alive or close) and destroys r->pool: r is invalid after it.
 */

void
weir_http_free_request(weir_http_request_t *r, weir_int_t rc)
{
    weir_connection_t       *c;
    weir_http_log_ctx_t     *ctx;
    weir_http_connection_t  *hc;

    c = r->connection;

    if (r->pool == NULL) {
        weir_log_error(WEIR_LOG_ALERT, c->log, 0,
                       "http request already closed");
        return;
    }

    if (rc > 0 && (r->headers_out.status == 0 || c->sent == 0)) {
        r->headers_out.status = rc;
    }

    if (!r->logged) {
        r->logged = 1;
        c->log->action = "logging request";
        weir_http_run_log_handlers(r);
        c->log->action = NULL;
    }

    weir_http_set_request_state(r, WEIR_HTTP_STATE_NONE);

    /* the connection's log must not name a freed request */
    ctx = c->log->data;

    if (ctx && c->log->handler == weir_http_log_error) {
        ctx->request = NULL;
        ctx->current_request = NULL;
    }

    hc = r->http_connection;

    if (hc && hc->request == r) {
        hc->request = NULL;
    }

    r->signature = 0;

    /* freed before a pending terminate ran: it must not find c->data */
    if (c->write->posted && c->write->handler == weir_http_terminate_handler)
    {
        weir_delete_posted_event(c->write);
    }

    if (r->proto && r->proto->request_done) {
        r->proto->request_done(r, rc);
        return;
    }

    weir_destroy_pool(r->pool);
}


/* the connection's read and write events while a request owns it */

void
weir_http_request_handler(weir_event_t *ev)
{
    weir_connection_t    *c;
    weir_http_request_t  *r;

    c = ev->data;
    r = c->data;

    if (c->close) {
        /* the worker reclaims connections (shutdown or shortage) */
        weir_http_terminate_request(r, 0);
        return;
    }

    if (ev->write) {
        r->write_event_handler(r);

    } else {
        r->read_event_handler(r);
    }

    weir_http_run_posted_requests(c);
}


/*
 * No subrequests yet: nothing is posted. Kept so that callers already
 * follow the rule "after an event handler, run the posted requests".
 */

void
weir_http_run_posted_requests(weir_connection_t *c)
{
    (void) c;
}


void
weir_http_request_empty_handler(weir_http_request_t *r)
{
    (void) r;
}


/* stop level-triggered read events while nobody reads the body */

void
weir_http_block_reading(weir_http_request_t *r)
{
    weir_event_t  *rev;

    rev = r->connection->read;

    /* a connection without a socket (a stream) registers nothing */
    if ((weir_event_flags & WEIR_USE_LEVEL_EVENT) && rev->active
        && r->connection->fd != (weir_fd_t) -1)
    {
        if (weir_del_event(rev, WEIR_READ_EVENT, 0) != WEIR_OK) {
            weir_http_close_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        }
    }
}


/*
 * While the response is produced (e.g. waiting for an upstream), a read
 * event means either more from the client (a pipelined request) or the
 * client leaving: the protocol tells them apart (r->proto->test_closed),
 * and a client that left ends the request with 499.
 */

void
weir_http_test_reading(weir_http_request_t *r)
{
    weir_int_t          rc;
    weir_err_t          err;
    weir_connection_t  *c;

    c = r->connection;
    err = 0;

    rc = r->proto->test_closed(r, &err);

    if (rc == WEIR_OK) {
        return;
    }

    if (rc != WEIR_DONE) {
        weir_http_close_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    c->error = 1;

    weir_log_error(WEIR_LOG_INFO, c->log, err,
                   "client prematurely closed connection");

    weir_http_finalize_request(r, WEIR_HTTP_CLIENT_CLOSED_REQUEST);
}


/* ", client: ..., server: ..., request: "...", host: "..."" */

static unsigned char *
weir_http_log_error(weir_log_t *log, unsigned char *buf, size_t len)
{
    unsigned char               *p, *last;
    weir_http_request_t         *r;
    weir_http_log_ctx_t         *ctx;
    weir_http_upstream_t        *u;
    weir_http_core_srv_conf_t   *cscf;

    ctx = log->data;
    p = buf;
    last = buf + len;

    if (ctx == NULL || ctx->connection == NULL) {
        return p;
    }

    p = weir_slprintf(p, last, ", client: %.*s",
                      WEIR_STR_ARG(ctx->connection->addr_text));

    r = ctx->request;

    if (r == NULL || r->signature != WEIR_HTTP_REQUEST_SIGNATURE) {
        return p;
    }

    if (r->srv_conf) {
        cscf = r->srv_conf[weir_http_core_module.ctx_index];

        if (cscf && cscf->server_name.len) {
            p = weir_slprintf(p, last, ", server: %.*s",
                              WEIR_STR_ARG(cscf->server_name));
        }
    }

    if (r->request_line.len) {
        p = weir_slprintf(p, last, ", request: \"%.*s\"",
                          WEIR_STR_ARG(r->request_line));
    }

    u = r->upstream;

    if (u && u->peer.name && u->peer.name->len) {
        p = weir_slprintf(p, last, ", upstream: \"%.*s%.*s%.*s\"",
                          WEIR_STR_ARG(u->schema), WEIR_STR_ARG(*u->peer.name),
                          WEIR_STR_ARG(u->uri));
    }

    if (r->headers_in.host) {
        p = weir_slprintf(p, last, ", host: \"%.*s\"",
                          WEIR_STR_ARG(r->headers_in.host->value));
    }

    return p;
}
