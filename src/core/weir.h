#ifndef _WEIR_H_INCLUDED_
#define _WEIR_H_INCLUDED_

#define WEIR_VERSION      "0.5.1"
#define WEIR_VER          "weir/" WEIR_VERSION
#define WEIR_VAR          "WEIR"    /* environment: inherited sockets */
#define WEIR_OLDPID_EXT   ".oldbin"

#endif /* _WEIR_H_INCLUDED_ */
