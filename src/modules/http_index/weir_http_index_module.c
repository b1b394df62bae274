#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"

/*
 * "index file ...": a request for a directory URI (ending in "/") is
 * redirected internally to the first index file that exists in it. The
 * last name may be an absolute URI ("/fallback.html"), used as is without
 * a test, as nginx allows.
 */


typedef struct {
    weir_array_t   *indices;        /* of weir_str_t; NULL: not set here */
    size_t          max_index_len;
} weir_http_index_loc_conf_t;


static weir_int_t weir_http_index_handler(weir_http_request_t *r);
static void *weir_http_index_create_loc_conf(weir_conf_t *cf);
static char *weir_http_index_merge_loc_conf(weir_conf_t *cf, void *parent,
    void *child);
static char *weir_http_index_set_index(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);


static weir_command_t  weir_http_index_commands[] = {

    { weir_string("index"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_1MORE,
      weir_http_index_set_index,
      WEIR_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    weir_null_command
};


static weir_http_phase_decl_t  weir_http_index_phases[] = {
    { WEIR_HTTP_CONTENT_PHASE, 800, "index", weir_http_index_handler },
    { 0, 0, NULL, NULL }
};


static weir_http_module_t  weir_http_index_module_ctx = {
    NULL,                                  /* preconfiguration */
    NULL,                                  /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    weir_http_index_create_loc_conf,       /* create location configuration */
    weir_http_index_merge_loc_conf,        /* merge location configuration */

    weir_http_index_phases,                /* phase handlers */
    NULL,                                  /* header filters */
    NULL,                                  /* body filters */
    NULL                                   /* request body filters */
};


weir_module_t  weir_http_index_module = {
    WEIR_MODULE_V1,
    &weir_http_index_module_ctx,           /* module context */
    weir_http_index_commands,              /* module directives */
    WEIR_HTTP_MODULE,                      /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    WEIR_MODULE_V1_PADDING
};


static weir_int_t
weir_http_index_handler(weir_http_request_t *r)
{
    size_t                       root, dirlen;
    weir_err_t                   err;
    weir_str_t                   path, uri, *index;
    weir_uint_t                  i;
    struct stat                  st;
    unsigned char               *last, *p;
    weir_http_core_loc_conf_t   *clcf;
    weir_http_index_loc_conf_t  *ilcf;

    if (r->uri.len == 0 || r->uri.data[r->uri.len - 1] != '/') {
        return WEIR_DECLINED;
    }

    if (!(r->method & (WEIR_HTTP_GET|WEIR_HTTP_HEAD|WEIR_HTTP_POST))) {
        return WEIR_DECLINED;
    }

    ilcf = weir_http_get_module_loc_conf(r, weir_http_index_module);
    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    if (ilcf->indices == NULL) {
        /* a configuration level that was never merged */
        return WEIR_DECLINED;
    }

    /* room for the longest name and its NUL after the directory */

    last = weir_http_map_uri_to_path(r, &path, &root,
                                     ilcf->max_index_len + 1);
    if (last == NULL) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    dirlen = last - path.data;
    index = ilcf->indices->elts;

    for (i = 0; i < ilcf->indices->nelts; i++) {

        if (index[i].data[0] == '/') {
            /* an absolute URI, only allowed last: no test */
            uri = index[i];
            return weir_http_internal_redirect(r, &uri, &r->args);
        }

        p = weir_cpymem(path.data + dirlen, index[i].data, index[i].len);
        *p = '\0';

        if (stat((char *) path.data, &st) == -1) {
            err = weir_errno;

            if (err == ENOENT || err == ENOTDIR) {
                continue;
            }

            if (err == EACCES) {
                weir_log_error(WEIR_LOG_ERR, r->connection->log, err,
                               "stat() \"%s\" failed", (char *) path.data);
                return WEIR_HTTP_FORBIDDEN;
            }

            weir_log_error(WEIR_LOG_CRIT, r->connection->log, err,
                           "stat() \"%s\" failed", (char *) path.data);
            return WEIR_HTTP_INTERNAL_SERVER_ERROR;
        }

        uri.len = r->uri.len + index[i].len;
        uri.data = weir_pnalloc(r->pool, uri.len);
        if (uri.data == NULL) {
            return WEIR_HTTP_INTERNAL_SERVER_ERROR;
        }

        p = weir_cpymem(uri.data, r->uri.data, r->uri.len);
        weir_memcpy(p, index[i].data, index[i].len);

        return weir_http_internal_redirect(r, &uri, &r->args);
    }

    /* no index file: a missing directory is a 404, an existing one is
     * left to the next handlers (the core answers 403) */

    path.data[dirlen] = '\0';

    if (stat((char *) path.data, &st) == -1) {
        err = weir_errno;

        if (err == ENOENT || err == ENOTDIR) {
            if (clcf->log_not_found) {
                weir_log_error(WEIR_LOG_ERR, r->connection->log, err,
                               "\"%s\" is not found", (char *) path.data);
            }

            return WEIR_HTTP_NOT_FOUND;
        }

        if (err == EACCES) {
            weir_log_error(WEIR_LOG_ERR, r->connection->log, err,
                           "\"%s\" is forbidden", (char *) path.data);
            return WEIR_HTTP_FORBIDDEN;
        }
    }

    return WEIR_DECLINED;
}


static void *
weir_http_index_create_loc_conf(weir_conf_t *cf)
{
    weir_http_index_loc_conf_t  *conf;

    conf = weir_pcalloc(cf->pool, sizeof(weir_http_index_loc_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    conf->indices = NULL;
    conf->max_index_len = 0;

    return conf;
}


static char *
weir_http_index_merge_loc_conf(weir_conf_t *cf, void *parent, void *child)
{
    weir_http_index_loc_conf_t  *prev = parent;
    weir_http_index_loc_conf_t  *conf = child;

    weir_str_t  *index;

    if (conf->indices) {
        return WEIR_CONF_OK;
    }

    if (prev->indices) {
        conf->indices = prev->indices;
        conf->max_index_len = prev->max_index_len;
        return WEIR_CONF_OK;
    }

    conf->indices = weir_array_create(cf->pool, 1, sizeof(weir_str_t));
    if (conf->indices == NULL) {
        return WEIR_CONF_ERROR;
    }

    index = weir_array_push(conf->indices);
    if (index == NULL) {
        return WEIR_CONF_ERROR;
    }

    weir_str_set(index, "index.html");
    conf->max_index_len = sizeof("index.html") - 1;

    return WEIR_CONF_OK;
}


static char *
weir_http_index_set_index(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_http_index_loc_conf_t  *ilcf = conf;

    weir_str_t   *value, *index;
    weir_uint_t   i, j;

    (void) cmd;

    if (ilcf->indices == NULL) {
        ilcf->indices = weir_array_create(cf->pool, 2, sizeof(weir_str_t));
        if (ilcf->indices == NULL) {
            return WEIR_CONF_ERROR;
        }
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {

        if (value[i].len == 0) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "index \"%.*s\" in \"index\" directive is "
                                "invalid", WEIR_STR_ARG(value[i]));
            return WEIR_CONF_ERROR;
        }

        if (value[i].data[0] == '/' && i != cf->args->nelts - 1) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "only the last index in \"index\" directive "
                                "may be absolute");
            return WEIR_CONF_ERROR;
        }

        for (j = 0; j < value[i].len; j++) {
            if (value[i].data[j] == '$') {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "variables in \"index\" are not "
                                    "supported: \"%.*s\"",
                                    WEIR_STR_ARG(value[i]));
                return WEIR_CONF_ERROR;
            }
        }

        index = weir_array_push(ilcf->indices);
        if (index == NULL) {
            return WEIR_CONF_ERROR;
        }

        *index = value[i];

        if (value[i].len > ilcf->max_index_len) {
            ilcf->max_index_len = value[i].len;
        }
    }

    return WEIR_CONF_OK;
}
