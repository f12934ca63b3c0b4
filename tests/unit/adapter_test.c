/*
 * adapter_test.c - adapter start-up: the two-call segment query and the
 * validation of the driver's description.
 *
 * A wrapper driver forwards every op to softgpu and, on the second
 * segment query, applies one mutation to the descriptors; each row of the
 * table is one fault vidmm must reject with VIDMM_E_BAD_DRIVER_DESC and a
 * message naming it, leaving no host memory behind.
 */
#include "harness/fault_alloc.h"
#include "harness/test.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <string.h>

struct mut_driver {
    struct softgpu *sg;
    const struct vidmm_driver_ops *inner;
    void (*mutate)(struct vidmm_query_segment_out *out);
    int first_call_count_override; /* -1 = none */
    int change_count_on_second;
    int fail_caps;
    int queries;
    /* GpuMmu answers: mutate the caps, or the description of one level. */
    void (*mutate_mmu_caps)(struct vidmm_gpummu_caps *c);
    void (*mutate_level)(uint32_t level, struct vidmm_page_table_level_desc *d);
    int fail_mmu_caps;
};

static vidmm_status mut_query(void *drv, const struct vidmm_query_adapter_info_args *args)
{
    struct mut_driver *m = drv;
    m->queries++;
    if (args->type == VIDMM_QAI_DRIVERCAPS && m->fail_caps)
        return VIDMM_E_DRIVER_FAILURE;
    if (args->type == VIDMM_QAI_GPUMMUCAPS && m->fail_mmu_caps)
        return VIDMM_E_DRIVER_FAILURE;
    vidmm_status st = m->inner->query_adapter_info(m->sg, args);
    if (st >= 0 && args->type == VIDMM_QAI_GPUMMUCAPS && m->mutate_mmu_caps)
        m->mutate_mmu_caps(args->output);
    if (st >= 0 && args->type == VIDMM_QAI_PAGETABLELEVELDESC && m->mutate_level)
        m->mutate_level(((const struct vidmm_query_page_table_level_in *)args->input)->level_index, args->output);
    if (st < 0 || args->type != VIDMM_QAI_QUERYSEGMENT)
        return st;
    struct vidmm_query_segment_out *out = args->output;
    if (!out->segment_descriptor) {
        if (m->first_call_count_override >= 0)
            out->nb_segment = (uint32_t)m->first_call_count_override;
        return st;
    }
    if (m->change_count_on_second)
        out->nb_segment -= 1;
    if (m->mutate)
        m->mutate(out);
    return st;
}

static vidmm_status mut_describe(void *drv, struct vidmm_describe_allocation_args *a)
{
    struct mut_driver *m = drv;
    return m->inner->describe_allocation(m->sg, a);
}
static void mut_destroy(void *drv, const struct vidmm_destroy_allocation_args *a)
{
    struct mut_driver *m = drv;
    if (m->inner->destroy_allocation)
        m->inner->destroy_allocation(m->sg, a);
}
static vidmm_status mut_build(void *drv, struct vidmm_build_paging_buffer_args *a)
{
    struct mut_driver *m = drv;
    return m->inner->build_paging_buffer(m->sg, a);
}
static vidmm_status mut_submit(void *drv, const struct vidmm_submit_command_args *a)
{
    struct mut_driver *m = drv;
    return m->inner->submit_command(m->sg, a);
}
static vidmm_status mut_map_hap(void *drv, const struct vidmm_map_cpu_host_aperture_args *a)
{
    struct mut_driver *m = drv;
    return m->inner->map_cpu_host_aperture(m->sg, a);
}
static vidmm_status mut_unmap_hap(void *drv, const struct vidmm_unmap_cpu_host_aperture_args *a)
{
    struct mut_driver *m = drv;
    return m->inner->unmap_cpu_host_aperture(m->sg, a);
}

static void mut_set_root(void *drv, const struct vidmm_set_root_page_table_args *a)
{
    struct mut_driver *m = drv;
    if (m->inner->set_root_page_table)
        m->inner->set_root_page_table(m->sg, a);
}

static uint64_t mut_root_size(void *drv, uint32_t *n)
{
    struct mut_driver *m = drv;
    return m->inner->get_root_page_table_size ? m->inner->get_root_page_table_size(m->sg, n) : 0;
}

