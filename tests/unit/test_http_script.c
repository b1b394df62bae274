#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_http.h"
#include "weir_unit.h"


/*
 * Variables and complex values without a server: a configuration context
 * holding only the core main conf, and a request built by hand.
 */

typedef struct {
    weir_conf_t                  cf;
    weir_cycle_t                 cycle;
    weir_conf_file_t             file;
    weir_http_conf_ctx_t         ctx;
    void                        *main_conf[1];
    weir_http_core_main_conf_t   cmcf;
    weir_uint_t                  saved_index;
    weir_pool_t                 *pool;
} test_http_conf_t;

typedef struct {
    weir_http_request_t          r;
    weir_connection_t            c;
    weir_http_connection_t       hc;
    struct sockaddr_in           sin;
    struct sockaddr_in           local;
} test_http_req_t;


static weir_uint_t  test_http_saved_index;


static weir_int_t
test_http_conf(test_http_conf_t *t)
{
    weir_memzero(t, sizeof(test_http_conf_t));

    t->pool = weir_unit_pool();
    if (t->pool == NULL) {
        return WEIR_ERROR;
    }

    /* the core module's slot in the (one-entry) main conf array */
    test_http_saved_index = weir_http_core_module.ctx_index;
    weir_http_core_module.ctx_index = 0;

    t->main_conf[0] = &t->cmcf;
    t->ctx.main_conf = t->main_conf;

    weir_str_set(&t->cycle.conf_prefix, "/etc/weir/");
    weir_str_set(&t->cycle.prefix, "/usr/local/weir/");
    t->cycle.pool = t->pool;
    t->cycle.log = weir_unit_log();

    weir_str_set(&t->file.file.name, "/t/weir.conf");
    t->file.line = 7;

    t->cf.pool = t->pool;
    t->cf.temp_pool = t->pool;
    t->cf.log = weir_unit_log();
    t->cf.cycle = &t->cycle;
    t->cf.ctx = &t->ctx;
    t->cf.conf_file = &t->file;

    return weir_http_variables_add_core_vars(&t->cf);
}


static void
test_http_conf_done(void)
{
    weir_http_core_module.ctx_index = test_http_saved_index;
}


