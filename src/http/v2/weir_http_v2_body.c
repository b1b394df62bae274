#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_http.h"
#include "weir_http_v2.h"


/*
 * HTTP/2 request bodies streamed to their consumer
 * (r->request_body_no_buffering, proxy_request_buffering off): the
 * stream's read_unbuffered. Buffered bodies and discarding are in
 * weir_http_v2_stream.c.
 */


static weir_int_t weir_http_v2_ub_deliver(weir_http_v2_stream_t *st);
static weir_int_t weir_http_v2_ub_credit(weir_http_v2_stream_t *st);
static void weir_http_v2_ub_stop(weir_http_v2_stream_t *st);
static void weir_http_v2_read_unbuffered_handler(weir_http_request_t *r);


/*
 * A streamed body (proxy_request_buffering off). DATA is copied into
 * blocks of client_body_buffer_size (st->ub_in), handed to the consumer
 * through rb->bufs when it waits (st->ub_waiting), and credited to the
 * stream (nghttp2_session_consume_stream, so WINDOW_UPDATE) only when
 * the consumer calls read_unbuffered again having written it: the
 * blocks held are bounded by the stream window, and a slow origin slows
 * this upload only (the connection's credit went back on arrival). The
 * blocks are reused through st->ub_free.
 */

weir_int_t
weir_http_v2_ub_start(weir_http_v2_stream_t *st)
{
    weir_int_t                  rc;
    weir_chain_t               *cl;
    weir_http_request_t        *r;
    weir_http_core_loc_conf_t  *clcf;

    r = st->request;

    st->unbuffered = 1;
    st->ub_in = st->pre;
    st->ub_in_last = st->pre ? st->pre_last : &st->ub_in;
    st->pre = NULL;

    for (cl = st->ub_in; cl; cl = cl->next) {
        r->request_length += cl->buf->last - cl->buf->pos;
        r->request_body->received += cl->buf->last - cl->buf->pos;
        st->ub_tail = cl;
    }

    rc = weir_http_v2_ub_deliver(st);

    if (rc == WEIR_OK) {
        /* all of it is here: the core passes it on as a whole body */
        st->reading = 0;
        return WEIR_OK;
    }

    if (rc != WEIR_AGAIN && rc != WEIR_DECLINED) {
        return rc;
    }

    r->read_event_handler = weir_http_v2_read_unbuffered_handler;

    if (rc == WEIR_DECLINED) {
        st->ub_waiting = 1;
        clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

        if (clcf->client_body_timeout) {
            weir_event_add_timer(&st->rev, clcf->client_body_timeout);
        }
    }

    return WEIR_AGAIN;
}


weir_int_t
weir_http_v2_ub_put(weir_http_v2_stream_t *st, const unsigned char *data,
    size_t len)
{
    size_t                     n, total;
    weir_buf_t                *b;
    weir_chain_t              *cl;
    weir_http_request_t       *r;

    r = st->request;
    total = len;

    while (len) {
        cl = st->ub_in ? st->ub_tail : NULL;

        if (cl == NULL || cl->buf->last == cl->buf->end) {
            if (st->ub_free) {
                cl = st->ub_free;
                st->ub_free = cl->next;
                b = cl->buf;
                b->pos = b->start;
                b->last = b->start;

            } else {
                b = weir_create_temp_buf(r->pool, st->ub_size);
                cl = weir_alloc_chain_link(r->pool, NULL);
                if (b == NULL || cl == NULL) {
                    return WEIR_ERROR;
                }

                b->tag = (weir_buf_tag_t) &weir_http_read_client_request_body;
                cl->buf = b;
            }

            cl->next = NULL;
            *st->ub_in_last = cl;
            st->ub_in_last = &cl->next;
            st->ub_tail = cl;
        }

        b = cl->buf;
        n = b->end - b->last;
        if (n > len) {
            n = len;
        }

        b->last = weir_cpymem(b->last, data, n);
        data += n;
        len -= n;
        r->request_length += n;
        r->request_body->received += n;
    }

    st->unconsumed += total;

    return WEIR_OK;
}


/* hands the DATA kept (and the end, once the client sent it) to the
 * consumer: WEIR_OK (the end went), WEIR_AGAIN (some went), WEIR_DECLINED
 * (nothing to give, or it has not taken what it was given) or an HTTP
 * status */

