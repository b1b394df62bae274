#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"
#include "weir_http_proxy_int.h"


/*
 * The proxy module (weir_http_proxy_module.c): the request to the
 * origin. The URI, the method, the headers (proxy_set_header, the
 * client's own unless hop-by-hop, Via) and the body's framing go into
 * the protocol-neutral u->req; before a retry, reinit_request forgets
 * what the last answer put into r->headers_out. And the variables
 * proxy_set_header values use: $proxy_host, $proxy_port,
 * $proxy_add_x_forwarded_for, $proxy_add_forwarded, $connection_upgrade.
 */


#define WEIR_HTTP_PROXY_VIA       "weir"


static struct {
    weir_str_t     name;
    weir_uint_t    method;
} weir_http_proxy_methods[] = {
    { weir_string("GET"), WEIR_HTTP_GET },
    { weir_string("HEAD"), WEIR_HTTP_HEAD },
    { weir_string("POST"), WEIR_HTTP_POST },
    { weir_string("PUT"), WEIR_HTTP_PUT },
    { weir_string("DELETE"), WEIR_HTTP_DELETE },
    { weir_string("OPTIONS"), WEIR_HTTP_OPTIONS },
    { weir_string("PATCH"), WEIR_HTTP_PATCH },
    { weir_string("TRACE"), WEIR_HTTP_TRACE },
    { weir_string("CONNECT"), WEIR_HTTP_CONNECT },
    { weir_null_string, 0 }
};


/* ---- the request to the origin --------------------------------------- */

/*
 * The URI the origin is asked for (nginx's rules):
 * - proxy_pass with variables and a URI part: that URI as evaluated (a
 *   forward proxy's request: the client's target);
 * - no URI part and the client's URI unchanged: the client's URI as it
 *   came (r->unparsed_uri), byte for byte;
 * - otherwise the decoded URI, with the matched location prefix replaced
 *   by the URI part, escaped again, and the arguments.
 */
static weir_int_t
weir_http_proxy_build_uri(weir_http_request_t *r,
    weir_http_proxy_loc_conf_t *plcf, weir_http_proxy_ctx_t *ctx,
    weir_str_t *uri)
{
    size_t          loc_len, len;
    unsigned char  *p;

    if ((plcf->url || ctx->forward) && ctx->vars.uri.len) {
        *uri = ctx->vars.uri;
        return WEIR_OK;
    }

    if (ctx->vars.uri.len == 0 && r->valid_unparsed_uri && !r->uri_changed
        && r->unparsed_uri.len)
    {
        *uri = r->unparsed_uri;
        return WEIR_OK;
    }

    loc_len = 0;

    if (ctx->vars.uri.len && r->valid_location
        && r->uri.len >= plcf->location.len
        && weir_memcmp(r->uri.data, plcf->location.data, plcf->location.len)
           == 0)
    {
        loc_len = plcf->location.len;
    }

    len = ctx->vars.uri.len
          + weir_http_escape_uri_len(r->uri.data + loc_len,
                                       r->uri.len - loc_len)
          + 1 + r->args.len + 1;

    p = weir_pnalloc(r->pool, len);
    if (p == NULL) {
        return WEIR_ERROR;
    }

    uri->data = p;

    p = weir_cpymem(p, ctx->vars.uri.data, ctx->vars.uri.len);
    p = weir_http_escape_uri(p, r->uri.data + loc_len, r->uri.len - loc_len);

    if (p == uri->data) {
        *p++ = '/';
    }

    if (r->args.len) {
        *p++ = '?';
        p = weir_cpymem(p, r->args.data, r->args.len);
    }

    uri->len = p - uri->data;

    return WEIR_OK;
}


static weir_http_header_t *
weir_http_proxy_push_header(weir_http_request_t *r, weir_list_t *list,
    weir_str_t *key, unsigned char *lowcase_key, weir_uint_t hash,
    weir_uint_t token, weir_str_t *value)
{
    weir_http_header_t  *h;

    h = weir_list_push(list);
    if (h == NULL) {
        return NULL;
    }

    h->hash = hash;
    h->token = token;
    h->key = *key;
    h->value = *value;
    h->lowcase_key = lowcase_key;
    h->next = NULL;

    (void) r;

    return h;
}


