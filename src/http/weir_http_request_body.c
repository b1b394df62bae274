#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_http.h"


/*
 * Request bodies: reading (buffered into memory or a temporary file, or
 * streamed to a consumer), and discarding.
 *
 * The protocol-neutral entry points are weir_http_read_client_request_body
 * and weir_http_discard_request_body; the protocol does the framing
 * through r->proto->read_body / discard_body. For HTTP/1 those are
 * weir_http_read_request_body_stream and
 * weir_http_discard_request_body_stream below: the body is decoded
 * (Content-Length or chunked) here and the decoded bytes go down the
 * request body filter chain, whose bottom appends to r->request_body->bufs.
 *
 * References (docs/dev/lifetimes.md): reading takes one reference on
 * r->main, which the content handler gives back by returning WEIR_DONE;
 * the post handler then finalizes the request. A discard that has to wait
 * for the client takes its own reference and drops it with
 * weir_http_close_request() when the body is drained or given up.
 */


/* the state of a byte-stream body reader, in r->request_body->reader */
typedef struct {
    weir_buf_t                  *raw;       /* chunked: undecoded input */
    weir_buf_t                  *out;       /* decoded bytes */
    unsigned char               *mark;      /* out: not passed on yet */
    weir_buf_t                  *spare;     /* file: the buffer header
                                               each delivery reuses */
    unsigned                     done:1;    /* the end was decoded */
    unsigned                     delivered:1;   /* new data for consumer */
    unsigned                     wait_socket:1; /* AGAIN: socket, else the
                                                   consumer */
    unsigned                     chunk_data:1;  /* the parser's last word
                                                   was WEIR_OK: in data */
    weir_buf_t                  *trailer;   /* chunked: trailer lines put
                                               together; [pos, last) is
                                               the unfinished one */
} weir_http_body_reader_t;


static weir_uint_t weir_http_request_body_received(weir_http_request_t *r);
static weir_int_t weir_http_body_test_expect(weir_http_request_t *r);
static void weir_http_body_stop(weir_http_request_t *r);
static weir_int_t weir_http_body_process(weir_http_request_t *r);
static weir_int_t weir_http_body_decode(weir_http_request_t *r,
    weir_http_body_reader_t *st, weir_buf_t *src);
static weir_int_t weir_http_body_trailer(weir_http_request_t *r,
    weir_http_body_reader_t *st, weir_buf_t *src, weir_uint_t end);
static weir_int_t weir_http_body_trailer_field(weir_http_request_t *r,
    unsigned char *line);
static weir_int_t weir_http_body_deliver(weir_http_request_t *r,
    weir_http_body_reader_t *st, weir_uint_t last);
static weir_int_t weir_http_body_reuse_out(weir_http_request_t *r,
    weir_http_body_reader_t *st);
static weir_int_t weir_http_body_open_temp(weir_http_request_t *r);
static weir_int_t weir_http_body_arm(weir_http_request_t *r,
    weir_http_body_reader_t *st);
static weir_int_t weir_http_body_pass_empty_last(weir_http_request_t *r);
static void weir_http_read_client_request_body_handler(
    weir_http_request_t *r);
static size_t weir_http_body_chunked_need(weir_http_request_t *r,
    size_t size);
static weir_int_t weir_http_body_drain(weir_http_request_t *r);
static weir_int_t weir_http_body_skip(weir_http_request_t *r,
    weir_buf_t *b);
static void weir_http_discarded_request_body_handler(
    weir_http_request_t *r);
static void weir_http_discard_done(weir_http_request_t *r,
    weir_uint_t ok);


#define WEIR_HTTP_BODY_RAW_SIZE  8192
#define WEIR_HTTP_BODY_TEMP_FALLBACK  "/tmp"


weir_int_t
weir_http_read_client_request_body(weir_http_request_t *r,
    weir_http_client_body_handler_pt post_handler)
{
    weir_int_t                  rc;
    weir_http_request_body_t   *rb;
    weir_http_core_loc_conf_t  *clcf;

    r->main->count++;

    if (r != r->main || r->request_body || r->discard_body) {
        r->request_body_no_buffering = 0;
        post_handler(r);
        return WEIR_OK;
    }

    rb = weir_pcalloc(r->pool, sizeof(weir_http_request_body_t));
    if (rb == NULL) {
        rc = WEIR_HTTP_INTERNAL_SERVER_ERROR;
        goto failed;
    }

    rb->rest = -1;
    rb->post_handler = post_handler;
    r->request_body = rb;

    if (r->headers_in.content_length_n <= 0 && !r->headers_in.chunked) {
        /* no body: the consumer still sees the end mark */
        rb->rest = 0;

        rc = weir_http_body_pass_empty_last(r);
        if (rc != WEIR_OK) {
            goto failed;
        }

        r->request_body_no_buffering = 0;
        post_handler(r);
        return WEIR_OK;
    }

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    if (clcf->client_max_body_size
        && r->headers_in.content_length_n > clcf->client_max_body_size)
    {
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "client intended to send too large body: %lld bytes",
                       (long long) r->headers_in.content_length_n);
        rc = WEIR_HTTP_REQUEST_ENTITY_TOO_LARGE;
        goto failed;
    }

    if (r->proto == NULL || r->proto->read_body == NULL) {
        rc = WEIR_HTTP_INTERNAL_SERVER_ERROR;
        goto failed;
    }

    r->reading_body = 1;

    if (weir_http_body_test_expect(r) != WEIR_OK) {
        rc = WEIR_HTTP_INTERNAL_SERVER_ERROR;
        goto failed;
    }

    rc = r->proto->read_body(r);

    if (rc == WEIR_OK) {
        r->reading_body = 0;
        r->request_body_no_buffering = 0;
        post_handler(r);
        return WEIR_OK;
    }

    if (rc == WEIR_AGAIN) {
        if (r->request_body_no_buffering) {
            /* the consumer starts now and is called again on new data */
            post_handler(r);
        }
        return WEIR_OK;
    }

