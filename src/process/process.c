/*
 * process.c - processes and the public GPU VA entries (GpuMmu model).
 *
 * A process pairs a VA-space bookkeeping structure (va/) with its page
 * tables (mmu/page_table.c).  Every VA change is two-phase
 * (docs/VA_SPACE.md, "Prepare and commit"):
 *
 *   prepare: the VA space validates, picks the address when vidmm chooses
 *            it, and obtains every record and tree node it will need
 *            (vidmm_va_*_prepare); then the page tables of the resolved
 *            span are created or switched to 4 KB entries.  Whatever can
 *            run out - host memory, page-table segment space - runs out
 *            here, and a failure leaves the VA space and the page tables
 *            as they were.
 *   commit:  vidmm_va_commit applies the change; its MAP/REMAP/UNMAP
 *            steps on_step() turns into UPDATE_PAGE_TABLE operations,
 *            then one FLUSH_TLB.  It cannot fail.  A PTE write the driver
 *            or a hung GPU refuses there is the one cause that cannot be
 *            moved into prepare: the VA tree stays the truth and the
 *            adapter reset rebuilds the page tables from it
 *            (docs/DECISIONS.md D45).
 *
 * Allocations are named by handle in every VA space, so a move rewrites
 * their PTEs in each process and their GPU virtual addresses never
 * change.
 *
 * An adapter with neither model (WDDM 1 style, e.g. softgpu's wddm1)
 * still has processes - for devices, residency lists and physical-mode
 * contexts - whose GPU VA entries answer VIDMM_E_NOT_SUPPORTED.
 *
 * IoMmu mode (an adapter with VIDMM_CAPS_IOMMU and no GpuMmu): the GPU
 * shares the CPU's page tables, so a mapping's GPU VA is the CPU address
 * of the allocation's system pages (in this user-space model, the host
 * address of its backing) and there are no GPU page tables; the VA space
 * only records which allocations a process uses.  Only system memory is
 * reachable: mapping an allocation that lives in a memory segment, or
 * moving a mapped one there, is VIDMM_E_NOT_SUPPORTED.
 *
 * Process handles: type 2 of the adapter's typed handle tables
 * (core/objtab.h), grown on demand up to the adapter's bound
 * (vidmm_adapter_create_info.max_processes).  The live processes are
 * also on a list (vidmm_for_each_process), and each allocation lists the
 * processes that map it (va_map.users, kept by the VA spaces' object index,
 * with links reserved in prepare): a move or a destroy of an allocation
 * visits those processes only, whatever the number of processes.
 */
#include "handle/lookup.h"
#include "model/objects.h"
#include "fence/fence.h"
#include "fence/hang.h"
#include "handle/handle.h"
#include "placement/placement.h"
#include "mmu/mmu.h"
#include "paging/paging.h"
#include "process/process.h"
#include "core/report.h"

#include <string.h>

struct vidmm_process *vidmm_process_get(const struct vidmm_adapter *a, vidmm_handle h)
{
    return a ? vidmm_objtab_get(&a->processes, h) : NULL;
}

/* A PTE write of a committed change was refused (the driver would not
 * encode it, a paging buffer could not be submitted, or a paging wait
 * found the engine hung): the page tables no longer say what the VA tree
 * says, and the change cannot be taken back.  Treated as an unrecoverable
 * paging fault (D31): the adapter is reset as the entry returns (at the
 * next wait or poll when a reset runs now), and its page-table rebuild (vidmm_tdr_rebuild_page_tables)
 * writes every entry again from the VA trees (D45).  A hang found by the
 * write itself has left that reset pending already. */
static void pte_write_lost(struct vidmm_adapter *a)
{
    if (vidmm_fence_paging_reset_pending(a))
        return;   /* an adapter reset is coming anyway (a node's reset alone rebuilds no page table) */
    vidmm_reset_schedule(a);
}

/* Commit half: every step of a VA change becomes page-table writes.  The
 * tables they need were made in prepare, so nothing here needs memory. */
static void on_step(void *ctx, const struct vidmm_va_step *s)
{
    struct vidmm_process *p = ctx;
    struct vidmm_adapter *a = p->adapter;
    vidmm_status st = VIDMM_OK;
    switch (s->op) {
    case VIDMM_VA_STEP_UNMAP:
        st = vidmm_pt_write(a, p, s->old.va, s->old.size, NULL);
        break;
    case VIDMM_VA_STEP_REMAP:
        st = vidmm_pt_write(a, p, s->old.va + s->prev_size, s->old.size - s->prev_size - s->next_size, NULL);
        break;
    case VIDMM_VA_STEP_MAP:
        st = vidmm_pt_write(a, p, s->new.va, s->new.size, &s->new);
        break;
    }
    if (st < 0)
        pte_write_lost(a);
}

/* The VA space's object index: al gained its first mapping in p (p joins
 * al's users, on a spare link obtained in prepare), or lost its last (p
 * leaves, O(processes mapping al); the link becomes a spare).  A handle
 * that no longer names a live allocation is ignored (the allocation is
 * going; its list goes with it). */
