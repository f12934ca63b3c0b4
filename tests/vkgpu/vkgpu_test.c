/*
 * vkgpu_test.c - vidmm on a real Vulkan device through vkgpu (lavapipe
 * in CI; any Vulkan 1.2 device with VIDMM_VKGPU_DEVICE).
 *
 *   open         the segments vkgpu reports (arenas, cap, aperture) and
 *                the adapter vidmm builds from them;
 *   overcommit   three times the memory segments in seeded allocations:
 *                every byte read back after evictions, restores and
 *                relocations that ran as Vulkan copies (vkgpu's counters
 *                prove the bytes went through the queue), the structure
 *                and rules checkers after every step;
 *   physical     a physical-mode context: copy/fill/write commands whose
 *                addresses vidmm patches, run by Vulkan, results read
 *                back; again after the allocations moved;
 *   device_loss  a lost device (injected as VK_ERROR_DEVICE_LOST would
 *                come): vidmm's TDR resets the adapter, vkgpu makes a
 *                new VkDevice, allocations come back (restored from
 *                their system copy or reported lost), work runs again.
 *
 * Usage: vkgpu-tests [--seed N] [filter].  The seed is printed.
 */
#include "harness/test.h"
#include "vidmm/vidmm.h"
#include "vidmm/vkgpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

void t_set_filter(const char *f);
void t_set_seed(uint64_t s);
int t_summary(void);

#define MIB (1ull << 20)
#define VK_REC_COPY_FOR_TEST 1u      /* vkgpu's paging record opcode for COPY (vkgpu/vkgpu_int.h) */

struct fx {
    struct vkgpu *gpu;
    struct vidmm_adapter *a;
    vidmm_handle proc, dev, q;
    uint32_t nseg, ap;             /* memory segments 1..nseg, the aperture */
};

/* gpummu: 0 physical mode, FX_GPUMMU GpuMmu through sparse binding,
 * FX_PAGE64 the same with 64 KB pages (page64).  Returns 1 when the
 * device cannot (no sparse binding). */
#define FX_GPUMMU 1u
#define FX_PAGE64 2u
static int fx_open_mmu(struct fx *f, uint64_t heap_cap, uint64_t arena, uint32_t gpummu);

/* A device without sparse binding: says so and passes, unless
 * VKGPU_REQUIRE_SPARSE=1 (tests/vkgpu/run.sh on lavapipe 25). */
static void no_sparse(const char *test)
{
    const char *req = getenv("VKGPU_REQUIRE_SPARSE");
    printf("%s: the device has no sparse binding (lavapipe 22.3); %s\n", test,
           req && *req == '1' ? "required: FAILED" : "not tested here");
    T_CHECK(!(req && *req == '1'));
}

static int fx_open(struct fx *f, uint64_t heap_cap, uint64_t arena)
{
    return fx_open_mmu(f, heap_cap, arena, 0);
}

static int fx_open_mmu(struct fx *f, uint64_t heap_cap, uint64_t arena, uint32_t gpummu)
{
    memset(f, 0, sizeof *f);
    char err[256] = "";
    struct vkgpu_config c;
    memset(&c, 0, sizeof c);
    c.notify_fence = vidmm_cb_notify_fence;
    c.notify_context_fence = vidmm_cb_notify_context_fence;
    c.heap_cap = heap_cap;
    c.arena_size = arena;
    c.aperture_size = 64 * MIB;
    c.gpummu = gpummu != 0;
    c.page64 = gpummu == FX_PAGE64;
    c.notify_page_fault = vidmm_cb_notify_page_fault;
    c.error_message = err;
    c.error_message_size = sizeof err;
    vidmm_status st = vkgpu_create(&c, &f->gpu);
    if (st < 0) {
        printf("vkgpu_create: %s: %s\n", vidmm_status_str(st), err);
        return st == VIDMM_E_NOT_SUPPORTED && gpummu ? 1 : -1;
    }
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof ci);
    vkgpu_fill_adapter_create_info(f->gpu, &ci);
    ci.error_message = err;
    ci.error_message_size = sizeof err;
    if ((st = vidmm_adapter_open(&ci, &f->a)) < 0) {
        printf("vidmm_adapter_open: %s: %s\n", vidmm_status_str(st), err);
        vkgpu_destroy(f->gpu);
        return -1;
    }
    struct vidmm_adapter_info ai;
    vidmm_adapter_query_info(f->a, &ai);
    f->ap = ai.aperture_segment_id;
    f->nseg = ai.segment_count - 2;
    if (vidmm_process_create(f->a, &f->proc) < 0 || vidmm_device_create(f->a, f->proc, &f->dev) < 0 ||
        vidmm_paging_queue_create(f->a, f->dev, VIDMM_PAGING_QUEUE_NORMAL, &f->q) < 0)
        return -1;
    return 0;
}

static void fx_close(struct fx *f)
{
    vidmm_adapter_close(f->a);
    vkgpu_destroy(f->gpu);
}

/* The structure and rules checkers, reporting what they found. */
static int fx_sound(const struct fx *f)
{
    char rep[1024];
    int bad = vidmm_adapter_check(f->a, rep, sizeof rep);
    if (bad)
        printf("adapter check: %s\n", rep);
    int rules = vidmm_adapter_check_rules(f->a, rep, sizeof rep);
    if (rules)
        printf("rules check: %s\n", rep);
    return bad == 0 && rules == 0;
}

static vidmm_status fx_alloc(struct fx *f, uint32_t kind, uint64_t size, vidmm_handle *h)
{
    struct vkgpu_alloc_desc d = { kind, 1, size };
    return vidmm_device_allocation_create(f->a, f->dev, &d, sizeof d, 0, h);
}

static vidmm_status fx_resident(struct fx *f, const vidmm_handle *h, uint32_t n)
{
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof mr);
    mr.paging_queue = f->q;
    mr.allocations = h;
    mr.count = n;
    vidmm_status st = vidmm_make_resident(f->a, f->dev, &mr);
    if (st == VIDMM_E_OVER_BUDGET) {
        mr.flags = VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER;
        st = vidmm_make_resident(f->a, f->dev, &mr);
    }
    if (st == VIDMM_PENDING)
        st = vidmm_paging_queue_wait(f->a, f->q, mr.paging_fence_value, 10000000000ull);
    return st;
}

static uint8_t byte_of(uint64_t seed, uint64_t i)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + (i >> 3) * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    return (uint8_t)(x >> (8 * (i & 7)));
}

static int fx_write(struct fx *f, vidmm_handle h, uint64_t size, uint64_t seed)
{
    uint8_t *p;
    if (vidmm_allocation_lock(f->a, h, (void **)&p) < 0)
        return -1;
    for (uint64_t i = 0; i < size; i++)
        p[i] = byte_of(seed, i);
    return vidmm_allocation_unlock(f->a, h) < 0 ? -1 : 0;
}

/* Bytes that differ from the seed's. */
static uint64_t fx_diff(struct fx *f, vidmm_handle h, uint64_t size, uint64_t seed)
{
    uint8_t *p;
    if (vidmm_allocation_lock(f->a, h, (void **)&p) < 0)
        return size;
    uint64_t bad = 0;
    for (uint64_t i = 0; i < size; i++)
        bad += p[i] != byte_of(seed, i);
    vidmm_allocation_unlock(f->a, h);
    return bad;
}

static uint32_t fx_segment(struct fx *f, vidmm_handle h)
{
    struct vidmm_allocation_state s;
    return vidmm_allocation_query(f->a, h, &s) < 0 ? 0 : s.segment_id;
}

/* ------------------------------------------------------------------ */

