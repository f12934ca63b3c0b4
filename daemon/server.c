/*
 * daemon/server.c - vidmmd's clients, their handle tables and the
 * request handlers (docs/DAEMON.md).
 *
 * Requests reach their handler through handlers[], one entry per request
 * of daemon/proto.def: {fixed payload size, h_NAME}.  A handler reads
 * its decoded fields (struct vmmd_req_NAME), calls vidmm and leaves the
 * reply's fields, encoded by proto.def's codecs, to handle().
 *
 * Each connection is one vidmm process (vidmm_process_create at
 * connect, vidmm_process_destroy when the connection goes, whatever the
 * reason) plus a device of its own that creates the connection's
 * allocations as process-private ones, so the library itself refuses
 * another process's handles too.  Handles on the wire are the
 * connection's own: type, a per-connection salt, a generation and a slot
 * of the connection's table.  A value that is not in this connection's
 * table is VIDMM_E_INVALID_HANDLE, whatever another connection holds.
 *
 * Shared allocations (docs/DAEMON.md "Shared allocations"): an export is
 * a sealed memfd the daemon creates and keeps open, holding 16 random
 * bytes; the client gets a duplicate of its descriptor and passes it on
 * over its own sockets.  An open names the share by that descriptor
 * alone: the daemon fstat()s it and accepts it only when its device and
 * inode are those of one of its own live export files and the 16 bytes
 * match - so no value a client could type, and no file it could make,
 * names another client's share.
 */
#define _GNU_SOURCE
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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
    vidmm_status last_status;   /* of the last reply (the verbose log) */
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

static uint64_t now_ns(void)
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
static void mark_pending(struct vmmd_server *s, struct vmmd_client *c)
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
uint64_t vmmd_client_handle_guess(const struct vmmd_client *c, uint8_t type, uint32_t slot, uint16_t gen)
{
    if (!c)
        return 0;
    return (uint64_t)type << 56 | (uint64_t)c->salt << 40 | (uint64_t)gen << 24 | (slot & 0xffffffu);
}

/* ---- per-connection handle table ---------------------------------------- */

static uint64_t obj_handle(const struct vmmd_client *c, uint32_t slot)
{
    const struct obj *o = &c->objs[slot];
    return (uint64_t)o->type << 56 | (uint64_t)c->salt << 40 | (uint64_t)o->gen << 24 | slot;
}

/* The slot a wire handle names in this connection, or 0. */
static uint32_t obj_find(const struct vmmd_client *c, uint64_t h, uint8_t type)
{
    uint32_t slot = (uint32_t)(h & 0xffffffu);
    if ((uint8_t)(h >> 56) != type || (uint16_t)(h >> 40) != c->salt || slot == 0 || slot >= c->nobj)
        return 0;
    const struct obj *o = &c->objs[slot];
    if (o->type != type || o->gen != (uint16_t)(h >> 24))
        return 0;
    return slot;
}

/* A slot for a new object: VIDMM_OK with *out set, VMMD_E_QUOTA_EXCEEDED
 * at the connection's handle limit, VIDMM_E_NO_HOST_MEMORY when the
 * table cannot grow. */
static vidmm_status obj_add(struct vmmd_server *s, struct vmmd_client *c, uint8_t type, vidmm_handle lib,
                            uint32_t parent, uint32_t *out)
{
    *out = 0;
    if (c->live >= s->cfg.max_objects) {
        s->st.quota_refusals++;
        LOG(s, 1, "client %u (pid %ld): handle limit (%u) reached\n", c->id, (long)c->pid, s->cfg.max_objects);
        return (vidmm_status)VMMD_E_QUOTA_EXCEEDED;
    }
    uint32_t slot = 0;
    for (uint32_t i = 1; i < c->nobj; i++)   /* first free slot: tables are small */
        if (c->objs[i].type == OBJ_FREE) {
            slot = i;
            break;
        }
    if (!slot) {
        if (c->nobj == c->cap) {
            uint32_t ncap = c->cap ? c->cap * 2 : 16;
            struct obj *n = realloc(c->objs, ncap * sizeof *n);
            if (!n)
                return VIDMM_E_NO_HOST_MEMORY;
            c->objs = n;
            c->cap = ncap;
        }
        if (c->nobj == 0) {
            memset(&c->objs[0], 0, sizeof c->objs[0]);
            c->nobj = 1;
        }
        slot = c->nobj++;
        memset(&c->objs[slot], 0, sizeof c->objs[slot]);
    }
    struct obj *o = &c->objs[slot];
    uint16_t gen = (uint16_t)(o->gen + 1);
    memset(o, 0, sizeof *o);
    o->gen = gen ? gen : 1;
    o->type = type;
    o->lib = lib;
    o->parent = parent;
    c->live++;
    *out = slot;
    return VIDMM_OK;
}

static void obj_unlock_all(struct vmmd_client *c, struct obj *o)
{
    if (o->map) {
        munmap(o->map, o->map_size);
        c->locked_bytes -= o->map_size;
    }
    o->map = NULL;
    o->map_size = 0;
    o->lock_count = 0;
}

/* A handle holding an exported allocation goes: at the last one the
 * allocation is gone from the library, and its export file with it. */
static void export_unref(struct vmmd_server *s, uint32_t share)
{
    if (!share || share > s->nexports)
        return;
    struct share_export *e = &s->exports[share - 1];
    if (e->refs && --e->refs == 0) {
        close(e->fd);
        e->fd = -1;
        s->st.shares_live--;
    }
}

static void obj_free(struct vmmd_client *c, uint32_t slot)
{
    struct obj *o = &c->objs[slot];
    export_unref(c->srv, o->share);
    o->share = 0;
    obj_unlock_all(c, o);
    if (o->type == OBJ_ALLOC) {
        c->alloc_bytes -= o->size;
        c->nallocs--;
    }
    o->type = OBJ_FREE;
    o->lib = 0;
    c->live--;
}

/* ---- replies -------------------------------------------------------------- */

static void out_free(struct outmsg *m)
{
    if (m->fd >= 0)
        close(m->fd);
    free(m);
}

/* Queue a reply: status, reserved, then payload.  fd (owned from here
 * on) rides with it. */
static void reply(struct vmmd_client *c, uint16_t opcode, uint64_t id, vidmm_status st, const uint8_t *payload,
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
static void send_event(struct vmmd_client *c, uint16_t opcode, const uint8_t *payload, size_t n)
{
    vidmm_status keep = c->last_status;
    reply(c, opcode, 0, VIDMM_OK, payload, n, -1);
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
        obj_unlock_all(c, &c->objs[i]);
    }
    /* The process takes its devices, queues and private allocations with it,
     * and lets go of the shared ones it holds. */
    vidmm_status st = VIDMM_OK;
    if (c->process)
        st = vidmm_process_destroy(s->cfg.adapter, c->process);
    for (uint32_t i = 1; i < c->nobj; i++)
        if (c->objs[i].type == OBJ_ALLOC)
            export_unref(s, c->objs[i].share);
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

/* ---- objects behind requests --------------------------------------------- */

static vidmm_status translate_list(const struct vmmd_client *c, const uint8_t *list, uint32_t n, vidmm_handle *out)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t slot = obj_find(c, vmmd_get64(list + 8 * (size_t)i), OBJ_ALLOC);
        if (!slot)
            return VIDMM_E_INVALID_HANDLE;
        out[i] = c->objs[slot].lib;
    }
    return VIDMM_OK;
}

