/*
 * daemon/share.c - CPU access (LOCK, UNLOCK) and shared allocations
 * (SHARE_EXPORT, SHARE_OPEN, SHARE_QUERY); docs/DAEMON.md "Shared
 * allocations".
 *
 * An export is a sealed memfd the daemon creates and keeps open, holding
 * 16 random bytes; the client gets a duplicate of its descriptor and
 * passes it on over its own sockets.  An open names the share by that
 * descriptor alone: the daemon fstat()s it and accepts it only when its
 * device and inode are those of one of its own live export files and the
 * 16 bytes match - so no value a client could type, and no file it could
 * make, names another client's share.
 */
#define _GNU_SOURCE
#include "server_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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
    vmmd_obj_unlock_all(c, o);   /* the client's copy is its own from here on */
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
        st = vmmd_obj_add(s, c, OBJ_ALLOC, h, 0, &slot);
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
    *wire = vmmd_obj_handle(c, slot);
    return VIDMM_OK;
}

vidmm_status vmmd_serve_lock(struct req *x)
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

vidmm_status vmmd_serve_unlock(struct req *x)
{
    uint32_t slot = req_find(x, x->r->m.unlock.allocation, OBJ_ALLOC);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    return do_unlock(x->s, x->c, slot);
}

vidmm_status vmmd_serve_share_export(struct req *x)
{
    uint32_t slot = req_find(x, x->r->m.share_export.allocation, OBJ_ALLOC);
    if (!slot)
        return VIDMM_E_INVALID_HANDLE;
    return do_export(x->s, x->c, slot, &x->fd);
}

vidmm_status vmmd_serve_share_open(struct req *x)
{
    struct vmmd_rep_share_open rm = { 0 };
    vidmm_status st = do_open(x->s, x->c, x->in_fd, &rm.allocation);
    vmmd_put_rep_share_open(x->out, &rm);
    x->n = VMMD_REP_SHARE_OPEN_SIZE;
    return st;
}

vidmm_status vmmd_serve_share_query(struct req *x)
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
