#ifndef _WEIR_HTTP_REQUEST_H_INCLUDED_
#define _WEIR_HTTP_REQUEST_H_INCLUDED_

/*
 * The protocol-neutral request.
 *
 * Lifetime (docs/dev/lifetimes.md): r->main->count counts the holders of
 * the request (the protocol, a body reader, a subrequest, a timer owner).
 * Everything ends in weir_http_finalize_request(r, rc): it sends the
 * final response or error, and calls weir_http_close_request() which
 * drops one reference; the request (log phase, pool) is freed when the
 * count reaches zero, and then the protocol decides what happens to the
 * connection (keep-alive, next pipelined request, close).
 */

#define WEIR_HTTP_VERSION_9                 9
#define WEIR_HTTP_VERSION_10                1000
#define WEIR_HTTP_VERSION_11                1001
#define WEIR_HTTP_VERSION_20                2000
#define WEIR_HTTP_VERSION_30                3000

#define WEIR_HTTP_UNKNOWN                   0x00000001
#define WEIR_HTTP_GET                       0x00000002
#define WEIR_HTTP_HEAD                      0x00000004
#define WEIR_HTTP_POST                      0x00000008
#define WEIR_HTTP_PUT                       0x00000010
#define WEIR_HTTP_DELETE                    0x00000020
#define WEIR_HTTP_OPTIONS                   0x00000040
#define WEIR_HTTP_PATCH                     0x00000080
#define WEIR_HTTP_TRACE                     0x00000100
#define WEIR_HTTP_CONNECT                   0x00000200

#define WEIR_HTTP_CONNECTION_CLOSE          1
#define WEIR_HTTP_CONNECTION_KEEP_ALIVE     2

#define WEIR_HTTP_PARSE_HEADER_DONE         1
#define WEIR_HTTP_PARSE_INVALID_REQUEST     10
#define WEIR_HTTP_PARSE_INVALID_METHOD      11
#define WEIR_HTTP_PARSE_INVALID_VERSION     12
#define WEIR_HTTP_PARSE_INVALID_09_METHOD   13
#define WEIR_HTTP_PARSE_INVALID_HEADER      14
#define WEIR_HTTP_PARSE_TOO_LONG_URI        15

/* status codes */
#define WEIR_HTTP_CONTINUE                  100
#define WEIR_HTTP_SWITCHING_PROTOCOLS       101
#define WEIR_HTTP_OK                        200
#define WEIR_HTTP_CREATED                   201
#define WEIR_HTTP_NO_CONTENT                204
#define WEIR_HTTP_PARTIAL_CONTENT           206
#define WEIR_HTTP_SPECIAL_RESPONSE          300
#define WEIR_HTTP_MOVED_PERMANENTLY         301
#define WEIR_HTTP_MOVED_TEMPORARILY         302
#define WEIR_HTTP_SEE_OTHER                 303
#define WEIR_HTTP_NOT_MODIFIED              304
#define WEIR_HTTP_TEMPORARY_REDIRECT        307
#define WEIR_HTTP_PERMANENT_REDIRECT        308
#define WEIR_HTTP_BAD_REQUEST               400
#define WEIR_HTTP_UNAUTHORIZED              401
#define WEIR_HTTP_FORBIDDEN                 403
#define WEIR_HTTP_NOT_FOUND                 404
#define WEIR_HTTP_NOT_ALLOWED               405
#define WEIR_HTTP_REQUEST_TIME_OUT          408
#define WEIR_HTTP_CONFLICT                  409
#define WEIR_HTTP_LENGTH_REQUIRED           411
#define WEIR_HTTP_PRECONDITION_FAILED       412
#define WEIR_HTTP_REQUEST_ENTITY_TOO_LARGE  413
#define WEIR_HTTP_REQUEST_URI_TOO_LARGE     414
#define WEIR_HTTP_UNSUPPORTED_MEDIA_TYPE    415
#define WEIR_HTTP_RANGE_NOT_SATISFIABLE     416
#define WEIR_HTTP_EXPECTATION_FAILED        417
#define WEIR_HTTP_MISDIRECTED_REQUEST       421
#define WEIR_HTTP_TOO_MANY_REQUESTS         429
#define WEIR_HTTP_REQUEST_HEADER_TOO_LARGE  431
/* weir-internal: close the connection without any response */
#define WEIR_HTTP_CLOSE                     444
#define WEIR_HTTP_CLIENT_CLOSED_REQUEST     499
#define WEIR_HTTP_INTERNAL_SERVER_ERROR     500
#define WEIR_HTTP_NOT_IMPLEMENTED           501
#define WEIR_HTTP_BAD_GATEWAY               502
#define WEIR_HTTP_SERVICE_UNAVAILABLE       503
#define WEIR_HTTP_GATEWAY_TIME_OUT          504
#define WEIR_HTTP_VERSION_NOT_SUPPORTED     505

