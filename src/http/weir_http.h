#ifndef _WEIR_HTTP_H_INCLUDED_
#define _WEIR_HTTP_H_INCLUDED_

/*
 * HTTP core. Everything above the protocol modules works on the
 * protocol-neutral weir_http_request_t; HTTP/1 (weir_http_v1.c) today,
 * HTTP/2 and HTTP/3 later, produce and consume it through the
 * weir_http_proto_t table in r->proto.
 */

#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"

typedef struct weir_http_request_s         weir_http_request_t;
typedef struct weir_http_connection_s      weir_http_connection_t;
typedef struct weir_http_header_s          weir_http_header_t;
typedef struct weir_http_proto_s           weir_http_proto_t;
typedef struct weir_http_tunnel_io_s       weir_http_tunnel_io_t;
typedef struct weir_http_log_ctx_s         weir_http_log_ctx_t;
typedef struct weir_http_chunked_s         weir_http_chunked_t;
typedef struct weir_http_core_loc_conf_s   weir_http_core_loc_conf_t;
typedef struct weir_http_variable_value_s  weir_http_variable_value_t;
typedef struct weir_http_upstream_s        weir_http_upstream_t;
typedef struct weir_http_ssl_hooks_s       weir_http_ssl_hooks_t;
typedef struct weir_http_v2_hooks_s        weir_http_v2_hooks_t;

typedef weir_int_t (*weir_http_handler_pt)(weir_http_request_t *r);
typedef void (*weir_http_event_handler_pt)(weir_http_request_t *r);
typedef weir_int_t (*weir_http_header_filter_pt)(weir_http_request_t *r);
typedef weir_int_t (*weir_http_body_filter_pt)(weir_http_request_t *r,
    weir_chain_t *chain);
typedef weir_int_t (*weir_http_request_body_filter_pt)(weir_http_request_t *r,
    weir_chain_t *chain);
typedef void (*weir_http_client_body_handler_pt)(weir_http_request_t *r);

#include "weir_http_config.h"
#include "weir_http_request.h"
#include "weir_http_variables.h"
#include "weir_http_script.h"
#include "weir_http_core_module.h"
#include "weir_http_parse.h"
#include "weir_http_v1.h"
#include "weir_http_upstream.h"

struct weir_http_log_ctx_s {
    weir_connection_t    *connection;
    weir_http_request_t  *request;
    weir_http_request_t  *current_request;
};

/* the accept handler of every HTTP listening socket */
void weir_http_init_connection(weir_connection_t *c);

/*
 * TLS (added for the TLS issue). The HTTP core knows no TLS library; the
 * ssl module (src/modules/http_ssl, built in with --with-http_ssl_module
 * or loaded with load_module) fills this table in its preconfiguration
 * and stores it in the core main conf (cmcf->ssl).
 */
struct weir_http_ssl_hooks_s {
    /*
     * An accepted connection on a "listen ... ssl" address, hc = c->data
     * set up (addr_conf, conf_ctx, log). The module runs the handshake
     * (SNI selects the server block: weir_http_find_server, sets
     * hc->ssl_servername and hc->ssl_server; ALPN), bounded by its
     * handshake timeout, and then hands the connection to the protocol
     * ALPN chose: weir_http_v1_init_connection(c) for http/1.1. A client
     * that speaks plain HTTP to the TLS port gets a plain "400 The plain
     * HTTP request was sent to HTTPS port" and the connection closes.
     * On any failure it closes the connection (weir_http_close_connection).
     */
    void        (*init_connection)(weir_connection_t *c);

    /*
     * The upstream side: u->peer.connection is connected (fresh, c->ssl
     * NULL) and u->ssl is set. The module puts TLS on it per the
     * request's proxy_ssl_* configuration (SNI, verification, client
     * certificate, session reuse), takes over c's read and write
     * handlers for the handshake, bounded by the core's connect timer
     * (already armed on c->write; the module must not delete it), and
     * calls weir_http_upstream_ssl_done(u, rc) exactly once when done:
     * WEIR_OK (handshake complete, c->recv/send/writev are TLS now),
     * WEIR_ERROR (failed or verification refused: logged at error with
     * the reason, "upstream SSL certificate verify error: ... while SSL
     * handshaking to upstream") or WEIR_AGAIN is never passed. Returns
     * WEIR_OK (started; done will be called, possibly before this
     * returns) or WEIR_ERROR (could not start: done is not called).
     */
    weir_int_t  (*upstream_handshake)(weir_http_upstream_t *u);

    /*
     * Before the first connect of a request with u->ssl: set
     * u->peer.key (in r->pool) to what identifies the TLS connection the
     * request's proxy_ssl_* configuration would make, so that the
     * keep-alive pool and the session cache never hand a connection or
     * a session made with other settings (another trust store, name,
     * client certificate ...) to this request. The handshake then uses
     * exactly what the key says. WEIR_OK or WEIR_ERROR (logged).
     */
    weir_int_t  (*upstream_key)(weir_http_upstream_t *u);
};