static const struct vidmm_driver_ops mut_ops = {
    .abi_version = VIDMM_ABI_VERSION,
    mut_query, mut_describe, mut_destroy, mut_build, mut_submit, mut_map_hap, mut_unmap_hap, mut_set_root,
    mut_root_size, NULL, NULL, NULL,  /* no command submission through this wrapper */
    NULL, NULL, NULL, NULL, NULL      /* nor resets or power */
};

/* dgpu: [1] visible 64K pages, [2] invisible + host aperture, [3] aperture.
 * wddm1: [1] visible, [2] invisible, [3] AGP, [4] aperture (4K pages). */
#define D(i) (out->segment_descriptor[(i) - 1])
static void m_overlap(struct vidmm_query_segment_out *out) { D(2).base_address = D(1).base_address + 65536; }
static void m_two_apertures(struct vidmm_query_segment_out *out) { D(2).flags = VIDMM_SEGMENT_APERTURE; D(2).commit_limit = 0; }
static void m_agp_without_agp(struct vidmm_query_segment_out *out) { D(1).flags = VIDMM_SEGMENT_AGP; }
static void m_agp_with_flags(struct vidmm_query_segment_out *out) { D(3).flags = VIDMM_SEGMENT_AGP | VIDMM_SEGMENT_CPU_VISIBLE; }
static void m_two_agp(struct vidmm_query_segment_out *out) { D(2).flags = VIDMM_SEGMENT_AGP; }
static void m_zero_size(struct vidmm_query_segment_out *out) { D(1).size = 0; }
static void m_size_misaligned(struct vidmm_query_segment_out *out) { D(1).size += 4096; }
static void m_base_misaligned(struct vidmm_query_segment_out *out) { D(2).base_address += 4096; }
static void m_page_size_8k(struct vidmm_query_segment_out *out) { D(1).page_size = 8192; }
static void m_page_size_mismatch(struct vidmm_query_segment_out *out) { D(1).page_size = 4096; }
static void m_paging_id_range(struct vidmm_query_segment_out *out) { out->paging_buffer_segment_id = out->nb_segment + 1; }
static void m_paging_not_aperture(struct vidmm_query_segment_out *out) { out->paging_buffer_segment_id = 1; }
static void m_paging_size(struct vidmm_query_segment_out *out) { out->paging_buffer_size = 100; }
static void m_unknown_flag(struct vidmm_query_segment_out *out) { D(1).flags |= 0x40000000u; }
static void m_reserved_sysmem(struct vidmm_query_segment_out *out) { D(1).flags |= VIDMM_SEGMENT_RESERVED_SYSMEM; }
static void m_banking(struct vidmm_query_segment_out *out) { D(1).flags |= VIDMM_SEGMENT_USE_BANKING; }
static void m_coherent_memory(struct vidmm_query_segment_out *out) { D(1).flags |= VIDMM_SEGMENT_CACHE_COHERENT; }
static void m_visible_and_hostap(struct vidmm_query_segment_out *out) { D(2).flags |= VIDMM_SEGMENT_CPU_VISIBLE; }
static void m_visible_no_address(struct vidmm_query_segment_out *out) { D(1).cpu_translated_address = NULL; }
static void m_hostap_no_pages(struct vidmm_query_segment_out *out) { D(2).cpu_host_aperture.size_in_pages = 0; }
static void m_cached_hostap_alone(struct vidmm_query_segment_out *out) { D(1).flags |= VIDMM_SEGMENT_SUPPORTS_CACHED_CPU_HOST_APERTURE; }
static void m_hibernate_no_standby(struct vidmm_query_segment_out *out) { D(1).flags |= VIDMM_SEGMENT_PRESERVED_DURING_HIBERNATE; }
static void m_64k_aperture(struct vidmm_query_segment_out *out) { D(3).flags |= VIDMM_SEGMENT_USE_64KB_PAGES; }
static void m_commit_over_size(struct vidmm_query_segment_out *out) { D(3).commit_limit = D(3).size + 4096; }
static void m_no_aperture(struct vidmm_query_segment_out *out) { D(3).flags = 0; }
static void m_overflow(struct vidmm_query_segment_out *out) { D(2).base_address = UINT64_MAX - 65535; }
#undef D