static void test_open(void)
{
    struct fx f;
    if (fx_open(&f, 32 * MIB, 16 * MIB) < 0) {
        T_CHECK(!"vkgpu opens on the Vulkan device");
        return;
    }
    struct vkgpu_device_info di;
    T_ST(vkgpu_query_device(f.gpu, &di), VIDMM_OK);
    printf("device: %s (%s %s), Vulkan %u.%u, %u segments, budget %u, bda %u, sparse %u\n", di.device_name,
           di.driver_name, di.driver_info, di.api_version >> 22, (di.api_version >> 12) & 0x3FF, di.segment_count,
           di.memory_budget, di.buffer_device_address, di.sparse_binding);
    T_EQ(di.segment_count, 2);                     /* 32 MiB cap in 16 MiB arenas */
    T_EQ(f.nseg, 2);
    T_EQ(f.ap, 3);
    struct vidmm_segment_info si;
    T_ST(vidmm_segment_query(f.a, 1, &si), VIDMM_OK);
    T_EQ_U64(si.size, 16 * MIB);
    T_ST(vidmm_segment_query(f.a, 3, &si), VIDMM_OK);
    T_EQ_U64(si.size, 64 * MIB);
    T_CHECK(fx_sound(&f));
    /* Preferences: device-local data in the arenas in order; uploads in
     * the aperture first, then the arenas. */
    vidmm_handle h, up;
    struct vidmm_allocation_state as;
    T_ST(fx_alloc(&f, VKGPU_ALLOC_LOCAL, MIB, &h), VIDMM_OK);
    T_ST(vidmm_allocation_query(f.a, h, &as), VIDMM_OK);
    T_EQ(VIDMM_PREF_ID(as.preferred_segment, 0), 1);
    T_EQ(VIDMM_PREF_ID(as.preferred_segment, 1), 2);
    T_EQ(VIDMM_PREF_ID(as.preferred_segment, 2), 0);
    T_EQ(as.supported_segment_set, VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2));
    T_ST(fx_alloc(&f, VKGPU_ALLOC_UPLOAD, MIB, &up), VIDMM_OK);
    T_ST(vidmm_allocation_query(f.a, up, &as), VIDMM_OK);
    T_EQ(VIDMM_PREF_ID(as.preferred_segment, 0), 3);
    T_EQ(VIDMM_PREF_ID(as.preferred_segment, 1), 1);
    T_EQ(VIDMM_PREF_ID(as.preferred_segment, 2), 2);
    vidmm_allocation_destroy(f.a, h);
    vidmm_allocation_destroy(f.a, up);
    /* Bad private data changes nothing. */
    struct vkgpu_alloc_desc bad = { 9, 1, MIB };
    T_ST(vidmm_device_allocation_create(f.a, f.dev, &bad, sizeof bad, 0, &h), VIDMM_E_INVALID_ARG);
    fx_close(&f);
}

#define OC_SIZE MIB
#define OC_MAX 128

static void overcommit(uint32_t mode, const char *name)
{
    struct fx f;
    int rc = fx_open_mmu(&f, 32 * MIB, 16 * MIB, mode);
    if (rc == 1) {
        no_sparse(name);
        return;
    }
    if (rc < 0) {
        T_CHECK(!"vkgpu opens on the Vulkan device");
        return;
    }
    uint64_t rng = t_seed();
    const uint32_t n = 96;                         /* 3x the two 16 MiB segments */
    vidmm_handle h[OC_MAX];
    uint64_t seed[OC_MAX];
    uint32_t made = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (fx_alloc(&f, VKGPU_ALLOC_LOCAL, OC_SIZE, &h[i]) < 0)
            break;
        seed[i] = t_rand(&rng);
        if (fx_write(&f, h[i], OC_SIZE, seed[i]) < 0)
            break;
        made++;
    }
    T_EQ(made, n);
    struct vkgpu_device_info before;
    vkgpu_query_device(f.gpu, &before);
    uint64_t bad = 0, failed = 0, moved = 0;
    const uint32_t group = 8;
    for (uint32_t round = 0; round < 6 && made == n; round++) {
        vidmm_handle g[8];
        uint32_t idx[8];
        for (uint32_t k = 0; k < group; k++) {     /* a random group, duplicates skipped */
            idx[k] = (uint32_t)t_rand_range(&rng, n);
            for (uint32_t m = 0; m < k; m++)
                if (idx[m] == idx[k])
                    idx[k] = (idx[k] + 1 + k) % n;
            g[k] = h[idx[k]];
        }
        for (uint32_t pass = 0; pass < 4; pass++) {
            if (fx_resident(&f, g, group) != VIDMM_OK) {
                failed++;
                continue;
            }
            for (uint32_t k = 0; k < group; k++) {
                bad += fx_diff(&f, g[k], OC_SIZE, seed[idx[k]]) != 0;
                seed[idx[k]] = t_rand(&rng);
                fx_write(&f, g[k], OC_SIZE, seed[idx[k]]);
            }
            /* A relocation: to the other memory segment, by a Vulkan copy. */
            uint32_t s = fx_segment(&f, g[pass]);
            if (s >= 1 && s <= 2 && vidmm_allocation_move(f.a, g[pass], s == 1 ? 2 : 1) == VIDMM_OK) {
                moved++;
                bad += fx_diff(&f, g[pass], OC_SIZE, seed[idx[pass]]) != 0;
            }
            vidmm_evict(f.a, f.dev, &(struct vidmm_evict_args){ .allocations = g, .count = group });
            T_CHECK(fx_sound(&f));
            /* The next pass's group: the following allocations. */
            for (uint32_t k = 0; k < group; k++) {
                idx[k] = (idx[k] + group) % n;
                g[k] = h[idx[k]];
            }
            for (uint32_t k = 0; k < group; k++)
                for (uint32_t m = 0; m < k; m++)
                    if (idx[m] == idx[k])
                        g[k] = h[idx[k] = (idx[k] + 31) % n];
        }
    }
    /* Every allocation read back once more (through a restore where it
     * was evicted). */
    for (uint32_t i = 0; i + group <= made; i += group) {
        if (fx_resident(&f, &h[i], group) != VIDMM_OK) {
            failed++;
            continue;
        }
        for (uint32_t k = i; k < i + group; k++)
            bad += fx_diff(&f, h[k], OC_SIZE, seed[k]) != 0;
        vidmm_evict(f.a, f.dev, &(struct vidmm_evict_args){ .allocations = &h[i], .count = group });
    }
    T_EQ(failed, 0);
    T_EQ(bad, 0);
    T_CHECK(moved > 0);
    struct vidmm_residency_stats rs;
    vidmm_residency_get_stats(f.a, &rs);
    struct vkgpu_device_info after;
    vkgpu_query_device(f.gpu, &after);
    printf("%s: %u x 1 MiB on 32 MiB: %llu evictions, %llu restores, %llu moves; vkgpu: %llu copies "
           "(%llu MiB, %llu MiB virtual), %llu imports\n", name, made, (unsigned long long)rs.evictions,
           (unsigned long long)rs.restores, (unsigned long long)moved,
           (unsigned long long)(after.copy_commands - before.copy_commands),
           (unsigned long long)((after.copy_bytes - before.copy_bytes) >> 20),
           (unsigned long long)((after.virtual_copy_bytes - before.virtual_copy_bytes) >> 20),
           (unsigned long long)(after.host_imports - before.host_imports));
    T_CHECK(rs.evictions > 32 && rs.restores > 32);
    /* The bytes went through the Vulkan queue: at least every eviction,
     * restore and move was a vkCmdCopyBuffer. */
    T_CHECK(after.copy_bytes - before.copy_bytes >= rs.bytes_evicted + rs.bytes_restored);
    T_CHECK(after.host_imports > before.host_imports);
    T_CHECK(fx_sound(&f));
    struct vidmm_paging_process_info pp;
    vidmm_status pst = vidmm_adapter_query_paging_process(f.a, &pp);
    if (mode) {
        /* GpuMmu: every content move was a TRANSFER_VIRTUAL (or
         * FILL_VIRTUAL) through the paging process's sparse buffer. */
        T_ST(pst, VIDMM_OK);
        T_CHECK(after.virtual_copy_bytes - before.virtual_copy_bytes >= rs.bytes_evicted + rs.bytes_restored);
        T_EQ_U64(after.paging_faults, 0);
        T_EQ_U64(pp.faults, 0);
        T_CHECK(pp.moves > 0 && pp.chunks >= pp.moves);
        T_EQ(after.page_size, mode == FX_PAGE64 || after.sparse_block > 4096 ? 65536 : 4096);
        /* 64 KB pages: the local sides went through the 64 KB windows. */
        T_CHECK(after.page_size != 65536 || pp.chunks_64k > 0);
        printf("%s: paging process: %llu moves in %llu chunks (%llu through 64 KB windows), %llu KiB filled; "
               "%llu sparse binds in %llu vkQueueBindSparse\n", name, (unsigned long long)pp.moves,
               (unsigned long long)pp.chunks, (unsigned long long)pp.chunks_64k,
               (unsigned long long)(after.virtual_fill_bytes >> 10),
               (unsigned long long)(after.sparse_binds - before.sparse_binds),
               (unsigned long long)(after.bind_batches - before.bind_batches));
    } else {
        T_ST(pst, VIDMM_E_NOT_SUPPORTED);          /* physical mode: plain TRANSFER / FILL */
        T_EQ_U64(after.virtual_copy_bytes, 0);
    }
    for (uint32_t i = 0; i < made; i++)
        vidmm_allocation_destroy(f.a, h[i]);
    fx_close(&f);
}

