#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_http.h"
#include "weir_http_v2.h"
#include "weir_http_v2_upstream.h"

/*
 * HTTP/2 to origins: nghttp2's callbacks on what an origin sends (heads,
 * trailers, DATA, resets, GOAWAY, SETTINGS, floods), which fill the
 * streams' queues and post their events for the upstream core.
 * docs/dev/upstream.md "Sessions".
 */


static int weir_http_v2_up_on_begin_headers(nghttp2_session *session,
    const nghttp2_frame *frame, void *user_data);
static int weir_http_v2_up_on_header(nghttp2_session *session,
    const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
    const uint8_t *value, size_t valuelen, uint8_t flags, void *user_data);
static int weir_http_v2_up_on_frame_recv(nghttp2_session *session,
    const nghttp2_frame *frame, void *user_data);
static int weir_http_v2_up_on_data(nghttp2_session *session, uint8_t flags,
    int32_t stream_id, const uint8_t *data, size_t len, void *user_data);
static int weir_http_v2_up_on_stream_close(nghttp2_session *session,
    int32_t stream_id, uint32_t error_code, void *user_data);
static int weir_http_v2_up_on_invalid_frame(nghttp2_session *session,
    const nghttp2_frame *frame, int lib_error_code, void *user_data);
static int weir_http_v2_up_on_begin_frame(nghttp2_session *session,
    const nghttp2_frame_hd *hd, void *user_data);


nghttp2_session_callbacks  *weir_http_v2_up_callbacks;


weir_int_t
weir_http_v2_up_init_callbacks(void)
{
    nghttp2_session_callbacks  *cb;

    if (weir_http_v2_up_callbacks) {
        return WEIR_OK;
    }

    if (nghttp2_session_callbacks_new(&cb) != 0) {
        return WEIR_ERROR;
    }

    nghttp2_session_callbacks_set_on_begin_headers_callback(cb,
        weir_http_v2_up_on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb,
        weir_http_v2_up_on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb,
        weir_http_v2_up_on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb,
        weir_http_v2_up_on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb,
        weir_http_v2_up_on_stream_close);
    nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(cb,
        weir_http_v2_up_on_invalid_frame);
    nghttp2_session_callbacks_set_on_begin_frame_callback(cb,
        weir_http_v2_up_on_begin_frame);

    weir_http_v2_up_callbacks = cb;

    return WEIR_OK;
}


/* ---- nghttp2's callbacks -------------------------------------------- */

static weir_http_v2_ups_t *
weir_http_v2_up_stream(nghttp2_session *session, int32_t id)
{
    return nghttp2_session_get_stream_user_data(session, id);
}


static int
weir_http_v2_up_on_begin_headers(nghttp2_session *session,
    const nghttp2_frame *frame, void *user_data)
{
    weir_pool_t            *pool;
    weir_http_v2_ups_t     *st;
    weir_http_v2_uphead_t  *head;

    (void) user_data;

    st = weir_http_v2_up_stream(session, frame->hd.stream_id);

    if (st == NULL) {
        return 0;
    }

    pool = st->upstream->request->pool;

    if (frame->hd.type != NGHTTP2_HEADERS) {
        return 0;
    }

    if (st->final_in) {
        /* after the final head: trailers */
        if (!st->has_trailers) {
            if (weir_list_init(&st->trailers, pool, 4,
                               sizeof(weir_http_header_t))
                != WEIR_OK)
            {
                return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
            }

            st->has_trailers = 1;
        }

        st->cur = NULL;
        return 0;
    }

    head = weir_pcalloc(pool, sizeof(weir_http_v2_uphead_t));
    if (head == NULL
        || weir_list_init(&head->hi.headers, pool, 16,
                          sizeof(weir_http_header_t))
           != WEIR_OK)
    {
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }

    head->hi.content_length_n = -1;
    st->cur = head;

    return 0;
}


/*
 * A field of a head or of the trailers. nghttp2 has checked it (names
 * lowercase, no connection-specific fields, pseudo-headers of a
 * response only and first): what is left is :status, the size of the
 * head (proxy_buffer_size, as the HTTP/1.1 head), and the fields the
 * core links by name.
 */

