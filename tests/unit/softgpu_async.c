/*
 * softgpu_async.c - softgpu's copy-engine thread.
 *
 * Paging buffers are built with softgpu's own build_paging_buffer and
 * submitted through its ops table, each into memory of its own that
 * stays untouched until its fence (as vidmm guarantees).  A fence
 * observer (softgpu_int.h) logs every fence on the thread that signals
 * it, together with a marker word every buffer writes, which proves that
 * buffer i had executed, and buffer i+1 had not, when fence i arrived.
 * softgpu_engine_hold stalls the engine so the queue can be filled
 * deterministically (no timing is asserted anywhere).
 *
 * Cases: buffers run and fences arrive in submission order from the
 * engine thread; accessors wait for the engine; a full queue blocks the
 * submitter until an entry frees; destroy drains queued work and leaves
 * no thread or descriptor behind; an invalid buffer is refused at once
 * and runs nothing; synchronous mode signals inside submit_command; and
 * synchronous and asynchronous devices end byte-identical after the same
 * seeded walk of vidmm creates, writes and moves; in manual mode nothing
 * runs until softgpu_step runs one buffer (touch hook and powered-down
 * submissions seen).
 */
#include "alloc_common.h"
#include "harness/test.h"
#include "softgpu_int.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SA_MIB(x) ((uint64_t)(x) << 20)
#define SA_JOB_BYTES 128u        /* room for up to four fill/copy commands */
#define SA_MAX_LOG 512u
#define SA_MARKER_OFF 0u         /* segment 1 word every test buffer stamps with its number */
#define SA_SLOT_OFF 4096u        /* segment 1: 8-byte slot i holds buffer i's number */

static const struct vidmm_driver_ops *ops;

/* ---- fence log ------------------------------------------------------ */

struct sa_log {
    struct softgpu *sg;
    pthread_t main_thread;
    atomic_uint n;               /* read while the engine may run: atomic */
    uint64_t fence[SA_MAX_LOG];
    uint32_t marker[SA_MAX_LOG]; /* segment 1 marker word when the fence came */
    int on_main[SA_MAX_LOG];     /* signalled on the test's own thread */
};

/* Runs on the signalling thread after the buffer executed: the device is
 * read directly (an accessor would wait for this very thread). */
static void sa_observe(void *ctx, uint64_t fence)
{
    struct sa_log *l = ctx;
    unsigned i = atomic_load(&l->n);
    if (i >= SA_MAX_LOG)
        return;
    l->fence[i] = fence;
    memcpy(&l->marker[i], l->sg->seg[1].mem + SA_MARKER_OFF, sizeof l->marker[i]);
    l->on_main[i] = pthread_equal(pthread_self(), l->main_thread) != 0;
    atomic_store(&l->n, i + 1);
}

static void sa_log_init(struct sa_log *l, struct softgpu *sg)
{
    memset(l, 0, sizeof *l);
    l->sg = sg;
    l->main_thread = pthread_self();
    atomic_init(&l->n, 0);
    softgpu_set_fence_observer(sg, sa_observe, l);
}

/* Fences 1..n arrived in order, each after its own buffer (marker = its
 * number) and from the engine thread (on_main == 0) or not. */
static void sa_log_expect(const struct sa_log *l, unsigned n, int on_main)
{
    T_EQ(atomic_load(&l->n), n);
    unsigned bad = 0;
    for (unsigned i = 0; i < n && i < SA_MAX_LOG && bad < 3; i++) {
        if (l->fence[i] != i + 1 || l->marker[i] != i + 1 || l->on_main[i] != on_main) {
            bad++;
            char m[160];
            snprintf(m, sizeof m, "fence #%u: fence %llu marker %u on_main %d (want %u, %u, %d)", i,
                     (unsigned long long)l->fence[i], l->marker[i], l->on_main[i], i + 1, i + 1, on_main);
            t_fail(__FILE__, __LINE__, m);
        }
    }
}

/* ---- building test buffers ----------------------------------------- */

/* synchronous: 0 the engine thread, 1 inside submit, 2 manual (steps). */
static struct softgpu *sa_create(int synchronous)
{
    struct softgpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = "dgpu";
    cfg.segment_size[1] = SA_MIB(16);
    cfg.segment_size[2] = SA_MIB(16);
    cfg.segment_size[3] = SA_MIB(64);
    cfg.synchronous = synchronous == 1;
    cfg.scheduler = synchronous == 2 ? SOFTGPU_SCHED_MANUAL : SOFTGPU_SCHED_THREADED;
    struct softgpu *sg = NULL;
    T_ST(softgpu_create(&cfg, &sg), VIDMM_OK);
    ops = softgpu_driver_ops();
    return sg;
}

/* Encodes one operation at *p (room bytes left); returns 0 on success. */
static int sa_encode(struct softgpu *sg, struct vidmm_build_paging_buffer_args *a, uint8_t **p, uint32_t *room)
{
    a->dma_buffer = *p;
    a->dma_size = *room;
    a->multipass_offset = 0;
    vidmm_status st = ops->build_paging_buffer(sg, a);
    T_ST(st, VIDMM_OK);
    if (st != VIDMM_OK)
        return -1;
    *p = a->dma_buffer;
    *room = a->dma_size;
    return 0;
}

