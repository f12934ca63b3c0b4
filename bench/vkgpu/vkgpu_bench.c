/*
 * vkgpu_bench.c - vkgpu's paging throughput against raw Vulkan on the
 * same device in the same run (docs/PERFORMANCE.md "vkgpu").
 *
 *   transfer  vkgpu TRANSFER (memory -> memory, through build_paging_buffer
 *             and submit_command, timed to the fence callback) against a
 *             raw vkCmdCopyBuffer of the same bytes between two buffers of
 *             the same memory type, submitted and waited on a fence;
 *   fill      vkgpu FILL against a raw vkCmdFillBuffer;
 *   evict     vidmm evicting and restoring a 256 MiB allocation (two
 *             vkgpu transfers through imported system pages) against two
 *             raw copies device -> imported host pages -> device;
 *   rebind    (devices with sparse binding) vidmm mapping and unmapping a
 *             1 MiB allocation at a GPU VA with GpuMmu against the raw
 *             vkQueueBindSparse of the same 256 pages;
 *   resident  make-resident of a resident list on vkgpu and on softgpu
 *             (CPU work in vidmm: the two should agree).
 *
 * Sizes 2, 16, 128 and 1024 MiB (--sizes LIST, or --max M for 2 MiB
 * doubling to M; a size whose four buffers exceed half the free host
 * memory is left out, said); each figure is the
 * median of --reps runs (default 5), raw and vkgpu interleaved so a
 * noisy neighbour hits both.  Prints one table and, with --check R,
 * exits 1 when a vkgpu/raw ratio falls below R.
 *
 *   move      (sparse binding) vidmm moving a mapped 1 MiB allocation to
 *             the other arena against moving an unmapped one: the
 *             re-binding of its pages at the same GPU VA, per page.
 *
 * Usage: vkgpu-bench [--sizes MIB,...] [--max MIB] [--reps N] [--check RATIO]
 */
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"
#include "vidmm/vkgpu.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <vulkan/vulkan.h>

#define MIB (1ull << 20)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* ---- the driver alone, through its ops ---------------------------------- */

static pthread_mutex_t fence_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fence_cond = PTHREAD_COND_INITIALIZER;
static uint64_t fence_seen;

static void on_fence(struct vidmm_adapter *a, uint64_t fence)
{
    (void)a;
    pthread_mutex_lock(&fence_lock);
    fence_seen = fence;
    pthread_cond_broadcast(&fence_cond);
    pthread_mutex_unlock(&fence_lock);
}

struct drv {
    struct vkgpu *gpu;
    const struct vidmm_driver_ops *ops;
    struct vidmm_segment_descriptor seg;      /* segment 1 */
    uint8_t *pb;
    uint32_t pb_size;
    uint64_t fence;
};

static int drv_open(struct drv *d, uint64_t cap)
{
    struct vkgpu_config c;
    memset(&c, 0, sizeof c);
    c.notify_fence = on_fence;
    c.heap_cap = cap;
    c.paging_buffer_size = 256u << 10;
    if (vkgpu_create(&c, &d->gpu) < 0)
        return -1;
    d->ops = vkgpu_driver_ops();
    struct vidmm_segment_descriptor segs[32];
    struct vidmm_query_segment_out qo;
    memset(&qo, 0, sizeof qo);
    struct vidmm_query_adapter_info_args q = { VIDMM_QAI_QUERYSEGMENT, NULL, 0, &qo, sizeof qo };
    if (d->ops->query_adapter_info(d->gpu, &q) < 0 || qo.nb_segment > 32)
        return -1;
    qo.segment_descriptor = segs;
    qo.segment_descriptor_stride = sizeof segs[0];
    if (d->ops->query_adapter_info(d->gpu, &q) < 0)
        return -1;
    d->seg = segs[0];
    d->pb_size = qo.paging_buffer_size;
    d->pb = malloc(d->pb_size);
    return d->pb ? 0 : -1;
}

/* One operation, built into paging buffers and submitted; returns the
 * seconds until its last fence came back. */
static double drv_run(struct drv *d, struct vidmm_build_paging_buffer_args req)
{
    double t0 = now_s();
    uint32_t multipass = 0;
    vidmm_status st;
    do {
        struct vidmm_build_paging_buffer_args a = req;
        a.dma_buffer = d->pb;
        a.dma_size = d->pb_size;
        a.multipass_offset = multipass;
        st = d->ops->build_paging_buffer(d->gpu, &a);
        multipass = a.multipass_offset;
        struct vidmm_submit_command_args s;
        memset(&s, 0, sizeof s);
        s.dma_buffer = d->pb;
        s.dma_buffer_size = d->pb_size - a.dma_size;
        s.flags = VIDMM_SUBMIT_PAGING;
        s.fence = ++d->fence;
        if (d->ops->submit_command(d->gpu, &s) < 0)
            return -1;
        /* The buffer is ours again only once it ran. */
        pthread_mutex_lock(&fence_lock);
        while (fence_seen < d->fence)
            pthread_cond_wait(&fence_cond, &fence_lock);
        pthread_mutex_unlock(&fence_lock);
    } while (st == VIDMM_E_INSUFFICIENT_DMA_BUFFER);
    return st < 0 ? -1 : now_s() - t0;
}

