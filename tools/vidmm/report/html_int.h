/*
 * html_int.h - what the HTML report's collection (html.c) and drawing
 * (html_draw.c) share: the series the collection keeps and the drawing
 * reads, its sizes and owner slots.  Not for the rest of the tool.
 */
#ifndef VIDMM_TOOL_HTML_INT_H
#define VIDMM_TOOL_HTML_INT_H

#include "html.h"

#include <stdint.h>

#define HTML_MAX_POINTS 2048         /* per series, and paging buckets */
#define HTML_MAX_SEGMENTS 16
#define HTML_PROCS 14                /* processes drawn on their own: P1..P14 */
#define SLOT_UNOWNED 0               /* allocations no process referenced yet */
#define SLOT_OTHER (HTML_PROCS + 1)  /* processes P15 and later */
#define SLOT_VIDMM (HTML_PROCS + 2)  /* bytes vidmm uses itself (page tables, paging buffers) */
#define NSLOT (HTML_PROCS + 3)
#define NOPS 17                      /* enum vidmm_paging_operation */
#define PAGING_BARS 240              /* most bars the paging chart draws */
#define ABSENT UINT64_MAX            /* usage of a process that does not exist (yet or any more) */

struct owner {
    vidmm_handle h;
    uint32_t slot;
};

struct html_series {
    uint32_t nseg;
    struct vidmm_segment_info seg[HTML_MAX_SEGMENTS];   /* as opened: kind and size do not change */
    uint32_t stride;                 /* values per point: occupancy, then usage */
    uint64_t *cur;                   /* the state after the last call */

    uint64_t width;                  /* microseconds per point interval (a power of two) */
    uint32_t npts, ptcap;
    uint64_t *time;                  /* end of the last call of each kept interval */
    uint64_t *val;                   /* npts * stride */

    uint64_t pwidth;                 /* calls per paging bucket (a power of two) */
    uint64_t ncalls;                 /* calls observed, the adapter-open slice included */
    uint64_t (*paging)[NOPS];        /* HTML_MAX_POINTS buckets */
    uint64_t ops_seen[NOPS];         /* bytes per operation over the run */

    uint32_t *live;                  /* allocation ids that were alive at the last walk */
    uint32_t nlive, live_cap, seen_allocs;
    struct owner *owners;
    uint32_t owners_cap;
    int walked;                      /* cur's occupancy part is valid */
    int oom;
};

static inline uint64_t *occ_of(uint64_t *v, uint32_t seg)
{
    return v + (size_t)seg * NSLOT;
}

/* Process p's [usage local, budget local, usage non-local, budget non-local]. */
static inline uint64_t *use_of(const struct html_series *s, uint64_t *v, uint32_t p)
{
    return v + (size_t)s->nseg * NSLOT + (size_t)(p - 1) * 4;
}

/* The owner slot a process P<p> is drawn in. */
static inline uint32_t proc_slot(uint32_t p)
{
    return p <= HTML_PROCS ? p : SLOT_OTHER;
}

#endif
