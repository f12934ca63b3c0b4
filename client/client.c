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
};

static void fail_conn(struct vidmm_client *c)
{
    c->broken = 1;
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
    ssize_t w;
    struct iovec siov = { c->buf, VMMD_HEADER_SIZE + n };
    union {
        char b[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } su;
    struct msghdr smh;
    memset(&smh, 0, sizeof smh);
    smh.msg_iov = &siov;
    smh.msg_iovlen = 1;
    if (sfd >= 0) {   /* the descriptor rides with the request (SCM_RIGHTS) */
        memset(&su, 0, sizeof su);
        smh.msg_control = su.b;
        smh.msg_controllen = sizeof su.b;
        struct cmsghdr *cm = CMSG_FIRSTHDR(&smh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &sfd, sizeof(int));
    }
    do
        w = sendmsg(c->fd, &smh, MSG_NOSIGNAL);
    while (w < 0 && errno == EINTR);
    if (w != (ssize_t)(VMMD_HEADER_SIZE + n)) {
        fail_conn(c);
        return VIDMM_E_DEVICE_LOST;
    }
    for (;;) {
        union {
            char b[CMSG_SPACE(sizeof(int))];
            struct cmsghdr align;
        } u;
        struct iovec iov = { c->buf, VMMD_MAX_MESSAGE };
        struct msghdr mh;
        memset(&mh, 0, sizeof mh);
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        mh.msg_control = u.b;
        mh.msg_controllen = sizeof u.b;
        ssize_t r = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC);
        if (r < 0 && errno == EINTR)
            continue;
        int fd = -1;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
            if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len >= CMSG_LEN(sizeof(int))) {
                size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t j = 0; j < k; j++) {
                    int f;
                    memcpy(&f, CMSG_DATA(cm) + j * sizeof(int), sizeof f);
                    if (fd < 0)
                        fd = f;
                    else
                        close(f);
                }
            }
        struct vmmd_header h;
        if (r <= 0 || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
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
#define LEAVE(c, st)                          \
    do {                                      \
        if ((c)->reply_fd >= 0)               \
            close((c)->reply_fd);             \
        (c)->reply_fd = -1;                   \
        pthread_mutex_unlock(&(c)->mu);       \
        return (st);                          \
    } while (0)

vidmm_status vidmm_client_connect(const char *path, struct vidmm_client **out)
{
    if (!out)
        return VIDMM_E_INVALID_ARG;
    *out = NULL;
    char def[108];
    if (!path)
        path = getenv("VIDMMD_SOCKET");
    if (!path) {
        const char *rt = getenv("XDG_RUNTIME_DIR");
        if (rt && *rt)
            snprintf(def, sizeof def, "%s/vidmmd.sock", rt);
        else
            snprintf(def, sizeof def, "/tmp/vidmmd-%ld.sock", (long)getuid());
        path = def;
    }
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

vidmm_status vidmm_client_device_destroy(struct vidmm_client *c, vidmm_handle device)
{
    ENTER(c);
    vidmm_status st = call_h(c, VMMD_OP_DEVICE_DESTROY, device, 8, NULL);
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
