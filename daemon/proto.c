/*
 * daemon/proto.c - header and request decoding, and the encoders and
 * decoders of every layout of proto.def (docs/PROTOCOL.md).
 * Every size comes from the message itself and is checked against the
 * bytes actually received before anything is read.
 */
#include "proto.h"

#include "vidmm/status.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void vmmd_header_put(uint8_t *p, uint16_t opcode, uint32_t length, uint32_t flags, uint64_t request_id)
{
    vmmd_put32(p, VMMD_MAGIC);
    vmmd_put16(p + 4, VMMD_VERSION);
    vmmd_put16(p + 6, opcode);
    vmmd_put32(p + 8, length);
    vmmd_put32(p + 12, flags);
    vmmd_put64(p + 16, request_id);
}

int vmmd_header_get(const uint8_t *p, size_t n, struct vmmd_header *out)
{
    if (!p || !out || n < VMMD_HEADER_SIZE)
        return VMMD_DECODE_SHORT;
    out->magic = vmmd_get32(p);
    out->version = vmmd_get16(p + 4);
    out->opcode = vmmd_get16(p + 6);
    out->length = vmmd_get32(p + 8);
    out->flags = vmmd_get32(p + 12);
    out->request_id = vmmd_get64(p + 16);
    if (out->magic != VMMD_MAGIC)
        return VMMD_DECODE_BAD_MAGIC;
    if (out->version != VMMD_VERSION)
        return VMMD_DECODE_BAD_VERSION;
    if (out->length > VMMD_MAX_PAYLOAD || (size_t)out->length != n - VMMD_HEADER_SIZE)
        return VMMD_DECODE_BAD_LENGTH;
    return VMMD_DECODE_OK;
}

/* The encoders and decoders of every layout in proto.def: fields in
 * table order, each at the running offset. */
#define VMMD_F(t, n) vmmd_put_##t(p + o, m->n); o += sizeof(vmmd_##t);
#define VMMD_A(t, n, k) for (size_t i = 0; i < (k); i++, o += sizeof(vmmd_##t)) vmmd_put_##t(p + o, m->n[i]);
#define VMMD_B(n, k) memcpy(p + o, m->n, (k)); o += (k);
#define VMMD_PUT(kind, name, fields)                                                          \
    void vmmd_put_##kind##_##name(uint8_t *p, const struct vmmd_##kind##_##name *m)           \
    {                                                                                         \
        size_t o = 0;                                                                         \
        fields                                                                                \
        (void)o;                                                                              \
    }
#define VMMD_REQ(OP, name, fields) VMMD_PUT(req, name, fields)
#define VMMD_REP(OP, name, fields) VMMD_PUT(rep, name, fields)
#define VMMD_REC(name, fields) VMMD_PUT(rec, name, fields)
#define VMMD_REQ0(OP, name)
#define VMMD_REP0(OP, name)
#include "proto.def"
#undef VMMD_F
#undef VMMD_A
#undef VMMD_B
#undef VMMD_REQ
#undef VMMD_REP
#undef VMMD_REC

#define VMMD_F(t, n) m->n = vmmd_get_##t(p + o); o += sizeof(vmmd_##t);
#define VMMD_A(t, n, k) for (size_t i = 0; i < (k); i++, o += sizeof(vmmd_##t)) m->n[i] = vmmd_get_##t(p + o);
#define VMMD_B(n, k) memcpy(m->n, p + o, (k)); o += (k);
#define VMMD_GET(kind, name, fields)                                                          \
    void vmmd_get_##kind##_##name(const uint8_t *p, struct vmmd_##kind##_##name *m)           \
    {                                                                                         \
        size_t o = 0;                                                                         \
        fields                                                                                \
        (void)o;                                                                              \
    }
#define VMMD_REQ(OP, name, fields) VMMD_GET(req, name, fields)
#define VMMD_REP(OP, name, fields) VMMD_GET(rep, name, fields)
#define VMMD_REC(name, fields) VMMD_GET(rec, name, fields)
#include "proto.def"
#undef VMMD_F
#undef VMMD_A
#undef VMMD_B
#undef VMMD_REQ
#undef VMMD_REP
#undef VMMD_REC
#undef VMMD_REQ0
#undef VMMD_REP0

/* Fixed payload bytes per request opcode (proto.def); -1 = not a
 * request. */
int vmmd_request_fixed_size(uint16_t opcode)
{
    switch (opcode) {
#define VMMD_REQ(OP, name, fields) case VMMD_OP_##OP: return VMMD_REQ_##OP##_SIZE;
#define VMMD_REQ0(OP, name) case VMMD_OP_##OP: return 0;
#define VMMD_REP(OP, name, fields)
#define VMMD_REC(name, fields)
#define VMMD_REP0(OP, name)
#include "proto.def"
#undef VMMD_REQ
#undef VMMD_REQ0
    default:
        return -1;
    }
}

/* Read the fixed part of a request whose opcode is known and whose
 * payload holds at least its fixed size. */
