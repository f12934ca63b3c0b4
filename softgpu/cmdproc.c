/*
 * cmdproc.c - softgpu's engines (nodes) and their command processor:
 * the work of contexts, as opposed to the copy engine's paging buffers.
 *
 * softgpu has SOFTGPU_NODES engines.  Each keeps a FIFO of submitted
 * command buffers (any context, either mode) and runs them one at a time
 * in submission order; by default on a thread of its own, in synchronous
 * mode inside the submit call (a "pump" runs every node until none can
 * progress, so cross-node WAIT/SIGNAL works there too), in manual mode
 * one job at a time when the harness calls softgpu_step.
 *
 * Addresses.  A virtual-mode buffer lives at a GPU virtual address and
 * every address in it is virtual: the processor walks the page tables of
 * the root bound to the context's token (set_root_page_table) with the
 * MMU walker, page by page, and never looks at vidmm's state.  A
 * physical-mode buffer is host memory whose address operands vidmm's
 * patch op filled with SOFTGPU_PADDR(segment, offset).  A fault -
 * an invalid or protected VA, an unmapped aperture page, an address
 * outside its segment, or a malformed command met while running a
 * virtual buffer (reported as an execute fault at the command) - stops
 * the buffer; it is reported with vidmm_cb_notify_page_fault(adapter,
 * context token, address, flags) and the context fence is then signalled
 * (the packet is over, as WDDM treats a faulted packet), so vidmm's
 * lifetimes move on while the device sits in the error state.
 *
 * WAIT stalls its node (no other buffer of that node runs) until the
 * 64-bit word reaches the value; SIGNAL wakes stalled nodes.  A node
 * stalled forever is a hang; vidmm's timeout handles it.
 *
 * Locking.  Execution takes softgpu's lock once the copy engine is idle
 * (softgpu_lock_idle), so contexts' work and paging never touch memory at the
 * same time and the test accessors see whole buffers: one memory port.
 * The queues have their own lock (cp->lock), taken after softgpu's when
 * both are needed.  Callbacks into vidmm are made with neither held.
 */
#include "softgpu_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SOFTGPU_NODE_QUEUE 64u
#define SOFTGPU_CMD_MAX 40u          /* largest command (COMPARE) */

struct softgpu_cjob {
    struct vidmm_adapter *adapter;
    uint64_t context;
    uint64_t fence;
    uint64_t va;                /* virtual mode: the buffer's GPU VA */
    const uint8_t *buf;         /* physical mode (NULL: virtual) */
    uint32_t size;
    uint32_t pos;               /* next command: a stalled job resumes here */
};

struct softgpu_node {
    struct softgpu_cjob queue[SOFTGPU_NODE_QUEUE];
    uint32_t head, count;
    int stalled;                /* the head job waits (WAIT not satisfied) */
    int executing;              /* the node's thread runs the head job outside cp->lock */
    int dropped;                /* a reset emptied the queue while it ran */
    pthread_t thread;
    int running;
    pthread_cond_t work;
    int work_ok;
    struct softgpu_cmdproc *cp;      /* back pointer for the node's thread */
    uint32_t id;
};

struct softgpu_cmdproc {
    pthread_mutex_t lock;
    pthread_cond_t space;       /* submitters: an entry was freed */
    int lock_ok, space_ok;
    int synchronous;
    int manual;                 /* SOFTGPU_SCHED_MANUAL: no threads, softgpu_step runs jobs */
    int stop;
    uint64_t signals;           /* bumped by every SIGNAL: stalled nodes look again */
    struct softgpu *sg;
    struct softgpu_node node[SOFTGPU_NODES];
};

/* What one run of a job produced, for the callbacks after the locks. */
enum softgpu_run_result { SOFTGPU_RUN_DONE, SOFTGPU_RUN_STALLED, SOFTGPU_RUN_FAULT };

struct softgpu_report {
    struct vidmm_adapter *adapter;
    uint64_t context, fence, fault_addr;
    uint32_t node, fault_flags;
    int faulted;
};

/* ---- builders ------------------------------------------------------------ */

static vidmm_status softgpu_put(struct softgpu_cmdbuf *cb, uint16_t op, const uint64_t *ops, uint32_t n)
{
    uint32_t size = 8u + 8u * n;
    if (!cb || !cb->data || cb->size > cb->capacity || cb->capacity - cb->size < size)
        return VIDMM_E_INVALID_ARG;
    uint8_t *p = (uint8_t *)cb->data + cb->size;
    struct softgpu_cmd_hdr h = { op, 0, size };
    memcpy(p, &h, sizeof h);
    if (n)
        memcpy(p + 8, ops, 8u * n);   /* NOP has no operands (and a NULL array) */
    cb->size += size;
    return VIDMM_OK;
}