static vidmm_status do_lock(struct vmmd_server *s, struct vmmd_client *c, uint32_t slot, uint64_t *size, int *fd_out)
{
    struct obj *o = &c->objs[slot];
    struct vidmm_adapter *a = s->cfg.adapter;
    *fd_out = -1;
    if (o->lock_count) {   /* nested: the client already has the mapping */
        if (o->lock_count == UINT32_MAX)
            return VIDMM_E_OVERFLOW;
        o->lock_count++;
        *size = o->map_size;
        return VIDMM_OK;
    }
    struct vidmm_allocation_state as;
    vidmm_status st = vidmm_allocation_query(a, o->lib, &as);
    if (st < 0)
        return st;
    if (as.size == 0 || as.size > SIZE_MAX / 2)
        return VIDMM_E_TOO_LARGE;
    if (c->locked_bytes + as.size > s->cfg.max_locked_bytes)
        return VIDMM_E_NO_HOST_MEMORY;
    void *p = NULL;
    st = vidmm_device_lock(a, c->device, o->lib, &p);
    if (st < 0)
        return st;
    int fd = memfd_create("vidmm-lock", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    uint8_t *map = MAP_FAILED;
    if (fd >= 0 && ftruncate(fd, (off_t)as.size) == 0)
        map = mmap(NULL, as.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        vidmm_device_unlock(a, c->device, o->lib);
        if (fd >= 0)
            close(fd);
        return VIDMM_E_NO_HOST_MEMORY;
    }
    memcpy(map, p, as.size);
    vidmm_device_unlock(a, c->device, o->lib);
    /* The client may write and map it but never change its size: the
     * daemon's copy back must not fault on a shrunk file. */
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        munmap(map, as.size);
        close(fd);
        return VIDMM_E_NO_HOST_MEMORY;
    }
    o->map = map;
    o->map_size = as.size;
    o->lock_count = 1;
    c->locked_bytes += as.size;
    s->st.locks++;
    s->st.copy_bytes += as.size;
    *size = as.size;
    *fd_out = fd;
    return VIDMM_OK;
}

static vidmm_status do_unlock(struct vmmd_server *s, struct vmmd_client *c, uint32_t slot)
{
    struct obj *o = &c->objs[slot];
    if (!o->lock_count)
        return VIDMM_E_STATE;
    if (--o->lock_count)
        return VIDMM_OK;
    void *p = NULL;
    vidmm_status st = vidmm_device_lock(s->cfg.adapter, c->device, o->lib, &p);
    if (st >= 0) {
        memcpy(p, o->map, o->map_size);   /* copy back: the client's writes reach the allocation */
        s->st.copy_bytes += o->map_size;
        vidmm_device_unlock(s->cfg.adapter, c->device, o->lib);
        st = VIDMM_OK;
    }
    obj_unlock_all(c, o);   /* the client's copy is its own from here on */
    return st;
}

/* ---- shared allocations ----------------------------------------------------- */

/* The export of the allocation in slot (made now if it has none): its
 * file's descriptor duplicated for the reply. */
static vidmm_status do_export(struct vmmd_server *s, struct vmmd_client *c, uint32_t slot, int *fd_out)
{
    struct obj *o = &c->objs[slot];
    struct vidmm_share_token tok;
    vidmm_status st = vidmm_share_export(s->cfg.adapter, c->process, o->lib, &tok);
    if (st < 0)
        return st;
    size_t idx = SIZE_MAX, free_idx = SIZE_MAX;
    for (size_t i = 0; i < s->nexports; i++) {
        if (s->exports[i].fd < 0) {
            if (free_idx == SIZE_MAX)
                free_idx = i;
        } else if (!memcmp(&s->exports[i].token, &tok, sizeof tok)) {
            idx = i;
            break;
        }
    }
    if (idx == SIZE_MAX) {
        if (free_idx == SIZE_MAX) {
            struct share_export *n = realloc(s->exports, (s->nexports + 1) * sizeof *n);
            if (!n)
                return VIDMM_E_NO_HOST_MEMORY;
            s->exports = n;
            free_idx = s->nexports++;
            s->exports[free_idx].fd = -1;
        }
        struct share_export *e = &s->exports[free_idx];
        uint8_t nonce[16];
        struct stat sb;
        int fd = memfd_create("vidmm-share", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0 || getentropy(nonce, sizeof nonce) != 0 || pwrite(fd, nonce, sizeof nonce, 0) != (ssize_t)sizeof nonce ||
            fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0 ||
            fstat(fd, &sb) != 0) {
            if (fd >= 0)
                close(fd);
            return VIDMM_E_NO_HOST_MEMORY;
        }
        e->fd = fd;
        e->dev = sb.st_dev;
        e->ino = sb.st_ino;
        memcpy(e->nonce, nonce, sizeof nonce);
        e->token = tok;
        e->refs = 0;
        idx = free_idx;
        s->st.shares_live++;
    }
    int fd = fcntl(s->exports[idx].fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) {
        if (!s->exports[idx].refs) {   /* made for this call: nobody holds it */
            close(s->exports[idx].fd);
            s->exports[idx].fd = -1;
            s->st.shares_live--;
        }
        return VIDMM_E_NO_HOST_MEMORY;
    }
    if (!o->share) {   /* the exporter's handle holds it from now on */
        o->share = (uint32_t)idx + 1;
        s->exports[idx].refs++;
    }
    s->st.shares_exported++;
    *fd_out = fd;
    return VIDMM_OK;
}

int vmmd_server_share_fd(const struct vmmd_server *s, uint32_t i)
{
    if (!s)
        return -1;
    for (size_t k = 0, live = 0; k < s->nexports; k++)
        if (s->exports[k].fd >= 0 && live++ == i)
            return fcntl(s->exports[k].fd, F_DUPFD_CLOEXEC, 0);
    return -1;
}

/* The export a received descriptor names, or SIZE_MAX: the same file
 * (device and inode of a live export file of this daemon) with the same
 * sealed bytes. */
static size_t export_of_fd(const struct vmmd_server *s, int fd)
{
    struct stat sb;
    uint8_t nonce[16];
    if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size != (off_t)sizeof nonce ||
        pread(fd, nonce, sizeof nonce, 0) != (ssize_t)sizeof nonce)
        return SIZE_MAX;
    for (size_t i = 0; i < s->nexports; i++) {
        const struct share_export *e = &s->exports[i];
        if (e->fd >= 0 && e->dev == sb.st_dev && e->ino == sb.st_ino && !memcmp(e->nonce, nonce, sizeof nonce))
            return i;
    }
    return SIZE_MAX;
}

