/*
 * observe_fields.h - what observability (observe/) keeps in the shared
 * objects: the adapter's debug callback (its `debug` member).
 * model/objects.h embeds it; only src/observe/ names the member.  Types
 * only.
 */
#ifndef VIDMM_OBSERVE_OBSERVE_FIELDS_H
#define VIDMM_OBSERVE_OBSERVE_FIELDS_H

#include "vidmm/observe.h"

#include <stdint.h>

/* The caller's debug callback (vidmm/observe.h), NULL = none. */
struct vidmm_debug_hook {
    vidmm_debug_callback cb;
    void *user;
};

#endif
