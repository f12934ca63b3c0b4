/*
 * daemon/req_device.c - the requests on devices, paging queues and
 * contexts: HELLO and ECHO, create and destroy, fences, the waits parked
 * until a fence passes or their time runs out (never blocking the
 * loop), virtual submission, and trim notifications sent as events.
 */
#define _GNU_SOURCE
#include "server_internal.h"

vidmm_status vmmd_serve_hello(struct req *x)
{
    struct vmmd_rep_hello m = { (uint32_t)x->c->pid, (uint32_t)x->c->uid, x->c->id, 0 };
    vmmd_put_rep_hello(x->out, &m);
    x->n = VMMD_REP_HELLO_SIZE;
    return VIDMM_OK;
}

vidmm_status vmmd_serve_echo(struct req *x)
{
    const struct vmmd_request *r = x->r;
    /* The reply carries an 8-byte status before the bytes: what does
     * not fit is refused, never cut (docs/PROTOCOL.md). */
    if (r->data_size > VMMD_MAX_PAYLOAD - 8)
        vmmd_reply(x->c, r->h.opcode, r->h.request_id, VIDMM_E_TOO_LARGE, NULL, 0, -1);
    else
        vmmd_reply(x->c, r->h.opcode, r->h.request_id, VIDMM_OK, r->data, r->data_size, -1);
    x->answered = 1;
    return VIDMM_OK;
}

vidmm_status vmmd_serve_device_create(struct req *x)
{
    vidmm_handle d = 0;
    uint32_t slot;
    vidmm_status st = vidmm_device_create(x->a, x->c->process, &d);
    if (st < 0)
        return st;
    vidmm_status ost = vmmd_obj_add(x->s, x->c, OBJ_DEVICE, d, 0, &slot);
    if (ost < 0) {
        vidmm_device_destroy(x->a, d);
        return ost;
    }
    vmmd_put_handle(x, slot);
    return st;
}

vidmm_status vmmd_serve_device_destroy(struct req *x)
{
    struct vmmd_client *c = x->c;
    uint32_t slot = req_find(x, x->r->m.device_destroy.device, OBJ_DEVICE);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    vidmm_status st = vidmm_device_destroy(x->a, c->objs[slot].lib);
    if (st >= 0) {
        /* The library destroyed the device's queues and contexts with it
         * (and its trim registration). */
        for (uint32_t i = 1; i < c->nobj; i++)
            if ((c->objs[i].type == OBJ_QUEUE || c->objs[i].type == OBJ_CONTEXT) && c->objs[i].parent == slot)
                vmmd_obj_free(c, i);
        vmmd_obj_free(c, slot);
    }
    return st;
}

vidmm_status vmmd_serve_queue_create(struct req *x)
{
    const struct vmmd_req_queue_create *m = &x->r->m.queue_create;
    uint32_t slot = req_find(x, m->device, OBJ_DEVICE);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    if (m->reserved)
        return VIDMM_E_INVALID_ARG;
    vidmm_handle q = 0;
    vidmm_status st = vidmm_paging_queue_create(x->a, x->c->objs[slot].lib, m->priority, &q);
    if (st < 0)
        return st;
    uint32_t qs = 0;
    vidmm_status ost = vmmd_obj_add(x->s, x->c, OBJ_QUEUE, q, slot, &qs);
    if (ost < 0) {
        vidmm_paging_queue_destroy(x->a, q);
        return ost;
    }
    vmmd_put_handle(x, qs);
    return st;
}

vidmm_status vmmd_serve_queue_destroy(struct req *x)
{
    uint32_t slot = req_find(x, x->r->m.queue_destroy.queue, OBJ_QUEUE);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    vidmm_status st = vidmm_paging_queue_destroy(x->a, x->c->objs[slot].lib);
    if (st >= 0)
        vmmd_obj_free(x->c, slot);
    return st;
}

vidmm_status vmmd_serve_queue_fence(struct req *x)
{
    uint32_t slot = req_find(x, x->r->m.queue_fence.queue, OBJ_QUEUE);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    struct vmmd_rep_queue_fence m = { 0 };
    vidmm_status st = vidmm_paging_queue_fence(x->a, x->c->objs[slot].lib, &m.completed);
    vmmd_put_rep_queue_fence(x->out, &m);
    x->n = VMMD_REP_QUEUE_FENCE_SIZE;
    return st;
}

