#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_http.h"
#include "weir_http_v2.h"
#include "weir.h"

/*
 * HTTP/2 streams: each is one weir request on a fake connection of its
 * own (fd -1, events marked active so the event module never registers
 * them, its own log, c->ssl the session's), so that the core, the
 * upstream and every module use r->connection's events, timers,
 * buffered, error and log as they do for HTTP/1. The stream produces
 * the neutral request from HEADERS and consumes the response through
 * weir_http_v2_proto. docs/dev/http2.md.
 */


static weir_http_v2_stream_t *weir_http_v2_stream_alloc(
    weir_http_v2_conn_t *h2c);
static void weir_http_v2_header_timeout(weir_event_t *ev);
static void weir_http_v2_empty_handler(weir_event_t *ev);
static void weir_http_v2_abort(weir_http_v2_stream_t *st);
static void weir_http_v2_process_request(weir_http_v2_stream_t *st);
static weir_int_t weir_http_v2_request_target(weir_http_v2_stream_t *st);
static weir_int_t weir_http_v2_join_cookies(weir_http_v2_stream_t *st);
static weir_int_t weir_http_v2_authority_port(weir_http_v2_stream_t *st,
    weir_str_t *a);
static weir_uint_t weir_http_v2_same_authority(weir_http_v2_stream_t *st,
    weir_str_t *host);
static ssize_t weir_http_v2_fake_recv(weir_connection_t *c,
    unsigned char *buf, size_t size);
static ssize_t weir_http_v2_fake_send(weir_connection_t *c,
    unsigned char *buf, size_t size);
static ssize_t weir_http_v2_fake_writev(weir_connection_t *c,
    struct iovec *iov, int cnt);
static ssize_t weir_http_v2_read_data(nghttp2_session *session,
    int32_t stream_id, uint8_t *buf, size_t length, uint32_t *data_flags,
    nghttp2_data_source *source, void *user_data);
static weir_int_t weir_http_v2_headers_nv(weir_http_request_t *r,
    weir_list_t *list, nghttp2_nv *nv, weir_uint_t *n, weir_uint_t max);

static weir_int_t weir_http_v2_send_header(weir_http_request_t *r);
static weir_int_t weir_http_v2_send_body(weir_http_request_t *r,
    weir_chain_t *in);
static weir_int_t weir_http_v2_read_body(weir_http_request_t *r);
static weir_int_t weir_http_v2_discard_body(weir_http_request_t *r);
static weir_int_t weir_http_v2_send_continue(weir_http_request_t *r);
static weir_int_t weir_http_v2_send_interim(weir_http_request_t *r,
    weir_uint_t status, weir_list_t *headers);
static void weir_http_v2_request_done(weir_http_request_t *r,
    weir_int_t rc);

static weir_int_t weir_http_v2_body_put(weir_http_v2_stream_t *st,
    const unsigned char *data, size_t len);
static weir_int_t weir_http_v2_body_deliver(weir_http_v2_stream_t *st,
    weir_uint_t last);
static weir_int_t weir_http_v2_body_finish(weir_http_v2_stream_t *st);
static void weir_http_v2_read_body_handler(weir_http_request_t *r);
static weir_uint_t weir_http_v2_body_received(weir_http_request_t *r);
static weir_uint_t weir_http_v2_trailers_allowed(weir_http_request_t *r);
static weir_int_t weir_http_v2_test_closed(weir_http_request_t *r,
    weir_err_t *err);


/*
 * A stream with this much queued is written at once (send_body) rather
 * than at the end of the pass: its producer's buffers (an upstream's
 * proxy_buffers) are copied out and free again before it reads more.
 * Less than that (a small response, the end of a body) waits for the
 * end of the pass, so that the frames of many streams share a writev.
 */
#define WEIR_HTTP_V2_WRITE_NOW  (16 * 1024)


/*
 * location_config: nothing of the transport depends on a location;
 * tunnel: the stream of an Extended CONNECT :protocol websocket (start
 * declines any other).
 */
weir_http_proto_t  weir_http_v2_proto = {
    .name = "HTTP/2",
    .send_header = weir_http_v2_send_header,
    .send_body = weir_http_v2_send_body,
    .read_body = weir_http_v2_read_body,
    .read_unbuffered = weir_http_v2_read_unbuffered,
    .discard_body = weir_http_v2_discard_body,
    .body_received = weir_http_v2_body_received,
    .send_continue = weir_http_v2_send_continue,
    .send_interim = weir_http_v2_send_interim,
    .test_closed = weir_http_v2_test_closed,
    .location_config = NULL,
    .trailers_allowed = weir_http_v2_trailers_allowed,
    .tunnel = &weir_http_v2_tunnel,
    .request_done = weir_http_v2_request_done
};


#define weir_http_v2_nv(nv, k, klen, v, vlen)                                 \
    do {                                                                      \
        (nv)->name = (uint8_t *) (k);                                         \
        (nv)->namelen = (klen);                                               \
        (nv)->value = (uint8_t *) (v);                                        \
        (nv)->valuelen = (vlen);                                              \
        (nv)->flags = NGHTTP2_NV_FLAG_NONE;                                   \
    } while (0)


/* the three digits of :status (status % 1000, zero-padded); returns the
 * byte after them. A formatter call cost ~740 instructions a response. */
static u_char *
weir_http_v2_status_digits(u_char *p, weir_uint_t status)
{
    status %= 1000;
    p[0] = (u_char) ('0' + status / 100);
    p[1] = (u_char) ('0' + status / 10 % 10);
    p[2] = (u_char) ('0' + status % 10);
    return p + 3;
}


static weir_http_v2_stream_t *
weir_http_v2_stream_alloc(weir_http_v2_conn_t *h2c)
{
    weir_http_v2_stream_t  *st;

    st = h2c->free_streams;

    if (st) {
        h2c->free_streams = st->next_free;

    } else {
        st = weir_palloc(h2c->connection->pool,
                         sizeof(weir_http_v2_stream_t));
        if (st == NULL) {
            return NULL;
        }
    }

    weir_memzero(st, sizeof(weir_http_v2_stream_t));

    return st;
}


static void
weir_http_v2_empty_handler(weir_event_t *ev)
{
    (void) ev;
}


