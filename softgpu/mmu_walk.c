/*
 * mmu_walk.c - softgpu's GPU MMU walker (GpuMmu model): root bindings
 * (set_root_page_table, get_root_page_table_size), and the translation
 * behind softgpu_translate / softgpu_read_virtual / softgpu_write_virtual
 * and the copy engine's virtual runs.  The geometry, the hardware PTE
 * format and the paging commands that write the tables are in mmu.c.
 *
 * The walker reads the tables on every access: softgpu has no TLB, so
 * FLUSH_TLB is validated and counted but has nothing to invalidate (a
 * stale translation can never be served; docs/SOFTGPU.md says why).
 * Table contents are re-checked during the walk because anything may have
 * written table memory since (a transfer, softgpu_write_physical): a
 * malformed entry is a page fault, never a wild host access.
 *
 * Threads.  UPDATE_PAGE_TABLE runs on the copy engine (engine.c); the
 * walker entries wait for it to be idle and walk under softgpu's lock, so
 * a walk never sees a half-written update.  A fault found by
 * read/write_virtual is reported to vidmm after the lock is dropped.
 */
#include "softgpu_int.h"

#include <stddef.h>
#include <string.h>

struct softgpu_walk {
    struct softgpu_translation t;
    uint8_t *host;             /* host byte of va; NULL for a zero page */
    uint64_t run;              /* contiguous host bytes from va inside the page */
    int gart_unmapped;         /* aperture page the GART does not map */
    /* The leaf entry that mapped va (not for a Zero entry above the
     * leaf): lets softgpu_mmu_run read the next entries without a new walk. */
    uint32_t leaf_seg;
    uint64_t leaf_table, leaf_idx, leaf_entries;
    uint64_t leaf_entry;
};

static uint64_t softgpu_root_entries(const struct softgpu *sg, const struct vidmm_physical_address *root);

/* VIDMM_OK, VIDMM_E_PAGE_FAULT; the root is already checked.  The GPU
 * faults on root indices at or past root_entries (the bound NumEntries). */
static vidmm_status softgpu_walk(struct softgpu *sg, const struct vidmm_physical_address *root, uint64_t root_entries,
                            uint64_t va, uint32_t access, struct softgpu_walk *w)
{
    const struct softgpu_mmu *m = &sg->mmu;
    memset(w, 0, sizeof *w);
    if (m->va_bits < 64 && (va >> m->va_bits))
        return VIDMM_E_PAGE_FAULT;   /* beyond the address space */
    uint32_t seg = root->segment_id;
    uint64_t table = root->segment_offset;
    int ro = 0, nx = 0, leaf64 = 0;
    uint64_t e = 0;
    for (uint32_t l = m->levels; l-- > 0;) {
        int l64 = l == 0 && leaf64;
        uint32_t bits = l64 ? m->leaf64_bits : m->bits[l];
        uint32_t shift = l64 ? 16u : m->shift[l];
        uint64_t idx = (va >> shift) & ((1ull << bits) - 1);
        if (l == m->levels - 1 && idx >= root_entries)
            return VIDMM_E_PAGE_FAULT;   /* past the root's NumEntries */
        if (table + idx * 8u + 8u > sg->seg[seg].size)
            return VIDMM_E_PAGE_FAULT;
        memcpy(&e, sg->seg[seg].mem + table + idx * 8u, 8);
        if ((e & SOFTGPU_HWPTE_RESERVED) || !(e & SOFTGPU_HWPTE_VALID))
            return VIDMM_E_PAGE_FAULT;
        ro |= (e & SOFTGPU_HWPTE_RO) != 0;
        nx |= (e & SOFTGPU_HWPTE_NX) != 0;
        if ((access & SOFTGPU_ACCESS_WRITE) && ro)
            return VIDMM_E_PAGE_FAULT;
        if ((access & SOFTGPU_ACCESS_EXEC) && nx)
            return VIDMM_E_PAGE_FAULT;
        uint32_t eseg = (uint32_t)((e & SOFTGPU_HWPTE_SEG_MASK) >> SOFTGPU_HWPTE_SEG_SHIFT);
        uint64_t off = e & SOFTGPU_HWPTE_FRAME_MASK;
        if (e & SOFTGPU_HWPTE_ZERO) {
            /* Zero on any level: the whole span below reads as zeros. */
            w->t.zero = 1;
            w->t.page_size = l64 ? SOFTGPU_PAGE_64K : SOFTGPU_PAGE_4K;
            break;
        }
        if (l > 0) {
            int pt64 = (e & SOFTGPU_HWPTE_PT64K) != 0;
            if (pt64 && l != 1)
                return VIDMM_E_PAGE_FAULT;
            if (!softgpu_table_seg(sg, eseg, off, softgpu_tsize(m, l - 1, pt64)))
                return VIDMM_E_PAGE_FAULT;
            leaf64 = pt64;
            seg = eseg;
            table = off;
            continue;
        }
        /* Leaf: the page. */
        uint64_t psize = l64 ? SOFTGPU_PAGE_64K : SOFTGPU_PAGE_4K;
        uint64_t in = va & (psize - 1);
        if (e & SOFTGPU_HWPTE_PT64K || eseg > sg->nb_segment || (l64 && (off & (SOFTGPU_PAGE_64K - 1))))
            return VIDMM_E_PAGE_FAULT;
        w->leaf_seg = seg;
        w->leaf_table = table;
        w->leaf_idx = idx;
        w->leaf_entries = 1ull << bits;
        w->leaf_entry = e;
        w->t.segment_id = eseg;
        w->t.page_size = (uint32_t)psize;
        w->t.offset = off + in;
        w->run = psize - in;
        if (eseg == 0) {
            if (!off)
                return VIDMM_E_PAGE_FAULT;
            w->host = (uint8_t *)(uintptr_t)(off + in);
        } else {
            struct softgpu_segment *s = &sg->seg[eseg];
            if (off > s->size || psize > s->size - off)
                return VIDMM_E_PAGE_FAULT;
            uint64_t run;
            int mapped;
            w->host = softgpu_resolve(sg, s, off + in, w->run, &run, &mapped);
            w->gart_unmapped = !mapped;
            w->run = run;
        }
        break;
    }
    w->t.read_only = ro;
    w->t.no_execute = nx;
    if (w->t.zero)
        w->run = w->t.page_size - (va & (w->t.page_size - 1));
    return VIDMM_OK;
}

