#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"

/*
 * The filter chains. Every HTTP module declares its header, body and
 * request body filters as data (name, order, handler, and the address
 * of its "next" variable); the chains are built once per configuration:
 * sorted by order (lowest first = top of the chain; equal orders keep
 * the module order), each filter's next set to the following one, and
 * the bottom of each chain is the core's:
 *   header filters  -> "protocol": r->proto->send_header(r)
 *   body filters    -> "protocol": r->proto->send_body(r, in)
 *   request body    -> "save": appends to r->request_body->bufs
 * so content filters never see HTTP/1 framing.
 */


typedef struct {
    const char  *name;
    weir_int_t   order;
    void        *decl;
} weir_http_filter_entry_t;


typedef enum {
    WEIR_HTTP_HEADER_FILTERS = 0,
    WEIR_HTTP_BODY_FILTERS,
    WEIR_HTTP_REQUEST_BODY_FILTERS
} weir_http_filter_kind_t;


static weir_int_t weir_http_protocol_header_filter(weir_http_request_t *r);
static weir_int_t weir_http_check_headers_out(weir_http_request_t *r);
static weir_uint_t weir_http_check_header(weir_http_request_t *r,
    weir_str_t *name, weir_str_t *value, weir_uint_t field);
static weir_int_t weir_http_protocol_body_filter(weir_http_request_t *r,
    weir_chain_t *in);
static weir_int_t weir_http_request_body_save_filter(weir_http_request_t *r,
    weir_chain_t *in);
static weir_http_filter_entry_t *weir_http_sort_filters(
    weir_module_t **modules, weir_uint_t n, weir_http_filter_kind_t kind,
    weir_uint_t *nout);


weir_http_header_filter_pt        weir_http_top_header_filter =
    weir_http_protocol_header_filter;
weir_http_body_filter_pt          weir_http_top_body_filter =
    weir_http_protocol_body_filter;
weir_http_request_body_filter_pt  weir_http_top_request_body_filter =
    weir_http_request_body_save_filter;


/*
 * absolute_redirect: a Location made of a path ("/x", from return,
 * error_page or a directory's slash redirect) becomes a URL naming this
 * server, as the documentation promises and nginx does. It is done here,
 * under every content filter, so that a Location any of them sets is
 * treated alike, and for every protocol.
 */

static weir_int_t
weir_http_absolute_location(weir_http_request_t *r)
{
    size_t                      len;
    in_port_t                   port;
    socklen_t                   socklen;
    weir_str_t                  host, *loc;
    unsigned char              *p, *last, *url;
    struct sockaddr            *sa;
    weir_connection_t          *c;
    weir_http_core_srv_conf_t  *cscf;
    weir_http_core_loc_conf_t  *clcf;
    unsigned char               addr[WEIR_SOCKADDR_STRLEN + 2];

    c = r->connection;
    loc = &r->headers_out.location->value;

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);
    cscf = weir_http_get_module_srv_conf(r, weir_http_core_module);

    if (clcf->absolute_redirect == 0) {
        return WEIR_OK;
    }

    /* asked of the kernel once per connection, not per redirect */
    sa = weir_connection_local_sockaddr(c);
    if (sa == NULL) {
        return WEIR_ERROR;
    }

    socklen = c->local_socklen;

    /*
     * a first name that is a pattern ("~^a\.com$", "*.a.com", "a.*") is
     * not a host: such a server redirects to the Host as with
     * server_name_in_redirect off (nginx writes the pattern)
     */
    if (clcf->server_name_in_redirect == 1 && cscf->server_name.len
        && cscf->server_name.data[0] != '~'
        && cscf->server_name.data[0] != '*'
        && cscf->server_name.data[cscf->server_name.len - 1] != '*')
    {
        host = cscf->server_name;

    } else if (r->headers_in.server.len) {
        host = r->headers_in.server;

    } else {
        /* no Host (HTTP/1.0): the address the client reached */
        p = addr;

        if (sa->sa_family == AF_INET6) {
            *p++ = '[';
        }

        p += weir_sock_ntop(sa, socklen, p, WEIR_SOCKADDR_STRLEN, 0);

        if (sa->sa_family == AF_INET6) {
            *p++ = ']';
        }

        host.data = addr;
        host.len = p - addr;
    }

    port = weir_inet_get_port(sa);

    len = sizeof("https://:65535") - 1 + host.len + loc->len;

    url = weir_pnalloc(r->pool, len);
    if (url == NULL) {
        return WEIR_ERROR;
    }

    last = url + len;

    if (c->ssl) {
        p = weir_cpymem(url, "https://", sizeof("https://") - 1);

    } else {
        p = weir_cpymem(url, "http://", sizeof("http://") - 1);
    }

    p = weir_cpymem(p, host.data, host.len);

    /* the default port of the scheme is not written */
    if (clcf->port_in_redirect != 0 && port != 0
        && port != (c->ssl ? 443 : 80))
    {
        p = weir_slprintf(p, last, ":%u", (unsigned) port);
    }

    p = weir_cpymem(p, loc->data, loc->len);

    loc->data = url;
    loc->len = p - url;

    return WEIR_OK;
}


