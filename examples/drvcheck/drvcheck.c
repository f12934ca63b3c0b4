/*
 * drvcheck.c - the driver conformance kit (drvcheck.h has the list of
 * groups and what each proves).
 *
 * Two ways in.  The direct groups (query, describe, restart, paging,
 * fences, reset) call the driver's ops themselves, as vidmm would, with
 * paging buffers and fences of their own, and look at the bytes through
 * the driver's CPU-visible segment or through system pages the kit owns.
 * The vidmm group opens a real adapter on a proxy of the driver: the
 * proxy forwards every op, can spoil the segment description or force
 * the restart protocol, and routes fences through the kit's recorder.
 *
 * The fence recorder is what the kit passes as the adapter pointer of a
 * submission when the driver signals through drvcheck_env: the driver
 * hands it back to env->notify_fence, which checks order and (through a
 * hook) that the buffer really ran, then forwards to vidmm when there is
 * a real adapter behind it.
 */
#include "vidmm/drvcheck.h"

#include "vidmm/vidmm.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DC_PAGE        4096u
#define DC_MAGIC       0x64726b63u
#define DC_TIMEOUT_NS  5000000000ull
#define DC_MAX_SEG     VIDMM_MAX_SEGMENTS
#define DC_FENCE_BUFS  12u

/* ------------------------------------------------------------------ */
/* Fence recorder                                                       */
/* ------------------------------------------------------------------ */

struct dc_rec {
    uint32_t magic;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct vidmm_adapter *forward;     /* the real adapter (vidmm group), else NULL */
    uint64_t submitted, last;
    unsigned signals, regressions, beyond, early, foreign;
    /* Did every buffer with a fence <= f run?  Called inside the signal. */
    int (*ran)(void *ctx, uint64_t f);
    void *ran_ctx;
};

static void dc_notify_fence(struct vidmm_adapter *a, uint64_t fence)
{
    struct dc_rec *r = (struct dc_rec *)(void *)a;
    if (!r || r->magic != DC_MAGIC)
        return;                        /* not a pointer the kit gave: counted nowhere, it cannot be */
    pthread_mutex_lock(&r->lock);
    r->signals++;
    if (fence <= r->last)
        r->regressions++;
    if (fence > r->submitted)
        r->beyond++;
    if (r->ran && !r->ran(r->ran_ctx, fence))
        r->early++;
    if (fence > r->last)
        r->last = fence;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
    if (r->forward)
        vidmm_cb_notify_fence(r->forward, fence);
}

static void dc_notify_context_fence(struct vidmm_adapter *a, uint64_t context, uint32_t node, uint64_t fence)
{
    struct dc_rec *r = (struct dc_rec *)(void *)a;
    if (r && r->magic == DC_MAGIC && r->forward)
        vidmm_cb_notify_context_fence(r->forward, context, node, fence);
}

static void dc_notify_page_fault(struct vidmm_adapter *a, uint64_t context, uint64_t va, uint32_t flags)
{
    struct dc_rec *r = (struct dc_rec *)(void *)a;
    if (r && r->magic == DC_MAGIC && r->forward)
        vidmm_cb_notify_page_fault(r->forward, context, va, flags);
}

/* ------------------------------------------------------------------ */
/* The run: results, the driver, its segments                           */
/* ------------------------------------------------------------------ */

struct dc {
    drvcheck_ctor ctor;
    struct drvcheck_env env;
    FILE *out;
    int verbose;
    const char *group;
    struct drvcheck_result res;

    struct drvcheck_driver drv;
    int have_drv;
    struct dc_rec rec;
    uint32_t nb;
    struct vidmm_segment_descriptor seg[DC_MAX_SEG + 1];   /* [1..nb] */
    uint32_t pb_segment, pb_size;
    uint32_t mem;                      /* the memory segment the byte checks use, 0 = none */
    uint8_t *mem_cpu;                  /* its CPU address, NULL = read back through system pages */
    char why[512];                     /* the group's first failed vidmm call (dc_call) */
};

static void dc_report(struct dc *k, int ok, int skip, const char *name, const char *fmt, ...)
{
    char detail[768] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(detail, sizeof detail, fmt, ap);
        va_end(ap);
    }
    if (skip) {
        k->res.skipped++;
        fprintf(k->out, "skip %s.%s%s%s\n", k->group, name, detail[0] ? ": " : "", detail);
    } else if (ok) {
        k->res.passed++;
        if (k->verbose)
            fprintf(k->out, "ok   %s.%s\n", k->group, name);
    } else {
        k->res.failed++;
        fprintf(k->out, "FAIL %s.%s%s%s\n", k->group, name, detail[0] ? ": " : "", detail);
    }
}
#define CHECK(k, cond, name, ...) dc_report((k), (cond) != 0, 0, (name), __VA_ARGS__)
#define SKIP(k, name, ...) dc_report((k), 0, 1, (name), __VA_ARGS__)

/* A call into vidmm: the first that fails in a group is kept in k->why
 * with its status and vidmm_last_error(), so the check it spoils can
 * print the cause rather than its consequence.  Returns st. */
static vidmm_status dc_call(struct dc *k, const char *call, vidmm_status st)
{
    if (st < 0 && !k->why[0])
        snprintf(k->why, sizeof k->why, "%s returned %s (%s)", call, vidmm_status_str(st), vidmm_last_error());
    return st;
}
#define DC_CALL(k, call) dc_call((k), #call, (call))
/* The failed call behind a failed check, or "no vidmm call failed". */
static const char *dc_why(const struct dc *k)
{
    return k->why[0] ? k->why : "no vidmm call failed";
}

static vidmm_status dc_query(struct dc *k, enum vidmm_query_type type, const void *in, size_t in_size, void *out,
                             size_t out_size)
{
    struct vidmm_query_adapter_info_args q = { type, in, in_size, out, out_size };
    return k->drv.ops->query_adapter_info(k->drv.driver, &q);
}

/* Constructs the driver and learns its segments with the two-call
 * query (checked in the query group; here only used). */
static int dc_open(struct dc *k)
{
    memset(&k->drv, 0, sizeof k->drv);
    vidmm_status st = k->ctor(&k->env, &k->drv);
    if (st < 0 || !k->drv.ops || !k->drv.ops->query_adapter_info || !k->drv.ops->build_paging_buffer ||
        !k->drv.ops->submit_command) {
        CHECK(k, 0, "construct", "the constructor failed (%s) or left a required op NULL", vidmm_status_str(st));
        if (st >= 0 && k->drv.destroy)
            k->drv.destroy(k->drv.driver);
        return -1;
    }
    if (!k->drv.signals_through_env && !k->drv.wait_idle) {
        CHECK(k, 0, "construct", "a driver that signals vidmm directly must give wait_idle");
        k->drv.destroy(k->drv.driver);
        return -1;
    }
    k->have_drv = 1;
    k->rec.submitted = k->rec.last = 0;
    k->rec.signals = k->rec.regressions = k->rec.beyond = k->rec.early = 0;
    k->rec.ran = NULL;
    k->rec.forward = NULL;
    struct vidmm_query_segment_in qin;
    memset(&qin, 0, sizeof qin);
    qin.agp_aperture_base = k->drv.agp_aperture_base;
    qin.agp_aperture_size = k->drv.agp_aperture_size;
    struct vidmm_query_segment_out qo;
    memset(&qo, 0, sizeof qo);
    k->nb = 0;
    k->mem = 0;
    k->mem_cpu = NULL;
    if (dc_query(k, VIDMM_QAI_QUERYSEGMENT, &qin, sizeof qin, &qo, sizeof qo) < 0 || qo.nb_segment == 0 ||
        qo.nb_segment > DC_MAX_SEG)
        return 0;
    uint32_t nb = qo.nb_segment;
    memset(&qo, 0, sizeof qo);
    qo.nb_segment = nb;
    qo.segment_descriptor = &k->seg[1];
    qo.segment_descriptor_stride = sizeof k->seg[0];
    if (dc_query(k, VIDMM_QAI_QUERYSEGMENT, &qin, sizeof qin, &qo, sizeof qo) < 0)
        return 0;
    k->nb = nb;
    k->pb_segment = qo.paging_buffer_segment_id;
    k->pb_size = qo.paging_buffer_size;
    /* Byte checks use the first memory segment, a CPU-visible one if
     * there is one. */
    for (uint32_t id = 1; id <= nb; id++) {
        uint32_t f = k->seg[id].flags;
        if (f & (VIDMM_SEGMENT_APERTURE | VIDMM_SEGMENT_AGP) || k->seg[id].size < (1u << 20))
            continue;
        if (!k->mem || (!k->mem_cpu && (f & VIDMM_SEGMENT_CPU_VISIBLE) && k->seg[id].cpu_translated_address)) {
            k->mem = id;
            k->mem_cpu = (f & VIDMM_SEGMENT_CPU_VISIBLE) ? k->seg[id].cpu_translated_address : NULL;
        }
    }
    return 0;
}

static void dc_close(struct dc *k)
{
    if (!k->have_drv)
        return;
    if (k->drv.wait_idle)
        k->drv.wait_idle(k->drv.driver);
    if (k->drv.destroy)
        k->drv.destroy(k->drv.driver);
    k->have_drv = 0;
}

