#include "weir_config.h"
#include "weir_core.h"
#include "weir_unit.h"


#define S(text)  (unsigned char *) (text), sizeof(text) - 1


static weir_int_t
parse_time(const char *text, weir_uint_t is_sec)
{
    weir_str_t  s;

    s.len = strlen(text);
    s.data = (unsigned char *) text;

    return weir_parse_time(&s, is_sec);
}


static ssize_t
parse_size(const char *text)
{
    weir_str_t  s;

    s.len = strlen(text);
    s.data = (unsigned char *) text;

    return weir_parse_size(&s);
}


WEIR_UNIT_TEST(string_atoi)
{
    WEIR_CHECK_INT(weir_atoi(S("0")), 0);
    WEIR_CHECK_INT(weir_atoi(S("42")), 42);
    WEIR_CHECK_INT(weir_atoi(S("000123")), 123);
    WEIR_CHECK_INT(weir_atoi(S("9223372036854775807")), INTPTR_MAX);

    /* one past the maximum, and far past it */
    WEIR_CHECK_INT(weir_atoi(S("9223372036854775808")), WEIR_ERROR);
    WEIR_CHECK_INT(weir_atoi(S("9223372036854775810")), WEIR_ERROR);
    WEIR_CHECK_INT(weir_atoi(S("99999999999999999999999")), WEIR_ERROR);

    WEIR_CHECK_INT(weir_atoi(S("")), WEIR_ERROR);
    WEIR_CHECK_INT(weir_atoi(S("-1")), WEIR_ERROR);
    WEIR_CHECK_INT(weir_atoi(S("+1")), WEIR_ERROR);
    WEIR_CHECK_INT(weir_atoi(S("12a")), WEIR_ERROR);
    WEIR_CHECK_INT(weir_atoi(S(" 1")), WEIR_ERROR);

    /* only n bytes are read */
    WEIR_CHECK_INT(weir_atoi((unsigned char *) "12345", 2), 12);

    WEIR_CHECK_INT(weir_atoof(S("9223372036854775807")), INT64_MAX);
    WEIR_CHECK_INT(weir_atoof(S("9223372036854775808")), WEIR_ERROR);
    WEIR_CHECK_INT(weir_atosz(S("1024")), 1024);
}


WEIR_UNIT_TEST(string_hextoi)
{
    WEIR_CHECK_INT(weir_hextoi(S("0")), 0);
    WEIR_CHECK_INT(weir_hextoi(S("ff")), 255);
    WEIR_CHECK_INT(weir_hextoi(S("FF")), 255);
    WEIR_CHECK_INT(weir_hextoi(S("1a2B")), 0x1a2b);
    WEIR_CHECK_INT(weir_hextoi(S("7fffffffffffffff")), INTPTR_MAX);

    WEIR_CHECK_INT(weir_hextoi(S("8000000000000000")), WEIR_ERROR);
    WEIR_CHECK_INT(weir_hextoi(S("ffffffffffffffff")), WEIR_ERROR);
    WEIR_CHECK_INT(weir_hextoi(S("10000000000000000")), WEIR_ERROR);
    WEIR_CHECK_INT(weir_hextoi(S("")), WEIR_ERROR);
    WEIR_CHECK_INT(weir_hextoi(S("0x10")), WEIR_ERROR);
    WEIR_CHECK_INT(weir_hextoi(S("g")), WEIR_ERROR);
}


WEIR_UNIT_TEST(string_parse_size)
{
    WEIR_CHECK_INT(parse_size("10"), 10);
    WEIR_CHECK_INT(parse_size("10k"), 10 * 1024);
    WEIR_CHECK_INT(parse_size("10K"), 10 * 1024);
    WEIR_CHECK_INT(parse_size("10m"), 10 * 1024 * 1024);
    WEIR_CHECK_INT(parse_size("10M"), 10 * 1024 * 1024);
    WEIR_CHECK_INT(parse_size("1g"), 1024 * 1024 * 1024);
    WEIR_CHECK_INT(parse_size("0"), 0);

    WEIR_CHECK_INT(parse_size("bad"), WEIR_ERROR);
    WEIR_CHECK_INT(parse_size(""), WEIR_ERROR);
    WEIR_CHECK_INT(parse_size("k"), WEIR_ERROR);
    WEIR_CHECK_INT(parse_size("10kb"), WEIR_ERROR);
    WEIR_CHECK_INT(parse_size("10 k"), WEIR_ERROR);
    WEIR_CHECK_INT(parse_size("-1k"), WEIR_ERROR);

    /* too big once scaled */
    WEIR_CHECK_INT(parse_size("9223372036854775807k"), WEIR_ERROR);
    WEIR_CHECK_INT(parse_size("8589934592g"), WEIR_ERROR);
}


