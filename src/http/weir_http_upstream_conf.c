#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"


/*
 * The upstream{} block, its "server" lines and "zone", and the groups
 * proxy_pass names without a block (implicit upstreams). Names are
 * resolved when the configuration is read (at start and at reload).
 * At the end: the settings a module that uses the core merges per
 * location (weir_http_upstream_merge_conf, proxy_next_upstream's
 * values).
 */

/* what the default balancer (round robin) allows on "server" lines */
#define WEIR_HTTP_UPSTREAM_RR_FLAGS                                           \
    (WEIR_HTTP_UPSTREAM_CREATE|WEIR_HTTP_UPSTREAM_WEIGHT                      \
     |WEIR_HTTP_UPSTREAM_MAX_FAILS|WEIR_HTTP_UPSTREAM_FAIL_TIMEOUT           \
     |WEIR_HTTP_UPSTREAM_DOWN|WEIR_HTTP_UPSTREAM_BACKUP                      \
     |WEIR_HTTP_UPSTREAM_MAX_CONNS)

#define WEIR_HTTP_UPSTREAM_DEFAULT_PORT  80
#define WEIR_HTTP_UPSTREAM_MAX_WEIGHT    1000000

/* a "server" line as written, to check its parameters again once the
 * whole block (and a balancer directive after the servers) is read */
typedef struct {
    weir_uint_t    used;        /* WEIR_HTTP_UPSTREAM_* of the parameters */
    weir_uint_t    line;
    unsigned char *file_name;
    weir_str_t     name;
} weir_http_upstream_line_t;


static weir_int_t weir_http_upstream_preconfiguration(weir_conf_t *cf);
static void *weir_http_upstream_create_main_conf(weir_conf_t *cf);
static char *weir_http_upstream_init_main_conf(weir_conf_t *cf, void *conf);
static char *weir_http_upstream(weir_conf_t *cf, weir_command_t *cmd,
    void *dummy);
