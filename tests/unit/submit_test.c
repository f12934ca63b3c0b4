/*
 * submit_test.c - command submission end to end on softgpu: GPU programs
 * in virtual mode (through the MMU) and physical mode (patched segment
 * addresses) whose results are checked with CHECKSUM/COMPARE commands
 * against the same checksum computed on the CPU; faults, rejected
 * allocation lists, re-patching after moves, deferred destruction, and
 * several processes submitting concurrently under 2x over-commitment.
 * vidmm_adapter_check() after the steps.
 */
#include "gpuva_common.h"
#include "softgpu_fixture.h"
#include "harness/fault_alloc.h"
#include "harness/test.h"
#include "softgpu_int.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIB (1ull << 20)
#define KIB (1ull << 10)

/* ---- virtual mode ------------------------------------------------------ */

static void virtual_program(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open(&f, 32 * MIB, 64 * MIB, 1))
        return;
    struct softgpu_proc p;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    const uint32_t set = VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2);
    vidmm_handle src = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_EXPLICIT, set, 1 * MIB, 11, 0);
    vidmm_handle dst = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_EXPLICIT, set, 1 * MIB, 0, 0);
    vidmm_handle res = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_EXPLICIT, set, 64 * KIB, 0, 0);
    vidmm_handle cmd = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_EXPLICIT, set, 64 * KIB, 0, 0);
    uint64_t vs = softgpu_map(f.a, p.proc, src, 1 * MIB), vd = softgpu_map(f.a, p.proc, dst, 1 * MIB);
    uint64_t vr = softgpu_map(f.a, p.proc, res, 64 * KIB), vc = softgpu_map(f.a, p.proc, cmd, 64 * KIB);
    vidmm_handle list[] = { src, dst, res, cmd };
    softgpu_make_resident(f.a, p.dev, p.queue, list, 4);
    /* Evict one: submission must bring it back. */
    T_ST(vidmm_evict(f.a, p.dev, &(struct vidmm_evict_args){ .allocations = &src, .count = 1, .flags = VIDMM_EVICT_ONLY_IF_NECESSARY }), VIDMM_OK);
    softgpu_make_resident(f.a, p.dev, p.queue, &src, 1);
    T_ST(vidmm_allocation_move(f.a, src, 0), VIDMM_OK);   /* evicted behind the list's back */

    uint8_t buf[1024];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    T_ST(softgpu_cmd_checksum(&cb, vs, 1 * MIB, vr + 0), VIDMM_OK);
    T_ST(softgpu_cmd_copy(&cb, vd, vs, 1 * MIB), VIDMM_OK);
    T_ST(softgpu_cmd_compare(&cb, vs, vd, 1 * MIB, vr + 8), VIDMM_OK);
    T_ST(softgpu_cmd_fill(&cb, vd + 4096, 8192, 0xA5A5A5A5u), VIDMM_OK);
    T_ST(softgpu_cmd_compare(&cb, vs, vd, 1 * MIB, vr + 16), VIDMM_OK);
    T_ST(softgpu_cmd_write64(&cb, vr + 24, 0x1122334455667788ull), VIDMM_OK);
    T_ST(softgpu_cmd_write32(&cb, vr + 32, 0xCAFEu), VIDMM_OK);
    T_ST(softgpu_cmd_signal(&cb, vr + 40, 7), VIDMM_OK);
    T_ST(softgpu_cmd_wait(&cb, vr + 40, 7), VIDMM_OK);
    T_ST(softgpu_cmd_nop(&cb), VIDMM_OK);
    softgpu_cpu_write(f.a, cmd, 0, buf, cb.size);
    T_EQ(softgpu_checked(f.a, NULL), 0);

    uint64_t fence = 0;
    T_ST(vidmm_submit_virtual(f.a, p.ctx, vc, cb.size, &fence), VIDMM_OK);
    T_EQ_U64(fence, 1);
    T_ST(vidmm_context_wait(f.a, p.ctx, fence, UINT64_MAX), VIDMM_OK);
    uint64_t sub = 0, done = 0;
    T_ST(vidmm_context_fence(f.a, p.ctx, &sub, &done), VIDMM_OK);
    T_EQ_U64(sub, 1);
    T_EQ_U64(done, 1);
    T_EQ_U64(softgpu_cpu_read64(f.a, res, 0), softgpu_pattern_sum(1 * MIB, 11));
    T_EQ_U64(softgpu_cpu_read64(f.a, res, 8), 0);
    T_EQ_U64(softgpu_cpu_read64(f.a, res, 16), 4096 + 1);
    T_EQ_U64(softgpu_cpu_read64(f.a, res, 24), 0x1122334455667788ull);
    T_EQ_U64(softgpu_cpu_read64(f.a, res, 32) & 0xFFFFFFFFu, 0xCAFEu);
    T_EQ_U64(softgpu_cpu_read64(f.a, res, 40), 7);
    struct softgpu_stats ss;
    softgpu_get_stats(f.sg, &ss);
    T_EQ_U64(ss.command_buffers, 1);
    T_EQ_U64(ss.commands, 10);
    T_EQ_U64(ss.command_faults, 0);
    T_EQ(softgpu_checked(f.a, NULL), 0);

    /* Bad arguments. */
    T_ST(vidmm_submit_virtual(NULL, p.ctx, vc, 8, &fence), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_submit_virtual(f.a, p.ctx, vc, 0, &fence), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_submit_virtual(f.a, p.ctx, vc, 8, NULL), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_submit_virtual(f.a, p.dev, vc, 8, &fence), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_context_wait(f.a, p.ctx, 5, 0), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_context_fence(f.a, 0, &sub, &done), VIDMM_E_INVALID_HANDLE);
    struct vidmm_submit_physical_args pa;
    memset(&pa, 0, sizeof(pa));
    pa.buffer = buf;
    pa.size = 8;
    T_ST(vidmm_submit_physical(f.a, p.ctx, &pa), VIDMM_E_STATE);
    softgpu_fx_close(&f);
}

