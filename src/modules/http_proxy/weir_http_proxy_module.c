#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"

/*
 * The proxy module: proxy_pass to HTTP/1.1 origins. It configures the
 * upstream core (weir_http_upstream.c) per location and fills the
 * protocol-neutral request to the origin (method, authority, URI,
 * headers, body framing) from the client's request; it copies the
 * origin's response head into r->headers_out. It never sees a wire
 * format: the HTTP/1.1 handler (weir_http_upstream_v1.c) does the bytes.
 * docs/http/proxy.md describes the directives.
 */


#define WEIR_HTTP_PROXY_VIA       "weir"

/* what proxy_pass names: the $proxy_host, $proxy_port values and the
 * URI part ("" when proxy_pass has none) */
typedef struct {
    weir_str_t                   host_header;   /* "host" or "host:port" */
    weir_str_t                   port;          /* "80" */
    weir_str_t                   uri;
    unsigned                     ssl:1;         /* https:// */
} weir_http_proxy_vars_t;

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
    weir_uint_t                  http_version;

    unsigned                     redirect_implicit:1;
} weir_http_proxy_loc_conf_t;

/* per request */
typedef struct {
    weir_http_proxy_vars_t       vars;
} weir_http_proxy_ctx_t;


static weir_int_t weir_http_proxy_handler(weir_http_request_t *r);
static weir_int_t weir_http_proxy_eval(weir_http_request_t *r,
    weir_http_proxy_loc_conf_t *plcf, weir_http_proxy_ctx_t *ctx);
static weir_int_t weir_http_proxy_create_request(weir_http_request_t *r);
static weir_int_t weir_http_proxy_reinit_request(weir_http_request_t *r);
static weir_int_t weir_http_proxy_process_header(weir_http_request_t *r);
static void weir_http_proxy_finalize_request(weir_http_request_t *r,
    weir_int_t rc);

static weir_int_t weir_http_proxy_add_variables(weir_conf_t *cf);
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
    { weir_null_string, 0 }
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

    weir_null_command
};


