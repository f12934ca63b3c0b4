/*
 * trace_write_calls.c - the recording layer's wrappers of the allocation,
 * GPU virtual address, residency, integrity and command-submission calls
 * (see trace.h).  Each builds its trace line with the writer's line
 * helpers (trace_write.c, declared in trace_int.h), calls vidmm, and ends
 * the line with the call's status and outputs.
 */
#include "trace_int.h"
#include "softgpu_cmds.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- allocations ---------------------------------------------------- */

/* A heap property's name, or its number when the format has no name for
 * it (a refused value still records and replays). */
static const char *prop_name(const char *const *names, uint32_t n, uint32_t v, char num[16])
{
    if (v < n && strcmp(names[v], "?"))
        return names[v];
    snprintf(num, 16, "%u", v);
    return num;
}

static vidmm_status create(struct tr *t, uint32_t dev, const struct softgpu_alloc_desc *d, int create2,
                           uint32_t flags, const char *name, uint32_t *id)
{
    uint32_t a = trw_new_obj(t, TR_ALLOC);
    if (!a)
        return VIDMM_E_NO_HOST_MEMORY;
    struct tr_obj *o = &t->obj[TR_ALLOC][a];
    o->kind = (uint32_t)d->kind;
    o->size = d->kind == SOFTGPU_ALLOC_EXPLICIT ? d->info.size : d->size;
    trw_obj_name(o, name, 'A', a);
    /* A device allocation belongs to the device's process (its line and
     * its accounting in the reports). */
    o->parent = dev ? trw_process_of(t, TR_DEV, dev) : 0;
    trw_line_begin(t, create2 ? TV_CREATE2 : TV_CREATE, o->parent, dev);
    trw_line_id(t, TR_ALLOC, a);
    if (dev) {
        trw_line_add(t, " device=%c%u", tr_kind_prefix[TR_DEV], dev);
    }
    if (create2)
        trw_line_flags(t, flags, tr_create_flag_names);
    trw_line_add(t, " kind=%s", tr_alloc_kind_name(o->kind));
    if (d->kind == SOFTGPU_ALLOC_EXPLICIT)
        trw_line_add(t,
                     " size=%" PRIu64 " align=%" PRIu64 " write-set=0x%x read-set=0x%x evict-set=0x%x pref=0x%x"
                     " alloc-flags=0x%x priority=0x%x",
                     d->info.size, d->info.alignment, d->info.supported_write_segment_set,
                     d->info.supported_read_segment_set, d->info.eviction_segment_set, d->info.preferred_segment,
                     d->info.flags, d->info.priority);
    else if (d->kind == SOFTGPU_ALLOC_HEAP) {
        /* A custom heap's page property and pool; unknown (0) is left out. */
        char n0[16], n1[16], n2[16];
        trw_line_add(t, " size=%" PRIu64 " align=%" PRIu64 " heap=%s", d->size, d->alignment,
                     prop_name(tr_heap_type_names, 6, d->heap.type, n0));
        if (d->heap.cpu_page_property)
            trw_line_add(t, " cpu-page=%s", prop_name(tr_cpu_page_names, 4, d->heap.cpu_page_property, n1));
        if (d->heap.memory_pool)
            trw_line_add(t, " pool=%s", prop_name(tr_memory_pool_names, 3, d->heap.memory_pool, n2));
    }
    else
        trw_line_add(t, " size=%" PRIu64 " align=%" PRIu64 " cpu=%u", d->size, d->alignment, d->cpu_visible);
    if (name && *name)
        trw_line_add(t, " name=%s", o->name);
    /* The driver's private data for it (trace_driver.c). */
    unsigned char pd[256];
    const char *why;
    size_t pds = tr_driver_desc(t, d, pd, sizeof pd, &why);
    vidmm_status st = !pds      ? tr_not_applicable(t, why)
                      : dev     ? vidmm_device_allocation_create(t->adapter, tr_handle(t, TR_DEV, dev), pd, pds, flags,
                                                                 &o->h)
                      : create2 ? vidmm_allocation_create2(t->adapter, pd, pds, flags, &o->h)
                                : vidmm_allocation_create(t->adapter, pd, pds, &o->h);
    if (st < 0)
        o->h = VIDMM_HANDLE_NULL;
    else {
        /* The library's reports (snapshot, leaks) name it as the tool does. */
        char nm[48];
        snprintf(nm, sizeof nm, "A%u %s", a, o->name);
        (void)vidmm_allocation_set_name(t->adapter, o->h, nm);
    }
    o->alive = st >= 0;
    trw_line_end(t, st, NULL);
    *id = a;
    return st;
}

vidmm_status tr_create(struct tr *t, const struct softgpu_alloc_desc *d, int create2, uint32_t flags,
                       const char *name, uint32_t *id)
{
    return create(t, 0, d, create2, flags, name, id);
}

vidmm_status tr_create_on(struct tr *t, uint32_t dev, const struct softgpu_alloc_desc *d, uint32_t flags,
                          const char *name, uint32_t *id)
{
    return create(t, dev, d, 1, flags, name, id);
}

vidmm_status tr_destroy(struct tr *t, uint32_t a)
{
    trw_line_begin(t, TV_DESTROY, 0, 0);
    trw_line_id(t, TR_ALLOC, a);
    vidmm_status st = vidmm_allocation_destroy(t->adapter, tr_handle(t, TR_ALLOC, a));
    if (st >= 0) {
        t->obj[TR_ALLOC][a].alive = 0;
        /* Destroying an allocation removes its mappings everywhere. */
        for (uint32_t v = 1; v <= t->nobj[TR_VA]; v++)
            if (t->obj[TR_VA][v].alloc == a)
                t->obj[TR_VA][v].alive = 0;
    }
    trw_line_end(t, st, NULL);
    return st;
}

