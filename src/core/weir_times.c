#include "weir_config.h"
#include "weir_core.h"


weir_msec_t     weir_current_msec;
time_t          weir_cached_time_sec;
weir_str_t      weir_cached_err_log_time;
weir_str_t      weir_cached_http_time;
weir_str_t      weir_cached_http_log_time;
weir_str_t      weir_cached_iso8601_time;

static unsigned char  weir_err_log_time[sizeof("1970/09/28 12:00:00")];
static unsigned char  weir_http_time_buf[
                          sizeof("Mon, 28 Sep 1970 06:00:00 GMT")];
static unsigned char  weir_http_log_time[sizeof("28/Sep/1970:12:00:00 +0600")];
static unsigned char  weir_iso8601_time[sizeof("1970-09-28T12:00:00+06:00")];

static time_t         weir_last_sec = -1;

static const char  *weir_week[] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri",
                                    "Sat" };
static const char  *weir_months[] = { "Jan", "Feb", "Mar", "Apr", "May",
                                      "Jun", "Jul", "Aug", "Sep", "Oct",
                                      "Nov", "Dec" };


void
weir_time_init(void)
{
    weir_cached_err_log_time.len = sizeof("1970/09/28 12:00:00") - 1;
    weir_cached_http_time.len = sizeof("Mon, 28 Sep 1970 06:00:00 GMT") - 1;
    weir_cached_http_log_time.len = sizeof("28/Sep/1970:12:00:00 +0600") - 1;
    weir_cached_iso8601_time.len = sizeof("1970-09-28T12:00:00+06:00") - 1;

    weir_cached_err_log_time.data = weir_err_log_time;
    weir_cached_http_time.data = weir_http_time_buf;
    weir_cached_http_log_time.data = weir_http_log_time;
    weir_cached_iso8601_time.data = weir_iso8601_time;

    weir_last_sec = -1;
    weir_time_update();
}


void
weir_time_update(void)
{
    struct timespec  ts;
    struct tm        tm, gmt;
    long             off;
    char             sign;
    char             tmp[128];

    clock_gettime(CLOCK_MONOTONIC, &ts);
    weir_current_msec = (weir_msec_t) ts.tv_sec * 1000
                        + (weir_msec_t) (ts.tv_nsec / 1000000);

    clock_gettime(CLOCK_REALTIME, &ts);

    if (ts.tv_sec == weir_last_sec) {
        return;
    }

    weir_last_sec = ts.tv_sec;
    weir_cached_time_sec = ts.tv_sec;

    gmtime_r(&ts.tv_sec, &gmt);
    localtime_r(&ts.tv_sec, &tm);

    (void) weir_http_time(weir_http_time_buf, ts.tv_sec);

    /* format into a roomy scratch buffer: the fields are bounded in
     * practice, but the compiler cannot know it */

    (void) snprintf(tmp, sizeof(tmp), "%4d/%02d/%02d %02d:%02d:%02d",
                    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                    tm.tm_hour, tm.tm_min, tm.tm_sec);
    weir_memcpy(weir_err_log_time, tmp, weir_cached_err_log_time.len);

    off = tm.tm_gmtoff / 60;
    sign = off < 0 ? '-' : '+';
    off = weir_abs(off) % (24 * 60);

    (void) snprintf(tmp, sizeof(tmp),
                    "%02d/%s/%d:%02d:%02d:%02d %c%02ld%02ld",
                    tm.tm_mday, weir_months[tm.tm_mon], tm.tm_year + 1900,
                    tm.tm_hour, tm.tm_min, tm.tm_sec, sign, off / 60,
                    off % 60);
    weir_memcpy(weir_http_log_time, tmp, weir_cached_http_log_time.len);

    (void) snprintf(tmp, sizeof(tmp),
                    "%4d-%02d-%02dT%02d:%02d:%02d%c%02ld:%02ld",
                    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                    tm.tm_hour, tm.tm_min, tm.tm_sec, sign, off / 60,
                    off % 60);
    weir_memcpy(weir_iso8601_time, tmp, weir_cached_iso8601_time.len);
}


unsigned char *
weir_http_time(unsigned char *buf, time_t t)
{
    struct tm       gmt;
    int             n, year;
    unsigned char  *p;

    gmtime_r(&t, &gmt);

    year = gmt.tm_year + 1900;

    /*
     * Written digit by digit: every static response carries a
     * Last-Modified, and snprintf() cost ten times the gmtime_r() call.
     * Years outside 1000-9999 keep the printf rendering.
     */

    if (year >= 1000 && year <= 9999) {
        p = weir_cpymem(buf, weir_week[gmt.tm_wday], 3);
        *p++ = ',';
        *p++ = ' ';
        *p++ = (unsigned char) ('0' + gmt.tm_mday / 10);
        *p++ = (unsigned char) ('0' + gmt.tm_mday % 10);
        *p++ = ' ';
        p = weir_cpymem(p, weir_months[gmt.tm_mon], 3);
        *p++ = ' ';
        *p++ = (unsigned char) ('0' + year / 1000);
        *p++ = (unsigned char) ('0' + year / 100 % 10);
        *p++ = (unsigned char) ('0' + year / 10 % 10);
        *p++ = (unsigned char) ('0' + year % 10);
        *p++ = ' ';
        *p++ = (unsigned char) ('0' + gmt.tm_hour / 10);
        *p++ = (unsigned char) ('0' + gmt.tm_hour % 10);
        *p++ = ':';
        *p++ = (unsigned char) ('0' + gmt.tm_min / 10);
        *p++ = (unsigned char) ('0' + gmt.tm_min % 10);
        *p++ = ':';
        *p++ = (unsigned char) ('0' + gmt.tm_sec / 10);
        *p++ = (unsigned char) ('0' + gmt.tm_sec % 10);
        p = weir_cpymem(p, " GMT", 4);

        /* as snprintf() left it */
        *p = '\0';

        return p;
    }

    n = snprintf((char *) buf, sizeof("Mon, 28 Sep 1970 06:00:00 GMT"),
                 "%s, %02d %s %4d %02d:%02d:%02d GMT",
                 weir_week[gmt.tm_wday], gmt.tm_mday,
                 weir_months[gmt.tm_mon], gmt.tm_year + 1900,
                 gmt.tm_hour, gmt.tm_min, gmt.tm_sec);

    return buf + n;
}


time_t
weir_parse_http_time(unsigned char *value, size_t len)
{
    char       buf[64], *end;
    struct tm  tm;

    if (len == 0 || len >= sizeof(buf)) {
        return -1;
    }

    weir_memcpy(buf, value, len);
    buf[len] = '\0';
    weir_memzero(&tm, sizeof(struct tm));

    /* RFC 9110 IMF-fixdate, then the two obsolete forms */
    end = strptime(buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);

    if (end == NULL || *end != '\0') {
        weir_memzero(&tm, sizeof(struct tm));
        end = strptime(buf, "%A, %d-%b-%y %H:%M:%S GMT", &tm);
    }

    if (end == NULL || *end != '\0') {
        weir_memzero(&tm, sizeof(struct tm));
        end = strptime(buf, "%a %b %e %H:%M:%S %Y", &tm);
    }

    if (end == NULL || *end != '\0') {
        return -1;
    }

    return timegm(&tm);
}