/* r->lingering_close / keepalive decisions */
#define WEIR_HTTP_LINGERING_OFF             0
#define WEIR_HTTP_LINGERING_ON              1
#define WEIR_HTTP_LINGERING_ALWAYS          2

#define WEIR_HTTP_LOWLEVEL_BUFFERED         0xf0
#define WEIR_HTTP_WRITE_BUFFERED            0x10

#define WEIR_HTTP_MAX_URI_CHANGES           10
#define WEIR_HTTP_DISCARD_BUFFER_SIZE       4096
#define WEIR_HTTP_LINGERING_BUFFER_SIZE     4096

/*
 * Header names are interned once: every well-known name has a token
 * (WEIR_HTTP_HDR_*) and flags, and a header of the request or response
 * carries its token so that nothing on the hot path compares names as
 * strings. Unknown names have token WEIR_HTTP_HDR_UNKNOWN.
 */
typedef enum {
    WEIR_HTTP_HDR_UNKNOWN = 0,
    WEIR_HTTP_HDR_HOST,
    WEIR_HTTP_HDR_CONNECTION,
    WEIR_HTTP_HDR_KEEP_ALIVE,
    WEIR_HTTP_HDR_CONTENT_LENGTH,
    WEIR_HTTP_HDR_TRANSFER_ENCODING,
    WEIR_HTTP_HDR_TE,
    WEIR_HTTP_HDR_TRAILER,
    WEIR_HTTP_HDR_UPGRADE,
    WEIR_HTTP_HDR_EXPECT,
    WEIR_HTTP_HDR_PROXY_CONNECTION,
    WEIR_HTTP_HDR_PROXY_AUTHORIZATION,
    WEIR_HTTP_HDR_PROXY_AUTHENTICATE,
    WEIR_HTTP_HDR_USER_AGENT,
    WEIR_HTTP_HDR_REFERER,
    WEIR_HTTP_HDR_COOKIE,
    WEIR_HTTP_HDR_AUTHORIZATION,
    WEIR_HTTP_HDR_CONTENT_TYPE,
    WEIR_HTTP_HDR_CONTENT_ENCODING,
    WEIR_HTTP_HDR_ACCEPT,
    WEIR_HTTP_HDR_ACCEPT_ENCODING,
    WEIR_HTTP_HDR_ACCEPT_LANGUAGE,
    WEIR_HTTP_HDR_IF_MODIFIED_SINCE,
    WEIR_HTTP_HDR_IF_UNMODIFIED_SINCE,
    WEIR_HTTP_HDR_IF_MATCH,
    WEIR_HTTP_HDR_IF_NONE_MATCH,
    WEIR_HTTP_HDR_IF_RANGE,
    WEIR_HTTP_HDR_RANGE,
    WEIR_HTTP_HDR_X_FORWARDED_FOR,
    WEIR_HTTP_HDR_X_REAL_IP,
    WEIR_HTTP_HDR_FORWARDED,
    WEIR_HTTP_HDR_VIA,
    WEIR_HTTP_HDR_SERVER,
    WEIR_HTTP_HDR_DATE,
    WEIR_HTTP_HDR_LOCATION,
    WEIR_HTTP_HDR_REFRESH,
    WEIR_HTTP_HDR_LAST_MODIFIED,
    WEIR_HTTP_HDR_ETAG,
    WEIR_HTTP_HDR_CONTENT_RANGE,
    WEIR_HTTP_HDR_ACCEPT_RANGES,
    WEIR_HTTP_HDR_WWW_AUTHENTICATE,
    WEIR_HTTP_HDR_EXPIRES,
    WEIR_HTTP_HDR_CACHE_CONTROL,
    WEIR_HTTP_HDR_VARY,
    WEIR_HTTP_HDR_SET_COOKIE,
    WEIR_HTTP_HDR_ALT_SVC,
    WEIR_HTTP_HDR_LAST_
} weir_http_header_token_t;

