#include "weir_config.h"
#include "weir_core.h"


static char *weir_parse_unix(weir_pool_t *pool, weir_str_t *text,
    weir_array_t *addrs);
static char *weir_parse_inet6(weir_pool_t *pool, weir_str_t *text,
    weir_uint_t default_port, weir_array_t *addrs);
static char *weir_parse_host(weir_pool_t *pool, weir_str_t *host,
    weir_uint_t port, weir_array_t *addrs);
static weir_int_t weir_parse_port(unsigned char *p, size_t len);
static weir_int_t weir_add_addr(weir_pool_t *pool, weir_array_t *addrs,
    struct sockaddr *sa, socklen_t socklen);


char *
weir_parse_addr_port(weir_pool_t *pool, weir_str_t *text,
    weir_uint_t default_port, weir_array_t *addrs)
{
    unsigned char        *p, *colon, *last;
    weir_int_t            port;
    weir_str_t            host;
    weir_sockaddr_t       sa;
    struct in6_addr       in6;
    size_t                i;
    weir_uint_t           colons;
    char                  buf[INET6_ADDRSTRLEN];

    if (addrs->elts == NULL) {
        if (weir_array_init(addrs, pool, 2, sizeof(weir_addr_t)) != WEIR_OK) {
            return "invalid address";
        }
    }

    if (text->len == 0) {
        return "invalid address";
    }

    if (text->len >= 5 && weir_strncasecmp(text->data,
                                           (unsigned char *) "unix:", 5) == 0)
    {
        return weir_parse_unix(pool, text, addrs);
    }

    if (text->data[0] == '[') {
        return weir_parse_inet6(pool, text, default_port, addrs);
    }

    p = text->data;
    last = p + text->len;

    colon = NULL;
    colons = 0;

    for (i = 0; i < text->len; i++) {
        if (p[i] == ':') {
            colon = &p[i];
            colons++;
        }
    }

    if (colons > 1) {
        /* a bare IPv6 address: no port can follow it unbracketed */

        if (text->len >= sizeof(buf)) {
            return "invalid address";
        }

        weir_memcpy(buf, p, text->len);
        buf[text->len] = '\0';

        if (inet_pton(AF_INET6, buf, &in6) != 1) {
            return "invalid address";
        }

        if (default_port == 0 || default_port > 65535) {
            return "invalid port";
        }

        weir_memzero(&sa, sizeof(weir_sockaddr_t));
        sa.sockaddr_in6.sin6_family = AF_INET6;
        sa.sockaddr_in6.sin6_addr = in6;
        sa.sockaddr_in6.sin6_port = htons((in_port_t) default_port);

        if (weir_add_addr(pool, addrs, &sa.sockaddr,
                          sizeof(struct sockaddr_in6))
            != WEIR_OK)
        {
            return "invalid address";
        }

        return NULL;
    }

    if (colon) {
        port = weir_parse_port(colon + 1, (size_t) (last - colon - 1));
        if (port == WEIR_ERROR) {
            return "invalid port";
        }

        host.data = p;
        host.len = (size_t) (colon - p);

    } else {
        port = weir_parse_port(p, text->len);

        if (port != WEIR_ERROR) {
            /* "8080": every IPv4 address */
            host.data = (unsigned char *) "*";
            host.len = 1;

        } else {
            for (i = 0; i < text->len; i++) {
                if (p[i] < '0' || p[i] > '9') {
                    break;
                }
            }

            if (i == text->len) {
                /* all digits, but not a valid port */
                return "invalid port";
            }

            if (default_port == 0 || default_port > 65535) {
                return "invalid port";
            }

            port = (weir_int_t) default_port;
            host = *text;
        }
    }

    if (host.len == 0) {
        return "invalid address";
    }

    return weir_parse_host(pool, &host, (weir_uint_t) port, addrs);
}


static weir_int_t
weir_parse_port(unsigned char *p, size_t len)
{
    weir_int_t  port;

    if (len == 0 || len > 5) {
        return WEIR_ERROR;
    }

    port = weir_atoi(p, len);

    if (port < 1 || port > 65535) {
        return WEIR_ERROR;
    }

    return port;
}


