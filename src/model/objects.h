/*
 * objects.h - the object model every layer above the leaf allocators
 * shares: adapter, allocation, process (internal, never installed).
 *
 * The adapter owns its segments, its handle tables and every module's
 * state; there is no global state.  A module's members of these objects
 * are sub-structs declared in its fields header (src/<module>/
 * <module>_fields.h, e.g. an allocation's `res`) and named by its files
 * only (tests/layering.sh); what stays here is read by layers on both
 * sides of its writer (docs/DECISIONS.md D86 lists it).
 */
#ifndef VIDMM_MODEL_OBJECTS_H
#define VIDMM_MODEL_OBJECTS_H

#include "vidmm/allocation.h"
#include "vidmm/gpummu.h"
#include "vidmm/process.h"
#include "vidmm/device.h"
#include "vidmm/policy.h"
#include "vidmm/residency.h"
#include "vidmm/driver.h"
#include "vidmm/segment.h"
#include "vidmm/tdr.h"
#include "vidmm/power.h"
#include "vidmm/observe.h"
#include "vidmm/share.h"

#include "core/alloc_sites.h" /* vidmm_halloc, vidmm_hzalloc, vidmm_hfree, allocation sites */
#include "core/error.h"       /* vidmm_fail: a failing check records why */
#include "core/objtab.h"
#include "seg/page_pool.h"
#include "seg/range_alloc.h"
#include "seg/ring.h"
#include "seg/segment.h"
#include "va/va_space.h"
#include "placement/placement_fields.h"
#include "residency/residency_fields.h"
#include "allocation/allocation_fields.h"
#include "device/device_fields.h"
#include "handle/handle_fields.h"
#include "observe/observe_fields.h"
#include "process/process_fields.h"
#include "mmu/mmu_fields.h"
#include "model/entry_state.h"

#include <pthread.h>
#include <time.h>
#include <stdint.h>

#define VIDMM_PAGE_4K 4096u
#define VIDMM_PAGE_64K 65536u

/* ---- allocations ---------------------------------------------------- */

struct vidmm_allocation {
    /* Hot in handle lookups and make-resident: the first cache line (the
     * object is 64-byte aligned, so make-resident of an already resident,
     * already referenced allocation reads this line and its reference
     * record only). */
    _Alignas(64) uint16_t handle_gen; /* its handle's generation (core/objtab.h: lookups read it here) */
    uint16_t shared;                /* share != NULL (here: handle lookups read this line only) */
    uint32_t live;                  /* named by a handle (deferred destructions included) */
    int resident;                   /* has a GPU placement (else pl is its system backing) */
    struct vidmm_alloc_residency res; /* residency/residency_fields.h; its hot members come first */
    /* Command submission (submit/submit.c): in-flight submissions that
     * reference it; destroyed while busy = a zombie awaiting their end.
     * Beside res's last member: a submission writes both. */
    uint32_t busy;
    int zombie;
    struct vidmm_allocation *zombie_next;
    struct vidmm_allocation_info info;  /* as described by the driver (private data pointers cleared) */
    uint64_t size;                  /* placed size: requested rounded to the largest page size allowed */
    uint64_t alignment;
    enum vidmm_layout layout;       /* in memory segments */
    struct vidmm_placement pl;
    uint32_t lock_count;
    struct vidmm_alloc_cpu_map cpu_map; /* allocation/allocation_fields.h */
    int displayed;
    int display_mapped;             /* system pages mapped into the aperture only for scan-out */
    uint32_t vidpn_source;
    uint64_t moves;
    struct vidmm_allocation *pool_next; /* free-object list link while !live (handle/handle.c) */
    vidmm_handle self;              /* its own handle: the object id in VA spaces */
    struct vidmm_alloc_va_map va_map; /* process/process_fields.h: the processes mapping it */
    uint64_t paging_fence;          /* paging fence of the last operation writing its content (tdr/tdr.c) */
    uint32_t reset_lost;            /* adapter resets that lost its content */
    /* Isolation (D38): the process it was created for through a device,
     * whose calls alone may name it; 0 = adapter-wide (create/create2). */
    vidmm_handle private_process;
    /* Sharing (allocation/share.c, docs/SHARING.md): non-NULL for an
     * allocation created with VIDMM_CREATE_SHARED; its holders, token. */
    struct vidmm_share *share;
    /* On its creator's list of private allocations (private_process set,
     * until destroyed or the creator is gone): a process's teardown walks
     * its own allocations, not every allocation. */
    struct vidmm_allocation *private_prev, *private_next;
    struct vidmm_alloc_owned_link owned; /* residency/residency_fields.h: its owner's list */
    /* Observability (observe/): the caller's name (host memory of
     * name_size bytes, released with the object) and opaque pointer. */
    char *name;
    uint32_t name_size;
    void *user_data;
};

