/*
 * objtab.c - typed handle tables (see objtab.h).
 *
 * Three parallel arrays grow geometrically through the host allocator;
 * lookups are O(1).  Retiring wrapped slots costs one slot per 65,535
 * reuses of it, which is cheaper than widening every handle.
 */
#include "core/objtab.h"
#include "core/alloc_sites.h"

#include <string.h>

#define OT_MAX_SLOTS VIDMM_OBJTAB_MAX_SLOTS
#define OT_RETIRED (UINT32_MAX - 1u)   /* next_free of a retired slot */

void vidmm_objtab_init(struct vidmm_objtab *t, uint32_t type, uint32_t salt)
{
    memset(t, 0, sizeof(*t));
    t->type = type;
    t->salt = salt;
    t->free_head = UINT32_MAX;
    t->max_slots = OT_MAX_SLOTS;
    t->obj_gen_off = UINT32_MAX;
    t->site[0] = VIDMM_SITE_OBJTAB_OBJECTS;
    t->site[1] = VIDMM_SITE_OBJTAB_GENERATIONS;
    t->site[2] = VIDMM_SITE_OBJTAB_FREE_LINKS;
}

void vidmm_objtab_set_sites(struct vidmm_objtab *t, unsigned objects, unsigned generations, unsigned free_links)
{
    t->site[0] = (uint16_t)objects;
    t->site[1] = (uint16_t)generations;
    t->site[2] = (uint16_t)free_links;
}

void vidmm_objtab_set_object_generation(struct vidmm_objtab *t, uint32_t off)
{
    if (!t->live)
        t->obj_gen_off = off;
}

int vidmm_objtab_full(const struct vidmm_objtab *t)
{
    return t->free_head == UINT32_MAX && t->used >= t->max_slots;
}

void vidmm_objtab_set_limit(struct vidmm_objtab *t, uint32_t max)
{
    if (max && max <= OT_MAX_SLOTS && max >= t->used)
        t->max_slots = max;
}

void vidmm_objtab_fini(struct vidmm_objtab *t, const struct vidmm_host_allocator *ha)
{
    vidmm_hfree(ha, t->obj, (size_t)t->cap * sizeof(*t->obj), _Alignof(void *));
    vidmm_hfree(ha, t->gen, (size_t)t->cap * sizeof(*t->gen), _Alignof(uint16_t));
    vidmm_hfree(ha, t->next_free, (size_t)t->cap * sizeof(*t->next_free), _Alignof(uint32_t));
    uint32_t max = t->max_slots, off = t->obj_gen_off;
    uint16_t site[3] = { t->site[0], t->site[1], t->site[2] };
    vidmm_objtab_init(t, t->type, t->salt);
    t->max_slots = max;
    t->obj_gen_off = off;
    memcpy(t->site, site, sizeof site);
}

static vidmm_status grow(struct vidmm_objtab *t, const struct vidmm_host_allocator *ha)
{
    uint32_t cap = t->cap ? t->cap * 2 : 16;
    if (cap > t->max_slots)
        cap = t->max_slots;
    if (cap <= t->cap)
        return VIDMM_E_BUSY;   /* at its limit */
    void **o = vidmm_hzalloc(ha, (enum vidmm_alloc_site)t->site[0], (size_t)cap * sizeof(*o), _Alignof(void *));
    uint16_t *g = vidmm_hzalloc(ha, (enum vidmm_alloc_site)t->site[1], (size_t)cap * sizeof(*g), _Alignof(uint16_t));
    uint32_t *n = vidmm_hzalloc(ha, (enum vidmm_alloc_site)t->site[2], (size_t)cap * sizeof(*n), _Alignof(uint32_t));
    if (!o || !g || !n) {
        vidmm_hfree(ha, o, (size_t)cap * sizeof(*o), _Alignof(void *));
        vidmm_hfree(ha, g, (size_t)cap * sizeof(*g), _Alignof(uint16_t));
        vidmm_hfree(ha, n, (size_t)cap * sizeof(*n), _Alignof(uint32_t));
        return VIDMM_E_NO_HOST_MEMORY;
    }
    if (t->cap) {
        memcpy(o, t->obj, (size_t)t->cap * sizeof(*o));
        memcpy(g, t->gen, (size_t)t->cap * sizeof(*g));
        memcpy(n, t->next_free, (size_t)t->cap * sizeof(*n));
    }
    vidmm_hfree(ha, t->obj, (size_t)t->cap * sizeof(*t->obj), _Alignof(void *));
    vidmm_hfree(ha, t->gen, (size_t)t->cap * sizeof(*t->gen), _Alignof(uint16_t));
    vidmm_hfree(ha, t->next_free, (size_t)t->cap * sizeof(*t->next_free), _Alignof(uint32_t));
    t->obj = o;
    t->gen = g;
    t->next_free = n;
    t->cap = cap;
    return VIDMM_OK;
}

vidmm_status vidmm_objtab_add(struct vidmm_objtab *t, const struct vidmm_host_allocator *ha, void *obj,
                              uint64_t *handle)
{
    uint32_t s;
    if (t->free_head != UINT32_MAX) {
        s = t->free_head;
        t->free_head = t->next_free[s];
    } else {
        if (t->used == t->cap) {
            vidmm_status st = grow(t, ha);
            if (st < 0)
                return st;
        }
        s = t->used++;
        t->gen[s] = 1;
    }
    t->obj[s] = obj;
    if (t->obj_gen_off != UINT32_MAX)
        *(uint16_t *)((char *)obj + t->obj_gen_off) = t->gen[s];
    t->next_free[s] = UINT32_MAX;
    t->live++;
    *handle = VIDMM_HANDLE_MAKE(t->type, t->salt, t->gen[s], s);
    return VIDMM_OK;
}

void vidmm_objtab_remove(struct vidmm_objtab *t, uint64_t h)
{
    uint32_t s = VIDMM_HANDLE_SLOT(h);
    t->obj[s] = NULL;
    t->live--;
    if (t->gen[s] == 0xFFFFu) {
        t->retired++;   /* its next generation would repeat an old one */
        t->next_free[s] = OT_RETIRED;
        return;
    }
    t->gen[s]++;
    t->next_free[s] = t->free_head;
    t->free_head = s;
}

int vidmm_objtab_check(const struct vidmm_objtab *t)
{
    int e = 0;
    uint32_t live = 0, free_slots = 0, chain = 0, retired = 0;
    for (uint32_t i = 0; i < t->used; i++) {
        if (t->gen[i] == 0)
            e++;
        if (t->obj[i]) {
            live++;
            if (t->obj_gen_off != UINT32_MAX && *(const uint16_t *)((const char *)t->obj[i] + t->obj_gen_off) != t->gen[i])
                e++;   /* the object's copy of its generation */
        }
        else if (t->next_free[i] == OT_RETIRED)
            retired++;
        else
            free_slots++;
    }
    for (uint32_t i = t->free_head; i != UINT32_MAX; i = t->next_free[i]) {
        if (i >= t->used || t->obj[i] || ++chain > t->used) {
            e++;
            break;
        }
    }
    if (live != t->live || chain != free_slots || retired != t->retired || t->used > t->cap ||
        t->used > t->max_slots)
        e++;
    return e;
}
