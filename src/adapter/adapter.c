/*
 * adapter.c - opening an adapter: the two-call segment query, validation
 * of the driver's answer, and the segment objects built from it.
 *
 * Validation is strict because everything later trusts the segment table:
 * a fault found here is reported with VIDMM_E_BAD_DRIVER_DESC and a message
 * naming the segment and the rule it breaks, and nothing is left
 * allocated.  The rules come from DXGK_SEGMENTFLAGS, DXGK_SEGMENTDESCRIPTOR4
 * and the "Initializing use of memory segments" page; where the documents
 * are silent the choice is in docs/DECISIONS.md.
 */
#include "model/objects.h"
#include "vidmm/rules.h"
#include "handle/handle.h"
#include "placement/placement.h"
#include "allocation/allocation.h"
#include "paging_process/paging_process.h"
#include "device/device.h"
#include "fence/fence.h"
#include "fence/inflight.h"
#include "mmu/mmu.h"
#include "observe/observe.h"
#include "paging/paging.h"
#include "residency/residency.h"
#include "submit/submit.h"
#include "tdr/tdr.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Debug builds run this at every entry boundary (model/entry.h): the
 * structures and the WDDM rules, as the tests do after every step. */
static int debug_check(const struct vidmm_adapter *a, char *msg, size_t n)
{
    int e = vidmm_adapter_check(a, msg, n);
    if (!e)
        e = vidmm_adapter_check_rules(a, msg, n);
    return e;
}

/* ---- validation ----------------------------------------------------- */

/* The open's reason goes to the caller's error_message and to the
 * thread's last error alike. */
static vidmm_status fault(const struct vidmm_adapter_create_info *ci, const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    if (ci->error_message && ci->error_message_size)
        snprintf(ci->error_message, ci->error_message_size, "%s", why);
    (void)vidmm_fail(VIDMM_E_BAD_DRIVER_DESC, "%s", why);
    return VIDMM_E_BAD_DRIVER_DESC;
}


/* Check one descriptor on its own; overlap and counts are checked after. */
static vidmm_status check_descriptor(const struct vidmm_adapter_create_info *ci, uint32_t id,
                                     const struct vidmm_segment_descriptor *d,
                                     const struct vidmm_driver_ops *ops)
{
    uint32_t f = d->flags;
    if (f & ~VIDMM_SEGMENT_KNOWN_FLAGS)
        return fault(ci, "segment %u: unknown flag bits 0x%x", id, f & ~VIDMM_SEGMENT_KNOWN_FLAGS);
    if (f & VIDMM_SEGMENT_RESERVED_SYSMEM)
        return fault(ci, "segment %u: ReservedSysMem is for system use; a driver must not set it", id);
    if (f & VIDMM_SEGMENT_AGP) {
        if (f != VIDMM_SEGMENT_AGP)
            return fault(ci, "segment %u: an AGP-type aperture segment must have no other flag (flags 0x%x)", id, f);
        if (ci->agp_aperture_size == 0)
            return fault(ci, "segment %u: AGP-type aperture segment reported but the system has no AGP aperture", id);
        return VIDMM_OK; /* size and base come from the AGP aperture */
    }
    if (f & VIDMM_SEGMENT_USE_BANKING)
        return fault(ci, "segment %u: banked segments (UseBanking) are not supported in WDDM 2 descriptors", id);
    if (f & VIDMM_SEGMENT_PITCH_ALIGNMENT)
        return fault(ci, "segment %u: PitchAlignment segments are not supported", id);
    if ((f & VIDMM_SEGMENT_CPU_VISIBLE) && (f & VIDMM_SEGMENT_SUPPORTS_CPU_HOST_APERTURE))
        return fault(ci, "segment %u: CpuVisible and SupportsCpuHostAperture are mutually exclusive", id);
    if ((f & VIDMM_SEGMENT_SUPPORTS_CACHED_CPU_HOST_APERTURE) && !(f & VIDMM_SEGMENT_SUPPORTS_CPU_HOST_APERTURE))
        return fault(ci, "segment %u: SupportsCachedCpuHostAperture requires SupportsCpuHostAperture", id);
    if ((f & VIDMM_SEGMENT_CACHE_COHERENT) && !(f & VIDMM_SEGMENT_APERTURE))
        return fault(ci, "segment %u: CacheCoherent is only valid on an aperture segment", id);
    if ((f & (VIDMM_SEGMENT_PRESERVED_DURING_HIBERNATE | VIDMM_SEGMENT_PARTIALLY_PRESERVED_DURING_HIBERNATE)) &&
        !(f & VIDMM_SEGMENT_PRESERVED_DURING_STANDBY))
        return fault(ci, "segment %u: a hibernate preservation flag requires PreservedDuringStandby", id);

    uint32_t page = VIDMM_PAGE_4K;
    if (f & VIDMM_SEGMENT_USE_64KB_PAGES) {
        if (f & VIDMM_SEGMENT_APERTURE)
            return fault(ci, "segment %u: an aperture maps 4 KB system pages; Use64KBPages is not valid on it", id);
        page = VIDMM_PAGE_64K;
    }
    if (d->page_size && d->page_size != VIDMM_PAGE_4K && d->page_size != VIDMM_PAGE_64K)
        return fault(ci, "segment %u: page size %u is neither 4 KB nor 64 KB", id, d->page_size);
    if (d->page_size && d->page_size != page)
        return fault(ci, "segment %u: page size %u disagrees with Use64KBPages=%u", id, d->page_size,
                     (f & VIDMM_SEGMENT_USE_64KB_PAGES) ? 1u : 0u);
    if (d->size == 0)
        return fault(ci, "segment %u: size is zero", id);
    if (d->size % page)
        return fault(ci, "segment %u: size 0x%llx is not a multiple of its %u-byte page", id,
                     (unsigned long long)d->size, page);
    if (d->base_address % page)
        return fault(ci, "segment %u: base address 0x%llx is not aligned to its %u-byte page", id,
                     (unsigned long long)d->base_address, page);
    if (d->base_address + d->size < d->base_address)
        return fault(ci, "segment %u: base + size overflows the GPU physical address space", id);
    if (f & VIDMM_SEGMENT_APERTURE) {
        if (d->commit_limit > d->size)
            return fault(ci, "segment %u: commit limit 0x%llx exceeds the aperture size 0x%llx", id,
                         (unsigned long long)d->commit_limit, (unsigned long long)d->size);
        if (d->commit_limit % VIDMM_PAGE_4K)
            return fault(ci, "segment %u: commit limit is not a multiple of 4 KB", id);
    } else {
        if ((f & VIDMM_SEGMENT_CPU_VISIBLE) && !d->cpu_translated_address)
            return fault(ci, "segment %u: CpuVisible memory segment without a CPU address", id);
        if (f & VIDMM_SEGMENT_SUPPORTS_CPU_HOST_APERTURE) {
            if (!d->cpu_host_aperture.cpu_address || d->cpu_host_aperture.size_in_pages == 0)
                return fault(ci, "segment %u: CPU host aperture with no address or no pages", id);
            if (!ops->map_cpu_host_aperture || !ops->unmap_cpu_host_aperture)
                return fault(ci, "segment %u: CPU host aperture reported but the driver has no map/unmap op", id);
        }
    }
    return VIDMM_OK;
}

