#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"
#include "weir_unit.h"


/*
 * The HTTP/1.1 origin protocol handler (weir_http_upstream_v1.c). The
 * request side is checked byte for byte. The response side is parsed
 * whole, one byte at a time and split in two at every boundary, each
 * piece in an exactly sized heap copy (AddressSanitizer sees a read past
 * it), and every run must give the same trace. Body data goes through
 * the core's real weir_http_upstream_emit(): the views it appends to
 * u->out_bufs are read after each call.
 */


#define T_TRACE_SIZE  2048


typedef struct {
    char                   buf[T_TRACE_SIZE];
    size_t                 len;
} t_trace_t;


static void
t_add(t_trace_t *t, const char *fmt, ...)
{
    int      n;
    va_list  args;

    if (t->len >= sizeof(t->buf) - 1) {
        return;
    }

    va_start(args, fmt);
    n = vsnprintf(t->buf + t->len, sizeof(t->buf) - t->len, fmt, args);
    va_end(args);

    if (n > 0) {
        t->len += n;

        if (t->len > sizeof(t->buf) - 1) {
            t->len = sizeof(t->buf) - 1;
        }
    }
}


/* a request of a client, and its upstream object made by the core */

static weir_http_upstream_t *
t_upstream_pool(weir_pool_t *pool)
{
    weir_connection_t          *c;
    weir_http_request_t        *r;
    weir_http_upstream_t       *u;
    weir_http_upstream_conf_t  *conf;

    if (pool == NULL) {
        return NULL;
    }

    c = weir_pcalloc(pool, sizeof(weir_connection_t));
    r = weir_pcalloc(pool, sizeof(weir_http_request_t));
    conf = weir_pcalloc(pool, sizeof(weir_http_upstream_conf_t));

    if (c == NULL || r == NULL || conf == NULL) {
        return NULL;
    }

    c->log = weir_unit_log();
    c->pool = pool;

    r->pool = pool;
    r->connection = c;
    r->main = r;
    r->method = WEIR_HTTP_GET;
    r->http_version = WEIR_HTTP_VERSION_10;

    if (weir_http_upstream_create(r) != WEIR_OK) {
        return NULL;
    }

    u = r->upstream;
    u->conf = conf;
    u->proto = &weir_http_upstream_v1_proto;

    if (weir_list_init(&u->req.headers, pool, 4, sizeof(weir_http_header_t))
        != WEIR_OK)
    {
        return NULL;
    }

    u->req.method = WEIR_HTTP_GET;
    weir_str_set(&u->req.method_name, "GET");
    weir_str_set(&u->req.uri, "/a?b=c");
    weir_str_set(&u->req.authority, "origin:8080");
    weir_str_set(&u->req.scheme, "http");
    u->req.http_version = WEIR_HTTP_VERSION_11;
    u->request_sent = 1;

    return u;
}


static weir_http_upstream_t *
t_upstream(void)
{
    return t_upstream_pool(weir_unit_pool());
}


static weir_http_header_t *
t_header(weir_list_t *list, const char *key, const char *value)
{
    weir_http_header_t  *h;

    if (list->pool == NULL
        && weir_list_init(list, weir_unit_pool(), 4,
                          sizeof(weir_http_header_t))
           != WEIR_OK)
    {
        return NULL;
    }

    h = weir_list_push(list);
    if (h == NULL) {
        return NULL;
    }

    weir_memzero(h, sizeof(weir_http_header_t));
    h->hash = 1;
    h->key.data = (unsigned char *) key;
    h->key.len = strlen(key);
    h->value.data = (unsigned char *) value;
    h->value.len = strlen(value);

    return h;
}


/* the request head as a string, or "ERROR" */

static const char *
t_request(weir_http_upstream_t *u)
{
    size_t         len;
    char          *s;
    weir_buf_t    *b;
    weir_chain_t  *cl;

    if (u->proto->create_request(u) != WEIR_OK) {
        return "ERROR";
    }

    len = 0;

    for (cl = u->request_bufs; cl; cl = cl->next) {
        len += cl->buf->last - cl->buf->pos;
    }

    s = weir_pnalloc(u->request->pool, len + 1);
    if (s == NULL) {
        return "NOMEM";
    }

    len = 0;

    for (cl = u->request_bufs; cl; cl = cl->next) {
        b = cl->buf;
        memcpy(s + len, b->pos, b->last - b->pos);
        len += b->last - b->pos;
    }

    s[len] = '\0';

    return s;
}


WEIR_UNIT_TEST(http_upstream_v1_request)
{
    weir_http_header_t    *h;
    weir_http_upstream_t  *u;

    u = t_upstream();
    WEIR_REQUIRE(u != NULL);

    WEIR_REQUIRE(t_header(&u->req.headers, "Connection", "close"));
    WEIR_REQUIRE(t_header(&u->req.headers, "X-Empty", ""));
    h = t_header(&u->req.headers, "X-Deleted", "1");
    WEIR_REQUIRE(h);
    h->hash = 0;
    WEIR_REQUIRE(t_header(&u->req.headers, "host", "evil"));
    WEIR_REQUIRE(t_header(&u->req.headers, "Content-Length", "7"));
    WEIR_REQUIRE(t_header(&u->req.headers, "TRANSFER-ENCODING", "x"));
    WEIR_REQUIRE(t_header(&u->req.headers, "Accept", "*/*"));

    WEIR_CHECK_STR(t_request(u),
                   "GET /a?b=c HTTP/1.1\r\n"
                   "Host: origin:8080\r\n"
                   "Connection: close\r\n"
                   "Accept: */*\r\n"
                   "\r\n");
    WEIR_CHECK(u->request_bufs != NULL && u->request_bufs->next == NULL);

    /* HTTP/1.0, a body of known length */
    u = t_upstream();
    WEIR_REQUIRE(u != NULL);
    u->req.http_version = WEIR_HTTP_VERSION_10;
    u->req.method = WEIR_HTTP_POST;
    weir_str_set(&u->req.method_name, "POST");
    u->req.has_body = 1;
    u->req.body_length = 12345;

    WEIR_CHECK_STR(t_request(u),
                   "POST /a?b=c HTTP/1.0\r\n"
                   "Host: origin:8080\r\n"
                   "Content-Length: 12345\r\n"
                   "\r\n");

    /* a body of unknown length: chunked */
    u = t_upstream();
    WEIR_REQUIRE(u != NULL);
    u->req.method = WEIR_HTTP_PUT;
    weir_str_set(&u->req.method_name, "PUT");
    u->req.has_body = 1;
    u->req.body_length = -1;

    WEIR_CHECK_STR(t_request(u),
                   "PUT /a?b=c HTTP/1.1\r\n"
                   "Host: origin:8080\r\n"
                   "Transfer-Encoding: chunked\r\n"
                   "\r\n");

    /* ... which HTTP/1.0 cannot carry */
    u = t_upstream();
    WEIR_REQUIRE(u != NULL);
    u->req.http_version = WEIR_HTTP_VERSION_10;
    u->req.has_body = 1;
    u->req.body_length = -1;
    weir_unit_log_reset();

    WEIR_CHECK_STR(t_request(u), "ERROR");
    WEIR_CHECK(weir_unit_log_has("[alert]"));
    WEIR_CHECK(weir_unit_log_has("HTTP/1.0 upstream"));

    /* no body, a method that has one: "Content-Length: 0" */
    u = t_upstream();
    WEIR_REQUIRE(u != NULL);
    u->req.method = WEIR_HTTP_PATCH;
    weir_str_set(&u->req.method_name, "PATCH");

    WEIR_CHECK_STR(t_request(u),
                   "PATCH /a?b=c HTTP/1.1\r\n"
                   "Host: origin:8080\r\n"
                   "Content-Length: 0\r\n"
                   "\r\n");

    /* has_body with 0 bytes */
    u = t_upstream();
    WEIR_REQUIRE(u != NULL);
    u->req.has_body = 1;
    u->req.body_length = 0;

    WEIR_CHECK_STR(t_request(u),
                   "GET /a?b=c HTTP/1.1\r\n"
                   "Host: origin:8080\r\n"
                   "Content-Length: 0\r\n"
                   "\r\n");
}


