/*
 * weir-probe client: a closed-loop load generator on one epoll loop.
 *
 * Each of -c connections runs one request at a time: it writes a request,
 * reads the whole response, then starts the next request at once (or, with
 * -r, when the next slot of the overall rate comes and it is idle).
 *
 * Two layers keep protocols apart: probe_io_t moves bytes (plain TCP or
 * TLS) and probe_proto_t speaks a protocol over it (HTTP/1.1, and
 * WebSocket after an HTTP/1.1 upgrade, where one request is one echoed
 * frame; HTTP/2 and HTTP/3 add their own probe_proto_t, and HTTP/3 its own
 * io). This file holds the loop, the requests and the HTTP/1.1 and
 * WebSocket protocols; the byte movers are in weir_probe_client_io.c, the
 * report in weir_probe_client_report.c.
 *
 * `weir-probe hold` reuses the same connections to open many keep-alive
 * connections, make one request on each and keep them idle.
 */

#include "weir_config.h"
#include "weir_core.h"
#include "weir_probe.h"
#include "weir_probe_client.h"

#include <getopt.h>
#include <sys/resource.h>


static int probe_client_options(probe_client_conf_t *cf, int argc,
    char **argv);
static void probe_client_usage(void);
static int probe_parse_url(probe_client_conf_t *cf, const char *text,
    probe_url_t *u);
static int probe_resolve(const char *what, const char *host,
    const char *port, struct sockaddr_storage *ss, socklen_t *len);
static int probe_parse_proxy(probe_client_conf_t *cf, const char *text);
static int probe_new_host(probe_conn_t *c);
static int probe_build_request(probe_client_conf_t *cf, probe_url_t *u);
static int probe_build_ws(probe_client_conf_t *cf, probe_url_t *u);
static void probe_pause(probe_conn_t *c);
static void probe_unpause(probe_conn_t *c);
static ssize_t probe_recv(probe_conn_t *c);
static void probe_prepare(probe_conn_t *c, uint64_t start);
static void probe_start_request(probe_conn_t *c, uint64_t start);
static void probe_handle(probe_conn_t *c);
static int probe_finish(probe_conn_t *c);
static void probe_fail(probe_conn_t *c, uint64_t *counter);
static void probe_close(probe_conn_t *c);
static void probe_idle(probe_conn_t *c);

static int probe_h1_write_request(probe_conn_t *c);
static int probe_send_all(probe_conn_t *c, const u_char *data, size_t len);
static int probe_h1_read_response(probe_conn_t *c);
static int probe_h1_parse(probe_conn_t *c);
static int probe_h1_parse_head(probe_conn_t *c, u_char *p, u_char *end);
static void probe_h1_close(probe_conn_t *c);

static int probe_ws_write_request(probe_conn_t *c);
static int probe_ws_read_response(probe_conn_t *c);
static int probe_ws_parse_upgrade(probe_conn_t *c);
static int probe_ws_parse(probe_conn_t *c);


const probe_proto_t  probe_h1_proto = {
    "http/1.1",
    probe_h1_connect,
    probe_h1_write_request,
    probe_h1_read_response,
    probe_h1_close
};

/* WebSocket: an HTTP/1.1 upgrade, then one request = one echoed frame */
static const probe_proto_t  probe_ws_proto = {
    "websocket",
    probe_h1_connect,
    probe_ws_write_request,
    probe_ws_read_response,
    probe_h1_close
};


/* the run's state: one loop, one thread */
probe_client_conf_t           probe_conf;
probe_stats_t                 probe_stats;
int                           probe_ep = -1;
uint64_t                      probe_measure_from;
uint64_t                      probe_timeout_ns;
uint64_t                      probe_next_url;
volatile sig_atomic_t         probe_stop;
static probe_conn_t          *probe_idle_list;
static probe_conn_t          *probe_pause_head;  /* by pause_until: */
static probe_conn_t          *probe_pause_tail;  /* all pauses are equal */
static size_t                 probe_buf_size = PROBE_BUF_SIZE;

/* hold: connections settled so far */
static unsigned               probe_hold;
static uint64_t               probe_hold_idle;
static uint64_t               probe_hold_failed;
static uint64_t               probe_hold_closed;


static void
probe_client_signal(int signo)
{
    (void) signo;
    probe_stop = 1;
}


int
probe_client_main(int argc, char **argv)
{
    int                  i, n, rc, measuring;
    double               elapsed, cpu_user, cpu_sys;
    uint64_t             now, t0, end, next_slot, interval, last_check;
    uint64_t             wait;
    probe_conn_t        *conns, *c;
    struct rlimit        rl;
    struct rusage        ru0, ru1;
    struct sigaction     sa;
    struct epoll_event   events[256];
    probe_client_conf_t *cf;

    cf = &probe_conf;

    rc = probe_client_options(cf, argc, argv);
    if (rc != PROBE_OK) {
        return rc == PROBE_AGAIN ? 0 : 2;
    }

    /*
     * names are resolved once, here; through a proxy only the proxy's
     * name: every connection goes to it, and it resolves the URLs' hosts
     */
    for (i = 0; i < cf->nurls; i++) {
        if (cf->proxy != NULL) {
            memcpy(&cf->urls[i].addr, &cf->proxy_addr, cf->proxy_addrlen);
            cf->urls[i].addrlen = cf->proxy_addrlen;

        } else if (probe_resolve(cf->urls[i].text, cf->urls[i].name,
                                 cf->urls[i].port, &cf->urls[i].addr,
                                 &cf->urls[i].addrlen)
                   != PROBE_OK)
        {
            return 2;
        }
    }

    /* main() raised the soft limit to the hard one already */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0
        && rl.rlim_cur != RLIM_INFINITY
        && rl.rlim_cur < (rlim_t) cf->connections + 32)
    {
        fprintf(stderr, "weir-probe: %d connections need %d open files, "
                "the limit (RLIMIT_NOFILE, soft and hard) is %llu: raise "
                "it (ulimit -n)\n", cf->connections, cf->connections + 32,
                (unsigned long long) rl.rlim_cur);
        return 2;
    }

    for (i = 0; i < cf->nurls; i++) {
        if (probe_build_request(cf, &cf->urls[i]) != PROBE_OK
            || (cf->ws && probe_build_ws(cf, &cf->urls[i]) != PROBE_OK)
#if (WEIR_HAVE_NGHTTP2)
            || (cf->h2 && probe_h2_build(&cf->urls[i]) != PROBE_OK)
#endif
            )
        {
            fprintf(stderr, "weir-probe: out of memory\n");
            return 2;
        }

        if (cf->urls[i].tls) {
#if (WEIR_HAVE_OPENSSL)
            if (probe_tls_init(cf->h2) != PROBE_OK) {
                return 2;
            }
#else
            fprintf(stderr, "weir-probe: %s: built without OpenSSL "
                    "(configure weir with it)\n", cf->urls[i].text);
            return 2;
#endif
        }
    }

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = probe_client_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    probe_ep = epoll_create1(EPOLL_CLOEXEC);
    if (probe_ep == -1) {
        perror("weir-probe: epoll_create1()");
        return 2;
    }

#if (WEIR_HAVE_NGHTTP2)
    if (cf->h2) {
        rc = probe_h2_run();
        close(probe_ep);
        return rc;
    }
