#ifndef _WEIR_HTTP_CORE_MODULE_H_INCLUDED_
#define _WEIR_HTTP_CORE_MODULE_H_INCLUDED_

/*
 * The HTTP core module: http/server/location blocks, listen,
 * server_name, the limits and timeouts every request lives under, and
 * the phase engine.
 */

#define WEIR_HTTP_GZIP_PROXIED_OFF  0x0002

#define WEIR_HTTP_SERVER_TOKENS_OFF    0
#define WEIR_HTTP_SERVER_TOKENS_ON     1
#define WEIR_HTTP_SERVER_TOKENS_BUILD  2

#define WEIR_HTTP_IMS_OFF     0
#define WEIR_HTTP_IMS_EXACT   1
#define WEIR_HTTP_IMS_BEFORE  2

/* options of one "listen" directive */
typedef struct {
    weir_sockaddr_t              sockaddr;
    socklen_t                    socklen;
    weir_str_t                   addr_text;

    unsigned                     set:1;
    unsigned                     default_server:1;
    unsigned                     bind:1;
    unsigned                     wildcard:1;
    unsigned                     ssl:1;
    unsigned                     http2:1;
    unsigned                     ipv6only:1;
    unsigned                     deferred_accept:1;
    unsigned                     reuseport:1;

    int                          backlog;
    int                          rcvbuf;
    int                          sndbuf;
} weir_http_listen_opt_t;

typedef struct weir_http_phase_handler_s  weir_http_phase_handler_t;

typedef weir_int_t (*weir_http_phase_handler_pt)(weir_http_request_t *r,
    weir_http_phase_handler_t *ph);

/* one step of the flattened phase engine */
struct weir_http_phase_handler_s {
    weir_http_phase_handler_pt   checker;
    weir_http_handler_pt         handler;
    weir_uint_t                  next;      /* the first of the next phase */
    weir_uint_t                  phase;
    const char                  *name;
};

typedef struct {
    weir_http_phase_handler_t   *handlers;  /* ends with checker NULL */
    weir_uint_t                  server_rewrite_index;
    weir_uint_t                  location_rewrite_index;
    /* added by B2: the log phase is not part of handlers[]; the request
     * freeing code runs it through weir_http_run_log_handlers() */
    weir_http_handler_pt        *log_handlers;
    weir_uint_t                  nlog_handlers;
} weir_http_phase_engine_t;

/* added by B2: clcf->satisfy */
#define WEIR_HTTP_SATISFY_ALL  0
#define WEIR_HTTP_SATISFY_ANY  1

typedef struct {
    weir_array_t                 servers;   /* weir_http_core_srv_conf_t * */

    weir_http_phase_engine_t     phase_engine;

    weir_hash_t                  variables_hash;
    weir_array_t                 variables;         /* indexed */
    weir_array_t                 prefix_variables;  /* $arg_, $http_ ... */
    weir_uint_t                  ncaptures;

    weir_uint_t                  server_names_hash_max_size;
    weir_uint_t                  server_names_hash_bucket_size;
    weir_uint_t                  variables_hash_max_size;
    weir_uint_t                  variables_hash_bucket_size;

    weir_array_t                *variables_keys;   /* weir_hash_key_t */

    weir_array_t                *ports;     /* weir_http_conf_port_t */

    /* added for TLS: set by the ssl module (built in or loaded) in its
     * preconfiguration, NULL without it; per configuration, so a reload
     * without the module drops it cleanly */
    weir_http_ssl_hooks_t       *ssl;
    /* added for HTTP/2: set by the v2 module in its preconfiguration,
     * NULL when weir is built without it */
    weir_http_v2_hooks_t        *v2;
    /* added for interception: set by the mitm module (NULL without
     * it); the forward proxy gives it to every CONNECT's upstream
     * (weir_http_upstream_t.intercept) */
    weir_int_t                 (*connect_intercept)(weir_http_upstream_t *u,
                                                    weir_str_t *preread);
    /* lines other modules add to stub_status (of
     * weir_http_status_line_t), after nginx's four */
    weir_array_t                 status_lines;
} weir_http_core_main_conf_t;

