#ifndef _WEIR_HTTP_PARSE_H_INCLUDED_
#define _WEIR_HTTP_PARSE_H_INCLUDED_

/*
 * The HTTP/1 parsers: explicit state machines over a buffer that resume
 * where they stopped (state kept in r or in the chunked context), so
 * bytes may arrive split at any boundary.
 *
 * Request line and header line: WEIR_OK when one line is complete,
 * WEIR_AGAIN when more bytes are needed, WEIR_HTTP_PARSE_HEADER_DONE at
 * the empty line ending the head, or WEIR_HTTP_PARSE_INVALID_* (the
 * caller answers 400/414/505 and closes). b->pos is advanced past what
 * was consumed.
 */

weir_int_t weir_http_parse_request_line(weir_http_request_t *r,
    weir_buf_t *b);
weir_int_t weir_http_parse_header_line(weir_http_request_t *r,
    weir_buf_t *b, weir_uint_t allow_underscores);
/* decodes %XX, resolves "." and ".." segments, merges slashes when asked;
 * WEIR_OK or WEIR_HTTP_PARSE_INVALID_REQUEST; writes r->uri */
weir_int_t weir_http_parse_complex_uri(weir_http_request_t *r,
    weir_uint_t merge_slashes);
/* a target with nothing to decode or normalize (no '%', "//", "/."):
 * r->uri is its path as received, r->args and r->exten as
 * weir_http_parse_complex_uri sets them */
void weir_http_parse_simple_uri(weir_http_request_t *r);
void weir_http_set_exten(weir_http_request_t *r);

/*
 * Chunked bodies: returns WEIR_OK when ctx->size bytes of chunk data
 * start at b->pos (the caller consumes up to that many and calls again),
 * WEIR_DONE after the last chunk and the trailer section, WEIR_AGAIN when
 * more input is needed, WEIR_ERROR on any malformed size, extension,
 * line ending or trailer.
 *
 * Trailer fields (added by the trailers helper): WEIR_HTTP_PARSE_TRAILER
 * when a trailer field line has ended, b->pos just past its LF; the
 * caller takes the field and calls again. A line may span calls: after
 * any return with ctx->trailer_start set, [ctx->trailer_start, b->pos) is
 * the next piece of the current line (on WEIR_AGAIN a part of it, on
 * WEIR_HTTP_PARSE_TRAILER its end, CRLF included). With the pieces put
 * together, the name is the first ctx->trailer_name_len bytes and the
 * value (without the surrounding whitespace) is [trailer_value_start,
 * trailer_value_end). A caller that does not keep trailers just calls
 * again.
 */
#define WEIR_HTTP_PARSE_TRAILER  2

weir_int_t weir_http_parse_chunked(weir_http_request_t *r, weir_buf_t *b,
    weir_http_chunked_t *ctx);

/* status line of a response (for upstreams): "HTTP/1.1 200 OK" */
typedef struct {
    weir_uint_t                  code;
    weir_uint_t                  count;
    unsigned char               *start;
    unsigned char               *end;
    weir_uint_t                  http_version;
} weir_http_status_t;

weir_int_t weir_http_parse_status_line(weir_http_request_t *r,
    weir_buf_t *b, weir_http_status_t *status);

/* does the comma-separated list value (Connection, TE, ...) hold the
 * element token (case-insensitive, surrounding whitespace ignored)? */
weir_uint_t weir_http_list_has_token(weir_str_t *value,
    unsigned char *token, size_t len);

#endif /* _WEIR_HTTP_PARSE_H_INCLUDED_ */