static char *weir_http_upstream_server(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static char *weir_http_upstream_zone(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static const char *weir_http_upstream_param_name(weir_uint_t flag);
static char *weir_http_upstream_check_params(weir_conf_t *cf,
    weir_http_upstream_srv_conf_t *us, weir_array_t *lines);
static weir_int_t weir_http_upstream_new_confs(weir_conf_t *cf,
    weir_http_conf_ctx_t *ctx);
static weir_int_t weir_http_upstream_resolve(weir_conf_t *cf,
    weir_http_upstream_srv_conf_t *us, weir_uint_t at_parse);


/* the "server" lines of the block being parsed (NULL outside a block) */
static weir_array_t  *weir_http_upstream_lines;


static weir_command_t  weir_http_upstream_commands[] = {

    { weir_string("upstream"),
      WEIR_HTTP_MAIN_CONF|WEIR_CONF_BLOCK|WEIR_CONF_TAKE1,
      weir_http_upstream,
      0,
      0,
      NULL },

    { weir_string("server"),
      WEIR_HTTP_UPS_CONF|WEIR_CONF_1MORE,
      weir_http_upstream_server,
      WEIR_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { weir_string("zone"),
      WEIR_HTTP_UPS_CONF|WEIR_CONF_TAKE12,
      weir_http_upstream_zone,
      WEIR_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

      weir_null_command
};


static weir_http_module_t  weir_http_upstream_module_ctx = {
    weir_http_upstream_preconfiguration,    /* preconfiguration */
    NULL,                                   /* postconfiguration */

    weir_http_upstream_create_main_conf,    /* create main configuration */
    weir_http_upstream_init_main_conf,      /* init main configuration */

    NULL,                                   /* create server configuration */
    NULL,                                   /* merge server configuration */

    NULL,                                   /* create location configuration */
    NULL,                                   /* merge location configuration */

    NULL, NULL, NULL, NULL
};


weir_module_t  weir_http_upstream_module = {
    WEIR_MODULE_V1,
    &weir_http_upstream_module_ctx,
    weir_http_upstream_commands,
    WEIR_HTTP_MODULE,
    NULL, NULL, NULL, NULL, NULL,
    WEIR_MODULE_V1_PADDING
};


static weir_int_t
weir_http_upstream_preconfiguration(weir_conf_t *cf)
{
    return weir_http_upstream_add_variables(cf);
}


static void *
weir_http_upstream_create_main_conf(weir_conf_t *cf)
{
    weir_http_upstream_main_conf_t  *umcf;

    umcf = weir_pcalloc(cf->pool, sizeof(weir_http_upstream_main_conf_t));
    if (umcf == NULL) {
        return NULL;
    }

    if (weir_array_init(&umcf->upstreams, cf->pool, 4,
                        sizeof(weir_http_upstream_srv_conf_t *))
        != WEIR_OK)
    {
        return NULL;
    }

    umcf->resolved = weir_pcalloc(cf->pool,
                                  sizeof(weir_http_upstream_srv_conf_t));
    if (umcf->resolved == NULL) {
        return NULL;
    }

    weir_str_set(&umcf->resolved->host, "peers named at request time");

    return umcf;
}


/*
 * Every group is known now: a name-only reference that no block took is
 * resolved as host:80, then each group's balancer builds its peers, then
 * the zones of "zone" are checked against what their groups need.
 */

static char *
weir_http_upstream_init_main_conf(weir_conf_t *cf, void *conf)
{
    weir_uint_t                       i;
    weir_http_upstream_init_pt        init;
    weir_http_upstream_srv_conf_t   **uscfp;
    weir_http_upstream_main_conf_t   *umcf;

    umcf = conf;
    uscfp = umcf->upstreams.elts;

    for (i = 0; i < umcf->upstreams.nelts; i++) {

        if (uscfp[i]->servers == NULL) {
            if (weir_http_upstream_resolve(cf, uscfp[i], 0) != WEIR_OK) {
                return WEIR_CONF_ERROR;
            }
        }

        init = uscfp[i]->peer.init_upstream
               ? uscfp[i]->peer.init_upstream
               : weir_http_upstream_init_round_robin;

        if (init(cf, uscfp[i]) != WEIR_OK) {
            return WEIR_CONF_ERROR;
        }
    }

    if (weir_http_upstream_check_zones(cf, umcf) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    return WEIR_CONF_OK;
}


static char *
weir_http_upstream(weir_conf_t *cf, weir_command_t *cmd, void *dummy)
{
    char                           *rv;
    weir_str_t                     *value;
    weir_uint_t                     i;
    weir_conf_t                     pcf;
    weir_array_t                   *saved;
    weir_http_conf_ctx_t           *ctx, *http_ctx;
    weir_http_upstream_srv_conf_t  *us;

    (void) cmd;
    (void) dummy;

    value = cf->args->elts;

    if (value[1].len == 0) {
        return "needs a name";
    }

    for (i = 0; i < value[1].len; i++) {
        if (value[1].data[i] == '/' || value[1].data[i] == ':'
            || value[1].data[i] <= ' ')
        {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid upstream name \"%.*s\"",
                                WEIR_STR_ARG(value[1]));
            return WEIR_CONF_ERROR;
        }
    }

    us = weir_http_upstream_add(cf, &value[1], 0, 1,
                                WEIR_HTTP_UPSTREAM_RR_FLAGS);
    if (us == NULL) {
        return WEIR_CONF_ERROR;
    }

    ctx = weir_pcalloc(cf->pool, sizeof(weir_http_conf_ctx_t));
    if (ctx == NULL) {
        return WEIR_CONF_ERROR;
    }

    http_ctx = cf->ctx;
    ctx->main_conf = http_ctx->main_conf;

    if (weir_http_upstream_new_confs(cf, ctx) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    /* "server" (and the balancers' directives through their own slot)
     * find the group through the block's srv_conf */
    ctx->srv_conf[weir_http_upstream_module.ctx_index] = us;
    us->srv_conf = ctx->srv_conf;

    us->servers = weir_array_create(cf->pool, 4,
                                    sizeof(weir_http_upstream_server_t));
    if (us->servers == NULL) {
        return WEIR_CONF_ERROR;
    }

    saved = weir_http_upstream_lines;

    weir_http_upstream_lines = weir_array_create(cf->temp_pool, 4,
                                          sizeof(weir_http_upstream_line_t));
    if (weir_http_upstream_lines == NULL) {
        weir_http_upstream_lines = saved;
        return WEIR_CONF_ERROR;
    }

    pcf = *cf;
    cf->ctx = ctx;
    cf->cmd_type = WEIR_HTTP_UPS_CONF;

    rv = weir_conf_parse(cf, NULL);

    *cf = pcf;

    if (rv != WEIR_CONF_OK) {
        weir_http_upstream_lines = saved;
        return rv;
    }

    if (us->servers->nelts == 0) {
        weir_http_upstream_lines = saved;
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "no servers are inside upstream");
        return WEIR_CONF_ERROR;
    }

    /* a balancer directive after the "server" lines may have taken away
     * a parameter they use */
    rv = weir_http_upstream_check_params(cf, us, weir_http_upstream_lines);

    weir_http_upstream_lines = saved;

    return rv;
}


/*
 * server ADDRESS [weight=N] [max_fails=N] [fail_timeout=TIME]
 *     [max_conns=N] [backup] [down];
 */

static char *
weir_http_upstream_server(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    char                           *err;
    weir_int_t                      n;
    weir_str_t                     *value, s;
    weir_uint_t                     i, used, flag;
    weir_array_t                    addrs;
    weir_http_upstream_line_t      *ln;
    weir_http_upstream_server_t    *server;
    weir_http_upstream_srv_conf_t  *us;

    (void) cmd;

    us = conf;
    value = cf->args->elts;

    server = weir_array_push(us->servers);
    if (server == NULL) {
        return WEIR_CONF_ERROR;
    }

    weir_memzero(server, sizeof(weir_http_upstream_server_t));

    server->weight = 1;
    server->max_fails = 1;
    server->fail_timeout = 10;

    used = 0;

    for (i = 2; i < cf->args->nelts; i++) {

        flag = 0;

        if (value[i].len > 7
            && weir_strncmp(value[i].data, "weight=", 7) == 0)
        {
            flag = WEIR_HTTP_UPSTREAM_WEIGHT;
            n = weir_atoi(&value[i].data[7], value[i].len - 7);

            /* bounded: balancers sum weights, multiply them by
             * connection counts and by the points of a hash ring */
            if (n == WEIR_ERROR || n == 0
                || n > WEIR_HTTP_UPSTREAM_MAX_WEIGHT)
            {
                goto invalid;
            }

            server->weight = (weir_uint_t) n;

        } else if (value[i].len > 10
                   && weir_strncmp(value[i].data, "max_fails=", 10) == 0)
        {
            flag = WEIR_HTTP_UPSTREAM_MAX_FAILS;
            n = weir_atoi(&value[i].data[10], value[i].len - 10);

            if (n == WEIR_ERROR) {
                goto invalid;
            }

            server->max_fails = (weir_uint_t) n;

        } else if (value[i].len > 13
                   && weir_strncmp(value[i].data, "fail_timeout=", 13) == 0)
        {
            flag = WEIR_HTTP_UPSTREAM_FAIL_TIMEOUT;

            s.data = &value[i].data[13];
            s.len = value[i].len - 13;

            n = weir_parse_time(&s, 1);

            if (n == WEIR_ERROR) {
                goto invalid;
            }

            server->fail_timeout = (time_t) n;

        } else if (value[i].len > 10
                   && weir_strncmp(value[i].data, "max_conns=", 10) == 0)
        {
            flag = WEIR_HTTP_UPSTREAM_MAX_CONNS;
            n = weir_atoi(&value[i].data[10], value[i].len - 10);

            if (n == WEIR_ERROR) {
                goto invalid;
            }

            server->max_conns = (weir_uint_t) n;

        } else if (value[i].len == 6
                   && weir_strncmp(value[i].data, "backup", 6) == 0)
        {
            flag = WEIR_HTTP_UPSTREAM_BACKUP;
            server->backup = 1;

        } else if (value[i].len == 4
                   && weir_strncmp(value[i].data, "down", 4) == 0)
        {
            flag = WEIR_HTTP_UPSTREAM_DOWN;
            server->down = 1;

        } else {
            goto invalid;
        }

        if (!(us->flags & flag)) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "balancing method does not support "
                                "parameter \"%.*s\"",
                                WEIR_STR_ARG(value[i]));
            return WEIR_CONF_ERROR;
        }

        used |= flag;
    }

    /* a bare port or a wildcard listens; it names no server */
    for (i = 0; i < value[1].len; i++) {
        if (value[1].data[i] < '0' || value[1].data[i] > '9') {
            break;
        }
    }

    if (i == value[1].len || value[1].data[0] == '*') {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "invalid address \"%.*s\" in upstream \"%.*s\"",
                            WEIR_STR_ARG(value[1]), WEIR_STR_ARG(us->host));
        return WEIR_CONF_ERROR;
    }

    weir_memzero(&addrs, sizeof(weir_array_t));

    err = weir_parse_addr_port(cf->pool, &value[1],
                               WEIR_HTTP_UPSTREAM_DEFAULT_PORT, &addrs);

    if (err != NULL) {
        if (weir_strncmp(err, "host not found", 14) == 0) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "host not found in upstream \"%.*s\"",
                                WEIR_STR_ARG(value[1]));

        } else {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "%s \"%.*s\" in upstream \"%.*s\"", err,
                                WEIR_STR_ARG(value[1]),
                                WEIR_STR_ARG(us->host));
        }

        return WEIR_CONF_ERROR;
    }

    if (addrs.nelts == 0) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "host not found in upstream \"%.*s\"",
                            WEIR_STR_ARG(value[1]));
        return WEIR_CONF_ERROR;
    }

    server->name = value[1];
    server->addrs = addrs.elts;
    server->naddrs = addrs.nelts;

    if (weir_http_upstream_lines) {
        ln = weir_array_push(weir_http_upstream_lines);
        if (ln == NULL) {
            return WEIR_CONF_ERROR;
        }

        ln->used = used;
        ln->line = cf->conf_file ? cf->conf_file->line : 0;
        ln->file_name = cf->conf_file ? cf->conf_file->file.name.data
                                      : NULL;
        ln->name = value[1];
    }

    return WEIR_CONF_OK;

