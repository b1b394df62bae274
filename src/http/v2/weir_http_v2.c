#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_http.h"
#include "weir_http_v2.h"

/*
 * The HTTP/2 session of one client connection: nghttp2 does the framing,
 * HPACK, stream states, flow-control accounting and most of RFC 9113's
 * checks; this file moves bytes between the socket and nghttp2.
 *
 * Reading: c->recv into a buffer shared by the worker's sessions
 * (nghttp2_session_mem_recv copies what it keeps), then
 * nghttp2_session_mem_recv.
 *
 * Writing: whoever gives nghttp2 something to send (a response head, a
 * resumed body, a WINDOW_UPDATE) calls weir_http_v2_post_write(), which
 * posts the connection's write event once. When it runs, after the
 * other events of this pass, everything nghttp2_session_mem_send has is
 * copied into one output buffer and written with one c->writev: the
 * frames of many streams go out together, never one syscall per frame.
 * A stream with much queued is written at once (weir_http_v2_write_now)
 * so that the buffers it came from are free again.
 * While the socket is full the rest waits in the buffer and nghttp2 is
 * not asked for more (back-pressure: its data providers are not called,
 * so the streams' queues stay full and their requests wait).
 */


/*
 * Abuse limits that nghttp2 does not have (docs/dev/http2.md, Limits):
 * frames of a kind that carry no request progress, per one-second
 * window. Fixed rather than directives: a client that works never
 * comes near them (a browser sends a few PRIORITY frames, a
 * WINDOW_UPDATE or two for each DATA frame it takes, small DATA frames
 * only at the end of a body), and a flood passes them in milliseconds.
 */
#define WEIR_HTTP_V2_FLOOD_FRAMES  1000
#define WEIR_HTTP_V2_FRAME_HEADER_SIZE  9     /* RFC 9113 4.1 */
/* DATA frames with less payload than this, not ending the stream */
#define WEIR_HTTP_V2_TINY_DATA     64
/* streams refused or reset before their response, a second, at least */
#define WEIR_HTTP_V2_STREAM_FLOOD  100
/* nghttp2's own: PING and SETTINGS acknowledgements queued, CONTINUATION
 * frames in one header block */
#define WEIR_HTTP_V2_MAX_ACKS      1000
#define WEIR_HTTP_V2_MAX_CONT      8
#define WEIR_HTTP_V2_MAX_SETTINGS  32  /* entries in one SETTINGS */


static void weir_http_v2_read_handler(weir_event_t *rev);
static void weir_http_v2_write_handler(weir_event_t *wev);
static void weir_http_v2_write(weir_http_v2_conn_t *h2c);
static weir_int_t weir_http_v2_flush(weir_http_v2_conn_t *h2c);
static void weir_http_v2_set_idle(weir_http_v2_conn_t *h2c);
static void weir_http_v2_shutdown(weir_http_v2_conn_t *h2c);
static void weir_http_v2_shutdown_handler(weir_event_t *ev);
static void weir_http_v2_final_goaway(weir_http_v2_conn_t *h2c);
static void weir_http_v2_finalize(weir_http_v2_conn_t *h2c);
static weir_uint_t weir_http_v2_may_linger(weir_http_v2_conn_t *h2c);
static void weir_http_v2_lingering_close(weir_http_v2_conn_t *h2c);
static void weir_http_v2_session_cleanup(void *data);
static int weir_http_v2_on_frame_recv(nghttp2_session *session,
    const nghttp2_frame *frame, void *user_data);
static int weir_http_v2_on_invalid_frame(nghttp2_session *session,
    const nghttp2_frame *frame, int lib_error_code, void *user_data);
static int weir_http_v2_error_callback(nghttp2_session *session,
    int lib_error_code, const char *msg, size_t len, void *user_data);
static int weir_http_v2_on_frame_send(nghttp2_session *session,
    const nghttp2_frame *frame, void *user_data);
static int weir_http_v2_on_begin_frame(nghttp2_session *session,
    const nghttp2_frame_hd *hd, void *user_data);
static void weir_http_v2_recv_error(weir_http_v2_conn_t *h2c, ssize_t rv);
static void weir_http_v2_patch_settings(void *data,
    unsigned char *p, size_t len);


static const char  *weir_http_v2_flood_names[WEIR_HTTP_V2_FLOOD_N] = {
    "refused streams (http2_max_concurrent_streams)",
    "streams reset by the client before their response",
    "WINDOW_UPDATE frames beyond the DATA frames sent",
    "PRIORITY frames",
    "empty or tiny DATA frames"
};


/* the worker's receive buffer (http2_recv_buffer_size), shared by every
 * session: nothing points into it after nghttp2_session_mem_recv */
static unsigned char  *weir_http_v2_recv_buf;
static size_t          weir_http_v2_recv_size;


static weir_http_v2_srv_conf_t *
weir_http_v2_srv_conf(weir_http_connection_t *hc)
{
    return hc->conf_ctx->srv_conf[weir_http_v2_module.ctx_index];
}


weir_uint_t
weir_http_v2_enabled(weir_connection_t *c)
{
    weir_http_connection_t  *hc;

    hc = c->data;

    if (hc->addr_conf->http2) {
        return 1;
    }

    return weir_http_v2_srv_conf(hc)->enable == 1;
}


