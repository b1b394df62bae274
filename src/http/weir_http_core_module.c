#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"


/*
 * The HTTP core module: the server and location blocks, listen,
 * server_name and the core directives every request lives under. The
 * http block itself and the lookup structures built from this
 * configuration live in weir_http.c.
 */


static weir_int_t weir_http_core_preconfiguration(weir_conf_t *cf);
static void *weir_http_core_create_main_conf(weir_conf_t *cf);
static char *weir_http_core_init_main_conf(weir_conf_t *cf, void *conf);
static void *weir_http_core_create_srv_conf(weir_conf_t *cf);
static char *weir_http_core_merge_srv_conf(weir_conf_t *cf, void *parent,
    void *child);
static void *weir_http_core_create_loc_conf(weir_conf_t *cf);
static char *weir_http_core_merge_loc_conf(weir_conf_t *cf, void *parent,
    void *child);

static char *weir_http_core_server(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static char *weir_http_core_location(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static weir_int_t weir_http_core_regex_location(weir_conf_t *cf,
    weir_http_core_loc_conf_t *clcf, weir_str_t *regex, weir_uint_t caseless);
static char *weir_http_core_listen(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static char *weir_http_core_server_name(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static char *weir_http_core_root(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static char *weir_http_core_types(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static char *weir_http_core_type(weir_conf_t *cf, weir_command_t *dummy,
    void *conf);
static char *weir_http_core_keepalive(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static char *weir_http_core_internal(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static char *weir_http_core_error_page(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static char *weir_http_core_try_files(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static char *weir_http_core_error_log(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static char *weir_http_core_lowat_check(weir_conf_t *cf, void *post,
    void *data);

static weir_int_t weir_http_core_try_files_handler(weir_http_request_t *r);


static weir_conf_enum_t  weir_http_core_lingering_close[] = {
    { weir_string("off"), 0 },
    { weir_string("on"), 1 },
    { weir_string("always"), 2 },
    { weir_null_string, 0 }
};


static weir_conf_enum_t  weir_http_core_if_modified_since[] = {
    { weir_string("off"), WEIR_HTTP_IMS_OFF },
    { weir_string("exact"), WEIR_HTTP_IMS_EXACT },
    { weir_string("before"), WEIR_HTTP_IMS_BEFORE },
    { weir_null_string, 0 }
};


static weir_conf_enum_t  weir_http_core_server_tokens[] = {
    { weir_string("off"), WEIR_HTTP_SERVER_TOKENS_OFF },
    { weir_string("on"), WEIR_HTTP_SERVER_TOKENS_ON },
    { weir_string("build"), WEIR_HTTP_SERVER_TOKENS_BUILD },
    { weir_null_string, 0 }
};


static weir_conf_post_t  weir_http_core_lowat_post = {
    weir_http_core_lowat_check
};


static weir_command_t  weir_http_core_commands[] = {

    { weir_string("variables_hash_max_size"),
      WEIR_HTTP_MAIN_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_num_slot,
      WEIR_HTTP_MAIN_CONF_OFFSET,
      offsetof(weir_http_core_main_conf_t, variables_hash_max_size),
      NULL },

    { weir_string("variables_hash_bucket_size"),
      WEIR_HTTP_MAIN_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_num_slot,
      WEIR_HTTP_MAIN_CONF_OFFSET,
      offsetof(weir_http_core_main_conf_t, variables_hash_bucket_size),
      NULL },

    { weir_string("server_names_hash_max_size"),
      WEIR_HTTP_MAIN_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_num_slot,
      WEIR_HTTP_MAIN_CONF_OFFSET,
      offsetof(weir_http_core_main_conf_t, server_names_hash_max_size),
      NULL },

    { weir_string("server_names_hash_bucket_size"),
      WEIR_HTTP_MAIN_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_num_slot,
      WEIR_HTTP_MAIN_CONF_OFFSET,
      offsetof(weir_http_core_main_conf_t, server_names_hash_bucket_size),
      NULL },

    { weir_string("server"),
      WEIR_HTTP_MAIN_CONF|WEIR_CONF_BLOCK|WEIR_CONF_NOARGS,
      weir_http_core_server,
      0,
      0,
      NULL },

    { weir_string("connection_pool_size"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_size_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_core_srv_conf_t, connection_pool_size),
      NULL },

    { weir_string("request_pool_size"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_size_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_core_srv_conf_t, request_pool_size),
      NULL },

    { weir_string("client_header_timeout"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_msec_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_core_srv_conf_t, client_header_timeout),
      NULL },

    { weir_string("client_header_buffer_size"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_size_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_core_srv_conf_t, client_header_buffer_size),
      NULL },

    { weir_string("large_client_header_buffers"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE2,
      weir_conf_set_bufs_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_core_srv_conf_t, large_client_header_buffers),
      NULL },

    { weir_string("client_max_headers"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_num_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_core_srv_conf_t, max_headers),
      NULL },

    { weir_string("ignore_invalid_headers"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_core_srv_conf_t, ignore_invalid_headers),
      NULL },

    { weir_string("merge_slashes"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_core_srv_conf_t, merge_slashes),
      NULL },

    { weir_string("underscores_in_headers"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_core_srv_conf_t, underscores_in_headers),
      NULL },

    { weir_string("strict_line_endings"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_SRV_CONF_OFFSET,
      offsetof(weir_http_core_srv_conf_t, strict_line_endings),
      NULL },

    { weir_string("location"),
      WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF|WEIR_CONF_BLOCK
      |WEIR_CONF_TAKE12,
      weir_http_core_location,
      WEIR_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { weir_string("listen"),
      WEIR_HTTP_SRV_CONF|WEIR_CONF_1MORE,
      weir_http_core_listen,
      WEIR_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { weir_string("server_name"),
      WEIR_HTTP_SRV_CONF|WEIR_CONF_1MORE,
      weir_http_core_server_name,
      WEIR_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { weir_string("types"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_BLOCK|WEIR_CONF_NOARGS,
      weir_http_core_types,
      WEIR_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { weir_string("default_type"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_str_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, default_type),
      NULL },

    { weir_string("root"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_http_core_root,
      WEIR_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { weir_string("alias"),
      WEIR_HTTP_LOC_CONF|WEIR_CONF_TAKE1,
      weir_http_core_root,
      WEIR_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { weir_string("client_max_body_size"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_off_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, client_max_body_size),
      NULL },

    { weir_string("client_body_buffer_size"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_size_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, client_body_buffer_size),
      NULL },

    { weir_string("client_body_timeout"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_msec_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, client_body_timeout),
      NULL },

    { weir_string("send_timeout"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_msec_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, send_timeout),
      NULL },

    { weir_string("send_lowat"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_size_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, send_lowat),
      &weir_http_core_lowat_post },

    { weir_string("postpone_output"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_size_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, postpone_output),
      NULL },

    { weir_string("sendfile"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, sendfile),
      NULL },

    { weir_string("sendfile_max_chunk"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_size_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, sendfile_max_chunk),
      NULL },

    { weir_string("tcp_nopush"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, tcp_nopush),
      NULL },

    { weir_string("tcp_nodelay"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, tcp_nodelay),
      NULL },

    { weir_string("keepalive_timeout"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE12,
      weir_http_core_keepalive,
      WEIR_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { weir_string("keepalive_drain_timeout"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_msec_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, keepalive_drain_timeout),
      NULL },

    { weir_string("keepalive_requests"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_num_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, keepalive_requests),
      NULL },

    { weir_string("lingering_close"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_enum_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, lingering_close),
      &weir_http_core_lingering_close },

    { weir_string("lingering_time"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_msec_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, lingering_time),
      NULL },

    { weir_string("lingering_timeout"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_msec_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, lingering_timeout),
      NULL },

    { weir_string("reset_timedout_connection"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, reset_timedout_connection),
      NULL },

    { weir_string("absolute_redirect"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, absolute_redirect),
      NULL },

    { weir_string("server_name_in_redirect"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, server_name_in_redirect),
      NULL },

    { weir_string("port_in_redirect"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, port_in_redirect),
      NULL },

    { weir_string("log_not_found"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, log_not_found),
      NULL },

    { weir_string("recursive_error_pages"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, recursive_error_pages),
      NULL },

    { weir_string("server_tokens"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_enum_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, server_tokens),
      &weir_http_core_server_tokens },

    { weir_string("chunked_transfer_encoding"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, chunked_transfer_encoding),
      NULL },

    { weir_string("etag"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, etag),
      NULL },

    { weir_string("if_modified_since"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_enum_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, if_modified_since),
      &weir_http_core_if_modified_since },

    { weir_string("max_ranges"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_num_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_core_loc_conf_t, max_ranges),
      NULL },

    { weir_string("internal"),
      WEIR_HTTP_LOC_CONF|WEIR_CONF_NOARGS,
      weir_http_core_internal,
      WEIR_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { weir_string("error_page"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_2MORE,
      weir_http_core_error_page,
      WEIR_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { weir_string("try_files"),
      WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF|WEIR_CONF_2MORE,
      weir_http_core_try_files,
      WEIR_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { weir_string("error_log"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_1MORE,
      weir_http_core_error_log,
      WEIR_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      weir_null_command
};


static weir_http_phase_decl_t  weir_http_core_phases[] = {
    { WEIR_HTTP_PRECONTENT_PHASE, 500, "try_files",
      weir_http_core_try_files_handler },
    { 0, 0, NULL, NULL }
};


static weir_http_module_t  weir_http_core_module_ctx = {
    weir_http_core_preconfiguration,        /* preconfiguration */
    NULL,                                   /* postconfiguration */

    weir_http_core_create_main_conf,        /* create main configuration */
    weir_http_core_init_main_conf,          /* init main configuration */

    weir_http_core_create_srv_conf,         /* create server configuration */
    weir_http_core_merge_srv_conf,          /* merge server configuration */

    weir_http_core_create_loc_conf,         /* create location configuration */
    weir_http_core_merge_loc_conf,          /* merge location configuration */

    weir_http_core_phases,
    NULL,
    NULL,
    NULL
};


weir_module_t  weir_http_core_module = {
    WEIR_MODULE_V1,
    &weir_http_core_module_ctx,             /* module context */
    weir_http_core_commands,                /* module directives */
    WEIR_HTTP_MODULE,                       /* module type */
    NULL,                                   /* init master */
    NULL,                                   /* init module */
    NULL,                                   /* init process */
    NULL,                                   /* exit process */
    NULL,                                   /* exit master */
    WEIR_MODULE_V1_PADDING
};


weir_str_t  weir_http_core_get_method = weir_string("GET");


static weir_int_t
weir_http_core_preconfiguration(weir_conf_t *cf)
{
    return weir_http_variables_add_core_vars(cf);
}


static void *
weir_http_core_create_main_conf(weir_conf_t *cf)
{
    weir_http_core_main_conf_t  *cmcf;

    cmcf = weir_pcalloc(cf->pool, sizeof(weir_http_core_main_conf_t));
    if (cmcf == NULL) {
        return NULL;
    }

    if (weir_array_init(&cmcf->servers, cf->pool, 4,
                        sizeof(weir_http_core_srv_conf_t *))
        != WEIR_OK
        || weir_array_init(&cmcf->status_lines, cf->pool, 1,
                           sizeof(weir_http_status_line_t))
           != WEIR_OK)
    {
        return NULL;
    }

    cmcf->server_names_hash_max_size = WEIR_CONF_UNSET_UINT;
    cmcf->server_names_hash_bucket_size = WEIR_CONF_UNSET_UINT;
    cmcf->variables_hash_max_size = WEIR_CONF_UNSET_UINT;
    cmcf->variables_hash_bucket_size = WEIR_CONF_UNSET_UINT;

    return cmcf;
}


static char *
weir_http_core_init_main_conf(weir_conf_t *cf, void *conf)
{
    weir_http_core_main_conf_t *cmcf = conf;

    (void) cf;

    weir_conf_init_uint_value(cmcf->server_names_hash_max_size, 512);
    weir_conf_init_uint_value(cmcf->server_names_hash_bucket_size, 64);
    weir_conf_init_uint_value(cmcf->variables_hash_max_size, 1024);
    weir_conf_init_uint_value(cmcf->variables_hash_bucket_size, 64);

    if (cmcf->ncaptures) {
        cmcf->ncaptures = (cmcf->ncaptures + 1) * 3;
    }

    return WEIR_CONF_OK;
}


static void *
weir_http_core_create_srv_conf(weir_conf_t *cf)
{
    weir_http_core_srv_conf_t  *cscf;

    cscf = weir_pcalloc(cf->pool, sizeof(weir_http_core_srv_conf_t));
    if (cscf == NULL) {
        return NULL;
    }

    /*
     * set by weir_pcalloc():
     *     cscf->large_client_header_buffers.num = 0;
     *     cscf->server_name = { 0, NULL };
     *     cscf->named_locations = NULL;
     */

    if (weir_array_init(&cscf->server_names, cf->temp_pool, 4,
                        sizeof(weir_http_server_name_t))
        != WEIR_OK)
    {
        return NULL;
    }

    cscf->connection_pool_size = WEIR_CONF_UNSET_SIZE;
    cscf->request_pool_size = WEIR_CONF_UNSET_SIZE;
    cscf->client_header_timeout = WEIR_CONF_UNSET_MSEC;
    cscf->client_header_buffer_size = WEIR_CONF_UNSET_SIZE;
    cscf->ignore_invalid_headers = WEIR_CONF_UNSET;
    cscf->merge_slashes = WEIR_CONF_UNSET;
    cscf->underscores_in_headers = WEIR_CONF_UNSET;
    cscf->strict_line_endings = WEIR_CONF_UNSET;
    cscf->max_headers = WEIR_CONF_UNSET_UINT;

    if (cf->conf_file) {
        cscf->file_name = cf->conf_file->file.name.data;
        cscf->line = cf->conf_file->line;
    }

    return cscf;
}


static char *
weir_http_core_merge_srv_conf(weir_conf_t *cf, void *parent, void *child)
{
    weir_http_core_srv_conf_t *prev = parent;
    weir_http_core_srv_conf_t *conf = child;

    weir_str_t                 name;
    weir_http_server_name_t   *sn;

    weir_conf_merge_size_value(conf->connection_pool_size,
                               prev->connection_pool_size, 512);
    weir_conf_merge_size_value(conf->request_pool_size,
                               prev->request_pool_size, 4096);
    weir_conf_merge_msec_value(conf->client_header_timeout,
                               prev->client_header_timeout, 60000);
    weir_conf_merge_size_value(conf->client_header_buffer_size,
                               prev->client_header_buffer_size, 1024);
    weir_conf_merge_bufs_value(conf->large_client_header_buffers,
                               prev->large_client_header_buffers,
                               4, 8192);

    if (conf->large_client_header_buffers.size
        < conf->connection_pool_size)
    {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "the \"large_client_header_buffers\" size must "
                            "be equal to or greater than "
                            "\"connection_pool_size\"");
        return WEIR_CONF_ERROR;
    }

    weir_conf_merge_value(conf->ignore_invalid_headers,
                          prev->ignore_invalid_headers, 1);
    weir_conf_merge_value(conf->merge_slashes, prev->merge_slashes, 1);
    weir_conf_merge_value(conf->underscores_in_headers,
                          prev->underscores_in_headers, 0);
    weir_conf_merge_value(conf->strict_line_endings,
                          prev->strict_line_endings, 0);
    weir_conf_merge_uint_value(conf->max_headers, prev->max_headers, 100);

    if (conf->server_names.nelts == 0) {
        /* a server without server_name answers requests without Host */
        sn = weir_array_push(&conf->server_names);
        if (sn == NULL) {
            return WEIR_CONF_ERROR;
        }

        weir_memzero(sn, sizeof(weir_http_server_name_t));
        sn->server = conf;
        weir_str_set(&sn->name, "");
    }

    /*
     * $server_name is the first name as written, whatever kind it is
     * and whichever name matched, as in nginx: "~^A\.COM$" keeps its
     * tilde and case, "*.a.com" and "www.a.*" their asterisk; only
     * ".a.com" loses its dot
     */
    sn = conf->server_names.elts;
    name = sn[0].name;

    if (sn[0].regex == NULL && name.len > 1 && name.data[0] == '.') {
        name.len--;
        name.data++;
    }

    conf->server_name = name;

    return WEIR_CONF_OK;
}


static void *
weir_http_core_create_loc_conf(weir_conf_t *cf)
{
    weir_http_core_loc_conf_t  *clcf;

    clcf = weir_pcalloc(cf->pool, sizeof(weir_http_core_loc_conf_t));
    if (clcf == NULL) {
        return NULL;
    }

    /*
     * set by weir_pcalloc():
     *     clcf->root = { 0, NULL };
     *     clcf->types = NULL;
     *     clcf->default_type = { 0, NULL };
     *     clcf->error_log = NULL;
     *     clcf->error_pages = NULL;
     *     clcf->try_files = NULL;
     *     clcf->limit_except = 0;
     *     clcf->keepalive_disable = 0;
     */

    clcf->client_max_body_size = WEIR_CONF_UNSET;
    clcf->directio = WEIR_CONF_UNSET;
    clcf->client_body_buffer_size = WEIR_CONF_UNSET_SIZE;
    clcf->send_lowat = WEIR_CONF_UNSET_SIZE;
    clcf->postpone_output = WEIR_CONF_UNSET_SIZE;
    clcf->sendfile_max_chunk = WEIR_CONF_UNSET_SIZE;
    clcf->read_ahead = WEIR_CONF_UNSET_SIZE;

    clcf->client_body_timeout = WEIR_CONF_UNSET_MSEC;
    clcf->send_timeout = WEIR_CONF_UNSET_MSEC;
    clcf->keepalive_timeout = WEIR_CONF_UNSET_MSEC;
    clcf->keepalive_drain_timeout = WEIR_CONF_UNSET_MSEC;
    clcf->lingering_time = WEIR_CONF_UNSET_MSEC;
    clcf->lingering_timeout = WEIR_CONF_UNSET_MSEC;
    clcf->resolver_timeout = WEIR_CONF_UNSET_MSEC;
    clcf->auth_delay = WEIR_CONF_UNSET_MSEC;

    clcf->keepalive_header = WEIR_CONF_UNSET;
    clcf->keepalive_requests = WEIR_CONF_UNSET_UINT;
    clcf->satisfy = WEIR_CONF_UNSET_UINT;
    clcf->lingering_close = WEIR_CONF_UNSET_UINT;
    clcf->if_modified_since = WEIR_CONF_UNSET_UINT;
    clcf->max_ranges = WEIR_CONF_UNSET_UINT;
    clcf->client_body_in_file_only = WEIR_CONF_UNSET_UINT;
    clcf->server_tokens = WEIR_CONF_UNSET_UINT;

    clcf->client_body_in_single_buffer = WEIR_CONF_UNSET;
    clcf->internal = WEIR_CONF_UNSET;
    clcf->sendfile = WEIR_CONF_UNSET;
    clcf->aio = WEIR_CONF_UNSET;
    clcf->tcp_nopush = WEIR_CONF_UNSET;
    clcf->tcp_nodelay = WEIR_CONF_UNSET;
    clcf->reset_timedout_connection = WEIR_CONF_UNSET;
    clcf->absolute_redirect = WEIR_CONF_UNSET;
    clcf->server_name_in_redirect = WEIR_CONF_UNSET;
    clcf->port_in_redirect = WEIR_CONF_UNSET;
    clcf->msie_padding = WEIR_CONF_UNSET;
    clcf->log_not_found = WEIR_CONF_UNSET;
    clcf->log_subrequest = WEIR_CONF_UNSET;
    clcf->recursive_error_pages = WEIR_CONF_UNSET;
    clcf->chunked_transfer_encoding = WEIR_CONF_UNSET;
    clcf->etag = WEIR_CONF_UNSET;

    return clcf;
}


static weir_str_t  weir_http_core_text_html_type = weir_string("text/html");
static weir_str_t  weir_http_core_image_gif_type = weir_string("image/gif");
static weir_str_t  weir_http_core_image_jpeg_type = weir_string("image/jpeg");

static weir_hash_key_t  weir_http_core_default_types[] = {
    { weir_string("html"), 0, &weir_http_core_text_html_type },
    { weir_string("gif"), 0, &weir_http_core_image_gif_type },
    { weir_string("jpg"), 0, &weir_http_core_image_jpeg_type },
    { weir_null_string, 0, NULL }
};


static weir_int_t
weir_http_core_types_hash(weir_conf_t *cf, weir_http_core_loc_conf_t *clcf)
{
    weir_uint_t       i;
    weir_hash_key_t  *type;

    if (clcf->types_hash.buckets) {
        return WEIR_OK;
    }

    if (clcf->types == NULL) {
        clcf->types = weir_array_create(cf->pool, 3, sizeof(weir_hash_key_t));
        if (clcf->types == NULL) {
            return WEIR_ERROR;
        }

        for (i = 0; weir_http_core_default_types[i].key.len; i++) {
            type = weir_array_push(clcf->types);
            if (type == NULL) {
                return WEIR_ERROR;
            }

            *type = weir_http_core_default_types[i];
            type->key_hash = weir_hash_key(type->key.data, type->key.len);
        }
    }

    return weir_hash_init(&clcf->types_hash, cf->pool, clcf->types);
}


static char *
weir_http_core_merge_loc_conf(weir_conf_t *cf, void *parent, void *child)
{
    weir_http_core_loc_conf_t *prev = parent;
    weir_http_core_loc_conf_t *conf = child;

    if (conf->root.data == NULL) {
        conf->alias = prev->alias;
        conf->root = prev->root;
        conf->root_lengths = prev->root_lengths;
        conf->root_values = prev->root_values;

        if (prev->root.data == NULL) {
            weir_str_set(&conf->root, "html");

            if (weir_conf_full_name(cf->cycle, &conf->root, 0) != WEIR_OK) {
                return WEIR_CONF_ERROR;
            }
        }
    }

    if (conf->post_action.data == NULL) {
        conf->post_action = prev->post_action;
    }

    /* the types hash is built once per level that defines types {} */
    if (weir_http_core_types_hash(cf, prev) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    if (conf->types == NULL) {
        conf->types = prev->types;
        conf->types_hash = prev->types_hash;

    } else if (weir_http_core_types_hash(cf, conf) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    if (conf->error_log == NULL) {
        if (prev->error_log) {
            conf->error_log = prev->error_log;

        } else {
            /* the main error_log, even one set after the http block */
            conf->error_log = &cf->cycle->new_log;
        }
    }

    weir_conf_merge_str_value(conf->default_type, prev->default_type,
                              "text/plain");

    weir_conf_merge_off_value(conf->client_max_body_size,
                              prev->client_max_body_size, 1024 * 1024);
    weir_conf_merge_off_value(conf->directio, prev->directio, 0);
    weir_conf_merge_size_value(conf->client_body_buffer_size,
                               prev->client_body_buffer_size, 16384);
    weir_conf_merge_size_value(conf->send_lowat, prev->send_lowat, 0);
    weir_conf_merge_size_value(conf->postpone_output, prev->postpone_output,
                               1460);
    weir_conf_merge_size_value(conf->sendfile_max_chunk,
                               prev->sendfile_max_chunk, 2 * 1024 * 1024);
    weir_conf_merge_size_value(conf->read_ahead, prev->read_ahead, 0);

    weir_conf_merge_msec_value(conf->client_body_timeout,
                               prev->client_body_timeout, 60000);
    weir_conf_merge_msec_value(conf->send_timeout, prev->send_timeout, 60000);
    weir_conf_merge_msec_value(conf->keepalive_timeout,
                               prev->keepalive_timeout, 75000);
    weir_conf_merge_msec_value(conf->keepalive_drain_timeout,
                               prev->keepalive_drain_timeout, 1000);
    weir_conf_merge_sec_value(conf->keepalive_header,
                              prev->keepalive_header, 0);
    weir_conf_merge_msec_value(conf->lingering_time, prev->lingering_time,
                               30000);
    weir_conf_merge_msec_value(conf->lingering_timeout,
                               prev->lingering_timeout, 5000);
    weir_conf_merge_msec_value(conf->resolver_timeout,
                               prev->resolver_timeout, 30000);
    weir_conf_merge_msec_value(conf->auth_delay, prev->auth_delay, 0);

    weir_conf_merge_uint_value(conf->keepalive_requests,
                               prev->keepalive_requests, 1000);
    weir_conf_merge_uint_value(conf->satisfy, prev->satisfy, 0);
    weir_conf_merge_uint_value(conf->lingering_close, prev->lingering_close,
                               1);
    weir_conf_merge_uint_value(conf->if_modified_since,
                               prev->if_modified_since, WEIR_HTTP_IMS_EXACT);
    weir_conf_merge_uint_value(conf->max_ranges, prev->max_ranges,
                               (weir_uint_t) 0x7fffffff);
    weir_conf_merge_uint_value(conf->client_body_in_file_only,
                               prev->client_body_in_file_only, 0);
    weir_conf_merge_uint_value(conf->server_tokens, prev->server_tokens,
                               WEIR_HTTP_SERVER_TOKENS_ON);

    if (conf->keepalive_disable == 0) {
        conf->keepalive_disable = prev->keepalive_disable;
    }

    weir_conf_merge_value(conf->client_body_in_single_buffer,
                          prev->client_body_in_single_buffer, 0);
    weir_conf_merge_value(conf->internal, prev->internal, 0);
    weir_conf_merge_value(conf->sendfile, prev->sendfile, 0);
    weir_conf_merge_value(conf->aio, prev->aio, 0);
    weir_conf_merge_value(conf->tcp_nopush, prev->tcp_nopush, 0);
    weir_conf_merge_value(conf->tcp_nodelay, prev->tcp_nodelay, 1);
    weir_conf_merge_value(conf->reset_timedout_connection,
                          prev->reset_timedout_connection, 0);
    weir_conf_merge_value(conf->absolute_redirect, prev->absolute_redirect,
                          1);
    weir_conf_merge_value(conf->server_name_in_redirect,
                          prev->server_name_in_redirect, 0);
    weir_conf_merge_value(conf->port_in_redirect, prev->port_in_redirect, 1);
    weir_conf_merge_value(conf->msie_padding, prev->msie_padding, 1);
    weir_conf_merge_value(conf->log_not_found, prev->log_not_found, 1);
    weir_conf_merge_value(conf->log_subrequest, prev->log_subrequest, 0);
    weir_conf_merge_value(conf->recursive_error_pages,
                          prev->recursive_error_pages, 0);
    weir_conf_merge_value(conf->chunked_transfer_encoding,
                          prev->chunked_transfer_encoding, 1);
    weir_conf_merge_value(conf->etag, prev->etag, 1);

    if (conf->error_pages == NULL && prev->error_pages) {
        conf->error_pages = prev->error_pages;
    }

    return WEIR_CONF_OK;
}


static void *
weir_http_core_new_confs(weir_conf_t *cf, weir_http_conf_ctx_t *ctx,
    weir_uint_t srv)
{
    weir_uint_t          i;
    weir_module_t       *module;
    weir_http_module_t  *m;

    if (srv) {
        ctx->srv_conf = weir_pcalloc(cf->pool,
                                     sizeof(void *) * weir_http_max_module);
        if (ctx->srv_conf == NULL) {
            return NULL;
        }
    }

    ctx->loc_conf = weir_pcalloc(cf->pool,
                                 sizeof(void *) * weir_http_max_module);
    if (ctx->loc_conf == NULL) {
        return NULL;
    }

    for (i = 0; cf->cycle->modules[i]; i++) {
        module = cf->cycle->modules[i];

        if (module->type != WEIR_HTTP_MODULE) {
            continue;
        }

        m = module->ctx;

        if (srv && m->create_srv_conf) {
            ctx->srv_conf[module->ctx_index] = m->create_srv_conf(cf);
            if (ctx->srv_conf[module->ctx_index] == NULL) {
                return NULL;
            }
        }

        if (m->create_loc_conf) {
            ctx->loc_conf[module->ctx_index] = m->create_loc_conf(cf);
            if (ctx->loc_conf[module->ctx_index] == NULL) {
                return NULL;
            }
        }
    }

    return ctx;
}


static char *
weir_http_core_server(weir_conf_t *cf, weir_command_t *cmd, void *dummy)
{
    char                        *rv;
    weir_conf_t                  pcf;
    weir_http_conf_ctx_t        *ctx, *http_ctx;
    weir_http_listen_opt_t       lsopt;
    weir_http_core_srv_conf_t   *cscf, **cscfp;
    weir_http_core_loc_conf_t   *clcf;
    weir_http_core_main_conf_t  *cmcf;
    struct sockaddr_in          *sin;

    (void) cmd;
    (void) dummy;

    ctx = weir_pcalloc(cf->pool, sizeof(weir_http_conf_ctx_t));
    if (ctx == NULL) {
        return WEIR_CONF_ERROR;
    }

    http_ctx = cf->ctx;
    ctx->main_conf = http_ctx->main_conf;

    if (weir_http_core_new_confs(cf, ctx, 1) == NULL) {
        return WEIR_CONF_ERROR;
    }

    cscf = ctx->srv_conf[weir_http_core_module.ctx_index];
    cscf->ctx = ctx;

    clcf = ctx->loc_conf[weir_http_core_module.ctx_index];
    clcf->loc_conf = ctx->loc_conf;

    cmcf = ctx->main_conf[weir_http_core_module.ctx_index];

    cscfp = weir_array_push(&cmcf->servers);
    if (cscfp == NULL) {
        return WEIR_CONF_ERROR;
    }

    *cscfp = cscf;

    pcf = *cf;
    cf->ctx = ctx;
    cf->cmd_type = WEIR_HTTP_SRV_CONF;

    rv = weir_conf_parse(cf, NULL);

    *cf = pcf;

    if (rv != WEIR_CONF_OK || cscf->listen) {
        return rv;
    }

    /* as nginx: *:80 when started by root, *:8000 otherwise */

    weir_memzero(&lsopt, sizeof(weir_http_listen_opt_t));

    sin = &lsopt.sockaddr.sockaddr_in;
    sin->sin_family = AF_INET;
    sin->sin_port = htons((geteuid() == 0) ? 80 : 8000);
    sin->sin_addr.s_addr = INADDR_ANY;

    lsopt.socklen = sizeof(struct sockaddr_in);
    lsopt.backlog = 511;
    lsopt.rcvbuf = -1;
    lsopt.sndbuf = -1;
    lsopt.wildcard = 1;

    if (geteuid() == 0) {
        weir_str_set(&lsopt.addr_text, "0.0.0.0:80");

    } else {
        weir_str_set(&lsopt.addr_text, "0.0.0.0:8000");
    }

    if (weir_http_add_listen(cf, cscf, &lsopt) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    return WEIR_CONF_OK;
}


static char *
weir_http_core_location(weir_conf_t *cf, weir_command_t *cmd, void *dummy)
{
    char                       *rv;
    size_t                      len;
    unsigned char              *mod;
    weir_str_t                 *value, *name;
    weir_uint_t                 i;
    weir_conf_t                 save;
    weir_module_t              *module;
    weir_http_module_t         *m;
    weir_http_conf_ctx_t       *ctx, *pctx;
    weir_http_core_loc_conf_t  *clcf, *pclcf;

    (void) cmd;
    (void) dummy;

    ctx = weir_pcalloc(cf->pool, sizeof(weir_http_conf_ctx_t));
    if (ctx == NULL) {
        return WEIR_CONF_ERROR;
    }

    pctx = cf->ctx;
    ctx->main_conf = pctx->main_conf;
    ctx->srv_conf = pctx->srv_conf;

    ctx->loc_conf = weir_pcalloc(cf->pool,
                                 sizeof(void *) * weir_http_max_module);
    if (ctx->loc_conf == NULL) {
        return WEIR_CONF_ERROR;
    }

    for (i = 0; cf->cycle->modules[i]; i++) {
        module = cf->cycle->modules[i];

        if (module->type != WEIR_HTTP_MODULE) {
            continue;
        }

        m = module->ctx;

        if (m->create_loc_conf) {
            ctx->loc_conf[module->ctx_index] = m->create_loc_conf(cf);
            if (ctx->loc_conf[module->ctx_index] == NULL) {
                return WEIR_CONF_ERROR;
            }
        }
    }

    clcf = ctx->loc_conf[weir_http_core_module.ctx_index];
    clcf->loc_conf = ctx->loc_conf;

    value = cf->args->elts;

    if (cf->args->nelts == 3) {
        mod = value[1].data;
        len = value[1].len;
        name = &value[2];

        if (len == 1 && mod[0] == '=') {
            clcf->name = *name;
            clcf->exact_match = 1;

        } else if (len == 2 && mod[0] == '^' && mod[1] == '~') {
            clcf->name = *name;
            clcf->noregex = 1;

        } else if (len == 1 && mod[0] == '~') {
            if (weir_http_core_regex_location(cf, clcf, name, 0) != WEIR_OK) {
                return WEIR_CONF_ERROR;
            }

        } else if (len == 2 && mod[0] == '~' && mod[1] == '*') {
            if (weir_http_core_regex_location(cf, clcf, name, 1) != WEIR_OK) {
                return WEIR_CONF_ERROR;
            }

        } else {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid location modifier \"%.*s\"",
                                WEIR_STR_ARG(value[1]));
            return WEIR_CONF_ERROR;
        }

    } else {
        name = &value[1];

        /* "=/x", "~/x", "~*x" and "^~/x" written without a space */

        if (name->len > 1 && name->data[0] == '=') {
            clcf->name.len = name->len - 1;
            clcf->name.data = name->data + 1;
            clcf->exact_match = 1;

        } else if (name->len > 2 && name->data[0] == '^'
                   && name->data[1] == '~')
        {
            clcf->name.len = name->len - 2;
            clcf->name.data = name->data + 2;
            clcf->noregex = 1;

        } else if (name->len > 1 && name->data[0] == '~') {
            name->len--;
            name->data++;

            if (name->len > 1 && name->data[0] == '*') {
                name->len--;
                name->data++;

                if (weir_http_core_regex_location(cf, clcf, name, 1)
                    != WEIR_OK)
                {
                    return WEIR_CONF_ERROR;
                }

            } else if (weir_http_core_regex_location(cf, clcf, name, 0)
                       != WEIR_OK)
            {
                return WEIR_CONF_ERROR;
            }

        } else {
            clcf->name = *name;

            if (name->len && name->data[0] == '@') {
                clcf->named = 1;
            }
        }
    }

    if (clcf->name.len == 0 || (clcf->named && clcf->name.len == 1)) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "invalid location name \"%.*s\"",
                            WEIR_STR_ARG(clcf->name));
        return WEIR_CONF_ERROR;
    }

    if (clcf->regex == NULL && clcf->name.len > 255) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "location name \"%.*s\" is longer than 255 "
                            "bytes", WEIR_STR_ARG(clcf->name));
        return WEIR_CONF_ERROR;
    }

    pclcf = pctx->loc_conf[weir_http_core_module.ctx_index];

    if (cf->cmd_type == WEIR_HTTP_LOC_CONF) {

        /* nested location */

        if (pclcf->exact_match) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "location \"%.*s\" cannot be inside "
                                "the exact location \"%.*s\"",
                                WEIR_STR_ARG(clcf->name),
                                WEIR_STR_ARG(pclcf->name));
            return WEIR_CONF_ERROR;
        }

        if (pclcf->named) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "location \"%.*s\" cannot be inside "
                                "the named location \"%.*s\"",
                                WEIR_STR_ARG(clcf->name),
                                WEIR_STR_ARG(pclcf->name));
            return WEIR_CONF_ERROR;
        }

        if (clcf->named) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "named location \"%.*s\" can be "
                                "on the server level only",
                                WEIR_STR_ARG(clcf->name));
            return WEIR_CONF_ERROR;
        }

        len = pclcf->name.len;

        if (clcf->regex == NULL
            && (clcf->name.len < len
                || weir_memcmp(clcf->name.data, pclcf->name.data, len) != 0))
        {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "location \"%.*s\" is outside location "
                                "\"%.*s\"",
                                WEIR_STR_ARG(clcf->name),
                                WEIR_STR_ARG(pclcf->name));
            return WEIR_CONF_ERROR;
        }
    }

    if (weir_http_add_location(cf, &pclcf->locations, clcf) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    save = *cf;
    cf->ctx = ctx;
    cf->cmd_type = WEIR_HTTP_LOC_CONF;

    rv = weir_conf_parse(cf, NULL);

    *cf = save;

    return rv;
}


static weir_int_t
weir_http_core_regex_location(weir_conf_t *cf,
    weir_http_core_loc_conf_t *clcf, weir_str_t *regex, weir_uint_t caseless)
{
    unsigned char          errstr[WEIR_MAX_CONF_ERRSTR];
    weir_http_regex_t     *re;
    weir_regex_compile_t   rc;

    weir_memzero(&rc, sizeof(weir_regex_compile_t));

    rc.pattern = *regex;
    rc.pool = cf->pool;
    rc.err.len = WEIR_MAX_CONF_ERRSTR;
    rc.err.data = errstr;

    if (caseless) {
        rc.options = WEIR_REGEX_CASELESS;
        clcf->regex_caseless = 1;
    }

    re = weir_http_regex_compile(cf, &rc);
    if (re == NULL) {
        return WEIR_ERROR;
    }

    clcf->http_regex = re;
    clcf->regex = re->regex;
    clcf->name = *regex;

    return WEIR_OK;
}


/*
 * listen addr[:port] | port | unix:path [default_server] [reuseport]
 *     [backlog=N] [rcvbuf=size] [sndbuf=size] [ipv6only=on|off] [bind]
 *     [deferred]
 */

static char *
weir_http_core_listen(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_http_core_srv_conf_t *cscf = conf;

    char                        *err;
    ssize_t                      size;
    weir_int_t                   n;
    weir_str_t                  *value, s;
    weir_uint_t                  i;
    weir_array_t                 addrs;
    weir_addr_t                 *addr;
    weir_http_listen_opt_t       lsopt;
    weir_http_core_main_conf_t  *cmcf;

    (void) cmd;

    cscf->listen = 1;

    value = cf->args->elts;

    weir_memzero(&addrs, sizeof(weir_array_t));

    err = weir_parse_addr_port(cf->pool, &value[1], 80, &addrs);
    if (err != NULL) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0, "%s in \"%.*s\" of "
                            "the \"listen\" directive", err,
                            WEIR_STR_ARG(value[1]));
        return WEIR_CONF_ERROR;
    }

    weir_memzero(&lsopt, sizeof(weir_http_listen_opt_t));

    lsopt.backlog = 511;
    lsopt.rcvbuf = -1;
    lsopt.sndbuf = -1;
    lsopt.ipv6only = 1;

    for (i = 2; i < cf->args->nelts; i++) {

        if (weir_str_eq_lit(&value[i], "default_server")
            || weir_str_eq_lit(&value[i], "default"))
        {
            lsopt.default_server = 1;
            continue;
        }

        if (weir_str_eq_lit(&value[i], "bind")) {
            lsopt.set = 1;
            lsopt.bind = 1;
            continue;
        }

        if (weir_str_eq_lit(&value[i], "reuseport")) {
            lsopt.reuseport = 1;
            lsopt.set = 1;
            lsopt.bind = 1;
            continue;
        }

        if (weir_str_eq_lit(&value[i], "deferred")) {
            lsopt.deferred_accept = 1;
            lsopt.set = 1;
            lsopt.bind = 1;
            continue;
        }

        if (value[i].len > 8
            && weir_memcmp(value[i].data, "backlog=", 8) == 0)
        {
            n = weir_atoi(value[i].data + 8, value[i].len - 8);
            if (n == WEIR_ERROR || n == 0) {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "invalid backlog \"%.*s\"",
                                    WEIR_STR_ARG(value[i]));
                return WEIR_CONF_ERROR;
            }

            lsopt.backlog = (int) n;
            lsopt.set = 1;
            lsopt.bind = 1;
            continue;
        }

        if (value[i].len > 7
            && (weir_memcmp(value[i].data, "rcvbuf=", 7) == 0
                || weir_memcmp(value[i].data, "sndbuf=", 7) == 0))
        {
            s.len = value[i].len - 7;
            s.data = value[i].data + 7;

            size = weir_parse_size(&s);
            if (size <= 0 || size > 0x7fffffff) {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "invalid %.6s \"%.*s\"",
                                    (char *) value[i].data,
                                    WEIR_STR_ARG(s));
                return WEIR_CONF_ERROR;
            }

            if (value[i].data[0] == 'r') {
                lsopt.rcvbuf = (int) size;

            } else {
                lsopt.sndbuf = (int) size;
            }

            lsopt.set = 1;
            lsopt.bind = 1;
            continue;
        }

        if (value[i].len > 9
            && weir_memcmp(value[i].data, "ipv6only=", 9) == 0)
        {
            s.len = value[i].len - 9;
            s.data = value[i].data + 9;

            if (weir_str_eq_lit(&s, "on")) {
                lsopt.ipv6only = 1;

            } else if (weir_str_eq_lit(&s, "off")) {
                lsopt.ipv6only = 0;

            } else {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "invalid ipv6only flags \"%.*s\"",
                                    WEIR_STR_ARG(s));
                return WEIR_CONF_ERROR;
            }

            lsopt.set = 1;
            lsopt.bind = 1;
            continue;
        }

        if (weir_str_eq_lit(&value[i], "ssl")) {
            cmcf = weir_http_conf_get_module_main_conf(cf,
                                                       weir_http_core_module);

            if (cmcf->ssl == NULL) {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "the \"ssl\" parameter requires the "
                                    "ssl module (configure "
                                    "--with-http_ssl_module, or load_module "
                                    "modules/weir_http_ssl_module.so)");
                return WEIR_CONF_ERROR;
            }

            lsopt.ssl = 1;
            continue;
        }

        if (weir_str_eq_lit(&value[i], "http2")) {
            cmcf = weir_http_conf_get_module_main_conf(cf,
                                                       weir_http_core_module);

            if (cmcf->v2 == NULL) {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "the \"http2\" parameter requires the "
                                    "HTTP/2 module (configure "
                                    "--with-http_v2_module, which needs "
                                    "libnghttp2)");
                return WEIR_CONF_ERROR;
            }

            /* nginx 1.22 style; "http2 on" in a server is the newer */
            lsopt.http2 = 1;
            continue;
        }

        if (weir_str_eq_lit(&value[i], "quic")) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "the \"%.*s\" parameter of the \"listen\" "
                                "directive is not supported yet",
                                WEIR_STR_ARG(value[i]));
            return WEIR_CONF_ERROR;
        }

        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "invalid parameter \"%.*s\"",
                            WEIR_STR_ARG(value[i]));
        return WEIR_CONF_ERROR;
    }

    addr = addrs.elts;

    for (i = 0; i < addrs.nelts; i++) {

        if (addr[i].sockaddr->sa_family == AF_UNIX) {
            if (lsopt.reuseport) {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "reuseport is not supported "
                                    "for unix sockets");
                return WEIR_CONF_ERROR;
            }
        }

        if (addr[i].sockaddr->sa_family != AF_INET6
            && (lsopt.ipv6only == 0))
        {
            /* ipv6only=off only makes sense for [::] */
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "ipv6only is not supported "
                                "on addr \"%.*s\"",
                                WEIR_STR_ARG(addr[i].name));
            return WEIR_CONF_ERROR;
        }

        if (addr[i].socklen > sizeof(weir_sockaddr_t)) {
            return "invalid address";
        }

        weir_memcpy(&lsopt.sockaddr, addr[i].sockaddr, addr[i].socklen);
        lsopt.socklen = addr[i].socklen;
        lsopt.addr_text = addr[i].name;
        lsopt.wildcard = 0;

        switch (addr[i].sockaddr->sa_family) {

        case AF_INET:
            lsopt.wildcard = (lsopt.sockaddr.sockaddr_in.sin_addr.s_addr
                              == INADDR_ANY);
            break;

        case AF_INET6:
            lsopt.wildcard = IN6_IS_ADDR_UNSPECIFIED(
                                 &lsopt.sockaddr.sockaddr_in6.sin6_addr);
            break;

        default:
            break;
        }

        if (weir_http_add_listen(cf, cscf, &lsopt) != WEIR_OK) {
            return WEIR_CONF_ERROR;
        }
    }

    return WEIR_CONF_OK;
}


static char *
weir_http_core_server_name(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_http_core_srv_conf_t *cscf = conf;

    unsigned char             *p;
    size_t                     j;
    weir_str_t                *value;
    weir_uint_t                i;
    weir_http_server_name_t   *sn;
    weir_regex_compile_t       rc;
    unsigned char              errstr[WEIR_MAX_CONF_ERRSTR];

    (void) cmd;

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {

        if (value[i].len && value[i].data[0] != '~') {
            for (j = 0; j < value[i].len; j++) {
                if (value[i].data[j] == '/' || value[i].data[j] == '\\'
                    || value[i].data[j] <= ' ')
                {
                    weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                        "server name \"%.*s\" has suspicious "
                                        "symbols", WEIR_STR_ARG(value[i]));
                    return WEIR_CONF_ERROR;
                }
            }

            p = weir_strlchr(value[i].data + 1,
                             value[i].data + value[i].len - 1, '*');

            if (p != NULL) {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "invalid server name or wildcard "
                                    "\"%.*s\"", WEIR_STR_ARG(value[i]));
                return WEIR_CONF_ERROR;
            }
        }

        sn = weir_array_push(&cscf->server_names);
        if (sn == NULL) {
            return WEIR_CONF_ERROR;
        }

        weir_memzero(sn, sizeof(weir_http_server_name_t));
        sn->server = cscf;

        if (value[i].len == 0) {
            weir_str_set(&sn->name, "");
            continue;
        }

        if (value[i].data[0] == '~') {
            if (value[i].len == 1) {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "empty regex in server name \"%.*s\"",
                                    WEIR_STR_ARG(value[i]));
                return WEIR_CONF_ERROR;
            }

            weir_memzero(&rc, sizeof(weir_regex_compile_t));

            rc.pattern.len = value[i].len - 1;
            rc.pattern.data = value[i].data + 1;
            rc.pool = cf->pool;
            rc.options = WEIR_REGEX_CASELESS;
            rc.err.len = WEIR_MAX_CONF_ERRSTR;
            rc.err.data = errstr;

            sn->http_regex = weir_http_regex_compile(cf, &rc);
            if (sn->http_regex == NULL) {
                return WEIR_CONF_ERROR;
            }

            sn->regex = sn->http_regex->regex;
            sn->name = value[i];
            if (rc.captures > 0) {
                cscf->captures = 1;
            }
            continue;
        }

        sn->name.len = value[i].len;
        sn->name.data = weir_pnalloc(cf->pool, value[i].len);
        if (sn->name.data == NULL) {
            return WEIR_CONF_ERROR;
        }

        weir_strlow(sn->name.data, value[i].data, value[i].len);

        if (value[i].len > 2 && value[i].data[0] == '*'
            && value[i].data[1] == '.')
        {
            sn->wildcard_head = 1;

        } else if (value[i].len > 2 && value[i].data[value[i].len - 1] == '*'
                   && value[i].data[value[i].len - 2] == '.')
        {
            sn->wildcard_tail = 1;

        } else if (value[i].data[0] == '*'
                   || value[i].data[value[i].len - 1] == '*')
        {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid server name or wildcard \"%.*s\"",
                                WEIR_STR_ARG(value[i]));
            return WEIR_CONF_ERROR;
        }
    }

    return WEIR_CONF_OK;
}


static char *
weir_http_core_root(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_http_core_loc_conf_t *clcf = conf;

    weir_str_t  *value;
    weir_uint_t  alias;

    alias = (cmd->name.len == sizeof("alias") - 1);

    if (clcf->root.data) {

        if ((clcf->alias != 0) == alias) {
            return "is duplicate";
        }

        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "\"%.*s\" directive is duplicate, "
                            "\"%s\" directive was specified earlier",
                            WEIR_STR_ARG(cmd->name),
                            clcf->alias ? "alias" : "root");
        return WEIR_CONF_ERROR;
    }

    if (clcf->named && alias) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "the \"alias\" directive cannot be used "
                            "inside the named location");
        return WEIR_CONF_ERROR;
    }

    value = cf->args->elts;

    if (weir_strstr(value[1].data, "$document_root")
        || weir_strstr(value[1].data, "${document_root}"))
    {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "the $document_root variable cannot be used "
                            "in the \"%.*s\" directive",
                            WEIR_STR_ARG(cmd->name));
        return WEIR_CONF_ERROR;
    }

    if (weir_http_script_variables_count(&value[1])) {
        /* root and alias with variables are a later step */
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "variables in the \"%.*s\" directive are not "
                            "supported yet", WEIR_STR_ARG(cmd->name));
        return WEIR_CONF_ERROR;
    }

    clcf->root = value[1];
    clcf->alias = alias ? clcf->name.len : 0;

    if (alias && clcf->regex) {
        /* as nginx: a regex location's alias is the whole path, the
         * URI is not appended (weir_http_map_uri_to_path()) */
        clcf->alias = WEIR_MAX_SIZE_T_VALUE;
    }

    if (!alias && clcf->root.len > 0
        && clcf->root.data[clcf->root.len - 1] == '/')
    {
        clcf->root.len--;
    }

    if (clcf->root.len == 0 && !alias) {
        weir_str_set(&clcf->root, "/");
    }

    if (weir_conf_full_name(cf->cycle, &clcf->root, 0) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    return WEIR_CONF_OK;
}


