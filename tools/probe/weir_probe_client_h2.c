/*
 * weir-probe client, HTTP/2 (--h2): -c connections, each with up to -m
 * streams in flight, on one epoll loop of its own (the HTTP/1 loop keeps
 * one request a connection and stays as lean as it is).
 *
 * nghttp2 only frames: bytes read go in with nghttp2_session_mem_recv(),
 * bytes to write come out of nghttp2_session_mem_send() into the
 * connection's buffer and leave through the same byte movers as HTTP/1
 * (plain TCP, or TLS with ALPN h2); no nghttp2 callback does I/O.
 *
 * A stream slot is FREE, PENDING (due, its latency running, waiting for
 * its connection to be ready) or ACTIVE (submitted). The latency of a
 * stream runs from the moment it was due to its END_STREAM, so on a new
 * connection it includes the connect and the handshakes.
 */

#include "weir_config.h"
#include "weir_core.h"
#include "weir_probe.h"
#include "weir_probe_client.h"

#if (WEIR_HAVE_NGHTTP2)

#include <ctype.h>
#include <sys/resource.h>
#include <nghttp2/nghttp2.h>

#if (WEIR_HAVE_OPENSSL)
#include <openssl/ssl.h>
#endif


#define PROBE_H2_NV         (8 + PROBE_MAX_HEADERS)
#define PROBE_H2_OUT        32768
#define PROBE_H2_IN         65536
/* big windows: a download is bound by the server, not by WINDOW_UPDATEs */
#define PROBE_H2_STREAM_WIN (16 * 1024 * 1024)
#define PROBE_H2_CONN_WIN   (1024 * 1024 * 1024)

#define PROBE_S_FREE        0
#define PROBE_S_PENDING     1
#define PROBE_S_ACTIVE      2


typedef struct probe_h2_conn_s  probe_h2_conn_t;


/* a URL's request, built once */
typedef struct {
    nghttp2_nv          nv[PROBE_H2_NV];
    size_t              nnv;
    char                clen[24];
} probe_h2_req_t;


typedef struct {
    probe_h2_conn_t    *hc;
    unsigned            state;
    int32_t             id;
    int                 status;
    uint64_t            start;
    uint64_t            deadline;
    uint64_t            end;
    size_t              sent;           /* of the request body */
    unsigned            done:1;         /* END_STREAM received */
} probe_h2_stream_t;


struct probe_h2_conn_s {
    probe_conn_t        c;              /* first: epoll's data.ptr is &c */
    nghttp2_session    *session;
    probe_h2_stream_t  *streams;
    int                 npending;
    int                 nactive;
    u_char             *out;
    size_t              opos;
    size_t              olast;
    const uint8_t      *rest;           /* mem_send()'s, not yet copied */
    size_t              rest_len;
    uint64_t            retry_at;
    unsigned            draining:1;     /* GOAWAY: no new streams */
    unsigned            close_after:1;  /* --new-conn: the stream ended */
};


static void probe_h2_open(probe_h2_conn_t *hc, uint64_t now);
static void probe_h2_due(probe_h2_conn_t *hc, uint64_t start);
static void probe_h2_handle(probe_h2_conn_t *hc);
static int probe_h2_session(probe_h2_conn_t *hc);
static void probe_h2_io(probe_h2_conn_t *hc);
static int probe_h2_submit(probe_h2_conn_t *hc);
static int probe_h2_write(probe_h2_conn_t *hc);
static void probe_h2_fail(probe_h2_conn_t *hc, uint64_t *counter);
static void probe_h2_close(probe_h2_conn_t *hc);
static void probe_h2_again(probe_h2_conn_t *hc, uint64_t now);
static void probe_h2_expire(probe_h2_conn_t *hc, uint64_t now);
static void probe_h2_stream_end(probe_h2_conn_t *hc, probe_h2_stream_t *st,
    uint32_t error_code);


static nghttp2_session_callbacks  *probe_h2_callbacks;
static u_char                     *probe_h2_body;
static u_char                      probe_h2_in[PROBE_H2_IN];
static uint64_t                    probe_h2_interval;
#if (WEIR_HAVE_OPENSSL)
static unsigned                    probe_h2_alpn_said;
#endif
/* streams due or in flight, all connections: -n starts no more */
static uint64_t                    probe_h2_busy;