void
weir_http_v2_init_connection(weir_connection_t *c, unsigned char *data,
    size_t len)
{
    int                          rv;
    ssize_t                      n;
    weir_uint_t                  i, refused;
    weir_event_t                *rev;
    nghttp2_option              *opt;
    nghttp2_settings_entry       iv[5];
    weir_pool_cleanup_t         *cln;
    weir_http_v2_conn_t         *h2c;
    weir_http_connection_t      *hc;
    weir_http_v2_srv_conf_t     *h2scf;
    weir_http_core_srv_conf_t   *cscf;
    weir_http_core_loc_conf_t   *clcf;
    nghttp2_session_callbacks   *cb;

    hc = c->data;
    rev = c->read;

    h2c = weir_pcalloc(c->pool, sizeof(weir_http_v2_conn_t));
    if (h2c == NULL) {
        weir_http_close_connection(c);
        return;
    }

    h2scf = weir_http_v2_srv_conf(hc);
    cscf = hc->conf_ctx->srv_conf[weir_http_core_module.ctx_index];
    clcf = hc->conf_ctx->loc_conf[weir_http_core_module.ctx_index];

    h2c->connection = c;
    h2c->http_connection = hc;
    h2c->h2scf = h2scf;
    h2c->ssl = c->ssl ? 1 : 0;
    h2c->idle_timeout = clcf->keepalive_timeout;
    h2c->header_timeout = cscf->client_header_timeout;
    h2c->keepalive_requests = clcf->keepalive_requests;
    weir_queue_init(&h2c->streams);

    for (i = 0; i < WEIR_HTTP_V2_FLOOD_N; i++) {
        h2c->flood_limit[i] = WEIR_HTTP_V2_FLOOD_FRAMES;
    }

    refused = weir_max(h2scf->max_concurrent_streams,
                       WEIR_HTTP_V2_STREAM_FLOOD);
    h2c->flood_limit[WEIR_HTTP_V2_FLOOD_REFUSED] = refused;
    /* in one burst the reset streams stay counted until their requests
     * end, so it is the refused streams limit that trips; paced, this */
    h2c->flood_limit[WEIR_HTTP_V2_FLOOD_RESET] = 2 * refused;
    h2c->flood_start = weir_current_msec;
    h2c->max_headers_id = -1;

    h2c->shutdown.data = h2c;
    h2c->shutdown.handler = weir_http_v2_shutdown_handler;
    h2c->shutdown.log = c->log;
    h2c->shutdown.cancelable = 1;

    hc->proto_ctx = h2c;

    cln = weir_pool_cleanup_add(c->pool, 0);
    if (cln == NULL) {
        weir_http_close_connection(c);
        return;
    }

    cln->handler = weir_http_v2_session_cleanup;
    cln->data = h2c;

    if (nghttp2_session_callbacks_new(&cb) != 0) {
        weir_http_close_connection(c);
        return;
    }

    nghttp2_session_callbacks_set_on_begin_headers_callback(cb,
        weir_http_v2_on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb,
        weir_http_v2_on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb,
        weir_http_v2_on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb,
        weir_http_v2_on_data_chunk);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb,
        weir_http_v2_on_stream_close);
    nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(cb,
        weir_http_v2_on_invalid_frame);
    nghttp2_session_callbacks_set_error_callback2(cb,
        weir_http_v2_error_callback);
    nghttp2_session_callbacks_set_on_frame_send_callback(cb,
        weir_http_v2_on_frame_send);
    nghttp2_session_callbacks_set_on_begin_frame_callback(cb,
        weir_http_v2_on_begin_frame);

    if (nghttp2_option_new(&opt) != 0) {
        nghttp2_session_callbacks_del(cb);
        weir_http_close_connection(c);
        return;
    }

    /* a stream's credit is given back as its request body is taken,
     * the connection's as DATA arrives (on_data_chunk) */
    nghttp2_option_set_no_auto_window_update(opt, 1);
    /* floods of PING and SETTINGS (their ACKs queue up), rapid reset,
     * CONTINUATION; the HPACK table the client may make us keep */
    nghttp2_option_set_max_outbound_ack(opt, WEIR_HTTP_V2_MAX_ACKS);
    nghttp2_option_set_max_settings(opt, WEIR_HTTP_V2_MAX_SETTINGS);
    /* weir's own count of streams reset before their response trips
     * first (GOAWAY ENHANCE_YOUR_CALM): this is the backstop */
    nghttp2_option_set_stream_reset_rate_limit(opt,
        weir_max(1000, 4 * (uint64_t) refused), 33);
    nghttp2_option_set_max_continuations(opt, WEIR_HTTP_V2_MAX_CONT);
    nghttp2_option_set_max_deflate_dynamic_table_size(opt, 4096);

    rv = nghttp2_session_server_new3(&h2c->session, cb, h2c, opt,
                                     weir_http_v2_mem());

    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cb);

    if (rv != 0) {
        weir_log_error(WEIR_LOG_ERR, c->log, 0,
                       "nghttp2_session_server_new() failed: %s",
                       nghttp2_strerror(rv));
        h2c->session = NULL;
        weir_http_close_connection(c);
        return;
    }

    /* nghttp2 ends the connection (PROTOCOL_ERROR) for a stream above
     * the limit it sent once the client acknowledged it: it is told a
     * higher one, weir refuses the streams above
     * http2_max_concurrent_streams itself (REFUSED_STREAM, RFC 9113
     * 5.1.2, weir_http_v2_refuse_stream) and the client is told the real
     * limit (weir_http_v2_patch_settings) */
    h2c->wire.patch = weir_http_v2_patch_settings;
    h2c->wire.patch_data = h2c;

    iv[0].settings_id = NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS;
    iv[0].value = (uint32_t) weir_min(h2scf->max_concurrent_streams
                                      + refused + 1, 0x7fffffff);
    iv[1].settings_id = NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE;
    iv[1].value = (uint32_t) h2scf->stream_window;
    iv[2].settings_id = NGHTTP2_SETTINGS_ENABLE_PUSH;
    iv[2].value = 0;
    /* as nginx: a field fits one large_client_header_buffers buffer,
     * the list all of them */
    iv[3].settings_id = NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE;
    iv[3].value = (uint32_t) (cscf->large_client_header_buffers.size
                              * cscf->large_client_header_buffers.num);
    /* Extended CONNECT (RFC 8441): WebSocket over a stream */
    iv[4].settings_id = NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL;
    iv[4].value = 1;

    if (nghttp2_submit_settings(h2c->session, NGHTTP2_FLAG_NONE, iv, 5) != 0
        || nghttp2_session_set_local_window_size(h2c->session,
               NGHTTP2_FLAG_NONE, 0, (int32_t) h2scf->connection_window)
           != 0)
    {
        weir_http_close_connection(c);
        return;
    }

    c->log->action = "processing HTTP/2 connection";

    rev->handler = weir_http_v2_read_handler;
    c->write->handler = weir_http_v2_write_handler;

    if (rev->timer_set) {
        weir_event_del_timer(rev);
    }

    h2c->in_handler = 1;

    if (len) {
        n = nghttp2_session_mem_recv(h2c->session, data, len);

        if (n < 0) {
            weir_http_v2_recv_error(h2c, n);
            h2c->close_pending = 1;
        }
    }

    h2c->in_handler = 0;

    if (h2c->close_pending) {
        weir_http_v2_finalize(h2c);
        return;
    }

    weir_reusable_connection(c, 1);
    weir_http_v2_set_idle(h2c);
    weir_http_v2_post_write(h2c);

    if (weir_handle_read_event(rev, 0) != WEIR_OK) {
        weir_http_v2_finalize(h2c);
        return;
    }

    if (c->ssl || rev->ready) {
        /* the first frames may be in the TLS library already */
        rev->ready = 1;
        weir_post_event(rev, &weir_posted_events);
    }
}