static void test_overcommit(void)
{
    overcommit(0, "overcommit");
}

/* The same through TRANSFER_VIRTUAL on lavapipe 25. */
static void test_overcommit_virtual(void)
{
    overcommit(FX_GPUMMU, "overcommit virtual");
}

/* And with 64 KB pages: 64 KB-page segments, 64 KiB binds. */
static void test_overcommit_page64(void)
{
    overcommit(FX_PAGE64, "overcommit page64");
}

/* ------------------------------------------------------------------ */

#define PH_SIZE (256u << 10)

/* The command buffer: FILL a, COPY a -> b, WRITE64 b+8; addresses are
 * patched by vidmm. */
static void ph_buffer(struct vkgpu_cmd *c, struct vidmm_patch_location *p, uint32_t pattern, uint64_t value)
{
    memset(c, 0, 3 * sizeof *c);
    memset(p, 0, 4 * sizeof *p);
    c[0].op = VKGPU_CMD_FILL;
    c[0].src = pattern;
    c[0].size_or_value = PH_SIZE;
    c[1].op = VKGPU_CMD_COPY;
    c[1].size_or_value = PH_SIZE;
    c[2].op = VKGPU_CMD_WRITE64;
    c[2].size_or_value = value;
    p[0] = (struct vidmm_patch_location){ 0, 0, 0, 0, 0 * 32 + VKGPU_CMD_DST_OFFSET, 0 };
    p[1] = (struct vidmm_patch_location){ 0, 0, 1, 0, 1 * 32 + VKGPU_CMD_SRC_OFFSET, 0 };
    p[2] = (struct vidmm_patch_location){ 1, 0, 2, 0, 1 * 32 + VKGPU_CMD_DST_OFFSET, 0 };
    p[3] = (struct vidmm_patch_location){ 1, 0, 3, 8, 2 * 32 + VKGPU_CMD_DST_OFFSET, 0 };
}

/* b holds the pattern except its bytes 8..15, which hold value. */
static int ph_result(struct fx *f, vidmm_handle b, uint32_t pattern, uint64_t value)
{
    uint32_t *p;
    if (vidmm_allocation_lock(f->a, b, (void **)&p) < 0)
        return 0;
    uint64_t v;
    memcpy(&v, (uint8_t *)p + 8, 8);
    int ok = v == value;
    for (uint32_t i = 0; i < PH_SIZE / 4 && ok; i++)
        ok = (i == 2 || i == 3) || p[i] == pattern;
    vidmm_allocation_unlock(f->a, b);
    return ok;
}

static vidmm_status ph_submit(struct fx *f, vidmm_handle ctx, vidmm_handle a, vidmm_handle b, uint32_t pattern,
                              uint64_t value, uint32_t *patched)
{
    struct vkgpu_cmd cmd[3];
    struct vidmm_patch_location pl[4];
    ph_buffer(cmd, pl, pattern, value);
    struct vidmm_submit_allocation list[2] = { { a, 0, 0 }, { b, VIDMM_SUBMIT_WRITE, 0 } };
    struct vidmm_submit_physical_args s;
    memset(&s, 0, sizeof s);
    s.buffer = cmd;
    s.size = sizeof cmd;
    s.allocation_count = 2;
    s.allocations = list;
    s.patches = pl;
    s.patch_count = 4;
    vidmm_status st = vidmm_submit_physical(f->a, ctx, &s);
    if (st < 0)
        return st;
    *patched = s.patched;
    return vidmm_context_wait(f->a, ctx, s.fence, 10000000000ull);
}

static void test_physical(void)
{
    struct fx f;
    if (fx_open(&f, 32 * MIB, 16 * MIB) < 0) {
        T_CHECK(!"vkgpu opens on the Vulkan device");
        return;
    }
    vidmm_handle a, b, ctx;
    struct vidmm_context_desc cd = { 0, VIDMM_CONTEXT_PHYSICAL, 0, 0 };
    T_ST(fx_alloc(&f, VKGPU_ALLOC_PHYSICAL, PH_SIZE, &a), VIDMM_OK);
    T_ST(fx_alloc(&f, VKGPU_ALLOC_PHYSICAL, PH_SIZE, &b), VIDMM_OK);
    T_ST(vidmm_context_create(f.a, f.dev, &cd, &ctx), VIDMM_OK);
    uint32_t patched = 0;
    T_ST(ph_submit(&f, ctx, a, b, 0xA5C3E1F0u, 0x1122334455667788ull, &patched), VIDMM_OK);
    T_EQ(patched, 4);
    T_CHECK(ph_result(&f, b, 0xA5C3E1F0u, 0x1122334455667788ull));
    T_CHECK(fx_sound(&f));
    /* Both move to the other segment: the next buffer is patched with
     * the new addresses and the commands land there. */
    uint32_t sa = fx_segment(&f, a), sb = fx_segment(&f, b);
    T_CHECK(sa >= 1 && sa <= 2 && sb >= 1 && sb <= 2);
    T_ST(vidmm_allocation_move(f.a, a, sa == 1 ? 2 : 1), VIDMM_OK);
    T_ST(vidmm_allocation_move(f.a, b, sb == 1 ? 2 : 1), VIDMM_OK);
    T_ST(ph_submit(&f, ctx, a, b, 0x0F1E2D3Cu, 42, &patched), VIDMM_OK);
    T_CHECK(ph_result(&f, b, 0x0F1E2D3Cu, 42));
    T_CHECK(fx_sound(&f));
    /* A command naming no arena is refused before anything runs. */
    struct vkgpu_cmd wild = { VKGPU_CMD_WRITE64, 0, 0, 16, 7 };
    struct vidmm_submit_physical_args s;
    memset(&s, 0, sizeof s);
    s.buffer = &wild;
    s.size = sizeof wild;
    T_CHECK(vidmm_submit_physical(f.a, ctx, &s) < 0);
    T_CHECK(fx_sound(&f));
    vidmm_context_destroy(f.a, ctx);
    vidmm_allocation_destroy(f.a, a);
    vidmm_allocation_destroy(f.a, b);
    fx_close(&f);
}

/* ------------------------------------------------------------------ */

