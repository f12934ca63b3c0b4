/*
 * registry.c - the built-in eviction policies, for tools that pick one by
 * name (--policy NAME).  A constant table: no state, nothing to set up.
 */
#include "vidmm/policy.h"

#include <stddef.h>

static const struct vidmm_eviction_policy *const builtin[] = {
    &vidmm_policy_lru, &vidmm_policy_adaptive, &vidmm_policy_belady, NULL
};

const struct vidmm_eviction_policy *const *vidmm_policies(void)
{
    return builtin;
}
