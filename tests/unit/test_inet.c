#include "weir_config.h"
#include "weir_core.h"
#include "weir_unit.h"


/* parses text; returns the error string or NULL, with the addresses in
 * *addrs and the first one's name NUL-terminated in name */

static char *
test_inet_parse(const char *text, weir_uint_t default_port,
    weir_array_t **addrs, char *name, size_t size)
{
    char         *rv;
    weir_str_t    s;
    weir_addr_t  *addr;

    name[0] = '\0';

    *addrs = weir_array_create(weir_unit_pool(), 2, sizeof(weir_addr_t));
    if (*addrs == NULL) {
        return "no memory";
    }

    s.data = (unsigned char *) text;
    s.len = strlen(text);

    rv = weir_parse_addr_port(weir_unit_pool(), &s, default_port, *addrs);

    if (rv == NULL && (*addrs)->nelts) {
        addr = (*addrs)->elts;
        snprintf(name, size, "%.*s", WEIR_STR_ARG(addr[0].name));
    }

    return rv;
}


WEIR_UNIT_TEST(inet_parse_port_only)
{
    char                 name[128];
    weir_array_t        *addrs;
    weir_addr_t         *addr;
    struct sockaddr_in  *sin;

    WEIR_REQUIRE(test_inet_parse("8080", 80, &addrs, name, sizeof(name))
                 == NULL);
    WEIR_REQUIRE(addrs->nelts == 1);

    addr = addrs->elts;
    sin = (struct sockaddr_in *) addr[0].sockaddr;

    WEIR_CHECK_INT(sin->sin_family, AF_INET);
    WEIR_CHECK_INT(sin->sin_addr.s_addr, htonl(INADDR_ANY));
    WEIR_CHECK_INT(weir_inet_get_port(addr[0].sockaddr), 8080);
    WEIR_CHECK_INT(addr[0].socklen, sizeof(struct sockaddr_in));
    WEIR_CHECK_STR(name, "0.0.0.0:8080");

    WEIR_CHECK(test_inet_parse("*:8081", 80, &addrs, name, sizeof(name))
               == NULL);
    WEIR_CHECK_STR(name, "0.0.0.0:8081");
}


WEIR_UNIT_TEST(inet_parse_ipv4)
{
    char           name[128];
    weir_array_t  *addrs;

    WEIR_CHECK(test_inet_parse("127.0.0.1:8080", 80, &addrs, name,
                               sizeof(name))
               == NULL);
    WEIR_CHECK_INT(addrs->nelts, 1);
    WEIR_CHECK_STR(name, "127.0.0.1:8080");

    /* no port: the default one */
    WEIR_CHECK(test_inet_parse("127.0.0.2", 80, &addrs, name, sizeof(name))
               == NULL);
    WEIR_CHECK_STR(name, "127.0.0.2:80");
}


WEIR_UNIT_TEST(inet_parse_ipv6)
{
    char                  name[128];
    weir_array_t         *addrs;
    weir_addr_t          *addr;
    struct sockaddr_in6  *sin6;

    WEIR_REQUIRE(test_inet_parse("[::1]:8080", 80, &addrs, name,
                                 sizeof(name))
                 == NULL);
    WEIR_REQUIRE(addrs->nelts == 1);

    addr = addrs->elts;
    sin6 = (struct sockaddr_in6 *) addr[0].sockaddr;

    WEIR_CHECK_INT(sin6->sin6_family, AF_INET6);
    WEIR_CHECK(IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr));
    WEIR_CHECK_INT(weir_inet_get_port(addr[0].sockaddr), 8080);
    WEIR_CHECK_STR(name, "[::1]:8080");

    WEIR_CHECK(test_inet_parse("[::]:8443", 80, &addrs, name, sizeof(name))
               == NULL);
    WEIR_CHECK_STR(name, "[::]:8443");

    WEIR_CHECK(test_inet_parse("[::1]", 81, &addrs, name, sizeof(name))
               == NULL);
    WEIR_CHECK_STR(name, "[::1]:81");
}


