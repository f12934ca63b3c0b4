/*
 * client/client.c - libvidmm-client (include/vidmm-client/client.h):
 * each call is one request and its reply over the connection's
 * SOCK_SEQPACKET socket (docs/PROTOCOL.md).  No global state: everything
 * lives in struct vidmm_client.
 */
#define _GNU_SOURCE
#include "vidmm-client/client.h"

#include "proto.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

struct mapping {
    vidmm_handle h;
    void *p;
    uint64_t size;
    uint32_t locks;          /* 0: retired (unlocked copy, kept mapped) */
};

/* A trim registration (vidmm_client_register_trim_notification). */
struct trim_reg {
    vidmm_handle device;
    vidmm_trim_callback cb;
    void *context;
};

/* A TRIM event received and not yet delivered. */
struct trim_event {
    vidmm_handle device;
    uint32_t flags;
    uint64_t bytes;
};
#define MAX_EVENTS 256   /* undelivered; past it, the latest per device and flags */

struct vidmm_client {
    int fd;
    int broken;
    pthread_mutex_t mu;
    uint64_t next_id;
    struct mapping *maps;
    size_t nmaps, mcap;
    uint8_t *buf;            /* VMMD_MAX_MESSAGE bytes: requests and replies */
    int reply_fd;            /* descriptor of the last reply, or -1 */
    int send_fd;             /* descriptor the next request carries, or -1 (SHARE_OPEN) */
    const uint8_t *rp;       /* reply payload after status */
    size_t rn;
    struct trim_reg *regs;
    size_t nregs, rcap;
    struct trim_event events[MAX_EVENTS];
    size_t nevents;
};

static void fail_conn(struct vidmm_client *c)
{
    c->broken = 1;
}

/* A message the daemon sent unasked (docs/PROTOCOL.md "Events"): kept
 * until the caller's thread leaves the client library.  Returns 0, or
 * -1 when it is not a well-formed event. */
static int take_event(struct vidmm_client *c, const struct vmmd_header *h)
{
    const uint8_t *p = c->buf + VMMD_HEADER_SIZE;
    if (h->opcode != (VMMD_EV_TRIM | VMMD_REPLY) || h->request_id != 0 || h->flags != 0 ||
        h->length != 8 + VMMD_TRIM_EVENT_SIZE)
        return -1;
    struct trim_event e = { vmmd_get64(p + 8), vmmd_get32(p + 16), vmmd_get64(p + 24) };
    for (size_t i = 0; i < c->nevents && c->nevents == MAX_EVENTS; i++)
        if (c->events[i].device == e.device && c->events[i].flags == e.flags) {
            c->events[i].bytes = e.bytes;   /* full: the latest per device and group */
            return 0;
        }
    if (c->nevents == MAX_EVENTS)
        c->events[MAX_EVENTS - 1] = e;
    else
        c->events[c->nevents++] = e;
    return 0;
}

/* Deliver the events received so far to their callbacks, on this thread,
 * without the connection's lock (a callback may call the library). */
static void deliver_events(struct vidmm_client *c)
{
    struct trim_event ev[MAX_EVENTS];
    struct trim_reg to[MAX_EVENTS];
    size_t n = 0;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->nevents; i++)
        for (size_t j = 0; j < c->nregs; j++)
            if (c->regs[j].device == c->events[i].device) {   /* unregistered since: dropped */
                ev[n] = c->events[i];
                to[n++] = c->regs[j];
                break;
            }
    c->nevents = 0;
    pthread_mutex_unlock(&c->mu);
    for (size_t i = 0; i < n; i++)
        to[i].cb(to[i].context, ev[i].device, ev[i].flags, ev[i].bytes);
}

/* Send the request in c->buf (header written here) of payload n bytes,
 * wait for its reply.  Returns the reply's status, or DEVICE_LOST. */
static vidmm_status call(struct vidmm_client *c, uint16_t op, size_t n)
{
    int sfd = c->send_fd;   /* this request's only, whatever happens */
    c->send_fd = -1;
    if (c->broken)
        return VIDMM_E_DEVICE_LOST;
    uint64_t id = ++c->next_id;
    vmmd_header_put(c->buf, op, (uint32_t)n, sfd >= 0 ? VMMD_FLAG_FD : 0, id);
    long w;
    do   /* the descriptor, if any, rides with the request */
        w = vmmd_send(c->fd, c->buf, VMMD_HEADER_SIZE + n, sfd, 0);
    while (w < 0 && errno == EINTR);
    if (w != (long)(VMMD_HEADER_SIZE + n)) {
        fail_conn(c);
        return VIDMM_E_DEVICE_LOST;
    }
    for (;;) {
        int fd = -1, fds = 0, trunc = 0;
        long r = vmmd_recv(c->fd, c->buf, VMMD_MAX_MESSAGE, 0, &fd, &fds, &trunc);
        int cut = trunc || fds > 1;   /* more than the one descriptor a reply may carry */
        struct vmmd_header h;
        if (r > 0 && !cut && fd < 0 &&
            vmmd_header_get(c->buf, (size_t)r, &h) == VMMD_DECODE_OK && h.request_id == 0 &&
            h.opcode != (uint16_t)(op | VMMD_REPLY)) {
            if (take_event(c, &h) == 0)
                continue;   /* an event before our reply */
        }
        if (r <= 0 || cut ||
            vmmd_header_get(c->buf, (size_t)r, &h) != VMMD_DECODE_OK || h.length < 8 ||
            h.opcode != (uint16_t)(op | VMMD_REPLY) || h.request_id != id ||
            ((h.flags & VMMD_FLAG_FD) != 0) != (fd >= 0)) {
            if (fd >= 0)
                close(fd);
            fail_conn(c);
            return VIDMM_E_DEVICE_LOST;
        }
        c->reply_fd = fd;
        c->rp = c->buf + VMMD_HEADER_SIZE + 8;
        c->rn = h.length - 8;
        return (vidmm_status)(int32_t)vmmd_get32(c->buf + VMMD_HEADER_SIZE);
    }
}