/*
 * HTTP/2 (src/http/v2, --with-http_v2_module). The core and the other
 * protocol modules reach it only through this table, which the v2
 * module puts in cmcf->v2 in its preconfiguration (NULL without it), so
 * that the ssl module, built in or loaded, needs no symbol of it.
 */
struct weir_http_v2_hooks_s {
    /* is HTTP/2 enabled for this connection (hc = c->data: "listen ...
     * http2" on its address, or "http2 on" in its server block, the one
     * SNI selected on TLS)? */
    weir_uint_t  (*enabled)(weir_connection_t *c);

    /*
     * Starts an HTTP/2 session on c (hc = c->data, c->read/c->write
     * taken over): after ALPN chose "h2", or on a plain connection
     * whose first bytes are the client preface, which are given in
     * data[0 .. len - 1] (copied: the caller frees them after the
     * call). On failure it closes c.
     */
    void         (*init_connection)(weir_connection_t *c,
                                    unsigned char *data, size_t len);

    /* the origin protocol of "proxy_http_version 2"
     * (weir_http_v2_upstream.c) */
    weir_http_upstream_proto_t  *upstream;
};

/* request lifecycle: see docs/dev/lifetimes.md */
weir_http_request_t *weir_http_create_request(weir_connection_t *c,
    weir_http_connection_t *hc);
/* c->log names the client and c's current request (c->pool); WEIR_OK or
 * WEIR_ERROR */
weir_int_t weir_http_init_connection_log(weir_connection_t *c);
void weir_http_finalize_request(weir_http_request_t *r, weir_int_t rc);
void weir_http_close_request(weir_http_request_t *r, weir_int_t rc);
void weir_http_free_request(weir_http_request_t *r, weir_int_t rc);
void weir_http_run_posted_requests(weir_connection_t *c);
/* runs the handler for r's current state: r->read_event_handler or
 * r->write_event_handler, from the connection's events */
void weir_http_request_handler(weir_event_t *ev);
/* cheap no-op handlers for r->read/write_event_handler */
void weir_http_request_empty_handler(weir_http_request_t *r);
void weir_http_block_reading(weir_http_request_t *r);
void weir_http_test_reading(weir_http_request_t *r);
/* added by the request helper: the protocol calls it when the request
 * head is complete; the request moves from the shared "reading" counter
 * to "writing" (weir_stat_reading/writing) */
void weir_http_request_head_done(weir_http_request_t *r);

/* server and location selection */
weir_int_t weir_http_set_virtual_server(weir_http_request_t *r,
    weir_str_t *host);
weir_int_t weir_http_validate_host(weir_str_t *host, weir_pool_t *pool,
    weir_uint_t alloc);
void weir_http_update_location_config(weir_http_request_t *r);
void weir_http_handler(weir_http_request_t *r);
/* (B2) both take a reference for the new run and return WEIR_DONE; the
 * caller then drops its own with weir_http_finalize_request(r, WEIR_DONE)
 * (a content handler by returning WEIR_DONE). docs/dev/http-phases.md */
weir_int_t weir_http_internal_redirect(weir_http_request_t *r,
    weir_str_t *uri, weir_str_t *args);
weir_int_t weir_http_named_location(weir_http_request_t *r,
    weir_str_t *name);

/* responses */
weir_int_t weir_http_send_header(weir_http_request_t *r);

/*
 * What may go on the wire in a head, in any protocol: a field name is a
 * token (RFC 9110 5.1), a field value holds no CR, LF or NUL (5.5: the
 * three that would end the field or the head early). Every serializer
 * of a head checks what it writes with these.
 */
weir_uint_t weir_http_valid_header_name(weir_str_t *name);
weir_uint_t weir_http_valid_header_value(weir_str_t *value);

/*
 * A decoded URI path escaped again for a head (a Location, a request to
 * an origin): controls, space, "#", "%", "?" and non-ASCII become %XX,
 * as nginx's NGX_ESCAPE_URI does. _len is the size of the result.
 */
size_t weir_http_escape_uri_len(unsigned char *src, size_t len);
unsigned char *weir_http_escape_uri(unsigned char *dst, unsigned char *src,
    size_t len);
/* the Location of the "add a slash" redirects: r->uri escaped, "/", then
 * "?" and r->args when there are some; in r->pool. WEIR_OK or
 * WEIR_ERROR */
weir_int_t weir_http_slash_location(weir_http_request_t *r,
    weir_str_t *location);
weir_int_t weir_http_output_filter(weir_http_request_t *r,
    weir_chain_t *in);
/* a complete response with a built-in or error_page body for status
 * (4xx, 5xx, 3xx with Location); returns what finalize expects */
weir_int_t weir_http_special_response_handler(weir_http_request_t *r,
    weir_int_t status);
weir_int_t weir_http_filter_finalize_request(weir_http_request_t *r,
    weir_module_t *m, weir_int_t error);
/* the reason phrase of a status code, NULL when weir knows none */
const char *weir_http_status_reason(weir_uint_t status);
/* sends status with body text (return directive and friends) */
weir_int_t weir_http_send_response(weir_http_request_t *r,
    weir_uint_t status, weir_str_t *content_type, weir_str_t *body);