static weir_http_module_t  weir_http_proxy_module_ctx = {
    weir_http_proxy_add_variables,         /* preconfiguration */
    NULL,                                  /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    weir_http_proxy_create_loc_conf,       /* create location configuration */
    weir_http_proxy_merge_loc_conf,        /* merge location configuration */

    NULL,                                  /* phase handlers */
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


static struct {
    weir_str_t     name;
    weir_uint_t    method;
} weir_http_proxy_methods[] = {
    { weir_string("GET"), WEIR_HTTP_GET },
    { weir_string("HEAD"), WEIR_HTTP_HEAD },
    { weir_string("POST"), WEIR_HTTP_POST },
    { weir_string("PUT"), WEIR_HTTP_PUT },
    { weir_string("DELETE"), WEIR_HTTP_DELETE },
    { weir_string("OPTIONS"), WEIR_HTTP_OPTIONS },
    { weir_string("PATCH"), WEIR_HTTP_PATCH },
    { weir_string("TRACE"), WEIR_HTTP_TRACE },
    { weir_string("CONNECT"), WEIR_HTTP_CONNECT },
    { weir_null_string, 0 }
};


/* ---- small helpers -------------------------------------------------- */

/* RFC 9110 tchar */
static weir_uint_t
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
static weir_uint_t
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

#define WEIR_HTTP_PROXY_LOG_SAFE  (4 * 256 + 8)

static char *
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
    weir_int_t                   rc;
    weir_http_upstream_t        *u;
    weir_http_proxy_ctx_t       *ctx;
    weir_http_proxy_loc_conf_t  *plcf;

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

    if (plcf->url == NULL) {
        ctx->vars = plcf->vars;
        u->upstream = plcf->upstream.upstream;

    } else if (weir_http_proxy_eval(r, plcf, ctx) != WEIR_OK) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    u->conf = &plcf->upstream;
    u->proto = &weir_http_upstream_v1_proto;

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

    if (weir_http_complex_value(r, plcf->url, &url) != WEIR_OK) {
        return WEIR_ERROR;
    }

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


/* ---- the request to the origin --------------------------------------- */

/*
 * The URI the origin is asked for (nginx's rules):
 * - proxy_pass with variables and a URI part: that URI as evaluated;
 * - no URI part and the client's URI unchanged: the client's URI as it
 *   came (r->unparsed_uri), byte for byte;
 * - otherwise the decoded URI, with the matched location prefix replaced
 *   by the URI part, escaped again, and the arguments.
 */
static weir_int_t
weir_http_proxy_build_uri(weir_http_request_t *r,
    weir_http_proxy_loc_conf_t *plcf, weir_http_proxy_ctx_t *ctx,
    weir_str_t *uri)
{
    size_t          loc_len, len;
    unsigned char  *p;

    if (plcf->url && ctx->vars.uri.len) {
        *uri = ctx->vars.uri;
        return WEIR_OK;
    }

    if (ctx->vars.uri.len == 0 && r->valid_unparsed_uri && !r->uri_changed
        && r->unparsed_uri.len)
    {
        *uri = r->unparsed_uri;
        return WEIR_OK;
    }

    loc_len = 0;

    if (ctx->vars.uri.len && r->valid_location
        && r->uri.len >= plcf->location.len
        && weir_memcmp(r->uri.data, plcf->location.data, plcf->location.len)
           == 0)
    {
        loc_len = plcf->location.len;
    }

    len = ctx->vars.uri.len
          + weir_http_escape_uri_len(r->uri.data + loc_len,
                                       r->uri.len - loc_len)
          + 1 + r->args.len + 1;

    p = weir_pnalloc(r->pool, len);
    if (p == NULL) {
        return WEIR_ERROR;
    }

    uri->data = p;

    p = weir_cpymem(p, ctx->vars.uri.data, ctx->vars.uri.len);
    p = weir_http_escape_uri(p, r->uri.data + loc_len, r->uri.len - loc_len);

    if (p == uri->data) {
        *p++ = '/';
    }

    if (r->args.len) {
        *p++ = '?';
        p = weir_cpymem(p, r->args.data, r->args.len);
    }

    uri->len = p - uri->data;

    return WEIR_OK;
}


static weir_http_header_t *
weir_http_proxy_push_header(weir_http_request_t *r, weir_list_t *list,
    weir_str_t *key, unsigned char *lowcase_key, weir_uint_t hash,
    weir_uint_t token, weir_str_t *value)
{
    weir_http_header_t  *h;

    h = weir_list_push(list);
    if (h == NULL) {
        return NULL;
    }

    h->hash = hash;
    h->token = token;
    h->key = *key;
    h->value = *value;
    h->lowcase_key = lowcase_key;
    h->next = NULL;

    (void) r;

    return h;
}


/* "<old>, <version> weir" or "<version> weir" */
static weir_int_t
weir_http_proxy_via_value(weir_pool_t *pool, weir_str_t *old,
    weir_uint_t version, weir_str_t *value)
{
    const char  *v;

    switch (version) {
    case WEIR_HTTP_VERSION_10:
        v = "1.0";
        break;
    case WEIR_HTTP_VERSION_20:
        v = "2";
        break;
    case WEIR_HTTP_VERSION_30:
        v = "3";
        break;
    default:
        v = "1.1";
        break;
    }

    if (old && old->len) {
        return weir_pstrfmt(pool, value, "%.*s, %s " WEIR_HTTP_PROXY_VIA,
                            WEIR_STR_ARG(*old), v);
    }

    return weir_pstrfmt(pool, value, "%s " WEIR_HTTP_PROXY_VIA, v);
}


static weir_int_t
weir_http_proxy_create_request(weir_http_request_t *r)
{
    char                           safe[WEIR_HTTP_PROXY_LOG_SAFE];
    off_t                          len;
    weir_uint_t                    i, j, n, set, via_set, connection_upgrade;
    weir_str_t                     value, via, *upgrade;
    weir_chain_t                  *cl;
    weir_list_part_t              *part;
    weir_http_header_t            *h, *ho;
    weir_http_upstream_t          *u;
    weir_http_proxy_ctx_t         *ctx;
    weir_http_proxy_header_t      *ph;
    weir_http_upstream_request_t  *req;
    weir_http_proxy_loc_conf_t    *plcf;

    static weir_str_t  via_key = weir_string("Via");

    u = r->upstream;
    req = &u->req;
    plcf = weir_http_get_module_loc_conf(r, weir_http_proxy_module);
    ctx = weir_http_get_module_ctx(r, weir_http_proxy_module);

    if (ctx == NULL) {
        weir_log_error(WEIR_LOG_ALERT, r->connection->log, 0,
                       "proxy: no request context while creating the "
                       "request to upstream");
        return WEIR_ERROR;
    }

    /* the method */

    req->method = r->method;
    req->method_name = r->method_name;

    /* the name from weir's own table when the method is a known one:
     * error_page sets r->method_name to weir_http_core_get_method, which
     * is "GET " with its space */

    for (i = 0; weir_http_proxy_methods[i].name.len; i++) {
        if (weir_http_proxy_methods[i].method == r->method) {
            req->method_name = weir_http_proxy_methods[i].name;
            break;
        }
    }

    if (plcf->method) {
        if (weir_http_complex_value(r, plcf->method, &value) != WEIR_OK) {
            return WEIR_ERROR;
        }

        if (value.len) {
            for (i = 0; i < value.len; i++) {
                if (!weir_http_proxy_is_tchar(value.data[i])) {
                    weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                                   "invalid proxy_method \"%s\"",
                                   weir_http_proxy_log_safe(safe, &value));
                    return WEIR_ERROR;
                }
            }

            req->method_name = value;
            req->method = WEIR_HTTP_UNKNOWN;

            for (i = 0; weir_http_proxy_methods[i].name.len; i++) {
                if (weir_str_eq(&weir_http_proxy_methods[i].name, &value)) {
                    req->method = weir_http_proxy_methods[i].method;
                    break;
                }
            }
        }
    }

    weir_str_set(&req->scheme, "http");
    req->http_version = plcf->http_version;

    /* the authority (Host) */

    if (plcf->host) {
        if (weir_http_complex_value(r, plcf->host, &req->authority)
            != WEIR_OK)
        {
            return WEIR_ERROR;
        }

    } else {
        req->authority = ctx->vars.host_header;
    }

    if (!weir_http_proxy_safe_value(&req->authority)) {
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "proxy: the Host value has a CR, LF or NUL");
        return WEIR_ERROR;
    }

    /* the URI */

    if (weir_http_proxy_build_uri(r, plcf, ctx, &req->uri) != WEIR_OK) {
        return WEIR_ERROR;
    }

    u->uri = req->uri;

    /* the headers: proxy_set_header first, then the client's */

    /* room for every header that may be sent (the list grows if Via or
     * anything else needs more): a fixed 16 would take 1 KiB of the
     * request's pool for the few of a typical request */

    n = plcf->headers ? plcf->headers->nelts : 0;

    if (plcf->pass_request_headers) {
        for (part = &r->headers_in.headers.part; part; part = part->next) {
            n += part->nelts;
        }
    }

    if (weir_list_init(&req->headers, r->pool, n + 1,
                       sizeof(weir_http_header_t))
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    upgrade = NULL;
    connection_upgrade = 0;
    via_set = 0;

    ph = plcf->headers ? plcf->headers->elts : NULL;

    for (i = 0; plcf->headers && i < plcf->headers->nelts; i++) {

        if (ph[i].token == WEIR_HTTP_HDR_VIA) {
            via_set = 1;
        }

        if (ph[i].value == NULL) {
            continue;
        }

        if (weir_http_complex_value(r, ph[i].value, &value) != WEIR_OK) {
            return WEIR_ERROR;
        }

        if (value.len == 0) {
            continue;
        }

        if (!weir_http_proxy_safe_value(&value)) {
            weir_log_error(WEIR_LOG_INFO, r->connection->log, 0,
                           "proxy: the value of header \"%.*s\" has a CR, "
                           "LF or NUL: not sent", WEIR_STR_ARG(ph[i].key));
            continue;
        }

        h = weir_http_proxy_push_header(r, &req->headers, &ph[i].key,
                                        ph[i].lowcase_key, ph[i].hash,
                                        ph[i].token, &value);
        if (h == NULL) {
            return WEIR_ERROR;
        }

        if (ph[i].token == WEIR_HTTP_HDR_UPGRADE) {
            upgrade = &h->value;

        } else if (ph[i].token == WEIR_HTTP_HDR_CONNECTION
                   && weir_http_list_has_token(&h->value,
                                     (unsigned char *) "upgrade",
                                     sizeof("upgrade") - 1))
        {
            connection_upgrade = 1;
        }
    }

    req->upgrade = (upgrade != NULL && connection_upgrade) ? 1 : 0;

    weir_str_null(&via);

    if (plcf->pass_request_headers) {

        part = &r->headers_in.headers.part;
        h = part->elts;

        for (i = 0; /* void */ ; i++) {

            if (i >= part->nelts) {
                if (part->next == NULL) {
                    break;
                }

                part = part->next;
                h = part->elts;
                i = 0;
            }

            if (h[i].hash == 0) {
                continue;
            }

            switch (h[i].token) {
            case WEIR_HTTP_HDR_HOST:
            case WEIR_HTTP_HDR_CONTENT_LENGTH:
            case WEIR_HTTP_HDR_TRANSFER_ENCODING:
            case WEIR_HTTP_HDR_EXPECT:
                continue;
            default:
                break;
            }

            if (weir_http_upstream_hop_by_hop(&h[i], r->headers_in.connection))
            {
                continue;
            }

            /* a name proxy_set_header sets (or removes) */

            set = 0;

            for (j = 0; plcf->headers && j < plcf->headers->nelts; j++) {
                if (ph[j].key.len == h[i].key.len
                    && weir_strncasecmp(ph[j].lowcase_key, h[i].key.data,
                                        h[i].key.len)
                       == 0)
                {
                    set = 1;
                    break;
                }
            }

            if (set) {
                continue;
            }

            if (plcf->via && !via_set && h[i].token == WEIR_HTTP_HDR_VIA) {

                /* joined with ours below */

                if (via.len == 0) {
                    via = h[i].value;

                } else if (weir_pstrfmt(r->pool, &via, "%.*s, %.*s",
                                        WEIR_STR_ARG(via),
                                        WEIR_STR_ARG(h[i].value))
                           != WEIR_OK)
                {
                    return WEIR_ERROR;
                }

                continue;
            }

            ho = weir_list_push(&req->headers);
            if (ho == NULL) {
                return WEIR_ERROR;
            }

            *ho = h[i];
        }
    }

    if (plcf->via && !via_set) {
        if (weir_http_proxy_via_value(r->pool, &via, r->http_version, &value)
            != WEIR_OK)
        {
            return WEIR_ERROR;
        }

        if (weir_http_proxy_push_header(r, &req->headers, &via_key,
                                        (unsigned char *) "via",
                                        weir_hash_key((unsigned char *) "via",
                                                      3),
                                        WEIR_HTTP_HDR_VIA, &value)
            == NULL)
        {
            return WEIR_ERROR;
        }
    }

    /* the body */

    req->has_body = 0;
    req->body_length = 0;
    req->send_trailers = 0;

    if (plcf->pass_request_body
        && (r->headers_in.content_length_n >= 0 || r->headers_in.chunked))
    {
        req->has_body = 1;

        if (!r->headers_in.chunked) {
            req->body_length = r->headers_in.content_length_n;

        } else if (r->request_body_no_buffering) {
            req->body_length = -1;
            req->send_trailers =
                (req->http_version >= WEIR_HTTP_VERSION_11) ? 1 : 0;

        } else {
            /* the whole body was read: its length is known now */

            len = 0;

            if (r->request_body) {
                for (cl = r->request_body->bufs; cl; cl = cl->next) {
                    len += weir_buf_size(cl->buf);
                }
            }

            req->body_length = len;
        }
    }

    weir_log_debug(r->connection->log, 0,
                   "proxy request: \"%.*s %.*s\" host \"%.*s\" body %lld",
                   WEIR_STR_ARG(req->method_name), WEIR_STR_ARG(req->uri),
                   WEIR_STR_ARG(req->authority),
                   (long long) (req->has_body ? req->body_length : 0));

    return WEIR_OK;
}