static vidmm_status default_describe(void *driver, struct vidmm_describe_allocation_args *args)
{
    (void)driver;
    const struct vidmm_allocation_info *tmpl = args->info->private_driver_data;
    if (!tmpl || args->info->private_driver_data_size != sizeof(*tmpl))
        return VIDMM_E_INVALID_ARG;
    struct vidmm_allocation_info keep = *args->info;
    *args->info = *tmpl;
    args->info->private_driver_data = keep.private_driver_data;
    args->info->private_driver_data_size = keep.private_driver_data_size;
    return VIDMM_OK;
}

static void default_destroy(void *driver, const struct vidmm_destroy_allocation_args *args)
{
    (void)driver;
    (void)args;
}

static uint64_t default_system_limit(void)
{
    long pages = sysconf(_SC_PHYS_PAGES);
    long psz = sysconf(_SC_PAGESIZE);
    uint64_t total = (pages > 0 && psz > 0) ? (uint64_t)pages * (uint64_t)psz : (1ull << 32);
    uint64_t half = total / 2;
    half &= ~(uint64_t)(VIDMM_PAGE_4K - 1);
    return half < (64ull << 20) ? (64ull << 20) : half;
}

static vidmm_status init_segment_allocators(struct vidmm_adapter *a)
{
    for (uint32_t i = 1; i < a->segment_count; i++) {
        struct vidmm_segment *s = &a->seg[i];
        vidmm_status st = vidmm_ra_init(&s->ra, a->ha, s->size, s->page_size);
        if (st < 0)
            return st;
        s->has_ra = 1;
        if (s->host_ap_pages) {
            st = vidmm_ra_init(&s->host_ap_ra, a->ha, (uint64_t)s->host_ap_pages * s->page_size, s->page_size);
            if (st < 0)
                return st;
            s->has_host_ap_ra = 1;
        }
    }
    return VIDMM_OK;
}

