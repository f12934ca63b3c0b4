/*
 * daemon/server.c - vidmmd's clients, their handle tables and the
 * request handlers (docs/DAEMON.md).
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

/* ---- request handlers ----------------------------------------------------- */

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

static void park_wait(struct vmmd_server *s, struct vmmd_client *c, const struct vmmd_request *r, vidmm_handle q)
{
    /* r: QUEUE_WAIT or CONTEXT_WAIT (a = handle, b = value, c = timeout). */
    if (s->nwaits == s->wcap) {
        size_t ncap = s->wcap ? s->wcap * 2 : 16;
        struct wait *n = realloc(s->waits, ncap * sizeof *n);
        if (!n) {
            reply(c, r->h.opcode, r->h.request_id, VIDMM_E_NO_HOST_MEMORY, NULL, 0, -1);
            return;
        }
        s->waits = n;
        s->wcap = ncap;
    }
    uint64_t now = now_ns();
    struct wait *w = &s->waits[s->nwaits++];
    c->nwaits++;
    w->c = c;
    w->request_id = r->h.request_id;
    w->op = r->h.opcode;
    w->queue = q;
    w->value = r->b;
    w->deadline_ns = r->c == UINT64_MAX || r->c > UINT64_MAX - now ? UINT64_MAX : now + r->c;
    s->st.waits_parked++;
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
            vmmd_put64(ev, obj_handle(c, i));
            vmmd_put32(ev + 8, flags);
            vmmd_put32(ev + 12, 0);
            vmmd_put64(ev + 16, bytes_to_trim);
            send_event(c, VMMD_EV_TRIM, ev, sizeof ev);
            mark_pending(c->srv, c);
            c->srv->st.trim_events++;
            return;
        }
}

/* The handles of an OFFER or RECLAIM list, translated into a buffer the
 * caller frees when it is not stackbuf. */
static vidmm_status list_get(const struct vmmd_client *c, const struct vmmd_request *r, vidmm_handle *stackbuf,
                             size_t stackn, vidmm_handle **out)
{
    vidmm_handle *list = r->u1 <= stackn ? stackbuf : malloc(sizeof *list * r->u1);
    *out = list;
    if (!list)
        return VIDMM_E_NO_HOST_MEMORY;
    return translate_list(c, r->list, r->u1, list);
}

/* ---- administration (docs/PROTOCOL.md "Administration") ------------------ */

static void put_name16(uint8_t *p, const char *name)
{
    memset(p, 0, 16);
    size_t k = strlen(name);
    memcpy(p, name, k < 15 ? k : 15);
}

static void admin_adapter(struct vmmd_server *s, struct vmmd_client *c, const struct vmmd_request *r)
{
    struct vidmm_adapter *a = s->cfg.adapter;
    struct vidmm_adapter_info ai;
    struct vidmm_residency_stats rs;
    memset(&ai, 0, sizeof ai);
    memset(&rs, 0, sizeof rs);
    vidmm_adapter_query_info(a, &ai);
    vidmm_residency_get_stats(a, &rs);
    int64_t blocks = 0, bytes = 0;
    if (s->cfg.host_usage)
        s->cfg.host_usage(s->cfg.host_usage_user, &blocks, &bytes);
    uint32_t nseg = ai.segment_count < VMMD_ADMIN_MAX_SEGMENTS ? ai.segment_count : VMMD_ADMIN_MAX_SEGMENTS;
    uint8_t out[VMMD_ADMIN_ADAPTER_FIXED + VMMD_ADMIN_MAX_SEGMENTS * VMMD_ADMIN_SEGMENT_SIZE];
    memset(out, 0, sizeof out);
    vmmd_put32(out, (uint32_t)getpid());
    vmmd_put32(out + 4, (uint32_t)geteuid());
    vmmd_put32(out + 8, (uint32_t)s->nclients);
    vmmd_put32(out + 12, nseg);
    vmmd_put64(out + 16, s->st.connections);
    vmmd_put64(out + 24, s->st.requests);
    vmmd_put64(out + 32, s->st.protocol_errors);
    vmmd_put64(out + 40, s->st.locks);
    vmmd_put64(out + 48, (uint64_t)blocks);
    vmmd_put64(out + 56, (uint64_t)bytes);
    vmmd_put64(out + 64, ai.live_allocations);
    vmmd_put64(out + 72, rs.make_resident_calls);
    vmmd_put64(out + 80, rs.evictions);
    vmmd_put64(out + 88, rs.restores);
    vmmd_put64(out + 96, rs.bytes_evicted);
    vmmd_put64(out + 104, rs.bytes_restored);
    vmmd_put64(out + 112, ai.paging_buffers_submitted);
    vmmd_put64(out + 120, now_ns() - s->start_ns);
    vmmd_put64(out + 128, s->cfg.max_alloc_bytes);
    vmmd_put64(out + 136, s->cfg.max_locked_bytes);
    vmmd_put32(out + 144, s->cfg.max_objects);
    vmmd_put32(out + 148, s->cfg.max_requests);
    vmmd_put32(out + 152, s->cfg.max_connections_per_uid);
    vmmd_put32(out + 156, ai.wddm_version);
    vmmd_put64(out + 160, s->st.quota_refusals);
    for (uint32_t id = 0; id < nseg; id++) {
        uint8_t *p = out + VMMD_ADMIN_ADAPTER_FIXED + (size_t)id * VMMD_ADMIN_SEGMENT_SIZE;
        struct vidmm_segment_info si;
        memset(&si, 0, sizeof si);
        vidmm_segment_query(a, id, &si);
        char region[16] = "";
        vidmm_segment_region_name(a, id, region, sizeof region);
        vmmd_put32(p, id);
        vmmd_put32(p + 4, (uint32_t)si.kind);
        vmmd_put64(p + 8, si.size);
        vmmd_put64(p + 16, si.committed);
        vmmd_put64(p + 24, si.free_bytes);
        vmmd_put64(p + 32, si.commit_limit);
        vmmd_put32(p + 40, si.flags);
        vmmd_put32(p + 44, si.page_size);
        put_name16(p + 48, region);
    }
    reply(c, r->h.opcode, r->h.request_id, VIDMM_OK, out,
          VMMD_ADMIN_ADAPTER_FIXED + (size_t)nseg * VMMD_ADMIN_SEGMENT_SIZE, -1);
}

