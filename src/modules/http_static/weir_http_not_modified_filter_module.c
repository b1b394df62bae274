#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"

/*
 * Conditional requests (RFC 9110, section 13) for responses that declare a
 * validator: If-Match and If-Unmodified-Since fail with 412,
 * If-None-Match and If-Modified-Since turn a 200 into a 304. As the RFC
 * says, If-Unmodified-Since is ignored when If-Match is present and
 * If-Modified-Since when If-None-Match is present.
 */


static weir_int_t weir_http_not_modified_header_filter(
    weir_http_request_t *r);
static weir_int_t weir_http_nm_test_match(weir_http_request_t *r,
    weir_http_header_t *header, weir_uint_t weak);
static weir_int_t weir_http_nm_test_modified_since(weir_http_request_t *r);


static weir_http_header_filter_pt  weir_http_next_header_filter;


static weir_http_header_filter_decl_t  weir_http_not_modified_filters[] = {
    { "not_modified", 200, weir_http_not_modified_header_filter,
      &weir_http_next_header_filter },
    { NULL, 0, NULL, NULL }
};


static weir_http_module_t  weir_http_not_modified_filter_module_ctx = {
    NULL,                                  /* preconfiguration */
    NULL,                                  /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL,                                  /* merge location configuration */

    NULL,                                  /* phase handlers */
    weir_http_not_modified_filters,        /* header filters */
    NULL,                                  /* body filters */
    NULL                                   /* request body filters */
};


weir_module_t  weir_http_not_modified_filter_module = {
    WEIR_MODULE_V1,
    &weir_http_not_modified_filter_module_ctx, /* module context */
    NULL,                                  /* module directives */
    WEIR_HTTP_MODULE,                      /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    WEIR_MODULE_V1_PADDING
};


static weir_int_t
weir_http_not_modified_header_filter(weir_http_request_t *r)
{
    weir_http_headers_in_t  *hi;

    hi = &r->headers_in;

    if (r->headers_out.status != WEIR_HTTP_OK
        || r != r->main
        || r->disable_not_modified)
    {
        return weir_http_next_header_filter(r);
    }

    if (hi->if_match) {
        if (!weir_http_nm_test_match(r, hi->if_match, 0)) {
            return weir_http_filter_finalize_request(r, NULL,
                                         WEIR_HTTP_PRECONDITION_FAILED);
        }

    } else if (hi->if_unmodified_since
               && r->headers_out.last_modified_time != -1)
    {
        time_t  ius;

        ius = weir_parse_http_time(hi->if_unmodified_since->value.data,
                                   hi->if_unmodified_since->value.len);

        if (ius != -1 && ius < r->headers_out.last_modified_time) {
            return weir_http_filter_finalize_request(r, NULL,
                                         WEIR_HTTP_PRECONDITION_FAILED);
        }
    }

    if (hi->if_none_match) {
        if (!weir_http_nm_test_match(r, hi->if_none_match, 1)) {
            return weir_http_next_header_filter(r);
        }

    } else if (hi->if_modified_since) {
        if (weir_http_nm_test_modified_since(r)) {
            return weir_http_next_header_filter(r);
        }

    } else {
        return weir_http_next_header_filter(r);
    }

    /* 304: the validators stay, the representation's metadata goes */

    r->headers_out.status = WEIR_HTTP_NOT_MODIFIED;
    r->headers_out.status_line.len = 0;
    r->headers_out.content_type.len = 0;
    r->headers_out.content_length_n = -1;
    weir_http_clear_header_out(&r->headers_out.content_length);
    weir_http_clear_header_out(&r->headers_out.accept_ranges);
    r->header_only = 1;

    return weir_http_next_header_filter(r);
}


/* 1: the resource was modified since the date (send it), 0: it was not */

static weir_int_t
weir_http_nm_test_modified_since(weir_http_request_t *r)
{
    time_t                      ims;
    weir_http_core_loc_conf_t  *clcf;

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    if (clcf->if_modified_since == WEIR_HTTP_IMS_OFF
        || r->headers_out.last_modified_time == -1)
    {
        return 1;
    }

    ims = weir_parse_http_time(r->headers_in.if_modified_since->value.data,
                               r->headers_in.if_modified_since->value.len);

    if (ims == -1) {
        return 1;
    }

    if (ims == r->headers_out.last_modified_time) {
        return 0;
    }

    if (clcf->if_modified_since == WEIR_HTTP_IMS_BEFORE
        && ims > r->headers_out.last_modified_time)
    {
        return 0;
    }

    return 1;
}


/*
 * Does one entity tag of the header's list ("*" or "a", W/"b", ...) match
 * the response's ETag? weak: the weak comparison (If-None-Match), else
 * the strong one (If-Match: a weak tag never matches). The list may be
 * split across several header lines (h->next).
 */

static weir_int_t
weir_http_nm_test_match(weir_http_request_t *r, weir_http_header_t *header,
    weir_uint_t weak)
{
    size_t               len;
    unsigned char       *p, *end, *start, *etag;
    weir_http_header_t  *h;

    /* without an ETag only "*" matches: no tag is 0 bytes long */

    etag = NULL;
    len = 0;

    if (r->headers_out.etag) {
        etag = r->headers_out.etag->value.data;
        len = r->headers_out.etag->value.len;
    }

    if (len > 2 && etag[0] == 'W' && etag[1] == '/') {
        if (!weak) {
            return 0;
        }

        etag += 2;
        len -= 2;
    }

    for (h = header; h; h = h->next) {

        p = h->value.data;
        end = p + h->value.len;

        while (p < end) {

            while (p < end && (*p == ' ' || *p == '\t' || *p == ',')) {
                p++;
            }

            if (p == end) {
                break;
            }

            start = p;

            if (*p == '*') {
                return 1;
            }

            if (end - p > 2 && p[0] == 'W' && p[1] == '/') {
                p += 2;

                if (!weak) {
                    /* skip a weak tag: strong comparison never matches */
                    start = NULL;
                }
            }

            if (p == end || *p != '"') {
                /* not an entity tag: skip to the next list element */
                while (p < end && *p != ',') {
                    p++;
                }
                continue;
            }

            if (start != NULL) {
                start = p;
            }

            p++;

            while (p < end && *p != '"') {
                p++;
            }

            if (p == end) {
                break;
            }

            p++;

            if (start != NULL && len
                && (size_t) (p - start) == len
                && weir_memcmp(start, etag, len) == 0)
            {
                return 1;
            }
        }
    }

    return 0;
}
