/*
 * rmv.c - Radeon Memory Visualizer trace import: loading, replay and
 * summary (see rmv.h; the decoding is rmv_decode.c).
 *
 * Replay.  Events of every stream are merged in timestamp order.  The
 * application's VirtualAllocate becomes a resident allocation whose
 * segment preferences follow the heap preferences (LOCAL -> the
 * CPU-visible memory segment, INVISIBLE -> the invisible one, SYSTEM ->
 * the aperture), VirtualFree a destroy, ResourceReference add/remove a
 * make-resident / evict (only if necessary, as WDDM's Evict promises) of
 * the allocation holding the resource's address.  At each page-table
 * update of type "update" that maps pages of a replayed allocation (the
 * discard and transfer types are not mappings; AMD's page table skips
 * them too), the heap the driver mapped (by physical address: in the
 * trace's local or invisible heap, or system memory, which the driver
 * records as address 0) is compared with where vidmm has the allocation
 * then.
 */
#include "rmv.h"
#include "rmv_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { HEAP_LOCAL = RMV_HEAP_LOCAL, HEAP_INVISIBLE = RMV_HEAP_INVISIBLE, HEAP_SYSTEM = RMV_HEAP_SYSTEM,
       HEAP_NONE = RMV_HEAP_NONE };
static const char *const heap_name[4] = { "local", "invisible", "system", "none" };
static const char *const placement_name[4] = { "local", "invisible", "system", "not-resident" };

static uint8_t *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *buf = NULL;
    size_t cap = 0, len = 0;
    for (;;) {
        if (len == cap) {
            size_t nc = cap ? cap * 2 : 1 << 20;
            uint8_t *nb = realloc(buf, nc);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
            cap = nc;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    *n = len;
    return buf;
}

int rmv_is_rmv_file(const char *path)
{
    /* Only a regular file is sniffed: reading a pipe's first bytes would
     * take them from the trace reader. */
    struct stat sb;
    if (stat(path, &sb) || !S_ISREG(sb.st_mode))
        return 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    uint8_t m[8];
    size_t got = fread(m, 1, 8, f);
    fclose(f);
    return (got == 8 && !memcmp(m, "AMD_RDF ", 8)) ||
           (got >= 4 && (m[0] | m[1] << 8 | m[2] << 16 | (uint32_t)m[3] << 24) == 0x494e494du);
}

int rmv_load(const char *path, int lenient, uint32_t local_scale, struct rmv_import *imp, struct tr_header *h,
             void **state)
{
    size_t n = 0;
    errno = 0;
    uint8_t *d = read_all(path, &n);
    if (!d) {
        fprintf(stderr, "vidmm: cannot read '%s': %s\n", path, errno ? strerror(errno) : "empty or unreadable");
        return 1;
    }
    int rc = rmv_decode(d, n, path, imp, state, stderr, lenient);
    free(d);
    if (rc)
        return 1;
    imp->local_scale = local_scale ? local_scale : 1;
    tr_header_defaults(h);
    snprintf(h->scenario, sizeof h->scenario, "rmv");
    snprintf(h->preset, sizeof h->preset, "dgpu");
    /* The adapter the file describes: LOCAL the CPU-visible memory
     * segment, INVISIBLE the other (64 KiB multiples; softgpu reserves
     * lazily), the system heap the aperture and vidmm's system memory. */
    h->segment_size[1] = (imp->local_size / imp->local_scale) & ~0xffffull;
    h->segment_size[2] = (imp->invisible_size / imp->local_scale) & ~0xffffull;
    if (!h->segment_size[1])
        h->segment_size[1] = (256ull << 20) / imp->local_scale;
    if (!h->segment_size[2])
        h->segment_size[2] = (4ull << 30) / imp->local_scale;
    uint64_t sys = imp->system_size & ~0xfffull;
    if (!sys)
        sys = 16ull << 30;
    h->segment_size[3] = sys;
    h->system_memory = sys;
    imp->seg_size[0] = h->segment_size[1];
    imp->seg_size[1] = h->segment_size[2];
    imp->seg_size[2] = sys;
    return 0;
}

/* ---- replay --------------------------------------------------------- */

struct live {
    uint64_t va, size;
    uint32_t a;                  /* allocation id in the recording layer (0: its creation failed) */
    uint32_t serial;             /* the allocation's number in event order (both passes agree) */
    uint8_t first;               /* the heap of its first preference */
};

struct plive {
    struct live *l;
    size_t n, cap;
};

/* Index of the live allocation holding va, or -1 (sorted by va). */
static long find(const struct plive *p, uint64_t va)
{
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p->l[mid].va <= va)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    const struct live *c = &p->l[lo - 1];
    return va - c->va < c->size ? (long)(lo - 1) : -1;
}

static int live_insert(struct plive *p, struct live x)
{
    if (p->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 256;
        struct live *nl = realloc(p->l, nc * sizeof(*nl));
        if (!nl)
            return -1;
        p->l = nl;
        p->cap = nc;
    }
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p->l[mid].va < x.va)
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(p->l + lo + 1, p->l + lo, (p->n - lo) * sizeof(*p->l));
    p->l[lo] = x;
    p->n++;
    return 0;
}

static void live_remove(struct plive *p, size_t k)
{
    memmove(p->l + k, p->l + k + 1, (p->n - k - 1) * sizeof(*p->l));
    p->n--;
}

/* The replay runs twice over the events: a dry pass (no vidmm call) that
 * numbers the allocations and lists every use (a make-resident) in
 * order, so the real pass knows each allocation's next use - the hint
 * Belady's policy needs (vidmm_allocation_set_next_use) - and the real
 * pass.  Both take the same decisions, so their numbering agrees. */
