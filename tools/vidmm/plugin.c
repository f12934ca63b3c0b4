/*
 * plugin.c - the tool on a driver other than softgpu: `--driver NAME`
 * for info and demo, and the driver name of `vidmm drvcheck --driver`.
 *
 * A driver is a plug-in (a shared object exporting vidmm_driver_entry,
 * examples/drvcheck/drvcheck.h), so the tool itself never links a GPU
 * API.  support/plugin.c, the loader vidmmd --driver uses too, finds it
 * (`--driver vkgpu`: vkgpu.so, the Vulkan driver, docs/VKGPU.md; any
 * other value is a path to a plug-in) and starts its driver with
 * vidmm's own callbacks; the adapter is opened on what it returns.
 *
 * The demonstration on a plug-in is driver-neutral (the allocations come
 * from the plug-in's private_data): three times its memory segments in
 * 1 MiB allocations with seeded bytes, made resident and evicted in
 * groups twice, every byte read back, the structure and rules checkers
 * after each group.
 */
#include "cli.h"
#include "drvcheck.h"

#include <stdlib.h>
#include <string.h>

/* Opens the adapter on the plug-in's driver.  0, or 1 (said why). */
static int plugin_open(const char *verb, const char *driver, struct cli_plugin *p)
{
    memset(p, 0, sizeof *p);
    char who[32];
    snprintf(who, sizeof who, "vidmm %s", verb);
    enum vidmm_plugin_result rc = vidmm_plugin_start(who, driver, &p->plugin);
    if (rc != VIDMM_PLUGIN_OK)
        return rc == VIDMM_PLUGIN_E_START ? 1 : 2;
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof ci);
    ci.abi_version = VIDMM_ABI_VERSION;
    ci.ops = p->plugin.drv.ops;
    ci.driver = p->plugin.drv.driver;
    ci.agp_aperture_base = p->plugin.drv.agp_aperture_base;
    ci.agp_aperture_size = p->plugin.drv.agp_aperture_size;
    ci.error_message = p->error;
    ci.error_message_size = sizeof p->error;
    vidmm_status st = vidmm_adapter_open(&ci, &p->adapter);
    if (st < 0) {
        fprintf(stderr, "vidmm %s: adapter open failed: %s: %s\n", verb, vidmm_status_str(st), p->error);
        vidmm_plugin_stop(&p->plugin);
        return 1;
    }
    return 0;
}

static void plugin_close(struct cli_plugin *p)
{
    vidmm_adapter_close(p->adapter);
    vidmm_plugin_stop(&p->plugin);
}

int cli_plugin_info(const char *driver)
{
    struct cli_plugin p;
    int rc = plugin_open("info", driver, &p);
    if (rc)
        return rc;
    struct vidmm_adapter_info ai;
    vidmm_adapter_query_info(p.adapter, &ai);
    printf("adapter: driver '%s', WDDM %x.%x, caps:%s%s%s%s\n", p.plugin.drv.name, ai.wddm_version >> 12,
           (ai.wddm_version >> 8) & 0xF, (ai.memory_management_caps & VIDMM_CAPS_GPUMMU) ? " GpuMmu" : "",
           (ai.memory_management_caps & VIDMM_CAPS_IOMMU) ? " IoMmu" : "",
           (ai.physical_adapter_flags & VIDMM_ADAPTER_MOVE_PAGING_SUPPORTED) ? " MovePaging" : "",
           ai.memory_management_caps ? "" : " none (physical mode)");
    cli_print_segments(p.adapter, stdout);
    cli_print_gpummu(p.adapter, stdout);
    int errors = vidmm_adapter_check(p.adapter, NULL, 0);
    plugin_close(&p);
    return errors ? 1 : 0;
}

/* ---- the driver-neutral demonstration ---------------------------------- */

#define PD_SIZE (1ull << 20)
#define PD_MAX 1024u
#define PD_GROUP 8u

static uint8_t pd_byte(uint32_t seed, uint64_t i)
{
    uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull + (i >> 3) * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31;
    return (uint8_t)((x * 0x94D049BB133111EBull) >> (8 * (i & 7)));
}

/* Writes (write = 1) or checks the allocation's seeded bytes; the
 * differing bytes. */
static uint64_t pd_bytes(struct vidmm_adapter *a, vidmm_handle h, uint32_t seed, int write)
{
    uint8_t *p;
    if (vidmm_allocation_lock(a, h, (void **)&p) < 0)
        return PD_SIZE;
    uint64_t bad = 0;
    for (uint64_t i = 0; i < PD_SIZE; i++) {
        if (write)
            p[i] = pd_byte(seed, i);
        else
            bad += p[i] != pd_byte(seed, i);
    }
    vidmm_allocation_unlock(a, h);
    return bad;
}

