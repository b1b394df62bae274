/*
 * weir_config.h: platform includes and basic integer types.
 * Always the first include of every weir source file.
 */

#ifndef _WEIR_CONFIG_H_INCLUDED_
#define _WEIR_CONFIG_H_INCLUDED_

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "weir_auto_config.h"

#include <sys/types.h>
#include <sys/time.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/ioctl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <netdb.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>
#include <pwd.h>
#include <grp.h>
#include <glob.h>
#include <dlfcn.h>
#include <sched.h>
#include <pthread.h>

typedef intptr_t        weir_int_t;
typedef uintptr_t       weir_uint_t;
typedef intptr_t        weir_flag_t;
typedef int             weir_err_t;
typedef int             weir_fd_t;
typedef pid_t           weir_pid_t;
typedef uint64_t        weir_msec_t;
typedef int64_t         weir_msec_int_t;

#define WEIR_INT_T_LEN      (sizeof("-9223372036854775808") - 1)
#define WEIR_MAX_INT_T_VALUE  INTPTR_MAX
#define WEIR_MAX_UINT_T_VALUE UINTPTR_MAX
#define WEIR_MAX_OFF_T_VALUE  INT64_MAX
#define WEIR_MAX_SIZE_T_VALUE SIZE_MAX
#define WEIR_MAX_TIME_T_VALUE INT64_MAX

#define WEIR_ALIGNMENT      sizeof(unsigned long)
#define weir_align(d, a)    (((d) + (a - 1)) & ~(a - 1))
#define weir_align_ptr(p, a)                                                  \
    (unsigned char *) (((uintptr_t) (p) + ((uintptr_t) a - 1))               \
                       & ~((uintptr_t) a - 1))

#define WEIR_INVALID_FILE   -1
#define WEIR_FILE_ERROR     -1

#define weir_inline         inline

#ifndef WEIR_PREFIX
#define WEIR_PREFIX         "/usr/local/weir/"
#endif

#if defined(__GNUC__) || defined(__clang__)
#define WEIR_PRINTF(a, b)   __attribute__((format(printf, a, b)))
#define WEIR_UNUSED         __attribute__((unused))
#define weir_likely(x)      __builtin_expect(!!(x), 1)
#define weir_unlikely(x)    __builtin_expect(!!(x), 0)
#else
#define WEIR_PRINTF(a, b)
#define WEIR_UNUSED
#define weir_likely(x)      (x)
#define weir_unlikely(x)    (x)
#endif

#endif /* _WEIR_CONFIG_H_INCLUDED_ */
