/*
 * html.c - the HTML report (see html.h, docs/OUTPUTS.md "The HTML report").
 *
 * Collection.  html_observe runs after every call (tr_set_observer) with
 * the call's slice on the timeline's simulated clock.  It keeps:
 *   - a state vector: bytes per segment per owner slot (what the stacked
 *     occupancy charts draw) and per process local/non-local usage and
 *     budget (the usage charts);
 *   - points: copies of that state, one per interval of `width`
 *     microseconds (the state after the last call ending in it).  When
 *     HTML_MAX_POINTS points are kept the width doubles and neighbours
 *     merge, so memory is bounded and the downsampling depends only on
 *     the call sequence (a replay downsamples the same way);
 *   - paging buckets: bytes per paging operation per interval of calls,
 *     merged pairwise the same way when the calls outgrow them.  Calls,
 *     not the simulated clock: that clock charges paging 1 us per 16 KiB,
 *     so bytes per interval of it are pinned at that rate whenever the
 *     engine is busy (every bar at the top), whereas bytes per call show
 *     which stretches of the workload page and how much.
 * Walking the allocations costs a query or two per live allocation, so it
 * is done only after calls that can move or create or free one (and when
 * anything was paged); other calls reuse the last walk.
 *
 * Drawing is html_draw.c.
 */
#include "html_int.h"

#include "cli/cli.h"
#include "report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct html_series *html_series_new(struct tr *t)
{
    struct html_series *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    struct vidmm_adapter_info ai;
    vidmm_adapter_query_info(t->adapter, &ai);
    s->nseg = ai.segment_count < HTML_MAX_SEGMENTS ? ai.segment_count : HTML_MAX_SEGMENTS;
    for (uint32_t id = 0; id < s->nseg; id++)
        vidmm_segment_query(t->adapter, id, &s->seg[id]);
    s->stride = s->nseg * NSLOT + HTML_PROCS * 4;
    s->cur = calloc(s->stride, sizeof(uint64_t));
    s->paging = calloc(HTML_MAX_POINTS, sizeof(*s->paging));
    if (!s->cur || !s->paging) {
        html_series_free(s);
        return NULL;
    }
    s->width = 1;
    s->pwidth = 1;
    return s;
}

void html_series_free(struct html_series *s)
{
    if (!s)
        return;
    free(s->cur);
    free(s->time);
    free(s->val);
    free(s->paging);
    free(s->live);
    free(s->owners);
    free(s);
}

int html_series_oom(const struct html_series *s)
{
    return s->oom;
}

/* ---- collection ------------------------------------------------------ */

static int owner_cmp(const void *pa, const void *pb)
{
    const struct owner *a = pa, *b = pb;
    return a->h < b->h ? -1 : a->h > b->h;
}

/* Recompute the occupancy part of cur: each live allocation's placed
 * bytes in its segment, under its accounting owner's slot, and per
 * segment with an address range the bytes vidmm itself uses there. */
static void walk(struct tr *t, struct html_series *s)
{
    uint32_t np = t->nobj[TR_PROC];
    if (s->owners_cap < np + 1) {
        struct owner *n = realloc(s->owners, (size_t)(np + 16) * sizeof(*n));
        if (!n) {
            s->oom = 1;
            return;
        }
        s->owners = n;
        s->owners_cap = np + 16;
    }
    uint32_t no = 0;
    for (uint32_t p = 1; p <= np; p++)
        if (t->obj[TR_PROC][p].alive)
            s->owners[no++] = (struct owner){ t->obj[TR_PROC][p].h, proc_slot(p) };
    qsort(s->owners, no, sizeof(*s->owners), owner_cmp);

    /* New ids join the live list; ids found dead leave it, so a walk
     * costs the live allocations, not every one ever created. */
    uint32_t na = t->nobj[TR_ALLOC];
    if (s->live_cap < s->nlive + (na - s->seen_allocs)) {
        uint32_t cap = s->nlive + (na - s->seen_allocs) + 64;
        uint32_t *n = realloc(s->live, (size_t)cap * sizeof(*n));
        if (!n) {
            s->oom = 1;
            return;
        }
        s->live = n;
        s->live_cap = cap;
    }
    for (uint32_t a = s->seen_allocs + 1; a <= na; a++)
        s->live[s->nlive++] = a;
    s->seen_allocs = na;

    memset(s->cur, 0, (size_t)s->nseg * NSLOT * sizeof(uint64_t));
    uint32_t kept = 0;
    for (uint32_t i = 0; i < s->nlive; i++) {
        uint32_t a = s->live[i];
        const struct tr_obj *o = &t->obj[TR_ALLOC][a];
        if (!o->alive)
            continue;
        s->live[kept++] = a;
        struct vidmm_allocation_state as;
        struct vidmm_residency_state rs;
        if (vidmm_allocation_query(t->adapter, o->h, &as) < 0 || as.segment_id >= s->nseg)
            continue;
        uint32_t slot = SLOT_UNOWNED;
        if (vidmm_allocation_residency(t->adapter, o->h, &rs) == VIDMM_OK && rs.owner) {
            struct owner key = { rs.owner, 0 };
            const struct owner *hit = bsearch(&key, s->owners, no, sizeof(*s->owners), owner_cmp);
            if (hit)
                slot = hit->slot;
        }
        occ_of(s->cur, as.segment_id)[slot] += as.size;
    }
    s->nlive = kept;
    for (uint32_t id = 1; id < s->nseg; id++) {
        struct vidmm_segment_info si;
        if (vidmm_segment_query(t->adapter, id, &si) < 0)
            continue;
        uint64_t *occ = occ_of(s->cur, id), tool = 0;
        for (int k = 0; k < SLOT_VIDMM; k++)
            tool += occ[k];
        uint64_t used = si.size - si.free_bytes;
        occ[SLOT_VIDMM] = used > tool ? used - tool : 0;
    }
    s->walked = 1;
}

