#ifndef _WEIR_TIMES_H_INCLUDED_
#define _WEIR_TIMES_H_INCLUDED_

/*
 * The clock is read once per event-loop iteration (weir_time_update) and
 * cached: weir_current_msec is a monotonic millisecond clock for timers,
 * weir_cached_time_sec the wall clock, and the preformatted strings serve
 * log lines and HTTP Date headers without a syscall each.
 */

extern weir_msec_t         weir_current_msec;
extern time_t              weir_cached_time_sec;
/* "2026/11/29 23:59:59", an RFC 9110 date, "29/Nov/2026:23:59:59 +0000" */
extern weir_str_t          weir_cached_err_log_time;
extern weir_str_t          weir_cached_http_time;
extern weir_str_t          weir_cached_http_log_time;
extern weir_str_t          weir_cached_iso8601_time;

void weir_time_init(void);
void weir_time_update(void);
/* formats t as an HTTP date into buf (at least 30 bytes); returns end */
unsigned char *weir_http_time(unsigned char *buf, time_t t);
/* parses an HTTP date; -1 when invalid */
time_t weir_parse_http_time(unsigned char *value, size_t len);

#define weir_time()     weir_cached_time_sec

#endif /* _WEIR_TIMES_H_INCLUDED_ */
