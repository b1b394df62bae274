#include "weir_config.h"
#include "weir_core.h"
#include "weir_http.h"


/*
 * The http block: it creates the configuration contexts of every HTTP
 * module, parses the block, merges the server and location levels,
 * builds each server's location lookup (a longest-prefix tree of static
 * locations, regex locations in order, named locations), the server
 * name lookup of every address, and the listening sockets.
 */


static weir_int_t weir_http_init_module(weir_cycle_t *cycle);
static weir_int_t weir_http_init_process(weir_cycle_t *cycle);
static char *weir_http_block(weir_conf_t *cf, weir_command_t *cmd,
    void *conf);
static char *weir_http_merge_servers(weir_conf_t *cf,
    weir_http_core_main_conf_t *cmcf, weir_http_module_t *module,
    weir_uint_t ctx_index);
static char *weir_http_merge_locations(weir_conf_t *cf,
    weir_queue_t *locations, void **loc_conf, weir_http_module_t *module,
    weir_uint_t ctx_index);
static weir_int_t weir_http_init_locations(weir_conf_t *cf,
    weir_http_core_srv_conf_t *cscf, weir_http_core_loc_conf_t *pclcf);
static weir_http_location_tree_node_t *weir_http_build_location_tree(
    weir_conf_t *cf, weir_http_location_queue_t **lqs, weir_uint_t n,
    size_t prefix);
static weir_http_location_tree_node_t *weir_http_build_location_level(
    weir_conf_t *cf, weir_http_location_queue_t **lqs, weir_uint_t *starts,
    weir_uint_t *ends, weir_uint_t lo, weir_uint_t hi,
    weir_http_location_queue_t **all, size_t prefix);
static int weir_http_cmp_locations(const void *one, const void *two);

static weir_int_t weir_http_add_address(weir_conf_t *cf,
    weir_http_core_srv_conf_t *cscf, weir_http_conf_port_t *port,
    weir_http_listen_opt_t *lsopt);
static weir_int_t weir_http_optimize_servers(weir_conf_t *cf,
    weir_http_core_main_conf_t *cmcf, weir_array_t *ports);
static weir_int_t weir_http_server_names(weir_conf_t *cf,
    weir_http_conf_addr_t *addr, weir_http_virtual_names_t **vnp);
static int weir_http_cmp_conf_addrs(const void *one, const void *two);
static int weir_http_cmp_wildcards(const void *one, const void *two);
static weir_int_t weir_http_add_listening(weir_conf_t *cf,
    weir_http_conf_addr_t *addr, weir_http_conf_addr_t *served,
    weir_uint_t nserved);
static weir_http_core_srv_conf_t *weir_http_find_virtual_server(
    weir_connection_t *c, weir_http_request_t *r,
    weir_http_virtual_names_t *vn, weir_str_t *host);


weir_uint_t  weir_http_max_module;


static weir_command_t  weir_http_commands[] = {

    { weir_string("http"),
      WEIR_MAIN_CONF|WEIR_CONF_BLOCK|WEIR_CONF_NOARGS,
      weir_http_block,
      0,
      0,
      NULL },

      weir_null_command
};


static weir_core_module_t  weir_http_module_ctx = {
    weir_string("http"),
    NULL,
    NULL
};


weir_module_t  weir_http_module = {
    WEIR_MODULE_V1,
    &weir_http_module_ctx,                  /* module context */
    weir_http_commands,                     /* module directives */
    WEIR_CORE_MODULE,                       /* module type */
    NULL,                                   /* init master */
    weir_http_init_module,                  /* init module */
    weir_http_init_process,                 /* init process */
    NULL,                                   /* exit process */
    NULL,                                   /* exit master */
    WEIR_MODULE_V1_PADDING
};


/*
 * In the master, once the configuration is accepted: link the filter
 * chains of this cycle (see weir_http_link_filters) and create the
 * directory that request bodies spill into, owned by the workers' user
 * so that they can write there.
 */

