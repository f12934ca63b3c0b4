/*
 * evict_scan.c - eviction scan for contiguous requests (see evict_scan.h).
 *
 * Algorithm.  The allocator's address space is a sequence of live and
 * free ranges, never two free ranges in a row.  Pretend every roster block
 * (a block the caller added) were free: the free ranges and roster blocks
 * then merge into maximal "runs" [L, R) - a run is a chain of roster
 * blocks, each pair separated by at most one free range, plus the free
 * ranges at both of its ends.  A request fits after evicting some roster
 * blocks exactly when the aligned request fits inside one run (clipped to
 * [start, end)).
 *
 * Adding block B merges at most three runs: B itself with the free bytes
 * on both sides (vidmm_ra_node_neighbours, O(1) from the allocator's
 * address links), the run ending at B's live neighbour below (if that
 * neighbour is in the roster, it is necessarily the right end of its run:
 * the next live block after it is B, which was not in the roster) and the
 * run starting at its live neighbour above.  Membership is one load: an
 * array indexed by allocator node holds the scan's stamp and the roster
 * index, so nothing is cleared between scans (a stale stamp means "not a
 * member"; the array is wiped once per 2^32 scans).  Each run keeps its bounds only at its two end entries,
 * which point at each other (partner): a merge reads the far ends of the
 * two neighbour runs and relinks them in O(1) - no union-find.  Within a
 * run the entries are chained in address order (above), linked as the
 * merges happen.  Then only B's run can newly hold the request (every
 * other run is unchanged and did not), so the fit test after each add is
 * O(1), and the first add after which the request fits is exactly the
 * first LRU prefix whose union with free space holds the hole.
 *
 * Choosing the hole.  In the run that fits, the window [s, s+size) with s
 * aligned that evicts the fewest bytes (the sum of the roster blocks it
 * overlaps) is chosen.  The cost only drops when s passes the end of a
 * block, so the candidates are s = align_up(L') and s = align_up(end of
 * each block) (clipped to L' = max(L, start)); two cursors walk the run's
 * chain once, adding blocks as they enter the window on the right and
 * removing them as they leave on the left: O(r) for a run of r blocks,
 * once per scan.  drm_mm instead takes the lowest (or highest) position
 * of the first hole; both evict only blocks of the prefix.
 *
 * Nothing here writes the allocator: drm_mm unlinks the scanned nodes
 * from its node list during a scan and needs them removed in reverse
 * order to restore it; this scan keeps its state on the side.
 */
#include "seg/evict_scan.h"

#include "core/alloc_sites.h"

#include <string.h>

#define ES_NONE 0xFFFFFFFFu

struct vidmm_es_entry {    /* one cache line */
    uint64_t offset, size;  /* the block */
    uint64_t lo, hi;        /* run bounds: lo valid at the run's left end, hi at its right end */
    uint64_t tag;
    uint32_t node;
    uint32_t partner;       /* at a run's end entries: the other end (itself when alone) */
    uint32_t above;         /* next roster entry of the run in address order, ES_NONE at its right end */
    uint32_t victim;        /* overlaps the chosen hole */
    uint64_t pad;
};

void vidmm_evict_scan_init(struct vidmm_evict_scan *s, const struct vidmm_host_allocator *ha)
{
    memset(s, 0, sizeof *s);
    s->ha = ha;
}

static void free_entries(struct vidmm_evict_scan *s)
{
    if (s->ent)
        vidmm_hfree(s->ha, s->ent, (size_t)s->ent_cap * sizeof *s->ent, 64);
    if (s->victims)
        vidmm_hfree(s->ha, s->victims, (size_t)s->ent_cap * sizeof *s->victims, 16);
    s->ent = NULL;
    s->victims = NULL;
    s->ent_cap = 0;
}

void vidmm_evict_scan_fini(struct vidmm_evict_scan *s)
{
    if (!s)
        return;
    free_entries(s);
    if (s->map)
        vidmm_hfree(s->ha, s->map, (size_t)s->map_cap * sizeof *s->map, 64);
    const struct vidmm_host_allocator *ha = s->ha;
    vidmm_evict_scan_init(s, ha);
}

void vidmm_evict_scan_end(struct vidmm_evict_scan *s)
{
    if (!s)
        return;
    s->ra = NULL;
    s->found = 0;
    s->count = 0;
    s->victim_count = 0;
    s->evict_bytes = 0;
}

