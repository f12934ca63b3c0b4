/*
 * support/plugin.c - loading a driver plug-in for the tool and the
 * daemon (support/plugin.h).  Both used to carry their own copy of the
 * search path and of the dlopen/dlsym sequence; their messages had
 * drifted apart.  This is the one copy.
 */
#define _GNU_SOURCE
#include "plugin.h"

#include "vidmm/vidmm.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef VIDMM_PLUGIN_DIR
#define VIDMM_PLUGIN_DIR "/usr/local/lib/vidmm"
#endif

const char *vidmm_plugin_path(const char *driver, char *buf, size_t n)
{
    if (strcmp(driver, "vkgpu") != 0)
        return driver;
    const char *env = getenv("VIDMM_VKGPU_PLUGIN");
    if (env && *env)
        return env;
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            snprintf(buf, n, "%s/vkgpu.so", exe);
            if (access(buf, R_OK) == 0)
                return buf;
        }
    }
    snprintf(buf, n, "%s/vkgpu.so", VIDMM_PLUGIN_DIR);
    return buf;
}

enum vidmm_plugin_result vidmm_plugin_load(const char *who, const char *driver, void **lib, drvcheck_ctor *ctor)
{
    char buf[PATH_MAX];
    const char *path = vidmm_plugin_path(driver, buf, sizeof buf);
    *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!*lib) {
        fprintf(stderr, "%s: --driver %s: cannot load it: %s%s\n", who, driver, dlerror(),
                strcmp(driver, "vkgpu") ? "" : " (vkgpu.so is built where Vulkan is installed: make vkgpu; "
                                                "VIDMM_VKGPU_PLUGIN names another; docs/VKGPU.md)");
        return VIDMM_PLUGIN_E_LOAD;
    }
    void *sym = dlsym(*lib, DRVCHECK_ENTRY_SYMBOL);
    if (!sym) {
        fprintf(stderr, "%s: --driver %s: no %s in it (docs/WRITING_A_DRIVER.md)\n", who, path,
                DRVCHECK_ENTRY_SYMBOL);
        dlclose(*lib);
        *lib = NULL;
        return VIDMM_PLUGIN_E_SYMBOL;
    }
    memcpy(ctor, &sym, sizeof *ctor);        /* POSIX: a data pointer from dlsym names the function */
    return VIDMM_PLUGIN_OK;
}

enum vidmm_plugin_result vidmm_plugin_start(const char *who, const char *driver, struct vidmm_plugin *p)
{
    return vidmm_plugin_start_options(who, driver, getenv("VIDMM_DRIVER_OPTIONS"), p);
}

enum vidmm_plugin_result vidmm_plugin_start_options(const char *who, const char *driver, const char *options,
                                                    struct vidmm_plugin *p)
{
    memset(p, 0, sizeof *p);
    drvcheck_ctor ctor;
    enum vidmm_plugin_result rc = vidmm_plugin_load(who, driver, &p->lib, &ctor);
    if (rc != VIDMM_PLUGIN_OK)
        return rc;
    struct drvcheck_env env = { vidmm_cb_notify_fence, vidmm_cb_notify_context_fence, vidmm_cb_notify_page_fault,
                                options };
    vidmm_status st = ctor(&env, &p->drv);
    if (st < 0) {
        fprintf(stderr, "%s: --driver %s: the driver did not start: %s%s%s%s\n", who, driver, vidmm_status_str(st),
                options ? " (options " : "", options ? options : "", options ? ")" : "");
        dlclose(p->lib);
        memset(p, 0, sizeof *p);
        return VIDMM_PLUGIN_E_START;
    }
    return VIDMM_PLUGIN_OK;
}

void vidmm_plugin_stop(struct vidmm_plugin *p)
{
    if (p->drv.wait_idle)
        p->drv.wait_idle(p->drv.driver);
    p->drv.destroy(p->drv.driver);
    dlclose(p->lib);
    memset(p, 0, sizeof *p);
}
