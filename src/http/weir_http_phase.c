#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"

/*
 * The phase engine and the request helpers that move a request through
 * it: location selection, internal redirects, named locations, and the
 * small response helpers every content module uses.
 *
 * A checker returns WEIR_OK to stop running phases (the request has been
 * finalized or continues asynchronously) and WEIR_AGAIN to run the step
 * at r->phase_handler next. See docs/dev/http-phases.md.
 */


static weir_int_t weir_http_core_find_static_location(weir_http_request_t *r,
    weir_http_location_tree_node_t *node);
static weir_http_phase_handler_pt weir_http_phase_checker(weir_uint_t phase);


const char  *weir_http_phase_names[] = {
    "post_read",
    "server_rewrite",
    "find_config",
    "rewrite",
    "post_rewrite",
    "preaccess",
    "access",
    "post_access",
    "precontent",
    "content",
    "log",
    NULL
};


/*
 * The core's own steps. The content step runs last in its phase: it is
 * reached only when every content handler declined, and answers 404 (or
 * 403 for a directory URI).
 */
static weir_http_phase_decl_t  weir_http_core_steps[] = {
    { WEIR_HTTP_FIND_CONFIG_PHASE, 0, "core", NULL },
    { WEIR_HTTP_POST_REWRITE_PHASE, 0, "core", NULL },
    { WEIR_HTTP_POST_ACCESS_PHASE, 0, "core", NULL },
    { WEIR_HTTP_CONTENT_PHASE, WEIR_HTTP_FILTER_BOTTOM, "core", NULL },
    { 0, 0, NULL, NULL }
};


/* phases whose only step is the core's: a module may not add to them */
static weir_uint_t
weir_http_core_only_phase(weir_uint_t phase)
{
    return phase == WEIR_HTTP_FIND_CONFIG_PHASE
           || phase == WEIR_HTTP_POST_REWRITE_PHASE
           || phase == WEIR_HTTP_POST_ACCESS_PHASE;
}


weir_http_phase_decl_t *
weir_http_sort_phase_decls(weir_module_t **modules, weir_uint_t n,
    weir_uint_t *nout)
{
    weir_uint_t              i, j, k, count;
    weir_http_module_t      *hm;
    weir_http_phase_decl_t  *d, *all, tmp;

    count = 0;

    for (i = 0; i < n; i++) {
        if (modules[i] == NULL || modules[i]->type != WEIR_HTTP_MODULE) {
            continue;
        }

        hm = modules[i]->ctx;

        if (hm == NULL || hm->phases == NULL) {
            continue;
        }

        for (d = hm->phases; d->name; d++) {
            count++;
        }
    }

    for (d = weir_http_core_steps; d->name; d++) {
        count++;
    }

    all = malloc(count * sizeof(weir_http_phase_decl_t));
    if (all == NULL) {
        return NULL;
    }

    k = 0;

    for (d = weir_http_core_steps; d->name; d++) {
        all[k++] = *d;
    }

    for (i = 0; i < n; i++) {
        if (modules[i] == NULL || modules[i]->type != WEIR_HTTP_MODULE) {
            continue;
        }

        hm = modules[i]->ctx;

        if (hm == NULL || hm->phases == NULL) {
            continue;
        }

        for (d = hm->phases; d->name; d++) {
            all[k++] = *d;
        }
    }

    /*
     * Insertion sort: stable, so equal orders keep the module order, and
     * the core's content step (order WEIR_HTTP_FILTER_BOTTOM, listed
     * first) stays ahead only of modules that claim the same order.
     * The content step must be last: it is moved there below.
     */
    for (i = 1; i < count; i++) {
        tmp = all[i];
        j = i;

        while (j > 0
               && (all[j - 1].phase > tmp.phase
                   || (all[j - 1].phase == tmp.phase
                       && all[j - 1].order > tmp.order)))
        {
            all[j] = all[j - 1];
            j--;
        }

        all[j] = tmp;
    }

    /* the core content step goes after every content handler */
    for (i = 0; i < count; i++) {
        if (all[i].phase == WEIR_HTTP_CONTENT_PHASE
            && all[i].handler == NULL)
        {
            tmp = all[i];

            for (j = i; j + 1 < count
                        && all[j + 1].phase == WEIR_HTTP_CONTENT_PHASE;
                 j++)
            {
                all[j] = all[j + 1];
            }

            all[j] = tmp;
            break;
        }
    }

    *nout = count;

    return all;
}