struct rctx {
    struct tr *t;
    struct rmv_import *imp;
    int dry, belady, bad;
    struct plive live[RMV_MAX_PROCS];
    uint32_t seg_local, seg_invisible, seg_system;
    uint32_t serials;
    uint32_t *use_serial;        /* dry: the allocation of each use */
    size_t nuse, usecap;
    size_t *next_use;            /* real: per use, the index of its allocation's next use (SIZE_MAX: none) */
    size_t *first_use;           /* real: per serial, its first use (SIZE_MAX: none) */
    size_t use_at;               /* uses so far */
};

static int heap_of_segment(const struct rctx *c, uint32_t seg)
{
    return seg == c->seg_local ? HEAP_LOCAL : seg == c->seg_invisible ? HEAP_INVISIBLE : HEAP_SYSTEM;
}

static int placement_of(struct rctx *c, uint32_t a)
{
    struct vidmm_residency_state rs;
    struct vidmm_allocation_state as;
    vidmm_handle h = tr_handle(c->t, TR_ALLOC, a);
    if (!a || vidmm_allocation_residency(c->t->adapter, h, &rs) < 0 || !rs.resident ||
        vidmm_allocation_query(c->t->adapter, h, &as) < 0)
        return 3;
    return heap_of_segment(c, as.segment_id);
}

/* The clock a hint names: use number k happens about k - use_at
 * make-residents from now. */
static uint64_t hint_at(struct rctx *c, size_t k)
{
    if (k == SIZE_MAX)
        return VIDMM_NEXT_USE_NEVER;
    return vidmm_residency_clock(c->t->adapter) + (uint64_t)(k - c->use_at) + 1;
}

static void give_hint(struct rctx *c, uint32_t a, size_t k)
{
    if (c->belady && a) {
        vidmm_allocation_set_next_use(c->t->adapter, tr_handle(c->t, TR_ALLOC, a), hint_at(c, k));
        c->imp->hints++;
    }
}

/* A use of allocation x (a make-resident that waits for its paging). */
static void use(struct rctx *c, struct rmv_proc *pr, const struct live *x)
{
    size_t k = c->use_at;
    if (c->dry) {
        if (c->nuse == c->usecap) {
            size_t nc = c->usecap ? c->usecap * 2 : 1024;
            uint32_t *n = realloc(c->use_serial, nc * sizeof(*n));
            if (!n) {
                c->bad = 1;
                return;
            }
            c->use_serial = n;
            c->usecap = nc;
        }
        c->use_serial[c->nuse++] = x->serial;
        c->use_at++;
        return;
    }
    c->use_at++;
    if (!x->a)
        return;
    give_hint(c, x->a, c->next_use[k]);
    uint64_t fence = 0;
    vidmm_status st = tr_make_resident(c->t, pr->d, pr->q, &x->a, 1, VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER, &fence,
                                       NULL);
    if (st == VIDMM_PENDING)
        st = tr_wait(c->t, pr->q, fence);
    c->imp->make_resident_failed += st < 0;
}

/* The process of index i: created in vidmm at its first event. */
static struct rmv_proc *proc_at(struct rctx *c, uint32_t i)
{
    struct rmv_proc *pr = &c->imp->proc[i];
    if (c->dry || pr->p)
        return pr;
    char name[32];
    if (pr->inferred)
        snprintf(name, sizeof name, "unattributed");
    else
        snprintf(name, sizeof name, "pid%" PRIu64, pr->pid);
    if (tr_process_create(c->t, name, &pr->p) < 0 || tr_device_create(c->t, pr->p, &pr->d) < 0 ||
        tr_queue_create(c->t, pr->d, VIDMM_PAGING_QUEUE_NORMAL, &pr->q) < 0) {
        fprintf(stderr, "rmv: cannot create the replay process %s\n", name);
        c->bad = 1;
    }
    return pr;
}

/* Create an allocation of size bytes at va with heap preferences pref
 * (RMV heaps, HEAP_NONE-terminated) for process i: vidmm chooses its
 * placement from the preferences, the write set allows every heap. */