static weir_int_t
weir_http_protocol_header_filter(weir_http_request_t *r)
{
    weir_int_t  rc;

    if (r->headers_out.location && r->headers_out.location->hash
        && r->headers_out.location->value.len
        && r->headers_out.location->value.data[0] == '/'
        && weir_http_absolute_location(r) != WEIR_OK)
    {
        r->header_sent = 1;
        return WEIR_ERROR;
    }

    rc = weir_http_check_headers_out(r);

    if (rc != WEIR_OK) {
        /* nothing was sent: the caller's error path answers 500 */
        return rc;
    }

    r->header_sent = 1;

    return r->proto->send_header(r);
}


/*
 * Every response head passes here on its way to the protocol, whatever
 * module or configuration built it: a header value with CR, LF or NUL
 * (add_header X $uri with a decoded %0D%0A, a return URL, a module's
 * own header) would split the response in HTTP/1 and is a protocol
 * error in HTTP/2 and HTTP/3. The first time, the response is refused
 * with 500 (logged, naming the header); the error page that follows
 * may carry the same header (add_header ... always): then the offending
 * headers are dropped instead, so that an answer still goes out.
 */

static weir_int_t
weir_http_check_headers_out(weir_http_request_t *r)
{
    weir_uint_t          i, bad;
    weir_list_part_t    *part;
    weir_http_header_t  *h;

    static weir_str_t  content_type = weir_string("Content-Type");
    static weir_str_t  status = weir_string("status line");

    bad = 0;

    if (r->headers_out.status_line.len
        && weir_http_check_header(r, &status, &r->headers_out.status_line,
                                  0))
    {
        bad = 1;
        r->headers_out.status_line.len = 0;
    }

    if (weir_http_check_header(r, &content_type,
                               &r->headers_out.content_type, 0)
        || weir_http_check_header(r, &content_type,
                                  &r->headers_out.charset, 0))
    {
        bad = 1;
        r->headers_out.content_type.len = 0;
        r->headers_out.charset.len = 0;
    }

    part = &r->headers_out.headers.part;
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

        /* a name with a token is one of the interned names, compared
         * whole (weir_http_header_token): only its value is checked */
        if (h[i].hash
            && weir_http_check_header(r, &h[i].key, &h[i].value,
                                      h[i].token == WEIR_HTTP_HDR_UNKNOWN))
        {
            bad = 1;
            h[i].hash = 0;
        }
    }

    if (!bad) {
        return WEIR_OK;
    }

    if (r->header_refused) {
        /* the error page for it had one too: sent without them */
        return WEIR_OK;
    }

    r->header_refused = 1;

    return WEIR_HTTP_INTERNAL_SERVER_ERROR;
}


/* logs and returns 1 when the field cannot be sent; field: name is the
 * field's own (checked too), else a label for the log (or a name known
 * to be valid) */