vidmm_status tr_priority(struct tr *t, uint32_t a, uint32_t priority)
{
    trw_line_begin(t, TV_PRIORITY, 0, 0);
    trw_line_id(t, TR_ALLOC, a);
    trw_line_add(t, " 0x%x", priority);
    vidmm_status st = vidmm_allocation_set_priority(t->adapter, tr_handle(t, TR_ALLOC, a), priority);
    trw_line_end(t, st, NULL);
    return st;
}

vidmm_status tr_move(struct tr *t, uint32_t a, uint32_t segment, int discard)
{
    trw_line_begin(t, discard ? TV_MOVE_DISCARD : TV_MOVE, 0, 0);
    trw_line_id(t, TR_ALLOC, a);
    trw_line_add(t, " segment=%u", segment);
    vidmm_handle h = tr_handle(t, TR_ALLOC, a);
    vidmm_status st = discard ? vidmm_allocation_move_discard(t->adapter, h, segment)
                              : vidmm_allocation_move(t->adapter, h, segment);
    trw_line_end(t, st, NULL);
    return st;
}

vidmm_status tr_flip(struct tr *t, uint32_t source, uint32_t a)
{
    trw_line_begin(t, TV_FLIP, 0, 3);
    trw_line_add(t, " %u", source);
    if (a)
        trw_line_id(t, TR_ALLOC, a);
    else
        trw_line_add(t, " -");
    vidmm_status st = vidmm_adapter_flip(t->adapter, source, a ? tr_handle(t, TR_ALLOC, a) : VIDMM_HANDLE_NULL);
    trw_line_end(t, st, NULL);
    return st;
}

/* ---- GPU virtual addresses ------------------------------------------ */

vidmm_status tr_reserve(struct tr *t, uint32_t p, struct tr_addr base, uint64_t min, uint64_t max, uint64_t size,
                        unsigned mode, uint32_t *id)
{
    uint32_t v = trw_new_obj(t, TR_VA);
    if (!v)
        return VIDMM_E_NO_HOST_MEMORY;
    struct tr_obj *o = &t->obj[TR_VA][v];
    o->parent = p;
    o->size = size;
    trw_line_begin(t, TV_RESERVE, p, 0);
    trw_line_id(t, TR_VA, v);
    trw_line_id(t, TR_PROC, p);
    trw_line_addr(t, "base", base);
    trw_line_add(t, " min=0x%" PRIx64 " max=0x%" PRIx64 " size=%" PRIu64 " mode=%s", min, max, size,
                 mode == VIDMM_GPUVA_RESERVE_ZERO ? "zero" : mode == VIDMM_GPUVA_RESERVE_NO_ACCESS ? "no-access" : "?");
    vidmm_status st = vidmm_gpuva_reserve(t->adapter, tr_handle(t, TR_PROC, p), tr_addr_value(t, base), min, max,
                                          size, mode, &o->va);
    o->alive = st >= 0;
    if (st >= 0)
        trw_line_end(t, st, " va=0x%" PRIx64, o->va);
    else
        trw_line_end(t, st, NULL);
    *id = v;
    return st;
}

/* A mapping's V id for process p over allocation a, and its line's start
 * (verb, V, P, A); 0 when the host is out of memory. */
static uint32_t map_begin(struct tr *t, enum tr_verb verb, uint32_t p, uint32_t a, uint64_t size)
{
    uint32_t v = trw_new_obj(t, TR_VA);
    if (!v)
        return 0;
    struct tr_obj *o = &t->obj[TR_VA][v];
    o->parent = p;
    o->size = size;
    o->alloc = a;
    trw_line_begin(t, verb, p, 0);
    trw_line_id(t, TR_VA, v);
    trw_line_id(t, TR_PROC, p);
    trw_line_id(t, TR_ALLOC, a);
    return v;
}

/* A mapping's line's end.  In IoMmu mode the VA is the host address of
 * the system pages: it changes from run to run, so it is not an output. */
static vidmm_status map_end(struct tr *t, uint32_t v, vidmm_status st, uint32_t *id)
{
    struct tr_obj *o = &t->obj[TR_VA][v];
    o->alive = st >= 0;
    if (st >= 0 && !t->iommu)
        trw_line_end(t, st, " va=0x%" PRIx64, o->va);
    else
        trw_line_end(t, st, NULL);
    *id = v;
    return st;
}

vidmm_status tr_map(struct tr *t, uint32_t p, struct tr_addr base, uint64_t min, uint64_t max, uint32_t a,
                    uint64_t offset, uint64_t size, unsigned protection, uint64_t driver_protection, uint32_t *id)
{
    uint32_t v = map_begin(t, TV_MAP, p, a, size);
    if (!v)
        return VIDMM_E_NO_HOST_MEMORY;
    trw_line_addr(t, "base", base);
    trw_line_add(t, " min=0x%" PRIx64 " max=0x%" PRIx64 " offset=%" PRIu64 " size=%" PRIu64 " protection=0x%x"
                " driver-protection=0x%" PRIx64,
                 min, max, offset, size, protection, driver_protection);
    vidmm_status st = vidmm_gpuva_map(t->adapter, tr_handle(t, TR_PROC, p), tr_addr_value(t, base), min, max,
                                      tr_handle(t, TR_ALLOC, a), offset, size, protection, driver_protection,
                                      &t->obj[TR_VA][v].va);
    return map_end(t, v, st, id);
}