static weir_int_t
test_http_request(test_http_conf_t *t, test_http_req_t *q)
{
    weir_http_request_t  *r;

    weir_memzero(q, sizeof(test_http_req_t));

    r = &q->r;
    r->pool = t->pool;
    r->main_conf = t->main_conf;
    r->connection = &q->c;
    r->http_connection = &q->hc;
    r->main = r;

    q->c.log = weir_unit_log();
    q->c.pool = t->pool;
    q->c.fd = -1;
    q->c.number = 17;
    /* the transport connection's count ($connection_requests), which
     * a stream's own connection object (fd -1) does not keep */
    q->hc.requests = 3;

    q->sin.sin_family = AF_INET;
    q->sin.sin_port = htons(40000);
    q->sin.sin_addr.s_addr = htonl(0x7f000001);
    q->c.sockaddr = (struct sockaddr *) &q->sin;
    q->c.socklen = sizeof(struct sockaddr_in);
    weir_str_set(&q->c.addr_text, "127.0.0.1");

    q->local.sin_family = AF_INET;
    q->local.sin_port = htons(8080);
    q->local.sin_addr.s_addr = htonl(0x7f000002);
    q->c.local_sockaddr = (struct sockaddr *) &q->local;
    q->c.local_socklen = sizeof(struct sockaddr_in);

    r->variables = weir_pcalloc(t->pool, (t->cmcf.variables.nelts + 1)
                                         * sizeof(weir_http_variable_value_t));
    if (r->variables == NULL) {
        return WEIR_ERROR;
    }

    if (weir_list_init(&r->headers_in.headers, t->pool, 4,
                       sizeof(weir_http_header_t))
        != WEIR_OK
        || weir_list_init(&r->headers_out.headers, t->pool, 4,
                          sizeof(weir_http_header_t))
           != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    weir_str_set(&r->uri, "/a/b");
    weir_str_set(&r->args, "x=1&Y=two&flag&z=");
    weir_str_set(&r->unparsed_uri, "/a/b?x=1&Y=two&flag&z=");
    weir_str_set(&r->method_name, "GET");
    weir_str_set(&r->http_protocol, "HTTP/1.1");
    weir_str_set(&r->request_line, "GET /a/b?x=1&Y=two&flag&z= HTTP/1.1");
    r->http_version = WEIR_HTTP_VERSION_11;
    r->headers_in.content_length_n = -1;
    r->headers_out.content_length_n = -1;
    r->start_msec = weir_current_msec;

    return WEIR_OK;
}


static weir_http_header_t *
test_http_header_in(test_http_req_t *q, const char *name, const char *value)
{
    size_t               len;
    weir_http_header_t  *h;

    h = weir_list_push(&q->r.headers_in.headers);
    if (h == NULL) {
        return NULL;
    }

    len = strlen(name);

    h->key.len = len;
    h->key.data = (unsigned char *) (uintptr_t) name;
    h->lowcase_key = weir_pnalloc(q->r.pool, len);
    if (h->lowcase_key == NULL) {
        return NULL;
    }

    h->hash = weir_hash_strlow(h->lowcase_key, h->key.data, len);
    if (h->hash == 0) {
        h->hash = 1;
    }

    h->token = weir_http_header_token(h->lowcase_key, len, h->hash);
    h->value.len = strlen(value);
    h->value.data = (unsigned char *) (uintptr_t) value;
    h->next = NULL;

    return h;
}


/* compiles text into cv; WEIR_OK or WEIR_ERROR */
static weir_int_t
test_http_compile(test_http_conf_t *t, const char *text,
    weir_http_complex_value_t *cv)
{
    weir_str_t                          value;
    weir_http_compile_complex_value_t   ccv;

    value.len = strlen(text);
    value.data = (unsigned char *) (uintptr_t) text;

    weir_memzero(&ccv, sizeof(weir_http_compile_complex_value_t));
    ccv.cf = &t->cf;
    ccv.value = &value;
    ccv.complex_value = cv;

    return weir_http_compile_complex_value(&ccv);
}


/* the value of "$name" for q, as a NUL-terminated string or NULL */
static const char *
test_http_var(test_http_conf_t *t, test_http_req_t *q, const char *name)
{
    char                        *s;
    weir_str_t                   n;
    weir_uint_t                  key;
    weir_http_variable_value_t  *vv;

    n.len = strlen(name);
    n.data = weir_pnalloc(t->pool, n.len);
    if (n.data == NULL) {
        return NULL;
    }

    key = weir_hash_strlow(n.data, (unsigned char *) (uintptr_t) name, n.len);

    vv = weir_http_get_variable(&q->r, &n, key);

    if (vv == NULL || vv->not_found) {
        return NULL;
    }

    s = weir_pnalloc(t->pool, vv->len + 1);
    if (s == NULL) {
        return NULL;
    }

    weir_memcpy(s, vv->data, vv->len);
    s[vv->len] = '\0';

    return s;
}


static const char *
test_http_eval(test_http_conf_t *t, test_http_req_t *q,
    weir_http_complex_value_t *cv)
{
    char        *s;
    weir_str_t   value;

    if (weir_http_complex_value(&q->r, cv, &value) != WEIR_OK) {
        return NULL;
    }

    s = weir_pnalloc(t->pool, value.len + 1);
    if (s == NULL) {
        return NULL;
    }

    weir_memcpy(s, value.data, value.len);
    s[value.len] = '\0';

    return s;
}


WEIR_UNIT_TEST(http_script_plain_and_escapes)
{
    test_http_conf_t           t;
    test_http_req_t            q;
    weir_http_complex_value_t  plain, esc, mixed;

    WEIR_REQUIRE(test_http_conf(&t) == WEIR_OK);

    WEIR_CHECK(test_http_compile(&t, "hello world", &plain) == WEIR_OK);
    WEIR_CHECK(plain.lengths == NULL);
    WEIR_CHECK_MEM(plain.value.data, plain.value.len, "hello world");

    WEIR_CHECK(test_http_compile(&t, "cost: \\$5", &esc) == WEIR_OK);
    WEIR_CHECK(esc.lengths == NULL);
    WEIR_CHECK_MEM(esc.value.data, esc.value.len, "cost: $5");

    WEIR_CHECK(test_http_compile(&t, "\\$uri=$uri;", &mixed) == WEIR_OK);
    WEIR_CHECK(mixed.lengths != NULL);

    WEIR_CHECK(weir_http_variables_init_vars(&t.cf) == WEIR_OK);
    WEIR_REQUIRE(test_http_request(&t, &q) == WEIR_OK);

    WEIR_CHECK_STR(test_http_eval(&t, &q, &mixed), "$uri=/a/b;");
    WEIR_CHECK_STR(test_http_eval(&t, &q, &plain), "hello world");

    WEIR_CHECK_INT(weir_http_script_variables_count(&plain.value), 0);

    test_http_conf_done();
}


WEIR_UNIT_TEST(http_script_variables)
{
    test_http_conf_t           t;
    test_http_req_t            q;
    weir_http_complex_value_t  cv1, cv2, cv3;

    WEIR_REQUIRE(test_http_conf(&t) == WEIR_OK);

    WEIR_CHECK(test_http_compile(&t, "$request_method $uri$is_args$args",
                                 &cv1) == WEIR_OK);
    WEIR_CHECK(test_http_compile(&t, "[${arg_x}x] [$arg_y] [$arg_nope]",
                                 &cv2) == WEIR_OK);
    WEIR_CHECK(test_http_compile(&t, "$http_user_agent|$http_x_multi|"
                                 "$cookie_b|$remote_addr:$remote_port|"
                                 "$server_addr:$server_port", &cv3)
               == WEIR_OK);

    WEIR_CHECK(weir_http_variables_init_vars(&t.cf) == WEIR_OK);
    WEIR_REQUIRE(test_http_request(&t, &q) == WEIR_OK);

    WEIR_REQUIRE(test_http_header_in(&q, "User-Agent", "curl/8") != NULL);
    WEIR_REQUIRE(test_http_header_in(&q, "X-Multi", "one") != NULL);
    WEIR_REQUIRE(test_http_header_in(&q, "Cookie", "a=1; b=two") != NULL);
    WEIR_REQUIRE(test_http_header_in(&q, "x-multi", "two") != NULL);

    WEIR_CHECK_STR(test_http_eval(&t, &q, &cv1),
                   "GET /a/b?x=1&Y=two&flag&z=");
    WEIR_CHECK_STR(test_http_eval(&t, &q, &cv2), "[1x] [two] []");
    WEIR_CHECK_STR(test_http_eval(&t, &q, &cv3),
                   "curl/8|one, two|two|127.0.0.1:40000|127.0.0.2:8080");

    /* the uri changes (a rewrite): a no-cacheable variable follows */
    weir_str_set(&q.r.uri, "/c");
    weir_str_set(&q.r.args, "");
    WEIR_CHECK_STR(test_http_eval(&t, &q, &cv1), "GET /c");

    test_http_conf_done();
}


WEIR_UNIT_TEST(http_script_by_name)
{
    const char        *s;
    test_http_conf_t   t;
    test_http_req_t    q;

    WEIR_REQUIRE(test_http_conf(&t) == WEIR_OK);
    WEIR_CHECK(weir_http_variables_init_vars(&t.cf) == WEIR_OK);
    WEIR_REQUIRE(test_http_request(&t, &q) == WEIR_OK);

    WEIR_REQUIRE(test_http_header_in(&q, "Host", "Example.COM:8080")
                 != NULL);
    weir_str_set(&q.r.headers_in.server, "example.com");

    WEIR_CHECK_STR(test_http_var(&t, &q, "host"), "example.com");
    WEIR_CHECK_STR(test_http_var(&t, &q, "http_host"), "Example.COM:8080");
    WEIR_CHECK_STR(test_http_var(&t, &q, "HTTP_HOST"), "Example.COM:8080");
    WEIR_CHECK_STR(test_http_var(&t, &q, "arg_flag"), "");
    WEIR_CHECK_STR(test_http_var(&t, &q, "arg_z"), "");
    WEIR_CHECK_STR(test_http_var(&t, &q, "arg_zz"), NULL);
    WEIR_CHECK_STR(test_http_var(&t, &q, "query_string"),
                   "x=1&Y=two&flag&z=");
    WEIR_CHECK_STR(test_http_var(&t, &q, "request_uri"),
                   "/a/b?x=1&Y=two&flag&z=");
    WEIR_CHECK_STR(test_http_var(&t, &q, "server_protocol"), "HTTP/1.1");
    WEIR_CHECK_STR(test_http_var(&t, &q, "scheme"), "http");
    WEIR_CHECK_STR(test_http_var(&t, &q, "connection"), "17");
    WEIR_CHECK_STR(test_http_var(&t, &q, "connection_requests"), "3");
    WEIR_CHECK_STR(test_http_var(&t, &q, "status"), "000");
    WEIR_CHECK_STR(test_http_var(&t, &q, "request_time"), "0.000");
    WEIR_CHECK_STR(test_http_var(&t, &q, "no_such_thing"), NULL);
    WEIR_CHECK_STR(test_http_var(&t, &q, "content_length"), NULL);

    q.r.headers_out.status = 204;
    WEIR_CHECK_STR(test_http_var(&t, &q, "status"), "204");

    /* per request: the connection object's count less the head */
    q.c.sent = 1000;
    q.r.header_out_size = 150;
    WEIR_CHECK_STR(test_http_var(&t, &q, "bytes_sent"), "1000");
    WEIR_CHECK_STR(test_http_var(&t, &q, "body_bytes_sent"), "850");

    q.r.keepalive = 1;
    q.r.chunked = 1;
    WEIR_CHECK_STR(test_http_var(&t, &q, "sent_http_connection"),
                   "keep-alive");
    WEIR_CHECK_STR(test_http_var(&t, &q, "sent_http_transfer_encoding"),
                   "chunked");

    /* an HTTP/2 head has neither field, whatever r says */
    q.r.http_version = WEIR_HTTP_VERSION_20;
    WEIR_CHECK_STR(test_http_var(&t, &q, "sent_http_connection"), NULL);
    WEIR_CHECK_STR(test_http_var(&t, &q, "sent_http_transfer_encoding"),
                   NULL);
    q.r.http_version = WEIR_HTTP_VERSION_11;

    s = test_http_var(&t, &q, "binary_remote_addr");
    WEIR_CHECK(s != NULL && weir_memcmp(s, "\x7f\x00\x00\x01", 4) == 0);

    s = test_http_var(&t, &q, "request_id");
    WEIR_REQUIRE(s != NULL);
    WEIR_CHECK_INT(strlen(s), 32);
    WEIR_CHECK(strspn(s, "0123456789abcdef") == 32);
    /* stable within one request */
    WEIR_CHECK_STR(test_http_var(&t, &q, "request_id"), s);

    s = test_http_var(&t, &q, "msec");
    WEIR_CHECK(s != NULL && strlen(s) > 4 && s[strlen(s) - 4] == '.');

    test_http_conf_done();
}


WEIR_UNIT_TEST(http_script_request_id_differs)
{
    const char        *a, *b;
    test_http_conf_t   t;
    test_http_req_t    q1, q2;

    WEIR_REQUIRE(test_http_conf(&t) == WEIR_OK);
    WEIR_CHECK(weir_http_variables_init_vars(&t.cf) == WEIR_OK);
    WEIR_REQUIRE(test_http_request(&t, &q1) == WEIR_OK);
    WEIR_REQUIRE(test_http_request(&t, &q2) == WEIR_OK);

    a = test_http_var(&t, &q1, "request_id");
    b = test_http_var(&t, &q2, "request_id");

    WEIR_REQUIRE(a != NULL && b != NULL);
    WEIR_CHECK(strcmp(a, b) != 0);

    test_http_conf_done();
}


WEIR_UNIT_TEST(http_script_errors)
{
    test_http_conf_t           t;
    weir_str_t                 name;
    weir_http_complex_value_t  cv;

    WEIR_REQUIRE(test_http_conf(&t) == WEIR_OK);

    weir_unit_log_reset();
    WEIR_CHECK(test_http_compile(&t, "x${uri", &cv) == WEIR_ERROR);
    WEIR_CHECK(weir_unit_log_has("the closing bracket in \"uri\" variable "
                                 "is missing in /t/weir.conf:7"));

    weir_unit_log_reset();
    WEIR_CHECK(test_http_compile(&t, "cost $", &cv) == WEIR_ERROR);
    WEIR_CHECK(weir_unit_log_has("invalid variable name in \"cost $\" in "
                                 "/t/weir.conf:7"));

    weir_unit_log_reset();
    WEIR_CHECK(test_http_compile(&t, "a $-b", &cv) == WEIR_ERROR);
    WEIR_CHECK(weir_unit_log_has("invalid variable name"));

    /* a non-changeable variable cannot be added twice */
    weir_unit_log_reset();
    weir_str_set(&name, "uri");
    WEIR_CHECK(weir_http_add_variable(&t.cf, &name, 0) == NULL);
    WEIR_CHECK(weir_unit_log_has("the duplicate \"uri\" variable"));

    /* an unknown name is reported where it was first used */
    t.file.line = 12;
    WEIR_CHECK(test_http_compile(&t, "$uri $no_such_var", &cv) == WEIR_OK);
    t.file.line = 30;
    WEIR_CHECK(test_http_compile(&t, "$no_such_var", &cv) == WEIR_OK);

    weir_unit_log_reset();
    WEIR_CHECK(weir_http_variables_init_vars(&t.cf) == WEIR_ERROR);
    WEIR_CHECK(weir_unit_log_has("[emerg]"));
    WEIR_CHECK(weir_unit_log_has("unknown \"no_such_var\" variable in "
                                 "/t/weir.conf:12"));

    test_http_conf_done();
}


WEIR_UNIT_TEST(http_script_prefix_and_size)
{
    test_http_conf_t                    t;
    test_http_req_t                     q;
    weir_str_t                          value;
    weir_http_complex_value_t           rel, abs, plain, size;
    weir_http_compile_complex_value_t   ccv;

    WEIR_REQUIRE(test_http_conf(&t) == WEIR_OK);

    weir_memzero(&ccv, sizeof(ccv));
    ccv.cf = &t.cf;
    ccv.value = &value;
    ccv.conf_prefix = 1;

    weir_str_set(&value, "html$uri");
    ccv.complex_value = &rel;
    WEIR_CHECK(weir_http_compile_complex_value(&ccv) == WEIR_OK);

    weir_str_set(&value, "/srv$uri");
    ccv.complex_value = &abs;
    WEIR_CHECK(weir_http_compile_complex_value(&ccv) == WEIR_OK);

    weir_str_set(&value, "keys.txt");
    ccv.complex_value = &plain;
    WEIR_CHECK(weir_http_compile_complex_value(&ccv) == WEIR_OK);
    WEIR_CHECK_STR(plain.value.data, "/etc/weir/keys.txt");

    WEIR_CHECK(test_http_compile(&t, "${arg_k}k", &size) == WEIR_OK);

    WEIR_CHECK(weir_http_variables_init_vars(&t.cf) == WEIR_OK);
    WEIR_REQUIRE(test_http_request(&t, &q) == WEIR_OK);

    WEIR_CHECK_STR(test_http_eval(&t, &q, &rel), "/etc/weir/html/a/b");
    WEIR_CHECK_STR(test_http_eval(&t, &q, &abs), "/srv/a/b");

    weir_str_set(&q.r.args, "k=4");
    WEIR_CHECK_INT(weir_http_complex_value_size(&q.r, &size, 99), 4096);
    weir_str_set(&q.r.args, "k=x");
    WEIR_CHECK_INT(weir_http_complex_value_size(&q.r, &size, 99), 99);

    test_http_conf_done();
}


#ifdef WEIR_HAVE_PCRE2

WEIR_UNIT_TEST(http_script_captures)
{
    weir_str_t                  s;
    test_http_conf_t            t;
    test_http_req_t             q;
    weir_http_regex_t          *re, *re2;
    weir_regex_compile_t        rc;
    weir_http_complex_value_t   cv;

    WEIR_REQUIRE(test_http_conf(&t) == WEIR_OK);

    weir_memzero(&rc, sizeof(rc));
    weir_str_set(&rc.pattern, "^/(\\w+)/(?<id>\\d+)$");
    re = weir_http_regex_compile(&t.cf, &rc);
    WEIR_REQUIRE(re != NULL);
    WEIR_CHECK_INT(re->ncaptures, 2);
    WEIR_CHECK_INT(re->nvariables, 1);

    weir_memzero(&rc, sizeof(rc));
    weir_str_set(&rc.pattern, "^/static/");
    re2 = weir_http_regex_compile(&t.cf, &rc);
    WEIR_REQUIRE(re2 != NULL);

    WEIR_CHECK(test_http_compile(&t, "$1-$id-$2-$3.$0", &cv) == WEIR_OK);

    WEIR_CHECK(weir_http_variables_init_vars(&t.cf) == WEIR_OK);

    /* what weir_http_core_init_main_conf does with the group count */
    t.cmcf.ncaptures = (t.cmcf.ncaptures + 1) * 3;

    WEIR_REQUIRE(test_http_request(&t, &q) == WEIR_OK);

    weir_str_set(&s, "/user/42");
    WEIR_CHECK_INT(weir_http_regex_exec(&q.r, re, &s), WEIR_OK);
    WEIR_CHECK_STR(test_http_eval(&t, &q, &cv), "user-42-42-./user/42");
    WEIR_CHECK_STR(test_http_var(&t, &q, "1"), "user");
    WEIR_CHECK_STR(test_http_var(&t, &q, "id"), "42");

    weir_str_set(&s, "/user/abc");
    WEIR_CHECK_INT(weir_http_regex_exec(&q.r, re, &s), WEIR_DECLINED);

    weir_str_set(&s, "/static/x");
    WEIR_CHECK_INT(weir_http_regex_exec(&q.r, re2, &s), WEIR_OK);

    weir_memzero(&rc, sizeof(rc));
    weir_str_set(&rc.pattern, "([a-");
    weir_unit_log_reset();
    WEIR_CHECK(weir_http_regex_compile(&t.cf, &rc) == NULL);
    WEIR_CHECK(weir_unit_log_has("in /t/weir.conf:7"));

    test_http_conf_done();
}

#endif
