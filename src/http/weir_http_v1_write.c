#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_http.h"
#include "weir.h"

#if (defined __linux__)
#include <sys/sendfile.h>
#endif


/*
 * HTTP/1.0 and HTTP/1.1 responses: the status line and the headers, the
 * body framed by Content-Length or chunked (with trailers), written with
 * writev and sendfile (or pread) within a budget per write event.
 */


#define WEIR_HTTP_V1_IOVS         64
#define WEIR_HTTP_V1_FILE_CHUNK   32768
/* a chunk-size line ("ffffffffffffffff\r\n") or the CRLF after a chunk */
#define WEIR_HTTP_V1_FRAME_SIZE   20
/* what one write event may send with writev or pread before the other
 * connections of the worker get their turn */
#define WEIR_HTTP_V1_SEND_BUDGET  (4 * WEIR_HTTP_V1_FILE_CHUNK)


static weir_buf_t *weir_http_v1_mem_buf(weir_http_request_t *r,
    const char *data, size_t len);
static weir_buf_t *weir_http_v1_frame_buf(weir_http_request_t *r,
    weir_chain_t ***ll);


static weir_buf_t *
weir_http_v1_mem_buf(weir_http_request_t *r, const char *data, size_t len)
{
    weir_buf_t  *b;

    b = weir_calloc_buf(r->pool);
    if (b == NULL) {
        return NULL;
    }

    b->memory = 1;
    b->pos = (unsigned char *) data;
    b->last = b->pos + len;
    b->start = b->pos;
    b->end = b->last;

    return b;
}


weir_int_t
weir_http_v1_queue(weir_http_request_t *r, weir_buf_t *b)
{
    weir_chain_t           *cl, **ll;
    weir_http_v1_stream_t  *st;

    st = r->stream;

    cl = weir_alloc_chain_link(r->pool, &st->free);
    if (cl == NULL) {
        return WEIR_ERROR;
    }

    cl->buf = b;
    cl->next = NULL;

    for (ll = &r->out; *ll; ll = &(*ll)->next) { /* void */ }

    *ll = cl;

    return WEIR_OK;
}


/* marks the chunk framing buffers, recycled through the stream's lists */
static weir_uint_t  weir_http_v1_frame_tag;


/*
 * A chunk framing buffer from the stream's free list, linked at **ll:
 * a long chunked response reuses the same few buffers rather than
 * taking new ones from r->pool for every chunk.
 */

static weir_buf_t *
weir_http_v1_frame_buf(weir_http_request_t *r, weir_chain_t ***ll)
{
    weir_buf_t             *b;
    weir_chain_t           *cl;
    weir_http_v1_stream_t  *st;

    st = r->stream;

    cl = weir_chain_get_free_buf(r->pool, &st->frame_free);
    if (cl == NULL) {
        return NULL;
    }

    b = cl->buf;

    if (b->start == NULL) {
        b->start = weir_pnalloc(r->pool, WEIR_HTTP_V1_FRAME_SIZE);
        if (b->start == NULL) {
            return NULL;
        }

        b->end = b->start + WEIR_HTTP_V1_FRAME_SIZE;
        b->temporary = 1;
        b->tag = (weir_buf_tag_t) &weir_http_v1_frame_tag;
    }

    b->pos = b->start;
    b->last = b->start;

    cl->next = NULL;
    **ll = cl;
    *ll = &cl->next;

    if (weir_http_v1_queue(r, b) != WEIR_OK) {
        return NULL;
    }

    return b;
}


#define weir_http_v1_put_lit(p, last, lit)                                    \
    weir_http_v1_put(p, last, lit, sizeof(lit) - 1)


/* copies of the response head: bounded by last, never past it */

static weir_inline unsigned char *
weir_http_v1_put(unsigned char *p, unsigned char *last, const void *data,
    size_t len)
{
    if (p >= last) {
        return p;
    }

    if (len > (size_t) (last - p)) {
        len = last - p;
    }

    return weir_cpymem(p, data, len);
}


/* a number needs up to WEIR_INT_T_LEN bytes, kept back beyond last */

static weir_inline unsigned char *
weir_http_v1_put_uint(unsigned char *p, unsigned char *last, uint64_t n)
{
    if (p >= last) {
        return p;
    }

    return weir_sprint_uint(p, n);
}