static void release_segments(struct vidmm_adapter *a)
{
    for (uint32_t i = 0; i <= VIDMM_MAX_SEGMENTS; i++) {
        struct vidmm_segment *s = &a->seg[i];
        if (s->has_ra)
            vidmm_ra_fini(&s->ra);
        if (s->has_host_ap_ra)
            vidmm_ra_fini(&s->host_ap_ra);
        s->has_ra = s->has_host_ap_ra = 0;
    }
}

/* ---- the adapter lock (docs/THREADING.md) ---------------------------- */

static int init_adapter_lock(struct vidmm_adapter *a)
{
    pthread_mutexattr_t at;
    if (pthread_mutexattr_init(&at) != 0)
        return -1;
    int rc = pthread_mutexattr_settype(&at, PTHREAD_MUTEX_RECURSIVE);
    if (rc == 0)
        rc = pthread_mutex_init(&a->lock, &at);
    pthread_mutexattr_destroy(&at);
    return rc;
}


/* Open, phase 1: the create info on its own, before anything is made.
 * *max_processes is the caller's bound (0: the default). */
static vidmm_status check_create_info(const struct vidmm_adapter_create_info *ci, uint32_t *max_processes)
{
    /* Structure layouts: generations 1 to 3 (2 added max_processes, 3 the
     * 64 KB scratch windows' members of vidmm_paging_process_info).  The
     * library reads and writes a caller's generation and no member
     * beyond it. */
    if (ci->abi_version < 1 || ci->abi_version > VIDMM_ABI_VERSION) {
        (void)fault(ci, "create info abi_version %u: this library reads generation %u (set VIDMM_ABI_VERSION)",
                    ci->abi_version, VIDMM_ABI_VERSION);
        return VIDMM_E_INVALID_ARG;
    }
    if (!ci->ops || !ci->ops->query_adapter_info || !ci->ops->build_paging_buffer || !ci->ops->submit_command)
        return VIDMM_E_INVALID_ARG;
    if (ci->ops->abi_version < 1 || ci->ops->abi_version > VIDMM_ABI_VERSION) {
        (void)fault(ci, "driver ops abi_version %u: this library reads generation %u (set VIDMM_ABI_VERSION)",
                    ci->ops->abi_version, VIDMM_ABI_VERSION);
        return VIDMM_E_INVALID_ARG;
    }
    *max_processes = ci->abi_version >= 2 ? ci->max_processes : 0;
    if (*max_processes > VIDMM_MAX_PROCESSES_LIMIT) {
        (void)fault(ci, "max_processes %u is above VIDMM_MAX_PROCESSES_LIMIT (%u)", *max_processes,
                    VIDMM_MAX_PROCESSES_LIMIT);
        return VIDMM_E_INVALID_ARG;
    }
    if (ci->agp_aperture_size && (ci->agp_aperture_size % VIDMM_PAGE_4K || ci->agp_aperture_base % VIDMM_PAGE_4K))
        return VIDMM_E_INVALID_ARG;
    /* An aperture running past 2^64 would wrap to low addresses, where
     * the overlap test (which compares ends) cannot see it cover other
     * segments. */
    if (ci->agp_aperture_size && ci->agp_aperture_base + ci->agp_aperture_size < ci->agp_aperture_base) {
        (void)fault(ci, "AGP aperture [0x%llx, +0x%llx) runs past the end of the GPU physical address space",
                    (unsigned long long)ci->agp_aperture_base, (unsigned long long)ci->agp_aperture_size);
        return VIDMM_E_INVALID_ARG;
    }
    /* Segment 0 is counted in whole 4 KB pages: a smaller limit would
     * make it 0 bytes, and every allocation would fail for no visible
     * reason. */
    if (ci->system_memory_limit && ci->system_memory_limit < VIDMM_PAGE_4K) {
        (void)fault(ci, "system-memory limit %llu bytes is below one 4 KB page",
                    (unsigned long long)ci->system_memory_limit);
        return VIDMM_E_INVALID_ARG;
    }
    return VIDMM_OK;
}

/* Open, phase 2: the adapter object with its upcalls, its lock (taken)
 * and its empty handle tables. */