int
weir_http_v2_on_begin_headers(nghttp2_session *session,
    const nghttp2_frame *frame, void *user_data)
{
    int                         rv;
    weir_connection_t          *c, *fc;
    weir_http_request_t        *r;
    weir_http_v2_conn_t        *h2c = user_data;
    weir_http_v2_stream_t      *st;
    weir_http_connection_t     *hc;

    if (frame->hd.type != NGHTTP2_HEADERS
        || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
    {
        return 0;
    }

    rv = weir_http_v2_refuse_stream(h2c, frame->hd.stream_id);
    if (rv != 0) {
        return rv < 0 ? rv : 0;
    }

    c = h2c->connection;
    hc = h2c->http_connection;

    st = weir_http_v2_stream_alloc(h2c);
    if (st == NULL) {
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }

    st->h2c = h2c;
    st->id = frame->hd.stream_id;

    /* the fake connection */

    fc = &st->conn;
    st->fc = fc;

    fc->data = hc;
    fc->read = &st->rev;
    fc->write = &st->wev;
    fc->fd = (weir_fd_t) -1;
    fc->recv = weir_http_v2_fake_recv;
    fc->send = weir_http_v2_fake_send;
    fc->writev = weir_http_v2_fake_writev;
    fc->ssl = c->ssl;
    fc->listening = c->listening;
    fc->type = c->type;
    fc->sockaddr = c->sockaddr;
    fc->socklen = c->socklen;
    fc->addr_text = c->addr_text;
    /* the stream cannot ask the kernel (fd -1): the session asks once,
     * if its listener is a wildcard, and every stream copies it */
    (void) weir_connection_local_sockaddr(c);
    fc->local_sockaddr = c->local_sockaddr;
    fc->local_socklen = c->local_socklen;
    fc->number = c->number;
    fc->start_time = weir_current_msec;
    fc->requests = h2c->nrequests;
    fc->log_error = c->log_error;
    fc->sendfile = 0;
    fc->tcp_nodelay = WEIR_TCP_NODELAY_DISABLED;

    st->log = *c->log;
    st->log_ctx = *(weir_http_log_ctx_t *) c->log->data;
    st->log_ctx.connection = fc;
    st->log_ctx.request = NULL;
    st->log_ctx.current_request = NULL;
    st->log.data = &st->log_ctx;
    st->log.action = "reading HTTP/2 request headers";
    fc->log = &st->log;

    st->rev.data = fc;
    st->rev.log = fc->log;
    st->rev.active = 1;
    st->rev.handler = weir_http_v2_header_timeout;
    st->rev.index = WEIR_INVALID_INDEX;

    st->wev.data = fc;
    st->wev.log = fc->log;
    st->wev.write = 1;
    st->wev.active = 1;
    st->wev.ready = 1;
    st->wev.handler = weir_http_v2_empty_handler;
    st->wev.index = WEIR_INVALID_INDEX;

    r = weir_http_create_request(fc, hc);
    if (r == NULL) {
        st->next_free = h2c->free_streams;
        h2c->free_streams = st;
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }

    fc->data = r;
    fc->pool = r->pool;

    r->stream = st;
    r->proto = &weir_http_v2_proto;
    r->http_version = WEIR_HTTP_VERSION_20;
    weir_str_set(&r->http_protocol, "HTTP/2.0");

    st->request = r;

    weir_queue_insert_tail(&h2c->streams, &st->queue);
    h2c->nstreams++;
    h2c->nrequests++;

    if (c->read->timer_set) {
        weir_event_del_timer(c->read);
    }

    (void) nghttp2_session_set_stream_user_data(session, st->id, st);

    /* the whole header block within client_header_timeout */
    weir_event_add_timer(&st->rev, h2c->header_timeout);

    if (h2c->nrequests >= h2c->keepalive_requests && !h2c->goaway_final) {
        /* keepalive_requests: this is the last stream of the session */
        weir_log_error(WEIR_LOG_INFO, c->log, 0,
                       "HTTP/2 keepalive_requests (%lu) reached: GOAWAY",
                       (unsigned long) h2c->keepalive_requests);
        h2c->goaway_final = 1;
        (void) nghttp2_submit_goaway(session, NGHTTP2_FLAG_NONE, st->id,
                                     NGHTTP2_NO_ERROR, NULL, 0);
    }

    return 0;
}


/* the header block did not end in time (client_header_timeout) */

static void
weir_http_v2_header_timeout(weir_event_t *ev)
{
    weir_connection_t      *fc;
    weir_http_request_t    *r;
    weir_http_v2_stream_t  *st;

    fc = ev->data;
    r = fc->data;
    st = r->stream;

    if (!ev->timedout) {
        return;
    }

    ev->timedout = 0;

    weir_log_error(WEIR_LOG_INFO, fc->log, WEIR_ETIMEDOUT,
                   "client timed out (HTTP/2 request headers)");

    (void) nghttp2_submit_rst_stream(st->h2c->session, NGHTTP2_FLAG_NONE,
                                     st->id, NGHTTP2_CANCEL);
    weir_http_v2_post_write(st->h2c);

    fc->timedout = 1;
    fc->error = 1;
    r->logged = 1;
    weir_http_finalize_request(r, WEIR_HTTP_REQUEST_TIME_OUT);
}


int
weir_http_v2_on_header(nghttp2_session *session, const nghttp2_frame *frame,
    const uint8_t *name, size_t namelen, const uint8_t *value,
    size_t valuelen, uint8_t flags, void *user_data)
{
    weir_str_t                  n, v, *pseudo;
    weir_http_request_t        *r;
    weir_http_header_t         *h;
    weir_http_v2_stream_t      *st;
    weir_http_core_srv_conf_t  *cscf;

    (void) flags;
    (void) user_data;

    st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);

    if (st == NULL || st->done || st->bad_status) {
        return 0;
    }

    r = st->request;

    if (st->headers_done) {
        /* request trailers: kept in headers_in.trailers */
        n.data = weir_pnalloc(r->pool, namelen + valuelen + 1);
        if (n.data == NULL) {
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        }

        weir_memcpy(n.data, name, namelen);
        n.len = namelen;
        v.data = n.data + namelen;
        weir_memcpy(v.data, value, valuelen);
        v.len = valuelen;

        h = weir_list_push(&r->headers_in.trailers);
        if (h == NULL) {
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        }

        h->hash = weir_hash_key(n.data, n.len);
        h->token = WEIR_HTTP_HDR_UNKNOWN;
        h->key = n;
        h->value = v;
        h->lowcase_key = n.data;
        h->next = NULL;

        return 0;
    }

    cscf = weir_http_get_module_srv_conf(r, weir_http_core_module);

    /* the limits of HTTP/1 heads, as nginx applies them to HTTP/2 */

    if (namelen + valuelen > cscf->large_client_header_buffers.size) {
        weir_log_error(WEIR_LOG_INFO, st->fc->log, 0,
                       "client sent too long header field "
                       "(large_client_header_buffers): \"%.*s...\"",
                       (int) (namelen > 32 ? 32 : namelen),
                       (const char *) name);
        st->bad_status = WEIR_HTTP_REQUEST_HEADER_TOO_LARGE;
        return 0;
    }

    /* as SETTINGS_MAX_HEADER_LIST_SIZE counts (RFC 9113 6.5.2) */
    st->header_bytes += namelen + valuelen + 32;

    if (st->header_bytes > cscf->large_client_header_buffers.size
                           * cscf->large_client_header_buffers.num)
    {
        weir_log_error(WEIR_LOG_INFO, st->fc->log, 0,
                       "client sent too large header list (more than "
                       "large_client_header_buffers)");
        st->bad_status = WEIR_HTTP_REQUEST_HEADER_TOO_LARGE;
        return 0;
    }

    if (++st->nheaders > cscf->max_headers) {
        weir_log_error(WEIR_LOG_INFO, st->fc->log, 0,
                       "client sent too many header lines "
                       "(client_max_headers)");
        st->bad_status = WEIR_HTTP_REQUEST_HEADER_TOO_LARGE;
        return 0;
    }

    /* nghttp2 has checked the rest of RFC 9113 8.2 and 8.3: lowercase
     * names, no CR/LF/NUL, no connection-specific field, TE only
     * "trailers", pseudo-headers once, known and before the others */

    v.data = weir_pnalloc(r->pool, valuelen + 1);
    if (v.data == NULL) {
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }

    weir_memcpy(v.data, value, valuelen);
    v.data[valuelen] = '\0';
    v.len = valuelen;

    if (namelen && name[0] == ':') {
        pseudo = NULL;

        if (namelen == 7 && weir_memcmp(name, ":method", 7) == 0) {
            pseudo = &st->method;

        } else if (namelen == 5 && weir_memcmp(name, ":path", 5) == 0) {
            pseudo = &st->path;

        } else if (namelen == 7 && weir_memcmp(name, ":scheme", 7) == 0) {
            pseudo = &st->scheme;

        } else if (namelen == 10
                   && weir_memcmp(name, ":authority", 10) == 0)
        {
            pseudo = &st->authority;

        } else if (namelen == 9 && weir_memcmp(name, ":protocol", 9) == 0) {
            /* nghttp2 let it through only with CONNECT (RFC 8441 4) */
            pseudo = &st->protocol;
        }

        if (pseudo) {
            *pseudo = v;
        }

        return 0;
    }

    n.data = weir_pnalloc(r->pool, namelen + 1);
    if (n.data == NULL) {
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }

    weir_memcpy(n.data, name, namelen);
    n.data[namelen] = '\0';
    n.len = namelen;

    if (namelen == 6 && weir_memcmp(name, "cookie", 6) == 0) {
        /* crumbs (RFC 9113 8.2.3): joined with "; " at the end */
        h = weir_pcalloc(r->pool, sizeof(weir_http_header_t));
        if (h == NULL) {
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        }

        h->key = n;
        h->value = v;
        h->next = st->cookies;
        st->cookies = h;

        return 0;
    }

    if (weir_http_v2_push_header(r, &n, &v) == NULL) {
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }

    return 0;
}


/* a header of the request with its token; its handler runs later */

weir_http_header_t *
weir_http_v2_push_header(weir_http_request_t *r, weir_str_t *name,
    weir_str_t *value)
{
    weir_http_header_t  *h;

    h = weir_list_push(&r->headers_in.headers);
    if (h == NULL) {
        return NULL;
    }

    h->key = *name;
    h->value = *value;
    h->lowcase_key = name->data;
    h->hash = weir_hash_key(name->data, name->len);

    if (h->hash == 0) {
        h->hash = 1;
    }

    h->token = weir_http_header_token(name->data, name->len,
                                      weir_hash_key(name->data, name->len));
    h->next = NULL;

    return h;
}