static void admin_client_record(struct vmmd_server *s, const struct vmmd_client *asker, const struct vmmd_client *c,
                                uint8_t *p)
{
    struct vidmm_adapter *a = s->cfg.adapter;
    memset(p, 0, VMMD_ADMIN_CLIENT_SIZE);
    vmmd_put32(p, c->id);
    vmmd_put32(p + 4, (uint32_t)c->pid);
    vmmd_put32(p + 8, (uint32_t)c->uid);
    vmmd_put32(p + 12, (uint32_t)c->gid);
    put_name16(p + 16, c->comm);
    vmmd_put64(p + 32, c->process);
    vmmd_put64(p + 40, c->alloc_bytes);
    vmmd_put32(p + 48, c->nallocs);
    vmmd_put32(p + 52, c->live);
    vmmd_put64(p + 56, c->locked_bytes);
    if (c->process) {
        for (int g = 0; g < 2; g++) {
            struct vidmm_video_memory_info vi;
            memset(&vi, 0, sizeof vi);
            vidmm_query_video_memory_info(a, c->process, (enum vidmm_segment_group)g, &vi);
            vmmd_put64(p + 64 + 16 * g, vi.budget);
            vmmd_put64(p + 72 + 16 * g, vi.current_usage);
        }
    }
    uint64_t ev = c->retired_evictions, rt = c->retired_restores;
    for (uint32_t i = 1; i < c->nobj; i++)
        if (c->objs[i].type == OBJ_ALLOC) {
            struct vidmm_residency_state rs;
            memset(&rs, 0, sizeof rs);
            if (vidmm_allocation_residency(a, c->objs[i].lib, &rs) >= 0) {
                ev += rs.evictions;
                rt += rs.restores;
            }
        }
    vmmd_put64(p + 96, ev);
    vmmd_put64(p + 104, rt);
    vmmd_put64(p + 112, c->requests);
    vmmd_put32(p + 120, (uint32_t)(c->nwaits + c->out_count));
    vmmd_put32(p + 124, (c->refused < 0 ? 1u : 0u) | (c->closing ? 2u : 0u) | (c == asker ? 4u : 0u));
}