WEIR_UNIT_TEST(http_upstream_v1_request_injection)
{
    weir_uint_t            i;
    weir_http_header_t    *h;
    weir_http_upstream_t  *u;

    static const struct {
        const char  *key;
        const char  *value;
        size_t       vlen;
        const char  *log;
    } bad[] = {
        { "X-A", "a\r\nX-Injected: 1", 0, "CR, LF or NUL" },
        { "X-A", "a\nb", 0, "CR, LF or NUL" },
        { "X-A", "a\rb", 0, "CR, LF or NUL" },
        { "X-A", "a\0b", 3, "CR, LF or NUL" },
        { "X-A\r\nX-B", "1", 0, "invalid header name" },
        { "X A", "1", 0, "invalid header name" },
        { "X-A:", "1", 0, "invalid header name" },
        { "", "1", 0, "invalid header name" },
    };

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        u = t_upstream();
        WEIR_REQUIRE(u != NULL);

        h = t_header(&u->req.headers, bad[i].key, bad[i].value);
        WEIR_REQUIRE(h);

        if (bad[i].vlen) {
            h->value.len = bad[i].vlen;
        }

        weir_unit_log_reset();

        if (!WEIR_CHECK_STR(t_request(u), "ERROR")) {
            printf("  case %lu\n", (unsigned long) i);
        }

        WEIR_CHECK(weir_unit_log_has("[error]"));
        WEIR_CHECK(weir_unit_log_has(bad[i].log));
    }

    /* the URI, the Host and the method */

    u = t_upstream();
    WEIR_REQUIRE(u != NULL);
    weir_str_set(&u->req.uri, "/a b");
    WEIR_CHECK_STR(t_request(u), "ERROR");

    u = t_upstream();
    WEIR_REQUIRE(u != NULL);
    weir_str_set(&u->req.uri, "/a\r\nX: 1");
    WEIR_CHECK_STR(t_request(u), "ERROR");

    u = t_upstream();
    WEIR_REQUIRE(u != NULL);
    weir_str_set(&u->req.uri, "");
    WEIR_CHECK_STR(t_request(u), "ERROR");

    u = t_upstream();
    WEIR_REQUIRE(u != NULL);
    weir_str_set(&u->req.authority, "a\r\nX: 1");
    weir_unit_log_reset();
    WEIR_CHECK_STR(t_request(u), "ERROR");
    WEIR_CHECK(weir_unit_log_has("invalid Host"));

    u = t_upstream();
    WEIR_REQUIRE(u != NULL);
    weir_str_set(&u->req.method_name, "GET /x");
    WEIR_CHECK_STR(t_request(u), "ERROR");
}


/* ---- request bodies ------------------------------------------------- */

static weir_buf_t *
t_mem(const char *s, weir_uint_t last)
{
    weir_buf_t  *b;

    b = weir_calloc_buf(weir_unit_pool());
    if (b == NULL) {
        return NULL;
    }

    b->pos = (unsigned char *) s;
    b->last = b->pos + strlen(s);
    b->start = b->pos;
    b->end = b->last;
    b->memory = 1;
    b->last_buf = last;

    return b;
}


static weir_chain_t *
t_chain(weir_buf_t *b1, weir_buf_t *b2, weir_buf_t *b3)
{
    weir_uint_t    i;
    weir_buf_t    *bufs[3];
    weir_chain_t  *head, **ll, *cl;

    bufs[0] = b1;
    bufs[1] = b2;
    bufs[2] = b3;

    head = NULL;
    ll = &head;

    for (i = 0; i < 3 && bufs[i]; i++) {
        cl = weir_alloc_chain_link(weir_unit_pool(), NULL);
        if (cl == NULL) {
            return NULL;
        }

        cl->buf = bufs[i];
        *ll = cl;
        ll = &cl->next;
    }

    *ll = NULL;

    return head;
}


/* the bytes of a chain; a file buffer is "[file:N]" */

static void
t_chain_text(t_trace_t *t, weir_chain_t *cl)
{
    weir_buf_t  *b;

    for ( /* void */ ; cl; cl = cl->next) {
        b = cl->buf;

        if (b->in_file && !weir_buf_in_memory(b)) {
            t_add(t, "[file:%lld]", (long long) (b->file_last - b->file_pos));

        } else {
            t_add(t, "%.*s", (int) (b->last - b->pos), (char *) b->pos);
        }

        if (b->last_buf) {
            t_add(t, "[last]");
        }
    }
}


