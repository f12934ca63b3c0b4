/*
 * alloc_common.c - see alloc_common.h.
 */
#include "alloc_common.h"
#include "splitmix.h"

#include <stdlib.h>
#include <string.h>

int ac_open(struct ac_fixture *f, const char *preset, const uint64_t *sizes, uint64_t sysmem)
{
    return ac_open_mode(f, preset, sizes, sysmem, 0);
}

int ac_open_mode(struct ac_fixture *f, const char *preset, const uint64_t *sizes, uint64_t sysmem, int synchronous)
{
    memset(f, 0, sizeof *f);
    fault_alloc_init(&f->fa);
    struct softgpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = preset;
    cfg.synchronous = synchronous;
    for (uint32_t i = 1; sizes && i <= SOFTGPU_MAX_SEGMENTS; i++)
        cfg.segment_size[i] = sizes[i];
    vidmm_status st = softgpu_create(&cfg, &f->sg);
    T_ST(st, VIDMM_OK);
    if (st < 0)
        return -1;
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof ci);
    softgpu_fill_adapter_create_info(f->sg, &ci);
    ci.host_allocator = &f->fa.ha;
    ci.system_memory_limit = sysmem ? sysmem : AC_MIB(256);
    ci.error_message = f->err;
    ci.error_message_size = sizeof f->err;
    st = vidmm_adapter_open(&ci, &f->a);
    T_ST(st, VIDMM_OK);
    if (st < 0) {
        fprintf(stderr, "  open: %s\n", f->err);
        softgpu_destroy(f->sg);
        f->sg = NULL;
        return -1;
    }
    T_ST(vidmm_adapter_query_info(f->a, &f->ai), VIDMM_OK);
    return 0;
}

void ac_close(struct ac_fixture *f)
{
    if (f->a) {
        CHECK_ADAPTER(f->a);
        vidmm_adapter_close(f->a);
    }
    if (f->sg) {
        T_EQ(softgpu_check(f->sg), 0);
        softgpu_destroy(f->sg);
    }
    f->a = NULL;
    f->sg = NULL;
    T_EQ(f->fa.live_blocks, 0);
    T_EQ(f->fa.live_bytes, 0);
}

int ac_check_adapter(const struct vidmm_adapter *a, const char *file, int line)
{
    char buf[2048];
    int n = vidmm_adapter_check(a, buf, sizeof buf);
    if (n) {
        char m[160];
        snprintf(m, sizeof m, "vidmm_adapter_check() == 0 (%d violations)", n);
        t_fail(file, line, m);
        fprintf(stderr, "%s", buf);
    }
    return n;
}

void ac_snap(const struct ac_fixture *f, struct ac_snapshot *s, const vidmm_handle *h, uint32_t nh)
{
    memset(s, 0, sizeof *s);
    struct vidmm_adapter_info ai;
    T_ST(vidmm_adapter_query_info(f->a, &ai), VIDMM_OK);
    s->segment_count = ai.segment_count;
    s->live_allocations = ai.live_allocations;
    for (uint32_t i = 0; i < ai.segment_count && i <= VIDMM_MAX_SEGMENTS; i++)
        T_ST(vidmm_segment_query(f->a, i, &s->seg[i]), VIDMM_OK);
    s->host_blocks = f->fa.live_blocks;
    s->nh = nh > AC_SNAP_HANDLES ? AC_SNAP_HANDLES : nh;
    for (uint32_t i = 0; i < s->nh; i++) {
        s->h[i] = h[i];
        s->hst[i] = vidmm_allocation_query(f->a, h[i], &s->state[i]);
        if (s->hst[i] == VIDMM_OK)
            (void)vidmm_allocation_physical_ranges(f->a, h[i], &s->r0[i], 1, &s->nranges[i]);
    }
}

int ac_snap_equal(const struct ac_snapshot *x, const struct ac_snapshot *y, const char *what)
{
    return ac_snap_equal_slack(x, y, what, 0);
}