/* Make room for cap roster entries and a map over map_cap nodes. */
static vidmm_status reserve(struct vidmm_evict_scan *s, uint32_t cap, uint32_t map_cap)
{
    if (cap > s->ent_cap) {
        uint32_t n = s->ent_cap ? s->ent_cap : 64;
        while (n < cap)
            n = n > UINT32_MAX / 2 ? cap : n * 2;
        struct vidmm_es_entry *e = vidmm_halloc(s->ha, VIDMM_SITE_EVICT_SCAN_ENTRIES, (size_t)n * sizeof *e, 64);
        struct vidmm_evict_victim *v = e ? vidmm_halloc(s->ha, VIDMM_SITE_EVICT_SCAN_VICTIMS, (size_t)n * sizeof *v, 16) : NULL;
        if (!v) {
            if (e)
                vidmm_hfree(s->ha, e, (size_t)n * sizeof *e, 64);
            return VIDMM_E_NO_HOST_MEMORY;
        }
        free_entries(s);
        s->ent = e;
        s->victims = v;
        s->ent_cap = n;
    }
    if (map_cap > s->map_cap) {
        /* Zeroed: stamp 0 names no scan. */
        uint64_t *m = vidmm_hzalloc(s->ha, VIDMM_SITE_EVICT_SCAN_MAP, (size_t)map_cap * sizeof *m, 64);
        if (!m)
            return VIDMM_E_NO_HOST_MEMORY;
        if (s->map)
            vidmm_hfree(s->ha, s->map, (size_t)s->map_cap * sizeof *s->map, 64);
        s->map = m;
        s->map_cap = map_cap;
    }
    return VIDMM_OK;
}

vidmm_status vidmm_evict_scan_begin(struct vidmm_evict_scan *s, const struct vidmm_range_alloc *ra,
                                    uint64_t size, uint64_t align, uint64_t start, uint64_t end,
                                    uint32_t max_blocks)
{
    if (!s)
        return VIDMM_E_INVALID_ARG;
    vidmm_evict_scan_end(s);
    if (!s->ha || !ra || !ra->nodes || !size || (align & (align - 1)))
        return VIDMM_E_INVALID_ARG;
    uint64_t cmask = ra->chunk - 1;
    if (size > UINT64_MAX - cmask || start > UINT64_MAX - cmask)
        return VIDMM_E_OVERFLOW;
    size = (size + cmask) & ~cmask;
    if (align < ra->chunk)
        align = ra->chunk;
    if (!end || end > ra->size)
        end = ra->size;
    start = (start + cmask) & ~cmask;
    end &= ~cmask;
    if (start >= end)
        return VIDMM_E_INVALID_ARG;
    /* Offsets are below 2^62, so aligning up cannot wrap. */
    uint64_t first = (start + align - 1) & ~(align - 1);
    if (first >= end || end - first < size)
        return VIDMM_E_NO_SEGMENT_SPACE;
    uint64_t live = ra->live_count;
    uint32_t cap = (uint64_t)max_blocks < live ? max_blocks : (uint32_t)live;
    vidmm_status st = reserve(s, cap, ra->node_cap);
    if (st < 0)
        return st;
    if (++s->stamp == 0) { /* wrapped: forget every old stamp */
        memset(s->map, 0, (size_t)s->map_cap * sizeof *s->map);
        s->stamp = 1;
    }
    s->ra = ra;
    s->size = size;
    s->align = align;
    s->start = start;
    s->end = end;
    s->cap = cap;
    return VIDMM_OK;
}

/* Roster index of node, or ES_NONE: one load (the stamp names the scan). */
void vidmm_evict_scan_set_choice(struct vidmm_evict_scan *s, int choice)
{
    if (s)
        s->lowest = choice == VIDMM_EVICT_LOWEST;
}

static inline uint32_t lookup(const struct vidmm_evict_scan *s, uint32_t node)
{
    if (node >= s->map_cap)
        return ES_NONE;
    uint64_t v = s->map[node];
    return (uint32_t)(v >> 32) == s->stamp ? (uint32_t)v : ES_NONE;
}

/* Choose the cheapest window in the run starting at entry a, clipped to
 * [lo, hi) (which holds the request), and list its victims. */