WEIR_UNIT_TEST(inet_parse_unix)
{
    char                 name[256], path[200];
    weir_array_t        *addrs;
    weir_addr_t         *addr;
    struct sockaddr_un  *saun;

    WEIR_REQUIRE(test_inet_parse("unix:/tmp/weir.sock", 80, &addrs, name,
                                 sizeof(name))
                 == NULL);
    WEIR_REQUIRE(addrs->nelts == 1);

    addr = addrs->elts;
    saun = (struct sockaddr_un *) addr[0].sockaddr;

    WEIR_CHECK_INT(saun->sun_family, AF_UNIX);
    WEIR_CHECK_STR(saun->sun_path, "/tmp/weir.sock");
    WEIR_CHECK_STR(name, "unix:/tmp/weir.sock");
    WEIR_CHECK_INT(weir_inet_get_port(addr[0].sockaddr), 0);

    WEIR_CHECK_STR(test_inet_parse("unix:", 80, &addrs, name, sizeof(name)),
                   "no path in the unix domain socket");

    /* sun_path holds 108 bytes with the NUL: 107 characters fit */
    memset(path, 'a', sizeof(path));
    memcpy(path, "unix:/", 6);
    path[5 + 107] = '\0';
    WEIR_CHECK(test_inet_parse(path, 80, &addrs, name, sizeof(name))
               == NULL);

    path[5 + 107] = 'a';
    path[5 + 108] = '\0';
    WEIR_CHECK_STR(test_inet_parse(path, 80, &addrs, name, sizeof(name)),
                   "too long path in the unix domain socket");
}


WEIR_UNIT_TEST(inet_parse_localhost)
{
    char           name[128];
    weir_uint_t    i, v4;
    weir_array_t  *addrs;
    weir_addr_t   *addr;

    WEIR_REQUIRE(test_inet_parse("localhost:8080", 80, &addrs, name,
                                 sizeof(name))
                 == NULL);
    WEIR_REQUIRE(addrs->nelts >= 1);

    addr = addrs->elts;
    v4 = 0;

    for (i = 0; i < addrs->nelts; i++) {
        WEIR_CHECK_INT(weir_inet_get_port(addr[i].sockaddr), 8080);

        if (addr[i].sockaddr->sa_family == AF_INET) {
            v4++;
        }
    }

    /* IPv4 first, each address once */
    WEIR_CHECK_INT(v4, 1);
    WEIR_CHECK_STR(name, "127.0.0.1:8080");
}


WEIR_UNIT_TEST(inet_parse_errors)
{
    char           name[128];
    weir_array_t  *addrs;

    WEIR_CHECK_STR(test_inet_parse("127.0.0.1:0", 80, &addrs, name,
                                   sizeof(name)),
                   "invalid port");
    WEIR_CHECK_STR(test_inet_parse("127.0.0.1:65536", 80, &addrs, name,
                                   sizeof(name)),
                   "invalid port");
    WEIR_CHECK_STR(test_inet_parse("127.0.0.1:http", 80, &addrs, name,
                                   sizeof(name)),
                   "invalid port");
    WEIR_CHECK_STR(test_inet_parse("127.0.0.1:", 80, &addrs, name,
                                   sizeof(name)),
                   "invalid port");
    WEIR_CHECK_STR(test_inet_parse("99999", 80, &addrs, name, sizeof(name)),
                   "invalid port");
    WEIR_CHECK_STR(test_inet_parse("[::1", 80, &addrs, name, sizeof(name)),
                   "invalid address");
    WEIR_CHECK_STR(test_inet_parse("[zz::1]:80", 80, &addrs, name,
                                   sizeof(name)),
                   "invalid address");
    WEIR_CHECK_STR(test_inet_parse("[::1]x", 80, &addrs, name, sizeof(name)),
                   "invalid address");
    WEIR_CHECK_STR(test_inet_parse(":80", 80, &addrs, name, sizeof(name)),
                   "invalid address");
    WEIR_CHECK_STR(test_inet_parse("", 80, &addrs, name, sizeof(name)),
                   "invalid address");

    /* "host not found" is not checked: it would ask the system's DNS
     * server, and tests send nothing beyond the loopback */
}


