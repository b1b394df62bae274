#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"


/*
 * The HTTP/1 parsers. Every function here is a state machine that reads
 * the bytes b->pos .. b->last once, never looks past b->last, and keeps
 * what it needs to resume in r->state (or the chunked context) and in
 * pointers into the buffer. The caller keeps a request head in one
 * buffer (moving it to a larger one moves the pointers too), so a
 * pointer saved on an earlier call still points at the same bytes.
 *
 * The request line, header lines and the status line end with CRLF or,
 * unless r->strict_line_endings is set, with a bare LF (RFC 9112 2.2);
 * a CR not followed by LF is always an error. Chunk-size lines, the CRLF
 * after chunk data and trailer lines take CRLF only: that is where two
 * parsers that disagree on a line end disagree on where a body ends
 * (docs/http/parser.md says why).
 */


/* character classes, one bit each, looked up by byte value */
#define WEIR_HTTP_C_TCHAR    0x01   /* token character (RFC 9110 tchar) */
#define WEIR_HTTP_C_VALUE    0x02   /* VCHAR / obs-text (field value) */
#define WEIR_HTTP_C_PATH     0x04   /* allowed in the path of a target */
#define WEIR_HTTP_C_HOST     0x08   /* reg-name of an authority */
#define WEIR_HTTP_C_HEX      0x10
#define WEIR_HTTP_C_SCHEME   0x20   /* ALPHA / DIGIT / "+" / "-" / "." */
#define WEIR_HTTP_C_QDTEXT   0x40   /* quoted-string text, no '"' '\' */

#define weir_http_is(c, cls)  (weir_http_char_class[(c)] & (cls))


static uint8_t  weir_http_char_class[256];
static weir_uint_t  weir_http_char_class_ready;

static weir_str_t  weir_http_root_uri = weir_string("/");


static weir_uint_t weir_http_check_method(unsigned char *start,
    unsigned char *end);
static weir_int_t weir_http_check_schema(unsigned char *start,
    unsigned char *end);
static weir_int_t weir_http_check_port(unsigned char *start,
    unsigned char *end);
static void weir_http_request_line_done(weir_http_request_t *r);
static off_t weir_http_chunked_min_length(weir_http_chunked_t *ctx);
static weir_int_t weir_http_hex(unsigned char c);


/*
 * The table is built on first use instead of being written out: it is
 * derived from the grammar's character sets below, which are easier to
 * check than 256 numbers. Building it twice (two threads) is harmless:
 * both write the same values.
 */
static void
weir_http_init_char_class(void)
{
    weir_uint_t     c;
    uint8_t         m;
    const char     *s;

    static const char  tchar_extra[] = "!#$%&'*+-.^_`|~";
    /* sub-delims and the rest of pchar; '%' is handled by the states */
    static const char  path_extra[] = "-._~!$&'()*+,;=:@%"
                                      "\"<>\\^`{|}[]";
    static const char  host_extra[] = "-._~!$&'()*+,;=%";

    for (c = 0; c < 256; c++) {
        m = 0;

        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
            || (c >= '0' && c <= '9'))
        {
            m |= WEIR_HTTP_C_TCHAR | WEIR_HTTP_C_PATH | WEIR_HTTP_C_HOST
                 | WEIR_HTTP_C_SCHEME;
        }

        if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')
            || (c >= 'A' && c <= 'F'))
        {
            m |= WEIR_HTTP_C_HEX;
        }

        if ((c > 0x20 && c < 0x7f) || c >= 0x80) {
            m |= WEIR_HTTP_C_VALUE;
        }

        /* raw UTF-8 in paths is common in practice: accepted as opaque */
        if (c >= 0x80) {
            m |= WEIR_HTTP_C_PATH;
        }

        if (c == '\t' || c == ' ' || c == 0x21 || (c >= 0x23 && c <= 0x5b)
            || (c >= 0x5d && c <= 0x7e) || c >= 0x80)
        {
            m |= WEIR_HTTP_C_QDTEXT;
        }

        weir_http_char_class[c] = m;
    }

    for (s = tchar_extra; *s; s++) {
        weir_http_char_class[(unsigned char) *s] |= WEIR_HTTP_C_TCHAR;
    }

    for (s = path_extra; *s; s++) {
        weir_http_char_class[(unsigned char) *s] |= WEIR_HTTP_C_PATH;
    }

    for (s = host_extra; *s; s++) {
        weir_http_char_class[(unsigned char) *s] |= WEIR_HTTP_C_HOST;
    }

    weir_http_char_class['+'] |= WEIR_HTTP_C_SCHEME;
    weir_http_char_class['-'] |= WEIR_HTTP_C_SCHEME;
    weir_http_char_class['.'] |= WEIR_HTTP_C_SCHEME;

    weir_http_char_class_ready = 1;
}


#define weir_http_char_class_init()                                           \
    if (!weir_http_char_class_ready) {                                        \
        weir_http_init_char_class();                                          \
    }


enum {
    sw_rl_start = 0,
    sw_rl_start_lf,
    sw_rl_method,
    sw_rl_target,
    sw_rl_schema,
    sw_rl_schema_slash,
    sw_rl_schema_slash_slash,
    sw_rl_host_start,
    sw_rl_host,
    sw_rl_host_ip_literal,
    sw_rl_host_end,
    sw_rl_port,
    sw_rl_asterisk,
    sw_rl_after_slash,
    sw_rl_path,
    sw_rl_args,
    sw_rl_fragment,
    sw_rl_http_H,
    sw_rl_http_HT,
    sw_rl_http_HTT,
    sw_rl_http_HTTP,
    sw_rl_http_slash,
    sw_rl_major,
    sw_rl_dot,
    sw_rl_minor,
    sw_rl_cr,
    sw_rl_lf
};