static char *
weir_parse_unix(weir_pool_t *pool, weir_str_t *text, weir_array_t *addrs)
{
    size_t            len;
    unsigned char    *path;
    weir_sockaddr_t   sa;

    path = text->data + 5;
    len = text->len - 5;

    if (len == 0) {
        return "no path in the unix domain socket";
    }

    /* sun_path needs room for the terminating NUL */
    if (len >= sizeof(sa.sockaddr_un.sun_path)) {
        return "too long path in the unix domain socket";
    }

    if (memchr(path, '\0', len) != NULL) {
        return "invalid address";
    }

    weir_memzero(&sa, sizeof(weir_sockaddr_t));
    sa.sockaddr_un.sun_family = AF_UNIX;
    weir_memcpy(sa.sockaddr_un.sun_path, path, len);

    if (weir_add_addr(pool, addrs, &sa.sockaddr, sizeof(struct sockaddr_un))
        != WEIR_OK)
    {
        return "invalid address";
    }

    return NULL;
}


static char *
weir_parse_inet6(weir_pool_t *pool, weir_str_t *text,
    weir_uint_t default_port, weir_array_t *addrs)
{
    unsigned char    *p, *last, *end;
    size_t            len;
    weir_int_t        port;
    weir_sockaddr_t   sa;
    char              buf[INET6_ADDRSTRLEN];

    p = text->data + 1;
    last = text->data + text->len;

    end = weir_strlchr(p, last, ']');
    if (end == NULL) {
        return "invalid address";
    }

    len = (size_t) (end - p);

    if (len == 0 || len >= sizeof(buf)) {
        return "invalid address";
    }

    weir_memcpy(buf, p, len);
    buf[len] = '\0';

    weir_memzero(&sa, sizeof(weir_sockaddr_t));
    sa.sockaddr_in6.sin6_family = AF_INET6;

    if (inet_pton(AF_INET6, buf, &sa.sockaddr_in6.sin6_addr) != 1) {
        return "invalid address";
    }

    end++;

    if (end == last) {
        if (default_port == 0 || default_port > 65535) {
            return "invalid port";
        }

        port = (weir_int_t) default_port;

    } else {
        if (*end != ':') {
            return "invalid address";
        }

        end++;

        port = weir_parse_port(end, (size_t) (last - end));
        if (port == WEIR_ERROR) {
            return "invalid port";
        }
    }

    sa.sockaddr_in6.sin6_port = htons((in_port_t) port);

    if (weir_add_addr(pool, addrs, &sa.sockaddr, sizeof(struct sockaddr_in6))
        != WEIR_OK)
    {
        return "invalid address";
    }

    return NULL;
}


