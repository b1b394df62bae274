#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"
#include "weir_unit.h"


/*
 * The HTTP/1 parsers. Each case is parsed whole, then fed one byte at a
 * time, then split in two at every byte boundary; every run must give
 * the same trace (the fields of the request line and every header line,
 * then DONE or the exact error code). Inputs live in exactly sized heap
 * copies so that AddressSanitizer catches a read past b->last's buffer.
 */


#define TRACE_SIZE  2048


typedef struct {
    const char   *in;
    size_t        len;
    const char   *trace;
    weir_uint_t   strict;       /* r->strict_line_endings */
} head_case_t;

/* sizeof, not strlen: some inputs hold a NUL */
#define H(in, trace)   { in, sizeof(in) - 1, trace, 0 }
#define HS(in, trace)  { in, sizeof(in) - 1, trace, 1 }


typedef struct {
    char          buf[TRACE_SIZE];
    size_t        len;
} trace_t;


static void
trace_add(trace_t *t, const char *fmt, ...)
{
    int      n;
    va_list  args;

    if (t->len >= sizeof(t->buf) - 1) {
        return;
    }

    va_start(args, fmt);
    n = vsnprintf(t->buf + t->len, sizeof(t->buf) - t->len, fmt, args);
    va_end(args);

    if (n > 0) {
        t->len += n;

        if (t->len > sizeof(t->buf) - 1) {
            t->len = sizeof(t->buf) - 1;
        }
    }
}


static void
trace_span(trace_t *t, const char *label, unsigned char *start,
    unsigned char *end)
{
    if (start == NULL) {
        return;
    }

    trace_add(t, " %s=%.*s", label, (int) (end - start), (char *) start);
}


static void
trace_request_line(trace_t *t, weir_http_request_t *r)
{
    trace_add(t, "m=%lu u=%.*s", (unsigned long) r->method,
              WEIR_STR_ARG(r->unparsed_uri));

    if (r->args_start) {
        trace_add(t, " a=%.*s", WEIR_STR_ARG(r->args));
    }

    if (r->uri_ext) {
        trace_add(t, " e=%.*s",
                  (int) ((r->args_start ? r->args_start - 1 : r->uri_end)
                         - r->uri_ext), (char *) r->uri_ext);
    }

    trace_span(t, "s", r->schema_start, r->schema_end);
    trace_span(t, "h", r->host_start, r->host_end);
    trace_span(t, "p", r->port_start, r->port_end);

    trace_add(t, " v=%lu%s%s%s%s", (unsigned long) r->http_version,
              r->complex_uri ? " C" : "", r->quoted_uri ? " Q" : "",
              r->plus_in_uri ? " P" : "", r->empty_path_in_uri ? " E" : "");

    /* the strings set for the caller agree with the pointers */
    if (r->method_name.len != (size_t) (r->method_end - r->request_start)
        || r->http_protocol.len != 8
        || memcmp(r->http_protocol.data, "HTTP/", 5) != 0
        || r->request_line.data + r->request_line.len != r->request_end)
    {
        trace_add(t, " BADSTR");
    }
}


static void
trace_header(trace_t *t, weir_http_request_t *r)
{
    size_t       len;
    weir_uint_t  i, hash;

    len = r->header_name_end - r->header_name_start;

    hash = 0;

    for (i = 0; i < len; i++) {
        hash = weir_hash(hash, weir_tolower(r->header_name_start[i]));
    }

    trace_add(t, "; %s%.*s=%.*s", r->invalid_header ? "!" : "", (int) len,
              (char *) r->header_name_start,
              (int) (r->header_end - r->header_start),
              (char *) r->header_start);

    if (hash != r->header_hash
        || r->lowcase_index != (len < 32 ? len : 32))
    {
        trace_add(t, " BADHASH");
    }

    for (i = 0; i < r->lowcase_index; i++) {
        if (r->lowcase_header[i] != weir_tolower(r->header_name_start[i])) {
            trace_add(t, " BADLC");
            break;
        }
    }
}


/*
 * Parses a head, whole when step is 0, else with b->last moved first to
 * "split" and then forward by "step" bytes (split 0: from the start).
 */
static void
parse_head(const char *in, size_t n, size_t split, size_t step,
    weir_uint_t allow_underscores, weir_uint_t strict, trace_t *t)
{
    unsigned char         *data;
    weir_int_t             rc;
    weir_uint_t            line, loops;
    weir_buf_t             b;
    weir_http_request_t   *r;

    t->len = 0;
    t->buf[0] = '\0';

    data = malloc(n ? n : 1);
    r = calloc(1, sizeof(weir_http_request_t));

    if (data == NULL || r == NULL) {
        free(data);
        free(r);
        trace_add(t, "NOMEM");
        return;
    }

    memcpy(data, in, n);
    r->strict_line_endings = strict ? 1 : 0;
    weir_memzero(&b, sizeof(weir_buf_t));
    b.start = data;
    b.pos = data;
    b.end = data + n;
    b.last = (step == 0) ? data + n : data + split;

    line = 0;

    for (loops = 0; loops < 4 * n + 16; loops++) {

        if (line == 0) {
            rc = weir_http_parse_request_line(r, &b);

        } else {
            rc = weir_http_parse_header_line(r, &b, allow_underscores);
        }

        if (rc == WEIR_AGAIN) {
            if (b.pos != b.last) {
                trace_add(t, " BADPOS");
                break;
            }

            if (b.last == b.end) {
                trace_add(t, "%sAGAIN", line ? "; " : "");
                break;
            }

            b.last += step;

            if (b.last > b.end || b.last == data) {
                b.last = b.end;
            }

            continue;
        }

        if (rc == WEIR_OK && line == 0) {
            trace_request_line(t, r);
            line++;
            continue;
        }

        if (rc == WEIR_OK) {
            trace_header(t, r);
            line++;
            continue;
        }

        if (rc == WEIR_HTTP_PARSE_HEADER_DONE) {
            trace_add(t, "; DONE");

            /* what follows the head is left for the body reader */
            if (b.pos != b.end) {
                trace_add(t, " +%ld", (long) (b.end - b.pos));
            }

            break;
        }

        if (rc == WEIR_HTTP_PARSE_INVALID_VERSION && line == 0) {
            trace_request_line(t, r);
        }

        trace_add(t, "%sE%ld", line ? "; " : (t->len ? " " : ""), (long) rc);
        break;
    }

    free(data);
    free(r);
}


