/*
 * weir_test_body_module: reads request bodies the way a real consumer
 * (a proxy) would, for the request body tests.
 *
 *   test_echo_body;              read the whole body (memory or a
 *                                temporary file), then answer 200 with it
 *   test_echo_body unbuffered;   stream it: take each piece as it
 *                                arrives, mark it consumed, read on
 *
 * The answer carries "X-Body-Length: N" and "X-Body-File: 0|1" (whether
 * the body was handed over in a temporary file), and for each trailer
 * field of a chunked body kept in r->headers_in.trailers, in order,
 * "X-Trailer-<name>: <value>" and finally "X-Trailers: N" (their count).
 */

#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"


#define WEIR_TEST_BODY_MAX  (64 * 1024 * 1024)


typedef struct {
    weir_uint_t   mode;     /* 0 off, 1 buffered, 2 unbuffered */
} weir_test_body_loc_conf_t;


typedef struct {
    unsigned char  *data;
    size_t          len;
    size_t          size;
    unsigned        in_file:1;
    unsigned        done:1;
} weir_test_body_ctx_t;


static void *weir_test_body_create_loc_conf(weir_conf_t *cf);
static char *weir_test_body_merge_loc_conf(weir_conf_t *cf, void *parent,
    void *child);
static char *weir_test_body_echo(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static weir_int_t weir_test_body_handler(weir_http_request_t *r);
static void weir_test_body_post_handler(weir_http_request_t *r);
static weir_int_t weir_test_body_take(weir_http_request_t *r,
    weir_test_body_ctx_t *ctx);
static weir_int_t weir_test_body_send(weir_http_request_t *r,
    weir_test_body_ctx_t *ctx);
static weir_int_t weir_test_body_trailers(weir_http_request_t *r);


static weir_command_t  weir_test_body_commands[] = {

    { weir_string("test_echo_body"),
      WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF|WEIR_CONF_NOARGS|WEIR_CONF_TAKE1,
      weir_test_body_echo,
      WEIR_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      weir_null_command
};


static weir_http_phase_decl_t  weir_test_body_phases[] = {
    { WEIR_HTTP_CONTENT_PHASE, 110, "test_echo_body",
      weir_test_body_handler },

    { 0, 0, NULL, NULL }
};


static weir_http_module_t  weir_test_body_module_ctx = {
    NULL,                                  /* preconfiguration */
    NULL,                                  /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    weir_test_body_create_loc_conf,        /* create location configuration */
    weir_test_body_merge_loc_conf,         /* merge location configuration */

    weir_test_body_phases,                 /* phase handlers */
    NULL,                                  /* header filters */
    NULL,                                  /* body filters */
    NULL                                   /* request body filters */
};


weir_module_t  weir_test_body_module = {
    WEIR_MODULE_V1,
    &weir_test_body_module_ctx,            /* module context */
    weir_test_body_commands,               /* module directives */
    WEIR_HTTP_MODULE,                      /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    WEIR_MODULE_V1_PADDING
};


static void *
weir_test_body_create_loc_conf(weir_conf_t *cf)
{
    weir_test_body_loc_conf_t  *conf;

    conf = weir_pcalloc(cf->pool, sizeof(weir_test_body_loc_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    conf->mode = WEIR_CONF_UNSET_UINT;

    return conf;
}


static char *
weir_test_body_merge_loc_conf(weir_conf_t *cf, void *parent, void *child)
{
    weir_test_body_loc_conf_t  *prev = parent;
    weir_test_body_loc_conf_t  *conf = child;

    (void) cf;

    weir_conf_merge_uint_value(conf->mode, prev->mode, 0);

    return WEIR_CONF_OK;
}


static char *
weir_test_body_echo(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_test_body_loc_conf_t  *tlcf = conf;
    weir_str_t                 *value;

    (void) cmd;

    if (tlcf->mode != WEIR_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (cf->args->nelts == 1) {
        tlcf->mode = 1;
        return WEIR_CONF_OK;
    }

    if (weir_str_eq_lit(&value[1], "unbuffered")) {
        tlcf->mode = 2;
        return WEIR_CONF_OK;
    }

    return "invalid value";
}


static weir_int_t
weir_test_body_handler(weir_http_request_t *r)
{
    weir_int_t                  rc;
    weir_test_body_ctx_t       *ctx;
    weir_test_body_loc_conf_t  *tlcf;

    tlcf = weir_http_get_module_loc_conf(r, weir_test_body_module);

    if (tlcf->mode == 0) {
        return WEIR_DECLINED;
    }

    ctx = weir_pcalloc(r->pool, sizeof(weir_test_body_ctx_t));
    if (ctx == NULL) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    weir_http_set_ctx(r, ctx, weir_test_body_module);

    if (tlcf->mode == 2) {
        r->request_body_no_buffering = 1;
    }

    rc = weir_http_read_client_request_body(r, weir_test_body_post_handler);

    if (rc >= WEIR_HTTP_SPECIAL_RESPONSE || rc == WEIR_ERROR) {
        return rc;
    }

    return WEIR_DONE;
}


static void
weir_test_body_post_handler(weir_http_request_t *r)
{
    weir_int_t             rc;
    weir_uint_t            i;
    weir_test_body_ctx_t  *ctx;

    ctx = weir_http_get_module_ctx(r, weir_test_body_module);

    if (ctx->done) {
        return;
    }

    /* bounded: each round takes what arrived or stops */
    for (i = 0; i < 1000000; i++) {
        if (weir_test_body_take(r, ctx) != WEIR_OK) {
            ctx->done = 1;
            weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }

        if (ctx->done) {
            weir_http_finalize_request(r, weir_test_body_send(r, ctx));
            return;
        }

        if (!r->request_body_no_buffering) {
            /* buffered: the whole body is here once this is called */
            ctx->done = 1;
            weir_http_finalize_request(r, weir_test_body_send(r, ctx));
            return;
        }

        rc = weir_http_read_unbuffered_request_body(r);

        if (rc == WEIR_ERROR || rc >= WEIR_HTTP_SPECIAL_RESPONSE) {
            ctx->done = 1;
            weir_http_finalize_request(r, rc);
            return;
        }

        if (r->request_body->bufs == NULL) {
            /* nothing yet: called again when data arrives */
            return;
        }
    }
}


/* appends what rb->bufs holds to ctx, marks it consumed, takes it */

static weir_int_t
weir_test_body_take(weir_http_request_t *r, weir_test_body_ctx_t *ctx)
{
    size_t          n, size;
    ssize_t         got;
    weir_buf_t     *b;
    weir_chain_t   *cl;
    unsigned char  *p;

    for (cl = r->request_body->bufs; cl; cl = cl->next) {
        b = cl->buf;

        n = (size_t) weir_buf_size(b);

        if (ctx->len + n > WEIR_TEST_BODY_MAX) {
            return WEIR_ERROR;
        }

        if (ctx->len + n > ctx->size) {
            size = ctx->size ? ctx->size * 2 : 4096;
            while (size < ctx->len + n) {
                size *= 2;
            }

            p = weir_pnalloc(r->pool, size);
            if (p == NULL) {
                return WEIR_ERROR;
            }

            if (ctx->len) {
                weir_memcpy(p, ctx->data, ctx->len);
            }

            ctx->data = p;
            ctx->size = size;
        }

        if (b->in_file) {
            ctx->in_file = 1;

            got = pread(b->file->fd, ctx->data + ctx->len, n, b->file_pos);
            if (got != (ssize_t) n) {
                return WEIR_ERROR;
            }

            b->file_pos = b->file_last;

        } else if (n) {
            weir_memcpy(ctx->data + ctx->len, b->pos, n);
            b->pos = b->last;
        }

        ctx->len += n;

        if (b->last_buf) {
            ctx->done = 1;
        }
    }

    r->request_body->bufs = NULL;

    return WEIR_OK;
}


static weir_int_t
weir_test_body_send(weir_http_request_t *r, weir_test_body_ctx_t *ctx)
{
    weir_str_t      body, value;
    unsigned char  *p;
    weir_str_t      type = weir_string("application/octet-stream");

    p = weir_pnalloc(r->pool, 32);
    if (p == NULL) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    value.data = p;
    value.len = weir_slprintf(p, p + 32, "%zu", ctx->len) - p;

    if (weir_http_add_header_out(r, "X-Body-Length", &value) == NULL) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    value.data = (unsigned char *) (ctx->in_file ? "1" : "0");
    value.len = 1;

    if (weir_http_add_header_out(r, "X-Body-File", &value) == NULL) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (weir_test_body_trailers(r) != WEIR_OK) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    body.data = ctx->data;
    body.len = ctx->len;

    return weir_http_send_response(r, WEIR_HTTP_OK, &type, &body);
}


/* echoes the trailer fields the body reader kept */

static weir_int_t
weir_test_body_trailers(weir_http_request_t *r)
{
    weir_uint_t          i, n;
    weir_str_t           name, value;
    unsigned char       *p;
    weir_list_part_t    *part;
    weir_http_header_t  *h;

    n = 0;

    for (part = &r->headers_in.trailers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (h[i].hash == 0) {
                continue;
            }

            /* the name must live as long as the request: r->pool */
            if (weir_pstrfmt(r->pool, &name, "X-Trailer-%.*s",
                             WEIR_STR_ARG(h[i].key))
                != WEIR_OK)
            {
                return WEIR_ERROR;
            }

            if (weir_http_add_header_out(r, (const char *) name.data,
                                         &h[i].value)
                == NULL)
            {
                return WEIR_ERROR;
            }

            n++;
        }
    }

    p = weir_pnalloc(r->pool, 32);
    if (p == NULL) {
        return WEIR_ERROR;
    }

    value.data = p;
    value.len = weir_slprintf(p, p + 32, "%lu", (unsigned long) n) - p;

    if (weir_http_add_header_out(r, "X-Trailers", &value) == NULL) {
        return WEIR_ERROR;
    }

    return WEIR_OK;
}
