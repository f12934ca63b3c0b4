/*
 * d3dkmt/thunks.h - what the thunk files share (libvidmm-d3dkmt): the
 * runtime lock, the D3DKMT limits, and the prologue every thunk that
 * names objects starts with (lookup.c).
 *
 * Every thunk: NULL arguments and malformed fields first
 * (STATUS_INVALID_PARAMETER), then the handles under the runtime lock,
 * copied out; then the backend call without the lock; then the handle
 * table updated under the lock.  docs/D3DKMT.md gives each thunk's
 * statuses.  Files: adapter.c (adapters, adapter information, budgets),
 * device.c (devices, paging queues, contexts, submission), allocation.c
 * (allocations, CPU locks, residency, offer and reclaim), gpuva.c (GPU
 * virtual addresses), lookup.c (the handle-list prologue).
 */
#ifndef D3DKMT_THUNKS_H
#define D3DKMT_THUNKS_H

#include "internal.h"

#define LOCK(rt) pthread_mutex_lock(&(rt)->lock)
#define UNLOCK(rt) pthread_mutex_unlock(&(rt)->lock)

#define MAX_ALLOCATIONS_PER_CREATE 1024u     /* D3DKMT_CREATEALLOCATION_MAX */
#define MAX_MAKE_RESIDENT 10240u             /* D3DKMT_MAKERESIDENT_ALLOC_MAX */

static inline struct d3dkmt_adapter *adapter_of(struct d3dkmt_runtime *rt, D3DKMT_HANDLE h)
{
    return d3dkmt_lookup(rt, h, T_ADAPTER);
}

/* A copy of a device's identity, taken under the lock. */
struct devref {
    struct d3dkmt_adapter *ad;
    vidmm_handle vdev;
    D3DKMT_HANDLE handle;
};

/* A paging queue's identity, taken under the lock. */
struct queueref {
    struct d3dkmt_adapter *ad;
    vidmm_handle vq;
    vidmm_handle vdev;      /* its device's (0 if the device went) */
};

/* An allocation taken out of the table, to destroy in the backend. */
struct doomed {
    vidmm_handle vh;
    uint32_t locks;
};

/* ---- lookup.c: the handle-list prologue ----------------------------------- */

/* Device h's identity into out, the lock held: 1, or 0 when h names no
 * device. */
int d3dkmt_device_ref(struct d3dkmt_runtime *rt, D3DKMT_HANDLE h, struct devref *out);
/* Translate n allocation handles of one device, the lock held; 0 on a
 * bad one. */
int d3dkmt_alloc_handles(struct d3dkmt_runtime *rt, D3DKMT_HANDLE device, const D3DKMT_HANDLE *in, uint32_t n,
                         vidmm_handle *out);
/* The runtime locked with device h found: 1; else 0, the lock released
 * again (the thunk answers STATUS_INVALID_PARAMETER). */
int d3dkmt_lock_device(struct d3dkmt_runtime *rt, D3DKMT_HANDLE h, struct devref *d);
/* The device (else STATUS_INVALID_PARAMETER) and n allocations of it
 * (else STATUS_INVALID_HANDLE) into out, under the lock, released
 * either way. */
NTSTATUS d3dkmt_device_handles(struct d3dkmt_runtime *rt, D3DKMT_HANDLE device, const D3DKMT_HANDLE *in, uint32_t n,
                               struct devref *d, vidmm_handle *out);
/* The same into a list allocated first (STATUS_NO_MEMORY); the
 * caller's to d3dkmt_free on success. */
NTSTATUS d3dkmt_device_list(struct d3dkmt_runtime *rt, D3DKMT_HANDLE device, const D3DKMT_HANDLE *in, uint32_t n,
                            struct devref *d, vidmm_handle **list);
/* The paging queue and n allocations of its device into out, under the
 * lock; STATUS_INVALID_HANDLE when either is wrong. */
NTSTATUS d3dkmt_queue_handles(struct d3dkmt_runtime *rt, D3DKMT_HANDLE queue, const D3DKMT_HANDLE *in, uint32_t n,
                              struct queueref *q, vidmm_handle *out);
/* The same into a list allocated first, as d3dkmt_device_list. */
NTSTATUS d3dkmt_queue_list(struct d3dkmt_runtime *rt, D3DKMT_HANDLE queue, const D3DKMT_HANDLE *in, uint32_t n,
                           struct queueref *q, vidmm_handle **list);

/* ---- device.c, sync.c ----------------------------------------------------- */

/* Destroys in the backend allocations already taken out of the table
 * (unlocked first), without the lock. */
void d3dkmt_destroy_doomed(struct d3dkmt_runtime *rt, struct d3dkmt_adapter *ad, vidmm_handle vdev,
                           struct doomed *list, uint32_t n);
/* Wait until a fence object reaches a value (sync.c). */
NTSTATUS d3dkmt_wait_one(struct d3dkmt_runtime *rt, D3DKMT_HANDLE device, D3DKMT_HANDLE sync, uint64_t value);

#endif
