/*
 * daemon/server_internal.h - what the files of vidmmd's request handling
 * share (docs/DAEMON.md): a connection's handle table (struct obj), the
 * exports of shared allocations, the queued replies, the parked waits,
 * the client and server state, and the request being answered (struct
 * req).  Only daemon/server.c, dispatch.c, handles.c, share.c and the
 * req_*.c handler files include it; everything else sees server.h.
 *
 * Files: server.c (the server and its connections: create, connect,
 * drop, replies and events queued and flushed), dispatch.c (a message
 * decoded and sent to its handler through the {opcode, minimum size,
 * handler} table), handles.c (the connection's handle table),
 * share.c (CPU locks and shared allocations), req_device.c (devices,
 * paging queues, contexts, waits, trim events), req_allocation.c
 * (allocations, residency, budgets, GPU virtual addresses), req_admin.c
 * (adapter and segment queries, the checker, administration).
 */
#ifndef VIDMMD_SERVER_INTERNAL_H
#define VIDMMD_SERVER_INTERNAL_H

#include "server.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OBJ_FREE   0u
#define OBJ_ALLOC  1u
#define OBJ_DEVICE 3u
#define OBJ_QUEUE  5u
#define OBJ_CONTEXT 7u

#define OUT_MAX_BYTES ((size_t)4 << 20)   /* replies a client may leave unread before it is dropped */

struct obj {
    uint8_t type;
    uint16_t gen;
    uint32_t parent;        /* queue: the device's slot */
    vidmm_handle lib;
    uint64_t size;          /* allocation: bytes placed (the per-connection byte limit) */
    /* allocation under lock: the daemon's mapping of the copy */
    uint32_t lock_count;
    uint8_t *map;
    uint64_t map_size;
    uint32_t share;         /* allocation: its export's index + 1, once exported or opened (0: none) */
};

/* One exported shared allocation: the daemon's own file that names it,
 * and how many handles of any connection hold the allocation (each is a
 * library holder: when the last goes, so does the allocation). */
struct share_export {
    int fd;                 /* the daemon's memfd (-1: a free entry) */
    dev_t dev;
    ino_t ino;
    uint8_t nonce[16];      /* its sealed content */
    struct vidmm_share_token token;
    uint32_t refs;
};

struct outmsg {
    struct outmsg *next;
    int fd;                 /* to pass with it, or -1 */
    size_t n;
    uint8_t buf[];
};

/* A parked QUEUE_WAIT or CONTEXT_WAIT. */
struct wait {
    struct vmmd_client *c;
    uint64_t request_id;
    uint16_t op;            /* VMMD_OP_QUEUE_WAIT or VMMD_OP_CONTEXT_WAIT */
    vidmm_handle queue;     /* the paging queue or the context */
    uint64_t value;
    uint64_t deadline_ns;   /* UINT64_MAX = none */
};

struct vmmd_client {
    struct vmmd_server *srv;
    int fd;
    uint32_t id;
    size_t index;           /* in vmmd_server.clients: removal is O(1) */
    int dropped;            /* gone, its memory kept until vmmd_server_reap */
    struct vmmd_client *reap_next;
    int pending;            /* on the server's list of clients with output queued outside their turn */
    struct vmmd_client *pend_prev, *pend_next;
    pid_t pid;
    uid_t uid;
    gid_t gid;
    vidmm_status refused;   /* < 0: the adapter would not take it */
    int closing;
    int dropping;           /* being torn down: no more events */
    vidmm_handle process, device;
    uint16_t salt;
    struct obj *objs;       /* slot 0 unused */
    uint32_t nobj, cap, live;
    uint64_t locked_bytes;
    char comm[16];          /* /proc/PID/comm at connect ("" when unknown) */
    uint64_t alloc_bytes;   /* bytes of the allocations alive */
    uint32_t nallocs;
    uint32_t nwaits;        /* parked QUEUE_WAITs */
    uint64_t requests;
    uint64_t retired_evictions, retired_restores;   /* of allocations destroyed */
    struct outmsg *out_head, *out_tail;
    size_t out_bytes, out_count;
    vidmm_status last_status;   /* of the last vmmd_reply (the verbose log) */
    int loop_word;
};

