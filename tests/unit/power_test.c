/*
 * power_test.c - the power rules of vidmm/power.h that tdr_test.c's
 * cycles do not reach (docs/RESET_AND_POWER.md):
 *
 *   - going down only from D0: standby or hibernate requested while in
 *     either answers VIDMM_E_STATE, names the rule, changes nothing and
 *     tells the driver nothing.
 */
#include "gpuva_common.h"
#include "sg_fixture.h"
#include "harness/fault_alloc.h"
#include "harness/test.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <stdio.h>
#include <string.h>

#define MIB (1ull << 20)
#define KIB (1ull << 10)
#define SET12 (VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2))

struct pw {
    struct fault_alloc fa;
    struct softgpu *sg;
    struct vidmm_adapter *a;
    struct vidmm_driver_ops ops;
    int down;                 /* the test says the adapter is down now */
    unsigned work_while_down; /* build_paging_buffer + submit_command calls meanwhile */
};

static struct pw *g_pw;       /* the wrappers' fixture (one test at a time) */

static vidmm_status counting_build(void *drv, struct vidmm_build_paging_buffer_args *args)
{
    if (g_pw && g_pw->down)
        g_pw->work_while_down++;
    return softgpu_driver_ops()->build_paging_buffer(drv, args);
}

static vidmm_status counting_submit(void *drv, const struct vidmm_submit_command_args *args)
{
    if (g_pw && g_pw->down)
        g_pw->work_while_down++;
    return softgpu_driver_ops()->submit_command(drv, args);
}

static int pw_open(struct pw *f)
{
    memset(f, 0, sizeof(*f));
    g_pw = f;
    struct softgpu_config cfg;
    sg_config(&cfg, "dgpu", 16 * MIB, 32 * MIB, 0);
    f->ops = *softgpu_driver_ops();
    f->ops.build_paging_buffer = counting_build;
    f->ops.submit_command = counting_submit;
    if (sg_open(&f->fa, &cfg, &f->ops, 0, &f->sg, &f->a))
        return -1;
    T_ST(vidmm_adapter_set_tdr_timeout(f->a, 50000000ull), VIDMM_OK);
    return 0;
}

static void pw_close(struct pw *f)
{
    sg_close(&f->fa, f->sg, f->a);
    g_pw = NULL;
}

static void go(struct pw *f, uint32_t state)
{
    f->down = 0;
    T_ST(vidmm_adapter_set_power_state(f->a, state), VIDMM_OK);
    f->down = state != VIDMM_POWER_D0;
}

/* ---- going down only from D0 --------------------------------------------- */

static void down_only_from_d0(void)
{
    struct pw f;
    if (pw_open(&f))
        return;
    static const uint32_t low[] = { VIDMM_POWER_STANDBY, VIDMM_POWER_HIBERNATE };
    for (int i = 0; i < 2; i++) {
        go(&f, low[i]);
        struct vidmm_power_stats before, after;
        struct softgpu_reset_stats rb, ra;
        T_ST(vidmm_adapter_get_power_stats(f.a, &before), VIDMM_OK);
        softgpu_get_reset_stats(f.sg, &rb);
        for (int j = 0; j < 2; j++) {   /* the same state again, and the other one */
            T_ST(vidmm_adapter_set_power_state(f.a, low[j]), VIDMM_E_STATE);
            T_CHECK(strstr(vidmm_last_error(), "only from D0") != NULL);
        }
        uint32_t ps = 9;
        T_ST(vidmm_adapter_get_power_state(f.a, &ps), VIDMM_OK);
        T_EQ(ps, low[i]);
        T_ST(vidmm_adapter_get_power_stats(f.a, &after), VIDMM_OK);
        softgpu_get_reset_stats(f.sg, &ra);
        T_EQ_U64(after.transitions, before.transitions);
        T_EQ_U64(ra.power_transitions, rb.power_transitions);   /* the driver was told nothing */
        T_EQ(f.work_while_down, 0);
        go(&f, VIDMM_POWER_D0);
        T_ST(vidmm_adapter_set_power_state(f.a, VIDMM_POWER_D0), VIDMM_OK);   /* running: nothing to do */
        T_ST(vidmm_adapter_get_power_stats(f.a, &after), VIDMM_OK);
        T_EQ_U64(after.transitions, before.transitions + 1);
    }
    T_EQ(sg_checked(f.a, f.sg), 0);
    pw_close(&f);
}

void suite_power(void);
void suite_power(void)
{
    t_run("power.down_only_from_d0", down_only_from_d0);
}