/*
 * request-line = method SP request-target SP HTTP-version CRLF
 *
 * Empty lines (CRLF) before the request line are skipped (RFC 9112
 * 2.2). The target is origin-form, absolute-form (http or https),
 * authority-form for CONNECT only (uri_start .. uri_end then hold
 * "host:port") or "*" for OPTIONS only. A fragment ("#..." after the
 * path or the query) is checked and dropped: uri_end is where it
 * starts, so nothing after the '#' reaches r->uri, r->args,
 * r->unparsed_uri or an origin.
 */
weir_int_t
weir_http_parse_request_line(weir_http_request_t *r, weir_buf_t *b)
{
    unsigned char  c, *p;
    weir_uint_t    state;

    weir_http_char_class_init();

    state = r->state;

    for (p = b->pos; p < b->last; p++) {
        c = *p;

        switch (state) {

        case sw_rl_start:
            if (c == '\r') {
                state = sw_rl_start_lf;
                break;
            }

            if (c == '\n' && !r->strict_line_endings) {
                /* an empty line ended by a bare LF */
                break;
            }

            if (!weir_http_is(c, WEIR_HTTP_C_TCHAR)) {
                goto invalid_method;
            }

            r->request_start = p;
            state = sw_rl_method;
            break;

        case sw_rl_start_lf:
            if (c != '\n') {
                goto invalid;
            }

            state = sw_rl_start;
            break;

        case sw_rl_method:
            if (weir_http_is(c, WEIR_HTTP_C_TCHAR)) {
                break;
            }

            if (c != ' ') {
                goto invalid_method;
            }

            r->method_end = p;
            r->method = weir_http_check_method(r->request_start, p);
            state = sw_rl_target;
            break;

        case sw_rl_target:
            if (r->method == WEIR_HTTP_CONNECT) {
                /* authority-form: host ":" port, nothing else */
                r->uri_start = p;
                r->host_start = p;

                if (c == '[') {
                    state = sw_rl_host_ip_literal;
                    break;
                }

                if (!weir_http_is(c, WEIR_HTTP_C_HOST)) {
                    goto invalid;
                }

                state = sw_rl_host;
                break;
            }

            if (c == '/') {
                r->uri_start = p;
                state = sw_rl_after_slash;
                break;
            }

            if (c == '*') {
                if (r->method != WEIR_HTTP_OPTIONS) {
                    goto invalid;
                }

                r->uri_start = p;
                state = sw_rl_asterisk;
                break;
            }

            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
                r->schema_start = p;
                state = sw_rl_schema;
                break;
            }

            goto invalid;

        case sw_rl_schema:
            if (weir_http_is(c, WEIR_HTTP_C_SCHEME)) {
                break;
            }

            if (c != ':'
                || weir_http_check_schema(r->schema_start, p) != WEIR_OK)
            {
                goto invalid;
            }

            r->schema_end = p;
            state = sw_rl_schema_slash;
            break;

        case sw_rl_schema_slash:
            if (c != '/') {
                goto invalid;
            }

            state = sw_rl_schema_slash_slash;
            break;

        case sw_rl_schema_slash_slash:
            if (c != '/') {
                goto invalid;
            }

            state = sw_rl_host_start;
            break;

        case sw_rl_host_start:
            r->host_start = p;

            if (c == '[') {
                state = sw_rl_host_ip_literal;
                break;
            }

            /* an empty host and userinfo ('@' is not a host char) */
            if (!weir_http_is(c, WEIR_HTTP_C_HOST)) {
                goto invalid;
            }

            state = sw_rl_host;
            break;

        case sw_rl_host:
            if (weir_http_is(c, WEIR_HTTP_C_HOST)) {
                break;
            }

            r->host_end = p;
            goto host_end;

        case sw_rl_host_ip_literal:
            if (weir_http_is(c, WEIR_HTTP_C_HEX) || c == ':' || c == '.') {
                break;
            }

            if (c != ']' || p - r->host_start < 3) {
                goto invalid;
            }

            r->host_end = p + 1;
            state = sw_rl_host_end;
            break;

        case sw_rl_host_end:
            goto host_end;

        case sw_rl_port:
            if (c >= '0' && c <= '9') {
                if (p - r->port_start >= 5) {
                    goto invalid;
                }

                break;
            }

            if (p == r->port_start && r->method != WEIR_HTTP_CONNECT) {
                /* "http://host:/": an empty port is no port (RFC 3986
                 * 3.2.3 and 6.2.3), so the authority is "host" */
                r->port_start = NULL;
                goto after_authority;
            }

            if (weir_http_check_port(r->port_start, p) != WEIR_OK) {
                goto invalid;
            }

            r->port_end = p;

            if (r->method == WEIR_HTTP_CONNECT) {
                if (c != ' ') {
                    goto invalid;
                }

                r->uri_end = p;
                state = sw_rl_http_H;
                break;
            }

            goto after_authority;

        case sw_rl_asterisk:
            if (c != ' ') {
                goto invalid;
            }

            r->uri_end = p;
            state = sw_rl_http_H;
            break;

        case sw_rl_after_slash:
            /* "//", "/." and "/.." need the normalizer */
            if (c == '/' || c == '.') {
                r->complex_uri = 1;
            }

            state = sw_rl_path;

            /* fall through */

        case sw_rl_path:
            switch (c) {
            case '/':
                r->uri_ext = NULL;
                state = sw_rl_after_slash;
                break;
            case '.':
                r->uri_ext = p + 1;
                break;
            case '%':
                r->quoted_uri = 1;
                r->complex_uri = 1;
                break;
            case '+':
                r->plus_in_uri = 1;
                break;
            case '?':
                r->args_start = p + 1;
                state = sw_rl_args;
                break;
            case '#':
                r->uri_end = p;
                state = sw_rl_fragment;
                break;
            case ' ':
                r->uri_end = p;
                state = sw_rl_http_H;
                break;
            default:
                if (!weir_http_is(c, WEIR_HTTP_C_PATH)) {
                    goto invalid;
                }
            }

            break;

        case sw_rl_args:
            if (c == ' ') {
                r->uri_end = p;
                state = sw_rl_http_H;
                break;
            }

            if (c == '#') {
                r->uri_end = p;
                state = sw_rl_fragment;
                break;
            }

            /* the args are kept as received: '%' is not checked here */
            if (c == '?' || c == '/' || weir_http_is(c, WEIR_HTTP_C_PATH)) {
                break;
            }

            goto invalid;

        case sw_rl_fragment:
            /*
             * RFC 9112 3.2: a target has no fragment, but clients send
             * one (nginx takes it): the query's characters (and '#',
             * which nothing after the first one reads), never CTLs or
             * a space inside
             */
            if (c == ' ') {
                state = sw_rl_http_H;
                break;
            }

            if (c == '?' || c == '/' || c == '#'
                || weir_http_is(c, WEIR_HTTP_C_PATH))
            {
                break;
            }

            goto invalid;

        case sw_rl_http_H:
            if (c != 'H') {
                goto invalid;
            }

            state = sw_rl_http_HT;
            break;

        case sw_rl_http_HT:
            if (c != 'T') {
                goto invalid;
            }

            state = sw_rl_http_HTT;
            break;

        case sw_rl_http_HTT:
            if (c != 'T') {
                goto invalid;
            }

            state = sw_rl_http_HTTP;
            break;

        case sw_rl_http_HTTP:
            if (c != 'P') {
                goto invalid;
            }

            state = sw_rl_http_slash;
            break;

        case sw_rl_http_slash:
            if (c != '/') {
                goto invalid;
            }

            state = sw_rl_major;
            break;

        case sw_rl_major:
            if (c < '0' || c > '9') {
                goto invalid;
            }

            r->http_major = c - '0';

            /* HTTP/0.9 and HTTP/0.x do not exist on this parser */
            if (r->http_major == 0) {
                goto invalid;
            }

            state = sw_rl_dot;
            break;

        case sw_rl_dot:
            if (c != '.') {
                goto invalid;
            }

            state = sw_rl_minor;
            break;

        case sw_rl_minor:
            if (c < '0' || c > '9') {
                goto invalid;
            }

            r->http_minor = c - '0';
            state = sw_rl_cr;
            break;

        case sw_rl_cr:
            if (c == '\n' && !r->strict_line_endings) {
                r->request_end = p;
                goto request_line_done;
            }

            if (c != '\r') {
                goto invalid;
            }

            r->request_end = p;
            state = sw_rl_lf;
            break;

        case sw_rl_lf:
            if (c != '\n') {
                goto invalid;
            }

        request_line_done:

            b->pos = p + 1;
            r->state = sw_rl_start;
            weir_http_request_line_done(r);

            if (r->http_major > 1) {
                return WEIR_HTTP_PARSE_INVALID_VERSION;
            }

            return WEIR_OK;

        default:
            goto invalid;
        }

        continue;

    host_end:

        /* after the host of an absolute-form or authority-form target */

        if (c == ':') {
            r->port_start = p + 1;
            state = sw_rl_port;
            continue;
        }

        if (r->method == WEIR_HTTP_CONNECT) {
            /* the port is required */
            goto invalid;
        }

    after_authority:

        /* after the host or the port of an absolute-form target */

        if (c == '/') {
            r->uri_start = p;
            state = sw_rl_after_slash;
            continue;
        }

        if (c == '?') {
            /* "http://host?a": the path is "/" (RFC 9112 3.2.2), the
             * query "a"; r->unparsed_uri is "?a" as in nginx */
            r->empty_path_in_uri = 1;
            r->uri_start = p;
            r->args_start = p + 1;
            state = sw_rl_args;
            continue;
        }

        if (c != ' ' && c != '#') {
            goto invalid;
        }

        /* "http://host HTTP/1.1": the path is "/" */
        r->empty_path_in_uri = 1;
        r->uri_start = p;
        r->uri_end = p;
        state = (c == ' ') ? sw_rl_http_H : sw_rl_fragment;
    }

    b->pos = p;
    r->state = state;

    return WEIR_AGAIN;