vidmm_status softgpu_cmd_nop(struct softgpu_cmdbuf *cb)
{
    return softgpu_put(cb, SOFTGPU_CMD_NOP, NULL, 0);
}

vidmm_status softgpu_cmd_write32(struct softgpu_cmdbuf *cb, uint64_t addr, uint32_t value)
{
    uint64_t o[2] = { addr, value };
    return softgpu_put(cb, SOFTGPU_CMD_WRITE32, o, 2);
}

vidmm_status softgpu_cmd_write64(struct softgpu_cmdbuf *cb, uint64_t addr, uint64_t value)
{
    uint64_t o[2] = { addr, value };
    return softgpu_put(cb, SOFTGPU_CMD_WRITE64, o, 2);
}

vidmm_status softgpu_cmd_copy(struct softgpu_cmdbuf *cb, uint64_t dst, uint64_t src, uint64_t size)
{
    uint64_t o[3] = { dst, src, size };
    return softgpu_put(cb, SOFTGPU_CMD_COPY, o, 3);
}

vidmm_status softgpu_cmd_fill(struct softgpu_cmdbuf *cb, uint64_t dst, uint64_t size, uint32_t pattern)
{
    uint64_t o[3] = { dst, size, pattern };
    return softgpu_put(cb, SOFTGPU_CMD_FILL, o, 3);
}

vidmm_status softgpu_cmd_checksum(struct softgpu_cmdbuf *cb, uint64_t src, uint64_t size, uint64_t result)
{
    uint64_t o[3] = { src, size, result };
    return softgpu_put(cb, SOFTGPU_CMD_CHECKSUM, o, 3);
}

vidmm_status softgpu_cmd_compare(struct softgpu_cmdbuf *cb, uint64_t a, uint64_t b, uint64_t size, uint64_t result)
{
    uint64_t o[4] = { a, b, size, result };
    return softgpu_put(cb, SOFTGPU_CMD_COMPARE, o, 4);
}

vidmm_status softgpu_cmd_signal(struct softgpu_cmdbuf *cb, uint64_t addr, uint64_t value)
{
    uint64_t o[2] = { addr, value };
    return softgpu_put(cb, SOFTGPU_CMD_SIGNAL, o, 2);
}

vidmm_status softgpu_cmd_wait(struct softgpu_cmdbuf *cb, uint64_t addr, uint64_t value)
{
    uint64_t o[2] = { addr, value };
    return softgpu_put(cb, SOFTGPU_CMD_WAIT, o, 2);
}

#define SOFTGPU_FNV_BASIS 0xcbf29ce484222325ull
#define SOFTGPU_FNV_PRIME 0x100000001b3ull

static uint64_t softgpu_fnv(uint64_t h, const uint8_t *p, uint64_t n)
{
    for (uint64_t i = 0; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * SOFTGPU_FNV_PRIME;
    }
    return h;
}

uint64_t softgpu_checksum(const void *data, uint64_t size)
{
    return data ? softgpu_fnv(SOFTGPU_FNV_BASIS, data, size & ~7ull) : SOFTGPU_FNV_BASIS;
}

/* ---- command sizes --------------------------------------------------------- */

static uint32_t softgpu_cmd_size(uint16_t op)
{
    switch (op) {
    case SOFTGPU_CMD_NOP: return 8;
    case SOFTGPU_CMD_WRITE32:
    case SOFTGPU_CMD_WRITE64:
    case SOFTGPU_CMD_SIGNAL:
    case SOFTGPU_CMD_WAIT: return 24;
    case SOFTGPU_CMD_COPY:
    case SOFTGPU_CMD_FILL:
    case SOFTGPU_CMD_CHECKSUM: return 32;
    case SOFTGPU_CMD_COMPARE: return 40;
    default: return 0;
    }
}

/* A header that names a known command of the right size inside the
 * buffer, with flags 0 and sane operands. */
static int softgpu_cmd_ok(const uint8_t *c, uint32_t left)
{
    struct softgpu_cmd_hdr h;
    if (left < 8)
        return 0;
    memcpy(&h, c, sizeof h);
    uint32_t want = softgpu_cmd_size(h.opcode);
    if (!want || h.size != want || h.flags || h.size > left)
        return 0;
    if (h.opcode == SOFTGPU_CMD_CHECKSUM) {
        uint64_t src, size;
        memcpy(&src, c + 8, 8);
        memcpy(&size, c + 16, 8);
        if ((src | size) & 7u)
            return 0;
    }
    return 1;
}

/* ---- memory access ----------------------------------------------------------- */

struct softgpu_xctx {
    struct softgpu *sg;
    int virt;
    struct vidmm_physical_address root;
    int signalled;
    uint64_t fault_addr;
    uint32_t fault_flags;
};