weir_int_t weir_http_discard_request_body(weir_http_request_t *r);
weir_int_t weir_http_read_client_request_body(weir_http_request_t *r,
    weir_http_client_body_handler_pt post_handler);
/* arms or re-arms reading of a streamed (unbuffered) request body:
 * r->proto->read_unbuffered */
weir_int_t weir_http_read_unbuffered_request_body(weir_http_request_t *r);
/* an unlinked temporary file for r's data (request body, upstream
 * response), closed with r->pool; NULL on failure (logged) */
weir_file_t *weir_http_open_temp_file(weir_http_request_t *r);
/* a buffered body: writes what r->request_body->bufs holds in memory to
 * the body's temporary file (opened the first time), which is then the
 * one buffer of rb->bufs; WEIR_OK or WEIR_HTTP_INTERNAL_SERVER_ERROR
 * (logged). Every protocol's reader calls it when its block is full and
 * at the end once the body spilled (rb->temp_file) */
weir_int_t weir_http_request_body_spill(weir_http_request_t *r);
/*
 * Added by the body helper (weir_http_request_body.c): the request body
 * of a byte-stream protocol (HTTP/1). weir_http_v1_proto's read_body,
 * read_unbuffered and discard_body may point straight at these. They
 * take the body bytes that arrived with the head from r->header_in
 * (advancing its pos, so what follows the body stays there for the next
 * pipelined request) and then read r->connection, never past the end of
 * the body.
 * read: WEIR_OK (whole body passed on), WEIR_AGAIN (it goes on from the
 * read event; r->read_event_handler is set), an HTTP status or
 * WEIR_ERROR. discard: WEIR_OK (nothing left), WEIR_AGAIN (discarding
 * goes on in the background holding one reference on r->main, with
 * r->discard_body set and r->read_event_handler set to the discarder:
 * whoever finalizes must leave that handler in place while
 * r->discard_body is set), or an error (the connection cannot be kept).
 */
weir_int_t weir_http_read_request_body_stream(weir_http_request_t *r);
weir_int_t weir_http_read_unbuffered_request_body_stream(
    weir_http_request_t *r);
weir_int_t weir_http_discard_request_body_stream(weir_http_request_t *r);
/* what a protocol decoded of the request body, on its way to the
 * request body filters: checked against client_max_body_size as it
 * arrives. WEIR_OK or an HTTP status (413) */
weir_int_t weir_http_request_body_filter(weir_http_request_t *r,
    weir_chain_t *in);
/* the request announced "Expect: 100-continue" (HTTP/1.1 only) */
weir_uint_t weir_http_request_expects_continue(weir_http_request_t *r);

/* URI helpers */
weir_int_t weir_http_parse_unsafe_uri(weir_http_request_t *r,
    weir_str_t *uri, weir_str_t *args, weir_uint_t *flags);
weir_int_t weir_http_arg(weir_http_request_t *r, unsigned char *name,
    size_t len, weir_str_t *value);
void weir_http_split_args(weir_http_request_t *r, weir_str_t *uri,
    weir_str_t *args);
unsigned char *weir_http_map_uri_to_path(weir_http_request_t *r,
    weir_str_t *path, size_t *root_length, size_t reserved);
weir_int_t weir_http_auth_basic_user(weir_http_request_t *r);
weir_int_t weir_http_set_content_type(weir_http_request_t *r);
weir_int_t weir_http_set_etag(weir_http_request_t *r);
void weir_http_weak_etag(weir_http_request_t *r);
/* adds a header to r->headers_out.headers; returns it or NULL */
weir_http_header_t *weir_http_add_header_out(weir_http_request_t *r,
    const char *name, weir_str_t *value);
void weir_http_clear_header_out(weir_http_header_t **h);

extern weir_module_t   weir_http_module;

/* the $upstream_* variables (weir_http_upstream_variables.c), added by the
 * upstream module's preconfiguration */
weir_int_t weir_http_upstream_add_variables(weir_conf_t *cf);
extern weir_str_t      weir_http_html_default_types[];

/* the tops of the filter chains, set when the chains are built */
extern weir_http_header_filter_pt  weir_http_top_header_filter;
extern weir_http_body_filter_pt    weir_http_top_body_filter;
extern weir_http_request_body_filter_pt  weir_http_top_request_body_filter;

#define weir_http_set_connection_log(c, l)                                    \
    do {                                                                      \
        (c)->log->file = (l)->file;                                           \
        (c)->log->next = (l)->next;                                           \
        (c)->log->writer = (l)->writer;                                       \
        (c)->log->wdata = (l)->wdata;                                         \
        if (!((c)->log->log_level & WEIR_LOG_DEBUG_CONNECTION)) {             \
            (c)->log->log_level = (l)->log_level;                             \
        }                                                                     \
    } while (0)

#define WEIR_LOG_DEBUG_CONNECTION  0x80000000

#endif /* _WEIR_HTTP_H_INCLUDED_ */
