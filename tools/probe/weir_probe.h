/*
 * weir_probe.h: weir-probe, the load generator and benchmark origin.
 *
 * A standalone program (it links none of weir's objects): weir's headers
 * give it the platform includes and weir_auto_config.h (WEIR_HAVE_OPENSSL).
 */

#ifndef _WEIR_PROBE_H_INCLUDED_
#define _WEIR_PROBE_H_INCLUDED_


#include <sys/epoll.h>
#include <stdint.h>


#define PROBE_NS_PER_US    1000ULL
#define PROBE_NS_PER_MS    1000000ULL
#define PROBE_NS_PER_SEC   1000000000ULL


/*
 * Latency histogram, log-linear (HDR-style): values in nanoseconds; below
 * 2 * PROBE_HIST_SUB every value has its own counter, above it every
 * power of two is cut into PROBE_HIST_SUB equal counters, so a value is
 * known within 1 / PROBE_HIST_SUB (0.8%). Values are clamped to
 * [1 us, 60 s].
 */

#define PROBE_HIST_SUB_BITS  7
#define PROBE_HIST_SUB       (1U << PROBE_HIST_SUB_BITS)
#define PROBE_HIST_MIN       PROBE_NS_PER_US
#define PROBE_HIST_MAX       (60 * PROBE_NS_PER_SEC)
/* 60 s < 2^36 ns: buckets for msb 8 .. 35, plus the exact range */
#define PROBE_HIST_SIZE      (2 * PROBE_HIST_SUB + 28 * PROBE_HIST_SUB)

typedef struct {
    uint64_t   counts[PROBE_HIST_SIZE];
    uint64_t   total;
    uint64_t   max;
    uint64_t   min;
    uint64_t   sum;
} probe_hist_t;


void probe_hist_init(probe_hist_t *h);
void probe_hist_record(probe_hist_t *h, uint64_t ns);
uint64_t probe_hist_percentile(probe_hist_t *h, double pct);
uint64_t probe_hist_index_value(unsigned idx);
unsigned probe_hist_index(uint64_t v);

uint64_t probe_now(void);
int probe_nonblock(int fd);

/* HTTP/1 head helpers shared by the client and the origin: is the header
 * line [line, colon) named name (caseless)? does [v, eol) hold token? */
#define probe_h1_header(line, colon, name)                                  \
    probe_h1_header_is(line, colon, name, sizeof(name) - 1)
int probe_h1_header_is(u_char *line, u_char *colon, const char *name,
    size_t len);
u_char *probe_crlf(u_char *p, size_t len);
u_char *probe_head_end(u_char *p, size_t len);
int probe_h1_value_has(u_char *v, u_char *eol, const char *token);
int probe_parse_addr(const char *text, struct sockaddr_storage *ss,
    socklen_t *len, char *host, size_t hostlen, int *port);

/* WebSocket handshake: SHA-1, base64, and Sec-WebSocket-Accept of a key */
#define PROBE_WS_ACCEPT_LEN  29

void probe_sha1(const u_char *data, size_t len, u_char out[20]);
size_t probe_base64(const u_char *src, size_t len, char *dst);
void probe_ws_accept(const u_char *key, size_t len,
    char out[PROBE_WS_ACCEPT_LEN]);

int probe_client_main(int argc, char **argv);
int probe_hold_main(int argc, char **argv);
int probe_origin_main(int argc, char **argv);


#endif /* _WEIR_PROBE_H_INCLUDED_ */
