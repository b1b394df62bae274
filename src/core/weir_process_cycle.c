#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir.h"


/*
 * The master, worker and single-process loops.
 *
 * The master never serves traffic: it keeps every signal blocked except
 * while it waits in sigsuspend(), so a signal is never lost between
 * looking at the flags and going to sleep. Workers run the event loop
 * with signals unblocked; their handlers also write to a wakeup pipe
 * that the event loop watches, for the same reason.
 */


typedef struct {
    char          *path;
    char *const   *argv;
    char *const   *envp;
} weir_exec_ctx_t;


static void weir_start_worker_processes(weir_cycle_t *cycle, weir_int_t n,
    weir_int_t type);
static void weir_signal_worker_processes(weir_cycle_t *cycle, int signo,
    weir_uint_t old_only);
static weir_uint_t weir_reap_children(weir_cycle_t *cycle);
static void weir_master_process_exit(weir_cycle_t *cycle);
static void weir_set_master_title(weir_cycle_t *cycle);
static weir_int_t weir_master_has_work(weir_uint_t terminating,
    weir_uint_t quitting);
static void weir_worker_process_cycle(weir_cycle_t *cycle, void *data);
static void weir_worker_process_init(weir_cycle_t *cycle, weir_int_t worker);
static void weir_worker_process_exit(weir_cycle_t *cycle);
static weir_int_t weir_init_processes(weir_cycle_t *cycle);
static void weir_exit_processes(weir_cycle_t *cycle);
static void weir_exit_masters(weir_cycle_t *cycle);
static void weir_release_cycle(weir_cycle_t *cycle);
static void weir_graceful_shutdown(weir_cycle_t *cycle);
static weir_uint_t weir_shutdown_done(weir_cycle_t *cycle);
static weir_uint_t weir_active_connections(weir_cycle_t *cycle);
static void weir_shutdown_timer_handler(weir_event_t *ev);
static void weir_close_cycle_connections(weir_cycle_t *cycle,
    const char *reason, weir_uint_t force);
static weir_int_t weir_init_wakeup(weir_cycle_t *cycle);
static void weir_wakeup_handler(weir_event_t *ev);
static weir_cycle_t *weir_single_reload(weir_cycle_t *cycle);
static void weir_execute_proc(weir_cycle_t *cycle, void *data);


weir_uint_t              weir_process;
weir_uint_t              weir_worker;
weir_uint_t              weir_inherited;
weir_uint_t              weir_daemonized;
weir_uint_t              weir_exiting;
weir_msec_t              weir_exiting_msec;

volatile sig_atomic_t    weir_reap;
volatile sig_atomic_t    weir_sigio;
volatile sig_atomic_t    weir_sigalrm;
volatile sig_atomic_t    weir_quit;
volatile sig_atomic_t    weir_terminate;
volatile sig_atomic_t    weir_noaccept;
volatile sig_atomic_t    weir_reconfigure;
volatile sig_atomic_t    weir_reopen;
volatile sig_atomic_t    weir_change_binary;

weir_pid_t               weir_new_binary;
weir_uint_t              weir_noaccepting;
weir_uint_t              weir_restart;


/* how long workers get after SIGTERM before they are killed */
#define WEIR_TERMINATE_TIMEOUT  1000

static weir_event_t        weir_shutdown_event;
static weir_uint_t         weir_shutdown_forced;
static weir_connection_t  *weir_wakeup_connection;
static weir_fd_t           weir_wakeup_write_fd = -1;
static weir_uint_t         weir_master_listening_closed;


