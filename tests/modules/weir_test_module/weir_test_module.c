/*
 * weir_test_module: a third-party-style core module for the integration
 * suite. It opens its own listening sockets (test_listen) and answers
 * every connection with one line that tells the tests which configuration
 * generation, process and worker served it:
 *
 *     weir-test value=<V> generation=<G> pid=<PID> worker=<W>
 *
 * then closes. test_delay holds the answer back with a non-cancelable
 * timer, so a graceful stop has in-flight work to finish and
 * worker_shutdown_timeout has something to cut off.
 */

#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"


#define WEIR_TEST_POOL_SIZE  512
#define WEIR_TEST_LINE_LEN   256


typedef struct {
    weir_int_t      value;
    weir_msec_t     delay;
    weir_cycle_t   *cycle;
} weir_test_conf_t;


static void *weir_test_create_conf(weir_cycle_t *cycle);
static char *weir_test_init_conf(weir_cycle_t *cycle, void *conf);
static char *weir_test_listen(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static weir_int_t weir_test_init_module(weir_cycle_t *cycle);
static weir_int_t weir_test_init_process(weir_cycle_t *cycle);
static void weir_test_init_connection(weir_connection_t *c);
static void weir_test_event_handler(weir_event_t *ev);
static void weir_test_answer(weir_connection_t *c);
static void weir_test_close(weir_connection_t *c);


static weir_command_t  weir_test_commands[] = {

    { weir_string("test_value"),
      WEIR_MAIN_CONF|WEIR_DIRECT_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_num_slot,
      0,
      offsetof(weir_test_conf_t, value),
      NULL },

    { weir_string("test_listen"),
      WEIR_MAIN_CONF|WEIR_DIRECT_CONF|WEIR_CONF_1MORE,
      weir_test_listen,
      0,
      0,
      NULL },

    { weir_string("test_delay"),
      WEIR_MAIN_CONF|WEIR_DIRECT_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_msec_slot,
      0,
      offsetof(weir_test_conf_t, delay),
      NULL },

    weir_null_command
};


static weir_core_module_t  weir_test_module_ctx = {
    weir_string("test"),
    weir_test_create_conf,
    weir_test_init_conf
};


weir_module_t  weir_test_module = {
    WEIR_MODULE_V1,
    &weir_test_module_ctx,                 /* context */
    weir_test_commands,                    /* directives */
    WEIR_CORE_MODULE,                      /* type */
    NULL,                                  /* init master */
    weir_test_init_module,                 /* init module */
    weir_test_init_process,                /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    WEIR_MODULE_V1_PADDING
};


static void *
weir_test_create_conf(weir_cycle_t *cycle)
{
    weir_test_conf_t  *tcf;

    tcf = weir_pcalloc(cycle->pool, sizeof(weir_test_conf_t));
    if (tcf == NULL) {
        return NULL;
    }

    tcf->value = WEIR_CONF_UNSET;
    tcf->delay = WEIR_CONF_UNSET_MSEC;

    /* the answer names the generation of the cycle that configured the
     * socket, which is the cycle of the worker that accepted */
    tcf->cycle = cycle;

    return tcf;
}


static char *
weir_test_init_conf(weir_cycle_t *cycle, void *conf)
{
    weir_test_conf_t  *tcf = conf;

    (void) cycle;

    weir_conf_init_value(tcf->value, 0);
    weir_conf_init_msec_value(tcf->delay, 0);

    return WEIR_CONF_OK;
}


/*
 * test_listen ADDRESS [reuseport] [backlog=N] [ipv6only=on|off];
 * every address ADDRESS resolves to becomes one listening entry.
 */

static char *
weir_test_listen(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_test_conf_t  *tcf = conf;

    int                 backlog, ipv6only;
    weir_str_t         *value;
    weir_int_t          n;
    weir_uint_t         i, j, reuseport;
    weir_addr_t        *addr;
    weir_array_t       *addrs;
    weir_listening_t   *ls, *lss;
    char               *rv;

    (void) cmd;

    value = cf->args->elts;

    backlog = -1;
    ipv6only = -1;
    reuseport = 0;

    for (i = 2; i < cf->args->nelts; i++) {

        if (weir_str_eq_lit(&value[i], "reuseport")) {
            reuseport = 1;
            continue;
        }

        if (value[i].len > sizeof("backlog=") - 1
            && weir_strncmp(value[i].data, "backlog=",
                            sizeof("backlog=") - 1) == 0)
        {
            n = weir_atoi(value[i].data + sizeof("backlog=") - 1,
                          value[i].len - (sizeof("backlog=") - 1));

            if (n == WEIR_ERROR || n == 0 || n > INT_MAX) {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "invalid backlog \"%.*s\"",
                                    WEIR_STR_ARG(value[i]));
                return WEIR_CONF_ERROR;
            }

            backlog = (int) n;
            continue;
        }

        if (weir_str_eq_lit(&value[i], "ipv6only=on")) {
            ipv6only = 1;
            continue;
        }

        if (weir_str_eq_lit(&value[i], "ipv6only=off")) {
            ipv6only = 0;
            continue;
        }

        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "invalid parameter \"%.*s\"",
                            WEIR_STR_ARG(value[i]));
        return WEIR_CONF_ERROR;
    }

    addrs = weir_array_create(cf->pool, 2, sizeof(weir_addr_t));
    if (addrs == NULL) {
        return WEIR_CONF_ERROR;
    }

    rv = weir_parse_addr_port(cf->pool, &value[1], 0, addrs);
    if (rv != NULL) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0, "%s in \"%.*s\"", rv,
                            WEIR_STR_ARG(value[1]));
        return WEIR_CONF_ERROR;
    }

    addr = addrs->elts;

    for (i = 0; i < addrs->nelts; i++) {

        if (ipv6only != -1 && addr[i].sockaddr->sa_family != AF_INET6) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "ipv6only is valid only for IPv6 "
                                "addresses, not \"%.*s\"",
                                WEIR_STR_ARG(addr[i].name));
            return WEIR_CONF_ERROR;
        }

        /* a second bind to the same address would only fail later,
         * with a less helpful message */

        lss = cf->cycle->listening.elts;

        for (j = 0; j < cf->cycle->listening.nelts; j++) {
            if (weir_cmp_sockaddr(lss[j].sockaddr, lss[j].socklen,
                                  addr[i].sockaddr, addr[i].socklen, 1)
                == WEIR_OK)
            {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "duplicate listen \"%.*s\"",
                                    WEIR_STR_ARG(addr[i].name));
                return WEIR_CONF_ERROR;
            }
        }

        ls = weir_create_listening(cf, addr[i].sockaddr, addr[i].socklen);
        if (ls == NULL) {
            return WEIR_CONF_ERROR;
        }

        ls->handler = weir_test_init_connection;
        ls->servers = tcf;
        ls->pool_size = WEIR_TEST_POOL_SIZE;

        if (backlog != -1) {
            ls->backlog = backlog;
        }

        if (ipv6only != -1) {
            ls->ipv6only = (unsigned) ipv6only;
        }

        if (reuseport) {
            ls->reuseport = 1;
        }
    }

    return WEIR_CONF_OK;
}