weir_int_t
weir_http_v1_send_header(weir_http_request_t *r)
{
    size_t                       len;
    weir_uint_t                  i, status, no_body;
    weir_buf_t                  *b;
    const char                  *reason, *server;
    unsigned char               *p, *last;
    weir_list_part_t            *part;
    weir_http_header_t          *h;
    weir_http_core_loc_conf_t   *clcf;

    r->header_sent = 1;

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    status = r->headers_out.status ? r->headers_out.status : WEIR_HTTP_OK;

    if (r->method == WEIR_HTTP_HEAD) {
        r->header_only = 1;
    }

    /* 1xx, 204 and 304 never have a body, not even a length */
    no_body = (status < WEIR_HTTP_OK || status == WEIR_HTTP_NO_CONTENT
               || status == WEIR_HTTP_NOT_MODIFIED);

    if (no_body) {
        r->header_only = 1;
    }

    if (r->keepalive) {
        if (clcf->keepalive_timeout == 0
            || r->http_connection->requests >= clcf->keepalive_requests
            || weir_exiting)
        {
            r->keepalive = 0;
        }
    }

    r->chunked = 0;

    if (!no_body && r->headers_out.content_length_n < 0 && !r->header_only)
    {
        if (r->http_version >= WEIR_HTTP_VERSION_11
            && clcf->chunked_transfer_encoding)
        {
            r->chunked = 1;

        } else {
            /* the end of the body is the end of the connection */
            r->keepalive = 0;
        }
    }

    reason = NULL;

    if (r->headers_out.status_line.len == 0) {
        reason = weir_http_status_reason(status);
    }

    switch (clcf->server_tokens) {
    case WEIR_HTTP_SERVER_TOKENS_OFF:
        server = "weir";
        break;
    default:
        server = WEIR_VER;
        break;
    }

    /* the size: fixed parts with room to spare, then the lists */

    len = sizeof("HTTP/1.1 999 \r\n") - 1 + 64
          + r->headers_out.status_line.len
          + sizeof("Server: \r\n") - 1 + sizeof(WEIR_VER)
          + sizeof("Date: \r\n") - 1 + weir_cached_http_time.len
          + sizeof("Content-Type: ; charset=\r\n") - 1
          + r->headers_out.content_type.len + r->headers_out.charset.len
          + sizeof("Content-Length: \r\n") - 1 + WEIR_INT_T_LEN
          + sizeof("Transfer-Encoding: chunked\r\n") - 1
          + sizeof("Connection: keep-alive\r\n") - 1
          + sizeof("Keep-Alive: timeout=\r\n") - 1 + WEIR_INT_T_LEN
          + sizeof("Last-Modified: Mon, 28 Sep 1970 06:00:00 GMT\r\n") - 1
          + sizeof("\r\n") - 1
          + WEIR_INT_T_LEN;   /* kept back for weir_http_v1_put_uint() */

    part = &r->headers_out.headers.part;
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

        if (h[i].hash) {
            len += weir_http_v1_header_size(&h[i]);
        }
    }

    b = weir_create_temp_buf(r->pool, len);
    if (b == NULL) {
        return WEIR_ERROR;
    }

    /*
     * The lines are copied, not printed: len above has room for all of
     * them, and with a printf call per line the formatting cost more
     * than the rest of a small response. Every copy is still bounded by
     * last, so a wrong size truncates the head rather than overrunning.
     */

    p = b->last;
    last = b->end - WEIR_INT_T_LEN;

    p = weir_http_v1_put_lit(p, last, "HTTP/1.1 ");

    if (reason) {
        p = weir_http_v1_put_uint(p, last, status);
        p = weir_http_v1_put_lit(p, last, " ");
        p = weir_http_v1_put(p, last, reason, weir_strlen(reason));

    } else if (r->headers_out.status_line.len) {
        p = weir_http_v1_put(p, last, r->headers_out.status_line.data,
                             r->headers_out.status_line.len);

    } else {
        p = weir_http_v1_put_uint(p, last, status);
        p = weir_http_v1_put_lit(p, last, " ");
    }

    p = weir_http_v1_put_lit(p, last, "\r\n");

