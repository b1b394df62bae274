#include "weir_config.h"
#include "weir_core.h"
#include "weir.h"


static weir_int_t weir_init_zone_pool(weir_cycle_t *cycle,
    weir_shm_zone_t *zn);
static weir_int_t weir_cycle_open_files(weir_cycle_t *cycle);
static weir_int_t weir_cycle_shared_memory(weir_cycle_t *cycle,
    weir_cycle_t *old_cycle);
static void weir_cycle_match_listening(weir_cycle_t *cycle,
    weir_cycle_t *old_cycle);
static void weir_cycle_rollback(weir_cycle_t *cycle, weir_cycle_t *old_cycle);
static void weir_cycle_release_old(weir_cycle_t *cycle,
    weir_cycle_t *old_cycle);
static weir_int_t weir_cycle_copy_str(weir_pool_t *pool, weir_str_t *dst,
    weir_str_t *src);


volatile weir_cycle_t  *weir_cycle;
weir_array_t            weir_old_cycles;

weir_uint_t             weir_test_config;
weir_uint_t             weir_dump_config;
weir_uint_t             weir_quiet_mode;
/* -E pem|der: 1 or 2; a module that exports sets weir_export_done */
weir_uint_t             weir_export_ca;
weir_uint_t             weir_export_done;


#define weir_is_init_cycle(cycle)  ((cycle)->conf_ctx == NULL)


