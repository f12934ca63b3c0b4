/*
 * sim_os.h - the operating-system seam of the deterministic explorer.
 *
 * The explorer (tests/sim/explore.c) links its own build of the core
 * library, compiled with this header forced in first (-include).  The
 * library blocks in one place only - a fence wait on the adapter's fence
 * condition (src/fence/hang.c) - and reads the clock there and in a few
 * deadline computations.  The three macros below send those calls to the
 * simulation instead of the host: a wait that would block asks the
 * explorer's scheduler to run one engine event (softgpu_step in manual
 * mode), and the clock is virtual, moved only when a timed wait expires
 * or the scheduler lets time pass.  So one OS thread runs every
 * simulated thread, engine, hang detection and reset, and the same seed
 * gives the same run.  The library's source is unchanged; with no hooks
 * installed the functions fall through to the host's.
 */
#ifndef VIDMM_SIM_OS_H
#define VIDMM_SIM_OS_H

#include <pthread.h>
#include <time.h>

int sim_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex);
int sim_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex, const struct timespec *abstime);
int sim_clock_gettime(clockid_t id, struct timespec *ts);

/* What the explorer plugs in.  block: a wait would block (deadline: has
 * one); run one event and return 1, or return 0 when nothing may run now
 * (a timed wait then expires: the clock jumps to its deadline; an untimed
 * one is a deadlock, reported by the explorer). */
struct sim_hooks {
    int (*block)(void *ctx, int deadline);
    void (*deadlock)(void *ctx);
    void *ctx;
};
/* Install (NULL: the host's behaviour again); the virtual clock restarts
 * at start_ns. */
void sim_install(const struct sim_hooks *hooks, unsigned long long start_ns);
/* Virtual time: now, and let ns pass. */
unsigned long long sim_now(void);
void sim_advance(unsigned long long ns);

#ifndef SIM_OS_IMPL
#define pthread_cond_wait sim_cond_wait
#define pthread_cond_timedwait sim_cond_timedwait
#define clock_gettime sim_clock_gettime
#endif

#endif
