#include "weir_config.h"
#include "weir_core.h"
#include "weir.h"

/*
 * The core module: directives of the main context that belong to no
 * subsystem (processes, pid file, user, limits) and load_module.
 */


static void *weir_core_module_create_conf(weir_cycle_t *cycle);
static char *weir_core_module_init_conf(weir_cycle_t *cycle, void *conf);
static char *weir_set_user(weir_conf_t *cf, weir_command_t *cmd, void *conf);
static char *weir_set_worker_processes(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);


static weir_conf_num_bounds_t  weir_core_rlimit_bounds = {
    weir_conf_check_num_bounds, 1, -1
};


static weir_command_t  weir_core_commands[] = {

    { weir_string("daemon"),
      WEIR_MAIN_CONF|WEIR_DIRECT_CONF|WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      0,
      offsetof(weir_core_conf_t, daemon),
      NULL },

    { weir_string("master_process"),
      WEIR_MAIN_CONF|WEIR_DIRECT_CONF|WEIR_CONF_FLAG,
      weir_conf_set_flag_slot,
      0,
      offsetof(weir_core_conf_t, master),
      NULL },

    { weir_string("timer_resolution"),
      WEIR_MAIN_CONF|WEIR_DIRECT_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_msec_slot,
      0,
      offsetof(weir_core_conf_t, timer_resolution),
      NULL },

    { weir_string("pid"),
      WEIR_MAIN_CONF|WEIR_DIRECT_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_str_slot,
      0,
      offsetof(weir_core_conf_t, pid),
      NULL },

    { weir_string("worker_processes"),
      WEIR_MAIN_CONF|WEIR_DIRECT_CONF|WEIR_CONF_TAKE1,
      weir_set_worker_processes,
      0,
      0,
      NULL },

    { weir_string("user"),
      WEIR_MAIN_CONF|WEIR_DIRECT_CONF|WEIR_CONF_TAKE12,
      weir_set_user,
      0,
      0,
      NULL },

    { weir_string("worker_rlimit_nofile"),
      WEIR_MAIN_CONF|WEIR_DIRECT_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_num_slot,
      0,
      offsetof(weir_core_conf_t, rlimit_nofile),
      &weir_core_rlimit_bounds },

    { weir_string("worker_shutdown_timeout"),
      WEIR_MAIN_CONF|WEIR_DIRECT_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_msec_slot,
      0,
      offsetof(weir_core_conf_t, shutdown_timeout),
      NULL },

    { weir_string("working_directory"),
      WEIR_MAIN_CONF|WEIR_DIRECT_CONF|WEIR_CONF_TAKE1,
      weir_conf_set_str_slot,
      0,
      offsetof(weir_core_conf_t, working_directory),
      NULL },

    { weir_string("load_module"),
      WEIR_MAIN_CONF|WEIR_DIRECT_CONF|WEIR_CONF_TAKE1,
      weir_load_module,
      0,
      0,
      NULL },

      weir_null_command
};


static weir_core_module_t  weir_core_module_ctx = {
    weir_string("core"),
    weir_core_module_create_conf,
    weir_core_module_init_conf
};


weir_module_t  weir_core_module = {
    WEIR_MODULE_V1,
    &weir_core_module_ctx,
    weir_core_commands,
    WEIR_CORE_MODULE,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    WEIR_MODULE_V1_PADDING
};


static void *
weir_core_module_create_conf(weir_cycle_t *cycle)
{
    weir_core_conf_t  *ccf;

    ccf = weir_pcalloc(cycle->pool, sizeof(weir_core_conf_t));
    if (ccf == NULL) {
        return NULL;
    }

    /* pid, oldpid, working_directory: zeroed (unset) by pcalloc */

    ccf->daemon = WEIR_CONF_UNSET;
    ccf->master = WEIR_CONF_UNSET;
    ccf->timer_resolution = WEIR_CONF_UNSET_MSEC;
    ccf->shutdown_timeout = WEIR_CONF_UNSET_MSEC;
    ccf->worker_processes = WEIR_CONF_UNSET;
    ccf->rlimit_nofile = WEIR_CONF_UNSET;
    ccf->user = (uid_t) WEIR_CONF_UNSET_UINT;
    ccf->group = (gid_t) WEIR_CONF_UNSET_UINT;

    return ccf;
}