static void device_loss(uint32_t mode)
{
    struct fx f;
    int rc = fx_open_mmu(&f, 32 * MIB, 16 * MIB, mode);
    if (rc == 1) {
        no_sparse("device loss with GpuMmu");
        return;
    }
    if (rc < 0) {
        T_CHECK(!"vkgpu opens on the Vulkan device");
        return;
    }
    uint64_t rng = t_seed() ^ 0x10557;
    enum { N = 8 };
    vidmm_handle h[N], a, b, ctx;
    uint64_t seed[N];
    for (uint32_t i = 0; i < N; i++) {
        T_ST(fx_alloc(&f, VKGPU_ALLOC_LOCAL, OC_SIZE, &h[i]), VIDMM_OK);
        seed[i] = t_rand(&rng);
        fx_write(&f, h[i], OC_SIZE, seed[i]);
    }
    T_ST(fx_resident(&f, h, N), VIDMM_OK);
    struct vidmm_context_desc cd = { 0, VIDMM_CONTEXT_PHYSICAL, 0, 0 };
    T_ST(fx_alloc(&f, VKGPU_ALLOC_PHYSICAL, PH_SIZE, &a), VIDMM_OK);
    T_ST(fx_alloc(&f, VKGPU_ALLOC_PHYSICAL, PH_SIZE, &b), VIDMM_OK);
    T_ST(vidmm_context_create(f.a, f.dev, &cd, &ctx), VIDMM_OK);
    T_ST(vidmm_adapter_set_tdr_timeout(f.a, 50000000ull), VIDMM_OK);

    T_ST(vkgpu_inject_device_loss(f.gpu), VIDMM_OK);
    uint32_t patched;
    vidmm_status st = ph_submit(&f, ctx, a, b, 1, 2, &patched);
    printf("device loss: the wait answered %s\n", vidmm_status_str(st));
    struct vidmm_tdr_stats ts;
    vidmm_adapter_get_tdr_stats(f.a, &ts);
    struct vkgpu_device_info di;
    vkgpu_query_device(f.gpu, &di);
    T_EQ(ts.adapter_resets, 1);
    T_EQ(di.device_losses, 1);
    T_CHECK(fx_sound(&f));
    /* On a GPU the new VkDevice's arenas may land elsewhere: vkgpu then
     * refuses the reset and vidmm puts the devices in the error state
     * (docs/VKGPU.md).  A CPU device's arenas are vkgpu's own host memory
     * and always come back in place, except with GpuMmu, where they are
     * the driver's own allocations (lavapipe binds only those) and land
     * wherever its allocator puts them (elsewhere under ASan). */
    if ((di.device_type != 4 /* VK_PHYSICAL_DEVICE_TYPE_CPU */ || mode) && di.device_recreations == 0) {
        struct vidmm_device_info dv;
        T_ST(vidmm_device_query(f.a, f.dev, &dv), VIDMM_OK);
        T_CHECK(dv.lost);
        printf("device loss: the new device's arenas moved; devices put in the error state\n");
        /* The arenas the segments' CPU addresses named are gone: no
         * CPU pointer into them is handed out any more. */
        void *p = NULL;
        T_ST(vidmm_allocation_lock(f.a, h[0], &p), VIDMM_E_DEVICE_LOST);
        T_CHECK(p == NULL);
        fx_close(&f);
        return;
    }
    T_EQ(di.device_recreations, 1);
    /* Each allocation has its bytes (restored from a current system copy)
     * or says it lost them and reads as zero. */
    uint64_t kept = 0, lost = 0, wrong = 0;
    T_ST(fx_resident(&f, h, N), VIDMM_OK);
    for (uint32_t i = 0; i < N; i++) {
        struct vidmm_allocation_state s;
        vidmm_allocation_query(f.a, h[i], &s);
        if (s.content_lost) {
            lost++;
            uint8_t *p;
            if (vidmm_allocation_lock(f.a, h[i], (void **)&p) == VIDMM_OK) {
                for (uint64_t k = 0; k < OC_SIZE; k++)
                    wrong += p[k] != 0;
                vidmm_allocation_unlock(f.a, h[i]);
            }
        } else {
            kept++;
            wrong += fx_diff(&f, h[i], OC_SIZE, seed[i]);
        }
    }
    printf("device loss: %llu allocations restored, %llu lost\n", (unsigned long long)kept, (unsigned long long)lost);
    T_EQ(wrong, 0);
    T_EQ(kept + lost, N);
    /* The new device runs work: a fresh context's commands land. */
    vidmm_handle dev2, ctx2;
    T_ST(vidmm_device_create(f.a, f.proc, &dev2), VIDMM_OK);
    T_ST(vidmm_context_create(f.a, dev2, &cd, &ctx2), VIDMM_OK);
    vidmm_handle a2, b2;
    struct vkgpu_alloc_desc d = { VKGPU_ALLOC_PHYSICAL, 1, PH_SIZE };
    T_ST(vidmm_device_allocation_create(f.a, dev2, &d, sizeof d, 0, &a2), VIDMM_OK);
    T_ST(vidmm_device_allocation_create(f.a, dev2, &d, sizeof d, 0, &b2), VIDMM_OK);
    T_ST(ph_submit(&f, ctx2, a2, b2, 0x5555AAAAu, 99, &patched), VIDMM_OK);
    T_CHECK(ph_result(&f, b2, 0x5555AAAAu, 99));
    T_CHECK(fx_sound(&f));
    fx_close(&f);
}

static void test_device_loss(void)
{
    device_loss(0);
}

/* With GpuMmu (lavapipe 25): the sparse buffers and the order timeline
 * go with the lost device and come back with the new one, or the reset
 * is refused when the arenas moved. */
static void test_device_loss_gpummu(void)
{
    device_loss(FX_GPUMMU);
}

/* ------------------------------------------------------------------ */

static void no_fence(struct vidmm_adapter *a, uint64_t f)
{
    (void)a;
    (void)f;
}

/* Bad input to the public entries and to the ops is refused by name and
 * changes nothing. */
static void test_api(void)
{
    struct vkgpu *g = NULL;
    struct vkgpu_config c;
    memset(&c, 0, sizeof c);
    T_ST(vkgpu_create(NULL, &g), VIDMM_E_INVALID_ARG);
    T_ST(vkgpu_create(&c, &g), VIDMM_E_INVALID_ARG);          /* no fence callback */
    c.notify_fence = no_fence;
    c.paging_buffer_size = 1000;
    T_ST(vkgpu_create(&c, &g), VIDMM_E_INVALID_ARG);
    c.paging_buffer_size = 0;
    c.aperture_size = 4095;
    T_ST(vkgpu_create(&c, &g), VIDMM_E_INVALID_ARG);
    c.aperture_size = 0;
    char err[256] = "";
    c.error_message = err;
    c.error_message_size = sizeof err;
    c.device = "no-such-gpu";
    T_ST(vkgpu_create(&c, &g), VIDMM_E_INVALID_ARG);
    T_CHECK(strstr(err, "no-such-gpu") != NULL);
    c.device = "99";
    T_ST(vkgpu_create(&c, &g), VIDMM_E_INVALID_ARG);
    T_CHECK(g == NULL);
    T_ST(vkgpu_wait_idle(NULL), VIDMM_E_INVALID_ARG);
    T_ST(vkgpu_query_device(NULL, NULL), VIDMM_E_INVALID_ARG);
    T_ST(vkgpu_inject_device_loss(NULL), VIDMM_E_INVALID_ARG);
    T_ST(vkgpu_hold_queue(NULL, 1), VIDMM_E_INVALID_ARG);
    c.page64 = 1;                                             /* 64 KB pages are GpuMmu's */
    T_ST(vkgpu_create(&c, &g), VIDMM_E_INVALID_ARG);
    c.page64 = 0;
    c.gpummu = 2;
    T_ST(vkgpu_create(&c, &g), VIDMM_E_INVALID_ARG);
    c.gpummu = 0;
    vkgpu_destroy(NULL);
    char list[512];
    T_ST(vkgpu_list_devices(list, sizeof list), VIDMM_OK);
    T_CHECK(strstr(list, "0: ") == list);

    c.device = NULL;
    c.heap_cap = 16 * MIB;
    T_ST(vkgpu_create(&c, &g), VIDMM_OK);
    if (!g)
        return;
    const struct vidmm_driver_ops *ops = vkgpu_driver_ops();
    /* A paging buffer of records vkgpu did not write: refused whole. */
    uint8_t buf[64];
    memset(buf, 0, sizeof buf);
    uint32_t op = 99;
    memcpy(buf, &op, sizeof op);
    struct vidmm_submit_command_args s;
    memset(&s, 0, sizeof s);
    s.dma_buffer = buf;
    s.dma_buffer_size = 32;
    s.flags = VIDMM_SUBMIT_PAGING;
    s.fence = 1;
    T_ST(ops->submit_command(g, &s), VIDMM_E_INVALID_ARG);
    s.dma_buffer_size = 33;                                    /* not whole records */
    T_ST(ops->submit_command(g, &s), VIDMM_E_INVALID_ARG);
    /* A FILL of 6 bytes (vkCmdFillBuffer writes words) and one past the end. */
    struct vidmm_segment_descriptor d[4];
    struct vidmm_query_segment_out qo;
    memset(&qo, 0, sizeof qo);
    struct vidmm_query_adapter_info_args q = { VIDMM_QAI_QUERYSEGMENT, NULL, 0, &qo, sizeof qo };
    T_ST(ops->query_adapter_info(g, &q), VIDMM_OK);
    T_EQ(qo.nb_segment, 2);
    qo.segment_descriptor = d;
    qo.segment_descriptor_stride = sizeof d[0];
    T_ST(ops->query_adapter_info(g, &q), VIDMM_OK);
    struct vidmm_build_paging_buffer_args a;
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_FILL;
    a.dma_buffer = buf;
    a.dma_size = sizeof buf;
    a.u.fill.destination_segment_id = 1;
    a.u.fill.destination_segment_address = d[0].base_address;
    a.u.fill.fill_size = 8;
    T_ST(ops->build_paging_buffer(g, &a), VIDMM_OK);           /* the control: a good one is taken */
    T_EQ(a.dma_size, sizeof buf - 32);
    a.dma_buffer = buf;
    a.dma_size = sizeof buf;
    a.u.fill.fill_size = 6;
    T_ST(ops->build_paging_buffer(g, &a), VIDMM_E_INVALID_ARG);
    a.u.fill.fill_size = 8;
    a.u.fill.destination_segment_address = d[0].base_address + d[0].size - 4;
    T_ST(ops->build_paging_buffer(g, &a), VIDMM_E_INVALID_ARG);
    T_EQ(a.dma_size, sizeof buf);                              /* nothing written */
    /* UPDATE_PAGE_TABLE and the virtual moves without GpuMmu, a hold
     * that is neither 0 nor 1, and a patch outside the buffer. */
    a.operation = VIDMM_PAGING_UPDATE_PAGE_TABLE;
    T_ST(ops->build_paging_buffer(g, &a), VIDMM_E_INVALID_ARG);
    memset(&a.u, 0, sizeof a.u);
    a.operation = VIDMM_PAGING_TRANSFER_VIRTUAL;
    a.u.transfer_virtual.transfer_size_in_bytes = 4096;
    a.u.transfer_virtual.root_page_table_address.segment_offset = 4096;
    T_ST(ops->build_paging_buffer(g, &a), VIDMM_E_INVALID_ARG);
    a.operation = VIDMM_PAGING_FILL_VIRTUAL;
    T_ST(ops->build_paging_buffer(g, &a), VIDMM_E_INVALID_ARG);
    T_EQ(a.dma_size, sizeof buf);
    T_ST(vkgpu_hold_queue(g, 2), VIDMM_E_INVALID_ARG);
    struct vidmm_allocation_list_entry e = { NULL, 0, 1, 0, 4096 };
    struct vidmm_patch_location pl = { 0, 0, 0, 0, 64, 0 };
    struct vidmm_patch_args pa;
    memset(&pa, 0, sizeof pa);
    pa.dma_buffer = buf;
    pa.dma_buffer_size = sizeof buf;
    pa.allocation_list = &e;
    pa.allocation_list_size = 1;
    pa.patch_location_list = &pl;
    pa.patch_location_list_size = 1;
    uint8_t before[sizeof buf];
    memcpy(before, buf, sizeof buf);
    T_ST(ops->patch(g, &pa), VIDMM_E_INVALID_ARG);
    T_CHECK(memcmp(before, buf, sizeof buf) == 0);
    T_ST(vkgpu_wait_idle(g), VIDMM_OK);
    vkgpu_destroy(g);
}