static char *
weir_http_core_types(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_http_core_loc_conf_t *clcf = conf;

    char         *rv;
    weir_conf_t   save;

    (void) cmd;

    if (clcf->types == NULL) {
        clcf->types = weir_array_create(cf->pool, 64,
                                        sizeof(weir_hash_key_t));
        if (clcf->types == NULL) {
            return WEIR_CONF_ERROR;
        }
    }

    save = *cf;
    cf->handler = weir_http_core_type;
    cf->handler_conf = conf;

    rv = weir_conf_parse(cf, NULL);

    *cf = save;

    return rv;
}


static char *
weir_http_core_type(weir_conf_t *cf, weir_command_t *dummy, void *conf)
{
    weir_http_core_loc_conf_t *clcf = conf;

    weir_str_t       *value, *content_type, *old;
    weir_uint_t       i, n, hash;
    weir_hash_key_t  *type;

    (void) dummy;

    value = cf->args->elts;

    if (cf->args->nelts < 2) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "invalid number of arguments in \"types\" "
                            "directive");
        return WEIR_CONF_ERROR;
    }

    if (weir_str_eq_lit(&value[0], "include")) {
        if (cf->args->nelts != 2) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid number of arguments in "
                                "\"include\" directive");
            return WEIR_CONF_ERROR;
        }

        return weir_conf_include(cf, dummy, conf);
    }

    content_type = weir_palloc(cf->pool, sizeof(weir_str_t));
    if (content_type == NULL) {
        return WEIR_CONF_ERROR;
    }

    *content_type = value[0];

    for (i = 1; i < cf->args->nelts; i++) {

        hash = weir_hash_strlow(value[i].data, value[i].data, value[i].len);

        type = clcf->types->elts;
        for (n = 0; n < clcf->types->nelts; n++) {
            if (value[i].len == type[n].key.len
                && weir_memcmp(value[i].data, type[n].key.data,
                               value[i].len) == 0)
            {
                old = type[n].value;
                type[n].value = content_type;

                weir_conf_log_error(WEIR_LOG_WARN, cf, 0,
                                    "duplicate extension \"%.*s\", "
                                    "content type: \"%.*s\", "
                                    "previous content type: \"%.*s\"",
                                    WEIR_STR_ARG(value[i]),
                                    WEIR_STR_ARG(*content_type),
                                    WEIR_STR_ARG(*old));
                goto next;
            }
        }

        type = weir_array_push(clcf->types);
        if (type == NULL) {
            return WEIR_CONF_ERROR;
        }

        type->key = value[i];
        type->key_hash = hash;
        type->value = content_type;

    next:
        continue;
    }

    return WEIR_CONF_OK;
}


