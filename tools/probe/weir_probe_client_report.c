/*
 * weir-probe client, the report: the figures of a run (probe_stats_t) as
 * a human-readable summary on stdout, or one CSV line with --csv (and its
 * header with --csv-header); shared by the HTTP/1 and HTTP/2 loops.
 */

#include "weir_config.h"
#include "weir_core.h"
#include "weir_probe.h"
#include "weir_probe_client.h"


static void probe_fmt_time(char *buf, size_t size, uint64_t ns);
static void probe_report_proxy(probe_client_conf_t *cf, probe_stats_t *st);


static void
probe_fmt_time(char *buf, size_t size, uint64_t ns)
{
    if (ns < 10 * PROBE_NS_PER_MS) {
        snprintf(buf, size, "%.3f ms", (double) ns / PROBE_NS_PER_MS);

    } else if (ns < 10 * PROBE_NS_PER_SEC) {
        snprintf(buf, size, "%.2f ms", (double) ns / PROBE_NS_PER_MS);

    } else {
        snprintf(buf, size, "%.2f s", (double) ns / PROBE_NS_PER_SEC);
    }
}


/*
 * --proxy: the CONNECT answers by status, "200 7, 403 5" (0 is "bad":
 * none before a close, or no HTTP head); the failures are in the connect
 * errors already
 */

static void
probe_report_proxy(probe_client_conf_t *cf, probe_stats_t *st)
{
    int       i;
    uint64_t  total;

    total = st->proxy_other;
    for (i = 0; i < PROBE_PROXY_CODES; i++) {
        total += st->proxy_count[i];
    }

    printf("  proxy      %s, CONNECT %llu", cf->proxy,
           (unsigned long long) total);

    for (i = 0; i < PROBE_PROXY_CODES && st->proxy_count[i]; i++) {
        if (st->proxy_code[i] == 0) {
            printf("%sbad %llu", i ? ", " : " (",
                   (unsigned long long) st->proxy_count[i]);

        } else {
            printf("%s%d %llu", i ? ", " : " (", st->proxy_code[i],
                   (unsigned long long) st->proxy_count[i]);
        }
    }

    if (st->proxy_other) {
        printf(", other %llu", (unsigned long long) st->proxy_other);
    }

    printf("%s\n", total ? ")" : "");
}