static vidmm_status adapter_new(const struct vidmm_adapter_create_info *ci, const struct vidmm_host_allocator *ha,
                                uint32_t max_processes, struct vidmm_adapter **out)
{
    struct vidmm_adapter *a = vidmm_hzalloc(ha, VIDMM_SITE_ADAPTER_OBJECT, sizeof(*a), _Alignof(struct vidmm_adapter));
    if (!a)
        return VIDMM_E_NO_HOST_MEMORY;
    /* The upcalls first: every layer may need them from here on. */
    a->up.make_room = vidmm_residency_make_room;
    a->up.root_moved = vidmm_process_rebind_root;
    a->up.recover = vidmm_tdr_recover;
    a->up.run_pending = vidmm_tdr_run_pending;
    a->up.destroy_now = vidmm_allocation_destroy_now;
    a->up.debug_check = debug_check;
    /* The adapter lock exists for the adapter's whole life (not lazily):
     * a thread may call in as soon as open returned. */
    if (init_adapter_lock(a) != 0) {
        vidmm_hfree(ha, a, sizeof(*a), _Alignof(struct vidmm_adapter));
        return VIDMM_E_NO_HOST_MEMORY;
    }
    /* Held while the open builds the state, as every internal function
     * expects (VIDMM_ASSERT_LOCKED); nobody else can reach the adapter
     * before open returns. */
    vidmm_adapter_lock(a);
    a->ha = ha;
    a->ops = *ci->ops;
    if (!a->ops.describe_allocation)
        a->ops.describe_allocation = default_describe;
    if (!a->ops.destroy_allocation)
        a->ops.destroy_allocation = default_destroy;
    a->driver = ci->driver;
    {
        uint64_t x = (uint64_t)(uintptr_t)a * 0x9E3779B97F4A7C15ull;
        a->handle_salt = (uint32_t)(x >> 48) & 0xFFFFu;
    }
    vidmm_objtab_init(&a->devices, VIDMM_HANDLE_TYPE_DEVICE, a->handle_salt);
    vidmm_objtab_init(&a->contexts, VIDMM_HANDLE_TYPE_CONTEXT, a->handle_salt);
    vidmm_objtab_init(&a->queues, VIDMM_HANDLE_TYPE_PAGING_QUEUE, a->handle_salt);
    vidmm_objtab_init(&a->processes, VIDMM_HANDLE_TYPE_PROCESS, a->handle_salt);
    vidmm_objtab_init(&a->allocations, VIDMM_HANDLE_TYPE_ALLOCATION, a->handle_salt);
    vidmm_objtab_set_object_generation(&a->allocations, (uint32_t)offsetof(struct vidmm_allocation, handle_gen));
    vidmm_objtab_init(&a->share_holders, VIDMM_HANDLE_TYPE_SHARED_ALLOCATION, a->handle_salt);
    /* Grows on demand (16, 32, ... slots) up to the caller's bound; its
     * own host allocation sites, so an OOM test fails its growth alone. */
    vidmm_objtab_set_limit(&a->processes, max_processes ? max_processes : VIDMM_DEFAULT_MAX_PROCESSES);
    a->caller_abi = ci->abi_version;
    vidmm_objtab_set_sites(&a->processes, VIDMM_SITE_PROCESS_TABLE_OBJECTS, VIDMM_SITE_PROCESS_TABLE_GENERATIONS,
                           VIDMM_SITE_PROCESS_TABLE_FREE_LINKS);
    *out = a;
    return VIDMM_OK;
}

/* Open, undone after phase 2: the object and its lock (nothing else was
 * built, or it was torn down already). */
static void adapter_free_unbuilt(struct vidmm_adapter *a)
{
    const struct vidmm_host_allocator *ha = a->ha;
    /* Not the entry boundary: the state is gone (a reset left pending
     * was run by the paging teardown), so the lock is just released. */
    vidmm_entry_set_depth(a, 0);
    pthread_mutex_unlock(&a->lock);
    pthread_mutex_destroy(&a->lock);
    vidmm_hfree(ha, a, sizeof(*a), _Alignof(struct vidmm_adapter));
}

/* Open, phase 3: the driver's caps; a driver that does not answer gets
 * WDDM 2.0 defaults. */
static vidmm_status query_driver_caps(struct vidmm_adapter *a, const struct vidmm_adapter_create_info *ci)
{
    vidmm_status st = vidmm_driver_query(a, VIDMM_QAI_DRIVERCAPS, NULL, 0, &a->caps, sizeof(a->caps));
    if (st == VIDMM_E_NOT_SUPPORTED) {
        memset(&a->caps, 0, sizeof(a->caps));
        a->caps.wddm_version = 0x2000;
    } else if (st < 0) {
        return fault(ci, "driver caps query failed: %s", vidmm_status_str(st));
    }
    if (a->caps.node_count > VIDMM_MAX_NODES)
        return fault(ci, "driver reports %u nodes; at most %u", a->caps.node_count, VIDMM_MAX_NODES);
    return VIDMM_OK;
}

/* Open, phase 4a: the two-call segment query (DXGKQAITYPE_QUERYSEGMENT):
 * first the count, then the descriptors into *desc (nb of them, the
 * caller frees them; NULL when the first call failed). */
