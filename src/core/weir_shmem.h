#ifndef _WEIR_SHMEM_H_INCLUDED_
#define _WEIR_SHMEM_H_INCLUDED_

/* anonymous shared mappings created by the master before it forks */

typedef struct {
    unsigned char  *addr;
    size_t          size;
    weir_str_t      name;
    weir_log_t     *log;
    weir_uint_t     exists;   /* reused from the previous cycle */
} weir_shm_t;

weir_int_t weir_shm_alloc(weir_shm_t *shm);
void weir_shm_free(weir_shm_t *shm);

#endif /* _WEIR_SHMEM_H_INCLUDED_ */
