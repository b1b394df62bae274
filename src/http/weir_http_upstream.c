#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"

#include <sys/sendfile.h>
#include <sys/uio.h>

/*
 * The upstream core: one weir_http_upstream_t per proxied request. It
 * connects to a peer the balancer chooses, writes the request the
 * protocol handler serialized (and the request body, buffered or
 * streamed), reads the response head, relays it and the body to the
 * client with bounded buffers (a temporary file when the client is slow
 * and buffering is on), retries per proxy_next_upstream, and turns a 101
 * into a byte tunnel. docs/dev/upstream.md describes the design.
 */


#define WEIR_HTTP_UPSTREAM_IOVS  64
/* a request body file read per send to a TLS origin */
#define WEIR_HTTP_UPSTREAM_FILE_COPY  16384

/* origin bytes one event may read: a fast origin whose response goes to
 * the temporary file would otherwise keep the worker until the end */
#define WEIR_HTTP_UPSTREAM_READ_BUDGET  (128 * 1024)
/* memory buffers one readv() of the origin fills at most */
#define WEIR_HTTP_UPSTREAM_READV        16

/* a raw buffer origin bytes are read into; views point into it */
typedef struct {
    weir_buf_t                  *buf;
    weir_uint_t                  views;     /* passed on, not yet sent */
    unsigned                     head:1;    /* u->buffer: never re-read */
} weir_http_upstream_raw_t;

/* the core's state (u->pipe) */
typedef struct {
    /* request side */
    weir_chain_t                *head;      /* this attempt's copy */
    weir_chain_t                *body;      /* encoded, unsent */
    weir_chain_t                *body_proto;/* buffered: encoded once */
    weir_chain_t                *taken;     /* streamed: client buffers */

    /* response side */
    weir_http_upstream_raw_t    *raws;
    weir_uint_t                  nraws;
    weir_uint_t                  maxraws;
    size_t                       raw_size;
    weir_http_upstream_raw_t    *cur;
    weir_buf_t                  *spill;     /* read buffer for the file */
    weir_file_t                 *file;
    off_t                        file_offset;
    weir_uint_t                  file_views;

    /* tunnel: client -> origin (up), origin -> client (down) */
    weir_buf_t                  *up;
    weir_buf_t                  *down;

    weir_msec_t                  attempt_start;

    unsigned                     started:1;
    unsigned                     finalized:1;
    unsigned                     peer_held:1;
    unsigned                     connecting:1;
    unsigned                     sending:1;     /* request not all sent */
    unsigned                     head_done:1;
    unsigned                     relay:1;
    unsigned                     tunnel:1;
    unsigned                     spilling:1;
    unsigned                     read_full:1;   /* the last read filled
                                                   all it was given */
    unsigned                     sent_any:1;    /* this attempt */
    unsigned                     body_consumed:1;   /* streamed, sent */
    unsigned                     body_last:1;   /* streamed: last_buf in */
    unsigned                     in_post:1;
    unsigned                     cached_retried:1;
    unsigned                     same_peer:1;   /* reconnect, no balancer */
    unsigned                     origin_eof:1;
    unsigned                     stopped:1;     /* no buffer to read into */
    unsigned                     body_stopped:1;/* the rest of the request
                                                   is not sent */
    unsigned                     handshaking:1; /* TLS to the origin: the
                                                   ssl module has c */

    /* not bit-fields: the tunnel passes their addresses */
    unsigned                     up_eof;
    unsigned                     down_eof;
    unsigned                     up_shut;
    unsigned                     down_shut;
} weir_http_upstream_ctx_t;


static void weir_http_upstream_cleanup(void *data);
static weir_int_t weir_http_upstream_choose(weir_http_upstream_t *u);
static void weir_http_upstream_connect(weir_http_upstream_t *u);
static void weir_http_upstream_connected(weir_http_upstream_t *u);
static void weir_http_upstream_ssl_handshake(weir_http_upstream_t *u);

/* set while the ssl module's upstream_handshake runs: a done called from
 * inside it is not at the top of an event handler (the worker is single
 * threaded; a flag in u could be freed by the time the hook returns) */
static weir_uint_t  weir_http_upstream_in_handshake_call;
static void weir_http_upstream_take_connection(weir_http_upstream_t *u,
    weir_connection_t *c);
static void weir_http_upstream_free_peer(weir_http_upstream_t *u,
    weir_uint_t state);
static void weir_http_upstream_close(weir_connection_t *c);
static weir_int_t weir_http_upstream_ssl_key(weir_http_upstream_t *u);
static void weir_http_upstream_next(weir_http_upstream_t *u,
    weir_uint_t ft);
static weir_uint_t weir_http_upstream_may_retry(weir_http_upstream_t *u,
    weir_uint_t ft);
static weir_uint_t weir_http_upstream_cached_retry(weir_http_upstream_t *u);
static void weir_http_upstream_retry(weir_http_upstream_t *u);
static void weir_http_upstream_finalize(weir_http_upstream_t *u,
    weir_int_t rc);
static void weir_http_upstream_end_attempt(weir_http_upstream_t *u);
static void weir_http_upstream_handler(weir_event_t *ev);
static void weir_http_upstream_write_handler(weir_http_upstream_t *u,
    weir_event_t *wev);
static void weir_http_upstream_read_handler(weir_http_upstream_t *u,
    weir_event_t *rev);
static weir_chain_t *weir_http_upstream_copy_chain(weir_http_request_t *r,
    weir_chain_t *in);
static void weir_http_upstream_take_body(weir_http_upstream_t *u);
static void weir_http_upstream_send(weir_http_upstream_t *u);
static weir_int_t weir_http_upstream_write_chain(weir_http_upstream_t *u,
    weir_chain_t *in, off_t *written);
static ssize_t weir_http_upstream_send_file_copy(weir_connection_t *c,
    weir_buf_t *b, ssize_t *want);
static void weir_http_upstream_body_sent(weir_http_upstream_t *u);
static void weir_http_upstream_stop_body(weir_http_upstream_t *u);
static void weir_http_upstream_process_head(weir_http_upstream_t *u);
static void weir_http_upstream_head_done(weir_http_upstream_t *u);
static weir_uint_t weir_http_upstream_status_ft(weir_uint_t status);
static weir_uint_t weir_http_upstream_has_error_page(weir_http_request_t *r,
    weir_uint_t status);
static void weir_http_upstream_client_handlers(weir_http_upstream_t *u);
static void weir_http_upstream_downstream(weir_http_request_t *r);
static void weir_http_upstream_abort_check(weir_http_request_t *r);
static void weir_http_upstream_process(weir_http_upstream_t *u);
static weir_uint_t weir_http_upstream_client_blocked(weir_http_request_t *r);
static weir_uint_t weir_http_upstream_more_raws(weir_http_upstream_t *u,
    weir_http_upstream_raw_t **more);
static weir_buf_t *weir_http_upstream_read_buf(weir_http_upstream_t *u,
    weir_uint_t spill);
static weir_int_t weir_http_upstream_pass(weir_http_upstream_t *u);
static void weir_http_upstream_update_busy(weir_http_upstream_t *u);
static weir_http_upstream_raw_t *weir_http_upstream_raw(
    weir_http_upstream_t *u, weir_buf_t *b);
static weir_int_t weir_http_upstream_spill(weir_http_upstream_t *u,
    unsigned char *start, unsigned char *end);

/* one end of a tunnel: the origin (r NULL) or the client (r) */
typedef struct {
    weir_connection_t           *c;
    weir_http_request_t         *r;
} weir_http_upstream_end_t;

static void weir_http_upstream_start_tunnel(weir_http_upstream_t *u);
static void weir_http_upstream_tunnel(weir_http_request_t *r);
static weir_int_t weir_http_upstream_tunnel_move(
    weir_http_upstream_end_t *src, weir_http_upstream_end_t *dst,
    weir_buf_t *b, unsigned *eof, unsigned *shut);


static weir_str_t  weir_http_upstream_hop[] = {
    weir_string("connection"),
    weir_string("keep-alive"),
    weir_string("te"),
    weir_string("trailer"),
    weir_string("transfer-encoding"),
    weir_string("upgrade"),
    weir_string("proxy-connection"),
    weir_string("proxy-authenticate"),
    weir_string("proxy-authorization"),
    weir_null_string
};


weir_conf_bitmask_t  weir_http_upstream_next_masks[] = {
    { weir_string("error"), WEIR_HTTP_UPSTREAM_FT_ERROR },
    { weir_string("timeout"), WEIR_HTTP_UPSTREAM_FT_TIMEOUT },
    { weir_string("invalid_header"), WEIR_HTTP_UPSTREAM_FT_INVALID_HEADER },
    { weir_string("non_idempotent"), WEIR_HTTP_UPSTREAM_FT_NON_IDEMPOTENT },
    { weir_string("http_500"), WEIR_HTTP_UPSTREAM_FT_HTTP_500 },
    { weir_string("http_502"), WEIR_HTTP_UPSTREAM_FT_HTTP_502 },
    { weir_string("http_503"), WEIR_HTTP_UPSTREAM_FT_HTTP_503 },
    { weir_string("http_504"), WEIR_HTTP_UPSTREAM_FT_HTTP_504 },
    { weir_string("http_403"), WEIR_HTTP_UPSTREAM_FT_HTTP_403 },
    { weir_string("http_404"), WEIR_HTTP_UPSTREAM_FT_HTTP_404 },
    { weir_string("http_429"), WEIR_HTTP_UPSTREAM_FT_HTTP_429 },
    { weir_string("off"), WEIR_HTTP_UPSTREAM_FT_OFF },
    { weir_null_string, 0 }
};


/* ---- configuration ---------------------------------------------------- */

