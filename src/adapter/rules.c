/*
 * rules.c - vidmm_adapter_check_rules(), the WDDM behaviour checker.
 *
 * vidmm_adapter_check (check.c) asks whether the structures agree with
 * each other; this asks whether the state is one WDDM allows.  Each rule
 * has a name (vidmm/rules.h lists them) and every violation is reported
 * as "rule: what", e.g.
 *   budget.usage_le_budget: process 3 local usage 72 MiB > budget 64 MiB
 * The rules that need the GPU's own view of memory (softgpu's MMU) and
 * those about what a call changed live in the test harness
 * (tools/rules/), which tools, tests and fuzzers share.
 *
 * Read-only and O(processes + allocations + mapped leaf spans + page
 * tables), so a
 * scenario can run it after every call.
 */
#include "core/report.h"
#include "model/objects.h"
#include "handle/handle.h"
#include "handle/lookup.h"
#include "placement/placement.h"
#include "mmu/mmu.h"
#include "observe/observe.h"
#include "residency/residency.h"
#include "vidmm/rules.h"

#include <stdio.h>
#include <string.h>


/* Sizes in reports: whole MiB when exact, else KiB, else bytes. */
static const char *sz(char *b, size_t n, uint64_t v)
{
    if (v && v % (1u << 20) == 0)
        snprintf(b, n, "%llu MiB", (unsigned long long)(v >> 20));
    else if (v && v % 1024 == 0)
        snprintf(b, n, "%llu KiB", (unsigned long long)(v >> 10));
    else
        snprintf(b, n, "%llu B", (unsigned long long)v);
    return b;
}

static const char *const group_name[2] = { "local", "non-local" };

/* Budget ≥ AvailableForReservation, CurrentReservation ≤ Budget, and
 * CurrentUsage ≤ Budget unless the process's last successful
 * make-resident used CantTrimFurther or its budget dropped since then
 * (the drop owes it a trim notification; it is not over budget by its
 * own request). */
static void budget_rules(const struct vidmm_adapter *a, uint32_t i, const struct vidmm_process *p, struct vidmm_report *r)
{
    for (unsigned g = 0; g < 2; g++) {
        struct vidmm_video_memory_info vi;
        if (vidmm_query_video_memory_info(a, p->self, (enum vidmm_segment_group)g, &vi) != VIDMM_OK) {
            vidmm_report_add(r, "budget.query: process %u %s group query fails", i, group_name[g]);
            continue;
        }
        char b1[32], b2[32];
        if (vi.available_for_reservation > vi.budget)
            vidmm_report_add(r, "budget.available_le_budget: process %u %s available for reservation %s > budget %s", i,
                group_name[g], sz(b1, sizeof b1, vi.available_for_reservation), sz(b2, sizeof b2, vi.budget));
        if (vi.current_reservation > vi.budget)
            vidmm_report_add(r, "budget.reservation_le_budget: process %u %s reservation %s > budget %s", i, group_name[g],
                sz(b1, sizeof b1, vi.current_reservation), sz(b2, sizeof b2, vi.budget));
        /* The rule binds make-resident: what the process's last
         * successful one without CantTrimFurther left.  Usage that grew
         * since by other means (an explicit move) or a budget that
         * dropped since (another process's demand, the OS) owes it a
         * trim notification, not a refusal. */
        int cant;
        uint64_t usage_after, budget_after;
        vidmm_residency_last_request(p, g, &cant, &usage_after, &budget_after);
        if (!cant && usage_after > budget_after)
            vidmm_report_add(r, "budget.usage_le_budget: process %u %s usage %s > budget %s after its make-resident", i,
                group_name[g], sz(b1, sizeof b1, usage_after), sz(b2, sizeof b2, budget_after));
    }
}

/* Resident and mapped: every leaf span of the mapping has a leaf table,
 * and a leaf of 64 KB entries only where the placement can be mapped by
 * 64 KB pages (a 64 KB-page memory segment, aligned).  This is vidmm's
 * own view of its page tables; what the GPU sees is the harness's
 * gpu.* rules. */
static void pte_rules(const struct vidmm_adapter *a, uint32_t i, const struct vidmm_process *p, struct vidmm_report *r)
{
    if (!vidmm_pt_root(p) || !a->has_gpummu)
        return;
    const uint64_t span = a->gpummu.leaf_span[0];
    for (const struct vidmm_va_range *v = vidmm_va_first(&p->vs); v; v = vidmm_va_next(&p->vs, v)) {
        if (v->d.state != VIDMM_VA_MAPPED)
            continue;
        const struct vidmm_allocation *al = vidmm_handle_get_any(a, v->d.object);
        if (!al || !al->resident || v->d.object_offset + v->d.size > al->size)
            continue;
        uint64_t end = v->d.va + v->d.size;
        for (uint64_t cur = v->d.va; cur < end;) {
            uint64_t next = (cur & ~(span - 1)) + span;
            if (next > end || next < cur)
                next = end;
            int kind = vidmm_pt_leaf_kind(a, p, cur);
            uint64_t off = v->d.object_offset + (cur - v->d.va);
            if (!kind) {
                vidmm_report_add(r, "pte.mapping_has_leaf: process %u VA 0x%llx of a resident allocation has no leaf table", i,
                    (unsigned long long)cur);
                return;
            }
            if (kind == 64 && !vidmm_pt_can_use_64k(a, al, &al->pl, cur, off, next - cur)) {
                vidmm_report_add(r, "pte.leaf_fits_placement: process %u VA 0x%llx has 64 KB entries but its allocation is "
                       "placed in segment %u (%s)", i, (unsigned long long)cur, al->pl.segment_id,
                    al->pl.sys ? "system pages" : "4 KB pages or misaligned");
                return;
            }
            cur = next;
        }
    }
}