static void on_object(void *ctx, uint64_t object, int delta)
{
    struct vidmm_process *p = ctx;
    struct vidmm_allocation *al = vidmm_objtab_get(&p->adapter->allocations, object);
    if (!al)
        return;
    if (delta > 0) {
        struct vidmm_va_user *u = p->va_spares.users;
        if (u) {
            p->va_spares.users = u->next;
            p->va_spares.count--;
        } else {
            /* Not reserved (a bug): the checker reports the missing link. */
            u = vidmm_halloc(p->adapter->ha, VIDMM_SITE_PROCESS_VA_USER, sizeof(*u), _Alignof(struct vidmm_va_user));
        }
        al->va_map.processes++;
        if (!u)
            return;
        u->process = p;
        u->prev = NULL;
        u->next = al->va_map.users;
        if (al->va_map.users)
            al->va_map.users->prev = u;
        al->va_map.users = u;
        return;
    }
    al->va_map.processes--;
    for (struct vidmm_va_user *u = al->va_map.users; u; u = u->next) {
        if (u->process != p)
            continue;
        if (u->prev)
            u->prev->next = u->next;
        else
            al->va_map.users = u->next;
        if (u->next)
            u->next->prev = u->prev;
        u->prev = NULL;
        u->next = p->va_spares.users;
        p->va_spares.users = u;
        p->va_spares.count++;
        return;
    }
}

/* Prepare: at least n spare links (n = allocations the change may map
 * first in p).  *added: how many were made, for unreserve_users when a
 * later step of the prepare fails. */
static vidmm_status reserve_users(struct vidmm_adapter *a, struct vidmm_process *p, uint32_t n, uint32_t *added)
{
    *added = 0;
    while (p->va_spares.count < n) {
        struct vidmm_va_user *u = vidmm_halloc(a->ha, VIDMM_SITE_PROCESS_VA_USER, sizeof(*u),
                                               _Alignof(struct vidmm_va_user));
        if (!u)
            return VIDMM_E_NO_HOST_MEMORY;
        u->next = p->va_spares.users;
        p->va_spares.users = u;
        p->va_spares.count++;
        ++*added;
    }
    return VIDMM_OK;
}

static void unreserve_users(struct vidmm_adapter *a, struct vidmm_process *p, uint32_t n)
{
    while (n-- && p->va_spares.users) {
        struct vidmm_va_user *u = p->va_spares.users;
        p->va_spares.users = u->next;
        p->va_spares.count--;
        vidmm_hfree(a->ha, u, sizeof(*u), _Alignof(struct vidmm_va_user));
    }
}

void vidmm_process_free_users(struct vidmm_adapter *a, struct vidmm_process *p)
{
    unreserve_users(a, p, UINT32_MAX);
}

static void list_process(struct vidmm_adapter *a, struct vidmm_process *p)
{
    p->live_prev = a->process_last;
    p->live_next = NULL;
    if (a->process_last)
        a->process_last->live_next = p;
    else
        a->process_first = p;
    a->process_last = p;
}

void vidmm_process_unlist(struct vidmm_adapter *a, struct vidmm_process *p)
{
    if (p->live_prev)
        p->live_prev->live_next = p->live_next;
    else
        a->process_first = p->live_next;
    if (p->live_next)
        p->live_next->live_prev = p->live_prev;
    else
        a->process_last = p->live_prev;
    p->live_prev = p->live_next = NULL;
}

static vidmm_status process_create(struct vidmm_adapter *a, vidmm_handle *out)
{
    if (!a || !out)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : "out is NULL");
    *out = VIDMM_HANDLE_NULL;
    int iommu = !a->has_gpummu && (a->caps.memory_management_caps & VIDMM_CAPS_IOMMU);
    /* An adapter with neither model still has processes and devices
     * (residency lists, physical-mode contexts); only GPU VA is missing. */
    int no_va = !a->has_gpummu && !iommu;
    /* At the adapter's bound (a slot that served generation 0xFFFF is
     * retired: reusing it would bring an old handle back to life). */
    if (vidmm_objtab_full(&a->processes))
        return VIDMM_E_BUSY;
    struct vidmm_process *p = vidmm_hzalloc(a->ha, VIDMM_SITE_PROCESS_OBJECT, sizeof(*p), _Alignof(struct vidmm_process));
    if (!p)
        return VIDMM_E_NO_HOST_MEMORY;
    p->adapter = a;
    p->iommu = iommu;
    p->no_va = no_va;
    vidmm_status st = vidmm_pt_process_init(a, p, iommu || no_va ? 1 : 1u << a->gpummu.level[0].page_table_index_bit_count,
                                            VIDMM_SITE_PROCESS_PTE_BUF, 0);
    if (st < 0)
        goto fail;
    /* IoMmu: the CPU's user address space (47 bits on x86-64). */
    st = vidmm_va_space_init(&p->vs, a->ha, iommu || no_va ? 47 : a->gpummu.caps.virtual_address_bit_count);
    if (st < 0)
        goto fail_buf;
    if (!iommu && !no_va) {
        st = vidmm_pt_create_root(a, p);
        if (st < 0)
            goto fail_vs;
        st = vidmm_paging_flush(a);
        if (st < 0)
            goto fail_root;
        vidmm_va_space_set_step_fn(&p->vs, on_step, p);
    }
    if (!no_va)
        vidmm_va_space_set_object_fn(&p->vs, on_object, p);
    /* Under the fence lock: a fault report may be looking a process up. */
    pthread_mutex_lock(&a->fence_lock);
    st = vidmm_objtab_add(&a->processes, a->ha, p, &p->self);
    if (st >= 0)
        list_process(a, p);
    pthread_mutex_unlock(&a->fence_lock);
    if (st < 0)
        goto fail_root;
    vidmm_process_bind_root(a, p, p->self, 1);
    *out = p->self;
    return VIDMM_OK;