void
weir_master_process_cycle(weir_cycle_t *cycle)
{
    weir_uint_t        live, terminating, quitting;
    sigset_t           set;
    weir_pid_t         pid;
    weir_cycle_t      *new_cycle;
    struct itimerval   itv;
    weir_core_conf_t  *ccf;

    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGALRM);
    sigaddset(&set, SIGIO);
    sigaddset(&set, SIGINT);
    sigaddset(&set, WEIR_RECONFIGURE_SIGNAL);
    sigaddset(&set, WEIR_REOPEN_SIGNAL);
    sigaddset(&set, WEIR_NOACCEPT_SIGNAL);
    sigaddset(&set, WEIR_TERMINATE_SIGNAL);
    sigaddset(&set, WEIR_SHUTDOWN_SIGNAL);
    sigaddset(&set, WEIR_CHANGEBIN_SIGNAL);

    if (sigprocmask(SIG_BLOCK, &set, NULL) == -1) {
        weir_log_error(WEIR_LOG_ALERT, cycle->log, weir_errno,
                       "sigprocmask() failed");
    }

    sigemptyset(&set);

    weir_set_master_title(cycle);

    ccf = (weir_core_conf_t *) weir_get_conf(cycle->conf_ctx,
                                             weir_core_module);

    weir_start_worker_processes(cycle, ccf->worker_processes,
                                WEIR_PROCESS_RESPAWN);

    live = 1;
    terminating = 0;
    quitting = 0;

    for ( ;; ) {

        /* the flags are checked with every signal blocked: anything that
         * arrives from here on interrupts sigsuspend() */

        if (!weir_master_has_work(terminating, quitting)) {
            sigsuspend(&set);
        }

        weir_time_update();

        weir_log_signals(cycle->log);

        if (weir_reap) {
            weir_reap = 0;
            weir_process_get_status(cycle->log);
            live = weir_reap_children(cycle);
        }

        if (!live && (weir_terminate || weir_quit)) {
            weir_master_process_exit(cycle);
        }

        if (weir_terminate || weir_quit) {
            /* too late for these: left set, they would keep the loop
             * from sleeping until the workers are gone */
            weir_reconfigure = 0;
            weir_reopen = 0;
            weir_change_binary = 0;
            weir_noaccept = 0;
            weir_restart = 0;
        }

        if (weir_terminate) {

            if (!terminating) {
                terminating = 1;
                weir_sigalrm = 0;

                weir_signal_worker_processes(cycle, WEIR_TERMINATE_SIGNAL,
                                             0);

                weir_memzero(&itv, sizeof(struct itimerval));
                itv.it_value.tv_sec = WEIR_TERMINATE_TIMEOUT / 1000;
                itv.it_value.tv_usec = (WEIR_TERMINATE_TIMEOUT % 1000) * 1000;

                if (setitimer(ITIMER_REAL, &itv, NULL) == -1) {
                    weir_log_error(WEIR_LOG_ALERT, cycle->log, weir_errno,
                                   "setitimer() failed");
                }

                continue;
            }

            if (weir_sigalrm) {
                weir_sigalrm = 0;

                weir_log_error(WEIR_LOG_WARN, cycle->log, 0,
                               "worker processes did not exit within %d ms "
                               "of SIGTERM, sending SIGKILL",
                               WEIR_TERMINATE_TIMEOUT);

                weir_signal_worker_processes(cycle, SIGKILL, 0);
            }

            continue;
        }

        if (weir_quit) {

            if (!quitting) {
                quitting = 1;

                weir_signal_worker_processes(cycle, WEIR_SHUTDOWN_SIGNAL, 0);

                /* new connections are refused rather than left in a
                 * backlog that no worker will accept from */
                weir_close_listening_sockets(cycle);
                weir_master_listening_closed = 1;
            }

            continue;
        }

        if (weir_reconfigure) {
            weir_reconfigure = 0;

            if (weir_new_binary && weir_noaccepting) {

                /* the new binary is being rolled back: the old workers
                 * come back with the configuration they had */

                weir_log_error(WEIR_LOG_NOTICE, cycle->log, 0,
                               "starting the worker processes again");

                weir_start_worker_processes(cycle, ccf->worker_processes,
                                            WEIR_PROCESS_RESPAWN);
                weir_noaccepting = 0;
                live = 1;

                continue;
            }

            weir_log_error(WEIR_LOG_NOTICE, cycle->log, 0, "reconfiguring");

            new_cycle = weir_init_cycle(cycle);

            if (new_cycle == NULL) {
                /* the reason is logged already; the old workers were
                 * never told anything and go on serving */
                weir_log_error(WEIR_LOG_NOTICE, cycle->log, 0,
                               "reload failed, keeping the old "
                               "configuration");
                continue;
            }

            cycle = new_cycle;
            weir_cycle = cycle;

            ccf = (weir_core_conf_t *) weir_get_conf(cycle->conf_ctx,
                                                     weir_core_module);

            /* the new workers first: the listening sockets are shared,
             * so connections wait in the backlog, never refused, while
             * the old workers finish */

            weir_start_worker_processes(cycle, ccf->worker_processes,
                                        WEIR_PROCESS_JUST_RESPAWN);

            weir_signal_worker_processes(cycle, WEIR_SHUTDOWN_SIGNAL, 1);

            weir_noaccepting = 0;
            live = 1;

            continue;
        }

        if (weir_restart) {
            weir_restart = 0;

            weir_start_worker_processes(cycle, ccf->worker_processes,
                                        WEIR_PROCESS_RESPAWN);
            live = 1;
        }

        if (weir_reopen) {
            weir_reopen = 0;

            weir_log_error(WEIR_LOG_NOTICE, cycle->log, 0, "reopening logs");

            weir_reopen_files(cycle, ccf->user);
            weir_signal_worker_processes(cycle, WEIR_REOPEN_SIGNAL, 0);
        }

        if (weir_change_binary) {
            weir_change_binary = 0;

            weir_log_error(WEIR_LOG_NOTICE, cycle->log, 0,
                           "changing binary");

            pid = weir_exec_new_binary(cycle, weir_os_argv);
            weir_new_binary = (pid == -1) ? 0 : pid;
        }

        if (weir_noaccept) {
            weir_noaccept = 0;
            weir_noaccepting = 1;

            weir_signal_worker_processes(cycle, WEIR_SHUTDOWN_SIGNAL, 0);
        }

        if (weir_sigalrm) {
            weir_sigalrm = 0;
        }

        if (weir_sigio) {
            weir_sigio = 0;
        }
    }
}


