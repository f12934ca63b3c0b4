/*
 * daemon/proto.c - header and request decoding (docs/PROTOCOL.md).
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

/* Fixed payload bytes per request opcode; -1 = not a request. */
int vmmd_request_fixed_size(uint16_t opcode)
{
    switch (opcode) {
    case VMMD_OP_HELLO:
    case VMMD_OP_DEVICE_CREATE:
    case VMMD_OP_ADAPTER_INFO:
    case VMMD_OP_DEBUG_CHECK:
    case VMMD_OP_ECHO:
    case VMMD_OP_SHARE_OPEN:
    case VMMD_OP_ADMIN_ADAPTER:
        return 0;
    case VMMD_OP_DEVICE_DESTROY:
    case VMMD_OP_QUEUE_DESTROY:
    case VMMD_OP_QUEUE_FENCE:
    case VMMD_OP_ALLOC_DESTROY:
    case VMMD_OP_LOCK:
    case VMMD_OP_UNLOCK:
    case VMMD_OP_ALLOC_QUERY:
    case VMMD_OP_QUERY_VIDMEM:
    case VMMD_OP_SHARE_EXPORT:
    case VMMD_OP_SHARE_QUERY:
    case VMMD_OP_SEGMENT_QUERY:
    case VMMD_OP_CONTEXT_DESTROY:
    case VMMD_OP_CONTEXT_FENCE:
    case VMMD_OP_GPUVA_UPDATE:
    case VMMD_OP_ADMIN_CLIENTS:
        return 8;
    case VMMD_OP_QUEUE_CREATE:
    case VMMD_OP_ALLOC_CREATE:
    case VMMD_OP_EVICT:
    case VMMD_OP_GPUVA_FREE:
    case VMMD_OP_ALLOC_SET_PRIORITY:
    case VMMD_OP_OFFER:
    case VMMD_OP_RECLAIM:
    case VMMD_OP_CHANGE_RESERVATION:
    case VMMD_OP_TRIM_REGISTER:
    case VMMD_OP_PROCESS_SET_BUDGET:
        return 16;
    case VMMD_OP_QUEUE_WAIT:
    case VMMD_OP_MAKE_RESIDENT:
    case VMMD_OP_CONTEXT_CREATE:
    case VMMD_OP_SUBMIT_VIRTUAL:
    case VMMD_OP_CONTEXT_WAIT:
        return 24;
    case VMMD_OP_GPUVA_RESERVE:
        return 40;
    case VMMD_OP_GPUVA_MAP:
        return 64;
    default:
        return -1;
    }
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
    uint32_t len = out->h.length;
    if (len < (uint32_t)fixed)
        return VMMD_DECODE_BAD_PAYLOAD;
    switch (out->h.opcode) {
    case VMMD_OP_ECHO:
        out->data = p;
        out->data_size = len;
        return VMMD_DECODE_OK;
    case VMMD_OP_QUERY_VIDMEM:
    case VMMD_OP_SEGMENT_QUERY:
    case VMMD_OP_ADMIN_CLIENTS:
        out->u0 = vmmd_get32(p);
        out->u1 = vmmd_get32(p + 4);
        break;
    case VMMD_OP_CHANGE_RESERVATION:
    case VMMD_OP_PROCESS_SET_BUDGET:
        out->u0 = vmmd_get32(p);
        out->u1 = vmmd_get32(p + 4);
        out->a = vmmd_get64(p + 8);
        break;
    case VMMD_OP_GPUVA_UPDATE:
        out->u0 = vmmd_get32(p);
        out->u1 = vmmd_get32(p + 4);
        if (out->u0 > VMMD_MAX_GPUVA_OPS || len != 8u + VMMD_GPUVA_OP_SIZE * out->u0)
            return VMMD_DECODE_BAD_PAYLOAD;
        out->list = p + 8;
        return VMMD_DECODE_OK;
    case VMMD_OP_CONTEXT_CREATE:
        /* h:device, u32 node, u32 mode, u32 flags, u32 reserved */
        out->a = vmmd_get64(p);
        out->c = vmmd_get32(p + 8);
        out->d = vmmd_get32(p + 12);
        out->u0 = vmmd_get32(p + 16);
        out->u1 = vmmd_get32(p + 20);
        break;
    case VMMD_OP_SUBMIT_VIRTUAL:
        out->a = vmmd_get64(p);
        out->b = vmmd_get64(p + 8);
        out->u0 = vmmd_get32(p + 16);
        out->u1 = vmmd_get32(p + 20);
        break;
    case VMMD_OP_QUEUE_CREATE:
    case VMMD_OP_ALLOC_SET_PRIORITY:
    case VMMD_OP_TRIM_REGISTER:
        out->a = vmmd_get64(p);
        out->u0 = vmmd_get32(p + 8);
        out->u1 = vmmd_get32(p + 12);
        break;
    case VMMD_OP_ALLOC_CREATE:
        out->a = vmmd_get64(p);
        out->u0 = vmmd_get32(p + 8);
        out->u1 = vmmd_get32(p + 12);
        if (out->u1 > VMMD_MAX_PRIVATE_DATA || len != 16u + out->u1)
            return VMMD_DECODE_BAD_PAYLOAD;
        out->data = p + 16;
        out->data_size = out->u1;
        return VMMD_DECODE_OK;
    case VMMD_OP_MAKE_RESIDENT:
        out->a = vmmd_get64(p);
        out->b = vmmd_get64(p + 8);
        out->u0 = vmmd_get32(p + 16);
        out->u1 = vmmd_get32(p + 20);
        if (out->u1 > VMMD_MAX_LIST || len != 24u + 8u * out->u1)
            return VMMD_DECODE_BAD_PAYLOAD;
        out->list = p + 24;
        return VMMD_DECODE_OK;
    case VMMD_OP_EVICT:
    case VMMD_OP_OFFER:
    case VMMD_OP_RECLAIM:
        /* h, u32 (evict flags, offer priority; RECLAIM: 0), u32 count,
         * count handles. */
        out->a = vmmd_get64(p);
        out->u0 = vmmd_get32(p + 8);
        out->u1 = vmmd_get32(p + 12);
        if (out->u1 > VMMD_MAX_LIST || len != 16u + 8u * out->u1)
            return VMMD_DECODE_BAD_PAYLOAD;
        out->list = p + 16;
        return VMMD_DECODE_OK;
    case VMMD_OP_GPUVA_RESERVE:
        out->a = vmmd_get64(p);
        out->b = vmmd_get64(p + 8);
        out->c = vmmd_get64(p + 16);
        out->d = vmmd_get64(p + 24);
        out->u0 = vmmd_get32(p + 32);
        out->u1 = vmmd_get32(p + 36);
        break;
    case VMMD_OP_GPUVA_MAP:
        out->a = vmmd_get64(p);
        out->b = vmmd_get64(p + 8);
        out->c = vmmd_get64(p + 16);
        out->d = vmmd_get64(p + 24);
        out->e = vmmd_get64(p + 32);
        out->f = vmmd_get64(p + 40);
        out->g = vmmd_get64(p + 48);
        out->u0 = vmmd_get32(p + 56);
        out->u1 = vmmd_get32(p + 60);
        break;
    default: {
        /* Only 64-bit fields: a, b, c in order. */
        uint64_t *f[3] = { &out->a, &out->b, &out->c };
        for (int i = 0; i < fixed / 8 && i < 3; i++)
            *f[i] = vmmd_get64(p + 8 * i);
        break;
    }
    }
    if (len != (uint32_t)fixed)
        return VMMD_DECODE_BAD_PAYLOAD;
    return VMMD_DECODE_OK;
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