static void create(struct rctx *c, uint32_t i, uint64_t va, uint64_t size, const uint8_t pref[4])
{
    struct rmv_proc *pr = proc_at(c, i);
    struct live x = { va, size, 0, c->serials++, pref[0] < 3 ? pref[0] : HEAP_SYSTEM };
    pr->allocations++;
    if (!c->dry && !c->bad) {
        struct softgpu_alloc_desc desc;
        memset(&desc, 0, sizeof desc);
        desc.kind = SOFTGPU_ALLOC_EXPLICIT;
        desc.info.size = size;
        /* The heaps are PAL's "acceptable heaps, in order of
         * preference": the preferences in that order, and the segments
         * vidmm may use (none listed: any). */
        uint32_t slot = 0, seen = 0, p = 0, set = 0;
        for (int k = 0; k < 4 && pref[k] != HEAP_NONE; k++) {
            uint32_t id = pref[k] == HEAP_LOCAL ? c->seg_local : pref[k] == HEAP_INVISIBLE ? c->seg_invisible
                                                                                             : c->seg_system;
            set |= VIDMM_SEGMENT_BIT(id);
            if ((seen & (1u << id)) || slot >= VIDMM_PREF_SLOTS)
                continue;
            seen |= 1u << id;
            p |= VIDMM_PREF(slot, id, 0);
            slot++;
        }
        if (!set)
            set = VIDMM_SEGMENT_BIT(c->seg_local) | VIDMM_SEGMENT_BIT(c->seg_invisible) | VIDMM_SEGMENT_BIT(c->seg_system);
        desc.info.supported_write_segment_set = set;
        desc.info.preferred_segment = p;
        desc.info.flags = pref[0] == HEAP_LOCAL || pref[0] == HEAP_SYSTEM ? VIDMM_ALLOC_CPU_VISIBLE : 0;
        c->imp->pref_first[pref[0] < 4 ? pref[0] : 3]++;
        char name[32];
        snprintf(name, sizeof name, "va-%" PRIx64, va);
        /* Created resident; when there is no room, created evicted and
         * made resident by the use below, which pages out what it must
         * (CreateResident itself fails rather than evict). */
        vidmm_status st = tr_create(c->t, &desc, 1, VIDMM_CREATE_RESIDENT, name, &x.a);
        if (st == VIDMM_E_NO_SEGMENT_SPACE || st == VIDMM_E_COMMIT_LIMIT) {
            c->imp->created_evicted++;
            st = tr_create(c->t, &desc, 1, 0, name, &x.a);
        }
        c->imp->allocations++;
        if (st < 0) {
            x.a = 0;
            pr->alloc_failed++;
            c->imp->alloc_failed++;
        } else {
            pr->alloc_bytes += size;
            c->imp->alloc_bytes += size;
        }
    }
    if (live_insert(&c->live[i], x)) {
        c->bad = 1;
        return;
    }
    /* The driver places it at creation: a make-resident, whose
     * reference is released at once (evict only if necessary), so it
     * stays resident until pressure pages it out. */
    use(c, pr, &x);
    if (!c->dry && x.a)
        tr_evict(c->t, pr->d, &x.a, 1, VIDMM_EVICT_ONLY_IF_NECESSARY, NULL);
}

static void destroy_at(struct rctx *c, uint32_t i, size_t k)
{
    if (!c->dry && c->live[i].l[k].a)
        tr_destroy(c->t, c->live[i].l[k].a);
    c->imp->proc[i].frees += !c->dry;
    live_remove(&c->live[i], k);
}

/* Why vidmm has x somewhere other than where the driver mapped it. */
static int why(struct rctx *c, struct rmv_proc *pr, const struct live *x, int got)
{
    if (got == 3)
        return RMV_WHY_NOT_RESIDENT;
    if (got == x->first)
        return RMV_WHY_PREFERENCE;    /* vidmm took the first preference, the driver another heap */
    uint32_t seg = x->first == HEAP_LOCAL ? c->seg_local : x->first == HEAP_INVISIBLE ? c->seg_invisible
                                                                                      : c->seg_system;
    struct vidmm_segment_info si;
    if (vidmm_segment_query(c->t->adapter, seg, &si) == VIDMM_OK && si.largest_free < x->size)
        return RMV_WHY_SPACE;
    struct vidmm_video_memory_info mi;
    enum vidmm_segment_group g = x->first == HEAP_SYSTEM ? VIDMM_SEGMENT_GROUP_NON_LOCAL : VIDMM_SEGMENT_GROUP_LOCAL;
    if (vidmm_query_video_memory_info(c->t->adapter, tr_handle(c->t, TR_PROC, pr->p), g, &mi) == VIDMM_OK &&
        mi.current_usage + x->size > mi.budget)
        return RMV_WHY_BUDGET;
    return RMV_WHY_OTHER;
}

/* A page-table update maps pages of x (process i) at physical address pa:
 * compare the heap the driver mapped with vidmm's placement. */
static void measure(struct rctx *c, uint32_t i, const struct live *x, const struct rmv_ev *e, uint64_t bytes)
{
    if (c->dry)
        return;
    struct rmv_import *imp = c->imp;
    struct rmv_proc *pr = &imp->proc[i];
    /* Physical address 0 is what the driver records for system memory
     * pages (their host addresses are not traced). */
    int heap = e->pa == 0 ? HEAP_SYSTEM
               : e->pa >= imp->local_base && e->pa - imp->local_base < imp->local_size ? HEAP_LOCAL
               : e->pa >= imp->invisible_base && e->pa - imp->invisible_base < imp->invisible_size ? HEAP_INVISIBLE
                                                                                                   : HEAP_SYSTEM;
    int got = placement_of(c, x->a);
    imp->pte_maps_matched++;
    imp->agree[heap][got]++;
    imp->agree_bytes[heap][got] += bytes;
    pr->agree[heap][got]++;
    pr->agree_bytes[heap][got] += bytes;
    if (got != heap) {
        int w = why(c, pr, x, got);
        pr->why[w]++;
        pr->why_bytes[w] += bytes;
    }
}

static const uint64_t page_bytes[8] = { 0, 4096, 65536, 262144, 1 << 20, 2 << 20, 0, 0 };

/* The process index of stream pid, or -1. */
static int stream_proc(const struct rmv_import *imp, uint64_t pid)
{
    for (uint32_t i = 0; i < imp->procs; i++)
        if (!imp->proc[i].inferred && imp->proc[i].pid == pid)
            return (int)i;
    return -1;
}