weir_cycle_t *
weir_init_cycle(weir_cycle_t *old_cycle)
{
    void                *rv;
    char                 hostname[256];
    weir_uint_t          i, n;
    weir_log_t          *log;
    weir_conf_t          conf;
    weir_pool_t         *pool;
    weir_cycle_t        *cycle;
    weir_listening_t    *ls;
    weir_core_conf_t    *ccf, *old_ccf;
    weir_core_module_t  *module;

    weir_time_update();

    log = old_cycle->log;

    pool = weir_create_pool(WEIR_CYCLE_POOL_SIZE, log);
    if (pool == NULL) {
        return NULL;
    }

    pool->log = log;

    cycle = weir_pcalloc(pool, sizeof(weir_cycle_t));
    if (cycle == NULL) {
        weir_destroy_pool(pool);
        return NULL;
    }

    cycle->pool = pool;
    cycle->log = log;
    cycle->old_cycle = old_cycle;
    cycle->generation = weir_is_init_cycle(old_cycle)
                        ? 0 : old_cycle->generation + 1;

    if (weir_cycle_copy_str(pool, &cycle->conf_prefix,
                            &old_cycle->conf_prefix) != WEIR_OK
        || weir_cycle_copy_str(pool, &cycle->prefix, &old_cycle->prefix)
           != WEIR_OK
        || weir_cycle_copy_str(pool, &cycle->conf_file,
                               &old_cycle->conf_file) != WEIR_OK
        || weir_cycle_copy_str(pool, &cycle->conf_param,
                               &old_cycle->conf_param) != WEIR_OK
        || weir_cycle_copy_str(pool, &cycle->error_log,
                               &old_cycle->error_log) != WEIR_OK)
    {
        weir_destroy_pool(pool);
        return NULL;
    }

    n = old_cycle->paths.nelts ? old_cycle->paths.nelts : 10;

    if (weir_array_init(&cycle->paths, pool, n, sizeof(weir_str_t))
        != WEIR_OK
        || weir_array_init(&cycle->config_dump, pool, 1,
                           sizeof(weir_conf_dump_t)) != WEIR_OK)
    {
        weir_destroy_pool(pool);
        return NULL;
    }

    n = 20;

    if (weir_list_init(&cycle->open_files, pool, n,
                       sizeof(weir_open_file_t)) != WEIR_OK
        || weir_list_init(&cycle->shared_memory, pool, 1,
                          sizeof(weir_shm_zone_t)) != WEIR_OK)
    {
        weir_destroy_pool(pool);
        return NULL;
    }

    n = old_cycle->listening.nelts ? old_cycle->listening.nelts : 10;

    if (weir_array_init(&cycle->listening, pool, n, sizeof(weir_listening_t))
        != WEIR_OK)
    {
        weir_destroy_pool(pool);
        return NULL;
    }

    weir_memzero(cycle->listening.elts, n * sizeof(weir_listening_t));

    weir_queue_init(&cycle->reusable_connections_queue);

    if (gethostname(hostname, sizeof(hostname) - 1) == -1) {
        weir_log_error(WEIR_LOG_EMERG, log, weir_errno,
                       "gethostname() failed");
        weir_destroy_pool(pool);
        return NULL;
    }

    hostname[sizeof(hostname) - 1] = '\0';
    cycle->hostname.len = weir_strlen(hostname);

    cycle->hostname.data = weir_pnalloc(pool, cycle->hostname.len + 1);
    if (cycle->hostname.data == NULL) {
        weir_destroy_pool(pool);
        return NULL;
    }

    weir_strlow(cycle->hostname.data, (unsigned char *) hostname,
                cycle->hostname.len + 1);

    if (weir_cycle_modules(cycle) != WEIR_OK) {
        weir_destroy_pool(pool);
        return NULL;
    }

    cycle->conf_ctx = weir_pcalloc(pool, weir_max_module * sizeof(void *));
    if (cycle->conf_ctx == NULL) {
        weir_destroy_pool(pool);
        return NULL;
    }

    for (i = 0; cycle->modules[i]; i++) {
        if (cycle->modules[i]->type != WEIR_CORE_MODULE) {
            continue;
        }

        module = cycle->modules[i]->ctx;

        if (module && module->create_conf) {
            rv = module->create_conf(cycle);
            if (rv == NULL) {
                weir_destroy_pool(pool);
                return NULL;
            }

            cycle->conf_ctx[cycle->modules[i]->index] = rv;
        }
    }

    weir_memzero(&conf, sizeof(weir_conf_t));

    conf.args = weir_array_create(pool, 10, sizeof(weir_str_t));
    if (conf.args == NULL) {
        weir_destroy_pool(pool);
        return NULL;
    }

    conf.temp_pool = weir_create_pool(WEIR_CYCLE_POOL_SIZE, log);
    if (conf.temp_pool == NULL) {
        weir_destroy_pool(pool);
        return NULL;
    }

    conf.ctx = cycle->conf_ctx;
    conf.cycle = cycle;
    conf.pool = pool;
    conf.log = log;
    conf.module_type = WEIR_CORE_MODULE;
    conf.cmd_type = WEIR_MAIN_CONF;

    if (weir_conf_param(&conf) != WEIR_CONF_OK) {
        goto failed_conf;
    }

    if (weir_conf_parse(&conf, &cycle->conf_file) != WEIR_CONF_OK) {
        goto failed_conf;
    }

    if (weir_test_config && !weir_quiet_mode) {
        weir_log_stderr(0, "the configuration file %.*s syntax is ok",
                        WEIR_STR_ARG(cycle->conf_file));
    }

    for (i = 0; cycle->modules[i]; i++) {
        if (cycle->modules[i]->type != WEIR_CORE_MODULE) {
            continue;
        }

        module = cycle->modules[i]->ctx;

        if (module && module->init_conf) {
            if (module->init_conf(cycle,
                                  cycle->conf_ctx[cycle->modules[i]->index])
                == WEIR_CONF_ERROR)
            {
                goto failed_conf;
            }
        }
    }

    weir_destroy_pool(conf.temp_pool);
    conf.temp_pool = NULL;

    if (weir_process == WEIR_PROCESS_SIGNALLER) {
        return cycle;
    }

    ccf = (weir_core_conf_t *) weir_get_conf(cycle->conf_ctx,
                                             weir_core_module);

    /* reuseport: one socket per worker */

    n = cycle->listening.nelts;

    for (i = 0; i < n; i++) {
        ls = cycle->listening.elts;

        if (ls[i].reuseport && ls[i].worker == 0) {
            if (weir_clone_listening(cycle, &ls[i]) != WEIR_OK) {
                goto failed;
            }
        }
    }

    /* the default error log, when the configuration names none */

    if (cycle->new_log.file == NULL) {
        cycle->new_log.file = weir_conf_open_file(cycle, &cycle->error_log);
        if (cycle->new_log.file == NULL) {
            goto failed;
        }

        cycle->new_log.log_level = WEIR_LOG_ERR;
    }

    if (weir_cycle_open_files(cycle) != WEIR_OK) {
        goto failed;
    }

    if (weir_test_config) {
        return cycle;
    }

    if (weir_cycle_shared_memory(cycle, old_cycle) != WEIR_OK) {
        goto failed;
    }

    weir_cycle_match_listening(cycle, old_cycle);

    if (weir_open_listening_sockets(cycle) != WEIR_OK) {
        goto failed;
    }

    weir_configure_listening_sockets(cycle);

    /* the modules see the new cycle, logging to its error_log; nothing
     * of the old one is released until they all agreed */

    cycle->log = &cycle->new_log;
    pool->log = &cycle->new_log;

    if (weir_init_modules(cycle) != WEIR_OK) {
        goto failed;
    }

    /* commit */

    if (!weir_use_stderr) {
        (void) weir_log_redirect_stderr(cycle);
    }

    if (!weir_is_init_cycle(old_cycle)) {
        old_ccf = (weir_core_conf_t *) weir_get_conf(old_cycle->conf_ctx,
                                                     weir_core_module);

        if (ccf->pid.len != old_ccf->pid.len
            || weir_strcmp(ccf->pid.data, old_ccf->pid.data) != 0)
        {
            /* the pid file moved: write the new one, drop the old */

            if (weir_create_pidfile(&ccf->pid, cycle->log) == WEIR_OK) {
                weir_delete_pidfile(old_cycle);
            }
        }
    }

    weir_cycle_release_old(cycle, old_cycle);

    return cycle;

failed_conf:

    if (conf.temp_pool) {
        weir_destroy_pool(conf.temp_pool);
    }

    weir_destroy_pool(pool);

    return NULL;

failed:

    weir_cycle_rollback(cycle, old_cycle);

    return NULL;
}


