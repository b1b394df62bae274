/*
 * weir_core.h: the core types every subsystem sees, and the core headers.
 * Include after weir_config.h.
 */

#ifndef _WEIR_CORE_H_INCLUDED_
#define _WEIR_CORE_H_INCLUDED_

#include "weir_config.h"

typedef struct weir_module_s        weir_module_t;
typedef struct weir_conf_s          weir_conf_t;
typedef struct weir_cycle_s         weir_cycle_t;
typedef struct weir_pool_s          weir_pool_t;
typedef struct weir_chain_s         weir_chain_t;
typedef struct weir_log_s           weir_log_t;
typedef struct weir_open_file_s     weir_open_file_t;
typedef struct weir_command_s       weir_command_t;
typedef struct weir_file_s          weir_file_t;
typedef struct weir_event_s         weir_event_t;
typedef struct weir_connection_s    weir_connection_t;
typedef struct weir_listening_s     weir_listening_t;
typedef struct weir_shm_zone_s      weir_shm_zone_t;

typedef void (*weir_event_handler_pt)(weir_event_t *ev);
typedef void (*weir_connection_handler_pt)(weir_connection_t *c);

/* return codes: one meaning everywhere (see docs/dev/principles.md) */
#define WEIR_OK          0
#define WEIR_ERROR      -1
#define WEIR_AGAIN      -2
#define WEIR_BUSY       -3
#define WEIR_DONE       -4
#define WEIR_DECLINED   -5
#define WEIR_ABORT      -6

#define WEIR_LF     (unsigned char) '\n'
#define WEIR_CR     (unsigned char) '\r'
#define WEIR_CRLF   "\r\n"

#define weir_abs(value)       (((value) >= 0) ? (value) : - (value))
#define weir_max(val1, val2)  ((val1 < val2) ? (val2) : (val1))
#define weir_min(val1, val2)  ((val1 > val2) ? (val2) : (val1))

#define weir_errno          errno
#define weir_socket_errno   errno
#define weir_set_errno(e)   errno = (e)

#define weir_nelems(a)      (sizeof(a) / sizeof((a)[0]))

#include "weir_errno.h"
#include "weir_atomic.h"
#include "weir_queue.h"
#include "weir_rbtree.h"
#include "weir_string.h"
#include "weir_palloc.h"
#include "weir_array.h"
#include "weir_list.h"
#include "weir_hash.h"
#include "weir_buf.h"
#include "weir_files.h"
#include "weir_times.h"
#include "weir_log.h"
#include "weir_inet.h"
#include "weir_shmtx.h"
#include "weir_shmem.h"
#include "weir_slab.h"
#include "weir_regex.h"
#include "weir_os.h"
#include "weir_process.h"
#include "weir_module.h"
#include "weir_conf_file.h"
#include "weir_connection.h"
#include "weir_cycle.h"
#include "weir_process_cycle.h"

#endif /* _WEIR_CORE_H_INCLUDED_ */
