/*
 * vamap.c - `vidmm vamap`: a demo scenario that builds two processes'
 * GPU virtual address spaces on a GpuMmu adapter and dumps them: every
 * range, what it is (reserved, or which allocation at which offset), the
 * segment holding its bytes now, and that segment's page size.  One
 * allocation is moved between dumps to show that its GPU VA stays while
 * its pages change.
 */
#include "cli/cli.h"

#include "vidmm/process.h"

#include <string.h>

static const char *where(struct vidmm_adapter *a, vidmm_handle h, char *buf, size_t n, uint32_t *page)
{
    struct vidmm_allocation_state st;
    *page = 4096;
    if (vidmm_allocation_query(a, h, &st) < 0) {
        snprintf(buf, n, "?");
        return buf;
    }
    struct vidmm_segment_info si;
    vidmm_segment_query(a, st.segment_id, &si);
    *page = si.kind == VIDMM_SEGMENT_KIND_MEMORY ? si.page_size : 4096;
    snprintf(buf, n, "seg %u (%s)", st.segment_id, vidmm_segment_kind_str(si.kind));
    return buf;
}

static void dump(struct vidmm_adapter *a, const char *name, vidmm_handle proc, const char *const *labels,
                 const vidmm_handle *allocs, int nallocs)
{
    struct vidmm_gpuva_range r[32];
    uint32_t n = 0;
    vidmm_gpuva_query(a, proc, 0, r, 32, &n);
    struct vidmm_physical_address root;
    vidmm_process_root_page_table(a, proc, &root);
    printf("  %s (root page table: segment %u offset 0x%llx)\n", name, root.segment_id,
           (unsigned long long)root.segment_offset);
    printf("    %-33s %-9s %-10s %-26s %-8s %s\n", "GPU VA range", "size", "state", "allocation+offset", "seg page",
           "backing");
    for (uint32_t i = 0; i < n; i++) {
        char size[32], range[48], what[48] = "-", back[48] = "-", pages[16] = "-";
        cli_format_size(r[i].size, size, sizeof size);
        snprintf(range, sizeof range, "0x%012llx-0x%012llx", (unsigned long long)r[i].va,
                 (unsigned long long)(r[i].va + r[i].size));
        if (r[i].state == 2) {
            const char *label = "?";
            for (int k = 0; k < nallocs; k++)
                if (allocs[k] == r[i].allocation)
                    label = labels[k];
            snprintf(what, sizeof what, "%s+0x%llx%s", label, (unsigned long long)r[i].offset,
                     r[i].protection & VIDMM_GPUVA_READ_ONLY ? " (ro)" : "");
            uint32_t page;
            where(a, r[i].allocation, back, sizeof back, &page);
            cli_format_size(page, pages, sizeof pages);
        }
        printf("    %-33s %-9s %-10s %-26s %-8s %s\n", range, size,
               r[i].state == 2 ? "mapped" : r[i].mode == VIDMM_GPUVA_RESERVE_ZERO ? "zero" : "no-access", what, pages,
               back);
    }
}