static weir_int_t
weir_http_v2_ub_deliver(weir_http_v2_stream_t *st)
{
    weir_int_t                 rc;
    weir_buf_t                *b;
    weir_chain_t              *cl, *in, *next;
    weir_http_request_t       *r;
    weir_http_request_body_t  *rb;

    r = st->request;
    rb = r->request_body;

    if (rb->last_sent) {
        return WEIR_OK;
    }

    if (rb->bufs || (st->ub_in == NULL && !st->end_stream)) {
        return WEIR_DECLINED;
    }

    if (st->end_stream) {
        b = weir_calloc_buf(r->pool);
        cl = weir_alloc_chain_link(r->pool, NULL);
        if (b == NULL || cl == NULL) {
            return WEIR_HTTP_INTERNAL_SERVER_ERROR;
        }

        b->last_buf = 1;
        b->last_in_chain = 1;
        b->tag = (weir_buf_tag_t) &weir_http_read_client_request_body;
        cl->buf = b;
        cl->next = NULL;
        *st->ub_in_last = cl;

        rb->last_sent = 1;
        rb->rest = 0;
    }

    in = st->ub_in;
    st->ub_in = NULL;
    st->ub_in_last = &st->ub_in;

    /* the filters copy the links they keep */
    rc = weir_http_request_body_filter(r, in);

    /* the consumer moves pos to last as it writes them */
    for (cl = in; cl; cl = next) {
        next = cl->next;
        cl->next = st->ub_busy;
        st->ub_busy = cl;
    }

    if (rc != WEIR_OK) {
        return rc;
    }

    return rb->last_sent ? WEIR_OK : WEIR_AGAIN;
}


/* what the consumer has written goes back to the client as window */

static weir_int_t
weir_http_v2_ub_credit(weir_http_v2_stream_t *st)
{
    size_t         n;
    weir_buf_t    *b;
    weir_chain_t  *cl, *next;

    for (cl = st->ub_busy; cl; cl = cl->next) {
        if (cl->buf->pos < cl->buf->last) {
            return WEIR_AGAIN;
        }
    }

    n = 0;

    for (cl = st->ub_busy; cl; cl = next) {
        next = cl->next;
        b = cl->buf;
        n += b->last - b->start;

        if ((size_t) (b->end - b->start) == st->ub_size && !b->last_buf) {
            cl->next = st->ub_free;
            st->ub_free = cl;
        }
    }

    st->ub_busy = NULL;

    if (n > st->unconsumed) {
        n = st->unconsumed;
    }

    if (n && st->h2c->session && !st->h2c->destroyed) {
        (void) nghttp2_session_consume_stream(st->h2c->session, st->id, n);
        st->unconsumed -= n;
        weir_http_v2_post_write(st->h2c);
    }

    return WEIR_OK;
}


static void
weir_http_v2_ub_stop(weir_http_v2_stream_t *st)
{
    weir_http_request_t  *r;

    r = st->request;

    r->reading_body = 0;
    r->read_event_handler = weir_http_block_reading;

    if (st->rev.timer_set) {
        weir_event_del_timer(&st->rev);
    }
}


/* the consumer has written what it was given: credit it, hand more */

weir_int_t
weir_http_v2_read_unbuffered(weir_http_request_t *r)
{
    weir_int_t                  rc;
    weir_connection_t          *fc;
    weir_http_v2_stream_t      *st;
    weir_http_core_loc_conf_t  *clcf;

    st = r->stream;
    fc = st->fc;

    if (!st->unbuffered) {
        return WEIR_OK;
    }

    rc = weir_http_v2_body_failed(st);
    if (rc) {
        goto failed;
    }

    if (weir_http_v2_ub_credit(st) != WEIR_OK) {
        return WEIR_AGAIN;
    }

    rc = weir_http_v2_ub_deliver(st);

    if (rc == WEIR_DECLINED) {
        st->ub_waiting = 1;
        clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

        if (clcf->client_body_timeout) {
            weir_event_add_timer(fc->read, clcf->client_body_timeout);
        }

        return WEIR_AGAIN;
    }

    st->ub_waiting = 0;

    if (rc == WEIR_AGAIN) {
        /* the client waits for the consumer now, not the other way */
        if (fc->read->timer_set) {
            weir_event_del_timer(fc->read);
        }

        return WEIR_AGAIN;
    }

    if (rc == WEIR_OK) {
        weir_http_v2_ub_stop(st);
        return WEIR_OK;
    }

failed:

    st->discard = 1;
    weir_http_v2_ub_stop(st);

    return rc;
}


static void
weir_http_v2_read_unbuffered_handler(weir_http_request_t *r)
{
    weir_int_t                  rc;
    weir_connection_t          *fc;
    weir_http_v2_stream_t      *st;
    weir_http_core_loc_conf_t  *clcf;

    st = r->stream;
    fc = st->fc;

    rc = weir_http_v2_body_failed(st);
    if (rc) {
        goto failed;
    }

    if (!st->ub_waiting) {
        /* the consumer still holds what it was given: DATA waits */
        return;
    }

    rc = weir_http_v2_ub_deliver(st);

    if (rc == WEIR_DECLINED) {
        clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

        if (clcf->client_body_timeout) {
            weir_event_add_timer(fc->read, clcf->client_body_timeout);
        }

        return;
    }

    if (rc != WEIR_OK && rc != WEIR_AGAIN) {
        goto failed;
    }

    st->ub_waiting = 0;

    if (rc == WEIR_OK) {
        weir_http_v2_ub_stop(st);

    } else if (fc->read->timer_set) {
        weir_event_del_timer(fc->read);
    }

    /* may finalize and free r: nothing touches r after it */
    r->request_body->post_handler(r);
    return;

failed:

    st->discard = 1;
    weir_http_v2_ub_stop(st);
    weir_http_finalize_request(r, rc);
}