static char *
weir_parse_host(weir_pool_t *pool, weir_str_t *host, weir_uint_t port,
    weir_array_t *addrs)
{
    int               rc;
    char             *name;
    weir_str_t        err;
    weir_uint_t       found;
    struct addrinfo   hints, *res, *rp;
    weir_sockaddr_t   sa;

    weir_memzero(&sa, sizeof(weir_sockaddr_t));

    if (host->len == 1 && host->data[0] == '*') {
        sa.sockaddr_in.sin_family = AF_INET;
        sa.sockaddr_in.sin_addr.s_addr = htonl(INADDR_ANY);
        sa.sockaddr_in.sin_port = htons((in_port_t) port);

        if (weir_add_addr(pool, addrs, &sa.sockaddr,
                          sizeof(struct sockaddr_in))
            != WEIR_OK)
        {
            return "invalid address";
        }

        return NULL;
    }

    name = weir_pstrdupz(pool, host);
    if (name == NULL) {
        return "invalid address";
    }

    if (inet_pton(AF_INET, name, &sa.sockaddr_in.sin_addr) == 1) {
        sa.sockaddr_in.sin_family = AF_INET;
        sa.sockaddr_in.sin_port = htons((in_port_t) port);

        if (weir_add_addr(pool, addrs, &sa.sockaddr,
                          sizeof(struct sockaddr_in))
            != WEIR_OK)
        {
            return "invalid address";
        }

        return NULL;
    }

    weir_memzero(&hints, sizeof(struct addrinfo));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_ADDRCONFIG;

    rc = getaddrinfo(name, NULL, &hints, &res);

    if (rc != 0 && rc != EAI_SYSTEM) {
        /* AI_ADDRCONFIG hides ::1 and 127.0.0.1 on a host whose only
         * interface is the loopback: ask again without it */
        hints.ai_flags = 0;
        rc = getaddrinfo(name, NULL, &hints, &res);
    }

    if (rc != 0) {
        if (weir_pstrfmt(pool, &err, "host not found in \"%.*s\"",
                         WEIR_STR_ARG(*host))
            != WEIR_OK)
        {
            return "host not found";
        }

        return (char *) err.data;
    }

    found = 0;

    /* IPv4 first, as a listen of "localhost" is expected to get 127.0.0.1
     * before ::1; duplicates (one per protocol) are skipped */

    for (rp = res; rp; rp = rp->ai_next) {
        if (rp->ai_family != AF_INET
            || rp->ai_addrlen != sizeof(struct sockaddr_in))
        {
            continue;
        }

        weir_memcpy(&sa.sockaddr_in, rp->ai_addr, sizeof(struct sockaddr_in));
        sa.sockaddr_in.sin_port = htons((in_port_t) port);

        if (weir_add_addr(pool, addrs, &sa.sockaddr,
                          sizeof(struct sockaddr_in))
            != WEIR_OK)
        {
            freeaddrinfo(res);
            return "invalid address";
        }

        found++;
    }

    for (rp = res; rp; rp = rp->ai_next) {
        if (rp->ai_family != AF_INET6
            || rp->ai_addrlen != sizeof(struct sockaddr_in6))
        {
            continue;
        }

        weir_memzero(&sa, sizeof(weir_sockaddr_t));
        weir_memcpy(&sa.sockaddr_in6, rp->ai_addr,
                    sizeof(struct sockaddr_in6));
        sa.sockaddr_in6.sin6_port = htons((in_port_t) port);

        if (weir_add_addr(pool, addrs, &sa.sockaddr,
                          sizeof(struct sockaddr_in6))
            != WEIR_OK)
        {
            freeaddrinfo(res);
            return "invalid address";
        }

        found++;
    }

    freeaddrinfo(res);

    if (found == 0) {
        if (weir_pstrfmt(pool, &err, "host not found in \"%.*s\"",
                         WEIR_STR_ARG(*host))
            != WEIR_OK)
        {
            return "host not found";
        }

        return (char *) err.data;
    }

    return NULL;
}


/* appends a copy of sa unless the same address is already in addrs */

static weir_int_t
weir_add_addr(weir_pool_t *pool, weir_array_t *addrs, struct sockaddr *sa,
    socklen_t socklen)
{
    size_t            len;
    weir_uint_t       i;
    weir_addr_t      *addr;
    unsigned char    *text;
    struct sockaddr  *copy;

    addr = addrs->elts;

    for (i = 0; i < addrs->nelts; i++) {
        if (weir_cmp_sockaddr(addr[i].sockaddr, addr[i].socklen, sa, socklen,
                              1)
            == WEIR_OK)
        {
            return WEIR_OK;
        }
    }

    copy = weir_pcalloc(pool, sizeof(weir_sockaddr_t));
    if (copy == NULL) {
        return WEIR_ERROR;
    }

    weir_memcpy(copy, sa, socklen);

    text = weir_pnalloc(pool, WEIR_SOCKADDR_STRLEN + sizeof(":65535"));
    if (text == NULL) {
        return WEIR_ERROR;
    }

    len = weir_sock_ntop(copy, socklen, text,
                         WEIR_SOCKADDR_STRLEN + sizeof(":65535"), 1);

    addr = weir_array_push(addrs);
    if (addr == NULL) {
        return WEIR_ERROR;
    }

    addr->sockaddr = copy;
    addr->socklen = socklen;
    addr->name.data = text;
    addr->name.len = len;

    return WEIR_OK;
}


