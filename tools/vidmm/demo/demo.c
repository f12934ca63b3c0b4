/*
 * demo.c - `vidmm demo`: a short scenario that shows the foundation at
 * work on softgpu.
 *
 * It creates one allocation of every placement class of the "GPU segments" page, writes
 * a seeded pattern into each through the CPU (directly, or through the
 * CPU host aperture for invisible memory), moves them between segments
 * with paging operations, flips a system-memory primary onto the display,
 * and after every step re-reads the bytes and runs the adapter checker.
 */
#include "cli/cli.h"
#include "splitmix.h"

#include <stdint.h>
#include <string.h>

struct demo_alloc {
    const char *name;
    const char *what;
    vidmm_handle h;
    uint64_t size;
    uint64_t seed;
};

static int pattern(struct vidmm_adapter *a, struct demo_alloc *d, int write)
{
    void *p;
    if (vidmm_allocation_lock(a, d->h, &p) < 0)
        return -1;
    uint64_t s = d->seed, *w = p, bad = 0;
    for (uint64_t i = 0; i < d->size / 8; i++) {
        uint64_t v = splitmix64_next(&s);
        if (write)
            w[i] = v;
        else if (w[i] != v)
            bad++;
    }
    vidmm_allocation_unlock(a, d->h);
    return bad ? -1 : 0;
}

static const char *where(struct vidmm_adapter *a, vidmm_handle h, char *buf, size_t n)
{
    struct vidmm_allocation_state st;
    vidmm_allocation_query(a, h, &st);
    struct vidmm_segment_info si;
    vidmm_segment_query(a, st.segment_id, &si);
    snprintf(buf, n, "seg %u (%s)%s%s", st.segment_id, vidmm_segment_kind_str(si.kind),
             st.aperture_mapped ? ", aperture-mapped" : "", st.displayed ? ", displayed" : "");
    return buf;
}

static void print_alloc(struct vidmm_adapter *a, const struct demo_alloc *d)
{
    struct vidmm_allocation_state st;
    vidmm_allocation_query(a, d->h, &st);
    struct vidmm_physical_range r[4];
    uint32_t n = 0;
    memset(r, 0, sizeof r);
    vidmm_allocation_physical_ranges(a, d->h, r, 4, &n);
    char size[32], loc[96];
    cli_format_size(st.size, size, sizeof size);
    printf("  %-8s %-9s %-34s %-10s %u extent%s:", d->name, size, where(a, d->h, loc, sizeof loc),
           r[0].segment_id == 0 || st.aperture_mapped ? "sys-pages"
           : st.layout == VIDMM_LAYOUT_CONTIGUOUS ? "contiguous" : "page-set", st.extent_count,
           st.extent_count == 1 ? " " : "s");
    for (uint32_t i = 0; i < n && i < 3; i++)
        printf(" (%u,0x%llx)+%lluK", r[i].segment_id, (unsigned long long)r[i].offset,
               (unsigned long long)(r[i].size >> 10));
    printf("%s   %s\n", n > 3 ? " ..." : "", d->what);
}

static int verify_all(struct vidmm_adapter *a, struct demo_alloc *d, int n, int *verified)
{
    int bad = 0;
    for (int i = 0; i < n; i++) {
        if (pattern(a, &d[i], 0) < 0) {
            printf("  INTEGRITY FAILURE: %s\n", d[i].name);
            bad++;
        } else {
            (*verified)++;
        }
    }
    char report[1024];
    int errors = vidmm_adapter_check(a, report, sizeof report);
    if (errors)
        printf("  CHECK FAILED (%d):\n%s", errors, report);
    return bad + errors;
}

static vidmm_status create(struct vidmm_adapter *a, enum softgpu_alloc_kind kind, uint64_t size, int cpu,
                           struct demo_alloc *d)
{
    struct softgpu_alloc_desc desc;
    memset(&desc, 0, sizeof(desc));
    desc.kind = kind;
    desc.size = size;
    desc.cpu_visible = (uint32_t)cpu;
    d->size = size;
    return vidmm_allocation_create(a, &desc, sizeof(desc), &d->h);
}

static vidmm_status create_explicit(struct vidmm_adapter *a, uint32_t set, uint32_t flags, uint64_t size,
                                    struct demo_alloc *d)
{
    struct softgpu_alloc_desc desc;
    memset(&desc, 0, sizeof(desc));
    desc.kind = SOFTGPU_ALLOC_EXPLICIT;
    desc.info.size = size;
    desc.info.supported_write_segment_set = set;
    desc.info.flags = flags;
    d->size = size;
    return vidmm_allocation_create(a, &desc, sizeof(desc), &d->h);
}

static int move(struct vidmm_adapter *a, struct demo_alloc *d, uint32_t seg)
{
    char from[96], to[96];
    where(a, d->h, from, sizeof from);
    vidmm_status st = vidmm_allocation_move(a, d->h, seg);
    where(a, d->h, to, sizeof to);
    printf("  move %-8s %-34s -> %-34s %s\n", d->name, from, to, st < 0 ? vidmm_status_str(st) : "ok");
    return st < 0;
}

