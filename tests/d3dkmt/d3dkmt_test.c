/*
 * d3dkmt_test.c - conformance of the D3DKMT thunks: the documented
 * behaviour of each thunk (Microsoft's reference pages) and what Wine's
 * d3dkmt tests expect of Windows (NULL and zero handles, budget and
 * reservation invariants, a fresh process's reservation of 0, open and
 * close order), plus vidmm's own rules (docs/D3DKMT.md).
 *
 * The same cases run twice (tests/run.sh, tests/daemon/run.sh): on an
 * in-process softgpu adapter, and with --remote SOCKET on the adapter
 * of a vidmmd through the remote backend (d3dkmt_runtime_add_remote);
 * the few lines that differ say why.
 */
#include "harness/fault_alloc.h"
#include "harness/test.h"

#include "d3dkmt/d3dkmthk.h"
#include "d3dkmt/remote.h"
#include "d3dkmt/softgpu.h"
#include "vidmm-client/client.h"
#include "vidmm/vidmm.h"
#include "vidmm/softgpu.h"

#include <stdlib.h>
#include <string.h>

void suite_d3dkmt(void);
void d3dkmt_test_set_remote(const char *socket_path);

/* NULL: in-process softgpu adapters; else vidmmd's socket. */
static const char *g_remote;

void d3dkmt_test_set_remote(const char *socket_path)
{
    g_remote = socket_path;
}