static vidmm_status do_open(struct vmmd_server *s, struct vmmd_client *c, int fd, uint64_t *wire)
{
    size_t idx = export_of_fd(s, fd);
    if (idx == SIZE_MAX)
        return VIDMM_E_INVALID_HANDLE;   /* not a share of this daemon (or its allocation is gone) */
    vidmm_handle h = 0;
    vidmm_status st = vidmm_share_open(s->cfg.adapter, c->process, &s->exports[idx].token, &h);
    if (st < 0)
        return st;   /* VIDMM_E_STATE: this connection holds it already */
    /* The opener's handle counts toward its limits as a created one: a
     * hold keeps the whole allocation alive (docs/DAEMON.md "Limits"). */
    struct vidmm_allocation_state as;
    memset(&as, 0, sizeof as);
    uint32_t slot = 0;
    st = vidmm_allocation_query(s->cfg.adapter, h, &as);
    if (st >= 0 && as.size > s->cfg.max_alloc_bytes - c->alloc_bytes) {
        s->st.quota_refusals++;
        LOG(s, 1, "client %u (pid %ld): open of a shared allocation of %llu bytes over its limit (%llu of %llu alive)\n",
            c->id, (long)c->pid, (unsigned long long)as.size, (unsigned long long)c->alloc_bytes,
            (unsigned long long)s->cfg.max_alloc_bytes);
        st = (vidmm_status)VMMD_E_QUOTA_EXCEEDED;
    } else if (st >= 0) {
        st = obj_add(s, c, OBJ_ALLOC, h, 0, &slot);
    }
    if (st < 0) {
        vidmm_allocation_destroy(s->cfg.adapter, h);   /* lets go of the hold just taken */
        return st;
    }
    c->objs[slot].size = as.size;
    c->alloc_bytes += as.size;
    c->nallocs++;
    c->objs[slot].share = (uint32_t)idx + 1;
    s->exports[idx].refs++;
    s->st.shares_opened++;
    *wire = obj_handle(c, slot);
    return VIDMM_OK;
}

size_t vmmd_server_poll_waits(struct vmmd_server *s)
{
    if (!s || !s->nwaits)
        return 0;
    uint64_t now = now_ns();
    size_t keep = 0;
    for (size_t i = 0; i < s->nwaits; i++) {
        struct wait *w = &s->waits[i];
        uint64_t done = 0, submitted = 0;
        vidmm_status st = w->op == VMMD_OP_CONTEXT_WAIT
                              ? vidmm_context_fence(s->cfg.adapter, w->queue, &submitted, &done)
                              : vidmm_paging_queue_fence(s->cfg.adapter, w->queue, &done);
        if (st >= 0 && done < w->value && now < w->deadline_ns) {
            s->waits[keep++] = *w;
            continue;
        }
        if (st >= 0)
            st = done >= w->value ? VIDMM_OK : VIDMM_E_TIMEOUT;
        w->c->nwaits--;
        reply(w->c, w->op, w->request_id, st, NULL, 0, -1);
        s->st.waits_answered++;
        mark_pending(s, w->c);
    }
    s->nwaits = keep;
    return keep;
}

/* vidmm's trim notification for one of c's devices (TRIM_REGISTER): a
 * TRIM event to c.  It runs on the loop's thread inside the vidmm call
 * that found the process over budget - which may be another client's
 * request (its demand lowered every budget) or a budget change - so c
 * is marked for the loop to flush. */
static void on_trim(void *context, vidmm_handle device, uint32_t flags, uint64_t bytes_to_trim)
{
    struct vmmd_client *c = context;
    if (c->dropping)
        return;
    for (uint32_t i = 1; i < c->nobj; i++)
        if (c->objs[i].type == OBJ_DEVICE && c->objs[i].lib == device) {
            uint8_t ev[VMMD_TRIM_EVENT_SIZE];
            struct vmmd_rec_trim_event m = { obj_handle(c, i), flags, 0, bytes_to_trim };
            vmmd_put_rec_trim_event(ev, &m);
            send_event(c, VMMD_EV_TRIM, ev, sizeof ev);
            mark_pending(c->srv, c);
            c->srv->st.trim_events++;
            return;
        }
}

/* ---- request handlers ----------------------------------------------------- */

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

/* The wire handle h of type in x's connection: its slot, 0 when it is
 * not a live object of that type. */
static uint32_t req_find(const struct req *x, uint64_t h, uint8_t type) { return obj_find(x->c, h, type); }

static vidmm_status h_hello(struct req *x)
{
    struct vmmd_rep_hello m = { (uint32_t)x->c->pid, (uint32_t)x->c->uid, x->c->id, 0 };
    vmmd_put_rep_hello(x->out, &m);
    x->n = VMMD_REP_HELLO_SIZE;
    return VIDMM_OK;
}

static vidmm_status h_echo(struct req *x)
{
    const struct vmmd_request *r = x->r;
    /* The reply carries an 8-byte status before the bytes: what does
     * not fit is refused, never cut (docs/PROTOCOL.md). */
    if (r->data_size > VMMD_MAX_PAYLOAD - 8)
        reply(x->c, r->h.opcode, r->h.request_id, VIDMM_E_TOO_LARGE, NULL, 0, -1);
    else
        reply(x->c, r->h.opcode, r->h.request_id, VIDMM_OK, r->data, r->data_size, -1);
    x->answered = 1;
    return VIDMM_OK;
}

/* A new object's wire handle as the 8-byte reply. */
static void put_handle(struct req *x, uint32_t slot)
{
    vmmd_put64(x->out, obj_handle(x->c, slot));
    x->n = 8;
}

static vidmm_status h_device_create(struct req *x)
{
    vidmm_handle d = 0;
    uint32_t slot;
    vidmm_status st = vidmm_device_create(x->a, x->c->process, &d);
    if (st < 0)
        return st;
    vidmm_status ost = obj_add(x->s, x->c, OBJ_DEVICE, d, 0, &slot);
    if (ost < 0) {
        vidmm_device_destroy(x->a, d);
        return ost;
    }
    put_handle(x, slot);
    return st;
}

static vidmm_status h_device_destroy(struct req *x)
{
    struct vmmd_client *c = x->c;
    uint32_t slot = req_find(x, x->r->m.device_destroy.device, OBJ_DEVICE);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    vidmm_status st = vidmm_device_destroy(x->a, c->objs[slot].lib);
    if (st >= 0) {
        /* The library destroyed the device's queues and contexts with it
         * (and its trim registration). */
        for (uint32_t i = 1; i < c->nobj; i++)
            if ((c->objs[i].type == OBJ_QUEUE || c->objs[i].type == OBJ_CONTEXT) && c->objs[i].parent == slot)
                obj_free(c, i);
        obj_free(c, slot);
    }
    return st;
}

static vidmm_status h_queue_create(struct req *x)
{
    const struct vmmd_req_queue_create *m = &x->r->m.queue_create;
    uint32_t slot = req_find(x, m->device, OBJ_DEVICE);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    if (m->reserved)
        return VIDMM_E_INVALID_ARG;
    vidmm_handle q = 0;
    vidmm_status st = vidmm_paging_queue_create(x->a, x->c->objs[slot].lib, m->priority, &q);
    if (st < 0)
        return st;
    uint32_t qs = 0;
    vidmm_status ost = obj_add(x->s, x->c, OBJ_QUEUE, q, slot, &qs);
    if (ost < 0) {
        vidmm_paging_queue_destroy(x->a, q);
        return ost;
    }
    put_handle(x, qs);
    return st;
}

static vidmm_status h_queue_destroy(struct req *x)
{
    uint32_t slot = req_find(x, x->r->m.queue_destroy.queue, OBJ_QUEUE);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    vidmm_status st = vidmm_paging_queue_destroy(x->a, x->c->objs[slot].lib);
    if (st >= 0)
        obj_free(x->c, slot);
    return st;
}