invalid:

    weir_conf_log_error(WEIR_LOG_EMERG, cf, 0, "invalid parameter \"%.*s\"",
                        WEIR_STR_ARG(value[i]));

    return WEIR_CONF_ERROR;
}


/*
 * zone NAME [SIZE]: the group's run-time peer state in a shared memory
 * zone, so that every worker sees the same failures and connection
 * counts. Several groups may name one zone; one of them gives the size
 * (at least 8 pages, as nginx). The groups' room in it is checked once
 * they are all built (weir_http_upstream_check_zones).
 */

static char *
weir_http_upstream_zone(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    ssize_t                          size;
    weir_str_t                      *value;
    weir_http_upstream_srv_conf_t   *us;
    weir_http_upstream_main_conf_t  *umcf;

    (void) cmd;

    us = conf;

    if (us->shm_zone) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len == 0) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "invalid zone name \"%.*s\"",
                            WEIR_STR_ARG(value[1]));
        return WEIR_CONF_ERROR;
    }

    size = 0;

    if (cf->args->nelts == 3) {
        size = weir_parse_size(&value[2]);

        if (size == WEIR_ERROR) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid zone size \"%.*s\"",
                                WEIR_STR_ARG(value[2]));
            return WEIR_CONF_ERROR;
        }

        if (size < (ssize_t) (8 * weir_pagesize)) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "zone \"%.*s\" is too small",
                                WEIR_STR_ARG(value[1]));
            return WEIR_CONF_ERROR;
        }
    }

    us->shm_zone = weir_shared_memory_add(cf, &value[1], (size_t) size,
                                          &weir_http_upstream_module);
    if (us->shm_zone == NULL) {
        return WEIR_CONF_ERROR;
    }

    umcf = weir_http_conf_get_module_main_conf(cf, weir_http_upstream_module);

    us->shm_zone->init = weir_http_upstream_init_zone;
    us->shm_zone->data = umcf;
    /* a reload starts the state afresh, as nginx: the servers may have
     * changed, and a zone holds no pointer to match them by */
    us->shm_zone->noreuse = 1;

    us->zone_file_name = cf->conf_file ? cf->conf_file->file.name.data : NULL;
    us->zone_line = cf->conf_file ? cf->conf_file->line : 0;

    return WEIR_CONF_OK;
}


