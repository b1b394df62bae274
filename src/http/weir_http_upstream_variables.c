#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"


/*
 * The $upstream_* variables: the state of each attempt
 * ($upstream_addr, _status, _response_time, ...) and the origin's
 * header and trailer fields ($upstream_http_NAME,
 * $upstream_trailer_NAME). The upstream module's preconfiguration adds
 * them (weir_http_upstream_add_variables).
 */


/* ---- variables -------------------------------------------------------- */

typedef enum {
    WEIR_HTTP_UPSTREAM_VAR_ADDR = 0,
    WEIR_HTTP_UPSTREAM_VAR_STATUS,
    WEIR_HTTP_UPSTREAM_VAR_RESPONSE_TIME,
    WEIR_HTTP_UPSTREAM_VAR_CONNECT_TIME,
    WEIR_HTTP_UPSTREAM_VAR_HEADER_TIME,
    WEIR_HTTP_UPSTREAM_VAR_BYTES_RECEIVED,
    WEIR_HTTP_UPSTREAM_VAR_BYTES_SENT,
    WEIR_HTTP_UPSTREAM_VAR_RESPONSE_LENGTH
} weir_http_upstream_var_e;


static weir_int_t
weir_http_upstream_state_variable(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    size_t                        len;
    weir_uint_t                   i;
    weir_msec_t                   ms;
    unsigned char                *p, *last;
    weir_http_upstream_state_t   *st;

    if (r->upstream == NULL || r->upstream->state == NULL
        || r->upstream->state->nelts == 0)
    {
        v->not_found = 1;
        return WEIR_OK;
    }

    st = r->upstream->state->elts;
    len = 0;

    for (i = 0; i < r->upstream->state->nelts; i++) {
        len += (st[i].peer ? st[i].peer->len : 1) + 2 + WEIR_INT_T_LEN + 8;
    }

    p = weir_pnalloc(r->pool, len);
    if (p == NULL) {
        return WEIR_ERROR;
    }

    v->data = p;
    last = p + len;

    for (i = 0; i < r->upstream->state->nelts; i++) {
        if (i) {
            p = weir_slprintf(p, last, ", ");
        }

        switch (data) {

        case WEIR_HTTP_UPSTREAM_VAR_ADDR:
            if (st[i].peer) {
                p = weir_slprintf(p, last, "%.*s", WEIR_STR_ARG(*st[i].peer));
            } else {
                p = weir_slprintf(p, last, "-");
            }
            break;

        case WEIR_HTTP_UPSTREAM_VAR_STATUS:
            if (st[i].status) {
                p = weir_slprintf(p, last, "%lu",
                                  (unsigned long) st[i].status);
            } else {
                p = weir_slprintf(p, last, "-");
            }
            break;

        case WEIR_HTTP_UPSTREAM_VAR_RESPONSE_TIME:
        case WEIR_HTTP_UPSTREAM_VAR_CONNECT_TIME:
        case WEIR_HTTP_UPSTREAM_VAR_HEADER_TIME:
            ms = (data == WEIR_HTTP_UPSTREAM_VAR_RESPONSE_TIME)
                 ? st[i].response_time
                 : (data == WEIR_HTTP_UPSTREAM_VAR_CONNECT_TIME)
                   ? st[i].connect_time : st[i].header_time;

            if (data == WEIR_HTTP_UPSTREAM_VAR_RESPONSE_TIME
                && ms == (weir_msec_t) -1 && i + 1 == r->upstream->state->nelts)
            {
                /* still running (a log line written before the end) */
                ms = weir_current_msec - r->upstream->start_time;
            }

            if (ms == (weir_msec_t) -1) {
                p = weir_slprintf(p, last, "-");
            } else {
                p = weir_slprintf(p, last, "%lu.%03lu",
                                  (unsigned long) (ms / 1000),
                                  (unsigned long) (ms % 1000));
            }
            break;

        case WEIR_HTTP_UPSTREAM_VAR_BYTES_RECEIVED:
            p = weir_slprintf(p, last, "%lld",
                              (long long) st[i].bytes_received);
            break;

        case WEIR_HTTP_UPSTREAM_VAR_BYTES_SENT:
            p = weir_slprintf(p, last, "%lld", (long long) st[i].bytes_sent);
            break;

        default: /* WEIR_HTTP_UPSTREAM_VAR_RESPONSE_LENGTH */
            if (st[i].response_length >= 0) {
                p = weir_slprintf(p, last, "%lld",
                                  (long long) st[i].response_length);
            } else {
                p = weir_slprintf(p, last, "-");
            }
            break;
        }
    }

    v->len = p - v->data;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return WEIR_OK;
}


/* "upstream_http_x_foo" / "upstream_trailer_x_foo": the origin's header
 * named x-foo (case-insensitive, '_' matches '-'), joined with ", " */