WEIR_UNIT_TEST(http_upstream_v1_encode_length)
{
    weir_buf_t            *a, *b;
    weir_chain_t          *in, *out;
    weir_http_upstream_t  *u;

    u = t_upstream();
    WEIR_REQUIRE(u != NULL);
    u->req.has_body = 1;
    u->req.body_length = 5;
    WEIR_REQUIRE(t_request(u)[0] != 'E');

    a = t_mem("abc", 0);
    b = t_mem("de", 1);
    in = t_chain(a, b, NULL);
    WEIR_REQUIRE(in != NULL);

    out = NULL;
    WEIR_CHECK_INT(u->proto->encode_body(u, in, &out), WEIR_OK);
    WEIR_REQUIRE(out && out->next && out->next->next == NULL);
    /* the same buffers, not copies */
    WEIR_CHECK(out->buf == a);
    WEIR_CHECK(out->next->buf == b);

    /* anything after the end */
    weir_unit_log_reset();
    in = t_chain(t_mem("x", 0), NULL, NULL);
    WEIR_CHECK_INT(u->proto->encode_body(u, in, &out), WEIR_ERROR);
    WEIR_CHECK(weir_unit_log_has("client sent more body than Content-Length"));

    /* more than the length in one go */
    u = t_upstream();
    WEIR_REQUIRE(u != NULL);
    u->req.has_body = 1;
    u->req.body_length = 4;
    out = NULL;
    in = t_chain(t_mem("abc", 0), t_mem("de", 1), NULL);
    WEIR_CHECK_INT(u->proto->encode_body(u, in, &out), WEIR_ERROR);

    /* less */
    u = t_upstream();
    WEIR_REQUIRE(u != NULL);
    u->req.has_body = 1;
    u->req.body_length = 6;
    out = NULL;
    in = t_chain(t_mem("abc", 0), t_mem("de", 1), NULL);
    weir_unit_log_reset();
    WEIR_CHECK_INT(u->proto->encode_body(u, in, &out), WEIR_ERROR);
    WEIR_CHECK(weir_unit_log_has("request body ended after 5 of 6"));

    /* a retry frames the same body again */
    u = t_upstream();
    WEIR_REQUIRE(u != NULL);
    u->req.has_body = 1;
    u->req.body_length = 3;
    out = NULL;
    in = t_chain(t_mem("abc", 1), NULL, NULL);
    WEIR_CHECK_INT(u->proto->encode_body(u, in, &out), WEIR_OK);
    u->proto->reinit(u);
    out = NULL;
    WEIR_CHECK_INT(u->proto->encode_body(u, in, &out), WEIR_OK);
}


WEIR_UNIT_TEST(http_upstream_v1_encode_chunked)
{
    weir_buf_t            *f, *e;
    weir_chain_t          *in, *out, *cl, *frames;
    weir_http_header_t    *h;
    weir_http_request_t   *r;
    weir_http_upstream_t  *u;
    t_trace_t              t;

    u = t_upstream();
    WEIR_REQUIRE(u != NULL);
    r = u->request;
    u->req.method = WEIR_HTTP_POST;
    weir_str_set(&u->req.method_name, "POST");
    u->req.has_body = 1;
    u->req.body_length = -1;
    u->req.send_trailers = 1;
    WEIR_REQUIRE(t_request(u)[0] != 'E');

    WEIR_REQUIRE(t_header(&r->headers_in.trailers, "X-Sum", "abc"));
    WEIR_REQUIRE(t_header(&r->headers_in.trailers, "Content-Length", "3"));
    WEIR_REQUIRE(t_header(&r->headers_in.trailers, "connection", "x"));
    h = t_header(&r->headers_in.trailers, "Trailer", "x");
    WEIR_REQUIRE(h != NULL);
    h->token = WEIR_HTTP_HDR_TRAILER;
    WEIR_REQUIRE(t_header(&r->headers_in.trailers, "X-Two", "2 2"));

    /* two buffers: one chunk */
    out = NULL;
    in = t_chain(t_mem("hello", 0), t_mem(" world", 0), NULL);
    WEIR_CHECK_INT(u->proto->encode_body(u, in, &out), WEIR_OK);

    weir_memzero(&t, sizeof(t));
    t_chain_text(&t, out);
    WEIR_CHECK_STR(t.buf, "b\r\nhello world\r\n");

    WEIR_REQUIRE(out != NULL);
    WEIR_CHECK(out->buf->tag == (weir_buf_tag_t) &weir_http_upstream_v1_proto);
    WEIR_CHECK(out->next->buf == in->buf);

    /* the core recycles what was sent through u->frame_free */
    frames = NULL;

    for (cl = out; cl; cl = cl->next) {
        cl->buf->pos = cl->buf->last;
    }

    weir_chain_update_chains(r->pool, &u->frame_free, &frames, &out,
                             (weir_buf_tag_t) &weir_http_upstream_v1_proto);
    WEIR_CHECK(u->frame_free != NULL);
    f = u->frame_free->buf;

    /* a file buffer and the end, with the trailers */
    e = weir_calloc_buf(r->pool);
    WEIR_REQUIRE(e != NULL);
    e->in_file = 1;
    e->file_pos = 10;
    e->file_last = 36;
    e->last_buf = 1;

    out = NULL;
    in = t_chain(e, NULL, NULL);
    WEIR_CHECK_INT(u->proto->encode_body(u, in, &out), WEIR_OK);

    weir_memzero(&t, sizeof(t));
    t_chain_text(&t, out);
    WEIR_CHECK_STR(t.buf, "1a\r\n[file:26][last]\r\n0\r\nX-Sum: abc\r\n"
                   "X-Two: 2 2\r\n\r\n[last]");
    WEIR_CHECK(out->buf == f);

    /* nothing after the end */
    in = t_chain(t_mem("x", 1), NULL, NULL);
    out = NULL;
    WEIR_CHECK_INT(u->proto->encode_body(u, in, &out), WEIR_ERROR);

    /* only the end, as an empty special buffer, no trailers */
    u = t_upstream();
    WEIR_REQUIRE(u != NULL);
    u->req.has_body = 1;
    u->req.body_length = -1;

    e = weir_calloc_buf(u->request->pool);
    WEIR_REQUIRE(e != NULL);
    e->last_buf = 1;

    out = NULL;
    in = t_chain(t_mem("", 0), e, NULL);
    WEIR_CHECK_INT(u->proto->encode_body(u, t_chain(t_mem("", 0), NULL, NULL),
                                         &out), WEIR_OK);
    WEIR_CHECK(out == NULL);
    WEIR_CHECK_INT(u->proto->encode_body(u, in, &out), WEIR_OK);

    weir_memzero(&t, sizeof(t));
    t_chain_text(&t, out);
    WEIR_CHECK_STR(t.buf, "0\r\n\r\n[last]");

    /* a trailer that would split the request */
    u = t_upstream();
    WEIR_REQUIRE(u != NULL);
    u->req.has_body = 1;
    u->req.body_length = -1;
    u->req.send_trailers = 1;
    WEIR_REQUIRE(t_header(&u->request->headers_in.trailers, "X-A",
                          "1\r\nX-B: 2"));
    out = NULL;
    weir_unit_log_reset();
    WEIR_CHECK_INT(u->proto->encode_body(u, t_chain(t_mem("a", 1), NULL,
                                                    NULL), &out),
                   WEIR_ERROR);
    WEIR_CHECK(weir_unit_log_has("invalid trailer field \"X-A\""));
}


