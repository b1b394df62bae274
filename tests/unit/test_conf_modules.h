#ifndef _WEIR_TEST_CONF_MODULES_H_INCLUDED_
#define _WEIR_TEST_CONF_MODULES_H_INCLUDED_

/*
 * A fake module table for the configuration parser's unit tests
 * (tests/unit/test_conf.c) and fuzzer (tests/fuzz/fuzz_conf.c), so that
 * the parser is tested apart from the real modules:
 *
 *   tcore   a core module with one directive per generic setter (t_flag,
 *           t_str ...), t_args that records its arguments, and t_argc_*
 *           directives for the argument-count bits;
 *   tblock  a core module with the t_block { } block, which descends with
 *           cf->ctx set to a weir_test_block_ctx_t for the TBLK modules,
 *           and t_types { }, whose lines go to cf->handler;
 *   weir_conf_module (the real one, for include);
 *   tblk, tblk2  modules of the TBLK type: b_num, b_only, b2_str, and the
 *           nested block inner { } with i_num.
 *
 * Everything is static: include this header from one file per binary.
 */

#define WEIR_TEST_BLK_MODULE   0x4B4C4254          /* "TBLK" */
#define WEIR_TEST_BLK_CONF     0x10000000
#define WEIR_TEST_INNER_CONF   0x20000000


typedef struct {
    weir_flag_t      flag;
    weir_str_t       str;
    weir_array_t    *str_array;
    weir_array_t    *keyval;
    weir_int_t       num;
    weir_int_t       bounded;
    weir_int_t       at_least;
    size_t           size;
    off_t            off;
    weir_msec_t      msec;
    time_t           sec;
    weir_bufs_t      bufs;
    weir_uint_t      enum_value;
    weir_uint_t      bitmask;
    weir_str_t       path;

    /* t_args: the arguments of the last call, and the number of calls */
    weir_array_t    *args;
    weir_uint_t      args_calls;
    weir_uint_t      argc_calls;
} weir_test_core_conf_t;


typedef struct {
    weir_uint_t      blocks;
    weir_array_t    *types;         /* of weir_keyval_t */
} weir_test_block_conf_t;


/* the ctx of t_block { }: one conf array per level, like http's */
typedef struct {
    void           **main_conf;
    void           **inner_conf;
} weir_test_block_ctx_t;


typedef struct {
    weir_str_t       name;
    void          *(*create_conf)(weir_conf_t *cf);
} weir_test_blk_module_t;


typedef struct {
    weir_int_t       num;
    weir_uint_t      only;
    weir_uint_t      inner_blocks;
    weir_str_t       inner_name;
} weir_test_blk_conf_t;


typedef struct {
    weir_str_t       str;
} weir_test_blk2_conf_t;


