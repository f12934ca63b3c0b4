/*
 * client/internal.h - what the files of libvidmm-client share: the
 * connection (struct vidmm_client), its CPU mappings and trim
 * registrations, and the one request/reply exchange every call makes.
 *
 * Files: client.c (connect, the exchange, events, echo and the checker),
 * device.c (devices, paging queues, contexts, submission, trim
 * registrations), allocation.c (allocations, CPU locks, residency,
 * budgets, sharing, GPU virtual addresses), adapter.c (adapter and
 * segment queries, the administration view).
 */
#ifndef VIDMM_CLIENT_INTERNAL_H
#define VIDMM_CLIENT_INTERNAL_H

#include "vidmm-client/client.h"

#include "proto.h"

#include <pthread.h>
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

#define P (c->buf + VMMD_HEADER_SIZE)
/* Requests and replies are encoded and decoded by proto.def's codecs
 * only: PUT_REQ writes request OP's fixed part m at P (a variable part
 * goes at P + VMMD_REQ_OP_SIZE) and sends it with extra more bytes;
 * GET_REP reads reply OP's fixed part into m when the reply holds it
 * (1), else breaks the connection (0). */
#define PUT_REQ(c, OP, name, m, extra) \
    (vmmd_put_req_##name(P, (m)), vmmc_call((c), VMMD_OP_##OP, VMMD_REQ_##OP##_SIZE + (size_t)(extra)))
#define GET_REP(c, OP, name, m) (vmmc_need((c), VMMD_REP_##OP##_SIZE) && (vmmd_get_rep_##name((c)->rp, (m)), 1))

/* A request's handle list: count u64 handles after its fixed part of
 * fixed bytes (MAKE_RESIDENT, EVICT, OFFER, RECLAIM). */
static inline void put_handles(struct vidmm_client *c, size_t fixed, const vidmm_handle *list, uint32_t count)
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
            vmmc_deliver_events(c);                \
        return leave_st_;                     \
    } while (0)

/* The connection is broken: every later call is VIDMM_E_DEVICE_LOST. */
void vmmc_fail_conn(struct vidmm_client *c);
/* The TRIM events received so far to their callbacks (LEAVE). */
void vmmc_deliver_events(struct vidmm_client *c);
/* Sends the request of n payload bytes at P and waits for its reply:
 * its status, the payload after it in c->rp / c->rn. */
vidmm_status vmmc_call(struct vidmm_client *c, uint16_t op, size_t n);
/* The reply payload holds at least n bytes (else the daemon broke the
 * protocol and the connection is failed): 1, else 0. */
int vmmc_need(struct vidmm_client *c, size_t n);
/* A request of one u64 (n_in 8) or nothing (n_in 0) whose reply may
 * carry one u64 result. */
vidmm_status vmmc_call_h(struct vidmm_client *c, uint16_t op, uint64_t arg, size_t n_in, uint64_t *result);

#endif
