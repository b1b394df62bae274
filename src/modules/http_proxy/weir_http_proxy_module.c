#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"
#include "weir_http_proxy_int.h"


/*
 * The proxy module: proxy_pass to HTTP/1.1 origins. It configures the
 * upstream core (weir_http_upstream.c) per location and fills the
 * protocol-neutral request to the origin (method, authority, URI,
 * headers, body framing) from the client's request; it copies the
 * origin's response head into r->headers_out. It never sees a wire
 * format: the HTTP/1.1 handler (weir_http_upstream_v1.c) does the bytes.
 * docs/http/proxy.md describes the directives.
 *
 * This file is the module, its directives and their configuration, and
 * the content handler; weir_http_proxy_request.c builds the request,
 * weir_http_proxy_response.c takes the response head;
 * weir_http_proxy_int.h is what they share.
 */


/* a proxy_pass URL taken apart */
typedef struct {
    weir_str_t                   host;          /* "name", "[::1]" */
    weir_str_t                   port_text;     /* as written, or "" */
    in_port_t                    port;          /* 80 (443) when not
                                                   written */
    weir_uint_t                  no_port;
    weir_str_t                   uri;           /* from the first "/" */
    weir_uint_t                  ssl;           /* https:// */
} weir_http_proxy_url_t;


static weir_int_t weir_http_proxy_handler(weir_http_request_t *r);
static weir_int_t weir_http_proxy_forward_handler(weir_http_request_t *r);
static weir_int_t weir_http_proxy_run(weir_http_request_t *r,
    weir_str_t *forward);
static weir_int_t weir_http_proxy_forward_target(weir_http_request_t *r,
    weir_http_forward_target_t *ft);
static weir_int_t weir_http_proxy_connect(weir_http_request_t *r,
    weir_http_proxy_loc_conf_t *plcf);
static char *weir_http_proxy_connect_ports(weir_conf_t *cf,
    weir_command_t *cmd, void *conf);
static char *weir_http_proxy_forward_deny(weir_conf_t *cf,
    weir_command_t *cmd, void *conf);
static weir_int_t weir_http_proxy_postconfiguration(weir_conf_t *cf);
static weir_int_t weir_http_proxy_take_url(weir_http_request_t *r,
    weir_str_t *target, weir_http_proxy_ctx_t *ctx);
static weir_int_t weir_http_proxy_eval(weir_http_request_t *r,
    weir_http_proxy_loc_conf_t *plcf, weir_http_proxy_ctx_t *ctx);

static void *weir_http_proxy_create_loc_conf(weir_conf_t *cf);
static char *weir_http_proxy_merge_loc_conf(weir_conf_t *cf, void *parent,
    void *child);

