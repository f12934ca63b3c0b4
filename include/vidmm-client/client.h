/*
 * vidmm-client/client.h - libvidmm-client: the vidmm API over a
 * connection to vidmmd, the daemon that owns the adapter
 * (docs/DAEMON.md; the wire format is docs/PROTOCOL.md).
 *
 * Same calls, arguments and statuses as the library (vidmm/vidmm.h),
 * with a connection in place of the adapter.  The process is implicit:
 * each connection is one vidmm process, destroyed by the daemon when the
 * connection closes - whether the program called
 * vidmm_client_disconnect, exited or was killed.  Handles are the
 * connection's own: a handle value another connection holds is
 * VIDMM_E_INVALID_HANDLE here.
 *
 * Statuses the connection adds: VIDMM_E_DEVICE_LOST when the daemon is
 * gone or answered out of protocol (the connection is then unusable);
 * VIDMM_E_NOT_SUPPORTED when it does not speak this protocol version.
 *
 * Threading: a connection serialises its calls (one request in flight);
 * threads wanting parallel requests open a connection each.  The library
 * keeps no global state.
 */
#ifndef VIDMM_CLIENT_H
#define VIDMM_CLIENT_H

#include "vidmm/adapter.h"
#include "vidmm/allocation.h"
#include "vidmm/device.h"
#include "vidmm/process.h"
#include "vidmm/residency.h"
#include "vidmm/segment.h"
#include "vidmm/status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vidmm_client;

/* socket_path NULL: vidmm_client_default_socket's.  VIDMM_E_DEVICE_LOST
 * when nobody listens there; the daemon's refusal (VIDMM_E_BUSY: no
 * process slot left) otherwise. */
vidmm_status vidmm_client_connect(const char *socket_path, struct vidmm_client **out);

/* The system service's socket (daemon/systemd/vidmmd.socket). */
#define VIDMM_CLIENT_SYSTEM_SOCKET "/run/vidmmd/vidmmd.sock"
/* The socket a NULL path means: $VIDMMD_SOCKET if set; else the first of
 * $XDG_RUNTIME_DIR/vidmmd.sock, /tmp/vidmmd-$UID.sock (where vidmmd
 * listens by default) and VIDMM_CLIENT_SYSTEM_SOCKET that exists; else
 * the first of those.  Written to buf (size bytes); returns buf. */
const char *vidmm_client_default_socket(char *buf, size_t size);
/* Close the connection: the daemon destroys its process and everything in
 * it.  Mappings of locked allocations are unmapped.  NULL is a no-op. */
void vidmm_client_disconnect(struct vidmm_client *c);

/* What the daemon saw of this process (SO_PEERCRED) and its connection
 * number. */
struct vidmm_client_info {
    uint32_t pid, uid, connection;
    uint32_t reserved;
};
vidmm_status vidmm_client_query(struct vidmm_client *c, struct vidmm_client_info *out);

/* vidmm_device_create/destroy on the connection's process. */
vidmm_status vidmm_client_device_create(struct vidmm_client *c, vidmm_handle *device);
vidmm_status vidmm_client_device_destroy(struct vidmm_client *c, vidmm_handle device);

vidmm_status vidmm_client_paging_queue_create(struct vidmm_client *c, vidmm_handle device, int priority,
                                              vidmm_handle *queue);
vidmm_status vidmm_client_paging_queue_destroy(struct vidmm_client *c, vidmm_handle queue);
vidmm_status vidmm_client_paging_queue_fence(struct vidmm_client *c, vidmm_handle queue, uint64_t *completed);
/* The daemon answers when the fence reaches value or timeout_ns passed
 * (UINT64_MAX = forever); its loop never blocks on it. */
vidmm_status vidmm_client_paging_queue_wait(struct vidmm_client *c, vidmm_handle queue, uint64_t value,
                                            uint64_t timeout_ns);

/* Allocations belong to the connection's process (the library's
 * process-private allocations): private_data (at most 4 KiB) goes to the
 * driver as in vidmm_allocation_create2; for softgpu it is a struct
 * softgpu_alloc_desc.  create = create2 with VIDMM_CREATE_RESIDENT.
 * device_allocation_create names one of the connection's devices. */
