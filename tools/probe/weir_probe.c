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
           "\n"
           "weir-probe client -h and weir-probe origin -h list the "
           "options;\n"
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


int
probe_h1_header_is(u_char *line, u_char *colon, const char *name)
{
    size_t  len;

    len = strlen(name);

    return (size_t) (colon - line) == len
           && strncasecmp((char *) line, name, len) == 0;
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
