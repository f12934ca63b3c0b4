/*
 * stats.c - vidmm_adapter_stats_json: the adapter in the GpuMemDump
 * layout (the JSON VMA's vmaBuildStatsString and D3D12MA's
 * BuildStatsString write and their visualiser GpuMemDumpVis.py reads),
 * valid against that layout's schema (docs/OBSERVABILITY.md).
 *
 * The schema closes the top level, the heaps ("MemoryInfo" entries) and
 * the suballocations to other keys, so vidmm's own figures go where it
 * leaves room: "General"."vidmm".  "API" is "Direct3D 12" (the visualiser
 * knows only that and "Vulkan", and WDDM is D3D's model).  Each segment
 * is one heap and one default pool named "Segment ID (kind)".  A memory,
 * aperture or AGP segment is one block as large as the segment whose
 * suballocations are the allocations' extents at their offsets, with the
 * gaps as FREE entries, in offset order, because the visualiser lays them
 * end to end.  System memory has no GPU address space to draw: its
 * allocations are the pool's dedicated allocations.  Bytes vidmm uses
 * itself (page tables, paging buffers) and allocations destroyed while
 * the GPU still uses them lie in the FREE gaps; the block's UnusedBytes is
 * vidmm's own free count, so TotalBytes - UnusedBytes - the allocations is
 * what vidmm holds itself.
 *
 * Ids, not handles: a handle carries a per-adapter salt, so two runs of
 * the same calls would print different numbers (observe.h).
 */
#include "observe/observe.h"
#include "handle/handle.h"
#include "placement/placement.h"
#include "residency/residency.h"
#include "vidmm/version.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ext {
    uint64_t offset, size;
    const struct vidmm_allocation *al;
    uint32_t segment;
};

static int ext_cmp(const void *pa, const void *pb)
{
    const struct ext *x = pa, *y = pb;
    if (x->segment != y->segment)
        return x->segment < y->segment ? -1 : 1;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return 0;
}

struct stats {
    uint64_t blocks, block_bytes, allocs, alloc_bytes, unused_ranges;
    uint64_t alloc_min, alloc_max, unused_min, unused_max;
};

static void stats_alloc(struct stats *s, uint64_t size)
{
    if (!s->allocs || size < s->alloc_min)
        s->alloc_min = size;
    if (size > s->alloc_max)
        s->alloc_max = size;
    s->allocs++;
    s->alloc_bytes += size;
}

static void stats_unused(struct stats *s, uint64_t size)
{
    if (!s->unused_ranges || size < s->unused_min)
        s->unused_min = size;
    if (size > s->unused_max)
        s->unused_max = size;
    s->unused_ranges++;
}

static void stats_add(struct stats *to, const struct stats *s)
{
    if (s->allocs) {
        if (!to->allocs || s->alloc_min < to->alloc_min)
            to->alloc_min = s->alloc_min;
        if (s->alloc_max > to->alloc_max)
            to->alloc_max = s->alloc_max;
    }
    if (s->unused_ranges) {
        if (!to->unused_ranges || s->unused_min < to->unused_min)
            to->unused_min = s->unused_min;
        if (s->unused_max > to->unused_max)
            to->unused_max = s->unused_max;
    }
    to->blocks += s->blocks;
    to->block_bytes += s->block_bytes;
    to->allocs += s->allocs;
    to->alloc_bytes += s->alloc_bytes;
    to->unused_ranges += s->unused_ranges;
}

#define U(x) ((unsigned long long)(x))

static void stats_write(struct vidmm_text *t, const struct stats *s)
{
    vidmm_text_add(t, "{\"BlockCount\": %llu, \"BlockBytes\": %llu, ", U(s->blocks), U(s->block_bytes));
    vidmm_text_add(t, "\"AllocationCount\": %llu, \"AllocationBytes\": %llu, \"UnusedRangeCount\": %llu", U(s->allocs),
                   U(s->alloc_bytes), U(s->unused_ranges));
    if (s->allocs)
        vidmm_text_add(t, ", \"AllocationSizeMin\": %llu, \"AllocationSizeMax\": %llu", U(s->alloc_min),
                       U(s->alloc_max));
    if (s->unused_ranges)
        vidmm_text_add(t, ", \"UnusedRangeSizeMin\": %llu, \"UnusedRangeSizeMax\": %llu", U(s->unused_min),
                       U(s->unused_max));
    vidmm_text_add(t, "}");
}

