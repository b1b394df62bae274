#include "weir_config.h"
#include "weir_core.h"


ssize_t
weir_write_fd(weir_fd_t fd, const void *buf, size_t n)
{
    ssize_t         rc;
    size_t          written;
    const char     *p = buf;

    written = 0;

    while (written < n) {
        rc = write(fd, p + written, n - written);

        if (rc == -1) {
            if (errno == EINTR) {
                continue;
            }

            return -1;
        }

        written += (size_t) rc;
    }

    return (ssize_t) written;
}


ssize_t
weir_read_file(weir_file_t *file, unsigned char *buf, size_t size,
    off_t offset)
{
    ssize_t  n;

    for ( ;; ) {
        n = pread(file->fd, buf, size, offset);

        if (n == -1 && errno == EINTR) {
            continue;
        }

        break;
    }

    if (n == -1) {
        weir_log_error(WEIR_LOG_CRIT, file->log, weir_errno,
                       "pread() \"%.*s\" failed", WEIR_STR_ARG(file->name));
        return WEIR_ERROR;
    }

    file->offset += n;

    return n;
}


weir_int_t
weir_nonblocking(weir_fd_t fd)
{
    int  flags;

    flags = fcntl(fd, F_GETFL);
    if (flags == -1) {
        return WEIR_ERROR;
    }

    return fcntl(fd, F_SETFL, flags | O_NONBLOCK) == -1 ? WEIR_ERROR : WEIR_OK;
}


weir_int_t
weir_blocking(weir_fd_t fd)
{
    int  flags;

    flags = fcntl(fd, F_GETFL);
    if (flags == -1) {
        return WEIR_ERROR;
    }

    return fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == -1 ? WEIR_ERROR
                                                          : WEIR_OK;
}


weir_int_t
weir_cloexec(weir_fd_t fd)
{
    int  flags;

    flags = fcntl(fd, F_GETFD);
    if (flags == -1) {
        return WEIR_ERROR;
    }

    return fcntl(fd, F_SETFD, flags | FD_CLOEXEC) == -1 ? WEIR_ERROR : WEIR_OK;
}


weir_int_t
weir_get_full_name(weir_pool_t *pool, weir_str_t *prefix, weir_str_t *name)
{
    size_t          len;
    unsigned char  *p;

    if (name->len > 0 && name->data[0] == '/') {
        p = weir_pnalloc(pool, name->len + 1);
        if (p == NULL) {
            return WEIR_ERROR;
        }

        weir_memcpy(p, name->data, name->len);
        p[name->len] = '\0';
        name->data = p;

        return WEIR_OK;
    }

    len = prefix->len;

    p = weir_pnalloc(pool, len + 1 + name->len + 1);
    if (p == NULL) {
        return WEIR_ERROR;
    }

    weir_memcpy(p, prefix->data, len);

    if (len && p[len - 1] != '/') {
        p[len++] = '/';
    }

    weir_memcpy(p + len, name->data, name->len);
    len += name->len;
    p[len] = '\0';

    name->len = len;
    name->data = p;

    return WEIR_OK;
}
