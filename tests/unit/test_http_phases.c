#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"
#include "weir_unit.h"

/*
 * The phase engine and the filter chains built from hand-made module
 * descriptors, the checkers run over a fake request, location lookup in a
 * hand-built tree, and the small request helpers (paths, types, ETags).
 * Nothing here reaches weir_http_finalize_request(): the fake request
 * has no real connection; what finalizes is tested end to end in
 * tests/integration/test_http_phases.py.
 */


#define WEIR_TEST_MAX_CALLS  16

static const char  *weir_test_calls[WEIR_TEST_MAX_CALLS];
static weir_uint_t  weir_test_ncalls;


static void
weir_test_call(const char *name)
{
    if (weir_test_ncalls < WEIR_TEST_MAX_CALLS) {
        weir_test_calls[weir_test_ncalls++] = name;
    }
}


static weir_int_t
weir_test_declined(weir_http_request_t *r)
{
    (void) r;
    weir_test_call("declined");
    return WEIR_DECLINED;
}


static weir_int_t
weir_test_ok(weir_http_request_t *r)
{
    (void) r;
    weir_test_call("ok");
    return WEIR_OK;
}


static weir_int_t
weir_test_never(weir_http_request_t *r)
{
    (void) r;
    weir_test_call("never");
    return WEIR_OK;
}


static weir_int_t
weir_test_done(weir_http_request_t *r)
{
    (void) r;
    weir_test_call("done");
    return WEIR_DONE;
}


/* two fake HTTP modules with phase handlers */

static weir_http_phase_decl_t  weir_test_a_phases[] = {
    { WEIR_HTTP_REWRITE_PHASE, 20, "a_rw", weir_test_declined },
    { WEIR_HTTP_CONTENT_PHASE, 10, "a_c", weir_test_declined },
    { WEIR_HTTP_LOG_PHASE, 0, "a_log", weir_test_ok },
    { 0, 0, NULL, NULL }
};

static weir_http_phase_decl_t  weir_test_b_phases[] = {
    { WEIR_HTTP_REWRITE_PHASE, 10, "b_rw", weir_test_declined },
    { WEIR_HTTP_REWRITE_PHASE, 20, "b_rw2", weir_test_declined },
    { WEIR_HTTP_ACCESS_PHASE, 5, "b_acc", weir_test_declined },
    { WEIR_HTTP_CONTENT_PHASE, WEIR_HTTP_FILTER_BOTTOM, "b_c",
      weir_test_declined },
    { 0, 0, NULL, NULL }
};


/* filters that record their name and call the next one */

static weir_http_header_filter_pt  weir_test_next_hx;
static weir_http_header_filter_pt  weir_test_next_hy;
static weir_http_header_filter_pt  weir_test_next_hz;
static weir_http_body_filter_pt    weir_test_next_bx;


static weir_int_t
weir_test_hx(weir_http_request_t *r)
{
    weir_test_call("hx");
    return weir_test_next_hx(r);
}


static weir_int_t
weir_test_hy(weir_http_request_t *r)
{
    weir_test_call("hy");
    return weir_test_next_hy(r);
}


static weir_int_t
weir_test_hz(weir_http_request_t *r)
{
    weir_test_call("hz");
    return weir_test_next_hz(r);
}


static weir_int_t
weir_test_bx(weir_http_request_t *r, weir_chain_t *in)
{
    weir_test_call("bx");
    return weir_test_next_bx(r, in);
}


static weir_http_header_filter_decl_t  weir_test_a_header_filters[] = {
    { "hx", 200, weir_test_hx, &weir_test_next_hx },
    { NULL, 0, NULL, NULL }
};

static weir_http_header_filter_decl_t  weir_test_b_header_filters[] = {
    { "hy", 100, weir_test_hy, &weir_test_next_hy },
    { "hz", 200, weir_test_hz, &weir_test_next_hz },
    { NULL, 0, NULL, NULL }
};

static weir_http_body_filter_decl_t  weir_test_b_body_filters[] = {
    { "bx", 50, weir_test_bx, &weir_test_next_bx },
    { NULL, 0, NULL, NULL }
};


static weir_http_module_t  weir_test_a_ctx = {
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    weir_test_a_phases, weir_test_a_header_filters, NULL, NULL
};