/* Content that is not needed any more leaves without a copy: a dead
 * render target evicted with discard. */
static int evict_discard(struct vidmm_adapter *a)
{
    int failures = 0;
    struct demo_alloc scratch = { "scratch", "render target whose content is dead", 0, 0, 18 };
    failures += create(a, SOFTGPU_ALLOC_TEXTURE, 2u << 20, 0, &scratch) < 0;
    char from[96], to[96];
    where(a, scratch.h, from, sizeof from);
    vidmm_status st = vidmm_allocation_move_discard(a, scratch.h, 0);
    where(a, scratch.h, to, sizeof to);
    printf("  evict %-7s %-34s -> %-34s %s (discard, no transfer)\n", scratch.name, from, to,
           st < 0 ? vidmm_status_str(st) : "ok");
    failures += st < 0;
    vidmm_allocation_destroy(a, scratch.h);
    return failures;
}

/* The paging the placement scenario caused: buffers, operations and
 * bytes by kind, and the paging process's content moves. */
static void print_paging(struct vidmm_adapter *a, const struct vidmm_adapter_info *ai)
{
    static const char *const opname[17] = { "transfer", "fill", "discard", 0, 0, "map-aperture", "unmap-aperture",
                                            0, "transfer-virtual", "fill-virtual" };
    printf("\npaging: %llu buffers submitted, %llu restarts, fence %llu/%llu\n",
           (unsigned long long)ai->paging_buffers_submitted, (unsigned long long)ai->paging_restarts,
           (unsigned long long)ai->last_fence_completed, (unsigned long long)ai->last_fence_submitted);
    for (int k = 0; k < 17; k++) {
        if (!ai->paging_ops[k] || !opname[k])
            continue;
        char b[32];
        cli_format_size(ai->paging_bytes[k], b, sizeof b);
        printf("  %-17s %6llu ops %12s\n", opname[k], (unsigned long long)ai->paging_ops[k], b);
    }
    struct vidmm_paging_process_info pp;
    if (vidmm_adapter_query_paging_process(a, &pp) == VIDMM_OK) {
        char w[32];
        cli_format_size(pp.window_size, w, sizeof w);
        printf("  paging process: %llu content moves in %llu chunks through two %s scratch windows",
               (unsigned long long)pp.moves, (unsigned long long)pp.chunks, w);
        if (pp.scratch_va_64k)
            printf(" (%llu with 64 KB entries)", (unsigned long long)pp.chunks_64k);
        printf("\n");
    }
}

