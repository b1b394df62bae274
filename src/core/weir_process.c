#include "weir_config.h"
#include "weir_core.h"


/*
 * Child processes and signals. Signal handlers only record what arrived
 * (flags of weir_process_cycle.h and the sender, for the log line); the
 * process loops act on them and log from ordinary code, where taking
 * locks and allocating are safe.
 */


static void weir_signal_handler(int signo, siginfo_t *siginfo,
    void *ucontext);


weir_pid_t      weir_pid;
weir_pid_t      weir_parent;
weir_int_t      weir_process_slot;
weir_int_t      weir_last_process;
weir_process_t  weir_processes[WEIR_MAX_PROCESSES];


weir_signal_t  weir_signals[] = {
    { SIGHUP, "SIGHUP", "reload", weir_signal_handler },
    { SIGQUIT, "SIGQUIT", "quit", weir_signal_handler },
    { SIGTERM, "SIGTERM", "stop", weir_signal_handler },
    { SIGINT, "SIGINT", "", weir_signal_handler },
    { SIGUSR1, "SIGUSR1", "reopen", weir_signal_handler },
    { SIGUSR2, "SIGUSR2", "", weir_signal_handler },
    { SIGWINCH, "SIGWINCH", "", weir_signal_handler },
    { SIGCHLD, "SIGCHLD", "", weir_signal_handler },
    { SIGALRM, "SIGALRM", "", weir_signal_handler },
    { SIGIO, "SIGIO", "", weir_signal_handler },
    { SIGPIPE, "SIGPIPE, SIG_IGN", "", NULL },
    { SIGSYS, "SIGSYS, SIG_IGN", "", NULL },
    { 0, NULL, "", NULL }
};


/* what a signal made the receiving process do, for the log line */
#define WEIR_SIG_ACT_NONE       0
#define WEIR_SIG_ACT_RECONF     1
#define WEIR_SIG_ACT_SHUTDOWN   2
#define WEIR_SIG_ACT_EXIT       3
#define WEIR_SIG_ACT_REOPEN     4
#define WEIR_SIG_ACT_CHANGEBIN  5
#define WEIR_SIG_ACT_NOACCEPT   6
#define WEIR_SIG_ACT_IGNORE     7

static const char  *weir_signal_actions[] = {
    "",
    ", reconfiguring",
    ", shutting down",
    ", exiting",
    ", reopening",
    ", changing binary",
    ", stop accepting connections",
    ", ignoring"
};

#define WEIR_NSIGNALS  (sizeof(weir_signals) / sizeof(weir_signal_t))

/* written by the handler, read and cleared by weir_log_signals() */
static volatile sig_atomic_t  weir_signal_pending[WEIR_NSIGNALS];
static volatile sig_atomic_t  weir_signal_sender[WEIR_NSIGNALS];
static volatile sig_atomic_t  weir_signal_action[WEIR_NSIGNALS];

/* the write end of a worker's wakeup pipe, -1 elsewhere */
static volatile sig_atomic_t  weir_signal_wakeup_fd = -1;


weir_pid_t
weir_spawn_process(weir_cycle_t *cycle, weir_spawn_proc_pt proc, void *data,
    const char *name, weir_int_t respawn)
{
    weir_pid_t  pid;
    weir_int_t  s;

    if (respawn >= 0) {
        s = respawn;

    } else {
        for (s = 0; s < weir_last_process; s++) {
            if (weir_processes[s].pid == -1) {
                break;
            }
        }

        if (s == WEIR_MAX_PROCESSES) {
            weir_log_error(WEIR_LOG_ALERT, cycle->log, 0,
                           "no more than %d processes can be spawned",
                           WEIR_MAX_PROCESSES);
            return -1;
        }
    }

    /* the child learns its slot from this before proc() runs */
    weir_process_slot = s;

    pid = fork();

    switch (pid) {

    case -1:
        weir_log_error(WEIR_LOG_ALERT, cycle->log, weir_errno,
                       "fork() failed while spawning \"%s\"", name);
        return -1;

    case 0:
        weir_parent = weir_pid;
        weir_pid = getpid();
        proc(cycle, data);

        /* proc() does not return; if it ever does, the child ends here
         * rather than running the parent's loop */
        exit(0);

    default:
        break;
    }

    weir_log_error(WEIR_LOG_NOTICE, cycle->log, 0, "start %s %d", name,
                   (int) pid);

    weir_processes[s].pid = pid;
    weir_processes[s].exited = 0;
    weir_processes[s].generation = cycle->generation;

    if (respawn >= 0) {
        /* a respawned slot keeps its proc, data, name and flags */
        return pid;
    }

    weir_processes[s].proc = proc;
    weir_processes[s].data = data;
    weir_processes[s].name = name;
    weir_processes[s].exiting = 0;
    weir_processes[s].status = 0;

    switch (respawn) {

    case WEIR_PROCESS_NORESPAWN:
        weir_processes[s].respawn = 0;
        weir_processes[s].just_spawn = 0;
        weir_processes[s].detached = 0;
        break;

    case WEIR_PROCESS_JUST_SPAWN:
        weir_processes[s].respawn = 0;
        weir_processes[s].just_spawn = 1;
        weir_processes[s].detached = 0;
        break;

    case WEIR_PROCESS_RESPAWN:
        weir_processes[s].respawn = 1;
        weir_processes[s].just_spawn = 0;
        weir_processes[s].detached = 0;
        break;

    case WEIR_PROCESS_JUST_RESPAWN:
        weir_processes[s].respawn = 1;
        weir_processes[s].just_spawn = 1;
        weir_processes[s].detached = 0;
        break;

    case WEIR_PROCESS_DETACHED:
        weir_processes[s].respawn = 0;
        weir_processes[s].just_spawn = 0;
        weir_processes[s].detached = 1;
        break;
    }

    if (s == weir_last_process) {
        weir_last_process++;
    }

    return pid;
}