static weir_http_module_t  weir_test_b_ctx = {
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    weir_test_b_phases, weir_test_b_header_filters,
    weir_test_b_body_filters, NULL
};

static weir_module_t  weir_test_a_module = {
    WEIR_MODULE_V1,
    &weir_test_a_ctx,
    NULL,
    WEIR_HTTP_MODULE,
    NULL, NULL, NULL, NULL, NULL,
    WEIR_MODULE_V1_PADDING
};

static weir_module_t  weir_test_b_module = {
    WEIR_MODULE_V1,
    &weir_test_b_ctx,
    NULL,
    WEIR_HTTP_MODULE,
    NULL, NULL, NULL, NULL, NULL,
    WEIR_MODULE_V1_PADDING
};


static weir_int_t
weir_test_send_header(weir_http_request_t *r)
{
    (void) r;
    weir_test_call("proto_header");
    return WEIR_OK;
}


static weir_int_t
weir_test_send_body(weir_http_request_t *r, weir_chain_t *in)
{
    (void) r;
    (void) in;
    weir_test_call("proto_body");
    return WEIR_ERROR;
}


/* designated: the hooks this test does not need stay NULL as the table
 * grows */
static weir_http_proto_t  weir_test_proto = {
    .name = "test",
    .send_header = weir_test_send_header,
    .send_body = weir_test_send_body
};


static void
weir_test_conf(weir_conf_t *cf, weir_cycle_t *cycle, weir_module_t **mods,
    weir_uint_t n)
{
    weir_memzero(cycle, sizeof(weir_cycle_t));
    weir_memzero(cf, sizeof(weir_conf_t));

    cycle->modules = mods;
    cycle->modules_n = n;
    cycle->pool = weir_unit_pool();
    cycle->log = weir_unit_log();

    cf->cycle = cycle;
    cf->pool = cycle->pool;
    cf->temp_pool = cycle->pool;
    cf->log = cycle->log;
}


WEIR_UNIT_TEST(http_phase_sort)
{
    weir_uint_t              n;
    weir_module_t           *mods[3];
    weir_http_phase_decl_t  *d;

    mods[0] = &weir_test_a_module;
    mods[1] = NULL;
    mods[2] = &weir_test_b_module;

    d = weir_http_sort_phase_decls(mods, 3, &n);
    WEIR_REQUIRE(d != NULL);
    WEIR_REQUIRE(n == 11);

    WEIR_CHECK_STR(d[0].name, "core");
    WEIR_CHECK_INT(d[0].phase, WEIR_HTTP_FIND_CONFIG_PHASE);
    WEIR_CHECK_STR(d[1].name, "b_rw");
    /* equal orders keep the module order: a before b */
    WEIR_CHECK_STR(d[2].name, "a_rw");
    WEIR_CHECK_STR(d[3].name, "b_rw2");
    WEIR_CHECK_INT(d[4].phase, WEIR_HTTP_POST_REWRITE_PHASE);
    WEIR_CHECK_STR(d[5].name, "b_acc");
    WEIR_CHECK_INT(d[6].phase, WEIR_HTTP_POST_ACCESS_PHASE);
    WEIR_CHECK_STR(d[7].name, "a_c");
    WEIR_CHECK_STR(d[8].name, "b_c");
    /* the core content step is last even against an equal order */
    WEIR_CHECK_STR(d[9].name, "core");
    WEIR_CHECK_INT(d[9].phase, WEIR_HTTP_CONTENT_PHASE);
    WEIR_CHECK(d[9].handler == NULL);
    WEIR_CHECK_STR(d[10].name, "a_log");

    free(d);
}


