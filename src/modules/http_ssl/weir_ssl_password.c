/*
 * ssl_password_file and proxy_ssl_password_file: the passwords of
 * encrypted keys, one a line, read when the configuration is.
 *
 * The file may be a regular file or anything else open() and read()
 * accept, as nginx reads it: a FIFO fed by a process that holds the
 * password (or a shell's <(...)), a character device. Such a stream is
 * read without blocking: weir waits WEIR_SSL_PASSWORD_WAIT for its first
 * bytes (nginx waits for ever, here at start, -t and reload alike), then
 * takes what follows until the writer closes or pauses.
 */

#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_ssl.h"

#include <poll.h>


#define WEIR_SSL_PASSWORD_MAX       4096
#define WEIR_SSL_PASSWORD_FILE_MAX  65536

/* how long a stream may take to give its first bytes, and to give more
 * once it started (ms) */
#define WEIR_SSL_PASSWORD_WAIT      5000
#define WEIR_SSL_PASSWORD_PAUSE     200


static ssize_t weir_ssl_read_password_stream(weir_conf_t *cf, int fd,
    const char *name, unsigned char *buf, size_t size);
static weir_msec_t weir_ssl_password_clock(void);


weir_array_t *
weir_ssl_read_password_file(weir_conf_t *cf, weir_str_t *file)
{
    int            fd;
    size_t         size;
    ssize_t        n;
    unsigned char *p, *last, *end, *buf;
    weir_str_t     name, *pwd;
    weir_array_t  *passwords;
    struct stat    st;

    name = *file;

    if (weir_conf_full_name(cf->cycle, &name, 1) != WEIR_OK) {
        return NULL;
    }

    /* non-blocking: opening a FIFO must not wait for its writer */
    fd = weir_open_file(name.data, WEIR_FILE_RDONLY|WEIR_FILE_NONBLOCK,
                        WEIR_FILE_OPEN, 0);
    if (fd == -1) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, weir_errno,
                            "open() \"%s\" failed", name.data);
        return NULL;
    }

    if (fstat(fd, &st) == -1) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, weir_errno,
                            "fstat() \"%s\" failed", name.data);
        (void) close(fd);
        return NULL;
    }

    if (S_ISDIR(st.st_mode)) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "password file \"%s\" is a directory",
                            name.data);
        (void) close(fd);
        return NULL;
    }

    if (S_ISREG(st.st_mode) && st.st_size > WEIR_SSL_PASSWORD_FILE_MAX) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "password file \"%s\" is too large",
                            name.data);
        (void) close(fd);
        return NULL;
    }

    /* one byte more than allowed: a stream that fills it is too large */
    size = S_ISREG(st.st_mode) ? (size_t) st.st_size
                               : WEIR_SSL_PASSWORD_FILE_MAX + 1;

    buf = weir_pnalloc(cf->temp_pool ? cf->temp_pool : cf->pool, size + 1);
    if (buf == NULL) {
        (void) close(fd);
        return NULL;
    }

    if (S_ISREG(st.st_mode)) {
        n = read(fd, buf, size);

        if (n == -1) {
            weir_conf_log_error(WEIR_LOG_EMERG, cf, weir_errno,
                                "read() \"%s\" failed", name.data);
        }

    } else {
        n = weir_ssl_read_password_stream(cf, fd, (char *) name.data, buf,
                                          size);
    }

    (void) close(fd);

    if (n == -1) {
        OPENSSL_cleanse(buf, size);
        return NULL;
    }

    if ((size_t) n > WEIR_SSL_PASSWORD_FILE_MAX) {
        OPENSSL_cleanse(buf, size);
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "password file \"%s\" is too large",
                            name.data);
        return NULL;
    }

    passwords = weir_array_create(cf->pool, 4, sizeof(weir_str_t));
    if (passwords == NULL) {
        OPENSSL_cleanse(buf, size);
        return NULL;
    }

    p = buf;
    end = buf + n;

    while (p < end) {
        last = weir_strlchr(p, end, '\n');
        if (last == NULL) {
            last = end;
        }

        name.data = p;
        name.len = last - p;

        p = last + 1;

        if (name.len && name.data[name.len - 1] == '\r') {
            name.len--;
        }

        if (name.len > WEIR_SSL_PASSWORD_MAX) {
            OPENSSL_cleanse(buf, size);
            weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                "password too long in \"%.*s\"",
                                (int) file->len, file->data);
            return NULL;
        }

        if (name.len == 0) {
            continue;
        }

        pwd = weir_array_push(passwords);
        if (pwd == NULL) {
            OPENSSL_cleanse(buf, size);
            return NULL;
        }

        /* kept for the cycle: keys are loaded for every context */
        pwd->len = name.len;
        pwd->data = weir_pnalloc(cf->pool, name.len);
        if (pwd->data == NULL) {
            OPENSSL_cleanse(buf, size);
            return NULL;
        }

        weir_memcpy(pwd->data, name.data, name.len);
    }

    OPENSSL_cleanse(buf, size);

    if (passwords->nelts == 0) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "no passwords in \"%.*s\"",
                            (int) file->len, file->data);
        return NULL;
    }

    return passwords;
}