static void get_fields(uint16_t opcode, const uint8_t *p, union vmmd_request_fields *m)
{
    switch (opcode) {
#define VMMD_REQ(OP, name, fields) case VMMD_OP_##OP: vmmd_get_req_##name(p, &m->name); break;
#define VMMD_REQ0(OP, name)
#include "proto.def"
#undef VMMD_REQ
#undef VMMD_REQ0
#undef VMMD_REP
#undef VMMD_REC
#undef VMMD_REP0
    default:
        break;
    }
}

/* The variable part after the fixed one: count elements of size bytes
 * (at most max) must fill the rest of the payload exactly. */
static int tail(const uint8_t *p, uint32_t len, uint32_t fixed, uint32_t count, uint32_t size, uint32_t max,
                const uint8_t **out)
{
    if (count > max || len != fixed + size * count)
        return VMMD_DECODE_BAD_PAYLOAD;
    *out = p + fixed;
    return VMMD_DECODE_OK;
}

int vmmd_decode_request(const uint8_t *msg, size_t n, struct vmmd_request *out)
{
    if (!out)
        return VMMD_DECODE_SHORT;
    memset(out, 0, sizeof *out);
    int r = vmmd_header_get(msg, n, &out->h);
    if (r != VMMD_DECODE_OK)
        return r;
    /* Requests carry no flag, except SHARE_OPEN which carries its
     * descriptor (and must). */
    if (out->h.opcode == VMMD_OP_SHARE_OPEN ? out->h.flags != VMMD_FLAG_FD : out->h.flags != 0)
        return VMMD_DECODE_BAD_FLAGS;
    int fixed = vmmd_request_fixed_size(out->h.opcode);
    if (fixed < 0)
        return VMMD_DECODE_BAD_OPCODE;
    const uint8_t *p = msg + VMMD_HEADER_SIZE;
    uint32_t len = out->h.length, f = (uint32_t)fixed;
    if (len < f)
        return VMMD_DECODE_BAD_PAYLOAD;
    get_fields(out->h.opcode, p, &out->m);
    switch (out->h.opcode) {
    case VMMD_OP_ECHO:
        out->data = p;
        out->data_size = len;
        return VMMD_DECODE_OK;
    case VMMD_OP_ALLOC_CREATE:
        out->data_size = out->m.alloc_create.private_size;
        return tail(p, len, f, out->data_size, 1, VMMD_MAX_PRIVATE_DATA, &out->data);
    case VMMD_OP_GPUVA_UPDATE:
        out->list_count = out->m.gpuva_update.count;
        return tail(p, len, f, out->list_count, VMMD_GPUVA_OP_SIZE, VMMD_MAX_GPUVA_OPS, &out->list);
    case VMMD_OP_MAKE_RESIDENT:
        out->list_count = out->m.make_resident.count;
        return tail(p, len, f, out->list_count, 8, VMMD_MAX_LIST, &out->list);
    case VMMD_OP_EVICT:
        out->list_count = out->m.evict.count;
        return tail(p, len, f, out->list_count, 8, VMMD_MAX_LIST, &out->list);
    case VMMD_OP_OFFER:
        out->list_count = out->m.offer.count;
        return tail(p, len, f, out->list_count, 8, VMMD_MAX_LIST, &out->list);
    case VMMD_OP_RECLAIM:
        out->list_count = out->m.reclaim.count;
        return tail(p, len, f, out->list_count, 8, VMMD_MAX_LIST, &out->list);
    default:
        return len == f ? VMMD_DECODE_OK : VMMD_DECODE_BAD_PAYLOAD;
    }
}