WEIR_UNIT_TEST(http_phase_engine)
{
    weir_uint_t                  i;
    weir_conf_t                  cf;
    weir_cycle_t                 cycle;
    weir_module_t               *mods[2];
    weir_http_phase_handler_t   *ph;
    weir_http_core_main_conf_t   cmcf;
    static const weir_uint_t     next[] = { 1, 4, 4, 4, 0, 6, 7, 10, 10, 10 };

    mods[0] = &weir_test_a_module;
    mods[1] = &weir_test_b_module;

    weir_test_conf(&cf, &cycle, mods, 2);
    weir_memzero(&cmcf, sizeof(cmcf));

    WEIR_REQUIRE(weir_http_init_phase_engine(&cf, &cmcf) == WEIR_OK);

    ph = cmcf.phase_engine.handlers;

    for (i = 0; i < 10; i++) {
        WEIR_CHECK(ph[i].checker != NULL);
        WEIR_CHECK_INT(ph[i].next, next[i]);
    }

    WEIR_CHECK(ph[10].checker == NULL);

    WEIR_CHECK(ph[0].checker == weir_http_core_find_config_phase);
    WEIR_CHECK(ph[1].checker == weir_http_core_rewrite_phase);
    WEIR_CHECK(ph[4].checker == weir_http_core_post_rewrite_phase);
    WEIR_CHECK(ph[5].checker == weir_http_core_access_phase);
    WEIR_CHECK(ph[6].checker == weir_http_core_post_access_phase);
    WEIR_CHECK(ph[7].checker == weir_http_core_content_phase);
    WEIR_CHECK(ph[9].checker == weir_http_core_content_phase);
    WEIR_CHECK(ph[9].handler == NULL);

    /* no post-read or server-rewrite handlers: both start at find-config */
    WEIR_CHECK_INT(cmcf.phase_engine.server_rewrite_index, 0);
    WEIR_CHECK_INT(cmcf.phase_engine.location_rewrite_index, 1);

    WEIR_CHECK_INT(cmcf.phase_engine.nlog_handlers, 1);
    WEIR_CHECK(cmcf.phase_engine.log_handlers[0] == weir_test_ok);
}


WEIR_UNIT_TEST(http_phase_engine_rejects_core_phase)
{
    weir_conf_t              cf;
    weir_cycle_t             cycle;
    weir_module_t           *mods[1];
    weir_http_module_t       ctx;
    weir_module_t            module;
    weir_http_core_main_conf_t  cmcf;
    weir_http_phase_decl_t   phases[] = {
        { WEIR_HTTP_FIND_CONFIG_PHASE, 1, "bad", weir_test_ok },
        { 0, 0, NULL, NULL }
    };

    weir_memzero(&ctx, sizeof(ctx));
    ctx.phases = phases;
    module = weir_test_a_module;
    module.ctx = &ctx;
    mods[0] = &module;

    weir_test_conf(&cf, &cycle, mods, 1);
    weir_memzero(&cmcf, sizeof(cmcf));

    WEIR_CHECK_INT(weir_http_init_phase_engine(&cf, &cmcf), WEIR_ERROR);
    WEIR_CHECK(weir_unit_log_has("phase handler \"bad\" cannot be added "
                                 "to the \"find_config\" phase"));
}


/* a request that can run the engine: main_conf[ctx_index] is cmcf */
typedef struct {
    weir_http_request_t          r;
    weir_connection_t            c;
    weir_log_t                   log;
    void                        *main_conf[1];
    void                        *loc_conf[1];
    void                        *srv_conf[1];
    weir_http_core_loc_conf_t    clcf;
    weir_http_core_srv_conf_t    cscf;
    weir_http_conf_ctx_t         ctx;
    weir_uint_t                  saved_index;
} weir_test_req_t;


static void
weir_test_req_init(weir_test_req_t *t, weir_http_core_main_conf_t *cmcf)
{
    weir_memzero(t, sizeof(weir_test_req_t));

    t->saved_index = weir_http_core_module.ctx_index;
    weir_http_core_module.ctx_index = 0;

    t->log = *weir_unit_log();
    t->c.log = &t->log;
    t->c.pool = weir_unit_pool();

    t->main_conf[0] = cmcf;
    t->loc_conf[0] = &t->clcf;
    t->clcf.loc_conf = t->loc_conf;
    t->ctx.loc_conf = t->loc_conf;
    t->ctx.srv_conf = t->srv_conf;
    t->ctx.main_conf = t->main_conf;
    t->cscf.ctx = &t->ctx;
    t->srv_conf[0] = &t->cscf;

    t->r.connection = &t->c;
    t->r.pool = t->c.pool;
    t->r.main = &t->r;
    t->r.main_conf = t->main_conf;
    t->r.loc_conf = t->loc_conf;
    t->r.srv_conf = t->srv_conf;
    t->r.proto = &weir_test_proto;
    t->r.headers_out.content_length_n = -1;
    t->r.headers_in.content_length_n = -1;

    (void) weir_list_init(&t->r.headers_out.headers, t->r.pool, 4,
                          sizeof(weir_http_header_t));
}


