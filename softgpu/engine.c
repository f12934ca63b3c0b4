/*
 * engine.c - softgpu's copy engine: the queue of submitted paging buffers
 * and the thread that executes them.
 *
 * submit_command (paging.c) validates a buffer on the caller's thread,
 * then hands it here.  In the default mode it is appended to a bounded
 * FIFO (a fixed array of SOFTGPU_QUEUE_LEN jobs in struct softgpu, so the
 * submit path never allocates; a full queue makes the submitter wait, as
 * a full hardware ring would) and the engine thread takes jobs in
 * submission order, runs each with softgpu_execute_buffer (the one executor
 * of both modes) and then signals its fence with vidmm_cb_notify_fence.
 * In synchronous mode there is no thread: the buffer runs inside
 * submit_command and its fence is signalled before it returns.  In
 * manual mode (SOFTGPU_SCHED_MANUAL) there is no thread either: jobs stay
 * queued until the harness runs one with softgpu_step, so a seeded
 * scheduler decides when each buffer runs relative to everything else
 * (docs/SOFTGPU.md "Deterministic mode").
 *
 * Locking.  One mutex guards the queue and, while the engine is idle,
 * the whole device state.  The engine executes a job without the lock
 * (so submitters can queue more meanwhile) but marks itself busy first;
 * every accessor (stats, physical and virtual reads/writes, translate,
 * check) takes the lock and waits until the queue is empty and nothing is
 * busy, so it never races with execution and sees every buffer submitted
 * before it.  A job is busy until its fence has been signalled, so an
 * idle engine also means "every fence delivered".  Callbacks into vidmm
 * (fences, page faults) are made without softgpu's lock held: vidmm
 * takes its own paging lock inside them, and no lock order has to be
 * kept between the two.  A paging command that faulted (vpaging.c) is
 * reported the same way, right before its buffer's fence.
 */
#include "softgpu_int.h"

/* The engine is part of a device the caller may hold as const (stats,
 * check): locking is not a change of the device. */
static struct softgpu_engine *softgpu_eng(const struct softgpu *sg)
{
    return (struct softgpu_engine *)&sg->engine;
}

/* Reports a paging command's fault (before the fence, so vidmm sees it
 * once the buffer is done), runs the observer (test hook) and tells
 * vidmm the fence passed. */
static void softgpu_signal(const struct softgpu_job *j, const struct softgpu_fault *f, void (*observer)(void *, uint64_t),
                      void *ctx)
{
    if (f->pending && f->context && j->adapter)
        vidmm_cb_notify_page_fault(j->adapter, f->context, f->va, f->flags);
    if (observer)
        observer(ctx, j->fence);
    vidmm_cb_notify_fence(j->adapter, j->fence);
}

/* Is the job just taken the one to hang on?  Engine lock held. */
static int softgpu_hang_now(struct softgpu_engine *e)
{
    if (!e->hang_armed)
        return 0;
    if (e->hang_after) {
        e->hang_after--;
        return 0;
    }
    e->hang_armed = 0;
    return 1;
}