vidmm_status tr_place(struct tr *t, uint32_t p, uint32_t a, uint64_t offset, uint64_t size, uint64_t align,
                      uint32_t *id)
{
    uint32_t v = map_begin(t, TV_PLACE, p, a, size);
    if (!v)
        return VIDMM_E_NO_HOST_MEMORY;
    trw_line_add(t, " offset=%" PRIu64 " size=%" PRIu64 " align=%" PRIu64, offset, size, align);
    /* The runtime's placement rule for CreatePlacedResource: an alignment
     * Direct3D 12 knows (small resources, the default, MSAA) and an offset
     * on it.  A resource outside its heap, or empty, vidmm's map refuses
     * itself. */
    vidmm_status st;
    if ((align != 4096 && align != 65536 && align != 4194304) || offset % align)
        st = VIDMM_E_INVALID_ARG;
    else
        st = vidmm_gpuva_map(t->adapter, tr_handle(t, TR_PROC, p), 0, 0, 0, tr_handle(t, TR_ALLOC, a), offset, size,
                             0, 0, &t->obj[TR_VA][v].va);
    return map_end(t, v, st, id);
}

/* unmap and free: the same arguments; a range given back whole ends
 * its V id. */
static vidmm_status unmap_or_free(struct tr *t, enum tr_verb v, uint32_t p, struct tr_addr va, uint64_t size,
                                  vidmm_status (*fn)(struct vidmm_adapter *, vidmm_handle, uint64_t, uint64_t))
{
    trw_line_begin(t, v, p, 0);
    trw_line_id(t, TR_PROC, p);
    trw_line_addr(t, "va", va);
    trw_line_add(t, " size=%" PRIu64, size);
    vidmm_status st = fn(t->adapter, tr_handle(t, TR_PROC, p), tr_addr_value(t, va), size);
    if (st >= 0 && va.v && !va.off && size == t->obj[TR_VA][va.v].size)
        t->obj[TR_VA][va.v].alive = 0;
    trw_line_end(t, st, NULL);
    return st;
}

vidmm_status tr_unmap(struct tr *t, uint32_t p, struct tr_addr va, uint64_t size)
{
    return unmap_or_free(t, TV_UNMAP, p, va, size, vidmm_gpuva_unmap);
}

vidmm_status tr_free(struct tr *t, uint32_t p, struct tr_addr va, uint64_t size)
{
    return unmap_or_free(t, TV_FREE, p, va, size, vidmm_gpuva_free);
}

/* ---- residency ------------------------------------------------------ */

/* Handles of a list of allocation ids, in a buffer the caller frees. */
static vidmm_handle *handles_of(struct tr *t, const uint32_t *list, uint32_t n)
{
    vidmm_handle *h = malloc((size_t)(n ? n : 1) * sizeof(*h));
    if (h)
        for (uint32_t i = 0; i < n; i++)
            h[i] = tr_handle(t, TR_ALLOC, list[i]);
    return h;
}

vidmm_status tr_make_resident(struct tr *t, uint32_t d, uint32_t q, const uint32_t *list, uint32_t n,
                              uint32_t flags, uint64_t *fence, uint64_t *trim)
{
    trw_line_begin(t, TV_MAKE_RESIDENT, trw_process_of(t, TR_DEV, d), 1000 + q);
    trw_line_id(t, TR_DEV, d);
    trw_line_id(t, TR_QUEUE, q);
    trw_line_flags(t, flags, tr_make_resident_flag_names);
    trw_line_list(t, list, n);
    vidmm_handle *h = handles_of(t, list, n);
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof mr);
    mr.paging_queue = tr_handle(t, TR_QUEUE, q);
    mr.allocations = h;
    mr.count = n;
    mr.flags = flags;
    trw_rules_before_make_resident(t);
    vidmm_status st = h ? vidmm_make_resident(t->adapter, tr_handle(t, TR_DEV, d), &mr) : VIDMM_E_NO_HOST_MEMORY;
    trw_rules_after_make_resident(t, st);
    free(h);
    if (fence)
        *fence = mr.paging_fence_value;
    if (trim)
        *trim = mr.bytes_to_trim;
    if (st == VIDMM_PENDING)
        trw_line_end(t, st, " fence=%" PRIu64, mr.paging_fence_value);
    else if (st == VIDMM_E_OVER_BUDGET)
        trw_line_end(t, st, " trim=%" PRIu64, mr.bytes_to_trim);
    else
        trw_line_end(t, st, NULL);
    return st;
}

vidmm_status tr_evict(struct tr *t, uint32_t d, const uint32_t *list, uint32_t n, uint32_t flags, uint64_t *trim)
{
    trw_line_begin(t, TV_EVICT, trw_process_of(t, TR_DEV, d), d);
    trw_line_id(t, TR_DEV, d);
    trw_line_flags(t, flags, tr_evict_flag_names);
    trw_line_list(t, list, n);
    vidmm_handle *h = handles_of(t, list, n);
    struct vidmm_evict_args ev = { .allocations = h, .count = n, .flags = flags };
    vidmm_status st = h ? vidmm_evict(t->adapter, tr_handle(t, TR_DEV, d), &ev) : VIDMM_E_NO_HOST_MEMORY;
    uint64_t tb = ev.bytes_to_trim;
    free(h);
    if (trim)
        *trim = tb;
    if (st >= 0 && tb)
        trw_line_end(t, st, " trim=%" PRIu64, tb);
    else
        trw_line_end(t, st, NULL);
    return st;
}