static const char *
weir_http_upstream_param_name(weir_uint_t flag)
{
    switch (flag) {
    case WEIR_HTTP_UPSTREAM_WEIGHT:
        return "weight";
    case WEIR_HTTP_UPSTREAM_MAX_FAILS:
        return "max_fails";
    case WEIR_HTTP_UPSTREAM_FAIL_TIMEOUT:
        return "fail_timeout";
    case WEIR_HTTP_UPSTREAM_MAX_CONNS:
        return "max_conns";
    case WEIR_HTTP_UPSTREAM_BACKUP:
        return "backup";
    default:
        return "down";
    }
}


static char *
weir_http_upstream_check_params(weir_conf_t *cf,
    weir_http_upstream_srv_conf_t *us, weir_array_t *lines)
{
    weir_uint_t                 i, bit, bad;
    weir_http_upstream_line_t  *ln;

    ln = lines->elts;

    for (i = 0; i < lines->nelts; i++) {
        bad = ln[i].used & ~us->flags;

        if (bad == 0) {
            continue;
        }

        for (bit = 1; !(bad & bit); bit <<= 1) { /* void */ }

        weir_log_error(WEIR_LOG_EMERG, cf->log, 0,
                       "balancing method of upstream \"%.*s\" does not "
                       "support parameter \"%s\" of server \"%.*s\" in "
                       "%s:%lu",
                       WEIR_STR_ARG(us->host),
                       weir_http_upstream_param_name(bit),
                       WEIR_STR_ARG(ln[i].name),
                       ln[i].file_name ? (char *) ln[i].file_name : "-",
                       (unsigned long) ln[i].line);

        return WEIR_CONF_ERROR;
    }

    return WEIR_CONF_OK;
}


