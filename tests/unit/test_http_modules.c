#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"
#include "weir_unit.h"

/*
 * The range and not_modified filters run over a fake request, reached
 * through their modules' filter declarations (the same data the chain
 * builder reads): the test puts its own "next" filters under them and
 * looks at what they pass down. The error paths that finalize the request
 * (412) need a real connection and are tested end to end in
 * tests/integration/test_http_modules.py.
 */


extern weir_module_t  weir_http_range_filter_module;
extern weir_module_t  weir_http_not_modified_filter_module;


static weir_uint_t    weir_test_mod_headers;
static weir_chain_t  *weir_test_mod_out;


static weir_int_t
weir_test_mod_next_header(weir_http_request_t *r)
{
    (void) r;
    weir_test_mod_headers++;
    return WEIR_OK;
}


static weir_int_t
weir_test_mod_next_body(weir_http_request_t *r, weir_chain_t *in)
{
    (void) r;
    weir_test_mod_out = in;
    return WEIR_OK;
}


typedef struct {
    weir_http_request_t          r;
    weir_connection_t            c;
    weir_log_t                   log;
    void                        *loc_conf[1];
    void                        *ctx[4];
    weir_http_core_loc_conf_t    clcf;
    weir_http_header_t           range;
    weir_http_header_t           cond;
    weir_uint_t                  saved_core;
    weir_uint_t                  saved_range;
    weir_uint_t                  saved_nm;
} weir_test_mod_req_t;


/* a 200 response of "0123456789" with validators, as static sends it */

static void
weir_test_mod_init(weir_test_mod_req_t *t)
{
    weir_http_module_t  *m;
    weir_str_t           etag = weir_string("\"abc\"");

    weir_memzero(t, sizeof(weir_test_mod_req_t));

    t->saved_core = weir_http_core_module.ctx_index;
    t->saved_range = weir_http_range_filter_module.ctx_index;
    t->saved_nm = weir_http_not_modified_filter_module.ctx_index;
    weir_http_core_module.ctx_index = 0;
    weir_http_range_filter_module.ctx_index = 1;
    weir_http_not_modified_filter_module.ctx_index = 2;

    t->log = *weir_unit_log();
    t->c.log = &t->log;
    t->c.pool = weir_unit_pool();

    t->loc_conf[0] = &t->clcf;
    t->clcf.max_ranges = 100;
    t->clcf.if_modified_since = WEIR_HTTP_IMS_EXACT;

    t->r.connection = &t->c;
    t->r.pool = t->c.pool;
    t->r.main = &t->r;
    t->r.loc_conf = t->loc_conf;
    t->r.ctx = t->ctx;
    t->r.http_version = WEIR_HTTP_VERSION_11;
    t->r.allow_ranges = 1;
    t->r.headers_in.content_length_n = -1;
    t->r.headers_out.status = WEIR_HTTP_OK;
    t->r.headers_out.content_length_n = 10;
    t->r.headers_out.last_modified_time = 1000000;
    weir_str_set(&t->r.headers_out.content_type, "text/plain");
    t->r.headers_out.content_type_len = t->r.headers_out.content_type.len;

    (void) weir_list_init(&t->r.headers_out.headers, t->r.pool, 4,
                          sizeof(weir_http_header_t));

    t->r.headers_out.etag = weir_http_add_header_out(&t->r, "ETag", &etag);

    m = weir_http_range_filter_module.ctx;
    *m->header_filters[0].next = weir_test_mod_next_header;
    *m->body_filters[0].next = weir_test_mod_next_body;

    m = weir_http_not_modified_filter_module.ctx;
    *m->header_filters[0].next = weir_test_mod_next_header;

    weir_test_mod_headers = 0;
    weir_test_mod_out = NULL;
}


static void
weir_test_mod_done(weir_test_mod_req_t *t)
{
    weir_http_core_module.ctx_index = t->saved_core;
    weir_http_range_filter_module.ctx_index = t->saved_range;
    weir_http_not_modified_filter_module.ctx_index = t->saved_nm;
}