weir_int_t
weir_init_signals(weir_log_t *log)
{
    weir_signal_t     *sig;
    struct sigaction   sa;

    for (sig = weir_signals; sig->signo != 0; sig++) {
        weir_memzero(&sa, sizeof(struct sigaction));

        if (sig->handler) {
            sa.sa_sigaction = sig->handler;
            sa.sa_flags = SA_SIGINFO;

        } else {
            sa.sa_handler = SIG_IGN;
        }

        sigemptyset(&sa.sa_mask);

        if (sigaction(sig->signo, &sa, NULL) == -1) {
            weir_log_error(WEIR_LOG_EMERG, log, weir_errno,
                           "sigaction(%s) failed", sig->signame);
            return WEIR_ERROR;
        }
    }

    return WEIR_OK;
}


/*
 * Runs in signal context: it may only set flags and make async-signal-
 * safe calls. errno is saved because the interrupted code may be about
 * to read it.
 */

static void
weir_signal_handler(int signo, siginfo_t *siginfo, void *ucontext)
{
    int             action;
    weir_err_t      err;
    weir_uint_t     i;
    weir_signal_t  *sig;

    (void) ucontext;

    err = weir_errno;

    for (i = 0, sig = weir_signals; sig->signo != 0; i++, sig++) {
        if (sig->signo == signo) {
            break;
        }
    }

    action = WEIR_SIG_ACT_NONE;

    switch (weir_process) {

    case WEIR_PROCESS_MASTER:
    case WEIR_PROCESS_SINGLE:

        switch (signo) {

        case SIGQUIT:
            weir_quit = 1;
            action = WEIR_SIG_ACT_SHUTDOWN;
            break;

        case SIGTERM:
        case SIGINT:
            weir_terminate = 1;
            action = WEIR_SIG_ACT_EXIT;
            break;

        case SIGWINCH:
            /* a terminal sends WINCH to its foreground processes on every
             * resize: obey it only when no terminal can be the sender */
            if (weir_process == WEIR_PROCESS_MASTER
                && (weir_daemonized || weir_new_binary > 0))
            {
                weir_noaccept = 1;
                action = WEIR_SIG_ACT_NOACCEPT;

            } else {
                action = WEIR_SIG_ACT_IGNORE;
            }

            break;

        case SIGHUP:
            weir_reconfigure = 1;
            action = WEIR_SIG_ACT_RECONF;
            break;

        case SIGUSR1:
            weir_reopen = 1;
            action = WEIR_SIG_ACT_REOPEN;
            break;

        case SIGUSR2:
            /* one upgrade at a time: not while our own new binary runs,
             * and not in a new binary whose old master is still there */
            if (weir_process != WEIR_PROCESS_MASTER
                || weir_new_binary > 0
                || (weir_inherited && getppid() == weir_parent))
            {
                action = WEIR_SIG_ACT_IGNORE;

            } else {
                weir_change_binary = 1;
                action = WEIR_SIG_ACT_CHANGEBIN;
            }

            break;

        case SIGALRM:
            weir_sigalrm = 1;
            break;

        case SIGIO:
            weir_sigio = 1;
            break;

        case SIGCHLD:
            weir_reap = 1;
            break;
        }

        break;

    case WEIR_PROCESS_WORKER:

        switch (signo) {

        case SIGQUIT:
            weir_quit = 1;
            action = WEIR_SIG_ACT_SHUTDOWN;
            break;

        case SIGTERM:
        case SIGINT:
            weir_terminate = 1;
            action = WEIR_SIG_ACT_EXIT;
            break;

        case SIGUSR1:
            weir_reopen = 1;
            action = WEIR_SIG_ACT_REOPEN;
            break;

        case SIGALRM:
            weir_sigalrm = 1;
            break;

        case SIGIO:
            weir_sigio = 1;
            break;

        case SIGCHLD:
            weir_reap = 1;
            break;

        default:
            action = WEIR_SIG_ACT_IGNORE;
            break;
        }

        break;

    default:
        break;
    }

    if (i < WEIR_NSIGNALS - 1) {
        weir_signal_sender[i] = (siginfo && siginfo->si_pid)
                                ? (sig_atomic_t) siginfo->si_pid : 0;
        weir_signal_action[i] = action;
        weir_signal_pending[i] = 1;
    }

    if (weir_signal_wakeup_fd != -1) {
        /* a full pipe already wakes the loop: the result does not
         * matter */
        if (write(weir_signal_wakeup_fd, "", 1) == -1) {
            /* void */
        }
    }

    weir_set_errno(err);
}