static weir_int_t
weir_http_proxy_reinit_request(weir_http_request_t *r)
{
    weir_http_headers_out_t  *ho;

    /* a retry: forget what process_header copied from the last answer */

    ho = &r->headers_out;

    if (weir_list_init(&ho->headers, r->pool, 20, sizeof(weir_http_header_t))
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    ho->status = 0;
    weir_str_null(&ho->status_line);
    ho->server = NULL;
    ho->date = NULL;
    ho->content_length = NULL;
    ho->content_encoding = NULL;
    ho->location = NULL;
    ho->refresh = NULL;
    ho->last_modified = NULL;
    ho->content_range = NULL;
    ho->accept_ranges = NULL;
    ho->www_authenticate = NULL;
    ho->expires = NULL;
    ho->etag = NULL;
    ho->content_type_len = 0;
    weir_str_null(&ho->content_type);
    weir_str_null(&ho->charset);
    ho->content_type_lowcase = NULL;
    ho->content_length_n = -1;
    ho->last_modified_time = -1;

    r->expect_trailers = 0;

    return WEIR_OK;
}


/* ---- the response head ----------------------------------------------- */

/*
 * proxy_redirect over value, from offset prefix on (0 for Location, the
 * text after "url=" for Refresh). The first rule that matches wins.
 * Returns WEIR_OK (value replaced), WEIR_DECLINED (no rule matched) or
 * WEIR_ERROR.
 */
static weir_int_t
weir_http_proxy_rewrite(weir_http_request_t *r,
    weir_http_proxy_loc_conf_t *plcf, weir_str_t *value, size_t prefix)
{
    size_t                       len;
    weir_int_t                   rc;
    weir_str_t                   s, from, to;
    weir_uint_t                  i;
    unsigned char               *p;
    weir_http_proxy_redirect_t  *pr;

    if (plcf->redirects == NULL || plcf->redirects == WEIR_CONF_UNSET_PTR) {
        return WEIR_DECLINED;
    }

    s.data = value->data + prefix;
    s.len = value->len - prefix;

    pr = plcf->redirects->elts;

    for (i = 0; i < plcf->redirects->nelts; i++) {

        if (pr[i].regex) {
            rc = weir_http_regex_exec(r, pr[i].regex, &s);

            if (rc == WEIR_DECLINED) {
                continue;
            }

            if (rc != WEIR_OK) {
                return WEIR_ERROR;
            }

            len = s.len;    /* the whole value is replaced */

        } else {
            if (weir_http_complex_value(r, pr[i].from, &from) != WEIR_OK) {
                return WEIR_ERROR;
            }

            if (from.len > s.len
                || weir_strncasecmp(s.data, from.data, from.len) != 0)
            {
                continue;
            }

            len = from.len;
        }

        if (weir_http_complex_value(r, pr[i].to, &to) != WEIR_OK) {
            return WEIR_ERROR;
        }

        /* a variable may be decoded ($uri): never let it split the
         * response to the client */
        if (!weir_http_proxy_safe_value(&to)) {
            weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                           "the proxy_redirect replacement has a CR, LF or "
                           "NUL: not relayed");
            return WEIR_ERROR;
        }

        p = weir_pnalloc(r->pool, prefix + to.len + s.len - len);
        if (p == NULL) {
            return WEIR_ERROR;
        }

        value->data = p;    /* the old bytes stay where they are */
        p = weir_cpymem(p, s.data - prefix, prefix);
        p = weir_cpymem(p, to.data, to.len);
        p = weir_cpymem(p, s.data + len, s.len - len);
        value->len = p - value->data;

        return WEIR_OK;
    }

    return WEIR_DECLINED;
}


