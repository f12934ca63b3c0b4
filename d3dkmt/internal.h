/*
 * d3dkmt/internal.h - the thunk runtime's private state (libvidmm-d3dkmt).
 *
 * The thunks translate D3DKMT handles and structures, then call the
 * backend: a table of the vidmm entries they need.  Two fill it:
 * libvidmm in this process (backend_vidmm.c) and libvidmm-client on a
 * connection to vidmmd (backend_client.c); adapters of both kinds can
 * sit in one runtime.  Only public vidmm headers are used.
 *
 * Locking: rt->lock guards the handle table, the trim registrations
 * and the fences' values; it is never held across a backend call, so a
 * backend callback (trim notification) may take it, and a runtime never
 * waits on the adapter lock while holding its own.
 */
#ifndef D3DKMT_INTERNAL_H
#define D3DKMT_INTERNAL_H

#include "d3dkmt/d3dkmthk.h"
#include "vidmm/vidmm.h"

#include <pthread.h>

struct vidmm_client;

struct d3dkmt_adapter;

/* Every entry takes the runtime's adapter: the in-process backend calls
 * libvidmm on ad->va, the remote one (backend_client.c) libvidmm-client
 * on ad->conn.  Process handles are the runtime's (ad->process); the
 * remote backend's process is its connection. */
struct d3dkmt_backend {
    const char *name;
    vidmm_status (*adapter_query_info)(struct d3dkmt_adapter *, struct vidmm_adapter_info *);
    vidmm_status (*segment_query)(struct d3dkmt_adapter *, uint32_t, struct vidmm_segment_info *);
    vidmm_status (*process_create)(struct d3dkmt_adapter *, vidmm_handle *);
    vidmm_status (*process_destroy)(struct d3dkmt_adapter *, vidmm_handle);
    vidmm_status (*device_create)(struct d3dkmt_adapter *, vidmm_handle, vidmm_handle *);
    vidmm_status (*device_destroy)(struct d3dkmt_adapter *, vidmm_handle);
    vidmm_status (*paging_queue_create)(struct d3dkmt_adapter *, vidmm_handle, int, vidmm_handle *);
    vidmm_status (*paging_queue_destroy)(struct d3dkmt_adapter *, vidmm_handle);
    vidmm_status (*paging_queue_fence)(struct d3dkmt_adapter *, vidmm_handle, uint64_t *);
    vidmm_status (*device_allocation_create)(struct d3dkmt_adapter *, vidmm_handle, const void *, size_t, uint32_t,
                                             vidmm_handle *);
    vidmm_status (*allocation_destroy)(struct d3dkmt_adapter *, vidmm_handle);
    vidmm_status (*device_lock)(struct d3dkmt_adapter *, vidmm_handle, vidmm_handle, void **);
    vidmm_status (*device_unlock)(struct d3dkmt_adapter *, vidmm_handle, vidmm_handle);
    vidmm_status (*make_resident)(struct d3dkmt_adapter *, vidmm_handle, struct vidmm_make_resident_args *);
    vidmm_status (*evict)(struct d3dkmt_adapter *, vidmm_handle, struct vidmm_evict_args *);
    vidmm_status (*allocation_set_priority)(struct d3dkmt_adapter *, vidmm_handle, uint32_t);
    vidmm_status (*offer)(struct d3dkmt_adapter *, vidmm_handle, const vidmm_handle *, uint32_t, uint32_t);
    vidmm_status (*reclaim)(struct d3dkmt_adapter *, vidmm_handle, const vidmm_handle *, uint32_t, uint32_t *,
                            uint64_t *);
    vidmm_status (*query_video_memory_info)(struct d3dkmt_adapter *, vidmm_handle, enum vidmm_segment_group,
                                            struct vidmm_video_memory_info *);
    vidmm_status (*change_video_memory_reservation)(struct d3dkmt_adapter *, vidmm_handle, enum vidmm_segment_group,
                                                    uint64_t);
    vidmm_status (*register_trim_notification)(struct d3dkmt_adapter *, vidmm_handle, vidmm_trim_callback, void *);
    vidmm_status (*gpuva_reserve)(struct d3dkmt_adapter *, vidmm_handle, uint64_t, uint64_t, uint64_t, uint64_t,
                                  unsigned, uint64_t *);
    vidmm_status (*gpuva_map)(struct d3dkmt_adapter *, vidmm_handle, uint64_t, uint64_t, uint64_t, vidmm_handle,
                              uint64_t, uint64_t, unsigned, uint64_t, uint64_t *);
    vidmm_status (*gpuva_free)(struct d3dkmt_adapter *, vidmm_handle, uint64_t, uint64_t);
    vidmm_status (*gpuva_update)(struct d3dkmt_adapter *, vidmm_handle, const struct vidmm_gpuva_update_op *,
                                 uint32_t);
    vidmm_status (*context_create)(struct d3dkmt_adapter *, vidmm_handle, const struct vidmm_context_desc *,
                                   vidmm_handle *);
    vidmm_status (*context_destroy)(struct d3dkmt_adapter *, vidmm_handle);
    vidmm_status (*submit_virtual)(struct d3dkmt_adapter *, vidmm_handle, uint64_t, uint32_t, uint64_t *);
    vidmm_status (*context_fence)(struct d3dkmt_adapter *, vidmm_handle, uint64_t *, uint64_t *);
};

