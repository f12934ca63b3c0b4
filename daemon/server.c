/*
 * daemon/server.c - vidmmd's server and its connections (docs/DAEMON.md):
 * the server made and torn down, a client connected (its vidmm process
 * and device) and dropped, the replies and events queued per client and
 * flushed to its socket, and the list of clients that got output outside
 * their own turn.  Requests reach their handlers through dispatch.c.
 *
 * Each connection is one vidmm process (vidmm_process_create at
 * connect, vidmm_process_destroy when the connection goes, whatever the
 * reason) plus a device of its own that creates the connection's
 * allocations as process-private ones, so the library itself refuses
 * another process's handles too.  Handles on the wire are the
 * connection's own (handles.c).
 */
#define _GNU_SOURCE
#include "server_internal.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

vidmm_status vmmd_server_create(const struct vmmd_server_config *cfg, struct vmmd_server **out)
{
    if (!cfg || !out || !cfg->adapter)
        return VIDMM_E_INVALID_ARG;
    struct vmmd_server *s = calloc(1, sizeof *s);
    if (!s)
        return VIDMM_E_NO_HOST_MEMORY;
    s->cfg = *cfg;
    if (!s->cfg.max_locked_bytes)
        s->cfg.max_locked_bytes = (uint64_t)256 << 20;
    if (!s->cfg.max_objects || s->cfg.max_objects > (1u << 24) - 1)
        s->cfg.max_objects = 65536;
    if (!s->cfg.max_alloc_bytes)
        s->cfg.max_alloc_bytes = (uint64_t)4 << 30;
    if (!s->cfg.max_requests)
        s->cfg.max_requests = 256;
    if (!s->cfg.max_connections_per_uid)
        s->cfg.max_connections_per_uid = 256;
    s->start_ns = now_ns();
    s->salt_state = cfg->salt_seed ? cfg->salt_seed
                                   : 0x9e3779b97f4a7c15ull ^ (uint64_t)now_ns() ^ ((uint64_t)getpid() << 32);
    *out = s;
    return VIDMM_OK;
}

void vmmd_server_destroy(struct vmmd_server *s)
{
    if (!s)
        return;
    while (s->nclients)
        vmmd_client_drop(s, s->clients[s->nclients - 1], "daemon shutting down");
    vmmd_server_reap(s);
    for (size_t i = 0; i < s->nexports; i++)   /* none: every holder was a client's */
        if (s->exports[i].fd >= 0)
            close(s->exports[i].fd);
    free(s->exports);
    free(s->clients);
    free(s->waits);
    free(s);
}

void vmmd_server_get_stats(const struct vmmd_server *s, struct vmmd_server_stats *out)
{
    if (s && out)
        *out = s->st;
}

void vmmd_server_reap(struct vmmd_server *s)
{
    while (s && s->reap) {
        struct vmmd_client *c = s->reap;
        s->reap = c->reap_next;
        free(c);
    }
}

int vmmd_client_dropped(const struct vmmd_client *c) { return c ? c->dropped : 1; }

static void pending_unlink(struct vmmd_server *s, struct vmmd_client *c)
{
    if (!c->pending)
        return;
    if (c->pend_prev)
        c->pend_prev->pend_next = c->pend_next;
    else
        s->pending = c->pend_next;
    if (c->pend_next)
        c->pend_next->pend_prev = c->pend_prev;
    c->pend_prev = c->pend_next = NULL;
    c->pending = 0;
}

/* c got output outside its own turn: the loop flushes it (and only the
 * clients so marked, not every client). */
void vmmd_mark_pending(struct vmmd_server *s, struct vmmd_client *c)
{
    if (c->pending || c->dropped)
        return;
    c->pending = 1;
    c->pend_prev = NULL;
    c->pend_next = s->pending;
    if (s->pending)
        s->pending->pend_prev = c;
    s->pending = c;
}

struct vmmd_client *vmmd_server_next_pending(struct vmmd_server *s)
{
    struct vmmd_client *c = s ? s->pending : NULL;
    if (c)
        pending_unlink(s, c);
    return c;
}