static void
weir_test_req_done(weir_test_req_t *t)
{
    weir_http_core_module.ctx_index = t->saved_index;
}


WEIR_UNIT_TEST(http_phase_run)
{
    weir_test_req_t              t;
    weir_http_core_main_conf_t   cmcf;
    weir_http_phase_handler_t    ph[6];

    weir_memzero(&cmcf, sizeof(cmcf));
    weir_memzero(ph, sizeof(ph));

    /* post-read: declined, ok (skips "never"); rewrite: declined;
     * preaccess: done (stops) */
    ph[0].checker = weir_http_core_generic_phase;
    ph[0].handler = weir_test_declined;
    ph[0].next = 3;
    ph[1].checker = weir_http_core_generic_phase;
    ph[1].handler = weir_test_ok;
    ph[1].next = 3;
    ph[2].checker = weir_http_core_generic_phase;
    ph[2].handler = weir_test_never;
    ph[2].next = 3;
    ph[3].checker = weir_http_core_rewrite_phase;
    ph[3].handler = weir_test_declined;
    ph[3].next = 4;
    ph[4].checker = weir_http_core_generic_phase;
    ph[4].handler = weir_test_done;
    ph[4].next = 5;

    cmcf.phase_engine.handlers = ph;

    weir_test_req_init(&t, &cmcf);
    weir_test_ncalls = 0;

    weir_http_core_run_phases(&t.r);

    WEIR_CHECK_INT(weir_test_ncalls, 4);
    WEIR_CHECK_STR(weir_test_calls[0], "declined");
    WEIR_CHECK_STR(weir_test_calls[1], "ok");
    WEIR_CHECK_STR(weir_test_calls[2], "declined");
    WEIR_CHECK_STR(weir_test_calls[3], "done");
    /* stopped on the asynchronous step, to be resumed there */
    WEIR_CHECK_INT(t.r.phase_handler, 4);

    weir_test_req_done(&t);
}


static void
weir_test_location_config(weir_http_request_t *r)
{
    (void) r;
    weir_test_call("proto_location");
}


/*
 * A location change leaves the transport to the protocol: the engine
 * neither turns sendfile or tcp_nodelay on nor refuses keep-alive for a
 * keepalive_timeout of 0 (HTTP/1 does, in its hook); a stream of a
 * multiplexed connection must not have its parent's socket touched.
 */

WEIR_UNIT_TEST(http_location_config_is_the_protocols)
{
    weir_test_req_t              t;
    weir_http_proto_t            proto;
    weir_http_core_main_conf_t   cmcf;

    weir_memzero(&cmcf, sizeof(cmcf));
    weir_test_req_init(&t, &cmcf);

    proto = weir_test_proto;
    proto.location_config = weir_test_location_config;
    t.r.proto = &proto;

    t.c.fd = -1;
    t.clcf.sendfile = 1;
    t.clcf.tcp_nodelay = 1;
    t.clcf.keepalive_timeout = 0;
    t.r.keepalive = 1;

    weir_test_ncalls = 0;
    weir_http_update_location_config(&t.r);

    WEIR_CHECK_INT(weir_test_ncalls, 1);
    WEIR_CHECK_STR(weir_test_calls[0], "proto_location");
    WEIR_CHECK_INT(t.c.sendfile, 0);
    WEIR_CHECK_INT(t.c.tcp_nodelay, WEIR_TCP_NODELAY_UNSET);
    WEIR_CHECK_INT(t.r.keepalive, 1);

    /* and a protocol without the hook is fine */
    t.r.proto = &weir_test_proto;
    weir_test_ncalls = 0;
    weir_http_update_location_config(&t.r);
    WEIR_CHECK_INT(weir_test_ncalls, 0);
    WEIR_CHECK_INT(t.c.sendfile, 0);

    weir_test_req_done(&t);
}


