/*
 * weir_test_stream_module: a response whose length is not known in
 * advance, for the HTTP/1 framing tests.
 *
 *   test_stream PIECES SIZE [trailer | bad-trailer];
 *
 * answers 200 text/plain with PIECES pieces of SIZE bytes (piece i is
 * SIZE times the letter 'a' + i % 26), each passed down the body filter
 * chain on its own with flush set, the last with last_buf; no
 * Content-Length. Pieces are made lazily in one reused buffer: the next
 * when the previous has been sent, so a response of any number of
 * pieces costs the module a bounded amount of memory. With "trailer",
 * the response announces trailers and sends "X-Trailer: done" after the
 * body (chunked framing only); with "bad-trailer", a value with CR LF
 * in it, which weir must never write.
 */

#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"


typedef struct {
    weir_int_t    pieces;
    size_t        size;
    weir_flag_t   trailer;
} weir_test_stream_loc_conf_t;


static void *weir_test_stream_create_loc_conf(weir_conf_t *cf);
static char *weir_test_stream_merge_loc_conf(weir_conf_t *cf, void *parent,
    void *child);
static char *weir_test_stream(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static weir_int_t weir_test_stream_handler(weir_http_request_t *r);
static void weir_test_stream_writer(weir_http_request_t *r);
static weir_int_t weir_test_stream_send(weir_http_request_t *r);


typedef struct {
    weir_int_t    next;            /* the piece to make next */
    weir_buf_t   *buf;             /* reused for every piece */
} weir_test_stream_ctx_t;


static weir_command_t  weir_test_stream_commands[] = {

    { weir_string("test_stream"),
      WEIR_HTTP_LOC_CONF|WEIR_CONF_TAKE23,
      weir_test_stream,
      WEIR_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      weir_null_command
};


static weir_http_phase_decl_t  weir_test_stream_phases[] = {
    { WEIR_HTTP_CONTENT_PHASE, 120, "test_stream",
      weir_test_stream_handler },

    { 0, 0, NULL, NULL }
};


static weir_http_module_t  weir_test_stream_module_ctx = {
    NULL,                                  /* preconfiguration */
    NULL,                                  /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    weir_test_stream_create_loc_conf,      /* create location configuration */
    weir_test_stream_merge_loc_conf,       /* merge location configuration */

    weir_test_stream_phases,               /* phase handlers */
    NULL,                                  /* header filters */
    NULL,                                  /* body filters */
    NULL                                   /* request body filters */
};


weir_module_t  weir_test_stream_module = {
    WEIR_MODULE_V1,
    &weir_test_stream_module_ctx,          /* module context */
    weir_test_stream_commands,             /* module directives */
    WEIR_HTTP_MODULE,                      /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    WEIR_MODULE_V1_PADDING
};


static void *
weir_test_stream_create_loc_conf(weir_conf_t *cf)
{
    weir_test_stream_loc_conf_t  *conf;

    conf = weir_pcalloc(cf->pool, sizeof(weir_test_stream_loc_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    conf->pieces = WEIR_CONF_UNSET;
    conf->trailer = WEIR_CONF_UNSET;

    return conf;
}


static char *
weir_test_stream_merge_loc_conf(weir_conf_t *cf, void *parent, void *child)
{
    weir_test_stream_loc_conf_t  *prev = parent;
    weir_test_stream_loc_conf_t  *conf = child;

    (void) cf;

    if (conf->pieces == WEIR_CONF_UNSET) {
        conf->pieces = prev->pieces;
        conf->size = prev->size;
        conf->trailer = prev->trailer;
    }

    return WEIR_CONF_OK;
}


static char *
weir_test_stream(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_test_stream_loc_conf_t  *tlcf = conf;

    ssize_t      size;
    weir_str_t  *value;

    (void) cmd;

    if (tlcf->pieces != WEIR_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    tlcf->pieces = weir_atoi(value[1].data, value[1].len);
    size = weir_parse_size(&value[2]);

    if (tlcf->pieces < 0 || size <= 0) {
        return "invalid value";
    }

    tlcf->size = (size_t) size;
    tlcf->trailer = 0;

    if (cf->args->nelts == 4) {
        if (weir_str_eq_lit(&value[3], "trailer")) {
            tlcf->trailer = 1;

        } else if (weir_str_eq_lit(&value[3], "bad-trailer")) {
            /* a value no serializer may write: the core drops it */
            tlcf->trailer = 2;

        } else {
            return "invalid value";
        }
    }

    return WEIR_CONF_OK;
}


static weir_int_t
weir_test_stream_handler(weir_http_request_t *r)
{
    weir_int_t                    rc;
    weir_buf_t                   *b;
    weir_chain_t                  out;
    weir_http_header_t           *h;
    weir_test_stream_ctx_t       *ctx;
    weir_test_stream_loc_conf_t  *tlcf;

    tlcf = weir_http_get_module_loc_conf(r, weir_test_stream_module);

    if (tlcf == NULL || tlcf->pieces == WEIR_CONF_UNSET) {
        return WEIR_DECLINED;
    }

    if (weir_http_discard_request_body(r) != WEIR_OK) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    r->headers_out.status = WEIR_HTTP_OK;
    r->headers_out.content_length_n = -1;
    weir_str_set(&r->headers_out.content_type, "text/plain");

    if (tlcf->trailer) {
        r->expect_trailers = 1;

        h = weir_list_push(&r->headers_out.trailers);
        if (h == NULL) {
            return WEIR_HTTP_INTERNAL_SERVER_ERROR;
        }

        weir_memzero(h, sizeof(weir_http_header_t));
        h->hash = 1;
        weir_str_set(&h->key, "X-Trailer");
        weir_str_set(&h->value, "done");

        if (tlcf->trailer == 2) {
            weir_str_set(&h->value, "done\r\nX-Injected: 1");
        }
    }

    rc = weir_http_send_header(r);

    if (rc == WEIR_ERROR || rc > WEIR_OK || r->header_only) {
        return rc;
    }

    if (tlcf->pieces == 0) {
        b = weir_calloc_buf(r->pool);
        if (b == NULL) {
            return WEIR_ERROR;
        }

        b->last_buf = 1;
        out.buf = b;
        out.next = NULL;

        return weir_http_output_filter(r, &out);
    }

    ctx = weir_pcalloc(r->pool, sizeof(weir_test_stream_ctx_t));
    if (ctx == NULL) {
        return WEIR_ERROR;
    }

    ctx->buf = weir_create_temp_buf(r->pool, tlcf->size);
    if (ctx->buf == NULL) {
        return WEIR_ERROR;
    }

    ctx->buf->last = ctx->buf->pos;

    weir_http_set_ctx(r, ctx, weir_test_stream_module);

    rc = weir_test_stream_send(r);

    if (rc != WEIR_AGAIN) {
        return rc;
    }

    /* the rest goes from write events; the reference keeps r alive */
    r->main->count++;
    r->write_event_handler = weir_test_stream_writer;

    return WEIR_DONE;
}


static void
weir_test_stream_writer(weir_http_request_t *r)
{
    weir_int_t  rc;

    if (r->connection->write->timedout) {
        r->connection->timedout = 1;
        weir_http_finalize_request(r, WEIR_HTTP_REQUEST_TIME_OUT);
        return;
    }

    rc = weir_test_stream_send(r);

    if (rc == WEIR_AGAIN) {
        return;
    }

    weir_http_finalize_request(r, rc);
}


/*
 * Sends pieces while the previous one has gone out: WEIR_AGAIN while
 * output is pending, else the output filter's last result.
 */

static weir_int_t
weir_test_stream_send(weir_http_request_t *r)
{
    weir_int_t                    rc;
    weir_buf_t                   *b;
    weir_chain_t                  out;
    weir_test_stream_ctx_t       *ctx;
    weir_test_stream_loc_conf_t  *tlcf;

    tlcf = weir_http_get_module_loc_conf(r, weir_test_stream_module);
    ctx = weir_http_get_module_ctx(r, weir_test_stream_module);
    b = ctx->buf;

    for ( ;; ) {
        if (r->out || (r->connection->buffered & WEIR_HTTP_WRITE_BUFFERED)) {
            rc = weir_http_output_filter(r, NULL);
            if (rc == WEIR_ERROR) {
                return rc;
            }

            if (r->out
                || (r->connection->buffered & WEIR_HTTP_WRITE_BUFFERED))
            {
                return ctx->next == tlcf->pieces ? WEIR_OK : WEIR_AGAIN;
            }
        }

        if (ctx->next == tlcf->pieces) {
            return WEIR_OK;
        }

        b->pos = b->start;
        b->last = b->start + tlcf->size;
        weir_memset(b->pos, 'a' + ctx->next % 26, tlcf->size);
        b->flush = 1;
        ctx->next++;
        b->last_buf = (ctx->next == tlcf->pieces) ? 1 : 0;

        out.buf = b;
        out.next = NULL;

        rc = weir_http_output_filter(r, &out);

        if (rc == WEIR_ERROR) {
            return rc;
        }
    }
}
