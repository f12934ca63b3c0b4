/*
 * daemon/proto.h - the wire protocol between vidmmd and libvidmm-client
 * (docs/PROTOCOL.md): message layout, opcodes, little-endian field
 * access, the structures, sizes and codecs of every message generated
 * from the one table daemon/proto.def, and the decoder that checks
 * every request before the daemon looks at it.  Pure functions, no state: the daemon, the client library
 * and the fuzz harness (fuzz/proto.c) share it.
 */
#ifndef VIDMMD_PROTO_H
#define VIDMMD_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define VMMD_MAGIC   0x444d4d56u   /* "VMMD" as little-endian bytes */
#define VMMD_VERSION 1u
#define VMMD_HEADER_SIZE 24u
/* Largest payload either side sends or accepts (a residency list of
 * 8,190 handles, a private-data blob of 4 KiB). */
#define VMMD_MAX_PAYLOAD 65536u
#define VMMD_MAX_MESSAGE (VMMD_HEADER_SIZE + VMMD_MAX_PAYLOAD)
#define VMMD_MAX_PRIVATE_DATA 4096u
#define VMMD_MAX_LIST ((VMMD_MAX_PAYLOAD - 24u) / 8u)

/* Reply opcode = request opcode | VMMD_REPLY. */
#define VMMD_REPLY 0x8000u
/* Reply flag: one file descriptor rides along (SCM_RIGHTS); the one
 * request flag too, on VMMD_OP_SHARE_OPEN only (and required there). */
#define VMMD_FLAG_FD 0x1u

enum vmmd_op {
    VMMD_OP_HELLO = 1,
    VMMD_OP_DEVICE_CREATE = 2,
    VMMD_OP_DEVICE_DESTROY = 3,
    VMMD_OP_QUEUE_CREATE = 4,
    VMMD_OP_QUEUE_DESTROY = 5,
    VMMD_OP_QUEUE_FENCE = 6,
    VMMD_OP_QUEUE_WAIT = 7,
    VMMD_OP_ALLOC_CREATE = 8,
    VMMD_OP_ALLOC_DESTROY = 9,
    VMMD_OP_MAKE_RESIDENT = 10,
    VMMD_OP_EVICT = 11,
    VMMD_OP_QUERY_VIDMEM = 12,
    VMMD_OP_LOCK = 13,
    VMMD_OP_UNLOCK = 14,
    VMMD_OP_ALLOC_QUERY = 15,
    VMMD_OP_GPUVA_RESERVE = 16,
    VMMD_OP_GPUVA_MAP = 17,
    VMMD_OP_GPUVA_FREE = 18,
    VMMD_OP_ADAPTER_INFO = 19,
    VMMD_OP_SEGMENT_QUERY = 20,
    VMMD_OP_ALLOC_SET_PRIORITY = 21,
    VMMD_OP_OFFER = 22,
    VMMD_OP_RECLAIM = 23,
    VMMD_OP_CHANGE_RESERVATION = 24,
    VMMD_OP_TRIM_REGISTER = 25,
    VMMD_OP_GPUVA_UPDATE = 26,
    VMMD_OP_CONTEXT_CREATE = 27,
    VMMD_OP_CONTEXT_DESTROY = 28,
    VMMD_OP_SUBMIT_VIRTUAL = 29,
    VMMD_OP_CONTEXT_FENCE = 30,
    VMMD_OP_CONTEXT_WAIT = 31,
    VMMD_OP_DEBUG_CHECK = 32,
    VMMD_OP_ECHO = 33,
    /* Administration (docs/PROTOCOL.md "Administration"): only the
     * daemon's own uid or root may send them. */
    VMMD_OP_ADMIN_ADAPTER = 40,
    VMMD_OP_ADMIN_CLIENTS = 41,
    /* Shared allocations (docs/DAEMON.md "Shared allocations"). */
    VMMD_OP_SHARE_EXPORT = 48,     /* reply carries the share's descriptor */
    VMMD_OP_SHARE_OPEN = 49,       /* request carries a share's descriptor */
    VMMD_OP_SHARE_QUERY = 50,      /* 51: reserved for sharing */
    /* An event: sent by the daemon unasked (opcode | VMMD_REPLY, request
     * id 0), never accepted as a request. */
    VMMD_EV_TRIM = 64,
    VMMD_OP_PROCESS_SET_BUDGET = 65,
    VMMD_OP_LAST = 96
};