/* Host bytes behind addr, valid for *run (<= len) bytes; *host NULL for a
 * zero page.  -1 on a fault (recorded in x). */
static int softgpu_span(struct softgpu_xctx *x, uint64_t addr, uint64_t len, int write, uint8_t **host, uint64_t *run)
{
    struct softgpu *sg = x->sg;
    if (x->virt) {
        uint32_t ff = 0;
        if (softgpu_mmu_access(sg, &x->root, addr, write ? SOFTGPU_ACCESS_WRITE : SOFTGPU_ACCESS_READ, host, run, &ff) !=
            VIDMM_OK) {
            x->fault_addr = addr;
            x->fault_flags = ff;
            return -1;
        }
        if (*run > len)
            *run = len;
        return 0;
    }
    uint32_t seg = (uint32_t)(addr >> 56);
    uint64_t off = addr & ((1ull << 56) - 1);
    const struct softgpu_segment *s = seg && seg <= sg->nb_segment ? &sg->seg[seg] : NULL;
    if (!s || off >= s->size || len > s->size - off) {
        x->fault_addr = addr;
        x->fault_flags = VIDMM_FAULT_NOT_PRESENT | (write ? VIDMM_FAULT_WRITE : 0);
        return -1;
    }
    int mapped;
    *host = softgpu_resolve(sg, s, off, len, run, &mapped);
    if (!mapped) {   /* the dummy page: a stray physical access is reported, not absorbed */
        x->fault_addr = addr;
        x->fault_flags = VIDMM_FAULT_NOT_PRESENT | (write ? VIDMM_FAULT_WRITE : 0);
        return -1;
    }
    return 0;
}

static int softgpu_xread(struct softgpu_xctx *x, uint64_t addr, void *dst, uint64_t len)
{
    for (uint64_t done = 0; done < len;) {
        uint8_t *h;
        uint64_t run;
        if (softgpu_span(x, addr + done, len - done, 0, &h, &run) < 0)
            return -1;
        if (h)
            memcpy((uint8_t *)dst + done, h, (size_t)run);
        else
            memset((uint8_t *)dst + done, 0, (size_t)run);
        done += run;
    }
    return 0;
}

static int softgpu_xwrite(struct softgpu_xctx *x, uint64_t addr, const void *src, uint64_t len)
{
    /* Every page is checked before the first byte is stored: a faulting
     * write changes nothing. */
    for (uint64_t done = 0; done < len;) {
        uint8_t *h;
        uint64_t run;
        if (softgpu_span(x, addr + done, len - done, 1, &h, &run) < 0)
            return -1;
        done += run;
    }
    for (uint64_t done = 0; done < len;) {
        uint8_t *h;
        uint64_t run;
        (void)softgpu_span(x, addr + done, len - done, 1, &h, &run);
        if (h)
            memcpy(h, (const uint8_t *)src + done, (size_t)run);
        done += run;
    }
    return 0;
}

static int softgpu_xcopy(struct softgpu_xctx *x, uint64_t dst, uint64_t src, uint64_t len)
{
    for (uint64_t done = 0; done < len;) {
        uint8_t *d, *s;
        uint64_t rd, rs;
        if (softgpu_span(x, src + done, len - done, 0, &s, &rs) < 0 || softgpu_span(x, dst + done, len - done, 1, &d, &rd) < 0)
            return -1;
        uint64_t n = rd < rs ? rd : rs;
        if (d && s)
            memmove(d, s, (size_t)n);
        else if (d)
            memset(d, 0, (size_t)n);
        done += n;
    }
    return 0;
}

static int softgpu_xfill(struct softgpu_xctx *x, uint64_t dst, uint64_t len, uint32_t pattern)
{
    for (uint64_t done = 0; done < len;) {
        uint8_t *d;
        uint64_t run;
        if (softgpu_span(x, dst + done, len - done, 1, &d, &run) < 0)
            return -1;
        if (d) {
            /* Byte i of the fill is byte i mod 4 of the pattern. */
            unsigned r = (unsigned)(done & 3u) * 8u;
            uint32_t p = r ? (pattern >> r) | (pattern << (32u - r)) : pattern;
            softgpu_fill(x->sg, d, run, p);
        }
        done += run;
    }
    return 0;
}

static int softgpu_xchecksum(struct softgpu_xctx *x, uint64_t src, uint64_t len, uint64_t *out)
{
    static const uint8_t zeros[SOFTGPU_PAGE_4K];
    uint64_t h = SOFTGPU_FNV_BASIS;
    for (uint64_t done = 0; done < len;) {
        uint8_t *s;
        uint64_t run;
        if (softgpu_span(x, src + done, len - done, 0, &s, &run) < 0)
            return -1;
        if (s) {
            h = softgpu_fnv(h, s, run);
        } else {
            for (uint64_t z = 0; z < run; z += sizeof zeros)
                h = softgpu_fnv(h, zeros, run - z < sizeof zeros ? run - z : sizeof zeros);
        }
        done += run;
    }
    *out = h;
    return 0;
}

