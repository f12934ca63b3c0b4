/*
 * integrity_test.c - allocation bytes survive every placement change.
 *
 * Each allocation is filled through lock with a seeded pattern.  A seeded
 * random walk (create, destroy, move, lock + verify + rewrite, flip) runs
 * on dgpu (64 KiB pages, CPU-visible and host-aperture memory, the
 * aperture) and wddm1 (4 KiB pages, invisible memory without a host
 * aperture, the AGP aperture), with the adapter and device checkers after
 * every step; after every move the bytes are verified through the CPU and,
 * where the GPU can address them, through softgpu_read_physical over the
 * physical ranges.  The same walks run again with
 * softgpu_inject_insufficient_dma() at random so paging buffers restart.
 * dgpu's driver takes the virtual paging ops, so its walks move content
 * through the system paging process (TRANSFER_VIRTUAL / FILL_VIRTUAL);
 * wddm1's does not (TRANSFER / FILL): both families are walked.
 */
#include "alloc_common.h"

#include <stdlib.h>
#include <string.h>

#define B(id) VIDMM_SEGMENT_BIT(id)

struct kind {
    uint32_t set, pref, flags;
    enum softgpu_alloc_kind softgpu_kind;   /* 0: explicit */
};

struct walk_cfg {
    const char *name;
    const char *preset;
    uint64_t sizes[SOFTGPU_MAX_SEGMENTS + 1];
    uint64_t page;           /* unit of random sizes */
    uint32_t max_pages;
    const struct kind *kinds;
    uint32_t nkinds;
    uint32_t steps;
    int keep_all_holes;      /* fragment segment 2 completely (no large hole) */
};

static const struct kind dgpu_kinds[] = {
    { B(1) | B(2) | B(3), 0, VIDMM_ALLOC_CPU_VISIBLE, 0 },
    { B(2), 0, VIDMM_ALLOC_CPU_VISIBLE, 0 },                              /* host aperture only */
    { B(2) | B(3), VIDMM_PREF(0, 2, 0), VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_ACCESSED_PHYSICALLY, 0 },
    { B(1) | B(2) | B(3), VIDMM_PREF(0, 2, 0), VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_PRIMARY, 0 },
    { B(3), 0, VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_ACCESSED_PHYSICALLY, 0 },
    { B(1) | B(3), VIDMM_PREF(0, 3, 0), VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_FROM_END_OF_SEGMENT, 0 },
    { 0, 0, 0, SOFTGPU_ALLOC_TEXTURE },
    { 0, 0, 0, SOFTGPU_ALLOC_CONSTANT },
    { 0, 0, 0, SOFTGPU_ALLOC_STAGING },
    { 0, 0, 0, SOFTGPU_ALLOC_PRIMARY },
    { 0, 0, 0, SOFTGPU_ALLOC_RING },
};

static const struct kind wddm1_kinds[] = {
    { B(1) | B(2) | B(4), VIDMM_PREF(0, 2, 0), VIDMM_ALLOC_CPU_VISIBLE, 0 },
    { B(2) | B(4), 0, VIDMM_ALLOC_CPU_VISIBLE, 0 },                        /* lock moves it out of 2 */
    { B(1) | B(2) | B(3) | B(4), 0, VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_ACCESSED_PHYSICALLY, 0 },
    { B(3), 0, VIDMM_ALLOC_CPU_VISIBLE, 0 },                              /* AGP */
    { B(1) | B(2) | B(4), VIDMM_PREF(0, 2, 0), VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_PRIMARY, 0 },
    { B(3) | B(4), VIDMM_PREF(0, 4, 0), VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_ACCESSED_PHYSICALLY, 0 },
    { 0, 0, 0, SOFTGPU_ALLOC_TEXTURE },
    { 0, 0, 0, SOFTGPU_ALLOC_CONSTANT },
    { 0, 0, 0, SOFTGPU_ALLOC_STAGING },
    { 0, 0, 0, SOFTGPU_ALLOC_PRIMARY },
    { 0, 0, 0, SOFTGPU_ALLOC_RING },
};

#define MAXA 40

struct walk_alloc {
    vidmm_handle h;
    uint64_t size;      /* placed size: the pattern covers it all */
    uint64_t seed;
    uint32_t set;
    int primary;
};

