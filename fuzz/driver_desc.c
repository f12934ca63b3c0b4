/*
 * driver_desc.c - libFuzzer harness: a mock driver whose adapter
 * description comes from the input.
 *
 * query_adapter_info answers the driver caps (WDDM version, memory
 * management caps, adapter flags, node count, aperture commit limit), the
 * two-call segment query (count, then descriptors: flags, page sizes,
 * bases, sizes, commit limits, CPU host apertures, paging-buffer segment
 * and size) and the GpuMmu caps and page-table level descriptors from
 * the input; any query may also fail.  vidmm_adapter_open() must return
 * a known status and never crash.  When it succeeds the harness creates a
 * process, a device, a paging queue and a few allocations, makes them
 * resident, maps them, locks and moves them, checks, and destroys all of
 * it; the counting host allocator must be back to 0 live bytes.
 *
 * The mock is honest where a real driver must be (a CPU-visible segment
 * or a CPU host aperture is backed by a host mapping of its full size)
 * and checks vidmm in return: every paging operation must lie inside the
 * segments it described (an operation outside them aborts: a vidmm bug).
 * Paging buffers carry nothing; submit_command signals the fence at once.
 */
#include "fuzz.h"
#include "vidmm/vidmm.h"

#include <sys/mman.h>

#define MIB (1ull << 20)
#define KIB (1ull << 10)
#define GIB (1ull << 30)

#define MAX_DESC 40u

struct mock {
    struct fz_in in;
    struct fz_alloc fa;
    struct vidmm_adapter *a;
    struct vidmm_driver_caps caps;
    int caps_fail, seg_fail, mmu_fail, lvl_fail;
    uint32_t nb, nb_second;
    struct vidmm_segment_descriptor d[MAX_DESC];
    uint32_t pb_segment, pb_size, pb_private;
    struct vidmm_gpummu_caps mmu;
    struct vidmm_page_table_level_desc lvl[VIDMM_MAX_PAGE_TABLE_LEVELS + 1];
    uint64_t root_size;
    uint32_t root_pte_max;
    /* Host mappings made for the description. */
    void *map[2 * MAX_DESC];
    size_t map_len[2 * MAX_DESC];
    uint32_t nmap;
    uint64_t paging_ops;
    uint64_t agp_base, agp_size;  /* the OS's AGP aperture: an AGP segment's range, whatever its descriptor says */
    char report[1024];
};

static void *backing(struct mock *m, uint64_t bytes)
{
    if (bytes == 0 || bytes > 64 * GIB || m->nmap == 2 * MAX_DESC)
        return NULL;
    void *p = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    m->map[m->nmap] = p;
    m->map_len[m->nmap++] = (size_t)bytes;
    return p;
}

/* ---- the ops ---------------------------------------------------------------- */

static vidmm_status mock_query(void *driver, const struct vidmm_query_adapter_info_args *args)
{
    struct mock *m = driver;
    switch (args->type) {
    case VIDMM_QAI_DRIVERCAPS:
        if (m->caps_fail)
            return m->caps_fail < 0 ? (vidmm_status)m->caps_fail : VIDMM_E_NOT_SUPPORTED;
        if (!args->output || args->output_size < sizeof m->caps)
            return VIDMM_E_INVALID_ARG;
        memcpy(args->output, &m->caps, sizeof m->caps);
        return VIDMM_OK;
    case VIDMM_QAI_QUERYSEGMENT: {
        if (m->seg_fail)
            return m->seg_fail < 0 ? (vidmm_status)m->seg_fail : VIDMM_E_NOT_SUPPORTED;
        struct vidmm_query_segment_out *o = args->output;
        if (!o || args->output_size < sizeof *o)
            return VIDMM_E_INVALID_ARG;
        if (!o->segment_descriptor) {
            o->nb_segment = m->nb;
            return VIDMM_OK;
        }
        FUZZ_REQUIRE(o->segment_descriptor_stride >= sizeof(struct vidmm_segment_descriptor),
                     "segment query: stride %zu", o->segment_descriptor_stride);
        /* vidmm gave room for nb_segment records: fill what it asked for. */
        uint32_t n = o->nb_segment < m->nb ? o->nb_segment : m->nb;
        for (uint32_t i = 0; i < n && i < MAX_DESC; i++)
            memcpy((uint8_t *)o->segment_descriptor + i * o->segment_descriptor_stride, &m->d[i], sizeof m->d[i]);
        o->nb_segment = m->nb_second;
        o->paging_buffer_segment_id = m->pb_segment;
        o->paging_buffer_size = m->pb_size;
        o->paging_buffer_private_data_size = m->pb_private;
        return VIDMM_OK;
    }
    case VIDMM_QAI_GPUMMUCAPS:
        if (m->mmu_fail)
            return VIDMM_E_NOT_SUPPORTED;
        if (!args->output || args->output_size < sizeof m->mmu)
            return VIDMM_E_INVALID_ARG;
        memcpy(args->output, &m->mmu, sizeof m->mmu);
        return VIDMM_OK;
    case VIDMM_QAI_PAGETABLELEVELDESC: {
        const struct vidmm_query_page_table_level_in *in = args->input;
        if (m->lvl_fail || !in || args->input_size < sizeof *in)
            return VIDMM_E_INVALID_ARG;
        if (!args->output || args->output_size < sizeof m->lvl[0])
            return VIDMM_E_INVALID_ARG;
        if (in->level_index > VIDMM_MAX_PAGE_TABLE_LEVELS)
            return VIDMM_E_INVALID_ARG;
        memcpy(args->output, &m->lvl[in->level_index], sizeof m->lvl[0]);
        return VIDMM_OK;
    }
    default:
        return VIDMM_E_NOT_SUPPORTED;
    }
}

