#ifndef _WEIR_CONF_FILE_H_INCLUDED_
#define _WEIR_CONF_FILE_H_INCLUDED_

/*
 * The configuration parser (nginx grammar) and the directive machinery.
 *
 * A directive is a weir_command_t in a module's table. Its type holds the
 * argument-count bits (WEIR_CONF_NOARGS ... WEIR_CONF_2MORE, FLAG, BLOCK)
 * and the context bits (WEIR_MAIN_CONF, WEIR_DIRECT_CONF, or a module
 * type's own: WEIR_EVENT_CONF, WEIR_HTTP_*_CONF). The parser checks both
 * and calls set(cf, cmd, conf), where conf is:
 *   - a core module with WEIR_DIRECT_CONF: its conf from create_conf;
 *   - a core module without it (a block such as events {}): the address
 *     of its slot in cycle->conf_ctx, for the block handler to fill;
 *   - other types: ((void **) ((char *) cf->ctx + cmd->conf))[ctx_index],
 *     i.e. cf->ctx points to a struct of "void **" arrays and cmd->conf
 *     is the offset of the array to use.
 * set returns WEIR_CONF_OK or an error string; the parser prints
 * "\"name\" directive <string> in file:line". A setter that has already
 * logged returns WEIR_CONF_ERROR.
 */

#define WEIR_CONF_NOARGS      0x00000001
#define WEIR_CONF_TAKE1       0x00000002
#define WEIR_CONF_TAKE2       0x00000004
#define WEIR_CONF_TAKE3       0x00000008
#define WEIR_CONF_TAKE4       0x00000010
#define WEIR_CONF_TAKE5       0x00000020
#define WEIR_CONF_TAKE6       0x00000040
#define WEIR_CONF_TAKE7       0x00000080

#define WEIR_CONF_MAX_ARGS    8

#define WEIR_CONF_TAKE12      (WEIR_CONF_TAKE1|WEIR_CONF_TAKE2)
#define WEIR_CONF_TAKE13      (WEIR_CONF_TAKE1|WEIR_CONF_TAKE3)
#define WEIR_CONF_TAKE23      (WEIR_CONF_TAKE2|WEIR_CONF_TAKE3)
#define WEIR_CONF_TAKE123     (WEIR_CONF_TAKE1|WEIR_CONF_TAKE2|WEIR_CONF_TAKE3)
#define WEIR_CONF_TAKE1234    (WEIR_CONF_TAKE1|WEIR_CONF_TAKE2|WEIR_CONF_TAKE3 \
                               |WEIR_CONF_TAKE4)

#define WEIR_CONF_ARGS_NUMBER 0x000000ff
#define WEIR_CONF_BLOCK       0x00000100
#define WEIR_CONF_FLAG        0x00000200
#define WEIR_CONF_ANY         0x00000400
#define WEIR_CONF_1MORE       0x00000800
#define WEIR_CONF_2MORE       0x00001000

#define WEIR_DIRECT_CONF      0x00010000

#define WEIR_MAIN_CONF        0x01000000
#define WEIR_ANY_CONF         0xFF000000

#define WEIR_CONF_UNSET       -1
#define WEIR_CONF_UNSET_UINT  (weir_uint_t) -1
#define WEIR_CONF_UNSET_PTR   (void *) -1
#define WEIR_CONF_UNSET_SIZE  (size_t) -1
#define WEIR_CONF_UNSET_MSEC  (weir_msec_t) -1

#define WEIR_CONF_OK          NULL
#define WEIR_CONF_ERROR       (char *) -1

#define WEIR_CONF_BLOCK_START 1
#define WEIR_CONF_BLOCK_DONE  2
#define WEIR_CONF_FILE_DONE   3

#define WEIR_CORE_MODULE_CONF 0   /* unused: core confs come from conf_ctx */

#define WEIR_MAX_CONF_ERRSTR  1024
#define WEIR_CONF_MAX_INCLUDE_DEPTH  32