static weir_uint_t
weir_http_check_header(weir_http_request_t *r, weir_str_t *name,
    weir_str_t *value, weir_uint_t field)
{
    char  quote[4 * 64 + 8];

    if (weir_http_valid_header_value(value)
        && (!field || weir_http_valid_header_name(name)))
    {
        return 0;
    }

    weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                   "response header \"%s\" %s, %s",
                   weir_quote_for_log(quote, sizeof(quote), name->data,
                                      name->len),
                   weir_http_valid_header_value(value)
                   ? "is not a valid field name"
                   : "has a CR, LF or NUL in its value",
                   (r->header_sent || r->header_refused) ? "dropped"
                   : "response refused");

    return 1;
}


weir_uint_t
weir_http_valid_header_name(weir_str_t *name)
{
    size_t          i;
    unsigned char   c;

    /* tchar: ALPHA DIGIT and !#$%&'*+-.^_`|~ */
    static uint32_t  tchar[] = {
        0x00000000, /* 0x00-0x1f */
        0x03ff6cfa, /* 0x20-0x3f: ! # $ % & ' * + - . 0-9 */
        0xc7fffffe, /* 0x40-0x5f: A-Z ^ _ */
        0x57ffffff, /* 0x60-0x7f: ` a-z | ~ */
        0, 0, 0, 0
    };

    if (name->len == 0) {
        return 0;
    }

    for (i = 0; i < name->len; i++) {
        c = name->data[i];

        if (!(tchar[c >> 5] & (1U << (c & 0x1f)))) {
            return 0;
        }
    }

    return 1;
}


weir_uint_t
weir_http_valid_header_value(weir_str_t *value)
{
    size_t          i, n;
    uint64_t        w;
    unsigned char   c, *p;

    p = value->data;
    n = value->len;

    /*
     * Eight bytes at a time: a word with no byte below 0x0e (CR is 0x0d)
     * holds none of the three (the test is exact for a bound up to 0x80:
     * "hasless" in Bit Twiddling Hacks); from the first word that may,
     * byte by byte (a tab, allowed, is below 0x0e too)
     */

    for (i = 0; i + 8 <= n; i += 8) {
        weir_memcpy(&w, p + i, 8);

        if ((w - 0x0e0e0e0e0e0e0e0eULL) & ~w & 0x8080808080808080ULL) {
            break;
        }
    }

    for ( /* void */ ; i < n; i++) {
        c = p[i];

        if (c <= '\r' && (c == '\r' || c == '\n' || c == '\0')) {
            return 0;
        }
    }

    return 1;
}


static weir_int_t
weir_http_protocol_body_filter(weir_http_request_t *r, weir_chain_t *in)
{
    weir_uint_t        i;
    weir_chain_t       *cl;
    weir_list_part_t   *part;
    weir_http_header_t *h;

    if (r->expect_trailers) {

        /* the trailers go with the last buffer: checked as the head
         * was, an invalid one is dropped (too late for a 500) */

        for (cl = in; cl; cl = cl->next) {
            if (!cl->buf->last_buf) {
                continue;
            }

            for (part = &r->headers_out.trailers.part; part;
                 part = part->next)
            {
                h = part->elts;

                for (i = 0; i < part->nelts; i++) {
                    if (h[i].hash
                        && weir_http_check_header(r, &h[i].key, &h[i].value,
                                                  1))
                    {
                        h[i].hash = 0;
                    }
                }
            }
        }
    }

    return r->proto->send_body(r, in);
}


static weir_int_t
weir_http_request_body_save_filter(weir_http_request_t *r, weir_chain_t *in)
{
    weir_chain_t              *cl;
    weir_http_request_body_t  *rb;

    rb = r->request_body;

    if (rb == NULL) {
        return WEIR_OK;
    }

    if (weir_chain_add_copy(r->pool, &rb->bufs, in) != WEIR_OK) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    for (cl = in; cl; cl = cl->next) {
        if (cl->buf->last_buf) {
            rb->last_saved = 1;
        }
    }

    return WEIR_OK;
}