invalid_method:

    b->pos = p;
    r->state = sw_rl_start;

    return WEIR_HTTP_PARSE_INVALID_METHOD;

invalid:

    b->pos = p;
    r->state = sw_rl_start;

    return WEIR_HTTP_PARSE_INVALID_REQUEST;
}


static weir_uint_t
weir_http_check_method(unsigned char *start, unsigned char *end)
{
    size_t       len;
    weir_uint_t  i;

    static const struct {
        const char    *name;
        size_t         len;
        weir_uint_t    method;
    } methods[] = {
        { "GET", 3, WEIR_HTTP_GET },
        { "HEAD", 4, WEIR_HTTP_HEAD },
        { "POST", 4, WEIR_HTTP_POST },
        { "PUT", 3, WEIR_HTTP_PUT },
        { "DELETE", 6, WEIR_HTTP_DELETE },
        { "OPTIONS", 7, WEIR_HTTP_OPTIONS },
        { "PATCH", 5, WEIR_HTTP_PATCH },
        { "TRACE", 5, WEIR_HTTP_TRACE },
        { "CONNECT", 7, WEIR_HTTP_CONNECT },
    };

    len = end - start;

    /* method names are case-sensitive (RFC 9110 9.1) */
    for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
        if (methods[i].len == len
            && memcmp(start, methods[i].name, len) == 0)
        {
            return methods[i].method;
        }
    }

    return WEIR_HTTP_UNKNOWN;
}


static weir_int_t
weir_http_check_schema(unsigned char *start, unsigned char *end)
{
    size_t  len;

    len = end - start;

    if (len == 4 && weir_strncasecmp(start, (unsigned char *) "http", 4) == 0)
    {
        return WEIR_OK;
    }

    if (len == 5
        && weir_strncasecmp(start, (unsigned char *) "https", 5) == 0)
    {
        return WEIR_OK;
    }

    return WEIR_ERROR;
}