/* E10 invalid request, E11 invalid method, E12 version, E14 header */
static head_case_t  head_cases[] = {

    /* valid */
    H("GET / HTTP/1.1\r\nHost: a\r\n\r\n",
      "m=2 u=/ v=1001; Host=a; DONE"),
    H("GET /index.html HTTP/1.0\r\n\r\n",
      "m=2 u=/index.html e=html v=1000; DONE"),
    H("HEAD /a/b.tar.gz?x=1&y=2 HTTP/1.1\r\nHost: h\r\n\r\n",
      "m=4 u=/a/b.tar.gz?x=1&y=2 a=x=1&y=2 e=gz v=1001; Host=h; DONE"),
    H("POST /form HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
      "m=8 u=/form v=1001; Content-Length=3; DONE +3"),
    H("PUT /x HTTP/1.1\r\n\r\n", "m=16 u=/x v=1001; DONE"),
    H("DELETE /x HTTP/1.1\r\n\r\n", "m=32 u=/x v=1001; DONE"),
    H("OPTIONS * HTTP/1.1\r\n\r\n", "m=64 u=* v=1001; DONE"),
    H("OPTIONS /x HTTP/1.1\r\n\r\n", "m=64 u=/x v=1001; DONE"),
    H("PATCH /x HTTP/1.1\r\n\r\n", "m=128 u=/x v=1001; DONE"),
    H("TRACE /x HTTP/1.1\r\n\r\n", "m=256 u=/x v=1001; DONE"),
    H("CONNECT example.com:443 HTTP/1.1\r\n\r\n",
      "m=512 u=example.com:443 h=example.com p=443 v=1001; DONE"),
    H("CONNECT [::1]:8443 HTTP/1.1\r\n\r\n",
      "m=512 u=[::1]:8443 h=[::1] p=8443 v=1001; DONE"),
    H("PURGE /x HTTP/1.1\r\n\r\n", "m=1 u=/x v=1001; DONE"),
    H("get / HTTP/1.1\r\n\r\n", "m=1 u=/ v=1001; DONE"),
    H("M-SEARCH * HTTP/1.1\r\n\r\n", "E10"),
    H("\r\n\r\nGET / HTTP/1.1\r\n\r\n", "m=2 u=/ v=1001; DONE"),
    H("GET http://example.com/a?b HTTP/1.1\r\n\r\n",
      "m=2 u=/a?b a=b s=http h=example.com v=1001; DONE"),
    H("GET HTTPS://Example.com:8443/ HTTP/1.1\r\n\r\n",
      "m=2 u=/ s=HTTPS h=Example.com p=8443 v=1001; DONE"),
    H("GET http://example.com HTTP/1.1\r\n\r\n",
      "m=2 u= s=http h=example.com v=1001 E; DONE"),
    H("GET http://[2001:db8::1]:80/x HTTP/1.1\r\n\r\n",
      "m=2 u=/x s=http h=[2001:db8::1] p=80 v=1001; DONE"),
    H("GET /a//b HTTP/1.1\r\n\r\n", "m=2 u=/a//b v=1001 C; DONE"),
    H("GET /a/./b HTTP/1.1\r\n\r\n", "m=2 u=/a/./b v=1001 C; DONE"),
    H("GET /a/../b HTTP/1.1\r\n\r\n", "m=2 u=/a/../b v=1001 C; DONE"),
    H("GET /a%20b HTTP/1.1\r\n\r\n", "m=2 u=/a%20b v=1001 C Q; DONE"),
    H("GET /a+b HTTP/1.1\r\n\r\n", "m=2 u=/a+b v=1001 P; DONE"),
    H("GET /a.b/c HTTP/1.1\r\n\r\n", "m=2 u=/a.b/c v=1001; DONE"),
    H("GET /a. HTTP/1.1\r\n\r\n", "m=2 u=/a. v=1001; DONE"),
    H("GET /?a=%zz&b=/?x HTTP/1.1\r\n\r\n",
      "m=2 u=/?a=%zz&b=/?x a=a=%zz&b=/?x v=1001; DONE"),
    H("GET /\xc3\xa9t\xc3\xa9 HTTP/1.1\r\n\r\n",
      "m=2 u=/\xc3\xa9t\xc3\xa9 v=1001; DONE"),
    H("GET /a:b@c;d=e,f HTTP/1.1\r\n\r\n",
      "m=2 u=/a:b@c;d=e,f v=1001; DONE"),
    H("GET / HTTP/1.2\r\n\r\n", "m=2 u=/ v=1002; DONE"),

    /* a fragment is dropped: uri_end is at the '#' */
    H("GET /a#frag HTTP/1.1\r\n\r\n", "m=2 u=/a v=1001; DONE"),
    H("GET /foo/bar/.#frag HTTP/1.1\r\n\r\n",
      "m=2 u=/foo/bar/. v=1001 C; DONE"),
    H("GET /a.html#x.y HTTP/1.1\r\n\r\n",
      "m=2 u=/a.html e=html v=1001; DONE"),
    H("GET /a?b=1#c?d/e#f%zz\xc3\xa9 HTTP/1.1\r\n\r\n",
      "m=2 u=/a?b=1 a=b=1 v=1001; DONE"),
    H("GET /# HTTP/1.1\r\n\r\n", "m=2 u=/ v=1001; DONE"),
    H("GET /a?# HTTP/1.1\r\n\r\n", "m=2 u=/a? a= v=1001; DONE"),
    H("GET /a#b HTTP/1.1\nHost: h\n\n", "m=2 u=/a v=1001; Host=h; DONE"),
    H("GET http://h/a#b HTTP/1.1\r\n\r\n",
      "m=2 u=/a s=http h=h v=1001; DONE"),
    H("GET http://h#b HTTP/1.1\r\n\r\n",
      "m=2 u= s=http h=h v=1001 E; DONE"),
    H("GET http://h:80#b HTTP/1.1\r\n\r\n",
      "m=2 u= s=http h=h p=80 v=1001 E; DONE"),

    /* absolute-form: a query without a path, an empty port */
    H("GET http://h?x HTTP/1.1\r\n\r\n",
      "m=2 u=?x a=x s=http h=h v=1001 E; DONE"),
    H("GET http://h?x=/?#y HTTP/1.1\r\n\r\n",
      "m=2 u=?x=/? a=x=/? s=http h=h v=1001 E; DONE"),
    H("GET http://h? HTTP/1.1\r\n\r\n",
      "m=2 u=? a= s=http h=h v=1001 E; DONE"),
    H("GET http://[::1]?x HTTP/1.1\r\n\r\n",
      "m=2 u=?x a=x s=http h=[::1] v=1001 E; DONE"),
    H("GET http://h:/ HTTP/1.1\r\n\r\n",
      "m=2 u=/ s=http h=h v=1001; DONE"),
    H("GET http://h:/a?b HTTP/1.1\r\n\r\n",
      "m=2 u=/a?b a=b s=http h=h v=1001; DONE"),
    H("GET http://h: HTTP/1.1\r\n\r\n",
      "m=2 u= s=http h=h v=1001 E; DONE"),
    H("GET http://h:?x HTTP/1.1\r\n\r\n",
      "m=2 u=?x a=x s=http h=h v=1001 E; DONE"),
    H("GET http://[::1]:/ HTTP/1.1\r\n\r\n",
      "m=2 u=/ s=http h=[::1] v=1001; DONE"),
    H("GET / HTTP/1.1\r\nA: b\r\nC:d\r\nE:\t f \t\r\nG:\r\nH:  \r\n\r\n",
      "m=2 u=/ v=1001; A=b; C=d; E=f; G=; H=; DONE"),
    H("GET / HTTP/1.1\r\nX-A: a b\tc\r\n\r\n",
      "m=2 u=/ v=1001; X-A=a b\tc; DONE"),
    H("GET / HTTP/1.1\r\nX: \x80\xff\r\n\r\n",
      "m=2 u=/ v=1001; X=\x80\xff; DONE"),
    H("GET / HTTP/1.1\r\n!#$%&'*+-.^_`|~09aZ: v\r\n\r\n",
      "m=2 u=/ v=1001; !!#$%&'*+-.^_`|~09aZ=v; DONE"),
    H("GET / HTTP/1.1\r\nX_Y: 1\r\nZ: 2\r\n\r\n",
      "m=2 u=/ v=1001; !X_Y=1; Z=2; DONE"),
    H("GET / HTTP/1.1\r\n"
      "X-Very-Long-Header-Name-Longer-Than-32-Bytes: v\r\n\r\n",
      "m=2 u=/ v=1001; X-Very-Long-Header-Name-Longer-Than-32-Bytes=v; "
      "DONE"),

    /* incomplete */
    H("GET / HTTP/1.1\r\nHost: a\r\n", "m=2 u=/ v=1001; Host=a; AGAIN"),
    H("GET /abc", "AGAIN"),

    /* the method */
    H(" GET / HTTP/1.1\r\n\r\n", "E11"),
    H("GE\x01T / HTTP/1.1\r\n\r\n", "E11"),
    H("GET\t/ HTTP/1.1\r\n\r\n", "E11"),
    H("G(T / HTTP/1.1\r\n\r\n", "E11"),
    H("\x00GET / HTTP/1.1\r\n\r\n", "E11"),

    /* the target */
    H("GET  / HTTP/1.1\r\n\r\n", "E10"),
    H("GET a HTTP/1.1\r\n\r\n", "E10"),
    H("GET * HTTP/1.1\r\n\r\n", "E10"),
    H("OPTIONS *x HTTP/1.1\r\n\r\n", "E10"),
    H("GET /a b HTTP/1.1\r\n\r\n", "E10"),
    H("GET /a\x01 HTTP/1.1\r\n\r\n", "E10"),
    H("GET /a\x7f HTTP/1.1\r\n\r\n", "E10"),
    H("GET /a\tb HTTP/1.1\r\n\r\n", "E10"),
    H("GET /a\x01#b HTTP/1.1\r\n\r\n", "E10"),
    H("GET /a#b\x01 HTTP/1.1\r\n\r\n", "E10"),
    H("GET /a#b\x7f HTTP/1.1\r\n\r\n", "E10"),
    H("GET /a#b c HTTP/1.1\r\n\r\n", "E10"),
    H("GET /a#b\tc HTTP/1.1\r\n\r\n", "E10"),
    H("GET /a#b\r\n\r\n", "E10"),
    H("OPTIONS *#x HTTP/1.1\r\n\r\n", "E10"),
    H("CONNECT h:443#x HTTP/1.1\r\n\r\n", "E10"),
    H("CONNECT h: HTTP/1.1\r\n\r\n", "E10"),
    H("CONNECT h:/ HTTP/1.1\r\n\r\n", "E10"),
    H("GET /?a\x00 HTTP/1.1\r\n\r\n", "E10"),
    H("GET ftp://h/ HTTP/1.1\r\n\r\n", "E10"),
    H("GET http:/h/ HTTP/1.1\r\n\r\n", "E10"),
    H("GET http:///x HTTP/1.1\r\n\r\n", "E10"),
    H("GET http://u@h/ HTTP/1.1\r\n\r\n", "E10"),
    H("GET http://h:0/ HTTP/1.1\r\n\r\n", "E10"),
    H("GET http://h:65536/ HTTP/1.1\r\n\r\n", "E10"),
    H("GET http://h:123456/ HTTP/1.1\r\n\r\n", "E10"),
    H("GET http://h?x y HTTP/1.1\r\n\r\n", "E10"),
    H("GET http://h:x/ HTTP/1.1\r\n\r\n", "E10"),
    H("GET http://h::/ HTTP/1.1\r\n\r\n", "E10"),
    H("GET http://[]/ HTTP/1.1\r\n\r\n", "E10"),
    H("GET http://[::1/ HTTP/1.1\r\n\r\n", "E10"),
    H("CONNECT /x HTTP/1.1\r\n\r\n", "E10"),
    H("CONNECT example.com HTTP/1.1\r\n\r\n", "E10"),
    H("CONNECT example.com:443/ HTTP/1.1\r\n\r\n", "E10"),
    H("CONNECT http://h:1 HTTP/1.1\r\n\r\n", "E10"),

    /* the version */
    H("GET /\r\n\r\n", "E10"),
    H("GET / \r\n\r\n", "E10"),
    H("GET / HTTP/1.1 \r\n\r\n", "E10"),
    H("GET / http/1.1\r\n\r\n", "E10"),
    H("GET / HTTP/1.10\r\n\r\n", "E10"),
    H("GET / HTTP/11\r\n\r\n", "E10"),
    H("GET / HTTP/0.9\r\n\r\n", "E10"),
    H("GET / HTTP/1.x\r\n\r\n", "E10"),
    H("GET / HTTP/2.0\r\n\r\n", "m=2 u=/ v=2000 E12"),
    H("GET / HTTP/9.9\r\n\r\n", "m=2 u=/ v=9009 E12"),

    /* line ends: a bare LF ends a line (RFC 9112 2.2), a lone CR never */
    H("GET / HTTP/1.1\n\r\n", "m=2 u=/ v=1001; DONE"),
    H("GET / HTTP/1.1\n\n", "m=2 u=/ v=1001; DONE"),
    H("GET / HTTP/1.1\nHost: a\nX:  y \nZ:\nW: \n\n",
      "m=2 u=/ v=1001; Host=a; X=y; Z=; W=; DONE"),
    H("GET / HTTP/1.1\r\nA: b\nC: d\r\n\n",
      "m=2 u=/ v=1001; A=b; C=d; DONE"),
    H("POST / HTTP/1.1\nA: b\n\nabc", "m=8 u=/ v=1001; A=b; DONE +3"),
    H("\nGET / HTTP/1.1\r\n\r\n", "m=2 u=/ v=1001; DONE"),
    H("\r\n\n\nGET / HTTP/1.1\n\n", "m=2 u=/ v=1001; DONE"),
    H("GET / HTTP/1.1\r\r\n", "E10"),
    H("GET / HTTP/1.1\rX\n\r\n", "E10"),
    H("GET / HTTP/1.1\r", "AGAIN"),
    H("\rGET / HTTP/1.1\r\n\r\n", "E10"),
    H("\r\rGET / HTTP/1.1\r\n\r\n", "E10"),
    H("GET / HTTP/1.1 \n\n", "E10"),
    H("GET /\n\n", "E10"),
    H("GET / HTTP/1.1\r\nA: b\n\r\n", "m=2 u=/ v=1001; A=b; DONE"),
    H("GET / HTTP/1.1\r\nA: b\r\n\n", "m=2 u=/ v=1001; A=b; DONE"),
    H("GET / HTTP/1.1\r\nA: b\rc\r\n\r\n", "m=2 u=/ v=1001; E14"),
    H("GET / HTTP/1.1\nA: b\r\r\n\n", "m=2 u=/ v=1001; E14"),
    H("GET / HTTP/1.1\nA: b \r \n\n", "m=2 u=/ v=1001; E14"),
    H("GET / HTTP/1.1\r\nA: b\r\n\rX", "m=2 u=/ v=1001; A=b; E14"),
    H("GET / HTTP/1.1\nA: b\n\rX", "m=2 u=/ v=1001; A=b; E14"),
    H("GET / HTTP/1.1\nA: b\n c\n\n", "m=2 u=/ v=1001; A=b; E14"),
    H("GET / HTTP/1.1\nA: b\n\tc\n\n", "m=2 u=/ v=1001; A=b; E14"),
    H("GET / HTTP/1.1\nA\n\n", "m=2 u=/ v=1001; E14"),
    H("GET / HTTP/1.1\nA \n: b\n\n", "m=2 u=/ v=1001; E14"),

    /* line ends with strict_line_endings: CRLF only */
    HS("GET / HTTP/1.1\r\nHost: a\r\n\r\n",
       "m=2 u=/ v=1001; Host=a; DONE"),
    HS("\r\nGET / HTTP/1.1\r\n\r\n", "m=2 u=/ v=1001; DONE"),
    HS("GET / HTTP/1.1\n\r\n", "E10"),
    HS("GET / HTTP/1.1\r\r\n", "E10"),
    HS("\nGET / HTTP/1.1\r\n\r\n", "E11"),
    HS("GET / HTTP/1.1\r\nA: b\n\r\n", "m=2 u=/ v=1001; E14"),
    HS("GET / HTTP/1.1\r\nA:\n\r\n", "m=2 u=/ v=1001; E14"),
    HS("GET / HTTP/1.1\r\nA: b \n\r\n", "m=2 u=/ v=1001; E14"),
    HS("GET / HTTP/1.1\r\nA: b\r\n\n", "m=2 u=/ v=1001; A=b; E14"),

    /* header lines */
    H("GET / HTTP/1.1\r\nA : b\r\n\r\n", "m=2 u=/ v=1001; E14"),
    H("GET / HTTP/1.1\r\nA\t: b\r\n\r\n", "m=2 u=/ v=1001; E14"),
    H("GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n", "m=2 u=/ v=1001; A=b; E14"),
    H("GET / HTTP/1.1\r\nA: b\r\n\tc\r\n\r\n",
      "m=2 u=/ v=1001; A=b; E14"),
    H("GET / HTTP/1.1\r\n Host: a\r\n\r\n", "m=2 u=/ v=1001; E14"),
    H("GET / HTTP/1.1\r\n: b\r\n\r\n", "m=2 u=/ v=1001; E14"),
    H("GET / HTTP/1.1\r\nNoColon\r\n\r\n", "m=2 u=/ v=1001; E14"),
    H("GET / HTTP/1.1\r\nA(b: c\r\n\r\n", "m=2 u=/ v=1001; E14"),
    H("GET / HTTP/1.1\r\nA/b: c\r\n\r\n", "m=2 u=/ v=1001; E14"),
    H("GET / HTTP/1.1\r\nA: b\x00" "c\r\n\r\n", "m=2 u=/ v=1001; E14"),
    H("GET / HTTP/1.1\r\nA: \x00\r\n\r\n", "m=2 u=/ v=1001; E14"),
    H("GET / HTTP/1.1\r\nA: b\x01\r\n\r\n", "m=2 u=/ v=1001; E14"),
    H("GET / HTTP/1.1\r\nA: b \x7f\r\n\r\n", "m=2 u=/ v=1001; E14"),
    H("GET / HTTP/1.1\r\nA: b\x1b[0m\r\n\r\n", "m=2 u=/ v=1001; E14"),
    H("GET / HTTP/1.1\r\n\xc3\xa9: b\r\n\r\n", "m=2 u=/ v=1001; E14"),
};


