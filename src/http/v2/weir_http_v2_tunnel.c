#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_http.h"
#include "weir_http_v2.h"
#include "weir.h"

#include <sys/random.h>


/*
 * Tunnels over HTTP/2 streams. WebSocket (Extended CONNECT, RFC 8441):
 * the stream of a CONNECT with :protocol websocket becomes an HTTP/1.1
 * Upgrade request for the proxy. A plain CONNECT (RFC 9113 8.5, a
 * forward proxy's): the stream is the client end of a TCP tunnel. In
 * both, the client end of the upstream's tunnel (weir_http_tunnel_io_t)
 * reads and writes the stream's DATA. docs/dev/http2.md "WebSocket
 * tunnels".
 */

static weir_int_t weir_http_v2_tunnel_start(weir_http_request_t *r,
    weir_str_t *preread);
static ssize_t weir_http_v2_tunnel_recv(weir_http_request_t *r,
    unsigned char *buf, size_t size);
static ssize_t weir_http_v2_tunnel_send(weir_http_request_t *r,
    unsigned char *buf, size_t size);
static weir_int_t weir_http_v2_tunnel_half_close(weir_http_request_t *r);


const weir_http_tunnel_io_t  weir_http_v2_tunnel = {
    .start = weir_http_v2_tunnel_start,
    .recv = weir_http_v2_tunnel_recv,
    .send = weir_http_v2_tunnel_send,
    .half_close = weir_http_v2_tunnel_half_close,
    .pending = NULL
};

/*
 * A CONNECT with :protocol becomes the request an HTTP/1.1 WebSocket
 * origin expects (RFC 8441 5): GET, Upgrade: websocket, Connection:
 * upgrade and a fresh Sec-WebSocket-Key (an HTTP/2 client sends none);
 * the client's Sec-WebSocket-Version, -Protocol and -Extensions go on as
 * they are. WEIR_OK, or the status to refuse the stream with.
 */

weir_int_t
weir_http_v2_websocket(weir_http_v2_stream_t *st)
{
    size_t                i, j;
    uint32_t              x;
    weir_str_t            name, value;
    unsigned char         nonce[18], *key;
    weir_list_part_t     *part;
    weir_http_header_t   *h;
    weir_http_request_t  *r;

    static const char     b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                  "abcdefghijklmnopqrstuvwxyz0123456789+/";

    r = st->request;

    if (st->protocol.len != sizeof("websocket") - 1
        || weir_strncasecmp(st->protocol.data, (unsigned char *) "websocket",
                            st->protocol.len) != 0)
    {
        weir_log_error(WEIR_LOG_INFO, st->fc->log, 0,
                       "client sent Extended CONNECT with \":protocol\" "
                       "\"%.*s\": only \"websocket\" is supported",
                       WEIR_STR_ARG(st->protocol));
        return WEIR_HTTP_NOT_IMPLEMENTED;
    }

    /* a key the client should not have sent is not the one that goes */
    for (part = &r->headers_in.headers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (h[i].key.len == sizeof("sec-websocket-key") - 1
                && weir_memcmp(h[i].lowcase_key, "sec-websocket-key",
                               h[i].key.len) == 0)
            {
                h[i].hash = 0;
            }
        }
    }

    /* 16 random bytes in base64 (RFC 6455 4.1) */
    if (getrandom(nonce, 16, 0) != 16) {
        for (i = 0; i < 16; i++) {
            nonce[i] = (unsigned char) random();
        }
    }

    nonce[16] = 0;
    nonce[17] = 0;

    key = weir_pnalloc(r->pool, 25);
    if (key == NULL) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    for (i = 0, j = 0; i < 18; i += 3) {
        x = ((uint32_t) nonce[i] << 16) | ((uint32_t) nonce[i + 1] << 8)
            | nonce[i + 2];
        key[j++] = b64[(x >> 18) & 0x3f];
        key[j++] = b64[(x >> 12) & 0x3f];
        key[j++] = b64[(x >> 6) & 0x3f];
        key[j++] = b64[x & 0x3f];
    }

    /* 16 bytes: 22 characters and "==" */
    key[22] = '=';
    key[23] = '=';
    key[24] = '\0';

    weir_str_set(&name, "upgrade");
    weir_str_set(&value, "websocket");

    if (weir_http_v2_push_header(r, &name, &value) == NULL) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    weir_str_set(&name, "connection");
    weir_str_set(&value, "upgrade");

    if (weir_http_v2_push_header(r, &name, &value) == NULL) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    weir_str_set(&name, "sec-websocket-key");
    value.data = key;
    value.len = 24;

    if (weir_http_v2_push_header(r, &name, &value) == NULL) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    r->method = WEIR_HTTP_GET;
    weir_str_set(&r->method_name, "GET");
    st->websocket = 1;

    return WEIR_OK;
}


