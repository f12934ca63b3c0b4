/*
 * share_test.c - shared allocations (vidmm/share.h, docs/SHARING.md):
 * one allocation held by two processes, each through its own handle.
 *
 * Why a suite of its own: sharing crosses every per-process view the
 * isolation suite keeps apart - handles, GPU VA, residency lists, CPU
 * locks, budgets - so each is exercised here with two holders, and after
 * every step both checkers (vidmm_adapter_check, which walks the shares
 * and holders, and vidmm_adapter_check_rules) must be clean.
 *
 * Covered: export/open/map/make-resident in two processes with the same
 * bytes through both (CPU locks and GPU CHECKSUM in each process's own
 * virtual context); destroy order creator-first and opener-first; death
 * of the creator's process and of the opener's (with a lock held);
 * the processes' private, owned and hold lists and the allocation's
 * mapping processes as holders come and go;
 * eviction by one holder that the other's references keep resident;
 * CurrentUsage counted to one holder (D53) and adopted by the other
 * when it lets go; refusals that change nothing (unshareable
 * allocations, bad and dead tokens, bad handles, foreign processes, a
 * second open by a holder, a close while locked).  The out-of-memory
 * sweep of the new entries is in oom_test.c ("oom.share").
 */
#include "iso_common.h"
#include "softgpu_fixture.h"
#include "model/objects.h"   /* share.checker corrupts the state the walkers check */
#include "handle/lookup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SSIZE (1 * MIB)

/* Both checkers. */
static int all_checked(struct iso_fx *f)
{
    char rep[2048];
    int e = iso_checked(f);
    int r = vidmm_adapter_check_rules(f->a, rep, sizeof rep);
    if (r)
        fprintf(stderr, "rules: %s\n", rep);
    return e + r;
}

static vidmm_handle shared_alloc(struct iso_fx *f, struct iso_proc *p, uint32_t flags)
{
    struct softgpu_alloc_desc d;
    softgpu_desc(&d, SOFTGPU_ALLOC_EXPLICIT, VIDMM_SEGMENT_BIT(1), SSIZE, VIDMM_ALLOC_CPU_VISIBLE);
    vidmm_handle h = 0;
    T_ST(vidmm_device_allocation_create(f->a, p->dev, &d, sizeof(d), flags, &h), VIDMM_OK);
    return h;
}

/* Fill h with pattern through p's device lock; or check it holds pattern
 * at every word (returns 1 when it does). */
static void cpu_fill(struct iso_fx *f, struct iso_proc *p, vidmm_handle h, uint32_t pattern)
{
    void *c = NULL;
    T_ST(vidmm_device_lock(f->a, p->dev, h, &c), VIDMM_OK);
    for (uint64_t k = 0; c && k < SSIZE / 4; k++)
        ((uint32_t *)c)[k] = pattern;
    T_ST(vidmm_device_unlock(f->a, p->dev, h), VIDMM_OK);
}

static int cpu_holds(struct iso_fx *f, struct iso_proc *p, vidmm_handle h, uint32_t pattern)
{
    void *c = NULL;
    if (vidmm_device_lock(f->a, p->dev, h, &c) != VIDMM_OK || !c)
        return 0;
    int ok = 1;
    for (uint64_t k = 0; ok && k < SSIZE / 4; k++)
        ok = ((uint32_t *)c)[k] == pattern;
    T_ST(vidmm_device_unlock(f->a, p->dev, h), VIDMM_OK);
    return ok;
}

static uint64_t usage_of(struct iso_fx *f, struct iso_proc *p)
{
    struct vidmm_video_memory_info vi;
    T_ST(vidmm_query_video_memory_info(f->a, p->proc, VIDMM_SEGMENT_GROUP_LOCAL, &vi), VIDMM_OK);
    return vi.current_usage;
}

static uint64_t live_allocations(struct iso_fx *f)
{
    struct vidmm_adapter_info ai;
    T_ST(vidmm_adapter_query_info(f->a, &ai), VIDMM_OK);
    return ai.live_allocations;
}

static struct vidmm_share_info info_of(struct iso_fx *f, vidmm_handle h)
{
    struct vidmm_share_info si;
    memset(&si, 0, sizeof si);
    T_ST(vidmm_share_query(f->a, h, &si), VIDMM_OK);
    return si;
}

/* The handle p's VA space reports at va. */
static vidmm_handle va_names(struct iso_fx *f, struct iso_proc *p, uint64_t va)
{
    struct vidmm_gpuva_range r;
    uint32_t n = 0;
    T_ST(vidmm_gpuva_query(f->a, p->proc, va, &r, 1, &n), VIDMM_OK);
    return n == 1 && r.va == va && r.state == 2 ? r.allocation : VIDMM_HANDLE_NULL;
}

/* Two processes, one shared allocation: A creates and exports, B opens;
 * both map, list and lock it; the bytes are one. */
struct two {
    struct iso_fx f;
    struct iso_proc A, B;
    vidmm_handle ha, hb;
    uint64_t va_a, va_b;
    struct vidmm_share_token tok;
};

static int two_open(struct two *t)
{
    if (iso_open(&t->f, "dgpu", 0, 0, 1))
        return -1;
    iso_new_proc(&t->f, &t->A);
    iso_new_proc(&t->f, &t->B);
    t->ha = shared_alloc(&t->f, &t->A, VIDMM_CREATE_SHARED);
    T_EQ(all_checked(&t->f), 0);
    T_ST(vidmm_share_export(t->f.a, t->A.proc, t->ha, &t->tok), VIDMM_OK);
    T_CHECK(t->tok.value[0] | t->tok.value[1]);
    T_ST(vidmm_share_open(t->f.a, t->B.proc, &t->tok, &t->hb), VIDMM_OK);
    T_CHECK(t->hb != t->ha && t->hb != VIDMM_HANDLE_NULL);
    T_EQ(all_checked(&t->f), 0);
    t->va_a = iso_map(&t->f, &t->A, t->ha, SSIZE);
    t->va_b = iso_map(&t->f, &t->B, t->hb, SSIZE);
    iso_mr(&t->f, &t->A, &t->ha, 1, VIDMM_OK);
    iso_mr(&t->f, &t->B, &t->hb, 1, VIDMM_OK);
    T_EQ(all_checked(&t->f), 0);
    return 0;
}