/* "<old>, <version> weir" or "<version> weir" */
weir_int_t
weir_http_proxy_via_value(weir_pool_t *pool, weir_str_t *old,
    weir_uint_t version, weir_str_t *value)
{
    const char  *v;

    switch (version) {
    case WEIR_HTTP_VERSION_10:
        v = "1.0";
        break;
    case WEIR_HTTP_VERSION_20:
        v = "2";
        break;
    case WEIR_HTTP_VERSION_30:
        v = "3";
        break;
    default:
        v = "1.1";
        break;
    }

    if (old && old->len) {
        return weir_pstrfmt(pool, value, "%.*s, %s " WEIR_HTTP_PROXY_VIA,
                            WEIR_STR_ARG(*old), v);
    }

    return weir_pstrfmt(pool, value, "%s " WEIR_HTTP_PROXY_VIA, v);
}


weir_int_t
weir_http_proxy_create_request(weir_http_request_t *r)
{
    char                           safe[WEIR_HTTP_PROXY_LOG_SAFE];
    off_t                          len;
    weir_uint_t                    i, j, n, set, via_set, connection_upgrade;
    weir_str_t                     value, via, *upgrade;
    weir_chain_t                  *cl;
    weir_list_part_t              *part;
    weir_http_header_t            *h, *ho;
    weir_http_upstream_t          *u;
    weir_http_proxy_ctx_t         *ctx;
    weir_http_proxy_header_t      *ph;
    weir_http_upstream_request_t  *req;
    weir_http_proxy_loc_conf_t    *plcf;

    static weir_str_t  via_key = weir_string("Via");

    u = r->upstream;
    req = &u->req;
    plcf = weir_http_get_module_loc_conf(r, weir_http_proxy_module);
    ctx = weir_http_get_module_ctx(r, weir_http_proxy_module);

    if (ctx == NULL) {
        weir_log_error(WEIR_LOG_ALERT, r->connection->log, 0,
                       "proxy: no request context while creating the "
                       "request to upstream");
        return WEIR_ERROR;
    }

    /* the method */

    req->method = r->method;
    req->method_name = r->method_name;

    /* the name from weir's own table when the method is a known one:
     * error_page sets r->method_name to weir_http_core_get_method, which
     * is "GET " with its space */

    for (i = 0; weir_http_proxy_methods[i].name.len; i++) {
        if (weir_http_proxy_methods[i].method == r->method) {
            req->method_name = weir_http_proxy_methods[i].name;
            break;
        }
    }

    if (plcf->method) {
        if (weir_http_complex_value(r, plcf->method, &value) != WEIR_OK) {
            return WEIR_ERROR;
        }

        if (value.len) {
            for (i = 0; i < value.len; i++) {
                if (!weir_http_proxy_is_tchar(value.data[i])) {
                    weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                                   "invalid proxy_method \"%s\"",
                                   weir_http_proxy_log_safe(safe, &value));
                    return WEIR_ERROR;
                }
            }

            req->method_name = value;
            req->method = WEIR_HTTP_UNKNOWN;

            for (i = 0; weir_http_proxy_methods[i].name.len; i++) {
                if (weir_str_eq(&weir_http_proxy_methods[i].name, &value)) {
                    req->method = weir_http_proxy_methods[i].method;
                    break;
                }
            }
        }
    }

    weir_str_set(&req->scheme, "http");
    /* auto: the HTTP/1.1 handler, if the origin picks it, writes 1.1 */
    req->http_version = (plcf->http_version == WEIR_HTTP_PROXY_VERSION_AUTO)
                        ? WEIR_HTTP_VERSION_11 : plcf->http_version;

    /* the authority (Host) */

    if (plcf->host) {
        if (weir_http_complex_value(r, plcf->host, &req->authority)
            != WEIR_OK)
        {
            return WEIR_ERROR;
        }

    } else {
        req->authority = ctx->vars.host_header;
    }

    if (!weir_http_proxy_safe_value(&req->authority)) {
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "proxy: the Host value has a CR, LF or NUL");
        return WEIR_ERROR;
    }

    /* the URI */

    if (weir_http_proxy_build_uri(r, plcf, ctx, &req->uri) != WEIR_OK) {
        return WEIR_ERROR;
    }

    u->uri = req->uri;

    /* the headers: proxy_set_header first, then the client's */

    /* room for every header that may be sent (the list grows if Via or
     * anything else needs more): a fixed 16 would take 1 KiB of the
     * request's pool for the few of a typical request */

    n = plcf->headers ? plcf->headers->nelts : 0;

    if (plcf->pass_request_headers) {
        for (part = &r->headers_in.headers.part; part; part = part->next) {
            n += part->nelts;
        }
    }

    if (weir_list_init(&req->headers, r->pool, n + 1,
                       sizeof(weir_http_header_t))
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    upgrade = NULL;
    connection_upgrade = 0;
    via_set = 0;

    ph = plcf->headers ? plcf->headers->elts : NULL;

    for (i = 0; plcf->headers && i < plcf->headers->nelts; i++) {

        if (ph[i].token == WEIR_HTTP_HDR_VIA) {
            via_set = 1;
        }

        if (ph[i].value == NULL) {
            continue;
        }

        if (weir_http_complex_value(r, ph[i].value, &value) != WEIR_OK) {
            return WEIR_ERROR;
        }

        if (value.len == 0) {
            continue;
        }

        if (!weir_http_proxy_safe_value(&value)) {
            weir_log_error(WEIR_LOG_INFO, r->connection->log, 0,
                           "proxy: the value of header \"%.*s\" has a CR, "
                           "LF or NUL: not sent", WEIR_STR_ARG(ph[i].key));
            continue;
        }

        h = weir_http_proxy_push_header(r, &req->headers, &ph[i].key,
                                        ph[i].lowcase_key, ph[i].hash,
                                        ph[i].token, &value);
        if (h == NULL) {
            return WEIR_ERROR;
        }

        if (ph[i].token == WEIR_HTTP_HDR_UPGRADE) {
            upgrade = &h->value;

        } else if (ph[i].token == WEIR_HTTP_HDR_CONNECTION
                   && weir_http_list_has_token(&h->value,
                                     (unsigned char *) "upgrade",
                                     sizeof("upgrade") - 1))
        {
            connection_upgrade = 1;
        }
    }

    req->upgrade = (upgrade != NULL && connection_upgrade) ? 1 : 0;

    weir_str_null(&via);

    if (plcf->pass_request_headers) {

        part = &r->headers_in.headers.part;
        h = part->elts;

        for (i = 0; /* void */ ; i++) {

            if (i >= part->nelts) {
                if (part->next == NULL) {
                    break;
                }

                part = part->next;
                h = part->elts;
                i = 0;
            }

            if (h[i].hash == 0) {
                continue;
            }

            switch (h[i].token) {
            case WEIR_HTTP_HDR_HOST:
            case WEIR_HTTP_HDR_CONTENT_LENGTH:
            case WEIR_HTTP_HDR_TRANSFER_ENCODING:
            case WEIR_HTTP_HDR_EXPECT:
                continue;
            default:
                break;
            }

            if (weir_http_upstream_hop_by_hop(&h[i], r->headers_in.connection))
            {
                continue;
            }

            /* a name proxy_set_header sets (or removes) */

            set = 0;

            for (j = 0; plcf->headers && j < plcf->headers->nelts; j++) {
                if (ph[j].key.len == h[i].key.len
                    && weir_strncasecmp(ph[j].lowcase_key, h[i].key.data,
                                        h[i].key.len)
                       == 0)
                {
                    set = 1;
                    break;
                }
            }

            if (set) {
                continue;
            }

            if (plcf->via && !via_set && h[i].token == WEIR_HTTP_HDR_VIA) {

                /* joined with ours below */

                if (via.len == 0) {
                    via = h[i].value;

                } else if (weir_pstrfmt(r->pool, &via, "%.*s, %.*s",
                                        WEIR_STR_ARG(via),
                                        WEIR_STR_ARG(h[i].value))
                           != WEIR_OK)
                {
                    return WEIR_ERROR;
                }

                continue;
            }

            ho = weir_list_push(&req->headers);
            if (ho == NULL) {
                return WEIR_ERROR;
            }

            *ho = h[i];
        }
    }

    if (plcf->via && !via_set) {
        if (weir_http_proxy_via_value(r->pool, &via, r->http_version, &value)
            != WEIR_OK)
        {
            return WEIR_ERROR;
        }

        if (weir_http_proxy_push_header(r, &req->headers, &via_key,
                                        (unsigned char *) "via",
                                        weir_hash_key((unsigned char *) "via",
                                                      3),
                                        WEIR_HTTP_HDR_VIA, &value)
            == NULL)
        {
            return WEIR_ERROR;
        }
    }

    /* the body */

    req->has_body = 0;
    req->body_length = 0;
    req->send_trailers = 0;

    if (plcf->pass_request_body
        && (r->headers_in.content_length_n >= 0 || r->headers_in.chunked))
    {
        req->has_body = 1;

        if (!r->headers_in.chunked) {
            req->body_length = r->headers_in.content_length_n;

        } else if (r->request_body_no_buffering) {
            req->body_length = -1;
            req->send_trailers =
                (req->http_version >= WEIR_HTTP_VERSION_11) ? 1 : 0;

        } else {
            /* the whole body was read: its length is known now */

            len = 0;

            if (r->request_body) {
                for (cl = r->request_body->bufs; cl; cl = cl->next) {
                    len += weir_buf_size(cl->buf);
                }
            }

            req->body_length = len;
        }
    }

    weir_log_debug(r->connection->log, 0,
                   "proxy request: \"%.*s %.*s\" host \"%.*s\" body %lld",
                   WEIR_STR_ARG(req->method_name), WEIR_STR_ARG(req->uri),
                   WEIR_STR_ARG(req->authority),
                   (long long) (req->has_body ? req->body_length : 0));

    return WEIR_OK;
}