fail_root:
    vidmm_pt_destroy(a, vidmm_pt_root(p));
fail_vs:
    vidmm_va_space_fini(&p->vs);
fail_buf:
    vidmm_pt_process_fini(a, p);
fail:
    vidmm_hfree(a->ha, p, sizeof(*p), _Alignof(struct vidmm_process));
    return st;
}

static int faulted(struct vidmm_adapter *a, const struct vidmm_process *p)
{
    pthread_mutex_lock(&a->fence_lock);
    int f = p->fault.faulted;
    pthread_mutex_unlock(&a->fence_lock);
    return f;
}

static vidmm_status process_query(const struct vidmm_adapter *a, vidmm_handle h, struct vidmm_process_info *out)
{
    if (!a || !out)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : "out is NULL");
    struct vidmm_process *p;
    vidmm_status st = vidmm_process_lookup(a, h, &p);
    if (st < 0)
        return st;
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock((pthread_mutex_t *)&a->fence_lock);
    out->faulted = p->fault.faulted;
    out->fault_flags = p->fault.fault_flags;
    out->fault_va = p->fault.fault_va;
    out->faults = p->fault.faults;
    pthread_mutex_unlock((pthread_mutex_t *)&a->fence_lock);
    out->ranges = p->vs.range_count;
    uint64_t bytes[VIDMM_MAX_SEGMENTS + 1];
    memset(bytes, 0, sizeof(bytes));
    vidmm_pt_account(vidmm_pt_root(p), bytes, &out->page_tables);
    for (uint32_t i = 0; i <= VIDMM_MAX_SEGMENTS; i++)
        out->page_table_bytes += bytes[i];
    out->root_entries = vidmm_pt_root(p) ? vidmm_pt_root(p)->entries : 0;
    out->root_grows = vidmm_pt_root_grows(p);
    return VIDMM_OK;
}

/* End of a change: flush the TLB and the paging queue. */
static vidmm_status finish(struct vidmm_adapter *a, struct vidmm_process *p, vidmm_status st)
{
    if (p->iommu)
        return st;
    vidmm_status f = vidmm_pt_flush(a, p);
    if (f >= 0)
        f = vidmm_paging_flush(a);
    if (f < 0)
        pte_write_lost(a);   /* the buffer holding the change's entries did not run */
    if (st >= 0 && f < 0)
        st = f;
    return st;
}

static int aligned(uint64_t x, uint64_t al) { return (x & (al - 1)) == 0; }

/* The VA space's checks return bare statuses (it is below the error
 * layer's callers): name the call and what each status means there. */
static vidmm_status va_refused(vidmm_status st, const char *what, uint64_t va, uint64_t size)
{
    const char *why = st == VIDMM_E_ALIGNMENT        ? "addresses and sizes are multiples of 4 KB (64 KB for reservations)"
                      : st == VIDMM_E_BUSY           ? "the range overlaps what is mapped or reserved there"
                      : st == VIDMM_E_NO_SEGMENT_SPACE ? "no free range of that size in the [min, max) window"
                      : st == VIDMM_E_OVERFLOW       ? "the range wraps past the end of the address space"
                      : st == VIDMM_E_INVALID_ARG
                          ? "size 0, a range outside the address space or the window, or (unmap, free) a range "
                            "that is not wholly mapped or reserved"
                          : "see the status";
    return vidmm_fail(st, "%s of [0x%llx, +0x%llx): %s", what, (unsigned long long)va, (unsigned long long)size, why);
}

/* What [va, va+size) holds now, as a mask (a cut demotes 64 KB leaves
 * only where it cuts through a mapping). */
#define COVER_HOLE     0x1u  /* some byte is free */
#define COVER_RESERVED 0x2u  /* reservation-backed: reserved, or mapped inside a reservation */
#define COVER_PLAIN    0x4u  /* mapped outside any reservation */
#define COVER_MAPPED   0x8u  /* some byte is mapped (either kind) */
static unsigned coverage(const struct vidmm_process *p, uint64_t va, uint64_t size)
{
    unsigned m = 0;
    uint64_t cur = va, end = va + size;
    for (const struct vidmm_va_range *r = vidmm_va_first_from(&p->vs, va); r && r->d.va < end && cur < end;
         r = vidmm_va_next(&p->vs, r)) {
        if (r->d.va > cur)
            m |= COVER_HOLE;
        if (r->d.state == VIDMM_VA_MAPPED) {
            m |= COVER_MAPPED | (r->d.in_reservation ? COVER_RESERVED : COVER_PLAIN);
        } else {
            m |= COVER_RESERVED;
        }
        cur = r->d.va + r->d.size;
    }
    if (cur < end)
        m |= COVER_HOLE;
    return m;
}