#define weir_http_v1_emit(hp)                                                 \
    if ((hp) && (hp)->hash) {                                                 \
        p = weir_http_v1_put(p, last, (hp)->key.data, (hp)->key.len);         \
        p = weir_http_v1_put_lit(p, last, ": ");                              \
        p = weir_http_v1_put(p, last, (hp)->value.data, (hp)->value.len);     \
        p = weir_http_v1_put_lit(p, last, "\r\n");                            \
    }

    if (r->headers_out.server && r->headers_out.server->hash) {
        weir_http_v1_emit(r->headers_out.server);

    } else {
        p = weir_http_v1_put_lit(p, last, "Server: ");
        p = weir_http_v1_put(p, last, server, weir_strlen(server));
        p = weir_http_v1_put_lit(p, last, "\r\n");
    }

    if (r->headers_out.date && r->headers_out.date->hash) {
        weir_http_v1_emit(r->headers_out.date);

    } else {
        p = weir_http_v1_put_lit(p, last, "Date: ");
        p = weir_http_v1_put(p, last, weir_cached_http_time.data,
                             weir_cached_http_time.len);
        p = weir_http_v1_put_lit(p, last, "\r\n");
    }

    if (r->headers_out.content_type.len) {
        p = weir_http_v1_put_lit(p, last, "Content-Type: ");
        p = weir_http_v1_put(p, last, r->headers_out.content_type.data,
                             r->headers_out.content_type.len);

        if (r->headers_out.charset.len) {
            p = weir_http_v1_put_lit(p, last, "; charset=");
            p = weir_http_v1_put(p, last, r->headers_out.charset.data,
                                 r->headers_out.charset.len);
        }

        p = weir_http_v1_put_lit(p, last, "\r\n");
    }

    if (r->method == WEIR_HTTP_CONNECT && status >= WEIR_HTTP_OK
        && status < 300)
    {
        /* RFC 9110 9.3.6: the connection is a tunnel from here on; no
         * framing, and no Connection header that could end it */

    } else if (status != WEIR_HTTP_NO_CONTENT && status >= WEIR_HTTP_OK
        && r->headers_out.content_length_n >= 0
        && !(status == WEIR_HTTP_NOT_MODIFIED))
    {
        p = weir_http_v1_put_lit(p, last, "Content-Length: ");
        p = weir_http_v1_put_uint(p, last,
                                  (uint64_t) r->headers_out.content_length_n);
        p = weir_http_v1_put_lit(p, last, "\r\n");

    } else if (r->chunked) {
        p = weir_http_v1_put_lit(p, last, "Transfer-Encoding: chunked\r\n");
    }

    if (r->method == WEIR_HTTP_CONNECT && status >= WEIR_HTTP_OK
        && status < 300)
    {
        /* the tunnel of a CONNECT */

    } else if (status == WEIR_HTTP_SWITCHING_PROTOCOLS) {
        /* a relayed Upgrade: the connection becomes a tunnel */
        p = weir_http_v1_put_lit(p, last, "Connection: upgrade\r\n");

    } else if (r->keepalive) {
        p = weir_http_v1_put_lit(p, last, "Connection: keep-alive\r\n");

        if (clcf->keepalive_header > 0) {
            p = weir_http_v1_put_lit(p, last, "Keep-Alive: timeout=");
            p = weir_http_v1_put_uint(p, last,
                                      (uint64_t) clcf->keepalive_header);
            p = weir_http_v1_put_lit(p, last, "\r\n");
        }

    } else {
        p = weir_http_v1_put_lit(p, last, "Connection: close\r\n");
    }

    if (r->headers_out.last_modified && r->headers_out.last_modified->hash) {
        weir_http_v1_emit(r->headers_out.last_modified);

    } else if (r->headers_out.last_modified_time != -1
               && p + sizeof("Last-Modified: \r\n") + 30 < last)
    {
        p = weir_cpymem(p, "Last-Modified: ", sizeof("Last-Modified: ") - 1);
        p = weir_http_time(p, r->headers_out.last_modified_time);
        *p++ = '\r';
        *p++ = '\n';
    }

    weir_http_v1_emit(r->headers_out.location);
    weir_http_v1_emit(r->headers_out.etag);

    part = &r->headers_out.headers.part;
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

        /* framing is ours: a module cannot set it by hand */
        if (h[i].token == WEIR_HTTP_HDR_CONTENT_LENGTH
            || h[i].token == WEIR_HTTP_HDR_TRANSFER_ENCODING
            || h[i].token == WEIR_HTTP_HDR_CONNECTION
            || h[i].token == WEIR_HTTP_HDR_KEEP_ALIVE)
        {
            continue;
        }

        weir_http_v1_emit(&h[i]);
    }

