#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"


/*
 * The HTTP/1.1 origin protocol handler fuzzer: the input is what an
 * origin sends. The first byte chooses where the head is split (u->buffer
 * grows in two reads, as the core fills it), where the body after it is
 * split, the request method (HEAD or GET) and whether the origin closes
 * at the end. The head is parsed with process_header (interim heads
 * included), then the body goes through input_filter in exactly sized
 * heap pieces and the views the core's real weir_http_upstream_emit()
 * makes are checked to stay inside them. Every loop is bounded by the
 * input size: a handler that stops making progress aborts.
 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void weir_fuzz_run(weir_pool_t *pool, const uint8_t *data,
    size_t size, weir_uint_t flags);
static weir_int_t weir_fuzz_piece(weir_http_upstream_t *u,
    const uint8_t *data, size_t len);
static void weir_fuzz_check_out(weir_http_upstream_t *u, unsigned char *start,
    unsigned char *end);
static void weir_fuzz_writer(weir_log_t *log, weir_uint_t level,
    unsigned char *buf, size_t len);


#define WEIR_FUZZ_HEAD   0x01
#define WEIR_FUZZ_EOF    0x02


static weir_log_t  weir_fuzz_log;


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    weir_pool_t  *pool;

    if (size < 1) {
        return 0;
    }

    weir_fuzz_log.log_level = WEIR_LOG_DEBUG;
    weir_fuzz_log.writer = weir_fuzz_writer;

    pool = weir_create_pool(WEIR_DEFAULT_POOL_SIZE, &weir_fuzz_log);
    if (pool == NULL) {
        return 0;
    }

    weir_fuzz_run(pool, data + 1, size - 1, data[0]);

    weir_destroy_pool(pool);

    return 0;
}


static void
weir_fuzz_run(weir_pool_t *pool, const uint8_t *data, size_t size,
    weir_uint_t flags)
{
    size_t                      split, avail, rest, piece;
    weir_int_t                  rc;
    weir_uint_t                 loops;
    unsigned char              *buf;
    weir_connection_t          *c;
    weir_http_request_t        *r;
    weir_http_upstream_t       *u;
    weir_http_upstream_conf_t  *conf;

    c = weir_pcalloc(pool, sizeof(weir_connection_t));
    r = weir_pcalloc(pool, sizeof(weir_http_request_t));
    conf = weir_pcalloc(pool, sizeof(weir_http_upstream_conf_t));

    if (c == NULL || r == NULL || conf == NULL) {
        return;
    }

    c->log = &weir_fuzz_log;
    c->pool = pool;
    r->pool = pool;
    r->connection = c;
    r->main = r;
    r->http_version = WEIR_HTTP_VERSION_11;

    if (weir_http_upstream_create(r) != WEIR_OK) {
        return;
    }

    u = r->upstream;
    u->conf = conf;
    u->proto = &weir_http_upstream_v1_proto;
    u->req.method = (flags & WEIR_FUZZ_HEAD) ? WEIR_HTTP_HEAD : WEIR_HTTP_GET;
    u->request_sent = 1;

    buf = malloc(size ? size : 1);
    if (buf == NULL) {
        return;
    }

    memcpy(buf, data, size);

    split = size * ((flags >> 2) & 0x7) / 7;

    u->buffer.start = buf;
    u->buffer.pos = buf;
    u->buffer.end = buf + size;
    avail = split;
    u->buffer.last = buf + avail;

    u->proto->reinit(u);

    rc = WEIR_AGAIN;

    for (loops = 0; loops <= 2 * size + 2; loops++) {
        rc = u->proto->process_header(u);

        if (u->buffer.pos < buf || u->buffer.pos > u->buffer.last) {
            abort();
        }

        if (rc == WEIR_AGAIN) {
            if (avail == size) {
                break;
            }

            avail = size;
            u->buffer.last = buf + avail;
            continue;
        }

        if (rc == WEIR_HTTP_UPSTREAM_INTERIM) {
            if (u->headers_in.status_n < 100 || u->headers_in.status_n > 199)
            {
                abort();
            }

            u->proto->reinit_head(u);
            continue;
        }

        break;
    }

    if (loops > 2 * size + 2) {
        abort();
    }

    if (rc != WEIR_OK) {
        free(buf);
        return;
    }

    if (u->headers_in.status_n < 100 || u->headers_in.status_n > 599
        || (u->headers_in.chunked && u->headers_in.content_length))
    {
        abort();
    }

    if (u->proto->input_filter_init(u) != WEIR_OK) {
        free(buf);
        return;
    }

    weir_fuzz_check_out(u, NULL, NULL);

    /* the body: what follows the head, in two pieces of their own */

    rest = u->buffer.last - u->buffer.pos;
    piece = rest * (flags >> 5) / 7;

    rc = weir_fuzz_piece(u, u->buffer.pos, piece);

    if (rc == WEIR_OK) {
        rc = weir_fuzz_piece(u, u->buffer.pos + piece, rest - piece);
    }

    if (rc == WEIR_OK && (flags & WEIR_FUZZ_EOF)) {
        rc = u->proto->input_filter(u, NULL);
        weir_fuzz_check_out(u, NULL, NULL);

        if (rc == WEIR_OK && !u->body_done) {
            abort();
        }
    }

    (void) u->proto->keepalive(u);

    free(buf);
}


static weir_int_t
weir_fuzz_piece(weir_http_upstream_t *u, const uint8_t *data, size_t len)
{
    weir_int_t      rc;
    weir_buf_t      b;
    unsigned char  *copy;

    if (len == 0) {
        return WEIR_OK;
    }

    copy = malloc(len);
    if (copy == NULL) {
        return WEIR_ERROR;
    }

    memcpy(copy, data, len);

    weir_memzero(&b, sizeof(weir_buf_t));
    b.start = copy;
    b.pos = copy;
    b.last = copy + len;
    b.end = copy + len;
    b.temporary = 1;

    rc = u->proto->input_filter(u, &b);

    if (rc == WEIR_OK && b.pos != b.last) {
        /* the contract: everything is consumed */
        abort();
    }

    weir_fuzz_check_out(u, copy, copy + len);

    free(copy);

    return rc;
}


/* the views emitted point into the piece just given, the end comes once */

static void
weir_fuzz_check_out(weir_http_upstream_t *u, unsigned char *start,
    unsigned char *end)
{
    weir_buf_t    *b;
    weir_chain_t  *cl;

    for (cl = u->out_bufs; cl; cl = cl->next) {
        b = cl->buf;

        if (b->last_buf) {
            if (b->pos != b->last || cl->next) {
                abort();
            }

            continue;
        }

        if (start == NULL || b->pos < start || b->last > end
            || b->pos >= b->last)
        {
            abort();
        }
    }

    u->out_bufs = NULL;
    u->last_out = &u->out_bufs;
}


static void
weir_fuzz_writer(weir_log_t *log, weir_uint_t level, unsigned char *buf,
    size_t len)
{
    (void) log;
    (void) level;
    (void) buf;
    (void) len;
}