static void virtual_fault(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open(&f, 32 * MIB, 64 * MIB, 1))
        return;
    struct softgpu_proc p, q;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_COMPUTE, VIDMM_CONTEXT_VIRTUAL);
    softgpu_new_proc(f.a, &q, SOFTGPU_NODE_COMPUTE, VIDMM_CONTEXT_VIRTUAL);
    const uint32_t set = VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2);
    vidmm_handle cmd = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_EXPLICIT, set, 64 * KIB, 0, 0);
    vidmm_handle other = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_EXPLICIT, set, 64 * KIB, 3, 0);
    uint64_t vc = softgpu_map(f.a, p.proc, cmd, 64 * KIB);
    uint64_t vo = softgpu_map(f.a, p.proc, other, 64 * KIB);
    uint64_t vc2 = softgpu_map(f.a, q.proc, cmd, 64 * KIB);
    softgpu_make_resident(f.a, p.dev, p.queue, &cmd, 1);
    softgpu_make_resident(f.a, q.dev, q.queue, &cmd, 1);
    /* other is mapped but never made resident: its PTEs are invalid. */
    uint8_t buf[256];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    T_ST(softgpu_cmd_write64(&cb, vc + 128, 1), VIDMM_OK);
    T_ST(softgpu_cmd_write64(&cb, vo + 8, 2), VIDMM_OK);   /* faults */
    T_ST(softgpu_cmd_write64(&cb, vc + 136, 3), VIDMM_OK); /* never runs */
    softgpu_cpu_write(f.a, cmd, 0, buf, cb.size);
    uint64_t fence = 0;
    T_ST(vidmm_submit_virtual(f.a, p.ctx, vc, cb.size, &fence), VIDMM_OK);
    T_ST(vidmm_context_wait(f.a, p.ctx, fence, UINT64_MAX), VIDMM_OK);   /* the faulted packet is over */
    struct vidmm_device_info di;
    T_ST(vidmm_device_query(f.a, p.dev, &di), VIDMM_OK);
    T_EQ(di.lost, 1);
    T_EQ_U64(di.fault_va, vo + 8);
    T_EQ_U64(softgpu_cpu_read64(f.a, cmd, 128), 1);
    T_EQ_U64(softgpu_cpu_read64(f.a, cmd, 136), 0);
    T_ST(vidmm_submit_virtual(f.a, p.ctx, vc, cb.size, &fence), VIDMM_E_DEVICE_LOST);
    /* The other process goes on (its buffer: the first command only). */
    T_ST(vidmm_submit_virtual(f.a, q.ctx, vc2, 24, &fence), VIDMM_OK);
    T_ST(vidmm_context_wait(f.a, q.ctx, fence, UINT64_MAX), VIDMM_OK);
    T_ST(vidmm_device_query(f.a, q.dev, &di), VIDMM_OK);
    T_EQ(di.lost, 0);
    /* A malformed command in a virtual buffer is an execute fault. */
    struct softgpu_proc r;
    softgpu_new_proc(f.a, &r, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    uint64_t vc3 = softgpu_map(f.a, r.proc, cmd, 64 * KIB);
    softgpu_make_resident(f.a, r.dev, r.queue, &cmd, 1);
    uint64_t junk[2] = { 0x0000001800000099ull, 0 };
    softgpu_cpu_write(f.a, cmd, 512, junk, sizeof junk);
    T_ST(vidmm_submit_virtual(f.a, r.ctx, vc3 + 512, 16, &fence), VIDMM_OK);
    T_ST(vidmm_context_wait(f.a, r.ctx, fence, UINT64_MAX), VIDMM_OK);
    T_ST(vidmm_device_query(f.a, r.dev, &di), VIDMM_OK);
    T_EQ(di.lost, 1);
    T_EQ(di.fault_flags & VIDMM_FAULT_EXECUTE, VIDMM_FAULT_EXECUTE);
    softgpu_fx_close(&f);
}