static void gpu_sum(struct two *t, struct iso_proc *p, vidmm_handle h, uint64_t va, uint32_t pattern)
{
    iso_gpu_sums(&t->f, p, &h, &va, 1, SSIZE, 0, iso_fill_sum(SSIZE, pattern));
}

static void share_basic(void)
{
    struct two t;
    if (two_open(&t))
        return;
    struct iso_fx *f = &t.f;
    /* Each process's VA space names it by that process's handle. */
    T_EQ(va_names(f, &t.A, t.va_a), t.ha);
    T_EQ(va_names(f, &t.B, t.va_b), t.hb);
    struct vidmm_share_info sa = info_of(f, t.ha), sb = info_of(f, t.hb);
    T_EQ(sa.holders, 2);
    T_EQ(sb.holders, 2);
    T_EQ(sa.is_creator, 1);
    T_EQ(sb.is_creator, 0);
    T_EQ(sb.process, t.B.proc);
    T_EQ(sa.exports, 1);
    /* Same bytes: A writes through its lock, B reads through its lock and
     * through its GPU VA, and the other way round. */
    cpu_fill(f, &t.A, t.ha, 0x5A5A0001u);
    T_CHECK(cpu_holds(f, &t.B, t.hb, 0x5A5A0001u));
    gpu_sum(&t, &t.B, t.hb, t.va_b, 0x5A5A0001u);
    gpu_sum(&t, &t.A, t.ha, t.va_a, 0x5A5A0001u);
    cpu_fill(f, &t.B, t.hb, 0x5A5A0002u);
    T_CHECK(cpu_holds(f, &t.A, t.ha, 0x5A5A0002u));
    gpu_sum(&t, &t.A, t.ha, t.va_a, 0x5A5A0002u);
    /* A GPU write in B's context, read in A's. */
    {
        uint8_t buf[64];
        struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
        T_ST(softgpu_cmd_fill(&cb, t.va_b, SSIZE, 0x5A5A0003u), VIDMM_OK);
        iso_run_virtual(f, &t.B, &cb);
    }
    gpu_sum(&t, &t.A, t.ha, t.va_a, 0x5A5A0003u);
    T_CHECK(cpu_holds(f, &t.A, t.ha, 0x5A5A0003u));
    T_EQ(all_checked(f), 0);
    /* fdinfo: both holders count it, as shared (1 MiB in vram0). */
    {
        char buf[4096];
        size_t need = 0;
        T_ST(vidmm_process_fdinfo(f->a, t.B.proc, buf, sizeof buf, &need), VIDMM_OK);
        const char *sh = strstr(buf, "drm-shared-vram0:");
        T_CHECK(sh != NULL && strtoull(sh + strlen("drm-shared-vram0:"), NULL, 10) >= SSIZE / 1024);
        T_ST(vidmm_process_fdinfo(f->a, t.A.proc, buf, sizeof buf, &need), VIDMM_OK);
        sh = strstr(buf, "drm-shared-vram0:");
        T_CHECK(sh != NULL && strtoull(sh + strlen("drm-shared-vram0:"), NULL, 10) >= SSIZE / 1024);
    }
    /* The opener exports the same token. */
    struct vidmm_share_token t2;
    T_ST(vidmm_share_export(f->a, t.B.proc, t.hb, &t2), VIDMM_OK);
    T_CHECK(!memcmp(&t2, &t.tok, sizeof t2));
    T_EQ(info_of(f, t.ha).exports, 2);
    iso_close(f);
}

/* D53: usage counts to one holder - the one whose make-resident brought
 * it in - and the other adopts it at its next make-resident once the
 * first lets go. */
static void share_budget(void)
{
    struct two t;
    if (two_open(&t))
        return;
    struct iso_fx *f = &t.f;
    uint64_t ua = usage_of(f, &t.A), ub = usage_of(f, &t.B);
    T_CHECK(ua >= SSIZE);   /* A's own aux allocation counts too */
    /* B's usage is its aux allocation alone: B holds nothing else. */
    T_ST(vidmm_allocation_destroy(f->a, t.ha), VIDMM_OK);   /* A lets go */
    T_EQ(usage_of(f, &t.A), ua - SSIZE);
    T_EQ(usage_of(f, &t.B), ub);                            /* unowned until B's next make-resident */
    T_EQ(all_checked(f), 0);
    iso_mr(f, &t.B, &t.hb, 1, VIDMM_OK);
    T_EQ(usage_of(f, &t.B), ub + SSIZE);
    T_EQ(all_checked(f), 0);
    iso_close(f);
}

/* One holder's evict drops its own references: the other holder's keep
 * the allocation resident; once both let go of their lists it is
 * evicted, and restored with the same bytes. */
static void share_evict(void)
{
    struct two t;
    if (two_open(&t))
        return;
    struct iso_fx *f = &t.f;
    cpu_fill(f, &t.A, t.ha, 0x0E0E0001u);
    uint32_t seg = softgpu_alloc_state(f->a, t.ha).segment_id;
    T_CHECK(seg == 1);
    struct vidmm_evict_args ea = { &t.ha, 1, 0, 0 };
    T_ST(vidmm_evict(f->a, t.A.dev, &ea), VIDMM_OK);
    T_EQ(softgpu_alloc_state(f->a, t.hb).segment_id, 1);    /* B's reference keeps it */
    T_EQ(all_checked(f), 0);
    /* A cannot evict it again (no reference left on A's list), nothing changes. */
    T_ST(vidmm_evict(f->a, t.A.dev, &ea), VIDMM_E_STATE);
    struct vidmm_evict_args eb = { &t.hb, 1, 0, 0 };
    T_ST(vidmm_evict(f->a, t.B.dev, &eb), VIDMM_OK);
    T_EQ(softgpu_alloc_state(f->a, t.hb).segment_id, 0);    /* nobody lists it: evicted */
    T_EQ(all_checked(f), 0);
    iso_mr(f, &t.B, &t.hb, 1, VIDMM_OK);
    T_EQ(softgpu_alloc_state(f->a, t.ha).segment_id, 1);
    gpu_sum(&t, &t.B, t.hb, t.va_b, 0x0E0E0001u);
    gpu_sum(&t, &t.A, t.ha, t.va_a, 0x0E0E0001u);       /* A's mapping follows the restore */
    T_EQ(all_checked(f), 0);
    iso_close(f);
}

