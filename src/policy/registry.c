/*
 * registry.c - the built-in eviction policies, for tools that pick one by
 * name (--policy NAME).  A constant table: no state, nothing to set up.
 * Also the state allocation every built-in policy's create() shares.
 */
#include "policy/policy_int.h"

#include "core/alloc_sites.h"

#include <stddef.h>
#include <string.h>

static const struct vidmm_eviction_policy *const builtin[] = {
    &vidmm_policy_lru, &vidmm_policy_adaptive, &vidmm_policy_belady, &vidmm_policy_reuse, NULL
};

const struct vidmm_eviction_policy *const *vidmm_policies(void)
{
    return builtin;
}

vidmm_status vidmm_policy_state_alloc(const struct vidmm_host_allocator *ha, uint32_t segment_count, size_t head,
                                      size_t per_segment, size_t align, void **out, size_t *size)
{
    if (!out)
        return VIDMM_E_INVALID_ARG;
    *out = NULL;
    if (!ha || !ha->alloc || !ha->free || !segment_count || segment_count > VIDMM_POLICY_MAX_SEGMENTS)
        return VIDMM_E_INVALID_ARG;
    *size = head + (size_t)segment_count * per_segment;
    void *s = vidmm_host_alloc_at(ha, VIDMM_SITE_POLICY_STATE, *size, align);
    if (!s)
        return VIDMM_E_NO_HOST_MEMORY;
    memset(s, 0, *size);
    *out = s;
    return VIDMM_OK;
}
