#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"

/*
 * Static files: the last content handler. It maps the URI to a file under
 * root or alias and sends it as one in_file buffer, so that the protocol
 * writer can use sendfile and the range filter can cut it without reading
 * it. Conditional requests and ranges are the not_modified and range
 * filters (same folder), which act on what this handler declares:
 * last_modified_time, the ETag and r->allow_ranges.
 */


static weir_int_t weir_http_static_handler(weir_http_request_t *r);
static weir_int_t weir_http_static_redirect(weir_http_request_t *r);


static weir_http_phase_decl_t  weir_http_static_phases[] = {
    { WEIR_HTTP_CONTENT_PHASE, 900, "static", weir_http_static_handler },
    { 0, 0, NULL, NULL }
};


static weir_http_module_t  weir_http_static_module_ctx = {
    NULL,                                  /* preconfiguration */
    NULL,                                  /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL,                                  /* merge location configuration */

    weir_http_static_phases,               /* phase handlers */
    NULL,                                  /* header filters */
    NULL,                                  /* body filters */
    NULL                                   /* request body filters */
};


weir_module_t  weir_http_static_module = {
    WEIR_MODULE_V1,
    &weir_http_static_module_ctx,          /* module context */
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
weir_http_static_handler(weir_http_request_t *r)
{
    int                          fd;
    size_t                       root;
    weir_int_t                   rc;
    weir_err_t                   err;
    weir_str_t                   path;
    weir_uint_t                  level;
    weir_buf_t                  *b;
    weir_chain_t                 out;
    struct stat                  st;
    unsigned char               *last;
    weir_pool_cleanup_t         *cln;
    weir_pool_cleanup_file_t    *clnf;
    weir_http_core_loc_conf_t   *clcf;

    if (!(r->method & (WEIR_HTTP_GET|WEIR_HTTP_HEAD|WEIR_HTTP_POST))) {
        return WEIR_HTTP_NOT_ALLOWED;
    }

    if (r->uri.len == 0 || r->uri.data[r->uri.len - 1] == '/') {
        /* a directory: index (or the core's 403) answers it */
        return WEIR_DECLINED;
    }

    last = weir_http_map_uri_to_path(r, &path, &root, 0);
    if (last == NULL) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    path.len = last - path.data;

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    fd = weir_open_file(path.data, WEIR_FILE_RDONLY|WEIR_FILE_NONBLOCK,
                        WEIR_FILE_OPEN, 0);

    if (fd == WEIR_INVALID_FILE) {
        err = weir_errno;

        switch (err) {

        case ENOENT:
        case ENOTDIR:
        case ENAMETOOLONG:
            level = WEIR_LOG_ERR;
            rc = WEIR_HTTP_NOT_FOUND;
            break;

        case EACCES:
        case ELOOP:
            level = WEIR_LOG_ERR;
            rc = WEIR_HTTP_FORBIDDEN;
            break;

        default:
            level = WEIR_LOG_CRIT;
            rc = WEIR_HTTP_INTERNAL_SERVER_ERROR;
            break;
        }

        if (rc != WEIR_HTTP_NOT_FOUND || clcf->log_not_found) {
            weir_log_error(level, r->connection->log, err,
                           "open() \"%s\" failed", (char *) path.data);
        }

        return rc;
    }

    if (fstat(fd, &st) == -1) {
        weir_log_error(WEIR_LOG_CRIT, r->connection->log, weir_errno,
                       "fstat() \"%s\" failed", (char *) path.data);
        (void) close(fd);
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (S_ISDIR(st.st_mode)) {
        (void) close(fd);
        return weir_http_static_redirect(r);
    }

    if (!S_ISREG(st.st_mode)) {
        (void) close(fd);
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "\"%s\" is not a regular file", (char *) path.data);
        return WEIR_HTTP_NOT_FOUND;
    }

    /* the descriptor lives as long as the request: the body may still be
     * in flight when this handler returns */

    cln = weir_pool_cleanup_add(r->pool, sizeof(weir_pool_cleanup_file_t));
    if (cln == NULL) {
        (void) close(fd);
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    cln->handler = weir_pool_cleanup_file;
    clnf = cln->data;
    clnf->fd = fd;
    clnf->name = path.data;
    clnf->log = r->pool->log;

    if (r->method == WEIR_HTTP_POST) {
        return WEIR_HTTP_NOT_ALLOWED;
    }

    rc = weir_http_discard_request_body(r);
    if (rc != WEIR_OK) {
        return rc;
    }

    r->headers_out.status = WEIR_HTTP_OK;
    r->headers_out.content_length_n = st.st_size;
    r->headers_out.last_modified_time = st.st_mtime;

    if (weir_http_set_etag(r) != WEIR_OK) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (weir_http_set_content_type(r) != WEIR_OK) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    r->allow_ranges = 1;

    b = weir_calloc_buf(r->pool);
    if (b == NULL) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->file = weir_pcalloc(r->pool, sizeof(weir_file_t));
    if (b->file == NULL) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    rc = weir_http_send_header(r);

    if (rc == WEIR_ERROR || rc > WEIR_OK || r->header_only) {
        return rc;
    }

    b->file_pos = 0;
    b->file_last = st.st_size;
    b->in_file = b->file_last ? 1 : 0;
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    b->file->fd = fd;
    b->file->name = path;
    b->file->log = r->connection->log;

    out.buf = b;
    out.next = NULL;

    return weir_http_output_filter(r, &out);
}


/* a directory without the trailing slash: 301 to the URI with one */

static weir_int_t
weir_http_static_redirect(weir_http_request_t *r)
{
    weir_str_t           location;
    weir_http_header_t  *h;

    if (weir_http_slash_location(r, &location) != WEIR_OK) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (weir_http_discard_request_body(r) != WEIR_OK) {
        r->keepalive = 0;
    }

    weir_http_clear_header_out(&r->headers_out.location);

    h = weir_http_add_header_out(r, "Location", &location);
    if (h == NULL) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    r->headers_out.location = h;

    return WEIR_HTTP_MOVED_PERMANENTLY;
}
