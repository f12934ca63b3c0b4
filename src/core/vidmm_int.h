/*
 * vidmm_int.h - the adapter, segment and allocation objects shared by the
 * core modules (internal, never installed).
 *
 * Ownership: the adapter owns its segments (a fixed array, id = index),
 * its handle table of allocations, and the paging state.  Everything is
 * reached from the adapter; there is no global state.
 */
#ifndef VIDMM_INT_H
#define VIDMM_INT_H

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

#include "core/objtab.h"
#include "seg/evict_scan.h"
#include "seg/page_pool.h"
#include "seg/range_alloc.h"
#include "paging/ring.h"
#include "va/va_space.h"

#include <pthread.h>
#include <time.h>
#include <stdint.h>

#define VIDMM_PAGE_4K 4096u
#define VIDMM_PAGE_64K 65536u

/* ---- host memory ---------------------------------------------------- */

/* vidmm_halloc, vidmm_hzalloc, vidmm_hfree and the allocation site ids. */
#include "core/alloc_sites.h"

/* ---- segments ------------------------------------------------------- */

struct vidmm_segment {
    uint32_t id;
    enum vidmm_segment_kind kind;
    uint32_t flags;
    uint32_t page_size;
    uint64_t base_address;
    uint64_t size;
    uint64_t commit_limit;
    uint64_t committed;
    uint64_t allocations;
    int has_ra;                     /* memory, aperture and AGP segments hand out address space */
    struct vidmm_range_alloc ra;
    void *cpu_base;                 /* CPU-visible memory segment */
    /* CPU host aperture: a window of host_ap_pages segment pages. */
    unsigned char *host_ap_base;
    uint32_t host_ap_pages;
    int has_host_ap_ra;
    struct vidmm_range_alloc host_ap_ra; /* in units of segment pages (chunk = page_size) */
};

/* ---- allocations ---------------------------------------------------- */

/* Where an allocation's bytes are. */
struct vidmm_placement {
    uint32_t segment_id;            /* memory segment, the aperture/AGP (mapped system pages), or 0 */
    struct vidmm_page_set pages;    /* memory segment: extents (1 when contiguous) */
    void *sys;                      /* system pages (segment 0, aperture, AGP) */
    struct vidmm_mdl mdl;
    int ap_mapped;                  /* sys pages mapped into aperture/AGP segment ap_segment */
    uint32_t ap_segment;
    uint32_t ap_node;
    uint64_t ap_offset;
};

struct vidmm_allocation {
    /* Hot in handle lookups and make-resident: the first cache line (the
     * object is 64-byte aligned, so make-resident of an already resident,
     * already referenced allocation reads this line and its reference
     * record only). */
    _Alignas(64) uint32_t generation;
    uint32_t live;
    int resident;                   /* has a GPU placement (else pl is its system backing) */
    int in_policy;                  /* handed to the eviction policy (resident in a memory segment) */
    uint64_t pin_epoch;             /* == residency epoch: part of the request being served */
    struct vidmm_res_ref *refs;     /* per-device references (residency lists) */
    struct vidmm_res_ref *scratch_ref; /* make-resident: this request's reference record */
    uint32_t ref_total;
    int offered;
    uint64_t use_clock;             /* reference clock of the last use; pe.last_use follows it into the policy */
    uint32_t owned;                 /* pe.process is set (kept here so the hot path need not read pe) */
    struct vidmm_policy_entry pe;   /* priority, owner, clock; policy-private links */
    struct vidmm_allocation_info info;  /* as described by the driver (private data pointers cleared) */
    uint64_t size;                  /* placed size: requested rounded to the largest page size allowed */
    uint64_t alignment;
    enum vidmm_layout layout;       /* in memory segments */
    struct vidmm_placement pl;
    uint32_t lock_count;
    void *lock_ptr;
    int host_ap_mapped;
    uint32_t host_ap_node;
    uint64_t host_ap_first;         /* first host aperture page */
    uint64_t host_ap_count;
    uint32_t *host_ap_list;         /* aperture page indices, kept for the unmap at unlock */
    int displayed;
    int display_mapped;             /* system pages mapped into the aperture only for scan-out */
    uint32_t vidpn_source;
    uint64_t moves;
    uint32_t next_free;             /* free-slot list link while !live */
    uint32_t retired;               /* generation exhausted: the slot is never reused */
    vidmm_handle self;              /* its own handle: the object id in VA spaces */
    /* Residency (residency/residency.c); the hot fields are at the top. */
    struct vidmm_placement backing; /* system copy kept while resident in memory (clean eviction) */
    int backing_valid;              /* backing holds the current content (not written since) */
    uint32_t offer_priority;
    int content_lost;               /* discarded while offered: reads as zero */
    int offer_discarded;            /* discarded since the last offer: reclaim says DISCARDED */
    uint64_t paging_fence;          /* paging fence of the last operation writing its content (tdr/tdr.c) */
    uint32_t reset_lost;            /* adapter resets that lost its content */
    int gpu_dirty;                  /* on a virtual submission's list since its system copy was made */
    uint64_t evictions, restores;
    /* Command submission (submit/submit.c): in-flight submissions that
     * reference it; destroyed while busy = a zombie awaiting their end. */
    uint32_t busy;
    int zombie;
    struct vidmm_allocation *zombie_next;
    /* Isolation (D38): the process it was created for through a device,
     * whose calls alone may name it; 0 = adapter-wide (create/create2). */
    vidmm_handle private_process;
    /* Make-resident undo (residency/api.c): set while a call's undo
     * epoch is open; undo_kind 1 = a victim it evicted from undo_seg,
     * 2 = a list member it made resident (undo_lost: content was lost). */
    uint64_t undo_epoch;
    uint32_t undo_seg;
    uint8_t undo_kind, undo_top, undo_lost, undo_fresh;
    uint8_t undo_extents;           /* victim: its extents (at most 2) kept to go back exactly; 0: not kept */
    enum vidmm_layout undo_layout;
    uint64_t undo_off[2], undo_len[2];
};