static vidmm_status query_segments(struct vidmm_adapter *a, const struct vidmm_adapter_create_info *ci,
                                   struct vidmm_query_segment_out *qout, struct vidmm_segment_descriptor **desc,
                                   uint32_t *nb)
{
    struct vidmm_query_segment_in qin;
    memset(&qin, 0, sizeof(qin));
    qin.agp_aperture_base = ci->agp_aperture_base;
    qin.agp_aperture_size = ci->agp_aperture_size;
    memset(qout, 0, sizeof(*qout));
    vidmm_status st = vidmm_driver_query(a, VIDMM_QAI_QUERYSEGMENT, &qin, sizeof(qin), qout, sizeof(*qout));
    if (st < 0)
        return fault(ci, "segment query (first call) failed: %s", vidmm_status_str(st));
    uint32_t n = qout->nb_segment;
    if (n == 0)
        return fault(ci, "driver reports no segments (WDDM 2 needs at least the aperture segment)");
    if (n > VIDMM_MAX_SEGMENTS)
        return fault(ci, "driver reports %u segments; segment ids are 5 bits, at most %u", n, VIDMM_MAX_SEGMENTS);
    *desc = vidmm_hzalloc(a->ha, VIDMM_SITE_ADAPTER_SEGMENT_DESC, n * sizeof(**desc),
                          _Alignof(struct vidmm_segment_descriptor));
    if (!*desc)
        return VIDMM_E_NO_HOST_MEMORY;
    *nb = n;
    memset(qout, 0, sizeof(*qout));
    qout->nb_segment = n;
    qout->segment_descriptor = *desc;
    qout->segment_descriptor_stride = sizeof(**desc);
    st = vidmm_driver_query(a, VIDMM_QAI_QUERYSEGMENT, &qin, sizeof(qin), qout, sizeof(*qout));
    if (st < 0)
        return fault(ci, "segment query (second call) failed: %s", vidmm_status_str(st));
    if (qout->nb_segment != n)
        return fault(ci, "segment count changed between the two query calls (%u then %u)", n, qout->nb_segment);
    return VIDMM_OK;
}

/* Open, phase 4b: each descriptor on its own, then exactly one aperture
 * segment and at most one AGP-type one (their ids noted on a). */
static vidmm_status check_segment_kinds(struct vidmm_adapter *a, const struct vidmm_adapter_create_info *ci,
                                        const struct vidmm_segment_descriptor *desc, uint32_t nb)
{
    uint32_t apertures = 0, agps = 0;
    for (uint32_t i = 0; i < nb; i++) {
        uint32_t id = i + 1;
        vidmm_status st = check_descriptor(ci, id, &desc[i], &a->ops);
        if (st < 0)
            return st;
        if (desc[i].flags & VIDMM_SEGMENT_APERTURE) {
            if (apertures++)
                return fault(ci, "segment %u: more than one aperture segment (segment %u is one already); WDDM 2 allows exactly one",
                             id, a->aperture_id);
            a->aperture_id = id;
        }
        if (desc[i].flags & VIDMM_SEGMENT_AGP) {
            if (agps++)
                return fault(ci, "segment %u: more than one AGP-type aperture segment", id);
            a->agp_id = id;
        }
    }
    if (!apertures)
        return fault(ci, "no aperture segment: WDDM 2 requires exactly one");
    return VIDMM_OK;
}

/* Open, phase 4c: GPU physical ranges must not overlap (AGP sits at the
 * OS's aperture). */
static vidmm_status check_segment_overlaps(const struct vidmm_adapter_create_info *ci,
                                           const struct vidmm_segment_descriptor *desc, uint32_t nb)
{
    for (uint32_t i = 0; i < nb; i++) {
        uint64_t bi = (desc[i].flags & VIDMM_SEGMENT_AGP) ? ci->agp_aperture_base : desc[i].base_address;
        uint64_t si = (desc[i].flags & VIDMM_SEGMENT_AGP) ? ci->agp_aperture_size : desc[i].size;
        for (uint32_t j = i + 1; j < nb; j++) {
            uint64_t bj = (desc[j].flags & VIDMM_SEGMENT_AGP) ? ci->agp_aperture_base : desc[j].base_address;
            uint64_t sj = (desc[j].flags & VIDMM_SEGMENT_AGP) ? ci->agp_aperture_size : desc[j].size;
            if (bi < bj + sj && bj < bi + si)
                return fault(ci, "segment %u [0x%llx, 0x%llx) overlaps segment %u [0x%llx, 0x%llx)", j + 1,
                             (unsigned long long)bj, (unsigned long long)(bj + sj), i + 1,
                             (unsigned long long)bi, (unsigned long long)(bi + si));
        }
    }
    return VIDMM_OK;
}