static int
weir_http_v2_up_on_header(nghttp2_session *session,
    const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
    const uint8_t *value, size_t valuelen, uint8_t flags, void *user_data)
{
    off_t                             n;
    weir_uint_t                       hash;
    unsigned char                    *p;
    weir_list_t                      *list;
    weir_pool_t                      *pool;
    weir_http_header_t               *h, **link;
    weir_http_v2_ups_t               *st;
    weir_http_upstream_t             *u;
    weir_http_v2_uphead_t            *head;
    weir_http_upstream_headers_in_t  *hi;

    (void) flags;
    (void) user_data;

    st = weir_http_v2_up_stream(session, frame->hd.stream_id);

    if (st == NULL) {
        return 0;
    }

    u = st->upstream;
    pool = u->request->pool;
    head = st->cur;

    if (head) {
        hi = &head->hi;
        list = &hi->headers;
        head->size += namelen + valuelen + 32;

        if (head->size > u->conf->buffer_size) {
            weir_log_error(WEIR_LOG_ERR, u->request->connection->log, 0,
                           "upstream sent too big header");
            st->invalid = 1;
            st->failed = 1;
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        }

        if (namelen == 7 && weir_memcmp(name, ":status", 7) == 0) {
            if (valuelen != 3 || value[0] < '1' || value[0] > '5'
                || value[1] < '0' || value[1] > '9'
                || value[2] < '0' || value[2] > '9')
            {
                weir_log_error(WEIR_LOG_ERR, u->request->connection->log,
                               0, "upstream sent invalid :status \"%.*s\"",
                               (int) valuelen, value);
                st->invalid = 1;
                st->failed = 1;
                return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
            }

            hi->status_n = (value[0] - '0') * 100 + (value[1] - '0') * 10
                           + (value[2] - '0');

            hi->status_line.data = weir_pnalloc(pool, 3);
            if (hi->status_line.data == NULL) {
                return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
            }

            weir_memcpy(hi->status_line.data, value, 3);
            hi->status_line.len = 3;

            return 0;
        }

    } else if (st->has_trailers) {
        hi = NULL;
        list = &st->trailers;

    } else {
        return 0;
    }

    if (namelen && name[0] == ':') {
        return 0;
    }

    h = weir_list_push(list);
    if (h == NULL) {
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }

    p = weir_pnalloc(pool, namelen + 1 + valuelen + 1);
    if (p == NULL) {
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }

    h->key.data = p;
    h->key.len = namelen;
    p = weir_cpymem(p, name, namelen);
    *p++ = '\0';
    h->value.data = p;
    h->value.len = valuelen;
    p = weir_cpymem(p, value, valuelen);
    *p = '\0';

    /* HTTP/2 names are lowercase already */
    h->lowcase_key = h->key.data;
    hash = weir_hash_key(h->key.data, namelen);
    h->hash = hash ? hash : 1;
    h->token = weir_http_header_token(h->lowcase_key, namelen, hash);
    h->next = NULL;

    if (hi == NULL) {
        return 0;
    }

    if (h->token == WEIR_HTTP_HDR_CONTENT_LENGTH) {
        n = weir_atoof(h->value.data, h->value.len);

        if (n < 0 || (hi->content_length && n != hi->content_length_n)) {
            weir_log_error(WEIR_LOG_ERR, u->request->connection->log, 0,
                           "upstream sent invalid \"content-length\": "
                           "\"%.*s\"", (int) valuelen, value);
            st->invalid = 1;
            st->failed = 1;
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        }

        hi->content_length_n = n;
    }

    link = weir_http_upstream_header_link(hi, h->token);

    if (link) {
        while (*link) {
            link = &(*link)->next;
        }

        *link = h;
    }

    return 0;
}