static int softgpu_xcompare(struct softgpu_xctx *x, uint64_t a, uint64_t b, uint64_t len, uint64_t *out)
{
    static const uint8_t zeros[SOFTGPU_PAGE_4K];
    *out = 0;
    for (uint64_t done = 0; done < len;) {
        uint8_t *pa, *pb;
        uint64_t ra, rb;
        if (softgpu_span(x, a + done, len - done, 0, &pa, &ra) < 0 || softgpu_span(x, b + done, len - done, 0, &pb, &rb) < 0)
            return -1;
        uint64_t n = ra < rb ? ra : rb;
        if (n > sizeof zeros && (!pa || !pb))
            n = sizeof zeros;
        const uint8_t *qa = pa ? pa : zeros, *qb = pb ? pb : zeros;
        if (memcmp(qa, qb, (size_t)n) != 0) {
            uint64_t i = 0;
            while (qa[i] == qb[i])
                i++;
            *out = done + i + 1;
            return 0;
        }
        done += n;
    }
    return 0;
}

/* ---- execution --------------------------------------------------------------- */

static uint64_t op64(const uint8_t *c, uint32_t n)
{
    uint64_t v;
    memcpy(&v, c + SOFTGPU_CMD_OPERAND(n), 8);
    return v;
}

/* Run job from its position until it ends, stalls or faults.  softgpu's
 * lock is held. */
static enum softgpu_run_result softgpu_run(struct softgpu *sg, struct softgpu_cjob *j, struct softgpu_xctx *x)
{
    memset(x, 0, sizeof *x);
    x->sg = sg;
    x->virt = j->buf == NULL;
    if (x->virt) {
        uint32_t i = 0;
        while (i < sg->nroots && sg->roots[i].context != j->context)
            i++;
        if (i == sg->nroots) {
            x->fault_addr = j->va;   /* no address space bound to the context */
            x->fault_flags = VIDMM_FAULT_NOT_PRESENT | VIDMM_FAULT_EXECUTE;
            return SOFTGPU_RUN_FAULT;
        }
        x->root.segment_id = sg->roots[i].segment_id;
        x->root.segment_offset = sg->roots[i].offset;
    }
    while (j->pos < j->size) {
        uint8_t c[SOFTGPU_CMD_MAX];
        uint32_t left = j->size - j->pos;
        if (x->virt) {
            /* The buffer is read through the MMU, as the GPU fetches it. */
            if (softgpu_xread(x, j->va + j->pos, c, 8) < 0)
                return SOFTGPU_RUN_FAULT;
            struct softgpu_cmd_hdr h;
            memcpy(&h, c, sizeof h);
            uint32_t n = softgpu_cmd_size(h.opcode);
            if (n > 8 && n <= left && softgpu_xread(x, j->va + j->pos + 8, c + 8, n - 8) < 0)
                return SOFTGPU_RUN_FAULT;
            if (!softgpu_cmd_ok(c, left)) {
                x->fault_addr = j->va + j->pos;
                x->fault_flags = VIDMM_FAULT_EXECUTE;
                return SOFTGPU_RUN_FAULT;
            }
        } else {
            struct softgpu_cmd_hdr h;
            memcpy(&h, j->buf + j->pos, sizeof h);
            memcpy(c, j->buf + j->pos, h.size);   /* validated at submission */
        }
        struct softgpu_cmd_hdr h;
        memcpy(&h, c, sizeof h);
        uint64_t v;
        int r = 0;
        switch (h.opcode) {
        case SOFTGPU_CMD_NOP:
            break;
        case SOFTGPU_CMD_WRITE32: {
            uint32_t w = (uint32_t)op64(c, 1);
            r = softgpu_xwrite(x, op64(c, 0), &w, 4);
            break;
        }
        case SOFTGPU_CMD_WRITE64:
        case SOFTGPU_CMD_SIGNAL:
            v = op64(c, 1);
            r = softgpu_xwrite(x, op64(c, 0), &v, 8);
            if (h.opcode == SOFTGPU_CMD_SIGNAL && r == 0)
                x->signalled = 1;
            break;
        case SOFTGPU_CMD_COPY:
            r = softgpu_xcopy(x, op64(c, 0), op64(c, 1), op64(c, 2));
            break;
        case SOFTGPU_CMD_FILL:
            r = softgpu_xfill(x, op64(c, 0), op64(c, 1), (uint32_t)op64(c, 2));
            break;
        case SOFTGPU_CMD_CHECKSUM:
            r = softgpu_xchecksum(x, op64(c, 0), op64(c, 1), &v);
            if (r == 0)
                r = softgpu_xwrite(x, op64(c, 2), &v, 8);
            break;
        case SOFTGPU_CMD_COMPARE:
            r = softgpu_xcompare(x, op64(c, 0), op64(c, 1), op64(c, 2), &v);
            if (r == 0)
                r = softgpu_xwrite(x, op64(c, 3), &v, 8);
            break;
        case SOFTGPU_CMD_WAIT:
            r = softgpu_xread(x, op64(c, 0), &v, 8);
            if (r == 0 && v < op64(c, 1))
                return SOFTGPU_RUN_STALLED;   /* resumes at this command */
            break;
        default:
            break;   /* unreachable: checked above */
        }
        if (r < 0)
            return SOFTGPU_RUN_FAULT;
        sg->stats.commands++;
        j->pos += h.size;
    }
    return SOFTGPU_RUN_DONE;
}

