#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"
#include "weir_unit.h"


/* Host names as the server name lookup sees them */

typedef struct {
    const char  *in;
    weir_int_t   rc;
    const char  *out;
} test_host_t;


static test_host_t  test_hosts[] = {
    { "example.com", WEIR_OK, "example.com" },
    { "Example.COM", WEIR_OK, "example.com" },
    { "example.com:8080", WEIR_OK, "example.com" },
    { "example.com.", WEIR_OK, "example.com" },
    { "example.com.:80", WEIR_OK, "example.com" },
    { "[::1]:8080", WEIR_OK, "[::1]" },
    { "[::1]", WEIR_OK, "[::1]" },
    { "127.0.0.1:80", WEIR_OK, "127.0.0.1" },
    { "a-b_c.test", WEIR_OK, "a-b_c.test" },
    { "a..b", WEIR_DECLINED, NULL },
    { "..", WEIR_DECLINED, NULL },
    { "a/b", WEIR_DECLINED, NULL },
    { "a\\b", WEIR_DECLINED, NULL },
    { "a\tb", WEIR_DECLINED, NULL },
    { ".", WEIR_DECLINED, NULL },
    { ":80", WEIR_DECLINED, NULL },
    /* RFC 3986 host and port (docs/http/http1.md, "Host") */
    { "example.com:", WEIR_OK, "example.com" },
    { "example.com:65535", WEIR_OK, "example.com" },
    { "example.com:0080", WEIR_OK, "example.com" },
    { "a!$&'()*+,;=~b", WEIR_OK, "a!$&'()*+,;=~b" },
    { "[::FFFF:1.2.3.4]:80", WEIR_OK, "[::ffff:1.2.3.4]" },
    { "[2001:db8::1]", WEIR_OK, "[2001:db8::1]" },
    { "[v1.a:b]", WEIR_OK, "[v1.a:b]" },
    { ".a", WEIR_OK, ".a" },
    { "", WEIR_DECLINED, NULL },
    { "a b", WEIR_DECLINED, NULL },
    { "a@b", WEIR_DECLINED, NULL },
    { "u@a:80", WEIR_DECLINED, NULL },
    { "a?b", WEIR_DECLINED, NULL },
    { "a#b", WEIR_DECLINED, NULL },
    { "a%41", WEIR_DECLINED, NULL },
    { "a\"b", WEIR_DECLINED, NULL },
    { "a<b", WEIR_DECLINED, NULL },
    { "a|b", WEIR_DECLINED, NULL },
    { "a\x7f", WEIR_DECLINED, NULL },
    { "a\x01", WEIR_DECLINED, NULL },
    { "\xc3\xa9", WEIR_DECLINED, NULL },
    { "a:b", WEIR_DECLINED, NULL },
    { "a:80:80", WEIR_DECLINED, NULL },
    { "a:-1", WEIR_DECLINED, NULL },
    { "a: 80", WEIR_DECLINED, NULL },
    { "a:0", WEIR_DECLINED, NULL },
    { "a:65536", WEIR_DECLINED, NULL },
    { "a:99999999999999999999", WEIR_DECLINED, NULL },
    { "[::1", WEIR_DECLINED, NULL },
    { "[::1]x", WEIR_DECLINED, NULL },
    { "[::1]:", WEIR_OK, "[::1]" },
    { "[]", WEIR_DECLINED, NULL },
    { "[zz]", WEIR_DECLINED, NULL },
    { "[1:2:3:4:5:6:7:8:9]", WEIR_DECLINED, NULL },
    { "[1::2::3]", WEIR_DECLINED, NULL },
    { "[fe80::1%25eth0]", WEIR_DECLINED, NULL },
    { "[v1]", WEIR_DECLINED, NULL },
    { "[v.x]", WEIR_DECLINED, NULL },
    { "[v1.]", WEIR_DECLINED, NULL },
    { "[v1.a/b]", WEIR_DECLINED, NULL },
    { "a[b]", WEIR_DECLINED, NULL },
    { NULL, 0, NULL }
};


WEIR_UNIT_TEST(http_validate_host)
{
    char          buf[64];
    weir_int_t    rc;
    weir_str_t    host;
    weir_uint_t   i;
    weir_pool_t  *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    for (i = 0; test_hosts[i].in; i++) {
        host.len = strlen(test_hosts[i].in);
        host.data = weir_pnalloc(pool, host.len);
        WEIR_REQUIRE(host.data != NULL);
        weir_memcpy(host.data, test_hosts[i].in, host.len);

        rc = weir_http_validate_host(&host, pool, 0);

        if (!WEIR_CHECK_INT(rc, test_hosts[i].rc)) {
            fprintf(stderr, "  host: \"%s\"\n", test_hosts[i].in);
            continue;
        }

        if (rc == WEIR_OK) {
            WEIR_REQUIRE(host.len < sizeof(buf));
            weir_memcpy(buf, host.data, host.len);
            buf[host.len] = '\0';
            WEIR_CHECK_STR(buf, test_hosts[i].out);
        }
    }
}


WEIR_UNIT_TEST(http_validate_host_copies_when_asked)
{
    unsigned char   text[] = "www.example.com";
    weir_str_t      host;
    weir_pool_t    *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    host.len = sizeof(text) - 1;
    host.data = text;

    WEIR_CHECK_INT(weir_http_validate_host(&host, pool, 1), WEIR_OK);
    WEIR_CHECK(host.data != text);
    WEIR_CHECK_MEM(host.data, host.len, "www.example.com");
}


WEIR_UNIT_TEST(http_split_args)
{
    unsigned char   a[] = "/index.html?a=1&b=2";
    unsigned char   b[] = "/plain";
    unsigned char   c[] = "/empty?";
    weir_str_t      uri, args;

    uri.len = sizeof(a) - 1;
    uri.data = a;
    weir_http_split_args(NULL, &uri, &args);
    WEIR_CHECK_MEM(uri.data, uri.len, "/index.html");
    WEIR_CHECK_MEM(args.data, args.len, "a=1&b=2");

    uri.len = sizeof(b) - 1;
    uri.data = b;
    weir_http_split_args(NULL, &uri, &args);
    WEIR_CHECK_MEM(uri.data, uri.len, "/plain");
    WEIR_CHECK_INT(args.len, 0);

    uri.len = sizeof(c) - 1;
    uri.data = c;
    weir_http_split_args(NULL, &uri, &args);
    WEIR_CHECK_MEM(uri.data, uri.len, "/empty");
    WEIR_CHECK_INT(args.len, 0);
}