static weir_int_t
weir_http_check_port(unsigned char *start, unsigned char *end)
{
    weir_uint_t  port;

    if (start == end) {
        return WEIR_ERROR;
    }

    port = 0;

    while (start < end) {
        port = port * 10 + (*start++ - '0');
    }

    return (port > 0 && port <= 65535) ? WEIR_OK : WEIR_ERROR;
}


static void
weir_http_request_line_done(weir_http_request_t *r)
{
    r->http_version = r->http_major * 1000 + r->http_minor;

    r->request_line.data = r->request_start;
    r->request_line.len = r->request_end - r->request_start;

    r->method_name.data = r->request_start;
    r->method_name.len = r->method_end - r->request_start;

    r->unparsed_uri.data = r->uri_start;
    r->unparsed_uri.len = r->uri_end - r->uri_start;

    /* "HTTP/x.y" ends the line; a dropped fragment may follow uri_end */
    r->http_protocol.len = sizeof("HTTP/1.1") - 1;
    r->http_protocol.data = r->request_end - r->http_protocol.len;

    if (r->args_start) {
        r->args.data = r->args_start;
        r->args.len = r->uri_end - r->args_start;
    }

    if (r->uri_ext && r->uri_ext == (r->args_start ? r->args_start - 1
                                                   : r->uri_end))
    {
        /* a name ending with "." has no extension */
        r->uri_ext = NULL;
    }
}


enum {
    sw_hl_start = 0,
    sw_hl_name,
    sw_hl_space_before_value,
    sw_hl_value,
    sw_hl_space_after_value,
    sw_hl_lf,
    sw_hl_done_lf
};


/*
 * field-line = field-name ":" OWS field-value OWS CRLF
 *
 * Returns WEIR_OK with the name in header_name_start .. header_name_end,
 * the value (without surrounding whitespace) in header_start ..
 * header_end, the hash of the lowercased name in r->header_hash and the
 * first 32 lowercased bytes in r->lowcase_header (r->lowcase_index bytes;
 * a longer name is hashed whole, the caller lowercases it itself).
 * An underscore in the name sets r->invalid_header unless allowed.
 */
weir_int_t
weir_http_parse_header_line(weir_http_request_t *r, weir_buf_t *b,
    weir_uint_t allow_underscores)
{
    unsigned char  c, ch, *p;
    weir_uint_t    state, hash, i;

    weir_http_char_class_init();

    state = r->state;
    hash = r->header_hash;
    i = r->lowcase_index;

    for (p = b->pos; p < b->last; p++) {
        ch = *p;

        switch (state) {

        case sw_hl_start:
            r->header_name_start = p;
            r->invalid_header = 0;

            if (ch == '\r') {
                r->header_end = p;
                state = sw_hl_done_lf;
                break;
            }

            if (ch == '\n' && !r->strict_line_endings) {
                r->header_end = p;
                goto header_done;
            }

            /* obs-fold, or whitespace before the first field name */
            if (!weir_http_is(ch, WEIR_HTTP_C_TCHAR)) {
                goto invalid;
            }

            hash = 0;
            i = 0;
            state = sw_hl_name;

            /* fall through */

        case sw_hl_name:
            /* the whole name in this loop, not one byte per switch pass */
            while (weir_http_is(ch, WEIR_HTTP_C_TCHAR)) {
                c = weir_tolower(ch);
                hash = weir_hash(hash, c);

                if (i < sizeof(r->lowcase_header)) {
                    r->lowcase_header[i++] = c;
                }

                if (ch == '_' && !allow_underscores) {
                    r->invalid_header = 1;
                }

                if (++p == b->last) {
                    goto again;
                }

                ch = *p;
            }

            /* includes whitespace before the colon (RFC 9112 5.1) */
            if (ch != ':') {
                goto invalid;
            }

            r->header_name_end = p;
            state = sw_hl_space_before_value;
            break;

        case sw_hl_space_before_value:
            if (ch == ' ' || ch == '\t') {
                break;
            }

            if (ch == '\r') {
                r->header_start = p;
                r->header_end = p;
                state = sw_hl_lf;
                break;
            }

            if (ch == '\n' && !r->strict_line_endings) {
                r->header_start = p;
                r->header_end = p;
                goto line_done;
            }

            if (!weir_http_is(ch, WEIR_HTTP_C_VALUE)) {
                goto invalid;
            }

            r->header_start = p;
            state = sw_hl_value;
            break;

        case sw_hl_value:
            while (weir_http_is(ch, WEIR_HTTP_C_VALUE)) {
                if (++p == b->last) {
                    goto again;
                }

                ch = *p;
            }

            if (ch == ' ' || ch == '\t') {
                r->header_end = p;
                state = sw_hl_space_after_value;
                break;
            }

            if (ch == '\r') {
                r->header_end = p;
                state = sw_hl_lf;
                break;
            }

            if (ch == '\n' && !r->strict_line_endings) {
                r->header_end = p;
                goto line_done;
            }

            goto invalid;

        case sw_hl_space_after_value:
            if (ch == ' ' || ch == '\t') {
                break;
            }

            if (ch == '\r') {
                state = sw_hl_lf;
                break;
            }

            if (ch == '\n' && !r->strict_line_endings) {
                goto line_done;
            }

            if (!weir_http_is(ch, WEIR_HTTP_C_VALUE)) {
                goto invalid;
            }

            state = sw_hl_value;
            break;

        case sw_hl_lf:
            if (ch != '\n') {
                goto invalid;
            }

        line_done:

            b->pos = p + 1;
            r->state = sw_hl_start;
            r->header_hash = hash;
            r->lowcase_index = i;

            return WEIR_OK;

        case sw_hl_done_lf:
            if (ch != '\n') {
                goto invalid;
            }

        header_done:

            b->pos = p + 1;
            r->state = sw_hl_start;

            return WEIR_HTTP_PARSE_HEADER_DONE;

        default:
            goto invalid;
        }
    }

again:

    b->pos = p;
    r->state = state;
    r->header_hash = hash;
    r->lowcase_index = i;

    return WEIR_AGAIN;

invalid:

    b->pos = p;
    r->state = sw_hl_start;
    r->header_end = p;

    return WEIR_HTTP_PARSE_INVALID_HEADER;
}