static weir_http_phase_handler_pt
weir_http_phase_checker(weir_uint_t phase)
{
    switch (phase) {

    case WEIR_HTTP_SERVER_REWRITE_PHASE:
    case WEIR_HTTP_REWRITE_PHASE:
        return weir_http_core_rewrite_phase;

    case WEIR_HTTP_FIND_CONFIG_PHASE:
        return weir_http_core_find_config_phase;

    case WEIR_HTTP_POST_REWRITE_PHASE:
        return weir_http_core_post_rewrite_phase;

    case WEIR_HTTP_ACCESS_PHASE:
        return weir_http_core_access_phase;

    case WEIR_HTTP_POST_ACCESS_PHASE:
        return weir_http_core_post_access_phase;

    case WEIR_HTTP_CONTENT_PHASE:
        return weir_http_core_content_phase;

    default:
        return weir_http_core_generic_phase;
    }
}


weir_int_t
weir_http_init_phase_engine(weir_conf_t *cf, weir_http_core_main_conf_t *cmcf)
{
    weir_uint_t                 i, j, n, nh, nlog, find_config;
    weir_http_phase_decl_t     *decls;
    weir_http_phase_handler_t  *ph;
    weir_http_handler_pt       *lh;

    decls = weir_http_sort_phase_decls(cf->cycle->modules,
                                       cf->cycle->modules_n, &n);
    if (decls == NULL) {
        weir_log_error(WEIR_LOG_EMERG, cf->log, errno,
                       "malloc() failed while building the phase engine");
        return WEIR_ERROR;
    }

    nh = 0;
    nlog = 0;

    for (i = 0; i < n; i++) {

        if (decls[i].phase >= WEIR_HTTP_PHASES_N) {
            weir_log_error(WEIR_LOG_EMERG, cf->log, 0,
                           "phase handler \"%s\" has an invalid phase %lu",
                           decls[i].name, (unsigned long) decls[i].phase);
            goto failed;
        }

        if (decls[i].handler != NULL
            && weir_http_core_only_phase(decls[i].phase))
        {
            weir_log_error(WEIR_LOG_EMERG, cf->log, 0,
                           "phase handler \"%s\" cannot be added to the "
                           "\"%s\" phase",
                           decls[i].name,
                           weir_http_phase_names[decls[i].phase]);
            goto failed;
        }

        if (decls[i].handler == NULL
            && !weir_http_core_only_phase(decls[i].phase)
            && decls[i].phase != WEIR_HTTP_CONTENT_PHASE)
        {
            weir_log_error(WEIR_LOG_EMERG, cf->log, 0,
                           "phase handler \"%s\" has no handler",
                           decls[i].name);
            goto failed;
        }

        if (decls[i].phase == WEIR_HTTP_LOG_PHASE) {
            nlog++;

        } else {
            nh++;
        }
    }

    ph = weir_pcalloc(cf->pool, (nh + 1) * sizeof(weir_http_phase_handler_t));
    if (ph == NULL) {
        goto failed;
    }

    lh = NULL;

    if (nlog) {
        lh = weir_palloc(cf->pool, nlog * sizeof(weir_http_handler_pt));
        if (lh == NULL) {
            goto failed;
        }
    }

    cmcf->phase_engine.handlers = ph;
    cmcf->phase_engine.log_handlers = lh;
    cmcf->phase_engine.nlog_handlers = nlog;
    cmcf->phase_engine.server_rewrite_index = nh;
    cmcf->phase_engine.location_rewrite_index = nh;

    find_config = nh;
    j = 0;

    for (i = 0; i < n; i++) {

        if (decls[i].phase == WEIR_HTTP_LOG_PHASE) {
            *lh++ = decls[i].handler;
            continue;
        }

        if (decls[i].phase >= WEIR_HTTP_SERVER_REWRITE_PHASE
            && cmcf->phase_engine.server_rewrite_index == nh)
        {
            cmcf->phase_engine.server_rewrite_index = j;
        }

        if (decls[i].phase >= WEIR_HTTP_REWRITE_PHASE
            && cmcf->phase_engine.location_rewrite_index == nh)
        {
            cmcf->phase_engine.location_rewrite_index = j;
        }

        if (decls[i].phase == WEIR_HTTP_FIND_CONFIG_PHASE) {
            find_config = j;
        }

        ph[j].checker = weir_http_phase_checker(decls[i].phase);
        ph[j].handler = decls[i].handler;
        ph[j].phase = decls[i].phase;
        ph[j].name = decls[i].name;
        j++;
    }

    /* next: the first step of the following phase; the post-rewrite
     * step instead points back at find-config, where a changed URI
     * selects its location again */
    for (i = 0; i < nh; i++) {
        for (j = i + 1; j < nh && ph[j].phase == ph[i].phase; j++) {
            /* void */
        }

        ph[i].next = j;

        if (ph[i].phase == WEIR_HTTP_POST_REWRITE_PHASE) {
            ph[i].next = find_config;
        }
    }

    free(decls);

    return WEIR_OK;

failed:

    free(decls);

    return WEIR_ERROR;
}