static char *
weir_http_core_keepalive(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_http_core_loc_conf_t *clcf = conf;

    weir_int_t   n;
    weir_str_t  *value;

    (void) cmd;

    if (clcf->keepalive_timeout != WEIR_CONF_UNSET_MSEC) {
        return "is duplicate";
    }

    value = cf->args->elts;

    n = weir_parse_time(&value[1], 0);
    if (n == WEIR_ERROR) {
        return "invalid value";
    }

    clcf->keepalive_timeout = (weir_msec_t) n;

    if (cf->args->nelts == 2) {
        return WEIR_CONF_OK;
    }

    n = weir_parse_time(&value[2], 1);
    if (n == WEIR_ERROR) {
        return "invalid value";
    }

    clcf->keepalive_header = (time_t) n;

    return WEIR_CONF_OK;
}


static char *
weir_http_core_internal(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_http_core_loc_conf_t *clcf = conf;

    (void) cf;
    (void) cmd;

    if (clcf->internal != WEIR_CONF_UNSET) {
        return "is duplicate";
    }

    clcf->internal = 1;

    return WEIR_CONF_OK;
}


/* error_page code ... [=[code]] uri */

static char *
weir_http_core_error_page(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_http_core_loc_conf_t *clcf = conf;

    unsigned char                      *p;
    weir_int_t                          overwrite;
    weir_str_t                         *value, uri, args;
    weir_uint_t                         i, n;
    weir_http_err_page_t               *err;
    weir_http_complex_value_t           cv;
    weir_http_compile_complex_value_t   ccv;

    (void) cmd;

    if (clcf->error_pages == NULL) {
        clcf->error_pages = weir_array_create(cf->pool, 4,
                                              sizeof(weir_http_err_page_t));
        if (clcf->error_pages == NULL) {
            return WEIR_CONF_ERROR;
        }
    }

    value = cf->args->elts;

    i = cf->args->nelts - 2;

    if (value[i].data[0] == '=') {
        if (i == 1) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid value \"%.*s\"",
                                WEIR_STR_ARG(value[i]));
            return WEIR_CONF_ERROR;
        }

        if (value[i].len > 1) {
            overwrite = weir_atoi(&value[i].data[1], value[i].len - 1);

            if (overwrite == WEIR_ERROR || overwrite < 100
                || overwrite > 599)
            {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "invalid value \"%.*s\"",
                                    WEIR_STR_ARG(value[i]));
                return WEIR_CONF_ERROR;
            }

        } else {
            /* "=" alone: the status of the page the uri answers with */
            overwrite = 0;
        }

        n = 2;

    } else {
        overwrite = -1;
        n = 1;
    }

    uri = value[cf->args->nelts - 1];

    weir_memzero(&cv, sizeof(weir_http_complex_value_t));
    weir_memzero(&ccv, sizeof(weir_http_compile_complex_value_t));

    ccv.cf = cf;
    ccv.value = &uri;
    ccv.complex_value = &cv;

    if (weir_http_compile_complex_value(&ccv) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    weir_str_null(&args);

    if (cv.lengths == NULL && uri.len && uri.data[0] == '/') {
        p = weir_strlchr(uri.data, uri.data + uri.len, '?');

        if (p) {
            cv.value.len = (size_t) (p - uri.data);
            cv.value.data = uri.data;
            p++;
            args.len = (size_t) ((uri.data + uri.len) - p);
            args.data = p;
        }
    }

    for (i = 1; i < cf->args->nelts - n; i++) {
        err = weir_array_push(clcf->error_pages);
        if (err == NULL) {
            return WEIR_CONF_ERROR;
        }

        err->status = weir_atoi(value[i].data, value[i].len);

        if (err->status == WEIR_ERROR || err->status == 499) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid value \"%.*s\"",
                                WEIR_STR_ARG(value[i]));
            return WEIR_CONF_ERROR;
        }

        if (err->status < 300 || err->status > 599) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "value \"%.*s\" must be between 300 and 599",
                                WEIR_STR_ARG(value[i]));
            return WEIR_CONF_ERROR;
        }

        err->overwrite = overwrite;

        if (overwrite == -1) {
            switch (err->status) {
            case 413:   /* the body was not read: answer as a GET would */
            case 495:
            case 496:
            case 497:
                err->overwrite = 400;
                break;

            default:
                break;
            }
        }

        err->value = cv;
        err->args = args;
    }

    return WEIR_CONF_OK;
}