weir_int_t
weir_http_proxy_reinit_request(weir_http_request_t *r)
{
    weir_http_headers_out_t  *ho;

    /* a retry: forget what process_header copied from the last answer */

    ho = &r->headers_out;

    if (weir_list_init(&ho->headers, r->pool, 20, sizeof(weir_http_header_t))
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    ho->status = 0;
    weir_str_null(&ho->status_line);
    ho->server = NULL;
    ho->date = NULL;
    ho->content_length = NULL;
    ho->content_encoding = NULL;
    ho->location = NULL;
    ho->refresh = NULL;
    ho->last_modified = NULL;
    ho->content_range = NULL;
    ho->accept_ranges = NULL;
    ho->www_authenticate = NULL;
    ho->expires = NULL;
    ho->etag = NULL;
    ho->content_type_len = 0;
    weir_str_null(&ho->content_type);
    weir_str_null(&ho->charset);
    ho->content_type_lowcase = NULL;
    ho->content_length_n = -1;
    ho->last_modified_time = -1;

    r->expect_trailers = 0;

    return WEIR_OK;
}


/* ---- variables ------------------------------------------------------- */

static weir_http_proxy_vars_t *
weir_http_proxy_get_vars(weir_http_request_t *r)
{
    weir_http_proxy_ctx_t       *ctx;
    weir_http_proxy_loc_conf_t  *plcf;

    ctx = r->ctx ? weir_http_get_module_ctx(r, weir_http_proxy_module) : NULL;

    if (ctx) {
        return &ctx->vars;
    }

    if (r->loc_conf == NULL) {
        return NULL;
    }

    plcf = weir_http_get_module_loc_conf(r, weir_http_proxy_module);

    return &plcf->vars;
}


static void
weir_http_proxy_set_var(weir_http_variable_value_t *v, unsigned char *data,
    size_t len)
{
    v->len = len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
    v->escape = 0;
    v->data = data;
}


static weir_int_t
weir_http_proxy_host_variable(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    weir_http_proxy_vars_t  *vars;

    vars = weir_http_proxy_get_vars(r);

    if (vars == NULL || vars->host_header.data == NULL) {
        v->not_found = 1;
        return WEIR_OK;
    }

    if (data) {
        weir_http_proxy_set_var(v, vars->port.data, vars->port.len);

    } else {
        weir_http_proxy_set_var(v, vars->host_header.data,
                                vars->host_header.len);
    }

    v->no_cacheable = 1;

    return WEIR_OK;
}


/* the values of every client header with token, joined with ", " (NULL
 * data: none) */
static weir_int_t
weir_http_proxy_join_headers(weir_http_request_t *r, weir_uint_t token,
    weir_str_t *out)
{
    weir_uint_t          i;
    weir_list_part_t    *part;
    weir_http_header_t  *h;

    weir_str_null(out);

    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].hash == 0 || h[i].token != token || h[i].value.len == 0) {
            continue;
        }

        if (out->data == NULL) {
            *out = h[i].value;

        } else if (weir_pstrfmt(r->pool, out, "%.*s, %.*s",
                                WEIR_STR_ARG(*out), WEIR_STR_ARG(h[i].value))
                   != WEIR_OK)
        {
            return WEIR_ERROR;
        }
    }

    return WEIR_OK;
}