static weir_int_t
weir_master_has_work(weir_uint_t terminating, weir_uint_t quitting)
{
    return weir_reap || weir_reconfigure || weir_reopen
           || weir_change_binary || weir_noaccept || weir_restart
           || (weir_terminate && (!terminating || weir_sigalrm))
           || (weir_quit && !quitting);
}


static void
weir_start_worker_processes(weir_cycle_t *cycle, weir_int_t n,
    weir_int_t type)
{
    weir_int_t  i;

    for (i = 0; i < n; i++) {
        (void) weir_spawn_process(cycle, weir_worker_process_cycle,
                                  (void *) (intptr_t) i, "worker process",
                                  type);
    }
}


/*
 * old_only: only the workers of earlier configuration generations (a
 * reload). A worker is told to quit once; TERM and KILL go to all.
 */

static void
weir_signal_worker_processes(weir_cycle_t *cycle, int signo,
    weir_uint_t old_only)
{
    weir_err_t       err;
    weir_int_t       i;
    weir_process_t  *p;

    for (i = 0; i < weir_last_process; i++) {
        p = &weir_processes[i];

        if (p->detached || p->pid == -1 || p->exited) {
            continue;
        }

        if (old_only && p->generation == cycle->generation) {
            continue;
        }

        if (p->exiting && signo == WEIR_SHUTDOWN_SIGNAL) {
            continue;
        }

        if (kill(p->pid, signo) == -1) {
            err = weir_errno;

            weir_log_error(WEIR_LOG_ALERT, cycle->log, err,
                           "kill(%d, %d) failed", (int) p->pid, signo);

            if (err == ESRCH) {
                p->exited = 1;
                p->exiting = 0;
                weir_reap = 1;
            }

            continue;
        }

        if (signo == WEIR_SHUTDOWN_SIGNAL || signo == WEIR_TERMINATE_SIGNAL
            || signo == SIGKILL)
        {
            p->exiting = 1;
        }
    }
}


/*
 * Acts on the slots weir_process_get_status() marked exited: respawns a
 * worker of the current configuration that died without being asked to,
 * notices the end of a new binary, frees the other slots. Returns
 * whether any (non-detached) child is still alive.
 */

static weir_uint_t
weir_reap_children(weir_cycle_t *cycle)
{
    weir_int_t         i;
    weir_uint_t        live;
    weir_process_t    *p;
    weir_core_conf_t  *ccf;

    live = 0;

    for (i = 0; i < weir_last_process; i++) {
        p = &weir_processes[i];

        if (p->pid == -1) {
            continue;
        }

        if (!p->exited) {
            if (!p->detached) {
                live = 1;
            }

            continue;
        }

        if (p->pid == weir_new_binary) {

            /* the upgrade failed or was rolled back: this master is the
             * one the pid file names again */

            ccf = (weir_core_conf_t *) weir_get_conf(cycle->conf_ctx,
                                                     weir_core_module);

            if (rename((char *) ccf->oldpid.data, (char *) ccf->pid.data)
                == -1)
            {
                weir_log_error(WEIR_LOG_ALERT, cycle->log, weir_errno,
                               "rename() \"%s\" back to \"%s\" failed "
                               "after the new binary process %d exited",
                               (char *) ccf->oldpid.data,
                               (char *) ccf->pid.data, (int) p->pid);

            } else {
                weir_log_error(WEIR_LOG_NOTICE, cycle->log, 0,
                               "new binary process %d exited, \"%s\" "
                               "restored", (int) p->pid,
                               (char *) ccf->pid.data);
            }

            weir_new_binary = 0;

            if (weir_noaccepting) {
                weir_restart = 1;
                weir_noaccepting = 0;
            }
        }

        if (p->respawn && !p->exiting && !weir_terminate && !weir_quit
            && p->generation == cycle->generation)
        {
            if (weir_spawn_process(cycle, p->proc, p->data, p->name, i)
                != -1)
            {
                live = 1;
                continue;
            }

            weir_log_error(WEIR_LOG_ALERT, cycle->log, 0,
                           "could not respawn %s", p->name);
        }

        p->pid = -1;
    }

    while (weir_last_process > 0
           && weir_processes[weir_last_process - 1].pid == -1)
    {
        weir_last_process--;
    }

    return live;
}


