#ifndef _WEIR_HTTP_VARIABLES_H_INCLUDED_
#define _WEIR_HTTP_VARIABLES_H_INCLUDED_

/*
 * Variables ($host, $uri, $arg_x, $http_x, ...). Modules add variables
 * in preconfiguration with weir_http_add_variable(); a directive that
 * uses one looks it up once at configuration time and gets an index
 * (weir_http_get_variable_index); at run time the value is computed on
 * first use per request and cached in r->variables[index] unless the
 * variable is WEIR_HTTP_VAR_NOCACHEABLE.
 */

struct weir_http_variable_value_s {
    unsigned                     len:28;
    unsigned                     valid:1;
    unsigned                     no_cacheable:1;
    unsigned                     not_found:1;
    unsigned                     escape:1;
    unsigned char               *data;
};

typedef struct weir_http_variable_s  weir_http_variable_t;

typedef void (*weir_http_set_variable_pt)(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
/* fills v (valid=1, or not_found=1); WEIR_OK or WEIR_ERROR */
typedef weir_int_t (*weir_http_get_variable_pt)(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);

#define WEIR_HTTP_VAR_CHANGEABLE   1
#define WEIR_HTTP_VAR_NOCACHEABLE  2
#define WEIR_HTTP_VAR_INDEXED      4
#define WEIR_HTTP_VAR_NOHASH       8
#define WEIR_HTTP_VAR_WEAK         16
#define WEIR_HTTP_VAR_PREFIX       32

struct weir_http_variable_s {
    weir_str_t                   name;   /* must be first */
    weir_http_set_variable_pt    set_handler;
    weir_http_get_variable_pt    get_handler;
    uintptr_t                    data;
    weir_uint_t                  flags;
    weir_uint_t                  index;
};

#define weir_http_null_variable  { weir_null_string, NULL, NULL, 0, 0, 0 }

weir_http_variable_t *weir_http_add_variable(weir_conf_t *cf,
    weir_str_t *name, weir_uint_t flags);
/* index of a variable by name; WEIR_ERROR (logged) when unknown at the
 * end of configuration */
weir_int_t weir_http_get_variable_index(weir_conf_t *cf, weir_str_t *name);
weir_http_variable_value_t *weir_http_get_indexed_variable(
    weir_http_request_t *r, weir_uint_t index);
weir_http_variable_value_t *weir_http_get_flushed_variable(
    weir_http_request_t *r, weir_uint_t index);
/* by name at run time (slow path: hash lookup, prefix variables) */
weir_http_variable_value_t *weir_http_get_variable(weir_http_request_t *r,
    weir_str_t *name, weir_uint_t key);

weir_int_t weir_http_variables_add_core_vars(weir_conf_t *cf);
weir_int_t weir_http_variables_init_vars(weir_conf_t *cf);

extern weir_http_variable_value_t  weir_http_variable_null_value;
extern weir_http_variable_value_t  weir_http_variable_true_value;

/* regex captures for locations and server names ($1, named captures) */
typedef struct {
    weir_uint_t                  capture;
    weir_int_t                   index;
} weir_http_regex_variable_t;

typedef struct {
    weir_regex_t                *regex;
    weir_uint_t                  ncaptures;
    weir_http_regex_variable_t  *variables;
    weir_uint_t                  nvariables;
    weir_str_t                   name;
} weir_http_regex_t;

weir_http_regex_t *weir_http_regex_compile(weir_conf_t *cf,
    weir_regex_compile_t *rc);
/* WEIR_OK matched (captures set in r), WEIR_DECLINED no match, WEIR_ERROR */
weir_int_t weir_http_regex_exec(weir_http_request_t *r,
    weir_http_regex_t *re, weir_str_t *s);

/*
 * For the handlers of the core variables (weir_http_core_variables.c):
 * the table weir_http_variables_add_core_vars registers, and the setters
 * a handler fills its value with.
 */
/*
 * The data a prefix variable's handler receives: the full name comes
 * first, so that a handler may also read data as a weir_str_t *.
 */
typedef struct {
    weir_str_t                   name;      /* "http_user_agent" */
    weir_str_t                   suffix;    /* "user_agent" */
    weir_uint_t                  token;     /* headers: WEIR_HTTP_HDR_* */
} weir_http_variable_arg_t;

extern weir_http_variable_t  weir_http_core_variables[];

/* $http_* and $sent_http_*: their prefix entries' names are interned as
 * header tokens (weir_http_variable_arg_t.token) */
weir_int_t weir_http_variable_header_in(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);
weir_int_t weir_http_variable_header_out(weir_http_request_t *r,
    weir_http_variable_value_t *v, uintptr_t data);

void weir_http_variable_set_value(weir_http_variable_value_t *v,
    unsigned char *data, size_t len);
void weir_http_variable_set_not_found(weir_http_variable_value_t *v);
/* formats (at most 63 bytes) into request pool memory and sets v to it */
weir_int_t weir_http_variable_printf(weir_http_request_t *r,
    weir_http_variable_value_t *v, const char *fmt, ...) WEIR_PRINTF(3, 4);

#endif /* _WEIR_HTTP_VARIABLES_H_INCLUDED_ */