/* srv_conf and loc_conf of every HTTP module, as a server block has, so
 * that balancer and pool modules keep their per-group settings there */

static weir_int_t
weir_http_upstream_new_confs(weir_conf_t *cf, weir_http_conf_ctx_t *ctx)
{
    weir_uint_t          m, mi;
    weir_module_t       *module;
    weir_http_module_t  *hm;

    ctx->srv_conf = weir_pcalloc(cf->pool,
                                 sizeof(void *) * weir_http_max_module);
    ctx->loc_conf = weir_pcalloc(cf->pool,
                                 sizeof(void *) * weir_http_max_module);

    if (ctx->srv_conf == NULL || ctx->loc_conf == NULL) {
        return WEIR_ERROR;
    }

    for (m = 0; cf->cycle->modules[m]; m++) {
        module = cf->cycle->modules[m];

        if (module->type != WEIR_HTTP_MODULE) {
            continue;
        }

        hm = module->ctx;
        mi = module->ctx_index;

        if (hm->create_srv_conf) {
            ctx->srv_conf[mi] = hm->create_srv_conf(cf);
            if (ctx->srv_conf[mi] == NULL) {
                return WEIR_ERROR;
            }
        }

        if (hm->create_loc_conf) {
            ctx->loc_conf[mi] = hm->create_loc_conf(cf);
            if (ctx->loc_conf[mi] == NULL) {
                return WEIR_ERROR;
            }
        }
    }

    return WEIR_OK;
}


/*
 * Resolves the address of an implicit group into its one "server" entry
 * with default parameters. at_parse: the directive that named it is
 * being parsed (its file:line is added by weir_conf_log_error);
 * otherwise the file:line stored in us are named.
 */

static weir_int_t
weir_http_upstream_resolve(weir_conf_t *cf,
    weir_http_upstream_srv_conf_t *us, weir_uint_t at_parse)
{
    char                          *err;
    in_port_t                      port;
    weir_str_t                     text;
    weir_array_t                   addrs;
    weir_http_upstream_server_t   *server;

    port = us->port ? us->port : WEIR_HTTP_UPSTREAM_DEFAULT_PORT;

    if (us->host.len >= 5
        && weir_strncasecmp(us->host.data, (unsigned char *) "unix:", 5)
           == 0)
    {
        text = us->host;

    } else if (us->host.data[0] != '['
               && weir_strlchr(us->host.data, us->host.data + us->host.len,
                               ':'))
    {
        /* a bare IPv6 address */
        if (weir_pstrfmt(cf->pool, &text, "[%.*s]:%u",
                         WEIR_STR_ARG(us->host), (unsigned) port)
            != WEIR_OK)
        {
            return WEIR_ERROR;
        }

    } else {
        if (weir_pstrfmt(cf->pool, &text, "%.*s:%u",
                         WEIR_STR_ARG(us->host), (unsigned) port)
            != WEIR_OK)
        {
            return WEIR_ERROR;
        }
    }

    weir_memzero(&addrs, sizeof(weir_array_t));

    err = weir_parse_addr_port(cf->pool, &text, port, &addrs);

    if (err != NULL || addrs.nelts == 0) {
        if (err == NULL || weir_strncmp(err, "host not found", 14) == 0) {
            err = "host not found";
        }

        if (at_parse) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "%s in upstream \"%.*s\"", err,
                                WEIR_STR_ARG(text));

        } else {
            weir_log_error(WEIR_LOG_EMERG, cf->log, 0,
                           "%s in upstream \"%.*s\" in %s:%lu", err,
                           WEIR_STR_ARG(text),
                           us->file_name ? (char *) us->file_name : "-",
                           (unsigned long) us->line);
        }

        return WEIR_ERROR;
    }

    us->servers = weir_array_create(cf->pool, 1,
                                    sizeof(weir_http_upstream_server_t));
    if (us->servers == NULL) {
        return WEIR_ERROR;
    }

    server = weir_array_push(us->servers);
    if (server == NULL) {
        return WEIR_ERROR;
    }

    weir_memzero(server, sizeof(weir_http_upstream_server_t));

    server->name = text;
    server->addrs = addrs.elts;
    server->naddrs = addrs.nelts;
    server->weight = 1;
    server->max_fails = 1;
    server->fail_timeout = 10;

    return WEIR_OK;
}