#define WEIR_HTTP_HDR_F_HOP_BY_HOP   0x01   /* not forwarded by a proxy */
#define WEIR_HTTP_HDR_F_SINGLE       0x02   /* more than one is an error */
#define WEIR_HTTP_HDR_F_LIST         0x04   /* comma-separated list */

typedef struct {
    weir_str_t                   name;      /* canonical case */
    weir_uint_t                  token;
    weir_uint_t                  flags;
    /* request side: validates and links the header into headers_in;
     * returns WEIR_OK or WEIR_ERROR after finalizing the request */
    weir_int_t                 (*handler)(weir_http_request_t *r,
                                          weir_http_header_t *h,
                                          weir_uint_t offset);
    weir_uint_t                  offset;    /* in weir_http_headers_in_t */
} weir_http_header_def_t;

/* the table, indexed by token (weir_http_request.c) */
extern weir_http_header_def_t  weir_http_header_defs[];
/* token of a lowercased name, WEIR_HTTP_HDR_UNKNOWN when not interned */
weir_uint_t weir_http_header_token(unsigned char *lowcase, size_t len,
    weir_uint_t hash);

struct weir_http_header_s {
    weir_uint_t                  hash;      /* 0: deleted */
    weir_uint_t                  token;
    weir_str_t                   key;       /* as received */
    weir_str_t                   value;
    unsigned char               *lowcase_key;
    weir_http_header_t          *next;      /* the next one of this name */
};

typedef struct {
    weir_list_t                  headers;   /* of weir_http_header_t */
    weir_list_t                  trailers;

    /* direct links to well-known headers (first occurrence) */
    weir_http_header_t          *host;
    weir_http_header_t          *connection;
    weir_http_header_t          *content_length;
    weir_http_header_t          *transfer_encoding;
    weir_http_header_t          *te;
    weir_http_header_t          *expect;
    weir_http_header_t          *upgrade;
    weir_http_header_t          *user_agent;
    weir_http_header_t          *referer;
    weir_http_header_t          *content_type;
    weir_http_header_t          *accept_encoding;
    weir_http_header_t          *authorization;
    weir_http_header_t          *if_modified_since;
    weir_http_header_t          *if_unmodified_since;
    weir_http_header_t          *if_match;
    weir_http_header_t          *if_none_match;
    weir_http_header_t          *if_range;
    weir_http_header_t          *range;
    weir_http_header_t          *keep_alive;
    weir_http_header_t          *cookie;        /* chain through next */
    weir_http_header_t          *x_forwarded_for;

    weir_str_t                   server;        /* host without port,
                                                   lowercased */
    off_t                        content_length_n;  /* -1: none */
    time_t                       keep_alive_n;

    unsigned                     connection_type:2;
    unsigned                     chunked:1;
    unsigned                     multi:1;
    unsigned                     msie:1;
    unsigned                     curl:1;
} weir_http_headers_in_t;

typedef struct {
    weir_list_t                  headers;
    weir_list_t                  trailers;

    weir_uint_t                  status;
    weir_str_t                   status_line;

    weir_http_header_t          *server;
    weir_http_header_t          *date;
    weir_http_header_t          *content_length;
    weir_http_header_t          *content_encoding;
    weir_http_header_t          *location;
    weir_http_header_t          *refresh;
    weir_http_header_t          *last_modified;
    weir_http_header_t          *content_range;
    weir_http_header_t          *accept_ranges;
    weir_http_header_t          *www_authenticate;
    weir_http_header_t          *expires;
    weir_http_header_t          *etag;

    weir_str_t                  *override_charset;

    size_t                       content_type_len;
    weir_str_t                   content_type;
    weir_str_t                   charset;
    unsigned char               *content_type_lowcase;
    weir_uint_t                  content_type_hash;

    off_t                        content_length_n;  /* -1: unknown */
    off_t                        content_offset;
    time_t                       date_time;
    time_t                       last_modified_time;
} weir_http_headers_out_t;