#endif

    conns = calloc((size_t) cf->connections, sizeof(probe_conn_t));
    if (conns == NULL) {
        fprintf(stderr, "weir-probe: out of memory\n");
        return 2;
    }

    probe_hist_init(&probe_stats.hist);
    probe_timeout_ns = (uint64_t) (cf->timeout * PROBE_NS_PER_SEC);

    t0 = probe_now();
    probe_measure_from = t0 + (uint64_t) (cf->warmup * PROBE_NS_PER_SEC);
    end = probe_measure_from
          + (uint64_t) (cf->duration * PROBE_NS_PER_SEC);
    interval = cf->rate > 0 ? (uint64_t) (PROBE_NS_PER_SEC / cf->rate) : 0;
    if (cf->rate > 0 && interval == 0) {
        interval = 1;
    }

    next_slot = t0;
    last_check = t0;
    getrusage(RUSAGE_SELF, &ru0);
    measuring = cf->warmup == 0;

    for (i = 0; i < cf->connections; i++) {
        c = &conns[i];
        c->fd = -1;
        c->proto = cf->ws ? &probe_ws_proto : &probe_h1_proto;
        c->buf = malloc(probe_buf_size);
        if (c->buf == NULL) {
            fprintf(stderr, "weir-probe: out of memory\n");
            return 2;
        }

        if (interval) {
            probe_idle(c);

        } else {
            probe_start_request(c, t0);
        }
    }

    for ( ;; ) {
        now = probe_now();

        if (probe_stop || now >= end
            || (cf->total && probe_stats.requests >= cf->total))
        {
            break;
        }

        if (!measuring && now >= probe_measure_from) {
            /* the warm-up's CPU time is not the run's */
            getrusage(RUSAGE_SELF, &ru0);
            measuring = 1;
        }

        while (interval && next_slot <= now && probe_idle_list != NULL) {
            c = probe_idle_list;
            probe_idle_list = c->next_idle;
            c->next_idle = NULL;
            probe_start_request(c, next_slot);
            next_slot += interval;
        }

        wait = end - now;
        if (wait > 10 * PROBE_NS_PER_MS) {
            wait = 10 * PROBE_NS_PER_MS;
        }

        if (interval && probe_idle_list != NULL) {
            wait = next_slot > now ? next_slot - now : 0;
            if (wait > 10 * PROBE_NS_PER_MS) {
                wait = 10 * PROBE_NS_PER_MS;
            }
        }

        if (probe_pause_head != NULL) {
            if (probe_pause_head->pause_until <= now) {
                wait = 0;

            } else if (probe_pause_head->pause_until - now < wait) {
                wait = probe_pause_head->pause_until - now;
            }
        }

        n = epoll_wait(probe_ep, events, 256,
                       (int) ((wait + PROBE_NS_PER_MS - 1) / PROBE_NS_PER_MS));

        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }

            perror("weir-probe: epoll_wait()");
            return 2;
        }

        for (i = 0; i < n; i++) {
            probe_handle(events[i].data.ptr);
        }

        now = probe_now();

        while (probe_pause_head != NULL
               && probe_pause_head->pause_until <= now)
        {
            c = probe_pause_head;
            probe_unpause(c);
            probe_handle(c);
        }

        if (now - last_check >= 10 * PROBE_NS_PER_MS) {
            last_check = now;

            for (i = 0; i < cf->connections; i++) {
                c = &conns[i];

                if (c->deadline > now || c->state == PROBE_WAITING) {
                    continue;
                }

                if (c->state != PROBE_CLOSED) {
                    probe_fail(c, &probe_stats.err_timeout);

                } else if (interval == 0) {
                    /* a retry after a failed connect */
                    probe_start_request(c, now);
                }
            }
        }
    }

    now = probe_now();
    getrusage(RUSAGE_SELF, &ru1);

    elapsed = now > probe_measure_from
              ? (double) (now - probe_measure_from) / PROBE_NS_PER_SEC : 0;

    cpu_user = (double) (ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec)
               + (double) (ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) / 1e6;
    cpu_sys = (double) (ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec)
              + (double) (ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e6;

    probe_report(cf, &probe_stats, elapsed, cpu_user, cpu_sys);

    for (i = 0; i < cf->connections; i++) {
        if (conns[i].fd != -1) {
            probe_close(&conns[i]);
        }

        free(conns[i].buf);
        free(conns[i].vname);
        free(conns[i].vconnect);
    }

    free(conns);
    close(probe_ep);

    return 0;
}


static void
probe_client_usage(void)
{
    printf(
"usage: weir-probe [client] [options] -u URL [-u URL ...]\n"
"  -u URL          http://HOST[:PORT]/PATH or https://...; several URLs\n"
"                  are requested round-robin\n"
"  -c N            connections (default 1)\n"
"  -d SECONDS      measured duration (default 10)\n"
"  -w SECONDS      warm-up before it, left out of the figures (default 0)\n"
"  -n N            stop after N measured requests (or at -d)\n"
"  -r RATE         requests per second overall (default: as fast as "
"possible)\n"
"  -X METHOD       method (default GET); -m GET|POST still works\n"
"  -b BYTES        request body size (default 0; not with GET)\n"
"  --h2            HTTP/2: ALPN h2 over https://, prior knowledge over\n"
"                  http://\n"
"  -m N            HTTP/2 streams in flight per connection (default 1)\n"
"  -H 'NAME: VAL'  an extra request header\n"
"  -T SECONDS      timeout of one request (default 10)\n"
"  --new-conn      a new connection per request (Connection: close)\n"
"  --csv           print one CSV line instead of the text report\n"
"  --csv-header    print the CSV header line, then the CSV line\n"
"  --ws BYTES      WebSocket: upgrade each connection, then echo one\n"
"                  masked binary frame of BYTES at a time (a request)\n"
"  --read-pause BYTES:MS\n"
"                  a slow reader: after every BYTES of a response,\n"
"                  read nothing on that connection for MS milliseconds\n"
"  --rcvbuf BYTES  SO_RCVBUF of the client's sockets\n"
"  --proxy HOST:PORT\n"
"                  through an HTTP proxy, as curl -x: https:// URLs in a\n"
"                  CONNECT tunnel (one per connection), http:// URLs as\n"
"                  absolute-form requests\n"
"  --cacert FILE   verify TLS certificates against the CAs in FILE (PEM)\n"
"                  and the URL's host (default: no verification)\n"
"  --new-host      through --proxy, each connection's CONNECT (and SNI)\n"
"                  names a host not named before: nSEQ-TIME-PID.HOST\n"
"                  (a wildcard DNS name makes them all one origin)\n");
}


static int
probe_num(const char *opt, const char *arg, double min, double max,
    double *out)
{
    char    *end;
    double   v;

    errno = 0;
    v = strtod(arg, &end);

    if (errno || end == arg || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "weir-probe: invalid value \"%s\" of %s\n",
                arg, opt);
        return PROBE_ERROR;
    }

    *out = v;

    return PROBE_OK;
}