struct weir_command_s {
    weir_str_t            name;
    weir_uint_t           type;
    char               *(*set)(weir_conf_t *cf, weir_command_t *cmd,
                               void *conf);
    weir_uint_t           conf;
    weir_uint_t           offset;
    void                 *post;
};

#define weir_null_command  { weir_null_string, 0, NULL, 0, 0, NULL }

typedef struct {
    weir_file_t           file;
    weir_buf_t           *buffer;
    weir_buf_t           *dump;
    weir_uint_t           line;
} weir_conf_file_t;

/* the text of every file read, kept for weir -T */
typedef struct {
    weir_str_t            name;
    weir_buf_t           *buffer;
} weir_conf_dump_t;

typedef char *(*weir_conf_handler_pt)(weir_conf_t *cf,
    weir_command_t *dummy, void *conf);

struct weir_conf_s {
    char                 *name;
    weir_array_t         *args;         /* of weir_str_t; args[0] is the name */

    weir_cycle_t         *cycle;
    weir_pool_t          *pool;
    weir_pool_t          *temp_pool;
    weir_conf_file_t     *conf_file;
    weir_log_t           *log;

    void                 *ctx;
    weir_uint_t           module_type;
    weir_uint_t           cmd_type;

    /* when set, every directive of the block goes to handler instead of
     * the module tables (used by blocks such as types {}) */
    weir_conf_handler_pt  handler;
    void                 *handler_conf;

    weir_uint_t           include_depth;
};

typedef char *(*weir_conf_post_handler_pt)(weir_conf_t *cf, void *data,
    void *conf);

typedef struct {
    weir_conf_post_handler_pt  post_handler;
} weir_conf_post_t;

typedef struct {
    weir_conf_post_handler_pt  post_handler;
    weir_int_t                 low;
    weir_int_t                 high;
} weir_conf_num_bounds_t;

typedef struct {
    weir_str_t                 name;
    weir_uint_t                value;
} weir_conf_enum_t;

#define WEIR_CONF_BITMASK_SET  1

typedef struct {
    weir_str_t                 name;
    weir_uint_t                mask;
} weir_conf_bitmask_t;

char *weir_conf_check_num_bounds(weir_conf_t *cf, void *post, void *data);

/* holds the "include" directive; listed in CORE_MODULES (added for the
 * unit tests and fuzzer, which build their own module tables) */
extern weir_module_t  weir_conf_module;

#define weir_get_conf(conf_ctx, module)  (conf_ctx)[module.index]

#define weir_conf_init_value(conf, default)                                   \
    if (conf == WEIR_CONF_UNSET) {                                            \
        conf = default;                                                       \
    }

#define weir_conf_init_ptr_value(conf, default)                               \
    if (conf == WEIR_CONF_UNSET_PTR) {                                        \
        conf = default;                                                       \
    }

#define weir_conf_init_uint_value(conf, default)                              \
    if (conf == WEIR_CONF_UNSET_UINT) {                                       \
        conf = default;                                                       \
    }

#define weir_conf_init_size_value(conf, default)                              \
    if (conf == WEIR_CONF_UNSET_SIZE) {                                       \
        conf = default;                                                       \
    }

#define weir_conf_init_msec_value(conf, default)                              \
    if (conf == WEIR_CONF_UNSET_MSEC) {                                       \
        conf = default;                                                       \
    }

#define weir_conf_merge_value(conf, prev, default)                            \
    if (conf == WEIR_CONF_UNSET) {                                            \
        conf = (prev == WEIR_CONF_UNSET) ? default : prev;                    \
    }

#define weir_conf_merge_ptr_value(conf, prev, default)                        \
    if (conf == WEIR_CONF_UNSET_PTR) {                                        \
        conf = (prev == WEIR_CONF_UNSET_PTR) ? default : prev;                \
    }

#define weir_conf_merge_uint_value(conf, prev, default)                       \
    if (conf == WEIR_CONF_UNSET_UINT) {                                       \
        conf = (prev == WEIR_CONF_UNSET_UINT) ? default : prev;               \
    }

