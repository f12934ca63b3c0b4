/*
 * main.c - the vidmm command-line tool.
 *
 *   vidmm info [--adapter PRESET] [--segment ID=SIZE]... [--prefault] [--json]
 *   vidmm demo [--adapter PRESET] [--segment ID=SIZE]...
 *   vidmm vamap [--adapter PRESET] [--segment ID=SIZE]...
 *   vidmm run SCENARIO|FILE [options]      (run.c)
 *   vidmm replay TRACE [options]           (run.c, replay.c, rmv.c)
 *   vidmm scenarios | presets
 *   vidmm gen | fuzz-scenarios | shrink FILE   (gen.c)
 *   vidmm drvcheck [--driver FILE.so] [--options STR]   (drvcheck.c)
 *   vidmm --version | --help
 *
 * The tool drives libvidmm on softgpu; it is a client of the public
 * headers only.  Exit status: 0 success, 1 the operation failed, 2 usage.
 */
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: vidmm <command> [options]\n"
            "\n"
            "commands:\n"
            "  info              print the adapter's segments as the manager sees them\n"
            "  demo              run the demonstration scenario and print what happened\n"
            "  vamap             build two processes' GPU VA spaces (GpuMmu) and dump them\n"
            "  run SCENARIO|FILE run a built-in scenario or a scenario file, print a report\n"
            "  replay TRACE      re-execute a recorded trace (or import an .rmv), check, print the report\n"
            "  scenarios         list the built-in scenarios\n"
            "  gen               write a random multi-process scenario file (--seed N, --calls K)\n"
            "  fuzz-scenarios    run generated scenarios with the rules checker, shrink failures\n"
            "                    (--seconds S | --count N, --seed N, --calls K, --save DIR)\n"
            "  shrink FILE       reduce a failing scenario file to a minimal one (stdout)\n"
            "  presets           list the softgpu presets\n"
            "  drvcheck          run the driver conformance kit on softgpu, or on a driver\n"
            "                    plug-in (--driver FILE.so with vidmm_driver_entry; --options STR\n"
            "                    goes to it; --groups query,describe,restart,paging,fences,reset,vidmm; -v)\n"
            "\n"
            "adapter options (info, demo, vamap, run):\n"
            "  --adapter PRESET    softgpu preset: dgpu (default), igpu, wddm1, big\n"
            "  --segment ID=SIZE   resize driver segment ID (SIZE like 512M, 8G, 80G)\n"
            "  --prefault          info/demo/vamap: touch all simulated video memory at start\n"
            "  --json              info: print JSON instead of a table\n"
            "run options:\n"
            "  --policy NAME       eviction policy (lru, adaptive, belady, reuse)\n"
            "  --seed N            the scenario's random seed (default 1)\n"
            "  --frames N          frames (compute: passes) instead of the scenario's default\n"
            "  --async             paging on softgpu's engine thread (not reproducible)\n"
            "run and replay outputs:\n"
            "  --record FILE       write every call to FILE (docs/TRACE_FORMAT.md)\n"
            "  --format text|json|csv   the report's format (default text)\n"
            "  -o, --output FILE   write the report to FILE instead of stdout\n"
            "  --snapshot FILE     GpuMemDump JSON statistics after the last call\n"
            "  --fdinfo FILE       every live process's DRM fdinfo text after the last call\n"
            "  --timeline FILE     Chrome trace event JSON (Perfetto, chrome://tracing)\n"
            "  --html FILE         HTML report with SVG charts (opens from a file, no server)\n"
            "  --progress, --no-progress   replay: progress bar on stderr (default: if a terminal)\n"
            "  --rules, --no-rules         the WDDM rules checker after every call (default on;\n"
            "                              the first violation fails the run)\n"
            "  --version, --help\n");
}

static int parse_size(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    uint64_t mul = 1;
    switch (*end) {
    case 'k': case 'K': mul = 1ull << 10; end++; break;
    case 'm': case 'M': mul = 1ull << 20; end++; break;
    case 'g': case 'G': mul = 1ull << 30; end++; break;
    case 't': case 'T': mul = 1ull << 40; end++; break;
    default: break;
    }
    if (*end == 'i' || *end == 'B')
        end++;
    if (*end == 'B')
        end++;
    if (*end || end == s || v == 0 || v > UINT64_MAX / mul)
        return -1;
    *out = (uint64_t)v * mul;
    return 0;
}

