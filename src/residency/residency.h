/*
 * residency.h - residency lists, eviction and restore, budgets (internal, never installed).
 */
#ifndef VIDMM_RESIDENCY_RESIDENCY_H
#define VIDMM_RESIDENCY_RESIDENCY_H

#include "model/objects.h"

/* One device's references to one allocation (an entry of the device's
 * residency requirement list). */
struct vidmm_residency_ref {
    struct vidmm_allocation *al;
    struct vidmm_device *dev;
    uint32_t count;
    uint32_t pending;               /* evict validation scratch */
    struct vidmm_residency_ref *al_next;  /* the allocation's references */
    struct vidmm_residency_ref *dev_prev, *dev_next; /* the device's list */
};

vidmm_status vidmm_residency_init(struct vidmm_adapter *a);

void vidmm_residency_fini(struct vidmm_adapter *a);

/* Around every change of an allocation's placement or residency: take it
 * out of the accounting and the policy, then put it back. */
void vidmm_residency_leave(struct vidmm_adapter *a, struct vidmm_allocation *al);

void vidmm_residency_enter(struct vidmm_adapter *a, struct vidmm_allocation *al);
/* Make p (NULL: nobody) al's residency owner: leave, the owner's count
 * of owned allocations, enter. */
void vidmm_residency_set_owner(struct vidmm_adapter *a, struct vidmm_allocation *al, struct vidmm_process *p);

/* The allocation is going away: drop its references and backing. */
void vidmm_residency_forget_allocation(struct vidmm_adapter *a, struct vidmm_allocation *al);

/* The backing copy is stale (the allocation moved or was written). */
void vidmm_residency_drop_backing(struct vidmm_adapter *a, struct vidmm_allocation *al);

/* Free a reference record, unlinked from its allocation and device; its
 * remaining count leaves the allocation's total. */
void vidmm_residency_unlink_ref(struct vidmm_adapter *a, struct vidmm_residency_ref *r);

/* A device goes: its references and queues go with it. */
void vidmm_residency_device_gone(struct vidmm_adapter *a, struct vidmm_device *d);

/* A process goes: allocations it owned become unowned. */
void vidmm_residency_process_gone(struct vidmm_adapter *a, struct vidmm_process *p);

/* One holder of a shared allocation lets go (vidmm/share.h): the
 * references of p's devices go, and al is unowned if p owned it. */
void vidmm_residency_process_lets_go(struct vidmm_adapter *a, struct vidmm_allocation *al, struct vidmm_process *p);

/* Evict a resident allocation now (content kept unless offered, or
 * not_written with a current backing copy). */
vidmm_status vidmm_residency_evict(struct vidmm_adapter *a, struct vidmm_allocation *al, int not_written);

/* Make a non-resident allocation resident (restore). */
vidmm_status vidmm_residency_restore(struct vidmm_adapter *a, struct vidmm_allocation *al);

int vidmm_residency_check(const struct vidmm_adapter *a, char *msg, size_t n);

unsigned vidmm_residency_home_group(const struct vidmm_adapter *a, const struct vidmm_allocation *al);

/* The same, and in *only_memory the memory segments it may use when no
 * other segment takes it (else 0). */
unsigned vidmm_residency_home(const struct vidmm_adapter *a, const struct vidmm_allocation *al, uint32_t *only_memory);


/* Effective budget of a process in a group (budget.c). */
uint64_t vidmm_residency_budget(const struct vidmm_adapter *a, const struct vidmm_process *p, unsigned group);

uint64_t vidmm_residency_usage(const struct vidmm_adapter *a, const struct vidmm_process *p, unsigned group);

void vidmm_residency_notify_trim(struct vidmm_adapter *a, struct vidmm_process *p);

/* Every process over its budget in either group gets a trim notification
 * on each of its devices (budget.c); safe against callbacks that destroy
 * devices or processes. */
void vidmm_residency_notify_all(struct vidmm_adapter *a);

/* Free size bytes (aligned) in memory segment id for a page table by
 * evicting offered and unreferenced allocations (never listed ones). */
/* A make-resident of process p refused with VIDMM_E_NO_SEGMENT_SPACE,
 * its state undone, list members still pinned: could the evicted members
 * have had their room from processes over their fair share of a memory
 * segment every member supports, p staying within its own (D62)?  Then
 * the refusal broke the fair share: counted for the rules checker.
 * Worked out from the allocations, independently of the victim passes;
 * conservative (what may be busy, locked, displayed or shared with p is
 * not counted; contiguous members are left out). */
void vidmm_residency_check_refusal(struct vidmm_adapter *a, struct vidmm_process *p, const vidmm_handle *list,
                             uint32_t n);
/* Refusals found to break the fair share so far; *last: the last one. */
uint64_t vidmm_residency_unfair_refusals(const struct vidmm_adapter *a, const char **last);

/* Bytes of memory segment id that eviction may free for a request of
 * process p (NULL: none; its fair share of the segment counts, D62). */
uint64_t vidmm_residency_evictable_bytes(struct vidmm_adapter *a, uint32_t id, const struct vidmm_process *p);

vidmm_status vidmm_residency_make_room(struct vidmm_adapter *a, uint32_t id, uint64_t size, uint64_t align);

/* A failed make-resident: put back what the call changed (epoch = its
 * undo epoch): evict what it restored, restore what it evicted where it
 * was when there is room without evicting anything else. */
void vidmm_residency_undo(struct vidmm_adapter *a, uint64_t epoch);