struct walk {
    struct ac_fixture f;
    const struct walk_cfg *cfg;
    uint64_t rng;
    struct walk_alloc al[MAXA];
    uint32_t n;
    uint64_t moves, gpu_bytes, cpu_bytes, lock_moves, skipped;
    uint32_t max_extents;    /* largest page set whose bytes were verified */
    int inject;
    int stop;
};

static int acceptable_no_room(vidmm_status st)
{
    return st == VIDMM_E_NO_SEGMENT_SPACE || st == VIDMM_E_COMMIT_LIMIT || st == VIDMM_E_TOO_LARGE;
}

/* Verify through the CPU (lock) and the GPU (physical ranges). */
static void verify_one(struct walk *w, struct walk_alloc *x, const char *when)
{
    struct vidmm_allocation_state s0 = ac_state(w->f.a, x->h);
    int g = ac_verify_gpu(w->f.sg, w->f.a, x->h, x->size, x->seed);
    if (g > 0 && s0.extent_count > w->max_extents)
        w->max_extents = s0.extent_count;
    if (g < 0) {
        fprintf(stderr, "  %s: GPU-visible bytes wrong (%s), segment %u\n", w->cfg->name, when, s0.segment_id);
        T_CHECK(g >= 0);
        w->stop = 1;
        return;
    }
    if (g > 0)
        w->gpu_bytes += x->size;
    if (s0.displayed)
        return; /* not locked while on screen: see allocation.lock_displayed_primary_not_moved */
    vidmm_status st = ac_verify(w->f.a, x->h, x->size, x->seed);
    if (acceptable_no_room(st)) {
        w->skipped++;
        return;
    }
    if (st != VIDMM_OK) {
        fprintf(stderr, "  %s: CPU verify (%s) in segment %u: %s\n", w->cfg->name, when, s0.segment_id,
                vidmm_status_str(st));
        T_ST(st, VIDMM_OK);
        w->stop = 1;
        return;
    }
    w->cpu_bytes += x->size;
    struct vidmm_allocation_state s1 = ac_state(w->f.a, x->h);
    if (s1.moves != s0.moves) {
        w->lock_moves++;
        if (ac_verify_gpu(w->f.sg, w->f.a, x->h, x->size, x->seed) < 0) {
            T_CHECK(!"bytes wrong after a lock-induced move");
            w->stop = 1;
        }
    }
}

static uint32_t random_target(struct walk *w, const struct walk_alloc *x)
{
    uint32_t ids[VIDMM_MAX_SEGMENTS + 1], n = 0;
    ids[n++] = 0;
    for (uint32_t id = 1; id < w->f.ai.segment_count; id++)
        if (x->set & B(id))
            ids[n++] = id;
    return ids[t_rand_range(&w->rng, n)];
}

static void step_create(struct walk *w)
{
    if (w->n >= MAXA)
        return;
    const struct walk_cfg *c = w->cfg;
    const struct kind *k = &c->kinds[t_rand_range(&w->rng, c->nkinds)];
    uint64_t size = (1 + t_rand_range(&w->rng, c->max_pages)) * c->page;
    if (t_rand_range(&w->rng, 4) == 0)
        size -= t_rand_range(&w->rng, c->page / 4096) * 4096 + 1 < size ? t_rand_range(&w->rng, 4096) : 0;
    struct softgpu_alloc_desc d;
    if (k->softgpu_kind) {
        memset(&d, 0, sizeof d);
        d.kind = k->softgpu_kind;
        d.size = size;
        d.cpu_visible = 1;
    } else {
        ac_explicit_desc(&d, k->set, k->pref, k->flags, size, 0);
    }
    vidmm_handle h;
    vidmm_status st = vidmm_allocation_create(w->f.a, &d, sizeof d, &h);
    if (acceptable_no_room(st))
        return;
    T_ST(st, VIDMM_OK);
    if (st < 0) {
        w->stop = 1;
        return;
    }
    struct vidmm_allocation_state s = ac_state(w->f.a, h);
    struct walk_alloc *x = &w->al[w->n];
    x->h = h;
    x->size = s.size;
    x->seed = t_rand(&w->rng);
    x->set = s.supported_segment_set;
    x->primary = (s.flags & VIDMM_ALLOC_PRIMARY) != 0;
    T_CHECK(s.flags & VIDMM_ALLOC_CPU_VISIBLE);
    st = ac_write(w->f.a, h, x->size, x->seed);
    if (acceptable_no_room(st)) {
        T_ST(vidmm_allocation_destroy(w->f.a, h), VIDMM_OK);
        w->skipped++;
        return;
    }
    T_ST(st, VIDMM_OK);
    w->n++;
    verify_one(w, x, "after create");
}