static int
probe_client_options(probe_client_conf_t *cf, int argc, char **argv)
{
    int      ch, i;
    char    *colon;
    double   v;

    static struct option  longopts[] = {
        { "new-conn",   no_argument, NULL, 'N' },
        { "csv",        no_argument, NULL, 'C' },
        { "csv-header", no_argument, NULL, 'E' },
        { "ws",         required_argument, NULL, 'W' },
        { "read-pause", required_argument, NULL, 'P' },
        { "rcvbuf",     required_argument, NULL, 'R' },
        { "h2",         no_argument, NULL, 'Z' },
        { "proxy",      required_argument, NULL, 'Y' },
        { "cacert",     required_argument, NULL, 'K' },
        { "new-host",   no_argument, NULL, 'V' },
        { "help",       no_argument, NULL, 'h' },
        { NULL,         0,           NULL, 0 }
    };

    cf->connections = 1;
    cf->duration = 10;
    cf->timeout = 10;
    cf->streams = 1;
    cf->method = "GET";

    while ((ch = getopt_long(argc, argv, "c:d:w:n:r:m:X:b:u:H:T:h", longopts,
                             NULL))
           != -1)
    {
        switch (ch) {

        case 'c':
            if (probe_num("-c", optarg, 1, 1000000, &v) != PROBE_OK) {
                return PROBE_ERROR;
            }
            cf->connections = (int) v;
            break;

        case 'd':
            if (probe_num("-d", optarg, 0.001, 86400, &cf->duration)
                != PROBE_OK)
            {
                return PROBE_ERROR;
            }
            break;

        case 'w':
            if (probe_num("-w", optarg, 0, 86400, &cf->warmup) != PROBE_OK) {
                return PROBE_ERROR;
            }
            break;

        case 'n':
            if (probe_num("-n", optarg, 1, 1e15, &v) != PROBE_OK) {
                return PROBE_ERROR;
            }
            cf->total = (uint64_t) v;
            break;

        case 'r':
            if (probe_num("-r", optarg, 0.001, 1e9, &cf->rate) != PROBE_OK) {
                return PROBE_ERROR;
            }
            break;

        case 'T':
            if (probe_num("-T", optarg, 0.001, 3600, &cf->timeout)
                != PROBE_OK)
            {
                return PROBE_ERROR;
            }
            break;

        case 'm':
            /* -m GET|POST was the method before -X: a word is no count */
            if (strcmp(optarg, "GET") == 0 || strcmp(optarg, "POST") == 0) {
                cf->method = optarg;
                break;
            }

            if (probe_num("-m", optarg, 1, 1000000, &v) != PROBE_OK) {
                fprintf(stderr, "weir-probe: -m is the number of HTTP/2 "
                        "streams per connection (-X is the method)\n");
                return PROBE_ERROR;
            }
            cf->streams = (int) v;
            break;

        case 'X':
            if (optarg[0] == '\0' || strlen(optarg) > 32
                || strspn(optarg, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
                   != strlen(optarg)
                || strcmp(optarg, "HEAD") == 0
                || strcmp(optarg, "CONNECT") == 0)
            {
                fprintf(stderr, "weir-probe: invalid -X \"%s\" (an "
                        "uppercase method, neither HEAD nor CONNECT)\n",
                        optarg);
                return PROBE_ERROR;
            }
            cf->method = optarg;
            break;

        case 'Z':
#if (WEIR_HAVE_NGHTTP2)
            cf->h2 = 1;
            break;
#else
            fprintf(stderr, "weir-probe: --h2: built without HTTP/2 "
                    "(configure weir with nghttp2)\n");
            return PROBE_ERROR;
#endif

        case 'b':
            if (probe_num("-b", optarg, 0, 1 << 30, &v) != PROBE_OK) {
                return PROBE_ERROR;
            }
            cf->body = (size_t) v;
            break;

        case 'u':
            if (cf->nurls == PROBE_MAX_URLS) {
                fprintf(stderr, "weir-probe: too many URLs\n");
                return PROBE_ERROR;
            }

            if (probe_parse_url(cf, optarg, &cf->urls[cf->nurls])
                != PROBE_OK)
            {
                return PROBE_ERROR;
            }
            cf->nurls++;
            break;

        case 'H':
            if (cf->nheaders == PROBE_MAX_HEADERS
                || strchr(optarg, ':') == NULL
                || strpbrk(optarg, "\r\n") != NULL)
            {
                fprintf(stderr, "weir-probe: invalid -H \"%s\"\n", optarg);
                return PROBE_ERROR;
            }
            cf->headers[cf->nheaders++] = optarg;
            break;

        case 'N':
            cf->new_conn = 1;
            break;

        case 'C':
            cf->csv = 1;
            break;

        case 'E':
            cf->csv = 1;
            cf->csv_header = 1;
            break;

        case 'W':
            if (probe_num("--ws", optarg, 0, 1 << 30, &v) != PROBE_OK) {
                return PROBE_ERROR;
            }
            cf->ws = 1;
            cf->ws_bytes = (size_t) v;
            break;

        case 'P':
            colon = strchr(optarg, ':');
            if (colon == NULL) {
                fprintf(stderr, "weir-probe: --read-pause needs BYTES:MS\n");
                return PROBE_ERROR;
            }

            *colon = '\0';
            if (probe_num("--read-pause", optarg, 1, 1 << 30, &v)
                != PROBE_OK)
            {
                return PROBE_ERROR;
            }
            cf->pause_bytes = (size_t) v;

            if (probe_num("--read-pause", colon + 1, 0, 3600000, &v)
                != PROBE_OK)
            {
                return PROBE_ERROR;
            }
            cf->pause_ns = (uint64_t) (v * PROBE_NS_PER_MS);
            break;

        case 'R':
            if (probe_num("--rcvbuf", optarg, 1, INT_MAX, &v) != PROBE_OK) {
                return PROBE_ERROR;
            }
            cf->rcvbuf = (int) v;
            break;

        case 'Y':
            if (probe_parse_proxy(cf, optarg) != PROBE_OK) {
                return PROBE_ERROR;
            }
            break;

        case 'K':
#if (WEIR_HAVE_OPENSSL)
            cf->cacert = optarg;
            break;
#else
            fprintf(stderr, "weir-probe: --cacert: built without OpenSSL "
                    "(configure weir with it)\n");
            return PROBE_ERROR;
#endif

        case 'V':
            cf->new_host = 1;
            break;

        case 'h':
            probe_client_usage();
            return PROBE_AGAIN;

        default:
            probe_client_usage();
            return PROBE_ERROR;
        }
    }

    if (optind != argc) {
        fprintf(stderr, "weir-probe: unexpected argument \"%s\"\n",
                argv[optind]);
        return PROBE_ERROR;
    }

    cf->post = strcmp(cf->method, "GET") != 0;

    if (cf->ws && (cf->post || cf->new_conn)) {
        fprintf(stderr, "weir-probe: --ws takes neither -X nor "
                "--new-conn\n");
        return PROBE_ERROR;
    }

    if (cf->streams > 1 && !cf->h2) {
        fprintf(stderr, "weir-probe: -m N (streams) needs --h2\n");
        return PROBE_ERROR;
    }

    if (cf->h2 && (cf->ws || cf->pause_bytes)) {
        fprintf(stderr, "weir-probe: --h2 takes neither --ws nor "
                "--read-pause\n");
        return PROBE_ERROR;
    }

    if (cf->h2 && cf->proxy != NULL) {
        for (i = 0; i < cf->nurls; i++) {
            if (!cf->urls[i].tls) {
                fprintf(stderr, "weir-probe: --h2 through --proxy needs "
                        "https:// URLs (a CONNECT tunnel): %s\n",
                        cf->urls[i].text);
                return PROBE_ERROR;
            }
        }
    }

    if (cf->new_host) {
        for (i = 0; i < cf->nurls; i++) {
            if (cf->proxy == NULL || !cf->urls[i].tls
                || cf->urls[i].sni[0] == '\0')
            {
                fprintf(stderr, "weir-probe: --new-host needs --proxy and "
                        "https:// URLs with a host name: %s\n",
                        cf->urls[i].text);
                return PROBE_ERROR;
            }
        }
    }

    if (cf->h2 && cf->new_conn && cf->streams > 1) {
        fprintf(stderr, "weir-probe: --new-conn makes one request a "
                "connection: no -m\n");
        return PROBE_ERROR;
    }

    if (cf->nurls == 0) {
        fprintf(stderr, "weir-probe: no URL (-u)\n");
        return PROBE_ERROR;
    }

    if (cf->body && !cf->post) {
        fprintf(stderr, "weir-probe: -b needs a method other than GET "
                "(-X POST)\n");
        return PROBE_ERROR;
    }

    return PROBE_OK;
}


/*
 * http[s]://HOST[:PORT][/PATH]; HOST is resolved later, once, unless a
 * proxy resolves it (probe_resolve())
 */

static int
probe_parse_url(probe_client_conf_t *cf, const char *text, probe_url_t *u)
{
    char         *port;
    const char   *p, *h, *he, *path;
    size_t        len;

    (void) cf;

    if (strlen(text) >= sizeof(u->text)) {
        goto invalid;
    }

    strcpy(u->text, text);
    port = u->port;

    if (strncmp(text, "http://", 7) == 0) {
        p = text + 7;
        strcpy(port, "80");

    } else if (strncmp(text, "https://", 8) == 0) {
        p = text + 8;
        u->tls = 1;
        strcpy(port, "443");

    } else {
        goto invalid;
    }

    path = strchr(p, '/');
    if (path == NULL) {
        path = p + strlen(p);
    }

    len = (size_t) (path - p);
    if (len == 0 || len >= sizeof(u->host)) {
        goto invalid;
    }

    memcpy(u->host, p, len);
    u->host[len] = '\0';

    if (u->host[0] == '[') {
        he = strchr(u->host, ']');
        if (he == NULL) {
            goto invalid;
        }
        h = u->host + 1;
        len = (size_t) (he - h);
        he++;

    } else {
        h = u->host;
        he = strchr(u->host, ':');
        len = he ? (size_t) (he - h) : strlen(h);
    }

    if (len == 0 || len >= sizeof(u->name)) {
        goto invalid;
    }

    memcpy(u->name, h, len);
    u->name[len] = '\0';

    /* SNI is the host name alone: no port, no address literal */
    if (u->host[0] != '[' && inet_addr(u->name) == INADDR_NONE) {
        strcpy(u->sni, u->name);
    }

    if (he != NULL && *he == ':') {
        if (strlen(he + 1) == 0 || strlen(he + 1) >= sizeof(u->port)
            || strspn(he + 1, "0123456789") != strlen(he + 1))
        {
            goto invalid;
        }
        strcpy(port, he + 1);

    } else if (he != NULL && *he != '\0') {
        goto invalid;
    }

    /* a CONNECT's target: the port always, an IPv6 address bracketed */
    len = he != NULL && *he == ':' ? (size_t) (he - u->host)
                                   : strlen(u->host);
    (void) snprintf(u->authority, sizeof(u->authority), "%.*s:%s",
                    (int) len, u->host, port);

    /* the path goes into the request as it is; "" means "/" */
    u->path = u->text + (path - text);
    if (*u->path == '\0') {
        u->path = "/";
    }

    u->request = (u_char *) u->path;

    return PROBE_OK;

invalid:

    fprintf(stderr, "weir-probe: invalid URL \"%s\" (http[s]://HOST[:PORT]"
            "/PATH)\n", text);

    return PROBE_ERROR;
}


/* host and port to the first address getaddrinfo() gives */

static int
probe_resolve(const char *what, const char *host, const char *port,
    struct sockaddr_storage *ss, socklen_t *len)
{
    int               rc;
    struct addrinfo   hints, *res;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;

    rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "weir-probe: %s: %s\n", what, gai_strerror(rc));
        return PROBE_ERROR;
    }

    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);

    return PROBE_OK;
}


