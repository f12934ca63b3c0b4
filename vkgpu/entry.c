/*
 * entry.c - vkgpu as a plug-in: vidmm_driver_entry, the constructor that
 * `vidmm drvcheck --driver vkgpu.so` and `vidmm info --driver vkgpu`
 * look up (examples/drvcheck/drvcheck.h).  The plug-in links libvkgpu
 * and the Vulkan loader, and nothing of libvidmm: the fence callbacks
 * come from the host in drvcheck_env.
 *
 * Options (comma-separated): device=INDEX|NAME (else VIDMM_VKGPU_DEVICE,
 * else device 0), cap=SIZE (bytes of each heap taken, with a K, M or G
 * suffix; default 64M so the kit's over-commitment stays quick),
 * gpummu=1 (GpuMmu through sparse binding; docs/VKGPU.md), page64=1
 * (with gpummu=1: 64 KB pages even on a 4 KiB sparse block).
 */
#include "vidmm/vkgpu.h"

#include "../examples/drvcheck/drvcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

vidmm_status vidmm_driver_entry(const struct drvcheck_env *env, struct drvcheck_driver *out);

static size_t vk_private_data(void *driver, uint64_t size, void *buf, size_t capacity)
{
    (void)driver;
    struct vkgpu_alloc_desc d = { VKGPU_ALLOC_LOCAL, 1, size };
    if (capacity < sizeof d)
        return 0;
    memcpy(buf, &d, sizeof d);
    return sizeof d;
}

static vidmm_status vk_wait(void *driver)
{
    return vkgpu_wait_idle(driver);
}

static void vk_destroy(void *driver)
{
    vkgpu_destroy(driver);
}

/* The value of key=VALUE in a comma-separated list, into buf. */
static int option(const char *opts, const char *key, char *buf, size_t n)
{
    size_t k = strlen(key);
    for (const char *p = opts; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > k && !strncmp(p, key, k) && p[k] == '=') {
            snprintf(buf, n, "%.*s", (int)(len - k - 1), p + k + 1);
            return 1;
        }
        p = end ? end + 1 : NULL;
    }
    return 0;
}

static int parse_size(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    uint64_t mul = *end == 'K' || *end == 'k' ? 1ull << 10 : *end == 'M' || *end == 'm' ? 1ull << 20
                 : *end == 'G' || *end == 'g' ? 1ull << 30 : 1;
    if (mul != 1)
        end++;
    if (end == s || *end || v == 0)
        return -1;
    *out = v * mul;
    return 0;
}

vidmm_status vidmm_driver_entry(const struct drvcheck_env *env, struct drvcheck_driver *out)
{
    char dev[128], cap[32], err[256] = "";
    struct vkgpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.notify_fence = env->notify_fence;
    cfg.notify_context_fence = env->notify_context_fence;
    cfg.notify_page_fault = env->notify_page_fault;
    cfg.heap_cap = 64ull << 20;
    cfg.error_message = err;
    cfg.error_message_size = sizeof err;
    const char *o = env->options;
    if (option(o, "device", dev, sizeof dev))
        cfg.device = dev;
    if (option(o, "cap", cap, sizeof cap) && parse_size(cap, &cfg.heap_cap) < 0)
        return VIDMM_E_INVALID_ARG;
    if (option(o, "gpummu", cap, sizeof cap)) {
        if (strcmp(cap, "0") && strcmp(cap, "1"))
            return VIDMM_E_INVALID_ARG;
        cfg.gpummu = cap[0] == '1';
    }
    if (option(o, "page64", cap, sizeof cap)) {
        if (strcmp(cap, "0") && strcmp(cap, "1"))
            return VIDMM_E_INVALID_ARG;
        cfg.page64 = cap[0] == '1';
    }
    struct vkgpu *g = NULL;
    vidmm_status st = vkgpu_create(&cfg, &g);
    if (st < 0) {
        fprintf(stderr, "%s\n", err);
        return st;
    }
    memset(out, 0, sizeof *out);
    out->name = "vkgpu";
    out->ops = vkgpu_driver_ops();
    out->driver = g;
    out->signals_through_env = 1;
    out->wait_idle = vk_wait;
    out->private_data = vk_private_data;
    out->destroy = vk_destroy;
    return VIDMM_OK;
}
