/*
 * reset.c - softgpu's adapter reset (DxgkDdiResetFromTimeout /
 * DxgkDdiRestartFromTimeout) and power transitions (DxgkDdiSetPowerState).
 *
 * A real adapter reset loses video memory; so does softgpu: every
 * memory segment's bytes are destroyed - overwritten with a poison byte
 * when the segment is small, given back to the host (they then read as
 * zero) when it is large, so a simulated 80 GiB segment never gets
 * committed by a reset.  Page tables live there too, so a manager that
 * forgot to rebuild them faults (or walks poison) at the next virtual
 * access.  A power transition destroys the segments that are not flagged
 * preserved for the target state, the same way.  The GART (aperture
 * mappings) and context root bindings are host-side state and survive.
 */
#include "softgpu_int.h"

#include <string.h>
#include <sys/mman.h>

#define SG_POISON 0xDB
#define SG_POISON_LIMIT (64ull << 20)

static void sg_destroy_content(struct softgpu *sg, uint32_t id)
{
    struct sg_segment *s = &sg->seg[id];
    if (!s->is_memory || !s->mem)
        return;
    if (s->size <= SG_POISON_LIMIT || madvise(s->mem, (size_t)s->size, MADV_REMOVE) != 0)
        memset(s->mem, SG_POISON, (size_t)s->size);
    sg->reset_stats.segments_lost++;
}

vidmm_status sg_reset_from_timeout(void *driver)
{
    struct softgpu *sg = driver;
    if (!sg)
        return VIDMM_E_INVALID_ARG;
    (void)sg_engine_drop_all(sg);
    uint64_t dropped = sg_cmdproc_drop_all(sg);
    sg_lock(sg);
    sg->reset_stats.adapter_resets++;
    sg->reset_stats.buffers_dropped += dropped;
    for (uint32_t id = 1; id <= sg->nb_segment; id++)
        sg_destroy_content(sg, id);
    sg_unlock(sg);
    return VIDMM_OK;
}

vidmm_status sg_restart_from_timeout(void *driver)
{
    return driver ? VIDMM_OK : VIDMM_E_INVALID_ARG;
}

vidmm_status sg_set_power_state(void *driver, uint32_t state)
{
    struct softgpu *sg = driver;
    if (!sg || state > VIDMM_POWER_HIBERNATE)
        return VIDMM_E_INVALID_ARG;
    sg_lock_idle(sg);
    if (state != VIDMM_POWER_D0) {
        uint32_t keep = state == VIDMM_POWER_STANDBY ? VIDMM_SEGMENT_PRESERVED_DURING_STANDBY
                                                     : VIDMM_SEGMENT_PRESERVED_DURING_HIBERNATE;
        for (uint32_t id = 1; id <= sg->nb_segment; id++)
            if (!(sg->seg[id].flags & keep))
                sg_destroy_content(sg, id);
    }
    sg->power_state = state;
    sg->reset_stats.power_transitions++;
    sg_unlock(sg);
    return VIDMM_OK;
}

void softgpu_get_reset_stats(const struct softgpu *sg, struct softgpu_reset_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof(*out));
    if (!sg)
        return;
    sg_lock(sg);
    *out = sg->reset_stats;
    sg_unlock(sg);
}