static double drv_copy(struct drv *d, uint64_t size)
{
    struct vidmm_build_paging_buffer_args a;
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_TRANSFER;
    a.u.transfer.transfer_size = size;
    a.u.transfer.source.segment_id = 1;
    a.u.transfer.source.segment_address = d->seg.base_address;
    a.u.transfer.destination.segment_id = 1;
    a.u.transfer.destination.segment_address = d->seg.base_address + size;
    return drv_run(d, a);
}

static double drv_fill(struct drv *d, uint64_t size)
{
    struct vidmm_build_paging_buffer_args a;
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_FILL;
    a.u.fill.fill_size = size;
    a.u.fill.fill_pattern = 0x5A5A5A5Au;
    a.u.fill.destination_segment_id = 1;
    a.u.fill.destination_segment_address = d->seg.base_address;
    return drv_run(d, a);
}

/* ---- raw Vulkan on the same physical device ----------------------------- */

struct raw {
    VkInstance inst;
    VkPhysicalDevice pd;
    VkDevice dev;
    VkQueue q;
    VkCommandPool pool;
    VkCommandBuffer cb;
    VkFence fence;
    VkBuffer a, b;
    VkDeviceMemory ma, mb;
    PFN_vkGetMemoryHostPointerPropertiesEXT host_props;
    char name[256];
    int sparse;                              /* sparse residency buffers enabled */
};

static int raw_buffer(struct raw *r, uint64_t size, const void *host, VkBuffer *buf, VkDeviceMemory *mem)
{
    VkExternalMemoryBufferCreateInfo eb = { VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO, NULL,
                                            VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT };
    VkBufferCreateInfo bi;
    memset(&bi, 0, sizeof bi);
    bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bi.pNext = host ? &eb : NULL;
    bi.size = size;
    bi.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    if (vkCreateBuffer(r->dev, &bi, NULL, buf) != VK_SUCCESS)
        return -1;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(r->dev, *buf, &req);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(r->pd, &mp);
    uint32_t bits = req.memoryTypeBits;
    VkImportMemoryHostPointerInfoEXT ip = { VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT, NULL,
                                            VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, (void *)host };
    if (host) {
        VkMemoryHostPointerPropertiesEXT hp = { VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT, NULL, 0 };
        r->host_props(r->dev, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, host, &hp);
        bits &= hp.memoryTypeBits;
    }
    uint32_t t = 0;
    for (; t < mp.memoryTypeCount; t++)
        if ((bits & (1u << t)) && (host || (mp.memoryTypes[t].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)))
            break;
    if (t == mp.memoryTypeCount)
        return -1;
    VkMemoryAllocateInfo ai = { VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, host ? &ip : NULL, host ? size : req.size, t };
    if (vkAllocateMemory(r->dev, &ai, NULL, mem) != VK_SUCCESS)
        return -1;
    return vkBindBufferMemory(r->dev, *buf, *mem, 0) == VK_SUCCESS ? 0 : -1;
}