static void
weir_master_process_exit(weir_cycle_t *cycle)
{
    weir_delete_pidfile(cycle);

    weir_log_error(WEIR_LOG_NOTICE, cycle->log, 0, "exit");

    weir_exit_masters(cycle);

    if (!weir_master_listening_closed) {
        weir_close_listening_sockets(cycle);
    }

    weir_release_cycle(cycle);

    exit(0);
}


static void
weir_set_master_title(weir_cycle_t *cycle)
{
    int      i;
    char    *title, *p;
    size_t   size;

    static const char  master[] = "master process";

    size = sizeof(master);

    for (i = 0; i < weir_os_argc && weir_os_argv[i]; i++) {
        size += weir_strlen(weir_os_argv[i]) + 1;
    }

    title = malloc(size);
    if (title == NULL) {
        weir_log_error(WEIR_LOG_ALERT, cycle->log, weir_errno,
                       "malloc(%zu) failed", size);
        weir_setproctitle(master);
        return;
    }

    p = (char *) weir_cpymem(title, master, sizeof(master) - 1);

    for (i = 0; i < weir_os_argc && weir_os_argv[i]; i++) {
        *p++ = ' ';
        p = (char *) weir_cpymem(p, weir_os_argv[i],
                                 weir_strlen(weir_os_argv[i]));
    }

    *p = '\0';

    weir_setproctitle(title);

    free(title);
}


static void
weir_worker_process_cycle(weir_cycle_t *cycle, void *data)
{
    weir_int_t  worker;

    worker = (weir_int_t) (intptr_t) data;

    weir_process = WEIR_PROCESS_WORKER;
    weir_worker = (weir_uint_t) worker;

    weir_worker_process_init(cycle, worker);

    weir_setproctitle("worker process");

    for ( ;; ) {

        /* the flags are looked at before the loop blocks: a signal that
         * arrives after this still wakes it through the wakeup pipe */

        weir_log_signals(cycle->log);

        if (weir_terminate) {
            weir_log_error(WEIR_LOG_NOTICE, cycle->log, 0, "exiting");
            weir_worker_process_exit(cycle);
        }

        if (weir_quit) {
            weir_quit = 0;
            weir_graceful_shutdown(cycle);
        }

        if (weir_reopen) {
            weir_reopen = 0;

            weir_log_error(WEIR_LOG_NOTICE, cycle->log, 0, "reopening logs");
            weir_reopen_files(cycle, (uid_t) WEIR_CONF_UNSET_UINT);
        }

        if (weir_exiting && weir_shutdown_done(cycle)) {
            weir_log_error(WEIR_LOG_NOTICE, cycle->log, 0, "exiting");
            weir_worker_process_exit(cycle);
        }

        weir_process_events_and_timers(cycle);
    }
}