size_t
weir_sock_ntop(struct sockaddr *sa, socklen_t socklen, unsigned char *text,
    size_t len, weir_uint_t port)
{
    char                  addr[INET6_ADDRSTRLEN];
    size_t                n;
    unsigned char        *p;
    struct sockaddr_in   *sin;
    struct sockaddr_in6  *sin6;
    struct sockaddr_un   *saun;

    if (len == 0) {
        return 0;
    }

    text[0] = '\0';

    switch (sa->sa_family) {

    case AF_INET:
        if (socklen < sizeof(struct sockaddr_in)) {
            return 0;
        }

        sin = (struct sockaddr_in *) sa;

        if (inet_ntop(AF_INET, &sin->sin_addr, addr, sizeof(addr)) == NULL) {
            return 0;
        }

        if (port) {
            p = weir_slprintf(text, text + len, "%s:%u", addr,
                              (unsigned) ntohs(sin->sin_port));
        } else {
            p = weir_slprintf(text, text + len, "%s", addr);
        }

        return (size_t) (p - text);

    case AF_INET6:
        if (socklen < sizeof(struct sockaddr_in6)) {
            return 0;
        }

        sin6 = (struct sockaddr_in6 *) sa;

        if (inet_ntop(AF_INET6, &sin6->sin6_addr, addr, sizeof(addr))
            == NULL)
        {
            return 0;
        }

        if (port) {
            p = weir_slprintf(text, text + len, "[%s]:%u", addr,
                              (unsigned) ntohs(sin6->sin6_port));
        } else {
            p = weir_slprintf(text, text + len, "%s", addr);
        }

        return (size_t) (p - text);

    case AF_UNIX:
        saun = (struct sockaddr_un *) sa;

        if (socklen <= offsetof(struct sockaddr_un, sun_path)) {
            /* an unnamed socket: the peer of an accepted connection */
            p = weir_slprintf(text, text + len, "unix:");
            return (size_t) (p - text);
        }

        n = socklen - offsetof(struct sockaddr_un, sun_path);

        if (n > sizeof(saun->sun_path)) {
            n = sizeof(saun->sun_path);
        }

        if (saun->sun_path[0] == '\0') {
            /* the Linux abstract namespace: shown with '@' as ss(8) does */
            p = weir_slprintf(text, text + len, "unix:@%.*s",
                              (int) strnlen(saun->sun_path + 1, n - 1),
                              saun->sun_path + 1);
            return (size_t) (p - text);
        }

        p = weir_slprintf(text, text + len, "unix:%.*s",
                          (int) strnlen(saun->sun_path, n), saun->sun_path);

        return (size_t) (p - text);

    default:
        return 0;
    }
}


/* WEIR_OK when the addresses are the same, WEIR_DECLINED otherwise */

weir_int_t
weir_cmp_sockaddr(struct sockaddr *sa1, socklen_t slen1,
    struct sockaddr *sa2, socklen_t slen2, weir_uint_t cmp_port)
{
    size_t                len1, len2;
    struct sockaddr_in   *sin1, *sin2;
    struct sockaddr_in6  *sin61, *sin62;
    struct sockaddr_un   *saun1, *saun2;

    if (sa1->sa_family != sa2->sa_family) {
        return WEIR_DECLINED;
    }

    switch (sa1->sa_family) {

    case AF_INET:
        if (slen1 < sizeof(struct sockaddr_in)
            || slen2 < sizeof(struct sockaddr_in))
        {
            return WEIR_DECLINED;
        }

        sin1 = (struct sockaddr_in *) sa1;
        sin2 = (struct sockaddr_in *) sa2;

        if (cmp_port && sin1->sin_port != sin2->sin_port) {
            return WEIR_DECLINED;
        }

        if (sin1->sin_addr.s_addr != sin2->sin_addr.s_addr) {
            return WEIR_DECLINED;
        }

        return WEIR_OK;

    case AF_INET6:
        if (slen1 < sizeof(struct sockaddr_in6)
            || slen2 < sizeof(struct sockaddr_in6))
        {
            return WEIR_DECLINED;
        }

        sin61 = (struct sockaddr_in6 *) sa1;
        sin62 = (struct sockaddr_in6 *) sa2;

        if (cmp_port && sin61->sin6_port != sin62->sin6_port) {
            return WEIR_DECLINED;
        }

        if (weir_memcmp(&sin61->sin6_addr, &sin62->sin6_addr, 16) != 0) {
            return WEIR_DECLINED;
        }

        return WEIR_OK;

    case AF_UNIX:
        saun1 = (struct sockaddr_un *) sa1;
        saun2 = (struct sockaddr_un *) sa2;

        len1 = slen1 > offsetof(struct sockaddr_un, sun_path)
               ? slen1 - offsetof(struct sockaddr_un, sun_path) : 0;
        len2 = slen2 > offsetof(struct sockaddr_un, sun_path)
               ? slen2 - offsetof(struct sockaddr_un, sun_path) : 0;

        len1 = weir_min(len1, sizeof(saun1->sun_path));
        len2 = weir_min(len2, sizeof(saun2->sun_path));

        /* a pathname socket's length may or may not count the NUL */
        if (len1 && saun1->sun_path[0] != '\0') {
            len1 = strnlen(saun1->sun_path, len1);
        }

        if (len2 && saun2->sun_path[0] != '\0') {
            len2 = strnlen(saun2->sun_path, len2);
        }

        if (len1 != len2
            || weir_memcmp(saun1->sun_path, saun2->sun_path, len1) != 0)
        {
            return WEIR_DECLINED;
        }

        return WEIR_OK;

    default:
        return WEIR_DECLINED;
    }
}