WEIR_UNIT_TEST(string_parse_time_msec)
{
    WEIR_CHECK_INT(parse_time("500ms", 0), 500);
    WEIR_CHECK_INT(parse_time("30s", 0), 30000);
    WEIR_CHECK_INT(parse_time("1m 30s", 0), 90000);
    WEIR_CHECK_INT(parse_time("1m30s", 0), 90000);
    WEIR_CHECK_INT(parse_time("1h", 0), 3600000);
    WEIR_CHECK_INT(parse_time("1d", 0), 86400000);
    WEIR_CHECK_INT(parse_time("2w", 0), 2 * 7 * 86400000LL);
    WEIR_CHECK_INT(parse_time("1h 1m 1s 1ms", 0), 3661001);

    /* a bare number is seconds */
    WEIR_CHECK_INT(parse_time("30", 0), 30000);
    WEIR_CHECK_INT(parse_time("0", 0), 0);

    /* years and months are too coarse for milliseconds */
    WEIR_CHECK_INT(parse_time("1y", 0), WEIR_ERROR);
    WEIR_CHECK_INT(parse_time("1M", 0), WEIR_ERROR);
}


WEIR_UNIT_TEST(string_parse_time_sec)
{
    WEIR_CHECK_INT(parse_time("30s", 1), 30);
    WEIR_CHECK_INT(parse_time("30", 1), 30);
    WEIR_CHECK_INT(parse_time("1m 30s", 1), 90);
    WEIR_CHECK_INT(parse_time("1h", 1), 3600);
    WEIR_CHECK_INT(parse_time("1d", 1), 86400);
    WEIR_CHECK_INT(parse_time("2w", 1), 2 * 7 * 86400);
    WEIR_CHECK_INT(parse_time("1y", 1), 365 * 86400);
    WEIR_CHECK_INT(parse_time("1M", 1), 30 * 86400);

    /* milliseconds do not fit a time in seconds */
    WEIR_CHECK_INT(parse_time("500ms", 1), WEIR_ERROR);
}


WEIR_UNIT_TEST(string_parse_time_errors)
{
    weir_uint_t  is_sec;

    for (is_sec = 0; is_sec <= 1; is_sec++) {
        WEIR_CHECK_INT(parse_time("", is_sec), WEIR_ERROR);
        WEIR_CHECK_INT(parse_time("s", is_sec), WEIR_ERROR);
        WEIR_CHECK_INT(parse_time("abc", is_sec), WEIR_ERROR);
        WEIR_CHECK_INT(parse_time("10x", is_sec), WEIR_ERROR);
        WEIR_CHECK_INT(parse_time("-1s", is_sec), WEIR_ERROR);
        WEIR_CHECK_INT(parse_time("1s 1m", is_sec), WEIR_ERROR);
        WEIR_CHECK_INT(parse_time("1m 1m", is_sec), WEIR_ERROR);
        WEIR_CHECK_INT(parse_time("1ss", is_sec), WEIR_ERROR);
        WEIR_CHECK_INT(parse_time("99999999999999999999s", is_sec),
                       WEIR_ERROR);
        WEIR_CHECK_INT(parse_time("9999999999999999w", is_sec),
                       WEIR_ERROR);
    }
}


WEIR_UNIT_TEST(string_slprintf)
{
    unsigned char  buf[16], *p;

    p = weir_slprintf(buf, buf + sizeof(buf), "%d-%s", 42, "ab");
    WEIR_CHECK(p == buf + 5);
    WEIR_CHECK_MEM(buf, p - buf, "42-ab");

    /* truncated: never past last, and what is there is the start */
    p = weir_slprintf(buf, buf + 8, "%s", "hello, world");
    WEIR_CHECK(p > buf && p <= buf + 8);
    WEIR_CHECK(memcmp(buf, "hello, world", (size_t) (p - buf)) == 0);

    /* no room at all */
    WEIR_CHECK(weir_slprintf(buf, buf, "%s", "x") == buf);

    /* chained calls append */
    p = weir_slprintf(buf, buf + sizeof(buf), "%.*s", 3, "abcdef");
    p = weir_slprintf(p, buf + sizeof(buf), "%c", 'Z');
    WEIR_CHECK_MEM(buf, p - buf, "abcZ");
}


WEIR_UNIT_TEST(string_pstrfmt)
{
    weir_str_t    s;
    weir_pool_t  *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    WEIR_REQUIRE(weir_pstrfmt(pool, &s, "%s:%d", "localhost", 8080)
                 == WEIR_OK);
    WEIR_CHECK_MEM(s.data, s.len, "localhost:8080");
    WEIR_CHECK(s.data[s.len] == '\0');
}