static void pass(struct rctx *c, const struct rmv_evs *v, uint32_t inferred)
{
    struct rmv_import *imp = c->imp;
    for (size_t i = 0; !c->bad && i < v->n; i++) {
        const struct rmv_ev *e = &v->e[i];
        int pi = stream_proc(imp, e->pid);
        if (e->type == RMV_TK_VIRTUAL_ALLOCATE && pi >= 0) {
            create(c, (uint32_t)pi, e->va, e->size, e->pref);
        } else if (e->type == RMV_TK_VIRTUAL_FREE && pi >= 0) {
            long k = find(&c->live[pi], e->va);
            if (k >= 0 && c->live[pi].l[k].va == e->va)
                destroy_at(c, (uint32_t)pi, (size_t)k);
        } else if (e->type == RMV_TK_RESOURCE_REFERENCE && pi >= 0) {
            long k = find(&c->live[pi], e->va);
            if (k < 0) {
                imp->reference_unmatched += !c->dry;
                continue;
            }
            struct rmv_proc *pr = proc_at(c, (uint32_t)pi);
            struct live x = c->live[pi].l[k];
            if (!e->unmap) {
                use(c, pr, &x);
                imp->references_add += !c->dry;
                pr->references_add += !c->dry;
            } else {
                if (!c->dry && x.a) {
                    vidmm_status st = tr_evict(c->t, pr->d, &x.a, 1, VIDMM_EVICT_ONLY_IF_NECESSARY, NULL);
                    imp->evict_failed += st < 0;
                }
                imp->references_remove += !c->dry;
                pr->references_remove += !c->dry;
            }
        } else if (e->type == RMV_TK_PAGE_TABLE_UPDATE && e->update_type != 1) {
            imp->pte_not_update += !c->dry && !e->unmap;
        } else if (e->type == RMV_TK_PAGE_TABLE_UPDATE) {
            uint64_t bytes = e->size * page_bytes[e->page_size & 7];
            if (e->unmap) {
                /* An unmap ends the inferred allocations it covers. */
                struct plive *pl = &c->live[inferred];
                for (size_t k = 0; k < pl->n;) {
                    if (pl->l[k].va < e->va + bytes && e->va < pl->l[k].va + pl->l[k].size)
                        destroy_at(c, inferred, k);
                    else
                        k++;
                }
                continue;
            }
            /* The kernel driver reports page-table updates from its own
             * stream under the system process's id, so they are matched
             * by address: first the streams' allocations. */
            int hit = -1;
            long hk = -1;
            for (uint32_t p = 0; p < imp->procs; p++) {
                if (imp->proc[p].inferred)
                    continue;
                long k = find(&c->live[p], e->va);
                if (k < 0)
                    continue;
                if (hit < 0) {
                    hit = (int)p;
                    hk = k;
                } else {
                    imp->ambiguous_maps += !c->dry;
                }
            }
            if (!c->dry && stream_proc(imp, e->pid) < 0)
                imp->pte_maps_other_process++;
            if (hit >= 0) {
                struct live x = c->live[hit].l[hk];
                measure(c, (uint32_t)hit, &x, e, bytes);
                continue;
            }
            /* Pages no stream describes: an inferred allocation of the
             * unattributed process - the mapped range, or the one it maps
             * again. */
            imp->pte_maps_unmatched += !c->dry;
            struct plive *pl = &c->live[inferred];
            long k = find(pl, e->va);
            struct rmv_proc *pr = proc_at(c, inferred);
            if (k >= 0) {
                struct live x = pl->l[k];
                use(c, pr, &x);
                measure(c, inferred, &x, e, bytes);
                if (!c->dry && x.a)
                    tr_evict(c->t, pr->d, &x.a, 1, VIDMM_EVICT_ONLY_IF_NECESSARY, NULL);
                continue;
            }
            for (size_t j = 0; j < pl->n;) {   /* mapped over: the old range is gone */
                if (pl->l[j].va < e->va + bytes && e->va < pl->l[j].va + pl->l[j].size)
                    destroy_at(c, inferred, j);
                else
                    j++;
            }
            imp->inferred_maps += !c->dry;
            create(c, inferred, e->va, bytes, imp->inferred_pref);
            k = find(pl, e->va);
            if (k >= 0) {
                struct live x = pl->l[k];
                measure(c, inferred, &x, e, bytes);
            }
        }
    }
}