static uint32_t dc_aperture(const struct dc *k)
{
    for (uint32_t id = 1; id <= k->nb; id++)
        if (k->seg[id].flags & VIDMM_SEGMENT_APERTURE)
            return id;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Building, submitting and waiting, as vidmm does                      */
/* ------------------------------------------------------------------ */

static uint64_t dc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static vidmm_status dc_submit(struct dc *k, const void *buf, uint32_t size, uint64_t *fence)
{
    struct vidmm_submit_command_args s;
    memset(&s, 0, sizeof s);
    s.adapter = k->drv.signals_through_env ? (struct vidmm_adapter *)(void *)&k->rec : NULL;
    s.dma_buffer = buf;
    s.dma_buffer_size = size;
    s.flags = VIDMM_SUBMIT_PAGING;
    pthread_mutex_lock(&k->rec.lock);
    s.fence = ++k->rec.submitted;
    pthread_mutex_unlock(&k->rec.lock);
    *fence = s.fence;
    return k->drv.ops->submit_command(k->drv.driver, &s);
}

/* Waits until fence f was signalled (or, for a driver that signals
 * vidmm itself, until the driver is idle).  0 on time, -1 on timeout. */
static int dc_wait(struct dc *k, uint64_t f)
{
    if (!k->drv.signals_through_env)
        return k->drv.wait_idle(k->drv.driver) < 0 ? -1 : 0;
    uint64_t end = dc_now() + DC_TIMEOUT_NS;
    int rc = 0;
    pthread_mutex_lock(&k->rec.lock);
    while (k->rec.last < f) {
        if (dc_now() > end) {
            rc = -1;
            break;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&k->rec.cond, &k->rec.lock, &ts);
    }
    pthread_mutex_unlock(&k->rec.lock);
    return rc;
}

/* What one dc_do saw of the restart protocol. */
struct dc_proto {
    unsigned calls, restarts, fruitless, buffers;
    unsigned bad_pointer;              /* dma_buffer / dma_size moved inconsistently */
    uint32_t min_room;                 /* smallest room that took a command */
};

/* Encodes req into buffers of `room` bytes (0 = the paging-buffer size),
 * submitting each and taking a fresh one on INSUFFICIENT_DMA_BUFFER, as
 * vidmm does; waits for the last fence.  A fruitless answer on an empty
 * buffer doubles the room (vidmm would give up after 64: the kit wants
 * the smallest room that works).  Returns the build status. */
/* Before the kit frees memory a submitted buffer reads or writes (the
 * buffer itself, MDL pages): a driver that signals a fence before its
 * buffer has run - the breakage fences.after_execution reports - may
 * still be using it, and the kit must not crash where it should report.
 * The fence checks are made at signal time, before this. */
static void dc_quiesce(struct dc *k)
{
    if (k->drv.wait_idle)
        k->drv.wait_idle(k->drv.driver);
}

static vidmm_status dc_do(struct dc *k, const struct vidmm_build_paging_buffer_args *req, uint32_t room,
                          struct dc_proto *p)
{
    struct dc_proto local;
    if (!p)
        p = &local;
    memset(p, 0, sizeof *p);
    uint32_t pbs = k->pb_size ? k->pb_size : 65536;
    if (!room || room > pbs)
        room = pbs;
    uint8_t *bufs[4096];
    unsigned nbuf = 0;
    uint64_t last = 0;
    vidmm_status st = VIDMM_OK;
    uint32_t multipass = 0;
    for (;;) {
        if (nbuf == sizeof bufs / sizeof bufs[0]) {
            st = VIDMM_E_DRIVER_FAILURE;
            break;
        }
        uint8_t *b = aligned_alloc(DC_PAGE, (room + DC_PAGE - 1) / DC_PAGE * DC_PAGE);
        if (!b) {
            st = VIDMM_E_NO_HOST_MEMORY;
            break;
        }
        bufs[nbuf++] = b;
        struct vidmm_build_paging_buffer_args a = *req;
        a.dma_buffer = b;
        a.dma_size = room;
        a.multipass_offset = multipass;
        p->calls++;
        st = k->drv.ops->build_paging_buffer(k->drv.driver, &a);
        uint8_t *end = a.dma_buffer;
        if (end < b || end > b + room || (uint32_t)(end - b) != room - a.dma_size)
            p->bad_pointer++;
        uint32_t used = end >= b && end <= b + room ? (uint32_t)(end - b) : 0;
        multipass = a.multipass_offset;
        if (used) {
            if (!p->min_room || room < p->min_room)
                p->min_room = room;
            if (dc_submit(k, b, used, &last) < 0) {
                st = VIDMM_E_DRIVER_FAILURE;
                break;
            }
            p->buffers++;
        }
        if (st != VIDMM_E_INSUFFICIENT_DMA_BUFFER)
            break;
        p->restarts++;
        if (!used) {
            p->fruitless++;
            if (room >= pbs || p->fruitless > 64) {
                st = VIDMM_E_DRIVER_FAILURE;   /* no progress even on a whole paging buffer */
                break;
            }
            room = room * 2 > pbs ? pbs : room * 2;
        }
        if (p->calls > 100000) {
            st = VIDMM_E_DRIVER_FAILURE;
            break;
        }
    }
    if (last && dc_wait(k, last) < 0 && st >= 0)
        st = VIDMM_E_TIMEOUT;
    dc_quiesce(k);
    for (unsigned i = 0; i < nbuf; i++)
        free(bufs[i]);
    return st;
}

static struct vidmm_build_paging_buffer_args dc_req(enum vidmm_paging_operation op)
{
    struct vidmm_build_paging_buffer_args a;
    memset(&a, 0, sizeof a);
    a.operation = op;
    return a;
}

static vidmm_status dc_fill(struct dc *k, uint32_t id, uint64_t off, uint64_t size, uint32_t pattern, uint32_t room,
                            struct dc_proto *p)
{
    struct vidmm_build_paging_buffer_args a = dc_req(VIDMM_PAGING_FILL);
    a.u.fill.fill_size = size;
    a.u.fill.fill_pattern = pattern;
    a.u.fill.destination_segment_id = id;
    a.u.fill.destination_segment_address = k->seg[id].base_address + off;
    return dc_do(k, &a, room, p);
}

/* A transfer side: segment id and offset, or (id 0) an MDL. */
static void dc_side(struct dc *k, struct vidmm_transfer_side *s, uint32_t id, uint64_t off,
                    const struct vidmm_mdl *mdl)
{
    s->segment_id = id;
    s->segment_address = id ? k->seg[id].base_address + off : 0;
    s->mdl = id ? NULL : mdl;
}

static vidmm_status dc_transfer(struct dc *k, uint32_t sid, uint64_t soff, uint32_t did, uint64_t doff,
                                const struct vidmm_mdl *mdl, uint64_t mdl_offset, uint64_t size, uint32_t room,
                                struct dc_proto *p)
{
    struct vidmm_build_paging_buffer_args a = dc_req(VIDMM_PAGING_TRANSFER);
    a.u.transfer.transfer_size = size;
    dc_side(k, &a.u.transfer.source, sid, soff, mdl);
    dc_side(k, &a.u.transfer.destination, did, doff, mdl);
    a.u.transfer.mdl_offset = mdl_offset;
    a.u.transfer.flags = VIDMM_TRANSFER_START | VIDMM_TRANSFER_END;
    return dc_do(k, &a, room, p);
}

/* Host pages as an MDL. */
struct dc_pages {
    struct vidmm_mdl mdl;
    uint8_t *p;
};

static int dc_pages(struct dc_pages *m, uint64_t pages)
{
    m->p = aligned_alloc(DC_PAGE, (size_t)(pages * DC_PAGE));
    m->mdl.base = m->p;
    m->mdl.page_count = pages;
    if (m->p)
        memset(m->p, 0, (size_t)(pages * DC_PAGE));
    return m->p ? 0 : -1;
}

static uint8_t dc_byte(uint32_t seed, uint64_t i)
{
    uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return (uint8_t)(x * 0x94D049BB133111EBull >> 56);
}

static void dc_random(uint8_t *p, uint64_t n, uint32_t seed)
{
    for (uint64_t i = 0; i < n; i++)
        p[i] = dc_byte(seed, i);
}

/* Reads segment bytes: through the CPU-visible address, or by a
 * TRANSFER into system pages. */
static int dc_read(struct dc *k, uint32_t id, uint64_t off, uint8_t *dst, uint64_t size)
{
    if (id == k->mem && k->mem_cpu) {
        if (k->drv.wait_idle)
            k->drv.wait_idle(k->drv.driver);
        memcpy(dst, k->mem_cpu + off, (size_t)size);
        return 0;
    }
    struct dc_pages m;
    uint64_t pages = (size + DC_PAGE - 1) / DC_PAGE;
    if (dc_pages(&m, pages) < 0)
        return -1;
    int rc = dc_transfer(k, id, off, 0, 0, &m.mdl, 0, pages * DC_PAGE, 0, NULL) < 0 ? -1 : 0;
    memcpy(dst, m.p, (size_t)size);
    free(m.p);
    return rc;
}

/* Does [off, off+size) of the segment hold the fill pattern? */
static int dc_is_pattern(const uint8_t *b, uint64_t size, uint32_t pattern)
{
    for (uint64_t i = 0; i < size; i++)
        if (b[i] != (uint8_t)(pattern >> (8u * (i & 3u))))
            return 0;
    return 1;
}

/* ------------------------------------------------------------------ */
/* group query                                                          */
/* ------------------------------------------------------------------ */

static void group_query(struct dc *k)
{
    /* The ops table says which layout generation it was built with, or
     * vidmm refuses to open the adapter. */
    CHECK(k, k->drv.ops->abi_version == VIDMM_ABI_VERSION, "abi_version", "ops abi_version %u, headers say %u",
          k->drv.ops->abi_version, VIDMM_ABI_VERSION);
    struct vidmm_driver_caps caps;
    memset(&caps, 0, sizeof caps);
    vidmm_status st = dc_query(k, VIDMM_QAI_DRIVERCAPS, NULL, 0, &caps, sizeof caps);
    CHECK(k, st == VIDMM_OK || st == VIDMM_E_NOT_SUPPORTED, "caps", "DRIVERCAPS answered %s", vidmm_status_str(st));
    if (st == VIDMM_OK) {
        CHECK(k, caps.node_count <= VIDMM_MAX_NODES, "caps_nodes", "node_count %u > %u", caps.node_count,
              VIDMM_MAX_NODES);
        st = dc_query(k, VIDMM_QAI_DRIVERCAPS, NULL, 0, &caps, 1);
        CHECK(k, st < 0, "caps_short_output", "a 1-byte output buffer was answered %s", vidmm_status_str(st));
    }
    st = dc_query(k, (enum vidmm_query_type)999, NULL, 0, &caps, sizeof caps);
    CHECK(k, st == VIDMM_E_NOT_SUPPORTED, "unknown_type", "query type 999 answered %s (want NOT_SUPPORTED)",
          vidmm_status_str(st));

    struct vidmm_query_segment_in qin;
    memset(&qin, 0, sizeof qin);
    qin.agp_aperture_base = k->drv.agp_aperture_base;
    qin.agp_aperture_size = k->drv.agp_aperture_size;
    struct vidmm_query_segment_out qo;
    memset(&qo, 0, sizeof qo);
    st = dc_query(k, VIDMM_QAI_QUERYSEGMENT, &qin, sizeof qin, &qo, sizeof qo);
    CHECK(k, st == VIDMM_OK && qo.nb_segment >= 1 && qo.nb_segment <= VIDMM_MAX_SEGMENTS, "first_call",
          "count call answered %s with nb_segment %u", vidmm_status_str(st), qo.nb_segment);
    if (st != VIDMM_OK || qo.nb_segment < 1 || qo.nb_segment > VIDMM_MAX_SEGMENTS)
        return;
    uint32_t nb = qo.nb_segment;
    CHECK(k, k->nb == nb, "second_call", "descriptor call failed or changed the count");

    /* The stride: vidmm's records may be larger than the struct a
     * driver knows; the driver must step by the stride and write
     * nothing past the fields it knows. */
    size_t dsz = sizeof(struct vidmm_segment_descriptor), stride = dsz + 64;
    unsigned char *wide = malloc(stride * (nb + 1));
    if (wide) {
        memset(wide, 0xA5, stride * (nb + 1));
        memset(&qo, 0, sizeof qo);
        qo.nb_segment = nb;
        qo.segment_descriptor = (struct vidmm_segment_descriptor *)(void *)wide;
        qo.segment_descriptor_stride = stride;
        st = dc_query(k, VIDMM_QAI_QUERYSEGMENT, &qin, sizeof qin, &qo, sizeof qo);
        int same = st == VIDMM_OK && qo.nb_segment == nb, gaps = 1;
        for (uint32_t i = 0; same && i < nb; i++) {
            same = memcmp(wide + i * stride, &k->seg[i + 1], dsz) == 0;
            for (size_t b = dsz; b < stride; b++)
                gaps &= wide[i * stride + b] == 0xA5;
        }
        CHECK(k, same, "stride", "with segment_descriptor_stride %zu the records differ from a packed query",
              stride);
        CHECK(k, gaps, "stride_gaps", "bytes past a descriptor (inside the stride) were written");
        free(wide);
    }
    /* A short array (a count smaller than the driver's) must not be
     * written past. */
    if (nb > 1) {
        struct vidmm_segment_descriptor *few = malloc(dsz * nb);
        if (few) {
            memset(few, 0xA5, dsz * nb);
            memset(&qo, 0, sizeof qo);
            qo.nb_segment = nb - 1;
            qo.segment_descriptor = few;
            qo.segment_descriptor_stride = dsz;
            (void)dc_query(k, VIDMM_QAI_QUERYSEGMENT, &qin, sizeof qin, &qo, sizeof qo);
            int intact = 1;
            for (size_t b = 0; b < dsz; b++)
                intact &= ((unsigned char *)&few[nb - 1])[b] == 0xA5;
            CHECK(k, intact, "short_array", "a call with nb_segment %u wrote descriptor %u", nb - 1, nb);
            free(few);
        }
    }
    memset(&qo, 0, sizeof qo);
    st = dc_query(k, VIDMM_QAI_QUERYSEGMENT, &qin, sizeof qin, &qo, sizeof qo - 1);
    CHECK(k, st < 0, "short_output", "a short DXGK_QUERYSEGMENTOUT was answered %s", vidmm_status_str(st));
}

/* ------------------------------------------------------------------ */
/* group describe                                                       */
/* ------------------------------------------------------------------ */

/* The rules of docs/DRIVER_INTERFACE.md and vidmm's open, one message
 * per rule; returns NULL when the descriptor is fine. */
static const char *dc_desc_fault(const struct dc *k, const struct vidmm_segment_descriptor *d)
{
    uint32_t f = d->flags;
    if (f & ~VIDMM_SEGMENT_KNOWN_FLAGS)
        return "unknown flag bits";
    if (f & VIDMM_SEGMENT_RESERVED_SYSMEM)
        return "ReservedSysMem is for the system";
    if (f & VIDMM_SEGMENT_AGP)
        return f == VIDMM_SEGMENT_AGP ? (k->drv.agp_aperture_size ? NULL : "AGP segment without an AGP aperture")
                                      : "an AGP segment takes no other flag";
    if (f & (VIDMM_SEGMENT_USE_BANKING | VIDMM_SEGMENT_PITCH_ALIGNMENT))
        return "UseBanking / PitchAlignment are not supported";
    if ((f & VIDMM_SEGMENT_CPU_VISIBLE) && (f & VIDMM_SEGMENT_SUPPORTS_CPU_HOST_APERTURE))
        return "CpuVisible and SupportsCpuHostAperture together";
    if ((f & VIDMM_SEGMENT_SUPPORTS_CACHED_CPU_HOST_APERTURE) && !(f & VIDMM_SEGMENT_SUPPORTS_CPU_HOST_APERTURE))
        return "cached host aperture without a host aperture";
    if ((f & VIDMM_SEGMENT_CACHE_COHERENT) && !(f & VIDMM_SEGMENT_APERTURE))
        return "CacheCoherent on a segment that is not the aperture";
    if ((f & (VIDMM_SEGMENT_PRESERVED_DURING_HIBERNATE | VIDMM_SEGMENT_PARTIALLY_PRESERVED_DURING_HIBERNATE)) &&
        !(f & VIDMM_SEGMENT_PRESERVED_DURING_STANDBY))
        return "hibernate preservation without PreservedDuringStandby";
    uint32_t page = (f & VIDMM_SEGMENT_USE_64KB_PAGES) ? 65536u : 4096u;
    if ((f & VIDMM_SEGMENT_USE_64KB_PAGES) && (f & VIDMM_SEGMENT_APERTURE))
        return "Use64KBPages on the aperture";
    if (d->page_size && d->page_size != page)
        return "page_size disagrees with Use64KBPages";
    if (d->size == 0 || d->size % page)
        return "size zero or not a multiple of the page";
    if (d->base_address % page)
        return "base address not page aligned";
    if (d->base_address + d->size < d->base_address)
        return "base + size wraps";
    if (f & VIDMM_SEGMENT_APERTURE)
        return d->commit_limit > d->size || d->commit_limit % 4096u ? "aperture commit limit beyond size or unaligned"
                                                                  : NULL;
    if ((f & VIDMM_SEGMENT_CPU_VISIBLE) && !d->cpu_translated_address)
        return "CpuVisible without cpu_translated_address";
    if ((f & VIDMM_SEGMENT_SUPPORTS_CPU_HOST_APERTURE) &&
        (!d->cpu_host_aperture.cpu_address || !d->cpu_host_aperture.size_in_pages ||
         !k->drv.ops->map_cpu_host_aperture || !k->drv.ops->unmap_cpu_host_aperture))
        return "host aperture without address, pages or map/unmap ops";
    return NULL;
}

/* The proxy: a driver in front of the driver, for the adapter vidmm
 * opens.  It forwards every op the driver has. */
struct dc_proxy {
    struct dc *k;
    struct vidmm_driver_ops ops;
    int mutation;                      /* describe: which rule to break in the description, 0 = none */
    int force_restart;                 /* vidmm: refuse every other build call with INSUFFICIENT */
    unsigned build_calls;
};
#define PX(d) ((struct dc_proxy *)(d))
#define REAL(d) (PX(d)->k->drv)

/* Breaks rule m in a description; 0 when m does not apply to it (no
 * second segment to overlap, no memory segment...). */
static int dc_mutate(int m, struct vidmm_query_segment_out *o)
{
    struct vidmm_segment_descriptor *d = o->segment_descriptor;
    uint32_t nb = o->nb_segment, mem = 0, ap = 0;
    for (uint32_t i = 0; i < nb; i++) {
        if (d[i].flags & VIDMM_SEGMENT_APERTURE)
            ap = i + 1;
        else if (!(d[i].flags & VIDMM_SEGMENT_AGP) && !mem)
            mem = i + 1;
    }
    switch (m) {
    case 1: d[0].flags |= 0x80000000u; break;                          /* unknown flag */
    case 2: d[0].size += 1; break;                                     /* size not a page multiple */
    case 3: if (ap) d[ap - 1].flags &= ~VIDMM_SEGMENT_APERTURE; break; /* no aperture */
    case 4: if (nb > 1) d[1].base_address = d[0].base_address; break; /* overlap */
    case 5: o->paging_buffer_size = 1000; break;                       /* bad paging-buffer size */
    case 6: o->paging_buffer_segment_id = nb + 1; break;               /* paging segment out of range */
    case 7: if (mem) { d[mem - 1].flags |= VIDMM_SEGMENT_CPU_VISIBLE;
                       d[mem - 1].flags &= ~VIDMM_SEGMENT_SUPPORTS_CPU_HOST_APERTURE;
                       d[mem - 1].cpu_translated_address = NULL; } break; /* visible without an address */
    case 8: d[0].flags |= VIDMM_SEGMENT_RESERVED_SYSMEM; break;        /* system-only flag */
    default: return 0;
    }
    return !((m == 3 && !ap) || (m == 4 && nb < 2) || (m == 7 && !mem));
}
#define DC_MUTATIONS 8

static vidmm_status px_query(void *d, const struct vidmm_query_adapter_info_args *a)
{
    vidmm_status st = REAL(d).ops->query_adapter_info(REAL(d).driver, a);
    if (st == VIDMM_OK && a->type == VIDMM_QAI_QUERYSEGMENT && PX(d)->mutation) {
        struct vidmm_query_segment_out *o = a->output;
        if (o->segment_descriptor && o->segment_descriptor_stride == sizeof(struct vidmm_segment_descriptor))
            (void)dc_mutate(PX(d)->mutation, o);
    }
    return st;
}
static vidmm_status px_describe(void *d, struct vidmm_describe_allocation_args *a)
{
    return REAL(d).ops->describe_allocation(REAL(d).driver, a);
}
static void px_destroy(void *d, const struct vidmm_destroy_allocation_args *a)
{
    REAL(d).ops->destroy_allocation(REAL(d).driver, a);
}
static vidmm_status px_build(void *d, struct vidmm_build_paging_buffer_args *a)
{
    if (PX(d)->force_restart && (PX(d)->build_calls++ & 1u) == 0)
        return VIDMM_E_INSUFFICIENT_DMA_BUFFER;   /* nothing written: vidmm must retry on a fresh buffer */
    return REAL(d).ops->build_paging_buffer(REAL(d).driver, a);
}
static vidmm_status px_submit(void *d, const struct vidmm_submit_command_args *a)
{
    struct dc *k = PX(d)->k;
    if (!k->drv.signals_through_env)
        return k->drv.ops->submit_command(k->drv.driver, a);
    /* Route the fence through the recorder, which forwards it. */
    struct vidmm_submit_command_args b = *a;
    pthread_mutex_lock(&k->rec.lock);
    k->rec.forward = a->adapter;
    if (a->fence > k->rec.submitted)
        k->rec.submitted = a->fence;
    pthread_mutex_unlock(&k->rec.lock);
    b.adapter = (struct vidmm_adapter *)(void *)&k->rec;
    return k->drv.ops->submit_command(k->drv.driver, &b);
}
static vidmm_status px_map(void *d, const struct vidmm_map_cpu_host_aperture_args *a)
{
    return REAL(d).ops->map_cpu_host_aperture(REAL(d).driver, a);
}
static vidmm_status px_unmap(void *d, const struct vidmm_unmap_cpu_host_aperture_args *a)
{
    return REAL(d).ops->unmap_cpu_host_aperture(REAL(d).driver, a);
}
static void px_set_root(void *d, const struct vidmm_set_root_page_table_args *a)
{
    REAL(d).ops->set_root_page_table(REAL(d).driver, a);
}
static uint64_t px_root_size(void *d, uint32_t *n)
{
    return REAL(d).ops->get_root_page_table_size(REAL(d).driver, n);
}
static vidmm_status px_virtual(void *d, const struct vidmm_submit_context_args *a)
{
    return REAL(d).ops->submit_command_virtual(REAL(d).driver, a);
}
static vidmm_status px_physical(void *d, const struct vidmm_submit_context_args *a)
{
    return REAL(d).ops->submit_command_physical(REAL(d).driver, a);
}
static vidmm_status px_patch(void *d, const struct vidmm_patch_args *a)
{
    return REAL(d).ops->patch(REAL(d).driver, a);
}
static vidmm_status px_reset_engine(void *d, struct vidmm_reset_engine_args *a)
{
    return REAL(d).ops->reset_engine(REAL(d).driver, a);
}
static vidmm_status px_engine_status(void *d, uint32_t node, uint32_t *r)
{
    return REAL(d).ops->query_engine_status(REAL(d).driver, node, r);
}
static vidmm_status px_reset(void *d)
{
    return REAL(d).ops->reset_from_timeout(REAL(d).driver);
}
static vidmm_status px_restart(void *d)
{
    return REAL(d).ops->restart_from_timeout(REAL(d).driver);
}
static vidmm_status px_power(void *d, uint32_t s)
{
    return REAL(d).ops->set_power_state(REAL(d).driver, s);
}

static void dc_proxy_init(struct dc_proxy *px, struct dc *k)
{
    const struct vidmm_driver_ops *r = k->drv.ops;
    memset(px, 0, sizeof *px);
    px->k = k;
    px->ops.abi_version = VIDMM_ABI_VERSION;
    px->ops.query_adapter_info = px_query;
    px->ops.build_paging_buffer = px_build;
    px->ops.submit_command = px_submit;
    /* An op the driver leaves NULL stays NULL: vidmm's default. */
    px->ops.describe_allocation = r->describe_allocation ? px_describe : NULL;
    px->ops.destroy_allocation = r->destroy_allocation ? px_destroy : NULL;
    px->ops.map_cpu_host_aperture = r->map_cpu_host_aperture ? px_map : NULL;
    px->ops.unmap_cpu_host_aperture = r->unmap_cpu_host_aperture ? px_unmap : NULL;
    px->ops.set_root_page_table = r->set_root_page_table ? px_set_root : NULL;
    px->ops.get_root_page_table_size = r->get_root_page_table_size ? px_root_size : NULL;
    px->ops.submit_command_virtual = r->submit_command_virtual ? px_virtual : NULL;
    px->ops.submit_command_physical = r->submit_command_physical ? px_physical : NULL;
    px->ops.patch = r->patch ? px_patch : NULL;
    px->ops.reset_engine = r->reset_engine ? px_reset_engine : NULL;
    px->ops.query_engine_status = r->query_engine_status ? px_engine_status : NULL;
    px->ops.reset_from_timeout = r->reset_from_timeout ? px_reset : NULL;
    px->ops.restart_from_timeout = r->restart_from_timeout ? px_restart : NULL;
    px->ops.set_power_state = r->set_power_state ? px_power : NULL;
}

static vidmm_status dc_adapter_open(struct dc_proxy *px, struct vidmm_adapter **a, char *msg, size_t n)
{
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof ci);
    ci.abi_version = VIDMM_ABI_VERSION;
    ci.ops = &px->ops;
    ci.driver = px;
    ci.agp_aperture_base = px->k->drv.agp_aperture_base;
    ci.agp_aperture_size = px->k->drv.agp_aperture_size;
    ci.system_memory_limit = 1ull << 30;
    ci.error_message = msg;
    ci.error_message_size = n;
    msg[0] = '\0';
    return vidmm_adapter_open(&ci, a);
}

