#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"


/*
 * The HTTP/1 parser fuzzer. The first input byte chooses where the rest
 * is split (the head is fed in two steps, as two reads would deliver
 * it) and a few flags (underscores, merge_slashes, a status line instead
 * of a request, strict_line_endings); the rest is a request head, optionally followed
 * by a chunked body, or a status line. Everything is parsed the way the
 * HTTP/1 module does it: request line, header lines up to the empty
 * line, the complex URI normalizer into a buffer of exactly the size the
 * caller allocates, then the bytes after the head as a chunked body, in
 * separate exactly sized heap pieces (a read past b->last is an
 * AddressSanitizer report), whose trailer line pieces and offsets must
 * stay inside what was consumed. Every loop is bounded by the input size, so
 * a parser that stops making progress shows as an abort, not a hang.
 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void weir_fuzz_head(weir_pool_t *pool, const uint8_t *data,
    size_t size, size_t split, weir_uint_t flags);
static void weir_fuzz_chunked(const uint8_t *data, size_t size,
    size_t split);
static void weir_fuzz_status(const uint8_t *data, size_t size, size_t split,
    weir_uint_t flags);
static void weir_fuzz_writer(weir_log_t *log, weir_uint_t level,
    unsigned char *buf, size_t len);


#define WEIR_FUZZ_UNDERSCORES   0x01
#define WEIR_FUZZ_MERGE         0x02
#define WEIR_FUZZ_STATUS        0x04
#define WEIR_FUZZ_STRICT        0x08


static weir_log_t  weir_fuzz_log;


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t        split;
    weir_uint_t   flags;
    weir_pool_t  *pool;

    if (size < 1) {
        return 0;
    }

    weir_fuzz_log.log_level = WEIR_LOG_DEBUG;
    weir_fuzz_log.writer = weir_fuzz_writer;

    flags = data[0] & 0x0f;
    split = (size - 1) * (data[0] >> 4) / 15;

    data++;
    size--;

    if (flags & WEIR_FUZZ_STATUS) {
        weir_fuzz_status(data, size, split, flags);
        return 0;
    }

    pool = weir_create_pool(WEIR_DEFAULT_POOL_SIZE, &weir_fuzz_log);
    if (pool == NULL) {
        return 0;
    }

    weir_fuzz_head(pool, data, size, split, flags);

    weir_destroy_pool(pool);

    return 0;
}


static void
weir_fuzz_head(weir_pool_t *pool, const uint8_t *data, size_t size,
    size_t split, weir_uint_t flags)
{
    size_t                len, n;
    weir_int_t            rc;
    weir_uint_t           line, loops;
    unsigned char        *buf;
    weir_buf_t            b;
    weir_http_request_t  *r;

    buf = malloc(size ? size : 1);
    r = weir_pcalloc(pool, sizeof(weir_http_request_t));

    if (buf == NULL || r == NULL) {
        free(buf);
        return;
    }

    memcpy(buf, data, size);

    r->pool = pool;
    r->strict_line_endings = (flags & WEIR_FUZZ_STRICT) ? 1 : 0;

    weir_memzero(&b, sizeof(weir_buf_t));
    b.start = buf;
    b.pos = buf;
    b.last = buf + split;
    b.end = buf + size;

    line = 0;
    rc = WEIR_AGAIN;

    for (loops = 0; loops <= size + 2; loops++) {

        if (line == 0) {
            rc = weir_http_parse_request_line(r, &b);

        } else {
            rc = weir_http_parse_header_line(r, &b,
                                             flags & WEIR_FUZZ_UNDERSCORES);
        }

        if (b.pos < buf || b.pos > b.last) {
            abort();
        }

        if (rc == WEIR_AGAIN) {
            if (b.pos != b.last) {
                abort();
            }

            if (b.last == b.end) {
                break;
            }

            b.last = b.end;
            continue;
        }

        if (rc == WEIR_OK && line == 0) {
            if (r->uri_start == NULL || r->uri_end < r->uri_start
                || r->request_end > b.pos)
            {
                abort();
            }

            len = r->uri_end - r->uri_start;

            r->uri.data = weir_pnalloc(pool, len);

            if (r->uri.data == NULL) {
                break;
            }

            rc = weir_http_parse_complex_uri(r, flags & WEIR_FUZZ_MERGE);

            if (rc == WEIR_OK && r->uri.len > (len ? len : 1)) {
                abort();
            }

            line++;
            continue;
        }

        if (rc == WEIR_OK) {
            if (r->header_name_end <= r->header_name_start
                || r->header_end < r->header_start
                || r->lowcase_index > sizeof(r->lowcase_header))
            {
                abort();
            }

            line++;
            continue;
        }

        if (rc == WEIR_HTTP_PARSE_HEADER_DONE) {
            n = b.end - b.pos;

            /* the body, split where the head was */
            weir_fuzz_chunked(b.pos, n, n ? split % n : 0);
        }

        break;
    }

    if (loops > size + 2) {
        /* more calls than bytes: the parser did not make progress */
        abort();
    }

    free(buf);
}