/* Payload sizes of the fixed records of the API's requests (the table
 * below, proto.def, defines them: 352, 88, 64 and 24 bytes). */
#define VMMD_ADAPTER_INFO_SIZE ((unsigned)VMMD_REP_ADAPTER_INFO_SIZE)     /* ADAPTER_INFO reply after the status */
#define VMMD_SEGMENT_INFO_SIZE ((unsigned)VMMD_REP_SEGMENT_QUERY_SIZE)      /* SEGMENT_QUERY reply after the status */
#define VMMD_GPUVA_OP_SIZE ((unsigned)VMMD_REC_gpuva_op_SIZE)          /* one GPUVA_UPDATE operation (VMMD_REC_gpuva_op_SIZE) */
#define VMMD_MAX_GPUVA_OPS ((VMMD_MAX_PAYLOAD - 8u) / VMMD_GPUVA_OP_SIZE)
#define VMMD_TRIM_EVENT_SIZE ((unsigned)VMMD_REC_trim_event_SIZE)        /* TRIM event after the status */

/* Statuses the daemon adds to vidmm_status (replies carry them in the
 * same field; include/vidmm-client/client.h names them for clients). */
#define VMMD_E_QUOTA_EXCEEDED (-256)   /* a per-connection or per-uid limit of the daemon */
#define VMMD_E_ACCESS_DENIED  (-257)   /* an administration request from another uid */

/* ADMIN_ADAPTER reply (after the status): the fixed part, then
 * VMMD_ADMIN_SEGMENT_SIZE bytes per segment. */
#define VMMD_ADMIN_ADAPTER_FIXED ((unsigned)VMMD_REP_ADMIN_ADAPTER_SIZE)
#define VMMD_ADMIN_SEGMENT_SIZE ((unsigned)VMMD_REC_admin_segment_SIZE)
#define VMMD_ADMIN_MAX_SEGMENTS 32u
/* ADMIN_CLIENTS reply: u32 total, u32 count, then count records. */
#define VMMD_ADMIN_CLIENT_SIZE ((unsigned)VMMD_REC_admin_client_SIZE)
#define VMMD_ADMIN_CLIENTS_PER_REPLY ((VMMD_MAX_PAYLOAD - 16u) / VMMD_ADMIN_CLIENT_SIZE)

struct vmmd_header {
    uint32_t magic;
    uint16_t version;
    uint16_t opcode;
    uint32_t length;       /* payload bytes after the header */
    uint32_t flags;
    uint64_t request_id;
};

/* Why a message was refused. */
enum vmmd_decode_result {
    VMMD_DECODE_OK = 0,
    VMMD_DECODE_SHORT = -1,        /* fewer than 24 bytes: no header */
    VMMD_DECODE_BAD_MAGIC = -2,
    VMMD_DECODE_BAD_VERSION = -3,
    VMMD_DECODE_BAD_LENGTH = -4,   /* header length != bytes received, or > VMMD_MAX_PAYLOAD */
    VMMD_DECODE_BAD_OPCODE = -5,
    VMMD_DECODE_BAD_PAYLOAD = -6,  /* payload size wrong for the opcode, or inner count/size wrong */
    VMMD_DECODE_BAD_FLAGS = -7
};

/* Little-endian field access. */
static inline void vmmd_put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void vmmd_put32(uint8_t *p, uint32_t v)
{
    vmmd_put16(p, (uint16_t)v);
    vmmd_put16(p + 2, (uint16_t)(v >> 16));
}
static inline void vmmd_put64(uint8_t *p, uint64_t v)
{
    vmmd_put32(p, (uint32_t)v);
    vmmd_put32(p + 4, (uint32_t)(v >> 32));
}
static inline uint16_t vmmd_get16(const uint8_t *p) { return (uint16_t)(p[0] | (uint16_t)p[1] << 8); }
static inline uint32_t vmmd_get32(const uint8_t *p) { return vmmd_get16(p) | (uint32_t)vmmd_get16(p + 2) << 16; }
static inline uint64_t vmmd_get64(const uint8_t *p) { return vmmd_get32(p) | (uint64_t)vmmd_get32(p + 4) << 32; }