/* D3D12 resource type and usage for the visualiser's colours: a primary
 * is a render target (D3D12_RESOURCE_FLAG_ALLOW_RENDER_TARGET = 1); vidmm
 * knows nothing else of what an allocation holds. */
static const char *alloc_type(const struct vidmm_allocation *al, uint32_t *usage)
{
    *usage = (al->info.flags & VIDMM_ALLOC_PRIMARY) ? 1u : 0u;
    return *usage ? "TEXTURE2D" : "UNKNOWN";
}

static void name_member(struct vidmm_text *t, const struct vidmm_allocation *al)
{
    if (!al->name)
        return;
    vidmm_text_add(t, ", \"Name\": ");
    vidmm_text_json_str(t, al->name);
}

static const struct {
    uint32_t bit;
    const char *name;
} segment_flag_names[] = {
    { VIDMM_SEGMENT_APERTURE, "Aperture" },
    { VIDMM_SEGMENT_AGP, "Agp" },
    { VIDMM_SEGMENT_CPU_VISIBLE, "CpuVisible" },
    { VIDMM_SEGMENT_CACHE_COHERENT, "CacheCoherent" },
    { VIDMM_SEGMENT_POPULATED_FROM_SYSTEM, "PopulatedFromSystemMemory" },
    { VIDMM_SEGMENT_PRESERVED_DURING_STANDBY, "PreservedDuringStandby" },
    { VIDMM_SEGMENT_PRESERVED_DURING_HIBERNATE, "PreservedDuringHibernate" },
    { VIDMM_SEGMENT_DIRECT_FLIP, "DirectFlip" },
    { VIDMM_SEGMENT_USE_64KB_PAGES, "Use64KBPages" },
    { VIDMM_SEGMENT_SUPPORTS_CPU_HOST_APERTURE, "SupportsCpuHostAperture" },
    { VIDMM_SEGMENT_SUPPORTS_CACHED_CPU_HOST_APERTURE, "SupportsCachedCpuHostAperture" },
    { VIDMM_SEGMENT_LOCAL_BUDGET_GROUP, "LocalBudgetGroup" },
    { VIDMM_SEGMENT_NON_LOCAL_BUDGET_GROUP, "NonLocalBudgetGroup" },
};

/* The segment's flags by their DXGK_SEGMENTFLAGS names. */
static void flags_write(struct vidmm_text *t, uint32_t flags)
{
    int first = 1;
    for (size_t i = 0; i < sizeof segment_flag_names / sizeof segment_flag_names[0]; i++) {
        if (!(flags & segment_flag_names[i].bit))
            continue;
        vidmm_text_add(t, "%s\"%s\"", first ? "" : ", ", segment_flag_names[i].name);
        first = 0;
    }
}

static uint64_t seg_free(const struct vidmm_segment *s)
{
    return s->has_ra ? s->ra.free_bytes : s->commit_limit - s->committed;
}

/* vidmm_segment_kind_str's words (that function is the adapter layer's,
 * above this one). */
static const char *kind_str(enum vidmm_segment_kind k)
{
    switch (k) {
    case VIDMM_SEGMENT_KIND_SYSTEM: return "system";
    case VIDMM_SEGMENT_KIND_MEMORY: return "memory";
    case VIDMM_SEGMENT_KIND_APERTURE: return "aperture";
    case VIDMM_SEGMENT_KIND_AGP: return "agp";
    }
    return "?";
}

static void label(const struct vidmm_adapter *a, uint32_t id, char *buf, size_t n)
{
    snprintf(buf, n, "Segment %u (%s)", id, kind_str(a->seg[id].kind));
}

