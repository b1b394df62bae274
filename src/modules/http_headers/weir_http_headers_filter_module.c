#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"

/*
 * "add_header name value [always]": adds a response header (the value may
 * hold variables) to successful and redirect responses, or to every
 * response with "always". As in nginx, a level inherits the add_header
 * list of the level above only when it defines none itself, and
 * Last-Modified and ETag replace the response's own (an empty value
 * removes it): the filter runs after the conditional requests and
 * before the ranges, so If-Range compares with the replaced value and
 * If-Modified-Since or If-None-Match with the file's, as in nginx.
 */


#define WEIR_HTTP_HEADERS_ADD            0
#define WEIR_HTTP_HEADERS_LAST_MODIFIED  1
#define WEIR_HTTP_HEADERS_ETAG           2


typedef struct {
    weir_str_t                   name;      /* NUL-terminated */
    weir_http_complex_value_t    value;
    weir_uint_t                  always;
    weir_uint_t                  set;       /* WEIR_HTTP_HEADERS_* */
} weir_http_header_val_t;


typedef struct {
    weir_array_t                *headers;   /* of weir_http_header_val_t */
} weir_http_headers_conf_t;


static weir_int_t weir_http_headers_filter(weir_http_request_t *r);
static weir_int_t weir_http_headers_set(weir_http_request_t *r,
    weir_http_header_val_t *hv, weir_str_t *value);
static void *weir_http_headers_create_conf(weir_conf_t *cf);
static char *weir_http_headers_merge_conf(weir_conf_t *cf, void *parent,
    void *child);
static char *weir_http_headers_add(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);