static weir_int_t
weir_http_upstream_header_variable(weir_http_request_t *r,
    weir_http_variable_value_t *v, weir_list_t *list, weir_str_t *name)
{
    size_t               len;
    weir_uint_t          i, j, n;
    unsigned char        ch, *p;
    weir_list_part_t    *part;
    weir_http_header_t  *h;

    len = 0;
    n = 0;

    for (part = &list->part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (h[i].hash == 0 || h[i].key.len != name->len) {
                continue;
            }

            for (j = 0; j < name->len; j++) {
                ch = weir_tolower(h[i].key.data[j]);

                if (ch == '-') {
                    ch = '_';
                }

                if (ch != weir_tolower(name->data[j])) {
                    break;
                }
            }

            if (j == name->len) {
                len += h[i].value.len + 2;
                n++;
            }
        }
    }

    if (n == 0) {
        v->not_found = 1;
        return WEIR_OK;
    }

    p = weir_pnalloc(r->pool, len);
    if (p == NULL) {
        return WEIR_ERROR;
    }

    v->data = p;

    for (part = &list->part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (h[i].hash == 0 || h[i].key.len != name->len) {
                continue;
            }

            for (j = 0; j < name->len; j++) {
                ch = weir_tolower(h[i].key.data[j]);

                if (ch == '-') {
                    ch = '_';
                }

                if (ch != weir_tolower(name->data[j])) {
                    break;
                }
            }

            if (j < name->len) {
                continue;
            }

            if (p != v->data) {
                *p++ = ','; *p++ = ' ';
            }

            p = weir_cpymem(p, h[i].value.data, h[i].value.len);
        }
    }

    v->len = p - v->data;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return WEIR_OK;
}


/* $upstream_http_NAME and $upstream_trailer_NAME: a prefix variable's
 * data starts with its full name, and the prefix says which list */

static weir_int_t
weir_http_upstream_field_variable(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    size_t        prefix;
    weir_str_t    name, *full;
    weir_list_t  *fields;

    full = (weir_str_t *) data;

    if (r->upstream == NULL) {
        v->not_found = 1;
        return WEIR_OK;
    }

    if (full->data[sizeof("upstream_") - 1] == 'h') {
        prefix = sizeof("upstream_http_") - 1;
        fields = &r->upstream->headers_in.headers;

    } else {
        prefix = sizeof("upstream_trailer_") - 1;
        fields = &r->upstream->headers_in.trailers;
    }

    if (fields->part.elts == NULL) {
        v->not_found = 1;
        return WEIR_OK;
    }

    name.len = full->len - prefix;
    name.data = full->data + prefix;

    return weir_http_upstream_header_variable(r, v, fields, &name);
}


static struct {
    weir_str_t                   name;
    weir_http_get_variable_pt    handler;
    uintptr_t                    data;
    weir_uint_t                  flags;
} weir_http_upstream_vars[] = {
    { weir_string("upstream_addr"), weir_http_upstream_state_variable,
      WEIR_HTTP_UPSTREAM_VAR_ADDR, WEIR_HTTP_VAR_NOCACHEABLE },
    { weir_string("upstream_status"), weir_http_upstream_state_variable,
      WEIR_HTTP_UPSTREAM_VAR_STATUS, WEIR_HTTP_VAR_NOCACHEABLE },
    { weir_string("upstream_response_time"),
      weir_http_upstream_state_variable,
      WEIR_HTTP_UPSTREAM_VAR_RESPONSE_TIME, WEIR_HTTP_VAR_NOCACHEABLE },
    { weir_string("upstream_connect_time"),
      weir_http_upstream_state_variable,
      WEIR_HTTP_UPSTREAM_VAR_CONNECT_TIME, WEIR_HTTP_VAR_NOCACHEABLE },
    { weir_string("upstream_header_time"),
      weir_http_upstream_state_variable,
      WEIR_HTTP_UPSTREAM_VAR_HEADER_TIME, WEIR_HTTP_VAR_NOCACHEABLE },
    { weir_string("upstream_bytes_received"),
      weir_http_upstream_state_variable,
      WEIR_HTTP_UPSTREAM_VAR_BYTES_RECEIVED, WEIR_HTTP_VAR_NOCACHEABLE },
    { weir_string("upstream_bytes_sent"),
      weir_http_upstream_state_variable,
      WEIR_HTTP_UPSTREAM_VAR_BYTES_SENT, WEIR_HTTP_VAR_NOCACHEABLE },
    { weir_string("upstream_response_length"),
      weir_http_upstream_state_variable,
      WEIR_HTTP_UPSTREAM_VAR_RESPONSE_LENGTH, WEIR_HTTP_VAR_NOCACHEABLE },
    { weir_string("upstream_http_"), weir_http_upstream_field_variable, 0,
      WEIR_HTTP_VAR_PREFIX | WEIR_HTTP_VAR_NOCACHEABLE },
    { weir_string("upstream_trailer_"), weir_http_upstream_field_variable,
      0, WEIR_HTTP_VAR_PREFIX | WEIR_HTTP_VAR_NOCACHEABLE },
    { weir_null_string, NULL, 0, 0 }
};


weir_int_t
weir_http_upstream_add_variables(weir_conf_t *cf)
{
    weir_uint_t            i;
    weir_http_variable_t  *var;

    for (i = 0; weir_http_upstream_vars[i].name.len; i++) {
        var = weir_http_add_variable(cf, &weir_http_upstream_vars[i].name,
                                     weir_http_upstream_vars[i].flags);
        if (var == NULL) {
            return WEIR_ERROR;
        }

        var->get_handler = weir_http_upstream_vars[i].handler;

        if (!(weir_http_upstream_vars[i].flags & WEIR_HTTP_VAR_PREFIX)) {
            var->data = weir_http_upstream_vars[i].data;
        }
    }

    return WEIR_OK;
}
