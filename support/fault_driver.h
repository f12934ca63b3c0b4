/*
 * fault_driver.h - a driver that wraps another and refuses chosen calls.
 *
 * The driver-side counterpart of fault_alloc.h: a struct fault_driver
 * forwards every op of the driver interface (vidmm/driver.h) to an inner
 * driver (softgpu, or any other ops table) and, once armed, makes one op
 * fail at its k-th call from the arming (1-based), either that call only
 * (FAULT_DRIVER_ONCE) or that call and every later one until disarmed
 * (FAULT_DRIVER_STICKY, SQLite's "fail-forever").  Counting the calls of
 * an op through a whole scenario with nothing armed, then sweeping k over
 * 1..calls in both modes, visits every call site of that op in that
 * scenario (tests/unit/drvfail_test.c does it).
 *
 * A refused call does not reach the inner driver.  Status ops return the
 * armed status; the void ops (destroy_allocation, set_root_page_table) do
 * nothing; get_root_page_table_size returns 0 (its refusal).  Ops the
 * inner table lacks stay absent (vidmm fills its defaults), except the
 * two void ops, whose default is to do nothing anyway: so the wrapper
 * never changes what the driver can do, only whether it does.
 *
 * A decider callback may replace the arming (a deterministic simulator
 * draws failures from its seed): called before each call of every op, a
 * status other than VIDMM_OK refuses the call with that status.
 *
 * vidmm calls driver ops with its adapter lock held, so the counters need
 * no lock of their own; the wrapper keeps no global state and links with
 * the public headers only.
 *
 * Use:
 *     struct fault_driver fd;
 *     softgpu_fill_adapter_create_info(sg, &ci);
 *     fault_driver_wrap(&fd, &ci);             (ci.ops/ci.driver now fd's)
 *     vidmm_adapter_open(&ci, &a);
 *     fault_driver_arm(&fd, FAULT_OP_SUBMIT_COMMAND, 3, FAULT_DRIVER_STICKY,
 *                      VIDMM_E_DRIVER_FAILURE);
 *     ... fault_driver_disarm(&fd);
 */
#ifndef VIDMM_TEST_FAULT_DRIVER_H
#define VIDMM_TEST_FAULT_DRIVER_H

#include "vidmm/adapter.h"
#include "vidmm/driver.h"

#include <stdint.h>

/* The ops that can be made to fail, in the order of struct vidmm_driver_ops. */
enum fault_op {
    FAULT_OP_QUERY_ADAPTER_INFO,
    FAULT_OP_DESCRIBE_ALLOCATION,
    FAULT_OP_DESTROY_ALLOCATION,        /* void: a refusal does nothing */
    FAULT_OP_BUILD_PAGING_BUFFER,
    FAULT_OP_SUBMIT_COMMAND,
    FAULT_OP_MAP_CPU_HOST_APERTURE,
    FAULT_OP_UNMAP_CPU_HOST_APERTURE,
    FAULT_OP_SET_ROOT_PAGE_TABLE,       /* void: a refusal does nothing */
    FAULT_OP_GET_ROOT_PAGE_TABLE_SIZE,  /* a refusal returns 0 */
    FAULT_OP_SUBMIT_COMMAND_VIRTUAL,
    FAULT_OP_SUBMIT_COMMAND_PHYSICAL,
    FAULT_OP_PATCH,
    FAULT_OP_RESET_ENGINE,
    FAULT_OP_QUERY_ENGINE_STATUS,
    FAULT_OP_RESET_FROM_TIMEOUT,
    FAULT_OP_RESTART_FROM_TIMEOUT,
    FAULT_OP_SET_POWER_STATE,
    FAULT_OP_COUNT
};

enum fault_mode {
    FAULT_DRIVER_ONCE,     /* the k-th call only */
    FAULT_DRIVER_STICKY    /* the k-th call and every later one */
};

/* Called before every call of every op: VIDMM_OK lets it through, any
 * other status refuses it.  call is the op's count including this one. */
typedef vidmm_status (*fault_driver_decider)(void *ctx, enum fault_op op, uint64_t call);

struct fault_driver {
    struct vidmm_driver_ops ops;           /* what vidmm calls (fault_driver_init fills it) */
    const struct vidmm_driver_ops *inner;
    void *inner_driver;
    uint64_t calls[FAULT_OP_COUNT];        /* calls that reached the wrapper, refused ones included */
    uint64_t refused[FAULT_OP_COUNT];
    /* The arming: op `armed_op` fails from its call `fail_at` on (counted
     * in calls[]) in mode `mode` with `status`.  -1: disarmed. */
    int armed_op;
    uint64_t fail_at;
    enum fault_mode mode;
    vidmm_status status;
    fault_driver_decider decider;
    void *decider_ctx;
};

/* Wrap inner (its driver pointer inner_driver); nothing armed. */
void fault_driver_init(struct fault_driver *fd, const struct vidmm_driver_ops *inner, void *inner_driver);

/* Wrap the driver ci names (ci->ops, ci->driver) and make ci name fd. */
void fault_driver_wrap(struct fault_driver *fd, struct vidmm_adapter_create_info *ci);

/* Fail op at its k-th call from now (k >= 1; k = 0 disarms), once or
 * sticky, with status (ignored by the void ops; VIDMM_OK becomes
 * VIDMM_E_DRIVER_FAILURE).  Replaces any earlier arming; resets op's
 * count so that k counts from here. */
void fault_driver_arm(struct fault_driver *fd, enum fault_op op, uint64_t k, enum fault_mode mode,
                      vidmm_status status);

void fault_driver_disarm(struct fault_driver *fd);

/* The decider replaces nothing: an armed op still fails as armed; NULL
 * removes it. */
void fault_driver_set_decider(struct fault_driver *fd, fault_driver_decider fn, void *ctx);

/* Calls of op so far (since init, or since op was last armed). */
uint64_t fault_driver_calls(const struct fault_driver *fd, enum fault_op op);

/* Calls refused since init. */
uint64_t fault_driver_refused(const struct fault_driver *fd, enum fault_op op);

/* Zero every count. */
void fault_driver_reset_counts(struct fault_driver *fd);

/* "build_paging_buffer" for FAULT_OP_BUILD_PAGING_BUFFER; NULL past the end. */
const char *fault_driver_op_name(enum fault_op op);

/* The op named name, or FAULT_OP_COUNT. */
enum fault_op fault_driver_op_from_name(const char *name);

#endif