/* Page-table memory follows what is mapped: every leaf table held a
 * valid entry (a mapping or the zero page) since it was made and every
 * lower table leads to one, so the tables are bounded by the leaf spans
 * ever mapped, never by the span a call covered (a batch over a 2 TiB
 * reservation).  Tables an unmap emptied stay (mmu/page_table.c), and so
 * do those a refused rollback left. */
static void pt_bound_rules(const struct vidmm_adapter *a, uint32_t i, const struct vidmm_process *p,
                           struct vidmm_report *r)
{
    if (!a->has_gpummu)
        return;
    uint64_t va = 0, n = vidmm_pt_unneeded(a, p, &va);
    if (n)
        vidmm_report_add(r, "pte.tables_follow_mappings: process %u has %llu page table%s no mapping needed, the first "
            "at VA 0x%llx", i, (unsigned long long)n, n == 1 ? "" : "s", (unsigned long long)va);
}

static void allocation_rules(uint32_t idx, const struct vidmm_allocation *al,
                             struct vidmm_report *r)
{
    const struct vidmm_placement *pl = &al->pl;
    if (al->resident && pl->sys && (al->info.flags & VIDMM_ALLOC_ACCESSED_PHYSICALLY) && !pl->ap_mapped)
        vidmm_report_add(r, "aperture.accessed_physically_mapped: allocation %u is AccessedPhysically, resident in system "
               "memory (segment %u) and not mapped into the aperture", idx, pl->segment_id);
    if ((al->info.flags & VIDMM_ALLOC_PRIMARY) && pl->sys && pl->segment_id == 0 &&
        !(al->resident && (al->info.flags & VIDMM_ALLOC_ACCESSED_PHYSICALLY)) && !pl->ap_mapped != !al->displayed)
        vidmm_report_add(r, "display.system_primary_mapped_iff_displayed: primary %u in system memory is %s the aperture "
               "while %s", idx, pl->ap_mapped ? "mapped into" : "not mapped into",
            al->displayed ? "displayed" : "not displayed");
    if (al->share && vidmm_residency_is_owned(al)) {
        /* D53: a shared allocation's bytes count in one process's usage,
         * its owner's, and the owner is one of its holders. */
        const struct vidmm_share_holder *sh = al->share->holders;
        while (sh && sh->process != vidmm_residency_owner(al))
            sh = sh->next;
        if (!sh)
            vidmm_report_add(r, "share.usage_counts_to_a_holder: shared allocation %u counts in the usage of process "
                   "0x%llx, which does not hold it", idx, (unsigned long long)vidmm_residency_owner(al));
    }
    if (al->busy && !al->resident)
        vidmm_report_add(r, "submit.busy_is_resident: allocation %u is referenced by %u in-flight submission%s and evicted", idx,
            al->busy, al->busy == 1 ? "" : "s");
}

/* Fair share per segment (D62): no make-resident was refused for want of
 * segment space while its process stayed within its fair share of a
 * segment every refused member supports and others over their share (or
 * free space) held the bytes.  Checked by the residency manager at each
 * refusal, while the state is the one the request saw. */
static void fair_share_rules(const struct vidmm_adapter *a, struct vidmm_report *r)
{
    const char *last = NULL;
    uint64_t n = vidmm_residency_unfair_refusals(a, &last);
    if (n)
        vidmm_report_add(r, "fair_share.refused_within_share: %llu refusal%s; the last: %s", (unsigned long long)n,
            n == 1 ? "" : "s", last);
}

static int check_rules(const struct vidmm_adapter *a, struct vidmm_report *r)
{
    fair_share_rules(a, r);
    const struct vidmm_process *p;
    vidmm_for_each_process(a, p) {
        uint32_t i = vidmm_process_slot(p);
        budget_rules(a, i, p, r);
        pte_rules(a, i, p, r);
        pt_bound_rules(a, i, p, r);
    }
    uint32_t it = 0;
    for (const struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;)
        allocation_rules(it - 1, al, r);
    return r->errors;
}

int vidmm_adapter_check_rules(const struct vidmm_adapter *a, char *report, size_t report_size)
{
    struct vidmm_report r = { report, report_size, 0, 0, NULL, NULL };
    if (report && report_size)
        report[0] = '\0';
    if (!a) {
        vidmm_report_add(&r, "rules.adapter: adapter is NULL");
        return r.errors;
    }
    vidmm_adapter_lock(a);
    if (vidmm_debug_hooked(a)) {
        r.sink = vidmm_debug_report_sink;
        r.sink_ctx = (void *)(uintptr_t)a;   /* the sink reads only */
    }
    int e = check_rules(a, &r);
    vidmm_adapter_unlock(a);
    return e;
}