static char *weir_http_proxy_pass(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static char *weir_http_proxy_set_header(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static char *weir_http_proxy_redirect(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);


static weir_conf_enum_t  weir_http_proxy_http_versions[] = {
    { weir_string("1.0"), WEIR_HTTP_VERSION_10 },
    { weir_string("1.1"), WEIR_HTTP_VERSION_11 },
    { weir_string("2"), WEIR_HTTP_VERSION_20 },
    { weir_string("auto"), WEIR_HTTP_PROXY_VERSION_AUTO },
    { weir_null_string, 0 }
};


/* streams of one HTTP/2 session to an origin (a stream id is 31 bits) */
static weir_conf_num_bounds_t  weir_http_proxy_h2_streams_bounds = {
    weir_conf_check_num_bounds, 1, 65536
};


static weir_command_t  weir_http_proxy_commands[] = {

    { weir_string("proxy_pass"),
      WEIR_HTTP_LOC_CONF|WEIR_CONF_TAKE1,
      weir_http_proxy_pass,
      WEIR_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { weir_string("proxy_set_header"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE2,
      weir_http_proxy_set_header,
      WEIR_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { weir_string("proxy_pass_request_headers"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, pass_request_headers),
      NULL },

    { weir_string("proxy_pass_request_body"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, pass_request_body),
      NULL },

    { weir_string("proxy_method"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_http_set_complex_value_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, method),
      NULL },

    { weir_string("proxy_http_version"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_enum_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, http_version),
      &weir_http_proxy_http_versions },

    { weir_string("proxy_hide_header"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_str_array_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, upstream.hide_headers),
      NULL },

    { weir_string("proxy_pass_header"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_str_array_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, upstream.pass_headers),
      NULL },

    { weir_string("proxy_redirect"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE12,
      weir_http_proxy_redirect,
      WEIR_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { weir_string("proxy_intercept_errors"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, upstream.intercept_errors),
      NULL },

    { weir_string("proxy_buffering"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, upstream.buffering),
      NULL },

    { weir_string("proxy_request_buffering"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, upstream.request_buffering),
      NULL },

    { weir_string("proxy_buffers"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE2,
      weir_conf_set_bufs_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, upstream.bufs),
      NULL },

    { weir_string("proxy_buffer_size"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_size_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, upstream.buffer_size),
      NULL },

    { weir_string("proxy_busy_buffers_size"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_size_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, upstream.busy_buffers_size),
      NULL },

    { weir_string("proxy_max_temp_file_size"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_off_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, upstream.max_temp_file_size),
      NULL },

    { weir_string("proxy_temp_file_write_size"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_size_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, upstream.temp_file_write_size),
      NULL },

    { weir_string("proxy_connect_timeout"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_msec_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, upstream.connect_timeout),
      NULL },

    { weir_string("proxy_send_timeout"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_msec_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, upstream.send_timeout),
      NULL },

    { weir_string("proxy_read_timeout"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_msec_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, upstream.read_timeout),
      NULL },

    { weir_string("proxy_next_upstream"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_1MORE,
      weir_conf_set_bitmask_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, upstream.next_upstream),
      &weir_http_upstream_next_masks },

    { weir_string("proxy_next_upstream_tries"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_num_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, upstream.next_upstream_tries),
      NULL },

    { weir_string("proxy_http2_max_concurrent_streams"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_num_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, upstream.http2_max_streams),
      &weir_http_proxy_h2_streams_bounds },

    { weir_string("proxy_http2_ping_idle"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_msec_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, upstream.http2_ping_idle),
      NULL },

    { weir_string("proxy_next_upstream_timeout"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_TAKE1,
      weir_conf_set_msec_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, upstream.next_upstream_timeout),
      NULL },

    { weir_string("proxy_ignore_client_abort"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, upstream.ignore_client_abort),
      NULL },

    { weir_string("proxy_pass_trailers"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, upstream.pass_trailers),
      NULL },

    { weir_string("proxy_socket_keepalive"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, upstream.socket_keepalive),
      NULL },

    { weir_string("proxy_strict_line_endings"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, upstream.strict_line_endings),
      NULL },

    { weir_string("proxy_via"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, via),
      NULL },

    { weir_string("forward_proxy"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      WEIR_HTTP_LOC_CONF_OFFSET,
      offsetof(weir_http_proxy_loc_conf_t, forward),
      NULL },

    { weir_string("forward_proxy_deny"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_1MORE,
      weir_http_proxy_forward_deny,
      WEIR_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { weir_string("forward_proxy_connect_ports"),
      WEIR_HTTP_MAIN_CONF|WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF
      |WEIR_CONF_1MORE,
      weir_http_proxy_connect_ports,
      WEIR_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    weir_null_command
};


static weir_http_phase_decl_t  weir_http_proxy_phases[] = {
    { WEIR_HTTP_CONTENT_PHASE, 100, "forward_proxy",
      weir_http_proxy_forward_handler },
    { 0, 0, NULL, NULL }
};


static weir_http_module_t  weir_http_proxy_module_ctx = {
    weir_http_proxy_add_variables,         /* preconfiguration */
    weir_http_proxy_postconfiguration,     /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    weir_http_proxy_create_loc_conf,       /* create location configuration */
    weir_http_proxy_merge_loc_conf,        /* merge location configuration */

    weir_http_proxy_phases,                /* phase handlers */
    NULL,                                  /* header filters */
    NULL,                                  /* body filters */
    NULL                                   /* request body filters */
};


weir_module_t  weir_http_proxy_module = {
    WEIR_MODULE_V1,
    &weir_http_proxy_module_ctx,           /* module context */
    weir_http_proxy_commands,              /* module directives */
    WEIR_HTTP_MODULE,                      /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    WEIR_MODULE_V1_PADDING
};


/* response headers never relayed: weir writes its own Date and Server;
 * the X-Accel-* ones are instructions to an nginx in front, not to the
 * client */
static weir_str_t  weir_http_proxy_hide_headers[] = {
    weir_string("date"),
    weir_string("server"),
    weir_string("x-pad"),
    weir_string("x-accel-expires"),
    weir_string("x-accel-redirect"),
    weir_string("x-accel-limit-rate"),
    weir_string("x-accel-buffering"),
    weir_string("x-accel-charset"),
    weir_null_string
};


/* ---- small helpers -------------------------------------------------- */

/* RFC 9110 tchar */
weir_uint_t
weir_http_proxy_is_tchar(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
        || (c >= '0' && c <= '9'))
    {
        return 1;
    }

    return c != '\0' && weir_strchr("!#$%&'*+-.^_`|~", c) != NULL;
}


static weir_uint_t
weir_http_proxy_is_alnum(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
           || (c >= '0' && c <= '9');
}


static weir_uint_t
weir_http_proxy_is_hex(unsigned char c)
{
    return (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
           || (c >= '0' && c <= '9');
}


/* a header value weir may put on the wire: no CR, LF or NUL */
weir_uint_t
weir_http_proxy_safe_value(weir_str_t *v)
{
    size_t  i;

    for (i = 0; i < v->len; i++) {
        if (v->data[i] == '\r' || v->data[i] == '\n' || v->data[i] == '\0') {
            return 0;
        }
    }

    return 1;
}


/* s for a log line, at most 256 bytes of it, control bytes and quotes as
 * \xHH: a value refused because it could split a request must not split
 * the log either (buf: WEIR_HTTP_PROXY_LOG_SAFE bytes) */

char *
weir_http_proxy_log_safe(char *buf, weir_str_t *s)
{
    return weir_quote_for_log(buf, WEIR_HTTP_PROXY_LOG_SAFE, s->data,
                              s->len);
}


#define WEIR_HTTP_PROXY_NO_SSL                                                \
    "https in \"proxy_pass\" requires the ssl module (configure "            \
    "--with-http_ssl_module, or load_module "                                 \
    "modules/weir_http_ssl_module.so)"


/* is the ssl module built in or loaded (it set the hooks)? */
static weir_uint_t
weir_http_proxy_have_ssl(weir_http_core_main_conf_t *cmcf)
{
    return cmcf != NULL && cmcf->ssl != NULL
           && cmcf->ssl->upstream_handshake != NULL;
}


/* is name an "upstream" block defined so far? */
static weir_uint_t
weir_http_proxy_upstream_block(weir_conf_t *cf, weir_str_t *name)
{
    weir_uint_t                       i;
    weir_http_upstream_srv_conf_t   **uscfp;
    weir_http_upstream_main_conf_t   *umcf;

    umcf = weir_http_conf_get_module_main_conf(cf, weir_http_upstream_module);
    uscfp = umcf->upstreams.elts;

    for (i = 0; i < umcf->upstreams.nelts; i++) {
        if ((uscfp[i]->flags & WEIR_HTTP_UPSTREAM_CREATE)
            && uscfp[i]->host.len == name->len
            && weir_strncasecmp(uscfp[i]->host.data, name->data, name->len)
               == 0)
        {
            return 1;
        }
    }

    return 0;
}


/*
 * Takes a proxy_pass URL apart: "http://" or "https://", host [":" port]
 * [URI]. Returns NULL or the reason it is invalid (for a log line that
 * names the URL).
 */
static const char *
weir_http_proxy_parse_url(weir_str_t *url, weir_http_proxy_url_t *pu)
{
    weir_int_t      n;
    unsigned char  *p, *last, *host_end;

    weir_memzero(pu, sizeof(weir_http_proxy_url_t));

    if (url->len >= 8
        && weir_strncasecmp(url->data, (unsigned char *) "https://", 8) == 0)
    {
        pu->ssl = 1;
        p = url->data + 8;

    } else if (url->len >= 7
               && weir_strncasecmp(url->data, (unsigned char *) "http://", 7)
                  == 0)
    {
        p = url->data + 7;

    } else {
        return "invalid URL prefix";
    }
    last = url->data + url->len;

    pu->host.data = p;

    if (p < last && *p == '[') {

        /* an IPv6 literal */

        while (p < last && *p != ']') {
            if (!(weir_http_proxy_is_hex(*p) || *p == ':' || *p == '.'
                  || *p == '[' || *p == '%'))
            {
                return "invalid host";
            }
            p++;
        }

        if (p == last || p - pu->host.data < 3) {
            return "invalid host";
        }

        p++;

    } else {
        while (p < last && *p != ':' && *p != '/') {
            if (!(weir_http_proxy_is_alnum(*p) || *p == '-' || *p == '.'
                  || *p == '_'))
            {
                return "invalid host";
            }
            p++;
        }
    }

    host_end = p;
    pu->host.len = host_end - pu->host.data;

    if (pu->host.len == 0) {
        return "no host";
    }

    if (p < last && *p == ':') {
        p++;
        pu->port_text.data = p;

        while (p < last && *p != '/') {
            p++;
        }

        pu->port_text.len = p - pu->port_text.data;

        n = weir_atoi(pu->port_text.data, pu->port_text.len);

        if (n == WEIR_ERROR || n < 1 || n > 65535) {
            return "invalid port";
        }

        pu->port = (in_port_t) n;

    } else if (p < last && *p != '/') {
        return "invalid host";

    } else {
        pu->port = pu->ssl ? 443 : 80;
        pu->no_port = 1;
    }

    pu->uri.data = p;
    pu->uri.len = last - p;

    return NULL;
}


/* $proxy_host, $proxy_port and the URI part from a parsed URL */
static weir_int_t
weir_http_proxy_set_vars(weir_pool_t *pool, weir_http_proxy_url_t *pu,
    weir_http_proxy_vars_t *vars)
{
    /* the scheme's default port is not written in Host */
    if (pu->no_port || pu->port == (pu->ssl ? 443 : 80)) {
        vars->host_header = pu->host;

    } else {
        vars->host_header.len = pu->host.len + 1 + pu->port_text.len;
        vars->host_header.data = pu->host.data;   /* "host:port" as written */
    }

    if (pu->no_port) {
        if (pu->ssl) {
            weir_str_set(&vars->port, "443");

        } else {
            weir_str_set(&vars->port, "80");
        }

    } else {
        vars->port = pu->port_text;
    }

    vars->uri = pu->uri;
    vars->ssl = pu->ssl;

    (void) pool;

    return WEIR_OK;
}


/* ---- the content handler -------------------------------------------- */

static weir_int_t
weir_http_proxy_handler(weir_http_request_t *r)
{
    return weir_http_proxy_run(r, NULL);
}


/*
 * forward_proxy on: a request whose target is an absolute URI
 * ("GET http://host/path HTTP/1.1", what a client configured to use a
 * proxy sends) goes to that URI's host, unless its location has a
 * content handler of its own (proxy_pass, return, ...), which wins.
 * Any other request is left to the other content handlers.
 */
static weir_int_t
weir_http_proxy_forward_handler(weir_http_request_t *r)
{
    weir_str_t                   url, path;
    weir_http_connection_t      *hc;
    weir_http_proxy_loc_conf_t  *plcf;

    plcf = weir_http_get_module_loc_conf(r, weir_http_proxy_module);
    hc = r->http_connection;

    if (r->method == WEIR_HTTP_CONNECT && plcf->forward && r == r->main) {
        return weir_http_proxy_connect(r, plcf);
    }

    if (hc->forward && plcf->forward && r == r->main
        && r->schema_start == NULL)
    {
        /* inside an intercepted CONNECT: the origin is its target */
        return weir_http_proxy_forward_target(r, hc->forward);
    }

    /* an HTTP/1 absolute-form target: the parser saw a scheme */
    if (!plcf->forward || r != r->main || r->schema_start == NULL
        || r->authority.len == 0 || r->schema.len == 0)
    {
        return WEIR_DECLINED;
    }

    path = r->unparsed_uri;

    if (path.len == 0) {
        weir_str_set(&path, "/");
    }

    /* the target as the client wrote it, fragment dropped; the scheme is
     * lowercase for the URL parser */
    if (weir_pstrfmt(r->pool, &url, "%s://%.*s%.*s",
                     (r->schema.len == 5) ? "https" : "http",
                     WEIR_STR_ARG(r->authority), WEIR_STR_ARG(path))
        != WEIR_OK)
    {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    return weir_http_proxy_run(r, &url);
}


/*
 * A request of an intercepted CONNECT (origin-form, as a client sends
 * inside a tunnel) goes to the CONNECT's target. When the origin has
 * already failed - its certificate did not verify when the mitm module
 * looked at it before minting - the client gets 502 with the reason,
 * so that a bad origin is never accepted in silence.
 */
static weir_int_t
weir_http_proxy_forward_target(weir_http_request_t *r,
    weir_http_forward_target_t *ft)
{
    weir_int_t  rc;
    weir_str_t  url, path, type, body;

    if (ft->error) {
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "origin \"%.*s\" refused: %s",
                       WEIR_STR_ARG(ft->authority), ft->error);

        rc = weir_http_discard_request_body(r);

        if (rc != WEIR_OK) {
            return rc;
        }

        weir_str_set(&type, "text/html");

        if (weir_pstrfmt(r->pool, &body,
                         "<html>\r\n<head><title>502 Bad Gateway</title>"
                         "</head>\r\n<body>\r\n<center><h1>502 Bad "
                         "Gateway</h1></center>\r\n<center>weir did not "
                         "trust the origin %.*s: %s</center>\r\n"
                         "<hr><center>weir</center>\r\n</body>\r\n"
                         "</html>\r\n",
                         WEIR_STR_ARG(ft->authority), ft->error)
            != WEIR_OK)
        {
            return WEIR_HTTP_INTERNAL_SERVER_ERROR;
        }

        return weir_http_send_response(r, WEIR_HTTP_BAD_GATEWAY, &type,
                                       &body);
    }

    path = r->unparsed_uri;

    if (path.len == 0 || path.data[0] != '/') {
        return WEIR_HTTP_BAD_REQUEST;
    }

    if (weir_pstrfmt(r->pool, &url, "%s://%.*s%.*s",
                     ft->ssl ? "https" : "http",
                     WEIR_STR_ARG(ft->authority), WEIR_STR_ARG(path))
        != WEIR_OK)
    {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    return weir_http_proxy_run(r, &url);
}


/*
 * CONNECT host:port (authority-form): to a port forward_proxy_connect_ports
 * allows, the host looked up by the resolver; once connected the client
 * gets "200 Connection established" and the bytes go both ways untouched
 * (the upstream core's tunnel: half-close, proxy_read_timeout as the idle
 * time, proxy_connect_timeout, proxy_next_upstream over the addresses).
 */
static weir_int_t
weir_http_proxy_connect(weir_http_request_t *r,
    weir_http_proxy_loc_conf_t *plcf)
{
    weir_int_t     rc, port;
    weir_str_t     url;
    weir_uint_t    i, ok;
    in_port_t     *range;

    if (r->port_start == NULL || r->port_end == NULL
        || r->host_start == NULL || r->host_end == NULL)
    {
        return WEIR_HTTP_BAD_REQUEST;
    }

    port = weir_atoi(r->port_start, (size_t) (r->port_end - r->port_start));

    ok = 0;
    range = plcf->connect_ports->elts;

    for (i = 0; port > 0 && i < plcf->connect_ports->nelts; i++) {
        if (port >= range[2 * i] && port <= range[2 * i + 1]) {
            ok = 1;
            break;
        }
    }

    if (!ok) {
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "CONNECT to \"%.*s\" refused: port %d is not in "
                       "forward_proxy_connect_ports",
                       WEIR_STR_ARG(r->unparsed_uri), (int) port);
        return WEIR_HTTP_FORBIDDEN;
    }

    if (weir_pstrfmt(r->pool, &url, "http://%.*s",
                     WEIR_STR_ARG(r->unparsed_uri))
        != WEIR_OK)
    {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    rc = weir_http_proxy_run(r, &url);

    return rc;
}


static weir_int_t
weir_http_proxy_run(weir_http_request_t *r, weir_str_t *forward)
{
    weir_int_t                   rc;
    weir_http_upstream_t        *u;
    weir_http_proxy_ctx_t       *ctx;
    weir_http_proxy_loc_conf_t  *plcf;
    weir_http_core_main_conf_t  *cmcf;

    plcf = weir_http_get_module_loc_conf(r, weir_http_proxy_module);

    if (weir_http_upstream_create(r) != WEIR_OK) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx = weir_pcalloc(r->pool, sizeof(weir_http_proxy_ctx_t));
    if (ctx == NULL) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    weir_http_set_ctx(r, ctx, weir_http_proxy_module);

    u = r->upstream;

    if (forward) {
        if (weir_http_proxy_take_url(r, forward, ctx) != WEIR_OK) {
            return WEIR_HTTP_BAD_REQUEST;
        }

        /* the target names the origin: never an upstream block */
        u->resolved->by_name = 1;
        u->resolved->no_loop = 1;
        u->resolved->deny = plcf->forward_deny;
        u->forward = 1;
        ctx->forward = 1;

        if (r->method == WEIR_HTTP_CONNECT) {
            /* HTTP/1.1 to the origin only (the tunnel is a TCP one) and
             * no body: the bytes after the head are the tunnel's */
            u->connect = 1;
            u->conf = &plcf->upstream;
            u->proto = &weir_http_upstream_v1_proto;
            weir_str_set(&u->schema, "http://");
            u->create_request = weir_http_proxy_create_request;
            u->reinit_request = weir_http_proxy_reinit_request;
            u->process_header = weir_http_proxy_process_header;
            u->finalize_request = weir_http_proxy_finalize_request;
            u->buffering = 0;
            u->request_buffering = 1;
            cmcf = weir_http_get_module_main_conf(r, weir_http_core_module);
            u->intercept = cmcf->connect_intercept;
            r->main->count++;
            weir_http_upstream_init(r);
            return WEIR_DONE;
        }

    } else if (plcf->url == NULL) {
        ctx->vars = plcf->vars;
        u->upstream = plcf->upstream.upstream;

    } else if (weir_http_proxy_eval(r, plcf, ctx) != WEIR_OK) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    u->conf = &plcf->upstream;
    u->proto = &weir_http_upstream_v1_proto;

    cmcf = weir_http_get_module_main_conf(r, weir_http_core_module);

    if (plcf->http_version == WEIR_HTTP_VERSION_20) {
        /* the configuration made sure the HTTP/2 module is there */
        cmcf = weir_http_get_module_main_conf(r, weir_http_core_module);
        u->proto = cmcf->v2->upstream;
        u->alpn = WEIR_HTTP_UPSTREAM_ALPN_H2;

    } else if (ctx->vars.ssl
               && (plcf->http_version == WEIR_HTTP_PROXY_VERSION_AUTO
                   || (ctx->forward && r->http_connection->forward
                       && r->http_connection->forward->origin_h2
                       && plcf->http_version == WEIR_HTTP_VERSION_11
                       && cmcf->v2)))
    {
        /* (inside an intercepted CONNECT whose origin chose h2 when it
         * was looked at, 1.1 is taken as auto: the origin's choice) */
        /* ALPN "h2,http/1.1": the core takes the other protocol for an
         * attempt whose origin chose http/1.1 */
        cmcf = weir_http_get_module_main_conf(r, weir_http_core_module);
        u->proto = cmcf->v2->upstream;
        u->alt_proto = &weir_http_upstream_v1_proto;
        u->alpn = WEIR_HTTP_UPSTREAM_ALPN_AUTO;
    }

    if (ctx->vars.ssl) {
        /* TLS to the origin: the core has the ssl module's hooks run the
         * handshake on every fresh connection (proxy_ssl_* settings) */
        weir_str_set(&u->schema, "https://");
        u->ssl = 1;

    } else {
        weir_str_set(&u->schema, "http://");
    }

    u->create_request = weir_http_proxy_create_request;
    u->reinit_request = weir_http_proxy_reinit_request;
    u->process_header = weir_http_proxy_process_header;
    u->finalize_request = weir_http_proxy_finalize_request;

    u->buffering = plcf->upstream.buffering ? 1 : 0;

    r->request_body_no_buffering = !plcf->upstream.request_buffering;

    if (plcf->http_version == WEIR_HTTP_VERSION_10
        && r->headers_in.chunked)
    {
        /* an HTTP/1.0 origin takes no chunked body: the length must be
         * known before the head goes out */
        r->request_body_no_buffering = 0;
    }

    u->request_buffering = !r->request_body_no_buffering;

    if (!plcf->pass_request_body) {
        rc = weir_http_discard_request_body(r);

        if (rc != WEIR_OK) {
            return rc;
        }

        /* the reference the body reader would have taken: the core
         * drops it when it finalizes */
        r->main->count++;

        weir_http_upstream_init(r);

        return WEIR_DONE;
    }

    rc = weir_http_read_client_request_body(r, weir_http_upstream_init);

    if (rc >= WEIR_HTTP_SPECIAL_RESPONSE || rc == WEIR_ERROR) {
        return rc;
    }

    return WEIR_DONE;
}


/*
 * proxy_pass with variables: the URL is evaluated and taken apart per
 * request. An IP literal is the peer itself; a name is left for the core
 * to match against the upstream groups (never resolved here).
 */
static weir_int_t
weir_http_proxy_eval(weir_http_request_t *r, weir_http_proxy_loc_conf_t *plcf,
    weir_http_proxy_ctx_t *ctx)
{
    weir_str_t  url;

    if (weir_http_complex_value(r, plcf->url, &url) != WEIR_OK) {
        return WEIR_ERROR;
    }

    return weir_http_proxy_take_url(r, &url, ctx);
}


/* a URL known only now (proxy_pass with variables, a forward proxy's
 * request target) taken apart into u->resolved and ctx->vars */
static weir_int_t
weir_http_proxy_take_url(weir_http_request_t *r, weir_str_t *target,
    weir_http_proxy_ctx_t *ctx)
{
    char                           *err;
    char                            safe[WEIR_HTTP_PROXY_LOG_SAFE];
    const char                     *reason;
    weir_str_t                      url, text, inner;
    weir_array_t                    addrs;
    unsigned char                   buf[sizeof(struct in6_addr)];
    weir_http_proxy_url_t           pu;
    weir_http_upstream_t           *u;
    weir_http_upstream_resolved_t  *rs;

    u = r->upstream;
    url = *target;

    reason = weir_http_proxy_parse_url(&url, &pu);

    if (reason != NULL) {
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "%s in proxy_pass URL \"%s\"", reason,
                       weir_http_proxy_log_safe(safe, &url));
        return WEIR_ERROR;
    }

    if (pu.ssl && !weir_http_proxy_have_ssl(
                      weir_http_get_module_main_conf(r, weir_http_core_module)))
    {
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "https in proxy_pass URL \"%s\" requires the ssl "
                       "module", weir_http_proxy_log_safe(safe, &url));
        return WEIR_ERROR;
    }

    if (weir_http_proxy_set_vars(r->pool, &pu, &ctx->vars) != WEIR_OK) {
        return WEIR_ERROR;
    }

    rs = weir_pcalloc(r->pool, sizeof(weir_http_upstream_resolved_t));
    if (rs == NULL) {
        return WEIR_ERROR;
    }

    rs->host = pu.host;
    rs->port = pu.port;
    rs->no_port = pu.no_port;

    u->resolved = rs;
    u->upstream = NULL;

    /* an IP literal: the peer needs no name lookup */

    if (pu.host.data[0] == '[') {
        inner.data = pu.host.data + 1;
        inner.len = pu.host.len - 2;

    } else {
        inner = pu.host;
    }

    text.data = weir_pnalloc(r->pool, inner.len + 1);
    if (text.data == NULL) {
        return WEIR_ERROR;
    }

    weir_memcpy(text.data, inner.data, inner.len);
    text.data[inner.len] = '\0';

    if (inet_pton(pu.host.data[0] == '[' ? AF_INET6 : AF_INET,
                  (char *) text.data, buf) != 1)
    {
        return WEIR_OK;
    }

    if (weir_pstrfmt(r->pool, &text, "%.*s:%u", WEIR_STR_ARG(pu.host),
                     (unsigned) pu.port)
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    weir_memzero(&addrs, sizeof(weir_array_t));

    err = weir_parse_addr_port(r->pool, &text, pu.port, &addrs);

    if (err != NULL || addrs.nelts == 0) {
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "%s in proxy_pass URL \"%s\"",
                       err ? err : "no address",
                       weir_http_proxy_log_safe(safe, &url));
        return WEIR_ERROR;
    }

    rs->addrs = addrs.elts;
    rs->naddrs = addrs.nelts;

    return WEIR_OK;
}


/* ---- configuration --------------------------------------------------- */

static void *
weir_http_proxy_create_loc_conf(weir_conf_t *cf)
{
    weir_http_proxy_loc_conf_t  *conf;

    conf = weir_pcalloc(cf->pool, sizeof(weir_http_proxy_loc_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    /*
     * set by weir_pcalloc():
     *     conf->upstream.upstream = NULL;
     *     conf->upstream.next_upstream = 0;
     *     conf->upstream.bufs.num = 0;
     *     conf->headers = NULL;
     *     conf->host = NULL;
     *     conf->url = NULL;
     *     conf->location = { 0, NULL };
     *     conf->vars = { ... };
     */

    conf->upstream.connect_timeout = WEIR_CONF_UNSET_MSEC;
    conf->upstream.send_timeout = WEIR_CONF_UNSET_MSEC;
    conf->upstream.read_timeout = WEIR_CONF_UNSET_MSEC;
    conf->upstream.next_upstream_timeout = WEIR_CONF_UNSET_MSEC;
    conf->upstream.next_upstream_tries = WEIR_CONF_UNSET_UINT;
    conf->upstream.http2_max_streams = WEIR_CONF_UNSET_UINT;
    conf->upstream.http2_ping_idle = WEIR_CONF_UNSET_MSEC;

    conf->upstream.buffer_size = WEIR_CONF_UNSET_SIZE;
    conf->upstream.busy_buffers_size = WEIR_CONF_UNSET_SIZE;
    conf->upstream.max_temp_file_size = WEIR_CONF_UNSET;
    conf->upstream.temp_file_write_size = WEIR_CONF_UNSET_SIZE;

    conf->upstream.buffering = WEIR_CONF_UNSET;
    conf->upstream.request_buffering = WEIR_CONF_UNSET;
    conf->upstream.intercept_errors = WEIR_CONF_UNSET;
    conf->upstream.ignore_client_abort = WEIR_CONF_UNSET;
    conf->upstream.pass_trailers = WEIR_CONF_UNSET;
    conf->upstream.socket_keepalive = WEIR_CONF_UNSET;
    conf->upstream.strict_line_endings = WEIR_CONF_UNSET;

    conf->upstream.hide_headers = WEIR_CONF_UNSET_PTR;
    conf->upstream.pass_headers = WEIR_CONF_UNSET_PTR;

    weir_str_set(&conf->upstream.module, "proxy");

    conf->headers_source = WEIR_CONF_UNSET_PTR;
    conf->method = WEIR_CONF_UNSET_PTR;
    conf->redirects = WEIR_CONF_UNSET_PTR;

    conf->pass_request_headers = WEIR_CONF_UNSET;
    conf->pass_request_body = WEIR_CONF_UNSET;
    conf->via = WEIR_CONF_UNSET;
    conf->forward = WEIR_CONF_UNSET;
    conf->connect_ports = WEIR_CONF_UNSET_PTR;
    conf->forward_deny = WEIR_CONF_UNSET_PTR;
    conf->http_version = WEIR_CONF_UNSET_UINT;

    return conf;
}


static weir_int_t
weir_http_proxy_compile(weir_conf_t *cf, weir_str_t *value,
    weir_http_complex_value_t **cv)
{
    weir_http_compile_complex_value_t  ccv;

    *cv = weir_pcalloc(cf->pool, sizeof(weir_http_complex_value_t));
    if (*cv == NULL) {
        return WEIR_ERROR;
    }

    weir_memzero(&ccv, sizeof(weir_http_compile_complex_value_t));

    ccv.cf = cf;
    ccv.value = value;
    ccv.complex_value = *cv;

    return weir_http_compile_complex_value(&ccv);
}


/* adds one compiled header (value NULL or empty: the name is only
 * removed from what the client sent) */
static weir_int_t
weir_http_proxy_add_header(weir_conf_t *cf, weir_http_proxy_loc_conf_t *conf,
    weir_str_t *key, weir_str_t *value)
{
    weir_http_proxy_header_t  *ph;

    ph = weir_array_push(conf->headers);
    if (ph == NULL) {
        return WEIR_ERROR;
    }

    ph->key = *key;
    ph->lowcase_key = weir_pnalloc(cf->pool, key->len);
    if (ph->lowcase_key == NULL) {
        return WEIR_ERROR;
    }

    ph->hash = weir_hash_strlow(ph->lowcase_key, key->data, key->len);
    if (ph->hash == 0) {
        ph->hash = 1;
    }

    ph->token = weir_http_header_token(ph->lowcase_key, key->len, ph->hash);
    ph->value = NULL;

    if (value == NULL || value->len == 0) {
        return WEIR_OK;
    }

    return weir_http_proxy_compile(cf, value, &ph->value);
}


/*
 * The headers of this level: what proxy_set_header says, then the
 * defaults for the names it does not mention (Host $proxy_host, and
 * Connection "close" for an HTTP/1.0 origin; nothing for HTTP/1.1, where
 * the connection stays alive). Host goes to conf->host, the authority.
 */
static weir_int_t
weir_http_proxy_init_headers(weir_conf_t *cf, weir_http_proxy_loc_conf_t *conf)
{
    weir_uint_t     i, host_set, connection_set;
    weir_keyval_t  *kv;

    static weir_str_t  connection = weir_string("Connection");
    static weir_str_t  close = weir_string("close");

    conf->headers = weir_array_create(cf->pool, 8,
                                      sizeof(weir_http_proxy_header_t));
    if (conf->headers == NULL) {
        return WEIR_ERROR;
    }

    conf->host = NULL;
    host_set = 0;
    connection_set = 0;

    kv = conf->headers_source ? conf->headers_source->elts : NULL;

    for (i = 0; conf->headers_source && i < conf->headers_source->nelts; i++)
    {
        if (kv[i].key.len == 4
            && weir_strncasecmp(kv[i].key.data, (unsigned char *) "host", 4)
               == 0)
        {
            host_set = 1;

            if (weir_http_proxy_compile(cf, &kv[i].value, &conf->host)
                != WEIR_OK)
            {
                return WEIR_ERROR;
            }

            continue;
        }

        if (kv[i].key.len == connection.len
            && weir_strncasecmp(kv[i].key.data, connection.data,
                                connection.len)
               == 0)
        {
            connection_set = 1;
        }

        if (weir_http_proxy_add_header(cf, conf, &kv[i].key, &kv[i].value)
            != WEIR_OK)
        {
            return WEIR_ERROR;
        }
    }

    (void) host_set;    /* without one, conf->host NULL: $proxy_host */

    if (!connection_set) {
        if (weir_http_proxy_add_header(cf, conf, &connection,
                                       conf->http_version
                                       == WEIR_HTTP_VERSION_10
                                       ? &close : NULL)
            != WEIR_OK)
        {
            return WEIR_ERROR;
        }
    }

    return WEIR_OK;
}


/* the implicit "proxy_redirect default" of a location with proxy_pass */
static weir_int_t
weir_http_proxy_default_redirect(weir_conf_t *cf,
    weir_http_proxy_loc_conf_t *conf, weir_array_t *a)
{
    weir_str_t                   from, to;
    weir_http_proxy_redirect_t  *pr;

    if (weir_pstrfmt(cf->pool, &from, "http://%.*s%.*s",
                     WEIR_STR_ARG(conf->vars.host_header),
                     conf->vars.uri.len ? (int) conf->vars.uri.len : 1,
                     conf->vars.uri.len ? (const char *) conf->vars.uri.data
                                        : "/")
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    if (conf->vars.uri.len) {
        to = conf->location;

    } else {
        weir_str_set(&to, "/");
    }

    pr = weir_array_push(a);
    if (pr == NULL) {
        return WEIR_ERROR;
    }

    pr->regex = NULL;

    if (weir_http_proxy_compile(cf, &from, &pr->from) != WEIR_OK) {
        return WEIR_ERROR;
    }

    return weir_http_proxy_compile(cf, &to, &pr->to);
}


static char *
weir_http_proxy_merge_loc_conf(weir_conf_t *cf, void *parent, void *child)
{
    weir_http_proxy_loc_conf_t *prev = parent;
    weir_http_proxy_loc_conf_t *conf = child;

    char                           *rv;
    in_port_t                      *range;
    weir_http_upstream_srv_conf_t  *us;
    weir_http_core_main_conf_t     *cmcf;

    weir_conf_merge_value(conf->pass_request_headers,
                          prev->pass_request_headers, 1);
    weir_conf_merge_value(conf->pass_request_body,
                          prev->pass_request_body, 1);
    weir_conf_merge_value(conf->via, prev->via, 0);
    weir_conf_merge_value(conf->forward, prev->forward, 0);
    weir_conf_merge_ptr_value(conf->forward_deny, prev->forward_deny, NULL);

    if (conf->connect_ports == WEIR_CONF_UNSET_PTR) {
        if (prev->connect_ports == WEIR_CONF_UNSET_PTR) {
            /* 443 only: never an open relay to any port by default */
            prev->connect_ports = weir_array_create(cf->pool, 1,
                                                    2 * sizeof(in_port_t));
            if (prev->connect_ports == NULL) {
                return WEIR_CONF_ERROR;
            }

            range = weir_array_push(prev->connect_ports);
            if (range == NULL) {
                return WEIR_CONF_ERROR;
            }

            range[0] = 443;
            range[1] = 443;
        }

        conf->connect_ports = prev->connect_ports;
    }
    weir_conf_merge_uint_value(conf->http_version, prev->http_version,
                               WEIR_HTTP_VERSION_11);
    weir_conf_merge_ptr_value(conf->method, prev->method, NULL);

    if (conf->http_version == WEIR_HTTP_VERSION_20
        || conf->http_version == WEIR_HTTP_PROXY_VERSION_AUTO)
    {
        cmcf = weir_http_conf_get_module_main_conf(cf, weir_http_core_module);

        if (cmcf->v2 == NULL || cmcf->v2->upstream == NULL) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "\"proxy_http_version %s\" requires the "
                                "HTTP/2 module (weir was built without "
                                "nghttp2 or --without-http_v2_module)",
                                conf->http_version == WEIR_HTTP_VERSION_20
                                ? "2" : "auto");
            return WEIR_CONF_ERROR;
        }
    }

    /* proxy_redirect: a level without one inherits the parent's list, but
     * not the parent's implicit default (that names the parent's own
     * proxy_pass and location) */

    if (conf->redirects == WEIR_CONF_UNSET_PTR && !prev->redirect_implicit) {
        conf->redirects = prev->redirects;
    }

    if (conf->redirects == WEIR_CONF_UNSET_PTR) {
        conf->redirects = NULL;

        if (conf->upstream.upstream && conf->url == NULL) {
            conf->redirects = weir_array_create(cf->pool, 1,
                                        sizeof(weir_http_proxy_redirect_t));
            if (conf->redirects == NULL) {
                return WEIR_CONF_ERROR;
            }

            if (weir_http_proxy_default_redirect(cf, conf, conf->redirects)
                != WEIR_OK)
            {
                return WEIR_CONF_ERROR;
            }

            conf->redirect_implicit = 1;

        } else {
            /* unset: a nested location with its own proxy_pass makes its
             * own default */
            conf->redirects = WEIR_CONF_UNSET_PTR;
        }
    }

    /* proxy_set_header: a level without one inherits the whole list */

    if (conf->headers_source == WEIR_CONF_UNSET_PTR) {
        conf->headers_source = prev->headers_source;
    }

    if (conf->headers_source == WEIR_CONF_UNSET_PTR) {
        conf->headers_source = NULL;
    }

    if (weir_http_proxy_init_headers(cf, conf) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    /* the rest belongs to the core; proxy_pass itself is never inherited
     * (a location without it has no proxy handler) */

    us = conf->upstream.upstream;

    rv = weir_http_upstream_merge_conf(cf, &conf->upstream, &prev->upstream,
                                       weir_http_proxy_hide_headers);
    if (rv != WEIR_CONF_OK) {
        return rv;
    }

    conf->upstream.upstream = us;

    return WEIR_CONF_OK;
}


static char *
weir_http_proxy_pass(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_http_proxy_loc_conf_t *plcf = conf;

    const char                  *reason;
    weir_str_t                  *value;
    weir_http_proxy_url_t        pu;
    weir_http_core_loc_conf_t   *clcf;
    weir_http_core_main_conf_t  *cmcf;

    (void) cmd;

    cmcf = weir_http_conf_get_module_main_conf(cf, weir_http_core_module);

    if (plcf->upstream.upstream || plcf->url) {
        return "is duplicate";
    }

    value = cf->args->elts;

    clcf = weir_http_conf_get_module_loc_conf(cf, weir_http_core_module);

    if (clcf->handler != NULL) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "\"proxy_pass\" in a location that already has "
                            "a content handler");
        return WEIR_CONF_ERROR;
    }

    clcf->handler = weir_http_proxy_handler;

    if (clcf->name.len && clcf->name.data[clcf->name.len - 1] == '/') {
        clcf->auto_redirect = 1;
    }

    plcf->url_text = value[1];
    plcf->location = clcf->name;

    if (weir_http_script_variables_count(&value[1])) {

        /* checked as far as can be before a request fills it in */

        if (value[1].len >= 8
            && weir_strncasecmp(value[1].data, (unsigned char *) "https://",
                                8) == 0
            && !weir_http_proxy_have_ssl(cmcf))
        {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                WEIR_HTTP_PROXY_NO_SSL);
            return WEIR_CONF_ERROR;
        }

        if (weir_http_proxy_compile(cf, &value[1], &plcf->url) != WEIR_OK) {
            return WEIR_CONF_ERROR;
        }

        return WEIR_CONF_OK;
    }

    reason = weir_http_proxy_parse_url(&value[1], &pu);

    if (reason != NULL) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0, "%s in \"%.*s\"", reason,
                            WEIR_STR_ARG(value[1]));
        return WEIR_CONF_ERROR;
    }

    if (pu.ssl && !weir_http_proxy_have_ssl(cmcf)) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0, WEIR_HTTP_PROXY_NO_SSL);
        return WEIR_CONF_ERROR;
    }


    if (pu.uri.len && (clcf->regex || clcf->named)) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "\"proxy_pass\" cannot have URI part in "
                            "location given by regular expression, "
                            "or inside named location");
        return WEIR_CONF_ERROR;
    }

    if (weir_http_proxy_set_vars(cf->pool, &pu, &plcf->vars) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    if (pu.ssl && pu.no_port
        && !weir_http_proxy_upstream_block(cf, &pu.host))
    {
        /*
         * An implicit upstream without a port is resolved on port 80 by
         * the upstream core: a name that is no upstream block (defined
         * above) is an origin on port 443.
         */
        pu.no_port = 0;
    }

    plcf->upstream.upstream = weir_http_upstream_add(cf, &pu.host, pu.port,
                                                     pu.no_port, 0);
    if (plcf->upstream.upstream == NULL) {
        return WEIR_CONF_ERROR;
    }

    return WEIR_CONF_OK;
}


static char *
weir_http_proxy_set_header(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_http_proxy_loc_conf_t *plcf = conf;

    size_t          i;
    weir_str_t     *value;
    weir_keyval_t  *kv;

    (void) cmd;

    value = cf->args->elts;

    if (value[1].len == 0) {
        return "has an empty header name";
    }

    for (i = 0; i < value[1].len; i++) {
        if (!weir_http_proxy_is_tchar(value[1].data[i])) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid header name \"%.*s\"",
                                WEIR_STR_ARG(value[1]));
            return WEIR_CONF_ERROR;
        }
    }

    if ((value[1].len == 14
         && weir_strncasecmp(value[1].data,
                             (unsigned char *) "content-length", 14) == 0)
        || (value[1].len == 17
            && weir_strncasecmp(value[1].data,
                                (unsigned char *) "transfer-encoding", 17)
               == 0))
    {
        if (value[2].len == 0) {
            /* nginx configurations remove them this way: weir always
             * writes the framing itself, so there is nothing to do */
            return WEIR_CONF_OK;
        }

        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "\"%.*s\" cannot be set: weir frames the body "
                            "to the origin itself",
                            WEIR_STR_ARG(value[1]));
        return WEIR_CONF_ERROR;
    }

    if (plcf->headers_source == WEIR_CONF_UNSET_PTR) {
        plcf->headers_source = weir_array_create(cf->pool, 4,
                                                 sizeof(weir_keyval_t));
        if (plcf->headers_source == NULL) {
            return WEIR_CONF_ERROR;
        }
    }

    kv = weir_array_push(plcf->headers_source);
    if (kv == NULL) {
        return WEIR_CONF_ERROR;
    }

    kv->key = value[1];
    kv->value = value[2];

    return WEIR_CONF_OK;
}


static char *
weir_http_proxy_redirect(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_http_proxy_loc_conf_t *plcf = conf;

    weir_str_t                  *value, pattern;
    weir_regex_compile_t         rc;
    weir_http_proxy_redirect_t  *pr;

    (void) cmd;

    value = cf->args->elts;

    if (cf->args->nelts == 2) {

        if (weir_str_eq_lit(&value[1], "off")
            || weir_str_eq_lit(&value[1], "false"))
        {
            if (plcf->redirects != WEIR_CONF_UNSET_PTR) {
                return "is duplicate";
            }

            plcf->redirects = NULL;
            return WEIR_CONF_OK;
        }

        if (!weir_str_eq_lit(&value[1], "default")) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid parameter \"%.*s\"",
                                WEIR_STR_ARG(value[1]));
            return WEIR_CONF_ERROR;
        }

        if (plcf->url) {
            return "default cannot be used with \"proxy_pass\" with "
                   "variables";
        }

        if (plcf->upstream.upstream == NULL) {
            return "default must come after \"proxy_pass\"";
        }
    }

    if (plcf->redirects == NULL) {
        return "cannot follow \"proxy_redirect off\"";
    }

    if (plcf->redirects == WEIR_CONF_UNSET_PTR) {
        plcf->redirects = weir_array_create(cf->pool, 2,
                                        sizeof(weir_http_proxy_redirect_t));
        if (plcf->redirects == NULL) {
            return WEIR_CONF_ERROR;
        }
    }

    if (cf->args->nelts == 2) {
        if (weir_http_proxy_default_redirect(cf, plcf, plcf->redirects)
            != WEIR_OK)
        {
            return WEIR_CONF_ERROR;
        }

        return WEIR_CONF_OK;
    }

    pr = weir_array_push(plcf->redirects);
    if (pr == NULL) {
        return WEIR_CONF_ERROR;
    }

    pr->from = NULL;
    pr->regex = NULL;

    if (value[1].len && value[1].data[0] == '~') {
        pattern = value[1];
        pattern.data++;
        pattern.len--;

        weir_memzero(&rc, sizeof(weir_regex_compile_t));

        if (pattern.len && pattern.data[0] == '*') {
            pattern.data++;
            pattern.len--;
            rc.options = WEIR_REGEX_CASELESS;
        }

        if (pattern.len == 0) {
            return "has an empty regular expression";
        }

        rc.pattern = pattern;
        rc.pool = cf->pool;

        pr->regex = weir_http_regex_compile(cf, &rc);
        if (pr->regex == NULL) {
            return WEIR_CONF_ERROR;
        }

    } else if (weir_http_proxy_compile(cf, &value[1], &pr->from) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    if (weir_http_proxy_compile(cf, &value[2], &pr->to) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    return WEIR_CONF_OK;
}


/* forward_proxy_connect_ports 443 8443 9000-9100; */
static char *
weir_http_proxy_connect_ports(weir_conf_t *cf, weir_command_t *cmd,
    void *conf)
{
    weir_http_proxy_loc_conf_t  *plcf = conf;

    weir_int_t      first, last;
    weir_str_t     *value;
    weir_uint_t     i;
    in_port_t      *range;
    unsigned char  *dash;

    (void) cmd;

    if (plcf->connect_ports != WEIR_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    plcf->connect_ports = weir_array_create(cf->pool, cf->args->nelts,
                                            2 * sizeof(in_port_t));
    if (plcf->connect_ports == NULL) {
        return WEIR_CONF_ERROR;
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {
        dash = weir_strlchr(value[i].data, value[i].data + value[i].len,
                            '-');

        if (dash) {
            first = weir_atoi(value[i].data, (size_t) (dash - value[i].data));
            last = weir_atoi(dash + 1, (size_t) (value[i].data + value[i].len
                                                 - dash - 1));
        } else {
            first = weir_atoi(value[i].data, value[i].len);
            last = first;
        }

        if (first < 1 || last > 65535 || last < first) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid port \"%.*s\"",
                                WEIR_STR_ARG(value[i]));
            return WEIR_CONF_ERROR;
        }

        range = weir_array_push(plcf->connect_ports);
        if (range == NULL) {
            return WEIR_CONF_ERROR;
        }

        range[0] = (in_port_t) first;
        range[1] = (in_port_t) last;
    }

    return WEIR_CONF_OK;
}


/* forward_proxy_deny 10.0.0.0/8 169.254.0.0/16 ...; */
static char *
weir_http_proxy_forward_deny(weir_conf_t *cf, weir_command_t *cmd,
    void *conf)
{
    weir_http_proxy_loc_conf_t  *plcf = conf;

    weir_int_t     rc;
    weir_str_t    *value;
    weir_uint_t    i;
    weir_cidr_t   *cidr;

    (void) cmd;

    if (plcf->forward_deny != WEIR_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    plcf->forward_deny = weir_array_create(cf->pool, cf->args->nelts,
                                           sizeof(weir_cidr_t));
    if (plcf->forward_deny == NULL) {
        return WEIR_CONF_ERROR;
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {
        cidr = weir_array_push(plcf->forward_deny);
        if (cidr == NULL) {
            return WEIR_CONF_ERROR;
        }

        rc = weir_parse_cidr(&value[i], cidr);

        if (rc == WEIR_ERROR) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "invalid address \"%.*s\"",
                                WEIR_STR_ARG(value[i]));
            return WEIR_CONF_ERROR;
        }

        if (rc == WEIR_DECLINED) {
            weir_conf_log_error(WEIR_LOG_WARN, cf, 0,
                                "low address bits of %.*s are meaningless",
                                WEIR_STR_ARG(value[i]));
        }
    }

    return WEIR_CONF_OK;
}


/* a server whose own level has forward_proxy on takes CONNECT (the
 * request line is checked before any location is known) */
static weir_int_t
weir_http_proxy_postconfiguration(weir_conf_t *cf)
{
    weir_uint_t                   i;
    weir_http_proxy_loc_conf_t   *plcf;
    weir_http_core_srv_conf_t   **cscfp;
    weir_http_core_main_conf_t   *cmcf;

    cmcf = weir_http_conf_get_module_main_conf(cf, weir_http_core_module);
    cscfp = cmcf->servers.elts;

    for (i = 0; i < cmcf->servers.nelts; i++) {
        plcf = cscfp[i]->ctx->loc_conf[weir_http_proxy_module.ctx_index];

        if (plcf->forward == 1) {
            cscfp[i]->allow_connect = 1;
        }
    }

    return WEIR_OK;
}
