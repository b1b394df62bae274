#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"

/*
 * "allow" and "deny" with an address, a CIDR block or "all": the rules
 * of a level are checked in order and the first that matches the client
 * address decides (403 for deny). A level without rules inherits the
 * rules of the level above. An IPv4-mapped IPv6 client (::ffff:a.b.c.d)
 * is checked against the IPv4 rules.
 */


typedef struct {
    weir_cidr_t          cidr;          /* family 0: all */
    weir_uint_t          deny;
} weir_http_access_rule_t;


typedef struct {
    weir_array_t        *rules;         /* of weir_http_access_rule_t */
} weir_http_access_loc_conf_t;


static weir_int_t weir_http_access_handler(weir_http_request_t *r);
static void *weir_http_access_create_loc_conf(weir_conf_t *cf);
static char *weir_http_access_merge_loc_conf(weir_conf_t *cf, void *parent,
    void *child);
static char *weir_http_access_rule(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);


static weir_command_t  weir_http_access_commands[] = {

    { weir_string("allow"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_HTTP_LMT_CONF|WEIR_CONF_TAKE1,
      weir_http_access_rule,
      WEIR_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { weir_string("deny"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_HTTP_LMT_CONF|WEIR_CONF_TAKE1,
      weir_http_access_rule,
      WEIR_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    weir_null_command
};


static weir_http_phase_decl_t  weir_http_access_phases[] = {
    { WEIR_HTTP_ACCESS_PHASE, 100, "access", weir_http_access_handler },
    { 0, 0, NULL, NULL }
};


static weir_http_module_t  weir_http_access_module_ctx = {
    NULL,                                  /* preconfiguration */
    NULL,                                  /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    weir_http_access_create_loc_conf,      /* create location configuration */
    weir_http_access_merge_loc_conf,       /* merge location configuration */

    weir_http_access_phases,               /* phase handlers */
    NULL,                                  /* header filters */
    NULL,                                  /* body filters */
    NULL                                   /* request body filters */
};


weir_module_t  weir_http_access_module = {
    WEIR_MODULE_V1,
    &weir_http_access_module_ctx,          /* module context */
    weir_http_access_commands,             /* module directives */
    WEIR_HTTP_MODULE,                      /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    WEIR_MODULE_V1_PADDING
};


static weir_int_t
weir_http_access_handler(weir_http_request_t *r)
{
    weir_uint_t                   i;
    weir_http_access_rule_t      *rule;
    weir_http_access_loc_conf_t  *alcf;

    alcf = weir_http_get_module_loc_conf(r, weir_http_access_module);

    if (alcf == NULL || alcf->rules == NULL) {
        return WEIR_DECLINED;
    }

    rule = alcf->rules->elts;

    for (i = 0; i < alcf->rules->nelts; i++) {

        if (rule[i].cidr.family != 0
            && !weir_cidr_match(&rule[i].cidr, r->connection->sockaddr))
        {
            continue;
        }

        if (rule[i].deny) {
            weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                           "access forbidden by rule");
            return WEIR_HTTP_FORBIDDEN;
        }

        return WEIR_OK;
    }

    return WEIR_DECLINED;
}


static void *
weir_http_access_create_loc_conf(weir_conf_t *cf)
{
    weir_http_access_loc_conf_t  *conf;

    conf = weir_pcalloc(cf->pool, sizeof(weir_http_access_loc_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    conf->rules = NULL;

    return conf;
}


static char *
weir_http_access_merge_loc_conf(weir_conf_t *cf, void *parent, void *child)
{
    weir_http_access_loc_conf_t  *prev = parent;
    weir_http_access_loc_conf_t  *conf = child;

    (void) cf;

    if (conf->rules == NULL) {
        conf->rules = prev->rules;
    }

    return WEIR_CONF_OK;
}


static char *
weir_http_access_rule(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_http_access_loc_conf_t  *alcf = conf;

    weir_int_t                  rc;
    weir_str_t                 *value;
    weir_http_access_rule_t    *rule;

    value = cf->args->elts;

    if (alcf->rules == NULL) {
        alcf->rules = weir_array_create(cf->pool, 4,
                                        sizeof(weir_http_access_rule_t));
        if (alcf->rules == NULL) {
            return WEIR_CONF_ERROR;
        }
    }

    rule = weir_array_push(alcf->rules);
    if (rule == NULL) {
        return WEIR_CONF_ERROR;
    }

    weir_memzero(rule, sizeof(weir_http_access_rule_t));

    rule->deny = (cmd->name.len == 4);     /* "deny" */

    if (weir_str_eq_lit(&value[1], "all")) {
        return WEIR_CONF_OK;
    }

    if (value[1].len >= 5 && weir_strncmp(value[1].data, "unix:", 5) == 0) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "unix: addresses are not supported in \"%.*s\"",
                            WEIR_STR_ARG(cmd->name));
        return WEIR_CONF_ERROR;
    }

    rc = weir_parse_cidr(&value[1], &rule->cidr);

    if (rc == WEIR_ERROR) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "invalid parameter \"%.*s\"",
                            WEIR_STR_ARG(value[1]));
        return WEIR_CONF_ERROR;
    }

    if (rc == WEIR_DECLINED) {
        weir_conf_log_error(WEIR_LOG_WARN, cf, 0,
                            "low address bits of %.*s are meaningless",
                            WEIR_STR_ARG(value[1]));
    }

    return WEIR_CONF_OK;
}
