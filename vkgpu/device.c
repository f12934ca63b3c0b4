/*
 * device.c - the Vulkan side of vkgpu's creation: the instance, the
 * physical device (by index or name), the logical device with one
 * transfer-capable queue, and the arenas that become vidmm's memory
 * segments.
 *
 * Every DEVICE_LOCAL heap gives at most its budget (VK_EXT_memory_budget)
 * or its size, capped by vkgpu_config.heap_cap, cut into arenas of at
 * most maxMemoryAllocationSize.  Each arena is one segment, so that an
 * allocation (contiguous in its segment) always lies in one VkDeviceMemory
 * and has one device address: a physical reference is the arena buffer's
 * device address plus the offset (docs/DECISIONS.md D67).
 */
#include "vkgpu_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SEG_USAGE (VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT)

static vidmm_status fail(char *err, size_t n, vidmm_status st, const char *msg, const char *what)
{
    if (err && n)
        snprintf(err, n, "vkgpu: %s%s%s", msg, what ? ": " : "", what ? what : "");
    return st;
}

static VkResult make_instance(VkInstance *out)
{
    VkApplicationInfo app;
    memset(&app, 0, sizeof app);
    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.pApplicationName = "vidmm";
    app.pEngineName = "vkgpu";
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo ci;
    memset(&ci, 0, sizeof ci);
    ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    ci.pApplicationInfo = &app;
    return vkCreateInstance(&ci, NULL, out);
}

static int contains_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return n == 0;
}

vidmm_status vkgpu_list_devices(char *buf, size_t size)
{
    if (!buf || !size)
        return VIDMM_E_INVALID_ARG;
    buf[0] = 0;
    VkInstance inst;
    if (make_instance(&inst) != VK_SUCCESS)
        return VIDMM_E_NOT_SUPPORTED;
    VkPhysicalDevice pd[16];
    uint32_t n = 16;
    vkEnumeratePhysicalDevices(inst, &n, pd);
    size_t used = 0;
    for (uint32_t i = 0; i < n && used < size; i++) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(pd[i], &p);
        int w = snprintf(buf + used, size - used, "%u: %s\n", i, p.deviceName);
        used += w > 0 ? (size_t)w : 0;
    }
    vkDestroyInstance(inst, NULL);
    return VIDMM_OK;
}

/* The device config or VIDMM_VKGPU_DEVICE names: a decimal index or a
 * part of the name. */
static vidmm_status pick_device(struct vkgpu *g, char *err, size_t n)
{
    VkPhysicalDevice pd[16];
    uint32_t count = 16;
    if (vkEnumeratePhysicalDevices(g->instance, &count, pd) < 0 || count == 0)
        return fail(err, n, VIDMM_E_NOT_SUPPORTED, "no Vulkan physical device", NULL);
    const char *want = g->cfg.device ? g->cfg.device : getenv("VIDMM_VKGPU_DEVICE");
    if (!want || !*want) {
        g->phys = pd[0];
        return VIDMM_OK;
    }
    int digits = 1;
    for (const char *c = want; *c; c++)
        digits &= isdigit((unsigned char)*c) != 0;
    if (digits) {
        unsigned long i = strtoul(want, NULL, 10);
        if (i >= count)
            return fail(err, n, VIDMM_E_INVALID_ARG, "no Vulkan device of that index", want);
        g->phys = pd[i];
        return VIDMM_OK;
    }
    for (uint32_t i = 0; i < count; i++) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(pd[i], &p);
        if (contains_nocase(p.deviceName, want)) {
            g->phys = pd[i];
            return VIDMM_OK;
        }
    }
    return fail(err, n, VIDMM_E_INVALID_ARG, "no Vulkan device whose name contains", want);
}

static int has_extension(const VkExtensionProperties *e, uint32_t n, const char *name)
{
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(e[i].extensionName, name))
            return 1;
    return 0;
}

/* A transfer-only family when there is one (a DMA engine), else the
 * first that can copy (graphics and compute imply transfer). */
