#include "weir_config.h"
#include "weir_core.h"


void
weir_strlow(unsigned char *dst, unsigned char *src, size_t n)
{
    while (n) {
        *dst = weir_tolower(*src);
        dst++;
        src++;
        n--;
    }
}


weir_int_t
weir_strcasecmp(unsigned char *s1, unsigned char *s2)
{
    weir_uint_t  c1, c2;

    for ( ;; ) {
        c1 = weir_tolower(*s1);
        c2 = weir_tolower(*s2);
        s1++;
        s2++;

        if (c1 == c2) {
            if (c1) {
                continue;
            }
            return 0;
        }

        return c1 - c2;
    }
}


weir_int_t
weir_strncasecmp(unsigned char *s1, unsigned char *s2, size_t n)
{
    weir_uint_t  c1, c2;

    while (n) {
        c1 = weir_tolower(*s1);
        c2 = weir_tolower(*s2);
        s1++;
        s2++;

        if (c1 == c2) {
            if (c1) {
                n--;
                continue;
            }
            return 0;
        }

        return c1 - c2;
    }

    return 0;
}


weir_int_t
weir_str_eq(weir_str_t *a, weir_str_t *b)
{
    return a->len == b->len && weir_memcmp(a->data, b->data, a->len) == 0;
}


char *
weir_quote_for_log(char *buf, size_t size, unsigned char *p, size_t len)
{
    unsigned char  *q, *end, *last;

    static const char  hex[] = "0123456789abcdef";

    q = (unsigned char *) buf;

    if (size < 8) {
        if (size) {
            *q = '\0';
        }

        return buf;
    }

    end = q + size - sizeof("...");
    last = p ? p + len : p;

    for ( /* void */ ; p < last && end - q >= 4; p++) {
        if (*p >= ' ' && *p < 0x7f && *p != '"' && *p != '\\') {
            *q++ = *p;
            continue;
        }

        *q++ = '\\';
        *q++ = 'x';
        *q++ = hex[*p >> 4];
        *q++ = hex[*p & 0xf];
    }

    if (p < last) {
        q = weir_cpymem(q, "...", 3);
    }

    *q = '\0';

    return buf;
}


weir_int_t
weir_str_caseeq(weir_str_t *a, weir_str_t *b)
{
    size_t  i;

    if (a->len != b->len) {
        return 0;
    }

    for (i = 0; i < a->len; i++) {
        if (weir_tolower(a->data[i]) != weir_tolower(b->data[i])) {
            return 0;
        }
    }

    return 1;
}


unsigned char *
weir_strlchr(unsigned char *p, unsigned char *last, unsigned char c)
{
    while (p < last) {
        if (*p == c) {
            return p;
        }
        p++;
    }

    return NULL;
}


unsigned char *
weir_cpystrn(unsigned char *dst, unsigned char *src, size_t n)
{
    if (n == 0) {
        return dst;
    }

    while (--n) {
        *dst = *src;

        if (*dst == '\0') {
            return dst;
        }

        dst++;
        src++;
    }

    *dst = '\0';

    return dst;
}


unsigned char *
weir_pstrdup(weir_pool_t *pool, weir_str_t *src)
{
    unsigned char  *dst;

    dst = weir_pnalloc(pool, src->len ? src->len : 1);
    if (dst == NULL) {
        return NULL;
    }

    if (src->len) {
        weir_memcpy(dst, src->data, src->len);
    }

    return dst;
}


char *
weir_pstrdupz(weir_pool_t *pool, weir_str_t *src)
{
    char  *dst;

    dst = weir_pnalloc(pool, src->len + 1);
    if (dst == NULL) {
        return NULL;
    }

    if (src->len) {
        weir_memcpy(dst, src->data, src->len);
    }

    dst[src->len] = '\0';

    return dst;
}


weir_int_t
weir_atoi(unsigned char *line, size_t n)
{
    weir_int_t  value, cutoff, cutlim;

    if (n == 0) {
        return WEIR_ERROR;
    }

    cutoff = WEIR_MAX_INT_T_VALUE / 10;
    cutlim = WEIR_MAX_INT_T_VALUE % 10;

    for (value = 0; n--; line++) {
        if (*line < '0' || *line > '9') {
            return WEIR_ERROR;
        }

        if (value >= cutoff && (value > cutoff || *line - '0' > cutlim)) {
            return WEIR_ERROR;
        }

        value = value * 10 + (*line - '0');
    }

    return value;
}


ssize_t
weir_atosz(unsigned char *line, size_t n)
{
    return (ssize_t) weir_atoi(line, n);
}