static void admin(struct vmmd_server *s, struct vmmd_client *c, const struct vmmd_request *r)
{
    if (c->uid != 0 && c->uid != s->cfg.admin_uid) {
        LOG(s, 1, "client %u (pid %ld uid %ld): %s refused: not the daemon's uid or root\n", c->id, (long)c->pid,
            (long)c->uid, vmmd_op_name(r->h.opcode));
        reply(c, r->h.opcode, r->h.request_id, (vidmm_status)VMMD_E_ACCESS_DENIED, NULL, 0, -1);
        return;
    }
    if (r->h.opcode == VMMD_OP_ADMIN_ADAPTER) {
        admin_adapter(s, c, r);
        return;
    }
    if (r->u1) {
        reply(c, r->h.opcode, r->h.request_id, VIDMM_E_INVALID_ARG, NULL, 0, -1);
        return;
    }
    /* The records from index u0 on (connection order), as many as fit. */
    size_t first = r->u0, total = s->nclients;
    size_t count = first < total ? total - first : 0;
    if (count > VMMD_ADMIN_CLIENTS_PER_REPLY)
        count = VMMD_ADMIN_CLIENTS_PER_REPLY;
    size_t n = 8 + count * VMMD_ADMIN_CLIENT_SIZE;
    uint8_t *out = malloc(n);
    if (!out) {
        reply(c, r->h.opcode, r->h.request_id, VIDMM_E_NO_HOST_MEMORY, NULL, 0, -1);
        return;
    }
    vmmd_put32(out, (uint32_t)total);
    vmmd_put32(out + 4, (uint32_t)count);
    for (size_t i = 0; i < count; i++)
        admin_client_record(s, c, s->clients[first + i], out + 8 + i * VMMD_ADMIN_CLIENT_SIZE);
    reply(c, r->h.opcode, r->h.request_id, VIDMM_OK, out, n, -1);
    free(out);
}