/*
 * A plain CONNECT (RFC 9113 8.5): no :scheme and no :path (nghttp2 has
 * checked), :authority is the target, host:port, as the authority-form
 * of HTTP/1.1 gives it: r->uri and r->unparsed_uri hold it, the host
 * and port pointers mark its parts.
 */

weir_int_t
weir_http_v2_connect_target(weir_http_v2_stream_t *st)
{
    size_t                len;
    unsigned char        *p, *last, *q, *colon;
    weir_http_request_t  *r;

    r = st->request;

    r->method_name = st->method;
    r->method = WEIR_HTTP_CONNECT;

    p = st->authority.data;
    last = p + st->authority.len;

    len = sizeof("CONNECT ") - 1 + st->authority.len
          + sizeof(" HTTP/2.0") - 1;

    r->request_line.data = weir_pnalloc(r->pool, len);
    if (r->request_line.data == NULL) {
        return WEIR_ERROR;
    }

    q = weir_cpymem(r->request_line.data, "CONNECT ", 8);
    q = weir_cpymem(q, st->authority.data, st->authority.len);
    q = weir_cpymem(q, " HTTP/2.0", sizeof(" HTTP/2.0") - 1);
    r->request_line.len = q - r->request_line.data;

    colon = NULL;

    for (q = p; q < last; q++) {
        if (*q == ':') {
            colon = q;

        } else if (*q == ']') {
            colon = NULL;

        } else if (*q <= 0x20 || *q == 0x7f || *q == '/' || *q == '?'
                   || *q == '#' || *q == '@')
        {
            break;
        }
    }

    if (q != last || colon == NULL || colon == p || colon + 1 == last) {
        weir_log_error(WEIR_LOG_INFO, st->fc->log, 0,
                       "client sent CONNECT with invalid \":authority\" "
                       "\"%.*s\"", WEIR_STR_ARG(st->authority));
        return WEIR_ERROR;
    }

    for (q = colon + 1; q < last; q++) {
        if (*q < '0' || *q > '9') {
            weir_log_error(WEIR_LOG_INFO, st->fc->log, 0,
                           "client sent CONNECT with invalid port in "
                           "\"%.*s\"", WEIR_STR_ARG(st->authority));
            return WEIR_ERROR;
        }
    }

    r->host_start = p;
    r->host_end = colon;
    r->port_start = colon + 1;
    r->port_end = last;

    r->uri = st->authority;
    r->unparsed_uri = st->authority;
    r->valid_unparsed_uri = 1;

    st->connect = 1;

    return WEIR_OK;
}


weir_uint_t
weir_http_v2_is_tunnel(weir_http_v2_conn_t *h2c, int32_t id)
{
    weir_http_v2_stream_t  *st;

    st = nghttp2_session_get_stream_user_data(h2c->session, id);

    return st != NULL && !st->done && weir_http_v2_tunnel_stream(st);
}


/*
 * A tunnel's stream ends with its request: the RST_STREAM code, or
 * (uint32_t) -1 when both sides ended it (our END_STREAM is out, the
 * client's came). The upstream ends a tunnel otherwise only when it was
 * idle past proxy_read_timeout, or a connection broke: the client's
 * stream (then closed, and not reset) or the origin's connection, reset
 * or cut. RFC 8441 5 maps the WebSocket's TCP closures onto the stream:
 * an orderly one is END_STREAM, a RST is RST_STREAM CANCEL (for
 * WebSocket this takes the place of RFC 9113 8.5's CONNECT_ERROR of a
 * plain CONNECT); an idle timeout is no failure either. INTERNAL_ERROR
 * is left for a failure of weir's own (fc->error).
 */

uint32_t
weir_http_v2_tunnel_reset_code(weir_http_v2_stream_t *st)
{
    if (st->last_queued && st->out == NULL && st->end_stream
        && !st->fc->error)
    {
        return (uint32_t) -1;
    }

    return st->fc->error ? NGHTTP2_INTERNAL_ERROR : NGHTTP2_CANCEL;
}


/*
 * The origin answered 101: the DATA kept so far is the tunnel's first
 * bytes (credited now), and from here on DATA goes to st->tun_in.
 */