static int softgpu_root_ok(struct softgpu *sg, const struct vidmm_physical_address *root)
{
    return sg && root && sg->mmu.levels &&
           softgpu_table_seg(sg, root->segment_id, root->segment_offset, sg->mmu.table_size[sg->mmu.levels - 1]);
}

/* DxgkDdiSetRootPageTable: remember which context owns a root (or
 * forget it), for fault reports. */
void softgpu_set_root_page_table(void *driver, const struct vidmm_set_root_page_table_args *args)
{
    struct softgpu *sg = driver;
    if (!sg || !args)
        return;
    /* Fault reports read the bindings under the lock, maybe on another
     * thread than vidmm's. */
    softgpu_lock(sg);
    for (uint32_t i = 0; i < sg->nroots; i++) {
        if (sg->roots[i].context == args->context) {
            sg->roots[i] = sg->roots[--sg->nroots];
            break;
        }
    }
    if ((args->address.segment_id || args->address.segment_offset) && sg->nroots < SOFTGPU_MAX_ROOTS) {
        struct softgpu_root_binding *b = &sg->roots[sg->nroots++];
        b->segment_id = args->address.segment_id;
        b->num_entries = args->num_entries;
        b->offset = args->address.segment_offset;
        b->context = args->context;
    }
    softgpu_unlock(sg);
}

/* DxgkDdiGetRootPageTableSize: whole pages of 8-byte entries. */
uint64_t softgpu_get_root_page_table_size(void *driver, uint32_t *number_of_pte)
{
    struct softgpu *sg = driver;
    if (!sg || !number_of_pte || !sg->mmu.root_resizable || *number_of_pte == 0 ||
        *number_of_pte > (1u << SOFTGPU_ROOT_MAX_BITS))
        return 0;
    uint64_t page = sg->seg[sg->mmu.pt_segment].page_size;
    uint64_t size = softgpu_round_up((uint64_t)*number_of_pte * 8u, page);
    uint64_t n = size / 8u;
    *number_of_pte = (uint32_t)(n < (1u << SOFTGPU_ROOT_MAX_BITS) ? n : (1u << SOFTGPU_ROOT_MAX_BITS));
    return size;
}

/* Root entries the GPU may index for a root (its binding's NumEntries;
 * the full width for a root nobody bound). */
static uint64_t softgpu_root_entries(const struct softgpu *sg, const struct vidmm_physical_address *root)
{
    for (uint32_t i = 0; i < sg->nroots; i++)
        if (sg->roots[i].segment_id == root->segment_id && sg->roots[i].offset == root->segment_offset &&
            sg->roots[i].num_entries)
            return sg->roots[i].num_entries;
    return 1ull << sg->mmu.bits[sg->mmu.levels - 1];
}


static uint32_t fault_flags(uint32_t access, int present)
{
    uint32_t f = present ? 0 : VIDMM_FAULT_NOT_PRESENT;
    if (access & SOFTGPU_ACCESS_WRITE)
        f |= VIDMM_FAULT_WRITE;
    if (access & SOFTGPU_ACCESS_EXEC)
        f |= VIDMM_FAULT_EXECUTE;
    return f;
}