static weir_int_t
weir_test_init_module(weir_cycle_t *cycle)
{
    weir_test_conf_t  *tcf;

    tcf = (weir_test_conf_t *) weir_get_conf(cycle->conf_ctx,
                                             weir_test_module);

    weir_log_error(WEIR_LOG_NOTICE, cycle->log, 0,
                   "test module initialised, value=%ld",
                   (long) (tcf ? tcf->value : 0));

    return WEIR_OK;
}


static weir_int_t
weir_test_init_process(weir_cycle_t *cycle)
{
    weir_log_error(WEIR_LOG_NOTICE, cycle->log, 0,
                   "test module worker %lu started",
                   (unsigned long) weir_worker);

    return WEIR_OK;
}


static void
weir_test_init_connection(weir_connection_t *c)
{
    weir_test_conf_t  *tcf;

    tcf = c->listening->servers;

    if (tcf->delay == 0) {
        weir_test_answer(c);
        return;
    }

    c->read->handler = weir_test_event_handler;
    c->write->handler = weir_test_event_handler;

    /* not cancelable: a graceful stop must wait for this answer, and only
     * worker_shutdown_timeout may cut it short */
    c->read->cancelable = 0;

    weir_event_add_timer(c->read, tcf->delay);
}


/*
 * Runs for the delay timer, for readiness the backend may report while
 * the answer is held (ignored), and when a shutdown closes connections
 * (c->close set by the worker_shutdown_timeout handler).
 */

static void
weir_test_event_handler(weir_event_t *ev)
{
    weir_connection_t  *c;

    c = ev->data;

    if (c->close) {
        weir_test_close(c);
        return;
    }

    if (ev->write || !ev->timedout) {
        return;
    }

    ev->timedout = 0;

    weir_test_answer(c);
}


static void
weir_test_answer(weir_connection_t *c)
{
    ssize_t            n;
    unsigned char      line[WEIR_TEST_LINE_LEN], *last;
    weir_test_conf_t  *tcf;

    tcf = c->listening->servers;

    last = weir_slprintf(line, line + sizeof(line),
                         "weir-test value=%ld generation=%lu pid=%ld "
                         "worker=%lu\n",
                         (long) tcf->value,
                         (unsigned long) tcf->cycle->generation,
                         (long) getpid(), (unsigned long) weir_worker);

    n = c->send(c, line, (size_t) (last - line));

    if (n == last - line) {
        /* a line per answer lets the tests see which log file a worker
         * writes to (USR1 reopening) */
        weir_log_error(WEIR_LOG_INFO, c->log, 0, "test module answered");

    } else {
        /* WEIR_AGAIN or WEIR_ERROR: one short line that does not fit at
         * once is not worth waiting for; c->send has logged errors */
        weir_log_error(WEIR_LOG_INFO, c->log, 0,
                       "test module: answer not sent (%ld)", (long) n);
    }

    weir_test_close(c);
}


static void
weir_test_close(weir_connection_t *c)
{
    weir_pool_t  *pool;

    /* weir_close_connection() frees c, so take the pool first */
    pool = c->pool;

    weir_close_connection(c);

    if (pool) {
        weir_destroy_pool(pool);
    }
}