size_t vmmd_server_client_count(const struct vmmd_server *s) { return s ? s->nclients : 0; }
struct vmmd_client *vmmd_server_client_at(struct vmmd_server *s, size_t i)
{
    return s && i < s->nclients ? s->clients[i] : NULL;
}
int vmmd_client_fd(const struct vmmd_client *c) { return c ? c->fd : -1; }
int vmmd_client_closing(const struct vmmd_client *c) { return c ? c->closing : 1; }
int vmmd_client_has_output(const struct vmmd_client *c) { return c && c->out_head != NULL; }
int *vmmd_client_loop_word(struct vmmd_client *c) { return &c->loop_word; }

/* ---- replies -------------------------------------------------------------- */

static void out_free(struct outmsg *m)
{
    if (m->fd >= 0)
        close(m->fd);
    free(m);
}

/* Queue a reply: status, reserved, then payload.  fd (owned from here
 * on) rides with it. */
void vmmd_reply(struct vmmd_client *c, uint16_t opcode, uint64_t id, vidmm_status st, const uint8_t *payload,
                  size_t n, int fd)
{
    size_t len = VMMD_HEADER_SIZE + 8 + n;
    c->last_status = st;
    struct outmsg *m = malloc(sizeof *m + len);
    if (!m) {
        if (fd >= 0)
            close(fd);
        c->closing = 1;   /* a reply lost: the client would wait for ever */
        return;
    }
    m->next = NULL;
    m->fd = fd;
    m->n = len;
    vmmd_header_put(m->buf, (uint16_t)(opcode | VMMD_REPLY), (uint32_t)(8 + n), fd >= 0 ? VMMD_FLAG_FD : 0, id);
    vmmd_put32(m->buf + VMMD_HEADER_SIZE, (uint32_t)(int32_t)st);
    vmmd_put32(m->buf + VMMD_HEADER_SIZE + 4, 0);
    if (n)
        memcpy(m->buf + VMMD_HEADER_SIZE + 8, payload, n);
    if (c->fd < 0) {      /* no socket (fuzzing): nothing to deliver */
        out_free(m);
        return;
    }
    if (c->out_tail)
        c->out_tail->next = m;
    else
        c->out_head = m;
    c->out_tail = m;
    c->out_bytes += len;
    c->out_count++;
    if (c->out_bytes > OUT_MAX_BYTES)
        c->closing = 1;   /* not reading its replies */
}

/* An event: a message the client did not ask for (opcode | VMMD_REPLY,
 * request id 0, status 0), queued behind the replies already queued. */
void vmmd_send_event(struct vmmd_client *c, uint16_t opcode, const uint8_t *payload, size_t n)
{
    vidmm_status keep = c->last_status;
    vmmd_reply(c, opcode, 0, VIDMM_OK, payload, n, -1);
    c->last_status = keep;
}

int vmmd_client_flush(struct vmmd_client *c)
{
    while (c->out_head) {
        struct outmsg *m = c->out_head;
        long r = vmmd_send(c->fd, m->buf, m->n, m->fd, MSG_DONTWAIT);
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            if (errno == EINTR)
                continue;
            return -1;
        }
        c->out_head = m->next;
        if (!c->out_head)
            c->out_tail = NULL;
        c->out_bytes -= m->n;
        c->out_count--;
        out_free(m);
    }
    return 1;
}

/* ---- connections ---------------------------------------------------------- */

