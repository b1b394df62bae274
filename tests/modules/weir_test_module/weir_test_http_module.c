/*
 * weir_test_http_module: the HTTP module API exercised end to end by a
 * module built outside weir and loaded with load_module.
 *
 *   test_answer TEXT;        a content-phase handler answering 200 TEXT
 *   test_header NAME VALUE;  a header filter adding a response header
 *
 * Both are location-level; a location without them is left alone
 * (the handler declines, the filter passes the response through).
 */

#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"


typedef struct {
    weir_str_t    answer;
    weir_str_t    header_name;
    weir_str_t    header_value;
} weir_test_http_loc_conf_t;


static void *weir_test_http_create_loc_conf(weir_conf_t *cf);
static char *weir_test_http_merge_loc_conf(weir_conf_t *cf, void *parent,
    void *child);
static char *weir_test_http_header(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static weir_int_t weir_test_http_answer_handler(weir_http_request_t *r);
static weir_int_t weir_test_http_header_filter(weir_http_request_t *r);


static weir_http_header_filter_pt  weir_test_http_next_header_filter;


static weir_command_t  weir_test_http_commands[] = {

    { weir_string("test_answer"),
      WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_str_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_test_http_loc_conf_t, answer),
      NULL },

    { weir_string("test_header"),
      WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF|WEIR_CONF_TAKE2,
      weir_test_http_header,
      WEIR_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      weir_null_command
};


/* before the built-in content handlers (index 800, static 900) */

static weir_http_phase_decl_t  weir_test_http_phases[] = {
    { WEIR_HTTP_CONTENT_PHASE, 100, "test_answer",
      weir_test_http_answer_handler },
    { 0, 0, NULL, NULL }
};


static weir_http_header_filter_decl_t  weir_test_http_header_filters[] = {
    { "test_header", 450, weir_test_http_header_filter,
      &weir_test_http_next_header_filter },
    { NULL, 0, NULL, NULL }
};


static weir_http_module_t  weir_test_http_module_ctx = {
    NULL,                                  /* preconfiguration */
    NULL,                                  /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    weir_test_http_create_loc_conf,        /* create location configuration */
    weir_test_http_merge_loc_conf,         /* merge location configuration */

    weir_test_http_phases,
    weir_test_http_header_filters,
    NULL,                                  /* body filters */
    NULL                                   /* request body filters */
};


weir_module_t  weir_test_http_module = {
    WEIR_MODULE_V1,
    &weir_test_http_module_ctx,
    weir_test_http_commands,
    WEIR_HTTP_MODULE,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    WEIR_MODULE_V1_PADDING
};


static void *
weir_test_http_create_loc_conf(weir_conf_t *cf)
{
    /* the strings stay NULL (unset) until a directive sets them */
    return weir_pcalloc(cf->pool, sizeof(weir_test_http_loc_conf_t));
}


static char *
weir_test_http_merge_loc_conf(weir_conf_t *cf, void *parent, void *child)
{
    weir_test_http_loc_conf_t  *prev = parent;
    weir_test_http_loc_conf_t  *conf = child;

    (void) cf;

    if (conf->answer.data == NULL) {
        conf->answer = prev->answer;
    }

    if (conf->header_name.data == NULL) {
        conf->header_name = prev->header_name;
        conf->header_value = prev->header_value;
    }

    return WEIR_CONF_OK;
}


static char *
weir_test_http_header(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_test_http_loc_conf_t  *tlcf = conf;
    weir_str_t                 *value;

    (void) cmd;

    if (tlcf->header_name.data) {
        return "is duplicate";
    }

    value = cf->args->elts;

    tlcf->header_name = value[1];
    tlcf->header_value = value[2];

    return WEIR_CONF_OK;
}


static weir_int_t
weir_test_http_answer_handler(weir_http_request_t *r)
{
    weir_test_http_loc_conf_t  *tlcf;
    weir_str_t                  type = weir_string("text/plain");

    tlcf = weir_http_get_module_loc_conf(r, weir_test_http_module);

    if (tlcf->answer.data == NULL) {
        return WEIR_DECLINED;
    }

    if (weir_http_discard_request_body(r) != WEIR_OK) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    return weir_http_send_response(r, WEIR_HTTP_OK, &type, &tlcf->answer);
}


static weir_int_t
weir_test_http_header_filter(weir_http_request_t *r)
{
    weir_test_http_loc_conf_t  *tlcf;

    tlcf = weir_http_get_module_loc_conf(r, weir_test_http_module);

    if (tlcf->header_name.data != NULL) {
        if (weir_http_add_header_out(r, (char *) tlcf->header_name.data,
                                     &tlcf->header_value)
            == NULL)
        {
            return WEIR_ERROR;
        }
    }

    return weir_test_http_next_header_filter(r);
}