static void choose(struct vidmm_evict_scan *s, uint32_t a, uint64_t lo, uint64_t hi)
{
    struct vidmm_es_entry *ent = s->ent;
    uint64_t size = s->size, amask = s->align - 1;
    uint64_t last = hi - size; /* the highest start that fits */
    uint64_t best_cost = UINT64_MAX, best = 0, cost = 0;
    uint32_t j = a, k = a;     /* blocks in the window: [j, k) of the chain */
    uint32_t cb = ES_NONE;     /* candidate: after block cb (ES_NONE: at lo) */
    uint64_t c = (lo + amask) & ~amask;
    for (;;) {
        if (c > last)
            break;
        while (k != ES_NONE && ent[k].offset < c + size) {
            cost += ent[k].size;
            k = ent[k].above;
        }
        while (j != k && ent[j].offset + ent[j].size <= c) {
            cost -= ent[j].size;
            j = ent[j].above;
        }
        if (cost < best_cost) {
            best_cost = cost;
            best = c;
            if (!cost || s->lowest)
                break;
        }
        cb = cb == ES_NONE ? a : ent[cb].above;
        if (cb == ES_NONE)
            break;
        uint64_t e = ent[cb].offset + ent[cb].size;
        c = ((e > lo ? e : lo) + amask) & ~amask;
    }
    s->hole = best;
    s->evict_bytes = 0;
    s->victim_count = 0;
    for (uint32_t i = a; i != ES_NONE && ent[i].offset < best + size; i = ent[i].above) {
        if (ent[i].offset + ent[i].size <= best)
            continue;
        ent[i].victim = 1;
        s->victims[s->victim_count].node = ent[i].node;
        s->victims[s->victim_count].tag = ent[i].tag;
        s->victim_count++;
        s->evict_bytes += ent[i].size;
    }
    s->found = 1;
}

int vidmm_evict_scan_add(struct vidmm_evict_scan *s, uint32_t node, uint64_t tag)
{
    if (!s || !s->ra || s->found)
        return VIDMM_E_STATE;
    struct vidmm_ra_neighbours nb;
    if (vidmm_ra_node_neighbours(s->ra, node, &nb) < 0 || node >= s->map_cap || lookup(s, node) != ES_NONE)
        return VIDMM_E_INVALID_HANDLE;
    if (s->count >= s->cap)
        return VIDMM_E_OVERFLOW;
    struct vidmm_es_entry *ent = s->ent;
    uint32_t b = s->count++;
    s->map[node] = (uint64_t)s->stamp << 32 | b;
    struct vidmm_es_entry *e = &ent[b];
    e->offset = nb.offset;
    e->size = nb.size;
    e->tag = tag;
    e->node = node;
    e->above = ES_NONE;
    e->victim = 0;
    uint64_t lo = nb.offset - nb.free_below, hi = nb.offset + nb.size + nb.free_above;
    uint32_t left = b, right = b;
    uint32_t p = nb.live_below == VIDMM_RA_NONE ? ES_NONE : lookup(s, nb.live_below);
    if (p != ES_NONE) {        /* p is the right end of its run */
        left = ent[p].partner;
        lo = ent[left].lo;
        ent[p].above = b;
    }
    uint32_t q = nb.live_above == VIDMM_RA_NONE ? ES_NONE : lookup(s, nb.live_above);
    if (q != ES_NONE) {        /* q is the left end of its run */
        right = ent[q].partner;
        hi = ent[right].hi;
        e->above = q;
    }
    ent[left].partner = right;
    ent[right].partner = left;
    ent[left].lo = lo;
    ent[right].hi = hi;

    /* Does the request fit in this run, clipped to [start, end)? */
    uint64_t clo = lo > s->start ? lo : s->start;
    uint64_t chi = hi < s->end ? hi : s->end;
    uint64_t first = (clo + s->align - 1) & ~(s->align - 1);
    if (first >= chi || chi - first < s->size)
        return 0;
    choose(s, left, clo, chi);
    return 1;
}

int vidmm_evict_scan_must_evict(const struct vidmm_evict_scan *s, uint32_t node)
{
    if (!s || !s->ra || !s->found)
        return 0;
    uint32_t i = lookup(s, node);
    return i != ES_NONE && s->ent[i].victim;
}