static int raw_open(struct raw *r, uint64_t size)
{
    memset(r, 0, sizeof *r);
    VkApplicationInfo app = { VK_STRUCTURE_TYPE_APPLICATION_INFO, NULL, "vkgpu-bench", 0, NULL, 0, VK_API_VERSION_1_2 };
    VkInstanceCreateInfo ii = { VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, NULL, 0, &app, 0, NULL, 0, NULL };
    if (vkCreateInstance(&ii, NULL, &r->inst) != VK_SUCCESS)
        return -1;
    VkPhysicalDevice pds[16];
    uint32_t n = 16;
    vkEnumeratePhysicalDevices(r->inst, &n, pds);
    const char *want = getenv("VIDMM_VKGPU_DEVICE");
    uint32_t pick = want && *want >= '0' && *want <= '9' ? (uint32_t)atoi(want) : 0;
    for (uint32_t i = 0; i < n && want && !(*want >= '0' && *want <= '9'); i++) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(pds[i], &p);
        if (strstr(p.deviceName, want))
            pick = i;
    }
    if (!n || pick >= n)
        return -1;
    r->pd = pds[pick];
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(r->pd, &p);
    snprintf(r->name, sizeof r->name, "%s", p.deviceName);
    VkQueueFamilyProperties qf[16];
    uint32_t nq = 16, fam = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(r->pd, &nq, qf);
    const VkQueueFlags gc = VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT;
    int found = 0;                           /* the family vkgpu picks: transfer-only first */
    for (uint32_t i = 0; i < nq && !found; i++)
        if ((qf[i].queueFlags & VK_QUEUE_TRANSFER_BIT) && !(qf[i].queueFlags & gc))
            fam = i, found = 1;
    for (uint32_t i = 0; i < nq && !found; i++)
        if (qf[i].queueFlags & (gc | VK_QUEUE_TRANSFER_BIT))
            fam = i, found = 1;
    float prio = 1;
    VkDeviceQueueCreateInfo qi = { VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, NULL, 0, fam, 1, &prio };
    const char *ext = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
    VkPhysicalDeviceFeatures have, feat;
    vkGetPhysicalDeviceFeatures(r->pd, &have);
    memset(&feat, 0, sizeof feat);
    r->sparse = have.sparseBinding && have.sparseResidencyBuffer && (qf[fam].queueFlags & VK_QUEUE_SPARSE_BINDING_BIT);
    feat.sparseBinding = feat.sparseResidencyBuffer = r->sparse ? VK_TRUE : VK_FALSE;
    VkDeviceCreateInfo di = { VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, NULL, 0, 1, &qi, 0, NULL, 1, &ext, &feat };
    if (vkCreateDevice(r->pd, &di, NULL, &r->dev) != VK_SUCCESS)
        return -1;
    r->host_props = (PFN_vkGetMemoryHostPointerPropertiesEXT)vkGetDeviceProcAddr(r->dev,
                                                                                "vkGetMemoryHostPointerPropertiesEXT");
    vkGetDeviceQueue(r->dev, fam, 0, &r->q);
    VkCommandPoolCreateInfo pi = { VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, NULL, 0, fam };
    VkCommandBufferAllocateInfo ci = { VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, NULL, VK_NULL_HANDLE,
                                       VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1 };
    VkFenceCreateInfo fi = { VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, NULL, 0 };
    if (vkCreateCommandPool(r->dev, &pi, NULL, &r->pool) != VK_SUCCESS)
        return -1;
    ci.commandPool = r->pool;
    if (vkAllocateCommandBuffers(r->dev, &ci, &r->cb) != VK_SUCCESS || vkCreateFence(r->dev, &fi, NULL, &r->fence))
        return -1;
    return raw_buffer(r, size, NULL, &r->a, &r->ma) || raw_buffer(r, size, NULL, &r->b, &r->mb) ? -1 : 0;
}

/* op 0: copy a -> b; 1: fill a; 2: a -> host -> a (two copies, as an
 * eviction and a restore). */
static double raw_run(struct raw *r, int op, uint64_t size, void *host)
{
    VkBuffer hb = VK_NULL_HANDLE;
    VkDeviceMemory hm = VK_NULL_HANDLE;
    double t0 = now_s();
    if (op == 2 && raw_buffer(r, size, host, &hb, &hm) < 0)
        return -1;
    VkCommandBufferBeginInfo bi = { VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, NULL,
                                    VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, NULL };
    VkSubmitInfo si = { VK_STRUCTURE_TYPE_SUBMIT_INFO, NULL, 0, NULL, NULL, 1, &r->cb, 0, NULL };
    VkBufferCopy c = { 0, 0, size };
    for (int step = 0; step < (op == 2 ? 2 : 1); step++) {
        vkResetCommandPool(r->dev, r->pool, 0);
        vkBeginCommandBuffer(r->cb, &bi);
        if (op == 0)
            vkCmdCopyBuffer(r->cb, r->a, r->b, 1, &c);
        else if (op == 1)
            vkCmdFillBuffer(r->cb, r->a, 0, size, 0xA5A5A5A5u);
        else
            vkCmdCopyBuffer(r->cb, step ? hb : r->a, step ? r->a : hb, 1, &c);
        vkEndCommandBuffer(r->cb);
        vkResetFences(r->dev, 1, &r->fence);
        vkQueueSubmit(r->q, 1, &si, r->fence);
        vkWaitForFences(r->dev, 1, &r->fence, VK_TRUE, UINT64_MAX);
    }
    double t = now_s() - t0;
    if (hb) {
        vkDestroyBuffer(r->dev, hb, NULL);
        vkFreeMemory(r->dev, hm, NULL);
    }
    return t;
}

static void raw_close(struct raw *r)
{
    vkDeviceWaitIdle(r->dev);
    vkDestroyBuffer(r->dev, r->a, NULL);
    vkDestroyBuffer(r->dev, r->b, NULL);
    vkFreeMemory(r->dev, r->ma, NULL);
    vkFreeMemory(r->dev, r->mb, NULL);
    vkDestroyFence(r->dev, r->fence, NULL);
    vkDestroyCommandPool(r->dev, r->pool, NULL);
    vkDestroyDevice(r->dev, NULL);
    vkDestroyInstance(r->inst, NULL);
}