void
weir_http_handler(weir_http_request_t *r)
{
    weir_http_core_main_conf_t  *cmcf;

    r->connection->log->action = NULL;

    /* r->keepalive and r->lingering_close come set by the protocol
     * from what the request said (HTTP/1: Connection, a body) */

    if (!r->internal) {
        r->uri_changes = WEIR_HTTP_MAX_URI_CHANGES + 1;
        r->phase_handler = 0;

    } else {
        cmcf = weir_http_get_module_main_conf(r, weir_http_core_module);
        r->phase_handler = cmcf->phase_engine.server_rewrite_index;
    }

    r->valid_location = 1;
    r->write_event_handler = weir_http_core_run_phases;

    weir_http_core_run_phases(r);
}


void
weir_http_core_run_phases(weir_http_request_t *r)
{
    weir_int_t                   rc;
    weir_http_phase_handler_t   *ph;
    weir_http_core_main_conf_t  *cmcf;

    cmcf = weir_http_get_module_main_conf(r, weir_http_core_module);

    ph = cmcf->phase_engine.handlers;

    /* bounded: every step either advances phase_handler or stops, and a
     * jump back (find-config again) costs one of r->uri_changes */
    while (ph[r->phase_handler].checker) {

        rc = ph[r->phase_handler].checker(r, &ph[r->phase_handler]);

        if (rc == WEIR_OK) {
            return;
        }
    }
}


weir_int_t
weir_http_core_generic_phase(weir_http_request_t *r,
    weir_http_phase_handler_t *ph)
{
    weir_int_t  rc;

    weir_log_debug(r->connection->log, 0, "generic phase: %s",
                   ph->name);

    rc = ph->handler(r);

    if (rc == WEIR_OK) {
        r->phase_handler = ph->next;
        return WEIR_AGAIN;
    }

    if (rc == WEIR_DECLINED) {
        r->phase_handler++;
        return WEIR_AGAIN;
    }

    if (rc == WEIR_AGAIN || rc == WEIR_DONE) {
        return WEIR_OK;
    }

    /* WEIR_ERROR or an HTTP status */

    weir_http_finalize_request(r, rc);

    return WEIR_OK;
}


weir_int_t
weir_http_core_rewrite_phase(weir_http_request_t *r,
    weir_http_phase_handler_t *ph)
{
    weir_int_t  rc;

    weir_log_debug(r->connection->log, 0, "rewrite phase: %s", ph->name);

    rc = ph->handler(r);

    if (rc == WEIR_DECLINED) {
        r->phase_handler++;
        return WEIR_AGAIN;
    }

    if (rc == WEIR_OK) {
        r->phase_handler = ph->next;
        return WEIR_AGAIN;
    }

    if (rc == WEIR_AGAIN || rc == WEIR_DONE) {
        return WEIR_OK;
    }

    weir_http_finalize_request(r, rc);

    return WEIR_OK;
}


weir_int_t
weir_http_core_find_config_phase(weir_http_request_t *r,
    weir_http_phase_handler_t *ph)
{
    weir_int_t                  rc;
    weir_str_t                  location;
    weir_http_core_loc_conf_t  *clcf;

    r->content_handler = NULL;
    r->uri_changed = 0;

    rc = weir_http_core_find_location(r);

    if (rc == WEIR_ERROR) {
        weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return WEIR_OK;
    }

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    weir_log_debug(r->connection->log, 0, "using location: %s\"%.*s\"",
                   clcf->named ? "@" : (clcf->exact_match ? "=" : ""),
                   WEIR_STR_ARG(clcf->name));

    if (!r->internal && clcf->internal) {
        weir_http_finalize_request(r, WEIR_HTTP_NOT_FOUND);
        return WEIR_OK;
    }

    weir_http_update_location_config(r);

    if (clcf->client_max_body_size > 0
        && r->headers_in.content_length_n > clcf->client_max_body_size
        && !r->discard_body)
    {
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "client intended to send too large body: "
                       "%lld bytes",
                       (long long) r->headers_in.content_length_n);

        /* do not invite the body with "100 Continue" */
        r->expect_tested = 1;
        (void) weir_http_discard_request_body(r);
        weir_http_finalize_request(r, WEIR_HTTP_REQUEST_ENTITY_TOO_LARGE);
        return WEIR_OK;
    }

    if (rc == WEIR_DONE) {
        weir_http_clear_header_out(&r->headers_out.location);

        if (weir_http_slash_location(r, &location) != WEIR_OK) {
            weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
            return WEIR_OK;
        }

        if (weir_http_add_header_out(r, "Location", &location) == NULL) {
            weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
            return WEIR_OK;
        }

        weir_http_finalize_request(r, WEIR_HTTP_MOVED_PERMANENTLY);
        return WEIR_OK;
    }

    r->phase_handler++;

    (void) ph;

    return WEIR_AGAIN;
}