static void
probe_h2_nv(probe_h2_req_t *r, const char *name, const char *value)
{
    nghttp2_nv  *nv;

    nv = &r->nv[r->nnv++];
    nv->name = (uint8_t *) name;
    nv->namelen = strlen(name);
    nv->value = (uint8_t *) value;
    nv->valuelen = strlen(value);
    nv->flags = NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE;
}


/*
 * The request of u: pseudo-headers, user-agent, -H (names lowercased;
 * Host becomes :authority, hop-by-hop ones are left out as RFC 9113
 * wants), and content-length for a body.
 */

int
probe_h2_build(probe_url_t *u)
{
    int              i;
    char            *h, *colon, *v, *p;
    probe_h2_req_t  *r;

    r = calloc(1, sizeof(probe_h2_req_t));
    if (r == NULL) {
        return PROBE_ERROR;
    }

    probe_h2_nv(r, ":method", probe_conf.method);
    probe_h2_nv(r, ":scheme", u->tls ? "https" : "http");
    probe_h2_nv(r, ":authority", u->host);
    probe_h2_nv(r, ":path", u->path);
    probe_h2_nv(r, "user-agent", "weir-probe");

    for (i = 0; i < probe_conf.nheaders; i++) {
        h = strdup(probe_conf.headers[i]);
        if (h == NULL) {
            return PROBE_ERROR;
        }

        colon = strchr(h, ':');
        *colon = '\0';

        for (p = h; *p; p++) {
            *p = (char) tolower((u_char) *p);
        }

        for (v = colon + 1; *v == ' ' || *v == '\t'; v++) {
            /* void */
        }

        if (strcmp(h, "host") == 0) {
            r->nv[2].value = (uint8_t *) v;
            r->nv[2].valuelen = strlen(v);
            continue;
        }

        if (strcmp(h, "connection") == 0 || strcmp(h, "keep-alive") == 0
            || strcmp(h, "transfer-encoding") == 0
            || strcmp(h, "upgrade") == 0
            || strcmp(h, "proxy-connection") == 0
            || strcmp(h, "content-length") == 0)
        {
            continue;
        }

        probe_h2_nv(r, h, v);
    }

    if (probe_conf.post) {
        (void) snprintf(r->clen, sizeof(r->clen), "%zu", probe_conf.body);
        probe_h2_nv(r, "content-type", "application/octet-stream");
        probe_h2_nv(r, "content-length", r->clen);
    }

    u->h2 = r;

    return PROBE_OK;
}


static ssize_t
probe_h2_body_read(nghttp2_session *session, int32_t stream_id,
    uint8_t *buf, size_t length, uint32_t *data_flags,
    nghttp2_data_source *source, void *user_data)
{
    size_t              n;
    probe_h2_stream_t  *st;

    (void) session;
    (void) stream_id;
    (void) user_data;

    st = source->ptr;
    n = probe_conf.body - st->sent;

    if (n > length) {
        n = length;
    }

    memcpy(buf, probe_h2_body + st->sent, n);
    st->sent += n;

    if (st->sent == probe_conf.body) {
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    }

    return (ssize_t) n;
}


static int
probe_h2_on_header(nghttp2_session *session, const nghttp2_frame *frame,
    const uint8_t *name, size_t namelen, const uint8_t *value,
    size_t valuelen, uint8_t flags, void *user_data)
{
    probe_h2_stream_t  *st;

    (void) flags;
    (void) user_data;

    if (frame->hd.type != NGHTTP2_HEADERS || namelen != 7
        || memcmp(name, ":status", 7) != 0)
    {
        return 0;
    }

    st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);

    if (st != NULL && valuelen == 3 && isdigit(value[0])
        && isdigit(value[1]) && isdigit(value[2]))
    {
        /* an interim 1xx is overwritten by the final status */
        st->status = (value[0] - '0') * 100 + (value[1] - '0') * 10
                     + (value[2] - '0');
    }

    return 0;
}


static int
probe_h2_on_frame(nghttp2_session *session, const nghttp2_frame *frame,
    void *user_data)
{
    probe_h2_conn_t    *hc;
    probe_h2_stream_t  *st;

    hc = user_data;

    if (frame->hd.type == NGHTTP2_GOAWAY) {
        /* streams above last-stream-id are closed as REFUSED_STREAM */
        hc->draining = 1;
        return 0;
    }

    if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA)
        && (frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
    {
        st = nghttp2_session_get_stream_user_data(session,
                                                  frame->hd.stream_id);
        if (st != NULL && st->status >= 200) {
            st->done = 1;
            st->end = probe_now();
        }
    }

    return 0;
}