WEIR_UNIT_TEST(inet_cmp_sockaddr)
{
    char           name[128];
    weir_array_t  *a, *b, *c, *u1, *u2;
    weir_addr_t   *aa, *ba, *ca, *u1a, *u2a;

    WEIR_REQUIRE(test_inet_parse("127.0.0.1:80", 0, &a, name, sizeof(name))
                 == NULL);
    WEIR_REQUIRE(test_inet_parse("127.0.0.1:81", 0, &b, name, sizeof(name))
                 == NULL);
    WEIR_REQUIRE(test_inet_parse("[::1]:80", 0, &c, name, sizeof(name))
                 == NULL);
    WEIR_REQUIRE(test_inet_parse("unix:/tmp/a", 0, &u1, name, sizeof(name))
                 == NULL);
    WEIR_REQUIRE(test_inet_parse("unix:/tmp/a", 0, &u2, name, sizeof(name))
                 == NULL);

    aa = a->elts;
    ba = b->elts;
    ca = c->elts;
    u1a = u1->elts;
    u2a = u2->elts;

    WEIR_CHECK_INT(weir_cmp_sockaddr(aa->sockaddr, aa->socklen,
                                     aa->sockaddr, aa->socklen, 1),
                   WEIR_OK);
    WEIR_CHECK_INT(weir_cmp_sockaddr(aa->sockaddr, aa->socklen,
                                     ba->sockaddr, ba->socklen, 1),
                   WEIR_DECLINED);
    WEIR_CHECK_INT(weir_cmp_sockaddr(aa->sockaddr, aa->socklen,
                                     ba->sockaddr, ba->socklen, 0),
                   WEIR_OK);
    WEIR_CHECK_INT(weir_cmp_sockaddr(aa->sockaddr, aa->socklen,
                                     ca->sockaddr, ca->socklen, 1),
                   WEIR_DECLINED);

    /* a unix address compares by path, whatever length counts the NUL */
    WEIR_CHECK_INT(weir_cmp_sockaddr(u1a->sockaddr, u1a->socklen,
                                     u2a->sockaddr,
                                     (socklen_t) (offsetof(struct sockaddr_un,
                                                           sun_path)
                                                  + sizeof("/tmp/a")),
                                     1),
                   WEIR_OK);
}


WEIR_UNIT_TEST(inet_sock_ntop)
{
    size_t                len;
    unsigned char         text[WEIR_SOCKADDR_STRLEN + 8];
    weir_sockaddr_t       sa;

    weir_memzero(&sa, sizeof(sa));
    sa.sockaddr_in.sin_family = AF_INET;
    sa.sockaddr_in.sin_port = htons(443);
    sa.sockaddr_in.sin_addr.s_addr = htonl(0x7f000001);

    len = weir_sock_ntop(&sa.sockaddr, sizeof(struct sockaddr_in), text,
                         sizeof(text), 1);
    WEIR_CHECK_MEM(text, len, "127.0.0.1:443");

    len = weir_sock_ntop(&sa.sockaddr, sizeof(struct sockaddr_in), text,
                         sizeof(text), 0);
    WEIR_CHECK_MEM(text, len, "127.0.0.1");

    /* truncated to the room given, NUL included */
    len = weir_sock_ntop(&sa.sockaddr, sizeof(struct sockaddr_in), text, 5,
                         1);
    WEIR_CHECK_MEM(text, len, "127.");

    weir_memzero(&sa, sizeof(sa));
    sa.sockaddr_in6.sin6_family = AF_INET6;
    sa.sockaddr_in6.sin6_port = htons(8080);
    sa.sockaddr_in6.sin6_addr = in6addr_loopback;

    len = weir_sock_ntop(&sa.sockaddr, sizeof(struct sockaddr_in6), text,
                         sizeof(text), 1);
    WEIR_CHECK_MEM(text, len, "[::1]:8080");

    len = weir_sock_ntop(&sa.sockaddr, sizeof(struct sockaddr_in6), text,
                         sizeof(text), 0);
    WEIR_CHECK_MEM(text, len, "::1");

    /* the unnamed peer of an accepted unix connection */
    weir_memzero(&sa, sizeof(sa));
    sa.sockaddr_un.sun_family = AF_UNIX;

    len = weir_sock_ntop(&sa.sockaddr, sizeof(sa_family_t), text,
                         sizeof(text), 0);
    WEIR_CHECK_MEM(text, len, "unix:");

    memcpy(sa.sockaddr_un.sun_path, "/run/w.sock", sizeof("/run/w.sock"));

    len = weir_sock_ntop(&sa.sockaddr, sizeof(struct sockaddr_un), text,
                         sizeof(text), 1);
    WEIR_CHECK_MEM(text, len, "unix:/run/w.sock");
}