/*
 * client_max_body_size is checked where any protocol hands its decoded
 * body to the filters, whatever the framing said in advance (nothing,
 * for a chunked HTTP/1 body or HTTP/2 DATA without content-length).
 */

WEIR_UNIT_TEST(http_body_limit_is_neutral)
{
    weir_buf_t                   b1, b2;
    weir_chain_t                 cl1, cl2;
    weir_test_req_t              t;
    weir_http_request_body_t     rb;
    weir_http_core_main_conf_t   cmcf;
    unsigned char                data[6] = "abcdef";

    weir_memzero(&cmcf, sizeof(cmcf));
    weir_test_req_init(&t, &cmcf);

    weir_memzero(&rb, sizeof(rb));
    rb.rest = -1;
    t.r.request_body = &rb;
    t.clcf.client_max_body_size = 10;

    weir_memzero(&b1, sizeof(b1));
    b1.pos = data;
    b1.last = data + sizeof(data);
    b1.temporary = 1;
    cl1.buf = &b1;
    cl1.next = NULL;

    WEIR_CHECK_INT(weir_http_request_body_filter(&t.r, &cl1), WEIR_OK);
    WEIR_CHECK_INT(rb.passed, 6);
    WEIR_CHECK(rb.bufs != NULL);

    b2 = b1;
    cl2.buf = &b2;
    cl2.next = NULL;

    WEIR_CHECK_INT(weir_http_request_body_filter(&t.r, &cl2),
                   WEIR_HTTP_REQUEST_ENTITY_TOO_LARGE);

    /* a protocol without a streamed reader: nothing more to read */
    WEIR_CHECK_INT(weir_http_read_unbuffered_request_body(&t.r), WEIR_OK);

    weir_test_req_done(&t);
}


WEIR_UNIT_TEST(http_phase_post_rewrite)
{
    weir_test_req_t              t;
    weir_http_core_main_conf_t   cmcf;
    weir_http_phase_handler_t    ph;

    weir_memzero(&cmcf, sizeof(cmcf));
    weir_memzero(&ph, sizeof(ph));
    ph.next = 2;

    weir_test_req_init(&t, &cmcf);

    t.r.phase_handler = 7;
    WEIR_CHECK_INT(weir_http_core_post_rewrite_phase(&t.r, &ph), WEIR_AGAIN);
    WEIR_CHECK_INT(t.r.phase_handler, 8);

    /* a changed URI: back to find-config, from the server's locations */
    t.r.uri_changed = 1;
    t.r.uri_changes = 3;
    t.r.loc_conf = NULL;
    WEIR_CHECK_INT(weir_http_core_post_rewrite_phase(&t.r, &ph), WEIR_AGAIN);
    WEIR_CHECK_INT(t.r.phase_handler, 2);
    WEIR_CHECK_INT(t.r.uri_changes, 2);
    WEIR_CHECK(t.r.loc_conf == t.loc_conf);

    /* (the cycle limit finalizes the request with 500: see
     * tests/integration/test_http_phases.py) */

    weir_test_req_done(&t);
}


static weir_http_location_tree_node_t *
weir_test_node(const char *name, weir_http_core_loc_conf_t *exact,
    weir_http_core_loc_conf_t *inclusive)
{
    size_t                            len;
    weir_http_location_tree_node_t   *node;

    len = strlen(name);

    node = weir_pcalloc(weir_unit_pool(),
                        sizeof(weir_http_location_tree_node_t) + len);
    if (node == NULL) {
        return NULL;
    }

    node->exact = exact;
    node->inclusive = inclusive;
    node->len = (unsigned char) len;
    weir_memcpy(node->name, name, len);

    return node;
}


static weir_http_core_loc_conf_t *
weir_test_loc(const char *name)
{
    void                      **lc;
    weir_http_core_loc_conf_t  *clcf;

    clcf = weir_pcalloc(weir_unit_pool(), sizeof(weir_http_core_loc_conf_t));
    lc = weir_pcalloc(weir_unit_pool(), sizeof(void *));

    if (clcf == NULL || lc == NULL) {
        return NULL;
    }

    clcf->name.len = strlen(name);
    clcf->name.data = (unsigned char *) name;
    clcf->loc_conf = lc;
    lc[0] = clcf;

    return clcf;
}