static void
weir_http_v2_session_cleanup(void *data)
{
    weir_http_v2_conn_t  *h2c = data;

    h2c->destroyed = 1;

    if (h2c->shutdown.timer_set) {
        weir_event_del_timer(&h2c->shutdown);
    }

    if (h2c->session) {
        nghttp2_session_del(h2c->session);
        h2c->session = NULL;
    }

    weir_http_v2_wire_free(&h2c->wire);
}


/* the connection's timer while no stream is open: the preface and first
 * request within client_header_timeout, then keepalive_timeout */

static void
weir_http_v2_set_idle(weir_http_v2_conn_t *h2c)
{
    weir_connection_t  *c;

    c = h2c->connection;

    if (h2c->nstreams) {
        if (c->read->timer_set) {
            weir_event_del_timer(c->read);
        }
        return;
    }

    weir_event_add_timer(c->read, h2c->nrequests ? h2c->idle_timeout
                                                 : h2c->header_timeout);
}


/*
 * The receive buffer every session of the worker reads into, servers'
 * and clients' (nghttp2_session_mem_recv copies what it keeps): grown to
 * size when a configuration asks for more, never freed.
 */

unsigned char *
weir_http_v2_recv_buffer(size_t size, weir_log_t *log)
{
    if (weir_http_v2_recv_size < size) {
        if (weir_http_v2_recv_buf) {
            weir_free(weir_http_v2_recv_buf);
        }

        weir_http_v2_recv_size = 0;
        weir_http_v2_recv_buf = weir_alloc(size, log);

        if (weir_http_v2_recv_buf == NULL) {
            return NULL;
        }

        weir_http_v2_recv_size = size;
    }

    return weir_http_v2_recv_buf;
}