/*
 * Reads a non-blocking stream (fd) into buf: waits up to
 * WEIR_SSL_PASSWORD_WAIT for the first bytes, then reads until the
 * writer closes, size bytes came, or nothing more came for
 * WEIR_SSL_PASSWORD_PAUSE. Returns the bytes read (0 when the writer
 * closed without writing), or -1 with the error logged (a timeout
 * before any byte among them).
 */

static ssize_t
weir_ssl_read_password_stream(weir_conf_t *cf, int fd, const char *name,
    unsigned char *buf, size_t size)
{
    int            rc, timeout;
    size_t         total;
    ssize_t        n;
    weir_err_t     err;
    weir_msec_t    deadline, now;
    struct pollfd  pfd;

    total = 0;
    deadline = weir_ssl_password_clock() + WEIR_SSL_PASSWORD_WAIT;

    while (total < size) {

        now = weir_ssl_password_clock();

        if (now >= deadline) {
            break;
        }

        timeout = (int) (deadline - now);

        pfd.fd = fd;
        pfd.events = POLLIN;
        pfd.revents = 0;

        /* a FIFO that never had a writer is not readable (Linux, BSD):
         * poll() waits for the writer's data or its close */
        rc = poll(&pfd, 1, timeout);

        if (rc == -1) {
            err = weir_errno;

            if (err == EINTR) {
                continue;
            }

            weir_conf_log_error(WEIR_LOG_EMERG, cf, err,
                                "poll() \"%s\" failed", name);
            return -1;
        }

        if (rc == 0) {
            continue;
        }

        n = read(fd, buf + total, size - total);

        if (n == -1) {
            err = weir_errno;

            if (err == EAGAIN || err == EINTR) {
                continue;
            }

            weir_conf_log_error(WEIR_LOG_EMERG, cf, err,
                                "read() \"%s\" failed", name);
            return -1;
        }

        if (n == 0) {
            /* the writer closed: what came is all */
            return (ssize_t) total;
        }

        /* it started: the rest comes soon or not at all */
        total += (size_t) n;
        deadline = weir_ssl_password_clock() + WEIR_SSL_PASSWORD_PAUSE;
    }

    if (total == 0) {
        weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                            "no password came from \"%s\" in %d ms",
                            name, WEIR_SSL_PASSWORD_WAIT);
        return -1;
    }

    return (ssize_t) total;
}


/* the configuration is read before the event loop keeps the time */

static weir_msec_t
weir_ssl_password_clock(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (weir_msec_t) ts.tv_sec * 1000
           + (weir_msec_t) (ts.tv_nsec / 1000000);
}