static int sa_fill(struct softgpu *sg, uint8_t **p, uint32_t *room, uint64_t offset, uint64_t size, uint32_t pattern)
{
    struct vidmm_build_paging_buffer_args a;
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_FILL;
    a.u.fill.fill_size = size;
    a.u.fill.fill_pattern = pattern;
    a.u.fill.destination_segment_id = 1;
    a.u.fill.destination_segment_address = sg->seg[1].base_address + offset;
    return sa_encode(sg, &a, p, room);
}

/* Segment 1 [offset, +size) -> page mdl_page of mdl. */
static int sa_copy_out(struct softgpu *sg, uint8_t **p, uint32_t *room, uint64_t offset, uint64_t size,
                       const struct vidmm_mdl *mdl, uint64_t mdl_page)
{
    struct vidmm_build_paging_buffer_args a;
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_TRANSFER;
    a.u.transfer.transfer_size = size;
    a.u.transfer.source.segment_id = 1;
    a.u.transfer.source.segment_address = sg->seg[1].base_address + offset;
    a.u.transfer.destination.segment_id = 0;
    a.u.transfer.destination.mdl = mdl;
    a.u.transfer.mdl_offset = mdl_page;
    a.u.transfer.flags = VIDMM_TRANSFER_START | VIDMM_TRANSFER_END;
    return sa_encode(sg, &a, p, room);
}

/* Buffer number i (1-based) in job: stamps its slot, then the marker (the
 * marker last, so the observer sees it only once the buffer is whole).
 * scratch > 0 adds a fill of that many bytes so the engine has real work.
 * Returns the bytes used, 0 on failure. */
static uint32_t sa_job(struct softgpu *sg, uint8_t *job, uint32_t i, uint64_t scratch)
{
    uint8_t *p = job;
    uint32_t room = SA_JOB_BYTES;
    if (scratch && sa_fill(sg, &p, &room, SA_MIB(1) + (uint64_t)(i % 8) * SA_MIB(1), scratch, i))
        return 0;
    if (sa_fill(sg, &p, &room, SA_SLOT_OFF + 8ull * i, 8, i) || sa_fill(sg, &p, &room, SA_MARKER_OFF, 8, i))
        return 0;
    return SA_JOB_BYTES - room;
}

static vidmm_status sa_submit(struct softgpu *sg, const void *buf, uint32_t size, uint64_t fence)
{
    struct vidmm_submit_command_args s = { NULL, buf, size, VIDMM_SUBMIT_PAGING, fence };
    return ops->submit_command(sg, &s);
}

/* Builds and submits buffers first..last (1-based numbers = fences) from
 * jobs[]; stops at the first failure.  Returns the count submitted. */
static uint32_t sa_submit_range(struct softgpu *sg, uint8_t *jobs, uint32_t first, uint32_t last, uint64_t scratch)
{
    uint32_t done = 0;
    for (uint32_t i = first; i <= last; i++) {
        uint8_t *job = jobs + (size_t)(i - 1) * SA_JOB_BYTES;
        uint32_t used = sa_job(sg, job, i, scratch);
        if (!used)
            break;
        vidmm_status st = sa_submit(sg, job, used, i);
        T_ST(st, VIDMM_OK);
        if (st != VIDMM_OK)
            break;
        done++;
    }
    return done;
}

/* Slot i of segment 1 holds i (as two 32-bit patterns) for i in 1..n. */
static void sa_expect_slots(struct softgpu *sg, uint32_t n)
{
    uint32_t *w = calloc((size_t)n + 1, 8);
    T_CHECK(w != NULL);
    if (!w)
        return;
    T_ST(softgpu_read_physical(sg, 1, SA_SLOT_OFF, w, ((size_t)n + 1) * 8), VIDMM_OK);
    uint32_t bad = 0;
    for (uint32_t i = 1; i <= n; i++)
        bad += w[2 * i] != i || w[2 * i + 1] != i;
    T_EQ(bad, 0);
    free(w);
}

static void sa_sleep_ms(unsigned ms)
{
    struct timespec ts = { 0, (long)ms * 1000000L };
    nanosleep(&ts, NULL);
}

/* Entries of a /proc/self directory (threads, descriptors), or -1. */
static int sa_count_dir(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - (strcmp(path, "/proc/self/fd") == 0);   /* the descriptor opendir itself holds */
}

/* A joined thread may linger in /proc for a moment after pthread_join:
 * wait (at most 2 s) for the count to come back to want. */
static int sa_threads_settle(int want)
{
    int n = sa_count_dir("/proc/self/task");
    for (int i = 0; i < 200 && n != want; i++) {
        sa_sleep_ms(10);
        n = sa_count_dir("/proc/self/task");
    }
    return n;
}

/* The thread count once engine threads of earlier cases have left /proc
 * (at most 2 s): the count stops falling. */
static int sa_threads_now(void)
{
    int n = sa_count_dir("/proc/self/task");
    for (int i = 0; i < 200; i++) {
        sa_sleep_ms(10);
        int m = sa_count_dir("/proc/self/task");
        if (m >= n)
            return m;
        n = m;
    }
    return n;
}

/* ---- cases ------------------------------------------------------------ */

/* Buffers execute in submission order on the engine thread and each fence
 * is signalled after its buffer and before the next one runs. */
