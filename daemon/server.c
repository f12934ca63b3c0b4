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

#define OUT_MAX_BYTES ((size_t)4 << 20)   /* replies a client may leave unread before it is dropped */

struct obj {
    uint8_t type;
    uint16_t gen;
    uint32_t parent;        /* queue: the device's slot */
    vidmm_handle lib;
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

struct wait {
    struct vmmd_client *c;
    uint64_t request_id;
    vidmm_handle queue;
    uint64_t value;
    uint64_t deadline_ns;   /* UINT64_MAX = none */
};

struct vmmd_client {
    int fd;
    uint32_t id;
    pid_t pid;
    uid_t uid;
    gid_t gid;
    vidmm_status refused;   /* < 0: the adapter would not take it */
    int closing;
    vidmm_handle process, device;
    uint16_t salt;
    struct obj *objs;       /* slot 0 unused */
    uint32_t nobj, cap, live;
    uint64_t locked_bytes;
    struct outmsg *out_head, *out_tail;
    size_t out_bytes;
    vidmm_status last_status;   /* of the last reply (the verbose log) */
    int loop_word;
};

struct vmmd_server {
    struct vmmd_server_config cfg;
    struct vmmd_client **clients;
    size_t nclients, cap;
    struct wait *waits;
    size_t nwaits, wcap;
    uint32_t next_id;
    uint64_t salt_state;
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

size_t vmmd_server_client_count(const struct vmmd_server *s) { return s ? s->nclients : 0; }
struct vmmd_client *vmmd_server_client_at(struct vmmd_server *s, size_t i)
{
    return s && i < s->nclients ? s->clients[i] : NULL;
}
int vmmd_client_fd(const struct vmmd_client *c) { return c ? c->fd : -1; }
int vmmd_client_closing(const struct vmmd_client *c) { return c ? c->closing : 1; }
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

static uint32_t obj_add(struct vmmd_server *s, struct vmmd_client *c, uint8_t type, vidmm_handle lib, uint32_t parent)
{
    if (c->live >= s->cfg.max_objects)
        return 0;
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
                return 0;
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
    return slot;
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

static void obj_free(struct vmmd_server *s, struct vmmd_client *c, uint32_t slot)
{
    struct obj *o = &c->objs[slot];
    export_unref(s, o->share);
    o->share = 0;
    obj_unlock_all(c, o);
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
    if (c->out_bytes > OUT_MAX_BYTES)
        c->closing = 1;   /* not reading its replies */
}

int vmmd_client_flush(struct vmmd_client *c)
{
    while (c->out_head) {
        struct outmsg *m = c->out_head;
        struct iovec iov = { m->buf, m->n };
        union {
            char buf[CMSG_SPACE(sizeof(int))];
            struct cmsghdr align;
        } u;
        struct msghdr mh;
        memset(&mh, 0, sizeof mh);
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        if (m->fd >= 0) {
            memset(&u, 0, sizeof u);
            mh.msg_control = u.buf;
            mh.msg_controllen = sizeof u.buf;
            struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
            cm->cmsg_level = SOL_SOCKET;
            cm->cmsg_type = SCM_RIGHTS;
            cm->cmsg_len = CMSG_LEN(sizeof(int));
            memcpy(CMSG_DATA(cm), &m->fd, sizeof(int));
        }
        ssize_t r = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
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
    c->refused = vidmm_process_create(s->cfg.adapter, &c->process);
    if (c->refused >= 0) {
        c->refused = vidmm_device_create(s->cfg.adapter, c->process, &c->device);
        if (c->refused < 0) {
            vidmm_process_destroy(s->cfg.adapter, c->process);
            c->process = 0;
        }
    }
    if (c->refused > 0)
        c->refused = VIDMM_OK;
    s->clients[s->nclients++] = c;
    s->st.connections++;
    LOG(s, 1, "client %u connected: pid %ld uid %ld gid %ld%s%s\n", c->id, (long)pid, (long)uid, (long)gid,
        c->refused < 0 ? ", refused: " : "", c->refused < 0 ? vidmm_status_str(c->refused) : "");
    return c;
}

void vmmd_client_drop(struct vmmd_server *s, struct vmmd_client *c, const char *why)
{
    if (!s || !c)
        return;
    /* Its parked waits go with it. */
    size_t w = 0;
    for (size_t i = 0; i < s->nwaits; i++)
        if (s->waits[i].c != c)
            s->waits[w++] = s->waits[i];
    s->nwaits = w;
    uint32_t objects = c->live, locked = 0;
    for (uint32_t i = 1; i < c->nobj; i++) {
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
    for (size_t i = 0; i < s->nclients; i++)
        if (s->clients[i] == c) {
            s->clients[i] = s->clients[--s->nclients];
            break;
        }
    s->st.disconnections++;
    free(c);
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
    uint32_t slot = obj_add(s, c, OBJ_ALLOC, h, 0);
    if (!slot) {
        vidmm_allocation_destroy(s->cfg.adapter, h);   /* lets go of the hold just taken */
        return VIDMM_E_NO_HOST_MEMORY;
    }
    c->objs[slot].share = (uint32_t)idx + 1;
    s->exports[idx].refs++;
    s->st.shares_opened++;
    *wire = obj_handle(c, slot);
    return VIDMM_OK;
}

static void park_wait(struct vmmd_server *s, struct vmmd_client *c, const struct vmmd_request *r, vidmm_handle q)
{
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
    w->c = c;
    w->request_id = r->h.request_id;
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
        uint64_t done = 0;
        vidmm_status st = vidmm_paging_queue_fence(s->cfg.adapter, w->queue, &done);
        if (st >= 0 && done < w->value && now < w->deadline_ns) {
            s->waits[keep++] = *w;
            continue;
        }
        if (st >= 0)
            st = done >= w->value ? VIDMM_OK : VIDMM_E_TIMEOUT;
        reply(w->c, VMMD_OP_QUEUE_WAIT, w->request_id, st, NULL, 0, -1);
        s->st.waits_answered++;
    }
    s->nwaits = keep;
    return keep;
}

static void handle(struct vmmd_server *s, struct vmmd_client *c, const struct vmmd_request *r, int in_fd)
{
    struct vidmm_adapter *a = s->cfg.adapter;
    uint8_t out[64];
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
        reply(c, op, r->h.request_id, VIDMM_OK, r->data, r->data_size > VMMD_MAX_PAYLOAD - 8 ? VMMD_MAX_PAYLOAD - 8 : r->data_size, -1);
        return;
    case VMMD_OP_DEVICE_CREATE: {
        vidmm_handle d = 0;
        st = vidmm_device_create(a, c->process, &d);
        if (st >= 0) {
            slot = obj_add(s, c, OBJ_DEVICE, d, 0);
            if (!slot) {
                vidmm_device_destroy(a, d);
                st = VIDMM_E_NO_HOST_MEMORY;
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
            /* The library destroyed the device's queues with it. */
            for (uint32_t i = 1; i < c->nobj; i++)
                if (c->objs[i].type == OBJ_QUEUE && c->objs[i].parent == slot)
                    obj_free(s, c, i);
            obj_free(s, c, slot);
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
            uint32_t qs = obj_add(s, c, OBJ_QUEUE, q, slot);
            if (!qs) {
                vidmm_paging_queue_destroy(a, q);
                st = VIDMM_E_NO_HOST_MEMORY;
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
            obj_free(s, c, slot);
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
            uint32_t as = obj_add(s, c, OBJ_ALLOC, h, 0);
            if (!as) {
                vidmm_allocation_destroy(a, h);
                st = VIDMM_E_NO_HOST_MEMORY;
                break;
            }
            vmmd_put64(out, obj_handle(c, as));
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
        st = vidmm_allocation_destroy(a, c->objs[slot].lib);
        if (st >= 0)
            obj_free(s, c, slot);
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
        c->last_status = VIDMM_PENDING;   /* a parked wait sends no reply now */
        handle(s, c, &r, fd);
        LOG(s, 2, "client %u: %s id %llu: %s\n", c->id, vmmd_op_name(r.h.opcode), (unsigned long long)r.h.request_id,
            vidmm_status_str(c->last_status));
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
