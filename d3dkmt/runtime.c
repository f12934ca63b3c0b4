/*
 * runtime.c - the thunk runtime: one process's handle tables, its
 * adapters, which runtime a thread's thunks act on, and the mapping of
 * vidmm statuses to NTSTATUS (docs/D3DKMT.md, docs/DECISIONS.md D47).
 */
#include "internal.h"

#include <stdatomic.h>
#include <string.h>

/* The one piece of process-wide state (D47): which runtime the thunks
 * of a thread act on.  Everything else lives in the runtime. */
static _Atomic(struct d3dkmt_runtime *) g_process_runtime;
static _Thread_local struct d3dkmt_runtime *t_thread_runtime;

struct d3dkmt_runtime *d3dkmt_rt(void)
{
    struct d3dkmt_runtime *rt = t_thread_runtime;
    return rt ? rt : atomic_load(&g_process_runtime);
}

struct d3dkmt_runtime *d3dkmt_thread_bound(void)
{
    return t_thread_runtime;
}

struct d3dkmt_runtime *d3dkmt_runtime_current(void)
{
    return d3dkmt_rt();
}

NTSTATUS d3dkmt_runtime_make_current(struct d3dkmt_runtime *rt)
{
    atomic_store(&g_process_runtime, rt);
    return STATUS_SUCCESS;
}

NTSTATUS d3dkmt_runtime_bind_thread(struct d3dkmt_runtime *rt)
{
    t_thread_runtime = rt;
    return STATUS_SUCCESS;
}

void *d3dkmt_alloc(struct d3dkmt_runtime *rt, size_t size)
{
    void *p;
    if (size == 0)
        size = 1;
    p = rt->ha.alloc(rt->ha.user_data, size, 16);
    if (p)
        memset(p, 0, size);
    return p;
}

void d3dkmt_free(struct d3dkmt_runtime *rt, void *p, size_t size)
{
    if (p)
        rt->ha.free(rt->ha.user_data, p, size ? size : 1, 16);
}

/* ---- statuses ---------------------------------------------------------- */

/* Indexed by -status for failures; docs/D3DKMT.md "Statuses" is this
 * table (tests/d3dkmt checks that every vidmm status has a row). */
static const NTSTATUS k_failures[] = {
    [0] = STATUS_SUCCESS,
    [1] = STATUS_INVALID_PARAMETER,              /* VIDMM_E_INVALID_ARG */
    [2] = STATUS_INVALID_HANDLE,                 /* VIDMM_E_INVALID_HANDLE */
    [3] = STATUS_NO_MEMORY,                      /* VIDMM_E_NO_HOST_MEMORY */
    [4] = STATUS_GRAPHICS_NO_VIDEO_MEMORY,       /* VIDMM_E_NO_SEGMENT_SPACE */
    [5] = STATUS_INTEGER_OVERFLOW,               /* VIDMM_E_OVERFLOW */
    [6] = STATUS_DATATYPE_MISALIGNMENT,          /* VIDMM_E_ALIGNMENT */
    [7] = STATUS_INVALID_PARAMETER,              /* VIDMM_E_BAD_SEGMENT_SET */
    [8] = STATUS_GRAPHICS_INVALID_DRIVER_MODEL,  /* VIDMM_E_BAD_DRIVER_DESC */
    [9] = STATUS_UNSUCCESSFUL,                   /* VIDMM_E_DRIVER_FAILURE */
    [10] = STATUS_NOT_SUPPORTED,                 /* VIDMM_E_NOT_SUPPORTED */
    [11] = STATUS_DEVICE_BUSY,                   /* VIDMM_E_BUSY */
    [12] = STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER, /* VIDMM_E_INSUFFICIENT_DMA_BUFFER */
    [13] = STATUS_GRAPHICS_ALLOCATION_BUSY,      /* VIDMM_E_ALLOCATION_BUSY */
    [14] = STATUS_GRAPHICS_NO_VIDEO_MEMORY,      /* VIDMM_E_TOO_LARGE */
    [15] = STATUS_GRAPHICS_NO_VIDEO_MEMORY,      /* VIDMM_E_COMMIT_LIMIT */
    [16] = STATUS_INVALID_DEVICE_STATE,          /* VIDMM_E_STATE */
    [17] = STATUS_DEVICE_REMOVED,                /* VIDMM_E_DEVICE_LOST */
    [18] = STATUS_TIMEOUT,                       /* VIDMM_E_TIMEOUT */
    [19] = STATUS_DEVICE_REMOVED,                /* VIDMM_E_PAGE_FAULT */
    [20] = STATUS_NO_MEMORY,                     /* VIDMM_E_OVER_BUDGET */
    [21] = STATUS_INVALID_PARAMETER,             /* VIDMM_E_NOT_ACCESSED_PHYSICALLY */
    [22] = STATUS_INTERNAL_ERROR,                /* VIDMM_E_INTERNAL */
    [23] = STATUS_BUFFER_TOO_SMALL,              /* VIDMM_E_BUFFER_TOO_SMALL */
};