/* Park a QUEUE_WAIT or CONTEXT_WAIT on q until value passes or
 * timeout_ns has gone by (vmmd_server_poll_waits answers it). */
static void park_wait(struct req *x, vidmm_handle q, uint64_t value, uint64_t timeout_ns)
{
    struct vmmd_server *s = x->s;
    const struct vmmd_request *r = x->r;
    x->answered = 1;
    if (s->nwaits == s->wcap) {
        size_t ncap = s->wcap ? s->wcap * 2 : 16;
        struct wait *n = realloc(s->waits, ncap * sizeof *n);
        if (!n) {
            vmmd_reply(x->c, r->h.opcode, r->h.request_id, VIDMM_E_NO_HOST_MEMORY, NULL, 0, -1);
            return;
        }
        s->waits = n;
        s->wcap = ncap;
    }
    uint64_t now = now_ns();
    struct wait *w = &s->waits[s->nwaits++];
    x->c->nwaits++;
    w->c = x->c;
    w->request_id = r->h.request_id;
    w->op = r->h.opcode;
    w->queue = q;
    w->value = value;
    w->deadline_ns = timeout_ns == UINT64_MAX || timeout_ns > UINT64_MAX - now ? UINT64_MAX : now + timeout_ns;
    s->st.waits_parked++;
}

vidmm_status vmmd_serve_queue_wait(struct req *x)
{
    const struct vmmd_req_queue_wait *m = &x->r->m.queue_wait;
    uint32_t slot = req_find(x, m->queue, OBJ_QUEUE);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    uint64_t v = 0;
    vidmm_status st = vidmm_paging_queue_fence(x->a, x->c->objs[slot].lib, &v);
    if (st >= 0 && v < m->value) {
        if (m->timeout_ns == 0)
            return VIDMM_E_TIMEOUT;
        park_wait(x, x->c->objs[slot].lib, m->value, m->timeout_ns);
        return VIDMM_OK;
    }
    return st > 0 ? VIDMM_OK : st;
}

size_t vmmd_server_poll_waits(struct vmmd_server *s)
{
    if (!s || !s->nwaits)
        return 0;
    uint64_t now = now_ns();
    size_t keep = 0;
    for (size_t i = 0; i < s->nwaits; i++) {
        struct wait *w = &s->waits[i];
        uint64_t done = 0, submitted = 0;
        vidmm_status st = w->op == VMMD_OP_CONTEXT_WAIT
                              ? vidmm_context_fence(s->cfg.adapter, w->queue, &submitted, &done)
                              : vidmm_paging_queue_fence(s->cfg.adapter, w->queue, &done);
        if (st >= 0 && done < w->value && now < w->deadline_ns) {
            s->waits[keep++] = *w;
            continue;
        }
        if (st >= 0)
            st = done >= w->value ? VIDMM_OK : VIDMM_E_TIMEOUT;
        w->c->nwaits--;
        vmmd_reply(w->c, w->op, w->request_id, st, NULL, 0, -1);
        s->st.waits_answered++;
        vmmd_mark_pending(s, w->c);
    }
    s->nwaits = keep;
    return keep;
}

/* vidmm's trim notification for one of c's devices (TRIM_REGISTER): a
 * TRIM event to c.  It runs on the loop's thread inside the vidmm call
 * that found the process over budget - which may be another client's
 * request (its demand lowered every budget) or a budget change - so c
 * is marked for the loop to flush. */
static void on_trim(void *context, vidmm_handle device, uint32_t flags, uint64_t bytes_to_trim)
{
    struct vmmd_client *c = context;
    if (c->dropping)
        return;
    for (uint32_t i = 1; i < c->nobj; i++)
        if (c->objs[i].type == OBJ_DEVICE && c->objs[i].lib == device) {
            uint8_t ev[VMMD_TRIM_EVENT_SIZE];
            struct vmmd_rec_trim_event m = { vmmd_obj_handle(c, i), flags, 0, bytes_to_trim };
            vmmd_put_rec_trim_event(ev, &m);
            vmmd_send_event(c, VMMD_EV_TRIM, ev, sizeof ev);
            vmmd_mark_pending(c->srv, c);
            c->srv->st.trim_events++;
            return;
        }
}