/* Destroy orders: creator first, then opener; and opener first. */
static void share_destroy_order(int creator_first)
{
    struct two t;
    if (two_open(&t))
        return;
    struct iso_fx *f = &t.f;
    cpu_fill(f, &t.A, t.ha, 0xD0D00000u | (uint32_t)creator_first);
    uint64_t live = live_allocations(f);
    struct iso_proc *first = creator_first ? &t.A : &t.B, *second = creator_first ? &t.B : &t.A;
    vidmm_handle h1 = creator_first ? t.ha : t.hb, h2 = creator_first ? t.hb : t.ha;
    uint64_t va1 = creator_first ? t.va_a : t.va_b, va2 = creator_first ? t.va_b : t.va_a;
    T_ST(vidmm_allocation_destroy(f->a, h1), VIDMM_OK);
    T_EQ(live_allocations(f), live);                      /* still held */
    struct vidmm_allocation_state st;
    T_ST(vidmm_allocation_query(f->a, h1, &st), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_allocation_destroy(f->a, h1), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_share_query(f->a, h1, &(struct vidmm_share_info){ 0 }), VIDMM_E_INVALID_HANDLE);
    iso_mr(f, first, &h1, 1, VIDMM_E_INVALID_HANDLE);   /* its device's fast table forgot it too */
    T_EQ(va_names(f, first, va1), VIDMM_HANDLE_NULL);     /* the closer's mapping went */
    T_EQ(va_names(f, second, va2), h2);
    struct vidmm_share_info si = info_of(f, h2);
    T_EQ(si.holders, 1);
    T_EQ(si.creator_holds, (uint32_t)!creator_first);
    /* The allocation iterator names it by the remaining holder's handle. */
    {
        uint64_t cur = 0;
        struct vidmm_allocation_item it;
        int found = 0;
        while (vidmm_allocation_iterate(f->a, NULL, &cur, &it) == VIDMM_OK)
            if (it.size == SSIZE && (it.flags & VIDMM_ALLOC_CPU_VISIBLE) && it.process == second->proc)
                found += it.handle == h2;
        T_EQ(found, 1);
    }
    T_CHECK(cpu_holds(f, second, h2, 0xD0D00000u | (uint32_t)creator_first));
    gpu_sum(&t, second, h2, va2, 0xD0D00000u | (uint32_t)creator_first);
    T_EQ(all_checked(f), 0);
    /* The closer may open it again while it lives (a new handle). */
    vidmm_handle again = 0;
    T_ST(vidmm_share_open(f->a, first->proc, &t.tok, &again), VIDMM_OK);
    T_CHECK(again != h1);
    T_CHECK(cpu_holds(f, first, again, 0xD0D00000u | (uint32_t)creator_first));
    T_ST(vidmm_allocation_destroy(f->a, again), VIDMM_OK);
    T_EQ(all_checked(f), 0);
    /* The last holder lets go: the allocation and its token are gone. */
    T_ST(vidmm_allocation_destroy(f->a, h2), VIDMM_OK);
    T_EQ(live_allocations(f), live - 1);
    T_EQ(va_names(f, second, va2), VIDMM_HANDLE_NULL);
    vidmm_handle h = 0x1234;
    T_ST(vidmm_share_open(f->a, first->proc, &t.tok, &h), VIDMM_E_INVALID_HANDLE);
    T_EQ(h, 0x1234);
    T_EQ(all_checked(f), 0);
    iso_close(f);
}

static void share_destroy_creator_first(void) { share_destroy_order(1); }
static void share_destroy_opener_first(void) { share_destroy_order(0); }

/* The processes' own lists (private allocations it created, allocations
 * it owns for residency, its holds) and the allocation's list of mapping
 * processes follow the holds: the creator's close takes the allocation
 * off its private list and, as owner, off its owned list; the opener
 * that makes it resident next owns it; a process's teardown lets go of
 * its own holds only. */
static struct vidmm_process *proc_of(struct iso_fx *f, vidmm_handle h)
{
    struct vidmm_process *p;
    vidmm_for_each_process(f->a, p)
        if (p->self == h)
            return p;
    return NULL;
}

static int maps(const struct vidmm_allocation *al, const struct vidmm_process *p)
{
    for (const struct vidmm_va_user *u = al->va_map.users; u; u = u->next)
        if (u->process == p)
            return 1;
    return 0;
}

static void share_process_lists(void)
{
    struct two t;
    if (two_open(&t))
        return;
    struct iso_fx *f = &t.f;
    struct vidmm_process *pa = proc_of(f, t.A.proc), *pb = proc_of(f, t.B.proc);
    struct vidmm_allocation *al = f->a->sharing.shares ? f->a->sharing.shares->al : NULL;
    T_CHECK(pa && pb && al);
    if (!pa || !pb || !al)
        return;
    T_EQ(al->private_process, t.A.proc);
    T_EQ(al->res.pe.process, t.A.proc);   /* A's make-resident brought it in */
    T_CHECK(maps(al, pa) && maps(al, pb));
    T_EQ(pa->sharing.share_hold_count, 1);
    T_EQ(pb->sharing.share_hold_count, 1);
    uint64_t a_priv = pa->private_allocations, a_owned = pa->res.owned_allocations;
    uint64_t b_priv = pb->private_allocations, b_owned = pb->res.owned_allocations;
    /* The creator lets go. */
    T_ST(vidmm_allocation_destroy(f->a, t.ha), VIDMM_OK);
    T_EQ(al->private_process, 0);
    T_EQ(pa->private_allocations, a_priv - 1);
    T_EQ(pa->res.owned_allocations, a_owned - 1);
    T_EQ(al->res.pe.process, 0);
    T_CHECK(!maps(al, pa) && maps(al, pb));
    T_EQ(pa->sharing.share_hold_count, 0);
    T_EQ(pb->private_allocations, b_priv);   /* the openers' now, on no private list */
    T_EQ(all_checked(f), 0);
    /* The opener's make-resident takes it: on B's owned list. */
    iso_mr(f, &t.B, &t.hb, 1, VIDMM_OK);
    T_EQ(al->res.pe.process, t.B.proc);
    T_EQ(pb->res.owned_allocations, b_owned + 1);
    T_EQ(all_checked(f), 0);
    /* A third process opens it; its teardown lets go of its hold only. */
    struct iso_proc C;
    iso_new_proc(f, &C);
    vidmm_handle hc = 0;
    T_ST(vidmm_share_open(f->a, C.proc, &t.tok, &hc), VIDMM_OK);
    T_EQ(proc_of(f, C.proc)->sharing.share_hold_count, 1);
    (void)iso_map(f, &C, hc, SSIZE);
    T_CHECK(maps(al, proc_of(f, C.proc)));
    T_ST(vidmm_process_destroy(f->a, C.proc), VIDMM_OK);
    T_EQ(al->share->holder_count, 1);
    T_CHECK(maps(al, pb));
    T_EQ(al->res.pe.process, t.B.proc);
    T_EQ(all_checked(f), 0);
    /* The last holder's process goes: the allocation with it. */
    uint64_t live = live_allocations(f);
    T_ST(vidmm_process_destroy(f->a, t.B.proc), VIDMM_OK);
    T_EQ(live_allocations(f), live - 2);   /* the shared one and B's aux allocation */
    T_CHECK(f->a->sharing.shares == NULL);
    T_EQ(all_checked(f), 0);
    iso_close(f);
}