struct vmmd_client *vmmd_client_new(struct vmmd_server *s, int fd, pid_t pid, uid_t uid, gid_t gid)
{
    if (!s)
        return NULL;
    if (s->nclients == s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 16;
        struct vmmd_client **n = realloc(s->clients, ncap * sizeof *n);
        if (!n)
            return NULL;
        s->clients = n;
        s->cap = ncap;
    }
    struct vmmd_client *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->srv = s;
    c->fd = fd;
    c->pid = pid;
    c->uid = uid;
    c->gid = gid;
    c->id = ++s->next_id;
    /* A salt per connection (xorshift): handle values of one connection
     * are not valid in another even when slots and generations match. */
    do {
        s->salt_state ^= s->salt_state << 13;
        s->salt_state ^= s->salt_state >> 7;
        s->salt_state ^= s->salt_state << 17;
        c->salt = (uint16_t)(s->salt_state >> 24);
    } while (c->salt == 0);
    if (fd >= 0 && pid > 0) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%ld/comm", (long)pid);
        FILE *f = fopen(path, "r");
        if (f) {
            if (fgets(c->comm, sizeof c->comm, f))
                c->comm[strcspn(c->comm, "\n")] = 0;
            fclose(f);
        }
    }
    uint32_t same_uid = 0;
    for (size_t i = 0; i < s->nclients; i++)
        same_uid += s->clients[i]->uid == uid && s->clients[i]->refused >= 0;
    if (same_uid >= s->cfg.max_connections_per_uid) {
        c->refused = (vidmm_status)VMMD_E_QUOTA_EXCEEDED;
        s->st.quota_refusals++;
    } else {
        c->refused = vidmm_process_create(s->cfg.adapter, &c->process);
    }
    if (c->refused >= 0) {
        c->refused = vidmm_device_create(s->cfg.adapter, c->process, &c->device);
        if (c->refused < 0) {
            vidmm_process_destroy(s->cfg.adapter, c->process);
            c->process = 0;
        }
    }
    if (c->refused > 0)
        c->refused = VIDMM_OK;
    c->index = s->nclients;
    s->clients[s->nclients++] = c;
    s->st.connections++;
    LOG(s, 1, "client %u connected: pid %ld (%s) uid %ld gid %ld%s%s\n", c->id, (long)pid, c->comm, (long)uid,
        (long)gid, c->refused < 0 ? ", refused: " : "", c->refused < 0 ? vmmd_status_str(c->refused) : "");
    return c;
}

void vmmd_client_drop(struct vmmd_server *s, struct vmmd_client *c, const char *why)
{
    if (!s || !c || c->dropped)
        return;
    /* Its parked waits go with it. */
    size_t w = 0;
    for (size_t i = 0; i < s->nwaits; i++)
        if (s->waits[i].c != c)
            s->waits[w++] = s->waits[i];
    s->nwaits = w;
    c->dropping = 1;   /* the process's teardown sends no trim events */
    uint32_t objects = c->live, locked = 0;
    for (uint32_t i = 1; i < c->nobj; i++) {
        /* No registration may outlive c (its context), whatever the
         * process teardown below answers. */
        if (c->objs[i].type == OBJ_DEVICE)
            vidmm_register_trim_notification(s->cfg.adapter, c->objs[i].lib, NULL, NULL);
        if (c->objs[i].type == OBJ_ALLOC && c->objs[i].lock_count)
            locked++;
        vmmd_obj_unlock_all(c, &c->objs[i]);
    }
    /* The process takes its devices, queues and private allocations with it,
     * and lets go of the shared ones it holds. */
    vidmm_status st = VIDMM_OK;
    if (c->process)
        st = vidmm_process_destroy(s->cfg.adapter, c->process);
    for (uint32_t i = 1; i < c->nobj; i++)
        if (c->objs[i].type == OBJ_ALLOC)
            vmmd_export_unref(s, c->objs[i].share);
    LOG(s, 1, "client %u (pid %ld) gone (%s): %u handles, %u locked, process destroyed: %s\n", c->id, (long)c->pid,
        why, objects, locked, vidmm_status_str(st));
    while (c->out_head) {
        struct outmsg *m = c->out_head;
        c->out_head = m->next;
        out_free(m);
    }
    if (c->fd >= 0)
        close(c->fd);
    free(c->objs);
    pending_unlink(s, c);
    struct vmmd_client *last = s->clients[--s->nclients];
    s->clients[c->index] = last;
    last->index = c->index;
    c->fd = -1;
    c->objs = NULL;
    c->dropped = 1;
    c->reap_next = s->reap;
    s->reap = c;
    s->st.disconnections++;
}
