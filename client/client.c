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
    struct vmmd_rec_trim_event w;
    vmmd_get_rec_trim_event(p + 8, &w);   /* after the status */
    struct trim_event e = { w.device, w.flags, w.bytes_to_trim };
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
/* Requests and replies are encoded and decoded by proto.def's codecs
 * only: PUT_REQ writes request OP's fixed part m at P (a variable part
 * goes at P + VMMD_REQ_OP_SIZE) and sends it with extra more bytes;
 * GET_REP reads reply OP's fixed part into m when the reply holds it
 * (1), else breaks the connection (0). */
#define PUT_REQ(c, OP, name, m, extra) \
    (vmmd_put_req_##name(P, (m)), call((c), VMMD_OP_##OP, VMMD_REQ_##OP##_SIZE + (size_t)(extra)))
#define GET_REP(c, OP, name, m) (need((c), VMMD_REP_##OP##_SIZE) && (vmmd_get_rep_##name((c)->rp, (m)), 1))

/* A request's handle list: count u64 handles after its fixed part of
 * fixed bytes (MAKE_RESIDENT, EVICT, OFFER, RECLAIM). */
static void put_handles(struct vidmm_client *c, size_t fixed, const vidmm_handle *list, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++)
        vmmd_put64(P + fixed + 8 * (size_t)i, list[i]);
}
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
    struct vmmd_rep_hello m;
    if (st >= 0 && GET_REP(c, HELLO, hello, &m)) {
        memset(out, 0, sizeof *out);
        out->pid = m.pid;
        out->uid = m.uid;
        out->connection = m.connection;
    } else if (st >= 0) {
        st = VIDMM_E_DEVICE_LOST;
    }
    LEAVE(c, st);
}

/* A request whose fixed part is one u64 (a handle; n_in 8) or nothing
 * (n_in 0), whose reply may carry one u64 result: the layouts of
 * proto.def checked here, so that one helper serves them all. */
_Static_assert(VMMD_REQ_QUEUE_DESTROY_SIZE == 8 && VMMD_REQ_QUEUE_FENCE_SIZE == 8 &&
                   VMMD_REQ_ALLOC_DESTROY_SIZE == 8 && VMMD_REQ_LOCK_SIZE == 8 && VMMD_REQ_UNLOCK_SIZE == 8 &&
                   VMMD_REQ_ALLOC_QUERY_SIZE == 8 && VMMD_REQ_SHARE_EXPORT_SIZE == 8 &&
                   VMMD_REQ_SHARE_QUERY_SIZE == 8 && VMMD_REQ_CONTEXT_DESTROY_SIZE == 8 &&
                   VMMD_REQ_CONTEXT_FENCE_SIZE == 8 && VMMD_REQ_DEVICE_DESTROY_SIZE == 8 &&
                   VMMD_REQ_SHARE_OPEN_SIZE == 0,
               "call_h's requests: one u64 or nothing");