static weir_int_t
weir_cycle_copy_str(weir_pool_t *pool, weir_str_t *dst, weir_str_t *src)
{
    dst->len = src->len;

    dst->data = weir_pnalloc(pool, src->len + 1);
    if (dst->data == NULL) {
        return WEIR_ERROR;
    }

    if (src->len) {
        weir_memcpy(dst->data, src->data, src->len);
    }

    dst->data[src->len] = '\0';

    return WEIR_OK;
}


static weir_int_t
weir_cycle_open_files(weir_cycle_t *cycle)
{
    weir_uint_t        i;
    weir_list_part_t  *part;
    weir_open_file_t  *file;

    part = &cycle->open_files.part;
    file = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            file = part->elts;
            i = 0;
        }

        if (file[i].fd != WEIR_INVALID_FILE) {
            continue;   /* stderr */
        }

        if (file[i].name.len == 0) {
            continue;
        }

        if (file[i].name.data[0] != '/') {
            if (weir_conf_full_name(cycle, &file[i].name, 0) != WEIR_OK) {
                return WEIR_ERROR;
            }
        }

        file[i].fd = weir_open_file(file[i].name.data, WEIR_FILE_APPEND,
                                    WEIR_FILE_CREATE_OR_OPEN,
                                    WEIR_FILE_DEFAULT_ACCESS);

        if (file[i].fd == WEIR_INVALID_FILE) {
            weir_log_error(WEIR_LOG_EMERG, cycle->log, weir_errno,
                           "open() \"%s\" failed",
                           (char *) file[i].name.data);
            return WEIR_ERROR;
        }
    }

    return WEIR_OK;
}


static void
weir_cycle_close_files(weir_cycle_t *cycle)
{
    weir_uint_t        i;
    weir_list_part_t  *part;
    weir_open_file_t  *file;

    part = &cycle->open_files.part;
    file = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            file = part->elts;
            i = 0;
        }

        if (file[i].fd == WEIR_INVALID_FILE
            || file[i].fd == STDERR_FILENO)
        {
            continue;
        }

        if (file[i].flush) {
            file[i].flush(&file[i], cycle->log);
        }

        if (close(file[i].fd) == -1) {
            weir_log_error(WEIR_LOG_ALERT, cycle->log, weir_errno,
                           "close() \"%s\" failed",
                           (char *) file[i].name.data);
        }

        file[i].fd = WEIR_INVALID_FILE;
    }
}