/* One device's references to one allocation (an entry of the device's
 * residency requirement list). */
struct vidmm_res_ref {
    struct vidmm_allocation *al;
    struct vidmm_device *dev;
    uint32_t count;
    uint32_t pending;               /* evict validation scratch */
    struct vidmm_res_ref *al_next;  /* the allocation's references */
    struct vidmm_res_ref *dev_prev, *dev_next; /* the device's list */
};

/* ---- GpuMmu page tables and processes ------------------------------- */

/* One page table of a process (an implicit allocation with no handle). */
struct vidmm_page_table {
    uint32_t level;                 /* 0 = leaf */
    uint32_t segment_id;            /* where it lives (0 = system memory) */
    uint64_t offset;                /* segment offset, or for segment 0 the host address */
    uint64_t size;
    uint32_t ra_node;               /* in the segment's range allocator (segment != 0) */
    uint32_t entries;               /* 2^index bits of its level (16x fewer in a 64 KB leaf) */
    int is64k;                      /* leaf holding 64 KB entries */
    uint64_t epoch;                 /* the prepare that created it (see vidmm_pt_rollback) */
    void *host;                     /* segment 0: the host block */
    struct vidmm_page_table **child; /* non-leaf: one slot per entry, NULL = invalid entry */
    uint32_t live_children;
};

struct vidmm_device;

struct vidmm_process {
    struct vidmm_adapter *adapter;
    vidmm_handle self;
    struct vidmm_device *devices;   /* list through vidmm_device.next */
    uint32_t device_count;
    struct vidmm_va_space vs;
    struct vidmm_page_table *root;  /* NULL in IoMmu mode */
    int iommu;                      /* IoMmu: GPU VA = the CPU's address of the system pages */
    int no_va;                      /* neither model: no GPU VA (physical-mode contexts only) */
    int paging_process;             /* the system paging process: tables in the paging-process segments */
    struct vidmm_pte *pte_buf;      /* one leaf table's worth of entries: writes never allocate */
    uint32_t pte_buf_len;
    uint64_t epoch;                 /* bumped by every prepare; tables remember theirs */
    uint64_t flush_lo, flush_hi;    /* VA span whose PTEs changed since the last FLUSH_TLB */
    uint64_t root_grows;            /* times a resizable root grew */
    /* Device error state after a GPU page fault (guarded by paging.lock:
     * the report may come from a driver thread). */
    int faulted;
    uint32_t fault_flags;
    uint64_t fault_va;
    uint64_t faults;
    /* Residency accounting: resident bytes it owns per segment, demand
     * (bytes on its lists) and budgets per segment group. */
    uint64_t seg_usage[VIDMM_MAX_SEGMENTS + 1];
    uint64_t demand[2];
    uint64_t budget_override[2];
    uint64_t reservation[2];
    /* "Over budget" cached for one eviction round (res_over_epoch). */
    uint64_t over_epoch[2];
    int over_val[2];
    /* For the rules checker (adapter/rules.c), per segment group:
     * whether its last successful make-resident that left something
     * resident in the group said CantTrimFurther (then its usage may
     * exceed its budget), and its budget right after its last successful
     * make-resident (a budget that dropped since - another process's
     * demand, the OS - owes it a trim notification, not a refusal). */
    int last_mr_cant_trim[2];
    uint64_t budget_after_mr[2];
    uint64_t usage_after_mr[2];
};

/* The system paging process of a GpuMmu adapter whose driver takes the
 * virtual paging ops (paging/paging_process.c).  Internal: it is not in
 * procs[] and has no handle a caller could name; only its page tables
 * are used (no VA-space bookkeeping: its layout is fixed). */