static char *
weir_core_module_init_conf(weir_cycle_t *cycle, void *conf)
{
    weir_core_conf_t  *ccf = conf;
    struct passwd     *pwd;
    struct group      *grp;

    weir_conf_init_value(ccf->daemon, 1);
    weir_conf_init_value(ccf->master, 1);
    weir_conf_init_msec_value(ccf->timer_resolution, 0);
    weir_conf_init_msec_value(ccf->shutdown_timeout,
                              WEIR_DEFAULT_SHUTDOWN_TIMEOUT);
    weir_conf_init_value(ccf->worker_processes, 1);

    if (ccf->pid.len == 0) {
        weir_str_set(&ccf->pid, WEIR_PID_PATH);
    }

    if (weir_conf_full_name(cycle, &ccf->pid, 0) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    ccf->oldpid.len = ccf->pid.len + sizeof(WEIR_OLDPID_EXT);

    ccf->oldpid.data = weir_pnalloc(cycle->pool, ccf->oldpid.len);
    if (ccf->oldpid.data == NULL) {
        return WEIR_CONF_ERROR;
    }

    weir_memcpy(weir_cpymem(ccf->oldpid.data, ccf->pid.data, ccf->pid.len),
                WEIR_OLDPID_EXT, sizeof(WEIR_OLDPID_EXT));
    ccf->oldpid.len--;  /* the copy above includes the NUL */

    if (ccf->working_directory.len) {
        if (weir_conf_full_name(cycle, &ccf->working_directory, 0)
            != WEIR_OK)
        {
            return WEIR_CONF_ERROR;
        }
    }

    /* only root can switch users: otherwise workers run as whoever
     * started weir, and "user" is ignored (as nginx does) */

    if (ccf->user == (uid_t) WEIR_CONF_UNSET_UINT && geteuid() == 0) {

        pwd = getpwnam("nobody");
        if (pwd == NULL) {
            weir_log_error(WEIR_LOG_EMERG, cycle->log, weir_errno,
                           "getpwnam(\"nobody\") failed");
            return WEIR_CONF_ERROR;
        }

        ccf->username = "nobody";
        ccf->user = pwd->pw_uid;

        grp = getgrnam("nogroup");
        if (grp == NULL) {
            grp = getgrnam("nobody");
        }

        if (grp == NULL) {
            weir_log_error(WEIR_LOG_EMERG, cycle->log, weir_errno,
                           "getgrnam(\"nogroup\") failed");
            return WEIR_CONF_ERROR;
        }

        ccf->group = grp->gr_gid;
    }

    return WEIR_CONF_OK;
}


static char *
weir_set_user(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_core_conf_t  *ccf = conf;
    weir_str_t        *value;
    char              *group;
    struct passwd     *pwd;
    struct group      *grp;

    (void) cmd;

    if (ccf->user != (uid_t) WEIR_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    if (geteuid() != 0) {
        weir_conf_log_error(WEIR_LOG_WARN, cf, 0,
                            "the \"user\" directive makes sense only if "
                            "the master process runs with super-user "
                            "privileges, ignored");
        return WEIR_CONF_OK;
    }

    value = cf->args->elts;

    ccf->username = weir_pstrdupz(cf->pool, &value[1]);
    if (ccf->username == NULL) {
        return WEIR_CONF_ERROR;
    }

    errno = 0;
    pwd = getpwnam(ccf->username);
    if (pwd == NULL) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, errno,
                            "getpwnam(\"%s\") failed", ccf->username);
        return WEIR_CONF_ERROR;
    }

    ccf->user = pwd->pw_uid;

    if (cf->args->nelts == 2) {
        ccf->group = pwd->pw_gid;
        return WEIR_CONF_OK;
    }

    group = weir_pstrdupz(cf->pool, &value[2]);
    if (group == NULL) {
        return WEIR_CONF_ERROR;
    }

    errno = 0;
    grp = getgrnam(group);
    if (grp == NULL) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, errno,
                            "getgrnam(\"%s\") failed", group);
        return WEIR_CONF_ERROR;
    }

    ccf->group = grp->gr_gid;

    return WEIR_CONF_OK;
}


static char *
weir_set_worker_processes(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_core_conf_t  *ccf = conf;
    weir_str_t        *value;
    weir_int_t         n;

    (void) cmd;

    if (ccf->worker_processes != WEIR_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (weir_str_eq_lit(&value[1], "auto")) {
        ccf->worker_processes = weir_ncpu > 0 ? weir_ncpu : 1;
        return WEIR_CONF_OK;
    }

    n = weir_atoi(value[1].data, value[1].len);

    if (n == WEIR_ERROR || n < 1 || n > WEIR_MAX_PROCESSES / 2) {
        return "invalid value";
    }

    ccf->worker_processes = n;

    return WEIR_CONF_OK;
}