weir_http_upstream_srv_conf_t *
weir_http_upstream_add(weir_conf_t *cf, weir_str_t *host, in_port_t port,
    weir_uint_t no_port, weir_uint_t flags)
{
    weir_uint_t                       i;
    weir_http_conf_ctx_t              ctx;
    weir_http_upstream_srv_conf_t    *us, **uscfp;
    weir_http_upstream_main_conf_t   *umcf;

    if (host->len == 0) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0, "no host in upstream");
        return NULL;
    }

    umcf = weir_http_conf_get_module_main_conf(cf, weir_http_upstream_module);

    if (no_port) {
        port = 0;
    }

    uscfp = umcf->upstreams.elts;

    for (i = 0; i < umcf->upstreams.nelts; i++) {

        if (uscfp[i]->host.len != host->len
            || weir_strncasecmp(uscfp[i]->host.data, host->data, host->len)
               != 0)
        {
            continue;
        }

        if ((flags & WEIR_HTTP_UPSTREAM_CREATE)
            && (uscfp[i]->flags & WEIR_HTTP_UPSTREAM_CREATE))
        {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "duplicate upstream \"%.*s\"",
                                WEIR_STR_ARG(*host));
            return NULL;
        }

        if ((uscfp[i]->flags & WEIR_HTTP_UPSTREAM_CREATE) && !no_port) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "upstream \"%.*s\" may not have port %u",
                                WEIR_STR_ARG(*host), (unsigned) port);
            return NULL;
        }

        if ((flags & WEIR_HTTP_UPSTREAM_CREATE) && !uscfp[i]->no_port) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "upstream \"%.*s\" may not have port %u "
                                "in %s:%lu",
                                WEIR_STR_ARG(*host),
                                (unsigned) uscfp[i]->port,
                                uscfp[i]->file_name
                                ? (char *) uscfp[i]->file_name : "-",
                                (unsigned long) uscfp[i]->line);
            return NULL;
        }

        if (uscfp[i]->port != port) {
            continue;
        }

        if (flags & WEIR_HTTP_UPSTREAM_CREATE) {
            /* a block named by an earlier proxy_pass: it becomes the
             * block */
            uscfp[i]->flags = flags;
            uscfp[i]->file_name = cf->conf_file
                                  ? cf->conf_file->file.name.data : NULL;
            uscfp[i]->line = cf->conf_file ? cf->conf_file->line : 0;
        }

        return uscfp[i];
    }

    us = weir_pcalloc(cf->pool, sizeof(weir_http_upstream_srv_conf_t));
    if (us == NULL) {
        return NULL;
    }

    us->flags = flags;
    us->host.data = weir_pnalloc(cf->pool, host->len);
    if (us->host.data == NULL) {
        return NULL;
    }

    weir_memcpy(us->host.data, host->data, host->len);
    us->host.len = host->len;

    us->file_name = cf->conf_file ? cf->conf_file->file.name.data : NULL;
    us->line = cf->conf_file ? cf->conf_file->line : 0;
    us->port = port;
    us->no_port = no_port;

    if (!(flags & WEIR_HTTP_UPSTREAM_CREATE)) {

        /* the module confs of every HTTP module, with their defaults,
         * so that a pool or balancer finds its settings in every group */
        weir_memzero(&ctx, sizeof(weir_http_conf_ctx_t));

        if (weir_http_upstream_new_confs(cf, &ctx) != WEIR_OK) {
            return NULL;
        }

        ctx.srv_conf[weir_http_upstream_module.ctx_index] = us;
        us->srv_conf = ctx.srv_conf;

        /* host:port (or a unix socket) is never a block: resolved now;
         * a bare name may be a block further down, or is resolved in
         * init_main_conf */
        if (!no_port
            || (host->len >= 5
                && weir_strncasecmp(host->data, (unsigned char *) "unix:", 5)
                   == 0))
        {
            if (weir_http_upstream_resolve(cf, us, 1) != WEIR_OK) {
                return NULL;
            }
        }
    }

    uscfp = weir_array_push(&umcf->upstreams);
    if (uscfp == NULL) {
        return NULL;
    }

    *uscfp = us;

    return us;
}


