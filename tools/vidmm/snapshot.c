/*
 * snapshot.c - the statistics snapshot in the GpuMemDump JSON layout
 * (the format of VMA's vmaBuildStatsString and D3D12MA's BuildStatsString,
 * read by GpuMemDumpVis.py; docs/OUTPUTS.md).
 *
 * Mapping: "General.API" is "Direct3D 12" (the visualiser knows only that
 * and "Vulkan"); each segment is one heap in "MemoryInfo" and one default
 * pool in "DefaultPools".  A memory, aperture or AGP segment is one block
 * whose "Suballocations" are the tool's allocations at their offsets -
 * an allocation made of several extents (a page set) appears once per
 * extent - with the gaps as FREE entries, in offset order, because the
 * visualiser lays suballocations end to end.  System memory (segment 0)
 * has no address space to draw: its allocations are "DedicatedAllocations".
 * Bytes vidmm uses for itself (page tables, paging buffers) are not
 * allocations the tool made; they are in the gaps, and the block's
 * UnusedBytes is vidmm's own count of free bytes.
 */
#include "report.h"

#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static int extent_cmp(const void *pa, const void *pb)
{
    const struct tr_extent *a = pa, *b = pb;
    if (a->segment != b->segment)
        return a->segment < b->segment ? -1 : 1;
    /* System memory offsets are offsets in each allocation's own backing
     * store: group by allocation there. */
    if (a->segment == 0 && a->alloc != b->alloc)
        return a->alloc < b->alloc ? -1 : 1;
    if (a->offset != b->offset)
        return a->offset < b->offset ? -1 : 1;
    return a->alloc < b->alloc ? -1 : a->alloc > b->alloc;
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

static void stats_write(FILE *f, const struct stats *s)
{
    fprintf(f, "{\"BlockCount\": %" PRIu64 ", \"BlockBytes\": %" PRIu64 ", \"AllocationCount\": %" PRIu64
               ", \"AllocationBytes\": %" PRIu64 ", \"UnusedRangeCount\": %" PRIu64,
            s->blocks, s->block_bytes, s->allocs, s->alloc_bytes, s->unused_ranges);
    if (s->allocs)
        fprintf(f, ", \"AllocationSizeMin\": %" PRIu64 ", \"AllocationSizeMax\": %" PRIu64, s->alloc_min,
                s->alloc_max);
    if (s->unused_ranges)
        fprintf(f, ", \"UnusedRangeSizeMin\": %" PRIu64 ", \"UnusedRangeSizeMax\": %" PRIu64, s->unused_min,
                s->unused_max);
    fprintf(f, "}");
}

/* D3D12 resource types GpuMemDumpVis colours, and a usage (resource
 * flags: 0x1 ALLOW_RENDER_TARGET) for primaries. */
static const char *alloc_type(uint32_t kind, uint32_t *usage)
{
    *usage = 0;
    switch (kind) {
    case SOFTGPU_ALLOC_TEXTURE: return "TEXTURE2D";
    case SOFTGPU_ALLOC_PRIMARY: *usage = 1; return "TEXTURE2D";
    case SOFTGPU_ALLOC_CONSTANT:
    case SOFTGPU_ALLOC_STAGING:
    case SOFTGPU_ALLOC_RING: return "BUFFER";
    default: return "UNKNOWN";
    }
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s >= 0x20)
            fputc(*s, f);
    }
    fputc('"', f);
}

/* The process that owns allocation a for accounting (its trace id), or 0. */
static uint32_t owner_of(struct tr *t, uint32_t a)
{
    struct vidmm_residency_state rs;
    if (vidmm_allocation_residency(t->adapter, t->obj[TR_ALLOC][a].h, &rs) < 0 || !rs.owner)
        return 0;
    for (uint32_t p = 1; p <= t->nobj[TR_PROC]; p++)
        if (t->obj[TR_PROC][p].alive && t->obj[TR_PROC][p].h == rs.owner)
            return p;
    return 0;
}

