/*
 * engine.c - vkgpu's engine: submissions to the Vulkan queue and the
 * waiter thread that reports their fences to vidmm.
 *
 * A submission takes a slot of a ring of VK_RING, each with its own
 * command pool, so the submitting thread (vidmm's, one at a time) and
 * the waiter never share a pool.  A paging buffer's records (paging.c)
 * are merged into runs (chunks that continue each other), the system
 * side of a run is imported with VK_EXT_external_memory_host for the
 * life of the submission, and each run becomes one vkCmdCopyBuffer or
 * vkCmdFillBuffer.  A pipeline barrier comes before every command (the
 * first one also orders the command buffer after everything submitted
 * earlier: queue order alone does not order memory accesses) and one
 * after the last makes the bytes visible to the host.  The submission
 * signals a timeline semaphore: the paging timeline with vidmm's own
 * fence value, the context timeline with a vkgpu serial.
 *
 * Sparse binds (mmu.c) queued while a buffer is recorded run between
 * its commands: the job's command buffer is cut there, the part before
 * submitted, then one vkQueueBindSparse, then the next part; the order
 * timeline semaphore chains them, since Vulkan orders binds and
 * submissions only through semaphores.  A job whose last operation is a
 * bind lets the bind signal its fence.
 *
 * The waiter thread waits for the oldest slot's value, reports it
 * (vidmm_cb_notify_fence or vidmm_cb_notify_context_fence through the
 * config), frees its imports and gives the slot back.  A reset marks the
 * slots in flight dropped: their fences are never reported, as
 * DxgkDdiResetFromTimeout requires.
 */
#include "vkgpu_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the waiter ---------------------------------------------------------- */

static void release_imports(struct vkgpu *g, struct vk_job *j)
{
    for (uint32_t i = 0; i < j->nimports; i++) {
        vkDestroyBuffer(g->device, j->imports[i].buffer, NULL);
        vkFreeMemory(g->device, j->imports[i].memory, NULL);
    }
    j->nimports = 0;
}

static VkResult wait_value(struct vkgpu *g, VkSemaphore s, uint64_t v, uint64_t ns)
{
    VkSemaphoreWaitInfo wi;
    memset(&wi, 0, sizeof wi);
    wi.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO;
    wi.semaphoreCount = 1;
    wi.pSemaphores = &s;
    wi.pValues = &v;
    return vkWaitSemaphores(g->device, &wi, ns);
}

static void report(struct vkgpu *g, const struct vk_job *j)
{
    if (j->kind == VK_JOB_PAGING)
        g->cfg.notify_fence(j->adapter, j->fence);
    else if (g->cfg.notify_context_fence)
        g->cfg.notify_context_fence(j->adapter, j->context, j->node, j->fence);
}

/* Called with the lock held on the oldest slot; 1 when it is finished
 * (ran, or dropped on a lost device), 0 to look again.  A slot a reset
 * dropped on a live device still runs to its end (Vulkan cannot abort
 * it): its memory and imports are freed only then, just not reported. */
static int settle_head(struct vkgpu *g, struct vk_job *j)
{
    if (g->lost) {
        if (j->dropped)
            return 1;
        pthread_cond_wait(&g->work, &g->lock);     /* only a reset or destroy ends this */
        return 0;
    }
    pthread_mutex_unlock(&g->lock);
    VkResult r = wait_value(g, j->sem, j->value, 100000000ull);
    pthread_mutex_lock(&g->lock);
    if (r == VK_TIMEOUT)
        return 0;
    if (r != VK_SUCCESS) {
        if (!g->lost)
            g->info.device_losses++;
        g->lost = 1;                               /* VK_ERROR_DEVICE_LOST: vidmm's TDR takes over */
        return 0;
    }
    if (!j->dropped) {
        pthread_mutex_unlock(&g->lock);
        if (j->faulted && g->cfg.notify_page_fault)   /* before the fence, as vidmm expects */
            g->cfg.notify_page_fault(j->adapter, j->fault_context, j->fault_va, VIDMM_FAULT_NOT_PRESENT);
        report(g, j);
        pthread_mutex_lock(&g->lock);
    }
    return 1;
}

