#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_http.h"
#include "weir.h"


/*
 * Special responses: the built-in pages for 3xx/4xx/5xx, error_page
 * (to a URI, to a named location, with an =code override, or a
 * redirect), whether the connection may be kept after an error, and
 * weir_http_send_response() for modules that answer with a fixed text.
 */


typedef struct {
    weir_uint_t                  status;
    const char                  *reason;
} weir_http_status_text_t;


static weir_int_t weir_http_send_error_page(weir_http_request_t *r,
    weir_http_err_page_t *err_page);
static weir_int_t weir_http_send_special_response(weir_http_request_t *r,
    weir_http_core_loc_conf_t *clcf, weir_uint_t status);
static void weir_http_clean_entity_headers(weir_http_request_t *r);
static weir_int_t weir_http_send_memory_body(weir_http_request_t *r,
    unsigned char *data, size_t len);


#define weir_http_clear_out(h)                                                \
    if (*(h)) {                                                               \
        weir_http_clear_header_out(h);                                        \
        *(h) = NULL;                                                          \
    }


/* reason phrases (RFC 9110): the HTTP/1 status line and the built-in
 * error pages share them */

static weir_http_status_text_t  weir_http_status_texts[] = {
    { 100, "Continue" },
    { 101, "Switching Protocols" },
    { 102, "Processing" },
    { 103, "Early Hints" },
    { 200, "OK" },
    { 201, "Created" },
    { 202, "Accepted" },
    { 203, "Non-Authoritative Information" },
    { 204, "No Content" },
    { 205, "Reset Content" },
    { 206, "Partial Content" },
    { 300, "Multiple Choices" },
    { 301, "Moved Permanently" },
    { 302, "Found" },
    { 303, "See Other" },
    { 304, "Not Modified" },
    { 307, "Temporary Redirect" },
    { 308, "Permanent Redirect" },
    { 400, "Bad Request" },
    { 401, "Unauthorized" },
    { 402, "Payment Required" },
    { 403, "Forbidden" },
    { 404, "Not Found" },
    { 405, "Method Not Allowed" },
    { 406, "Not Acceptable" },
    { 408, "Request Timeout" },
    { 409, "Conflict" },
    { 410, "Gone" },
    { 411, "Length Required" },
    { 412, "Precondition Failed" },
    { 413, "Content Too Large" },
    { 414, "URI Too Long" },
    { 415, "Unsupported Media Type" },
    { 416, "Range Not Satisfiable" },
    { 417, "Expectation Failed" },
    { 421, "Misdirected Request" },
    { 422, "Unprocessable Content" },
    { 426, "Upgrade Required" },
    { 429, "Too Many Requests" },
    { 431, "Request Header Fields Too Large" },
    { 500, "Internal Server Error" },
    { 501, "Not Implemented" },
    { 502, "Bad Gateway" },
    { 503, "Service Unavailable" },
    { 504, "Gateway Timeout" },
    { 505, "HTTP Version Not Supported" },
    { 507, "Insufficient Storage" },
    { 0, NULL }
};


const char *
weir_http_status_reason(weir_uint_t status)
{
    weir_http_status_text_t  *t;

    for (t = weir_http_status_texts; t->reason; t++) {
        if (t->status == status) {
            return t->reason;
        }
    }

    return NULL;
}


