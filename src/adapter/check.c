/*
 * check.c - vidmm_adapter_check(), the walker over every adapter
 * structure.
 *
 * It recomputes from the allocations what each segment's bookkeeping
 * should say (bytes used, commit, allocation counts, aperture mappings,
 * host-aperture windows) and compares; it runs the range allocators' own
 * checkers; it checks the handle table and the display table.  It is
 * O(allocations + ranges) and meant for tests, after every step.
 */
#include "core/report.h"
#include "model/objects.h"
#include "handle/handle.h"
#include "handle/lookup.h"
#include "placement/placement.h"
#include "allocation/allocation.h"
#include "paging_process/paging_process.h"
#include "device/device.h"
#include "mmu/mmu.h"
#include "paging/paging.h"
#include "process/process.h"
#include "residency/residency.h"
#include "submit/submit.h"

#include <stdio.h>
#include <string.h>


struct seg_sum {
    uint64_t used;        /* address space in use */
    uint64_t committed;
    uint64_t allocations;
    uint64_t host_ap_used;
};

static void check_allocation(const struct vidmm_adapter *a, uint32_t idx, const struct vidmm_allocation *al,
                             struct seg_sum *sum, struct vidmm_report *r)
{
    const struct vidmm_placement *pl = &al->pl;
    if (vidmm_residency_has_backing(al)) {   /* the system copy kept while resident in memory */
        sum[0].committed += al->size;
        sum[0].allocations++;
    }
    if (al->size == 0 || al->size < al->info.size)
        vidmm_report_add(r, "allocation %u: size 0x%llx below requested 0x%llx", idx, (unsigned long long)al->size,
            (unsigned long long)al->info.size);
    if (pl->segment_id >= a->segment_count) {
        vidmm_report_add(r, "allocation %u: segment %u out of range", idx, pl->segment_id);
        return;
    }
    if (pl->segment_id && !al->display_mapped &&
        !(al->info.supported_write_segment_set & VIDMM_SEGMENT_BIT(pl->segment_id)))
        vidmm_report_add(r, "allocation %u: lives in segment %u outside its supported set 0x%x", idx, pl->segment_id,
            al->info.supported_write_segment_set);
    if (pl->sys) {
        if (pl->pages.count)
            vidmm_report_add(r, "allocation %u: both system pages and segment extents", idx);
        if (pl->mdl.base != pl->sys || pl->mdl.page_count * VIDMM_PAGE_4K != al->size)
            vidmm_report_add(r, "allocation %u: MDL does not describe its system pages", idx);
        sum[0].committed += al->size;
        sum[0].allocations++;
        int must_map = (al->info.flags & VIDMM_ALLOC_ACCESSED_PHYSICALLY) && pl->segment_id != 0;
        if (pl->segment_id != 0 && !pl->ap_mapped)
            vidmm_report_add(r, "allocation %u: in aperture segment %u but not mapped", idx, pl->segment_id);
        if (must_map && !pl->ap_mapped)
            vidmm_report_add(r, "allocation %u: AccessedPhysically and resident in the aperture but unmapped", idx);
        if (pl->segment_id == 0 && pl->ap_mapped)
            vidmm_report_add(r, "allocation %u: mapped into the aperture yet reported in segment 0", idx);
        if (al->display_mapped && !al->displayed)
            vidmm_report_add(r, "allocation %u: mapped into the aperture for scan-out, yet not displayed", idx);
        if (al->resident && (al->info.flags & VIDMM_ALLOC_ACCESSED_PHYSICALLY) && !pl->ap_mapped)
            vidmm_report_add(r, "allocation %u: AccessedPhysically, resident in system memory, not mapped into the aperture",
                idx);
        if (pl->ap_mapped) {
            const struct vidmm_segment *s = &a->seg[pl->ap_segment];
            if (s->kind != VIDMM_SEGMENT_KIND_APERTURE && s->kind != VIDMM_SEGMENT_KIND_AGP)
                vidmm_report_add(r, "allocation %u: aperture mapping in non-aperture segment %u", idx, pl->ap_segment);
            else if (vidmm_ra_node_offset(&s->ra, pl->ap_node) != pl->ap_offset ||
                     vidmm_ra_node_size(&s->ra, pl->ap_node) < al->size)
                vidmm_report_add(r, "allocation %u: aperture range disagrees with the aperture allocator", idx);
            sum[pl->ap_segment].used += vidmm_ra_node_size(&s->ra, pl->ap_node);
            sum[pl->ap_segment].committed += al->size;
            sum[pl->ap_segment].allocations++;
        }
        return;
    }
    const struct vidmm_segment *s = &a->seg[pl->segment_id];
    if (s->kind != VIDMM_SEGMENT_KIND_MEMORY) {
        vidmm_report_add(r, "allocation %u: extents in non-memory segment %u", idx, pl->segment_id);
        return;
    }
    if (pl->pages.count == 0) {
        vidmm_report_add(r, "allocation %u: no placement", idx);
        return;
    }
    if (vidmm_pages_check(&s->ra, &pl->pages))
        vidmm_report_add(r, "allocation %u: page set inconsistent", idx);
    uint64_t total = 0;
    for (uint32_t i = 0; i < pl->pages.count; i++) {
        const struct vidmm_extent *e = &pl->pages.ext[i];
        if (e->offset % s->page_size || e->size % s->page_size || e->offset + e->size > s->size)
            vidmm_report_add(r, "allocation %u: extent %u [0x%llx,+0x%llx) not page-aligned or outside segment %u", idx, i,
                (unsigned long long)e->offset, (unsigned long long)e->size, s->id);
        total += e->size;
    }
    if (total != al->size)
        vidmm_report_add(r, "allocation %u: extents cover 0x%llx bytes, allocation is 0x%llx", idx, (unsigned long long)total,
            (unsigned long long)al->size);
    if (vidmm_needs_contiguous(a, al, s) && pl->pages.count != 1)
        vidmm_report_add(r, "allocation %u: must be contiguous in segment %u but has %u extents", idx, s->id, pl->pages.count);
    if (pl->pages.count == 1 && (al->info.flags & (VIDMM_ALLOC_ACCESSED_PHYSICALLY | VIDMM_ALLOC_PRIMARY)) &&
        pl->pages.ext[0].offset % al->alignment)
        vidmm_report_add(r, "allocation %u: contiguous placement misaligned", idx);
    sum[s->id].used += total;
    sum[s->id].committed += al->size;
    sum[s->id].allocations++;
    if (vidmm_allocation_host_ap_mapped(al)) {
        if (!al->lock_count)
            vidmm_report_add(r, "allocation %u: host aperture mapped while unlocked", idx);
        sum[s->id].host_ap_used += vidmm_allocation_host_ap_pages(al) * s->page_size;
    }
}