struct vidmm_paging_process {
    struct vidmm_process proc;      /* root, tables, PTE buffer; proc.self is its fault token */
    uint64_t scratch_va;            /* source window [scratch_va, +window), destination window right after */
    uint64_t window;                /* bytes of each window: the most one virtual op moves */
    uint64_t mapped;                /* bytes of each window holding valid entries (0 between moves) */
    int unmap_owed;                 /* a driver failure stopped the last unmap: the next move retries it */
    uint64_t moves, chunks;         /* statistics */
    uint64_t faults;                /* page faults reported for it (guarded by paging.lock) */
    uint64_t fault_va;
};

/* ---- devices and contexts (device/device.c) ------------------------- */

struct vidmm_context {
    struct vidmm_device *device;
    vidmm_handle self;
    struct vidmm_context *prev, *next;  /* in the device's list */
    uint32_t node, mode;
    int root_bound;                 /* set_root_page_table told the driver */
    /* Monitored fence (submit/submit.c): submitted under the submission
     * lock, completed under paging.lock (the driver reports it). */
    uint64_t fence_submitted;
    uint64_t fence_completed;
    struct vidmm_patch_cache *patch_cache;  /* physical mode: recently patched buffers */
};

struct vidmm_device {
    struct vidmm_process *process;
    vidmm_handle self;
    struct vidmm_device *prev, *next;   /* in the process's list */
    struct vidmm_context *contexts;
    uint32_t context_count;
    /* Error state (guarded by paging.lock: faults come from driver threads). */
    int lost;
    uint32_t fault_flags;
    uint64_t fault_va;
    uint64_t faults;
    uint32_t reset_status;          /* VIDMM_RESET_* (guarded by paging.lock) */
    uint64_t resets;
    /* Residency. */
    struct vidmm_res_ref *refs;     /* its residency requirement list */
    uint64_t ref_count;
    struct vidmm_paging_queue *queues;
    vidmm_trim_callback trim_cb;
    void *trim_ctx;
    uint64_t trim_round[2];         /* notified in this walk (budget.c) */
};

/* A device's paging queue and its monitored fence (guarded by paging.lock). */
struct vidmm_paging_queue {
    struct vidmm_device *device;
    vidmm_handle self;
    int priority;
    uint64_t submitted;             /* last value handed out */
    uint64_t completed;             /* monitored fence value */
    /* Values handed out whose paging work is still running: value i is
     * done once the adapter's paging fence reaches pend_fence[i]. */
#define VIDMM_QUEUE_PENDING 16u
    uint64_t pend_value[VIDMM_QUEUE_PENDING];
    uint64_t pend_fence[VIDMM_QUEUE_PENDING];
    uint32_t pend_first, pend_count;
    struct vidmm_paging_queue *next;
};

/* ---- paging --------------------------------------------------------- */

#define VIDMM_PAGING_SLOTS 8u  /* ring size in paging buffers */

struct vidmm_paging {
    unsigned char *area;            /* the ring's memory: VIDMM_PAGING_SLOTS paging buffers */
    size_t area_size;
    uint32_t buffer_size;           /* PagingBufferSize */
    struct vidmm_ring ring;         /* submitted buffers, trimmed to what they hold, in fence order */
    uint64_t fence_fifo[VIDMM_RING_INLINE_RECS]; /* fence of each live ring record, oldest first */
    uint32_t fence_first;
    int have_buffer;                /* a buffer is reserved and being written */
    unsigned char *start;           /* start of the buffer being written */
    unsigned char *cursor;          /* write position in it */
    uint32_t left;                  /* bytes left in it */
    uint64_t sequence;              /* buffers taken so far: picks the private-data slot */
    void *private_data;             /* VIDMM_RING_INLINE_RECS slots of private_data_size */
    uint32_t private_data_size;
    int ap_mapped;                  /* area mapped into the paging-buffer aperture */
    uint32_t ap_node;
    uint64_t next_fence;
    uint64_t completed_fence;       /* guarded by lock */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int sync_ok;
};

/* Is segment id a memory segment (not 0, the aperture or AGP)? */
static inline int vidmm_seg_is_memory(const struct vidmm_adapter *a, uint32_t id);

/* ---- hang detection (tdr/tdr.c) --------------------------------------- */

/* Progress of every engine, for hang detection.  Submission and the
 * driver's callbacks only move counters (no clock on those paths); the
 * detector samples them and remembers when it last saw each engine idle
 * or progressing.  Guarded by paging.lock, except what the comments say. */