off_t
weir_atoof(unsigned char *line, size_t n)
{
    off_t  value, cutoff, cutlim;

    if (n == 0) {
        return WEIR_ERROR;
    }

    cutoff = WEIR_MAX_OFF_T_VALUE / 10;
    cutlim = WEIR_MAX_OFF_T_VALUE % 10;

    for (value = 0; n--; line++) {
        if (*line < '0' || *line > '9') {
            return WEIR_ERROR;
        }

        if (value >= cutoff && (value > cutoff || *line - '0' > cutlim)) {
            return WEIR_ERROR;
        }

        value = value * 10 + (*line - '0');
    }

    return value;
}


weir_int_t
weir_hextoi(unsigned char *line, size_t n)
{
    unsigned char  c, ch;
    weir_int_t     value, cutoff;

    if (n == 0) {
        return WEIR_ERROR;
    }

    cutoff = WEIR_MAX_INT_T_VALUE / 16;

    for (value = 0; n--; line++) {
        if (value > cutoff) {
            return WEIR_ERROR;
        }

        ch = *line;

        if (ch >= '0' && ch <= '9') {
            value = value * 16 + (ch - '0');
            continue;
        }

        c = (unsigned char) (ch | 0x20);

        if (c >= 'a' && c <= 'f') {
            value = value * 16 + (c - 'a' + 10);
            continue;
        }

        return WEIR_ERROR;
    }

    return value;
}


static off_t
weir_parse_scaled(weir_str_t *line, off_t max)
{
    unsigned char  unit;
    size_t         len;
    off_t          size, scale;

    len = line->len;

    if (len == 0) {
        return WEIR_ERROR;
    }

    unit = line->data[len - 1];

    switch (unit) {
    case 'K':
    case 'k':
        len--;
        scale = 1024;
        break;

    case 'M':
    case 'm':
        len--;
        scale = 1024 * 1024;
        break;

    case 'G':
    case 'g':
        len--;
        scale = 1024 * 1024 * 1024;
        break;

    default:
        scale = 1;
    }

    size = weir_atoof(line->data, len);
    if (size == WEIR_ERROR || size > max / scale) {
        return WEIR_ERROR;
    }

    return size * scale;
}


ssize_t
weir_parse_size(weir_str_t *line)
{
    return (ssize_t) weir_parse_scaled(line, (off_t) SSIZE_MAX);
}


off_t
weir_parse_offset(weir_str_t *line)
{
    return weir_parse_scaled(line, WEIR_MAX_OFF_T_VALUE);
}