static vidmm_status h_queue_fence(struct req *x)
{
    uint32_t slot = req_find(x, x->r->m.queue_fence.queue, OBJ_QUEUE);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    struct vmmd_rep_queue_fence m = { 0 };
    vidmm_status st = vidmm_paging_queue_fence(x->a, x->c->objs[slot].lib, &m.completed);
    vmmd_put_rep_queue_fence(x->out, &m);
    x->n = VMMD_REP_QUEUE_FENCE_SIZE;
    return st;
}

/* Park a QUEUE_WAIT or CONTEXT_WAIT on q until value passes or
 * timeout_ns has gone by (vmmd_server_poll_waits answers it). */
static void park_wait(struct req *x, vidmm_handle q, uint64_t value, uint64_t timeout_ns)
{
    struct vmmd_server *s = x->s;
    const struct vmmd_request *r = x->r;
    x->answered = 1;
    if (s->nwaits == s->wcap) {
        size_t ncap = s->wcap ? s->wcap * 2 : 16;
        struct wait *n = realloc(s->waits, ncap * sizeof *n);
        if (!n) {
            reply(x->c, r->h.opcode, r->h.request_id, VIDMM_E_NO_HOST_MEMORY, NULL, 0, -1);
            return;
        }
        s->waits = n;
        s->wcap = ncap;
    }
    uint64_t now = now_ns();
    struct wait *w = &s->waits[s->nwaits++];
    x->c->nwaits++;
    w->c = x->c;
    w->request_id = r->h.request_id;
    w->op = r->h.opcode;
    w->queue = q;
    w->value = value;
    w->deadline_ns = timeout_ns == UINT64_MAX || timeout_ns > UINT64_MAX - now ? UINT64_MAX : now + timeout_ns;
    s->st.waits_parked++;
}

static vidmm_status h_queue_wait(struct req *x)
{
    const struct vmmd_req_queue_wait *m = &x->r->m.queue_wait;
    uint32_t slot = req_find(x, m->queue, OBJ_QUEUE);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    uint64_t v = 0;
    vidmm_status st = vidmm_paging_queue_fence(x->a, x->c->objs[slot].lib, &v);
    if (st >= 0 && v < m->value) {
        if (m->timeout_ns == 0)
            return VIDMM_E_TIMEOUT;
        park_wait(x, x->c->objs[slot].lib, m->value, m->timeout_ns);
        return VIDMM_OK;
    }
    return st > 0 ? VIDMM_OK : st;
}

/* A new allocation h of the connection: counted against its limit, then
 * given a handle; destroyed again when either fails. */
static vidmm_status adopt_allocation(struct req *x, vidmm_handle h, uint32_t *aslot)
{
    struct vmmd_server *s = x->s;
    struct vmmd_client *c = x->c;
    /* The size is the driver's answer: known only once created. */
    struct vidmm_allocation_state as;
    memset(&as, 0, sizeof as);
    vidmm_status ast = vidmm_allocation_query(x->a, h, &as);
    if (ast >= 0 && as.size > s->cfg.max_alloc_bytes - c->alloc_bytes) {
        s->st.quota_refusals++;
        LOG(s, 1, "client %u (pid %ld): allocation of %llu bytes over its limit (%llu of %llu alive)\n", c->id,
            (long)c->pid, (unsigned long long)as.size, (unsigned long long)c->alloc_bytes,
            (unsigned long long)s->cfg.max_alloc_bytes);
        ast = (vidmm_status)VMMD_E_QUOTA_EXCEEDED;
    } else if (ast >= 0) {
        ast = obj_add(s, c, OBJ_ALLOC, h, 0, aslot);
    }
    if (ast < 0) {
        vidmm_allocation_destroy(x->a, h);
        return ast;
    }
    c->objs[*aslot].size = as.size;
    c->alloc_bytes += as.size;
    c->nallocs++;
    return VIDMM_OK;
}

static vidmm_status h_alloc_create(struct req *x)
{
    const struct vmmd_request *r = x->r;
    const struct vmmd_req_alloc_create *m = &r->m.alloc_create;
    vidmm_handle dev = x->c->device;
    if (m->device) {
        uint32_t slot = req_find(x, m->device, OBJ_DEVICE);
        if (!slot)
            return VIDMM_E_INVALID_HANDLE;
        dev = x->c->objs[slot].lib;
    }
    vidmm_handle h = 0;
    vidmm_status st =
        vidmm_device_allocation_create(x->a, dev, r->data_size ? r->data : NULL, r->data_size, m->flags, &h);
    if (st < 0)
        return st;
    uint32_t aslot = 0;
    vidmm_status ast = adopt_allocation(x, h, &aslot);
    if (ast < 0)
        return ast;
    put_handle(x, aslot);
    return st;   /* the creation's own success status (VIDMM_PENDING) */
}

static vidmm_status h_alloc_destroy(struct req *x)
{
    struct vmmd_client *c = x->c;
    uint32_t slot = req_find(x, x->r->m.alloc_destroy.allocation, OBJ_ALLOC);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    if (c->objs[slot].lock_count)
        return VIDMM_E_BUSY;   /* as the library: not while locked */
    struct vidmm_residency_state rs;
    memset(&rs, 0, sizeof rs);
    vidmm_allocation_residency(x->a, c->objs[slot].lib, &rs);
    vidmm_status st = vidmm_allocation_destroy(x->a, c->objs[slot].lib);
    if (st >= 0) {
        c->retired_evictions += rs.evictions;
        c->retired_restores += rs.restores;
        obj_free(c, slot);
    }
    return st;
}

/* The request's handle list (r->list, r->list_count), translated into a
 * buffer the caller frees when it is not stackbuf. */
static vidmm_status list_get(const struct req *x, vidmm_handle *stackbuf, size_t stackn, vidmm_handle **out)
{
    uint32_t n = x->r->list_count;
    vidmm_handle *list = n <= stackn ? stackbuf : malloc(sizeof *list * n);
    *out = list;
    if (!list)
        return VIDMM_E_NO_HOST_MEMORY;
    return translate_list(x->c, x->r->list, n, list);
}

static vidmm_status h_make_resident(struct req *x)
{
    const struct vmmd_req_make_resident *m = &x->r->m.make_resident;
    uint32_t ds = req_find(x, m->device, OBJ_DEVICE);
    uint32_t qs = req_find(x, m->paging_queue, OBJ_QUEUE);
    if (!ds || !qs)
        return VIDMM_E_INVALID_HANDLE;
    vidmm_handle stackbuf[64], *list = NULL;
    vidmm_status st = list_get(x, stackbuf, 64, &list);
    if (st >= 0) {
        struct vidmm_make_resident_args mr;
        memset(&mr, 0, sizeof mr);
        mr.paging_queue = x->c->objs[qs].lib;
        mr.allocations = m->count ? list : NULL;
        mr.count = m->count;
        mr.flags = m->flags;
        st = vidmm_make_resident(x->a, x->c->objs[ds].lib, &mr);
        struct vmmd_rep_make_resident rm = { mr.paging_fence_value, mr.bytes_to_trim };
        vmmd_put_rep_make_resident(x->out, &rm);
        x->n = VMMD_REP_MAKE_RESIDENT_SIZE;
    }
    if (list != stackbuf)
        free(list);
    return st;
}