int cli_parse_adapter_options(int argc, char **argv, int first, struct cli_options *o)
{
    memset(o, 0, sizeof(*o));
    o->config.preset = "dgpu";
    for (int i = first; i < argc; i++) {
        if (!strcmp(argv[i], "--adapter") && i + 1 < argc) {
            o->config.preset = argv[++i];
        } else if (!strncmp(argv[i], "--adapter=", 10)) {
            o->config.preset = argv[i] + 10;
        } else if (!strcmp(argv[i], "--segment") && i + 1 < argc) {
            const char *spec = argv[++i];
            char *eq;
            unsigned long id = strtoul(spec, &eq, 10);
            uint64_t size;
            if (*eq != '=' || id == 0 || id > SOFTGPU_MAX_SEGMENTS || parse_size(eq + 1, &size)) {
                fprintf(stderr, "vidmm: bad --segment '%s' (want ID=SIZE, ID 1..%u)\n", spec, SOFTGPU_MAX_SEGMENTS);
                return 2;
            }
            o->config.segment_size[id] = size;
        } else if (!strcmp(argv[i], "--prefault")) {
            o->config.prefault = 1;
        } else if (!strcmp(argv[i], "--json")) {
            o->json = 1;
        } else {
            fprintf(stderr, "vidmm: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    return 0;
}

int cli_open(struct cli_options *o, struct cli_session *s)
{
    memset(s, 0, sizeof(*s));
    vidmm_status st = softgpu_create(&o->config, &s->gpu);
    if (st < 0) {
        fprintf(stderr, "vidmm: cannot create softgpu '%s': %s\n", o->config.preset, vidmm_status_str(st));
        return 1;
    }
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof(ci));
    softgpu_fill_adapter_create_info(s->gpu, &ci);
    ci.error_message = s->error;
    ci.error_message_size = sizeof(s->error);
    st = vidmm_adapter_open(&ci, &s->adapter);
    if (st < 0) {
        fprintf(stderr, "vidmm: adapter open failed: %s: %s\n", vidmm_status_str(st), s->error);
        softgpu_destroy(s->gpu);
        return 1;
    }
    return 0;
}

void cli_close(struct cli_session *s)
{
    vidmm_adapter_close(s->adapter);
    softgpu_destroy(s->gpu);
}

void cli_format_size(uint64_t v, char *buf, size_t n)
{
    static const char *const unit[] = { "GiB", "MiB", "KiB" };
    for (int i = 0; i < 3; i++) {
        uint64_t u = 1ull << (30 - 10 * i);
        if (v < u)
            continue;
        if (v % u == 0)
            snprintf(buf, n, "%llu %s", (unsigned long long)(v / u), unit[i]);
        else
            snprintf(buf, n, "%.1f %s", (double)v / (double)u, unit[i]);
        return;
    }
    snprintf(buf, n, "%llu B", (unsigned long long)v);
}

void cli_segment_flag_names(uint32_t f, char *buf, size_t n)
{
    static const struct { uint32_t bit; const char *name; } names[] = {
        { VIDMM_SEGMENT_APERTURE, "Aperture" },
        { VIDMM_SEGMENT_AGP, "Agp" },
        { VIDMM_SEGMENT_CPU_VISIBLE, "CpuVisible" },
        { VIDMM_SEGMENT_CACHE_COHERENT, "CacheCoherent" },
        { VIDMM_SEGMENT_POPULATED_FROM_SYSTEM, "PopulatedFromSystemMemory" },
        { VIDMM_SEGMENT_PRESERVED_DURING_STANDBY, "PreservedDuringStandby" },
        { VIDMM_SEGMENT_PRESERVED_DURING_HIBERNATE, "PreservedDuringHibernate" },
        { VIDMM_SEGMENT_DIRECT_FLIP, "DirectFlip" },
        { VIDMM_SEGMENT_USE_64KB_PAGES, "Use64KBPages" },
        { VIDMM_SEGMENT_SUPPORTS_CPU_HOST_APERTURE, "SupportsCpuHostAperture" },
        { VIDMM_SEGMENT_SUPPORTS_CACHED_CPU_HOST_APERTURE, "SupportsCachedCpuHostAperture" },
        { VIDMM_SEGMENT_LOCAL_BUDGET_GROUP, "LocalBudgetGroup" },
        { VIDMM_SEGMENT_NON_LOCAL_BUDGET_GROUP, "NonLocalBudgetGroup" },
    };
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (!(f & names[i].bit))
            continue;
        int k = snprintf(buf + used, n - used, "%s%s", used ? "," : "", names[i].name);
        if (k < 0 || (size_t)k >= n - used)
            break;
        used += (size_t)k;
    }
    if (!used)
        snprintf(buf, n, "-");
}

void cli_print_segments(const struct vidmm_adapter *a, FILE *f)
{
    struct vidmm_adapter_info ai;
    vidmm_adapter_query_info(a, &ai);
    fprintf(f, "%-3s %-9s %-14s %-10s %-6s %-7s %-10s %-10s %s\n", "id", "kind", "base", "size", "page", "cpu",
            "commit", "committed", "flags");
    for (uint32_t id = 0; id < ai.segment_count; id++) {
        struct vidmm_segment_info si;
        vidmm_segment_query(a, id, &si);
        char size[32], page[32], limit[32], used[32], flags[512], cpu[16];
        cli_format_size(si.size, size, sizeof size);
        cli_format_size(si.page_size, page, sizeof page);
        cli_format_size(si.commit_limit, limit, sizeof limit);
        cli_format_size(si.committed, used, sizeof used);
        cli_segment_flag_names(si.flags, flags, sizeof flags);
        if (si.cpu_host_aperture)
            snprintf(cpu, sizeof cpu, "host-ap");
        else
            snprintf(cpu, sizeof cpu, "%s", si.cpu_visible ? "yes" : "no");
        fprintf(f, "%-3u %-9s 0x%012llx %-10s %-6s %-7s %-10s %-10s %s", id, vidmm_segment_kind_str(si.kind),
                (unsigned long long)si.base_address, size, page, cpu, limit, used, id == 0 ? "(implicit)" : flags);
        if (si.cpu_host_aperture) {
            char hs[32];
            cli_format_size((uint64_t)si.host_aperture_pages * si.page_size, hs, sizeof hs);
            fprintf(f, " host-aperture=%s", hs);
        }
        fputc('\n', f);
    }
    fprintf(f, "paging buffers: segment %u (%s), %u bytes each\n", ai.paging_buffer_segment_id,
            ai.paging_buffer_segment_id ? "aperture" : "system memory", ai.paging_buffer_size);
    fprintf(f, "aperture segment: %u%s", ai.aperture_segment_id, ai.agp_segment_id ? "" : "\n");
    if (ai.agp_segment_id)
        fprintf(f, ", AGP segment: %u\n", ai.agp_segment_id);
}

/* Machine-readable form of `vidmm info`; "format" carries a version so
 * consumers can tell layouts apart. */
static void print_info_json(const char *preset, const struct vidmm_adapter *a, FILE *f)
{
    struct vidmm_adapter_info ai;
    vidmm_adapter_query_info(a, &ai);
    fprintf(f, "{\n  \"format\": \"vidmm-info/1\",\n  \"vidmm_version\": \"%s\",\n", VIDMM_VERSION_STRING);
    fprintf(f, "  \"adapter\": {\"preset\": \"%s\", \"wddm_version\": \"0x%x\", \"gpummu\": %s, \"iommu\": %s, "
               "\"move_paging\": %s,\n    \"aperture_segment_id\": %u, \"agp_segment_id\": %u, "
               "\"paging_buffer_segment_id\": %u, \"paging_buffer_size\": %u},\n",
            preset, ai.wddm_version, (ai.memory_management_caps & VIDMM_CAPS_GPUMMU) ? "true" : "false",
            (ai.memory_management_caps & VIDMM_CAPS_IOMMU) ? "true" : "false",
            (ai.physical_adapter_flags & VIDMM_ADAPTER_MOVE_PAGING_SUPPORTED) ? "true" : "false",
            ai.aperture_segment_id, ai.agp_segment_id, ai.paging_buffer_segment_id, ai.paging_buffer_size);
    fprintf(f, "  \"segments\": [\n");
    for (uint32_t id = 0; id < ai.segment_count; id++) {
        struct vidmm_segment_info si;
        vidmm_segment_query(a, id, &si);
        fprintf(f,
                "    {\"id\": %u, \"kind\": \"%s\", \"base_address\": %llu, \"size\": %llu, \"page_size\": %u, "
                "\"cpu_visible\": %s, \"cpu_host_aperture_bytes\": %llu, \"flags\": %u, \"commit_limit\": %llu, "
                "\"committed\": %llu, \"free\": %llu, \"largest_free\": %llu}%s\n",
                id, vidmm_segment_kind_str(si.kind), (unsigned long long)si.base_address,
                (unsigned long long)si.size, si.page_size, si.cpu_visible ? "true" : "false",
                (unsigned long long)si.host_aperture_pages * si.page_size, si.flags,
                (unsigned long long)si.commit_limit, (unsigned long long)si.committed,
                (unsigned long long)si.free_bytes, (unsigned long long)si.largest_free,
                id + 1 < ai.segment_count ? "," : "");
    }
    fprintf(f, "  ],\n  \"gpummu\": ");
    struct vidmm_gpummu_info g;
    if (vidmm_adapter_query_gpummu(a, &g) < 0) {
        fprintf(f, "null\n}\n");
        return;
    }
    fprintf(f, "{\"va_bits\": %u, \"update_mode\": %u, \"flags\": %u, \"leaf_64k_table_bytes\": %u, \"levels\": [",
            g.caps.virtual_address_bit_count, g.caps.page_table_update_mode, g.caps.flags,
            g.caps.leaf_page_table_size_for_64k_pages_in_bytes);
    for (uint32_t l = 0; l < g.level_count; l++)
        fprintf(f, "%s{\"level\": %u, \"index_bits\": %u, \"table_bytes\": %llu, \"segment\": %u, \"span\": %llu}",
                l ? ", " : "", l, g.level[l].page_table_index_bit_count,
                (unsigned long long)g.level[l].page_table_size_in_bytes, g.level[l].page_table_segment_id,
                (unsigned long long)g.leaf_span[l]);
    fprintf(f, "]}\n}\n");
}

void cli_print_gpummu(const struct vidmm_adapter *a, FILE *f)
{
    struct vidmm_gpummu_info g;
    if (vidmm_adapter_query_gpummu(a, &g) < 0) {
        fprintf(f, "GpuMmu: not used by this adapter\n");
        return;
    }
    static const char *const mode[] = { "CPU_VIRTUAL", "GPU_VIRTUAL", "GPU_PHYSICAL" };
    char leaf64[32];
    cli_format_size(g.caps.leaf_page_table_size_for_64k_pages_in_bytes, leaf64, sizeof leaf64);
    fprintf(f, "GpuMmu: %u-bit GPU VA, %u page-table levels, updates %s, 64 KB-page leaf tables %s, flags 0x%x\n",
            g.caps.virtual_address_bit_count, g.level_count,
            g.caps.page_table_update_mode < 3 ? mode[g.caps.page_table_update_mode] : "?", leaf64, g.caps.flags);
    for (uint32_t l = g.level_count; l-- > 0;) {
        char size[32], span[32];
        cli_format_size(g.level[l].page_table_size_in_bytes, size, sizeof size);
        cli_format_size(g.leaf_span[l], span, sizeof span);
        fprintf(f, "  level %u%-7s %2u index bits, %-8s tables in segment %u, one table maps %s\n", l,
                l == 0 ? " (leaf)" : l + 1 == g.level_count ? " (root)" : "", g.level[l].page_table_index_bit_count,
                size, g.level[l].page_table_segment_id, span);
    }
}

static int cmd_info(int argc, char **argv)
{
    struct cli_options o;
    int rc = cli_parse_adapter_options(argc, argv, 2, &o);
    if (rc)
        return rc;
    struct cli_session s;
    if (cli_open(&o, &s))
        return 1;
    struct vidmm_adapter_info ai;
    vidmm_adapter_query_info(s.adapter, &ai);
    if (o.json) {
        print_info_json(o.config.preset, s.adapter, stdout);
        int bad = vidmm_adapter_check(s.adapter, NULL, 0);
        cli_close(&s);
        return bad ? 1 : 0;
    }
    printf("adapter: softgpu preset '%s', WDDM %x.%x, caps:%s%s%s%s\n", o.config.preset, ai.wddm_version >> 12,
           (ai.wddm_version >> 8) & 0xF, (ai.memory_management_caps & VIDMM_CAPS_GPUMMU) ? " GpuMmu" : "",
           (ai.memory_management_caps & VIDMM_CAPS_IOMMU) ? " IoMmu" : "",
           (ai.physical_adapter_flags & VIDMM_ADAPTER_MOVE_PAGING_SUPPORTED) ? " MovePaging" : "",
           ai.memory_management_caps ? "" : " none");
    cli_print_segments(s.adapter, stdout);
    cli_print_gpummu(s.adapter, stdout);
    int errors = vidmm_adapter_check(s.adapter, NULL, 0);
    cli_close(&s);
    return errors ? 1 : 0;
}

static int cmd_presets(void)
{
    for (const char *const *p = softgpu_preset_names(); *p; p++)
        printf("%s\n", *p);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("vidmm %s\n", VIDMM_VERSION_STRING);
        return 0;
    }
    if (!strcmp(cmd, "info"))
        return cmd_info(argc, argv);
    if (!strcmp(cmd, "demo"))
        return cli_demo(argc, argv);
    if (!strcmp(cmd, "vamap"))
        return cli_vamap(argc, argv);
    if (!strcmp(cmd, "presets"))
        return cmd_presets();
    if (!strcmp(cmd, "run"))
        return cli_run(argc, argv);
    if (!strcmp(cmd, "replay"))
        return cli_replay(argc, argv);
    if (!strcmp(cmd, "scenarios"))
        return cli_scenarios();
    if (!strcmp(cmd, "gen"))
        return cli_gen(argc, argv);
    if (!strcmp(cmd, "fuzz-scenarios"))
        return cli_fuzz_scenarios(argc, argv);
    if (!strcmp(cmd, "shrink"))
        return cli_shrink(argc, argv);
    if (!strcmp(cmd, "drvcheck"))
        return cli_drvcheck(argc, argv);
    fprintf(stderr, "vidmm: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