static inline void vmmd_put_u32(uint8_t *p, uint32_t v) { vmmd_put32(p, v); }
static inline void vmmd_put_i32(uint8_t *p, int32_t v) { vmmd_put32(p, (uint32_t)v); }
static inline void vmmd_put_u64(uint8_t *p, uint64_t v) { vmmd_put64(p, v); }
static inline void vmmd_put_i64(uint8_t *p, int64_t v) { vmmd_put64(p, (uint64_t)v); }
static inline uint32_t vmmd_get_u32(const uint8_t *p) { return vmmd_get32(p); }
static inline int32_t vmmd_get_i32(const uint8_t *p) { return (int32_t)vmmd_get32(p); }
static inline uint64_t vmmd_get_u64(const uint8_t *p) { return vmmd_get64(p); }
static inline int64_t vmmd_get_i64(const uint8_t *p) { return (int64_t)vmmd_get64(p); }
typedef uint32_t vmmd_u32;
typedef int32_t vmmd_i32;
typedef uint64_t vmmd_u64;
typedef int64_t vmmd_i64;

/*
 * The message layouts, from daemon/proto.def.  For every entry:
 *   struct vmmd_req_NAME / vmmd_rep_NAME / vmmd_rec_NAME  its fields;
 *   VMMD_REQ_OP_SIZE / VMMD_REP_OP_SIZE (OP as in VMMD_OP_<OP>),
 *     VMMD_REC_name_SIZE: its bytes on the wire (enum constants);
 *   vmmd_put_req_NAME(p, m) writes it at p, vmmd_get_req_NAME(p, m)
 *     reads it (the caller has checked that SIZE bytes are there);
 * and NAME0 entries (no fixed part) get only their size, 0.
 */
#define VMMD_F(t, n) vmmd_##t n;
#define VMMD_A(t, n, k) vmmd_##t n[k];
#define VMMD_B(n, k) char n[k];
#define VMMD_STRUCT(kind, name, fields) struct vmmd_##kind##_##name { fields };
#define VMMD_REQ(OP, name, fields) VMMD_STRUCT(req, name, fields)
#define VMMD_REP(OP, name, fields) VMMD_STRUCT(rep, name, fields)
#define VMMD_REC(name, fields) VMMD_STRUCT(rec, name, fields)
#define VMMD_REQ0(OP, name)
#define VMMD_REP0(OP, name)
#include "proto.def"
#undef VMMD_F
#undef VMMD_A
#undef VMMD_B
#undef VMMD_REQ
#undef VMMD_REP
#undef VMMD_REC
#undef VMMD_REQ0
#undef VMMD_REP0

#define VMMD_F(t, n) + sizeof(vmmd_##t)
#define VMMD_A(t, n, k) + (k) * sizeof(vmmd_##t)
#define VMMD_B(n, k) + (k)
#define VMMD_REQ(OP, name, fields) VMMD_REQ_##OP##_SIZE = 0 fields,
#define VMMD_REP(OP, name, fields) VMMD_REP_##OP##_SIZE = 0 fields,
#define VMMD_REC(name, fields) VMMD_REC_##name##_SIZE = 0 fields,
#define VMMD_REQ0(OP, name) VMMD_REQ_##OP##_SIZE = 0,
#define VMMD_REP0(OP, name) VMMD_REP_##OP##_SIZE = 0,
enum vmmd_wire_size {
#include "proto.def"
    VMMD_WIRE_SIZE_END
};
#undef VMMD_F
#undef VMMD_A
#undef VMMD_B
#undef VMMD_REQ
#undef VMMD_REP
#undef VMMD_REC
#undef VMMD_REQ0
#undef VMMD_REP0

#define VMMD_CODEC(kind, name)                                                                  \
    void vmmd_put_##kind##_##name(uint8_t *p, const struct vmmd_##kind##_##name *m);            \
    void vmmd_get_##kind##_##name(const uint8_t *p, struct vmmd_##kind##_##name *m);