/* ---- physical mode ---------------------------------------------------- */

static void physical_patch_and_repatch(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open(&f, 32 * MIB, 64 * MIB, 1))
        return;
    struct softgpu_proc p;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_COPY, VIDMM_CONTEXT_PHYSICAL);
    vidmm_handle ring = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_RING, 0, 256 * KIB, 5, 1);
    vidmm_handle out = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_RING, 0, 64 * KIB, 0, 1);
    uint8_t buf[256];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    struct vidmm_patch_location pl[5];
    memset(pl, 0, sizeof(pl));
    uint32_t at = cb.size;
    T_ST(softgpu_cmd_checksum(&cb, 0, 256 * KIB, 0), VIDMM_OK);
    pl[0] = (struct vidmm_patch_location){ 0, 0, 0, 0, at + SOFTGPU_CMD_OPERAND(0), 0 };
    pl[1] = (struct vidmm_patch_location){ 1, 0, 0, 0, at + SOFTGPU_CMD_OPERAND(2), 0 };
    at = cb.size;
    T_ST(softgpu_cmd_fill(&cb, 0, 4096, 0x01020304u), VIDMM_OK);
    pl[2] = (struct vidmm_patch_location){ 1, 0, 0, 4096, at + SOFTGPU_CMD_OPERAND(0), 0 };
    at = cb.size;
    T_ST(softgpu_cmd_compare(&cb, 0, 0, 4096, 0), VIDMM_OK);
    pl[3] = (struct vidmm_patch_location){ 0, 0, 0, 0, at + SOFTGPU_CMD_OPERAND(0), 0 };
    pl[4] = (struct vidmm_patch_location){ 1, 0, 0, 8, at + SOFTGPU_CMD_OPERAND(3), 0 };
    /* operand 1 of the compare is left 0: (segment 0, 0) faults - patch it too */
    struct vidmm_patch_location pl6[6];
    memcpy(pl6, pl, sizeof(pl));
    pl6[5] = (struct vidmm_patch_location){ 0, 0, 0, 0, at + SOFTGPU_CMD_OPERAND(1), 0 };
    struct vidmm_submit_allocation al[2] = { { ring, 0, 0 }, { out, VIDMM_SUBMIT_WRITE, 0 } };
    struct vidmm_submit_physical_args pa;
    memset(&pa, 0, sizeof(pa));
    pa.buffer = buf;
    pa.size = cb.size;
    pa.allocations = al;
    pa.allocation_count = 2;
    pa.patches = pl6;
    pa.patch_count = 6;
    T_ST(vidmm_submit_physical(f.a, p.ctx, &pa), VIDMM_OK);
    T_EQ(pa.patched, 6);
    T_ST(vidmm_context_wait(f.a, p.ctx, pa.fence, UINT64_MAX), VIDMM_OK);
    uint64_t want = softgpu_pattern_sum(256 * KIB, 5);
    T_EQ_U64(softgpu_cpu_read64(f.a, out, 0), want);
    T_EQ_U64(softgpu_cpu_read64(f.a, out, 8), 0);
    T_EQ(softgpu_checked(f.a, NULL), 0);

    /* Again, nothing moved: nothing to patch. */
    softgpu_cpu_write(f.a, out, 0, &(uint64_t){ 0 }, 8);
    pa.flags = VIDMM_SUBMIT_REUSED;
    T_ST(vidmm_submit_physical(f.a, p.ctx, &pa), VIDMM_OK);
    T_EQ(pa.patched, 0);
    T_ST(vidmm_context_wait(f.a, p.ctx, pa.fence, UINT64_MAX), VIDMM_OK);
    T_EQ_U64(softgpu_cpu_read64(f.a, out, 0), want);

    /* The ring moves (to the aperture, then back to memory elsewhere):
     * exactly its three locations are patched again. */
    struct vidmm_allocation_state s0, s1;
    T_ST(vidmm_allocation_query(f.a, ring, &s0), VIDMM_OK);
    T_ST(vidmm_allocation_move(f.a, ring, 3), VIDMM_OK);
    T_ST(vidmm_allocation_query(f.a, ring, &s1), VIDMM_OK);
    T_EQ(s1.segment_id, 3);
    T_EQ(s1.aperture_mapped, 1);
    softgpu_cpu_write(f.a, out, 0, &(uint64_t){ 0 }, 8);
    T_ST(vidmm_submit_physical(f.a, p.ctx, &pa), VIDMM_OK);
    T_EQ(pa.patched, 3);
    T_ST(vidmm_context_wait(f.a, p.ctx, pa.fence, UINT64_MAX), VIDMM_OK);
    T_EQ_U64(softgpu_cpu_read64(f.a, out, 0), want);
    T_EQ_U64(softgpu_cpu_read64(f.a, out, 8), 0);
    T_ST(vidmm_allocation_move(f.a, ring, 1), VIDMM_OK);
    T_ST(vidmm_submit_physical(f.a, p.ctx, &pa), VIDMM_OK);
    T_EQ(pa.patched, 3);
    T_ST(vidmm_context_wait(f.a, p.ctx, pa.fence, UINT64_MAX), VIDMM_OK);
    T_EQ_U64(softgpu_cpu_read64(f.a, out, 0), want);
    struct vidmm_submit_stats st;
    T_ST(vidmm_submit_get_stats(f.a, &st), VIDMM_OK);
    T_EQ_U64(st.physical_submissions, 4);
    T_EQ_U64(st.patch_locations_written, 12);
    T_EQ_U64(st.patch_locations_skipped, 12);
    T_EQ_U64(st.in_flight, 0);
    /* Not marked as reused: every location is patched. */
    pa.flags = 0;
    T_ST(vidmm_submit_physical(f.a, p.ctx, &pa), VIDMM_OK);
    T_EQ(pa.patched, 6);
    T_ST(vidmm_context_wait(f.a, p.ctx, pa.fence, UINT64_MAX), VIDMM_OK);
    softgpu_fx_close(&f);
}