#define T_NT(expr, want) \
    do { NTSTATUS t_s_ = (expr), t_w_ = (want); \
         if (t_s_ != t_w_) { char t_m_[256]; \
             snprintf(t_m_, sizeof t_m_, "%s -> 0x%08x, want 0x%08x", #expr, (unsigned)t_s_, (unsigned)t_w_); \
             t_fail(__FILE__, __LINE__, t_m_); } } while (0)

static const LUID k_luid = {0x1234u, 0};

/* An adapter for the runtime: a synchronous softgpu of the preset, or
 * (remote) a new connection to the daemon - whose adapter is a dgpu
 * (tests/daemon/run.sh starts it so). */
static NTSTATUS add_gpu(struct d3dkmt_runtime *rt, const char *preset, LUID luid)
{
    if (g_remote)
        return d3dkmt_runtime_add_remote(rt, g_remote, luid);
    return d3dkmt_runtime_add_softgpu(rt, preset, 1, luid);
}

/* One process: a runtime with a synchronous dgpu, current on this thread. */
struct fx {
    struct fault_alloc fa;
    struct d3dkmt_runtime *rt;
    D3DKMT_HANDLE adapter, device, queue, queue_sync;
};

static void fx_open(struct fx *f)
{
    struct d3dkmt_runtime_create_info ci = {D3DKMT_RUNTIME_ABI_VERSION, NULL};
    D3DKMT_OPENADAPTERFROMLUID oa;
    D3DKMT_CREATEDEVICE cd;
    D3DKMT_CREATEPAGINGQUEUE pq;
    memset(f, 0, sizeof *f);
    fault_alloc_init(&f->fa);
    ci.host_allocator = &f->fa.ha;
    T_NT(d3dkmt_runtime_open(&ci, &f->rt), STATUS_SUCCESS);
    T_NT(add_gpu(f->rt, "dgpu", k_luid), STATUS_SUCCESS);
    T_NT(d3dkmt_runtime_bind_thread(f->rt), STATUS_SUCCESS);
    memset(&oa, 0, sizeof oa);
    oa.AdapterLuid = k_luid;
    T_NT(D3DKMTOpenAdapterFromLuid(&oa), STATUS_SUCCESS);
    f->adapter = oa.hAdapter;
    memset(&cd, 0, sizeof cd);
    cd.hAdapter = f->adapter;
    T_NT(D3DKMTCreateDevice(&cd), STATUS_SUCCESS);
    f->device = cd.hDevice;
    memset(&pq, 0, sizeof pq);
    pq.hDevice = f->device;
    T_NT(D3DKMTCreatePagingQueue(&pq), STATUS_SUCCESS);
    f->queue = pq.hPagingQueue;
    f->queue_sync = pq.hSyncObject;
    T_CHECK(pq.FenceValueCPUVirtualAddress != NULL);
}

static void fx_close(struct fx *f)
{
    d3dkmt_runtime_close(f->rt);
    T_CHECK(d3dkmt_runtime_current() == NULL);
    T_EQ(f->fa.live_blocks, 0);
    T_EQ(f->fa.live_bytes, 0);
}

static NTSTATUS create_alloc(struct fx *f, enum softgpu_alloc_kind kind, uint64_t size, int resident,
                             D3DKMT_HANDLE *out)
{
    struct softgpu_alloc_desc desc;
    D3DDDI_ALLOCATIONINFO2 info;
    D3DKMT_CREATEALLOCATION ca;
    NTSTATUS st;
    memset(&desc, 0, sizeof desc);
    desc.kind = kind;
    desc.cpu_visible = kind == SOFTGPU_ALLOC_CONSTANT || kind == SOFTGPU_ALLOC_STAGING;
    desc.size = size;
    memset(&info, 0, sizeof info);
    info.pPrivateDriverData = &desc;
    info.PrivateDriverDataSize = sizeof desc;
    memset(&ca, 0, sizeof ca);
    ca.hDevice = f->device;
    ca.NumAllocations = 1;
    ca.pAllocationInfo2 = &info;
    ca.Flags.CreateResident = resident ? 1u : 0u;
    st = D3DKMTCreateAllocation2(&ca);
    *out = info.hAllocation;
    return st;
}

static NTSTATUS wait_fence(D3DKMT_HANDLE device, D3DKMT_HANDLE sync, uint64_t value)
{
    D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU w;
    memset(&w, 0, sizeof w);
    w.hDevice = device;
    w.ObjectCount = 1;
    w.ObjectHandleArray = &sync;
    w.FenceValueArray = &value;
    return D3DKMTWaitForSynchronizationObjectFromCpu(&w);
}

static NTSTATUS make_resident(struct fx *f, const D3DKMT_HANDLE *list, UINT n, D3DDDI_MAKERESIDENT *mr)
{
    NTSTATUS st;
    memset(mr, 0, sizeof *mr);
    mr->hPagingQueue = f->queue;
    mr->NumAllocations = n;
    mr->AllocationList = list;
    st = D3DKMTMakeResident(mr);
    if (st == STATUS_PENDING)
        T_NT(wait_fence(f->device, f->queue_sync, mr->PagingFenceValue), STATUS_SUCCESS);
    return st;
}

/* ---- statuses ----------------------------------------------------------- */

struct ntname {
    NTSTATUS st;
    const char *name;
};
static const struct ntname k_names[] = {
    {STATUS_SUCCESS, "STATUS_SUCCESS"}, {STATUS_PENDING, "STATUS_PENDING"},
    {STATUS_NO_MORE_ENTRIES, "STATUS_NO_MORE_ENTRIES"}, {STATUS_INVALID_PARAMETER, "STATUS_INVALID_PARAMETER"},
    {STATUS_INVALID_HANDLE, "STATUS_INVALID_HANDLE"}, {STATUS_NO_MEMORY, "STATUS_NO_MEMORY"},
    {STATUS_GRAPHICS_NO_VIDEO_MEMORY, "STATUS_GRAPHICS_NO_VIDEO_MEMORY"},
    {STATUS_INTEGER_OVERFLOW, "STATUS_INTEGER_OVERFLOW"},
    {STATUS_DATATYPE_MISALIGNMENT, "STATUS_DATATYPE_MISALIGNMENT"},
    {STATUS_GRAPHICS_INVALID_DRIVER_MODEL, "STATUS_GRAPHICS_INVALID_DRIVER_MODEL"},
    {STATUS_UNSUCCESSFUL, "STATUS_UNSUCCESSFUL"}, {STATUS_NOT_SUPPORTED, "STATUS_NOT_SUPPORTED"},
    {STATUS_DEVICE_BUSY, "STATUS_DEVICE_BUSY"},
    {STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER, "STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER"},
    {STATUS_GRAPHICS_ALLOCATION_BUSY, "STATUS_GRAPHICS_ALLOCATION_BUSY"},
    {STATUS_INVALID_DEVICE_STATE, "STATUS_INVALID_DEVICE_STATE"}, {STATUS_DEVICE_REMOVED, "STATUS_DEVICE_REMOVED"},
    {STATUS_TIMEOUT, "STATUS_TIMEOUT"}, {STATUS_INTERNAL_ERROR, "STATUS_INTERNAL_ERROR"},
    {STATUS_BUFFER_TOO_SMALL, "STATUS_BUFFER_TOO_SMALL"},
};

static const char *nt_name(NTSTATUS st)
{
    size_t i;
    for (i = 0; i < sizeof k_names / sizeof k_names[0]; i++)
        if (k_names[i].st == st)
            return k_names[i].name;
    return NULL;
}

/* docs/D3DKMT.md has one row per vidmm status (every enum value of
 * vidmm/status.h), naming the NTSTATUS the thunks answer with; the
 * library's mapping agrees with it. */
static void test_status_table(void)
{
    FILE *fp = fopen("docs/D3DKMT.md", "r");
    static char doc[200000];
    size_t len;
    int st;
    T_CHECK(fp != NULL);
    if (!fp)
        return;
    len = fread(doc, 1, sizeof doc - 1, fp);
    fclose(fp);
    doc[len] = 0;
    for (st = -23; st <= 2; st++) {
        const char *vname = vidmm_status_str((vidmm_status)st);
        const char *nname = nt_name(d3dkmt_ntstatus_from_vidmm(st));
        char row[160];
        T_CHECK(strncmp(vname, "VIDMM_", 6) == 0);
        T_CHECK(nname != NULL);
        if (!nname)
            continue;
        snprintf(row, sizeof row, "| `%s` | `%s` |", vname, nname);
        if (!strstr(doc, row)) {
            char m[220];
            snprintf(m, sizeof m, "docs/D3DKMT.md lacks the row %s", row);
            t_fail(__FILE__, __LINE__, m);
        }
    }
    /* Only a vidmm defect maps to STATUS_INTERNAL_ERROR. */
    for (st = -22; st <= 2; st++)
        if (st != VIDMM_E_INTERNAL)
            T_CHECK(d3dkmt_ntstatus_from_vidmm(st) != STATUS_INTERNAL_ERROR);
    T_CHECK(vidmm_status_str((vidmm_status)-24)[0] != 'V' || strcmp(vidmm_status_str((vidmm_status)-24), vidmm_status_str((vidmm_status)-23)) != 0);
}

/* ---- runtime -------------------------------------------------------------- */

static void test_no_runtime(void)
{
    D3DKMT_ENUMADAPTERS2 ea;
    D3DKMT_CLOSEADAPTER ca = {0x40000001u};
    d3dkmt_runtime_bind_thread(NULL);
    d3dkmt_runtime_make_current(NULL);
    memset(&ea, 0, sizeof ea);
    T_NT(D3DKMTEnumAdapters2(&ea), STATUS_INVALID_PARAMETER);
    T_NT(D3DKMTCloseAdapter(&ca), STATUS_INVALID_PARAMETER);
    T_NT(d3dkmt_runtime_open(NULL, NULL), STATUS_INVALID_PARAMETER);
    {
        struct d3dkmt_runtime_create_info ci = {99u, NULL};
        struct d3dkmt_runtime *rt = NULL;
        T_NT(d3dkmt_runtime_open(&ci, &rt), STATUS_INVALID_PARAMETER);
        ci.abi_version = D3DKMT_RUNTIME_ABI_VERSION;
        T_NT(d3dkmt_runtime_open(&ci, &rt), STATUS_SUCCESS);
        T_NT(d3dkmt_runtime_add_adapter(rt, NULL, k_luid), STATUS_INVALID_PARAMETER);
        {
            LUID zero = {0, 0};
            T_NT(add_gpu(rt, "dgpu", zero), STATUS_INVALID_PARAMETER);
            T_NT(d3dkmt_runtime_add_remote(NULL, g_remote, k_luid), STATUS_INVALID_PARAMETER);
        }
        /* An adapter that cannot be had: an unknown preset; no daemon
         * listening there. */
        if (g_remote)
            T_NT(d3dkmt_runtime_add_remote(rt, "/nonexistent/vidmmd.sock", k_luid), STATUS_DEVICE_REMOVED);
        else
            T_NT(d3dkmt_runtime_add_softgpu(rt, "nosuch", 1, k_luid), STATUS_INVALID_PARAMETER);
        T_NT(add_gpu(rt, "igpu", k_luid), STATUS_SUCCESS);
        T_NT(add_gpu(rt, "igpu", k_luid), STATUS_INVALID_PARAMETER);
        {
            /* Each kind answers for its own: the library adapter of an
             * in-process one, the connection of a remote one. */
            struct vidmm_adapter *va = NULL;
            struct vidmm_client *conn = NULL;
            UINT64 process = 0;
            T_NT(d3dkmt_runtime_vidmm_process(rt, k_luid, &va, &process),
                 g_remote ? STATUS_NOT_SUPPORTED : STATUS_SUCCESS);
            T_NT(d3dkmt_runtime_vidmm_client(rt, k_luid, &conn), g_remote ? STATUS_SUCCESS : STATUS_NOT_SUPPORTED);
            T_CHECK(g_remote ? conn != NULL : va != NULL);
        }
        /* The process's runtime serves threads that bound none. */
        T_NT(d3dkmt_runtime_make_current(rt), STATUS_SUCCESS);
        T_CHECK(d3dkmt_runtime_current() == rt);
        d3dkmt_runtime_close(rt);
        T_CHECK(d3dkmt_runtime_current() == NULL);
    }
}

/* ---- adapters -------------------------------------------------------------- */

static void test_enum_adapters(void)
{
    struct fx f;
    D3DKMT_ENUMADAPTERS2 ea;
    D3DKMT_ADAPTERINFO infos[4];
    D3DKMT_CLOSEADAPTER cl;
    LUID second = {0x99u, 1};
    UINT i;
    fx_open(&f);
    T_NT(add_gpu(f.rt, "igpu", second), STATUS_SUCCESS);
    T_NT(D3DKMTEnumAdapters2(NULL), STATUS_INVALID_PARAMETER);
    memset(&ea, 0, sizeof ea);
    T_NT(D3DKMTEnumAdapters2(&ea), STATUS_SUCCESS);
    T_EQ(ea.NumAdapters, 2);
    ea.pAdapters = infos;
    T_NT(D3DKMTEnumAdapters2(&ea), STATUS_SUCCESS);
    T_EQ(ea.NumAdapters, 2);
    for (i = 0; i < ea.NumAdapters; i++) {
        T_CHECK(infos[i].hAdapter != 0);
        T_CHECK(infos[i].AdapterLuid.LowPart || infos[i].AdapterLuid.HighPart);
        cl.hAdapter = infos[i].hAdapter;
        T_NT(D3DKMTCloseAdapter(&cl), STATUS_SUCCESS);
    }
    T_CHECK(infos[0].AdapterLuid.LowPart == k_luid.LowPart);
    T_CHECK(infos[1].AdapterLuid.HighPart == 1);
    ea.NumAdapters = 0;
    T_NT(D3DKMTEnumAdapters2(&ea), STATUS_BUFFER_TOO_SMALL);
    T_EQ(ea.NumAdapters, 2);
    fx_close(&f);
}

static void test_open_close_adapter(void)
{
    struct fx f;
    D3DKMT_OPENADAPTERFROMLUID oa;
    D3DKMT_CLOSEADAPTER cl;
    D3DKMT_CREATEDEVICE cd;
    D3DKMT_DESTROYDEVICE dd;
    D3DKMT_HANDLE h2;
    fx_open(&f);
    T_NT(D3DKMTOpenAdapterFromLuid(NULL), STATUS_INVALID_PARAMETER);
    memset(&oa, 0, sizeof oa);
    oa.AdapterLuid.LowPart = 0x4321u;
    T_NT(D3DKMTOpenAdapterFromLuid(&oa), STATUS_INVALID_PARAMETER);
    oa.AdapterLuid = k_luid;
    T_NT(D3DKMTOpenAdapterFromLuid(&oa), STATUS_SUCCESS);
    h2 = oa.hAdapter;
    T_CHECK(h2 != 0 && h2 != f.adapter);
    T_NT(D3DKMTCloseAdapter(NULL), STATUS_INVALID_PARAMETER);
    cl.hAdapter = 0;
    T_NT(D3DKMTCloseAdapter(&cl), STATUS_INVALID_PARAMETER);
    /* A device outlives the adapter handle it was created through. */
    memset(&cd, 0, sizeof cd);
    cd.hAdapter = h2;
    T_NT(D3DKMTCreateDevice(&cd), STATUS_SUCCESS);
    cl.hAdapter = h2;
    T_NT(D3DKMTCloseAdapter(&cl), STATUS_SUCCESS);
    T_NT(D3DKMTCloseAdapter(&cl), STATUS_INVALID_PARAMETER);
    cd.hAdapter = h2;
    {
        D3DKMT_CREATEDEVICE cd2 = cd;
        T_NT(D3DKMTCreateDevice(&cd2), STATUS_INVALID_PARAMETER);
    }
    dd.hDevice = cd.hDevice;
    T_NT(D3DKMTDestroyDevice(&dd), STATUS_SUCCESS);
    /* Handles are typed: a device handle is no adapter. */
    cl.hAdapter = f.device;
    T_NT(D3DKMTCloseAdapter(&cl), STATUS_INVALID_PARAMETER);
    fx_close(&f);
}

static void test_create_device(void)
{
    struct fx f;
    D3DKMT_CREATEDEVICE cd;
    D3DKMT_DESTROYDEVICE dd;
    fx_open(&f);
    T_NT(D3DKMTCreateDevice(NULL), STATUS_INVALID_PARAMETER);
    memset(&cd, 0, sizeof cd);
    T_NT(D3DKMTCreateDevice(&cd), STATUS_INVALID_PARAMETER);
    cd.hAdapter = f.adapter;
    cd.pCommandBuffer = &cd;
    cd.AllocationListSize = 7;
    T_NT(D3DKMTCreateDevice(&cd), STATUS_SUCCESS);
    T_CHECK(cd.hDevice != 0);
    T_CHECK(cd.pCommandBuffer == NULL && cd.CommandBufferSize == 0);
    T_CHECK(cd.pAllocationList == NULL && cd.AllocationListSize == 0);
    T_CHECK(cd.pPatchLocationList == NULL && cd.PatchLocationListSize == 0);
    T_NT(D3DKMTDestroyDevice(NULL), STATUS_INVALID_PARAMETER);
    dd.hDevice = 0;
    T_NT(D3DKMTDestroyDevice(&dd), STATUS_INVALID_PARAMETER);
    dd.hDevice = cd.hDevice;
    T_NT(D3DKMTDestroyDevice(&dd), STATUS_SUCCESS);
    T_NT(D3DKMTDestroyDevice(&dd), STATUS_INVALID_PARAMETER);
    fx_close(&f);
}

static void test_query_adapter_info(void)
{
    struct fx f;
    D3DKMT_QUERYADAPTERINFO q;
    unsigned char buf[256];
    BOOL b = 1;
    D3DKMT_DRIVERVERSION v = 0;
    D3DKMT_SEGMENTSIZEINFO ss;
    D3DKMT_SEGMENTGROUPSIZEINFO sg;
    D3DKMT_WDDM_2_0_CAPS caps;
    D3DKMT_ADAPTERTYPE at;
    fx_open(&f);
    T_NT(D3DKMTQueryAdapterInfo(NULL), STATUS_INVALID_PARAMETER);
    memset(&q, 0, sizeof q);
    q.hAdapter = f.adapter;
    q.Type = KMTQAITYPE_CHECKDRIVERUPDATESTATUS;
    q.PrivateDriverDataSize = sizeof(BOOL);
    T_NT(D3DKMTQueryAdapterInfo(&q), STATUS_INVALID_PARAMETER);      /* NULL buffer */
    q.pPrivateDriverData = buf;
    q.PrivateDriverDataSize = sizeof(BOOL) - 1;
    T_NT(D3DKMTQueryAdapterInfo(&q), STATUS_INVALID_PARAMETER);      /* too small */
    q.pPrivateDriverData = &b;
    q.PrivateDriverDataSize = sizeof b;
    T_NT(D3DKMTQueryAdapterInfo(&q), STATUS_SUCCESS);
    T_EQ(b, 0);
    q.Type = KMTQAITYPE_DRIVERVERSION;
    q.pPrivateDriverData = &v;
    q.PrivateDriverDataSize = sizeof v - 1;
    T_NT(D3DKMTQueryAdapterInfo(&q), STATUS_INVALID_PARAMETER);
    q.PrivateDriverDataSize = sizeof v;
    T_NT(D3DKMTQueryAdapterInfo(&q), STATUS_SUCCESS);
    T_CHECK(v >= KMT_DRIVERVERSION_WDDM_2_0);
    q.Type = KMTQAITYPE_GETSEGMENTSIZE;
    q.pPrivateDriverData = &ss;
    q.PrivateDriverDataSize = sizeof ss;
    T_NT(D3DKMTQueryAdapterInfo(&q), STATUS_SUCCESS);
    /* dgpu: 256 MiB visible + 4 GiB invisible video memory; a 2 GiB aperture. */
    T_EQ_U64(ss.DedicatedVideoMemorySize, (256ull << 20) + (4ull << 30));
    T_EQ_U64(ss.DedicatedSystemMemorySize, 0);
    T_CHECK(ss.SharedSystemMemorySize > 0 && ss.SharedSystemMemorySize <= (2ull << 30));
    memset(&sg, 0, sizeof sg);
    q.Type = KMTQAITYPE_GETSEGMENTGROUPSIZE;
    q.pPrivateDriverData = &sg;
    q.PrivateDriverDataSize = sizeof sg;
    T_NT(D3DKMTQueryAdapterInfo(&q), STATUS_SUCCESS);
    T_EQ_U64(sg.LocalMemory, ss.DedicatedVideoMemorySize);
    T_EQ_U64(sg.LegacyInfo.SharedSystemMemorySize, ss.SharedSystemMemorySize);
    sg.PhysicalAdapterIndex = 1;
    T_NT(D3DKMTQueryAdapterInfo(&q), STATUS_INVALID_PARAMETER);
    q.Type = KMTQAITYPE_WDDM_2_0_CAPS;
    q.pPrivateDriverData = &caps;
    q.PrivateDriverDataSize = sizeof caps;
    T_NT(D3DKMTQueryAdapterInfo(&q), STATUS_SUCCESS);
    T_EQ(caps.GpuMmuSupported, 1);
    q.Type = KMTQAITYPE_ADAPTERTYPE;
    q.pPrivateDriverData = &at;
    q.PrivateDriverDataSize = sizeof at;
    T_NT(D3DKMTQueryAdapterInfo(&q), STATUS_SUCCESS);
    T_EQ(at.RenderSupported, 1);
    T_EQ(at.DisplaySupported, 0);
    q.Type = KMTQAITYPE_UMDRIVERNAME;
    T_NT(D3DKMTQueryAdapterInfo(&q), STATUS_NOT_SUPPORTED);
    q.Type = KMTQAITYPE_ADAPTERTYPE;
    q.hAdapter = 0xdeadbeefu;
    T_NT(D3DKMTQueryAdapterInfo(&q), STATUS_INVALID_PARAMETER);
    fx_close(&f);
}

/* ---- budgets ---------------------------------------------------------------- */

static void check_budget_invariants(D3DKMT_HANDLE adapter, D3DKMT_MEMORY_SEGMENT_GROUP g, UINT64 reservation)
{
    D3DKMT_QUERYVIDEOMEMORYINFO q;
    memset(&q, 0, sizeof q);
    q.hAdapter = adapter;
    q.MemorySegmentGroup = g;
    T_NT(D3DKMTQueryVideoMemoryInfo(&q), STATUS_SUCCESS);
    T_CHECK(q.Budget >= q.AvailableForReservation);
    T_CHECK(q.CurrentUsage <= q.Budget);
    T_EQ_U64(q.CurrentReservation, reservation);
    T_CHECK(q.Budget > 0);
}

static void test_video_memory_info(void)
{
    struct fx f;
    D3DKMT_QUERYVIDEOMEMORYINFO q;
    D3DKMT_CHANGEVIDEOMEMORYRESERVATION cr;
    fx_open(&f);
    T_NT(D3DKMTQueryVideoMemoryInfo(NULL), STATUS_INVALID_PARAMETER);
    check_budget_invariants(f.adapter, D3DKMT_MEMORY_SEGMENT_GROUP_LOCAL, 0);
    check_budget_invariants(f.adapter, D3DKMT_MEMORY_SEGMENT_GROUP_NON_LOCAL, 0);
    memset(&q, 0, sizeof q);
    q.hAdapter = f.adapter;
    q.hProcess = D3DKMT_CURRENT_PROCESS;
    T_NT(D3DKMTQueryVideoMemoryInfo(&q), STATUS_SUCCESS);
    q.hProcess = (HANDLE)(uintptr_t)0xdeadbeef;
    T_NT(D3DKMTQueryVideoMemoryInfo(&q), STATUS_INVALID_HANDLE);
    q.hProcess = NULL;
    q.hAdapter = 0xdeadbeefu;
    T_NT(D3DKMTQueryVideoMemoryInfo(&q), STATUS_INVALID_PARAMETER);
    q.hAdapter = f.adapter;
    q.PhysicalAdapterIndex = 99;
    T_NT(D3DKMTQueryVideoMemoryInfo(&q), STATUS_INVALID_PARAMETER);
    q.PhysicalAdapterIndex = 0;
    q.MemorySegmentGroup = (D3DKMT_MEMORY_SEGMENT_GROUP)(D3DKMT_MEMORY_SEGMENT_GROUP_NON_LOCAL + 1);
    T_NT(D3DKMTQueryVideoMemoryInfo(&q), STATUS_INVALID_PARAMETER);
    q.MemorySegmentGroup = D3DKMT_MEMORY_SEGMENT_GROUP_LOCAL;
    T_NT(D3DKMTQueryVideoMemoryInfo(&q), STATUS_SUCCESS);
    /* Reserve half of what is available, then more than that. */
    memset(&cr, 0, sizeof cr);
    cr.hAdapter = f.adapter;
    cr.MemorySegmentGroup = D3DKMT_MEMORY_SEGMENT_GROUP_LOCAL;
    cr.Reservation = q.AvailableForReservation / 2;
    T_NT(D3DKMTChangeVideoMemoryReservation(&cr), STATUS_SUCCESS);
    check_budget_invariants(f.adapter, D3DKMT_MEMORY_SEGMENT_GROUP_LOCAL, cr.Reservation);
    cr.Reservation = q.AvailableForReservation + 4096;
    T_CHECK(D3DKMTChangeVideoMemoryReservation(&cr) != STATUS_SUCCESS);
    T_NT(D3DKMTChangeVideoMemoryReservation(NULL), STATUS_INVALID_PARAMETER);
    cr.hProcess = (HANDLE)(uintptr_t)0x1234;
    T_NT(D3DKMTChangeVideoMemoryReservation(&cr), STATUS_INVALID_HANDLE);
    fx_close(&f);
}

/* A second runtime on the same adapter is a second process: its own
 * handles, a reservation of 0 whatever the first one reserved. */
static void test_second_process(void)
{
    struct fx f;
    struct d3dkmt_runtime_create_info ci = {D3DKMT_RUNTIME_ABI_VERSION, NULL};
    struct d3dkmt_runtime *rt2 = NULL;
    D3DKMT_CHANGEVIDEOMEMORYRESERVATION cr;
    D3DKMT_OPENADAPTERFROMLUID oa;
    D3DKMT_DESTROYDEVICE dd;
    struct vidmm_adapter *va = NULL;
    struct softgpu *sg = NULL;
    struct softgpu_config cfg;
    struct vidmm_adapter_create_info ai;
    LUID luid = {7, 0};
    fx_open(&f);
    T_NT(d3dkmt_runtime_open(&ci, &rt2), STATUS_SUCCESS);
    if (g_remote) {
        /* Two connections to the daemon: two processes on its adapter. */
        T_NT(d3dkmt_runtime_add_remote(f.rt, g_remote, luid), STATUS_SUCCESS);
        T_NT(d3dkmt_runtime_add_remote(rt2, g_remote, luid), STATUS_SUCCESS);
    } else {
        memset(&cfg, 0, sizeof cfg);
        cfg.preset = "dgpu";
        cfg.synchronous = 1;
        T_ST(softgpu_create(&cfg, &sg), VIDMM_OK);
        memset(&ai, 0, sizeof ai);
        softgpu_fill_adapter_create_info(sg, &ai);
        ai.abi_version = VIDMM_ABI_VERSION;
        T_ST(vidmm_adapter_open(&ai, &va), VIDMM_OK);
        T_NT(d3dkmt_runtime_add_adapter(f.rt, va, luid), STATUS_SUCCESS);
        T_NT(d3dkmt_runtime_add_adapter(rt2, va, luid), STATUS_SUCCESS);
    }
    memset(&oa, 0, sizeof oa);
    oa.AdapterLuid = luid;
    T_NT(D3DKMTOpenAdapterFromLuid(&oa), STATUS_SUCCESS);
    memset(&cr, 0, sizeof cr);
    cr.hAdapter = oa.hAdapter;
    cr.Reservation = 64ull << 20;
    T_NT(D3DKMTChangeVideoMemoryReservation(&cr), STATUS_SUCCESS);
    check_budget_invariants(oa.hAdapter, D3DKMT_MEMORY_SEGMENT_GROUP_LOCAL, 64ull << 20);
    /* The other process. */
    d3dkmt_runtime_bind_thread(rt2);
    dd.hDevice = f.device;
    T_NT(D3DKMTDestroyDevice(&dd), STATUS_INVALID_PARAMETER);   /* not its handle */
    {
        D3DKMT_OPENADAPTERFROMLUID oa2;
        memset(&oa2, 0, sizeof oa2);
        oa2.AdapterLuid = luid;
        T_NT(D3DKMTOpenAdapterFromLuid(&oa2), STATUS_SUCCESS);
        check_budget_invariants(oa2.hAdapter, D3DKMT_MEMORY_SEGMENT_GROUP_LOCAL, 0);
        check_budget_invariants(oa2.hAdapter, D3DKMT_MEMORY_SEGMENT_GROUP_NON_LOCAL, 0);
    }
    d3dkmt_runtime_close(rt2);
    d3dkmt_runtime_bind_thread(f.rt);
    T_NT(D3DKMTDestroyDevice(&dd), STATUS_SUCCESS);
    fx_close(&f);
    if (va)
        vidmm_adapter_close(va);
    if (sg)
        softgpu_destroy(sg);
}

/* ---- allocations --------------------------------------------------------------- */

static void test_allocations(void)
{
    struct fx f;
    D3DKMT_HANDLE a = 0, b = 0;
    D3DKMT_CREATEALLOCATION ca;
    D3DDDI_ALLOCATIONINFO2 info[2];
    D3DKMT_DESTROYALLOCATION2 da;
    D3DKMT_LOCK2 lk;
    D3DKMT_UNLOCK2 ul;
    struct softgpu_alloc_desc desc;
    fx_open(&f);
    T_NT(D3DKMTCreateAllocation2(NULL), STATUS_INVALID_PARAMETER);
    memset(&ca, 0, sizeof ca);
    ca.hDevice = f.device;
    ca.NumAllocations = 1;
    T_NT(D3DKMTCreateAllocation2(&ca), STATUS_INVALID_PARAMETER);   /* no info */
    memset(info, 0, sizeof info);
    ca.pAllocationInfo2 = info;
    T_NT(D3DKMTCreateAllocation2(&ca), STATUS_INVALID_PARAMETER);   /* no private data */
    memset(&desc, 0, sizeof desc);
    desc.kind = SOFTGPU_ALLOC_CONSTANT;
    desc.cpu_visible = 1;
    desc.size = 64 * 1024;
    info[0].pPrivateDriverData = &desc;
    info[0].PrivateDriverDataSize = sizeof desc;
    info[1] = info[0];
    ca.NumAllocations = 0;
    T_NT(D3DKMTCreateAllocation2(&ca), STATUS_INVALID_PARAMETER);
    ca.NumAllocations = 2;
    ca.hDevice = 0;
    T_NT(D3DKMTCreateAllocation2(&ca), STATUS_INVALID_PARAMETER);
    ca.hDevice = f.device;
    ca.Flags.CreateShared = 1;
    T_NT(D3DKMTCreateAllocation2(&ca), STATUS_NOT_SUPPORTED);
    ca.Flags.CreateShared = 0;
    ca.Flags.CreateResident = 1;
    info[1].Flags.OverridePriority = 1;
    info[1].Priority = D3DDDI_ALLOCATIONPRIORITY_HIGH;
    T_NT(D3DKMTCreateAllocation2(&ca), STATUS_SUCCESS);
    a = info[0].hAllocation;
    b = info[1].hAllocation;
    T_CHECK(a && b && a != b);
    /* A driver that cannot describe it: all or nothing. */
    {
        D3DKMT_CREATEALLOCATION ca2 = ca;
        D3DDDI_ALLOCATIONINFO2 bad[2];
        struct softgpu_alloc_desc huge = desc;
        int64_t blocks = f.fa.live_blocks;
        huge.size = 1ull << 40;
        bad[0] = info[0];
        bad[1] = info[0];
        bad[1].pPrivateDriverData = &huge;
        ca2.pAllocationInfo2 = bad;
        T_CHECK(D3DKMTCreateAllocation2(&ca2) != STATUS_SUCCESS);
        T_EQ(bad[0].hAllocation, 0);
        T_EQ(f.fa.live_blocks, blocks);
    }
    /* Lock2 / Unlock2 */
    T_NT(D3DKMTLock2(NULL), STATUS_INVALID_PARAMETER);
    memset(&lk, 0, sizeof lk);
    lk.hDevice = f.device;
    lk.hAllocation = a;
    lk.Flags.Value = 1;
    T_NT(D3DKMTLock2(&lk), STATUS_INVALID_PARAMETER);
    lk.Flags.Value = 0;
    T_NT(D3DKMTLock2(&lk), STATUS_SUCCESS);
    T_CHECK(lk.pData != NULL);
    if (lk.pData)
        memset(lk.pData, 0x5a, 4096);
    ul.hDevice = f.device;
    ul.hAllocation = a;
    T_NT(D3DKMTUnlock2(&ul), STATUS_SUCCESS);
    T_NT(D3DKMTUnlock2(&ul), STATUS_INVALID_PARAMETER);            /* not locked */
    lk.hAllocation = f.queue;                                       /* wrong type */
    T_NT(D3DKMTLock2(&lk), STATUS_INVALID_HANDLE);
    /* Destroy: a locked allocation is unlocked on the way. */
    lk.hAllocation = b;
    T_NT(D3DKMTLock2(&lk), STATUS_SUCCESS);
    memset(&da, 0, sizeof da);
    da.hDevice = f.device;
    da.phAllocationList = &a;
    T_NT(D3DKMTDestroyAllocation2(&da), STATUS_INVALID_PARAMETER);  /* count 0 */
    da.AllocationCount = 1;
    T_NT(D3DKMTDestroyAllocation2(&da), STATUS_SUCCESS);
    T_NT(D3DKMTDestroyAllocation2(&da), STATUS_INVALID_HANDLE);     /* stale */
    da.phAllocationList = &b;
    T_NT(D3DKMTDestroyAllocation2(&da), STATUS_SUCCESS);
    fx_close(&f);
}

/* What Lock2 hands out: bytes written under a lock are the allocation's
 * after the unlock, in both kinds of adapter.  Remotely pData is a
 * private copy (docs/D3DKMT.md "A remote adapter"): a write through it
 * after the unlock reaches nothing; in-process such a write would land in
 * the allocation itself, which is why Windows forbids it - the remote
 * half alone is checked. */
static void test_lock_contents(void)
{
    struct fx f;
    D3DKMT_HANDLE a;
    D3DKMT_LOCK2 lk;
    D3DKMT_UNLOCK2 ul;
    unsigned char *p, *stale;
    size_t i;
    int same = 1;
    fx_open(&f);
    T_NT(create_alloc(&f, SOFTGPU_ALLOC_CONSTANT, 64u << 10, 1, &a), STATUS_SUCCESS);
    memset(&lk, 0, sizeof lk);
    lk.hDevice = f.device;
    lk.hAllocation = a;
    ul.hDevice = f.device;
    ul.hAllocation = a;
    T_NT(D3DKMTLock2(&lk), STATUS_SUCCESS);
    p = lk.pData;
    T_CHECK(p != NULL);
    if (!p) {
        fx_close(&f);
        return;
    }
    for (i = 0; i < 4096; i++)
        p[i] = (unsigned char)(i * 7u + 1u);
    {
        /* Nested: the same pointer, one more unlock needed. */
        D3DKMT_LOCK2 lk2 = lk;
        T_NT(D3DKMTLock2(&lk2), STATUS_SUCCESS);
        T_CHECK(lk2.pData == lk.pData);
        T_NT(D3DKMTUnlock2(&ul), STATUS_SUCCESS);
    }
    T_NT(D3DKMTUnlock2(&ul), STATUS_SUCCESS);
    stale = p;
    if (g_remote)
        memset(stale, 0xEE, 4096);   /* the process's own dead copy */
    T_NT(D3DKMTLock2(&lk), STATUS_SUCCESS);
    p = lk.pData;
    for (i = 0; p && i < 4096; i++)
        same &= p[i] == (unsigned char)(i * 7u + 1u);
    T_CHECK(p != NULL && same);
    T_NT(D3DKMTUnlock2(&ul), STATUS_SUCCESS);
    fx_close(&f);
}

/* ---- residency --------------------------------------------------------------------- */

static void test_make_resident_evict(void)
{
    struct fx f;
    D3DKMT_HANDLE a[3];
    D3DDDI_MAKERESIDENT mr;
    D3DKMT_EVICT ev;
    NTSTATUS st;
    UINT i;
    fx_open(&f);
    for (i = 0; i < 3; i++)
        T_NT(create_alloc(&f, SOFTGPU_ALLOC_TEXTURE, 1u << 20, 0, &a[i]), STATUS_SUCCESS);
    T_NT(D3DKMTMakeResident(NULL), STATUS_INVALID_PARAMETER);
    memset(&mr, 0, sizeof mr);
    mr.hPagingQueue = f.queue;
    mr.NumAllocations = 3;
    T_NT(D3DKMTMakeResident(&mr), STATUS_INVALID_PARAMETER);         /* no list */
    mr.AllocationList = a;
    mr.Flags.MustSucceed = 1;
    T_NT(D3DKMTMakeResident(&mr), STATUS_INVALID_PARAMETER);         /* MustSucceed alone */
    mr.Flags.MustSucceed = 0;
    mr.hPagingQueue = f.device;
    T_NT(D3DKMTMakeResident(&mr), STATUS_INVALID_HANDLE);
    mr.hPagingQueue = f.queue;
    st = D3DKMTMakeResident(&mr);
    T_CHECK(st == STATUS_SUCCESS || st == STATUS_PENDING);
    if (st == STATUS_PENDING)
        T_CHECK(mr.PagingFenceValue > 0);
    T_NT(wait_fence(f.device, f.queue_sync, mr.PagingFenceValue), STATUS_SUCCESS);
    {
        D3DKMT_CREATEPAGINGQUEUE pq;
        (void)pq;
    }
    /* Evict */
    T_NT(D3DKMTEvict(NULL), STATUS_INVALID_PARAMETER);
    memset(&ev, 0, sizeof ev);
    ev.hDevice = f.device;
    ev.NumAllocations = 3;
    ev.AllocationList = a;
    T_NT(D3DKMTEvict(&ev), STATUS_SUCCESS);
    T_NT(D3DKMTEvict(&ev), STATUS_INVALID_DEVICE_STATE);            /* no longer listed */
    ev.hDevice = 0;
    T_NT(D3DKMTEvict(&ev), STATUS_INVALID_PARAMETER);
    fx_close(&f);
}

static int g_trim_calls;
static UINT64 g_trim_bytes;
static UINT g_trim_to_budget;
static void on_trim(D3DKMT_TRIMNOTIFICATION *n)
{
    g_trim_calls += n->Context == (void *)&g_trim_calls;
    g_trim_bytes = n->NumBytesToTrim;
    g_trim_to_budget = n->Flags.TrimToBudget;
}

/* Over budget: MakeResident fails with NumBytesToTrim, the trim
 * callback hears of it, and CantTrimFurther gets past the budget. */
static void test_budget_trim(void)
{
    struct fx f;
    D3DKMT_HANDLE a[4];
    D3DDDI_MAKERESIDENT mr;
    D3DKMT_REGISTERTRIMNOTIFICATION rg;
    D3DKMT_UNREGISTERTRIMNOTIFICATION un;
    UINT64 process = 0;
    struct vidmm_adapter *va;
    UINT i;
    fx_open(&f);
    for (i = 0; i < 4; i++)
        T_NT(create_alloc(&f, SOFTGPU_ALLOC_TEXTURE, 16u << 20, 0, &a[i]), STATUS_SUCCESS);
    T_NT(D3DKMTRegisterTrimNotification(NULL), STATUS_INVALID_PARAMETER);
    memset(&rg, 0, sizeof rg);
    rg.AdapterLuid = k_luid;
    rg.hDevice = f.device;
    T_NT(D3DKMTRegisterTrimNotification(&rg), STATUS_INVALID_PARAMETER); /* no callback */
    rg.Callback = on_trim;
    rg.Context = &g_trim_calls;
    rg.AdapterLuid.LowPart++;
    T_NT(D3DKMTRegisterTrimNotification(&rg), STATUS_INVALID_PARAMETER); /* other adapter */
    rg.AdapterLuid = k_luid;
    T_NT(D3DKMTRegisterTrimNotification(&rg), STATUS_SUCCESS);
    T_CHECK(rg.Handle != NULL);
    {
        NTSTATUS st = make_resident(&f, a, 2, &mr);
        T_CHECK(st == STATUS_SUCCESS || st == STATUS_PENDING);
    }
    /* The OS pins the budget at 40 MiB: the process (32 MiB) asks for 32 more. */
    va = NULL;
    T_NT(d3dkmt_runtime_vidmm_process(f.rt, k_luid, &va, &process), g_remote ? STATUS_NOT_SUPPORTED : STATUS_SUCCESS);
    {
        /* the adapter behind the runtime: the one softgpu opened */
        D3DKMT_QUERYVIDEOMEMORYINFO q;
        memset(&q, 0, sizeof q);
        q.hAdapter = f.adapter;
        T_NT(D3DKMTQueryVideoMemoryInfo(&q), STATUS_SUCCESS);
        T_CHECK(q.CurrentUsage >= (32ull << 20));
    }
    g_trim_calls = 0;
    if (g_remote) {
        /* The daemon is the OS here: it pins the budget of the
         * connection's process (it runs with --allow-set-budget). */
        struct vidmm_client *conn = NULL;
        T_NT(d3dkmt_runtime_vidmm_client(f.rt, k_luid, &conn), STATUS_SUCCESS);
        T_ST(vidmm_client_process_set_budget(conn, VIDMM_SEGMENT_GROUP_LOCAL, 40ull << 20), VIDMM_OK);
    } else {
        T_ST(vidmm_process_set_budget(va, process, VIDMM_SEGMENT_GROUP_LOCAL, 40ull << 20), VIDMM_OK);
    }
    memset(&mr, 0, sizeof mr);
    mr.hPagingQueue = f.queue;
    mr.NumAllocations = 2;
    mr.AllocationList = &a[2];
    T_NT(D3DKMTMakeResident(&mr), STATUS_NO_MEMORY);
    T_CHECK(mr.NumBytesToTrim > 0);
    /* Past the budget on purpose: the trim callback hears of it. */
    mr.Flags.CantTrimFurther = 1;
    {
        NTSTATUS st = D3DKMTMakeResident(&mr);
        T_CHECK(st == STATUS_SUCCESS || st == STATUS_PENDING);
        T_NT(wait_fence(f.device, f.queue_sync, mr.PagingFenceValue), STATUS_SUCCESS);
    }
    T_CHECK(g_trim_calls > 0);
    T_EQ(g_trim_to_budget, 1);
    T_CHECK(g_trim_bytes > 0);
    T_NT(D3DKMTUnregisterTrimNotification(NULL), STATUS_INVALID_PARAMETER);
    un.Handle = rg.Handle;
    un.Callback = on_trim;
    T_NT(D3DKMTUnregisterTrimNotification(&un), STATUS_SUCCESS);
    T_NT(D3DKMTUnregisterTrimNotification(&un), STATUS_INVALID_PARAMETER);
    fx_close(&f);
}

static void test_priority_offer_reclaim(void)
{
    struct fx f;
    D3DKMT_HANDLE a[2];
    D3DKMT_SETALLOCATIONPRIORITY sp;
    D3DKMT_OFFERALLOCATIONS of;
    D3DKMT_RECLAIMALLOCATIONS2 rc;
    D3DDDI_RECLAIM_RESULT res[2] = {D3DDDI_RECLAIM_RESULT_NOT_COMMITTED, D3DDDI_RECLAIM_RESULT_NOT_COMMITTED};
    D3DDDI_MAKERESIDENT mr;
    UINT prio[2] = {D3DDDI_ALLOCATIONPRIORITY_LOW, 0};
    NTSTATUS st;
    fx_open(&f);
    T_NT(create_alloc(&f, SOFTGPU_ALLOC_TEXTURE, 1u << 20, 1, &a[0]), STATUS_SUCCESS);
    T_NT(create_alloc(&f, SOFTGPU_ALLOC_TEXTURE, 1u << 20, 1, &a[1]), STATUS_SUCCESS);
    make_resident(&f, a, 2, &mr);
    memset(&sp, 0, sizeof sp);
    sp.hDevice = f.device;
    sp.phAllocationList = a;
    sp.AllocationCount = 2;
    sp.pPriorities = prio;
    T_NT(D3DKMTSetAllocationPriority(&sp), STATUS_INVALID_PARAMETER);  /* 0 is no priority */
    prio[1] = D3DDDI_ALLOCATIONPRIORITY_MAXIMUM;
    T_NT(D3DKMTSetAllocationPriority(&sp), STATUS_SUCCESS);
    sp.hResource = 5;
    T_NT(D3DKMTSetAllocationPriority(&sp), STATUS_NOT_SUPPORTED);
    memset(&of, 0, sizeof of);
    of.hDevice = f.device;
    of.HandleList = a;
    of.NumAllocations = 2;
    T_NT(D3DKMTOfferAllocations(&of), STATUS_INVALID_PARAMETER);      /* priority 0 */
    of.Priority = D3DKMT_OFFER_PRIORITY_LOW;
    T_NT(D3DKMTOfferAllocations(&of), STATUS_SUCCESS);
    memset(&rc, 0, sizeof rc);
    rc.hPagingQueue = f.queue;
    rc.NumAllocations = 2;
    rc.HandleList = a;
    rc.pResults = res;
    st = D3DKMTReclaimAllocations2(&rc);
    T_CHECK(st == STATUS_SUCCESS || st == STATUS_PENDING);
    T_NT(wait_fence(f.device, f.queue_sync, rc.PagingFenceValue), STATUS_SUCCESS);
    T_CHECK(res[0] == D3DDDI_RECLAIM_RESULT_OK || res[0] == D3DDDI_RECLAIM_RESULT_DISCARDED);
    T_CHECK(res[1] == D3DDDI_RECLAIM_RESULT_OK || res[1] == D3DDDI_RECLAIM_RESULT_DISCARDED);
    rc.hPagingQueue = 0;
    T_NT(D3DKMTReclaimAllocations2(&rc), STATUS_INVALID_HANDLE);
    fx_close(&f);
}

/* ---- GPU VA, submission, fences ------------------------------------------------------ */

static void test_gpu_va(void)
{
    struct fx f;
    D3DKMT_HANDLE a;
    D3DDDI_RESERVEGPUVIRTUALADDRESS rv;
    D3DDDI_MAPGPUVIRTUALADDRESS mp;
    D3DKMT_FREEGPUVIRTUALADDRESS fr;
    D3DKMT_UPDATEGPUVIRTUALADDRESS up;
    D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION ops[2];
    fx_open(&f);
    T_NT(create_alloc(&f, SOFTGPU_ALLOC_TEXTURE, 1u << 20, 1, &a), STATUS_SUCCESS);
    T_NT(D3DKMTReserveGpuVirtualAddress(NULL), STATUS_INVALID_PARAMETER);
    memset(&rv, 0, sizeof rv);
    rv.hPagingQueue = f.queue;
    T_NT(D3DKMTReserveGpuVirtualAddress(&rv), STATUS_INVALID_PARAMETER); /* size 0 */
    rv.Size = 4u << 20;
    rv.ReservationType = D3DDDIGPUVIRTUALADDRESS_RESERVE_NO_COMMIT;
    T_NT(D3DKMTReserveGpuVirtualAddress(&rv), STATUS_NOT_SUPPORTED);
    rv.ReservationType = D3DDDIGPUVIRTUALADDRESS_RESERVE_NO_ACCESS;
    T_NT(D3DKMTReserveGpuVirtualAddress(&rv), STATUS_SUCCESS);
    T_CHECK(rv.VirtualAddress >= 0x10000u && rv.VirtualAddress % 0x10000u == 0);
    /* Map into the reservation, through an update batch. */
    memset(ops, 0, sizeof ops);
    ops[0].OperationType = D3DDDI_UPDATEGPUVIRTUALADDRESS_MAP;
    ops[0].Map.BaseAddress = rv.VirtualAddress;
    ops[0].Map.SizeInBytes = 1u << 20;
    ops[0].Map.hAllocation = a;
    memset(&up, 0, sizeof up);
    up.hDevice = f.device;
    up.NumOperations = 1;
    up.Operations = ops;
    T_NT(D3DKMTUpdateGpuVirtualAddress(&up), STATUS_SUCCESS);
    ops[0].OperationType = D3DDDI_UPDATEGPUVIRTUALADDRESS_UNMAP;
    ops[0].Unmap.BaseAddress = rv.VirtualAddress;
    ops[0].Unmap.SizeInBytes = 1u << 20;
    T_NT(D3DKMTUpdateGpuVirtualAddress(&up), STATUS_SUCCESS);
    ops[0].OperationType = (D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION_TYPE)9;
    T_NT(D3DKMTUpdateGpuVirtualAddress(&up), STATUS_INVALID_PARAMETER);
    fr.hAdapter = f.adapter;
    fr.BaseAddress = rv.VirtualAddress;
    fr.Size = rv.Size;
    T_NT(D3DKMTFreeGpuVirtualAddress(&fr), STATUS_SUCCESS);
    /* Map anywhere. */
    T_NT(D3DKMTMapGpuVirtualAddress(NULL), STATUS_INVALID_PARAMETER);
    memset(&mp, 0, sizeof mp);
    mp.hPagingQueue = f.queue;
    mp.hAllocation = a;
    mp.SizeInPages = 256;
    mp.Protection.Write = 1;
    mp.hAllocation = f.device;
    T_NT(D3DKMTMapGpuVirtualAddress(&mp), STATUS_INVALID_HANDLE);
    mp.hAllocation = a;
    T_NT(D3DKMTMapGpuVirtualAddress(&mp), STATUS_SUCCESS);
    T_CHECK(mp.VirtualAddress != 0);
    T_NT(wait_fence(f.device, f.queue_sync, mp.PagingFenceValue), STATUS_SUCCESS);
    fr.BaseAddress = mp.VirtualAddress;
    fr.Size = 256u * 4096u;
    T_NT(D3DKMTFreeGpuVirtualAddress(&fr), STATUS_SUCCESS);
    fx_close(&f);
}

static void test_cpu_fences(void)
{
    struct fx f;
    D3DKMT_CREATESYNCHRONIZATIONOBJECT2 cs;
    D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMCPU sg;
    D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU w;
    D3DKMT_DESTROYSYNCHRONIZATIONOBJECT ds;
    UINT64 v = 5, v2[2] = {5, 1000};
    D3DKMT_HANDLE two[2];
    fx_open(&f);
    T_NT(D3DKMTCreateSynchronizationObject2(NULL), STATUS_INVALID_PARAMETER);
    memset(&cs, 0, sizeof cs);
    cs.hDevice = f.device;
    cs.Info.Type = D3DDDI_SEMAPHORE;
    T_NT(D3DKMTCreateSynchronizationObject2(&cs), STATUS_NOT_SUPPORTED);
    cs.Info.Type = D3DDDI_MONITORED_FENCE;
    cs.Info.MonitoredFence.InitialFenceValue = 3;
    T_NT(D3DKMTCreateSynchronizationObject2(&cs), STATUS_SUCCESS);
    T_CHECK(cs.Info.MonitoredFence.FenceValueCPUVirtualAddress != NULL);
    if (cs.Info.MonitoredFence.FenceValueCPUVirtualAddress)
        T_EQ_U64(*(const UINT64 *)cs.Info.MonitoredFence.FenceValueCPUVirtualAddress, 3);
    memset(&sg, 0, sizeof sg);
    sg.hDevice = f.device;
    sg.ObjectCount = 1;
    sg.ObjectHandleArray = &cs.hSyncObject;
    sg.FenceValueArray = &v;
    T_NT(D3DKMTSignalSynchronizationObjectFromCpu(&sg), STATUS_SUCCESS);
    T_EQ_U64(*(const UINT64 *)cs.Info.MonitoredFence.FenceValueCPUVirtualAddress, 5);
    v = 4;
    T_NT(D3DKMTSignalSynchronizationObjectFromCpu(&sg), STATUS_INVALID_PARAMETER); /* backwards */
    sg.ObjectHandleArray = &f.queue_sync;
    v = 9;
    T_NT(D3DKMTSignalSynchronizationObjectFromCpu(&sg), STATUS_INVALID_PARAMETER); /* the OS's fence */
    T_NT(wait_fence(f.device, cs.hSyncObject, 5), STATUS_SUCCESS);
    T_NT(wait_fence(f.device, f.queue, 1), STATUS_INVALID_HANDLE);
    /* WaitAny: one of two reached is enough. */
    two[0] = cs.hSyncObject;
    two[1] = f.queue_sync;
    memset(&w, 0, sizeof w);
    w.hDevice = f.device;
    w.ObjectCount = 2;
    w.ObjectHandleArray = two;
    w.FenceValueArray = v2;
    w.Flags.WaitAny = 1;
    T_NT(D3DKMTWaitForSynchronizationObjectFromCpu(&w), STATUS_SUCCESS);
    w.hAsyncEvent = (HANDLE)&w;
    T_NT(D3DKMTWaitForSynchronizationObjectFromCpu(&w), STATUS_NOT_SUPPORTED);
    ds.hSyncObject = f.queue_sync;
    T_NT(D3DKMTDestroySynchronizationObject(&ds), STATUS_INVALID_PARAMETER);
    ds.hSyncObject = cs.hSyncObject;
    T_NT(D3DKMTDestroySynchronizationObject(&ds), STATUS_SUCCESS);
    T_NT(D3DKMTDestroySynchronizationObject(&ds), STATUS_INVALID_HANDLE);
    fx_close(&f);
}

/* A virtual submission writes through the GPU; a GPU signal behind it
 * wakes the CPU wait; the value is there. */
static void test_submit_virtual(void)
{
    struct fx f;
    D3DKMT_HANDLE cmd, target, both[2];
    D3DKMT_CREATECONTEXTVIRTUAL cc;
    D3DKMT_SUBMITCOMMAND sc;
    D3DKMT_CREATESYNCHRONIZATIONOBJECT2 cs;
    D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMGPU sgpu;
    D3DKMT_DESTROYCONTEXT dc;
    D3DDDI_MAPGPUVIRTUALADDRESS mp;
    D3DDDI_MAKERESIDENT mr;
    D3DKMT_LOCK2 lk;
    D3DKMT_UNLOCK2 ul;
    UINT64 cmd_va, target_va, one = 1;
    struct softgpu_cmdbuf cb;
    fx_open(&f);
    T_NT(create_alloc(&f, SOFTGPU_ALLOC_CONSTANT, 64u << 10, 1, &cmd), STATUS_SUCCESS);
    T_NT(create_alloc(&f, SOFTGPU_ALLOC_CONSTANT, 64u << 10, 1, &target), STATUS_SUCCESS);
    both[0] = cmd;
    both[1] = target;
    make_resident(&f, both, 2, &mr);
    memset(&mp, 0, sizeof mp);
    mp.hPagingQueue = f.queue;
    mp.SizeInPages = 16;
    mp.Protection.Write = 1;
    mp.Protection.Execute = 1;
    mp.hAllocation = cmd;
    T_NT(D3DKMTMapGpuVirtualAddress(&mp), STATUS_SUCCESS);
    cmd_va = mp.VirtualAddress;
    mp.hAllocation = target;
    T_NT(D3DKMTMapGpuVirtualAddress(&mp), STATUS_SUCCESS);
    target_va = mp.VirtualAddress;
    memset(&lk, 0, sizeof lk);
    lk.hDevice = f.device;
    lk.hAllocation = cmd;
    T_NT(D3DKMTLock2(&lk), STATUS_SUCCESS);
    cb.data = lk.pData;
    cb.size = 0;
    cb.capacity = 4096;
    T_ST(softgpu_cmd_write32(&cb, target_va + 16, 0xC0FFEEu), VIDMM_OK);
    ul.hDevice = f.device;
    ul.hAllocation = cmd;
    T_NT(D3DKMTUnlock2(&ul), STATUS_SUCCESS);
    T_NT(D3DKMTCreateContextVirtual(NULL), STATUS_INVALID_PARAMETER);
    memset(&cc, 0, sizeof cc);
    cc.hDevice = f.device;
    cc.NodeOrdinal = 99;
    T_CHECK(D3DKMTCreateContextVirtual(&cc) != STATUS_SUCCESS);
    cc.NodeOrdinal = SOFTGPU_NODE_GRAPHICS;
    cc.ClientHint = D3DKMT_CLIENTHINT_DX12;
    T_NT(D3DKMTCreateContextVirtual(&cc), STATUS_SUCCESS);
    memset(&cs, 0, sizeof cs);
    cs.hDevice = f.device;
    cs.Info.Type = D3DDDI_MONITORED_FENCE;
    T_NT(D3DKMTCreateSynchronizationObject2(&cs), STATUS_SUCCESS);
    T_NT(D3DKMTSubmitCommand(NULL), STATUS_INVALID_PARAMETER);
    memset(&sc, 0, sizeof sc);
    sc.Commands = cmd_va;
    sc.CommandLength = cb.size;
    sc.BroadcastContextCount = 1;
    sc.BroadcastContext[0] = f.device;
    T_NT(D3DKMTSubmitCommand(&sc), STATUS_INVALID_HANDLE);
    sc.BroadcastContext[0] = cc.hContext;
    sc.CommandLength = 0;
    T_NT(D3DKMTSubmitCommand(&sc), STATUS_INVALID_PARAMETER);
    sc.CommandLength = cb.size;
    T_NT(D3DKMTSubmitCommand(&sc), STATUS_SUCCESS);
    memset(&sgpu, 0, sizeof sgpu);
    sgpu.hContext = cc.hContext;
    sgpu.ObjectCount = 1;
    sgpu.ObjectHandleArray = &cs.hSyncObject;
    sgpu.MonitoredFenceValueArray = &one;
    T_NT(D3DKMTSignalSynchronizationObjectFromGpu(&sgpu), STATUS_SUCCESS);
    T_NT(wait_fence(f.device, cs.hSyncObject, 1), STATUS_SUCCESS);
    lk.hAllocation = target;
    T_NT(D3DKMTLock2(&lk), STATUS_SUCCESS);
    if (lk.pData)
        T_EQ_U64(((const uint32_t *)lk.pData)[4], 0xC0FFEEu);
    ul.hAllocation = target;
    T_NT(D3DKMTUnlock2(&ul), STATUS_SUCCESS);
    dc.hContext = cc.hContext;
    T_NT(D3DKMTDestroyContext(&dc), STATUS_SUCCESS);
    T_NT(D3DKMTDestroyContext(&dc), STATUS_INVALID_HANDLE);
    fx_close(&f);
}

/* Host memory: every refusal of the runtime's allocator turns into
 * STATUS_NO_MEMORY (or a clean failure) and nothing leaks. */
static void test_host_memory_failures(void)
{
    uint64_t n;
    int succeeded = 0;
    for (n = 1; n < 400 && !succeeded; n++) {
        struct fault_alloc fa;
        struct d3dkmt_runtime_create_info ci = {D3DKMT_RUNTIME_ABI_VERSION, NULL};
        struct d3dkmt_runtime *rt = NULL;
        D3DKMT_OPENADAPTERFROMLUID oa;
        D3DKMT_CREATEDEVICE cd;
        D3DKMT_CREATEPAGINGQUEUE pq;
        NTSTATUS st;
        fault_alloc_init(&fa);
        ci.host_allocator = &fa.ha;
        T_NT(d3dkmt_runtime_open(&ci, &rt), STATUS_SUCCESS);
        T_NT(add_gpu(rt, "dgpu", k_luid), STATUS_SUCCESS);
        d3dkmt_runtime_bind_thread(rt);
        fault_alloc_arm(&fa, n, 0);
        memset(&oa, 0, sizeof oa);
        oa.AdapterLuid = k_luid;
        st = D3DKMTOpenAdapterFromLuid(&oa);
        if (st == STATUS_SUCCESS) {
            memset(&cd, 0, sizeof cd);
            cd.hAdapter = oa.hAdapter;
            st = D3DKMTCreateDevice(&cd);
        }
        if (st == STATUS_SUCCESS) {
            memset(&pq, 0, sizeof pq);
            pq.hDevice = cd.hDevice;
            st = D3DKMTCreatePagingQueue(&pq);
        }
        if (st == STATUS_SUCCESS && fa.failures == 0)
            succeeded = 1;
        else
            T_CHECK(st == STATUS_NO_MEMORY || st == STATUS_SUCCESS);
        fault_alloc_disarm(&fa);
        d3dkmt_runtime_close(rt);
        T_EQ(fa.live_blocks, 0);
    }
    T_CHECK(succeeded);
}

/* ---- what Windows answers (Wine's conformance tests record it) ----------- */

/* A local handle as Windows gives it: a bit of 0xC0000000 set, the low 6
 * bits zero, and - with *next set - the previous one plus 0x40. */
static int local_ok(D3DKMT_HANDLE h, D3DKMT_HANDLE *next)
{
    int ok = (h & 0xC0000000u) && !(h & 0x3Fu) && (!next || !*next || h == *next);
    if (!ok)
        printf("  handle 0x%08x%s (expected 0x%08x)\n", (unsigned)h, "", next ? (unsigned)*next : 0u);
    if (next)
        *next = h + 0x40u;
    return ok;
}

static D3DKMT_HANDLE new_allocation(struct fx *f, struct softgpu_alloc_desc *desc, D3DKMT_CREATEALLOCATION *ca,
                                    D3DDDI_ALLOCATIONINFO2 *info)
{
    memset(ca, 0, sizeof *ca);
    memset(info, 0, sizeof *info);
    info->pPrivateDriverData = desc;
    info->PrivateDriverDataSize = sizeof *desc;
    ca->hDevice = f->device;
    ca->NumAllocations = 1;
    ca->pAllocationInfo2 = info;
    T_NT(D3DKMTCreateAllocation2(ca), STATUS_SUCCESS);
    return info->hAllocation;
}

static void test_handles_as_windows(void)
{
    struct fx f;
    struct softgpu_alloc_desc desc;
    D3DKMT_CREATEALLOCATION ca;
    D3DDDI_ALLOCATIONINFO2 info;
    D3DKMT_DESTROYALLOCATION2 da;
    D3DKMT_OPENADAPTERFROMLUID oa;
    D3DKMT_CLOSEADAPTER cl;
    D3DKMT_HANDLE next = 0, h, seen[64];
    uint32_t i, j, n = 0;
    fx_open(&f);
    /* One counter for every kind: adapter, device, then the paging queue
     * and its sync object (in either order). */
    T_CHECK(local_ok(f.adapter, &next));
    T_CHECK(local_ok(f.device, &next));
    T_CHECK(local_ok(f.queue < f.queue_sync ? f.queue : f.queue_sync, &next));
    T_CHECK(local_ok(f.queue < f.queue_sync ? f.queue_sync : f.queue, &next));
    memset(&desc, 0, sizeof desc);
    desc.kind = SOFTGPU_ALLOC_CONSTANT;
    desc.cpu_visible = 1;
    desc.size = 64 * 1024;
    /* Created, destroyed, created: a value is never given twice. */
    for (i = 0; i < 20; i++) {
        h = new_allocation(&f, &desc, &ca, &info);
        T_CHECK(local_ok(h, &next));
        for (j = 0; j < n; j++)
            T_CHECK(seen[j] != h);
        seen[n++] = h;
        if (i % 2 == 0) {
            memset(&da, 0, sizeof da);
            da.hDevice = f.device;
            da.phAllocationList = &h;
            da.AllocationCount = 1;
            T_NT(D3DKMTDestroyAllocation2(&da), STATUS_SUCCESS);
        }
    }
    memset(&oa, 0, sizeof oa);
    oa.AdapterLuid = k_luid;
    T_NT(D3DKMTOpenAdapterFromLuid(&oa), STATUS_SUCCESS);
    T_CHECK(local_ok(oa.hAdapter, &next));
    cl.hAdapter = oa.hAdapter;
    T_NT(D3DKMTCloseAdapter(&cl), STATUS_SUCCESS);
    T_NT(D3DKMTOpenAdapterFromLuid(&oa), STATUS_SUCCESS);
    T_CHECK(local_ok(oa.hAdapter, &next) && oa.hAdapter != cl.hAdapter);
    /* A global handle's shape, (h & 0x3F) == 2, names nothing here. */
    cl.hAdapter = f.adapter | 2u;
    T_NT(D3DKMTCloseAdapter(&cl), STATUS_INVALID_PARAMETER);
    cl.hAdapter = oa.hAdapter;
    T_NT(D3DKMTCloseAdapter(&cl), STATUS_SUCCESS);
    fx_close(&f);
}

/* D3DKMTCreateAllocation2: hGlobalShare is an output, cleared when
 * nothing is shared; hPrivateRuntimeResourceHandle (a runtime's tracing
 * handle) is accepted and left as it is. */
static void test_create_allocation_outputs(void)
{
    struct fx f;
    struct softgpu_alloc_desc desc;
    D3DKMT_CREATEALLOCATION ca;
    D3DDDI_ALLOCATIONINFO2 info;
    fx_open(&f);
    memset(&desc, 0, sizeof desc);
    desc.kind = SOFTGPU_ALLOC_CONSTANT;
    desc.cpu_visible = 1;
    desc.size = 64 * 1024;
    memset(&ca, 0, sizeof ca);
    memset(&info, 0, sizeof info);
    info.pPrivateDriverData = &desc;
    info.PrivateDriverDataSize = sizeof desc;
    ca.hDevice = f.device;
    ca.NumAllocations = 1;
    ca.pAllocationInfo2 = &info;
    ca.hGlobalShare = 0x40000002u;
    ca.hPrivateRuntimeResourceHandle = (HANDLE)(uintptr_t)0x5678;
    T_NT(D3DKMTCreateAllocation2(&ca), STATUS_SUCCESS);
    T_EQ(ca.hGlobalShare, 0);
    T_CHECK(ca.hPrivateRuntimeResourceHandle == (HANDLE)(uintptr_t)0x5678);
    T_CHECK(local_ok(info.hAllocation, NULL));
    fx_close(&f);
}

/* No budget exceeds its segment group's size (GETSEGMENTGROUPSIZE): one
 * process without pressure gets the whole group. */
static void test_budget_within_group(void)
{
    struct fx f;
    D3DKMT_QUERYADAPTERINFO q;
    D3DKMT_SEGMENTGROUPSIZEINFO sg;
    D3DKMT_QUERYVIDEOMEMORYINFO mi;
    fx_open(&f);
    memset(&q, 0, sizeof q);
    memset(&sg, 0, sizeof sg);
    q.hAdapter = f.adapter;
    q.Type = KMTQAITYPE_GETSEGMENTGROUPSIZE;
    q.pPrivateDriverData = &sg;
    q.PrivateDriverDataSize = sizeof sg;
    T_NT(D3DKMTQueryAdapterInfo(&q), STATUS_SUCCESS);
    memset(&mi, 0, sizeof mi);
    mi.hAdapter = f.adapter;
    mi.MemorySegmentGroup = D3DKMT_MEMORY_SEGMENT_GROUP_LOCAL;
    T_NT(D3DKMTQueryVideoMemoryInfo(&mi), STATUS_SUCCESS);
    T_EQ_U64(mi.Budget, sg.LocalMemory);
    mi.MemorySegmentGroup = D3DKMT_MEMORY_SEGMENT_GROUP_NON_LOCAL;
    T_NT(D3DKMTQueryVideoMemoryInfo(&mi), STATUS_SUCCESS);
    if (mi.Budget != sg.NonLocalMemory)
        printf("  non-local budget %llu, GETSEGMENTGROUPSIZE NonLocalMemory %llu\n", (unsigned long long)mi.Budget,
               (unsigned long long)sg.NonLocalMemory);
    T_EQ_U64(mi.Budget, sg.NonLocalMemory);
    T_CHECK(sg.NonLocalMemory >= sg.LegacyInfo.SharedSystemMemorySize);
    fx_close(&f);
}

void suite_d3dkmt(void)
{
    t_run("d3dkmt/status_table", test_status_table);
    t_run("d3dkmt/no_runtime", test_no_runtime);
    t_run("d3dkmt/enum_adapters", test_enum_adapters);
    t_run("d3dkmt/open_close_adapter", test_open_close_adapter);
    t_run("d3dkmt/create_device", test_create_device);
    t_run("d3dkmt/query_adapter_info", test_query_adapter_info);
    t_run("d3dkmt/video_memory_info", test_video_memory_info);
    t_run("d3dkmt/second_process", test_second_process);
    t_run("d3dkmt/allocations", test_allocations);
    t_run("d3dkmt/lock_contents", test_lock_contents);
    t_run("d3dkmt/make_resident_evict", test_make_resident_evict);
    t_run("d3dkmt/budget_trim", test_budget_trim);
    t_run("d3dkmt/priority_offer_reclaim", test_priority_offer_reclaim);
    t_run("d3dkmt/gpu_va", test_gpu_va);
    t_run("d3dkmt/cpu_fences", test_cpu_fences);
    t_run("d3dkmt/submit_virtual", test_submit_virtual);
    t_run("d3dkmt/host_memory_failures", test_host_memory_failures);
    t_run("d3dkmt/handles_as_windows", test_handles_as_windows);
    t_run("d3dkmt/create_allocation_outputs", test_create_allocation_outputs);
    t_run("d3dkmt/budget_within_group", test_budget_within_group);
}