/* ---- evict + restore through vidmm ---------------------------------------- */

static double vidmm_evict_restore(uint64_t size, int reps, double *raw_out, struct raw *r)
{
    struct vkgpu *g;
    struct vkgpu_config c;
    memset(&c, 0, sizeof c);
    c.notify_fence = vidmm_cb_notify_fence;
    c.heap_cap = size + 64 * MIB;
    c.paging_buffer_size = 256u << 10;
    if (vkgpu_create(&c, &g) < 0)
        return -1;
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof ci);
    vkgpu_fill_adapter_create_info(g, &ci);
    struct vidmm_adapter *a;
    vidmm_handle proc = 0, dev = 0, q = 0, h = 0;
    struct vkgpu_alloc_desc d = { VKGPU_ALLOC_LOCAL, 1, size };
    double t[32], raw[32];
    int ok = vidmm_adapter_open(&ci, &a) == VIDMM_OK;
    ok = ok && vidmm_process_create(a, &proc) == VIDMM_OK && vidmm_device_create(a, proc, &dev) == VIDMM_OK &&
         vidmm_paging_queue_create(a, dev, VIDMM_PAGING_QUEUE_NORMAL, &q) == VIDMM_OK &&
         vidmm_device_allocation_create(a, dev, &d, sizeof d, 0, &h) == VIDMM_OK;
    void *host = aligned_alloc(4096, (size_t)size);
    ok = ok && host;
    if (host)
        memset(host, 1, (size_t)size);
    for (int i = 0; ok && i < reps; i++) {
        struct vidmm_make_resident_args mr;
        memset(&mr, 0, sizeof mr);
        mr.paging_queue = q;
        mr.allocations = &h;
        mr.count = 1;
        if (vidmm_make_resident(a, dev, &mr) == VIDMM_PENDING)
            vidmm_paging_queue_wait(a, q, mr.paging_fence_value, UINT64_MAX);
        raw[i] = raw_run(r, 2, size, host);
        double t0 = now_s();
        struct vidmm_evict_args ev = { &h, 1, 0, 0 };
        ok = vidmm_evict(a, dev, &ev) == VIDMM_OK;
        memset(&mr, 0, sizeof mr);
        mr.paging_queue = q;
        mr.allocations = &h;
        mr.count = 1;
        vidmm_status st = vidmm_make_resident(a, dev, &mr);
        if (st == VIDMM_PENDING)
            st = vidmm_paging_queue_wait(a, q, mr.paging_fence_value, UINT64_MAX);
        t[i] = now_s() - t0;
        ok = ok && st == VIDMM_OK;
        vidmm_evict(a, dev, &ev);
    }
    free(host);
    if (ok)
        vidmm_adapter_close(a);
    vkgpu_destroy(g);
    *raw_out = ok ? median(raw, reps) : -1;
    return ok ? median(t, reps) : -1;
}

/* ---- make-resident of a resident list: vkgpu against softgpu --------------- */

#define MR_ALLOCS 256u

/* Microseconds per make-resident call of MR_ALLOCS resident 64 KiB
 * allocations on the adapter (CPU work in vidmm; the driver only paged
 * them in once).  pd/pds: the driver's private data. */
static double mr_resident_list(struct vidmm_adapter *a, const void *pd, size_t pds, int reps)
{
    vidmm_handle proc = 0, dev = 0, q = 0, h[MR_ALLOCS];
    int ok = vidmm_process_create(a, &proc) == VIDMM_OK && vidmm_device_create(a, proc, &dev) == VIDMM_OK &&
             vidmm_paging_queue_create(a, dev, VIDMM_PAGING_QUEUE_NORMAL, &q) == VIDMM_OK;
    for (uint32_t i = 0; ok && i < MR_ALLOCS; i++)
        ok = vidmm_device_allocation_create(a, dev, pd, pds, 0, &h[i]) == VIDMM_OK;
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof mr);
    mr.paging_queue = q;
    mr.allocations = h;
    mr.count = MR_ALLOCS;
    vidmm_status st = ok ? vidmm_make_resident(a, dev, &mr) : VIDMM_E_STATE;
    if (st == VIDMM_PENDING)
        st = vidmm_paging_queue_wait(a, q, mr.paging_fence_value, UINT64_MAX);
    double tv[32];
    for (int rep = 0; st == VIDMM_OK && rep < reps; rep++) {
        double t0 = now_s();
        for (int k = 0; k < 100 && st == VIDMM_OK; k++) {
            st = vidmm_make_resident(a, dev, &mr);
            struct vidmm_evict_args ev = { h, MR_ALLOCS, VIDMM_EVICT_ONLY_IF_NECESSARY, 0 };
            vidmm_evict(a, dev, &ev);
        }
        tv[rep] = (now_s() - t0) / 100 * 1e6;
    }
    return st == VIDMM_OK ? median(tv, reps) : -1;
}