/* the request body as it arrives: a stream of chains ending with a
 * buffer that has last_buf set */
typedef struct {
    weir_chain_t                *bufs;      /* what was read (buffered) */
    weir_buf_t                  *buf;
    off_t                        rest;      /* -1: not known (chunked) */
    off_t                        received;
    weir_chain_t                *free;
    weir_chain_t                *busy;
    weir_http_chunked_t         *chunked;
    weir_http_client_body_handler_pt  post_handler;
    /* added by the body helper: the protocol reader's own state */
    void                        *reader;
    /* bytes given to the request body filters, checked against
     * client_max_body_size (weir_http_request_body_filter) */
    off_t                        passed;
    /* once the body spills (weir_http_request_body_spill): the file,
     * and the link of its one buffer, which rb->bufs is then */
    weir_file_t                 *temp_file;
    weir_chain_t                *temp_file_cl;
    unsigned                     filter_need_buffering:1;
    unsigned                     last_sent:1;
    unsigned                     last_saved:1;
} weir_http_request_body_t;

/*
 * The client end of a tunnel (the upstream's 101 Upgrade; Extended
 * CONNECT over a multiplexed protocol later): the upstream moves bytes
 * between it and the origin connection. Readiness is r->connection's
 * events (ready flags, timers), as for any request.
 */
struct weir_http_tunnel_io_s {
    /* can the request become a tunnel? WEIR_OK with *preread the bytes
     * the client sent after its request head, now taken (they stay
     * valid for the request's life), or WEIR_DECLINED (HTTP/1.0: the
     * client cannot follow) */
    weir_int_t                 (*start)(weir_http_request_t *r,
                                        weir_str_t *preread);
    /* as c->recv and c->send: > 0 bytes, 0 the client's end of the
     * stream (recv), WEIR_AGAIN (the ready flag of r->connection's event
     * cleared), WEIR_ERROR */
    ssize_t                    (*recv)(weir_http_request_t *r,
                                       unsigned char *buf, size_t size);
    ssize_t                    (*send)(weir_http_request_t *r,
                                       unsigned char *buf, size_t size);
    /* the end of what goes to the client (HTTP/1: close_notify under
     * TLS, then the FIN); WEIR_OK, WEIR_AGAIN (call again on the write
     * event), WEIR_ERROR */
    weir_int_t                 (*half_close)(weir_http_request_t *r);
    /* are bytes waiting that no read event will report (decrypted in
     * the TLS library)? */
    weir_uint_t                (*pending)(weir_http_request_t *r);
};

/*
 * What a protocol module provides for each request it creates. HTTP/1
 * fills it in weir_http_v1.c; HTTP/2 and HTTP/3 will add their own.
 */
struct weir_http_proto_s {
    const char                  *name;      /* "HTTP/1.1", "HTTP/2" */