/* An operation's [address, address + size) must lie in the segment vidmm
 * was given. */
static void require_in_segment(struct mock *m, const char *what, uint32_t id, uint64_t address, uint64_t size)
{
    FUZZ_REQUIRE(id >= 1 && id <= m->nb, "%s: segment %u of %u", what, id, m->nb);
    const struct vidmm_segment_descriptor *d = &m->d[id - 1];
    uint64_t base = d->flags & VIDMM_SEGMENT_AGP ? m->agp_base : d->base_address;
    uint64_t bytes = d->flags & VIDMM_SEGMENT_AGP ? m->agp_size : d->size;
    FUZZ_REQUIRE(address >= base && address - base <= bytes && size <= bytes - (address - base),
                 "%s: [%#llx, +%#llx) outside segment %u [%#llx, +%#llx)", what, (unsigned long long)address,
                 (unsigned long long)size, id, (unsigned long long)base, (unsigned long long)bytes);
}

static uint64_t seg_base(const struct mock *m, uint32_t id)
{
    if (id < 1 || id > m->nb || id > MAX_DESC)
        return 0;
    return m->d[id - 1].flags & VIDMM_SEGMENT_AGP ? m->agp_base : m->d[id - 1].base_address;
}

static void require_side(struct mock *m, const char *what, const struct vidmm_transfer_side *s, uint64_t size,
                         uint64_t mdl_offset)
{
    if (s->segment_id == 0) {
        FUZZ_REQUIRE(s->mdl && s->mdl->base, "%s: system side without MDL", what);
        FUZZ_REQUIRE(mdl_offset <= s->mdl->page_count && (size + 4095u) / 4096u <= s->mdl->page_count - mdl_offset,
                     "%s: MDL too short", what);
    } else {
        require_in_segment(m, what, s->segment_id, s->segment_address, size);
    }
}

