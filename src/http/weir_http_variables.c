#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_http.h"
#include "weir.h"

#include <sys/random.h>


/*
 * Variables.
 *
 * Configuration time: modules register variables by name
 * (weir_http_add_variable: cmcf->variables_keys, or
 * cmcf->prefix_variables for "arg_", "http_" ...). A directive that uses
 * a variable asks for an index (weir_http_get_variable_index), which
 * appends an unresolved entry to cmcf->variables; until
 * weir_http_variables_init_vars resolves it, the entry's data points at
 * where it was first used, so that an unknown name is reported at that
 * line. init_vars then copies the handler of the registered variable (or
 * of the matching prefix) into each indexed entry and builds the name
 * hash for the by-name lookups.
 *
 * Run time: r->variables[index] caches the value computed on first use;
 * WEIR_HTTP_VAR_NOCACHEABLE values are recomputed whenever a user asks
 * for a "flushed" value.
 */


/* where an indexed variable was first used; in v->data until resolved */
typedef struct {
    weir_str_t                   file;
    weir_uint_t                  line;
} weir_http_variable_use_t;

/*
 * The data a prefix variable's handler receives: the full name comes
 * first, so that a handler may also read data as a weir_str_t *.
 */
typedef struct {
    weir_str_t                   name;      /* "http_user_agent" */
    weir_str_t                   suffix;    /* "user_agent" */
    weir_uint_t                  token;     /* headers: WEIR_HTTP_HDR_* */
} weir_http_variable_arg_t;


static weir_int_t weir_http_variable_resolve(weir_conf_t *cf,
    weir_http_core_main_conf_t *cmcf, weir_http_variable_t *v);
static weir_http_variable_arg_t *weir_http_variable_make_arg(
    weir_pool_t *pool, weir_str_t *name, weir_http_variable_t *pv);
static weir_http_variable_t *weir_http_add_prefix_variable(weir_conf_t *cf,
    weir_str_t *name, weir_uint_t flags);
static weir_uint_t weir_http_variable_capture_number(weir_str_t *name);