struct bad_row {
    const char *name;
    const char *preset;
    void (*mutate)(struct vidmm_query_segment_out *out);
    const char *message_part; /* the message must contain this */
};

static const struct bad_row bad_rows[] = {
    { "overlap", "dgpu", m_overlap, "overlaps segment 1" },
    { "two apertures", "dgpu", m_two_apertures, "more than one aperture" },
    { "AGP segment without AGP aperture", "dgpu", m_agp_without_agp, "no AGP aperture" },
    { "AGP segment with other flags", "wddm1", m_agp_with_flags, "no other flag" },
    { "two AGP segments", "wddm1", m_two_agp, "more than one AGP" },
    { "zero size", "dgpu", m_zero_size, "size is zero" },
    { "size not a page multiple", "dgpu", m_size_misaligned, "not a multiple" },
    { "base not page aligned", "dgpu", m_base_misaligned, "not aligned" },
    { "page size 8 KB", "dgpu", m_page_size_8k, "neither 4 KB nor 64 KB" },
    { "page size disagrees with flag", "dgpu", m_page_size_mismatch, "disagrees" },
    { "paging segment id out of range", "dgpu", m_paging_id_range, "out of range" },
    { "paging segment not an aperture", "dgpu", m_paging_not_aperture, "not an aperture" },
    { "paging buffer size", "dgpu", m_paging_size, "paging-buffer size" },
    { "unknown flag", "dgpu", m_unknown_flag, "unknown flag" },
    { "ReservedSysMem", "dgpu", m_reserved_sysmem, "ReservedSysMem" },
    { "banking", "dgpu", m_banking, "UseBanking" },
    { "CacheCoherent on memory", "dgpu", m_coherent_memory, "CacheCoherent" },
    { "CpuVisible and host aperture", "dgpu", m_visible_and_hostap, "mutually exclusive" },
    { "CpuVisible without address", "dgpu", m_visible_no_address, "without a CPU address" },
    { "host aperture without pages", "dgpu", m_hostap_no_pages, "no pages" },
    { "cached host aperture alone", "dgpu", m_cached_hostap_alone, "requires SupportsCpuHostAperture" },
    { "hibernate without standby", "dgpu", m_hibernate_no_standby, "PreservedDuringStandby" },
    { "64 KB pages on the aperture", "dgpu", m_64k_aperture, "Use64KBPages" },
    { "aperture commit limit over size", "dgpu", m_commit_over_size, "commit limit" },
    { "no aperture", "dgpu", m_no_aperture, "no aperture segment" },
    { "base + size overflows", "dgpu", m_overflow, "overflows" },
};

struct fixture {
    struct fault_alloc fa;
    struct softgpu *sg;
    struct mut_driver m;
    struct vidmm_adapter_create_info ci;
    char msg[256];
};

static int fixture_init(struct fixture *f, const char *preset)
{
    memset(f, 0, sizeof(*f));
    fault_alloc_init(&f->fa);
    struct softgpu_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.preset = preset;
    T_ST(softgpu_create(&cfg, &f->sg), VIDMM_OK);
    if (!f->sg)
        return -1;
    softgpu_fill_adapter_create_info(f->sg, &f->ci);
    f->m.sg = f->sg;
    f->m.inner = f->ci.ops;
    f->m.first_call_count_override = -1;
    f->ci.ops = &mut_ops;
    f->ci.driver = &f->m;
    f->ci.host_allocator = &f->fa.ha;
    f->ci.error_message = f->msg;
    f->ci.error_message_size = sizeof(f->msg);
    return 0;
}

static void fixture_fini(struct fixture *f)
{
    T_EQ(f->fa.live_blocks, 0);
    softgpu_destroy(f->sg);
}