static weir_int_t
weir_cycle_shared_memory(weir_cycle_t *cycle, weir_cycle_t *old_cycle)
{
    weir_uint_t        i, n;
    weir_list_part_t  *part, *opart;
    weir_shm_zone_t   *shm_zone, *oshm_zone;

    part = &cycle->shared_memory.part;
    shm_zone = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            shm_zone = part->elts;
            i = 0;
        }

        if (shm_zone[i].shm.size == 0) {
            weir_log_error(WEIR_LOG_EMERG, cycle->log, 0,
                           "zero size shared memory zone \"%.*s\"",
                           WEIR_STR_ARG(shm_zone[i].shm.name));
            return WEIR_ERROR;
        }

        shm_zone[i].shm.log = cycle->log;

        if (weir_is_init_cycle(old_cycle)) {
            goto create;
        }

        /* a zone of the same name, use and size keeps its memory (and so
         * its contents: sessions, counters) across a reload */

        opart = &old_cycle->shared_memory.part;
        oshm_zone = opart->elts;

        for (n = 0; /* void */ ; n++) {

            if (n >= opart->nelts) {
                if (opart->next == NULL) {
                    break;
                }

                opart = opart->next;
                oshm_zone = opart->elts;
                n = 0;
            }

            if (shm_zone[i].shm.name.len != oshm_zone[n].shm.name.len
                || weir_memcmp(shm_zone[i].shm.name.data,
                               oshm_zone[n].shm.name.data,
                               shm_zone[i].shm.name.len) != 0)
            {
                continue;
            }

            if (shm_zone[i].tag == oshm_zone[n].tag
                && shm_zone[i].shm.size == oshm_zone[n].shm.size
                && !shm_zone[i].noreuse
                && oshm_zone[n].shm.addr != NULL)
            {
                shm_zone[i].shm.addr = oshm_zone[n].shm.addr;
                shm_zone[i].shm.exists = 1;

                if (shm_zone[i].init(&shm_zone[i], oshm_zone[n].data)
                    != WEIR_OK)
                {
                    return WEIR_ERROR;
                }

                goto next;
            }

            break;
        }

    create:

        if (weir_shm_alloc(&shm_zone[i].shm) != WEIR_OK) {
            return WEIR_ERROR;
        }

        if (weir_init_zone_pool(cycle, &shm_zone[i]) != WEIR_OK) {
            return WEIR_ERROR;
        }

        if (shm_zone[i].init(&shm_zone[i], NULL) != WEIR_OK) {
            return WEIR_ERROR;
        }

    next:

        continue;
    }

    return WEIR_OK;
}


static weir_int_t
weir_init_zone_pool(weir_cycle_t *cycle, weir_shm_zone_t *zn)
{
    weir_slab_pool_t  *sp;

    sp = (weir_slab_pool_t *) zn->shm.addr;

    sp->end = zn->shm.addr + zn->shm.size;
    sp->min_shift = 3;
    sp->addr = zn->shm.addr;

    /* the slab copies the name into the zone for its messages */
    sp->log_ctx = (unsigned char *) weir_pstrdupz(cycle->pool, &zn->shm.name);

    weir_slab_init(sp);

    return WEIR_OK;
}


static weir_uint_t
weir_shm_addr_used(weir_cycle_t *cycle, unsigned char *addr)
{
    weir_uint_t        i;
    weir_list_part_t  *part;
    weir_shm_zone_t   *zone;

    part = &cycle->shared_memory.part;
    zone = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            zone = part->elts;
            i = 0;
        }

        if (zone[i].shm.addr == addr) {
            return 1;
        }
    }

    return 0;
}


static void
weir_free_shared_memory(weir_cycle_t *cycle, weir_cycle_t *keep)
{
    weir_uint_t        i;
    weir_list_part_t  *part;
    weir_shm_zone_t   *zone;

    part = &cycle->shared_memory.part;
    zone = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            zone = part->elts;
            i = 0;
        }

        if (zone[i].shm.addr == NULL) {
            continue;
        }

        if (keep && weir_shm_addr_used(keep, zone[i].shm.addr)) {
            continue;
        }

        weir_shm_free(&zone[i].shm);
        zone[i].shm.addr = NULL;
    }
}