static void group_describe(struct dc *k)
{
    uint32_t apertures = 0, agps = 0;
    for (uint32_t id = 1; id <= k->nb; id++) {
        const char *why = dc_desc_fault(k, &k->seg[id]);
        char name[32];
        snprintf(name, sizeof name, "segment%u", id);
        CHECK(k, !why, name, "%s (flags 0x%x)", why ? why : "", k->seg[id].flags);
        apertures += (k->seg[id].flags & VIDMM_SEGMENT_APERTURE) != 0;
        agps += (k->seg[id].flags & VIDMM_SEGMENT_AGP) != 0;
        for (uint32_t j = 1; j < id; j++) {
            const struct vidmm_segment_descriptor *a = &k->seg[j], *b = &k->seg[id];
            if ((a->flags | b->flags) & VIDMM_SEGMENT_AGP)
                continue;
            char on[40];
            snprintf(on, sizeof on, "overlap%u_%u", j, id);
            CHECK(k, a->base_address + a->size <= b->base_address || b->base_address + b->size <= a->base_address,
                  on, "segments %u and %u share GPU addresses", j, id);
        }
    }
    CHECK(k, apertures == 1, "one_aperture", "%u aperture segments (WDDM 2 needs exactly one)", apertures);
    CHECK(k, agps <= 1, "agp", "%u AGP segments", agps);
    CHECK(k, k->pb_segment == 0 || (k->pb_segment <= k->nb && (k->seg[k->pb_segment].flags & VIDMM_SEGMENT_APERTURE)),
          "paging_segment", "paging buffers in segment %u: must be 0 or the aperture", k->pb_segment);
    CHECK(k, k->pb_size >= 4096 && k->pb_size % 4096 == 0 && k->pb_size <= (64u << 20), "paging_size",
          "paging-buffer size %u: a multiple of 4 KB, 4 KB to 64 MB", k->pb_size);

    /* vidmm opens it, and refuses each spoiled version. */
    struct dc_proxy px;
    dc_proxy_init(&px, k);
    struct vidmm_adapter *a = NULL;
    char msg[256];
    vidmm_status st = dc_adapter_open(&px, &a, msg, sizeof msg);
    CHECK(k, st == VIDMM_OK, "opens", "vidmm_adapter_open: %s: %s", vidmm_status_str(st), msg);
    if (a) {
        CHECK(k, vidmm_adapter_check(a, msg, sizeof msg) == 0, "open_check", "%s", msg);
        vidmm_adapter_close(a);
    }
    for (int m = 1; m <= DC_MUTATIONS; m++) {
        char name[32];
        snprintf(name, sizeof name, "refused%d", m);
        struct vidmm_segment_descriptor copy[DC_MAX_SEG];
        memcpy(copy, &k->seg[1], sizeof copy);
        struct vidmm_query_segment_out probe = { k->nb, k->pb_segment, k->pb_size, 0, copy, sizeof copy[0] };
        if (!dc_mutate(m, &probe)) {
            SKIP(k, name, "spoiled description %d does not apply to this driver", m);
            continue;
        }
        px.mutation = m;
        a = NULL;
        st = dc_adapter_open(&px, &a, msg, sizeof msg);
        CHECK(k, st == VIDMM_E_BAD_DRIVER_DESC && msg[0], name, "spoiled description %d opened (%s)", m,
              vidmm_status_str(st));
        vidmm_adapter_close(a);
    }
    /* describe_allocation refuses private data it cannot read. */
    if (k->drv.ops->describe_allocation) {
        struct vidmm_allocation_info info;
        memset(&info, 0, sizeof info);
        struct vidmm_describe_allocation_args da = { &info };
        st = k->drv.ops->describe_allocation(k->drv.driver, &da);
        CHECK(k, st < 0, "no_private_data", "describe_allocation of no private data answered %s",
              vidmm_status_str(st));
        unsigned char one = 0;
        memset(&info, 0, sizeof info);
        info.private_driver_data = &one;
        info.private_driver_data_size = 1;
        st = k->drv.ops->describe_allocation(k->drv.driver, &da);
        CHECK(k, st < 0, "short_private_data", "describe_allocation of 1 byte answered %s", vidmm_status_str(st));
    }
}