weir_conf_bitmask_t  weir_http_upstream_next_masks[] = {
    { weir_string("error"), WEIR_HTTP_UPSTREAM_FT_ERROR },
    { weir_string("timeout"), WEIR_HTTP_UPSTREAM_FT_TIMEOUT },
    { weir_string("invalid_header"), WEIR_HTTP_UPSTREAM_FT_INVALID_HEADER },
    { weir_string("non_idempotent"), WEIR_HTTP_UPSTREAM_FT_NON_IDEMPOTENT },
    { weir_string("http_500"), WEIR_HTTP_UPSTREAM_FT_HTTP_500 },
    { weir_string("http_502"), WEIR_HTTP_UPSTREAM_FT_HTTP_502 },
    { weir_string("http_503"), WEIR_HTTP_UPSTREAM_FT_HTTP_503 },
    { weir_string("http_504"), WEIR_HTTP_UPSTREAM_FT_HTTP_504 },
    { weir_string("http_403"), WEIR_HTTP_UPSTREAM_FT_HTTP_403 },
    { weir_string("http_404"), WEIR_HTTP_UPSTREAM_FT_HTTP_404 },
    { weir_string("http_429"), WEIR_HTTP_UPSTREAM_FT_HTTP_429 },
    { weir_string("off"), WEIR_HTTP_UPSTREAM_FT_OFF },
    { weir_null_string, 0 }
};


/* ---- configuration ---------------------------------------------------- */

