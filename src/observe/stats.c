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

/* The segment's flags by their DXGK_SEGMENTFLAGS names (core/names.c). */
static void flags_write(struct vidmm_text *t, uint32_t flags)
{
    int first = 1;
    for (uint32_t bit = 1; bit; bit <<= 1) {
        const char *name = (flags & bit) ? vidmm_segment_flag_name(bit) : NULL;
        if (!name)
            continue;
        vidmm_text_add(t, "%s\"%s\"", first ? "" : ", ", name);
        first = 0;
    }
}

static uint64_t seg_free(const struct vidmm_segment *s)
{
    return s->has_ra ? s->ra.free_bytes : s->commit_limit - s->committed;
}

static void label(const struct vidmm_adapter *a, uint32_t id, char *buf, size_t n)
{
    snprintf(buf, n, "Segment %u (%s)", id, vidmm_segment_kind_str(a->seg[id].kind));
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
                       id, vidmm_segment_kind_str(s->kind), region, U(s->size));
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

/* The extents of one JSON dump, sorted by segment and offset. */
struct extent_list {
    struct ext *ex;
    size_t n, cap;
    uint64_t live, zombies;
};

/* Dump, phase 1: the extents in memory, aperture and AGP segments,
 * sorted by segment and offset (system memory's allocations are walked
 * in slot order where they are written); live and deferred-destroyed
 * allocations counted. */
static vidmm_status collect_extents(const struct vidmm_adapter *a, struct extent_list *l)
{
    uint32_t it = 0;
    for (const struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;) {
        if (al->zombie) {
            l->zombies++;
            continue;
        }
        l->live++;
        uint64_t off;
        uint32_t extents;
        if (vidmm_observe_where(al, &off, &extents) != 0)
            l->cap += extents;
    }
    if (l->cap) {
        l->ex = vidmm_halloc(a->ha, VIDMM_SITE_OBSERVE_EXTENTS, l->cap * sizeof(*l->ex), _Alignof(struct ext));
        if (!l->ex)
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
            l->ex[l->n++] = (struct ext){ off, al->size, al, seg };
            continue;
        }
        for (uint32_t i = 0; i < al->pl.pages.count && l->n < l->cap; i++)
            l->ex[l->n++] = (struct ext){ al->pl.pages.ext[i].offset, al->pl.pages.ext[i].size, al, seg };
    }
    if (l->n)
        qsort(l->ex, l->n, sizeof(*l->ex), ext_cmp);
    return VIDMM_OK;
}

/* Dump, phase 2: the statistics of each segment and their total. */
static void segment_stats(const struct vidmm_adapter *a, const struct extent_list *l, struct stats *st,
                          struct stats *total)
{
    size_t i = 0;
    for (uint32_t id = 1; id < a->segment_count; id++) {
        st[id].blocks = 1;
        st[id].block_bytes = a->seg[id].size;
        uint64_t at = 0;
        for (; i < l->n && l->ex[i].segment == id; i++) {
            if (l->ex[i].offset > at)
                stats_unused(&st[id], l->ex[i].offset - at);
            stats_alloc(&st[id], l->ex[i].size);
            if (l->ex[i].offset + l->ex[i].size > at)
                at = l->ex[i].offset + l->ex[i].size;
        }
        if (at < a->seg[id].size)
            stats_unused(&st[id], a->seg[id].size - at);
    }
    uint32_t it = 0;
    for (const struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;) {
        uint64_t off;
        uint32_t extents;
        if (al->zombie || vidmm_observe_where(al, &off, &extents) != 0 || !extents)
            continue;
        stats_alloc(&st[0], al->size);
        st[0].blocks++;
        st[0].block_bytes += al->size;
    }
    for (uint32_t id = 0; id < a->segment_count; id++)
        stats_add(total, &st[id]);
}

/* Dump, phase 3: "General" (with vidmm's own section) and "Total". */
static void general_write(struct vidmm_text *t, const struct vidmm_adapter *a, const struct extent_list *l,
                          const struct stats *total)
{
    uint64_t dedicated = 0, shared = a->seg[0].size;
    for (uint32_t id = 1; id < a->segment_count; id++) {
        if (a->seg[id].kind == VIDMM_SEGMENT_KIND_MEMORY)
            dedicated += a->seg[id].size;
        else
            shared += a->seg[id].size;
    }
    vidmm_text_add(t, "{\n  \"General\": {\"API\": \"Direct3D 12\", \"GPU\": \"vidmm %s (WDDM %u.%u)\", ",
                   VIDMM_VERSION_STRING, a->caps.wddm_version >> 12, (a->caps.wddm_version >> 8) & 0xfu);
    vidmm_text_add(t, "\"DedicatedVideoMemory\": %llu, \"DedicatedSystemMemory\": 0, \"SharedSystemMemory\": %llu,\n    ",
                   U(dedicated), U(shared));
    vidmm_section(t, a, l->live, l->zombies);
    vidmm_text_add(t, "},\n  \"Total\": ");
    stats_write(t, total);
}

/* Dump, phase 4: "MemoryInfo", one member per segment. */
static void memory_info_write(struct vidmm_text *t, const struct vidmm_adapter *a, const struct stats *st)
{
    vidmm_text_add(t, ",\n  \"MemoryInfo\": {");
    for (uint32_t id = 0; id < a->segment_count; id++) {
        char lb[48];
        label(a, id, lb, sizeof lb);
        vidmm_text_add(t, "%s\n    \"%s\": {\"Flags\": [", id ? "," : "", lb);
        if (id)
            flags_write(t, a->seg[id].flags);
        vidmm_text_add(t, "], \"Size\": %llu, \"Budget\": {\"BudgetBytes\": %llu, \"UsageBytes\": %llu}, \"Stats\": ",
                       U(a->seg[id].size), U(a->seg[id].commit_limit), U(a->seg[id].committed));
        stats_write(t, &st[id]);
        vidmm_text_add(t, ", \"MemoryPools\": {\"%s\": {\"Flags\": [], \"Stats\": ", lb);
        stats_write(t, &st[id]);
        vidmm_text_add(t, "}}}");
    }
}

