/*
 * d3dkmt/remote.h - an adapter for a thunk runtime that lives in
 * vidmmd, the daemon that shares one adapter between operating-system
 * processes (docs/DAEMON.md): the thunks then reach it through
 * libvidmm-client.  Link libvidmm-client (and pthreads) when calling
 * these.  docs/D3DKMT.md "A remote adapter".
 */
#ifndef D3DKMT_REMOTE_H
#define D3DKMT_REMOTE_H

#include "d3dkmt/d3dkmthk.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vidmm_client;

/* The process handle a remote adapter's runtime uses: the connection is
 * the process, the daemon knows no other. */
#define D3DKMT_REMOTE_PROCESS 1u

/* Connects to vidmmd at socket_path (NULL: $VIDMMD_SOCKET, else
 * $XDG_RUNTIME_DIR/vidmmd.sock, else /tmp/vidmmd-$UID.sock, as
 * vidmm_client_connect) and registers the daemon's adapter under luid.
 * Each call is one connection, hence one vidmm process in the daemon;
 * closing the runtime closes it (the daemon then destroys the process and
 * everything left in it).  STATUS_INVALID_PARAMETER (NULL runtime, zero or
 * duplicate LUID, more than D3DKMT_MAX_ADAPTERS), STATUS_DEVICE_REMOVED
 * when no daemon answers there, STATUS_DEVICE_BUSY when the daemon has
 * no process slot left, STATUS_NO_MEMORY. */
NTSTATUS d3dkmt_runtime_add_remote(struct d3dkmt_runtime *rt, const char *socket_path, LUID luid);

/* The OS side of a remote adapter: its connection, for the calls a
 * kernel would make (vidmm_client_process_set_budget).
 * STATUS_INVALID_PARAMETER when luid is unknown, STATUS_NOT_SUPPORTED
 * for an in-process adapter (d3dkmt_runtime_vidmm_process is its
 * counterpart, and answers STATUS_NOT_SUPPORTED for a remote one). */
NTSTATUS d3dkmt_runtime_vidmm_client(struct d3dkmt_runtime *rt, LUID luid, struct vidmm_client **conn);

#ifdef __cplusplus
}
#endif
#endif