/*
 * A listening entry of the new cycle takes over the socket of an old
 * entry with the same address, type, reuseport setting and worker slot:
 * the socket stays open across the reload, so no connection is refused.
 */

static void
weir_cycle_match_listening(weir_cycle_t *cycle, weir_cycle_t *old_cycle)
{
    weir_uint_t        i, n;
    weir_listening_t  *ls, *nls;

    ls = old_cycle->listening.elts;

    for (n = 0; n < old_cycle->listening.nelts; n++) {
        ls[n].remain = 0;
    }

    nls = cycle->listening.elts;

    for (n = 0; n < cycle->listening.nelts; n++) {

        if (nls[n].ignore || nls[n].fd != (weir_fd_t) -1) {
            continue;
        }

        for (i = 0; i < old_cycle->listening.nelts; i++) {

            if (ls[i].ignore || ls[i].remain
                || ls[i].fd == (weir_fd_t) -1
                || ls[i].type != nls[n].type)
            {
                continue;
            }

            if (weir_cmp_sockaddr(nls[n].sockaddr, nls[n].socklen,
                                  ls[i].sockaddr, ls[i].socklen, 1)
                != WEIR_OK)
            {
                continue;
            }

            if (ls[i].reuseport != nls[n].reuseport
                || (nls[n].reuseport && ls[i].worker != nls[n].worker))
            {
                continue;
            }

            nls[n].fd = ls[i].fd;
            nls[n].inherited = ls[i].inherited;
            nls[n].previous = &ls[i];
            ls[i].remain = 1;

            if (ls[i].backlog != nls[n].backlog) {
                nls[n].listen = 1;
            }

            break;
        }
    }
}


static void
weir_cycle_close_new_listening(weir_cycle_t *cycle)
{
    weir_uint_t        i;
    weir_listening_t  *ls;

    ls = cycle->listening.elts;

    for (i = 0; i < cycle->listening.nelts; i++) {

        if (ls[i].fd == (weir_fd_t) -1 || ls[i].previous) {
            continue;
        }

        if (close(ls[i].fd) == -1) {
            weir_log_error(WEIR_LOG_EMERG, cycle->log, weir_errno,
                           "close() socket %.*s failed",
                           WEIR_STR_ARG(ls[i].addr_text));
        }

        if (ls[i].sockaddr->sa_family == AF_UNIX) {
            (void) unlink(((struct sockaddr_un *) ls[i].sockaddr)->sun_path);
        }

        ls[i].fd = (weir_fd_t) -1;
    }
}


static void
weir_cycle_rollback(weir_cycle_t *cycle, weir_cycle_t *old_cycle)
{
    weir_uint_t        i;
    weir_listening_t  *ls;

    /* what goes wrong from here on is told in the log that still works */
    cycle->log = old_cycle->log;
    cycle->pool->log = old_cycle->log;

    weir_cycle_close_files(cycle);

    weir_free_shared_memory(cycle,
                            weir_is_init_cycle(old_cycle) ? NULL : old_cycle);

    weir_cycle_close_new_listening(cycle);

    /* the old cycle keeps all its sockets */

    ls = old_cycle->listening.elts;

    for (i = 0; i < old_cycle->listening.nelts; i++) {
        ls[i].remain = 0;
    }

    weir_destroy_pool(cycle->pool);
}


