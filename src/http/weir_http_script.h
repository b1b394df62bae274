#ifndef _WEIR_HTTP_SCRIPT_H_INCLUDED_
#define _WEIR_HTTP_SCRIPT_H_INCLUDED_

/*
 * Complex values: a directive argument with variables ("$host$uri",
 * "${arg_a}x", "$1") compiled once at configuration time into a short
 * program of literal copies and variable references, and evaluated per
 * request. A value without "$" is kept as a plain string.
 */

typedef struct {
    weir_str_t                   value;     /* the source text */
    weir_uint_t                 *flushes;   /* variable indices */
    void                        *lengths;   /* compiled code: lengths */
    void                        *values;    /* compiled code: values */
    union {
        size_t                   size;
    } u;
} weir_http_complex_value_t;

typedef struct {
    weir_conf_t                 *cf;
    weir_str_t                  *value;
    weir_http_complex_value_t   *complex_value;

    unsigned                     zero:1;        /* NUL-terminate result */
    unsigned                     conf_prefix:1; /* a path: conf prefix */
    unsigned                     root_prefix:1; /* a path: prefix */
} weir_http_compile_complex_value_t;

weir_int_t weir_http_compile_complex_value(
    weir_http_compile_complex_value_t *ccv);
/* evaluates val for r into value (pool memory) */
weir_int_t weir_http_complex_value(weir_http_request_t *r,
    weir_http_complex_value_t *val, weir_str_t *value);
size_t weir_http_complex_value_size(weir_http_request_t *r,
    weir_http_complex_value_t *val, size_t default_value);

/* directive setters for complex values */
char *weir_http_set_complex_value_slot(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
char *weir_http_set_complex_value_zero_slot(weir_conf_t *cf,
    weir_command_t *cmd, void *conf);

/* number of "$" variables in a string: 0 means a plain value */
weir_uint_t weir_http_script_variables_count(weir_str_t *value);

#endif /* _WEIR_HTTP_SCRIPT_H_INCLUDED_ */