/* The list of live processes holds exactly the table's live processes,
 * linked both ways; each allocation's list of processes mapping it names
 * live processes that do, as many as its count, and the counts add up to
 * the VA spaces' object indexes (so no process that maps it is missing);
 * the spare links are counted right. */
static void check_process_list(const struct vidmm_adapter *a, struct vidmm_report *r)
{
    uint32_t n = 0;
    uint64_t objects = 0, counted = 0;
    const struct vidmm_process *prev = NULL, *p;
    vidmm_for_each_process(a, p) {
        if (++n > a->processes.live) {
            vidmm_report_add(r, "process list: longer than the %u live processes (a cycle?)", a->processes.live);
            return;
        }
        if (p->live_prev != prev || p->adapter != a || vidmm_objtab_get(&a->processes, p->self) != p)
            vidmm_report_add(r, "process list: process %u is linked wrong or is not the table's",
                             vidmm_process_slot(p));
        if (!p->no_va)
            objects += p->vs.obj_count;
        uint64_t owned = vidmm_residency_check_owned(p, r), priv = 0;
        for (const struct vidmm_allocation *al = p->private_first; al && priv <= p->private_allocations;
             al = al->private_next) {
            priv++;
            if (al->private_process != p->self || (al->private_next && al->private_next->private_prev != al) ||
                (al == p->private_first && al->private_prev))
                vidmm_report_add(r, "process %u: list of private allocations broken", vidmm_process_slot(p));
        }
        if (owned != vidmm_residency_owned_count(p) || priv != p->private_allocations)
            vidmm_report_add(r, "process %u: lists %llu owned and %llu private allocations, counts %llu and %llu",
                             vidmm_process_slot(p), (unsigned long long)owned, (unsigned long long)priv,
                             (unsigned long long)vidmm_residency_owned_count(p), (unsigned long long)p->private_allocations);
        vidmm_process_check_spares(p, r);
        prev = p;
    }
    if (n != a->processes.live || a->process_last != prev)
        vidmm_report_add(r, "process list: %u processes (last %s), the table holds %u", n,
                         a->process_last == prev ? "right" : "wrong", a->processes.live);
    uint32_t it = 0;
    for (const struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;) {
        counted += vidmm_process_check_users(a, al, it - 1, r);
    }
    if (objects != counted)
        vidmm_report_add(r, "process VA spaces index %llu (process, allocation) pairs, allocations count %llu",
                         (unsigned long long)objects, (unsigned long long)counted);
}