int rmv_replay(struct tr *t, struct rmv_import *imp, void *state)
{
    struct rmv_evs *v = state;
    if (!t) {
        /* The session could not start: only free the events. */
        free(v ? v->e : NULL);
        free(v);
        return 1;
    }
    struct rctx c;
    memset(&c, 0, sizeof c);
    c.t = t;
    c.imp = imp;
    struct vidmm_adapter_info ai;
    vidmm_adapter_query_info(t->adapter, &ai);
    c.seg_local = 1;
    c.seg_invisible = 2;
    c.seg_system = ai.aperture_segment_id;
    c.belady = !strcmp(t->hdr.policy, "belady");
    snprintf(imp->policy, sizeof imp->policy, "%s", t->hdr.policy);
    /* Every process stream that allocates is a process; the inferred
     * allocations get the preference list the streams use most. */
    imp->procs = 0;
    for (uint32_t s = 0; s < imp->streams && imp->procs < RMV_MAX_STREAMS; s++)
        if (imp->stream[s].tokens[RMV_TK_VIRTUAL_ALLOCATE] && stream_proc(imp, imp->stream[s].process_id) < 0) {
            memset(&imp->proc[imp->procs], 0, sizeof imp->proc[0]);
            imp->proc[imp->procs++].pid = imp->stream[s].process_id;
        }
    uint32_t inferred = imp->procs++;
    memset(&imp->proc[inferred], 0, sizeof imp->proc[0]);
    imp->proc[inferred].inferred = 1;
    struct { uint8_t p[4]; uint64_t n; } prefs[64];
    uint32_t np = 0;
    memset(imp->inferred_pref, HEAP_NONE, sizeof imp->inferred_pref);
    imp->inferred_pref[0] = HEAP_INVISIBLE;
    for (size_t i = 0; i < v->n; i++) {
        if (v->e[i].type != RMV_TK_VIRTUAL_ALLOCATE)
            continue;
        uint32_t k;
        for (k = 0; k < np && memcmp(prefs[k].p, v->e[i].pref, 4); k++)
            ;
        if (k == np && np < 64) {
            memcpy(prefs[np].p, v->e[i].pref, 4);
            prefs[np++].n = 0;
        }
        if (k < np)
            prefs[k].n++;
    }
    for (uint32_t k = 0, best = 0; k < np; k++)
        if (prefs[k].n > prefs[best].n || k == best) {
            best = k;
            memcpy(imp->inferred_pref, prefs[k].p, 4);
        }

    /* The dry pass: numbering and uses. */
    c.dry = 1;
    pass(&c, v, inferred);
    for (uint32_t i = 0; i < imp->procs; i++) {
        c.live[i].n = 0;
        uint64_t pid = imp->proc[i].pid;
        int inf = imp->proc[i].inferred;
        memset(&imp->proc[i], 0, sizeof imp->proc[i]);
        imp->proc[i].pid = pid;
        imp->proc[i].inferred = inf;
    }
    if (!c.bad) {
        c.next_use = malloc((c.nuse + 1) * sizeof(*c.next_use));
        c.first_use = malloc(((size_t)c.serials + 1) * sizeof(*c.first_use));
        c.bad = !c.next_use || !c.first_use;
    }
    if (!c.bad) {
        for (uint32_t s = 0; s < c.serials; s++)
            c.first_use[s] = SIZE_MAX;
        /* Walking back: the next use of each allocation. */
        for (size_t k = c.nuse; k-- > 0;) {
            uint32_t s = c.use_serial[k];
            c.next_use[k] = c.first_use[s];
            c.first_use[s] = k;
            imp->reuses += c.next_use[k] != SIZE_MAX;
        }
        imp->uses = c.nuse;
    }
    /* The real pass. */
    c.dry = 0;
    c.serials = 0;
    c.use_at = 0;
    imp->allocations = imp->alloc_failed = imp->alloc_bytes = 0;
    memset(imp->pref_first, 0, sizeof imp->pref_first);
    if (!c.bad)
        pass(&c, v, inferred);
    if (c.bad)
        fprintf(stderr, "rmv: out of memory during the replay\n");
    for (uint32_t i = 0; i < imp->procs; i++)
        imp->frees += imp->proc[i].inferred ? 0 : imp->proc[i].frees;
    struct vidmm_residency_stats rs;
    if (vidmm_residency_get_stats(t->adapter, &rs) == VIDMM_OK) {
        imp->evictions = rs.evictions;
        imp->bytes_evicted = rs.bytes_evicted;
        imp->restores = rs.restores;
        imp->bytes_restored = rs.bytes_restored;
        imp->make_resident_over_budget = rs.over_budget;
    }
    for (uint32_t i = 0; i < RMV_MAX_PROCS; i++)
        free(c.live[i].l);
    free(c.use_serial);
    free(c.next_use);
    free(c.first_use);
    free(v->e);
    free(v);
    return c.bad;
}

/* ---- summary -------------------------------------------------------- */

static uint64_t agreed(const struct rmv_import *imp, int bytes)
{
    uint64_t s = 0;
    for (int h = 0; h < 3; h++)
        s += bytes ? imp->agree_bytes[h][h] : imp->agree[h][h];
    return s;
}

static uint64_t total(const struct rmv_import *imp, int bytes)
{
    uint64_t s = 0;
    for (int h = 0; h < 3; h++)
        for (int g = 0; g < 4; g++)
            s += bytes ? imp->agree_bytes[h][g] : imp->agree[h][g];
    return s;
}

static const char *const why_name[RMV_WHY_COUNT] = { "preference", "space", "budget", "not-resident", "other" };

static double pct(uint64_t a, uint64_t b)
{
    return b ? 100.0 * (double)a / (double)b : 100.0;
}

/* Agreement in heap h (maps or bytes) of one process, or of all (pr NULL). */
static void heap_agree(const struct rmv_import *imp, const struct rmv_proc *pr, int h, int bytes, uint64_t *ok,
                       uint64_t *all)
{
    *ok = *all = 0;
    for (uint32_t i = 0; i < imp->procs; i++) {
        const struct rmv_proc *q = &imp->proc[i];
        if (pr && q != pr)
            continue;
        for (int g = 0; g < 4; g++)
            *all += bytes ? q->agree_bytes[h][g] : q->agree[h][g];
        *ok += bytes ? q->agree_bytes[h][h] : q->agree[h][h];
    }
}

static void proc_label(const struct rmv_proc *pr, char *b, size_t n)
{
    if (pr->inferred)
        snprintf(b, n, "unattributed");
    else
        snprintf(b, n, "pid%" PRIu64, pr->pid);
}

static void pref_text(const uint8_t pref[4], char *b, size_t n)
{
    size_t u = 0;
    b[0] = '\0';
    for (int k = 0; k < 4 && pref[k] != HEAP_NONE && u < n; k++)
        u += (size_t)snprintf(b + u, n - u, "%s%s", k ? "," : "", heap_name[pref[k]]);
}

/* Per process and per heap: agreement by maps and bytes, why vidmm
 * disagrees, and the paging the replay did. */