/* Dump, phase 5a: segment id (not system memory) as one block, its
 * suballocations and the free ranges between them; *i walks l's
 * extents. */
static void block_write(struct vidmm_text *t, const struct vidmm_adapter *a, uint32_t id, const struct extent_list *l,
                        size_t *i, const struct stats *st)
{
    const uint64_t segsize = a->seg[id].size;
    vidmm_text_add(t, "\n        \"0\": {\"MapRefCount\": 0, \"TotalBytes\": %llu, \"UnusedBytes\": %llu, ",
                   U(segsize), U(seg_free(&a->seg[id])));
    vidmm_text_add(t, "\"Allocations\": %llu, \"UnusedRanges\": %llu, \"Suballocations\": [", U(st[id].allocs),
                   U(st[id].unused_ranges));
    uint64_t at = 0;
    int first = 1;
    for (; *i < l->n && l->ex[*i].segment == id; ++*i) {
        const struct ext *e = &l->ex[*i];
        if (e->offset > at) {
            vidmm_text_add(t, "%s\n          {\"Offset\": %llu, \"Type\": \"FREE\", \"Size\": %llu}",
                           first ? "" : ",", U(at), U(e->offset - at));
            first = 0;
        }
        uint32_t usage;
        const char *type = alloc_type(e->al, &usage);
        vidmm_text_add(t, "%s\n          {\"Offset\": %llu, \"Type\": \"%s\", \"Size\": %llu, \"Usage\": %u",
                       first ? "" : ",", U(e->offset), type, U(e->size), usage);
        name_member(t, e->al);
        vidmm_text_add(t, "}");
        first = 0;
        if (e->offset + e->size > at)
            at = e->offset + e->size;
    }
    if (at < segsize)
        vidmm_text_add(t, "%s\n          {\"Offset\": %llu, \"Type\": \"FREE\", \"Size\": %llu}",
                       first ? "" : ",", U(at), U(segsize - at));
    vidmm_text_add(t, "\n        ]}\n      },\n      \"DedicatedAllocations\": []\n    }");
}

/* Dump, phase 5b: system memory's allocations, each a dedicated one. */
static void dedicated_write(struct vidmm_text *t, const struct vidmm_adapter *a)
{
    vidmm_text_add(t, "},\n      \"DedicatedAllocations\": [");
    int first = 1;
    uint32_t it = 0;
    for (const struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;) {
        uint64_t off;
        uint32_t extents;
        if (al->zombie || vidmm_observe_where(al, &off, &extents) != 0 || !extents)
            continue;
        uint32_t usage;
        const char *type = alloc_type(al, &usage);
        vidmm_text_add(t, "%s\n        {\"Type\": \"%s\", \"Size\": %llu, \"Usage\": %u", first ? "" : ",", type,
                       U(al->size), usage);
        name_member(t, al);
        vidmm_text_add(t, "}");
        first = 0;
    }
    vidmm_text_add(t, "\n      ]\n    }");
}

/* Dump, phase 5: "DefaultPools", one pool per segment. */
static void default_pools_write(struct vidmm_text *t, const struct vidmm_adapter *a, const struct extent_list *l,
                                const struct stats *st)
{
    vidmm_text_add(t, "\n  },\n  \"DefaultPools\": {");
    size_t i = 0;
    for (uint32_t id = 0; id < a->segment_count; id++) {
        char lb[48];
        label(a, id, lb, sizeof lb);
        vidmm_text_add(t, "%s\n    \"%s\": {\n      \"PreferredBlockSize\": %llu,\n      \"Blocks\": {", id ? "," : "",
                       lb, U(id ? a->seg[id].size : 0));
        if (id)
            block_write(t, a, id, l, &i, st);
        else
            dedicated_write(t, a);
    }
}

/* The D3D12 Memory Allocator's JSON dump layout (docs/OBSERVABILITY.md),
 * in phases: the extents, their statistics, then each top-level member
 * in order. */
static vidmm_status stats_json(const struct vidmm_adapter *a, char *buf, size_t size, size_t *needed)
{
    if (!vidmm_text_args_ok(buf, size, needed))
        return vidmm_text_args_fail(buf, size, needed);
    struct extent_list l = { NULL, 0, 0, 0, 0 };
    vidmm_status status = collect_extents(a, &l);
    if (status < 0)
        return status;
    struct stats st[VIDMM_MAX_SEGMENTS + 1], total;
    memset(st, 0, sizeof st);
    memset(&total, 0, sizeof total);
    segment_stats(a, &l, st, &total);
    struct vidmm_text t = { buf, size, 0 };
    general_write(&t, a, &l, &total);
    memory_info_write(&t, a, st);
    default_pools_write(&t, a, &l, st);
    vidmm_text_add(&t, "\n  },\n  \"CustomPools\": {}\n}\n");
    if (l.ex)
        vidmm_hfree(a->ha, l.ex, l.cap * sizeof(*l.ex), _Alignof(struct ext));
    return vidmm_text_finish(&t, needed);
}

vidmm_status vidmm_adapter_stats_json(const struct vidmm_adapter *a, char *buf, size_t size, size_t *needed)
{
    VIDMM_ENTRY(a, stats_json(a, buf, size, needed));
}