static void step_destroy(struct walk *w)
{
    if (!w->n)
        return;
    uint32_t i = (uint32_t)t_rand_range(&w->rng, w->n);
    T_ST(vidmm_allocation_destroy(w->f.a, w->al[i].h), VIDMM_OK);
    w->al[i] = w->al[--w->n];
}

static void step_move(struct walk *w)
{
    if (!w->n)
        return;
    struct walk_alloc *x = &w->al[t_rand_range(&w->rng, w->n)];
    uint32_t to = random_target(w, x);
    struct vidmm_allocation_state s0 = ac_state(w->f.a, x->h);
    vidmm_status st = vidmm_allocation_move(w->f.a, x->h, to);
    if (st == VIDMM_E_BUSY) {
        T_CHECK(s0.displayed);
        return;
    }
    if (acceptable_no_room(st)) {
        T_CHECK(ac_state(w->f.a, x->h).moves == s0.moves);
        w->skipped++;
        return;
    }
    T_ST(st, VIDMM_OK);
    struct vidmm_allocation_state s1 = ac_state(w->f.a, x->h);
    if (s1.moves != s0.moves)
        w->moves++;
    char when[64];
    snprintf(when, sizeof when, "after move %u -> %u", s0.segment_id, to);
    verify_one(w, x, when);
}

static void step_lock(struct walk *w)
{
    if (!w->n)
        return;
    struct walk_alloc *x = &w->al[t_rand_range(&w->rng, w->n)];
    if (ac_state(w->f.a, x->h).displayed)
        return;
    void *p, *q;
    vidmm_status st = vidmm_allocation_lock(w->f.a, x->h, &p);
    if (acceptable_no_room(st)) {
        w->skipped++;
        return;
    }
    T_ST(st, VIDMM_OK);
    if (st < 0)
        return;
    T_ST(vidmm_allocation_lock(w->f.a, x->h, &q), VIDMM_OK); /* nested: same pointer */
    T_CHECK(p == q);
    T_ST(vidmm_allocation_move(w->f.a, x->h, 0), VIDMM_E_BUSY); /* locked: not moved, even to where it is */
    T_ST(vidmm_allocation_unlock(w->f.a, x->h), VIDMM_OK);
    if (ac_pattern_find_mismatch(p, x->size, x->seed) != UINT64_MAX) {
        T_CHECK(!"pattern wrong under lock");
        w->stop = 1;
    }
    w->cpu_bytes += x->size;
    x->seed = t_rand(&w->rng);
    ac_pattern_fill(p, x->size, x->seed);
    T_ST(vidmm_allocation_unlock(w->f.a, x->h), VIDMM_OK);
    int g = ac_verify_gpu(w->f.sg, w->f.a, x->h, x->size, x->seed);
    T_CHECK(g >= 0);
    if (g > 0)
        w->gpu_bytes += x->size;
}

static void step_flip(struct walk *w)
{
    uint32_t src = (uint32_t)t_rand_range(&w->rng, 3);
    vidmm_handle h = VIDMM_HANDLE_NULL;
    if (w->n && t_rand_range(&w->rng, 4) != 0) {
        struct walk_alloc *x = &w->al[t_rand_range(&w->rng, w->n)];
        h = x->h;
        vidmm_status st = vidmm_adapter_flip(w->f.a, src, h);
        if (!x->primary) {
            T_ST(st, VIDMM_E_NOT_SUPPORTED);
            return;
        }
        if (acceptable_no_room(st)) {
            w->skipped++;
            return;
        }
        T_ST(st, VIDMM_OK);
        struct vidmm_allocation_state s = ac_state(w->f.a, h);
        T_EQ(s.displayed, 1);
        if (s.segment_id == 0 || s.segment_id == w->f.ai.aperture_segment_id)
            T_EQ(s.aperture_mapped, 1);
        verify_one(w, x, "after flip");
        return;
    }
    T_ST(vidmm_adapter_flip(w->f.a, src, VIDMM_HANDLE_NULL), VIDMM_OK);
}

static void verify_all(struct walk *w, const char *when)
{
    for (uint32_t i = 0; i < w->n && !w->stop; i++)
        verify_one(w, &w->al[i], when);
}