static void bench_make_resident(int reps)
{
    struct vkgpu *g;
    struct vkgpu_config c;
    memset(&c, 0, sizeof c);
    c.notify_fence = vidmm_cb_notify_fence;
    c.heap_cap = 64 * MIB;
    struct vidmm_adapter_create_info ci;
    struct vidmm_adapter *a;
    double v = -1, s = -1;
    if (vkgpu_create(&c, &g) == VIDMM_OK) {
        memset(&ci, 0, sizeof ci);
        vkgpu_fill_adapter_create_info(g, &ci);
        struct vkgpu_alloc_desc d = { VKGPU_ALLOC_LOCAL, 0, 65536 };
        if (vidmm_adapter_open(&ci, &a) == VIDMM_OK) {
            v = mr_resident_list(a, &d, sizeof d, reps);
            vidmm_adapter_close(a);
        }
        vkgpu_destroy(g);
    }
    struct softgpu *sg;
    struct softgpu_config sc;
    memset(&sc, 0, sizeof sc);
    sc.preset = "dgpu";
    sc.segment_size[1] = sc.segment_size[2] = 64 * MIB;
    if (softgpu_create(&sc, &sg) == VIDMM_OK) {
        memset(&ci, 0, sizeof ci);
        softgpu_fill_adapter_create_info(sg, &ci);
        struct softgpu_alloc_desc d;
        memset(&d, 0, sizeof d);
        d.kind = SOFTGPU_ALLOC_TEXTURE;
        d.size = 65536;
        if (vidmm_adapter_open(&ci, &a) == VIDMM_OK) {
            s = mr_resident_list(a, &d, sizeof d, reps);
            vidmm_adapter_close(a);
        }
        softgpu_destroy(sg);
    }
    printf("make-resident of %u resident allocations: vidmm on vkgpu %.1f us, on softgpu dgpu %.1f us per call\n",
           MR_ALLOCS, v, s);
}

/* ---- re-binding pages: vidmm's map + unmap against raw vkQueueBindSparse ---- */

#define SB_PAGES 256u

/* Raw: bind SB_PAGES pages of a sparse buffer to memory in one call,
 * then unbind them; seconds per page (bind and unbind each count).
 * stride 1: contiguous pages (one bind record, as vkgpu merges a
 * contiguous allocation's run); 3: every third page (SB_PAGES records). */
static double raw_rebind(struct raw *r, int reps, uint32_t stride)
{
    VkBufferCreateInfo bi;
    memset(&bi, 0, sizeof bi);
    bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bi.flags = VK_BUFFER_CREATE_SPARSE_BINDING_BIT | VK_BUFFER_CREATE_SPARSE_RESIDENCY_BIT;
    bi.size = 256 * MIB;
    bi.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    VkBuffer sb;
    if (vkCreateBuffer(r->dev, &bi, NULL, &sb) != VK_SUCCESS)
        return -1;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(r->dev, sb, &req);
    uint32_t t = 0;
    while (t < 32 && !(req.memoryTypeBits & (1u << t)))
        t++;
    VkMemoryAllocateInfo ai = { VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, NULL, SB_PAGES * req.alignment, t };
    VkDeviceMemory mem;
    if (vkAllocateMemory(r->dev, &ai, NULL, &mem) != VK_SUCCESS) {
        vkDestroyBuffer(r->dev, sb, NULL);
        return -1;
    }
    VkSparseMemoryBind b[SB_PAGES];
    double tv[32];
    for (int rep = 0; rep < reps; rep++) {
        double t0 = now_s();
        for (int unbind = 0; unbind < 2; unbind++) {
            uint32_t n = stride == 1 ? 1 : SB_PAGES;
            for (uint32_t i = 0; i < n; i++) {
                VkSparseMemoryBind x = { (uint64_t)i * stride * req.alignment,
                                         (stride == 1 ? SB_PAGES : 1) * req.alignment, unbind ? VK_NULL_HANDLE : mem,
                                         unbind ? 0 : (uint64_t)i * req.alignment, 0 };
                b[i] = x;
            }
            VkSparseBufferMemoryBindInfo bb = { sb, n, b };
            VkBindSparseInfo info;
            memset(&info, 0, sizeof info);
            info.sType = VK_STRUCTURE_TYPE_BIND_SPARSE_INFO;
            info.bufferBindCount = 1;
            info.pBufferBinds = &bb;
            vkResetFences(r->dev, 1, &r->fence);
            vkQueueBindSparse(r->q, 1, &info, r->fence);
            vkWaitForFences(r->dev, 1, &r->fence, VK_TRUE, UINT64_MAX);
        }
        tv[rep] = (now_s() - t0) / (2.0 * SB_PAGES);
    }
    vkDestroyBuffer(r->dev, sb, NULL);
    vkFreeMemory(r->dev, mem, NULL);
    return median(tv, reps);
}