void
probe_report(probe_client_conf_t *cf, probe_stats_t *st, double elapsed,
    double cpu_user, double cpu_sys)
{
    int          i;
    char         t[6][32];
    double       rps, cpu_pct;
    uint64_t     errors, v[6];
    const char  *mode, *proto;

    mode = cf->ws ? "websocket" : cf->new_conn ? "new-conn" : "keep-alive";
    proto = cf->h2 ? "h2" : probe_h1_proto.name;
    cpu_pct = elapsed > 0 ? (cpu_user + cpu_sys) / elapsed * 100 : 0;

    errors = st->err_connect + st->err_timeout + st->err_read
             + st->err_write + st->err_refused + st->status[0]
             + st->status[1] + st->status[4] + st->status[5];

    rps = elapsed > 0 ? (double) st->requests / elapsed : 0;

    v[0] = probe_hist_percentile(&st->hist, 50);
    v[1] = probe_hist_percentile(&st->hist, 90);
    v[2] = probe_hist_percentile(&st->hist, 99);
    v[3] = probe_hist_percentile(&st->hist, 99.9);
    v[4] = st->hist.max;
    v[5] = st->hist.total ? st->hist.sum / st->hist.total : 0;

    if (cf->csv) {
        if (cf->csv_header) {
            printf("proto,connections,mode,method,body,rate,duration_s,"
                   "requests,rps,bytes_read,bytes_written,errors,"
                   "err_connect,err_timeout,err_read,err_write,"
                   "status_other,status_2xx,status_3xx,status_4xx,"
                   "status_5xx,p50_us,p90_us,p99_us,p999_us,max_us,"
                   "mean_us,cpu_user_s,cpu_sys_s,cpu_pct,streams,"
                   "err_refused\n");
        }

        printf("%s%s,%d,%s,%s,%zu,%.0f,%.3f,%llu,%.1f,%llu,%llu,%llu,"
               "%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,",
               cf->urls[0].tls ? "tls+" : "", proto,
               cf->connections, mode, cf->method,
               cf->ws ? cf->ws_bytes : cf->body, cf->rate, elapsed,
               (unsigned long long) st->requests, rps,
               (unsigned long long) st->bytes_in,
               (unsigned long long) st->bytes_out,
               (unsigned long long) errors,
               (unsigned long long) st->err_connect,
               (unsigned long long) st->err_timeout,
               (unsigned long long) st->err_read,
               (unsigned long long) st->err_write,
               (unsigned long long) (st->status[0] + st->status[1]),
               (unsigned long long) st->status[2],
               (unsigned long long) st->status[3],
               (unsigned long long) st->status[4],
               (unsigned long long) st->status[5]);

        for (i = 0; i < 6; i++) {
            printf("%.1f,", (double) v[i] / PROBE_NS_PER_US);
        }

        printf("%.3f,%.3f,%.1f,%d,%llu\n", cpu_user, cpu_sys, cpu_pct,
               cf->streams, (unsigned long long) st->err_refused);

        fflush(stdout);
        return;
    }

    for (i = 0; i < 6; i++) {
        probe_fmt_time(t[i], sizeof(t[i]), v[i]);
    }

    printf("weir-probe: %s%s, %d connection%s",
           cf->urls[0].tls ? "tls+" : "", proto,
           cf->connections, cf->connections == 1 ? "" : "s");

    if (cf->h2) {
        printf(" x %d stream%s", cf->streams, cf->streams == 1 ? "" : "s");
    }

    printf(", %s, %s",
           cf->ws ? "websocket"
           : cf->new_conn ? "new connection per request" : "keep-alive",
           cf->ws ? "echo" : cf->method);

    if (cf->post || cf->ws) {
        printf(" %zu bytes", cf->ws ? cf->ws_bytes : cf->body);
    }

    if (cf->pause_bytes) {
        printf(", read pause %zu:%.0f ms", cf->pause_bytes,
               (double) cf->pause_ns / PROBE_NS_PER_MS);
    }

    printf(", %d URL%s", cf->nurls, cf->nurls == 1 ? "" : "s");

    if (cf->rate > 0) {
        printf(", %.0f req/s paced", cf->rate);
    }

    printf("\n  measured   %.2f s after %.2f s of warm-up\n"
           "  requests   %llu, %.1f req/s\n"
           "  bytes      read %llu (%.2f MiB/s), written %llu\n"
           "  errors     %llu (connect %llu, timeout %llu, read %llu, "
           "write %llu, refused %llu, status %llu)\n"
           "  status     2xx %llu, 3xx %llu, 4xx %llu, 5xx %llu, "
           "other %llu\n",
           elapsed, cf->warmup,
           (unsigned long long) st->requests, rps,
           (unsigned long long) st->bytes_in,
           elapsed > 0 ? (double) st->bytes_in / elapsed / 1048576 : 0,
           (unsigned long long) st->bytes_out,
           (unsigned long long) errors,
           (unsigned long long) st->err_connect,
           (unsigned long long) st->err_timeout,
           (unsigned long long) st->err_read,
           (unsigned long long) st->err_write,
           (unsigned long long) st->err_refused,
           (unsigned long long) (st->status[0] + st->status[1]
                                 + st->status[4] + st->status[5]),
           (unsigned long long) st->status[2],
           (unsigned long long) st->status[3],
           (unsigned long long) st->status[4],
           (unsigned long long) st->status[5],
           (unsigned long long) (st->status[0] + st->status[1]));

    if (cf->proxy != NULL) {
        probe_report_proxy(cf, st);
    }

    printf("  latency    p50 %s, p90 %s, p99 %s, p99.9 %s, max %s, "
           "mean %s\n"
           "  cpu        user %.2f s, system %.2f s (%.0f%% of a core)\n",
           t[0], t[1], t[2], t[3], t[4], t[5],
           cpu_user, cpu_sys, cpu_pct);

    fflush(stdout);
}