static void physical_rejects(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open(&f, 32 * MIB, 64 * MIB, 1))
        return;
    struct softgpu_proc p, v;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_PHYSICAL);
    softgpu_new_proc(f.a, &v, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);   /* one node runs both modes */
    vidmm_handle ring = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_RING, 0, 64 * KIB, 0, 1);
    vidmm_handle tex = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_TEXTURE, 0, 64 * KIB, 0, 1);
    uint8_t buf[64];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    T_ST(softgpu_cmd_write64(&cb, 0, 1), VIDMM_OK);
    struct vidmm_patch_location pl = { 0, 0, 0, 0, SOFTGPU_CMD_OPERAND(0), 0 };
    struct vidmm_submit_allocation al[2] = { { ring, 0, 0 }, { tex, 0, 0 } };
    struct vidmm_submit_physical_args pa;
    memset(&pa, 0, sizeof(pa));
    pa.buffer = buf;
    pa.size = cb.size;
    pa.allocations = al;
    pa.allocation_count = 2;
    pa.patches = &pl;
    pa.patch_count = 1;
    T_ST(vidmm_submit_physical(f.a, p.ctx, &pa), VIDMM_E_NOT_ACCESSED_PHYSICALLY);
    al[1].allocation = tex ^ (1ull << 24);
    T_ST(vidmm_submit_physical(f.a, p.ctx, &pa), VIDMM_E_INVALID_HANDLE);
    pa.allocation_count = 1;
    al[0].flags = 0x80;
    T_ST(vidmm_submit_physical(f.a, p.ctx, &pa), VIDMM_E_INVALID_ARG);
    al[0].flags = 0;
    pl.allocation_index = 1;
    T_ST(vidmm_submit_physical(f.a, p.ctx, &pa), VIDMM_E_INVALID_ARG);
    pl.allocation_index = 0;
    pl.patch_offset = 64;
    T_ST(vidmm_submit_physical(f.a, p.ctx, &pa), VIDMM_E_INVALID_ARG);
    pl.patch_offset = 20;   /* inside the buffer, but the 8-byte address would not fit: the driver refuses */
    T_ST(vidmm_submit_physical(f.a, p.ctx, &pa), VIDMM_E_INVALID_ARG);
    pl.patch_offset = SOFTGPU_CMD_OPERAND(0);
    pl.allocation_offset = 64 * KIB;
    T_ST(vidmm_submit_physical(f.a, p.ctx, &pa), VIDMM_E_INVALID_ARG);
    pl.allocation_offset = 0;
    T_ST(vidmm_submit_physical(f.a, v.ctx, &pa), VIDMM_E_STATE);
    T_ST(vidmm_submit_physical(f.a, p.ctx, NULL), VIDMM_E_INVALID_ARG);
    pa.flags = 2;
    T_ST(vidmm_submit_physical(f.a, p.ctx, &pa), VIDMM_E_INVALID_ARG);
    pa.flags = 0;
    /* A malformed buffer is refused by the driver before it runs. */
    uint64_t junk[3] = { 0x0000001800000077ull, 0, 0 };
    struct vidmm_submit_physical_args pj = pa;
    pj.buffer = junk;
    pj.size = sizeof junk;
    pj.patch_count = 0;
    T_ST(vidmm_submit_physical(f.a, p.ctx, &pj), VIDMM_E_INVALID_ARG);
    uint64_t sub = 0;
    T_ST(vidmm_context_fence(f.a, p.ctx, &sub, NULL), VIDMM_OK);
    T_EQ_U64(sub, 0);   /* nothing was submitted */
    T_ST(vidmm_submit_physical(f.a, p.ctx, &pa), VIDMM_OK);
    T_ST(vidmm_context_wait(f.a, p.ctx, pa.fence, UINT64_MAX), VIDMM_OK);
    T_EQ_U64(softgpu_cpu_read64(f.a, ring, 0), 1);
    softgpu_fx_close(&f);
}

