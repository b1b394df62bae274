/*
 * weir-probe origin, HTTP/2: the same paths as HTTP/1 on a connection
 * that chose h2 (ALPN on a --tls listener, the client preface on a plain
 * one). nghttp2 frames; the bytes move through the connection's buffers
 * (c->in for reads, c->out gathers what nghttp2_session_mem_send()
 * gives) and po_io_recv()/po_io_send(), never inside a callback.
 *
 * Flow control is left to the consumer: nghttp2's automatic window
 * updates are off and a request body is consumed as it is drained or,
 * for /echo, as its bytes are sent back, so a stream holds at most its
 * window (PO_H2_WINDOW) of unsent echo.
 */

#include "weir_config.h"
#include "weir_core.h"
#include "weir_probe.h"
#include "weir_probe_origin.h"

#if (WEIR_HAVE_NGHTTP2)

#include <nghttp2/nghttp2.h>


#define PO_H2_WINDOW       (1024 * 1024)
#define PO_H2_CONN_WINDOW  (1024 * 1024 * 1024)
#define PO_H2_STREAMS      1024

/* request paths that are no HTTP/2 answer: /ws is HTTP/1 only */
#define PO_H2_TEXT         100
/* /grpc...: a gRPC unary answer once the request ended: one
 * length-prefixed message, then the trailers grpc-status and
 * grpc-message */
#define PO_H2_GRPC         101

/* a gRPC message: not compressed, 16 bytes */
static const u_char  po_grpc_reply[] = "\0\0\0\0\x10weir-probe reply";


typedef struct po_h2_stream_s  po_h2_stream_t;

struct po_h2_stream_s {
    po_h2_stream_t     *next;
    po_h2_stream_t     *prev;
    int32_t             id;
    unsigned            route;
    int                 status;
    int64_t             rest;          /* generated body bytes to go */
    int64_t             length;        /* the request's content-length */
    uint64_t            start_at;      /* /delay */
    uint64_t            body_read;
    size_t              unconsumed;    /* read, the window not reopened */
    const u_char       *text;          /* a fixed body */
    size_t              text_len;
    u_char             *buf;           /* /echo: body bytes not sent */
    size_t              bpos;
    size_t              blast;
    size_t              bsize;
    char                path[256];
    char                small[128];
    unsigned            have_head:1;
    unsigned            in_done:1;     /* the client's END_STREAM */
    unsigned            started:1;     /* the response is submitted */
    unsigned            deferred:1;    /* the body waits for echo bytes */
};


typedef struct {
    nghttp2_session    *session;
    po_h2_stream_t     *streams;
    const uint8_t      *rest;          /* mem_send()'s, not yet copied */
    size_t              rest_len;
} po_h2_t;


static nghttp2_session_callbacks  *po_h2_callbacks;


static int po_h2_respond(po_conn_t *c, po_h2_stream_t *st);
static int po_h2_write(po_conn_t *c, int *progress);


static void
po_h2_route(po_h2_stream_t *st)
{
    char      *e, *uri;
    int64_t    n;
    uint64_t   delay;

    uri = st->path;

    if (strncmp(uri, "/delay/", 7) == 0) {
        delay = strtoull(uri + 7, &e, 10);
        if (delay > 3600000) {
            delay = 3600000;
        }

        st->start_at = probe_now() + delay * PROBE_NS_PER_MS;
        uri = *e == '/' && e[1] != '\0' ? e : "/tiny";
    }

    e = strchr(uri, '?');
    if (e != NULL) {
        *e = '\0';
    }

    st->status = 200;

    if (strcmp(uri, "/tiny") == 0) {
        st->route = PO_TINY;
        st->text = (const u_char *) po_tiny;
        st->text_len = 64;

    } else if (strncmp(uri, "/size/", 6) == 0
               || strncmp(uri, "/chunked/", 9) == 0)
    {
        st->route = uri[1] == 's' ? PO_SIZE : PO_CHUNKED;
        uri += uri[1] == 's' ? 6 : 9;
        errno = 0;
        n = strtoll(uri, &e, 10);

        if (errno || e == uri || *e != '\0' || n < 0) {
            st->route = PO_NOT_FOUND;

        } else {
            st->rest = n;
        }

    } else if (strcmp(uri, "/echo") == 0) {
        st->route = PO_ECHO;

    } else if (strcmp(uri, "/early") == 0) {
        st->route = PO_EARLY_RESP;
        st->text = (const u_char *) "early\n";
        st->text_len = 6;

    } else if (strcmp(uri, "/stats") == 0) {
        st->route = PO_STATS;

    } else if (strncmp(uri, "/grpc", 5) == 0) {
        st->route = PO_H2_GRPC;
        st->text = po_grpc_reply;
        st->text_len = sizeof(po_grpc_reply) - 1;

    } else if (strcmp(uri, "/ws") == 0) {
        st->route = PO_H2_TEXT;
        st->status = 400;
        st->text = (const u_char *) "WebSocket is HTTP/1 only\n";
        st->text_len = 25;

    } else {
        st->route = PO_NOT_FOUND;
    }

    if (st->route == PO_NOT_FOUND) {
        st->status = 404;
        st->text = (const u_char *) "not found\n";
        st->text_len = 10;
    }
}