static weir_http_core_loc_conf_t *
weir_test_find(weir_test_req_t *t, weir_http_core_loc_conf_t *srv,
    const char *uri, weir_int_t *rc)
{
    t->r.uri.len = strlen(uri);
    t->r.uri.data = (unsigned char *) uri;
    t->r.loc_conf = srv->loc_conf;
    t->r.ncaptures = 0;

    *rc = weir_http_core_find_location(&t->r);

    return t->r.loc_conf[0];
}


WEIR_UNIT_TEST(http_find_location)
{
    weir_int_t                   rc;
    weir_test_req_t              t;
    weir_regex_compile_t         rcc;
    weir_http_core_loc_conf_t   *srv, *root, *exact, *dir, *img, *png, *sub;
    weir_http_core_loc_conf_t  **regexes;
    weir_http_location_tree_node_t  *n_root, *n_exact, *n_dir, *n_img;
    weir_http_core_main_conf_t   cmcf;

    weir_memzero(&cmcf, sizeof(cmcf));
    weir_test_req_init(&t, &cmcf);

    /*
     * server { location / {} location = /exact {}
     *          location /dir/ {} (auto_redirect)
     *          location ^~ /images/ { location /images/sub/ {} }
     *          location ~ \.png$ {} }
     */
    srv = weir_test_loc("");
    root = weir_test_loc("/");
    exact = weir_test_loc("/exact");
    dir = weir_test_loc("/dir/");
    img = weir_test_loc("/images/");
    png = weir_test_loc("\\.png$");
    sub = weir_test_loc("/images/sub/");
    WEIR_REQUIRE(srv && root && exact && dir && img && png && sub);

    img->noregex = 1;
    exact->exact_match = 1;

    n_root = weir_test_node("/", NULL, root);
    n_exact = weir_test_node("exact", exact, NULL);
    n_dir = weir_test_node("dir/", NULL, dir);
    n_img = weir_test_node("images/", NULL, img);
    WEIR_REQUIRE(n_root && n_exact && n_dir && n_img);

    n_dir->auto_redirect = 1;
    n_root->tree = n_exact;
    n_exact->left = n_dir;
    n_exact->right = n_img;
    srv->static_locations = n_root;

    img->static_locations = weir_test_node("/images/sub/", NULL, sub);
    WEIR_REQUIRE(img->static_locations != NULL);

    weir_memzero(&rcc, sizeof(rcc));
    weir_str_set(&rcc.pattern, "\\.(png)$");
    rcc.pool = weir_unit_pool();
    WEIR_REQUIRE(weir_regex_compile(&rcc) == WEIR_OK);
    png->regex = rcc.regex;

    regexes = weir_pcalloc(weir_unit_pool(), 2 * sizeof(void *));
    WEIR_REQUIRE(regexes != NULL);
    regexes[0] = png;
    srv->regex_locations = regexes;

    WEIR_CHECK(weir_test_find(&t, srv, "/exact", &rc) == exact);
    WEIR_CHECK_INT(rc, WEIR_OK);

    WEIR_CHECK(weir_test_find(&t, srv, "/exact/x", &rc) == root);
    WEIR_CHECK(weir_test_find(&t, srv, "/other", &rc) == root);
    WEIR_CHECK(rc == WEIR_DECLINED || rc == WEIR_AGAIN);

    WEIR_CHECK(weir_test_find(&t, srv, "/dir", &rc) == dir);
    WEIR_CHECK_INT(rc, WEIR_DONE);

    WEIR_CHECK(weir_test_find(&t, srv, "/dir/a", &rc) == dir);
    WEIR_CHECK(rc == WEIR_DECLINED || rc == WEIR_AGAIN);

    /* regex beats the prefix ... */
    WEIR_CHECK(weir_test_find(&t, srv, "/dir/a.png", &rc) == png);
    WEIR_CHECK_INT(rc, WEIR_OK);
    WEIR_CHECK_INT(t.r.ncaptures, 4);
    WEIR_CHECK_INT(t.r.captures[2], 7);
    WEIR_CHECK_INT(t.r.captures[3], 10);

    /* ... except under ^~ */
    WEIR_CHECK(weir_test_find(&t, srv, "/images/a.png", &rc) == img);

    /* nested prefix location */
    WEIR_CHECK(weir_test_find(&t, srv, "/images/sub/a.png", &rc) == sub);

    /* no location at all */
    srv->static_locations = NULL;
    srv->regex_locations = NULL;
    WEIR_CHECK(weir_test_find(&t, srv, "/x", &rc) == srv);
    WEIR_CHECK_INT(rc, WEIR_DECLINED);

    weir_test_req_done(&t);
}