/* Paging buffers in the aperture and the system paging process's
 * tables (pinned, in the paging-process segments) count like any
 * placement. */
static void check_paging_use(const struct vidmm_adapter *a, struct seg_sum *sum, struct vidmm_report *r)
{
    uint64_t used, committed;
    if (vidmm_paging_aperture_use(a, &used, &committed)) {
        sum[a->paging_segment_id].used += used;
        sum[a->paging_segment_id].committed += committed;
    }
    uint64_t bytes[VIDMM_MAX_SEGMENTS + 1];
    char pmsg[160];
    memset(bytes, 0, sizeof(bytes));
    pmsg[0] = '\0';
    int e = vidmm_paging_process_check(a, bytes, pmsg, sizeof(pmsg));
    if (e)
        vidmm_report_add(r, "paging process: %d violations (%s)", e, pmsg);
    for (uint32_t id = 1; id <= VIDMM_MAX_SEGMENTS; id++) {
        sum[id].used += bytes[id];
        sum[id].committed += bytes[id];
    }
}

/* What each mapped range of process p (slot i) names: a live allocation,
 * within its size, one the process may map. */
static void check_process_mappings(const struct vidmm_adapter *a, const struct vidmm_process *p, uint32_t i,
                                   struct vidmm_report *r)
{
    for (const struct vidmm_va_range *v = vidmm_va_first(&p->vs); v; v = vidmm_va_next(&p->vs, v)) {
        if (v->d.state != VIDMM_VA_MAPPED)
            continue;
        const struct vidmm_allocation *al = vidmm_handle_get_any(a, v->d.object);
        if (!al)
            vidmm_report_add(r, "process %u: VA 0x%llx maps a dead allocation", i, (unsigned long long)v->d.va);
        else if (v->d.object_offset + v->d.size > al->size)
            vidmm_report_add(r, "process %u: VA 0x%llx maps past the end of its allocation", i, (unsigned long long)v->d.va);
        else if (al->share && vidmm_share_handle_in(al, p->self) == al->self &&
                 !(al->share->holders->creator && al->private_process == p->self))
            vidmm_report_add(r, "process %u: VA 0x%llx maps a shared allocation the process does not hold", i,
                (unsigned long long)v->d.va);
        else if (!al->share && al->private_process && al->private_process != p->self)
            vidmm_report_add(r, "process %u: VA 0x%llx maps another process's private allocation", i,
                (unsigned long long)v->d.va);
    }
}

/* Every process: its page tables (implicit allocations in their levels'
 * segments), its VA space and what it maps. */
static void check_processes(const struct vidmm_adapter *a, struct seg_sum *sum, struct vidmm_report *r)
{
    const struct vidmm_process *p;
    vidmm_for_each_process(a, p) {
        uint32_t i = vidmm_process_slot(p);
        uint64_t bytes[VIDMM_MAX_SEGMENTS + 1];
        uint64_t tables = 0;
        memset(bytes, 0, sizeof(bytes));
        vidmm_pt_account(vidmm_pt_root(p), bytes, &tables);
        for (uint32_t id = 1; id <= VIDMM_MAX_SEGMENTS; id++) {
            sum[id].used += bytes[id];
            sum[id].committed += bytes[id];
        }
        int e = vidmm_va_space_check(&p->vs);
        if (e)
            vidmm_report_add(r, "process %u: VA space has %d violations", i, e);
        char tmsg[160];
        e = vidmm_pt_check_tree(a, p, tmsg, sizeof(tmsg));
        if (e)
            vidmm_report_add(r, "process %u: page tables have %d violations (%s)", i, e, tmsg);
        check_process_mappings(a, p, i, r);
    }
}

