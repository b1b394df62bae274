#ifndef _WEIR_INET_H_INCLUDED_
#define _WEIR_INET_H_INCLUDED_

#define WEIR_SOCKADDR_STRLEN   (sizeof("unix:") - 1 + 108)
#define WEIR_SOCKADDRLEN       sizeof(struct sockaddr_storage)

typedef union {
    struct sockaddr           sockaddr;
    struct sockaddr_in        sockaddr_in;
    struct sockaddr_in6       sockaddr_in6;
    struct sockaddr_un        sockaddr_un;
    struct sockaddr_storage   storage;
} weir_sockaddr_t;

typedef struct {
    struct sockaddr          *sockaddr;
    socklen_t                 socklen;
    weir_str_t                name;     /* "127.0.0.1:8080", "[::1]:80" */
} weir_addr_t;

/*
 * Parses a listen-style address: "8080", "*:8080", "127.0.0.1:8080",
 * "[::1]:8080", "[::]:8080", "unix:/path", "localhost:8080" (resolved
 * now). Fills *addrs with one or more addresses. Returns NULL or an error
 * string for the configuration log.
 */
char *weir_parse_addr_port(weir_pool_t *pool, weir_str_t *text,
    weir_uint_t default_port, weir_array_t *addrs /* of weir_addr_t */);

/* "127.0.0.1:8080", "[::1]:8080" or "unix:/path"; returns the length */
size_t weir_sock_ntop(struct sockaddr *sa, socklen_t socklen,
    unsigned char *text, size_t len, weir_uint_t port);
/* are the two addresses the same (family, address, port, path)? */
weir_int_t weir_cmp_sockaddr(struct sockaddr *sa1, socklen_t slen1,
    struct sockaddr *sa2, socklen_t slen2, weir_uint_t cmp_port);
in_port_t weir_inet_get_port(struct sockaddr *sa);

/* an address block: "192.0.2.0/24", "2001:db8::/32", or one address */
typedef struct {
    int                       family;   /* AF_INET or AF_INET6 */
    unsigned char             addr[16]; /* masked */
    unsigned char             mask[16];
} weir_cidr_t;

/* WEIR_OK; WEIR_DECLINED: valid, but bits below the prefix were set (and
 * are cleared: the caller may warn); WEIR_ERROR: not an address block */
weir_int_t weir_parse_cidr(weir_str_t *text, weir_cidr_t *cidr);
/* is sa in the block? An IPv4-mapped IPv6 address is its IPv4 one */
weir_uint_t weir_cidr_match(weir_cidr_t *cidr, struct sockaddr *sa);

#endif /* _WEIR_INET_H_INCLUDED_ */