static void
weir_cycle_release_old(weir_cycle_t *cycle, weir_cycle_t *old_cycle)
{
    weir_uint_t         i;
    weir_listening_t   *ls;
    weir_cycle_t      **old;

    ls = old_cycle->listening.elts;

    for (i = 0; i < old_cycle->listening.nelts; i++) {

        if (ls[i].remain || ls[i].fd == (weir_fd_t) -1) {
            continue;
        }

        if (close(ls[i].fd) == -1) {
            weir_log_error(WEIR_LOG_EMERG, cycle->log, weir_errno,
                           "close() socket %.*s failed",
                           WEIR_STR_ARG(ls[i].addr_text));
        }

        /* a unix socket the new configuration dropped goes away; one it
         * kept was matched above and is not here */

        if (ls[i].sockaddr && ls[i].sockaddr->sa_family == AF_UNIX
            && !ls[i].inherited)
        {
            (void) unlink(((struct sockaddr_un *) ls[i].sockaddr)->sun_path);
        }

        ls[i].fd = (weir_fd_t) -1;
    }

    if (weir_is_init_cycle(old_cycle)) {
        /* the init cycle belongs to main(): its pool and log stay */
        cycle->old_cycle = NULL;
        return;
    }

    weir_free_shared_memory(old_cycle, cycle);
    weir_cycle_close_files(old_cycle);

    if (weir_process == WEIR_PROCESS_MASTER) {
        /* workers have their own copies of everything: the master can
         * let the old configuration go at once */
        weir_destroy_pool(old_cycle->pool);
        cycle->old_cycle = NULL;
        return;
    }

    /* a single process still serves connections that point into the old
     * cycle: it is kept until the process decides it is unused */

    if (weir_old_cycles.elts == NULL) {
        if (weir_array_init(&weir_old_cycles, cycle->pool, 4,
                            sizeof(weir_cycle_t *)) != WEIR_OK)
        {
            return;
        }
    }

    old = weir_array_push(&weir_old_cycles);
    if (old == NULL) {
        return;
    }

    *old = old_cycle;
}


weir_int_t
weir_create_pidfile(weir_str_t *name, weir_log_t *log)
{
    int    fd, n;
    char   pid[WEIR_INT_T_LEN + 2];

    if (weir_process > WEIR_PROCESS_MASTER || weir_test_config) {
        return WEIR_OK;
    }

    fd = weir_open_file(name->data, WEIR_FILE_RDWR, WEIR_FILE_TRUNCATE,
                        WEIR_FILE_DEFAULT_ACCESS);

    if (fd == WEIR_INVALID_FILE) {
        weir_log_error(WEIR_LOG_EMERG, log, weir_errno,
                       "open() \"%s\" failed", (char *) name->data);
        return WEIR_ERROR;
    }

    n = snprintf(pid, sizeof(pid), "%d\n", (int) weir_pid);

    if (weir_write_fd(fd, pid, (size_t) n) == -1) {
        weir_log_error(WEIR_LOG_EMERG, log, weir_errno,
                       "write() to \"%s\" failed", (char *) name->data);
        (void) close(fd);
        return WEIR_ERROR;
    }

    if (close(fd) == -1) {
        weir_log_error(WEIR_LOG_ALERT, log, weir_errno,
                       "close() \"%s\" failed", (char *) name->data);
    }

    return WEIR_OK;
}


void
weir_delete_pidfile(weir_cycle_t *cycle)
{
    unsigned char     *name;
    weir_core_conf_t  *ccf;

    ccf = (weir_core_conf_t *) weir_get_conf(cycle->conf_ctx,
                                             weir_core_module);

    name = weir_new_binary ? ccf->oldpid.data : ccf->pid.data;

    if (unlink((char *) name) == -1 && errno != ENOENT) {
        weir_log_error(WEIR_LOG_ALERT, cycle->log, weir_errno,
                       "unlink() \"%s\" failed", (char *) name);
    }
}


weir_int_t
weir_signal_process(weir_cycle_t *cycle, char *sig)
{
    ssize_t            n;
    weir_int_t         pid;
    weir_file_t        file;
    weir_core_conf_t  *ccf;
    unsigned char      buf[WEIR_INT_T_LEN + 2];

    ccf = (weir_core_conf_t *) weir_get_conf(cycle->conf_ctx,
                                             weir_core_module);

    weir_memzero(&file, sizeof(weir_file_t));

    file.name = ccf->pid;
    file.log = cycle->log;

    file.fd = weir_open_file(file.name.data, WEIR_FILE_RDONLY,
                             WEIR_FILE_OPEN, WEIR_FILE_DEFAULT_ACCESS);

    if (file.fd == WEIR_INVALID_FILE) {
        weir_log_error(WEIR_LOG_ERR, cycle->log, weir_errno,
                       "open() \"%s\" failed", (char *) file.name.data);
        return 1;
    }

    n = weir_read_file(&file, buf, sizeof(buf) - 1, 0);

    (void) close(file.fd);

    if (n == WEIR_ERROR) {
        return 1;
    }

    while (n-- && (buf[n] == WEIR_CR || buf[n] == WEIR_LF)) { /* void */ }

    pid = weir_atoi(buf, (size_t) ++n);

    if (pid == WEIR_ERROR || pid <= 0) {
        weir_log_error(WEIR_LOG_ERR, cycle->log, 0,
                       "invalid PID number \"%.*s\" in \"%s\"",
                       (int) n, (char *) buf, (char *) file.name.data);
        return 1;
    }

    return weir_os_signal_process(cycle, sig, (weir_pid_t) pid) == WEIR_OK
           ? 0 : 1;
}


