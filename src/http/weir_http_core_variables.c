#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_http.h"
#include "weir.h"

#include <sys/random.h>


/*
 * The core module's variables ($host, $uri, $remote_addr, $http_*,
 * $arg_*, $cookie_*, $sent_http_*, ...): the table that
 * weir_http_variables_add_core_vars registers, and their handlers. The
 * machinery that registers, indexes and evaluates variables is
 * weir_http_variables.c.
 */


static weir_int_t weir_http_variable_str(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_host(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_hostname(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
static weir_int_t weir_http_variable_is_args(weir_http_request_t *r,
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

/* what weir_http_variable_time formats */
#define WEIR_HTTP_VAR_TIME_LOCAL    0
#define WEIR_HTTP_VAR_TIME_ISO8601  1


#define weir_http_var(name, handler, data, flags)                             \
    { weir_string(name), NULL, handler, (uintptr_t) (data), flags, 0 }

#define weir_http_var_str(name, field, flags)                                 \
    weir_http_var(name, weir_http_variable_str,                               \
                  offsetof(weir_http_request_t, field), flags)


weir_http_variable_t  weir_http_core_variables[] = {

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


weir_int_t
weir_http_variable_header_in(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    weir_http_variable_arg_t  *arg;

    arg = (weir_http_variable_arg_t *) data;

    return weir_http_variable_headers(r, v, &r->headers_in.headers, arg,
                                      arg->token == WEIR_HTTP_HDR_COOKIE
                                      ? "; " : ", ");
}


weir_int_t
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


/* the address the client connected to, kept by the connection */
static struct sockaddr *
weir_http_variable_local_sockaddr(weir_http_request_t *r)
{
    return weir_connection_local_sockaddr(r->connection);
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


/*
 * The byte counts are the request's own: r->connection->sent is what was
 * written for this request (HTTP/1 starts it again for every request of
 * a connection; a stream of a multiplexed connection has a connection
 * object of its own that counts the stream's bytes), and
 * r->header_out_size the head as the protocol's send_header framed it.
 */

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

    /* the transport connection's count: the same for every stream of a
     * multiplexed connection */
    return weir_http_variable_printf(r, v, "%lu",
                                     (unsigned long)
                                     r->http_connection->requests);
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

    /* HTTP/2 and HTTP/3 heads have no Connection field (RFC 9113
     * 8.2.2, RFC 9114 4.2) */
    if (r->http_version >= WEIR_HTTP_VERSION_20) {
        weir_http_variable_set_not_found(v);
        return WEIR_OK;
    }

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

    /* r->chunked is HTTP/1's framing; a multiplexed protocol frames
     * the body itself and never sets it */
    if (r->chunked && r->http_version < WEIR_HTTP_VERSION_20) {
        weir_http_variable_set_value(v, (unsigned char *) "chunked",
                                     sizeof("chunked") - 1);

    } else {
        weir_http_variable_set_not_found(v);
    }

    return WEIR_OK;
}