static int
probe_h2_on_close(nghttp2_session *session, int32_t stream_id,
    uint32_t error_code, void *user_data)
{
    probe_h2_stream_t  *st;

    st = nghttp2_session_get_stream_user_data(session, stream_id);

    if (st != NULL) {
        probe_h2_stream_end(user_data, st, error_code);
    }

    return 0;
}


int
probe_h2_run(void)
{
    int                   i, n, measuring;
    double                elapsed, cpu_user, cpu_sys;
    uint64_t              now, t0, end, next_slot, last_check, wait;
    probe_url_t          *u;
    struct rusage         ru0, ru1;
    probe_h2_conn_t      *conns, *hc;
    struct epoll_event    events[256];
    probe_client_conf_t  *cf;

    cf = &probe_conf;

    for (i = 1; i < cf->nurls; i++) {
        u = &cf->urls[i];

        /* through --proxy: one tunnel, so one host:port */
        if (u->tls != cf->urls[0].tls || u->addrlen != cf->urls[0].addrlen
            || memcmp(&u->addr, &cf->urls[0].addr, u->addrlen) != 0
            || (cf->proxy != NULL
                && strcmp(u->authority, cf->urls[0].authority) != 0))
        {
            fprintf(stderr, "weir-probe: with --h2 all URLs go to one "
                    "server (%s, %s)\n", cf->urls[0].text, u->text);
            return 2;
        }
    }

    if (nghttp2_session_callbacks_new(&probe_h2_callbacks) != 0) {
        fprintf(stderr, "weir-probe: out of memory\n");
        return 2;
    }

    nghttp2_session_callbacks_set_on_header_callback(probe_h2_callbacks,
                                                     probe_h2_on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(probe_h2_callbacks,
                                                         probe_h2_on_frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(
        probe_h2_callbacks, probe_h2_on_close);

    probe_h2_body = malloc(cf->body + 1);
    conns = calloc((size_t) cf->connections, sizeof(probe_h2_conn_t));

    if (probe_h2_body == NULL || conns == NULL) {
        fprintf(stderr, "weir-probe: out of memory\n");
        return 2;
    }

    for (i = 0; (size_t) i < cf->body; i++) {
        probe_h2_body[i] = (u_char) ('a' + i % 26);
    }

    probe_hist_init(&probe_stats.hist);
    probe_timeout_ns = (uint64_t) (cf->timeout * PROBE_NS_PER_SEC);

    t0 = probe_now();
    probe_measure_from = t0 + (uint64_t) (cf->warmup * PROBE_NS_PER_SEC);
    end = probe_measure_from + (uint64_t) (cf->duration * PROBE_NS_PER_SEC);
    probe_h2_interval = cf->rate > 0
                        ? (uint64_t) (PROBE_NS_PER_SEC / cf->rate) : 0;
    if (cf->rate > 0 && probe_h2_interval == 0) {
        probe_h2_interval = 1;
    }

    next_slot = t0;
    last_check = t0;
    getrusage(RUSAGE_SELF, &ru0);
    measuring = cf->warmup == 0;

    for (i = 0; i < cf->connections; i++) {
        hc = &conns[i];
        hc->c.fd = -1;
        hc->c.url = &cf->urls[0];
        hc->streams = calloc((size_t) cf->streams,
                             sizeof(probe_h2_stream_t));
        hc->out = malloc(PROBE_H2_OUT);

        /* c.buf holds nothing but a proxy's answer to CONNECT */
        if (cf->proxy != NULL) {
            hc->c.buf = malloc(PROBE_PROXY_HEAD);
            if (hc->c.buf == NULL) {
                fprintf(stderr, "weir-probe: out of memory\n");
                return 2;
            }
        }

        if (hc->streams == NULL || hc->out == NULL) {
            fprintf(stderr, "weir-probe: out of memory\n");
            return 2;
        }

        for (n = 0; n < cf->streams; n++) {
            hc->streams[n].hc = hc;
        }

        if (probe_h2_interval == 0) {
            probe_h2_open(hc, t0);
        }
    }

    for ( ;; ) {
        now = probe_now();

        if (probe_stop || now >= end
            || (cf->total && probe_stats.requests >= cf->total))
        {
            break;
        }

        if (!measuring && now >= probe_measure_from) {
            getrusage(RUSAGE_SELF, &ru0);
            measuring = 1;
        }

        /* paced: a due slot goes to the first connection with room */
        for (i = 0; probe_h2_interval && next_slot <= now
                    && i < cf->connections; /* void */)
        {
            hc = &conns[i];

            if (hc->npending + hc->nactive < cf->streams
                && !hc->draining)
            {
                probe_h2_due(hc, next_slot);
                next_slot += probe_h2_interval;
                continue;
            }

            i++;
        }

        wait = end - now;
        if (wait > 10 * PROBE_NS_PER_MS) {
            wait = 10 * PROBE_NS_PER_MS;
        }

        if (probe_h2_interval && next_slot > now
            && next_slot - now < wait)
        {
            wait = next_slot - now;
        }

        n = epoll_wait(probe_ep, events, 256,
                       (int) ((wait + PROBE_NS_PER_MS - 1) / PROBE_NS_PER_MS));

        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }

            perror("weir-probe: epoll_wait()");
            return 2;
        }

        for (i = 0; i < n; i++) {
            probe_h2_handle(events[i].data.ptr);
        }

        now = probe_now();

        if (now - last_check >= 10 * PROBE_NS_PER_MS) {
            last_check = now;

            for (i = 0; i < cf->connections; i++) {
                probe_h2_expire(&conns[i], now);
            }
        }
    }

    now = probe_now();
    getrusage(RUSAGE_SELF, &ru1);

    elapsed = now > probe_measure_from
              ? (double) (now - probe_measure_from) / PROBE_NS_PER_SEC : 0;

    cpu_user = (double) (ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec)
               + (double) (ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) / 1e6;
    cpu_sys = (double) (ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec)
              + (double) (ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e6;

    probe_report(cf, &probe_stats, elapsed, cpu_user, cpu_sys);

    for (i = 0; i < cf->connections; i++) {
        hc = &conns[i];

        /* the streams in flight are dropped, neither counted nor errors */
        if (hc->c.fd != -1) {
            probe_h2_close(hc);
        }

        free(hc->streams);
        free(hc->out);
        free(hc->c.buf);
    }

    free(conns);
    free(probe_h2_body);
    nghttp2_session_callbacks_del(probe_h2_callbacks);

    return 0;
}


/* connects; unpaced, every stream slot is due at once */

static void
probe_h2_open(probe_h2_conn_t *hc, uint64_t now)
{
    int  i;

    hc->c.url = &probe_conf.urls[0];
    hc->c.deadline = probe_now() + probe_timeout_ns;
    hc->draining = 0;
    hc->close_after = 0;

    if (probe_h2_interval == 0
        && !(probe_conf.total && probe_stats.requests >= probe_conf.total))
    {
        for (i = 0; i < probe_conf.streams; i++) {
            if (hc->streams[i].state == PROBE_S_FREE) {
                probe_h2_due(hc, now);
            }
        }
    }

    if (probe_h1_connect(&hc->c) != PROBE_OK) {
        probe_h2_fail(hc, &probe_stats.err_connect);
    }
}


/* a free slot of hc becomes due at start */

static void
probe_h2_due(probe_h2_conn_t *hc, uint64_t start)
{
    int                 i;
    probe_h2_stream_t  *st;

    for (i = 0; i < probe_conf.streams; i++) {
        st = &hc->streams[i];

        if (st->state == PROBE_S_FREE) {
            if (probe_conf.total
                && probe_stats.requests + probe_h2_busy >= probe_conf.total)
            {
                break;
            }

            probe_h2_busy++;
            st->state = PROBE_S_PENDING;
            st->start = start;
            st->deadline = probe_now() + probe_timeout_ns;
            hc->npending++;
            break;
        }
    }

    if (hc->c.fd == -1) {
        if (probe_h2_interval && probe_now() >= hc->retry_at) {
            probe_h2_open(hc, start);
        }

        return;
    }

    if (hc->c.state == PROBE_ACTIVE && probe_h2_interval) {
        probe_h2_io(hc);
    }
}


static void
probe_h2_handle(probe_h2_conn_t *hc)
{
    int            rc, err;
    socklen_t      len;
    probe_conn_t  *c;
#if (WEIR_HAVE_OPENSSL)
    unsigned int          alen;
    const unsigned char  *alpn;
#endif

    c = &hc->c;

    switch (c->state) {

    case PROBE_CONNECTING:
        err = 0;
        len = sizeof(err);

        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1) {
            err = errno;
        }

        if (err != 0) {
            probe_h2_fail(hc, &probe_stats.err_connect);
            return;
        }

        c->state = PROBE_HANDSHAKE;

        /* fall through */

    case PROBE_HANDSHAKE:
        rc = c->io->handshake(c);

        if (rc == PROBE_AGAIN) {
            return;
        }

        if (rc == PROBE_ERROR) {
            probe_h2_fail(hc, &probe_stats.err_connect);
            return;
        }

#if (WEIR_HAVE_OPENSSL)
        if (c->url->tls) {
            SSL_get0_alpn_selected(c->ssl, &alpn, &alen);

            if (alen != 2 || memcmp(alpn, "h2", 2) != 0) {
                if (!probe_h2_alpn_said) {
                    probe_h2_alpn_said = 1;
                    fprintf(stderr, "weir-probe: %s: the server did not "
                            "choose h2 by ALPN (%s%.*s): counted as "
                            "connect errors\n", c->url->text,
                            alen ? "it chose " : "no ALPN",
                            (int) alen, alen ? (const char *) alpn : "");
                }

                probe_h2_fail(hc, &probe_stats.err_connect);
                return;
            }
        }
#endif

        if (probe_h2_session(hc) != PROBE_OK) {
            probe_h2_fail(hc, &probe_stats.err_connect);
            return;
        }

        c->state = PROBE_ACTIVE;

        /* fall through */

    case PROBE_ACTIVE:
        probe_h2_io(hc);
        return;

    default:
        return;
    }
}