/* ------------------------------------------------------------------ */
/* group restart                                                        */
/* ------------------------------------------------------------------ */

static void group_restart(struct dc *k)
{
    if (!k->mem) {
        SKIP(k, "all", "no memory segment of 1 MiB or more");
        return;
    }
    uint64_t len = 1u << 20, guard = 65536;
    uint8_t *b = malloc((size_t)(len + 2 * guard));
    struct dc_pages src;
    if (!b || dc_pages(&src, len / DC_PAGE) < 0) {
        free(b);
        SKIP(k, "all", "no host memory");
        return;
    }
    /* A fill on buffers too small for it: the bytes of the whole range
     * must be right at the end, and the guards around it untouched. */
    vidmm_status st = dc_fill(k, k->mem, 0, len + 2 * guard, 0x5A5A5A5Au, 0, NULL);
    CHECK(k, st == VIDMM_OK, "guard_fill", "FILL answered %s", vidmm_status_str(st));
    struct dc_proto p;
    st = dc_fill(k, k->mem, guard, len, 0xC0DE1234u, 8, &p);
    CHECK(k, st == VIDMM_OK, "fill_completes", "FILL on small buffers answered %s after %u calls",
          vidmm_status_str(st), p.calls);
    CHECK(k, p.bad_pointer == 0, "fill_pointer", "%u calls moved dma_buffer and dma_size inconsistently",
          p.bad_pointer);
    dc_read(k, k->mem, 0, b, len + 2 * guard);
    CHECK(k, dc_is_pattern(b + guard, len, 0xC0DE1234u), "fill_bytes",
          "the restarted FILL left bytes that are not the pattern");
    CHECK(k, dc_is_pattern(b, guard, 0x5A5A5A5Au) && dc_is_pattern(b + guard + len, guard, 0x5A5A5A5Au),
          "fill_guards", "bytes outside the restarted FILL changed");
    if (p.buffers > 1)
        CHECK(k, 1, "fill_multipass", NULL);
    else
        SKIP(k, "fill_multipass", "the driver encodes a 1 MiB FILL in one command: restarts only ever start over");

    /* A transfer from system pages, likewise. */
    dc_random(src.p, len, 7);
    st = dc_transfer(k, 0, 0, k->mem, guard, &src.mdl, 0, len, 8, &p);
    CHECK(k, st == VIDMM_OK, "transfer_completes", "TRANSFER on small buffers answered %s after %u calls",
          vidmm_status_str(st), p.calls);
    CHECK(k, p.bad_pointer == 0, "transfer_pointer", "%u calls moved dma_buffer and dma_size inconsistently",
          p.bad_pointer);
    dc_read(k, k->mem, 0, b, len + 2 * guard);
    CHECK(k, memcmp(b + guard, src.p, (size_t)len) == 0, "transfer_bytes",
          "the restarted TRANSFER left bytes that differ from the source");
    CHECK(k, dc_is_pattern(b, guard, 0x5A5A5A5Au) && dc_is_pattern(b + guard + len, guard, 0x5A5A5A5Au),
          "transfer_guards", "bytes outside the restarted TRANSFER changed");
    free(src.p);
    free(b);
}