/* A CPU wait for fence on a paging queue or a context (tid: its timeline
 * track), counted in *waits.  No deadline: in synchronous mode the fence
 * has already signalled; otherwise a hang is the reset path's business. */
static vidmm_status wait_fence(struct tr *t, enum tr_verb v, enum tr_kind k, uint32_t id, uint32_t tid, uint64_t fence,
                               vidmm_status (*wait)(struct vidmm_adapter *, vidmm_handle, uint64_t, uint64_t),
                               uint64_t *waits)
{
    trw_line_begin(t, v, trw_process_of(t, k, id), tid);
    trw_line_id(t, k, id);
    trw_line_add(t, " fence=%" PRIu64, fence);
    vidmm_status st = wait(t->adapter, tr_handle(t, k, id), fence, UINT64_MAX);
    (*waits)++;
    trw_line_end(t, st, NULL);
    return st;
}

vidmm_status tr_wait(struct tr *t, uint32_t q, uint64_t fence)
{
    return wait_fence(t, TV_WAIT, TR_QUEUE, q, 1000 + q, fence, vidmm_paging_queue_wait, &t->fence_waits);
}

vidmm_status tr_offer(struct tr *t, uint32_t d, const uint32_t *list, uint32_t n, uint32_t priority)
{
    trw_line_begin(t, TV_OFFER, trw_process_of(t, TR_DEV, d), d);
    trw_line_id(t, TR_DEV, d);
    static const char *const pn[] = { "?", "low", "normal", "high", "auto" };
    trw_line_add(t, " priority=%s", priority < 5 ? pn[priority] : "?");
    trw_line_list(t, list, n);
    vidmm_handle *h = handles_of(t, list, n);
    vidmm_status st = h ? vidmm_offer(t->adapter, tr_handle(t, TR_DEV, d), h, n, priority) : VIDMM_E_NO_HOST_MEMORY;
    free(h);
    trw_line_end(t, st, NULL);
    return st;
}

vidmm_status tr_reclaim(struct tr *t, uint32_t q, const uint32_t *list, uint32_t n, uint32_t *results,
                        uint64_t *fence)
{
    trw_line_begin(t, TV_RECLAIM, trw_process_of(t, TR_QUEUE, q), 1000 + q);
    trw_line_id(t, TR_QUEUE, q);
    trw_line_list(t, list, n);
    vidmm_handle *h = handles_of(t, list, n);
    uint32_t *r = calloc(n ? n : 1, sizeof(*r));
    uint64_t fv = 0;
    vidmm_status st = h && r ? vidmm_reclaim(t->adapter, tr_handle(t, TR_QUEUE, q), h, n, r, &fv)
                             : VIDMM_E_NO_HOST_MEMORY;
    if (fence)
        *fence = fv;
    if (results && r)
        memcpy(results, r, (size_t)n * sizeof(*r));
    /* The per-allocation results are outputs, after the status. */
    if (st >= 0 && r) {
        char res[2048];
        size_t used = 0;
        res[0] = '\0';
        for (uint32_t i = 0; i < n && used + 16 < sizeof res; i++)
            used += (size_t)snprintf(res + used, sizeof res - used, "%s%s", i ? "," : "",
                                     r[i] == VIDMM_RECLAIM_DISCARDED ? "discarded" : "ok");
        if (st == VIDMM_PENDING)
            trw_line_end(t, st, " fence=%" PRIu64 " results=%s", fv, n ? res : "-");
        else
            trw_line_end(t, st, " results=%s", n ? res : "-");
    } else {
        trw_line_end(t, st, NULL);
    }
    free(h);
    free(r);
    return st;
}

vidmm_status tr_budget(struct tr *t, uint32_t p, enum vidmm_segment_group g, uint64_t bytes)
{
    trw_line_begin(t, TV_BUDGET, p, 0);
    trw_line_id(t, TR_PROC, p);
    trw_line_add(t, " %s %" PRIu64, tr_group_name(g), bytes);
    vidmm_status st = vidmm_process_set_budget(t->adapter, tr_handle(t, TR_PROC, p), g, bytes);
    trw_line_end(t, st, NULL);
    return st;
}

vidmm_status tr_reservation(struct tr *t, uint32_t p, enum vidmm_segment_group g, uint64_t bytes)
{
    trw_line_begin(t, TV_RESERVATION, p, 0);
    trw_line_id(t, TR_PROC, p);
    trw_line_add(t, " %s %" PRIu64, tr_group_name(g), bytes);
    vidmm_status st = vidmm_change_video_memory_reservation(t->adapter, tr_handle(t, TR_PROC, p), g, bytes);
    trw_line_end(t, st, NULL);
    return st;
}

/* ---- integrity ------------------------------------------------------ */

static uint64_t *scratch(struct tr *t, uint64_t size)
{
    if (size > SIZE_MAX / 2)
        return NULL;
    if (t->scratch_size < size) {
        free(t->scratch);
        t->scratch = malloc((size_t)size);
        t->scratch_size = t->scratch ? (size_t)size : 0;
    }
    return t->scratch;
}

