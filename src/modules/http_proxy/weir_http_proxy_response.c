#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"
#include "weir_http_proxy_int.h"


/*
 * The proxy module (weir_http_proxy_module.c): the origin's response
 * head. Its status and headers go into r->headers_out, without the
 * hop-by-hop ones and those proxy_hide_header hides, with Location and
 * Refresh rewritten by proxy_redirect.
 */


/* ---- the response head ----------------------------------------------- */

/*
 * proxy_redirect over value, from offset prefix on (0 for Location, the
 * text after "url=" for Refresh). The first rule that matches wins.
 * Returns WEIR_OK (value replaced), WEIR_DECLINED (no rule matched) or
 * WEIR_ERROR.
 */
static weir_int_t
weir_http_proxy_rewrite(weir_http_request_t *r,
    weir_http_proxy_loc_conf_t *plcf, weir_str_t *value, size_t prefix)
{
    size_t                       len;
    weir_int_t                   rc;
    weir_str_t                   s, from, to;
    weir_uint_t                  i;
    unsigned char               *p;
    weir_http_proxy_redirect_t  *pr;

    if (plcf->redirects == NULL || plcf->redirects == WEIR_CONF_UNSET_PTR) {
        return WEIR_DECLINED;
    }

    s.data = value->data + prefix;
    s.len = value->len - prefix;

    pr = plcf->redirects->elts;

    for (i = 0; i < plcf->redirects->nelts; i++) {

        if (pr[i].regex) {
            rc = weir_http_regex_exec(r, pr[i].regex, &s);

            if (rc == WEIR_DECLINED) {
                continue;
            }

            if (rc != WEIR_OK) {
                return WEIR_ERROR;
            }

            len = s.len;    /* the whole value is replaced */

        } else {
            if (weir_http_complex_value(r, pr[i].from, &from) != WEIR_OK) {
                return WEIR_ERROR;
            }

            if (from.len > s.len
                || weir_strncasecmp(s.data, from.data, from.len) != 0)
            {
                continue;
            }

            len = from.len;
        }

        if (weir_http_complex_value(r, pr[i].to, &to) != WEIR_OK) {
            return WEIR_ERROR;
        }

        /* a variable may be decoded ($uri): never let it split the
         * response to the client */
        if (!weir_http_proxy_safe_value(&to)) {
            weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                           "the proxy_redirect replacement has a CR, LF or "
                           "NUL: not relayed");
            return WEIR_ERROR;
        }

        p = weir_pnalloc(r->pool, prefix + to.len + s.len - len);
        if (p == NULL) {
            return WEIR_ERROR;
        }

        value->data = p;    /* the old bytes stay where they are */
        p = weir_cpymem(p, s.data - prefix, prefix);
        p = weir_cpymem(p, to.data, to.len);
        p = weir_cpymem(p, s.data + len, s.len - len);
        value->len = p - value->data;

        return WEIR_OK;
    }

    return WEIR_DECLINED;
}


static weir_int_t
weir_http_proxy_rewrite_refresh(weir_http_request_t *r,
    weir_http_proxy_loc_conf_t *plcf, weir_str_t *value)
{
    size_t  i;

    /* "5; url=http://..." */

    for (i = 0; i + 4 <= value->len; i++) {
        if (weir_strncasecmp(value->data + i, (unsigned char *) "url=", 4)
            == 0)
        {
            return weir_http_proxy_rewrite(r, plcf, value, i + 4);
        }
    }

    return WEIR_DECLINED;
}