/* The reply payload holds at least n bytes (else the daemon broke the protocol). */
static int need(struct vidmm_client *c, size_t n)
{
    if (c->rn >= n)
        return 1;
    fail_conn(c);
    return 0;
}

#define P (c->buf + VMMD_HEADER_SIZE)
#define ENTER(c)                              \
    do {                                      \
        if (!(c))                             \
            return VIDMM_E_INVALID_ARG;       \
        pthread_mutex_lock(&(c)->mu);         \
        (c)->reply_fd = -1;                   \
    } while (0)
/* Leaving: events received during the call go to their callbacks now,
 * on the caller's thread, with the connection unlocked. */
#define LEAVE(c, st)                          \
    do {                                      \
        vidmm_status leave_st_ = (st);        \
        int leave_ev_ = (c)->nevents != 0;    \
        if ((c)->reply_fd >= 0)               \
            close((c)->reply_fd);             \
        (c)->reply_fd = -1;                   \
        pthread_mutex_unlock(&(c)->mu);       \
        if (leave_ev_)                        \
            deliver_events(c);                \
        return leave_st_;                     \
    } while (0)

const char *vidmm_client_default_socket(char *buf, size_t size)
{
    const char *env = getenv("VIDMMD_SOCKET");
    if (env && *env) {
        snprintf(buf, size, "%s", env);
        return buf;
    }
    /* Per user first (a daemon the user started), then the system
     * service's, so `vidmm ps` finds an installed service unasked. */
    char cand[3][108];
    int n = 0;
    const char *rt = getenv("XDG_RUNTIME_DIR");
    if (rt && *rt)
        snprintf(cand[n++], sizeof cand[0], "%s/vidmmd.sock", rt);
    snprintf(cand[n++], sizeof cand[0], "/tmp/vidmmd-%ld.sock", (long)getuid());
    snprintf(cand[n++], sizeof cand[0], "%s", VIDMM_CLIENT_SYSTEM_SOCKET);
    int pick = 0;
    for (int i = 0; i < n; i++)
        if (access(cand[i], F_OK) == 0) {
            pick = i;
            break;
        }
    snprintf(buf, size, "%s", cand[pick]);
    return buf;
}

vidmm_status vidmm_client_connect(const char *path, struct vidmm_client **out)
{
    if (!out)
        return VIDMM_E_INVALID_ARG;
    *out = NULL;
    char def[108];
    if (!path)
        path = vidmm_client_default_socket(def, sizeof def);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa.sun_path)
        return VIDMM_E_INVALID_ARG;
    strcpy(sa.sun_path, path);
    struct vidmm_client *c = calloc(1, sizeof *c);
    if (!c)
        return VIDMM_E_NO_HOST_MEMORY;
    c->buf = malloc(VMMD_MAX_MESSAGE);
    c->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (!c->buf || c->fd < 0 || pthread_mutex_init(&c->mu, NULL) != 0) {
        if (c->fd >= 0)
            close(c->fd);
        free(c->buf);
        free(c);
        return VIDMM_E_NO_HOST_MEMORY;
    }
    c->reply_fd = -1;
    c->send_fd = -1;
    if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        vidmm_client_disconnect(c);
        return VIDMM_E_DEVICE_LOST;
    }
    pthread_mutex_lock(&c->mu);
    vidmm_status st = call(c, VMMD_OP_HELLO, 0);
    pthread_mutex_unlock(&c->mu);
    if (st < 0) {
        vidmm_client_disconnect(c);
        return st;
    }
    *out = c;
    return VIDMM_OK;
}

void vidmm_client_disconnect(struct vidmm_client *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nmaps; i++)
        munmap(c->maps[i].p, c->maps[i].size);
    free(c->maps);
    free(c->regs);
    if (c->fd >= 0)
        close(c->fd);
    pthread_mutex_destroy(&c->mu);
    free(c->buf);
    free(c);
}

vidmm_status vidmm_client_query(struct vidmm_client *c, struct vidmm_client_info *out)
{
    if (!out)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vidmm_status st = call(c, VMMD_OP_HELLO, 0);
    if (st >= 0 && need(c, 16)) {
        memset(out, 0, sizeof *out);
        out->pid = vmmd_get32(c->rp);
        out->uid = vmmd_get32(c->rp + 4);
        out->connection = vmmd_get32(c->rp + 8);
    } else if (st >= 0) {
        st = VIDMM_E_DEVICE_LOST;
    }
    LEAVE(c, st);
}

/* A request of one 64-bit argument whose reply may carry one 64-bit result. */
static vidmm_status call_h(struct vidmm_client *c, uint16_t op, uint64_t arg, size_t n_in, uint64_t *result)
{
    if (n_in)
        vmmd_put64(P, arg);
    vidmm_status st = call(c, op, n_in);
    if (st >= 0 && result) {
        if (!need(c, 8))
            return VIDMM_E_DEVICE_LOST;
        *result = vmmd_get64(c->rp);
    }
    return st;
}