failed:

    weir_http_body_stop(r);
    r->main->count--;

    return rc;
}


/*
 * A streamed body (request_body_no_buffering) goes on when its consumer
 * has taken what it was given (rb->bufs is NULL again): the protocol
 * reads or releases more. WEIR_OK (the end was passed on), WEIR_AGAIN,
 * an HTTP status or WEIR_ERROR.
 */

weir_int_t
weir_http_read_unbuffered_request_body(weir_http_request_t *r)
{
    weir_http_request_body_t  *rb;

    rb = r->request_body;

    if (rb == NULL) {
        return WEIR_ERROR;
    }

    if (rb->last_sent || r->proto == NULL
        || r->proto->read_unbuffered == NULL)
    {
        /* nothing more comes (or nothing was ever read) */
        return WEIR_OK;
    }

    return r->proto->read_unbuffered(r);
}


weir_int_t
weir_http_read_unbuffered_request_body_stream(weir_http_request_t *r)
{
    weir_int_t                 rc;
    weir_http_request_body_t  *rb;
    weir_http_body_reader_t   *st;

    rb = r->request_body;

    if (rb == NULL || rb->reader == NULL) {
        return rb ? WEIR_OK : WEIR_ERROR;
    }

    st = rb->reader;

    if (r->connection->read->timedout) {
        r->connection->read->timedout = 0;
        weir_http_body_stop(r);
        weir_log_error(WEIR_LOG_INFO, r->connection->log, WEIR_ETIMEDOUT,
                       "client timed out while reading client request body");
        return WEIR_HTTP_REQUEST_TIME_OUT;
    }

    rc = weir_http_body_process(r);

    /* the consumer looks at rb->bufs itself after this call */
    st->delivered = 0;

    if (rc == WEIR_AGAIN) {
        rc = weir_http_body_arm(r, st);
        if (rc == WEIR_OK) {
            return WEIR_AGAIN;
        }
    }

    if (rc == WEIR_OK) {
        r->reading_body = 0;
        r->read_event_handler = weir_http_block_reading;

        if (r->connection->read->timer_set) {
            weir_event_del_timer(r->connection->read);
        }

    } else {
        weir_http_body_stop(r);
    }

    return rc;
}


/* reading ends early: what is left of the body on the wire makes the
 * stream unusable, and no later read event may come back here */

static void
weir_http_body_stop(weir_http_request_t *r)
{
    r->reading_body = 0;
    r->keepalive = 0;
    r->lingering_close = 1;
    r->read_event_handler = weir_http_block_reading;

    if (r->connection->read->timer_set) {
        weir_event_del_timer(r->connection->read);
    }
}


weir_uint_t
weir_http_request_expects_continue(weir_http_request_t *r)
{
    weir_http_header_t  *h;

    h = r->headers_in.expect;

    if (h == NULL || r->http_version < WEIR_HTTP_VERSION_11) {
        return 0;
    }

    return h->value.len == sizeof("100-continue") - 1
           && weir_strncasecmp(h->value.data,
                               (unsigned char *) "100-continue",
                               sizeof("100-continue") - 1) == 0;
}


/* has some of the body arrived already? the protocol knows */

static weir_uint_t
weir_http_request_body_received(weir_http_request_t *r)
{
    if (r->proto == NULL || r->proto->body_received == NULL) {
        return 0;
    }

    return r->proto->body_received(r);
}


/* "Expect: 100-continue" is answered once, just before the body is first
 * read, unless the body is already on its way */

static weir_int_t
weir_http_body_test_expect(weir_http_request_t *r)
{
    if (r->expect_tested) {
        return WEIR_OK;
    }

    r->expect_tested = 1;

    if (!weir_http_request_expects_continue(r)) {
        return WEIR_OK;
    }

    r->expect_continue = 1;

    /* some of the body is here: the client did not wait for us */
    if (weir_http_request_body_received(r)) {
        return WEIR_OK;
    }

    if (r->proto->send_continue == NULL) {
        return WEIR_OK;
    }

    return r->proto->send_continue(r);
}


weir_int_t
weir_http_read_request_body_stream(weir_http_request_t *r)
{
    size_t                      size;
    weir_int_t                  rc;
    weir_http_request_body_t   *rb;
    weir_http_body_reader_t    *st;
    weir_http_core_loc_conf_t  *clcf;

    rb = r->request_body;
    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    st = weir_pcalloc(r->pool, sizeof(weir_http_body_reader_t));
    if (st == NULL) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    rb->reader = st;

    size = clcf->client_body_buffer_size;
    if (size == 0) {
        size = 16384;
    }

    if (r->headers_in.chunked) {
        rb->rest = -1;
        rb->chunked = weir_pcalloc(r->pool, sizeof(weir_http_chunked_t));
        if (rb->chunked == NULL) {
            return WEIR_HTTP_INTERNAL_SERVER_ERROR;
        }

    } else {
        rb->rest = r->headers_in.content_length_n;

        /* a small body gets a block of its own size */
        if (!r->request_body_no_buffering && (off_t) size > rb->rest) {
            size = (size_t) rb->rest;
        }
    }

    st->out = weir_create_temp_buf(r->pool, size);
    if (st->out == NULL) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    st->mark = st->out->pos;

    rc = weir_http_body_process(r);

    if (rc == WEIR_AGAIN) {
        r->read_event_handler = weir_http_read_client_request_body_handler;
        r->write_event_handler = weir_http_request_empty_handler;
        st->delivered = 0;

        rc = weir_http_body_arm(r, st);
        if (rc != WEIR_OK) {
            return rc;
        }

        return WEIR_AGAIN;
    }

    return rc;
}


