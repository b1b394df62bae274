#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_http.h"
#include "weir_http_v2.h"
#include "weir_http_v2_upstream.h"

#ifdef WEIR_HAVE_OPENSSL
#include <openssl/evp.h>
#endif

/*
 * HTTP/2 to origins: the session layer's second protocol (the first is
 * HTTP/1.1, which needs none). docs/dev/upstream.md, "Sessions".
 *
 * A session (weir_http_v2_up_t) is an nghttp2 client session on one
 * origin connection, owned by the session pool of the upstream core
 * (weir_http_upstream_session.c) and shared by the requests of the
 * worker. Each attempt of a request gets a stream (weir_http_v2_ups_t)
 * with a stream connection: fd -1, recv/writev/send that move the
 * stream's body bytes, read and write events that the session posts.
 * The upstream core reads and writes it as it reads and writes an
 * HTTP/1.1 origin connection, so buffering, relaying, timeouts and
 * retries are the core's, written once.
 *
 * Flow control is back-pressure on both sides. Response: nghttp2's
 * automatic WINDOW_UPDATE is off; DATA is queued on the stream and the
 * window is given back (nghttp2_session_consume) only when the core
 * takes the bytes with recv, which it does only when it has a buffer
 * free, which it has only when the client took the last ones. So a slow
 * client holds at most a stream window of the session's memory and
 * stalls no other stream. Request: the core's writes fill a bounded
 * queue that the stream's data provider empties as the origin's window
 * allows; a full queue is EAGAIN to the core, which then stops reading
 * the client's body.
 *
 * A WebSocket handshake from an HTTP/1.1 client (an Upgrade request the
 * location passes on) becomes an Extended CONNECT (RFC 8441): the
 * stream opens once the origin's SETTINGS allow it, its 2xx becomes the
 * client's 101, and the core's Upgrade tunnel moves the stream's DATA.
 * nghttp2's callbacks on what the origin sends are in
 * weir_http_v2_upstream_frames.c.
 */


static weir_int_t weir_http_v2_up_create_request(weir_http_upstream_t *u);
static weir_int_t weir_http_v2_up_websocket(weir_http_upstream_t *u,
    weir_http_v2_up_ctx_t *ctx);
static weir_int_t weir_http_v2_up_switch(weir_http_upstream_t *u,
    weir_http_v2_up_ctx_t *ctx);
static weir_int_t weir_http_v2_up_encode_body(weir_http_upstream_t *u,
    weir_chain_t *in, weir_chain_t **out);
static void weir_http_v2_up_reinit(weir_http_upstream_t *u);
static weir_int_t weir_http_v2_up_process_header(weir_http_upstream_t *u);
static void weir_http_v2_up_reinit_head(weir_http_upstream_t *u);
static weir_int_t weir_http_v2_up_input_filter_init(weir_http_upstream_t *u);
static weir_int_t weir_http_v2_up_input_filter(weir_http_upstream_t *u,
    weir_buf_t *b);
static weir_uint_t weir_http_v2_up_keepalive(weir_http_upstream_t *u);
static void weir_http_v2_up_request_done(weir_http_upstream_t *u);

static weir_http_upstream_session_t *weir_http_v2_up_create(
    weir_http_upstream_t *u, weir_connection_t *c);
static weir_connection_t *weir_http_v2_up_open_stream(
    weir_http_upstream_session_t *s, weir_http_upstream_t *u);
static void weir_http_v2_up_close_stream(weir_http_upstream_session_t *s,
    weir_connection_t *fc, weir_uint_t complete);
static weir_uint_t weir_http_v2_up_has_room(weir_http_upstream_session_t *s,
    weir_http_upstream_t *u);
static void weir_http_v2_up_close(weir_http_upstream_session_t *s);

static weir_int_t weir_http_v2_up_submit(weir_http_v2_ups_t *st);
static void weir_http_v2_up_ping(weir_http_v2_up_t *h2,
    weir_http_upstream_t *u);
static void weir_http_v2_up_ping_handler(weir_event_t *ev);
static void weir_http_v2_up_read_handler(weir_event_t *rev);
static void weir_http_v2_up_write_handler(weir_event_t *wev);
static void weir_http_v2_up_post_write(weir_http_v2_up_t *h2);
static void weir_http_v2_up_fail(weir_http_v2_up_t *h2, const char *reason);
static void weir_http_v2_up_check(weir_http_v2_up_t *h2);
static void weir_http_v2_up_free(weir_http_v2_up_t *h2);
static weir_int_t weir_http_v2_up_trailers(weir_http_v2_ups_t *st);

static ssize_t weir_http_v2_up_recv(weir_connection_t *c, unsigned char *buf,
    size_t size);
static ssize_t weir_http_v2_up_send(weir_connection_t *c, unsigned char *buf,
    size_t size);
static ssize_t weir_http_v2_up_writev(weir_connection_t *c, struct iovec *iov,
    int cnt);
static ssize_t weir_http_v2_up_read_data(nghttp2_session *session,
    int32_t stream_id, uint8_t *buf, size_t length, uint32_t *data_flags,
    nghttp2_data_source *source, void *user_data);



static weir_http_upstream_session_ops_t  weir_http_v2_up_session_ops = {
    weir_http_v2_up_create,
    weir_http_v2_up_open_stream,
    weir_http_v2_up_close_stream,
    weir_http_v2_up_has_room,
    weir_http_v2_up_close
};


weir_http_upstream_proto_t  weir_http_v2_upstream_proto = {
    weir_string("h2"),
    80,
    weir_http_v2_up_create_request,
    weir_http_v2_up_encode_body,
    weir_http_v2_up_reinit,
    weir_http_v2_up_process_header,
    weir_http_v2_up_reinit_head,
    weir_http_v2_up_input_filter_init,
    weir_http_v2_up_input_filter,
    weir_http_v2_up_keepalive,
    &weir_http_v2_up_session_ops,
    weir_http_v2_up_request_done,
    1
};


/* ---- the request ---------------------------------------------------- */

static weir_uint_t
weir_http_v2_up_bad_value(weir_str_t *v)
{
    size_t  i;

    for (i = 0; i < v->len; i++) {
        if (v->data[i] == '\r' || v->data[i] == '\n' || v->data[i] == '\0') {
            return 1;
        }
    }

    return 0;
}


static void
weir_http_v2_up_nv(nghttp2_nv *nv, const char *name, size_t nlen,
    weir_str_t *value)
{
    nv->name = (uint8_t *) name;
    nv->namelen = nlen;
    nv->value = value->data;
    nv->valuelen = value->len;
    nv->flags = NGHTTP2_NV_FLAG_NONE;
}


/*
 * u->req as HEADERS: the four pseudo-headers (":authority" from the
 * Host that proxy_set_header produced), then the header list, names
 * lowercased, hop-by-hop names dropped ("te" only as "trailers", which
 * gRPC needs), "content-length" for a body of known length. nghttp2
 * copies none of it: the array and the strings live in r->pool for
 * every attempt.
 */

