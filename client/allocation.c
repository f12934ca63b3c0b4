/*
 * client/allocation.c - libvidmm-client's allocations: create and
 * destroy, CPU locks (the daemon's memfd mapped here, kept while any
 * lock holds it), residency, priorities, offer and reclaim, budgets and
 * reservations, sharing by descriptor, GPU virtual addresses.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

vidmm_status vidmm_client_device_allocation_create(struct vidmm_client *c, vidmm_handle device,
                                                   const void *priv, size_t priv_size, uint32_t flags,
                                                   vidmm_handle *out)
{
    if (!out || (priv_size && !priv))
        return VIDMM_E_INVALID_ARG;
    if (priv_size > VMMD_MAX_PRIVATE_DATA)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    struct vmmd_req_alloc_create m = { device, flags, (uint32_t)priv_size };
    if (priv_size)
        memcpy(P + VMMD_REQ_ALLOC_CREATE_SIZE, priv, priv_size);
    vidmm_status st = PUT_REQ(c, ALLOC_CREATE, alloc_create, &m, priv_size);
    struct vmmd_rep_alloc_create rm = { 0 };
    if (st >= 0)
        *out = GET_REP(c, ALLOC_CREATE, alloc_create, &rm) ? rm.allocation : 0;
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_allocation_create2(struct vidmm_client *c, const void *priv, size_t priv_size,
                                             uint32_t flags, vidmm_handle *out)
{
    return vidmm_client_device_allocation_create(c, 0, priv, priv_size, flags, out);
}

vidmm_status vidmm_client_allocation_create(struct vidmm_client *c, const void *priv, size_t priv_size,
                                            vidmm_handle *out)
{
    return vidmm_client_device_allocation_create(c, 0, priv, priv_size, VIDMM_CREATE_RESIDENT, out);
}

static struct mapping *find_map(struct vidmm_client *c, vidmm_handle h)
{
    for (size_t i = 0; i < c->nmaps; i++)
        if (c->maps[i].h == h)
            return &c->maps[i];
    return NULL;
}

static void drop_map(struct vidmm_client *c, struct mapping *m)
{
    munmap(m->p, m->size);
    *m = c->maps[--c->nmaps];
}

vidmm_status vidmm_client_allocation_destroy(struct vidmm_client *c, vidmm_handle h)
{
    ENTER(c);
    vidmm_status st = vmmc_call_h(c, VMMD_OP_ALLOC_DESTROY, h, 8, NULL);
    struct mapping *m;
    if (st >= 0 && (m = find_map(c, h)) != NULL)
        drop_map(c, m);
    LEAVE(c, st);
}

vidmm_status vidmm_client_allocation_lock(struct vidmm_client *c, vidmm_handle h, void **cpu_address)
{
    if (!cpu_address)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vidmm_status st = vmmc_call_h(c, VMMD_OP_LOCK, h, 8, NULL);
    if (st < 0 || c->broken)
        LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
    struct vmmd_rep_lock rm;
    if (!GET_REP(c, LOCK, lock, &rm))
        LEAVE(c, VIDMM_E_DEVICE_LOST);
    uint64_t size = rm.size;
    struct mapping *m = find_map(c, h);
    if (c->reply_fd < 0) {   /* nested lock: the mapping we have */
        if (!m || !m->locks) {
            vmmc_fail_conn(c);
            LEAVE(c, VIDMM_E_DEVICE_LOST);
        }
        m->locks++;
        *cpu_address = m->p;
        LEAVE(c, st);
    }
    if (m)                   /* the copy of an earlier lock: retired now */
        drop_map(c, m);
    if (c->nmaps == c->mcap) {
        size_t ncap = c->mcap ? c->mcap * 2 : 16;
        struct mapping *n = realloc(c->maps, ncap * sizeof *n);
        if (!n)
            goto undo;
        c->maps = n;
        c->mcap = ncap;
    }
    void *p = size && size <= SIZE_MAX ? mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, c->reply_fd, 0)
                                       : MAP_FAILED;
    if (p == MAP_FAILED)
        goto undo;
    c->maps[c->nmaps].h = h;
    c->maps[c->nmaps].p = p;
    c->maps[c->nmaps].size = size;
    c->maps[c->nmaps].locks = 1;
    c->nmaps++;
    *cpu_address = p;
    LEAVE(c, st);