weir_int_t
weir_http_special_response_handler(weir_http_request_t *r, weir_int_t error)
{
    weir_uint_t                 i;
    weir_http_err_page_t       *err_page;
    weir_http_core_loc_conf_t  *clcf;

    weir_log_debug(r->connection->log, 0, "http special response: %d, \"%.*s\"",
                   (int) error, WEIR_STR_ARG(r->uri));

    r->err_status = error;

    if (error == WEIR_HTTP_CLOSE) {
        /* no response at all: the status is kept for the log */
        r->headers_out.status = error;
        r->keepalive = 0;
        r->lingering_close = 0;
        return WEIR_ERROR;
    }

    if (r->header_sent) {
        weir_log_error(WEIR_LOG_INFO, r->connection->log, 0,
                       "cannot send %d: the response header was already "
                       "sent", (int) error);
        r->keepalive = 0;
        return WEIR_ERROR;
    }

    /* errors after which the stream is not trusted to frame another
     * request: the request head or body was not read as it should */
    switch (error) {
    case WEIR_HTTP_BAD_REQUEST:
    case WEIR_HTTP_REQUEST_TIME_OUT:
    case WEIR_HTTP_REQUEST_ENTITY_TOO_LARGE:
    case WEIR_HTTP_REQUEST_URI_TOO_LARGE:
    case WEIR_HTTP_REQUEST_HEADER_TOO_LARGE:
    case WEIR_HTTP_INTERNAL_SERVER_ERROR:
    case WEIR_HTTP_NOT_IMPLEMENTED:
    case WEIR_HTTP_VERSION_NOT_SUPPORTED:
        r->keepalive = 0;
        break;
    default:
        break;
    }

    if (r->reading_body) {
        r->keepalive = 0;
        r->lingering_close = 1;
    }

    r->headers_out.content_type.len = 0;
    r->headers_out.content_type_len = 0;

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    /* no error_page once the redirect budget is spent (its own 500),
     * nor from inside a filter: the original response is still being
     * unwound */
    if (!r->error_page && clcf->error_pages && r->uri_changes != 0
        && !r->filter_finalize)
    {
        if (clcf->recursive_error_pages != 1) {
            r->error_page = 1;
        }

        err_page = clcf->error_pages->elts;

        for (i = 0; i < clcf->error_pages->nelts; i++) {
            if (err_page[i].status == error) {
                return weir_http_send_error_page(r, &err_page[i]);
            }
        }
    }

    r->expect_tested = 1;

    if (weir_http_discard_request_body(r) != WEIR_OK) {
        r->keepalive = 0;
    }

    return weir_http_send_special_response(r, clcf, (weir_uint_t) error);
}


/*
 * error_page: an internal redirect to a URI ("/..."), a named location
 * ("@name"), or a redirect to anything else. overwrite: -1 keeps the
 * error status, 0 ("=") takes the status of the page, N ("=N") sets it.
 */

static weir_int_t
weir_http_send_error_page(weir_http_request_t *r,
    weir_http_err_page_t *err_page)
{
    weir_int_t                  overwrite;
    weir_str_t                  uri, args;
    weir_http_header_t         *location;
    weir_http_core_loc_conf_t  *clcf;

    overwrite = err_page->overwrite;

    if (overwrite && overwrite != WEIR_HTTP_OK) {
        r->expect_tested = 1;
    }

    if (overwrite >= 0) {
        r->err_status = overwrite;
    }

    if (weir_http_complex_value(r, &err_page->value, &uri) != WEIR_OK) {
        return WEIR_ERROR;
    }

    if (uri.len && uri.data[0] == '/') {

        args = err_page->args;

        if (weir_strlchr(uri.data, uri.data + uri.len, '?')) {
            weir_http_split_args(r, &uri, &args);
        }

        if (r->method != WEIR_HTTP_HEAD) {
            r->method = WEIR_HTTP_GET;
            r->method_name = weir_http_core_get_method;
        }

        if (weir_http_discard_request_body(r) != WEIR_OK) {
            r->keepalive = 0;
        }

        return weir_http_internal_redirect(r, &uri, &args);
    }

    if (uri.len && uri.data[0] == '@') {

        if (weir_http_discard_request_body(r) != WEIR_OK) {
            r->keepalive = 0;
        }

        return weir_http_named_location(r, &uri);
    }

    r->expect_tested = 1;

    if (weir_http_discard_request_body(r) != WEIR_OK) {
        r->keepalive = 0;
    }

    if (overwrite != WEIR_HTTP_MOVED_PERMANENTLY
        && overwrite != WEIR_HTTP_MOVED_TEMPORARILY
        && overwrite != WEIR_HTTP_SEE_OTHER
        && overwrite != WEIR_HTTP_TEMPORARY_REDIRECT
        && overwrite != WEIR_HTTP_PERMANENT_REDIRECT)
    {
        r->err_status = WEIR_HTTP_MOVED_TEMPORARILY;
    }

    weir_http_clear_out(&r->headers_out.location);

    location = weir_http_add_header_out(r, "Location", &uri);
    if (location == NULL) {
        return WEIR_ERROR;
    }

    r->headers_out.location = location;

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    return weir_http_send_special_response(r, clcf,
                                           (weir_uint_t) r->err_status);
}