static void fences_in_order(void)
{
    struct softgpu *sg = sa_create(0);
    if (!sg)
        return;
    enum { HELD = 40, FREE = 200 };
    uint8_t *jobs = calloc(HELD + FREE, SA_JOB_BYTES);
    T_CHECK(jobs != NULL);
    struct sa_log *l = calloc(1, sizeof *l);
    T_CHECK(l != NULL);
    if (!jobs || !l) {
        free(jobs);
        free(l);
        softgpu_destroy(sg);
        return;
    }
    sa_log_init(l, sg);

    /* Stalled engine: every submit returns before its buffer runs. */
    softgpu_engine_hold(sg, 1);
    T_EQ(sa_submit_range(sg, jobs, 1, HELD, 0), HELD);
    uint32_t queued = 0, blocked = 0;
    softgpu_engine_queue(sg, &queued, &blocked);
    T_EQ(queued, HELD);
    T_EQ(blocked, 0);
    T_EQ(atomic_load(&l->n), 0);
    softgpu_engine_hold(sg, 0);
    T_ST(softgpu_wait_idle(sg), VIDMM_OK);
    softgpu_engine_queue(sg, &queued, NULL);
    T_EQ(queued, 0);
    sa_log_expect(l, HELD, 0);
    sa_expect_slots(sg, HELD);

    /* Free-running, each buffer with 1 MiB of real work: no wait before
     * reading, the accessors wait for the engine themselves. */
    T_EQ(sa_submit_range(sg, jobs, HELD + 1, HELD + FREE, SA_MIB(1)), FREE);
    sa_expect_slots(sg, HELD + FREE);
    sa_log_expect(l, HELD + FREE, 0);
    struct softgpu_stats st;
    softgpu_get_stats(sg, &st);
    T_EQ_U64(st.paging_buffers, HELD + FREE);
    T_EQ_U64(st.ops[VIDMM_PAGING_FILL], 2 * HELD + 3 * FREE);
    T_EQ_U64(st.bytes[VIDMM_PAGING_FILL], 16ull * (HELD + FREE) + SA_MIB(1) * FREE);
    /* The scratch area holds the last buffer's pattern in each MiB. */
    uint32_t w = 0;
    T_ST(softgpu_read_physical(sg, 1, SA_MIB(1) + (uint64_t)((HELD + FREE) % 8) * SA_MIB(1) + SA_MIB(1) - 4, &w, 4),
         VIDMM_OK);
    T_EQ(w, HELD + FREE);
    T_EQ(softgpu_check(sg), 0);
    softgpu_destroy(sg);
    free(jobs);
    free(l);
}

/* A second thread that only submits buffers built beforehand (no T_*
 * checks off the test's thread: the harness counters are not shared). */
#define SA_EXTRA 3u
struct sa_submitter {
    struct softgpu *sg;
    const uint8_t *job[SA_EXTRA];
    uint32_t size[SA_EXTRA];
    uint64_t first_fence;
    vidmm_status st[SA_EXTRA];
    atomic_int finished;
};

static void *sa_submitter_main(void *arg)
{
    struct sa_submitter *s = arg;
    for (uint32_t k = 0; k < SA_EXTRA; k++)
        s->st[k] = sa_submit(s->sg, s->job[k], s->size[k], s->first_fence + k);
    atomic_store(&s->finished, 1);
    return NULL;
}

/* A full queue makes submit wait for a free entry, like a full ring. */
static void queue_full_blocks(void)
{
    struct softgpu *sg = sa_create(0);
    if (!sg)
        return;
    enum { EXTRA = SA_EXTRA };
    uint8_t *jobs = calloc(SOFTGPU_QUEUE_LEN + EXTRA, SA_JOB_BYTES);
    struct sa_log *l = calloc(1, sizeof *l);
    T_CHECK(jobs && l);
    if (!jobs || !l) {
        free(jobs);
        free(l);
        softgpu_destroy(sg);
        return;
    }
    sa_log_init(l, sg);
    softgpu_engine_hold(sg, 1);
    T_EQ(sa_submit_range(sg, jobs, 1, SOFTGPU_QUEUE_LEN, 0), SOFTGPU_QUEUE_LEN);
    uint32_t queued = 0, blocked = 0;
    softgpu_engine_queue(sg, &queued, &blocked);
    T_EQ(queued, SOFTGPU_QUEUE_LEN);
    T_EQ(blocked, 0);

    struct sa_submitter s;
    memset(&s, 0, sizeof s);
    s.sg = sg;
    s.first_fence = SOFTGPU_QUEUE_LEN + 1;
    atomic_init(&s.finished, 0);
    int built = 1;
    for (uint32_t k = 0; k < EXTRA; k++) {
        uint8_t *job = jobs + (size_t)(SOFTGPU_QUEUE_LEN + k) * SA_JOB_BYTES;
        s.job[k] = job;
        s.size[k] = sa_job(sg, job, SOFTGPU_QUEUE_LEN + 1 + k, 0);
        built &= s.size[k] != 0;
    }
    pthread_t th;
    int started = built && pthread_create(&th, NULL, sa_submitter_main, &s) == 0;
    T_CHECK(started);
    if (started) {
        /* Wait (at most 10 s) until the submitter is parked on the full queue. */
        for (int i = 0; i < 1000; i++) {
            softgpu_engine_queue(sg, &queued, &blocked);
            if (blocked)
                break;
            sa_sleep_ms(10);
        }
        T_EQ(blocked, 1);
        T_EQ(queued, SOFTGPU_QUEUE_LEN);
        T_EQ(atomic_load(&s.finished), 0);   /* still inside submit_command */
        T_EQ(atomic_load(&l->n), 0);
    }
    /* Released whatever happened above, so the thread always ends. */
    softgpu_engine_hold(sg, 0);
    if (started) {
        pthread_join(th, NULL);
        T_EQ(atomic_load(&s.finished), 1);
        for (uint32_t k = 0; k < EXTRA; k++)
            T_ST(s.st[k], VIDMM_OK);
    }
    T_ST(softgpu_wait_idle(sg), VIDMM_OK);
    softgpu_engine_queue(sg, &queued, &blocked);
    T_EQ(queued, 0);
    T_EQ(blocked, 0);
    sa_log_expect(l, SOFTGPU_QUEUE_LEN + (started ? EXTRA : 0), 0);
    sa_expect_slots(sg, SOFTGPU_QUEUE_LEN + (started ? EXTRA : 0));
    softgpu_destroy(sg);
    free(jobs);
    free(l);
}

