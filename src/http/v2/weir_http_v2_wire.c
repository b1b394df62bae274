#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_http.h"
#include "weir_http_v2.h"

/*
 * The output of an nghttp2 session, the same for a client's session
 * (weir_http_v2.c) and a session to an origin (weir_http_v2_upstream.c):
 * everything nghttp2_session_mem_send has is copied into one output
 * buffer and written with one c->writev, so the frames of many streams
 * go out together. While the socket is full the rest waits and nghttp2
 * is not asked for more (its data providers do not run: back-pressure).
 * The output buffer is the worker's, shared by every session, while a
 * flush runs; a session has one of its own only while bytes it could not
 * write wait (the socket was full), so a session that keeps up holds
 * none: less memory, and the same hot buffer for all of them.
 * And what both kinds of stream do with their fake events when they go.
 */


#define WEIR_HTTP_V2_OUT_SIZE     (64 * 1024)
/* written by one flush while the socket takes it all, as HTTP/1 does
 * (WEIR_HTTP_V1_SEND_BUDGET); the rest after the other connections */
#define WEIR_HTTP_V2_SEND_BUDGET  (2 * WEIR_HTTP_V2_OUT_SIZE)


static weir_int_t weir_http_v2_wire_send(weir_http_v2_wire_t *w,
    nghttp2_session *session, weir_connection_t *c, weir_msec_t send_timeout,
    weir_uint_t idle);


/* the worker's output buffer, and whether a flush has it (a flush that
 * nghttp2's callbacks start inside another takes a buffer of its own) */
static unsigned char  *weir_http_v2_wire_out;
static weir_uint_t     weir_http_v2_wire_out_busy;


weir_int_t
weir_http_v2_wire_flush(weir_http_v2_wire_t *w, nghttp2_session *session,
    weir_connection_t *c, weir_msec_t send_timeout, weir_uint_t idle)
{
    size_t          len;
    weir_int_t      rc;
    unsigned char  *p;

    if (w->out == NULL && !weir_http_v2_wire_out_busy) {

        if (weir_http_v2_wire_out == NULL) {
            weir_http_v2_wire_out = weir_alloc(WEIR_HTTP_V2_OUT_SIZE, c->log);
        }

        if (weir_http_v2_wire_out) {
            w->out = weir_http_v2_wire_out;
            w->out_size = WEIR_HTTP_V2_OUT_SIZE;
            w->out_pos = w->out;
            w->out_last = w->out;
            w->shared = 1;
            weir_http_v2_wire_out_busy = 1;
        }
    }

    rc = weir_http_v2_wire_send(w, session, c, send_timeout, idle);

    if (!w->shared) {
        return rc;
    }

    w->shared = 0;
    weir_http_v2_wire_out_busy = 0;

    len = (rc == WEIR_ERROR) ? 0 : (size_t) (w->out_last - w->out_pos);

    if (len == 0) {
        w->out = NULL;
        w->out_pos = NULL;
        w->out_last = NULL;
        return rc;
    }

    /* the socket is full: what waits moves to a buffer of the session's */

    p = weir_alloc(WEIR_HTTP_V2_OUT_SIZE, c->log);
    if (p == NULL) {
        w->out = NULL;
        w->out_pos = NULL;
        w->out_last = NULL;
        c->error = 1;
        w->broken = 1;
        return WEIR_ERROR;
    }

    weir_memcpy(p, w->out_pos, len);
    w->out = p;
    w->out_pos = p;
    w->out_last = p + len;

    return rc;
}


/*
 * Writes what waits, then collects what nghttp2 has into the output
 * buffer and writes it with one c->writev, and again while the socket
 * takes everything, up to WEIR_HTTP_V2_SEND_BUDGET. WEIR_OK (all
 * written: if nghttp2 still has more, the write is posted for the next
 * pass), WEIR_AGAIN (the socket is full: the write event is armed) or
 * WEIR_ERROR. The output buffer is freed when idle (no stream open). A
 * socket error sets w->broken.
 */