/* A prepare that failed after making page tables: the tables made for
 * this change (this epoch) are unlinked and freed again, so the page
 * tables are as before.  Unlinking writes invalid entries; if the driver
 * refuses those, the new tables stay linked, holding only invalid
 * entries - for the GPU the same as no table - and are kept like any
 * table an unmap emptied (mmu/page_table.c), so the state is sound either
 * way and the prepare's own failure is what the caller hears. */
static vidmm_status unprepare(struct vidmm_adapter *a, struct vidmm_process *p, vidmm_status st)
{
    vidmm_status r = vidmm_pt_rollback(a, p);
    (void)r; /* see above: a refused unlink leaves empty tables, which are sound */
    return finish(a, p, st);
}

static vidmm_status gpuva_reserve(struct vidmm_adapter *a, vidmm_handle h, uint64_t base, uint64_t min, uint64_t max,
                                 uint64_t size, unsigned mode, uint64_t *va)
{
    if (!a || !va)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : "va is NULL");
    struct vidmm_process *p;
    vidmm_status st = vidmm_process_lookup(a, h, &p);
    if (st < 0)
        return st;
    if (p->no_va)
        return vidmm_fail(VIDMM_E_NOT_SUPPORTED, "the adapter has no GPU virtual addressing");
    if (faulted(a, p))
        return vidmm_fail(VIDMM_E_DEVICE_LOST, "process 0x%llx took a GPU page fault: its devices are lost",
                          (unsigned long long)p->self);
    if (p->iommu)   /* the CPU's address space is the OS's */
        return vidmm_fail(VIDMM_E_NOT_SUPPORTED, "an IoMmu process shares the CPU's address space: nothing to reserve");
    if (mode > VIDMM_GPUVA_RESERVE_ZERO)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "mode %u: not a VIDMM_GPUVA_RESERVE_* value", mode);
    /* Prepare: the VA space places and validates; a ZERO reservation
     * needs its tables (64 KB entries: reservations are 64 KiB granular). */
    struct vidmm_va_prep op;
    st = vidmm_va_reserve_prepare(&p->vs, base, min, max, size, mode, &op);
    if (st < 0)
        return finish(a, p, va_refused(st, "reserve", base, size));
    vidmm_pt_begin(p);
    if (mode == VIDMM_GPUVA_RESERVE_ZERO) {
        st = vidmm_pt_ensure(a, p, op.va, op.size, ((op.va | op.size) & (VIDMM_PAGE_64K - 1)) == 0);
        if (st < 0)
            return unprepare(a, p, st);
    }
    /* Commit: cannot fail. */
    vidmm_va_commit(&p->vs, &op);
    *va = op.va;
    return finish(a, p, VIDMM_OK);
}

static vidmm_status gpuva_map(struct vidmm_adapter *a, vidmm_handle h, uint64_t base, uint64_t min, uint64_t max,
                             vidmm_handle allocation, uint64_t offset, uint64_t size, unsigned prot,
                             uint64_t driver_protection, uint64_t *va)
{
    if (!a || !va)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : "va is NULL");
    struct vidmm_process *p;
    vidmm_status st = vidmm_process_lookup(a, h, &p);
    if (st < 0)
        return st;
    if (p->no_va)
        return vidmm_fail(VIDMM_E_NOT_SUPPORTED, "the adapter has no GPU virtual addressing");
    if (faulted(a, p))
        return vidmm_fail(VIDMM_E_DEVICE_LOST, "process 0x%llx took a GPU page fault: its devices are lost",
                          (unsigned long long)p->self);
    struct vidmm_allocation *al;
    st = vidmm_allocation_lookup_for(a, allocation, p->self, &al);
    if (st < 0)
        return st;
    if (prot & ~(unsigned)(VIDMM_GPUVA_READ_ONLY | VIDMM_GPUVA_NO_EXECUTE))
        return vidmm_fail(VIDMM_E_INVALID_ARG, "protection 0x%x: only READ_ONLY and NO_EXECUTE are defined", prot);
    if (!aligned(offset, VIDMM_VA_PAGE) || !aligned(size, VIDMM_VA_PAGE) || !aligned(base, VIDMM_VA_PAGE))
        return vidmm_fail(VIDMM_E_ALIGNMENT, "base 0x%llx, offset 0x%llx, size 0x%llx: each must be a multiple of %u",
                          (unsigned long long)base, (unsigned long long)offset, (unsigned long long)size,
                          (unsigned)VIDMM_VA_PAGE);
    if (offset + size < offset)
        return vidmm_fail(VIDMM_E_OVERFLOW, "offset 0x%llx + size 0x%llx overflows", (unsigned long long)offset,
                          (unsigned long long)size);
    if (!size || offset >= al->size || size > al->size - offset)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "offset 0x%llx, size 0x%llx: not a non-empty range of the allocation's "
                          "0x%llx bytes", (unsigned long long)offset, (unsigned long long)size,
                          (unsigned long long)al->size);
    if (p->iommu) {
        /* The GPU uses the CPU's address of the system pages. */
        if (!al->pl.sys)
            return vidmm_fail(VIDMM_E_NOT_SUPPORTED, "an IoMmu GPU maps system memory only and the allocation is in "
                              "segment %u", al->pl.segment_id);
        uint64_t cpu = (uint64_t)(uintptr_t)al->pl.sys + offset;
        if (base && base != cpu)
            return vidmm_fail(VIDMM_E_INVALID_ARG, "base 0x%llx: an IoMmu mapping is at the CPU address 0x%llx",
                              (unsigned long long)base, (unsigned long long)cpu);
        if ((min && cpu < min) || (max && cpu + size > max))
            return VIDMM_E_NO_SEGMENT_SPACE;
        uint32_t added = 0;
        st = vidmm_va_object_mapping_count(&p->vs, al->self) ? VIDMM_OK : reserve_users(a, p, 1, &added);
        if (st >= 0)
            st = vidmm_va_map(&p->vs, cpu, 0, 0, size, al->self, offset, prot, driver_protection, va);
        if (st < 0)
            unreserve_users(a, p, added);
        return st;
    }
    /* Prepare: the VA space places and validates (a fixed target that
     * mixes reservation-backed bytes with free or plain-mapped ones is
     * BUSY, before any table is made), then the span gets its tables. */
    struct vidmm_va_prep op;
    /* The VA space names the object by its own handle (an opener's
     * handle of a shared allocation resolves to it). */
    uint32_t added = 0;   /* first, so that its refusal changes nothing: p joins al's users in the commit */
    st = vidmm_va_object_mapping_count(&p->vs, al->self) ? VIDMM_OK : reserve_users(a, p, 1, &added);
    if (st >= 0)
        st = vidmm_va_map_prepare(&p->vs, base, min, max, size, al->self, offset, prot, driver_protection, &op);
    if (st < 0 && st != VIDMM_E_NO_HOST_MEMORY)
        st = va_refused(st, "map", base, size);
    if (st < 0) {
        unreserve_users(a, p, added);
        return finish(a, p, st);
    }
    vidmm_pt_begin(p);
    st = vidmm_pt_ensure(a, p, op.va, op.size, vidmm_pt_can_use_64k(a, al, &al->pl, op.va, offset, size));
    if (st < 0) {
        unreserve_users(a, p, added);
        return unprepare(a, p, st);
    }
    /* Commit: cannot fail. */
    vidmm_va_commit(&p->vs, &op);
    *va = op.va;
    return finish(a, p, VIDMM_OK);
}