static weir_int_t
weir_http_init_module(weir_cycle_t *cycle)
{
    weir_str_t         dir;
    weir_core_conf_t  *ccf;

    if (cycle->conf_ctx[weir_http_module.index] == NULL) {
        return WEIR_OK;
    }

    if (weir_http_link_filters(cycle, cycle->log) != WEIR_OK) {
        return WEIR_ERROR;
    }

    if (weir_pstrfmt(cycle->pool, &dir, "%.*sclient_body_temp",
                     WEIR_STR_ARG(cycle->prefix))
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    if (mkdir((const char *) dir.data, 0700) == -1) {
        if (weir_errno != WEIR_EEXIST) {
            /* not fatal: bodies then spill into the system's /tmp */
            weir_log_error(WEIR_LOG_WARN, cycle->log, weir_errno,
                           "mkdir() \"%.*s\" failed", WEIR_STR_ARG(dir));
        }

        return WEIR_OK;
    }

    ccf = (weir_core_conf_t *) weir_get_conf(cycle->conf_ctx,
                                             weir_core_module);

    if (geteuid() == 0 && ccf->user != (uid_t) WEIR_CONF_UNSET_UINT) {
        if (chown((const char *) dir.data, ccf->user, ccf->group) == -1) {
            weir_log_error(WEIR_LOG_WARN, cycle->log, weir_errno,
                           "chown(\"%.*s\", %d) failed",
                           WEIR_STR_ARG(dir), (int) ccf->user);
        }
    }

    return WEIR_OK;
}


static weir_int_t
weir_http_init_process(weir_cycle_t *cycle)
{
    if (cycle->conf_ctx[weir_http_module.index] == NULL) {
        return WEIR_OK;
    }

    return weir_http_link_filters(cycle, cycle->log);
}


static char *
weir_http_block(weir_conf_t *cf, weir_command_t *cmd, void *conf)
{
    char                        *rv;
    weir_int_t                   n;
    weir_uint_t                  mi, m, s;
    weir_conf_t                  pcf;
    weir_module_t               *module;
    weir_http_module_t          *hm;
    weir_http_conf_ctx_t        *ctx;
    weir_http_core_srv_conf_t  **cscfp;
    weir_http_core_loc_conf_t   *clcf;
    weir_http_core_main_conf_t  *cmcf;

    (void) cmd;

    if (*(weir_http_conf_ctx_t **) conf) {
        return "is duplicate";
    }

    ctx = weir_pcalloc(cf->pool, sizeof(weir_http_conf_ctx_t));
    if (ctx == NULL) {
        return WEIR_CONF_ERROR;
    }

    *(weir_http_conf_ctx_t **) conf = ctx;

    n = weir_count_modules(cf->cycle, WEIR_HTTP_MODULE);
    if (n <= 0) {
        return WEIR_CONF_ERROR;
    }

    weir_http_max_module = (weir_uint_t) n;

    ctx->main_conf = weir_pcalloc(cf->pool,
                                  sizeof(void *) * weir_http_max_module);
    ctx->srv_conf = weir_pcalloc(cf->pool,
                                 sizeof(void *) * weir_http_max_module);
    ctx->loc_conf = weir_pcalloc(cf->pool,
                                 sizeof(void *) * weir_http_max_module);

    if (ctx->main_conf == NULL || ctx->srv_conf == NULL
        || ctx->loc_conf == NULL)
    {
        return WEIR_CONF_ERROR;
    }

    for (m = 0; cf->cycle->modules[m]; m++) {
        module = cf->cycle->modules[m];

        if (module->type != WEIR_HTTP_MODULE) {
            continue;
        }

        hm = module->ctx;
        mi = module->ctx_index;

        if (hm->create_main_conf) {
            ctx->main_conf[mi] = hm->create_main_conf(cf);
            if (ctx->main_conf[mi] == NULL) {
                return WEIR_CONF_ERROR;
            }
        }

        if (hm->create_srv_conf) {
            ctx->srv_conf[mi] = hm->create_srv_conf(cf);
            if (ctx->srv_conf[mi] == NULL) {
                return WEIR_CONF_ERROR;
            }
        }

        if (hm->create_loc_conf) {
            ctx->loc_conf[mi] = hm->create_loc_conf(cf);
            if (ctx->loc_conf[mi] == NULL) {
                return WEIR_CONF_ERROR;
            }
        }
    }

    clcf = ctx->loc_conf[weir_http_core_module.ctx_index];
    clcf->loc_conf = ctx->loc_conf;

    pcf = *cf;
    cf->ctx = ctx;

    for (m = 0; cf->cycle->modules[m]; m++) {
        module = cf->cycle->modules[m];

        if (module->type != WEIR_HTTP_MODULE) {
            continue;
        }

        hm = module->ctx;

        if (hm->preconfiguration && hm->preconfiguration(cf) != WEIR_OK) {
            goto failed;
        }
    }

    cf->module_type = WEIR_HTTP_MODULE;
    cf->cmd_type = WEIR_HTTP_MAIN_CONF;

    rv = weir_conf_parse(cf, NULL);

    if (rv != WEIR_CONF_OK) {
        *cf = pcf;
        return rv;
    }

    cmcf = ctx->main_conf[weir_http_core_module.ctx_index];

    for (m = 0; cf->cycle->modules[m]; m++) {
        module = cf->cycle->modules[m];

        if (module->type != WEIR_HTTP_MODULE) {
            continue;
        }

        hm = module->ctx;
        mi = module->ctx_index;

        cf->ctx = ctx;

        if (hm->init_main_conf) {
            rv = hm->init_main_conf(cf, ctx->main_conf[mi]);
            if (rv != WEIR_CONF_OK) {
                goto failed_rv;
            }
        }

        rv = weir_http_merge_servers(cf, cmcf, hm, mi);
        if (rv != WEIR_CONF_OK) {
            goto failed_rv;
        }
    }

    cf->ctx = ctx;

    cscfp = cmcf->servers.elts;

    for (s = 0; s < cmcf->servers.nelts; s++) {
        clcf = cscfp[s]->ctx->loc_conf[weir_http_core_module.ctx_index];

        if (weir_http_init_locations(cf, cscfp[s], clcf) != WEIR_OK) {
            goto failed;
        }
    }

    /*
     * postconfiguration may still ask for variable indices, so the
     * variables are checked after it (as nginx does)
     */

    for (m = 0; cf->cycle->modules[m]; m++) {
        module = cf->cycle->modules[m];

        if (module->type != WEIR_HTTP_MODULE) {
            continue;
        }

        hm = module->ctx;

        if (hm->postconfiguration && hm->postconfiguration(cf) != WEIR_OK) {
            goto failed;
        }
    }

    if (weir_http_variables_init_vars(cf) != WEIR_OK) {
        goto failed;
    }

    *cf = pcf;

    if (weir_http_init_phase_engine(cf, cmcf) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    if (weir_http_init_filters(cf) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    if (weir_http_optimize_servers(cf, cmcf, cmcf->ports) != WEIR_OK) {
        return WEIR_CONF_ERROR;
    }

    return WEIR_CONF_OK;

failed:

    *cf = pcf;

    return WEIR_CONF_ERROR;

failed_rv:

    *cf = pcf;

    return rv;
}


/* merges the http level into every server, and each level into its
 * locations, for one module */

static char *
weir_http_merge_servers(weir_conf_t *cf, weir_http_core_main_conf_t *cmcf,
    weir_http_module_t *module, weir_uint_t ctx_index)
{
    char                        *rv;
    weir_uint_t                  s;
    weir_http_conf_ctx_t        *ctx, saved;
    weir_http_core_loc_conf_t   *clcf;
    weir_http_core_srv_conf_t  **cscfp;

    cscfp = cmcf->servers.elts;
    ctx = (weir_http_conf_ctx_t *) cf->ctx;
    saved = *ctx;
    rv = WEIR_CONF_OK;

    for (s = 0; s < cmcf->servers.nelts; s++) {

        /* merge the server{}s' srv_conf's */

        ctx->srv_conf = cscfp[s]->ctx->srv_conf;

        if (module->merge_srv_conf) {
            rv = module->merge_srv_conf(cf, saved.srv_conf[ctx_index],
                                        cscfp[s]->ctx->srv_conf[ctx_index]);
            if (rv != WEIR_CONF_OK) {
                goto done;
            }
        }

        if (module->merge_loc_conf) {

            /* merge the server{}'s loc_conf */

            ctx->loc_conf = cscfp[s]->ctx->loc_conf;

            rv = module->merge_loc_conf(cf, saved.loc_conf[ctx_index],
                                        cscfp[s]->ctx->loc_conf[ctx_index]);
            if (rv != WEIR_CONF_OK) {
                goto done;
            }

            /* merge the locations{}' loc_conf's */

            clcf = cscfp[s]->ctx->loc_conf[weir_http_core_module.ctx_index];

            rv = weir_http_merge_locations(cf, clcf->locations,
                                           cscfp[s]->ctx->loc_conf,
                                           module, ctx_index);
            if (rv != WEIR_CONF_OK) {
                goto done;
            }
        }
    }

done:

    *ctx = saved;

    return rv;
}


static char *
weir_http_merge_locations(weir_conf_t *cf, weir_queue_t *locations,
    void **loc_conf, weir_http_module_t *module, weir_uint_t ctx_index)
{
    char                        *rv;
    weir_queue_t                *q;
    weir_http_conf_ctx_t        *ctx, saved;
    weir_http_core_loc_conf_t   *clcf;
    weir_http_location_queue_t  *lq;

    if (locations == NULL) {
        return WEIR_CONF_OK;
    }

    ctx = (weir_http_conf_ctx_t *) cf->ctx;
    saved = *ctx;

    for (q = weir_queue_head(locations);
         q != weir_queue_sentinel(locations);
         q = weir_queue_next(q))
    {
        lq = (weir_http_location_queue_t *) q;

        clcf = lq->exact ? lq->exact : lq->inclusive;
        ctx->loc_conf = clcf->loc_conf;

        rv = module->merge_loc_conf(cf, loc_conf[ctx_index],
                                    clcf->loc_conf[ctx_index]);
        if (rv != WEIR_CONF_OK) {
            *ctx = saved;
            return rv;
        }

        rv = weir_http_merge_locations(cf, clcf->locations, clcf->loc_conf,
                                       module, ctx_index);
        if (rv != WEIR_CONF_OK) {
            *ctx = saved;
            return rv;
        }
    }

    *ctx = saved;

    return WEIR_CONF_OK;
}


weir_int_t
weir_http_add_location(weir_conf_t *cf, weir_queue_t **locations,
    weir_http_core_loc_conf_t *clcf)
{
    weir_http_location_queue_t  *lq;

    if (*locations == NULL) {
        *locations = weir_palloc(cf->temp_pool, sizeof(weir_queue_t));
        if (*locations == NULL) {
            return WEIR_ERROR;
        }

        weir_queue_init(*locations);
    }

    lq = weir_pcalloc(cf->temp_pool, sizeof(weir_http_location_queue_t));
    if (lq == NULL) {
        return WEIR_ERROR;
    }

    if (clcf->exact_match || clcf->regex || clcf->named || clcf->noname) {
        lq->exact = clcf;

    } else {
        lq->inclusive = clcf;
    }

    lq->name = &clcf->name;
    lq->file_name = cf->conf_file ? cf->conf_file->file.name.data : NULL;
    lq->line = cf->conf_file ? cf->conf_file->line : 0;

    weir_queue_init(&lq->list);

    weir_queue_insert_tail(*locations, &lq->queue);

    return WEIR_OK;
}


/*
 * Sorts one level of locations into the lookup structures of pclcf (and
 * of cscf for named locations), then does the same for every location's
 * own nested level.
 */

static weir_int_t
weir_http_init_locations(weir_conf_t *cf, weir_http_core_srv_conf_t *cscf,
    weir_http_core_loc_conf_t *pclcf)
{
    weir_uint_t                   i, j, n, nstatic, nregex, nnamed;
    weir_queue_t                 *q;
    weir_http_core_loc_conf_t    *clcf, **regex, **named;
    weir_http_location_queue_t   *lq, **statics;

    if (pclcf->locations == NULL) {
        return WEIR_OK;
    }

    n = 0;

    for (q = weir_queue_head(pclcf->locations);
         q != weir_queue_sentinel(pclcf->locations);
         q = weir_queue_next(q))
    {
        n++;
    }

    statics = weir_palloc(cf->temp_pool,
                          n * sizeof(weir_http_location_queue_t *));
    regex = weir_palloc(cf->pool, (n + 1) * sizeof(void *));
    named = weir_palloc(cf->pool, (n + 1) * sizeof(void *));

    if (statics == NULL || regex == NULL || named == NULL) {
        return WEIR_ERROR;
    }

    nstatic = 0;
    nregex = 0;
    nnamed = 0;

    for (q = weir_queue_head(pclcf->locations);
         q != weir_queue_sentinel(pclcf->locations);
         q = weir_queue_next(q))
    {
        lq = (weir_http_location_queue_t *) q;
        clcf = lq->exact ? lq->exact : lq->inclusive;

        if (weir_http_init_locations(cf, NULL, clcf) != WEIR_OK) {
            return WEIR_ERROR;
        }

        if (clcf->noname) {
            continue;
        }

        if (clcf->named) {
            for (j = 0; j < nnamed; j++) {
                if (weir_str_eq(&named[j]->name, &clcf->name)) {
                    weir_log_error(WEIR_LOG_EMERG, cf->log, 0,
                                   "duplicate location \"%.*s\" in %s:%lu",
                                   WEIR_STR_ARG(clcf->name),
                                   (char *) lq->file_name,
                                   (unsigned long) lq->line);
                    return WEIR_ERROR;
                }
            }

            named[nnamed++] = clcf;
            continue;
        }

        if (clcf->regex) {
            regex[nregex++] = clcf;
            continue;
        }

        statics[nstatic++] = lq;
    }

    regex[nregex] = NULL;
    named[nnamed] = NULL;

    if (nregex) {
        pclcf->regex_locations = regex;
    }

    if (nnamed) {
        if (cscf == NULL) {
            /* the location directive refuses these already */
            return WEIR_ERROR;
        }

        cscf->named_locations = named;
    }

    if (nstatic == 0) {
        return WEIR_OK;
    }

    /* the same name twice: "= /a" with "/a" share one node, else error */

    qsort(statics, nstatic, sizeof(weir_http_location_queue_t *),
          weir_http_cmp_locations);

    for (i = 1, j = 0; i < nstatic; i++) {
        lq = statics[i];

        if (!weir_str_eq(statics[j]->name, lq->name)) {
            statics[++j] = lq;
            continue;
        }

        if ((statics[j]->exact && lq->exact)
            || (statics[j]->inclusive && lq->inclusive))
        {
            /* name the later one (the sort may have swapped them) */
            if (statics[j]->file_name == lq->file_name
                && statics[j]->line > lq->line)
            {
                lq = statics[j];
            }

            weir_log_error(WEIR_LOG_EMERG, cf->log, 0,
                           "duplicate location \"%.*s\" in %s:%lu",
                           WEIR_STR_ARG(*lq->name), (char *) lq->file_name,
                           (unsigned long) lq->line);
            return WEIR_ERROR;
        }

        if (lq->exact) {
            statics[j]->exact = lq->exact;

        } else {
            statics[j]->inclusive = lq->inclusive;
        }
    }

    nstatic = j + 1;

    pclcf->static_locations = weir_http_build_location_tree(cf, statics,
                                                            nstatic, 0);
    if (pclcf->static_locations == NULL) {
        return WEIR_ERROR;
    }

    return WEIR_OK;
}


int
weir_http_location_cmp(const unsigned char *a, const unsigned char *b,
    size_t n)
{
    int     ca, cb;
    size_t  i;

    for (i = 0; i < n; i++) {
        if (a[i] == b[i]) {
            continue;
        }

        /* as nginx's ngx_filename_cmp(): "/" is the lowest character */
        ca = (a[i] == '/') ? 0 : a[i] + 1;
        cb = (b[i] == '/') ? 0 : b[i] + 1;

        return ca - cb;
    }

    return 0;
}


/* weir_http_location_cmp() order, a prefix before the names it starts */

static int
weir_http_cmp_locations(const void *one, const void *two)
{
    int                                rc;
    size_t                             len;
    const weir_http_location_queue_t  *a, *b;

    a = *(weir_http_location_queue_t * const *) one;
    b = *(weir_http_location_queue_t * const *) two;

    len = (a->name->len < b->name->len) ? a->name->len : b->name->len;

    rc = weir_http_location_cmp(a->name->data, b->name->data, len);
    if (rc != 0) {
        return rc;
    }

    if (a->name->len == b->name->len) {
        return 0;
    }

    return (a->name->len < b->name->len) ? -1 : 1;
}


/*
 * The tree of one level, from lqs sorted by name (unique names), whose
 * names all start with the same prefix bytes already matched above.
 *
 * An inclusive (prefix) location owns the locations that start with its
 * name: they go to its node's "tree", named by what follows the prefix,
 * because the lookup only descends there once the prefix matched. The
 * remaining entries of the level form a balanced binary search tree.
 */

static weir_http_location_tree_node_t *
weir_http_build_location_tree(weir_conf_t *cf,
    weir_http_location_queue_t **lqs, weir_uint_t n, size_t prefix)
{
    size_t                       len;
    weir_uint_t                  i, k, top, *starts, *ends;
    weir_http_location_queue_t  *lq, **tops;

    tops = weir_palloc(cf->temp_pool, n * sizeof(weir_http_location_queue_t *));
    starts = weir_palloc(cf->temp_pool, n * sizeof(weir_uint_t));
    ends = weir_palloc(cf->temp_pool, n * sizeof(weir_uint_t));

    if (tops == NULL || starts == NULL || ends == NULL) {
        return NULL;
    }

    top = 0;
    i = 0;

    while (i < n) {
        lq = lqs[i];
        k = i + 1;

        if (lq->inclusive) {
            len = lq->name->len;

            while (k < n && lqs[k]->name->len > len
                   && memcmp(lqs[k]->name->data, lq->name->data, len) == 0)
            {
                k++;
            }
        }

        tops[top] = lq;
        starts[top] = i + 1;
        ends[top] = k;
        top++;

        i = k;
    }

    return weir_http_build_location_level(cf, tops, starts, ends, 0, top,
                                          lqs, prefix);
}


static weir_http_location_tree_node_t *
weir_http_build_location_level(weir_conf_t *cf,
    weir_http_location_queue_t **lqs, weir_uint_t *starts, weir_uint_t *ends,
    weir_uint_t lo, weir_uint_t hi, weir_http_location_queue_t **all,
    size_t prefix)
{
    size_t                           len;
    weir_uint_t                      mid;
    weir_http_location_queue_t      *lq;
    weir_http_location_tree_node_t  *node;

    mid = lo + (hi - lo) / 2;
    lq = lqs[mid];

    len = lq->name->len - prefix;

    if (len > 255) {
        weir_log_error(WEIR_LOG_EMERG, cf->log, 0,
                       "location \"%.*s\" is too long in %s:%lu",
                       WEIR_STR_ARG(*lq->name), (char *) lq->file_name,
                       (unsigned long) lq->line);
        return NULL;
    }

    node = weir_pcalloc(cf->pool,
                        offsetof(weir_http_location_tree_node_t, name)
                        + len + 1);
    if (node == NULL) {
        return NULL;
    }

    node->exact = lq->exact;
    node->inclusive = lq->inclusive;

    node->auto_redirect = (unsigned char)
                          ((lq->exact && lq->exact->auto_redirect)
                           || (lq->inclusive && lq->inclusive->auto_redirect));

    node->len = (unsigned char) len;
    weir_memcpy(node->name, lq->name->data + prefix, len);

    if (mid > lo) {
        node->left = weir_http_build_location_level(cf, lqs, starts, ends,
                                                    lo, mid, all, prefix);
        if (node->left == NULL) {
            return NULL;
        }
    }

    if (mid + 1 < hi) {
        node->right = weir_http_build_location_level(cf, lqs, starts, ends,
                                                     mid + 1, hi, all,
                                                     prefix);
        if (node->right == NULL) {
            return NULL;
        }
    }

    if (ends[mid] > starts[mid]) {
        node->tree = weir_http_build_location_tree(cf, &all[starts[mid]],
                                                   ends[mid] - starts[mid],
                                                   lq->name->len);
        if (node->tree == NULL) {
            return NULL;
        }
    }

    return node;
}


/*
 * Listen addresses: ports (family + port) hold addresses, addresses hold
 * the servers that listen there. Called by the listen directive, so that
 * a conflict is reported at its line.
 */

weir_int_t
weir_http_add_listen(weir_conf_t *cf, weir_http_core_srv_conf_t *cscf,
    weir_http_listen_opt_t *lsopt)
{
    in_port_t                    p;
    weir_uint_t                  i;
    struct sockaddr             *sa;
    weir_http_conf_port_t       *port;
    weir_http_core_main_conf_t  *cmcf;

    cmcf = weir_http_conf_get_module_main_conf(cf, weir_http_core_module);

    if (cmcf->ports == NULL) {
        cmcf->ports = weir_array_create(cf->temp_pool, 2,
                                        sizeof(weir_http_conf_port_t));
        if (cmcf->ports == NULL) {
            return WEIR_ERROR;
        }
    }

    sa = &lsopt->sockaddr.sockaddr;
    p = (sa->sa_family == AF_UNIX) ? 0 : weir_inet_get_port(sa);

    port = cmcf->ports->elts;
    for (i = 0; i < cmcf->ports->nelts; i++) {

        if (p != port[i].port || sa->sa_family != port[i].family) {
            continue;
        }

        return weir_http_add_address(cf, cscf, &port[i], lsopt);
    }

    port = weir_array_push(cmcf->ports);
    if (port == NULL) {
        return WEIR_ERROR;
    }

    port->family = sa->sa_family;
    port->port = p;

    if (weir_array_init(&port->addrs, cf->temp_pool, 2,
                        sizeof(weir_http_conf_addr_t))
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    return weir_http_add_address(cf, cscf, port, lsopt);
}


static weir_int_t
weir_http_add_address(weir_conf_t *cf, weir_http_core_srv_conf_t *cscf,
    weir_http_conf_port_t *port, weir_http_listen_opt_t *lsopt)
{
    weir_uint_t                  i, s;
    weir_http_conf_addr_t       *addr;
    weir_http_core_srv_conf_t  **server;

    addr = port->addrs.elts;

    for (i = 0; i < port->addrs.nelts; i++) {

        if (weir_cmp_sockaddr(&lsopt->sockaddr.sockaddr, lsopt->socklen,
                              &addr[i].opt.sockaddr.sockaddr,
                              addr[i].opt.socklen, 1)
            != WEIR_OK)
        {
            continue;
        }

        /* the address is already in the list */

        server = addr[i].servers.elts;
        for (s = 0; s < addr[i].servers.nelts; s++) {
            if (server[s] == cscf) {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "a duplicate listen %.*s",
                                    WEIR_STR_ARG(lsopt->addr_text));
                return WEIR_ERROR;
            }
        }

        /*
         * TLS is a property of the address, as in nginx: "ssl" on any
         * listen of it makes the one socket TLS for every server there;
         * only the socket options below may be given once
         */
        if (lsopt->ssl) {
            addr[i].opt.ssl = 1;
        }

        /* so is HTTP/2 of "listen ... http2" (nginx 1.22 style) */
        if (lsopt->http2) {
            addr[i].opt.http2 = 1;
        }

        if (lsopt->set) {
            if (addr[i].opt.set) {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "duplicate listen options for %.*s",
                                    WEIR_STR_ARG(lsopt->addr_text));
                return WEIR_ERROR;
            }

            addr[i].opt.set = 1;
            addr[i].opt.bind = lsopt->bind;
            addr[i].opt.ipv6only = lsopt->ipv6only;
            addr[i].opt.deferred_accept = lsopt->deferred_accept;
            addr[i].opt.reuseport = lsopt->reuseport;
            addr[i].opt.backlog = lsopt->backlog;
            addr[i].opt.rcvbuf = lsopt->rcvbuf;
            addr[i].opt.sndbuf = lsopt->sndbuf;
        }

        if (lsopt->default_server) {
            if (addr[i].opt.default_server) {
                weir_conf_log_error(WEIR_LOG_EMERG, cf, 0,
                                    "a duplicate default server for %.*s",
                                    WEIR_STR_ARG(lsopt->addr_text));
                return WEIR_ERROR;
            }

            addr[i].opt.default_server = 1;
            addr[i].default_server = cscf;
        }

        server = weir_array_push(&addr[i].servers);
        if (server == NULL) {
            return WEIR_ERROR;
        }

        *server = cscf;

        return WEIR_OK;
    }

    addr = weir_array_push(&port->addrs);
    if (addr == NULL) {
        return WEIR_ERROR;
    }

    addr->opt = *lsopt;
    addr->default_server = cscf;

    if (weir_array_init(&addr->servers, cf->temp_pool, 2,
                        sizeof(weir_http_core_srv_conf_t *))
        != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    server = weir_array_push(&addr->servers);
    if (server == NULL) {
        return WEIR_ERROR;
    }

    *server = cscf;

    return WEIR_OK;
}


/* specific addresses with their own socket first, the wildcard last */

static int
weir_http_cmp_conf_addrs(const void *one, const void *two)
{
    const weir_http_conf_addr_t  *first, *second;

    first = one;
    second = two;

    if (first->opt.wildcard != second->opt.wildcard) {
        return first->opt.wildcard ? 1 : -1;
    }

    if (first->opt.bind != second->opt.bind) {
        return first->opt.bind ? -1 : 1;
    }

    return 0;
}


/*
 * One listening socket per address with "bind" (or options that need
 * their own socket) and per address of a port without a wildcard; the
 * others share the port's wildcard socket and are told apart by the
 * local address of each connection.
 */

static weir_int_t
weir_http_optimize_servers(weir_conf_t *cf, weir_http_core_main_conf_t *cmcf,
    weir_array_t *ports)
{
    weir_uint_t              p, a, last, nshared;
    weir_http_conf_addr_t   *addr, *shared;
    weir_http_conf_port_t   *port;

    (void) cmcf;

    if (ports == NULL) {
        return WEIR_OK;
    }

    port = ports->elts;

    for (p = 0; p < ports->nelts; p++) {

        /*
         * qsort is not stable, but addresses that compare equal are
         * interchangeable here
         */
        qsort(port[p].addrs.elts, port[p].addrs.nelts,
              sizeof(weir_http_conf_addr_t), weir_http_cmp_conf_addrs);

        addr = port[p].addrs.elts;
        last = port[p].addrs.nelts - 1;

        if (!addr[last].opt.wildcard) {
            for (a = 0; a <= last; a++) {
                if (weir_http_add_listening(cf, &addr[a], &addr[a], 1)
                    != WEIR_OK)
                {
                    return WEIR_ERROR;
                }
            }

            continue;
        }

        /* a wildcard address: the ones without "bind" share its socket */

        shared = weir_palloc(cf->temp_pool,
                             (last + 1) * sizeof(weir_http_conf_addr_t));
        if (shared == NULL) {
            return WEIR_ERROR;
        }

        nshared = 0;

        for (a = 0; a < last; a++) {
            if (addr[a].opt.bind) {
                if (weir_http_add_listening(cf, &addr[a], &addr[a], 1)
                    != WEIR_OK)
                {
                    return WEIR_ERROR;
                }

                continue;
            }

            shared[nshared++] = addr[a];
        }

        shared[nshared++] = addr[last];

        if (weir_http_add_listening(cf, &addr[last], shared, nshared)
            != WEIR_OK)
        {
            return WEIR_ERROR;
        }
    }

    return WEIR_OK;
}


static weir_int_t
weir_http_add_listening(weir_conf_t *cf, weir_http_conf_addr_t *addr,
    weir_http_conf_addr_t *served, weir_uint_t nserved)
{
    weir_uint_t                  i, s;
    weir_listening_t            *ls;
    weir_http_port_t            *hport;
    weir_http_addr_conf_t       *conf;
    weir_http_core_srv_conf_t  **server;

    ls = weir_create_listening(cf, &addr->opt.sockaddr.sockaddr,
                               addr->opt.socklen);
    if (ls == NULL) {
        return WEIR_ERROR;
    }

    ls->handler = weir_http_init_connection;

    /* the listening socket's pool: the first server's setting */
    ls->pool_size = addr->default_server->connection_pool_size;

    ls->backlog = addr->opt.backlog;
    ls->rcvbuf = addr->opt.rcvbuf;
    ls->sndbuf = addr->opt.sndbuf;
    ls->ipv6only = addr->opt.ipv6only;
    ls->reuseport = addr->opt.reuseport;
    ls->deferred_accept = addr->opt.deferred_accept;
    ls->default_server = addr->opt.default_server;

    hport = weir_pcalloc(cf->pool, sizeof(weir_http_port_t));
    if (hport == NULL) {
        return WEIR_ERROR;
    }

    hport->naddrs = nserved;
    hport->sockaddrs = weir_pcalloc(cf->pool,
                                    nserved * sizeof(struct sockaddr));
    hport->socklens = weir_pcalloc(cf->pool, nserved * sizeof(socklen_t));
    hport->addrs = weir_pcalloc(cf->pool, nserved * sizeof(weir_sockaddr_t));
    hport->confs = weir_pcalloc(cf->pool,
                                nserved * sizeof(weir_http_addr_conf_t));

    if (hport->sockaddrs == NULL || hport->socklens == NULL
        || hport->addrs == NULL || hport->confs == NULL)
    {
        return WEIR_ERROR;
    }

    for (i = 0; i < nserved; i++) {
        weir_memcpy(&hport->addrs[i], &served[i].opt.sockaddr,
                    served[i].opt.socklen);
        weir_memcpy(&hport->sockaddrs[i], &served[i].opt.sockaddr,
                    sizeof(struct sockaddr));
        hport->socklens[i] = served[i].opt.socklen;

        conf = &hport->confs[i];
        conf->default_server = served[i].default_server;
        conf->ssl = served[i].opt.ssl;
        conf->http2 = served[i].opt.http2;

        if (weir_http_server_names(cf, &served[i], &conf->virtual_names)
            != WEIR_OK)
        {
            return WEIR_ERROR;
        }

        /* every server reachable here must be listening */
        server = served[i].servers.elts;
        for (s = 0; s < served[i].servers.nelts; s++) {
            server[s]->listen = 1;
        }
    }

    ls->servers = hport;

    return WEIR_OK;
}


/* longest name first: *.a.example.com before *.example.com */

static int
weir_http_cmp_wildcards(const void *one, const void *two)
{
    const weir_http_server_name_t  *a, *b;

    a = one;
    b = two;

    if (a->name.len != b->name.len) {
        return (a->name.len > b->name.len) ? -1 : 1;
    }

    return 0;
}


/*
 * The server name lookup of one address: exact names in a hash,
 * "*.x" and ".x" suffixes and "x.*" prefixes in arrays (longest first),
 * regexes in configuration order. A name that two servers of the
 * address claim goes to the first, with a warning.
 */

static weir_int_t
weir_http_server_names(weir_conf_t *cf, weir_http_conf_addr_t *addr,
    weir_http_virtual_names_t **vnp)
{
    weir_str_t                   name;
    weir_uint_t                  s, n, k, nregex;
    weir_array_t                 keys;
    weir_hash_key_t             *key, *kk;
    weir_http_server_name_t     *sn, *wc;
    weir_http_virtual_names_t   *vn;
    weir_http_core_srv_conf_t  **cscfp;

    vn = weir_pcalloc(cf->pool, sizeof(weir_http_virtual_names_t));
    if (vn == NULL) {
        return WEIR_ERROR;
    }

    if (weir_array_init(&keys, cf->temp_pool, 8, sizeof(weir_hash_key_t))
        != WEIR_OK
        || weir_array_init(&vn->wc_head, cf->pool, 2,
                           sizeof(weir_http_server_name_t))
           != WEIR_OK
        || weir_array_init(&vn->wc_tail, cf->pool, 2,
                           sizeof(weir_http_server_name_t))
           != WEIR_OK)
    {
        return WEIR_ERROR;
    }

    cscfp = addr->servers.elts;
    nregex = 0;

    for (s = 0; s < addr->servers.nelts; s++) {
        nregex += cscfp[s]->server_names.nelts;
    }

    vn->regex = weir_pcalloc(cf->pool,
                             (nregex + 1) * sizeof(weir_http_server_name_t));
    if (vn->regex == NULL) {
        return WEIR_ERROR;
    }

    for (s = 0; s < addr->servers.nelts; s++) {

        sn = cscfp[s]->server_names.elts;

        for (n = 0; n < cscfp[s]->server_names.nelts; n++) {

            if (sn[n].regex) {
                vn->regex[vn->nregex++] = sn[n];
                continue;
            }

            if (sn[n].wildcard_head || sn[n].wildcard_tail
                || (sn[n].name.len > 1 && sn[n].name.data[0] == '.'))
            {
                wc = weir_array_push(sn[n].wildcard_tail ? &vn->wc_tail
                                                         : &vn->wc_head);
                if (wc == NULL) {
                    return WEIR_ERROR;
                }

                *wc = sn[n];

                if (sn[n].wildcard_head) {
                    /* "*.example.com" matches by ".example.com" */
                    wc->name.len--;
                    wc->name.data++;

                } else if (sn[n].wildcard_tail) {
                    /* "www.example.*" matches by "www.example." */
                    wc->name.len--;

                } else {
                    /* ".example.com" is "*.example.com" and also
                     * "example.com" itself */
                    wc->wildcard_head = 1;
                    name.len = sn[n].name.len - 1;
                    name.data = sn[n].name.data + 1;
                    goto exact;
                }

                continue;
            }

            name = sn[n].name;

        exact:

            kk = keys.elts;
            for (k = 0; k < keys.nelts; k++) {
                if (weir_str_eq(&kk[k].key, &name)) {
                    break;
                }
            }

            if (k < keys.nelts) {
                if (kk[k].value != cscfp[s]) {
                    weir_conf_log_error(WEIR_LOG_WARN, cf, 0,
                                        "conflicting server name \"%.*s\" "
                                        "on %.*s, ignored",
                                        WEIR_STR_ARG(name),
                                        WEIR_STR_ARG(addr->opt.addr_text));
                }

                continue;
            }

            key = weir_array_push(&keys);
            if (key == NULL) {
                return WEIR_ERROR;
            }

            key->key = name;
            key->key_hash = weir_hash_key(name.data, name.len);
            key->value = cscfp[s];
        }
    }

    if (weir_hash_init(&vn->exact, cf->pool, &keys) != WEIR_OK) {
        return WEIR_ERROR;
    }

    qsort(vn->wc_head.elts, vn->wc_head.nelts,
          sizeof(weir_http_server_name_t), weir_http_cmp_wildcards);
    qsort(vn->wc_tail.elts, vn->wc_tail.nelts,
          sizeof(weir_http_server_name_t), weir_http_cmp_wildcards);

    *vnp = vn;

    return WEIR_OK;
}


#define weir_http_hex_digit(ch)                                              \
    (((ch) >= '0' && (ch) <= '9') || ((ch) >= 'a' && (ch) <= 'f')             \
     || ((ch) >= 'A' && (ch) <= 'F'))


/* RFC 3986 reg-name characters: unreserved and sub-delims */

static weir_uint_t
weir_http_host_char(unsigned char ch)
{
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')
        || (ch >= '0' && ch <= '9'))
    {
        return 1;
    }

    return ch != '\0' && strchr("-._~!$&'()*+,;=", ch) != NULL;
}


/*
 * The inside of an IP-literal ("[" ... "]"): an IPv6address or an
 * IPvFuture ("v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )).
 * A zone identifier ("%25eth0", RFC 6874) is not accepted.
 */

static weir_uint_t
weir_http_valid_ip_literal(unsigned char *p, size_t len)
{
    size_t           i;
    struct in6_addr  addr;
    char             buf[INET6_ADDRSTRLEN];

    if (len > 0 && (p[0] == 'v' || p[0] == 'V')) {

        for (i = 1; i < len && weir_http_hex_digit(p[i]); i++) {
            /* void */
        }

        if (i == 1 || i == len || p[i] != '.' || i + 1 == len) {
            return 0;
        }

        for (i++; i < len; i++) {
            if (!weir_http_host_char(p[i]) && p[i] != ':') {
                return 0;
            }
        }

        return 1;
    }

    if (len < 2 || len >= sizeof(buf)) {
        return 0;
    }

    for (i = 0; i < len; i++) {
        if (!weir_http_hex_digit(p[i]) && p[i] != ':' && p[i] != '.') {
            return 0;
        }
    }

    weir_memcpy(buf, p, len);
    buf[len] = '\0';

    return inet_pton(AF_INET6, buf, &addr) == 1;
}


/*
 * Makes host usable as a server name: lowercase, without the port and
 * the trailing dot. WEIR_DECLINED when the name is not valid (the
 * caller answers 400), WEIR_ERROR when memory ran out. With alloc the
 * result is a copy in pool, else host is changed in place.
 *
 * Valid is an RFC 3986 host: a reg-name of unreserved and sub-delims
 * characters (which covers IPv4address), or an IP-literal, then
 * optionally ":" and a port of digits from 1 to 65535, or an empty port
 * ("host:", the default port). Stricter than RFC 3986, a pct-encoded
 * octet, an empty label ("a..b") and any byte above 0x7F are rejected:
 * the name selects the server, becomes $host and may go upstream, and
 * a name that another hop decodes or splits differently would route
 * the request elsewhere there (docs/compatibility.md).
 */

weir_int_t
weir_http_validate_host(weir_str_t *host, weir_pool_t *pool, weir_uint_t alloc)
{
    unsigned char  *h, ch;
    size_t          i, end, dot_pos, host_len;
    weir_uint_t     port;

    h = host->data;

    if (host->len > 0 && h[0] == '[') {

        for (end = 1; end < host->len && h[end] != ']'; end++) {
            if (h[end] >= 'A' && h[end] <= 'Z') {
                alloc = 1;
            }
        }

        if (end == host->len || !weir_http_valid_ip_literal(h + 1, end - 1))
        {
            return WEIR_DECLINED;
        }

        end++;
        host_len = end;

    } else {

        dot_pos = host->len;

        for (end = 0; end < host->len; end++) {
            ch = h[end];

            if (ch == ':') {
                break;
            }

            if (ch == '.') {
                if (end > 0 && dot_pos == end - 1) {
                    return WEIR_DECLINED;
                }

                dot_pos = end;
                continue;
            }

            if (!weir_http_host_char(ch)) {
                return WEIR_DECLINED;
            }

            if (ch >= 'A' && ch <= 'Z') {
                alloc = 1;
            }
        }

        host_len = end;

        if (host_len > 0 && dot_pos == host_len - 1) {
            host_len--;
        }
    }

    if (host_len == 0) {
        return WEIR_DECLINED;
    }

    if (end < host->len) {

        if (h[end] != ':') {
            return WEIR_DECLINED;
        }

        port = 0;

        for (i = end + 1; i < host->len; i++) {
            ch = h[i];

            if (ch < '0' || ch > '9') {
                return WEIR_DECLINED;
            }

            port = port * 10 + (ch - '0');

            if (port > 65535) {
                return WEIR_DECLINED;
            }
        }

        if (port == 0 && i > end + 1) {
            return WEIR_DECLINED;
        }
    }

    if (alloc) {
        host->data = weir_pnalloc(pool, host_len);
        if (host->data == NULL) {
            return WEIR_ERROR;
        }

        weir_strlow(host->data, h, host_len);
    }

    host->len = host_len;

    return WEIR_OK;
}


/*
 * Selects r's server among those of its address by the Host name
 * (already validated: lowercase, no port): exact name, the longest
 * "*.wildcard", the longest "wildcard.*", then the regexes in order;
 * the address's default server when none matches. Sets r->srv_conf and
 * r->loc_conf. WEIR_OK, WEIR_ERROR (regex failure, no memory), or
 * WEIR_HTTP_MISDIRECTED_REQUEST on a TLS connection whose SNI selected
 * another server block (r then has the SNI's server, whose error pages
 * answer).
 */

weir_int_t
weir_http_set_virtual_server(weir_http_request_t *r, weir_str_t *host)
{
    weir_http_connection_t     *hc;
    weir_http_core_srv_conf_t  *cscf;

    hc = r->http_connection;

    cscf = NULL;

    if (hc->fixed_server) {
        r->srv_conf = hc->fixed_server->ctx->srv_conf;
        r->loc_conf = hc->fixed_server->ctx->loc_conf;
        return WEIR_OK;
    }

    if (hc->ssl_server && host->len == 0) {
        /* no Host (HTTP/1.0): the server the client's SNI chose */
        cscf = hc->ssl_server;

    } else if (hc->addr_conf && hc->addr_conf->virtual_names) {
        cscf = weir_http_find_virtual_server(r->connection, r,
                                             hc->addr_conf->virtual_names,
                                             host);
        if (cscf == (weir_http_core_srv_conf_t *) -1) {
            return WEIR_ERROR;
        }
    }

    if (cscf == NULL) {
        if (hc->addr_conf == NULL) {
            return WEIR_ERROR;
        }

        cscf = hc->addr_conf->default_server;
    }

    if (hc->ssl_server && cscf != hc->ssl_server) {
        /*
         * The TLS session was set up for another server block (its
         * certificate, its verification of clients): the client must
         * open a new connection for this name (RFC 9110, 15.5.20).
         */
        weir_log_error(WEIR_LOG_INFO, r->connection->log, 0,
                       "client SNI \"%.*s\" and Host \"%.*s\" select "
                       "different servers", WEIR_STR_ARG(hc->ssl_servername),
                       WEIR_STR_ARG(*host));

        r->srv_conf = hc->ssl_server->ctx->srv_conf;
        r->loc_conf = hc->ssl_server->ctx->loc_conf;

        return WEIR_HTTP_MISDIRECTED_REQUEST;
    }

    r->srv_conf = cscf->ctx->srv_conf;
    r->loc_conf = cscf->ctx->loc_conf;

    return WEIR_OK;
}


weir_int_t
weir_http_find_server(weir_connection_t *c, weir_str_t *host,
    weir_uint_t alloc, weir_http_core_srv_conf_t **cscfp)
{
    weir_int_t                  rc;
    weir_http_connection_t     *hc;
    weir_http_core_srv_conf_t  *cscf;

    hc = c->data;

    rc = weir_http_validate_host(host, c->pool, alloc);

    if (rc == WEIR_DECLINED) {
        weir_log_error(WEIR_LOG_INFO, c->log, 0,
                       "client sent invalid server name \"%.*s\"",
                       WEIR_STR_ARG(*host));
        return WEIR_ERROR;
    }

    if (rc != WEIR_OK) {
        return WEIR_ERROR;
    }

    if (hc == NULL || hc->addr_conf == NULL) {
        return WEIR_ERROR;
    }

    cscf = NULL;

    if (hc->addr_conf->virtual_names) {
        cscf = weir_http_find_virtual_server(c, NULL,
                                             hc->addr_conf->virtual_names,
                                             host);
        if (cscf == (weir_http_core_srv_conf_t *) -1) {
            return WEIR_ERROR;
        }
    }

    if (cscf == NULL) {
        *cscfp = hc->addr_conf->default_server;
        return WEIR_DECLINED;
    }

    *cscfp = cscf;

    return WEIR_OK;
}


/*
 * The lookup behind both: r is NULL for a name that comes before any
 * request (SNI), so regex server names match without captures. NULL: no
 * name matched; -1: a regex failed.
 */

static weir_http_core_srv_conf_t *
weir_http_find_virtual_server(weir_connection_t *c, weir_http_request_t *r,
    weir_http_virtual_names_t *vn, weir_str_t *host)
{
    size_t                      len;
    weir_int_t                  rc;
    weir_str_t                  name;
    weir_uint_t                 i, key;
    unsigned char              *data;
    weir_http_server_name_t    *sn;
    weir_http_core_srv_conf_t  *cscf;

    data = host->data ? host->data : (unsigned char *) "";
    len = host->len;

    key = weir_hash_key(data, len);

    cscf = weir_hash_find(&vn->exact, key, data, len);
    if (cscf) {
        return cscf;
    }

    if (len == 0) {
        return NULL;
    }

    sn = vn->wc_head.elts;
    for (i = 0; i < vn->wc_head.nelts; i++) {
        /* ".example.com": the host must be longer, ending with it */
        if (len > sn[i].name.len
            && weir_memcmp(data + len - sn[i].name.len, sn[i].name.data,
                           sn[i].name.len) == 0)
        {
            return sn[i].server;
        }
    }

    sn = vn->wc_tail.elts;
    for (i = 0; i < vn->wc_tail.nelts; i++) {
        /* "www.example.": the host must be longer, starting with it */
        if (len > sn[i].name.len
            && weir_memcmp(data, sn[i].name.data, sn[i].name.len) == 0)
        {
            return sn[i].server;
        }
    }

    for (i = 0; i < vn->nregex; i++) {
        name.len = len;
        name.data = data;

        if (r) {
            rc = weir_http_regex_exec(r, vn->regex[i].http_regex, &name);

        } else {
            rc = weir_regex_exec(vn->regex[i].http_regex->regex, &name,
                                 NULL, 0);

            if (rc == WEIR_REGEX_NO_MATCHED) {
                rc = WEIR_DECLINED;

            } else if (rc < 0) {
                weir_log_error(WEIR_LOG_ALERT, c->log, 0,
                               "regex \"%.*s\" failed on \"%.*s\": %ld",
                               WEIR_STR_ARG(vn->regex[i].http_regex->name),
                               WEIR_STR_ARG(name), (long) rc);
                rc = WEIR_ERROR;

            } else {
                rc = WEIR_OK;
            }
        }

        if (rc == WEIR_DECLINED) {
            continue;
        }

        if (rc == WEIR_OK) {
            return vn->regex[i].server;
        }

        return (weir_http_core_srv_conf_t *) -1;
    }

    return NULL;
}


/*
 * Splits "uri?args" (try_files, error_page, internal redirects): args
 * gets what follows the first "?", which uri loses.
 */

void
weir_http_split_args(weir_http_request_t *r, weir_str_t *uri,
    weir_str_t *args)
{
    unsigned char  *p, *last;

    (void) r;

    if (uri->len == 0) {
        args->len = 0;
        return;
    }

    last = uri->data + uri->len;

    p = weir_strlchr(uri->data, last, '?');

    if (p == NULL) {
        args->len = 0;
        return;
    }

    uri->len = (size_t) (p - uri->data);
    p++;
    args->len = (size_t) (last - p);
    args->data = p;
}