weir_int_t
weir_http_core_post_rewrite_phase(weir_http_request_t *r,
    weir_http_phase_handler_t *ph)
{
    weir_http_core_srv_conf_t  *cscf;

    if (!r->uri_changed) {
        r->phase_handler++;
        return WEIR_AGAIN;
    }

    weir_log_debug(r->connection->log, 0, "uri changes: %u",
                   (unsigned) r->uri_changes);

    r->uri_changes--;

    if (r->uri_changes == 0) {
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "rewrite or internal redirection cycle "
                       "while processing \"%.*s\"", WEIR_STR_ARG(r->uri));

        weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return WEIR_OK;
    }

    /* ph->next of this step is the find-config step, which searches
     * from the server's locations again */
    r->phase_handler = ph->next;

    cscf = weir_http_get_module_srv_conf(r, weir_http_core_module);
    r->loc_conf = cscf->ctx->loc_conf;

    return WEIR_AGAIN;
}


weir_int_t
weir_http_core_access_phase(weir_http_request_t *r,
    weir_http_phase_handler_t *ph)
{
    weir_int_t                  rc;
    weir_http_core_loc_conf_t  *clcf;

    /* access is checked once, for the main request */
    if (r != r->main) {
        r->phase_handler = ph->next;
        return WEIR_AGAIN;
    }

    weir_log_debug(r->connection->log, 0, "access phase: %s", ph->name);

    rc = ph->handler(r);

    if (rc == WEIR_DECLINED) {
        r->phase_handler++;
        return WEIR_AGAIN;
    }

    if (rc == WEIR_AGAIN || rc == WEIR_DONE) {
        return WEIR_OK;
    }

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    if (clcf->satisfy == WEIR_HTTP_SATISFY_ANY) {

        if (rc == WEIR_OK) {
            r->access_code = 0;
            r->phase_handler = ph->next;
            return WEIR_AGAIN;
        }

        if (rc == WEIR_HTTP_FORBIDDEN || rc == WEIR_HTTP_UNAUTHORIZED) {
            if (r->access_code != WEIR_HTTP_UNAUTHORIZED) {
                r->access_code = rc;
            }

            r->phase_handler++;
            return WEIR_AGAIN;
        }

    } else {

        /* satisfy all: every handler must allow */
        if (rc == WEIR_OK) {
            r->phase_handler++;
            return WEIR_AGAIN;
        }
    }

    weir_http_finalize_request(r, rc);

    return WEIR_OK;
}


weir_int_t
weir_http_core_post_access_phase(weir_http_request_t *r,
    weir_http_phase_handler_t *ph)
{
    weir_int_t  access_code;

    (void) ph;

    access_code = r->access_code;

    if (access_code) {
        r->access_code = 0;

        if (access_code == WEIR_HTTP_FORBIDDEN) {
            weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                           "access forbidden by rule");
        }

        weir_http_finalize_request(r, access_code);
        return WEIR_OK;
    }

    r->phase_handler++;

    return WEIR_AGAIN;
}