int ac_snap_equal_slack(const struct ac_snapshot *x, const struct ac_snapshot *y, const char *what, int64_t slack)
{
    int diff = 0;
#define AC_DIFF(cond, ...) do { if (cond) { if (diff++ < 4) { fprintf(stderr, "  [%s] ", what); \
    fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); } } } while (0)
    AC_DIFF(x->segment_count != y->segment_count, "segment count %u -> %u", x->segment_count, y->segment_count);
    AC_DIFF(x->live_allocations != y->live_allocations, "live allocations %llu -> %llu",
            (unsigned long long)x->live_allocations, (unsigned long long)y->live_allocations);
    AC_DIFF(y->host_blocks < x->host_blocks || y->host_blocks > x->host_blocks + slack, "host blocks %lld -> %lld", (long long)x->host_blocks,
            (long long)y->host_blocks);
    for (uint32_t i = 0; i < x->segment_count && i <= VIDMM_MAX_SEGMENTS; i++)
        AC_DIFF(memcmp(&x->seg[i], &y->seg[i], sizeof x->seg[i]) != 0,
                "segment %u changed: committed 0x%llx -> 0x%llx, free 0x%llx -> 0x%llx, allocations %llu -> %llu, "
                "host aperture free %u -> %u", i, (unsigned long long)x->seg[i].committed,
                (unsigned long long)y->seg[i].committed, (unsigned long long)x->seg[i].free_bytes,
                (unsigned long long)y->seg[i].free_bytes, (unsigned long long)x->seg[i].allocations,
                (unsigned long long)y->seg[i].allocations, x->seg[i].host_aperture_free,
                y->seg[i].host_aperture_free);
    for (uint32_t i = 0; i < x->nh && i < y->nh; i++) {
        AC_DIFF(x->hst[i] != y->hst[i], "handle %u query %s -> %s", i, vidmm_status_str(x->hst[i]),
                vidmm_status_str(y->hst[i]));
        if (x->hst[i] == VIDMM_OK && y->hst[i] == VIDMM_OK) {
            const struct vidmm_allocation_state *p = &x->state[i], *q = &y->state[i];
            AC_DIFF(memcmp(p, q, sizeof *p) != 0,
                    "handle %u state changed: seg %u -> %u, mapped %d -> %d, displayed %d -> %d, locks %u -> %u, "
                    "moves %llu -> %llu", i, p->segment_id, q->segment_id, p->aperture_mapped, q->aperture_mapped,
                    p->displayed, q->displayed, p->lock_count, q->lock_count, (unsigned long long)p->moves,
                    (unsigned long long)q->moves);
            AC_DIFF(x->nranges[i] != y->nranges[i] || memcmp(&x->r0[i], &y->r0[i], sizeof x->r0[i]) != 0,
                    "handle %u physical ranges changed", i);
        }
    }
#undef AC_DIFF
    return diff == 0;
}

int ac_snap_unchanged(const struct ac_fixture *f, const struct ac_snapshot *old, const char *what)
{
    struct ac_snapshot now;
    ac_snap(f, &now, old->h, old->nh);
    return ac_snap_equal(old, &now, what);
}

int ac_snap_unchanged_slack(const struct ac_fixture *f, const struct ac_snapshot *old, const char *what,
                            int64_t slack)
{
    struct ac_snapshot now;
    ac_snap(f, &now, old->h, old->nh);
    return ac_snap_equal_slack(old, &now, what, slack);
}

void ac_explicit_desc(struct softgpu_alloc_desc *d, uint32_t set, uint32_t pref, uint32_t flags, uint64_t size,
                      uint64_t alignment)
{
    memset(d, 0, sizeof *d);
    d->kind = SOFTGPU_ALLOC_EXPLICIT;
    d->info.size = size;
    d->info.alignment = alignment;
    d->info.supported_read_segment_set = set;
    d->info.supported_write_segment_set = set;
    d->info.preferred_segment = pref;
    d->info.flags = flags;
}

vidmm_status ac_create(struct vidmm_adapter *a, uint32_t set, uint32_t pref, uint32_t flags, uint64_t size,
                       vidmm_handle *h)
{
    struct softgpu_alloc_desc d;
    ac_explicit_desc(&d, set, pref, flags, size, 0);
    return vidmm_allocation_create(a, &d, sizeof d, h);
}

vidmm_status ac_create_kind(struct vidmm_adapter *a, enum softgpu_alloc_kind kind, int cpu, uint64_t size,
                            vidmm_handle *h)
{
    struct softgpu_alloc_desc d;
    memset(&d, 0, sizeof d);
    d.kind = kind;
    d.cpu_visible = cpu ? 1u : 0u;
    d.size = size;
    return vidmm_allocation_create(a, &d, sizeof d, h);
}

struct vidmm_allocation_state ac_state(const struct vidmm_adapter *a, vidmm_handle h)
{
    struct vidmm_allocation_state s;
    memset(&s, 0, sizeof s);
    T_ST(vidmm_allocation_query(a, h, &s), VIDMM_OK);
    return s;
}

struct vidmm_segment_info ac_seg(const struct vidmm_adapter *a, uint32_t id)
{
    struct vidmm_segment_info s;
    memset(&s, 0, sizeof s);
    T_ST(vidmm_segment_query(a, id, &s), VIDMM_OK);
    return s;
}

static inline uint64_t ac_word(uint64_t seed, uint64_t i)
{
    return splitmix64_mix(seed + (i + 1) * SPLITMIX64_GAMMA);
}