/* Malformed virtual paging requests on a GpuMmu device: refused at build
 * (nothing written) or, as records vkgpu did not write, at submission. */
static void test_api_virtual(void)
{
    struct vkgpu *g = NULL;
    struct vkgpu_config c;
    memset(&c, 0, sizeof c);
    c.notify_fence = no_fence;
    c.heap_cap = 16 * MIB;
    c.gpummu = 1;
    if (vkgpu_create(&c, &g) == VIDMM_E_NOT_SUPPORTED) {
        no_sparse("api_virtual");
        return;
    }
    T_CHECK(g != NULL);
    if (!g)
        return;
    const struct vidmm_driver_ops *ops = vkgpu_driver_ops();
    uint64_t *root = aligned_alloc(4096, 4096);
    uint8_t buf[256];
    struct vidmm_build_paging_buffer_args a;
    memset(&a, 0, sizeof a);
    a.dma_buffer = buf;
    a.dma_size = sizeof buf;
    a.operation = VIDMM_PAGING_FILL_VIRTUAL;
    struct vidmm_paging_fill_virtual *f = &a.u.fill_virtual;
    f->fill_size_in_bytes = 8192;
    f->destination_virtual_address = 1 << 20;
    f->root_page_table_address.segment_offset = (uint64_t)(uintptr_t)root;
    T_ST(ops->build_paging_buffer(g, &a), VIDMM_OK);          /* the control: 2 records */
    T_EQ(a.dma_size, sizeof buf - 64);
    uint8_t good[64];
    memcpy(good, buf, sizeof good);
    a.dma_buffer = buf;
    a.dma_size = sizeof buf;
    f->fill_size_in_bytes = 6;                                /* whole words only */
    T_ST(ops->build_paging_buffer(g, &a), VIDMM_E_INVALID_ARG);
    f->fill_size_in_bytes = 4096;
    f->destination_virtual_address = (256ull << 20) - 2048;   /* past the 256 MiB VA */
    T_ST(ops->build_paging_buffer(g, &a), VIDMM_E_INVALID_ARG);
    f->destination_virtual_address = 0;
    f->root_page_table_address.segment_id = 1;                /* tables are host memory */
    T_ST(ops->build_paging_buffer(g, &a), VIDMM_E_INVALID_ARG);
    f->root_page_table_address.segment_id = 0;
    f->root_page_table_address.segment_offset += 8;           /* not a table */
    T_ST(ops->build_paging_buffer(g, &a), VIDMM_E_INVALID_ARG);
    a.operation = VIDMM_PAGING_TRANSFER_VIRTUAL;
    memset(&a.u, 0, sizeof a.u);
    a.u.transfer_virtual.transfer_size_in_bytes = 4096;
    a.u.transfer_virtual.root_page_table_address.segment_offset = (uint64_t)(uintptr_t)root;
    a.u.transfer_virtual.flags = 0x4;                         /* unknown flag */
    T_ST(ops->build_paging_buffer(g, &a), VIDMM_E_INVALID_ARG);
    a.u.transfer_virtual.flags = 0;
    a.u.transfer_virtual.transfer_direction = 3;
    T_ST(ops->build_paging_buffer(g, &a), VIDMM_E_INVALID_ARG);
    T_EQ(a.dma_size, sizeof buf);                             /* nothing written by any */
    /* 64 KB entries on 4 KiB pages: not what vkgpu declared. */
    struct vidmm_pte e;
    memset(&e, 0, sizeof e);
    a.operation = VIDMM_PAGING_UPDATE_PAGE_TABLE;
    memset(&a.u, 0, sizeof a.u);
    a.u.update_page_table.flags = VIDMM_UPDATE_PT_USE_64KB_PAGES;
    a.u.update_page_table.page_table_address.segment_offset = (uint64_t)(uintptr_t)root;
    a.u.update_page_table.page_table_entries = &e;
    a.u.update_page_table.num_page_table_entries = 1;
    T_ST(ops->build_paging_buffer(g, &a), VIDMM_E_INVALID_ARG);
    /* A VFILL without its root record, and one whose root record is
     * something else: refused whole at submission. */
    struct vidmm_submit_command_args s;
    memset(&s, 0, sizeof s);
    s.dma_buffer = good;
    s.dma_buffer_size = 32;
    s.fence = 1;
    T_ST(ops->submit_command(g, &s), VIDMM_E_INVALID_ARG);
    uint32_t op = VK_REC_COPY_FOR_TEST;
    memcpy(good + 32, &op, sizeof op);
    s.dma_buffer_size = 64;
    T_ST(ops->submit_command(g, &s), VIDMM_E_INVALID_ARG);
    struct vkgpu_device_info di;
    vkgpu_query_device(g, &di);
    T_EQ_U64(di.submissions, 0);
    T_ST(vkgpu_wait_idle(g), VIDMM_OK);
    vkgpu_destroy(g);
    free(root);
}

/* ------------------------------------------------------------------ */

static pthread_mutex_t ov_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t ov_fence;

static void ov_notify(struct vidmm_adapter *a, uint64_t f)
{
    (void)a;
    pthread_mutex_lock(&ov_lock);
    ov_fence = f;
    pthread_mutex_unlock(&ov_lock);
}

/* A move inside one arena whose ranges overlap (MovePaging): vkCmdCopyBuffer
 * forbids overlapping regions, so vkgpu splits it; both directions, and
 * sizes that are not multiples of the distance, land memmove's bytes. */