struct vidmm_tdr {
    uint64_t timeout_ns;            /* 0 = detection off */
    uint64_t node_submitted[VIDMM_MAX_NODES];  /* context buffers handed to each node */
    uint64_t node_completed[VIDMM_MAX_NODES];
    uint64_t node_seen[VIDMM_MAX_NODES];       /* node_completed at the last sample that saw progress */
    uint64_t node_seen_ns[VIDMM_MAX_NODES];    /* CLOCK_MONOTONIC of that sample */
    uint64_t paging_submitted;      /* last paging fence handed to the driver */
    uint64_t paging_seen;           /* paging completed fence at the last sample that saw progress */
    uint64_t paging_seen_ns;
    /* Was the engine busy at the last sample?  Work found busy right
     * after an idle sample starts its timeout at that sample, not at the
     * last progress seen before the idle gap. */
    int node_busy[VIDMM_MAX_NODES];
    int paging_busy;
    uint64_t generation;            /* adapter resets so far: content moves check it */
    int paging_fault;               /* a paging buffer faulted: reset at the next wait or poll */
    uint64_t paging_fault_before;   /* completed paging fence when it was reported */
    int in_recovery;
    /* An adapter reset found below a public entry waits for the
     * outermost entry to unwind (docs/RESET_AND_POWER.md "Where a reset
     * runs"): pending_owner, the thread holding the adapter lock, sees
     * its waits fail with VIDMM_E_TIMEOUT meanwhile. */
    int reset_pending;
    int pending_node;               /* -1: the paging engine */
    pthread_t pending_owner;
    struct vidmm_tdr_stats stats;
};

/* ---- adapter -------------------------------------------------------- */

struct vidmm_adapter {
    /* The adapter lock (recursive; docs/THREADING.md): every public entry
     * that reads or changes adapter state holds it, so the state below is
     * touched by one thread at a time.  Not held by the driver callbacks
     * (they take paging.lock only) nor by CPU fence waits while asleep.
     * Lock order: adapter lock -> paging.lock -> the driver's own locks. */
    pthread_mutex_t lock;
    uint32_t lock_depth;            /* nesting of the adapter lock (its holder reads and writes it) */
    uint64_t trim_round;            /* trim notification walks so far (budget.c) */
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
    struct vidmm_paging_process *pp;
    /* handle table */
    struct vidmm_allocation **slots;
    uint32_t slot_cap;
    uint32_t slot_used;             /* slots ever handed out */
    uint32_t free_head;             /* UINT32_MAX = none */
    uint32_t handle_salt;           /* 16 bits, tells this adapter's handles apart */
    uint64_t live;
    uint64_t slots_retired;
    vidmm_handle displayed[VIDMM_MAX_VIDPN_SOURCES];
    struct vidmm_process *procs[VIDMM_MAX_PROCESSES];
    uint16_t proc_gen[VIDMM_MAX_PROCESSES];
    uint32_t proc_live;
    struct vidmm_objtab devices;    /* VIDMM_HANDLE_TYPE_DEVICE */
    struct vidmm_objtab contexts;   /* VIDMM_HANDLE_TYPE_CONTEXT; add/remove/lookup under paging.lock */
    struct vidmm_objtab queues;     /* VIDMM_HANDLE_TYPE_PAGING_QUEUE */
    /* Residency (residency/residency.c). */
    const struct vidmm_eviction_policy *policy;
    void *policy_state;
    uint64_t res_clock;             /* reference clock */
    uint64_t res_epoch;             /* request being served (pins) */
    uint64_t res_undo_epoch;        /* != 0: a make-resident records what it changes */
    uint64_t res_over_epoch;        /* eviction round: processes' over-budget cache */
    uint64_t demand_total[2];       /* sum of the processes' demand per group (budgets read it) */
    uint32_t trim_depth;            /* a walk is running (callbacks may call back in) */
    struct vidmm_residency_stats res_stats;
    struct vidmm_evict_scan evict_scan; /* planner for contiguous requests */
    struct vidmm_paging paging;
    struct vidmm_submit_state *sub;  /* command submission (submit/submit.c) */
    struct vidmm_tdr tdr;            /* hang detection and recovery (tdr/tdr.c) */
    uint32_t power_state;            /* VIDMM_POWER_* (power/power.c) */
    struct vidmm_power_stats power_stats;
    void *dummy_page;               /* what unmapped aperture pages point at */
    /* statistics */
    uint64_t paging_buffers;
    uint64_t paging_restarts;
    uint64_t paging_ops[17];
    uint64_t paging_bytes[17];
};

/* adapter.c: take / release the adapter lock (recursive: an entry may
 * call another entry, or a user callback run under it may call back in on
 * the same thread).  const: the lock is not part of the adapter's logical
 * state, and read-only entries take it too. */
void vidmm_adapter_lock(const struct vidmm_adapter *a);
void vidmm_adapter_unlock(const struct vidmm_adapter *a);

#define VIDMM_HANDLE_TYPE_ALLOCATION 1u
#define VIDMM_HANDLE_TYPE_PROCESS 2u
#define VIDMM_HANDLE_TYPE_DEVICE 3u
#define VIDMM_HANDLE_TYPE_CONTEXT 4u
#define VIDMM_HANDLE_TYPE_PAGING_QUEUE 5u
#define VIDMM_HANDLE_TYPE_PAGING_PROCESS 6u   /* only as the fault token of the system paging process */