/* one line of stub_status: at most max bytes written from p */
typedef struct {
    size_t                       max;
    unsigned char             *(*write)(weir_http_request_t *r,
                                        unsigned char *p,
                                        unsigned char *last);
} weir_http_status_line_t;

typedef struct {
    /* array of weir_http_server_name_t, "server_name" names */
    weir_array_t                 server_names;

    /* server ctx */
    weir_http_conf_ctx_t        *ctx;

    unsigned char               *file_name;
    weir_uint_t                  line;

    weir_str_t                   server_name;

    size_t                       connection_pool_size;
    size_t                       request_pool_size;
    size_t                       client_header_buffer_size;

    weir_bufs_t                  large_client_header_buffers;

    weir_msec_t                  client_header_timeout;

    weir_flag_t                  ignore_invalid_headers;
    weir_flag_t                  merge_slashes;
    weir_flag_t                  underscores_in_headers;
    weir_flag_t                  strict_line_endings;
    weir_uint_t                  max_headers;

    unsigned                     listen:1;
    unsigned                     captures:1;
    unsigned                     allow_connect:1;   /* a module takes
                                                       CONNECT here (the
                                                       forward proxy);
                                                       else 405 */

    weir_http_core_loc_conf_t  **named_locations;
} weir_http_core_srv_conf_t;

/* server_name entries: exact, "*.wildcard", "wildcard.*", "~regex" */
typedef struct {
    weir_regex_t                *regex;
    weir_http_core_srv_conf_t   *server;    /* virtual name server conf */
    weir_str_t                   name;
    unsigned                     wildcard_head:1;   /* *.example.com */
    unsigned                     wildcard_tail:1;   /* www.example.* */
    /* added by the http block helper: the compiled "~regex" name with its
     * capture variables (regex above is http_regex->regex) */
    weir_http_regex_t           *http_regex;
} weir_http_server_name_t;

/* the servers that share one address: the default one first, then the
 * lookup structures built from their server_name lists */
typedef struct {
    weir_hash_t                  exact;     /* name -> srv conf */
    weir_array_t                 wc_head;   /* of weir_http_server_name_t,
                                               longest suffix first */
    weir_array_t                 wc_tail;
    weir_http_server_name_t     *regex;
    weir_uint_t                  nregex;
} weir_http_virtual_names_t;

typedef struct {
    /* the default server configuration for this address:port */
    weir_http_core_srv_conf_t   *default_server;
    weir_http_virtual_names_t   *virtual_names;

    unsigned                     ssl:1;
    unsigned                     http2:1;
} weir_http_addr_conf_t;

/* what a listening socket's "servers" points at: the addresses served
 * through it (one unless the socket is a wildcard bind) */
typedef struct {
    weir_uint_t                  naddrs;
    struct sockaddr             *sockaddrs;     /* naddrs entries */
    socklen_t                   *socklens;
    weir_http_addr_conf_t       *confs;         /* naddrs entries */
    /*
     * Added by the http block helper. sockaddrs[i] is right only for
     * AF_INET (an IPv6 address does not fit a struct sockaddr): use
     * weir_http_port_sockaddr(port, i) / addrs[i], which hold every family.
     * When naddrs > 1 the socket is a wildcard one: the last entry is the
     * wildcard address and serves whatever local address matches none of
     * the others.
     */
    weir_sockaddr_t             *addrs;         /* naddrs entries */
} weir_http_port_t;

#define weir_http_port_sockaddr(port, i)                                      \
    (&(port)->addrs[i].sockaddr)

/* configuration-time: port -> addresses -> servers */
typedef struct {
    int                          family;
    in_port_t                    port;
    weir_array_t                 addrs;     /* weir_http_conf_addr_t */
} weir_http_conf_port_t;