    /* the bottom of the header filter chain: frames headers_out */
    weir_int_t                 (*send_header)(weir_http_request_t *r);
    /* the bottom of the body filter chain: frames and writes the body
     * (chunked or content-length on HTTP/1); returns WEIR_OK, WEIR_AGAIN
     * (output is buffered: r->connection->buffered is set and the write
     * event will call r->write_event_handler) or WEIR_ERROR */
    weir_int_t                 (*send_body)(weir_http_request_t *r,
                                            weir_chain_t *in);
    /* starts or resumes reading the request body into r->request_body,
     * passing what it decodes to weir_http_request_body_filter() */
    weir_int_t                 (*read_body)(weir_http_request_t *r);
    /* a streamed body (request_body_no_buffering): the consumer took
     * what it was given, read or release more; WEIR_OK (the end went
     * down), WEIR_AGAIN, an HTTP status or WEIR_ERROR */
    weir_int_t                 (*read_unbuffered)(weir_http_request_t *r);
    /* reads and drops the request body */
    weir_int_t                 (*discard_body)(weir_http_request_t *r);
    /* has some of the request body arrived already (the client did not
     * wait for a 100)? */
    weir_uint_t                (*body_received)(weir_http_request_t *r);
    /* sends a 1xx interim response (100-continue) */
    weir_int_t                 (*send_continue)(weir_http_request_t *r);
    /* relays an interim response from an origin (1xx other than 101)
     * with its headers (weir_http_header_t, hash 0 entries skipped);
     * WEIR_OK, WEIR_AGAIN (buffered: it goes out before the final head)
     * or WEIR_ERROR; WEIR_DECLINED when the client cannot take one
     * (HTTP/1.0): the caller drops it */
    weir_int_t                 (*send_interim)(weir_http_request_t *r,
                                               weir_uint_t status,
                                               weir_list_t *headers);
    /* while the response is produced and nothing reads the body: has
     * the client gone? WEIR_OK: still there (anything it sent more
     * stays unread, and the protocol stops read events it would report
     * again and again), WEIR_DONE: gone (*err: the error, 0 for a plain
     * close), WEIR_ERROR. Called from the read event
     * (weir_http_test_reading) */
    weir_int_t                 (*test_closed)(weir_http_request_t *r,
                                              weir_err_t *err);
    /* r->loc_conf changed (weir_http_update_location_config): apply what
     * the location says about the transport (HTTP/1: sendfile,
     * tcp_nodelay, keepalive_timeout 0 and keepalive_requests clear
     * r->keepalive); may be NULL */
    void                       (*location_config)(weir_http_request_t *r);
    /* can the response being sent still carry trailers (HTTP/1: only a
     * chunked one)? NULL: never */
    weir_uint_t                (*trailers_allowed)(weir_http_request_t *r);
    /* the client end of a tunnel; NULL: the protocol cannot tunnel */
    const weir_http_tunnel_io_t *tunnel;
    /* called when the request is freed: keep-alive, pipelining, close */
    void                       (*request_done)(weir_http_request_t *r,
                                               weir_int_t rc);
};

struct weir_http_request_s {
    uint32_t                     signature;         /* "HTTP" */

    weir_connection_t           *connection;
    weir_http_connection_t      *http_connection;
    weir_http_proto_t           *proto;
    void                        *stream;            /* protocol state */

    void                       **ctx;               /* per module */
    void                       **main_conf;
    void                       **srv_conf;
    void                       **loc_conf;

    weir_http_event_handler_pt   read_event_handler;
    weir_http_event_handler_pt   write_event_handler;

    weir_http_handler_pt         content_handler;
    weir_uint_t                  access_code;

    weir_http_variable_value_t  *variables;

    weir_pool_t                 *pool;
    weir_buf_t                  *header_in;         /* H1: the read buffer */

    weir_http_headers_in_t       headers_in;
    weir_http_headers_out_t      headers_out;

    weir_http_request_body_t    *request_body;
    weir_http_upstream_t        *upstream;          /* proxied: the core's */

    time_t                       lingering_time;
    time_t                       start_sec;
    weir_msec_t                  start_msec;

    weir_uint_t                  method;
    weir_uint_t                  http_version;

    weir_str_t                   request_line;
    weir_str_t                   uri;               /* decoded, normalized */
    weir_str_t                   args;
    weir_str_t                   exten;
    weir_str_t                   unparsed_uri;      /* as received */

    weir_str_t                   method_name;
    weir_str_t                   http_protocol;
    weir_str_t                   schema;            /* "http", "https" */
    weir_str_t                   authority;         /* absolute-form or
                                                       :authority */

    weir_chain_t                *out;               /* unsent output */
    weir_http_request_t         *main;
    weir_http_request_t         *parent;

    weir_http_log_ctx_t         *log_ctx;
    weir_http_handler_pt         log_handler;

    weir_int_t                   phase_handler;     /* in the engine */
    weir_int_t                   err_status;

    weir_str_t                   request_id;        /* $request_id */

    off_t                        request_length;    /* bytes received */
    off_t                        header_size;
    /* added by the variables helper: bytes of the response head (status
     * line and headers) as framed by r->proto->send_header, so that
     * $body_bytes_sent = c->sent - header_out_size */
    off_t                        header_out_size;

    weir_uint_t                  err_status_page;
    weir_uint_t                  header_hash;
    weir_uint_t                  lowcase_index;
    unsigned char                lowcase_header[32];