static void
weir_worker_process_init(weir_cycle_t *cycle, weir_int_t worker)
{
    sigset_t           set;
    struct rlimit      rlmt;
    weir_core_conf_t  *ccf;

    ccf = (weir_core_conf_t *) weir_get_conf(cycle->conf_ctx,
                                             weir_core_module);

    if (ccf->rlimit_nofile != WEIR_CONF_UNSET) {

        /* the hard limit is only raised, never lowered: lowering it
         * could not be undone by a later reload */

        if (getrlimit(RLIMIT_NOFILE, &rlmt) == -1) {
            rlmt.rlim_max = 0;
        }

        rlmt.rlim_cur = (rlim_t) ccf->rlimit_nofile;

        if (rlmt.rlim_max != RLIM_INFINITY
            && rlmt.rlim_max < rlmt.rlim_cur)
        {
            rlmt.rlim_max = rlmt.rlim_cur;
        }

        if (setrlimit(RLIMIT_NOFILE, &rlmt) == -1) {
            weir_log_error(WEIR_LOG_ALERT, cycle->log, weir_errno,
                           "setrlimit(RLIMIT_NOFILE, %ld) failed",
                           (long) ccf->rlimit_nofile);
        }
    }

    if (geteuid() == 0 && ccf->user != (uid_t) WEIR_CONF_UNSET_UINT) {

        if (setgid(ccf->group) == -1) {
            weir_log_error(WEIR_LOG_EMERG, cycle->log, weir_errno,
                           "setgid(%d) failed", (int) ccf->group);
            exit(2);
        }

        if (initgroups(ccf->username, ccf->group) == -1) {
            weir_log_error(WEIR_LOG_EMERG, cycle->log, weir_errno,
                           "initgroups(%s, %d) failed", ccf->username,
                           (int) ccf->group);
            exit(2);
        }

        if (setuid(ccf->user) == -1) {
            weir_log_error(WEIR_LOG_EMERG, cycle->log, weir_errno,
                           "setuid(%d) failed", (int) ccf->user);
            exit(2);
        }
    }

    if (ccf->working_directory.len) {
        if (chdir((char *) ccf->working_directory.data) == -1) {
            weir_log_error(WEIR_LOG_ALERT, cycle->log, weir_errno,
                           "chdir(\"%s\") failed",
                           (char *) ccf->working_directory.data);
            exit(2);
        }
    }

    sigemptyset(&set);

    if (sigprocmask(SIG_SETMASK, &set, NULL) == -1) {
        weir_log_error(WEIR_LOG_ALERT, cycle->log, weir_errno,
                       "sigprocmask() failed");
    }

    srandom(((unsigned) weir_pid << 16) ^ (unsigned) weir_time()
            ^ (unsigned) worker);

    if (weir_init_processes(cycle) != WEIR_OK) {
        exit(2);
    }

    /* without it a signal may wait for the next event: not fatal */
    (void) weir_init_wakeup(cycle);
}


static void
weir_worker_process_exit(weir_cycle_t *cycle)
{
    weir_exit_processes(cycle);

    weir_release_cycle(cycle);

    exit(0);
}


/*
 * The end of a process: the pool's cleanups run (files are flushed and
 * closed, so nothing may log after this). The connection arrays are the
 * event layer's, allocated for the process's lifetime outside the pool;
 * they go here too, unless an exit_process hook took them already, so
 * that a leak checker at exit sees only real leaks.
 */

static void
weir_release_cycle(weir_cycle_t *cycle)
{
    void  *connections, *read_events, *write_events;

    connections = cycle->connections;
    read_events = cycle->read_events;
    write_events = cycle->write_events;

    cycle->connections = NULL;
    cycle->read_events = NULL;
    cycle->write_events = NULL;

    weir_destroy_pool(cycle->pool);

    weir_free(connections);
    weir_free(read_events);
    weir_free(write_events);
}


static weir_int_t
weir_init_processes(weir_cycle_t *cycle)
{
    weir_uint_t  i;

    for (i = 0; cycle->modules[i]; i++) {
        if (cycle->modules[i]->init_process) {
            if (cycle->modules[i]->init_process(cycle) == WEIR_ERROR) {
                return WEIR_ERROR;
            }
        }
    }

    return WEIR_OK;
}


static void
weir_exit_processes(weir_cycle_t *cycle)
{
    weir_uint_t  i;

    for (i = 0; cycle->modules[i]; i++) {
        if (cycle->modules[i]->exit_process) {
            cycle->modules[i]->exit_process(cycle);
        }
    }
}


static void
weir_exit_masters(weir_cycle_t *cycle)
{
    weir_uint_t  i;

    for (i = 0; cycle->modules[i]; i++) {
        if (cycle->modules[i]->exit_master) {
            cycle->modules[i]->exit_master(cycle);
        }
    }
}


/*
 * Graceful stop of a worker (or of a single process): no more accepting,
 * idle connections are told (their owner closes them, or drains them for
 * a bounded time: keepalive_drain_timeout in HTTP/1), the others get
 * worker_shutdown_timeout to finish.
 */

static void
weir_graceful_shutdown(weir_cycle_t *cycle)
{
    weir_log_error(WEIR_LOG_NOTICE, cycle->log, 0,
                   "gracefully shutting down");

    if (weir_exiting) {
        return;
    }

    weir_exiting = 1;
    weir_exiting_msec = weir_current_msec;

    if (weir_process == WEIR_PROCESS_WORKER) {
        weir_setproctitle("worker process is shutting down");
    }

    weir_set_shutdown_timer(cycle);
    weir_close_listening_sockets(cycle);
    weir_close_idle_connections(cycle);
}


static weir_uint_t
weir_shutdown_done(weir_cycle_t *cycle)
{
    if (weir_shutdown_forced) {
        return 1;
    }

    return weir_event_no_timers_left()
           && weir_active_connections(cycle) == 0;
}


/*
 * The connections this process serves: every connection in use except
 * the accepting ones of listening sockets and the wakeup pipe.
 */