/* mmu/page_table.c */
vidmm_status vidmm_pt_create_root(struct vidmm_adapter *a, struct vidmm_process *p);
void vidmm_pt_destroy(struct vidmm_adapter *a, struct vidmm_page_table *pt);
/* Make sure every table covering [va, va+size) exists (may allocate).
 * New leaves hold 64 KB entries when want64k; existing 64 KB leaves are
 * switched to 4 KB entries (one way) when !want64k. */
vidmm_status vidmm_pt_ensure(struct vidmm_adapter *a, struct vidmm_process *p, uint64_t va, uint64_t size,
                             int want64k);
/* Undo the tables created since the last vidmm_pt_begin: the change they
 * were prepared for was refused, so nothing must remain of it. */
void vidmm_pt_begin(struct vidmm_process *p);
vidmm_status vidmm_pt_rollback(struct vidmm_adapter *a, struct vidmm_process *p);
/* Switch the existing 64 KB leaves of [va, va+size) to 4 KB entries. */
vidmm_status vidmm_pt_demote(struct vidmm_adapter *a, struct vidmm_process *p, uint64_t va, uint64_t size);
/* Can [va, va+size) map bytes [off, off+size) of al, placed as pl, with
 * 64 KB entries? */
int vidmm_pt_can_use_64k(const struct vidmm_adapter *a, const struct vidmm_allocation *al,
                         const struct vidmm_placement *pl, uint64_t va, uint64_t off, uint64_t size);
/* Write the leaf entries of [va, va+size) for what d says is there
 * (mapped pages, zero, or invalid); tables must exist for valid entries.
 * Never allocates. */
vidmm_status vidmm_pt_write(struct vidmm_adapter *a, struct vidmm_process *p, uint64_t va, uint64_t size,
                            const struct vidmm_va_desc *d);
vidmm_status vidmm_pt_flush(struct vidmm_adapter *a, struct vidmm_process *p);
/* Write every table of p again (all entries invalid, children linked)
 * after its memory lost its content; leaf entries then come from
 * vidmm_process_remap_allocation. */
vidmm_status vidmm_pt_rebuild(struct vidmm_adapter *a, struct vidmm_process *p);
/* Write valid 4 KB leaf entries mapping [va, va+size) onto bytes
 * [off, off+size) of placement pl (page-aligned; the leaves must exist
 * and hold 4 KB entries).  Never allocates. */
vidmm_status vidmm_pt_map_placement(struct vidmm_adapter *a, struct vidmm_process *p, uint64_t va,
                                    const struct vidmm_placement *pl, uint64_t off, uint64_t size,
                                    void *driver_allocation);
/* The leaf covering va: 0 = none, 4 = 4 KB entries, 64 = 64 KB entries. */
int vidmm_pt_leaf_kind(const struct vidmm_adapter *a, const struct vidmm_process *p, uint64_t va);
/* Does every leaf span of [va, va+size) have a 4 KB leaf? */
int vidmm_pt_covered(const struct vidmm_adapter *a, const struct vidmm_process *p, uint64_t va, uint64_t size);
/* Walk p's tables: levels, segments (the paging process's own), entry
 * counts, allocator ranges, child counters.  Returns the violations. */
int vidmm_pt_check_tree(const struct vidmm_adapter *a, const struct vidmm_process *p, char *msg, size_t n);
/* Sum the page-table bytes of a tree per segment (for the checker). */
void vidmm_pt_account(const struct vidmm_page_table *pt, uint64_t *bytes_per_segment, uint64_t *tables);

/* process/process.c */
/* The allocation moved or changed: rewrite its PTEs in every process. */
vidmm_status vidmm_process_remap_allocation(struct vidmm_adapter *a, struct vidmm_allocation *al);
/* Before al's bytes go to dst: switch to 4 KB entries wherever a mapping
 * of al could not keep 64 KB entries there (may allocate). */
vidmm_status vidmm_process_prepare_move(struct vidmm_adapter *a, struct vidmm_allocation *al,
                                        const struct vidmm_placement *dst);
/* The allocation is being destroyed: unmap it everywhere. */
void vidmm_process_forget_allocation(struct vidmm_adapter *a, struct vidmm_allocation *al);
void vidmm_process_destroy_all(struct vidmm_adapter *a);
/* The live process of a handle, or NULL. */
struct vidmm_process *vidmm_process_get(const struct vidmm_adapter *a, vidmm_handle h);
/* Bind (or unbind) p's root page table for a context token. */
void vidmm_process_bind_root(struct vidmm_adapter *a, struct vidmm_process *p, uint64_t token, int bind);
/* The root moved (a resizable root grew): bind it again everywhere. */
void vidmm_process_rebind_root(struct vidmm_adapter *a, struct vidmm_process *p);

/* device/device.c */
void vidmm_device_destroy_all(struct vidmm_adapter *a, struct vidmm_process *p);
/* A page fault for a context token: the context's device, or with a
 * process token every device of it, enters the error state.  Called with
 * paging.lock held. Returns the process, or NULL for an unknown token. */
