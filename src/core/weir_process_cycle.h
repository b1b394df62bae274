#ifndef _WEIR_PROCESS_CYCLE_H_INCLUDED_
#define _WEIR_PROCESS_CYCLE_H_INCLUDED_

#define WEIR_PROCESS_SINGLE     0
#define WEIR_PROCESS_MASTER     1
#define WEIR_PROCESS_SIGNALLER  2
#define WEIR_PROCESS_WORKER     3

void weir_master_process_cycle(weir_cycle_t *cycle);
void weir_single_process_cycle(weir_cycle_t *cycle);

extern weir_uint_t              weir_process;
extern weir_uint_t              weir_worker;
extern weir_uint_t              weir_inherited;
extern weir_uint_t              weir_daemonized;
extern weir_uint_t              weir_exiting;
/* weir_current_msec when the graceful shutdown began (weir_exiting set):
 * the start of the drain of idle connections */
extern weir_msec_t              weir_exiting_msec;

extern volatile sig_atomic_t    weir_reap;
extern volatile sig_atomic_t    weir_sigio;
extern volatile sig_atomic_t    weir_sigalrm;
extern volatile sig_atomic_t    weir_quit;
extern volatile sig_atomic_t    weir_terminate;
extern volatile sig_atomic_t    weir_noaccept;
extern volatile sig_atomic_t    weir_reconfigure;
extern volatile sig_atomic_t    weir_reopen;
extern volatile sig_atomic_t    weir_change_binary;

extern weir_pid_t               weir_new_binary;
extern weir_uint_t              weir_noaccepting;
extern weir_uint_t              weir_restart;

#endif /* _WEIR_PROCESS_CYCLE_H_INCLUDED_ */