static weir_uint_t
weir_http_upstream_name_in(weir_array_t *a, weir_str_t *name)
{
    weir_uint_t   i;
    weir_str_t   *s;

    if (a == NULL || a == WEIR_CONF_UNSET_PTR) {
        return 0;
    }

    s = a->elts;

    for (i = 0; i < a->nelts; i++) {
        if (s[i].len == name->len
            && weir_strncasecmp(s[i].data, name->data, name->len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


static weir_int_t
weir_http_upstream_hide_key(weir_conf_t *cf, weir_array_t *keys,
    weir_str_t *name, weir_array_t *pass)
{
    weir_uint_t       i;
    weir_hash_key_t  *k;
    unsigned char    *p;

    if (weir_http_upstream_name_in(pass, name)) {
        return WEIR_OK;
    }

    k = keys->elts;

    for (i = 0; i < keys->nelts; i++) {
        if (k[i].key.len == name->len
            && weir_strncasecmp(k[i].key.data, name->data, name->len) == 0)
        {
            return WEIR_OK;
        }
    }

    p = weir_pnalloc(cf->pool, name->len);
    k = weir_array_push(keys);
    if (p == NULL || k == NULL) {
        return WEIR_ERROR;
    }

    for (i = 0; i < name->len; i++) {
        p[i] = weir_tolower(name->data[i]);
    }

    k->key.data = p;
    k->key.len = name->len;
    k->key_hash = weir_hash_key(p, name->len);
    k->value = (void *) 1;

    return WEIR_OK;
}


char *
weir_http_upstream_merge_conf(weir_conf_t *cf,
    weir_http_upstream_conf_t *conf, weir_http_upstream_conf_t *prev,
    weir_str_t *default_hide)
{
    size_t         size;
    weir_uint_t    i;
    weir_str_t    *s;
    weir_array_t   keys;

    if (conf->upstream == NULL) {
        conf->upstream = prev->upstream;
    }

    weir_conf_merge_msec_value(conf->connect_timeout,
                               prev->connect_timeout, 60000);
    weir_conf_merge_msec_value(conf->send_timeout, prev->send_timeout, 60000);
    weir_conf_merge_msec_value(conf->read_timeout, prev->read_timeout, 60000);
    weir_conf_merge_msec_value(conf->next_upstream_timeout,
                               prev->next_upstream_timeout, 0);
    weir_conf_merge_uint_value(conf->next_upstream_tries,
                               prev->next_upstream_tries, 0);

    weir_conf_merge_bitmask_value(conf->next_upstream, prev->next_upstream,
                                  (WEIR_CONF_BITMASK_SET
                                   | WEIR_HTTP_UPSTREAM_FT_ERROR
                                   | WEIR_HTTP_UPSTREAM_FT_TIMEOUT));

    if (conf->next_upstream & WEIR_HTTP_UPSTREAM_FT_OFF) {
        conf->next_upstream = WEIR_CONF_BITMASK_SET
                              | WEIR_HTTP_UPSTREAM_FT_OFF;
    }

    weir_conf_merge_size_value(conf->buffer_size, prev->buffer_size, 8192);
    weir_conf_merge_bufs_value(conf->bufs, prev->bufs, 8, 8192);

    if (conf->bufs.num < 2) {
        return "there must be at least 2 \"proxy_buffers\"";
    }

    size = conf->buffer_size;
    if (size < conf->bufs.size) {
        size = conf->bufs.size;
    }

    weir_conf_merge_size_value(conf->busy_buffers_size,
                               prev->busy_buffers_size, 2 * size);

    if (conf->busy_buffers_size < size) {
        return "\"proxy_busy_buffers_size\" must be equal to or greater "
               "than the maximum of the value of \"proxy_buffer_size\" and "
               "one of the \"proxy_buffers\"";
    }

    if (conf->busy_buffers_size
        > (size_t) (conf->bufs.num - 1) * conf->bufs.size)
    {
        return "\"proxy_busy_buffers_size\" must be less than the size of "
               "all \"proxy_buffers\" minus one buffer";
    }

    weir_conf_merge_size_value(conf->temp_file_write_size,
                               prev->temp_file_write_size, 2 * size);

    if (conf->temp_file_write_size < size) {
        return "\"proxy_temp_file_write_size\" must be equal to or greater "
               "than the maximum of the value of \"proxy_buffer_size\" and "
               "one of the \"proxy_buffers\"";
    }

    weir_conf_merge_off_value(conf->max_temp_file_size,
                              prev->max_temp_file_size,
                              (off_t) 1024 * 1024 * 1024);

    if (conf->max_temp_file_size != 0
        && conf->max_temp_file_size < (off_t) size)
    {
        return "\"proxy_max_temp_file_size\" must be equal to zero to "
               "disable temporary files usage or must be equal to or "
               "greater than the maximum of the value of "
               "\"proxy_buffer_size\" and one of the \"proxy_buffers\"";
    }

    weir_conf_merge_value(conf->buffering, prev->buffering, 1);
    weir_conf_merge_value(conf->request_buffering,
                          prev->request_buffering, 1);
    weir_conf_merge_value(conf->intercept_errors,
                          prev->intercept_errors, 0);
    weir_conf_merge_value(conf->ignore_client_abort,
                          prev->ignore_client_abort, 0);
    weir_conf_merge_value(conf->pass_trailers, prev->pass_trailers, 1);
    weir_conf_merge_value(conf->socket_keepalive,
                          prev->socket_keepalive, 0);
    weir_conf_merge_value(conf->strict_line_endings,
                          prev->strict_line_endings, 0);

    weir_conf_merge_str_value(conf->module, prev->module, "proxy");

    if (conf->hide_headers == WEIR_CONF_UNSET_PTR
        && conf->pass_headers == WEIR_CONF_UNSET_PTR)
    {
        conf->hide_headers = prev->hide_headers;
        conf->pass_headers = prev->pass_headers;

        if (prev->hide_headers_hash.buckets) {
            conf->hide_headers_hash = prev->hide_headers_hash;
            return WEIR_CONF_OK;
        }

    } else {
        if (conf->hide_headers == WEIR_CONF_UNSET_PTR) {
            conf->hide_headers = prev->hide_headers;
        }

        if (conf->pass_headers == WEIR_CONF_UNSET_PTR) {
            conf->pass_headers = prev->pass_headers;
        }
    }

    if (conf->hide_headers == WEIR_CONF_UNSET_PTR) {
        conf->hide_headers = NULL;
    }

    if (conf->pass_headers == WEIR_CONF_UNSET_PTR) {
        conf->pass_headers = NULL;
    }

    if (weir_array_init(&keys, cf->temp_pool ? cf->temp_pool : cf->pool, 16,
                        sizeof(weir_hash_key_t))
        != WEIR_OK)
    {
        return WEIR_CONF_ERROR;
    }

    for (s = default_hide; s && s->len; s++) {
        if (weir_http_upstream_hide_key(cf, &keys, s, conf->pass_headers)
            != WEIR_OK)
        {
            return WEIR_CONF_ERROR;
        }
    }

    if (conf->hide_headers) {
        s = conf->hide_headers->elts;

        for (i = 0; i < conf->hide_headers->nelts; i++) {
            if (weir_http_upstream_hide_key(cf, &keys, &s[i],
                                            conf->pass_headers)
                != WEIR_OK)
            {
                return WEIR_CONF_ERROR;
            }
        }
    }

    if (weir_hash_init(&conf->hide_headers_hash, cf->pool, &keys)
        != WEIR_OK)
    {
        return WEIR_CONF_ERROR;
    }

    return WEIR_CONF_OK;
}


weir_uint_t
weir_http_upstream_hop_by_hop(weir_http_header_t *h,
    weir_http_header_t *connection)
{
    weir_str_t  *s;

    /* an interned name says it at once; only a name that was never
     * looked up (token 0 is also "not interned") is compared */
    if (h->token != WEIR_HTTP_HDR_UNKNOWN) {
        if (weir_http_header_defs[h->token].flags
            & WEIR_HTTP_HDR_F_HOP_BY_HOP)
        {
            return 1;
        }

        goto listed;
    }

    for (s = weir_http_upstream_hop; s->len; s++) {
        if (h->key.len == s->len
            && weir_strncasecmp(h->key.data, s->data, s->len) == 0)
        {
            return 1;
        }
    }

listed:

    for ( /* void */ ; connection; connection = connection->next) {
        if (weir_http_list_has_token(&connection->value, h->key.data,
                                     h->key.len))
        {
            return 1;
        }
    }

    return 0;
}


/* ---- creation and start ----------------------------------------------- */

weir_int_t
weir_http_upstream_create(weir_http_request_t *r)
{
    weir_pool_cleanup_t       *cln;
    weir_http_upstream_t      *u;
    weir_http_upstream_ctx_t  *ctx;

    if (r->upstream) {
        return WEIR_OK;
    }

    u = weir_pcalloc(r->pool, sizeof(weir_http_upstream_t));
    ctx = weir_pcalloc(r->pool, sizeof(weir_http_upstream_ctx_t));
    if (u == NULL || ctx == NULL) {
        return WEIR_ERROR;
    }

    u->state = weir_array_create(r->pool, 2,
                                 sizeof(weir_http_upstream_state_t));
    if (u->state == NULL) {
        return WEIR_ERROR;
    }

    cln = weir_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return WEIR_ERROR;
    }

    cln->handler = weir_http_upstream_cleanup;
    cln->data = u;

    u->request = r;
    u->pipe = ctx;
    u->peer.log = r->connection->log;
    u->peer.log_error = 1;
    u->length = -1;
    u->last_out = &u->out_bufs;
    u->headers_in.content_length_n = -1;

    r->upstream = u;

    return WEIR_OK;
}


/* the request pool goes: whatever is still open with it */

static void
weir_http_upstream_cleanup(void *data)
{
    weir_http_upstream_t      *u = data;
    weir_http_upstream_ctx_t  *ctx;

    ctx = u->pipe;
    ctx->finalized = 1;

    if (u->peer.connection || ctx->peer_held) {
        u->peer.keepalive = 0;
        weir_http_upstream_free_peer(u, 0);
    }
}


void
weir_http_upstream_init(weir_http_request_t *r)
{
    weir_connection_t          *c;
    weir_http_upstream_t       *u;
    weir_http_upstream_ctx_t   *ctx;
    weir_http_request_body_t   *rb;

    u = r->upstream;
    c = r->connection;

    if (u == NULL) {
        weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    ctx = u->pipe;

    if (ctx->started) {
        /* a streamed body: more data (or its end) is in rb->bufs */
        if (ctx->finalized || ctx->in_post) {
            return;
        }

        weir_http_upstream_take_body(u);

        if (ctx->finalized) {
            return;
        }

        if (ctx->peer_held && !ctx->connecting && ctx->sending) {
            weir_http_upstream_send(u);
        }

        return;
    }

    ctx->started = 1;
    u->buffering = u->conf->buffering ? 1 : 0;
    u->request_buffering = r->request_body_no_buffering ? 0 : 1;
    u->start_time = weir_current_msec;

    if (u->request_buffering && c->read->timer_set) {
        weir_event_del_timer(c->read);
    }

    if (u->create_request && u->create_request(r) != WEIR_OK) {
        weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    if (u->proto->create_request(u) != WEIR_OK) {
        weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    rb = r->request_body;

    if (u->request_buffering && u->req.has_body && rb) {
        ctx->body_proto = NULL;

        if (u->proto->encode_body(u,
                                  weir_http_upstream_copy_chain(r, rb->bufs),
                                  &ctx->body_proto)
            != WEIR_OK)
        {
            weir_log_error(WEIR_LOG_ERR, c->log, 0,
                           "cannot frame the request body for upstream");
            weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }

        u->request_body_sent = 0;
    }

    u->buffer.start = weir_pnalloc(r->pool, u->conf->buffer_size);
    if (u->buffer.start == NULL) {
        weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    u->buffer.pos = u->buffer.start;
    u->buffer.last = u->buffer.start;
    u->buffer.end = u->buffer.start + u->conf->buffer_size;
    u->buffer.temporary = 1;

    if (u->uri.len == 0) {
        u->uri = u->req.uri;
    }

    if (weir_http_upstream_choose(u) != WEIR_OK) {
        return;
    }

    weir_http_upstream_client_handlers(u);

    if (!u->request_buffering) {
        weir_http_upstream_take_body(u);

        if (ctx->finalized) {
            return;
        }
    }

    weir_http_upstream_connect(u);
}


/* sets up u->peer from the group; finalizes and returns WEIR_ERROR on
 * failure */

static weir_int_t
weir_http_upstream_choose(weir_http_upstream_t *u)
{
    weir_uint_t                        i;
    weir_http_request_t               *r;
    weir_http_upstream_resolved_t     *rs;
    weir_http_upstream_srv_conf_t     *us, **uscfp;
    weir_http_upstream_main_conf_t    *umcf;

    r = u->request;
    us = u->upstream;

    if (us == NULL && u->resolved) {
        rs = u->resolved;

        if (rs->addrs) {
            if (weir_http_upstream_create_round_robin_peer(r, rs->addrs,
                                                           rs->naddrs,
                                                           &rs->host)
                != WEIR_OK)
            {
                weir_http_finalize_request(r,
                                           WEIR_HTTP_INTERNAL_SERVER_ERROR);
                return WEIR_ERROR;
            }

            return WEIR_OK;
        }

        umcf = weir_http_get_module_main_conf(r, weir_http_upstream_module);
        uscfp = umcf ? umcf->upstreams.elts : NULL;

        for (i = 0; umcf && i < umcf->upstreams.nelts; i++) {
            if (uscfp[i]->host.len == rs->host.len
                && weir_strncasecmp(uscfp[i]->host.data, rs->host.data,
                                    rs->host.len) == 0
                && (uscfp[i]->no_port || rs->no_port
                    || uscfp[i]->port == rs->port))
            {
                us = uscfp[i];
                break;
            }
        }

        if (us == NULL) {
            weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                           "no resolver defined to resolve %.*s",
                           WEIR_STR_ARG(rs->host));
            weir_http_finalize_request(r, WEIR_HTTP_BAD_GATEWAY);
            return WEIR_ERROR;
        }

        u->upstream = us;
    }

    if (us == NULL || us->peer.init == NULL) {
        weir_log_error(WEIR_LOG_ALERT, r->connection->log, 0,
                       "no upstream configuration");
        weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return WEIR_ERROR;
    }

    if (us->peer.init(r, us) != WEIR_OK
        || weir_http_upstream_keepalive_init_peer(r, us) != WEIR_OK)
    {
        weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return WEIR_ERROR;
    }

    return WEIR_OK;
}


static weir_chain_t *
weir_http_upstream_copy_chain(weir_http_request_t *r, weir_chain_t *in)
{
    weir_buf_t    *b;
    weir_chain_t  *out, **ll, *cl;

    out = NULL;
    ll = &out;

    for ( /* void */ ; in; in = in->next) {
        b = weir_alloc_buf(r->pool);
        cl = weir_alloc_chain_link(r->pool, NULL);
        if (b == NULL || cl == NULL) {
            return NULL;
        }

        *b = *in->buf;
        cl->buf = b;
        cl->next = NULL;
        *ll = cl;
        ll = &cl->next;
    }

    return out;
}


/* ---- connecting ------------------------------------------------------- */

static void
weir_http_upstream_connect(weir_http_upstream_t *u)
{
    weir_int_t                   rc;
    weir_event_get_peer_pt       get;
    weir_connection_t           *c;
    weir_http_request_t         *r;
    weir_http_upstream_ctx_t    *ctx;
    weir_http_upstream_state_t  *st;

    r = u->request;
    ctx = u->pipe;

    r->connection->log->action = "connecting to upstream";

    st = weir_array_push(u->state);
    if (st == NULL) {
        weir_http_upstream_finalize(u, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    weir_memzero(st, sizeof(weir_http_upstream_state_t));
    st->connect_time = (weir_msec_t) -1;
    st->header_time = (weir_msec_t) -1;
    st->response_time = (weir_msec_t) -1;
    st->response_length = -1;
    u->cur = st;
    u->tries++;

    ctx->attempt_start = weir_current_msec;
    ctx->sent_any = 0;
    ctx->head_done = 0;
    u->response_started = 0;
    u->peer.keepalive = 0;
    u->peer.start_time = weir_current_msec;

    if (u->ssl && u->peer.key.data == NULL) {
        /* once per request: the key depends on the location and the
         * origin's name, not on the peer an attempt picks */
        if (weir_http_upstream_ssl_key(u) != WEIR_OK) {
            weir_http_upstream_finalize(u, WEIR_HTTP_BAD_GATEWAY);
            return;
        }
    }

    if (ctx->same_peer) {
        /* the special retry after a stale cached connection: the peer
         * held, a fresh connection to its address */
        ctx->same_peer = 0;
        get = u->peer.get;
        u->peer.get = weir_event_get_peer;

        rc = weir_event_connect_peer(&u->peer);

        u->peer.get = get;

    } else {
        /* set again by get when it chooses a peer */
        u->peer.sockaddr = NULL;
        rc = weir_event_connect_peer(&u->peer);
    }

    if (u->peer.name) {
        st->peer = u->peer.name;
    }

    if (rc == WEIR_BUSY) {
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "no live upstreams");
        weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_NOLIVE);
        return;
    }

    if (rc == WEIR_ERROR) {
        /* socket() or the connection table failed after get chose a
         * peer: the peer is given back (not a failure of its own) */
        if (u->peer.sockaddr) {
            ctx->peer_held = 1;
        }

        weir_http_upstream_finalize(u, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    ctx->peer_held = 1;

    if (rc == WEIR_DECLINED) {
        /* logged by the connect code: "connect() to ... failed" */
        weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_ERROR);
        return;
    }

    c = u->peer.connection;

    if (c->pool == NULL) {
        c->pool = weir_create_pool(128, r->connection->log);
        if (c->pool == NULL) {
            weir_http_upstream_finalize(u, WEIR_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }
    }

    weir_http_upstream_take_connection(u, c);

    if (rc == WEIR_AGAIN) {
        ctx->connecting = 1;
        weir_event_add_timer(c->write, u->conf->connect_timeout);
        return;
    }

    /* WEIR_OK, or WEIR_DONE: a cached connection */
    weir_http_upstream_connected(u);
}


static void
weir_http_upstream_take_connection(weir_http_upstream_t *u,
    weir_connection_t *c)
{
    weir_http_request_t  *r;

    r = u->request;

    c->data = r;
    c->log = r->connection->log;
    c->read->log = c->log;
    c->write->log = c->log;
    c->pool->log = c->log;
    c->read->handler = weir_http_upstream_handler;
    c->write->handler = weir_http_upstream_handler;
    c->sendfile = 1;

    if (u->conf->socket_keepalive) {
        int  on = 1;

        (void) setsockopt(c->fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
    }
}


static void
weir_http_upstream_connected(weir_http_upstream_t *u)
{
    weir_connection_t         *c;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;

    r = u->request;
    ctx = u->pipe;
    c = u->peer.connection;

    if (u->ssl && c->ssl == NULL) {
        /* a fresh connection to an https:// origin (a cached one has
         * its TLS already) */
        weir_http_upstream_ssl_handshake(u);
        return;
    }

    ctx->connecting = 0;

    if (c->write->timer_set) {
        weir_event_del_timer(c->write);
    }

    /* as nginx's $upstream_connect_time: the TLS handshake included */
    u->cur->connect_time = weir_current_msec - ctx->attempt_start;

    if (u->proto->reinit) {
        u->proto->reinit(u);
    }

    u->buffer.pos = u->buffer.start;
    u->buffer.last = u->buffer.start;

    /* a fresh copy of the head (and of a buffered body) per attempt: a
     * retry resends from the start */
    ctx->head = weir_http_upstream_copy_chain(r, u->request_bufs);

    if (u->request_bufs && ctx->head == NULL) {
        weir_http_upstream_finalize(u, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    if (u->request_buffering) {
        ctx->body = weir_http_upstream_copy_chain(r, ctx->body_proto);

        if (ctx->body_proto && ctx->body == NULL) {
            weir_http_upstream_finalize(u, WEIR_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }

    } else if (ctx->taken) {
        /*
         * A streamed body taken before this attempt was framed with the
         * handler's state that reinit() has just reset: frame it again
         * from the start, or the handler counts it short (none of it
         * was written: a retry is only made before that).
         */
        ctx->body = NULL;

        if (u->proto->encode_body(u, ctx->taken, &ctx->body) != WEIR_OK) {
            weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                           "cannot frame the request body for upstream");
            weir_http_upstream_finalize(u, WEIR_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }
    }

    ctx->sending = 1;
    u->request_sent = 0;

    weir_http_upstream_send(u);
}


/* the TLS key of the request (weir_http_ssl_hooks_t.upstream_key) */

static weir_int_t
weir_http_upstream_ssl_key(weir_http_upstream_t *u)
{
    weir_http_core_main_conf_t  *cmcf;

    cmcf = weir_http_get_module_main_conf(u->request, weir_http_core_module);

    if (cmcf->ssl == NULL || cmcf->ssl->upstream_key == NULL) {
        weir_log_error(WEIR_LOG_ERR, u->request->connection->log, 0,
                       "TLS to upstream requires the ssl module");
        return WEIR_ERROR;
    }

    return cmcf->ssl->upstream_key(u);
}


/*
 * TLS to the origin: the ssl module (cmcf->ssl) takes c's handlers for
 * the handshake and ends it with weir_http_upstream_ssl_done. The
 * connect timer on c->write, armed here when the connect completed at
 * once, bounds the handshake.
 */

static void
weir_http_upstream_ssl_handshake(weir_http_upstream_t *u)
{
    weir_int_t                   rc;
    weir_uint_t                  saved;
    weir_connection_t           *c;
    weir_http_request_t         *r;
    weir_http_upstream_ctx_t    *ctx;
    weir_http_core_main_conf_t  *cmcf;

    r = u->request;
    ctx = u->pipe;
    c = u->peer.connection;

    cmcf = weir_http_get_module_main_conf(r, weir_http_core_module);

    r->connection->log->action = "SSL handshaking to upstream";

    if (cmcf->ssl == NULL || cmcf->ssl->upstream_handshake == NULL) {
        /* the configuration refuses https:// without the module: a
         * protocol module that sets u->ssl on its own could get here */
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "TLS to upstream requires the ssl module");
        weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_ERROR);
        return;
    }

    ctx->connecting = 1;
    ctx->handshaking = 1;

    if (!c->write->timer_set) {
        weir_event_add_timer(c->write, u->conf->connect_timeout);
    }

    /* weir_http_upstream_ssl_done may run before this returns (and may
     * finalize the request): nothing of u is touched after WEIR_OK */
    saved = weir_http_upstream_in_handshake_call;
    weir_http_upstream_in_handshake_call = 1;

    rc = cmcf->ssl->upstream_handshake(u);

    weir_http_upstream_in_handshake_call = saved;

    if (rc != WEIR_OK) {
        /* done was not called: u is still ours */
        ctx->handshaking = 0;
        r->connection->log->action = "SSL handshaking to upstream";
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "cannot start TLS to upstream");
        weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_ERROR);
        return;
    }
}


void
weir_http_upstream_ssl_done(weir_http_upstream_t *u, weir_int_t rc)
{
    weir_uint_t                in_call;
    weir_connection_t         *c, *cc;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;

    r = u->request;
    ctx = u->pipe;
    c = u->peer.connection;
    cc = r->connection;

    in_call = weir_http_upstream_in_handshake_call;

    if (!ctx->handshaking || ctx->finalized || c == NULL) {
        weir_log_error(WEIR_LOG_ALERT, cc->log, 0,
                       "upstream TLS handshake ended twice or too late");
        return;
    }

    ctx->handshaking = 0;

    /* the core's handlers back (the module restores its own, this makes
     * sure of it) */
    c->read->handler = weir_http_upstream_handler;
    c->write->handler = weir_http_upstream_handler;

    if (rc != WEIR_OK) {
        if (c->write->timedout) {
            cc->log->action = "SSL handshaking to upstream";
            weir_log_error(WEIR_LOG_ERR, cc->log, WEIR_ETIMEDOUT,
                           "upstream timed out");
            weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_TIMEOUT);

        } else {
            /* the module logged why */
            weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_ERROR);
        }

    } else if (c->ssl == NULL) {
        weir_log_error(WEIR_LOG_ALERT, cc->log, 0,
                       "upstream TLS handshake reported done without TLS");
        weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_ERROR);

    } else {
        cc->log->action = "sending request to upstream";
        weir_http_upstream_connected(u);
    }

    if (!in_call) {
        /* called from the module's event handler, not from ours */
        weir_http_run_posted_requests(cc);
    }
}


static void
weir_http_upstream_close(weir_connection_t *c)
{
    weir_pool_t  *pool;

    pool = c->pool;
    weir_close_connection(c);

    if (pool) {
        weir_destroy_pool(pool);
    }
}


/* the attempt with the current peer is over: hand the peer back (the
 * pool may take a reusable connection), close what is left */

static void
weir_http_upstream_free_peer(weir_http_upstream_t *u, weir_uint_t state)
{
    weir_connection_t         *c;
    weir_peer_connection_t    *pc;
    weir_http_upstream_ctx_t  *ctx;

    pc = &u->peer;
    ctx = u->pipe;
    c = pc->connection;

    if (c) {
        if (state & WEIR_PEER_FAILED) {
            pc->keepalive = 0;
        }

        /* a pool re-arms the read timer as its idle timer (lazily, so
         * the node may stay); what no pool takes is closed below */
        if (c->read->timer_set && !pc->keepalive) {
            weir_event_del_timer(c->read);
        }

        if (c->write->timer_set) {
            weir_event_del_timer(c->write);
        }

        if (c->read->posted) {
            /* a read budget was spent: not for the pool's handler */
            weir_delete_posted_event(c->read);
        }

        if (pc->keepalive) {
            /* the pool sets its own handlers and log; nothing of this
             * request may be reached from it */
            c->data = NULL;
        }
    }

    if (ctx->peer_held) {
        ctx->peer_held = 0;
        pc->free(pc, pc->data, state);
    }

    if (pc->connection) {
        weir_http_upstream_close(pc->connection);
        pc->connection = NULL;
    }

    ctx->connecting = 0;
    ctx->sending = 0;
}


static void
weir_http_upstream_end_attempt(weir_http_upstream_t *u)
{
    weir_http_upstream_ctx_t  *ctx;

    ctx = u->pipe;

    if (u->cur && u->cur->response_time == (weir_msec_t) -1) {
        u->cur->response_time = weir_current_msec - ctx->attempt_start;
    }
}


static weir_uint_t
weir_http_upstream_may_retry(weir_http_upstream_t *u, weir_uint_t ft)
{
    weir_uint_t                next;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;

    r = u->request;
    ctx = u->pipe;
    next = u->conf->next_upstream;

    if (u->header_sent || r->header_sent || ft == WEIR_HTTP_UPSTREAM_FT_NOLIVE
        || (next & WEIR_HTTP_UPSTREAM_FT_OFF) || !(next & ft))
    {
        return 0;
    }

    /*
     * peer.tries counts the attempts the balancer has left, the current
     * one until its peer is freed: a bad status is judged while the peer
     * is held, so it needs another attempt beyond this one, or the
     * answer in hand is the one relayed (as nginx's "peer.tries > 1").
     */
    if (u->peer.tries <= (weir_uint_t) (ctx->peer_held ? 1 : 0)) {
        return 0;
    }

    if (u->conf->next_upstream_tries
        && u->tries >= u->conf->next_upstream_tries)
    {
        return 0;
    }

    if (u->conf->next_upstream_timeout
        && weir_current_msec - u->start_time
           >= u->conf->next_upstream_timeout)
    {
        return 0;
    }

    if (ctx->body_consumed || (!u->request_buffering && ctx->taken == NULL
                               && u->request_body_sent))
    {
        /* a streamed body cannot be read again */
        return 0;
    }

    if (ctx->sent_any
        && !(next & WEIR_HTTP_UPSTREAM_FT_NON_IDEMPOTENT)
        && !(r->method & (WEIR_HTTP_GET | WEIR_HTTP_HEAD | WEIR_HTTP_PUT
                          | WEIR_HTTP_DELETE | WEIR_HTTP_OPTIONS
                          | WEIR_HTTP_TRACE)))
    {
        return 0;
    }

    return 1;
}


static void
weir_http_upstream_retry(weir_http_upstream_t *u)
{
    weir_http_request_t  *r;

    r = u->request;

    if (u->reinit_request && u->reinit_request(r) != WEIR_OK) {
        weir_http_upstream_finalize(u, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    u->keepalive = 0;
    u->early_response = 0;
    u->length = -1;

    weir_http_upstream_connect(u);
}


/* a request sent on a cached connection that the origin closed before
 * any byte of a response: the origin cannot have processed it */

static weir_uint_t
weir_http_upstream_cached_retry(weir_http_upstream_t *u)
{
    weir_connection_t         *c;
    weir_http_upstream_ctx_t  *ctx;

    ctx = u->pipe;

    if (!u->peer.cached || u->response_started || ctx->cached_retried
        || ctx->body_consumed || u->header_sent)
    {
        return 0;
    }

    ctx->cached_retried = 1;

    weir_log_error(WEIR_LOG_INFO, u->request->connection->log, 0,
                   "upstream closed a kept-alive connection, retrying on "
                   "another connection");

    weir_http_upstream_end_attempt(u);

    /*
     * The peer is not to blame: it stays chosen (not freed to the
     * balancer, which would count a try and not hand the same peer out
     * again in this request, a single one included), only the stale
     * connection is closed and a fresh one opened to the same address.
     * This attempt does not count against next_upstream_tries.
     */

    c = u->peer.connection;

    if (c) {
        if (c->read->timer_set) {
            weir_event_del_timer(c->read);
        }

        if (c->write->timer_set) {
            weir_event_del_timer(c->write);
        }

        weir_http_upstream_close(c);
        u->peer.connection = NULL;
    }

    u->peer.keepalive = 0;
    u->peer.cached = 0;
    ctx->connecting = 0;
    ctx->sending = 0;
    ctx->same_peer = 1;
    u->tries--;

    weir_http_upstream_retry(u);

    return 1;
}


static void
weir_http_upstream_next(weir_http_upstream_t *u, weir_uint_t ft)
{
    weir_uint_t           state, status;
    weir_http_request_t  *r;

    r = u->request;

    switch (ft) {
    case WEIR_HTTP_UPSTREAM_FT_HTTP_403:
    case WEIR_HTTP_UPSTREAM_FT_HTTP_404:
    case WEIR_HTTP_UPSTREAM_FT_HTTP_429:
        state = WEIR_PEER_NEXT;
        break;
    default:
        state = WEIR_PEER_NEXT | WEIR_PEER_FAILED;
    }

    switch (ft) {
    case WEIR_HTTP_UPSTREAM_FT_TIMEOUT:
    case WEIR_HTTP_UPSTREAM_FT_HTTP_504:
        status = WEIR_HTTP_GATEWAY_TIME_OUT;
        break;
    case WEIR_HTTP_UPSTREAM_FT_HTTP_500:
        status = WEIR_HTTP_INTERNAL_SERVER_ERROR;
        break;
    case WEIR_HTTP_UPSTREAM_FT_HTTP_503:
        status = 503;
        break;
    case WEIR_HTTP_UPSTREAM_FT_HTTP_403:
        status = 403;
        break;
    case WEIR_HTTP_UPSTREAM_FT_HTTP_404:
        status = 404;
        break;
    case WEIR_HTTP_UPSTREAM_FT_HTTP_429:
        status = 429;
        break;
    default:
        status = WEIR_HTTP_BAD_GATEWAY;
    }

    weir_http_upstream_end_attempt(u);

    if (u->cur && u->cur->status == 0) {
        /* $upstream_status of a failed attempt, as nginx */
        u->cur->status = status;
    }

    if (ft != WEIR_HTTP_UPSTREAM_FT_NOLIVE) {
        u->peer.keepalive = 0;
        weir_http_upstream_free_peer(u, state);
    }

    if (r->connection->error) {
        weir_http_upstream_finalize(u, WEIR_HTTP_CLIENT_CLOSED_REQUEST);
        return;
    }

    if (!weir_http_upstream_may_retry(u, ft)) {
        weir_http_upstream_finalize(u, status);
        return;
    }

    weir_log_debug(r->connection->log, 0, "upstream: next peer, ft 0x%lx",
                   (unsigned long) ft);

    weir_http_upstream_retry(u);
}


static void
weir_http_upstream_finalize(weir_http_upstream_t *u, weir_int_t rc)
{
    weir_connection_t          *c;
    weir_http_request_t        *r;
    weir_http_upstream_ctx_t   *ctx;
    weir_http_core_loc_conf_t  *clcf;

    r = u->request;
    ctx = u->pipe;
    c = r->connection;

    if (ctx->finalized) {
        return;
    }

    ctx->finalized = 1;

    weir_log_debug(c->log, 0, "finalize http upstream request: %d", (int) rc);

    weir_http_upstream_end_attempt(u);

    if (u->peer.connection || ctx->peer_held) {
        if (rc != WEIR_OK) {
            u->peer.keepalive = 0;
        }

        weir_http_upstream_free_peer(u, 0);
    }

    if (u->finalize_request) {
        u->finalize_request(r, rc);
    }

    c->log->action = "sending to client";

    if (r->read_event_handler == weir_http_upstream_abort_check
        || r->read_event_handler == weir_http_upstream_tunnel)
    {
        r->read_event_handler = weir_http_block_reading;
    }

    r->write_event_handler = weir_http_request_empty_handler;

    if (c->read->timer_set && !r->reading_body && !r->discard_body) {
        weir_event_del_timer(c->read);
    }

    if (rc == WEIR_OK && !c->error && (r->out || c->buffered)) {
        /* the response is complete but still queued for a slow client
         * (a temporary file may hold most of it): the writer that
         * finishes it re-arms send_timeout on each write event, the
         * timer must be there until the first one */
        clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

        if (!c->write->timer_set) {
            weir_event_add_timer(c->write, clcf->send_timeout);
        }

    } else if (c->write->timer_set) {
        weir_event_del_timer(c->write);
    }

    if ((u->header_sent || r->header_sent)
        && rc >= WEIR_HTTP_SPECIAL_RESPONSE)
    {
        rc = WEIR_ERROR;
    }

    if (rc == WEIR_ERROR && (u->header_sent || r->header_sent)) {
        r->keepalive = 0;
        c->error = 1;
    }

    weir_http_finalize_request(r, rc);
}


/* ---- events ----------------------------------------------------------- */

static void
weir_http_upstream_handler(weir_event_t *ev)
{
    weir_connection_t         *c, *cc;
    weir_http_request_t       *r;
    weir_http_upstream_t      *u;
    weir_http_upstream_ctx_t  *ctx;

    c = ev->data;
    r = c->data;

    if (r == NULL) {
        return;
    }

    u = r->upstream;
    ctx = u->pipe;
    cc = r->connection;

    if (ctx->finalized) {
        return;
    }

    if (r->main->terminated || cc->close) {
        /* the request is going away: the pool cleanup closes the rest */
        weir_http_upstream_finalize(u, WEIR_ERROR);
        weir_http_run_posted_requests(cc);
        return;
    }

    if (ev->write) {
        weir_http_upstream_write_handler(u, ev);

    } else {
        weir_http_upstream_read_handler(u, ev);
    }

    weir_http_run_posted_requests(cc);
}


static void
weir_http_upstream_write_handler(weir_http_upstream_t *u, weir_event_t *wev)
{
    weir_connection_t         *c;
    weir_http_upstream_ctx_t  *ctx;

    ctx = u->pipe;
    c = u->request->connection;

    if (ctx->tunnel) {
        weir_http_upstream_tunnel(u->request);
        return;
    }

    if (ctx->connecting) {
        if (wev->timedout) {
            c->log->action = "connecting to upstream";
            weir_log_error(WEIR_LOG_ERR, c->log, WEIR_ETIMEDOUT,
                           "upstream timed out");
            weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_TIMEOUT);
            return;
        }

        c->log->action = "connecting to upstream";

        if (weir_event_connect_result(&u->peer) != WEIR_OK) {
            weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_ERROR);
            return;
        }

        weir_http_upstream_connected(u);
        return;
    }

    if (ctx->sending) {
        if (wev->timedout) {
            c->log->action = "sending request to upstream";
            weir_log_error(WEIR_LOG_ERR, c->log, WEIR_ETIMEDOUT,
                           "upstream timed out");

            if (ctx->head_done) {
                /* the response is being relayed: stop sending */
                weir_http_upstream_stop_body(u);
                return;
            }

            weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_TIMEOUT);
            return;
        }

        weir_http_upstream_send(u);
    }
}


static void
weir_http_upstream_read_handler(weir_http_upstream_t *u, weir_event_t *rev)
{
    weir_connection_t         *c;
    weir_http_upstream_ctx_t  *ctx;

    ctx = u->pipe;
    c = u->request->connection;

    if (ctx->tunnel) {
        weir_http_upstream_tunnel(u->request);
        return;
    }

    if (ctx->connecting) {
        return;
    }

    if (ctx->relay) {
        if (rev->timedout) {
            rev->timedout = 0;
            c->log->action = "reading upstream";
            weir_log_error(WEIR_LOG_ERR, c->log, WEIR_ETIMEDOUT,
                           "upstream timed out");
            weir_http_upstream_finalize(u, WEIR_ERROR);
            return;
        }

        weir_http_upstream_process(u);
        return;
    }

    if (rev->timedout) {
        c->log->action = "reading response header from upstream";
        weir_log_error(WEIR_LOG_ERR, c->log, WEIR_ETIMEDOUT,
                       "upstream timed out");
        weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_TIMEOUT);
        return;
    }

    weir_http_upstream_process_head(u);
}


/* the client side while the core owns the request */

static void
weir_http_upstream_client_handlers(weir_http_upstream_t *u)
{
    weir_http_request_t  *r;

    r = u->request;

    if (!r->reading_body) {
        r->read_event_handler = u->conf->ignore_client_abort
                                ? weir_http_block_reading
                                : weir_http_upstream_abort_check;
    }

    r->write_event_handler = weir_http_upstream_downstream;
}


static void
weir_http_upstream_abort_check(weir_http_request_t *r)
{
    weir_connection_t     *c;
    weir_http_upstream_t  *u;

    u = r->upstream;
    c = r->connection;

    weir_http_test_reading(r);

    /* weir_http_test_reading() finalized with 499 on a close: the
     * origin connection goes with the request (not kept) */
    if (c->error && u && !((weir_http_upstream_ctx_t *) u->pipe)->finalized)
    {
        ((weir_http_upstream_ctx_t *) u->pipe)->finalized = 1;
        weir_http_upstream_end_attempt(u);
        u->peer.keepalive = 0;
        weir_http_upstream_free_peer(u, 0);
    }
}


/* the client's write event: room to relay more */

static void
weir_http_upstream_downstream(weir_http_request_t *r)
{
    weir_connection_t         *c;
    weir_http_upstream_t      *u;
    weir_http_upstream_ctx_t  *ctx;

    c = r->connection;
    u = r->upstream;
    ctx = u->pipe;

    if (ctx->finalized) {
        return;
    }

    if (c->write->timedout) {
        c->timedout = 1;
        c->error = 1;
        c->log->action = "sending to client";
        weir_log_error(WEIR_LOG_INFO, c->log, WEIR_ETIMEDOUT,
                       "client timed out");
        weir_http_upstream_finalize(u, WEIR_ERROR);
        return;
    }

    if (ctx->tunnel) {
        weir_http_upstream_tunnel(r);
        return;
    }

    if (ctx->relay) {
        weir_http_upstream_process(u);
    }
}


/* ---- sending the request ---------------------------------------------- */

/* streamed body: takes what the body reader has, frames it after what is
 * still unsent */

static void
weir_http_upstream_take_body(weir_http_upstream_t *u)
{
    weir_chain_t              *in, *cl, *out, **ll;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;
    weir_http_request_body_t  *rb;

    r = u->request;
    ctx = u->pipe;
    rb = r->request_body;

    if (rb == NULL || rb->bufs == NULL || ctx->body_last
        || ctx->body_stopped || !u->req.has_body)
    {
        return;
    }

    in = rb->bufs;
    rb->bufs = NULL;

    for (cl = in; cl; cl = cl->next) {
        if (cl->buf->last_buf) {
            ctx->body_last = 1;
        }

        ll = &ctx->taken;
        while (*ll) {
            ll = &(*ll)->next;
        }

        *ll = weir_alloc_chain_link(r->pool, NULL);
        if (*ll == NULL) {
            weir_http_upstream_finalize(u, WEIR_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }

        (*ll)->buf = cl->buf;
        (*ll)->next = NULL;
    }

    out = NULL;

    if (u->proto->encode_body(u, in, &out) != WEIR_OK) {
        /* the body reader keeps a body within its framing: the handler
         * logged what it refused */
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "cannot frame the request body for upstream");
        weir_http_upstream_finalize(u, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    for (ll = &ctx->body; *ll; ll = &(*ll)->next) { /* void */ }

    *ll = out;
}


static void
weir_http_upstream_send(weir_http_upstream_t *u)
{
    off_t                      head_size, written;
    weir_int_t                 rc;
    weir_chain_t              *cl, **ll, *all;
    weir_connection_t         *c;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;

    r = u->request;
    ctx = u->pipe;
    c = u->peer.connection;

    if (!ctx->sending || c == NULL || ctx->in_post) {
        return;
    }

    r->connection->log->action = "sending request to upstream";

    for ( ;; ) {
        head_size = weir_chain_size(ctx->head);

        /* head and body go out in one writev */
        all = ctx->head;

        for (ll = &all; *ll; ll = &(*ll)->next) { /* void */ }

        *ll = ctx->body;

        rc = weir_http_upstream_write_chain(u, all, &written);

        /* detach the body again */
        for (cl = ctx->head; cl && cl->next != ctx->body; cl = cl->next) {
            /* void */
        }

        if (cl) {
            cl->next = NULL;
        }

        if (written > 0) {
            ctx->sent_any = 1;
            u->cur->bytes_sent += written;

            if (written > head_size && !u->request_buffering) {
                /* a streamed body cannot be read again: no retry; a
                 * buffered one is resent from its copy */
                ctx->body_consumed = 1;
            }
        }

        /* drop what was written */
        while (ctx->head
               && (weir_buf_special(ctx->head->buf)
                   || weir_buf_size(ctx->head->buf) == 0))
        {
            ctx->head = ctx->head->next;
        }

        while (ctx->body
               && (weir_buf_special(ctx->body->buf)
                   || weir_buf_size(ctx->body->buf) == 0))
        {
            ctx->body = ctx->body->next;
        }

        if (rc == WEIR_ERROR) {
            if (ctx->head_done) {
                /* the origin answered and closed: the response goes on */
                weir_http_upstream_stop_body(u);
                return;
            }

            if (weir_http_upstream_cached_retry(u)) {
                return;
            }

            weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_ERROR);
            return;
        }

        if (ctx->head || ctx->body) {
            /* the socket is full: the client body waits (back-pressure) */
            if (!c->write->timer_set) {
                weir_event_add_timer(c->write, u->conf->send_timeout);
            }

            if (weir_handle_write_event(c->write, 0) != WEIR_OK) {
                weir_http_upstream_finalize(u,
                                            WEIR_HTTP_INTERNAL_SERVER_ERROR);
            }

            return;
        }

        if (c->write->timer_set) {
            weir_event_del_timer(c->write);
        }

        if (u->request_buffering || !u->req.has_body || ctx->body_last) {
            break;
        }

        /* streamed: what was taken is written, the reader may reuse it */
        for (cl = ctx->taken; cl; cl = cl->next) {
            cl->buf->pos = cl->buf->last;
        }

        ctx->taken = NULL;

        ctx->in_post = 1;
        rc = weir_http_read_unbuffered_request_body(r);
        ctx->in_post = 0;

        if (rc != WEIR_OK && rc != WEIR_AGAIN) {
            if (ctx->head_done) {
                weir_http_upstream_stop_body(u);
                return;
            }

            weir_http_upstream_finalize(u, rc);
            return;
        }

        if (r->request_body->bufs == NULL) {
            if (rc == WEIR_OK) {
                /* the body ended with nothing more to frame */
                ctx->body_last = 1;
                break;
            }

            /* the post handler brings more */
            return;
        }

        weir_http_upstream_take_body(u);

        if (ctx->finalized) {
            return;
        }
    }

    weir_http_upstream_body_sent(u);
}


/* the whole request is written */

static void
weir_http_upstream_body_sent(weir_http_upstream_t *u)
{
    weir_chain_t              *cl;
    weir_connection_t         *c;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;

    r = u->request;
    ctx = u->pipe;
    c = u->peer.connection;

    for (cl = ctx->taken; cl; cl = cl->next) {
        cl->buf->pos = cl->buf->last;
    }

    ctx->taken = NULL;
    u->request_sent = 1;
    u->request_body_sent = 1;
    ctx->sending = 0;

    if (!u->request_buffering) {
        /* the body is all read: watch for a client that goes away */
        weir_http_upstream_client_handlers(u);
    }

    if (ctx->head_done) {
        /* full duplex: the response is being relayed already */
        return;
    }

    r->connection->log->action = "reading response header from upstream";

    if (!c->read->timer_set) {
        weir_event_add_timer(c->read, u->conf->read_timeout);
    }

    if (c->read->ready || (c->ssl && c->ssl->ops->pending(c))) {
        weir_http_upstream_process_head(u);
    }
}


/* the response is complete (or the origin stopped taking the request
 * while its response flows) before the request body was all sent: stop
 * sending it; the client connection closes unless its body was read */

static void
weir_http_upstream_stop_body(weir_http_upstream_t *u)
{
    weir_connection_t         *c;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;

    r = u->request;
    ctx = u->pipe;
    c = r->connection;

    if (!ctx->sending) {
        return;
    }

    ctx->sending = 0;
    ctx->body_stopped = 1;
    ctx->head = NULL;
    ctx->body = NULL;
    u->early_response = 1;
    u->peer.keepalive = 0;

    if (u->peer.connection && u->peer.connection->write->timer_set) {
        weir_event_del_timer(u->peer.connection->write);
    }

    if (r->reading_body || (!u->request_buffering && !ctx->body_last)) {
        r->reading_body = 0;
        r->keepalive = 0;
        r->lingering_close = 1;
        r->read_event_handler = weir_http_block_reading;

        if (c->read->timer_set) {
            weir_event_del_timer(c->read);
        }
    }
}


/*
 * Writes in to the origin: runs of memory buffers with c->writev, file
 * buffers with sendfile (plain) or read into memory and sent through
 * c->send (TLS). WEIR_OK: all written; WEIR_AGAIN: the socket is full;
 * WEIR_ERROR: logged. *written: bytes written by this call.
 */

static weir_int_t
weir_http_upstream_write_chain(weir_http_upstream_t *u, weir_chain_t *in,
    off_t *written)
{
    int                 cnt;
    off_t               off;
    size_t              size;
    ssize_t             n, want;
    weir_err_t          err;
    weir_buf_t         *b;
    weir_chain_t       *cl;
    weir_connection_t  *c;
    struct iovec        iov[WEIR_HTTP_UPSTREAM_IOVS];

    c = u->peer.connection;
    *written = 0;

    for ( ;; ) {

        while (in && (weir_buf_special(in->buf)
                      || weir_buf_size(in->buf) == 0))
        {
            in = in->next;
        }

        if (in == NULL) {
            return WEIR_OK;
        }

        b = in->buf;

        if (weir_buf_in_memory(b)) {
            cnt = 0;
            want = 0;

            for (cl = in; cl && cnt < WEIR_HTTP_UPSTREAM_IOVS; cl = cl->next)
            {
                if (weir_buf_special(cl->buf)) {
                    continue;
                }

                if (!weir_buf_in_memory(cl->buf)) {
                    break;
                }

                size = (size_t) (cl->buf->last - cl->buf->pos);

                if (size == 0) {
                    continue;
                }

                iov[cnt].iov_base = cl->buf->pos;
                iov[cnt].iov_len = size;
                cnt++;
                want += size;
            }

            /* counts c->sent; logs and sets c->error on failure */
            n = c->writev(c, iov, cnt);

            if (n == WEIR_ERROR) {
                c->write->error = 1;
                return WEIR_ERROR;
            }

            if (n == WEIR_AGAIN || n == 0) {
                c->write->ready = 0;
                return WEIR_AGAIN;
            }

            *written += n;

            in = weir_chain_update_sent(in, n);

            if (n < want) {
                c->write->ready = 0;
                return WEIR_AGAIN;
            }

            continue;
        }

        if (c->ssl) {
            /* TLS encrypts in user space: no sendfile() */
            n = weir_http_upstream_send_file_copy(c, b, &want);

            if (n == WEIR_ERROR) {
                return WEIR_ERROR;
            }

            if (n == WEIR_AGAIN) {
                return WEIR_AGAIN;
            }

            *written += n;

            in = weir_chain_update_sent(in, n);

            if (n < want) {
                c->write->ready = 0;
                return WEIR_AGAIN;
            }

            continue;
        }

        off = b->file_pos;
        want = (ssize_t) (b->file_last - b->file_pos);

        if (want > 1024 * 1024) {
            want = 1024 * 1024;
        }

        n = sendfile(c->fd, b->file->fd, &off, (size_t) want);

        if (n == 0) {
            weir_log_error(WEIR_LOG_ALERT, c->log, 0,
                           "sendfile() reported that \"%.*s\" was "
                           "truncated", WEIR_STR_ARG(b->file->name));
            return WEIR_ERROR;
        }

        if (n == -1) {
            err = weir_socket_errno;

            if (err == WEIR_EINTR) {
                continue;
            }

            if (err == WEIR_EAGAIN || err == EWOULDBLOCK) {
                c->write->ready = 0;
                return WEIR_AGAIN;
            }

            c->write->error = 1;
            weir_log_error(WEIR_LOG_ERR, c->log, err, "sendfile() failed");
            return WEIR_ERROR;
        }

        c->sent += n;
        *written += n;

        in = weir_chain_update_sent(in, n);

        if (n < want) {
            c->write->ready = 0;
            return WEIR_AGAIN;
        }
    }
}


/*
 * A file buffer to a TLS origin: reads a piece at b->file_pos into a
 * buffer on the stack and sends it with c->send. The piece is read again
 * from the file when the send must be retried, so a TLS library that
 * wants the same bytes on a retry gets them. Returns the bytes sent (*want
 * the piece's size), WEIR_AGAIN or WEIR_ERROR (logged). Does not touch b.
 */

static ssize_t
weir_http_upstream_send_file_copy(weir_connection_t *c, weir_buf_t *b,
    ssize_t *want)
{
    size_t         size;
    ssize_t        n;
    unsigned char  buf[WEIR_HTTP_UPSTREAM_FILE_COPY];

    size = (size_t) (b->file_last - b->file_pos);

    if (size > sizeof(buf)) {
        size = sizeof(buf);
    }

    n = pread(b->file->fd, buf, size, b->file_pos);

    if (n == -1) {
        weir_log_error(WEIR_LOG_CRIT, c->log, errno,
                       "pread() \"%.*s\" failed",
                       WEIR_STR_ARG(b->file->name));
        return WEIR_ERROR;
    }

    if (n == 0) {
        weir_log_error(WEIR_LOG_ALERT, c->log, 0,
                       "file \"%.*s\" was truncated while being sent",
                       WEIR_STR_ARG(b->file->name));
        return WEIR_ERROR;
    }

    *want = n;

    /* counts c->sent; logs and sets the error flags on failure */
    n = c->send(c, buf, (size_t) n);

    if (n == 0) {
        c->write->ready = 0;
        return WEIR_AGAIN;
    }

    return n;
}


/* ---- the response head ------------------------------------------------ */

static void
weir_http_upstream_process_head(weir_http_upstream_t *u)
{
    ssize_t                    n;
    weir_int_t                 rc;
    weir_err_t                 err;
    weir_buf_t                *b;
    weir_connection_t         *c, *cc;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;

    r = u->request;
    ctx = u->pipe;
    c = u->peer.connection;
    cc = r->connection;
    b = &u->buffer;

    for ( ;; ) {

        if (b->last == b->end) {
            cc->log->action = "reading response header from upstream";
            weir_log_error(WEIR_LOG_ERR, cc->log, 0,
                           "upstream sent too big header");
            weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_INVALID_HEADER);
            return;
        }

        n = c->recv(c, b->last, (size_t) (b->end - b->last));
        err = weir_socket_errno;

        cc->log->action = "reading response header from upstream";

        if (n == WEIR_AGAIN) {
            if (!ctx->sending && !c->read->timer_set) {
                weir_event_add_timer(c->read, u->conf->read_timeout);
            }

            if (weir_handle_read_event(c->read, 0) != WEIR_OK) {
                weir_http_upstream_finalize(u,
                                            WEIR_HTTP_INTERNAL_SERVER_ERROR);
            }

            return;
        }

        if (n == 0 || n == WEIR_ERROR) {
            if (weir_http_upstream_cached_retry(u)) {
                return;
            }

            if (n == 0) {
                weir_log_error(WEIR_LOG_ERR, cc->log, 0,
                               "upstream prematurely closed connection");

            } else {
                weir_log_error(WEIR_LOG_ERR, cc->log, err, "recv() failed");
            }

            weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_ERROR);
            return;
        }

        u->response_started = 1;
        u->cur->bytes_received += n;
        b->last += n;

        for ( ;; ) {
            rc = u->proto->process_header(u);

            if (rc != WEIR_HTTP_UPSTREAM_INTERIM) {
                break;
            }

            rc = WEIR_DECLINED;

            if (r->proto && r->proto->send_interim && !r->header_sent) {
                rc = r->proto->send_interim(r, u->headers_in.status_n,
                                            &u->headers_in.headers);
            }

            if (rc == WEIR_ERROR) {
                weir_http_upstream_finalize(u, WEIR_ERROR);
                return;
            }

            u->proto->reinit_head(u);
        }

        if (rc == WEIR_AGAIN) {
            continue;
        }

        if (rc == WEIR_HTTP_UPSTREAM_INVALID_HEADER) {
            /* logged by the handler */
            weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_INVALID_HEADER);
            return;
        }

        if (rc != WEIR_OK) {
            weir_http_upstream_finalize(u, WEIR_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }

        weir_http_upstream_head_done(u);
        return;
    }
}


static weir_uint_t
weir_http_upstream_status_ft(weir_uint_t status)
{
    switch (status) {
    case 500:
        return WEIR_HTTP_UPSTREAM_FT_HTTP_500;
    case 502:
        return WEIR_HTTP_UPSTREAM_FT_HTTP_502;
    case 503:
        return WEIR_HTTP_UPSTREAM_FT_HTTP_503;
    case 504:
        return WEIR_HTTP_UPSTREAM_FT_HTTP_504;
    case 403:
        return WEIR_HTTP_UPSTREAM_FT_HTTP_403;
    case 404:
        return WEIR_HTTP_UPSTREAM_FT_HTTP_404;
    case 429:
        return WEIR_HTTP_UPSTREAM_FT_HTTP_429;
    }

    return 0;
}


static weir_uint_t
weir_http_upstream_has_error_page(weir_http_request_t *r, weir_uint_t status)
{
    weir_uint_t                 i;
    weir_http_err_page_t       *ep;
    weir_http_core_loc_conf_t  *clcf;

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    if (clcf->error_pages == NULL || r->error_page) {
        return 0;
    }

    ep = clcf->error_pages->elts;

    for (i = 0; i < clcf->error_pages->nelts; i++) {
        if ((weir_uint_t) ep[i].status == status) {
            return 1;
        }
    }

    return 0;
}


static void
weir_http_upstream_head_done(weir_http_upstream_t *u)
{
    weir_int_t                 rc;
    weir_uint_t                ft, status, i;
    weir_buf_t                *b;
    weir_list_part_t          *part;
    weir_connection_t         *c, *cc;
    weir_http_header_t        *h, *t, *ho;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;

    r = u->request;
    ctx = u->pipe;
    c = u->peer.connection;
    cc = r->connection;

    ctx->head_done = 1;
    status = u->headers_in.status_n;
    u->cur->status = status;
    u->cur->header_time = weir_current_msec - ctx->attempt_start;

    /*
     * The read timer stays for the body: the relay re-arms it (lazily)
     * or removes it while the client is the one to wait for, and a
     * connection that goes back to the pool keeps the node for its idle
     * timer. The tunnel's idle time counts from the 101.
     */

    if (status == WEIR_HTTP_SWITCHING_PROTOCOLS) {
        if (c->read->timer_set) {
            weir_event_del_timer(c->read);
        }

        if (!u->req.upgrade) {
            weir_log_error(WEIR_LOG_ERR, cc->log, 0,
                           "upstream sent unexpected 101 status");
            weir_http_upstream_next(u, WEIR_HTTP_UPSTREAM_FT_INVALID_HEADER);
            return;
        }

        weir_http_upstream_start_tunnel(u);
        return;
    }

    ft = weir_http_upstream_status_ft(status);

    if (ft && (u->conf->next_upstream & ft)
        && weir_http_upstream_may_retry(u, ft))
    {
        weir_http_upstream_next(u, ft);
        return;
    }

    if (u->conf->intercept_errors && status >= WEIR_HTTP_SPECIAL_RESPONSE
        && weir_http_upstream_has_error_page(r, status))
    {
        /* as nginx: the page replaces the origin's answer, but a 401
         * without the origin's challenges cannot be answered */
        if (status == WEIR_HTTP_UNAUTHORIZED) {
            t = NULL;
            part = &u->headers_in.headers.part;
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

                if (h[i].hash == 0
                    || h[i].token != WEIR_HTTP_HDR_WWW_AUTHENTICATE)
                {
                    continue;
                }

                ho = weir_list_push(&r->headers_out.headers);
                if (ho == NULL) {
                    weir_http_upstream_finalize(u,
                                            WEIR_HTTP_INTERNAL_SERVER_ERROR);
                    return;
                }

                *ho = h[i];
                ho->next = NULL;

                if (t == NULL) {
                    r->headers_out.www_authenticate = ho;

                } else {
                    t->next = ho;
                }

                t = ho;
            }
        }

        u->peer.keepalive = 0;
        weir_http_upstream_finalize(u, status);
        return;
    }

    /* a response before the whole request was sent: full duplex, the
     * body goes on being sent while the response is relayed (an origin
     * may stream it back as it reads it); sending stops only when the
     * response is complete first (weir_http_upstream_process) */

    if (u->process_header) {
        rc = u->process_header(r);

        if (rc != WEIR_OK) {
            weir_http_upstream_finalize(u, rc >= WEIR_HTTP_SPECIAL_RESPONSE
                                           ? rc
                                           : WEIR_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }
    }

    cc->log->action = "sending to client";

    rc = weir_http_send_header(r);

    /* not sent when a header filter refused it before it went out */
    u->header_sent = r->header_sent;

    if (rc == WEIR_ERROR || rc > WEIR_OK || r->post_action) {
        weir_http_upstream_finalize(u, rc);
        return;
    }

    if (u->proto->input_filter_init(u) != WEIR_OK) {
        weir_http_upstream_finalize(u, WEIR_ERROR);
        return;
    }

    /* the response body: the bytes after the head first */

    ctx->relay = 1;
    ctx->maxraws = u->buffering ? (weir_uint_t) u->conf->bufs.num : 1;
    ctx->raw_size = u->buffering ? u->conf->bufs.size : u->conf->buffer_size;

    ctx->raws = weir_pcalloc(r->pool, (ctx->maxraws + 1)
                                      * sizeof(weir_http_upstream_raw_t));
    if (ctx->raws == NULL) {
        weir_http_upstream_finalize(u, WEIR_ERROR);
        return;
    }

    b = &u->buffer;

    ctx->raws[0].buf = b;
    ctx->raws[0].head = 1;
    ctx->nraws = 1;
    ctx->read_full = (b->last == b->end);

    cc->log->action = "reading upstream";

    if (b->pos < b->last) {
        if (u->proto->input_filter(u, b) != WEIR_OK) {
            weir_http_upstream_finalize(u, WEIR_ERROR);
            return;
        }
    }

    if (!u->body_done && u->length == 0) {
        if (weir_http_upstream_emit_last(u) != WEIR_OK) {
            weir_http_upstream_finalize(u, WEIR_ERROR);
            return;
        }
    }

    weir_http_upstream_process(u);
}


/* ---- relaying the body ------------------------------------------------ */

weir_int_t
weir_http_upstream_emit(weir_http_upstream_t *u, weir_buf_t *b,
    unsigned char *start, unsigned char *end)
{
    weir_buf_t                *v;
    weir_chain_t              *cl;
    weir_http_upstream_raw_t  *raw;
    weir_http_upstream_ctx_t  *ctx;

    ctx = u->pipe;

    if (start == end) {
        return WEIR_OK;
    }

    if (u->cur) {
        if (u->cur->response_length < 0) {
            u->cur->response_length = 0;
        }

        u->cur->response_length += end - start;
    }

    if (ctx->spilling && b == ctx->spill) {
        return weir_http_upstream_spill(u, start, end);
    }

    cl = weir_chain_get_free_buf(u->request->pool, &u->free_bufs);
    if (cl == NULL) {
        return WEIR_ERROR;
    }

    v = cl->buf;
    weir_memzero(v, sizeof(weir_buf_t));

    v->pos = start;
    v->last = end;
    v->start = start;
    v->end = end;
    v->temporary = 1;
    v->shadow = b;
    v->tag = (weir_buf_tag_t) &weir_http_upstream_module;

    if (!u->buffering) {
        v->flush = 1;
    }

    raw = weir_http_upstream_raw(u, b);
    if (raw) {
        raw->views++;
    }

    cl->next = NULL;
    *u->last_out = cl;
    u->last_out = &cl->next;

    return WEIR_OK;
}


weir_int_t
weir_http_upstream_emit_last(weir_http_upstream_t *u)
{
    weir_uint_t           i;
    weir_buf_t           *v;
    weir_chain_t         *cl;
    weir_list_part_t     *part;
    weir_http_header_t   *h, *t;
    weir_http_request_t  *r;

    r = u->request;

    if (u->body_done) {
        return WEIR_OK;
    }

    u->body_done = 1;

    if (u->cur && u->cur->response_length < 0) {
        u->cur->response_length = 0;
    }

    if (u->conf->pass_trailers && r->proto->trailers_allowed
        && r->proto->trailers_allowed(r))
    {
        part = &u->headers_in.trailers.part;
        h = part->elts;

        for (i = 0; part->elts; i++) {
            if (i >= part->nelts) {
                if (part->next == NULL) {
                    break;
                }

                part = part->next;
                h = part->elts;
                i = 0;
            }

            if (h[i].hash == 0 || weir_http_upstream_hop_by_hop(&h[i], NULL))
            {
                continue;
            }

            t = weir_list_push(&r->headers_out.trailers);
            if (t == NULL) {
                return WEIR_ERROR;
            }

            *t = h[i];
            t->next = NULL;
            r->expect_trailers = 1;
        }
    }

    cl = weir_chain_get_free_buf(r->pool, &u->free_bufs);
    if (cl == NULL) {
        return WEIR_ERROR;
    }

    v = cl->buf;
    weir_memzero(v, sizeof(weir_buf_t));
    v->last_buf = 1;
    v->flush = 1;
    v->tag = (weir_buf_tag_t) &weir_http_upstream_module;

    cl->next = NULL;
    *u->last_out = cl;
    u->last_out = &cl->next;

    return WEIR_OK;
}


static weir_http_upstream_raw_t *
weir_http_upstream_raw(weir_http_upstream_t *u, weir_buf_t *b)
{
    weir_uint_t                i;
    weir_http_upstream_ctx_t  *ctx;

    ctx = u->pipe;

    for (i = 0; i < ctx->nraws; i++) {
        if (ctx->raws[i].buf == b) {
            return &ctx->raws[i];
        }
    }

    return NULL;
}


/* the client is slow and every memory buffer waits for it: body data goes
 * to the temporary file, passed on as file buffers */

static weir_int_t
weir_http_upstream_spill(weir_http_upstream_t *u, unsigned char *start,
    unsigned char *end)
{
    ssize_t                    n;
    weir_buf_t                *v, *prev;
    weir_chain_t              *cl, *ll;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;

    r = u->request;
    ctx = u->pipe;

    if (ctx->file == NULL) {
        ctx->file = weir_http_open_temp_file(r);
        if (ctx->file == NULL) {
            return WEIR_ERROR;
        }

        weir_log_error(WEIR_LOG_WARN, r->connection->log, 0,
                       "an upstream response is buffered to a temporary "
                       "file");
    }

    while (start < end) {
        n = pwrite(ctx->file->fd, start, (size_t) (end - start),
                   ctx->file_offset);

        if (n == -1) {
            if (weir_errno == WEIR_EINTR) {
                continue;
            }

            weir_log_error(WEIR_LOG_CRIT, r->connection->log, weir_errno,
                           "pwrite() \"%.*s\" failed",
                           WEIR_STR_ARG(ctx->file->name));
            return WEIR_ERROR;
        }

        /* extend the last file buffer not yet passed on, or add one */
        prev = NULL;

        for (ll = u->out_bufs; ll; ll = ll->next) {
            prev = ll->buf;
        }

        if (prev && prev->in_file && prev->file == ctx->file
            && prev->file_last == ctx->file_offset)
        {
            prev->file_last += n;

        } else {
            cl = weir_chain_get_free_buf(r->pool, &u->free_bufs);
            if (cl == NULL) {
                return WEIR_ERROR;
            }

            v = cl->buf;
            weir_memzero(v, sizeof(weir_buf_t));
            v->in_file = 1;
            v->temp_file = 1;
            v->file = ctx->file;
            v->file_pos = ctx->file_offset;
            v->file_last = ctx->file_offset + n;
            v->tag = (weir_buf_tag_t) &weir_http_upstream_module;

            ctx->file_views++;

            cl->next = NULL;
            *u->last_out = cl;
            u->last_out = &cl->next;
        }

        ctx->file_offset += n;
        start += n;
    }

    return WEIR_OK;
}


/* a buffer to read origin bytes into, or NULL: nothing may be read now
 * (or, spill 0, nothing but into the temporary file) */

static weir_buf_t *
weir_http_upstream_read_buf(weir_http_upstream_t *u, weir_uint_t spill)
{
    weir_uint_t                i;
    weir_buf_t                *b;
    weir_http_upstream_raw_t  *raw;
    weir_http_upstream_ctx_t  *ctx;

    ctx = u->pipe;
    ctx->spilling = 0;

    if (ctx->cur && ctx->cur->buf->last < ctx->cur->buf->end) {
        return ctx->cur->buf;
    }

    for (i = 0; i < ctx->nraws; i++) {
        raw = &ctx->raws[i];

        if (!raw->head && raw->views == 0) {
            raw->buf->pos = raw->buf->start;
            raw->buf->last = raw->buf->start;
            ctx->cur = raw;
            return raw->buf;
        }
    }

    if (ctx->nraws <= ctx->maxraws) {
        b = weir_create_temp_buf(u->request->pool, ctx->raw_size);
        if (b == NULL) {
            return NULL;
        }

        raw = &ctx->raws[ctx->nraws++];
        raw->buf = b;
        raw->views = 0;
        ctx->cur = raw;

        return b;
    }

    if (spill && u->buffering && u->conf->max_temp_file_size > 0
        && ctx->file_offset < u->conf->max_temp_file_size)
    {
        if (ctx->spill == NULL) {
            ctx->spill = weir_create_temp_buf(u->request->pool,
                                              ctx->raw_size);
            if (ctx->spill == NULL) {
                return NULL;
            }
        }

        ctx->spill->pos = ctx->spill->start;
        ctx->spill->last = ctx->spill->start;

        if (u->conf->max_temp_file_size - ctx->file_offset
            < (off_t) (ctx->spill->end - ctx->spill->start))
        {
            ctx->spill->end = ctx->spill->start
                              + (size_t) (u->conf->max_temp_file_size
                                          - ctx->file_offset);
        } else {
            ctx->spill->end = ctx->spill->start + ctx->raw_size;
        }

        ctx->spilling = 1;

        return ctx->spill;
    }

    return NULL;
}


/*
 * The memory buffers a read into ctx->cur may go on into (one readv() on
 * a plain connection): the free ones, and new ones while the rest of a
 * body of known length fills them (never more than proxy_buffers).
 * Returns how many, in more[].
 */

static weir_uint_t
weir_http_upstream_more_raws(weir_http_upstream_t *u,
    weir_http_upstream_raw_t **more)
{
    off_t                      want;
    weir_buf_t                *b;
    weir_uint_t                i, n;
    weir_http_upstream_raw_t  *raw;
    weir_http_upstream_ctx_t  *ctx;

    ctx = u->pipe;

    if (!u->buffering || ctx->cur == NULL) {
        return 0;
    }

    n = 0;

    for (i = 0; i < ctx->nraws && n < WEIR_HTTP_UPSTREAM_READV; i++) {
        raw = &ctx->raws[i];

        if (raw == ctx->cur || raw->head || raw->views) {
            continue;
        }

        raw->buf->pos = raw->buf->start;
        raw->buf->last = raw->buf->start;
        more[n++] = raw;
    }

    /*
     * New buffers only while the origin sends faster than it is read
     * (the last read filled all it was given), for the bytes of the body
     * that the buffers taken so far cannot hold: a slow origin never
     * makes a request hold all of proxy_buffers at once.
     */

    if (!ctx->read_full) {
        return n;
    }

    want = u->length - (off_t) (ctx->cur->buf->end - ctx->cur->buf->last)
           - (off_t) n * (off_t) ctx->raw_size;

    while (want > 0 && ctx->nraws <= ctx->maxraws
           && n < WEIR_HTTP_UPSTREAM_READV)
    {
        b = weir_create_temp_buf(u->request->pool, ctx->raw_size);
        if (b == NULL) {
            break;
        }

        raw = &ctx->raws[ctx->nraws++];
        raw->buf = b;
        raw->views = 0;
        more[n++] = raw;

        want -= (off_t) ctx->raw_size;
    }

    return n;
}


/* passes what was emitted to the client and frees what was sent */

static weir_int_t
weir_http_upstream_pass(weir_http_upstream_t *u)
{
    weir_int_t            rc;
    weir_chain_t        **ll;
    weir_http_request_t  *r;

    r = u->request;

    if (u->out_bufs == NULL && !r->out && !r->connection->buffered) {
        /* a protocol that writes later (HTTP/2: nghttp2's data
         * provider) has taken what it was given since the last pass:
         * the buffers it held are free again */
        weir_http_upstream_update_busy(u);
        return WEIR_OK;
    }

    rc = weir_http_output_filter(r, u->out_bufs);

    for (ll = &u->busy_bufs; *ll; ll = &(*ll)->next) { /* void */ }

    *ll = u->out_bufs;
    u->out_bufs = NULL;
    u->last_out = &u->out_bufs;

    weir_http_upstream_update_busy(u);

    return rc;
}


static void
weir_http_upstream_update_busy(weir_http_upstream_t *u)
{
    weir_buf_t                *b;
    weir_chain_t              *cl, *out, **ll;
    weir_http_upstream_raw_t  *raw;
    weir_http_upstream_ctx_t  *ctx;

    ctx = u->pipe;
    ll = &u->busy_bufs;

    while (*ll) {
        cl = *ll;
        b = cl->buf;

        if (!weir_buf_special(b) && weir_buf_size(b) != 0) {
            ll = &cl->next;
            continue;
        }

        /*
         * A buffer the writer has consumed may still be linked in its
         * queue: the HTTP/1 writer without sendfile reads a file range
         * into a buffer of its own put before it, and leaves the range's
         * link behind that until the copy is sent. Reused now, the
         * buffer would go out a second time with new data.
         */

        for (out = u->request->out; out; out = out->next) {
            if (out->buf == b) {
                break;
            }
        }

        if (out) {
            ll = &cl->next;
            continue;
        }

        if (b->shadow) {
            raw = weir_http_upstream_raw(u, b->shadow);
            if (raw && raw->views) {
                raw->views--;
            }
        }

        if (b->in_file && b->file == ctx->file && ctx->file_views) {
            ctx->file_views--;
        }

        *ll = cl->next;
        cl->next = u->free_bufs;
        u->free_bufs = cl;
    }
}


/* the client cannot take anything now: what it has waits, and its write
 * event (armed or posted) comes back to weir_http_upstream_process */

static weir_uint_t
weir_http_upstream_client_blocked(weir_http_request_t *r)
{
    weir_connection_t  *cc;

    cc = r->connection;

    return (r->out || cc->buffered)
           && (!cc->write->ready || cc->write->posted);
}


/*
 * Moves the response body: reads the origin while a buffer is free,
 * passes what is decoded, stops reading while the client is slow (its
 * write event resumes), finishes when the body ended and was passed on.
 *
 * Buffered, what is read is passed on only when the origin has nothing
 * more for now or every buffer is full (as nginx's event pipe does): the
 * client gets it in one writev() instead of one per read. Unbuffered,
 * every read is passed on at once.
 */

static void
weir_http_upstream_process(weir_http_upstream_t *u)
{
    off_t                      sent;
    size_t                     total;
    ssize_t                    n;
    weir_int_t                 rc;
    weir_err_t                 err;
    weir_buf_t                *b;
    size_t                     size;
    weir_uint_t                pass, passed, i, nb;
    struct iovec               iov[WEIR_HTTP_UPSTREAM_READV + 1];
    weir_http_upstream_raw_t  *more[WEIR_HTTP_UPSTREAM_READV];
    weir_connection_t         *c, *cc;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;
    weir_http_core_loc_conf_t *clcf;

    r = u->request;
    ctx = u->pipe;
    c = u->peer.connection;
    cc = r->connection;
    total = 0;
    sent = cc->sent;
    pass = 0;
    passed = 0;

    for ( ;; ) {
        cc->log->action = "sending to client";

        /*
         * While the client cannot take anything (its write event is armed
         * or posted and comes back here), what is read stays in
         * u->out_bufs: passing every piece would only queue it, one link
         * per read, behind what waits (each pass walks that queue);
         * kept back, consecutive pieces of the temporary file make one
         * file buffer.
         */

        if (u->body_done
            || (pass && !weir_http_upstream_client_blocked(r)))
        {
            rc = weir_http_upstream_pass(u);

            if (rc == WEIR_ERROR || cc->error) {
                cc->error = 1;
                weir_http_upstream_finalize(u, WEIR_ERROR);
                return;
            }

            passed = 1;
        }

        pass = 0;

        if (u->body_done) {
            if (ctx->sending) {
                /* the response is complete, the request is not: what is
                 * left of it is not sent */
                weir_http_upstream_stop_body(u);
            }

            if (c) {
                u->keepalive = u->proto->keepalive(u) ? 1 : 0;
                u->peer.keepalive = (u->keepalive && !u->early_response
                                     && u->request_sent && !ctx->sending);
            }

            weir_http_upstream_finalize(u, WEIR_OK);
            return;
        }

        cc->log->action = "reading upstream";

        if (ctx->origin_eof || c == NULL) {
            break;
        }

        b = weir_http_upstream_read_buf(u, 0);

        if (b == NULL) {
            if (!passed && !weir_http_upstream_client_blocked(r)) {
                /* every memory buffer is full: the client may take them
                 * (and free them) before anything goes to a file */
                pass = 1;
                continue;
            }

            b = weir_http_upstream_read_buf(u, 1);
        }

        if (b == NULL) {
            /* every buffer waits for the client */
            ctx->stopped = 1;
            break;
        }

        ctx->stopped = 0;

        if (!c->read->ready) {
            if (c->ssl == NULL || !c->ssl->ops->pending(c)) {
                break;
            }

            /* decrypted bytes wait in the TLS library: no event comes */
            c->read->ready = 1;
        }

        if (total >= WEIR_HTTP_UPSTREAM_READ_BUDGET) {
            /* the other connections first: on after the next I/O pass */
            weir_post_event(c->read, &weir_posted_next_events);
            break;
        }

        nb = 0;

        if (c->ssl == NULL && !ctx->spilling) {
            nb = weir_http_upstream_more_raws(u, more);
        }

        if (nb == 0) {
            n = c->recv(c, b->last, (size_t) (b->end - b->last));

        } else {
            iov[0].iov_base = b->last;
            iov[0].iov_len = (size_t) (b->end - b->last);

            for (i = 0; i < nb; i++) {
                iov[i + 1].iov_base = more[i]->buf->last;
                iov[i + 1].iov_len = (size_t) (more[i]->buf->end
                                               - more[i]->buf->last);
            }

            n = weir_unix_readv(c, iov, (int) nb + 1);
        }

        err = weir_socket_errno;

        if (n == WEIR_AGAIN) {
            break;
        }

        if (n == 0 || n == WEIR_ERROR) {
            ctx->origin_eof = 1;

            if (n == WEIR_ERROR) {
                weir_log_error(WEIR_LOG_ERR, cc->log, err, "recv() failed");
            }

            if (n == WEIR_ERROR
                || u->proto->input_filter(u, NULL) != WEIR_OK
                || !u->body_done)
            {
                weir_log_error(WEIR_LOG_ERR, cc->log, 0,
                               "upstream prematurely closed connection");

                /* what was read goes out, then the connection closes */
                u->peer.keepalive = 0;
                (void) weir_http_upstream_pass(u);
                r->keepalive = 0;
                weir_http_upstream_finalize(u, WEIR_ERROR);
                return;
            }

            continue;
        }

        u->cur->bytes_received += n;
        total += n;

        size = (size_t) (b->end - b->last);

        for (i = 0; i < nb; i++) {
            size += iov[i + 1].iov_len;
        }

        ctx->read_full = ((size_t) n == size);

        /* each buffer filled goes through the input filter in turn */

        for (i = 0; ; i++) {
            size = weir_min((size_t) n, (size_t) (b->end - b->last));

            b->pos = b->last;
            b->last += size;
            n -= size;

            if (u->proto->input_filter(u, b) != WEIR_OK) {
                u->peer.keepalive = 0;
                (void) weir_http_upstream_pass(u);
                r->keepalive = 0;
                weir_http_upstream_finalize(u, WEIR_ERROR);
                return;
            }

            if (n == 0 || i == nb) {
                break;
            }

            ctx->cur = more[i];
            b = more[i]->buf;
        }

        pass = !u->buffering;
        passed = 0;
    }

    /* what was read (and what waited) goes to the client before waiting */

    if (!passed && !weir_http_upstream_client_blocked(r)) {
        cc->log->action = "sending to client";

        rc = weir_http_upstream_pass(u);

        if (rc == WEIR_ERROR || cc->error) {
            cc->error = 1;
            weir_http_upstream_finalize(u, WEIR_ERROR);
            return;
        }

        cc->log->action = "reading upstream";
    }

    /* wait: for the origin (read timer), or for the client */

    if (c && !ctx->origin_eof) {
        if (ctx->stopped) {
            if (c->read->timer_set) {
                weir_event_del_timer(c->read);
            }

            if ((weir_event_flags & WEIR_USE_LEVEL_EVENT) && c->read->active)
            {
                (void) weir_del_event(c->read, WEIR_READ_EVENT, 0);
            }

        } else {
            weir_event_add_timer(c->read, u->conf->read_timeout);

            if (weir_handle_read_event(c->read, 0) != WEIR_OK) {
                weir_http_upstream_finalize(u, WEIR_ERROR);
                return;
            }
        }
    }

    if (r->out || cc->buffered) {
        clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

        /* send_timeout bounds the time between two writes: progress
         * re-arms it */
        if (!cc->write->timer_set || cc->sent != sent) {
            weir_event_add_timer(cc->write, clcf->send_timeout);
        }

    } else if (cc->write->timer_set) {
        weir_event_del_timer(cc->write);
    }
}


/* ---- the Upgrade tunnel ----------------------------------------------- */

static void
weir_http_upstream_start_tunnel(weir_http_upstream_t *u)
{
    size_t                     size;
    weir_int_t                 rc;
    weir_str_t                 preread;
    weir_connection_t         *cc;
    weir_http_request_t       *r;
    weir_http_upstream_ctx_t  *ctx;

    r = u->request;
    ctx = u->pipe;
    cc = r->connection;

    /* the client end is the protocol's (r->proto->tunnel) */
    if (r != r->main || r->proto == NULL || r->proto->tunnel == NULL
        || r->proto->tunnel->start(r, &preread) != WEIR_OK)
    {
        weir_log_error(WEIR_LOG_ERR, cc->log, 0,
                       "upstream switched protocols for a client that "
                       "cannot follow");
        u->peer.keepalive = 0;
        weir_http_upstream_finalize(u, WEIR_HTTP_BAD_GATEWAY);
        return;
    }

    if (ctx->sending) {
        weir_http_upstream_stop_body(u);
    }

    u->upgrade = 1;
    u->peer.keepalive = 0;
    r->keepalive = 0;
    r->lingering_close = 0;

    if (u->process_header) {
        rc = u->process_header(r);

        if (rc != WEIR_OK) {
            weir_http_upstream_finalize(u, rc >= WEIR_HTTP_SPECIAL_RESPONSE
                                           ? rc
                                           : WEIR_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }
    }

    r->headers_out.status = WEIR_HTTP_SWITCHING_PROTOCOLS;
    r->headers_out.content_length_n = -1;
    r->header_only = 1;

    cc->log->action = "sending to client";

    rc = weir_http_send_header(r);

    u->header_sent = r->header_sent;

    if (rc == WEIR_ERROR || rc > WEIR_OK) {
        weir_http_upstream_finalize(u, r->header_sent ? WEIR_ERROR : rc);
        return;
    }

    size = u->conf->buffer_size;

    ctx->down = weir_create_temp_buf(r->pool, size);

    if (preread.len > size) {
        size = preread.len;
    }

    ctx->up = weir_create_temp_buf(r->pool, size);

    if (ctx->up == NULL || ctx->down == NULL) {
        weir_http_upstream_finalize(u, WEIR_ERROR);
        return;
    }

    /* what the origin sent after its 101 goes to the client first; what
     * the client sent after its request head goes to the origin */
    ctx->down->last = weir_cpymem(ctx->down->last, u->buffer.pos,
                                  (size_t) (u->buffer.last - u->buffer.pos));
    u->buffer.pos = u->buffer.last;

    if (preread.len) {
        ctx->up->last = weir_cpymem(ctx->up->last, preread.data,
                                    preread.len);
    }

    ctx->tunnel = 1;

    if (cc->read->timer_set) {
        weir_event_del_timer(cc->read);
    }

    r->read_event_handler = weir_http_upstream_tunnel;
    r->write_event_handler = weir_http_upstream_tunnel;

    weir_http_upstream_tunnel(r);
}


/*
 * The two ends of a tunnel: the origin connection, whose I/O is its own,
 * and the client's, through its protocol (r set: r->proto->tunnel);
 * both signal readiness with c's events.
 */

static ssize_t
weir_http_upstream_end_recv(weir_http_upstream_end_t *e, unsigned char *buf,
    size_t size)
{
    if (e->r) {
        return e->r->proto->tunnel->recv(e->r, buf, size);
    }

    return e->c->recv(e->c, buf, size);
}


static ssize_t
weir_http_upstream_end_send(weir_http_upstream_end_t *e, unsigned char *buf,
    size_t size)
{
    if (e->r) {
        return e->r->proto->tunnel->send(e->r, buf, size);
    }

    return e->c->send(e->c, buf, size);
}


static weir_int_t
weir_http_upstream_end_half_close(weir_http_upstream_end_t *e)
{
    if (e->r) {
        return e->r->proto->tunnel->half_close(e->r);
    }

    return weir_connection_half_close(e->c);
}


static weir_uint_t
weir_http_upstream_end_pending(weir_http_upstream_end_t *e)
{
    if (e->r) {
        return e->r->proto->tunnel->pending
               && e->r->proto->tunnel->pending(e->r);
    }

    return e->c->ssl && e->c->ssl->ops->pending(e->c);
}


/* src -> b -> dst; WEIR_OK or WEIR_ERROR (a connection broke) */

static weir_int_t
weir_http_upstream_tunnel_move(weir_http_upstream_end_t *src,
    weir_http_upstream_end_t *dst, weir_buf_t *b, unsigned *eof,
    unsigned *shut)
{
    ssize_t  n;

    for ( ;; ) {
        if (b->pos < b->last && dst->c->write->ready) {
            n = weir_http_upstream_end_send(dst, b->pos,
                                            (size_t) (b->last - b->pos));

            if (n == WEIR_ERROR) {
                return WEIR_ERROR;
            }

            if (n > 0) {
                b->pos += n;
            }
        }

        if (b->pos == b->last) {
            b->pos = b->start;
            b->last = b->start;
        }

        if (*eof && b->pos == b->last) {

            /* the end of one direction, passed on as such: under TLS a
             * close_notify, then the FIN (a close_notify waiting for
             * room is sent again from dst's write event); a failure is
             * the end of this direction as before, the other goes on */

            if (!*shut
                && weir_http_upstream_end_half_close(dst) != WEIR_AGAIN)
            {
                *shut = 1;
            }

            return WEIR_OK;
        }

        if (!src->c->read->ready && weir_http_upstream_end_pending(src)) {
            /* decrypted bytes wait in the TLS library: no event comes */
            src->c->read->ready = 1;
        }

        if (*eof || b->last == b->end || !src->c->read->ready) {
            return WEIR_OK;
        }

        n = weir_http_upstream_end_recv(src, b->last,
                                        (size_t) (b->end - b->last));

        if (n == WEIR_AGAIN) {
            if (b->pos == b->last || !dst->c->write->ready) {
                return WEIR_OK;
            }

            continue;
        }

        if (n == WEIR_ERROR) {
            return WEIR_ERROR;
        }

        if (n == 0) {
            *eof = 1;
            continue;
        }

        b->last += n;
    }
}


static void
weir_http_upstream_tunnel(weir_http_request_t *r)
{
    off_t                      sent;
    unsigned                   active;
    size_t                     pend;
    weir_int_t                 rc;
    weir_connection_t         *c, *cc;
    weir_http_upstream_t      *u;
    weir_http_upstream_end_t   origin, client;
    weir_http_upstream_ctx_t  *ctx;

    u = r->upstream;
    ctx = u->pipe;
    c = u->peer.connection;
    cc = r->connection;

    origin.c = c;
    origin.r = NULL;
    client.c = cc;
    client.r = r;

    if (ctx->finalized) {
        return;
    }

    cc->log->action = "proxying upgraded connection";

    if (c->read->timedout || c->write->timedout || cc->read->timedout
        || cc->write->timedout)
    {
        weir_log_error(WEIR_LOG_INFO, cc->log, WEIR_ETIMEDOUT,
                       "upgraded connection timed out");
        r->keepalive = 0;
        weir_http_upstream_finalize(u, WEIR_OK);
        return;
    }

    /* the 101 head may still be queued for the client */
    if (r->out || cc->buffered) {
        rc = weir_http_output_filter(r, NULL);

        if (rc == WEIR_ERROR) {
            weir_http_upstream_finalize(u, WEIR_ERROR);
            return;
        }
    }

    pend = ctx->up->last - ctx->up->pos + ctx->down->last - ctx->down->pos;
    sent = c->sent + cc->sent;

    if (!r->out && !cc->buffered) {
        if (weir_http_upstream_tunnel_move(&origin, &client, ctx->down,
                                           &ctx->down_eof, &ctx->down_shut)
            != WEIR_OK)
        {
            r->keepalive = 0;
            weir_http_upstream_finalize(u, WEIR_OK);
            return;
        }
    }

    if (weir_http_upstream_tunnel_move(&client, &origin, ctx->up,
                                       &ctx->up_eof, &ctx->up_shut)
        != WEIR_OK)
    {
        r->keepalive = 0;
        weir_http_upstream_finalize(u, WEIR_OK);
        return;
    }

    if (ctx->up_shut && ctx->down_shut) {
        r->keepalive = 0;
        weir_http_upstream_finalize(u, WEIR_OK);
        return;
    }

    /* bytes moved (read and written at once leave pend as it was) */
    active = (pend != (size_t) (ctx->up->last - ctx->up->pos
                                + ctx->down->last - ctx->down->pos))
             || sent != c->sent + cc->sent
             || c->read->ready || cc->read->ready;

    /* one idle timer for both directions */
    if (active || !c->read->timer_set) {
        weir_event_add_timer(c->read, u->conf->read_timeout);
    }

    if (weir_handle_read_event(c->read, 0) != WEIR_OK
        || weir_handle_read_event(cc->read, 0) != WEIR_OK
        || weir_handle_write_event(c->write, 0) != WEIR_OK
        || weir_handle_write_event(cc->write, 0) != WEIR_OK)
    {
        weir_http_upstream_finalize(u, WEIR_ERROR);
    }
}


/* ---- variables -------------------------------------------------------- */

typedef enum {
    WEIR_HTTP_UPSTREAM_VAR_ADDR = 0,
    WEIR_HTTP_UPSTREAM_VAR_STATUS,
    WEIR_HTTP_UPSTREAM_VAR_RESPONSE_TIME,
    WEIR_HTTP_UPSTREAM_VAR_CONNECT_TIME,
    WEIR_HTTP_UPSTREAM_VAR_HEADER_TIME,
    WEIR_HTTP_UPSTREAM_VAR_BYTES_RECEIVED,
    WEIR_HTTP_UPSTREAM_VAR_BYTES_SENT,
    WEIR_HTTP_UPSTREAM_VAR_RESPONSE_LENGTH
} weir_http_upstream_var_e;


static weir_int_t
weir_http_upstream_state_variable(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    size_t                        len;
    weir_uint_t                   i;
    weir_msec_t                   ms;
    unsigned char                *p, *last;
    weir_http_upstream_state_t   *st;

    if (r->upstream == NULL || r->upstream->state == NULL
        || r->upstream->state->nelts == 0)
    {
        v->not_found = 1;
        return WEIR_OK;
    }

    st = r->upstream->state->elts;
    len = 0;

    for (i = 0; i < r->upstream->state->nelts; i++) {
        len += (st[i].peer ? st[i].peer->len : 1) + 2 + WEIR_INT_T_LEN + 8;
    }

    p = weir_pnalloc(r->pool, len);
    if (p == NULL) {
        return WEIR_ERROR;
    }

    v->data = p;
    last = p + len;

    for (i = 0; i < r->upstream->state->nelts; i++) {
        if (i) {
            p = weir_slprintf(p, last, ", ");
        }

        switch (data) {

        case WEIR_HTTP_UPSTREAM_VAR_ADDR:
            if (st[i].peer) {
                p = weir_slprintf(p, last, "%.*s", WEIR_STR_ARG(*st[i].peer));
            } else {
                p = weir_slprintf(p, last, "-");
            }
            break;

        case WEIR_HTTP_UPSTREAM_VAR_STATUS:
            if (st[i].status) {
                p = weir_slprintf(p, last, "%lu",
                                  (unsigned long) st[i].status);
            } else {
                p = weir_slprintf(p, last, "-");
            }
            break;

        case WEIR_HTTP_UPSTREAM_VAR_RESPONSE_TIME:
        case WEIR_HTTP_UPSTREAM_VAR_CONNECT_TIME:
        case WEIR_HTTP_UPSTREAM_VAR_HEADER_TIME:
            ms = (data == WEIR_HTTP_UPSTREAM_VAR_RESPONSE_TIME)
                 ? st[i].response_time
                 : (data == WEIR_HTTP_UPSTREAM_VAR_CONNECT_TIME)
                   ? st[i].connect_time : st[i].header_time;

            if (data == WEIR_HTTP_UPSTREAM_VAR_RESPONSE_TIME
                && ms == (weir_msec_t) -1 && i + 1 == r->upstream->state->nelts)
            {
                /* still running (a log line written before the end) */
                ms = weir_current_msec - r->upstream->start_time;
            }

            if (ms == (weir_msec_t) -1) {
                p = weir_slprintf(p, last, "-");
            } else {
                p = weir_slprintf(p, last, "%lu.%03lu",
                                  (unsigned long) (ms / 1000),
                                  (unsigned long) (ms % 1000));
            }
            break;

        case WEIR_HTTP_UPSTREAM_VAR_BYTES_RECEIVED:
            p = weir_slprintf(p, last, "%lld",
                              (long long) st[i].bytes_received);
            break;

        case WEIR_HTTP_UPSTREAM_VAR_BYTES_SENT:
            p = weir_slprintf(p, last, "%lld", (long long) st[i].bytes_sent);
            break;

        default: /* WEIR_HTTP_UPSTREAM_VAR_RESPONSE_LENGTH */
            if (st[i].response_length >= 0) {
                p = weir_slprintf(p, last, "%lld",
                                  (long long) st[i].response_length);
            } else {
                p = weir_slprintf(p, last, "-");
            }
            break;
        }
    }

    v->len = p - v->data;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return WEIR_OK;
}


/* "upstream_http_x_foo" / "upstream_trailer_x_foo": the origin's header
 * named x-foo (case-insensitive, '_' matches '-'), joined with ", " */

static weir_int_t
weir_http_upstream_header_variable(weir_http_request_t *r,
    weir_http_variable_value_t *v, weir_list_t *list, weir_str_t *name)
{
    size_t               len;
    weir_uint_t          i, j, n;
    unsigned char        ch, *p;
    weir_list_part_t    *part;
    weir_http_header_t  *h;

    len = 0;
    n = 0;

    for (part = &list->part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (h[i].hash == 0 || h[i].key.len != name->len) {
                continue;
            }

            for (j = 0; j < name->len; j++) {
                ch = weir_tolower(h[i].key.data[j]);

                if (ch == '-') {
                    ch = '_';
                }

                if (ch != weir_tolower(name->data[j])) {
                    break;
                }
            }

            if (j == name->len) {
                len += h[i].value.len + 2;
                n++;
            }
        }
    }

    if (n == 0) {
        v->not_found = 1;
        return WEIR_OK;
    }

    p = weir_pnalloc(r->pool, len);
    if (p == NULL) {
        return WEIR_ERROR;
    }

    v->data = p;

    for (part = &list->part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (h[i].hash == 0 || h[i].key.len != name->len) {
                continue;
            }

            for (j = 0; j < name->len; j++) {
                ch = weir_tolower(h[i].key.data[j]);

                if (ch == '-') {
                    ch = '_';
                }

                if (ch != weir_tolower(name->data[j])) {
                    break;
                }
            }

            if (j < name->len) {
                continue;
            }

            if (p != v->data) {
                *p++ = ','; *p++ = ' ';
            }

            p = weir_cpymem(p, h[i].value.data, h[i].value.len);
        }
    }

    v->len = p - v->data;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return WEIR_OK;
}


/* $upstream_http_NAME and $upstream_trailer_NAME: a prefix variable's
 * data starts with its full name, and the prefix says which list */

static weir_int_t
weir_http_upstream_field_variable(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data)
{
    size_t        prefix;
    weir_str_t    name, *full;
    weir_list_t  *fields;

    full = (weir_str_t *) data;

    if (r->upstream == NULL) {
        v->not_found = 1;
        return WEIR_OK;
    }

    if (full->data[sizeof("upstream_") - 1] == 'h') {
        prefix = sizeof("upstream_http_") - 1;
        fields = &r->upstream->headers_in.headers;

    } else {
        prefix = sizeof("upstream_trailer_") - 1;
        fields = &r->upstream->headers_in.trailers;
    }

    if (fields->part.elts == NULL) {
        v->not_found = 1;
        return WEIR_OK;
    }

    name.len = full->len - prefix;
    name.data = full->data + prefix;

    return weir_http_upstream_header_variable(r, v, fields, &name);
}


static struct {
    weir_str_t                   name;
    weir_http_get_variable_pt    handler;
    uintptr_t                    data;
    weir_uint_t                  flags;
} weir_http_upstream_vars[] = {
    { weir_string("upstream_addr"), weir_http_upstream_state_variable,
      WEIR_HTTP_UPSTREAM_VAR_ADDR, WEIR_HTTP_VAR_NOCACHEABLE },
    { weir_string("upstream_status"), weir_http_upstream_state_variable,
      WEIR_HTTP_UPSTREAM_VAR_STATUS, WEIR_HTTP_VAR_NOCACHEABLE },
    { weir_string("upstream_response_time"),
      weir_http_upstream_state_variable,
      WEIR_HTTP_UPSTREAM_VAR_RESPONSE_TIME, WEIR_HTTP_VAR_NOCACHEABLE },
    { weir_string("upstream_connect_time"),
      weir_http_upstream_state_variable,
      WEIR_HTTP_UPSTREAM_VAR_CONNECT_TIME, WEIR_HTTP_VAR_NOCACHEABLE },
    { weir_string("upstream_header_time"),
      weir_http_upstream_state_variable,
      WEIR_HTTP_UPSTREAM_VAR_HEADER_TIME, WEIR_HTTP_VAR_NOCACHEABLE },
    { weir_string("upstream_bytes_received"),
      weir_http_upstream_state_variable,
      WEIR_HTTP_UPSTREAM_VAR_BYTES_RECEIVED, WEIR_HTTP_VAR_NOCACHEABLE },
    { weir_string("upstream_bytes_sent"),
      weir_http_upstream_state_variable,
      WEIR_HTTP_UPSTREAM_VAR_BYTES_SENT, WEIR_HTTP_VAR_NOCACHEABLE },
    { weir_string("upstream_response_length"),
      weir_http_upstream_state_variable,
      WEIR_HTTP_UPSTREAM_VAR_RESPONSE_LENGTH, WEIR_HTTP_VAR_NOCACHEABLE },
    { weir_string("upstream_http_"), weir_http_upstream_field_variable, 0,
      WEIR_HTTP_VAR_PREFIX | WEIR_HTTP_VAR_NOCACHEABLE },
    { weir_string("upstream_trailer_"), weir_http_upstream_field_variable,
      0, WEIR_HTTP_VAR_PREFIX | WEIR_HTTP_VAR_NOCACHEABLE },
    { weir_null_string, NULL, 0, 0 }
};


weir_int_t
weir_http_upstream_add_variables(weir_conf_t *cf)
{
    weir_uint_t            i;
    weir_http_variable_t  *var;

    for (i = 0; weir_http_upstream_vars[i].name.len; i++) {
        var = weir_http_add_variable(cf, &weir_http_upstream_vars[i].name,
                                     weir_http_upstream_vars[i].flags);
        if (var == NULL) {
            return WEIR_ERROR;
        }

        var->get_handler = weir_http_upstream_vars[i].handler;

        if (!(weir_http_upstream_vars[i].flags & WEIR_HTTP_VAR_PREFIX)) {
            var->data = weir_http_upstream_vars[i].data;
        }
    }

    return WEIR_OK;
}