static weir_uint_t
weir_active_connections(weir_cycle_t *cycle)
{
    weir_uint_t         i, n;
    weir_connection_t  *c;

    if (cycle->connections == NULL) {
        return 0;
    }

    c = cycle->connections;
    n = 0;

    for (i = 0; i < cycle->connection_n; i++) {

        if (c[i].fd == (weir_fd_t) -1 || c[i].read == NULL) {
            continue;
        }

        if (c[i].read->accept || c[i].read->channel) {
            continue;
        }

        n++;
    }

    return n;
}


void
weir_set_shutdown_timer(weir_cycle_t *cycle)
{
    weir_core_conf_t  *ccf;

    ccf = (weir_core_conf_t *) weir_get_conf(cycle->conf_ctx,
                                             weir_core_module);

    if (ccf->shutdown_timeout == 0
        || ccf->shutdown_timeout == WEIR_CONF_UNSET_MSEC
        || weir_shutdown_event.timer_set)
    {
        return;
    }

    weir_shutdown_event.handler = weir_shutdown_timer_handler;
    weir_shutdown_event.data = cycle;
    weir_shutdown_event.log = cycle->log;

    /* the timer itself must not hold off the end of the shutdown */
    weir_shutdown_event.cancelable = 1;

    weir_event_add_timer(&weir_shutdown_event, ccf->shutdown_timeout);
}


static void
weir_shutdown_timer_handler(weir_event_t *ev)
{
    weir_close_cycle_connections(ev->data, "worker_shutdown_timeout", 0);

    weir_shutdown_forced = 1;
}


/*
 * Closes every served connection through its owner: the read handler
 * sees c->close set (as on a timeout) and releases what it holds. force:
 * a connection whose owner ignored that is closed here (its pool too),
 * for callers about to discard the whole event state.
 */

static void
weir_close_cycle_connections(weir_cycle_t *cycle, const char *reason,
    weir_uint_t force)
{
    weir_uint_t         i;
    weir_pool_t        *pool;
    weir_connection_t  *c;

    if (cycle->connections == NULL) {
        return;
    }

    c = cycle->connections;

    for (i = 0; i < cycle->connection_n; i++) {

        if (c[i].fd == (weir_fd_t) -1 || c[i].read == NULL
            || c[i].read->accept || c[i].read->channel)
        {
            continue;
        }

        weir_log_error(WEIR_LOG_NOTICE, c[i].log ? c[i].log : cycle->log, 0,
                       "closing connection on %s", reason);

        c[i].close = 1;
        c[i].error = 1;

        if (c[i].read->handler) {
            c[i].read->handler(c[i].read);
        }

        if (force && c[i].fd != (weir_fd_t) -1) {
            pool = c[i].pool;
            weir_close_connection(&c[i]);

            if (pool) {
                weir_destroy_pool(pool);
            }
        }
    }
}


static weir_int_t
weir_init_wakeup(weir_cycle_t *cycle)
{
    int                 fds[2];
    weir_connection_t  *c;

    if (pipe(fds) == -1) {
        weir_log_error(WEIR_LOG_ALERT, cycle->log, weir_errno,
                       "pipe() failed");
        return WEIR_ERROR;
    }

    if (weir_nonblocking(fds[0]) != WEIR_OK
        || weir_nonblocking(fds[1]) != WEIR_OK
        || weir_cloexec(fds[0]) != WEIR_OK
        || weir_cloexec(fds[1]) != WEIR_OK)
    {
        weir_log_error(WEIR_LOG_ALERT, cycle->log, weir_errno,
                       "fcntl() on the wakeup pipe failed");
        goto failed;
    }

    c = weir_get_connection(fds[0], cycle->log);
    if (c == NULL) {
        goto failed;
    }

    c->log = cycle->log;
    c->read->log = cycle->log;
    c->write->log = cycle->log;
    c->read->channel = 1;
    c->read->handler = weir_wakeup_handler;

    if (weir_handle_read_event(c->read, 0) != WEIR_OK) {
        weir_free_connection(c);
        goto failed;
    }

    weir_wakeup_connection = c;
    weir_wakeup_write_fd = fds[1];

    weir_signal_wakeup(fds[1]);

    return WEIR_OK;

failed:

    (void) close(fds[0]);
    (void) close(fds[1]);

    return WEIR_ERROR;
}


