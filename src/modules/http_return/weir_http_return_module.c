#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"

/*
 * The "return" directive: answers a request with a status, a text body or
 * a redirect, before any content handler runs.
 *
 * A return at server level runs in the server-rewrite phase (before a
 * location is chosen), a return in a location in the rewrite phase. The
 * location configuration is deliberately not merged: a server-level
 * return has already answered by the time a location would inherit it.
 */


typedef struct {
    weir_uint_t                  status;    /* WEIR_CONF_UNSET_UINT: none */
    weir_http_complex_value_t   *text;      /* text or URL, may be NULL */
} weir_http_return_loc_conf_t;


static weir_int_t weir_http_return_handler(weir_http_request_t *r);
static void *weir_http_return_create_loc_conf(weir_conf_t *cf);
static char *weir_http_return(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);


static weir_command_t  weir_http_return_commands[] = {

    { weir_string("return"),
      WEIR_HTTP_SRV_CONF|WEIR_HTTP_SIF_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_HTTP_LIF_CONF|WEIR_CONF_TAKE12,
      weir_http_return,
      WEIR_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    weir_null_command
};


static weir_http_phase_decl_t  weir_http_return_phases[] = {
    { WEIR_HTTP_SERVER_REWRITE_PHASE, 100, "return",
      weir_http_return_handler },
    { WEIR_HTTP_REWRITE_PHASE, 100, "return", weir_http_return_handler },
    { 0, 0, NULL, NULL }
};


static weir_http_module_t  weir_http_return_module_ctx = {
    NULL,                                  /* preconfiguration */
    NULL,                                  /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    weir_http_return_create_loc_conf,      /* create location configuration */
    NULL,                                  /* merge location configuration */

    weir_http_return_phases,               /* phase handlers */
    NULL,                                  /* header filters */
    NULL,                                  /* body filters */
    NULL                                   /* request body filters */
};


weir_module_t  weir_http_return_module = {
    WEIR_MODULE_V1,
    &weir_http_return_module_ctx,          /* module context */
    weir_http_return_commands,             /* module directives */
    WEIR_HTTP_MODULE,                      /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    WEIR_MODULE_V1_PADDING
};


static weir_int_t
weir_http_return_is_redirect(weir_uint_t status)
{
    return status == WEIR_HTTP_MOVED_PERMANENTLY
           || status == WEIR_HTTP_MOVED_TEMPORARILY
           || status == WEIR_HTTP_SEE_OTHER
           || status == WEIR_HTTP_TEMPORARY_REDIRECT
           || status == WEIR_HTTP_PERMANENT_REDIRECT;
}


static weir_int_t
weir_http_return_handler(weir_http_request_t *r)
{
    weir_int_t                    rc;
    weir_str_t                    text;
    weir_http_header_t           *h;
    weir_http_return_loc_conf_t  *rlcf;

    rlcf = weir_http_get_module_loc_conf(r, weir_http_return_module);

    if (rlcf == NULL || rlcf->status == WEIR_CONF_UNSET_UINT) {
        return WEIR_DECLINED;
    }

    if (rlcf->status == WEIR_HTTP_CLOSE) {
        return WEIR_HTTP_CLOSE;
    }

    if (rlcf->text == NULL) {

        /* an error or a redirect without a target: the standard page;
         * anything else ("return 200;") an empty body */

        if (rlcf->status >= WEIR_HTTP_BAD_REQUEST
            || weir_http_return_is_redirect(rlcf->status))
        {
            return rlcf->status;
        }

        text.len = 0;
        text.data = NULL;

    } else if (weir_http_complex_value(r, rlcf->text, &text) != WEIR_OK) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (weir_http_return_is_redirect(rlcf->status)) {

        /* the special response carries the Location header and the
         * standard body for the redirect */

        weir_http_clear_header_out(&r->headers_out.location);

        h = weir_http_add_header_out(r, "Location", &text);
        if (h == NULL) {
            return WEIR_HTTP_INTERNAL_SERVER_ERROR;
        }

        r->headers_out.location = h;

        return rlcf->status;
    }

    /* the rewrite checkers take WEIR_OK as "next phase": the response
     * is sent here, so the request is finalized here too */

    rc = weir_http_send_response(r, rlcf->status, NULL, &text);

    weir_http_finalize_request(r, rc);

    return WEIR_DONE;
}


static void *
weir_http_return_create_loc_conf(weir_conf_t *cf)
{
    weir_http_return_loc_conf_t  *rlcf;

    rlcf = weir_pcalloc(cf->pool, sizeof(weir_http_return_loc_conf_t));
    if (rlcf == NULL) {
        return NULL;
    }

    rlcf->status = WEIR_CONF_UNSET_UINT;

    return rlcf;
}


static char *
weir_http_return(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_http_return_loc_conf_t  *rlcf = conf;

    weir_int_t                          status;
    weir_str_t                         *value, *text;
    weir_http_compile_complex_value_t   ccv;

    (void) cmd;

    if (rlcf->status != WEIR_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;
    text = NULL;

    status = weir_atoi(value[1].data, value[1].len);

    if (status == WEIR_ERROR) {

        /* "return URL": a temporary redirect, as nginx does */

        if (cf->args->nelts == 3
            || !(weir_strncmp(value[1].data, "http://", 7) == 0
                 || weir_strncmp(value[1].data, "https://", 8) == 0
                 || weir_strncmp(value[1].data, "$scheme", 7) == 0))
        {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid return code \"%.*s\"",
                                WEIR_STR_ARG(value[1]));
            return WEIR_CONF_ERROR;
        }

        status = WEIR_HTTP_MOVED_TEMPORARILY;
        text = &value[1];

    } else {
        if (status > 999) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid return code \"%.*s\"",
                                WEIR_STR_ARG(value[1]));
            return WEIR_CONF_ERROR;
        }

        if (cf->args->nelts == 3) {
            text = &value[2];
        }
    }

    rlcf->status = (weir_uint_t) status;

    if (text == NULL) {
        return WEIR_CONF_OK;
    }

    rlcf->text = weir_pcalloc(cf->pool, sizeof(weir_http_complex_value_t));
    if (rlcf->text == NULL) {
        return WEIR_CONF_ERROR;
    }

    weir_memzero(&ccv, sizeof(weir_http_compile_complex_value_t));

    ccv.cf = cf;
    ccv.value = text;
    ccv.complex_value = rlcf->text;

    if (weir_http_compile_complex_value(&ccv) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    return WEIR_CONF_OK;
}