/*
 * Decodes the path of the target (uri_start up to the '?' of the args or
 * uri_end) into r->uri.data, then removes "." and ".." segments from the
 * decoded path, so that "%2e%2e" and "%2F" are treated as the file
 * system will see them. The args stay as received in r->args.
 */
weir_int_t
weir_http_parse_complex_uri(weir_http_request_t *r, weir_uint_t merge_slashes)
{
    unsigned char  *p, *end, *d, *u, *seg;
    size_t          n, w, i, j, k;
    weir_int_t      hi, lo;

    p = r->uri_start;
    end = r->args_start ? r->args_start - 1 : r->uri_end;

    if (r->args_start) {
        r->args.data = r->args_start;
        r->args.len = r->uri_end - r->args_start;

    } else {
        r->args.len = 0;
        r->args.data = NULL;
    }

    r->exten.len = 0;
    r->exten.data = NULL;

    if (p == end) {
        /* absolute-form without a path */
        r->uri = weir_http_root_uri;
        return WEIR_OK;
    }

    if (*p != '/') {
        return WEIR_HTTP_PARSE_INVALID_REQUEST;
    }

    u = r->uri.data;
    d = u;

    while (p < end) {
        if (*p != '%') {
            *d++ = *p++;
            continue;
        }

        if (end - p < 3) {
            return WEIR_HTTP_PARSE_INVALID_REQUEST;
        }

        hi = weir_http_hex(p[1]);
        lo = weir_http_hex(p[2]);

        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
            return WEIR_HTTP_PARSE_INVALID_REQUEST;
        }

        *d++ = (unsigned char) (hi * 16 + lo);
        p += 3;
    }

    n = d - u;

    /*
     * RFC 3986 5.2.4 on the decoded path, in place: the output never
     * grows past the input read so far. i reads a segment starting at
     * its '/', w is the output length.
     */

    w = 0;
    i = 0;

    while (i < n) {
        seg = u + i + 1;

        for (j = i + 1; j < n && u[j] != '/'; j++) {
            /* void */
        }

        k = j - (i + 1);

        if (k == 0 && merge_slashes && j < n) {
            i = j;
            continue;
        }

        if (k == 1 && seg[0] == '.') {
            if (j == n) {
                u[w++] = '/';
            }

            i = j;
            continue;
        }

        if (k == 2 && seg[0] == '.' && seg[1] == '.') {
            if (w == 0) {
                /* above the root */
                return WEIR_HTTP_PARSE_INVALID_REQUEST;
            }

            while (w > 0 && u[--w] != '/') {
                /* void */
            }

            if (j == n) {
                u[w++] = '/';
            }

            i = j;
            continue;
        }

        u[w++] = '/';
        memmove(u + w, seg, k);
        w += k;
        i = j;
    }

    r->uri.len = w;

    weir_http_set_exten(r);

    return WEIR_OK;
}


void
weir_http_parse_simple_uri(weir_http_request_t *r)
{
    r->uri.data = r->uri_start;
    r->uri.len = (r->args_start ? r->args_start - 1 : r->uri_end)
                 - r->uri_start;

    if (r->args_start) {
        r->args.data = r->args_start;
        r->args.len = r->uri_end - r->args_start;
    }

    weir_http_set_exten(r);
}


/* r->exten as nginx sets it: what follows the last '.' of r->uri's last
 * segment, unless that '.' starts the segment ("/.hidden" has none) */

void
weir_http_set_exten(weir_http_request_t *r)
{
    size_t  i;

    weir_str_null(&r->exten);

    for (i = r->uri.len; i > 1; i--) {
        if (r->uri.data[i - 1] == '.' && r->uri.data[i - 2] != '/') {
            r->exten.len = r->uri.len - i;
            r->exten.data = &r->uri.data[i];
            return;
        }

        if (r->uri.data[i - 1] == '/') {
            return;
        }
    }
}


static weir_int_t
weir_http_hex(unsigned char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }

    c |= 0x20;

    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }

    return -1;
}


enum {
    sw_ch_size_start = 0,
    sw_ch_size,
    sw_ch_size_bws,
    sw_ch_ext_name_start,
    sw_ch_ext_name,
    sw_ch_ext_name_bws,
    sw_ch_ext_value_start,
    sw_ch_ext_value,
    sw_ch_ext_quoted,
    sw_ch_ext_quoted_pair,
    sw_ch_ext_quoted_end,
    sw_ch_ext_value_bws,
    sw_ch_size_lf,
    sw_ch_data,
    sw_ch_data_cr,
    sw_ch_data_lf,
    sw_ch_trailer_start,
    sw_ch_trailer_name,
    sw_ch_trailer_value,
    sw_ch_trailer_lf,
    sw_ch_final_lf,
    sw_ch_done
};

#define WEIR_HTTP_CHUNK_MAX_DIGITS     15
#define WEIR_HTTP_CHUNK_MAX_EXT        256
#define WEIR_HTTP_CHUNK_MAX_TRAILERS   64
#define WEIR_HTTP_CHUNK_MAX_TRAILER    8192


/*
 * chunked-body = *chunk last-chunk trailer-section CRLF
 *
 * In the data state WEIR_OK is returned with ctx->size > 0 and at least
 * one data byte at b->pos: the caller takes min(ctx->size, b->last -
 * b->pos) bytes, subtracts them from ctx->size, advances b->pos and
 * calls again. Each trailer field line ends with WEIR_HTTP_PARSE_TRAILER
 * and its name and value as offsets in the line (weir_http_parse.h):
 * offsets, because a line may arrive in several buffers that the caller
 * has to put together anyway.
 */