/* Open, phase 4d: where and how large the paging buffers are. */
static vidmm_status check_paging_buffer(const struct vidmm_adapter_create_info *ci,
                                        const struct vidmm_segment_descriptor *desc, uint32_t nb,
                                        const struct vidmm_query_segment_out *qout)
{
    if (qout->paging_buffer_segment_id > nb)
        return fault(ci, "paging-buffer segment id %u is out of range (driver has %u segments)",
                     qout->paging_buffer_segment_id, nb);
    if (qout->paging_buffer_segment_id && !(desc[qout->paging_buffer_segment_id - 1].flags & VIDMM_SEGMENT_APERTURE))
        return fault(ci, "paging-buffer segment %u is not an aperture segment (it must be the aperture or 0)",
                     qout->paging_buffer_segment_id);
    if (qout->paging_buffer_size < VIDMM_PAGE_4K || qout->paging_buffer_size % VIDMM_PAGE_4K ||
        qout->paging_buffer_size > (64u << 20))
        return fault(ci, "paging-buffer size %u must be a multiple of 4 KB between 4 KB and 64 MB",
                     qout->paging_buffer_size);
    return VIDMM_OK;
}

/* Open, phase 4e: the segment table from the checked descriptors;
 * segment 0 is system memory. */
static void build_segment_table(struct vidmm_adapter *a, const struct vidmm_adapter_create_info *ci,
                                const struct vidmm_segment_descriptor *desc, uint32_t nb)
{
    a->segment_count = nb + 1;
    struct vidmm_segment *s0 = &a->seg[0];
    s0->id = 0;
    s0->kind = VIDMM_SEGMENT_KIND_SYSTEM;
    s0->page_size = VIDMM_PAGE_4K;
    s0->size = ci->system_memory_limit ? ci->system_memory_limit : default_system_limit();
    s0->size &= ~(uint64_t)(VIDMM_PAGE_4K - 1);
    s0->commit_limit = s0->size;
    s0->cpu_base = NULL;
    for (uint32_t i = 0; i < nb; i++) {
        struct vidmm_segment *s = &a->seg[i + 1];
        const struct vidmm_segment_descriptor *d = &desc[i];
        s->id = i + 1;
        s->flags = d->flags;
        if (d->flags & VIDMM_SEGMENT_AGP) {
            s->kind = VIDMM_SEGMENT_KIND_AGP;
            s->base_address = ci->agp_aperture_base;
            s->size = ci->agp_aperture_size;
            s->commit_limit = s->size;
            s->page_size = VIDMM_PAGE_4K;
        } else if (d->flags & VIDMM_SEGMENT_APERTURE) {
            s->kind = VIDMM_SEGMENT_KIND_APERTURE;
            s->base_address = d->base_address;
            s->size = d->size;
            s->commit_limit = d->commit_limit ? d->commit_limit : d->size;
            s->page_size = VIDMM_PAGE_4K;
        } else {
            s->kind = VIDMM_SEGMENT_KIND_MEMORY;
            s->base_address = d->base_address;
            s->size = d->size;
            s->commit_limit = d->size; /* memory segments: always the size */
            s->page_size = (d->flags & VIDMM_SEGMENT_USE_64KB_PAGES) ? VIDMM_PAGE_64K : VIDMM_PAGE_4K;
            if (d->flags & VIDMM_SEGMENT_CPU_VISIBLE)
                s->cpu_base = d->cpu_translated_address;
            if (d->flags & VIDMM_SEGMENT_SUPPORTS_CPU_HOST_APERTURE) {
                s->host_ap_base = d->cpu_host_aperture.cpu_address;
                s->host_ap_pages = d->cpu_host_aperture.size_in_pages;
            }
        }
    }
}

/* Open, phase 4: the segments, from the driver's answer to the table. */
static vidmm_status segments_from_driver(struct vidmm_adapter *a, const struct vidmm_adapter_create_info *ci,
                                         struct vidmm_query_segment_out *qout)
{
    struct vidmm_segment_descriptor *desc = NULL;
    uint32_t nb = 0;
    vidmm_status st = query_segments(a, ci, qout, &desc, &nb);
    if (st >= 0)
        st = check_segment_kinds(a, ci, desc, nb);
    if (st >= 0)
        st = check_segment_overlaps(ci, desc, nb);
    if (st >= 0)
        st = check_paging_buffer(ci, desc, nb, qout);
    if (st >= 0) {
        build_segment_table(a, ci, desc, nb);
        a->paging_segment_id = qout->paging_buffer_segment_id;
    }
    if (desc)
        vidmm_hfree(a->ha, desc, nb * sizeof(*desc), _Alignof(struct vidmm_segment_descriptor));
    return st;
}