static weir_int_t
weir_http_proxy_rewrite_refresh(weir_http_request_t *r,
    weir_http_proxy_loc_conf_t *plcf, weir_str_t *value)
{
    size_t  i;

    /* "5; url=http://..." */

    for (i = 0; i + 4 <= value->len; i++) {
        if (weir_strncasecmp(value->data + i, (unsigned char *) "url=", 4)
            == 0)
        {
            return weir_http_proxy_rewrite(r, plcf, value, i + 4);
        }
    }

    return WEIR_DECLINED;
}


static weir_int_t
weir_http_proxy_process_header(weir_http_request_t *r)
{
    weir_int_t                        rc;
    weir_uint_t                       i, hash;
    weir_str_t                        value;
    weir_list_part_t                 *part;
    weir_http_header_t               *h, *ho, *via;
    weir_http_upstream_t             *u;
    weir_http_proxy_loc_conf_t       *plcf;
    weir_http_upstream_headers_in_t  *hi;

    u = r->upstream;
    hi = &u->headers_in;
    plcf = weir_http_get_module_loc_conf(r, weir_http_proxy_module);

    r->headers_out.status = hi->status_n;
    r->headers_out.status_line = hi->status_line;

    via = NULL;

    part = &hi->headers.part;
    h = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].hash == 0 || h[i].lowcase_key == NULL) {
            continue;
        }

        /* framing is the client side's business */
        if (h[i].token == WEIR_HTTP_HDR_CONTENT_LENGTH
            || h[i].token == WEIR_HTTP_HDR_TRANSFER_ENCODING)
        {
            continue;
        }

        if (weir_http_upstream_hop_by_hop(&h[i], hi->connection)) {
            continue;
        }

        /* the hash of lowcase_key, but 0 was stored as 1 (0 deletes) */
        hash = (h[i].hash != 1) ? h[i].hash
                                : weir_hash_key(h[i].lowcase_key, h[i].key.len);

        if (u->conf->hide_headers_hash.buckets
            && weir_hash_find(&u->conf->hide_headers_hash, hash,
                              h[i].lowcase_key, h[i].key.len))
        {
            continue;
        }

        if (h[i].token == WEIR_HTTP_HDR_CONTENT_TYPE) {
            r->headers_out.content_type = h[i].value;
            r->headers_out.content_type_len = h[i].value.len;
            r->headers_out.content_type_lowcase = NULL;
            weir_str_null(&r->headers_out.charset);
            continue;
        }

        ho = weir_list_push(&r->headers_out.headers);
        if (ho == NULL) {
            return WEIR_ERROR;
        }

        *ho = h[i];
        ho->hash = hash ? hash : 1;
        ho->next = NULL;

        switch (ho->token) {

        case WEIR_HTTP_HDR_LOCATION:
            rc = weir_http_proxy_rewrite(r, plcf, &ho->value, 0);
            if (rc == WEIR_ERROR) {
                return WEIR_ERROR;
            }

            /* as nginx: a path the origin sent stays as it is (not
             * linked, so absolute_redirect leaves it alone); one that
             * proxy_redirect made is linked and made absolute */
            if (rc == WEIR_OK
                || (ho->value.len && ho->value.data[0] != '/'))
            {
                r->headers_out.location = ho;
            }
            break;

        case WEIR_HTTP_HDR_REFRESH:
            rc = weir_http_proxy_rewrite_refresh(r, plcf, &ho->value);
            if (rc == WEIR_ERROR) {
                return WEIR_ERROR;
            }
            r->headers_out.refresh = ho;
            break;

        case WEIR_HTTP_HDR_LAST_MODIFIED:
            r->headers_out.last_modified = ho;
            r->headers_out.last_modified_time =
                weir_parse_http_time(ho->value.data, ho->value.len);
            break;

        case WEIR_HTTP_HDR_ETAG:
            r->headers_out.etag = ho;
            break;

        case WEIR_HTTP_HDR_SERVER:
            r->headers_out.server = ho;
            break;

        case WEIR_HTTP_HDR_DATE:
            r->headers_out.date = ho;
            break;

        case WEIR_HTTP_HDR_CONTENT_ENCODING:
            r->headers_out.content_encoding = ho;
            break;

        case WEIR_HTTP_HDR_CONTENT_RANGE:
            r->headers_out.content_range = ho;
            break;

        case WEIR_HTTP_HDR_ACCEPT_RANGES:
            r->headers_out.accept_ranges = ho;
            break;

        case WEIR_HTTP_HDR_WWW_AUTHENTICATE:
            if (r->headers_out.www_authenticate == NULL) {
                r->headers_out.www_authenticate = ho;
            }
            break;

        case WEIR_HTTP_HDR_EXPIRES:
            r->headers_out.expires = ho;
            break;

        case WEIR_HTTP_HDR_VIA:
            if (via == NULL) {
                via = ho;
            }
            break;

        default:
            break;
        }
    }

    if (plcf->via) {
        if (via) {
            if (weir_http_proxy_via_value(r->pool, &via->value,
                                          hi->http_version, &value)
                != WEIR_OK)
            {
                return WEIR_ERROR;
            }

            via->value = value;

        } else {
            if (weir_http_proxy_via_value(r->pool, NULL, hi->http_version,
                                          &value)
                != WEIR_OK)
            {
                return WEIR_ERROR;
            }

            if (weir_http_add_header_out(r, "Via", &value) == NULL) {
                return WEIR_ERROR;
            }
        }
    }

    r->headers_out.content_length_n = hi->chunked ? -1 : hi->content_length_n;

    if (u->req.method == WEIR_HTTP_HEAD && r->method != WEIR_HTTP_HEAD
        && hi->status_n != WEIR_HTTP_NO_CONTENT
        && hi->status_n != WEIR_HTTP_NOT_MODIFIED)
    {
        /*
         * proxy_method HEAD for a client that asked for a body: the
         * origin's length is that of a body it never sends, and relaying
         * it would make the client read its next response as this body
         */
        r->headers_out.content_length_n = 0;
    }

    r->expect_trailers = (hi->chunked && plcf->upstream.pass_trailers) ? 1 : 0;

    weir_log_debug(r->connection->log, 0, "proxy status %lu \"%.*s\"",
                   (unsigned long) hi->status_n,
                   WEIR_STR_ARG(hi->status_line));

    return WEIR_OK;
}


