#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"

/*
 * Byte ranges (RFC 9110, section 14) of responses whose handler allowed
 * them (r->allow_ranges) and whose length is known. One range gives a 206
 * with Content-Range; several give a multipart/byteranges body; none
 * satisfiable gives a 416 with "Content-Range: bytes * /size". A Range
 * header that does not parse, or ranges that add up to more than the
 * whole, are ignored: the client gets the full 200, as the RFC allows.
 *
 * The body filter cuts buffers by adjusting pos/last or file_pos/
 * file_last, so a file range still goes out with sendfile. A multipart
 * response needs the whole body in one buffer (what static files send).
 */


typedef struct {
    off_t                 start;
    off_t                 end;              /* exclusive */
    weir_str_t            header;           /* multipart: part header */
} weir_http_range_t;


#define WEIR_HTTP_RANGE_SINGLE       1
#define WEIR_HTTP_RANGE_MULTI        2
#define WEIR_HTTP_RANGE_UNSATISFIED  3


typedef struct {
    weir_uint_t           type;
    off_t                 whole;            /* the full body's length */
    off_t                 offset;           /* of the next buffer's data */
    weir_array_t          ranges;           /* of weir_http_range_t */
    weir_str_t            boundary;         /* multipart: "\r\n--B--\r\n" */
    weir_str_t            body;             /* 416: the page */
    unsigned              done:1;
} weir_http_range_ctx_t;


static weir_int_t weir_http_range_header_filter(weir_http_request_t *r);
static weir_int_t weir_http_range_body_filter(weir_http_request_t *r,
    weir_chain_t *in);
static weir_int_t weir_http_range_parse(weir_http_request_t *r,
    weir_http_range_ctx_t *ctx, weir_uint_t max);
static weir_int_t weir_http_range_if_range(weir_http_request_t *r);
static weir_int_t weir_http_range_single_header(weir_http_request_t *r,
    weir_http_range_ctx_t *ctx);
static weir_int_t weir_http_range_multi_header(weir_http_request_t *r,
    weir_http_range_ctx_t *ctx);
static weir_int_t weir_http_range_unsatisfied(weir_http_request_t *r,
    weir_http_range_ctx_t *ctx);
static weir_int_t weir_http_range_single_body(weir_http_request_t *r,
    weir_http_range_ctx_t *ctx, weir_chain_t *in);
static weir_int_t weir_http_range_multi_body(weir_http_request_t *r,
    weir_http_range_ctx_t *ctx, weir_chain_t *in);
static weir_int_t weir_http_range_page_body(weir_http_request_t *r,
    weir_http_range_ctx_t *ctx, weir_chain_t *in);
static void weir_http_range_consume(weir_chain_t *in);


static weir_http_header_filter_pt  weir_http_next_header_filter;
static weir_http_body_filter_pt    weir_http_next_body_filter;


static weir_http_header_filter_decl_t  weir_http_range_header_filters[] = {
    { "range", 300, weir_http_range_header_filter,
      &weir_http_next_header_filter },
    { NULL, 0, NULL, NULL }
};


static weir_http_body_filter_decl_t  weir_http_range_body_filters[] = {
    { "range", 300, weir_http_range_body_filter,
      &weir_http_next_body_filter },
    { NULL, 0, NULL, NULL }
};


static weir_http_module_t  weir_http_range_filter_module_ctx = {
    NULL,                                  /* preconfiguration */
    NULL,                                  /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL,                                  /* merge location configuration */

    NULL,                                  /* phase handlers */
    weir_http_range_header_filters,        /* header filters */
    weir_http_range_body_filters,          /* body filters */
    NULL                                   /* request body filters */
};


weir_module_t  weir_http_range_filter_module = {
    WEIR_MODULE_V1,
    &weir_http_range_filter_module_ctx,    /* module context */
    NULL,                                  /* module directives */
    WEIR_HTTP_MODULE,                      /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    WEIR_MODULE_V1_PADDING
};


