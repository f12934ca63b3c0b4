/*
 * daemon/server.h - vidmmd's state and request handling, apart from the
 * sockets' event loop (daemon/main.c): the clients, each one vidmm
 * process with its own handle translation table, the parked paging-queue
 * waits, and the replies queued per client.  The fuzz harness
 * (fuzz/proto.c) drives the same code with clients that have no socket.
 * docs/DAEMON.md describes the design.
 */
#ifndef VIDMMD_SERVER_H
#define VIDMMD_SERVER_H

#include "proto.h"

#include "vidmm/vidmm.h"

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct vmmd_server;
struct vmmd_client;

struct vmmd_server_config {
    struct vidmm_adapter *adapter;     /* owned by the caller, outlives the server */
    FILE *log;                         /* NULL = no log */
    int verbose;                       /* 1: every connection; 2: every request */
    uint64_t max_locked_bytes;         /* per client: bytes under lock at once (0 = 256 MiB) */
    uint32_t max_objects;              /* per client: handles alive at once (0 = 65,536) */
    uint64_t max_alloc_bytes;          /* per client: bytes of allocations alive (0 = 4 GiB) */
    uint32_t max_requests;             /* per client: requests in flight - parked waits and
                                          replies not yet taken (0 = 256) */
    uint32_t max_connections_per_uid;  /* connections one uid holds at once (0 = 256) */
    uint64_t salt_seed;                /* handle salts' seed: 0 = from the clock (fuzzing fixes it) */
    int allow_set_budget;              /* PROCESS_SET_BUDGET served (tests); else VIDMM_E_NOT_SUPPORTED */
    /* Who may send administration requests besides root (the daemon's
     * own uid after any privilege drop). */
    uid_t admin_uid;
    /* The daemon's host-allocator counters (ADMIN_ADAPTER); NULL = 0. */
    void (*host_usage)(void *user, int64_t *blocks, int64_t *bytes);
    void *host_usage_user;
};

/* VIDMM_E_INVALID_ARG, VIDMM_E_NO_HOST_MEMORY or VIDMM_OK. */
vidmm_status vmmd_server_create(const struct vmmd_server_config *cfg, struct vmmd_server **out);
/* Tears down every client still connected (as if each had died). */
void vmmd_server_destroy(struct vmmd_server *s);

/* A new connection: fd < 0 for a client without a socket (the fuzz
 * harness; replies are dropped).  pid/uid/gid from SO_PEERCRED.  Never
 * NULL except when host memory ran out; a client the adapter cannot take
 * (no process slot) is still made, answers every request with the
 * refusal and is then closed. */
struct vmmd_client *vmmd_client_new(struct vmmd_server *s, int fd, pid_t pid, uid_t uid, gid_t gid);
/* The connection is gone (EOF, error, SIGKILL of the peer, or a protocol
 * error): its process and everything in it is destroyed.  Closes fd.
 * O(1) in the number of clients (plus the parked waits).  The client's
 * memory stays until vmmd_server_reap, so an event loop holding its
 * pointer in a batch of events can still ask vmmd_client_dropped. */
void vmmd_client_drop(struct vmmd_server *s, struct vmmd_client *c, const char *why);
/* 1 when c was dropped (and not yet reaped). */
int vmmd_client_dropped(const struct vmmd_client *c);
/* Free the clients dropped so far (the event loop, after each batch). */
void vmmd_server_reap(struct vmmd_server *s);

/* One message as received (n bytes; fds_received = descriptors that came
 * with it, already closed by the caller).  Queues the reply (or parks a
 * wait).  Returns 0, or -1 when the client must be dropped after its
 * queued replies are flushed (framing broken). */
int vmmd_client_message(struct vmmd_server *s, struct vmmd_client *c, const uint8_t *msg, size_t n, int fds_received,
                        int truncated);
/* The same with the first descriptor received (fd, or -1), which the
 * call owns and closes: a SHARE_OPEN names its share by it. */
int vmmd_client_message_fd(struct vmmd_server *s, struct vmmd_client *c, const uint8_t *msg, size_t n,
                           int fds_received, int fd, int truncated);

/* Send what is queued: 1 all sent, 0 the socket is full (wait for
 * POLLOUT), -1 the connection failed (drop it). */
int vmmd_client_flush(struct vmmd_client *c);
int vmmd_client_fd(const struct vmmd_client *c);
/* The wire handle a connection's slot would have (type 1 allocation,
 * 3 device, 5 paging queue; generation gen): the fuzz harness names
 * objects with it. */
uint64_t vmmd_client_handle_guess(const struct vmmd_client *c, uint8_t type, uint32_t slot, uint16_t gen);
/* A duplicate of the i-th live export file (the descriptor a
 * SHARE_EXPORT reply carries), or -1: the fuzz harness hands it back in
 * SHARE_OPEN requests, since its socket-less clients get no replies. */
int vmmd_server_share_fd(const struct vmmd_server *s, uint32_t i);
int vmmd_client_closing(const struct vmmd_client *c);   /* drop once flushed */
/* Messages queued and not sent yet: a trim event for this client may be
 * queued while another client's request is handled, so the loop flushes
 * every client with output after each batch. */
int vmmd_client_has_output(const struct vmmd_client *c);
/* One word the event loop keeps per client (its epoll mode). */
int *vmmd_client_loop_word(struct vmmd_client *c);
struct vmmd_client *vmmd_server_client_at(struct vmmd_server *s, size_t i);
size_t vmmd_server_client_count(const struct vmmd_server *s);

/* Answer the parked waits (paging-queue and context fences) whose fence
 * passed or whose time ran out;
 * returns how many are still parked. */
size_t vmmd_server_poll_waits(struct vmmd_server *s);
/* The clients that got output outside their own turn (wait answers,
 * trim events) since they were last taken, one at a time (NULL: none
 * left): the event loop flushes those, not every client. */
struct vmmd_client *vmmd_server_next_pending(struct vmmd_server *s);

struct vmmd_server_stats {
    uint64_t connections, disconnections, requests, protocol_errors, locks, copy_bytes;
    uint64_t waits_parked, waits_answered;
    uint64_t shares_exported, shares_opened, shares_live;   /* shared allocations' descriptors */
    uint64_t trim_events, submissions;
    uint64_t quota_refusals;           /* requests and connections refused by a limit */
};
void vmmd_server_get_stats(const struct vmmd_server *s, struct vmmd_server_stats *out);

#endif
