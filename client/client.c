/*
 * client/client.c - libvidmm-client (include/vidmm-client/client.h):
 * each call is one request and its reply over the connection's
 * SOCK_SEQPACKET socket (docs/PROTOCOL.md).  No global state: everything
 * lives in struct vidmm_client (client/internal.h).  This file: the
 * socket found and connected, the request/reply exchange, TRIM events
 * received and delivered, ECHO and the checker.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

void vmmc_fail_conn(struct vidmm_client *c)
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
void vmmc_deliver_events(struct vidmm_client *c)
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
vidmm_status vmmc_call(struct vidmm_client *c, uint16_t op, size_t n)
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
        vmmc_fail_conn(c);
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
            vmmc_fail_conn(c);
            return VIDMM_E_DEVICE_LOST;
        }
        c->reply_fd = fd;
        c->rp = c->buf + VMMD_HEADER_SIZE + 8;
        c->rn = h.length - 8;
        return (vidmm_status)(int32_t)vmmd_get32(c->buf + VMMD_HEADER_SIZE);
    }
}

/* The reply payload holds at least n bytes (else the daemon broke the protocol). */
int vmmc_need(struct vidmm_client *c, size_t n)
{
    if (c->rn >= n)
        return 1;
    vmmc_fail_conn(c);
    return 0;
}

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
    vidmm_status st = vmmc_call(c, VMMD_OP_HELLO, 0);
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
    vidmm_status st = vmmc_call(c, VMMD_OP_HELLO, 0);
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
vidmm_status vmmc_call_h(struct vidmm_client *c, uint16_t op, uint64_t arg, size_t n_in, uint64_t *result)
{
    if (n_in)
        vmmd_put64(P, arg);
    vidmm_status st = vmmc_call(c, op, n_in);
    if (st >= 0 && result) {
        if (!vmmc_need(c, 8))
            return VIDMM_E_DEVICE_LOST;
        *result = vmmd_get64(c->rp);
    }
    return st;
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
            vmmc_fail_conn(c);
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

const char *vidmm_client_status_str(vidmm_status status)
{
    return vmmd_status_str((int)status);
}

vidmm_status vidmm_client_echo(struct vidmm_client *c, const void *data, size_t size)
{
    if ((size && !data) || size > VMMD_MAX_PAYLOAD - 8)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    if (size)
        memcpy(P, data, size);
    vidmm_status st = vmmc_call(c, VMMD_OP_ECHO, size);
    if (st >= 0 && c->rn != size)
        st = VIDMM_E_DEVICE_LOST;
    LEAVE(c, st);
}

vidmm_status vidmm_client_debug_check(struct vidmm_client *c, uint32_t *violations, uint32_t *clients,
                                      uint64_t *live_allocations)
{
    ENTER(c);
    vidmm_status st = vmmc_call(c, VMMD_OP_DEBUG_CHECK, 0);
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