/* Process death: the dying process's hold goes (its lock too), the other
 * holder keeps intact bytes. */
static void share_process_death(int creator_dies)
{
    struct two t;
    if (two_open(&t))
        return;
    struct iso_fx *f = &t.f;
    cpu_fill(f, &t.A, t.ha, 0xDEAD0000u | (uint32_t)creator_dies);
    struct iso_proc *dies = creator_dies ? &t.A : &t.B, *lives = creator_dies ? &t.B : &t.A;
    vidmm_handle hd = creator_dies ? t.ha : t.hb, hl = creator_dies ? t.hb : t.ha;
    uint64_t vl = creator_dies ? t.va_b : t.va_a;
    uint64_t live = live_allocations(f);
    /* The dying one holds a CPU lock: its close is refused meanwhile. */
    void *c = NULL;
    T_ST(vidmm_device_lock(f->a, dies->dev, hd, &c), VIDMM_OK);
    T_EQ(info_of(f, hd).locks, 1);
    T_EQ(info_of(f, hl).locks, 0);
    T_ST(vidmm_allocation_destroy(f->a, hd), VIDMM_E_BUSY);
    T_EQ(info_of(f, hl).holders, 2);
    /* The living holder cannot unlock the other's lock. */
    T_ST(vidmm_device_unlock(f->a, lives->dev, hl), VIDMM_E_STATE);
    T_EQ(all_checked(f), 0);
    T_ST(vidmm_process_destroy(f->a, dies->proc), VIDMM_OK);
    T_EQ(live_allocations(f), live - 1);   /* the dying process's aux allocation; the shared one stays */
    struct vidmm_share_info si = info_of(f, hl);
    T_EQ(si.holders, 1);
    T_EQ(si.creator_holds, (uint32_t)!creator_dies);
    T_EQ(softgpu_alloc_state(f->a, hl).lock_count, 0);
    T_CHECK(cpu_holds(f, lives, hl, 0xDEAD0000u | (uint32_t)creator_dies));
    gpu_sum(&t, lives, hl, vl, 0xDEAD0000u | (uint32_t)creator_dies);
    T_EQ(all_checked(f), 0);
    /* The token still opens while the allocation lives. */
    struct iso_proc C;
    iso_new_proc(f, &C);
    vidmm_handle hc = 0;
    T_ST(vidmm_share_open(f->a, C.proc, &t.tok, &hc), VIDMM_OK);
    T_CHECK(cpu_holds(f, &C, hc, 0xDEAD0000u | (uint32_t)creator_dies));
    T_ST(vidmm_process_destroy(f->a, C.proc), VIDMM_OK);
    T_EQ(info_of(f, hl).holders, 1);
    T_ST(vidmm_process_destroy(f->a, lives->proc), VIDMM_OK);
    T_EQ(live_allocations(f), 0);
    T_EQ(all_checked(f), 0);
    iso_close(f);
}

static void share_creator_dies(void) { share_process_death(1); }
static void share_opener_dies(void) { share_process_death(0); }

/* Physical allocation lists and offer/reclaim through an opener's
 * handle: a CHECKSUM in B's physical context patched through its own
 * handle reads A's bytes; B offers and reclaims its view (the allocation
 * is offered for every holder: one set of bytes), A reads them after. */
static void share_lists_offer(void)
{
    struct iso_fx f;
    if (iso_open(&f, "dgpu", 0, 0, 1))
        return;
    struct iso_proc A, B;
    iso_new_proc(&f, &A);
    iso_new_proc(&f, &B);
    struct softgpu_alloc_desc d;
    softgpu_desc(&d, SOFTGPU_ALLOC_EXPLICIT, VIDMM_SEGMENT_BIT(1), SSIZE,
            VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_ACCESSED_PHYSICALLY);
    vidmm_handle ha = 0, hb = 0;
    T_ST(vidmm_device_allocation_create(f.a, A.dev, &d, sizeof d, VIDMM_CREATE_SHARED | VIDMM_CREATE_RESIDENT, &ha),
         VIDMM_OK);
    struct vidmm_share_token tok;
    T_ST(vidmm_share_export(f.a, A.proc, ha, &tok), VIDMM_OK);
    T_ST(vidmm_share_open(f.a, B.proc, &tok, &hb), VIDMM_OK);
    cpu_fill(&f, &A, ha, 0x0FF00001u);
    iso_mr(&f, &B, &hb, 1, VIDMM_OK);
    iso_gpu_sums(&f, &B, &hb, NULL, 1, SSIZE, 1, iso_fill_sum(SSIZE, 0x0FF00001u));
    T_EQ(all_checked(&f), 0);
    /* A's handle is not B's in an allocation list. */
    {
        struct vidmm_submit_allocation al[1] = { { ha, 0, 0 } };
        struct vidmm_submit_physical_args pa;
        uint8_t buf[64];
        struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
        T_ST(softgpu_cmd_checksum(&cb, 0, SSIZE, 0), VIDMM_OK);
        memset(&pa, 0, sizeof pa);
        pa.buffer = buf;
        pa.size = cb.size;
        pa.allocations = al;
        pa.allocation_count = 1;
        T_ST(vidmm_submit_physical(f.a, B.pctx, &pa), VIDMM_E_INVALID_HANDLE);
    }
    /* Offer and reclaim through B's handle (its listed reference goes first). */
    struct vidmm_evict_args eb = { &hb, 1, 0, 0 };
    T_ST(vidmm_evict(f.a, B.dev, &eb), VIDMM_OK);
    T_ST(vidmm_offer(f.a, B.dev, &hb, 1, VIDMM_OFFER_NORMAL), VIDMM_OK);
    T_EQ(all_checked(&f), 0);
    uint32_t res = 99;
    uint64_t fence = 0;
    T_ST(vidmm_reclaim(f.a, B.queue, &hb, 1, &res, &fence), VIDMM_OK);
    T_EQ(res, VIDMM_RECLAIM_OK);   /* no memory pressure: nothing discarded */
    T_CHECK(cpu_holds(&f, &A, ha, 0x0FF00001u));
    T_ST(vidmm_offer(f.a, A.dev, &hb, 1, VIDMM_OFFER_NORMAL), VIDMM_E_INVALID_HANDLE);   /* B's handle in A's call */
    T_EQ(all_checked(&f), 0);
    iso_close(&f);
}