vidmm_status vidmm_client_allocation_create(struct vidmm_client *c, const void *private_data,
                                            size_t private_data_size, vidmm_handle *out);
vidmm_status vidmm_client_allocation_create2(struct vidmm_client *c, const void *private_data,
                                             size_t private_data_size, uint32_t flags, vidmm_handle *out);
vidmm_status vidmm_client_device_allocation_create(struct vidmm_client *c, vidmm_handle device,
                                                   const void *private_data, size_t private_data_size,
                                                   uint32_t flags, vidmm_handle *out);
vidmm_status vidmm_client_allocation_destroy(struct vidmm_client *c, vidmm_handle allocation);

/* One round trip for the whole list (at most 8,189 handles). */
vidmm_status vidmm_client_make_resident(struct vidmm_client *c, vidmm_handle device,
                                        struct vidmm_make_resident_args *args);
vidmm_status vidmm_client_evict(struct vidmm_client *c, vidmm_handle device, struct vidmm_evict_args *args);

/* The connection's process; budgets are set by the daemon, not here. */
vidmm_status vidmm_client_query_video_memory_info(struct vidmm_client *c, enum vidmm_segment_group group,
                                                  struct vidmm_video_memory_info *out);

/* CPU access by copy: lock maps a private copy of the allocation's
 * bytes into this process; unlock writes the copy back.  After the
 * outermost unlock the pointer still points at the copy - writes through
 * it change nothing but the copy - until the allocation is destroyed, it
 * is locked again, or the connection closes (docs/DAEMON.md). */
vidmm_status vidmm_client_allocation_lock(struct vidmm_client *c, vidmm_handle allocation, void **cpu_address);
vidmm_status vidmm_client_allocation_unlock(struct vidmm_client *c, vidmm_handle allocation);

/* A subset of vidmm_allocation_state and vidmm_residency_state. */
struct vidmm_client_allocation_info {
    uint64_t size, requested_size, alignment;
    uint32_t flags, segment_id, supported_segment_set, preferred_segment;
    uint32_t lock_count, resident;
    uint64_t moves;
};
vidmm_status vidmm_client_allocation_query(struct vidmm_client *c, vidmm_handle allocation,
                                           struct vidmm_client_allocation_info *out);

/* GPU virtual addresses of the connection's process (vidmm/process.h). */
vidmm_status vidmm_client_gpuva_reserve(struct vidmm_client *c, uint64_t base, uint64_t min, uint64_t max,
                                        uint64_t size, unsigned mode, uint64_t *va);
vidmm_status vidmm_client_gpuva_map(struct vidmm_client *c, uint64_t base, uint64_t min, uint64_t max,
                                    vidmm_handle allocation, uint64_t offset, uint64_t size, unsigned protection,
                                    uint64_t driver_protection, uint64_t *va);
vidmm_status vidmm_client_gpuva_free(struct vidmm_client *c, uint64_t va, uint64_t size);

/* Batched GPU VA changes (vidmm_gpuva_update): at most 1,023 operations
 * (what one message holds; the library takes 4,096), else
 * VIDMM_E_INVALID_ARG; a MAP names one of the connection's allocations,
 * the other operations leave allocation 0. */
vidmm_status vidmm_client_gpuva_update(struct vidmm_client *c, const struct vidmm_gpuva_update_op *ops,
                                       uint32_t count);

/* The adapter the daemon owns (vidmm_adapter_query_info,
 * vidmm_segment_query): the same answers every connection gets. */
vidmm_status vidmm_client_adapter_query_info(struct vidmm_client *c, struct vidmm_adapter_info *out);
vidmm_status vidmm_client_segment_query(struct vidmm_client *c, uint32_t id, struct vidmm_segment_info *out);

/* Residency controls (vidmm/residency.h) on the connection's objects. */
vidmm_status vidmm_client_allocation_set_priority(struct vidmm_client *c, vidmm_handle allocation, uint32_t priority);
vidmm_status vidmm_client_offer(struct vidmm_client *c, vidmm_handle device, const vidmm_handle *allocations,
                                uint32_t count, uint32_t offer_priority);
/* results: count entries (VIDMM_RECLAIM_*); paging_fence_value may be NULL. */
vidmm_status vidmm_client_reclaim(struct vidmm_client *c, vidmm_handle paging_queue, const vidmm_handle *allocations,
                                  uint32_t count, uint32_t *results, uint64_t *paging_fence_value);