/* ------------------------------------------------------------------ */
/* group paging                                                         */
/* ------------------------------------------------------------------ */

static void group_paging(struct dc *k)
{
    if (!k->mem) {
        SKIP(k, "all", "no memory segment of 1 MiB or more");
        return;
    }
    const uint64_t R = 256u << 10;     /* the test range */
    uint8_t *b = malloc((size_t)(4 * R));
    struct dc_pages m;
    if (!b || dc_pages(&m, 2 * R / DC_PAGE) < 0) {
        free(b);
        SKIP(k, "all", "no host memory");
        return;
    }
    uint32_t id = k->mem;
    /* FILL: pattern inside, guards outside. */
    vidmm_status st = dc_fill(k, id, 0, 4 * R, 0x01010101u, 0, NULL);
    st = st < 0 ? st : dc_fill(k, id, R, R, 0x11223344u, 0, NULL);
    CHECK(k, st == VIDMM_OK, "fill", "FILL answered %s", vidmm_status_str(st));
    dc_read(k, id, 0, b, 4 * R);
    CHECK(k, dc_is_pattern(b + R, R, 0x11223344u), "fill_bytes", "FILL did not write its pattern");
    CHECK(k, dc_is_pattern(b, R, 0x01010101u) && dc_is_pattern(b + 2 * R, 2 * R, 0x01010101u), "fill_guards",
          "FILL wrote outside its range");

    /* TRANSFER system pages -> memory, memory -> memory, memory ->
     * system pages at an MDL offset. */
    dc_random(m.p, R, 11);
    st = dc_transfer(k, 0, 0, id, R, &m.mdl, 0, R, 0, NULL);
    dc_read(k, id, R, b, R);
    CHECK(k, st == VIDMM_OK && memcmp(b, m.p, (size_t)R) == 0, "system_to_memory", "%s", vidmm_status_str(st));
    st = dc_transfer(k, id, R, id, 3 * R, NULL, 0, R, 0, NULL);
    dc_read(k, id, 3 * R, b, R);
    CHECK(k, st == VIDMM_OK && memcmp(b, m.p, (size_t)R) == 0, "memory_to_memory", "%s", vidmm_status_str(st));
    memset(m.p, 0xEE, (size_t)(2 * R));
    st = dc_transfer(k, id, 3 * R, 0, 0, &m.mdl, 2, R, 0, NULL);
    int ok = st == VIDMM_OK && dc_is_pattern(m.p, 2 * DC_PAGE, 0xEEEEEEEEu);
    dc_random(b, R, 11);
    ok = ok && memcmp(m.p + 2 * DC_PAGE, b, (size_t)R) == 0;
    CHECK(k, ok, "memory_to_system", "%s (mdl_offset 2 pages)", vidmm_status_str(st));
    st = dc_transfer(k, id, 0, id, R, NULL, 0, 0, 0, NULL);
    CHECK(k, st == VIDMM_OK, "empty_transfer", "a 0-byte TRANSFER answered %s", vidmm_status_str(st));

    /* DISCARD_CONTENT: accepted, nothing outside the range changes. */
    dc_fill(k, id, 0, 4 * R, 0x02020202u, 0, NULL);
    struct vidmm_build_paging_buffer_args a = dc_req(VIDMM_PAGING_DISCARD_CONTENT);
    a.u.discard_content.segment_id = id;
    a.u.discard_content.segment_address = k->seg[id].base_address + R;
    a.u.discard_content.size = R;
    st = dc_do(k, &a, 0, NULL);
    dc_read(k, id, 0, b, 4 * R);
    CHECK(k, st == VIDMM_OK && dc_is_pattern(b, R, 0x02020202u) && dc_is_pattern(b + 2 * R, 2 * R, 0x02020202u),
          "discard", "%s", vidmm_status_str(st));

    /* The aperture: mapped pages read and written through it, then
     * unmapped entries pointing at the dummy page. */
    uint32_t ap = dc_aperture(k);
    if (ap) {
        const uint64_t pages = 4, first = 3;
        struct dc_pages dummy;
        dc_random(m.p, pages * DC_PAGE, 21);
        a = dc_req(VIDMM_PAGING_MAP_APERTURE_SEGMENT);
        a.u.map_aperture_segment.segment_id = ap;
        a.u.map_aperture_segment.offset_in_pages = first;
        a.u.map_aperture_segment.number_of_pages = pages;
        a.u.map_aperture_segment.mdl = &m.mdl;
        st = dc_do(k, &a, 0, NULL);
        CHECK(k, st == VIDMM_OK, "map", "MAP_APERTURE_SEGMENT answered %s", vidmm_status_str(st));
        st = dc_transfer(k, ap, first * DC_PAGE, id, 0, NULL, 0, pages * DC_PAGE, 0, NULL);
        if (st == VIDMM_E_INVALID_ARG) {
            SKIP(k, "through_aperture", "the driver takes no aperture address in TRANSFER: mapping not seen");
        } else {
            dc_read(k, id, 0, b, pages * DC_PAGE);
            CHECK(k, st == VIDMM_OK && memcmp(b, m.p, (size_t)(pages * DC_PAGE)) == 0, "read_through_aperture",
                  "%s", vidmm_status_str(st));
            dc_fill(k, id, 0, pages * DC_PAGE, 0x77665544u, 0, NULL);
            st = dc_transfer(k, id, 0, ap, first * DC_PAGE, NULL, 0, pages * DC_PAGE, 0, NULL);
            CHECK(k, st == VIDMM_OK && dc_is_pattern(m.p, pages * DC_PAGE, 0x77665544u), "write_through_aperture",
                  "%s", vidmm_status_str(st));
            if (dc_pages(&dummy, 1) == 0) {
                memset(dummy.p, 0xD5, DC_PAGE);
                a = dc_req(VIDMM_PAGING_UNMAP_APERTURE_SEGMENT);
                a.u.unmap_aperture_segment.segment_id = ap;
                a.u.unmap_aperture_segment.offset_in_pages = first;
                a.u.unmap_aperture_segment.number_of_pages = pages;
                a.u.unmap_aperture_segment.dummy_page = dummy.p;
                st = dc_do(k, &a, 0, NULL);
                vidmm_status st2 = dc_transfer(k, ap, first * DC_PAGE, id, 0, NULL, 0, pages * DC_PAGE, 0, NULL);
                dc_read(k, id, 0, b, pages * DC_PAGE);
                CHECK(k, st == VIDMM_OK && st2 == VIDMM_OK && dc_is_pattern(b, pages * DC_PAGE, 0xD5D5D5D5u),
                      "unmap_to_dummy", "UNMAP %s; unmapped pages do not read the dummy page",
                      vidmm_status_str(st));
                free(dummy.p);
            }
        }
    } else {
        SKIP(k, "map", "no aperture segment");
    }

    /* Requests that name no real place must be refused when built. */
    a = dc_req(VIDMM_PAGING_FILL);
    a.u.fill.destination_segment_id = id;
    a.u.fill.destination_segment_address = k->seg[id].base_address + k->seg[id].size - DC_PAGE;
    a.u.fill.fill_size = 2 * DC_PAGE;
    CHECK(k, dc_do(k, &a, 0, NULL) < 0, "refuse_fill_past_end", "a FILL past the segment's end was accepted");
    a = dc_req(VIDMM_PAGING_TRANSFER);
    a.u.transfer.transfer_size = DC_PAGE;
    a.u.transfer.source.segment_id = k->nb + 1;
    dc_side(k, &a.u.transfer.destination, id, 0, NULL);
    CHECK(k, dc_do(k, &a, 0, NULL) < 0, "refuse_bad_segment", "a TRANSFER from segment %u was accepted", k->nb + 1);
    a = dc_req((enum vidmm_paging_operation)3);
    CHECK(k, dc_do(k, &a, 0, NULL) < 0, "refuse_unknown_op", "paging operation 3 was accepted");
    free(m.p);
    free(b);
}

