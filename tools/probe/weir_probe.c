/*
 * weir-probe: the load generator (`weir-probe client`, the default) and
 * the benchmark origin (`weir-probe origin`). See tools/probe/README.md.
 */

#include "weir_config.h"
#include "weir_core.h"
#include "weir_probe.h"


static void probe_usage(void);


int
main(int argc, char **argv)
{
    struct rlimit  rl;

    /* a peer closing mid-write is an error to count, not a reason to die */
    signal(SIGPIPE, SIG_IGN);

    /* thousands of connections need more than the usual 1024 descriptors */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void) setrlimit(RLIMIT_NOFILE, &rl);
    }

    if (argc > 1 && strcmp(argv[1], "origin") == 0) {
        return probe_origin_main(argc - 1, argv + 1);
    }

    if (argc > 1 && strcmp(argv[1], "hold") == 0) {
        return probe_hold_main(argc - 1, argv + 1);
    }

    if (argc > 1 && strcmp(argv[1], "client") == 0) {
        return probe_client_main(argc - 1, argv + 1);
    }

    if (argc > 1
        && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0))
    {
        probe_usage();
        return 0;
    }

    return probe_client_main(argc, argv);
}


static void
probe_usage(void)
{
    printf("usage: weir-probe [client] [options] -u URL [-u URL ...]\n"
           "       weir-probe origin -l ADDR:PORT [-l ADDR:PORT ...]\n"
           "       weir-probe hold -c N -u URL [-d SECONDS] [-T SECONDS]\n"
           "\n"
           "weir-probe client -h, weir-probe origin -h and weir-probe hold -h "
           "list the options;\n"
           "see tools/probe/README.md.\n");
}


uint64_t
probe_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (uint64_t) ts.tv_sec * PROBE_NS_PER_SEC + (uint64_t) ts.tv_nsec;
}


int
probe_nonblock(int fd)
{
    int  flags;

    flags = fcntl(fd, F_GETFL);
    if (flags == -1) {
        return -1;
    }

    return fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}


/*
 * "HOST:PORT", "[V6]:PORT": numeric addresses only, so weir-probe never
 * reaches a host it was not given literally (names are resolved by the
 * client's URL parser, once, at start).
 */

int
probe_parse_addr(const char *text, struct sockaddr_storage *ss,
    socklen_t *len, char *host, size_t hostlen, int *port)
{
    char                  buf[256];
    char                 *p, *colon, *end;
    long                  n;
    struct sockaddr_in   *sin;
    struct sockaddr_in6  *sin6;

    if (strlen(text) >= sizeof(buf)) {
        return -1;
    }

    strcpy(buf, text);
    p = buf;

    if (*p == '[') {
        end = strchr(p, ']');
        if (end == NULL || end[1] != ':') {
            return -1;
        }
        *end = '\0';
        p++;
        colon = end + 1;

    } else {
        colon = strrchr(p, ':');
        if (colon == NULL) {
            return -1;
        }
        *colon = '\0';
    }

    n = strtol(colon + 1, &end, 10);
    if (*end != '\0' || end == colon + 1 || n < 0 || n > 65535) {
        return -1;
    }

    memset(ss, 0, sizeof(*ss));

    sin = (struct sockaddr_in *) ss;
    sin6 = (struct sockaddr_in6 *) ss;

    if (inet_pton(AF_INET, p, &sin->sin_addr) == 1) {
        sin->sin_family = AF_INET;
        sin->sin_port = htons((uint16_t) n);
        *len = sizeof(struct sockaddr_in);

    } else if (inet_pton(AF_INET6, p, &sin6->sin6_addr) == 1) {
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons((uint16_t) n);
        *len = sizeof(struct sockaddr_in6);

    } else {
        return -1;
    }

    if (host != NULL) {
        snprintf(host, hostlen, "%s", p);
    }

    if (port != NULL) {
        *port = (int) n;
    }

    return 0;
}


void
probe_hist_init(probe_hist_t *h)
{
    memset(h, 0, sizeof(*h));
    h->min = UINT64_MAX;
}