vidmm_status tr_write(struct tr *t, uint32_t a, uint64_t seed)
{
    trw_line_begin(t, TV_WRITE, 0, 0);
    trw_line_id(t, TR_ALLOC, a);
    trw_line_add(t, " seed=%" PRIu64, seed);
    struct tr_obj *o = tr_get(t, TR_ALLOC, a);
    void *p = NULL;
    vidmm_status st = vidmm_allocation_lock(t->adapter, o ? o->h : VIDMM_HANDLE_NULL, &p);
    if (st >= 0) {
        trw_pattern_fill(p, o->size, seed);
        st = vidmm_allocation_unlock(t->adapter, o->h);
    }
    trw_line_end(t, st, NULL);
    return st;
}

static vidmm_status lock_line(struct tr *t, enum tr_verb v, uint32_t a)
{
    trw_line_begin(t, v, 0, 0);
    trw_line_id(t, TR_ALLOC, a);
    struct tr_obj *o = tr_get(t, TR_ALLOC, a);
    vidmm_handle h = o ? o->h : VIDMM_HANDLE_NULL;
    void *p = NULL;
    vidmm_status st = v == TV_LOCK ? vidmm_allocation_lock(t->adapter, h, &p) : vidmm_allocation_unlock(t->adapter, h);
    trw_line_end(t, st, NULL);
    return st;
}

vidmm_status tr_lock(struct tr *t, uint32_t a)
{
    return lock_line(t, TV_LOCK, a);
}

vidmm_status tr_unlock(struct tr *t, uint32_t a)
{
    return lock_line(t, TV_UNLOCK, a);
}

static void count_check(struct tr *t, vidmm_status st, uint64_t bytes)
{
    t->checks++;
    if (st == TR_MISMATCH)
        t->check_failures++;
    else if (st >= 0)
        t->check_bytes += bytes;
}

vidmm_status tr_check(struct tr *t, uint32_t a, uint64_t seed)
{
    trw_line_begin(t, TV_CHECK, 0, 0);
    trw_line_id(t, TR_ALLOC, a);
    trw_line_add(t, " seed=%" PRIu64, seed);
    struct tr_obj *o = tr_get(t, TR_ALLOC, a);
    void *p = NULL;
    vidmm_status st = vidmm_allocation_lock(t->adapter, o ? o->h : VIDMM_HANDLE_NULL, &p);
    if (st >= 0) {
        int ok = trw_pattern_matches(p, o->size, seed);
        st = vidmm_allocation_unlock(t->adapter, o->h);
        if (st >= 0 && !ok)
            st = TR_MISMATCH;
    }
    count_check(t, st, o ? o->size : 0);
    trw_line_end(t, st, NULL);
    return st;
}

/* Where the GPU reaches va of process p: through softgpu's MMU with the
 * process's root page table (GpuMmu), or (IoMmu) at the CPU address the
 * mapping is, which the GPU can use only while the allocation is
 * resident.  On success *host is NULL for the MMU path. */
static vidmm_status gpu_target(struct tr *t, uint32_t p, struct tr_addr va, struct vidmm_physical_address *root,
                               void **host)
{
    *host = NULL;
    if (!t->iommu && !t->gpu)
        return tr_not_applicable(t, "the tool's GPU reads and writes go through softgpu's MMU walker (vkgpu's GPU "
                                    "view is tested by its own sparse test, docs/VKGPU.md)");
    if (!t->iommu)
        return vidmm_process_root_page_table(t->adapter, tr_handle(t, TR_PROC, p), root);
    struct tr_obj *v = tr_get(t, TR_VA, va.v);
    if (!v || !v->alive || !v->alloc || v->parent != p)
        return VIDMM_E_PAGE_FAULT;
    struct vidmm_residency_state rs;
    vidmm_status st = vidmm_allocation_residency(t->adapter, tr_handle(t, TR_ALLOC, (uint32_t)v->alloc), &rs);
    if (st < 0)
        return st;
    if (!rs.resident)
        return VIDMM_E_PAGE_FAULT;
    *host = (void *)(uintptr_t)(v->va + va.off);
    return VIDMM_OK;
}

static void gpu_line(struct tr *t, enum tr_verb verb, uint32_t p, struct tr_addr va, uint64_t size, uint64_t seed)
{
    trw_line_begin(t, verb, p, 0);
    trw_line_id(t, TR_PROC, p);
    trw_line_addr(t, "va", va);
    trw_line_add(t, " size=%" PRIu64 " seed=%" PRIu64, size, seed);
}

vidmm_status tr_gpu_read(struct tr *t, uint32_t p, struct tr_addr va, uint64_t size, uint64_t seed)
{
    gpu_line(t, TV_GPU_READ, p, va, size, seed);
    struct vidmm_physical_address root;
    void *host;
    uint64_t *buf = scratch(t, size);
    vidmm_status st = buf ? gpu_target(t, p, va, &root, &host) : VIDMM_E_NO_HOST_MEMORY;
    if (st >= 0) {
        if (host)
            memcpy(buf, host, (size_t)size);
        else
            st = softgpu_read_virtual(t->gpu, &root, tr_addr_value(t, va), buf, (size_t)size);
    }
    if (st >= 0 && !trw_pattern_matches(buf, size, seed))
        st = TR_MISMATCH;
    if (st == VIDMM_E_PAGE_FAULT)
        t->gpu_faults++;
    count_check(t, st, size);
    trw_line_end(t, st, NULL);
    return st;
}