static vidmm_status mock_build(void *driver, struct vidmm_build_paging_buffer_args *args)
{
    struct mock *m = driver;
    m->paging_ops++;
    switch (args->operation) {
    case VIDMM_PAGING_TRANSFER:
        require_side(m, "transfer source", &args->u.transfer.source, args->u.transfer.transfer_size,
                     args->u.transfer.mdl_offset);
        require_side(m, "transfer destination", &args->u.transfer.destination, args->u.transfer.transfer_size,
                     args->u.transfer.mdl_offset);
        break;
    case VIDMM_PAGING_FILL:
        require_in_segment(m, "fill", args->u.fill.destination_segment_id, args->u.fill.destination_segment_address,
                           args->u.fill.fill_size);
        break;
    case VIDMM_PAGING_DISCARD_CONTENT:
        require_in_segment(m, "discard", args->u.discard_content.segment_id, args->u.discard_content.segment_address,
                           args->u.discard_content.size);
        break;
    case VIDMM_PAGING_MAP_APERTURE_SEGMENT: {
        const struct vidmm_paging_map_aperture *p = &args->u.map_aperture_segment;
        FUZZ_REQUIRE(p->number_of_pages <= UINT64_MAX / 4096u && p->offset_in_pages <= UINT64_MAX / 4096u,
                     "map aperture: page counts overflow");
        require_in_segment(m, "map aperture", p->segment_id,
                           seg_base(m, p->segment_id) + p->offset_in_pages * 4096u,
                           p->number_of_pages * 4096u);
        FUZZ_REQUIRE(p->mdl && p->mdl_offset + p->number_of_pages <= p->mdl->page_count, "map aperture: MDL");
        break;
    }
    case VIDMM_PAGING_UNMAP_APERTURE_SEGMENT: {
        const struct vidmm_paging_unmap_aperture *p = &args->u.unmap_aperture_segment;
        require_in_segment(m, "unmap aperture", p->segment_id,
                           seg_base(m, p->segment_id) + p->offset_in_pages * 4096u,
                           p->number_of_pages * 4096u);
        break;
    }
    case VIDMM_PAGING_UPDATE_PAGE_TABLE: {
        const struct vidmm_paging_update_page_table *u = &args->u.update_page_table;
        FUZZ_REQUIRE(u->page_table_entries && u->num_page_table_entries, "update page table: no entries");
        if (u->page_table_address.segment_id != 0)
            require_in_segment(m, "page table", u->page_table_address.segment_id,
                               seg_base(m, u->page_table_address.segment_id) +
                                   u->page_table_address.segment_offset,
                               4096u);
        break;
    }
    default:
        break;
    }
    /* Nothing is written: vidmm's paging buffer stays empty. */
    return VIDMM_OK;
}

static vidmm_status mock_submit(void *driver, const struct vidmm_submit_command_args *args)
{
    (void)driver;
    vidmm_cb_notify_fence(args->adapter, args->fence);
    return VIDMM_OK;
}

static vidmm_status mock_map_host(void *driver, const struct vidmm_map_cpu_host_aperture_args *args)
{
    (void)driver;
    (void)args;
    return VIDMM_OK;
}

static vidmm_status mock_unmap_host(void *driver, const struct vidmm_unmap_cpu_host_aperture_args *args)
{
    (void)driver;
    (void)args;
    return VIDMM_OK;
}

static uint64_t mock_root_size(void *driver, uint32_t *number_of_pte)
{
    struct mock *m = driver;
    if (m->root_pte_max && *number_of_pte > m->root_pte_max)
        return 0;
    if (m->root_pte_max && m->root_pte_max > *number_of_pte)
        *number_of_pte = m->root_pte_max;
    return m->root_size;
}

static const struct vidmm_driver_ops mock_ops = {
    .abi_version = VIDMM_ABI_VERSION,
    .query_adapter_info = mock_query,
    .build_paging_buffer = mock_build,
    .submit_command = mock_submit,
    .map_cpu_host_aperture = mock_map_host,
    .unmap_cpu_host_aperture = mock_unmap_host,
    .get_root_page_table_size = mock_root_size,
};

/* ---- decoding the description ------------------------------------------------ */

static uint64_t pick_size(struct fz_in *in)
{
    uint8_t b = fz_u8(in);
    switch (b >> 5) {
    case 0: return (uint64_t)(b & 31) * 64u * KIB;
    case 1: return (uint64_t)((b & 31) + 1) * MIB;
    case 2: return (uint64_t)((b & 31) + 1) * 4096u;
    case 3: return (uint64_t)(b & 31) << 30;
    case 4: return 1ull << (b & 63);
    case 5: return (uint64_t)fz_u32(in) * 4096u;
    default: return fz_u64(in);
    }
}

static const uint32_t seg_flag_sets[] = {
    VIDMM_SEGMENT_CPU_VISIBLE | VIDMM_SEGMENT_USE_64KB_PAGES | VIDMM_SEGMENT_LOCAL_BUDGET_GROUP,
    VIDMM_SEGMENT_USE_64KB_PAGES | VIDMM_SEGMENT_SUPPORTS_CPU_HOST_APERTURE | VIDMM_SEGMENT_LOCAL_BUDGET_GROUP,
    VIDMM_SEGMENT_APERTURE | VIDMM_SEGMENT_CACHE_COHERENT | VIDMM_SEGMENT_NON_LOCAL_BUDGET_GROUP,
    VIDMM_SEGMENT_APERTURE | VIDMM_SEGMENT_CACHE_COHERENT | VIDMM_SEGMENT_LOCAL_BUDGET_GROUP,
    VIDMM_SEGMENT_CPU_VISIBLE,
    0,
    VIDMM_SEGMENT_AGP,
    VIDMM_SEGMENT_APERTURE,
};