WEIR_UNIT_TEST(http_map_uri_to_path)
{
    size_t                       root;
    weir_str_t                   path;
    unsigned char               *last;
    weir_test_req_t              t;
    weir_http_core_main_conf_t   cmcf;

    weir_memzero(&cmcf, sizeof(cmcf));
    weir_test_req_init(&t, &cmcf);

    weir_str_set(&t.clcf.root, "/var/www");
    weir_str_set(&t.r.uri, "/a/b.html");
    t.r.valid_location = 1;

    last = weir_http_map_uri_to_path(&t.r, &path, &root, 0);
    WEIR_REQUIRE(last != NULL);
    WEIR_CHECK_STR(path.data, "/var/www/a/b.html");
    WEIR_CHECK_INT(path.len, sizeof("/var/www/a/b.html") - 1);
    WEIR_CHECK_INT(root, 8);
    WEIR_CHECK(*last == '\0');

    /* location /images/ { alias /srv/img/; } */
    weir_str_set(&t.clcf.root, "/srv/img/");
    t.clcf.alias = sizeof("/images/") - 1;
    weir_str_set(&t.r.uri, "/images/x.png");

    last = weir_http_map_uri_to_path(&t.r, &path, &root, 10);
    WEIR_REQUIRE(last != NULL);
    WEIR_CHECK_STR(path.data, "/srv/img/x.png");

    /* alias after a rewrite cannot be trusted */
    t.r.valid_location = 0;
    WEIR_CHECK(weir_http_map_uri_to_path(&t.r, &path, &root, 0) == NULL);

    weir_test_req_done(&t);
}


WEIR_UNIT_TEST(http_content_type_and_etag)
{
    weir_str_t                   html;
    weir_array_t                *keys;
    weir_hash_key_t             *k;
    weir_test_req_t              t;
    weir_http_core_main_conf_t   cmcf;

    weir_memzero(&cmcf, sizeof(cmcf));
    weir_test_req_init(&t, &cmcf);

    weir_str_set(&html, "text/html");
    weir_str_set(&t.clcf.default_type, "application/octet-stream");

    keys = weir_array_create(weir_unit_pool(), 2, sizeof(weir_hash_key_t));
    WEIR_REQUIRE(keys != NULL);
    k = weir_array_push(keys);
    WEIR_REQUIRE(k != NULL);
    weir_str_set(&k->key, "html");
    k->key_hash = weir_hash_key(k->key.data, k->key.len);
    k->value = &html;
    WEIR_REQUIRE(weir_hash_init(&t.clcf.types_hash, weir_unit_pool(), keys)
                 == WEIR_OK);

    weir_str_set(&t.r.exten, "HTML");
    WEIR_CHECK_INT(weir_http_set_content_type(&t.r), WEIR_OK);
    WEIR_CHECK_MEM(t.r.headers_out.content_type.data,
                   t.r.headers_out.content_type.len, "text/html");

    /* a type already set is kept */
    weir_str_set(&t.r.exten, "xyz");
    WEIR_CHECK_INT(weir_http_set_content_type(&t.r), WEIR_OK);
    WEIR_CHECK_MEM(t.r.headers_out.content_type.data,
                   t.r.headers_out.content_type.len, "text/html");

    weir_str_null(&t.r.headers_out.content_type);
    WEIR_CHECK_INT(weir_http_set_content_type(&t.r), WEIR_OK);
    WEIR_CHECK_MEM(t.r.headers_out.content_type.data,
                   t.r.headers_out.content_type.len,
                   "application/octet-stream");

    t.clcf.etag = 1;
    t.r.headers_out.last_modified_time = 0x5f;
    t.r.headers_out.content_length_n = 0x10;

    WEIR_CHECK_INT(weir_http_set_etag(&t.r), WEIR_OK);
    WEIR_REQUIRE(t.r.headers_out.etag != NULL);
    WEIR_CHECK_MEM(t.r.headers_out.etag->value.data,
                   t.r.headers_out.etag->value.len, "\"5f-10\"");
    WEIR_CHECK_INT(t.r.headers_out.etag->token, WEIR_HTTP_HDR_ETAG);

    weir_http_weak_etag(&t.r);
    WEIR_REQUIRE(t.r.headers_out.etag != NULL);
    WEIR_CHECK_MEM(t.r.headers_out.etag->value.data,
                   t.r.headers_out.etag->value.len, "W/\"5f-10\"");

    /* weak twice stays weak */
    weir_http_weak_etag(&t.r);
    WEIR_CHECK_MEM(t.r.headers_out.etag->value.data,
                   t.r.headers_out.etag->value.len, "W/\"5f-10\"");

    weir_http_clear_header_out(&t.r.headers_out.etag);
    WEIR_CHECK(t.r.headers_out.etag == NULL);

    weir_test_req_done(&t);
}