/* Unmap and free share their shape: prepare (the VA space validates and
 * reserves; a cut inside a 64 KB page then needs 4 KB entries there),
 * commit, finish. */
typedef vidmm_status (*cut_prepare_fn)(struct vidmm_va_space *, uint64_t, uint64_t, struct vidmm_va_prep *);
static vidmm_status cut(struct vidmm_adapter *a, vidmm_handle h, uint64_t va, uint64_t size, cut_prepare_fn prepare)
{
    if (!a)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "adapter is NULL");
    struct vidmm_process *p;
    vidmm_status st = vidmm_process_lookup(a, h, &p);
    if (st < 0)
        return st;
    if (p->no_va)
        return vidmm_fail(VIDMM_E_NOT_SUPPORTED, "the adapter has no GPU virtual addressing");
    if (faulted(a, p))
        return vidmm_fail(VIDMM_E_DEVICE_LOST, "process 0x%llx took a GPU page fault: its devices are lost",
                          (unsigned long long)p->self);
    struct vidmm_va_prep op;
    st = prepare(&p->vs, va, size, &op);
    if (st < 0)
        return finish(a, p, va_refused(st, prepare == vidmm_va_unmap_prepare ? "unmap" : "free", va, size));
    /* Only a cut through a mapping needs 4 KB entries.  A demotion keeps
     * every translation (a 64 KB leaf is replaced by a 4 KB one saying the
     * same), so one that fails half-way changes nothing the GPU sees. */
    if (!p->iommu && ((va | size) & (VIDMM_PAGE_64K - 1)) && (coverage(p, va, size) & COVER_MAPPED)) {
        st = vidmm_pt_demote(a, p, va, size);
        if (st < 0)
            return finish(a, p, st);
    }
    /* Commit: cannot fail. */
    vidmm_va_commit(&p->vs, &op);
    return finish(a, p, VIDMM_OK);
}

static vidmm_status gpuva_unmap(struct vidmm_adapter *a, vidmm_handle h, uint64_t va, uint64_t size)
{
    return cut(a, h, va, size, vidmm_va_unmap_prepare);
}

static vidmm_status gpuva_free(struct vidmm_adapter *a, vidmm_handle h, uint64_t va, uint64_t size)
{
    return cut(a, h, va, size, vidmm_va_free_prepare);
}

/* The tables of a prepared batch: made for the spans that will hold
 * valid entries only (table memory follows the pages mapped, not the
 * span of the targets; docs/VA_SPACE.md "Batches"), with 4 KB entries
 * (tiles); and each target's existing 64 KB leaves switched to 4 KB
 * entries, since the batch writes 4 KB-granular entries there.  Both
 * walks skip the VA that has no tables, so a batch over a 2 TiB
 * reservation costs what its pages do. */
static vidmm_status update_tables(struct vidmm_adapter *a, struct vidmm_process *p, const struct vidmm_va_prep *op)
{
    vidmm_status st = VIDMM_OK;
    for (size_t k = 0; k < op->nspans && st >= 0; k++)
        st = vidmm_pt_ensure(a, p, op->spans[k].lo, op->spans[k].hi - op->spans[k].lo, 0);
    for (size_t i = 0; i < op->n && st >= 0; i++)
        st = vidmm_pt_demote(a, p, op->ops[i].va, op->ops[i].size);
    return st;
}