/* The share records, the handle table, then each allocation against
 * them (and its placement, added to sum). */
static void check_allocations(const struct vidmm_adapter *a, struct seg_sum *sum, struct vidmm_report *r)
{
    char smsg[160];
    smsg[0] = '\0';
    int se = vidmm_share_check(a, smsg, sizeof(smsg));
    if (se)
        vidmm_report_add(r, "shared allocations: %d violations (%s)", se, smsg);
    char hmsg[160];
    int he = vidmm_handle_check(a, hmsg, sizeof(hmsg));
    if (he)
        vidmm_report_add(r, "allocation handles: %d violations (%s)", he, hmsg);
    uint32_t it = 0;
    for (const struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;) {
        uint32_t i = it - 1;
        if (!al->live || VIDMM_HANDLE_SLOT(al->self) != i)
            vidmm_report_add(r, "allocation %u: in the table but not live, or named by another slot", i);
        if (!al->shared != !al->share)
            vidmm_report_add(r, "allocation %u: shared flag %u but share record %s", i, al->shared,
                             al->share ? "set" : "none");
        if (!al->zombie && al->private_process && !vidmm_process_get(a, al->private_process))
            vidmm_report_add(r, "allocation %u: private to a dead process", i);
        check_allocation(a, i, al, sum, r);
    }
    /* Quarantined memory (placement/placement.c) stays taken until a reset. */
    uint64_t used[VIDMM_MAX_SEGMENTS + 1], committed[VIDMM_MAX_SEGMENTS + 1], count[VIDMM_MAX_SEGMENTS + 1];
    memset(used, 0, sizeof(used));
    memset(committed, 0, sizeof(committed));
    memset(count, 0, sizeof(count));
    vidmm_quarantine_account(a, used, committed, count);
    for (uint32_t id = 0; id <= VIDMM_MAX_SEGMENTS; id++) {
        sum[id].used += used[id];
        sum[id].committed += committed[id];
        sum[id].allocations += count[id];
    }
}

/* Each segment's counters against the sum of what is placed in it, and
 * its range allocators; the bytes mapped through apertures. */
static void check_segments(const struct vidmm_adapter *a, const struct seg_sum *sum, struct vidmm_report *r)
{
    uint64_t ap_mapped = 0;
    for (uint32_t id = 0; id < a->segment_count; id++) {
        const struct vidmm_segment *s = &a->seg[id];
        if (s->committed != sum[id].committed)
            vidmm_report_add(r, "segment %u: committed 0x%llx, allocations add up to 0x%llx", id,
                (unsigned long long)s->committed, (unsigned long long)sum[id].committed);
        if (s->committed > s->commit_limit)
            vidmm_report_add(r, "segment %u: committed 0x%llx over its limit 0x%llx", id, (unsigned long long)s->committed,
                (unsigned long long)s->commit_limit);
        if (s->allocations != sum[id].allocations)
            vidmm_report_add(r, "segment %u: %llu allocations counted, %llu found", id, (unsigned long long)s->allocations,
                (unsigned long long)sum[id].allocations);
        if (s->kind == VIDMM_SEGMENT_KIND_APERTURE || s->kind == VIDMM_SEGMENT_KIND_AGP)
            ap_mapped += s->committed;
        if (!s->has_ra)
            continue;
        char rmsg[160];
        int e = vidmm_ra_check_msg(&s->ra, rmsg, sizeof(rmsg));
        if (e)
            vidmm_report_add(r, "segment %u: range allocator has %d violations (%s)", id, e, rmsg);
        if (s->size - s->ra.free_bytes != sum[id].used)
            vidmm_report_add(r, "segment %u: 0x%llx bytes in use, placements cover 0x%llx", id,
                (unsigned long long)(s->size - s->ra.free_bytes), (unsigned long long)sum[id].used);
        if (s->has_host_ap_ra) {
            e = vidmm_ra_check_msg(&s->host_ap_ra, rmsg, sizeof(rmsg));
            if (e)
                vidmm_report_add(r, "segment %u: host aperture allocator has %d violations (%s)", id, e, rmsg);
            if (s->host_ap_ra.size - s->host_ap_ra.free_bytes != sum[id].host_ap_used)
                vidmm_report_add(r, "segment %u: host aperture pages in use disagree with locked allocations", id);
        }
    }
    vidmm_paging_check(a, r);
    if (ap_mapped != a->aperture_mapped_bytes)
        vidmm_report_add(r, "aperture mapped bytes 0x%llx, segments say 0x%llx", (unsigned long long)a->aperture_mapped_bytes,
            (unsigned long long)ap_mapped);
    if (a->caps.aperture_segment_commit_limit && a->aperture_mapped_bytes > a->caps.aperture_segment_commit_limit)
        vidmm_report_add(r, "aperture mapped bytes over the global aperture commit limit");
}