int
weir_http_v2_on_frame_recv_stream(weir_http_v2_conn_t *h2c,
    const nghttp2_frame *frame)
{
    weir_http_v2_stream_t  *st;

    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
    {
        return 0;
    }

    st = nghttp2_session_get_stream_user_data(h2c->session,
                                              frame->hd.stream_id);
    if (st == NULL || st->done) {
        return 0;
    }

    if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) {
        st->end_stream = 1;
    }

    if (frame->hd.type == NGHTTP2_HEADERS && !st->headers_done
        && (frame->hd.flags & NGHTTP2_FLAG_END_HEADERS))
    {
        st->headers_done = 1;

        if (st->rev.timer_set) {
            weir_event_del_timer(&st->rev);
        }

        weir_http_v2_process_request(st);
        return 0;
    }

    if (st->end_stream && st->tunnel) {
        /* the client's half-close: the tunnel's recv returns 0 */
        st->rev.ready = 1;

        if (!st->rev.posted) {
            weir_post_event(&st->rev, &weir_posted_events);
        }

        return 0;
    }

    if (st->end_stream && st->reading && !st->rev.posted) {
        /* the body is complete: its reader finishes from the event */
        st->rev.ready = 1;
        weir_post_event(&st->rev, &weir_posted_events);
    }

    return 0;
}


static weir_uint_t
weir_http_v2_method(weir_str_t *m)
{
    static const struct {
        const char   *name;
        weir_uint_t   method;
    } methods[] = {
        { "GET", WEIR_HTTP_GET },
        { "HEAD", WEIR_HTTP_HEAD },
        { "POST", WEIR_HTTP_POST },
        { "PUT", WEIR_HTTP_PUT },
        { "DELETE", WEIR_HTTP_DELETE },
        { "OPTIONS", WEIR_HTTP_OPTIONS },
        { "PATCH", WEIR_HTTP_PATCH },
        { "TRACE", WEIR_HTTP_TRACE },
        { "CONNECT", WEIR_HTTP_CONNECT },
        { NULL, 0 }
    };

    weir_uint_t  i;

    for (i = 0; methods[i].name; i++) {
        if (m->len == weir_strlen(methods[i].name)
            && weir_memcmp(m->data, methods[i].name, m->len) == 0)
        {
            return methods[i].method;
        }
    }

    return WEIR_HTTP_UNKNOWN;
}


/*
 * The port of an authority ("host", "host:", "host:port", "[v6]:port"),
 * or the default port of the request's :scheme when it names none; -1
 * when it is not a number.
 */

static weir_int_t
weir_http_v2_authority_port(weir_http_v2_stream_t *st, weir_str_t *a)
{
    unsigned char  *p, *last, *colon;
    weir_int_t      port;

    p = a->data;
    last = p + a->len;
    colon = NULL;

    if (p < last && *p == '[') {
        p = weir_strlchr(p, last, ']');
        if (p == NULL) {
            return -1;
        }
    }

    for ( /* void */ ; p < last; p++) {
        if (*p == ':') {
            colon = p;
        }
    }

    if (colon && colon + 1 < last) {
        port = weir_atoi(colon + 1, last - colon - 1);
        return (port < 0 || port > 65535) ? -1 : port;
    }

    if (st->scheme.len == 5
        && weir_strncasecmp(st->scheme.data, (unsigned char *) "https", 5)
           == 0)
    {
        return 443;
    }

    if (st->scheme.len == 4
        && weir_strncasecmp(st->scheme.data, (unsigned char *) "http", 4)
           == 0)
    {
        return 80;
    }

    return 0;
}


/*
 * Does the Host field name the entity :authority names? Compared after
 * the scheme-based normalization RFC 9113 8.3.1 asks of a server that
 * is not the origin (RFC 3986 6.2.3): case, the trailing dot, an empty
 * or default port.
 */

static weir_uint_t
weir_http_v2_same_authority(weir_http_v2_stream_t *st, weir_str_t *host)
{
    weir_str_t  a, b;

    a = st->authority;
    b = *host;

    if (weir_http_validate_host(&a, st->request->pool, 1) != WEIR_OK
        || weir_http_validate_host(&b, st->request->pool, 1) != WEIR_OK)
    {
        return 0;
    }

    if (a.len != b.len || weir_memcmp(a.data, b.data, a.len) != 0) {
        return 0;
    }

    return weir_http_v2_authority_port(st, &st->authority)
           == weir_http_v2_authority_port(st, host);
}


/*
 * The header block is complete: the neutral request is made from the
 * pseudo-headers and fields, the same header handlers as HTTP/1 run
 * (Host, Content-Length, Expect...), and the phases start. Every exit
 * has finalized r or started it; st is not touched after that.
 */

static void
weir_http_v2_process_request(weir_http_v2_stream_t *st)
{
    weir_int_t                  rc;
    weir_uint_t                 i;
    weir_str_t                  host;
    weir_list_part_t           *part;
    weir_connection_t          *fc;
    weir_http_request_t        *r;
    weir_http_header_t         *h;
    weir_http_header_def_t     *def;

    r = st->request;
    fc = st->fc;

    fc->log->action = "processing HTTP/2 request headers";

    if (st->bad_status) {
        /* the request line still, for the log */
        (void) weir_http_v2_request_target(st);
        r->logged = 0;
        weir_http_finalize_request(r, st->bad_status);
        return;
    }

    if (weir_http_v2_request_target(st) != WEIR_OK) {
        weir_http_finalize_request(r, WEIR_HTTP_BAD_REQUEST);
        return;
    }

    if (r->method == WEIR_HTTP_CONNECT && st->protocol.len) {
        rc = weir_http_v2_websocket(st);

        if (rc != WEIR_OK) {
            weir_http_finalize_request(r, rc);
            return;
        }
    }

    if (weir_http_v2_join_cookies(st) != WEIR_OK) {
        weir_http_close_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    /* :authority is the Host (RFC 9113 8.3.1); a Host naming another
     * entity makes the request malformed (400), an equal one is
     * dropped so that :authority's spelling is the one that goes on */

    if (st->authority.len) {
        for (part = &r->headers_in.headers.part; part; part = part->next) {
            h = part->elts;

            for (i = 0; i < part->nelts; i++) {
                if (h[i].token != WEIR_HTTP_HDR_HOST) {
                    continue;
                }

                if (!weir_http_v2_same_authority(st, &h[i].value)) {
                    weir_log_error(WEIR_LOG_INFO, fc->log, 0,
                                   "client sent \":authority\" and "
                                   "\"Host\" that differ: \"%.*s\", "
                                   "\"%.*s\"",
                                   WEIR_STR_ARG(st->authority),
                                   WEIR_STR_ARG(h[i].value));
                    weir_http_finalize_request(r, WEIR_HTTP_BAD_REQUEST);
                    return;
                }

                h[i].hash = 0;
            }
        }

        r->authority = st->authority;

        host.data = (unsigned char *) "host";
        host.len = 4;

        if (weir_http_v2_push_header(r, &host, &st->authority) == NULL) {
            weir_http_close_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }
    }

    /* the header handlers of HTTP/1; one that fails has finalized r */

    r->main->count++;

    for (part = &r->headers_in.headers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (h[i].hash == 0) {
                /* a Host equal to :authority: one is enough */
                continue;
            }

            def = &weir_http_header_defs[h[i].token];

            if (def->handler && def->handler(r, &h[i], def->offset)
                                != WEIR_OK)
            {
                weir_http_finalize_request(r, WEIR_DONE);
                return;
            }
        }
    }

    if (r->headers_in.cookie == NULL && st->cookies) {
        /* the joined crumbs are in the list: link them */
        for (part = &r->headers_in.headers.part; part; part = part->next) {
            h = part->elts;

            for (i = 0; i < part->nelts; i++) {
                if (h[i].token == WEIR_HTTP_HDR_COOKIE) {
                    r->headers_in.cookie = &h[i];
                }
            }
        }
    }

    if (!st->end_stream && r->headers_in.content_length_n < 0
        && !weir_http_v2_tunnel_stream(st))
    {
        /* DATA frames of a length not told: the core's "chunked", a
         * body whose end is found in the framing */
        r->headers_in.chunked = 1;
    }

    r->headers_in.connection_type = 0;
    r->keepalive = 0;

    if (r->method == WEIR_HTTP_TRACE) {
        weir_log_error(WEIR_LOG_INFO, fc->log, 0,
                       "client sent %.*s method", WEIR_STR_ARG(st->method));
        weir_http_finalize_request(r, WEIR_HTTP_NOT_ALLOWED);
        weir_http_finalize_request(r, WEIR_DONE);
        return;
    }

    rc = weir_http_set_virtual_server(r, &r->headers_in.server);

    if (rc == WEIR_OK && st->connect
        && !((weir_http_core_srv_conf_t *)
             weir_http_get_module_srv_conf(r, weir_http_core_module))
            ->allow_connect)
    {
        /* a CONNECT only where a module takes it (forward_proxy on),
         * as over HTTP/1.1 */
        weir_log_error(WEIR_LOG_INFO, fc->log, 0,
                       "client sent CONNECT method");
        weir_http_finalize_request(r, WEIR_HTTP_NOT_ALLOWED);
        weir_http_finalize_request(r, WEIR_DONE);
        return;
    }

    if (rc == WEIR_ERROR) {
        weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        weir_http_finalize_request(r, WEIR_DONE);
        return;
    }

    if (rc == WEIR_HTTP_MISDIRECTED_REQUEST) {
        weir_http_finalize_request(r, rc);
        weir_http_finalize_request(r, WEIR_DONE);
        return;
    }

    weir_http_request_head_done(r);

    fc->log->action = NULL;
    st->started = 1;

    fc->read->handler = weir_http_request_handler;
    fc->write->handler = weir_http_request_handler;
    r->read_event_handler = weir_http_block_reading;

    weir_http_handler(r);

    weir_http_run_posted_requests(fc);

    /* the reference taken for the header handlers */
    weir_http_finalize_request(r, WEIR_DONE);
}