static int
po_h2_grpc_trailers(nghttp2_session *session, po_h2_stream_t *st)
{
    nghttp2_nv  nv[2];

    nv[0].name = (uint8_t *) "grpc-status";
    nv[0].namelen = 11;
    nv[0].value = (uint8_t *) "0";
    nv[0].valuelen = 1;
    nv[0].flags = NGHTTP2_NV_FLAG_NONE;
    nv[1].name = (uint8_t *) "grpc-message";
    nv[1].namelen = 12;
    nv[1].value = (uint8_t *) "OK";
    nv[1].valuelen = 2;
    nv[1].flags = NGHTTP2_NV_FLAG_NONE;

    return nghttp2_submit_trailer(session, st->id, nv, 2) == 0
           ? PO_OK : PO_ERROR;
}


static ssize_t
po_h2_body_read(nghttp2_session *session, int32_t stream_id, uint8_t *buf,
    size_t length, uint32_t *data_flags, nghttp2_data_source *source,
    void *user_data)
{
    size_t           n;
    po_h2_stream_t  *st;

    (void) session;
    (void) stream_id;
    (void) user_data;

    st = source->ptr;

    if (st->route == PO_ECHO) {
        n = st->blast - st->bpos;

        if (n == 0) {
            if (st->in_done) {
                *data_flags |= NGHTTP2_DATA_FLAG_EOF;
                return 0;
            }

            st->deferred = 1;
            return NGHTTP2_ERR_DEFERRED;
        }

        n = n < length ? n : length;
        memcpy(buf, st->buf + st->bpos, n);
        st->bpos += n;
        /* the echoed bytes leave the buffer: the window may reopen */
        st->unconsumed += n;

        if (st->bpos == st->blast) {
            st->bpos = 0;
            st->blast = 0;

            if (st->in_done) {
                *data_flags |= NGHTTP2_DATA_FLAG_EOF;
            }
        }

        return (ssize_t) n;
    }

    if (st->text != NULL) {
        n = st->text_len < length ? st->text_len : length;
        memcpy(buf, st->text, n);
        st->text += n;
        st->text_len -= n;

        if (st->text_len == 0) {
            *data_flags |= NGHTTP2_DATA_FLAG_EOF;

            if (st->route == PO_H2_GRPC && po_h2_grpc_trailers(session, st)
                                           == PO_OK)
            {
                /* the trailers' HEADERS ends the stream */
                *data_flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
            }
        }

        return (ssize_t) n;
    }

    n = (size_t) st->rest < length ? (size_t) st->rest : length;
    if (n > PO_CHUNK) {
        n = PO_CHUNK;
    }

    memcpy(buf, po_pattern, n);
    st->rest -= (int64_t) n;

    if (st->rest == 0) {
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    }

    return (ssize_t) n;
}


