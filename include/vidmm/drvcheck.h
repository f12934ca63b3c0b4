/*
 * vidmm/drvcheck.h - the driver conformance kit: runs the contract of
 * include/vidmm/driver.h against any driver and says which clause fails.
 *
 * A driver is given to the kit as a constructor (drvcheck_ctor).  The kit
 * makes a fresh driver for each group of checks and destroys it after,
 * so one group's state (a power state, a broken queue) never leaks into
 * the next.  Groups:
 *
 *   query      the two-call segment query (count, then descriptors along
 *              segment_descriptor_stride), short buffers refused, unknown
 *              query types answered NOT_SUPPORTED, driver caps sane;
 *   describe   every descriptor against the rules vidmm enforces (each
 *              fault named), the adapter opens, and descriptions the kit
 *              spoils on the way (one rule broken each) are refused;
 *   restart    build_paging_buffer on buffers too small: pointer and room
 *              kept consistent, progress through multipass_offset, and
 *              the bytes of the whole operation right at the end;
 *   paging     FILL, TRANSFER (memory <-> memory, memory <-> system pages,
 *              through the aperture), MAP / UNMAP_APERTURE_SEGMENT,
 *              DISCARD_CONTENT on real bytes, read through the driver's
 *              own CPU access (a CPU-visible segment's address, or the
 *              system pages the kit owns), bytes around each range
 *              untouched; malformed requests refused at build time;
 *   fences     several buffers in flight: each fence signalled once, in
 *              increasing order, never beyond what was submitted, and
 *              only after its buffer (and every earlier one) ran;
 *   reset      reset_from_timeout / restart_from_timeout leave a driver
 *              that runs new buffers; set_power_state down and up, bad
 *              states refused; reset_engine / query_engine_status on an
 *              idle engine;
 *   vidmm      through vidmm: open, over-commitment with evictions and
 *              restores, every byte checked, standby and resume, restart
 *              protocol forced on every paging operation, adapter checks
 *              clean.
 *
 * Fences are watched through the callbacks the kit hands the driver in
 * drvcheck_env (as WDDM hands DxgkCbNotifyInterrupt in
 * DXGKRNL_INTERFACE).  A driver that calls vidmm_cb_notify_fence itself
 * instead says so (signals_through_env = 0) and gives wait_idle; the
 * checks that need to see each signal are then skipped.
 *
 * The kit is built against the public headers only and keeps no global
 * state.  docs/WRITING_A_DRIVER.md says how to run it on a new driver.
 * This header is installed with vidmm so that a plug-in builds against
 * an installed vidmm; drvcheck_run itself lives in
 * examples/drvcheck/drvcheck.c (the vidmm tool links it), not in
 * libvidmm.
 */
#ifndef VIDMM_DRVCHECK_H
#define VIDMM_DRVCHECK_H

#include "vidmm/adapter.h"
#include "vidmm/driver.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the kit gives a driver it constructs: its callbacks (the
 * driver's view of vidmm_cb_notify_*), and the options string of
 * `vidmm drvcheck --options` (driver-defined, may be NULL). */
struct drvcheck_env {
    void (*notify_fence)(struct vidmm_adapter *adapter, uint64_t fence);
    void (*notify_context_fence)(struct vidmm_adapter *adapter, uint64_t context, uint32_t node, uint64_t fence);
    void (*notify_page_fault)(struct vidmm_adapter *adapter, uint64_t context, uint64_t va, uint32_t flags);
    const char *options;
};

/* A constructed driver. */
struct drvcheck_driver {
    const char *name;
    const struct vidmm_driver_ops *ops;
    void *driver;                      /* first argument of every op */
    uint64_t agp_aperture_base;        /* what vidmm_adapter_create_info should carry */
    uint64_t agp_aperture_size;
    /* 1: the driver reports fences through env->notify_fence, with the
     * adapter pointer of the submission.  0: it calls vidmm itself. */
    int signals_through_env;
    /* Required when signals_through_env is 0: returns once every
     * submitted buffer has run. */
    vidmm_status (*wait_idle)(void *driver);
    /* The user-mode driver's private data for a CPU-visible allocation
     * of size bytes that may live in the driver's memory segments
     * (vidmm_allocation_create's private_data).  Writes at most
     * capacity bytes, returns how many (0: the driver cannot describe
     * one; the vidmm group is then skipped). */
    size_t (*private_data)(void *driver, uint64_t size, void *buf, size_t capacity);
    void (*destroy)(void *driver);
};

/* Builds one driver.  Returns VIDMM_OK and fills *out, or a failure. */
typedef vidmm_status (*drvcheck_ctor)(const struct drvcheck_env *env, struct drvcheck_driver *out);

/* The symbol `vidmm drvcheck --driver FILE.so` looks up with dlsym: a
 * function of type drvcheck_ctor. */
#define DRVCHECK_ENTRY_SYMBOL "vidmm_driver_entry"

struct drvcheck_result {
    unsigned passed, failed, skipped;
};

/* Runs every group (or those whose name is in the comma-separated list
 * `groups`, NULL = all) and prints one line per failed or skipped check
 * (every check with verbose) and a summary "drvcheck: N passed, M
 * failed, K skipped" to out.  options goes to the constructor.  Returns
 * the failure count. */
unsigned drvcheck_run(drvcheck_ctor ctor, const char *options, const char *groups, int verbose, FILE *out,
                      struct drvcheck_result *result);

#ifdef __cplusplus
}
#endif
#endif