vidmm_status tr_gpu_write(struct tr *t, uint32_t p, struct tr_addr va, uint64_t size, uint64_t seed)
{
    gpu_line(t, TV_GPU_WRITE, p, va, size, seed);
    struct vidmm_physical_address root;
    void *host;
    uint64_t *buf = scratch(t, size);
    vidmm_status st = buf ? gpu_target(t, p, va, &root, &host) : VIDMM_E_NO_HOST_MEMORY;
    if (st >= 0) {
        trw_pattern_fill(buf, size, seed);
        if (host)
            memcpy(host, buf, (size_t)size);
        else
            st = softgpu_write_virtual(t->gpu, &root, tr_addr_value(t, va), buf, (size_t)size);
    }
    if (st == VIDMM_E_PAGE_FAULT)
        t->gpu_faults++;
    trw_line_end(t, st, NULL);
    return st;
}

vidmm_status tr_check_adapter(struct tr *t)
{
    trw_line_begin(t, TV_CHECK_ADAPTER, 0, 0);
    /* The structure walkers and, whatever --rules says, the rules. */
    char rep[1024];
    int bad = vidmm_adapter_check(t->adapter, NULL, 0) + (t->gpu ? softgpu_check(t->gpu) : 0);
    int rules = tr_check_rules_now(t, rep, sizeof rep);
    if (rules)
        fprintf(stderr, "vidmm: check-adapter: %d rule violation%s:\n%s", rules, rules == 1 ? "" : "s", rep);
    bad += rules;
    vidmm_status st = bad ? TR_MISMATCH : VIDMM_OK;
    t->adapter_checks++;
    if (bad)
        t->adapter_check_failures++;
    trw_line_end(t, st, NULL);
    return st;
}

/* ---- command submission ------------------------------------------------ */

/* On a plug-in driver the tool submits nothing: its command buffers are
 * softgpu's command set (trace_driver.c). */
static vidmm_status submission_na(struct tr *t)
{
    return tr_not_applicable(t, "the tool's command buffers are softgpu's command set (vkgpu's own submission "
                                "is tested by build/vkgpu-tests, docs/VKGPU.md)");
}

/* A call of the submission family not made: its line, answered
 * TR_NOT_APPLICABLE. */
static vidmm_status na_call(struct tr *t, enum tr_verb v, enum tr_kind k, uint32_t id, uint32_t tid,
                            const uint64_t *fence)
{
    trw_line_begin(t, v, trw_process_of(t, k, id), tid);
    trw_line_id(t, k, id);
    if (fence)
        trw_line_add(t, " fence=%" PRIu64, *fence);
    vidmm_status st = submission_na(t);
    trw_line_end(t, st, NULL);
    return st;
}

vidmm_status tr_context_create(struct tr *t, uint32_t d, uint32_t node, uint32_t mode, uint32_t *id)
{
    uint32_t c = trw_new_obj(t, TR_CTX);
    if (!c)
        return VIDMM_E_NO_HOST_MEMORY;
    struct tr_obj *o = &t->obj[TR_CTX][c];
    o->parent = d;
    o->kind = mode;
    uint32_t p = trw_process_of(t, TR_DEV, d);
    trw_line_begin(t, TV_CONTEXT, p, 2000 + c);
    trw_line_id(t, TR_CTX, c);
    trw_line_id(t, TR_DEV, d);
    if (tr_node_name(node))
        trw_line_add(t, " node=%s", tr_node_name(node));
    else
        trw_line_add(t, " node=%u", node);
    trw_line_add(t, " mode=%s", mode == VIDMM_CONTEXT_VIRTUAL ? "virtual" : mode == VIDMM_CONTEXT_PHYSICAL ? "physical" : "?");
    struct vidmm_context_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.node = node;
    cd.mode = mode;
    vidmm_status st = !t->gpu ? submission_na(t) : vidmm_context_create(t->adapter, tr_handle(t, TR_DEV, d), &cd, &o->h);
    if (st < 0)
        o->h = VIDMM_HANDLE_NULL;
    o->alive = st >= 0;
    if (t->timeline) {
        char label[48];
        snprintf(label, sizeof label, "context C%u (%s, %s)", c, tr_node_name(node) ? tr_node_name(node) : "?",
                 mode == VIDMM_CONTEXT_PHYSICAL ? "physical" : "virtual");
        tl_meta(t, "thread_name", p, 2000 + c, label);
    }
    trw_line_end(t, st, NULL);
    *id = c;
    return st;
}

vidmm_status tr_context_destroy(struct tr *t, uint32_t c)
{
    if (!t->gpu)
        return na_call(t, TV_CONTEXT_DESTROY, TR_CTX, c, 2000 + c, NULL);
    return trw_destroy_leaf(t, TV_CONTEXT_DESTROY, TR_CTX, c, 2000 + c, vidmm_context_destroy);
}

/* An operand as the trace writes it: V<n>[+0x..] or a number (addresses
 * and the fill pattern in hex, the rest decimal). */
static void line_operand(struct tr *t, struct tr_addr a, int hex)
{
    if (a.v && a.off)
        trw_line_add(t, "V%u+0x%" PRIx64, a.v, a.off);
    else if (a.v)
        trw_line_add(t, "V%u", a.v);
    else if (hex)
        trw_line_add(t, "0x%" PRIx64, a.off);
    else
        trw_line_add(t, "%" PRIu64, a.off);
}