static void
weir_http_v2_read_handler(weir_event_t *rev)
{
    unsigned char             *buf;
    ssize_t                    n, rv;
    size_t                     size, total;
    weir_connection_t         *c;
    weir_http_v2_conn_t       *h2c;
    weir_http_connection_t    *hc;
    weir_http_v2_main_conf_t  *h2mcf;

    c = rev->data;
    hc = c->data;
    h2c = hc->proto_ctx;

    if (rev->timedout) {
        rev->timedout = 0;

        if (h2c->nstreams == 0) {
            weir_log_error(WEIR_LOG_INFO, c->log, WEIR_ETIMEDOUT,
                           h2c->nrequests ? "client timed out (HTTP/2 idle)"
                           : "client timed out (HTTP/2 preface)");
            (void) nghttp2_submit_goaway(h2c->session, NGHTTP2_FLAG_NONE,
                nghttp2_session_get_last_proc_stream_id(h2c->session),
                NGHTTP2_NO_ERROR, NULL, 0);
            (void) weir_http_v2_flush(h2c);
            weir_http_v2_finalize(h2c);
            return;
        }
    }

    if (c->close) {
        /* the worker shuts down (or lacks connections): GOAWAY, finish
         * the streams in flight */
        c->close = 0;
        weir_http_v2_shutdown(h2c);
        return;
    }

    h2mcf = hc->conf_ctx->main_conf[weir_http_v2_module.ctx_index];
    size = h2mcf->recv_buffer_size;

    buf = weir_http_v2_recv_buffer(size, c->log);

    if (buf == NULL) {
        weir_http_v2_finalize(h2c);
        return;
    }

    total = 0;
    h2c->in_handler = 1;

    for ( ;; ) {

        if (!rev->ready && c->ssl && c->ssl->ops->pending(c)) {
            rev->ready = 1;
        }

        if (!rev->ready) {
            break;
        }

        if (total >= size) {
            /* the other connections get their turn */
            weir_post_event(rev, &weir_posted_next_events);
            break;
        }

        n = c->recv(c, buf, size);

        if (n == WEIR_AGAIN) {
            break;
        }

        if (n == 0 || n == WEIR_ERROR) {
            if (n == 0 && h2c->nstreams) {
                weir_log_error(WEIR_LOG_INFO, c->log, 0,
                               "client prematurely closed HTTP/2 "
                               "connection");
            }

            c->error = 1;
            h2c->broken = 1;
            h2c->close_pending = 1;
            break;
        }

        total += n;

        rv = nghttp2_session_mem_recv(h2c->session, buf,
                                      (size_t) n);

        if (rv < 0) {
            weir_http_v2_recv_error(h2c, rv);
            h2c->close_pending = 1;
            (void) weir_http_v2_flush(h2c);
            break;
        }

        if (h2c->close_pending) {
            break;
        }
    }

    h2c->in_handler = 0;

    if (h2c->close_pending) {
        weir_http_v2_finalize(h2c);
        return;
    }

    if (weir_handle_read_event(rev, 0) != WEIR_OK) {
        weir_http_v2_finalize(h2c);
        return;
    }

    weir_http_v2_post_write(h2c);
    weir_http_v2_check_close(h2c);
}


void
weir_http_v2_post_write(weir_http_v2_conn_t *h2c)
{
    weir_event_t  *wev;

    if (h2c->wire.posted || h2c->wire.blocked || h2c->destroyed) {
        return;
    }

    wev = h2c->connection->write;

    if (wev->posted) {
        return;
    }

    h2c->wire.posted = 1;
    weir_post_event(wev, &weir_posted_events);
}


/*
 * Writes now what a stream queued (send_body, once the stream holds
 * enough that the buffers of whoever produces it, the upstream's, would
 * otherwise stay busy until the end of the pass and the upstream spill
 * to a temporary file): the data providers copy out of them at once.
 * Not inside nghttp2's callbacks (mem_recv runs with in_handler set) nor
 * while the socket is full: then the write is posted as usual. An error
 * or a close is left to the write handler.
 */

void
weir_http_v2_write_now(weir_http_v2_conn_t *h2c)
{
    weir_int_t  rc;

    if (h2c->in_handler || h2c->wire.blocked || h2c->destroyed
        || h2c->close_pending || h2c->session == NULL)
    {
        weir_http_v2_post_write(h2c);
        return;
    }

    h2c->in_handler = 1;
    rc = weir_http_v2_flush(h2c);
    h2c->in_handler = 0;

    if (rc == WEIR_ERROR || h2c->close_pending) {
        weir_http_v2_post_write(h2c);
    }
}


static void
weir_http_v2_write_handler(weir_event_t *wev)
{
    weir_connection_t       *c;
    weir_http_v2_conn_t     *h2c;
    weir_http_connection_t  *hc;

    c = wev->data;
    hc = c->data;
    h2c = hc->proto_ctx;

    h2c->wire.posted = 0;

    if (wev->timedout) {
        weir_log_error(WEIR_LOG_INFO, c->log, WEIR_ETIMEDOUT,
                       "client timed out (HTTP/2 send)");
        c->timedout = 1;
        c->error = 1;
        h2c->broken = 1;
        weir_http_v2_finalize(h2c);
        return;
    }

    weir_http_v2_write(h2c);
}


static void
weir_http_v2_write(weir_http_v2_conn_t *h2c)
{
    weir_int_t  rc;

    rc = weir_http_v2_flush(h2c);

    if (rc == WEIR_ERROR) {
        weir_http_v2_finalize(h2c);
        return;
    }

    weir_http_v2_check_close(h2c);
}


/*
 * The session's output: weir_http_v2_wire_flush (weir_http_v2_wire.c)
 * with this connection's send_timeout; a socket error or a timed-out
 * send marks the session broken.
 */

static weir_int_t
weir_http_v2_flush(weir_http_v2_conn_t *h2c)
{
    weir_int_t                  rc;
    weir_http_core_loc_conf_t  *clcf;

    if (h2c->session == NULL) {
        return WEIR_ERROR;
    }

    clcf = h2c->http_connection->conf_ctx
               ->loc_conf[weir_http_core_module.ctx_index];

    rc = weir_http_v2_wire_flush(&h2c->wire, h2c->session, h2c->connection,
                                 clcf->send_timeout, h2c->nstreams == 0);

    if (h2c->wire.broken) {
        h2c->broken = 1;
    }

    return rc;
}