void
weir_log_signals(weir_log_t *log)
{
    int          action;
    weir_pid_t   pid;
    weir_uint_t  i;

    for (i = 0; i < WEIR_NSIGNALS - 1; i++) {

        if (!weir_signal_pending[i]) {
            continue;
        }

        weir_signal_pending[i] = 0;

        pid = (weir_pid_t) weir_signal_sender[i];
        action = weir_signal_action[i];

        if (action < WEIR_SIG_ACT_NONE || action > WEIR_SIG_ACT_IGNORE) {
            action = WEIR_SIG_ACT_NONE;
        }

        if (pid) {
            weir_log_error(WEIR_LOG_NOTICE, log, 0,
                           "signal %d (%s) received from %d%s",
                           weir_signals[i].signo, weir_signals[i].signame,
                           (int) pid, weir_signal_actions[action]);

        } else {
            weir_log_error(WEIR_LOG_NOTICE, log, 0,
                           "signal %d (%s) received%s",
                           weir_signals[i].signo, weir_signals[i].signame,
                           weir_signal_actions[action]);
        }
    }
}


void
weir_signal_wakeup(weir_fd_t fd)
{
    weir_signal_wakeup_fd = fd;
}


/*
 * Collects every child that has exited (the loop runs until waitpid()
 * has nothing more to report) and records it in weir_processes[]; the
 * caller decides about respawning.
 */

void
weir_process_get_status(weir_log_t *log)
{
    int          status;
    weir_pid_t   pid;
    weir_err_t   err;
    weir_int_t   i;
    weir_uint_t  count;
    const char  *name;

    for (count = 0; count < WEIR_MAX_PROCESSES * 2; count++) {

        pid = waitpid(-1, &status, WNOHANG);

        if (pid == 0) {
            return;
        }

        if (pid == -1) {
            err = weir_errno;

            if (err == EINTR) {
                continue;
            }

            if (err != ECHILD) {
                weir_log_error(WEIR_LOG_ALERT, log, err, "waitpid() failed");
            }

            return;
        }

        name = "unknown process";

        for (i = 0; i < weir_last_process; i++) {
            if (weir_processes[i].pid == pid) {
                weir_processes[i].status = status;
                weir_processes[i].exited = 1;
                name = weir_processes[i].name;
                break;
            }
        }

        if (WIFSIGNALED(status)) {
            weir_log_error(WEIR_LOG_ALERT, log, 0,
                           "%s %d exited on signal %d%s", name, (int) pid,
                           WTERMSIG(status),
#ifdef WCOREDUMP
                           WCOREDUMP(status) ? " (core dumped)" : ""
#else
                           ""
#endif
                           );
            continue;
        }

        if (WEXITSTATUS(status) == 2) {
            weir_log_error(WEIR_LOG_ALERT, log, 0,
                           "%s %d exited with fatal code %d "
                           "and cannot be respawned", name, (int) pid,
                           WEXITSTATUS(status));

            if (i < weir_last_process) {
                weir_processes[i].respawn = 0;
            }

            continue;
        }

        weir_log_error(WEIR_LOG_NOTICE, log, 0, "%s %d exited with code %d",
                       name, (int) pid, WEXITSTATUS(status));
    }
}


weir_int_t
weir_os_signal_process(weir_cycle_t *cycle, char *name, weir_pid_t pid)
{
    weir_signal_t  *sig;

    for (sig = weir_signals; sig->signo != 0; sig++) {

        if (sig->name[0] == '\0' || weir_strcmp(name, sig->name) != 0) {
            continue;
        }

        if (kill(pid, sig->signo) == -1) {
            weir_log_error(WEIR_LOG_ALERT, cycle->log, weir_errno,
                           "kill(%d, %d) failed", (int) pid, sig->signo);
            return WEIR_ERROR;
        }

        return WEIR_OK;
    }

    weir_log_error(WEIR_LOG_EMERG, cycle->log, 0, "unknown signal \"%s\"",
                   name);

    return WEIR_ERROR;
}