/*
 * :method and :path into the request (RFC 9113 8.3.1): the path is in
 * origin-form ("*" only for OPTIONS), with no byte an HTTP/1.1 origin
 * would read as the end of the target or of the line.
 */

static weir_int_t
weir_http_v2_request_target(weir_http_v2_stream_t *st)
{
    size_t                      len;
    unsigned char              *p, *last, *q, *query;
    weir_uint_t                 complex;
    weir_http_request_t        *r;
    weir_http_core_srv_conf_t  *cscf;

    r = st->request;
    cscf = weir_http_get_module_srv_conf(r, weir_http_core_module);

    if (st->method.len == 7 && st->protocol.len == 0
        && weir_memcmp(st->method.data, "CONNECT", 7) == 0)
    {
        return weir_http_v2_connect_target(st);
    }

    if (st->method.len == 0 || st->path.len == 0) {
        weir_log_error(WEIR_LOG_INFO, st->fc->log, 0,
                       "client sent no \":method\" or \":path\"");
        return WEIR_ERROR;
    }

    r->method_name = st->method;
    r->method = weir_http_v2_method(&st->method);

    p = st->path.data;
    last = p + st->path.len;

    /* the request line first: the access log line of a refused request
     * says what it was (nghttp2 let no control byte through) */

    len = st->method.len + 1 + st->path.len + sizeof(" HTTP/2.0") - 1;

    r->request_line.data = weir_pnalloc(r->pool, len);
    if (r->request_line.data == NULL) {
        return WEIR_ERROR;
    }

    q = weir_cpymem(r->request_line.data, st->method.data, st->method.len);
    *q++ = ' ';
    q = weir_cpymem(q, st->path.data, st->path.len);
    q = weir_cpymem(q, " HTTP/2.0", sizeof(" HTTP/2.0") - 1);
    r->request_line.len = q - r->request_line.data;

    /* one pass: no control byte, space or '#'; where the query starts;
     * whether the path needs the normalizer ('%', "//", "/."), as the
     * HTTP/1 parser decides it for a request line */

    query = NULL;
    complex = 0;

    for (q = p; q < last; q++) {
        if (*q <= 0x20 || *q == 0x7f || *q == '#') {
            weir_log_error(WEIR_LOG_INFO, st->fc->log, 0,
                           "client sent invalid \":path\"");
            return WEIR_ERROR;
        }

        if (query) {
            continue;
        }

        if (*q == '?') {
            query = q;

        } else if (*q == '%'
                   || (*q == '/' && q + 1 < last
                       && (q[1] == '/' || q[1] == '.')))
        {
            complex = 1;
        }
    }

    r->unparsed_uri = st->path;
    r->valid_unparsed_uri = 1;

    if (st->path.len == 1 && p[0] == '*') {
        if (r->method != WEIR_HTTP_OPTIONS) {
            weir_log_error(WEIR_LOG_INFO, st->fc->log, 0,
                           "client sent \":path\" \"*\" with %.*s",
                           WEIR_STR_ARG(st->method));
            return WEIR_ERROR;
        }

        r->uri = st->path;
        return WEIR_OK;
    }

    if (p[0] != '/') {
        weir_log_error(WEIR_LOG_INFO, st->fc->log, 0,
                       "client sent \":path\" not in origin-form");
        return WEIR_ERROR;
    }

    r->uri_start = p;
    r->uri_end = last;
    r->args_start = query ? query + 1 : NULL;

    if (!complex) {
        weir_http_parse_simple_uri(r);
        return WEIR_OK;
    }

    r->uri.data = weir_pnalloc(r->pool, st->path.len + 1);
    if (r->uri.data == NULL) {
        return WEIR_ERROR;
    }

    if (weir_http_parse_complex_uri(r, cscf->merge_slashes) != WEIR_OK) {
        weir_log_error(WEIR_LOG_INFO, st->fc->log, 0,
                       "client sent invalid \":path\"");
        return WEIR_ERROR;
    }

    return WEIR_OK;
}


static weir_int_t
weir_http_v2_join_cookies(weir_http_v2_stream_t *st)
{
    size_t                len;
    unsigned char        *p;
    weir_str_t            name, value;
    weir_http_header_t   *h, *prev, *next;
    weir_http_request_t  *r;

    if (st->cookies == NULL) {
        return WEIR_OK;
    }

    r = st->request;

    /* collected last first: put them back in order */

    prev = NULL;

    for (h = st->cookies; h; h = next) {
        next = h->next;
        h->next = prev;
        prev = h;
    }

    st->cookies = prev;

    len = 0;

    for (h = st->cookies; h; h = h->next) {
        len += h->value.len + 2;
    }

    value.data = weir_pnalloc(r->pool, len);
    if (value.data == NULL) {
        return WEIR_ERROR;
    }

    p = value.data;

    for (h = st->cookies; h; h = h->next) {
        if (p != value.data) {
            *p++ = ';';
            *p++ = ' ';
        }

        p = weir_cpymem(p, h->value.data, h->value.len);
    }

    value.len = p - value.data;

    name.data = (unsigned char *) "cookie";
    name.len = 6;

    return weir_http_v2_push_header(r, &name, &value) ? WEIR_OK : WEIR_ERROR;
}


static ssize_t
weir_http_v2_fake_recv(weir_connection_t *c, unsigned char *buf,
    size_t size)
{
    (void) buf;
    (void) size;

    weir_log_error(WEIR_LOG_ALERT, c->log, 0,
                   "recv() on an HTTP/2 stream's connection");
    c->error = 1;

    return WEIR_ERROR;
}


static ssize_t
weir_http_v2_fake_send(weir_connection_t *c, unsigned char *buf,
    size_t size)
{
    (void) buf;
    (void) size;

    weir_log_error(WEIR_LOG_ALERT, c->log, 0,
                   "send() on an HTTP/2 stream's connection");
    c->error = 1;

    return WEIR_ERROR;
}


static ssize_t
weir_http_v2_fake_writev(weir_connection_t *c, struct iovec *iov, int cnt)
{
    (void) iov;
    (void) cnt;

    weir_log_error(WEIR_LOG_ALERT, c->log, 0,
                   "writev() on an HTTP/2 stream's connection");
    c->error = 1;

    return WEIR_ERROR;
}


/* ---------------------------------------------------------------------
 * the end of a stream
 */

int
weir_http_v2_on_stream_close(nghttp2_session *session, int32_t stream_id,
    uint32_t error_code, void *user_data)
{
    weir_http_v2_stream_t  *st;

    (void) user_data;

    st = nghttp2_session_get_stream_user_data(session, stream_id);

    if (st == NULL || st->done) {
        return 0;
    }

    st->closed = 1;

    if (error_code == NGHTTP2_NO_ERROR && st->last_queued && st->out == NULL)
    {
        /* both ends are done: the request ends as it was going to */
        return 0;
    }

    /* a reset, or a close (RST_STREAM NO_ERROR from the client) before
     * nghttp2 took all the response: its data provider is not called
     * again, so nothing would wake the writer */

    weir_log_error(WEIR_LOG_INFO, st->fc->log, 0,
                   "HTTP/2 stream %d closed: %s", (int) stream_id,
                   nghttp2_http2_strerror(error_code));

    weir_http_v2_abort(st);

    return 0;
}


/* the client or the session gave the stream up: the request ends */