struct vidmm_process *vidmm_device_fault_locked(struct vidmm_adapter *a, uint64_t token, uint64_t va,
                                                uint32_t flags);
int vidmm_device_check(const struct vidmm_adapter *a, char *msg, size_t n);

/* residency/residency.c */
vidmm_status vidmm_res_init(struct vidmm_adapter *a);
void vidmm_res_fini(struct vidmm_adapter *a);
/* Around every change of an allocation's placement or residency: take it
 * out of the accounting and the policy, then put it back. */
void vidmm_res_leave(struct vidmm_adapter *a, struct vidmm_allocation *al);
void vidmm_res_enter(struct vidmm_adapter *a, struct vidmm_allocation *al);
/* The allocation is going away: drop its references and backing. */
void vidmm_res_forget_allocation(struct vidmm_adapter *a, struct vidmm_allocation *al);
/* The backing copy is stale (the allocation moved or was written). */
void vidmm_res_drop_backing(struct vidmm_adapter *a, struct vidmm_allocation *al);
/* Free a reference record, unlinked from its allocation and device; its
 * remaining count leaves the allocation's total. */
void vidmm_res_unlink_ref(struct vidmm_adapter *a, struct vidmm_res_ref *r);
/* A device goes: its references and queues go with it. */
void vidmm_res_device_gone(struct vidmm_adapter *a, struct vidmm_device *d);
/* A process goes: allocations it owned become unowned. */
void vidmm_res_process_gone(struct vidmm_adapter *a, struct vidmm_process *p);
/* Evict a resident allocation now (content kept unless offered, or
 * not_written with a current backing copy). */
vidmm_status vidmm_res_evict(struct vidmm_adapter *a, struct vidmm_allocation *al, int not_written);
/* Make a non-resident allocation resident (restore). */
vidmm_status vidmm_res_restore(struct vidmm_adapter *a, struct vidmm_allocation *al);
int vidmm_res_check(const struct vidmm_adapter *a, char *msg, size_t n);
unsigned vidmm_res_home_group(const struct vidmm_adapter *a, const struct vidmm_allocation *al);
/* The same, and in *only_memory the memory segments it may use when no
 * other segment takes it (else 0). */
unsigned vidmm_res_home(const struct vidmm_adapter *a, const struct vidmm_allocation *al, uint32_t *only_memory);
/* A process's demand (bytes on its devices' lists) changes: keep the
 * adapter's total with it, so a budget needs no walk of every process. */
static inline void vidmm_res_demand_add(struct vidmm_adapter *a, struct vidmm_process *p, unsigned g, uint64_t n)
{
    p->demand[g] += n;
    a->demand_total[g] += n;
}
static inline void vidmm_res_demand_sub(struct vidmm_adapter *a, struct vidmm_process *p, unsigned g, uint64_t n)
{
    p->demand[g] -= n;
    a->demand_total[g] -= n;
}
/* Effective budget of a process in a group (budget.c). */
uint64_t vidmm_res_budget(const struct vidmm_adapter *a, const struct vidmm_process *p, unsigned group);
uint64_t vidmm_res_usage(const struct vidmm_adapter *a, const struct vidmm_process *p, unsigned group);
void vidmm_res_notify_trim(struct vidmm_adapter *a, struct vidmm_process *p);
/* Every process over its budget in either group gets a trim notification
 * on each of its devices (budget.c); safe against callbacks that destroy
 * devices or processes. */
void vidmm_res_notify_all(struct vidmm_adapter *a);
/* Free size bytes (aligned) in memory segment id for a page table by
 * evicting offered and unreferenced allocations (never listed ones). */
/* Bytes of memory segment id that eviction may free for a request. */
uint64_t vidmm_res_evictable_bytes(struct vidmm_adapter *a, uint32_t id);
vidmm_status vidmm_res_make_room(struct vidmm_adapter *a, uint32_t id, uint64_t size, uint64_t align);
/* A failed make-resident: put back what the call changed (epoch = its
 * undo epoch): evict what it restored, restore what it evicted where it
 * was when there is room without evicting anything else. */
void vidmm_res_undo(struct vidmm_adapter *a, uint64_t epoch);
/* Supported segments of al in placement order; the count. */
uint32_t vidmm_res_order(const struct vidmm_adapter *a, const struct vidmm_allocation *al,
                         uint32_t order[VIDMM_MAX_SEGMENTS], int top[VIDMM_MAX_SEGMENTS]);

/* tdr/tdr.c */
uint64_t vidmm_tdr_now(void);
/* Wait on paging.cond (paging.lock held) until woken, `until` passes
 * (NULL = no deadline) or a slice of the hang timeout passes, in which
 * case hangs are looked for and recovered (paging.lock is dropped
 * meanwhile).  ETIMEDOUT once `until` passed, else 0. */