_Static_assert(VMMD_REP_QUEUE_FENCE_SIZE == 8 && VMMD_REP_SHARE_OPEN_SIZE == 8 && VMMD_REP_DEVICE_CREATE_SIZE == 8,
               "call_h's results: one u64");
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
    struct vmmd_req_queue_create m = { device, (int32_t)priority, 0 };
    vidmm_status st = PUT_REQ(c, QUEUE_CREATE, queue_create, &m, 0);
    struct vmmd_rep_queue_create rm = { 0 };
    if (st >= 0)
        *queue = GET_REP(c, QUEUE_CREATE, queue_create, &rm) ? rm.queue : 0;
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
    struct vmmd_req_queue_wait m = { queue, value, timeout_ns };
    vidmm_status st = PUT_REQ(c, QUEUE_WAIT, queue_wait, &m, 0);
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
    struct vmmd_req_alloc_create m = { device, flags, (uint32_t)priv_size };
    if (priv_size)
        memcpy(P + VMMD_REQ_ALLOC_CREATE_SIZE, priv, priv_size);
    vidmm_status st = PUT_REQ(c, ALLOC_CREATE, alloc_create, &m, priv_size);
    struct vmmd_rep_alloc_create rm = { 0 };
    if (st >= 0)
        *out = GET_REP(c, ALLOC_CREATE, alloc_create, &rm) ? rm.allocation : 0;
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
    struct vmmd_req_make_resident m = { device, args->paging_queue, args->flags, args->count };
    put_handles(c, VMMD_REQ_MAKE_RESIDENT_SIZE, args->allocations, args->count);
    vidmm_status st = PUT_REQ(c, MAKE_RESIDENT, make_resident, &m, 8 * (size_t)args->count);
    if (!c->broken && c->rn >= VMMD_REP_MAKE_RESIDENT_SIZE) {
        struct vmmd_rep_make_resident rm;
        vmmd_get_rep_make_resident(c->rp, &rm);
        args->paging_fence_value = rm.paging_fence_value;
        args->bytes_to_trim = rm.bytes_to_trim;
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
    struct vmmd_req_evict m = { device, args->flags, args->count };
    put_handles(c, VMMD_REQ_EVICT_SIZE, args->allocations, args->count);
    vidmm_status st = PUT_REQ(c, EVICT, evict, &m, 8 * (size_t)args->count);
    if (!c->broken && c->rn >= VMMD_REP_EVICT_SIZE) {
        struct vmmd_rep_evict rm;
        vmmd_get_rep_evict(c->rp, &rm);
        args->bytes_to_trim = rm.bytes_to_trim;
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_query_video_memory_info(struct vidmm_client *c, enum vidmm_segment_group group,
                                                  struct vidmm_video_memory_info *out)
{
    if (!out)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    struct vmmd_req_query_vidmem m = { (uint32_t)group, 0 };
    vidmm_status st = PUT_REQ(c, QUERY_VIDMEM, query_vidmem, &m, 0);
    struct vmmd_rep_query_vidmem rm;
    if (st >= 0 && GET_REP(c, QUERY_VIDMEM, query_vidmem, &rm)) {
        out->budget = rm.budget;
        out->current_usage = rm.current_usage;
        out->current_reservation = rm.current_reservation;
        out->available_for_reservation = rm.available_for_reservation;
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
    struct vmmd_rep_lock rm;
    if (!GET_REP(c, LOCK, lock, &rm))
        LEAVE(c, VIDMM_E_DEVICE_LOST);
    uint64_t size = rm.size;
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
    struct vmmd_rep_alloc_query m;
    if (st >= 0 && GET_REP(c, ALLOC_QUERY, alloc_query, &m)) {
        out->size = m.size;
        out->requested_size = m.requested_size;
        out->alignment = m.alignment;
        out->flags = m.flags;
        out->segment_id = m.segment_id;
        out->supported_segment_set = m.supported_segment_set;
        out->preferred_segment = m.preferred_segment;
        out->lock_count = m.lock_count;
        out->resident = m.resident;
        out->moves = m.moves;
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_gpuva_reserve(struct vidmm_client *c, uint64_t base, uint64_t min, uint64_t max,
                                        uint64_t size, unsigned mode, uint64_t *va)
{
    if (!va)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    struct vmmd_req_gpuva_reserve m = { base, min, max, size, mode, 0 };
    vidmm_status st = PUT_REQ(c, GPUVA_RESERVE, gpuva_reserve, &m, 0);
    struct vmmd_rep_gpuva_reserve rm = { 0 };
    if (st >= 0)
        *va = GET_REP(c, GPUVA_RESERVE, gpuva_reserve, &rm) ? rm.va : 0;
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_gpuva_map(struct vidmm_client *c, uint64_t base, uint64_t min, uint64_t max,
                                    vidmm_handle allocation, uint64_t offset, uint64_t size, unsigned protection,
                                    uint64_t driver_protection, uint64_t *va)
{
    if (!va)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    struct vmmd_req_gpuva_map m = { base, min, max, allocation, offset, size, driver_protection, protection, 0 };
    vidmm_status st = PUT_REQ(c, GPUVA_MAP, gpuva_map, &m, 0);
    struct vmmd_rep_gpuva_map rm = { 0 };
    if (st >= 0)
        *va = GET_REP(c, GPUVA_MAP, gpuva_map, &rm) ? rm.va : 0;
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_gpuva_free(struct vidmm_client *c, uint64_t va, uint64_t size)
{
    ENTER(c);
    struct vmmd_req_gpuva_free m = { va, size };
    vidmm_status st = PUT_REQ(c, GPUVA_FREE, gpuva_free, &m, 0);
    LEAVE(c, st);
}

vidmm_status vidmm_client_debug_check(struct vidmm_client *c, uint32_t *violations, uint32_t *clients,
                                      uint64_t *live_allocations)
{
    ENTER(c);
    vidmm_status st = call(c, VMMD_OP_DEBUG_CHECK, 0);
    struct vmmd_rep_debug_check m;
    if (st >= 0 && GET_REP(c, DEBUG_CHECK, debug_check, &m)) {
        if (violations)
            *violations = m.violations;
        if (clients)
            *clients = m.clients;
        if (live_allocations)
            *live_allocations = m.live_allocations;
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
    struct vmmd_rep_share_query m;
    if (st >= 0 && GET_REP(c, SHARE_QUERY, share_query, &m)) {
        memset(out, 0, sizeof *out);
        out->holders = m.holders;
        out->creator_holds = m.creator_holds;
        out->is_creator = m.is_creator;
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
    struct vmmd_rep_adapter_info m;
    if (st >= 0 && GET_REP(c, ADAPTER_INFO, adapter_info, &m)) {
        memset(out, 0, sizeof *out);
        out->wddm_version = m.wddm_version;
        out->memory_management_caps = m.memory_management_caps;
        out->physical_adapter_flags = m.physical_adapter_flags;
        out->segment_count = m.segment_count;
        out->aperture_segment_id = m.aperture_segment_id;
        out->agp_segment_id = m.agp_segment_id;
        out->paging_buffer_segment_id = m.paging_buffer_segment_id;
        out->paging_buffer_size = m.paging_buffer_size;
        out->aperture_segment_commit_limit = m.aperture_segment_commit_limit;
        out->live_allocations = m.live_allocations;
        out->paging_buffers_submitted = m.paging_buffers_submitted;
        out->paging_restarts = m.paging_restarts;
        out->last_fence_submitted = m.last_fence_submitted;
        out->last_fence_completed = m.last_fence_completed;
        for (int i = 0; i < 17; i++) {
            out->paging_ops[i] = m.paging_ops[i];
            out->paging_bytes[i] = m.paging_bytes[i];
        }
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_segment_query(struct vidmm_client *c, uint32_t id, struct vidmm_segment_info *out)
{
    if (!out)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    struct vmmd_req_segment_query q = { id, 0 };
    vidmm_status st = PUT_REQ(c, SEGMENT_QUERY, segment_query, &q, 0);
    struct vmmd_rep_segment_query m;
    if (st >= 0 && GET_REP(c, SEGMENT_QUERY, segment_query, &m)) {
        memset(out, 0, sizeof *out);
        out->id = m.id;
        out->kind = (enum vidmm_segment_kind)m.kind;
        out->flags = m.flags;
        out->page_size = m.page_size;
        out->base_address = m.base_address;
        out->size = m.size;
        out->commit_limit = m.commit_limit;
        out->committed = m.committed;
        out->free_bytes = m.free_bytes;
        out->largest_free = m.largest_free;
        out->allocations = m.allocations;
        out->cpu_visible = (int)m.cpu_visible;
        out->cpu_host_aperture = (int)m.cpu_host_aperture;
        out->host_aperture_pages = m.host_aperture_pages;
        out->host_aperture_free = m.host_aperture_free;
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

/* ---- priorities, offer and reclaim, reservations, budgets --------------------- */

vidmm_status vidmm_client_allocation_set_priority(struct vidmm_client *c, vidmm_handle allocation, uint32_t priority)
{
    ENTER(c);
    struct vmmd_req_alloc_set_priority m = { allocation, priority, 0 };
    vidmm_status st = PUT_REQ(c, ALLOC_SET_PRIORITY, alloc_set_priority, &m, 0);
    LEAVE(c, st);
}


vidmm_status vidmm_client_offer(struct vidmm_client *c, vidmm_handle device, const vidmm_handle *allocations,
                                uint32_t count, uint32_t offer_priority)
{
    if ((count && !allocations) || count > VMMD_MAX_LIST)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    struct vmmd_req_offer m = { device, offer_priority, count };
    put_handles(c, VMMD_REQ_OFFER_SIZE, allocations, count);
    vidmm_status st = PUT_REQ(c, OFFER, offer, &m, 8 * (size_t)count);
    LEAVE(c, st);
}

vidmm_status vidmm_client_reclaim(struct vidmm_client *c, vidmm_handle paging_queue, const vidmm_handle *allocations,
                                  uint32_t count, uint32_t *results, uint64_t *paging_fence_value)
{
    if ((count && (!allocations || !results)) || count > VMMD_MAX_LIST)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    struct vmmd_req_reclaim m = { paging_queue, 0, count };
    put_handles(c, VMMD_REQ_RECLAIM_SIZE, allocations, count);
    vidmm_status st = PUT_REQ(c, RECLAIM, reclaim, &m, 8 * (size_t)count);
    if (!c->broken && st >= 0 && c->rn != VMMD_REP_RECLAIM_SIZE + 4 * (size_t)count)
        fail_conn(c);   /* the daemon answered another list */
    if (!c->broken && st >= 0) {
        struct vmmd_rep_reclaim rm;
        vmmd_get_rep_reclaim(c->rp, &rm);
        if (paging_fence_value)
            *paging_fence_value = rm.paging_fence_value;
        for (uint32_t i = 0; i < count; i++)
            results[i] = vmmd_get32(c->rp + VMMD_REP_RECLAIM_SIZE + 4 * (size_t)i);
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}


vidmm_status vidmm_client_change_video_memory_reservation(struct vidmm_client *c, enum vidmm_segment_group group,
                                                          uint64_t reservation)
{
    ENTER(c);
    struct vmmd_req_change_reservation m = { (uint32_t)group, 0, reservation };
    vidmm_status st = PUT_REQ(c, CHANGE_RESERVATION, change_reservation, &m, 0);
    LEAVE(c, st);
}

vidmm_status vidmm_client_process_set_budget(struct vidmm_client *c, enum vidmm_segment_group group, uint64_t budget)
{
    ENTER(c);
    struct vmmd_req_process_set_budget m = { (uint32_t)group, 0, budget };
    vidmm_status st = PUT_REQ(c, PROCESS_SET_BUDGET, process_set_budget, &m, 0);
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
    struct vmmd_req_trim_register m = { device, callback ? 1u : 0u, 0 };
    vidmm_status st = PUT_REQ(c, TRIM_REGISTER, trim_register, &m, 0);
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
    for (uint32_t i = 0; i < count; i++) {
        const struct vidmm_gpuva_update_op *o = &ops[i];
        struct vmmd_rec_gpuva_op w = { o->type, o->protection, o->va, o->size, o->allocation, o->offset,
                                       o->driver_protection, o->unmap_mode, o->reserved, o->source };
        vmmd_put_rec_gpuva_op(P + VMMD_REQ_GPUVA_UPDATE_SIZE + (size_t)i * VMMD_GPUVA_OP_SIZE, &w);
    }
    struct vmmd_req_gpuva_update m = { count, 0 };
    vidmm_status st = PUT_REQ(c, GPUVA_UPDATE, gpuva_update, &m, (size_t)count * VMMD_GPUVA_OP_SIZE);
    LEAVE(c, st);
}

/* ---- contexts, virtual submission, context fences -------------------------------- */

vidmm_status vidmm_client_context_create(struct vidmm_client *c, vidmm_handle device,
                                         const struct vidmm_context_desc *desc, vidmm_handle *context)
{
    if (!desc || !context)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    struct vmmd_req_context_create m = { device, desc->node, desc->mode, desc->flags, desc->reserved };
    vidmm_status st = PUT_REQ(c, CONTEXT_CREATE, context_create, &m, 0);
    struct vmmd_rep_context_create rm = { 0 };
    if (st >= 0)
        *context = GET_REP(c, CONTEXT_CREATE, context_create, &rm) ? rm.context : 0;
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
    struct vmmd_req_submit_virtual m = { context, gpu_va, size, 0 };
    vidmm_status st = PUT_REQ(c, SUBMIT_VIRTUAL, submit_virtual, &m, 0);
    struct vmmd_rep_submit_virtual rm = { 0 };
    if (st >= 0)
        *fence = GET_REP(c, SUBMIT_VIRTUAL, submit_virtual, &rm) ? rm.fence : 0;
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_context_fence(struct vidmm_client *c, vidmm_handle context, uint64_t *submitted,
                                        uint64_t *completed)
{
    if (!submitted || !completed)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vidmm_status st = call_h(c, VMMD_OP_CONTEXT_FENCE, context, 8, NULL);
    struct vmmd_rep_context_fence m;
    if (st >= 0 && GET_REP(c, CONTEXT_FENCE, context_fence, &m)) {
        *submitted = m.submitted;
        *completed = m.completed;
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_context_wait(struct vidmm_client *c, vidmm_handle context, uint64_t value,
                                       uint64_t timeout_ns)
{
    ENTER(c);
    struct vmmd_req_context_wait m = { context, value, timeout_ns };
    vidmm_status st = PUT_REQ(c, CONTEXT_WAIT, context_wait, &m, 0);
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
        struct vmmd_rep_admin_adapter m;
        vmmd_get_rep_admin_adapter(r, &m);
        memset(out, 0, sizeof *out);
        out->daemon_pid = m.daemon_pid;
        out->daemon_uid = m.daemon_uid;
        out->clients = m.clients;
        uint32_t nseg = m.segments;
        out->connections = m.connections;
        out->requests = m.requests;
        out->protocol_errors = m.protocol_errors;
        out->locks = m.locks;
        out->host_blocks = m.host_blocks;
        out->host_bytes = m.host_bytes;
        out->live_allocations = m.live_allocations;
        out->make_resident_calls = m.make_resident_calls;
        out->evictions = m.evictions;
        out->restores = m.restores;
        out->bytes_evicted = m.bytes_evicted;
        out->bytes_restored = m.bytes_restored;
        out->paging_buffers_submitted = m.paging_buffers_submitted;
        out->uptime_ns = m.uptime_ns;
        out->max_alloc_bytes = m.max_alloc_bytes;
        out->max_locked_bytes = m.max_locked_bytes;
        out->max_handles = m.max_handles;
        out->max_requests = m.max_requests;
        out->max_connections_per_uid = m.max_connections_per_uid;
        out->wddm_version = m.wddm_version;
        out->quota_refusals = m.quota_refusals;
        if (nseg > VIDMM_CLIENT_ADMIN_MAX_SEGMENTS ||
            !need(c, VMMD_ADMIN_ADAPTER_FIXED + (size_t)nseg * VMMD_ADMIN_SEGMENT_SIZE))
            LEAVE(c, VIDMM_E_DEVICE_LOST);
        out->segment_count = nseg;
        for (uint32_t i = 0; i < nseg; i++) {
            struct vmmd_rec_admin_segment w;
            vmmd_get_rec_admin_segment(r + VMMD_ADMIN_ADAPTER_FIXED + (size_t)i * VMMD_ADMIN_SEGMENT_SIZE, &w);
            struct vidmm_client_admin_segment *g = &out->segment[i];
            g->id = w.id;
            g->kind = w.kind;
            g->size = w.size;
            g->committed = w.committed;
            g->free_bytes = w.free_bytes;
            g->commit_limit = w.commit_limit;
            g->flags = w.flags;
            g->page_size = w.page_size;
            memcpy(g->region, w.name, 15);
            g->region[15] = 0;
        }
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

/* One ADMIN_CLIENTS record into the client's structure. */
static void admin_process_get(const uint8_t *p, struct vidmm_client_admin_process *o)
{
    struct vmmd_rec_admin_client w;
    vmmd_get_rec_admin_client(p, &w);
    memset(o, 0, sizeof *o);
    o->connection = w.connection;
    o->pid = w.pid;
    o->uid = w.uid;
    o->gid = w.gid;
    memcpy(o->comm, w.comm, 15);
    o->comm[15] = 0;
    o->process = w.process;
    o->allocated_bytes = w.allocated_bytes;
    o->allocations = w.allocations;
    o->handles = w.handles;
    o->locked_bytes = w.locked_bytes;
    o->budget[0] = w.local_budget;
    o->usage[0] = w.local_usage;
    o->budget[1] = w.nonlocal_budget;
    o->usage[1] = w.nonlocal_usage;
    o->evictions = w.evictions;
    o->restores = w.restores;
    o->requests = w.requests;
    o->in_flight = w.in_flight;
    o->flags = w.flags;
}

vidmm_status vidmm_client_admin_processes(struct vidmm_client *c, uint32_t first,
                                          struct vidmm_client_admin_process *out, uint32_t max, uint32_t *count,
                                          uint32_t *total)
{
    if (max && !out)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    struct vmmd_req_admin_clients q = { first, 0 };
    vidmm_status st = PUT_REQ(c, ADMIN_CLIENTS, admin_clients, &q, 0);
    struct vmmd_rep_admin_clients m;
    if (st >= 0 && GET_REP(c, ADMIN_CLIENTS, admin_clients, &m)) {
        const uint8_t *recs = c->rp + VMMD_REP_ADMIN_CLIENTS_SIZE;
        uint32_t n = m.count;
        if (n > VMMD_ADMIN_CLIENTS_PER_REPLY ||
            !need(c, VMMD_REP_ADMIN_CLIENTS_SIZE + (size_t)n * VMMD_ADMIN_CLIENT_SIZE))
            LEAVE(c, VIDMM_E_DEVICE_LOST);
        if (total)
            *total = m.total;
        if (n > max)
            n = max;
        for (uint32_t i = 0; i < n; i++)
            admin_process_get(recs + (size_t)i * VMMD_ADMIN_CLIENT_SIZE, &out[i]);
        if (count)
            *count = n;
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}