static weir_int_t
weir_http_send_special_response(weir_http_request_t *r,
    weir_http_core_loc_conf_t *clcf, weir_uint_t status)
{
    size_t          size;
    weir_int_t      rc;
    const char     *reason, *tail;
    unsigned char  *page, *p;

    r->headers_out.status = status;
    r->headers_out.status_line.len = 0;

    weir_http_clean_entity_headers(r);

    reason = weir_http_status_reason(status);

    if (status < 200 || status == WEIR_HTTP_NO_CONTENT
        || status == WEIR_HTTP_NOT_MODIFIED)
    {
        r->header_only = 1;
        r->headers_out.content_length_n = 0;
        return weir_http_send_header(r);
    }

    if (reason == NULL && status < 400) {
        /* a status weir has no page for: an empty body */
        r->headers_out.content_length_n = 0;

        if (r->method == WEIR_HTTP_HEAD) {
            r->header_only = 1;
        }

        rc = weir_http_send_header(r);
        if (rc == WEIR_ERROR || rc > WEIR_OK || r->header_only) {
            return rc;
        }

        return weir_http_send_memory_body(r, NULL, 0);
    }

    switch (clcf->server_tokens) {
    case WEIR_HTTP_SERVER_TOKENS_OFF:
        tail = "<hr><center>weir</center>\r\n";
        break;
    default:
        tail = "<hr><center>" WEIR_VER "</center>\r\n";
        break;
    }

    size = 256 + weir_strlen(tail);

    page = weir_pnalloc(r->pool, size);
    if (page == NULL) {
        return WEIR_ERROR;
    }

    if (reason) {
        p = weir_slprintf(page, page + size,
                          "<html>\r\n"
                          "<head><title>%u %s</title></head>\r\n"
                          "<body>\r\n"
                          "<center><h1>%u %s</h1></center>\r\n"
                          "%s"
                          "</body>\r\n"
                          "</html>\r\n",
                          (unsigned) status, reason, (unsigned) status,
                          reason, tail);
    } else {
        p = weir_slprintf(page, page + size,
                          "<html>\r\n"
                          "<head><title>%u</title></head>\r\n"
                          "<body>\r\n"
                          "<center><h1>%u</h1></center>\r\n"
                          "%s"
                          "</body>\r\n"
                          "</html>\r\n",
                          (unsigned) status, (unsigned) status, tail);
    }

    weir_str_set(&r->headers_out.content_type, "text/html");
    r->headers_out.content_type_len = sizeof("text/html") - 1;
    r->headers_out.content_type_lowcase = NULL;
    r->headers_out.content_length_n = p - page;

    if (r->method == WEIR_HTTP_HEAD) {
        r->header_only = 1;
    }

    rc = weir_http_send_header(r);

    if (rc == WEIR_ERROR || rc > WEIR_OK || r->header_only) {
        return rc;
    }

    return weir_http_send_memory_body(r, page, p - page);
}


/* what described the old response's entity does not describe a page */

static void
weir_http_clean_entity_headers(weir_http_request_t *r)
{
    weir_http_clear_out(&r->headers_out.content_length);
    weir_http_clear_out(&r->headers_out.content_encoding);
    weir_http_clear_out(&r->headers_out.last_modified);
    weir_http_clear_out(&r->headers_out.content_range);
    weir_http_clear_out(&r->headers_out.accept_ranges);
    weir_http_clear_out(&r->headers_out.etag);

    r->headers_out.content_length_n = -1;
    r->headers_out.last_modified_time = -1;
    r->headers_out.content_offset = 0;
    r->allow_ranges = 0;
    r->single_range = 0;
    r->chunked = 0;
}


static weir_int_t
weir_http_send_memory_body(weir_http_request_t *r, unsigned char *data,
    size_t len)
{
    weir_buf_t    *b;
    weir_chain_t   out;

    b = weir_calloc_buf(r->pool);
    if (b == NULL) {
        return WEIR_ERROR;
    }

    b->start = data;
    b->pos = data;
    b->last = data + len;
    b->end = data + len;
    b->memory = (len > 0);
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    out.buf = b;
    out.next = NULL;

    return weir_http_output_filter(r, &out);
}