unsigned
probe_hist_index(uint64_t v)
{
    unsigned  msb, shift;

    if (v < 2 * PROBE_HIST_SUB) {
        return (unsigned) v;
    }

    msb = 63 - (unsigned) __builtin_clzll(v);
    shift = msb - PROBE_HIST_SUB_BITS;

    return 2 * PROBE_HIST_SUB
           + (msb - PROBE_HIST_SUB_BITS - 1) * PROBE_HIST_SUB
           + (unsigned) ((v >> shift) - PROBE_HIST_SUB);
}


/* the middle of the counter's range: at most half a step either way */

uint64_t
probe_hist_index_value(unsigned idx)
{
    unsigned  b, s, shift;

    if (idx < 2 * PROBE_HIST_SUB) {
        return idx;
    }

    b = (idx - 2 * PROBE_HIST_SUB) / PROBE_HIST_SUB;
    s = (idx - 2 * PROBE_HIST_SUB) % PROBE_HIST_SUB + PROBE_HIST_SUB;
    shift = b + 1;

    return ((uint64_t) s << shift) + ((1ULL << shift) >> 1);
}


void
probe_hist_record(probe_hist_t *h, uint64_t ns)
{
    if (ns < PROBE_HIST_MIN) {
        ns = PROBE_HIST_MIN;
    }

    if (ns > PROBE_HIST_MAX) {
        ns = PROBE_HIST_MAX;
    }

    h->counts[probe_hist_index(ns)]++;
    h->total++;
    h->sum += ns;

    if (ns > h->max) {
        h->max = ns;
    }

    if (ns < h->min) {
        h->min = ns;
    }
}


uint64_t
probe_hist_percentile(probe_hist_t *h, double pct)
{
    unsigned  i;
    uint64_t  want, seen, v;

    if (h->total == 0) {
        return 0;
    }

    want = (uint64_t) (pct / 100.0 * (double) h->total + 0.5);
    if (want < 1) {
        want = 1;
    }

    if (want > h->total) {
        want = h->total;
    }

    seen = 0;

    for (i = 0; i < PROBE_HIST_SIZE; i++) {
        seen += h->counts[i];

        if (seen >= want) {
            v = probe_hist_index_value(i);
            /* never beyond what was seen */
            return v > h->max ? h->max : (v < h->min ? h->min : v);
        }
    }

    return h->max;
}


/* name is lowercase; the length is compared first, so most calls end there */

int
probe_h1_header_is(u_char *line, u_char *colon, const char *name, size_t len)
{
    return (size_t) (colon - line) == len
           && (line[0] | 0x20) == (u_char) name[0]
           && strncasecmp((char *) line, name, len) == 0;
}


/*
 * The first "\r\n" in [p, p + len), or NULL: memchr() for the '\n' is
 * much cheaper than memmem() for the pair.
 */

u_char *
probe_crlf(u_char *p, size_t len)
{
    u_char  *start, *end, *nl;

    start = p;
    end = p + len;

    for ( ;; ) {
        nl = memchr(p, '\n', (size_t) (end - p));
        if (nl == NULL) {
            return NULL;
        }

        if (nl > start && nl[-1] == '\r') {
            return nl - 1;
        }

        p = nl + 1;
    }
}


/* the first "\r\n\r\n" in [p, p + len), the end of a head, or NULL */

u_char *
probe_head_end(u_char *p, size_t len)
{
    u_char  *start, *end, *nl;

    start = p;
    end = p + len;

    for ( ;; ) {
        nl = memchr(p, '\n', (size_t) (end - p));
        if (nl == NULL) {
            return NULL;
        }

        if (nl - start >= 3 && nl[-1] == '\r' && nl[-2] == '\n'
            && nl[-3] == '\r')
        {
            return nl - 3;
        }

        p = nl + 1;
    }
}


int
probe_h1_value_has(u_char *v, u_char *eol, const char *token)
{
    size_t  len;

    len = strlen(token);

    for ( /* void */ ; v + len <= eol; v++) {
        if (strncasecmp((char *) v, token, len) == 0) {
            return 1;
        }
    }

    return 0;
}