static void vidmm_section(struct vidmm_text *t, const struct vidmm_adapter *a, uint64_t live, uint64_t zombies)
{
    static const char *const res_name[8] = { "", "resident", "evicted", "", "offered", "", "", "" };
    vidmm_text_add(t, "\"vidmm\": {\"format\": \"vidmm-stats/1\", \"version\": \"%s\", \"live_allocations\": %llu, "
                      "\"deferred_destructions\": %llu,\n    \"segments\": [",
                   VIDMM_VERSION_STRING, U(live), U(zombies));
    for (uint32_t id = 0; id < a->segment_count; id++) {
        const struct vidmm_segment *s = &a->seg[id];
        char region[16];
        vidmm_observe_region(a, id, region, sizeof region);
        vidmm_text_add(t, "%s\n      {\"id\": %u, \"kind\": \"%s\", \"region\": \"%s\", \"size\": %llu, ", id ? "," : "",
                       id, kind_str(s->kind), region, U(s->size));
        vidmm_text_add(t, "\"page_size\": %u, \"commit_limit\": %llu, \"committed\": %llu, \"free\": %llu, ",
                       s->page_size, U(s->commit_limit), U(s->committed), U(seg_free(s)));
        vidmm_text_add(t, "\"allocations\": %llu}", U(s->allocations));
    }
    vidmm_text_add(t, "],\n    \"processes\": [");
    int first = 1;
    /* Slot order, as the stats have always listed them: O(slots in use). */
    uint32_t slot = 0;
    for (const struct vidmm_process *p; (p = vidmm_objtab_next(&a->processes, &slot)) != NULL;) {
        vidmm_text_add(t, "%s\n      {\"id\": %llu, \"devices\": %u", first ? "" : ",", U(vidmm_observe_id(p->self)),
                       p->device_count);
        static const char *const group[2] = { "local", "non_local" };
        for (unsigned g = 0; g < 2; g++) {
            struct vidmm_video_memory_info vi;
            if (vidmm_query_video_memory_info(a, p->self, (enum vidmm_segment_group)g, &vi) != VIDMM_OK)
                continue;
            vidmm_text_add(t, ", \"%s\": {\"budget\": %llu, \"usage\": %llu, ", group[g], U(vi.budget),
                           U(vi.current_usage));
            vidmm_text_add(t, "\"reservation\": %llu, \"available_for_reservation\": %llu}", U(vi.current_reservation),
                           U(vi.available_for_reservation));
        }
        vidmm_text_add(t, ", \"usage_by_segment\": [");
        for (uint32_t id = 0; id < a->segment_count; id++)
            vidmm_text_add(t, "%s%llu", id ? ", " : "", U(vidmm_residency_segment_usage(p, id)));
        vidmm_text_add(t, "]}");
        first = 0;
    }
    vidmm_text_add(t, "],\n    \"allocations\": [");
    first = 1;
    uint32_t it = 0;
    for (const struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;) {
        if (al->zombie)
            continue;
        uint64_t offset;
        uint32_t extents;
        uint32_t seg = vidmm_observe_where(al, &offset, &extents);
        vidmm_text_add(t, "%s\n      {\"id\": %llu, \"name\": ", first ? "" : ",", U(vidmm_observe_id(al->self)));
        vidmm_text_json_str(t, al->name ? al->name : "");
        vidmm_text_add(t, ", \"size\": %llu, \"segment\": %u, \"offset\": %llu, \"extents\": %u, ", U(al->size), seg,
                       U(offset), extents);
        vidmm_text_add(t, "\"process\": %llu, \"residency\": \"%s\", \"priority\": %u, \"busy\": %u",
                       U(vidmm_observe_id(vidmm_observe_process_of(al))), res_name[vidmm_observe_residency(al) & 7],
                       vidmm_residency_priority(al), al->busy);
        if (al->user_data)
            vidmm_text_add(t, ", \"user_data\": \"%p\"", al->user_data);
        vidmm_text_add(t, "}");
        first = 0;
    }
    vidmm_text_add(t, "]}");
}