#undef weir_http_v1_emit

    p = weir_http_v1_put_lit(p, last, "\r\n");

    b->last = p;

    /* $body_bytes_sent is c->sent less this */
    r->header_out_size = b->last - b->pos;

    if (weir_http_v1_queue(r, b) != WEIR_OK) {
        return WEIR_ERROR;
    }

    if (r->header_only) {
        /* nothing follows: send it now */
        return weir_http_v1_write(r);
    }

    /* the header goes out with the first body bytes, in one writev */
    return WEIR_OK;
}


/*
 * The bottom of the body filter chain: frames the body (chunked when
 * send_header chose it), queues it after what is unsent and writes as
 * much as the socket takes.
 */

weir_int_t
weir_http_v1_send_body(weir_http_request_t *r, weir_chain_t *in)
{
    off_t                   size;
    size_t                  len;
    weir_int_t              rc;
    weir_uint_t             i, flush;
    weir_buf_t             *b, *hb;
    weir_chain_t           *cl, *frames, **ll;
    unsigned char          *p;
    weir_list_part_t       *part;
    weir_connection_t      *c;
    weir_http_header_t     *h;
    weir_http_v1_stream_t  *st;

    c = r->connection;
    st = r->stream;

    if (c->error) {
        return WEIR_ERROR;
    }

    flush = 0;
    frames = NULL;
    ll = &frames;

    for (cl = in; cl; cl = cl->next) {
        b = cl->buf;

        if (b->flush) {
            flush = 1;
        }

        if (st->last) {
            /* nothing is sent after the end of the body */
            continue;
        }

        size = weir_buf_special(b) ? 0 : weir_buf_size(b);

        if (r->header_only) {
            /* HEAD, 204, 304: the body is dropped, consumed as sent */
            if (weir_buf_in_memory(b)) {
                b->pos = b->last;
            }

            if (b->in_file) {
                b->file_pos = b->file_last;
            }

            if (b->last_buf) {
                st->last = 1;
            }

            continue;
        }

        if (r->chunked && size > 0) {
            hb = weir_http_v1_frame_buf(r, &ll);
            if (hb == NULL) {
                return WEIR_ERROR;
            }

            hb->last = weir_slprintf(hb->pos, hb->end, "%llx\r\n",
                                     (unsigned long long) size);
        }

        if (size > 0) {
            if (weir_http_v1_queue(r, b) != WEIR_OK) {
                return WEIR_ERROR;
            }
        }

        if (r->chunked && size > 0) {
            hb = weir_http_v1_frame_buf(r, &ll);
            if (hb == NULL) {
                return WEIR_ERROR;
            }

            *hb->last++ = '\r';
            *hb->last++ = '\n';
        }

        if (b->last_buf) {
            st->last = 1;

            if (r->chunked) {
                len = sizeof("0\r\n\r\n") - 1;

                if (r->expect_trailers) {
                    part = &r->headers_out.trailers.part;
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

                        if (h[i].hash) {
                            len += weir_http_v1_header_size(&h[i]);
                        }
                    }
                }

                p = weir_pnalloc(r->pool, len + 1);
                if (p == NULL) {
                    return WEIR_ERROR;
                }

                hb = weir_http_v1_mem_buf(r, (const char *) p, 0);
                if (hb == NULL) {
                    return WEIR_ERROR;
                }

                p = weir_slprintf(p, p + len + 1, "0\r\n");

                if (r->expect_trailers) {
                    part = &r->headers_out.trailers.part;
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

                        if (h[i].hash) {
                            p = weir_slprintf(p, hb->start + len + 1,
                                              "%.*s: %.*s\r\n",
                                              WEIR_STR_ARG(h[i].key),
                                              WEIR_STR_ARG(h[i].value));
                        }
                    }
                }

                p = weir_slprintf(p, hb->start + len + 1, "\r\n");

                hb->last = p;
                hb->end = p;

                if (weir_http_v1_queue(r, hb) != WEIR_OK) {
                    return WEIR_ERROR;
                }
            }
        }
    }

    (void) flush;

    if (r->out == NULL) {
        rc = WEIR_OK;
        c->buffered &= ~WEIR_HTTP_WRITE_BUFFERED;

    } else {
        rc = weir_http_v1_write(r);
    }

    /* the framing buffers sent by now are free for the next chunks */
    weir_chain_update_chains(r->pool, &st->frame_free, &st->frame_busy,
                             &frames,
                             (weir_buf_tag_t) &weir_http_v1_frame_tag);

    return rc;
}