static void
weir_http_read_client_request_body_handler(weir_http_request_t *r)
{
    weir_int_t                 rc;
    weir_connection_t         *c;
    weir_http_request_body_t  *rb;
    weir_http_body_reader_t   *st;

    c = r->connection;
    rb = r->request_body;
    st = rb->reader;

    if (c->read->timedout) {
        c->read->timedout = 0;
        weir_http_body_stop(r);
        weir_log_error(WEIR_LOG_INFO, c->log, WEIR_ETIMEDOUT,
                       "client timed out while reading client request body");
        weir_http_finalize_request(r, WEIR_HTTP_REQUEST_TIME_OUT);
        return;
    }

    rc = weir_http_body_process(r);

    if (rc == WEIR_AGAIN) {
        rc = weir_http_body_arm(r, st);
        if (rc != WEIR_OK) {
            weir_http_body_stop(r);
            weir_http_finalize_request(r, rc);
            return;
        }

        if (r->request_body_no_buffering && st->delivered) {
            st->delivered = 0;
            /* may finalize and free r: nothing touches r after it */
            rb->post_handler(r);
        }

        return;
    }

    if (rc != WEIR_OK) {
        weir_http_body_stop(r);
        weir_http_finalize_request(r, rc);
        return;
    }

    r->reading_body = 0;
    r->read_event_handler = weir_http_block_reading;
    st->delivered = 0;

    if (c->read->timer_set) {
        weir_event_del_timer(c->read);
    }

    /* may finalize and free r: nothing touches r after it */
    rb->post_handler(r);
}


/*
 * Moves body bytes from r->header_in, then from the socket, through the
 * decoder into st->out and down the filter chain. Returns WEIR_OK when
 * the end of the body has been passed on, WEIR_AGAIN when it waits for
 * the socket (st->wait_socket) or for the consumer of an unbuffered
 * body, or an HTTP status.
 */

static weir_int_t
weir_http_body_process(weir_http_request_t *r)
{
    size_t                      size;
    ssize_t                     n;
    weir_int_t                  rc;
    weir_buf_t                 *src, *out;
    weir_connection_t          *c;
    unsigned char              *src_pos, *out_last;
    weir_http_request_body_t   *rb;
    weir_http_body_reader_t    *st;

    c = r->connection;
    rb = r->request_body;
    st = rb->reader;
    out = st->out;

    st->wait_socket = 0;

    for ( ;; ) {

        if (rb->last_sent) {
            return WEIR_OK;
        }

        /* back-pressure: the consumer has not taken what it was given */
        if (r->request_body_no_buffering && rb->bufs) {
            return WEIR_AGAIN;
        }

        src = NULL;

        if (!st->done) {
            if (r->header_in && r->header_in->pos < r->header_in->last) {
                src = r->header_in;

            } else if (st->raw && st->raw->pos < st->raw->last) {
                src = st->raw;
            }
        }

        if (src) {
            src_pos = src->pos;
            out_last = out->last;

            rc = weir_http_body_decode(r, st, src);

            if (rc == WEIR_DONE) {
                st->done = 1;

            } else if (rc != WEIR_OK) {
                return rc;

            } else if (src->pos == src_pos && out->last == out_last
                       && out->last < out->end)
            {
                /* a decoder that neither consumes nor produces */
                weir_log_error(WEIR_LOG_ERR, c->log, 0,
                               "client sent invalid chunked body");
                return WEIR_HTTP_BAD_REQUEST;
            }
        }

        if (st->done) {
            rc = weir_http_body_deliver(r, st, 1);
            if (rc != WEIR_OK) {
                return rc;
            }

            if (r->request_body->temp_file) {
                rc = weir_http_request_body_spill(r);
                if (rc != WEIR_OK) {
                    return rc;
                }
            }

            return WEIR_OK;
        }

        if (r->request_body_no_buffering) {
            if (out->last > st->mark) {
                rc = weir_http_body_deliver(r, st, 0);
                if (rc != WEIR_OK) {
                    return rc;
                }

                st->delivered = 1;
                continue;
            }

            if (out->last == out->end) {
                if (weir_http_body_reuse_out(r, st) != WEIR_OK) {
                    return WEIR_AGAIN;
                }
                continue;
            }

        } else if (out->last == out->end) {
            /* the memory block is full: the body goes to a file */
            rc = weir_http_body_deliver(r, st, 0);
            if (rc != WEIR_OK) {
                return rc;
            }

            rc = weir_http_request_body_spill(r);
            if (rc != WEIR_OK) {
                return rc;
            }

            out->pos = out->start;
            out->last = out->start;
            st->mark = out->start;
            continue;
        }

        if ((r->header_in && r->header_in->pos < r->header_in->last)
            || (st->raw && st->raw->pos < st->raw->last))
        {
            continue;
        }

        /* read from the client, never past the end of the body */

        if (rb->chunked) {
            if (st->raw == NULL) {
                size = WEIR_HTTP_BODY_RAW_SIZE;
                st->raw = weir_create_temp_buf(r->pool, size);
                if (st->raw == NULL) {
                    return WEIR_HTTP_INTERNAL_SERVER_ERROR;
                }
            }

            st->raw->pos = st->raw->start;
            st->raw->last = st->raw->start;

            size = weir_http_body_chunked_need(r,
                                          st->raw->end - st->raw->last);

            n = c->recv(c, st->raw->last, size);

        } else {
            size = out->end - out->last;
            if ((off_t) size > rb->rest) {
                size = (size_t) rb->rest;
            }

            n = c->recv(c, out->last, size);
        }

        weir_log_debug(c->log, 0, "http body recv: %d of %d",
                       (int) n, (int) size);

        if (n == WEIR_AGAIN) {
            st->wait_socket = 1;
            return WEIR_AGAIN;
        }

        if (n == 0) {
            weir_log_error(WEIR_LOG_INFO, c->log, 0,
                           "client prematurely closed connection "
                           "while reading client request body");
        }

        if (n == 0 || n == WEIR_ERROR) {
            c->error = 1;
            return WEIR_HTTP_BAD_REQUEST;
        }

        r->request_length += n;

        if (rb->chunked) {
            st->raw->last += n;

        } else {
            out->last += n;
            rb->rest -= n;
            rb->received += n;

            if (rb->rest == 0) {
                st->done = 1;
            }
        }
    }
}