/* ---- lifetimes ---------------------------------------------------------- */

/* Asynchronous engines: a buffer WAITs on a word the test writes later,
 * so its allocations stay in use while the test acts. */
static void deferred_destroy(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open(&f, 32 * MIB, 64 * MIB, 0))
        return;
    struct softgpu_proc p;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    const uint32_t set = VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2);
    vidmm_handle cmd = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_EXPLICIT, set, 64 * KIB, 0, 0);
    vidmm_handle data = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_EXPLICIT, set, 1 * MIB, 9, 0);
    uint64_t vc = softgpu_map(f.a, p.proc, cmd, 64 * KIB), vd = softgpu_map(f.a, p.proc, data, 1 * MIB);
    vidmm_handle list[] = { cmd, data };
    softgpu_make_resident(f.a, p.dev, p.queue, list, 2);
    uint8_t buf[256];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    T_ST(softgpu_cmd_wait(&cb, vc + 1024, 1), VIDMM_OK);
    T_ST(softgpu_cmd_checksum(&cb, vd, 1 * MIB, vc + 2048), VIDMM_OK);
    softgpu_cpu_write(f.a, cmd, 0, buf, cb.size);
    uint64_t fence = 0;
    T_ST(vidmm_submit_virtual(f.a, p.ctx, vc, cb.size, &fence), VIDMM_OK);
    T_ST(vidmm_context_wait(f.a, p.ctx, fence, 20000000), VIDMM_E_TIMEOUT);   /* stalled on the WAIT */
    /* Destroy while in use: the handle goes at once, nothing blocks. */
    T_ST(vidmm_allocation_destroy(f.a, data), VIDMM_OK);
    struct vidmm_allocation_state as;
    T_ST(vidmm_allocation_query(f.a, data, &as), VIDMM_E_INVALID_HANDLE);
    struct vidmm_submit_stats st;
    T_ST(vidmm_submit_get_stats(f.a, &st), VIDMM_OK);
    T_EQ_U64(st.deferred_destroys, 1);
    T_EQ_U64(st.deferred_freed, 0);
    T_EQ_U64(st.in_flight, 1);
    struct vidmm_adapter_info ai;
    T_ST(vidmm_adapter_query_info(f.a, &ai), VIDMM_OK);
    T_EQ_U64(ai.live_allocations, 2);   /* its memory is still there */
    T_EQ(softgpu_checked(f.a, NULL), 0);
    /* Release the WAIT through the GPU's view of the word. */
    struct vidmm_physical_address root;
    T_ST(vidmm_process_root_page_table(f.a, p.proc, &root), VIDMM_OK);
    uint64_t one = 1;
    T_ST(softgpu_write_virtual(f.sg, &root, vc + 1024, &one, 8), VIDMM_OK);
    T_ST(vidmm_context_wait(f.a, p.ctx, fence, UINT64_MAX), VIDMM_OK);
    T_EQ_U64(softgpu_cpu_read64(f.a, cmd, 2048), softgpu_pattern_sum(1 * MIB, 9));
    /* The next entry that reaps frees it. */
    T_ST(vidmm_allocation_destroy(f.a, cmd), VIDMM_OK);
    T_ST(vidmm_submit_get_stats(f.a, &st), VIDMM_OK);
    T_EQ_U64(st.deferred_freed, 1);
    T_ST(vidmm_adapter_query_info(f.a, &ai), VIDMM_OK);
    T_EQ_U64(ai.live_allocations, 0);
    softgpu_fx_close(&f);
}

/* ---- several processes at once under 2x over-commitment --------------------- */

#define CC_VPROCS 3u
#define CC_PPROCS 2u
#define CC_ALLOCS 8u
#define CC_ASIZE (2 * MIB)
#define CC_RINGS 8u
#define CC_RSIZE (1 * MIB)
#define CC_ITERS 8u

/* One process of the concurrent test.  Virtual: per iteration, one of
 * its allocations joins the residency list, a buffer checksums it into a
 * result slot, and it leaves the list again.  Physical: per iteration a
 * buffer checksums two of its rings, listed with the result ring. */