/* Open, phase 5: the modules, lowest layer first; a failure undoes the
 * ones already made, in reverse. */
static vidmm_status init_modules(struct vidmm_adapter *a, const struct vidmm_adapter_create_info *ci,
                                 const struct vidmm_query_segment_out *qout)
{
    const struct vidmm_host_allocator *ha = a->ha;
    vidmm_status st = vidmm_gpummu_init(a, ci->error_message, ci->error_message_size);
    if (st < 0)
        return st;
    st = init_segment_allocators(a);
    if (st < 0)
        goto fail_segments;
    a->dummy_page = vidmm_hzalloc(ha, VIDMM_SITE_ADAPTER_DUMMY_PAGE, VIDMM_PAGE_4K, VIDMM_PAGE_4K);
    if (!a->dummy_page) {
        st = VIDMM_E_NO_HOST_MEMORY;
        goto fail_segments;
    }
    st = vidmm_fence_init(a);
    if (st < 0)
        goto fail_dummy;
    st = vidmm_paging_init(a, qout->paging_buffer_size, qout->paging_buffer_private_data_size);
    if (st == VIDMM_E_BAD_DRIVER_DESC)
        fault(ci, "paging buffers (%u bytes each) do not fit in segment %u's space or commit limits",
              qout->paging_buffer_size, a->paging_segment_id);
    if (st < 0)
        goto fail_fence;
    st = vidmm_residency_init(a);
    if (st < 0)
        goto fail_paging;
    /* After paging: building the paging process's tables emits updates. */
    st = vidmm_paging_process_init(a, ci->error_message, ci->error_message_size);
    if (st < 0)
        goto fail_res;
    st = vidmm_inflight_init(a);
    if (st < 0)
        goto fail_pp;
    return VIDMM_OK;

fail_pp:
    vidmm_paging_process_fini(a);
fail_res:
    vidmm_residency_fini(a);
fail_paging:
    vidmm_paging_fini(a);
fail_fence:
    vidmm_fence_fini(a);
fail_dummy:
    vidmm_hfree(ha, a->dummy_page, VIDMM_PAGE_4K, VIDMM_PAGE_4K);
fail_segments:
    release_segments(a);
    return st;
}

/* The phases above, in order: check the create info, make the adapter
 * object, ask the driver for its caps and segments, build the modules. */
static vidmm_status adapter_open(const struct vidmm_adapter_create_info *ci, struct vidmm_adapter **out)
{
    if (!ci || !out)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "%s is NULL", !ci ? "info" : "adapter_out");
    *out = NULL;
    if (ci->error_message && ci->error_message_size)
        ci->error_message[0] = '\0';
    uint32_t max_processes = 0;
    vidmm_status st = check_create_info(ci, &max_processes);
    if (st < 0)
        return st;
    const struct vidmm_host_allocator *ha = ci->host_allocator ? ci->host_allocator : vidmm_default_host_allocator();
    if (!ha->alloc || !ha->free)
        return VIDMM_E_INVALID_ARG;
    struct vidmm_adapter *a;
    st = adapter_new(ci, ha, max_processes, &a);
    if (st < 0)
        return st;
    struct vidmm_query_segment_out qout;
    st = query_driver_caps(a, ci);
    if (st >= 0)
        st = segments_from_driver(a, ci, &qout);
    if (st >= 0)
        st = init_modules(a, ci, &qout);
    if (st < 0) {
        adapter_free_unbuilt(a);
        return st;
    }
    *out = a;
    vidmm_adapter_unlock(a);
    return VIDMM_OK;
}

/* Not through VIDMM_ENTRY: there is no adapter yet; the open takes the
 * new adapter's lock itself while it builds the state. */
vidmm_status vidmm_adapter_open(const struct vidmm_adapter_create_info *ci, struct vidmm_adapter **out)
{
    vidmm_error_clear();
    vidmm_status st = adapter_open(ci, out);
    vidmm_error_finish("vidmm_adapter_open", st);
    return st;
}