vidmm_status vidmm_client_change_video_memory_reservation(struct vidmm_client *c, enum vidmm_segment_group group,
                                                          uint64_t reservation);
/* The OS's call (vidmm_process_set_budget) on the connection's own
 * process: VIDMM_E_NOT_SUPPORTED unless the daemon runs with
 * --allow-set-budget (tests). */
vidmm_status vidmm_client_process_set_budget(struct vidmm_client *c, enum vidmm_segment_group group, uint64_t budget);

/* Trim notifications (vidmm_register_trim_notification) for one of the
 * connection's devices; callback NULL unregisters.  The daemon sends a
 * TRIM event when vidmm finds the process over budget (docs/PROTOCOL.md
 * "Events"); the library calls callback(context, device, flags, bytes)
 * on the caller's own thread - when a call on this connection returns
 * (the event came before its reply) or from vidmm_client_poll_events -
 * never from a thread of its own, and without the connection's lock held
 * (the callback may call the library: evict, destroy...).  Up to 256
 * events wait undelivered; past that only the latest per device and
 * flags is kept.  Destroying the device drops its registration. */
vidmm_status vidmm_client_register_trim_notification(struct vidmm_client *c, vidmm_handle device,
                                                     vidmm_trim_callback callback, void *context);
/* Read the events waiting on the socket without blocking and deliver
 * them; *delivered (may be NULL) = events read.  Call it when
 * vidmm_client_fd polls readable between requests. */
vidmm_status vidmm_client_poll_events(struct vidmm_client *c, uint32_t *delivered);
/* The connection's socket, for poll()/epoll: readable when an event
 * waits.  Only for waiting - reading it is vidmm_client_poll_events's. */
int vidmm_client_fd(const struct vidmm_client *c);

/* Contexts and virtual submission (vidmm/device.h, vidmm/submit.h).  The
 * command buffer lives in the process's GPU address space - an
 * allocation filled through lock/unlock and mapped with gpuva_map - so
 * only gpu_va and size travel.  context_wait is answered by the daemon
 * when the context fence reaches value (its loop never blocks on it). */
vidmm_status vidmm_client_context_create(struct vidmm_client *c, vidmm_handle device,
                                         const struct vidmm_context_desc *desc, vidmm_handle *context);
vidmm_status vidmm_client_context_destroy(struct vidmm_client *c, vidmm_handle context);
vidmm_status vidmm_client_submit_virtual(struct vidmm_client *c, vidmm_handle context, uint64_t gpu_va, uint32_t size,
                                         uint64_t *fence);
vidmm_status vidmm_client_context_fence(struct vidmm_client *c, vidmm_handle context, uint64_t *submitted,
                                        uint64_t *completed);
vidmm_status vidmm_client_context_wait(struct vidmm_client *c, vidmm_handle context, uint64_t value,
                                       uint64_t timeout_ns);

/* Debug: the daemon runs vidmm_adapter_check now (and logs any report).
 * violations, clients (connections open) and live_allocations (whole
 * adapter) may each be NULL. */
vidmm_status vidmm_client_debug_check(struct vidmm_client *c, uint32_t *violations, uint32_t *clients,
                                      uint64_t *live_allocations);

/* Shared allocations (vidmm/share.h; docs/DAEMON.md "Shared
 * allocations").  An allocation created with VIDMM_CREATE_SHARED
 * (create2 / device_allocation_create flags) is exported as a file
 * descriptor (*fd, close-on-exec, the caller's to close): pass it to
 * another process (SCM_RIGHTS over any Unix socket, fork), whose
 * connection opens it and gets its own handle.  The descriptor is the
 * capability: the daemon recognises only descriptors of the files it
 * made, so no handle value or forged file opens a share.  The
 * allocation lives until every holder destroyed its handle or closed
 * its connection.  Statuses as vidmm_share_export / vidmm_share_open;
 * open answers VIDMM_E_INVALID_HANDLE for a descriptor that names no
 * live share of this daemon, and keeps fd open (the caller's). */
