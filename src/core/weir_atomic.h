#ifndef _WEIR_ATOMIC_H_INCLUDED_
#define _WEIR_ATOMIC_H_INCLUDED_

/* GCC/clang builtins: the only atomics weir needs are a word-sized
 * compare-and-swap and fetch-add on shared memory. */

typedef volatile weir_uint_t  weir_atomic_t;
typedef weir_uint_t           weir_atomic_uint_t;
typedef weir_int_t            weir_atomic_int_t;

#define weir_atomic_cmp_set(lock, old, set)                                   \
    __sync_bool_compare_and_swap(lock, old, set)

#define weir_atomic_fetch_add(value, add)                                     \
    __sync_fetch_and_add(value, add)

#define weir_memory_barrier()   __sync_synchronize()
#define weir_cpu_pause()        __asm__ volatile ("" ::: "memory")

#endif /* _WEIR_ATOMIC_H_INCLUDED_ */