static void
weir_http_proxy_finalize_request(weir_http_request_t *r, weir_int_t rc)
{
    weir_log_debug(r->connection->log, 0, "finalize proxy request: %ld",
                   (long) rc);

    (void) r;
    (void) rc;
}


/* ---- variables ------------------------------------------------------- */

static weir_http_proxy_vars_t *
weir_http_proxy_get_vars(weir_http_request_t *r)
{
    weir_http_proxy_ctx_t       *ctx;
    weir_http_proxy_loc_conf_t  *plcf;

    ctx = r->ctx ? weir_http_get_module_ctx(r, weir_http_proxy_module) : NULL;

    if (ctx) {
        return &ctx->vars;
    }

    if (r->loc_conf == NULL) {
        return NULL;
    }

    plcf = weir_http_get_module_loc_conf(r, weir_http_proxy_module);

    return &plcf->vars;
}


static void
weir_http_proxy_set_var(weir_http_variable_value_t *v, unsigned char *data,
    size_t len)
{
    v->len = len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
    v->escape = 0;
    v->data = data;
}


static weir_int_t
weir_http_proxy_host_variable(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    weir_http_proxy_vars_t  *vars;

    vars = weir_http_proxy_get_vars(r);

    if (vars == NULL || vars->host_header.data == NULL) {
        v->not_found = 1;
        return WEIR_OK;
    }

    if (data) {
        weir_http_proxy_set_var(v, vars->port.data, vars->port.len);

    } else {
        weir_http_proxy_set_var(v, vars->host_header.data,
                                vars->host_header.len);
    }

    v->no_cacheable = 1;

    return WEIR_OK;
}