/* --proxy [http://]HOST:PORT[/]: a name is resolved once, here */

static int
probe_parse_proxy(probe_client_conf_t *cf, const char *text)
{
    char         host[256], port[8], what[300];
    const char  *p, *colon, *end;
    size_t       len;

    p = strncmp(text, "http://", 7) == 0 ? text + 7 : text;
    end = p + strlen(p);

    if (end > p && end[-1] == '/') {
        end--;
    }

    if (*p == '[') {
        colon = memchr(p, ']', (size_t) (end - p));
        if (colon == NULL || colon + 1 == end || colon[1] != ':') {
            goto invalid;
        }
        len = (size_t) (colon - p - 1);
        p++;
        colon++;

    } else {
        colon = memchr(p, ':', (size_t) (end - p));
        if (colon == NULL) {
            goto invalid;
        }
        len = (size_t) (colon - p);
    }

    if (len == 0 || len >= sizeof(host) || end - colon - 1 < 1
        || (size_t) (end - colon - 1) >= sizeof(port)
        || strspn(colon + 1, "0123456789") < (size_t) (end - colon - 1))
    {
        goto invalid;
    }

    memcpy(host, p, len);
    host[len] = '\0';
    memcpy(port, colon + 1, (size_t) (end - colon - 1));
    port[end - colon - 1] = '\0';

    if (atoi(port) < 1 || atoi(port) > 65535) {
        goto invalid;
    }

    (void) snprintf(what, sizeof(what), "--proxy %s", text);

    if (probe_resolve(what, host, port, &cf->proxy_addr, &cf->proxy_addrlen)
        != PROBE_OK)
    {
        return PROBE_ERROR;
    }

    cf->proxy = text;

    return PROBE_OK;

invalid:

    fprintf(stderr, "weir-probe: invalid --proxy \"%s\" (HOST:PORT)\n",
            text);

    return PROBE_ERROR;
}


static int
probe_build_request(probe_client_conf_t *cf, probe_url_t *u)
{
    int      i;
    char    *path;
    size_t   size, hlen;
    u_char  *p;

    path = (char *) u->request;

    if (cf->proxy != NULL && u->tls) {
        /* the tunnel: CONNECT once a connection */
        size = 64 + 2 * strlen(u->authority);

        u->connect = malloc(size);
        if (u->connect == NULL) {
            return PROBE_ERROR;
        }

        u->connect_len = (size_t) snprintf((char *) u->connect, size,
                                           "CONNECT %s HTTP/1.1\r\n"
                                           "Host: %s\r\n\r\n",
                                           u->authority, u->authority);
    }

    size = 384 + strlen(path) + 2 * strlen(u->host) + cf->body;
    for (i = 0; i < cf->nheaders; i++) {
        size += strlen(cf->headers[i]) + 2;
    }

    p = malloc(size);
    if (p == NULL) {
        return PROBE_ERROR;
    }

    /* to a proxy, http:// in absolute form: GET http://host:port/path */
    hlen = (size_t) snprintf((char *) p, size,
                             "%s %s%s%s HTTP/1.1\r\nHost: %s\r\n"
                             "User-Agent: weir-probe\r\n%s",
                             cf->method,
                             cf->proxy != NULL && !u->tls ? "http://" : "",
                             cf->proxy != NULL && !u->tls ? u->host : "",
                             path, u->host,
                             cf->new_conn ? "Connection: close\r\n" : "");

    if (cf->ws) {
        hlen += (size_t) snprintf((char *) p + hlen, size - hlen,
                                  "Upgrade: websocket\r\n"
                                  "Connection: Upgrade\r\n"
                                  "Sec-WebSocket-Version: 13\r\n"
                                  "Sec-WebSocket-Key: ");
        /* the key is 24 characters, filled in by probe_build_ws() */
        memset(p + hlen, 'A', 24);
        hlen += 24;
        hlen += (size_t) snprintf((char *) p + hlen, size - hlen, "\r\n");
    }

    for (i = 0; i < cf->nheaders; i++) {
        hlen += (size_t) snprintf((char *) p + hlen, size - hlen, "%s\r\n",
                                  cf->headers[i]);
    }

    if (cf->post) {
        hlen += (size_t) snprintf((char *) p + hlen, size - hlen,
                                  "Content-Type: application/octet-stream"
                                  "\r\nContent-Length: %zu\r\n", cf->body);
    }

    hlen += (size_t) snprintf((char *) p + hlen, size - hlen, "\r\n");

    for (i = 0; (size_t) i < cf->body; i++) {
        p[hlen + (size_t) i] = (u_char) ('a' + i % 26);
    }

    u->request = p;
    u->request_len = hlen + cf->body;

    return PROBE_OK;
}


/*
 * The WebSocket handshake (the request built above, with a random key)
 * and the one frame every round trip sends: binary, FIN, masked with a
 * key drawn once per URL (a server cannot tell, and no byte is masked
 * again per request).
 */

static int
probe_build_ws(probe_client_conf_t *cf, probe_url_t *u)
{
    int        i;
    char       key[32];
    u_char    *p, *f, rnd[16], mask[4];
    size_t     hlen, k;
    uint64_t   x;

    x = probe_now() ^ ((uint64_t) getpid() << 32) ^ (uintptr_t) u;

    for (i = 0; i < 20; i++) {
        /* xorshift64: a nonce, not a secret */
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;

        if (i < 16) {
            rnd[i] = (u_char) (x >> 24);

        } else {
            mask[i - 16] = (u_char) (x >> 24);
        }
    }

    (void) probe_base64(rnd, sizeof(rnd), key);
    probe_ws_accept((u_char *) key, 24, u->accept);

    u->upgrade = u->request;
    u->upgrade_len = u->request_len;

    p = (u_char *) strstr((char *) u->upgrade, "Sec-WebSocket-Key: ");
    if (p == NULL) {
        return PROBE_ERROR;
    }

    memcpy(p + 19, key, 24);

    f = malloc(14 + cf->ws_bytes);
    if (f == NULL) {
        return PROBE_ERROR;
    }

    f[0] = 0x82;

    if (cf->ws_bytes < 126) {
        f[1] = (u_char) (0x80 | cf->ws_bytes);
        hlen = 2;

    } else if (cf->ws_bytes < 65536) {
        f[1] = 0x80 | 126;
        f[2] = (u_char) (cf->ws_bytes >> 8);
        f[3] = (u_char) cf->ws_bytes;
        hlen = 4;

    } else {
        f[1] = 0x80 | 127;
        for (i = 0; i < 8; i++) {
            f[2 + i] = (u_char) ((uint64_t) cf->ws_bytes >> (56 - 8 * i));
        }
        hlen = 10;
    }

    memcpy(f + hlen, mask, 4);
    hlen += 4;

    for (k = 0; k < cf->ws_bytes; k++) {
        f[hlen + k] = (u_char) ('a' + k % 26) ^ mask[k & 3];
    }

    u->request = f;
    u->request_len = hlen + cf->ws_bytes;

    return PROBE_OK;
}