vidmm_status tr_cmdbuf(struct tr *t, const struct tr_cmd *cmds, uint32_t n, uint32_t to, uint64_t offset,
                       uint32_t *id)
{
    uint32_t b = trw_new_obj(t, TR_BUF);
    if (!b)
        return VIDMM_E_NO_HOST_MEMORY;
    trw_line_begin(t, TV_CMDBUF, trw_process_of(t, TR_ALLOC, to), 0);
    trw_line_id(t, TR_BUF, b);
    trw_line_add(t, " cmds=");
    uint64_t cap = 0;
    int badop = 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct cmd_kind *k = cmd_kind_of(cmds[i].op);
        if (!k) {
            trw_line_add(t, "%s0x%x", i ? "," : "", cmds[i].op);
            badop = 1;
            continue;
        }
        trw_line_add(t, "%s%s", i ? "," : "", k->name);
        for (int j = 0; j < k->operands; j++) {
            trw_line_add(t, ":");
            line_operand(t, cmds[i].arg[j],
                         (k->addr_mask >> j & 1) || (cmds[i].op == SOFTGPU_CMD_FILL && j == 2));
        }
        cap += 8 + 8 * (uint64_t)k->operands;
    }
    if (!n)
        trw_line_add(t, "-");
    if (to)
        trw_line_add(t, " to=A%u offset=%" PRIu64, to, offset);
    vidmm_status st = badop || !n || cap > UINT32_MAX ? VIDMM_E_INVALID_ARG : VIDMM_OK;
    if (st >= 0 && !t->gpu)
        st = submission_na(t);
    void *data = st >= 0 ? calloc(1, (size_t)cap) : NULL;
    if (st >= 0 && !data)
        st = VIDMM_E_NO_HOST_MEMORY;
    struct softgpu_cmdbuf cb = { data, 0, (uint32_t)cap };
    for (uint32_t i = 0; i < n && st >= 0; i++) {
        uint64_t v[4];
        for (int j = 0; j < 4; j++)
            v[j] = tr_addr_value(t, cmds[i].arg[j]);
        switch (cmds[i].op) {
        case SOFTGPU_CMD_NOP: st = softgpu_cmd_nop(&cb); break;
        case SOFTGPU_CMD_WRITE32: st = softgpu_cmd_write32(&cb, v[0], (uint32_t)v[1]); break;
        case SOFTGPU_CMD_WRITE64: st = softgpu_cmd_write64(&cb, v[0], v[1]); break;
        case SOFTGPU_CMD_COPY: st = softgpu_cmd_copy(&cb, v[0], v[1], v[2]); break;
        case SOFTGPU_CMD_FILL: st = softgpu_cmd_fill(&cb, v[0], v[1], (uint32_t)v[2]); break;
        case SOFTGPU_CMD_CHECKSUM: st = softgpu_cmd_checksum(&cb, v[0], v[1], v[2]); break;
        case SOFTGPU_CMD_COMPARE: st = softgpu_cmd_compare(&cb, v[0], v[1], v[2], v[3]); break;
        case SOFTGPU_CMD_SIGNAL: st = softgpu_cmd_signal(&cb, v[0], v[1]); break;
        case SOFTGPU_CMD_WAIT: st = softgpu_cmd_wait(&cb, v[0], v[1]); break;
        default: st = VIDMM_E_INVALID_ARG; break;
        }
    }
    if (st >= 0 && to) {
        struct tr_obj *ao = tr_get(t, TR_ALLOC, to);
        void *p = NULL;
        if (!ao || offset > ao->size || ao->size - offset < cb.size)
            st = VIDMM_E_INVALID_ARG;
        else if ((st = vidmm_allocation_lock(t->adapter, ao->h, &p)) >= 0) {
            memcpy((char *)p + offset, data, cb.size);
            st = vidmm_allocation_unlock(t->adapter, ao->h);
        }
    }
    struct tr_obj *o = &t->obj[TR_BUF][b];
    if (st >= 0) {
        o->data = data;
        o->size = cb.size;
        o->alive = 1;
        t->commands_built += n;
        trw_line_end(t, st, " size=%u sum=0x%" PRIx64, cb.size, softgpu_checksum(data, cb.size));
    } else {
        free(data);
        trw_line_end(t, st, NULL);
    }
    *id = b;
    return st;
}

vidmm_status tr_submit_virtual(struct tr *t, uint32_t c, struct tr_addr va, uint32_t size, uint64_t *fence)
{
    trw_line_begin(t, TV_SUBMIT_VIRTUAL, trw_process_of(t, TR_CTX, c), 2000 + c);
    trw_line_id(t, TR_CTX, c);
    trw_line_addr(t, "va", va);
    trw_line_add(t, " size=%u", size);
    uint64_t fv = 0;
    vidmm_status st = !t->gpu ? submission_na(t) : vidmm_submit_virtual(t->adapter, tr_handle(t, TR_CTX, c), tr_addr_value(t, va), size, &fv);
    if (fence)
        *fence = fv;
    if (st >= 0) {
        t->submits_virtual++;
        trw_line_end(t, st, " fence=%" PRIu64, fv);
    } else {
        t->submit_failed++;
        trw_line_end(t, st, NULL);
    }
    return st;
}