WEIR_UNIT_TEST(http_filter_chains)
{
    weir_conf_t                  cf;
    weir_cycle_t                 cycle;
    weir_module_t               *mods[2];
    weir_test_req_t              t;
    weir_http_core_main_conf_t   cmcf;
    weir_http_request_body_t     rb;
    weir_buf_t                   b;
    weir_chain_t                 cl;

    mods[0] = &weir_test_a_module;
    mods[1] = &weir_test_b_module;

    weir_test_conf(&cf, &cycle, mods, 2);
    WEIR_REQUIRE(weir_http_init_filters(&cf) == WEIR_OK);

    weir_memzero(&cmcf, sizeof(cmcf));
    weir_test_req_init(&t, &cmcf);

    /* hy(100), then hx(200, module a) before hz(200, module b) */
    weir_test_ncalls = 0;
    WEIR_CHECK_INT(weir_http_send_header(&t.r), WEIR_OK);
    WEIR_CHECK_INT(weir_test_ncalls, 4);
    WEIR_CHECK_STR(weir_test_calls[0], "hy");
    WEIR_CHECK_STR(weir_test_calls[1], "hx");
    WEIR_CHECK_STR(weir_test_calls[2], "hz");
    WEIR_CHECK_STR(weir_test_calls[3], "proto_header");
    WEIR_CHECK(t.r.header_sent);

    /* the header goes out once */
    WEIR_CHECK_INT(weir_http_send_header(&t.r), WEIR_ERROR);
    WEIR_CHECK(weir_unit_log_has("header already sent"));

    /* body: bx, then the protocol, whose error marks the connection */
    weir_test_ncalls = 0;
    WEIR_CHECK_INT(weir_http_output_filter(&t.r, NULL), WEIR_ERROR);
    WEIR_CHECK_INT(weir_test_ncalls, 2);
    WEIR_CHECK_STR(weir_test_calls[0], "bx");
    WEIR_CHECK_STR(weir_test_calls[1], "proto_body");
    WEIR_CHECK(t.c.error);

    /* no request body filters: the save filter keeps the buffers */
    weir_memzero(&rb, sizeof(rb));
    weir_memzero(&b, sizeof(b));
    b.last_buf = 1;
    cl.buf = &b;
    cl.next = NULL;
    t.r.request_body = &rb;

    WEIR_CHECK_INT(weir_http_top_request_body_filter(&t.r, &cl), WEIR_OK);
    WEIR_REQUIRE(rb.bufs != NULL);
    WEIR_CHECK(rb.bufs->buf == &b);
    WEIR_CHECK(rb.last_saved);

    /* rebuilt without modules, the chains are the protocol alone */
    cycle.modules_n = 0;
    WEIR_REQUIRE(weir_http_init_filters(&cf) == WEIR_OK);

    t.r.header_sent = 0;
    weir_test_ncalls = 0;
    WEIR_CHECK_INT(weir_http_send_header(&t.r), WEIR_OK);
    WEIR_CHECK_INT(weir_test_ncalls, 1);
    WEIR_CHECK_STR(weir_test_calls[0], "proto_header");

    weir_test_req_done(&t);
}
