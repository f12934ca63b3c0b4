/*
 * fdinfo.c - vidmm_process_fdinfo: a process's memory in the key-value
 * text of Linux DRM fdinfo (the kernel's drm-usage-stats rules), so tools
 * that read /proc/PID/fdinfo (gputop, nvtop, intel_gpu_top) can read it
 * too.  docs/OBSERVABILITY.md has the mapping:
 *
 *   - a region per segment: "system", "vram<k>" (the k-th memory
 *     segment), "aperture", "agp"; every region is printed, 0 included;
 *   - the process's allocations: those private to it, those it owns for
 *     accounting, and those on a residency list of one of its devices
 *     (a DRM client's handles);
 *   - each counts in the region of its bytes (an evicted one, or one
 *     created evicted, in "system"): drm-total always, drm-resident when
 *     it has a GPU placement, drm-purgeable when also offered, drm-active
 *     when a submission in flight uses it, drm-shared when another
 *     process uses it as well;
 *   - sizes in KiB (every size is a multiple of 4 KiB);
 *   - vidmm's own keys, prefixed "vidmm-" as the rules ask of
 *     driver-specific ones: budget and usage per segment group.
 */
#include "handle/lookup.h"
#include "observe/observe.h"
#include "handle/handle.h"
#include "placement/placement.h"
#include "process/process.h"
#include "residency/residency.h"

#include <string.h>

enum { F_TOTAL, F_SHARED, F_ACTIVE, F_RESIDENT, F_PURGEABLE, F_COUNT };

/* Does process p use al, and does another process use it too? */
static int uses(const struct vidmm_allocation *al, vidmm_handle p, int *shared)
{
    int mine = 0, other = 0;
    vidmm_handle owner = vidmm_observe_process_of(al);
    if (owner) {
        mine |= owner == p;
        other |= owner != p;
    }
    for (const struct vidmm_residency_ref *r = vidmm_residency_refs_of(al); r; r = r->al_next) {
        vidmm_handle q = r->dev && r->dev->process ? r->dev->process->self : 0;
        mine |= q == p;
        other |= q && q != p;
    }
    /* A shared allocation is every holder's, as an imported dma-buf is
     * each importing client's (vidmm/share.h). */
    if (al->shared)
        for (const struct vidmm_share_holder *sh = al->share->holders; sh; sh = sh->next) {
            mine |= sh->process == p;
            other |= sh->process != p;
        }
    *shared = other;
    return mine;
}

static vidmm_status process_fdinfo(const struct vidmm_adapter *a, vidmm_handle process, char *buf, size_t size,
                                   size_t *needed)
{
    if (!vidmm_text_args_ok(buf, size, needed))
        return vidmm_text_args_fail(buf, size, needed);
    struct vidmm_process *p;
    vidmm_status st = vidmm_process_lookup(a, process, &p);
    if (st < 0)
        return st;
    uint64_t fig[VIDMM_MAX_SEGMENTS + 1][F_COUNT];
    memset(fig, 0, sizeof fig);
    uint32_t it = 0;
    for (const struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;) {
        int shared;
        if (al->zombie || !uses(al, process, &shared))
            continue;
        uint64_t off;
        uint32_t extents;
        uint32_t seg = vidmm_observe_where(al, &off, &extents);
        if (seg >= a->segment_count)
            seg = 0;
        fig[seg][F_TOTAL] += al->size;
        if (shared)
            fig[seg][F_SHARED] += al->size;
        if (al->busy)
            fig[seg][F_ACTIVE] += al->size;
        if (al->resident) {
            fig[seg][F_RESIDENT] += al->size;
            if (vidmm_residency_is_offered(al))
                fig[seg][F_PURGEABLE] += al->size;
        }
    }
    struct vidmm_text t = { buf, size, 0 };
    vidmm_text_add(&t, "drm-driver:\tvidmm\n");
    vidmm_text_add(&t, "drm-client-id:\t%llu\n", (unsigned long long)vidmm_observe_id(process));
    static const char *const key[F_COUNT] = { "total", "shared", "active", "resident", "purgeable" };
    for (uint32_t id = 0; id < a->segment_count; id++) {
        char region[16];
        vidmm_observe_region(a, id, region, sizeof region);
        for (unsigned k = 0; k < F_COUNT; k++)
            vidmm_text_add(&t, "drm-%s-%s:\t%llu KiB\n", key[k], region, (unsigned long long)(fig[id][k] >> 10));
    }
    static const char *const group[2] = { "local", "non-local" };
    for (unsigned g = 0; g < 2; g++) {
        struct vidmm_video_memory_info vi;
        if (vidmm_query_video_memory_info(a, process, (enum vidmm_segment_group)g, &vi) != VIDMM_OK)
            continue;
        vidmm_text_add(&t, "vidmm-budget-%s:\t%llu KiB\n", group[g], (unsigned long long)(vi.budget >> 10));
        vidmm_text_add(&t, "vidmm-usage-%s:\t%llu KiB\n", group[g], (unsigned long long)(vi.current_usage >> 10));
    }
    return vidmm_text_finish(&t, needed);
}

vidmm_status vidmm_process_fdinfo(const struct vidmm_adapter *a, vidmm_handle process, char *buf, size_t size,
                                  size_t *needed)
{
    VIDMM_ENTRY(a, process_fdinfo(a, process, buf, size, needed));
}
