#include "weir_config.h"
#include "weir_core.h"

#if (defined __GLIBC__)
#include <malloc.h>
#endif


/*
 * Operating-system facts and process-level setup: CPU count, page size,
 * descriptor limit, daemonizing and the process title.
 */


/* the free heap a worker keeps mapped (see weir_os_init) */
#define WEIR_MALLOC_TRIM  (16 * 1024 * 1024)


static weir_int_t weir_init_setproctitle(weir_log_t *log);


weir_int_t    weir_ncpu;
weir_int_t    weir_max_sockets;
weir_uint_t   weir_pagesize;
char        **weir_os_argv;
int           weir_os_argc;
char        **weir_os_environ;


/*
 * The title is written over the memory that held the original argv and
 * environment strings (that is what ps reads); weir_title_start and
 * weir_title_end bound that area, and weir_title_saved keeps the copies
 * of the strings that lived there.
 */

static char  *weir_title_start;
static char  *weir_title_end;
static char  *weir_title_saved;


weir_int_t
weir_os_init(weir_log_t *log)
{
    long           n;
    struct rlimit  rlmt;
#ifdef CPU_COUNT
    cpu_set_t      mask;
    int            count;
#endif

    n = sysconf(_SC_PAGESIZE);
    weir_pagesize = (n > 0) ? (weir_uint_t) n : 4096;

    n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) {
        n = 1;
    }

#ifdef CPU_COUNT
    /* "worker_processes auto" should match the CPUs this process may run
     * on (taskset, containers), not every CPU of the host */

    CPU_ZERO(&mask);

    if (sched_getaffinity(0, sizeof(cpu_set_t), &mask) == 0) {
        count = CPU_COUNT(&mask);

        if (count > 0 && count < n) {
            n = count;
        }
    }
#endif

    weir_ncpu = (weir_int_t) n;

    if (getrlimit(RLIMIT_NOFILE, &rlmt) == -1) {
        weir_log_error(WEIR_LOG_ALERT, log, weir_errno,
                       "getrlimit(RLIMIT_NOFILE) failed");
        return WEIR_ERROR;
    }

    if (rlmt.rlim_cur == RLIM_INFINITY || rlmt.rlim_cur > INT_MAX) {
        weir_max_sockets = INT_MAX;

    } else {
        weir_max_sockets = (weir_int_t) rlmt.rlim_cur;
    }

    if (weir_pid == 0) {
        weir_pid = getpid();
        weir_parent = getppid();
    }

#if (defined __GLIBC__ && defined M_TRIM_THRESHOLD)

    /*
     * glibc gives the free top of the heap back to the kernel as soon as
     * it exceeds 128 KiB, and a worker that relays bodies frees that much
     * at the end of every request (proxy_buffers, body buffers): the next
     * request takes the pages again, one page fault (and a zeroed page)
     * per 4 KiB. Up to WEIR_MALLOC_TRIM of free heap stays mapped.
     */

    (void) mallopt(M_TRIM_THRESHOLD, WEIR_MALLOC_TRIM);

#endif

    return weir_init_setproctitle(log);
}


/*
 * Detaches from the controlling terminal. The parent exits at once with
 * _exit(): it must not run atexit handlers or flush stdio buffers that
 * the child owns now. stderr stays open: it carries startup errors until
 * the configured error log takes it over.
 */

weir_int_t
weir_daemon(weir_log_t *log)
{
    int  fd;

    switch (fork()) {

    case -1:
        weir_log_error(WEIR_LOG_EMERG, log, weir_errno, "fork() failed");
        return WEIR_ERROR;

    case 0:
        break;

    default:
        _exit(0);
    }

    weir_parent = weir_pid;
    weir_pid = getpid();

    if (setsid() == -1) {
        weir_log_error(WEIR_LOG_EMERG, log, weir_errno, "setsid() failed");
        return WEIR_ERROR;
    }

    umask(0);

    fd = open("/dev/null", O_RDWR);
    if (fd == -1) {
        weir_log_error(WEIR_LOG_EMERG, log, weir_errno,
                       "open(\"/dev/null\") failed");
        return WEIR_ERROR;
    }

    if (dup2(fd, STDIN_FILENO) == -1) {
        weir_log_error(WEIR_LOG_EMERG, log, weir_errno,
                       "dup2(STDIN) failed");
        (void) close(fd);
        return WEIR_ERROR;
    }

    if (dup2(fd, STDOUT_FILENO) == -1) {
        weir_log_error(WEIR_LOG_EMERG, log, weir_errno,
                       "dup2(STDOUT) failed");
        (void) close(fd);
        return WEIR_ERROR;
    }

    if (fd > STDERR_FILENO) {
        if (close(fd) == -1) {
            weir_log_error(WEIR_LOG_EMERG, log, weir_errno,
                           "close(/dev/null) failed");
            return WEIR_ERROR;
        }
    }

    weir_daemonized = 1;

    return WEIR_OK;
}


/*
 * Finds the contiguous area of argv and environment strings, copies it
 * to the heap and points argv[] and environ[] at the copies: after this
 * nothing reads the area, and the title may take all of it. Strings that
 * lie outside the area (unusual layouts) are left where they are.
 */

static weir_int_t
weir_init_setproctitle(weir_log_t *log)
{
    int     i;
    char   *start, *end, *p;
    size_t  size;

    if (weir_title_start != NULL || weir_os_argv == NULL
        || weir_os_argc < 1 || weir_os_argv[0] == NULL)
    {
        return WEIR_OK;
    }

    start = weir_os_argv[0];
    end = start;

    for (i = 0; i < weir_os_argc && weir_os_argv[i]; i++) {
        if (weir_os_argv[i] == end) {
            end += weir_strlen(weir_os_argv[i]) + 1;
        }
    }

    for (i = 0; environ != NULL && environ[i]; i++) {
        if (environ[i] == end) {
            end += weir_strlen(environ[i]) + 1;
        }
    }

    size = (size_t) (end - start);

    p = malloc(size);
    if (p == NULL) {
        weir_log_error(WEIR_LOG_ALERT, log, weir_errno,
                       "malloc(%zu) failed", size);
        return WEIR_ERROR;
    }

    weir_memcpy(p, start, size);

    for (i = 0; i < weir_os_argc && weir_os_argv[i]; i++) {
        if (weir_os_argv[i] >= start && weir_os_argv[i] < end) {
            weir_os_argv[i] = p + (weir_os_argv[i] - start);
        }
    }

    for (i = 0; environ != NULL && environ[i]; i++) {
        if (environ[i] >= start && environ[i] < end) {
            environ[i] = p + (environ[i] - start);
        }
    }

    weir_title_saved = p;
    weir_title_start = start;
    weir_title_end = end;

    return WEIR_OK;
}


/* title "worker process" shows as "weir: worker process"; the rest of
 * the area is zeroed so that ps shows no remains of the old strings */

void
weir_setproctitle(const char *title)
{
    static const char   prefix[] = "weir: ";
    char               *p;
    size_t              room, len;

    if (weir_title_start == NULL || title == NULL) {
        return;
    }

    p = weir_title_start;
    room = (size_t) (weir_title_end - weir_title_start) - 1;

    if (weir_strncmp(title, prefix, sizeof(prefix) - 1) != 0) {
        len = weir_min(sizeof(prefix) - 1, room);
        weir_memcpy(p, prefix, len);
        p += len;
        room -= len;
    }

    len = weir_min(weir_strlen(title), room);
    weir_memcpy(p, title, len);
    p += len;

    weir_memzero(p, (size_t) (weir_title_end - p));
}