/* ---- response heads ------------------------------------------------- */

typedef struct {
    const char   *in;
    size_t        len;
    weir_uint_t   method;
    const char   *trace;
    weir_uint_t   strict;       /* proxy_strict_line_endings */
} t_head_case_t;

#define T_HEAD(in, method, trace)  { in, sizeof(in) - 1, method, trace, 0 }
#define T_HEAD_S(in, method, trace)                                           \
    { in, sizeof(in) - 1, method, trace, 1 }


static void
t_head_trace(t_trace_t *t, weir_http_upstream_t *u, weir_int_t rc)
{
    weir_uint_t                       i;
    weir_list_part_t                 *part;
    weir_http_header_t               *h;
    weir_http_upstream_headers_in_t  *hi;

    hi = &u->headers_in;

    if (rc == WEIR_HTTP_UPSTREAM_INVALID_HEADER) {
        t_add(t, "INVALID");
        return;
    }

    if (rc != WEIR_OK && rc != WEIR_HTTP_UPSTREAM_INTERIM) {
        t_add(t, "rc=%ld", (long) rc);
        return;
    }

    t_add(t, "%s%lu v%lu [%.*s]", rc == WEIR_OK ? "" : "interim ",
          (unsigned long) hi->status_n, (unsigned long) hi->http_version,
          WEIR_STR_ARG(hi->status_line));

    part = &hi->headers.part;
    h = part->elts;

    for (i = 0; part->elts; i++) {
        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        t_add(t, " %.*s=%.*s", WEIR_STR_ARG(h[i].key),
              WEIR_STR_ARG(h[i].value));

        if (h[i].lowcase_key == NULL || h[i].hash == 0
            || weir_strncasecmp(h[i].lowcase_key, h[i].key.data,
                                h[i].key.len) != 0
            || h[i].key.data[h[i].key.len] != '\0'
            || h[i].value.data[h[i].value.len] != '\0')
        {
            t_add(t, "(bad)");
        }
    }

    if (hi->content_length) {
        t_add(t, " cl=%lld", (long long) hi->content_length_n);
    }

    if (hi->chunked) {
        t_add(t, " chunked");
    }

    if (hi->connection_close) {
        t_add(t, " close");
    }

    if (hi->no_body) {
        t_add(t, " nobody");
    }

    if (rc == WEIR_HTTP_UPSTREAM_INTERIM) {
        t_add(t, "; ");
    }
}


/*
 * Parses in[0, len) fed as the core does: u->buffer grows to split,
 * then by step bytes (0: all at once). Returns the trace in t.
 */

static void
t_head_run(t_trace_t *t, const t_head_case_t *hc, size_t split, size_t step)
{
    size_t                 avail;
    weir_int_t             rc;
    weir_uint_t            loops;
    unsigned char         *copy;
    weir_pool_t           *pool;
    weir_http_upstream_t  *u;

    pool = weir_create_pool(WEIR_DEFAULT_POOL_SIZE, weir_unit_log());
    u = t_upstream_pool(pool);
    copy = malloc(hc->len ? hc->len : 1);

    if (u == NULL || copy == NULL) {
        t_add(t, "NOMEM");
        free(copy);

        if (pool) {
            weir_destroy_pool(pool);
        }

        return;
    }

    u->req.method = hc->method;
    u->conf->strict_line_endings = hc->strict;

    memcpy(copy, hc->in, hc->len);

    u->buffer.start = copy;
    u->buffer.pos = copy;
    u->buffer.end = copy + hc->len;

    avail = split;
    u->buffer.last = copy + avail;

    u->proto->reinit(u);

    for (loops = 0; loops < 2 * hc->len + 4; loops++) {
        rc = u->proto->process_header(u);

        if (u->buffer.pos < u->buffer.start
            || u->buffer.pos > u->buffer.last)
        {
            t_add(t, "POS");
            break;
        }

        if (rc == WEIR_AGAIN) {
            if (avail == hc->len) {
                t_add(t, "AGAIN");
                break;
            }

            avail += step ? step : hc->len;

            if (avail > hc->len) {
                avail = hc->len;
            }

            u->buffer.last = copy + avail;
            continue;
        }

        t_head_trace(t, u, rc);

        if (rc == WEIR_HTTP_UPSTREAM_INTERIM) {
            u->proto->reinit_head(u);
            continue;
        }

        break;
    }

    if (u->request->http_version != WEIR_HTTP_VERSION_10) {
        t_add(t, " CLIENT-VERSION-CHANGED");
    }

    weir_destroy_pool(pool);
    free(copy);
}