/* ---- processes ------------------------------------------------------ */

struct vidmm_device;
struct vidmm_residency_mgr;
struct vidmm_paging;
struct vidmm_paging_process;
struct vidmm_fence_state;
struct vidmm_submit_state;

struct vidmm_process {
    struct vidmm_adapter *adapter;
    vidmm_handle self;
    /* The adapter's list of live processes, in creation order (linked
     * and unlinked with the table slot, under the fence lock): walks over
     * every process cost O(live processes), whatever the table's size. */
    struct vidmm_process *live_prev, *live_next;
    /* Private allocations it created (private_process; destroyed ones
     * waiting for their GPU work included), listed through their
     * private_* links and counted; the allocations it owns for residency
     * are listed in res (residency/residency_fields.h). */
    struct vidmm_allocation *private_first;
    uint64_t private_allocations;
    struct vidmm_process_sharing sharing; /* allocation/allocation_fields.h */
    struct vidmm_process_va_spares va_spares; /* process/process_fields.h */
    struct vidmm_device *devices;   /* list through vidmm_device.next */
    uint32_t device_count;
    struct vidmm_va_space vs;
    struct vidmm_process_mmu mmu;   /* mmu/mmu_fields.h: page tables, PTE buffer, flush span */
    int iommu;                      /* IoMmu: GPU VA = the CPU's address of the system pages */
    int no_va;                      /* neither model: no GPU VA (physical-mode contexts only) */
    struct vidmm_process_fault fault; /* process/process_fields.h: error state (fence lock) */
    struct vidmm_process_residency res; /* residency/residency_fields.h */
};

/* ---- adapter -------------------------------------------------------- */

#include "model/upcalls.h"