static void usage(struct tr *t, struct html_series *s)
{
    for (uint32_t p = 1; p <= HTML_PROCS; p++) {
        uint64_t *u = use_of(s, s->cur, p);
        u[0] = u[1] = u[2] = u[3] = ABSENT;
        if (p > t->nobj[TR_PROC] || !t->obj[TR_PROC][p].alive)
            continue;
        for (int g = 0; g < 2; g++) {
            struct vidmm_video_memory_info vi;
            if (vidmm_query_video_memory_info(t->adapter, t->obj[TR_PROC][p].h, (enum vidmm_segment_group)g, &vi) < 0)
                continue;
            u[2 * g] = vi.current_usage;
            u[2 * g + 1] = vi.budget;
        }
    }
}

/* Keep the state at time `at`: one point per interval of s->width. */
static void push_point(struct html_series *s, uint64_t at)
{
    for (;;) {
        if (s->npts && s->time[s->npts - 1] / s->width == at / s->width) {
            s->time[s->npts - 1] = at;
            memcpy(s->val + (size_t)(s->npts - 1) * s->stride, s->cur, s->stride * sizeof(uint64_t));
            return;
        }
        if (s->npts < s->ptcap)
            break;
        if (s->ptcap < HTML_MAX_POINTS) {
            uint32_t cap = s->ptcap ? s->ptcap * 2 : 64;
            uint64_t *nt = realloc(s->time, (size_t)cap * sizeof(*nt));
            if (nt)
                s->time = nt;
            uint64_t *nv = nt ? realloc(s->val, (size_t)cap * s->stride * sizeof(*nv)) : NULL;
            if (!nv) {
                s->oom = 1;
                return;
            }
            s->val = nv;
            s->ptcap = cap;
            continue;
        }
        /* Full: double the interval, keep the last point of each. */
        s->width *= 2;
        uint32_t n = 0;
        for (uint32_t i = 0; i < s->npts; i++) {
            if (n && s->time[n - 1] / s->width == s->time[i] / s->width)
                n--;
            if (n != i) {
                s->time[n] = s->time[i];
                memcpy(s->val + (size_t)n * s->stride, s->val + (size_t)i * s->stride, s->stride * sizeof(uint64_t));
            }
            n++;
        }
        s->npts = n;
    }
    s->time[s->npts] = at;
    memcpy(s->val + (size_t)s->npts * s->stride, s->cur, s->stride * sizeof(uint64_t));
    s->npts++;
}

/* bytes of operation op paged by call number `call`. */
static void paging_add(struct html_series *s, int op, uint64_t call, uint64_t bytes)
{
    if (!bytes)
        return;
    while (call >= (uint64_t)HTML_MAX_POINTS * s->pwidth) {
        for (uint32_t i = 0; i < HTML_MAX_POINTS / 2; i++)
            for (int k = 0; k < NOPS; k++)
                s->paging[i][k] = s->paging[2 * i][k] + s->paging[2 * i + 1][k];
        memset(s->paging + HTML_MAX_POINTS / 2, 0, HTML_MAX_POINTS / 2 * sizeof(*s->paging));
        s->pwidth *= 2;
    }
    s->paging[call / s->pwidth][op] += bytes;
    s->ops_seen[op] += bytes;
}

/* Calls after which placements or owners may differ even when nothing
 * was paged (an allocation's owner is the first process to reference
 * it, and a destroyed process's allocations change hands). */
static int may_place(const struct tr_tick *k)
{
    if (k->setup)
        return 1;
    switch (k->verb) {
    case TV_PROCESS_DESTROY: case TV_CREATE: case TV_CREATE2: case TV_DESTROY: case TV_MOVE: case TV_MOVE_DISCARD:
    case TV_FLIP: case TV_MAKE_RESIDENT: case TV_EVICT: case TV_OFFER: case TV_RECLAIM: case TV_WAIT:
    case TV_SUBMIT_VIRTUAL: case TV_SUBMIT_PHYSICAL: case TV_CONTEXT_WAIT:
        return 1;
    default:
        return 0;
    }
}

void html_observe(struct tr *t, const struct tr_tick *k, void *series)
{
    struct html_series *s = series;
    if (s->oom)
        return;
    int paged = 0;
    for (int op = 0; op < NOPS; op++)
        if (k->paging_dur[op]) {
            paging_add(s, op, s->ncalls, k->paging_bytes[op]);
            paged = 1;
        }
    s->ncalls++;
    if (!s->walked || paged || may_place(k))
        walk(t, s);
    usage(t, s);
    if (!s->oom)
        push_point(s, k->ts + k->dur);
}