static void handle(struct vmmd_server *s, struct vmmd_client *c, const struct vmmd_request *r, int in_fd)
{
    struct vidmm_adapter *a = s->cfg.adapter;
    uint8_t out[VMMD_ADAPTER_INFO_SIZE];
    size_t n = 0;
    int fd = -1;
    vidmm_status st = VIDMM_OK;
    uint32_t slot;
    uint16_t op = r->h.opcode;

    if (c->refused < 0) {
        reply(c, op, r->h.request_id, c->refused, NULL, 0, -1);
        c->closing = 1;
        return;
    }
    switch (op) {
    case VMMD_OP_HELLO:
        vmmd_put32(out, (uint32_t)c->pid);
        vmmd_put32(out + 4, (uint32_t)c->uid);
        vmmd_put32(out + 8, c->id);
        vmmd_put32(out + 12, 0);
        n = 16;
        break;
    case VMMD_OP_ECHO:
        /* The reply carries an 8-byte status before the bytes: what does
         * not fit is refused, never cut (docs/PROTOCOL.md). */
        if (r->data_size > VMMD_MAX_PAYLOAD - 8)
            reply(c, op, r->h.request_id, VIDMM_E_TOO_LARGE, NULL, 0, -1);
        else
            reply(c, op, r->h.request_id, VIDMM_OK, r->data, r->data_size, -1);
        return;
    case VMMD_OP_DEVICE_CREATE: {
        vidmm_handle d = 0;
        st = vidmm_device_create(a, c->process, &d);
        if (st >= 0) {
            vidmm_status ost = obj_add(s, c, OBJ_DEVICE, d, 0, &slot);
            if (ost < 0) {
                vidmm_device_destroy(a, d);
                st = ost;
                break;
            }
            vmmd_put64(out, obj_handle(c, slot));
            n = 8;
        }
        break;
    }
    case VMMD_OP_DEVICE_DESTROY:
        if (!(slot = obj_find(c, r->a, OBJ_DEVICE))) {
            st = VIDMM_E_INVALID_HANDLE;
            break;
        }
        st = vidmm_device_destroy(a, c->objs[slot].lib);
        if (st >= 0) {
            /* The library destroyed the device's queues and contexts with it
             * (and its trim registration). */
            for (uint32_t i = 1; i < c->nobj; i++)
                if ((c->objs[i].type == OBJ_QUEUE || c->objs[i].type == OBJ_CONTEXT) && c->objs[i].parent == slot)
                    obj_free(c, i);
            obj_free(c, slot);
        }
        break;
    case VMMD_OP_QUEUE_CREATE: {
        if (!(slot = obj_find(c, r->a, OBJ_DEVICE))) {
            st = VIDMM_E_INVALID_HANDLE;
            break;
        }
        if (r->u1) {
            st = VIDMM_E_INVALID_ARG;
            break;
        }
        vidmm_handle q = 0;
        st = vidmm_paging_queue_create(a, c->objs[slot].lib, (int)(int32_t)r->u0, &q);
        if (st >= 0) {
            uint32_t qs = 0;
            vidmm_status ost = obj_add(s, c, OBJ_QUEUE, q, slot, &qs);
            if (ost < 0) {
                vidmm_paging_queue_destroy(a, q);
                st = ost;
                break;
            }
            vmmd_put64(out, obj_handle(c, qs));
            n = 8;
        }
        break;
    }
    case VMMD_OP_QUEUE_DESTROY:
        if (!(slot = obj_find(c, r->a, OBJ_QUEUE))) {
            st = VIDMM_E_INVALID_HANDLE;
            break;
        }
        st = vidmm_paging_queue_destroy(a, c->objs[slot].lib);
        if (st >= 0)
            obj_free(c, slot);
        break;
    case VMMD_OP_QUEUE_FENCE: {
        if (!(slot = obj_find(c, r->a, OBJ_QUEUE))) {
            st = VIDMM_E_INVALID_HANDLE;
            break;
        }
        uint64_t v = 0;
        st = vidmm_paging_queue_fence(a, c->objs[slot].lib, &v);
        vmmd_put64(out, v);
        n = 8;
        break;
    }
    case VMMD_OP_QUEUE_WAIT: {
        if (!(slot = obj_find(c, r->a, OBJ_QUEUE))) {
            st = VIDMM_E_INVALID_HANDLE;
            break;
        }
        uint64_t v = 0;
        st = vidmm_paging_queue_fence(a, c->objs[slot].lib, &v);
        if (st >= 0 && v < r->b) {
            if (r->c == 0) {
                st = VIDMM_E_TIMEOUT;
                break;
            }
            park_wait(s, c, r, c->objs[slot].lib);   /* answered by vmmd_server_poll_waits */
            return;
        }
        if (st > 0)
            st = VIDMM_OK;
        break;
    }
    case VMMD_OP_ALLOC_CREATE: {
        vidmm_handle dev = c->device;
        if (r->a) {
            if (!(slot = obj_find(c, r->a, OBJ_DEVICE))) {
                st = VIDMM_E_INVALID_HANDLE;
                break;
            }
            dev = c->objs[slot].lib;
        }
        vidmm_handle h = 0;
        st = vidmm_device_allocation_create(a, dev, r->data_size ? r->data : NULL, r->data_size, r->u0, &h);
        if (st >= 0) {
            /* The size is the driver's answer: known only once created. */
            struct vidmm_allocation_state as;
            memset(&as, 0, sizeof as);
            vidmm_status qst = vidmm_allocation_query(a, h, &as);
            uint32_t aslot = 0;
            vidmm_status ast = qst;   /* st keeps the creation's own success status (VIDMM_PENDING) */
            if (qst >= 0 && as.size > s->cfg.max_alloc_bytes - c->alloc_bytes) {
                s->st.quota_refusals++;
                LOG(s, 1, "client %u (pid %ld): allocation of %llu bytes over its limit (%llu of %llu alive)\n",
                    c->id, (long)c->pid, (unsigned long long)as.size, (unsigned long long)c->alloc_bytes,
                    (unsigned long long)s->cfg.max_alloc_bytes);
                ast = (vidmm_status)VMMD_E_QUOTA_EXCEEDED;
            } else if (qst >= 0) {
                ast = obj_add(s, c, OBJ_ALLOC, h, 0, &aslot);
            }
            if (ast < 0) {
                vidmm_allocation_destroy(a, h);
                st = ast;
                break;
            }
            c->objs[aslot].size = as.size;
            c->alloc_bytes += as.size;
            c->nallocs++;
            vmmd_put64(out, obj_handle(c, aslot));
            n = 8;
        }
        break;
    }
    case VMMD_OP_ALLOC_DESTROY:
        if (!(slot = obj_find(c, r->a, OBJ_ALLOC))) {
            st = VIDMM_E_INVALID_HANDLE;
            break;
        }
        if (c->objs[slot].lock_count) {
            st = VIDMM_E_BUSY;   /* as the library: not while locked */
            break;
        }
        {
            struct vidmm_residency_state rs;
            memset(&rs, 0, sizeof rs);
            vidmm_allocation_residency(a, c->objs[slot].lib, &rs);
            st = vidmm_allocation_destroy(a, c->objs[slot].lib);
            if (st >= 0) {
                c->retired_evictions += rs.evictions;
                c->retired_restores += rs.restores;
                obj_free(c, slot);
            }
        }
        break;
    case VMMD_OP_MAKE_RESIDENT:
    case VMMD_OP_EVICT: {
        uint32_t ds = obj_find(c, r->a, OBJ_DEVICE);
        uint32_t qs = op == VMMD_OP_MAKE_RESIDENT ? obj_find(c, r->b, OBJ_QUEUE) : 1;
        if (!ds || !qs) {
            st = VIDMM_E_INVALID_HANDLE;
            break;
        }
        vidmm_handle stackbuf[64];
        vidmm_handle *list = r->u1 <= 64 ? stackbuf : malloc(sizeof *list * r->u1);
        if (!list) {
            st = VIDMM_E_NO_HOST_MEMORY;
            break;
        }
        st = translate_list(c, r->list, r->u1, list);
        if (st >= 0 && op == VMMD_OP_MAKE_RESIDENT) {
            struct vidmm_make_resident_args mr;
            memset(&mr, 0, sizeof mr);
            mr.paging_queue = c->objs[qs].lib;
            mr.allocations = r->u1 ? list : NULL;
            mr.count = r->u1;
            mr.flags = r->u0;
            st = vidmm_make_resident(a, c->objs[ds].lib, &mr);
            vmmd_put64(out, mr.paging_fence_value);
            vmmd_put64(out + 8, mr.bytes_to_trim);
            n = 16;
        } else if (st >= 0) {
            struct vidmm_evict_args ev;
            memset(&ev, 0, sizeof ev);
            ev.allocations = r->u1 ? list : NULL;
            ev.count = r->u1;
            ev.flags = r->u0;
            st = vidmm_evict(a, c->objs[ds].lib, &ev);
            vmmd_put64(out, ev.bytes_to_trim);
            n = 8;
        }
        if (list != stackbuf)
            free(list);
        break;
    }
    case VMMD_OP_QUERY_VIDMEM: {
        struct vidmm_video_memory_info vi;
        memset(&vi, 0, sizeof vi);
        if (r->u0 > 1 || r->u1) {
            st = VIDMM_E_INVALID_ARG;
            break;
        }
        st = vidmm_query_video_memory_info(a, c->process, (enum vidmm_segment_group)r->u0, &vi);
        vmmd_put64(out, vi.budget);
        vmmd_put64(out + 8, vi.current_usage);
        vmmd_put64(out + 16, vi.current_reservation);
        vmmd_put64(out + 24, vi.available_for_reservation);
        n = 32;
        break;
    }
    case VMMD_OP_LOCK: {
        if (!(slot = obj_find(c, r->a, OBJ_ALLOC))) {
            st = VIDMM_E_INVALID_HANDLE;
            break;
        }
        uint64_t size = 0;
        st = do_lock(s, c, slot, &size, &fd);
        vmmd_put64(out, size);
        n = 8;
        break;
    }
    case VMMD_OP_UNLOCK:
        if (!(slot = obj_find(c, r->a, OBJ_ALLOC))) {
            st = VIDMM_E_INVALID_HANDLE;
            break;
        }
        st = do_unlock(s, c, slot);
        break;
    case VMMD_OP_ALLOC_QUERY: {
        if (!(slot = obj_find(c, r->a, OBJ_ALLOC))) {
            st = VIDMM_E_INVALID_HANDLE;
            break;
        }
        struct vidmm_allocation_state as;
        struct vidmm_residency_state rs;
        memset(&as, 0, sizeof as);
        memset(&rs, 0, sizeof rs);
        st = vidmm_allocation_query(a, c->objs[slot].lib, &as);
        if (st >= 0)
            st = vidmm_allocation_residency(a, c->objs[slot].lib, &rs);
        vmmd_put64(out, as.size);
        vmmd_put64(out + 8, as.requested_size);
        vmmd_put64(out + 16, as.alignment);
        vmmd_put32(out + 24, as.flags);
        vmmd_put32(out + 28, as.segment_id);
        vmmd_put32(out + 32, as.supported_segment_set);
        vmmd_put32(out + 36, as.preferred_segment);
        vmmd_put32(out + 40, c->objs[slot].lock_count);
        vmmd_put32(out + 44, rs.resident);
        vmmd_put64(out + 48, as.moves);
        n = 56;
        break;
    }
    case VMMD_OP_GPUVA_RESERVE: {
        uint64_t va = 0;
        if (r->u1) {
            st = VIDMM_E_INVALID_ARG;
            break;
        }
        st = vidmm_gpuva_reserve(a, c->process, r->a, r->b, r->c, r->d, r->u0, &va);
        vmmd_put64(out, va);
        n = 8;
        break;
    }
    case VMMD_OP_GPUVA_MAP: {
        uint64_t va = 0;
        if (!(slot = obj_find(c, r->d, OBJ_ALLOC))) {
            st = VIDMM_E_INVALID_HANDLE;
            break;
        }
        if (r->u1) {
            st = VIDMM_E_INVALID_ARG;
            break;
        }
        st = vidmm_gpuva_map(a, c->process, r->a, r->b, r->c, c->objs[slot].lib, r->e, r->f, r->u0, r->g, &va);
        vmmd_put64(out, va);
        n = 8;
        break;
    }
    case VMMD_OP_GPUVA_FREE:
        st = vidmm_gpuva_free(a, c->process, r->a, r->b);
        break;
    case VMMD_OP_ADAPTER_INFO: {
        struct vidmm_adapter_info ai;
        memset(&ai, 0, sizeof ai);
        st = vidmm_adapter_query_info(a, &ai);
        const uint32_t u[8] = { ai.wddm_version, ai.memory_management_caps, ai.physical_adapter_flags,
                                ai.segment_count, ai.aperture_segment_id, ai.agp_segment_id,
                                ai.paging_buffer_segment_id, ai.paging_buffer_size };
        for (int i = 0; i < 8; i++)
            vmmd_put32(out + 4 * i, u[i]);
        const uint64_t q[6] = { ai.aperture_segment_commit_limit, ai.live_allocations, ai.paging_buffers_submitted,
                                ai.paging_restarts, ai.last_fence_submitted, ai.last_fence_completed };
        for (int i = 0; i < 6; i++)
            vmmd_put64(out + 32 + 8 * i, q[i]);
        for (int i = 0; i < 17; i++) {
            vmmd_put64(out + 80 + 8 * i, ai.paging_ops[i]);
            vmmd_put64(out + 216 + 8 * i, ai.paging_bytes[i]);
        }
        n = VMMD_ADAPTER_INFO_SIZE;
        break;
    }
    case VMMD_OP_SEGMENT_QUERY: {
        struct vidmm_segment_info si;
        memset(&si, 0, sizeof si);
        if (r->u1) {
            st = VIDMM_E_INVALID_ARG;
            break;
        }
        st = vidmm_segment_query(a, r->u0, &si);
        vmmd_put32(out, si.id);
        vmmd_put32(out + 4, (uint32_t)si.kind);
        vmmd_put32(out + 8, si.flags);
        vmmd_put32(out + 12, si.page_size);
        const uint64_t q[7] = { si.base_address, si.size, si.commit_limit, si.committed,
                                si.free_bytes, si.largest_free, si.allocations };
        for (int i = 0; i < 7; i++)
            vmmd_put64(out + 16 + 8 * i, q[i]);
        vmmd_put32(out + 72, (uint32_t)si.cpu_visible);
        vmmd_put32(out + 76, (uint32_t)si.cpu_host_aperture);
        vmmd_put32(out + 80, si.host_aperture_pages);
        vmmd_put32(out + 84, si.host_aperture_free);
        n = VMMD_SEGMENT_INFO_SIZE;
        break;
    }
    case VMMD_OP_ALLOC_SET_PRIORITY:
        if (!(slot = obj_find(c, r->a, OBJ_ALLOC))) {
            st = VIDMM_E_INVALID_HANDLE;
            break;
        }
        if (r->u1) {
            st = VIDMM_E_INVALID_ARG;
            break;
        }
        st = vidmm_allocation_set_priority(a, c->objs[slot].lib, r->u0);
        break;
    case VMMD_OP_OFFER: {
        uint32_t ds = obj_find(c, r->a, OBJ_DEVICE);
        if (!ds) {
            st = VIDMM_E_INVALID_HANDLE;
            break;
        }
        vidmm_handle stackbuf[64], *list = NULL;
        st = list_get(c, r, stackbuf, 64, &list);
        if (st >= 0)
            st = vidmm_offer(a, c->objs[ds].lib, r->u1 ? list : NULL, r->u1, r->u0);
        if (list != stackbuf)
            free(list);
        break;
    }
    case VMMD_OP_RECLAIM: {
        /* Variable reply: u64 paging fence, count x u32 results (zeros
         * on failure, as every reply's fields). */
        uint32_t qs = obj_find(c, r->a, OBJ_QUEUE);
        vidmm_handle stackbuf[64], *list = stackbuf;
        uint8_t *rep = malloc(8 + 4 * (size_t)r->u1);
        uint32_t *results = malloc(sizeof *results * (r->u1 ? r->u1 : 1));
        uint64_t fence = 0;
        if (!rep || !results)
            st = VIDMM_E_NO_HOST_MEMORY;
        else if (!qs)
            st = VIDMM_E_INVALID_HANDLE;
        else if (r->u0)
            st = VIDMM_E_INVALID_ARG;
        else
            st = list_get(c, r, stackbuf, 64, &list);
        if (st >= 0) {
            memset(results, 0, sizeof *results * r->u1);
            st = vidmm_reclaim(a, c->objs[qs].lib, r->u1 ? list : NULL, r->u1, results, &fence);
        }
        if (list != stackbuf)
            free(list);
        if (rep) {
            vmmd_put64(rep, st >= 0 ? fence : 0);
            for (uint32_t i = 0; i < r->u1; i++)
                vmmd_put32(rep + 8 + 4 * (size_t)i, results && st >= 0 ? results[i] : 0);
        }
        free(results);
        reply(c, op, r->h.request_id, st, rep, rep ? 8 + 4 * (size_t)r->u1 : 0, -1);
        free(rep);
        return;
    }
    case VMMD_OP_CHANGE_RESERVATION:
    case VMMD_OP_PROCESS_SET_BUDGET:
        if (r->u0 > 1 || r->u1) {
            st = VIDMM_E_INVALID_ARG;
            break;
        }
        if (op == VMMD_OP_CHANGE_RESERVATION)
            st = vidmm_change_video_memory_reservation(a, c->process, (enum vidmm_segment_group)r->u0, r->a);
        else if (s->cfg.allow_set_budget)   /* the OS's call: only a daemon started for tests serves it */
            st = vidmm_process_set_budget(a, c->process, (enum vidmm_segment_group)r->u0, r->a);
        else
            st = VIDMM_E_NOT_SUPPORTED;
        break;
    case VMMD_OP_TRIM_REGISTER:
        if (!(slot = obj_find(c, r->a, OBJ_DEVICE))) {
            st = VIDMM_E_INVALID_HANDLE;
            break;
        }
        if (r->u0 > 1 || r->u1) {
            st = VIDMM_E_INVALID_ARG;
            break;
        }
        st = vidmm_register_trim_notification(a, c->objs[slot].lib, r->u0 ? on_trim : NULL, r->u0 ? c : NULL);
        break;
    case VMMD_OP_GPUVA_UPDATE: {
        if (r->u1) {
            st = VIDMM_E_INVALID_ARG;
            break;
        }
        struct vidmm_gpuva_update_op *ops = malloc(sizeof *ops * (r->u0 ? r->u0 : 1));
        if (!ops) {
            st = VIDMM_E_NO_HOST_MEMORY;
            break;
        }
        for (uint32_t i = 0; i < r->u0 && st >= 0; i++) {
            const uint8_t *p = r->list + (size_t)i * VMMD_GPUVA_OP_SIZE;
            struct vidmm_gpuva_update_op *o = &ops[i];
            memset(o, 0, sizeof *o);
            o->type = vmmd_get32(p);
            o->protection = vmmd_get32(p + 4);
            o->va = vmmd_get64(p + 8);
            o->size = vmmd_get64(p + 16);
            o->offset = vmmd_get64(p + 32);
            o->driver_protection = vmmd_get64(p + 40);
            o->unmap_mode = vmmd_get32(p + 48);
            o->reserved = vmmd_get32(p + 52);
            o->source = vmmd_get64(p + 56);
            /* Only a MAP names an allocation; elsewhere the field is 0. */
            uint64_t h = vmmd_get64(p + 24);
            if (o->type == VIDMM_GPUVA_UPDATE_MAP) {
                uint32_t as = obj_find(c, h, OBJ_ALLOC);
                if (!as)
                    st = VIDMM_E_INVALID_HANDLE;
                else
                    o->allocation = c->objs[as].lib;
            } else if (h) {
                st = VIDMM_E_INVALID_ARG;
            }
        }
        if (st >= 0)
            st = vidmm_gpuva_update(a, c->process, r->u0 ? ops : NULL, r->u0);
        free(ops);
        break;
    }
    case VMMD_OP_CONTEXT_CREATE: {
        if (!(slot = obj_find(c, r->a, OBJ_DEVICE))) {
            st = VIDMM_E_INVALID_HANDLE;
            break;
        }
        struct vidmm_context_desc desc;
        memset(&desc, 0, sizeof desc);
        desc.node = (uint32_t)r->c;
        desc.mode = (uint32_t)r->d;
        desc.flags = r->u0;
        desc.reserved = r->u1;
        vidmm_handle ctx = 0;
        st = vidmm_context_create(a, c->objs[slot].lib, &desc, &ctx);
        if (st >= 0) {
            uint32_t cs = 0;
            vidmm_status ost = obj_add(s, c, OBJ_CONTEXT, ctx, slot, &cs);
            if (ost < 0) {
                vidmm_context_destroy(a, ctx);
                st = ost;
                break;
            }
            vmmd_put64(out, obj_handle(c, cs));
            n = 8;
        }
        break;
    }
    case VMMD_OP_CONTEXT_DESTROY:
        if (!(slot = obj_find(c, r->a, OBJ_CONTEXT))) {
            st = VIDMM_E_INVALID_HANDLE;
            break;
        }
        st = vidmm_context_destroy(a, c->objs[slot].lib);
        if (st >= 0)
            obj_free(c, slot);
        break;
    case VMMD_OP_SUBMIT_VIRTUAL: {
        /* The command buffer is already in the process's GPU address
         * space (an allocation the client filled through LOCK): only its
         * address and size travel. */
        uint64_t fence = 0;
        if (!(slot = obj_find(c, r->a, OBJ_CONTEXT))) {
            st = VIDMM_E_INVALID_HANDLE;
            break;
        }
        if (r->u1) {
            st = VIDMM_E_INVALID_ARG;
            break;
        }
        st = vidmm_submit_virtual(a, c->objs[slot].lib, r->b, r->u0, &fence);
        if (st >= 0)
            s->st.submissions++;
        vmmd_put64(out, fence);
        n = 8;
        break;
    }
    case VMMD_OP_CONTEXT_FENCE: {
        uint64_t sub = 0, done = 0;
        if (!(slot = obj_find(c, r->a, OBJ_CONTEXT))) {
            st = VIDMM_E_INVALID_HANDLE;
            break;
        }
        st = vidmm_context_fence(a, c->objs[slot].lib, &sub, &done);
        vmmd_put64(out, sub);
        vmmd_put64(out + 8, done);
        n = 16;
        break;
    }
    case VMMD_OP_CONTEXT_WAIT: {
        /* As vidmm_context_wait, without blocking the loop: parked like
         * a paging-queue wait when the fence has not passed. */
        uint64_t sub = 0, done = 0;
        if (!(slot = obj_find(c, r->a, OBJ_CONTEXT))) {
            st = VIDMM_E_INVALID_HANDLE;
            break;
        }
        st = vidmm_context_fence(a, c->objs[slot].lib, &sub, &done);
        if (st < 0)
            break;
        if (r->b > sub) {
            st = VIDMM_E_INVALID_ARG;   /* never submitted: it would never pass */
            break;
        }
        if (done < r->b) {
            if (r->c == 0) {
                st = VIDMM_E_TIMEOUT;
                break;
            }
            park_wait(s, c, r, c->objs[slot].lib);
            return;
        }
        st = VIDMM_OK;
        break;
    }
    case VMMD_OP_SHARE_EXPORT:
        if (!(slot = obj_find(c, r->a, OBJ_ALLOC))) {
            st = VIDMM_E_INVALID_HANDLE;
            break;
        }
        st = do_export(s, c, slot, &fd);
        break;
    case VMMD_OP_SHARE_OPEN: {
        uint64_t h = 0;
        st = do_open(s, c, in_fd, &h);
        vmmd_put64(out, h);
        n = 8;
        break;
    }
    case VMMD_OP_SHARE_QUERY: {
        struct vidmm_share_info si;
        memset(&si, 0, sizeof si);
        if (!(slot = obj_find(c, r->a, OBJ_ALLOC))) {
            st = VIDMM_E_INVALID_HANDLE;
            break;
        }
        st = vidmm_share_query(a, c->objs[slot].lib, &si);
        vmmd_put32(out, si.holders);
        vmmd_put32(out + 4, si.creator_holds);
        vmmd_put32(out + 8, si.is_creator);
        vmmd_put32(out + 12, 0);
        n = 16;
        break;
    }
    case VMMD_OP_DEBUG_CHECK: {
        char report[2048] = "";
        int v = vidmm_adapter_check(a, report, sizeof report);
        struct vidmm_adapter_info ai;
        memset(&ai, 0, sizeof ai);
        vidmm_adapter_query_info(a, &ai);
        LOG(s, 1, "check (asked by client %u): %d violations, %zu clients, %llu live allocations%s%s\n", c->id, v,
            s->nclients, (unsigned long long)ai.live_allocations, v ? "\n" : "", v ? report : "");
        vmmd_put32(out, (uint32_t)v);
        vmmd_put32(out + 4, (uint32_t)s->nclients);
        vmmd_put64(out + 8, ai.live_allocations);
        n = 16;
        break;
    }
    case VMMD_OP_ADMIN_ADAPTER:
    case VMMD_OP_ADMIN_CLIENTS:
        admin(s, c, r);
        return;
    default:
        st = VIDMM_E_NOT_SUPPORTED;
        break;
    }
    reply(c, op, r->h.request_id, st, out, n, fd);
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