static void run_walk(const struct walk_cfg *cfg, int inject)
{
    struct walk *w = calloc(1, sizeof *w);
    if (!w)
        return;
    w->cfg = cfg;
    w->inject = inject;
    w->rng = t_seed() ^ (uint64_t)(uintptr_t)cfg->name[0] * 0x1000193u ^ (uint64_t)inject << 40 ^ cfg->steps;
    if (ac_open(&w->f, cfg->preset, cfg->sizes, AC_MIB(96))) {
        free(w);
        return;
    }
    /* Fragment the page-set segment first: holes of one page between
     * survivors, so early page sets take several extents. */
    static vidmm_handle frag[1024];
    uint32_t nf = ac_fragment(w->f.a, 2, cfg->page, frag, 1024);
    if (!cfg->keep_all_holes) {
        for (uint32_t i = nf / 2; i < nf; i++) /* keep half of the survivors: some large holes */
            T_ST(vidmm_allocation_destroy(w->f.a, frag[i]), VIDMM_OK);
        nf /= 2;
    }
    uint32_t steps = cfg->steps * t_scale();
    for (uint32_t step = 0; step < steps && !w->stop; step++) {
        if (inject && t_rand_range(&w->rng, 3) == 0)
            softgpu_inject_insufficient_dma(w->f.sg, 1 + (uint32_t)t_rand_range(&w->rng, 4));
        uint64_t op = t_rand_range(&w->rng, 100);
        if (op < 22)
            step_create(w);
        else if (op < 34)
            step_destroy(w);
        else if (op < 70)
            step_move(w);
        else if (op < 85)
            step_lock(w);
        else if (op < 97)
            step_flip(w);
        else
            verify_all(w, "sweep");
        if (step == steps / 2)
            ac_destroy_all(w->f.a, frag, nf), nf = 0;
        if (CHECK_ADAPTER(w->f.a) || softgpu_check(w->f.sg)) {
            T_EQ(softgpu_check(w->f.sg), 0);
            fprintf(stderr, "  %s: broken after step %u\n", cfg->name, step);
            break;
        }
        if (t_current_failures())
            break;
    }
    verify_all(w, "final");
    struct vidmm_adapter_info ai;
    T_ST(vidmm_adapter_query_info(w->f.a, &ai), VIDMM_OK);
    if (inject)
        T_CHECK(ai.paging_restarts > 0);
    /* dgpu moves content through the system paging process's scratch
     * window; wddm1's driver does not take the virtual ops. */
    int virt = strcmp(cfg->preset, "dgpu") == 0;
    T_CHECK(ai.paging_ops[virt ? VIDMM_PAGING_TRANSFER_VIRTUAL : VIDMM_PAGING_TRANSFER] > 0);
    T_CHECK(ai.paging_ops[virt ? VIDMM_PAGING_FILL_VIRTUAL : VIDMM_PAGING_FILL] > 0);
    T_EQ_U64(ai.paging_ops[virt ? VIDMM_PAGING_TRANSFER : VIDMM_PAGING_TRANSFER_VIRTUAL], 0);
    T_EQ_U64(ai.paging_ops[virt ? VIDMM_PAGING_FILL : VIDMM_PAGING_FILL_VIRTUAL], 0);
    T_CHECK(w->moves > 0);
    T_CHECK(w->max_extents > 1);
    printf("integrity.%s%s: %u steps, %llu moves (+%llu by lock), %llu MiB verified by CPU, %llu MiB by GPU reads, "
           "max %u extents, %llu paging restarts, %llu no-room skips\n",
           cfg->name, inject ? "+restarts" : "", steps, (unsigned long long)w->moves,
           (unsigned long long)w->lock_moves, (unsigned long long)(w->cpu_bytes >> 20),
           (unsigned long long)(w->gpu_bytes >> 20), w->max_extents, (unsigned long long)ai.paging_restarts,
           (unsigned long long)w->skipped);
    ac_destroy_all(w->f.a, frag, nf);
    ac_close(&w->f);
    free(w);
}

static const struct walk_cfg dgpu_cfg = {
    "dgpu", "dgpu", { 0, AC_MIB(8), AC_MIB(16), AC_MIB(64) }, AC_KIB(64), 20,
    dgpu_kinds, sizeof dgpu_kinds / sizeof dgpu_kinds[0], 2500, 1
};
static const struct walk_cfg wddm1_cfg = {
    "wddm1", "wddm1", { 0, AC_MIB(4), AC_MIB(8), AC_MIB(8), AC_MIB(32) }, AC_KIB(4), 200,
    wddm1_kinds, sizeof wddm1_kinds / sizeof wddm1_kinds[0], 2500, 1
};