static int
po_h2_on_begin(nghttp2_session *session, const nghttp2_frame *frame,
    void *user_data)
{
    po_h2_t         *h2;
    po_conn_t       *c;
    po_h2_stream_t  *st;

    c = user_data;
    h2 = c->h2;

    if (frame->hd.type != NGHTTP2_HEADERS
        || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
    {
        return 0;
    }

    st = calloc(1, sizeof(po_h2_stream_t));
    if (st == NULL) {
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;   /* RST_STREAM */
    }

    st->id = frame->hd.stream_id;
    st->length = -1;
    strcpy(st->path, "/");
    st->next = h2->streams;

    if (h2->streams != NULL) {
        h2->streams->prev = st;
    }

    h2->streams = st;

    return nghttp2_session_set_stream_user_data(session, st->id, st);
}


static int
po_h2_on_header(nghttp2_session *session, const nghttp2_frame *frame,
    const uint8_t *name, size_t namelen, const uint8_t *value,
    size_t valuelen, uint8_t flags, void *user_data)
{
    char            *e, num[24];
    po_h2_stream_t  *st;

    (void) flags;
    (void) user_data;

    st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (st == NULL || st->have_head) {
        return 0;
    }

    if (namelen == 5 && memcmp(name, ":path", 5) == 0) {
        if (valuelen >= sizeof(st->path)) {
            valuelen = sizeof(st->path) - 1;
        }

        memcpy(st->path, value, valuelen);
        st->path[valuelen] = '\0';

    } else if (namelen == 14 && memcmp(name, "content-length", 14) == 0
               && valuelen < sizeof(num))
    {
        /* nghttp2 checked it is a number, and checks the DATA against it */
        memcpy(num, value, valuelen);
        num[valuelen] = '\0';
        st->length = strtoll(num, &e, 10);
    }

    return 0;
}


static int
po_h2_on_frame(nghttp2_session *session, const nghttp2_frame *frame,
    void *user_data)
{
    po_conn_t       *c;
    po_h2_stream_t  *st;

    c = user_data;

    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
    {
        return 0;
    }

    st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (st == NULL) {
        return 0;
    }

    if (frame->hd.type == NGHTTP2_HEADERS && !st->have_head) {
        st->have_head = 1;
        po_requests++;
        po_h2_route(st);

        if (st->route == PO_ECHO && st->length >= 0) {
            st->rest = st->length;
        }

        if (st->start_at != 0) {
            c->timer = 0;
            po_timer_add(c, st->start_at);

            if (!c->timer) {
                st->start_at = 0;       /* no timer: no delay */
            }
        }
    }

    if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) {
        st->in_done = 1;

        if (st->deferred) {
            st->deferred = 0;
            (void) nghttp2_session_resume_data(session, st->id);
        }
    }

    return 0;
}


static int
po_h2_on_data(nghttp2_session *session, uint8_t flags, int32_t stream_id,
    const uint8_t *data, size_t len, void *user_data)
{
    size_t           size;
    u_char          *p;
    po_h2_stream_t  *st;

    (void) flags;
    (void) user_data;

    st = nghttp2_session_get_stream_user_data(session, stream_id);

    if (st == NULL || st->route != PO_ECHO) {
        /* drained: the window reopens at once */
        (void) nghttp2_session_consume(session, stream_id, len);

        if (st != NULL) {
            st->body_read += len;
        }

        return 0;
    }

    st->body_read += len;

    if (st->blast + len > st->bsize) {
        size = st->bsize ? st->bsize : 16384;

        while (size < st->blast + len) {
            size *= 2;
        }

        p = realloc(st->buf, size);
        if (p == NULL) {
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        }

        st->buf = p;
        st->bsize = size;
    }

    memcpy(st->buf + st->blast, data, len);
    st->blast += len;

    if (st->deferred) {
        st->deferred = 0;
        (void) nghttp2_session_resume_data(session, stream_id);
    }

    return 0;
}


static int
po_h2_on_close(nghttp2_session *session, int32_t stream_id,
    uint32_t error_code, void *user_data)
{
    po_h2_t         *h2;
    po_conn_t       *c;
    po_h2_stream_t  *st;

    (void) error_code;

    c = user_data;
    h2 = c->h2;

    st = nghttp2_session_get_stream_user_data(session, stream_id);
    if (st == NULL) {
        return 0;
    }

    if (st->prev != NULL) {
        st->prev->next = st->next;

    } else {
        h2->streams = st->next;
    }

    if (st->next != NULL) {
        st->next->prev = st->prev;
    }

    free(st->buf);
    free(st);

    return 0;
}