static void bad_descriptions(void)
{
    for (size_t i = 0; i < sizeof(bad_rows) / sizeof(bad_rows[0]); i++) {
        const struct bad_row *r = &bad_rows[i];
        struct fixture f;
        fixture_init(&f, r->preset);
        f.m.mutate = r->mutate;
        struct vidmm_adapter *a = (struct vidmm_adapter *)&f; /* poison: must be overwritten with NULL */
        vidmm_status st = vidmm_adapter_open(&f.ci, &a);
        if (st != VIDMM_E_BAD_DRIVER_DESC || !strstr(f.msg, r->message_part)) {
            char m[512];
            snprintf(m, sizeof m, "row '%s': %s, message '%s' (want '%s')", r->name, vidmm_status_str(st), f.msg,
                     r->message_part);
            t_fail(__FILE__, __LINE__, m);
        }
        T_CHECK(a == NULL);
        if (st >= 0)
            vidmm_adapter_close(a);
        fixture_fini(&f);
    }
}

static void every_preset_opens(void)
{
    const char *const *names = softgpu_preset_names();
    int n = 0;
    for (; names[n]; n++) {
        if (t_no_big() && !strcmp(names[n], "big"))
            continue;
        struct fixture f;
        if (fixture_init(&f, names[n]) < 0)
            continue;
        struct vidmm_adapter *a = NULL;
        T_ST(vidmm_adapter_open(&f.ci, &a), VIDMM_OK);
        if (!a) {
            fixture_fini(&f);
            continue;
        }
        T_CHECK(f.msg[0] == '\0');
        /* caps + the two segment calls, + GpuMmu caps and one per level */
        struct vidmm_gpummu_info gi;
        if (vidmm_adapter_query_gpummu(a, &gi) == VIDMM_OK)
            T_EQ(f.m.queries, 3 + 1 + (int)gi.level_count);
        else
            T_EQ(f.m.queries, 3);
        char rep[512];
        T_EQ(vidmm_adapter_check(a, rep, sizeof rep), 0);
        struct vidmm_adapter_info ai;
        T_ST(vidmm_adapter_query_info(a, &ai), VIDMM_OK);
        T_CHECK(ai.segment_count >= 2 && ai.segment_count <= 32);
        if (ai.segment_count > 32)
            ai.segment_count = 0;
        T_CHECK(ai.aperture_segment_id >= 1 && ai.aperture_segment_id < ai.segment_count);
        struct vidmm_segment_info s0;
        T_ST(vidmm_segment_query(a, 0, &s0), VIDMM_OK);
        T_EQ(s0.kind, VIDMM_SEGMENT_KIND_SYSTEM);
        T_EQ(s0.page_size, 4096);
        for (uint32_t id = 1; id < ai.segment_count; id++) {
            struct vidmm_segment_info si;
            T_ST(vidmm_segment_query(a, id, &si), VIDMM_OK);
            T_EQ(si.id, id);
            T_CHECK(si.page_size == 4096 || si.page_size == 65536);
            T_CHECK(si.size % si.page_size == 0);
            T_CHECK(si.commit_limit <= si.size);
        }
        T_ST(vidmm_segment_query(a, ai.segment_count, &s0), VIDMM_E_INVALID_ARG);
        vidmm_adapter_close(a);
        fixture_fini(&f);
    }
    T_CHECK(n >= 4);
}

static void query_protocol_faults(void)
{
    struct {
        const char *name;
        int count, change, fail_caps;
        const char *msg;
    } rows[] = {
        { "no segments", 0, 0, 0, "no segments" },
        { "32 segments", 32, 0, 0, "at most 31" },
        { "count changes between calls", -1, 1, 0, "count changed" },
        { "driver caps query fails", -1, 0, 1, "caps query failed" },
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct fixture f;
        fixture_init(&f, "dgpu");
        f.m.first_call_count_override = rows[i].count;
        f.m.change_count_on_second = rows[i].change;
        f.m.fail_caps = rows[i].fail_caps;
        struct vidmm_adapter *a = NULL;
        T_ST(vidmm_adapter_open(&f.ci, &a), VIDMM_E_BAD_DRIVER_DESC);
        if (!strstr(f.msg, rows[i].msg)) {
            char m[512];
            snprintf(m, sizeof m, "row '%s': message '%s'", rows[i].name, f.msg);
            t_fail(__FILE__, __LINE__, m);
        }
        fixture_fini(&f);
    }
}

/* The OS's AGP aperture must not run past 2^64 (a wrapped range covers
 * the segments at low addresses without the overlap test seeing it), and
 * a system-memory limit below one page must not become a 0-byte
 * segment 0. */