static const t_head_case_t  t_heads[] = {

    T_HEAD("HTTP/1.1 200 OK\r\n"
           "Server: x/1\r\n"
           "Content-Length: 5\r\n"
           "X-Long-Header-Name-Beyond-Thirty-Two-Bytes:  v w  \r\n"
           "Date: now\r\n"
           "\r\n",
           WEIR_HTTP_GET,
           "200 v1001 [200 OK] Server=x/1 Content-Length=5 "
           "X-Long-Header-Name-Beyond-Thirty-Two-Bytes=v w Date=now cl=5"),

    T_HEAD("HTTP/1.1 204\r\n\r\n", WEIR_HTTP_GET,
           "204 v1001 [204] nobody"),

    T_HEAD("HTTP/1.0 200 OK\r\n\r\n", WEIR_HTTP_GET,
           "200 v1000 [200 OK] close"),

    T_HEAD("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n"
           "Content-Length: 0\r\n\r\n", WEIR_HTTP_GET,
           "200 v1000 [200 OK] Connection=Keep-Alive Content-Length=0 cl=0"),

    T_HEAD("HTTP/1.1 200 OK\r\nConnection: x, CLOSE\r\n\r\n", WEIR_HTTP_GET,
           "200 v1001 [200 OK] Connection=x, CLOSE close"),

    T_HEAD("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n"
           "\r\n", WEIR_HTTP_GET,
           "200 v1001 [200 OK] Content-Length=5 Content-Length=5 cl=5"),

    T_HEAD("HTTP/1.1 200 OK\r\nContent-Length: 5 ,5,\t5\r\n\r\n",
           WEIR_HTTP_GET,
           "200 v1001 [200 OK] Content-Length=5 ,5,\t5 cl=5"),

    T_HEAD("HTTP/1.1 200 OK\r\ntransfer-encoding: Chunked\r\n\r\n",
           WEIR_HTTP_GET,
           "200 v1001 [200 OK] transfer-encoding=Chunked chunked"),

    T_HEAD("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", WEIR_HTTP_HEAD,
           "200 v1001 [200 OK] Content-Length=5 cl=5 nobody"),

    T_HEAD("HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n",
           WEIR_HTTP_GET,
           "304 v1001 [304 Not Modified] Content-Length=5 cl=5 nobody"),

    T_HEAD("HTTP/1.1 100 Continue\r\n\r\n"
           "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
           "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n",
           WEIR_HTTP_POST,
           "interim 100 v1001 [100 Continue] nobody; "
           "interim 103 v1001 [103 Early Hints] Link=</a> nobody; "
           "201 v1001 [201 Created] Content-Length=2 cl=2"),

    T_HEAD("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
           "Connection: upgrade\r\n\r\n", WEIR_HTTP_GET,
           "101 v1001 [101 Switching Protocols] Upgrade=websocket "
           "Connection=upgrade nobody"),

    T_HEAD("HTTP/1.1 599 x\r\nX_Under: 1\r\nX-Empty:\r\n\r\n",
           WEIR_HTTP_GET,
           "599 v1001 [599 x] X_Under=1 X-Empty="),

    /* a later HTTP/1.x is read as 1.1 */
    T_HEAD("HTTP/1.2 200 OK\r\n\r\n", WEIR_HTTP_GET, "200 v1002 [200 OK]"),

    /* invalid */
    T_HEAD("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n"
           "\r\n", WEIR_HTTP_GET, "INVALID"),
    T_HEAD("HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n",
           WEIR_HTTP_GET, "INVALID"),
    T_HEAD("HTTP/1.1 200 OK\r\nContent-Length: 5,\r\n\r\n",
           WEIR_HTTP_GET, "INVALID"),
    T_HEAD("HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n",
           WEIR_HTTP_GET, "INVALID"),
    T_HEAD("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
           WEIR_HTTP_GET, "INVALID"),
    T_HEAD("HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n",
           WEIR_HTTP_GET, "INVALID"),
    T_HEAD("HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n",
           WEIR_HTTP_GET, "INVALID"),
    T_HEAD("HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775808\r\n\r\n",
           WEIR_HTTP_GET, "INVALID"),
    T_HEAD("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n"
           "\r\n", WEIR_HTTP_GET, "INVALID"),
    T_HEAD("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
           WEIR_HTTP_GET, "INVALID"),
    T_HEAD("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
           "Transfer-Encoding: chunked\r\n\r\n", WEIR_HTTP_GET, "INVALID"),
    T_HEAD("HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\n",
           WEIR_HTTP_GET, "INVALID"),
    T_HEAD("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
           "Content-Length: 5\r\n\r\n", WEIR_HTTP_GET, "INVALID"),
    T_HEAD("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
           "Transfer-Encoding: chunked\r\n\r\n", WEIR_HTTP_HEAD, "INVALID"),
    T_HEAD("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
           WEIR_HTTP_GET, "INVALID"),
    T_HEAD("HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\n\r\n",
           WEIR_HTTP_GET, "INVALID"),
    T_HEAD("HTTP/1.1 200 OK\r\nX-A: a\0b\r\n\r\n", WEIR_HTTP_GET, "INVALID"),
    T_HEAD("HTTP/1.1 200 OK\r\nX-A : 1\r\n\r\n", WEIR_HTTP_GET, "INVALID"),
    /* a bare LF ends a line, unless proxy_strict_line_endings is on */
    T_HEAD("HTTP/1.1 200 OK\r\nX-A: 1\n\r\n", WEIR_HTTP_GET,
           "200 v1001 [200 OK] X-A=1"),
    T_HEAD("HTTP/1.1 200 OK\r\n\nX-A: 1\r\n\r\n", WEIR_HTTP_GET,
           "200 v1001 [200 OK]"),
    T_HEAD("HTTP/1.1 200 OK\nX-A: 1\r\n\r\n", WEIR_HTTP_GET,
           "200 v1001 [200 OK] X-A=1"),
    T_HEAD("HTTP/1.1 204\nX-A: 1\nContent-Length: 0\n\n", WEIR_HTTP_GET,
           "204 v1001 [204] X-A=1 Content-Length=0 cl=0 nobody"),
    T_HEAD("HTTP/1.1 200 OK\r\nX-A: 1\r\r\n\r\n", WEIR_HTTP_GET,
           "INVALID"),
    T_HEAD("HTTP/1.1 200 OK\rX-A: 1\n\n", WEIR_HTTP_GET, "INVALID"),
    T_HEAD_S("HTTP/1.1 200 OK\r\nX-A: 1\r\n\r\n", WEIR_HTTP_GET,
             "200 v1001 [200 OK] X-A=1"),
    T_HEAD_S("HTTP/1.1 200 OK\r\nX-A: 1\n\r\n", WEIR_HTTP_GET,
             "INVALID"),
    T_HEAD_S("HTTP/1.1 200 OK\r\n\nX-A: 1\r\n\r\n", WEIR_HTTP_GET,
             "INVALID"),
    T_HEAD_S("HTTP/1.1 200 OK\nX-A: 1\r\n\r\n", WEIR_HTTP_GET,
             "INVALID"),
    T_HEAD("HTTP/1.1 99 Low\r\n\r\n", WEIR_HTTP_GET, "INVALID"),
    T_HEAD("HTTP/1.1 600 High\r\n\r\n", WEIR_HTTP_GET, "INVALID"),
    T_HEAD("HTTP/1.1 2000 OK\r\n\r\n", WEIR_HTTP_GET, "INVALID"),
    T_HEAD("HTTP/2 200 OK\r\n\r\n", WEIR_HTTP_GET, "INVALID"),
    T_HEAD("HTTP/2.0 200 OK\r\n\r\n", WEIR_HTTP_GET, "INVALID"),
    T_HEAD("HTTP/0.9 200 OK\r\n\r\n", WEIR_HTTP_GET, "INVALID"),
    T_HEAD("ICY 200 OK\r\n\r\n", WEIR_HTTP_GET, "INVALID"),
    T_HEAD("<html>hello</html>", WEIR_HTTP_GET, "INVALID"),
    T_HEAD("http/1.1 200 OK\r\n\r\n", WEIR_HTTP_GET, "INVALID"),

    /* incomplete */
    T_HEAD("HTTP/1.1 200 OK\r\nX-A: 1\r\n", WEIR_HTTP_GET, "AGAIN"),
};