NTSTATUS d3dkmt_nt(vidmm_status st)
{
    switch (st) {
    case VIDMM_OK:
        return STATUS_SUCCESS;
    case VIDMM_PENDING:
        return STATUS_PENDING;
    case VIDMM_NO_MORE:
        return STATUS_NO_MORE_ENTRIES;
    default:
        break;
    }
    if ((int)st < 0 && (size_t)(-(int)st) < sizeof k_failures / sizeof k_failures[0])
        return k_failures[-(int)st];
    return STATUS_INTERNAL_ERROR;
}

NTSTATUS d3dkmt_ntstatus_from_vidmm(int status)
{
    return d3dkmt_nt((vidmm_status)status);
}

/* ---- the handle table -------------------------------------------------- */

/* Local D3DKMT handles as Windows gives them (Wine's conformance tests
 * record it): at least one of bits 0xC0000000 set, the low 6 bits zero,
 * each new handle the previous plus 0x40 - one counter for every kind of
 * object - and a value never given twice.  Global (shared) handles, which
 * this front end does not make, are the ones with (h & 0x3F) == 2, so a
 * layer above can tell them apart.  Objects live in slots (reused); the
 * index maps a handle to its slot by binary search. */
#define H_FIRST 0x40000040u
#define H_STEP  0x40u

static int index_find(const struct d3dkmt_runtime *rt, D3DKMT_HANDLE h, uint32_t *at)
{
    uint32_t lo = 0, hi = rt->index_n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2u;
        if (rt->index[mid].handle < h)
            lo = mid + 1u;
        else
            hi = mid;
    }
    *at = lo;
    return lo < rt->index_n && rt->index[lo].handle == h && rt->index[lo].slot != D3DKMT_INDEX_DEAD;
}

/* Drop the removed handles' places (order is kept). */
static void index_compact(struct d3dkmt_runtime *rt)
{
    uint32_t i, n = 0;
    for (i = 0; i < rt->index_n; i++)
        if (rt->index[i].slot != D3DKMT_INDEX_DEAD)
            rt->index[n++] = rt->index[i];
    rt->index_n = n;
    rt->index_dead = 0;
}

static NTSTATUS index_append(struct d3dkmt_runtime *rt, D3DKMT_HANDLE h, uint32_t slot)
{
    if (rt->index_n == rt->index_cap && rt->index_dead)
        index_compact(rt);
    if (rt->index_n == rt->index_cap) {
        uint32_t ncap = rt->index_cap ? rt->index_cap * 2u : 64u;
        struct d3dkmt_index *ni = d3dkmt_alloc(rt, ncap * sizeof *ni);
        if (!ni)
            return STATUS_NO_MEMORY;
        if (rt->index)
            memcpy(ni, rt->index, rt->index_n * sizeof *ni);
        d3dkmt_free(rt, rt->index, rt->index_cap * sizeof *ni);
        rt->index = ni;
        rt->index_cap = ncap;
    }
    rt->index[rt->index_n].handle = h;
    rt->index[rt->index_n].slot = slot;
    rt->index_n++;
    return STATUS_SUCCESS;
}

NTSTATUS d3dkmt_insert(struct d3dkmt_runtime *rt, uint32_t type, void *obj, D3DKMT_HANDLE *out)
{
    uint32_t i, slot = UINT32_MAX;
    if (!rt->next_handle)
        rt->next_handle = H_FIRST;
    if (rt->next_handle < H_FIRST)   /* the counter wrapped: every value was given once */
        return STATUS_NO_MEMORY;
    if (rt->used == rt->capacity) {
        uint32_t ncap = rt->capacity ? rt->capacity * 2u : 64u;
        struct d3dkmt_entry *ne;
        ne = d3dkmt_alloc(rt, ncap * sizeof *ne);
        if (!ne)
            return STATUS_NO_MEMORY;
        memset(ne, 0, ncap * sizeof *ne);
        if (rt->entries)
            memcpy(ne, rt->entries, rt->capacity * sizeof *ne);
        d3dkmt_free(rt, rt->entries, rt->capacity * sizeof *ne);
        rt->hint = rt->capacity;
        rt->entries = ne;
        rt->capacity = ncap;
    }
    for (i = 0; i < rt->capacity; i++) {
        uint32_t s = (rt->hint + i) % rt->capacity;
        if (rt->entries[s].type == T_FREE) {
            slot = s;
            break;
        }
    }
    if (slot == UINT32_MAX)
        return STATUS_INTERNAL_ERROR;
    if (index_append(rt, rt->next_handle, slot) != STATUS_SUCCESS)
        return STATUS_NO_MEMORY;
    rt->entries[slot].handle = rt->next_handle;
    rt->entries[slot].type = type;
    rt->entries[slot].obj = obj;
    rt->used++;
    rt->hint = slot + 1u;
    *out = rt->next_handle;
    rt->next_handle += H_STEP;
    if (type != T_ADAPTER)
        ((struct d3dkmt_obj *)obj)->handle = *out;
    return STATUS_SUCCESS;
}