struct cc_thread {
    struct softgpu_fx *f;
    struct softgpu_proc p;
    int physical;
    uint64_t cmd_va;                 /* virtual: iteration i's buffer at cmd_va + i * 4096 */
    uint32_t cmd_size;
    vidmm_handle data[CC_ALLOCS];
    vidmm_handle rings[CC_RINGS], out;
    vidmm_status err;
};

static vidmm_status cc_virtual(struct cc_thread *t, uint32_t it)
{
    struct vidmm_adapter *a = t->f->a;
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof(mr));
    mr.paging_queue = t->p.queue;
    mr.allocations = &t->data[it % CC_ALLOCS];
    mr.count = 1;
    mr.flags = VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER;
    vidmm_status st = vidmm_make_resident(a, t->p.dev, &mr);
    if (st == VIDMM_PENDING)
        st = vidmm_paging_queue_wait(a, t->p.queue, mr.paging_fence_value, UINT64_MAX);
    uint64_t fence = 0;
    if (st == VIDMM_OK)
        st = vidmm_submit_virtual(a, t->p.ctx, t->cmd_va + it * 4096u, t->cmd_size, &fence);
    if (st == VIDMM_OK)
        st = vidmm_context_wait(a, t->p.ctx, fence, UINT64_MAX);
    if (st == VIDMM_OK)
        st = vidmm_evict(a, t->p.dev, &(struct vidmm_evict_args){ .allocations = &t->data[it % CC_ALLOCS], .count = 1, .flags = VIDMM_EVICT_NOT_WRITTEN_TO });
    return st;
}

static vidmm_status cc_physical(struct cc_thread *t, uint32_t it)
{
    uint8_t buf[2 * 32];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    struct vidmm_patch_location pl[4];
    struct vidmm_submit_allocation al[3];
    for (uint32_t k = 0; k < 2; k++) {
        uint32_t at = cb.size;
        (void)softgpu_cmd_checksum(&cb, 0, CC_RSIZE, 0);
        pl[2 * k] = (struct vidmm_patch_location){ k, 0, 0, 0, at + SOFTGPU_CMD_OPERAND(0), 0 };
        pl[2 * k + 1] = (struct vidmm_patch_location){ 2, 0, 0, (it * 2 + k) * 8, at + SOFTGPU_CMD_OPERAND(2), 0 };
        al[k] = (struct vidmm_submit_allocation){ t->rings[(2 * it + k) % CC_RINGS], 0, 0 };
    }
    al[2] = (struct vidmm_submit_allocation){ t->out, VIDMM_SUBMIT_WRITE, 0 };
    struct vidmm_submit_physical_args pa;
    memset(&pa, 0, sizeof(pa));
    pa.buffer = buf;
    pa.size = cb.size;
    pa.allocations = al;
    pa.allocation_count = 3;
    pa.patches = pl;
    pa.patch_count = 4;
    vidmm_status st = vidmm_submit_physical(t->f->a, t->p.ctx, &pa);
    if (st == VIDMM_OK)   /* buf lives on this stack: wait before it goes */
        st = vidmm_context_wait(t->f->a, t->p.ctx, pa.fence, UINT64_MAX);
    return st;
}

static void *cc_main(void *arg)
{
    struct cc_thread *t = arg;
    for (uint32_t it = 0; it < CC_ITERS && t->err == VIDMM_OK; it++)
        t->err = t->physical ? cc_physical(t, it) : cc_virtual(t, it);
    return NULL;
}

