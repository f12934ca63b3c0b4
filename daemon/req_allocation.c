/*
 * daemon/req_allocation.c - the requests on allocations: create and
 * destroy (against the connection's byte and handle limits), residency
 * (MAKE_RESIDENT, EVICT, offer and reclaim, priority), budgets and
 * reservations, the allocation query, and GPU virtual addresses.
 */
#define _GNU_SOURCE
#include "server_internal.h"

/* A new allocation h of the connection: counted against its limit, then
 * given a handle; destroyed again when either fails. */
static vidmm_status adopt_allocation(struct req *x, vidmm_handle h, uint32_t *aslot)
{
    struct vmmd_server *s = x->s;
    struct vmmd_client *c = x->c;
    /* The size is the driver's answer: known only once created. */
    struct vidmm_allocation_state as;
    memset(&as, 0, sizeof as);
    vidmm_status ast = vidmm_allocation_query(x->a, h, &as);
    if (ast >= 0 && as.size > s->cfg.max_alloc_bytes - c->alloc_bytes) {
        s->st.quota_refusals++;
        LOG(s, 1, "client %u (pid %ld): allocation of %llu bytes over its limit (%llu of %llu alive)\n", c->id,
            (long)c->pid, (unsigned long long)as.size, (unsigned long long)c->alloc_bytes,
            (unsigned long long)s->cfg.max_alloc_bytes);
        ast = (vidmm_status)VMMD_E_QUOTA_EXCEEDED;
    } else if (ast >= 0) {
        ast = vmmd_obj_add(s, c, OBJ_ALLOC, h, 0, aslot);
    }
    if (ast < 0) {
        vidmm_allocation_destroy(x->a, h);
        return ast;
    }
    c->objs[*aslot].size = as.size;
    c->alloc_bytes += as.size;
    c->nallocs++;
    return VIDMM_OK;
}

vidmm_status vmmd_serve_alloc_create(struct req *x)
{
    const struct vmmd_request *r = x->r;
    const struct vmmd_req_alloc_create *m = &r->m.alloc_create;
    vidmm_handle dev = x->c->device;
    if (m->device) {
        uint32_t slot = req_find(x, m->device, OBJ_DEVICE);
        if (!slot)
            return VIDMM_E_INVALID_HANDLE;
        dev = x->c->objs[slot].lib;
    }
    vidmm_handle h = 0;
    vidmm_status st =
        vidmm_device_allocation_create(x->a, dev, r->data_size ? r->data : NULL, r->data_size, m->flags, &h);
    if (st < 0)
        return st;
    uint32_t aslot = 0;
    vidmm_status ast = adopt_allocation(x, h, &aslot);
    if (ast < 0)
        return ast;
    vmmd_put_handle(x, aslot);
    return st;   /* the creation's own success status (VIDMM_PENDING) */
}

vidmm_status vmmd_serve_alloc_destroy(struct req *x)
{
    struct vmmd_client *c = x->c;
    uint32_t slot = req_find(x, x->r->m.alloc_destroy.allocation, OBJ_ALLOC);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    if (c->objs[slot].lock_count)
        return VIDMM_E_BUSY;   /* as the library: not while locked */
    struct vidmm_residency_state rs;
    memset(&rs, 0, sizeof rs);
    vidmm_allocation_residency(x->a, c->objs[slot].lib, &rs);
    vidmm_status st = vidmm_allocation_destroy(x->a, c->objs[slot].lib);
    if (st >= 0) {
        c->retired_evictions += rs.evictions;
        c->retired_restores += rs.restores;
        vmmd_obj_free(c, slot);
    }
    return st;
}

vidmm_status vmmd_serve_make_resident(struct req *x)
{
    const struct vmmd_req_make_resident *m = &x->r->m.make_resident;
    uint32_t ds = req_find(x, m->device, OBJ_DEVICE);
    uint32_t qs = req_find(x, m->paging_queue, OBJ_QUEUE);
    if (!ds || !qs)
        return VIDMM_E_INVALID_HANDLE;
    vidmm_handle stackbuf[64], *list = NULL;
    vidmm_status st = vmmd_list_get(x, stackbuf, 64, &list);
    if (st >= 0) {
        struct vidmm_make_resident_args mr;
        memset(&mr, 0, sizeof mr);
        mr.paging_queue = x->c->objs[qs].lib;
        mr.allocations = m->count ? list : NULL;
        mr.count = m->count;
        mr.flags = m->flags;
        st = vidmm_make_resident(x->a, x->c->objs[ds].lib, &mr);
        struct vmmd_rep_make_resident rm = { mr.paging_fence_value, mr.bytes_to_trim };
        vmmd_put_rep_make_resident(x->out, &rm);
        x->n = VMMD_REP_MAKE_RESIDENT_SIZE;
    }
    if (list != stackbuf)
        free(list);
    return st;
}