static void
check_head_case(head_case_t *hc)
{
    size_t   k, len;
    trace_t  whole, part;

    len = hc->len;

    parse_head(hc->in, len, 0, 0, 0, hc->strict, &whole);

    if (!WEIR_CHECK_STR(whole.buf, hc->trace)) {
        fprintf(stderr, "    input: \"%s\"\n", hc->in);
        return;
    }

    parse_head(hc->in, len, 0, 1, 0, hc->strict, &part);

    if (!WEIR_CHECK_STR(part.buf, whole.buf)) {
        fprintf(stderr, "    byte by byte, input: \"%s\"\n", hc->in);
        return;
    }

    for (k = 1; k < len; k++) {
        parse_head(hc->in, len, k, len, 0, hc->strict, &part);

        if (!WEIR_CHECK_STR(part.buf, whole.buf)) {
            fprintf(stderr, "    split at %lu, input: \"%s\"\n",
                    (unsigned long) k, hc->in);
            return;
        }
    }
}


WEIR_UNIT_TEST(http_parse_heads)
{
    size_t  i, n;

    n = sizeof(head_cases) / sizeof(head_cases[0]);

    WEIR_CHECK(n >= 60);

    for (i = 0; i < n; i++) {
        check_head_case(&head_cases[i]);
    }
}


