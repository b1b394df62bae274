#ifndef _WEIR_HTTP_V1_H_INCLUDED_
#define _WEIR_HTTP_V1_H_INCLUDED_

/* HTTP/1.0 and HTTP/1.1 downstream connections */

extern weir_http_proto_t  weir_http_v1_proto;

/* a new connection or a keep-alive one waiting for its next request */
void weir_http_v1_init_connection(weir_connection_t *c);
/* the same, with the first bytes of its first request already read
 * (copied) */
void weir_http_v1_init_connection_preread(weir_connection_t *c,
    unsigned char *data, size_t len);
void weir_http_v1_wait_request_handler(weir_event_t *ev);
void weir_http_v1_set_keepalive(weir_http_request_t *r);
void weir_http_close_connection(weir_connection_t *c);
/* read and drop the client's input before closing (lingering_close) */
void weir_http_lingering_close(weir_connection_t *c,
    weir_http_core_loc_conf_t *clcf);


/* shared by weir_http_v1.c (the connection, the request head, what comes
 * after a response) and weir_http_v1_write.c (the response) */

/* per request, in r->pool (r->stream) */
typedef struct {
    /* the start of the header line being read: a partial line moves to
     * a large buffer from here */
    unsigned char               *line_start;
    weir_chain_t                *free;      /* chain links for r->out */
    weir_buf_t                  *file_buf;  /* sendfile off: file data */
    weir_chain_t                *frame_free; /* chunk framing to reuse */
    weir_chain_t                *frame_busy; /* chunk framing not sent */
    unsigned                     headers:1; /* the request line is done */
    unsigned                     last:1;    /* last_buf queued */
} weir_http_v1_stream_t;

/* "name: value\r\n" */
#define weir_http_v1_header_size(h)  ((h)->key.len + (h)->value.len + 4)

weir_int_t weir_http_v1_send_header(weir_http_request_t *r);
weir_int_t weir_http_v1_send_body(weir_http_request_t *r, weir_chain_t *in);
/* trailers need the chunked framing */
weir_uint_t weir_http_v1_trailers_allowed(weir_http_request_t *r);
/* r->out gains b; weir_http_v1_write() sends what r->out holds */
weir_int_t weir_http_v1_queue(weir_http_request_t *r, weir_buf_t *b);
weir_int_t weir_http_v1_write(weir_http_request_t *r);

#endif /* _WEIR_HTTP_V1_H_INCLUDED_ */