/* the values of every client header with token, joined with ", " (NULL
 * data: none) */
static weir_int_t
weir_http_proxy_join_headers(weir_http_request_t *r, weir_uint_t token,
    weir_str_t *out)
{
    weir_uint_t          i;
    weir_list_part_t    *part;
    weir_http_header_t  *h;

    weir_str_null(out);

    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].hash == 0 || h[i].token != token || h[i].value.len == 0) {
            continue;
        }

        if (out->data == NULL) {
            *out = h[i].value;

        } else if (weir_pstrfmt(r->pool, out, "%.*s, %.*s",
                                WEIR_STR_ARG(*out), WEIR_STR_ARG(h[i].value))
                   != WEIR_OK)
        {
            return WEIR_ERROR;
        }
    }

    return WEIR_OK;
}


static weir_int_t
weir_http_proxy_add_x_forwarded_for_variable(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    weir_str_t   xff, addr, out;

    (void) data;

    addr = r->connection->addr_text;

    if (weir_http_proxy_join_headers(r, WEIR_HTTP_HDR_X_FORWARDED_FOR, &xff)
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    if (xff.data == NULL) {
        weir_http_proxy_set_var(v, addr.data, addr.len);
        return WEIR_OK;
    }

    if (weir_pstrfmt(r->pool, &out, "%.*s, %.*s", WEIR_STR_ARG(xff),
                     WEIR_STR_ARG(addr))
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    weir_http_proxy_set_var(v, out.data, out.len);

    return WEIR_OK;
}


/* RFC 7239: a value is a token or a quoted string */
static weir_int_t
weir_http_proxy_forwarded_value(weir_pool_t *pool, weir_str_t *in,
    weir_str_t *out)
{
    size_t          i, n;
    unsigned char  *p;

    n = 0;

    for (i = 0; i < in->len; i++) {
        if (!weir_http_proxy_is_tchar(in->data[i])) {
            n++;
        }
    }

    if (n == 0 && in->len) {
        *out = *in;
        return WEIR_OK;
    }

    p = weir_pnalloc(pool, in->len * 2 + 2);
    if (p == NULL) {
        return WEIR_ERROR;
    }

    out->data = p;
    *p++ = '"';

    for (i = 0; i < in->len; i++) {
        if (in->data[i] == '"' || in->data[i] == '\\') {
            *p++ = '\\';
        }
        *p++ = in->data[i];
    }

    *p++ = '"';
    out->len = p - out->data;

    return WEIR_OK;
}


static weir_int_t
weir_http_proxy_add_forwarded_variable(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    weir_str_t                   old, addr, host, shost, out, name;
    struct sockaddr             *sa;
    weir_http_variable_value_t  *scheme;

    (void) data;

    if (weir_http_proxy_join_headers(r, WEIR_HTTP_HDR_FORWARDED, &old)
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    /* for= */

    sa = r->connection->sockaddr;
    addr = r->connection->addr_text;

    if (sa && sa->sa_family == AF_INET6) {
        if (weir_pstrfmt(r->pool, &addr, "\"[%.*s]\"", WEIR_STR_ARG(addr))
            != WEIR_OK)
        {
            return WEIR_ERROR;
        }

    } else if (sa == NULL || sa->sa_family != AF_INET || addr.len == 0) {
        weir_str_set(&addr, "unknown");
    }

    /* proto= */

    weir_str_set(&name, "scheme");
    scheme = weir_http_get_variable(r, &name, weir_hash_key(name.data,
                                                            name.len));

    /* host=: the Host as the client sent it */

    if (r->headers_in.host && r->headers_in.host->value.len) {
        host = r->headers_in.host->value;

    } else {
        host = r->headers_in.server;
    }

    if (weir_http_proxy_forwarded_value(r->pool, &host, &shost) != WEIR_OK) {
        return WEIR_ERROR;
    }

    if (weir_pstrfmt(r->pool, &out, "%.*s%sfor=%.*s;proto=%.*s;host=%.*s",
                     WEIR_STR_ARG(old), old.len ? ", " : "",
                     WEIR_STR_ARG(addr),
                     (scheme && !scheme->not_found) ? (int) scheme->len : 4,
                     (scheme && !scheme->not_found)
                     ? (const char *) scheme->data : "http",
                     WEIR_STR_ARG(shost))
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    weir_http_proxy_set_var(v, out.data, out.len);

    return WEIR_OK;
}


static weir_int_t
weir_http_proxy_connection_upgrade_variable(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    (void) data;

    if (r->headers_in.upgrade && r->headers_in.upgrade->value.len) {
        weir_http_proxy_set_var(v, (unsigned char *) "upgrade", 7);

    } else {
        weir_http_proxy_set_var(v, (unsigned char *) "", 0);
    }

    return WEIR_OK;
}


static weir_int_t
weir_http_proxy_add_variables(weir_conf_t *cf)
{
    weir_uint_t            i;
    weir_http_variable_t  *v;

    static struct {
        weir_str_t                  name;
        weir_http_get_variable_pt   handler;
        uintptr_t                   data;
        weir_uint_t                 flags;
    } vars[] = {
        { weir_string("proxy_host"), weir_http_proxy_host_variable, 0,
          WEIR_HTTP_VAR_NOCACHEABLE },
        { weir_string("proxy_port"), weir_http_proxy_host_variable, 1,
          WEIR_HTTP_VAR_NOCACHEABLE },
        { weir_string("proxy_add_x_forwarded_for"),
          weir_http_proxy_add_x_forwarded_for_variable, 0,
          WEIR_HTTP_VAR_NOCACHEABLE },
        { weir_string("proxy_add_forwarded"),
          weir_http_proxy_add_forwarded_variable, 0,
          WEIR_HTTP_VAR_NOCACHEABLE },
        { weir_string("connection_upgrade"),
          weir_http_proxy_connection_upgrade_variable, 0, 0 },
        { weir_null_string, NULL, 0, 0 }
    };

    for (i = 0; vars[i].name.len; i++) {
        v = weir_http_add_variable(cf, &vars[i].name, vars[i].flags);
        if (v == NULL) {
            return WEIR_ERROR;
        }

        v->get_handler = vars[i].handler;
        v->data = vars[i].data;
    }

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
    weir_http_upstream_srv_conf_t  *us;

    weir_conf_merge_value(conf->pass_request_headers,
                          prev->pass_request_headers, 1);
    weir_conf_merge_value(conf->pass_request_body,
                          prev->pass_request_body, 1);
    weir_conf_merge_value(conf->via, prev->via, 0);
    weir_conf_merge_uint_value(conf->http_version, prev->http_version,
                               WEIR_HTTP_VERSION_11);
    weir_conf_merge_ptr_value(conf->method, prev->method, NULL);

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