/* vidmm on vkgpu with GpuMmu (two 32 MiB arenas): a process with a
 * virtual-mode context whose sparse buffer exists (one submission made
 * it), and two resident allocations of SB_PAGES pages, x and y. */
struct sb_setup {
    struct vkgpu *g;
    struct vidmm_adapter *a;
    vidmm_handle proc, dev, q, ctx, x, y, cb;
};

static void sb_close(struct sb_setup *s)
{
    if (s->a)
        vidmm_adapter_close(s->a);
    if (s->g)
        vkgpu_destroy(s->g);
}

/* 0, or -1 (the device has no sparse binding, or a step failed). */
static int sb_open(struct sb_setup *s)
{
    memset(s, 0, sizeof *s);
    struct vkgpu_config c;
    memset(&c, 0, sizeof c);
    c.notify_fence = vidmm_cb_notify_fence;
    c.notify_context_fence = vidmm_cb_notify_context_fence;
    c.heap_cap = 64 * MIB;
    c.arena_size = 32 * MIB;
    c.gpummu = 1;
    if (vkgpu_create(&c, &s->g) < 0)
        return -1;
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof ci);
    vkgpu_fill_adapter_create_info(s->g, &ci);
    struct vidmm_adapter *a = NULL;
    struct vkgpu_alloc_desc d = { VKGPU_ALLOC_LOCAL, 1, SB_PAGES * 4096ull }, dc = { VKGPU_ALLOC_LOCAL, 1, 4096 };
    struct vidmm_context_desc cd = { 0, VIDMM_CONTEXT_VIRTUAL, 0, 0 };
    int ok = vidmm_adapter_open(&ci, &s->a) == VIDMM_OK && (a = s->a) != NULL &&
             vidmm_process_create(a, &s->proc) == VIDMM_OK && vidmm_device_create(a, s->proc, &s->dev) == VIDMM_OK &&
             vidmm_paging_queue_create(a, s->dev, VIDMM_PAGING_QUEUE_NORMAL, &s->q) == VIDMM_OK &&
             vidmm_context_create(a, s->dev, &cd, &s->ctx) == VIDMM_OK &&
             vidmm_device_allocation_create(a, s->dev, &d, sizeof d, 0, &s->x) == VIDMM_OK &&
             vidmm_device_allocation_create(a, s->dev, &d, sizeof d, 0, &s->y) == VIDMM_OK &&
             vidmm_device_allocation_create(a, s->dev, &dc, sizeof dc, 0, &s->cb) == VIDMM_OK;
    vidmm_handle all[3] = { s->x, s->y, s->cb };
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof mr);
    mr.paging_queue = s->q;
    mr.allocations = all;
    mr.count = 3;
    vidmm_status st = ok ? vidmm_make_resident(a, s->dev, &mr) : VIDMM_E_STATE;
    if (st == VIDMM_PENDING)
        st = vidmm_paging_queue_wait(a, s->q, mr.paging_fence_value, UINT64_MAX);
    uint64_t va_c = 0, fence;
    ok = st == VIDMM_OK && vidmm_gpuva_map(a, s->proc, 0, 0, 0, s->cb, 0, 4096, 0, 0, &va_c) == VIDMM_OK;
    /* One submission makes the process's sparse buffer. */
    struct vkgpu_cmd fill = { VKGPU_CMD_FILL, 0, 0, va_c + 64, 64 };
    void *p;
    ok = ok && vidmm_allocation_lock(a, s->cb, &p) == VIDMM_OK;
    if (ok) {
        memcpy(p, &fill, sizeof fill);
        vidmm_allocation_unlock(a, s->cb);
    }
    ok = ok && vidmm_submit_virtual(a, s->ctx, va_c, sizeof fill, &fence) == VIDMM_OK &&
         vidmm_context_wait(a, s->ctx, fence, UINT64_MAX) == VIDMM_OK;
    return ok ? 0 : -1;
}

/* vidmm on vkgpu with GpuMmu: map a resident 1 MiB allocation at a GPU VA
 * (256 PTEs: UPDATE_PAGE_TABLE, one vkQueueBindSparse) and unmap it;
 * seconds per page.  -1 when the device has no sparse binding. */