static void concurrent_overcommit_mode(int sync)
{
    struct softgpu_fx f;
    /* 8 + 16 MiB of memory segments; the virtual processes own 48 MiB,
     * the physical ones 16 MiB of rings competing for segment 1. */
    if (softgpu_fx_open(&f, 8 * MIB, 16 * MIB, sync))
        return;
    const uint32_t set = VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2);
    struct cc_thread th[CC_VPROCS + CC_PPROCS];
    memset(th, 0, sizeof(th));
    vidmm_handle res[CC_VPROCS];
    for (uint32_t i = 0; i < CC_VPROCS; i++) {
        struct cc_thread *t = &th[i];
        t->f = &f;
        softgpu_new_proc(f.a, &t->p, i % SOFTGPU_NODES, VIDMM_CONTEXT_VIRTUAL);
        uint64_t va[CC_ALLOCS];
        for (uint32_t k = 0; k < CC_ALLOCS; k++) {
            t->data[k] = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_EXPLICIT, set, CC_ASIZE, 100 * i + k + 1, 0);
            va[k] = softgpu_map(f.a, t->p.proc, t->data[k], CC_ASIZE);
        }
        res[i] = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_EXPLICIT, set, 64 * KIB, 0, 0);
        uint64_t vr = softgpu_map(f.a, t->p.proc, res[i], 64 * KIB);
        vidmm_handle cmd = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_EXPLICIT, set, 64 * KIB, 0, 0);
        t->cmd_va = softgpu_map(f.a, t->p.proc, cmd, 64 * KIB);
        for (uint32_t it = 0; it < CC_ITERS; it++) {
            uint8_t buf[32];
            struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
            T_ST(softgpu_cmd_checksum(&cb, va[it % CC_ALLOCS], CC_ASIZE, vr + it * 8), VIDMM_OK);
            softgpu_cpu_write(f.a, cmd, it * 4096u, buf, cb.size);
            t->cmd_size = cb.size;
        }
        vidmm_handle list[2] = { res[i], cmd };
        softgpu_make_resident(f.a, t->p.dev, t->p.queue, list, 2);
    }
    for (uint32_t i = CC_VPROCS; i < CC_VPROCS + CC_PPROCS; i++) {
        struct cc_thread *t = &th[i];
        t->f = &f;
        t->physical = 1;
        softgpu_new_proc(f.a, &t->p, i % SOFTGPU_NODES, VIDMM_CONTEXT_PHYSICAL);
        for (uint32_t k = 0; k < CC_RINGS; k++)
            t->rings[k] = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_RING, 0, CC_RSIZE, 1000 * i + k + 1, 0);
        t->out = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_RING, 0, 64 * KIB, 0, 0);
    }
    T_EQ(softgpu_checked(f.a, NULL), 0);
    pthread_t tid[CC_VPROCS + CC_PPROCS];
    for (uint32_t i = 0; i < CC_VPROCS + CC_PPROCS; i++)
        T_EQ(pthread_create(&tid[i], NULL, cc_main, &th[i]), 0);
    for (uint32_t i = 0; i < CC_VPROCS + CC_PPROCS; i++)
        pthread_join(tid[i], NULL);
    for (uint32_t i = 0; i < CC_VPROCS + CC_PPROCS; i++) {
        T_ST(th[i].err, VIDMM_OK);
        struct vidmm_device_info di;
        T_ST(vidmm_device_query(f.a, th[i].p.dev, &di), VIDMM_OK);
        if (di.lost)
            fprintf(stderr, "process %u lost: fault at 0x%llx flags %u\n", i, (unsigned long long)di.fault_va,
                    di.fault_flags);
    }
    T_EQ(softgpu_checked(f.a, NULL), 0);
    /* Every checksum the GPU took matches the CPU's. */
    for (uint32_t i = 0; i < CC_VPROCS; i++)
        for (uint32_t it = 0; it < CC_ITERS; it++)
            T_EQ_U64(softgpu_cpu_read64(f.a, res[i], it * 8), softgpu_pattern_sum(CC_ASIZE, 100 * i + it % CC_ALLOCS + 1));
    for (uint32_t i = CC_VPROCS; i < CC_VPROCS + CC_PPROCS; i++)
        for (uint32_t it = 0; it < CC_ITERS; it++)
            for (uint32_t k = 0; k < 2; k++)
                T_EQ_U64(softgpu_cpu_read64(f.a, th[i].out, (it * 2 + k) * 8),
                         softgpu_pattern_sum(CC_RSIZE, 1000 * i + (2 * it + k) % CC_RINGS + 1));
    struct vidmm_residency_stats rs;
    T_ST(vidmm_residency_get_stats(f.a, &rs), VIDMM_OK);
    T_CHECK(rs.evictions > 0 && rs.restores > 0);   /* it really was over-committed */
    struct softgpu_stats ss;
    softgpu_get_stats(f.sg, &ss);
    T_EQ_U64(ss.command_buffers, (CC_VPROCS + CC_PPROCS) * CC_ITERS);
    T_EQ_U64(ss.command_faults, 0);
    softgpu_fx_close(&f);
}

static void concurrent_overcommit_async(void)
{
    concurrent_overcommit_mode(0);
}

static void concurrent_overcommit_sync(void)
{
    concurrent_overcommit_mode(1);
}

struct releaser {
    struct softgpu *sg;
    struct vidmm_physical_address root;
    uint64_t va;
};

/* Write 1 at va through the GPU's view after 50 ms: a stalled WAIT ends. */
static void *release_later(void *arg)
{
    struct releaser *r = arg;
    struct timespec ts = { 0, 50000000 };
    nanosleep(&ts, NULL);
    uint64_t one = 1;
    (void)softgpu_write_virtual(r->sg, &r->root, r->va, &one, 8);
    return NULL;
}

/* Eviction skips busy allocations: with one of two allocations held by a
 * stalled buffer, making the other resident in a segment holding only
 * one must wait for the buffer, and evict the first only after it. */