/* Supported segments of al in placement order; the count. */
uint32_t vidmm_residency_order(const struct vidmm_adapter *a, const struct vidmm_allocation *al,
                         uint32_t order[VIDMM_MAX_SEGMENTS], int top[VIDMM_MAX_SEGMENTS]);

/* The reference clock (the eviction policy's notion of "now"). */
uint64_t vidmm_residency_clock_locked(const struct vidmm_adapter *a);
/* A submission uses these allocations: one clock tick, and each one's
 * last use is now (the policy is told). */
void vidmm_residency_use(struct vidmm_adapter *a, struct vidmm_allocation *const *list, uint32_t n);
/* Pin what the request being served makes resident: restoring one of
 * them never evicts another until vidmm_residency_request_end.  The request's epoch. */
uint64_t vidmm_residency_request_begin(struct vidmm_adapter *a);
void vidmm_residency_request_end(struct vidmm_adapter *a);


/* ---- an allocation's, a process's and a device's residency state, for
 * the modules above (only src/residency/ names the `res` members). ---- */

/* Prepare a new allocation's policy entry: handle h, its priority, used now. */
void vidmm_residency_init_allocation(struct vidmm_adapter *a, struct vidmm_allocation *al, vidmm_handle h,
                                     uint32_t priority);

/* The process accounted for its residency (0: none yet), and whether there is one. */
static inline vidmm_handle vidmm_residency_owner(const struct vidmm_allocation *al)
{
    return al->res.pe.process;
}

static inline int vidmm_residency_is_owned(const struct vidmm_allocation *al)
{
    return al->res.owned != 0;
}

static inline uint32_t vidmm_residency_priority(const struct vidmm_allocation *al)
{
    return al->res.pe.priority;
}

/* Offered (vidmm_offer): its content may be dropped at any eviction. */
static inline int vidmm_residency_is_offered(const struct vidmm_allocation *al)
{
    return al->res.offered;
}

/* Its reference records, one per device listing it (through al_next). */
static inline struct vidmm_residency_ref *vidmm_residency_refs_of(const struct vidmm_allocation *al)
{
    return al->res.refs;
}

/* The system copy kept while it is resident in a memory segment
 * (sys == NULL: none). */
static inline struct vidmm_placement *vidmm_residency_backing(struct vidmm_allocation *al)
{
    return &al->res.backing;
}

static inline int vidmm_residency_has_backing(const struct vidmm_allocation *al)
{
    return al->res.backing.sys != NULL;
}

/* The system copy holds the current content: neither the CPU (a lock,
 * vidmm_residency_cpu_written) nor the GPU (a submission listing it,
 * vidmm_residency_gpu_listed) may have written since it was made. */
static inline int vidmm_residency_backing_current(const struct vidmm_allocation *al)
{
    return al->res.backing.sys && al->res.backing_valid && !al->res.gpu_dirty;
}

/* The CPU may write it (a lock): the system copy goes stale, and content
 * lost while offered is now what the CPU writes into the system pages. */
static inline void vidmm_residency_cpu_written(struct vidmm_allocation *al)
{
    al->res.backing_valid = 0;
    al->res.content_lost = 0;
}

/* A submission writes it: the system copy goes stale. */
static inline void vidmm_residency_gpu_written(struct vidmm_allocation *al)
{
    al->res.backing_valid = 0;
}

/* A virtual submission lists it: the copy is no proof of the content
 * after a reset or for standby. */
static inline void vidmm_residency_gpu_listed(struct vidmm_allocation *al)
{
    al->res.gpu_dirty = 1;
}

/* Pin al for the request of epoch (vidmm_residency_request_begin): never
 * evicted while it is served.  1 if it was not pinned yet (a list's
 * first naming of it). */
static inline int vidmm_residency_pin(struct vidmm_allocation *al, uint64_t epoch)
{
    if (al->res.request_epoch == epoch)
        return 0;
    al->res.request_epoch = epoch;
    return 1;
}

/* What a process's last successful make-resident in group g left: said
 * CantTrimFurther, usage and budget right after (the rules checker). */
void vidmm_residency_last_request(const struct vidmm_process *p, unsigned g, int *cant_trim, uint64_t *usage,
                                  uint64_t *budget);

/* Resident bytes a process owns in segment id. */
static inline uint64_t vidmm_residency_segment_usage(const struct vidmm_process *p, uint32_t id)
{
    return p->res.seg_usage[id];
}

/* A device's residency requirement list (through dev_next), and its length. */
static inline struct vidmm_residency_ref *vidmm_residency_list_of(const struct vidmm_device *d)
{
    return d->res.refs;
}

static inline uint64_t vidmm_residency_list_length(const struct vidmm_device *d)
{
    return d->res.ref_count;
}

/* The adapter checker's part (adapter/check.c): p's list of owned
 * allocations is linked both ways and names allocations p owns (reported
 * on r); returns how many it lists, up to one past the count. */
struct vidmm_report;
uint64_t vidmm_residency_check_owned(const struct vidmm_process *p, struct vidmm_report *r);

/* How many allocations p owns for residency (its count). */
static inline uint64_t vidmm_residency_owned_count(const struct vidmm_process *p)
{
    return p->res.owned_allocations;
}

/* The live paging queue named by h, or VIDMM_E_INVALID_HANDLE with the
 * reason recorded (the paging queues' lookup, as handle/lookup.h's are
 * the other kinds'). */
vidmm_status vidmm_paging_queue_lookup(const struct vidmm_adapter *a, vidmm_handle h, struct vidmm_paging_queue **out);

#endif