static weir_command_t  weir_http_headers_filter_commands[] = {

    { weir_string("add_header"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_HTTP_LIF_CONF|WEIR_CONF_TAKE23,
      weir_http_headers_add,
      WEIR_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    weir_null_command
};


static weir_http_header_filter_pt  weir_http_next_header_filter;


static weir_http_header_filter_decl_t  weir_http_headers_filters[] = {
    { "headers", 250, weir_http_headers_filter,
      &weir_http_next_header_filter },
    { NULL, 0, NULL, NULL }
};


static weir_http_module_t  weir_http_headers_filter_module_ctx = {
    NULL,                                  /* preconfiguration */
    NULL,                                  /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    weir_http_headers_create_conf,         /* create location configuration */
    weir_http_headers_merge_conf,          /* merge location configuration */

    NULL,                                  /* phase handlers */
    weir_http_headers_filters,             /* header filters */
    NULL,                                  /* body filters */
    NULL                                   /* request body filters */
};


weir_module_t  weir_http_headers_filter_module = {
    WEIR_MODULE_V1,
    &weir_http_headers_filter_module_ctx,  /* module context */
    weir_http_headers_filter_commands,     /* module directives */
    WEIR_HTTP_MODULE,                      /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    WEIR_MODULE_V1_PADDING
};


static weir_int_t
weir_http_headers_filter(weir_http_request_t *r)
{
    weir_uint_t                i, safe;
    weir_str_t                 value;
    weir_http_header_val_t    *h;
    weir_http_headers_conf_t  *conf;

    if (r != r->main) {
        return weir_http_next_header_filter(r);
    }

    conf = weir_http_get_module_loc_conf(r, weir_http_headers_filter_module);

    if (conf == NULL || conf->headers == NULL) {
        return weir_http_next_header_filter(r);
    }

    switch (r->headers_out.status) {

    case WEIR_HTTP_OK:
    case WEIR_HTTP_CREATED:
    case WEIR_HTTP_NO_CONTENT:
    case WEIR_HTTP_PARTIAL_CONTENT:
    case WEIR_HTTP_MOVED_PERMANENTLY:
    case WEIR_HTTP_MOVED_TEMPORARILY:
    case WEIR_HTTP_SEE_OTHER:
    case WEIR_HTTP_NOT_MODIFIED:
    case WEIR_HTTP_TEMPORARY_REDIRECT:
    case WEIR_HTTP_PERMANENT_REDIRECT:
        safe = 1;
        break;

    default:
        safe = 0;
        break;
    }

    h = conf->headers->elts;

    for (i = 0; i < conf->headers->nelts; i++) {

        if (!safe && !h[i].always) {
            continue;
        }

        if (weir_http_complex_value(r, &h[i].value, &value) != WEIR_OK) {
            return WEIR_ERROR;
        }

        if (h[i].set != WEIR_HTTP_HEADERS_ADD) {
            if (weir_http_headers_set(r, &h[i], &value) != WEIR_OK) {
                return WEIR_ERROR;
            }

            continue;
        }

        /* an empty value adds nothing, so that a variable can turn the
         * header off */
        if (value.len == 0) {
            continue;
        }

        if (weir_http_add_header_out(r, (const char *) h[i].name.data,
                                     &value)
            == NULL)
        {
            return WEIR_ERROR;
        }
    }

    return weir_http_next_header_filter(r);
}


/* Last-Modified, ETag: the response's own is replaced in place (an
 * empty value removes it); a Last-Modified also sets the time the range
 * filter compares If-Range with (-1: none, or not a date) */

static weir_int_t
weir_http_headers_set(weir_http_request_t *r, weir_http_header_val_t *hv,
    weir_str_t *value)
{
    weir_http_header_t  **old;

    if (hv->set == WEIR_HTTP_HEADERS_LAST_MODIFIED) {
        old = &r->headers_out.last_modified;
        r->headers_out.last_modified_time =
            value->len ? weir_parse_http_time(value->data, value->len) : -1;

    } else {
        old = &r->headers_out.etag;
    }

    if (value->len == 0) {
        weir_http_clear_header_out(old);
        return WEIR_OK;
    }

    if (*old) {
        /* the configured spelling, as a new one would have */
        (*old)->key = hv->name;
        (*old)->value = *value;
        return WEIR_OK;
    }

    *old = weir_http_add_header_out(r, (const char *) hv->name.data, value);

    return (*old == NULL) ? WEIR_ERROR : WEIR_OK;
}


static void *
weir_http_headers_create_conf(weir_conf_t *cf)
{
    weir_http_headers_conf_t  *conf;

    conf = weir_pcalloc(cf->pool, sizeof(weir_http_headers_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    conf->headers = NULL;

    return conf;
}


static char *
weir_http_headers_merge_conf(weir_conf_t *cf, void *parent, void *child)
{
    weir_http_headers_conf_t  *prev = parent;
    weir_http_headers_conf_t  *conf = child;

    (void) cf;

    if (conf->headers == NULL) {
        conf->headers = prev->headers;
    }

    return WEIR_CONF_OK;
}


static char *
weir_http_headers_add(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_http_headers_conf_t  *hcf = conf;

    size_t                              i;
    unsigned char                       c;
    weir_str_t                         *value;
    weir_http_header_val_t             *hv;
    weir_http_compile_complex_value_t   ccv;

    (void) cmd;

    value = cf->args->elts;

    if (value[1].len == 0) {
        return "has an empty header name";
    }

    for (i = 0; i < value[1].len; i++) {
        c = value[1].data[i];

        /* a token (RFC 9110 tchar) */
        if (c <= 0x20 || c >= 0x7f || weir_strchr("\"(),/:;<=>?@[\\]{}", c)) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid header name \"%.*s\"",
                                WEIR_STR_ARG(value[1]));
            return WEIR_CONF_ERROR;
        }
    }

    if (hcf->headers == NULL) {
        hcf->headers = weir_array_create(cf->pool, 1,
                                         sizeof(weir_http_header_val_t));
        if (hcf->headers == NULL) {
            return WEIR_CONF_ERROR;
        }
    }

    hv = weir_array_push(hcf->headers);
    if (hv == NULL) {
        return WEIR_CONF_ERROR;
    }

    hv->name.len = value[1].len;
    hv->name.data = (unsigned char *) weir_pstrdupz(cf->pool, &value[1]);
    if (hv->name.data == NULL) {
        return WEIR_CONF_ERROR;
    }

    hv->always = 0;
    hv->set = WEIR_HTTP_HEADERS_ADD;

    if (value[1].len == sizeof("Last-Modified") - 1
        && weir_strncasecmp(value[1].data, (unsigned char *) "last-modified",
                            value[1].len) == 0)
    {
        hv->set = WEIR_HTTP_HEADERS_LAST_MODIFIED;

    } else if (value[1].len == sizeof("ETag") - 1
               && weir_strncasecmp(value[1].data, (unsigned char *) "etag",
                                   value[1].len) == 0)
    {
        hv->set = WEIR_HTTP_HEADERS_ETAG;
    }

    if (cf->args->nelts == 4) {
        if (!weir_str_eq_lit(&value[3], "always")) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid parameter \"%.*s\"",
                                WEIR_STR_ARG(value[3]));
            return WEIR_CONF_ERROR;
        }

        hv->always = 1;
    }

    weir_memzero(&ccv, sizeof(weir_http_compile_complex_value_t));

    ccv.cf = cf;
    ccv.value = &value[2];
    ccv.complex_value = &hv->value;

    if (weir_http_compile_complex_value(&ccv) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    return WEIR_CONF_OK;
}