int
po_h2_init(po_conn_t *c)
{
    po_h2_t                 *h2;
    nghttp2_option          *opt;
    nghttp2_settings_entry   iv[2];

    if (po_h2_callbacks == NULL) {
        if (nghttp2_session_callbacks_new(&po_h2_callbacks) != 0) {
            return PO_ERROR;
        }

        nghttp2_session_callbacks_set_on_begin_headers_callback(
            po_h2_callbacks, po_h2_on_begin);
        nghttp2_session_callbacks_set_on_header_callback(po_h2_callbacks,
                                                         po_h2_on_header);
        nghttp2_session_callbacks_set_on_frame_recv_callback(
            po_h2_callbacks, po_h2_on_frame);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(
            po_h2_callbacks, po_h2_on_data);
        nghttp2_session_callbacks_set_on_stream_close_callback(
            po_h2_callbacks, po_h2_on_close);
    }

    h2 = calloc(1, sizeof(po_h2_t));
    if (h2 == NULL) {
        return PO_ERROR;
    }

    if (nghttp2_option_new(&opt) != 0) {
        free(h2);
        return PO_ERROR;
    }

    nghttp2_option_set_no_auto_window_update(opt, 1);

    if (nghttp2_session_server_new2(&h2->session, po_h2_callbacks, c, opt)
        != 0)
    {
        nghttp2_option_del(opt);
        free(h2);
        return PO_ERROR;
    }

    nghttp2_option_del(opt);
    c->h2 = h2;

    iv[0].settings_id = NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS;
    iv[0].value = PO_H2_STREAMS;
    iv[1].settings_id = NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE;
    iv[1].value = PO_H2_WINDOW;

    if (nghttp2_submit_settings(h2->session, NGHTTP2_FLAG_NONE, iv, 2) != 0
        || nghttp2_session_set_local_window_size(h2->session,
                                                 NGHTTP2_FLAG_NONE, 0,
                                                 PO_H2_CONN_WINDOW)
           != 0)
    {
        return PO_ERROR;    /* po_close() frees it */
    }

    /* the buffers start empty for frames; c->in keeps the preface */
    c->opos = 0;
    c->olast = 0;

    return PO_OK;
}


void
po_h2_free(po_conn_t *c)
{
    po_h2_t         *h2;
    po_h2_stream_t  *st, *next;

    h2 = c->h2;

    for (st = h2->streams; st != NULL; st = next) {
        next = st->next;
        free(st->buf);
        free(st);
    }

    nghttp2_session_del(h2->session);
    free(h2);
    c->h2 = NULL;
}


/* runs the connection until every step would block or wait for a timer */

void
po_h2_handle(po_conn_t *c)
{
    int              progress;
    size_t           n;
    ssize_t          rv;
    po_h2_t         *h2;
    uint64_t         now;
    po_h2_stream_t  *st;

    h2 = c->h2;

    for ( ;; ) {
        progress = 0;
        now = probe_now();

        for (st = h2->streams; st != NULL; st = st->next) {
            if (st->have_head && !st->started && st->start_at <= now
                && (st->route != PO_EARLY_RESP || st->in_done
                    || st->body_read >= PO_EARLY)
                && (st->route != PO_H2_GRPC || st->in_done))
            {
                if (po_h2_respond(c, st) != PO_OK) {
                    po_close(c);
                    return;
                }

                progress = 1;
            }

            if (st->unconsumed) {
                (void) nghttp2_session_consume(h2->session, st->id,
                                               st->unconsumed);
                st->unconsumed = 0;
            }
        }

        if (po_h2_write(c, &progress) != PO_OK) {
            po_close(c);
            return;
        }

        /* what is in c->in first: the preface that made it h2c */
        if (c->ilast == c->ipos && c->readable) {
            c->ipos = 0;
            c->ilast = 0;

            if (po_recv(c) == PO_ERROR) {
                po_close(c);
                return;
            }
        }

        n = c->ilast - c->ipos;

        if (n) {
            rv = nghttp2_session_mem_recv(h2->session, c->in + c->ipos, n);
            if (rv < 0) {
                po_close(c);
                return;
            }

            c->ipos = 0;
            c->ilast = 0;
            progress = 1;
        }

        if (!nghttp2_session_want_read(h2->session)
            && !nghttp2_session_want_write(h2->session)
            && c->olast == c->opos)
        {
            po_close(c);
            return;
        }

        if (!progress) {
            return;
        }
    }
}