/*
 * SHA-1 (FIPS 180-4) and base64, only for Sec-WebSocket-Accept: the probe
 * builds without OpenSSL too. Not constant-time, and need not be.
 */

#define PROBE_ROL(x, n)  (((x) << (n)) | ((x) >> (32 - (n))))

static void
probe_sha1_block(uint32_t h[5], const u_char *p)
{
    int       i;
    uint32_t  w[80], a, b, c, d, e, f, k, t;

    for (i = 0; i < 16; i++) {
        w[i] = (uint32_t) p[4 * i] << 24 | (uint32_t) p[4 * i + 1] << 16
               | (uint32_t) p[4 * i + 2] << 8 | (uint32_t) p[4 * i + 3];
    }

    for (i = 16; i < 80; i++) {
        w[i] = PROBE_ROL(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    }

    a = h[0];
    b = h[1];
    c = h[2];
    d = h[3];
    e = h[4];

    for (i = 0; i < 80; i++) {
        if (i < 20) {
            f = (b & c) | (~b & d);
            k = 0x5a827999;

        } else if (i < 40) {
            f = b ^ c ^ d;
            k = 0x6ed9eba1;

        } else if (i < 60) {
            f = (b & c) | (b & d) | (c & d);
            k = 0x8f1bbcdc;

        } else {
            f = b ^ c ^ d;
            k = 0xca62c1d6;
        }

        t = PROBE_ROL(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = PROBE_ROL(b, 30);
        b = a;
        a = t;
    }

    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}


void
probe_sha1(const u_char *data, size_t len, u_char out[20])
{
    int       i;
    size_t    n;
    u_char    block[64];
    uint32_t  h[5] = {
        0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0
    };
    uint64_t  bits;

    bits = (uint64_t) len * 8;

    for (n = 0; len - n >= 64; n += 64) {
        probe_sha1_block(h, data + n);
    }

    memset(block, 0, sizeof(block));
    memcpy(block, data + n, len - n);
    block[len - n] = 0x80;

    if (len - n >= 56) {
        probe_sha1_block(h, block);
        memset(block, 0, sizeof(block));
    }

    for (i = 0; i < 8; i++) {
        block[63 - i] = (u_char) (bits >> (8 * i));
    }

    probe_sha1_block(h, block);

    for (i = 0; i < 20; i++) {
        out[i] = (u_char) (h[i / 4] >> (24 - 8 * (i % 4)));
    }
}


/* base64 of [src, src + len) into dst, NUL-terminated; returns its length */

size_t
probe_base64(const u_char *src, size_t len, char *dst)
{
    size_t       i, n;
    uint32_t     v;
    static const char  tab[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

    n = 0;

    for (i = 0; i + 2 < len; i += 3) {
        v = (uint32_t) src[i] << 16 | (uint32_t) src[i + 1] << 8 | src[i + 2];
        dst[n++] = tab[v >> 18];
        dst[n++] = tab[(v >> 12) & 63];
        dst[n++] = tab[(v >> 6) & 63];
        dst[n++] = tab[v & 63];
    }

    if (i < len) {
        v = (uint32_t) src[i] << 16
            | (i + 1 < len ? (uint32_t) src[i + 1] << 8 : 0);
        dst[n++] = tab[v >> 18];
        dst[n++] = tab[(v >> 12) & 63];
        dst[n++] = i + 1 < len ? tab[(v >> 6) & 63] : '=';
        dst[n++] = '=';
    }

    dst[n] = '\0';

    return n;
}


/* Sec-WebSocket-Accept of a key (RFC 6455, 4.2.2): 28 chars and a NUL */

void
probe_ws_accept(const u_char *key, size_t len, char out[PROBE_WS_ACCEPT_LEN])
{
    u_char         buf[128 + 36], digest[20];
    static const char  guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

    if (len > 128) {
        len = 128;
    }

    memcpy(buf, key, len);
    memcpy(buf + len, guid, sizeof(guid) - 1);
    probe_sha1(buf, len + sizeof(guid) - 1, digest);
    (void) probe_base64(digest, sizeof(digest), out);
}