/* WEIR_OK (progress, or src is used up, or out is full), WEIR_DONE at the
 * end of the body, or an HTTP status */

static weir_int_t
weir_http_body_decode(weir_http_request_t *r, weir_http_body_reader_t *st,
    weir_buf_t *src)
{
    off_t                       n;
    weir_int_t                  rc;
    weir_buf_t                 *out;
    weir_http_chunked_t        *ctx;
    weir_http_request_body_t   *rb;
    weir_http_core_loc_conf_t  *clcf;

    rb = r->request_body;
    out = st->out;

    if (rb->chunked == NULL) {
        n = src->last - src->pos;

        if (n > rb->rest) {
            n = rb->rest;
        }

        if (n > out->end - out->last) {
            n = out->end - out->last;
        }

        out->last = weir_cpymem(out->last, src->pos, (size_t) n);
        src->pos += n;
        rb->rest -= n;
        rb->received += n;

        return rb->rest == 0 ? WEIR_DONE : WEIR_OK;
    }

    ctx = rb->chunked;
    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    /* ctx->size means chunk data only after WEIR_OK: the parser also
     * keeps the size it is still reading there */

    for ( ;; ) {

        if (out->last == out->end || src->pos == src->last) {
            return WEIR_OK;
        }

        rc = weir_http_parse_chunked(r, src, ctx);

        weir_log_debug(r->connection->log, 0,
                       "http body chunked: rc:%d size:%lld length:%lld",
                       (int) rc, (long long) ctx->size,
                       (long long) ctx->length);

        st->chunk_data = (rc == WEIR_OK);

        /* ctx->size only grows while its digits arrive and is what is
         * left of the chunk afterwards: a lower bound of what comes, so
         * an oversized chunk is refused before its data is read */
        if ((rc == WEIR_OK || rc == WEIR_AGAIN)
            && clcf->client_max_body_size
            && clcf->client_max_body_size - rb->received < ctx->size)
        {
            weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                           "client intended to send too large chunked "
                           "body: %lld+%lld bytes",
                           (long long) rb->received, (long long) ctx->size);
            return WEIR_HTTP_REQUEST_ENTITY_TOO_LARGE;
        }

        switch (rc) {

        case WEIR_OK:
            n = src->last - src->pos;

            if (n > ctx->size) {
                n = ctx->size;
            }

            if (n > out->end - out->last) {
                n = out->end - out->last;
            }

            out->last = weir_cpymem(out->last, src->pos, (size_t) n);
            src->pos += n;
            ctx->size -= n;
            rb->received += n;
            continue;

        case WEIR_HTTP_PARSE_TRAILER:
            rc = weir_http_body_trailer(r, st, src, 1);
            if (rc != WEIR_OK) {
                return rc;
            }

            continue;

        case WEIR_DONE:
            rb->rest = 0;
            return WEIR_DONE;

        case WEIR_AGAIN:
            /* src is used up: keep the part of a trailer line it had */
            return weir_http_body_trailer(r, st, src, 0);

        default:
            weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                           "client sent invalid chunked body");
            return WEIR_HTTP_BAD_REQUEST;
        }
    }
}


/*
 * Takes the piece of a trailer field line that the parser's last call
 * saw, and the field once the line ends (end). A line wholly in
 * r->header_in stays there: that buffer lives as long as the request
 * head, which points into it too. A line in st->raw, which the next read
 * overwrites, or one split between reads, is put together in
 * st->trailer in r->pool. WEIR_OK or an HTTP status.
 */

static weir_int_t
weir_http_body_trailer(weir_http_request_t *r, weir_http_body_reader_t *st,
    weir_buf_t *src, weir_uint_t end)
{
    size_t                n, len, size;
    weir_buf_t           *tb, *nb;
    unsigned char        *line;
    weir_http_chunked_t  *ctx;

    ctx = r->request_body->chunked;

    if (ctx->trailer_start == NULL) {
        return WEIR_OK;
    }

    n = src->pos - ctx->trailer_start;
    tb = st->trailer;
    len = tb ? (size_t) (tb->last - tb->pos) : 0;

    if (end && len == 0 && src == r->header_in) {
        return weir_http_body_trailer_field(r, ctx->trailer_start);
    }

    if (tb == NULL || (size_t) (tb->end - tb->last) < n) {
        /* the fields taken keep pointing into the old block: only the
         * unfinished line moves; the parser caps the whole section */
        size = 2 * (len + n);
        if (size < 256) {
            size = 256;
        }

        nb = weir_create_temp_buf(r->pool, size);
        if (nb == NULL) {
            return WEIR_HTTP_INTERNAL_SERVER_ERROR;
        }

        if (len) {
            nb->last = weir_cpymem(nb->last, tb->pos, len);
        }

        st->trailer = nb;
        tb = nb;
    }

    tb->last = weir_cpymem(tb->last, ctx->trailer_start, n);

    if (!end) {
        return WEIR_OK;
    }

    line = tb->pos;
    tb->pos = tb->last;

    return weir_http_body_trailer_field(r, line);
}


/*
 * Adds the trailer field of a whole line to r->headers_in.trailers. The
 * fields are kept apart from the header section and never merged into
 * it (RFC 9110 6.5.1); those that frame, route or manage the connection
 * (Content-Length, Host and the hop-by-hop ones such as
 * Transfer-Encoding) are dropped, so that nothing downstream, a proxy
 * forwarding trailers included, can take them for the real ones.
 */

