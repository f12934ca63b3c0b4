/*
 * reset.c - softgpu's adapter reset (DxgkDdiResetFromTimeout /
 * DxgkDdiRestartFromTimeout) and power transitions (DxgkDdiSetPowerState).
 *
 * A real adapter reset loses video memory; so does softgpu: every page of
 * a memory segment the host has populated is overwritten with a poison
 * byte (pages never touched read as zero and stay unpopulated, so a
 * simulated 80 GiB segment never gets committed by a reset).  Page tables live there too, so a manager that
 * forgot to rebuild them faults (or walks poison) at the next virtual
 * access.  A power transition destroys the segments that are not flagged
 * preserved for the target state, the same way.  The GART (aperture
 * mappings) and context root bindings are host-side state and survive.
 */
#include "softgpu_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SOFTGPU_POISON 0xDB
#define SOFTGPU_WINDOW (1ull << 30)          /* mincore window: 1 GiB, 256 Ki pages */

/* Poison every page of the segment the host has populated (mincore);
 * pages never touched read as zero already and stay unpopulated, so a
 * reset neither commits a huge lazily reserved segment nor makes every
 * later access fault pages back in. */
static void softgpu_destroy_content(struct softgpu *sg, uint32_t id)
{
    struct softgpu_segment *s = &sg->seg[id];
    if (!s->is_memory || !s->mem)
        return;
    const uint64_t page = 4096;
    unsigned char *vec = malloc((size_t)(SOFTGPU_WINDOW / page));
    for (uint64_t off = 0; off < s->size; off += SOFTGPU_WINDOW) {
        uint64_t len = s->size - off < SOFTGPU_WINDOW ? s->size - off : SOFTGPU_WINDOW;
        if (!vec || mincore(s->mem + off, (size_t)len, vec) != 0) {
            memset(s->mem + off, SOFTGPU_POISON, (size_t)len);   /* cannot tell: poison it all */
            continue;
        }
        for (uint64_t i = 0; i < len / page;) {
            if (!(vec[i] & 1)) {
                i++;
                continue;
            }
            uint64_t j = i;
            while (j < len / page && (vec[j] & 1))
                j++;
            memset(s->mem + off + i * page, SOFTGPU_POISON, (size_t)((j - i) * page));
            i = j;
        }
    }
    free(vec);
    sg->reset_stats.segments_lost++;
}

vidmm_status softgpu_reset_from_timeout(void *driver)
{
    struct softgpu *sg = driver;
    if (!sg)
        return VIDMM_E_INVALID_ARG;
    (void)softgpu_engine_drop_all(sg);
    uint64_t dropped = softgpu_cmdproc_drop_all(sg);
    softgpu_lock(sg);
    sg->reset_stats.adapter_resets++;
    sg->reset_stats.buffers_dropped += dropped;
    for (uint32_t id = 1; id <= sg->nb_segment; id++)
        softgpu_destroy_content(sg, id);
    softgpu_unlock(sg);
    return VIDMM_OK;
}

vidmm_status softgpu_restart_from_timeout(void *driver)
{
    return driver ? VIDMM_OK : VIDMM_E_INVALID_ARG;
}

vidmm_status softgpu_set_power_state(void *driver, uint32_t state)
{
    struct softgpu *sg = driver;
    if (!sg || state > VIDMM_POWER_HIBERNATE)
        return VIDMM_E_INVALID_ARG;
    softgpu_lock_idle(sg);
    if (state != VIDMM_POWER_D0) {
        uint32_t keep = state == VIDMM_POWER_STANDBY ? VIDMM_SEGMENT_PRESERVED_DURING_STANDBY
                                                     : VIDMM_SEGMENT_PRESERVED_DURING_HIBERNATE;
        for (uint32_t id = 1; id <= sg->nb_segment; id++)
            if (!(sg->seg[id].flags & keep))
                softgpu_destroy_content(sg, id);
    }
    sg->power_state = state;
    sg->reset_stats.power_transitions++;
    softgpu_unlock(sg);
    return VIDMM_OK;
}

void softgpu_get_reset_stats(const struct softgpu *sg, struct softgpu_reset_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof(*out));
    if (!sg)
        return;
    softgpu_lock(sg);
    *out = sg->reset_stats;
    softgpu_unlock(sg);
}