/* A holder closes its handle right after submitting GPU work that writes
 * through its mapping (softgpu's asynchronous engines; the allocation is
 * still busy when the close comes): the work completes without a fault
 * on the holder's device and the other holder reads what it wrote. */
static void share_close_busy(void)
{
    struct iso_fx f;
    if (iso_open(&f, "dgpu", 0, 0, 0))
        return;
    struct iso_proc A, B;
    iso_new_proc(&f, &A);
    iso_new_proc(&f, &B);
    vidmm_handle ha = shared_alloc(&f, &A, VIDMM_CREATE_SHARED), hb = 0;
    struct vidmm_share_token tok;
    T_ST(vidmm_share_export(f.a, A.proc, ha, &tok), VIDMM_OK);
    T_ST(vidmm_share_open(f.a, B.proc, &tok, &hb), VIDMM_OK);
    uint64_t vb = iso_map(&f, &B, hb, SSIZE);
    iso_mr(&f, &B, &hb, 1, VIDMM_OK);
    /* 256 MiB of fills: long enough to be running when the close comes. */
    static uint8_t buf[256 * 32];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    for (uint32_t k = 0; k < 256; k++)
        T_ST(softgpu_cmd_fill(&cb, vb, SSIZE, 0xB0B00000u | (k & 15)), VIDMM_OK);
    iso_aux_write(&f, &B, 0, cb.data, cb.size);
    uint64_t fence = 0;
    T_ST(vidmm_submit_virtual(f.a, B.vctx, B.aux_va, cb.size, &fence), VIDMM_OK);   /* not waited for */
    T_ST(vidmm_allocation_destroy(f.a, hb), VIDMM_OK);
    struct vidmm_device_info di;
    T_ST(vidmm_device_query(f.a, B.dev, &di), VIDMM_OK);
    T_EQ(di.faults, 0);
    T_EQ(di.lost, 0);
    T_CHECK(cpu_holds(&f, &A, ha, 0xB0B0000Fu));   /* the last FILL */
    T_EQ(info_of(&f, ha).holders, 1);
    T_EQ(all_checked(&f), 0);
    iso_close(&f);
}

/* A fingerprint of what a refused call must leave alone. */
struct fp {
    uint64_t live, blocks, bytes;
    struct vidmm_share_info sa, sb;
    struct vidmm_allocation_state st;
};

static void fp_take(struct two *t, struct fp *p)
{
    memset(p, 0, sizeof(*p));
    p->live = live_allocations(&t->f);
    p->blocks = (uint64_t)t->f.fa.live_blocks;
    p->bytes = (uint64_t)t->f.fa.live_bytes;
    p->sa = info_of(&t->f, t->ha);
    p->sb = info_of(&t->f, t->hb);
    p->st = softgpu_alloc_state(t->f.a, t->ha);
}

static void fp_same(struct two *t, const struct fp *before)
{
    struct fp now;
    fp_take(t, &now);
    T_CHECK(!memcmp(&now, before, sizeof now));
    T_EQ(all_checked(&t->f), 0);
}