static vidmm_status gpuva_update(struct vidmm_adapter *a, vidmm_handle h, const struct vidmm_gpuva_update_op *ops,
                                uint32_t count)
{
    if (!a || (count && !ops))
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : "ops is NULL with count %u", count);
    struct vidmm_process *p;
    vidmm_status st = vidmm_process_lookup(a, h, &p);
    if (st < 0)
        return st;
    if (p->no_va)
        return vidmm_fail(VIDMM_E_NOT_SUPPORTED, "the adapter has no GPU virtual addressing");
    if (faulted(a, p))
        return vidmm_fail(VIDMM_E_DEVICE_LOST, "process 0x%llx took a GPU page fault: its devices are lost",
                          (unsigned long long)p->self);
    if (p->iommu)
        return vidmm_fail(VIDMM_E_NOT_SUPPORTED, "an IoMmu process shares the CPU's address space: no GPU VA updates");
    if (!count)
        return VIDMM_OK;
    if (count > 4096)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "count %u: at most 4096 operations a call", count);
    struct vidmm_va_update_op *v = vidmm_halloc(a->ha, VIDMM_SITE_PROCESS_UPDATE_OPS, (size_t)count * sizeof(*v), _Alignof(struct vidmm_va_update_op));
    if (!v)
        return VIDMM_E_NO_HOST_MEMORY;
    st = VIDMM_OK;
    for (uint32_t i = 0; i < count && st >= 0; i++) {
        const struct vidmm_gpuva_update_op *o = &ops[i];
        memset(&v[i], 0, sizeof(v[i]));
        v[i].type = o->type;
        v[i].va = o->va;
        v[i].size = o->size;
        v[i].object_offset = o->offset;
        v[i].prot = o->protection;
        v[i].driver_protection = o->driver_protection;
        v[i].mode = o->unmap_mode;
        v[i].src = o->source;
        if (o->type == VIDMM_GPUVA_UPDATE_MAP) {
            const struct vidmm_allocation *al = vidmm_handle_get_for(a, o->allocation, p->self);
            if (!al)
                st = VIDMM_E_INVALID_HANDLE;
            else if (o->offset + o->size < o->offset)
                st = VIDMM_E_OVERFLOW;
            else if (o->size > al->size || o->offset > al->size - o->size)
                st = VIDMM_E_INVALID_ARG;
            v[i].object = al ? al->self : o->allocation;
        } else if (o->type > VIDMM_GPUVA_UPDATE_COPY) {
            st = VIDMM_E_INVALID_ARG;
        }
    }
    /* Prepare: the VA space validates the whole batch (every target in
     * reservation-backed VA, every COPY source too), reserves, and names
     * the targets that will hold valid entries: those get tables. */
    struct vidmm_va_prep op;
    /* First: a link for each MAP of an allocation p does not map yet (a
     * COPY only repeats mappings p has). */
    uint32_t first = 0, added = 0;
    for (uint32_t i = 0; i < count && st >= 0; i++)
        first += v[i].type == VIDMM_VA_UPDATE_MAP && !vidmm_va_object_mapping_count(&p->vs, v[i].object);
    if (st >= 0)
        st = reserve_users(a, p, first, &added);
    if (st >= 0)
        st = vidmm_va_update_prepare(&p->vs, v, count, &op);
    if (st < 0)
        unreserve_users(a, p, added);
    if (st >= 0) {
        vidmm_pt_begin(p);
        st = update_tables(a, p, &op);
        if (st < 0) {
            unreserve_users(a, p, added);
            vidmm_hfree(a->ha, v, (size_t)count * sizeof(*v), _Alignof(struct vidmm_va_update_op));
            return unprepare(a, p, st);
        }
        /* Commit: cannot fail. */
        vidmm_va_commit(&p->vs, &op);
    }
    vidmm_hfree(a->ha, v, (size_t)count * sizeof(*v), _Alignof(struct vidmm_va_update_op));
    return finish(a, p, st);
}

static vidmm_status process_root_page_table(const struct vidmm_adapter *a, vidmm_handle h,
                                           struct vidmm_physical_address *root)
{
    if (!a || !root)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : "root is NULL");
    struct vidmm_process *p;
    vidmm_status st = vidmm_process_lookup(a, h, &p);
    if (st < 0)
        return st;
    if (p->iommu || p->no_va)
        return vidmm_fail(VIDMM_E_NOT_SUPPORTED, "process 0x%llx has no GPU page tables of its own",
                          (unsigned long long)h);
    memset(root, 0, sizeof(*root));
    root->segment_id = vidmm_pt_root(p)->segment_id;
    root->segment_offset = vidmm_pt_root(p)->offset;
    return VIDMM_OK;
}