static void open_bad_aperture_and_limit(void)
{
    struct fixture f;
    if (fixture_init(&f, "wddm1") != 0)
        return;
    struct vidmm_adapter *a = NULL;
    struct vidmm_adapter_create_info ci = f.ci;
    ci.agp_aperture_base = 0xfffffffffffff000ull;       /* wraps to [0, 0x0ffff000): segment 1 */
    ci.agp_aperture_size = 0x10000000ull;
    T_ST(vidmm_adapter_open(&ci, &a), VIDMM_E_INVALID_ARG);
    T_CHECK(a == NULL);
    T_CHECK(strstr(f.msg, "AGP aperture") != NULL);
    ci.agp_aperture_base = 0xfffffffff0000000ull;       /* ends exactly at 2^64: wraps to 0 */
    ci.agp_aperture_size = 0x10000000ull;
    T_ST(vidmm_adapter_open(&ci, &a), VIDMM_E_INVALID_ARG);
    ci.agp_aperture_base = 0xffffffffe0000000ull;       /* ends just below 2^64: a valid range */
    T_ST(vidmm_adapter_open(&ci, &a), VIDMM_OK);
    struct vidmm_segment_info si;
    struct vidmm_adapter_info ai;
    T_ST(vidmm_adapter_query_info(a, &ai), VIDMM_OK);
    T_CHECK(ai.agp_segment_id != 0);
    T_ST(vidmm_segment_query(a, ai.agp_segment_id, &si), VIDMM_OK);
    T_EQ(si.base_address, 0xffffffffe0000000ull);
    T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
    vidmm_adapter_close(a);
    a = NULL;

    static const uint64_t tiny[] = { 1, 4095 };
    for (size_t i = 0; i < 2; i++) {
        ci = f.ci;
        ci.system_memory_limit = tiny[i];
        f.msg[0] = 0;
        T_ST(vidmm_adapter_open(&ci, &a), VIDMM_E_INVALID_ARG);
        T_CHECK(a == NULL);
        T_CHECK(strstr(f.msg, "system-memory limit") != NULL);
    }
    ci = f.ci;
    ci.system_memory_limit = 4096 + 100;                /* one page, rounded down */
    T_ST(vidmm_adapter_open(&ci, &a), VIDMM_OK);
    T_ST(vidmm_segment_query(a, 0, &si), VIDMM_OK);
    T_EQ(si.size, 4096);
    vidmm_adapter_close(a);
    fixture_fini(&f);
}

static void open_bad_arguments(void)
{
    struct fixture f;
    fixture_init(&f, "dgpu");
    struct vidmm_adapter *a = NULL;
    T_ST(vidmm_adapter_open(NULL, &a), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_adapter_open(&f.ci, NULL), VIDMM_E_INVALID_ARG);
    struct vidmm_adapter_create_info ci = f.ci;
    ci.ops = NULL;
    T_ST(vidmm_adapter_open(&ci, &a), VIDMM_E_INVALID_ARG);
    struct vidmm_driver_ops ops = mut_ops;
    ops.build_paging_buffer = NULL;
    ci = f.ci;
    ci.ops = &ops;
    T_ST(vidmm_adapter_open(&ci, &a), VIDMM_E_INVALID_ARG);
    ops = mut_ops;
    ops.map_cpu_host_aperture = NULL; /* dgpu segment 2 has a host aperture */
    ci.ops = &ops;
    T_ST(vidmm_adapter_open(&ci, &a), VIDMM_E_BAD_DRIVER_DESC);
    T_CHECK(strstr(f.msg, "host aperture") != NULL);
    ci = f.ci;
    ci.agp_aperture_size = 4097;
    T_ST(vidmm_adapter_open(&ci, &a), VIDMM_E_INVALID_ARG);
    /* Layout generations: 0 (never set) and one this library does not
     * know are refused with a message naming the field, for the create
     * info and for the driver's ops table alike. */
    ci = f.ci;
    ci.abi_version = 0;
    T_ST(vidmm_adapter_open(&ci, &a), VIDMM_E_INVALID_ARG);
    T_CHECK(strstr(f.msg, "abi_version 0") != NULL);
    ci.abi_version = VIDMM_ABI_VERSION + 1;
    T_ST(vidmm_adapter_open(&ci, &a), VIDMM_E_INVALID_ARG);
    ci = f.ci;
    ops = mut_ops;
    ops.abi_version = 0;
    ci.ops = &ops;
    T_ST(vidmm_adapter_open(&ci, &a), VIDMM_E_INVALID_ARG);
    T_CHECK(strstr(f.msg, "driver ops abi_version") != NULL);
    T_CHECK(vidmm_version() == VIDMM_VERSION);
    T_CHECK(strcmp(vidmm_version_string(), VIDMM_VERSION_STRING) == 0);
    struct vidmm_host_allocator broken = { NULL, NULL, NULL, NULL };
    ci = f.ci;
    ci.host_allocator = &broken;
    T_ST(vidmm_adapter_open(&ci, &a), VIDMM_E_INVALID_ARG);
    T_CHECK(a == NULL);
    vidmm_adapter_close(NULL); /* harmless */
    T_EQ(vidmm_adapter_check(NULL, NULL, 0), 1);
    struct vidmm_adapter_info ai;
    T_ST(vidmm_adapter_query_info(NULL, &ai), VIDMM_E_INVALID_ARG);
    fixture_fini(&f);
}