int vidmm_tdr_cond_wait(struct vidmm_adapter *a, const struct timespec *until);
/* Look for a hang (or a reported paging fault) now and recover it;
 * paging.lock not held.  1 if a reset was made. */
int vidmm_tdr_poll(struct vidmm_adapter *a);
/* Is an adapter reset pending for the calling thread (it holds the
 * adapter lock)?  Its waits then return at once: the engines will not
 * progress before the reset.  _locked: paging.lock held. */
int vidmm_tdr_pending_locked(const struct vidmm_adapter *a);
int vidmm_tdr_pending(struct vidmm_adapter *a);
/* A recovery point: run the pending reset now.  Only where the caller
 * and every caller above it hold nothing a reset frees or rewrites
 * (the outermost entry unwinding, a context destroy, the close). */
void vidmm_tdr_run_pending(struct vidmm_adapter *a);
/* Mark allocation al's content as written by the paging buffer being
 * built (an adapter reset that drops that buffer loses the content). */
void vidmm_tdr_note_paging(struct vidmm_adapter *a, struct vidmm_allocation *al);
/* Write every page table again and every allocation's entries (their
 * memory lost its content: adapter reset, resume from a power state). */
vidmm_status vidmm_tdr_rebuild_page_tables(struct vidmm_adapter *a);

/* submit/submit.c */
struct vidmm_submit_state;
vidmm_status vidmm_submit_init(struct vidmm_adapter *a);
/* Wait for every submission, free deferred destructions, release. */
void vidmm_submit_fini(struct vidmm_adapter *a);
/* The former submission lock is the adapter lock now (D36); the old
 * names stay for their call sites. */
static inline void vidmm_submit_lock(struct vidmm_adapter *a) { vidmm_adapter_lock(a); }
static inline void vidmm_submit_unlock(struct vidmm_adapter *a) { vidmm_adapter_unlock(a); }
/* 0 when taken (hang recovery from a wait that does not hold it). */
int vidmm_adapter_trylock(struct vidmm_adapter *a);
/* A context goes: wait for its work, forget its patch cache. */
void vidmm_submit_context_gone(struct vidmm_adapter *a, struct vidmm_context *c);
/* Wait until no submitted work uses al (its fences passed). */
void vidmm_submit_wait_idle(struct vidmm_adapter *a, struct vidmm_allocation *al);
/* Eviction found nothing evictable: wait for the oldest in-flight
 * submission and retire it.  1 if anything retired, 0 if none was in
 * flight. */
int vidmm_submit_wait_some(struct vidmm_adapter *a);
/* Destroy while in use: hide the handle, keep the memory until the work
 * finished.  1 if deferred (the caller is done), 0 if al is idle. */
int vidmm_submit_defer_destroy(struct vidmm_adapter *a, struct vidmm_allocation *al);
int vidmm_submit_check(const struct vidmm_adapter *a, char *msg, size_t n);
/* The context of the oldest unfinished submission on node (NULL: none);
 * *fence its fence value.  Submission lock held. */
struct vidmm_context *vidmm_submit_oldest_on_node(struct vidmm_adapter *a, uint32_t node, uint64_t *fence);
/* After an adapter reset made every fence pass: retire every record. */
void vidmm_submit_retire_all(struct vidmm_adapter *a);
/* Wait until no submitted work is in flight (hangs are reset meanwhile). */
void vidmm_submit_wait_all(struct vidmm_adapter *a);

/* allocation.c */
/* Release an allocation now (it is idle). */
void vidmm_allocation_destroy_now(struct vidmm_adapter *a, struct vidmm_allocation *al);
/* A process goes: its private allocations go with it (unlocked,
 * undisplayed, destroyed now or deferred while GPU work uses them). */
void vidmm_allocation_destroy_private(struct vidmm_adapter *a, vidmm_handle process);
vidmm_status vidmm_discard_content(struct vidmm_adapter *a, struct vidmm_allocation *al,
                                   const struct vidmm_placement *pl);

/* adapter.c: one DxgkDdiQueryAdapterInfo call. */
vidmm_status vidmm_driver_query(struct vidmm_adapter *a, enum vidmm_query_type type, const void *in, size_t in_size,
                                void *out, size_t out_size);

/* mmu/geometry.c: query and validate the GpuMmu geometry (after the
 * segment table exists).  VIDMM_E_BAD_DRIVER_DESC with msg on a fault. */
vidmm_status vidmm_gpummu_init(struct vidmm_adapter *a, char *msg, size_t n);

/* handle.c */
vidmm_status vidmm_handle_new(struct vidmm_adapter *a, struct vidmm_allocation **out, vidmm_handle *h);
void vidmm_handle_release(struct vidmm_adapter *a, vidmm_handle h);
struct vidmm_allocation *vidmm_handle_get(const struct vidmm_adapter *a, vidmm_handle h);
/* The same, zombies included: for VA descriptors, which keep naming an
 * allocation destroyed while in use until it is released. */
