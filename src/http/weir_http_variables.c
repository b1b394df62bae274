#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_http.h"
#include "weir.h"


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


#define WEIR_HTTP_VAR_MAX_LEN  0x0fffffff       /* the 28-bit len field */



weir_http_variable_value_t  weir_http_variable_null_value = {
    0, 1, 0, 0, 0, (unsigned char *) ""
};

weir_http_variable_value_t  weir_http_variable_true_value = {
    1, 1, 0, 0, 0, (unsigned char *) "1"
};




static weir_http_core_main_conf_t *
weir_http_variables_main_conf(weir_conf_t *cf)
{
    return weir_http_conf_get_module_main_conf(cf, weir_http_core_module);
}


void
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


void
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
weir_int_t WEIR_PRINTF(3, 4)
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