static void
weir_test_mod_set(weir_http_header_t *h, const char *value)
{
    h->hash = 1;
    h->value.data = (unsigned char *) value;
    h->value.len = strlen(value);
}


/* runs the range header filter and, when it passed, the body filter over
 * "0123456789"; returns the body that came out, NUL-terminated */

static char *
weir_test_mod_range(weir_test_mod_req_t *t, const char *range)
{
    size_t               len;
    char                *out, *p;
    weir_buf_t          *b;
    weir_chain_t         in, *cl;
    weir_http_module_t  *m;

    static char  body[] = "0123456789";

    if (range) {
        weir_test_mod_set(&t->range, range);
        t->r.headers_in.range = &t->range;
    }

    m = weir_http_range_filter_module.ctx;

    if (m->header_filters[0].handler(&t->r) != WEIR_OK
        || weir_test_mod_headers != 1)
    {
        return NULL;
    }

    b = weir_calloc_buf(t->r.pool);
    if (b == NULL) {
        return NULL;
    }

    b->memory = 1;
    b->pos = (unsigned char *) body;
    b->last = b->pos + 10;
    b->start = b->pos;
    b->end = b->last;
    b->last_buf = 1;

    in.buf = b;
    in.next = NULL;

    if (m->body_filters[0].handler(&t->r, &in) != WEIR_OK) {
        return NULL;
    }

    len = 0;
    for (cl = weir_test_mod_out; cl; cl = cl->next) {
        len += cl->buf->last - cl->buf->pos;
    }

    out = weir_pnalloc(t->r.pool, len + 1);
    if (out == NULL) {
        return NULL;
    }

    p = out;
    for (cl = weir_test_mod_out; cl; cl = cl->next) {
        memcpy(p, cl->buf->pos, cl->buf->last - cl->buf->pos);
        p += cl->buf->last - cl->buf->pos;

        if (cl->next == NULL && !cl->buf->last_buf) {
            return NULL;        /* the end mark was lost */
        }
    }

    *p = '\0';

    return out;
}


static const char *
weir_test_mod_header(weir_http_header_t *h)
{
    static char  buf[256];

    if (h == NULL || h->hash == 0 || h->value.len >= sizeof(buf)) {
        return NULL;
    }

    memcpy(buf, h->value.data, h->value.len);
    buf[h->value.len] = '\0';

    return buf;
}


WEIR_UNIT_TEST(http_range_single)
{
    static const struct {
        const char  *range;
        const char  *body;
        const char  *content_range;
    } cases[] = {
        { "bytes=0-4", "01234", "bytes 0-4/10" },
        { "bytes=7-", "789", "bytes 7-9/10" },
        { "bytes=-3", "789", "bytes 7-9/10" },
        { "bytes=5-100", "56789", "bytes 5-9/10" },
        { "bytes=-100", "0123456789", "bytes 0-9/10" },
        { "BYTES = 2-2", "2", "bytes 2-2/10" },
        { "bytes=9-9", "9", "bytes 9-9/10" },
        { "bytes=20-, 3-3", "3", "bytes 3-3/10" },
    };

    weir_uint_t           i;
    char                 *body;
    weir_test_mod_req_t   t;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        weir_test_mod_init(&t);

        body = weir_test_mod_range(&t, cases[i].range);

        WEIR_CHECK_STR(body, cases[i].body);
        WEIR_CHECK_INT(t.r.headers_out.status, WEIR_HTTP_PARTIAL_CONTENT);
        WEIR_CHECK_INT(t.r.headers_out.content_length_n,
                       (off_t) strlen(cases[i].body));
        WEIR_CHECK_STR(weir_test_mod_header(t.r.headers_out.content_range),
                       cases[i].content_range);

        weir_test_mod_done(&t);
    }
}


