#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"


#define WEIR_DEFAULT_CONNECTIONS  512

/* the shared counters: one cache line each, so that workers counting at
 * once do not bounce a line between them */
#define WEIR_STAT_SLOT            128
#define WEIR_STAT_SLOTS           8


static char *weir_events_block(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static char *weir_event_init_conf(weir_cycle_t *cycle, void *conf);
static char *weir_event_connections(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static char *weir_event_use(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static void *weir_event_core_create_conf(weir_cycle_t *cycle);
static char *weir_event_core_init_conf(weir_cycle_t *cycle, void *conf);
static weir_int_t weir_event_module_init(weir_cycle_t *cycle);
static weir_int_t weir_event_process_init(weir_cycle_t *cycle);
static weir_int_t weir_event_add_listening(weir_cycle_t *cycle,
    weir_listening_t *ls);
static weir_uint_t weir_event_accept_flags(weir_cycle_t *cycle,
    weir_listening_t *ls);


weir_uint_t             weir_event_flags;
weir_event_actions_t    weir_event_actions;

weir_uint_t             weir_accept_disabled;
weir_msec_t             weir_event_timer_resolution;

weir_atomic_t          *weir_connection_counter;
weir_atomic_t          *weir_stat_accepted;
weir_atomic_t          *weir_stat_handled;
weir_atomic_t          *weir_stat_requests;
weir_atomic_t          *weir_stat_active;
weir_atomic_t          *weir_stat_reading;
weir_atomic_t          *weir_stat_writing;
weir_atomic_t          *weir_stat_waiting;

/* the counters outlive reloads: they are mapped once, in the master */
static weir_shm_t       weir_event_stat_shm;


static weir_command_t  weir_events_commands[] = {

    { weir_string("events"),
      WEIR_MAIN_CONF|WEIR_CONF_BLOCK|WEIR_CONF_NOARGS,
      weir_events_block,
      0,
      0,
      NULL },

      weir_null_command
};


static weir_core_module_t  weir_events_module_ctx = {
    weir_string("events"),
    NULL,
    weir_event_init_conf
};


weir_module_t  weir_events_module = {
    WEIR_MODULE_V1,
    &weir_events_module_ctx,
    weir_events_commands,
    WEIR_CORE_MODULE,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    WEIR_MODULE_V1_PADDING
};


static weir_str_t  weir_event_core_name = weir_string("event_core");


static weir_command_t  weir_event_core_commands[] = {

    { weir_string("worker_connections"),
      WEIR_EVENT_CONF|WEIR_CONF_TAKE1,
      weir_event_connections,
      0,
      0,
      NULL },

    { weir_string("use"),
      WEIR_EVENT_CONF|WEIR_CONF_TAKE1,
      weir_event_use,
      0,
      0,
      NULL },

    { weir_string("multi_accept"),
      WEIR_EVENT_CONF|WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      0,
      offsetof(weir_event_conf_t, multi_accept),
      NULL },

    /* accepted for configurations written for nginx; weir balances
     * with reuseport or lets the kernel wake one worker */
    { weir_string("accept_mutex"),
      WEIR_EVENT_CONF|WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      0,
      offsetof(weir_event_conf_t, accept_mutex),
      NULL },

    { weir_string("accept_mutex_delay"),
      WEIR_EVENT_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_msec_slot,
      0,
      offsetof(weir_event_conf_t, accept_mutex_delay),
      NULL },

      weir_null_command
};


static weir_event_module_t  weir_event_core_module_ctx = {
    &weir_event_core_name,
    weir_event_core_create_conf,
    weir_event_core_init_conf,
    { NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL }
};


weir_module_t  weir_event_core_module = {
    WEIR_MODULE_V1,
    &weir_event_core_module_ctx,
    weir_event_core_commands,
    WEIR_EVENT_MODULE,
    NULL,
    weir_event_module_init,
    weir_event_process_init,
    NULL,
    NULL,
    WEIR_MODULE_V1_PADDING
};


void
weir_process_events_and_timers(weir_cycle_t *cycle)
{
    weir_msec_t  timer;

    timer = weir_event_find_timer();

    /* timer_resolution: wake at least that often, so that the cached
     * clock never lags more than it behind */
    if (weir_event_timer_resolution
        && (timer == WEIR_TIMER_INFINITE
            || timer > weir_event_timer_resolution))
    {
        timer = weir_event_timer_resolution;
    }

    if (weir_posted_next_events.next
        && !weir_queue_empty(&weir_posted_next_events))
    {
        /* events that yielded run after this pass, which must not wait */
        weir_event_move_posted_next(cycle);
        timer = 0;
    }

    (void) weir_process_events(cycle, timer,
                               WEIR_UPDATE_TIME|WEIR_POST_EVENTS);

    /* accepts first: a new connection's handler may post work that the
     * other queue then runs in the same iteration */
    weir_event_process_posted(cycle, &weir_posted_accept_events);

    weir_event_expire_timers();

    weir_event_process_posted(cycle, &weir_posted_events);
}


/*
 * Both take the event of a connection. One without a socket (fd -1: the
 * connection object of a stream of a multiplexed connection, whose
 * events the protocol module posts itself) has nothing to register.
 */

weir_int_t
weir_handle_read_event(weir_event_t *rev, weir_uint_t flags)
{
    weir_connection_t  *c;

    c = rev->data;

    if (c->fd == (weir_fd_t) -1) {
        return WEIR_OK;
    }

    if (weir_event_flags & WEIR_USE_CLEAR_EVENT) {

        /* edge-triggered: registered once, stays until the close */

        if (!rev->active) {
            if (weir_add_event(rev, WEIR_READ_EVENT, WEIR_CLEAR_EVENT)
                == WEIR_ERROR)
            {
                return WEIR_ERROR;
            }
        }

        return WEIR_OK;
    }

    if (weir_event_flags & WEIR_USE_LEVEL_EVENT) {

        /* level-triggered: wanted only while nothing is waiting to be
         * read, or the loop would spin on data nobody reads */

        if (!rev->active && !rev->ready) {
            if (weir_add_event(rev, WEIR_READ_EVENT, WEIR_LEVEL_EVENT)
                == WEIR_ERROR)
            {
                return WEIR_ERROR;
            }

            return WEIR_OK;
        }

        if (rev->active && (rev->ready || (flags & WEIR_CLOSE_EVENT))) {
            if (weir_del_event(rev, WEIR_READ_EVENT,
                               WEIR_LEVEL_EVENT | flags)
                == WEIR_ERROR)
            {
                return WEIR_ERROR;
            }

            return WEIR_OK;
        }
    }

    return WEIR_OK;
}


weir_int_t
weir_handle_write_event(weir_event_t *wev, size_t lowat)
{
    int                 sndlowat;
    weir_connection_t  *c;

    c = wev->data;

    if (c->fd == (weir_fd_t) -1) {
        return WEIR_OK;
    }

    if (lowat && !c->sndlowat) {

        /* wake the writer only when that much room is free; a socket
         * option, so set once per connection, not on every wait */

        c->sndlowat = 1;
        sndlowat = (int) lowat;

        if (setsockopt(c->fd, SOL_SOCKET, SO_SNDLOWAT,
                       (const void *) &sndlowat, sizeof(int))
            == -1)
        {
            /* Linux refuses SO_SNDLOWAT: the writer is woken earlier */
            if (weir_socket_errno != ENOPROTOOPT) {
                (void) weir_connection_error(c, weir_socket_errno,
                                             "setsockopt(SO_SNDLOWAT) "
                                             "failed");
                return WEIR_ERROR;
            }
        }
    }

    if (weir_event_flags & WEIR_USE_CLEAR_EVENT) {

        if (!wev->active) {
            if (weir_add_event(wev, WEIR_WRITE_EVENT, WEIR_CLEAR_EVENT)
                == WEIR_ERROR)
            {
                return WEIR_ERROR;
            }
        }

        return WEIR_OK;
    }

    if (weir_event_flags & WEIR_USE_LEVEL_EVENT) {

        if (!wev->active && !wev->ready) {
            if (weir_add_event(wev, WEIR_WRITE_EVENT, WEIR_LEVEL_EVENT)
                == WEIR_ERROR)
            {
                return WEIR_ERROR;
            }

            return WEIR_OK;
        }

        if (wev->active && wev->ready) {
            if (weir_del_event(wev, WEIR_WRITE_EVENT, WEIR_LEVEL_EVENT)
                == WEIR_ERROR)
            {
                return WEIR_ERROR;
            }

            return WEIR_OK;
        }
    }

    return WEIR_OK;
}


static char *
weir_events_block(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    char                  *rv;
    void                ***ctx;
    weir_int_t             n;
    weir_uint_t            i;
    weir_conf_t            pcf;
    weir_module_t         *module;
    weir_event_module_t   *m;

    (void) cmd;

    if (*(void **) conf) {
        return "is duplicate";
    }

    n = weir_count_modules(cf->cycle, WEIR_EVENT_MODULE);

    ctx = weir_pcalloc(cf->pool, sizeof(void *));
    if (ctx == NULL) {
        return WEIR_CONF_ERROR;
    }

    *ctx = weir_pcalloc(cf->pool, (size_t) (n > 0 ? n : 1) * sizeof(void *));
    if (*ctx == NULL) {
        return WEIR_CONF_ERROR;
    }

    *(void **) conf = ctx;

    for (i = 0; cf->cycle->modules[i]; i++) {
        module = cf->cycle->modules[i];

        if (module->type != WEIR_EVENT_MODULE) {
            continue;
        }

        m = module->ctx;

        if (m && m->create_conf) {
            (*ctx)[module->ctx_index] = m->create_conf(cf->cycle);
            if ((*ctx)[module->ctx_index] == NULL) {
                return WEIR_CONF_ERROR;
            }
        }
    }

    pcf = *cf;
    cf->ctx = ctx;
    cf->module_type = WEIR_EVENT_MODULE;
    cf->cmd_type = WEIR_EVENT_CONF;

    rv = weir_conf_parse(cf, NULL);

    *cf = pcf;

    if (rv != WEIR_CONF_OK) {
        return rv;
    }

    for (i = 0; cf->cycle->modules[i]; i++) {
        module = cf->cycle->modules[i];

        if (module->type != WEIR_EVENT_MODULE) {
            continue;
        }

        m = module->ctx;

        if (m && m->init_conf) {
            rv = m->init_conf(cf->cycle, (*ctx)[module->ctx_index]);
            if (rv != WEIR_CONF_OK) {
                return rv;
            }
        }
    }

    return WEIR_CONF_OK;
}


static char *
weir_event_init_conf(weir_cycle_t *cycle, void *conf)
{
    if (conf == NULL) {
        weir_log_error(WEIR_LOG_EMERG, cycle->log, 0,
                       "no \"events\" section in configuration");
        return WEIR_CONF_ERROR;
    }

    return WEIR_CONF_OK;
}


static char *
weir_event_connections(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_event_conf_t  *ecf = conf;

    weir_int_t   n;
    weir_str_t  *value;

    (void) cmd;

    if (ecf->connections != WEIR_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    n = weir_atoi(value[1].data, value[1].len);

    if (n == WEIR_ERROR || n < 1) {
        return "invalid value";
    }

    ecf->connections = (weir_uint_t) n;

    return WEIR_CONF_OK;
}


static char *
weir_event_use(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_event_conf_t  *ecf = conf;

    weir_uint_t           m;
    weir_str_t           *value;
    weir_module_t        *module;
    weir_event_module_t  *em;

    (void) cmd;

    if (ecf->use != WEIR_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    for (m = 0; cf->cycle->modules[m]; m++) {
        module = cf->cycle->modules[m];

        if (module->type != WEIR_EVENT_MODULE) {
            continue;
        }

        em = module->ctx;

        /* event_core has a name but no actions: not a backend */
        if (em == NULL || em->name == NULL || em->actions.init == NULL) {
            continue;
        }

        if (em->name->len == value[1].len
            && weir_strncmp(em->name->data, value[1].data, value[1].len)
               == 0)
        {
            ecf->use = module->ctx_index;
            ecf->name = em->name->data;

            return WEIR_CONF_OK;
        }
    }

    weir_conf_log_error(WEIR_LOG_EMERG, cf, 0, "invalid event type \"%.*s\"",
                        WEIR_STR_ARG(value[1]));

    return WEIR_CONF_ERROR;
}


static void *
weir_event_core_create_conf(weir_cycle_t *cycle)
{
    weir_event_conf_t  *ecf;

    ecf = weir_pcalloc(cycle->pool, sizeof(weir_event_conf_t));
    if (ecf == NULL) {
        return NULL;
    }

    ecf->connections = WEIR_CONF_UNSET_UINT;
    ecf->use = WEIR_CONF_UNSET_UINT;
    ecf->multi_accept = WEIR_CONF_UNSET;
    ecf->accept_mutex = WEIR_CONF_UNSET;
    ecf->accept_mutex_delay = WEIR_CONF_UNSET_MSEC;
    ecf->name = NULL;

    return ecf;
}


static char *
weir_event_core_init_conf(weir_cycle_t *cycle, void *conf)
{
    weir_event_conf_t  *ecf = conf;

    static const char  *preferred[] = { "epoll", "kqueue", NULL };

    weir_uint_t           m, p;
    weir_module_t        *module, *first, *found;
    weir_event_module_t  *em;

    if (ecf->use == WEIR_CONF_UNSET_UINT) {

        /* the best backend compiled in: an edge-triggered one when there
         * is one, whatever the module order; else the first */

        first = NULL;
        found = NULL;

        for (p = 0; preferred[p] && found == NULL; p++) {
            for (m = 0; cycle->modules[m]; m++) {
                module = cycle->modules[m];

                if (module->type != WEIR_EVENT_MODULE) {
                    continue;
                }

                em = module->ctx;

                if (em == NULL || em->name == NULL
                    || em->actions.init == NULL)
                {
                    continue;
                }

                if (first == NULL) {
                    first = module;
                }

                if (weir_strlen(preferred[p]) == em->name->len
                    && weir_strncmp(em->name->data, preferred[p],
                                    em->name->len) == 0)
                {
                    found = module;
                    break;
                }
            }
        }

        if (found == NULL) {
            found = first;
        }

        if (found == NULL) {
            weir_log_error(WEIR_LOG_EMERG, cycle->log, 0,
                           "no events module found");
            return WEIR_CONF_ERROR;
        }

        em = found->ctx;

        ecf->use = found->ctx_index;
        ecf->name = em->name->data;
    }

    weir_conf_init_uint_value(ecf->connections, WEIR_DEFAULT_CONNECTIONS);
    weir_conf_init_value(ecf->multi_accept, 0);
    weir_conf_init_value(ecf->accept_mutex, 0);
    weir_conf_init_msec_value(ecf->accept_mutex_delay, 500);

    return WEIR_CONF_OK;
}


/*
 * Runs in the master for every configuration it loads: the shared
 * counters are mapped once (workers inherit them across fork), and an
 * open file limit below worker_connections is worth a warning.
 */

static weir_int_t
weir_event_module_init(weir_cycle_t *cycle)
{
    void               ***cf;
    unsigned char        *shared;
    weir_uint_t           limit;
    weir_core_conf_t     *ccf;
    weir_event_conf_t    *ecf;
    struct rlimit         rlmt;

    cf = weir_get_conf(cycle->conf_ctx, weir_events_module);

    if (cf == NULL) {
        return WEIR_OK;
    }

    ecf = (*cf)[weir_event_core_module.ctx_index];
    ccf = (weir_core_conf_t *) weir_get_conf(cycle->conf_ctx,
                                             weir_core_module);

    if (ccf && ccf->rlimit_nofile != WEIR_CONF_UNSET
        && ccf->rlimit_nofile > 0)
    {
        limit = (weir_uint_t) ccf->rlimit_nofile;

    } else if (getrlimit(RLIMIT_NOFILE, &rlmt) == 0
               && rlmt.rlim_cur != RLIM_INFINITY)
    {
        limit = (weir_uint_t) rlmt.rlim_cur;

    } else {
        limit = 0;
    }

    if (limit && ecf->connections > limit) {
        weir_log_error(WEIR_LOG_WARN, cycle->log, 0,
                       "%lu worker_connections exceed open file resource "
                       "limit: %lu", (unsigned long) ecf->connections,
                       (unsigned long) limit);
    }

    if (weir_event_stat_shm.addr) {
        return WEIR_OK;
    }

    weir_event_stat_shm.size = WEIR_STAT_SLOT * WEIR_STAT_SLOTS;
    weir_str_set(&weir_event_stat_shm.name, "weir_event_stats");
    weir_event_stat_shm.log = cycle->log;

    if (weir_shm_alloc(&weir_event_stat_shm) != WEIR_OK) {
        return WEIR_ERROR;
    }

    shared = weir_event_stat_shm.addr;

    weir_memzero(shared, weir_event_stat_shm.size);

    weir_connection_counter = (weir_atomic_t *) (shared + 0 * WEIR_STAT_SLOT);
    weir_stat_accepted = (weir_atomic_t *) (shared + 1 * WEIR_STAT_SLOT);
    weir_stat_handled = (weir_atomic_t *) (shared + 2 * WEIR_STAT_SLOT);
    weir_stat_requests = (weir_atomic_t *) (shared + 3 * WEIR_STAT_SLOT);
    weir_stat_active = (weir_atomic_t *) (shared + 4 * WEIR_STAT_SLOT);
    weir_stat_reading = (weir_atomic_t *) (shared + 5 * WEIR_STAT_SLOT);
    weir_stat_writing = (weir_atomic_t *) (shared + 6 * WEIR_STAT_SLOT);
    weir_stat_waiting = (weir_atomic_t *) (shared + 7 * WEIR_STAT_SLOT);

    /* connection numbers start at 1: 0 means "no connection" in logs */
    *weir_connection_counter = 1;

    return WEIR_OK;
}


/*
 * A worker's start: the backend, the connection array and the accept
 * events of the listening sockets this worker serves.
 */

static weir_int_t
weir_event_process_init(weir_cycle_t *cycle)
{
    void                ***cf;
    weir_uint_t            m, i, n;
    weir_module_t         *module;
    weir_event_t          *rev, *wev;
    weir_listening_t      *ls;
    weir_core_conf_t      *ccf;
    weir_event_conf_t     *ecf;
    weir_connection_t     *c, *next;
    weir_event_module_t   *em;

    cf = weir_get_conf(cycle->conf_ctx, weir_events_module);

    if (cf == NULL) {
        weir_log_error(WEIR_LOG_EMERG, cycle->log, 0,
                       "no \"events\" section in configuration");
        return WEIR_ERROR;
    }

    ecf = (*cf)[weir_event_core_module.ctx_index];
    ccf = (weir_core_conf_t *) weir_get_conf(cycle->conf_ctx,
                                             weir_core_module);

    weir_event_timer_resolution = 0;

    if (ccf && ccf->timer_resolution != WEIR_CONF_UNSET_MSEC) {
        weir_event_timer_resolution = ccf->timer_resolution;
    }

    weir_queue_init(&weir_posted_accept_events);
    weir_queue_init(&weir_posted_events);
    weir_queue_init(&weir_posted_next_events);

    if (weir_event_timer_init(cycle->log) == WEIR_ERROR) {
        return WEIR_ERROR;
    }

    cycle->connection_n = ecf->connections;

    em = NULL;

    for (m = 0; cycle->modules[m]; m++) {
        module = cycle->modules[m];

        if (module->type == WEIR_EVENT_MODULE
            && module->ctx_index == ecf->use)
        {
            em = module->ctx;
            break;
        }
    }

    if (em == NULL || em->actions.init == NULL) {
        weir_log_error(WEIR_LOG_EMERG, cycle->log, 0,
                       "the event backend is not available");
        return WEIR_ERROR;
    }

    if (em->actions.init(cycle, weir_event_timer_resolution) != WEIR_OK) {
        return WEIR_ERROR;
    }

    n = cycle->connection_n;

    cycle->connections = weir_calloc(sizeof(weir_connection_t) * n,
                                     cycle->log);
    cycle->read_events = weir_calloc(sizeof(weir_event_t) * n, cycle->log);
    cycle->write_events = weir_calloc(sizeof(weir_event_t) * n, cycle->log);

    if (cycle->connections == NULL
        || cycle->read_events == NULL
        || cycle->write_events == NULL)
    {
        return WEIR_ERROR;
    }

    rev = cycle->read_events;
    wev = cycle->write_events;

    for (i = 0; i < n; i++) {
        rev[i].closed = 1;
        rev[i].instance = 1;
        rev[i].index = WEIR_INVALID_INDEX;
        wev[i].closed = 1;
        wev[i].index = WEIR_INVALID_INDEX;
    }

    c = cycle->connections;
    next = NULL;
    i = n;

    do {
        i--;

        c[i].data = next;
        c[i].read = &rev[i];
        c[i].write = &wev[i];
        c[i].fd = (weir_fd_t) -1;

        next = &c[i];
    } while (i);

    cycle->free_connections = next;
    cycle->free_connection_n = n;

    weir_queue_init(&cycle->reusable_connections_queue);
    cycle->reusable_connections_n = 0;

    weir_accept_disabled = 0;

    ls = cycle->listening.elts;

    for (i = 0; i < cycle->listening.nelts; i++) {

        if (ls[i].fd == (weir_fd_t) -1 || ls[i].ignore) {
            continue;
        }

#if (WEIR_HAVE_REUSEPORT)
        if (ls[i].reuseport && ls[i].worker != weir_worker) {

            /* another worker's socket: holding it would only cost a
             * descriptor (the master keeps it for the next worker) */

            if (weir_process == WEIR_PROCESS_WORKER) {
                (void) close(ls[i].fd);
                ls[i].fd = (weir_fd_t) -1;
            }

            continue;
        }
#endif

        if (weir_event_add_listening(cycle, &ls[i]) != WEIR_OK) {
            return WEIR_ERROR;
        }
    }

    return WEIR_OK;
}


static weir_int_t
weir_event_add_listening(weir_cycle_t *cycle, weir_listening_t *ls)
{
    weir_event_t          *rev;
    weir_connection_t     *c;
    weir_log_handler_pt    handler;
    void                  *data;

    /* the listening socket logs to the configured error log now */
    if (ls->logp) {
        handler = ls->log.handler;
        data = ls->log.data;

        ls->log = *ls->logp;
        ls->log.handler = handler;
        ls->log.data = data ? &ls->addr_text : NULL;
        ls->log.connection = 0;
        ls->log.action = NULL;
    }

    c = weir_get_connection(ls->fd, &ls->log);

    if (c == NULL) {
        weir_log_error(WEIR_LOG_EMERG, cycle->log, 0,
                       "%lu worker_connections are not enough for the "
                       "listening sockets",
                       (unsigned long) cycle->connection_n);
        return WEIR_ERROR;
    }

    c->type = ls->type;
    c->listening = ls;
    c->local_sockaddr = ls->sockaddr;
    c->local_socklen = ls->socklen;

    ls->connection = c;

    rev = c->read;

    rev->accept = 1;
    rev->handler = weir_event_accept;

    /* the accept retry timer (EMFILE) must not delay a graceful exit */
    rev->cancelable = 1;

    if (weir_add_event(rev, WEIR_READ_EVENT,
                       weir_event_accept_flags(cycle, ls))
        == WEIR_ERROR)
    {
        return WEIR_ERROR;
    }

    return WEIR_OK;
}


/*
 * Listening sockets are registered level-triggered: one accept per
 * wake-up is then safe, and a socket shared by several workers wakes one
 * of them (EPOLLEXCLUSIVE) rather than all.
 */

static weir_uint_t
weir_event_accept_flags(weir_cycle_t *cycle, weir_listening_t *ls)
{
    weir_core_conf_t  *ccf;

    if (!(weir_event_flags & WEIR_USE_EPOLL_EVENT) || ls->reuseport) {
        return WEIR_LEVEL_EVENT;
    }

    ccf = (weir_core_conf_t *) weir_get_conf(cycle->conf_ctx,
                                             weir_core_module);

    if (ccf == NULL || !ccf->master || ccf->worker_processes <= 1) {
        return WEIR_LEVEL_EVENT;
    }

    return WEIR_EXCLUSIVE_EVENT;
}


weir_int_t
weir_enable_accept_events(weir_cycle_t *cycle)
{
    weir_uint_t         i;
    weir_listening_t   *ls;
    weir_connection_t  *c;

    ls = cycle->listening.elts;

    for (i = 0; i < cycle->listening.nelts; i++) {

        c = ls[i].connection;

        if (c == NULL || c->read->active) {
            continue;
        }

        if (weir_add_event(c->read, WEIR_READ_EVENT,
                           weir_event_accept_flags(cycle, &ls[i]))
            == WEIR_ERROR)
        {
            return WEIR_ERROR;
        }
    }

    weir_accept_disabled = 0;

    return WEIR_OK;
}


/*
 * all: every listening socket of this worker; otherwise only the shared
 * ones (a reuseport socket belongs to this worker alone: no other
 * worker would take its connections).
 */

weir_int_t
weir_disable_accept_events(weir_cycle_t *cycle, weir_uint_t all)
{
    weir_uint_t         i;
    weir_listening_t   *ls;
    weir_connection_t  *c;

    ls = cycle->listening.elts;

    for (i = 0; i < cycle->listening.nelts; i++) {

        c = ls[i].connection;

        if (c == NULL || !c->read->active) {
            continue;
        }

        if (!all && ls[i].reuseport) {
            continue;
        }

        if (weir_del_event(c->read, WEIR_READ_EVENT, 0) == WEIR_ERROR) {
            return WEIR_ERROR;
        }
    }

    weir_accept_disabled = 1;

    return WEIR_OK;
}