/* The job finished (or faulted): count it and prepare its callbacks. */
static void softgpu_finish(struct softgpu *sg, const struct softgpu_cjob *j, uint32_t node, enum softgpu_run_result r,
                      const struct softgpu_xctx *x, struct softgpu_report *rep)
{
    sg->stats.command_buffers++;
    memset(rep, 0, sizeof *rep);
    rep->adapter = j->adapter;
    rep->context = j->context;
    rep->fence = j->fence;
    rep->node = node;
    if (r == SOFTGPU_RUN_FAULT) {
        sg->stats.command_faults++;
        rep->faulted = 1;
        rep->fault_addr = x->fault_addr;
        rep->fault_flags = x->fault_flags;
    }
}

/* Outside every softgpu lock: the fault first (the device is in error
 * before anyone sees the fence), then the fence. */
static void softgpu_deliver(const struct softgpu_report *rep)
{
    if (!rep->adapter)
        return;
    if (rep->faulted)
        vidmm_cb_notify_page_fault(rep->adapter, rep->context, rep->fault_addr, rep->fault_flags);
    vidmm_cb_notify_context_fence(rep->adapter, rep->context, rep->node, rep->fence);
}

/* Other nodes may be stalled on what was just signalled.  cp->lock held. */
static void softgpu_wake_all(struct softgpu_cmdproc *cp)
{
    cp->signals++;
    for (uint32_t n = 0; n < SOFTGPU_NODES; n++)
        pthread_cond_broadcast(&cp->node[n].work);
}

static void *softgpu_node_main(void *arg)
{
    struct softgpu_node *nd = arg;
    struct softgpu_cmdproc *cp = nd->cp;
    uint32_t id = nd->id;
    struct softgpu *sg = cp->sg;
    pthread_mutex_lock(&cp->lock);
    for (;;) {
        uint64_t seen = cp->signals;
        while (!cp->stop && nd->count == 0)
            pthread_cond_wait(&nd->work, &cp->lock);
        if (nd->count == 0 || (cp->stop && nd->stalled))
            break;   /* stopping: drained, or only a stalled buffer is left (it would never end) */
        if (nd->stalled && seen == cp->signals) {
            /* Stalled: look again on a SIGNAL, or every millisecond (the
             * CPU may write the word through an accessor). */
            struct timespec t;
            clock_gettime(CLOCK_REALTIME, &t);
            t.tv_nsec += 1000000;
            if (t.tv_nsec >= 1000000000) {
                t.tv_sec++;
                t.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&nd->work, &cp->lock, &t);
            if (cp->stop || nd->count == 0 || !nd->stalled)
                continue;   /* stopping, or a reset took the stalled job away */
        }
        struct softgpu_cjob j = nd->queue[nd->head];
        nd->executing = 1;
        pthread_mutex_unlock(&cp->lock);

        softgpu_lock_idle(sg);
        struct softgpu_xctx x;
        enum softgpu_run_result r = softgpu_run(sg, &j, &x);
        struct softgpu_report rep;
        if (r != SOFTGPU_RUN_STALLED)
            softgpu_finish(sg, &j, id, r, &x, &rep);
        softgpu_unlock(sg);

        pthread_mutex_lock(&cp->lock);
        nd->executing = 0;
        pthread_cond_broadcast(&cp->space);   /* a reset may wait for the run to end */
        if (nd->dropped) {
            /* A reset dropped the queue while the job ran: it is over. */
            nd->dropped = 0;
            continue;
        }
        if (x.signalled)
            softgpu_wake_all(cp);
        if (r == SOFTGPU_RUN_STALLED) {
            nd->queue[nd->head].pos = j.pos;
            nd->stalled = 1;
            continue;
        }
        nd->stalled = 0;
        nd->head = (nd->head + 1) % SOFTGPU_NODE_QUEUE;
        nd->count--;
        pthread_cond_broadcast(&cp->space);
        pthread_mutex_unlock(&cp->lock);
        softgpu_deliver(&rep);
        pthread_mutex_lock(&cp->lock);
    }
    pthread_mutex_unlock(&cp->lock);
    return NULL;
}