static weir_int_t
weir_http_v2_up_create_request(weir_http_upstream_t *u)
{
    size_t                  n;
    weir_uint_t             i;
    weir_str_t             *len;
    static weir_str_t       te = weir_string("trailers");
    nghttp2_nv             *nv;
    weir_list_part_t       *part;
    weir_http_header_t     *h;
    weir_http_request_t    *r;
    weir_http_v2_up_ctx_t  *ctx;

    r = u->request;

    ctx = weir_pcalloc(r->pool, sizeof(weir_http_v2_up_ctx_t));
    if (ctx == NULL) {
        return WEIR_ERROR;
    }

    u->proto_ctx = ctx;

    if (u->req.upgrade && weir_http_v2_up_websocket(u, ctx) != WEIR_OK) {
        return WEIR_ERROR;
    }

    if (u->req.uri.len == 0 || weir_http_v2_up_bad_value(&u->req.uri)
        || weir_http_v2_up_bad_value(&u->req.authority))
    {
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "invalid URI or Host for the HTTP/2 upstream");
        return WEIR_ERROR;
    }

    n = 7;

    part = &u->req.headers.part;

    for ( ; part; part = part->next) {
        n += part->nelts;
    }

    nv = weir_palloc(r->pool, n * sizeof(nghttp2_nv));
    if (nv == NULL) {
        return WEIR_ERROR;
    }

    ctx->nva = nv;

    weir_http_v2_up_nv(nv++, ":method", 7, &u->req.method_name);
    weir_http_v2_up_nv(nv++, ":scheme", 7, &u->req.method_name);
    weir_http_v2_up_nv(nv++, ":authority", 10, &u->req.authority);
    weir_http_v2_up_nv(nv++, ":path", 5, &u->req.uri);

    /* the scheme of the connection to the origin */
    nv[-3].value = (uint8_t *) (u->ssl ? "https" : "http");
    nv[-3].valuelen = u->ssl ? 5 : 4;

    if (ctx->websocket) {
        nv[-4].value = (uint8_t *) "CONNECT";
        nv[-4].valuelen = 7;
        nv->name = (uint8_t *) ":protocol";
        nv->namelen = 9;
        nv->value = (uint8_t *) "websocket";
        nv->valuelen = 9;
        nv->flags = NGHTTP2_NV_FLAG_NONE;
        nv++;
    }

    part = &u->req.headers.part;
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

        if (h[i].hash == 0 || h[i].value.len == 0) {
            continue;
        }

        if (weir_http_upstream_hop_by_hop(&h[i], NULL)
                   || (h[i].key.len == 4
                       && weir_strncasecmp(h[i].key.data,
                                           (unsigned char *) "host", 4) == 0)
                   || (h[i].key.len == 14
                       && weir_strncasecmp(h[i].key.data,
                              (unsigned char *) "content-length", 14) == 0)
                   || (ctx->websocket && h[i].value.data == ctx->ws_key.data))
        {
            /* (an HTTP/2 WebSocket has no Sec-WebSocket-Key: weir
             * answers the client's, RFC 8441 5) */
            continue;
        }

        if (weir_http_v2_up_bad_value(&h[i].value)) {
            weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                           "invalid value of header \"%.*s\" for the "
                           "HTTP/2 upstream", WEIR_STR_ARG(h[i].key));
            return WEIR_ERROR;
        }

        nv->name = weir_pnalloc(r->pool, h[i].key.len);
        if (nv->name == NULL) {
            return WEIR_ERROR;
        }

        weir_strlow(nv->name, h[i].key.data, h[i].key.len);
        nv->namelen = h[i].key.len;
        nv->value = h[i].value.data;
        nv->valuelen = h[i].value.len;
        nv->flags = NGHTTP2_NV_FLAG_NONE;
        nv++;
    }

    if (r->headers_in.te
        && weir_http_list_has_token(&r->headers_in.te->value,
                                    (unsigned char *) "trailers", 8))
    {
        /* the client takes trailers (gRPC needs the origin told): the
         * one TE value HTTP/2 allows, hop-by-hop as TE is */
        weir_http_v2_up_nv(nv++, "te", 2, &te);
    }

    if (u->req.has_body && u->req.body_length >= 0) {
        len = weir_palloc(r->pool, sizeof(weir_str_t));
        if (len == NULL) {
            return WEIR_ERROR;
        }

        len->data = weir_pnalloc(r->pool, WEIR_INT_T_LEN);
        if (len->data == NULL) {
            return WEIR_ERROR;
        }

        len->len = weir_slprintf(len->data, len->data + WEIR_INT_T_LEN,
                                 "%lld", (long long) u->req.body_length)
                   - len->data;
        weir_http_v2_up_nv(nv++, "content-length", 14, len);
    }

    ctx->nvlen = nv - ctx->nva;

    /* nothing for the core to write before the body: the stream's
     * HEADERS go when it is opened */
    u->request_bufs = NULL;

    return WEIR_OK;
}


/*
 * An Upgrade request the location passes on. A WebSocket handshake (GET
 * with "Upgrade: websocket", a Sec-WebSocket-Key and no body) goes as an
 * Extended CONNECT (RFC 8441 5); any other Upgrade is left out, as an
 * origin may ignore one (RFC 9110 7.8), and the request goes as it is.
 */

static weir_int_t
weir_http_v2_up_websocket(weir_http_upstream_t *u, weir_http_v2_up_ctx_t *ctx)
{
    weir_uint_t          i;
    weir_str_t          *upgrade, *key;
    weir_list_part_t    *part;
    weir_http_header_t  *h;

    upgrade = NULL;
    key = NULL;

    part = &u->req.headers.part;
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

        if (h[i].key.len == sizeof("upgrade") - 1
            && weir_strncasecmp(h[i].key.data, (unsigned char *) "upgrade",
                                h[i].key.len) == 0)
        {
            upgrade = &h[i].value;

        } else if (h[i].key.len == sizeof("sec-websocket-key") - 1
                   && weir_strncasecmp(h[i].key.data,
                                       (unsigned char *) "sec-websocket-key",
                                       h[i].key.len) == 0)
        {
            key = &h[i].value;
        }
    }

    u->req.upgrade = 0;

    if (upgrade == NULL || key == NULL || key->len == 0
        || upgrade->len != sizeof("websocket") - 1
        || weir_strncasecmp(upgrade->data, (unsigned char *) "websocket",
                            upgrade->len) != 0
        || u->req.method != WEIR_HTTP_GET || u->req.has_body)
    {
        weir_log_error(WEIR_LOG_INFO, u->request->connection->log, 0,
                       "an Upgrade other than a WebSocket handshake is not "
                       "passed to an HTTP/2 upstream");
        return WEIR_OK;
    }