static void
weir_http_v2_abort(weir_http_v2_stream_t *st)
{
    weir_connection_t    *fc;
    weir_http_request_t  *r;

    if (st->done) {
        return;
    }

    fc = st->fc;
    r = st->request;

    fc->error = 1;

    if (!st->started) {
        /* the phases never ran: nothing to log */
        if (!r->main->terminated) {
            r->logged = 1;
            weir_http_finalize_request(r, WEIR_HTTP_CLIENT_CLOSED_REQUEST);
        }

        return;
    }

    /* whatever the request waits for wakes up and finds c->error */

    st->rev.eof = 1;
    st->rev.ready = 1;
    st->wev.ready = 1;

    if (!st->rev.posted) {
        weir_post_event(&st->rev, &weir_posted_events);
    }

    if (!st->wev.posted) {
        weir_post_event(&st->wev, &weir_posted_events);
    }
}


void
weir_http_v2_close_streams(weir_http_v2_conn_t *h2c)
{
    weir_queue_t           *q;
    weir_http_v2_stream_t  *st;

    for (q = weir_queue_head(&h2c->streams);
         q != weir_queue_sentinel(&h2c->streams);
         q = weir_queue_next(q))
    {
        st = weir_queue_data(q, weir_http_v2_stream_t, queue);
        weir_http_v2_abort(st);
    }
}


/*
 * The request is freed (count zero, logged): the stream is reset if it
 * is still open (NO_ERROR after a complete response whose request body
 * was not read, INTERNAL_ERROR for a cut response), r->pool is
 * destroyed and the stream goes back to the session's free list (the
 * connection's credit of the DATA it kept went back on arrival). The
 * session stays.
 */

static void
weir_http_v2_request_done(weir_http_request_t *r, weir_int_t rc)
{
    uint32_t                err;
    weir_connection_t      *fc;
    weir_http_v2_conn_t    *h2c;
    weir_http_v2_stream_t  *st;

    (void) rc;

    st = r->stream;
    h2c = st->h2c;
    fc = st->fc;

    st->done = 1;

    if (h2c->session && !h2c->destroyed) {

        if (!st->closed) {
            if (st->tunnel) {
                err = weir_http_v2_tunnel_reset_code(st);

            } else if (!st->last_queued || st->out) {
                err = NGHTTP2_INTERNAL_ERROR;

            } else if (!st->end_stream) {
                err = NGHTTP2_NO_ERROR;

            } else {
                err = (uint32_t) -1;
            }

            if (err != (uint32_t) -1 || (fc->error && !st->tunnel)) {
                if (err == (uint32_t) -1) {
                    err = NGHTTP2_CANCEL;
                }

                (void) nghttp2_submit_rst_stream(h2c->session,
                                                 NGHTTP2_FLAG_NONE, st->id,
                                                 err);
            }
        }

        /* the connection's credit of what the stream kept went back
         * as it came: nothing is owed to the client */
        st->unconsumed = 0;

        (void) nghttp2_session_set_stream_user_data(h2c->session, st->id,
                                                    NULL);
    }

    weir_http_v2_events_done(&st->rev, &st->wev);

    weir_queue_remove(&st->queue);
    h2c->nstreams--;

    weir_destroy_pool(r->pool);

    /* r is gone */

    st->request = NULL;
    st->next_free = h2c->free_streams;
    h2c->free_streams = st;

    weir_http_v2_post_write(h2c);
    weir_http_v2_check_close(h2c);
}


/* ---------------------------------------------------------------------
 * the response
 */

static weir_int_t
weir_http_v2_headers_nv(weir_http_request_t *r, weir_list_t *list,
    nghttp2_nv *nv, weir_uint_t *n, weir_uint_t max)
{
    weir_uint_t          i;
    unsigned char       *low;
    weir_list_part_t    *part;
    weir_http_header_t  *h;

    for (part = &list->part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (h[i].hash == 0
                || &h[i] == r->headers_out.server
                || &h[i] == r->headers_out.date
                || &h[i] == r->headers_out.content_length
                || &h[i] == r->headers_out.last_modified
                || &h[i] == r->headers_out.location
                || &h[i] == r->headers_out.etag)
            {
                continue;
            }

            /* connection-specific (RFC 9113 8.2.2) or framing: ours */
            if (h[i].token == WEIR_HTTP_HDR_CONTENT_LENGTH
                || h[i].token == WEIR_HTTP_HDR_TRANSFER_ENCODING
                || h[i].token == WEIR_HTTP_HDR_CONNECTION
                || h[i].token == WEIR_HTTP_HDR_KEEP_ALIVE
                || h[i].token == WEIR_HTTP_HDR_UPGRADE
                || h[i].token == WEIR_HTTP_HDR_PROXY_CONNECTION)
            {
                continue;
            }

            /* the origin's handshake answer, not for an HTTP/2 client
             * (RFC 8441 5) */
            if (((weir_http_v2_stream_t *) r->stream)->tunnel
                && h[i].key.len == sizeof("sec-websocket-accept") - 1
                && weir_strncasecmp(h[i].key.data,
                                    (unsigned char *) "sec-websocket-accept",
                                    h[i].key.len) == 0)
            {
                continue;
            }

            if (*n >= max) {
                return WEIR_ERROR;
            }

            low = weir_pnalloc(r->pool, h[i].key.len ? h[i].key.len : 1);
            if (low == NULL) {
                return WEIR_ERROR;
            }

            weir_strlow(low, h[i].key.data, h[i].key.len);

            weir_http_v2_nv(&nv[*n], low, h[i].key.len, h[i].value.data,
                            h[i].value.len);
            (*n)++;
        }
    }

    return WEIR_OK;
}


static weir_uint_t
weir_http_v2_list_count(weir_list_t *list)
{
    weir_uint_t        n;
    weir_list_part_t  *part;

    n = 0;

    for (part = &list->part; part; part = part->next) {
        n += part->nelts;
    }

    return n;
}


