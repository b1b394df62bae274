#include "weir_config.h"
#include "weir_core.h"
#include "weir_event.h"
#include "weir_http.h"

/*
 * "stub_status": a location that answers with the server-wide connection
 * and request counters, in nginx's stub_status text format so that the
 * existing monitoring scripts read it. The counters are the shared
 * weir_stat_* words that every worker updates.
 */


static weir_int_t weir_http_status_handler(weir_http_request_t *r);
static char *weir_http_set_status(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);


static weir_command_t  weir_http_status_commands[] = {

    { weir_string("stub_status"),
      WEIR_HTTP_SRV_CONF|WEIR_HTTP_LOC_CONF|WEIR_CONF_NOARGS
      |WEIR_CONF_TAKE1,
      weir_http_set_status,
      0,
      0,
      NULL },

    weir_null_command
};


static weir_http_module_t  weir_http_status_module_ctx = {
    NULL,                                  /* preconfiguration */
    NULL,                                  /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL,                                  /* merge location configuration */

    NULL,                                  /* phase handlers */
    NULL,                                  /* header filters */
    NULL,                                  /* body filters */
    NULL                                   /* request body filters */
};


weir_module_t  weir_http_status_module = {
    WEIR_MODULE_V1,
    &weir_http_status_module_ctx,          /* module context */
    weir_http_status_commands,             /* module directives */
    WEIR_HTTP_MODULE,                      /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    WEIR_MODULE_V1_PADDING
};


#define weir_http_status_read(p)  ((p) ? (unsigned long) *(p) : 0UL)


static weir_int_t
weir_http_status_handler(weir_http_request_t *r)
{
    size_t                       size;
    weir_int_t                   rc;
    weir_buf_t                  *b;
    weir_uint_t                  i;
    weir_chain_t                 out;
    weir_http_status_line_t     *line;
    weir_http_core_main_conf_t  *cmcf;
    unsigned long   active, accepted, handled, requests, reading, writing,
                    waiting;

    static weir_str_t  text_plain = weir_string("text/plain");

    if (!(r->method & (WEIR_HTTP_GET|WEIR_HTTP_HEAD))) {
        return WEIR_HTTP_NOT_ALLOWED;
    }

    rc = weir_http_discard_request_body(r);
    if (rc != WEIR_OK) {
        return rc;
    }

    active = weir_http_status_read(weir_stat_active);
    accepted = weir_http_status_read(weir_stat_accepted);
    handled = weir_http_status_read(weir_stat_handled);
    requests = weir_http_status_read(weir_stat_requests);
    reading = weir_http_status_read(weir_stat_reading);
    writing = weir_http_status_read(weir_stat_writing);
    waiting = weir_http_status_read(weir_stat_waiting);

    size = sizeof("Active connections:  \n") + 20
           + sizeof("server accepts handled requests\n")
           + sizeof("    \n") + 3 * 20
           + sizeof("Reading:  Writing:  Waiting:  \n") + 3 * 20;

    /* what other modules add (the mitm module's certificates) */
    cmcf = weir_http_get_module_main_conf(r, weir_http_core_module);
    line = cmcf->status_lines.elts;

    for (i = 0; i < cmcf->status_lines.nelts; i++) {
        size += line[i].max;
    }

    b = weir_create_temp_buf(r->pool, size);
    if (b == NULL) {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->last = weir_slprintf(b->last, b->end,
                            "Active connections: %lu \n"
                            "server accepts handled requests\n"
                            " %lu %lu %lu \n"
                            "Reading: %lu Writing: %lu Waiting: %lu \n",
                            active, accepted, handled, requests,
                            reading, writing, waiting);

    for (i = 0; i < cmcf->status_lines.nelts; i++) {
        b->last = line[i].write(r, b->last, b->end);
    }

    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    r->headers_out.status = WEIR_HTTP_OK;
    r->headers_out.content_type = text_plain;
    r->headers_out.content_type_len = text_plain.len;
    r->headers_out.content_type_lowcase = NULL;
    r->headers_out.content_length_n = b->last - b->pos;

    rc = weir_http_send_header(r);

    if (rc == WEIR_ERROR || rc > WEIR_OK || r->header_only) {
        return rc;
    }

    out.buf = b;
    out.next = NULL;

    return weir_http_output_filter(r, &out);
}


static char *
weir_http_set_status(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    weir_http_core_loc_conf_t  *clcf;

    (void) cmd;
    (void) conf;

    clcf = weir_http_conf_get_module_loc_conf(cf, weir_http_core_module);

    if (clcf->handler != NULL) {
        return "is duplicate";
    }

    clcf->handler = weir_http_status_handler;

    return WEIR_CONF_OK;
}