#ifdef WEIR_HAVE_OPENSSL
    u->req.upgrade = 1;
    ctx->websocket = 1;
    ctx->ws_key = *key;

    return WEIR_OK;
#else
    (void) ctx;

    weir_log_error(WEIR_LOG_ERR, u->request->connection->log, 0,
                   "a WebSocket to an HTTP/2 upstream needs weir built "
                   "with OpenSSL (for Sec-WebSocket-Accept)");
    return WEIR_ERROR;
#endif
}


/* the body passes as it is (HTTP/2 frames it), counted against its
 * length */

static weir_int_t
weir_http_v2_up_encode_body(weir_http_upstream_t *u, weir_chain_t *in,
    weir_chain_t **out)
{
    off_t                   size;
    weir_chain_t           *cl, *ln, **ll;
    weir_http_v2_up_ctx_t  *ctx;

    ctx = u->proto_ctx;

    for (ll = out; *ll; ll = &(*ll)->next) { /* void */ }

    for (cl = in; cl; cl = cl->next) {
        if (!weir_buf_special(cl->buf)) {
            size = weir_buf_size(cl->buf);

            if (u->req.body_length >= 0
                && size > u->req.body_length - ctx->framed)
            {
                weir_log_error(WEIR_LOG_ERR, u->request->connection->log, 0,
                               "client sent more body than Content-Length: "
                               "%lld bytes", (long long) u->req.body_length);
                return WEIR_ERROR;
            }

            ctx->framed += size;
        }

        ln = weir_alloc_chain_link(u->request->pool, NULL);
        if (ln == NULL) {
            return WEIR_ERROR;
        }

        ln->buf = cl->buf;
        *ll = ln;
        ll = &ln->next;
    }

    *ll = NULL;

    return WEIR_OK;
}


static void
weir_http_v2_up_reinit(weir_http_upstream_t *u)
{
    weir_http_v2_up_ctx_t  *ctx;

    ctx = u->proto_ctx;
    ctx->framed = 0;

    weir_http_v2_up_reinit_head(u);
}


static void
weir_http_v2_up_request_done(weir_http_upstream_t *u)
{
    weir_http_v2_ups_t     *st;
    weir_http_v2_up_ctx_t  *ctx;

    ctx = u->proto_ctx;
    st = ctx->stream;

    /* a WebSocket's request is done when the tunnel's client side is */
    if (st == NULL || st->body_eof
        || (ctx->websocket ? !u->upgrade : !u->req.has_body))
    {
        return;
    }

    st->body_eof = 1;

    if (st->deferred && !st->closed && st->h2->session) {
        st->deferred = 0;
        (void) nghttp2_session_resume_data(st->h2->session, st->id);
        weir_http_v2_up_post_write(st->h2);
    }
}


/* ---- the response --------------------------------------------------- */

static weir_int_t
weir_http_v2_up_process_header(weir_http_upstream_t *u)
{
    weir_log_t             *log;
    weir_http_v2_ups_t     *st;
    weir_http_v2_uphead_t  *head;
    weir_http_v2_up_ctx_t  *ctx;

    ctx = u->proto_ctx;
    st = ctx->stream;
    log = u->request->connection->log;

    if (st == NULL) {
        return WEIR_HTTP_UPSTREAM_CLOSED;
    }

    head = st->heads;

    if (head == NULL) {
        if (!st->failed && !st->closed && !st->end_in) {
            st->rev.ready = 0;
            return WEIR_AGAIN;
        }

        if (st->invalid) {
            /* logged when nghttp2 refused it */
            return WEIR_HTTP_UPSTREAM_INVALID_HEADER;
        }

        if (st->error_code == NGHTTP2_REFUSED_STREAM) {
            u->unprocessed = 1;
            weir_log_error(WEIR_LOG_INFO, log, 0,
                           "upstream refused the HTTP/2 stream");

        } else if (st->error_code != NGHTTP2_NO_ERROR) {
            weir_log_error(WEIR_LOG_ERR, log, 0,
                           "upstream reset the HTTP/2 stream: %s",
                           nghttp2_http2_strerror(st->error_code));

        } else {
            weir_log_error(WEIR_LOG_ERR, log, 0,
                           "upstream prematurely closed the HTTP/2 stream");
        }

        return WEIR_HTTP_UPSTREAM_CLOSED;
    }

    st->heads = head->next;

    if (st->heads == NULL) {
        st->last_head = &st->heads;
    }

    u->headers_in = head->hi;

    /* the lists' last part pointed into head */
    if (head->hi.headers.last == &head->hi.headers.part) {
        u->headers_in.headers.last = &u->headers_in.headers.part;
    }

    u->headers_in.trailers.last = &u->headers_in.trailers.part;
    u->headers_in.http_version = WEIR_HTTP_VERSION_20;

    if (u->headers_in.status_n < 200) {
        if (u->headers_in.status_n == WEIR_HTTP_SWITCHING_PROTOCOLS) {
            weir_log_error(WEIR_LOG_ERR, log, 0,
                           "upstream sent 101 over HTTP/2");
            return WEIR_HTTP_UPSTREAM_INVALID_HEADER;
        }

        return WEIR_HTTP_UPSTREAM_INTERIM;
    }

    st->final_head = 1;

    if (ctx->websocket && u->headers_in.status_n / 100 == 2) {
        return weir_http_v2_up_switch(u, ctx);
    }

    if (st->end_in && st->in == NULL && st->heads == NULL
        && !st->has_trailers)
    {
        /* the head ended the stream (gRPC's "trailers-only" answer): an
         * empty body, so that an HTTP/2 client gets the head with
         * END_STREAM and an HTTP/1.1 one "Content-Length: 0" */
        u->headers_in.content_length_n = 0;
    }

    if ((u->req.method & WEIR_HTTP_HEAD)
        || u->headers_in.status_n == WEIR_HTTP_NO_CONTENT
        || u->headers_in.status_n == WEIR_HTTP_NOT_MODIFIED)
    {
        u->headers_in.no_body = 1;
    }

    return WEIR_OK;
}


/*
 * The origin took the Extended CONNECT: for the HTTP/1.1 client, a 101
 * with "Upgrade: websocket" and the Sec-WebSocket-Accept of its key
 * (RFC 6455 4.2.2); the core's Upgrade tunnel does the rest.
 */