static int
probe_h2_session(probe_h2_conn_t *hc)
{
    nghttp2_settings_entry  iv[2];

    if (nghttp2_session_client_new(&hc->session, probe_h2_callbacks, hc)
        != 0)
    {
        return PROBE_ERROR;
    }

    iv[0].settings_id = NGHTTP2_SETTINGS_ENABLE_PUSH;
    iv[0].value = 0;
    iv[1].settings_id = NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE;
    iv[1].value = PROBE_H2_STREAM_WIN;

    if (nghttp2_submit_settings(hc->session, NGHTTP2_FLAG_NONE, iv, 2) != 0
        || nghttp2_session_set_local_window_size(hc->session,
                                                 NGHTTP2_FLAG_NONE, 0,
                                                 PROBE_H2_CONN_WIN)
           != 0)
    {
        return PROBE_ERROR;
    }

    hc->opos = 0;
    hc->olast = 0;
    hc->rest_len = 0;

    return PROBE_OK;
}


/*
 * Submits what is due, writes, reads until a read would block (the
 * events are edge-triggered), and writes what the reads made to send.
 */

static void
probe_h2_io(probe_h2_conn_t *hc)
{
    ssize_t   n, rv;
    uint64_t  now;

    for ( ;; ) {
        if (!hc->draining && hc->npending
            && probe_h2_submit(hc) != PROBE_OK)
        {
            probe_h2_fail(hc, &probe_stats.err_write);
            return;
        }

        if (probe_h2_write(hc) == PROBE_ERROR) {
            probe_h2_fail(hc, &probe_stats.err_write);
            return;
        }

        if ((hc->close_after || hc->draining) && hc->nactive == 0) {
            break;
        }

        n = hc->c.io->recv(&hc->c, probe_h2_in, sizeof(probe_h2_in));

        if (n == PROBE_AGAIN) {
            break;
        }

        if (n <= 0) {
            probe_h2_fail(hc, &probe_stats.err_read);
            return;
        }

        if (probe_now() >= probe_measure_from) {
            probe_stats.bytes_in += (uint64_t) n;
        }

        rv = nghttp2_session_mem_recv(hc->session, probe_h2_in, (size_t) n);

        if (rv < 0) {
            probe_h2_fail(hc, &probe_stats.err_read);
            return;
        }
    }

    if (((hc->close_after || hc->draining) && hc->nactive == 0)
        || (!nghttp2_session_want_read(hc->session)
            && !nghttp2_session_want_write(hc->session)))
    {
        /* done with: --new-conn, a GOAWAY, or the session ended */
        now = probe_now();
        probe_h2_close(hc);
        probe_h2_again(hc, now);
    }
}