static vidmm_status h_evict(struct req *x)
{
    const struct vmmd_req_evict *m = &x->r->m.evict;
    uint32_t ds = req_find(x, m->device, OBJ_DEVICE);
    if (!ds)
        return VIDMM_E_INVALID_HANDLE;
    vidmm_handle stackbuf[64], *list = NULL;
    vidmm_status st = list_get(x, stackbuf, 64, &list);
    if (st >= 0) {
        struct vidmm_evict_args ev;
        memset(&ev, 0, sizeof ev);
        ev.allocations = m->count ? list : NULL;
        ev.count = m->count;
        ev.flags = m->flags;
        st = vidmm_evict(x->a, x->c->objs[ds].lib, &ev);
        struct vmmd_rep_evict rm = { ev.bytes_to_trim };
        vmmd_put_rep_evict(x->out, &rm);
        x->n = VMMD_REP_EVICT_SIZE;
    }
    if (list != stackbuf)
        free(list);
    return st;
}

static vidmm_status h_query_vidmem(struct req *x)
{
    const struct vmmd_req_query_vidmem *m = &x->r->m.query_vidmem;
    struct vidmm_video_memory_info vi;
    memset(&vi, 0, sizeof vi);
    if (m->group > 1 || m->reserved)
        return VIDMM_E_INVALID_ARG;
    vidmm_status st = vidmm_query_video_memory_info(x->a, x->c->process, (enum vidmm_segment_group)m->group, &vi);
    struct vmmd_rep_query_vidmem rm = { vi.budget, vi.current_usage, vi.current_reservation,
                                        vi.available_for_reservation };
    vmmd_put_rep_query_vidmem(x->out, &rm);
    x->n = VMMD_REP_QUERY_VIDMEM_SIZE;
    return st;
}

static vidmm_status h_lock(struct req *x)
{
    uint32_t slot = req_find(x, x->r->m.lock.allocation, OBJ_ALLOC);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    struct vmmd_rep_lock rm = { 0 };
    vidmm_status st = do_lock(x->s, x->c, slot, &rm.size, &x->fd);
    vmmd_put_rep_lock(x->out, &rm);
    x->n = VMMD_REP_LOCK_SIZE;
    return st;
}

static vidmm_status h_unlock(struct req *x)
{
    uint32_t slot = req_find(x, x->r->m.unlock.allocation, OBJ_ALLOC);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    return do_unlock(x->s, x->c, slot);
}

static vidmm_status h_alloc_query(struct req *x)
{
    uint32_t slot = req_find(x, x->r->m.alloc_query.allocation, OBJ_ALLOC);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    struct vidmm_allocation_state as;
    struct vidmm_residency_state rs;
    memset(&as, 0, sizeof as);
    memset(&rs, 0, sizeof rs);
    vidmm_status st = vidmm_allocation_query(x->a, x->c->objs[slot].lib, &as);
    if (st >= 0)
        st = vidmm_allocation_residency(x->a, x->c->objs[slot].lib, &rs);
    struct vmmd_rep_alloc_query rm = {
        .size = as.size, .requested_size = as.requested_size, .alignment = as.alignment, .flags = as.flags,
        .segment_id = as.segment_id, .supported_segment_set = as.supported_segment_set,
        .preferred_segment = as.preferred_segment, .lock_count = x->c->objs[slot].lock_count,
        .resident = rs.resident, .moves = as.moves,
    };
    vmmd_put_rep_alloc_query(x->out, &rm);
    x->n = VMMD_REP_ALLOC_QUERY_SIZE;
    return st;
}

static vidmm_status h_gpuva_reserve(struct req *x)
{
    const struct vmmd_req_gpuva_reserve *m = &x->r->m.gpuva_reserve;
    if (m->reserved)
        return VIDMM_E_INVALID_ARG;
    struct vmmd_rep_gpuva_reserve rm = { 0 };
    vidmm_status st = vidmm_gpuva_reserve(x->a, x->c->process, m->base, m->min, m->max, m->size, m->mode, &rm.va);
    vmmd_put_rep_gpuva_reserve(x->out, &rm);
    x->n = VMMD_REP_GPUVA_RESERVE_SIZE;
    return st;
}

static vidmm_status h_gpuva_map(struct req *x)
{
    const struct vmmd_req_gpuva_map *m = &x->r->m.gpuva_map;
    uint32_t slot = req_find(x, m->allocation, OBJ_ALLOC);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    if (m->reserved)
        return VIDMM_E_INVALID_ARG;
    struct vmmd_rep_gpuva_map rm = { 0 };
    vidmm_status st = vidmm_gpuva_map(x->a, x->c->process, m->base, m->min, m->max, x->c->objs[slot].lib, m->offset,
                                      m->size, m->protection, m->driver_protection, &rm.va);
    vmmd_put_rep_gpuva_map(x->out, &rm);
    x->n = VMMD_REP_GPUVA_MAP_SIZE;
    return st;
}

static vidmm_status h_gpuva_free(struct req *x)
{
    return vidmm_gpuva_free(x->a, x->c->process, x->r->m.gpuva_free.va, x->r->m.gpuva_free.size);
}

static vidmm_status h_adapter_info(struct req *x)
{
    struct vidmm_adapter_info ai;
    memset(&ai, 0, sizeof ai);
    vidmm_status st = vidmm_adapter_query_info(x->a, &ai);
    struct vmmd_rep_adapter_info rm = {
        .wddm_version = ai.wddm_version, .memory_management_caps = ai.memory_management_caps,
        .physical_adapter_flags = ai.physical_adapter_flags, .segment_count = ai.segment_count,
        .aperture_segment_id = ai.aperture_segment_id, .agp_segment_id = ai.agp_segment_id,
        .paging_buffer_segment_id = ai.paging_buffer_segment_id, .paging_buffer_size = ai.paging_buffer_size,
        .aperture_segment_commit_limit = ai.aperture_segment_commit_limit, .live_allocations = ai.live_allocations,
        .paging_buffers_submitted = ai.paging_buffers_submitted, .paging_restarts = ai.paging_restarts,
        .last_fence_submitted = ai.last_fence_submitted, .last_fence_completed = ai.last_fence_completed,
    };
    for (int i = 0; i < 17; i++) {
        rm.paging_ops[i] = ai.paging_ops[i];
        rm.paging_bytes[i] = ai.paging_bytes[i];
    }
    vmmd_put_rep_adapter_info(x->out, &rm);
    x->n = VMMD_REP_ADAPTER_INFO_SIZE;
    return st;
}

static vidmm_status h_segment_query(struct req *x)
{
    const struct vmmd_req_segment_query *m = &x->r->m.segment_query;
    struct vidmm_segment_info si;
    memset(&si, 0, sizeof si);
    if (m->reserved)
        return VIDMM_E_INVALID_ARG;
    vidmm_status st = vidmm_segment_query(x->a, m->segment_id, &si);
    struct vmmd_rep_segment_query rm = {
        .id = si.id, .kind = (uint32_t)si.kind, .flags = si.flags, .page_size = si.page_size,
        .base_address = si.base_address, .size = si.size, .commit_limit = si.commit_limit,
        .committed = si.committed, .free_bytes = si.free_bytes, .largest_free = si.largest_free,
        .allocations = si.allocations, .cpu_visible = (uint32_t)si.cpu_visible,
        .cpu_host_aperture = (uint32_t)si.cpu_host_aperture, .host_aperture_pages = si.host_aperture_pages,
        .host_aperture_free = si.host_aperture_free,
    };
    vmmd_put_rep_segment_query(x->out, &rm);
    x->n = VMMD_REP_SEGMENT_QUERY_SIZE;
    return st;
}