/* What each VidPN source scans out. */
static void check_displayed(const struct vidmm_adapter *a, struct vidmm_report *r)
{
    for (uint32_t src = 0; src < VIDMM_MAX_VIDPN_SOURCES; src++) {
        vidmm_handle h = a->displayed[src];
        if (h == VIDMM_HANDLE_NULL)
            continue;
        const struct vidmm_allocation *al = vidmm_handle_get(a, h);
        if (!al)
            vidmm_report_add(r, "source %u displays a dead allocation", src);
        else if (!al->displayed)
            vidmm_report_add(r, "source %u displays an allocation not marked displayed", src);
        else if (al->pl.sys && !al->pl.ap_mapped)
            vidmm_report_add(r, "source %u displays a system-memory primary that is not mapped into the aperture", src);
    }
}

/* The modules with checkers of their own: devices, handle tables,
 * residency, submission. */
static void check_modules(const struct vidmm_adapter *a, struct vidmm_report *r)
{
    char dmsg[160];
    int de = vidmm_device_check(a, dmsg, sizeof(dmsg));
    if (de)
        vidmm_report_add(r, "devices: %d violations (%s)", de, dmsg);
    if (vidmm_objtab_check(&a->queues))
        vidmm_report_add(r, "paging-queue handle table inconsistent");
    if (vidmm_objtab_check(&a->processes))
        vidmm_report_add(r, "process handle table inconsistent");
    check_process_list(a, r);
    de = vidmm_residency_check(a, dmsg, sizeof(dmsg));
    if (de)
        vidmm_report_add(r, "residency: %d violations (%s)", de, dmsg);
    de = vidmm_submit_check(a, dmsg, sizeof(dmsg));
    if (de)
        vidmm_report_add(r, "submission: %d violations (%s)", de, dmsg);
}

/* The whole adapter, in phases: what each placement holder uses is
 * summed per segment (paging, processes, allocations), then compared
 * with the segments' own counters; then the display and the modules. */
static int adapter_check(const struct vidmm_adapter *a, char *buf, size_t size)
{
    struct vidmm_report r = { buf, size, 0, 0, NULL, NULL };
    if (buf && size)
        buf[0] = '\0';
    if (!a) {
        vidmm_report_add(&r, "adapter is NULL");
        return r.errors;
    }
    const char *first_bug;
    uint64_t bugs = vidmm_entry_bugs(a, &first_bug);
    if (bugs)
        vidmm_report_add(&r, "%llu internal invariants failed; first: %s", (unsigned long long)bugs, first_bug);
    struct seg_sum sum[VIDMM_MAX_SEGMENTS + 1];
    memset(sum, 0, sizeof(sum));
    check_paging_use(a, sum, &r);
    check_processes(a, sum, &r);
    check_allocations(a, sum, &r);
    check_segments(a, sum, &r);
    check_displayed(a, &r);
    check_modules(a, &r);
    return r.errors;
}

/* ---- public entries: the adapter lock around each body (docs/THREADING.md) ---- */

int vidmm_adapter_check(const struct vidmm_adapter *a, char *buf, size_t size)
{
    if (!a)
        return adapter_check(a, buf, size);   /* reports the NULL adapter */
    vidmm_adapter_lock(a);
    int e = adapter_check(a, buf, size);
    vidmm_adapter_unlock(a);
    return e;
}