static weir_int_t
weir_http_body_trailer_field(weir_http_request_t *r, unsigned char *line)
{
    size_t                len;
    weir_uint_t           hash, token;
    unsigned char        *lowcase;
    weir_http_header_t   *h;
    weir_http_chunked_t  *ctx;

    ctx = r->request_body->chunked;
    len = ctx->trailer_name_len;

    lowcase = weir_pnalloc(r->pool, len);
    if (lowcase == NULL) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    hash = weir_hash_strlow(lowcase, line, len);
    token = weir_http_header_token(lowcase, len, hash);

    if (token == WEIR_HTTP_HDR_CONTENT_LENGTH || token == WEIR_HTTP_HDR_HOST
        || (weir_http_header_defs[token].flags & WEIR_HTTP_HDR_F_HOP_BY_HOP))
    {
        weir_log_error(WEIR_LOG_INFO, r->connection->log, 0,
                       "client sent \"%.*s\" trailer field, ignored",
                       (int) len, (const char *) line);
        return WEIR_OK;
    }

    h = weir_list_push(&r->headers_in.trailers);
    if (h == NULL) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* 0 marks a deleted field */
    h->hash = hash ? hash : 1;
    h->token = token;
    h->key.data = line;
    h->key.len = len;
    h->value.data = line + ctx->trailer_value_start;
    h->value.len = ctx->trailer_value_end - ctx->trailer_value_start;
    h->lowcase_key = lowcase;
    h->next = NULL;

    weir_log_debug(r->connection->log, 0, "http trailer: \"%.*s: %.*s\"",
                   (int) h->key.len, (const char *) h->key.data,
                   (int) h->value.len, (const char *) h->value.data);

    return WEIR_OK;
}


/* passes out[mark, last) down the request body filter chain */