/* Destroy with buffers still queued runs them all (their fences too),
 * then leaves no thread and no descriptor behind. */
static void destroy_drains(void)
{
    enum { N = 30 };
    int fds0 = sa_count_dir("/proc/self/fd"), tasks0 = sa_threads_now();
    T_CHECK(fds0 > 0 && tasks0 > 0);
    struct softgpu *sg = sa_create(0);
    if (!sg)
        return;
    T_EQ(sa_count_dir("/proc/self/task"), tasks0 + 1 + (int)SOFTGPU_NODES);   /* the copy engine and the nodes */
    uint8_t *jobs = calloc(N, SA_JOB_BYTES);
    struct sa_log *l = calloc(1, sizeof *l);
    uint32_t *host = aligned_alloc(4096, (size_t)N * 4096);
    T_CHECK(jobs && l && host);
    if (!jobs || !l || !host) {
        free(jobs);
        free(l);
        free(host);
        softgpu_destroy(sg);
        return;
    }
    memset(host, 0, (size_t)N * 4096);
    struct vidmm_mdl mdl = { host, N };
    sa_log_init(l, sg);
    softgpu_engine_hold(sg, 1);
    uint32_t submitted = 0;
    for (uint32_t i = 1; i <= N; i++) {
        /* Fill a 4 KiB page of segment 1, copy it out to host page i-1,
         * then stamp the marker. */
        uint8_t *job = jobs + (size_t)(i - 1) * SA_JOB_BYTES, *p = job;
        uint32_t room = SA_JOB_BYTES;
        uint64_t page = SA_MIB(1) + (uint64_t)i * 65536;
        if (sa_fill(sg, &p, &room, page, 4096, 0xA5000000u | i) || sa_copy_out(sg, &p, &room, page, 4096, &mdl, i - 1) ||
            sa_fill(sg, &p, &room, SA_MARKER_OFF, 8, i))
            break;
        if (sa_submit(sg, job, SA_JOB_BYTES - room, i) != VIDMM_OK)
            break;
        submitted++;
    }
    T_EQ(submitted, N);
    uint32_t queued = 0;
    softgpu_engine_queue(sg, &queued, NULL);
    T_EQ(queued, N);
    T_EQ(atomic_load(&l->n), 0);
    softgpu_destroy(sg);   /* still held, N queued */
    sa_log_expect(l, N, 0);
    uint32_t bad = 0;
    for (uint32_t i = 1; i <= N; i++)
        for (uint32_t k = 0; k < 1024; k++)
            bad += host[(size_t)(i - 1) * 1024 + k] != (0xA5000000u | i);
    T_EQ(bad, 0);
    T_EQ(sa_count_dir("/proc/self/fd"), fds0);
    T_EQ(sa_threads_settle(tasks0), tasks0);
    free(jobs);
    free(l);
    free(host);
}

/* A malformed buffer is refused by submit_command itself, in async mode,
 * and none of it runs - not even its well-formed first command. */