/* Synchronous mode: run every node's queue until none progresses. */
static void softgpu_pump(struct softgpu *sg)
{
    struct softgpu_cmdproc *cp = sg->cp;
    struct softgpu_report reps[16];
    int progress = 1;
    while (progress) {
        progress = 0;
        uint32_t nrep = 0;
        softgpu_lock(sg);
        pthread_mutex_lock(&cp->lock);
        for (uint32_t id = 0; id < SOFTGPU_NODES && nrep < 16; id++) {
            struct softgpu_node *nd = &cp->node[id];
            while (nd->count && nrep < 16) {
                struct softgpu_cjob *j = &nd->queue[nd->head];
                struct softgpu_xctx x;
                enum softgpu_run_result r = softgpu_run(sg, j, &x);
                if (x.signalled)
                    cp->signals++;
                if (r == SOFTGPU_RUN_STALLED) {
                    nd->stalled = 1;
                    break;
                }
                softgpu_finish(sg, j, id, r, &x, &reps[nrep++]);
                nd->stalled = 0;
                nd->head = (nd->head + 1) % SOFTGPU_NODE_QUEUE;
                nd->count--;
                progress = 1;
            }
        }
        pthread_mutex_unlock(&cp->lock);
        softgpu_unlock(sg);
        for (uint32_t i = 0; i < nrep; i++)
            softgpu_deliver(&reps[i]);
    }
}

/* ---- driver ops ------------------------------------------------------------ */

/* Manual mode: run node's head job once, as one pass of the pump does.
 * 1 when it made progress. */
int softgpu_cmdproc_step(struct softgpu *sg, uint32_t node)
{
    struct softgpu_cmdproc *cp = sg->cp;
    struct softgpu_node *nd = &cp->node[node];
    struct softgpu_report rep;
    softgpu_lock(sg);
    pthread_mutex_lock(&cp->lock);
    if (!nd->count) {
        pthread_mutex_unlock(&cp->lock);
        softgpu_unlock(sg);
        return 0;
    }
    struct softgpu_cjob *j = &nd->queue[nd->head];
    uint32_t pos = j->pos;
    struct softgpu_xctx x;
    enum softgpu_run_result r = softgpu_run(sg, j, &x);
    if (x.signalled)
        cp->signals++;
    int done = r != SOFTGPU_RUN_STALLED;
    if (done) {
        softgpu_finish(sg, j, node, r, &x, &rep);
        nd->stalled = 0;
        nd->head = (nd->head + 1) % SOFTGPU_NODE_QUEUE;
        nd->count--;
    } else {
        nd->stalled = 1;
    }
    int progress = done || j->pos != pos;
    pthread_mutex_unlock(&cp->lock);
    softgpu_unlock(sg);
    if (done)
        softgpu_deliver(&rep);
    return progress;
}

void softgpu_cmdproc_pending(struct softgpu *sg, uint32_t node, uint32_t *queued, int *stalled)
{
    struct softgpu_cmdproc *cp = sg->cp;
    pthread_mutex_lock(&cp->lock);
    *queued = cp->node[node].count;
    *stalled = cp->node[node].count && cp->node[node].stalled;
    pthread_mutex_unlock(&cp->lock);
}

static vidmm_status softgpu_enqueue(struct softgpu *sg, const struct vidmm_submit_context_args *args, const uint8_t *buf)
{
    struct softgpu_cmdproc *cp = sg->cp;
    struct softgpu_node *nd = &cp->node[args->node];
    softgpu_note_work(sg);
    if (cp->manual && nd->count == SOFTGPU_NODE_QUEUE && !softgpu_cmdproc_step(sg, args->node))
        return VIDMM_E_BUSY;   /* a full ring behind a stalled head: nothing drains it but a reset */
    pthread_mutex_lock(&cp->lock);
    if (args->adapter)
        sg->adapter = args->adapter;
    while (nd->count == SOFTGPU_NODE_QUEUE) {
        if (cp->synchronous || cp->manual) {
            pthread_mutex_unlock(&cp->lock);
            return VIDMM_E_BUSY;   /* a stalled node behind a full queue: nothing would drain it */
        }
        pthread_cond_wait(&cp->space, &cp->lock);
    }
    struct softgpu_cjob *j = &nd->queue[(nd->head + nd->count) % SOFTGPU_NODE_QUEUE];
    memset(j, 0, sizeof *j);
    j->adapter = args->adapter;
    j->context = args->context;
    j->fence = args->fence;
    j->va = args->dma_buffer_virtual_address;
    j->buf = buf;
    j->size = args->dma_buffer_size;
    nd->count++;
    pthread_cond_broadcast(&nd->work);
    pthread_mutex_unlock(&cp->lock);
    if (cp->synchronous)
        softgpu_pump(sg);
    return VIDMM_OK;
}