/*
 * Writes r->out: memory buffers with writev, file buffers with sendfile
 * (sendfile on) or read into a reused buffer (off). WEIR_OK when all is
 * sent, WEIR_AGAIN with the write event armed and c->buffered set,
 * WEIR_ERROR on a broken connection.
 */

weir_int_t
weir_http_v1_write(weir_http_request_t *r)
{
    int                          cnt;
    off_t                        fsize, start;
    size_t                       limit;
    ssize_t                      n, total;
    size_t                       chunk;
    weir_err_t                   err;
    weir_buf_t                  *b, *fb;
    weir_event_t                *wev;
    weir_chain_t                *cl, *ncl;
    struct iovec                 iov[WEIR_HTTP_V1_IOVS];
    weir_connection_t           *c;
    weir_http_v1_stream_t       *st;
    weir_http_core_loc_conf_t   *clcf;

    c = r->connection;
    wev = c->write;
    st = r->stream;

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    if (c->error) {
        return WEIR_ERROR;
    }

    start = c->sent;
    limit = WEIR_HTTP_V1_SEND_BUDGET;

    while (wev->ready) {

        /* drop what is done */

        while (r->out) {
            b = r->out->buf;

            if (weir_buf_special(b)
                || (weir_buf_in_memory(b) && b->pos == b->last
                    && (!b->in_file || b->file_pos >= b->file_last))
                || (!weir_buf_in_memory(b) && b->in_file
                    && b->file_pos >= b->file_last)
                || (!weir_buf_in_memory(b) && !b->in_file))
            {
                cl = r->out;
                r->out = cl->next;
                weir_free_chain(&st->free, cl);
                continue;
            }

            break;
        }

        if (r->out == NULL) {
            break;
        }

        if (c->sent - start >= (off_t) limit) {
            /* one fast client must not hold the worker: the rest goes
             * after the other ready connections had their turn */
            weir_post_event(wev, &weir_posted_next_events);
            break;
        }

        b = r->out->buf;

        if (!weir_buf_in_memory(b)) {

            /* a file range */

            fsize = b->file_last - b->file_pos;

#if (defined __linux__)
            /* TLS encrypts in user space: its data goes through
             * c->writev like memory buffers */
            if (clcf->sendfile && c->ssl == NULL) {
                off_t  offset;

                chunk = fsize > (off_t) 0x7ffff000 ? 0x7ffff000
                                                   : (size_t) fsize;

                if (clcf->sendfile_max_chunk
                    && chunk > clcf->sendfile_max_chunk)
                {
                    chunk = clcf->sendfile_max_chunk;
                }

                offset = b->file_pos;

                n = sendfile(c->fd, b->file->fd, &offset, chunk);

                if (n == -1) {
                    err = weir_socket_errno;

                    if (err == WEIR_EAGAIN || err == EINTR) {
                        wev->ready = 0;
                        break;
                    }

                    wev->error = 1;
                    c->error = 1;
                    (void) weir_connection_error(c, err, "sendfile() failed");
                    return WEIR_ERROR;
                }

                if (n == 0) {
                    weir_log_error(WEIR_LOG_ALERT, c->log, 0,
                                   "sendfile() reported that \"%s\" was "
                                   "truncated", b->file->name.data
                                   ? (const char *) b->file->name.data
                                   : "");
                    c->error = 1;
                    return WEIR_ERROR;
                }

                b->file_pos += n;
                c->sent += n;

                /* one sendfile_max_chunk per event */
                limit = clcf->sendfile_max_chunk ? clcf->sendfile_max_chunk
                                                 : WEIR_HTTP_V1_SEND_BUDGET;

                if ((size_t) n < chunk) {
                    wev->ready = 0;
                }

                continue;
            }
#endif

            /* sendfile off: read a piece into a reused buffer placed
             * before the file buffer */

            fb = st->file_buf;

            if (fb == NULL) {
                fb = weir_create_temp_buf(r->pool, WEIR_HTTP_V1_FILE_CHUNK);
                if (fb == NULL) {
                    return WEIR_ERROR;
                }

                st->file_buf = fb;
            }

            chunk = fsize > WEIR_HTTP_V1_FILE_CHUNK ? WEIR_HTTP_V1_FILE_CHUNK
                                                    : (size_t) fsize;

            n = pread(b->file->fd, fb->start, chunk, b->file_pos);

            if (n == -1) {
                weir_log_error(WEIR_LOG_CRIT, c->log, errno,
                               "pread() failed");
                c->error = 1;
                return WEIR_ERROR;
            }

            if (n == 0) {
                weir_log_error(WEIR_LOG_ALERT, c->log, 0,
                               "file was truncated while being sent");
                c->error = 1;
                return WEIR_ERROR;
            }

            fb->pos = fb->start;
            fb->last = fb->start + n;
            b->file_pos += n;

            if (b->file_pos >= b->file_last && !b->last_buf && !b->flush) {
                /* the range is all read: its link now carries the copy,
                 * so nothing here points at b any more and its owner
                 * may reuse it at once (proxied bodies recycle theirs) */
                r->out->buf = fb;
                continue;
            }

            ncl = weir_alloc_chain_link(r->pool, &st->free);
            if (ncl == NULL) {
                return WEIR_ERROR;
            }

            ncl->buf = fb;
            ncl->next = r->out;
            r->out = ncl;

            continue;
        }

        /* memory buffers, up to the first file buffer */

        cnt = 0;
        total = 0;

        for (cl = r->out;
             cl && cnt < WEIR_HTTP_V1_IOVS
             && total < (ssize_t) WEIR_HTTP_V1_SEND_BUDGET;
             cl = cl->next)
        {
            b = cl->buf;

            if (weir_buf_special(b)) {
                continue;
            }

            if (!weir_buf_in_memory(b)) {
                break;
            }

            if (b->pos == b->last) {
                continue;
            }

            iov[cnt].iov_base = b->pos;
            iov[cnt].iov_len = b->last - b->pos;

            /* one writev takes at most the budget of an event */
            if (iov[cnt].iov_len
                > WEIR_HTTP_V1_SEND_BUDGET - (size_t) total)
            {
                iov[cnt].iov_len = WEIR_HTTP_V1_SEND_BUDGET - (size_t) total;
            }

            total += iov[cnt].iov_len;
            cnt++;
        }

        if (cnt == 0) {
            /* a memory buffer with nothing left in memory whose file
             * range claims more: nothing can be sent from it */
            b = r->out->buf;
            b->file_pos = b->file_last;
            b->in_file = 0;
            continue;
        }

        n = c->writev(c, iov, cnt);

        if (n == WEIR_AGAIN || n == 0) {
            wev->ready = 0;
            break;
        }

        if (n == WEIR_ERROR) {
            /* logged, c->error set */
            wev->error = 1;
            c->error = 1;
            return WEIR_ERROR;
        }

        /* c->writev counted n in c->sent */

        if (n < total) {
            wev->ready = 0;
        }

        for (cl = r->out; cl && n > 0; cl = cl->next) {
            b = cl->buf;

            if (weir_buf_special(b) || !weir_buf_in_memory(b)) {
                if (!weir_buf_in_memory(b) && !weir_buf_special(b)) {
                    break;
                }

                continue;
            }

            if ((ssize_t) (b->last - b->pos) <= n) {
                n -= b->last - b->pos;
                b->pos = b->last;

                if (b->in_file) {
                    b->file_pos = b->file_last;
                }

            } else {
                b->pos += n;

                if (b->in_file) {
                    b->file_pos += n;
                }

                n = 0;
            }
        }
    }

    while (r->out) {
        b = r->out->buf;

        if (weir_buf_special(b)
            || (weir_buf_in_memory(b) && b->pos == b->last)
            || (!weir_buf_in_memory(b) && (!b->in_file
                                           || b->file_pos >= b->file_last)))
        {
            cl = r->out;
            r->out = cl->next;
            weir_free_chain(&st->free, cl);
            continue;
        }

        break;
    }

    if (r->out) {
        c->buffered |= WEIR_HTTP_WRITE_BUFFERED;

        if (!wev->timer_set) {
            weir_event_add_timer(wev, clcf->send_timeout);
        }

        if (weir_handle_write_event(wev, clcf->send_lowat) != WEIR_OK) {
            c->error = 1;
            return WEIR_ERROR;
        }

        return WEIR_AGAIN;
    }

    c->buffered &= ~WEIR_HTTP_WRITE_BUFFERED;

    if (wev->timer_set) {
        weir_event_del_timer(wev);
    }

    return WEIR_OK;
}


weir_uint_t
weir_http_v1_trailers_allowed(weir_http_request_t *r)
{
    return r->chunked;
}