static weir_int_t
weir_http_v2_up_switch(weir_http_upstream_t *u, weir_http_v2_up_ctx_t *ctx)
{
#ifdef WEIR_HAVE_OPENSSL
    size_t                            i;
    weir_uint_t                       hash;
    unsigned int                      len;
    unsigned char                    *p, md[EVP_MAX_MD_SIZE];
    weir_http_header_t               *h;
    weir_http_upstream_headers_in_t  *hi;
    static const char                 guid[] =
                                      "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    static const char                *names[] = { "upgrade",
                                                  "sec-websocket-accept" };

    hi = &u->headers_in;

    p = weir_pnalloc(u->request->pool, ctx->ws_key.len + sizeof(guid) + 32);
    if (p == NULL) {
        return WEIR_ERROR;
    }

    weir_memcpy(weir_cpymem(p, ctx->ws_key.data, ctx->ws_key.len), guid,
                sizeof(guid) - 1);

    if (EVP_Digest(p, ctx->ws_key.len + sizeof(guid) - 1, md, &len,
                   EVP_sha1(), NULL) == 0 || len != 20)
    {
        weir_log_error(WEIR_LOG_ALERT, u->request->connection->log, 0,
                       "EVP_Digest(SHA-1) failed");
        return WEIR_ERROR;
    }

    /* the 28 characters of base64 after the key: p's spare room */
    p += ctx->ws_key.len;
    (void) EVP_EncodeBlock(p, md, 20);

    for (i = 0; i < 2; i++) {
        h = weir_list_push(&hi->headers);
        if (h == NULL) {
            return WEIR_ERROR;
        }

        h->key.data = (unsigned char *) names[i];
        h->key.len = weir_strlen(names[i]);
        h->lowcase_key = h->key.data;
        hash = weir_hash_key(h->key.data, h->key.len);
        h->hash = hash ? hash : 1;
        h->token = weir_http_header_token(h->lowcase_key, h->key.len, hash);
        h->next = NULL;

        if (i == 0) {
            weir_str_set(&h->value, "websocket");
            hi->upgrade = h;

        } else {
            h->value.data = p;
            h->value.len = 28;
        }
    }

    hi->status_n = WEIR_HTTP_SWITCHING_PROTOCOLS;
    weir_str_null(&hi->status_line);
    hi->content_length_n = -1;

    return WEIR_OK;
#else
    (void) u;
    (void) ctx;

    return WEIR_ERROR;
#endif
}


static void
weir_http_v2_up_reinit_head(weir_http_upstream_t *u)
{
    weir_memzero(&u->headers_in, sizeof(weir_http_upstream_headers_in_t));
    u->headers_in.content_length_n = -1;
}


static weir_int_t
weir_http_v2_up_input_filter_init(weir_http_upstream_t *u)
{
    if (u->headers_in.no_body) {
        u->length = 0;

    } else {
        u->length = u->headers_in.content_length_n;
    }

    return WEIR_OK;
}


/* DATA, as the stream connection's recv gave it: all of it is body */

static weir_int_t
weir_http_v2_up_input_filter(weir_http_upstream_t *u, weir_buf_t *b)
{
    weir_http_v2_ups_t     *st;
    weir_http_v2_up_ctx_t  *ctx;

    ctx = u->proto_ctx;
    st = ctx->stream;

    if (b) {
        if (b->pos < b->last && !u->body_done) {
            if (weir_http_upstream_emit(u, b, b->pos, b->last) != WEIR_OK) {
                return WEIR_ERROR;
            }

            if (u->length > 0) {
                /* what is still to come, as for HTTP/1.1 (nghttp2 holds
                 * the origin to its content-length) */
                u->length -= weir_min(u->length, (off_t) (b->last - b->pos));
            }
        }

        b->pos = b->last;
        return WEIR_OK;
    }

    /* the end of the stream: the body is complete only with END_STREAM
     * (nghttp2 checked content-length against the DATA received) */

    if (st == NULL || st->failed || !st->end_in) {
        return WEIR_ERROR;
    }

    if (u->body_done) {
        return WEIR_OK;
    }

    if (st->has_trailers) {
        u->headers_in.trailers = st->trailers;

        if (st->trailers.last == &st->trailers.part) {
            u->headers_in.trailers.last = &u->headers_in.trailers.part;
        }
    }

    return weir_http_upstream_emit_last(u);
}


static weir_uint_t
weir_http_v2_up_keepalive(weir_http_upstream_t *u)
{
    weir_http_v2_ups_t     *st;
    weir_http_v2_up_ctx_t  *ctx;

    ctx = u->proto_ctx;
    st = ctx->stream;

    return st && st->end_in && !st->failed;
}


/* ---- the stream connection ------------------------------------------ */

/*
 * A block for the stream's queues: a recycled one, or a new one from the
 * request's pool, small (from the pool's current block, no malloc) when
 * what is to go in is small, as a tiny response's whole body is.
 */

static weir_chain_t *
weir_http_v2_up_block(weir_http_v2_ups_t *st, size_t want)
{
    size_t         size;
    weir_chain_t  *cl;

    if (st->free) {
        cl = st->free;
        st->free = cl->next;
        cl->next = NULL;
        cl->buf->pos = cl->buf->start;
        cl->buf->last = cl->buf->start;
        return cl;
    }

    cl = weir_alloc_chain_link(st->upstream->request->pool, NULL);
    if (cl == NULL) {
        return NULL;
    }

    size = (want <= WEIR_HTTP_V2_UP_SMALL_BLOCK) ? WEIR_HTTP_V2_UP_SMALL_BLOCK
                                                : WEIR_HTTP_V2_UP_BLOCK;

    cl->buf = weir_create_temp_buf(st->upstream->request->pool, size);
    if (cl->buf == NULL) {
        return NULL;
    }

    cl->next = NULL;

    return cl;
}


/*
 * A stream's two queues (the origin's DATA for the core, the core's
 * request body for the data provider) are chains of blocks from
 * weir_http_v2_up_block: put appends len bytes, take copies out up to
 * size and recycles the blocks it empties.
 */

weir_int_t
weir_http_v2_up_put(weir_http_v2_ups_t *st, weir_chain_t **head,
    weir_chain_t ***last, const void *data, size_t len)
{
    size_t         n;
    weir_chain_t  *cl;
    const char    *p;

    p = data;

    while (len) {
        cl = (*head && *last != head)
             ? weir_queue_data(*last, weir_chain_t, next) : NULL;

        if (cl == NULL || cl->buf->last == cl->buf->end) {
            cl = weir_http_v2_up_block(st, len);
            if (cl == NULL) {
                return WEIR_ERROR;
            }

            **last = cl;
            *last = &cl->next;
        }

        n = weir_min(len, (size_t) (cl->buf->end - cl->buf->last));
        cl->buf->last = weir_cpymem(cl->buf->last, p, n);
        p += n;
        len -= n;
    }

    return WEIR_OK;
}


static size_t
weir_http_v2_up_take(weir_http_v2_ups_t *st, weir_chain_t **head,
    weir_chain_t ***last, unsigned char *buf, size_t size)
{
    size_t         n, len;
    weir_chain_t  *cl;

    n = 0;

    while (*head && n < size) {
        cl = *head;
        len = weir_min(size - n, (size_t) (cl->buf->last - cl->buf->pos));
        buf = weir_cpymem(buf, cl->buf->pos, len);
        cl->buf->pos += len;
        n += len;

        if (cl->buf->pos == cl->buf->last) {
            *head = cl->next;

            if (*head == NULL) {
                *last = head;
            }

            cl->next = st->free;
            st->free = cl;
        }
    }

    return n;
}