static vidmm_status gpuva_query(const struct vidmm_adapter *a, vidmm_handle h, uint64_t va,
                               struct vidmm_gpuva_range *out, uint32_t cap, uint32_t *count)
{
    if (!a || !count || (cap && !out))
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : !count ? "count is NULL"
                                                                          : "ranges is NULL with capacity %u", cap);
    struct vidmm_process *p;
    vidmm_status st = vidmm_process_lookup(a, h, &p);
    if (st < 0)
        return st;
    uint32_t n = 0;
    for (const struct vidmm_va_range *r = vidmm_va_first_from(&p->vs, va); r && n < cap;
         r = vidmm_va_next(&p->vs, r), n++) {
        memset(&out[n], 0, sizeof(out[n]));
        out[n].va = r->d.va;
        out[n].size = r->d.size;
        out[n].state = r->d.state;
        out[n].mode = r->d.mode;
        out[n].allocation = r->d.state == VIDMM_VA_MAPPED && vidmm_handle_get_any(a, r->d.object)
                                ? vidmm_share_handle_in(vidmm_handle_get_any(a, r->d.object), p->self)
                                : r->d.object;   /* this process's own handle of a shared allocation */
        out[n].offset = r->d.object_offset;
        out[n].protection = r->d.prot;
    }
    *count = n;
    return VIDMM_OK;
}

/* Rewrite the PTEs of every mapping of al in p: O(its mappings) through
 * the VA space's per-object list. */
static vidmm_status remap_in(struct vidmm_adapter *a, struct vidmm_process *p, const struct vidmm_allocation *al)
{
    if (p->iommu)
        return VIDMM_OK; /* IoMmu: the system pages never move */
    for (const struct vidmm_va_range *r = vidmm_va_object_first(&p->vs, al->self); r;
         r = vidmm_va_object_next(&p->vs, r)) {
        vidmm_status st = vidmm_pt_write(a, p, r->d.va, r->d.size, &r->d);
        if (st < 0)
            return st;
    }
    return vidmm_pt_flush(a, p);
}

/* The walks below visit al's users, the processes that map it: O(1) for
 * an allocation no process maps, O(its mappings) in each that does. */
vidmm_status vidmm_process_remap_allocation(struct vidmm_adapter *a, struct vidmm_allocation *al)
{
    for (struct vidmm_va_user *u = al->va_map.users; u; u = u->next) {
        vidmm_status st = remap_in(a, u->process, al);
        if (st < 0)
            return st;
    }
    return VIDMM_OK;
}

vidmm_status vidmm_process_rewrite_zero(struct vidmm_adapter *a, struct vidmm_process *p)
{
    if (p->iommu || !vidmm_pt_root(p))
        return VIDMM_OK;
    for (const struct vidmm_va_range *r = vidmm_va_first_from(&p->vs, 0); r; r = vidmm_va_next(&p->vs, r)) {
        if (r->d.state != VIDMM_VA_RESERVED || r->d.mode != VIDMM_VA_ZERO)
            continue;
        vidmm_status st = vidmm_pt_write(a, p, r->d.va, r->d.size, &r->d);
        if (st < 0)
            return st;
    }
    return VIDMM_OK;
}

vidmm_status vidmm_process_prepare_move(struct vidmm_adapter *a, struct vidmm_allocation *al,
                                        const struct vidmm_placement *dst)
{
    for (struct vidmm_va_user *u = al->va_map.users; u; u = u->next) {
        struct vidmm_process *p = u->process;
        if (p->iommu) {
            if (!dst->sys)
                return VIDMM_E_NOT_SUPPORTED; /* an IoMmu GPU reaches system memory only */
            continue;
        }
        for (const struct vidmm_va_range *r = vidmm_va_object_first(&p->vs, al->self); r;
             r = vidmm_va_object_next(&p->vs, r)) {
            if (vidmm_pt_can_use_64k(a, al, dst, r->d.va, r->d.object_offset, r->d.size))
                continue;
            vidmm_status st = vidmm_pt_demote(a, p, r->d.va, r->d.size);
            if (st < 0)
                return st;
        }
    }
    return VIDMM_OK;
}

void vidmm_process_unmap_allocation_in(struct vidmm_adapter *a, struct vidmm_process *p, struct vidmm_allocation *al)
{
    if (!vidmm_va_object_mapping_count(&p->vs, al->self))
        return;
    /* As below: in place, cannot fail; the commit takes p off al's users
     * (on_object), the other holders' processes stay on it. */
    struct vidmm_va_prep op;
    if (vidmm_va_unmap_object_prepare(&p->vs, al->self, &op) == VIDMM_OK)
        vidmm_va_commit(&p->vs, &op);
    if (!p->iommu)
        (void)vidmm_pt_flush(a, p);
}

void vidmm_process_forget_allocation(struct vidmm_adapter *a, struct vidmm_allocation *al)
{
    /* Each unmap takes p off al's users (on_object): the next is read
     * first. */
    for (struct vidmm_va_user *u = al->va_map.users, *next; u; u = next) {
        next = u->next;
        struct vidmm_process *p = u->process;
        /* Needs no memory (the VA space unmaps in place), so it is
         * prepared and committed at once and cannot fail. */
        struct vidmm_va_prep op;
        if (vidmm_va_unmap_object_prepare(&p->vs, al->self, &op) == VIDMM_OK)
            vidmm_va_commit(&p->vs, &op);
        if (!p->iommu)
            (void)vidmm_pt_flush(a, p);
    }
}

/* ---- public entries: the adapter lock around each body (docs/THREADING.md) ---- */