static void suballoc(FILE *f, struct tr *t, const struct tr_extent *e, int *first)
{
    uint32_t usage;
    const struct tr_obj *o = &t->obj[TR_ALLOC][e->alloc];
    const char *type = alloc_type(o->kind, &usage);
    uint32_t owner = owner_of(t, e->alloc);
    char name[96];
    if (owner)
        snprintf(name, sizeof name, "A%u %s (P%u %s)", e->alloc, o->name, owner, t->obj[TR_PROC][owner].name);
    else
        snprintf(name, sizeof name, "A%u %s", e->alloc, o->name);
    fprintf(f, "%s\n          {\"Offset\": %" PRIu64 ", \"Type\": \"%s\", \"Size\": %" PRIu64 ", \"Usage\": %u, \"Name\": ",
            *first ? "" : ",", e->offset, type, e->size, usage);
    json_str(f, name);
    fprintf(f, "}");
    *first = 0;
}

void snapshot_write(struct tr *t, FILE *f)
{
    struct vidmm_adapter_info ai;
    vidmm_adapter_query_info(t->adapter, &ai);
    uint32_t nseg = ai.segment_count < 32 ? ai.segment_count : 32;
    struct vidmm_segment_info si[32];
    for (uint32_t id = 0; id < nseg; id++)
        vidmm_segment_query(t->adapter, id, &si[id]);

    /* Every extent of every live allocation the tool made. */
    size_t n;
    struct tr_extent *ex = tr_extents(t, &n);
    if (ex)
        qsort(ex, n, sizeof(*ex), extent_cmp);

    /* Statistics per segment (system memory: dedicated allocations, one
     * per allocation, not per extent). */
    struct stats st[32], total;
    memset(st, 0, sizeof st);
    memset(&total, 0, sizeof total);
    for (uint32_t id = 0; id < nseg; id++) {
        size_t i = 0;
        while (i < n && ex[i].segment < id)
            i++;
        if (id == 0) {
            while (i < n && ex[i].segment == 0) {
                uint32_t a = ex[i].alloc;
                uint64_t bytes = 0;
                for (; i < n && ex[i].segment == 0 && ex[i].alloc == a; i++)
                    bytes += ex[i].size;
                stats_alloc(&st[0], bytes);
                st[0].blocks++;
                st[0].block_bytes += bytes;
            }
            continue;
        }
        st[id].blocks = 1;
        st[id].block_bytes = si[id].size;
        uint64_t at = 0;
        for (; i < n && ex[i].segment == id; i++) {
            if (ex[i].offset > at)
                stats_unused(&st[id], ex[i].offset - at);
            stats_alloc(&st[id], ex[i].size);
            if (ex[i].offset + ex[i].size > at)
                at = ex[i].offset + ex[i].size;
        }
        if (at < si[id].size)
            stats_unused(&st[id], si[id].size - at);
    }
    for (uint32_t id = 0; id < nseg; id++)
        stats_add(&total, &st[id]);

    uint64_t dedicated = 0, shared = 0;
    for (uint32_t id = 1; id < nseg; id++) {
        if (si[id].kind == VIDMM_SEGMENT_KIND_MEMORY)
            dedicated += si[id].size;
        else
            shared += si[id].size;
    }
    fprintf(f, "{\n  \"General\": {\"API\": \"Direct3D 12\", \"GPU\": \"softgpu %s (vidmm %s)\", "
               "\"DedicatedVideoMemory\": %" PRIu64 ", \"DedicatedSystemMemory\": 0, \"SharedSystemMemory\": %" PRIu64
               "},\n",
            t->hdr.preset, VIDMM_VERSION_STRING, dedicated, shared + si[0].size);
    fprintf(f, "  \"Total\": ");
    stats_write(f, &total);
    fprintf(f, ",\n  \"MemoryInfo\": {");
    char label[32][48];
    for (uint32_t id = 0; id < nseg; id++) {
        snprintf(label[id], sizeof label[id], "Segment %u (%s)", id, vidmm_segment_kind_str(si[id].kind));
        char flags[512];
        cli_segment_flag_names(si[id].flags, flags, sizeof flags);
        fprintf(f, "%s\n    \"%s\": {\"Flags\": [", id ? "," : "", label[id]);
        if (id && strcmp(flags, "-")) {
            int first = 1;
            for (char *save = NULL, *p = strtok_r(flags, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
                fprintf(f, "%s\"%s\"", first ? "" : ", ", p);
                first = 0;
            }
        }
        fprintf(f, "], \"Size\": %" PRIu64 ", \"Budget\": {\"BudgetBytes\": %" PRIu64 ", \"UsageBytes\": %" PRIu64 "}, "
                   "\"Stats\": ",
                si[id].size, si[id].commit_limit, si[id].committed);
        stats_write(f, &st[id]);
        fprintf(f, ", \"MemoryPools\": {\"%s\": {\"Flags\": [], \"Stats\": ", label[id]);
        stats_write(f, &st[id]);
        fprintf(f, "}}}");
    }
    fprintf(f, "\n  },\n  \"DefaultPools\": {");
    for (uint32_t id = 0; id < nseg; id++) {
        size_t i = 0;
        while (i < n && ex[i].segment < id)
            i++;
        fprintf(f, "%s\n    \"%s\": {\n      \"PreferredBlockSize\": %" PRIu64 ",\n      \"Blocks\": {", id ? "," : "",
                label[id], id ? si[id].size : 0);
        if (id) {
            fprintf(f, "\n        \"0\": {\"MapRefs\": 0, \"TotalBytes\": %" PRIu64 ", \"UnusedBytes\": %" PRIu64
                       ", \"Allocations\": %" PRIu64 ", \"UnusedRanges\": %" PRIu64 ", \"Suballocations\": [",
                    si[id].size, si[id].free_bytes, st[id].allocs, st[id].unused_ranges);
            uint64_t at = 0;
            int first = 1;
            for (; i < n && ex[i].segment == id; i++) {
                if (ex[i].offset > at) {
                    fprintf(f, "%s\n          {\"Offset\": %" PRIu64 ", \"Type\": \"FREE\", \"Size\": %" PRIu64 "}",
                            first ? "" : ",", at, ex[i].offset - at);
                    first = 0;
                }
                suballoc(f, t, &ex[i], &first);
                if (ex[i].offset + ex[i].size > at)
                    at = ex[i].offset + ex[i].size;
            }
            if (at < si[id].size)
                fprintf(f, "%s\n          {\"Offset\": %" PRIu64 ", \"Type\": \"FREE\", \"Size\": %" PRIu64 "}",
                        first ? "" : ",", at, si[id].size - at);
            fprintf(f, "\n        ]}\n      },\n      \"DedicatedAllocations\": []\n    }");
            continue;
        }
        fprintf(f, "},\n      \"DedicatedAllocations\": [");
        int first = 1;
        while (i < n && ex[i].segment == 0) {
            uint32_t a = ex[i].alloc;
            struct tr_extent e = ex[i];
            e.size = 0;
            e.offset = 0;
            for (; i < n && ex[i].segment == 0 && ex[i].alloc == a; i++)
                e.size += ex[i].size;
            uint32_t usage;
            const struct tr_obj *o = &t->obj[TR_ALLOC][a];
            const char *type = alloc_type(o->kind, &usage);
            uint32_t owner = owner_of(t, a);
            char name[96];
            if (owner)
                snprintf(name, sizeof name, "A%u %s (P%u %s)", a, o->name, owner, t->obj[TR_PROC][owner].name);
            else
                snprintf(name, sizeof name, "A%u %s", a, o->name);
            fprintf(f, "%s\n        {\"Type\": \"%s\", \"Size\": %" PRIu64 ", \"Usage\": %u, \"Name\": ", first ? "" : ",",
                    type, e.size, usage);
            json_str(f, name);
            fprintf(f, "}");
            first = 0;
        }
        fprintf(f, "\n      ]\n    }");
    }
    fprintf(f, "\n  },\n  \"CustomPools\": {},\n  \"vidmm\": {\"format\": \"vidmm-snapshot/1\", \"scenario\": ");
    json_str(f, t->hdr.scenario);
    uint64_t live = 0;
    for (uint32_t a = 1; a <= t->nobj[TR_ALLOC]; a++)
        live += t->obj[TR_ALLOC][a].alive != 0;
    fprintf(f, ", \"live_allocations\": %" PRIu64 "}\n}\n", live);
    free(ex);
}