static double vidmm_rebind(int reps)
{
    struct sb_setup s;
    int ok = sb_open(&s) == 0;
    double tv[32];
    uint64_t va = 0;
    for (int rep = 0; ok && rep < reps; rep++) {
        double t0 = now_s();
        ok = vidmm_gpuva_map(s.a, s.proc, 0, 0, 0, s.x, 0, SB_PAGES * 4096ull, 0, 0, &va) == VIDMM_OK &&
             vidmm_gpuva_unmap(s.a, s.proc, va, SB_PAGES * 4096ull) == VIDMM_OK &&
             vidmm_gpuva_free(s.a, s.proc, va, SB_PAGES * 4096ull) >= VIDMM_E_STATE;
        tv[rep] = (now_s() - t0) / (2.0 * SB_PAGES);
    }
    sb_close(&s);
    return ok ? median(tv, reps) : -1;
}

/* Moving a mapped allocation to the other arena: the copy, then its
 * SB_PAGES pages bound again at the same GPU VA.  Timed against moving
 * an unmapped allocation of the same size (the copy alone) in the same
 * run, both to idle; the difference per page is what re-binding a moved
 * page costs.  Seconds per page into *per_page, and the two moves'
 * medians; -1 when the device has no sparse binding. */
static int vidmm_move_rebind(int reps, double *per_page, double *mapped_s, double *plain_s)
{
    struct sb_setup s;
    int ok = sb_open(&s) == 0;
    uint64_t va = 0;
    ok = ok && vidmm_gpuva_map(s.a, s.proc, 0, 0, 0, s.x, 0, SB_PAGES * 4096ull, 0, 0, &va) == VIDMM_OK;
    /* Both start in segment 2, so every timed move goes somewhere. */
    ok = ok && vidmm_allocation_move(s.a, s.x, 2) >= 0 && vidmm_allocation_move(s.a, s.y, 2) >= 0 &&
         vkgpu_wait_idle(s.g) == VIDMM_OK;
    double tm[32], tp[32];
    struct vkgpu_device_info before, after;
    ok = ok && vkgpu_query_device(s.g, &before) == VIDMM_OK;
    /* A move is milliseconds of copying and paging-process binds around
     * the sub-millisecond re-binding: three times the samples, and the
     * order of the two moves alternated, so drift hits both alike. */
    reps = 3 * reps > 31 ? 31 : 3 * reps;
    for (int rep = 0; ok && rep < reps; rep++) {
        uint32_t to = rep % 2 ? 2 : 1;
        vidmm_handle first = rep % 4 < 2 ? s.x : s.y;
        double t0 = now_s();
        ok = vidmm_allocation_move(s.a, first, to) >= 0 && vkgpu_wait_idle(s.g) == VIDMM_OK;
        double t1 = now_s();
        ok = ok && vidmm_allocation_move(s.a, first == s.x ? s.y : s.x, to) >= 0 && vkgpu_wait_idle(s.g) == VIDMM_OK;
        double t2 = now_s();
        tm[rep] = first == s.x ? t1 - t0 : t2 - t1;
        tp[rep] = first == s.x ? t2 - t1 : t1 - t0;
    }
    /* Each move of x must have bound its pages again (else this
     * measured nothing). */
    ok = ok && vkgpu_query_device(s.g, &after) == VIDMM_OK && after.sparse_binds >= before.sparse_binds + (uint64_t)reps;
    sb_close(&s);
    if (!ok)
        return -1;
    *mapped_s = median(tm, reps);
    *plain_s = median(tp, reps);
    *per_page = (*mapped_s - *plain_s) / SB_PAGES;
    return 0;
}

/* --sizes "2,16,128,1024" (MiB) into sizes[]; --max M: 2 MiB doubling
 * to M.  Sizes whose buffers (two for vkgpu, two raw) would take more
 * than half the memory the host has free are left out, said. */
static int parse_sizes(const char *list, uint64_t *sizes, int cap)
{
    int n = 0;
    for (const char *p = list; *p && n < cap;) {
        char *end;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p || v < 2 || v > 65536 || (*end && *end != ','))
            return -1;
        sizes[n++] = v * MIB;
        p = *end ? end + 1 : end;
    }
    return n;
}