static void
weir_wakeup_handler(weir_event_t *ev)
{
    ssize_t             n;
    weir_uint_t         i;
    weir_connection_t  *c;
    unsigned char       buf[64];

    c = ev->data;

    /* the bytes mean nothing: waking up was the point */

    for (i = 0; i < 64; i++) {
        n = read(c->fd, buf, sizeof(buf));

        if (n > 0) {
            continue;
        }

        if (n == -1 && weir_errno == EINTR) {
            continue;
        }

        break;
    }

    ev->ready = 0;

    if (weir_handle_read_event(ev, 0) != WEIR_OK) {
        weir_log_error(WEIR_LOG_ALERT, ev->log, 0,
                       "could not rearm the wakeup pipe");
    }
}


void
weir_single_process_cycle(weir_cycle_t *cycle)
{
    if (weir_init_processes(cycle) != WEIR_OK) {
        exit(2);
    }

    (void) weir_init_wakeup(cycle);

    for ( ;; ) {

        weir_log_signals(cycle->log);

        if (weir_terminate) {
            weir_log_error(WEIR_LOG_NOTICE, cycle->log, 0, "exiting");
            weir_exit_processes(cycle);
            weir_master_process_exit(cycle);
        }

        if (weir_quit) {
            weir_quit = 0;
            weir_graceful_shutdown(cycle);
            weir_master_listening_closed = 1;
        }

        if (weir_exiting && weir_shutdown_done(cycle)) {
            weir_log_error(WEIR_LOG_NOTICE, cycle->log, 0, "exiting");
            weir_exit_processes(cycle);
            weir_master_process_exit(cycle);
        }

        if (weir_reconfigure) {
            weir_reconfigure = 0;

            if (!weir_exiting) {
                cycle = weir_single_reload(cycle);
            }
        }

        if (weir_reopen) {
            weir_reopen = 0;

            weir_log_error(WEIR_LOG_NOTICE, cycle->log, 0, "reopening logs");
            weir_reopen_files(cycle, (uid_t) WEIR_CONF_UNSET_UINT);
        }

        weir_process_events_and_timers(cycle);
    }
}


/*
 * A reload inside one process. The event loop's state (backend, timers,
 * connections) belongs to one cycle, so the switch is a restart of the
 * event layer: the old cycle's connections are closed through their
 * owners, its modules' exit_process run, then the new cycle's
 * init_process. Listening sockets the new configuration kept stay open
 * throughout, so connections wait in the backlog rather than being
 * refused; in-flight requests are cut, which a worker's graceful reload
 * avoids.
 */

static weir_cycle_t *
weir_single_reload(weir_cycle_t *cycle)
{
    weir_uint_t    i;
    weir_cycle_t  *new_cycle, **old;

    weir_log_error(WEIR_LOG_NOTICE, cycle->log, 0, "reconfiguring");

    new_cycle = weir_init_cycle(cycle);

    if (new_cycle == NULL) {
        weir_log_error(WEIR_LOG_NOTICE, cycle->log, 0,
                       "reload failed, keeping the old configuration");
        return cycle;
    }

    weir_close_cycle_connections(cycle, "reload", 1);

    weir_signal_wakeup(-1);

    if (weir_wakeup_connection) {
        weir_close_connection(weir_wakeup_connection);
        weir_wakeup_connection = NULL;
    }

    if (weir_wakeup_write_fd != -1) {
        (void) close(weir_wakeup_write_fd);
        weir_wakeup_write_fd = -1;
    }

    weir_exit_processes(cycle);

    if (weir_event_actions.done) {
        weir_done_events(cycle);
    }

    weir_cycle = new_cycle;

    if (weir_init_processes(new_cycle) != WEIR_OK) {
        weir_log_error(WEIR_LOG_EMERG, new_cycle->log, 0,
                       "could not start serving the new configuration");
        exit(2);
    }

    (void) weir_init_wakeup(new_cycle);

    /*
     * Nothing points into the old cycle any more: it goes now, instead of
     * waiting in weir_old_cycles. That array may live in the pool of the
     * cycle being destroyed, so it is forgotten first (it is created
     * again on the next reload); it can hold nothing else, as every
     * reload here empties it.
     */

    old = weir_old_cycles.elts;

    for (i = 0; i < weir_old_cycles.nelts; i++) {
        if (old[i] != cycle) {
            weir_log_error(WEIR_LOG_ALERT, new_cycle->log, 0,
                           "unexpected old cycle left after a reload");
        }
    }

    weir_memzero(&weir_old_cycles, sizeof(weir_array_t));

    weir_release_cycle(cycle);

    return new_cycle;
}


/*
 * Binary upgrade: the pid file moves to .oldbin first (the new master
 * writes its own pid file as soon as it starts), then a child execs
 * argv[0] with the listening sockets listed in the WEIR environment
 * variable. Returns the child's pid, or -1 with the pid file back in
 * place.
 */