static vidmm_status h_alloc_set_priority(struct req *x)
{
    const struct vmmd_req_alloc_set_priority *m = &x->r->m.alloc_set_priority;
    uint32_t slot = req_find(x, m->allocation, OBJ_ALLOC);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    if (m->reserved)
        return VIDMM_E_INVALID_ARG;
    return vidmm_allocation_set_priority(x->a, x->c->objs[slot].lib, m->priority);
}

static vidmm_status h_offer(struct req *x)
{
    const struct vmmd_req_offer *m = &x->r->m.offer;
    uint32_t ds = req_find(x, m->device, OBJ_DEVICE);
    if (!ds)
        return VIDMM_E_INVALID_HANDLE;
    vidmm_handle stackbuf[64], *list = NULL;
    vidmm_status st = list_get(x, stackbuf, 64, &list);
    if (st >= 0)
        st = vidmm_offer(x->a, x->c->objs[ds].lib, m->count ? list : NULL, m->count, m->priority);
    if (list != stackbuf)
        free(list);
    return st;
}

static vidmm_status h_reclaim(struct req *x)
{
    /* Variable reply: u64 paging fence, count x u32 results (zeros on
     * failure, as every reply's fields). */
    const struct vmmd_req_reclaim *m = &x->r->m.reclaim;
    uint32_t qs = req_find(x, m->paging_queue, OBJ_QUEUE);
    vidmm_handle stackbuf[64], *list = stackbuf;
    uint8_t *rep = malloc(VMMD_REP_RECLAIM_SIZE + 4 * (size_t)m->count);
    uint32_t *results = malloc(sizeof *results * (m->count ? m->count : 1));
    struct vmmd_rep_reclaim rm = { 0 };
    vidmm_status st;
    if (!rep || !results)
        st = VIDMM_E_NO_HOST_MEMORY;
    else if (!qs)
        st = VIDMM_E_INVALID_HANDLE;
    else if (m->reserved)
        st = VIDMM_E_INVALID_ARG;
    else
        st = list_get(x, stackbuf, 64, &list);
    if (st >= 0) {
        memset(results, 0, sizeof *results * m->count);
        st = vidmm_reclaim(x->a, x->c->objs[qs].lib, m->count ? list : NULL, m->count, results,
                           &rm.paging_fence_value);
    }
    if (list != stackbuf)
        free(list);
    if (rep) {
        if (st < 0)
            rm.paging_fence_value = 0;
        vmmd_put_rep_reclaim(rep, &rm);
        for (uint32_t i = 0; i < m->count; i++)
            vmmd_put32(rep + VMMD_REP_RECLAIM_SIZE + 4 * (size_t)i, results && st >= 0 ? results[i] : 0);
    }
    free(results);
    reply(x->c, x->r->h.opcode, x->r->h.request_id, st, rep, rep ? VMMD_REP_RECLAIM_SIZE + 4 * (size_t)m->count : 0,
          -1);
    free(rep);
    x->answered = 1;
    return st;
}

static vidmm_status h_change_reservation(struct req *x)
{
    const struct vmmd_req_change_reservation *m = &x->r->m.change_reservation;
    if (m->group > 1 || m->reserved)
        return VIDMM_E_INVALID_ARG;
    return vidmm_change_video_memory_reservation(x->a, x->c->process, (enum vidmm_segment_group)m->group, m->bytes);
}

static vidmm_status h_process_set_budget(struct req *x)
{
    const struct vmmd_req_process_set_budget *m = &x->r->m.process_set_budget;
    if (m->group > 1 || m->reserved)
        return VIDMM_E_INVALID_ARG;
    if (!x->s->cfg.allow_set_budget)   /* the OS's call: only a daemon started for tests serves it */
        return VIDMM_E_NOT_SUPPORTED;
    return vidmm_process_set_budget(x->a, x->c->process, (enum vidmm_segment_group)m->group, m->budget);
}

static vidmm_status h_trim_register(struct req *x)
{
    const struct vmmd_req_trim_register *m = &x->r->m.trim_register;
    uint32_t slot = req_find(x, m->device, OBJ_DEVICE);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    if (m->enable > 1 || m->reserved)
        return VIDMM_E_INVALID_ARG;
    return vidmm_register_trim_notification(x->a, x->c->objs[slot].lib, m->enable ? on_trim : NULL,
                                            m->enable ? x->c : NULL);
}

/* One GPUVA_UPDATE operation from the wire: only a MAP names an
 * allocation (translated to the library's handle); elsewhere the field
 * is 0. */
static vidmm_status gpuva_op_get(const struct req *x, const uint8_t *p, struct vidmm_gpuva_update_op *o)
{
    struct vmmd_rec_gpuva_op w;
    vmmd_get_rec_gpuva_op(p, &w);
    memset(o, 0, sizeof *o);
    o->type = w.type;
    o->protection = w.protection;
    o->va = w.va;
    o->size = w.size;
    o->offset = w.offset;
    o->driver_protection = w.driver_protection;
    o->unmap_mode = w.unmap_mode;
    o->reserved = w.reserved;
    o->source = w.source;
    if (o->type == VIDMM_GPUVA_UPDATE_MAP) {
        uint32_t as = req_find(x, w.allocation, OBJ_ALLOC);
        if (!as)
            return VIDMM_E_INVALID_HANDLE;
        o->allocation = x->c->objs[as].lib;
    } else if (w.allocation) {
        return VIDMM_E_INVALID_ARG;
    }
    return VIDMM_OK;
}

static vidmm_status h_gpuva_update(struct req *x)
{
    const struct vmmd_req_gpuva_update *m = &x->r->m.gpuva_update;
    if (m->reserved)
        return VIDMM_E_INVALID_ARG;
    struct vidmm_gpuva_update_op *ops = malloc(sizeof *ops * (m->count ? m->count : 1));
    if (!ops)
        return VIDMM_E_NO_HOST_MEMORY;
    vidmm_status st = VIDMM_OK;
    for (uint32_t i = 0; i < m->count && st >= 0; i++)
        st = gpuva_op_get(x, x->r->list + (size_t)i * VMMD_GPUVA_OP_SIZE, &ops[i]);
    if (st >= 0)
        st = vidmm_gpuva_update(x->a, x->c->process, m->count ? ops : NULL, m->count);
    free(ops);
    return st;
}

static vidmm_status h_context_create(struct req *x)
{
    const struct vmmd_req_context_create *m = &x->r->m.context_create;
    uint32_t slot = req_find(x, m->device, OBJ_DEVICE);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    struct vidmm_context_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.node = m->node;
    desc.mode = m->mode;
    desc.flags = m->flags;
    desc.reserved = m->reserved;
    vidmm_handle ctx = 0;
    vidmm_status st = vidmm_context_create(x->a, x->c->objs[slot].lib, &desc, &ctx);
    if (st < 0)
        return st;
    uint32_t cs = 0;
    vidmm_status ost = obj_add(x->s, x->c, OBJ_CONTEXT, ctx, slot, &cs);
    if (ost < 0) {
        vidmm_context_destroy(x->a, ctx);
        return ost;
    }
    put_handle(x, cs);
    return st;
}