static void test_overlap(void)
{
    struct vkgpu *g = NULL;
    struct vkgpu_config c;
    memset(&c, 0, sizeof c);
    c.notify_fence = ov_notify;
    c.heap_cap = 16 * MIB;
    T_ST(vkgpu_create(&c, &g), VIDMM_OK);
    if (!g)
        return;
    const struct vidmm_driver_ops *ops = vkgpu_driver_ops();
    struct vidmm_segment_descriptor d[4];
    struct vidmm_query_segment_out qo;
    memset(&qo, 0, sizeof qo);
    struct vidmm_query_adapter_info_args q = { VIDMM_QAI_QUERYSEGMENT, NULL, 0, &qo, sizeof qo };
    ops->query_adapter_info(g, &q);
    qo.segment_descriptor = d;
    qo.segment_descriptor_stride = sizeof d[0];
    T_ST(ops->query_adapter_info(g, &q), VIDMM_OK);
    uint8_t *mem = d[0].cpu_translated_address;
    if (!mem) {
        printf("overlap: the device's memory is not CPU-visible; not tested here\n");
        vkgpu_destroy(g);
        return;
    }
    const uint64_t len = 3 * MIB + 12345;
    uint8_t *want = malloc(4 * MIB), buf[1024];
    uint64_t rng = t_seed() ^ 0x0E71A9ull, fence = 0;
    static const int64_t shift[] = { 4096, -4096, 1000 * 1000 + 3, -(3 * 100000 + 7), 65536 };
    for (unsigned k = 0; k < sizeof shift / sizeof shift[0] && want; k++) {
        for (uint64_t i = 0; i < 4 * MIB; i++)
            mem[i] = (uint8_t)t_rand(&rng);
        memcpy(want, mem, 4 * MIB);
        uint64_t src = shift[k] > 0 ? 0 : (uint64_t)-shift[k], dst = shift[k] > 0 ? (uint64_t)shift[k] : 0;
        if (dst + len > 4 * MIB || src + len > 4 * MIB)
            continue;
        memmove(want + dst, want + src, (size_t)len);
        struct vidmm_build_paging_buffer_args a;
        memset(&a, 0, sizeof a);
        a.operation = VIDMM_PAGING_TRANSFER;
        a.dma_buffer = buf;
        a.dma_size = sizeof buf;
        a.u.transfer.transfer_size = len;
        a.u.transfer.source.segment_id = 1;
        a.u.transfer.source.segment_address = d[0].base_address + src;
        a.u.transfer.destination.segment_id = 1;
        a.u.transfer.destination.segment_address = d[0].base_address + dst;
        T_ST(ops->build_paging_buffer(g, &a), VIDMM_OK);
        struct vidmm_submit_command_args sc;
        memset(&sc, 0, sizeof sc);
        sc.dma_buffer = buf;
        sc.dma_buffer_size = (uint32_t)(sizeof buf - a.dma_size);
        sc.flags = VIDMM_SUBMIT_PAGING;
        sc.fence = ++fence;
        struct vkgpu_device_info before, after;
        vkgpu_query_device(g, &before);
        T_ST(ops->submit_command(g, &sc), VIDMM_OK);
        T_ST(vkgpu_wait_idle(g), VIDMM_OK);
        vkgpu_query_device(g, &after);
        T_CHECK(memcmp(mem, want, 4 * MIB) == 0);
        /* Split into pieces of the distance: never one overlapping region. */
        uint64_t dist = (uint64_t)(shift[k] > 0 ? shift[k] : -shift[k]);
        T_EQ_U64(after.copy_commands - before.copy_commands, (len + dist - 1) / dist);
        T_EQ_U64(after.copy_bytes - before.copy_bytes, len);
    }
    pthread_mutex_lock(&ov_lock);
    T_EQ_U64(ov_fence, fence);
    pthread_mutex_unlock(&ov_lock);
    free(want);
    vkgpu_destroy(g);
}

/* ------------------------------------------------------------------ */

#define SP_SIZE (64u << 10)

static vidmm_status sp_run(struct fx *f, vidmm_handle ctx, uint64_t va, uint32_t size)
{
    uint64_t fence;
    vidmm_status st = vidmm_submit_virtual(f->a, ctx, va, size, &fence);
    return st < 0 ? st : vidmm_context_wait(f->a, ctx, fence, 10000000000ull);
}

/* GpuMmu through sparse binding: a GPU VA that stays the same while its
 * pages move between arenas and through system memory, read by GPU
 * commands each time. */
static void sparse(uint32_t mode, const char *name)
{
    struct fx f;
    int rc = fx_open_mmu(&f, 32 * MIB, 16 * MIB, mode);
    if (rc == 1) {
        no_sparse(name);
        return;
    }
    if (rc < 0) {
        T_CHECK(!"vkgpu opens on the Vulkan device");
        return;
    }
    struct vidmm_adapter_info ai;
    vidmm_adapter_query_info(f.a, &ai);
    T_CHECK(ai.memory_management_caps & VIDMM_CAPS_GPUMMU);
    /* More processes than vkgpu's first table of roots holds: each binds
     * its root; none makes a sparse buffer before it submits. */
    vidmm_handle others[40];
    for (unsigned i = 0; i < 40; i++)
        T_ST(vidmm_process_create(f.a, &others[i]), VIDMM_OK);
    vidmm_handle a, b, c, ctx;
    T_ST(fx_alloc(&f, VKGPU_ALLOC_LOCAL, SP_SIZE, &a), VIDMM_OK);
    T_ST(fx_alloc(&f, VKGPU_ALLOC_LOCAL, SP_SIZE, &b), VIDMM_OK);
    T_ST(fx_alloc(&f, VKGPU_ALLOC_LOCAL, 4096, &c), VIDMM_OK);
    struct vidmm_context_desc cd = { 0, VIDMM_CONTEXT_VIRTUAL, 0, 0 };
    T_ST(vidmm_context_create(f.a, f.dev, &cd, &ctx), VIDMM_OK);
    vidmm_handle all[3] = { a, b, c };
    T_ST(fx_resident(&f, all, 3), VIDMM_OK);
    uint64_t va_a = 0, va_b = 0, va_c = 0;
    T_ST(vidmm_gpuva_map(f.a, f.proc, 0, 0, 0, a, 0, SP_SIZE, 0, 0, &va_a), VIDMM_OK);
    T_ST(vidmm_gpuva_map(f.a, f.proc, 0, 0, 0, b, 0, SP_SIZE, 0, 0, &va_b), VIDMM_OK);
    T_ST(vidmm_gpuva_map(f.a, f.proc, 0, 0, 0, c, 0, 4096, 0, 0, &va_c), VIDMM_OK);
    uint64_t seed = t_seed() ^ 0x5BA75Eull;
    T_CHECK(fx_write(&f, a, SP_SIZE, seed) == 0);
    /* The commands, at va_c: copy a's bytes into b through the VAs. */
    struct vkgpu_cmd cmd = { VKGPU_CMD_COPY, 0, va_a, va_b, SP_SIZE };
    void *p;
    T_ST(vidmm_allocation_lock(f.a, c, &p), VIDMM_OK);
    memcpy(p, &cmd, sizeof cmd);
    vidmm_allocation_unlock(f.a, c);
    struct vkgpu_device_info before, after;
    vkgpu_query_device(f.gpu, &before);
    uint32_t moves = 0;
    for (int step = 0; step < 4; step++) {
        if (step == 1 || step == 3) {              /* a's pages move to the other arena */
            uint32_t s = fx_segment(&f, a);
            T_ST(vidmm_allocation_move(f.a, a, s == 1 ? 2 : 1), VIDMM_OK);
            moves++;
        } else if (step == 2) {                    /* evicted to system memory and restored */
            T_ST(vidmm_evict(f.a, f.dev, &(struct vidmm_evict_args){ .allocations = &a, .count = 1 }), VIDMM_OK);
            T_ST(fx_resident(&f, &a, 1), VIDMM_OK);
        }
        uint8_t *q;
        T_ST(vidmm_allocation_lock(f.a, b, (void **)&q), VIDMM_OK);
        memset(q, 0, SP_SIZE);
        vidmm_allocation_unlock(f.a, b);
        T_ST(sp_run(&f, ctx, va_c, sizeof cmd), VIDMM_OK);
        T_EQ(fx_diff(&f, b, SP_SIZE, seed), 0);
        T_CHECK(fx_sound(&f));
    }
    vkgpu_query_device(f.gpu, &after);
    printf("%s: one GPU VA read 4 times across %u moves and an eviction: %llu sparse binds of %u KiB pages\n", name,
           moves, (unsigned long long)(after.sparse_binds - before.sparse_binds), after.page_size >> 10);
    T_CHECK(after.sparse_binds > before.sparse_binds);
    T_EQ(after.page_size, mode == FX_PAGE64 || after.sparse_block > 4096 ? 65536 : 4096);
    struct vidmm_segment_info si;
    T_ST(vidmm_segment_query(f.a, 1, &si), VIDMM_OK);
    T_EQ(si.page_size, after.page_size);
    /* A command naming an unmapped VA is refused before anything runs. */
    struct vkgpu_cmd wild = { VKGPU_CMD_FILL, 0, 0, 200ull << 20, 4096 };
    T_ST(vidmm_allocation_lock(f.a, c, &p), VIDMM_OK);
    memcpy(p, &wild, sizeof wild);
    vidmm_allocation_unlock(f.a, c);
    uint64_t fence;
    T_CHECK(vidmm_submit_virtual(f.a, ctx, va_c, sizeof wild, &fence) < 0);
    T_CHECK(fx_sound(&f));
    for (unsigned i = 0; i < 40; i++)
        T_ST(vidmm_process_destroy(f.a, others[i]), VIDMM_OK);
    vidmm_context_destroy(f.a, ctx);
    fx_close(&f);
}