undo:
    /* The daemon holds the lock: give it back, then fail as the host would. */
    close(c->reply_fd);
    c->reply_fd = -1;
    (void)vmmc_call_h(c, VMMD_OP_UNLOCK, h, 8, NULL);
    LEAVE(c, VIDMM_E_NO_HOST_MEMORY);
}

vidmm_status vidmm_client_allocation_unlock(struct vidmm_client *c, vidmm_handle h)
{
    ENTER(c);
    vidmm_status st = vmmc_call_h(c, VMMD_OP_UNLOCK, h, 8, NULL);
    struct mapping *m;
    if (st >= 0 && (m = find_map(c, h)) != NULL && m->locks)
        m->locks--;   /* at 0 the copy stays mapped, the daemon's side is gone */
    LEAVE(c, st);
}

vidmm_status vidmm_client_allocation_query(struct vidmm_client *c, vidmm_handle h,
                                           struct vidmm_client_allocation_info *out)
{
    if (!out)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vidmm_status st = vmmc_call_h(c, VMMD_OP_ALLOC_QUERY, h, 8, NULL);
    struct vmmd_rep_alloc_query m;
    if (st >= 0 && GET_REP(c, ALLOC_QUERY, alloc_query, &m)) {
        out->size = m.size;
        out->requested_size = m.requested_size;
        out->alignment = m.alignment;
        out->flags = m.flags;
        out->segment_id = m.segment_id;
        out->supported_segment_set = m.supported_segment_set;
        out->preferred_segment = m.preferred_segment;
        out->lock_count = m.lock_count;
        out->resident = m.resident;
        out->moves = m.moves;
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

/* ---- priorities, offer and reclaim, reservations, budgets --------------------- */

vidmm_status vidmm_client_allocation_set_priority(struct vidmm_client *c, vidmm_handle allocation, uint32_t priority)
{
    ENTER(c);
    struct vmmd_req_alloc_set_priority m = { allocation, priority, 0 };
    vidmm_status st = PUT_REQ(c, ALLOC_SET_PRIORITY, alloc_set_priority, &m, 0);
    LEAVE(c, st);
}

vidmm_status vidmm_client_make_resident(struct vidmm_client *c, vidmm_handle device,
                                        struct vidmm_make_resident_args *args)
{
    if (!args || (args->count && !args->allocations))
        return VIDMM_E_INVALID_ARG;
    if (args->count > VMMD_MAX_LIST)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    struct vmmd_req_make_resident m = { device, args->paging_queue, args->flags, args->count };
    put_handles(c, VMMD_REQ_MAKE_RESIDENT_SIZE, args->allocations, args->count);
    vidmm_status st = PUT_REQ(c, MAKE_RESIDENT, make_resident, &m, 8 * (size_t)args->count);
    if (!c->broken && c->rn >= VMMD_REP_MAKE_RESIDENT_SIZE) {
        struct vmmd_rep_make_resident rm;
        vmmd_get_rep_make_resident(c->rp, &rm);
        args->paging_fence_value = rm.paging_fence_value;
        args->bytes_to_trim = rm.bytes_to_trim;
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_evict(struct vidmm_client *c, vidmm_handle device, struct vidmm_evict_args *args)
{
    if (!args || (args->count && !args->allocations))
        return VIDMM_E_INVALID_ARG;
    if (args->count > VMMD_MAX_LIST)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    struct vmmd_req_evict m = { device, args->flags, args->count };
    put_handles(c, VMMD_REQ_EVICT_SIZE, args->allocations, args->count);
    vidmm_status st = PUT_REQ(c, EVICT, evict, &m, 8 * (size_t)args->count);
    if (!c->broken && c->rn >= VMMD_REP_EVICT_SIZE) {
        struct vmmd_rep_evict rm;
        vmmd_get_rep_evict(c->rp, &rm);
        args->bytes_to_trim = rm.bytes_to_trim;
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}


vidmm_status vidmm_client_offer(struct vidmm_client *c, vidmm_handle device, const vidmm_handle *allocations,
                                uint32_t count, uint32_t offer_priority)
{
    if ((count && !allocations) || count > VMMD_MAX_LIST)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    struct vmmd_req_offer m = { device, offer_priority, count };
    put_handles(c, VMMD_REQ_OFFER_SIZE, allocations, count);
    vidmm_status st = PUT_REQ(c, OFFER, offer, &m, 8 * (size_t)count);
    LEAVE(c, st);
}

vidmm_status vidmm_client_reclaim(struct vidmm_client *c, vidmm_handle paging_queue, const vidmm_handle *allocations,
                                  uint32_t count, uint32_t *results, uint64_t *paging_fence_value)
{
    if ((count && (!allocations || !results)) || count > VMMD_MAX_LIST)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    struct vmmd_req_reclaim m = { paging_queue, 0, count };
    put_handles(c, VMMD_REQ_RECLAIM_SIZE, allocations, count);
    vidmm_status st = PUT_REQ(c, RECLAIM, reclaim, &m, 8 * (size_t)count);
    if (!c->broken && st >= 0 && c->rn != VMMD_REP_RECLAIM_SIZE + 4 * (size_t)count)
        vmmc_fail_conn(c);   /* the daemon answered another list */
    if (!c->broken && st >= 0) {
        struct vmmd_rep_reclaim rm;
        vmmd_get_rep_reclaim(c->rp, &rm);
        if (paging_fence_value)
            *paging_fence_value = rm.paging_fence_value;
        for (uint32_t i = 0; i < count; i++)
            results[i] = vmmd_get32(c->rp + VMMD_REP_RECLAIM_SIZE + 4 * (size_t)i);
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_query_video_memory_info(struct vidmm_client *c, enum vidmm_segment_group group,
                                                  struct vidmm_video_memory_info *out)
{
    if (!out)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    struct vmmd_req_query_vidmem m = { (uint32_t)group, 0 };
    vidmm_status st = PUT_REQ(c, QUERY_VIDMEM, query_vidmem, &m, 0);
    struct vmmd_rep_query_vidmem rm;
    if (st >= 0 && GET_REP(c, QUERY_VIDMEM, query_vidmem, &rm)) {
        out->budget = rm.budget;
        out->current_usage = rm.current_usage;
        out->current_reservation = rm.current_reservation;
        out->available_for_reservation = rm.available_for_reservation;
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}


vidmm_status vidmm_client_change_video_memory_reservation(struct vidmm_client *c, enum vidmm_segment_group group,
                                                          uint64_t reservation)
{
    ENTER(c);
    struct vmmd_req_change_reservation m = { (uint32_t)group, 0, reservation };
    vidmm_status st = PUT_REQ(c, CHANGE_RESERVATION, change_reservation, &m, 0);
    LEAVE(c, st);
}

vidmm_status vidmm_client_process_set_budget(struct vidmm_client *c, enum vidmm_segment_group group, uint64_t budget)
{
    ENTER(c);
    struct vmmd_req_process_set_budget m = { (uint32_t)group, 0, budget };
    vidmm_status st = PUT_REQ(c, PROCESS_SET_BUDGET, process_set_budget, &m, 0);
    LEAVE(c, st);
}

/* ---- shared allocations ----------------------------------------------------- */

vidmm_status vidmm_client_share_export(struct vidmm_client *c, vidmm_handle allocation, int *fd)
{
    if (!fd)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vidmm_status st = vmmc_call_h(c, VMMD_OP_SHARE_EXPORT, allocation, 8, NULL);
    if (st >= 0 && c->reply_fd < 0) {
        vmmc_fail_conn(c);   /* a successful export always carries its descriptor */
        st = VIDMM_E_DEVICE_LOST;
    }
    if (st >= 0) {
        *fd = c->reply_fd;   /* the caller's now */
        c->reply_fd = -1;
    }
    LEAVE(c, st);
}

vidmm_status vidmm_client_share_open(struct vidmm_client *c, int fd, vidmm_handle *allocation)
{
    if (fd < 0 || !allocation)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    c->send_fd = fd;   /* sent with the request, still the caller's */
    uint64_t h = 0;
    vidmm_status st = vmmc_call_h(c, VMMD_OP_SHARE_OPEN, 0, 0, &h);
    if (st >= 0)
        *allocation = h;
    LEAVE(c, st);
}

vidmm_status vidmm_client_share_query(struct vidmm_client *c, vidmm_handle allocation,
                                      struct vidmm_client_share_info *out)
{
    if (!out)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vidmm_status st = vmmc_call_h(c, VMMD_OP_SHARE_QUERY, allocation, 8, NULL);
    struct vmmd_rep_share_query m;
    if (st >= 0 && GET_REP(c, SHARE_QUERY, share_query, &m)) {
        memset(out, 0, sizeof *out);
        out->holders = m.holders;
        out->creator_holds = m.creator_holds;
        out->is_creator = m.is_creator;
    } else if (st >= 0) {
        st = VIDMM_E_DEVICE_LOST;
    }
    LEAVE(c, st);
}

vidmm_status vidmm_client_gpuva_reserve(struct vidmm_client *c, uint64_t base, uint64_t min, uint64_t max,
                                        uint64_t size, unsigned mode, uint64_t *va)
{
    if (!va)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    struct vmmd_req_gpuva_reserve m = { base, min, max, size, mode, 0 };
    vidmm_status st = PUT_REQ(c, GPUVA_RESERVE, gpuva_reserve, &m, 0);
    struct vmmd_rep_gpuva_reserve rm = { 0 };
    if (st >= 0)
        *va = GET_REP(c, GPUVA_RESERVE, gpuva_reserve, &rm) ? rm.va : 0;
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_gpuva_map(struct vidmm_client *c, uint64_t base, uint64_t min, uint64_t max,
                                    vidmm_handle allocation, uint64_t offset, uint64_t size, unsigned protection,
                                    uint64_t driver_protection, uint64_t *va)
{
    if (!va)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    struct vmmd_req_gpuva_map m = { base, min, max, allocation, offset, size, driver_protection, protection, 0 };
    vidmm_status st = PUT_REQ(c, GPUVA_MAP, gpuva_map, &m, 0);
    struct vmmd_rep_gpuva_map rm = { 0 };
    if (st >= 0)
        *va = GET_REP(c, GPUVA_MAP, gpuva_map, &rm) ? rm.va : 0;
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_gpuva_free(struct vidmm_client *c, uint64_t va, uint64_t size)
{
    ENTER(c);
    struct vmmd_req_gpuva_free m = { va, size };
    vidmm_status st = PUT_REQ(c, GPUVA_FREE, gpuva_free, &m, 0);
    LEAVE(c, st);
}

/* ---- GPU virtual addresses: update batches ------------------------------------- */

vidmm_status vidmm_client_gpuva_update(struct vidmm_client *c, const struct vidmm_gpuva_update_op *ops, uint32_t count)
{
    if ((count && !ops) || count > VMMD_MAX_GPUVA_OPS)
        return VIDMM_E_INVALID_ARG;   /* past one message: the library's limit is 4,096 */
    ENTER(c);
    for (uint32_t i = 0; i < count; i++) {
        const struct vidmm_gpuva_update_op *o = &ops[i];
        struct vmmd_rec_gpuva_op w = { o->type, o->protection, o->va, o->size, o->allocation, o->offset,
                                       o->driver_protection, o->unmap_mode, o->reserved, o->source };
        vmmd_put_rec_gpuva_op(P + VMMD_REQ_GPUVA_UPDATE_SIZE + (size_t)i * VMMD_GPUVA_OP_SIZE, &w);
    }
    struct vmmd_req_gpuva_update m = { count, 0 };
    vidmm_status st = PUT_REQ(c, GPUVA_UPDATE, gpuva_update, &m, (size_t)count * VMMD_GPUVA_OP_SIZE);
    LEAVE(c, st);
}