void ac_pattern_fill(void *p, uint64_t size, uint64_t seed)
{
    uint64_t *w = p;
    for (uint64_t i = 0; i < size / 8; i++)
        w[i] = ac_word(seed, i);
}

static uint64_t mismatch_from(const void *p, uint64_t size, uint64_t seed, uint64_t first_byte)
{
    const uint64_t *w = p;
    for (uint64_t i = 0; i < size / 8; i++)
        if (w[i] != ac_word(seed, first_byte / 8 + i))
            return first_byte + i * 8;
    return UINT64_MAX;
}

uint64_t ac_pattern_find_mismatch(const void *p, uint64_t size, uint64_t seed)
{
    return mismatch_from(p, size, seed, 0);
}

vidmm_status ac_write(struct vidmm_adapter *a, vidmm_handle h, uint64_t size, uint64_t seed)
{
    void *p = NULL;
    vidmm_status st = vidmm_allocation_lock(a, h, &p);
    if (st < 0)
        return st;
    ac_pattern_fill(p, size, seed);
    return vidmm_allocation_unlock(a, h);
}

vidmm_status ac_verify(struct vidmm_adapter *a, vidmm_handle h, uint64_t size, uint64_t seed)
{
    void *p = NULL;
    vidmm_status st = vidmm_allocation_lock(a, h, &p);
    if (st < 0)
        return st;
    uint64_t bad = ac_pattern_find_mismatch(p, size, seed);
    st = vidmm_allocation_unlock(a, h);
    if (bad != UINT64_MAX) {
        fprintf(stderr, "  pattern mismatch at byte 0x%llx\n", (unsigned long long)bad);
        return VIDMM_E_STATE;
    }
    return st;
}

static int ac_verify_gpu_ranges(struct softgpu *sg, struct vidmm_physical_range *r, uint32_t n, uint64_t size,
                                uint64_t seed)
{
    if (n == 1 && r[0].segment_id == 0)
        return 0;
    static unsigned char buf[1 << 20];
    uint64_t pos = 0;
    for (uint32_t i = 0; i < n && pos < size; i++) {
        if (r[i].segment_id == 0)
            return -1;
        for (uint64_t o = 0; o < r[i].size && pos < size; ) {
            uint64_t len = r[i].size - o;
            if (len > sizeof buf)
                len = sizeof buf;
            if (len > size - pos)
                len = size - pos;
            if (softgpu_read_physical(sg, r[i].segment_id, r[i].offset + o, buf, (size_t)len) < 0)
                return -1;
            uint64_t bad = mismatch_from(buf, len, seed, pos);
            if (bad != UINT64_MAX) {
                fprintf(stderr, "  GPU-visible mismatch at byte 0x%llx (segment %u)\n", (unsigned long long)bad,
                        r[i].segment_id);
                return -1;
            }
            o += len;
            pos += len;
        }
    }
    return pos >= size ? 1 : -1;
}

int ac_verify_gpu(struct softgpu *sg, struct vidmm_adapter *a, vidmm_handle h, uint64_t size, uint64_t seed)
{
    uint32_t n = 0;
    if (vidmm_allocation_physical_ranges(a, h, NULL, 0, &n) < 0 || n == 0)
        return -1;
    struct vidmm_physical_range *r = calloc(n, sizeof *r);
    if (!r)
        return -1;
    uint32_t n2 = 0;
    int res = -1;
    if (vidmm_allocation_physical_ranges(a, h, r, n, &n2) == VIDMM_OK && n2 == n)
        res = ac_verify_gpu_ranges(sg, r, n, size, seed);
    free(r);
    return res;
}

uint32_t ac_fragment(struct vidmm_adapter *a, uint32_t seg, uint64_t unit, vidmm_handle *keep, uint32_t cap)
{
    vidmm_handle *all = calloc(4096, sizeof *all);
    uint32_t n = 0, k = 0;
    while (n < 4096 && ac_create(a, VIDMM_SEGMENT_BIT(seg), 0, 0, unit, &all[n]) == VIDMM_OK)
        n++;
    for (uint32_t i = 0; i < n; i++) {
        if (i % 2 == 0 && i + 1 < n)
            T_ST(vidmm_allocation_destroy(a, all[i]), VIDMM_OK);
        else if (k < cap)
            keep[k++] = all[i];
        else
            T_ST(vidmm_allocation_destroy(a, all[i]), VIDMM_OK);
    }
    free(all);
    return k;
}

void ac_destroy_all(struct vidmm_adapter *a, vidmm_handle *h, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (h[i])
            T_ST(vidmm_allocation_destroy(a, h[i]), VIDMM_OK);
}
