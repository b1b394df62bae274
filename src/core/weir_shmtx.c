#include "weir_config.h"
#include "weir_core.h"


static weir_log_t *weir_shmtx_log(weir_shmtx_t *mtx);
static void weir_shmtx_recover(weir_shmtx_t *mtx);


/*
 * The mutex must be robust: a worker killed while it holds the lock of a
 * zone would otherwise leave every other worker blocked for ever. The
 * next locker gets EOWNERDEAD, marks the mutex consistent and goes on;
 * the zone's data may be half updated, which is why it is logged.
 */

weir_int_t
weir_shmtx_create(weir_shmtx_t *mtx, weir_shmtx_sh_t *sh, weir_log_t *log)
{
    int                  err;
    pthread_mutexattr_t  attr;

    mtx->sh = sh;
    mtx->log = log;

    err = pthread_mutexattr_init(&attr);
    if (err != 0) {
        weir_log_error(WEIR_LOG_EMERG, weir_shmtx_log(mtx), err,
                       "pthread_mutexattr_init() failed");
        return WEIR_ERROR;
    }

    err = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    if (err != 0) {
        weir_log_error(WEIR_LOG_EMERG, weir_shmtx_log(mtx), err,
                       "pthread_mutexattr_setpshared() failed");
        goto failed;
    }

    err = pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    if (err != 0) {
        weir_log_error(WEIR_LOG_EMERG, weir_shmtx_log(mtx), err,
                       "pthread_mutexattr_setrobust() failed");
        goto failed;
    }

    err = pthread_mutex_init(&sh->mutex, &attr);
    if (err != 0) {
        weir_log_error(WEIR_LOG_EMERG, weir_shmtx_log(mtx), err,
                       "pthread_mutex_init() failed");
        goto failed;
    }

    (void) pthread_mutexattr_destroy(&attr);

    return WEIR_OK;

failed:

    (void) pthread_mutexattr_destroy(&attr);

    return WEIR_ERROR;
}


void
weir_shmtx_destroy(weir_shmtx_t *mtx)
{
    int  err;

    err = pthread_mutex_destroy(&mtx->sh->mutex);
    if (err != 0) {
        weir_log_error(WEIR_LOG_ALERT, weir_shmtx_log(mtx), err,
                       "pthread_mutex_destroy() failed");
    }
}


weir_uint_t
weir_shmtx_trylock(weir_shmtx_t *mtx)
{
    int  err;

    err = pthread_mutex_trylock(&mtx->sh->mutex);

    switch (err) {

    case 0:
        return 1;

    case EBUSY:
        return 0;

    case EOWNERDEAD:
        weir_shmtx_recover(mtx);
        return 1;

    default:
        weir_log_error(WEIR_LOG_ALERT, weir_shmtx_log(mtx), err,
                       "pthread_mutex_trylock() failed");
        return 0;
    }
}


void
weir_shmtx_lock(weir_shmtx_t *mtx)
{
    int  err;

    err = pthread_mutex_lock(&mtx->sh->mutex);

    if (err == 0) {
        return;
    }

    if (err == EOWNERDEAD) {
        weir_shmtx_recover(mtx);
        return;
    }

    /* ENOTRECOVERABLE cannot happen: every EOWNERDEAD is made consistent */

    weir_log_error(WEIR_LOG_ALERT, weir_shmtx_log(mtx), err,
                   "pthread_mutex_lock() failed");
}


void
weir_shmtx_unlock(weir_shmtx_t *mtx)
{
    int  err;

    err = pthread_mutex_unlock(&mtx->sh->mutex);
    if (err != 0) {
        weir_log_error(WEIR_LOG_ALERT, weir_shmtx_log(mtx), err,
                       "pthread_mutex_unlock() failed");
    }
}


static void
weir_shmtx_recover(weir_shmtx_t *mtx)
{
    int  err;

    err = pthread_mutex_consistent(&mtx->sh->mutex);
    if (err != 0) {
        weir_log_error(WEIR_LOG_ALERT, weir_shmtx_log(mtx), err,
                       "pthread_mutex_consistent() failed");
        return;
    }

    weir_log_error(WEIR_LOG_ERR, weir_shmtx_log(mtx), 0,
                   "shared lock recovered from a dead worker");
}


/*
 * A weir_shmtx_t that lives in a zone (the slab pool's) outlives the cycle
 * whose log it was created with, so such locks keep log NULL and log to
 * the current cycle's log; without a cycle (unit tests) messages go to
 * stderr.
 */

static weir_log_t *
weir_shmtx_log(weir_shmtx_t *mtx)
{
    static weir_log_t        stderr_log;
    static weir_open_file_t  stderr_file;

    if (mtx->log) {
        return mtx->log;
    }

    if (weir_cycle && weir_cycle->log) {
        return weir_cycle->log;
    }

    stderr_file.fd = STDERR_FILENO;
    stderr_log.file = &stderr_file;
    stderr_log.log_level = WEIR_LOG_NOTICE;

    return &stderr_log;
}
