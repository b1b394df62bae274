#ifndef _WEIR_PROCESS_H_INCLUDED_
#define _WEIR_PROCESS_H_INCLUDED_

/* child processes of the master, and signal handling */

typedef void (*weir_spawn_proc_pt)(weir_cycle_t *cycle, void *data);

typedef struct {
    weir_pid_t           pid;
    int                  status;

    weir_spawn_proc_pt   proc;
    void                *data;
    const char          *name;

    weir_uint_t          generation;  /* the cycle it was started for */

    unsigned             respawn:1;
    unsigned             just_spawn:1;
    unsigned             detached:1;
    unsigned             exiting:1;
    unsigned             exited:1;
} weir_process_t;

#define WEIR_MAX_PROCESSES        1024

#define WEIR_PROCESS_NORESPAWN     -1
#define WEIR_PROCESS_JUST_SPAWN    -2
#define WEIR_PROCESS_RESPAWN       -3
#define WEIR_PROCESS_JUST_RESPAWN  -4
#define WEIR_PROCESS_DETACHED      -5

typedef struct {
    int          signo;
    const char  *signame;
    const char  *name;      /* for -s: "reload", "quit", ... */
    void       (*handler)(int signo, siginfo_t *siginfo, void *ucontext);
} weir_signal_t;

#define WEIR_SHUTDOWN_SIGNAL      SIGQUIT
#define WEIR_TERMINATE_SIGNAL     SIGTERM
#define WEIR_NOACCEPT_SIGNAL      SIGWINCH
#define WEIR_RECONFIGURE_SIGNAL   SIGHUP
#define WEIR_REOPEN_SIGNAL        SIGUSR1
#define WEIR_CHANGEBIN_SIGNAL     SIGUSR2

/* respawn: a slot index, or one of the WEIR_PROCESS_* modes */
weir_pid_t weir_spawn_process(weir_cycle_t *cycle, weir_spawn_proc_pt proc,
    void *data, const char *name, weir_int_t respawn);
weir_int_t weir_init_signals(weir_log_t *log);
/* sends the named signal ("reload", "quit", "stop", "reopen") to pid */
weir_int_t weir_os_signal_process(weir_cycle_t *cycle, char *name,
    weir_pid_t pid);

/* added by the process helper: */
/* logs the signals received since the last call, from ordinary code (the
 * handlers only record them) */
void weir_log_signals(weir_log_t *log);
/* reaps every exited child (waitpid WNOHANG loop), logs how each ended and
 * marks its slot exited; code 2 clears respawn */
void weir_process_get_status(weir_log_t *log);
/* fd (or -1) that the signal handler writes a byte to, so that a signal
 * arriving just before the event loop blocks still wakes it */
void weir_signal_wakeup(weir_fd_t fd);

extern weir_pid_t      weir_pid;
extern weir_pid_t      weir_parent;
extern weir_int_t      weir_process_slot;
extern weir_int_t      weir_last_process;
extern weir_process_t  weir_processes[WEIR_MAX_PROCESSES];
extern weir_signal_t   weir_signals[];

#endif /* _WEIR_PROCESS_H_INCLUDED_ */