static void invalid_buffer_refused(void)
{
    struct softgpu *sg = sa_create(0);
    if (!sg)
        return;
    struct sa_log *l = calloc(1, sizeof *l);
    T_CHECK(l != NULL);
    if (!l) {
        softgpu_destroy(sg);
        return;
    }
    sa_log_init(l, sg);
    uint64_t good[SA_JOB_BYTES / 8], bad[SA_JOB_BYTES / 8];
    memset(good, 0, sizeof good);
    memset(bad, 0, sizeof bad);
    uint8_t *p = (uint8_t *)good;
    uint32_t room = sizeof good;
    T_EQ(sa_fill(sg, &p, &room, 256, 64, 0x11111111u), 0);
    T_EQ(sa_fill(sg, &p, &room, SA_MARKER_OFF, 8, 1), 0);
    uint32_t good_size = (uint32_t)sizeof good - room;

    softgpu_engine_hold(sg, 1);
    T_ST(sa_submit(sg, good, good_size, 1), VIDMM_OK);
    /* bad: a valid fill at 512, then a command with an unknown opcode. */
    p = (uint8_t *)bad;
    room = sizeof bad;
    T_EQ(sa_fill(sg, &p, &room, 512, 64, 0x22222222u), 0);
    uint32_t used = (uint32_t)sizeof bad - room;
    struct softgpu_cmd_hdr h = { 3, SOFTGPU_CMDF_FIRST, 32 };   /* opcode 3 does not exist */
    memcpy((uint8_t *)bad + used, &h, sizeof h);
    T_ST(sa_submit(sg, bad, used + 32, 2), VIDMM_E_INVALID_ARG);
    /* A header whose size runs past the buffer. */
    h.opcode = VIDMM_PAGING_FILL;
    h.size = 64;
    memcpy((uint8_t *)bad + used, &h, sizeof h);
    T_ST(sa_submit(sg, bad, used + 32, 3), VIDMM_E_INVALID_ARG);
    /* A fill that leaves the segment. */
    p = (uint8_t *)bad + used;
    struct softgpu_cmd_hdr fh = { VIDMM_PAGING_FILL, SOFTGPU_CMDF_FIRST, 32 };
    uint32_t seg = 1, pat = 0x33333333u;
    uint64_t off = SA_MIB(16) - 4, size = 8;
    memcpy(p, &fh, 8);
    memcpy(p + 8, &seg, 4);
    memcpy(p + 12, &pat, 4);
    memcpy(p + 16, &off, 8);
    memcpy(p + 24, &size, 8);
    T_ST(sa_submit(sg, bad, used + 32, 4), VIDMM_E_INVALID_ARG);
    T_ST(sa_submit(sg, NULL, 8, 5), VIDMM_E_INVALID_ARG);
    T_ST(ops->submit_command(sg, NULL), VIDMM_E_INVALID_ARG);
    T_ST(ops->submit_command(NULL, NULL), VIDMM_E_INVALID_ARG);
    uint32_t queued = 0;
    softgpu_engine_queue(sg, &queued, NULL);
    T_EQ(queued, 1);                     /* only the good one */
    T_EQ(atomic_load(&l->n), 0);
    softgpu_engine_hold(sg, 0);
    T_ST(softgpu_wait_idle(sg), VIDMM_OK);
    T_ST(softgpu_wait_idle(NULL), VIDMM_E_INVALID_ARG);
    sa_log_expect(l, 1, 0);
    uint32_t w[32];
    T_ST(softgpu_read_physical(sg, 1, 256, w, sizeof w), VIDMM_OK);
    uint32_t wrong = 0;
    for (int i = 0; i < 16; i++)
        wrong += w[i] != 0x11111111u;          /* the good buffer ran */
    for (int i = 16; i < 32; i++)
        wrong += w[i] != 0;                    /* 320..384: untouched */
    T_EQ(wrong, 0);
    T_ST(softgpu_read_physical(sg, 1, 512, w, sizeof w), VIDMM_OK);
    for (int i = 0; i < 32; i++)
        wrong += w[i] != 0;                    /* the refused fill never ran */
    T_EQ(wrong, 0);
    struct softgpu_stats st;
    softgpu_get_stats(sg, &st);
    T_EQ_U64(st.paging_buffers, 1);
    T_EQ_U64(st.ops[VIDMM_PAGING_FILL], 2);
    softgpu_destroy(sg);
    free(l);
}

/* Synchronous mode: no thread; the buffer has run and its fence has been
 * signalled, on the caller's thread, when submit_command returns. */
static void sync_mode_inline(void)
{
    int tasks0 = sa_threads_now();
    struct softgpu *sg = sa_create(1);
    if (!sg)
        return;
    T_EQ(sa_count_dir("/proc/self/task"), tasks0);
    uint8_t *jobs = calloc(8, SA_JOB_BYTES);
    struct sa_log *l = calloc(1, sizeof *l);
    T_CHECK(jobs && l);
    if (jobs && l) {
        sa_log_init(l, sg);
        for (uint32_t i = 1; i <= 8; i++) {
            T_EQ(sa_submit_range(sg, jobs, i, i, 0), 1);
            T_EQ(atomic_load(&l->n), i);     /* signalled before submit returned */
        }
        T_ST(softgpu_wait_idle(sg), VIDMM_OK);
        sa_log_expect(l, 8, 1);
        sa_expect_slots(sg, 8);
    }
    softgpu_destroy(sg);
    free(jobs);
    free(l);
}

/* ---- synchronous vs asynchronous: the same walk, the same bytes ------- */

#define SA_WALK_LIVE 24

struct sa_side {
    struct ac_fixture f;
    vidmm_handle h[SA_WALK_LIVE];
};

struct sa_walk_alloc {
    int live;
    uint64_t size;
    uint64_t seed;
    int known;                   /* content is seed's pattern (not poked, not discarded) */
};

/* Compares the memory segments of both devices byte for byte. */
static int sa_same_segments(struct sa_side *s, struct sa_side *a)
{
    enum { CHUNK = 1 << 20 };
    uint8_t *x = malloc(CHUNK), *y = malloc(CHUNK);
    int diff = 0;
    T_CHECK(x && y);
    for (uint32_t id = 1; x && y && id <= 2 && !diff; id++) {
        uint64_t size = s->f.sg->seg[id].size;
        for (uint64_t o = 0; o < size && !diff; o += CHUNK) {
            T_ST(softgpu_read_physical(s->f.sg, id, o, x, CHUNK), VIDMM_OK);
            T_ST(softgpu_read_physical(a->f.sg, id, o, y, CHUNK), VIDMM_OK);
            if (memcmp(x, y, CHUNK) != 0) {
                fprintf(stderr, "  segment %u differs in [0x%llx, +1 MiB)\n", id, (unsigned long long)o);
                diff = 1;
            }
        }
    }
    free(x);
    free(y);
    return diff;
}

/* Every live allocation reads the same through the CPU on both adapters,
 * and a known one holds its pattern. */