static ssize_t
weir_http_v2_up_recv(weir_connection_t *c, unsigned char *buf, size_t size)
{
    size_t               n;
    weir_http_v2_ups_t  *st;

    st = weir_http_v2_up_stream_of(c);

    n = weir_http_v2_up_take(st, &st->in, &st->last_in, buf, size);

    if (n) {
        st->in_bytes -= n;

        if (st->h2->session && !st->closed) {
            /* the window opens as the core takes the bytes */
            (void) nghttp2_session_consume(st->h2->session, st->id, n);
            weir_http_v2_up_post_write(st->h2);

        } else if (st->h2->session) {
            (void) nghttp2_session_consume_connection(st->h2->session, n);
            weir_http_v2_up_post_write(st->h2);
        }

        return n;
    }

    if (st->failed) {
        c->read->error = 1;
        errno = WEIR_ECONNRESET;
        return WEIR_ERROR;
    }

    if (st->end_in) {
        c->read->eof = 1;
        return 0;
    }

    if (st->closed) {
        /* closed without END_STREAM from the origin */
        c->read->error = 1;
        errno = WEIR_ECONNRESET;
        return WEIR_ERROR;
    }

    c->read->ready = 0;

    return WEIR_AGAIN;
}


static ssize_t
weir_http_v2_up_send(weir_connection_t *c, unsigned char *buf, size_t size)
{
    struct iovec  iov;

    iov.iov_base = buf;
    iov.iov_len = size;

    return weir_http_v2_up_writev(c, &iov, 1);
}


static ssize_t
weir_http_v2_up_writev(weir_connection_t *c, struct iovec *iov, int cnt)
{
    int                  i;
    size_t               n, room, len;
    weir_http_v2_ups_t  *st;

    st = weir_http_v2_up_stream_of(c);

    if (st->failed || st->closed || st->h2->session == NULL) {
        c->write->error = 1;
        errno = WEIR_EPIPE;
        return WEIR_ERROR;
    }

    n = 0;

    for (i = 0; i < cnt; i++) {
        room = WEIR_HTTP_V2_UP_SEND_QUEUE - st->out_bytes;
        len = weir_min(iov[i].iov_len, room);

        if (len == 0) {
            break;
        }

        if (weir_http_v2_up_put(st, &st->out, &st->last_out,
                                iov[i].iov_base, len)
            != WEIR_OK)
        {
            return WEIR_ERROR;
        }

        n += len;
        st->out_bytes += len;

        if (len < iov[i].iov_len) {
            break;
        }
    }

    if (n == 0) {
        c->write->ready = 0;
        return WEIR_AGAIN;
    }

    if (st->out_bytes == WEIR_HTTP_V2_UP_SEND_QUEUE) {
        c->write->ready = 0;
    }

    if (st->deferred) {
        st->deferred = 0;
        (void) nghttp2_session_resume_data(st->h2->session, st->id);
    }

    weir_http_v2_up_post_write(st->h2);

    return n;
}


/* the request body to nghttp2, as the origin's window allows */

static ssize_t
weir_http_v2_up_read_data(nghttp2_session *session, int32_t stream_id,
    uint8_t *buf, size_t length, uint32_t *data_flags,
    nghttp2_data_source *source, void *user_data)
{
    size_t               n;
    weir_http_v2_ups_t  *st;

    (void) session;
    (void) stream_id;
    (void) user_data;

    st = source->ptr;

    if (st == NULL) {
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }

    n = weir_http_v2_up_take(st, &st->out, &st->last_out, buf, length);

    st->out_bytes -= n;
    st->sent += n;

    if (n && !st->wev.ready) {
        /* room again: the core writes more */
        st->wev.ready = 1;
        weir_http_v2_up_wake(st, 1);
    }

    if (st->out == NULL && st->body_eof) {
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;

        if (weir_http_v2_up_trailers(st) == WEIR_OK) {
            /* the trailers' HEADERS ends the stream */
            *data_flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        }

        return n;
    }

    if (n == 0) {
        st->deferred = 1;
        return NGHTTP2_ERR_DEFERRED;
    }

    return n;
}


/*
 * The request trailers (u->req.send_trailers: a streamed body with
 * trailers from an HTTP/1.1 chunked or HTTP/2 client) as a HEADERS that
 * ends the stream: names lowercased, framing and hop-by-hop ones and
 * pseudo-headers dropped. WEIR_OK: submitted; WEIR_DECLINED: none to
 * send (or they could not go: logged), the DATA ends the stream.
 */

static weir_int_t
weir_http_v2_up_trailers(weir_http_v2_ups_t *st)
{
    int                    rv;
    size_t                 n;
    weir_uint_t            i;
    nghttp2_nv            *nv;
    weir_list_part_t      *part;
    weir_http_header_t    *h;
    weir_http_request_t   *r;
    weir_http_upstream_t  *u;

    u = st->upstream;
    r = u->request;

    if (!u->req.send_trailers || r->headers_in.trailers.last == NULL) {
        return WEIR_DECLINED;
    }

    n = 0;

    for (part = &r->headers_in.trailers.part; part; part = part->next) {
        n += part->nelts;
    }

    if (n == 0) {
        return WEIR_DECLINED;
    }

    nv = weir_palloc(r->pool, n * sizeof(nghttp2_nv));
    if (nv == NULL) {
        return WEIR_DECLINED;
    }

    n = 0;
    part = &r->headers_in.trailers.part;
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

        if (h[i].hash == 0 || h[i].key.len == 0 || h[i].key.data[0] == ':'
            || weir_http_upstream_hop_by_hop(&h[i], NULL)
            || h[i].token == WEIR_HTTP_HDR_CONTENT_LENGTH
            || h[i].token == WEIR_HTTP_HDR_HOST)
        {
            continue;
        }

        if (weir_http_v2_up_bad_value(&h[i].value)) {
            weir_log_error(WEIR_LOG_ERR, st->conn.log, 0,
                           "invalid request trailer \"%.*s\" for the "
                           "HTTP/2 upstream: not sent",
                           WEIR_STR_ARG(h[i].key));
            return WEIR_DECLINED;
        }

        nv[n].name = weir_pnalloc(r->pool, h[i].key.len);
        if (nv[n].name == NULL) {
            return WEIR_DECLINED;
        }

        weir_strlow(nv[n].name, h[i].key.data, h[i].key.len);
        nv[n].namelen = h[i].key.len;
        nv[n].value = h[i].value.data;
        nv[n].valuelen = h[i].value.len;
        nv[n].flags = NGHTTP2_NV_FLAG_NONE;
        n++;
    }

    if (n == 0) {
        return WEIR_DECLINED;
    }

    rv = nghttp2_submit_trailer(st->h2->session, st->id, nv, n);

    if (rv != 0) {
        weir_log_error(WEIR_LOG_ERR, st->conn.log, 0,
                       "nghttp2_submit_trailer() failed: %s",
                       nghttp2_strerror(rv));
        return WEIR_DECLINED;
    }

    return WEIR_OK;
}