vidmm_status vidmm_client_device_create(struct vidmm_client *c, vidmm_handle *device)
{
    if (!device)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vidmm_status st = call_h(c, VMMD_OP_DEVICE_CREATE, 0, 0, device);
    LEAVE(c, st);
}

static void reg_drop(struct vidmm_client *c, vidmm_handle device)
{
    for (size_t i = 0; i < c->nregs; i++)
        if (c->regs[i].device == device) {
            c->regs[i] = c->regs[--c->nregs];
            return;
        }
}

vidmm_status vidmm_client_device_destroy(struct vidmm_client *c, vidmm_handle device)
{
    ENTER(c);
    vidmm_status st = call_h(c, VMMD_OP_DEVICE_DESTROY, device, 8, NULL);
    if (st >= 0)
        reg_drop(c, device);   /* the daemon dropped its registration with it */
    LEAVE(c, st);
}

vidmm_status vidmm_client_paging_queue_create(struct vidmm_client *c, vidmm_handle device, int priority,
                                              vidmm_handle *queue)
{
    if (!queue)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vmmd_put64(P, device);
    vmmd_put32(P + 8, (uint32_t)(int32_t)priority);
    vmmd_put32(P + 12, 0);
    vidmm_status st = call(c, VMMD_OP_QUEUE_CREATE, 16);
    if (st >= 0)
        *queue = need(c, 8) ? vmmd_get64(c->rp) : 0;
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_paging_queue_destroy(struct vidmm_client *c, vidmm_handle queue)
{
    ENTER(c);
    vidmm_status st = call_h(c, VMMD_OP_QUEUE_DESTROY, queue, 8, NULL);
    LEAVE(c, st);
}

vidmm_status vidmm_client_paging_queue_fence(struct vidmm_client *c, vidmm_handle queue, uint64_t *completed)
{
    if (!completed)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vidmm_status st = call_h(c, VMMD_OP_QUEUE_FENCE, queue, 8, completed);
    LEAVE(c, st);
}

vidmm_status vidmm_client_paging_queue_wait(struct vidmm_client *c, vidmm_handle queue, uint64_t value,
                                            uint64_t timeout_ns)
{
    ENTER(c);
    vmmd_put64(P, queue);
    vmmd_put64(P + 8, value);
    vmmd_put64(P + 16, timeout_ns);
    vidmm_status st = call(c, VMMD_OP_QUEUE_WAIT, 24);
    LEAVE(c, st);
}

vidmm_status vidmm_client_device_allocation_create(struct vidmm_client *c, vidmm_handle device,
                                                   const void *priv, size_t priv_size, uint32_t flags,
                                                   vidmm_handle *out)
{
    if (!out || (priv_size && !priv))
        return VIDMM_E_INVALID_ARG;
    if (priv_size > VMMD_MAX_PRIVATE_DATA)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vmmd_put64(P, device);
    vmmd_put32(P + 8, flags);
    vmmd_put32(P + 12, (uint32_t)priv_size);
    if (priv_size)
        memcpy(P + 16, priv, priv_size);
    vidmm_status st = call(c, VMMD_OP_ALLOC_CREATE, 16 + priv_size);
    if (st >= 0)
        *out = need(c, 8) ? vmmd_get64(c->rp) : 0;
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_allocation_create2(struct vidmm_client *c, const void *priv, size_t priv_size,
                                             uint32_t flags, vidmm_handle *out)
{
    return vidmm_client_device_allocation_create(c, 0, priv, priv_size, flags, out);
}

vidmm_status vidmm_client_allocation_create(struct vidmm_client *c, const void *priv, size_t priv_size,
                                            vidmm_handle *out)
{
    return vidmm_client_device_allocation_create(c, 0, priv, priv_size, VIDMM_CREATE_RESIDENT, out);
}

static struct mapping *find_map(struct vidmm_client *c, vidmm_handle h)
{
    for (size_t i = 0; i < c->nmaps; i++)
        if (c->maps[i].h == h)
            return &c->maps[i];
    return NULL;
}

static void drop_map(struct vidmm_client *c, struct mapping *m)
{
    munmap(m->p, m->size);
    *m = c->maps[--c->nmaps];
}

vidmm_status vidmm_client_allocation_destroy(struct vidmm_client *c, vidmm_handle h)
{
    ENTER(c);
    vidmm_status st = call_h(c, VMMD_OP_ALLOC_DESTROY, h, 8, NULL);
    struct mapping *m;
    if (st >= 0 && (m = find_map(c, h)) != NULL)
        drop_map(c, m);
    LEAVE(c, st);
}

vidmm_status vidmm_client_make_resident(struct vidmm_client *c, vidmm_handle device,
                                        struct vidmm_make_resident_args *args)
{
    if (!args || (args->count && !args->allocations))
        return VIDMM_E_INVALID_ARG;
    if (args->count > VMMD_MAX_LIST)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vmmd_put64(P, device);
    vmmd_put64(P + 8, args->paging_queue);
    vmmd_put32(P + 16, args->flags);
    vmmd_put32(P + 20, args->count);
    for (uint32_t i = 0; i < args->count; i++)
        vmmd_put64(P + 24 + 8 * (size_t)i, args->allocations[i]);
    vidmm_status st = call(c, VMMD_OP_MAKE_RESIDENT, 24 + 8 * (size_t)args->count);
    if (!c->broken && c->rn >= 16) {
        args->paging_fence_value = vmmd_get64(c->rp);
        args->bytes_to_trim = vmmd_get64(c->rp + 8);
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_evict(struct vidmm_client *c, vidmm_handle device, struct vidmm_evict_args *args)
{
    if (!args || (args->count && !args->allocations))
        return VIDMM_E_INVALID_ARG;
    if (args->count > VMMD_MAX_LIST)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vmmd_put64(P, device);
    vmmd_put32(P + 8, args->flags);
    vmmd_put32(P + 12, args->count);
    for (uint32_t i = 0; i < args->count; i++)
        vmmd_put64(P + 16 + 8 * (size_t)i, args->allocations[i]);
    vidmm_status st = call(c, VMMD_OP_EVICT, 16 + 8 * (size_t)args->count);
    if (!c->broken && c->rn >= 8)
        args->bytes_to_trim = vmmd_get64(c->rp);
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_query_video_memory_info(struct vidmm_client *c, enum vidmm_segment_group group,
                                                  struct vidmm_video_memory_info *out)
{
    if (!out)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vmmd_put32(P, (uint32_t)group);
    vmmd_put32(P + 4, 0);
    vidmm_status st = call(c, VMMD_OP_QUERY_VIDMEM, 8);
    if (st >= 0 && need(c, 32)) {
        out->budget = vmmd_get64(c->rp);
        out->current_usage = vmmd_get64(c->rp + 8);
        out->current_reservation = vmmd_get64(c->rp + 16);
        out->available_for_reservation = vmmd_get64(c->rp + 24);
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_allocation_lock(struct vidmm_client *c, vidmm_handle h, void **cpu_address)
{
    if (!cpu_address)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vidmm_status st = call_h(c, VMMD_OP_LOCK, h, 8, NULL);
    if (st < 0 || c->broken)
        LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
    if (!need(c, 8))
        LEAVE(c, VIDMM_E_DEVICE_LOST);
    uint64_t size = vmmd_get64(c->rp);
    struct mapping *m = find_map(c, h);
    if (c->reply_fd < 0) {   /* nested lock: the mapping we have */
        if (!m || !m->locks) {
            fail_conn(c);
            LEAVE(c, VIDMM_E_DEVICE_LOST);
        }
        m->locks++;
        *cpu_address = m->p;
        LEAVE(c, st);
    }
    if (m)                   /* the copy of an earlier lock: retired now */
        drop_map(c, m);
    if (c->nmaps == c->mcap) {
        size_t ncap = c->mcap ? c->mcap * 2 : 16;
        struct mapping *n = realloc(c->maps, ncap * sizeof *n);
        if (!n)
            goto undo;
        c->maps = n;
        c->mcap = ncap;
    }
    void *p = size && size <= SIZE_MAX ? mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, c->reply_fd, 0)
                                       : MAP_FAILED;
    if (p == MAP_FAILED)
        goto undo;
    c->maps[c->nmaps].h = h;
    c->maps[c->nmaps].p = p;
    c->maps[c->nmaps].size = size;
    c->maps[c->nmaps].locks = 1;
    c->nmaps++;
    *cpu_address = p;
    LEAVE(c, st);
undo:
    /* The daemon holds the lock: give it back, then fail as the host would. */
    close(c->reply_fd);
    c->reply_fd = -1;
    (void)call_h(c, VMMD_OP_UNLOCK, h, 8, NULL);
    LEAVE(c, VIDMM_E_NO_HOST_MEMORY);
}

vidmm_status vidmm_client_allocation_unlock(struct vidmm_client *c, vidmm_handle h)
{
    ENTER(c);
    vidmm_status st = call_h(c, VMMD_OP_UNLOCK, h, 8, NULL);
    struct mapping *m;
    if (st >= 0 && (m = find_map(c, h)) != NULL && m->locks)
        m->locks--;   /* at 0 the copy stays mapped, the daemon's side is gone */
    LEAVE(c, st);
}

vidmm_status vidmm_client_allocation_query(struct vidmm_client *c, vidmm_handle h,
                                           struct vidmm_client_allocation_info *out)
{
    if (!out)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vidmm_status st = call_h(c, VMMD_OP_ALLOC_QUERY, h, 8, NULL);
    if (st >= 0 && need(c, 56)) {
        const uint8_t *r = c->rp;
        out->size = vmmd_get64(r);
        out->requested_size = vmmd_get64(r + 8);
        out->alignment = vmmd_get64(r + 16);
        out->flags = vmmd_get32(r + 24);
        out->segment_id = vmmd_get32(r + 28);
        out->supported_segment_set = vmmd_get32(r + 32);
        out->preferred_segment = vmmd_get32(r + 36);
        out->lock_count = vmmd_get32(r + 40);
        out->resident = vmmd_get32(r + 44);
        out->moves = vmmd_get64(r + 48);
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_gpuva_reserve(struct vidmm_client *c, uint64_t base, uint64_t min, uint64_t max,
                                        uint64_t size, unsigned mode, uint64_t *va)
{
    if (!va)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vmmd_put64(P, base);
    vmmd_put64(P + 8, min);
    vmmd_put64(P + 16, max);
    vmmd_put64(P + 24, size);
    vmmd_put32(P + 32, mode);
    vmmd_put32(P + 36, 0);
    vidmm_status st = call(c, VMMD_OP_GPUVA_RESERVE, 40);
    if (st >= 0)
        *va = need(c, 8) ? vmmd_get64(c->rp) : 0;
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_gpuva_map(struct vidmm_client *c, uint64_t base, uint64_t min, uint64_t max,
                                    vidmm_handle allocation, uint64_t offset, uint64_t size, unsigned protection,
                                    uint64_t driver_protection, uint64_t *va)
{
    if (!va)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vmmd_put64(P, base);
    vmmd_put64(P + 8, min);
    vmmd_put64(P + 16, max);
    vmmd_put64(P + 24, allocation);
    vmmd_put64(P + 32, offset);
    vmmd_put64(P + 40, size);
    vmmd_put64(P + 48, driver_protection);
    vmmd_put32(P + 56, protection);
    vmmd_put32(P + 60, 0);
    vidmm_status st = call(c, VMMD_OP_GPUVA_MAP, 64);
    if (st >= 0)
        *va = need(c, 8) ? vmmd_get64(c->rp) : 0;
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_gpuva_free(struct vidmm_client *c, uint64_t va, uint64_t size)
{
    ENTER(c);
    vmmd_put64(P, va);
    vmmd_put64(P + 8, size);
    vidmm_status st = call(c, VMMD_OP_GPUVA_FREE, 16);
    LEAVE(c, st);
}

vidmm_status vidmm_client_debug_check(struct vidmm_client *c, uint32_t *violations, uint32_t *clients,
                                      uint64_t *live_allocations)
{
    ENTER(c);
    vidmm_status st = call(c, VMMD_OP_DEBUG_CHECK, 0);
    if (st >= 0 && need(c, 16)) {
        if (violations)
            *violations = vmmd_get32(c->rp);
        if (clients)
            *clients = vmmd_get32(c->rp + 4);
        if (live_allocations)
            *live_allocations = vmmd_get64(c->rp + 8);
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_echo(struct vidmm_client *c, const void *data, size_t size)
{
    if ((size && !data) || size > VMMD_MAX_PAYLOAD - 8)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    if (size)
        memcpy(P, data, size);
    vidmm_status st = call(c, VMMD_OP_ECHO, size);
    if (st >= 0 && c->rn != size)
        st = VIDMM_E_DEVICE_LOST;
    LEAVE(c, st);
}

/* ---- shared allocations ----------------------------------------------------- */

vidmm_status vidmm_client_share_export(struct vidmm_client *c, vidmm_handle allocation, int *fd)
{
    if (!fd)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vidmm_status st = call_h(c, VMMD_OP_SHARE_EXPORT, allocation, 8, NULL);
    if (st >= 0 && c->reply_fd < 0) {
        fail_conn(c);   /* a successful export always carries its descriptor */
        st = VIDMM_E_DEVICE_LOST;
    }
    if (st >= 0) {
        *fd = c->reply_fd;   /* the caller's now */
        c->reply_fd = -1;
    }
    LEAVE(c, st);
}

vidmm_status vidmm_client_share_open(struct vidmm_client *c, int fd, vidmm_handle *allocation)
{
    if (fd < 0 || !allocation)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    c->send_fd = fd;   /* sent with the request, still the caller's */
    uint64_t h = 0;
    vidmm_status st = call_h(c, VMMD_OP_SHARE_OPEN, 0, 0, &h);
    if (st >= 0)
        *allocation = h;
    LEAVE(c, st);
}

vidmm_status vidmm_client_share_query(struct vidmm_client *c, vidmm_handle allocation,
                                      struct vidmm_client_share_info *out)
{
    if (!out)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vidmm_status st = call_h(c, VMMD_OP_SHARE_QUERY, allocation, 8, NULL);
    if (st >= 0 && need(c, 16)) {
        memset(out, 0, sizeof *out);
        out->holders = vmmd_get32(c->rp);
        out->creator_holds = vmmd_get32(c->rp + 4);
        out->is_creator = vmmd_get32(c->rp + 8);
    } else if (st >= 0) {
        st = VIDMM_E_DEVICE_LOST;
    }
    LEAVE(c, st);
}

/* ---- adapter and segments --------------------------------------------------- */

vidmm_status vidmm_client_adapter_query_info(struct vidmm_client *c, struct vidmm_adapter_info *out)
{
    if (!out)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vidmm_status st = call(c, VMMD_OP_ADAPTER_INFO, 0);
    if (st >= 0 && need(c, VMMD_ADAPTER_INFO_SIZE)) {
        const uint8_t *r = c->rp;
        memset(out, 0, sizeof *out);
        out->wddm_version = vmmd_get32(r);
        out->memory_management_caps = vmmd_get32(r + 4);
        out->physical_adapter_flags = vmmd_get32(r + 8);
        out->segment_count = vmmd_get32(r + 12);
        out->aperture_segment_id = vmmd_get32(r + 16);
        out->agp_segment_id = vmmd_get32(r + 20);
        out->paging_buffer_segment_id = vmmd_get32(r + 24);
        out->paging_buffer_size = vmmd_get32(r + 28);
        out->aperture_segment_commit_limit = vmmd_get64(r + 32);
        out->live_allocations = vmmd_get64(r + 40);
        out->paging_buffers_submitted = vmmd_get64(r + 48);
        out->paging_restarts = vmmd_get64(r + 56);
        out->last_fence_submitted = vmmd_get64(r + 64);
        out->last_fence_completed = vmmd_get64(r + 72);
        for (int i = 0; i < 17; i++) {
            out->paging_ops[i] = vmmd_get64(r + 80 + 8 * i);
            out->paging_bytes[i] = vmmd_get64(r + 216 + 8 * i);
        }
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_segment_query(struct vidmm_client *c, uint32_t id, struct vidmm_segment_info *out)
{
    if (!out)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vmmd_put32(P, id);
    vmmd_put32(P + 4, 0);
    vidmm_status st = call(c, VMMD_OP_SEGMENT_QUERY, 8);
    if (st >= 0 && need(c, VMMD_SEGMENT_INFO_SIZE)) {
        const uint8_t *r = c->rp;
        memset(out, 0, sizeof *out);
        out->id = vmmd_get32(r);
        out->kind = (enum vidmm_segment_kind)vmmd_get32(r + 4);
        out->flags = vmmd_get32(r + 8);
        out->page_size = vmmd_get32(r + 12);
        out->base_address = vmmd_get64(r + 16);
        out->size = vmmd_get64(r + 24);
        out->commit_limit = vmmd_get64(r + 32);
        out->committed = vmmd_get64(r + 40);
        out->free_bytes = vmmd_get64(r + 48);
        out->largest_free = vmmd_get64(r + 56);
        out->allocations = vmmd_get64(r + 64);
        out->cpu_visible = (int)vmmd_get32(r + 72);
        out->cpu_host_aperture = (int)vmmd_get32(r + 76);
        out->host_aperture_pages = vmmd_get32(r + 80);
        out->host_aperture_free = vmmd_get32(r + 84);
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

/* ---- priorities, offer and reclaim, reservations, budgets --------------------- */

vidmm_status vidmm_client_allocation_set_priority(struct vidmm_client *c, vidmm_handle allocation, uint32_t priority)
{
    ENTER(c);
    vmmd_put64(P, allocation);
    vmmd_put32(P + 8, priority);
    vmmd_put32(P + 12, 0);
    vidmm_status st = call(c, VMMD_OP_ALLOC_SET_PRIORITY, 16);
    LEAVE(c, st);
}

/* h, u32, u32 count, count handles: OFFER and RECLAIM. */
static void put_list(struct vidmm_client *c, vidmm_handle h, uint32_t u, const vidmm_handle *list, uint32_t count)
{
    vmmd_put64(P, h);
    vmmd_put32(P + 8, u);
    vmmd_put32(P + 12, count);
    for (uint32_t i = 0; i < count; i++)
        vmmd_put64(P + 16 + 8 * (size_t)i, list[i]);
}

vidmm_status vidmm_client_offer(struct vidmm_client *c, vidmm_handle device, const vidmm_handle *allocations,
                                uint32_t count, uint32_t offer_priority)
{
    if ((count && !allocations) || count > VMMD_MAX_LIST)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    put_list(c, device, offer_priority, allocations, count);
    vidmm_status st = call(c, VMMD_OP_OFFER, 16 + 8 * (size_t)count);
    LEAVE(c, st);
}

vidmm_status vidmm_client_reclaim(struct vidmm_client *c, vidmm_handle paging_queue, const vidmm_handle *allocations,
                                  uint32_t count, uint32_t *results, uint64_t *paging_fence_value)
{
    if ((count && (!allocations || !results)) || count > VMMD_MAX_LIST)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    put_list(c, paging_queue, 0, allocations, count);
    vidmm_status st = call(c, VMMD_OP_RECLAIM, 16 + 8 * (size_t)count);
    if (!c->broken && st >= 0 && c->rn != 8 + 4 * (size_t)count)
        fail_conn(c);   /* the daemon answered another list */
    if (!c->broken && st >= 0) {
        if (paging_fence_value)
            *paging_fence_value = vmmd_get64(c->rp);
        for (uint32_t i = 0; i < count; i++)
            results[i] = vmmd_get32(c->rp + 8 + 4 * (size_t)i);
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

static vidmm_status group_call(struct vidmm_client *c, uint16_t op, enum vidmm_segment_group group, uint64_t bytes)
{
    vmmd_put32(P, (uint32_t)group);
    vmmd_put32(P + 4, 0);
    vmmd_put64(P + 8, bytes);
    return call(c, op, 16);
}

vidmm_status vidmm_client_change_video_memory_reservation(struct vidmm_client *c, enum vidmm_segment_group group,
                                                          uint64_t reservation)
{
    ENTER(c);
    vidmm_status st = group_call(c, VMMD_OP_CHANGE_RESERVATION, group, reservation);
    LEAVE(c, st);
}

vidmm_status vidmm_client_process_set_budget(struct vidmm_client *c, enum vidmm_segment_group group, uint64_t budget)
{
    ENTER(c);
    vidmm_status st = group_call(c, VMMD_OP_PROCESS_SET_BUDGET, group, budget);
    LEAVE(c, st);
}

/* ---- trim notifications -------------------------------------------------------- */

vidmm_status vidmm_client_register_trim_notification(struct vidmm_client *c, vidmm_handle device,
                                                     vidmm_trim_callback callback, void *context)
{
    ENTER(c);
    struct trim_reg *r = NULL;
    for (size_t i = 0; i < c->nregs; i++)
        if (c->regs[i].device == device)
            r = &c->regs[i];
    if (!r && callback && c->nregs == c->rcap) {   /* room first: a daemon registration we cannot record is worse */
        size_t ncap = c->rcap ? c->rcap * 2 : 8;
        struct trim_reg *n = realloc(c->regs, ncap * sizeof *n);
        if (!n)
            LEAVE(c, VIDMM_E_NO_HOST_MEMORY);
        c->regs = n;
        c->rcap = ncap;
    }
    vmmd_put64(P, device);
    vmmd_put32(P + 8, callback ? 1u : 0u);
    vmmd_put32(P + 12, 0);
    vidmm_status st = call(c, VMMD_OP_TRIM_REGISTER, 16);
    if (st >= 0) {
        if (!callback)
            reg_drop(c, device);
        else if (r)
            r->cb = callback, r->context = context;
        else
            c->regs[c->nregs++] = (struct trim_reg){ device, callback, context };
    }
    LEAVE(c, st);
}

vidmm_status vidmm_client_poll_events(struct vidmm_client *c, uint32_t *delivered)
{
    ENTER(c);
    while (!c->broken) {
        ssize_t r = recv(c->fd, c->buf, VMMD_MAX_MESSAGE, MSG_DONTWAIT | MSG_TRUNC);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        struct vmmd_header h;
        /* Nothing is in flight: anything but an event breaks the protocol. */
        if (r <= 0 || (size_t)r > VMMD_MAX_MESSAGE || vmmd_header_get(c->buf, (size_t)r, &h) != VMMD_DECODE_OK ||
            take_event(c, &h) != 0)
            fail_conn(c);
    }
    /* Every earlier call delivered its own: these are the ones read now. */
    if (delivered)
        *delivered = (uint32_t)c->nevents;
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : VIDMM_OK);
}

int vidmm_client_fd(const struct vidmm_client *c)
{
    return c ? c->fd : -1;
}

/* ---- GPU virtual addresses: update batches ------------------------------------- */

vidmm_status vidmm_client_gpuva_update(struct vidmm_client *c, const struct vidmm_gpuva_update_op *ops, uint32_t count)
{
    if ((count && !ops) || count > VMMD_MAX_GPUVA_OPS)
        return VIDMM_E_INVALID_ARG;   /* past one message: the library's limit is 4,096 */
    ENTER(c);
    vmmd_put32(P, count);
    vmmd_put32(P + 4, 0);
    for (uint32_t i = 0; i < count; i++) {
        uint8_t *p = P + 8 + (size_t)i * VMMD_GPUVA_OP_SIZE;
        const struct vidmm_gpuva_update_op *o = &ops[i];
        vmmd_put32(p, o->type);
        vmmd_put32(p + 4, o->protection);
        vmmd_put64(p + 8, o->va);
        vmmd_put64(p + 16, o->size);
        vmmd_put64(p + 24, o->allocation);
        vmmd_put64(p + 32, o->offset);
        vmmd_put64(p + 40, o->driver_protection);
        vmmd_put32(p + 48, o->unmap_mode);
        vmmd_put32(p + 52, o->reserved);
        vmmd_put64(p + 56, o->source);
    }
    vidmm_status st = call(c, VMMD_OP_GPUVA_UPDATE, 8 + (size_t)count * VMMD_GPUVA_OP_SIZE);
    LEAVE(c, st);
}

/* ---- contexts, virtual submission, context fences -------------------------------- */

vidmm_status vidmm_client_context_create(struct vidmm_client *c, vidmm_handle device,
                                         const struct vidmm_context_desc *desc, vidmm_handle *context)
{
    if (!desc || !context)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vmmd_put64(P, device);
    vmmd_put32(P + 8, desc->node);
    vmmd_put32(P + 12, desc->mode);
    vmmd_put32(P + 16, desc->flags);
    vmmd_put32(P + 20, desc->reserved);
    vidmm_status st = call(c, VMMD_OP_CONTEXT_CREATE, 24);
    if (st >= 0)
        *context = need(c, 8) ? vmmd_get64(c->rp) : 0;
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_context_destroy(struct vidmm_client *c, vidmm_handle context)
{
    ENTER(c);
    vidmm_status st = call_h(c, VMMD_OP_CONTEXT_DESTROY, context, 8, NULL);
    LEAVE(c, st);
}

vidmm_status vidmm_client_submit_virtual(struct vidmm_client *c, vidmm_handle context, uint64_t gpu_va, uint32_t size,
                                         uint64_t *fence)
{
    if (!fence)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vmmd_put64(P, context);
    vmmd_put64(P + 8, gpu_va);
    vmmd_put32(P + 16, size);
    vmmd_put32(P + 20, 0);
    vidmm_status st = call(c, VMMD_OP_SUBMIT_VIRTUAL, 24);
    if (st >= 0)
        *fence = need(c, 8) ? vmmd_get64(c->rp) : 0;
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_context_fence(struct vidmm_client *c, vidmm_handle context, uint64_t *submitted,
                                        uint64_t *completed)
{
    if (!submitted || !completed)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vidmm_status st = call_h(c, VMMD_OP_CONTEXT_FENCE, context, 8, NULL);
    if (st >= 0 && need(c, 16)) {
        *submitted = vmmd_get64(c->rp);
        *completed = vmmd_get64(c->rp + 8);
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_context_wait(struct vidmm_client *c, vidmm_handle context, uint64_t value,
                                       uint64_t timeout_ns)
{
    ENTER(c);
    vmmd_put64(P, context);
    vmmd_put64(P + 8, value);
    vmmd_put64(P + 16, timeout_ns);
    vidmm_status st = call(c, VMMD_OP_CONTEXT_WAIT, 24);
    LEAVE(c, st);
}

const char *vidmm_client_status_str(vidmm_status status)
{
    return vmmd_status_str((int)status);
}

vidmm_status vidmm_client_admin_adapter(struct vidmm_client *c, struct vidmm_client_admin_adapter *out)
{
    if (!out)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vidmm_status st = call(c, VMMD_OP_ADMIN_ADAPTER, 0);
    if (st >= 0 && need(c, VMMD_ADMIN_ADAPTER_FIXED)) {
        const uint8_t *r = c->rp;
        memset(out, 0, sizeof *out);
        out->daemon_pid = vmmd_get32(r);
        out->daemon_uid = vmmd_get32(r + 4);
        out->clients = vmmd_get32(r + 8);
        uint32_t nseg = vmmd_get32(r + 12);
        out->connections = vmmd_get64(r + 16);
        out->requests = vmmd_get64(r + 24);
        out->protocol_errors = vmmd_get64(r + 32);
        out->locks = vmmd_get64(r + 40);
        out->host_blocks = (int64_t)vmmd_get64(r + 48);
        out->host_bytes = (int64_t)vmmd_get64(r + 56);
        out->live_allocations = vmmd_get64(r + 64);
        out->make_resident_calls = vmmd_get64(r + 72);
        out->evictions = vmmd_get64(r + 80);
        out->restores = vmmd_get64(r + 88);
        out->bytes_evicted = vmmd_get64(r + 96);
        out->bytes_restored = vmmd_get64(r + 104);
        out->paging_buffers_submitted = vmmd_get64(r + 112);
        out->uptime_ns = vmmd_get64(r + 120);
        out->max_alloc_bytes = vmmd_get64(r + 128);
        out->max_locked_bytes = vmmd_get64(r + 136);
        out->max_handles = vmmd_get32(r + 144);
        out->max_requests = vmmd_get32(r + 148);
        out->max_connections_per_uid = vmmd_get32(r + 152);
        out->wddm_version = vmmd_get32(r + 156);
        out->quota_refusals = vmmd_get64(r + 160);
        if (nseg > VIDMM_CLIENT_ADMIN_MAX_SEGMENTS ||
            !need(c, VMMD_ADMIN_ADAPTER_FIXED + (size_t)nseg * VMMD_ADMIN_SEGMENT_SIZE))
            LEAVE(c, VIDMM_E_DEVICE_LOST);
        out->segment_count = nseg;
        for (uint32_t i = 0; i < nseg; i++) {
            const uint8_t *p = r + VMMD_ADMIN_ADAPTER_FIXED + (size_t)i * VMMD_ADMIN_SEGMENT_SIZE;
            struct vidmm_client_admin_segment *g = &out->segment[i];
            g->id = vmmd_get32(p);
            g->kind = vmmd_get32(p + 4);
            g->size = vmmd_get64(p + 8);
            g->committed = vmmd_get64(p + 16);
            g->free_bytes = vmmd_get64(p + 24);
            g->commit_limit = vmmd_get64(p + 32);
            g->flags = vmmd_get32(p + 40);
            g->page_size = vmmd_get32(p + 44);
            memcpy(g->region, p + 48, 15);
            g->region[15] = 0;
        }
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_admin_processes(struct vidmm_client *c, uint32_t first,
                                          struct vidmm_client_admin_process *out, uint32_t max, uint32_t *count,
                                          uint32_t *total)
{
    if (max && !out)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vmmd_put32(P, first);
    vmmd_put32(P + 4, 0);
    vidmm_status st = call(c, VMMD_OP_ADMIN_CLIENTS, 8);
    if (st >= 0 && need(c, 8)) {
        const uint8_t *r = c->rp;
        uint32_t n = vmmd_get32(r + 4);
        if (n > VMMD_ADMIN_CLIENTS_PER_REPLY || !need(c, 8 + (size_t)n * VMMD_ADMIN_CLIENT_SIZE))
            LEAVE(c, VIDMM_E_DEVICE_LOST);
        if (total)
            *total = vmmd_get32(r);
        if (n > max)
            n = max;
        for (uint32_t i = 0; i < n; i++) {
            const uint8_t *p = r + 8 + (size_t)i * VMMD_ADMIN_CLIENT_SIZE;
            struct vidmm_client_admin_process *o = &out[i];
            memset(o, 0, sizeof *o);
            o->connection = vmmd_get32(p);
            o->pid = vmmd_get32(p + 4);
            o->uid = vmmd_get32(p + 8);
            o->gid = vmmd_get32(p + 12);
            memcpy(o->comm, p + 16, 15);
            o->comm[15] = 0;
            o->process = vmmd_get64(p + 32);
            o->allocated_bytes = vmmd_get64(p + 40);
            o->allocations = vmmd_get32(p + 48);
            o->handles = vmmd_get32(p + 52);
            o->locked_bytes = vmmd_get64(p + 56);
            for (int g = 0; g < 2; g++) {
                o->budget[g] = vmmd_get64(p + 64 + 16 * g);
                o->usage[g] = vmmd_get64(p + 72 + 16 * g);
            }
            o->evictions = vmmd_get64(p + 96);
            o->restores = vmmd_get64(p + 104);
            o->requests = vmmd_get64(p + 112);
            o->in_flight = vmmd_get32(p + 120);
            o->flags = vmmd_get32(p + 124);
        }
        if (count)
            *count = n;
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}
