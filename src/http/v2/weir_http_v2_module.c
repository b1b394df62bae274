#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_http.h"
#include "weir_http_v2.h"

/*
 * The HTTP/2 module: its directives (http2, http2_*), the table the core
 * and the ssl module reach it through (cmcf->v2), and $http2.
 */


static weir_int_t weir_http_v2_preconfiguration(weir_conf_t *cf);
static void *weir_http_v2_create_main_conf(weir_conf_t *cf);
static char *weir_http_v2_init_main_conf(weir_conf_t *cf, void *conf);
static void *weir_http_v2_create_srv_conf(weir_conf_t *cf);
static char *weir_http_v2_merge_srv_conf(weir_conf_t *cf, void *parent,
    void *child);
static char *weir_http_v2_check_window(weir_conf_t *cf, void *post,
    void *data);
static char *weir_http_v2_check_recv_buffer(weir_conf_t *cf, void *post,
    void *data);
static weir_int_t weir_http_v2_variable(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);


/* the preface must fit, twice (the HTTP/1 module hands over what it
 * read while telling an h2c preface from HTTP/1.1) */
static weir_conf_post_t  weir_http_v2_recv_buffer_post = {
    weir_http_v2_check_recv_buffer
};


/* a window is a 31-bit number of bytes (RFC 9113 6.9.1) */
static weir_conf_post_t  weir_http_v2_window_post = {
    weir_http_v2_check_window
};


static weir_command_t  weir_http_v2_commands[] = {

    { weir_string("http2"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_v2_srv_conf_t, enable),
      NULL },

    { weir_string("http2_max_concurrent_streams"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_num_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_v2_srv_conf_t, max_concurrent_streams),
      NULL },

    { weir_string("http2_chunk_size"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_size_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_v2_srv_conf_t, chunk_size),
      NULL },

    { weir_string("http2_stream_window_size"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_size_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_v2_srv_conf_t, stream_window),
      &weir_http_v2_window_post },

    { weir_string("http2_connection_window_size"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_size_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_v2_srv_conf_t, connection_window),
      &weir_http_v2_window_post },

    { weir_string("http2_recv_buffer_size"),
      WEIR_HTTP_MAIN_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_size_slot,
      WEIR_HTTP_MAIN_CONF_OFFSET,
      offsetof(weir_http_v2_main_conf_t, recv_buffer_size),
      &weir_http_v2_recv_buffer_post },

    weir_null_command
};


static weir_http_module_t  weir_http_v2_module_ctx = {
    weir_http_v2_preconfiguration,         /* preconfiguration */
    NULL,                                  /* postconfiguration */

    weir_http_v2_create_main_conf,         /* create main configuration */
    weir_http_v2_init_main_conf,           /* init main configuration */

    weir_http_v2_create_srv_conf,          /* create server configuration */
    weir_http_v2_merge_srv_conf,           /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL,                                  /* merge location configuration */

    NULL,                                  /* phase handlers */
    NULL,                                  /* header filters */
    NULL,                                  /* body filters */
    NULL                                   /* request body filters */
};


weir_module_t  weir_http_v2_module = {
    WEIR_MODULE_V1,
    &weir_http_v2_module_ctx,              /* module context */
    weir_http_v2_commands,                 /* module directives */
    WEIR_HTTP_MODULE,                      /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    WEIR_MODULE_V1_PADDING
};


static weir_http_v2_hooks_t  weir_http_v2_hooks = {
    weir_http_v2_enabled,
    weir_http_v2_init_connection,
    &weir_http_v2_upstream_proto
};


static weir_int_t
weir_http_v2_preconfiguration(weir_conf_t *cf)
{
    weir_str_t                   name;
    weir_http_variable_t        *var;
    weir_http_core_main_conf_t  *cmcf;

    cmcf = weir_http_conf_get_module_main_conf(cf, weir_http_core_module);
    cmcf->v2 = &weir_http_v2_hooks;

    weir_str_set(&name, "http2");

    var = weir_http_add_variable(cf, &name, 0);
    if (var == NULL) {
        return WEIR_ERROR;
    }

    var->get_handler = weir_http_v2_variable;

    return WEIR_OK;
}


