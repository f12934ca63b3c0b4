/*
 * va_objidx.c - the object index: allocation -> its mappings.
 *
 * An open-addressed hash (8-byte slots: the head record of the object's
 * mapping list and a tag) plus a doubly linked list through the MAPPED
 * records, so destroying or moving an allocation costs O(its mappings)
 * rather than a walk of every range.  Slots are reserved in prepare
 * (vidmm_vai_obj_reserve, load <= 1/2); linking and unlinking in commit
 * never allocate.
 */
#include "va/va_int.h"

/* ---- object hash: object -> list of its mappings -------------------------- */

struct vidmm_va_objrec *vidmm_vai_obj_find(const struct vidmm_va_space *vs, uint64_t object)
{
    uint64_t mask = vs->obj_cap - 1;
    uint32_t t = va_tag(object);
    for (uint64_t i = t & mask;; i = (i + 1) & mask) {
        struct vidmm_va_objrec *o = &vs->objs[i];
        if (o->head == 0)
            return NULL;
        if (o->tag == t && va_rec(vs, o->head)->d.object == object)
            return o;
    }
}

/* The slot whose list starts at n (n is linked and heads its list). */
static struct vidmm_va_objrec *va_obj_slot_of(const struct vidmm_va_space *vs, uint32_t n)
{
    uint64_t mask = vs->obj_cap - 1;
    for (uint64_t i = va_tag(va_rec(vs, n)->d.object) & mask;; i = (i + 1) & mask)
        if (vs->objs[i].head == n)
            return &vs->objs[i];
}

/* Make room for `more` new objects at load <= 1/2. */
vidmm_status vidmm_vai_obj_reserve(struct vidmm_va_space *vs, uint64_t more)
{
    if ((vs->obj_count + more) * 2 <= vs->obj_cap)
        return VIDMM_OK;
    uint64_t cap = vs->obj_cap;
    while ((vs->obj_count + more) * 2 > cap) {
        if (cap > SIZE_MAX / 2 / sizeof(struct vidmm_va_objrec))
            return VIDMM_E_NO_HOST_MEMORY;
        cap *= 2;
    }
    struct vidmm_va_objrec *t = vidmm_host_alloc_at(vs->ha, VIDMM_SITE_VA_OBJRECS, (size_t)cap * sizeof *t, 16);
    if (!t)
        return VIDMM_E_NO_HOST_MEMORY;
    memset(t, 0, (size_t)cap * sizeof *t);
    for (uint64_t j = 0; j < vs->obj_cap; j++) {
        if (!vs->objs[j].head)
            continue;
        uint64_t i = vs->objs[j].tag & (cap - 1);
        while (t[i].head)
            i = (i + 1) & (cap - 1);
        t[i] = vs->objs[j];
    }
    vs->ha->free(vs->ha->user_data, vs->objs, (size_t)vs->obj_cap * sizeof *t, 16);
    vs->objs = t;
    vs->obj_cap = cap;
    return VIDMM_OK;
}

/* Remove a slot by backward shift (linear probing keeps no tombstones). */
static void va_obj_delete(struct vidmm_va_space *vs, struct vidmm_va_objrec *rec)
{
    if (vs->obj_fn)
        vs->obj_fn(vs->obj_ctx, va_rec(vs, rec->head)->d.object, -1);
    uint64_t mask = vs->obj_cap - 1;
    uint64_t i = (uint64_t)(rec - vs->objs);
    for (uint64_t j = (i + 1) & mask; vs->objs[j].head; j = (j + 1) & mask) {
        uint64_t home = vs->objs[j].tag & mask;
        /* j's entry may move to i if its home is not in (i, j]. */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            vs->objs[i] = vs->objs[j];
            i = j;
        }
    }
    vs->objs[i].head = 0;
    vs->objs[i].tag = 0;
    vs->obj_count--;
}

/* Link n into its object's list right after p, a linked mapping of the
 * same object: no hash access (the head stays). */
void vidmm_vai_obj_link_after(struct vidmm_va_space *vs, uint32_t n, uint32_t p)
{
    struct vidmm_va_range *c = va_rec(vs, n), *pc = va_rec(vs, p);
    c->obj_prev = p;
    c->obj_next = pc->obj_next;
    if (pc->obj_next)
        va_rec(vs, pc->obj_next)->obj_prev = n;
    pc->obj_next = n;
}

/* Capacity was reserved by the caller when the object may be new. */
void vidmm_vai_obj_link(struct vidmm_va_space *vs, uint32_t n)
{
    struct vidmm_va_range *c = va_rec(vs, n);
    uint64_t object = c->d.object, mask = vs->obj_cap - 1;
    uint32_t t = va_tag(object);
    /* One probe sequence: the object's slot, or the empty one ending it. */
    for (uint64_t i = t & mask;; i = (i + 1) & mask) {
        struct vidmm_va_objrec *rec = &vs->objs[i];
        if (rec->head == 0) {
            rec->head = n;
            rec->tag = t;
            c->obj_prev = c->obj_next = 0;
            vs->obj_count++;
            if (vs->obj_fn)
                vs->obj_fn(vs->obj_ctx, object, +1);
            return;
        }
        if (rec->tag == t && va_rec(vs, rec->head)->d.object == object) {
            vidmm_vai_obj_link_after(vs, n, rec->head);
            return;
        }
    }
}

/* Only a list head touches the hash. */
void vidmm_vai_obj_unlink(struct vidmm_va_space *vs, uint32_t n)
{
    struct vidmm_va_range *c = va_rec(vs, n);
    if (c->obj_prev) {
        va_rec(vs, c->obj_prev)->obj_next = c->obj_next;
        if (c->obj_next)
            va_rec(vs, c->obj_next)->obj_prev = c->obj_prev;
    } else {
        struct vidmm_va_objrec *rec = va_obj_slot_of(vs, n);
        if (c->obj_next) {
            rec->head = c->obj_next;
            va_rec(vs, c->obj_next)->obj_prev = 0;
        } else {
            va_obj_delete(vs, rec);
        }
    }
    c->obj_prev = c->obj_next = 0;
}
