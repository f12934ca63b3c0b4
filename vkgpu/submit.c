/*
 * submit.c - physical-mode command submission for vkgpu: DxgkDdiPatch
 * and DxgkDdiSubmitCommand for a context.
 *
 * A context's DMA buffer is a list of struct vkgpu_cmd (vidmm/vkgpu.h):
 * copies, fills and 64-bit writes between device addresses.  vidmm
 * patches the addresses of the allocations the buffer names (its
 * allocation and patch-location lists) just before submission: patch
 * writes the segment's base plus the allocation's offset, which is the
 * arena buffer's device address when the device has bufferDeviceAddress
 * (device.c).  submit_command_physical then looks each address up in
 * the arenas and records vkCmdCopyBuffer / vkCmdFillBuffer /
 * vkCmdUpdateBuffer; the context's fence is reported from the waiter
 * once the context timeline reaches the submission's serial.
 */
#include "vkgpu_int.h"

#include <string.h>

vidmm_status vk_patch(void *driver, const struct vidmm_patch_args *args)
{
    struct vkgpu *g = driver;
    if (!g || !args || !args->dma_buffer || (args->patch_location_list_size && !args->patch_location_list) ||
        (args->allocation_list_size && !args->allocation_list))
        return VIDMM_E_INVALID_ARG;
    /* Every location checked before any is written: a refused patch
     * leaves the buffer as it was. */
    for (int write = 0; write < 2; write++)
        for (uint32_t i = 0; i < args->patch_location_list_size; i++) {
            const struct vidmm_patch_location *p = &args->patch_location_list[i];
            if (p->allocation_index >= args->allocation_list_size)
                return VIDMM_E_INVALID_ARG;
            const struct vidmm_allocation_list_entry *e = &args->allocation_list[p->allocation_index];
            if (!vk_segment(g, e->segment_id, e->segment_offset, e->size) || p->allocation_offset >= e->size ||
                p->patch_offset % 8 || (uint64_t)p->patch_offset + 8 > args->dma_buffer_size)
                return VIDMM_E_INVALID_ARG;
            if (write) {
                uint64_t addr = g->seg[e->segment_id].base + e->segment_offset + p->allocation_offset;
                memcpy((uint8_t *)args->dma_buffer + p->patch_offset, &addr, sizeof addr);
            }
        }
    return VIDMM_OK;
}

/* A command as a run of paging records (engine.c records both). */
static int to_rec(const struct vkgpu *g, const struct vkgpu_cmd *c, struct vk_rec *r)
{
    uint64_t off;
    memset(r, 0, sizeof *r);
    switch (c->op) {
    case VKGPU_CMD_COPY:
        r->op = VK_REC_COPY;
        r->size = c->size_or_value;
        if (!r->size || !(r->src_seg = (uint8_t)vk_find_address(g, c->src, r->size, &r->src)))
            return -1;
        r->dst_seg = (uint8_t)vk_find_address(g, c->dst, r->size, &r->dst);
        return r->dst_seg ? 0 : -1;
    case VKGPU_CMD_FILL:
        r->op = VK_REC_FILL;
        r->size = c->size_or_value;
        r->src = (uint32_t)c->src;
        r->dst_seg = (uint8_t)vk_find_address(g, c->dst, r->size, &r->dst);
        return r->dst_seg && r->size && r->size % 4 == 0 && r->dst % 4 == 0 ? 0 : -1;
    case VKGPU_CMD_WRITE64:
        r->op = VKGPU_CMD_WRITE64;                 /* not a paging record: recorded here */
        r->size = 8;
        r->dst_seg = (uint8_t)vk_find_address(g, c->dst, 8, &off);
        r->dst = off;
        r->src = c->size_or_value;
        return r->dst_seg && off % 4 == 0 ? 0 : -1;
    default:
        return -1;
    }
}

static vidmm_status record_cmds(struct vkgpu *g, struct vk_job *j, const uint8_t *buf, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        struct vkgpu_cmd c;
        struct vk_rec r;
        memcpy(&c, buf + (size_t)i * sizeof c, sizeof c);
        if (to_rec(g, &c, &r) < 0)
            return VIDMM_E_INVALID_ARG;
        if (r.op != VKGPU_CMD_WRITE64) {
            vidmm_status st = vk_record_run(g, j, &r);
            if (st < 0)
                return st;
            continue;
        }
        vidmm_status st = vk_job_flush_binds(g, j);
        if (st < 0)
            return st;
        VkMemoryBarrier mb;
        memset(&mb, 0, sizeof mb);
        mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
        mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT;
        mb.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
        vkCmdPipelineBarrier(j->cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0,
                             NULL, 0, NULL);
        vkCmdUpdateBuffer(j->cb, g->seg[r.dst_seg].buffer, r.dst, 8, &r.src);
    }
    return VIDMM_OK;
}

vidmm_status vk_submit_command_physical(void *driver, const struct vidmm_submit_context_args *args)
{
    struct vkgpu *g = driver;
    if (!g || !args || !args->dma_buffer || args->node != 0 || args->dma_buffer_size % sizeof(struct vkgpu_cmd))
        return VIDMM_E_INVALID_ARG;
    uint32_t n = args->dma_buffer_size / (uint32_t)sizeof(struct vkgpu_cmd);
    for (uint32_t i = 0; i < n; i++) {             /* the whole buffer is valid, or nothing runs */
        struct vkgpu_cmd c;
        struct vk_rec r;
        memcpy(&c, (const uint8_t *)args->dma_buffer + (size_t)i * sizeof c, sizeof c);
        if (to_rec(g, &c, &r) < 0)
            return VIDMM_E_INVALID_ARG;
    }
    struct vk_job *j = vk_job_begin(g);
    if (!j)
        return VIDMM_E_DRIVER_FAILURE;
    j->kind = VK_JOB_CONTEXT;
    j->adapter = args->adapter;
    j->fence = args->fence;
    j->context = args->context;
    j->node = args->node;
    j->sem = g->context_sem;
    j->value = g->context_serial + 1;
    vidmm_status st = record_cmds(g, j, args->dma_buffer, n);
    if (st < 0) {
        vk_job_abandon(g, j);
        return st;
    }
    st = vk_job_submit(g, j);
    if (st >= 0)
        g->context_serial++;
    return st;
}