typedef struct {
    weir_http_listen_opt_t       opt;
    weir_http_core_srv_conf_t   *default_server;
    weir_array_t                 servers;   /* weir_http_core_srv_conf_t * */
} weir_http_conf_addr_t;

typedef struct {
    weir_int_t                   status;
    weir_int_t                   overwrite;
    weir_http_complex_value_t    value;
    weir_str_t                   args;
} weir_http_err_page_t;

typedef struct {
    weir_array_t                *lengths;
    weir_array_t                *values;
    weir_str_t                   name;
    unsigned                     code:10;
    unsigned                     test_dir:1;
    /* added by the http block helper: name with variables, or NULL; the
     * array ends with an entry whose name.len is 0 and value NULL */
    weir_http_complex_value_t   *value;
} weir_http_try_file_t;

typedef struct weir_http_location_tree_node_s  weir_http_location_tree_node_t;

struct weir_http_core_loc_conf_s {
    weir_str_t                   name;      /* location name */
    weir_str_t                   escaped_name;

    weir_regex_t                *regex;
    /* added by the http block helper: the location's regex with its
     * capture variables (regex above is http_regex->regex); match it with
     * weir_http_regex_exec(r, clcf->http_regex, &r->uri) */
    weir_http_regex_t           *http_regex;

    unsigned                     noname:1;   /* "if () {}" */
    unsigned                     named:1;    /* @name */
    unsigned                     exact_match:1;      /* = */
    unsigned                     noregex:1;  /* ^~ */
    unsigned                     auto_redirect:1;
    unsigned                     regex_caseless:1;

    weir_http_location_tree_node_t   *static_locations;
    weir_http_core_loc_conf_t       **regex_locations;

    /* pointer to the modules' loc_conf array of this location */
    void                       **loc_conf;

    uint32_t                     limit_except;
    void                       **limit_except_loc_conf;

    /* content handler a module (return, proxy, status) put here */
    weir_http_handler_pt         handler;

    /* location name length for the alias directive */
    size_t                       alias;
    weir_str_t                   root;      /* root, alias */
    weir_str_t                   post_action;

    weir_array_t                *root_lengths;
    weir_array_t                *root_values;

    /* of weir_hash_key_t: lowercase extension -> weir_str_t *type */
    weir_array_t                *types;
    weir_hash_t                  types_hash;
    weir_str_t                   default_type;

    off_t                        client_max_body_size;
    off_t                        directio;
    size_t                       client_body_buffer_size;
    size_t                       send_lowat;
    size_t                       postpone_output;
    size_t                       sendfile_max_chunk;
    size_t                       read_ahead;

    weir_msec_t                  client_body_timeout;
    weir_msec_t                  send_timeout;
    weir_msec_t                  keepalive_timeout;
    weir_msec_t                  keepalive_drain_timeout;
    weir_msec_t                  lingering_time;
    weir_msec_t                  lingering_timeout;
    weir_msec_t                  resolver_timeout;
    weir_msec_t                  auth_delay;

    time_t                       keepalive_header;

    weir_uint_t                  keepalive_requests;
    weir_uint_t                  keepalive_disable;
    weir_uint_t                  satisfy;
    weir_uint_t                  lingering_close;
    weir_uint_t                  if_modified_since;
    weir_uint_t                  max_ranges;
    weir_uint_t                  client_body_in_file_only;

    weir_flag_t                  client_body_in_single_buffer;
    weir_flag_t                  internal;
    weir_flag_t                  sendfile;
    weir_flag_t                  aio;
    weir_flag_t                  tcp_nopush;
    weir_flag_t                  tcp_nodelay;
    weir_flag_t                  reset_timedout_connection;
    weir_flag_t                  absolute_redirect;
    weir_flag_t                  server_name_in_redirect;
    weir_flag_t                  port_in_redirect;
    weir_flag_t                  msie_padding;
    weir_flag_t                  log_not_found;
    weir_flag_t                  log_subrequest;
    weir_flag_t                  recursive_error_pages;
    weir_uint_t                  server_tokens;
    weir_flag_t                  chunked_transfer_encoding;
    weir_flag_t                  etag;