/* post the stream's event for the core (its handler runs after this
 * pass of the session's callbacks) */

void
weir_http_v2_up_wake(weir_http_v2_ups_t *st, weir_uint_t write)
{
    weir_event_t  *ev;

    ev = write ? &st->wev : &st->rev;
    ev->ready = 1;

    if (!ev->posted && st->conn.data) {
        weir_post_event(ev, &weir_posted_events);
    }
}


/* ---- the session ---------------------------------------------------- */

static weir_http_upstream_session_t *
weir_http_v2_up_create(weir_http_upstream_t *u, weir_connection_t *c)
{
    int                     rv;
    weir_log_t             *log;
    nghttp2_option         *opt;
    weir_http_v2_up_t      *h2;
    nghttp2_settings_entry  iv[3];

    log = u->request->connection->log;

    if (u->ssl && !u->origin_h2) {
        weir_log_error(WEIR_LOG_ERR, log, 0,
                       "upstream did not choose \"h2\" with ALPN");
        return NULL;
    }

    if (weir_http_v2_up_init_callbacks() != WEIR_OK) {
        return NULL;
    }

    h2 = weir_calloc(sizeof(weir_http_v2_up_t), log);
    if (h2 == NULL) {
        return NULL;
    }

    if (nghttp2_option_new(&opt) != 0) {
        weir_free(h2);
        return NULL;
    }

    /* the window is given back as the client takes the bytes */
    nghttp2_option_set_no_auto_window_update(opt, 1);
    /* until the origin's SETTINGS say otherwise */
    nghttp2_option_set_peer_max_concurrent_streams(opt, 100);
    nghttp2_option_set_max_outbound_ack(opt, WEIR_HTTP_V2_UP_MAX_ACKS);
    nghttp2_option_set_max_settings(opt, WEIR_HTTP_V2_UP_MAX_SETTINGS);

    rv = nghttp2_session_client_new3(&h2->session, weir_http_v2_up_callbacks,
                                     h2, opt, weir_http_v2_mem());
    nghttp2_option_del(opt);

    if (rv != 0) {
        weir_log_error(WEIR_LOG_ERR, log, 0,
                       "nghttp2_session_client_new() failed: %s",
                       nghttp2_strerror(rv));
        weir_free(h2);
        return NULL;
    }

    iv[0].settings_id = NGHTTP2_SETTINGS_ENABLE_PUSH;
    iv[0].value = 0;
    iv[1].settings_id = NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE;
    iv[1].value = WEIR_HTTP_V2_UP_STREAM_WINDOW;
    iv[2].settings_id = NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE;
    iv[2].value = (uint32_t) u->conf->buffer_size;

    if (nghttp2_submit_settings(h2->session, NGHTTP2_FLAG_NONE, iv, 3) != 0
        || nghttp2_session_set_local_window_size(h2->session,
               NGHTTP2_FLAG_NONE, 0, WEIR_HTTP_V2_UP_CONN_WINDOW) != 0)
    {
        nghttp2_session_del(h2->session);
        weir_free(h2);
        return NULL;
    }

    h2->connection = c;
    h2->send_timeout = u->conf->send_timeout;
    h2->recv_size = 16384;
    h2->idle_since = weir_current_msec;
    weir_queue_init(&h2->streams);

    /* the session outlives the request: its own log, the cycle's */
    c->data = h2;
    c->log = weir_cycle->log;
    c->read->log = c->log;
    c->write->log = c->log;
    c->pool->log = c->log;
    c->read->handler = weir_http_v2_up_read_handler;
    c->write->handler = weir_http_v2_up_write_handler;
    c->sendfile = 0;

    if (c->read->timer_set) {
        weir_event_del_timer(c->read);
    }

    if (c->write->timer_set) {
        weir_event_del_timer(c->write);
    }

    weir_log_debug(log, 0, "upstream HTTP/2 session *%lu",
                   (unsigned long) c->number);

    weir_http_v2_up_post_write(h2);

    return &h2->s;
}


static weir_connection_t *
weir_http_v2_up_open_stream(weir_http_upstream_session_t *s,
    weir_http_upstream_t *u)
{
    weir_connection_t      *fc, *c;
    weir_http_v2_up_t      *h2;
    weir_http_v2_ups_t     *st;
    weir_http_request_t    *r;
    weir_http_v2_up_ctx_t  *ctx;

    h2 = (weir_http_v2_up_t *) s;
    r = u->request;
    ctx = u->proto_ctx;
    c = h2->connection;

    st = weir_pcalloc(r->pool, sizeof(weir_http_v2_ups_t));
    if (st == NULL) {
        return NULL;
    }

    st->h2 = h2;
    st->upstream = u;
    st->last_head = &st->heads;
    st->last_in = &st->in;
    st->last_out = &st->out;

    fc = &st->conn;
    fc->read = &st->rev;
    fc->write = &st->wev;
    fc->fd = (weir_fd_t) -1;
    fc->recv = weir_http_v2_up_recv;
    fc->send = weir_http_v2_up_send;
    fc->writev = weir_http_v2_up_writev;
    fc->pool = r->pool;
    fc->log = r->connection->log;
    fc->number = c->number;
    fc->sockaddr = c->sockaddr;
    fc->socklen = c->socklen;
    fc->start_time = weir_current_msec;
    fc->sendfile = 0;
    fc->tcp_nodelay = WEIR_TCP_NODELAY_DISABLED;

    st->rev.data = fc;
    st->rev.log = fc->log;
    st->rev.active = 1;
    st->rev.index = WEIR_INVALID_INDEX;

    st->wev.data = fc;
    st->wev.log = fc->log;
    st->wev.write = 1;
    st->wev.active = 1;
    st->wev.ready = 1;
    st->wev.index = WEIR_INVALID_INDEX;

    if (ctx->websocket && !h2->settings_in) {
        /* an Extended CONNECT waits for the origin's SETTINGS to allow
         * it (RFC 8441 3) */
        st->waiting = 1;

    } else if (weir_http_v2_up_submit(st) != WEIR_OK) {
        return NULL;
    }

    ctx->stream = st;

    if (h2->nstreams == 0) {
        weir_http_v2_up_ping(h2, u);
    }

    weir_queue_insert_tail(&h2->streams, &st->queue);
    h2->nstreams++;

    weir_http_v2_up_post_write(h2);

    return fc;
}