static void *
weir_http_v2_create_main_conf(weir_conf_t *cf)
{
    weir_http_v2_main_conf_t  *conf;

    conf = weir_pcalloc(cf->pool, sizeof(weir_http_v2_main_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    conf->recv_buffer_size = WEIR_CONF_UNSET_SIZE;

    return conf;
}


static char *
weir_http_v2_init_main_conf(weir_conf_t *cf, void *conf)
{
    weir_http_v2_main_conf_t  *h2mcf = conf;

    (void) cf;

    weir_conf_init_size_value(h2mcf->recv_buffer_size, 256 * 1024);

    return WEIR_CONF_OK;
}


static void *
weir_http_v2_create_srv_conf(weir_conf_t *cf)
{
    weir_http_v2_srv_conf_t  *conf;

    conf = weir_pcalloc(cf->pool, sizeof(weir_http_v2_srv_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    conf->enable = WEIR_CONF_UNSET;
    conf->max_concurrent_streams = WEIR_CONF_UNSET_UINT;
    conf->chunk_size = WEIR_CONF_UNSET_SIZE;
    conf->stream_window = WEIR_CONF_UNSET_SIZE;
    conf->connection_window = WEIR_CONF_UNSET_SIZE;

    return conf;
}


static char *
weir_http_v2_merge_srv_conf(weir_conf_t *cf, void *parent, void *child)
{
    weir_http_v2_srv_conf_t  *prev = parent;
    weir_http_v2_srv_conf_t  *conf = child;

    weir_conf_merge_value(conf->enable, prev->enable, 0);
    weir_conf_merge_uint_value(conf->max_concurrent_streams,
                               prev->max_concurrent_streams, 128);
    weir_conf_merge_size_value(conf->chunk_size, prev->chunk_size,
                               8 * 1024);
    weir_conf_merge_size_value(conf->stream_window, prev->stream_window,
                               256 * 1024);
    weir_conf_merge_size_value(conf->connection_window,
                               prev->connection_window, 8 * 1024 * 1024);

    if (conf->chunk_size == 0) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "the http2_chunk_size value must be positive");
        return WEIR_CONF_ERROR;
    }

    if (conf->max_concurrent_streams == 0) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "the http2_max_concurrent_streams value must "
                            "be positive");
        return WEIR_CONF_ERROR;
    }

    return WEIR_CONF_OK;
}


static char *
weir_http_v2_check_window(weir_conf_t *cf, void *post, void *data)
{
    size_t  *sp = data;

    (void) cf;
    (void) post;

    if (*sp < 65535 || *sp > 0x7fffffff) {
        return "must be between 65535 and 2147483647 bytes";
    }

    return WEIR_CONF_OK;
}


static char *
weir_http_v2_check_recv_buffer(weir_conf_t *cf, void *post, void *data)
{
    size_t  *sp = data;

    (void) cf;
    (void) post;

    if (*sp < 2 * WEIR_HTTP_V2_PREFACE_LEN) {
        return "value is too small (at least 48 bytes)";
    }

    return WEIR_CONF_OK;
}


/* $http2: "h2" over TLS, "h2c" in clear text, empty for other protocols */

static weir_int_t
weir_http_v2_variable(weir_http_request_t *r, weir_http_variable_value_t *v,
    uintptr_t data)
{
    (void) data;

    if (r->main->proto != &weir_http_v2_proto) {
        weir_http_variable_set_value(v, (unsigned char *) "", 0);
        return WEIR_OK;
    }

    if (r->connection->ssl) {
        weir_http_variable_set_value(v, (unsigned char *) "h2", 2);

    } else {
        weir_http_variable_set_value(v, (unsigned char *) "h2c", 3);
    }

    return WEIR_OK;
}