static void report_processes(const struct rmv_import *imp, enum report_format fmt, FILE *f)
{
    char label[32], pref[48];
    pref_text(imp->inferred_pref, pref, sizeof pref);
    if (fmt == REPORT_JSON) {
        fprintf(f, "  \"adapter_replayed\": {\"local_scale\": %u, \"cpu_visible\": %" PRIu64 ", \"invisible\": %" PRIu64
                   ", \"system\": %" PRIu64 ", \"policy\": \"%s\"},\n",
                imp->local_scale, imp->seg_size[0], imp->seg_size[1], imp->seg_size[2], imp->policy);
        fprintf(f, "  \"paging\": {\"evictions\": %" PRIu64 ", \"bytes_evicted\": %" PRIu64 ", \"restores\": %" PRIu64
                   ", \"bytes_restored\": %" PRIu64 ", \"bytes_moved\": %" PRIu64 ", \"over_budget\": %" PRIu64
                   ", \"next_use_hints\": %" PRIu64 ", \"created_evicted\": %" PRIu64 ", \"uses\": %" PRIu64
                   ", \"reuses\": %" PRIu64 "},\n",
                imp->evictions, imp->bytes_evicted, imp->restores, imp->bytes_restored,
                imp->bytes_evicted + imp->bytes_restored, imp->make_resident_over_budget, imp->hints,
                imp->created_evicted, imp->uses, imp->reuses);
        fprintf(f, "  \"inferred\": {\"maps\": %" PRIu64 ", \"preference\": \"%s\", \"ambiguous_maps\": %" PRIu64 "},\n",
                imp->inferred_maps, pref, imp->ambiguous_maps);
        fprintf(f, "  \"heaps\": {");
        for (int h = 0; h < 3; h++) {
            uint64_t ok, all, okb, allb;
            heap_agree(imp, NULL, h, 0, &ok, &all);
            heap_agree(imp, NULL, h, 1, &okb, &allb);
            fprintf(f, "%s\"%s\": {\"maps\": %" PRIu64 ", \"agree\": %" PRIu64 ", \"bytes\": %" PRIu64
                       ", \"bytes_agree\": %" PRIu64 "}",
                    h ? ", " : "", heap_name[h], all, ok, allb, okb);
        }
        fprintf(f, "},\n  \"processes\": [");
        for (uint32_t i = 0; i < imp->procs; i++) {
            const struct rmv_proc *pr = &imp->proc[i];
            proc_label(pr, label, sizeof label);
            fprintf(f, "%s\n    {\"name\": \"%s\", \"pid\": %" PRIu64 ", \"inferred\": %s, \"allocations\": %" PRIu64
                       ", \"allocation_failures\": %" PRIu64 ", \"allocated_bytes\": %" PRIu64 ", \"frees\": %" PRIu64
                       ", \"references_add\": %" PRIu64 ", \"references_remove\": %" PRIu64 ", \"heaps\": {",
                    i ? "," : "", label, pr->pid, pr->inferred ? "true" : "false", pr->allocations, pr->alloc_failed,
                    pr->alloc_bytes, pr->frees, pr->references_add, pr->references_remove);
            for (int h = 0; h < 3; h++) {
                uint64_t ok, all, okb, allb;
                heap_agree(imp, pr, h, 0, &ok, &all);
                heap_agree(imp, pr, h, 1, &okb, &allb);
                fprintf(f, "%s\"%s\": {\"maps\": %" PRIu64 ", \"agree\": %" PRIu64 ", \"bytes\": %" PRIu64
                           ", \"bytes_agree\": %" PRIu64 ", \"vidmm\": {",
                        h ? ", " : "", heap_name[h], all, ok, allb, okb);
                for (int g = 0; g < 4; g++)
                    fprintf(f, "%s\"%s\": %" PRIu64, g ? ", " : "", placement_name[g], pr->agree[h][g]);
                fprintf(f, "}}");
            }
            fprintf(f, "}, \"disagreements\": {");
            for (int w = 0; w < RMV_WHY_COUNT; w++)
                fprintf(f, "%s\"%s\": {\"maps\": %" PRIu64 ", \"bytes\": %" PRIu64 "}", w ? ", " : "", why_name[w],
                        pr->why[w], pr->why_bytes[w]);
            fprintf(f, "}}");
        }
        fprintf(f, "],\n");
        return;
    }
    if (fmt == REPORT_CSV) {
        for (uint32_t i = 0; i < imp->procs; i++) {
            const struct rmv_proc *pr = &imp->proc[i];
            proc_label(pr, label, sizeof label);
            for (int h = 0; h < 3; h++) {
                uint64_t ok, all, okb, allb;
                heap_agree(imp, pr, h, 0, &ok, &all);
                heap_agree(imp, pr, h, 1, &okb, &allb);
                fprintf(f, "rmv,%s:%s,maps,%" PRIu64 "\nrmv,%s:%s,agree,%" PRIu64 "\nrmv,%s:%s,bytes,%" PRIu64
                           "\nrmv,%s:%s,bytes_agree,%" PRIu64 "\n",
                        label, heap_name[h], all, label, heap_name[h], ok, label, heap_name[h], allb, label,
                        heap_name[h], okb);
            }
            for (int w = 0; w < RMV_WHY_COUNT; w++)
                fprintf(f, "rmv,%s,disagree_%s_bytes,%" PRIu64 "\n", label, why_name[w], pr->why_bytes[w]);
        }
        fprintf(f, "rmv,paging,evictions,%" PRIu64 "\nrmv,paging,bytes_moved,%" PRIu64 "\n", imp->evictions,
                imp->bytes_evicted + imp->bytes_restored);
        return;
    }
    fprintf(f, "adapter replayed: CPU-visible %" PRIu64 " MiB, invisible %" PRIu64 " MiB (the file's local heaps%s%u), "
               "system %" PRIu64 " MiB; policy %s\n",
            imp->seg_size[0] >> 20, imp->seg_size[1] >> 20, imp->local_scale > 1 ? " / " : " x ", imp->local_scale,
            imp->seg_size[2] >> 20, imp->policy);
    fprintf(f, "unattributed: %" PRIu64 " page-table updates map pages no stream allocated: each mapped range is an "
               "allocation of process 'unattributed', preference %s (the streams' most common list; the file has none "
               "for them)%s\n",
            imp->inferred_maps, pref, imp->ambiguous_maps ? "; some mappings fall in two processes' allocations" : "");
    fprintf(f, "agreement by process and heap (page-table mappings, MiB):\n");
    fprintf(f, "  %-14s %-9s %17s %21s   %s\n", "process", "heap", "maps agree", "MiB agree", "vidmm: local/invisible/system/not-resident");
    for (uint32_t i = 0; i <= imp->procs; i++) {
        const struct rmv_proc *pr = i < imp->procs ? &imp->proc[i] : NULL;
        if (pr)
            proc_label(pr, label, sizeof label);
        else
            snprintf(label, sizeof label, "all");
        for (int h = 0; h < 3; h++) {
            uint64_t ok, all, okb, allb;
            heap_agree(imp, pr, h, 0, &ok, &all);
            heap_agree(imp, pr, h, 1, &okb, &allb);
            if (!all)
                continue;
            uint64_t m[4] = { 0, 0, 0, 0 };
            for (uint32_t j = 0; j < imp->procs; j++)
                if (!pr || &imp->proc[j] == pr)
                    for (int g = 0; g < 4; g++)
                        m[g] += imp->proc[j].agree[h][g];
            fprintf(f, "  %-14s %-9s %6" PRIu64 "/%-6" PRIu64 " %5.1f%% %7.1f/%-7.1f %5.1f%%   %" PRIu64 "/%" PRIu64
                       "/%" PRIu64 "/%" PRIu64 "\n",
                    label, heap_name[h], ok, all, pct(ok, all), (double)okb / 1048576.0, (double)allb / 1048576.0,
                    pct(okb, allb), m[0], m[1], m[2], m[3]);
        }
        if (!pr)
            continue;
        uint64_t any = 0;
        for (int w = 0; w < RMV_WHY_COUNT; w++)
            any += pr->why[w];
        if (!any)
            continue;
        fprintf(f, "  %-14s disagreements:", "");
        for (int w = 0; w < RMV_WHY_COUNT; w++)
            if (pr->why[w])
                fprintf(f, " %s %" PRIu64 " (%.1f MiB)", why_name[w], pr->why[w], (double)pr->why_bytes[w] / 1048576.0);
        fputc('\n', f);
    }
    fprintf(f, "uses (make-resident at creation, at a reference, at a mapping again): %" PRIu64 ", %" PRIu64
               " of them followed by another use of the same allocation\n",
            imp->uses, imp->reuses);
    fprintf(f, "paging: %" PRIu64 " evictions (%.1f MiB), %" PRIu64 " restores (%.1f MiB), %.1f MiB moved; %" PRIu64
               " make-resident over budget; %" PRIu64 " allocations created evicted (no room to create them "
               "resident)%s\n",
            imp->evictions, (double)imp->bytes_evicted / 1048576.0, imp->restores,
            (double)imp->bytes_restored / 1048576.0, (double)(imp->bytes_evicted + imp->bytes_restored) / 1048576.0,
            imp->make_resident_over_budget, imp->created_evicted, imp->hints ? " (next-use hints given: Belady's policy)" : "");
}