static int sa_same_contents(struct sa_side *s, struct sa_side *a, const struct sa_walk_alloc *w)
{
    int diff = 0;
    for (uint32_t i = 0; i < SA_WALK_LIVE && !diff; i++) {
        if (!w[i].live)
            continue;
        void *p = NULL, *q = NULL;
        vidmm_status st1 = vidmm_allocation_lock(s->f.a, s->h[i], &p);
        vidmm_status st2 = vidmm_allocation_lock(a->f.a, a->h[i], &q);
        T_ST(st1, VIDMM_OK);
        T_ST(st2, VIDMM_OK);
        if (st1 == VIDMM_OK && st2 == VIDMM_OK) {
            if (memcmp(p, q, (size_t)w[i].size) != 0) {
                fprintf(stderr, "  allocation %u differs\n", i);
                diff = 1;
            }
            if (w[i].known && ac_pattern_find_mismatch(p, w[i].size, w[i].seed) != UINT64_MAX) {
                fprintf(stderr, "  allocation %u lost its pattern\n", i);
                diff = 1;
            }
        }
        if (st1 == VIDMM_OK)
            T_ST(vidmm_allocation_unlock(s->f.a, s->h[i]), VIDMM_OK);
        if (st2 == VIDMM_OK)
            T_ST(vidmm_allocation_unlock(a->f.a, a->h[i]), VIDMM_OK);
        if (st1 != VIDMM_OK || st2 != VIDMM_OK)
            diff = 1;
    }
    return diff;
}

/* One seeded walk of creates, pattern writes (through the lock and
 * through softgpu_write_physical), moves, discarding moves and destroys,
 * applied in lockstep to a synchronous and an asynchronous device: every
 * status must agree, and at checkpoints and at the end the devices'
 * memory segments, every allocation's bytes and the device statistics
 * must be identical. */
static void sync_async_same_bytes(void)
{
    static const uint64_t sizes[SOFTGPU_MAX_SEGMENTS + 1] = { 0, SA_MIB(8), SA_MIB(16), SA_MIB(64) };
    static const enum softgpu_alloc_kind kinds[] = { SOFTGPU_ALLOC_TEXTURE, SOFTGPU_ALLOC_CONSTANT,
                                                     SOFTGPU_ALLOC_STAGING, SOFTGPU_ALLOC_TEXTURE };
    struct sa_side *s = calloc(1, sizeof *s), *a = calloc(1, sizeof *a);
    struct sa_walk_alloc w[SA_WALK_LIVE];
    memset(w, 0, sizeof w);
    T_CHECK(s && a);
    if (!s || !a || ac_open_mode(&s->f, "dgpu", sizes, SA_MIB(96), 1)) {
        free(s);
        free(a);
        return;
    }
    if (ac_open_mode(&a->f, "dgpu", sizes, SA_MIB(96), 0)) {
        ac_close(&s->f);
        free(s);
        free(a);
        return;
    }
    uint64_t rng = t_seed() ^ 0x5A5A5A5Aull;
    const unsigned steps = 300 * t_scale();
    unsigned moves_ok = 0, stop = 0;
    for (unsigned step = 0; step < steps && !stop; step++) {
        uint32_t i = (uint32_t)t_rand_range(&rng, SA_WALK_LIVE);
        uint64_t r = t_rand_range(&rng, 100);
        vidmm_status st1 = VIDMM_OK, st2 = VIDMM_OK;
        if (!w[i].live) {
            /* create: 64 KiB .. 2 MiB, zero-filled by vidmm, then a pattern
             * through the lock */
            uint64_t size = (1 + t_rand_range(&rng, 32)) * 65536;
            enum softgpu_alloc_kind k = kinds[t_rand_range(&rng, 4)];
            st1 = ac_create_kind(s->f.a, k, 1, size, &s->h[i]);
            st2 = ac_create_kind(a->f.a, k, 1, size, &a->h[i]);
            if (st1 == VIDMM_OK && st2 == VIDMM_OK) {
                w[i].live = 1;
                w[i].size = size;
                w[i].seed = t_rand(&rng);
                w[i].known = 1;
                st1 = ac_write(s->f.a, s->h[i], size, w[i].seed);
                st2 = ac_write(a->f.a, a->h[i], size, w[i].seed);
            } else if (st1 == VIDMM_OK || st2 == VIDMM_OK) {
                stop = 1;   /* diverged: reported below */
            }
        } else if (r < 55) {
            uint32_t to = (uint32_t)t_rand_range(&rng, 4);
            int discard = t_rand_range(&rng, 10) == 0;
            if (discard) {
                st1 = vidmm_allocation_move_discard(s->f.a, s->h[i], to);
                st2 = vidmm_allocation_move_discard(a->f.a, a->h[i], to);
                if (st1 == VIDMM_OK)
                    w[i].known = 0;
            } else {
                st1 = vidmm_allocation_move(s->f.a, s->h[i], to);
                st2 = vidmm_allocation_move(a->f.a, a->h[i], to);
            }
            moves_ok += st1 == VIDMM_OK;
        } else if (r < 70) {
            w[i].seed = t_rand(&rng);
            w[i].known = 1;
            st1 = ac_write(s->f.a, s->h[i], w[i].size, w[i].seed);
            st2 = ac_write(a->f.a, a->h[i], w[i].size, w[i].seed);
        } else if (r < 85) {
            /* Poke seeded bytes into the first physical range through
             * softgpu_write_physical (memory segments only: an aperture
             * range maps system pages whose addresses differ). */
            struct vidmm_physical_range pr1, pr2;
            uint32_t n1 = 0, n2 = 0;
            st1 = vidmm_allocation_physical_ranges(s->f.a, s->h[i], &pr1, 1, &n1);
            st2 = vidmm_allocation_physical_ranges(a->f.a, a->h[i], &pr2, 1, &n2);
            /* Same placement on both (system pages excepted: their
             * offsets are host addresses). */
            if (st1 == VIDMM_OK && st2 == VIDMM_OK &&
                (n1 != n2 || pr1.segment_id != pr2.segment_id ||
                 (pr1.segment_id && (pr1.offset != pr2.offset || pr1.size != pr2.size)))) {
                T_CHECK(!"physical ranges differ");
                stop = 1;
            } else if (st1 == VIDMM_OK && (pr1.segment_id == 1 || pr1.segment_id == 2)) {
                uint8_t bytes[4096];
                uint64_t len = pr1.size < sizeof bytes ? pr1.size : sizeof bytes;
                for (uint64_t b = 0; b < len; b++)
                    bytes[b] = (uint8_t)t_rand(&rng);
                st1 = softgpu_write_physical(s->f.sg, pr1.segment_id, pr1.offset, bytes, (size_t)len);
                st2 = softgpu_write_physical(a->f.sg, pr2.segment_id, pr2.offset, bytes, (size_t)len);
                w[i].known = 0;
            }
        } else {
            st1 = vidmm_allocation_destroy(s->f.a, s->h[i]);
            st2 = vidmm_allocation_destroy(a->f.a, a->h[i]);
            w[i].live = 0;
        }
        if (st1 != st2) {
            char m[160];
            snprintf(m, sizeof m, "step %u: synchronous %s, asynchronous %s", step, vidmm_status_str(st1),
                     vidmm_status_str(st2));
            t_fail(__FILE__, __LINE__, m);
            stop = 1;
        }
        if (!stop && (step % 50 == 49 || step + 1 == steps)) {
            stop |= CHECK_ADAPTER(s->f.a) != 0;
            stop |= CHECK_ADAPTER(a->f.a) != 0;
            stop |= sa_same_contents(s, a, w);
            stop |= sa_same_segments(s, a);
            T_EQ(stop, 0);
        }
    }
    T_CHECK(moves_ok >= steps / 8);   /* the walk really moved things */
    struct softgpu_stats x, y;
    softgpu_get_stats(s->f.sg, &x);
    softgpu_get_stats(a->f.sg, &y);
    T_CHECK(x.paging_buffers > 0);
    T_EQ_U64(x.paging_buffers, y.paging_buffers);
    T_CHECK(memcmp(&x.ops, &y.ops, sizeof x.ops) == 0);
    T_CHECK(memcmp(&x.bytes, &y.bytes, sizeof x.bytes) == 0);
    T_EQ_U64(x.aperture_pages_mapped, y.aperture_pages_mapped);
    for (uint32_t i = 0; i < SA_WALK_LIVE; i++)
        if (w[i].live) {
            T_ST(vidmm_allocation_destroy(s->f.a, s->h[i]), VIDMM_OK);
            T_ST(vidmm_allocation_destroy(a->f.a, a->h[i]), VIDMM_OK);
        }
    ac_close(&s->f);
    ac_close(&a->f);
    free(s);
    free(a);
}