typedef struct {
    const char   *target;
    weir_uint_t   merge;
    const char   *uri;      /* NULL: WEIR_HTTP_PARSE_INVALID_REQUEST */
    const char   *exten;
    const char   *args;
} uri_case_t;


static uri_case_t  uri_cases[] = {
    { "/", 1, "/", "", "" },
    { "/a/b", 1, "/a/b", "", "" },
    { "/a/b.html", 1, "/a/b.html", "html", "" },
    { "/a.b/c", 1, "/a.b/c", "", "" },
    { "/a.", 1, "/a.", "", "" },
    { "/a//b", 1, "/a/b", "", "" },
    { "/a//b", 0, "/a//b", "", "" },
    { "//", 1, "/", "", "" },
    { "///a///", 1, "/a/", "", "" },
    { "///a///", 0, "///a///", "", "" },
    { "/a/./b", 1, "/a/b", "", "" },
    { "/a/.", 1, "/a/", "", "" },
    { "/.", 1, "/", "", "" },
    { "/./././", 1, "/", "", "" },
    { "/a/../b", 1, "/b", "", "" },
    { "/a/b/..", 1, "/a/", "", "" },
    { "/a/b/../", 1, "/a/", "", "" },
    { "/a/..", 1, "/", "", "" },
    { "/..", 1, NULL, NULL, NULL },
    { "/../a", 1, NULL, NULL, NULL },
    { "/a/../..", 1, NULL, NULL, NULL },
    { "/a/../../b", 1, NULL, NULL, NULL },
    { "/a//..", 0, "/a/", "", "" },
    { "/a//../b", 1, "/b", "", "" },
    { "/a//../b", 0, "/a/b", "", "" },
    { "/...", 1, "/...", "", "" },
    /* as nginx: a '.' that starts the last segment begins no extension */
    { "/..a/.b", 1, "/..a/.b", "", "" },
    { "/a.x/%2eb", 1, "/a.x/.b", "", "" },
    { "/a.x/c%2ed", 1, "/a.x/c.d", "d", "" },
    { "/a%20b", 1, "/a b", "", "" },
    { "/a%2fb", 1, "/a/b", "", "" },
    { "/a/%2e%2E/b", 1, "/b", "", "" },
    { "/%2e%2e", 1, NULL, NULL, NULL },
    { "/a%2F..%2F..%2Fetc", 1, NULL, NULL, NULL },
    { "/x%2F..%2Fetc%2Fpasswd", 1, "/etc/passwd", "", "" },
    { "/%41%7a", 1, "/Az", "", "" },
    { "/%c3%a9.txt", 1, "/\xc3\xa9.txt", "txt", "" },
    { "/a%00b", 1, NULL, NULL, NULL },
    { "/a%0", 1, NULL, NULL, NULL },
    { "/a%", 1, NULL, NULL, NULL },
    { "/a%g0", 1, NULL, NULL, NULL },
    { "/a%0g", 1, NULL, NULL, NULL },
    { "/a%?x", 1, NULL, NULL, NULL },
    { "/a%3Fb?c=%00", 1, "/a?b", "", "c=%00" },
    { "/a/./b.c?x=/../y", 1, "/a/b.c", "c", "x=/../y" },
    { "/a/..?", 1, "/", "", "" },
    { "/a/b?x", 0, "/a/b", "", "x" },
};


