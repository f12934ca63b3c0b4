/*
 * support/plugin.h - a driver plug-in loaded by name, for the tool
 * (`vidmm info|demo|drvcheck --driver`) and the daemon (`vidmmd
 * --driver`): one search path and one set of messages for both.
 *
 * A driver plug-in is a shared object exporting vidmm_driver_entry, a
 * drvcheck_ctor (vidmm/drvcheck.h, docs/WRITING_A_DRIVER.md), so neither
 * program links a GPU API.  "vkgpu" names vkgpu.so (docs/VKGPU.md):
 * $VIDMM_VKGPU_PLUGIN, else vkgpu.so beside the running program, else
 * the installed plug-in directory (VIDMM_PLUGIN_DIR, set by the
 * Makefile); any other name is a path.
 *
 * Every failure is said on stderr as "WHO: --driver NAME: what went
 * wrong", WHO being the caller's own prefix ("vidmm info", "vidmmd").
 */
#ifndef VIDMM_SUPPORT_PLUGIN_H
#define VIDMM_SUPPORT_PLUGIN_H

#include "vidmm/drvcheck.h"

#include <stddef.h>

/* What vidmm_plugin_load and vidmm_plugin_start return. */
enum vidmm_plugin_result {
    VIDMM_PLUGIN_OK = 0,
    VIDMM_PLUGIN_E_LOAD = 1,      /* dlopen failed: no such file, or not a shared object for this host */
    VIDMM_PLUGIN_E_SYMBOL = 2,    /* loaded, but no vidmm_driver_entry in it */
    VIDMM_PLUGIN_E_START = 3,     /* its constructor refused */
};

/* A started plug-in: the dlopen handle and the driver its constructor
 * built. */
struct vidmm_plugin {
    void *lib;
    struct drvcheck_driver drv;
};

/* The file a --driver value names (see the top of this file): driver
 * itself, $VIDMM_VKGPU_PLUGIN, or buf (n bytes) holding the path. */
const char *vidmm_plugin_path(const char *driver, char *buf, size_t n);

/* dlopen the plug-in driver names and find its entry.  VIDMM_PLUGIN_OK
 * with *lib open and *ctor set, else VIDMM_PLUGIN_E_LOAD or
 * VIDMM_PLUGIN_E_SYMBOL after saying why (*lib closed again). */
enum vidmm_plugin_result vidmm_plugin_load(const char *who, const char *driver, void **lib, drvcheck_ctor *ctor);

/* vidmm_plugin_load, then the constructor, given vidmm's own callbacks
 * (vidmm_cb_notify_*) and $VIDMM_DRIVER_OPTIONS.  VIDMM_PLUGIN_OK with
 * p filled, else the load's failure or VIDMM_PLUGIN_E_START after
 * saying why; p then holds nothing to stop. */
enum vidmm_plugin_result vidmm_plugin_start(const char *who, const char *driver, struct vidmm_plugin *p);
/* The same with the constructor's options given (driver-defined, may be
 * NULL) instead of $VIDMM_DRIVER_OPTIONS: `vidmm run|replay --options`. */
enum vidmm_plugin_result vidmm_plugin_start_options(const char *who, const char *driver, const char *options,
                                                    struct vidmm_plugin *p);

/* The driver idled (wait_idle, when it has one), destroyed, and the
 * plug-in closed.  The adapter on it must be closed first. */
void vidmm_plugin_stop(struct vidmm_plugin *p);

#endif