vidmm_status softgpu_submit_command_virtual(void *driver, const struct vidmm_submit_context_args *args)
{
    struct softgpu *sg = driver;
    if (!sg || !args || args->node >= SOFTGPU_NODES || !args->dma_buffer_size || args->flags ||
        args->dma_buffer_virtual_address > UINT64_MAX - args->dma_buffer_size)
        return VIDMM_E_INVALID_ARG;
    if (!sg->mmu.levels)
        return VIDMM_E_NOT_SUPPORTED;   /* IoMmu preset: no page tables to walk */
    return softgpu_enqueue(sg, args, NULL);
}

vidmm_status softgpu_submit_command_physical(void *driver, const struct vidmm_submit_context_args *args)
{
    struct softgpu *sg = driver;
    if (!sg || !args || args->node >= SOFTGPU_NODES || !args->dma_buffer || !args->dma_buffer_size || args->flags)
        return VIDMM_E_INVALID_ARG;
    /* The buffer is host memory: check every command before it runs. */
    const uint8_t *b = args->dma_buffer;
    for (uint32_t o = 0; o < args->dma_buffer_size;) {
        if (!softgpu_cmd_ok(b + o, args->dma_buffer_size - o))
            return VIDMM_E_INVALID_ARG;
        struct softgpu_cmd_hdr h;
        memcpy(&h, b + o, sizeof h);
        o += h.size;
    }
    return softgpu_enqueue(sg, args, b);
}

vidmm_status softgpu_patch(void *driver, const struct vidmm_patch_args *args)
{
    struct softgpu *sg = driver;
    if (!sg || !args || !args->dma_buffer || (args->patch_location_list_size && !args->patch_location_list) ||
        (args->allocation_list_size && !args->allocation_list))
        return VIDMM_E_INVALID_ARG;
    /* All or nothing: check every location first. */
    for (uint32_t i = 0; i < args->patch_location_list_size; i++) {
        const struct vidmm_patch_location *p = &args->patch_location_list[i];
        if (p->allocation_index >= args->allocation_list_size || args->dma_buffer_size < 8 ||
            p->patch_offset > args->dma_buffer_size - 8)
            return VIDMM_E_INVALID_ARG;
        const struct vidmm_allocation_list_entry *e = &args->allocation_list[p->allocation_index];
        if (!e->segment_id || e->segment_id > sg->nb_segment || p->allocation_offset >= e->size)
            return VIDMM_E_INVALID_ARG;
    }
    for (uint32_t i = 0; i < args->patch_location_list_size; i++) {
        const struct vidmm_patch_location *p = &args->patch_location_list[i];
        const struct vidmm_allocation_list_entry *e = &args->allocation_list[p->allocation_index];
        uint64_t v = SOFTGPU_PADDR(e->segment_id, e->segment_offset + p->allocation_offset);
        memcpy((uint8_t *)args->dma_buffer + p->patch_offset, &v, 8);
    }
    return VIDMM_OK;
}

/* ---- resets ------------------------------------------------------------------ */

/* Wait until node's thread is not in the middle of a run.  cp->lock held. */
static void softgpu_node_quiesce(struct softgpu_cmdproc *cp, struct softgpu_node *nd)
{
    while (nd->executing)
        pthread_cond_wait(&cp->space, &cp->lock);
}

vidmm_status softgpu_reset_engine(void *driver, struct vidmm_reset_engine_args *args)
{
    struct softgpu *sg = driver;
    if (!sg || !args || args->node >= SOFTGPU_NODES)
        return VIDMM_E_INVALID_ARG;
    struct softgpu_cmdproc *cp = sg->cp;
    struct softgpu_node *nd = &cp->node[args->node];
    args->context = 0;
    args->last_aborted_fence = 0;
    pthread_mutex_lock(&cp->lock);
    softgpu_node_quiesce(cp, nd);
    /* Only a stalled head is stuck: anything else is running or about to. */
    if (nd->count && nd->stalled) {
        const struct softgpu_cjob *j = &nd->queue[nd->head];
        args->context = j->context;
        args->last_aborted_fence = j->fence;
        nd->stalled = 0;
        nd->head = (nd->head + 1) % SOFTGPU_NODE_QUEUE;
        nd->count--;
        pthread_cond_broadcast(&cp->space);
        pthread_cond_broadcast(&nd->work);
    }
    pthread_mutex_unlock(&cp->lock);
    if (args->context) {
        softgpu_lock(sg);
        sg->reset_stats.engine_resets++;
        softgpu_unlock(sg);
        if (cp->synchronous)
            softgpu_pump(sg);   /* what was queued behind it runs now (manual: when stepped) */
    }
    return VIDMM_OK;
}

