/*
 * memmap.c - the segments' memory map as SVG (--memmap FILE): one row
 * per segment, each drawn at its own scale, so a 256 MiB aperture is as
 * readable as an 8 GiB memory segment beside it.  (The GpuMemDump
 * visualiser draws every block at the scale of the largest one; this
 * picture is the readable companion of the --snapshot JSON.)
 *
 * Everything comes from the library's public calls: the segment query,
 * the allocation iterator (docs/OBSERVABILITY.md) and each allocation's
 * physical ranges, so a page set shows every extent where it lies.
 * Colours: one hue per process (grey: no process), lighter when the
 * allocation is offered; hovering shows name, size, process and extent.
 */
#include "report.h"
#include "html.h"

#include <inttypes.h>
#include <stdlib.h>

#define MM_WIDTH 1000       /* px of one segment's row */
#define MM_ROW 26
#define MM_LABEL 18
#define MM_MARGIN 10

/* A handle without the adapter's salt (its low 40 bits): the same from
 * run to run, as in the snapshot JSON. */
static uint64_t mm_id(vidmm_handle h)
{
    return (uint64_t)h & 0xFFFFFFFFFFull;
}

static void mm_hue(vidmm_handle process, int offered, char *buf, size_t n)
{
    if (!process) {
        snprintf(buf, n, offered ? "#d0d0d0" : "#9a9a9a");
        return;
    }
    unsigned h = (unsigned)((mm_id(process) * 0x9E3779B97F4A7C15ull) >> 55) % 360u;
    snprintf(buf, n, "hsl(%u,60%%,%u%%)", h, offered ? 78u : 52u);
}

static const char *mm_unit(uint64_t bytes, char *buf, size_t n)
{
    if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0)
        snprintf(buf, n, "%" PRIu64 " GiB", bytes >> 30);
    else if (bytes >= (1ull << 20))
        snprintf(buf, n, "%.1f MiB", (double)bytes / (double)(1ull << 20));
    else
        snprintf(buf, n, "%" PRIu64 " KiB", bytes >> 10);
    return buf;
}

/* One allocation's extents in segment s of row y. */
static void mm_alloc(struct tr *t, FILE *f, const struct vidmm_segment_info *s, const struct vidmm_allocation_item *it,
                     double y)
{
    struct vidmm_physical_range r[64];
    uint32_t count = 0;
    if (vidmm_allocation_physical_ranges(t->adapter, it->handle, r, 64, &count) < 0)
        return;
    char fill[32], a[32], b[32];
    mm_hue(it->process, it->residency == VIDMM_RESIDENCY_OFFERED, fill, sizeof fill);
    uint32_t drawn = 0;
    for (uint32_t i = 0; i < count && i < 64; i++)
        drawn += r[i].segment_id == s->id;
    if (!drawn) {
        /* Mapped into this segment from system pages (the aperture): the
         * item's own range is where the GPU sees it. */
        r[0].segment_id = s->id;
        r[0].offset = it->offset;
        r[0].size = it->size;
        count = 1;
    }
    for (uint32_t i = 0; i < count && i < 64; i++) {
        if (r[i].segment_id != s->id || !s->size)
            continue;
        double x = MM_MARGIN + (double)r[i].offset * MM_WIDTH / (double)s->size;
        double w = (double)r[i].size * MM_WIDTH / (double)s->size;
        if (w < 0.5)
            w = 0.5;   /* visible, however small at this segment's scale */
        fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\" stroke=\"#333\" stroke-width=\"0.3\">",
                x, y, w, MM_ROW, fill);
        fprintf(f, "<title>");
        html_escape(f, it->name[0] ? it->name : "(unnamed)");
        fprintf(f, " - %s, process %" PRIu64 ", extent %u of %u at %s</title></rect>\n",
                mm_unit(it->size, a, sizeof a), mm_id(it->process), i + 1, count, mm_unit(r[i].offset, b, sizeof b));
    }
}

void memmap_write(struct tr *t, FILE *f)
{
    struct vidmm_adapter_info ai;
    if (vidmm_adapter_query_info(t->adapter, &ai) < 0)
        return;
    uint32_t rows = ai.segment_count ? ai.segment_count - 1 : 0;   /* segment 0 has no layout to draw */
    int height = MM_MARGIN * 2 + (int)rows * (MM_ROW + MM_LABEL + MM_MARGIN);
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
               "font-size=\"12\">\n",
            MM_WIDTH + 2 * MM_MARGIN, height);
    fprintf(f, "<title>vidmm segments, each at its own scale</title>\n");
    double y = MM_MARGIN;
    for (uint32_t id = 1; id < ai.segment_count; id++) {
        struct vidmm_segment_info s;
        if (vidmm_segment_query(t->adapter, id, &s) < 0)
            continue;
        char a[32], b[32], c[32];
        fprintf(f, "<text x=\"%d\" y=\"%.1f\">segment %u (%s): %s, %s free, 1 px = %s</text>\n", MM_MARGIN,
                y + MM_LABEL - 5, id, vidmm_segment_kind_str(s.kind), mm_unit(s.size, a, sizeof a),
                mm_unit(s.free_bytes, b, sizeof b), mm_unit(s.size / MM_WIDTH ? s.size / MM_WIDTH : 1, c, sizeof c));
        double ry = y + MM_LABEL;
        fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"#f4f4f4\" stroke=\"#999\"/>\n",
                MM_MARGIN, ry, MM_WIDTH, MM_ROW);
        struct vidmm_allocation_filter flt = { VIDMM_FILTER_SEGMENT, id, VIDMM_HANDLE_NULL, 0, 0 };
        uint64_t cursor = 0;
        struct vidmm_allocation_item it;
        while (vidmm_allocation_iterate(t->adapter, &flt, &cursor, &it) == VIDMM_OK)
            mm_alloc(t, f, &s, &it, ry);
        y += MM_ROW + MM_LABEL + MM_MARGIN;
    }
    fprintf(f, "</svg>\n");
}