/* ------------------------------------------------------------------ */
/* group fences                                                         */
/* ------------------------------------------------------------------ */

struct dc_fence_test {
    struct dc *k;
    uint64_t first;                    /* fence of buffer 0 */
    uint8_t *dst;                      /* system page per buffer: its marker once it ran */
};

static uint64_t dc_marker(uint64_t j)
{
    return 0x4D41524B00000000ull | j;
}

/* In the signal: every buffer up to fence f must have written its
 * marker already. */
static int dc_fence_ran(void *ctx, uint64_t f)
{
    struct dc_fence_test *t = ctx;
    for (uint64_t fence = t->first; fence <= f && fence < t->first + DC_FENCE_BUFS; fence++) {
        uint64_t j = fence - t->first, v;
        memcpy(&v, t->dst + j * DC_PAGE, sizeof v);
        if (v != dc_marker(j))
            return 0;
    }
    return 1;
}

static void group_fences(struct dc *k)
{
    if (!k->mem) {
        SKIP(k, "all", "no memory segment of 1 MiB or more");
        return;
    }
    struct dc_pages src, dst;
    if (dc_pages(&src, DC_FENCE_BUFS) < 0 || dc_pages(&dst, DC_FENCE_BUFS) < 0) {
        SKIP(k, "all", "no host memory");
        return;
    }
    for (uint64_t j = 0; j < DC_FENCE_BUFS; j++) {
        uint64_t v = dc_marker(j);
        memcpy(src.p + j * DC_PAGE, &v, sizeof v);
    }
    /* Buffer j: system page j -> memory slot j -> result page j, so its
     * marker lands in the result only when the whole buffer ran. */
    uint32_t pbs = k->pb_size ? k->pb_size : 65536;
    uint8_t *bufs[DC_FENCE_BUFS];
    uint32_t used[DC_FENCE_BUFS];
    int built = 1;
    for (uint64_t j = 0; j < DC_FENCE_BUFS; j++) {
        bufs[j] = aligned_alloc(DC_PAGE, (pbs + DC_PAGE - 1) / DC_PAGE * DC_PAGE);
        if (!bufs[j]) {
            built = 0;
            used[j] = 0;
            continue;
        }
        struct vidmm_build_paging_buffer_args a = dc_req(VIDMM_PAGING_TRANSFER);
        a.dma_buffer = bufs[j];
        a.dma_size = pbs;
        a.u.transfer.transfer_size = DC_PAGE;
        dc_side(k, &a.u.transfer.source, 0, 0, &src.mdl);
        dc_side(k, &a.u.transfer.destination, k->mem, j * DC_PAGE, NULL);
        a.u.transfer.mdl_offset = j;
        a.u.transfer.flags = VIDMM_TRANSFER_START | VIDMM_TRANSFER_END;
        vidmm_status s1 = k->drv.ops->build_paging_buffer(k->drv.driver, &a);
        a.multipass_offset = 0;
        dc_side(k, &a.u.transfer.source, k->mem, j * DC_PAGE, NULL);
        dc_side(k, &a.u.transfer.destination, 0, 0, &dst.mdl);
        vidmm_status s2 = k->drv.ops->build_paging_buffer(k->drv.driver, &a);
        used[j] = (uint32_t)((uint8_t *)a.dma_buffer - bufs[j]);
        built &= s1 == VIDMM_OK && s2 == VIDMM_OK;
    }
    CHECK(k, built, "build", "two one-page TRANSFERs did not fit one paging buffer");
    struct dc_fence_test t = { k, 0, dst.p };
    if (built) {
        pthread_mutex_lock(&k->rec.lock);
        t.first = k->rec.submitted + 1;
        k->rec.ran = dc_fence_ran;
        k->rec.ran_ctx = &t;
        unsigned signals0 = k->rec.signals;
        pthread_mutex_unlock(&k->rec.lock);
        uint64_t f = 0;
        int submitted = 1;
        for (uint64_t j = 0; j < DC_FENCE_BUFS; j++)
            submitted &= dc_submit(k, bufs[j], used[j], &f) == VIDMM_OK;
        CHECK(k, submitted, "submit", "submit_command failed");
        int done = dc_wait(k, f) == 0;
        if (k->drv.signals_through_env) {
            CHECK(k, done, "all_signalled", "fence %llu not signalled within 5 s (last %llu)",
                  (unsigned long long)f, (unsigned long long)k->rec.last);
            pthread_mutex_lock(&k->rec.lock);
            k->rec.ran = NULL;
            CHECK(k, k->rec.regressions == 0, "increasing", "%u signals repeated or went back",
                  k->rec.regressions);
            CHECK(k, k->rec.beyond == 0, "not_beyond", "%u signals of fences never submitted", k->rec.beyond);
            CHECK(k, k->rec.early == 0, "after_execution",
                  "%u fences signalled before their buffer (or an earlier one) ran", k->rec.early);
            CHECK(k, k->rec.signals - signals0 <= DC_FENCE_BUFS, "once", "%u signals for %u buffers",
                  k->rec.signals - signals0, DC_FENCE_BUFS);
            pthread_mutex_unlock(&k->rec.lock);
        } else {
            SKIP(k, "order", "the driver signals vidmm directly: order not observable");
        }
        int all = 1;
        for (uint64_t j = 0; j < DC_FENCE_BUFS; j++)
            all &= memcmp(dst.p + j * DC_PAGE, src.p + j * DC_PAGE, DC_PAGE) == 0;
        CHECK(k, done && all, "every_buffer_ran", "a buffer's bytes are missing once the last fence came");
    }
    pthread_mutex_lock(&k->rec.lock);
    k->rec.ran = NULL;
    pthread_mutex_unlock(&k->rec.lock);
    dc_quiesce(k);
    for (uint64_t j = 0; j < DC_FENCE_BUFS; j++)
        free(bufs[j]);
    free(src.p);
    free(dst.p);
}

