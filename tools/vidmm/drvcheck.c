/*
 * drvcheck.c - `vidmm drvcheck`: the driver conformance kit
 * (examples/drvcheck) run on softgpu or on a driver loaded from a shared
 * object.
 *
 *   vidmm drvcheck [--driver FILE.so] [--options STR] [--groups a,b] [-v]
 *
 * Without --driver it checks softgpu (--options preset=NAME picks the
 * preset, dgpu by default; its memory segments are made 16 MiB so the
 * over-commitment stays quick).  With --driver it dlopen()s FILE.so and
 * calls its vidmm_driver_entry (a drvcheck_ctor) with the options.
 * Exit status: 0 every check passed, 1 a check failed, 2 usage or load.
 */
#include "cli.h"
#include "vidmm/drvcheck.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

static vidmm_status softgpu_wait(void *driver)
{
    return softgpu_wait_idle(driver);
}

static void softgpu_driver_destroy(void *driver)
{
    softgpu_destroy(driver);
}

/* A CPU-visible allocation that may live in any of softgpu's memory
 * segments (so over-commitment must evict), described with softgpu's
 * explicit private data.  The segments come from the driver's own query. */
static size_t softgpu_private_data(void *driver, uint64_t size, void *buf, size_t capacity)
{
    const struct vidmm_driver_ops *ops = softgpu_driver_ops();
    struct vidmm_query_segment_out qo;
    struct vidmm_segment_descriptor d[SOFTGPU_MAX_SEGMENTS];
    memset(&qo, 0, sizeof qo);
    struct vidmm_query_adapter_info_args q = { VIDMM_QAI_QUERYSEGMENT, NULL, 0, &qo, sizeof qo };
    if (capacity < sizeof(struct softgpu_alloc_desc) || ops->query_adapter_info(driver, &q) < 0 ||
        qo.nb_segment > SOFTGPU_MAX_SEGMENTS)
        return 0;
    qo.segment_descriptor = d;
    qo.segment_descriptor_stride = sizeof d[0];
    if (ops->query_adapter_info(driver, &q) < 0)
        return 0;
    struct softgpu_alloc_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.kind = SOFTGPU_ALLOC_EXPLICIT;
    desc.info.size = size;
    desc.info.flags = VIDMM_ALLOC_CPU_VISIBLE;
    for (uint32_t i = 0; i < qo.nb_segment; i++) {
        if (d[i].flags & (VIDMM_SEGMENT_APERTURE | VIDMM_SEGMENT_AGP))
            continue;
        desc.info.supported_write_segment_set |= VIDMM_SEGMENT_BIT(i + 1);
        if (d[i].flags & VIDMM_SEGMENT_USE_64KB_PAGES)
            desc.info.alignment = 65536;
    }
    if (!desc.info.supported_write_segment_set)
        return 0;
    desc.info.supported_read_segment_set = desc.info.supported_write_segment_set;
    memcpy(buf, &desc, sizeof desc);
    return sizeof desc;
}

static vidmm_status softgpu_ctor(const struct drvcheck_env *env, struct drvcheck_driver *out)
{
    struct softgpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = "dgpu";
    static const char *const presets[] = { "dgpu", "igpu", "wddm1", "big" };
    const char *o = env->options ? strstr(env->options, "preset=") : NULL;
    if (o) {
        cfg.preset = NULL;
        for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
            if (!strncmp(o + 7, presets[i], strlen(presets[i])))
                cfg.preset = presets[i];
        if (!cfg.preset)
            return VIDMM_E_INVALID_ARG;
    }
    if (strcmp(cfg.preset, "igpu") != 0)
        cfg.segment_size[1] = cfg.segment_size[2] = 16u << 20;
    struct softgpu *sg = NULL;
    vidmm_status st = softgpu_create(&cfg, &sg);
    if (st < 0)
        return st;
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof ci);
    softgpu_fill_adapter_create_info(sg, &ci);
    memset(out, 0, sizeof *out);
    out->name = "softgpu";
    out->ops = ci.ops;
    out->driver = ci.driver;
    out->agp_aperture_base = ci.agp_aperture_base;
    out->agp_aperture_size = ci.agp_aperture_size;
    out->signals_through_env = 0;           /* softgpu calls vidmm_cb_notify_fence itself */
    out->wait_idle = softgpu_wait;
    out->private_data = softgpu_private_data;
    out->destroy = softgpu_driver_destroy;
    return VIDMM_OK;
}

/* The kit's groups (examples/drvcheck/drvcheck.c), to name a misspelt
 * one: the kit itself would silently select nothing. */
static const char *const groups_known[] = { "query", "describe", "restart", "paging", "fences", "reset", "vidmm",
                                            NULL };

static int check_groups(const char *groups)
{
    const char *p = groups;
    while (*p) {
        size_t n = strcspn(p, ",");
        int found = 0;
        for (const char *const *g = groups_known; *g && !found; g++)
            found = strlen(*g) == n && !strncmp(*g, p, n);
        if (!found)
            return cli_usage_error("drvcheck", "--groups %s: no group '%.*s' (query, describe, restart, paging, "
                                               "fences, reset, vidmm)", groups, (int)n, p);
        p += n;
        if (*p)
            p++;
    }
    return 0;
}

int cli_drvcheck(int argc, char **argv)
{
    const char *path = NULL, *options = NULL, *groups = NULL;
    int verbose = 0, rc = 0;
    enum { O_DRIVER = 256, O_OPTIONS, O_GROUPS };
    static const struct option longs[] = {
        { "driver", required_argument, NULL, O_DRIVER }, { "options", required_argument, NULL, O_OPTIONS },
        { "groups", required_argument, NULL, O_GROUPS }, { "verbose", no_argument, NULL, 'v' },
        { NULL, 0, NULL, 0 },
    };
    cli_getopt_begin();
    for (int c; (c = cli_getopt("drvcheck", argc, argv, "v", longs, &rc)) != -1;) {
        switch (c) {
        case O_DRIVER: path = optarg; break;
        case O_OPTIONS: options = optarg; break;
        case O_GROUPS: groups = optarg; break;
        case 'v': verbose = 1; break;
        default: return rc;
        }
    }
    if (cli_operand_first() < argc)
        return cli_usage_error("drvcheck", "unknown argument '%s'", argv[cli_operand_first()]);
    if (groups && (rc = check_groups(groups)) != 0)
        return rc;
    drvcheck_ctor ctor = softgpu_ctor;
    void *lib = NULL;
    if (path) {                             /* a plug-in, or "vkgpu" (support/plugin.c) */
        if (vidmm_plugin_load("vidmm drvcheck", path, &lib, &ctor) != VIDMM_PLUGIN_OK)
            return 2;
    }
    struct drvcheck_result r;
    unsigned failed = drvcheck_run(ctor, options, groups, verbose, stdout, &r);
    if (lib)
        dlclose(lib);
    return failed ? 1 : 0;
}