/* Every host allocation of adapter start-up can fail: each must give
 * VIDMM_E_NO_HOST_MEMORY and leak nothing. */
static void open_out_of_host_memory(void)
{
    const char *presets[] = { "dgpu", "wddm1", "igpu" };
    for (size_t p = 0; p < 3; p++) {
        int succeeded = 0;
        for (uint64_t k = 1; k < 200 && !succeeded; k++) {
            struct fixture f;
            fixture_init(&f, presets[p]);
            f.fa.fail_at = k;
            struct vidmm_adapter *a = NULL;
            vidmm_status st = vidmm_adapter_open(&f.ci, &a);
            if (st == VIDMM_OK) {
                succeeded = 1;
                T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
                vidmm_adapter_close(a);
            } else {
                T_ST(st, VIDMM_E_NO_HOST_MEMORY);
                T_CHECK(a == NULL);
            }
            fixture_fini(&f);
        }
        T_CHECK(succeeded);
    }
}

/* A driver with only the required ops: describe_allocation defaults to
 * reading a struct vidmm_allocation_info from the private data. */
static void default_describe_op(void)
{
    struct fixture f;
    fixture_init(&f, "igpu");
    struct vidmm_driver_ops ops = mut_ops;
    ops.describe_allocation = NULL;
    ops.destroy_allocation = NULL;
    ops.map_cpu_host_aperture = NULL;
    ops.unmap_cpu_host_aperture = NULL;
    f.ci.ops = &ops;
    struct vidmm_adapter *a = NULL;
    T_ST(vidmm_adapter_open(&f.ci, &a), VIDMM_OK);
    struct vidmm_allocation_info info;
    memset(&info, 0, sizeof(info));
    info.size = 100000;
    info.supported_write_segment_set = VIDMM_SEGMENT_BIT(1);
    info.flags = VIDMM_ALLOC_ACCESSED_PHYSICALLY | VIDMM_ALLOC_CPU_VISIBLE;
    vidmm_handle h = 0;
    T_ST(vidmm_allocation_create(a, &info, sizeof(info), &h), VIDMM_OK);
    struct vidmm_allocation_state st;
    T_ST(vidmm_allocation_query(a, h, &st), VIDMM_OK);
    T_EQ(st.size, 102400);
    T_EQ(st.segment_id, 1);
    T_EQ(st.aperture_mapped, 1);
    T_ST(vidmm_allocation_create(a, &info, sizeof(info) - 1, &h), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_allocation_create(a, NULL, 0, &h), VIDMM_E_INVALID_ARG);
    T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
    vidmm_adapter_close(a); /* destroys the live allocation */
    fixture_fini(&f);
}

/* Random descriptions: whatever the driver says, open either succeeds with
 * a sound adapter or fails with VIDMM_E_BAD_DRIVER_DESC and a message; it
 * never crashes and never leaks. */
