/*
 * weir_resolver.h: run-time DNS that never blocks a worker (c-ares).
 *
 * A weir_resolver_t is what one "resolver" directive configured: the
 * name servers, how long answers are kept (their TTL, or valid=), which
 * families are asked for (ipv6=), and how many names the cache holds
 * (cache=). Each worker opens its c-ares channel on first use and keeps
 * its own cache of answers: positive ones for their TTL, negative ones
 * (no such name, no address) for WEIR_RESOLVER_NEGATIVE_TTL seconds
 * (or valid=), failures of the servers themselves (timeout, refused)
 * for one second, so that a dead server is not asked once per request.
 * Concurrent lookups of one name in a worker share one query.
 *
 * A caller fills a weir_resolver_ctx_t from its pool and calls
 * weir_resolve():
 *   WEIR_OK     the answer was in the cache: ctx->status, ctx->addrs
 *               are set now, the handler is not called;
 *   WEIR_AGAIN  a query is under way: ctx->handler(ctx) is called once,
 *               later, from the event loop, with the answer set;
 *   WEIR_ERROR  out of memory, or no channel could be opened.
 * ctx->status is WEIR_OK with ctx->naddrs > 0, or WEIR_ERROR with
 * ctx->error saying why ("Domain name not found", "timed out", ...).
 * Addresses are copied into ctx->pool with ctx->port set. A lookup
 * still waiting when the pool goes is forgotten (a pool cleanup): the
 * handler is never called for a finished request. weir_resolve_cancel()
 * does the same earlier.
 *
 * Without c-ares (configure found no libcares) weir_resolver_create()
 * fails with a message that says so, and nothing else is reachable.
 */

#ifndef _WEIR_RESOLVER_H_INCLUDED_
#define _WEIR_RESOLVER_H_INCLUDED_

#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"

#define WEIR_RESOLVER_NEGATIVE_TTL   10     /* seconds, without valid= */
#define WEIR_RESOLVER_FAILURE_TTL    1      /* server failures */
#define WEIR_RESOLVER_MAX_ADDRS      16     /* kept per name */
#define WEIR_RESOLVER_DEFAULT_CACHE  10000  /* names per worker */
#define WEIR_RESOLVER_MAX_NAME       253

typedef struct weir_resolver_s      weir_resolver_t;
typedef struct weir_resolver_ctx_s  weir_resolver_ctx_t;

typedef void (*weir_resolver_handler_pt)(weir_resolver_ctx_t *ctx);

struct weir_resolver_ctx_s {
    /* set by the caller */
    weir_resolver_t            *resolver;
    weir_str_t                  name;
    in_port_t                   port;
    weir_msec_t                 timeout;    /* resolver_timeout */
    weir_pool_t                *pool;
    weir_log_t                 *log;
    weir_resolver_handler_pt    handler;
    void                       *data;

    /* the answer */
    weir_int_t                  status;     /* WEIR_OK or WEIR_ERROR */
    const char                 *error;
    weir_addr_t                *addrs;
    weir_uint_t                 naddrs;

    /* private */
    weir_queue_t                queue;      /* in the node's waiters */
    void                       *node;
    weir_event_t                event;      /* the timeout */
    unsigned                    waiting:1;
    unsigned                    cleanup:1;
};

/*
 * Parses a "resolver" directive's arguments (value[1..n-1] of cf->args):
 * ADDR[:PORT] ... [valid=TIME] [ipv6=on|off] [cache=N]. Returns NULL
 * after logging the error at the directive's file:line.
 */
weir_resolver_t *weir_resolver_create(weir_conf_t *cf);

weir_int_t weir_resolve(weir_resolver_ctx_t *ctx);
void weir_resolve_cancel(weir_resolver_ctx_t *ctx);

#endif /* _WEIR_RESOLVER_H_INCLUDED_ */