/*
 * Closes the session when nothing is left to do: nghttp2 wants neither
 * to read nor to write (after a GOAWAY both ways, or a fatal error),
 * or the shutdown GOAWAY went out and the last stream is gone.
 */

void
weir_http_v2_check_close(weir_http_v2_conn_t *h2c)
{
    if (h2c->destroyed || h2c->in_handler) {
        return;
    }

    if (h2c->close_pending) {
        weir_http_v2_finalize(h2c);
        return;
    }

    if (h2c->wire.out_pos < h2c->wire.out_last || h2c->wire.pend_len) {
        return;
    }

    if (nghttp2_session_want_write(h2c->session)) {
        return;
    }

    if (h2c->failed && !nghttp2_session_want_read(h2c->session)) {
        /* the error GOAWAY is out (nghttp2 may send it by itself, in the
         * middle of mem_recv): the streams left are aborted */
        weir_http_v2_finalize(h2c);
        return;
    }

    if (nghttp2_session_want_read(h2c->session)
        && !(h2c->goaway_final && h2c->nstreams == 0))
    {
        weir_http_v2_set_idle(h2c);
        return;
    }

    if (h2c->nstreams) {
        return;
    }

    weir_http_v2_finalize(h2c);
}


/*
 * Graceful shutdown (RFC 9113 6.8): a GOAWAY with the largest stream id
 * and a PING; when the PING comes back (or after a second, for a client
 * that does not answer) the GOAWAY with the real last stream id. The
 * streams in flight finish; the session closes when none is left.
 */

static void
weir_http_v2_shutdown(weir_http_v2_conn_t *h2c)
{
    if (h2c->closing) {
        return;
    }

    h2c->closing = 1;

    if (nghttp2_submit_shutdown_notice(h2c->session) != 0
        || nghttp2_submit_ping(h2c->session, NGHTTP2_FLAG_NONE,
                               (const uint8_t *) "weir-bye") != 0)
    {
        weir_http_v2_final_goaway(h2c);
        return;
    }

    weir_event_add_timer(&h2c->shutdown, 1000);

    weir_http_v2_post_write(h2c);
}


static void
weir_http_v2_shutdown_handler(weir_event_t *ev)
{
    weir_http_v2_conn_t  *h2c;

    h2c = ev->data;

    weir_http_v2_final_goaway(h2c);
}


static void
weir_http_v2_final_goaway(weir_http_v2_conn_t *h2c)
{
    if (h2c->goaway_final || h2c->session == NULL) {
        return;
    }

    h2c->goaway_final = 1;

    if (h2c->shutdown.timer_set) {
        weir_event_del_timer(&h2c->shutdown);
    }

    (void) nghttp2_submit_goaway(h2c->session, NGHTTP2_FLAG_NONE,
               nghttp2_session_get_last_proc_stream_id(h2c->session),
               NGHTTP2_NO_ERROR, NULL, 0);

    weir_http_v2_post_write(h2c);

    if (!h2c->in_handler) {
        weir_http_v2_check_close(h2c);
    }
}


/* ends the session: the streams left are told (c->error) and the
 * connection closes when the last of them is freed */

static void
weir_http_v2_finalize(weir_http_v2_conn_t *h2c)
{
    weir_connection_t  *c;

    if (h2c->destroyed) {
        return;
    }

    c = h2c->connection;

    if (h2c->in_handler) {
        h2c->close_pending = 1;
        return;
    }

    h2c->close_pending = 1;

    if (!h2c->finalizing) {
        h2c->finalizing = 1;

        if (c->error || c->timedout) {
            /* not the c->error set below, which stops the writes */
            h2c->broken = 1;
        }
    }

    if (h2c->nstreams) {
        c->error = 1;

        if (c->read->timer_set) {
            weir_event_del_timer(c->read);
        }

        weir_http_v2_close_streams(h2c);

        /* the last stream's request_done calls check_close again */
        return;
    }

    h2c->destroyed = 1;

    if (weir_http_v2_may_linger(h2c)) {
        weir_http_v2_lingering_close(h2c);
        return;
    }

    weir_http_close_connection(c);
}


/*
 * Closing with unread client bytes in the socket makes the kernel
 * answer them with a RST, which destroys what is still in our socket
 * buffer (the GOAWAY, the end of the last responses) and may reach the
 * client before it read them. A client goes on sending after our last
 * GOAWAY until it has read it (requests above its last-stream-id,
 * WINDOW_UPDATE, PING): so, as HTTP/1 does, the connection lingers
 * unless lingering_close is off, the GOAWAY did not go out whole, or
 * the connection already failed.
 */

static weir_uint_t
weir_http_v2_may_linger(weir_http_v2_conn_t *h2c)
{
    weir_connection_t          *c;
    weir_http_core_loc_conf_t  *clcf;

    c = h2c->connection;
    clcf = h2c->http_connection->conf_ctx
               ->loc_conf[weir_http_core_module.ctx_index];

    return h2c->goaway_sent && !h2c->broken && !c->timedout
           && h2c->wire.out_pos == h2c->wire.out_last && h2c->wire.pend_len == 0
           && clcf->lingering_close != WEIR_HTTP_LINGERING_OFF;
}