weir_int_t
weir_parse_time(weir_str_t *line, weir_uint_t is_sec)
{
    unsigned char  *p, *last;
    weir_int_t      value, total, scale, max, cutoff, cutlim;
    weir_uint_t     valid, seen;
    enum {
        st_start = 0,
        st_year, st_month, st_week, st_day, st_hour, st_min, st_sec,
        st_msec, st_last
    } step;

    valid = 0;
    seen = 0;
    value = 0;
    total = 0;
    cutoff = WEIR_MAX_INT_T_VALUE / 10;
    cutlim = WEIR_MAX_INT_T_VALUE % 10;
    step = is_sec ? st_start : st_month;

    p = line->data;
    last = p + line->len;

    while (p < last) {

        if (*p >= '0' && *p <= '9') {
            if (value >= cutoff && (value > cutoff || *p - '0' > cutlim)) {
                return WEIR_ERROR;
            }

            value = value * 10 + (*p++ - '0');
            valid = 1;
            seen = 1;
            continue;
        }

        if (!seen) {
            return WEIR_ERROR;
        }

        switch (*p++) {

        case 'y':
            if (step > st_start) {
                return WEIR_ERROR;
            }
            step = st_year;
            max = WEIR_MAX_INT_T_VALUE / (60 * 60 * 24 * 365);
            scale = 60 * 60 * 24 * 365;
            break;

        case 'M':
            if (step >= st_month) {
                return WEIR_ERROR;
            }
            step = st_month;
            max = WEIR_MAX_INT_T_VALUE / (60 * 60 * 24 * 30);
            scale = 60 * 60 * 24 * 30;
            break;

        case 'w':
            if (step >= st_week) {
                return WEIR_ERROR;
            }
            step = st_week;
            max = WEIR_MAX_INT_T_VALUE / (60 * 60 * 24 * 7);
            scale = 60 * 60 * 24 * 7;
            break;

        case 'd':
            if (step >= st_day) {
                return WEIR_ERROR;
            }
            step = st_day;
            max = WEIR_MAX_INT_T_VALUE / (60 * 60 * 24);
            scale = 60 * 60 * 24;
            break;

        case 'h':
            if (step >= st_hour) {
                return WEIR_ERROR;
            }
            step = st_hour;
            max = WEIR_MAX_INT_T_VALUE / (60 * 60);
            scale = 60 * 60;
            break;

        case 'm':
            if (p < last && *p == 's') {
                if (is_sec || step >= st_msec) {
                    return WEIR_ERROR;
                }
                p++;
                step = st_msec;
                max = WEIR_MAX_INT_T_VALUE;
                scale = 1;
                break;
            }

            if (step >= st_min) {
                return WEIR_ERROR;
            }
            step = st_min;
            max = WEIR_MAX_INT_T_VALUE / 60;
            scale = 60;
            break;

        case 's':
            if (step >= st_sec) {
                return WEIR_ERROR;
            }
            step = st_sec;
            max = WEIR_MAX_INT_T_VALUE;
            scale = 1;
            break;

        case ' ':
            if (step >= st_sec) {
                return WEIR_ERROR;
            }
            step = st_last;
            max = WEIR_MAX_INT_T_VALUE;
            scale = 1;
            break;

        default:
            return WEIR_ERROR;
        }

        if (step != st_msec && !is_sec) {
            scale *= 1000;
            max /= 1000;
        }

        if (value > max) {
            return WEIR_ERROR;
        }

        value *= scale;

        if (total > WEIR_MAX_INT_T_VALUE - value) {
            return WEIR_ERROR;
        }

        total += value;
        value = 0;
        seen = 0;

        while (p < last && *p == ' ') {
            p++;
        }
    }

    if (!valid) {
        return WEIR_ERROR;
    }

    if (!is_sec) {
        if (value > WEIR_MAX_INT_T_VALUE / 1000) {
            return WEIR_ERROR;
        }

        value *= 1000;
    }

    if (total > WEIR_MAX_INT_T_VALUE - value) {
        return WEIR_ERROR;
    }

    return total + value;
}


unsigned char *
weir_vslprintf(unsigned char *buf, unsigned char *last, const char *fmt,
    va_list args)
{
    int     n;
    size_t  room;

    if (buf >= last) {
        return buf;
    }

    room = last - buf;
    n = vsnprintf((char *) buf, room, fmt, args);

    if (n < 0) {
        return buf;
    }

    /* vsnprintf wrote at most room - 1 characters and a NUL */
    if ((size_t) n >= room) {
        return last - 1 > buf ? last - 1 : buf;
    }

    return buf + n;
}


unsigned char *
weir_slprintf(unsigned char *buf, unsigned char *last, const char *fmt, ...)
{
    unsigned char  *p;
    va_list         args;

    va_start(args, fmt);
    p = weir_vslprintf(buf, last, fmt, args);
    va_end(args);

    return p;
}


weir_int_t
weir_pstrfmt(weir_pool_t *pool, weir_str_t *out, const char *fmt, ...)
{
    int       n;
    va_list   args;
    char     *p;

    va_start(args, fmt);
    n = vsnprintf(NULL, 0, fmt, args);
    va_end(args);

    if (n < 0) {
        return WEIR_ERROR;
    }

    p = weir_pnalloc(pool, (size_t) n + 1);
    if (p == NULL) {
        return WEIR_ERROR;
    }

    va_start(args, fmt);
    (void) vsnprintf(p, (size_t) n + 1, fmt, args);
    va_end(args);

    out->len = (size_t) n;
    out->data = (unsigned char *) p;

    return WEIR_OK;
}


unsigned char *
weir_sprint_uint(unsigned char *p, uint64_t n)
{
    unsigned char   tmp[WEIR_INT_T_LEN];
    unsigned char  *t;

    /* digits come out least significant first */
    t = tmp + sizeof(tmp);

    do {
        *--t = (unsigned char) ('0' + n % 10);
        n /= 10;
    } while (n);

    return weir_cpymem(p, t, (size_t) (tmp + sizeof(tmp) - t));
}


unsigned char *
weir_sprint_hex(unsigned char *p, uint64_t n)
{
    unsigned char   tmp[WEIR_INT_T_LEN];
    unsigned char  *t;

    static const char  hex[] = "0123456789abcdef";

    t = tmp + sizeof(tmp);

    do {
        *--t = (unsigned char) hex[n & 0xf];
        n >>= 4;
    } while (n);

    return weir_cpymem(p, t, (size_t) (tmp + sizeof(tmp) - t));
}