vidmm_status vidmm_gpuva_free(struct vidmm_adapter *a, vidmm_handle h, uint64_t va, uint64_t size)
{
    VIDMM_ENTRY(a, vidmm_powered_down(a) ? VIDMM_E_STATE : gpuva_free(a, h, va, size));
}

vidmm_status vidmm_gpuva_map(struct vidmm_adapter *a, vidmm_handle h, uint64_t base, uint64_t min, uint64_t max,
                             vidmm_handle allocation, uint64_t offset, uint64_t size, unsigned prot, uint64_t driver_protection, uint64_t *va)
{
    VIDMM_ENTRY(a, vidmm_powered_down(a) ? VIDMM_E_STATE : gpuva_map(a, h, base, min, max, allocation, offset, size, prot, driver_protection, va));
}

vidmm_status vidmm_gpuva_query(const struct vidmm_adapter *a, vidmm_handle h, uint64_t va,
                               struct vidmm_gpuva_range *out, uint32_t cap, uint32_t *count)
{
    VIDMM_ENTRY(a, gpuva_query(a, h, va, out, cap, count));
}

vidmm_status vidmm_gpuva_reserve(struct vidmm_adapter *a, vidmm_handle h, uint64_t base, uint64_t min,
                                 uint64_t max, uint64_t size, unsigned mode, uint64_t *va)
{
    /* Reserving writes page tables (invalid or Zero entries) through a
     * paging buffer: GPU work, refused while down like map and free. */
    VIDMM_ENTRY(a, vidmm_powered_down(a)
                       ? vidmm_fail(VIDMM_E_STATE, "the adapter is powered down: reserve GPU VA after resume")
                       : gpuva_reserve(a, h, base, min, max, size, mode, va));
}

vidmm_status vidmm_gpuva_unmap(struct vidmm_adapter *a, vidmm_handle h, uint64_t va, uint64_t size)
{
    VIDMM_ENTRY(a, vidmm_powered_down(a) ? VIDMM_E_STATE : gpuva_unmap(a, h, va, size));
}

vidmm_status vidmm_gpuva_update(struct vidmm_adapter *a, vidmm_handle h, const struct vidmm_gpuva_update_op *ops,
                                uint32_t count)
{
    VIDMM_ENTRY(a, vidmm_powered_down(a) ? VIDMM_E_STATE : gpuva_update(a, h, ops, count));
}

vidmm_status vidmm_process_create(struct vidmm_adapter *a, vidmm_handle *out)
{
    VIDMM_ENTRY(a, vidmm_powered_down(a) ? VIDMM_E_STATE : process_create(a, out));
}

vidmm_status vidmm_process_query(const struct vidmm_adapter *a, vidmm_handle h, struct vidmm_process_info *out)
{
    VIDMM_ENTRY(a, process_query(a, h, out));
}

vidmm_status vidmm_process_root_page_table(const struct vidmm_adapter *a, vidmm_handle h,
                                           struct vidmm_physical_address *root)
{
    VIDMM_ENTRY(a, process_root_page_table(a, h, root));
}

/* The adapter checker's part (adapter/check.c): p's spare user links are
 * counted right. */
void vidmm_process_check_spares(const struct vidmm_process *p, struct vidmm_report *r)
{
    uint32_t spares = 0;
    for (const struct vidmm_va_user *u = p->va_spares.users; u && spares <= p->va_spares.count; u = u->next)
        spares++;
    if (spares != p->va_spares.count)
        vidmm_report_add(r, "process %u: %u spare user links listed, %u counted", vidmm_process_slot(p), spares,
                         p->va_spares.count);
}

/* al's list of mapping processes names live processes that map it, each
 * once, as many as it counts (slot: al's table slot, for the report).
 * Returns the count, which the adapter checker sums against the VA
 * spaces' object indexes. */
uint32_t vidmm_process_check_users(const struct vidmm_adapter *a, const struct vidmm_allocation *al, uint32_t slot,
                                   struct vidmm_report *r)
{
    if (al->va_map.processes > a->processes.live)
        vidmm_report_add(r, "allocation %u: mapped by %u processes, %u are alive", slot, al->va_map.processes,
                         a->processes.live);
    uint32_t users = 0;
    for (const struct vidmm_va_user *u = al->va_map.users; u && users <= al->va_map.processes; u = u->next) {
        users++;
        const struct vidmm_process *up = u->process;
        if ((u->next && u->next->prev != u) || (u == al->va_map.users && u->prev) ||
            vidmm_objtab_get(&a->processes, up->self) != up || !vidmm_va_object_mapping_count(&up->vs, al->self))
            vidmm_report_add(r, "allocation %u: user list broken, or names a process that does not map it", slot);
    }
    if (users != al->va_map.processes)
        vidmm_report_add(r, "allocation %u: %u processes listed as mapping it, %u counted", slot, users,
                         al->va_map.processes);
    return al->va_map.processes;
}

/* The first fault puts p in error; every fault counts (fence lock held:
 * the report comes from a driver thread). */
void vidmm_process_note_fault_locked(struct vidmm_process *p, uint64_t va, uint32_t flags)
{
    if (!p->fault.faulted) {
        p->fault.faulted = 1;
        p->fault.fault_va = va;
        p->fault.fault_flags = flags;
    }
    p->fault.faults++;
}
