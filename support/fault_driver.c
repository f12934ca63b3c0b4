/*
 * fault_driver.c - see fault_driver.h.  Each op's wrapper counts the
 * call, asks refuse() whether it fails, and otherwise forwards to the
 * inner driver unchanged.
 */
#include "fault_driver.h"

#include <string.h>

static const char *const op_names[FAULT_OP_COUNT] = {
    "query_adapter_info", "describe_allocation", "destroy_allocation", "build_paging_buffer",
    "submit_command", "map_cpu_host_aperture", "unmap_cpu_host_aperture", "set_root_page_table",
    "get_root_page_table_size", "submit_command_virtual", "submit_command_physical", "patch",
    "reset_engine", "query_engine_status", "reset_from_timeout", "restart_from_timeout", "set_power_state",
};

/* VIDMM_OK: call through; else the status the call returns. */
static vidmm_status refuse(struct fault_driver *fd, enum fault_op op)
{
    uint64_t n = ++fd->calls[op];
    vidmm_status st = VIDMM_OK;
    if (fd->armed_op == (int)op && (n == fd->fail_at || (fd->mode == FAULT_DRIVER_STICKY && n > fd->fail_at)))
        st = fd->status;
    else if (fd->decider)
        st = fd->decider(fd->decider_ctx, op, n);
    if (st != VIDMM_OK)
        fd->refused[op]++;
    return st;
}

#define FD(drv) ((struct fault_driver *)(drv))
/* A status op: refused, or forwarded. */
#define FORWARD(op, member, ...)                                                   \
    do {                                                                           \
        vidmm_status st_ = refuse(FD(drv), op);                                    \
        return st_ != VIDMM_OK ? st_ : FD(drv)->inner->member(FD(drv)->inner_driver, __VA_ARGS__); \
    } while (0)

static vidmm_status fd_query(void *drv, const struct vidmm_query_adapter_info_args *a)
{
    FORWARD(FAULT_OP_QUERY_ADAPTER_INFO, query_adapter_info, a);
}
static vidmm_status fd_describe(void *drv, struct vidmm_describe_allocation_args *a)
{
    FORWARD(FAULT_OP_DESCRIBE_ALLOCATION, describe_allocation, a);
}
static void fd_destroy(void *drv, const struct vidmm_destroy_allocation_args *a)
{
    if (refuse(FD(drv), FAULT_OP_DESTROY_ALLOCATION) == VIDMM_OK && FD(drv)->inner->destroy_allocation)
        FD(drv)->inner->destroy_allocation(FD(drv)->inner_driver, a);
}
static vidmm_status fd_build(void *drv, struct vidmm_build_paging_buffer_args *a)
{
    FORWARD(FAULT_OP_BUILD_PAGING_BUFFER, build_paging_buffer, a);
}
static vidmm_status fd_submit(void *drv, const struct vidmm_submit_command_args *a)
{
    FORWARD(FAULT_OP_SUBMIT_COMMAND, submit_command, a);
}
static vidmm_status fd_map_hap(void *drv, const struct vidmm_map_cpu_host_aperture_args *a)
{
    FORWARD(FAULT_OP_MAP_CPU_HOST_APERTURE, map_cpu_host_aperture, a);
}
static vidmm_status fd_unmap_hap(void *drv, const struct vidmm_unmap_cpu_host_aperture_args *a)
{
    FORWARD(FAULT_OP_UNMAP_CPU_HOST_APERTURE, unmap_cpu_host_aperture, a);
}
static void fd_set_root(void *drv, const struct vidmm_set_root_page_table_args *a)
{
    if (refuse(FD(drv), FAULT_OP_SET_ROOT_PAGE_TABLE) == VIDMM_OK && FD(drv)->inner->set_root_page_table)
        FD(drv)->inner->set_root_page_table(FD(drv)->inner_driver, a);
}
static uint64_t fd_root_size(void *drv, uint32_t *n)
{
    if (refuse(FD(drv), FAULT_OP_GET_ROOT_PAGE_TABLE_SIZE) != VIDMM_OK)
        return 0;
    return FD(drv)->inner->get_root_page_table_size(FD(drv)->inner_driver, n);
}
static vidmm_status fd_submit_virt(void *drv, const struct vidmm_submit_context_args *a)
{
    FORWARD(FAULT_OP_SUBMIT_COMMAND_VIRTUAL, submit_command_virtual, a);
}
static vidmm_status fd_submit_phys(void *drv, const struct vidmm_submit_context_args *a)
{
    FORWARD(FAULT_OP_SUBMIT_COMMAND_PHYSICAL, submit_command_physical, a);
}
static vidmm_status fd_patch(void *drv, const struct vidmm_patch_args *a)
{
    FORWARD(FAULT_OP_PATCH, patch, a);
}
static vidmm_status fd_reset_engine(void *drv, struct vidmm_reset_engine_args *a)
{
    FORWARD(FAULT_OP_RESET_ENGINE, reset_engine, a);
}
static vidmm_status fd_engine_status(void *drv, uint32_t node, uint32_t *responsive)
{
    FORWARD(FAULT_OP_QUERY_ENGINE_STATUS, query_engine_status, node, responsive);
}
static vidmm_status fd_reset(void *drv)
{
    vidmm_status st = refuse(FD(drv), FAULT_OP_RESET_FROM_TIMEOUT);
    return st != VIDMM_OK ? st : FD(drv)->inner->reset_from_timeout(FD(drv)->inner_driver);
}
static vidmm_status fd_restart(void *drv)
{
    vidmm_status st = refuse(FD(drv), FAULT_OP_RESTART_FROM_TIMEOUT);
    return st != VIDMM_OK ? st : FD(drv)->inner->restart_from_timeout(FD(drv)->inner_driver);
}
static vidmm_status fd_power(void *drv, uint32_t state)
{
    FORWARD(FAULT_OP_SET_POWER_STATE, set_power_state, state);
}