static weir_uint_t
weir_http_count_filters(weir_http_module_t *hm, weir_http_filter_kind_t kind)
{
    weir_uint_t                            n;
    weir_http_header_filter_decl_t        *hd;
    weir_http_body_filter_decl_t          *bd;
    weir_http_request_body_filter_decl_t  *rd;

    n = 0;

    switch (kind) {

    case WEIR_HTTP_HEADER_FILTERS:
        for (hd = hm->header_filters; hd && hd->name; hd++) {
            n++;
        }
        break;

    case WEIR_HTTP_BODY_FILTERS:
        for (bd = hm->body_filters; bd && bd->name; bd++) {
            n++;
        }
        break;

    default:
        for (rd = hm->request_body_filters; rd && rd->name; rd++) {
            n++;
        }
        break;
    }

    return n;
}


static void
weir_http_get_filter(weir_http_module_t *hm, weir_http_filter_kind_t kind,
    weir_uint_t i, weir_http_filter_entry_t *e)
{
    switch (kind) {

    case WEIR_HTTP_HEADER_FILTERS:
        e->name = hm->header_filters[i].name;
        e->order = hm->header_filters[i].order;
        e->decl = &hm->header_filters[i];
        break;

    case WEIR_HTTP_BODY_FILTERS:
        e->name = hm->body_filters[i].name;
        e->order = hm->body_filters[i].order;
        e->decl = &hm->body_filters[i];
        break;

    default:
        e->name = hm->request_body_filters[i].name;
        e->order = hm->request_body_filters[i].order;
        e->decl = &hm->request_body_filters[i];
        break;
    }
}


/* the filters of one kind, stable-sorted by order, in a malloc()ed
 * array (NULL with *nout 0 when there are none) */
static weir_http_filter_entry_t *
weir_http_sort_filters(weir_module_t **modules, weir_uint_t n,
    weir_http_filter_kind_t kind, weir_uint_t *nout)
{
    weir_uint_t                i, j, k, m, count;
    weir_http_module_t        *hm;
    weir_http_filter_entry_t  *all, tmp;

    *nout = 0;
    count = 0;

    for (i = 0; i < n; i++) {
        if (modules[i] == NULL || modules[i]->type != WEIR_HTTP_MODULE
            || modules[i]->ctx == NULL)
        {
            continue;
        }

        count += weir_http_count_filters(modules[i]->ctx, kind);
    }

    if (count == 0) {
        return NULL;
    }

    /* a NULL result with *nout set means that malloc() failed */
    *nout = count;

    all = malloc(count * sizeof(weir_http_filter_entry_t));
    if (all == NULL) {
        return NULL;
    }

    k = 0;

    for (i = 0; i < n; i++) {
        if (modules[i] == NULL || modules[i]->type != WEIR_HTTP_MODULE
            || modules[i]->ctx == NULL)
        {
            continue;
        }

        hm = modules[i]->ctx;
        m = weir_http_count_filters(hm, kind);

        for (j = 0; j < m; j++) {
            weir_http_get_filter(hm, kind, j, &all[k++]);
        }
    }

    /* insertion sort: stable, equal orders keep the module order */
    for (i = 1; i < count; i++) {
        tmp = all[i];
        j = i;

        while (j > 0 && all[j - 1].order > tmp.order) {
            all[j] = all[j - 1];
            j--;
        }

        all[j] = tmp;
    }

    *nout = count;

    return all;
}


/*
 * The chains are module globals (each filter's "next" variable), as in
 * nginx, so they must match the configuration the process runs: they are
 * linked while the configuration is parsed (to check it), and linked
 * again from the committed cycle when modules are initialised (master)
 * and when each worker starts, so that a reload that failed after
 * parsing never leaves a worker with the chains of the rejected
 * configuration (whose dynamic modules may be unloaded already).
 */

weir_int_t
weir_http_init_filters(weir_conf_t *cf)
{
    return weir_http_link_filters(cf->cycle, cf->log);
}