/* ------------------------------------------------------------------ */
/* group reset                                                          */
/* ------------------------------------------------------------------ */

/* A FILL still runs and its fence still comes. */
static int dc_alive(struct dc *k, uint32_t pattern)
{
    if (!k->mem)
        return 1;
    if (dc_fill(k, k->mem, 0, 65536, pattern, 0, NULL) != VIDMM_OK)
        return 0;
    uint8_t b[65536];
    dc_read(k, k->mem, 0, b, sizeof b);
    return dc_is_pattern(b, sizeof b, pattern);
}

static void group_reset(struct dc *k)
{
    const struct vidmm_driver_ops *o = k->drv.ops;
    if (o->reset_from_timeout) {
        /* Work queued, then the reset: whatever was dropped, the driver
         * runs new buffers afterwards. */
        if (k->mem)
            for (int i = 0; i < 4; i++) {
                struct vidmm_build_paging_buffer_args a = dc_req(VIDMM_PAGING_FILL);
                a.u.fill.fill_size = 65536;
                a.u.fill.destination_segment_id = k->mem;
                a.u.fill.destination_segment_address = k->seg[k->mem].base_address;
                uint8_t *buf = aligned_alloc(DC_PAGE, DC_PAGE);
                if (!buf)
                    break;
                a.dma_buffer = buf;
                a.dma_size = DC_PAGE;
                uint64_t f;
                if (o->build_paging_buffer(k->drv.driver, &a) == VIDMM_OK)
                    dc_submit(k, buf, (uint32_t)((uint8_t *)a.dma_buffer - buf), &f);
                if (k->drv.wait_idle)
                    k->drv.wait_idle(k->drv.driver);   /* the buffer must outlive its run */
                free(buf);
            }
        vidmm_status st = o->reset_from_timeout(k->drv.driver);
        CHECK(k, st == VIDMM_OK, "reset_from_timeout", "%s", vidmm_status_str(st));
        if (o->restart_from_timeout) {
            st = o->restart_from_timeout(k->drv.driver);
            CHECK(k, st == VIDMM_OK, "restart_from_timeout", "%s", vidmm_status_str(st));
        }
        CHECK(k, dc_alive(k, 0x0BADF00Du), "runs_after_reset", "a buffer after the reset did not run");
    } else {
        SKIP(k, "reset_from_timeout", "op not implemented: a hang then puts every device in error");
    }
    if (o->set_power_state) {
        uint32_t keep = 0;             /* a memory segment preserved through standby, CPU-readable */
        if (k->mem && (k->seg[k->mem].flags & VIDMM_SEGMENT_PRESERVED_DURING_STANDBY))
            keep = k->mem;
        if (keep)
            dc_fill(k, keep, 65536, 65536, 0x5EED5EEDu, 0, NULL);
        vidmm_status st = o->set_power_state(k->drv.driver, VIDMM_POWER_STANDBY);
        CHECK(k, st == VIDMM_OK, "standby", "%s", vidmm_status_str(st));
        st = o->set_power_state(k->drv.driver, VIDMM_POWER_D0);
        CHECK(k, st == VIDMM_OK, "resume", "%s", vidmm_status_str(st));
        if (keep) {
            uint8_t b[65536];
            dc_read(k, keep, 65536, b, sizeof b);
            CHECK(k, dc_is_pattern(b, sizeof b, 0x5EED5EEDu), "standby_preserved",
                  "segment %u is PreservedDuringStandby but lost its bytes", keep);
        }
        st = o->set_power_state(k->drv.driver, VIDMM_POWER_HIBERNATE);
        vidmm_status st2 = o->set_power_state(k->drv.driver, VIDMM_POWER_D0);
        CHECK(k, st == VIDMM_OK && st2 == VIDMM_OK, "hibernate", "%s, %s", vidmm_status_str(st),
              vidmm_status_str(st2));
        st = o->set_power_state(k->drv.driver, 7);
        CHECK(k, st < 0, "bad_state", "power state 7 answered %s", vidmm_status_str(st));
        CHECK(k, dc_alive(k, 0x600DF00Du), "runs_after_resume", "a buffer after resume did not run");
    } else {
        SKIP(k, "set_power_state", "op not implemented: vidmm changes state alone");
    }
    if (o->reset_engine) {
        struct vidmm_reset_engine_args r;
        memset(&r, 0, sizeof r);
        vidmm_status st = o->reset_engine(k->drv.driver, &r);
        CHECK(k, st == VIDMM_OK && r.context == 0, "reset_idle_engine",
              "%s, context %llu (an idle engine has nothing to abort)", vidmm_status_str(st),
              (unsigned long long)r.context);
    }
    if (o->query_engine_status) {
        uint32_t resp = 0, resp2 = 0;
        vidmm_status st = o->query_engine_status(k->drv.driver, 0, &resp);
        vidmm_status st2 = o->query_engine_status(k->drv.driver, VIDMM_PAGING_ENGINE, &resp2);
        CHECK(k, st == VIDMM_OK && st2 == VIDMM_OK && resp == 1 && resp2 == 1, "idle_engine_responsive",
              "%s/%s, responsive %u/%u", vidmm_status_str(st), vidmm_status_str(st2), resp, resp2);
    }
}

/* ------------------------------------------------------------------ */
/* group vidmm                                                          */
/* ------------------------------------------------------------------ */

#define DC_ALLOC (1u << 20)
#define DC_MAX_ALLOCS 96u

static int dc_write_alloc(struct dc *k, struct vidmm_adapter *a, vidmm_handle h, uint32_t seed)
{
    uint8_t *p = NULL;
    if (DC_CALL(k, vidmm_allocation_lock(a, h, (void **)&p)) < 0)
        return -1;
    dc_random(p, DC_ALLOC, seed);
    return DC_CALL(k, vidmm_allocation_unlock(a, h));
}

static int dc_alloc_ok(struct dc *k, struct vidmm_adapter *a, vidmm_handle h, uint32_t seed)
{
    uint8_t *p = NULL;
    if (DC_CALL(k, vidmm_allocation_lock(a, h, (void **)&p)) < 0)
        return 0;
    int ok = 1;
    for (uint64_t i = 0; i < DC_ALLOC && ok; i++)
        ok = p[i] == dc_byte(seed, i);
    DC_CALL(k, vidmm_allocation_unlock(a, h));
    return ok;
}

static vidmm_status dc_resident(struct dc *k, struct vidmm_adapter *a, vidmm_handle dev, vidmm_handle q,
                                const vidmm_handle *h, uint32_t n)
{
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof mr);
    mr.paging_queue = q;
    mr.allocations = h;
    mr.count = n;
    vidmm_status st = vidmm_make_resident(a, dev, &mr);
    if (st == VIDMM_E_OVER_BUDGET) {
        mr.flags = VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER;
        st = vidmm_make_resident(a, dev, &mr);
    }
    DC_CALL(k, st);   /* make-resident */
    if (st == VIDMM_PENDING)
        st = DC_CALL(k, vidmm_paging_queue_wait(a, q, mr.paging_fence_value, 5000000000ull));
    return st;
}

/* 1 when every memory segment is CPU-visible.  Otherwise a lock of a
 * resident allocation moves it where the CPU can reach it (the aperture
 * or system memory): the kit then evicts a group before it reads and
 * writes it, so its bytes go through the driver's VRAM and back, and
 * the locks never move them. */