in_port_t
weir_inet_get_port(struct sockaddr *sa)
{
    switch (sa->sa_family) {

    case AF_INET:
        return ntohs(((struct sockaddr_in *) sa)->sin_port);

    case AF_INET6:
        return ntohs(((struct sockaddr_in6 *) sa)->sin6_port);

    default:
        return 0;
    }
}


weir_int_t
weir_parse_cidr(weir_str_t *text, weir_cidr_t *cidr)
{
    int             bits, max, rc;
    size_t          k, len;
    char            buf[64];
    weir_int_t      ret;
    weir_str_t      addr, prefix;
    unsigned char  *slash;

    weir_memzero(cidr, sizeof(weir_cidr_t));

    addr = *text;
    prefix.len = 0;
    prefix.data = NULL;

    slash = weir_strlchr(text->data, text->data + text->len, '/');

    if (slash) {
        addr.len = slash - text->data;
        prefix.data = slash + 1;
        prefix.len = text->data + text->len - prefix.data;
    }

    if (addr.len == 0 || addr.len >= sizeof(buf)) {
        return WEIR_ERROR;
    }

    weir_memcpy(buf, addr.data, addr.len);
    buf[addr.len] = '\0';

    if (weir_strchr(buf, ':')) {
        cidr->family = AF_INET6;
        len = 16;
        rc = inet_pton(AF_INET6, buf, cidr->addr);

    } else {
        cidr->family = AF_INET;
        len = 4;
        rc = inet_pton(AF_INET, buf, cidr->addr);
    }

    if (rc != 1) {
        return WEIR_ERROR;
    }

    max = (int) len * 8;
    bits = max;

    if (slash) {
        bits = (int) weir_atoi(prefix.data, prefix.len);

        if (prefix.len == 0 || bits == WEIR_ERROR || bits > max) {
            return WEIR_ERROR;
        }
    }

    for (k = 0; k < len; k++) {
        if (bits >= 8) {
            cidr->mask[k] = 0xff;
            bits -= 8;

        } else {
            cidr->mask[k] = (unsigned char) (0xff00 >> bits);
            bits = 0;
        }
    }

    ret = WEIR_OK;

    for (k = 0; k < len; k++) {
        if (cidr->addr[k] & ~cidr->mask[k]) {
            ret = WEIR_DECLINED;
        }

        cidr->addr[k] &= cidr->mask[k];
    }

    return ret;
}


weir_uint_t
weir_cidr_match(weir_cidr_t *cidr, struct sockaddr *sa)
{
    int             family;
    size_t          k, len;
    unsigned char   addr[16];

    family = sa->sa_family;

    if (family == AF_INET) {
        weir_memcpy(addr, &((struct sockaddr_in *) (void *) sa)->sin_addr, 4);
        len = 4;

    } else if (family == AF_INET6) {
        weir_memcpy(addr, &((struct sockaddr_in6 *) (void *) sa)->sin6_addr,
                    16);
        len = 16;

        if (IN6_IS_ADDR_V4MAPPED(
                &((struct sockaddr_in6 *) (void *) sa)->sin6_addr))
        {
            weir_memmove(addr, addr + 12, 4);
            family = AF_INET;
            len = 4;
        }

    } else {
        return 0;
    }

    if (family != cidr->family) {
        return 0;
    }

    for (k = 0; k < len; k++) {
        if ((addr[k] & cidr->mask[k]) != cidr->addr[k]) {
            return 0;
        }
    }

    return 1;
}