static int
probe_h2_submit(probe_h2_conn_t *hc)
{
    int                    i;
    int32_t                id;
    probe_url_t           *u;
    probe_h2_req_t        *r;
    probe_h2_stream_t     *st;
    nghttp2_data_provider  dp, *pdp;

    for (i = 0; i < probe_conf.streams && hc->npending; i++) {
        st = &hc->streams[i];

        if (st->state != PROBE_S_PENDING) {
            continue;
        }

        u = &probe_conf.urls[probe_next_url++ % (uint64_t) probe_conf.nurls];
        r = u->h2;

        pdp = NULL;

        if (probe_conf.body) {
            dp.source.ptr = st;
            dp.read_callback = probe_h2_body_read;
            pdp = &dp;
        }

        st->sent = 0;
        st->done = 0;
        st->status = 0;

        id = nghttp2_submit_request(hc->session, NULL, r->nv, r->nnv, pdp,
                                    st);

        if (id == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE) {
            /* stream ids ran out: a new connection takes the rest */
            hc->draining = 1;
            return PROBE_OK;
        }

        if (id < 0) {
            return PROBE_ERROR;
        }

        st->id = id;
        st->state = PROBE_S_ACTIVE;
        hc->npending--;
        hc->nactive++;
    }

    return PROBE_OK;
}