static weir_int_t
test_inet_cidr(const char *text, weir_cidr_t *cidr)
{
    weir_str_t  s;

    s.data = (unsigned char *) text;
    s.len = strlen(text);

    return weir_parse_cidr(&s, cidr);
}


static weir_uint_t
test_inet_in(weir_cidr_t *cidr, const char *addr)
{
    char           name[128];
    weir_array_t  *a;
    weir_addr_t   *aa;

    if (test_inet_parse(addr, 80, &a, name, sizeof(name)) != NULL) {
        return 2;
    }

    aa = a->elts;

    return weir_cidr_match(cidr, aa->sockaddr);
}


WEIR_UNIT_TEST(inet_cidr)
{
    weir_cidr_t  c;

    WEIR_CHECK_INT(test_inet_cidr("10.0.0.0/8", &c), WEIR_OK);
    WEIR_CHECK_INT(test_inet_in(&c, "10.200.3.4:80"), 1);
    WEIR_CHECK_INT(test_inet_in(&c, "11.0.0.1:80"), 0);
    WEIR_CHECK_INT(test_inet_in(&c, "[::ffff:10.1.2.3]:80"), 1);
    WEIR_CHECK_INT(test_inet_in(&c, "[::1]:80"), 0);

    WEIR_CHECK_INT(test_inet_cidr("127.0.0.1", &c), WEIR_OK);
    WEIR_CHECK_INT(test_inet_in(&c, "127.0.0.1:80"), 1);
    WEIR_CHECK_INT(test_inet_in(&c, "127.0.0.2:80"), 0);

    /* low bits set: valid, cleared, and said */
    WEIR_CHECK_INT(test_inet_cidr("192.168.1.7/24", &c), WEIR_DECLINED);
    WEIR_CHECK_INT(test_inet_in(&c, "192.168.1.200:80"), 1);

    WEIR_CHECK_INT(test_inet_cidr("2001:db8::/32", &c), WEIR_OK);
    WEIR_CHECK_INT(test_inet_in(&c, "[2001:db8:1::5]:80"), 1);
    WEIR_CHECK_INT(test_inet_in(&c, "[2001:db9::5]:80"), 0);
    WEIR_CHECK_INT(test_inet_in(&c, "10.0.0.1:80"), 0);

    WEIR_CHECK_INT(test_inet_cidr("10.0.0.0/33", &c), WEIR_ERROR);
    WEIR_CHECK_INT(test_inet_cidr("10.0.0.0/", &c), WEIR_ERROR);
    WEIR_CHECK_INT(test_inet_cidr("::/129", &c), WEIR_ERROR);
    WEIR_CHECK_INT(test_inet_cidr("host", &c), WEIR_ERROR);
    WEIR_CHECK_INT(test_inet_cidr("", &c), WEIR_ERROR);
}