    /* parser state (HTTP/1), kept so parsing resumes where it stopped */
    weir_uint_t                  state;
    unsigned char               *header_name_start;
    unsigned char               *header_name_end;
    unsigned char               *header_start;
    unsigned char               *header_end;
    unsigned char               *uri_start;
    unsigned char               *uri_end;
    unsigned char               *uri_ext;
    unsigned char               *args_start;
    unsigned char               *request_start;
    unsigned char               *request_end;
    unsigned char               *method_end;
    unsigned char               *schema_start;
    unsigned char               *schema_end;
    unsigned char               *host_start;
    unsigned char               *host_end;
    unsigned char               *port_start;
    unsigned char               *port_end;
    weir_uint_t                  http_major;
    weir_uint_t                  http_minor;
    weir_uint_t                  headers_n;         /* count, for limits */

    /* regex captures of the location or server_name that matched */
    int                         *captures;
    unsigned char               *captures_data;
    weir_uint_t                  ncaptures;

    weir_uint_t                  count:16;          /* references */
    weir_uint_t                  uri_changes:8;
    weir_uint_t                  subrequests:8;

    unsigned                     http_state:4;
    unsigned                     complex_uri:1;
    unsigned                     quoted_uri:1;
    unsigned                     plus_in_uri:1;
    unsigned                     empty_path_in_uri:1;
    unsigned                     strict_line_endings:1; /* HTTP/1 parsers:
                                                           CRLF only, no
                                                           bare LF */
    unsigned                     invalid_header:1;
    unsigned                     add_uri_to_alias:1;
    unsigned                     valid_location:1;
    unsigned                     valid_unparsed_uri:1;
    unsigned                     uri_changed:1;
    unsigned                     request_body_in_single_buf:1;
    unsigned                     request_body_no_buffering:1;
    unsigned                     request_body_discard:1;
    unsigned                     internal:1;
    unsigned                     error_page:1;
    unsigned                     filter_finalize:1;
    unsigned                     post_action:1;
    unsigned                     keepalive:1;
    unsigned                     lingering_close:1;
    unsigned                     discard_body:1;
    unsigned                     reading_body:1;
    unsigned                     expect_tested:1;
    unsigned                     expect_continue:1;
    unsigned                     header_only:1;     /* HEAD, 204, 304 */
    unsigned                     header_sent:1;
    unsigned                     header_refused:1;  /* a head with
                                                       CR/LF/NUL was
                                                       refused once */
    unsigned                     response_sent:1;
    unsigned                     chunked:1;         /* response framing */
    unsigned                     expect_trailers:1;
    unsigned                     allow_ranges:1;
    unsigned                     single_range:1;
    unsigned                     disable_not_modified:1;
    unsigned                     main_filter_need_in_memory:1;
    unsigned                     filter_need_in_memory:1;
    unsigned                     filter_need_temporary:1;
    unsigned                     preserve_body:1;
    unsigned                     buffered:4;
    unsigned                     done:1;
    unsigned                     logged:1;
    unsigned                     terminated:1;
    unsigned                     blocked:8;
    unsigned                     limit_conn_status:2;
};

#define WEIR_HTTP_REQUEST_SIGNATURE  0x50545448   /* "HTTP" */

/* keeps state across the chunked parser's calls */
struct weir_http_chunked_s {
    weir_uint_t                  state;
    off_t                        size;      /* of the current chunk left */
    off_t                        length;    /* minimal bytes still needed */
    weir_uint_t                  ext_len;   /* chunk extension bytes seen */
    weir_uint_t                  trailers_n;
    /* added by the parser helper: hex digits of the size line, and
     * trailer section bytes (both capped by weir_http_parse_chunked) */
    weir_uint_t                  digits;
    weir_uint_t                  trailer_len;
    /* added by the trailers helper: the trailer field line being parsed
     * (weir_http_parse.h). trailer_start is where its bytes begin in the
     * buffer of the last call, NULL when that call saw none of them; the
     * offsets count from the line's first byte, across calls */
    unsigned char               *trailer_start;
    weir_uint_t                  trailer_line;  /* trailer_len before it */
    weir_uint_t                  trailer_name_len;
    weir_uint_t                  trailer_value_start;
    weir_uint_t                  trailer_value_end;
};

#endif /* _WEIR_HTTP_REQUEST_H_INCLUDED_ */