int cli_demo(int argc, char **argv)
{
    struct cli_options o;
    int rc = cli_parse_adapter_options("demo", argc, argv, 2, &o);
    if (rc)
        return rc;
    if (o.driver)
        return cli_plugin_demo(o.driver);
    /* Every new allocation is zero-filled by the device, so keep the
     * simulated memory small enough that the demo touches little RAM. */
    if (!o.config.segment_size[2])
        o.config.segment_size[2] = 256ull << 20;
    if (strcmp(o.config.preset, "dgpu") && strcmp(o.config.preset, "big"))
        return cli_usage_error("demo", "--adapter %s: the demonstration runs on dgpu or big", o.config.preset);
    struct cli_session s;
    if (cli_open(&o, &s))
        return 1;
    struct vidmm_adapter *a = s.adapter;
    struct vidmm_adapter_info ai;
    vidmm_adapter_query_info(a, &ai);
    uint32_t vis = 1, invis = 2, ap = ai.aperture_segment_id;
    int failures = 0, verified = 0;

    printf("== adapter (softgpu '%s') ==\n", o.config.preset);
    cli_print_segments(a, stdout);

    /* Fragment the invisible segment so textures become real page sets. */
    struct demo_alloc filler[8];
    memset(filler, 0, sizeof filler);
    for (int i = 0; i < 8; i++)
        failures += create(a, SOFTGPU_ALLOC_TEXTURE, 4u << 20, 0, &filler[i]) < 0;
    struct vidmm_segment_info si2;
    vidmm_segment_query(a, invis, &si2);

    struct demo_alloc d[7];
    memset(d, 0, sizeof d);
    d[0] = (struct demo_alloc){ "texture", "AccessedPhysically=0: set of pages, GPU virtual access only", 0, 0, 11 };
    d[1] = (struct demo_alloc){ "constant", "CPU-visible memory: contiguous so the BAR view is linear", 0, 0, 12 };
    d[2] = (struct demo_alloc){ "staging", "system memory, reached through GPU page tables", 0, 0, 13 };
    d[3] = (struct demo_alloc){ "primary", "Primary in memory: contiguous", 0, 0, 14 };
    d[4] = (struct demo_alloc){ "ring", "AccessedPhysically: contiguous in memory", 0, 0, 15 };
    d[5] = (struct demo_alloc){ "sysprim", "Primary in system memory: aperture-mapped only while displayed", 0, 0, 16 };
    d[6] = (struct demo_alloc){ "dmabuf", "AccessedPhysically in the aperture: mapped while resident", 0, 0, 17 };

    /* Free every other filler: holes of 4 MiB between live blocks. */
    for (int i = 0; i < 8; i += 2) {
        vidmm_allocation_destroy(a, filler[i].h);
        filler[i].h = VIDMM_HANDLE_NULL;
    }
    uint64_t free_total = si2.free_bytes + 16ull * (1 << 20);
    uint64_t tex_size = free_total > (64ull << 20) ? (12ull << 20) : (2ull << 20);
    /* Fill the big hole at the end so the texture has to take the holes. */
    struct demo_alloc tail;
    memset(&tail, 0, sizeof tail);
    failures += create(a, SOFTGPU_ALLOC_TEXTURE, si2.free_bytes, 0, &tail) < 0;

    failures += create(a, SOFTGPU_ALLOC_TEXTURE, tex_size, 1, &d[0]) < 0;
    failures += create(a, SOFTGPU_ALLOC_CONSTANT, 1u << 20, 1, &d[1]) < 0;
    failures += create(a, SOFTGPU_ALLOC_STAGING, 4u << 20, 1, &d[2]) < 0;
    failures += create(a, SOFTGPU_ALLOC_PRIMARY, 8u << 20, 1, &d[3]) < 0;
    failures += create(a, SOFTGPU_ALLOC_RING, 256u << 10, 1, &d[4]) < 0;
    failures += create_explicit(a, VIDMM_SEGMENT_BIT(ap),
                                VIDMM_ALLOC_PRIMARY | VIDMM_ALLOC_CPU_VISIBLE, 8u << 20, &d[5]) < 0;
    failures += create_explicit(a, VIDMM_SEGMENT_BIT(ap),
                                VIDMM_ALLOC_ACCESSED_PHYSICALLY | VIDMM_ALLOC_CPU_VISIBLE, 1u << 20, &d[6]) < 0;
    if (failures) {
        printf("allocation creation failed\n");
        cli_close(&s);
        return 1;
    }
    /* The texture has its pages now; release the tail so moves have room. */
    vidmm_allocation_destroy(a, tail.h);

    printf("\n== allocations: one per placement class ==\n");
    for (int i = 0; i < 7; i++)
        print_alloc(a, &d[i]);

    printf("\n== CPU writes a seeded pattern into each (lock/unlock) ==\n");
    for (int i = 0; i < 7; i++)
        failures += pattern(a, &d[i], 1) < 0;
    failures += verify_all(a, d, 7, &verified);
    printf("  %d allocations written and read back\n", 7);

    printf("\n== moves between segments (paging: transfer-virtual through the paging process, map/unmap aperture) ==\n");
    failures += move(a, &d[0], vis);      /* invisible -> visible */
    failures += move(a, &d[0], 0);        /* evict to system memory */
    failures += move(a, &d[0], invis);    /* restore into invisible memory */
    failures += move(a, &d[4], ap);       /* AccessedPhysically into the aperture: mapped */
    failures += move(a, &d[4], vis);      /* back to memory: unmapped */
    failures += move(a, &d[3], invis);    /* primary: stays contiguous */
    failures += move(a, &d[1], 0);        /* constant buffer evicted */
    failures += move(a, &d[1], vis);
    failures += verify_all(a, d, 7, &verified);
    failures += evict_discard(a);

    printf("\n== display: flip the system-memory primary, then the memory one ==\n");
    failures += vidmm_adapter_flip(a, 0, d[5].h) < 0;
    print_alloc(a, &d[5]);
    failures += vidmm_adapter_flip(a, 0, d[3].h) < 0;
    print_alloc(a, &d[5]);
    print_alloc(a, &d[3]);
    failures += verify_all(a, d, 7, &verified);

    printf("\n== after the placement scenario ==\n");
    for (int i = 0; i < 7; i++)
        print_alloc(a, &d[i]);
    vidmm_adapter_query_info(a, &ai);
    print_paging(a, &ai);
    cli_print_segments(a, stdout);
    printf("\nintegrity: %d of %d read-backs matched; adapter check: %s\n", verified, 7 * 3,
           failures ? "FAILED" : "clean");
    for (int i = 0; i < 7; i++)
        vidmm_allocation_destroy(a, d[i].h);
    for (int i = 1; i < 8; i += 2)
        vidmm_allocation_destroy(a, filler[i].h);
    failures += cli_demo_overcommit(&s, invis);
    failures += cli_demo_recovery(&s);
    printf("\nadapter check after the demo: %s\n", vidmm_adapter_check(a, NULL, 0) ? "FAILED" : "clean");
    cli_close(&s);
    return failures ? 1 : 0;
}