static vidmm_status h_context_destroy(struct req *x)
{
    uint32_t slot = req_find(x, x->r->m.context_destroy.context, OBJ_CONTEXT);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    vidmm_status st = vidmm_context_destroy(x->a, x->c->objs[slot].lib);
    if (st >= 0)
        obj_free(x->c, slot);
    return st;
}

static vidmm_status h_submit_virtual(struct req *x)
{
    /* The command buffer is already in the process's GPU address space
     * (an allocation the client filled through LOCK): only its address
     * and size travel. */
    const struct vmmd_req_submit_virtual *m = &x->r->m.submit_virtual;
    uint32_t slot = req_find(x, m->context, OBJ_CONTEXT);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    if (m->reserved)
        return VIDMM_E_INVALID_ARG;
    struct vmmd_rep_submit_virtual rm = { 0 };
    vidmm_status st = vidmm_submit_virtual(x->a, x->c->objs[slot].lib, m->gpu_va, m->size, &rm.fence);
    if (st >= 0)
        x->s->st.submissions++;
    vmmd_put_rep_submit_virtual(x->out, &rm);
    x->n = VMMD_REP_SUBMIT_VIRTUAL_SIZE;
    return st;
}

static vidmm_status h_context_fence(struct req *x)
{
    uint32_t slot = req_find(x, x->r->m.context_fence.context, OBJ_CONTEXT);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    struct vmmd_rep_context_fence rm = { 0, 0 };
    vidmm_status st = vidmm_context_fence(x->a, x->c->objs[slot].lib, &rm.submitted, &rm.completed);
    vmmd_put_rep_context_fence(x->out, &rm);
    x->n = VMMD_REP_CONTEXT_FENCE_SIZE;
    return st;
}

static vidmm_status h_context_wait(struct req *x)
{
    /* As vidmm_context_wait, without blocking the loop: parked like a
     * paging-queue wait when the fence has not passed. */
    const struct vmmd_req_context_wait *m = &x->r->m.context_wait;
    uint64_t sub = 0, done = 0;
    uint32_t slot = req_find(x, m->context, OBJ_CONTEXT);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    vidmm_status st = vidmm_context_fence(x->a, x->c->objs[slot].lib, &sub, &done);
    if (st < 0)
        return st;
    if (m->value > sub)
        return VIDMM_E_INVALID_ARG;   /* never submitted: it would never pass */
    if (done < m->value) {
        if (m->timeout_ns == 0)
            return VIDMM_E_TIMEOUT;
        park_wait(x, x->c->objs[slot].lib, m->value, m->timeout_ns);
    }
    return VIDMM_OK;
}

static vidmm_status h_share_export(struct req *x)
{
    uint32_t slot = req_find(x, x->r->m.share_export.allocation, OBJ_ALLOC);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    return do_export(x->s, x->c, slot, &x->fd);
}

static vidmm_status h_share_open(struct req *x)
{
    struct vmmd_rep_share_open rm = { 0 };
    vidmm_status st = do_open(x->s, x->c, x->in_fd, &rm.allocation);
    vmmd_put_rep_share_open(x->out, &rm);
    x->n = VMMD_REP_SHARE_OPEN_SIZE;
    return st;
}

static vidmm_status h_share_query(struct req *x)
{
    struct vidmm_share_info si;
    memset(&si, 0, sizeof si);
    uint32_t slot = req_find(x, x->r->m.share_query.allocation, OBJ_ALLOC);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    vidmm_status st = vidmm_share_query(x->a, x->c->objs[slot].lib, &si);
    struct vmmd_rep_share_query rm = { si.holders, si.creator_holds, si.is_creator, 0 };
    vmmd_put_rep_share_query(x->out, &rm);
    x->n = VMMD_REP_SHARE_QUERY_SIZE;
    return st;
}

static vidmm_status h_debug_check(struct req *x)
{
    struct vmmd_server *s = x->s;
    char report[2048] = "";
    int v = vidmm_adapter_check(x->a, report, sizeof report);
    struct vidmm_adapter_info ai;
    memset(&ai, 0, sizeof ai);
    vidmm_adapter_query_info(x->a, &ai);
    LOG(s, 1, "check (asked by client %u): %d violations, %zu clients, %llu live allocations%s%s\n", x->c->id, v,
        s->nclients, (unsigned long long)ai.live_allocations, v ? "\n" : "", v ? report : "");
    struct vmmd_rep_debug_check rm = { (uint32_t)v, (uint32_t)s->nclients, ai.live_allocations };
    vmmd_put_rep_debug_check(x->out, &rm);
    x->n = VMMD_REP_DEBUG_CHECK_SIZE;
    return VIDMM_OK;
}

/* ---- administration (docs/PROTOCOL.md "Administration") ------------------ */

static void put_name16(char *p, const char *name)
{
    memset(p, 0, 16);
    size_t k = strlen(name);
    memcpy(p, name, k < 15 ? k : 15);
}

/* Only the daemon's own uid or root may ask; anyone else gets
 * VMMD_E_ACCESS_DENIED and the connection goes on. */
static int admin_allowed(struct req *x)
{
    struct vmmd_client *c = x->c;
    if (c->uid == 0 || c->uid == x->s->cfg.admin_uid)
        return 1;
    LOG(x->s, 1, "client %u (pid %ld uid %ld): %s refused: not the daemon's uid or root\n", c->id, (long)c->pid,
        (long)c->uid, vmmd_op_name(x->r->h.opcode));
    return 0;
}

static void admin_segment_record(struct vidmm_adapter *a, uint32_t id, uint8_t *p)
{
    struct vidmm_segment_info si;
    memset(&si, 0, sizeof si);
    vidmm_segment_query(a, id, &si);
    char region[16] = "";
    vidmm_segment_region_name(a, id, region, sizeof region);
    struct vmmd_rec_admin_segment m = {
        .id = id, .kind = (uint32_t)si.kind, .size = si.size, .committed = si.committed,
        .free_bytes = si.free_bytes, .commit_limit = si.commit_limit, .flags = si.flags, .page_size = si.page_size,
    };
    put_name16(m.name, region);
    vmmd_put_rec_admin_segment(p, &m);
}

