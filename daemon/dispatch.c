/*
 * daemon/dispatch.c - one message of a client: decoded (daemon/proto.c),
 * checked against the client's limits, and sent to its handler.
 *
 * Requests reach their handler through handlers[], one entry per request
 * of daemon/proto.def: {opcode, minimum fixed payload size, handler}.  A
 * handler (req_*.c, share.c) reads its decoded fields (struct
 * vmmd_req_NAME), calls vidmm and leaves the reply's fields, encoded by
 * proto.def's codecs, to handle().  A message shorter than its opcode's
 * fixed part is VIDMM_E_INVALID_ARG; an opcode without a handler is
 * VIDMM_E_NOT_SUPPORTED; framing errors close the connection after the
 * reply.
 */
#define _GNU_SOURCE
#include "server_internal.h"

#include <unistd.h>

/* Every request of proto.def: its opcode (the table is indexed by it; an
 * entry left empty has opcode 0 and no handler), its fixed payload size
 * (the decoder has checked it already; handle() checks again so that a
 * handler can never read past what arrived) and its handler
 * vmmd_serve_NAME. */
struct req_handler {
    uint16_t opcode;
    uint32_t min_size;
    vidmm_status (*fn)(struct req *x);
};

static const struct req_handler handlers[VMMD_OP_LAST] = {
#define VMMD_REQ(OP, name, fields) [VMMD_OP_##OP] = { VMMD_OP_##OP, VMMD_REQ_##OP##_SIZE, vmmd_serve_##name },
#define VMMD_REQ0(OP, name) [VMMD_OP_##OP] = { VMMD_OP_##OP, 0, vmmd_serve_##name },
#define VMMD_REP(OP, name, fields)
#define VMMD_REP0(OP, name)
#define VMMD_REC(name, fields)
#include "proto.def"
#undef VMMD_REQ
#undef VMMD_REQ0
#undef VMMD_REP
#undef VMMD_REP0
#undef VMMD_REC
};

static void handle(struct vmmd_server *s, struct vmmd_client *c, const struct vmmd_request *r, int in_fd)
{
    uint16_t op = r->h.opcode;
    if (c->refused < 0) {
        vmmd_reply(c, op, r->h.request_id, c->refused, NULL, 0, -1);
        c->closing = 1;
        return;
    }
    struct req x = { .s = s, .c = c, .a = s->cfg.adapter, .r = r, .in_fd = in_fd, .n = 0, .fd = -1, .answered = 0 };
    const struct req_handler *h = op < VMMD_OP_LAST ? &handlers[op] : NULL;
    vidmm_status st = VIDMM_E_NOT_SUPPORTED;
    if (h && h->fn && h->opcode == op)
        st = r->h.length >= h->min_size ? h->fn(&x) : VIDMM_E_INVALID_ARG;
    if (!x.answered)
        vmmd_reply(c, op, r->h.request_id, st, x.out, x.n, x.fd);
}

static int client_message(struct vmmd_server *s, struct vmmd_client *c, const uint8_t *msg, size_t n,
                          int fds_received, int fd, int truncated);

int vmmd_client_message(struct vmmd_server *s, struct vmmd_client *c, const uint8_t *msg, size_t n, int fds_received,
                        int truncated)
{
    return vmmd_client_message_fd(s, c, msg, n, fds_received, -1, truncated);
}

int vmmd_client_message_fd(struct vmmd_server *s, struct vmmd_client *c, const uint8_t *msg, size_t n,
                           int fds_received, int fd, int truncated)
{
    int rc = client_message(s, c, msg, n, fds_received, fd, truncated);
    if (fd >= 0)
        close(fd);
    return rc;
}

static int client_message(struct vmmd_server *s, struct vmmd_client *c, const uint8_t *msg, size_t n,
                          int fds_received, int fd, int truncated)
{
    if (!s || !c)
        return -1;
    s->st.requests++;
    struct vmmd_request r;
    int d = truncated ? VMMD_DECODE_BAD_LENGTH : vmmd_decode_request(msg, n, &r);
    if (truncated)
        memset(&r, 0, sizeof r);
    /* Descriptors come with SHARE_OPEN only, exactly one (its flag is
     * checked by the decoder). */
    if (d == VMMD_DECODE_OK && (r.h.opcode == VMMD_OP_SHARE_OPEN ? fds_received != 1 || fd < 0 : fds_received != 0))
        d = VMMD_DECODE_BAD_FLAGS;
    if (d == VMMD_DECODE_OK) {
        c->requests++;
        c->last_status = VIDMM_PENDING;   /* a parked wait sends no reply now */
        if (c->refused >= 0 && c->nwaits + c->out_count >= s->cfg.max_requests) {
            /* Too many in flight: refused unhandled.  A client that goes on
             * without reading is dropped at OUT_MAX_BYTES as before. */
            s->st.quota_refusals++;
            LOG(s, 1, "client %u (pid %ld): %u requests in flight, %s refused\n", c->id, (long)c->pid,
                (unsigned)(c->nwaits + c->out_count), vmmd_op_name(r.h.opcode));
            vmmd_reply(c, r.h.opcode, r.h.request_id, (vidmm_status)VMMD_E_QUOTA_EXCEEDED, NULL, 0, -1);
            return c->closing ? -1 : 0;
        }
        handle(s, c, &r, fd);
        LOG(s, 2, "client %u: %s id %llu: %s\n", c->id, vmmd_op_name(r.h.opcode), (unsigned long long)r.h.request_id,
            vmmd_status_str(c->last_status));
        return c->closing ? -1 : 0;
    }
    s->st.protocol_errors++;
    int framing = d == VMMD_DECODE_SHORT || d == VMMD_DECODE_BAD_MAGIC || d == VMMD_DECODE_BAD_VERSION ||
                  d == VMMD_DECODE_BAD_LENGTH;
    LOG(s, 1, "client %u (pid %ld): %zu-byte message refused: %s%s\n", c->id, (long)c->pid, n, vmmd_decode_str(d),
        framing ? "; closing the connection" : "");
    vidmm_status st = d == VMMD_DECODE_BAD_OPCODE ? VIDMM_E_NOT_SUPPORTED
                      : d == VMMD_DECODE_BAD_VERSION ? VIDMM_E_NOT_SUPPORTED : VIDMM_E_INVALID_ARG;
    /* Framing errors: a reply with what could be read of the header, then
     * the connection is closed; the others answer and go on. */
    vmmd_reply(c, framing && d != VMMD_DECODE_BAD_VERSION && d != VMMD_DECODE_BAD_LENGTH ? 0x7fff : r.h.opcode,
          framing && d != VMMD_DECODE_BAD_VERSION && d != VMMD_DECODE_BAD_LENGTH ? 0 : r.h.request_id, st, NULL, 0, -1);
    if (framing)
        c->closing = 1;
    return c->closing ? -1 : 0;
}