weir_int_t
weir_http_core_content_phase(weir_http_request_t *r,
    weir_http_phase_handler_t *ph)
{
    size_t      root;
    weir_int_t  rc;
    weir_str_t  path;

    if (r->content_handler) {
        r->write_event_handler = weir_http_request_empty_handler;
        weir_http_finalize_request(r, r->content_handler(r));
        return WEIR_OK;
    }

    if (ph->handler) {
        weir_log_debug(r->connection->log, 0, "content phase: %s",
                       ph->name);

        rc = ph->handler(r);

        if (rc != WEIR_DECLINED) {
            weir_http_finalize_request(r, rc);
            return WEIR_OK;
        }

        /* the next step is another content handler or the core's */
        r->phase_handler++;
        return WEIR_AGAIN;
    }

    /* the core step: every content handler declined */

    if (r->uri.len && r->uri.data[r->uri.len - 1] == '/') {

        if (weir_http_map_uri_to_path(r, &path, &root, 0) != NULL) {
            weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                           "directory index of \"%s\" is forbidden",
                           (char *) path.data);
        }

        weir_http_finalize_request(r, WEIR_HTTP_FORBIDDEN);
        return WEIR_OK;
    }

    weir_log_error(WEIR_LOG_ERR, r->connection->log, 0, "no handler found");

    weir_http_finalize_request(r, WEIR_HTTP_NOT_FOUND);

    return WEIR_OK;
}


void
weir_http_run_log_handlers(weir_http_request_t *r)
{
    weir_uint_t                  i;
    weir_http_core_main_conf_t  *cmcf;

    if (r->main_conf == NULL) {
        return;
    }

    cmcf = weir_http_get_module_main_conf(r, weir_http_core_module);

    for (i = 0; i < cmcf->phase_engine.nlog_handlers; i++) {
        (void) cmcf->phase_engine.log_handlers[i](r);
    }
}


void
weir_http_update_location_config(weir_http_request_t *r)
{
    weir_connection_t          *c;
    weir_http_core_loc_conf_t  *clcf;

    c = r->connection;

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    if (r->method & clcf->limit_except) {
        r->loc_conf = clcf->limit_except_loc_conf;
        clcf = r->loc_conf[weir_http_core_module.ctx_index];
    }

    if (r == r->main && clcf->error_log) {
        weir_http_set_connection_log(c, clcf->error_log);
    }

    /* what the location says about the transport (sendfile,
     * tcp_nodelay, keep-alive) is the protocol's */
    if (r->proto && r->proto->location_config) {
        r->proto->location_config(r);
    }

    if (clcf->client_body_in_single_buffer == 1) {
        r->request_body_in_single_buf = 1;
    }

    if (clcf->handler) {
        r->content_handler = clcf->handler;
    }
}


weir_int_t
weir_http_core_find_location(weir_http_request_t *r)
{
    int                         *captures;
    weir_int_t                   rc, n;
    weir_uint_t                  noregex, size;
    weir_http_core_loc_conf_t   *pclcf, *clcf, **clcfp;

    noregex = 0;

    pclcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    rc = weir_http_core_find_static_location(r, pclcf->static_locations);

    if (rc == WEIR_AGAIN) {
        clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

        /* "^~" stops the regex search at this level */
        noregex = clcf->noregex;

        /* look at the nested locations of the prefix location */
        rc = weir_http_core_find_location(r);
    }

    if (rc == WEIR_OK || rc == WEIR_DONE || rc == WEIR_ERROR) {
        return rc;
    }

    /* rc == WEIR_DECLINED or WEIR_AGAIN in a nested location */

    if (noregex || pclcf->regex_locations == NULL) {
        return rc;
    }

    for (clcfp = pclcf->regex_locations; *clcfp; clcfp++) {

        clcf = *clcfp;

        if (clcf->http_regex) {
            /* sets the captures and the named capture variables */
            n = weir_http_regex_exec(r, clcf->http_regex, &r->uri);

            if (n == WEIR_DECLINED) {
                continue;
            }

            if (n == WEIR_ERROR) {
                return WEIR_ERROR;
            }

            r->loc_conf = clcf->loc_conf;

            rc = weir_http_core_find_location(r);

            return (rc == WEIR_ERROR) ? rc : WEIR_OK;
        }

        size = (clcf->regex->captures + 1) * 3;

        captures = weir_palloc(r->pool, size * sizeof(int));
        if (captures == NULL) {
            return WEIR_ERROR;
        }

        n = weir_regex_exec(clcf->regex, &r->uri, captures, size);

        if (n == WEIR_REGEX_NO_MATCHED) {
            continue;
        }

        if (n < 0) {
            weir_log_error(WEIR_LOG_ALERT, r->connection->log, 0,
                           "regex exec failed (%ld) on \"%.*s\" "
                           "in location \"%.*s\"", (long) n,
                           WEIR_STR_ARG(r->uri), WEIR_STR_ARG(clcf->name));
            return WEIR_ERROR;
        }

        /* the captures ($1 ...) refer to the URI that matched */
        r->captures = captures;
        r->ncaptures = n * 2;
        r->captures_data = r->uri.data;

        r->loc_conf = clcf->loc_conf;

        /* a regex location may hold nested locations too */
        rc = weir_http_core_find_location(r);

        return (rc == WEIR_ERROR) ? rc : WEIR_OK;
    }

    return rc;
}