/* ------------------------------------------------------------------ */

/* The ordering of binds with the queue, on the driver alone: a context's
 * copy into a page, the re-bind of that page to another arena (a paging
 * buffer's UPDATE_PAGE_TABLE) and a context's read of the page after it
 * are all queued while the queue is held at a gate, so that only the
 * device's semaphores can order them.  The copy must land in the old
 * page, the read must see the new one.  Then TRANSFER_VIRTUAL through
 * the same root (a memory page to host pages) and one over a hole
 * (skipped, reported as a page fault before its fence). */

static pthread_mutex_t od_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t od_paging, od_context, od_fault_va, od_faults, od_fault_ctx;

static void od_fence(struct vidmm_adapter *a, uint64_t f)
{
    (void)a;
    pthread_mutex_lock(&od_lock);
    od_paging = f;
    pthread_mutex_unlock(&od_lock);
}

static void od_context_fence(struct vidmm_adapter *a, uint64_t c, uint32_t node, uint64_t f)
{
    (void)a;
    (void)c;
    (void)node;
    pthread_mutex_lock(&od_lock);
    od_context = f;
    pthread_mutex_unlock(&od_lock);
}

static void od_fault(struct vidmm_adapter *a, uint64_t c, uint64_t va, uint32_t flags)
{
    (void)a;
    (void)flags;
    pthread_mutex_lock(&od_lock);
    od_faults++;
    od_fault_va = va;
    od_fault_ctx = c;
    pthread_mutex_unlock(&od_lock);
}

static void od_seen(uint64_t *paging, uint64_t *context)
{
    pthread_mutex_lock(&od_lock);
    *paging = od_paging;
    *context = od_context;
    pthread_mutex_unlock(&od_lock);
}

struct od {
    struct vkgpu *g;
    const struct vidmm_driver_ops *ops;
    uint64_t fence;                /* the last paging fence submitted */
    uint64_t unit;                 /* the page: 4 KiB or 64 KiB */
    uint64_t *root, *leaf;         /* host tables */
};

/* One paging buffer of one built operation, submitted with the next fence. */
static vidmm_status od_paging_op(struct od *o, struct vidmm_build_paging_buffer_args *a)
{
    uint8_t buf[8192];
    a->dma_buffer = buf;
    a->dma_size = sizeof buf;
    vidmm_status st = o->ops->build_paging_buffer(o->g, a);
    if (st < 0)
        return st;
    struct vidmm_submit_command_args sc;
    memset(&sc, 0, sizeof sc);
    sc.dma_buffer = buf;
    sc.dma_buffer_size = (uint32_t)(sizeof buf - a->dma_size);
    sc.flags = VIDMM_SUBMIT_PAGING;
    sc.fence = o->fence + 1;
    st = o->ops->submit_command(o->g, &sc);
    if (st >= 0)
        o->fence++;
    return st;
}

/* Entries [first, first + n) of the leaf (or root, level 1) map
 * consecutive 4 KiB frames of segment seg from byte off (seg 0: host
 * address off), n = 0 entries invalid when seg is ~0u. */
static vidmm_status od_map(struct od *o, uint32_t level, uint32_t first, uint32_t n, uint32_t seg, uint64_t off)
{
    struct vidmm_pte e[512];
    memset(e, 0, sizeof e);
    for (uint32_t i = 0; i < n && seg != ~0u; i++) {
        e[i].flags = VIDMM_PTE_VALID | ((uint64_t)seg << VIDMM_PTE_SEGMENT_SHIFT);
        e[i].page_address = (off >> 12) + i;
    }
    struct vidmm_build_paging_buffer_args a;
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_UPDATE_PAGE_TABLE;
    struct vidmm_paging_update_page_table *u = &a.u.update_page_table;
    u->page_table_level = level;
    u->page_table_address.segment_offset = (uint64_t)(uintptr_t)(level ? o->root : o->leaf);
    u->page_table_entries = e;
    u->start_index = first;
    u->num_page_table_entries = n;
    return od_paging_op(o, &a);
}

static vidmm_status od_context_submit(struct od *o, uint64_t va, uint64_t fence)
{
    struct vidmm_submit_context_args c;
    memset(&c, 0, sizeof c);
    c.context = 0x77;
    c.dma_buffer_virtual_address = va;
    c.dma_buffer_size = sizeof(struct vkgpu_cmd);
    c.fence = fence;
    return o->ops->submit_command_virtual(o->g, &c);
}