static void
weir_fuzz_chunked(const uint8_t *data, size_t size, size_t split)
{
    size_t                off, plen, take, llen;
    weir_int_t            rc;
    weir_uint_t           loops;
    unsigned char        *piece;
    weir_buf_t            b;
    weir_http_chunked_t   ctx;

    weir_memzero(&ctx, sizeof(weir_http_chunked_t));

    off = 0;
    llen = 0;

    while (off < size) {
        plen = (off == 0 && split) ? split : size - off;

        piece = malloc(plen);
        if (piece == NULL) {
            return;
        }

        memcpy(piece, data + off, plen);

        weir_memzero(&b, sizeof(weir_buf_t));
        b.start = piece;
        b.pos = piece;
        b.last = piece + plen;
        b.end = b.last;

        rc = WEIR_AGAIN;

        for (loops = 0; loops <= plen + 1; loops++) {
            rc = weir_http_parse_chunked(NULL, &b, &ctx);

            if (b.pos < piece || b.pos > b.last) {
                abort();
            }

            /* a trailer line's pieces lie in what was consumed */
            if (ctx.trailer_start) {
                if (ctx.trailer_start < piece || ctx.trailer_start > b.pos) {
                    abort();
                }

                llen += b.pos - ctx.trailer_start;
            }

            if (rc == WEIR_HTTP_PARSE_TRAILER) {
                /* the offsets lie in the line put together, before its
                 * CRLF */
                if (ctx.trailer_name_len == 0
                    || ctx.trailer_name_len >= ctx.trailer_value_start
                    || ctx.trailer_value_start > ctx.trailer_value_end
                    || ctx.trailer_value_end + 2 > llen)
                {
                    abort();
                }

                llen = 0;
                continue;
            }

            if (rc != WEIR_OK) {
                break;
            }

            if (ctx.size <= 0 || b.pos == b.last) {
                abort();
            }

            take = b.last - b.pos;

            if ((off_t) take > ctx.size) {
                take = (size_t) ctx.size;
            }

            b.pos += take;
            ctx.size -= take;
        }

        if (loops > plen + 1) {
            abort();
        }

        free(piece);
        off += plen;

        if (rc != WEIR_AGAIN) {
            break;
        }

        if (ctx.length < 1) {
            abort();
        }
    }
}


static void
weir_fuzz_status(const uint8_t *data, size_t size, size_t split,
    weir_uint_t flags)
{
    unsigned char        *buf;
    weir_int_t            rc;
    weir_buf_t            b;
    weir_http_status_t    status;
    weir_http_request_t  *r;

    buf = malloc(size ? size : 1);
    r = calloc(1, sizeof(weir_http_request_t));

    if (buf == NULL || r == NULL) {
        free(buf);
        free(r);
        return;
    }

    memcpy(buf, data, size);
    r->strict_line_endings = (flags & WEIR_FUZZ_STRICT) ? 1 : 0;
    weir_memzero(&status, sizeof(weir_http_status_t));
    weir_memzero(&b, sizeof(weir_buf_t));

    b.start = buf;
    b.pos = buf;
    b.last = buf + split;
    b.end = buf + size;

    rc = weir_http_parse_status_line(r, &b, &status);

    if (rc == WEIR_AGAIN) {
        b.last = b.end;
        rc = weir_http_parse_status_line(r, &b, &status);
    }

    if (rc == WEIR_OK
        && (status.code < 100 || status.code > 999
            || status.start != buf || status.end >= b.pos))
    {
        abort();
    }

    free(buf);
    free(r);
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