/* --read-pause: a FIFO keeps the order of pause_until, all pauses equal */

static void
probe_pause(probe_conn_t *c)
{
    c->paused = 1;
    c->pause_until = probe_now() + probe_conf.pause_ns;
    c->pause_next = NULL;
    c->pause_prev = probe_pause_tail;

    if (probe_pause_tail != NULL) {
        probe_pause_tail->pause_next = c;

    } else {
        probe_pause_head = c;
    }

    probe_pause_tail = c;
}


static void
probe_unpause(probe_conn_t *c)
{
    if (c->pause_prev != NULL) {
        c->pause_prev->pause_next = c->pause_next;

    } else {
        probe_pause_head = c->pause_next;
    }

    if (c->pause_next != NULL) {
        c->pause_next->pause_prev = c->pause_prev;

    } else {
        probe_pause_tail = c->pause_prev;
    }

    c->pause_prev = NULL;
    c->pause_next = NULL;
    c->paused = 0;
}


/*
 * One read into c->buf[last, ...): at most up to the next --read-pause
 * mark, which sets pause_hit; returns as io->recv does.
 */

static ssize_t
probe_recv(probe_conn_t *c)
{
    size_t   size;
    ssize_t  n;

    size = probe_buf_size - c->last;

    if (probe_conf.pause_bytes
        && size > probe_conf.pause_bytes - c->pause_count)
    {
        size = probe_conf.pause_bytes - c->pause_count;
    }

    n = c->io->recv(c, c->buf + c->last, size);

    if (n > 0) {
        c->last += (size_t) n;
        c->bytes_in += (uint64_t) n;

        if (probe_conf.pause_bytes) {
            c->pause_count += (size_t) n;

            if (c->pause_count >= probe_conf.pause_bytes) {
                c->pause_count = 0;
                c->pause_hit = 1;
            }
        }
    }

    return n;
}


static void
probe_idle(probe_conn_t *c)
{
    c->state = c->fd == -1 ? PROBE_CLOSED : PROBE_WAITING;
    c->next_idle = probe_idle_list;
    probe_idle_list = c;
}


/* sets c up for its next request: PROBE_ACTIVE, or connecting */

static void
probe_prepare(probe_conn_t *c, uint64_t start)
{
    probe_url_t  *u;

    u = &probe_conf.urls[probe_next_url++ % (uint64_t) probe_conf.nurls];

    c->url = u;
    c->start = start;
    c->deadline = probe_now() + probe_timeout_ns;
    c->sent = 0;
    c->bytes_in = 0;
    c->pos = 0;
    c->last = 0;
    c->pstate = c->upgraded ? PROBE_P_WS_HEAD : PROBE_P_HEAD;
    c->status = 0;
    c->ws_total = 0;
    c->pause_count = 0;
    c->pause_hit = 0;
    c->request_done = 0;
    c->response_done = 0;
    c->close_after = 0;

    /* through a proxy, a tunnel goes to one origin only */
    if (c->fd != -1
        && ((probe_conf.ws && c->conn_url != u)
            || c->conn_url->addrlen != u->addrlen
            || memcmp(&c->conn_url->addr, &u->addr, u->addrlen) != 0
            || c->conn_url->tls != u->tls
            || (u->connect != NULL
                && strcmp(c->conn_url->authority, u->authority) != 0)))
    {
        probe_close(c);
    }

    if (c->fd != -1) {
        c->state = PROBE_ACTIVE;
        return;
    }

    if (c->proto->connect(c) != PROBE_OK) {
        probe_fail(c, &probe_stats.err_connect);
    }
}


static void
probe_start_request(probe_conn_t *c, uint64_t start)
{
    probe_prepare(c, start);

    if (c->state == PROBE_ACTIVE) {
        probe_handle(c);
    }
}


/*
 * Runs the connection's state machine until it has to wait: with
 * edge-triggered events it must go on until a call would block.
 */

static void
probe_handle(probe_conn_t *c)
{
    int        rc, err, fresh;
    u_char     byte;
    ssize_t    n;
    socklen_t  len;

    for ( ;; ) {

        switch (c->state) {

        case PROBE_CONNECTING:
            err = 0;
            len = sizeof(err);

            if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1) {
                err = errno;
            }

            if (err != 0) {
                probe_fail(c, &probe_stats.err_connect);
                return;
            }

            c->state = PROBE_HANDSHAKE;

            /* fall through */

        case PROBE_HANDSHAKE:
            rc = c->io->handshake(c);

            if (rc == PROBE_AGAIN) {
                return;
            }

            if (rc == PROBE_ERROR) {
                probe_fail(c, &probe_stats.err_connect);
                return;
            }

            c->state = PROBE_ACTIVE;

            /* fall through */

        case PROBE_ACTIVE:
            if (!c->request_done) {
                fresh = c->sent == 0;

                rc = c->proto->write_request(c);

                if (rc == PROBE_ERROR) {
                    probe_fail(c, &probe_stats.err_write);
                    return;
                }

                if (rc == PROBE_OK) {
                    c->request_done = 1;

                    /*
                     * sent in one go: a read now would almost always
                     * find nothing, and the response's arrival raises
                     * an edge of its own; this saves a syscall a request
                     */
                    if (fresh) {
                        return;
                    }
                }
            }

            /* read while writing too: a server may answer early */

            if (!c->response_done) {
                rc = c->proto->read_response(c);

                if (rc == PROBE_ERROR) {
                    probe_fail(c, &probe_stats.err_read);
                    return;
                }

                if (rc == PROBE_STATUS) {
                    probe_fail(c, &probe_stats.status[
                                   c->status / 100 == 4 ? 4
                                   : c->status / 100 == 5 ? 5 : 0]);
                    return;
                }

                if (rc == PROBE_OK) {
                    c->response_done = 1;
                }
            }

            if (!c->response_done || !(c->request_done || c->close_after)) {
                return;
            }

            if (!probe_finish(c)) {
                return;
            }

            /* the next request on this connection, in this loop */
            break;

        case PROBE_WAITING:
            /* an idle keep-alive connection is readable: server closed */
            n = c->io->recv(c, &byte, 1);
            if (n != PROBE_AGAIN) {
                probe_close(c);

                if (probe_hold) {
                    probe_hold_closed++;
                    c->state = PROBE_CLOSED;
                    c->deadline = UINT64_MAX;
                }
            }

            return;

        default:
            return;
        }
    }
}


/* counts a complete response; 1 when c goes on with its next request */

static int
probe_finish(probe_conn_t *c)
{
    uint64_t  now;

    now = probe_now();

    if (probe_conf.total && probe_stats.requests >= probe_conf.total) {
        /* -n reached by another connection in this round of events */
        return 0;
    }

    if (now >= probe_measure_from) {
        probe_stats.requests++;
        probe_stats.bytes_in += c->bytes_in;
        probe_stats.bytes_out += c->url->request_len;
        probe_stats.status[c->status / 100 < 6 ? c->status / 100 : 0]++;
        probe_hist_record(&probe_stats.hist, now - c->start);
    }

    if (probe_hold) {
        /* one request, then the connection stays open and idle */
        c->deadline = UINT64_MAX;

        if (c->close_after || c->status >= 400) {
            probe_close(c);
            probe_hold_failed++;
            return 0;
        }

        /* an idle connection reads one byte, never into the buffer */
        free(c->buf);
        c->buf = NULL;

        c->state = PROBE_WAITING;
        probe_hold_idle++;
        return 0;
    }

    if (c->close_after || probe_conf.new_conn) {
        probe_close(c);
    }

    if (probe_conf.rate > 0) {
        probe_idle(c);
        return 0;
    }

    if (probe_conf.total && probe_stats.requests >= probe_conf.total) {
        return 0;
    }

    probe_prepare(c, now);

    return c->state == PROBE_ACTIVE;
}


static void
probe_fail(probe_conn_t *c, uint64_t *counter)
{
    uint64_t  now;

    now = probe_now();

    if (now >= probe_measure_from) {
        (*counter)++;
    }

    probe_close(c);

    if (probe_hold) {
        /* no retry: the connection is given up */
        c->deadline = UINT64_MAX;
        probe_hold_failed++;
        return;
    }

    if (probe_conf.rate > 0) {
        probe_idle(c);
        return;
    }

    if (counter == &probe_stats.err_connect) {
        /* retried by the main loop: a refused port must not spin hot */
        c->deadline = now + 10 * PROBE_NS_PER_MS;
        return;
    }

    probe_prepare(c, now);
}