#define weir_conf_merge_msec_value(conf, prev, default)                       \
    if (conf == WEIR_CONF_UNSET_MSEC) {                                       \
        conf = (prev == WEIR_CONF_UNSET_MSEC) ? default : prev;               \
    }

#define weir_conf_merge_sec_value(conf, prev, default)                        \
    if (conf == WEIR_CONF_UNSET) {                                            \
        conf = (prev == WEIR_CONF_UNSET) ? default : prev;                    \
    }

#define weir_conf_merge_size_value(conf, prev, default)                       \
    if (conf == WEIR_CONF_UNSET_SIZE) {                                       \
        conf = (prev == WEIR_CONF_UNSET_SIZE) ? default : prev;               \
    }

#define weir_conf_merge_off_value(conf, prev, default)                        \
    if (conf == WEIR_CONF_UNSET) {                                            \
        conf = (prev == WEIR_CONF_UNSET) ? default : prev;                    \
    }

#define weir_conf_merge_str_value(conf, prev, default)                        \
    if (conf.data == NULL) {                                                  \
        if (prev.data) {                                                      \
            conf.len = prev.len;                                              \
            conf.data = prev.data;                                            \
        } else {                                                              \
            conf.len = sizeof(default) - 1;                                   \
            conf.data = (unsigned char *) default;                            \
        }                                                                     \
    }

#define weir_conf_merge_bufs_value(conf, prev, default_num, default_size)     \
    if (conf.num == 0) {                                                      \
        if (prev.num) {                                                       \
            conf.num = prev.num;                                              \
            conf.size = prev.size;                                            \
        } else {                                                              \
            conf.num = default_num;                                           \
            conf.size = default_size;                                         \
        }                                                                     \
    }

#define weir_conf_merge_bitmask_value(conf, prev, default)                    \
    if (conf == 0) {                                                          \
        conf = (prev == 0) ? default : prev;                                  \
    }

/*
 * Parses filename (or, with filename NULL, the rest of the current block)
 * and calls the directives' handlers. Returns WEIR_CONF_OK or
 * WEIR_CONF_ERROR after logging "... in file:line".
 */
char *weir_conf_parse(weir_conf_t *cf, weir_str_t *filename);
/* parses the -g directives (cycle->conf_param) as if they were a file */
char *weir_conf_param(weir_conf_t *cf);

/* the "include" directive */
char *weir_conf_include(weir_conf_t *cf, weir_command_t *cmd, void *conf);

/* makes name absolute: relative to cycle->conf_prefix when conf_prefix,
 * else to cycle->prefix */
weir_int_t weir_conf_full_name(weir_cycle_t *cycle, weir_str_t *name,
    weir_uint_t conf_prefix);
/* a file kept open for the cycle (logs); "stderr" and NULL mean fd 2 */
weir_open_file_t *weir_conf_open_file(weir_cycle_t *cycle, weir_str_t *name);

/* logs "<message> in file:line" at level */
void weir_conf_log_error(weir_uint_t level, weir_conf_t *cf, weir_err_t err,
    const char *fmt, ...) WEIR_PRINTF(4, 5);

char *weir_conf_set_flag_slot(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
char *weir_conf_set_str_slot(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
char *weir_conf_set_str_array_slot(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
char *weir_conf_set_keyval_slot(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
char *weir_conf_set_num_slot(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
char *weir_conf_set_size_slot(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
char *weir_conf_set_off_slot(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
char *weir_conf_set_msec_slot(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
char *weir_conf_set_sec_slot(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
char *weir_conf_set_bufs_slot(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
char *weir_conf_set_enum_slot(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
char *weir_conf_set_bitmask_slot(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
/* a weir_str_t file path made absolute against the prefix */
char *weir_conf_set_path_slot(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);

#endif /* _WEIR_CONF_FILE_H_INCLUDED_ */