/* ---- manual mode: nothing runs until a step ----------------------------- */

static uint32_t sa_pending_paging(struct softgpu *sg, int *stuck)
{
    struct softgpu_pending p[1 + SOFTGPU_NODES];
    uint32_t n = softgpu_pending(sg, p, 1 + SOFTGPU_NODES);
    *stuck = 0;
    for (uint32_t i = 0; i < n; i++)
        if (p[i].engine == SOFTGPU_ENGINE_PAGING) {
            *stuck = p[i].stuck;
            return p[i].queued;
        }
    return 0;
}

/* No thread; buffers wait for softgpu_step, which runs exactly one, in
 * order, and signals its fence on the caller's thread; an injected hang
 * makes the head stuck until a reset drops it. */
static void manual_mode_steps(void)
{
    int tasks0 = sa_threads_now();
    struct softgpu *sg = sa_create(2);
    if (!sg)
        return;
    T_EQ(sa_count_dir("/proc/self/task"), tasks0);
    uint8_t *jobs = calloc(8, SA_JOB_BYTES);
    struct sa_log *l = calloc(1, sizeof *l);
    T_CHECK(jobs && l);
    if (jobs && l) {
        sa_log_init(l, sg);
        T_EQ(sa_submit_range(sg, jobs, 1, 8, 0), 8);
        int stuck = 1;
        T_EQ(atomic_load(&l->n), 0);              /* nothing ran */
        T_EQ(sa_pending_paging(sg, &stuck), 8);
        T_EQ(stuck, 0);
        T_ST(softgpu_wait_idle(sg), VIDMM_E_STATE);  /* only steps run them */
        for (uint32_t i = 1; i <= 8; i++) {
            T_ST(softgpu_step(sg, SOFTGPU_ENGINE_PAGING), VIDMM_OK);
            T_EQ(atomic_load(&l->n), i);          /* one buffer, one fence */
        }
        T_ST(softgpu_step(sg, SOFTGPU_ENGINE_PAGING), VIDMM_E_STATE);
        T_ST(softgpu_step(sg, SOFTGPU_NODES), VIDMM_E_INVALID_ARG);
        T_ST(softgpu_wait_idle(sg), VIDMM_OK);
        sa_log_expect(l, 8, 1);
        sa_expect_slots(sg, 8);

        softgpu_inject_paging_hang(sg, 0);
        T_EQ(sa_submit_range(sg, jobs, 1, 1, 0), 1);
        T_ST(softgpu_step(sg, SOFTGPU_ENGINE_PAGING), VIDMM_E_STATE);
        T_EQ(sa_pending_paging(sg, &stuck), 1);
        T_EQ(stuck, 1);
        T_ST(ops->reset_from_timeout(sg), VIDMM_OK);
        T_EQ(sa_pending_paging(sg, &stuck), 0);
        T_EQ(atomic_load(&l->n), 8);              /* the dropped buffer never signalled */
    }
    softgpu_destroy(sg);
    free(jobs);
    free(l);
}