static weir_int_t weir_http_variable_not_found(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_capture(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_str(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_host(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_hostname(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_is_args(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_header_in(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_header_out(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_arg(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_cookie(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_remote_addr(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_binary_remote_addr(
    weir_http_request_t *r, weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_remote_port(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_server_addr(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_server_port(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_server_name(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_server_protocol(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_scheme(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_https(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_request_length(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_request_time(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_connection_time(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_request_id(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_status(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_body_bytes_sent(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_bytes_sent(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_connection(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_connection_requests(
    weir_http_request_t *r, weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_msec(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_time(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_pid(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_content_length(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_content_type(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_document_root(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_realpath_root(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_request_body(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_version(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_sent_content_type(
    weir_http_request_t *r, weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_sent_content_length(
    weir_http_request_t *r, weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_sent_last_modified(
    weir_http_request_t *r, weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_sent_connection(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_sent_transfer_encoding(
    weir_http_request_t *r, weir_http_variable_value_t *v, uintptr_t data);


#define WEIR_HTTP_VAR_MAX_LEN  0x0fffffff       /* the 28-bit len field */

/* what weir_http_variable_time formats */
#define WEIR_HTTP_VAR_TIME_LOCAL    0
#define WEIR_HTTP_VAR_TIME_ISO8601  1


weir_http_variable_value_t  weir_http_variable_null_value = {
    0, 1, 0, 0, 0, (unsigned char *) ""
};

weir_http_variable_value_t  weir_http_variable_true_value = {
    1, 1, 0, 0, 0, (unsigned char *) "1"
};


#define weir_http_var(name, handler, data, flags)                             \
    { weir_string(name), NULL, handler, (uintptr_t) (data), flags, 0 }

#define weir_http_var_str(name, field, flags)                                 \
    weir_http_var(name, weir_http_variable_str,                               \
                  offsetof(weir_http_request_t, field), flags)


static weir_http_variable_t  weir_http_core_variables[] = {

    weir_http_var("host", weir_http_variable_host, 0, 0),
    weir_http_var("hostname", weir_http_variable_hostname, 0, 0),

    weir_http_var_str("uri", uri, WEIR_HTTP_VAR_NOCACHEABLE),
    weir_http_var_str("document_uri", uri, WEIR_HTTP_VAR_NOCACHEABLE),
    weir_http_var_str("request_uri", unparsed_uri, 0),
    weir_http_var_str("args", args,
                      WEIR_HTTP_VAR_CHANGEABLE | WEIR_HTTP_VAR_NOCACHEABLE),
    weir_http_var_str("query_string", args, WEIR_HTTP_VAR_NOCACHEABLE),
    weir_http_var("is_args", weir_http_variable_is_args, 0,
                  WEIR_HTTP_VAR_NOCACHEABLE),
    weir_http_var_str("request", request_line, 0),
    weir_http_var_str("request_method", method_name, 0),

    weir_http_var("remote_addr", weir_http_variable_remote_addr, 0, 0),
    weir_http_var("binary_remote_addr",
                  weir_http_variable_binary_remote_addr, 0, 0),
    weir_http_var("remote_port", weir_http_variable_remote_port, 0, 0),
    weir_http_var("server_addr", weir_http_variable_server_addr, 0, 0),
    weir_http_var("server_port", weir_http_variable_server_port, 0, 0),
    weir_http_var("server_name", weir_http_variable_server_name, 0, 0),
    weir_http_var("server_protocol", weir_http_variable_server_protocol, 0,
                  0),
    weir_http_var("scheme", weir_http_variable_scheme, 0, 0),
    weir_http_var("https", weir_http_variable_https, 0, 0),

    weir_http_var("request_length", weir_http_variable_request_length, 0,
                  WEIR_HTTP_VAR_NOCACHEABLE),
    weir_http_var("request_time", weir_http_variable_request_time, 0,
                  WEIR_HTTP_VAR_NOCACHEABLE),
    weir_http_var("request_id", weir_http_variable_request_id, 0, 0),
    weir_http_var("status", weir_http_variable_status, 0,
                  WEIR_HTTP_VAR_NOCACHEABLE),
    weir_http_var("body_bytes_sent", weir_http_variable_body_bytes_sent, 0,
                  WEIR_HTTP_VAR_NOCACHEABLE),
    weir_http_var("bytes_sent", weir_http_variable_bytes_sent, 0,
                  WEIR_HTTP_VAR_NOCACHEABLE),
    weir_http_var("connection", weir_http_variable_connection, 0, 0),
    weir_http_var("connection_requests",
                  weir_http_variable_connection_requests, 0, 0),
    weir_http_var("connection_time", weir_http_variable_connection_time, 0,
                  WEIR_HTTP_VAR_NOCACHEABLE),

    weir_http_var("msec", weir_http_variable_msec, 0,
                  WEIR_HTTP_VAR_NOCACHEABLE),
    weir_http_var("time_local", weir_http_variable_time,
                  WEIR_HTTP_VAR_TIME_LOCAL, WEIR_HTTP_VAR_NOCACHEABLE),
    weir_http_var("time_iso8601", weir_http_variable_time,
                  WEIR_HTTP_VAR_TIME_ISO8601, WEIR_HTTP_VAR_NOCACHEABLE),
    weir_http_var("pid", weir_http_variable_pid, 0, 0),

    weir_http_var("content_length", weir_http_variable_content_length, 0,
                  0),
    weir_http_var("content_type", weir_http_variable_content_type, 0, 0),
    weir_http_var("document_root", weir_http_variable_document_root, 0,
                  WEIR_HTTP_VAR_NOCACHEABLE),
    weir_http_var("realpath_root", weir_http_variable_realpath_root, 0,
                  WEIR_HTTP_VAR_NOCACHEABLE),
    weir_http_var("request_body", weir_http_variable_request_body, 0,
                  WEIR_HTTP_VAR_NOCACHEABLE),
    weir_http_var("weir_version", weir_http_variable_version, 0, 0),

    weir_http_var("sent_http_content_type",
                  weir_http_variable_sent_content_type, 0,
                  WEIR_HTTP_VAR_NOCACHEABLE),
    weir_http_var("sent_http_content_length",
                  weir_http_variable_sent_content_length, 0,
                  WEIR_HTTP_VAR_NOCACHEABLE),
    weir_http_var("sent_http_last_modified",
                  weir_http_variable_sent_last_modified, 0,
                  WEIR_HTTP_VAR_NOCACHEABLE),
    weir_http_var("sent_http_connection",
                  weir_http_variable_sent_connection, 0,
                  WEIR_HTTP_VAR_NOCACHEABLE),
    weir_http_var("sent_http_transfer_encoding",
                  weir_http_variable_sent_transfer_encoding, 0,
                  WEIR_HTTP_VAR_NOCACHEABLE),

    /* prefix variables: the rest of the name selects the value */
    weir_http_var("http_", weir_http_variable_header_in, 0,
                  WEIR_HTTP_VAR_PREFIX),
    weir_http_var("sent_http_", weir_http_variable_header_out, 0,
                  WEIR_HTTP_VAR_PREFIX | WEIR_HTTP_VAR_NOCACHEABLE),
    weir_http_var("cookie_", weir_http_variable_cookie, 0,
                  WEIR_HTTP_VAR_PREFIX),
    weir_http_var("arg_", weir_http_variable_arg, 0,
                  WEIR_HTTP_VAR_PREFIX | WEIR_HTTP_VAR_NOCACHEABLE),

    weir_http_null_variable
};


static weir_http_core_main_conf_t *
weir_http_variables_main_conf(weir_conf_t *cf)
{
    return weir_http_conf_get_module_main_conf(cf, weir_http_core_module);
}


static void
weir_http_variable_set_value(weir_http_variable_value_t *v,
    unsigned char *data, size_t len)
{
    if (len > WEIR_HTTP_VAR_MAX_LEN) {
        v->len = 0;
        v->valid = 0;
        v->no_cacheable = 0;
        v->not_found = 1;
        v->escape = 0;
        v->data = NULL;
        return;
    }

    v->len = (unsigned) len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
    v->escape = 0;
    v->data = data;
}


static void
weir_http_variable_set_not_found(weir_http_variable_value_t *v)
{
    v->len = 0;
    v->valid = 0;
    v->no_cacheable = 0;
    v->not_found = 1;
    v->escape = 0;
    v->data = NULL;
}


/* formats into request pool memory and sets v to the result */
static weir_int_t WEIR_PRINTF(3, 4)
weir_http_variable_printf(weir_http_request_t *r,
    weir_http_variable_value_t *v, const char *fmt, ...)
{
    int             n;
    char            tmp[64];
    va_list         args;
    unsigned char  *p;

    va_start(args, fmt);
    n = vsnprintf(tmp, sizeof(tmp), fmt, args);
    va_end(args);

    if (n < 0 || (size_t) n >= sizeof(tmp)) {
        return WEIR_ERROR;
    }

    p = weir_pnalloc(r->pool, (size_t) n);
    if (p == NULL) {
        return WEIR_ERROR;
    }

    weir_memcpy(p, tmp, (size_t) n);
    weir_http_variable_set_value(v, p, (size_t) n);

    return WEIR_OK;
}


/* ---- registration and indexing (configuration time) ---- */


weir_http_variable_t *
weir_http_add_variable(weir_conf_t *cf, weir_str_t *name, weir_uint_t flags)
{
    weir_uint_t                  i;
    weir_hash_key_t             *key;
    weir_http_variable_t        *v;
    weir_http_core_main_conf_t  *cmcf;

    if (name->len == 0) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0, "invalid variable name");
        return NULL;
    }

    if (flags & WEIR_HTTP_VAR_PREFIX) {
        return weir_http_add_prefix_variable(cf, name, flags);
    }

    cmcf = weir_http_variables_main_conf(cf);

    if (cmcf->variables_keys == NULL) {
        cmcf->variables_keys = weir_array_create(cf->pool, 64,
                                                 sizeof(weir_hash_key_t));
        if (cmcf->variables_keys == NULL) {
            return NULL;
        }
    }

    key = cmcf->variables_keys->elts;

    for (i = 0; i < cmcf->variables_keys->nelts; i++) {
        if (name->len != key[i].key.len
            || weir_strncasecmp(name->data, key[i].key.data, name->len) != 0)
        {
            continue;
        }

        v = key[i].value;

        if (!(v->flags & WEIR_HTTP_VAR_CHANGEABLE)) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "the duplicate \"%.*s\" variable",
                                WEIR_STR_ARG(*name));
            return NULL;
        }

        if (!(flags & WEIR_HTTP_VAR_WEAK)) {
            v->flags &= ~WEIR_HTTP_VAR_WEAK;
        }

        return v;
    }

    v = weir_pcalloc(cf->pool, sizeof(weir_http_variable_t));
    if (v == NULL) {
        return NULL;
    }

    v->name.len = name->len;
    v->name.data = weir_pnalloc(cf->pool, name->len);
    if (v->name.data == NULL) {
        return NULL;
    }

    weir_strlow(v->name.data, name->data, name->len);

    v->flags = flags;

    key = weir_array_push(cmcf->variables_keys);
    if (key == NULL) {
        return NULL;
    }

    key->key = v->name;
    key->key_hash = weir_hash_key(v->name.data, v->name.len);
    key->value = v;

    return v;
}


static weir_http_variable_t *
weir_http_add_prefix_variable(weir_conf_t *cf, weir_str_t *name,
    weir_uint_t flags)
{
    weir_uint_t                  i;
    weir_http_variable_t        *v;
    weir_http_core_main_conf_t  *cmcf;

    cmcf = weir_http_variables_main_conf(cf);

    if (cmcf->prefix_variables.elts == NULL) {
        if (weir_array_init(&cmcf->prefix_variables, cf->pool, 8,
                            sizeof(weir_http_variable_t))
            != WEIR_OK)
        {
            return NULL;
        }
    }

    v = cmcf->prefix_variables.elts;

    for (i = 0; i < cmcf->prefix_variables.nelts; i++) {
        if (name->len != v[i].name.len
            || weir_strncasecmp(name->data, v[i].name.data, name->len) != 0)
        {
            continue;
        }

        if (!(v[i].flags & WEIR_HTTP_VAR_CHANGEABLE)) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "the duplicate \"%.*s\" variable",
                                WEIR_STR_ARG(*name));
            return NULL;
        }

        if (!(flags & WEIR_HTTP_VAR_WEAK)) {
            v[i].flags &= ~WEIR_HTTP_VAR_WEAK;
        }

        return &v[i];
    }

    v = weir_array_push(&cmcf->prefix_variables);
    if (v == NULL) {
        return NULL;
    }

    weir_memzero(v, sizeof(weir_http_variable_t));

    v->name.len = name->len;
    v->name.data = weir_pnalloc(cf->pool, name->len);
    if (v->name.data == NULL) {
        return NULL;
    }

    weir_strlow(v->name.data, name->data, name->len);

    v->flags = flags;

    return v;
}


weir_int_t
weir_http_get_variable_index(weir_conf_t *cf, weir_str_t *name)
{
    weir_uint_t                  i;
    weir_http_variable_t        *v;
    weir_http_variable_use_t    *use;
    weir_http_core_main_conf_t  *cmcf;

    if (name->len == 0) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0, "invalid variable name");
        return WEIR_ERROR;
    }

    cmcf = weir_http_variables_main_conf(cf);

    if (cmcf->variables.elts == NULL) {
        if (weir_array_init(&cmcf->variables, cf->pool, 16,
                            sizeof(weir_http_variable_t))
            != WEIR_OK)
        {
            return WEIR_ERROR;
        }

    } else {
        v = cmcf->variables.elts;

        for (i = 0; i < cmcf->variables.nelts; i++) {
            if (name->len == v[i].name.len
                && weir_strncasecmp(name->data, v[i].name.data, name->len)
                   == 0)
            {
                return (weir_int_t) i;
            }
        }
    }

    v = weir_array_push(&cmcf->variables);
    if (v == NULL) {
        return WEIR_ERROR;
    }

    weir_memzero(v, sizeof(weir_http_variable_t));

    v->name.len = name->len;
    v->name.data = weir_pnalloc(cf->pool, name->len);
    if (v->name.data == NULL) {
        return WEIR_ERROR;
    }

    weir_strlow(v->name.data, name->data, name->len);

    v->index = cmcf->variables.nelts - 1;

    if (cmcf->variables_hash.buckets) {

        /* asked for after init_vars (a postconfiguration hook): resolve
         * it now, or the request would meet a NULL handler */

        if (weir_http_variable_resolve(cf, cmcf, v) != WEIR_OK) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "unknown \"%.*s\" variable",
                                WEIR_STR_ARG(v->name));
            cmcf->variables.nelts--;
            return WEIR_ERROR;
        }

        return (weir_int_t) v->index;
    }

    use = weir_pcalloc(cf->pool, sizeof(weir_http_variable_use_t));
    if (use == NULL) {
        return WEIR_ERROR;
    }

    if (cf->conf_file && cf->conf_file->file.name.data) {
        use->file.len = cf->conf_file->file.name.len;
        use->file.data = weir_pstrdup(cf->pool, &cf->conf_file->file.name);
        if (use->file.data == NULL) {
            return WEIR_ERROR;
        }

        use->line = cf->conf_file->line;
    }

    v->data = (uintptr_t) use;

    return (weir_int_t) v->index;
}


/* "$1" .. "$99": the number, or WEIR_CONF_UNSET_UINT for other names */
static weir_uint_t
weir_http_variable_capture_number(weir_str_t *name)
{
    weir_uint_t  i, n;

    if (name->len == 0 || name->len > 2) {
        return WEIR_CONF_UNSET_UINT;
    }

    n = 0;

    for (i = 0; i < name->len; i++) {
        if (name->data[i] < '0' || name->data[i] > '9') {
            return WEIR_CONF_UNSET_UINT;
        }

        n = n * 10 + (weir_uint_t) (name->data[i] - '0');
    }

    return n;
}


static weir_http_variable_arg_t *
weir_http_variable_make_arg(weir_pool_t *pool, weir_str_t *name,
    weir_http_variable_t *pv)
{
    size_t                     i;
    unsigned char             *low;
    weir_http_variable_arg_t  *arg;

    arg = weir_palloc(pool, sizeof(weir_http_variable_arg_t));
    if (arg == NULL) {
        return NULL;
    }

    arg->name = *name;
    arg->suffix.len = name->len - pv->name.len;
    arg->suffix.data = name->data + pv->name.len;
    arg->token = WEIR_HTTP_HDR_UNKNOWN;

    if ((pv->get_handler == weir_http_variable_header_in
         || pv->get_handler == weir_http_variable_header_out)
        && arg->suffix.len)
    {
        /* $http_user_agent: intern "user-agent" once, so that the
         * lookup compares tokens instead of names */

        low = weir_pnalloc(pool, arg->suffix.len);
        if (low == NULL) {
            return NULL;
        }

        for (i = 0; i < arg->suffix.len; i++) {
            low[i] = weir_tolower(arg->suffix.data[i]);
            if (low[i] == '_') {
                low[i] = '-';
            }
        }

        arg->token = weir_http_header_token(low, arg->suffix.len,
                                            weir_hash_key(low,
                                                          arg->suffix.len));
    }

    return arg;
}


/* copies the handler of the registered variable (or prefix) named like
 * v into v; WEIR_DECLINED when there is none */
static weir_int_t
weir_http_variable_resolve(weir_conf_t *cf, weir_http_core_main_conf_t *cmcf,
    weir_http_variable_t *v)
{
    weir_uint_t                i, n;
    weir_hash_key_t           *key;
    weir_http_variable_t      *av, *pv;
    weir_http_variable_arg_t  *arg;

    if (cmcf->variables_keys) {
        key = cmcf->variables_keys->elts;

        for (i = 0; i < cmcf->variables_keys->nelts; i++) {
            if (v->name.len != key[i].key.len
                || weir_memcmp(v->name.data, key[i].key.data, v->name.len)
                   != 0)
            {
                continue;
            }

            av = key[i].value;

            /* a variable declared without a handler (named captures,
             * values set at run time) reads as not found until set */

            v->get_handler = av->get_handler ? av->get_handler
                                             : weir_http_variable_not_found;
            v->set_handler = av->set_handler;
            v->data = av->data;

            av->flags |= WEIR_HTTP_VAR_INDEXED;
            av->index = v->index;
            v->flags = av->flags;

            return WEIR_OK;
        }
    }

    n = weir_http_variable_capture_number(&v->name);

    if (n != WEIR_CONF_UNSET_UINT) {
        v->get_handler = weir_http_variable_capture;
        v->data = n;
        v->flags = WEIR_HTTP_VAR_NOCACHEABLE;
        return WEIR_OK;
    }

    pv = cmcf->prefix_variables.elts;

    for (i = 0; i < cmcf->prefix_variables.nelts; i++) {
        if (v->name.len < pv[i].name.len
            || weir_memcmp(v->name.data, pv[i].name.data, pv[i].name.len)
               != 0)
        {
            continue;
        }

        arg = weir_http_variable_make_arg(cf->pool, &v->name, &pv[i]);
        if (arg == NULL) {
            return WEIR_ERROR;
        }

        v->get_handler = pv[i].get_handler;
        v->set_handler = pv[i].set_handler;
        v->data = (uintptr_t) arg;
        v->flags = pv[i].flags & ~WEIR_HTTP_VAR_PREFIX;

        return WEIR_OK;
    }

    return WEIR_DECLINED;
}


weir_int_t
weir_http_variables_add_core_vars(weir_conf_t *cf)
{
    weir_http_variable_t        *cv, *v;
    weir_http_core_main_conf_t  *cmcf;

    cmcf = weir_http_variables_main_conf(cf);

    if (cmcf->variables_keys == NULL) {
        cmcf->variables_keys = weir_array_create(cf->pool, 64,
                                                 sizeof(weir_hash_key_t));
        if (cmcf->variables_keys == NULL) {
            return WEIR_ERROR;
        }
    }

    if (cmcf->prefix_variables.elts == NULL) {
        if (weir_array_init(&cmcf->prefix_variables, cf->pool, 8,
                            sizeof(weir_http_variable_t))
            != WEIR_OK)
        {
            return WEIR_ERROR;
        }
    }

    for (cv = weir_http_core_variables; cv->name.len; cv++) {
        v = weir_http_add_variable(cf, &cv->name, cv->flags);
        if (v == NULL) {
            return WEIR_ERROR;
        }

        v->get_handler = cv->get_handler;
        v->set_handler = cv->set_handler;
        v->data = cv->data;
    }

    return WEIR_OK;
}


weir_int_t
weir_http_variables_init_vars(weir_conf_t *cf)
{
    weir_int_t                   rc;
    weir_uint_t                  i;
    weir_array_t                 keys;
    weir_hash_key_t             *key, *k;
    weir_http_variable_t        *v, *av;
    weir_http_variable_use_t    *use;
    weir_http_core_main_conf_t  *cmcf;

    cmcf = weir_http_variables_main_conf(cf);

    v = cmcf->variables.elts;

    for (i = 0; i < cmcf->variables.nelts; i++) {

        if (v[i].get_handler) {
            continue;
        }

        use = (weir_http_variable_use_t *) v[i].data;

        rc = weir_http_variable_resolve(cf, cmcf, &v[i]);

        if (rc == WEIR_OK) {
            continue;
        }

        if (rc == WEIR_DECLINED) {
            if (use && use->file.len) {
                weir_log_error(WEIR_LOG_EMERG, cf->log, 0,
                               "unknown \"%.*s\" variable in %.*s:%lu",
                               WEIR_STR_ARG(v[i].name),
                               WEIR_STR_ARG(use->file),
                               (unsigned long) use->line);

            } else {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "unknown \"%.*s\" variable",
                                    WEIR_STR_ARG(v[i].name));
            }
        }

        return WEIR_ERROR;
    }

    /* the by-name hash (weir_http_get_variable) */

    if (weir_array_init(&keys, cf->temp_pool ? cf->temp_pool : cf->pool,
                        cmcf->variables_keys ? cmcf->variables_keys->nelts + 1
                                             : 1,
                        sizeof(weir_hash_key_t))
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    if (cmcf->variables_keys) {
        key = cmcf->variables_keys->elts;

        for (i = 0; i < cmcf->variables_keys->nelts; i++) {
            av = key[i].value;

            if (av->flags & WEIR_HTTP_VAR_NOHASH) {
                continue;
            }

            if (av->get_handler == NULL) {
                av->get_handler = weir_http_variable_not_found;
            }

            k = weir_array_push(&keys);
            if (k == NULL) {
                return WEIR_ERROR;
            }

            *k = key[i];
        }
    }

    if (weir_hash_init(&cmcf->variables_hash, cf->pool, &keys) != WEIR_OK) {
        return WEIR_ERROR;
    }

    return WEIR_OK;
}


/* ---- run time ---- */


weir_http_variable_value_t *
weir_http_get_indexed_variable(weir_http_request_t *r, weir_uint_t index)
{
    weir_http_variable_t        *v;
    weir_http_variable_value_t  *value;
    weir_http_core_main_conf_t  *cmcf;

    cmcf = weir_http_get_module_main_conf(r, weir_http_core_module);

    if (index >= cmcf->variables.nelts || r->variables == NULL) {
        weir_log_error(WEIR_LOG_ALERT, r->connection->log, 0,
                       "unknown variable index: %lu", (unsigned long) index);
        return NULL;
    }

    value = &r->variables[index];

    if (value->not_found || value->valid) {
        return value;
    }

    v = cmcf->variables.elts;

    if (v[index].get_handler(r, value, v[index].data) == WEIR_OK) {

        if (v[index].flags & WEIR_HTTP_VAR_NOCACHEABLE) {
            value->no_cacheable = 1;
        }

        return value;
    }

    value->valid = 0;
    value->not_found = 1;

    return NULL;
}


weir_http_variable_value_t *
weir_http_get_flushed_variable(weir_http_request_t *r, weir_uint_t index)
{
    weir_http_variable_value_t  *value;
    weir_http_core_main_conf_t  *cmcf;

    cmcf = weir_http_get_module_main_conf(r, weir_http_core_module);

    if (r->variables == NULL || index >= cmcf->variables.nelts) {
        weir_log_error(WEIR_LOG_ALERT, r->connection->log, 0,
                       "unknown variable index: %lu", (unsigned long) index);
        return NULL;
    }

    value = &r->variables[index];

    if (value->valid || value->not_found) {
        if (!value->no_cacheable) {
            return value;
        }

        value->valid = 0;
        value->not_found = 0;
    }

    return weir_http_get_indexed_variable(r, index);
}


weir_http_variable_value_t *
weir_http_get_variable(weir_http_request_t *r, weir_str_t *name,
    weir_uint_t key)
{
    weir_uint_t                  i, n;
    weir_http_variable_t        *v, *pv;
    weir_http_variable_arg_t    *arg;
    weir_http_variable_value_t  *value;
    weir_http_core_main_conf_t  *cmcf;

    cmcf = weir_http_get_module_main_conf(r, weir_http_core_module);

    v = weir_hash_find(&cmcf->variables_hash, key, name->data, name->len);

    if (v) {
        if (v->flags & WEIR_HTTP_VAR_INDEXED) {
            return weir_http_get_flushed_variable(r, v->index);
        }

        value = weir_pcalloc(r->pool, sizeof(weir_http_variable_value_t));
        if (value == NULL) {
            return NULL;
        }

        if (v->get_handler(r, value, v->data) == WEIR_OK) {
            return value;
        }

        return NULL;
    }

    value = weir_pcalloc(r->pool, sizeof(weir_http_variable_value_t));
    if (value == NULL) {
        return NULL;
    }

    n = weir_http_variable_capture_number(name);

    if (n != WEIR_CONF_UNSET_UINT) {
        if (weir_http_variable_capture(r, value, n) == WEIR_OK) {
            return value;
        }

        return NULL;
    }

    pv = cmcf->prefix_variables.elts;

    for (i = 0; i < cmcf->prefix_variables.nelts; i++) {
        if (name->len < pv[i].name.len
            || weir_memcmp(name->data, pv[i].name.data, pv[i].name.len) != 0)
        {
            continue;
        }

        arg = weir_http_variable_make_arg(r->pool, name, &pv[i]);
        if (arg == NULL) {
            return NULL;
        }

        if (pv[i].get_handler(r, value, (uintptr_t) arg) == WEIR_OK) {
            return value;
        }

        return NULL;
    }

    weir_http_variable_set_not_found(value);

    return value;
}


/* ---- handlers ---- */


static weir_int_t
weir_http_variable_not_found(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    (void) r;
    (void) data;

    weir_http_variable_set_not_found(v);

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_capture(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    weir_uint_t  n;
    int          start, end;

    n = (weir_uint_t) data * 2;

    if (r->captures == NULL || r->captures_data == NULL
        || n + 1 >= r->ncaptures)
    {
        weir_http_variable_set_not_found(v);
        return WEIR_OK;
    }

    start = r->captures[n];
    end = r->captures[n + 1];

    if (start < 0 || end < start) {
        weir_http_variable_set_not_found(v);
        return WEIR_OK;
    }

    weir_http_variable_set_value(v, r->captures_data + start,
                                 (size_t) (end - start));

    return WEIR_OK;
}


/* a weir_str_t field of the request, at offset data */
static weir_int_t
weir_http_variable_str(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    weir_str_t  *s;

    s = (weir_str_t *) ((char *) r + data);

    if (s->data == NULL) {
        weir_http_variable_set_not_found(v);
        return WEIR_OK;
    }

    weir_http_variable_set_value(v, s->data, s->len);

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_host(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    weir_http_core_srv_conf_t  *cscf;

    (void) data;

    if (r->headers_in.server.len) {
        weir_http_variable_set_value(v, r->headers_in.server.data,
                                     r->headers_in.server.len);
        return WEIR_OK;
    }

    cscf = r->srv_conf
           ? weir_http_get_module_srv_conf(r, weir_http_core_module) : NULL;

    if (cscf && cscf->server_name.len) {
        weir_http_variable_set_value(v, cscf->server_name.data,
                                     cscf->server_name.len);
        return WEIR_OK;
    }

    weir_http_variable_set_value(v, (unsigned char *) "", 0);

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_hostname(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    weir_cycle_t  *cycle;

    (void) r;
    (void) data;

    cycle = (weir_cycle_t *) weir_cycle;

    if (cycle == NULL || cycle->hostname.data == NULL) {
        weir_http_variable_set_not_found(v);
        return WEIR_OK;
    }

    weir_http_variable_set_value(v, cycle->hostname.data,
                                 cycle->hostname.len);

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_is_args(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    (void) data;

    if (r->args.len == 0) {
        weir_http_variable_set_value(v, (unsigned char *) "", 0);
        return WEIR_OK;
    }

    weir_http_variable_set_value(v, (unsigned char *) "?", 1);

    return WEIR_OK;
}


/* does header name key match "user_agent" ('-' and '_' alike, any case)? */
static weir_uint_t
weir_http_variable_name_match(weir_str_t *key, weir_str_t *suffix)
{
    size_t         i;
    unsigned char  c;

    if (key->len != suffix->len) {
        return 0;
    }

    for (i = 0; i < key->len; i++) {
        c = weir_tolower(key->data[i]);

        if (c == '-') {
            c = '_';
        }

        if (c != suffix->data[i]) {
            return 0;
        }
    }

    return 1;
}


static weir_uint_t
weir_http_variable_header_match(weir_http_header_t *h,
    weir_http_variable_arg_t *arg)
{
    if (h->hash == 0) {
        return 0;
    }

    if (arg->token != WEIR_HTTP_HDR_UNKNOWN
        && h->token != WEIR_HTTP_HDR_UNKNOWN)
    {
        return h->token == arg->token;
    }

    return weir_http_variable_name_match(&h->key, &arg->suffix);
}


/*
 * Every header of list named like arg, joined with sep when there are
 * several (as a single header of that name would have been).
 */
static weir_int_t
weir_http_variable_headers(weir_http_request_t *r,
    weir_http_variable_value_t *v, weir_list_t *list,
    weir_http_variable_arg_t *arg, const char *sep)
{
    size_t               len, seplen;
    weir_uint_t          i, count;
    unsigned char       *p;
    weir_list_part_t    *part;
    weir_http_header_t  *h, *first;

    if (list->part.elts == NULL || arg->suffix.len == 0) {
        weir_http_variable_set_not_found(v);
        return WEIR_OK;
    }

    seplen = strlen(sep);
    first = NULL;
    count = 0;
    len = 0;

    part = &list->part;
    h = part->elts;

    for (i = 0; /* void */; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;

            if (part->nelts == 0) {
                continue;
            }
        }

        if (!weir_http_variable_header_match(&h[i], arg)) {
            continue;
        }

        if (count++ == 0) {
            first = &h[i];
            len = h[i].value.len;

        } else {
            len += seplen + h[i].value.len;
        }
    }

    if (first == NULL) {
        weir_http_variable_set_not_found(v);
        return WEIR_OK;
    }

    if (count == 1) {
        weir_http_variable_set_value(v, first->value.data, len);
        return WEIR_OK;
    }

    p = weir_pnalloc(r->pool, len);
    if (p == NULL) {
        return WEIR_ERROR;
    }

    weir_http_variable_set_value(v, p, len);

    if (v->not_found) {
        return WEIR_OK;
    }

    count = 0;
    part = &list->part;
    h = part->elts;

    for (i = 0; /* void */; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;

            if (part->nelts == 0) {
                continue;
            }
        }

        if (!weir_http_variable_header_match(&h[i], arg)) {
            continue;
        }

        if (count++) {
            p = weir_cpymem(p, sep, seplen);
        }

        p = weir_cpymem(p, h[i].value.data, h[i].value.len);
    }

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_header_in(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    weir_http_variable_arg_t  *arg;

    arg = (weir_http_variable_arg_t *) data;

    return weir_http_variable_headers(r, v, &r->headers_in.headers, arg,
                                      arg->token == WEIR_HTTP_HDR_COOKIE
                                      ? "; " : ", ");
}


static weir_int_t
weir_http_variable_header_out(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    weir_http_variable_arg_t  *arg;

    arg = (weir_http_variable_arg_t *) data;

    return weir_http_variable_headers(r, v, &r->headers_out.headers, arg,
                                      ", ");
}


/*
 * The value of name in "a=1&b=2" (case-insensitive names, as nginx);
 * WEIR_DECLINED when absent.
 */
static weir_int_t
weir_http_variable_find_arg(weir_str_t *args, weir_str_t *name,
    weir_str_t *value)
{
    unsigned char  *p, *last, *end, *eq;

    p = args->data;
    last = p + args->len;

    while (p < last) {

        end = weir_strlchr(p, last, '&');
        if (end == NULL) {
            end = last;
        }

        eq = p + name->len;

        if (eq < end && *eq == '='
            && weir_strncasecmp(p, name->data, name->len) == 0)
        {
            value->data = eq + 1;
            value->len = (size_t) (end - eq - 1);
            return WEIR_OK;
        }

        if (eq == end && weir_strncasecmp(p, name->data, name->len) == 0) {
            /* "?flag" without "=": present and empty */
            value->data = end;
            value->len = 0;
            return WEIR_OK;
        }

        p = end + 1;
    }

    return WEIR_DECLINED;
}


static weir_int_t
weir_http_variable_arg(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    weir_str_t                 value;
    weir_http_variable_arg_t  *arg;

    arg = (weir_http_variable_arg_t *) data;

    if (arg->suffix.len == 0 || r->args.len == 0
        || weir_http_variable_find_arg(&r->args, &arg->suffix, &value)
           != WEIR_OK)
    {
        weir_http_variable_set_not_found(v);
        return WEIR_OK;
    }

    weir_http_variable_set_value(v, value.data, value.len);

    return WEIR_OK;
}


/* the value of cookie name in one "a=1; b=2" header value */
static weir_int_t
weir_http_variable_find_cookie(weir_str_t *header, weir_str_t *name,
    weir_str_t *value)
{
    unsigned char  *p, *last, *end, *eq;

    p = header->data;
    last = p + header->len;

    while (p < last) {

        while (p < last && (*p == ' ' || *p == '\t')) {
            p++;
        }

        end = weir_strlchr(p, last, ';');
        if (end == NULL) {
            end = last;
        }

        eq = p + name->len;

        if (eq < end && *eq == '='
            && weir_strncasecmp(p, name->data, name->len) == 0)
        {
            value->data = eq + 1;
            value->len = (size_t) (end - eq - 1);

            while (value->len && (value->data[value->len - 1] == ' '
                                  || value->data[value->len - 1] == '\t'))
            {
                value->len--;
            }

            return WEIR_OK;
        }

        p = end + 1;
    }

    return WEIR_DECLINED;
}


static weir_int_t
weir_http_variable_cookie(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    weir_str_t                 value;
    weir_uint_t                i;
    weir_list_part_t          *part;
    weir_http_header_t        *h;
    weir_http_variable_arg_t  *arg;

    arg = (weir_http_variable_arg_t *) data;

    if (arg->suffix.len == 0 || r->headers_in.headers.part.elts == NULL) {
        weir_http_variable_set_not_found(v);
        return WEIR_OK;
    }

    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;

            if (part->nelts == 0) {
                continue;
            }
        }

        if (h[i].hash == 0) {
            continue;
        }

        if (h[i].token != WEIR_HTTP_HDR_COOKIE
            && !(h[i].token == WEIR_HTTP_HDR_UNKNOWN
                 && h[i].key.len == sizeof("cookie") - 1
                 && weir_strncasecmp(h[i].key.data,
                                     (unsigned char *) "cookie",
                                     sizeof("cookie") - 1) == 0))
        {
            continue;
        }

        if (weir_http_variable_find_cookie(&h[i].value, &arg->suffix,
                                           &value)
            == WEIR_OK)
        {
            weir_http_variable_set_value(v, value.data, value.len);
            return WEIR_OK;
        }
    }

    weir_http_variable_set_not_found(v);

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_remote_addr(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    (void) data;

    if (r->connection->addr_text.data == NULL) {
        weir_http_variable_set_not_found(v);
        return WEIR_OK;
    }

    weir_http_variable_set_value(v, r->connection->addr_text.data,
                                 r->connection->addr_text.len);

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_binary_remote_addr(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    struct sockaddr      *sa;
    struct sockaddr_in   *sin;
    struct sockaddr_in6  *sin6;

    (void) data;

    sa = r->connection->sockaddr;

    if (sa == NULL) {
        weir_http_variable_set_not_found(v);
        return WEIR_OK;
    }

    switch (sa->sa_family) {

    case AF_INET:
        sin = (struct sockaddr_in *) sa;
        weir_http_variable_set_value(v, (unsigned char *) &sin->sin_addr,
                                     sizeof(struct in_addr));
        break;

    case AF_INET6:
        sin6 = (struct sockaddr_in6 *) sa;
        weir_http_variable_set_value(v, (unsigned char *) &sin6->sin6_addr,
                                     sizeof(struct in6_addr));
        break;

    default:
        weir_http_variable_set_not_found(v);
        break;
    }

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_port(weir_http_request_t *r,
    weir_http_variable_value_t *v, struct sockaddr *sa)
{
    if (sa == NULL
        || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
    {
        weir_http_variable_set_value(v, (unsigned char *) "", 0);
        return WEIR_OK;
    }

    return weir_http_variable_printf(r, v, "%u",
                                     (unsigned) weir_inet_get_port(sa));
}


static weir_int_t
weir_http_variable_remote_port(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    (void) data;

    return weir_http_variable_port(r, v, r->connection->sockaddr);
}


/*
 * The address the client connected to. A connection accepted on a
 * wildcard socket only knows "0.0.0.0" until it asks the kernel; the
 * answer is kept in the connection for the next request.
 */
static struct sockaddr *
weir_http_variable_local_sockaddr(weir_http_request_t *r)
{
    socklen_t             len;
    weir_sockaddr_t       sa;
    struct sockaddr      *local;
    weir_connection_t    *c;
    struct sockaddr_in   *sin;
    struct sockaddr_in6  *sin6;

    c = r->connection;
    local = c->local_sockaddr;

    if (local) {
        switch (local->sa_family) {

        case AF_INET:
            sin = (struct sockaddr_in *) local;
            if (sin->sin_addr.s_addr != htonl(INADDR_ANY)) {
                return local;
            }
            break;

        case AF_INET6:
            sin6 = (struct sockaddr_in6 *) local;
            if (!IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr)) {
                return local;
            }
            break;

        default:
            return local;
        }
    }

    if (c->fd < 0) {
        return local;
    }

    len = sizeof(weir_sockaddr_t);

    if (getsockname(c->fd, &sa.sockaddr, &len) == -1) {
        weir_log_error(WEIR_LOG_CRIT, c->log, weir_socket_errno,
                       "getsockname() failed");
        return local;
    }

    local = weir_palloc(c->pool, len);
    if (local == NULL) {
        return NULL;
    }

    weir_memcpy(local, &sa, len);

    c->local_sockaddr = local;
    c->local_socklen = len;

    return local;
}


static weir_int_t
weir_http_variable_server_addr(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    size_t            len;
    unsigned char    *p;
    struct sockaddr  *sa;
    unsigned char     text[WEIR_SOCKADDR_STRLEN];

    (void) data;

    sa = weir_http_variable_local_sockaddr(r);

    if (sa == NULL) {
        weir_http_variable_set_not_found(v);
        return WEIR_OK;
    }

    len = weir_sock_ntop(sa, r->connection->local_sockaddr == sa
                             ? r->connection->local_socklen
                             : (socklen_t) sizeof(weir_sockaddr_t),
                         text, sizeof(text), 0);

    p = weir_pnalloc(r->pool, len);
    if (p == NULL) {
        return WEIR_ERROR;
    }

    weir_memcpy(p, text, len);
    weir_http_variable_set_value(v, p, len);

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_server_port(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    (void) data;

    return weir_http_variable_port(r, v, weir_http_variable_local_sockaddr(r));
}


static weir_int_t
weir_http_variable_server_name(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    weir_http_core_srv_conf_t  *cscf;

    (void) data;

    cscf = r->srv_conf
           ? weir_http_get_module_srv_conf(r, weir_http_core_module) : NULL;

    if (cscf == NULL) {
        weir_http_variable_set_not_found(v);
        return WEIR_OK;
    }

    weir_http_variable_set_value(v, cscf->server_name.data
                                    ? cscf->server_name.data
                                    : (unsigned char *) "",
                                 cscf->server_name.len);

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_server_protocol(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    (void) data;

    if (r->http_protocol.len) {
        weir_http_variable_set_value(v, r->http_protocol.data,
                                     r->http_protocol.len);
        return WEIR_OK;
    }

    switch (r->http_version) {

    case WEIR_HTTP_VERSION_10:
        weir_http_variable_set_value(v, (unsigned char *) "HTTP/1.0", 8);
        break;

    case WEIR_HTTP_VERSION_11:
        weir_http_variable_set_value(v, (unsigned char *) "HTTP/1.1", 8);
        break;

    case WEIR_HTTP_VERSION_20:
        weir_http_variable_set_value(v, (unsigned char *) "HTTP/2.0", 8);
        break;

    case WEIR_HTTP_VERSION_30:
        weir_http_variable_set_value(v, (unsigned char *) "HTTP/3.0", 8);
        break;

    default:
        /* HTTP/0.9 has no protocol in its request line */
        weir_http_variable_set_value(v, (unsigned char *) "", 0);
        break;
    }

    return WEIR_OK;
}


static weir_uint_t
weir_http_variable_is_ssl(weir_http_request_t *r)
{
    /* TLS is up on the connection (not merely a "listen ... ssl"
     * address: a plain request on a TLS port is plain) */
    return r->connection->ssl != NULL;
}


static weir_int_t
weir_http_variable_scheme(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    (void) data;

    if (weir_http_variable_is_ssl(r)) {
        weir_http_variable_set_value(v, (unsigned char *) "https", 5);
        return WEIR_OK;
    }

    weir_http_variable_set_value(v, (unsigned char *) "http", 4);

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_https(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    (void) data;

    if (weir_http_variable_is_ssl(r)) {
        weir_http_variable_set_value(v, (unsigned char *) "on", 2);
        return WEIR_OK;
    }

    weir_http_variable_set_value(v, (unsigned char *) "", 0);

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_request_length(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    (void) data;

    return weir_http_variable_printf(r, v, "%lld",
                                     (long long) r->request_length);
}


/* milliseconds since the request started: r->start_msec is
 * weir_current_msec (the monotonic clock) at weir_http_create_request */
static weir_msec_t
weir_http_variable_elapsed(weir_http_request_t *r)
{
    if (weir_current_msec <= r->start_msec) {
        return 0;
    }

    return weir_current_msec - r->start_msec;
}


static weir_int_t
weir_http_variable_request_time(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    weir_msec_t  ms;

    (void) data;

    ms = weir_http_variable_elapsed(r);

    return weir_http_variable_printf(r, v, "%llu.%03u",
                                     (unsigned long long) (ms / 1000),
                                     (unsigned) (ms % 1000));
}


static weir_int_t
weir_http_variable_connection_time(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    weir_msec_t  ms;

    (void) data;

    ms = weir_current_msec > r->connection->start_time
         ? weir_current_msec - r->connection->start_time : 0;

    return weir_http_variable_printf(r, v, "%llu.%03u",
                                     (unsigned long long) (ms / 1000),
                                     (unsigned) (ms % 1000));
}


/*
 * $request_id: 128 random bits. A small generator (xoshiro256**) seeded
 * from getrandom() per process (reseeded after fork, so that workers
 * never share a sequence) keeps a syscall off every request.
 */

static uint64_t    weir_http_rnd_state[4];
static weir_pid_t  weir_http_rnd_pid = -1;


static uint64_t
weir_http_rnd_rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}


static uint64_t
weir_http_rnd_next(void)
{
    uint64_t  *s, result, t;

    s = weir_http_rnd_state;

    result = weir_http_rnd_rotl(s[1] * 5, 7) * 9;
    t = s[1] << 17;

    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = weir_http_rnd_rotl(s[3], 45);

    return result;
}


static void
weir_http_rnd_seed(void)
{
    uint64_t         z;
    weir_uint_t      i;
    struct timespec  ts;

    if (getrandom(weir_http_rnd_state, sizeof(weir_http_rnd_state),
                  GRND_NONBLOCK)
        != (ssize_t) sizeof(weir_http_rnd_state))
    {
        /* no entropy source: unique enough for an id, not a secret */

        clock_gettime(CLOCK_REALTIME, &ts);
        z = (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
        z ^= (uint64_t) getpid() << 32;

        for (i = 0; i < 4; i++) {
            /* splitmix64 */
            z += 0x9e3779b97f4a7c15ULL;
            weir_http_rnd_state[i] = z;
            weir_http_rnd_state[i] = (weir_http_rnd_state[i]
                                      ^ (weir_http_rnd_state[i] >> 30))
                                     * 0xbf58476d1ce4e5b9ULL;
            weir_http_rnd_state[i] = (weir_http_rnd_state[i]
                                      ^ (weir_http_rnd_state[i] >> 27))
                                     * 0x94d049bb133111ebULL;
            weir_http_rnd_state[i] ^= weir_http_rnd_state[i] >> 31;
        }
    }

    if ((weir_http_rnd_state[0] | weir_http_rnd_state[1]
         | weir_http_rnd_state[2] | weir_http_rnd_state[3]) == 0)
    {
        weir_http_rnd_state[0] = 1;
    }

    weir_http_rnd_pid = getpid();
}


static weir_int_t
weir_http_variable_request_id(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    uint64_t        a, b;
    unsigned char  *p;

    (void) data;

    if (r->request_id.len == 0) {

        if (weir_http_rnd_pid != getpid()) {
            weir_http_rnd_seed();
        }

        a = weir_http_rnd_next();
        b = weir_http_rnd_next();

        p = weir_pnalloc(r->pool, 33);
        if (p == NULL) {
            return WEIR_ERROR;
        }

        (void) snprintf((char *) p, 33, "%016llx%016llx",
                        (unsigned long long) a, (unsigned long long) b);

        r->request_id.len = 32;
        r->request_id.data = p;
    }

    weir_http_variable_set_value(v, r->request_id.data, r->request_id.len);

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_status(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    weir_uint_t  status;

    (void) data;

    if (r->err_status) {
        status = (weir_uint_t) r->err_status;

    } else if (r->headers_out.status) {
        status = r->headers_out.status;

    } else if (r->http_version == WEIR_HTTP_VERSION_9) {
        status = 9;

    } else {
        status = 0;
    }

    return weir_http_variable_printf(r, v, "%03lu", (unsigned long) status);
}


static weir_int_t
weir_http_variable_body_bytes_sent(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    off_t  sent;

    (void) data;

    sent = r->connection->sent - r->header_out_size;

    if (sent < 0) {
        sent = 0;
    }

    return weir_http_variable_printf(r, v, "%lld", (long long) sent);
}


static weir_int_t
weir_http_variable_bytes_sent(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    (void) data;

    return weir_http_variable_printf(r, v, "%lld",
                                     (long long) r->connection->sent);
}


static weir_int_t
weir_http_variable_connection(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    (void) data;

    return weir_http_variable_printf(r, v, "%lu",
                                     (unsigned long) r->connection->number);
}


static weir_int_t
weir_http_variable_connection_requests(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    (void) data;

    return weir_http_variable_printf(r, v, "%lu",
                                     (unsigned long) r->connection->requests);
}


static weir_int_t
weir_http_variable_msec(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    struct timespec  ts;

    (void) data;

    clock_gettime(CLOCK_REALTIME, &ts);

    return weir_http_variable_printf(r, v, "%lld.%03ld",
                                     (long long) ts.tv_sec,
                                     (long) (ts.tv_nsec / 1000000));
}


static weir_int_t
weir_http_variable_time(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    weir_str_t     *t;
    unsigned char  *p;

    t = (data == WEIR_HTTP_VAR_TIME_ISO8601) ? &weir_cached_iso8601_time
                                             : &weir_cached_http_log_time;

    /* the cached text changes every second: keep a copy */

    p = weir_pnalloc(r->pool, t->len);
    if (p == NULL) {
        return WEIR_ERROR;
    }

    weir_memcpy(p, t->data, t->len);
    weir_http_variable_set_value(v, p, t->len);

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_pid(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    (void) data;

    return weir_http_variable_printf(r, v, "%ld", (long) getpid());
}


static weir_int_t
weir_http_variable_content_length(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    (void) data;

    if (r->headers_in.content_length) {
        weir_http_variable_set_value(v,
                                     r->headers_in.content_length->value.data,
                                     r->headers_in.content_length->value.len);
        return WEIR_OK;
    }

    if (r->headers_in.content_length_n >= 0 && !r->headers_in.chunked) {
        return weir_http_variable_printf(r, v, "%lld",
                                   (long long) r->headers_in.content_length_n);
    }

    weir_http_variable_set_not_found(v);

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_content_type(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    (void) data;

    if (r->headers_in.content_type) {
        weir_http_variable_set_value(v,
                                     r->headers_in.content_type->value.data,
                                     r->headers_in.content_type->value.len);
        return WEIR_OK;
    }

    weir_http_variable_set_not_found(v);

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_root(weir_http_request_t *r, weir_str_t *root)
{
    weir_http_core_loc_conf_t  *clcf;

    if (r->loc_conf == NULL) {
        return WEIR_DECLINED;
    }

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    /* a root with variables is evaluated by its owner; not here */

    if (clcf == NULL || clcf->root_lengths || clcf->root.data == NULL) {
        return WEIR_DECLINED;
    }

    *root = clcf->root;

    /* some writers keep the terminating NUL in the length */

    if (root->len && root->data[root->len - 1] == '\0') {
        root->len--;
    }

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_document_root(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    weir_str_t  root;

    (void) data;

    if (weir_http_variable_root(r, &root) != WEIR_OK) {
        weir_http_variable_set_not_found(v);
        return WEIR_OK;
    }

    weir_http_variable_set_value(v, root.data, root.len);

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_realpath_root(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    size_t          len;
    char           *path, *real;
    weir_str_t      root;
    unsigned char  *p;

    (void) data;

    if (weir_http_variable_root(r, &root) != WEIR_OK) {
        weir_http_variable_set_not_found(v);
        return WEIR_OK;
    }

    path = weir_pstrdupz(r->pool, &root);
    if (path == NULL) {
        return WEIR_ERROR;
    }

    real = realpath(path, NULL);

    if (real == NULL) {
        weir_log_error(WEIR_LOG_ERR, r->connection->log, weir_errno,
                       "realpath() \"%s\" failed", path);
        weir_http_variable_set_not_found(v);
        return WEIR_OK;
    }

    len = strlen(real);

    p = weir_pnalloc(r->pool, len);
    if (p == NULL) {
        free(real);
        return WEIR_ERROR;
    }

    weir_memcpy(p, real, len);
    free(real);

    weir_http_variable_set_value(v, p, len);

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_request_body(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    size_t          len;
    weir_buf_t     *b;
    weir_chain_t   *cl;
    unsigned char  *p;

    (void) data;

    if (r->request_body == NULL || r->request_body->bufs == NULL) {
        weir_http_variable_set_not_found(v);
        return WEIR_OK;
    }

    len = 0;

    for (cl = r->request_body->bufs; cl; cl = cl->next) {
        b = cl->buf;

        if (b->in_file || (!weir_buf_in_memory(b) && b->pos != b->last)) {
            /* written to a temporary file: not available here */
            weir_http_variable_set_not_found(v);
            return WEIR_OK;
        }

        len += (size_t) (b->last - b->pos);
    }

    cl = r->request_body->bufs;

    if (cl->next == NULL || len == (size_t) (cl->buf->last - cl->buf->pos)) {
        weir_http_variable_set_value(v, cl->buf->pos, len);
        return WEIR_OK;
    }

    p = weir_pnalloc(r->pool, len ? len : 1);
    if (p == NULL) {
        return WEIR_ERROR;
    }

    weir_http_variable_set_value(v, p, len);

    for ( /* void */ ; cl; cl = cl->next) {
        p = weir_cpymem(p, cl->buf->pos, (size_t) (cl->buf->last
                                                   - cl->buf->pos));
    }

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_version(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    (void) r;
    (void) data;

    weir_http_variable_set_value(v, (unsigned char *) WEIR_VERSION,
                                 sizeof(WEIR_VERSION) - 1);

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_sent_content_type(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    size_t          len;
    unsigned char  *p;

    (void) data;

    if (r->headers_out.content_type.len == 0) {
        weir_http_variable_set_not_found(v);
        return WEIR_OK;
    }

    if (r->headers_out.charset.len == 0) {
        weir_http_variable_set_value(v, r->headers_out.content_type.data,
                                     r->headers_out.content_type.len);
        return WEIR_OK;
    }

    len = r->headers_out.content_type.len + sizeof("; charset=") - 1
          + r->headers_out.charset.len;

    p = weir_pnalloc(r->pool, len);
    if (p == NULL) {
        return WEIR_ERROR;
    }

    weir_http_variable_set_value(v, p, len);

    p = weir_cpymem(p, r->headers_out.content_type.data,
                    r->headers_out.content_type.len);
    p = weir_cpymem(p, "; charset=", sizeof("; charset=") - 1);
    weir_memcpy(p, r->headers_out.charset.data, r->headers_out.charset.len);

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_sent_content_length(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    (void) data;

    if (r->headers_out.content_length
        && r->headers_out.content_length->hash)
    {
        weir_http_variable_set_value(v,
                                     r->headers_out.content_length->value.data,
                                     r->headers_out.content_length->value.len);
        return WEIR_OK;
    }

    if (r->headers_out.content_length_n >= 0) {
        return weir_http_variable_printf(r, v, "%lld",
                                  (long long) r->headers_out.content_length_n);
    }

    weir_http_variable_set_not_found(v);

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_sent_last_modified(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    unsigned char  *p, *last;

    (void) data;

    if (r->headers_out.last_modified && r->headers_out.last_modified->hash) {
        weir_http_variable_set_value(v,
                                     r->headers_out.last_modified->value.data,
                                     r->headers_out.last_modified->value.len);
        return WEIR_OK;
    }

    if (r->headers_out.last_modified_time > 0) {
        p = weir_pnalloc(r->pool, sizeof("Mon, 28 Sep 1970 06:00:00 GMT"));
        if (p == NULL) {
            return WEIR_ERROR;
        }

        last = weir_http_time(p, r->headers_out.last_modified_time);
        weir_http_variable_set_value(v, p, (size_t) (last - p));

        return WEIR_OK;
    }

    weir_http_variable_set_not_found(v);

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_sent_connection(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    (void) data;

    if (r->keepalive) {
        weir_http_variable_set_value(v, (unsigned char *) "keep-alive",
                                     sizeof("keep-alive") - 1);

    } else {
        weir_http_variable_set_value(v, (unsigned char *) "close",
                                     sizeof("close") - 1);
    }

    return WEIR_OK;
}


static weir_int_t
weir_http_variable_sent_transfer_encoding(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    (void) data;

    if (r->chunked) {
        weir_http_variable_set_value(v, (unsigned char *) "chunked",
                                     sizeof("chunked") - 1);

    } else {
        weir_http_variable_set_not_found(v);
    }

    return WEIR_OK;
}


/* ---- regular expressions with captures ---- */


weir_http_regex_t *
weir_http_regex_compile(weir_conf_t *cf, weir_regex_compile_t *rc)
{
    int                          n;
    weir_int_t                   i, index;
    weir_str_t                   name;
    unsigned char               *p;
    weir_http_regex_t           *re;
    weir_http_variable_t        *v;
    weir_http_regex_variable_t  *rv;
    weir_http_core_main_conf_t  *cmcf;

    if (rc->pool == NULL) {
        rc->pool = cf->pool;
    }

    if (weir_regex_compile(rc) != WEIR_OK) {
        if (rc->err.len) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0, "%.*s",
                                WEIR_STR_ARG(rc->err));

        } else {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid regular expression \"%.*s\"",
                                WEIR_STR_ARG(rc->pattern));
        }

        return NULL;
    }

    re = weir_pcalloc(cf->pool, sizeof(weir_http_regex_t));
    if (re == NULL) {
        return NULL;
    }

    re->regex = rc->regex;
    re->ncaptures = (weir_uint_t) rc->captures;
    re->name = rc->pattern;

    cmcf = weir_http_variables_main_conf(cf);

    if (cmcf->ncaptures < re->ncaptures) {
        cmcf->ncaptures = re->ncaptures;
    }

    if (rc->named_captures == 0) {
        return re;
    }

    rv = weir_pcalloc(cf->pool, (size_t) rc->named_captures
                                * sizeof(weir_http_regex_variable_t));
    if (rv == NULL) {
        return NULL;
    }

    re->variables = rv;
    re->nvariables = (weir_uint_t) rc->named_captures;

    /* PCRE2's name table: entries of name_size bytes, each the group
     * number (2 bytes, big-endian) and the NUL-terminated name */

    p = rc->names;

    for (i = 0; i < rc->named_captures; i++, p += rc->name_size) {

        n = (p[0] << 8) | p[1];

        name.data = p + 2;
        name.len = weir_strlen(name.data);

        v = weir_http_add_variable(cf, &name, WEIR_HTTP_VAR_CHANGEABLE);
        if (v == NULL) {
            return NULL;
        }

        if (v->get_handler == NULL) {
            v->get_handler = weir_http_variable_not_found;
        }

        index = weir_http_get_variable_index(cf, &name);
        if (index == WEIR_ERROR) {
            return NULL;
        }

        rv[i].capture = 2 * (weir_uint_t) n;
        rv[i].index = index;
    }

    return re;
}


weir_int_t
weir_http_regex_exec(weir_http_request_t *r, weir_http_regex_t *re,
    weir_str_t *s)
{
    int                          start, end;
    weir_int_t                   rc;
    weir_uint_t                  i, size, need, n, fresh;
    weir_http_variable_value_t  *vv;
    weir_http_core_main_conf_t  *cmcf;

    cmcf = weir_http_get_module_main_conf(r, weir_http_core_module);

    if (re->ncaptures || re->nvariables) {

        /*
         * After the http block, cmcf->ncaptures is the size in ints of a
         * captures array that fits every regex of the configuration
         * (weir_http_core_init_main_conf). r->captures, once allocated
         * here, holds at least that many, so it is reused by the next
         * regex of the request; a regex compiled later with more groups
         * gets a larger array of its own.
         */

        size = cmcf->ncaptures;
        need = (re->ncaptures + 1) * 3;

        if (size < need) {
            size = need;
            fresh = 1;

        } else {
            fresh = 0;
        }

        if (r->captures == NULL || fresh) {
            r->captures = weir_palloc(r->pool, size * sizeof(int));
            if (r->captures == NULL) {
                return WEIR_ERROR;
            }
        }

    } else {
        size = 0;
    }

    rc = weir_regex_exec(re->regex, s, size ? r->captures : NULL, size);

    if (rc == WEIR_REGEX_NO_MATCHED) {
        return WEIR_DECLINED;
    }

    if (rc < 0) {
        weir_log_error(WEIR_LOG_ALERT, r->connection->log, 0,
                       "regex \"%.*s\" failed on \"%.*s\": %ld",
                       WEIR_STR_ARG(re->name), WEIR_STR_ARG(*s), (long) rc);
        return WEIR_ERROR;
    }

    if (size == 0) {
        return WEIR_OK;
    }

    n = (weir_uint_t) rc * 2;

    /* only size / 2 pairs were copied */

    if (n > size / 2 * 2) {
        n = size / 2 * 2;
    }

    for (i = 0; i < re->nvariables && r->variables; i++) {

        vv = &r->variables[re->variables[i].index];

        if (re->variables[i].capture + 1 >= n) {
            weir_http_variable_set_not_found(vv);
            continue;
        }

        start = r->captures[re->variables[i].capture];
        end = r->captures[re->variables[i].capture + 1];

        if (start < 0 || end < start) {
            weir_http_variable_set_not_found(vv);
            continue;
        }

        weir_http_variable_set_value(vv, s->data + start,
                                     (size_t) (end - start));
    }

    if (re->ncaptures) {
        r->ncaptures = n;
        r->captures_data = s->data;
    }

    return WEIR_OK;
}