WEIR_UNIT_TEST(http_range_ignored)
{
    static const char  *cases[] = {
        "bytes=5-1", "items=0-1", "bytes=x", "bytes=--1", "bytes=1-2;",
        "bytes=99999999999999999999-", "bytes", "bytes=0-9,0-9",
        "bytes=1-2 3-4", "bytes=-",
    };

    weir_uint_t           i;
    weir_test_mod_req_t   t;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        weir_test_mod_init(&t);

        WEIR_CHECK_STR(weir_test_mod_range(&t, cases[i]), "0123456789");
        WEIR_CHECK_INT(t.r.headers_out.status, WEIR_HTTP_OK);
        WEIR_CHECK(t.r.headers_out.content_range == NULL);

        weir_test_mod_done(&t);
    }

    /* no Range: the response says ranges are accepted */
    weir_test_mod_init(&t);
    WEIR_CHECK_STR(weir_test_mod_range(&t, NULL), "0123456789");
    WEIR_CHECK_STR(weir_test_mod_header(t.r.headers_out.accept_ranges),
                   "bytes");
    weir_test_mod_done(&t);

    /* too many ranges */
    weir_test_mod_init(&t);
    t.clcf.max_ranges = 1;
    WEIR_CHECK_STR(weir_test_mod_range(&t, "bytes=0-0,2-2"), "0123456789");
    weir_test_mod_done(&t);

    /* If-Range that does not match */
    weir_test_mod_init(&t);
    weir_test_mod_set(&t.cond, "\"old\"");
    t.r.headers_in.if_range = &t.cond;
    WEIR_CHECK_STR(weir_test_mod_range(&t, "bytes=0-0"), "0123456789");
    weir_test_mod_done(&t);

    /* If-Range that matches */
    weir_test_mod_init(&t);
    weir_test_mod_set(&t.cond, "\"abc\"");
    t.r.headers_in.if_range = &t.cond;
    WEIR_CHECK_STR(weir_test_mod_range(&t, "bytes=0-0"), "0");
    weir_test_mod_done(&t);
}


WEIR_UNIT_TEST(http_range_unsatisfiable)
{
    char                 *body;
    weir_test_mod_req_t   t;

    weir_test_mod_init(&t);

    body = weir_test_mod_range(&t, "bytes=10-,-0");

    WEIR_CHECK_INT(t.r.headers_out.status, WEIR_HTTP_RANGE_NOT_SATISFIABLE);
    WEIR_CHECK_STR(weir_test_mod_header(t.r.headers_out.content_range),
                   "bytes */10");
    WEIR_REQUIRE(body != NULL);
    WEIR_CHECK(strstr(body, "416") != NULL);
    WEIR_CHECK_INT(t.r.headers_out.content_length_n, (off_t) strlen(body));

    weir_test_mod_done(&t);
}


WEIR_UNIT_TEST(http_range_multipart)
{
    char                 *body, *p, expected[512];
    weir_str_t            boundary;
    weir_test_mod_req_t   t;

    weir_test_mod_init(&t);

    body = weir_test_mod_range(&t, "bytes=0-1,5-5");

    WEIR_REQUIRE(body != NULL);
    WEIR_CHECK_INT(t.r.headers_out.status, WEIR_HTTP_PARTIAL_CONTENT);

    p = strstr((char *) t.r.headers_out.content_type.data, "boundary=");
    WEIR_REQUIRE(p != NULL);
    boundary.data = (unsigned char *) p + 9;
    boundary.len = t.r.headers_out.content_type.len
                   - (boundary.data - t.r.headers_out.content_type.data);

    (void) snprintf(expected, sizeof(expected),
                    "\r\n--%.*s\r\nContent-Type: text/plain\r\n"
                    "Content-Range: bytes 0-1/10\r\n\r\n01"
                    "\r\n--%.*s\r\nContent-Type: text/plain\r\n"
                    "Content-Range: bytes 5-5/10\r\n\r\n5"
                    "\r\n--%.*s--\r\n",
                    WEIR_STR_ARG(boundary), WEIR_STR_ARG(boundary),
                    WEIR_STR_ARG(boundary));

    WEIR_CHECK_STR(body, expected);
    WEIR_CHECK_INT(t.r.headers_out.content_length_n, (off_t) strlen(body));

    weir_test_mod_done(&t);
}