/* try_files file ... uri | =code */

static char *
weir_http_core_try_files(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_http_core_loc_conf_t *clcf = conf;

    weir_int_t                          code;
    weir_str_t                         *value;
    weir_uint_t                         i, n;
    weir_http_try_file_t               *tf;
    weir_http_compile_complex_value_t   ccv;

    (void) cmd;

    if (clcf->try_files) {
        return "is duplicate";
    }

    tf = weir_pcalloc(cf->pool, cf->args->nelts * sizeof(weir_http_try_file_t));
    if (tf == NULL) {
        return WEIR_CONF_ERROR;
    }

    clcf->try_files = tf;

    value = cf->args->elts;

    for (i = 0; i < cf->args->nelts - 1; i++) {

        tf[i].name = value[i + 1];

        if (tf[i].name.len > 0
            && tf[i].name.data[tf[i].name.len - 1] == '/'
            && i + 2 < cf->args->nelts)
        {
            tf[i].test_dir = 1;
            tf[i].name.len--;
            tf[i].name.data[tf[i].name.len] = '\0';
        }

        if (i + 2 == cf->args->nelts && tf[i].name.len > 1
            && tf[i].name.data[0] == '=')
        {
            code = weir_atoi(tf[i].name.data + 1, tf[i].name.len - 1);

            if (code == WEIR_ERROR || code > 999) {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "invalid code \"%.*s\"",
                                    WEIR_STR_ARG(tf[i].name));
                return WEIR_CONF_ERROR;
            }

            tf[i].code = (unsigned) code;
            continue;
        }

        n = weir_http_script_variables_count(&tf[i].name);

        if (n) {
            tf[i].value = weir_pcalloc(cf->pool,
                                       sizeof(weir_http_complex_value_t));
            if (tf[i].value == NULL) {
                return WEIR_CONF_ERROR;
            }

            weir_memzero(&ccv, sizeof(weir_http_compile_complex_value_t));

            ccv.cf = cf;
            ccv.value = &tf[i].name;
            ccv.complex_value = tf[i].value;

            if (weir_http_compile_complex_value(&ccv) != WEIR_OK) {
                return WEIR_CONF_ERROR;
            }
        }
    }

    if (tf[cf->args->nelts - 2].name.len == 0) {
        return "has an empty last parameter";
    }

    return WEIR_CONF_OK;
}