static void
probe_close(probe_conn_t *c)
{
    if (c->fd != -1) {
        c->proto->close(c);
    }

    if (c->paused) {
        probe_unpause(c);
    }

    c->upgraded = 0;
    c->state = PROBE_CLOSED;
}


/*
 * --new-host: a name no connection used before, in the URL's domain
 * (nSEQ-TIME-PID.NAME, one label more: a wildcard name matches it), as
 * the CONNECT's target, the SNI and the name verified
 */

static int
probe_new_host(probe_conn_t *c)
{
    int                   n;
    static time_t         t0;
    static unsigned long  seq;

    if (t0 == 0) {
        t0 = time(NULL);
    }

    if (c->vname == NULL) {
        c->vname = malloc(sizeof(c->url->name));
        /* CONNECT NAME:PORT ... Host: NAME:PORT */
        c->vconnect = malloc(3 * sizeof(c->url->name));
        if (c->vname == NULL || c->vconnect == NULL) {
            return PROBE_ERROR;
        }
    }

    n = snprintf(c->vname, sizeof(c->url->name), "n%lu-%ld-%ld.%s", ++seq,
                 (long) t0, (long) getpid(), c->url->name);
    if (n < 0 || (size_t) n >= sizeof(c->url->name)) {
        return PROBE_ERROR;
    }

    c->vconnect_len = (size_t) sprintf((char *) c->vconnect,
                                       "CONNECT %s:%s HTTP/1.1\r\n"
                                       "Host: %s:%s\r\n\r\n",
                                       c->vname, c->url->port, c->vname,
                                       c->url->port);
    return PROBE_OK;
}


/* HTTP/1.1 */

int
probe_h1_connect(probe_conn_t *c)
{
    int                  fd, one;
    struct epoll_event   ee;

    fd = socket(c->url->addr.ss_family,
                SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd == -1) {
        return PROBE_ERROR;
    }

    one = 1;
    (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

    if (probe_conf.rcvbuf) {
        /* before connect(): the window is scaled from it */
        (void) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &probe_conf.rcvbuf,
                          sizeof(probe_conf.rcvbuf));
    }

    /* through --proxy the URL's address is the proxy's */
    c->fd = fd;
    c->upgraded = 0;
    c->tunnel = 0;
    c->proxy_sent = 0;
    c->proxy_have = 0;
    c->conn_url = c->url;
    c->io = &probe_plain_io;

    if (probe_conf.new_host && probe_new_host(c) != PROBE_OK) {
        return PROBE_ERROR;
    }

#if (WEIR_HAVE_OPENSSL)
    if (c->url->tls) {
        c->io = c->url->connect != NULL ? &probe_proxy_tls_io
                                        : &probe_tls_io;
    }
#endif

    if (connect(fd, (struct sockaddr *) &c->url->addr, c->url->addrlen)
        == -1 && errno != EINPROGRESS)
    {
        return PROBE_ERROR;
    }

    ee.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ee.data.ptr = c;

    if (epoll_ctl(probe_ep, EPOLL_CTL_ADD, fd, &ee) == -1) {
        return PROBE_ERROR;
    }

    c->state = PROBE_CONNECTING;

    return PROBE_OK;
}


static int
probe_h1_write_request(probe_conn_t *c)
{
    return probe_send_all(c, c->url->request, c->url->request_len);
}


/* sends data[c->sent .. len - 1]: PROBE_OK when all of it went */

static int
probe_send_all(probe_conn_t *c, const u_char *data, size_t len)
{
    ssize_t  n;

    while (c->sent < len) {
        n = c->io->send(c, data + c->sent, len - c->sent);

        if (n == PROBE_AGAIN) {
            return PROBE_AGAIN;
        }

        if (n < 0) {
            return PROBE_ERROR;
        }

        c->sent += (size_t) n;
    }

    return PROBE_OK;
}


/*
 * Reads and parses until the response is complete (PROBE_OK), a read
 * would block or a --read-pause starts (PROBE_AGAIN), or it fails.
 */

static int
probe_read(probe_conn_t *c, int (*parse)(probe_conn_t *c))
{
    int      rc;
    ssize_t  n;

    if (c->paused) {
        return PROBE_AGAIN;
    }

    for ( ;; ) {
        if (c->pos == c->last) {
            c->pos = 0;
            c->last = 0;
        }

        if (c->last > c->pos || c->pstate == PROBE_P_DONE) {
            rc = parse(c);
            if (rc != PROBE_AGAIN) {
                return rc;
            }
        }

        if (c->pause_hit) {
            c->pause_hit = 0;
            probe_pause(c);
            return PROBE_AGAIN;
        }

        if (c->last == probe_buf_size) {
            if (c->pos == 0) {
                return PROBE_ERROR;         /* a line too long */
            }

            memmove(c->buf, c->buf + c->pos, c->last - c->pos);
            c->last -= c->pos;
            c->pos = 0;
        }

        n = probe_recv(c);

        if (n == PROBE_AGAIN) {
            return PROBE_AGAIN;
        }

        if (n == 0) {
            if (c->pstate == PROBE_P_EOF) {
                c->pstate = PROBE_P_DONE;
                c->close_after = 1;
                return PROBE_OK;
            }

            return PROBE_ERROR;
        }

        if (n < 0) {
            return PROBE_ERROR;
        }
    }
}


static int
probe_h1_read_response(probe_conn_t *c)
{
    return probe_read(c, probe_h1_parse);
}


/* consumes c->buf[pos, last); PROBE_AGAIN when it needs more */

static int
probe_h1_parse(probe_conn_t *c)
{
    int       rc;
    u_char   *p, *end, *eol;
    size_t    avail;
    int64_t   size;
    unsigned  d;

    for ( ;; ) {
        p = c->buf + c->pos;
        end = c->buf + c->last;
        avail = (size_t) (end - p);

        switch (c->pstate) {

        case PROBE_P_HEAD:
            eol = probe_head_end(p, avail);
            if (eol == NULL) {
                return PROBE_AGAIN;
            }

            rc = probe_h1_parse_head(c, p, eol + 4);
            if (rc != PROBE_OK) {
                return rc;
            }

            c->pos += (size_t) (eol + 4 - p);
            break;

        case PROBE_P_LENGTH:
            if ((int64_t) avail >= c->rest) {
                c->pos += (size_t) c->rest;
                c->rest = 0;
                c->pstate = PROBE_P_DONE;
                break;
            }

            c->pos += avail;
            c->rest -= (int64_t) avail;
            return PROBE_AGAIN;

        case PROBE_P_CHUNK:
            eol = probe_crlf(p, avail);
            if (eol == NULL) {
                return PROBE_AGAIN;
            }

            size = 0;
            for (d = 0; p + d < eol; d++) {
                if (p[d] >= '0' && p[d] <= '9') {
                    size = size * 16 + (p[d] - '0');

                } else if ((p[d] | 0x20) >= 'a' && (p[d] | 0x20) <= 'f') {
                    size = size * 16 + ((p[d] | 0x20) - 'a' + 10);

                } else if (p[d] == ';' || p[d] == ' ' || p[d] == '\t') {
                    break;

                } else {
                    return PROBE_ERROR;
                }

                if (size > ((int64_t) 1 << 48)) {
                    return PROBE_ERROR;
                }
            }

            if (d == 0) {
                return PROBE_ERROR;
            }

            c->pos += (size_t) (eol + 2 - p);
            c->rest = size;
            c->pstate = size ? PROBE_P_DATA : PROBE_P_TRAILER;
            break;

        case PROBE_P_DATA:
            if ((int64_t) avail >= c->rest) {
                c->pos += (size_t) c->rest;
                c->rest = 0;
                c->pstate = PROBE_P_DATA_CRLF;
                break;
            }

            c->pos += avail;
            c->rest -= (int64_t) avail;
            return PROBE_AGAIN;

        case PROBE_P_DATA_CRLF:
            if (avail < 2) {
                return PROBE_AGAIN;
            }

            if (p[0] != '\r' || p[1] != '\n') {
                return PROBE_ERROR;
            }

            c->pos += 2;
            c->pstate = PROBE_P_CHUNK;
            break;

        case PROBE_P_TRAILER:
            eol = probe_crlf(p, avail);
            if (eol == NULL) {
                return PROBE_AGAIN;
            }

            c->pos += (size_t) (eol + 2 - p);
            if (eol == p) {
                c->pstate = PROBE_P_DONE;
            }
            break;

        case PROBE_P_EOF:
            c->pos = c->last;
            return PROBE_AGAIN;

        default: /* PROBE_P_DONE */
            if (c->pos != c->last) {
                /* bytes past the response: the server misbehaves */
                return PROBE_ERROR;
            }

            return PROBE_OK;
        }
    }
}