/*
 * The static location tree: WEIR_OK for an exact match, WEIR_AGAIN for a
 * prefix match (nested locations may refine it), WEIR_DONE when only a
 * final slash is missing to match a location with auto_redirect,
 * WEIR_DECLINED when nothing matched. r->loc_conf is set to the best
 * candidate.
 */
static weir_int_t
weir_http_core_find_static_location(weir_http_request_t *r,
    weir_http_location_tree_node_t *node)
{
    size_t          len, n;
    weir_int_t      rc, rv;
    unsigned char  *uri;

    len = r->uri.len;
    uri = r->uri.data;

    rv = WEIR_DECLINED;

    for ( ;; ) {

        if (node == NULL) {
            return rv;
        }

        n = (len <= (size_t) node->len) ? len : node->len;

        rc = weir_http_location_cmp(uri, node->name, n);

        if (rc != 0) {
            node = (rc < 0) ? node->left : node->right;
            continue;
        }

        if (len > (size_t) node->len) {

            if (node->inclusive) {
                r->loc_conf = node->inclusive->loc_conf;
                rv = WEIR_AGAIN;

                node = node->tree;
                uri += n;
                len -= n;

                continue;
            }

            /* an exact-only location: longer names are to the right */
            node = node->right;
            continue;
        }

        if (len == (size_t) node->len) {

            if (node->exact) {
                r->loc_conf = node->exact->loc_conf;
                return WEIR_OK;
            }

            r->loc_conf = node->inclusive->loc_conf;
            return WEIR_AGAIN;
        }

        /* len < node->len */

        if (len + 1 == (size_t) node->len && node->auto_redirect) {
            r->loc_conf = (node->exact) ? node->exact->loc_conf
                                        : node->inclusive->loc_conf;
            rv = WEIR_DONE;
        }

        node = node->left;
    }
}


weir_int_t
weir_http_internal_redirect(weir_http_request_t *r, weir_str_t *uri,
    weir_str_t *args)
{
    weir_http_core_srv_conf_t  *cscf;

    r->uri_changes--;

    if (r->uri_changes == 0) {
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "rewrite or internal redirection cycle "
                       "while internally redirecting to \"%.*s\"",
                       WEIR_STR_ARG(*uri));

        r->main->count++;
        weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return WEIR_DONE;
    }

    r->uri = *uri;

    if (args) {
        r->args = *args;

    } else {
        weir_str_null(&r->args);
    }

    weir_log_debug(r->connection->log, 0, "internal redirect: \"%.*s?%.*s\"",
                   WEIR_STR_ARG(r->uri), WEIR_STR_ARG(r->args));

    weir_http_set_exten(r);

    /* the modules start over for the new URI */
    weir_memzero(r->ctx, sizeof(void *) * weir_http_max_module);

    cscf = weir_http_get_module_srv_conf(r, weir_http_core_module);
    r->loc_conf = cscf->ctx->loc_conf;

    weir_http_update_location_config(r);

    r->internal = 1;
    r->valid_unparsed_uri = 0;
    r->add_uri_to_alias = 0;

    /* the new run holds a reference; the caller's finalize with
     * WEIR_DONE drops its own */
    r->main->count++;

    weir_http_handler(r);

    return WEIR_DONE;
}


weir_int_t
weir_http_named_location(weir_http_request_t *r, weir_str_t *name)
{
    weir_http_core_srv_conf_t    *cscf;
    weir_http_core_loc_conf_t   **clcfp;
    weir_http_core_main_conf_t   *cmcf;

    r->main->count++;
    r->uri_changes--;

    if (r->uri_changes == 0) {
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "rewrite or internal redirection cycle "
                       "while redirect to named location \"%.*s\"",
                       WEIR_STR_ARG(*name));

        weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);
        return WEIR_DONE;
    }

    cscf = weir_http_get_module_srv_conf(r, weir_http_core_module);

    if (cscf->named_locations) {

        for (clcfp = cscf->named_locations; *clcfp; clcfp++) {

            if (!weir_str_eq(name, &(*clcfp)->name)) {
                continue;
            }

            weir_log_debug(r->connection->log, 0,
                           "using location: \"%.*s\"", WEIR_STR_ARG(*name));

            weir_memzero(r->ctx, sizeof(void *) * weir_http_max_module);

            r->loc_conf = (*clcfp)->loc_conf;
            r->internal = 1;

            /* a named location keeps the URI; find-config is skipped */
            weir_http_update_location_config(r);

            cmcf = weir_http_get_module_main_conf(r, weir_http_core_module);

            r->phase_handler = cmcf->phase_engine.location_rewrite_index;
            r->write_event_handler = weir_http_core_run_phases;

            weir_http_core_run_phases(r);

            return WEIR_DONE;
        }
    }

    weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                   "could not find named location \"%.*s\"",
                   WEIR_STR_ARG(*name));

    weir_http_finalize_request(r, WEIR_HTTP_INTERNAL_SERVER_ERROR);

    return WEIR_DONE;
}


