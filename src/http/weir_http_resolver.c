/*
 * weir_http_resolver.c: the "resolver" and "resolver_timeout" directives
 * of http, server and location (nginx's), inherited inward. The lookups
 * themselves are the core's (src/core/weir_resolver.c); the upstream core
 * asks here which resolver a request's location has.
 */

#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"
#include "weir_resolver.h"

typedef struct {
    weir_resolver_t  *resolver;
    weir_msec_t       resolver_timeout;
} weir_http_resolver_loc_conf_t;

static void *weir_http_resolver_create_loc_conf(weir_conf_t *cf);
static char *weir_http_resolver_merge_loc_conf(weir_conf_t *cf,
    void *parent, void *child);
static char *weir_http_resolver_set(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);


static weir_command_t  weir_http_resolver_commands[] = {

    { weir_string("resolver"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
          |WEIR_CONF_1MORE,
      weir_http_resolver_set,
      WEIR_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { weir_string("resolver_timeout"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
          |WEIR_CONF_TAKE1,
      weir_conf_set_msec_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_resolver_loc_conf_t, resolver_timeout),
      NULL },

      weir_null_command
};


static weir_http_module_t  weir_http_resolver_module_ctx = {
    NULL,                                  /* preconfiguration */
    NULL,                                  /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    weir_http_resolver_create_loc_conf,    /* create location configuration */
    weir_http_resolver_merge_loc_conf,     /* merge location configuration */

    NULL,                                  /* phase handlers */
    NULL,                                  /* header filters */
    NULL,                                  /* body filters */
    NULL                                   /* request body filters */
};


weir_module_t  weir_http_resolver_module = {
    WEIR_MODULE_V1,
    &weir_http_resolver_module_ctx,        /* module context */
    weir_http_resolver_commands,           /* module directives */
    WEIR_HTTP_MODULE,                      /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    WEIR_MODULE_V1_PADDING
};


weir_resolver_t *
weir_http_resolver(weir_http_request_t *r, weir_msec_t *timeout)
{
    weir_http_resolver_loc_conf_t  *rlcf;

    rlcf = weir_http_get_module_loc_conf(r, weir_http_resolver_module);

    *timeout = rlcf->resolver_timeout;

    return rlcf->resolver;
}


static void *
weir_http_resolver_create_loc_conf(weir_conf_t *cf)
{
    weir_http_resolver_loc_conf_t  *conf;

    conf = weir_pcalloc(cf->pool, sizeof(weir_http_resolver_loc_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    conf->resolver = WEIR_CONF_UNSET_PTR;
    conf->resolver_timeout = WEIR_CONF_UNSET_MSEC;

    return conf;
}


static char *
weir_http_resolver_merge_loc_conf(weir_conf_t *cf, void *parent,
    void *child)
{
    weir_http_resolver_loc_conf_t  *prev = parent;
    weir_http_resolver_loc_conf_t  *conf = child;

    (void) cf;

    weir_conf_merge_ptr_value(conf->resolver, prev->resolver, NULL);
    weir_conf_merge_msec_value(conf->resolver_timeout,
                               prev->resolver_timeout, 30000);

    return WEIR_CONF_OK;
}


static char *
weir_http_resolver_set(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_http_resolver_loc_conf_t  *rlcf = conf;

    (void) cmd;

    if (rlcf->resolver != WEIR_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    rlcf->resolver = weir_resolver_create(cf);
    if (rlcf->resolver == NULL) {
        return WEIR_CONF_ERROR;
    }

    return WEIR_CONF_OK;
}