static int
weir_http_v2_up_on_frame_recv(nghttp2_session *session,
    const nghttp2_frame *frame, void *user_data)
{
    weir_http_v2_up_t      *h2 = user_data;
    weir_http_v2_ups_t     *st;
    weir_http_v2_uphead_t  *head;


    if (frame->hd.type == NGHTTP2_SETTINGS
        && !(frame->hd.flags & NGHTTP2_FLAG_ACK) && !h2->settings_in)
    {
        h2->settings_in = 1;
        weir_http_v2_up_submit_waiting(h2);
        return 0;
    }

    if (frame->hd.type == NGHTTP2_GOAWAY) {
        /* no new stream; those above last_stream_id are closed by
         * nghttp2 with REFUSED_STREAM: retried elsewhere */
        h2->goaway = 1;
        weir_http_upstream_session_drain(&h2->s);

        if (frame->goaway.error_code != NGHTTP2_NO_ERROR) {
            weir_log_error(WEIR_LOG_ERR, weir_cycle->log, 0,
                           "upstream HTTP/2 session *%lu: GOAWAY %s",
                           (unsigned long) h2->connection->number,
                           nghttp2_http2_strerror(frame->goaway.error_code));
        }

        return 0;
    }

    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA
        && frame->hd.type != NGHTTP2_RST_STREAM)
    {
        return 0;
    }

    st = weir_http_v2_up_stream(session, frame->hd.stream_id);

    if (st == NULL) {
        return 0;
    }

    if (frame->hd.type == NGHTTP2_RST_STREAM) {
        st->reset_in = 1;
        return 0;
    }

    if (frame->hd.type == NGHTTP2_HEADERS && st->cur) {
        head = st->cur;
        st->cur = NULL;

        if (head->hi.status_n >= 200) {
            st->final_in = 1;

        } else if (++st->ninterim > WEIR_HTTP_V2_UP_MAX_INTERIM) {
            weir_log_error(WEIR_LOG_ERR, st->conn.log, 0,
                           "upstream sent too many interim responses");
            st->failed = 1;
            (void) nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE,
                                             st->id, NGHTTP2_CANCEL);
            weir_http_v2_up_wake(st, 0);
            return 0;
        }

        *st->last_head = head;
        st->last_head = &head->next;
        weir_http_v2_up_wake(st, 0);
    }

    if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) {
        st->end_in = 1;
        weir_http_v2_up_wake(st, 0);
    }

    return 0;
}


static int
weir_http_v2_up_on_data(nghttp2_session *session, uint8_t flags,
    int32_t stream_id, const uint8_t *data, size_t len, void *user_data)
{
    weir_http_v2_ups_t  *st;

    (void) flags;
    (void) user_data;

    st = weir_http_v2_up_stream(session, stream_id);

    if (st == NULL) {
        /* nobody wants it: the credit goes back at once */
        (void) nghttp2_session_consume(session, stream_id, len);
        return 0;
    }

    if (weir_http_v2_up_put(st, &st->in, &st->last_in, data, len)
        != WEIR_OK)
    {
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }

    st->in_bytes += len;

    weir_http_v2_up_wake(st, 0);

    return 0;
}


static int
weir_http_v2_up_on_stream_close(nghttp2_session *session, int32_t stream_id,
    uint32_t error_code, void *user_data)
{
    weir_http_v2_up_t   *h2 = user_data;
    weir_http_v2_ups_t  *st;

    st = weir_http_v2_up_stream(session, stream_id);

    if (st == NULL) {
        return 0;
    }

    st->closed = 1;
    st->error_code = error_code;

    if (error_code != NGHTTP2_NO_ERROR || !st->end_in) {
        st->failed = 1;

        if (error_code == NGHTTP2_PROTOCOL_ERROR && !st->reset_in
            && !st->invalid && !h2->dead)
        {
            /* nghttp2 reset it: the response broke its checks (a
             * content-length the DATA contradicts, a field HTTP/2
             * forbids) */
            weir_log_error(WEIR_LOG_ERR, st->conn.log, 0,
                           "upstream sent an invalid HTTP/2 response, "
                           "stream reset with %s",
                           nghttp2_http2_strerror(error_code));
            st->invalid = 1;
        }

        if (error_code != NGHTTP2_REFUSED_STREAM && !st->invalid
            && error_code != NGHTTP2_NO_ERROR && st->final_head)
        {
            weir_log_error(WEIR_LOG_ERR, st->conn.log, 0,
                           "upstream reset the HTTP/2 stream: %s",
                           nghttp2_http2_strerror(error_code));
        }
    }

    (void) nghttp2_session_set_stream_user_data(session, stream_id, NULL);

    weir_http_v2_up_wake(st, 0);
    weir_http_v2_up_wake(st, 1);

    return 0;
}



/* a frame nghttp2 refused: for a stream, an invalid response (its
 * pseudo-headers, a connection-specific field, a content-length that the
 * DATA contradicts): 502 before the head went to the client, a cut body
 * after */