int cli_vamap(int argc, char **argv)
{
    struct cli_options o;
    int rc = cli_parse_adapter_options("vamap", argc, argv, 2, &o);
    if (rc)
        return rc;
    /* Checked before the adapter opens: a preset without GPU page tables
     * is a wrong argument, not a failure of the dump. */
    if (!strcmp(o.config.preset, "igpu"))
        return cli_usage_error("vamap", "--adapter igpu: no GpuMmu page tables to show (IoMmu mode uses the "
                                        "CPU's addresses); use dgpu, wddm1 or big");
    if (!o.config.segment_size[2])
        o.config.segment_size[2] = 256ull << 20;
    struct cli_session s;
    if (cli_open(&o, &s))
        return 1;
    struct vidmm_adapter *a = s.adapter;
    int fail = 0;
    vidmm_handle p1 = 0, p2 = 0;
    struct vidmm_gpummu_info gi;
    if (vidmm_adapter_query_gpummu(a, &gi) == VIDMM_E_NOT_SUPPORTED) {
        fprintf(stderr, "vidmm vamap: adapter '%s' has no GpuMmu page tables to show (in IoMmu mode the GPU "
                        "uses the CPU's addresses)\n", o.config.preset);
        cli_close(&s);
        return 1;
    }
    vidmm_status st = vidmm_process_create(a, &p1);
    fail |= st < 0;
    fail |= vidmm_process_create(a, &p2) < 0;
    struct vidmm_adapter_info ai;
    vidmm_adapter_query_info(a, &ai);
    uint32_t all = 0;
    for (uint32_t id = 1; id < ai.segment_count; id++) {
        struct vidmm_segment_info si;
        vidmm_segment_query(a, id, &si);
        if (si.kind != VIDMM_SEGMENT_KIND_AGP)
            all |= VIDMM_SEGMENT_BIT(id);
    }
    static const char *const labels[] = { "texture", "vbuffer", "staging", "tilepool" };
    vidmm_handle al[4] = { 0, 0, 0, 0 };
    enum softgpu_alloc_kind kinds[4] = { SOFTGPU_ALLOC_TEXTURE, SOFTGPU_ALLOC_CONSTANT, SOFTGPU_ALLOC_STAGING,
                                         SOFTGPU_ALLOC_TEXTURE };
    uint64_t sizes[4] = { 4u << 20, 256u << 10, 1u << 20, 1u << 20 };
    for (int i = 0; i < 4; i++) {
        struct softgpu_alloc_desc d;
        memset(&d, 0, sizeof d);
        d.kind = kinds[i];
        d.size = sizes[i];
        d.cpu_visible = 1;
        fail |= vidmm_allocation_create(a, &d, sizeof d, &al[i]) < 0;
    }
    (void)all;
    uint64_t va[8] = { 0 };
    fail |= vidmm_gpuva_map(a, p1, 0x100000000ull, 0, 0, al[0], 0, sizes[0], 0, 0, &va[0]) < 0;
    fail |= vidmm_gpuva_map(a, p1, 0, 0, 0, al[1], 0, sizes[1], VIDMM_GPUVA_READ_ONLY | VIDMM_GPUVA_NO_EXECUTE, 0,
                            &va[1]) < 0;
    fail |= vidmm_gpuva_reserve(a, p1, 0x200000000ull, 0, 0, 4u << 20, VIDMM_GPUVA_RESERVE_ZERO, &va[2]) < 0;
    struct vidmm_gpuva_update_op tile;
    memset(&tile, 0, sizeof tile);
    tile.type = VIDMM_GPUVA_UPDATE_MAP;
    tile.va = va[2] + (1u << 20);
    tile.size = 64u << 10;
    tile.allocation = al[3];
    fail |= vidmm_gpuva_update(a, p1, &tile, 1) < 0;
    /* The second process maps the same texture at another address, and its own staging buffer. */
    fail |= vidmm_gpuva_map(a, p2, 0x100000000ull, 0, 0, al[2], 0, sizes[2], 0, 0, &va[3]) < 0;
    fail |= vidmm_gpuva_map(a, p2, 0, 0x300000000ull, 0, al[0], 0, sizes[0], VIDMM_GPUVA_READ_ONLY, 0, &va[4]) < 0;
    if (fail) {
        fprintf(stderr, "vidmm vamap: building the scenario failed\n");
        cli_close(&s);
        return 1;
    }
    printf("== GPU VA spaces on softgpu '%s' ==\n", o.config.preset);
    cli_print_gpummu(a, stdout);
    dump(a, "process 1", p1, labels, al, 4);
    dump(a, "process 2", p2, labels, al, 4);
    struct vidmm_allocation_state before;
    vidmm_allocation_query(a, al[0], &before);
    uint32_t target = 0;
    for (uint32_t id = 1; id < ai.segment_count && !target; id++) {
        struct vidmm_segment_info si;
        vidmm_segment_query(a, id, &si);
        if (id != before.segment_id && si.kind == VIDMM_SEGMENT_KIND_MEMORY &&
            (before.supported_segment_set & VIDMM_SEGMENT_BIT(id)))
            target = id;
    }
    st = vidmm_allocation_move(a, al[0], target);
    printf("\n== texture moved from segment %u to segment %u (%s): same GPU VAs, new pages ==\n",
           before.segment_id, target, st < 0 ? vidmm_status_str(st) : "ok");
    fail |= st < 0;
    dump(a, "process 1", p1, labels, al, 4);
    dump(a, "process 2", p2, labels, al, 4);
    int errors = vidmm_adapter_check(a, NULL, 0);
    printf("\nadapter check: %s\n", errors || fail ? "FAILED" : "clean");
    cli_close(&s);
    return errors || fail ? 1 : 0;
}