static void *softgpu_engine_main(void *arg)
{
    struct softgpu *sg = arg;
    struct softgpu_engine *e = &sg->engine;
    pthread_mutex_lock(&e->lock);
    for (;;) {
        while (!e->stop && (e->count == 0 || e->hold))
            pthread_cond_wait(&e->work, &e->lock);
        if (e->count == 0)
            break;                      /* stopping and drained */
        struct softgpu_job j = e->queue[e->head];
        void (*observer)(void *, uint64_t) = e->observer;
        void *ctx = e->observer_ctx;
        e->head = (e->head + 1) % SOFTGPU_QUEUE_LEN;
        e->count--;
        e->busy = 1;
        pthread_cond_broadcast(&e->done);   /* an entry is free for a waiting submitter */
        if (softgpu_hang_now(e)) {
            /* Injected hang: sit on the job until an adapter reset drops
             * it (or the device goes); it never runs, its fence never
             * comes. */
            e->hung = 1;
            while (!e->drop_current && !e->stop)
                pthread_cond_wait(&e->work, &e->lock);
            e->hung = 0;
            e->drop_current = 0;
            sg->reset_stats.buffers_dropped++;
            e->busy = 0;
            pthread_cond_broadcast(&e->done);
            continue;
        }
        pthread_mutex_unlock(&e->lock);

        struct softgpu_fault f = { NULL, 0, 0, 0, 0 };
        softgpu_execute_buffer(sg, j.buf, j.size, &f);
        softgpu_signal(&j, &f, observer, ctx);

        pthread_mutex_lock(&e->lock);
        e->busy = 0;
        pthread_cond_broadcast(&e->done);   /* maybe idle */
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

vidmm_status softgpu_engine_init(struct softgpu *sg, int mode)
{
    struct softgpu_engine *e = &sg->engine;
    e->synchronous = mode == SOFTGPU_MODE_SYNCHRONOUS;
    e->manual = mode == SOFTGPU_MODE_MANUAL;
    if (pthread_mutex_init(&e->lock, NULL) != 0)
        return VIDMM_E_NO_HOST_MEMORY;
    e->lock_ok = 1;
    if (pthread_cond_init(&e->work, NULL) != 0)
        return VIDMM_E_NO_HOST_MEMORY;
    e->work_ok = 1;
    if (pthread_cond_init(&e->done, NULL) != 0)
        return VIDMM_E_NO_HOST_MEMORY;
    e->done_ok = 1;
    if (e->synchronous || e->manual)
        return VIDMM_OK;
    if (pthread_create(&e->thread, NULL, softgpu_engine_main, sg) != 0)
        return VIDMM_E_NO_HOST_MEMORY;   /* the host refused a thread: a resource, like memory */
    e->running = 1;
    return VIDMM_OK;
}

void softgpu_engine_fini(struct softgpu *sg)
{
    struct softgpu_engine *e = &sg->engine;
    if (e->running) {
        /* Work still queued belongs to submitters that expect its fences:
         * run it (a hold does not survive destroy), then let the thread
         * end. */
        pthread_mutex_lock(&e->lock);
        e->stop = 1;
        e->hold = 0;
        pthread_cond_broadcast(&e->work);
        pthread_mutex_unlock(&e->lock);
        pthread_join(e->thread, NULL);
        e->running = 0;
    }
    if (e->manual)
        e->count = 0;   /* nobody stepped them: the adapter that submitted them is gone */
    if (e->done_ok)
        pthread_cond_destroy(&e->done);
    if (e->work_ok)
        pthread_cond_destroy(&e->work);
    if (e->lock_ok)
        pthread_mutex_destroy(&e->lock);
    e->done_ok = e->work_ok = e->lock_ok = 0;
}

/* Manual mode: run the head job (engine lock held; dropped and taken
 * again around the callbacks).  0 when nothing ran: the queue is empty,
 * or the engine is (or just got) hung on an injected hang. */
static int softgpu_manual_run_head(struct softgpu *sg)
{
    struct softgpu_engine *e = &sg->engine;
    if (!e->count || e->hung)
        return 0;
    if (softgpu_hang_now(e)) {
        e->hung = 1;   /* sits on the head until an adapter reset drops it */
        return 0;
    }
    struct softgpu_job j = e->queue[e->head];
    void (*observer)(void *, uint64_t) = e->observer;
    void *ctx = e->observer_ctx;
    e->head = (e->head + 1) % SOFTGPU_QUEUE_LEN;
    e->count--;
    if (e->touch)
        softgpu_touch_buffer(sg, j.buf, j.size, e->touch, e->touch_ctx);
    struct softgpu_fault f = { NULL, 0, 0, 0, 0 };
    softgpu_execute_buffer(sg, j.buf, j.size, &f);
    pthread_mutex_unlock(&e->lock);
    softgpu_signal(&j, &f, observer, ctx);
    pthread_mutex_lock(&e->lock);
    return 1;
}

/* Manual mode: queue the job for softgpu_step.  A full queue is a full
 * ring: the engine must make room first, so its oldest job runs now
 * (deterministically, on the submitter's thread).  Called with the lock
 * held; returns with it released. */
static vidmm_status softgpu_manual_queue(struct softgpu *sg, const struct softgpu_job *job)
{
    struct softgpu_engine *e = &sg->engine;
    if (e->count == SOFTGPU_QUEUE_LEN && !softgpu_manual_run_head(sg)) {
        pthread_mutex_unlock(&e->lock);
        return VIDMM_E_BUSY;   /* hung with a full ring: nothing will drain it before a reset */
    }
    e->queue[(e->head + e->count) % SOFTGPU_QUEUE_LEN] = *job;
    e->count++;
    pthread_mutex_unlock(&e->lock);
    return VIDMM_OK;
}

vidmm_status softgpu_engine_submit(struct softgpu *sg, const struct softgpu_job *job)
{
    struct softgpu_engine *e = &sg->engine;
    pthread_mutex_lock(&e->lock);
    if (sg->power_state != VIDMM_POWER_D0)
        sg->reset_stats.work_while_down++;   /* a manager bug: executed anyway, and counted */
    if (job->adapter)
        sg->adapter = job->adapter;   /* fault reports go to the adapter that submits */
    if (e->synchronous && (e->hung || softgpu_hang_now(e))) {
        /* Hung (injected): this buffer and any after it wait for the
         * adapter reset that drops them. */
        if (!e->hung)
            e->hung_job = *job;
        e->hung = 1;
        e->count++;   /* counted as queued: dropped at the reset */
        pthread_mutex_unlock(&e->lock);
        return VIDMM_OK;
    }
    if (e->manual)
        return softgpu_manual_queue(sg, job);   /* unlocks */
    if (e->synchronous) {
        /* Under the lock, so an accessor on another thread sees the
         * buffer whole or not at all. */
        void (*observer)(void *, uint64_t) = e->observer;
        void *ctx = e->observer_ctx;
        struct softgpu_fault f = { NULL, 0, 0, 0, 0 };
        softgpu_execute_buffer(sg, job->buf, job->size, &f);
        pthread_mutex_unlock(&e->lock);
        softgpu_signal(job, &f, observer, ctx);
        return VIDMM_OK;
    }
    while (e->count == SOFTGPU_QUEUE_LEN) {
        e->blocked++;
        pthread_cond_wait(&e->done, &e->lock);
        e->blocked--;
    }
    e->queue[(e->head + e->count) % SOFTGPU_QUEUE_LEN] = *job;
    e->count++;
    pthread_cond_signal(&e->work);
    pthread_mutex_unlock(&e->lock);
    return VIDMM_OK;
}

void softgpu_note_work(struct softgpu *sg)
{
    softgpu_lock(sg);
    if (sg->power_state != VIDMM_POWER_D0)
        sg->reset_stats.work_while_down++;
    softgpu_unlock(sg);
}

void softgpu_lock(const struct softgpu *sg)
{
    pthread_mutex_lock(&softgpu_eng(sg)->lock);
}

void softgpu_lock_idle(const struct softgpu *sg)
{
    struct softgpu_engine *e = softgpu_eng(sg);
    pthread_mutex_lock(&e->lock);
    while (!e->manual && (e->count || e->busy))
        pthread_cond_wait(&e->done, &e->lock);   /* manual: queued jobs wait for a step, not for this */
}

/* The test accessors' lock: as softgpu_lock_idle, except that nothing is
 * waited for that cannot end on its own.  A hung engine (injected, until
 * an adapter reset drops its buffer) and a held one leave the queue as it
 * is for good; the hung buffer sits unexecuted and the engine thread, if
 * any, sleeps on the condition variable, so under the lock memory is
 * stable: the accessor runs at once and sees the device without the hung
 * or held buffers. */
void softgpu_lock_access(const struct softgpu *sg)
{
    struct softgpu_engine *e = softgpu_eng(sg);
    pthread_mutex_lock(&e->lock);
    while (!e->manual && !e->hung && ((e->count && !e->hold) || e->busy))
        pthread_cond_wait(&e->done, &e->lock);
}

void softgpu_unlock(const struct softgpu *sg)
{
    pthread_mutex_unlock(&softgpu_eng(sg)->lock);
}

vidmm_status softgpu_wait_idle(struct softgpu *sg)
{
    if (!sg)
        return VIDMM_E_INVALID_ARG;
    struct softgpu_engine *e = &sg->engine;
    vidmm_status st = VIDMM_OK;
    pthread_mutex_lock(&e->lock);
    /* Synchronous mode: every submit finished its buffer before returning,
     * unless the engine hung on it.  Waiting for a hung or held engine
     * would never end: say so instead. */
    if (!e->synchronous && !e->manual)
        while (!e->hung && !(e->hold && !e->busy) && (e->count || e->busy))
            pthread_cond_wait(&e->done, &e->lock);
    if (e->hung || (e->hold && e->count) || (e->manual && e->count))
        st = VIDMM_E_STATE;   /* manual: only softgpu_step runs them */
    pthread_mutex_unlock(&e->lock);
    return st;
}

void softgpu_set_fence_observer(struct softgpu *sg, void (*fn)(void *ctx, uint64_t fence), void *ctx)
{
    if (!sg)
        return;
    softgpu_lock(sg);
    sg->engine.observer = fn;
    sg->engine.observer_ctx = ctx;
    softgpu_unlock(sg);
}

void softgpu_engine_hold(struct softgpu *sg, int hold)
{
    if (!sg)
        return;
    softgpu_lock(sg);
    sg->engine.hold = hold != 0;
    pthread_cond_broadcast(&sg->engine.work);
    softgpu_unlock(sg);
}

void softgpu_engine_queue(const struct softgpu *sg, uint32_t *queued, uint32_t *blocked)
{
    uint32_t q = 0, b = 0;
    if (sg) {
        softgpu_lock(sg);
        q = sg->engine.count;
        b = sg->engine.blocked;
        softgpu_unlock(sg);
    }
    if (queued)
        *queued = q;
    if (blocked)
        *blocked = b;
}

void softgpu_inject_paging_hang(struct softgpu *sg, uint32_t after)
{
    if (!sg)
        return;
    softgpu_lock(sg);
    sg->engine.hang_armed = 1;
    sg->engine.hang_after = after;
    softgpu_unlock(sg);
}

uint64_t softgpu_engine_drop_all(struct softgpu *sg)
{
    struct softgpu_engine *e = &sg->engine;
    pthread_mutex_lock(&e->lock);
    uint64_t n = e->count;
    if (e->synchronous || e->manual) {
        e->hung = 0;
        e->head = (e->head + e->count) % SOFTGPU_QUEUE_LEN;
        e->count = 0;
    } else {
        e->head = (e->head + e->count) % SOFTGPU_QUEUE_LEN;
        e->count = 0;
        if (e->hung) {
            e->drop_current = 1;   /* counted by the engine thread */
            pthread_cond_broadcast(&e->work);
        }
        pthread_cond_broadcast(&e->done);
        /* A job being executed ends on its own (buffers are finite). */
        while (e->busy)
            pthread_cond_wait(&e->done, &e->lock);
    }
    e->hang_armed = 0;
    sg->reset_stats.buffers_dropped += n;
    pthread_mutex_unlock(&e->lock);
    return n;
}

/* ---- manual mode (SOFTGPU_SCHED_MANUAL) ---------------------------------- */

uint32_t softgpu_pending(struct softgpu *sg, struct softgpu_pending *out, uint32_t max)
{
    if (!sg || !sg->engine.manual)
        return 0;
    uint32_t n = 0;
    softgpu_lock(sg);
    struct softgpu_pending p = { SOFTGPU_ENGINE_PAGING, sg->engine.count, sg->engine.hung };
    softgpu_unlock(sg);
    if (p.queued) {
        if (n < max && out)
            out[n] = p;
        n++;
    }
    for (uint32_t node = 0; node < SOFTGPU_NODES; node++) {
        struct softgpu_pending q = { node, 0, 0 };
        softgpu_cmdproc_pending(sg, node, &q.queued, &q.stuck);
        if (!q.queued)
            continue;
        if (n < max && out)
            out[n] = q;
        n++;
    }
    return n;
}

vidmm_status softgpu_step(struct softgpu *sg, uint32_t engine)
{
    if (!sg || (engine >= SOFTGPU_NODES && engine != SOFTGPU_ENGINE_PAGING))
        return VIDMM_E_INVALID_ARG;
    if (!sg->engine.manual)
        return VIDMM_E_STATE;
    if (engine != SOFTGPU_ENGINE_PAGING)
        return softgpu_cmdproc_step(sg, engine) ? VIDMM_OK : VIDMM_E_STATE;
    struct softgpu_engine *e = &sg->engine;
    pthread_mutex_lock(&e->lock);
    int ran = softgpu_manual_run_head(sg);
    pthread_mutex_unlock(&e->lock);
    return ran ? VIDMM_OK : VIDMM_E_STATE;
}

void softgpu_set_touch_hook(struct softgpu *sg,
                            void (*fn)(void *ctx, uint32_t segment_id, uint64_t address, uint64_t size, int write),
                            void *ctx)
{
    if (!sg)
        return;
    softgpu_lock(sg);
    sg->engine.touch = fn;
    sg->engine.touch_ctx = ctx;
    softgpu_unlock(sg);
}
