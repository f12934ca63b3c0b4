/*
 * rules_check.c - the harness side of the WDDM rules checker (see
 * rules_check.h): the state fingerprint of the public queries, the GPU
 * view through softgpu's MMU, and the failed-call rule.
 */
#include "rules_check.h"
#include "softgpu_int.h"   /* softgpu_aperture_entry, softgpu_dummy_page: white-box reads */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reports ------------------------------------------------------------ */

struct rep {
    char *buf;
    size_t size, used;
    int errors;
};

static void rep_add(struct rep *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void rep_add(struct rep *r, const char *fmt, ...)
{
    r->errors++;
    if (!r->buf || r->used + 1 >= r->size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(r->buf + r->used, r->size - r->used, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    r->used += (size_t)k;
    if (r->used >= r->size)
        r->used = r->size - 1;
    else if (r->used + 1 < r->size) {
        r->buf[r->used++] = '\n';
        r->buf[r->used] = '\0';
    }
}

/* ---- the fingerprint ------------------------------------------------------ */

int rc_fp_init(struct rc_fp *f, uint32_t cap)
{
    memset(f, 0, sizeof(*f));
    f->v = malloc((size_t)cap * sizeof(*f->v));
    f->lab = malloc((size_t)cap * sizeof(*f->lab));
    f->idx = malloc((size_t)cap * sizeof(*f->idx));
    if (!f->v || !f->lab || !f->idx) {
        rc_fp_free(f);
        return -1;
    }
    f->cap = cap;
    return 0;
}

void rc_fp_free(struct rc_fp *f)
{
    free(f->v);
    free(f->lab);
    free(f->idx);
    memset(f, 0, sizeof(*f));
}

void rc_fp_put(struct rc_fp *f, const char *lab, uint32_t idx, uint64_t v)
{
    if (f->n >= f->cap) {
        f->overflow = 1;
        return;
    }
    f->lab[f->n] = lab;
    f->idx[f->n] = idx;
    f->v[f->n++] = v;
}

int rc_fp_residency_label(const char *lab)
{
    static const char *const weak[] = {
        "segment.committed", "segment.free_bytes", "segment.largest_free", "segment.allocations",
        "segment.host_aperture_free", "rs.evictions", "rs.restores", "rs.discards", "rs.relocations",
        "vmi.current_usage", "alloc.segment_id", "alloc.layout", "alloc.extent_count", "alloc.aperture_mapped",
        "alloc.aperture_offset", "res.resident", "res.evictions", "res.restores", "ranges.hash",
    };
    for (size_t i = 0; i < sizeof weak / sizeof weak[0]; i++)
        if (!strcmp(weak[i], lab))
            return 1;
    return 0;
}

static void take_process(struct rc_fp *f, const struct vidmm_adapter *a, uint32_t i, vidmm_handle h)
{
    struct vidmm_process_info pi;
    memset(&pi, 0, sizeof pi);
    rc_fp_put(f, "process_query", i, (uint64_t)vidmm_process_query(a, h, &pi));
    rc_fp_put(f, "process.faulted", i, (uint64_t)pi.faulted);
    rc_fp_put(f, "process.ranges", i, pi.ranges);
    rc_fp_put(f, "process.page_table_bytes", i, pi.page_table_bytes);
    rc_fp_put(f, "process.page_tables", i, pi.page_tables);
    rc_fp_put(f, "process.root_entries", i, pi.root_entries);
    rc_fp_put(f, "process.root_grows", i, pi.root_grows);
    for (int g = 0; g < 2; g++) {
        struct vidmm_video_memory_info vi;
        memset(&vi, 0, sizeof vi);
        rc_fp_put(f, "query_video_memory_info", i,
                  (uint64_t)vidmm_query_video_memory_info(a, h, (enum vidmm_segment_group)g, &vi));
        rc_fp_put(f, "vmi.budget", i * 2 + (uint32_t)g, vi.budget);
        rc_fp_put(f, "vmi.current_usage", i * 2 + (uint32_t)g, vi.current_usage);
        rc_fp_put(f, "vmi.current_reservation", i * 2 + (uint32_t)g, vi.current_reservation);
        rc_fp_put(f, "vmi.available_for_reservation", i * 2 + (uint32_t)g, vi.available_for_reservation);
    }
    /* Every range, 64 at a time. */
    uint64_t from = 0, total = 0;
    for (;;) {
        struct vidmm_gpuva_range r[64];
        uint32_t cnt = 0;
        vidmm_status st = vidmm_gpuva_query(a, h, from, r, 64, &cnt);
        if (!total)
            rc_fp_put(f, "gpuva_query", i, (uint64_t)st);
        for (uint32_t k = 0; k < cnt; k++) {
            rc_fp_put(f, "gpuva.va", i, r[k].va);
            rc_fp_put(f, "gpuva.size", i, r[k].size);
            rc_fp_put(f, "gpuva.state", i, r[k].state | (uint64_t)r[k].mode << 8 | (uint64_t)r[k].protection << 16);
            rc_fp_put(f, "gpuva.allocation", i, r[k].allocation);
            rc_fp_put(f, "gpuva.offset", i, r[k].offset);
        }
        total += cnt;
        if (st < 0 || cnt < 64 || r[63].va + r[63].size <= from)
            break;
        from = r[63].va + r[63].size;
    }
    rc_fp_put(f, "gpuva.count", i, total);
    struct vidmm_physical_address root;
    memset(&root, 0, sizeof root);
    rc_fp_put(f, "process_root_page_table", i, (uint64_t)vidmm_process_root_page_table(a, h, &root));
    rc_fp_put(f, "root.segment", i, root.segment_id);
    rc_fp_put(f, "root.address", i, root.segment_offset);
}

static void take_allocation(struct rc_fp *f, const struct vidmm_adapter *a, uint32_t i, vidmm_handle h)
{
    struct vidmm_allocation_state s;
    memset(&s, 0, sizeof s);
    rc_fp_put(f, "allocation_query", i, (uint64_t)vidmm_allocation_query(a, h, &s));
    rc_fp_put(f, "alloc.segment_id", i, s.segment_id);
    rc_fp_put(f, "alloc.size", i, s.size);
    rc_fp_put(f, "alloc.layout", i, (uint64_t)s.layout);
    rc_fp_put(f, "alloc.extent_count", i, s.extent_count);
    rc_fp_put(f, "alloc.aperture_mapped", i, (uint64_t)s.aperture_mapped);
    rc_fp_put(f, "alloc.aperture_offset", i, s.aperture_offset);
    rc_fp_put(f, "alloc.displayed", i, (uint64_t)s.displayed);
    rc_fp_put(f, "alloc.lock_count", i, s.lock_count);
    rc_fp_put(f, "alloc.moves", i, s.moves);
    struct vidmm_residency_state r;
    memset(&r, 0, sizeof r);
    rc_fp_put(f, "allocation_residency", i, (uint64_t)vidmm_allocation_residency(a, h, &r));
    rc_fp_put(f, "res.resident", i, r.resident);
    rc_fp_put(f, "res.priority", i, r.priority);
    rc_fp_put(f, "res.references", i, r.references);
    rc_fp_put(f, "res.offered", i, r.offered);
    rc_fp_put(f, "res.owner", i, r.owner);
    rc_fp_put(f, "res.evictions", i, r.evictions);
    rc_fp_put(f, "res.restores", i, r.restores);
    struct vidmm_physical_range pr[16];
    uint32_t cnt = 0;
    rc_fp_put(f, "allocation_physical_ranges", i, (uint64_t)vidmm_allocation_physical_ranges(a, h, pr, 16, &cnt));
    uint64_t hash = cnt;
    for (uint32_t k = 0; k < cnt && k < 16; k++)
        hash = (hash * 31 + pr[k].segment_id) * 31 + pr[k].offset * 7 + pr[k].size;
    rc_fp_put(f, "ranges.hash", i, hash);
}

void rc_fp_take(struct rc_fp *f, const struct vidmm_adapter *a, const struct rc_objects *o)
{
    f->n = 0;
    f->overflow = 0;
    struct vidmm_adapter_info ai;
    memset(&ai, 0, sizeof ai);
    rc_fp_put(f, "adapter_query_info", 0, (uint64_t)vidmm_adapter_query_info(a, &ai));
    rc_fp_put(f, "live_allocations", 0, ai.live_allocations);
    for (uint32_t s = 0; s < ai.segment_count; s++) {
        struct vidmm_segment_info si;
        memset(&si, 0, sizeof si);
        rc_fp_put(f, "segment_query", s, (uint64_t)vidmm_segment_query(a, s, &si));
        rc_fp_put(f, "segment.committed", s, si.committed);
        rc_fp_put(f, "segment.free_bytes", s, si.free_bytes);
        rc_fp_put(f, "segment.largest_free", s, si.largest_free);
        rc_fp_put(f, "segment.allocations", s, si.allocations);
        rc_fp_put(f, "segment.host_aperture_free", s, si.host_aperture_free);
    }
    struct vidmm_paging_process_info pp;
    if (vidmm_adapter_query_paging_process(a, &pp) == VIDMM_OK) {
        rc_fp_put(f, "pp.page_tables", 0, pp.page_tables);
        rc_fp_put(f, "pp.page_table_bytes", 0, pp.page_table_bytes);
        rc_fp_put(f, "pp.faults", 0, pp.faults);
    }
    rc_fp_put(f, "residency_clock", 0, vidmm_residency_clock(a));
    struct vidmm_residency_stats rs;
    memset(&rs, 0, sizeof rs);
    rc_fp_put(f, "residency_get_stats", 0, (uint64_t)vidmm_residency_get_stats(a, &rs));
    rc_fp_put(f, "rs.evictions", 0, rs.evictions);
    rc_fp_put(f, "rs.restores", 0, rs.restores);
    rc_fp_put(f, "rs.discards", 0, rs.discards);
    rc_fp_put(f, "rs.relocations", 0, rs.relocations);
    rc_fp_put(f, "rs.over_budget", 0, rs.over_budget);
    rc_fp_put(f, "rs.trim_notifications", 0, rs.trim_notifications);
    struct vidmm_submit_stats ss;
    memset(&ss, 0, sizeof ss);
    rc_fp_put(f, "submit_get_stats", 0, (uint64_t)vidmm_submit_get_stats((struct vidmm_adapter *)a, &ss));
    rc_fp_put(f, "ss.virtual_submissions", 0, ss.virtual_submissions);
    rc_fp_put(f, "ss.physical_submissions", 0, ss.physical_submissions);
    rc_fp_put(f, "ss.in_flight", 0, ss.in_flight);
    rc_fp_put(f, "ss.deferred_destroys", 0, ss.deferred_destroys);
    rc_fp_put(f, "ss.deferred_freed", 0, ss.deferred_freed);
    for (uint32_t i = 0; i < o->nproc; i++)
        if (o->proc[i])
            take_process(f, a, i, o->proc[i]);
    for (uint32_t i = 0; i < o->ndev; i++) {
        if (!o->dev[i])
            continue;
        struct vidmm_device_info di;
        memset(&di, 0, sizeof di);
        rc_fp_put(f, "device_query", i, (uint64_t)vidmm_device_query(a, o->dev[i], &di));
        rc_fp_put(f, "device.lost", i, di.lost);
        rc_fp_put(f, "device.contexts", i, di.contexts);
        rc_fp_put(f, "device.faults", i, di.faults);
    }
    for (uint32_t i = 0; i < o->nctx; i++) {
        if (!o->ctx[i])
            continue;
        struct vidmm_context_info ci;
        memset(&ci, 0, sizeof ci);
        rc_fp_put(f, "context_query", i, (uint64_t)vidmm_context_query(a, o->ctx[i], &ci));
        rc_fp_put(f, "context.root_bound", i, ci.root_bound);
        uint64_t sub = 0, done = 0;
        rc_fp_put(f, "context_fence", i,
                  (uint64_t)vidmm_context_fence((struct vidmm_adapter *)a, o->ctx[i], &sub, &done));
        rc_fp_put(f, "context.submitted", i, sub);
        rc_fp_put(f, "context.completed", i, done);
    }
    for (uint32_t i = 0; i < o->nqueue; i++) {
        if (!o->queue[i])
            continue;
        uint64_t v = 0;
        rc_fp_put(f, "paging_queue_fence", i,
                  (uint64_t)vidmm_paging_queue_fence((struct vidmm_adapter *)a, o->queue[i], &v));
        rc_fp_put(f, "queue.completed", i, v);
    }
    for (uint32_t i = 0; i < o->nalloc; i++)
        if (o->alloc[i])
            take_allocation(f, a, i, o->alloc[i]);
}

static int ignored(const char *lab, const char *const *ignore)
{
    for (; ignore && *ignore; ignore++)
        if (!strcmp(*ignore, lab))
            return 1;
    return 0;
}

int rc_fp_diff(const struct rc_fp *p, const struct rc_fp *q, int weak, const char *const *ignore, char *msg,
               size_t n)
{
    if (msg && n)
        msg[0] = '\0';
    if (p->overflow || q->overflow) {
        if (msg)
            snprintf(msg, n, "fingerprint larger than its %u entries", p->cap);
        return 1;
    }
    if (p->n != q->n) {
        if (msg)
            snprintf(msg, n, "fingerprint has %u entries, %u before", q->n, p->n);
        return 1;
    }
    for (uint32_t i = 0; i < p->n; i++) {
        if (p->lab[i] == q->lab[i] &&
            (p->v[i] == q->v[i] || (weak && rc_fp_residency_label(p->lab[i])) || ignored(p->lab[i], ignore)))
            continue;
        if (msg)
            snprintf(msg, n, "%s[%u] = %llu, was %llu", q->lab[i], q->idx[i], (unsigned long long)q->v[i],
                     (unsigned long long)p->v[i]);
        return 1;
    }
    return 0;
}

int rc_check_failed_make_resident(const struct rc_fp *before, const struct rc_fp *after, vidmm_status st,
                                  char *report, size_t n)
{
    /* The call's own counters: it was refused (over budget), and the
     * reference clock counts requests. */
    static const char *const own[] = { "rs.over_budget", "residency_clock", NULL };
    struct rep r = { report, n, 0, 0 };
    if (report && n)
        report[0] = '\0';
    char msg[200];
    /* Out of host memory, D35 lets evictions and restores done before
     * the failure stay (docs/DECISIONS.md); any other failure is all or
     * nothing. */
    int weak = st == VIDMM_E_NO_HOST_MEMORY;
    if (st < 0 && rc_fp_diff(before, after, weak, own, msg, sizeof msg))
        rep_add(&r, "call.failed_make_resident_no_trace: make-resident failed with %s but changed %s",
                vidmm_status_str(st), msg);
    return r.errors;
}

/* ---- the GPU's view ---------------------------------------------------------- */

static int is_memory(const struct vidmm_adapter *a, uint32_t id)
{
    struct vidmm_segment_info si;
    return id && vidmm_segment_query(a, id, &si) == VIDMM_OK && si.kind == VIDMM_SEGMENT_KIND_MEMORY;
}

/* Check one mapped range [va, va+size) of allocation h at offset off. */
static void gpu_range(struct vidmm_adapter *a, struct softgpu *sg, const struct vidmm_physical_address *root,
                      uint32_t pi, const struct vidmm_gpuva_range *g, struct rep *r)
{
    struct vidmm_residency_state rs;
    if (vidmm_allocation_residency(a, g->allocation, &rs) != VIDMM_OK)
        return;   /* destroyed while in use: nothing to compare with */
    struct vidmm_physical_range ext[64], *pr = ext;
    uint32_t cnt = 0;
    if (rs.resident) {
        if (vidmm_allocation_physical_ranges(a, g->allocation, ext, 64, &cnt) != VIDMM_OK)
            return;
        if (cnt > 64) {
            pr = malloc((size_t)cnt * sizeof(*pr));
            if (!pr || vidmm_allocation_physical_ranges(a, g->allocation, pr, cnt, &cnt) != VIDMM_OK) {
                free(pr);
                return;
            }
        }
    }
    uint32_t e = 0;
    uint64_t e_start = 0;          /* allocation offset where pr[e] starts */
    int have_base = 0;
    uint64_t sys_base = 0;         /* system pages: host address of allocation byte 0 */
    const uint64_t end = g->va + g->size;
    for (uint64_t va = g->va; va < end;) {
        struct softgpu_translation t;
        vidmm_status st = softgpu_translate(sg, root, va, SOFTGPU_ACCESS_READ, &t);
        uint64_t ps = st == VIDMM_OK && t.page_size ? t.page_size : 4096;
        uint64_t off = g->offset + (va - g->va);
        if (!rs.resident) {
            if (st == VIDMM_OK && !t.zero) {
                rep_add(r, "gpu.evicted_faults: process %u VA 0x%llx of evicted allocation 0x%llx translates to "
                           "segment %u offset 0x%llx", pi, (unsigned long long)va,
                        (unsigned long long)g->allocation, t.segment_id, (unsigned long long)t.offset);
                break;
            }
        } else if (st != VIDMM_OK || t.zero) {
            rep_add(r, "gpu.resident_translates: process %u VA 0x%llx of resident allocation 0x%llx %s", pi,
                    (unsigned long long)va, (unsigned long long)g->allocation,
                    st != VIDMM_OK ? "faults" : "is a Zero entry");
            break;
        } else {
            while (e < cnt && off >= e_start + pr[e].size) {
                e_start += pr[e].size;
                e++;
            }
            int ok;
            uint64_t want_seg = 0, want_off = 0;
            if (e >= cnt) {
                ok = 0;
            } else if (pr[e].segment_id == 0 || t.segment_id == 0) {
                /* System pages: vidmm maps their host addresses (segment
                 * 0), one contiguous block per allocation. */
                if (!have_base) {
                    sys_base = t.offset - off;
                    have_base = 1;
                }
                want_off = sys_base + off;
                ok = t.segment_id == 0 && t.offset == want_off;
                /* A memory placement must not be reached as system memory. */
                ok = ok && !is_memory(a, pr[e].segment_id);
            } else {
                want_seg = pr[e].segment_id;
                want_off = pr[e].offset + (off - e_start);
                ok = t.segment_id == want_seg && t.offset == want_off;
            }
            if (!ok) {
                rep_add(r, "gpu.translates_to_placement: process %u VA 0x%llx (allocation 0x%llx byte 0x%llx) "
                           "reaches segment %u offset 0x%llx, placement says segment %u offset 0x%llx", pi,
                        (unsigned long long)va, (unsigned long long)g->allocation, (unsigned long long)off,
                        t.segment_id, (unsigned long long)t.offset, e < cnt ? pr[e].segment_id : 0,
                        (unsigned long long)want_off);
                break;
            }
        }
        va = (va & ~(ps - 1)) + ps;
    }
    if (pr != ext)
        free(pr);
}

/* A range reserved with VIDMM_GPUVA_RESERVE_ZERO (or unmapped back to
 * it) reads as zero: its pages translate to Zero entries, whatever
 * rebuilt the page tables since (resume, adapter reset).  Up to 64 pages
 * spread over the range and its last page: enough to see a range whose
 * entries were lost, cheap enough for a multi-gigabyte reservation after
 * every call. */
static void gpu_zero_range(struct softgpu *sg, const struct vidmm_physical_address *root, uint32_t pi,
                           const struct vidmm_gpuva_range *g, struct rep *r)
{
    uint64_t step = (g->size / 64 + 4095) & ~4095ull;
    if (step < 4096)
        step = 4096;
    for (uint64_t k = 0; k <= 64; k++) {
        uint64_t va = k < 64 ? g->va + k * step : g->va + g->size - 4096;
        if (k < 64 && va >= g->va + g->size)
            continue;
        struct softgpu_translation t;
        vidmm_status st = softgpu_translate(sg, root, va, SOFTGPU_ACCESS_READ, &t);
        if (st != VIDMM_OK || !t.zero) {
            rep_add(r, "gpu.zero_translates_zero: process %u VA 0x%llx of zero reservation [0x%llx, +0x%llx) %s", pi,
                    (unsigned long long)va, (unsigned long long)g->va, (unsigned long long)g->size,
                    st != VIDMM_OK ? "faults" : "reaches memory");
            return;
        }
    }
}

/* ---- gpu.entry_reaches_owned: who owns each byte of the memory segments ---- */

struct owned_range {
    uint32_t segment_id;
    uint64_t offset, size;
    vidmm_handle allocation;
};
struct owners {
    struct owned_range *r;
    uint32_t n, cap;
};

static int owned_cmp(const void *pa, const void *pb)
{
    const struct owned_range *x = pa, *y = pb;
    if (x->segment_id != y->segment_id)
        return x->segment_id < y->segment_id ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Every live allocation's ranges in memory segments, sorted. */
static void owners_take(const struct vidmm_adapter *a, struct owners *w)
{
    memset(w, 0, sizeof(*w));
    uint64_t cursor = 0;
    struct vidmm_allocation_item it;
    while (vidmm_allocation_iterate(a, NULL, &cursor, &it) == VIDMM_OK) {
        if (!is_memory(a, it.segment_id))
            continue;
        uint32_t cnt = 0;
        if (vidmm_allocation_physical_ranges(a, it.handle, NULL, 0, &cnt) != VIDMM_OK || !cnt)
            continue;
        if (w->n + cnt > w->cap) {
            uint32_t cap = (w->n + cnt) * 2;
            struct owned_range *r = realloc(w->r, (size_t)cap * sizeof(*r));
            if (!r)
                return;
            w->r = r;
            w->cap = cap;
        }
        struct vidmm_physical_range *pr = malloc((size_t)cnt * sizeof(*pr));
        if (!pr || vidmm_allocation_physical_ranges(a, it.handle, pr, cnt, &cnt) != VIDMM_OK) {
            free(pr);
            continue;
        }
        for (uint32_t i = 0; i < cnt; i++)
            w->r[w->n++] = (struct owned_range){ pr[i].segment_id, pr[i].offset, pr[i].size, it.handle };
        free(pr);
    }
    if (w->n)
        qsort(w->r, w->n, sizeof(*w->r), owned_cmp);
}

/* The allocation owning byte off of segment id, 0 when none does. */
static vidmm_handle owner_of(const struct owners *w, uint32_t id, uint64_t off)
{
    uint32_t lo = 0, hi = w->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const struct owned_range *m = &w->r[mid];
        if (m->segment_id < id || (m->segment_id == id && m->offset + m->size <= off))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < w->n && w->r[lo].segment_id == id && w->r[lo].offset <= off && off - w->r[lo].offset < w->r[lo].size)
        return w->r[lo].allocation;
    return 0;
}

/* Is byte off of segment id one of allocation h's (h may be another
 * holder's handle of the same shared allocation)? */
static int is_own(struct vidmm_adapter *a, vidmm_handle h, uint32_t id, uint64_t off)
{
    struct vidmm_physical_range pr[64];
    uint32_t cnt = 0;
    if (vidmm_allocation_physical_ranges(a, h, pr, 64, &cnt) != VIDMM_OK)
        return 0;
    for (uint32_t i = 0; i < cnt && i < 64; i++)
        if (pr[i].segment_id == id && pr[i].offset <= off && off - pr[i].offset < pr[i].size)
            return 1;
    return 0;
}

/* Every valid entry under [va, va+size) of process pi (a range mapping
 * allocation h, or reserved: h = 0) reaches memory h owns - never free
 * memory, never another allocation's.  Memory segments only: system
 * pages are named by host address, which the public API does not give. */
static void gpu_owned(struct vidmm_adapter *a, struct softgpu *sg, const struct vidmm_physical_address *root,
                      uint32_t pi, const struct vidmm_gpuva_range *g, const struct owners *w, struct rep *r)
{
    /* Every page of a range up to 256 MiB; beyond, 65536 pages spread over
     * it (a reservation may span terabytes, and this runs after every call). */
    uint64_t stride = g->size > (1ull << 28) ? ((g->size >> 16) + 4095) & ~4095ull : 0;
    for (uint64_t va = g->va; va < g->va + g->size;) {
        struct softgpu_translation t;
        vidmm_status st = softgpu_translate(sg, root, va, SOFTGPU_ACCESS_READ, &t);
        uint64_t ps = st == VIDMM_OK && t.page_size ? t.page_size : 4096;
        if (st == VIDMM_OK && !t.zero && is_memory(a, t.segment_id)) {
            vidmm_handle o = owner_of(w, t.segment_id, t.offset);
            if (o != g->allocation && !(o && g->allocation && is_own(a, g->allocation, t.segment_id, t.offset))) {
                rep_add(r, "gpu.entry_reaches_owned: process %u VA 0x%llx (%s 0x%llx) reaches segment %u offset 0x%llx, "
                           "%s 0x%llx", pi, (unsigned long long)va, g->allocation ? "allocation" : "reserved, no allocation",
                        (unsigned long long)g->allocation, t.segment_id, (unsigned long long)t.offset,
                        o ? "owned by allocation" : "free memory", (unsigned long long)o);
                return;
            }
        }
        va = stride > ps ? va + stride : (va & ~(ps - 1)) + ps;
    }
}

int rc_check_gpu(struct vidmm_adapter *a, struct softgpu *sg, const struct rc_objects *o, char *report, size_t n)
{
    struct rep r = { report, n, 0, 0 };
    if (report && n)
        report[0] = '\0';
    if (!a || !sg)
        return 0;
    /* Powered down, the GPU's page tables are gone until resume rebuilds
     * them (power.h): there is no GPU view to check, and every entry that
     * would use it answers VIDMM_E_STATE. */
    uint32_t power = VIDMM_POWER_D0;
    if (vidmm_adapter_get_power_state(a, &power) == VIDMM_OK && power != VIDMM_POWER_D0)
        return 0;
    struct owners w;
    int have_owners = 0;
    memset(&w, 0, sizeof(w));
    for (uint32_t i = 0; i < o->nproc; i++) {
        struct vidmm_physical_address root;
        if (!o->proc[i] || vidmm_process_root_page_table(a, o->proc[i], &root) != VIDMM_OK)
            continue;   /* gone, or no GPU page tables (IoMmu, no GPU VA) */
        uint64_t from = 0;
        for (;;) {
            struct vidmm_gpuva_range g[64];
            uint32_t cnt = 0;
            if (vidmm_gpuva_query(a, o->proc[i], from, g, 64, &cnt) != VIDMM_OK)
                break;
            for (uint32_t k = 0; k < cnt; k++) {
                if (g[k].state == 2 && g[k].allocation) {
                    gpu_range(a, sg, &root, i, &g[k], &r);
                } else if (g[k].state == 1 && g[k].mode == VIDMM_GPUVA_RESERVE_ZERO) {
                    gpu_zero_range(sg, &root, i, &g[k], &r);
                } else if (g[k].state == 1) {
                    /* A mapped page reaching anything but its placement
                     * is gpu.translates_to_placement already; under a
                     * reservation nothing may be reached at all. */
                    if (!have_owners) {
                        owners_take(a, &w);
                        have_owners = 1;
                    }
                    gpu_owned(a, sg, &root, i, &g[k], &w, &r);
                }
            }
            if (cnt < 64)
                break;
            from = g[63].va + g[63].size;
        }
    }
    free(w.r);
    return r.errors;
}

/* ---- gpu.unmapped_faults ------------------------------------------------- */

int rc_check_unmapped(struct vidmm_adapter *a, struct softgpu *sg, const struct rc_objects *o, uint64_t max_pages,
                      char *report, size_t n)
{
    struct rep r = { report, n, 0, 0 };
    if (report && n)
        report[0] = '\0';
    if (!a || !sg)
        return 0;
    for (uint32_t i = 0; i < o->nproc; i++) {
        struct vidmm_physical_address root;
        if (!o->proc[i] || vidmm_process_root_page_table(a, o->proc[i], &root) != VIDMM_OK)
            continue;
        uint64_t from = 0, walked = 0;
        int done = 0;
        while (!done && walked < max_pages) {
            struct vidmm_gpuva_range g[64];
            uint32_t cnt = 0;
            if (vidmm_gpuva_query(a, o->proc[i], from, g, 64, &cnt) != VIDMM_OK)
                break;
            /* The hole before each range (and, after the last, as far as
             * max_pages allows): no entry there may be valid. */
            for (uint32_t k = 0; k <= cnt && walked < max_pages; k++) {
                uint64_t end = k < cnt ? g[k].va : UINT64_MAX;
                for (uint64_t va = from; va < end && walked < max_pages; va += 4096, walked++) {
                    struct softgpu_translation t;
                    if (softgpu_translate(sg, &root, va, SOFTGPU_ACCESS_READ, &t) == VIDMM_OK && !t.zero) {
                        rep_add(&r, "gpu.unmapped_faults: process %u VA 0x%llx, mapped by nothing, reaches segment %u "
                                    "offset 0x%llx", i, (unsigned long long)va, t.segment_id,
                                (unsigned long long)t.offset);
                        walked = max_pages;
                        break;
                    }
                }
                if (k < cnt)
                    from = g[k].va + g[k].size;
            }
            if (cnt < 64)
                done = 1;
        }
    }
    return r.errors;
}

/* ---- gpu.aperture_entry_owned -------------------------------------------- */

struct ap_range {
    uint64_t first, count;   /* pages of the aperture segment */
};

static int ap_cmp(const void *pa, const void *pb)
{
    const struct ap_range *x = pa, *y = pb;
    return x->first < y->first ? -1 : x->first > y->first;
}

/* Aperture segment id: every allocation's range maps consecutive host
 * pages (its one block of system pages), and the mapped entries outside
 * every allocation's range form at most one run of consecutive host
 * pages (the paging-buffer ring, when the driver put it here): a range
 * kept after its pages were freed, or a range freed while still mapped,
 * is a second run. */
static void aperture_segment(struct vidmm_adapter *a, struct softgpu *sg, uint32_t id, int ring_here, struct rep *r)
{
    struct vidmm_segment_info si;
    if (vidmm_segment_query(a, id, &si) != VIDMM_OK)
        return;
    uint32_t n = 0, cap = 16;
    struct ap_range *ar = malloc(cap * sizeof(*ar));
    uint64_t cursor = 0;
    struct vidmm_allocation_item it;
    while (ar && vidmm_allocation_iterate(a, NULL, &cursor, &it) == VIDMM_OK) {
        if (it.segment_id != id)
            continue;
        if (n == cap) {
            struct ap_range *m = realloc(ar, (cap *= 2) * sizeof(*ar));
            if (!m)
                break;
            ar = m;
        }
        ar[n++] = (struct ap_range){ it.offset / 4096, it.size / 4096 };
    }
    if (!ar)
        return;
    qsort(ar, n, sizeof(*ar), ap_cmp);
    const void *dummy = softgpu_dummy_page(sg);
    uint32_t runs = 0, k = 0;
    const char *prev = NULL;       /* host page of the previous unowned mapped entry */
    for (uint64_t pg = 0; pg < si.size / 4096; pg++) {
        while (k < n && pg >= ar[k].first + ar[k].count)
            k++;
        /* Unmapped: softgpu's dummy page or vidmm's (what vidmm unmaps to). */
        const char *e = softgpu_gart_is_mapped(&sg->seg[id], pg) ? softgpu_aperture_entry(sg, id, pg) : dummy;
        int owned = k < n && pg >= ar[k].first;
        if (owned) {
            const char *first = softgpu_gart_is_mapped(&sg->seg[id], ar[k].first)
                                     ? softgpu_aperture_entry(sg, id, ar[k].first) : dummy;
            if (e == dummy || e != first + (pg - ar[k].first) * 4096) {
                rep_add(r, "gpu.aperture_entry_owned: aperture segment %u page 0x%llx of an allocation's range %s", id,
                        (unsigned long long)pg, e == dummy ? "is unmapped" : "breaks its block of system pages");
                break;
            }
            prev = NULL;
            continue;
        }
        if (e == dummy) {
            prev = NULL;
            continue;
        }
        if (!prev || e != prev + 4096)
            runs++;
        prev = e;
        if (runs > (ring_here ? 1u : 0u)) {
            rep_add(r, "gpu.aperture_entry_owned: aperture segment %u page 0x%llx maps a host page outside every "
                       "allocation's range (and outside the paging ring)", id, (unsigned long long)pg);
            break;
        }
    }
    free(ar);
}

int rc_check_aperture(struct vidmm_adapter *a, struct softgpu *sg, char *report, size_t n)
{
    struct rep r = { report, n, 0, 0 };
    if (report && n)
        report[0] = '\0';
    struct vidmm_adapter_info ai;
    if (!a || !sg || vidmm_adapter_query_info(a, &ai) != VIDMM_OK)
        return 0;
    for (uint32_t id = 1; id < ai.segment_count; id++) {
        struct vidmm_segment_info si;
        if (vidmm_segment_query(a, id, &si) == VIDMM_OK &&
            (si.kind == VIDMM_SEGMENT_KIND_APERTURE || si.kind == VIDMM_SEGMENT_KIND_AGP))
            aperture_segment(a, sg, id, ai.paging_buffer_segment_id == id, &r);
    }
    return r.errors;
}

const char *const rc_softgpu_only_rules[] = {
    "gpu.resident_translates", "gpu.translates_to_placement", "gpu.evicted_faults", "gpu.zero_translates_zero",
    "gpu.entry_reaches_owned", "gpu.unmapped_faults", "gpu.aperture_entry_owned", NULL,
};

void rc_softgpu_only_names(char *buf, size_t n)
{
    size_t used = 0;
    if (n)
        buf[0] = '\0';
    for (size_t i = 0; rc_softgpu_only_rules[i] && used < n; i++) {
        int k = snprintf(buf + used, n - used, "%s%s", i ? ", " : "", rc_softgpu_only_rules[i]);
        if (k < 0)
            break;
        used += (size_t)k;
    }
}

int rc_check_rules(struct vidmm_adapter *a, struct softgpu *sg, const struct rc_objects *o, char *report, size_t n)
{
    int e = vidmm_adapter_check_rules(a, report, n);
    size_t used = report ? strlen(report) : 0;
    if (sg && a && o)
        e += rc_check_gpu(a, sg, o, report ? report + used : NULL, report ? n - used : 0);
    return e;
}