void *d3dkmt_lookup(struct d3dkmt_runtime *rt, D3DKMT_HANDLE h, uint32_t type)
{
    const struct d3dkmt_entry *e;
    uint32_t at;
    if (!(h & 0xC0000000u) || (h & 0x3Fu) || !index_find(rt, h, &at))
        return NULL;
    e = &rt->entries[rt->index[at].slot];
    return e->type == type && e->handle == h ? e->obj : NULL;
}

void d3dkmt_remove(struct d3dkmt_runtime *rt, D3DKMT_HANDLE h)
{
    struct d3dkmt_entry *e;
    uint32_t at;
    if (!index_find(rt, h, &at))
        return;
    e = &rt->entries[rt->index[at].slot];
    rt->index[at].slot = D3DKMT_INDEX_DEAD;
    rt->index_dead++;
    if (rt->index_dead * 2u > rt->index_n)
        index_compact(rt);
    e->type = T_FREE;
    e->obj = NULL;
    e->handle = 0;
    rt->used--;
}

size_t d3dkmt_obj_size(uint32_t type)
{
    switch (type) {
    case T_DEVICE:
        return sizeof(struct d3dkmt_obj);
    case T_QUEUE:
        return sizeof(struct d3dkmt_queue);
    case T_ALLOCATION:
        return sizeof(struct d3dkmt_allocation);
    case T_CONTEXT:
        return sizeof(struct d3dkmt_context);
    case T_SYNC:
        return sizeof(struct d3dkmt_sync);
    default:
        return 0;
    }
}

void d3dkmt_obj_free(struct d3dkmt_runtime *rt, void *obj)
{
    struct d3dkmt_obj *o = obj;
    if (!o)
        return;
    if (o->type == T_SYNC) {
        struct d3dkmt_sync *s = obj;
        d3dkmt_free(rt, s->cpu_value, sizeof *s->cpu_value);
        d3dkmt_free(rt, s->pending, s->cap * sizeof *s->pending);
    }
    d3dkmt_free(rt, obj, d3dkmt_obj_size(o->type));
}

/* ---- open, close, adapters --------------------------------------------- */

NTSTATUS d3dkmt_runtime_open(const struct d3dkmt_runtime_create_info *info, struct d3dkmt_runtime **out)
{
    const struct vidmm_host_allocator *ha;
    struct d3dkmt_runtime *rt;
    pthread_mutexattr_t ma;
    if (!info || !out || info->abi_version != D3DKMT_RUNTIME_ABI_VERSION)
        return STATUS_INVALID_PARAMETER;
    ha = info->host_allocator ? info->host_allocator : vidmm_default_host_allocator();
    if (!ha->alloc || !ha->free)
        return STATUS_INVALID_PARAMETER;
    rt = ha->alloc(ha->user_data, sizeof *rt, 16);
    if (!rt)
        return STATUS_NO_MEMORY;
    memset(rt, 0, sizeof *rt);
    rt->ha = *ha;
    rt->next_reg_id = 1;
    rt->next_seq = 1;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
    if (pthread_mutex_init(&rt->lock, &ma) != 0) {
        pthread_mutexattr_destroy(&ma);
        ha->free(ha->user_data, rt, sizeof *rt, 16);
        return STATUS_NO_MEMORY;
    }
    pthread_mutexattr_destroy(&ma);
    if (pthread_cond_init(&rt->fence_cv, NULL) != 0) {
        pthread_mutex_destroy(&rt->lock);
        ha->free(ha->user_data, rt, sizeof *rt, 16);
        return STATUS_NO_MEMORY;
    }
    *out = rt;
    return STATUS_SUCCESS;
}

/* STATUS_INVALID_PARAMETER when luid is in use or the table is full. */
NTSTATUS d3dkmt_luid_check(struct d3dkmt_runtime *rt, LUID luid)
{
    NTSTATUS st = STATUS_SUCCESS;
    uint32_t i;
    pthread_mutex_lock(&rt->lock);
    if (rt->adapter_count == D3DKMT_MAX_ADAPTERS)
        st = STATUS_INVALID_PARAMETER;
    for (i = 0; i < rt->adapter_count; i++)
        if (rt->adapters[i].live && rt->adapters[i].luid.LowPart == luid.LowPart &&
            rt->adapters[i].luid.HighPart == luid.HighPart)
            st = STATUS_INVALID_PARAMETER;
    pthread_mutex_unlock(&rt->lock);
    return st;
}