static int pd_resident(struct vidmm_adapter *a, vidmm_handle dev, vidmm_handle q, const vidmm_handle *h)
{
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof mr);
    mr.paging_queue = q;
    mr.allocations = h;
    mr.count = PD_GROUP;
    vidmm_status st = vidmm_make_resident(a, dev, &mr);
    if (st == VIDMM_E_OVER_BUDGET) {
        mr.flags = VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER;
        st = vidmm_make_resident(a, dev, &mr);
    }
    if (st == VIDMM_PENDING)
        st = vidmm_paging_queue_wait(a, q, mr.paging_fence_value, 30000000000ull);
    return st == VIDMM_OK ? 0 : -1;
}

static int pd_checked(struct vidmm_adapter *a)
{
    char rep[512];
    if (vidmm_adapter_check(a, rep, sizeof rep) || vidmm_adapter_check_rules(a, rep, sizeof rep)) {
        printf("  checker: %s\n", rep);
        return 1;
    }
    return 0;
}

int cli_plugin_demo(const char *driver)
{
    struct cli_plugin p;
    int rc = plugin_open("demo", driver, &p);
    if (rc)
        return rc;
    struct vidmm_adapter *a = p.adapter;
    printf("== adapter (driver '%s') ==\n", p.plugin.drv.name);
    cli_print_segments(a, stdout);
    uint64_t local = 0;
    struct vidmm_adapter_info ai;
    vidmm_adapter_query_info(a, &ai);
    for (uint32_t id = 1; id < ai.segment_count; id++) {
        struct vidmm_segment_info si;
        if (vidmm_segment_query(a, id, &si) == VIDMM_OK && si.kind == VIDMM_SEGMENT_KIND_MEMORY)
            local += si.size;
    }
    uint32_t n = (uint32_t)(3 * local / PD_SIZE) / PD_GROUP * PD_GROUP;
    n = n > PD_MAX ? PD_MAX : n < PD_GROUP ? PD_GROUP : n;
    vidmm_handle proc = 0, dev = 0, q = 0, *h = calloc(n, sizeof *h);
    uint32_t *seed = calloc(n, sizeof *seed);
    unsigned char pd[256];
    const struct drvcheck_driver *drv = &p.plugin.drv;
    size_t pds = drv->private_data ? drv->private_data(drv->driver, PD_SIZE, pd, sizeof pd) : 0;
    int failures = !h || !seed || !pds || vidmm_process_create(a, &proc) < 0 ||
                   vidmm_device_create(a, proc, &dev) < 0 ||
                   vidmm_paging_queue_create(a, dev, VIDMM_PAGING_QUEUE_NORMAL, &q) < 0;
    uint32_t made = 0;
    for (; !failures && made < n; made++) {
        if (vidmm_device_allocation_create(a, dev, pd, pds, 0, &h[made]) < 0)
            break;
        seed[made] = 1000 + made;
        pd_bytes(a, h[made], seed[made], 1);
    }
    printf("\n== over-commitment: %u x 1 MiB on %llu MiB of memory segments ==\n", made,
           (unsigned long long)(local >> 20));
    failures += made != n;
    uint64_t bad = 0;
    for (uint32_t round = 0; round < 2 && !failures; round++)
        for (uint32_t g = 0; g + PD_GROUP <= made; g += PD_GROUP) {
            if (pd_resident(a, dev, q, &h[g]) < 0) {
                failures++;
                continue;
            }
            for (uint32_t i = g; i < g + PD_GROUP; i++) {
                bad += pd_bytes(a, h[i], seed[i], 0) != 0;
                seed[i] += 7919;
                pd_bytes(a, h[i], seed[i], 1);
            }
            vidmm_evict(a, dev, &(struct vidmm_evict_args){ .allocations = &h[g], .count = PD_GROUP });
            failures += pd_checked(a);
        }
    struct vidmm_residency_stats rs;
    vidmm_residency_get_stats(a, &rs);
    printf("  %llu evictions (%llu MiB), %llu restores (%llu MiB), %llu allocations read back wrong\n",
           (unsigned long long)rs.evictions, (unsigned long long)(rs.bytes_evicted >> 20),
           (unsigned long long)rs.restores, (unsigned long long)(rs.bytes_restored >> 20), (unsigned long long)bad);
    failures += bad != 0 || rs.evictions == 0 || rs.restores == 0;
    for (uint32_t i = 0; i < made; i++)
        vidmm_allocation_destroy(a, h[i]);
    free(h);
    free(seed);
    printf("\n%s: %d failure(s)\n", failures ? "FAILED" : "demo ok", failures);
    plugin_close(&p);
    return failures ? 1 : 0;
}