static uint64_t fuzz_state;
static void m_fuzz(struct vidmm_query_segment_out *out)
{
    uint64_t *st = &fuzz_state;
    uint32_t k = 1 + (uint32_t)t_rand_range(st, 4);
    for (uint32_t i = 0; i < k; i++) {
        struct vidmm_segment_descriptor *d = &out->segment_descriptor[t_rand_range(st, out->nb_segment)];
        switch (t_rand_range(st, 8)) {
        case 0: d->flags ^= 1u << t_rand_range(st, 32); break;
        case 1: d->size = t_rand_range(st, 2) ? t_rand(st) : d->size + 4096 * t_rand_range(st, 64); break;
        case 2: d->base_address = t_rand_range(st, 2) ? t_rand(st) : d->base_address ^ (65536ull << t_rand_range(st, 20)); break;
        case 3: d->commit_limit = t_rand_range(st, 3) ? d->size >> t_rand_range(st, 4) : t_rand(st); break;
        case 4: d->page_size = (uint32_t)(t_rand_range(st, 2) ? 4096u << (4 * t_rand_range(st, 2)) : t_rand(st)); break;
        case 5: out->paging_buffer_segment_id = (uint32_t)t_rand_range(st, out->nb_segment + 3); break;
        case 6: out->paging_buffer_size = (uint32_t)(t_rand_range(st, 2) ? 4096 * t_rand_range(st, 32) : t_rand(st)); break;
        case 7: d->cpu_host_aperture.size_in_pages = (uint32_t)t_rand_range(st, 1024); break;
        }
    }
}

static void fuzz_descriptions(void)
{
    uint64_t seed = t_seed() ^ 0xADA97E5ull;
    const char *presets[] = { "dgpu", "wddm1", "igpu" };
    unsigned runs = 300 * t_scale(), opened = 0, rejected = 0;
    for (unsigned i = 0; i < runs; i++) {
        struct fixture f;
        if (fixture_init(&f, presets[i % 3]) < 0)
            continue;
        fuzz_state = seed + i;
        f.m.mutate = m_fuzz;
        struct vidmm_adapter *a = NULL;
        vidmm_status st = vidmm_adapter_open(&f.ci, &a);
        if (st == VIDMM_OK) {
            opened++;
            T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
            vidmm_adapter_close(a);
        } else {
            rejected++;
            T_CHECK(st == VIDMM_E_BAD_DRIVER_DESC || st == VIDMM_E_NO_HOST_MEMORY);
            T_CHECK(st != VIDMM_E_BAD_DRIVER_DESC || f.msg[0] != '\0');
            T_CHECK(a == NULL);
        }
        fixture_fini(&f);
    }
    T_CHECK(rejected > runs / 2);
    printf("adapter.fuzz_descriptions: %u random descriptions, %u opened, %u rejected\n", runs, opened, rejected);
}

static void mc_one_level(struct vidmm_gpummu_caps *c) { c->page_table_level_count = 1; }
static void mc_seven_levels(struct vidmm_gpummu_caps *c) { c->page_table_level_count = 7; }
static void mc_va_bits(struct vidmm_gpummu_caps *c) { c->virtual_address_bit_count += 1; }
static void mc_mode(struct vidmm_gpummu_caps *c) { c->page_table_update_mode = 5; }
static void mc_leaf64(struct vidmm_gpummu_caps *c) { c->leaf_page_table_size_for_64k_pages_in_bytes = 100; }
static void ml_size(uint32_t l, struct vidmm_page_table_level_desc *d) { if (l == 1) d->page_table_size_in_bytes = 6000; }
static void ml_segment(uint32_t l, struct vidmm_page_table_level_desc *d) { if (l == 0) d->page_table_segment_id = 9; }
static void ml_aperture(uint32_t l, struct vidmm_page_table_level_desc *d) { if (l == 0) d->page_table_segment_id = 3; }
static void ml_bits(uint32_t l, struct vidmm_page_table_level_desc *d) { if (l == 1) d->page_table_index_bit_count = 0; }
static void ml_align(uint32_t l, struct vidmm_page_table_level_desc *d) { if (l == 0) d->page_table_alignment_in_bytes = 3 * 4096; }