weir_int_t
weir_http_parse_chunked(weir_http_request_t *r, weir_buf_t *b,
    weir_http_chunked_t *ctx)
{
    unsigned char  c, *p;
    weir_int_t     d, rc;
    weir_uint_t    state;

    (void) r;

    weir_http_char_class_init();

    state = ctx->state;
    p = b->pos;

    /* a trailer line begun in an earlier buffer goes on at b->pos */
    ctx->trailer_start = (state >= sw_ch_trailer_name
                          && state <= sw_ch_trailer_lf) ? p : NULL;

    if (state == sw_ch_done) {
        return WEIR_DONE;
    }

    if (state > sw_ch_done) {
        return WEIR_ERROR;
    }

    if (state == sw_ch_data) {
        if (ctx->size > 0) {
            goto data;
        }

        state = sw_ch_data_cr;
    }

    for ( /* void */ ; p < b->last; p++) {
        c = *p;

        if (state >= sw_ch_size_bws && state <= sw_ch_ext_value_bws) {
            /* the extensions, from the end of the size up to the CR */
            if (c != '\r' && ++ctx->ext_len > WEIR_HTTP_CHUNK_MAX_EXT) {
                goto invalid;
            }
        }

        if (state >= sw_ch_trailer_name && state <= sw_ch_trailer_lf) {
            if (++ctx->trailer_len > WEIR_HTTP_CHUNK_MAX_TRAILER) {
                goto invalid;
            }
        }

        switch (state) {

        case sw_ch_size_start:
            d = weir_http_hex(c);

            if (d < 0) {
                goto invalid;
            }

            ctx->size = d;
            ctx->digits = 1;
            ctx->ext_len = 0;
            state = sw_ch_size;
            break;

        case sw_ch_size:
            d = weir_http_hex(c);

            if (d >= 0) {
                /* 15 digits keep the size below 2^60: no overflow */
                if (++ctx->digits > WEIR_HTTP_CHUNK_MAX_DIGITS) {
                    goto invalid;
                }

                ctx->size = ctx->size * 16 + d;
                break;
            }

            if (c == ';') {
                ctx->ext_len = 1;
                state = sw_ch_ext_name_start;
                break;
            }

            /* BWS: whitespace only before a ';' (RFC 9112 7.1.1) */
            if (c == ' ' || c == '\t') {
                ctx->ext_len = 1;
                state = sw_ch_size_bws;
                break;
            }

            if (c == '\r') {
                state = sw_ch_size_lf;
                break;
            }

            goto invalid;

        case sw_ch_size_bws:
            if (c == ' ' || c == '\t') {
                break;
            }

            if (c != ';') {
                goto invalid;
            }

            state = sw_ch_ext_name_start;
            break;

        case sw_ch_ext_name_start:
            if (c == ' ' || c == '\t') {
                break;
            }

            if (!weir_http_is(c, WEIR_HTTP_C_TCHAR)) {
                goto invalid;
            }

            state = sw_ch_ext_name;
            break;

        case sw_ch_ext_name:
            if (weir_http_is(c, WEIR_HTTP_C_TCHAR)) {
                break;
            }

            goto ext_end;

        case sw_ch_ext_value_start:
            if (c == ' ' || c == '\t') {
                break;
            }

            if (c == '"') {
                state = sw_ch_ext_quoted;
                break;
            }

            if (!weir_http_is(c, WEIR_HTTP_C_TCHAR)) {
                goto invalid;
            }

            state = sw_ch_ext_value;
            break;

        case sw_ch_ext_value:
            if (weir_http_is(c, WEIR_HTTP_C_TCHAR)) {
                break;
            }

            if (c == '=') {
                goto invalid;
            }

            goto ext_end;

        case sw_ch_ext_quoted:
            if (c == '"') {
                state = sw_ch_ext_quoted_end;
                break;
            }

            if (c == '\\') {
                state = sw_ch_ext_quoted_pair;
                break;
            }

            if (!weir_http_is(c, WEIR_HTTP_C_QDTEXT)) {
                goto invalid;
            }

            break;

        case sw_ch_ext_quoted_pair:
            if (c != '\t' && c != ' ' && !weir_http_is(c, WEIR_HTTP_C_VALUE))
            {
                goto invalid;
            }

            state = sw_ch_ext_quoted;
            break;

        case sw_ch_ext_quoted_end:
            if (c == '=') {
                goto invalid;
            }

            goto ext_end;

        case sw_ch_ext_name_bws:
        case sw_ch_ext_value_bws:
            if (c == ' ' || c == '\t') {
                break;
            }

            if (c == '=' && state == sw_ch_ext_name_bws) {
                state = sw_ch_ext_value_start;
                break;
            }

            if (c != ';') {
                goto invalid;
            }

            state = sw_ch_ext_name_start;
            break;

        case sw_ch_size_lf:
            if (c != '\n') {
                goto invalid;
            }

            if (ctx->size == 0) {
                ctx->trailers_n = 0;
                ctx->trailer_len = 0;
                state = sw_ch_trailer_start;
                break;
            }

            state = sw_ch_data;
            p++;
            goto data;

        case sw_ch_data_cr:
            if (c != '\r') {
                goto invalid;
            }

            state = sw_ch_data_lf;
            break;

        case sw_ch_data_lf:
            if (c != '\n') {
                goto invalid;
            }

            state = sw_ch_size_start;
            break;

        case sw_ch_trailer_start:
            if (c == '\r') {
                state = sw_ch_final_lf;
                break;
            }

            /* obs-fold and an empty name are errors here too */
            if (!weir_http_is(c, WEIR_HTTP_C_TCHAR)
                || ++ctx->trailers_n > WEIR_HTTP_CHUNK_MAX_TRAILERS
                || ++ctx->trailer_len > WEIR_HTTP_CHUNK_MAX_TRAILER)
            {
                goto invalid;
            }

            /* the byte at offset k of the line makes trailer_len
             * trailer_line + k + 1 */
            ctx->trailer_start = p;
            ctx->trailer_line = ctx->trailer_len - 1;
            state = sw_ch_trailer_name;
            break;

        case sw_ch_trailer_name:
            if (weir_http_is(c, WEIR_HTTP_C_TCHAR)) {
                break;
            }

            if (c != ':') {
                goto invalid;
            }

            ctx->trailer_name_len = ctx->trailer_len - ctx->trailer_line - 1;
            ctx->trailer_value_start = ctx->trailer_name_len + 1;
            ctx->trailer_value_end = ctx->trailer_value_start;
            state = sw_ch_trailer_value;
            break;

        case sw_ch_trailer_value:
            if (weir_http_is(c, WEIR_HTTP_C_VALUE)) {
                ctx->trailer_value_end = ctx->trailer_len - ctx->trailer_line;
                break;
            }

            if (c == ' ' || c == '\t') {
                if (ctx->trailer_value_end == ctx->trailer_value_start) {
                    /* leading whitespace is not part of the value */
                    ctx->trailer_value_start++;
                    ctx->trailer_value_end++;
                }

                break;
            }

            if (c != '\r') {
                goto invalid;
            }

            state = sw_ch_trailer_lf;
            break;

        case sw_ch_trailer_lf:
            if (c != '\n') {
                goto invalid;
            }

            /* one field per return: the caller takes it now */
            state = sw_ch_trailer_start;
            p++;
            rc = WEIR_HTTP_PARSE_TRAILER;
            goto done;

        case sw_ch_final_lf:
            if (c != '\n') {
                goto invalid;
            }

            b->pos = p + 1;
            ctx->state = sw_ch_done;
            ctx->size = 0;
            ctx->length = 0;

            return WEIR_DONE;

        default:
            /* sw_ch_done or garbage: nothing may follow the last chunk */
            goto invalid;
        }

        continue;

    ext_end:

        /* after an extension name, value or quoted string */

        if (c == '=' && state == sw_ch_ext_name) {
            state = sw_ch_ext_value_start;
            continue;
        }

        if (c == ';') {
            state = sw_ch_ext_name_start;
            continue;
        }

        if (c == ' ' || c == '\t') {
            state = (state == sw_ch_ext_name) ? sw_ch_ext_name_bws
                                              : sw_ch_ext_value_bws;
            continue;
        }

        if (c == '\r') {
            state = sw_ch_size_lf;
            continue;
        }

        goto invalid;
    }

    if (state == sw_ch_data) {
        goto data;
    }

    rc = WEIR_AGAIN;
    goto done;

data:

    if (p < b->last) {
        rc = WEIR_OK;

    } else {
        rc = WEIR_AGAIN;
    }

done:

    b->pos = p;
    ctx->state = state;
    ctx->length = weir_http_chunked_min_length(ctx);

    return rc;

invalid:

    b->pos = p;
    ctx->state = sw_ch_done + 1;

    return WEIR_ERROR;
}