WEIR_UNIT_TEST(http_parse_complex_uri)
{
    size_t                i, len;
    weir_int_t            rc;
    unsigned char        *data, *out, *q;
    uri_case_t           *uc;
    weir_http_request_t  *r;

    r = calloc(1, sizeof(weir_http_request_t));
    WEIR_REQUIRE(r != NULL);

    for (i = 0; i < sizeof(uri_cases) / sizeof(uri_cases[0]); i++) {
        uc = &uri_cases[i];
        len = strlen(uc->target);

        data = malloc(len);

        if (!WEIR_CHECK(data != NULL)) {
            break;
        }

        memcpy(data, uc->target, len);
        weir_memzero(r, sizeof(weir_http_request_t));

        r->uri_start = data;
        r->uri_end = data + len;
        q = memchr(data, '?', len);
        r->args_start = q ? q + 1 : NULL;

        /* the caller's allocation: exactly the target's length */
        out = malloc(len);
        r->uri.data = out;

        if (!WEIR_CHECK(out != NULL)) {
            free(data);
            break;
        }

        rc = weir_http_parse_complex_uri(r, uc->merge);

        if (uc->uri == NULL) {
            if (!WEIR_CHECK_INT(rc, WEIR_HTTP_PARSE_INVALID_REQUEST)) {
                fprintf(stderr, "    target: \"%s\"\n", uc->target);
            }

        } else if (!WEIR_CHECK_INT(rc, WEIR_OK)) {
            fprintf(stderr, "    target: \"%s\"\n", uc->target);

        } else {
            if (!WEIR_CHECK_INT(r->uri.len, strlen(uc->uri))
                || !WEIR_CHECK(memcmp(r->uri.data, uc->uri, r->uri.len)
                               == 0)
                || !WEIR_CHECK_INT(r->exten.len, strlen(uc->exten))
                || !WEIR_CHECK(r->exten.len == 0
                               || memcmp(r->exten.data, uc->exten,
                                         r->exten.len) == 0)
                || !WEIR_CHECK_INT(r->args.len, strlen(uc->args))
                || !WEIR_CHECK(r->args.len == 0
                               || memcmp(r->args.data, uc->args,
                                         r->args.len) == 0))
            {
                fprintf(stderr, "    target: \"%s\" gave \"%.*s\"\n",
                        uc->target, WEIR_STR_ARG(r->uri));
            }
        }

        free(data);
        free(out);
    }

    /* absolute-form without a path: "/" without writing anything */
    weir_memzero(r, sizeof(weir_http_request_t));
    r->uri_start = (unsigned char *) " HTTP/1.1";
    r->uri_end = r->uri_start;

    WEIR_CHECK_INT(weir_http_parse_complex_uri(r, 1), WEIR_OK);
    WEIR_CHECK_MEM(r->uri.data, r->uri.len, "/");
    WEIR_CHECK_INT(r->args.len, 0);

    free(r);
}


typedef struct {
    const char   *in;
    size_t        len;
    const char   *trace;
} chunked_case_t;

#define C(in, trace)  { in, sizeof(in) - 1, trace }


static chunked_case_t  chunked_cases[] = {

    /* valid: the data, then DONE and how many bytes follow the body */
    C("0\r\n\r\n", "|DONE"),
    C("1\r\na\r\n0\r\n\r\n", "a|DONE"),
    C("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", "hello world|DONE"),
    C("A\r\n0123456789\r\n0\r\n\r\n", "0123456789|DONE"),
    C("a\r\n0123456789\r\n0\r\n\r\nGET", "0123456789|DONE +3"),
    C("0000000000000003\r\nabc\r\n0\r\n\r\n", "|ERROR"),
    C("000000000000003\r\nabc\r\n0\r\n\r\n", "abc|DONE"),
    C("000\r\n\r\n", "|DONE"),
    C("3;a\r\nabc\r\n0\r\n\r\n", "abc|DONE"),
    C("3;a=b\r\nabc\r\n0;x=\"y\"\r\n\r\n", "abc|DONE"),
    C("3;a=b;c;d=\"e f\\\"g\"\r\nabc\r\n0\r\n\r\n", "abc|DONE"),
    C("3;a=\"\"\r\nabc\r\n0\r\n\r\n", "abc|DONE"),

    /* BWS around ';' and '=' (RFC 9112 7.1.1) */
    C("1 ;a\r\nx\r\n0\r\n\r\n", "x|DONE"),
    C("1\t; \ta \t= \tb \t;c ;d\r\nx\r\n0 ;e\r\n\r\n", "x|DONE"),
    C("1;a=\"b\" ;c\r\nx\r\n0\r\n\r\n", "x|DONE"),
    C("2\r\n\r\n\r\n0\r\n\r\n", "\r\n|DONE"),
    C("1\r\n\x00\r\n0\r\n\r\n", "\\0|DONE"),
    C("0\r\nX-Sum: 1\r\n\r\n", "[X-Sum=1]|DONE"),
    C("2\r\nab\r\n0\r\nA: 1\r\nB:\r\nC:  x y \r\n\r\n",
      "ab[A=1][B=][C=x y]|DONE"),

    /* incomplete */
    C("5\r\nhel", "hel|AGAIN"),
    C("5\r\nhello\r\n", "hello|AGAIN"),
    C("0\r\n", "|AGAIN"),
    C("0\r\nA: b\r\n", "[A=b]|AGAIN"),

    /* sizes */
    C("\r\n", "|ERROR"),
    C("g\r\n", "|ERROR"),
    C("-1\r\n", "|ERROR"),
    C("+1\r\n", "|ERROR"),
    C(" 1\r\n", "|ERROR"),
    C("1 \r\na\r\n0\r\n\r\n", "|ERROR"),
    C("0x1\r\na\r\n", "|ERROR"),
    C("fffffffffffffff\r\n", "|AGAIN"),
    C("1000000000000000\r\n", "|ERROR"),
    C("ffffffffffffffffff\r\n", "|ERROR"),

    /* extensions */
    C("1;\r\na\r\n0\r\n\r\n", "|ERROR"),
    C("1;=b\r\na\r\n0\r\n\r\n", "|ERROR"),
    C("1;a=\r\na\r\n0\r\n\r\n", "|ERROR"),
    C("1;a==b\r\na\r\n0\r\n\r\n", "|ERROR"),
    C("1;a=b=c\r\na\r\n0\r\n\r\n", "|ERROR"),
    C("1 \r\na\r\n0\r\n\r\n", "|ERROR"),
    C("1 a\r\na\r\n0\r\n\r\n", "|ERROR"),
    C("1;a \r\na\r\n0\r\n\r\n", "|ERROR"),
    C("1;a=b \r\na\r\n0\r\n\r\n", "|ERROR"),
    C("1;a=\"b\" \r\na\r\n0\r\n\r\n", "|ERROR"),
    C("1;a b\r\na\r\n0\r\n\r\n", "|ERROR"),
    C("1;a=b c\r\na\r\n0\r\n\r\n", "|ERROR"),
    C("1;a=b =c\r\na\r\n0\r\n\r\n", "|ERROR"),
    C("1; \r\na\r\n0\r\n\r\n", "|ERROR"),
    C("1;a\x01\r\na\r\n0\r\n\r\n", "|ERROR"),
    C("1;a=\"b\r\na\r\n0\r\n\r\n", "|ERROR"),
    C("1;a=\"b\"c\r\na\r\n0\r\n\r\n", "|ERROR"),
    C("1;a=\"\x7f\"\r\na\r\n0\r\n\r\n", "|ERROR"),
    C("1;;a\r\na\r\n0\r\n\r\n", "|ERROR"),

    /* line ends and data */
    C("1\na\r\n0\r\n\r\n", "|ERROR"),
    C("1\r\na\n0\r\n\r\n", "a|ERROR"),
    C("1\r\nab\r\n0\r\n\r\n", "a|ERROR"),
    C("1\r\na\r\r\n0\r\n\r\n", "a|ERROR"),
    C("1\r\na\r\n0\r\n\n", "a|ERROR"),
    C("1\r\na\r\n0\n\r\n", "a|ERROR"),
    C("1\r\na\r\n0\r\n\rx", "a|ERROR"),
    C("1\r\na\r\n\r\n", "a|ERROR"),

    /* trailers: each field, its value without the surrounding OWS */
    C("0\r\nA:b\r\n\r\n", "[A=b]|DONE"),
    C("0\r\nX-Checksum:\t \tab  c\t \r\n\r\n", "[X-Checksum=ab  c]|DONE"),
    C("0\r\nA: \r\nB:\t\r\n\r\n", "[A=][B=]|DONE"),
    C("0\r\nA: \x80\xff\r\n\r\n", "[A=\x80\xff]|DONE"),
    C("0\r\nA: 1\r\nA: 2\r\nb-c!#$%&'*+.^_`|~9: x:y\r\n\r\nGET",
      "[A=1][A=2][b-c!#$%&'*+.^_`|~9=x:y]|DONE +3"),
    C("0\r\nContent-Length: 5\r\nHost: a\r\n\r\n",
      "[Content-Length=5][Host=a]|DONE"),
    C("0\r\nA: b\r\nC", "[A=b]|AGAIN"),
    C("0\r\nA: b\r\nC : d\r\n\r\n", "[A=b]|ERROR"),
    C("0\r\nA : b\r\n\r\n", "|ERROR"),
    C("0\r\n: b\r\n\r\n", "|ERROR"),
    C("0\r\nA: b\r\n c\r\n\r\n", "[A=b]|ERROR"),     /* obs-fold */
    C("0\r\nA: b\x00\r\n\r\n", "|ERROR"),
    C("0\r\nA: b\rc\r\n\r\n", "|ERROR"),
    C("0\r\nA: b\n\r\n", "|ERROR"),
    C("0\r\nAb\r\n\r\n", "|ERROR"),
};