static vidmm_status stats_json(const struct vidmm_adapter *a, char *buf, size_t size, size_t *needed)
{
    if (!vidmm_text_args_ok(buf, size, needed))
        return vidmm_text_args_fail(buf, size, needed);
    const uint32_t nseg = a->segment_count;

    /* The extents in memory, aperture and AGP segments, sorted by
     * segment and offset; system memory's allocations are walked in
     * slot order below. */
    size_t n = 0, cap = 0;
    uint64_t live = 0, zombies = 0;
    uint32_t it = 0;
    for (const struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;) {
        if (al->zombie) {
            zombies++;
            continue;
        }
        live++;
        uint64_t off;
        uint32_t extents;
        if (vidmm_observe_where(al, &off, &extents) != 0)
            cap += extents;
    }
    struct ext *ex = NULL;
    if (cap) {
        ex = vidmm_halloc(a->ha, VIDMM_SITE_OBSERVE_EXTENTS, cap * sizeof(*ex), _Alignof(struct ext));
        if (!ex)
            return VIDMM_E_NO_HOST_MEMORY;
    }
    it = 0;
    for (const struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;) {
        uint64_t off;
        uint32_t extents;
        uint32_t seg = vidmm_observe_where(al, &off, &extents);
        if (al->zombie || seg == 0)
            continue;
        if (al->pl.sys) {
            ex[n++] = (struct ext){ off, al->size, al, seg };
            continue;
        }
        for (uint32_t i = 0; i < al->pl.pages.count && n < cap; i++)
            ex[n++] = (struct ext){ al->pl.pages.ext[i].offset, al->pl.pages.ext[i].size, al, seg };
    }
    if (n)
        qsort(ex, n, sizeof(*ex), ext_cmp);

    /* Statistics per segment. */
    struct stats st[VIDMM_MAX_SEGMENTS + 1], total;
    memset(st, 0, sizeof st);
    memset(&total, 0, sizeof total);
    size_t i = 0;
    for (uint32_t id = 1; id < nseg; id++) {
        st[id].blocks = 1;
        st[id].block_bytes = a->seg[id].size;
        uint64_t at = 0;
        for (; i < n && ex[i].segment == id; i++) {
            if (ex[i].offset > at)
                stats_unused(&st[id], ex[i].offset - at);
            stats_alloc(&st[id], ex[i].size);
            if (ex[i].offset + ex[i].size > at)
                at = ex[i].offset + ex[i].size;
        }
        if (at < a->seg[id].size)
            stats_unused(&st[id], a->seg[id].size - at);
    }
    it = 0;
    for (const struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;) {
        uint64_t off;
        uint32_t extents;
        if (al->zombie || vidmm_observe_where(al, &off, &extents) != 0 || !extents)
            continue;
        stats_alloc(&st[0], al->size);
        st[0].blocks++;
        st[0].block_bytes += al->size;
    }
    for (uint32_t id = 0; id < nseg; id++)
        stats_add(&total, &st[id]);

    uint64_t dedicated = 0, shared = a->seg[0].size;
    for (uint32_t id = 1; id < nseg; id++) {
        if (a->seg[id].kind == VIDMM_SEGMENT_KIND_MEMORY)
            dedicated += a->seg[id].size;
        else
            shared += a->seg[id].size;
    }

    struct vidmm_text t = { buf, size, 0 };
    vidmm_text_add(&t, "{\n  \"General\": {\"API\": \"Direct3D 12\", \"GPU\": \"vidmm %s (WDDM %u.%u)\", ",
                   VIDMM_VERSION_STRING, a->caps.wddm_version >> 12, (a->caps.wddm_version >> 8) & 0xfu);
    vidmm_text_add(&t, "\"DedicatedVideoMemory\": %llu, \"DedicatedSystemMemory\": 0, \"SharedSystemMemory\": %llu,\n    ",
                   U(dedicated), U(shared));
    vidmm_section(&t, a, live, zombies);
    vidmm_text_add(&t, "},\n  \"Total\": ");
    stats_write(&t, &total);
    vidmm_text_add(&t, ",\n  \"MemoryInfo\": {");
    for (uint32_t id = 0; id < nseg; id++) {
        char lb[48];
        label(a, id, lb, sizeof lb);
        vidmm_text_add(&t, "%s\n    \"%s\": {\"Flags\": [", id ? "," : "", lb);
        if (id)
            flags_write(&t, a->seg[id].flags);
        vidmm_text_add(&t, "], \"Size\": %llu, \"Budget\": {\"BudgetBytes\": %llu, \"UsageBytes\": %llu}, \"Stats\": ",
                       U(a->seg[id].size), U(a->seg[id].commit_limit), U(a->seg[id].committed));
        stats_write(&t, &st[id]);
        vidmm_text_add(&t, ", \"MemoryPools\": {\"%s\": {\"Flags\": [], \"Stats\": ", lb);
        stats_write(&t, &st[id]);
        vidmm_text_add(&t, "}}}");
    }
    vidmm_text_add(&t, "\n  },\n  \"DefaultPools\": {");
    i = 0;
    for (uint32_t id = 0; id < nseg; id++) {
        char lb[48];
        label(a, id, lb, sizeof lb);
        vidmm_text_add(&t, "%s\n    \"%s\": {\n      \"PreferredBlockSize\": %llu,\n      \"Blocks\": {", id ? "," : "",
                       lb, U(id ? a->seg[id].size : 0));
        if (id) {
            const uint64_t segsize = a->seg[id].size;
            vidmm_text_add(&t, "\n        \"0\": {\"MapRefCount\": 0, \"TotalBytes\": %llu, \"UnusedBytes\": %llu, ",
                           U(segsize), U(seg_free(&a->seg[id])));
            vidmm_text_add(&t, "\"Allocations\": %llu, \"UnusedRanges\": %llu, \"Suballocations\": [", U(st[id].allocs),
                           U(st[id].unused_ranges));
            uint64_t at = 0;
            int first = 1;
            for (; i < n && ex[i].segment == id; i++) {
                if (ex[i].offset > at) {
                    vidmm_text_add(&t, "%s\n          {\"Offset\": %llu, \"Type\": \"FREE\", \"Size\": %llu}",
                                   first ? "" : ",", U(at), U(ex[i].offset - at));
                    first = 0;
                }
                uint32_t usage;
                const char *type = alloc_type(ex[i].al, &usage);
                vidmm_text_add(&t, "%s\n          {\"Offset\": %llu, \"Type\": \"%s\", \"Size\": %llu, \"Usage\": %u",
                               first ? "" : ",", U(ex[i].offset), type, U(ex[i].size), usage);
                name_member(&t, ex[i].al);
                vidmm_text_add(&t, "}");
                first = 0;
                if (ex[i].offset + ex[i].size > at)
                    at = ex[i].offset + ex[i].size;
            }
            if (at < segsize)
                vidmm_text_add(&t, "%s\n          {\"Offset\": %llu, \"Type\": \"FREE\", \"Size\": %llu}",
                               first ? "" : ",", U(at), U(segsize - at));
            vidmm_text_add(&t, "\n        ]}\n      },\n      \"DedicatedAllocations\": []\n    }");
            continue;
        }
        vidmm_text_add(&t, "},\n      \"DedicatedAllocations\": [");
        int first = 1;
        it = 0;
        for (const struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;) {
            uint64_t off;
            uint32_t extents;
            if (al->zombie || vidmm_observe_where(al, &off, &extents) != 0 || !extents)
                continue;
            uint32_t usage;
            const char *type = alloc_type(al, &usage);
            vidmm_text_add(&t, "%s\n        {\"Type\": \"%s\", \"Size\": %llu, \"Usage\": %u", first ? "" : ",", type,
                           U(al->size), usage);
            name_member(&t, al);
            vidmm_text_add(&t, "}");
            first = 0;
        }
        vidmm_text_add(&t, "\n      ]\n    }");
    }
    vidmm_text_add(&t, "\n  },\n  \"CustomPools\": {}\n}\n");
    if (ex)
        vidmm_hfree(a->ha, ex, cap * sizeof(*ex), _Alignof(struct ext));
    return vidmm_text_finish(&t, needed);
}

vidmm_status vidmm_adapter_stats_json(const struct vidmm_adapter *a, char *buf, size_t size, size_t *needed)
{
    VIDMM_ENTRY(a, stats_json(a, buf, size, needed));
}