vidmm_status vmmd_serve_evict(struct req *x)
{
    const struct vmmd_req_evict *m = &x->r->m.evict;
    uint32_t ds = req_find(x, m->device, OBJ_DEVICE);
    if (!ds)
        return VIDMM_E_INVALID_HANDLE;
    vidmm_handle stackbuf[64], *list = NULL;
    vidmm_status st = vmmd_list_get(x, stackbuf, 64, &list);
    if (st >= 0) {
        struct vidmm_evict_args ev;
        memset(&ev, 0, sizeof ev);
        ev.allocations = m->count ? list : NULL;
        ev.count = m->count;
        ev.flags = m->flags;
        st = vidmm_evict(x->a, x->c->objs[ds].lib, &ev);
        struct vmmd_rep_evict rm = { ev.bytes_to_trim };
        vmmd_put_rep_evict(x->out, &rm);
        x->n = VMMD_REP_EVICT_SIZE;
    }
    if (list != stackbuf)
        free(list);
    return st;
}

vidmm_status vmmd_serve_query_vidmem(struct req *x)
{
    const struct vmmd_req_query_vidmem *m = &x->r->m.query_vidmem;
    struct vidmm_video_memory_info vi;
    memset(&vi, 0, sizeof vi);
    if (m->group > 1 || m->reserved)
        return VIDMM_E_INVALID_ARG;
    vidmm_status st = vidmm_query_video_memory_info(x->a, x->c->process, (enum vidmm_segment_group)m->group, &vi);
    struct vmmd_rep_query_vidmem rm = { vi.budget, vi.current_usage, vi.current_reservation,
                                        vi.available_for_reservation };
    vmmd_put_rep_query_vidmem(x->out, &rm);
    x->n = VMMD_REP_QUERY_VIDMEM_SIZE;
    return st;
}

vidmm_status vmmd_serve_alloc_query(struct req *x)
{
    uint32_t slot = req_find(x, x->r->m.alloc_query.allocation, OBJ_ALLOC);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    struct vidmm_allocation_state as;
    struct vidmm_residency_state rs;
    memset(&as, 0, sizeof as);
    memset(&rs, 0, sizeof rs);
    vidmm_status st = vidmm_allocation_query(x->a, x->c->objs[slot].lib, &as);
    if (st >= 0)
        st = vidmm_allocation_residency(x->a, x->c->objs[slot].lib, &rs);
    struct vmmd_rep_alloc_query rm = {
        .size = as.size, .requested_size = as.requested_size, .alignment = as.alignment, .flags = as.flags,
        .segment_id = as.segment_id, .supported_segment_set = as.supported_segment_set,
        .preferred_segment = as.preferred_segment, .lock_count = x->c->objs[slot].lock_count,
        .resident = rs.resident, .moves = as.moves,
    };
    vmmd_put_rep_alloc_query(x->out, &rm);
    x->n = VMMD_REP_ALLOC_QUERY_SIZE;
    return st;
}

vidmm_status vmmd_serve_gpuva_reserve(struct req *x)
{
    const struct vmmd_req_gpuva_reserve *m = &x->r->m.gpuva_reserve;
    if (m->reserved)
        return VIDMM_E_INVALID_ARG;
    struct vmmd_rep_gpuva_reserve rm = { 0 };
    vidmm_status st = vidmm_gpuva_reserve(x->a, x->c->process, m->base, m->min, m->max, m->size, m->mode, &rm.va);
    vmmd_put_rep_gpuva_reserve(x->out, &rm);
    x->n = VMMD_REP_GPUVA_RESERVE_SIZE;
    return st;
}

vidmm_status vmmd_serve_gpuva_map(struct req *x)
{
    const struct vmmd_req_gpuva_map *m = &x->r->m.gpuva_map;
    uint32_t slot = req_find(x, m->allocation, OBJ_ALLOC);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    if (m->reserved)
        return VIDMM_E_INVALID_ARG;
    struct vmmd_rep_gpuva_map rm = { 0 };
    vidmm_status st = vidmm_gpuva_map(x->a, x->c->process, m->base, m->min, m->max, x->c->objs[slot].lib, m->offset,
                                      m->size, m->protection, m->driver_protection, &rm.va);
    vmmd_put_rep_gpuva_map(x->out, &rm);
    x->n = VMMD_REP_GPUVA_MAP_SIZE;
    return st;
}

vidmm_status vmmd_serve_gpuva_free(struct req *x)
{
    return vidmm_gpuva_free(x->a, x->c->process, x->r->m.gpuva_free.va, x->r->m.gpuva_free.size);
}

/* One GPUVA_UPDATE operation from the wire: only a MAP names an
 * allocation (translated to the library's handle); elsewhere the field
 * is 0. */
static vidmm_status gpuva_op_get(const struct req *x, const uint8_t *p, struct vidmm_gpuva_update_op *o)
{
    struct vmmd_rec_gpuva_op w;
    vmmd_get_rec_gpuva_op(p, &w);
    memset(o, 0, sizeof *o);
    o->type = w.type;
    o->protection = w.protection;
    o->va = w.va;
    o->size = w.size;
    o->offset = w.offset;
    o->driver_protection = w.driver_protection;
    o->unmap_mode = w.unmap_mode;
    o->reserved = w.reserved;
    o->source = w.source;
    if (o->type == VIDMM_GPUVA_UPDATE_MAP) {
        uint32_t as = req_find(x, w.allocation, OBJ_ALLOC);
        if (!as)
            return VIDMM_E_INVALID_HANDLE;
        o->allocation = x->c->objs[as].lib;
    } else if (w.allocation) {
        return VIDMM_E_INVALID_ARG;
    }
    return VIDMM_OK;
}