void fault_driver_init(struct fault_driver *fd, const struct vidmm_driver_ops *inner, void *inner_driver)
{
    memset(fd, 0, sizeof(*fd));
    fd->inner = inner;
    fd->inner_driver = inner_driver;
    fd->armed_op = -1;
    /* Only the ops the inner driver has: an absent op keeps vidmm's
     * default.  The two void ops whose default is to do nothing are
     * always wrapped (a wrapper of an absent one does nothing either),
     * so their calls are counted. */
    fd->ops.abi_version = inner->abi_version;
    fd->ops.query_adapter_info = inner->query_adapter_info ? fd_query : NULL;
    fd->ops.describe_allocation = inner->describe_allocation ? fd_describe : NULL;
    fd->ops.destroy_allocation = fd_destroy;
    fd->ops.build_paging_buffer = inner->build_paging_buffer ? fd_build : NULL;
    fd->ops.submit_command = inner->submit_command ? fd_submit : NULL;
    fd->ops.map_cpu_host_aperture = inner->map_cpu_host_aperture ? fd_map_hap : NULL;
    fd->ops.unmap_cpu_host_aperture = inner->unmap_cpu_host_aperture ? fd_unmap_hap : NULL;
    fd->ops.set_root_page_table = fd_set_root;
    fd->ops.get_root_page_table_size = inner->get_root_page_table_size ? fd_root_size : NULL;
    fd->ops.submit_command_virtual = inner->submit_command_virtual ? fd_submit_virt : NULL;
    fd->ops.submit_command_physical = inner->submit_command_physical ? fd_submit_phys : NULL;
    fd->ops.patch = inner->patch ? fd_patch : NULL;
    fd->ops.reset_engine = inner->reset_engine ? fd_reset_engine : NULL;
    fd->ops.query_engine_status = inner->query_engine_status ? fd_engine_status : NULL;
    fd->ops.reset_from_timeout = inner->reset_from_timeout ? fd_reset : NULL;
    fd->ops.restart_from_timeout = inner->restart_from_timeout ? fd_restart : NULL;
    fd->ops.set_power_state = inner->set_power_state ? fd_power : NULL;
}

void fault_driver_wrap(struct fault_driver *fd, struct vidmm_adapter_create_info *ci)
{
    fault_driver_init(fd, ci->ops, ci->driver);
    ci->ops = &fd->ops;
    ci->driver = fd;
}

void fault_driver_arm(struct fault_driver *fd, enum fault_op op, uint64_t k, enum fault_mode mode,
                      vidmm_status status)
{
    if ((unsigned)op >= FAULT_OP_COUNT || k == 0) {
        fault_driver_disarm(fd);
        return;
    }
    fd->calls[op] = 0;
    fd->armed_op = (int)op;
    fd->fail_at = k;
    fd->mode = mode;
    fd->status = status == VIDMM_OK ? VIDMM_E_DRIVER_FAILURE : status;
}

void fault_driver_disarm(struct fault_driver *fd)
{
    fd->armed_op = -1;
    fd->fail_at = 0;
}

void fault_driver_set_decider(struct fault_driver *fd, fault_driver_decider fn, void *ctx)
{
    fd->decider = fn;
    fd->decider_ctx = ctx;
}

uint64_t fault_driver_calls(const struct fault_driver *fd, enum fault_op op)
{
    return (unsigned)op < FAULT_OP_COUNT ? fd->calls[op] : 0;
}

uint64_t fault_driver_refused(const struct fault_driver *fd, enum fault_op op)
{
    return (unsigned)op < FAULT_OP_COUNT ? fd->refused[op] : 0;
}

void fault_driver_reset_counts(struct fault_driver *fd)
{
    memset(fd->calls, 0, sizeof(fd->calls));
    memset(fd->refused, 0, sizeof(fd->refused));
}

const char *fault_driver_op_name(enum fault_op op)
{
    return (unsigned)op < FAULT_OP_COUNT ? op_names[op] : NULL;
}

enum fault_op fault_driver_op_from_name(const char *name)
{
    for (int i = 0; name && i < FAULT_OP_COUNT; i++)
        if (strcmp(name, op_names[i]) == 0)
            return (enum fault_op)i;
    return FAULT_OP_COUNT;
}