WEIR_UNIT_TEST(http_upstream_v1_heads)
{
    size_t                split;
    weir_uint_t           i;
    t_trace_t             t;
    const t_head_case_t  *hc;

    for (i = 0; i < sizeof(t_heads) / sizeof(t_heads[0]); i++) {
        hc = &t_heads[i];

        weir_memzero(&t, sizeof(t));
        t_head_run(&t, hc, hc->len, 0);

        if (!WEIR_CHECK_STR(t.buf, hc->trace)) {
            printf("  whole: case %lu\n", (unsigned long) i);
            continue;
        }

        weir_memzero(&t, sizeof(t));
        t_head_run(&t, hc, 0, 1);

        if (!WEIR_CHECK_STR(t.buf, hc->trace)) {
            printf("  byte by byte: case %lu\n", (unsigned long) i);
            continue;
        }

        for (split = 1; split < hc->len; split++) {
            weir_memzero(&t, sizeof(t));
            t_head_run(&t, hc, split, 0);

            if (!WEIR_CHECK_STR(t.buf, hc->trace)) {
                printf("  split at %lu: case %lu\n", (unsigned long) split,
                       (unsigned long) i);
                break;
            }
        }
    }
}


/* the error log names what was wrong */

static void
t_head_log(const char *in, const char *log)
{
    t_trace_t      t;
    t_head_case_t  hc;

    hc.in = in;
    hc.len = strlen(in);
    hc.method = WEIR_HTTP_GET;
    hc.trace = "INVALID";

    weir_memzero(&t, sizeof(t));
    weir_unit_log_reset();
    t_head_run(&t, &hc, hc.len, 0);

    WEIR_CHECK_STR(t.buf, "INVALID");

    if (!WEIR_CHECK(weir_unit_log_has(log))) {
        printf("  logged: %s\n", weir_unit_log_text());
    }

    WEIR_CHECK(weir_unit_log_has("[error]"));
}


WEIR_UNIT_TEST(http_upstream_v1_head_logs)
{
    t_head_log("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n"
               "\r\n",
               "upstream sent duplicate header line: \"Content-Length: 6\", "
               "previous value: \"Content-Length: 5\"");
    t_head_log("HTTP/1.1 200 OK\r\nContent-Length: 5x\r\n\r\n",
               "upstream sent invalid \"Content-Length\" header: "
               "\"Content-Length: 5x\"");
    t_head_log("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
               "upstream sent unknown \"Transfer-Encoding\": \"gzip\"");
    t_head_log("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
               "Transfer-Encoding: chunked\r\n\r\n",
               "upstream sent \"Content-Length\" and \"Transfer-Encoding\" "
               "headers at the same time");
    t_head_log("HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\n\r\n",
               "upstream sent invalid header: \" \"");
    t_head_log("HTTP/1.1 200 OK\r\nX-A: a\x01z\r\n\r\n",
               "upstream sent invalid header: \"X-A: a\\x01\"");
    t_head_log("garbage\r\n\r\n",
               "upstream sent no valid HTTP/1.x header: \"g\"");
    t_head_log("HTTP/1.1 600 High\r\n\r\n",
               "upstream sent invalid status code 600: "
               "\"HTTP/1.1 600 High\"");
}


WEIR_UNIT_TEST(http_upstream_v1_interim_limit)
{
    char                  *in, *p;
    weir_uint_t            i;
    t_trace_t              t;
    t_head_case_t          hc;

    in = weir_pnalloc(weir_unit_pool(), 40 * 32 + 64);
    WEIR_REQUIRE(in != NULL);

    p = in;

    for (i = 0; i < 40; i++) {
        p += sprintf(p, "HTTP/1.1 100 Continue\r\n\r\n");
    }

    p += sprintf(p, "HTTP/1.1 200 OK\r\n\r\n");

    hc.in = in;
    hc.len = p - in;
    hc.method = WEIR_HTTP_GET;

    weir_memzero(&t, sizeof(t));
    weir_unit_log_reset();
    t_head_run(&t, &hc, hc.len, 0);

    WEIR_CHECK(strstr(t.buf, "INVALID") != NULL);
    WEIR_CHECK(weir_unit_log_has("more than 32 interim responses"));
}


/* ---- response bodies ------------------------------------------------ */

typedef struct {
    const char   *head;
    const char   *body;
    size_t        body_len;
    weir_uint_t   method;
    weir_uint_t   eof;          /* then the origin closes */
    const char   *trace;
} t_body_case_t;

#define T_BODY(head, body, method, eof, trace)                               \
    { head, body, sizeof(body) - 1, method, eof, trace }


/* what the core got from the views appended since the last call */

static void
t_collect(t_trace_t *t, weir_http_upstream_t *u)
{
    weir_buf_t    *b;
    weir_chain_t  *cl;

    for (cl = u->out_bufs; cl; cl = cl->next) {
        b = cl->buf;

        if (b->pos != b->last) {
            t_add(t, "%.*s", (int) (b->last - b->pos), (char *) b->pos);
        }

        if (b->last_buf) {
            t_add(t, "|END");
        }
    }

    u->out_bufs = NULL;
    u->last_out = &u->out_bufs;
}