/* A node is stuck only when its head job waits on a WAIT; the copy
 * engine only when it sits on an injected hang. */
vidmm_status softgpu_query_engine_status(void *driver, uint32_t node, uint32_t *responsive)
{
    struct softgpu *sg = driver;
    if (!sg || !responsive || (node >= SOFTGPU_NODES && node != VIDMM_PAGING_ENGINE))
        return VIDMM_E_INVALID_ARG;
    if (node == VIDMM_PAGING_ENGINE) {
        softgpu_lock(sg);
        *responsive = !sg->engine.hung;
        softgpu_unlock(sg);
        return VIDMM_OK;
    }
    struct softgpu_cmdproc *cp = sg->cp;
    pthread_mutex_lock(&cp->lock);
    *responsive = !(cp->node[node].count && cp->node[node].stalled);
    pthread_mutex_unlock(&cp->lock);
    return VIDMM_OK;
}

uint64_t softgpu_cmdproc_drop_all(struct softgpu *sg)
{
    struct softgpu_cmdproc *cp = sg->cp;
    uint64_t n = 0;
    pthread_mutex_lock(&cp->lock);
    for (uint32_t id = 0; id < SOFTGPU_NODES; id++) {
        struct softgpu_node *nd = &cp->node[id];
        if (nd->executing)
            nd->dropped = 1;   /* its thread forgets the job when the run ends */
        n += nd->count;
        nd->head = (nd->head + nd->count) % SOFTGPU_NODE_QUEUE;
        nd->count = 0;
        nd->stalled = 0;
    }
    pthread_cond_broadcast(&cp->space);
    for (uint32_t id = 0; id < SOFTGPU_NODES; id++)
        softgpu_node_quiesce(cp, &cp->node[id]);
    pthread_mutex_unlock(&cp->lock);
    return n;
}

/* ---- lifetime ------------------------------------------------------------------ */

vidmm_status softgpu_cmdproc_init(struct softgpu *sg, int mode)
{
    struct softgpu_cmdproc *cp = calloc(1, sizeof *cp);
    if (!cp)
        return VIDMM_E_NO_HOST_MEMORY;
    sg->cp = cp;
    cp->sg = sg;
    cp->synchronous = mode == SOFTGPU_MODE_SYNCHRONOUS;
    cp->manual = mode == SOFTGPU_MODE_MANUAL;
    if (pthread_mutex_init(&cp->lock, NULL) != 0)
        return VIDMM_E_NO_HOST_MEMORY;
    cp->lock_ok = 1;
    if (pthread_cond_init(&cp->space, NULL) != 0)
        return VIDMM_E_NO_HOST_MEMORY;
    cp->space_ok = 1;
    for (uint32_t n = 0; n < SOFTGPU_NODES; n++) {
        cp->node[n].cp = cp;
        cp->node[n].id = n;
        if (pthread_cond_init(&cp->node[n].work, NULL) != 0)
            return VIDMM_E_NO_HOST_MEMORY;
        cp->node[n].work_ok = 1;
    }
    if (cp->synchronous || cp->manual)
        return VIDMM_OK;
    for (uint32_t n = 0; n < SOFTGPU_NODES; n++) {
        if (pthread_create(&cp->node[n].thread, NULL, softgpu_node_main, &cp->node[n]) != 0)
            return VIDMM_E_NO_HOST_MEMORY;   /* fini stops the ones started */
        cp->node[n].running = 1;
    }
    return VIDMM_OK;
}

void softgpu_cmdproc_fini(struct softgpu *sg)
{
    struct softgpu_cmdproc *cp = sg->cp;
    if (!cp)
        return;
    if (cp->lock_ok) {
        pthread_mutex_lock(&cp->lock);
        cp->stop = 1;
        for (uint32_t n = 0; n < SOFTGPU_NODES; n++)
            if (cp->node[n].work_ok)
                pthread_cond_broadcast(&cp->node[n].work);
        pthread_mutex_unlock(&cp->lock);
    }
    for (uint32_t n = 0; n < SOFTGPU_NODES; n++) {
        if (cp->node[n].running)
            pthread_join(cp->node[n].thread, NULL);
        if (cp->node[n].work_ok)
            pthread_cond_destroy(&cp->node[n].work);
    }
    if (cp->space_ok)
        pthread_cond_destroy(&cp->space);
    if (cp->lock_ok)
        pthread_mutex_destroy(&cp->lock);
    free(cp);
    sg->cp = NULL;
}