#define VMMD_REQ(OP, name, fields) VMMD_CODEC(req, name)
#define VMMD_REP(OP, name, fields) VMMD_CODEC(rep, name)
#define VMMD_REC(name, fields) VMMD_CODEC(rec, name)
#define VMMD_REQ0(OP, name)
#define VMMD_REP0(OP, name)
#include "proto.def"
#undef VMMD_REQ
#undef VMMD_REP
#undef VMMD_REC
#undef VMMD_REQ0
#undef VMMD_REP0
#undef VMMD_CODEC

/* The fixed parts of all requests, one member per request (named as in
 * proto.def). */
union vmmd_request_fields {
#define VMMD_REQ(OP, name, fields) struct vmmd_req_##name name;
#define VMMD_REP(OP, name, fields)
#define VMMD_REC(name, fields)
#define VMMD_REQ0(OP, name)
#define VMMD_REP0(OP, name)
#include "proto.def"
#undef VMMD_REQ
#undef VMMD_REP
#undef VMMD_REC
#undef VMMD_REQ0
#undef VMMD_REP0
};

/* A decoded request: the header plus the fields of its opcode.  list
 * and data point into the message buffer (valid while it is). */
struct vmmd_request {
    struct vmmd_header h;
    union vmmd_request_fields m;   /* the member of h.opcode */
    const uint8_t *list;           /* MAKE_RESIDENT / EVICT / OFFER / RECLAIM handles (count = m.NAME.count);
                                      GPUVA_UPDATE operations (count = m.gpuva_update.count) */
    uint32_t list_count;           /* that count */
    const uint8_t *data;           /* ALLOC_CREATE private data, ECHO bytes */
    uint32_t data_size;
};

/* Write a header at p (VMMD_HEADER_SIZE bytes). */
void vmmd_header_put(uint8_t *p, uint16_t opcode, uint32_t length, uint32_t flags, uint64_t request_id);
/* Read a header; VMMD_DECODE_SHORT / BAD_MAGIC / BAD_VERSION /
 * BAD_LENGTH (length above the maximum, or not n - 24). */
int vmmd_header_get(const uint8_t *p, size_t n, struct vmmd_header *out);

/* Decode one whole request message of n bytes: header, then the
 * opcode's payload with every size and count checked against n.
 * Returns VMMD_DECODE_OK or a negative vmmd_decode_result; out->h is
 * filled whenever the header itself was readable (so an error reply can
 * carry its request id). */
int vmmd_decode_request(const uint8_t *msg, size_t n, struct vmmd_request *out);

/* The payload size a request of this opcode has, not counting the
 * variable part (list, private data); -1 for an unknown opcode. */
int vmmd_request_fixed_size(uint16_t opcode);

/* Send one record of n bytes on SOCK_SEQPACKET socket sock, with
 * descriptor fd attached (SCM_RIGHTS) when fd >= 0; flags go to sendmsg
 * (MSG_NOSIGNAL is always added).  sendmsg's result: the caller retries
 * EINTR and decides what EAGAIN means. */
long vmmd_send(int sock, const void *buf, size_t n, int fd, int flags);

/* Receive one record into buf (room for n bytes) from sock: recvmsg with
 * MSG_CMSG_CLOEXEC and flags, EINTR retried.  The first descriptor that
 * came with it goes to *fd (-1 when none; closed when fd is NULL), any
 * other is closed.  *fds (may be NULL): the descriptors that came, plus
 * one when the kernel cut the control data (some were lost on the way);
 * *truncated (may be NULL): the record was longer than n.  recvmsg's
 * result (-1 with errno set, 0 at the peer's end); on -1 and 0 no
 * descriptor is returned. */
long vmmd_recv(int sock, void *buf, size_t n, int flags, int *fd, int *fds, int *truncated);

const char *vmmd_op_name(uint16_t opcode);
const char *vmmd_decode_str(int result);
/* vidmm_status_str, and the daemon's own statuses above. */
const char *vmmd_status_str(int status);

#endif
