/*
 * client/device.c - libvidmm-client's devices, paging queues, contexts,
 * virtual submission and trim registrations (the callbacks the TRIM
 * events of client.c reach).
 */
#define _GNU_SOURCE
#include "internal.h"

#include <stdlib.h>
#include <string.h>

vidmm_status vidmm_client_device_create(struct vidmm_client *c, vidmm_handle *device)
{
    if (!device)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vidmm_status st = vmmc_call_h(c, VMMD_OP_DEVICE_CREATE, 0, 0, device);
    LEAVE(c, st);
}

static void reg_drop(struct vidmm_client *c, vidmm_handle device)
{
    for (size_t i = 0; i < c->nregs; i++)
        if (c->regs[i].device == device) {
            c->regs[i] = c->regs[--c->nregs];
            return;
        }
}

vidmm_status vidmm_client_device_destroy(struct vidmm_client *c, vidmm_handle device)
{
    ENTER(c);
    vidmm_status st = vmmc_call_h(c, VMMD_OP_DEVICE_DESTROY, device, 8, NULL);
    if (st >= 0)
        reg_drop(c, device);   /* the daemon dropped its registration with it */
    LEAVE(c, st);
}

/* ---- trim notifications -------------------------------------------------------- */

vidmm_status vidmm_client_register_trim_notification(struct vidmm_client *c, vidmm_handle device,
                                                     vidmm_trim_callback callback, void *context)
{
    ENTER(c);
    struct trim_reg *r = NULL;
    for (size_t i = 0; i < c->nregs; i++)
        if (c->regs[i].device == device)
            r = &c->regs[i];
    if (!r && callback && c->nregs == c->rcap) {   /* room first: a daemon registration we cannot record is worse */
        size_t ncap = c->rcap ? c->rcap * 2 : 8;
        struct trim_reg *n = realloc(c->regs, ncap * sizeof *n);
        if (!n)
            LEAVE(c, VIDMM_E_NO_HOST_MEMORY);
        c->regs = n;
        c->rcap = ncap;
    }
    struct vmmd_req_trim_register m = { device, callback ? 1u : 0u, 0 };
    vidmm_status st = PUT_REQ(c, TRIM_REGISTER, trim_register, &m, 0);
    if (st >= 0) {
        if (!callback)
            reg_drop(c, device);
        else if (r)
            r->cb = callback, r->context = context;
        else
            c->regs[c->nregs++] = (struct trim_reg){ device, callback, context };
    }
    LEAVE(c, st);
}

vidmm_status vidmm_client_paging_queue_create(struct vidmm_client *c, vidmm_handle device, int priority,
                                              vidmm_handle *queue)
{
    if (!queue)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    struct vmmd_req_queue_create m = { device, (int32_t)priority, 0 };
    vidmm_status st = PUT_REQ(c, QUEUE_CREATE, queue_create, &m, 0);
    struct vmmd_rep_queue_create rm = { 0 };
    if (st >= 0)
        *queue = GET_REP(c, QUEUE_CREATE, queue_create, &rm) ? rm.queue : 0;
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_paging_queue_destroy(struct vidmm_client *c, vidmm_handle queue)
{
    ENTER(c);
    vidmm_status st = vmmc_call_h(c, VMMD_OP_QUEUE_DESTROY, queue, 8, NULL);
    LEAVE(c, st);
}

vidmm_status vidmm_client_paging_queue_fence(struct vidmm_client *c, vidmm_handle queue, uint64_t *completed)
{
    if (!completed)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vidmm_status st = vmmc_call_h(c, VMMD_OP_QUEUE_FENCE, queue, 8, completed);
    LEAVE(c, st);
}

vidmm_status vidmm_client_paging_queue_wait(struct vidmm_client *c, vidmm_handle queue, uint64_t value,
                                            uint64_t timeout_ns)
{
    ENTER(c);
    struct vmmd_req_queue_wait m = { queue, value, timeout_ns };
    vidmm_status st = PUT_REQ(c, QUEUE_WAIT, queue_wait, &m, 0);
    LEAVE(c, st);
}

/* ---- contexts, virtual submission, context fences -------------------------------- */

vidmm_status vidmm_client_context_create(struct vidmm_client *c, vidmm_handle device,
                                         const struct vidmm_context_desc *desc, vidmm_handle *context)
{
    if (!desc || !context)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    struct vmmd_req_context_create m = { device, desc->node, desc->mode, desc->flags, desc->reserved };
    vidmm_status st = PUT_REQ(c, CONTEXT_CREATE, context_create, &m, 0);
    struct vmmd_rep_context_create rm = { 0 };
    if (st >= 0)
        *context = GET_REP(c, CONTEXT_CREATE, context_create, &rm) ? rm.context : 0;
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_context_destroy(struct vidmm_client *c, vidmm_handle context)
{
    ENTER(c);
    vidmm_status st = vmmc_call_h(c, VMMD_OP_CONTEXT_DESTROY, context, 8, NULL);
    LEAVE(c, st);
}

vidmm_status vidmm_client_submit_virtual(struct vidmm_client *c, vidmm_handle context, uint64_t gpu_va, uint32_t size,
                                         uint64_t *fence)
{
    if (!fence)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    struct vmmd_req_submit_virtual m = { context, gpu_va, size, 0 };
    vidmm_status st = PUT_REQ(c, SUBMIT_VIRTUAL, submit_virtual, &m, 0);
    struct vmmd_rep_submit_virtual rm = { 0 };
    if (st >= 0)
        *fence = GET_REP(c, SUBMIT_VIRTUAL, submit_virtual, &rm) ? rm.fence : 0;
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_context_fence(struct vidmm_client *c, vidmm_handle context, uint64_t *submitted,
                                        uint64_t *completed)
{
    if (!submitted || !completed)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vidmm_status st = vmmc_call_h(c, VMMD_OP_CONTEXT_FENCE, context, 8, NULL);
    struct vmmd_rep_context_fence m;
    if (st >= 0 && GET_REP(c, CONTEXT_FENCE, context_fence, &m)) {
        *submitted = m.submitted;
        *completed = m.completed;
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_context_wait(struct vidmm_client *c, vidmm_handle context, uint64_t value,
                                       uint64_t timeout_ns)
{
    ENTER(c);
    struct vmmd_req_context_wait m = { context, value, timeout_ns };
    vidmm_status st = PUT_REQ(c, CONTEXT_WAIT, context_wait, &m, 0);
    LEAVE(c, st);
}