static weir_int_t
weir_http_proxy_add_x_forwarded_for_variable(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    weir_str_t   xff, addr, out;

    (void) data;

    addr = r->connection->addr_text;

    if (weir_http_proxy_join_headers(r, WEIR_HTTP_HDR_X_FORWARDED_FOR, &xff)
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    if (xff.data == NULL) {
        weir_http_proxy_set_var(v, addr.data, addr.len);
        return WEIR_OK;
    }

    if (weir_pstrfmt(r->pool, &out, "%.*s, %.*s", WEIR_STR_ARG(xff),
                     WEIR_STR_ARG(addr))
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    weir_http_proxy_set_var(v, out.data, out.len);

    return WEIR_OK;
}


/* RFC 7239: a value is a token or a quoted string */
static weir_int_t
weir_http_proxy_forwarded_value(weir_pool_t *pool, weir_str_t *in,
    weir_str_t *out)
{
    size_t          i, n;
    unsigned char  *p;

    n = 0;

    for (i = 0; i < in->len; i++) {
        if (!weir_http_proxy_is_tchar(in->data[i])) {
            n++;
        }
    }

    if (n == 0 && in->len) {
        *out = *in;
        return WEIR_OK;
    }

    p = weir_pnalloc(pool, in->len * 2 + 2);
    if (p == NULL) {
        return WEIR_ERROR;
    }

    out->data = p;
    *p++ = '"';

    for (i = 0; i < in->len; i++) {
        if (in->data[i] == '"' || in->data[i] == '\\') {
            *p++ = '\\';
        }
        *p++ = in->data[i];
    }

    *p++ = '"';
    out->len = p - out->data;

    return WEIR_OK;
}


static weir_int_t
weir_http_proxy_add_forwarded_variable(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    weir_str_t                   old, addr, host, shost, out, name;
    struct sockaddr             *sa;
    weir_http_variable_value_t  *scheme;

    (void) data;

    if (weir_http_proxy_join_headers(r, WEIR_HTTP_HDR_FORWARDED, &old)
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    /* for= */

    sa = r->connection->sockaddr;
    addr = r->connection->addr_text;

    if (sa && sa->sa_family == AF_INET6) {
        if (weir_pstrfmt(r->pool, &addr, "\"[%.*s]\"", WEIR_STR_ARG(addr))
            != WEIR_OK)
        {
            return WEIR_ERROR;
        }

    } else if (sa == NULL || sa->sa_family != AF_INET || addr.len == 0) {
        weir_str_set(&addr, "unknown");
    }

    /* proto= */

    weir_str_set(&name, "scheme");
    scheme = weir_http_get_variable(r, &name, weir_hash_key(name.data,
                                                            name.len));

    /* host=: the Host as the client sent it */

    if (r->headers_in.host && r->headers_in.host->value.len) {
        host = r->headers_in.host->value;

    } else {
        host = r->headers_in.server;
    }

    if (weir_http_proxy_forwarded_value(r->pool, &host, &shost) != WEIR_OK) {
        return WEIR_ERROR;
    }

    if (weir_pstrfmt(r->pool, &out, "%.*s%sfor=%.*s;proto=%.*s;host=%.*s",
                     WEIR_STR_ARG(old), old.len ? ", " : "",
                     WEIR_STR_ARG(addr),
                     (scheme && !scheme->not_found) ? (int) scheme->len : 4,
                     (scheme && !scheme->not_found)
                     ? (const char *) scheme->data : "http",
                     WEIR_STR_ARG(shost))
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    weir_http_proxy_set_var(v, out.data, out.len);

    return WEIR_OK;
}


static weir_int_t
weir_http_proxy_connection_upgrade_variable(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    (void) data;

    if (r->headers_in.upgrade && r->headers_in.upgrade->value.len) {
        weir_http_proxy_set_var(v, (unsigned char *) "upgrade", 7);

    } else {
        weir_http_proxy_set_var(v, (unsigned char *) "", 0);
    }

    return WEIR_OK;
}


weir_int_t
weir_http_proxy_add_variables(weir_conf_t *cf)
{
    weir_uint_t            i;
    weir_http_variable_t  *v;

    static struct {
        weir_str_t                  name;
        weir_http_get_variable_pt   handler;
        uintptr_t                   data;
        weir_uint_t                 flags;
    } vars[] = {
        { weir_string("proxy_host"), weir_http_proxy_host_variable, 0,
          WEIR_HTTP_VAR_NOCACHEABLE },
        { weir_string("proxy_port"), weir_http_proxy_host_variable, 1,
          WEIR_HTTP_VAR_NOCACHEABLE },
        { weir_string("proxy_add_x_forwarded_for"),
          weir_http_proxy_add_x_forwarded_for_variable, 0,
          WEIR_HTTP_VAR_NOCACHEABLE },
        { weir_string("proxy_add_forwarded"),
          weir_http_proxy_add_forwarded_variable, 0,
          WEIR_HTTP_VAR_NOCACHEABLE },
        { weir_string("connection_upgrade"),
          weir_http_proxy_connection_upgrade_variable, 0, 0 },
        { weir_null_string, NULL, 0, 0 }
    };

    for (i = 0; vars[i].name.len; i++) {
        v = weir_http_add_variable(cf, &vars[i].name, vars[i].flags);
        if (v == NULL) {
            return WEIR_ERROR;
        }

        v->get_handler = vars[i].handler;
        v->data = vars[i].data;
    }

    return WEIR_OK;
}