static weir_int_t
weir_http_v2_wire_send(weir_http_v2_wire_t *w, nghttp2_session *session,
    weir_connection_t *c, weir_msec_t send_timeout, weir_uint_t idle)
{
    int                         cnt;
    size_t                      room, total, sent;
    ssize_t                     n, len;
    weir_uint_t                 full;
    unsigned char              *start;
    struct iovec                iov[2];
    weir_event_t               *wev;
    const uint8_t              *data;

    wev = c->write;

    if (session == NULL || c->error) {
        return WEIR_ERROR;
    }

    sent = 0;

again:

    full = 0;

    if (w->out_pos == w->out_last && w->pend_len == 0) {

        /* nothing waits: collect */

        if (w->out == NULL) {
            w->out = weir_alloc(WEIR_HTTP_V2_OUT_SIZE, c->log);
            if (w->out == NULL) {
                return WEIR_ERROR;
            }

            w->out_size = WEIR_HTTP_V2_OUT_SIZE;
        }

        w->out_pos = w->out;
        w->out_last = w->out;

        for ( ;; ) {
            len = nghttp2_session_mem_send(session, &data);

            if (len < 0) {
                weir_log_error(WEIR_LOG_ERR, c->log, 0,
                               "nghttp2_session_mem_send() failed: %s",
                               nghttp2_strerror((int) len));
                return WEIR_ERROR;
            }

            if (len == 0) {
                break;
            }

            room = w->out + w->out_size - w->out_last;

            if ((size_t) len > room) {
                /* the rest stays in nghttp2 until its next mem_send */
                w->out_last = weir_cpymem(w->out_last, data, room);
                w->pend = data + room;
                w->pend_len = (size_t) len - room;
                full = 1;
                break;
            }

            start = w->out_last;
            w->out_last = weir_cpymem(w->out_last, data, (size_t) len);

            if (w->patch) {
                /* the first frames (the server's SETTINGS, into an empty
                 * buffer: it fits) */
                w->patch(w->patch_data, start, (size_t) len);
            }

            if (w->out_last == w->out + w->out_size) {
                full = 1;
                break;
            }
        }
    }

    cnt = 0;
    total = 0;

    if (w->out_pos < w->out_last) {
        iov[cnt].iov_base = w->out_pos;
        iov[cnt].iov_len = w->out_last - w->out_pos;
        total += iov[cnt].iov_len;
        cnt++;
    }

    if (w->pend_len) {
        iov[cnt].iov_base = (void *) w->pend;
        iov[cnt].iov_len = w->pend_len;
        total += iov[cnt].iov_len;
        cnt++;
    }

    if (cnt == 0) {
        /* an idle connection keeps no output buffer */
        if (w->out && idle && !w->shared) {
            weir_free(w->out);
            w->out = NULL;
            w->out_pos = NULL;
            w->out_last = NULL;
        }

        w->blocked = 0;

        if (wev->timer_set) {
            weir_event_del_timer(wev);
        }

        return WEIR_OK;
    }

    n = c->writev(c, iov, cnt);

    if (n == WEIR_ERROR) {
        c->error = 1;
        w->broken = 1;
        return WEIR_ERROR;
    }

    if (n == WEIR_AGAIN) {
        n = 0;
    }

    /* what was written */

    len = n;

    if (w->out_pos < w->out_last) {
        room = w->out_last - w->out_pos;

        if ((size_t) len >= room) {
            w->out_pos = w->out_last;
            len -= room;

        } else {
            w->out_pos += len;
            len = 0;
        }
    }

    if (len && w->pend_len) {
        w->pend += len;
        w->pend_len -= (size_t) len;
    }

    if ((size_t) n < total) {
        /* back-pressure: nghttp2 is not asked for more until this is
         * gone */
        w->blocked = 1;
        wev->ready = 0;

        if (!wev->timer_set) {
            weir_event_add_timer(wev, send_timeout);
        }

        if (weir_handle_write_event(wev, 0) != WEIR_OK) {
            c->error = 1;
            w->broken = 1;
            return WEIR_ERROR;
        }

        return WEIR_AGAIN;
    }

    w->blocked = 0;

    if (wev->timer_set) {
        weir_event_del_timer(wev);
    }

    w->out_pos = w->out;
    w->out_last = w->out;

    sent += (size_t) n;

    if (full || nghttp2_session_want_write(session)) {

        if (sent < WEIR_HTTP_V2_SEND_BUDGET) {
            goto again;
        }

        /* more after the other connections had their turn */
        if (!wev->posted) {
            w->posted = 1;
            weir_post_event(wev, &weir_posted_next_events);
        }

    } else if (w->out && idle && !w->shared) {
        weir_free(w->out);
        w->out = NULL;
        w->out_pos = NULL;
        w->out_last = NULL;
    }

    return WEIR_OK;
}


void
weir_http_v2_wire_free(weir_http_v2_wire_t *w)
{
    if (w->out) {
        weir_free(w->out);
        w->out = NULL;
        w->out_pos = NULL;
        w->out_last = NULL;
    }

    w->pend_len = 0;
}


void
weir_http_v2_events_done(weir_event_t *rev, weir_event_t *wev)
{
    if (rev->timer_set) {
        weir_event_del_timer(rev);
    }

    if (wev->timer_set) {
        weir_event_del_timer(wev);
    }

    if (rev->posted) {
        weir_delete_posted_event(rev);
    }

    if (wev->posted) {
        weir_delete_posted_event(wev);
    }
}
