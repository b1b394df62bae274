#ifndef _WEIR_HTTP_PROXY_INT_H_INCLUDED_
#define _WEIR_HTTP_PROXY_INT_H_INCLUDED_

/*
 * What the proxy module's files share:
 *
 *   weir_http_proxy_module.c    the module, its directives and their
 *                               configuration, the content handler
 *   weir_http_proxy_request.c   the request to the origin, and the
 *                               variables proxy_set_header values use
 *                               ($proxy_host, $proxy_add_forwarded, ...)
 *   weir_http_proxy_response.c  the origin's response head into
 *                               r->headers_out (proxy_redirect)
 */


/* what proxy_pass names: the $proxy_host, $proxy_port values and the
 * URI part ("" when proxy_pass has none) */
/* proxy_http_version auto: HTTP/2 or HTTP/1.1, as a TLS origin's ALPN
 * chooses (HTTP/1.1 to a cleartext origin) */
#define WEIR_HTTP_PROXY_VERSION_AUTO  (WEIR_HTTP_VERSION_20 + 1)


typedef struct {
    weir_str_t                   host_header;   /* "host" or "host:port" */
    weir_str_t                   port;          /* "80" */
    weir_str_t                   uri;
    unsigned                     ssl:1;         /* https:// */
} weir_http_proxy_vars_t;


/* one proxy_set_header, compiled */
typedef struct {
    weir_str_t                   key;
    unsigned char               *lowcase_key;
    weir_uint_t                  hash;
    weir_uint_t                  token;
    weir_http_complex_value_t   *value;     /* NULL: never sent */
} weir_http_proxy_header_t;


/* one proxy_redirect */
typedef struct {
    weir_http_complex_value_t   *from;      /* NULL with a regex */
    weir_http_regex_t           *regex;
    weir_http_complex_value_t   *to;
} weir_http_proxy_redirect_t;


typedef struct {
    weir_http_upstream_conf_t    upstream;

    /* proxy_set_header as written (of weir_keyval_t), then compiled */
    weir_array_t                *headers_source;
    weir_array_t                *headers;   /* of weir_http_proxy_header_t */
    weir_http_complex_value_t   *host;      /* Host: NULL for $proxy_host */

    weir_http_complex_value_t   *url;       /* proxy_pass with variables */
    weir_str_t                   url_text;  /* proxy_pass as written */
    weir_str_t                   location;  /* the location's name */
    weir_http_proxy_vars_t       vars;

    weir_http_complex_value_t   *method;
    weir_array_t                *redirects; /* UNSET_PTR, NULL (off) or
                                               of weir_http_proxy_redirect_t */

    weir_flag_t                  pass_request_headers;
    weir_flag_t                  pass_request_body;
    weir_flag_t                  via;
    weir_flag_t                  forward;   /* forward_proxy */
    weir_array_t                *forward_deny;  /* of weir_cidr_t, or
                                                   NULL */
    weir_array_t                *connect_ports; /* of in_port_t pairs
                                                   (first, last): what a
                                                   CONNECT may reach */
    weir_uint_t                  http_version;

    unsigned                     redirect_implicit:1;
} weir_http_proxy_loc_conf_t;


/* per request */
typedef struct {
    weir_http_proxy_vars_t       vars;
    unsigned                     forward:1;     /* forward_proxy: the URI
                                                   is the client's target */
} weir_http_proxy_ctx_t;


/* the size of the buffer of weir_http_proxy_log_safe */
#define WEIR_HTTP_PROXY_LOG_SAFE  (4 * 256 + 8)


/* weir_http_proxy_module.c */
weir_uint_t weir_http_proxy_is_tchar(unsigned char c);
weir_uint_t weir_http_proxy_safe_value(weir_str_t *v);
char *weir_http_proxy_log_safe(char *buf, weir_str_t *s);


/* weir_http_proxy_request.c */
weir_int_t weir_http_proxy_create_request(weir_http_request_t *r);
weir_int_t weir_http_proxy_reinit_request(weir_http_request_t *r);
weir_int_t weir_http_proxy_via_value(weir_pool_t *pool, weir_str_t *old,
    weir_uint_t version, weir_str_t *value);
weir_int_t weir_http_proxy_add_variables(weir_conf_t *cf);


/* weir_http_proxy_response.c */
weir_int_t weir_http_proxy_process_header(weir_http_request_t *r);
void weir_http_proxy_finalize_request(weir_http_request_t *r,
    weir_int_t rc);


extern weir_module_t  weir_http_proxy_module;


#endif /* _WEIR_HTTP_PROXY_INT_H_INCLUDED_ */