void softgpu_mmu_binding(const struct softgpu *sg, const struct vidmm_physical_address *root, uint64_t *entries,
                    uint64_t *context)
{
    *entries = 1ull << sg->mmu.bits[sg->mmu.levels - 1];
    *context = 0;
    for (uint32_t i = 0; i < sg->nroots; i++)
        if (sg->roots[i].segment_id == root->segment_id && sg->roots[i].offset == root->segment_offset) {
            if (sg->roots[i].num_entries)
                *entries = sg->roots[i].num_entries;
            *context = sg->roots[i].context;
            return;
        }
}

vidmm_status softgpu_mmu_run(struct softgpu *sg, const struct vidmm_physical_address *root, uint64_t root_entries,
                        uint64_t va, uint64_t len, uint32_t access, struct softgpu_run *r)
{
    struct softgpu_walk w;
    memset(r, 0, sizeof *r);
    vidmm_status st = softgpu_walk(sg, root, root_entries, va, access, &w);
    if (st != VIDMM_OK || w.gart_unmapped) {
        /* Not present unless a read probe translates (then it was the
         * protection, or an aperture page the GART does not map). */
        struct softgpu_walk probe;
        int present = st == VIDMM_OK || softgpu_walk(sg, root, root_entries, va, SOFTGPU_ACCESS_READ, &probe) == VIDMM_OK;
        r->fault_flags = fault_flags(access, present);
        return VIDMM_E_PAGE_FAULT;
    }
    uint64_t n = w.run < len ? w.run : len;
    r->host = w.t.zero ? NULL : w.host;
    r->zero = w.t.zero;
    if (w.t.zero || (w.t.segment_id && !sg->seg[w.t.segment_id].is_memory)) {
        r->run = n;   /* a Zero span, or one aperture page: no longer host run */
        return VIDMM_OK;
    }
    /* Extend over the following entries of the same leaf while they map
     * the next page with the same flags and segment: host-contiguous
     * (a memory segment is one mapping; system pages are host pages). */
    const uint64_t mask = SOFTGPU_HWPTE_FRAME_MASK;
    uint64_t psize = w.t.page_size, e = w.leaf_entry;
    const uint8_t *leaf = sg->seg[w.leaf_seg].mem + w.leaf_table;
    uint64_t seg_size = w.t.segment_id ? sg->seg[w.t.segment_id].size : UINT64_MAX;
    for (uint64_t idx = w.leaf_idx + 1; n < len && idx < w.leaf_entries; idx++) {
        uint64_t e2;
        memcpy(&e2, leaf + idx * 8u, 8);
        uint64_t next = (e & mask) + psize;
        if ((e2 & ~mask) != (e & ~mask) || (e2 & mask) != next || next > seg_size || psize > seg_size - next)
            break;
        e = e2;
        n += psize < len - n ? psize : len - n;
    }
    r->run = n;
    return VIDMM_OK;
}

/* A GPU access faulted: count it and find which context owns the root. */
static void softgpu_note_fault(struct softgpu *sg, const struct vidmm_physical_address *root, uint64_t va, uint32_t flags,
                          struct softgpu_fault *f)
{
    sg->stats.page_faults++;
    if (!sg->adapter)
        return;
    for (uint32_t i = 0; i < sg->nroots; i++)
        if (sg->roots[i].segment_id == root->segment_id && sg->roots[i].offset == root->segment_offset) {
            f->adapter = sg->adapter;
            f->context = sg->roots[i].context;
            f->va = va;
            f->flags = flags;
            return;
        }
}


vidmm_status softgpu_translate(struct softgpu *sg, const struct vidmm_physical_address *root, uint64_t va,
                               uint32_t access, struct softgpu_translation *out)
{
    const uint32_t all = SOFTGPU_ACCESS_READ | SOFTGPU_ACCESS_WRITE | SOFTGPU_ACCESS_EXEC;
    if (!softgpu_root_ok(sg, root) || !out || access == 0 || (access & ~all))
        return VIDMM_E_INVALID_ARG;
    struct softgpu_walk w;
    softgpu_lock_access(sg);
    vidmm_status st = softgpu_walk(sg, root, softgpu_root_entries(sg, root), va, access, &w);
    if (st != VIDMM_OK) {
        /* Translation is a probe, not a GPU access: counted, not reported. */
        sg->stats.page_faults++;
        memset(out, 0, sizeof *out);
    } else {
        *out = w.t;
    }
    softgpu_unlock(sg);
    return st;
}