vidmm_status vidmm_client_share_export(struct vidmm_client *c, vidmm_handle allocation, int *fd);
vidmm_status vidmm_client_share_open(struct vidmm_client *c, int fd, vidmm_handle *allocation);
struct vidmm_client_share_info {
    uint32_t holders;            /* processes holding it */
    uint32_t creator_holds;      /* the creator has not let go */
    uint32_t is_creator;         /* this handle is the creator's */
    uint32_t reserved;
};
vidmm_status vidmm_client_share_query(struct vidmm_client *c, vidmm_handle allocation,
                                      struct vidmm_client_share_info *out);

/* ---- limits and administration (docs/DAEMON.md "Limits", "Observing the daemon") ---- */

/* Statuses vidmmd adds to the library's: a per-connection or per-uid
 * limit of the daemon was reached (the request changed nothing; which
 * limit is in the daemon's log), and an administration request from a
 * uid other than the daemon's own or root. */
#define VIDMM_CLIENT_E_QUOTA_EXCEEDED ((vidmm_status)-256)
#define VIDMM_CLIENT_E_ACCESS_DENIED ((vidmm_status)-257)
/* vidmm_status_str, knowing the two above.  Never NULL. */
const char *vidmm_client_status_str(vidmm_status status);

#define VIDMM_CLIENT_ADMIN_MAX_SEGMENTS 32

struct vidmm_client_admin_segment {
    uint32_t id, kind;                   /* enum vidmm_segment_kind */
    uint64_t size, committed, free_bytes, commit_limit;
    uint32_t flags, page_size;           /* VIDMM_SEGMENT_* */
    char region[16];                     /* fdinfo region name: "system", "vram0", "aperture" */
};

/* The daemon and its adapter as a whole. */
struct vidmm_client_admin_adapter {
    uint32_t daemon_pid, daemon_uid, clients, segment_count;
    uint64_t connections, requests, protocol_errors, locks;
    int64_t host_blocks, host_bytes;     /* the adapter's host allocations alive now */
    uint64_t live_allocations, make_resident_calls, evictions, restores, bytes_evicted, bytes_restored;
    uint64_t paging_buffers_submitted, uptime_ns;
    uint64_t max_alloc_bytes, max_locked_bytes;          /* the limits in force */
    uint32_t max_handles, max_requests, max_connections_per_uid, wddm_version;
    uint64_t quota_refusals;
    struct vidmm_client_admin_segment segment[VIDMM_CLIENT_ADMIN_MAX_SEGMENTS];
};
vidmm_status vidmm_client_admin_adapter(struct vidmm_client *c, struct vidmm_client_admin_adapter *out);

#define VIDMM_CLIENT_ADMIN_REFUSED 1u    /* the daemon refused it a process (it is being closed) */
#define VIDMM_CLIENT_ADMIN_CLOSING 2u
#define VIDMM_CLIENT_ADMIN_SELF 4u       /* the connection that asked */

/* One connection (one vidmm process) as the daemon sees it. */
struct vidmm_client_admin_process {
    uint32_t connection, pid, uid, gid;  /* SO_PEERCRED at connect */
    char comm[16];                       /* /proc/PID/comm at connect, "" when unknown */
    uint64_t process;                    /* the library's process handle inside the daemon */
    uint64_t allocated_bytes;            /* its allocations alive (bytes placed) */
    uint32_t allocations, handles;
    uint64_t locked_bytes;
    uint64_t budget[2], usage[2];        /* per segment group: 0 local, 1 non-local */
    uint64_t evictions, restores;        /* of its allocations, destroyed ones included */
    uint64_t requests;
    uint32_t in_flight, flags;           /* VIDMM_CLIENT_ADMIN_* */
};
/* Up to max records from the daemon's index first on; *count records
 * filled, *total connections open (either may be NULL).  More than one
 * call is needed past 511 connections; connections that come and go in
 * between may be missed or seen twice. */
vidmm_status vidmm_client_admin_processes(struct vidmm_client *c, uint32_t first,
                                          struct vidmm_client_admin_process *out, uint32_t max, uint32_t *count,
                                          uint32_t *total);

/* A round trip that touches no vidmm state: size bytes (at most 65,528)
 * sent and received back (benchmarks). */
vidmm_status vidmm_client_echo(struct vidmm_client *c, const void *data, size_t size);

#ifdef __cplusplus
}
#endif
#endif
