#ifndef _WEIR_SHMTX_H_INCLUDED_
#define _WEIR_SHMTX_H_INCLUDED_

/*
 * A lock shared by all workers, living in shared memory: a process-shared,
 * robust pthread mutex, so a worker that dies holding it does not wedge
 * the others (the next locker recovers it and logs).
 */

typedef struct {
    pthread_mutex_t    mutex;
} weir_shmtx_sh_t;

typedef struct {
    weir_shmtx_sh_t   *sh;
    weir_log_t        *log;
} weir_shmtx_t;

/* sh must be in shared memory; initialises it (master, before fork).
 * log may be NULL: messages then go to the current cycle's log (a lock
 * kept in a zone outlives the cycle that created it) */
weir_int_t weir_shmtx_create(weir_shmtx_t *mtx, weir_shmtx_sh_t *sh,
    weir_log_t *log);
void weir_shmtx_destroy(weir_shmtx_t *mtx);
/* 1 when the lock was taken */
weir_uint_t weir_shmtx_trylock(weir_shmtx_t *mtx);
void weir_shmtx_lock(weir_shmtx_t *mtx);
void weir_shmtx_unlock(weir_shmtx_t *mtx);

#endif /* _WEIR_SHMTX_H_INCLUDED_ */