struct vmmd_server {
    struct vmmd_server_config cfg;
    struct vmmd_client **clients;   /* unordered; each client knows its index */
    size_t nclients, cap;
    struct vmmd_client *reap;       /* dropped, freed by vmmd_server_reap */
    struct vmmd_client *pending;    /* got output outside their turn (wait answers, trim events) */
    struct wait *waits;
    size_t nwaits, wcap;
    uint32_t next_id;
    uint64_t salt_state;
    uint64_t start_ns;
    struct vmmd_server_stats st;
    struct share_export *exports;
    size_t nexports;
};

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define LOG(s, lvl, ...)                                      \
    do {                                                      \
        if ((s)->cfg.log && (s)->cfg.verbose >= (lvl)) {      \
            fprintf((s)->cfg.log, "vidmmd: " __VA_ARGS__);    \
            fflush((s)->cfg.log);                             \
        }                                                     \
    } while (0)

/* ---- the request being answered ------------------------------------------ */

/* One request being answered.  A handler reads the decoded fields in
 * r->m, returns the reply's status and leaves the reply's fields in
 * out[0..n) (n stays 0 where the reply has none for that outcome) and a
 * descriptor to pass in fd; one that queues its own reply, or parks a
 * wait, sets answered. */
struct req {
    struct vmmd_server *s;
    struct vmmd_client *c;
    struct vidmm_adapter *a;
    const struct vmmd_request *r;
    int in_fd;                          /* SHARE_OPEN's descriptor */
    uint8_t out[VMMD_ADAPTER_INFO_SIZE]; /* the largest fixed reply */
    size_t n;
    int fd;
    int answered;
};

/* ---- handles.c: the connection's handle table ------------------------------ */

/* The wire handle of the connection's object in slot. */
uint64_t vmmd_obj_handle(const struct vmmd_client *c, uint32_t slot);
/* The slot a wire handle of that type names in this connection, or 0. */
uint32_t vmmd_obj_find(const struct vmmd_client *c, uint64_t h, uint8_t type);
/* A new object in the connection's table (its handle limit checked):
 * its slot in *out. */
vidmm_status vmmd_obj_add(struct vmmd_server *s, struct vmmd_client *c, uint8_t type, vidmm_handle lib,
                          uint32_t parent, uint32_t *out);
/* The allocation's CPU locks dropped: the daemon's mapping of it unmapped. */
void vmmd_obj_unlock_all(struct vmmd_client *c, struct obj *o);
/* The slot freed: its locks, its export reference, its bytes given back. */
void vmmd_obj_free(struct vmmd_client *c, uint32_t slot);
/* One holder fewer of export share (index + 1); the last closes it. */
void vmmd_export_unref(struct vmmd_server *s, uint32_t share);
/* A new object's wire handle as the 8-byte reply. */
void vmmd_put_handle(struct req *x, uint32_t slot);
/* A request's allocation list translated to vidmm handles: into
 * stackbuf when it fits, else a list *out the caller frees. */
vidmm_status vmmd_list_get(const struct req *x, vidmm_handle *stackbuf, size_t stackn, vidmm_handle **out);
/* The wire handle h of type in x's connection: its slot, 0 when it is
 * not a live object of that type. */
static inline uint32_t req_find(const struct req *x, uint64_t h, uint8_t type) { return vmmd_obj_find(x->c, h, type); }

/* ---- server.c: replies, events, the clients to flush ------------------------ */

/* Queues a reply (status, payload, a descriptor to pass or -1). */
void vmmd_reply(struct vmmd_client *c, uint16_t opcode, uint64_t id, vidmm_status st, const uint8_t *payload,
                size_t n, int fd);
/* Queues an event (TRIM) outside any request. */
void vmmd_send_event(struct vmmd_client *c, uint16_t opcode, const uint8_t *payload, size_t n);
/* c got output outside its own turn: the event loop flushes it. */
void vmmd_mark_pending(struct vmmd_server *s, struct vmmd_client *c);

/* ---- the request handlers, one per request of proto.def --------------------- */

#define VMMD_REQ(OP, name, fields) vidmm_status vmmd_serve_##name(struct req *x);
#define VMMD_REQ0(OP, name) vidmm_status vmmd_serve_##name(struct req *x);
#define VMMD_REP(OP, name, fields)
#define VMMD_REP0(OP, name)
#define VMMD_REC(name, fields)
#include "proto.def"
#undef VMMD_REQ
#undef VMMD_REQ0
#undef VMMD_REP
#undef VMMD_REP0
#undef VMMD_REC

#endif
