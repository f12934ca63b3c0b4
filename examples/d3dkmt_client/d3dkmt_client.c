/*
 * d3dkmt_client.c - a D3D12-style runtime on the D3DKMT thunks.
 *
 * What a runtime does at start-up and per frame: find the adapter by
 * LUID, create a device, a paging queue and a heap of resources (created
 * evicted), make them resident and wait on the paging fence, map them
 * into the GPU address space, record and submit work on a virtual
 * context, signal a monitored fence behind it and wait on it, and poll
 * the budget - evicting its least important resources when the trim
 * callback says it is over.  Built and run by `make test`, twice: on
 * an in-process softgpu adapter, and with --remote on a running vidmmd.
 *
 *   d3dkmt_client                    in-process softgpu
 *   d3dkmt_client --remote [SOCKET]  vidmmd's adapter (SOCKET, else
 *                                    $VIDMMD_SOCKET, else its default)
 */
#include "d3dkmt/d3dkmthk.h"
#include "d3dkmt/remote.h"
#include "d3dkmt/softgpu.h"
#include "vidmm/softgpu.h"

#include <stdio.h>
#include <string.h>

#define RESOURCES 8
#define CHECK(call) do { NTSTATUS s_ = (call); if (!NT_SUCCESS(s_)) { \
    fprintf(stderr, "%s: 0x%08x\n", #call, (unsigned)s_); return 1; } } while (0)

static UINT64 g_to_trim;
static void on_trim(D3DKMT_TRIMNOTIFICATION *n)
{
    g_to_trim += n->NumBytesToTrim;
}

static NTSTATUS wait(D3DKMT_HANDLE device, D3DKMT_HANDLE fence, UINT64 value)
{
    D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU w;
    memset(&w, 0, sizeof w);
    w.hDevice = device;
    w.ObjectCount = 1;
    w.ObjectHandleArray = &fence;
    w.FenceValueArray = &value;
    return D3DKMTWaitForSynchronizationObjectFromCpu(&w);
}

int main(int argc, char **argv)
{
    struct d3dkmt_runtime_create_info ci = {D3DKMT_RUNTIME_ABI_VERSION, NULL};
    struct d3dkmt_runtime *rt;
    LUID luid = {0x5157u, 0};
    D3DKMT_ENUMADAPTERS2 ea;
    D3DKMT_ADAPTERINFO ai[4];
    D3DKMT_OPENADAPTERFROMLUID oa;
    D3DKMT_CLOSEADAPTER ca;
    D3DKMT_CREATEDEVICE cd;
    D3DKMT_CREATEPAGINGQUEUE pq;
    D3DKMT_REGISTERTRIMNOTIFICATION rg;
    D3DKMT_QUERYVIDEOMEMORYINFO qv;
    D3DKMT_CREATEALLOCATION cr;
    D3DDDI_ALLOCATIONINFO2 info[RESOURCES];
    struct softgpu_alloc_desc desc[RESOURCES];
    D3DKMT_HANDLE heap[RESOURCES];
    D3DDDI_MAKERESIDENT mr;
    D3DDDI_MAPGPUVIRTUALADDRESS mp;
    UINT64 va[RESOURCES];
    D3DKMT_CREATECONTEXTVIRTUAL cc;
    D3DKMT_CREATESYNCHRONIZATIONOBJECT2 cs;
    D3DKMT_SUBMITCOMMAND sc;
    D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMGPU sg;
    D3DKMT_LOCK2 lk;
    D3DKMT_UNLOCK2 ul;
    D3DKMT_DESTROYDEVICE dd;
    struct softgpu_cmdbuf cb;
    UINT64 frame;
    NTSTATUS st;
    int i;

    /* The process's runtime, with a softgpu adapter behind vidmm - in
     * this process, or in the daemon. */
    CHECK(d3dkmt_runtime_open(&ci, &rt));
    if (argc > 1 && strcmp(argv[1], "--remote") == 0)
        CHECK(d3dkmt_runtime_add_remote(rt, argc > 2 ? argv[2] : NULL, luid));
    else
        CHECK(d3dkmt_runtime_add_softgpu(rt, "dgpu", 0, luid));
    CHECK(d3dkmt_runtime_make_current(rt));

    /* DXGI's enumeration, then D3D12CreateDevice on the LUID. */
    memset(&ea, 0, sizeof ea);
    ea.pAdapters = ai;
    ea.NumAdapters = 4;
    CHECK(D3DKMTEnumAdapters2(&ea));
    printf("adapters: %u, first LUID %08x:%08x\n", ea.NumAdapters, (unsigned)ai[0].AdapterLuid.HighPart,
           (unsigned)ai[0].AdapterLuid.LowPart);
    for (i = 0; i < (int)ea.NumAdapters; i++) {
        ca.hAdapter = ai[i].hAdapter;
        CHECK(D3DKMTCloseAdapter(&ca));
    }
    memset(&oa, 0, sizeof oa);
    oa.AdapterLuid = ai[0].AdapterLuid;
    CHECK(D3DKMTOpenAdapterFromLuid(&oa));
    memset(&cd, 0, sizeof cd);
    cd.hAdapter = oa.hAdapter;
    CHECK(D3DKMTCreateDevice(&cd));
    memset(&pq, 0, sizeof pq);
    pq.hDevice = cd.hDevice;
    CHECK(D3DKMTCreatePagingQueue(&pq));
    memset(&rg, 0, sizeof rg);
    rg.AdapterLuid = oa.AdapterLuid;
    rg.hDevice = cd.hDevice;
    rg.Callback = on_trim;
    CHECK(D3DKMTRegisterTrimNotification(&rg));

    /* A heap of resources: one upload buffer (CPU-visible) and textures,
     * created evicted as a D3D12 heap is. */
    memset(desc, 0, sizeof desc);
    memset(info, 0, sizeof info);
    for (i = 0; i < RESOURCES; i++) {
        desc[i].kind = i == 0 ? SOFTGPU_ALLOC_CONSTANT : SOFTGPU_ALLOC_TEXTURE;
        desc[i].cpu_visible = i == 0;
        desc[i].size = i == 0 ? (64u << 10) : (4u << 20);
        info[i].pPrivateDriverData = &desc[i];
        info[i].PrivateDriverDataSize = sizeof desc[i];
    }
    memset(&cr, 0, sizeof cr);
    cr.hDevice = cd.hDevice;
    cr.NumAllocations = RESOURCES;
    cr.pAllocationInfo2 = info;
    CHECK(D3DKMTCreateAllocation2(&cr));
    for (i = 0; i < RESOURCES; i++)
        heap[i] = info[i].hAllocation;

    /* MakeResident, then wait on the paging fence before using them. */
    memset(&mr, 0, sizeof mr);
    mr.hPagingQueue = pq.hPagingQueue;
    mr.NumAllocations = RESOURCES;
    mr.AllocationList = heap;
    st = D3DKMTMakeResident(&mr);
    CHECK(st);
    printf("make resident: %s, paging fence %llu\n", st == STATUS_PENDING ? "pending" : "done",
           (unsigned long long)mr.PagingFenceValue);
    if (st == STATUS_PENDING)
        CHECK(wait(cd.hDevice, pq.hSyncObject, mr.PagingFenceValue));
    for (i = 0; i < RESOURCES; i++) {
        memset(&mp, 0, sizeof mp);
        mp.hPagingQueue = pq.hPagingQueue;
        mp.hAllocation = heap[i];
        mp.SizeInPages = desc[i].size / 4096u;
        mp.Protection.Write = 1;
        mp.Protection.Execute = i == 0;
        CHECK(D3DKMTMapGpuVirtualAddress(&mp));
        va[i] = mp.VirtualAddress;
    }
    CHECK(wait(cd.hDevice, pq.hSyncObject, mp.PagingFenceValue));

    /* A direct queue: context, fence, frames. */
    memset(&cc, 0, sizeof cc);
    cc.hDevice = cd.hDevice;
    cc.NodeOrdinal = SOFTGPU_NODE_GRAPHICS;
    cc.ClientHint = D3DKMT_CLIENTHINT_DX12;
    CHECK(D3DKMTCreateContextVirtual(&cc));
    memset(&cs, 0, sizeof cs);
    cs.hDevice = cd.hDevice;
    cs.Info.Type = D3DDDI_MONITORED_FENCE;
    CHECK(D3DKMTCreateSynchronizationObject2(&cs));
    for (frame = 1; frame <= 3; frame++) {
        memset(&lk, 0, sizeof lk);
        lk.hDevice = cd.hDevice;
        lk.hAllocation = heap[0];
        CHECK(D3DKMTLock2(&lk));
        cb.data = lk.pData;
        cb.size = 0;
        cb.capacity = 4096;
        softgpu_cmd_fill(&cb, va[1], 1u << 20, (uint32_t)frame);
        softgpu_cmd_copy(&cb, va[2], va[1], 1u << 20);
        softgpu_cmd_write64(&cb, va[0] + 8192, frame);
        ul.hDevice = cd.hDevice;
        ul.hAllocation = heap[0];
        CHECK(D3DKMTUnlock2(&ul));
        memset(&sc, 0, sizeof sc);
        sc.Commands = va[0];
        sc.CommandLength = cb.size;
        sc.BroadcastContextCount = 1;
        sc.BroadcastContext[0] = cc.hContext;
        CHECK(D3DKMTSubmitCommand(&sc));
        memset(&sg, 0, sizeof sg);
        sg.hContext = cc.hContext;
        sg.ObjectCount = 1;
        sg.ObjectHandleArray = &cs.hSyncObject;
        sg.MonitoredFenceValueArray = &frame;
        CHECK(D3DKMTSignalSynchronizationObjectFromGpu(&sg));
        CHECK(wait(cd.hDevice, cs.hSyncObject, frame));
        CHECK(D3DKMTLock2(&lk));
        printf("frame %llu: fence %llu, GPU wrote %llu\n", (unsigned long long)frame,
               (unsigned long long)*(const UINT64 *)cs.Info.MonitoredFence.FenceValueCPUVirtualAddress,
               (unsigned long long)((const UINT64 *)lk.pData)[1024]);
        if (((const UINT64 *)lk.pData)[1024] != frame) {   /* the write64 at +8192 */
            fprintf(stderr, "frame %llu: the GPU's write is not there\n", (unsigned long long)frame);
            return 1;
        }
        CHECK(D3DKMTUnlock2(&ul));

        /* Budget polling, as IDXGIAdapter3::QueryVideoMemoryInfo. */
        memset(&qv, 0, sizeof qv);
        qv.hAdapter = oa.hAdapter;
        qv.MemorySegmentGroup = D3DKMT_MEMORY_SEGMENT_GROUP_LOCAL;
        CHECK(D3DKMTQueryVideoMemoryInfo(&qv));
        printf("  local budget %llu MiB, usage %llu MiB\n", (unsigned long long)(qv.Budget >> 20),
               (unsigned long long)(qv.CurrentUsage >> 20));
        if (g_to_trim || qv.CurrentUsage > qv.Budget) {
            D3DKMT_EVICT ev;
            memset(&ev, 0, sizeof ev);
            ev.hDevice = cd.hDevice;
            ev.NumAllocations = 1;
            ev.AllocationList = &heap[RESOURCES - 1];
            CHECK(D3DKMTEvict(&ev));
            g_to_trim = 0;
        }
    }

    dd.hDevice = cd.hDevice;
    CHECK(D3DKMTDestroyDevice(&dd));
    ca.hAdapter = oa.hAdapter;
    CHECK(D3DKMTCloseAdapter(&ca));
    d3dkmt_runtime_close(rt);
    printf("d3dkmt_client: ok\n");
    return 0;
}