static char *
weir_http_core_error_log(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_http_core_loc_conf_t *clcf = conf;

    (void) cmd;

    return weir_log_set_log(cf, &clcf->error_log);
}


static char *
weir_http_core_lowat_check(weir_conf_t *cf, void *post, void *data)
{
    size_t *np = data;

    (void) post;

    if (*np != 0) {
        weir_conf_log_error(WEIR_LOG_WARN, cf, 0,
                            "\"send_lowat\" is not supported, ignored");
        *np = 0;
    }

    return WEIR_CONF_OK;
}


/*
 * The try_files precontent handler: the first existing file (or
 * directory, for a name ending in "/") becomes the request's uri; when
 * none exists, the last parameter is an internal redirect (uri or @name)
 * or a status ("=404").
 */

static weir_int_t
weir_http_core_try_files_handler(weir_http_request_t *r)
{
    size_t                      root, reserve, len;
    unsigned char              *p;
    weir_str_t                  path, name, uri, args;
    weir_uint_t                 test_dir, add_uri;
    struct stat                 st;
    weir_http_try_file_t       *tf;
    weir_http_core_loc_conf_t  *clcf;

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    if (clcf->try_files == NULL) {
        return WEIR_DECLINED;
    }

    for (tf = clcf->try_files; tf->name.len; tf++) {

        if (tf->value) {
            if (weir_http_complex_value(r, tf->value, &name) != WEIR_OK) {
                return WEIR_HTTP_INTERNAL_SERVER_ERROR;
            }

        } else {
            name = tf->name;
        }

        if (tf[1].name.len == 0) {

            /* the last parameter: a status, an uri or a named location */

            if (tf->code) {
                return (weir_int_t) tf->code;
            }

            /* both take a reference for the new run: drop ours */

            if (name.len && name.data[0] == '@') {
                (void) weir_http_named_location(r, &name);

            } else {
                weir_http_split_args(r, &name, &args);
                (void) weir_http_internal_redirect(r, &name, &args);
            }

            weir_http_finalize_request(r, WEIR_DONE);
            return WEIR_DONE;
        }

        /* map "name" as if it were the uri of the request */

        reserve = name.len + 1;

        uri = r->uri;
        r->uri = name;

        /* a regex location's alias (the whole path) takes the name
         * after it, as in nginx */
        add_uri = r->add_uri_to_alias;
        r->add_uri_to_alias = 1;

        p = weir_http_map_uri_to_path(r, &path, &root, reserve);

        r->uri = uri;
        r->add_uri_to_alias = add_uri;

        if (p == NULL) {
            return WEIR_HTTP_INTERNAL_SERVER_ERROR;
        }

        test_dir = tf->test_dir;

        weir_log_debug(r->connection->log, 0,
                       "trying to use %s: \"%s\"",
                       test_dir ? "dir" : "file", (char *) path.data);

        if (stat((char *) path.data, &st) == -1) {
            continue;
        }

        if ((test_dir != 0) != (S_ISDIR(st.st_mode) != 0)) {
            continue;
        }

        /* found: the name becomes the uri */

        len = name.len;

        p = weir_pnalloc(r->pool, len);
        if (p == NULL) {
            return WEIR_HTTP_INTERNAL_SERVER_ERROR;
        }

        weir_memcpy(p, name.data, len);

        r->uri.len = len;
        r->uri.data = p;

        if (clcf->alias == WEIR_MAX_SIZE_T_VALUE && !test_dir) {
            /* the file found is alias + name: the handlers map it so */
            r->add_uri_to_alias = 1;
        }

        weir_http_split_args(r, &r->uri, &r->args);

        /* the extension of the new uri, for the content type */
        weir_str_null(&r->exten);

        for (p = r->uri.data + r->uri.len; p > r->uri.data; p--) {
            if (p[-1] == '.') {
                r->exten.data = p;
                r->exten.len = (size_t) (r->uri.data + r->uri.len - p);
                break;
            }

            if (p[-1] == '/') {
                break;
            }
        }

        return WEIR_DECLINED;
    }

    /* not reached: the last entry always answers */
    return WEIR_DECLINED;
}