weir_pid_t
weir_exec_new_binary(weir_cycle_t *cycle, char *const *argv)
{
    char               **env, *var, *p, *last;
    size_t               len;
    weir_uint_t          i, n;
    weir_pid_t           pid;
    weir_pool_t         *pool;
    weir_exec_ctx_t      ctx;
    weir_listening_t    *ls;
    weir_core_conf_t    *ccf;

    if (argv == NULL || argv[0] == NULL) {
        weir_log_error(WEIR_LOG_ALERT, cycle->log, 0,
                       "no binary to execute");
        return -1;
    }

    pool = weir_create_pool(1024, cycle->log);
    if (pool == NULL) {
        return -1;
    }

    ls = cycle->listening.elts;

    len = sizeof(WEIR_VAR "=") + cycle->listening.nelts * (WEIR_INT_T_LEN + 1);

    var = weir_pnalloc(pool, len);
    if (var == NULL) {
        goto failed;
    }

    last = var + len - 1;
    p = (char *) weir_cpymem(var, WEIR_VAR "=", sizeof(WEIR_VAR "=") - 1);

    for (i = 0; i < cycle->listening.nelts; i++) {
        if (ls[i].fd != (weir_fd_t) -1) {
            p = (char *) weir_slprintf((unsigned char *) p,
                                       (unsigned char *) last, "%d;",
                                       ls[i].fd);
        }
    }

    *p = '\0';

    /* the environment as it is, but with our WEIR variable */

    for (n = 0; environ != NULL && environ[n]; n++) { /* void */ }

    env = weir_palloc(pool, (n + 2) * sizeof(char *));
    if (env == NULL) {
        goto failed;
    }

    n = 0;

    for (i = 0; environ != NULL && environ[i]; i++) {
        if (weir_strncmp(environ[i], WEIR_VAR "=", sizeof(WEIR_VAR "=") - 1)
            != 0)
        {
            env[n++] = environ[i];
        }
    }

    env[n++] = var;
    env[n] = NULL;

    ccf = (weir_core_conf_t *) weir_get_conf(cycle->conf_ctx,
                                             weir_core_module);

    if (rename((char *) ccf->pid.data, (char *) ccf->oldpid.data) == -1) {
        weir_log_error(WEIR_LOG_ALERT, cycle->log, weir_errno,
                       "rename() \"%s\" to \"%s\" failed before executing "
                       "new binary process \"%s\"", (char *) ccf->pid.data,
                       (char *) ccf->oldpid.data, argv[0]);
        goto failed;
    }

    ctx.path = argv[0];
    ctx.argv = argv;
    ctx.envp = env;

    pid = weir_spawn_process(cycle, weir_execute_proc, &ctx,
                             "new binary process", WEIR_PROCESS_DETACHED);

    if (pid == -1) {
        if (rename((char *) ccf->oldpid.data, (char *) ccf->pid.data) == -1)
        {
            weir_log_error(WEIR_LOG_ALERT, cycle->log, weir_errno,
                           "rename() \"%s\" back to \"%s\" failed after "
                           "an unsuccessful execute attempt",
                           (char *) ccf->oldpid.data,
                           (char *) ccf->pid.data);
        }
    }

    weir_destroy_pool(pool);

    return pid;

failed:

    weir_destroy_pool(pool);

    return -1;
}


/* in the child of weir_exec_new_binary() */

static void
weir_execute_proc(weir_cycle_t *cycle, void *data)
{
    int                flags;
    sigset_t           set;
    weir_uint_t        i;
    weir_exec_ctx_t   *ctx;
    weir_listening_t  *ls;

    ctx = data;

    /* the new binary must not start with the master's signals blocked */

    sigemptyset(&set);
    (void) sigprocmask(SIG_SETMASK, &set, NULL);

    ls = cycle->listening.elts;

    for (i = 0; i < cycle->listening.nelts; i++) {
        if (ls[i].fd == (weir_fd_t) -1) {
            continue;
        }

        flags = fcntl(ls[i].fd, F_GETFD);

        if (flags == -1
            || fcntl(ls[i].fd, F_SETFD, flags & ~FD_CLOEXEC) == -1)
        {
            weir_log_error(WEIR_LOG_ALERT, cycle->log, weir_errno,
                           "fcntl(%d, F_SETFD) failed", ls[i].fd);
            _exit(1);
        }
    }

    execve(ctx->path, ctx->argv, ctx->envp);

    weir_log_error(WEIR_LOG_ALERT, cycle->log, weir_errno,
                   "execve() failed while executing new binary process "
                   "\"%s\"", ctx->path);

    /* _exit: the atexit handlers belong to the master */
    _exit(1);
}
