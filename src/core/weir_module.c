#include "weir_config.h"
#include "weir_core.h"



weir_uint_t  weir_max_module;
static weir_uint_t  weir_static_modules_n;

static void weir_unload_module(void *data);


static weir_uint_t
weir_module_index_used(weir_cycle_t *cycle, weir_uint_t index)
{
    weir_uint_t  i;

    for (i = 0; cycle->modules[i]; i++) {
        if (cycle->modules[i]->index == index) {
            return 1;
        }
    }

    return 0;
}


weir_int_t
weir_preinit_modules(void)
{
    weir_uint_t  i;

    for (i = 0; weir_modules[i]; i++) {
        weir_modules[i]->index = i;
        weir_modules[i]->name = weir_module_names[i];
    }

    weir_static_modules_n = i;
    weir_max_module = weir_static_modules_n + WEIR_MAX_DYNAMIC_MODULES;

    return WEIR_OK;
}


weir_int_t
weir_cycle_modules(weir_cycle_t *cycle)
{
    /* room for the dynamic modules this configuration may load, and the
     * terminating NULL */

    cycle->modules = weir_pcalloc(cycle->pool, (weir_max_module + 1)
                                               * sizeof(weir_module_t *));
    if (cycle->modules == NULL) {
        return WEIR_ERROR;
    }

    weir_memcpy(cycle->modules, weir_modules,
                weir_static_modules_n * sizeof(weir_module_t *));

    cycle->modules_n = weir_static_modules_n;
    cycle->modules_used = 0;

    return WEIR_OK;
}


weir_int_t
weir_init_modules(weir_cycle_t *cycle)
{
    weir_uint_t  i;

    for (i = 0; cycle->modules[i]; i++) {
        if (cycle->modules[i]->init_module) {
            if (cycle->modules[i]->init_module(cycle) != WEIR_OK) {
                return WEIR_ERROR;
            }
        }
    }

    return WEIR_OK;
}


weir_int_t
weir_count_modules(weir_cycle_t *cycle, weir_uint_t type)
{
    weir_uint_t  i, n;

    /* once a block of some module type is parsed, the set of modules is
     * fixed for this cycle: contexts are sized by this count */

    cycle->modules_used = 1;

    n = 0;

    for (i = 0; cycle->modules[i]; i++) {
        if (cycle->modules[i]->type == type) {
            cycle->modules[i]->ctx_index = n++;
        }
    }

    return (weir_int_t) n;
}


weir_int_t
weir_add_module(weir_conf_t *cf, weir_str_t *file, weir_module_t *module,
    char **order)
{
    weir_uint_t          i, index;
    weir_core_module_t  *core;
    weir_cycle_t        *cycle;
    void                *rv;

    (void) order;

    cycle = cf->cycle;

    if (module->version != WEIR_MODULE_ABI
        || module->signature == NULL
        || weir_strcmp(module->signature, WEIR_MODULE_SIGNATURE) != 0)
    {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "module \"%s\" in \"%.*s\" is not binary "
                            "compatible: its signature \"%s\" (abi %lu) "
                            "differs from weir's \"%s\" (abi %d)",
                            module->name ? module->name : "?",
                            WEIR_STR_ARG(*file),
                            module->signature ? module->signature : "",
                            (unsigned long) module->version,
                            WEIR_MODULE_SIGNATURE, WEIR_MODULE_ABI);
        return WEIR_ERROR;
    }

    for (i = 0; cycle->modules[i]; i++) {
        if (weir_strcmp(cycle->modules[i]->name, module->name) == 0) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "module \"%s\" is already loaded",
                                module->name);
            return WEIR_ERROR;
        }
    }

    if (cycle->modules_n >= weir_max_module) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "too many modules loaded");
        return WEIR_ERROR;
    }

    /* a module keeps the index a previous cycle gave it when that slot
     * is free, so conf_ctx slots stay stable across reloads */

    index = module->index;

    if (index == WEIR_MODULE_UNSET_INDEX
        || index < weir_static_modules_n
        || index >= weir_max_module
        || weir_module_index_used(cycle, index))
    {
        for (index = weir_static_modules_n;
             index < weir_max_module;
             index++)
        {
            if (!weir_module_index_used(cycle, index)) {
                break;
            }
        }
    }

    if (index >= weir_max_module) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "too many modules loaded");
        return WEIR_ERROR;
    }

    module->index = index;
    cycle->modules[cycle->modules_n++] = module;
    cycle->modules[cycle->modules_n] = NULL;

    if (module->type == WEIR_CORE_MODULE) {
        core = module->ctx;

        if (core && core->create_conf) {
            rv = core->create_conf(cycle);
            if (rv == NULL) {
                return WEIR_ERROR;
            }

            cycle->conf_ctx[module->index] = rv;
        }
    }

    return WEIR_OK;
}


typedef struct {
    void        *handle;
    weir_log_t  *log;
} weir_module_handle_t;


static void
weir_unload_module(void *data)
{
    weir_module_handle_t  *h = data;

    if (h->handle && dlclose(h->handle) != 0) {
        weir_log_error(WEIR_LOG_ALERT, h->log, 0, "dlclose() failed (%s)",
                       dlerror());
    }
}


char *
weir_load_module(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    void                  *handle;
    char                 **names, **order, *path;
    weir_str_t            *value, file;
    weir_uint_t            i;
    weir_module_t        **modules;
    weir_pool_cleanup_t   *cln;
    weir_module_handle_t  *h;
    weir_dynamic_module_list_t   list;
    weir_dynamic_module_list_pt  get_list;

    (void) cmd;
    (void) conf;

    if (cf->cycle->modules_used) {
        return "is specified too late";
    }

    value = cf->args->elts;
    file = value[1];

    if (weir_conf_full_name(cf->cycle, &file, 0) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    path = (char *) file.data;

    cln = weir_pool_cleanup_add(cf->cycle->pool,
                                sizeof(weir_module_handle_t));
    if (cln == NULL) {
        return WEIR_CONF_ERROR;
    }

    handle = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (handle == NULL) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "dlopen() \"%s\" failed (%s)", path, dlerror());
        return WEIR_CONF_ERROR;
    }

    h = cln->data;
    h->handle = handle;
    h->log = cf->log;
    cln->handler = weir_unload_module;

    *(void **) &get_list = dlsym(handle, "weir_dynamic_module_list");
    if (get_list == NULL) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "dlsym() \"%s\", \"%s\" failed (%s)",
                            path, "weir_dynamic_module_list", dlerror());
        return WEIR_CONF_ERROR;
    }

    weir_memzero(&list, sizeof(weir_dynamic_module_list_t));
    get_list(&list);

    modules = list.modules;
    names = list.names;
    order = list.order;

    if (modules == NULL || names == NULL) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "module \"%s\" lists no modules", path);
        return WEIR_CONF_ERROR;
    }

    for (i = 0; modules[i]; i++) {
        modules[i]->name = names[i];

        if (weir_add_module(cf, &file, modules[i], order) != WEIR_OK) {
            return WEIR_CONF_ERROR;
        }

        weir_log_debug(cf->log, 0, "module: %s i:%lu", modules[i]->name,
                       (unsigned long) modules[i]->index);
    }

    return WEIR_CONF_OK;
}