void
weir_reopen_files(weir_cycle_t *cycle, uid_t user)
{
    weir_fd_t          fd;
    weir_uint_t        i;
    weir_list_part_t  *part;
    weir_open_file_t  *file;

    part = &cycle->open_files.part;
    file = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            file = part->elts;
            i = 0;
        }

        if (file[i].name.len == 0 || file[i].fd == STDERR_FILENO
            || file[i].fd == WEIR_INVALID_FILE)
        {
            continue;
        }

        if (file[i].flush) {
            file[i].flush(&file[i], cycle->log);
        }

        fd = weir_open_file(file[i].name.data, WEIR_FILE_APPEND,
                            WEIR_FILE_CREATE_OR_OPEN,
                            WEIR_FILE_DEFAULT_ACCESS);

        if (fd == WEIR_INVALID_FILE) {
            weir_log_error(WEIR_LOG_EMERG, cycle->log, weir_errno,
                           "open() \"%s\" failed",
                           (char *) file[i].name.data);
            continue;
        }

        /* the master reopens first and hands the new file to the workers'
         * user, so that they can reopen it too */

        if (user != (uid_t) WEIR_CONF_UNSET_UINT && geteuid() == 0) {
            if (fchown(fd, user, (gid_t) -1) == -1) {
                weir_log_error(WEIR_LOG_EMERG, cycle->log, weir_errno,
                               "chown(\"%s\", %d) failed",
                               (char *) file[i].name.data, (int) user);
            }
        }

        /* keep the descriptor number: stderr may be a dup of it */

        if (dup2(fd, file[i].fd) == -1) {
            weir_log_error(WEIR_LOG_EMERG, cycle->log, weir_errno,
                           "dup2() \"%s\" failed",
                           (char *) file[i].name.data);
        }

        (void) close(fd);
    }

    (void) weir_log_redirect_stderr(cycle);
}


weir_shm_zone_t *
weir_shared_memory_add(weir_conf_t *cf, weir_str_t *name, size_t size,
    void *tag)
{
    weir_uint_t        i;
    weir_shm_zone_t   *shm_zone;
    weir_list_part_t  *part;

    part = &cf->cycle->shared_memory.part;
    shm_zone = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            shm_zone = part->elts;
            i = 0;
        }

        if (name->len != shm_zone[i].shm.name.len
            || weir_memcmp(name->data, shm_zone[i].shm.name.data,
                           name->len) != 0)
        {
            continue;
        }

        if (tag != shm_zone[i].tag) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "the shared memory zone \"%.*s\" is "
                                "already declared for a different use",
                                WEIR_STR_ARG(shm_zone[i].shm.name));
            return NULL;
        }

        if (shm_zone[i].shm.size == 0) {
            shm_zone[i].shm.size = size;
        }

        if (size && size != shm_zone[i].shm.size) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "the size %zu of shared memory zone "
                                "\"%.*s\" conflicts with already declared "
                                "size %zu", size,
                                WEIR_STR_ARG(shm_zone[i].shm.name),
                                shm_zone[i].shm.size);
            return NULL;
        }

        return &shm_zone[i];
    }

    shm_zone = weir_list_push(&cf->cycle->shared_memory);
    if (shm_zone == NULL) {
        return NULL;
    }

    weir_memzero(shm_zone, sizeof(weir_shm_zone_t));

    shm_zone->shm.size = size;
    shm_zone->shm.name = *name;
    shm_zone->shm.log = cf->cycle->log;
    shm_zone->tag = tag;

    return shm_zone;
}