static weir_int_t
weir_http_body_deliver(weir_http_request_t *r, weir_http_body_reader_t *st,
    weir_uint_t last)
{
    weir_buf_t                *b;
    weir_chain_t               cl, *track;
    weir_http_request_body_t  *rb;

    rb = r->request_body;

    if (st->out->last == st->mark && !last) {
        return WEIR_OK;
    }

    /*
     * Buffer headers are recycled so that a long body costs no memory
     * per read: in a file, the one spilled to disk right after this
     * call; streamed, those the consumer is done with (rb->free keeps
     * links with their buffers).
     */

    track = NULL;

    if (r->request_body_no_buffering && st->out->last > st->mark) {
        if (rb->free) {
            track = rb->free;
            rb->free = track->next;
            b = track->buf;

        } else {
            track = weir_palloc(r->pool, sizeof(weir_chain_t));
            b = weir_alloc_buf(r->pool);
        }

        if (track == NULL || b == NULL) {
            return WEIR_HTTP_INTERNAL_SERVER_ERROR;
        }

        /* remember what the consumer holds in this block */
        track->buf = b;
        track->next = rb->busy;
        rb->busy = track;

    } else if (rb->temp_file) {
        b = st->spare;

        if (b == NULL) {
            b = weir_alloc_buf(r->pool);
            if (b == NULL) {
                return WEIR_HTTP_INTERNAL_SERVER_ERROR;
            }

            st->spare = b;
        }

    } else {
        b = weir_alloc_buf(r->pool);
        if (b == NULL) {
            return WEIR_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    weir_memzero(b, sizeof(weir_buf_t));

    b->start = st->mark;
    b->pos = st->mark;
    b->last = st->out->last;
    b->end = st->out->last;
    b->temporary = (b->last > b->pos);
    b->last_buf = last ? 1 : 0;
    b->last_in_chain = 1;
    b->tag = (weir_buf_tag_t) &weir_http_read_client_request_body;

    st->mark = st->out->last;

    /* filters copy the links they keep */
    cl.buf = b;
    cl.next = NULL;

    if (last) {
        rb->last_sent = 1;
    }

    return weir_http_request_body_filter(r, &cl);
}


/* unbuffered: the block may be read into again once the consumer is
 * done with every buffer it was given from it */

static weir_int_t
weir_http_body_reuse_out(weir_http_request_t *r, weir_http_body_reader_t *st)
{
    weir_chain_t              *cl, *next;
    weir_http_request_body_t  *rb;

    rb = r->request_body;

    for (cl = rb->busy; cl; cl = cl->next) {
        if (cl->buf->pos < cl->buf->last) {
            return WEIR_AGAIN;
        }
    }

    for (cl = rb->busy; cl; cl = next) {
        next = cl->next;
        weir_free_chain(&rb->free, cl);
    }

    rb->busy = NULL;

    st->out->pos = st->out->start;
    st->out->last = st->out->start;
    st->mark = st->out->start;

    return WEIR_OK;
}


/* writes what rb->bufs holds in memory to the temporary file and leaves
 * one file buffer in rb->bufs (weir_http.h) */

weir_int_t
weir_http_request_body_spill(weir_http_request_t *r)
{
    size_t                     n;
    weir_int_t                 last;
    weir_buf_t                *fb, *b;
    weir_chain_t              *cl;
    weir_http_request_body_t  *rb;

    rb = r->request_body;

    if (rb->temp_file == NULL) {
        if (weir_http_body_open_temp(r) != WEIR_OK) {
            return WEIR_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    fb = rb->temp_file_cl->buf;
    last = fb->last_buf;

    for (cl = rb->bufs; cl; cl = cl->next) {
        b = cl->buf;

        if (b == fb) {
            continue;
        }

        if (b->last_buf) {
            last = 1;
        }

        if (!weir_buf_in_memory(b) || b->last == b->pos) {
            continue;
        }

        n = b->last - b->pos;

        if (weir_write_fd(rb->temp_file->fd, b->pos, n) != (ssize_t) n) {
            weir_log_error(WEIR_LOG_CRIT, r->connection->log, weir_errno,
                           "write() to \"%.*s\" failed",
                           WEIR_STR_ARG(rb->temp_file->name));
            return WEIR_HTTP_INTERNAL_SERVER_ERROR;
        }

        fb->file_last += n;
        rb->temp_file->offset += n;
        b->pos = b->last;
    }

    fb->last_buf = last ? 1 : 0;
    fb->last_in_chain = 1;
    rb->temp_file_cl->next = NULL;
    rb->bufs = rb->temp_file_cl;

    return WEIR_OK;
}


/*
 * Opens a temporary file for r (a request body, or an upstream response
 * the client is too slow for): created O_EXCL with mode 0600 in the
 * prefix's client_body_temp directory (or /tmp), unlinked at once, closed
 * by a cleanup of r->pool. Returns the file or NULL (logged at crit).
 */

weir_file_t *
weir_http_open_temp_file(weir_http_request_t *r)
{
    weir_fd_t                  fd;
    weir_uint_t                tries;
    weir_str_t                 dir, name;
    weir_file_t               *file;
    weir_cycle_t              *cycle;
    weir_connection_t         *c;
    weir_pool_cleanup_t       *cln;
    weir_pool_cleanup_file_t  *clnf;
    static weir_uint_t         counter, dir_generation;
    static weir_str_t          temp_dir;
    static weir_cycle_t       *dir_cycle;

    c = r->connection;
    cycle = (weir_cycle_t *) weir_cycle;

    /* the directory is chosen once per configuration in this process,
     * not with a mkdir() per spilled body (the master created it) */

    if (dir_cycle != cycle || dir_generation != cycle->generation) {

        if (weir_pstrfmt(cycle->pool, &temp_dir, "%.*s%sclient_body_temp",
                         WEIR_STR_ARG(cycle->prefix),
                         (cycle->prefix.len
                          && cycle->prefix.data[cycle->prefix.len - 1]
                             == '/')
                         ? "" : "/")
            != WEIR_OK)
        {
            return NULL;
        }

        if (mkdir((const char *) temp_dir.data, 0700) == -1
            && weir_errno != WEIR_EEXIST)
        {
            /*
             * Workers that run as an unprivileged user may not write to
             * the prefix. The file is unlinked at once and opened O_EXCL
             * with mode 0600, so the system's temporary directory is a
             * safe fallback; say so once per configuration.
             */
            weir_log_error(WEIR_LOG_WARN, c->log, weir_errno,
                           "mkdir() \"%.*s\" failed, request bodies are "
                           "buffered in \"%s\" instead",
                           WEIR_STR_ARG(temp_dir),
                           WEIR_HTTP_BODY_TEMP_FALLBACK);

            weir_str_set(&temp_dir, WEIR_HTTP_BODY_TEMP_FALLBACK);
        }

        dir_cycle = cycle;
        dir_generation = cycle->generation;
    }

    dir = temp_dir;

    cln = weir_pool_cleanup_add(r->pool, sizeof(weir_pool_cleanup_file_t));
    if (cln == NULL) {
        return NULL;
    }

    fd = -1;

    for (tries = 0; tries < 16; tries++) {
        if (weir_pstrfmt(r->pool, &name, "%.*s/%010lu.%ld",
                         WEIR_STR_ARG(dir), (unsigned long) ++counter,
                         (long) weir_pid)
            != WEIR_OK)
        {
            return NULL;
        }

        fd = open((const char *) name.data,
                  O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

        if (fd != -1 || weir_errno != WEIR_EEXIST) {
            break;
        }
    }

    if (fd == -1) {
        weir_log_error(WEIR_LOG_CRIT, c->log, weir_errno,
                       "open() \"%.*s\" failed", WEIR_STR_ARG(name));
        return NULL;
    }

    /* the descriptor keeps the data: nothing is left behind on disk */
    (void) unlink((const char *) name.data);

    clnf = cln->data;
    clnf->fd = fd;
    clnf->name = name.data;
    clnf->log = c->log;
    cln->handler = weir_pool_cleanup_file;

    file = weir_pcalloc(r->pool, sizeof(weir_file_t));
    if (file == NULL) {
        return NULL;
    }

    file->fd = fd;
    file->name = name;
    file->log = c->log;

    return file;
}


static weir_int_t
weir_http_body_open_temp(weir_http_request_t *r)
{
    weir_buf_t                *b;
    weir_file_t               *file;
    weir_chain_t              *cl;
    weir_http_request_body_t  *rb;

    rb = r->request_body;

    file = weir_http_open_temp_file(r);
    if (file == NULL) {
        return WEIR_ERROR;
    }

    b = weir_calloc_buf(r->pool);
    cl = weir_palloc(r->pool, sizeof(weir_chain_t));
    if (b == NULL || cl == NULL) {
        return WEIR_ERROR;
    }

    b->in_file = 1;
    b->temp_file = 1;
    b->file = file;
    b->file_pos = 0;
    b->file_last = 0;
    b->tag = (weir_buf_tag_t) &weir_http_read_client_request_body;

    cl->buf = b;
    cl->next = NULL;
    rb->temp_file_cl = cl;
    rb->temp_file = file;

    weir_log_error(WEIR_LOG_WARN, r->connection->log, 0,
                   "a client request body is buffered to a temporary file");

    return WEIR_OK;
}


static weir_int_t
weir_http_body_arm(weir_http_request_t *r, weir_http_body_reader_t *st)
{
    weir_connection_t          *c;
    weir_http_core_loc_conf_t  *clcf;

    c = r->connection;

    if (!st->wait_socket) {
        /* waiting for the consumer, which has timeouts of its own */
        if (c->read->timer_set) {
            weir_event_del_timer(c->read);
        }
        return WEIR_OK;
    }

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    if (clcf->client_body_timeout) {
        weir_event_add_timer(c->read, clcf->client_body_timeout);
    }

    if (weir_handle_read_event(c->read, 0) != WEIR_OK) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    return WEIR_OK;
}


static weir_int_t
weir_http_body_pass_empty_last(weir_http_request_t *r)
{
    weir_buf_t    *b;
    weir_chain_t  *cl;

    b = weir_calloc_buf(r->pool);
    cl = weir_palloc(r->pool, sizeof(weir_chain_t));
    if (b == NULL || cl == NULL) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->last_buf = 1;
    b->last_in_chain = 1;
    b->tag = (weir_buf_tag_t) &weir_http_read_client_request_body;

    cl->buf = b;
    cl->next = NULL;

    r->request_body->last_sent = 1;

    return weir_http_request_body_filter(r, cl);
}


/*
 * Every protocol passes the body it decoded here, never to the request
 * body filters directly: the body's size is checked against
 * client_max_body_size as it arrives, whatever the framing (a chunked
 * HTTP/1 body, HTTP/2 DATA without content-length), so that no protocol
 * has to remember it; the HTTP/1 decoder refuses an oversized chunk
 * earlier still, from its size line. WEIR_OK or an HTTP status.
 */

weir_int_t
weir_http_request_body_filter(weir_http_request_t *r, weir_chain_t *in)
{
    off_t                       size;
    weir_int_t                  rc;
    weir_chain_t               *cl;
    weir_http_request_body_t   *rb;
    weir_http_core_loc_conf_t  *clcf;

    rb = r->request_body;

    if (rb) {
        size = 0;

        for (cl = in; cl; cl = cl->next) {
            size += weir_buf_size(cl->buf);
        }

        rb->passed += size;

        clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

        if (clcf->client_max_body_size
            && rb->passed > clcf->client_max_body_size)
        {
            weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                           "client intended to send too large body: "
                           "more than %lld bytes",
                           (long long) clcf->client_max_body_size);
            return WEIR_HTTP_REQUEST_ENTITY_TOO_LARGE;
        }
    }

    rc = weir_http_top_request_body_filter(r, in);

    if (rc == WEIR_OK) {
        return WEIR_OK;
    }

    return rc == WEIR_ERROR ? WEIR_HTTP_INTERNAL_SERVER_ERROR : rc;
}


/*
 * Discarding. WEIR_OK: the connection can be kept (nothing to read, or
 * it was read, or it goes on in the background). Anything else: the
 * connection cannot be kept, and r->keepalive is off.
 */

weir_int_t
weir_http_discard_request_body(weir_http_request_t *r)
{
    weir_int_t                 rc;
    weir_http_request_body_t  *rb;

    if (r != r->main || r->discard_body) {
        return WEIR_OK;
    }

    rb = r->request_body;

    if (rb) {
        /* a reader started: what it did not read stays on the wire */
        if (!rb->last_sent && rb->rest != 0) {
            r->keepalive = 0;
            r->lingering_close = 1;
        }
        return WEIR_OK;
    }

    if (r->headers_in.content_length_n <= 0 && !r->headers_in.chunked) {
        return WEIR_OK;
    }

    if (!r->expect_tested && weir_http_request_expects_continue(r)
        && !weir_http_request_body_received(r))
    {
        /* the client waits for a 100 that will not come: do not wait
         * for its body either, close after the response */
        r->expect_tested = 1;
        r->keepalive = 0;
        return WEIR_OK;
    }

    r->expect_tested = 1;

    if (r->proto == NULL || r->proto->discard_body == NULL) {
        r->keepalive = 0;
        return WEIR_ERROR;
    }

    rc = r->proto->discard_body(r);

    if (rc == WEIR_OK || rc == WEIR_AGAIN) {
        return WEIR_OK;
    }

    r->keepalive = 0;
    r->lingering_close = 0;

    return rc;
}


weir_int_t
weir_http_discard_request_body_stream(weir_http_request_t *r)
{
    weir_int_t                  rc;
    weir_msec_t                 timer;
    weir_connection_t          *c;
    weir_http_request_body_t   *rb;
    weir_http_core_loc_conf_t  *clcf;

    c = r->connection;

    rb = weir_pcalloc(r->pool, sizeof(weir_http_request_body_t));
    if (rb == NULL) {
        return WEIR_ERROR;
    }

    r->request_body = rb;

    rb->reader = weir_pcalloc(r->pool, sizeof(weir_http_body_reader_t));
    if (rb->reader == NULL) {
        return WEIR_ERROR;
    }

    if (r->headers_in.chunked) {
        rb->rest = -1;
        rb->chunked = weir_pcalloc(r->pool, sizeof(weir_http_chunked_t));
        if (rb->chunked == NULL) {
            return WEIR_ERROR;
        }

    } else {
        rb->rest = r->headers_in.content_length_n;
    }

    rc = weir_http_body_drain(r);

    if (rc == WEIR_OK) {
        rb->last_sent = 1;
        r->lingering_close = 0;
        return WEIR_OK;
    }

    if (rc != WEIR_AGAIN) {
        return rc;
    }

    /* the rest comes later: keep a reference until it is drained */

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    r->discard_body = 1;
    r->main->count++;
    r->read_event_handler = weir_http_discarded_request_body_handler;
    r->lingering_time = weir_time() + (time_t) (clcf->lingering_time / 1000);

    timer = clcf->lingering_timeout ? clcf->lingering_timeout : 5000;
    weir_event_add_timer(c->read, timer);

    if (weir_handle_read_event(c->read, 0) != WEIR_OK) {
        weir_http_discard_done(r, 0);
        return WEIR_OK;
    }

    return WEIR_AGAIN;
}


static void
weir_http_discarded_request_body_handler(weir_http_request_t *r)
{
    time_t                      left;
    weir_int_t                  rc;
    weir_msec_t                 timer;
    weir_connection_t          *c;
    weir_http_core_loc_conf_t  *clcf;

    c = r->connection;

    if (c->read->timedout) {
        c->read->timedout = 0;
        weir_http_discard_done(r, 0);
        return;
    }

    left = r->lingering_time - weir_time();

    if (r->lingering_time && left <= 0) {
        weir_http_discard_done(r, 0);
        return;
    }

    rc = weir_http_body_drain(r);

    if (rc == WEIR_OK) {
        weir_http_discard_done(r, 1);
        return;
    }

    if (rc != WEIR_AGAIN) {
        weir_http_discard_done(r, 0);
        return;
    }

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    timer = clcf->lingering_timeout ? clcf->lingering_timeout : 5000;
    if (r->lingering_time && (weir_msec_t) left * 1000 < timer) {
        timer = (weir_msec_t) left * 1000;
    }

    weir_event_add_timer(c->read, timer);

    if (weir_handle_read_event(c->read, 0) != WEIR_OK) {
        weir_http_discard_done(r, 0);
    }
}


/* ends a background discard and drops its reference; r may be freed */

static void
weir_http_discard_done(weir_http_request_t *r, weir_uint_t ok)
{
    weir_connection_t  *c;

    c = r->connection;

    if (c->read->timer_set) {
        weir_event_del_timer(c->read);
    }

    r->discard_body = 0;
    r->lingering_close = 0;
    r->read_event_handler = weir_http_block_reading;

    if (ok) {
        r->request_body->last_sent = 1;

    } else {
        r->keepalive = 0;
    }

    weir_http_close_request(r, 0);
}


/*
 * How much of a chunked body may be read without reading past its end
 * (into a pipelined request), at most size. ctx->length is the parser's
 * bound when it last returned; chunk data taken since then lowers it.
 */

static size_t
weir_http_body_chunked_need(weir_http_request_t *r, size_t size)
{
    off_t                      need;
    weir_http_chunked_t       *ctx;
    weir_http_body_reader_t   *st;

    ctx = r->request_body->chunked;
    st = r->request_body->reader;

    if (st->chunk_data) {
        /* the data left, its CRLF and the smallest last chunk */
        need = ctx->size + 2 + 5;

    } else {
        need = ctx->length;
    }

    if (need <= 0) {
        need = 1;
    }

    if ((off_t) size > need) {
        size = (size_t) need;
    }

    return size;
}


/* reads and drops the body: WEIR_OK at its end, WEIR_AGAIN, or an error */

/* what one read event may drain before the other connections run */
#define WEIR_HTTP_DISCARD_BUDGET  (4 * WEIR_HTTP_DISCARD_BUFFER_SIZE)


static weir_int_t
weir_http_body_drain(weir_http_request_t *r)
{
    off_t                      total;
    size_t                     size;
    ssize_t                    n;
    weir_int_t                 rc;
    weir_buf_t                 b;
    weir_connection_t         *c;
    weir_http_request_body_t  *rb;
    unsigned char              buffer[WEIR_HTTP_DISCARD_BUFFER_SIZE];

    c = r->connection;
    rb = r->request_body;

    if (r->header_in && r->header_in->pos < r->header_in->last) {
        rc = weir_http_body_skip(r, r->header_in);
        if (rc == WEIR_DONE) {
            return WEIR_OK;
        }

        if (rc != WEIR_OK) {
            return rc;
        }
    }

    total = 0;

    for ( ;; ) {
        if (total >= WEIR_HTTP_DISCARD_BUDGET && c->read->ready) {
            /* a client sending fast must not hold the worker: the rest
             * is read after the other ready connections had their turn */
            weir_post_event(c->read, &weir_posted_next_events);
            return WEIR_AGAIN;
        }

        size = sizeof(buffer);

        if (rb->chunked) {
            size = weir_http_body_chunked_need(r, size);

        } else if ((off_t) size > rb->rest) {
            size = (size_t) rb->rest;
        }

        n = c->recv(c, buffer, size);

        if (n == WEIR_AGAIN) {
            return WEIR_AGAIN;
        }

        if (n == 0 || n == WEIR_ERROR) {
            return WEIR_ERROR;
        }

        r->request_length += n;
        total += n;

        weir_memzero(&b, sizeof(weir_buf_t));
        b.start = buffer;
        b.pos = buffer;
        b.last = buffer + n;
        b.end = buffer + n;
        b.temporary = 1;

        rc = weir_http_body_skip(r, &b);

        if (rc == WEIR_DONE) {
            return WEIR_OK;
        }

        if (rc != WEIR_OK) {
            return rc;
        }

        if (b.pos < b.last) {
            /* the decoder stopped inside the bytes it was given */
            return WEIR_ERROR;
        }
    }
}


static weir_int_t
weir_http_body_skip(weir_http_request_t *r, weir_buf_t *b)
{
    off_t                      n;
    weir_int_t                 rc;
    weir_http_chunked_t       *ctx;
    weir_http_body_reader_t   *st;
    weir_http_request_body_t  *rb;

    rb = r->request_body;
    st = rb->reader;

    if (rb->chunked == NULL) {
        n = b->last - b->pos;
        if (n > rb->rest) {
            n = rb->rest;
        }

        b->pos += n;
        rb->rest -= n;

        return rb->rest == 0 ? WEIR_DONE : WEIR_OK;
    }

    ctx = rb->chunked;

    for ( ;; ) {
        if (b->pos == b->last) {
            return WEIR_OK;
        }

        rc = weir_http_parse_chunked(r, b, ctx);

        st->chunk_data = (rc == WEIR_OK);

        if (rc == WEIR_OK) {
            n = b->last - b->pos;
            if (n > ctx->size) {
                n = ctx->size;
            }

            b->pos += n;
            ctx->size -= n;
            continue;
        }

        if (rc == WEIR_HTTP_PARSE_TRAILER) {
            /* a discarded body's trailers are not kept either */
            continue;
        }

        if (rc == WEIR_DONE) {
            rb->rest = 0;
            return WEIR_DONE;
        }

        if (rc == WEIR_AGAIN) {
            return WEIR_OK;
        }

        weir_log_error(WEIR_LOG_INFO, r->connection->log, 0,
                       "client sent invalid chunked body "
                       "while discarding it");
        return WEIR_HTTP_BAD_REQUEST;
    }
}
