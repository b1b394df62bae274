/*
 * weir_test_badabi_module: a module built against an ABI weir does not
 * have. Its header is filled by hand instead of with WEIR_MODULE_V1 so
 * that its signature differs from weir's; load_module must refuse it
 * with a message naming both signatures. The version field is left
 * right so that the signature is what the check trips on.
 */

#include "weir_config.h"
#include "weir_core.h"


#define WEIR_TEST_BADABI_SIGNATURE                                            \
    "weir-abi=999,ptr=8,debug=0,ssl=0,pcre2=0"


static weir_core_module_t  weir_test_badabi_module_ctx = {
    weir_string("test_badabi"),
    NULL,
    NULL
};


weir_module_t  weir_test_badabi_module = {
    WEIR_MODULE_UNSET_INDEX,               /* ctx_index */
    WEIR_MODULE_UNSET_INDEX,               /* index */
    NULL,                                  /* name */
    WEIR_MODULE_ABI,                       /* version */
    WEIR_TEST_BADABI_SIGNATURE,            /* signature */
    &weir_test_badabi_module_ctx,          /* context */
    NULL,                                  /* directives */
    WEIR_CORE_MODULE,                      /* type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    WEIR_MODULE_V1_PADDING
};