static void walk_dgpu(void) { run_walk(&dgpu_cfg, 0); }
static void walk_wddm1(void) { run_walk(&wddm1_cfg, 0); }
static void walk_dgpu_restarts(void) { run_walk(&dgpu_cfg, 1); }
static void walk_wddm1_restarts(void) { run_walk(&wddm1_cfg, 1); }

/* A fixed tour through every kind of placement, page sets of several
 * extents included, checking the bytes by CPU and GPU at each stop. */
static void move_tour(void)
{
    static const uint64_t sizes[SOFTGPU_MAX_SEGMENTS + 1] = { 0, AC_MIB(8), AC_MIB(16), AC_MIB(64) };
    struct ac_fixture f;
    if (ac_open(&f, "dgpu", sizes, AC_MIB(96)))
        return;
    static vidmm_handle frag[512];
    uint32_t nf = ac_fragment(f.a, 2, AC_KIB(64), frag, 512);
    uint64_t seed = t_seed();
    const uint64_t size = AC_KIB(576);
    struct { uint32_t flags; uint32_t path[8]; } tours[] = {
        { VIDMM_ALLOC_CPU_VISIBLE, { 2, 1, 0, 2, 3, 1, 2, 0 } },
        { VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_ACCESSED_PHYSICALLY, { 3, 1, 0, 3, 2, 3, 0, 1 } },
        { VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_PRIMARY, { 0, 1, 3, 2, 0, 3, 1, 0 } },
    };
    uint64_t verified = 0;
    for (size_t t = 0; t < sizeof tours / sizeof tours[0]; t++) {
        vidmm_handle h;
        T_ST(ac_create(f.a, B(1) | B(2) | B(3), VIDMM_PREF(0, 1, 0), tours[t].flags, size, &h), VIDMM_OK);
        uint64_t s = seed + t;
        T_ST(ac_write(f.a, h, size, s), VIDMM_OK);
        for (int i = 0; i < 8; i++) {
            uint32_t to = tours[t].path[i];
            T_ST(vidmm_allocation_move(f.a, h, to), VIDMM_OK);
            struct vidmm_allocation_state st = ac_state(f.a, h);
            int ap = (tours[t].flags & VIDMM_ALLOC_ACCESSED_PHYSICALLY) != 0;
            T_EQ(st.segment_id, to == 3 && !ap ? 0u : to == 0 && ap ? 3u : to);
            if (to == 2 && !(tours[t].flags & (VIDMM_ALLOC_ACCESSED_PHYSICALLY | VIDMM_ALLOC_PRIMARY)) && nf)
                T_CHECK(st.extent_count > 1);
            int g = ac_verify_gpu(f.sg, f.a, h, size, s);
            T_CHECK(g >= 0);
            if (to == 1 || to == 2 || (to == 3 && ap))
                T_EQ(g, 1);
            T_ST(ac_verify(f.a, h, size, s), VIDMM_OK);
            T_EQ(ac_state(f.a, h).segment_id, st.segment_id); /* dgpu: every place is CPU-reachable */
            if (tours[t].flags & VIDMM_ALLOC_PRIMARY) {
                T_ST(vidmm_adapter_flip(f.a, 0, h), VIDMM_OK);
                T_EQ(ac_verify_gpu(f.sg, f.a, h, size, s), 1); /* scanned out: GPU-addressable */
                T_ST(vidmm_adapter_flip(f.a, 0, VIDMM_HANDLE_NULL), VIDMM_OK);
            }
            verified += 2 * size;
            CHECK_ADAPTER(f.a);
            T_EQ(softgpu_check(f.sg), 0);
        }
        T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_OK);
        /* The contiguous tours need room in segment 2. */
        ac_destroy_all(f.a, frag, nf);
        nf = 0;
    }
    printf("integrity.move_tour: 24 moves, %llu KiB verified\n", (unsigned long long)(verified >> 10));
    ac_close(&f);
}

void suite_integrity(void);
void suite_integrity(void)
{
    t_run("integrity.move_tour", move_tour);
    t_run("integrity.walk_dgpu", walk_dgpu);
    t_run("integrity.walk_wddm1", walk_wddm1);
    t_run("integrity.walk_dgpu_restarts", walk_dgpu_restarts);
    t_run("integrity.walk_wddm1_restarts", walk_wddm1_restarts);
}
