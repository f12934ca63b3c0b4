/*
 * entry.c - minidrv as a plug-in: vidmm_driver_entry, the constructor
 * `vidmm drvcheck --driver minidrv.so` looks up (examples/drvcheck).
 *
 * Options (comma-separated): break=fence-early | break=restart |
 * break=stride turn on one of the deliberate breakages of minidrv.h, so
 * the kit's own tests can prove it notices them.
 */
#include "minidrv.h"

#include "vidmm/drvcheck.h"

#include <string.h>

vidmm_status vidmm_driver_entry(const struct drvcheck_env *env, struct drvcheck_driver *out);

static size_t md_private_data(void *driver, uint64_t size, void *buf, size_t capacity)
{
    (void)driver;
    struct minidrv_alloc_desc d = { MINIDRV_ALLOC_VRAM, 1, size };
    if (capacity < sizeof d)
        return 0;
    memcpy(buf, &d, sizeof d);
    return sizeof d;
}

static vidmm_status md_wait_idle(void *driver)
{
    return minidrv_wait_idle(driver);
}

static void md_destroy(void *driver)
{
    minidrv_destroy(driver);
}

vidmm_status vidmm_driver_entry(const struct drvcheck_env *env, struct drvcheck_driver *out)
{
    struct minidrv_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.notify_fence = env->notify_fence;
    const char *o = env->options ? env->options : "";
    if (strstr(o, "break=fence-early"))
        cfg.broken = MINIDRV_BREAK_FENCE_EARLY;
    else if (strstr(o, "break=restart"))
        cfg.broken = MINIDRV_BREAK_RESTART;
    else if (strstr(o, "break=stride"))
        cfg.broken = MINIDRV_BREAK_STRIDE;
    else if (strstr(o, "break="))
        return VIDMM_E_INVALID_ARG;
    struct minidrv *md = NULL;
    vidmm_status st = minidrv_create(&cfg, &md);
    if (st < 0)
        return st;
    memset(out, 0, sizeof *out);
    out->name = "minidrv";
    out->ops = minidrv_ops();
    out->driver = md;
    out->signals_through_env = 1;
    out->wait_idle = md_wait_idle;
    out->private_data = md_private_data;
    out->destroy = md_destroy;
    return VIDMM_OK;
}