static void decode(struct mock *m, struct vidmm_adapter_create_info *ci)
{
    struct fz_in *in = &m->in;
    uint8_t b = fz_u8(in);
    static const uint32_t versions[] = { 0x2000, 0x2600, 0x1000, 0x3000 };
    m->caps.wddm_version = b & 0x80 ? fz_u32(in) : versions[b & 3];
    uint32_t mm = 0;
    if (b & 4) mm |= VIDMM_CAPS_VIRTUAL_ADDRESSING;
    if (b & 8) mm |= VIDMM_CAPS_GPUMMU;
    if (b & 16) mm |= VIDMM_CAPS_IOMMU;
    if (b & 32) mm |= fz_u32(in);
    m->caps.memory_management_caps = mm;
    m->caps.physical_adapter_flags = b & 64 ? VIDMM_ADAPTER_MOVE_PAGING_SUPPORTED : 0;
    m->caps.node_count = fz_u8(in) % 10;
    m->caps.aperture_segment_commit_limit = fz_u8(in) & 1 ? pick_size(in) : 0;

    uint8_t fail = fz_u8(in);
    m->caps_fail = fail == 1 ? -1 : fail == 2;
    m->seg_fail = fail == 3 ? -9 : fail == 4;
    m->mmu_fail = fail == 5;
    m->lvl_fail = fail == 6;

    uint8_t nb = fz_u8(in);
    m->nb = nb < 224 ? nb % 6 : nb & 0x80 ? (uint32_t)fz_u8(in) % MAX_DESC : fz_u32(in);
    m->nb_second = fz_u8(in) == 0xff ? fz_u8(in) : m->nb;
    uint32_t filled = m->nb < MAX_DESC ? m->nb : MAX_DESC;
    uint64_t next_base = 0;
    for (uint32_t i = 0; i < filled; i++) {
        struct vidmm_segment_descriptor *d = &m->d[i];
        uint8_t k = fz_u8(in);
        d->flags = k & 0x80 ? fz_u32(in) : seg_flag_sets[k & 7];
        if (k & 0x40)
            d->flags ^= 1u << (fz_u8(in) & 31);
        uint8_t p = fz_u8(in);
        d->page_size = p & 0x80 ? fz_u32(in) : (p & 3) == 1 ? 4096u : (p & 3) == 2 ? 65536u : 0;
        d->size = pick_size(in);
        d->base_address = p & 0x40 ? fz_u64(in) : next_base;
        if (d->size < (1ull << 48))
            next_base = (d->base_address + d->size + 0xffffu) & ~0xffffull;
        d->commit_limit = p & 0x20 ? pick_size(in) : 0;
        d->system_memory_end_address = p & 0x10 ? fz_u64(in) : 0;
        uint64_t page = d->flags & VIDMM_SEGMENT_USE_64KB_PAGES ? 65536u : 4096u;
        if (d->flags & VIDMM_SEGMENT_CPU_VISIBLE && !(p & 8))
            d->cpu_translated_address = backing(m, d->size);   /* NULL when too big: a lying driver */
        if (d->flags & VIDMM_SEGMENT_SUPPORTS_CPU_HOST_APERTURE) {
            uint32_t pages = p & 4 ? fz_u32(in) : fz_u8(in);
            d->cpu_host_aperture.size_in_pages = pages;
            if (!(p & 8) && pages && (uint64_t)pages * page <= 4 * GIB)
                d->cpu_host_aperture.cpu_address = backing(m, (uint64_t)pages * page);
        }
    }
    uint8_t pb = fz_u8(in);
    m->pb_segment = pb & 0x80 ? fz_u8(in) : pb % (m->nb + 1 < 8 ? m->nb + 1 : 8);
    m->pb_size = pb & 0x40 ? fz_u32(in) : 4096u * (1u + (pb & 0xf));
    m->pb_private = pb & 0x20 ? fz_u8(in) : 0;

    /* GpuMmu geometry. */
    uint8_t g = fz_u8(in);
    m->mmu.flags = g & 0x80 ? fz_u32(in) : (g & 1 ? VIDMM_GPUMMU_VIRTUAL_PAGING_OPS : 0) | (g & 0x0e);
    m->mmu.page_table_update_mode = g & 0x40 ? fz_u8(in) : VIDMM_PAGE_TABLE_UPDATE_GPU_PHYSICAL;
    uint32_t levels = (g >> 4) & 3 ? 2u + ((g >> 4) & 3) : fz_u8(in) % 9;   /* 2..5, or anything */
    m->mmu.page_table_level_count = levels;
    uint32_t bits_total = 12;
    uint32_t pt_seg = fz_u8(in) % (m->nb + 2 < 8 ? m->nb + 2 : 8);
    for (uint32_t l = 0; l <= VIDMM_MAX_PAGE_TABLE_LEVELS; l++) {
        struct vidmm_page_table_level_desc *ld = &m->lvl[l];
        uint8_t c = fz_u8(in);
        ld->page_table_index_bit_count = c & 0x80 ? fz_u8(in) : 9u + (c & 1);
        ld->page_table_segment_id = c & 0x40 ? fz_u8(in) % 8 : pt_seg;
        ld->paging_process_page_table_segment_id = c & 0x20 ? fz_u8(in) % 8 : pt_seg;
        ld->page_table_size_in_bytes =
            c & 0x10 ? pick_size(in) : ld->page_table_index_bit_count < 48 ? 8ull << ld->page_table_index_bit_count : 0;
        if (ld->page_table_size_in_bytes < 4096u && !(c & 0x10))
            ld->page_table_size_in_bytes = 4096u;
        ld->page_table_alignment_in_bytes = c & 8 ? pick_size(in) : 0;
        if (l == levels - 1 && levels == 2 && (c & 4))
            ld->page_table_size_in_bytes = 0;   /* a resizable root */
        if (l < levels)
            bits_total += ld->page_table_index_bit_count;
    }
    m->mmu.virtual_address_bit_count = fz_u8(in) == 0xff ? fz_u8(in) : bits_total;
    m->mmu.leaf_page_table_size_for_64k_pages_in_bytes =
        fz_u8(in) & 1 ? fz_u32(in)
                      : m->lvl[0].page_table_index_bit_count < 28
                          ? (uint32_t)((8ull << m->lvl[0].page_table_index_bit_count) / 16u + 4095u) & ~4095u
                          : 0;
    m->root_size = fz_u8(in) & 1 ? pick_size(in) : 64 * KIB;
    m->root_pte_max = fz_u8(in) & 1 ? fz_u32(in) : 0;

    uint8_t agp = fz_u8(in);
    if (agp & 1) {
        ci->agp_aperture_base = agp & 2 ? fz_u64(in) : 0xE0000000u;
        ci->agp_aperture_size = agp & 4 ? pick_size(in) : 64 * MIB;
    }
    m->agp_base = ci->agp_aperture_base;
    m->agp_size = ci->agp_aperture_size;
}