vidmm_status vmmd_serve_trim_register(struct req *x)
{
    const struct vmmd_req_trim_register *m = &x->r->m.trim_register;
    uint32_t slot = req_find(x, m->device, OBJ_DEVICE);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    if (m->enable > 1 || m->reserved)
        return VIDMM_E_INVALID_ARG;
    return vidmm_register_trim_notification(x->a, x->c->objs[slot].lib, m->enable ? on_trim : NULL,
                                            m->enable ? x->c : NULL);
}

vidmm_status vmmd_serve_context_create(struct req *x)
{
    const struct vmmd_req_context_create *m = &x->r->m.context_create;
    uint32_t slot = req_find(x, m->device, OBJ_DEVICE);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    struct vidmm_context_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.node = m->node;
    desc.mode = m->mode;
    desc.flags = m->flags;
    desc.reserved = m->reserved;
    vidmm_handle ctx = 0;
    vidmm_status st = vidmm_context_create(x->a, x->c->objs[slot].lib, &desc, &ctx);
    if (st < 0)
        return st;
    uint32_t cs = 0;
    vidmm_status ost = vmmd_obj_add(x->s, x->c, OBJ_CONTEXT, ctx, slot, &cs);
    if (ost < 0) {
        vidmm_context_destroy(x->a, ctx);
        return ost;
    }
    vmmd_put_handle(x, cs);
    return st;
}

vidmm_status vmmd_serve_context_destroy(struct req *x)
{
    uint32_t slot = req_find(x, x->r->m.context_destroy.context, OBJ_CONTEXT);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    vidmm_status st = vidmm_context_destroy(x->a, x->c->objs[slot].lib);
    if (st >= 0)
        vmmd_obj_free(x->c, slot);
    return st;
}

vidmm_status vmmd_serve_submit_virtual(struct req *x)
{
    /* The command buffer is already in the process's GPU address space
     * (an allocation the client filled through LOCK): only its address
     * and size travel. */
    const struct vmmd_req_submit_virtual *m = &x->r->m.submit_virtual;
    uint32_t slot = req_find(x, m->context, OBJ_CONTEXT);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    if (m->reserved)
        return VIDMM_E_INVALID_ARG;
    struct vmmd_rep_submit_virtual rm = { 0 };
    vidmm_status st = vidmm_submit_virtual(x->a, x->c->objs[slot].lib, m->gpu_va, m->size, &rm.fence);
    if (st >= 0)
        x->s->st.submissions++;
    vmmd_put_rep_submit_virtual(x->out, &rm);
    x->n = VMMD_REP_SUBMIT_VIRTUAL_SIZE;
    return st;
}

vidmm_status vmmd_serve_context_fence(struct req *x)
{
    uint32_t slot = req_find(x, x->r->m.context_fence.context, OBJ_CONTEXT);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    struct vmmd_rep_context_fence rm = { 0, 0 };
    vidmm_status st = vidmm_context_fence(x->a, x->c->objs[slot].lib, &rm.submitted, &rm.completed);
    vmmd_put_rep_context_fence(x->out, &rm);
    x->n = VMMD_REP_CONTEXT_FENCE_SIZE;
    return st;
}

vidmm_status vmmd_serve_context_wait(struct req *x)
{
    /* As vidmm_context_wait, without blocking the loop: parked like a
     * paging-queue wait when the fence has not passed. */
    const struct vmmd_req_context_wait *m = &x->r->m.context_wait;
    uint64_t sub = 0, done = 0;
    uint32_t slot = req_find(x, m->context, OBJ_CONTEXT);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    vidmm_status st = vidmm_context_fence(x->a, x->c->objs[slot].lib, &sub, &done);
    if (st < 0)
        return st;
    if (m->value > sub)
        return VIDMM_E_INVALID_ARG;   /* never submitted: it would never pass */
    if (done < m->value) {
        if (m->timeout_ns == 0)
            return VIDMM_E_TIMEOUT;
        park_wait(x, x->c->objs[slot].lib, m->value, m->timeout_ns);
    }
    return VIDMM_OK;
}