static void share_refusals(void)
{
    struct two t;
    if (two_open(&t))
        return;
    struct iso_fx *f = &t.f;
    struct iso_proc C;
    iso_new_proc(f, &C);
    vidmm_handle priv = shared_alloc(f, &C, 0);            /* device-private, not shareable */
    struct softgpu_alloc_desc d;
    softgpu_desc(&d, SOFTGPU_ALLOC_EXPLICIT, VIDMM_SEGMENT_BIT(1), SSIZE, VIDMM_ALLOC_CPU_VISIBLE);
    vidmm_handle wide = 0;
    T_ST(vidmm_allocation_create2(f->a, &d, sizeof d, 0, &wide), VIDMM_OK);   /* adapter-wide */
    struct fp before;
    fp_take(&t, &before);
    struct vidmm_share_token tok = { { 0, 0 } };
    vidmm_handle h = 0x77;
    /* Creating shared without a device. */
    vidmm_handle x = 0;
    T_ST(vidmm_allocation_create2(f->a, &d, sizeof d, VIDMM_CREATE_SHARED, &x), VIDMM_E_INVALID_ARG);
    /* Unknown flags with SHARED. */
    T_ST(vidmm_device_allocation_create(f->a, C.dev, &d, sizeof d, VIDMM_CREATE_SHARED | 0x80u, &x),
         VIDMM_E_INVALID_ARG);
    fp_same(&t, &before);
    /* Not shareable. */
    T_ST(vidmm_share_export(f->a, C.proc, priv, &tok), VIDMM_E_NOT_SUPPORTED);
    T_ST(vidmm_share_export(f->a, C.proc, wide, &tok), VIDMM_E_NOT_SUPPORTED);
    T_ST(vidmm_share_query(f->a, priv, &(struct vidmm_share_info){ 0 }), VIDMM_E_INVALID_HANDLE);
    T_CHECK(!(tok.value[0] | tok.value[1]));
    /* Bad handles and processes, foreign names. */
    T_ST(vidmm_share_export(f->a, C.proc, t.ha, &tok), VIDMM_E_INVALID_HANDLE);    /* A's, C does not hold it */
    T_ST(vidmm_share_export(f->a, C.proc, t.hb, &tok), VIDMM_E_INVALID_HANDLE);    /* B's */
    T_ST(vidmm_share_export(f->a, t.A.proc, t.hb, &tok), VIDMM_E_INVALID_HANDLE);  /* B's handle in A */
    T_ST(vidmm_share_export(f->a, t.A.dev, t.ha, &tok), VIDMM_E_INVALID_HANDLE);   /* a device, not a process */
    T_ST(vidmm_share_export(f->a, t.A.proc, t.ha, NULL), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_share_export(NULL, t.A.proc, t.ha, &tok), VIDMM_E_INVALID_ARG);
    T_CHECK(!(tok.value[0] | tok.value[1]));
    /* Another process's handle of the shared allocation is not its. */
    uint64_t va = 0;
    T_ST(vidmm_gpuva_map(f->a, t.A.proc, 0, 0, 0, t.hb, 0, SSIZE, 0, 0, &va), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_gpuva_map(f->a, C.proc, 0, 0, 0, t.ha, 0, SSIZE, 0, 0, &va), VIDMM_E_INVALID_HANDLE);
    iso_mr(f, &C, &t.hb, 1, VIDMM_E_INVALID_HANDLE);
    iso_mr(f, &t.A, &t.hb, 1, VIDMM_E_INVALID_HANDLE);
    /* The creator's handle on the opener's device, after the creator's
     * own make-residents took the fast path twice (its device's fast
     * table has the slot): still not B's to name. */
    iso_mr(f, &t.A, &t.ha, 1, VIDMM_OK);
    iso_mr(f, &t.A, &t.ha, 1, VIDMM_OK);
    iso_mr(f, &t.B, &t.ha, 1, VIDMM_E_INVALID_HANDLE);
    {
        struct vidmm_evict_args ea = { &t.ha, 1, 0, 0 };
        T_ST(vidmm_evict(f->a, t.A.dev, &ea), VIDMM_OK);
        T_ST(vidmm_evict(f->a, t.A.dev, &ea), VIDMM_OK);
    }
    void *cpu = (void *)&h;
    T_ST(vidmm_device_lock(f->a, C.dev, t.hb, &cpu), VIDMM_E_INVALID_HANDLE);
    T_CHECK(cpu == (void *)&h);
    fp_same(&t, &before);
    /* Tokens: zero, unknown, NULL. */
    T_ST(vidmm_share_open(f->a, C.proc, &tok, &h), VIDMM_E_INVALID_HANDLE);
    struct vidmm_share_token guess = t.tok;
    guess.value[1] ^= 1;
    T_ST(vidmm_share_open(f->a, C.proc, &guess, &h), VIDMM_E_INVALID_HANDLE);
    guess = (struct vidmm_share_token){ { t.ha, t.hb } };   /* handles are not tokens */
    T_ST(vidmm_share_open(f->a, C.proc, &guess, &h), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_share_open(f->a, C.proc, NULL, &h), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_share_open(f->a, C.proc, &t.tok, NULL), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_share_open(f->a, t.A.dev, &t.tok, &h), VIDMM_E_INVALID_HANDLE);
    /* A holder opening again (D54): refused, its handle stays the one. */
    T_ST(vidmm_share_open(f->a, t.B.proc, &t.tok, &h), VIDMM_E_STATE);
    T_ST(vidmm_share_open(f->a, t.A.proc, &t.tok, &h), VIDMM_E_STATE);
    T_EQ(h, 0x77);
    T_ST(vidmm_share_query(f->a, t.ha, NULL), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_share_query(f->a, 0, &(struct vidmm_share_info){ 0 }), VIDMM_E_INVALID_HANDLE);
    fp_same(&t, &before);
    /* Unlock without a lock through this handle. */
    T_ST(vidmm_device_unlock(f->a, t.B.dev, t.hb), VIDMM_E_STATE);
    T_ST(vidmm_allocation_unlock(f->a, t.hb), VIDMM_E_STATE);
    fp_same(&t, &before);
    /* A stale opener handle (its slot reused by a new open). */
    vidmm_handle hc = 0, hc2 = 0;
    T_ST(vidmm_share_open(f->a, C.proc, &t.tok, &hc), VIDMM_OK);
    T_ST(vidmm_allocation_destroy(f->a, hc), VIDMM_OK);
    T_ST(vidmm_share_open(f->a, C.proc, &t.tok, &hc2), VIDMM_OK);
    T_CHECK(hc2 != hc);
    T_ST(vidmm_allocation_destroy(f->a, hc), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_share_query(f->a, hc, &(struct vidmm_share_info){ 0 }), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_allocation_destroy(f->a, hc2), VIDMM_OK);
    fp_same(&t, &before);
    T_ST(vidmm_allocation_destroy(f->a, wide), VIDMM_OK);
    iso_close(f);
}

/* xorshift64: the seeded tests' generator. */
static uint64_t rnd_next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Tokens are drawn at random: many shares, no collision, none zero, and
 * none equal to a handle's bits.  The token table (open addressing,
 * grown by doubling, deletion by backward shift) keeps finding every live
 * token and none of the dead while shares come and go in a seeded
 * order. */
static void share_tokens(void)
{
    struct iso_fx f;
    if (iso_open(&f, "dgpu", 0, 0, 1))
        return;
    struct iso_proc A, B;
    iso_new_proc(&f, &A);
    iso_new_proc(&f, &B);
    enum { N = 200 };
    static struct vidmm_share_token tk[N];
    static vidmm_handle h[N];
    static int live[N];
    for (int i = 0; i < N; i++) {
        struct softgpu_alloc_desc d;
        softgpu_desc(&d, SOFTGPU_ALLOC_EXPLICIT, VIDMM_SEGMENT_BIT(1), 64 * KIB, 0);
        T_ST(vidmm_device_allocation_create(f.a, A.dev, &d, sizeof d, VIDMM_CREATE_SHARED, &h[i]), VIDMM_OK);
        T_ST(vidmm_share_export(f.a, A.proc, h[i], &tk[i]), VIDMM_OK);
        T_CHECK(tk[i].value[0] | tk[i].value[1]);
        T_CHECK(tk[i].value[0] != h[i] && tk[i].value[1] != h[i]);
        for (int j = 0; j < i; j++)
            T_CHECK(memcmp(&tk[i], &tk[j], sizeof tk[i]) != 0);
        live[i] = 1;
    }
    T_EQ(all_checked(&f), 0);
    /* Destroy half in a seeded order, checking the table as it goes. */
    uint64_t x = (t_seed() + 7) * 0x9E3779B97F4A7C15ull | 1;
    for (int k = 0; k < N / 2; k++) {
        int i = (int)(rnd_next(&x) % N);
        while (!live[i])
            i = (i + 1) % N;
        T_ST(vidmm_allocation_destroy(f.a, h[i]), VIDMM_OK);
        live[i] = 0;
        if (k % 10 == 0)
            T_EQ(all_checked(&f), 0);
    }
    /* Every live token opens (B's own handle), every dead one is refused. */
    for (int i = 0; i < N; i++) {
        vidmm_handle hb = 0;
        T_ST(vidmm_share_open(f.a, B.proc, &tk[i], &hb), live[i] ? VIDMM_OK : VIDMM_E_INVALID_HANDLE);
        if (live[i])
            T_ST(vidmm_allocation_destroy(f.a, hb), VIDMM_OK);
    }
    T_EQ(all_checked(&f), 0);
    iso_close(&f);   /* the close takes the processes and the rest */
}