static weir_int_t
t_feed(t_trace_t *t, weir_http_upstream_t *u, const char *data, size_t len)
{
    weir_int_t      rc;
    weir_buf_t      b;
    unsigned char  *copy;

    copy = malloc(len ? len : 1);
    if (copy == NULL) {
        return WEIR_ERROR;
    }

    memcpy(copy, data, len);

    weir_memzero(&b, sizeof(weir_buf_t));
    b.start = copy;
    b.pos = copy;
    b.last = copy + len;
    b.end = copy + len;
    b.temporary = 1;

    rc = u->proto->input_filter(u, &b);

    if (rc == WEIR_OK && b.pos != b.last) {
        t_add(t, "NOT-CONSUMED");
    }

    t_collect(t, u);
    free(copy);

    return rc;
}


/*
 * The head and body[0, split) arrive in one read (into u->buffer), the
 * rest of the body in pieces of step bytes (0: one piece).
 */

static void
t_body_run(t_trace_t *t, const t_body_case_t *bc, size_t split, size_t step)
{
    size_t                 hlen, off, n;
    weir_int_t             rc;
    weir_uint_t            i;
    unsigned char         *copy;
    weir_pool_t           *pool;
    weir_list_part_t      *part;
    weir_http_header_t    *h;
    weir_http_upstream_t  *u;

    hlen = strlen(bc->head);

    pool = weir_create_pool(WEIR_DEFAULT_POOL_SIZE, weir_unit_log());
    u = t_upstream_pool(pool);
    copy = malloc(hlen + split);

    if (u == NULL || copy == NULL) {
        t_add(t, "NOMEM");
        free(copy);

        if (pool) {
            weir_destroy_pool(pool);
        }

        return;
    }

    u->req.method = bc->method;

    memcpy(copy, bc->head, hlen);
    memcpy(copy + hlen, bc->body, split);

    u->buffer.start = copy;
    u->buffer.pos = copy;
    u->buffer.last = copy + hlen + split;
    u->buffer.end = u->buffer.last;

    u->proto->reinit(u);

    rc = u->proto->process_header(u);

    if (rc != WEIR_OK) {
        t_add(t, "head rc=%ld", (long) rc);
        goto done;
    }

    rc = u->proto->input_filter_init(u);
    t_collect(t, u);

    if (rc == WEIR_OK && u->buffer.pos < u->buffer.last) {
        rc = u->proto->input_filter(u, &u->buffer);

        if (rc == WEIR_OK && u->buffer.pos != u->buffer.last) {
            t_add(t, "NOT-CONSUMED");
        }

        t_collect(t, u);
    }

    for (off = split; rc == WEIR_OK && off < bc->body_len; off += n) {
        n = step ? step : bc->body_len - off;

        if (n > bc->body_len - off) {
            n = bc->body_len - off;
        }

        rc = t_feed(t, u, bc->body + off, n);
    }

    if (rc == WEIR_OK && bc->eof) {
        rc = u->proto->input_filter(u, NULL);
        t_collect(t, u);
        t_add(t, " eof");
    }

    if (rc != WEIR_OK) {
        t_add(t, " rc=%ld", (long) rc);
    }

    part = &u->headers_in.trailers.part;
    h = part->elts;

    for (i = 0; part->elts; i++) {
        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        t_add(t, " T:%.*s=%.*s", WEIR_STR_ARG(h[i].key),
              WEIR_STR_ARG(h[i].value));
    }

    if (rc == WEIR_OK) {
        t_add(t, " ka=%lu", (unsigned long) u->proto->keepalive(u));
    }

done:

    weir_destroy_pool(pool);
    free(copy);
}


static const t_body_case_t  t_bodies[] = {

    T_BODY("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "hello",
           WEIR_HTTP_GET, 0, "hello|END ka=1"),

    T_BODY("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "helloXYZ",
           WEIR_HTTP_GET, 0, "hello|END ka=0"),

    T_BODY("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "",
           WEIR_HTTP_GET, 0, "|END ka=1"),

    T_BODY("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n"
           "\r\n", "hello", WEIR_HTTP_GET, 1, "hello|END eof ka=0"),

    T_BODY("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "", WEIR_HTTP_HEAD,
           0, "|END ka=1"),

    T_BODY("HTTP/1.1 204 No Content\r\n\r\n", "", WEIR_HTTP_GET, 0,
           "|END ka=1"),

    T_BODY("HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n", "abc",
           WEIR_HTTP_GET, 0, "|END ka=0"),

    T_BODY("HTTP/1.1 304 Not Modified\r\nContent-Length: 3\r\n\r\n", "",
           WEIR_HTTP_GET, 1, "|END eof ka=1"),

    /* the origin closes early */
    T_BODY("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "hel",
           WEIR_HTTP_GET, 1, "hel eof rc=-1"),

    /* close-delimited */
    T_BODY("HTTP/1.1 200 OK\r\n\r\n", "hello world", WEIR_HTTP_GET, 1,
           "hello world|END eof ka=0"),

    T_BODY("HTTP/1.0 200 OK\r\n\r\n", "", WEIR_HTTP_GET, 1,
           "|END eof ka=0"),

    /* chunked, extensions and trailers */
    T_BODY("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
           "5;ext=1\r\nhello\r\n"
           "3;a;b=\"q;\\\"x\"\r\n wo\r\n"
           "A\r\nrld, again\r\n"
           "0;last\r\n"
           "X-T: 1\r\n"
           "Content-Length: 9\r\n"
           "Transfer-Encoding: chunked\r\n"
           "X-U:  two words \r\n"
           "\r\n",
           WEIR_HTTP_GET, 0,
           "hello world, again|END T:X-T=1 T:X-U=two words ka=1"),

    T_BODY("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
           "0\r\n\r\n", WEIR_HTTP_GET, 0, "|END ka=1"),

    T_BODY("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
           "0\r\n\r\nHTTP/1.1", WEIR_HTTP_GET, 0, "|END ka=0"),

    T_BODY("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
           "3\r\nabc\r\n", WEIR_HTTP_GET, 1, "abc eof rc=-1"),

    T_BODY("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
           "3\r\nabcd\r\n", WEIR_HTTP_GET, 0, "abc rc=-1"),

    T_BODY("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
           "zz\r\n", WEIR_HTTP_GET, 0, " rc=-1"),

    T_BODY("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
           "2\r\nab\r\n0\r\nX-A: 1\r\n folded\r\n\r\n", WEIR_HTTP_GET, 0,
           "ab rc=-1 T:X-A=1"),
};


