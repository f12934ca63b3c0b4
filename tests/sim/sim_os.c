/*
 * sim_os.c - see sim_os.h.  The explorer is single-threaded: the hooks
 * and the virtual clock are the harness's one piece of global state
 * (the core library, compiled against sim_os.h, has no way to carry a
 * context into pthread_cond_wait).
 */
#define SIM_OS_IMPL
#include "sim/sim_os.h"

#include <errno.h>
#include <stddef.h>

static struct sim_hooks g_hooks;
static int g_on;
static unsigned long long g_now;

void sim_install(const struct sim_hooks *hooks, unsigned long long start_ns)
{
    g_on = hooks != NULL;
    if (hooks)
        g_hooks = *hooks;
    g_now = start_ns;
}

unsigned long long sim_now(void)
{
    return g_now;
}

void sim_advance(unsigned long long ns)
{
    g_now += ns;
}

static unsigned long long ts_ns(const struct timespec *t)
{
    return (unsigned long long)t->tv_sec * 1000000000ull + (unsigned long long)t->tv_nsec;
}

int sim_clock_gettime(clockid_t id, struct timespec *ts)
{
    if (!g_on)
        return clock_gettime(id, ts);
    /* One virtual clock serves CLOCK_MONOTONIC and CLOCK_REALTIME: vidmm
     * only compares times of one clock with each other. */
    ts->tv_sec = (time_t)(g_now / 1000000000ull);
    ts->tv_nsec = (long)(g_now % 1000000000ull);
    return 0;
}

/* The caller holds mutex, as for pthread_cond_wait: it is released while
 * the scheduler runs an event (a fence callback takes it), and taken
 * back.  Returning without a signal is a spurious wake-up, which every
 * condition wait allows: the caller looks at its condition again. */
int sim_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex)
{
    if (!g_on)
        return pthread_cond_wait(cond, mutex);
    pthread_mutex_unlock(mutex);
    int ran = g_hooks.block(g_hooks.ctx, 0);
    pthread_mutex_lock(mutex);
    if (!ran)
        g_hooks.deadlock(g_hooks.ctx);
    return 0;
}

int sim_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex, const struct timespec *abstime)
{
    if (!g_on)
        return pthread_cond_timedwait(cond, mutex, abstime);
    pthread_mutex_unlock(mutex);
    int ran = g_hooks.block(g_hooks.ctx, 1);
    pthread_mutex_lock(mutex);
    if (ran)
        return 0;
    if (ts_ns(abstime) > g_now)
        g_now = ts_ns(abstime);   /* nothing may run before the deadline: it comes */
    return ETIMEDOUT;
}