struct sa_touches {
    uint32_t n;
    uint32_t seg[4];
    uint64_t addr[4], size[4];
    int write[4];
};

static void sa_touch(void *ctx, uint32_t segment_id, uint64_t address, uint64_t size, int write)
{
    struct sa_touches *t = ctx;
    if (t->n < 4) {
        t->seg[t->n] = segment_id;
        t->addr[t->n] = address;
        t->size[t->n] = size;
        t->write[t->n] = write;
    }
    t->n++;
}

/* The touch hook names what a buffer reads and writes before it runs;
 * a buffer submitted while the device is not in D0 is counted. */
static void manual_mode_touch_and_power(void)
{
    struct softgpu *sg = sa_create(2);
    if (!sg)
        return;
    void *pages = aligned_alloc(4096, 8192);
    T_CHECK(pages != NULL);
    if (pages) {
        struct vidmm_mdl mdl = { pages, 2 };
        uint8_t buf[SA_JOB_BYTES];
        uint8_t *p = buf;
        uint32_t room = sizeof buf;
        struct sa_touches t;
        memset(&t, 0, sizeof t);
        softgpu_set_touch_hook(sg, sa_touch, &t);
        T_EQ(sa_copy_out(sg, &p, &room, 4096, 4096, &mdl, 1), 0);
        T_ST(sa_submit(sg, buf, (uint32_t)(sizeof buf - room), 1), VIDMM_OK);
        T_EQ(t.n, 0);
        T_ST(softgpu_step(sg, SOFTGPU_ENGINE_PAGING), VIDMM_OK);
        T_EQ(t.n, 2);
        T_EQ(t.seg[0], 1);
        T_EQ_U64(t.addr[0], 4096);
        T_EQ(t.write[0], 0);
        T_EQ(t.seg[1], 0);
        T_EQ_U64(t.addr[1], (uint64_t)(uintptr_t)pages + 4096);
        T_EQ_U64(t.size[1], 4096);
        T_EQ(t.write[1], 1);
        softgpu_set_touch_hook(sg, NULL, NULL);

        struct softgpu_reset_stats rs;
        softgpu_get_reset_stats(sg, &rs);
        T_EQ_U64(rs.work_while_down, 0);
        T_ST(ops->set_power_state(sg, VIDMM_POWER_STANDBY), VIDMM_OK);
        T_ST(sa_submit(sg, buf, (uint32_t)(sizeof buf - room), 2), VIDMM_OK);
        softgpu_get_reset_stats(sg, &rs);
        T_EQ_U64(rs.work_while_down, 1);
        T_ST(ops->set_power_state(sg, VIDMM_POWER_D0), VIDMM_OK);
        T_ST(softgpu_step(sg, SOFTGPU_ENGINE_PAGING), VIDMM_OK);
    }
    softgpu_destroy(sg);
    free(pages);
}

/* The manual scheduler's entries refuse NULL and a device that is not in
 * manual mode, and the refusal changes nothing: the threaded device
 * still runs its buffers on its own. */
static void manual_mode_bad_input(void)
{
    struct softgpu_pending pend[4];
    T_ST(softgpu_step(NULL, SOFTGPU_ENGINE_PAGING), VIDMM_E_INVALID_ARG);
    T_EQ(softgpu_pending(NULL, pend, 4), 0);
    softgpu_set_touch_hook(NULL, NULL, NULL);   /* no device: nothing to do, no crash */
    struct softgpu *sg = sa_create(0);
    T_ST(softgpu_step(sg, SOFTGPU_ENGINE_PAGING), VIDMM_E_STATE);
    T_ST(softgpu_step(sg, SOFTGPU_NODES), VIDMM_E_INVALID_ARG);
    T_EQ(softgpu_pending(sg, pend, 4), 0);
    T_ST(softgpu_wait_idle(sg), VIDMM_OK);
    softgpu_destroy(sg);
    sg = sa_create(2);
    T_EQ(softgpu_pending(sg, NULL, 0), 0);      /* nothing queued, no output asked */
    T_ST(softgpu_step(sg, SOFTGPU_ENGINE_PAGING), VIDMM_E_STATE);   /* an empty queue */
    softgpu_destroy(sg);
}

void suite_softgpu_async(void);
void suite_softgpu_async(void)
{
    t_run("softgpu_async.fences_in_order", fences_in_order);
    t_run("softgpu_async.queue_full_blocks", queue_full_blocks);
    t_run("softgpu_async.destroy_drains", destroy_drains);
    t_run("softgpu_async.invalid_buffer_refused", invalid_buffer_refused);
    t_run("softgpu_async.sync_mode_inline", sync_mode_inline);
    t_run("softgpu_async.sync_async_same_bytes", sync_async_same_bytes);
    t_run("softgpu_async.manual_mode_steps", manual_mode_steps);
    t_run("softgpu_async.manual_mode_touch_and_power", manual_mode_touch_and_power);
    t_run("softgpu_async.manual_mode_bad_input", manual_mode_bad_input);
}
