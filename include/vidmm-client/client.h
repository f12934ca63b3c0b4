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

#include "vidmm/allocation.h"
#include "vidmm/residency.h"
#include "vidmm/status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vidmm_client;

/* socket_path NULL: $VIDMMD_SOCKET, else $XDG_RUNTIME_DIR/vidmmd.sock,
 * else /tmp/vidmmd-$UID.sock (where vidmmd listens by default).
 * VIDMM_E_DEVICE_LOST when nobody listens there; the daemon's refusal
 * (VIDMM_E_BUSY: no process slot left) otherwise. */
vidmm_status vidmm_client_connect(const char *socket_path, struct vidmm_client **out);
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

/* A round trip that touches no vidmm state: size bytes (at most 65,528)
 * sent and received back (benchmarks). */
vidmm_status vidmm_client_echo(struct vidmm_client *c, const void *data, size_t size);

#ifdef __cplusplus
}
#endif
#endif
