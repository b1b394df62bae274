#ifndef _WEIR_FILES_H_INCLUDED_
#define _WEIR_FILES_H_INCLUDED_

struct weir_file_s {
    weir_fd_t        fd;
    weir_str_t       name;
    off_t            offset;
    weir_log_t      *log;
};

/* a file that weir keeps open for the cycle's life (logs); reopened on
 * USR1. flush, when set, writes out what a buffered writer holds. */
struct weir_open_file_s {
    weir_fd_t        fd;
    weir_str_t       name;          /* NUL-terminated */
    void           (*flush)(weir_open_file_t *file, weir_log_t *log);
    void            *data;
};

#define weir_open_file(name, mode, create, access)                           \
    open((const char *) name, mode | create | O_CLOEXEC, access)

#define WEIR_FILE_RDONLY      O_RDONLY
#define WEIR_FILE_WRONLY      O_WRONLY
#define WEIR_FILE_RDWR        O_RDWR
#define WEIR_FILE_CREATE_OR_OPEN  O_CREAT
#define WEIR_FILE_OPEN        0
#define WEIR_FILE_TRUNCATE    (O_CREAT | O_TRUNC)
#define WEIR_FILE_APPEND      (O_WRONLY | O_APPEND)
#define WEIR_FILE_NONBLOCK    O_NONBLOCK
#define WEIR_FILE_DEFAULT_ACCESS  0644
#define WEIR_FILE_OWNER_ACCESS    0600

/* writes all of buf, retrying on EINTR and short writes */
ssize_t weir_write_fd(weir_fd_t fd, const void *buf, size_t n);
ssize_t weir_read_file(weir_file_t *file, unsigned char *buf, size_t size,
    off_t offset);

weir_int_t weir_nonblocking(weir_fd_t fd);
weir_int_t weir_blocking(weir_fd_t fd);
weir_int_t weir_cloexec(weir_fd_t fd);

/*
 * Resolves name against prefix: an absolute name is kept, a relative one
 * is joined to prefix. The result is NUL-terminated in pool memory.
 */
weir_int_t weir_get_full_name(weir_pool_t *pool, weir_str_t *prefix,
    weir_str_t *name);

#endif /* _WEIR_FILES_H_INCLUDED_ */
