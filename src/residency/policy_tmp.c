/* Temporary plain LRU until src/policy/ lands (deleted then). */
#include "core/vidmm_int.h"

struct tmp_lru { const struct vidmm_host_allocator *ha; uint32_t n; struct vidmm_policy_entry **head, **tail; };

static vidmm_status t_create(const struct vidmm_host_allocator *ha, uint32_t n, void **out)
{
    struct tmp_lru *s = vidmm_hzalloc(ha, sizeof(*s), _Alignof(struct tmp_lru));
    if (!s)
        return VIDMM_E_NO_HOST_MEMORY;
    s->ha = ha;
    s->n = n;
    s->head = vidmm_hzalloc(ha, n * sizeof(void *), _Alignof(void *));
    s->tail = vidmm_hzalloc(ha, n * sizeof(void *), _Alignof(void *));
    if (!s->head || !s->tail) {
        vidmm_hfree(ha, s->head, n * sizeof(void *), _Alignof(void *));
        vidmm_hfree(ha, s->tail, n * sizeof(void *), _Alignof(void *));
        vidmm_hfree(ha, s, sizeof(*s), _Alignof(struct tmp_lru));
        return VIDMM_E_NO_HOST_MEMORY;
    }
    *out = s;
    return VIDMM_OK;
}
static void t_destroy(void *st)
{
    struct tmp_lru *s = st;
    vidmm_hfree(s->ha, s->head, s->n * sizeof(void *), _Alignof(void *));
    vidmm_hfree(s->ha, s->tail, s->n * sizeof(void *), _Alignof(void *));
    vidmm_hfree(s->ha, s, sizeof(*s), _Alignof(struct tmp_lru));
}
static void t_unlink(struct tmp_lru *s, struct vidmm_policy_entry *e)
{
    if (!e->key[0])
        return;
    struct vidmm_policy_entry *p = e->link[0], *n = e->link[1];
    uint32_t id = (uint32_t)e->key[1];
    if (p) p->link[1] = n; else s->head[id] = n;
    if (n) n->link[0] = p; else s->tail[id] = p;
    e->link[0] = e->link[1] = NULL;
    e->key[0] = 0;
}
static void t_insert(void *st, struct vidmm_policy_entry *e)
{
    struct tmp_lru *s = st;
    t_unlink(s, e);
    uint32_t id = e->segment_id;
    e->key[0] = 1;
    e->key[1] = id;
    e->link[0] = s->tail[id];
    e->link[1] = NULL;
    if (s->tail[id]) s->tail[id]->link[1] = e; else s->head[id] = e;
    s->tail[id] = e;
}
static void t_touch(void *st, struct vidmm_policy_entry *e) { t_insert(st, e); }
static void t_remove(void *st, struct vidmm_policy_entry *e, enum vidmm_policy_remove_reason why)
{
    (void)why;
    t_unlink(st, e);
}
static struct vidmm_policy_entry *t_first(void *st, uint32_t id)
{
    struct tmp_lru *s = st;
    return id < s->n ? s->head[id] : NULL;
}
static struct vidmm_policy_entry *t_next(void *st, const struct vidmm_policy_entry *e)
{
    (void)st;
    return e->link[1];
}
const struct vidmm_eviction_policy vidmm_policy_lru = { "lru", t_create, t_destroy, t_insert, t_touch, t_remove, t_first, t_next, NULL };