/* A GpuMmu geometry vidmm cannot use is refused at open, by name. */
static void bad_gpummu_geometry(void)
{
    struct {
        const char *name;
        void (*caps)(struct vidmm_gpummu_caps *);
        void (*level)(uint32_t, struct vidmm_page_table_level_desc *);
        int fail;
        const char *msg;
    } rows[] = {
        { "caps query fails", NULL, NULL, 1, "GPUMMUCAPS query failed" },
        { "1 level", mc_one_level, NULL, 0, "page-table levels" },
        { "7 levels", mc_seven_levels, NULL, 0, "page-table levels" },
        { "VA bits disagree", mc_va_bits, NULL, 0, "VA bits" },
        { "update mode", mc_mode, NULL, 0, "update mode" },
        { "64 KB leaf size", mc_leaf64, NULL, 0, "64 KB leaf table size" },
        { "table size", NULL, ml_size, 0, "table size" },
        { "table segment missing", NULL, ml_segment, 0, "does not exist" },
        { "tables in the aperture", NULL, ml_aperture, 0, "not a memory segment" },
        { "zero index bits", NULL, ml_bits, 0, "indexes 0 VA bits" },
        { "alignment", NULL, ml_align, 0, "power of two" },
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct fixture f;
        if (fixture_init(&f, "dgpu") < 0)
            continue;
        f.m.mutate_mmu_caps = rows[i].caps;
        f.m.mutate_level = rows[i].level;
        f.m.fail_mmu_caps = rows[i].fail;
        struct vidmm_adapter *a = NULL;
        vidmm_status st = vidmm_adapter_open(&f.ci, &a);
        if (st != VIDMM_E_BAD_DRIVER_DESC || !strstr(f.msg, rows[i].msg)) {
            char m[512];
            snprintf(m, sizeof m, "row '%s': %s, message '%s'", rows[i].name, vidmm_status_str(st), f.msg);
            t_fail(__FILE__, __LINE__, m);
        }
        if (st >= 0)
            vidmm_adapter_close(a);
        fixture_fini(&f);
    }
    /* The geometry as accepted. */
    struct fixture f;
    if (fixture_init(&f, "dgpu") == 0) {
        struct vidmm_adapter *a = NULL;
        T_ST(vidmm_adapter_open(&f.ci, &a), VIDMM_OK);
        struct vidmm_gpummu_info gi;
        T_ST(vidmm_adapter_query_gpummu(a, &gi), VIDMM_OK);
        uint32_t bits = 12;
        for (uint32_t l = 0; l < gi.level_count; l++) {
            bits += gi.level[l].page_table_index_bit_count;
            T_EQ_U64(gi.leaf_span[l], 1ull << bits);
        }
        T_EQ(bits, gi.caps.virtual_address_bit_count);
        T_EQ_U64(gi.va_size, 1ull << bits);
        T_ST(vidmm_adapter_query_gpummu(a, NULL), VIDMM_E_INVALID_ARG);
        vidmm_adapter_close(a);
        fixture_fini(&f);
    }
    if (fixture_init(&f, "igpu") == 0) {
        struct vidmm_adapter *a = NULL;
        T_ST(vidmm_adapter_open(&f.ci, &a), VIDMM_OK);
        struct vidmm_gpummu_info gi;
        T_ST(vidmm_adapter_query_gpummu(a, &gi), VIDMM_E_NOT_SUPPORTED);
        vidmm_adapter_close(a);
        fixture_fini(&f);
    }
}

void suite_adapter(void);
void suite_adapter(void)
{
    t_run("adapter.every_preset_opens", every_preset_opens);
    t_run("adapter.bad_descriptions", bad_descriptions);
    t_run("adapter.query_protocol_faults", query_protocol_faults);
    t_run("adapter.open_bad_arguments", open_bad_arguments);
    t_run("adapter.open_bad_aperture_and_limit", open_bad_aperture_and_limit);
    t_run("adapter.open_out_of_host_memory", open_out_of_host_memory);
    t_run("adapter.default_describe_op", default_describe_op);
    t_run("adapter.fuzz_descriptions", fuzz_descriptions);
    t_run("adapter.bad_gpummu_geometry", bad_gpummu_geometry);
}