static int dc_memory_cpu_visible(const struct dc *k)
{
    for (uint32_t id = 1; id <= k->nb; id++)
        if (!(k->seg[id].flags & (VIDMM_SEGMENT_APERTURE | VIDMM_SEGMENT_AGP | VIDMM_SEGMENT_CPU_VISIBLE)))
            return 0;
    return 1;
}

/* One pass over the allocations, group by group: make resident, then
 * (per the segments) evict, then check every byte through a lock and
 * rewrite with the next seed (rewrite 0: check only).  Counts the
 * make-resident calls that failed and the allocations with other bytes. */
static void dc_pass(struct dc *k, struct vidmm_adapter *a, vidmm_handle dev, vidmm_handle q, vidmm_handle *h,
                    uint32_t *seed, uint32_t made, int rewrite, unsigned *failed, unsigned *bad)
{
    const uint32_t group = 4;
    const int evict_first = !dc_memory_cpu_visible(k);
    for (uint32_t g = 0; g + group <= made; g += group) {
        if (dc_resident(k, a, dev, q, &h[g], group) != VIDMM_OK) {
            (*failed)++;
            continue;
        }
        struct vidmm_evict_args ev = { .allocations = &h[g], .count = group,
                                       .flags = evict_first ? 0 : VIDMM_EVICT_ONLY_IF_NECESSARY };
        if (evict_first)
            DC_CALL(k, vidmm_evict(a, dev, &ev));
        for (uint32_t i = g; i < g + group; i++) {
            *bad += !dc_alloc_ok(k, a, h[i], seed[i]);
            if (rewrite) {
                seed[i] += 1000;
                dc_write_alloc(k, a, h[i], seed[i]);
            }
        }
        if (!evict_first)
            DC_CALL(k, vidmm_evict(a, dev, &ev));
    }
}

static void group_vidmm(struct dc *k)
{
    unsigned char pd[512];
    size_t pds = k->drv.private_data ? k->drv.private_data(k->drv.driver, DC_ALLOC, pd, sizeof pd) : 0;
    if (!pds) {
        SKIP(k, "all", "the driver gives no private data for a CPU-visible allocation");
        return;
    }
    k->why[0] = '\0';
    struct dc_proxy px;
    dc_proxy_init(&px, k);
    px.force_restart = 1;
    struct vidmm_adapter *a = NULL;
    char msg[256];
    vidmm_status st = dc_adapter_open(&px, &a, msg, sizeof msg);
    CHECK(k, st == VIDMM_OK, "open", "vidmm_adapter_open returned %s: %s", vidmm_status_str(st), msg);
    if (!a)
        return;
    /* Three times what the memory segments hold, at most DC_MAX_ALLOCS
     * MiB, so eviction must happen and the run stays short. */
    uint64_t local = 0;
    for (uint32_t id = 1; id <= k->nb; id++)
        if (!(k->seg[id].flags & (VIDMM_SEGMENT_APERTURE | VIDMM_SEGMENT_AGP)))
            local += k->seg[id].size;
    uint32_t n = (uint32_t)(local * 3 / DC_ALLOC);
    if (n > DC_MAX_ALLOCS)
        n = DC_MAX_ALLOCS;
    if (n < 8)
        n = 8;
    vidmm_handle proc = 0, dev = 0, q = 0, h[DC_MAX_ALLOCS];
    uint32_t seed[DC_MAX_ALLOCS];
    int ok = DC_CALL(k, vidmm_process_create(a, &proc)) == VIDMM_OK &&
             DC_CALL(k, vidmm_device_create(a, proc, &dev)) == VIDMM_OK &&
             DC_CALL(k, vidmm_paging_queue_create(a, dev, VIDMM_PAGING_QUEUE_NORMAL, &q)) == VIDMM_OK;
    CHECK(k, ok, "process_device", "%s", dc_why(k));
    uint32_t made = 0;
    for (uint32_t i = 0; ok && i < n; i++) {
        pds = k->drv.private_data(k->drv.driver, DC_ALLOC, pd, sizeof pd);
        if (DC_CALL(k, vidmm_device_allocation_create(a, dev, pd, pds, 0, &h[i])) < 0)
            break;
        made++;
        seed[i] = 100 + i;
        if (dc_write_alloc(k, a, h[i], seed[i]) < 0)
            ok = 0;
    }
    CHECK(k, ok && made == n, "create", "%u of %u allocations created and written: %s", made, n, dc_why(k));
    unsigned bad = 0, failed = 0;
    for (uint32_t round = 0; ok && round < 2; round++)
        dc_pass(k, a, dev, q, h, seed, made, 1, &failed, &bad);
    CHECK(k, failed == 0, "make_resident", "%u make-resident calls failed: %s", failed, dc_why(k));
    CHECK(k, bad == 0, "bytes", "%u allocations came back with other bytes (%s)", bad, dc_why(k));
    struct vidmm_residency_stats rs;
    DC_CALL(k, vidmm_residency_get_stats(a, &rs));
    CHECK(k, rs.evictions > 0 && rs.restores > 0, "evicts_and_restores", "%llu evictions, %llu restores (%s)",
          (unsigned long long)rs.evictions, (unsigned long long)rs.restores, dc_why(k));
    struct vidmm_adapter_info ai;
    DC_CALL(k, vidmm_adapter_query_info(a, &ai));
    CHECK(k, ai.paging_restarts > 0, "restarts_forced", "no restart happened (%s)", dc_why(k));

    /* Standby and back: vidmm saves what the driver's segments lose. */
    st = DC_CALL(k, vidmm_adapter_set_power_state(a, VIDMM_POWER_STANDBY));
    vidmm_status st2 = DC_CALL(k, vidmm_adapter_set_power_state(a, VIDMM_POWER_D0));
    CHECK(k, st == VIDMM_OK && st2 == VIDMM_OK, "standby_resume", "%s", dc_why(k));
    bad = 0;
    failed = 0;
    dc_pass(k, a, dev, q, h, seed, made, 0, &failed, &bad);
    CHECK(k, bad == 0 && failed == 0, "bytes_after_resume",
          "%u allocations lost bytes across standby, %u make-resident calls failed (%s)", bad, failed, dc_why(k));
    CHECK(k, vidmm_adapter_check(a, msg, sizeof msg) == 0, "adapter_check", "%s", msg);
    if (k->drv.signals_through_env) {
        pthread_mutex_lock(&k->rec.lock);
        CHECK(k, k->rec.regressions == 0 && k->rec.beyond == 0, "fences",
              "%u fences repeated or went back, %u beyond the last submitted", k->rec.regressions, k->rec.beyond);
        pthread_mutex_unlock(&k->rec.lock);
    }
    for (uint32_t i = 0; i < made; i++)
        vidmm_allocation_destroy(a, h[i]);
    vidmm_device_destroy(a, dev);
    vidmm_process_destroy(a, proc);
    vidmm_adapter_close(a);
    pthread_mutex_lock(&k->rec.lock);
    k->rec.forward = NULL;
    pthread_mutex_unlock(&k->rec.lock);
}

/* ------------------------------------------------------------------ */
/* The run                                                              */
/* ------------------------------------------------------------------ */

static const struct {
    const char *name;
    void (*run)(struct dc *k);
} dc_groups[] = {
    { "query", group_query },     { "describe", group_describe }, { "restart", group_restart },
    { "paging", group_paging },   { "fences", group_fences },     { "reset", group_reset },
    { "vidmm", group_vidmm },
};

static int dc_selected(const char *groups, const char *name)
{
    if (!groups || !*groups)
        return 1;
    size_t n = strlen(name);
    for (const char *p = groups; (p = strstr(p, name)) != NULL; p += n)
        if ((p == groups || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
            return 1;
    return 0;
}

unsigned drvcheck_run(drvcheck_ctor ctor, const char *options, const char *groups, int verbose, FILE *out,
                      struct drvcheck_result *result)
{
    struct dc *k = calloc(1, sizeof *k);
    if (!k || !ctor) {
        free(k);
        return 1;
    }
    k->ctor = ctor;
    k->out = out ? out : stdout;
    k->verbose = verbose;
    k->env.notify_fence = dc_notify_fence;
    k->env.notify_context_fence = dc_notify_context_fence;
    k->env.notify_page_fault = dc_notify_page_fault;
    k->env.options = options;
    k->rec.magic = DC_MAGIC;
    pthread_mutex_init(&k->rec.lock, NULL);
    pthread_cond_init(&k->rec.cond, NULL);
    const char *name = NULL;
    for (size_t g = 0; g < sizeof dc_groups / sizeof dc_groups[0]; g++) {
        if (!dc_selected(groups, dc_groups[g].name))
            continue;
        k->group = dc_groups[g].name;
        if (dc_open(k) < 0)
            continue;
        if (!name && k->drv.name)
            name = k->drv.name;
        dc_groups[g].run(k);
        dc_close(k);
    }
    fprintf(k->out, "drvcheck %s: %u passed, %u failed, %u skipped\n", name ? name : "driver", k->res.passed,
            k->res.failed, k->res.skipped);
    if (result)
        *result = k->res;
    unsigned failed = k->res.failed;
    pthread_cond_destroy(&k->rec.cond);
    pthread_mutex_destroy(&k->rec.lock);
    free(k);
    return failed;
}