unsigned char *
weir_http_map_uri_to_path(weir_http_request_t *r, weir_str_t *path,
    size_t *root_length, size_t reserved)
{
    size_t                      alias;
    unsigned char              *last;
    weir_http_core_loc_conf_t  *clcf;

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    alias = clcf->alias;

    if (alias && !r->valid_location) {
        weir_log_error(WEIR_LOG_ALERT, r->connection->log, 0,
                       "\"alias\" cannot be used in location \"%.*s\" "
                       "where URI was rewritten", WEIR_STR_ARG(clcf->name));
        return NULL;
    }

    if (clcf->root_lengths != NULL) {
        /* roots with variables are evaluated by the script engine,
         * which this slice does not expose for root yet */
        weir_log_error(WEIR_LOG_ERR, r->connection->log, 0,
                       "variables in \"root\" or \"alias\" are not "
                       "supported");
        return NULL;
    }

    if (alias == WEIR_MAX_SIZE_T_VALUE) {
        /* the alias of a regex location names the file itself; a name
         * try_files found is appended (add_uri_to_alias), as in nginx */
        alias = r->add_uri_to_alias ? 0 : r->uri.len;

    } else if (alias > r->uri.len) {
        alias = r->uri.len;
    }

    *root_length = clcf->root.len;

    reserved += r->uri.len - alias + 1;

    path->data = weir_pnalloc(r->pool, clcf->root.len + reserved);
    if (path->data == NULL) {
        return NULL;
    }

    last = weir_cpymem(path->data, clcf->root.data, clcf->root.len);
    last = weir_cpymem(last, r->uri.data + alias, r->uri.len - alias);
    *last = '\0';

    path->len = last - path->data;

    return last;
}


weir_int_t
weir_http_set_content_type(weir_http_request_t *r)
{
    weir_str_t                 *type;
    weir_uint_t                 hash;
    unsigned char              *lowcase;
    weir_http_core_loc_conf_t  *clcf;

    if (r->headers_out.content_type.len) {
        return WEIR_OK;
    }

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    if (r->exten.len) {

        lowcase = weir_pnalloc(r->pool, r->exten.len);
        if (lowcase == NULL) {
            return WEIR_ERROR;
        }

        hash = weir_hash_strlow(lowcase, r->exten.data, r->exten.len);

        type = weir_hash_find(&clcf->types_hash, hash, lowcase, r->exten.len);

        if (type) {
            r->headers_out.content_type_len = type->len;
            r->headers_out.content_type = *type;
            return WEIR_OK;
        }
    }

    r->headers_out.content_type_len = clcf->default_type.len;
    r->headers_out.content_type = clcf->default_type;

    return WEIR_OK;
}


weir_int_t
weir_http_set_etag(weir_http_request_t *r)
{
    unsigned char              *p;
    weir_str_t                  value;
    weir_http_header_t         *etag;
    weir_http_core_loc_conf_t  *clcf;

    clcf = weir_http_get_module_loc_conf(r, weir_http_core_module);

    if (!clcf->etag) {
        return WEIR_OK;
    }

    /* "mtime-length" in hex, built by hand: it is made for every static
     * response, and a printf-style call measured as much as the rest of
     * the static handler */

    p = weir_pnalloc(r->pool, 2 * WEIR_INT_T_LEN + sizeof("\"-\""));
    if (p == NULL) {
        return WEIR_ERROR;
    }

    value.data = p;

    *p++ = '"';
    p = weir_sprint_hex(p, (uint64_t) r->headers_out.last_modified_time);
    *p++ = '-';
    p = weir_sprint_hex(p, (uint64_t) r->headers_out.content_length_n);
    *p++ = '"';
    *p = '\0';

    value.len = p - value.data;

    weir_http_clear_header_out(&r->headers_out.etag);

    etag = weir_http_add_header_out(r, "ETag", &value);
    if (etag == NULL) {
        return WEIR_ERROR;
    }

    r->headers_out.etag = etag;

    return WEIR_OK;
}