static vidmm_status h_admin_adapter(struct req *x)
{
    struct vmmd_server *s = x->s;
    if (!admin_allowed(x))
        return (vidmm_status)VMMD_E_ACCESS_DENIED;
    struct vidmm_adapter_info ai;
    struct vidmm_residency_stats rs;
    memset(&ai, 0, sizeof ai);
    memset(&rs, 0, sizeof rs);
    vidmm_adapter_query_info(x->a, &ai);
    vidmm_residency_get_stats(x->a, &rs);
    int64_t blocks = 0, bytes = 0;
    if (s->cfg.host_usage)
        s->cfg.host_usage(s->cfg.host_usage_user, &blocks, &bytes);
    uint32_t nseg = ai.segment_count < VMMD_ADMIN_MAX_SEGMENTS ? ai.segment_count : VMMD_ADMIN_MAX_SEGMENTS;
    uint8_t out[VMMD_ADMIN_ADAPTER_FIXED + VMMD_ADMIN_MAX_SEGMENTS * VMMD_ADMIN_SEGMENT_SIZE];
    memset(out, 0, sizeof out);
    struct vmmd_rep_admin_adapter m = {
        .daemon_pid = (uint32_t)getpid(), .daemon_uid = (uint32_t)geteuid(), .clients = (uint32_t)s->nclients,
        .segments = nseg, .connections = s->st.connections, .requests = s->st.requests,
        .protocol_errors = s->st.protocol_errors, .locks = s->st.locks, .host_blocks = blocks,
        .host_bytes = bytes, .live_allocations = ai.live_allocations, .make_resident_calls = rs.make_resident_calls,
        .evictions = rs.evictions, .restores = rs.restores, .bytes_evicted = rs.bytes_evicted,
        .bytes_restored = rs.bytes_restored, .paging_buffers_submitted = ai.paging_buffers_submitted,
        .uptime_ns = now_ns() - s->start_ns, .max_alloc_bytes = s->cfg.max_alloc_bytes,
        .max_locked_bytes = s->cfg.max_locked_bytes, .max_handles = s->cfg.max_objects,
        .max_requests = s->cfg.max_requests, .max_connections_per_uid = s->cfg.max_connections_per_uid,
        .wddm_version = ai.wddm_version, .quota_refusals = s->st.quota_refusals,
    };
    vmmd_put_rep_admin_adapter(out, &m);
    for (uint32_t id = 0; id < nseg; id++)
        admin_segment_record(x->a, id, out + VMMD_ADMIN_ADAPTER_FIXED + (size_t)id * VMMD_ADMIN_SEGMENT_SIZE);
    reply(x->c, x->r->h.opcode, x->r->h.request_id, VIDMM_OK, out,
          VMMD_ADMIN_ADAPTER_FIXED + (size_t)nseg * VMMD_ADMIN_SEGMENT_SIZE, -1);
    x->answered = 1;
    return VIDMM_OK;
}

static void admin_client_record(struct vmmd_server *s, const struct vmmd_client *asker, const struct vmmd_client *c,
                                uint8_t *p)
{
    struct vidmm_adapter *a = s->cfg.adapter;
    struct vmmd_rec_admin_client m = {
        .connection = c->id, .pid = (uint32_t)c->pid, .uid = (uint32_t)c->uid, .gid = (uint32_t)c->gid,
        .process = c->process, .allocated_bytes = c->alloc_bytes, .allocations = c->nallocs, .handles = c->live,
        .locked_bytes = c->locked_bytes, .evictions = c->retired_evictions, .restores = c->retired_restores,
        .requests = c->requests, .in_flight = (uint32_t)(c->nwaits + c->out_count),
        .flags = (c->refused < 0 ? 1u : 0u) | (c->closing ? 2u : 0u) | (c == asker ? 4u : 0u),
    };
    put_name16(m.comm, c->comm);
    if (c->process) {
        struct vidmm_video_memory_info vi[2];
        memset(vi, 0, sizeof vi);
        for (int g = 0; g < 2; g++)
            vidmm_query_video_memory_info(a, c->process, (enum vidmm_segment_group)g, &vi[g]);
        m.local_budget = vi[0].budget;
        m.local_usage = vi[0].current_usage;
        m.nonlocal_budget = vi[1].budget;
        m.nonlocal_usage = vi[1].current_usage;
    }
    for (uint32_t i = 1; i < c->nobj; i++)
        if (c->objs[i].type == OBJ_ALLOC) {
            struct vidmm_residency_state rs;
            memset(&rs, 0, sizeof rs);
            if (vidmm_allocation_residency(a, c->objs[i].lib, &rs) >= 0) {
                m.evictions += rs.evictions;
                m.restores += rs.restores;
            }
        }
    vmmd_put_rec_admin_client(p, &m);
}

static vidmm_status h_admin_clients(struct req *x)
{
    struct vmmd_server *s = x->s;
    const struct vmmd_req_admin_clients *m = &x->r->m.admin_clients;
    if (!admin_allowed(x))
        return (vidmm_status)VMMD_E_ACCESS_DENIED;
    if (m->reserved)
        return VIDMM_E_INVALID_ARG;
    /* The records from index first on (connection order), as many as fit. */
    size_t first = m->first, total = s->nclients;
    size_t count = first < total ? total - first : 0;
    if (count > VMMD_ADMIN_CLIENTS_PER_REPLY)
        count = VMMD_ADMIN_CLIENTS_PER_REPLY;
    size_t n = VMMD_REP_ADMIN_CLIENTS_SIZE + count * VMMD_ADMIN_CLIENT_SIZE;
    uint8_t *out = malloc(n);
    if (!out)
        return VIDMM_E_NO_HOST_MEMORY;
    struct vmmd_rep_admin_clients rm = { (uint32_t)total, (uint32_t)count };
    vmmd_put_rep_admin_clients(out, &rm);
    for (size_t i = 0; i < count; i++)
        admin_client_record(s, x->c, s->clients[first + i], out + VMMD_REP_ADMIN_CLIENTS_SIZE + i * VMMD_ADMIN_CLIENT_SIZE);
    reply(x->c, x->r->h.opcode, x->r->h.request_id, VIDMM_OK, out, n, -1);
    free(out);
    x->answered = 1;
    return VIDMM_OK;
}

/* ---- dispatch ------------------------------------------------------------- */

/* Every request of proto.def: its fixed payload size (the decoder has
 * checked it already; handle() checks again so that a handler can never
 * read past what arrived) and its handler h_NAME. */
struct req_handler {
    uint32_t min_size;
    vidmm_status (*fn)(struct req *x);
};

static const struct req_handler handlers[VMMD_OP_LAST] = {
#define VMMD_REQ(OP, name, fields) [VMMD_OP_##OP] = { VMMD_REQ_##OP##_SIZE, h_##name },
#define VMMD_REQ0(OP, name) [VMMD_OP_##OP] = { 0, h_##name },
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
        reply(c, op, r->h.request_id, c->refused, NULL, 0, -1);
        c->closing = 1;
        return;
    }
    struct req x = { .s = s, .c = c, .a = s->cfg.adapter, .r = r, .in_fd = in_fd, .n = 0, .fd = -1, .answered = 0 };
    const struct req_handler *h = op < VMMD_OP_LAST ? &handlers[op] : NULL;
    vidmm_status st = VIDMM_E_NOT_SUPPORTED;
    if (h && h->fn)
        st = r->h.length >= h->min_size ? h->fn(&x) : VIDMM_E_INVALID_ARG;
    if (!x.answered)
        reply(c, op, r->h.request_id, st, x.out, x.n, x.fd);
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
            reply(c, r.h.opcode, r.h.request_id, (vidmm_status)VMMD_E_QUOTA_EXCEEDED, NULL, 0, -1);
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
    reply(c, framing && d != VMMD_DECODE_BAD_VERSION && d != VMMD_DECODE_BAD_LENGTH ? 0x7fff : r.h.opcode,
          framing && d != VMMD_DECODE_BAD_VERSION && d != VMMD_DECODE_BAD_LENGTH ? 0 : r.h.request_id, st, NULL, 0, -1);
    if (framing)
        c->closing = 1;
    return c->closing ? -1 : 0;
}