/* The walkers see the new invariants: a wrong holder count, a holder's
 * lock count that disagrees with the allocation's, an opener handle
 * missing from the holder table, a shared allocation owned by a process
 * that does not hold it (the rules checker) - each is reported, and the
 * state restored is clean again. */
static void share_checker(void)
{
    struct two t;
    if (two_open(&t))
        return;
    struct iso_fx *f = &t.f;
    char rep[2048];
    T_EQ(all_checked(f), 0);
    struct vidmm_allocation *al = NULL;
    for (struct vidmm_share *s = f->a->sharing.shares; s; s = s->next)
        al = s->al;
    T_CHECK(al != NULL);
    if (!al)
        return;
    struct vidmm_share *s = al->share;
    s->holder_count++;
    T_CHECK(vidmm_adapter_check(f->a, rep, sizeof rep) > 0);
    T_CHECK(strstr(rep, "holders listed") != NULL);
    s->holder_count--;
    T_EQ(vidmm_adapter_check(f->a, rep, sizeof rep), 0);
    s->holders->next->locks++;
    T_CHECK(vidmm_adapter_check(f->a, rep, sizeof rep) > 0);
    T_CHECK(strstr(rep, "locks sum") != NULL);
    s->holders->next->locks--;
    vidmm_handle saved = s->holders->next->self;
    s->holders->next->self ^= 1;
    T_CHECK(vidmm_adapter_check(f->a, rep, sizeof rep) > 0);
    T_CHECK(strstr(rep, "not in the holder table") != NULL);
    s->holders->next->self = saved;
    T_EQ(vidmm_adapter_check(f->a, rep, sizeof rep), 0);
    al->shared = 0;   /* the first-line flag lookups read */
    T_CHECK(vidmm_adapter_check(f->a, rep, sizeof rep) > 0);
    T_CHECK(strstr(rep, "shared flag") != NULL);
    al->shared = 1;
    T_EQ(vidmm_adapter_check(f->a, rep, sizeof rep), 0);
    vidmm_handle owner = al->res.pe.process;
    T_CHECK(al->res.owned && owner == t.A.proc);
    struct iso_proc C;
    iso_new_proc(f, &C);
    al->res.pe.process = C.proc;
    T_CHECK(vidmm_adapter_check_rules(f->a, rep, sizeof rep) > 0);
    T_CHECK(strstr(rep, "share.usage_counts_to_a_holder") != NULL);
    al->res.pe.process = owner;
    T_EQ(vidmm_adapter_check_rules(f->a, rep, sizeof rep), 0);
    T_EQ(all_checked(f), 0);
    iso_close(f);
}

/* ---- a seeded random walk ------------------------------------------------ */

#define RSIZE (256 * KIB)
#define RPROC 3
#define ROBJ 4

struct robj {
    int alive;
    struct vidmm_share_token tok;
    vidmm_handle h[RPROC];       /* each process's handle, 0 = not a holder */
    uint64_t va[RPROC];          /* its mapping, 0 = none */
    uint32_t refs[RPROC];        /* references on its device's list */
    uint32_t creator;            /* the creator's process index, RPROC once it let go */
    uint32_t pattern;
};


static void rfill(struct iso_fx *f, struct iso_proc *p, vidmm_handle h, uint32_t pattern, int check)
{
    void *c = NULL;
    T_ST(vidmm_device_lock(f->a, p->dev, h, &c), VIDMM_OK);
    int ok = c != NULL;
    for (uint64_t k = 0; c && k < RSIZE / 4; k++) {
        if (check)
            ok &= ((uint32_t *)c)[k] == pattern;
        else
            ((uint32_t *)c)[k] = pattern;
    }
    T_ST(vidmm_device_unlock(f->a, p->dev, h), VIDMM_OK);
    T_CHECK(ok);
}

static uint32_t rholders(const struct robj *o)
{
    uint32_t n = 0;
    for (int p = 0; p < RPROC; p++)
        n += o->h[p] != 0;
    return n;
}

/* The process p lets go of o (its handle destroyed or the process gone). */
static void rlet_go(struct robj *o, int p)
{
    o->h[p] = 0;
    o->va[p] = 0;
    o->refs[p] = 0;
    if (o->creator == (uint32_t)p)
        o->creator = RPROC;
    if (!rholders(o))
        o->alive = 0;   /* the last holder: the allocation is gone */
}

/* Random steps over three processes and four shared allocations: create,
 * export, open, close, CPU write and read, map, make resident, evict,
 * move, GPU CHECKSUM, process death; a model says who holds what and
 * which bytes each holds, and both checkers run after every step.  The
 * seed is printed and taken back (VIDMM_TEST_SEED). */