struct vidmm_allocation *vidmm_handle_get_any(const struct vidmm_adapter *a, vidmm_handle h);
vidmm_handle vidmm_handle_make(const struct vidmm_adapter *a, uint32_t idx, uint32_t generation);
/* vidmm_handle_get as seen from a process's call: another process's
 * private allocation is not a handle there (D38). */
struct vidmm_allocation *vidmm_handle_get_for(const struct vidmm_adapter *a, vidmm_handle h, vidmm_handle process);
void vidmm_handle_table_fini(struct vidmm_adapter *a);

/* paging.c */
vidmm_status vidmm_paging_init(struct vidmm_adapter *a, uint32_t buffer_size, uint32_t private_size);
void vidmm_paging_fini(struct vidmm_adapter *a);
/* Encode one operation, restarting in a fresh buffer as the driver asks. */
vidmm_status vidmm_paging_emit(struct vidmm_adapter *a, struct vidmm_build_paging_buffer_args *op);
/* Submit what is queued and wait until the GPU finished everything. */
vidmm_status vidmm_paging_flush(struct vidmm_adapter *a);
/* Submit what is queued without waiting; *last_fence (may be NULL) is
 * the fence after which everything submitted so far is done. */
vidmm_status vidmm_paging_submit(struct vidmm_adapter *a, uint64_t *last_fence);

/* paging_process.c: the system paging process (GpuMmu adapters whose
 * driver sets VIDMM_GPUMMU_VIRTUAL_PAGING_OPS; a no-op otherwise). */
vidmm_status vidmm_pp_init(struct vidmm_adapter *a, char *msg, size_t n);
void vidmm_pp_fini(struct vidmm_adapter *a);
/* Content moves through the scratch window, chunked by its size (called
 * only from vidmm_copy_content / vidmm_fill_content). */
vidmm_status vidmm_pp_copy(struct vidmm_adapter *a, struct vidmm_allocation *al, const struct vidmm_placement *src,
                           const struct vidmm_placement *dst);
vidmm_status vidmm_pp_fill(struct vidmm_adapter *a, struct vidmm_allocation *al, const struct vidmm_placement *pl,
                           uint32_t pattern);
/* A page fault for token t: 1 if it named the paging process (counted;
 * called with paging.lock held). */
int vidmm_pp_fault_locked(struct vidmm_adapter *a, uint64_t t, uint64_t va);
/* For vidmm_adapter_check: its tables per segment, and its violations. */
int vidmm_pp_check(const struct vidmm_adapter *a, uint64_t *bytes_per_segment, char *msg, size_t n);

/* placement.c */
vidmm_status vidmm_place(struct vidmm_adapter *a, struct vidmm_allocation *al, uint32_t segment_id,
                         int top_down, struct vidmm_placement *pl);
void vidmm_unplace(struct vidmm_adapter *a, struct vidmm_allocation *al, struct vidmm_placement *pl);
vidmm_status vidmm_place_first_fit(struct vidmm_adapter *a, struct vidmm_allocation *al, struct vidmm_placement *pl);
/* Place al in memory segment segment_id on exactly the n (1 or 2)
 * extents [off[i], off[i]+len[i]) - where an undone eviction puts it
 * back.  VIDMM_E_NO_SEGMENT_SPACE (nothing taken) if any is in use. */
vidmm_status vidmm_place_at(struct vidmm_adapter *a, struct vidmm_allocation *al, uint32_t segment_id,
                            const uint64_t *off, const uint64_t *len, uint32_t n, struct vidmm_placement *pl);
vidmm_status vidmm_copy_content(struct vidmm_adapter *a, struct vidmm_allocation *al,
                                const struct vidmm_placement *src, const struct vidmm_placement *dst);
vidmm_status vidmm_fill_content(struct vidmm_adapter *a, struct vidmm_allocation *al,
                                const struct vidmm_placement *pl, uint32_t pattern);
vidmm_status vidmm_aperture_map(struct vidmm_adapter *a, struct vidmm_allocation *al, struct vidmm_placement *pl,
                                uint32_t ap_segment);
void vidmm_aperture_unmap(struct vidmm_adapter *a, struct vidmm_allocation *al, struct vidmm_placement *pl);
int vidmm_needs_contiguous(const struct vidmm_adapter *a, const struct vidmm_allocation *al,
                           const struct vidmm_segment *s);

/* Entries that hand work to the GPU (paging buffers, root bindings,
 * command buffers) answer VIDMM_E_STATE while the adapter is in standby
 * or hibernate and change nothing (vidmm/power.h). */
static inline int vidmm_powered_down(const struct vidmm_adapter *a)
{
    return a->power_state != VIDMM_POWER_D0;
}

static inline int vidmm_seg_is_memory(const struct vidmm_adapter *a, uint32_t id)
{
    return id && a->seg[id].kind == VIDMM_SEGMENT_KIND_MEMORY;
}

#endif