    weir_array_t                *error_pages;   /* weir_http_err_page_t */
    weir_http_try_file_t        *try_files;     /* try_files */

    weir_log_t                  *error_log;

    weir_queue_t                *locations;
};

typedef struct {
    weir_queue_t                 queue;
    weir_http_core_loc_conf_t   *exact;
    weir_http_core_loc_conf_t   *inclusive;
    weir_str_t                  *name;
    unsigned char               *file_name;
    weir_uint_t                  line;
    weir_queue_t                 list;
} weir_http_location_queue_t;

/*
 * The order of the location tree, for building and searching it alike:
 * bytes, but "/" below every other byte, so that "/a/" comes before
 * "/a-a" and a search for "/a" that misses only the slash of "/a/"
 * (auto_redirect) goes the way "/a/" lies. Returns <0, 0 or >0.
 */
int weir_http_location_cmp(const unsigned char *a, const unsigned char *b,
    size_t n);

struct weir_http_location_tree_node_s {
    weir_http_location_tree_node_t   *left;
    weir_http_location_tree_node_t   *right;
    weir_http_location_tree_node_t   *tree;

    weir_http_core_loc_conf_t        *exact;
    weir_http_core_loc_conf_t        *inclusive;

    unsigned char                     auto_redirect;
    unsigned char                     len;
    unsigned char                     name[1];
};

/*
 * Per downstream transport connection (shared by the requests of a
 * keep-alive HTTP/1 connection, and by the streams of HTTP/2 and HTTP/3
 * later). Lives in c->pool.
 */
/*
 * A connection whose requests all go to one origin, named before they
 * came: the inside of a forward proxy's CONNECT that was intercepted
 * (decrypted, or plain HTTP where TLS was expected), set by the mitm
 * module. The forward proxy sends every request of it that no location
 * answers itself to scheme://authority, and answers 502 naming error
 * when the origin already failed (its certificate did not verify).
 */
typedef struct {
    weir_str_t                   authority;     /* host:port */
    const char                  *error;
    void                        *data;          /* the interceptor's */
    unsigned                     ssl:1;         /* https to the origin */
    unsigned                     origin_h2:1;   /* its ALPN chose h2 */
} weir_http_forward_target_t;

struct weir_http_connection_s {
    weir_http_addr_conf_t       *addr_conf;
    weir_http_conf_ctx_t        *conf_ctx;      /* default server's */

    weir_http_request_t         *request;       /* H1: the current one */
    /* requests begun on this transport connection, whatever carried
     * them (keepalive_requests, $connection_requests) */
    weir_uint_t                  requests;

    weir_chain_t                *busy;          /* large header buffers */
    weir_int_t                   nbusy;
    weir_chain_t                *free;

    weir_str_t                   ssl_servername;
    /* added for TLS: the server block the client's SNI selected (NULL:
     * no SNI, or no TLS); a request whose Host selects another server
     * block gets 421 (weir_http_set_virtual_server) */
    weir_http_core_srv_conf_t   *ssl_server;

    unsigned                     ssl:1;
    unsigned                     proxy_protocol:1;
    unsigned                     pipeline:1;    /* H1: bytes after a request */
    unsigned                     keepalive:1;

    /* a lingering close (weir_http_lingering_close): its end and the
     * wait for more input */
    time_t                       lingering_deadline;
    weir_msec_t                  lingering_timeout;

    /* added by the request helper: the protocol's own per-connection
     * state (HTTP/1: the drain timeout), in c->pool */
    void                        *proto_ctx;

    /* added for interception: the origin of all requests (NULL: each
     * request names its own) */
    weir_http_forward_target_t  *forward;
    /* the server block of every request, whatever its Host says (NULL:
     * chosen by name) */
    weir_http_core_srv_conf_t   *fixed_server;
    /*
     * HTTP/1: when the current request is done (freed) and the
     * connection is sound, it is handed to takeover(c) instead of being
     * kept alive or closed (cleared before the call); c->data is hc,
     * c->buffer NULL.
     */
    void                       (*takeover)(weir_connection_t *c);
};