int main(int argc, char **argv)
{
    uint64_t sizes[16];
    int nsizes = parse_sizes("2,16,128,1024", sizes, 16);
    int reps = 5;
    double check = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--max") && i + 1 < argc) {
            uint64_t m = strtoull(argv[++i], NULL, 10) * MIB;
            nsizes = 0;
            for (uint64_t z = 2 * MIB; z <= m && nsizes < 16; z *= 2)
                sizes[nsizes++] = z;
        } else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            if ((nsizes = parse_sizes(argv[++i], sizes, 16)) <= 0) {
                fprintf(stderr, "vkgpu-bench: --sizes %s: want MiB values 2-65536, comma-separated\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--check") && i + 1 < argc)
            check = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: vkgpu-bench [--sizes MIB,MIB,...] [--max MIB] [--reps N] [--check RATIO]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 31 || nsizes < 1) {
        fprintf(stderr, "vkgpu-bench: --reps 1-31, --max at least 2\n");
        return 2;
    }
    /* Lavapipe's device memory is host memory and its heap is not
     * enforced: four buffers of the largest size must fit in half of
     * what is free, the machine being shared. */
    uint64_t avail = (uint64_t)sysconf(_SC_AVPHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE), max = 0;
    for (int i = 0; i < nsizes; i++) {
        if (avail && 4 * sizes[i] > avail / 2) {
            printf("size %llu MiB left out: four buffers of it exceed half of the %llu MiB free\n",
                   (unsigned long long)(sizes[i] / MIB), (unsigned long long)(avail / MIB));
            sizes[i--] = sizes[--nsizes];
            continue;
        }
        max = sizes[i] > max ? sizes[i] : max;
    }
    if (!nsizes) {
        fprintf(stderr, "vkgpu-bench: no size fits in the memory free\n");
        return 1;
    }
    struct drv d;
    struct raw r;
    memset(&d, 0, sizeof d);
    if (drv_open(&d, 2 * max) < 0 || raw_open(&r, max) < 0) {
        fprintf(stderr, "vkgpu-bench: no Vulkan device to measure (vkgpu or raw setup failed)\n");
        return 1;
    }
    struct vkgpu_device_info di;
    vkgpu_query_device(d.gpu, &di);
    time_t now = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
    printf("vkgpu-bench %s: %s (%s %s), median of %d\n", date, di.device_name, di.driver_name, di.driver_info, reps);
    printf("%-9s %9s %12s %12s %7s\n", "op", "size", "vkgpu GiB/s", "raw GiB/s", "ratio");
    int below = 0;
    drv_copy(&d, max);                       /* first touch of every page, outside the timings */
    drv_copy(&d, max);
    raw_run(&r, 0, max, NULL);
    raw_run(&r, 1, max, NULL);
    for (int op = 0; op < 2; op++)
        for (int k = 0; k < nsizes; k++) {
            uint64_t size = sizes[k];
            double tv[32], tr[32];
            for (int i = 0; i < reps; i++) {
                tv[i] = op ? drv_fill(&d, size) : drv_copy(&d, size);
                tr[i] = raw_run(&r, op, size, NULL);
            }
            double v = (double)size / median(tv, reps) / (1 << 30), w = (double)size / median(tr, reps) / (1 << 30);
            printf("%-9s %6llu MiB %12.2f %12.2f %7.2f\n", op ? "fill" : "transfer", (unsigned long long)(size / MIB), v,
                   w, v / w);
            below += check > 0 && size >= 64 * MIB && v / w < check;
        }
    raw_close(&r);
    vkgpu_destroy(d.gpu);
    struct raw r2;
    uint64_t er = max < 256 * MIB ? max : 256 * MIB;
    if (raw_open(&r2, er) == 0) {
        double raw;
        double t = vidmm_evict_restore(er, reps, &raw, &r2);
        printf("evict+restore %llu MiB: vidmm on vkgpu %.1f ms, two raw copies %.1f ms, ratio %.2f\n",
               (unsigned long long)(er / MIB), t * 1e3, raw * 1e3, t > 0 ? raw / t : 0);
        double rv = r2.sparse ? raw_rebind(&r2, reps, 1) : -1, vv = r2.sparse ? vidmm_rebind(reps) : -1;
        double rs = r2.sparse ? raw_rebind(&r2, reps, 3) : -1, mp = 0, mm = 0, mc = 0;
        if (rv > 0 && vv > 0) {
            printf("re-binding %u contiguous pages (map + unmap): vidmm on vkgpu %.2f us/page, raw vkQueueBindSparse "
                   "%.2f us/page (%u scattered pages: %.2f us/page)\n", SB_PAGES, vv * 1e6, rv * 1e6, SB_PAGES, rs * 1e6);
            if (vidmm_move_rebind(reps, &mp, &mm, &mc) == 0)
                printf("moving a mapped %u-page allocation to the other arena: %.1f us, an unmapped one %.1f us: "
                       "re-binding %.2f us/page at the same GPU VA%s, raw vkQueueBindSparse %.2f us/page "
                       "(one record per block: %.2f us/page)\n", SB_PAGES, mm * 1e6, mc * 1e6, mp * 1e6,
                       mp < 0 ? " (below the moves' noise)" : "", rv * 1e6, rs * 1e6);
            else
                printf("moving a mapped allocation: not measured (a step failed)\n");
        } else
            printf("re-binding: not measured (no sparse binding on this device)\n");
        raw_close(&r2);
    }
    bench_make_resident(reps);
    if (below)
        printf("CHECK FAILED: %d sizes of 64 MiB or more below %.2f of raw\n", below, check);
    return below ? 1 : 0;
}