static void trace_trailer(trace_t *t, weir_http_chunked_t *ctx,
    unsigned char *line, size_t len);


/*
 * Feeds the body in separate, exactly sized heap buffers: piece one is
 * in[0 .. split), then pieces of step bytes (step 0: the rest at once).
 * The caller's side of the contract is played here: take what WEIR_OK
 * offers and lower ctx->size, and put each trailer line together from
 * the pieces the parser points at (traced as "[name=value]", a value
 * longer than 32 bytes as "[name=#length]").
 */
static void
parse_chunked_body(const char *in, size_t n, size_t split, size_t step,
    trace_t *t)
{
    size_t                off, plen, take, done_at, consumed;
    weir_int_t            rc;
    weir_uint_t           loops;
    unsigned char        *piece;
    weir_buf_t            b;
    weir_http_chunked_t   ctx;
    off_t                 needed[512];
    size_t                at[512], nneeded, i, llen;
    unsigned char         line[9000];

    t->len = 0;
    llen = 0;
    t->buf[0] = '\0';
    weir_memzero(&ctx, sizeof(weir_http_chunked_t));

    off = 0;
    consumed = 0;
    nneeded = 0;
    done_at = 0;
    rc = WEIR_AGAIN;

    while (off < n) {
        plen = (off == 0 && split) ? split : (step ? step : n - off);

        if (plen > n - off) {
            plen = n - off;
        }

        piece = malloc(plen);

        if (piece == NULL) {
            trace_add(t, "NOMEM");
            return;
        }

        memcpy(piece, in + off, plen);
        weir_memzero(&b, sizeof(weir_buf_t));
        b.start = piece;
        b.pos = piece;
        b.last = piece + plen;
        b.end = b.last;

        for (loops = 0; loops < 2 * plen + 4; loops++) {
            rc = weir_http_parse_chunked(NULL, &b, &ctx);

            if (ctx.trailer_start) {
                if (ctx.trailer_start < piece || ctx.trailer_start > b.pos
                    || llen + (b.pos - ctx.trailer_start) > sizeof(line))
                {
                    trace_add(t, "BADTRAILER");
                    break;
                }

                memcpy(line + llen, ctx.trailer_start,
                       b.pos - ctx.trailer_start);
                llen += b.pos - ctx.trailer_start;
            }

            if (rc == WEIR_HTTP_PARSE_TRAILER) {
                trace_trailer(t, &ctx, line, llen);
                llen = 0;
                continue;
            }

            if (rc != WEIR_OK) {
                break;
            }

            if (ctx.size <= 0 || b.pos >= b.last) {
                trace_add(t, "BADOK");
                break;
            }

            take = b.last - b.pos;

            if ((off_t) take > ctx.size) {
                take = (size_t) ctx.size;
            }

            for (i = 0; i < take; i++) {
                if (b.pos[i] == '\0') {
                    trace_add(t, "\\0");

                } else {
                    trace_add(t, "%c", b.pos[i]);
                }
            }

            b.pos += take;
            ctx.size -= take;
        }

        consumed = off + (b.pos - piece);

        if (rc == WEIR_AGAIN && nneeded < 512) {
            if (b.pos != b.last) {
                trace_add(t, "BADPOS");
            }

            needed[nneeded] = ctx.length;
            at[nneeded++] = consumed;
        }

        free(piece);
        off += plen;

        if (rc != WEIR_AGAIN) {
            break;
        }
    }

    if (rc == WEIR_DONE) {
        done_at = consumed;
        trace_add(t, "|DONE");

        if (n - done_at) {
            trace_add(t, " +%lu", (unsigned long) (n - done_at));
        }

        /* ctx->length is a lower bound of what was still to come */
        for (i = 0; i < nneeded; i++) {
            if (needed[i] < 1 || (off_t) (done_at - at[i]) < needed[i]) {
                trace_add(t, " BADLENGTH(%lu:%ld)", (unsigned long) at[i],
                          (long) needed[i]);
                break;
            }
        }

        /* a finished parser stays finished */
        if (weir_http_parse_chunked(NULL, &b, &ctx) != WEIR_DONE) {
            trace_add(t, " NOTDONE");
        }

    } else if (rc == WEIR_AGAIN) {
        trace_add(t, "|AGAIN");

    } else if (rc == WEIR_ERROR) {
        trace_add(t, "|ERROR");

    } else {
        trace_add(t, "|RC%ld", (long) rc);
    }
}


static void
trace_trailer(trace_t *t, weir_http_chunked_t *ctx, unsigned char *line,
    size_t len)
{
    size_t  vlen;

    /* the offsets must lie in the line, before its CRLF */
    if (len < 4 || line[len - 2] != '\r' || line[len - 1] != '\n'
        || ctx->trailer_name_len == 0
        || ctx->trailer_name_len >= ctx->trailer_value_start
        || ctx->trailer_value_start > ctx->trailer_value_end
        || ctx->trailer_value_end > len - 2
        || line[ctx->trailer_name_len] != ':')
    {
        trace_add(t, "[BADLINE]");
        return;
    }

    vlen = ctx->trailer_value_end - ctx->trailer_value_start;

    if (vlen > 32) {
        trace_add(t, "[%.*s=#%lu]", (int) ctx->trailer_name_len,
                  (char *) line, (unsigned long) vlen);
        return;
    }

    trace_add(t, "[%.*s=%.*s]", (int) ctx->trailer_name_len, (char *) line,
              (int) vlen, (char *) line + ctx->trailer_value_start);
}