/* the phase engine */
void weir_http_core_run_phases(weir_http_request_t *r);
weir_int_t weir_http_core_generic_phase(weir_http_request_t *r,
    weir_http_phase_handler_t *ph);
weir_int_t weir_http_core_rewrite_phase(weir_http_request_t *r,
    weir_http_phase_handler_t *ph);
weir_int_t weir_http_core_find_config_phase(weir_http_request_t *r,
    weir_http_phase_handler_t *ph);
weir_int_t weir_http_core_post_rewrite_phase(weir_http_request_t *r,
    weir_http_phase_handler_t *ph);
weir_int_t weir_http_core_access_phase(weir_http_request_t *r,
    weir_http_phase_handler_t *ph);
weir_int_t weir_http_core_post_access_phase(weir_http_request_t *r,
    weir_http_phase_handler_t *ph);
weir_int_t weir_http_core_content_phase(weir_http_request_t *r,
    weir_http_phase_handler_t *ph);

/* builds cmcf->phase_engine and the filter chains from the modules'
 * declarations (called once per configuration by the http block) */
weir_int_t weir_http_init_phase_engine(weir_conf_t *cf,
    weir_http_core_main_conf_t *cmcf);
weir_int_t weir_http_init_filters(weir_conf_t *cf);
/* (re)links the filter chains from cycle's modules */
weir_int_t weir_http_link_filters(weir_cycle_t *cycle, weir_log_t *log);

/* added by B2 (weir_http_phase.c) */
/* runs the log phase handlers; called once when the request is freed */
void weir_http_run_log_handlers(weir_http_request_t *r);
/* selects r->loc_conf for r->uri from the current location's tree:
 * WEIR_OK (exact or regex match), WEIR_DONE (auto_redirect: the URI
 * lacks only the final slash), WEIR_AGAIN or WEIR_DECLINED (a prefix
 * location or none: r->loc_conf is the best one found), WEIR_ERROR */
weir_int_t weir_http_core_find_location(weir_http_request_t *r);
/* the phase declarations of modules[0 .. n - 1] plus the core's own
 * steps, stable-sorted by (phase, order), in a malloc()ed array that
 * the caller frees; *nout receives the count; NULL on failure */
weir_http_phase_decl_t *weir_http_sort_phase_decls(weir_module_t **modules,
    weir_uint_t n, weir_uint_t *nout);
extern const char  *weir_http_phase_names[];

/*
 * Added for TLS: finds the server block for host among the servers of
 * the connection's address (hc->addr_conf), with the same rules as Host
 * selection (exact, wildcards, regex). host is lowercased and validated
 * in place (a copy is made when alloc). Returns WEIR_OK with *cscfp set
 * (a server_name matched), WEIR_DECLINED with *cscfp the default server
 * (nothing matched), WEIR_ERROR (an invalid name).
 */
weir_int_t weir_http_find_server(weir_connection_t *c, weir_str_t *host,
    weir_uint_t alloc, weir_http_core_srv_conf_t **cscfp);

/* "listen" support for the http block */
weir_int_t weir_http_add_listen(weir_conf_t *cf,
    weir_http_core_srv_conf_t *cscf, weir_http_listen_opt_t *lsopt);
weir_int_t weir_http_add_location(weir_conf_t *cf, weir_queue_t **locations,
    weir_http_core_loc_conf_t *clcf);

/* the resolver of the request's location (NULL: none configured) and
 * its resolver_timeout (weir_http_resolver.c) */
struct weir_resolver_s *weir_http_resolver(weir_http_request_t *r,
    weir_msec_t *timeout);

extern weir_module_t  weir_http_core_module;
extern weir_module_t  weir_http_resolver_module;
extern weir_uint_t    weir_http_max_module;
extern weir_str_t     weir_http_core_get_method;

#endif /* _WEIR_HTTP_CORE_MODULE_H_INCLUDED_ */