WEIR_UNIT_TEST(http_upstream_v1_bodies)
{
    size_t                split;
    weir_uint_t           i;
    t_trace_t             t, t2;
    const t_body_case_t  *bc;

    for (i = 0; i < sizeof(t_bodies) / sizeof(t_bodies[0]); i++) {
        bc = &t_bodies[i];

        weir_memzero(&t, sizeof(t));
        t_body_run(&t, bc, bc->body_len, 0);

        if (!WEIR_CHECK_STR(t.buf, bc->trace)) {
            printf("  whole: case %lu\n", (unsigned long) i);
            continue;
        }

        weir_memzero(&t, sizeof(t));
        t_body_run(&t, bc, 0, 1);

        if (!WEIR_CHECK_STR(t.buf, bc->trace)) {
            printf("  byte by byte: case %lu\n", (unsigned long) i);
            continue;
        }

        for (split = 0; split < bc->body_len; split++) {
            weir_memzero(&t, sizeof(t));
            t_body_run(&t, bc, split, 0);

            weir_memzero(&t2, sizeof(t2));
            t_body_run(&t2, bc, 0, split ? split : 1);

            if (!WEIR_CHECK_STR(t.buf, bc->trace)
                || !WEIR_CHECK_STR(t2.buf, bc->trace))
            {
                printf("  split at %lu: case %lu\n", (unsigned long) split,
                       (unsigned long) i);
                break;
            }
        }
    }
}


WEIR_UNIT_TEST(http_upstream_v1_body_logs)
{
    t_trace_t      t;
    t_body_case_t  bc;

    bc.head = "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n";
    bc.body = "abcdef";
    bc.body_len = 6;
    bc.method = WEIR_HTTP_GET;
    bc.eof = 0;

    weir_memzero(&t, sizeof(t));
    weir_unit_log_reset();
    t_body_run(&t, &bc, 0, 1);

    WEIR_CHECK_STR(t.buf, "a|END ka=0");
    WEIR_CHECK(weir_unit_log_has("[warn]"));
    WEIR_CHECK(weir_unit_log_has("upstream sent more data than specified"));

    /* once per response */
    WEIR_CHECK(strstr(strstr(weir_unit_log_text(), "more data than")
                      + 1, "more data than") == NULL);

    bc.head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    bc.body = "1\r\na\r\nX";
    bc.body_len = 7;

    weir_memzero(&t, sizeof(t));
    weir_unit_log_reset();
    t_body_run(&t, &bc, 7, 0);

    WEIR_CHECK_STR(t.buf, "a rc=-1");
    WEIR_CHECK(weir_unit_log_has("upstream sent invalid chunked response"));

    bc.body = "0\r\nConnection: x\r\n\r\n";
    bc.body_len = strlen(bc.body);

    weir_memzero(&t, sizeof(t));
    weir_unit_log_reset();
    t_body_run(&t, &bc, bc.body_len, 0);

    WEIR_CHECK_STR(t.buf, "|END ka=1");
    WEIR_CHECK(weir_unit_log_has("upstream sent \"Connection\" trailer "
                                 "field, ignored"));
}


WEIR_UNIT_TEST(http_upstream_v1_keepalive)
{
    t_trace_t              t;
    weir_http_upstream_t  *u;
    t_body_case_t          bc;
    unsigned char          head[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n"
                                    "\r\n";

    bc.head = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n";
    bc.body = "ab";
    bc.body_len = 2;
    bc.method = WEIR_HTTP_GET;
    bc.eof = 0;

    weir_memzero(&t, sizeof(t));
    t_body_run(&t, &bc, 2, 0);
    WEIR_CHECK_STR(t.buf, "ab|END ka=1");

    /* not all of the request was sent, or the origin answered early, or
     * the connection became a tunnel: not reusable */

    u = t_upstream();
    WEIR_REQUIRE(u != NULL);

    u->buffer.start = head;
    u->buffer.pos = head;
    u->buffer.last = head + sizeof(head) - 1;
    u->buffer.end = u->buffer.last;

    u->proto->reinit(u);
    WEIR_REQUIRE(u->proto->process_header(u) == WEIR_OK);
    WEIR_REQUIRE(u->proto->input_filter_init(u) == WEIR_OK);
    WEIR_CHECK(u->body_done);

    WEIR_CHECK_INT(u->proto->keepalive(u), 1);

    u->request_sent = 0;
    WEIR_CHECK_INT(u->proto->keepalive(u), 0);

    u->request_sent = 1;
    u->early_response = 1;
    WEIR_CHECK_INT(u->proto->keepalive(u), 0);

    u->early_response = 0;
    u->upgrade = 1;
    WEIR_CHECK_INT(u->proto->keepalive(u), 0);
}


/*
 * Review: a value refused because it could split the request must not
 * split the error log either (the method, URI, Host and header name are
 * quoted with their control bytes escaped).
 */

WEIR_UNIT_TEST(http_upstream_v1_request_refusal_log_quoted)
{
    weir_uint_t            i;
    weir_http_upstream_t  *u;

    for (i = 0; i < 4; i++) {
        u = t_upstream();
        WEIR_REQUIRE(u != NULL);

        switch (i) {
        case 0:
            weir_str_set(&u->req.uri, "/a\r\n[emerg] forged");
            break;
        case 1:
            weir_str_set(&u->req.authority, "h\r\n[emerg] forged");
            break;
        case 2:
            weir_str_set(&u->req.method_name, "GET\n[emerg] forged");
            break;
        default:
            WEIR_REQUIRE(t_header(&u->req.headers, "X\r\n[emerg] forged",
                                  "1"));
            break;
        }

        weir_unit_log_reset();

        WEIR_CHECK_STR(t_request(u), "ERROR");
        WEIR_CHECK(weir_unit_log_has("[error]"));

        if (!WEIR_CHECK(!weir_unit_log_has("\n[emerg]"))
            || !WEIR_CHECK(!weir_unit_log_has("\r\n")))
        {
            printf("  case %lu logged: %s\n", (unsigned long) i,
                   weir_unit_log_text());
        }

        WEIR_CHECK(weir_unit_log_has("\\x0d\\x0a[emerg] forged")
                   || weir_unit_log_has("\\x0a[emerg] forged"));
    }
}