static void
check_chunked_case(const char *in, size_t len, const char *expect)
{
    size_t   k;
    trace_t  whole, part;

    parse_chunked_body(in, len, 0, 0, &whole);

    if (!WEIR_CHECK_STR(whole.buf, expect)) {
        fprintf(stderr, "    body: \"%s\"\n", in);
        return;
    }

    parse_chunked_body(in, len, 0, 1, &part);

    if (!WEIR_CHECK_STR(part.buf, whole.buf)) {
        fprintf(stderr, "    byte by byte, body: \"%s\"\n", in);
        return;
    }

    for (k = 1; k < len; k++) {
        parse_chunked_body(in, len, k, 0, &part);

        if (!WEIR_CHECK_STR(part.buf, whole.buf)) {
            fprintf(stderr, "    split at %lu, body: \"%s\"\n",
                    (unsigned long) k, in);
            return;
        }
    }
}


WEIR_UNIT_TEST(http_parse_chunked)
{
    size_t          i;
    chunked_case_t  *cc;

    for (i = 0; i < sizeof(chunked_cases) / sizeof(chunked_cases[0]); i++) {
        cc = &chunked_cases[i];
        check_chunked_case(cc->in, cc->len, cc->trace);
    }
}


/* fills a body of generated text and checks it */
static void
check_chunked_generated(const char *prefix, const char *unit, size_t times,
    const char *suffix, const char *expect)
{
    char    *in;
    size_t   len, plen, ulen, slen, i;
    trace_t  t;

    plen = strlen(prefix);
    ulen = strlen(unit);
    slen = strlen(suffix);
    len = plen + ulen * times + slen;

    in = malloc(len + 1);

    if (!WEIR_CHECK(in != NULL)) {
        return;
    }

    memcpy(in, prefix, plen);

    for (i = 0; i < times; i++) {
        memcpy(in + plen + i * ulen, unit, ulen);
    }

    memcpy(in + plen + ulen * times, suffix, slen);
    in[len] = '\0';

    parse_chunked_body(in, len, 0, 0, &t);
    WEIR_CHECK_STR(t.buf, expect);

    parse_chunked_body(in, len, 0, 1, &t);
    WEIR_CHECK_STR(t.buf, expect);

    free(in);
}