/* the fewest bytes that can still complete the body from this state */
static off_t
weir_http_chunked_min_length(weir_http_chunked_t *ctx)
{
    switch (ctx->state) {

    case sw_ch_size_start:
        return 5;                               /* 0 CR LF CR LF */

    case sw_ch_size:
    case sw_ch_size_bws:
    case sw_ch_ext_name_start:
    case sw_ch_ext_name:
    case sw_ch_ext_name_bws:
    case sw_ch_ext_value_start:
    case sw_ch_ext_value:
    case sw_ch_ext_quoted:
    case sw_ch_ext_quoted_pair:
    case sw_ch_ext_quoted_end:
    case sw_ch_ext_value_bws:
        /* CR LF, then data CR LF and a last chunk, or the final CR LF */
        return ctx->size ? 2 + ctx->size + 2 + 5 : 4;

    case sw_ch_size_lf:
        return ctx->size ? 1 + ctx->size + 2 + 5 : 3;

    case sw_ch_data:
        return ctx->size + 2 + 5;

    case sw_ch_data_cr:
        return 2 + 5;

    case sw_ch_data_lf:
        return 1 + 5;

    case sw_ch_trailer_start:
        return 2;

    case sw_ch_trailer_name:
        return 5;                               /* : CR LF CR LF */

    case sw_ch_trailer_value:
        return 4;

    case sw_ch_trailer_lf:
        return 3;

    case sw_ch_final_lf:
        return 1;

    default:
        return 0;
    }
}


enum {
    sw_sl_start = 0,
    sw_sl_H,
    sw_sl_HT,
    sw_sl_HTT,
    sw_sl_HTTP,
    sw_sl_major,
    sw_sl_dot,
    sw_sl_minor,
    sw_sl_space,
    sw_sl_status,
    sw_sl_after_status,
    sw_sl_reason,
    sw_sl_lf
};


/*
 * status-line = HTTP-version SP status-code SP [ reason-phrase ] CRLF
 *
 * Only HTTP/1.x. A missing SP after the code is tolerated (origins that
 * send "HTTP/1.1 200\r\n"). Returns WEIR_OK with status->code,
 * status->start .. status->end (the line without CRLF) and
 * status->http_version, WEIR_AGAIN, or WEIR_ERROR.
 */
