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
    int                  family;        /* AF_INET, AF_INET6, 0: all */
    unsigned char        addr[16];
    unsigned char        mask[16];
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
    int                           family;
    size_t                        len, k;
    weir_uint_t                   i;
    unsigned char                 addr[16];
    struct sockaddr              *sa;
    weir_http_access_rule_t      *rule;
    weir_http_access_loc_conf_t  *alcf;

    alcf = weir_http_get_module_loc_conf(r, weir_http_access_module);

    if (alcf == NULL || alcf->rules == NULL) {
        return WEIR_DECLINED;
    }

    sa = r->connection->sockaddr;
    family = sa->sa_family;
    len = 0;

    if (family == AF_INET) {
        weir_memcpy(addr,
                    &((struct sockaddr_in *) (void *) sa)->sin_addr, 4);
        len = 4;

    } else if (family == AF_INET6) {
        weir_memcpy(addr,
                    &((struct sockaddr_in6 *) (void *) sa)->sin6_addr, 16);
        len = 16;

        if (IN6_IS_ADDR_V4MAPPED(
                &((struct sockaddr_in6 *) (void *) sa)->sin6_addr))
        {
            weir_memmove(addr, addr + 12, 4);
            family = AF_INET;
            len = 4;
        }
    }

    rule = alcf->rules->elts;

    for (i = 0; i < alcf->rules->nelts; i++) {

        if (rule[i].family != 0) {
            if (rule[i].family != family) {
                continue;
            }

            for (k = 0; k < len; k++) {
                if ((addr[k] & rule[i].mask[k]) != rule[i].addr[k]) {
                    break;
                }
            }

            if (k < len) {
                continue;
            }
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

    int                         bits, max, rc;
    size_t                      k, len;
    char                        text[64];
    weir_str_t                 *value, addr, prefix;
    unsigned char              *slash;
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
        rule->family = 0;
        return WEIR_CONF_OK;
    }

    if (value[1].len >= 5 && weir_strncmp(value[1].data, "unix:", 5) == 0) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "unix: addresses are not supported in \"%.*s\"",
                            WEIR_STR_ARG(cmd->name));
        return WEIR_CONF_ERROR;
    }

    addr = value[1];
    prefix.len = 0;
    prefix.data = NULL;

    slash = weir_strlchr(value[1].data, value[1].data + value[1].len, '/');

    if (slash) {
        addr.len = slash - value[1].data;
        prefix.data = slash + 1;
        prefix.len = value[1].data + value[1].len - prefix.data;
    }

    if (addr.len == 0 || addr.len >= sizeof(text)) {
        goto invalid;
    }

    weir_memcpy(text, addr.data, addr.len);
    text[addr.len] = '\0';

    if (weir_strchr(text, ':')) {
        rule->family = AF_INET6;
        len = 16;
        rc = inet_pton(AF_INET6, text, rule->addr);

    } else {
        rule->family = AF_INET;
        len = 4;
        rc = inet_pton(AF_INET, text, rule->addr);
    }

    if (rc != 1) {
        goto invalid;
    }

    max = (int) len * 8;
    bits = max;

    if (slash) {
        bits = (int) weir_atoi(prefix.data, prefix.len);

        if (prefix.len == 0 || bits == WEIR_ERROR || bits > max) {
            goto invalid;
        }
    }

    for (k = 0; k < len; k++) {
        if (bits >= 8) {
            rule->mask[k] = 0xff;
            bits -= 8;

        } else {
            rule->mask[k] = (unsigned char) (0xff00 >> bits);
            bits = 0;
        }
    }

    for (k = 0; k < len; k++) {
        if (rule->addr[k] & ~rule->mask[k]) {
            weir_conf_log_error(WEIR_LOG_WARN, cf, 0,
                                "low address bits of %.*s are meaningless",
                                WEIR_STR_ARG(value[1]));
            break;
        }
    }

    for (k = 0; k < len; k++) {
        rule->addr[k] &= rule->mask[k];
    }

    return WEIR_CONF_OK;

invalid:

    weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                        "invalid parameter \"%.*s\"", WEIR_STR_ARG(value[1]));
    return WEIR_CONF_ERROR;
}