/*
 * Frames from nghttp2_session_mem_send() are gathered into hc->out and
 * sent together: one send for many small frames.
 */

static int
probe_h2_write(probe_h2_conn_t *hc)
{
    size_t          take;
    ssize_t         n;
    const uint8_t  *data;

    for ( ;; ) {
        if (hc->opos == hc->olast) {
            hc->opos = 0;
            hc->olast = 0;

            while (hc->olast < PROBE_H2_OUT) {
                if (hc->rest_len == 0) {
                    n = nghttp2_session_mem_send(hc->session, &data);

                    if (n < 0) {
                        return PROBE_ERROR;
                    }

                    if (n == 0) {
                        break;
                    }

                    hc->rest = data;
                    hc->rest_len = (size_t) n;
                }

                take = PROBE_H2_OUT - hc->olast;
                if (take > hc->rest_len) {
                    take = hc->rest_len;
                }

                memcpy(hc->out + hc->olast, hc->rest, take);
                hc->olast += take;
                hc->rest += take;
                hc->rest_len -= take;
            }

            if (hc->olast == 0) {
                return PROBE_OK;
            }
        }

        n = hc->c.io->send(&hc->c, hc->out + hc->opos, hc->olast - hc->opos);

        if (n == PROBE_AGAIN) {
            return PROBE_AGAIN;
        }

        if (n < 0) {
            return PROBE_ERROR;
        }

        if (probe_now() >= probe_measure_from) {
            probe_stats.bytes_out += (uint64_t) n;
        }

        hc->opos += (size_t) n;
    }
}


/* a stream closed (inside nghttp2_session_mem_recv()): counted here */

static void
probe_h2_stream_end(probe_h2_conn_t *hc, probe_h2_stream_t *st,
    uint32_t error_code)
{
    uint64_t  now;

    now = probe_now();

    if (st->done) {
        if (now >= probe_measure_from
            && !(probe_conf.total && probe_stats.requests >= probe_conf.total))
        {
            probe_stats.requests++;
            probe_stats.status[st->status / 100 < 6 ? st->status / 100 : 0]++;
            probe_hist_record(&probe_stats.hist, st->end - st->start);
        }

    } else if (now >= probe_measure_from) {
        if (error_code == NGHTTP2_REFUSED_STREAM) {
            probe_stats.err_refused++;

        } else {
            probe_stats.err_read++;
        }
    }

    nghttp2_session_set_stream_user_data(hc->session, st->id, NULL);
    st->state = PROBE_S_FREE;
    hc->nactive--;
    probe_h2_busy--;

    if (probe_conf.new_conn) {
        hc->close_after = 1;
        return;
    }

    if (probe_h2_interval == 0 && !hc->draining
        && !(probe_conf.total && probe_stats.requests >= probe_conf.total))
    {
        probe_h2_due(hc, now);
    }
}


/*
 * The connection failed: a connect error counts once; a read or write
 * error once for every stream in flight (the connection's due streams
 * move to the next one).
 */