static void *waiter_main(void *arg)
{
    struct vkgpu *g = arg;
    pthread_mutex_lock(&g->lock);
    for (;;) {
        if (!g->count) {
            if (g->stop)
                break;
            pthread_cond_wait(&g->work, &g->lock);
            continue;
        }
        struct vk_job *j = &g->ring[g->head];
        if (!settle_head(g, j))
            continue;
        release_imports(g, j);
        g->head = (g->head + 1) % VK_RING;
        g->count--;
        g->completed_value++;
        pthread_cond_broadcast(&g->done);
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

/* ---- start and stop -------------------------------------------------- */

static VkResult make_timeline(struct vkgpu *g, uint64_t initial, VkSemaphore *out)
{
    VkSemaphoreTypeCreateInfo ti;
    memset(&ti, 0, sizeof ti);
    ti.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO;
    ti.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    ti.initialValue = initial;
    VkSemaphoreCreateInfo si;
    memset(&si, 0, sizeof si);
    si.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO;
    si.pNext = &ti;
    return vkCreateSemaphore(g->device, &si, NULL, out);
}

/* One more command buffer for j (cbs grows; the pool's reset frees none
 * of them, so a job cut many times reuses them). */
static int add_cb(struct vkgpu *g, struct vk_job *j)
{
    if (j->ncb == j->capcb) {
        uint32_t cap = j->capcb ? 2 * j->capcb : 2;
        VkCommandBuffer *n = realloc(j->cbs, cap * sizeof *n);
        if (!n)
            return -1;
        memset(n + j->capcb, 0, (cap - j->capcb) * sizeof *n);
        j->cbs = n;
        j->capcb = cap;
    }
    if (!j->cbs[j->ncb]) {
        VkCommandBufferAllocateInfo ai;
        memset(&ai, 0, sizeof ai);
        ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
        ai.commandPool = j->pool;
        ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        ai.commandBufferCount = 1;
        if (vkAllocateCommandBuffers(g->device, &ai, &j->cbs[j->ncb]) != VK_SUCCESS)
            return -1;
    }
    j->cb = j->cbs[j->ncb++];
    return 0;
}

static vidmm_status make_pools(struct vkgpu *g)
{
    for (uint32_t i = 0; i < VK_RING; i++) {
        struct vk_job *j = &g->ring[i];
        VkCommandPoolCreateInfo pi;
        memset(&pi, 0, sizeof pi);
        pi.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
        pi.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
        pi.queueFamilyIndex = g->family;
        if (vkCreateCommandPool(g->device, &pi, NULL, &j->pool) != VK_SUCCESS)
            return VIDMM_E_NO_HOST_MEMORY;
        j->capcb = j->ncb = 0;
        if (add_cb(g, j) < 0)
            return VIDMM_E_NO_HOST_MEMORY;
    }
    return VIDMM_OK;
}

static void free_pools(struct vkgpu *g)
{
    for (uint32_t i = 0; i < VK_RING; i++) {
        struct vk_job *j = &g->ring[i];
        release_imports(g, j);
        if (j->pool)
            vkDestroyCommandPool(g->device, j->pool, NULL);   /* frees its command buffers */
        j->pool = VK_NULL_HANDLE;
        j->cb = VK_NULL_HANDLE;
        free(j->cbs);
        j->cbs = NULL;
        j->ncb = j->capcb = 0;
    }
}

/* The Vulkan objects of the engine (also remade after a device loss). */
static vidmm_status engine_objects(struct vkgpu *g, uint64_t paging_value)
{
    g->order_serial = g->gate_value = 0;
    g->last_was_bind = g->held = 0;
    if (make_timeline(g, paging_value, &g->paging_sem) != VK_SUCCESS ||
        make_timeline(g, g->context_serial, &g->context_sem) != VK_SUCCESS ||
        make_timeline(g, 0, &g->order_sem) != VK_SUCCESS || make_timeline(g, 0, &g->gate_sem) != VK_SUCCESS)
        return VIDMM_E_NO_HOST_MEMORY;
    return make_pools(g);
}

static void engine_objects_free(struct vkgpu *g)
{
    free_pools(g);
    if (g->paging_sem)
        vkDestroySemaphore(g->device, g->paging_sem, NULL);
    if (g->context_sem)
        vkDestroySemaphore(g->device, g->context_sem, NULL);
    if (g->order_sem)
        vkDestroySemaphore(g->device, g->order_sem, NULL);
    if (g->gate_sem)
        vkDestroySemaphore(g->device, g->gate_sem, NULL);
    g->paging_sem = g->context_sem = g->order_sem = g->gate_sem = VK_NULL_HANDLE;
}

vidmm_status vk_engine_start(struct vkgpu *g)
{
    vidmm_status st = engine_objects(g, 0);
    if (st < 0)
        return st;
    if (pthread_mutex_init(&g->lock, NULL) != 0)
        return VIDMM_E_NO_HOST_MEMORY;
    if (pthread_cond_init(&g->work, NULL) != 0 || pthread_cond_init(&g->done, NULL) != 0 ||
        pthread_create(&g->waiter, NULL, waiter_main, g) != 0) {
        pthread_mutex_destroy(&g->lock);           /* a half-made set: this one-time path is not worth more */
        return VIDMM_E_NO_HOST_MEMORY;
    }
    g->thread_started = 1;
    return VIDMM_OK;
}

/* Marks every slot in flight dropped (with the lock held). */
static void drop_all_locked(struct vkgpu *g)
{
    for (uint32_t k = 0; k < g->count; k++)
        g->ring[(g->head + k) % VK_RING].dropped = 1;
    pthread_cond_broadcast(&g->work);
}

void vk_engine_stop(struct vkgpu *g)
{
    if (g->held)
        vkgpu_hold_queue(g, 0);                    /* what waits at the gate runs, then everything stops */
    if (g->thread_started) {
        pthread_mutex_lock(&g->lock);
        if (g->lost)
            drop_all_locked(g);                    /* nothing more will complete */
        g->stop = 1;
        pthread_cond_broadcast(&g->work);
        pthread_mutex_unlock(&g->lock);
        pthread_join(g->waiter, NULL);
        pthread_cond_destroy(&g->work);
        pthread_cond_destroy(&g->done);
        pthread_mutex_destroy(&g->lock);
        g->thread_started = 0;
    }
    if (g->device) {
        vkDeviceWaitIdle(g->device);
        engine_objects_free(g);
    }
}

/* ---- slots --------------------------------------------------------- */

static int begin_cb(VkCommandBuffer cb)
{
    VkCommandBufferBeginInfo bi;
    memset(&bi, 0, sizeof bi);
    bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    return vkBeginCommandBuffer(cb, &bi) == VK_SUCCESS ? 0 : -1;
}

struct vk_job *vk_job_begin(struct vkgpu *g)
{
    pthread_mutex_lock(&g->lock);
    while (g->count == VK_RING && !g->lost)
        pthread_cond_wait(&g->done, &g->lock);
    /* A lost device still takes work (as vkQueueSubmit answering
     * DEVICE_LOST does): it never completes, and the reset drops it. */
    struct vk_job *j = g->count == VK_RING ? NULL : &g->ring[(g->head + g->count) % VK_RING];
    pthread_mutex_unlock(&g->lock);
    if (!j)
        return NULL;
    j->dropped = 0;
    j->nimports = 0;
    j->dirty = j->queued = j->faulted = 0;
    memset(&j->stat, 0, sizeof j->stat);
    j->ncb = 0;
    if (vkResetCommandPool(g->device, j->pool, 0) != VK_SUCCESS || add_cb(g, j) < 0 || begin_cb(j->cb) < 0)
        return NULL;
    return j;
}

vidmm_status vk_job_import(struct vkgpu *g, struct vk_job *j, uintptr_t addr, uint64_t size, VkBuffer *buf,
                           uint64_t *off)
{
    uintptr_t base = addr & ~(uintptr_t)(VK_PAGE - 1);
    uint64_t bytes = (addr + size - base + VK_PAGE - 1) & ~(uint64_t)(VK_PAGE - 1);
    for (uint32_t i = 0; i < j->nimports; i++)    /* a range this submission already imported */
        if (base >= j->imports[i].base && base + bytes <= j->imports[i].base + j->imports[i].size) {
            *buf = j->imports[i].buffer;
            *off = addr - j->imports[i].base;
            return VIDMM_OK;
        }
    if (j->nimports == j->capimports) {
        uint32_t cap = j->capimports ? 2 * j->capimports : 8;
        struct vk_import *n = realloc(j->imports, cap * sizeof *n);
        if (!n)
            return VIDMM_E_NO_HOST_MEMORY;
        j->imports = n;
        j->capimports = cap;
    }
    struct vk_import *im = &j->imports[j->nimports];
    memset(im, 0, sizeof *im);
    VkMemoryHostPointerPropertiesEXT hp;
    memset(&hp, 0, sizeof hp);
    hp.sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT;
    if (g->get_host_ptr_props(g->device, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, (void *)base, &hp) !=
        VK_SUCCESS)
        return VIDMM_E_INVALID_ARG;
    VkExternalMemoryBufferCreateInfo eb;
    memset(&eb, 0, sizeof eb);
    eb.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO;
    eb.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    VkBufferCreateInfo bci;
    memset(&bci, 0, sizeof bci);
    bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bci.pNext = &eb;
    bci.size = bytes;
    bci.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    if (vkCreateBuffer(g->device, &bci, NULL, &im->buffer) != VK_SUCCESS)
        return VIDMM_E_NO_HOST_MEMORY;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(g->device, im->buffer, &req);
    uint32_t bits = req.memoryTypeBits & hp.memoryTypeBits;
    VkImportMemoryHostPointerInfoEXT ip;
    memset(&ip, 0, sizeof ip);
    ip.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT;
    ip.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    ip.pHostPointer = (void *)base;
    VkMemoryAllocateInfo ai;
    memset(&ai, 0, sizeof ai);
    ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    ai.pNext = &ip;
    ai.allocationSize = bytes;
    ai.memoryTypeIndex = 0;
    while (bits && !(bits & (1u << ai.memoryTypeIndex)))
        ai.memoryTypeIndex++;
    if (!bits || vkAllocateMemory(g->device, &ai, NULL, &im->memory) != VK_SUCCESS) {
        vkDestroyBuffer(g->device, im->buffer, NULL);
        return VIDMM_E_NO_HOST_MEMORY;
    }
    if (vkBindBufferMemory(g->device, im->buffer, im->memory, 0) != VK_SUCCESS) {
        vkDestroyBuffer(g->device, im->buffer, NULL);
        vkFreeMemory(g->device, im->memory, NULL);
        return VIDMM_E_NO_HOST_MEMORY;
    }
    im->base = base;
    im->size = bytes;
    j->nimports++;
    j->stat.host_imports++;
    *buf = im->buffer;
    *off = addr - base;
    return VIDMM_OK;
}

/* Makes what the commands wrote visible to the host (fence waiters read
 * CPU-visible segments and system pages). */
static void barrier_to_host(VkCommandBuffer cb)
{
    VkMemoryBarrier mb;
    memset(&mb, 0, sizeof mb);
    mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_HOST_WRITE_BIT;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0,
                         NULL);
}

/* ---- queue order: the order timeline and the gate ---------------------- */

/* The waits and signals of one queue operation (docs/VKGPU.md
 * "Ordering"): a bind waits for the operation before it, an operation
 * after a bind waits for the bind; submissions after submissions need no
 * wait (queue order and the barriers order them).  Each signals the
 * order timeline with the next serial, and sig = value when sig is set. */
struct vk_sync {
    VkSemaphore wait[2], sig[2];
    uint64_t wait_v[2], sig_v[2];
    VkPipelineStageFlags stage[2];
    uint32_t nwait, nsig;
    VkTimelineSemaphoreSubmitInfo ts;
};

static void sync_make(struct vkgpu *g, struct vk_sync *s, int bind, VkSemaphore sig, uint64_t value)
{
    memset(s, 0, sizeof *s);
    if ((bind || g->last_was_bind) && g->order_serial) {
        s->wait[s->nwait] = g->order_sem;
        s->wait_v[s->nwait++] = g->order_serial;
    }
    if (g->held) {
        s->wait[s->nwait] = g->gate_sem;
        s->wait_v[s->nwait++] = g->gate_value;
    }
    s->stage[0] = s->stage[1] = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    s->sig[s->nsig] = g->order_sem;
    s->sig_v[s->nsig++] = g->order_serial + 1;
    if (sig) {
        s->sig[s->nsig] = sig;
        s->sig_v[s->nsig++] = value;
    }
    s->ts.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO;
    s->ts.waitSemaphoreValueCount = s->nwait;
    s->ts.pWaitSemaphoreValues = s->wait_v;
    s->ts.signalSemaphoreValueCount = s->nsig;
    s->ts.pSignalSemaphoreValues = s->sig_v;
}

/* After a queue operation: VIDMM_OK when it was queued or the device is
 * lost (then nothing more completes and the reset drops the work). */
static vidmm_status sync_done(struct vkgpu *g, int bind, VkResult r)
{
    if (r == VK_SUCCESS) {
        g->order_serial++;
        g->last_was_bind = bind;
        return VIDMM_OK;
    }
    if (r != VK_ERROR_DEVICE_LOST)
        return VIDMM_E_DRIVER_FAILURE;
    pthread_mutex_lock(&g->lock);
    if (!g->lost)
        g->info.device_losses++;
    g->lost = 1;
    pthread_cond_broadcast(&g->work);
    pthread_mutex_unlock(&g->lock);
    return VIDMM_OK;
}

static int injected(struct vkgpu *g)
{
    pthread_mutex_lock(&g->lock);
    int v = g->injected_loss;
    pthread_mutex_unlock(&g->lock);
    return v;
}

/* Ends j's current command buffer and queues it, signalling sig = value
 * when sig is set. */
static vidmm_status submit_cb(struct vkgpu *g, struct vk_job *j, VkSemaphore sig, uint64_t value)
{
    barrier_to_host(j->cb);
    if (vkEndCommandBuffer(j->cb) != VK_SUCCESS)
        return VIDMM_E_DRIVER_FAILURE;
    struct vk_sync y;
    sync_make(g, &y, 0, sig, value);
    VkSubmitInfo si;
    memset(&si, 0, sizeof si);
    si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    si.pNext = &y.ts;
    si.waitSemaphoreCount = y.nwait;
    si.pWaitSemaphores = y.wait;
    si.pWaitDstStageMask = y.stage;
    si.commandBufferCount = 1;
    si.pCommandBuffers = &j->cb;
    si.signalSemaphoreCount = y.nsig;
    si.pSignalSemaphores = y.sig;
    VkResult r = injected(g) ? VK_ERROR_DEVICE_LOST : vkQueueSubmit(g->queue, 1, &si, VK_NULL_HANDLE);
    vidmm_status st = sync_done(g, 0, r);
    if (st >= 0)
        j->queued++;
    return st;
}

vidmm_status vk_queue_bind(struct vkgpu *g, const VkSparseBufferMemoryBindInfo *bb, uint32_t n, VkSemaphore sig,
                           uint64_t value)
{
    struct vk_sync y;
    sync_make(g, &y, 1, sig, value);
    VkBindSparseInfo bi;
    memset(&bi, 0, sizeof bi);
    bi.sType = VK_STRUCTURE_TYPE_BIND_SPARSE_INFO;
    bi.pNext = &y.ts;
    bi.waitSemaphoreCount = y.nwait;
    bi.pWaitSemaphores = y.wait;
    bi.bufferBindCount = n;
    bi.pBufferBinds = bb;
    bi.signalSemaphoreCount = y.nsig;
    bi.pSignalSemaphores = y.sig;
    VkResult r = injected(g) ? VK_ERROR_DEVICE_LOST : vkQueueBindSparse(g->queue, 1, &bi, VK_NULL_HANDLE);
    return sync_done(g, 1, r);
}

/* Binds queued since j's last command run between that command and the
 * next: the part recorded so far is queued, then the binds, and the job
 * goes on in a new command buffer. */
vidmm_status vk_job_flush_binds(struct vkgpu *g, struct vk_job *j)
{
    if (g->binds_pending) {
        vidmm_status st = VIDMM_OK;
        if (j->dirty && (st = submit_cb(g, j, VK_NULL_HANDLE, 0)) >= 0 && (add_cb(g, j) < 0 || begin_cb(j->cb) < 0))
            st = VIDMM_E_NO_HOST_MEMORY;
        if (st < 0 || (st = vk_mmu_flush_binds(g, VK_NULL_HANDLE, 0)) < 0)
            return st;
        j->dirty = 0;
    }
    j->dirty = 1;                                  /* the caller records a command next */
    return VIDMM_OK;
}

/* Hands j to the waiter (with the lock held by the caller). */
static void hand_over_locked(struct vkgpu *g, struct vk_job *j)
{
    g->info.submissions++;
    g->info.copy_commands += j->stat.copy_commands;
    g->info.copy_bytes += j->stat.copy_bytes;
    g->info.fill_commands += j->stat.fill_commands;
    g->info.fill_bytes += j->stat.fill_bytes;
    g->info.host_imports += j->stat.host_imports;
    g->info.virtual_copy_bytes += j->stat.vcopy_bytes;
    g->info.virtual_fill_bytes += j->stat.vfill_bytes;
    g->info.paging_faults += j->stat.faults;
    g->count++;
    pthread_cond_broadcast(&g->work);
}

/* The job's last part signals its timeline: the command buffer, or when
 * binds were queued after its last command, the vkQueueBindSparse (so
 * the fence also says the page tables' binds are done). */
vidmm_status vk_job_submit(struct vkgpu *g, struct vk_job *j)
{
    vidmm_status st = VIDMM_OK;
    if (g->binds_pending) {
        if (j->dirty)
            st = submit_cb(g, j, VK_NULL_HANDLE, 0);
        else
            vkEndCommandBuffer(j->cb);
        if (st >= 0)
            st = vk_mmu_flush_binds(g, j->sem, j->value);
    } else {
        st = submit_cb(g, j, j->sem, j->value);
    }
    if (st < 0 && !j->queued) {
        release_imports(g, j);
        return st;
    }
    pthread_mutex_lock(&g->lock);
    if (st < 0) {                                  /* a part runs already: the waiter frees the job after it */
        j->dropped = 1;
        j->sem = g->order_sem;
        j->value = g->order_serial;
    }
    hand_over_locked(g, j);
    pthread_mutex_unlock(&g->lock);
    return st;
}

/* A job refused while recording: nothing of it may stay on the queue
 * unwatched, so parts already queued are waited for by the waiter
 * (dropped: no fence reported). */
void vk_job_abandon(struct vkgpu *g, struct vk_job *j)
{
    vkEndCommandBuffer(j->cb);
    if (!j->queued) {
        release_imports(g, j);
        return;
    }
    pthread_mutex_lock(&g->lock);
    j->dropped = 1;
    j->sem = g->order_sem;
    j->value = g->order_serial;
    memset(&j->stat, 0, sizeof j->stat);
    hand_over_locked(g, j);
    g->info.submissions--;                         /* not a submission vidmm made */
    pthread_mutex_unlock(&g->lock);
}

vidmm_status vkgpu_hold_queue(struct vkgpu *g, int hold)
{
    if (!g || (hold != 0 && hold != 1))
        return VIDMM_E_INVALID_ARG;
    if (hold == g->held)
        return VIDMM_OK;
    if (hold) {
        g->gate_value++;
        g->held = 1;
        return VIDMM_OK;
    }
    VkSemaphoreSignalInfo si;
    memset(&si, 0, sizeof si);
    si.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO;
    si.semaphore = g->gate_sem;
    si.value = g->gate_value;
    g->held = 0;
    return vkSignalSemaphore(g->device, &si) == VK_SUCCESS ? VIDMM_OK : VIDMM_E_DRIVER_FAILURE;
}

/* ---- recording a paging buffer ------------------------------------------ */

/* Orders every command after the ones before it (in this buffer or any
 * earlier submission on the queue) and after host writes. */
void vk_barrier_transfer(VkCommandBuffer cb)
{
    VkMemoryBarrier mb;
    memset(&mb, 0, sizeof mb);
    mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_HOST_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                         VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* A side of a run: the arena's buffer, or the imported host pages. */
static vidmm_status resolve(struct vkgpu *g, struct vk_job *j, uint32_t seg, uint64_t at, uint64_t size,
                            VkBuffer *buf, uint64_t *off)
{
    if (seg) {
        if (!vk_segment(g, seg, at, size))
            return VIDMM_E_INVALID_ARG;
        *buf = g->seg[seg].buffer;
        *off = at;
        return VIDMM_OK;
    }
    return vk_job_import(g, j, (uintptr_t)at, size, buf, off);
}

void vk_cmd_copy(struct vk_job *j, VkBuffer sb, uint64_t so, VkBuffer db, uint64_t dof, uint64_t size, uint64_t step,
                 int forward)
{
    uint64_t n = step ? (size + step - 1) / step : 1;
    if (!step)
        step = size;
    for (uint64_t k = 0; k < n; k++) {
        uint64_t i = forward ? k : n - 1 - k;
        uint64_t o = i * step, len = size - o < step ? size - o : step;
        VkBufferCopy c = { so + o, dof + o, len };
        vk_barrier_transfer(j->cb);
        vkCmdCopyBuffer(j->cb, sb, db, 1, &c);
        j->stat.copy_commands++;
        j->stat.copy_bytes += len;
    }
}

void vk_cmd_fill(struct vk_job *j, VkBuffer b, uint64_t off, uint64_t size, uint32_t pattern)
{
    vk_barrier_transfer(j->cb);
    vkCmdFillBuffer(j->cb, b, off, size, pattern);
    j->stat.fill_commands++;
    j->stat.fill_bytes += size;
}

/* Where byte `at` of an aperture side really is: the host address, and
 * how many bytes from there are contiguous in host memory (at most
 * want). */
static uint64_t aperture_host(const struct vkgpu *g, uint64_t at, uint64_t want, uint64_t *len)
{
    uint64_t page = at / VK_PAGE, in = at % VK_PAGE;
    uint64_t host = g->gart[page] ? g->gart[page] : (uint64_t)(uintptr_t)g->dummy;
    uint64_t n = VK_PAGE - in;
    while (n < want && page + 1 < g->ap_pages && g->gart[page] && g->gart[page + 1] == g->gart[page] + VK_PAGE) {
        page++;
        n += VK_PAGE;
    }
    *len = n < want ? n : want;
    return host + in;
}

static vidmm_status record_copy(struct vkgpu *g, struct vk_job *j, uint32_t ss, uint64_t src, uint32_t ds,
                                uint64_t dst, uint64_t size)
{
    VkBuffer db, sb;
    uint64_t doff, soff;
    vidmm_status st = resolve(g, j, ds, dst, size, &db, &doff);
    if (st < 0 || (st = resolve(g, j, ss, src, size, &sb, &soff)) < 0)
        return st;
    /* A copy inside one buffer whose ranges overlap: vkCmdCopyBuffer
     * forbids it, so it goes in pieces of the distance, in the safe
     * direction. */
    uint64_t step = 0;
    if (sb == db && soff < doff + size && doff < soff + size)
        step = soff > doff ? soff - doff : doff - soff;
    if (soff != doff || sb != db)
        vk_cmd_copy(j, sb, soff, db, doff, size, step, soff > doff);
    return VIDMM_OK;
}

/* A copy with an aperture side goes in pieces that are contiguous in
 * host memory on both sides. */
static vidmm_status record_copy_run(struct vkgpu *g, struct vk_job *j, const struct vk_rec *r)
{
    for (uint64_t done = 0; done < r->size;) {
        uint64_t len = r->size - done, l;
        uint32_t ss = r->src_seg, ds = r->dst_seg;
        uint64_t src = r->src + done, dst = r->dst + done;
        if (ss == g->ap_id) {
            src = aperture_host(g, src, len, &l);
            ss = 0;
            len = l;
        }
        if (ds == g->ap_id) {
            dst = aperture_host(g, dst, len, &l);
            ds = 0;
            len = l;
        }
        if (!ss && !ds) {                          /* both sides system pages: a CPU copy would do, the queue too */
            VkBuffer sb, db;
            uint64_t so, dof;
            vidmm_status st = vk_job_import(g, j, (uintptr_t)src, len, &sb, &so);
            if (st < 0 || (st = vk_job_import(g, j, (uintptr_t)dst, len, &db, &dof)) < 0)
                return st;
            vk_cmd_copy(j, sb, so, db, dof, len, 0, 1);
        } else {
            vidmm_status st = record_copy(g, j, ss, src, ds, dst, len);
            if (st < 0)
                return st;
        }
        done += len;
    }
    return VIDMM_OK;
}

/* MAP / UNMAP: the GART changes now, between the buffers recorded
 * before and after, which is where the queue runs them. */
static void apply_map(struct vkgpu *g, const struct vk_rec *r)
{
    for (uint64_t i = 0; i < r->size; i++)
        g->gart[r->dst + i] = r->op == VK_REC_MAP ? r->src + i * VK_PAGE : r->src;
}

vidmm_status vk_record_run(struct vkgpu *g, struct vk_job *j, const struct vk_rec *r)
{
    if (r->op == VK_REC_MAP || r->op == VK_REC_UNMAP) {
        apply_map(g, r);
        return VIDMM_OK;
    }
    if (r->op != VK_REC_COPY && r->op != VK_REC_FILL)
        return VIDMM_E_INVALID_ARG;                /* UPT, VCOPY, VFILL carry payloads: record_paging applies them */
    vidmm_status st = vk_job_flush_binds(g, j);
    if (st < 0)
        return st;
    if (r->op == VK_REC_COPY)
        return record_copy_run(g, j, r);
    VkBuffer db;
    uint64_t doff;
    st = resolve(g, j, r->dst_seg, r->dst, r->size, &db, &doff);
    if (st < 0)
        return st;
    vk_cmd_fill(j, db, doff, r->size, (uint32_t)r->src);
    return VIDMM_OK;
}

/* Does b continue run r (same kind, both sides contiguous)? */
static int continues(const struct vk_rec *r, const struct vk_rec *b)
{
    if (b->op != r->op || b->dst_seg != r->dst_seg || b->dst != r->dst + r->size || r->op > VK_REC_FILL)
        return 0;
    if (r->op == VK_REC_FILL)
        return b->src == r->src;
    return b->src_seg == r->src_seg && b->src == r->src + r->size;
}

static vidmm_status record_paging(struct vkgpu *g, struct vk_job *j, const uint8_t *buf, uint32_t size)
{
    for (uint32_t o = 0; o < size;) {
        struct vk_rec run;
        memcpy(&run, buf + o, sizeof run);
        o += (uint32_t)sizeof run;
        if (run.op == VK_REC_UPT) {
            vidmm_status st = vk_mmu_apply(g, &run, buf + o);
            if (st < 0)
                return st;
            o += vk_mmu_payload(&run);
            continue;
        }
        if (run.op == VK_REC_VCOPY || run.op == VK_REC_VFILL) {
            struct vk_rec root;
            memcpy(&root, buf + o, sizeof root);
            o += (uint32_t)sizeof root;
            /* Chunks of one operation that continue each other: one walk. */
            while (o + 2 * sizeof run <= size) {
                struct vk_rec b, br;
                memcpy(&b, buf + o, sizeof b);
                memcpy(&br, buf + o + sizeof b, sizeof br);
                if (b.op != run.op || br.dst != root.dst || b.dst != run.dst + run.size ||
                    (run.op == VK_REC_VCOPY ? b.src != run.src + run.size : b.src != run.src))
                    break;
                run.size += b.size;
                o += 2 * (uint32_t)sizeof b;
            }
            vidmm_status st = vk_mmu_record_virtual(g, j, &run, &root);
            if (st < 0)
                return st;
            continue;
        }
        while (o < size) {
            struct vk_rec b;
            memcpy(&b, buf + o, sizeof b);
            if (!continues(&run, &b) || run.size + b.size < run.size)
                break;
            run.size += b.size;
            o += (uint32_t)sizeof b;
        }
        vidmm_status st = vk_record_run(g, j, &run);
        if (st < 0)
            return st;
    }
    return VIDMM_OK;
}

/* Every record well formed before anything is recorded. */
static int records_valid(const struct vkgpu *g, const uint8_t *buf, uint32_t size)
{
    if (size % sizeof(struct vk_rec))
        return 0;
    for (uint32_t o = 0; o < size; o += (uint32_t)sizeof(struct vk_rec)) {
        struct vk_rec r;
        memcpy(&r, buf + o, sizeof r);
        if (r.op == VK_REC_UPT || r.op == VK_REC_VCOPY || r.op == VK_REC_VFILL) {
            uint32_t used = vk_mmu_records_valid(g, buf + o, size - o);
            if (!used)
                return 0;
            o += used - (uint32_t)sizeof r;
            continue;
        }
        if (r.op == VK_REC_MAP || r.op == VK_REC_UNMAP) {
            if (r.dst_seg != g->ap_id || r.dst > g->ap_pages || r.size > g->ap_pages - r.dst || !r.src ||
                r.src % VK_PAGE)
                return 0;
            continue;
        }
        if (r.op == VK_REC_FILL ? (!r.dst_seg || r.dst_seg > g->nseg || r.size % 4 || r.dst % 4)
                                : (r.op != VK_REC_COPY || (!r.src_seg && !r.dst_seg)))
            return 0;
        if ((r.dst_seg && !vk_side_ok(g, r.dst_seg, r.dst, r.size)) ||
            (r.op == VK_REC_COPY && r.src_seg && !vk_side_ok(g, r.src_seg, r.src, r.size)))
            return 0;
    }
    return 1;
}

vidmm_status vk_submit_command(void *driver, const struct vidmm_submit_command_args *args)
{
    struct vkgpu *g = driver;
    if (!g || !args || (!args->dma_buffer && args->dma_buffer_size) ||
        !records_valid(g, args->dma_buffer, args->dma_buffer_size))
        return VIDMM_E_INVALID_ARG;
    struct vk_job *j = vk_job_begin(g);
    if (!j)
        return VIDMM_E_DRIVER_FAILURE;
    j->kind = VK_JOB_PAGING;
    j->adapter = args->adapter;
    j->fence = args->fence;
    j->sem = g->paging_sem;
    j->value = args->fence;
    g->last_paging_fence = args->fence;
    vidmm_status st = record_paging(g, j, args->dma_buffer, args->dma_buffer_size);
    if (st < 0) {
        vk_job_abandon(g, j);
        return st;
    }
    return vk_job_submit(g, j);
}

/* ---- idle, engine status, reset ------------------------------------------ */

vidmm_status vkgpu_wait_idle(struct vkgpu *g)
{
    if (!g)
        return VIDMM_E_INVALID_ARG;
    vidmm_status st = VIDMM_OK;
    pthread_mutex_lock(&g->lock);
    while (g->count) {
        if (g->lost && !g->ring[g->head].dropped) {
            st = VIDMM_E_STATE;                    /* a lost device finishes nothing until reset */
            break;
        }
        pthread_cond_wait(&g->done, &g->lock);
    }
    pthread_mutex_unlock(&g->lock);
    return st;
}

/* A Vulkan device either makes progress or is lost (the kernel driver's
 * own timeout turns a hang into VK_ERROR_DEVICE_LOST). */
vidmm_status vk_query_engine_status(void *driver, uint32_t node, uint32_t *responsive)
{
    struct vkgpu *g = driver;
    if (!g || !responsive || (node != 0 && node != VIDMM_PAGING_ENGINE))
        return VIDMM_E_INVALID_ARG;
    pthread_mutex_lock(&g->lock);
    *responsive = !g->lost;
    pthread_mutex_unlock(&g->lock);
    return VIDMM_OK;
}

/* DxgkDdiResetFromTimeout: drop what is in flight without reporting it,
 * wait until the queue no longer touches memory, and after a device loss
 * make a new device (device.c) whose arenas must land where vidmm was
 * told they are. */
vidmm_status vk_reset_from_timeout(void *driver)
{
    struct vkgpu *g = driver;
    if (!g)
        return VIDMM_E_INVALID_ARG;
    pthread_mutex_lock(&g->lock);
    drop_all_locked(g);
    int lost = g->lost;
    pthread_mutex_unlock(&g->lock);
    if (!lost)
        vkQueueWaitIdle(g->queue);
    pthread_mutex_lock(&g->lock);
    while (g->count)
        pthread_cond_wait(&g->done, &g->lock);
    pthread_mutex_unlock(&g->lock);
    if (!lost)
        return VIDMM_OK;
    return vk_device_recreate(g);
}

vidmm_status vk_restart_from_timeout(void *driver)
{
    return driver ? VIDMM_OK : VIDMM_E_INVALID_ARG;
}

vidmm_status vkgpu_inject_device_loss(struct vkgpu *g)
{
    if (!g)
        return VIDMM_E_INVALID_ARG;
    /* What already reached the queue runs to its end (the device is not
     * really lost): from here on nothing more does. */
    vkQueueWaitIdle(g->queue);
    pthread_mutex_lock(&g->lock);
    if (!g->lost)
        g->info.device_losses++;
    g->lost = 1;
    g->injected_loss = 1;
    pthread_cond_broadcast(&g->work);
    pthread_mutex_unlock(&g->lock);
    return VIDMM_OK;
}

/* After a loss: the engine's Vulkan objects on the new device. */
vidmm_status vk_engine_remake(struct vkgpu *g, uint64_t paging_value)
{
    return engine_objects(g, paging_value);
}

void vk_engine_unmake(struct vkgpu *g)
{
    engine_objects_free(g);
}