/* the stream's HEADERS, with a data provider for a body or a tunnel */

static weir_int_t
weir_http_v2_up_submit(weir_http_v2_ups_t *st)
{
    int32_t                 id;
    weir_log_t             *log;
    weir_http_upstream_t   *u;
    weir_http_v2_up_ctx_t  *ctx;
    nghttp2_data_provider   prd, *dp;

    u = st->upstream;
    ctx = u->proto_ctx;
    log = u->request->connection->log;

    if (ctx->websocket
        && nghttp2_session_get_remote_settings(st->h2->session,
               NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL) == 0)
    {
        weir_log_error(WEIR_LOG_ERR, log, 0,
                       "upstream does not take WebSocket over HTTP/2: its "
                       "SETTINGS have no ENABLE_CONNECT_PROTOCOL "
                       "(RFC 8441)");
        return WEIR_ERROR;
    }

    dp = NULL;

    if (u->req.has_body || ctx->websocket) {
        prd.source.ptr = st;
        prd.read_callback = weir_http_v2_up_read_data;
        dp = &prd;
    }

    id = nghttp2_submit_request(st->h2->session, NULL, ctx->nva, ctx->nvlen,
                                dp, st);
    if (id < 0) {
        weir_log_error(WEIR_LOG_ERR, log, 0,
                       "nghttp2_submit_request() failed: %s",
                       nghttp2_strerror(id));
        return WEIR_ERROR;
    }

    st->id = id;

    return WEIR_OK;
}


/* the origin's first SETTINGS came: the Extended CONNECTs that waited
 * for it go, or fail (502) if it does not allow them */

void
weir_http_v2_up_submit_waiting(weir_http_v2_up_t *h2)
{
    weir_queue_t        *q;
    weir_http_v2_ups_t  *st;

    for (q = weir_queue_head(&h2->streams);
         q != weir_queue_sentinel(&h2->streams);
         q = weir_queue_next(q))
    {
        st = weir_queue_data(q, weir_http_v2_ups_t, queue);

        if (!st->waiting) {
            continue;
        }

        st->waiting = 0;

        if (!st->failed && weir_http_v2_up_submit(st) != WEIR_OK) {
            /* logged: the core answers 502 */
            st->invalid = 1;
            st->failed = 1;
            weir_http_v2_up_wake(st, 0);
        }
    }

    weir_http_v2_up_post_write(h2);
}


static void
weir_http_v2_up_close_stream(weir_http_upstream_session_t *s,
    weir_connection_t *fc, weir_uint_t complete)
{
    weir_http_v2_up_t      *h2;
    weir_http_v2_ups_t     *st;
    weir_http_v2_up_ctx_t  *ctx;

    h2 = (weir_http_v2_up_t *) s;
    st = weir_http_v2_up_stream_of(fc);

    weir_http_v2_events_done(&st->rev, &st->wev);

    fc->data = NULL;

    if (h2->session) {
        if (!st->closed && !st->waiting) {
            /* complete but still open: the request body is not all sent
             * (an early response) */
            (void) nghttp2_submit_rst_stream(h2->session, NGHTTP2_FLAG_NONE,
                       st->id, complete ? NGHTTP2_NO_ERROR : NGHTTP2_CANCEL);
            (void) nghttp2_session_set_stream_user_data(h2->session, st->id,
                                                        NULL);
        }

        if (st->in_bytes) {
            /* DATA the core never took: the connection's credit back */
            (void) nghttp2_session_consume_connection(h2->session,
                                                      st->in_bytes);
            st->in_bytes = 0;
        }

        weir_http_v2_up_post_write(h2);
    }

    ctx = st->upstream->proto_ctx;

    if (ctx && ctx->stream == st) {
        ctx->stream = NULL;
    }

    weir_queue_remove(&st->queue);

    if (--h2->nstreams == 0) {
        h2->idle_since = weir_current_msec;
    }

    if (h2->s.pool == NULL && h2->nstreams == 0) {
        /* out of the pool (drained, failed, not kept idle): done */
        weir_http_v2_up_close(&h2->s);
    }
}


static weir_uint_t
weir_http_v2_up_has_room(weir_http_upstream_session_t *s,
    weir_http_upstream_t *u)
{
    uint32_t            max;
    weir_http_v2_up_t  *h2;

    h2 = (weir_http_v2_up_t *) s;

    if (h2->dead || h2->goaway || h2->session == NULL) {
        return 0;
    }

    max = nghttp2_session_get_remote_settings(h2->session,
              NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);

    max = weir_min(max, (uint32_t) u->conf->http2_max_streams);

    return h2->nstreams < max
           && nghttp2_session_get_next_stream_id(h2->session) < 0x7fffff00;
}


/* the pool lets s go: a GOAWAY, and the connection closes once no stream
 * is left */

static void
weir_http_v2_up_close(weir_http_upstream_session_t *s)
{
    weir_http_v2_up_t  *h2;

    h2 = (weir_http_v2_up_t *) s;

    s->draining = 1;

    if (h2->session && !h2->goaway && !h2->dead) {
        h2->goaway = 1;
        (void) nghttp2_submit_goaway(h2->session, NGHTTP2_FLAG_NONE,
                                     0, NGHTTP2_NO_ERROR, NULL, 0);
    }

    if (h2->nstreams) {
        return;
    }

    if (h2->session && !h2->dead && !h2->in_handler) {
        /* the GOAWAY goes if the socket takes it now */
        (void) weir_http_v2_wire_flush(&h2->wire, h2->session,
                                       h2->connection, h2->send_timeout, 1);
    }

    weir_http_v2_up_free(h2);
}


/* closes the socket and frees the session once nothing refers to it */

static void
weir_http_v2_up_free(weir_http_v2_up_t *h2)
{
    weir_pool_t        *pool;
    weir_connection_t  *c;

    if (h2->in_handler) {
        h2->dead = 1;
        return;
    }

    if (!h2->closed) {
        h2->closed = 1;
        c = h2->connection;
        pool = c->pool;

        weir_log_debug(c->log, 0, "upstream HTTP/2 session *%lu closed",
                       (unsigned long) c->number);

        weir_close_connection(c);

        if (pool) {
            weir_destroy_pool(pool);
        }
    }

    if (h2->session) {
        nghttp2_session_del(h2->session);
        h2->session = NULL;
    }

    if (h2->ping.timer_set) {
        weir_event_del_timer(&h2->ping);
    }

    weir_http_v2_wire_free(&h2->wire);

    if (h2->s.pool) {
        weir_http_upstream_session_drain(&h2->s);
    }

    if (h2->nstreams == 0) {
        weir_free(h2);
    }
}


/*
 * A session idle for proxy_http2_ping_idle or more that takes a stream
 * again sends a PING with it: an origin (or a middlebox) may have
 * dropped the connection without a word. Without an answer (any frame)
 * within proxy_connect_timeout the session fails, and its streams are
 * retried on a fresh connection as on a stale kept-alive one.
 */