void vidmm_adapter_close(struct vidmm_adapter *a)
{
    if (!a)
        return;
    /* One entry from here on: a hang found below is reset at the
     * recovery points between the steps (docs/RESET_AND_POWER.md), never
     * inside a step that holds an object it is tearing down. */
    vidmm_adapter_lock(a);
    /* What the caller left alive, while it is all still there to name. */
    vidmm_observe_report_leaks(a);
    /* Submitted work first: it uses allocations and contexts that go
     * below; deferred destructions are completed there. */
    vidmm_submit_fini(a);
    vidmm_inflight_fini(a);
    vidmm_tdr_run_pending(a);
    vidmm_process_destroy_all(a);
    vidmm_tdr_run_pending(a);
    uint32_t it = 0;
    for (struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;) {
        {
            vidmm_handle h = al->self;
            al->lock_count = 0;
            if (vidmm_allocation_host_ap_mapped(al))
                al->lock_count = 1; /* let unlock release the host aperture */
            if (al->lock_count)
                (void)vidmm_allocation_unlock(a, h);
            (void)vidmm_allocation_destroy(a, h);
            vidmm_tdr_run_pending(a);
        }
    }
    vidmm_quarantine_fini(a);
    vidmm_paging_process_fini(a);
    vidmm_tdr_run_pending(a);
    vidmm_paging_fini(a);
    vidmm_residency_fini(a);
    vidmm_handle_table_fini(a);
    vidmm_objtab_fini(&a->queues, a->ha);
    vidmm_objtab_fini(&a->devices, a->ha);
    vidmm_objtab_fini(&a->contexts, a->ha);
    vidmm_objtab_fini(&a->processes, a->ha);
    vidmm_objtab_fini(&a->share_holders, a->ha);   /* empty: every holder was a process's */
    vidmm_share_fini(a);
    release_segments(a);
    vidmm_hfree(a->ha, a->dummy_page, VIDMM_PAGE_4K, VIDMM_PAGE_4K);
    vidmm_fence_fini(a);
    vidmm_entry_set_depth(a, vidmm_entry_depth(a) - 1);   /* nothing can be pending: the ring is gone */
    pthread_mutex_unlock(&a->lock);
    pthread_mutex_destroy(&a->lock);
    vidmm_hfree(a->ha, a, sizeof(*a), _Alignof(struct vidmm_adapter));
}

static vidmm_status adapter_query_info(const struct vidmm_adapter *a, struct vidmm_adapter_info *out)
{
    if (!a || !out)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : "out is NULL");
    memset(out, 0, sizeof(*out));
    out->wddm_version = a->caps.wddm_version;
    out->memory_management_caps = a->caps.memory_management_caps;
    out->physical_adapter_flags = a->caps.physical_adapter_flags;
    out->segment_count = a->segment_count;
    out->aperture_segment_id = a->aperture_id;
    out->agp_segment_id = a->agp_id;
    out->paging_buffer_segment_id = a->paging_segment_id;
    out->aperture_segment_commit_limit = a->caps.aperture_segment_commit_limit;
    out->live_allocations = a->allocations.live;
    vidmm_paging_stats(a, out);
    out->last_fence_submitted = vidmm_fence_paging_last(a);
    out->last_fence_completed = vidmm_fence_paging_completed((struct vidmm_adapter *)a);   /* the lock is not state */
    return VIDMM_OK;
}

static vidmm_status segment_query(const struct vidmm_adapter *a, uint32_t id, struct vidmm_segment_info *out)
{
    if (!a || !out || id >= a->segment_count)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : !out ? "out is NULL"
                          : "segment %u: the adapter has segments 0 to %u", id, a->segment_count - 1);
    const struct vidmm_segment *s = &a->seg[id];
    memset(out, 0, sizeof(*out));
    out->id = id;
    out->kind = s->kind;
    out->flags = s->flags;
    out->page_size = s->page_size;
    out->base_address = s->base_address;
    out->size = s->size;
    out->commit_limit = s->commit_limit;
    out->committed = s->committed;
    out->allocations = s->allocations;
    if (s->has_ra) {
        out->free_bytes = s->ra.free_bytes;
        out->largest_free = vidmm_ra_largest_free(&s->ra);
    } else {
        out->free_bytes = s->commit_limit - s->committed;
        out->largest_free = out->free_bytes;
    }
    out->cpu_visible = s->kind == VIDMM_SEGMENT_KIND_SYSTEM || s->cpu_base != NULL;
    out->cpu_host_aperture = s->host_ap_pages != 0;
    out->host_aperture_pages = s->host_ap_pages;
    out->host_aperture_free = s->has_host_ap_ra ? (uint32_t)(s->host_ap_ra.free_bytes / s->page_size) : 0;
    return VIDMM_OK;
}

/* ---- public entries: the adapter lock around each body (docs/THREADING.md) ---- */

vidmm_status vidmm_adapter_query_info(const struct vidmm_adapter *a, struct vidmm_adapter_info *out)
{
    VIDMM_ENTRY(a, adapter_query_info(a, out));
}

vidmm_status vidmm_segment_query(const struct vidmm_adapter *a, uint32_t id, struct vidmm_segment_info *out)
{
    VIDMM_ENTRY(a, segment_query(a, id, out));
}
