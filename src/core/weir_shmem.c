#include "weir_config.h"
#include "weir_core.h"


/*
 * Zones are anonymous shared mappings made by the master before it forks:
 * every worker inherits them at the same address, so pointers stored in a
 * zone are valid in all processes.
 */

weir_int_t
weir_shm_alloc(weir_shm_t *shm)
{
    void  *addr;

    addr = mmap(NULL, shm->size, PROT_READ | PROT_WRITE,
                MAP_ANONYMOUS | MAP_SHARED, -1, 0);

    if (addr == MAP_FAILED) {
        weir_log_error(WEIR_LOG_ALERT, shm->log, weir_errno,
                       "mmap(MAP_ANONYMOUS|MAP_SHARED, %zu) failed "
                       "for shared memory zone \"%.*s\"",
                       shm->size, WEIR_STR_ARG(shm->name));
        shm->addr = NULL;
        return WEIR_ERROR;
    }

    shm->addr = addr;

    return WEIR_OK;
}


void
weir_shm_free(weir_shm_t *shm)
{
    if (shm->addr == NULL) {
        return;
    }

    if (munmap(shm->addr, shm->size) == -1) {
        weir_log_error(WEIR_LOG_ALERT, shm->log, weir_errno,
                       "munmap(%p, %zu) failed for shared memory zone "
                       "\"%.*s\"", (void *) shm->addr, shm->size,
                       WEIR_STR_ARG(shm->name));
    }

    shm->addr = NULL;
}