/* the status line and headers in [p, end), end after the empty line */

static int
probe_h1_parse_head(probe_conn_t *c, u_char *p, u_char *end)
{
    int       http10, chunked, keepalive, close, has_length;
    char     *e;
    u_char   *eol, *colon, *v;
    int64_t   length;

    if (end - p < 12 || memcmp(p, "HTTP/1.", 7) != 0
        || (p[7] != '0' && p[7] != '1') || p[8] != ' '
        || p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9'
        || p[11] < '0' || p[11] > '9')
    {
        return PROBE_ERROR;
    }

    http10 = p[7] == '0';
    c->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');

    chunked = 0;
    keepalive = 0;
    close = 0;
    has_length = 0;
    length = 0;

    eol = probe_crlf(p, (size_t) (end - p));

    for (p = eol + 2; p < end - 2; p = eol + 2) {
        eol = probe_crlf(p, (size_t) (end - p));

        colon = memchr(p, ':', (size_t) (eol - p));
        if (colon == NULL) {
            return PROBE_ERROR;
        }

        for (v = colon + 1; v < eol && (*v == ' ' || *v == '\t'); v++) {
            /* void */
        }

        if (probe_h1_header(p, colon, "content-length")) {
            errno = 0;
            length = strtoll((char *) v, &e, 10);
            if (errno || (u_char *) e == v || length < 0) {
                return PROBE_ERROR;
            }
            has_length = 1;

        } else if (probe_h1_header(p, colon, "transfer-encoding")) {
            chunked = probe_h1_value_has(v, eol, "chunked");

        } else if (probe_h1_header(p, colon, "connection")) {
            close = probe_h1_value_has(v, eol, "close");
            keepalive = probe_h1_value_has(v, eol, "keep-alive");
        }
    }

    if (c->status < 200 && c->status != 101) {
        /* an interim response: the final one follows */
        c->pstate = PROBE_P_HEAD;
        return PROBE_OK;
    }

    if (close || (http10 && !keepalive)) {
        c->close_after = 1;
    }

    if (c->status == 204 || c->status == 304) {
        c->pstate = PROBE_P_DONE;

    } else if (chunked) {
        c->pstate = PROBE_P_CHUNK;

    } else if (has_length) {
        c->rest = length;
        c->pstate = length ? PROBE_P_LENGTH : PROBE_P_DONE;

    } else {
        c->pstate = PROBE_P_EOF;
        c->close_after = 1;
    }

    return PROBE_OK;
}


static void
probe_h1_close(probe_conn_t *c)
{
    c->io->close(c);
    c->fd = -1;
}


/* WebSocket */

static int
probe_ws_write_request(probe_conn_t *c)
{
    if (c->upgraded) {
        return probe_send_all(c, c->url->request, c->url->request_len);
    }

    return probe_send_all(c, c->url->upgrade, c->url->upgrade_len);
}


static int
probe_ws_parse_any(probe_conn_t *c)
{
    return c->upgraded ? probe_ws_parse(c) : probe_ws_parse_upgrade(c);
}


static int
probe_ws_read_response(probe_conn_t *c)
{
    return probe_read(c, probe_ws_parse_any);
}


/*
 * The answer to the upgrade: 101 with the right Sec-WebSocket-Accept,
 * then the first frame goes out at once; PROBE_STATUS on another status.
 */

static int
probe_ws_parse_upgrade(probe_conn_t *c)
{
    int       rc, accepted;
    u_char   *p, *end, *eol, *colon, *v, *e;

    p = c->buf + c->pos;

    end = probe_head_end(p, c->last - c->pos);
    if (end == NULL) {
        return PROBE_AGAIN;
    }

    end += 4;

    if (end - p < 12 || memcmp(p, "HTTP/1.", 7) != 0 || p[8] != ' '
        || p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9'
        || p[11] < '0' || p[11] > '9')
    {
        return PROBE_ERROR;
    }

    c->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');

    if (c->status != 101) {
        return PROBE_STATUS;
    }

    accepted = 0;
    eol = probe_crlf(p, (size_t) (end - p));

    for (p = eol + 2; p < end - 2; p = eol + 2) {
        eol = probe_crlf(p, (size_t) (end - p));

        colon = memchr(p, ':', (size_t) (eol - p));
        if (colon == NULL) {
            return PROBE_ERROR;
        }

        if (!probe_h1_header(p, colon, "sec-websocket-accept")) {
            continue;
        }

        for (v = colon + 1; v < eol && (*v == ' ' || *v == '\t'); v++) {
            /* void */
        }

        for (e = eol; e > v && (e[-1] == ' ' || e[-1] == '\t'); e--) {
            /* void */
        }

        accepted = e - v == PROBE_WS_ACCEPT_LEN - 1
                   && memcmp(v, c->url->accept, PROBE_WS_ACCEPT_LEN - 1) == 0;
    }

    if (!accepted) {
        return PROBE_ERROR;
    }

    c->pos += (size_t) (end - (c->buf + c->pos));
    c->upgraded = 1;
    c->pstate = PROBE_P_WS_HEAD;
    c->ws_total = 0;
    c->bytes_in = 0;
    c->pause_count = 0;
    c->pause_hit = 0;
    c->request_done = 0;
    c->sent = 0;

    if (probe_conf.rate == 0) {
        /* a round trip's latency leaves the handshake out */
        c->start = probe_now();
    }

    rc = probe_ws_write_request(c);

    if (rc == PROBE_ERROR) {
        return PROBE_ERROR;
    }

    c->request_done = rc == PROBE_OK;

    return PROBE_AGAIN;
}


/* the echoed message: data frames up to FIN; pings and pongs are skipped */

static int
probe_ws_parse(probe_conn_t *c)
{
    int        i;
    u_char    *p, op;
    size_t     avail, hlen, take;
    uint64_t   len;

    for ( ;; ) {
        p = c->buf + c->pos;
        avail = c->last - c->pos;

        switch (c->pstate) {

        case PROBE_P_WS_HEAD:
            if (avail < 2) {
                return PROBE_AGAIN;
            }

            if (p[1] & 0x80 || (p[0] & 0x70) != 0) {
                return PROBE_ERROR;     /* a server never masks */
            }

            len = p[1] & 0x7f;
            hlen = len == 126 ? 4 : len == 127 ? 10 : 2;

            if (avail < hlen) {
                return PROBE_AGAIN;
            }

            if (len == 126) {
                len = (uint64_t) p[2] << 8 | p[3];

            } else if (len == 127) {
                len = 0;
                for (i = 0; i < 8; i++) {
                    len = len << 8 | p[2 + i];
                }
            }

            op = p[0] & 0x0f;

            if (op == 8 || (op > 2 && op < 9) || op > 10
                || len > ((uint64_t) 1 << 48))
            {
                return PROBE_ERROR;     /* a close, or nonsense */
            }

            c->ws_data = op <= 2;

            if (c->ws_data) {
                c->ws_fin = (p[0] & 0x80) != 0;
                c->ws_total += len;
            }

            c->rest = (int64_t) len;
            c->pos += hlen;
            c->pstate = PROBE_P_WS_DATA;
            break;

        case PROBE_P_WS_DATA:
            take = (int64_t) avail < c->rest ? avail : (size_t) c->rest;
            c->pos += take;
            c->rest -= (int64_t) take;

            if (c->rest > 0) {
                return PROBE_AGAIN;
            }

            c->pstate = PROBE_P_WS_HEAD;

            if (c->ws_data && c->ws_fin) {
                if (c->ws_total != probe_conf.ws_bytes) {
                    return PROBE_ERROR;
                }

                /* a round trip counts as a 2xx */
                c->status = 200;
                c->pstate = PROBE_P_DONE;
            }

            break;

        default: /* PROBE_P_DONE */
            if (c->pos != c->last) {
                return PROBE_ERROR;
            }

            return PROBE_OK;
        }
    }
}