weir_int_t
weir_http_link_filters(weir_cycle_t *cycle, weir_log_t *log)
{
    weir_uint_t                            i, n;
    weir_http_filter_entry_t              *f;
    weir_http_header_filter_decl_t        *hd;
    weir_http_body_filter_decl_t          *bd;
    weir_http_request_body_filter_decl_t  *rd;
    weir_http_header_filter_pt             hnext;
    weir_http_body_filter_pt               bnext;
    weir_http_request_body_filter_pt       rnext;

    /* header filters: link from the bottom up */

    f = weir_http_sort_filters(cycle->modules, cycle->modules_n,
                               WEIR_HTTP_HEADER_FILTERS, &n);
    if (f == NULL && n) {
        goto failed;
    }

    hnext = weir_http_protocol_header_filter;

    for (i = n; i > 0; i--) {
        hd = f[i - 1].decl;

        if (hd->handler == NULL) {
            weir_log_error(WEIR_LOG_EMERG, log, 0,
                           "header filter \"%s\" has no handler", hd->name);
            free(f);
            return WEIR_ERROR;
        }

        if (hd->next) {
            *hd->next = hnext;
        }

        hnext = hd->handler;
    }

    weir_http_top_header_filter = hnext;
    free(f);

    /* body filters */

    f = weir_http_sort_filters(cycle->modules, cycle->modules_n,
                               WEIR_HTTP_BODY_FILTERS, &n);
    if (f == NULL && n) {
        goto failed;
    }

    bnext = weir_http_protocol_body_filter;

    for (i = n; i > 0; i--) {
        bd = f[i - 1].decl;

        if (bd->handler == NULL) {
            weir_log_error(WEIR_LOG_EMERG, log, 0,
                           "body filter \"%s\" has no handler", bd->name);
            free(f);
            return WEIR_ERROR;
        }

        if (bd->next) {
            *bd->next = bnext;
        }

        bnext = bd->handler;
    }

    weir_http_top_body_filter = bnext;
    free(f);

    /* request body filters */

    f = weir_http_sort_filters(cycle->modules, cycle->modules_n,
                               WEIR_HTTP_REQUEST_BODY_FILTERS, &n);
    if (f == NULL && n) {
        goto failed;
    }

    rnext = weir_http_request_body_save_filter;

    for (i = n; i > 0; i--) {
        rd = f[i - 1].decl;

        if (rd->handler == NULL) {
            weir_log_error(WEIR_LOG_EMERG, log, 0,
                           "request body filter \"%s\" has no handler",
                           rd->name);
            free(f);
            return WEIR_ERROR;
        }

        if (rd->next) {
            *rd->next = rnext;
        }

        rnext = rd->handler;
    }

    weir_http_top_request_body_filter = rnext;
    free(f);

    return WEIR_OK;

failed:

    weir_log_error(WEIR_LOG_EMERG, log, errno,
                   "malloc() failed while building the filter chains");

    return WEIR_ERROR;
}


/* a line buffer for weir_http_show_chains: output is flushed to fd when
 * full and at the end of every line */
typedef struct {
    weir_fd_t        fd;
    unsigned char   *pos;
    unsigned char    buf[512];
} weir_http_show_t;


static void
weir_http_show_flush(weir_http_show_t *s)
{
    if (s->pos > s->buf) {
        (void) weir_write_fd(s->fd, s->buf, s->pos - s->buf);
        s->pos = s->buf;
    }
}


static void
weir_http_show_add(weir_http_show_t *s, const char *text, weir_int_t order,
    weir_uint_t with_order)
{
    unsigned char  tmp[256], *last;

    if (with_order) {
        last = weir_slprintf(tmp, tmp + sizeof(tmp), "%s(%ld)", text,
                             (long) order);

    } else {
        last = weir_slprintf(tmp, tmp + sizeof(tmp), "%s", text);
    }

    if ((size_t) (s->buf + sizeof(s->buf) - s->pos)
        < (size_t) (last - tmp))
    {
        weir_http_show_flush(s);
    }

    if ((size_t) (last - tmp) > sizeof(s->buf)) {
        (void) weir_write_fd(s->fd, tmp, last - tmp);
        return;
    }

    s->pos = weir_cpymem(s->pos, tmp, last - tmp);
}