WEIR_UNIT_TEST(string_case)
{
    unsigned char  buf[8];
    weir_str_t     a, b;

    WEIR_CHECK_INT(weir_strcasecmp((unsigned char *) "Hello",
                                   (unsigned char *) "hELLO"), 0);
    WEIR_CHECK(weir_strcasecmp((unsigned char *) "abc",
                               (unsigned char *) "ABD") < 0);
    WEIR_CHECK(weir_strcasecmp((unsigned char *) "abc",
                               (unsigned char *) "AB") > 0);
    WEIR_CHECK(weir_strcasecmp((unsigned char *) "",
                               (unsigned char *) "a") < 0);

    WEIR_CHECK_INT(weir_strncasecmp((unsigned char *) "Content-Type",
                                    (unsigned char *) "CONTENT-length", 8),
                   0);
    WEIR_CHECK(weir_strncasecmp((unsigned char *) "Content-Type",
                                (unsigned char *) "CONTENT-length", 9)
               != 0);

    weir_strlow(buf, (unsigned char *) "MiXeD", 5);
    WEIR_CHECK_MEM(buf, 5, "mixed");

    a.len = 4;
    a.data = (unsigned char *) "ETAG";
    b.len = 4;
    b.data = (unsigned char *) "etag";

    WEIR_CHECK(weir_str_caseeq(&a, &b));
    WEIR_CHECK(!weir_str_eq(&a, &b));

    b.len = 3;
    WEIR_CHECK(!weir_str_caseeq(&a, &b));
}


WEIR_UNIT_TEST(string_copies)
{
    char           *z;
    unsigned char   buf[8], *p;
    weir_str_t      s;
    weir_pool_t    *pool;

    pool = weir_unit_pool();
    WEIR_REQUIRE(pool != NULL);

    /* cpystrn always terminates and returns the NUL */
    p = weir_cpystrn(buf, (unsigned char *) "abcdefghijk", sizeof(buf));
    WEIR_CHECK(p == buf + 7);
    WEIR_CHECK_STR(buf, "abcdefg");

    p = weir_cpystrn(buf, (unsigned char *) "ab", sizeof(buf));
    WEIR_CHECK(p == buf + 2);
    WEIR_CHECK_STR(buf, "ab");

    s.len = 5;
    s.data = (unsigned char *) "hello world";

    z = weir_pstrdupz(pool, &s);
    WEIR_CHECK_STR(z, "hello");

    p = weir_pstrdup(pool, &s);
    WEIR_REQUIRE(p != NULL);
    WEIR_CHECK_MEM(p, 5, "hello");

    p = (unsigned char *) "a:b";
    WEIR_CHECK(weir_strlchr(p, p + 3, ':') == p + 1);
    WEIR_CHECK(weir_strlchr(p, p + 1, ':') == NULL);
}


WEIR_UNIT_TEST(string_sprint_uint_hex)
{
    unsigned char  buf[WEIR_INT_T_LEN + 1], *p;

    p = weir_sprint_uint(buf, 0);
    WEIR_CHECK_MEM(buf, p - buf, "0");

    p = weir_sprint_uint(buf, 1024);
    WEIR_CHECK_MEM(buf, p - buf, "1024");

    /* the widest value fills WEIR_INT_T_LEN exactly */
    p = weir_sprint_uint(buf, UINT64_MAX);
    WEIR_CHECK_MEM(buf, p - buf, "18446744073709551615");

    p = weir_sprint_hex(buf, 0);
    WEIR_CHECK_MEM(buf, p - buf, "0");

    p = weir_sprint_hex(buf, 0x6b0ccc15);
    WEIR_CHECK_MEM(buf, p - buf, "6b0ccc15");

    p = weir_sprint_hex(buf, UINT64_MAX);
    WEIR_CHECK_MEM(buf, p - buf, "ffffffffffffffff");
}


WEIR_UNIT_TEST(string_http_time)
{
    unsigned char  buf[sizeof("Mon, 28 Sep 1970 06:00:00 GMT")], *p;

    p = weir_http_time(buf, 0);
    WEIR_CHECK_MEM(buf, p - buf, "Thu, 01 Jan 1970 00:00:00 GMT");
    WEIR_CHECK(*p == '\0');

    p = weir_http_time(buf, 1784768655);
    WEIR_CHECK_MEM(buf, p - buf, "Thu, 23 Jul 2026 01:04:15 GMT");

    /* a year of three digits keeps the printf form */
    p = weir_http_time(buf, (time_t) (-30610224000LL - 86400 * 365));
    WEIR_CHECK(p - buf == sizeof("Mon, 28 Sep 1970 06:00:00 GMT") - 1);
    WEIR_CHECK(memcmp(buf + 12, " 999 ", 5) == 0);
}