NTSTATUS d3dkmt_adapter_register(struct d3dkmt_runtime *rt, const struct d3dkmt_backend *be, struct vidmm_adapter *va,
                                 struct vidmm_client *conn, vidmm_handle process, LUID luid,
                                 void (*release)(void *owner), void *owner)
{
    struct d3dkmt_adapter *ad;
    pthread_mutex_lock(&rt->lock);
    /* Checked again under the lock: another thread may have added one. */
    if (d3dkmt_luid_check(rt, luid) != STATUS_SUCCESS) {
        pthread_mutex_unlock(&rt->lock);
        return STATUS_INVALID_PARAMETER;
    }
    ad = &rt->adapters[rt->adapter_count++];
    memset(ad, 0, sizeof *ad);
    ad->rt = rt;
    ad->be = be;
    ad->va = va;
    ad->conn = conn;
    ad->luid = luid;
    ad->process = process;
    ad->release = release;
    ad->owner = owner;
    ad->live = 1;
    pthread_mutex_unlock(&rt->lock);
    return STATUS_SUCCESS;
}

NTSTATUS d3dkmt_runtime_add_adapter(struct d3dkmt_runtime *rt, struct vidmm_adapter *adapter, LUID luid)
{
    vidmm_handle process = 0;
    vidmm_status st;
    NTSTATUS nt;
    if (!rt || !adapter || (luid.LowPart == 0 && luid.HighPart == 0))
        return STATUS_INVALID_PARAMETER;
    nt = d3dkmt_luid_check(rt, luid);
    if (nt != STATUS_SUCCESS)
        return nt;
    st = vidmm_process_create(adapter, &process);
    if (st < 0)
        return d3dkmt_nt(st);
    nt = d3dkmt_adapter_register(rt, &d3dkmt_backend_vidmm, adapter, NULL, process, luid, NULL, NULL);
    if (nt != STATUS_SUCCESS)
        vidmm_process_destroy(adapter, process);
    return nt;
}

void d3dkmt_runtime_close(struct d3dkmt_runtime *rt)
{
    struct vidmm_host_allocator ha;
    uint32_t i;
    if (!rt)
        return;
    /* Devices first (their children go with them), then whatever is left. */
    for (i = 0; i < rt->capacity; i++) {
        if (rt->entries[i].type == T_DEVICE) {
            struct d3dkmt_obj *o = rt->entries[i].obj;
            d3dkmt_destroy_device_locked_out(rt, o->handle);
        }
    }
    for (i = 0; i < rt->capacity; i++) {
        if (rt->entries[i].type != T_FREE && rt->entries[i].type != T_ADAPTER)
            d3dkmt_obj_free(rt, rt->entries[i].obj);
        rt->entries[i].type = T_FREE;
    }
    for (i = 0; i < rt->adapter_count; i++) {
        struct d3dkmt_adapter *ad = &rt->adapters[i];
        if (!ad->live)
            continue;
        ad->be->process_destroy(ad, ad->process);
        if (ad->release)
            ad->release(ad->owner);
        ad->live = 0;
    }
    if (atomic_load(&g_process_runtime) == rt)
        atomic_store(&g_process_runtime, NULL);
    if (t_thread_runtime == rt)
        t_thread_runtime = NULL;
    d3dkmt_free(rt, rt->entries, rt->capacity * sizeof *rt->entries);
    d3dkmt_free(rt, rt->index, rt->index_cap * sizeof *rt->index);
    d3dkmt_free(rt, rt->regs, rt->regs_cap * sizeof *rt->regs);
    pthread_cond_destroy(&rt->fence_cv);
    pthread_mutex_destroy(&rt->lock);
    ha = rt->ha;
    ha.free(ha.user_data, rt, sizeof *rt, 16);
}

NTSTATUS d3dkmt_runtime_vidmm_process(struct d3dkmt_runtime *rt, LUID luid, struct vidmm_adapter **adapter,
                                      UINT64 *process)
{
    NTSTATUS st = STATUS_INVALID_PARAMETER;
    uint32_t i;
    if (!rt || !process || !adapter)
        return STATUS_INVALID_PARAMETER;
    pthread_mutex_lock(&rt->lock);
    for (i = 0; i < rt->adapter_count; i++)
        if (rt->adapters[i].live && rt->adapters[i].luid.LowPart == luid.LowPart &&
            rt->adapters[i].luid.HighPart == luid.HighPart) {
            *process = rt->adapters[i].process;
            *adapter = rt->adapters[i].va;
            /* A remote adapter has no library adapter in this process
             * (d3dkmt_runtime_vidmm_client is its counterpart). */
            st = rt->adapters[i].va ? STATUS_SUCCESS : STATUS_NOT_SUPPORTED;
        }
    pthread_mutex_unlock(&rt->lock);
    return st;
}