static weir_int_t
weir_http_v2_send_header(weir_http_request_t *r)
{
    int                         rv;
    size_t                      len;
    weir_uint_t                 status, n, max, no_body, i;
    nghttp2_nv                 *nv;
    weir_list_part_t           *part;
    weir_http_header_t         *h;
    const char                 *server;
    unsigned char              *p, *buf;
    weir_connection_t          *fc;
    nghttp2_data_provider       prd;
    weir_http_v2_stream_t      *st;
    weir_http_core_loc_conf_t  *clcf;

    st = r->stream;
    fc = st->fc;

    if (weir_http_v2_tunnel_stream(st)) {
        status = r->headers_out.status ? r->headers_out.status
                                       : WEIR_HTTP_OK;

        if (st->tunnel
            && (status == WEIR_HTTP_SWITCHING_PROTOCOLS
                || (st->connect && status == WEIR_HTTP_OK)))
        {
            /* the origin's 101 is the stream's 200 (RFC 8441 5); a
             * CONNECT's 200 opens the tunnel (RFC 9113 8.5): the stream
             * stays open for its DATA */
            r->headers_out.status = WEIR_HTTP_OK;
            r->header_only = 0;

        } else if (status >= WEIR_HTTP_OK && status < 300) {
            /* a 2xx opens the tunnel for the client, and none did: a
             * bare 502 instead, and the body is dropped (a response
             * with no DATA provider would be lost to the RST_STREAM
             * that request_done sends at once) */
            weir_log_error(WEIR_LOG_ERR, fc->log, 0,
                           "no WebSocket tunnel for an Extended CONNECT: "
                           "the response was %lu, not 101",
                           (unsigned long) status);
            r->headers_out.status = WEIR_HTTP_BAD_GATEWAY;
            r->headers_out.content_type.len = 0;
            r->headers_out.charset.len = 0;
            r->headers_out.content_length_n = -1;
            r->headers_out.last_modified_time = -1;
            r->headers_out.last_modified = NULL;
            r->headers_out.location = NULL;
            r->headers_out.etag = NULL;
            st->drop_body = 1;

            for (part = &r->headers_out.headers.part; part;
                 part = part->next)
            {
                h = part->elts;

                for (i = 0; i < part->nelts; i++) {
                    h[i].hash = 0;
                }
            }
        }
    }

    r->header_sent = 1;

    if (fc->error || st->closed) {
        return WEIR_ERROR;
    }

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    status = r->headers_out.status ? r->headers_out.status : WEIR_HTTP_OK;

    if (r->method == WEIR_HTTP_HEAD) {
        r->header_only = 1;
    }

    no_body = (status < WEIR_HTTP_OK || status == WEIR_HTTP_NO_CONTENT
               || status == WEIR_HTTP_NOT_MODIFIED);

    if (no_body || r->headers_out.content_length_n == 0) {
        /* no DATA: END_STREAM on the HEADERS (gRPC clients read a
         * "trailers-only" answer only so) */
        r->header_only = 1;
    }

    max = 10 + weir_http_v2_list_count(&r->headers_out.headers);

    nv = weir_palloc(r->pool, max * sizeof(nghttp2_nv));

    /* :status, content-type with charset, content-length, last-modified */
    len = 4 + r->headers_out.content_type.len
          + sizeof("; charset=") + r->headers_out.charset.len
          + WEIR_INT_T_LEN + sizeof("Mon, 28 Sep 1970 06:00:00 GMT");

    buf = weir_pnalloc(r->pool, len);

    if (nv == NULL || buf == NULL) {
        return WEIR_ERROR;
    }

    p = buf;
    n = 0;

    weir_http_v2_nv(&nv[n], ":status", 7, p, 3);
    n++;
    p = weir_http_v2_status_digits(p, status);

    if (r->headers_out.server && r->headers_out.server->hash) {
        weir_http_v2_nv(&nv[n], "server", 6,
                        r->headers_out.server->value.data,
                        r->headers_out.server->value.len);

    } else {
        server = clcf->server_tokens == WEIR_HTTP_SERVER_TOKENS_OFF
                 ? "weir" : WEIR_VER;
        weir_http_v2_nv(&nv[n], "server", 6, server, weir_strlen(server));
    }

    n++;

    if (r->headers_out.date && r->headers_out.date->hash) {
        weir_http_v2_nv(&nv[n], "date", 4, r->headers_out.date->value.data,
                        r->headers_out.date->value.len);

    } else {
        weir_http_v2_nv(&nv[n], "date", 4, weir_cached_http_time.data,
                        weir_cached_http_time.len);
    }

    n++;

    if (r->headers_out.content_type.len) {
        unsigned char  *start = p;

        p = weir_cpymem(p, r->headers_out.content_type.data,
                        r->headers_out.content_type.len);

        if (r->headers_out.charset.len) {
            p = weir_cpymem(p, "; charset=", sizeof("; charset=") - 1);
            p = weir_cpymem(p, r->headers_out.charset.data,
                            r->headers_out.charset.len);
        }

        weir_http_v2_nv(&nv[n], "content-type", 12, start, p - start);
        n++;
    }

    if (!no_body && r->headers_out.content_length_n >= 0) {
        unsigned char  *start = p;

        p = weir_sprint_uint(p, (uint64_t) r->headers_out.content_length_n);
        weir_http_v2_nv(&nv[n], "content-length", 14, start, p - start);
        n++;
    }

    if (r->headers_out.last_modified && r->headers_out.last_modified->hash) {
        weir_http_v2_nv(&nv[n], "last-modified", 13,
                        r->headers_out.last_modified->value.data,
                        r->headers_out.last_modified->value.len);
        n++;

    } else if (r->headers_out.last_modified_time != -1) {
        unsigned char  *start = p;

        p = weir_http_time(p, r->headers_out.last_modified_time);
        weir_http_v2_nv(&nv[n], "last-modified", 13, start, p - start);
        n++;
    }

    if (r->headers_out.location && r->headers_out.location->hash) {
        weir_http_v2_nv(&nv[n], "location", 8,
                        r->headers_out.location->value.data,
                        r->headers_out.location->value.len);
        n++;
    }

    if (r->headers_out.etag && r->headers_out.etag->hash) {
        weir_http_v2_nv(&nv[n], "etag", 4, r->headers_out.etag->value.data,
                        r->headers_out.etag->value.len);
        n++;
    }

    if (weir_http_v2_headers_nv(r, &r->headers_out.headers, nv, &n, max)
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    if (r->header_only) {
        rv = nghttp2_submit_response(st->h2c->session, st->id, nv, n, NULL);
        st->last_queued = 1;
        /* the request ends when the HEADERS is out, so that $bytes_sent
         * counts it (on_frame_send wakes the writer) */
        st->head_pending = 1;
        fc->buffered |= WEIR_HTTP_WRITE_BUFFERED;
        st->wev.ready = 0;

    } else {
        prd.source.ptr = st;
        prd.read_callback = weir_http_v2_read_data;
        rv = nghttp2_submit_response(st->h2c->session, st->id, nv, n, &prd);
    }

    if (rv != 0) {
        weir_log_error(WEIR_LOG_ERR, fc->log, 0,
                       "nghttp2_submit_response() failed: %s",
                       nghttp2_strerror(rv));
        return WEIR_ERROR;
    }

    st->response_submitted = 1;

    weir_http_v2_post_write(st->h2c);

    return WEIR_OK;
}


/*
 * The bottom of the body filter chain: the buffers are queued on the
 * stream and nghttp2's data provider takes them as the windows and the
 * socket allow. While some wait, WEIR_AGAIN with fc->buffered set; the
 * provider posts the fake connection's write event when the queue is
 * empty, so r->write_event_handler goes on.
 */

static weir_int_t
weir_http_v2_send_body(weir_http_request_t *r, weir_chain_t *in)
{
    off_t                   queued;
    weir_buf_t             *b;
    weir_chain_t           *cl, *ln, **ll;
    weir_connection_t      *fc;
    weir_http_v2_stream_t  *st;

    st = r->stream;
    fc = st->fc;

    if (fc->error) {
        return WEIR_ERROR;
    }

    queued = 0;

    for (ll = &st->out; *ll; ll = &(*ll)->next) {
        queued += weir_buf_size((*ll)->buf);
    }

    for (cl = in; cl; cl = cl->next) {
        b = cl->buf;

        if (st->last_queued) {
            /* nothing is sent after the end of the body */
            if (weir_buf_in_memory(b)) {
                b->pos = b->last;
            }

            if (b->in_file) {
                b->file_pos = b->file_last;
            }

            continue;
        }

        if ((weir_buf_special(b) || st->drop_body) && !b->last_buf) {
            if (st->drop_body) {
                if (weir_buf_in_memory(b)) {
                    b->pos = b->last;
                }

                if (b->in_file) {
                    b->file_pos = b->file_last;
                }
            }

            continue;
        }

        ln = weir_alloc_chain_link(r->pool, &st->free);
        if (ln == NULL) {
            return WEIR_ERROR;
        }

        ln->buf = b;
        ln->next = NULL;
        *ll = ln;
        ll = &ln->next;
        queued += weir_buf_size(b);

        if (b->last_buf) {
            st->last_queued = 1;
        }
    }

    if (st->out == NULL) {
        if (st->head_pending) {
            /* a response without a body: its HEADERS is not out yet */
            weir_http_v2_post_write(st->h2c);
            return WEIR_AGAIN;
        }

        fc->buffered &= ~WEIR_HTTP_WRITE_BUFFERED;
        return WEIR_OK;
    }

    fc->buffered |= WEIR_HTTP_WRITE_BUFFERED;
    st->wev.ready = 0;

    if (st->data_deferred) {
        st->data_deferred = 0;
        (void) nghttp2_session_resume_data(st->h2c->session, st->id);
    }

    if (queued < WEIR_HTTP_V2_WRITE_NOW || !st->response_submitted) {
        /* written at the end of the pass, with the other streams' */
        weir_http_v2_post_write(st->h2c);
        return WEIR_AGAIN;
    }

    weir_http_v2_write_now(st->h2c);

    if (st->out || fc->error) {
        return fc->error ? WEIR_ERROR : WEIR_AGAIN;
    }

    /* all taken: the writer goes on now, not from a posted event */

    if (st->wev.posted) {
        weir_delete_posted_event(&st->wev);
    }

    return WEIR_OK;
}


/*
 * The stream's queue is empty: the writer goes on. Also for a request
 * refused before its phases ran (a 400 from the header block): its
 * response waits in weir_http_writer too, and the request is freed only
 * when the writer sees the queue empty.
 */

void
weir_http_v2_wake_writer(weir_http_v2_stream_t *st)
{
    st->fc->buffered &= ~WEIR_HTTP_WRITE_BUFFERED;
    st->wev.ready = 1;

    if (st->headers_done && !st->wev.posted) {
        weir_post_event(&st->wev, &weir_posted_events);
    }
}


/* nghttp2's data provider: at most http2_chunk_size per DATA frame */

static ssize_t
weir_http_v2_read_data(nghttp2_session *session, int32_t stream_id,
    uint8_t *buf, size_t length, uint32_t *data_flags,
    nghttp2_data_source *source, void *user_data)
{
    size_t                  limit, copied, n;
    ssize_t                 rd;
    weir_uint_t             eof, nt;
    weir_buf_t             *b;
    nghttp2_nv             *nv;
    weir_chain_t           *cl;
    weir_http_request_t    *r;
    weir_http_v2_conn_t    *h2c = user_data;
    weir_http_v2_stream_t  *st;

    (void) source;

    st = nghttp2_session_get_stream_user_data(session, stream_id);

    if (st == NULL || st->done) {
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }

    r = st->request;

    limit = length < h2c->h2scf->chunk_size ? length : h2c->h2scf->chunk_size;
    copied = 0;
    eof = 0;

    while (st->out && copied < limit) {
        cl = st->out;
        b = cl->buf;

        if (weir_buf_in_memory(b) && b->pos < b->last) {
            n = b->last - b->pos;
            if (n > limit - copied) {
                n = limit - copied;
            }

            weir_memcpy(buf + copied, b->pos, n);
            b->pos += n;

            if (b->in_file) {
                b->file_pos += n;
            }

            copied += n;

        } else if (!weir_buf_in_memory(b) && b->in_file
                   && b->file_pos < b->file_last)
        {
            /* sendfile is off on a stream: the file is read here */
            n = (size_t) (b->file_last - b->file_pos);
            if (n > limit - copied) {
                n = limit - copied;
            }

            rd = pread(b->file->fd, buf + copied, n, b->file_pos);

            if (rd <= 0) {
                weir_log_error(rd == 0 ? WEIR_LOG_ALERT : WEIR_LOG_CRIT,
                               st->fc->log, rd == 0 ? 0 : weir_errno,
                               rd == 0 ? "file was truncated while being "
                                         "sent" : "pread() failed");
                st->fc->error = 1;
                weir_http_v2_wake_writer(st);
                return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
            }

            b->file_pos += rd;
            copied += rd;
        }

        if ((weir_buf_in_memory(b) && b->pos < b->last)
            || (!weir_buf_in_memory(b) && b->in_file
                && b->file_pos < b->file_last))
        {
            continue;
        }

        if (b->last_buf) {
            eof = 1;
        }

        st->out = cl->next;
        weir_free_chain(&st->free, cl);
    }

    st->fc->sent += copied;

    if (eof) {
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;

        nt = r->expect_trailers
             ? weir_http_v2_list_count(&r->headers_out.trailers) : 0;

        if (nt) {
            nv = weir_palloc(r->pool, nt * sizeof(nghttp2_nv));
            n = 0;

            if (nv
                && weir_http_v2_headers_nv(r, &r->headers_out.trailers, nv,
                                           (weir_uint_t *) &n, nt)
                   == WEIR_OK
                && n
                && nghttp2_submit_trailer(session, stream_id, nv, n) == 0)
            {
                *data_flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
            }
        }
    }

    if (st->out == NULL || (st->tunnel && copied)) {
        weir_http_v2_wake_writer(st);
    }

    if (copied == 0 && !eof) {
        st->data_deferred = 1;
        return NGHTTP2_ERR_DEFERRED;
    }

    return (ssize_t) copied;
}


static weir_int_t
weir_http_v2_send_interim(weir_http_request_t *r, weir_uint_t status,
    weir_list_t *headers)
{
    weir_uint_t             n, max;
    nghttp2_nv             *nv;
    unsigned char          *code;
    weir_http_v2_stream_t  *st;

    st = r->stream;

    if (r->header_sent || status < 100 || status > 199
        || status == WEIR_HTTP_SWITCHING_PROTOCOLS || st->fc->error)
    {
        return WEIR_DECLINED;
    }

    max = 1 + (headers ? weir_http_v2_list_count(headers) : 0);

    nv = weir_palloc(r->pool, max * sizeof(nghttp2_nv));
    code = weir_pnalloc(r->pool, 4);

    if (nv == NULL || code == NULL) {
        return WEIR_ERROR;
    }

    (void) weir_http_v2_status_digits(code, status);

    n = 0;
    weir_http_v2_nv(&nv[n], ":status", 7, code, 3);
    n++;

    if (headers
        && weir_http_v2_headers_nv(r, headers, nv, &n, max) != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    if (nghttp2_submit_headers(st->h2c->session, NGHTTP2_FLAG_NONE, st->id,
                               NULL, nv, n, NULL)
        < 0)
    {
        return WEIR_ERROR;
    }

    weir_http_v2_post_write(st->h2c);

    return WEIR_OK;
}


static weir_int_t
weir_http_v2_send_continue(weir_http_request_t *r)
{
    weir_http_v2_stream_t  *st;

    st = r->stream;

    if (st->end_stream || st->pre) {
        /* the client did not wait */
        return WEIR_OK;
    }

    return weir_http_v2_send_interim(r, WEIR_HTTP_CONTINUE, NULL) == WEIR_ERROR
           ? WEIR_ERROR : WEIR_OK;
}


/* ---------------------------------------------------------------------
 * the request body
 */

int
weir_http_v2_on_data_chunk(nghttp2_session *session, uint8_t flags,
    int32_t stream_id, const uint8_t *data, size_t len, void *user_data)
{
    weir_buf_t                 *b;
    weir_chain_t               *cl;
    weir_http_request_t        *r;
    weir_http_v2_conn_t        *h2c = user_data;
    weir_http_v2_stream_t      *st;
    weir_http_core_loc_conf_t  *clcf;

    (void) flags;

    st = nghttp2_session_get_stream_user_data(session, stream_id);

    if (st == NULL || st->done) {
        /* nobody takes it: the credit goes back at once */
        (void) nghttp2_session_consume(session, stream_id, len);
        return 0;
    }

    /* the connection's credit goes back at once, whatever the stream
     * does with the DATA: a stream keeps at most its own window, and
     * streams whose consumer is slow must not shut the window that all
     * the streams share (docs/dev/http2.md, "Request bodies"); from
     * here on, only the stream's window waits for the consumer */
    (void) nghttp2_session_consume_connection(session, len);

    r = st->request;
    st->body_received += len;

    if (st->discard || st->bad_status) {
        (void) nghttp2_session_consume_stream(session, stream_id, len);
        return 0;
    }

    if (st->tunnel) {
        /* kept until the tunnel takes it, credited then: the stream
         * window bounds it */
        b = st->tun_in;

        if ((size_t) (b->end - b->last) < len && b->pos > b->start) {
            memmove(b->start, b->pos, b->last - b->pos);
            b->last = b->start + (b->last - b->pos);
            b->pos = b->start;
        }

        if ((size_t) (b->end - b->last) < len) {
            weir_log_error(WEIR_LOG_ERR, st->fc->log, 0,
                           "client sent more than the stream window");
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        }

        b->last = weir_cpymem(b->last, data, len);
        st->unconsumed += len;
        st->rev.ready = 1;

        if (!st->rev.posted) {
            weir_post_event(&st->rev, &weir_posted_events);
        }

        return 0;
    }

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    if (st->started && !weir_http_v2_tunnel_stream(st)
        && clcf->client_max_body_size
        && st->body_received > clcf->client_max_body_size)
    {
        weir_log_error(WEIR_LOG_ERR, st->fc->log, 0,
                       "client intended to send too large body: more than "
                       "%lld bytes", (long long) clcf->client_max_body_size);
        st->bad_status = WEIR_HTTP_REQUEST_ENTITY_TOO_LARGE;
        (void) nghttp2_session_consume_stream(session, stream_id, len);

        if (st->reading && !st->rev.posted) {
            weir_post_event(&st->rev, &weir_posted_events);
        }

        return 0;
    }

    if (!st->reading) {
        /* before the handler asks: kept, within the stream's window */
        b = weir_create_temp_buf(r->pool, len);
        cl = weir_alloc_chain_link(r->pool, NULL);
        if (b == NULL || cl == NULL) {
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        }

        b->last = weir_cpymem(b->pos, data, len);
        cl->buf = b;
        cl->next = NULL;

        if (st->pre == NULL) {
            st->pre_last = &st->pre;
        }

        *st->pre_last = cl;
        st->pre_last = &cl->next;
        st->unconsumed += len;

        return 0;
    }

    if (st->unbuffered) {
        /* credited only once the consumer has written it */
        if (weir_http_v2_ub_put(st, data, len) != WEIR_OK) {
            st->bad_status = WEIR_HTTP_INTERNAL_SERVER_ERROR;
            (void) nghttp2_session_consume_stream(session, stream_id, len);
        }

        if (!st->rev.posted) {
            weir_post_event(&st->rev, &weir_posted_events);
        }

        return 0;
    }

    if (weir_http_v2_body_put(st, data, len) != WEIR_OK) {
        st->bad_status = WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* taken: the client may send as much again */
    (void) nghttp2_session_consume_stream(h2c->session, stream_id, len);

    if (!st->rev.posted) {
        weir_post_event(&st->rev, &weir_posted_events);
    }

    return 0;
}


static weir_int_t
weir_http_v2_read_body(weir_http_request_t *r)
{
    size_t                      size;
    weir_int_t                  rc;
    weir_chain_t               *cl;
    weir_http_v2_stream_t      *st;
    weir_http_request_body_t   *rb;
    weir_http_core_loc_conf_t  *clcf;

    st = r->stream;
    rb = r->request_body;
    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    if (st->fc->error || st->closed) {
        return WEIR_HTTP_BAD_REQUEST;
    }

    rb->rest = r->headers_in.content_length_n >= 0
               ? r->headers_in.content_length_n : -1;

    if (clcf->client_max_body_size
        && st->body_received > clcf->client_max_body_size)
    {
        weir_log_error(WEIR_LOG_ERR, st->fc->log, 0,
                       "client intended to send too large body: more than "
                       "%lld bytes", (long long) clcf->client_max_body_size);
        return WEIR_HTTP_REQUEST_ENTITY_TOO_LARGE;
    }

    size = clcf->client_body_buffer_size ? clcf->client_body_buffer_size
                                         : 16384;

    if (rb->rest >= 0 && (off_t) size > rb->rest) {
        size = rb->rest ? (size_t) rb->rest : 1;
    }

    if (r->request_body_no_buffering) {
        /* streamed: DATA is kept in blocks of this size */
        st->ub_size = size;

    } else {
        st->body_buf = weir_create_temp_buf(r->pool, size);
        if (st->body_buf == NULL) {
            return WEIR_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    st->reading = 1;

    if (weir_http_request_expects_continue(r) && !r->expect_tested) {
        r->expect_tested = 1;
        r->expect_continue = 1;

        if (weir_http_v2_send_continue(r) != WEIR_OK) {
            return WEIR_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    if (r->request_body_no_buffering) {
        return weir_http_v2_ub_start(st);
    }

    for (cl = st->pre; cl; cl = cl->next) {
        if (weir_http_v2_body_put(st, cl->buf->pos,
                                  cl->buf->last - cl->buf->pos)
            != WEIR_OK)
        {
            return WEIR_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    st->pre = NULL;

    if (st->unconsumed) {
        (void) nghttp2_session_consume_stream(st->h2c->session, st->id,
                                              st->unconsumed);
        st->unconsumed = 0;
        weir_http_v2_post_write(st->h2c);
    }

    if (st->end_stream) {
        rc = weir_http_v2_body_finish(st);
        return rc;
    }

    r->read_event_handler = weir_http_v2_read_body_handler;

    if (clcf->client_body_timeout) {
        weir_event_add_timer(&st->rev, clcf->client_body_timeout);
    }

    return WEIR_AGAIN;
}


static void
weir_http_v2_read_body_handler(weir_http_request_t *r)
{
    weir_int_t                  rc;
    weir_connection_t          *fc;
    weir_http_v2_stream_t      *st;
    weir_http_request_body_t   *rb;
    weir_http_core_loc_conf_t  *clcf;

    st = r->stream;
    fc = st->fc;
    rb = r->request_body;

    rc = weir_http_v2_body_failed(st);
    if (rc) {
        goto failed;
    }

    if (!st->end_stream) {
        clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

        if (clcf->client_body_timeout) {
            weir_event_add_timer(fc->read, clcf->client_body_timeout);
        }

        return;
    }

    rc = weir_http_v2_body_finish(st);

    if (rc != WEIR_OK) {
        goto failed;
    }

    if (fc->read->timer_set) {
        weir_event_del_timer(fc->read);
    }

    r->reading_body = 0;
    r->read_event_handler = weir_http_block_reading;

    /* may finalize and free r: nothing touches r after it */
    rb->post_handler(r);
    return;

failed:

    st->discard = 1;
    r->reading_body = 0;
    r->read_event_handler = weir_http_block_reading;

    if (fc->read->timer_set) {
        weir_event_del_timer(fc->read);
    }

    weir_http_finalize_request(r, rc);
}


/* copies DATA into the body block; a full block goes down the request
 * body filters and then to the temporary file, and is reused */

static weir_int_t
weir_http_v2_body_put(weir_http_v2_stream_t *st, const unsigned char *data,
    size_t len)
{
    size_t       n;
    weir_int_t   rc;
    weir_buf_t  *b;

    b = st->body_buf;

    while (len) {
        if (b->last == b->end) {
            rc = weir_http_v2_body_deliver(st, 0);
            if (rc != WEIR_OK) {
                return rc;
            }

            rc = weir_http_request_body_spill(st->request);
            if (rc != WEIR_OK) {
                return rc;
            }

            b->pos = b->start;
            b->last = b->start;
        }

        n = b->end - b->last;
        if (n > len) {
            n = len;
        }

        b->last = weir_cpymem(b->last, data, n);
        data += n;
        len -= n;
        st->request->request_length += n;
        st->request->request_body->received += n;
    }

    return WEIR_OK;
}


static weir_int_t
weir_http_v2_body_deliver(weir_http_v2_stream_t *st, weir_uint_t last)
{
    weir_int_t                 rc;
    weir_buf_t                *b;
    weir_chain_t               cl;
    weir_http_request_t       *r;
    weir_http_request_body_t  *rb;

    r = st->request;
    rb = r->request_body;

    if (st->body_buf->pos == st->body_buf->last && !last) {
        return WEIR_OK;
    }

    b = weir_calloc_buf(r->pool);
    if (b == NULL) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->start = st->body_buf->pos;
    b->pos = st->body_buf->pos;
    b->last = st->body_buf->last;
    b->end = st->body_buf->last;
    b->temporary = (b->last > b->pos);
    b->last_buf = last ? 1 : 0;
    b->last_in_chain = 1;
    b->tag = (weir_buf_tag_t) &weir_http_read_client_request_body;

    st->body_buf->pos = st->body_buf->last;

    cl.buf = b;
    cl.next = NULL;

    if (last) {
        rb->last_sent = 1;
        rb->rest = 0;
    }

    rc = weir_http_top_request_body_filter(r, &cl);

    if (rc == WEIR_OK) {
        return WEIR_OK;
    }

    return rc == WEIR_ERROR ? WEIR_HTTP_INTERNAL_SERVER_ERROR : rc;
}


static weir_int_t
weir_http_v2_body_finish(weir_http_v2_stream_t *st)
{
    weir_int_t  rc;

    rc = weir_http_v2_body_deliver(st, 1);
    if (rc != WEIR_OK) {
        return rc;
    }

    if (st->request->request_body->temp_file) {
        rc = weir_http_request_body_spill(st->request);
        if (rc != WEIR_OK) {
            return rc;
        }
    }

    st->reading = 0;

    return WEIR_OK;
}


static weir_int_t
weir_http_v2_discard_body(weir_http_request_t *r)
{
    weir_http_v2_stream_t  *st;

    st = r->stream;

    st->discard = 1;
    st->pre = NULL;

    if (st->unconsumed && st->h2c->session) {
        (void) nghttp2_session_consume_stream(st->h2c->session, st->id,
                                              st->unconsumed);
        st->unconsumed = 0;
        weir_http_v2_post_write(st->h2c);
    }

    /* the rest is dropped as it comes (its credit given back), or the
     * stream is reset when the response is done */
    return WEIR_OK;
}


/* DATA (or the end of the stream) came before anyone asked for it: the
 * client did not wait for a 100 */

static weir_uint_t
weir_http_v2_body_received(weir_http_request_t *r)
{
    weir_http_v2_stream_t  *st;

    st = r->stream;

    return st->body_received > 0 || st->pre != NULL || st->end_stream;
}


/*
 * The fake read event is posted only when the stream is aborted (the
 * client reset it, or the session died): the client has gone then, and
 * nothing else a client sends on the connection reaches this request.
 */

static weir_int_t
weir_http_v2_test_closed(weir_http_request_t *r, weir_err_t *err)
{
    weir_http_v2_stream_t  *st;

    st = r->stream;
    *err = 0;

    if (r->connection->error || st->closed) {
        return WEIR_DONE;
    }

    return WEIR_OK;
}


/* a final HEADERS frame carries them, whatever the length said */

static weir_uint_t
weir_http_v2_trailers_allowed(weir_http_request_t *r)
{
    (void) r;

    return 1;
}


/* why reading the body of st's request has to stop (a timeout, the
 * stream or session gone, a refused body): the status, or 0 */

weir_int_t
weir_http_v2_body_failed(weir_http_v2_stream_t *st)
{
    weir_connection_t  *fc;

    fc = st->fc;

    if (fc->read->timedout) {
        fc->read->timedout = 0;
        weir_log_error(WEIR_LOG_INFO, fc->log, WEIR_ETIMEDOUT,
                       "client timed out while reading client request body");
        return WEIR_HTTP_REQUEST_TIME_OUT;
    }

    if (fc->error) {
        return WEIR_HTTP_BAD_REQUEST;
    }

    return (weir_int_t) st->bad_status;
}
