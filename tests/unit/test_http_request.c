#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"
#include "weir_unit.h"


/*
 * The interned header names: the table is indexed by token, every name
 * is found again from its lowercased form and the hash the parser
 * computes, and names that are not interned are not found.
 */


static weir_uint_t
test_lc_hash(const char *name, unsigned char *lc, size_t *len)
{
    size_t       i, n;
    weir_uint_t  hash;

    n = strlen(name);
    hash = 0;

    for (i = 0; i < n; i++) {
        lc[i] = weir_tolower((unsigned char) name[i]);
        hash = weir_hash(hash, lc[i]);
    }

    *len = n;

    return hash;
}


WEIR_UNIT_TEST(http_header_defs_indexed_by_token)
{
    weir_uint_t  t, u;

    WEIR_CHECK_INT(weir_http_header_defs[WEIR_HTTP_HDR_UNKNOWN].name.len, 0);

    for (t = 1; t < WEIR_HTTP_HDR_LAST_; t++) {
        WEIR_CHECK_INT(weir_http_header_defs[t].token, t);
        WEIR_CHECK(weir_http_header_defs[t].name.len > 0);

        for (u = t + 1; u < WEIR_HTTP_HDR_LAST_; u++) {
            WEIR_CHECK(weir_http_header_defs[t].name.len
                       != weir_http_header_defs[u].name.len
                       || weir_strncasecmp(weir_http_header_defs[t].name.data,
                                           weir_http_header_defs[u].name.data,
                                           weir_http_header_defs[t].name.len)
                          != 0);
        }
    }

    WEIR_CHECK_INT(weir_http_header_defs[WEIR_HTTP_HDR_LAST_].token,
                   WEIR_HTTP_HDR_LAST_);
}


WEIR_UNIT_TEST(http_header_token_lookup)
{
    size_t          len;
    weir_uint_t     t, hash;
    unsigned char   lc[64];
    char            name[64];

    for (t = 1; t < WEIR_HTTP_HDR_LAST_; t++) {
        weir_memcpy(name, weir_http_header_defs[t].name.data,
                    weir_http_header_defs[t].name.len);
        name[weir_http_header_defs[t].name.len] = '\0';

        hash = test_lc_hash(name, lc, &len);
        WEIR_CHECK_INT(weir_http_header_token(lc, len, hash), t);
    }

    hash = test_lc_hash("x-not-interned", lc, &len);
    WEIR_CHECK_INT(weir_http_header_token(lc, len, hash),
                   WEIR_HTTP_HDR_UNKNOWN);

    /* same length and a colliding start, different name */
    hash = test_lc_hash("hosx", lc, &len);
    WEIR_CHECK_INT(weir_http_header_token(lc, len, hash),
                   WEIR_HTTP_HDR_UNKNOWN);

    /* a prefix of an interned name */
    hash = test_lc_hash("content-lengt", lc, &len);
    WEIR_CHECK_INT(weir_http_header_token(lc, len, hash),
                   WEIR_HTTP_HDR_UNKNOWN);

    hash = test_lc_hash("", lc, &len);
    WEIR_CHECK_INT(weir_http_header_token(lc, len, hash),
                   WEIR_HTTP_HDR_UNKNOWN);
}


/* the parser's hash and lowercase name give the same tokens */

WEIR_UNIT_TEST(http_header_token_from_parser)
{
    size_t                i;
    weir_int_t            rc;
    weir_buf_t            b;
    weir_http_request_t  *r;

    static const struct {
        const char   *line;
        weir_uint_t   token;
    } cases[] = {
        { "Host: a\r\n", WEIR_HTTP_HDR_HOST },
        { "HOST: a\r\n", WEIR_HTTP_HDR_HOST },
        { "content-LENGTH: 1\r\n", WEIR_HTTP_HDR_CONTENT_LENGTH },
        { "Transfer-Encoding: chunked\r\n",
          WEIR_HTTP_HDR_TRANSFER_ENCODING },
        { "te: trailers\r\n", WEIR_HTTP_HDR_TE },
        { "Proxy-Authorization: x\r\n",
          WEIR_HTTP_HDR_PROXY_AUTHORIZATION },
        { "ETag: \"x\"\r\n", WEIR_HTTP_HDR_ETAG },
        { "X-Other: y\r\n", WEIR_HTTP_HDR_UNKNOWN },
    };

    r = calloc(1, sizeof(weir_http_request_t));
    WEIR_REQUIRE(r != NULL);

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        weir_memzero(&b, sizeof(weir_buf_t));
        weir_memzero(r, sizeof(weir_http_request_t));

        b.start = (unsigned char *) cases[i].line;
        b.pos = b.start;
        b.last = b.start + strlen(cases[i].line);
        b.end = b.last;

        rc = weir_http_parse_header_line(r, &b, 0);
        WEIR_CHECK_INT(rc, WEIR_OK);

        if (rc != WEIR_OK) {
            continue;
        }

        WEIR_CHECK_INT(weir_http_header_token(r->lowcase_header,
                                              r->lowcase_index,
                                              r->header_hash),
                       cases[i].token);
    }

    free(r);
}


WEIR_UNIT_TEST(http_header_flags)
{
    WEIR_CHECK(weir_http_header_defs[WEIR_HTTP_HDR_CONNECTION].flags
               & WEIR_HTTP_HDR_F_HOP_BY_HOP);
    WEIR_CHECK(weir_http_header_defs[WEIR_HTTP_HDR_TRANSFER_ENCODING].flags
               & WEIR_HTTP_HDR_F_HOP_BY_HOP);
    WEIR_CHECK(weir_http_header_defs[WEIR_HTTP_HDR_HOST].flags
               & WEIR_HTTP_HDR_F_SINGLE);
    WEIR_CHECK(weir_http_header_defs[WEIR_HTTP_HDR_CONTENT_LENGTH].flags
               & WEIR_HTTP_HDR_F_SINGLE);
    WEIR_CHECK(!(weir_http_header_defs[WEIR_HTTP_HDR_HOST].flags
                 & WEIR_HTTP_HDR_F_HOP_BY_HOP));
    WEIR_CHECK(weir_http_header_defs[WEIR_HTTP_HDR_HOST].handler != NULL);
}