vidmm_status vmmd_serve_gpuva_update(struct req *x)
{
    const struct vmmd_req_gpuva_update *m = &x->r->m.gpuva_update;
    if (m->reserved)
        return VIDMM_E_INVALID_ARG;
    struct vidmm_gpuva_update_op *ops = malloc(sizeof *ops * (m->count ? m->count : 1));
    if (!ops)
        return VIDMM_E_NO_HOST_MEMORY;
    vidmm_status st = VIDMM_OK;
    for (uint32_t i = 0; i < m->count && st >= 0; i++)
        st = gpuva_op_get(x, x->r->list + (size_t)i * VMMD_GPUVA_OP_SIZE, &ops[i]);
    if (st >= 0)
        st = vidmm_gpuva_update(x->a, x->c->process, m->count ? ops : NULL, m->count);
    free(ops);
    return st;
}

vidmm_status vmmd_serve_alloc_set_priority(struct req *x)
{
    const struct vmmd_req_alloc_set_priority *m = &x->r->m.alloc_set_priority;
    uint32_t slot = req_find(x, m->allocation, OBJ_ALLOC);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    if (m->reserved)
        return VIDMM_E_INVALID_ARG;
    return vidmm_allocation_set_priority(x->a, x->c->objs[slot].lib, m->priority);
}

vidmm_status vmmd_serve_offer(struct req *x)
{
    const struct vmmd_req_offer *m = &x->r->m.offer;
    uint32_t ds = req_find(x, m->device, OBJ_DEVICE);
    if (!ds)
        return VIDMM_E_INVALID_HANDLE;
    vidmm_handle stackbuf[64], *list = NULL;
    vidmm_status st = vmmd_list_get(x, stackbuf, 64, &list);
    if (st >= 0)
        st = vidmm_offer(x->a, x->c->objs[ds].lib, m->count ? list : NULL, m->count, m->priority);
    if (list != stackbuf)
        free(list);
    return st;
}

vidmm_status vmmd_serve_reclaim(struct req *x)
{
    /* Variable reply: u64 paging fence, count x u32 results (zeros on
     * failure, as every reply's fields). */
    const struct vmmd_req_reclaim *m = &x->r->m.reclaim;
    uint32_t qs = req_find(x, m->paging_queue, OBJ_QUEUE);
    vidmm_handle stackbuf[64], *list = stackbuf;
    uint8_t *rep = malloc(VMMD_REP_RECLAIM_SIZE + 4 * (size_t)m->count);
    uint32_t *results = malloc(sizeof *results * (m->count ? m->count : 1));
    struct vmmd_rep_reclaim rm = { 0 };
    vidmm_status st;
    if (!rep || !results)
        st = VIDMM_E_NO_HOST_MEMORY;
    else if (!qs)
        st = VIDMM_E_INVALID_HANDLE;
    else if (m->reserved)
        st = VIDMM_E_INVALID_ARG;
    else
        st = vmmd_list_get(x, stackbuf, 64, &list);
    if (st >= 0) {
        memset(results, 0, sizeof *results * m->count);
        st = vidmm_reclaim(x->a, x->c->objs[qs].lib, m->count ? list : NULL, m->count, results,
                           &rm.paging_fence_value);
    }
    if (list != stackbuf)
        free(list);
    if (rep) {
        if (st < 0)
            rm.paging_fence_value = 0;
        vmmd_put_rep_reclaim(rep, &rm);
        for (uint32_t i = 0; i < m->count; i++)
            vmmd_put32(rep + VMMD_REP_RECLAIM_SIZE + 4 * (size_t)i, results && st >= 0 ? results[i] : 0);
    }
    free(results);
    vmmd_reply(x->c, x->r->h.opcode, x->r->h.request_id, st, rep, rep ? VMMD_REP_RECLAIM_SIZE + 4 * (size_t)m->count : 0,
          -1);
    free(rep);
    x->answered = 1;
    return st;
}

vidmm_status vmmd_serve_change_reservation(struct req *x)
{
    const struct vmmd_req_change_reservation *m = &x->r->m.change_reservation;
    if (m->group > 1 || m->reserved)
        return VIDMM_E_INVALID_ARG;
    return vidmm_change_video_memory_reservation(x->a, x->c->process, (enum vidmm_segment_group)m->group, m->bytes);
}

vidmm_status vmmd_serve_process_set_budget(struct req *x)
{
    const struct vmmd_req_process_set_budget *m = &x->r->m.process_set_budget;
    if (m->group > 1 || m->reserved)
        return VIDMM_E_INVALID_ARG;
    if (!x->s->cfg.allow_set_budget)   /* the OS's call: only a daemon started for tests serves it */
        return VIDMM_E_NOT_SUPPORTED;
    return vidmm_process_set_budget(x->a, x->c->process, (enum vidmm_segment_group)m->group, m->budget);
}