weir_int_t
weir_http_proxy_process_header(weir_http_request_t *r)
{
    weir_int_t                        rc;
    weir_uint_t                       i, hash;
    weir_str_t                        value;
    weir_list_part_t                 *part;
    weir_http_header_t               *h, *ho, *via;
    weir_http_upstream_t             *u;
    weir_http_proxy_loc_conf_t       *plcf;
    weir_http_upstream_headers_in_t  *hi;

    u = r->upstream;
    hi = &u->headers_in;
    plcf = weir_http_get_module_loc_conf(r, weir_http_proxy_module);

    r->headers_out.status = hi->status_n;
    r->headers_out.status_line = hi->status_line;

    via = NULL;

    part = &hi->headers.part;
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

        if (h[i].hash == 0 || h[i].lowcase_key == NULL) {
            continue;
        }

        /* framing is the client side's business */
        if (h[i].token == WEIR_HTTP_HDR_CONTENT_LENGTH
            || h[i].token == WEIR_HTTP_HDR_TRANSFER_ENCODING)
        {
            continue;
        }

        /* a 101's Upgrade names the protocol the client is switched to
         * (RFC 9110 7.8): it goes on, the rest of hop-by-hop does not */
        if (weir_http_upstream_hop_by_hop(&h[i], hi->connection)
            && !(h[i].token == WEIR_HTTP_HDR_UPGRADE
                 && hi->status_n == WEIR_HTTP_SWITCHING_PROTOCOLS))
        {
            continue;
        }

        /* the hash of lowcase_key, but 0 was stored as 1 (0 deletes) */
        hash = (h[i].hash != 1) ? h[i].hash
                                : weir_hash_key(h[i].lowcase_key, h[i].key.len);

        if (u->conf->hide_headers_hash.buckets
            && weir_hash_find(&u->conf->hide_headers_hash, hash,
                              h[i].lowcase_key, h[i].key.len))
        {
            continue;
        }

        if (h[i].token == WEIR_HTTP_HDR_CONTENT_TYPE) {
            r->headers_out.content_type = h[i].value;
            r->headers_out.content_type_len = h[i].value.len;
            r->headers_out.content_type_lowcase = NULL;
            weir_str_null(&r->headers_out.charset);
            continue;
        }

        ho = weir_list_push(&r->headers_out.headers);
        if (ho == NULL) {
            return WEIR_ERROR;
        }

        *ho = h[i];
        ho->hash = hash ? hash : 1;
        ho->next = NULL;

        switch (ho->token) {

        case WEIR_HTTP_HDR_LOCATION:
            rc = weir_http_proxy_rewrite(r, plcf, &ho->value, 0);
            if (rc == WEIR_ERROR) {
                return WEIR_ERROR;
            }

            /* as nginx: a path the origin sent stays as it is (not
             * linked, so absolute_redirect leaves it alone); one that
             * proxy_redirect made is linked and made absolute */
            if (rc == WEIR_OK
                || (ho->value.len && ho->value.data[0] != '/'))
            {
                r->headers_out.location = ho;
            }
            break;

        case WEIR_HTTP_HDR_REFRESH:
            rc = weir_http_proxy_rewrite_refresh(r, plcf, &ho->value);
            if (rc == WEIR_ERROR) {
                return WEIR_ERROR;
            }
            r->headers_out.refresh = ho;
            break;

        case WEIR_HTTP_HDR_LAST_MODIFIED:
            r->headers_out.last_modified = ho;
            r->headers_out.last_modified_time =
                weir_parse_http_time(ho->value.data, ho->value.len);
            break;

        case WEIR_HTTP_HDR_ETAG:
            r->headers_out.etag = ho;
            break;

        case WEIR_HTTP_HDR_SERVER:
            r->headers_out.server = ho;
            break;

        case WEIR_HTTP_HDR_DATE:
            r->headers_out.date = ho;
            break;

        case WEIR_HTTP_HDR_CONTENT_ENCODING:
            r->headers_out.content_encoding = ho;
            break;

        case WEIR_HTTP_HDR_CONTENT_RANGE:
            r->headers_out.content_range = ho;
            break;

        case WEIR_HTTP_HDR_ACCEPT_RANGES:
            r->headers_out.accept_ranges = ho;
            break;

        case WEIR_HTTP_HDR_WWW_AUTHENTICATE:
            if (r->headers_out.www_authenticate == NULL) {
                r->headers_out.www_authenticate = ho;
            }
            break;

        case WEIR_HTTP_HDR_EXPIRES:
            r->headers_out.expires = ho;
            break;

        case WEIR_HTTP_HDR_VIA:
            if (via == NULL) {
                via = ho;
            }
            break;

        default:
            break;
        }
    }

    if (plcf->via) {
        if (via) {
            if (weir_http_proxy_via_value(r->pool, &via->value,
                                          hi->http_version, &value)
                != WEIR_OK)
            {
                return WEIR_ERROR;
            }

            via->value = value;

        } else {
            if (weir_http_proxy_via_value(r->pool, NULL, hi->http_version,
                                          &value)
                != WEIR_OK)
            {
                return WEIR_ERROR;
            }

            if (weir_http_add_header_out(r, "Via", &value) == NULL) {
                return WEIR_ERROR;
            }
        }
    }

    r->headers_out.content_length_n = hi->chunked ? -1 : hi->content_length_n;

    if (u->req.method == WEIR_HTTP_HEAD && r->method != WEIR_HTTP_HEAD
        && hi->status_n != WEIR_HTTP_NO_CONTENT
        && hi->status_n != WEIR_HTTP_NOT_MODIFIED)
    {
        /*
         * proxy_method HEAD for a client that asked for a body: the
         * origin's length is that of a body it never sends, and relaying
         * it would make the client read its next response as this body
         */
        r->headers_out.content_length_n = 0;
    }

    r->expect_trailers = (hi->chunked && plcf->upstream.pass_trailers) ? 1 : 0;

    weir_log_debug(r->connection->log, 0, "proxy status %lu \"%.*s\"",
                   (unsigned long) hi->status_n,
                   WEIR_STR_ARG(hi->status_line));

    return WEIR_OK;
}


void
weir_http_proxy_finalize_request(weir_http_request_t *r, weir_int_t rc)
{
    weir_log_debug(r->connection->log, 0, "finalize proxy request: %ld",
                   (long) rc);

    (void) r;
    (void) rc;
}