/* The in-process backend: libvidmm (backend_vidmm.c). */
extern const struct d3dkmt_backend d3dkmt_backend_vidmm;
/* The remote backend: libvidmm-client over a connection to vidmmd
 * (backend_client.c). */
extern const struct d3dkmt_backend d3dkmt_backend_client;

struct d3dkmt_runtime;

struct d3dkmt_adapter {
    struct d3dkmt_runtime *rt;
    const struct d3dkmt_backend *be;
    struct vidmm_adapter *va;       /* in-process: the library's adapter; remote: NULL */
    struct vidmm_client *conn;      /* remote: the connection to vidmmd; in-process: NULL */
    LUID luid;
    vidmm_handle process;           /* the runtime's process on it */
    void (*release)(void *owner);   /* adapters the runtime opened itself */
    void *owner;
    int live;
};

enum d3dkmt_type {
    T_FREE = 0,
    T_ADAPTER,
    T_DEVICE,
    T_QUEUE,
    T_ALLOCATION,
    T_CONTEXT,
    T_SYNC
};

/* Every object but an adapter handle starts with this. */
struct d3dkmt_obj {
    uint32_t type;
    D3DKMT_HANDLE handle;
    struct d3dkmt_adapter *adapter;
    D3DKMT_HANDLE device;           /* the owning device (a device: itself) */
    vidmm_handle vh;                /* the backend's object */
};

struct d3dkmt_queue {
    struct d3dkmt_obj o;
    D3DKMT_HANDLE sync;             /* its monitored fence */
};

struct d3dkmt_allocation {
    struct d3dkmt_obj o;
    uint32_t locks;
};

struct d3dkmt_context {
    struct d3dkmt_obj o;
    uint64_t last_fence;            /* context fence of its last submission */
};

/* A GPU signal not yet seen: the object takes value once the context
 * fence reaches ctx_fence. */
struct d3dkmt_pending {
    uint64_t seq;
    struct d3dkmt_adapter *adapter;
    vidmm_handle ctx;
    uint64_t ctx_fence;
    uint64_t value;
};

#define SYNC_MONITORED 1u
#define SYNC_PAGING    2u          /* a paging queue's fence (o.vh = the queue) */

struct d3dkmt_sync {
    struct d3dkmt_obj o;
    uint32_t kind;
    uint64_t *cpu_value;            /* FenceValueCPUVirtualAddress */
    struct d3dkmt_pending *pending;
    uint32_t npending, cap;
};