static weir_str_t  weir_http_range_bytes = weir_string("bytes");

static const char  weir_http_range_page[] =
    "<html>\r\n"
    "<head><title>416 Range Not Satisfiable</title></head>\r\n"
    "<body>\r\n"
    "<center><h1>416 Range Not Satisfiable</h1></center>\r\n"
    "</body>\r\n"
    "</html>\r\n";


static weir_int_t
weir_http_range_header_filter(weir_http_request_t *r)
{
    weir_int_t                  rc;
    weir_uint_t                 max;
    weir_http_header_t         *h;
    weir_http_range_ctx_t      *ctx;
    weir_http_core_loc_conf_t  *clcf;

    if (r->http_version < WEIR_HTTP_VERSION_10
        || r->headers_out.status != WEIR_HTTP_OK
        || r != r->main
        || !r->allow_ranges
        || r->headers_out.content_length_n == -1)
    {
        return weir_http_next_header_filter(r);
    }

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    /* unset means no limit; "max_ranges 0" turns ranges off */
    max = clcf->max_ranges;

    if (max == 0) {
        return weir_http_next_header_filter(r);
    }

    if (r->headers_in.range == NULL) {
        h = weir_http_add_header_out(r, "Accept-Ranges",
                                     &weir_http_range_bytes);
        if (h == NULL) {
            return WEIR_ERROR;
        }

        r->headers_out.accept_ranges = h;

        return weir_http_next_header_filter(r);
    }

    if (r->headers_in.if_range && !weir_http_range_if_range(r)) {
        return weir_http_next_header_filter(r);
    }

    ctx = weir_pcalloc(r->pool, sizeof(weir_http_range_ctx_t));
    if (ctx == NULL) {
        return WEIR_ERROR;
    }

    if (weir_array_init(&ctx->ranges, r->pool, 1, sizeof(weir_http_range_t))
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    ctx->whole = r->headers_out.content_length_n;

    rc = weir_http_range_parse(r, ctx, max);

    switch (rc) {

    case WEIR_OK:
        weir_http_set_ctx(r, ctx, weir_http_range_filter_module);

        if (ctx->ranges.nelts == 1) {
            return weir_http_range_single_header(r, ctx);
        }

        return weir_http_range_multi_header(r, ctx);

    case WEIR_HTTP_RANGE_NOT_SATISFIABLE:
        weir_http_set_ctx(r, ctx, weir_http_range_filter_module);
        return weir_http_range_unsatisfied(r, ctx);

    case WEIR_ERROR:
        return WEIR_ERROR;

    default: /* WEIR_DECLINED: ignore the header, send everything */
        return weir_http_next_header_filter(r);
    }
}


/*
 * Parses "bytes=a-b, c-, -d" against the length. Returns WEIR_OK (ranges
 * in ctx), WEIR_HTTP_RANGE_NOT_SATISFIABLE, WEIR_DECLINED (ignore the
 * header) or WEIR_ERROR.
 */

static weir_int_t
weir_http_range_parse(weir_http_request_t *r, weir_http_range_ctx_t *ctx,
    weir_uint_t max)
{
    off_t               size, start, end, total, cutoff;
    weir_uint_t         suffix;
    unsigned char      *p, *last;
    weir_http_range_t  *range;

    size = r->headers_out.content_length_n;
    p = r->headers_in.range->value.data;
    last = p + r->headers_in.range->value.len;

    if (last - p < 6 || weir_strncasecmp(p, (unsigned char *) "bytes", 5)
                        != 0)
    {
        return WEIR_DECLINED;
    }

    p += 5;

    while (p < last && (*p == ' ' || *p == '\t')) {
        p++;
    }

    if (p == last || *p++ != '=') {
        return WEIR_DECLINED;
    }

    cutoff = (WEIR_MAX_OFF_T_VALUE - 9) / 10;
    total = 0;

    for ( ;; ) {
        start = 0;
        end = 0;
        suffix = 0;

        while (p < last && (*p == ' ' || *p == '\t')) {
            p++;
        }

        if (p < last && *p == '-') {
            suffix = 1;
            p++;

        } else {
            if (p == last || *p < '0' || *p > '9') {
                return WEIR_DECLINED;
            }

            while (p < last && *p >= '0' && *p <= '9') {
                if (start >= cutoff) {
                    return WEIR_DECLINED;
                }

                start = start * 10 + (*p++ - '0');
            }

            while (p < last && (*p == ' ' || *p == '\t')) {
                p++;
            }

            if (p == last || *p++ != '-') {
                return WEIR_DECLINED;
            }
        }

        while (p < last && (*p == ' ' || *p == '\t')) {
            p++;
        }

        if (p < last && *p >= '0' && *p <= '9') {
            while (p < last && *p >= '0' && *p <= '9') {
                if (end >= cutoff) {
                    return WEIR_DECLINED;
                }

                end = end * 10 + (*p++ - '0');
            }

            if (suffix) {
                /* the last "end" bytes */
                start = (end < size) ? size - end : 0;
                end = size - 1;

                if (start > end) {
                    goto next;      /* "-0" or an empty body */
                }

            } else if (end < start) {
                return WEIR_DECLINED;
            }

            end++;

        } else if (suffix) {
            return WEIR_DECLINED;

        } else {
            end = size;
        }

        if (end > size) {
            end = size;
        }

        if (start < size) {
            range = weir_array_push(&ctx->ranges);
            if (range == NULL) {
                return WEIR_ERROR;
            }

            range->start = start;
            range->end = end;
            range->header.len = 0;

            total += end - start;

            if (ctx->ranges.nelts > max) {
                return WEIR_DECLINED;
            }
        }

    next:

        while (p < last && (*p == ' ' || *p == '\t')) {
            p++;
        }

        if (p == last) {
            break;
        }

        if (*p++ != ',') {
            return WEIR_DECLINED;
        }
    }

    if (ctx->ranges.nelts == 0) {
        return WEIR_HTTP_RANGE_NOT_SATISFIABLE;
    }

    if (total > size) {
        return WEIR_DECLINED;
    }

    return WEIR_OK;
}


/* 1: If-Range holds (send the ranges), 0: send everything */

static weir_int_t
weir_http_range_if_range(weir_http_request_t *r)
{
    time_t          t;
    weir_str_t     *v, *etag;

    v = &r->headers_in.if_range->value;

    /* "..." or W/"...": a date may start with 'W' too ("Wed, ...") */

    if (v->len >= 2
        && (v->data[0] == '"' || (v->data[0] == 'W' && v->data[1] == '/')))
    {

        /* an entity tag: the strong comparison */

        if (r->headers_out.etag == NULL) {
            return 0;
        }

        etag = &r->headers_out.etag->value;

        if (v->data[0] == 'W' || (etag->len && etag->data[0] == 'W')) {
            return 0;
        }

        return weir_str_eq(v, etag);
    }

    if (r->headers_out.last_modified_time == -1) {
        return 0;
    }

    t = weir_parse_http_time(v->data, v->len);

    return t != -1 && t == r->headers_out.last_modified_time;
}


static weir_int_t
weir_http_range_single_header(weir_http_request_t *r,
    weir_http_range_ctx_t *ctx)
{
    weir_str_t          value;
    weir_http_range_t  *range;
    weir_http_header_t *h;

    range = ctx->ranges.elts;

    if (weir_pstrfmt(r->pool, &value, "bytes %jd-%jd/%jd",
                     (intmax_t) range->start, (intmax_t) range->end - 1,
                     (intmax_t) r->headers_out.content_length_n)
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    h = weir_http_add_header_out(r, "Content-Range", &value);
    if (h == NULL) {
        return WEIR_ERROR;
    }

    r->headers_out.content_range = h;

    ctx->type = WEIR_HTTP_RANGE_SINGLE;

    r->headers_out.status = WEIR_HTTP_PARTIAL_CONTENT;
    r->headers_out.status_line.len = 0;
    r->headers_out.content_length_n = range->end - range->start;
    r->headers_out.content_offset = range->start;
    weir_http_clear_header_out(&r->headers_out.content_length);
    weir_http_clear_header_out(&r->headers_out.accept_ranges);

    return weir_http_next_header_filter(r);
}


static weir_int_t
weir_http_range_multi_header(weir_http_request_t *r,
    weir_http_range_ctx_t *ctx)
{
    off_t                   len;
    weir_uint_t             i;
    weir_str_t              type, boundary;
    weir_http_range_t      *range;
    static weir_uint_t      counter;

    ctx->type = WEIR_HTTP_RANGE_MULTI;

    /* unique enough: a body that happens to contain the boundary line is
     * the only thing that could confuse a client */

    if (weir_pstrfmt(r->pool, &boundary, "%08x%010u%010u",
                     (unsigned) weir_current_msec,
                     (unsigned) getpid(), (unsigned) ++counter)
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    if (r->headers_out.content_type.len == 0) {
        type.len = 0;
        type.data = NULL;

    } else if (r->headers_out.charset.len) {
        if (weir_pstrfmt(r->pool, &type, "Content-Type: %.*s; charset=%.*s"
                         "\r\n",
                         WEIR_STR_ARG(r->headers_out.content_type),
                         WEIR_STR_ARG(r->headers_out.charset))
            != WEIR_OK)
        {
            return WEIR_ERROR;
        }

    } else {
        if (weir_pstrfmt(r->pool, &type, "Content-Type: %.*s\r\n",
                         WEIR_STR_ARG(r->headers_out.content_type))
            != WEIR_OK)
        {
            return WEIR_ERROR;
        }
    }

    len = 0;
    range = ctx->ranges.elts;

    for (i = 0; i < ctx->ranges.nelts; i++) {
        if (weir_pstrfmt(r->pool, &range[i].header,
                         "\r\n--%.*s\r\n%.*sContent-Range: bytes %jd-%jd/%jd"
                         "\r\n\r\n",
                         WEIR_STR_ARG(boundary), WEIR_STR_ARG(type),
                         (intmax_t) range[i].start,
                         (intmax_t) range[i].end - 1,
                         (intmax_t) r->headers_out.content_length_n)
            != WEIR_OK)
        {
            return WEIR_ERROR;
        }

        len += range[i].header.len + range[i].end - range[i].start;
    }

    if (weir_pstrfmt(r->pool, &ctx->boundary, "\r\n--%.*s--\r\n",
                     WEIR_STR_ARG(boundary))
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    len += ctx->boundary.len;

    if (weir_pstrfmt(r->pool, &type, "multipart/byteranges; boundary=%.*s",
                     WEIR_STR_ARG(boundary))
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    r->headers_out.content_type = type;
    r->headers_out.content_type_len = type.len;
    r->headers_out.content_type_lowcase = NULL;
    r->headers_out.charset.len = 0;

    r->headers_out.status = WEIR_HTTP_PARTIAL_CONTENT;
    r->headers_out.status_line.len = 0;
    r->headers_out.content_length_n = len;
    weir_http_clear_header_out(&r->headers_out.content_length);
    weir_http_clear_header_out(&r->headers_out.accept_ranges);

    return weir_http_next_header_filter(r);
}


/*
 * 416: the header says "bytes * /size" (without the space) and the body
 * filter replaces the response body with a short page.
 */

static weir_int_t
weir_http_range_unsatisfied(weir_http_request_t *r,
    weir_http_range_ctx_t *ctx)
{
    weir_str_t           value;
    weir_http_header_t  *h;

    static weir_str_t  html = weir_string("text/html");

    if (weir_pstrfmt(r->pool, &value, "bytes */%jd",
                     (intmax_t) r->headers_out.content_length_n)
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    h = weir_http_add_header_out(r, "Content-Range", &value);
    if (h == NULL) {
        return WEIR_ERROR;
    }

    r->headers_out.content_range = h;

    ctx->type = WEIR_HTTP_RANGE_UNSATISFIED;
    ctx->body.data = (unsigned char *) weir_http_range_page;
    ctx->body.len = sizeof(weir_http_range_page) - 1;

    r->headers_out.status = WEIR_HTTP_RANGE_NOT_SATISFIABLE;
    r->headers_out.status_line.len = 0;
    r->headers_out.content_type = html;
    r->headers_out.content_type_len = html.len;
    r->headers_out.content_type_lowcase = NULL;
    r->headers_out.charset.len = 0;
    r->headers_out.content_length_n = ctx->body.len;
    r->headers_out.last_modified_time = -1;
    weir_http_clear_header_out(&r->headers_out.last_modified);
    weir_http_clear_header_out(&r->headers_out.etag);
    weir_http_clear_header_out(&r->headers_out.content_length);
    weir_http_clear_header_out(&r->headers_out.accept_ranges);

    return weir_http_next_header_filter(r);
}


static weir_int_t
weir_http_range_body_filter(weir_http_request_t *r, weir_chain_t *in)
{
    weir_http_range_ctx_t  *ctx;

    ctx = weir_http_get_module_ctx(r, weir_http_range_filter_module);

    if (ctx == NULL || in == NULL) {
        return weir_http_next_body_filter(r, in);
    }

    if (ctx->done) {
        /* everything was sent: what follows is already accounted for */
        weir_http_range_consume(in);
        return weir_http_next_body_filter(r, NULL);
    }

    switch (ctx->type) {

    case WEIR_HTTP_RANGE_SINGLE:
        return weir_http_range_single_body(r, ctx, in);

    case WEIR_HTTP_RANGE_MULTI:
        return weir_http_range_multi_body(r, ctx, in);

    default:
        return weir_http_range_page_body(r, ctx, in);
    }
}


/* marks the buffers of in as sent so that their owners can reuse them */

static void
weir_http_range_consume(weir_chain_t *in)
{
    weir_buf_t  *b;

    for ( /* void */ ; in; in = in->next) {
        b = in->buf;

        if (weir_buf_in_memory(b)) {
            b->pos = b->last;
        }

        if (b->in_file) {
            b->file_pos = b->file_last;
        }
    }
}


/* cuts a buffer that holds body bytes [offset, offset + size) down to
 * [start, end) */

static void
weir_http_range_cut(weir_buf_t *b, off_t offset, off_t start, off_t end)
{
    off_t  size, head, tail;

    size = weir_buf_size(b);
    head = (start > offset) ? start - offset : 0;
    tail = (offset + size > end) ? offset + size - end : 0;

    if (weir_buf_in_memory(b)) {
        b->pos += head;
        b->last -= tail;
    }

    if (b->in_file) {
        b->file_pos += head;
        b->file_last -= tail;
    }
}


static weir_int_t
weir_http_range_single_body(weir_http_request_t *r,
    weir_http_range_ctx_t *ctx, weir_chain_t *in)
{
    off_t               start, last;
    weir_buf_t         *b;
    weir_chain_t       *out, **ll, *cl;
    weir_http_range_t  *range;

    range = ctx->ranges.elts;
    out = NULL;
    ll = &out;

    for ( /* void */ ; in; in = in->next) {
        b = in->buf;

        start = ctx->offset;
        last = start + weir_buf_size(b);
        ctx->offset = last;

        if (ctx->done || range->end <= start || range->start >= last) {

            if (weir_buf_special(b) && !ctx->done && !b->last_buf) {
                /* a flush mark passes through */
                goto link;
            }

            weir_http_range_consume(in);
            continue;
        }

        weir_http_range_cut(b, start, range->start, range->end);

        if (range->end <= last) {
            b->last_buf = (r == r->main) ? 1 : 0;
            b->last_in_chain = 1;
            ctx->done = 1;

        } else {
            b->last_buf = 0;
        }

    link:

        cl = weir_palloc(r->pool, sizeof(weir_chain_t));
        if (cl == NULL) {
            return WEIR_ERROR;
        }

        cl->buf = b;
        cl->next = NULL;
        *ll = cl;
        ll = &cl->next;
    }

    return weir_http_next_body_filter(r, out);
}


static weir_int_t
weir_http_range_multi_body(weir_http_request_t *r,
    weir_http_range_ctx_t *ctx, weir_chain_t *in)
{
    weir_uint_t          i;
    weir_buf_t          *b, *hb, *db;
    weir_chain_t        *out, **ll, *cl;
    weir_http_range_t   *range;

    b = in->buf;

    if (in->next || !b->last_buf || weir_buf_size(b) != ctx->whole) {
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "multipart byte ranges need the response body in "
                       "one buffer");
        return WEIR_ERROR;
    }

    range = ctx->ranges.elts;
    out = NULL;
    ll = &out;

    for (i = 0; i < ctx->ranges.nelts; i++) {

        hb = weir_calloc_buf(r->pool);
        db = weir_alloc_buf(r->pool);
        cl = weir_palloc(r->pool, 2 * sizeof(weir_chain_t));

        if (hb == NULL || db == NULL || cl == NULL) {
            return WEIR_ERROR;
        }

        hb->memory = 1;
        hb->pos = range[i].header.data;
        hb->last = hb->pos + range[i].header.len;
        hb->start = hb->pos;
        hb->end = hb->last;

        *db = *b;
        db->last_buf = 0;
        db->last_in_chain = 0;
        db->shadow = b;
        weir_http_range_cut(db, 0, range[i].start, range[i].end);

        cl[0].buf = hb;
        cl[0].next = &cl[1];
        cl[1].buf = db;
        cl[1].next = NULL;
        *ll = &cl[0];
        ll = &cl[1].next;
    }

    hb = weir_calloc_buf(r->pool);
    cl = weir_palloc(r->pool, sizeof(weir_chain_t));

    if (hb == NULL || cl == NULL) {
        return WEIR_ERROR;
    }

    hb->memory = 1;
    hb->pos = ctx->boundary.data;
    hb->last = hb->pos + ctx->boundary.len;
    hb->start = hb->pos;
    hb->end = hb->last;
    hb->last_buf = 1;
    hb->last_in_chain = 1;

    cl->buf = hb;
    cl->next = NULL;
    *ll = cl;

    /* the copies send the original's bytes */
    weir_http_range_consume(in);
    ctx->done = 1;

    return weir_http_next_body_filter(r, out);
}


static weir_int_t
weir_http_range_page_body(weir_http_request_t *r,
    weir_http_range_ctx_t *ctx, weir_chain_t *in)
{
    weir_uint_t    last;
    weir_buf_t    *b;
    weir_chain_t  *cl;

    last = 0;

    for (cl = in; cl; cl = cl->next) {
        if (cl->buf->last_buf) {
            last = 1;
        }
    }

    weir_http_range_consume(in);

    if (!last) {
        return weir_http_next_body_filter(r, NULL);
    }

    b = weir_calloc_buf(r->pool);
    cl = weir_palloc(r->pool, sizeof(weir_chain_t));

    if (b == NULL || cl == NULL) {
        return WEIR_ERROR;
    }

    b->memory = 1;
    b->pos = ctx->body.data;
    b->last = b->pos + ctx->body.len;
    b->start = b->pos;
    b->end = b->last;
    b->last_buf = 1;
    b->last_in_chain = 1;

    cl->buf = b;
    cl->next = NULL;

    ctx->done = 1;

    return weir_http_next_body_filter(r, cl);
}