void rmv_report(const struct rmv_import *imp, enum report_format fmt, FILE *f)
{
    uint64_t n = total(imp, 0), ok = agreed(imp, 0), nb = total(imp, 1), okb = agreed(imp, 1);
    if (fmt == REPORT_CSV) {
        for (uint32_t s = 0; s < imp->streams; s++)
            for (int k = 0; k < RMV_TOKEN_TYPES; k++)
                if (imp->stream[s].tokens[k])
                    fprintf(f, "rmv,stream%u,%s,%" PRIu64 "\n", s, rmv_token_name[k], imp->stream[s].tokens[k]);
        fprintf(f, "rmv,replay,allocations,%" PRIu64 "\nrmv,replay,frees,%" PRIu64 "\nrmv,replay,references_add,%" PRIu64
                   "\nrmv,replay,references_remove,%" PRIu64 "\nrmv,agreement,page_table_maps,%" PRIu64
                   "\nrmv,agreement,agree,%" PRIu64 "\n",
                imp->allocations, imp->frees, imp->references_add, imp->references_remove, n, ok);
        report_processes(imp, fmt, f);
        return;
    }
    if (fmt == REPORT_JSON) {
        fprintf(f, "\"import\": {\"container\": \"%s\", \"adapter\": \"%s\", \"app_pid\": %" PRIu64
                   ",\n  \"heaps\": {\"local\": {\"base\": %" PRIu64 ", \"size\": %" PRIu64 "}, \"invisible\": {\"base\": %" PRIu64
                   ", \"size\": %" PRIu64 "}},\n  \"streams\": [",
                imp->container, imp->adapter, imp->app_pid, imp->local_base, imp->local_size, imp->invisible_base,
                imp->invisible_size);
        for (uint32_t s = 0; s < imp->streams; s++) {
            const struct rmv_stream_info *si = &imp->stream[s];
            fprintf(f, "%s\n    {\"process_id\": %u, \"version\": \"%u.%u\", \"bytes\": %" PRIu64 ", \"page_table_unmaps\": %" PRIu64
                       ", \"tokens\": {",
                    s ? "," : "", si->process_id, si->major, si->minor, si->bytes, si->unmaps);
            int first = 1;
            for (int k = 0; k < RMV_TOKEN_TYPES; k++)
                if (si->tokens[k]) {
                    fprintf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ", rmv_token_name[k], si->tokens[k]);
                    first = 0;
                }
            fprintf(f, "}}");
        }
        fprintf(f, "],\n  \"replay\": {\"allocations\": %" PRIu64 ", \"allocation_failures\": %" PRIu64
                   ", \"allocated_bytes\": %" PRIu64 ", \"frees\": %" PRIu64 ", \"references_add\": %" PRIu64
                   ", \"references_remove\": %" PRIu64 ", \"references_unmatched\": %" PRIu64
                   ", \"make_resident_failures\": %" PRIu64 ", \"evict_failures\": %" PRIu64 "},\n",
                imp->allocations, imp->alloc_failed, imp->alloc_bytes, imp->frees, imp->references_add,
                imp->references_remove, imp->reference_unmatched, imp->make_resident_failed, imp->evict_failed);
        fprintf(f, "  \"chunks\": {");
    for (uint32_t i = 0; i < imp->chunk_kinds; i++)
        fprintf(f, "%s\"%s\": {\"count\": %u, \"bytes\": %" PRIu64 ", \"read\": %s}", i ? ", " : "", imp->chunk[i].id,
                imp->chunk[i].count, imp->chunk[i].bytes, imp->chunk[i].skipped ? "false" : "true");
    fprintf(f, "},\n  \"anomalies\": {\"free_unknown\": %" PRIu64 ", \"alloc_duplicate\": %" PRIu64
               ", \"destroy_unknown\": %" PRIu64 ", \"bind_unknown\": %" PRIu64 ", \"create_duplicate\": %" PRIu64
               ", \"reference_unknown\": %" PRIu64 ", \"pte_outside_heaps\": %" PRIu64 "},\n",
            imp->anomalies.free_unknown, imp->anomalies.alloc_duplicate, imp->anomalies.destroy_unknown,
            imp->anomalies.bind_unknown, imp->anomalies.create_duplicate, imp->anomalies.reference_unknown,
            imp->anomalies.pte_outside_heaps);
    fprintf(f, "  \"agreement\": {\"page_table_maps\": %" PRIu64 ", \"agree\": %" PRIu64 ", \"bytes\": %" PRIu64
                   ", \"bytes_agree\": %" PRIu64 ", \"unmatched_maps\": %" PRIu64 ", \"other_process_maps\": %" PRIu64 ", \"not_update_maps\": %" PRIu64
                   ", \"matrix\": {",
                n, ok, nb, okb, imp->pte_maps_unmatched, imp->pte_maps_other_process, imp->pte_not_update);
        for (int h = 0; h < 3; h++) {
            fprintf(f, "%s\"%s\": {", h ? ", " : "", heap_name[h]);
            for (int g = 0; g < 4; g++)
                fprintf(f, "%s\"%s\": %" PRIu64, g ? ", " : "", placement_name[g], imp->agree[h][g]);
            fprintf(f, "}");
        }
        fprintf(f, "}},\n");
        report_processes(imp, fmt, f);
        uint32_t live = 0;
        for (uint32_t i = 0; i < imp->procs; i++)
            live += imp->proc[i].allocations > 0;
        fprintf(f, "  \"replayed_processes\": %u},\n", live);
        return;
    }
    fprintf(f, "== RMV import ==\n");
    rmv_decode_report(imp, f);
    uint32_t live_procs = 0;
    for (uint32_t i = 0; i < imp->procs; i++)
        live_procs += imp->proc[i].allocations > 0;
    fprintf(f, "replayed (%u processes: every stream that allocates, and the unattributed mappings; the application "
               "is pid %" PRIu64 "): %" PRIu64 " allocations (%" PRIu64 " failed, %" PRIu64
               " MiB), first preference local %" PRIu64 " / invisible %" PRIu64 " / system %" PRIu64 "; %" PRIu64
               " frees; references: %" PRIu64 " add -> make-resident (%" PRIu64 " failed), %" PRIu64
               " remove -> evict (%" PRIu64 " failed), %" PRIu64 " outside any allocation\n",
            live_procs, imp->app_pid, imp->allocations, imp->alloc_failed, imp->alloc_bytes >> 20, imp->pref_first[0],
            imp->pref_first[1], imp->pref_first[2], imp->frees, imp->references_add, imp->make_resident_failed,
            imp->references_remove, imp->evict_failed, imp->reference_unmatched);
    fprintf(f, "placement agreement: %" PRIu64 " of %" PRIu64 " page-table mappings (%.1f%%), %" PRIu64 " of %" PRIu64
               " MiB (%.1f%%)\n",
            ok, n, n ? 100.0 * (double)ok / (double)n : 0.0, okb >> 20, nb >> 20,
            nb ? 100.0 * (double)okb / (double)nb : 0.0);
    fprintf(f, "  %-14s %10s %10s %10s %13s\n", "trace \\ vidmm", "local", "invisible", "system", "not-resident");
    for (int h = 0; h < 3; h++)
        fprintf(f, "  %-14s %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %13" PRIu64 "\n", heap_name[h], imp->agree[h][0],
                imp->agree[h][1], imp->agree[h][2], imp->agree[h][3]);
    fprintf(f, "  (%" PRIu64 " mappings outside the streams' allocations, replayed as the unattributed process; %" PRIu64
               " reported by another process id; %" PRIu64 " discard/transfer updates not counted as mappings)\n",
            imp->pte_maps_unmatched, imp->pte_maps_other_process, imp->pte_not_update);
    report_processes(imp, fmt, f);
    fputc('\n', f);
}