static void
weir_http_v2_up_ping(weir_http_v2_up_t *h2, weir_http_upstream_t *u)
{
    if (u->conf->http2_ping_idle == 0 || h2->ping_out || h2->dead
        || h2->session == NULL
        || weir_current_msec - h2->idle_since < u->conf->http2_ping_idle)
    {
        return;
    }

    if (nghttp2_submit_ping(h2->session, NGHTTP2_FLAG_NONE, NULL) != 0) {
        return;
    }

    h2->ping_out = 1;
    h2->ping.data = h2;
    h2->ping.handler = weir_http_v2_up_ping_handler;
    h2->ping.log = weir_cycle->log;
    h2->ping.cancelable = 1;

    weir_event_add_timer(&h2->ping, u->conf->connect_timeout);
}


static void
weir_http_v2_up_ping_handler(weir_event_t *ev)
{
    weir_http_v2_up_t  *h2;

    h2 = ev->data;
    h2->ping_out = 0;

    weir_http_v2_up_fail(h2, "no answer to a PING after an idle time");
    weir_http_v2_up_check(h2);
}


/* the connection failed: every stream ends with an error now */

static void
weir_http_v2_up_fail(weir_http_v2_up_t *h2, const char *reason)
{
    weir_queue_t        *q;
    weir_http_v2_ups_t  *st;

    if (h2->dead) {
        return;
    }

    h2->dead = 1;
    h2->s.broken = 1;

    /* an idle session an origin closes, or one that ends after a
     * GOAWAY, is no news */
    weir_log_error((h2->nstreams && !h2->goaway) ? WEIR_LOG_ERR
                                                 : WEIR_LOG_INFO,
                   weir_cycle->log, 0, "upstream HTTP/2 session *%lu: %s",
                   (unsigned long) h2->connection->number, reason);

    weir_http_upstream_session_drain(&h2->s);

    for (q = weir_queue_head(&h2->streams);
         q != weir_queue_sentinel(&h2->streams);
         q = weir_queue_next(q))
    {
        st = weir_queue_data(q, weir_http_v2_ups_t, queue);

        if (!st->closed) {
            st->failed = 1;
        }

        weir_http_v2_up_wake(st, 0);
        weir_http_v2_up_wake(st, 1);
    }
}


static void
weir_http_v2_up_read_handler(weir_event_t *rev)
{
    ssize_t             n, rv;
    size_t              total;
    unsigned char      *buf;
    weir_connection_t  *c;
    weir_http_v2_up_t  *h2;

    c = rev->data;
    h2 = c->data;

    if (h2->dead || h2->session == NULL) {
        return;
    }

    if (c->close) {
        /* the worker shuts down or lacks connections */
        c->close = 0;

        if (h2->nstreams == 0) {
            weir_http_upstream_session_drain(&h2->s);
            weir_http_v2_up_close(&h2->s);
            return;
        }

        weir_http_upstream_session_drain(&h2->s);
    }

    buf = weir_http_v2_recv_buffer(h2->recv_size, c->log);
    if (buf == NULL) {
        weir_http_v2_up_fail(h2, "no memory");
        goto done;
    }

    total = 0;
    h2->in_handler = 1;

    for ( ;; ) {

        if (!rev->ready && c->ssl && c->ssl->ops->pending(c)) {
            rev->ready = 1;
        }

        if (!rev->ready) {
            break;
        }

        if (total >= 8 * h2->recv_size) {
            weir_post_event(rev, &weir_posted_next_events);
            break;
        }

        n = c->recv(c, buf, h2->recv_size);

        if (n == WEIR_AGAIN) {
            break;
        }

        if (n == 0 || n == WEIR_ERROR) {
            h2->in_handler = 0;
            weir_http_v2_up_fail(h2, n == 0 ? "closed by the upstream"
                                            : "recv() failed");
            goto done;
        }

        total += n;

        if (h2->ping_out) {
            /* anything from the origin says it is there */
            h2->ping_out = 0;

            if (h2->ping.timer_set) {
                weir_event_del_timer(&h2->ping);
            }
        }

        rv = nghttp2_session_mem_recv(h2->session, buf, (size_t) n);

        if (rv < 0) {
            h2->in_handler = 0;
            weir_http_v2_up_fail(h2, nghttp2_strerror((int) rv));
            goto done;
        }

        if (h2->dead) {
            break;
        }
    }

    h2->in_handler = 0;

    if (!h2->dead && weir_handle_read_event(rev, 0) != WEIR_OK) {
        weir_http_v2_up_fail(h2, "cannot wait for reading");
    }

done:

    weir_http_v2_up_post_write(h2);
    weir_http_v2_up_check(h2);
}


static void
weir_http_v2_up_post_write(weir_http_v2_up_t *h2)
{
    weir_event_t  *wev;

    if (h2->wire.posted || h2->wire.blocked || h2->closed) {
        return;
    }

    wev = h2->connection->write;

    if (wev->posted) {
        return;
    }

    h2->wire.posted = 1;
    weir_post_event(wev, &weir_posted_events);
}


static void
weir_http_v2_up_write_handler(weir_event_t *wev)
{
    weir_connection_t  *c;
    weir_http_v2_up_t  *h2;

    c = wev->data;
    h2 = c->data;

    h2->wire.posted = 0;

    if (h2->dead || h2->session == NULL) {
        weir_http_v2_up_check(h2);
        return;
    }

    if (wev->timedout) {
        weir_http_v2_up_fail(h2, "send timed out");
        weir_http_v2_up_check(h2);
        return;
    }

    h2->in_handler = 1;

    if (weir_http_v2_wire_flush(&h2->wire, h2->session, c, h2->send_timeout,
                                h2->nstreams == 0)
        == WEIR_ERROR)
    {
        h2->in_handler = 0;
        weir_http_v2_up_fail(h2, "send failed");
        weir_http_v2_up_check(h2);
        return;
    }

    h2->in_handler = 0;

    weir_http_v2_up_check(h2);
}


/* after the callbacks: a session nghttp2 is done with, or a dead one
 * without streams, goes */

static void
weir_http_v2_up_check(weir_http_v2_up_t *h2)
{
    if (h2->in_handler) {
        return;
    }

    if (!h2->dead && h2->session
        && !nghttp2_session_want_read(h2->session)
        && !nghttp2_session_want_write(h2->session))
    {
        weir_http_v2_up_fail(h2, "session ended");
    }

    if (h2->dead && !h2->closed) {
        if (h2->nstreams == 0) {
            weir_http_v2_up_free(h2);
            return;
        }

        /* the streams' requests end with their errors; the socket goes
         * now, the memory with the last stream */
        h2->dead = 1;
        weir_http_v2_up_free(h2);
    }
}