static int pick_family(VkPhysicalDevice pd, uint32_t *family, uint32_t *transfer_only)
{
    VkQueueFamilyProperties q[32];
    uint32_t n = 32;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, q);
    const VkQueueFlags gc = VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT;
    for (uint32_t i = 0; i < n; i++)
        if ((q[i].queueFlags & VK_QUEUE_TRANSFER_BIT) && !(q[i].queueFlags & gc) && q[i].queueCount) {
            *family = i;
            *transfer_only = 1;
            return 0;
        }
    for (uint32_t i = 0; i < n; i++)
        if ((q[i].queueFlags & (gc | VK_QUEUE_TRANSFER_BIT)) && q[i].queueCount) {
            *family = i;
            *transfer_only = 0;
            return 0;
        }
    return -1;
}

static vidmm_status make_device(struct vkgpu *g, int budget, char *err, size_t n)
{
    VkPhysicalDeviceVulkan12Features f12;
    memset(&f12, 0, sizeof f12);
    f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    VkPhysicalDeviceFeatures2 f2;
    memset(&f2, 0, sizeof f2);
    f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    f2.pNext = &f12;
    vkGetPhysicalDeviceFeatures2(g->phys, &f2);
    if (!f12.timelineSemaphore)
        return fail(err, n, VIDMM_E_NOT_SUPPORTED, "the device has no timeline semaphores", NULL);
    g->info.sparse_binding = f2.features.sparseBinding && f2.features.sparseResidencyBuffer;
    g->have_bda = f12.bufferDeviceAddress != 0;
    VkPhysicalDeviceVulkan12Features on;
    memset(&on, 0, sizeof on);
    on.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    on.timelineSemaphore = VK_TRUE;
    on.bufferDeviceAddress = g->have_bda ? VK_TRUE : VK_FALSE;
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci;
    memset(&qci, 0, sizeof qci);
    qci.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
    qci.queueFamilyIndex = g->family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &prio;
    const char *ext[2] = { VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME };
    VkDeviceCreateInfo dci;
    memset(&dci, 0, sizeof dci);
    dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
    dci.pNext = &on;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    dci.enabledExtensionCount = budget ? 2 : 1;
    dci.ppEnabledExtensionNames = ext;
    VkResult r = vkCreateDevice(g->phys, &dci, NULL, &g->device);
    if (r != VK_SUCCESS)
        return fail(err, n, VIDMM_E_NOT_SUPPORTED, "vkCreateDevice failed", NULL);
    vkGetDeviceQueue(g->device, g->family, 0, &g->queue);
    g->get_host_ptr_props =
        (PFN_vkGetMemoryHostPointerPropertiesEXT)vkGetDeviceProcAddr(g->device, "vkGetMemoryHostPointerPropertiesEXT");
    return g->get_host_ptr_props ? VIDMM_OK
                                 : fail(err, n, VIDMM_E_NOT_SUPPORTED, "no vkGetMemoryHostPointerPropertiesEXT", NULL);
}

/* ---- arenas ------------------------------------------------------------ */

static VkResult make_buffer(struct vkgpu *g, uint64_t size, int imported, VkBuffer *out)
{
    VkExternalMemoryBufferCreateInfo eb;
    memset(&eb, 0, sizeof eb);
    eb.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO;
    eb.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    VkBufferCreateInfo bci;
    memset(&bci, 0, sizeof bci);
    bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bci.pNext = imported ? &eb : NULL;
    bci.size = size;
    bci.usage = SEG_USAGE | (g->have_bda ? VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT : 0);
    bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    return vkCreateBuffer(g->device, &bci, NULL, out);
}

/* The best memory type of heap h for arenas: DEVICE_LOCAL, usable by our
 * buffers, CPU-mappable and coherent if any is (a CPU-visible segment),
 * never lazily allocated or protected.  -1 if none. */
static int pick_type(struct vkgpu *g, const VkPhysicalDeviceMemoryProperties *mp, uint32_t h, uint32_t bits)
{
    const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    const VkMemoryPropertyFlags bad = VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT | VK_MEMORY_PROPERTY_PROTECTED_BIT;
    int best = -1;
    (void)g;
    for (uint32_t t = 0; t < mp->memoryTypeCount; t++) {
        VkMemoryPropertyFlags f = mp->memoryTypes[t].propertyFlags;
        if (mp->memoryTypes[t].heapIndex != h || !(bits & (1u << t)) || !(f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) ||
            (f & bad))
            continue;
        if (best < 0 || ((f & host) == host && (mp->memoryTypes[best].propertyFlags & host) != host))
            best = (int)t;
    }
    return best;
}