void
weir_http_weak_etag(weir_http_request_t *r)
{
    unsigned char       *p;
    weir_http_header_t  *etag;

    etag = r->headers_out.etag;

    if (etag == NULL) {
        return;
    }

    if (etag->value.len > 2
        && etag->value.data[0] == 'W'
        && etag->value.data[1] == '/')
    {
        return;
    }

    if (etag->value.len < 1 || etag->value.data[0] != '"') {
        /* not a valid entity tag: drop it rather than send a lie */
        weir_http_clear_header_out(&r->headers_out.etag);
        return;
    }

    p = weir_pnalloc(r->pool, etag->value.len + 2);
    if (p == NULL) {
        weir_http_clear_header_out(&r->headers_out.etag);
        return;
    }

    p[0] = 'W';
    p[1] = '/';
    weir_memcpy(p + 2, etag->value.data, etag->value.len);

    etag->value.len += 2;
    etag->value.data = p;
}


weir_http_header_t *
weir_http_add_header_out(weir_http_request_t *r, const char *name,
    weir_str_t *value)
{
    size_t               len;
    weir_http_header_t  *h;

    h = weir_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NULL;
    }

    len = strlen(name);

    h->lowcase_key = weir_pnalloc(r->pool, len);
    if (h->lowcase_key == NULL) {
        h->hash = 0;
        return NULL;
    }

    /* name is usually a literal; the key points at it for the request's
     * life, so callers must pass memory that outlives the request */
    h->key.len = len;
    h->key.data = (unsigned char *) (uintptr_t) name;

    h->hash = weir_hash_strlow(h->lowcase_key, h->key.data, len);

    if (h->hash == 0) {
        /* 0 marks a deleted header */
        h->hash = 1;
    }

    h->token = weir_http_header_token(h->lowcase_key, len, h->hash);
    h->value = *value;
    h->next = NULL;

    switch (h->token) {

    case WEIR_HTTP_HDR_SERVER:
        r->headers_out.server = h;
        break;

    case WEIR_HTTP_HDR_DATE:
        r->headers_out.date = h;
        break;

    case WEIR_HTTP_HDR_CONTENT_LENGTH:
        r->headers_out.content_length = h;
        break;

    case WEIR_HTTP_HDR_CONTENT_ENCODING:
        r->headers_out.content_encoding = h;
        break;

    case WEIR_HTTP_HDR_LOCATION:
        r->headers_out.location = h;
        break;

    case WEIR_HTTP_HDR_REFRESH:
        r->headers_out.refresh = h;
        break;

    case WEIR_HTTP_HDR_LAST_MODIFIED:
        r->headers_out.last_modified = h;
        break;

    case WEIR_HTTP_HDR_CONTENT_RANGE:
        r->headers_out.content_range = h;
        break;

    case WEIR_HTTP_HDR_ACCEPT_RANGES:
        r->headers_out.accept_ranges = h;
        break;

    case WEIR_HTTP_HDR_WWW_AUTHENTICATE:
        r->headers_out.www_authenticate = h;
        break;

    case WEIR_HTTP_HDR_EXPIRES:
        r->headers_out.expires = h;
        break;

    case WEIR_HTTP_HDR_ETAG:
        r->headers_out.etag = h;
        break;

    default:
        break;
    }

    return h;
}


void
weir_http_clear_header_out(weir_http_header_t **h)
{
    if (*h) {
        (*h)->hash = 0;
        *h = NULL;
    }
}


weir_int_t
weir_http_send_header(weir_http_request_t *r)
{
    if (r->post_action) {
        return WEIR_OK;
    }

    if (r->header_sent) {
        weir_log_error(WEIR_LOG_ALERT, r->connection->log, 0,
                       "header already sent");
        return WEIR_ERROR;
    }

    if (r->err_status) {
        r->headers_out.status = r->err_status;
        r->headers_out.status_line.len = 0;
    }

    return weir_http_top_header_filter(r);
}


weir_int_t
weir_http_output_filter(weir_http_request_t *r, weir_chain_t *in)
{
    weir_int_t  rc;

    rc = weir_http_top_body_filter(r, in);

    if (rc == WEIR_ERROR) {
        /* the connection cannot carry this response any further */
        r->connection->error = 1;
    }

    return rc;
}