/*
 * A response with a fixed body (the return directive and friends). For
 * a redirect status body is the URL: it becomes Location and the status
 * is returned so that finalizing sends the built-in page (or the
 * error_page for it). Without content_type the body has the type of the
 * URI's extension or default_type, as any file would.
 */

weir_int_t
weir_http_send_response(weir_http_request_t *r, weir_uint_t status,
    weir_str_t *content_type, weir_str_t *body)
{
    weir_int_t           rc;
    weir_http_header_t  *location;

    if (status != WEIR_HTTP_SWITCHING_PROTOCOLS
        && weir_http_discard_request_body(r) != WEIR_OK)
    {
        r->keepalive = 0;
    }

    switch (status) {

    case WEIR_HTTP_MOVED_PERMANENTLY:
    case WEIR_HTTP_MOVED_TEMPORARILY:
    case WEIR_HTTP_SEE_OTHER:
    case WEIR_HTTP_TEMPORARY_REDIRECT:
    case WEIR_HTTP_PERMANENT_REDIRECT:

        weir_http_clear_out(&r->headers_out.location);

        if (body == NULL) {
            return (weir_int_t) status;
        }

        location = weir_http_add_header_out(r, "Location", body);
        if (location == NULL) {
            return WEIR_HTTP_INTERNAL_SERVER_ERROR;
        }

        r->headers_out.location = location;

        return (weir_int_t) status;

    default:
        break;
    }

    r->headers_out.status = status;
    r->headers_out.status_line.len = 0;

    weir_http_clean_entity_headers(r);

    if (content_type && content_type->len) {
        r->headers_out.content_type = *content_type;
        r->headers_out.content_type_len = content_type->len;
        r->headers_out.content_type_lowcase = NULL;

    } else if (status >= WEIR_HTTP_OK && status != WEIR_HTTP_NO_CONTENT
               && weir_http_set_content_type(r) != WEIR_OK)
    {
        /* as nginx: the type of the URI's extension, else default_type;
         * a 204 has none (nginx drops it) */
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (status < 200 || status == WEIR_HTTP_NO_CONTENT
        || status == WEIR_HTTP_NOT_MODIFIED)
    {
        r->header_only = 1;
        r->headers_out.content_length_n = 0;
        return weir_http_send_header(r);
    }

    r->headers_out.content_length_n = body ? (off_t) body->len : 0;

    if (r->method == WEIR_HTTP_HEAD) {
        r->header_only = 1;
    }

    rc = weir_http_send_header(r);

    if (rc == WEIR_ERROR || rc > WEIR_OK || r->header_only) {
        return rc;
    }

    return weir_http_send_memory_body(r, body ? body->data : NULL,
                                      body ? body->len : 0);
}


/*
 * A filter replaces the response with an error (a range filter's 416, a
 * conditional 412). The other modules' contexts are cleared so that
 * their filters start over on the new response; m keeps its own.
 * Returns what the filter should return: WEIR_ERROR once the error
 * response is under way (the original response must stop), or the
 * error code.
 */

weir_int_t
weir_http_filter_finalize_request(weir_http_request_t *r, weir_module_t *m,
    weir_int_t error)
{
    void        *ctx;
    weir_int_t   rc;

    ctx = NULL;

    if (m) {
        ctx = r->ctx[m->ctx_index];
    }

    weir_memzero(r->ctx, sizeof(void *) * weir_http_max_module);

    if (m) {
        r->ctx[m->ctx_index] = ctx;
    }

    r->filter_finalize = 1;

    if (r->header_sent) {
        /* a body filter, after the header went out: nothing to replace */
        weir_log_error(WEIR_LOG_INFO, r->connection->log, 0,
                       "cannot send %d: the response header was already "
                       "sent", (int) error);
        r->keepalive = 0;
        return WEIR_ERROR;
    }

    weir_http_clear_out(&r->headers_out.location);

    rc = weir_http_special_response_handler(r, error);

    switch (rc) {
    case WEIR_OK:
    case WEIR_DONE:
    case WEIR_AGAIN:
        return WEIR_ERROR;
    default:
        return rc;
    }
}
