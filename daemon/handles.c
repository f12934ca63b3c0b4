/*
 * daemon/handles.c - a connection's handle table: the objects a client
 * names on the wire, and the translation of its handles to vidmm's.
 *
 * Handles on the wire are the connection's own: type, a per-connection
 * salt, a generation and a slot of the connection's table.  A value that
 * is not in this connection's table is VIDMM_E_INVALID_HANDLE, whatever
 * another connection holds.  An object freed here gives back what it
 * held: its CPU locks, its share of an export, its bytes against the
 * connection's limits.
 */
#define _GNU_SOURCE
#include "server_internal.h"

#include <sys/mman.h>
#include <unistd.h>

uint64_t vmmd_client_handle_guess(const struct vmmd_client *c, uint8_t type, uint32_t slot, uint16_t gen)
{
    if (!c)
        return 0;
    return (uint64_t)type << 56 | (uint64_t)c->salt << 40 | (uint64_t)gen << 24 | (slot & 0xffffffu);
}

/* ---- per-connection handle table ---------------------------------------- */

uint64_t vmmd_obj_handle(const struct vmmd_client *c, uint32_t slot)
{
    const struct obj *o = &c->objs[slot];
    return (uint64_t)o->type << 56 | (uint64_t)c->salt << 40 | (uint64_t)o->gen << 24 | slot;
}

/* The slot a wire handle names in this connection, or 0. */
uint32_t vmmd_obj_find(const struct vmmd_client *c, uint64_t h, uint8_t type)
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
vidmm_status vmmd_obj_add(struct vmmd_server *s, struct vmmd_client *c, uint8_t type, vidmm_handle lib,
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

void vmmd_obj_unlock_all(struct vmmd_client *c, struct obj *o)
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
void vmmd_export_unref(struct vmmd_server *s, uint32_t share)
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

void vmmd_obj_free(struct vmmd_client *c, uint32_t slot)
{
    struct obj *o = &c->objs[slot];
    vmmd_export_unref(c->srv, o->share);
    o->share = 0;
    vmmd_obj_unlock_all(c, o);
    if (o->type == OBJ_ALLOC) {
        c->alloc_bytes -= o->size;
        c->nallocs--;
    }
    o->type = OBJ_FREE;
    o->lib = 0;
    c->live--;
}

/* ---- objects behind requests --------------------------------------------- */

static vidmm_status translate_list(const struct vmmd_client *c, const uint8_t *list, uint32_t n, vidmm_handle *out)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t slot = vmmd_obj_find(c, vmmd_get64(list + 8 * (size_t)i), OBJ_ALLOC);
        if (!slot)
            return VIDMM_E_INVALID_HANDLE;
        out[i] = c->objs[slot].lib;
    }
    return VIDMM_OK;
}

/* A new object's wire handle as the 8-byte reply. */
void vmmd_put_handle(struct req *x, uint32_t slot)
{
    vmmd_put64(x->out, vmmd_obj_handle(x->c, slot));
    x->n = 8;
}

/* The request's handle list (r->list, r->list_count), translated into a
 * buffer the caller frees when it is not stackbuf. */
vidmm_status vmmd_list_get(const struct req *x, vidmm_handle *stackbuf, size_t stackn, vidmm_handle **out)
{
    uint32_t n = x->r->list_count;
    vidmm_handle *list = n <= stackn ? stackbuf : malloc(sizeof *list * n);
    *out = list;
    if (!list)
        return VIDMM_E_NO_HOST_MEMORY;
    return translate_list(x->c, x->r->list, n, list);
}