struct d3dkmt_trim_reg {
    uintptr_t id;
    struct d3dkmt_adapter *adapter;
    vidmm_handle vdev;
    D3DKMT_HANDLE device;
    PFND3DKMT_TRIMNOTIFICATIONCALLBACK callback;
    void *context;
};

struct d3dkmt_entry {
    D3DKMT_HANDLE handle;        /* the handle it was given (0 while free) */
    uint32_t type;
    void *obj;
};

/* The handle index: (handle, slot) in increasing handle order, since
 * handles only grow; a removed one keeps its place with slot
 * D3DKMT_INDEX_DEAD until the index is compacted. */
#define D3DKMT_INDEX_DEAD 0xFFFFFFFFu
struct d3dkmt_index {
    D3DKMT_HANDLE handle;
    uint32_t slot;
};

struct d3dkmt_runtime {
    struct vidmm_host_allocator ha;
    pthread_mutex_t lock;
    pthread_cond_t fence_cv;
    struct d3dkmt_adapter adapters[D3DKMT_MAX_ADAPTERS];
    uint32_t adapter_count;
    struct d3dkmt_entry *entries;
    uint32_t capacity, used, hint;
    struct d3dkmt_index *index;
    uint32_t index_n, index_cap, index_dead;
    D3DKMT_HANDLE next_handle;   /* the next local handle (docs/D3DKMT.md "Handles") */
    struct d3dkmt_trim_reg *regs;
    uint32_t nregs, regs_cap;
    uintptr_t next_reg_id;
    uint64_t next_seq;
};

/* runtime.c */
struct d3dkmt_runtime *d3dkmt_rt(void);
struct d3dkmt_runtime *d3dkmt_thread_bound(void);
void *d3dkmt_alloc(struct d3dkmt_runtime *rt, size_t size);
void d3dkmt_free(struct d3dkmt_runtime *rt, void *p, size_t size);
/* Under rt->lock. */
NTSTATUS d3dkmt_insert(struct d3dkmt_runtime *rt, uint32_t type, void *obj, D3DKMT_HANDLE *out);
void *d3dkmt_lookup(struct d3dkmt_runtime *rt, D3DKMT_HANDLE h, uint32_t type);
void d3dkmt_remove(struct d3dkmt_runtime *rt, D3DKMT_HANDLE h);
size_t d3dkmt_obj_size(uint32_t type);
void d3dkmt_obj_free(struct d3dkmt_runtime *rt, void *obj);
/* Adapters: STATUS_INVALID_PARAMETER when luid is taken or the table is
 * full; register fills the next slot (release(owner) at close). */
NTSTATUS d3dkmt_luid_check(struct d3dkmt_runtime *rt, LUID luid);
NTSTATUS d3dkmt_adapter_register(struct d3dkmt_runtime *rt, const struct d3dkmt_backend *be, struct vidmm_adapter *va,
                                 struct vidmm_client *conn, vidmm_handle process, LUID luid,
                                 void (*release)(void *owner), void *owner);
NTSTATUS d3dkmt_nt(vidmm_status st);
/* Thunk-side helpers (d3dkmt/device.c) used by the runtime's close. */
void d3dkmt_destroy_device_locked_out(struct d3dkmt_runtime *rt, D3DKMT_HANDLE device);
/* sync.c */
void d3dkmt_trim_trampoline(void *context, vidmm_handle device, uint32_t flags, uint64_t bytes_to_trim);
NTSTATUS d3dkmt_sync_create_locked(struct d3dkmt_runtime *rt, struct d3dkmt_adapter *ad, D3DKMT_HANDLE device,
                                   uint32_t kind, vidmm_handle queue, uint64_t initial, D3DKMT_HANDLE *out);
void d3dkmt_regs_drop_device(struct d3dkmt_runtime *rt, D3DKMT_HANDLE device);

#endif
