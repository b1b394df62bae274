#ifndef _WEIR_SSL_INT_H_INCLUDED_
#define _WEIR_SSL_INT_H_INCLUDED_

/*
 * What the files of the OpenSSL half share, and no one else (the rest of
 * the module uses weir_ssl.h):
 *
 *   weir_ssl.c             contexts, certificates, verification
 *                          settings, errors
 *   weir_ssl_session.c     the session cache shared by the workers,
 *                          session tickets and their keys
 *   weir_ssl_connection.c  TLS on a weir_connection_t: handshake, I/O,
 *                          shutdown, client sessions, checks of the
 *                          peer, what the $ssl_* variables read
 */


#define WEIR_SSL_BUFSIZE            16384


/* the SSL_CTX and SSL ex_data indexes of weir_ssl.c (weir_ssl_init) */
extern int  weir_ssl_session_cache_index;
extern int  weir_ssl_session_ctx_index;


/* weir_ssl.c */
void weir_ssl_clear_error(void);
void weir_ssl_conf_error(weir_conf_t *cf, const char *fmt, ...)
    WEIR_PRINTF(2, 3);
void weir_ssl_connection_error(weir_connection_t *c, int sslerr,
    weir_err_t err, const char *text);
weir_int_t weir_ssl_full_name(weir_conf_t *cf, weir_str_t *name,
    weir_str_t *full);


#endif /* _WEIR_SSL_INT_H_INCLUDED_ */