static int
weir_http_v2_up_on_invalid_frame(nghttp2_session *session,
    const nghttp2_frame *frame, int lib_error_code, void *user_data)
{
    weir_http_v2_up_t   *h2 = user_data;
    weir_http_v2_ups_t  *st;

    st = frame->hd.stream_id
         ? weir_http_v2_up_stream(session, frame->hd.stream_id) : NULL;

    if (st == NULL) {
        weir_log_error(WEIR_LOG_ERR, weir_cycle->log, 0,
                       "upstream HTTP/2 session *%lu: invalid frame "
                       "(type %d): %s",
                       (unsigned long) h2->connection->number,
                       (int) frame->hd.type, nghttp2_strerror(lib_error_code));
        return 0;
    }

    weir_log_error(WEIR_LOG_ERR, st->conn.log, 0,
                   "upstream sent an invalid HTTP/2 response: %s",
                   nghttp2_strerror(lib_error_code));

    st->invalid = 1;
    st->failed = 1;
    weir_http_v2_up_wake(st, 0);

    return 0;
}


/* every frame header: the abuse limits */

static int
weir_http_v2_up_on_begin_frame(nghttp2_session *session,
    const nghttp2_frame_hd *hd, void *user_data)
{
    weir_http_v2_up_t  *h2 = user_data;

    weir_uint_t          kind;
    weir_http_v2_ups_t  *st;
    static const char   *names[WEIR_HTTP_V2_UP_FLOOD_N] = {
        "PING or SETTINGS frames", "RST_STREAM frames",
        "WINDOW_UPDATE frames", "tiny DATA frames"
    };

    if (hd->type == NGHTTP2_CONTINUATION) {
        if (++h2->continuations <= WEIR_HTTP_V2_UP_MAX_CONTINUATION) {
            return 0;
        }

        weir_log_error(WEIR_LOG_ERR, weir_cycle->log, 0,
                       "upstream HTTP/2 session *%lu: more than %d "
                       "CONTINUATION frames in a header block",
                       (unsigned long) h2->connection->number,
                       WEIR_HTTP_V2_UP_MAX_CONTINUATION);
        goto calm;
    }

    if (hd->type == NGHTTP2_HEADERS) {
        h2->continuations = 0;
    }

    switch (hd->type) {

    case NGHTTP2_PING:
    case NGHTTP2_SETTINGS:
        if (hd->flags & NGHTTP2_FLAG_ACK) {
            return 0;
        }

        kind = WEIR_HTTP_V2_UP_FLOOD_PING;
        break;

    case NGHTTP2_RST_STREAM:
        kind = WEIR_HTTP_V2_UP_FLOOD_RESET;
        break;

    case NGHTTP2_WINDOW_UPDATE:
        kind = WEIR_HTTP_V2_UP_FLOOD_WINDOW;
        break;

    case NGHTTP2_DATA:
        if (hd->length >= WEIR_HTTP_V2_UP_TINY_DATA
            || (hd->flags & NGHTTP2_FLAG_END_STREAM))
        {
            return 0;
        }

        /* a gRPC unary answer is a tiny DATA and trailers, a WebSocket
         * tunnel's frames are as small as its messages: what a stream
         * sends as a flood is more, and outside a tunnel */
        st = weir_http_v2_up_stream(session, hd->stream_id);

        if (st && st->tiny_in < WEIR_HTTP_V2_UP_TINY_FREE) {
            st->tiny_in++;
            return 0;
        }

        if (st && ((weir_http_v2_up_ctx_t *) st->upstream->proto_ctx)
                  ->websocket)
        {
            return 0;
        }

        kind = WEIR_HTTP_V2_UP_FLOOD_DATA;
        break;

    default:
        return 0;
    }

    if (weir_current_msec - h2->flood_start >= 1000) {
        h2->flood_start = weir_current_msec;
        weir_memzero(h2->flood, sizeof(h2->flood));
    }

    if (++h2->flood[kind] <= WEIR_HTTP_V2_UP_FLOOD_FRAMES) {
        return 0;
    }

    weir_log_error(WEIR_LOG_ERR, weir_cycle->log, 0,
                   "upstream HTTP/2 flood on session *%lu: more than %d %s "
                   "in a second, GOAWAY ENHANCE_YOUR_CALM",
                   (unsigned long) h2->connection->number,
                   WEIR_HTTP_V2_UP_FLOOD_FRAMES, names[kind]);

calm:

    (void) nghttp2_session_terminate_session(session,
                                             NGHTTP2_ENHANCE_YOUR_CALM);

    return NGHTTP2_ERR_CALLBACK_FAILURE;
}
