#ifndef _WEIR_HTTP_CONFIG_H_INCLUDED_
#define _WEIR_HTTP_CONFIG_H_INCLUDED_

/*
 * HTTP configuration contexts. An HTTP module's directives go to its
 * main, server or location conf through cmd->conf:
 * WEIR_HTTP_MAIN_CONF_OFFSET, _SRV_CONF_OFFSET or _LOC_CONF_OFFSET.
 *
 * Phase handlers and filters are declared as data in the module context
 * with an explicit order number; weir_http_init_phase_engine and
 * weir_http_init_filters sort them once per configuration, and "weir -V"
 * prints the same chains from the compiled-in declarations.
 */

typedef struct {
    void        **main_conf;
    void        **srv_conf;
    void        **loc_conf;
} weir_http_conf_ctx_t;

/* phases, in the order a request runs through them */
typedef enum {
    WEIR_HTTP_POST_READ_PHASE = 0,
    WEIR_HTTP_SERVER_REWRITE_PHASE,
    WEIR_HTTP_FIND_CONFIG_PHASE,
    WEIR_HTTP_REWRITE_PHASE,
    WEIR_HTTP_POST_REWRITE_PHASE,
    WEIR_HTTP_PREACCESS_PHASE,
    WEIR_HTTP_ACCESS_PHASE,
    WEIR_HTTP_POST_ACCESS_PHASE,
    WEIR_HTTP_PRECONTENT_PHASE,
    WEIR_HTTP_CONTENT_PHASE,
    WEIR_HTTP_LOG_PHASE
} weir_http_phases;

#define WEIR_HTTP_PHASES_N  (WEIR_HTTP_LOG_PHASE + 1)

/*
 * A phase handler declaration. Handlers of one phase run in ascending
 * order. A handler returns: WEIR_DECLINED (not mine: next handler),
 * WEIR_OK (done with this phase: next phase), WEIR_AGAIN/WEIR_DONE (the
 * request continues asynchronously; call weir_http_core_run_phases()
 * later), WEIR_ERROR or an HTTP status (finalize with it). Content
 * handlers: anything but WEIR_DECLINED finalizes the request with it.
 */
typedef struct {
    weir_uint_t            phase;
    weir_int_t             order;
    const char            *name;
    weir_http_handler_pt   handler;
} weir_http_phase_decl_t;

/* filters run in ascending order: the top of a chain has the lowest
 * order; the protocol writer is the bottom (WEIR_HTTP_FILTER_BOTTOM).
 * next points at the module's own "next filter" variable, which the chain
 * builder fills in. */

#define WEIR_HTTP_FILTER_BOTTOM  100000

typedef struct {
    const char                   *name;
    weir_int_t                    order;
    weir_http_header_filter_pt    handler;
    weir_http_header_filter_pt   *next;
} weir_http_header_filter_decl_t;

typedef struct {
    const char                   *name;
    weir_int_t                    order;
    weir_http_body_filter_pt      handler;
    weir_http_body_filter_pt     *next;
} weir_http_body_filter_decl_t;

typedef struct {
    const char                        *name;
    weir_int_t                         order;
    weir_http_request_body_filter_pt   handler;
    weir_http_request_body_filter_pt  *next;
} weir_http_request_body_filter_decl_t;

typedef struct {
    weir_int_t   (*preconfiguration)(weir_conf_t *cf);
    weir_int_t   (*postconfiguration)(weir_conf_t *cf);

    void        *(*create_main_conf)(weir_conf_t *cf);
    char        *(*init_main_conf)(weir_conf_t *cf, void *conf);

    void        *(*create_srv_conf)(weir_conf_t *cf);
    char        *(*merge_srv_conf)(weir_conf_t *cf, void *prev, void *conf);

    void        *(*create_loc_conf)(weir_conf_t *cf);
    char        *(*merge_loc_conf)(weir_conf_t *cf, void *prev, void *conf);

    /* each array ends with an entry whose name is NULL; may be NULL */
    weir_http_phase_decl_t                *phases;
    weir_http_header_filter_decl_t        *header_filters;
    weir_http_body_filter_decl_t          *body_filters;
    weir_http_request_body_filter_decl_t  *request_body_filters;
} weir_http_module_t;

#define WEIR_HTTP_MAIN_CONF        0x02000000
#define WEIR_HTTP_SRV_CONF         0x04000000
#define WEIR_HTTP_LOC_CONF         0x08000000
#define WEIR_HTTP_UPS_CONF         0x10000000
#define WEIR_HTTP_SIF_CONF         0x20000000
#define WEIR_HTTP_LIF_CONF         0x40000000
#define WEIR_HTTP_LMT_CONF         0x80000000

#define WEIR_HTTP_MAIN_CONF_OFFSET  offsetof(weir_http_conf_ctx_t, main_conf)
#define WEIR_HTTP_SRV_CONF_OFFSET   offsetof(weir_http_conf_ctx_t, srv_conf)
#define WEIR_HTTP_LOC_CONF_OFFSET   offsetof(weir_http_conf_ctx_t, loc_conf)

#define weir_http_get_module_ctx(r, module)  (r)->ctx[module.ctx_index]
#define weir_http_set_ctx(r, c, module)      (r)->ctx[module.ctx_index] = c;

#define weir_http_get_module_main_conf(r, module)                             \
    (r)->main_conf[module.ctx_index]
#define weir_http_get_module_srv_conf(r, module)                              \
    (r)->srv_conf[module.ctx_index]
#define weir_http_get_module_loc_conf(r, module)                              \
    (r)->loc_conf[module.ctx_index]

#define weir_http_conf_get_module_main_conf(cf, module)                       \
    ((weir_http_conf_ctx_t *) cf->ctx)->main_conf[module.ctx_index]
#define weir_http_conf_get_module_srv_conf(cf, module)                        \
    ((weir_http_conf_ctx_t *) cf->ctx)->srv_conf[module.ctx_index]
#define weir_http_conf_get_module_loc_conf(cf, module)                        \
    ((weir_http_conf_ctx_t *) cf->ctx)->loc_conf[module.ctx_index]

#define weir_http_cycle_get_module_main_conf(cycle, module)                   \
    ((cycle)->conf_ctx[weir_http_module.index]                                \
     ? ((weir_http_conf_ctx_t *) (cycle)->conf_ctx[weir_http_module.index])  \
           ->main_conf[module.ctx_index]                                      \
     : NULL)

/* prints the phase and filter chains of the compiled-in modules (weir -V)
 * into fd; returns WEIR_OK */
weir_int_t weir_http_show_chains(weir_fd_t fd);

#endif /* _WEIR_HTTP_CONFIG_H_INCLUDED_ */