struct vidmm_adapter {
    /* The adapter lock (recursive; docs/THREADING.md): every public entry
     * that reads or changes adapter state holds it, so the state below is
     * touched by one thread at a time.  Not held by the driver callbacks
     * (they take the fence lock only) nor by CPU fence waits while asleep.
     * Lock order: adapter lock -> the fence lock -> the driver's own locks. */
    pthread_mutex_t lock;
    struct vidmm_entry_state entry; /* model/entry_state.h: the entry mechanism's (model/entry.c) */
    struct vidmm_upcalls up;
    const struct vidmm_host_allocator *ha;
    struct vidmm_driver_ops ops;    /* copy, with defaults filled in */
    void *driver;
    struct vidmm_driver_caps caps;
    uint32_t segment_count;         /* including segment 0 */
    struct vidmm_segment seg[VIDMM_MAX_SEGMENTS + 1];
    uint32_t aperture_id;
    uint32_t agp_id;
    uint32_t paging_segment_id;
    uint64_t aperture_mapped_bytes; /* against caps.aperture_segment_commit_limit */
    int has_gpummu;                 /* GpuMmu model: geometry below is valid */
    struct vidmm_gpummu_info gpummu;
    /* Non-NULL: content moves are TRANSFER_VIRTUAL / FILL_VIRTUAL in the
     * system paging process (D27); NULL: physical TRANSFER / FILL. */
    struct vidmm_paging_process *pp;   /* opaque: src/paging_process/state.h */
    /* Allocations: handles from the typed handle table (core/objtab.h);
     * objects from 64-object chunks (handle/handle.c). */
    struct vidmm_objtab allocations;
    struct vidmm_alloc_pool alloc_pool; /* handle/handle_fields.h */
    uint32_t handle_salt;           /* 16 bits, tells this adapter's handles apart */
    uint32_t caller_abi;            /* the caller's VIDMM_ABI_VERSION: which output members it has */
    vidmm_handle displayed[VIDMM_MAX_VIDPN_SOURCES];
    /* VIDMM_HANDLE_TYPE_PROCESS: grows on demand up to the bound of the
     * create info (vidmm/process.h); add/remove under the fence lock (a
     * fault report looks one up).  The live ones are also listed, first
     * to last (vidmm_process.live_next), and processes_with_devices
     * counts those with at least one device (the fair budget share). */
    struct vidmm_objtab processes;
    struct vidmm_process *process_first, *process_last;
    uint32_t processes_with_devices;
    struct vidmm_objtab devices;    /* VIDMM_HANDLE_TYPE_DEVICE */
    struct vidmm_objtab contexts;   /* VIDMM_HANDLE_TYPE_CONTEXT; add/remove/lookup under the fence lock */
    struct vidmm_objtab queues;     /* VIDMM_HANDLE_TYPE_PAGING_QUEUE */
    /* The openers' handles of shared allocations
     * (VIDMM_HANDLE_TYPE_SHARED_ALLOCATION -> struct vidmm_share_holder). */
    struct vidmm_objtab share_holders;
    struct vidmm_share_table sharing; /* allocation/allocation_fields.h */
    /* Residency: eviction policy, clocks, budgets' totals, statistics
     * (opaque: src/residency/res_state.h). */
    struct vidmm_residency_mgr *res;
    /* Paging buffers: the ring, its aperture mapping, statistics
     * (opaque: src/paging/paging_state.h). */
    struct vidmm_paging *paging;
    /* The fence lock: what the driver's callbacks and the lock-free
     * waits touch - fence values (paging, contexts, paging queues), the
     * hang detector's counters, device and process error states, and the
     * context and process lookups a callback makes.  fence_cond is
     * broadcast whenever a fence moves.  A function named *_locked
     * expects the caller to hold it (and only that: every internal
     * function may assume the adapter lock).  Created with the fence
     * state (fence/fence.c). */
    pthread_mutex_t fence_lock;
    pthread_cond_t fence_cond;
    struct vidmm_submit_state *sub;  /* command submission (submit/submit.c) */
    /* Every engine's fences, the hang detector's samples, the reset
     * records (opaque: src/fence/fence_state.h). */
    struct vidmm_fence_state *fence;
    uint32_t power_state;            /* VIDMM_POWER_* (power/power.c) */
    struct vidmm_power_stats power_stats;
    void *dummy_page;               /* what unmapped aperture pages point at */
    struct vidmm_quarantine_list quarantine; /* placement/placement_fields.h */
    struct vidmm_debug_hook debug;  /* observe/observe_fields.h */
};

#include "model/entry.h"

/* One DxgkDdiQueryAdapterInfo call. */
static inline vidmm_status vidmm_driver_query(struct vidmm_adapter *a, enum vidmm_query_type type, const void *in, size_t in_size,
                                void *out, size_t out_size)
{
    struct vidmm_query_adapter_info_args q;
    q.type = type;
    q.input = in;
    q.input_size = in_size;
    q.output = out;
    q.output_size = out_size;
    return a->ops.query_adapter_info(a->driver, &q);
}

/* Entries that hand work to the GPU (paging buffers, root bindings,
 * command buffers) answer VIDMM_E_STATE while the adapter is in standby
 * or hibernate and change nothing (vidmm/power.h). */
static inline int vidmm_powered_down(const struct vidmm_adapter *a)
{
    return a->power_state != VIDMM_POWER_D0;
}

/* Is segment id a memory segment (not 0, the aperture or AGP)? */
static inline int vidmm_seg_is_memory(const struct vidmm_adapter *a, uint32_t id)
{
    return id && a->seg[id].kind == VIDMM_SEGMENT_KIND_MEMORY;
}

#endif
