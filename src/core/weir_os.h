#ifndef _WEIR_OS_H_INCLUDED_
#define _WEIR_OS_H_INCLUDED_

extern weir_int_t    weir_ncpu;
extern weir_int_t    weir_max_sockets;
extern weir_uint_t   weir_pagesize;
extern char        **weir_os_argv;
extern int           weir_os_argc;
extern char        **weir_os_environ;

/* fills weir_ncpu, weir_pagesize, weir_max_sockets */
weir_int_t weir_os_init(weir_log_t *log);
/* detaches from the terminal: fork, setsid, stdin/stdout to /dev/null */
weir_int_t weir_daemon(weir_log_t *log);
/* changes the process title shown by ps ("weir: worker process") */
void weir_setproctitle(const char *title);

#endif /* _WEIR_OS_H_INCLUDED_ */