static void
probe_h2_fail(probe_h2_conn_t *hc, uint64_t *counter)
{
    int       i, measuring;
    uint64_t  now;

    now = probe_now();
    measuring = now >= probe_measure_from;

    if (counter == &probe_stats.err_connect) {
        if (measuring) {
            (*counter)++;
        }

        /* as on HTTP/1, the streams due on a failed connect are dropped */
        for (i = 0; i < probe_conf.streams; i++) {
            if (hc->streams[i].state == PROBE_S_PENDING) {
                hc->streams[i].state = PROBE_S_FREE;
                probe_h2_busy--;
            }
        }

        hc->npending = 0;

    } else {
        for (i = 0; i < probe_conf.streams; i++) {
            if (hc->streams[i].state == PROBE_S_ACTIVE) {
                if (measuring) {
                    (*counter)++;
                }

                hc->streams[i].state = PROBE_S_FREE;
                hc->nactive--;
                probe_h2_busy--;
            }
        }
    }

    probe_h2_close(hc);

    if (counter == &probe_stats.err_connect) {
        /* retried 10 ms later: a refused port must not spin hot */
        hc->retry_at = now + 10 * PROBE_NS_PER_MS;
        return;
    }

    probe_h2_again(hc, now);
}


static void
probe_h2_close(probe_h2_conn_t *hc)
{
    int  i;

    if (hc->session != NULL) {
        nghttp2_session_del(hc->session);
        hc->session = NULL;
    }

    for (i = 0; i < probe_conf.streams; i++) {
        if (hc->streams[i].state == PROBE_S_ACTIVE) {
            /* dropped: only at the end of the run */
            hc->streams[i].state = PROBE_S_FREE;
            probe_h2_busy--;
        }
    }

    hc->nactive = 0;

    if (hc->c.fd != -1) {
        hc->c.io->close(&hc->c);
        hc->c.fd = -1;
    }

    hc->c.state = PROBE_CLOSED;
    hc->opos = 0;
    hc->olast = 0;
    hc->rest_len = 0;
}


/* after a close: a new connection at once when streams want one */

static void
probe_h2_again(probe_h2_conn_t *hc, uint64_t now)
{
    hc->retry_at = now;

    if (probe_stop) {
        return;
    }

    if (probe_h2_interval == 0 || hc->npending) {
        probe_h2_open(hc, now);
    }
}


/* every 10 ms: -T for streams and connects, and connect retries */

static void
probe_h2_expire(probe_h2_conn_t *hc, uint64_t now)
{
    int                 i, measuring, reset;
    probe_h2_stream_t  *st;

    measuring = now >= probe_measure_from;
    reset = 0;

    for (i = 0; i < probe_conf.streams; i++) {
        st = &hc->streams[i];

        if (st->state == PROBE_S_FREE || st->deadline > now) {
            continue;
        }

        if (measuring) {
            probe_stats.err_timeout++;
        }

        if (st->state == PROBE_S_ACTIVE) {
            nghttp2_session_set_stream_user_data(hc->session, st->id, NULL);
            (void) nghttp2_submit_rst_stream(hc->session, NGHTTP2_FLAG_NONE,
                                             st->id, NGHTTP2_CANCEL);
            hc->nactive--;
            reset = 1;
            hc->close_after = probe_conf.new_conn;

        } else {
            hc->npending--;
        }

        st->state = PROBE_S_FREE;
        probe_h2_busy--;

        if (probe_h2_interval == 0 && !probe_conf.new_conn) {
            probe_h2_due(hc, now);
        }
    }

    if (hc->c.fd != -1 && hc->c.state != PROBE_ACTIVE
        && hc->c.deadline <= now)
    {
        /* the connect or the handshake took -T: its streams timed out */
        for (i = 0; i < probe_conf.streams; i++) {
            if (hc->streams[i].state == PROBE_S_PENDING) {
                if (measuring) {
                    probe_stats.err_timeout++;
                }

                hc->streams[i].state = PROBE_S_FREE;
                probe_h2_busy--;
            }
        }

        hc->npending = 0;
        probe_h2_close(hc);
        probe_h2_again(hc, now);
        return;
    }

    if (hc->c.fd == -1) {
        if (now >= hc->retry_at && (probe_h2_interval == 0 || hc->npending))
        {
            probe_h2_open(hc, now);
        }

        return;
    }

    if (reset || (hc->c.state == PROBE_ACTIVE && probe_conf.new_conn
                  && hc->nactive == 0))
    {
        probe_h2_io(hc);
    }
}


#endif /* WEIR_HAVE_NGHTTP2 */