const char *vmmd_op_name(uint16_t opcode)
{
    static const char *const names[VMMD_OP_LAST] = {
        [VMMD_OP_HELLO] = "HELLO", [VMMD_OP_DEVICE_CREATE] = "DEVICE_CREATE",
        [VMMD_OP_DEVICE_DESTROY] = "DEVICE_DESTROY", [VMMD_OP_QUEUE_CREATE] = "QUEUE_CREATE",
        [VMMD_OP_QUEUE_DESTROY] = "QUEUE_DESTROY", [VMMD_OP_QUEUE_FENCE] = "QUEUE_FENCE",
        [VMMD_OP_QUEUE_WAIT] = "QUEUE_WAIT", [VMMD_OP_ALLOC_CREATE] = "ALLOC_CREATE",
        [VMMD_OP_ALLOC_DESTROY] = "ALLOC_DESTROY", [VMMD_OP_MAKE_RESIDENT] = "MAKE_RESIDENT",
        [VMMD_OP_EVICT] = "EVICT", [VMMD_OP_QUERY_VIDMEM] = "QUERY_VIDMEM", [VMMD_OP_LOCK] = "LOCK",
        [VMMD_OP_UNLOCK] = "UNLOCK", [VMMD_OP_ALLOC_QUERY] = "ALLOC_QUERY",
        [VMMD_OP_GPUVA_RESERVE] = "GPUVA_RESERVE", [VMMD_OP_GPUVA_MAP] = "GPUVA_MAP",
        [VMMD_OP_GPUVA_FREE] = "GPUVA_FREE", [VMMD_OP_ADAPTER_INFO] = "ADAPTER_INFO",
        [VMMD_OP_SEGMENT_QUERY] = "SEGMENT_QUERY", [VMMD_OP_ALLOC_SET_PRIORITY] = "ALLOC_SET_PRIORITY",
        [VMMD_OP_OFFER] = "OFFER", [VMMD_OP_RECLAIM] = "RECLAIM", [VMMD_OP_CHANGE_RESERVATION] = "CHANGE_RESERVATION",
        [VMMD_OP_TRIM_REGISTER] = "TRIM_REGISTER", [VMMD_OP_GPUVA_UPDATE] = "GPUVA_UPDATE",
        [VMMD_OP_CONTEXT_CREATE] = "CONTEXT_CREATE", [VMMD_OP_CONTEXT_DESTROY] = "CONTEXT_DESTROY",
        [VMMD_OP_SUBMIT_VIRTUAL] = "SUBMIT_VIRTUAL", [VMMD_OP_CONTEXT_FENCE] = "CONTEXT_FENCE",
        [VMMD_OP_CONTEXT_WAIT] = "CONTEXT_WAIT", [VMMD_EV_TRIM] = "TRIM (event)",
        [VMMD_OP_PROCESS_SET_BUDGET] = "PROCESS_SET_BUDGET", [VMMD_OP_DEBUG_CHECK] = "DEBUG_CHECK", [VMMD_OP_ECHO] = "ECHO",
        [VMMD_OP_ADMIN_ADAPTER] = "ADMIN_ADAPTER", [VMMD_OP_ADMIN_CLIENTS] = "ADMIN_CLIENTS",
        [VMMD_OP_SHARE_EXPORT] = "SHARE_EXPORT", [VMMD_OP_SHARE_OPEN] = "SHARE_OPEN",
        [VMMD_OP_SHARE_QUERY] = "SHARE_QUERY",
    };
    uint16_t op = (uint16_t)(opcode & ~VMMD_REPLY);
    return op < VMMD_OP_LAST && names[op] ? names[op] : "?";
}

const char *vmmd_decode_str(int result)
{
    switch (result) {
    case VMMD_DECODE_OK: return "ok";
    case VMMD_DECODE_SHORT: return "shorter than a header";
    case VMMD_DECODE_BAD_MAGIC: return "bad magic";
    case VMMD_DECODE_BAD_VERSION: return "unsupported protocol version";
    case VMMD_DECODE_BAD_LENGTH: return "length field does not match the message";
    case VMMD_DECODE_BAD_OPCODE: return "unknown opcode";
    case VMMD_DECODE_BAD_PAYLOAD: return "payload size wrong for the opcode";
    case VMMD_DECODE_BAD_FLAGS: return "request flags or descriptors wrong for the opcode";
    default: return "?";
    }
}

const char *vmmd_status_str(int status)
{
    if (status == VMMD_E_QUOTA_EXCEEDED)
        return "VIDMM_CLIENT_E_QUOTA_EXCEEDED";
    if (status == VMMD_E_ACCESS_DENIED)
        return "VIDMM_CLIENT_E_ACCESS_DENIED";
    return vidmm_status_str((vidmm_status)status);
}

long vmmd_send(int sock, const void *buf, size_t n, int fd, int flags)
{
    struct iovec iov = { (void *)(uintptr_t)buf, n };
    union {
        char b[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr mh;
    memset(&mh, 0, sizeof mh);
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    if (fd >= 0) {
        memset(&u, 0, sizeof u);
        mh.msg_control = u.b;
        mh.msg_controllen = sizeof u.b;
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof(int));
    }
    return (long)sendmsg(sock, &mh, flags | MSG_NOSIGNAL);
}

long vmmd_recv(int sock, void *buf, size_t n, int flags, int *fd, int *fds, int *truncated)
{
    /* Room for several descriptors, so that a peer that sends more than
     * one has them all closed here rather than lost in the kernel. */
    union {
        char b[CMSG_SPACE(sizeof(int) * 8)];
        struct cmsghdr align;
    } u;
    struct iovec iov = { buf, n };
    struct msghdr mh;
    ssize_t r;
    do {
        memset(&mh, 0, sizeof mh);
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        mh.msg_control = u.b;
        mh.msg_controllen = sizeof u.b;
        r = recvmsg(sock, &mh, flags | MSG_CMSG_CLOEXEC);
    } while (r < 0 && errno == EINTR);
    int first = -1, count = 0;
    if (r > 0) {
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
            if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len < CMSG_LEN(0))
                continue;
            size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t j = 0; j < k; j++) {
                int f;
                memcpy(&f, CMSG_DATA(cm) + j * sizeof(int), sizeof f);
                if (first < 0 && fd)
                    first = f;
                else
                    close(f);
                count++;
            }
        }
        if (mh.msg_flags & MSG_CTRUNC)
            count++;
    }
    if (fd)
        *fd = first;
    if (fds)
        *fds = count;
    if (truncated)
        *truncated = r > 0 && (mh.msg_flags & MSG_TRUNC) != 0;
    return (long)r;
}