/* Runs under the lock; a fault is left in *f for the caller to report. */
static vidmm_status softgpu_virtual_locked(struct softgpu *sg, const struct vidmm_physical_address *root, uint64_t va,
                                      uint8_t *dst, const uint8_t *src, size_t size, struct softgpu_fault *f)
{
    uint32_t access = dst ? SOFTGPU_ACCESS_READ : SOFTGPU_ACCESS_WRITE;
    uint64_t done = 0;
    while (done < size) {
        struct softgpu_walk w;
        /* The MMU translated, but an aperture page the GART does not map
         * would reach softgpu's dummy page: fault instead, so a stray
         * access is reported rather than absorbed. */
        uint64_t entries = softgpu_root_entries(sg, root);
        vidmm_status ws = softgpu_walk(sg, root, entries, va + done, access, &w);
        if (ws != VIDMM_OK || w.gart_unmapped) {
            /* Present unless the walk found no valid entry: softgpu_walk tells
             * protection faults apart by succeeding a read probe. */
            struct softgpu_walk probe;
            int present =
                ws == VIDMM_OK || softgpu_walk(sg, root, entries, va + done, SOFTGPU_ACCESS_READ, &probe) == VIDMM_OK;
            softgpu_note_fault(sg, root, va + done, fault_flags(access, present), f);
            return VIDMM_E_PAGE_FAULT;
        }
        uint64_t n = w.run < size - done ? w.run : size - done;
        if (w.t.zero) {
            if (dst)
                memset(dst + done, 0, (size_t)n);   /* writes to a zero page are dropped */
        } else if (dst) {
            memcpy(dst + done, w.host, (size_t)n);
        } else {
            memcpy(w.host, src + done, (size_t)n);
        }
        done += n;
    }
    return VIDMM_OK;
}

static vidmm_status softgpu_virtual(struct softgpu *sg, const struct vidmm_physical_address *root, uint64_t va,
                               uint8_t *dst, const uint8_t *src, size_t size)
{
    if (!softgpu_root_ok(sg, root) || (size && !dst && !src) || size > UINT64_MAX - va)
        return VIDMM_E_INVALID_ARG;
    struct softgpu_fault f;
    memset(&f, 0, sizeof f);
    softgpu_lock_access(sg);
    vidmm_status st = softgpu_virtual_locked(sg, root, va, dst, src, size, &f);
    softgpu_unlock(sg);
    /* Outside softgpu's lock: vidmm takes its own inside the callback. */
    if (f.adapter)
        vidmm_cb_notify_page_fault(f.adapter, f.context, f.va, f.flags);
    return st;
}

vidmm_status softgpu_read_virtual(struct softgpu *sg, const struct vidmm_physical_address *root, uint64_t va,
                                  void *dst, size_t size)
{
    if (size && !dst)
        return VIDMM_E_INVALID_ARG;
    return softgpu_virtual(sg, root, va, dst, NULL, size);
}

vidmm_status softgpu_write_virtual(struct softgpu *sg, const struct vidmm_physical_address *root, uint64_t va,
                                   const void *src, size_t size)
{
    if (size && !src)
        return VIDMM_E_INVALID_ARG;
    return softgpu_virtual(sg, root, va, NULL, src, size);
}

/* The command processor's view of one GPU virtual address (cmdproc.c):
 * the host bytes behind va, valid for *run bytes (at most the rest of
 * its page); *host is NULL for a zero page (reads 0, writes dropped).
 * A fault is counted and its VIDMM_FAULT_* flags returned; reporting it
 * is the caller's business (after the lock is dropped).  Runs with the
 * lock held. */
vidmm_status softgpu_mmu_access(struct softgpu *sg, const struct vidmm_physical_address *root, uint64_t va,
                           uint32_t access, uint8_t **host, uint64_t *run, uint32_t *fflags)
{
    if (!softgpu_root_ok(sg, root)) {
        *fflags = fault_flags(access, 0);
        sg->stats.page_faults++;
        return VIDMM_E_PAGE_FAULT;
    }
    struct softgpu_walk w;
    uint64_t entries = softgpu_root_entries(sg, root);   /* the bound root's NumEntries */
    vidmm_status ws = softgpu_walk(sg, root, entries, va, access, &w);
    if (ws != VIDMM_OK || w.gart_unmapped) {
        struct softgpu_walk probe;
        int present = ws == VIDMM_OK || softgpu_walk(sg, root, entries, va, SOFTGPU_ACCESS_READ, &probe) == VIDMM_OK;
        *fflags = fault_flags(access, present);
        sg->stats.page_faults++;
        return VIDMM_E_PAGE_FAULT;
    }
    *host = w.t.zero ? NULL : w.host;
    *run = w.run;
    return VIDMM_OK;
}