static void
weir_http_show_filters(weir_http_show_t *s, weir_module_t **modules,
    weir_uint_t nmodules, weir_http_filter_kind_t kind, const char *title,
    const char *bottom)
{
    weir_uint_t                i, n;
    weir_http_filter_entry_t  *f;

    f = weir_http_sort_filters(modules, nmodules, kind, &n);
    if (f == NULL) {
        n = 0;
    }

    weir_http_show_add(s, title, 0, 0);

    for (i = 0; i < n; i++) {
        weir_http_show_add(s, " ", 0, 0);
        weir_http_show_add(s, f[i].name, 0, 0);
    }

    weir_http_show_add(s, " ", 0, 0);
    weir_http_show_add(s, bottom, 0, 0);
    weir_http_show_add(s, "\n", 0, 0);
    weir_http_show_flush(s);

    free(f);
}


weir_int_t
weir_http_show_chains(weir_fd_t fd)
{
    weir_uint_t              i, n, nmodules, phase;
    weir_http_show_t         s;
    weir_http_phase_decl_t  *decls;

    s.fd = fd;
    s.pos = s.buf;

    for (nmodules = 0; weir_modules[nmodules]; nmodules++) {
        /* void */
    }

    decls = weir_http_sort_phase_decls(weir_modules, nmodules, &n);
    if (decls == NULL) {
        return WEIR_ERROR;
    }

    weir_http_show_add(&s, "phases:\n", 0, 0);

    i = 0;

    for (phase = 0; phase < WEIR_HTTP_PHASES_N; phase++) {
        weir_http_show_add(&s, "  ", 0, 0);
        weir_http_show_add(&s, weir_http_phase_names[phase], 0, 0);
        weir_http_show_add(&s, ":", 0, 0);

        while (i < n && decls[i].phase == phase) {
            weir_http_show_add(&s, " ", 0, 0);
            weir_http_show_add(&s, decls[i].name, decls[i].order, 1);
            i++;
        }

        weir_http_show_add(&s, "\n", 0, 0);
        weir_http_show_flush(&s);
    }

    free(decls);

    weir_http_show_filters(&s, weir_modules, nmodules,
                           WEIR_HTTP_HEADER_FILTERS, "header filters:",
                           "protocol");
    weir_http_show_filters(&s, weir_modules, nmodules,
                           WEIR_HTTP_BODY_FILTERS, "body filters:",
                           "protocol");
    weir_http_show_filters(&s, weir_modules, nmodules,
                           WEIR_HTTP_REQUEST_BODY_FILTERS,
                           "request body filters:", "save");

    return WEIR_OK;
}


/* ---- what weir writes into a Location ---------------------------------- */

static weir_uint_t
weir_http_must_escape(unsigned char c)
{
    return c <= 0x20 || c >= 0x7f || c == '#' || c == '%' || c == '?';
}


size_t
weir_http_escape_uri_len(unsigned char *src, size_t len)
{
    size_t  i, n;

    n = 0;

    for (i = 0; i < len; i++) {
        if (weir_http_must_escape(src[i])) {
            n++;
        }
    }

    return len + 2 * n;
}


unsigned char *
weir_http_escape_uri(unsigned char *dst, unsigned char *src, size_t len)
{
    size_t  i;

    static const char  hex[] = "0123456789ABCDEF";

    for (i = 0; i < len; i++) {
        if (weir_http_must_escape(src[i])) {
            *dst++ = '%';
            *dst++ = hex[src[i] >> 4];
            *dst++ = hex[src[i] & 0x0f];

        } else {
            *dst++ = src[i];
        }
    }

    return dst;
}


weir_int_t
weir_http_slash_location(weir_http_request_t *r, weir_str_t *location)
{
    size_t          len;
    unsigned char  *p;

    len = weir_http_escape_uri_len(r->uri.data, r->uri.len) + 1;

    if (r->args.len) {
        len += 1 + r->args.len;
    }

    p = weir_pnalloc(r->pool, len);
    if (p == NULL) {
        return WEIR_ERROR;
    }

    location->data = p;

    p = weir_http_escape_uri(p, r->uri.data, r->uri.len);
    *p++ = '/';

    if (r->args.len) {
        /* as the client sent them: still escaped */
        *p++ = '?';
        p = weir_cpymem(p, r->args.data, r->args.len);
    }

    location->len = p - location->data;

    return WEIR_OK;
}