static void eviction_waits_for_work(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open(&f, 4 * MIB, 4 * MIB, 0))
        return;
    struct softgpu_proc p, q;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    softgpu_new_proc(f.a, &q, SOFTGPU_NODE_COMPUTE, VIDMM_CONTEXT_VIRTUAL);
    const uint32_t set = VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2);
    vidmm_handle big = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_EXPLICIT, set, 3 * MIB, 21, 0);
    vidmm_handle cmd = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_EXPLICIT, set, 64 * KIB, 0, 0);
    vidmm_handle big2 = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_EXPLICIT, set, 3 * MIB, 22, 0);
    vidmm_handle cmd2 = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_EXPLICIT, set, 64 * KIB, 0, 0);
    vidmm_handle big3 = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_EXPLICIT, set, 3 * MIB, 23, 0);
    uint64_t vb = softgpu_map(f.a, p.proc, big, 3 * MIB), vc = softgpu_map(f.a, p.proc, cmd, 64 * KIB);
    uint64_t vb2 = softgpu_map(f.a, q.proc, big2, 3 * MIB), vb3 = softgpu_map(f.a, q.proc, big3, 3 * MIB);
    uint64_t vc2 = softgpu_map(f.a, q.proc, cmd2, 64 * KIB);
    vidmm_handle l1[] = { big, cmd };
    softgpu_make_resident(f.a, p.dev, p.queue, l1, 2);
    uint8_t buf[256];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    T_ST(softgpu_cmd_wait(&cb, vc + 1024, 1), VIDMM_OK);
    T_ST(softgpu_cmd_checksum(&cb, vb, 3 * MIB, vc + 2048), VIDMM_OK);
    softgpu_cpu_write(f.a, cmd, 0, buf, cb.size);
    uint64_t fence = 0;
    T_ST(vidmm_submit_virtual(f.a, p.ctx, vc, cb.size, &fence), VIDMM_OK);
    /* p is done with its list once the buffer is submitted: cached, so
     * another process's request may take it (a listed allocation of a
     * process within its budget is never taken). */
    T_ST(vidmm_evict(f.a, p.dev, &(struct vidmm_evict_args){ .allocations = l1, .count = 2, .flags = VIDMM_EVICT_ONLY_IF_NECESSARY }), VIDMM_OK);
    /* q's list needs 6 MiB of the 8: big (busy) may only go once p's
     * buffer ended, which a helper thread allows after a while. */
    struct releaser rl = { f.sg, { 0, 0, 0 }, vc + 1024 };
    T_ST(vidmm_process_root_page_table(f.a, p.proc, &rl.root), VIDMM_OK);
    pthread_t tid;
    T_EQ(pthread_create(&tid, NULL, release_later, &rl), 0);
    vidmm_handle l2[] = { big2, big3, cmd2 };
    softgpu_make_resident(f.a, q.dev, q.queue, l2, 3);
    pthread_join(tid, NULL);
    struct vidmm_submit_stats sst;
    T_ST(vidmm_submit_get_stats(f.a, &sst), VIDMM_OK);
    T_CHECK(sst.eviction_waits >= 1);
    struct vidmm_residency_state rsb;
    T_ST(vidmm_allocation_residency(f.a, big, &rsb), VIDMM_OK);
    T_EQ(rsb.resident, 0);   /* evicted once idle */
    cb.size = 0;
    T_ST(softgpu_cmd_checksum(&cb, vb2, 3 * MIB, vc2 + 2048), VIDMM_OK);
    T_ST(softgpu_cmd_checksum(&cb, vb3, 3 * MIB, vc2 + 2056), VIDMM_OK);
    softgpu_cpu_write(f.a, cmd2, 0, buf, cb.size);
    uint64_t f2 = 0;
    T_ST(vidmm_submit_virtual(f.a, q.ctx, vc2, cb.size, &f2), VIDMM_OK);
    T_ST(vidmm_context_wait(f.a, q.ctx, f2, UINT64_MAX), VIDMM_OK);
    T_ST(vidmm_context_wait(f.a, p.ctx, fence, UINT64_MAX), VIDMM_OK);
    T_EQ_U64(softgpu_cpu_read64(f.a, cmd, 2048), softgpu_pattern_sum(3 * MIB, 21));
    T_EQ_U64(softgpu_cpu_read64(f.a, cmd2, 2048), softgpu_pattern_sum(3 * MIB, 22));
    T_EQ_U64(softgpu_cpu_read64(f.a, cmd2, 2056), softgpu_pattern_sum(3 * MIB, 23));
    softgpu_fx_close(&f);
}

void suite_submit(void);
void suite_submit(void)
{
    t_run("submit.virtual_program", virtual_program);
    t_run("submit.virtual_fault", virtual_fault);
    t_run("submit.physical_patch_and_repatch", physical_patch_and_repatch);
    t_run("submit.physical_rejects", physical_rejects);
    t_run("submit.deferred_destroy", deferred_destroy);
    t_run("submit.eviction_waits_for_work", eviction_waits_for_work);
    t_run("submit.concurrent_overcommit_async", concurrent_overcommit_async);
    t_run("submit.concurrent_overcommit_sync", concurrent_overcommit_sync);
}