static void *weir_test_core_create_conf(weir_cycle_t *cycle);
static void *weir_test_block_create_conf(weir_cycle_t *cycle);
static char *weir_test_args(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static char *weir_test_argc(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static char *weir_test_block(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static char *weir_test_types(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static char *weir_test_type(weir_conf_t *cf, weir_command_t *dummy,
    void *conf);
static void *weir_test_blk_create_conf(weir_conf_t *cf);
static void *weir_test_blk2_create_conf(weir_conf_t *cf);
static char *weir_test_only(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static char *weir_test_inner(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);


/* the ctx of the last t_block and inner block parsed */
static weir_test_block_ctx_t  *weir_test_last_block;
static weir_test_block_ctx_t  *weir_test_last_inner;


static weir_conf_num_bounds_t  weir_test_bounded = {
    weir_conf_check_num_bounds, 1, 10
};

static weir_conf_num_bounds_t  weir_test_at_least = {
    weir_conf_check_num_bounds, 1, -1
};

static weir_conf_enum_t  weir_test_enum[] = {
    { weir_string("red"), 1 },
    { weir_string("green"), 2 },
    { weir_string("blue"), 3 },
    { weir_null_string, 0 }
};

static weir_conf_bitmask_t  weir_test_bitmask[] = {
    { weir_string("a"), 0x0002 },
    { weir_string("b"), 0x0004 },
    { weir_string("c"), 0x0008 },
    { weir_null_string, 0 }
};


#define WEIR_TEST_MAIN  (WEIR_MAIN_CONF|WEIR_DIRECT_CONF)

static weir_command_t  weir_test_core_commands[] = {

    { weir_string("t_flag"), WEIR_TEST_MAIN|WEIR_CONF_FLAG,
      weir_conf_set_flag_slot, 0,
      offsetof(weir_test_core_conf_t, flag), NULL },

    { weir_string("t_str"), WEIR_TEST_MAIN|WEIR_CONF_TAKE1,
      weir_conf_set_str_slot, 0,
      offsetof(weir_test_core_conf_t, str), NULL },

    { weir_string("t_str_array"), WEIR_TEST_MAIN|WEIR_CONF_TAKE1,
      weir_conf_set_str_array_slot, 0,
      offsetof(weir_test_core_conf_t, str_array), NULL },

    { weir_string("t_keyval"), WEIR_TEST_MAIN|WEIR_CONF_TAKE2,
      weir_conf_set_keyval_slot, 0,
      offsetof(weir_test_core_conf_t, keyval), NULL },

    { weir_string("t_num"), WEIR_TEST_MAIN|WEIR_CONF_TAKE1,
      weir_conf_set_num_slot, 0,
      offsetof(weir_test_core_conf_t, num), NULL },

    { weir_string("t_bounded"), WEIR_TEST_MAIN|WEIR_CONF_TAKE1,
      weir_conf_set_num_slot, 0,
      offsetof(weir_test_core_conf_t, bounded), &weir_test_bounded },

    { weir_string("t_at_least"), WEIR_TEST_MAIN|WEIR_CONF_TAKE1,
      weir_conf_set_num_slot, 0,
      offsetof(weir_test_core_conf_t, at_least), &weir_test_at_least },

    { weir_string("t_size"), WEIR_TEST_MAIN|WEIR_CONF_TAKE1,
      weir_conf_set_size_slot, 0,
      offsetof(weir_test_core_conf_t, size), NULL },

    { weir_string("t_off"), WEIR_TEST_MAIN|WEIR_CONF_TAKE1,
      weir_conf_set_off_slot, 0,
      offsetof(weir_test_core_conf_t, off), NULL },

    { weir_string("t_msec"), WEIR_TEST_MAIN|WEIR_CONF_TAKE1,
      weir_conf_set_msec_slot, 0,
      offsetof(weir_test_core_conf_t, msec), NULL },

    { weir_string("t_sec"), WEIR_TEST_MAIN|WEIR_CONF_TAKE1,
      weir_conf_set_sec_slot, 0,
      offsetof(weir_test_core_conf_t, sec), NULL },

    { weir_string("t_bufs"), WEIR_TEST_MAIN|WEIR_CONF_TAKE2,
      weir_conf_set_bufs_slot, 0,
      offsetof(weir_test_core_conf_t, bufs), NULL },

    { weir_string("t_enum"), WEIR_TEST_MAIN|WEIR_CONF_TAKE1,
      weir_conf_set_enum_slot, 0,
      offsetof(weir_test_core_conf_t, enum_value), weir_test_enum },

    { weir_string("t_bitmask"), WEIR_TEST_MAIN|WEIR_CONF_1MORE,
      weir_conf_set_bitmask_slot, 0,
      offsetof(weir_test_core_conf_t, bitmask), weir_test_bitmask },

    { weir_string("t_path"), WEIR_TEST_MAIN|WEIR_CONF_TAKE1,
      weir_conf_set_path_slot, 0,
      offsetof(weir_test_core_conf_t, path), NULL },

    { weir_string("t_args"), WEIR_TEST_MAIN|WEIR_CONF_ANY,
      weir_test_args, 0, 0, NULL },

    { weir_string("t_argc_noargs"), WEIR_TEST_MAIN|WEIR_CONF_NOARGS,
      weir_test_argc, 0, 0, NULL },

    { weir_string("t_argc_take13"), WEIR_TEST_MAIN|WEIR_CONF_TAKE13,
      weir_test_argc, 0, 0, NULL },

    { weir_string("t_argc_take7"), WEIR_TEST_MAIN|WEIR_CONF_TAKE7,
      weir_test_argc, 0, 0, NULL },

    { weir_string("t_argc_2more"), WEIR_TEST_MAIN|WEIR_CONF_2MORE,
      weir_test_argc, 0, 0, NULL },

      weir_null_command
};


static weir_core_module_t  weir_test_core_module_ctx = {
    weir_string("tcore"),
    weir_test_core_create_conf,
    NULL
};


static weir_module_t  weir_test_core_module = {
    WEIR_MODULE_V1,
    &weir_test_core_module_ctx,
    weir_test_core_commands,
    WEIR_CORE_MODULE,
    NULL, NULL, NULL, NULL, NULL,
    WEIR_MODULE_V1_PADDING
};


static weir_command_t  weir_test_block_commands[] = {

    { weir_string("t_block"),
      WEIR_MAIN_CONF|WEIR_CONF_BLOCK|WEIR_CONF_NOARGS,
      weir_test_block, 0, 0, NULL },

    { weir_string("t_types"),
      WEIR_MAIN_CONF|WEIR_DIRECT_CONF|WEIR_CONF_BLOCK|WEIR_CONF_NOARGS,
      weir_test_types, 0, 0, NULL },

      weir_null_command
};


static weir_core_module_t  weir_test_block_module_ctx = {
    weir_string("tblock"),
    weir_test_block_create_conf,
    NULL
};


static weir_module_t  weir_test_block_module = {
    WEIR_MODULE_V1,
    &weir_test_block_module_ctx,
    weir_test_block_commands,
    WEIR_CORE_MODULE,
    NULL, NULL, NULL, NULL, NULL,
    WEIR_MODULE_V1_PADDING
};


static weir_command_t  weir_test_blk_commands[] = {

    { weir_string("b_num"),
      WEIR_TEST_BLK_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_num_slot,
      offsetof(weir_test_block_ctx_t, main_conf),
      offsetof(weir_test_blk_conf_t, num), NULL },

    { weir_string("b_only"),
      WEIR_TEST_BLK_CONF|WEIR_CONF_NOARGS,
      weir_test_only,
      offsetof(weir_test_block_ctx_t, main_conf),
      0, NULL },

    { weir_string("inner"),
      WEIR_TEST_BLK_CONF|WEIR_TEST_INNER_CONF|WEIR_CONF_BLOCK
      |WEIR_CONF_TAKE1,
      weir_test_inner,
      offsetof(weir_test_block_ctx_t, main_conf),
      0, NULL },

    { weir_string("i_num"),
      WEIR_TEST_INNER_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_num_slot,
      offsetof(weir_test_block_ctx_t, inner_conf),
      offsetof(weir_test_blk_conf_t, num), NULL },

      weir_null_command
};


static weir_test_blk_module_t  weir_test_blk_module_ctx = {
    weir_string("tblk"),
    weir_test_blk_create_conf
};


static weir_module_t  weir_test_blk_module = {
    WEIR_MODULE_V1,
    &weir_test_blk_module_ctx,
    weir_test_blk_commands,
    WEIR_TEST_BLK_MODULE,
    NULL, NULL, NULL, NULL, NULL,
    WEIR_MODULE_V1_PADDING
};


static weir_command_t  weir_test_blk2_commands[] = {

    { weir_string("b2_str"),
      WEIR_TEST_BLK_CONF|WEIR_TEST_INNER_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_str_slot,
      offsetof(weir_test_block_ctx_t, main_conf),
      offsetof(weir_test_blk2_conf_t, str), NULL },

      weir_null_command
};


static weir_test_blk_module_t  weir_test_blk2_module_ctx = {
    weir_string("tblk2"),
    weir_test_blk2_create_conf
};


static weir_module_t  weir_test_blk2_module = {
    WEIR_MODULE_V1,
    &weir_test_blk2_module_ctx,
    weir_test_blk2_commands,
    WEIR_TEST_BLK_MODULE,
    NULL, NULL, NULL, NULL, NULL,
    WEIR_MODULE_V1_PADDING
};


static weir_module_t  *weir_test_conf_modules[] = {
    &weir_test_core_module,
    &weir_test_block_module,
    &weir_conf_module,
    &weir_test_blk_module,
    &weir_test_blk2_module,
    NULL
};

#define WEIR_TEST_CONF_NMODULES  (weir_nelems(weir_test_conf_modules) - 1)
#define WEIR_TEST_BLK_NMODULES   2


static void *
weir_test_core_create_conf(weir_cycle_t *cycle)
{
    weir_test_core_conf_t  *conf;

    conf = weir_pcalloc(cycle->pool, sizeof(weir_test_core_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    /* str, path and bufs are unset when zeroed */

    conf->flag = WEIR_CONF_UNSET;
    conf->str_array = WEIR_CONF_UNSET_PTR;
    conf->keyval = NULL;
    conf->num = WEIR_CONF_UNSET;
    conf->bounded = WEIR_CONF_UNSET;
    conf->at_least = WEIR_CONF_UNSET;
    conf->size = WEIR_CONF_UNSET_SIZE;
    conf->off = WEIR_CONF_UNSET;
    conf->msec = WEIR_CONF_UNSET_MSEC;
    conf->sec = WEIR_CONF_UNSET;
    conf->enum_value = WEIR_CONF_UNSET_UINT;
    conf->bitmask = 0;

    return conf;
}


static void *
weir_test_block_create_conf(weir_cycle_t *cycle)
{
    return weir_pcalloc(cycle->pool, sizeof(weir_test_block_conf_t));
}


static char *
weir_test_args(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_test_core_conf_t  *tcf = conf;

    weir_uint_t   i;
    weir_str_t   *value, *s;

    (void) cmd;

    tcf->args = weir_array_create(cf->pool, 4, sizeof(weir_str_t));
    if (tcf->args == NULL) {
        return WEIR_CONF_ERROR;
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {
        s = weir_array_push(tcf->args);
        if (s == NULL) {
            return WEIR_CONF_ERROR;
        }

        *s = value[i];
    }

    tcf->args_calls++;

    return WEIR_CONF_OK;
}


static char *
weir_test_argc(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_test_core_conf_t  *tcf = conf;

    (void) cf;
    (void) cmd;

    tcf->argc_calls++;

    return WEIR_CONF_OK;
}


/* t_block { }: builds the ctx of the TBLK modules and parses the block */

static char *
weir_test_block(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    char                    *rv;
    void                   **slot;
    weir_uint_t              i;
    weir_conf_t              saved;
    weir_module_t           *module;
    weir_test_block_ctx_t   *ctx;
    weir_test_blk_module_t  *bm;
    weir_test_block_conf_t  *bcf;

    (void) cmd;

    slot = conf;

    /* the core slot of a block module: filled here, as events {} does */
    if (*slot == NULL) {
        return "has no conf";
    }

    bcf = *slot;
    bcf->blocks++;

    ctx = weir_pcalloc(cf->pool, sizeof(weir_test_block_ctx_t));
    if (ctx == NULL) {
        return WEIR_CONF_ERROR;
    }

    ctx->main_conf = weir_pcalloc(cf->pool,
                                  WEIR_TEST_BLK_NMODULES * sizeof(void *));
    if (ctx->main_conf == NULL) {
        return WEIR_CONF_ERROR;
    }

    for (i = 0; cf->cycle->modules[i]; i++) {
        module = cf->cycle->modules[i];

        if (module->type != WEIR_TEST_BLK_MODULE) {
            continue;
        }

        bm = module->ctx;

        ctx->main_conf[module->ctx_index] = bm->create_conf(cf);
        if (ctx->main_conf[module->ctx_index] == NULL) {
            return WEIR_CONF_ERROR;
        }
    }

    saved = *cf;

    cf->ctx = ctx;
    cf->module_type = WEIR_TEST_BLK_MODULE;
    cf->cmd_type = WEIR_TEST_BLK_CONF;

    rv = weir_conf_parse(cf, NULL);

    *cf = saved;

    weir_test_last_block = ctx;

    return rv;
}


/* t_types { }: every line is "key value;", taken by cf->handler */

static char *
weir_test_types(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    char                    *rv;
    weir_conf_t              saved;
    weir_test_block_conf_t  *bcf = conf;

    (void) cmd;

    if (bcf->types == NULL) {
        bcf->types = weir_array_create(cf->pool, 4, sizeof(weir_keyval_t));
        if (bcf->types == NULL) {
            return WEIR_CONF_ERROR;
        }
    }

    saved = *cf;

    cf->handler = weir_test_type;
    cf->handler_conf = bcf;

    rv = weir_conf_parse(cf, NULL);

    *cf = saved;

    return rv;
}


static char *
weir_test_type(weir_conf_t *cf, weir_command_t *dummy, void *conf)
{
    weir_str_t              *value;
    weir_keyval_t           *kv;
    weir_test_block_conf_t  *bcf = conf;

    (void) dummy;

    if (cf->args->nelts != 2) {
        return "invalid type line";
    }

    value = cf->args->elts;

    kv = weir_array_push(bcf->types);
    if (kv == NULL) {
        return WEIR_CONF_ERROR;
    }

    kv->key = value[0];
    kv->value = value[1];

    return WEIR_CONF_OK;
}


static void *
weir_test_blk_create_conf(weir_conf_t *cf)
{
    weir_test_blk_conf_t  *conf;

    conf = weir_pcalloc(cf->pool, sizeof(weir_test_blk_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    conf->num = WEIR_CONF_UNSET;

    return conf;
}


static void *
weir_test_blk2_create_conf(weir_conf_t *cf)
{
    return weir_pcalloc(cf->pool, sizeof(weir_test_blk2_conf_t));
}


static char *
weir_test_only(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_test_blk_conf_t  *bcf = conf;

    (void) cf;
    (void) cmd;

    bcf->only++;

    return WEIR_CONF_OK;
}


/* inner NAME { }: a nested level with its own conf array */

static char *
weir_test_inner(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    char                    *rv;
    weir_uint_t              i;
    weir_str_t              *value;
    weir_conf_t              saved;
    weir_module_t           *module;
    weir_test_block_ctx_t   *ctx, *parent;
    weir_test_blk_module_t  *bm;
    weir_test_blk_conf_t    *bcf = conf;

    (void) cmd;

    value = cf->args->elts;

    bcf->inner_blocks++;
    bcf->inner_name = value[1];

    parent = cf->ctx;

    ctx = weir_pcalloc(cf->pool, sizeof(weir_test_block_ctx_t));
    if (ctx == NULL) {
        return WEIR_CONF_ERROR;
    }

    ctx->main_conf = parent->main_conf;

    ctx->inner_conf = weir_pcalloc(cf->pool,
                                   WEIR_TEST_BLK_NMODULES * sizeof(void *));
    if (ctx->inner_conf == NULL) {
        return WEIR_CONF_ERROR;
    }

    for (i = 0; cf->cycle->modules[i]; i++) {
        module = cf->cycle->modules[i];

        if (module->type != WEIR_TEST_BLK_MODULE) {
            continue;
        }

        bm = module->ctx;

        ctx->inner_conf[module->ctx_index] = bm->create_conf(cf);
        if (ctx->inner_conf[module->ctx_index] == NULL) {
            return WEIR_CONF_ERROR;
        }
    }

    saved = *cf;

    cf->ctx = ctx;
    cf->cmd_type = WEIR_TEST_INNER_CONF;

    rv = weir_conf_parse(cf, NULL);

    *cf = saved;

    weir_test_last_inner = ctx;

    return rv;
}


/*
 * A cycle as weir_init_cycle would start it, with the fake modules:
 * prefix and conf_prefix are dir. NULL when memory runs out.
 */

static weir_cycle_t *
weir_test_conf_cycle(weir_pool_t *pool, weir_log_t *log, const char *dir)
{
    void                *rv;
    weir_uint_t          i, n;
    weir_cycle_t        *cycle;
    weir_module_t       *module;
    weir_core_module_t  *core;

    cycle = weir_pcalloc(pool, sizeof(weir_cycle_t));
    if (cycle == NULL) {
        return NULL;
    }

    cycle->pool = pool;
    cycle->log = log;

    cycle->prefix.len = strlen(dir);
    cycle->prefix.data = (unsigned char *) dir;
    cycle->conf_prefix = cycle->prefix;

    if (weir_array_init(&cycle->config_dump, pool, 1,
                        sizeof(weir_conf_dump_t)) != WEIR_OK
        || weir_list_init(&cycle->open_files, pool, 4,
                          sizeof(weir_open_file_t)) != WEIR_OK)
    {
        return NULL;
    }

    cycle->modules = weir_test_conf_modules;
    cycle->modules_n = WEIR_TEST_CONF_NMODULES;

    n = 0;

    for (i = 0; weir_test_conf_modules[i]; i++) {
        module = weir_test_conf_modules[i];
        module->index = i;

        if (module->type == WEIR_TEST_BLK_MODULE) {
            module->ctx_index = n++;

        } else {
            module->ctx_index = 0;
        }
    }

    cycle->conf_ctx = weir_pcalloc(pool,
                                   WEIR_TEST_CONF_NMODULES * sizeof(void *));
    if (cycle->conf_ctx == NULL) {
        return NULL;
    }

    for (i = 0; weir_test_conf_modules[i]; i++) {
        module = weir_test_conf_modules[i];

        if (module->type != WEIR_CORE_MODULE) {
            continue;
        }

        core = module->ctx;

        rv = core->create_conf(cycle);
        if (rv == NULL) {
            return NULL;
        }

        cycle->conf_ctx[module->index] = rv;
    }

    weir_test_last_block = NULL;
    weir_test_last_inner = NULL;

    return cycle;
}


/* a weir_conf_t for the main level, as weir_init_cycle sets it up */

static weir_int_t
weir_test_conf_init(weir_conf_t *cf, weir_cycle_t *cycle)
{
    weir_memzero(cf, sizeof(weir_conf_t));

    cf->args = weir_array_create(cycle->pool, 10, sizeof(weir_str_t));
    if (cf->args == NULL) {
        return WEIR_ERROR;
    }

    cf->cycle = cycle;
    cf->pool = cycle->pool;
    cf->temp_pool = cycle->pool;
    cf->log = cycle->log;
    cf->ctx = cycle->conf_ctx;
    cf->module_type = WEIR_CORE_MODULE;
    cf->cmd_type = WEIR_MAIN_CONF;

    return WEIR_OK;
}

#endif /* _WEIR_TEST_CONF_MODULES_H_INCLUDED_ */