static weir_int_t
weir_http_v2_tunnel_start(weir_http_request_t *r, weir_str_t *preread)
{
    size_t                  len;
    unsigned char          *p;
    weir_chain_t           *cl;
    weir_http_v2_conn_t    *h2c;
    weir_http_v2_stream_t  *st;

    st = r->stream;
    h2c = st->h2c;

    if (!weir_http_v2_tunnel_stream(st) || st->fc->error || st->closed) {
        return WEIR_DECLINED;
    }

    len = 0;

    for (cl = st->pre; cl; cl = cl->next) {
        len += cl->buf->last - cl->buf->pos;
    }

    preread->len = len;
    preread->data = NULL;

    if (len) {
        p = weir_pnalloc(r->pool, len);
        if (p == NULL) {
            return WEIR_ERROR;
        }

        preread->data = p;

        for (cl = st->pre; cl; cl = cl->next) {
            p = weir_cpymem(p, cl->buf->pos, cl->buf->last - cl->buf->pos);
        }

        (void) nghttp2_session_consume_stream(h2c->session, st->id, len);
        st->unconsumed -= len;
        weir_http_v2_post_write(h2c);
    }

    st->pre = NULL;

    st->tun_in = weir_create_temp_buf(r->pool, h2c->h2scf->stream_window);
    st->tun_out = weir_create_temp_buf(r->pool,
                                       weir_max(h2c->h2scf->chunk_size,
                                                16384));
    if (st->tun_in == NULL || st->tun_out == NULL) {
        return WEIR_ERROR;
    }

    st->tunnel = 1;
    st->rev.ready = 1;
    st->wev.ready = 1;

    return WEIR_OK;
}


static ssize_t
weir_http_v2_tunnel_recv(weir_http_request_t *r, unsigned char *buf,
    size_t size)
{
    size_t                  n;
    weir_buf_t             *b;
    weir_http_v2_stream_t  *st;

    st = r->stream;
    b = st->tun_in;

    if (st->fc->error) {
        return WEIR_ERROR;
    }

    n = b->last - b->pos;

    if (n == 0) {
        if (st->end_stream) {
            return 0;
        }

        st->rev.ready = 0;
        return WEIR_AGAIN;
    }

    if (n > size) {
        n = size;
    }

    weir_memcpy(buf, b->pos, n);
    b->pos += n;

    if (b->pos == b->last) {
        b->pos = b->start;
        b->last = b->start;
    }

    /* taken: the client may send as much again */
    (void) nghttp2_session_consume_stream(st->h2c->session, st->id, n);
    st->unconsumed -= n;
    weir_http_v2_post_write(st->h2c);

    return (ssize_t) n;
}


/* into st->tun_out, queued for the data provider; WEIR_AGAIN while it is
 * full (the stream's or the session's window, or the socket): read_data
 * wakes the tunnel when it takes some */

static ssize_t
weir_http_v2_tunnel_send(weir_http_request_t *r, unsigned char *buf,
    size_t size)
{
    size_t                  n;
    weir_buf_t             *b;
    weir_chain_t           *cl;
    weir_http_v2_stream_t  *st;

    st = r->stream;
    b = st->tun_out;

    if (st->fc->error || st->closed || st->last_queued) {
        return WEIR_ERROR;
    }

    if (st->out == NULL) {
        cl = weir_alloc_chain_link(r->pool, &st->free);
        if (cl == NULL) {
            return WEIR_ERROR;
        }

        b->pos = b->start;
        b->last = b->start;
        cl->buf = b;
        cl->next = NULL;
        st->out = cl;

    } else if (b->pos > b->start) {
        memmove(b->start, b->pos, b->last - b->pos);
        b->last = b->start + (b->last - b->pos);
        b->pos = b->start;
    }

    n = b->end - b->last;

    if (n == 0) {
        st->wev.ready = 0;
        return WEIR_AGAIN;
    }

    if (n > size) {
        n = size;
    }

    b->last = weir_cpymem(b->last, buf, n);

    if (st->data_deferred) {
        st->data_deferred = 0;
        (void) nghttp2_session_resume_data(st->h2c->session, st->id);
    }

    weir_http_v2_post_write(st->h2c);

    return (ssize_t) n;
}


/* END_STREAM after what is queued; WEIR_AGAIN until nghttp2 took it */

static weir_int_t
weir_http_v2_tunnel_half_close(weir_http_request_t *r)
{
    weir_buf_t             *b;
    weir_chain_t           *cl, **ll;
    weir_http_v2_stream_t  *st;

    st = r->stream;

    if (st->fc->error || st->closed) {
        return WEIR_ERROR;
    }

    if (!st->last_queued) {
        b = weir_calloc_buf(r->pool);
        cl = weir_alloc_chain_link(r->pool, &st->free);
        if (b == NULL || cl == NULL) {
            return WEIR_ERROR;
        }

        b->last_buf = 1;
        cl->buf = b;
        cl->next = NULL;

        for (ll = &st->out; *ll; ll = &(*ll)->next) { /* void */ }

        *ll = cl;
        st->last_queued = 1;

        if (st->data_deferred) {
            st->data_deferred = 0;
            (void) nghttp2_session_resume_data(st->h2c->session, st->id);
        }

        weir_http_v2_post_write(st->h2c);
    }

    if (st->out) {
        st->wev.ready = 0;
        return WEIR_AGAIN;
    }

    return WEIR_OK;
}