WEIR_UNIT_TEST(http_not_modified)
{
    static const struct {
        const char  *inm;
        const char  *ims;
        weir_uint_t  status;
    } cases[] = {
        { "\"abc\"", NULL, WEIR_HTTP_NOT_MODIFIED },
        { "W/\"abc\"", NULL, WEIR_HTTP_NOT_MODIFIED },
        { "\"x\", \"abc\"", NULL, WEIR_HTTP_NOT_MODIFIED },
        { "*", NULL, WEIR_HTTP_NOT_MODIFIED },
        { "\"abcd\"", NULL, WEIR_HTTP_OK },
        { "abc", NULL, WEIR_HTTP_OK },
        { NULL, "Mon, 12 Jan 1970 13:46:40 GMT", WEIR_HTTP_NOT_MODIFIED },
        { NULL, "Mon, 12 Jan 1970 13:46:41 GMT", WEIR_HTTP_OK },
        { NULL, "garbage", WEIR_HTTP_OK },
        /* If-None-Match decides alone */
        { "\"x\"", "Mon, 12 Jan 1970 13:46:40 GMT", WEIR_HTTP_OK },
    };

    weir_uint_t           i;
    weir_http_module_t   *m;
    weir_test_mod_req_t   t;
    weir_http_header_t    ims;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        weir_test_mod_init(&t);
        weir_memzero(&ims, sizeof(ims));

        if (cases[i].inm) {
            weir_test_mod_set(&t.cond, cases[i].inm);
            t.r.headers_in.if_none_match = &t.cond;
        }

        if (cases[i].ims) {
            weir_test_mod_set(&ims, cases[i].ims);
            t.r.headers_in.if_modified_since = &ims;
        }

        m = weir_http_not_modified_filter_module.ctx;

        WEIR_CHECK_INT(m->header_filters[0].handler(&t.r), WEIR_OK);
        WEIR_CHECK_INT(weir_test_mod_headers, 1);
        WEIR_CHECK_INT(t.r.headers_out.status, cases[i].status);

        if (cases[i].status == WEIR_HTTP_NOT_MODIFIED) {
            WEIR_CHECK(t.r.header_only);
            WEIR_CHECK_INT(t.r.headers_out.content_length_n, -1);
            WEIR_CHECK(t.r.headers_out.etag != NULL);
        }

        weir_test_mod_done(&t);
    }
}


/* weir_http_valid_header_value: CR, LF and NUL anywhere, whatever the
 * length and the position (the word-at-a-time scan and its tail) */

WEIR_UNIT_TEST(http_valid_header_value)
{
    size_t          len, at;
    weir_str_t      v;
    unsigned char   buf[40];
    unsigned char   bad[] = { '\r', '\n', '\0' };
    unsigned char   good[] = { '\t', ' ', 0x0b, 0x0c, 0x0e, 0x1f, 0x7f,
                               0x80, 0xff, 'a' };
    weir_uint_t     k;

    for (len = 0; len <= sizeof(buf); len++) {
        weir_memset(buf, 'x', sizeof(buf));
        v.data = buf;
        v.len = len;
        WEIR_CHECK_INT(weir_http_valid_header_value(&v), 1);

        for (at = 0; at < len; at++) {
            for (k = 0; k < sizeof(bad); k++) {
                weir_memset(buf, 'x', sizeof(buf));
                buf[at] = bad[k];
                WEIR_CHECK_INT(weir_http_valid_header_value(&v), 0);

                /* a tab before it: the byte loop takes over early */
                if (at > 0) {
                    buf[0] = '\t';
                    WEIR_CHECK_INT(weir_http_valid_header_value(&v), 0);
                }
            }

            for (k = 0; k < sizeof(good); k++) {
                weir_memset(buf, 'x', sizeof(buf));
                buf[at] = good[k];
                WEIR_CHECK_INT(weir_http_valid_header_value(&v), 1);
            }
        }

        /* a bad byte just past the length is not looked at */
        if (len < sizeof(buf)) {
            weir_memset(buf, 'x', sizeof(buf));
            buf[len] = '\n';
            WEIR_CHECK_INT(weir_http_valid_header_value(&v), 1);
        }
    }
}