/*
 * weir-probe hold: -c keep-alive connections, one GET each, then held open
 * and idle until a signal or -d; for the cost of idle connections.
 */

static void
probe_hold_usage(void)
{
    printf(
"usage: weir-probe hold -c N -u URL [-d SECONDS] [-T SECONDS]\n"
"  -c N            connections to open and keep idle (default 1)\n"
"  -u URL          http://HOST[:PORT]/PATH or https://...: one GET on each\n"
"  -d SECONDS      hold that long after all are idle (default: until\n"
"                  SIGTERM or SIGINT)\n"
"  -T SECONDS      bound of the opening phase (default 30)\n"
"prints \"weir-probe hold: N idle\" once the connections are idle, and\n"
"\"weir-probe hold: N open at end, M closed by peer\" at the end\n");
}


int
probe_hold_main(int argc, char **argv)
{
    int                  ch, i, n;
    double               v, hold;
    uint64_t             now, setup_end, hold_end, started, errors;
    probe_conn_t        *conns, *c;
    struct rlimit        rl;
    struct sigaction     sa;
    struct epoll_event   events[256];
    probe_client_conf_t *cf;

    cf = &probe_conf;
    cf->connections = 1;
    cf->timeout = 30;
    cf->method = "GET";
    hold = 0;
    probe_hold = 1;
    probe_buf_size = PROBE_HOLD_BUF;

    while ((ch = getopt(argc, argv, "c:u:d:T:h")) != -1) {
        switch (ch) {

        case 'c':
            if (probe_num("-c", optarg, 1, 10000000, &v) != PROBE_OK) {
                return 2;
            }
            cf->connections = (int) v;
            break;

        case 'u':
            if (cf->nurls == 1) {
                fprintf(stderr, "weir-probe hold: one URL only\n");
                return 2;
            }

            if (probe_parse_url(cf, optarg, &cf->urls[0]) != PROBE_OK
                || probe_resolve(optarg, cf->urls[0].name,
                                 cf->urls[0].port, &cf->urls[0].addr,
                                 &cf->urls[0].addrlen)
                   != PROBE_OK)
            {
                return 2;
            }
            cf->nurls = 1;
            break;

        case 'd':
            if (probe_num("-d", optarg, 0.001, 1e9, &hold) != PROBE_OK) {
                return 2;
            }
            break;

        case 'T':
            if (probe_num("-T", optarg, 0.001, 3600, &cf->timeout)
                != PROBE_OK)
            {
                return 2;
            }
            break;

        case 'h':
            probe_hold_usage();
            return 0;

        default:
            probe_hold_usage();
            return 2;
        }
    }

    if (optind != argc || cf->nurls == 0) {
        fprintf(stderr, "weir-probe hold: %s\n",
                optind != argc ? "unexpected argument" : "no URL (-u)");
        return 2;
    }

    /* main() raised the soft limit to the hard one already */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0
        && rl.rlim_cur != RLIM_INFINITY
        && rl.rlim_cur < (rlim_t) cf->connections + 32)
    {
        fprintf(stderr, "weir-probe hold: %d connections need %d open "
                "files, the limit (RLIMIT_NOFILE, soft and hard) is %llu: "
                "raise it (ulimit -n)\n", cf->connections,
                cf->connections + 32, (unsigned long long) rl.rlim_cur);
        return 2;
    }

    if (probe_build_request(cf, &cf->urls[0]) != PROBE_OK) {
        fprintf(stderr, "weir-probe hold: out of memory\n");
        return 2;
    }

    if (cf->urls[0].tls) {
#if (WEIR_HAVE_OPENSSL)
        if (probe_tls_init(0) != PROBE_OK) {
            return 2;
        }
#else
        fprintf(stderr, "weir-probe hold: %s: built without OpenSSL\n",
                cf->urls[0].text);
        return 2;
#endif
    }

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = probe_client_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    probe_ep = epoll_create1(EPOLL_CLOEXEC);
    conns = calloc((size_t) cf->connections, sizeof(probe_conn_t));

    if (probe_ep == -1 || conns == NULL) {
        fprintf(stderr, "weir-probe hold: %s\n", strerror(errno));
        return 2;
    }

    probe_hist_init(&probe_stats.hist);
    probe_timeout_ns = (uint64_t) (cf->timeout * PROBE_NS_PER_SEC);
    now = probe_now();
    probe_measure_from = 0;
    setup_end = now + probe_timeout_ns;
    started = 0;

    /* open: at most PROBE_HOLD_BURST connections in progress at once */

    while (!probe_stop) {
        while (started < (uint64_t) cf->connections
               && started - probe_hold_idle - probe_hold_failed
                  < PROBE_HOLD_BURST)
        {
            c = &conns[started++];
            c->fd = -1;
            c->proto = &probe_h1_proto;
            c->buf = malloc(probe_buf_size);

            if (c->buf == NULL) {
                probe_hold_failed++;
                c->deadline = UINT64_MAX;
                continue;
            }

            probe_start_request(c, probe_now());
        }

        now = probe_now();

        if (probe_hold_idle + probe_hold_failed
            == (uint64_t) cf->connections || now >= setup_end)
        {
            break;
        }

        n = epoll_wait(probe_ep, events, 256, 10);

        for (i = 0; i < n; i++) {
            probe_handle(events[i].data.ptr);
        }

        now = probe_now();

        for (i = 0; (uint64_t) i < started; i++) {
            c = &conns[i];

            if (c->deadline <= now && c->state != PROBE_WAITING
                && c->state != PROBE_CLOSED)
            {
                probe_fail(c, &probe_stats.err_timeout);
            }
        }
    }

    /* the opening phase is over: what is not idle yet is given up */

    for (i = 0; (uint64_t) i < started; i++) {
        c = &conns[i];

        if (c->deadline != UINT64_MAX) {
            probe_fail(c, &probe_stats.err_timeout);
        }
    }

    errors = probe_stats.err_connect + probe_stats.err_timeout
             + probe_stats.err_read + probe_stats.err_write
             + probe_stats.status[0] + probe_stats.status[1]
             + probe_stats.status[4] + probe_stats.status[5];

    if (probe_hold_failed || started < (uint64_t) cf->connections) {
        fprintf(stderr, "weir-probe hold: %llu of %d connections failed "
                "or not opened (connect %llu, timeout %llu, read %llu, "
                "write %llu, status %llu, closed %llu)\n",
                (unsigned long long) (cf->connections - probe_hold_idle),
                cf->connections,
                (unsigned long long) probe_stats.err_connect,
                (unsigned long long) probe_stats.err_timeout,
                (unsigned long long) probe_stats.err_read,
                (unsigned long long) probe_stats.err_write,
                (unsigned long long) (probe_stats.status[0]
                                      + probe_stats.status[1]
                                      + probe_stats.status[4]
                                      + probe_stats.status[5]),
                (unsigned long long) (probe_hold_failed - errors));
    }

    printf("weir-probe hold: %llu idle\n",
           (unsigned long long) (probe_hold_idle - probe_hold_closed));
    fflush(stdout);

    /* hold: only a peer's close wakes a connection */

    hold_end = hold > 0 ? probe_now() + (uint64_t) (hold * PROBE_NS_PER_SEC)
                        : UINT64_MAX;

    while (!probe_stop && probe_now() < hold_end) {
        n = epoll_wait(probe_ep, events, 256, 100);

        for (i = 0; i < n; i++) {
            probe_handle(events[i].data.ptr);
        }
    }

    /* the closes already signalled count too */
    do {
        n = epoll_wait(probe_ep, events, 256, 0);

        for (i = 0; i < n; i++) {
            probe_handle(events[i].data.ptr);
        }
    } while (n > 0);

    printf("weir-probe hold: %llu open at end, %llu closed by peer\n",
           (unsigned long long) (probe_hold_idle - probe_hold_closed),
           (unsigned long long) probe_hold_closed);
    fflush(stdout);

    for (i = 0; (uint64_t) i < started; i++) {
        if (conns[i].fd != -1) {
            probe_close(&conns[i]);
        }

        free(conns[i].buf);
    }

    free(conns);
    close(probe_ep);

    return 0;
}