WEIR_UNIT_TEST(http_parse_chunked_limits)
{
    size_t  i;
    char    expect[5 * 64 + 8];

    /* 256 extension bytes, counted from the ';' up to the CR */
    check_chunked_generated("1;", "a", 255, "\r\nx\r\n0\r\n\r\n", "x|DONE");
    check_chunked_generated("1;", "a", 256, "\r\nx\r\n0\r\n\r\n", "|ERROR");
    check_chunked_generated("0", ";a", 128, "\r\n\r\n", "|DONE");
    check_chunked_generated("0", ";a", 129, "\r\n\r\n", "|ERROR");

    /* the cap is per chunk */
    check_chunked_generated("", "1;aaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\nx\r\n", 40,
                            "0\r\n\r\n",
                            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx|DONE");

    /* 64 trailer fields, each one returned */
    for (i = 0; i < 64; i++) {
        memcpy(expect + 5 * i, "[A=b]", 5);
    }

    memcpy(expect + 5 * 64, "|DONE", sizeof("|DONE"));
    check_chunked_generated("0\r\n", "A: b\r\n", 64, "\r\n", expect);

    memcpy(expect + 5 * 64, "|ERROR", sizeof("|ERROR"));
    check_chunked_generated("0\r\n", "A: b\r\n", 65, "\r\n", expect);

    /* 8 KiB of trailer field lines, CRLF included */
    check_chunked_generated("0\r\nA: ", "b", 8187, "\r\n\r\n",
                            "[A=#8187]|DONE");
    check_chunked_generated("0\r\nA: ", "b", 8188, "\r\n\r\n", "|ERROR");
}


WEIR_UNIT_TEST(http_parse_underscores)
{
    trace_t  t;

    static const char  in[] = "GET / HTTP/1.1\r\nX_Y: 1\r\n\r\n";

    parse_head(in, sizeof(in) - 1, 0, 0, 1, 0, &t);
    WEIR_CHECK_STR(t.buf, "m=2 u=/ v=1001; X_Y=1; DONE");

    parse_head(in, sizeof(in) - 1, 0, 1, 1, 0, &t);
    WEIR_CHECK_STR(t.buf, "m=2 u=/ v=1001; X_Y=1; DONE");
}


typedef struct {
    const char   *in;
    weir_int_t    rc;
    weir_uint_t   code;
    weir_uint_t   version;
    const char   *line;
    weir_uint_t   strict;       /* r->strict_line_endings */
} status_case_t;


static status_case_t  status_cases[] = {
    { "HTTP/1.1 200 OK\r\n", WEIR_OK, 200, 1001, "HTTP/1.1 200 OK", 0 },
    { "HTTP/1.0 404 Not Found\r\nX", WEIR_OK, 404, 1000,
      "HTTP/1.0 404 Not Found", 0 },
    { "HTTP/1.1 204\r\n", WEIR_OK, 204, 1001, "HTTP/1.1 204", 0 },
    { "HTTP/1.1 200 \r\n", WEIR_OK, 200, 1001, "HTTP/1.1 200 ", 0 },
    { "HTTP/1.1 999 \xc3\xa9\tx\r\n", WEIR_OK, 999, 1001,
      "HTTP/1.1 999 \xc3\xa9\tx", 0 },
    { "HTTP/1.1 100 Continue\r\n", WEIR_OK, 100, 1001,
      "HTTP/1.1 100 Continue", 0 },
    { "HTTP/1.1 200 OK", WEIR_AGAIN, 0, 0, NULL, 0 },
    { "HTTP/1.1 099 X\r\n", WEIR_ERROR, 0, 0, NULL, 0 },
    { "HTTP/1.1 20 X\r\n", WEIR_ERROR, 0, 0, NULL, 0 },
    { "HTTP/1.1 2000 X\r\n", WEIR_ERROR, 0, 0, NULL, 0 },
    { "HTTP/2.0 200 OK\r\n", WEIR_ERROR, 0, 0, NULL, 0 },
    { "HTTP/1.1  200 OK\r\n", WEIR_ERROR, 0, 0, NULL, 0 },
    { "http/1.1 200 OK\r\n", WEIR_ERROR, 0, 0, NULL, 0 },
    { "HTTP/1.1 200 OK\n", WEIR_OK, 200, 1001, "HTTP/1.1 200 OK", 0 },
    { "HTTP/1.1 204\nX", WEIR_OK, 204, 1001, "HTTP/1.1 204", 0 },
    { "HTTP/1.1 200 OK\n", WEIR_ERROR, 0, 0, NULL, 1 },
    { "HTTP/1.1 204\n", WEIR_ERROR, 0, 0, NULL, 1 },
    { "HTTP/1.1 200 OK\r\n", WEIR_OK, 200, 1001, "HTTP/1.1 200 OK", 1 },
    { "HTTP/1.1 200 O\x01K\r\n", WEIR_ERROR, 0, 0, NULL, 0 },
    { "HTTP/1.1 200 OK\rX\n", WEIR_ERROR, 0, 0, NULL, 0 },
    { "HTTP/1.1 200 OK\r\r\n", WEIR_ERROR, 0, 0, NULL, 0 },
    { "HTTP/1.1 204\rX", WEIR_ERROR, 0, 0, NULL, 0 },
    { "<html>", WEIR_ERROR, 0, 0, NULL, 0 },
};


static weir_int_t
parse_status(const char *in, size_t n, size_t step, weir_http_status_t *st,
    weir_http_request_t *r, weir_uint_t strict)
{
    unsigned char  *data;
    weir_int_t      rc;
    weir_buf_t      b;

    data = malloc(n);

    if (data == NULL) {
        return -100;
    }

    memcpy(data, in, n);
    weir_memzero(r, sizeof(weir_http_request_t));
    r->strict_line_endings = strict ? 1 : 0;
    weir_memzero(st, sizeof(weir_http_status_t));
    weir_memzero(&b, sizeof(weir_buf_t));

    b.pos = data;
    b.start = data;
    b.end = data + n;
    b.last = step ? data + step : b.end;

    for ( ;; ) {
        rc = weir_http_parse_status_line(r, &b, st);

        if (rc != WEIR_AGAIN || b.last == b.end) {
            break;
        }

        b.last += step;

        if (b.last > b.end) {
            b.last = b.end;
        }
    }

    if (rc == WEIR_OK) {
        /* the line is checked here, while the buffer still exists */
        rc = (st->start == data && (size_t) (st->end - st->start) < n)
             ? WEIR_OK : -101;
    }

    free(data);

    return rc;
}


WEIR_UNIT_TEST(http_parse_status_line)
{
    size_t                i, n, step;
    weir_int_t            rc;
    status_case_t        *sc;
    weir_http_status_t    st;
    weir_http_request_t  *r;

    r = calloc(1, sizeof(weir_http_request_t));
    WEIR_REQUIRE(r != NULL);

    for (i = 0; i < sizeof(status_cases) / sizeof(status_cases[0]); i++) {
        sc = &status_cases[i];
        n = strlen(sc->in);

        for (step = 0; step < 3; step++) {
            rc = parse_status(sc->in, n, step, &st, r, sc->strict);

            if (!WEIR_CHECK_INT(rc, sc->rc)) {
                fprintf(stderr, "    line: \"%s\", step %lu\n", sc->in,
                        (unsigned long) step);
                continue;
            }

            if (rc != WEIR_OK) {
                continue;
            }

            WEIR_CHECK_INT(st.code, sc->code);
            WEIR_CHECK_INT(st.http_version, sc->version);
            WEIR_CHECK_INT(r->http_version, sc->version);
            WEIR_CHECK_INT(st.end - st.start, strlen(sc->line));
        }
    }

    free(r);
}


static weir_int_t
unsafe_uri(const char *text, weir_str_t *uri, weir_str_t *args)
{
    weir_uint_t  flags;

    flags = 0;
    uri->len = strlen(text);
    uri->data = (unsigned char *) text;

    return weir_http_parse_unsafe_uri(NULL, uri, args, &flags);
}


WEIR_UNIT_TEST(http_parse_unsafe_uri)
{
    weir_str_t  uri, args;

    WEIR_CHECK_INT(unsafe_uri("/a/b", &uri, &args), WEIR_OK);
    WEIR_CHECK_MEM(uri.data, uri.len, "/a/b");
    WEIR_CHECK_INT(args.len, 0);

    WEIR_CHECK_INT(unsafe_uri("/a?x=/../y", &uri, &args), WEIR_OK);
    WEIR_CHECK_MEM(uri.data, uri.len, "/a");
    WEIR_CHECK_MEM(args.data, args.len, "x=/../y");

    WEIR_CHECK_INT(unsafe_uri("/", &uri, &args), WEIR_OK);
    WEIR_CHECK_INT(unsafe_uri("/...", &uri, &args), WEIR_OK);
    WEIR_CHECK_INT(unsafe_uri("/a..b/.c", &uri, &args), WEIR_OK);
    WEIR_CHECK_INT(unsafe_uri("/%2e%2ex", &uri, &args), WEIR_OK);

    WEIR_CHECK_INT(unsafe_uri("", &uri, &args), WEIR_ERROR);
    WEIR_CHECK_INT(unsafe_uri("a/b", &uri, &args), WEIR_ERROR);
    WEIR_CHECK_INT(unsafe_uri("/..", &uri, &args), WEIR_ERROR);
    WEIR_CHECK_INT(unsafe_uri("/a/../b", &uri, &args), WEIR_ERROR);
    WEIR_CHECK_INT(unsafe_uri("/a/./b", &uri, &args), WEIR_ERROR);
    WEIR_CHECK_INT(unsafe_uri("/a/.", &uri, &args), WEIR_ERROR);
    WEIR_CHECK_INT(unsafe_uri("/a/..?x", &uri, &args), WEIR_ERROR);
    WEIR_CHECK_INT(unsafe_uri("/a/%2E%2e/b", &uri, &args), WEIR_ERROR);
    WEIR_CHECK_INT(unsafe_uri("/a/.%2e", &uri, &args), WEIR_ERROR);

    uri.data = (unsigned char *) "/a\0b";
    uri.len = 4;
    WEIR_CHECK_INT(weir_http_parse_unsafe_uri(NULL, &uri, &args, NULL),
                   WEIR_ERROR);
}


WEIR_UNIT_TEST(http_parse_arg)
{
    weir_str_t            value;
    weir_http_request_t  *r;

    r = calloc(1, sizeof(weir_http_request_t));
    WEIR_REQUIRE(r != NULL);

    weir_str_set(&r->args, "a=1&bb=22&c&D=%20&a=2&=x&e=");

    WEIR_CHECK_INT(weir_http_arg(r, (unsigned char *) "a", 1, &value),
                   WEIR_OK);
    WEIR_CHECK_MEM(value.data, value.len, "1");

    WEIR_CHECK_INT(weir_http_arg(r, (unsigned char *) "bb", 2, &value),
                   WEIR_OK);
    WEIR_CHECK_MEM(value.data, value.len, "22");

    WEIR_CHECK_INT(weir_http_arg(r, (unsigned char *) "c", 1, &value),
                   WEIR_OK);
    WEIR_CHECK_INT(value.len, 0);

    WEIR_CHECK_INT(weir_http_arg(r, (unsigned char *) "d", 1, &value),
                   WEIR_OK);
    WEIR_CHECK_MEM(value.data, value.len, "%20");

    WEIR_CHECK_INT(weir_http_arg(r, (unsigned char *) "e", 1, &value),
                   WEIR_OK);
    WEIR_CHECK_INT(value.len, 0);

    WEIR_CHECK_INT(weir_http_arg(r, (unsigned char *) "b", 1, &value),
                   WEIR_DECLINED);
    WEIR_CHECK_INT(weir_http_arg(r, (unsigned char *) "x", 1, &value),
                   WEIR_DECLINED);

    r->args.len = 0;
    WEIR_CHECK_INT(weir_http_arg(r, (unsigned char *) "a", 1, &value),
                   WEIR_DECLINED);

    free(r);
}