/* ---- after a successful open ------------------------------------------------- */

static void st_ok(struct mock *m, vidmm_status st, const char *what)
{
    FUZZ_REQUIRE(st >= VIDMM_E_NOT_ACCESSED_PHYSICALLY && st <= VIDMM_PENDING, "%s: unknown status %d", what,
                 (int)st);
    int e = vidmm_adapter_check(m->a, m->report, sizeof m->report);
    FUZZ_REQUIRE(e == 0, "%s (%s): adapter check: %d\n%s", what, vidmm_status_str(st), e, m->report);
}

static void exercise(struct mock *m)
{
    struct fz_in *in = &m->in;
    struct vidmm_adapter_info ai;
    st_ok(m, vidmm_adapter_query_info(m->a, &ai), "query_info");
    for (uint32_t i = 0; i < ai.segment_count; i++) {
        struct vidmm_segment_info si;
        st_ok(m, vidmm_segment_query(m->a, i, &si), "segment_query");
    }
    vidmm_handle proc = 0, dev = 0, queue = 0;
    st_ok(m, vidmm_process_create(m->a, &proc), "process_create");
    st_ok(m, vidmm_device_create(m->a, proc, &dev), "device_create");
    st_ok(m, vidmm_paging_queue_create(m->a, dev, 0, &queue), "queue_create");
    vidmm_handle h[4] = { 0, 0, 0, 0 };
    uint64_t size[4] = { 0, 0, 0, 0 };
    uint32_t nh = 0;
    uint32_t n = 1 + fz_u8(in) % 4;
    for (uint32_t i = 0; i < n; i++) {
        struct vidmm_allocation_info info;
        memset(&info, 0, sizeof info);
        uint8_t b = fz_u8(in);
        info.size = (uint64_t)(1 + fz_u8(in) % 64) * 16u * KIB;
        info.alignment = b & 1 ? 1ull << (fz_u8(in) % 24) : 0;
        info.supported_write_segment_set = b & 2 ? fz_u32(in) : (1u << (ai.segment_count - 1)) - 1u;
        info.supported_read_segment_set = info.supported_write_segment_set;
        info.preferred_segment = b & 4 ? fz_u32(in) & 0x3fffffffu : 0;
        info.flags = (b & 8 ? VIDMM_ALLOC_CPU_VISIBLE : 0) | (b & 16 ? VIDMM_ALLOC_ACCESSED_PHYSICALLY : 0) |
                     (b & 32 ? VIDMM_ALLOC_PRIMARY : 0);
        vidmm_handle x = 0;
        vidmm_status st = vidmm_allocation_create2(m->a, &info, sizeof info, b & 64 ? VIDMM_CREATE_RESIDENT : 0, &x);
        st_ok(m, st, "allocation_create2");
        if (st == VIDMM_OK) {
            size[nh] = info.size;
            h[nh++] = x;
        }
    }
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof mr);
    mr.paging_queue = queue;
    mr.allocations = h;
    mr.count = nh;
    mr.flags = VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER;
    if (nh) {
        vidmm_status st = vidmm_make_resident(m->a, dev, &mr);
        st_ok(m, st, "make_resident");
        if (st == VIDMM_PENDING)
            st_ok(m, vidmm_paging_queue_wait(m->a, queue, mr.paging_fence_value, 0), "queue_wait");
    }
    for (uint32_t i = 0; i < nh; i++) {
        uint64_t va = 0;
        st_ok(m, vidmm_gpuva_map(m->a, proc, 0, 0, 0, h[i], 0, size[i], 0, 0, &va), "gpuva_map");
        void *p = NULL;
        vidmm_status st = vidmm_allocation_lock(m->a, h[i], &p);
        st_ok(m, st, "lock");
        if (st == VIDMM_OK) {
            ((volatile uint8_t *)p)[0] = 1;
            ((volatile uint8_t *)p)[size[i] - 1] = 2;
            st_ok(m, vidmm_allocation_unlock(m->a, h[i]), "unlock");
        }
        st_ok(m, vidmm_allocation_move(m->a, h[i], fz_u8(in) % (ai.segment_count + 1)), "move");
    }
    if (nh)
        st_ok(m, vidmm_evict(m->a, dev, &(struct vidmm_evict_args){ .allocations = h, .count = nh }), "evict");
    st_ok(m, vidmm_process_destroy(m->a, proc), "process_destroy");
    for (uint32_t i = 0; i < nh; i++)
        st_ok(m, vidmm_allocation_destroy(m->a, h[i]), "allocation_destroy");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct mock ms;
    struct mock *m = &ms;
    memset(m, 0, sizeof *m);
    m->in.p = data;
    m->in.n = size;
    fz_alloc_init(&m->fa);
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof ci);
    decode(m, &ci);
    ci.ops = &mock_ops;
    ci.driver = m;
    ci.host_allocator = &m->fa.ha;
    ci.system_memory_limit = FZ_SYSTEM_MEMORY;
    ci.error_message = m->report;
    ci.error_message_size = sizeof m->report;
    vidmm_status st = vidmm_adapter_open(&ci, &m->a);
    FUZZ_REQUIRE(st >= VIDMM_E_NOT_ACCESSED_PHYSICALLY && st <= VIDMM_PENDING, "adapter_open: unknown status %d",
                 (int)st);
    if (getenv("FUZZ_TRACE"))
        fprintf(stderr, "  adapter_open: %s %s\n", vidmm_status_str(st), st < 0 ? m->report : "");
    if (st == VIDMM_OK) {
        FUZZ_REQUIRE(m->a != NULL, "open OK without an adapter");
        exercise(m);
        vidmm_adapter_close(m->a);
    } else {
        FUZZ_REQUIRE(m->a == NULL || st >= 0, "failed open left an adapter");
    }
    FUZZ_REQUIRE(m->fa.live_bytes == 0 && m->fa.live_blocks == 0, "leak after open %s: %lld bytes",
                 vidmm_status_str(st), (long long)m->fa.live_bytes);
    for (uint32_t i = 0; i < m->nmap; i++)
        munmap(m->map[i], m->map_len[i]);
    return 0;
}