weir_int_t
weir_http_parse_status_line(weir_http_request_t *r, weir_buf_t *b,
    weir_http_status_t *status)
{
    unsigned char  c, *p;
    weir_uint_t    state;

    weir_http_char_class_init();

    state = r->state;

    for (p = b->pos; p < b->last; p++) {
        c = *p;

        switch (state) {

        case sw_sl_start:
            if (c != 'H') {
                goto invalid;
            }

            status->start = p;
            status->code = 0;
            status->count = 0;
            state = sw_sl_H;
            break;

        case sw_sl_H:
        case sw_sl_HT:
        case sw_sl_HTT:
            if (c != "TTP"[state - sw_sl_H]) {
                goto invalid;
            }

            state++;
            break;

        case sw_sl_HTTP:
            if (c != '/') {
                goto invalid;
            }

            state = sw_sl_major;
            break;

        case sw_sl_major:
            if (c != '1') {
                goto invalid;
            }

            r->http_major = 1;
            state = sw_sl_dot;
            break;

        case sw_sl_dot:
            if (c != '.') {
                goto invalid;
            }

            state = sw_sl_minor;
            break;

        case sw_sl_minor:
            if (c < '0' || c > '9') {
                goto invalid;
            }

            r->http_minor = c - '0';
            status->http_version = 1000 + r->http_minor;
            state = sw_sl_space;
            break;

        case sw_sl_space:
            if (c != ' ') {
                goto invalid;
            }

            state = sw_sl_status;
            break;

        case sw_sl_status:
            if (c < '0' || c > '9') {
                goto invalid;
            }

            status->code = status->code * 10 + (c - '0');

            if (++status->count == 3) {
                if (status->code < 100) {
                    goto invalid;
                }

                state = sw_sl_after_status;
            }

            break;

        case sw_sl_after_status:
            if (c == ' ') {
                state = sw_sl_reason;
                break;
            }

            if (c == '\r') {
                status->end = p;
                state = sw_sl_lf;
                break;
            }

            if (c == '\n' && !r->strict_line_endings) {
                status->end = p;
                goto status_line_done;
            }

            goto invalid;

        case sw_sl_reason:
            if (weir_http_is(c, WEIR_HTTP_C_VALUE) || c == ' ' || c == '\t')
            {
                break;
            }

            if (c == '\n' && !r->strict_line_endings) {
                status->end = p;
                goto status_line_done;
            }

            if (c != '\r') {
                goto invalid;
            }

            status->end = p;
            state = sw_sl_lf;
            break;

        case sw_sl_lf:
            if (c != '\n') {
                goto invalid;
            }

        status_line_done:

            b->pos = p + 1;
            r->state = sw_sl_start;
            r->http_version = status->http_version;

            return WEIR_OK;

        default:
            goto invalid;
        }
    }

    b->pos = p;
    r->state = state;

    return WEIR_AGAIN;

invalid:

    b->pos = p;
    r->state = sw_sl_start;

    return WEIR_ERROR;
}


/*
 * Checks a URI made at run time (internal redirects, error_page, SSI
 * and the like) before it is used as a path: it must be absolute, hold
 * no NUL and no "." or ".." segment, written plainly or with %2e. What
 * follows the first '?' moves to args. flags is reserved (in/out) and
 * left unchanged. WEIR_OK or WEIR_ERROR (the caller logs and refuses).
 */
weir_int_t
weir_http_parse_unsafe_uri(weir_http_request_t *r, weir_str_t *uri,
    weir_str_t *args, weir_uint_t *flags)
{
    size_t          dots, chars;
    unsigned char   c, *p, *end, *seg;

    (void) r;
    (void) flags;

    if (uri->len == 0 || uri->data[0] != '/') {
        return WEIR_ERROR;
    }

    end = uri->data + uri->len;
    args->len = 0;
    args->data = NULL;

    seg = uri->data + 1;

    for (p = uri->data + 1; p <= end; p++) {

        c = (p < end) ? *p : '/';

        if (c == '\0') {
            return WEIR_ERROR;
        }

        if (c == '?') {
            args->data = p + 1;
            args->len = end - (p + 1);

            if (memchr(args->data, '\0', args->len) != NULL) {
                return WEIR_ERROR;
            }

            uri->len = p - uri->data;
            end = p;
            c = '/';
        }

        if (c != '/') {
            continue;
        }

        /* the segment seg .. p: made of dots only, plain or %2e? */

        dots = 0;
        chars = 0;

        while (seg < p) {
            if (*seg == '.') {
                dots++;
                seg++;

            } else if (p - seg >= 3 && seg[0] == '%' && seg[1] == '2'
                       && (seg[2] | 0x20) == 'e')
            {
                dots++;
                seg += 3;

            } else {
                chars++;
                seg++;
            }
        }

        if (chars == 0 && (dots == 1 || dots == 2)) {
            return WEIR_ERROR;
        }

        seg = p + 1;

        if (p >= end) {
            break;
        }
    }

    return WEIR_OK;
}


/*
 * Finds the argument "name" (compared without case, as nginx does) in
 * r->args: "a=1&b=2". The value is as received (not decoded). WEIR_OK
 * with value set, or WEIR_DECLINED when there is no such argument.
 */
weir_int_t
weir_http_arg(weir_http_request_t *r, unsigned char *name, size_t len,
    weir_str_t *value)
{
    unsigned char  *p, *end, *arg, *eq, *amp;

    if (r->args.len == 0) {
        return WEIR_DECLINED;
    }

    p = r->args.data;
    end = p + r->args.len;

    while (p < end) {
        arg = p;

        amp = memchr(p, '&', end - p);

        if (amp == NULL) {
            amp = end;
        }

        eq = memchr(arg, '=', amp - arg);

        if (eq == NULL) {
            eq = amp;
        }

        if ((size_t) (eq - arg) == len
            && weir_strncasecmp(arg, name, len) == 0)
        {
            if (eq < amp) {
                value->data = eq + 1;
                value->len = amp - (eq + 1);

            } else {
                value->data = amp;
                value->len = 0;
            }

            return WEIR_OK;
        }

        p = amp + 1;
    }

    return WEIR_DECLINED;
}


weir_uint_t
weir_http_list_has_token(weir_str_t *value, unsigned char *token,
    size_t len)
{
    unsigned char  *p, *last, *start, *end;

    p = value->data;
    last = p + value->len;

    while (p < last) {

        while (p < last && (*p == ' ' || *p == '\t' || *p == ',')) {
            p++;
        }

        start = p;

        while (p < last && *p != ',') {
            p++;
        }

        end = p;

        while (end > start && (end[-1] == ' ' || end[-1] == '\t')) {
            end--;
        }

        if (len && (size_t) (end - start) == len
            && weir_strncasecmp(start, token, len) == 0)
        {
            return 1;
        }
    }

    return 0;
}