static weir_uint_t
weir_http_upstream_name_in(weir_array_t *a, weir_str_t *name)
{
    weir_uint_t   i;
    weir_str_t   *s;

    if (a == NULL || a == WEIR_CONF_UNSET_PTR) {
        return 0;
    }

    s = a->elts;

    for (i = 0; i < a->nelts; i++) {
        if (s[i].len == name->len
            && weir_strncasecmp(s[i].data, name->data, name->len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


static weir_int_t
weir_http_upstream_hide_key(weir_conf_t *cf, weir_array_t *keys,
    weir_str_t *name, weir_array_t *pass)
{
    weir_uint_t       i;
    weir_hash_key_t  *k;
    unsigned char    *p;

    if (weir_http_upstream_name_in(pass, name)) {
        return WEIR_OK;
    }

    k = keys->elts;

    for (i = 0; i < keys->nelts; i++) {
        if (k[i].key.len == name->len
            && weir_strncasecmp(k[i].key.data, name->data, name->len) == 0)
        {
            return WEIR_OK;
        }
    }

    p = weir_pnalloc(cf->pool, name->len);
    k = weir_array_push(keys);
    if (p == NULL || k == NULL) {
        return WEIR_ERROR;
    }

    for (i = 0; i < name->len; i++) {
        p[i] = weir_tolower(name->data[i]);
    }

    k->key.data = p;
    k->key.len = name->len;
    k->key_hash = weir_hash_key(p, name->len);
    k->value = (void *) 1;

    return WEIR_OK;
}


char *
weir_http_upstream_merge_conf(weir_conf_t *cf,
    weir_http_upstream_conf_t *conf, weir_http_upstream_conf_t *prev,
    weir_str_t *default_hide)
{
    size_t         size;
    weir_uint_t    i;
    weir_str_t    *s;
    weir_array_t   keys;

    if (conf->upstream == NULL) {
        conf->upstream = prev->upstream;
    }

    weir_conf_merge_msec_value(conf->connect_timeout,
                               prev->connect_timeout, 60000);
    weir_conf_merge_msec_value(conf->send_timeout, prev->send_timeout, 60000);
    weir_conf_merge_msec_value(conf->read_timeout, prev->read_timeout, 60000);
    weir_conf_merge_msec_value(conf->next_upstream_timeout,
                               prev->next_upstream_timeout, 0);
    weir_conf_merge_uint_value(conf->next_upstream_tries,
                               prev->next_upstream_tries, 0);
    weir_conf_merge_uint_value(conf->http2_max_streams,
                               prev->http2_max_streams, 128);
    weir_conf_merge_msec_value(conf->http2_ping_idle,
                               prev->http2_ping_idle, 5000);

    weir_conf_merge_bitmask_value(conf->next_upstream, prev->next_upstream,
                                  (WEIR_CONF_BITMASK_SET
                                   | WEIR_HTTP_UPSTREAM_FT_ERROR
                                   | WEIR_HTTP_UPSTREAM_FT_TIMEOUT));

    if (conf->next_upstream & WEIR_HTTP_UPSTREAM_FT_OFF) {
        conf->next_upstream = WEIR_CONF_BITMASK_SET
                              | WEIR_HTTP_UPSTREAM_FT_OFF;
    }

    weir_conf_merge_size_value(conf->buffer_size, prev->buffer_size, 8192);
    weir_conf_merge_bufs_value(conf->bufs, prev->bufs, 8, 8192);

    if (conf->bufs.num < 2) {
        return "there must be at least 2 \"proxy_buffers\"";
    }

    size = conf->buffer_size;
    if (size < conf->bufs.size) {
        size = conf->bufs.size;
    }

    weir_conf_merge_size_value(conf->busy_buffers_size,
                               prev->busy_buffers_size, 2 * size);

    if (conf->busy_buffers_size < size) {
        return "\"proxy_busy_buffers_size\" must be equal to or greater "
               "than the maximum of the value of \"proxy_buffer_size\" and "
               "one of the \"proxy_buffers\"";
    }

    if (conf->busy_buffers_size
        > (size_t) (conf->bufs.num - 1) * conf->bufs.size)
    {
        return "\"proxy_busy_buffers_size\" must be less than the size of "
               "all \"proxy_buffers\" minus one buffer";
    }

    weir_conf_merge_size_value(conf->temp_file_write_size,
                               prev->temp_file_write_size, 2 * size);

    if (conf->temp_file_write_size < size) {
        return "\"proxy_temp_file_write_size\" must be equal to or greater "
               "than the maximum of the value of \"proxy_buffer_size\" and "
               "one of the \"proxy_buffers\"";
    }

    weir_conf_merge_off_value(conf->max_temp_file_size,
                              prev->max_temp_file_size,
                              (off_t) 1024 * 1024 * 1024);

    if (conf->max_temp_file_size != 0
        && conf->max_temp_file_size < (off_t) size)
    {
        return "\"proxy_max_temp_file_size\" must be equal to zero to "
               "disable temporary files usage or must be equal to or "
               "greater than the maximum of the value of "
               "\"proxy_buffer_size\" and one of the \"proxy_buffers\"";
    }

    weir_conf_merge_value(conf->buffering, prev->buffering, 1);
    weir_conf_merge_value(conf->request_buffering,
                          prev->request_buffering, 1);
    weir_conf_merge_value(conf->intercept_errors,
                          prev->intercept_errors, 0);
    weir_conf_merge_value(conf->ignore_client_abort,
                          prev->ignore_client_abort, 0);
    weir_conf_merge_value(conf->pass_trailers, prev->pass_trailers, 1);
    weir_conf_merge_value(conf->socket_keepalive,
                          prev->socket_keepalive, 0);
    weir_conf_merge_value(conf->strict_line_endings,
                          prev->strict_line_endings, 0);

    weir_conf_merge_str_value(conf->module, prev->module, "proxy");

    if (conf->hide_headers == WEIR_CONF_UNSET_PTR
        && conf->pass_headers == WEIR_CONF_UNSET_PTR)
    {
        conf->hide_headers = prev->hide_headers;
        conf->pass_headers = prev->pass_headers;

        if (prev->hide_headers_hash.buckets) {
            conf->hide_headers_hash = prev->hide_headers_hash;
            return WEIR_CONF_OK;
        }

    } else {
        if (conf->hide_headers == WEIR_CONF_UNSET_PTR) {
            conf->hide_headers = prev->hide_headers;
        }

        if (conf->pass_headers == WEIR_CONF_UNSET_PTR) {
            conf->pass_headers = prev->pass_headers;
        }
    }

    if (conf->hide_headers == WEIR_CONF_UNSET_PTR) {
        conf->hide_headers = NULL;
    }

    if (conf->pass_headers == WEIR_CONF_UNSET_PTR) {
        conf->pass_headers = NULL;
    }

    if (weir_array_init(&keys, cf->temp_pool ? cf->temp_pool : cf->pool, 16,
                        sizeof(weir_hash_key_t))
        != WEIR_OK)
    {
        return WEIR_CONF_ERROR;
    }

    for (s = default_hide; s && s->len; s++) {
        if (weir_http_upstream_hide_key(cf, &keys, s, conf->pass_headers)
            != WEIR_OK)
        {
            return WEIR_CONF_ERROR;
        }
    }

    if (conf->hide_headers) {
        s = conf->hide_headers->elts;

        for (i = 0; i < conf->hide_headers->nelts; i++) {
            if (weir_http_upstream_hide_key(cf, &keys, &s[i],
                                            conf->pass_headers)
                != WEIR_OK)
            {
                return WEIR_CONF_ERROR;
            }
        }
    }

    if (weir_hash_init(&conf->hide_headers_hash, cf->pool, &keys)
        != WEIR_OK)
    {
        return WEIR_CONF_ERROR;
    }

    return WEIR_CONF_OK;
}