/* submits the response of st: its head, and its body as it comes */

static int
po_h2_respond(po_conn_t *c, po_h2_stream_t *st)
{
    int                     n;
    char                    status[4], clen[24];
    size_t                  nnv;
    po_h2_t                *h2;
    nghttp2_nv              nv[4];
    nghttp2_data_provider   dp;

    h2 = c->h2;
    st->started = 1;

    if (st->route == PO_STATS) {
        n = snprintf(st->small, sizeof(st->small),
                     "connections %llu\nrequests %llu\nopen %llu\n",
                     (unsigned long long) po_accepted,
                     (unsigned long long) po_requests,
                     (unsigned long long) po_open);
        st->text = (const u_char *) st->small;
        st->text_len = (size_t) n;
    }

    snprintf(status, sizeof(status), "%03d", st->status);

#define po_nv(i, n, v, vlen)                                                  \
    nv[i].name = (uint8_t *) (n);                                             \
    nv[i].namelen = sizeof(n) - 1;                                            \
    nv[i].value = (uint8_t *) (v);                                            \
    nv[i].valuelen = (vlen);                                                  \
    nv[i].flags = NGHTTP2_NV_FLAG_NONE

    po_nv(0, ":status", status, 3);
    po_nv(1, "server", "weir-probe", 10);
    po_nv(2, "content-type", st->text != NULL ? "text/plain"
                             : "application/octet-stream",
          st->text != NULL ? 10 : 24);
    nnv = 3;

    if (st->route == PO_H2_GRPC) {
        /* as a gRPC server: no content-length */
        po_nv(2, "content-type", "application/grpc", 16);
        n = 0;

    /* a length when known: generated, fixed, or a sized echo */
    } else if (st->text != NULL) {
        n = snprintf(clen, sizeof(clen), "%zu", st->text_len);

    } else if (st->route == PO_SIZE
               || (st->route == PO_ECHO && st->length >= 0))
    {
        n = snprintf(clen, sizeof(clen), "%lld", (long long) st->rest);

    } else {
        n = 0;
    }

    if (n > 0) {
        po_nv(3, "content-length", clen, (size_t) n);
        nnv = 4;
    }

#undef po_nv

    dp.source.ptr = st;
    dp.read_callback = po_h2_body_read;

    /* the header values are copied: clen and status may go */
    return nghttp2_submit_response(h2->session, st->id, nv, nnv, &dp) == 0
           ? PO_OK : PO_ERROR;
}


/*
 * Frames from nghttp2_session_mem_send() are gathered in c->out and sent
 * together; PO_ERROR when the connection failed.
 */

static int
po_h2_write(po_conn_t *c, int *progress)
{
    size_t          take;
    ssize_t         n;
    po_h2_t        *h2;
    const uint8_t  *data;

    h2 = c->h2;

    for ( ;; ) {
        if (c->opos == c->olast) {
            c->opos = 0;
            c->olast = 0;

            while (c->olast < PO_OUT_SIZE) {
                if (h2->rest_len == 0) {
                    n = nghttp2_session_mem_send(h2->session, &data);

                    if (n < 0) {
                        return PO_ERROR;
                    }

                    if (n == 0) {
                        break;
                    }

                    h2->rest = data;
                    h2->rest_len = (size_t) n;
                }

                take = PO_OUT_SIZE - c->olast;
                if (take > h2->rest_len) {
                    take = h2->rest_len;
                }

                memcpy(c->out + c->olast, h2->rest, take);
                c->olast += take;
                h2->rest += take;
                h2->rest_len -= take;
            }

            if (c->olast == 0) {
                return PO_OK;
            }
        }

        n = po_io_send(c, c->out + c->opos, c->olast - c->opos);

        if (n == -1) {
            return errno == EAGAIN || errno == EINTR ? PO_OK : PO_ERROR;
        }

        c->opos += (size_t) n;
        *progress = 1;
    }
}


#endif /* WEIR_HAVE_NGHTTP2 */