static void share_random(void)
{
    struct iso_fx f;
    if (iso_open(&f, "dgpu", 0, 0, 1))
        return;
    uint64_t x = (t_seed() + 1) * 0x9E3779B97F4A7C15ull;   /* small seeds spread */
    x = (x ^ (x >> 29)) | 1;
    /* Weights: opens, writes, reads, maps, make-residents and GPU reads
     * often; deaths rarely. */
    static const int ops[] = { 0, 0, 1, 1, 1, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 9, 9, 9, 10, 11 };
    struct iso_proc P[RPROC];
    for (int p = 0; p < RPROC; p++)
        iso_new_proc(&f, &P[p]);
    struct robj O[ROBJ];
    memset(O, 0, sizeof O);
    uint32_t next_pattern = 0x52000000u;
    uint64_t counts[12] = { 0 };
    for (int step = 0; step < 400 && !t_current_failures(); step++) {
        int op = ops[rnd_next(&x) % (sizeof ops / sizeof ops[0])], p = (int)(rnd_next(&x) % RPROC);
        struct robj *o = &O[rnd_next(&x) % ROBJ];
        struct iso_proc *pp = &P[p];
        vidmm_handle h = o->alive ? o->h[p] : 0;
        switch (op) {
        case 0:   /* create and export */
            if (o->alive)
                continue;
            {
                struct softgpu_alloc_desc d;
                softgpu_desc(&d, SOFTGPU_ALLOC_EXPLICIT, VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2), RSIZE,
                        VIDMM_ALLOC_CPU_VISIBLE);
                memset(o, 0, sizeof *o);
                T_ST(vidmm_device_allocation_create(f.a, pp->dev, &d, sizeof d, VIDMM_CREATE_SHARED, &o->h[p]),
                     VIDMM_OK);
                T_ST(vidmm_share_export(f.a, pp->proc, o->h[p], &o->tok), VIDMM_OK);
                o->alive = 1;
                o->creator = (uint32_t)p;
                o->pattern = 0;   /* zero-filled */
            }
            break;
        case 1:   /* open */
            if (!o->alive)
                continue;
            if (h) {
                vidmm_handle y = 0;
                T_ST(vidmm_share_open(f.a, pp->proc, &o->tok, &y), VIDMM_E_STATE);
                break;
            }
            T_ST(vidmm_share_open(f.a, pp->proc, &o->tok, &o->h[p]), VIDMM_OK);
            break;
        case 2:   /* close */
            if (!h)
                continue;
            T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_OK);
            rlet_go(o, p);
            if (!o->alive) {
                vidmm_handle y = 0;
                T_ST(vidmm_share_open(f.a, pp->proc, &o->tok, &y), VIDMM_E_INVALID_HANDLE);
            }
            break;
        case 3:   /* write */
            if (!h)
                continue;
            o->pattern = ++next_pattern;
            rfill(&f, pp, h, o->pattern, 0);
            break;
        case 4:   /* read */
            if (!h)
                continue;
            rfill(&f, pp, h, o->pattern, 1);
            break;
        case 5:   /* map */
            if (!h || o->va[p])
                continue;
            T_ST(vidmm_gpuva_map(f.a, pp->proc, 0, 0, 0, h, 0, RSIZE, 0, 0, &o->va[p]), VIDMM_OK);
            break;
        case 6:   /* make resident */
            if (!h)
                continue;
            iso_mr(&f, pp, &h, 1, VIDMM_OK);
            o->refs[p]++;
            break;
        case 7:   /* evict */
            if (!h || !o->refs[p])
                continue;
            {
                struct vidmm_evict_args ea = { &h, 1, 0, 0 };
                T_ST(vidmm_evict(f.a, pp->dev, &ea), VIDMM_OK);
                o->refs[p]--;
                int listed = 0;
                for (int q = 0; q < RPROC; q++)
                    listed |= o->refs[q] != 0;
                if (!listed)
                    T_EQ(softgpu_alloc_state(f.a, h).segment_id, 0);   /* nobody lists it: evicted */
                else
                    T_CHECK(softgpu_alloc_state(f.a, h).segment_id != 0);   /* another holder's reference keeps it */
            }
            break;
        case 8:   /* move through this holder's handle */
            if (!h)
                continue;
            {
                uint32_t seg = softgpu_alloc_state(f.a, h).segment_id;
                if (seg == 0)
                    continue;   /* evicted: make-resident first */
                T_ST(vidmm_allocation_move(f.a, h, seg == 1 ? 2 : 1), VIDMM_OK);
            }
            break;
        case 9:   /* GPU read through this holder's mapping */
            if (!h || !o->va[p])
                continue;
            iso_mr(&f, pp, &h, 1, VIDMM_OK);
            o->refs[p]++;
            iso_gpu_sums(&f, pp, &h, &o->va[p], 1, RSIZE, 0, iso_fill_sum(RSIZE, o->pattern));
            break;
        case 10:  /* the process dies and a new one takes its place */
            T_ST(vidmm_process_destroy(f.a, pp->proc), VIDMM_OK);
            for (int k = 0; k < ROBJ; k++)
                if (O[k].alive && O[k].h[p])
                    rlet_go(&O[k], p);
            iso_new_proc(&f, pp);
            break;
        default:  /* query every holder */
            for (int k = 0; k < ROBJ; k++)
                for (int q = 0; q < RPROC; q++) {
                    if (!O[k].alive || !O[k].h[q])
                        continue;
                    struct vidmm_share_info si = info_of(&f, O[k].h[q]);
                    T_EQ(si.holders, rholders(&O[k]));
                    T_EQ(si.creator_holds, (uint32_t)(O[k].creator < RPROC));
                    T_EQ(si.is_creator, (uint32_t)(O[k].creator == (uint32_t)q));
                    T_EQ(si.process, P[q].proc);
                }
            break;
        }
        counts[op]++;
        if (all_checked(&f)) {
            T_CHECK(0);
            fprintf(stderr, "share.random: checkers failed after step %d (op %d)\n", step, op);
        }
    }
    printf("share.random: ops create %llu open %llu close %llu write %llu read %llu map %llu mr %llu evict %llu "
           "move %llu gpu %llu death %llu query %llu\n",
           (unsigned long long)counts[0], (unsigned long long)counts[1], (unsigned long long)counts[2],
           (unsigned long long)counts[3], (unsigned long long)counts[4], (unsigned long long)counts[5],
           (unsigned long long)counts[6], (unsigned long long)counts[7], (unsigned long long)counts[8],
           (unsigned long long)counts[9], (unsigned long long)counts[10], (unsigned long long)counts[11]);
    iso_close(&f);
}

void suite_share(void);
void suite_share(void)
{
    t_run("share.basic", share_basic);
    t_run("share.budget", share_budget);
    t_run("share.evict", share_evict);
    t_run("share.destroy_creator_first", share_destroy_creator_first);
    t_run("share.destroy_opener_first", share_destroy_opener_first);
    t_run("share.creator_dies", share_creator_dies);
    t_run("share.opener_dies", share_opener_dies);
    t_run("share.process_lists", share_process_lists);
    t_run("share.lists_offer", share_lists_offer);
    t_run("share.close_busy", share_close_busy);
    t_run("share.refusals", share_refusals);
    t_run("share.tokens", share_tokens);
    t_run("share.checker", share_checker);
    t_run("share.random", share_random);
}