static void order(uint32_t page64, const char *name)
{
    struct od o;
    memset(&o, 0, sizeof o);
    struct vkgpu_config c;
    memset(&c, 0, sizeof c);
    c.notify_fence = od_fence;
    c.notify_context_fence = od_context_fence;
    c.notify_page_fault = od_fault;
    c.heap_cap = 32 * MIB;
    c.arena_size = 16 * MIB;
    c.gpummu = 1;
    c.page64 = page64;
    od_paging = od_context = od_faults = 0;
    if (vkgpu_create(&c, &o.g) == VIDMM_E_NOT_SUPPORTED) {
        no_sparse(name);
        return;
    }
    T_CHECK(o.g != NULL);
    if (!o.g)
        return;
    o.ops = vkgpu_driver_ops();
    struct vkgpu_device_info di;
    vkgpu_query_device(o.g, &di);
    o.unit = di.page_size;                            /* 64 KiB with page64 or on a 64 KiB-block GPU */
    T_CHECK(o.unit == (page64 || di.sparse_block > 4096 ? 65536u : 4096u));
    struct vidmm_segment_descriptor d[4];
    struct vidmm_query_segment_out qo;
    memset(&qo, 0, sizeof qo);
    qo.segment_descriptor = d;
    qo.segment_descriptor_stride = sizeof d[0];
    struct vidmm_query_adapter_info_args q = { VIDMM_QAI_QUERYSEGMENT, NULL, 0, &qo, sizeof qo };
    qo.nb_segment = 3;
    T_ST(o.ops->query_adapter_info(o.g, &q), VIDMM_OK);
    uint8_t *m1 = d[0].cpu_translated_address, *m2 = d[1].cpu_translated_address;
    o.root = aligned_alloc(4096, 4096);
    o.leaf = aligned_alloc(4096, 4096);
    uint8_t *host = aligned_alloc(65536, 2 * 65536);
    if (!m1 || !m2 || !o.root || !o.leaf || !host) {
        T_CHECK(!"CPU-visible arenas and host tables");
        goto out;
    }
    memset(o.root, 0, 4096);
    memset(o.leaf, 0, 4096);
    memset(host, 0xCD, 2 * 65536);
    const uint64_t U = o.unit, E4 = U / 4096;      /* 4 KiB entries per page */
    struct vidmm_set_root_page_table_args sr;
    memset(&sr, 0, sizeof sr);
    sr.context = 0x77;
    sr.address.segment_offset = (uint64_t)(uintptr_t)o.root;
    sr.num_entries = 128;
    o.ops->set_root_page_table(o.g, &sr);
    /* VA page k of leaf 0: 0 the commands, 1 the source S, 2 the
     * destination D, 3 the read-back R (arena 1 pages 0-3); 4 host pages. */
    struct vidmm_pte re;
    memset(&re, 0, sizeof re);
    re.flags = VIDMM_PTE_VALID;
    re.page_address = (uint64_t)(uintptr_t)o.leaf >> 12;
    struct vidmm_build_paging_buffer_args a;
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_UPDATE_PAGE_TABLE;
    a.u.update_page_table.page_table_level = 1;
    a.u.update_page_table.page_table_address.segment_offset = (uint64_t)(uintptr_t)o.root;
    a.u.update_page_table.page_table_entries = &re;
    a.u.update_page_table.num_page_table_entries = 1;
    T_ST(od_paging_op(&o, &a), VIDMM_OK);
    T_ST(od_map(&o, 0, 0, (uint32_t)(4 * E4), 1, 0), VIDMM_OK);
    T_ST(od_map(&o, 0, (uint32_t)(4 * E4), (uint32_t)E4, 0, (uint64_t)(uintptr_t)host), VIDMM_OK);
    T_ST(vkgpu_wait_idle(o.g), VIDMM_OK);
    uint64_t seed = t_seed() ^ 0x0D3Dull;
    for (uint64_t i = 0; i < U; i++) {
        m1[U + i] = byte_of(seed, i);                 /* S */
        m2[i] = byte_of(seed + 1, i);                 /* E, arena 2 page 0 */
    }
    memset(m1 + 2 * U, 0, U);                         /* D */
    memset(m1 + 3 * U, 0xEE, U);                      /* R */
    struct vkgpu_cmd cmd[2] = { { VKGPU_CMD_COPY, 0, U, 2 * U, U }, { VKGPU_CMD_COPY, 0, 2 * U, 3 * U, U } };
    memcpy(m1, cmd, sizeof cmd);

    /* Held: the copy S -> D, D re-bound to E, the read D -> R. */
    uint64_t fence0 = o.fence, pf, cf;
    T_ST(vkgpu_hold_queue(o.g, 1), VIDMM_OK);
    T_ST(od_context_submit(&o, 0, 1), VIDMM_OK);
    T_ST(od_map(&o, 0, (uint32_t)(2 * E4), (uint32_t)E4, 2, 0), VIDMM_OK);
    T_ST(od_context_submit(&o, sizeof cmd[0], 2), VIDMM_OK);
    od_seen(&pf, &cf);
    uint64_t untouched = 0;
    for (uint64_t i = 0; i < U; i++)
        untouched += m1[2 * U + i] == 0 && m1[3 * U + i] == 0xEE && m2[i] == byte_of(seed + 1, i);
    T_EQ_U64(pf, fence0);                             /* all three in flight at once */
    T_EQ_U64(cf, 0);
    T_EQ_U64(untouched, U);
    T_ST(vkgpu_hold_queue(o.g, 0), VIDMM_OK);
    T_ST(vkgpu_wait_idle(o.g), VIDMM_OK);
    od_seen(&pf, &cf);
    T_EQ_U64(pf, o.fence);
    T_EQ_U64(cf, 2);
    uint64_t d_bad = 0, e_bad = 0, r_bad = 0;
    for (uint64_t i = 0; i < U; i++) {
        d_bad += m1[2 * U + i] != byte_of(seed, i);  /* the copy went to the old page */
        e_bad += m2[i] != byte_of(seed + 1, i);      /* and not to the new one */
        r_bad += m1[3 * U + i] != byte_of(seed + 1, i); /* the read saw the new page */
    }
    T_EQ_U64(d_bad, 0);
    T_EQ_U64(e_bad, 0);
    T_EQ_U64(r_bad, 0);

    /* TRANSFER_VIRTUAL from S to the host pages, then one from a hole. */
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_TRANSFER_VIRTUAL;
    a.u.transfer_virtual.transfer_size_in_bytes = U;
    a.u.transfer_virtual.source_virtual_address = U;
    a.u.transfer_virtual.destination_virtual_address = 4 * U;
    a.u.transfer_virtual.transfer_direction = VIDMM_TRANSFER_LOCAL_TO_SYSTEM;
    a.u.transfer_virtual.root_page_table_address.segment_offset = (uint64_t)(uintptr_t)o.root;
    T_ST(od_paging_op(&o, &a), VIDMM_OK);
    a.u.transfer_virtual.source_virtual_address = 6 * U;   /* never mapped */
    a.u.transfer_virtual.destination_virtual_address = 3 * U;
    a.u.transfer_virtual.transfer_direction = VIDMM_TRANSFER_LOCAL_TO_LOCAL;
    T_ST(od_paging_op(&o, &a), VIDMM_OK);
    T_ST(vkgpu_wait_idle(o.g), VIDMM_OK);
    uint64_t h_bad = 0;
    for (uint64_t i = 0; i < U; i++) {
        h_bad += host[i] != byte_of(seed, i);
        r_bad += m1[3 * U + i] != byte_of(seed + 1, i);  /* the skipped one wrote nothing */
    }
    T_EQ_U64(h_bad, 0);
    T_EQ_U64(r_bad, 0);
    pthread_mutex_lock(&od_lock);
    T_EQ_U64(od_faults, 1);
    T_EQ_U64(od_fault_va, 6 * U);
    T_EQ_U64(od_fault_ctx, 0x77);
    T_EQ_U64(od_paging, o.fence);                     /* its fence still came */
    pthread_mutex_unlock(&od_lock);
    /* FILL_VIRTUAL over R (an arena page) and the host pages: two pieces. */
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_FILL_VIRTUAL;
    a.u.fill_virtual.fill_size_in_bytes = 2 * U;
    a.u.fill_virtual.fill_pattern = 0xA1B2C3D4u;
    a.u.fill_virtual.destination_virtual_address = 3 * U;
    a.u.fill_virtual.root_page_table_address.segment_offset = (uint64_t)(uintptr_t)o.root;
    T_ST(od_paging_op(&o, &a), VIDMM_OK);
    T_ST(vkgpu_wait_idle(o.g), VIDMM_OK);
    uint64_t f_bad = 0;
    for (uint64_t i = 0; i < U; i += 4) {
        uint32_t x, y;
        memcpy(&x, m1 + 3 * U + i, 4);
        memcpy(&y, host + i, 4);
        f_bad += (x != 0xA1B2C3D4u) + (y != 0xA1B2C3D4u);
    }
    T_EQ_U64(f_bad, 0);
    T_CHECK(host[U] == 0xCD);                         /* not a byte past it */
    vkgpu_query_device(o.g, &di);
    T_EQ_U64(di.paging_faults, 1);
    T_EQ_U64(di.virtual_copy_bytes, U);
    T_EQ_U64(di.virtual_fill_bytes, 2 * U);
    printf("%s: copy, re-bind and read held in flight at once, kept in order; %llu sparse binds in %llu "
           "vkQueueBindSparse\n", name, (unsigned long long)di.sparse_binds, (unsigned long long)di.bind_batches);
    sr.address.segment_offset = 0;                    /* unbound: the buffer goes */
    o.ops->set_root_page_table(o.g, &sr);
out:
    vkgpu_destroy(o.g);
    free(o.root);
    free(o.leaf);
    free(host);
}

static void test_order(void)
{
    order(0, "order");
}

static void test_order_page64(void)
{
    order(1, "order page64");
}

static void test_sparse(void)
{
    sparse(FX_GPUMMU, "sparse");
}

/* 64 KB pages on lavapipe's 4 KiB blocks: each page 16 blocks bound as one. */
static void test_sparse_page64(void)
{
    sparse(FX_PAGE64, "sparse page64");
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            t_set_seed(strtoull(argv[++i], NULL, 0));
        else
            t_set_filter(argv[i]);
    }
    printf("seed %" PRIu64 "\n", t_seed());
    t_run("vkgpu.api", test_api);
    t_run("vkgpu.api_virtual", test_api_virtual);
    t_run("vkgpu.open", test_open);
    t_run("vkgpu.overlap", test_overlap);
    t_run("vkgpu.overcommit", test_overcommit);
    t_run("vkgpu.overcommit_virtual", test_overcommit_virtual);
    t_run("vkgpu.overcommit_page64", test_overcommit_page64);
    t_run("vkgpu.physical", test_physical);
    t_run("vkgpu.device_loss", test_device_loss);
    t_run("vkgpu.device_loss_gpummu", test_device_loss_gpummu);
    t_run("vkgpu.sparse", test_sparse);
    t_run("vkgpu.sparse_page64", test_sparse_page64);
    t_run("vkgpu.order", test_order);
    t_run("vkgpu.order_page64", test_order_page64);
    return t_summary();
}