vidmm_status tr_submit_physical(struct tr *t, uint32_t c, uint32_t b, const uint32_t *allocs,
                                const uint32_t *alloc_flags, uint32_t nalloc, const struct tr_patch *patches,
                                uint32_t npatch, uint32_t flags, uint64_t *fence, uint32_t *patched)
{
    trw_line_begin(t, TV_SUBMIT_PHYSICAL, trw_process_of(t, TR_CTX, c), 2000 + c);
    trw_line_id(t, TR_CTX, c);
    trw_line_id(t, TR_BUF, b);
    trw_line_add(t, " allocs=");
    for (uint32_t i = 0; i < nalloc; i++) {
        trw_line_add(t, "%sA%u", i ? "," : "", allocs[i]);
        if (alloc_flags[i] & VIDMM_SUBMIT_WRITE)
            trw_line_add(t, ":write");
        if (alloc_flags[i] & ~VIDMM_SUBMIT_WRITE)
            trw_line_add(t, ":0x%x", alloc_flags[i] & ~VIDMM_SUBMIT_WRITE);
    }
    if (!nalloc)
        trw_line_add(t, "-");
    trw_line_add(t, " patches=");
    for (uint32_t i = 0; i < npatch; i++)
        trw_line_add(t, "%s%u+%u@%u", i ? "," : "", patches[i].index, patches[i].allocation_offset,
                     patches[i].patch_offset);
    if (!npatch)
        trw_line_add(t, "-");
    trw_line_add(t, " flags=%s", flags == VIDMM_SUBMIT_REUSED ? "reused" : flags ? "?" : "-");
    if (flags & ~VIDMM_SUBMIT_REUSED)
        trw_line_add(t, "0x%x", flags);
    struct vidmm_submit_allocation *al = calloc(nalloc ? nalloc : 1, sizeof(*al));
    struct vidmm_patch_location *pl = calloc(npatch ? npatch : 1, sizeof(*pl));
    struct tr_obj *bo = tr_get(t, TR_BUF, b);
    struct vidmm_submit_physical_args pa;
    memset(&pa, 0, sizeof pa);
    vidmm_status st = !t->gpu ? submission_na(t) : VIDMM_E_NO_HOST_MEMORY;
    if (al && pl && t->gpu) {
        for (uint32_t i = 0; i < nalloc; i++) {
            al[i].allocation = tr_handle(t, TR_ALLOC, allocs[i]);
            al[i].flags = alloc_flags[i];
        }
        for (uint32_t i = 0; i < npatch; i++) {
            pl[i].allocation_index = patches[i].index;
            pl[i].allocation_offset = patches[i].allocation_offset;
            pl[i].patch_offset = patches[i].patch_offset;
        }
        pa.buffer = bo && bo->alive ? bo->data : NULL;
        pa.size = bo && bo->alive ? (uint32_t)bo->size : 0;
        pa.allocation_count = nalloc;
        pa.allocations = al;
        pa.patches = pl;
        pa.patch_count = npatch;
        pa.flags = flags;
        st = vidmm_submit_physical(t->adapter, tr_handle(t, TR_CTX, c), &pa);
    }
    free(al);
    free(pl);
    if (fence)
        *fence = pa.fence;
    if (patched)
        *patched = pa.patched;
    if (st >= 0) {
        t->submits_physical++;
        t->patches_written += pa.patched;
        trw_line_end(t, st, " fence=%" PRIu64 " patched=%u", pa.fence, pa.patched);
    } else {
        t->submit_failed++;
        trw_line_end(t, st, NULL);
    }
    return st;
}

vidmm_status tr_context_wait(struct tr *t, uint32_t c, uint64_t fence)
{
    if (!t->gpu)
        return na_call(t, TV_CONTEXT_WAIT, TR_CTX, c, 2000 + c, &fence);
    return wait_fence(t, TV_CONTEXT_WAIT, TR_CTX, c, 2000 + c, fence, vidmm_context_wait, &t->context_waits);
}

vidmm_status tr_context_fence(struct tr *t, uint32_t c, uint64_t *submitted, uint64_t *completed)
{
    trw_line_begin(t, TV_CONTEXT_FENCE, trw_process_of(t, TR_CTX, c), 2000 + c);
    trw_line_id(t, TR_CTX, c);
    uint64_t s = 0, d = 0;
    vidmm_status st = !t->gpu ? submission_na(t) : vidmm_context_fence(t->adapter, tr_handle(t, TR_CTX, c), &s, &d);
    if (submitted)
        *submitted = s;
    if (completed)
        *completed = d;
    if (st >= 0)
        trw_line_end(t, st, " submitted=%" PRIu64 " completed=%" PRIu64, s, d);
    else
        trw_line_end(t, st, NULL);
    return st;
}

vidmm_status tr_result(struct tr *t, uint32_t a, uint64_t offset, uint64_t expect, uint64_t *value)
{
    trw_line_begin(t, TV_RESULT, 0, 0);
    trw_line_id(t, TR_ALLOC, a);
    trw_line_add(t, " offset=%" PRIu64 " expect=0x%" PRIx64, offset, expect);
    struct tr_obj *o = tr_get(t, TR_ALLOC, a);
    void *p = NULL;
    uint64_t v = 0;
    vidmm_status st = !t->gpu                                      ? submission_na(t)
                      : !o || offset > o->size || o->size - offset < 8 ? VIDMM_E_INVALID_ARG
                                                                     : vidmm_allocation_lock(t->adapter, o->h, &p);
    if (st >= 0) {
        memcpy(&v, (char *)p + offset, 8);
        st = vidmm_allocation_unlock(t->adapter, o->h);
        if (st >= 0 && v != expect)
            st = TR_MISMATCH;
    }
    if (value)
        *value = v;
    if (st == TR_NOT_APPLICABLE) {
        trw_line_end(t, st, NULL);
        return st;
    }
    t->gpu_results++;
    if (st == TR_MISMATCH)
        t->gpu_result_failures++;
    if (st >= 0 || st == TR_MISMATCH)
        trw_line_end(t, st, " value=0x%" PRIx64, v);
    else
        trw_line_end(t, st, NULL);
    return st;
}