/* On a CPU device (lavapipe) device-local memory is host memory: the
 * arena is host memory vkgpu maps itself and imports, so that a new
 * VkDevice after a loss finds the arena at the same host and device
 * address (device.c, vk_device_recreate) and vidmm's segment addresses
 * stay true.  0 when the import is not possible (plain allocation). */
static int host_backed(struct vkgpu *g, struct vk_segment *s)
{
    /* Sparse binding maps an arena's own allocation into a process's
     * range (lavapipe maps its memory file there): imported host memory
     * has none, so GpuMmu keeps plain allocations. */
    if (g->info.device_type != VK_PHYSICAL_DEVICE_TYPE_CPU || g->cfg.gpummu)
        return 0;
    if (!s->host) {
        void *p = mmap(NULL, (size_t)s->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return 0;
        s->host = p;
    }
    VkMemoryHostPointerPropertiesEXT hp;
    memset(&hp, 0, sizeof hp);
    hp.sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT;
    return g->get_host_ptr_props(g->device, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, s->host, &hp) ==
               VK_SUCCESS && (hp.memoryTypeBits & (1u << s->type));
}

static vidmm_status make_arena(struct vkgpu *g, struct vk_segment *s, const VkPhysicalDeviceMemoryProperties *mp)
{
    int imported = host_backed(g, s);
    if (make_buffer(g, s->size, imported, &s->buffer) != VK_SUCCESS)
        return VIDMM_E_NO_HOST_MEMORY;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(g->device, s->buffer, &req);
    VkImportMemoryHostPointerInfoEXT ip;
    memset(&ip, 0, sizeof ip);
    ip.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT;
    ip.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    ip.pHostPointer = s->host;
    VkMemoryAllocateFlagsInfo fl;
    memset(&fl, 0, sizeof fl);
    fl.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO;
    fl.pNext = imported ? &ip : NULL;
    fl.flags = g->have_bda ? VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT : 0;
    VkMemoryAllocateInfo ai;
    memset(&ai, 0, sizeof ai);
    ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    ai.pNext = &fl;
    ai.allocationSize = imported ? s->size : req.size;
    ai.memoryTypeIndex = s->type;
    if (vkAllocateMemory(g->device, &ai, NULL, &s->memory) != VK_SUCCESS ||
        vkBindBufferMemory(g->device, s->buffer, s->memory, 0) != VK_SUCCESS)
        return VIDMM_E_NO_HOST_MEMORY;
    const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    if (imported)
        s->map = s->host;
    else if ((mp->memoryTypes[s->type].propertyFlags & host) == host &&
             vkMapMemory(g->device, s->memory, 0, VK_WHOLE_SIZE, 0, &s->map) != VK_SUCCESS)
        s->map = NULL;
    return VIDMM_OK;
}

/* Segment bases: the buffers' device addresses when every one is
 * aligned to the segments' page (4 KiB, or 64 KiB with 64 KB pages),
 * else synthetic bases 1 TiB apart; either way patching writes the
 * device address (submit.c). */
static void assign_bases(struct vkgpu *g)
{
    uint64_t page = g->mmu ? g->block : VK_PAGE;
    int aligned = g->have_bda;
    for (uint32_t i = 1; i <= g->nseg && aligned; i++) {
        VkBufferDeviceAddressInfo bi;
        memset(&bi, 0, sizeof bi);
        bi.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO;
        bi.buffer = g->seg[i].buffer;
        g->seg[i].base = vkGetBufferDeviceAddress(g->device, &bi);
        aligned = g->seg[i].base && g->seg[i].base % page == 0;
    }
    g->info.buffer_device_address = (uint32_t)aligned;
    if (!aligned)
        for (uint32_t i = 1; i <= g->nseg; i++)
            g->seg[i].base = (uint64_t)i << 40;
}

/* How much of heap h to take: the budget or the heap, capped. */
static uint64_t heap_bytes(struct vkgpu *g, const VkPhysicalDeviceMemoryProperties *mp, uint32_t h,
                           const VkPhysicalDeviceMemoryBudgetPropertiesEXT *budget)
{
    uint64_t b = mp->memoryHeaps[h].size;
    if (budget && budget->heapBudget[h] && budget->heapBudget[h] < b)
        b = budget->heapBudget[h];
    uint64_t cap = g->cfg.heap_cap;
    if (!cap && g->info.device_type == VK_PHYSICAL_DEVICE_TYPE_CPU)
        cap = VKGPU_DEFAULT_CPU_DEVICE_CAP;
    if (cap && cap < b)
        b = cap;
    return VK_ALIGN64K(b);
}

/* The aperture's base: above every arena's range (segments may not
 * overlap in the GPU physical space vidmm keeps). */
static int place_aperture(struct vkgpu *g, uint64_t bytes)
{
    uint64_t top = 0;
    for (uint32_t i = 1; i <= g->nseg; i++)
        if (g->seg[i].base + g->seg[i].size > top)
            top = g->seg[i].base + g->seg[i].size;
    g->ap_base = (top + (1ull << 30)) & ~((1ull << 30) - 1);
    return g->ap_base < top || g->ap_base + bytes < g->ap_base ? -1 : 0;
}

vidmm_status vk_device_rebase(struct vkgpu *g)
{
    assign_bases(g);
    return place_aperture(g, g->ap_pages * VK_PAGE) < 0 ? VIDMM_E_NOT_SUPPORTED : VIDMM_OK;
}

/* The aperture: a GART above every arena's range. */
static vidmm_status make_aperture(struct vkgpu *g, char *err, size_t n)
{
    uint64_t bytes = g->cfg.aperture_size ? g->cfg.aperture_size : (256ull << 20);
    if (place_aperture(g, bytes) < 0)
        return fail(err, n, VIDMM_E_NOT_SUPPORTED, "no room for the aperture above the arenas", NULL);
    g->ap_id = g->nseg + 1;
    g->ap_pages = bytes / VK_PAGE;
    g->gart = calloc((size_t)g->ap_pages, sizeof *g->gart);
    g->dummy = aligned_alloc(VK_PAGE, VK_PAGE);
    if (!g->gart || !g->dummy)
        return fail(err, n, VIDMM_E_NO_HOST_MEMORY, "no host memory for the aperture's table", NULL);
    memset(g->dummy, 0, VK_PAGE);
    return VIDMM_OK;
}

static vidmm_status make_segments(struct vkgpu *g, int have_budget, char *err, size_t n)
{
    VkPhysicalDeviceMemoryBudgetPropertiesEXT budget;
    memset(&budget, 0, sizeof budget);
    budget.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT;
    VkPhysicalDeviceMemoryProperties2 mp2;
    memset(&mp2, 0, sizeof mp2);
    mp2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2;
    mp2.pNext = have_budget ? &budget : NULL;
    vkGetPhysicalDeviceMemoryProperties2(g->phys, &mp2);
    const VkPhysicalDeviceMemoryProperties *mp = &mp2.memoryProperties;
    VkBuffer probe;
    if (make_buffer(g, 65536, 0, &probe) != VK_SUCCESS)
        return fail(err, n, VIDMM_E_NOT_SUPPORTED, "cannot create a transfer buffer", NULL);
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(g->device, probe, &req);
    vkDestroyBuffer(g->device, probe, NULL);
    uint64_t max_arena = VK_ALIGN64K(g->info.max_allocation_size);
    if (g->cfg.arena_size && VK_ALIGN64K(g->cfg.arena_size) && VK_ALIGN64K(g->cfg.arena_size) < max_arena)
        max_arena = VK_ALIGN64K(g->cfg.arena_size);
    /* GpuMmu: vidmm's paging process takes a quarter of the largest
     * segment as scratch VA (twice with 64 KB windows); 256 MiB arenas
     * keep both inside a 256 MiB process VA space (D83). */
    if (g->cfg.gpummu && max_arena > VKGPU_GPUMMU_MAX_ARENA)
        max_arena = VKGPU_GPUMMU_MAX_ARENA;
    for (uint32_t h = 0; h < mp->memoryHeapCount; h++) {
        if (!(mp->memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT))
            continue;
        int t = pick_type(g, mp, h, req.memoryTypeBits);
        if (t < 0)
            continue;
        for (uint64_t left = heap_bytes(g, mp, h, have_budget ? &budget : NULL); left && g->nseg < VK_MAX_SEG;) {
            struct vk_segment *s = &g->seg[++g->nseg];
            s->heap = h;
            s->type = (uint32_t)t;
            s->size = left < max_arena ? left : max_arena;
            left -= s->size;
            if (make_arena(g, s, mp) < 0)
                return fail(err, n, VIDMM_E_NO_HOST_MEMORY, "an arena's memory was refused", NULL);
        }
    }
    if (!g->nseg)
        return fail(err, n, VIDMM_E_NOT_SUPPORTED, "no DEVICE_LOCAL heap usable for transfer buffers", NULL);
    g->info.segment_count = g->nseg;
    g->info.memory_budget = (uint32_t)have_budget;
    assign_bases(g);
    return make_aperture(g, err, n);
}

/* ---- open and close ------------------------------------------------------ */

static void fill_info(struct vkgpu *g)
{
    VkPhysicalDeviceDriverProperties drv;
    memset(&drv, 0, sizeof drv);
    drv.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
    VkPhysicalDeviceExternalMemoryHostPropertiesEXT host;
    memset(&host, 0, sizeof host);
    host.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT;
    host.pNext = &drv;
    VkPhysicalDeviceMaintenance3Properties m3;
    memset(&m3, 0, sizeof m3);
    m3.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES;
    m3.pNext = &host;
    VkPhysicalDeviceProperties2 p2;
    memset(&p2, 0, sizeof p2);
    p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    p2.pNext = &m3;
    vkGetPhysicalDeviceProperties2(g->phys, &p2);
    snprintf(g->info.device_name, sizeof g->info.device_name, "%s", p2.properties.deviceName);
    snprintf(g->info.driver_name, sizeof g->info.driver_name, "%s", drv.driverName);
    snprintf(g->info.driver_info, sizeof g->info.driver_info, "%s", drv.driverInfo);
    g->info.api_version = p2.properties.apiVersion;
    g->info.vendor_id = p2.properties.vendorID;
    g->info.device_id = p2.properties.deviceID;
    g->info.device_type = (uint32_t)p2.properties.deviceType;
    g->info.max_allocation_size = m3.maxMemoryAllocationSize ? m3.maxMemoryAllocationSize : (1ull << 30);
    g->import_align = host.minImportedHostPointerAlignment ? host.minImportedHostPointerAlignment : VK_PAGE;
}

vidmm_status vk_device_open(struct vkgpu *g, char *err, size_t n)
{
    if (make_instance(&g->instance) != VK_SUCCESS) {
        g->instance = VK_NULL_HANDLE;
        return fail(err, n, VIDMM_E_NOT_SUPPORTED, "no Vulkan 1.2 instance (is a Vulkan driver installed?)", NULL);
    }
    vidmm_status st = pick_device(g, err, n);
    if (st < 0)
        return st;
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(g->phys, &p);
    if (p.apiVersion < VK_API_VERSION_1_2)
        return fail(err, n, VIDMM_E_NOT_SUPPORTED, "the device is older than Vulkan 1.2", p.deviceName);
    VkExtensionProperties ext[512];
    uint32_t next = 512;
    vkEnumerateDeviceExtensionProperties(g->phys, NULL, &next, ext);
    if (!has_extension(ext, next, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME))
        return fail(err, n, VIDMM_E_NOT_SUPPORTED, "the device lacks VK_EXT_external_memory_host", p.deviceName);
    int budget = has_extension(ext, next, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    fill_info(g);
    if (g->import_align > VK_PAGE)
        return fail(err, n, VIDMM_E_NOT_SUPPORTED, "host imports need more than 4 KiB alignment", p.deviceName);
    if (pick_family(g->phys, &g->family, &g->info.transfer_only_queue) < 0)
        return fail(err, n, VIDMM_E_NOT_SUPPORTED, "no queue family can copy", p.deviceName);
    g->info.queue_family = g->family;
    if ((st = make_device(g, budget, err, n)) < 0)
        return st;
    return make_segments(g, budget, err, n);
}

void vk_device_close(struct vkgpu *g)
{
    if (g->device)
        vkDeviceWaitIdle(g->device);
    for (uint32_t i = 1; i <= VK_MAX_SEG; i++) {
        struct vk_segment *s = &g->seg[i];
        if (g->device && s->buffer)
            vkDestroyBuffer(g->device, s->buffer, NULL);
        if (g->device && s->memory)
            vkFreeMemory(g->device, s->memory, NULL);   /* unmaps too */
        if (s->host)
            munmap(s->host, (size_t)s->size);
        memset(s, 0, sizeof *s);
    }
    g->nseg = 0;
    if (g->device)
        vkDestroyDevice(g->device, NULL);
    g->device = VK_NULL_HANDLE;
    if (g->instance)
        vkDestroyInstance(g->instance, NULL);
    g->instance = VK_NULL_HANDLE;
    free(g->gart);
    free(g->dummy);
    g->gart = NULL;
    g->dummy = NULL;
}

const struct vk_segment *vk_segment(const struct vkgpu *g, uint32_t id, uint64_t offset, uint64_t size)
{
    if (id == 0 || id > g->nseg)
        return NULL;
    const struct vk_segment *s = &g->seg[id];
    return offset <= s->size && size <= s->size - offset ? s : NULL;
}

int vk_side_ok(const struct vkgpu *g, uint32_t id, uint64_t offset, uint64_t size)
{
    if (id && id == g->ap_id)
        return offset <= g->ap_pages * VK_PAGE && size <= g->ap_pages * VK_PAGE - offset;
    return vk_segment(g, id, offset, size) != NULL;
}

uint32_t vk_find_address(const struct vkgpu *g, uint64_t addr, uint64_t size, uint64_t *offset)
{
    for (uint32_t i = 1; i <= g->nseg; i++) {
        const struct vk_segment *s = &g->seg[i];
        if (addr >= s->base && addr - s->base <= s->size && size <= s->size - (addr - s->base)) {
            *offset = addr - s->base;
            return i;
        }
    }
    return 0;
}

/* ---- after a device loss ------------------------------------------------- */

static void free_arenas_and_device(struct vkgpu *g)
{
    vkDeviceWaitIdle(g->device);                   /* answers DEVICE_LOST at once when lost */
    for (uint32_t i = 1; i <= g->nseg; i++) {
        struct vk_segment *s = &g->seg[i];
        vkDestroyBuffer(g->device, s->buffer, NULL);
        vkFreeMemory(g->device, s->memory, NULL);
        s->buffer = VK_NULL_HANDLE;
        s->memory = VK_NULL_HANDLE;
        s->map = NULL;
    }
    vkDestroyDevice(g->device, NULL);
    g->device = VK_NULL_HANDLE;
}

/* Vulkan has no per-engine or in-place reset: a lost VkDevice is only
 * ever replaced.  The arenas are made again with the same sizes and
 * types; vidmm keeps the segments' base and CPU addresses, so the new
 * arenas must land there (the content is undefined after a reset, as
 * DxgkDdiResetFromTimeout allows). */
vidmm_status vk_device_recreate(struct vkgpu *g)
{
    struct vk_segment old[VK_MAX_SEG + 1];
    memcpy(old, g->seg, sizeof old);
    vk_engine_unmake(g);
    vk_mmu_device_gone(g);
    free_arenas_and_device(g);
    char err[128];
    if (make_device(g, (int)g->info.memory_budget, err, sizeof err) < 0)
        return VIDMM_E_DRIVER_FAILURE;
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(g->phys, &mp);
    for (uint32_t i = 1; i <= g->nseg; i++)
        if (make_arena(g, &g->seg[i], &mp) < 0)
            return VIDMM_E_DRIVER_FAILURE;
    assign_bases(g);
    for (uint32_t i = 1; i <= g->nseg; i++)
        if (g->seg[i].base != old[i].base || (old[i].map && g->seg[i].map != old[i].map))
            return VIDMM_E_DRIVER_FAILURE;
    vidmm_status st = vk_engine_remake(g, g->last_paging_fence);
    if (st >= 0)
        st = vk_mmu_device_back(g);
    if (st < 0)
        return st;
    pthread_mutex_lock(&g->lock);
    g->lost = 0;
    g->injected_loss = 0;
    g->info.device_recreations++;
    pthread_mutex_unlock(&g->lock);
    return VIDMM_OK;
}