/*
 * The lingering close: the session is freed (no frame is parsed any
 * more), and the connection reads and drops what the client still sends
 * as HTTP/1's does (weir_http_lingering_close).
 */

static void
weir_http_v2_lingering_close(weir_http_v2_conn_t *h2c)
{
    weir_connection_t          *c;
    weir_http_core_loc_conf_t  *clcf;

    c = h2c->connection;
    clcf = h2c->http_connection->conf_ctx
               ->loc_conf[weir_http_core_module.ctx_index];

    /* the c->error finalize set to stop the streams' writes: the
     * connection itself is sound */
    c->error = 0;

    weir_http_v2_session_cleanup(h2c);

    weir_http_lingering_close(c, clcf);
}


static int
weir_http_v2_on_frame_recv(nghttp2_session *session,
    const nghttp2_frame *frame, void *user_data)
{
    weir_http_v2_conn_t    *h2c = user_data;
    weir_http_v2_stream_t  *st;

    (void) session;

    switch (frame->hd.type) {

    case NGHTTP2_WINDOW_UPDATE:
        return weir_http_v2_flood(h2c, WEIR_HTTP_V2_FLOOD_WINDOW);

    case NGHTTP2_PRIORITY:
        return weir_http_v2_flood(h2c, WEIR_HTTP_V2_FLOOD_PRIORITY);

    case NGHTTP2_RST_STREAM:
        st = nghttp2_session_get_stream_user_data(session,
                                                  frame->hd.stream_id);
        if (st && !st->done && !st->response_submitted) {
            /* rapid reset (CVE-2023-44487): the work is done for
             * nothing */
            return weir_http_v2_flood(h2c, WEIR_HTTP_V2_FLOOD_RESET);
        }

        return 0;

    case NGHTTP2_DATA:
        if (!(frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
            && frame->hd.length - frame->data.padlen
               < WEIR_HTTP_V2_TINY_DATA
            && !weir_http_v2_is_tunnel(h2c, frame->hd.stream_id)
            && weir_http_v2_flood(h2c, WEIR_HTTP_V2_FLOOD_DATA) != 0)
        {
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        }

        return weir_http_v2_on_frame_recv_stream(h2c, frame);

    case NGHTTP2_PING:
        if ((frame->hd.flags & NGHTTP2_FLAG_ACK) && h2c->closing
            && weir_memcmp(frame->ping.opaque_data, "weir-bye", 8) == 0)
        {
            /* one round trip after the notice: the requests the client
             * sent before it are all here */
            weir_http_v2_final_goaway(h2c);
        }

        return 0;

    case NGHTTP2_GOAWAY:
        /* the client leaves: no new stream, the open ones finish */
        h2c->goaway_final = 1;
        return 0;

    default:
        return weir_http_v2_on_frame_recv_stream(h2c, frame);
    }
}


static int
weir_http_v2_on_invalid_frame(nghttp2_session *session,
    const nghttp2_frame *frame, int lib_error_code, void *user_data)
{
    weir_http_v2_conn_t  *h2c = user_data;

    (void) session;

    weir_log_error(WEIR_LOG_INFO, h2c->connection->log, 0,
                   "client sent invalid HTTP/2 frame (type %d, stream %d):"
                   " %s", (int) frame->hd.type, (int) frame->hd.stream_id,
                   nghttp2_strerror(lib_error_code));

    return 0;
}


/* nghttp2's messages quote the client's fields as they came (CR, LF
 * and all): escaped, so that a client cannot write log lines */

static int
weir_http_v2_error_callback(nghttp2_session *session, int lib_error_code,
    const char *msg, size_t len, void *user_data)
{
    char                  quoted[512];
    weir_http_v2_conn_t  *h2c = user_data;

    (void) session;
    (void) lib_error_code;

    weir_log_error(WEIR_LOG_INFO, h2c->connection->log, 0, "HTTP/2: %s",
                   weir_quote_for_log(quoted, sizeof(quoted),
                                      (unsigned char *) msg, len));

    return 0;
}


static int
weir_http_v2_on_frame_send(nghttp2_session *session,
    const nghttp2_frame *frame, void *user_data)
{
    off_t                   size;
    weir_http_v2_conn_t    *h2c = user_data;
    weir_http_v2_stream_t  *st;

    (void) session;

    if (frame->hd.type == NGHTTP2_DATA) {
        /* each allows the client a WINDOW_UPDATE for the stream and one
         * for the connection */
        h2c->data_sent++;
        return 0;
    }

    if (frame->hd.type == NGHTTP2_HEADERS) {
        /* $bytes_sent counts the head as framed (the DATA payload is
         * counted as it is copied); trailers (no :status, which comes
         * first in a head, interim or final) are not the head of
         * $body_bytes_sent */
        st = nghttp2_session_get_stream_user_data(session,
                                                  frame->hd.stream_id);
        if (st && st->request) {
            size = WEIR_HTTP_V2_FRAME_HEADER_SIZE + frame->hd.length;
            st->fc->sent += size;

            if (frame->headers.nvlen
                && frame->headers.nva[0].namelen == sizeof(":status") - 1
                && weir_memcmp(frame->headers.nva[0].name, ":status",
                               sizeof(":status") - 1) == 0)
            {
                st->request->header_out_size += size;
            }

            if (st->head_pending
                && (frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
            {
                /* the response without a body is out: it ends now */
                st->head_pending = 0;
                weir_http_v2_wake_writer(st);
            }
        }

        return 0;
    }

    if (frame->hd.type == NGHTTP2_GOAWAY) {
        /* in the output: the close after it lingers */
        h2c->goaway_sent = 1;
    }

    if (frame->hd.type == NGHTTP2_GOAWAY
        && frame->goaway.error_code != NGHTTP2_NO_ERROR && !h2c->failed)
    {
        /* nghttp2 ended the session by itself in the middle of mem_recv
         * (max_settings, a protocol error): its reason, as it gave it */
        h2c->failed = 1;

        if (frame->goaway.opaque_data_len) {
            weir_log_error(WEIR_LOG_INFO, h2c->connection->log, 0,
                           "client HTTP/2 error, GOAWAY %s: %.*s",
                           nghttp2_http2_strerror(frame->goaway.error_code),
                           (int) frame->goaway.opaque_data_len,
                           (const char *) frame->goaway.opaque_data);

        } else {
            weir_log_error(WEIR_LOG_INFO, h2c->connection->log, 0,
                           "client HTTP/2 error, GOAWAY %s",
                           nghttp2_http2_strerror(frame->goaway.error_code));
        }
    }

    return 0;
}


/*
 * Counts a frame of a flood kind in the current one-second window.
 * Past the kind's limit: logged (naming it), GOAWAY ENHANCE_YOUR_CALM
 * queued, and NGHTTP2_ERR_CALLBACK_FAILURE returned for the callback to
 * return, so nghttp2_session_mem_recv stops at once.
 */

int
weir_http_v2_flood(weir_http_v2_conn_t *h2c, weir_uint_t kind)
{
    weir_uint_t  limit;

    if (h2c->failed) {
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }

    if (weir_current_msec - h2c->flood_start >= 1000) {
        h2c->flood_start = weir_current_msec;
        weir_memzero(h2c->flood, sizeof(h2c->flood));
        h2c->data_sent = 0;
    }

    limit = h2c->flood_limit[kind];

    if (kind == WEIR_HTTP_V2_FLOOD_WINDOW) {
        limit += 2 * h2c->data_sent;
    }

    if (++h2c->flood[kind] <= limit) {
        return 0;
    }

    weir_log_error(WEIR_LOG_INFO, h2c->connection->log, 0,
                   "client HTTP/2 flood: more than %lu %s in a second, "
                   "GOAWAY ENHANCE_YOUR_CALM",
                   (unsigned long) limit, weir_http_v2_flood_names[kind]);

    h2c->failed = 1;

    (void) nghttp2_session_terminate_session(h2c->session,
                                             NGHTTP2_ENHANCE_YOUR_CALM);

    return NGHTTP2_ERR_CALLBACK_FAILURE;
}


/*
 * A new stream beyond http2_max_concurrent_streams (weir's streams, so
 * a request still finishing after the client reset its stream counts):
 * RST_STREAM REFUSED_STREAM, which the client may retry (RFC 9113
 * 5.1.2, 8.7); the header block is still decoded by nghttp2 (the HPACK
 * state) but its fields find no stream. A client that keeps opening
 * streams past the limit trips the refused streams flood limit.
 */

int
weir_http_v2_refuse_stream(weir_http_v2_conn_t *h2c, int32_t id)
{
    int  rv;

    if (h2c->nstreams < h2c->h2scf->max_concurrent_streams) {
        return 0;
    }

    rv = weir_http_v2_flood(h2c, WEIR_HTTP_V2_FLOOD_REFUSED);
    if (rv != 0) {
        return rv;
    }

    if (h2c->flood[WEIR_HTTP_V2_FLOOD_REFUSED] == 1) {
        /* the first of the window: a flood is logged when it trips */
        weir_log_error(WEIR_LOG_INFO, h2c->connection->log, 0,
                       "client exceeded http2_max_concurrent_streams (%lu):"
                       " stream %d refused",
                       (unsigned long) h2c->h2scf->max_concurrent_streams,
                       (int) id);
    }

    if (nghttp2_submit_rst_stream(h2c->session, NGHTTP2_FLAG_NONE, id,
                                  NGHTTP2_REFUSED_STREAM)
        != 0)
    {
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }

    return 1;
}


/*
 * nghttp2_session_mem_recv failed: the reason is logged and the session
 * ends with a GOAWAY. nghttp2 has queued one for a protocol error;
 * for its floods (the PING and SETTINGS acknowledgements a client does
 * not read, max_outbound_ack; CONTINUATION, max_continuations) it has
 * not, and one is queued here (terminate_session keeps nghttp2's own).
 */

static void
weir_http_v2_recv_error(weir_http_v2_conn_t *h2c, ssize_t rv)
{
    uint32_t            err;
    weir_connection_t  *c;

    c = h2c->connection;
    err = NGHTTP2_PROTOCOL_ERROR;

    switch (rv) {

    case NGHTTP2_ERR_CALLBACK_FAILURE:
        if (h2c->failed) {
            /* logged by weir_http_v2_flood() */
            return;
        }

        weir_log_error(WEIR_LOG_INFO, c->log, 0,
                       "HTTP/2 session failed while processing frames");
        err = NGHTTP2_INTERNAL_ERROR;
        break;

    case NGHTTP2_ERR_FLOODED:
        weir_log_error(WEIR_LOG_INFO, c->log, 0,
                       "client HTTP/2 flood: more than %d PING or "
                       "SETTINGS acknowledgements waiting "
                       "(max_outbound_ack), GOAWAY ENHANCE_YOUR_CALM",
                       WEIR_HTTP_V2_MAX_ACKS);
        err = NGHTTP2_ENHANCE_YOUR_CALM;
        break;

    case NGHTTP2_ERR_TOO_MANY_CONTINUATIONS:
        weir_log_error(WEIR_LOG_INFO, c->log, 0,
                       "client HTTP/2 flood: more than %d CONTINUATION "
                       "frames in a header block (max_continuations), "
                       "GOAWAY ENHANCE_YOUR_CALM", WEIR_HTTP_V2_MAX_CONT);
        err = NGHTTP2_ENHANCE_YOUR_CALM;
        break;

    default:
        weir_log_error(WEIR_LOG_INFO, c->log, 0,
                       "client sent invalid HTTP/2 data: %s",
                       nghttp2_strerror((int) rv));
        break;
    }

    h2c->failed = 1;

    (void) nghttp2_session_terminate_session(h2c->session, err);
}


/*
 * The copy of the first SETTINGS frame that goes out gets the real
 * SETTINGS_MAX_CONCURRENT_STREAMS (see weir_http_v2_init_connection):
 * nghttp2 knows the higher value it enforces, the client the one weir
 * does.
 */

static void
weir_http_v2_patch_settings(void *data, unsigned char *p, size_t len)
{
    weir_http_v2_conn_t  *h2c = data;

    size_t    flen, i;
    uint32_t  v;

    if (len < 9 || p[3] != NGHTTP2_SETTINGS || (p[4] & NGHTTP2_FLAG_ACK)) {
        return;
    }

    h2c->settings_sent = 1;
    h2c->wire.patch = NULL;

    flen = ((size_t) p[0] << 16) | ((size_t) p[1] << 8) | p[2];

    if (flen + 9 > len) {
        flen = len - 9;
    }

    for (i = 9; i + 6 <= 9 + flen; i += 6) {
        if (p[i] == 0 && p[i + 1] == NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
        {
            v = (uint32_t) h2c->h2scf->max_concurrent_streams;
            p[i + 2] = (unsigned char) (v >> 24);
            p[i + 3] = (unsigned char) (v >> 16);
            p[i + 4] = (unsigned char) (v >> 8);
            p[i + 5] = (unsigned char) v;
            return;
        }
    }

    weir_log_error(WEIR_LOG_ALERT, h2c->connection->log, 0,
                   "HTTP/2 SETTINGS without MAX_CONCURRENT_STREAMS");
}


/*
 * Every frame header, before nghttp2 looks at the frame: the ids of
 * HEADERS frames. nghttp2 ignores a HEADERS on an id below the last
 * one unless it knows the stream closed (it cannot tell a new stream
 * from trailers sent after a RST_STREAM); weir remembers the ranges of
 * ids the client skipped, which no frame may open any more (RFC 9113
 * 5.1.1: PROTOCOL_ERROR). Ids of streams that were opened are never
 * refused here.
 */

static int
weir_http_v2_on_begin_frame(nghttp2_session *session,
    const nghttp2_frame_hd *hd, void *user_data)
{
    int32_t               id;
    weir_uint_t           i;
    weir_http_v2_conn_t  *h2c = user_data;

    (void) session;

    id = hd->stream_id;

    if (hd->type != NGHTTP2_HEADERS || id <= 0 || !(id & 1)) {
        /* even ids: nghttp2's PROTOCOL_ERROR */
        return 0;
    }

    if (id > h2c->max_headers_id) {

        if (id > h2c->max_headers_id + 2) {
            if (h2c->nskipped == 4) {
                /* the oldest range is forgotten: its ids are ignored
                 * by nghttp2 as before */
                weir_memmove(h2c->skipped[0], h2c->skipped[1],
                             3 * sizeof(h2c->skipped[0]));
                h2c->nskipped = 3;
            }

            h2c->skipped[h2c->nskipped][0] = h2c->max_headers_id + 2;
            h2c->skipped[h2c->nskipped][1] = id - 2;
            h2c->nskipped++;
        }

        h2c->max_headers_id = id;
        return 0;
    }

    for (i = 0; i < h2c->nskipped; i++) {
        if (id >= h2c->skipped[i][0] && id <= h2c->skipped[i][1]) {
            weir_log_error(WEIR_LOG_INFO, h2c->connection->log, 0,
                           "client sent HEADERS opening stream %d after "
                           "stream %d, GOAWAY PROTOCOL_ERROR",
                           (int) id, (int) h2c->max_headers_id);
            h2c->failed = 1;
            (void) nghttp2_session_terminate_session(h2c->session,
                                                     NGHTTP2_PROTOCOL_ERROR);
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        }
    }

    return 0;
}
