#ifndef _WEIR_CYCLE_H_INCLUDED_
#define _WEIR_CYCLE_H_INCLUDED_

/*
 * A cycle is one configuration generation: its pool owns everything the
 * configuration built (module confs, listening entries, open files, shared
 * memory zone descriptors). A reload builds a complete new cycle from the
 * old one; nothing in the new cycle points into the old one, and the old
 * cycle is destroyed once the new one is in place.
 */

#define WEIR_CYCLE_POOL_SIZE     WEIR_DEFAULT_POOL_SIZE

struct weir_shm_zone_s {
    void                  *data;
    weir_shm_t             shm;
    weir_int_t           (*init)(weir_shm_zone_t *zone, void *data);
    void                  *tag;
    void                  *sync;
    weir_uint_t            noreuse;
};

struct weir_cycle_s {
    void                 **conf_ctx;    /* indexed by module->index */
    weir_pool_t           *pool;

    weir_log_t            *log;
    weir_log_t             new_log;
    weir_uint_t            log_use_stderr;

    weir_connection_t     *free_connections;
    weir_uint_t            free_connection_n;

    weir_module_t        **modules;
    weir_uint_t            modules_n;
    weir_uint_t            modules_used;   /* no load_module after this */

    weir_queue_t           reusable_connections_queue;
    weir_uint_t            reusable_connections_n;
    time_t                 connections_reuse_time;

    weir_array_t           listening;      /* of weir_listening_t */
    weir_array_t           paths;          /* of weir_str_t, created at start */
    weir_array_t           config_dump;    /* of weir_conf_dump_t */

    weir_list_t            open_files;     /* of weir_open_file_t */
    weir_list_t            shared_memory;  /* of weir_shm_zone_t */

    weir_uint_t            connection_n;
    weir_uint_t            files_n;

    weir_connection_t     *connections;
    weir_event_t          *read_events;
    weir_event_t          *write_events;

    weir_cycle_t          *old_cycle;

    weir_str_t             conf_file;
    weir_str_t             conf_param;     /* -g */
    weir_str_t             conf_prefix;
    weir_str_t             prefix;
    weir_str_t             error_log;      /* -e or the compiled default */
    weir_str_t             hostname;

    weir_uint_t            generation;     /* 0 at start, +1 per reload */
};

typedef struct {
    weir_flag_t            daemon;
    weir_flag_t            master;

    weir_msec_t            timer_resolution;
    weir_msec_t            shutdown_timeout;

    weir_int_t             worker_processes;
    weir_int_t             rlimit_nofile;

    uid_t                  user;
    gid_t                  group;
    char                  *username;

    weir_str_t             pid;
    weir_str_t             oldpid;         /* pid + ".oldbin" */
    weir_str_t             working_directory;
} weir_core_conf_t;

#define WEIR_DEFAULT_SHUTDOWN_TIMEOUT  10000   /* ms */

/*
 * Builds a new cycle from old_cycle: parses the configuration, opens files
 * and listening sockets, creates or reuses shared memory, and closes what
 * the old cycle had that the new one does not. Returns NULL (the old cycle
 * untouched and still valid) when anything fails.
 */
weir_cycle_t *weir_init_cycle(weir_cycle_t *old_cycle);
weir_int_t weir_create_pidfile(weir_str_t *name, weir_log_t *log);
void weir_delete_pidfile(weir_cycle_t *cycle);
/* weir -s SIGNAL: reads the pid file and signals that process */
weir_int_t weir_signal_process(weir_cycle_t *cycle, char *sig);
void weir_reopen_files(weir_cycle_t *cycle, uid_t user);
/* registers a shared memory zone of size bytes (0: size from another
 * directive); a zone with the same name and tag in the old cycle and the
 * same size keeps its memory across reloads */
weir_shm_zone_t *weir_shared_memory_add(weir_conf_t *cf, weir_str_t *name,
    size_t size, void *tag);
/* the master's next exec: binary upgrade (USR2) */
weir_pid_t weir_exec_new_binary(weir_cycle_t *cycle, char *const *argv);
void weir_set_shutdown_timer(weir_cycle_t *cycle);

extern volatile weir_cycle_t  *weir_cycle;
extern weir_array_t            weir_old_cycles;
extern weir_module_t           weir_core_module;
extern weir_uint_t             weir_test_config;
extern weir_uint_t             weir_dump_config;
extern weir_uint_t             weir_quiet_mode;
extern weir_uint_t             weir_export_ca;
extern weir_uint_t             weir_export_done;

#endif /* _WEIR_CYCLE_H_INCLUDED_ */
