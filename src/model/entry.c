/*
 * entry.c - the adapter lock every public entry takes (docs/THREADING.md).
 *
 * Recursive: an entry may call another entry, or a user callback run
 * under it may call back in on the same thread.  The outermost unlock is
 * the entry boundary: nothing above it holds pointers into adapter
 * state, so an adapter reset a hang left pending runs there, through the
 * recovery upcall the tdr layer installs (model/objects.h).
 */
#include "model/objects.h"
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void vidmm_adapter_lock(const struct vidmm_adapter *a)
{
    struct vidmm_adapter *m = (struct vidmm_adapter *)a;   /* the lock is not part of the state */
    pthread_mutex_lock(&m->lock);
    if (m->entry.lock_depth++ == 0)
        m->entry.lock_owner = pthread_self();
}

void vidmm_adapter_unlock(const struct vidmm_adapter *a)
{
    struct vidmm_adapter *m = (struct vidmm_adapter *)a;
    /* The outermost entry unwinds: nothing above it holds adapter state,
     * so an adapter reset found below it runs now. */
    if (m->entry.lock_depth == 1 && vidmm_entry_reset_flagged(m, NULL))
        m->up.run_pending(m);
    m->entry.lock_depth--;
    pthread_mutex_unlock(&m->lock);
}

int vidmm_adapter_trylock(struct vidmm_adapter *a)
{
    int r = pthread_mutex_trylock(&a->lock);
    if (r == 0 && a->entry.lock_depth++ == 0)
        a->entry.lock_owner = pthread_self();
    return r;
}

int vidmm_entry_recover(const struct vidmm_adapter *a)
{
    struct vidmm_adapter *m = (struct vidmm_adapter *)a;   /* recovery is not the caller's state */
    int node;
    if (m->entry.lock_depth != 1 || !vidmm_entry_reset_flagged(m, &node) || node < 0)
        return 0;
    return m->up.run_pending(m) == 1;
}

int vidmm_entry_reset_flagged(const struct vidmm_adapter *a, int *node)
{
    if (!a || !a->entry.reset_pending || !pthread_equal(a->entry.pending_owner, pthread_self()))
        return 0;
    if (node)
        *node = a->entry.pending_node;
    return 1;
}

int vidmm_entry_reset_any(const struct vidmm_adapter *a)
{
    return a->entry.reset_pending;
}

void vidmm_entry_reset_set(struct vidmm_adapter *a, int node)
{
    a->entry.reset_pending = 1;
    a->entry.pending_node = node;
    a->entry.pending_owner = pthread_self();
}

void vidmm_entry_reset_clear(struct vidmm_adapter *a)
{
    a->entry.reset_pending = 0;
}

int vidmm_adapter_held(const struct vidmm_adapter *a)
{
    return a->entry.lock_depth > 0 && pthread_equal(a->entry.lock_owner, pthread_self());
}

void vidmm_entry_enter(const struct vidmm_adapter *a)
{
    struct vidmm_adapter *m = (struct vidmm_adapter *)a;   /* recovery is not the caller's state */
    vidmm_adapter_lock(a);
    if (a->entry.lock_depth != 1)
        return;
    vidmm_error_clear();
    /* Nothing is held yet: the carried reset runs before the operation. */
    if (m->entry.reset_carried && m->up.recover && m->up.run_pending) {
        m->entry.reset_carried = 0;
        if (m->up.recover(m, -1))
            (void)m->up.run_pending(m);
    }
}

vidmm_status vidmm_entry_no_adapter(const char *entry)
{
    vidmm_error_clear();
    (void)vidmm_fail(VIDMM_E_INVALID_ARG, "adapter is NULL");
    vidmm_error_finish(entry, VIDMM_E_INVALID_ARG);
    return VIDMM_E_INVALID_ARG;
}

vidmm_status vidmm_entry_leave_named(const struct vidmm_adapter *a, vidmm_status st, const char *entry)
{
    if (a->entry.lock_depth == 1)
        vidmm_error_finish(entry, st);
    return vidmm_entry_leave(a, st);
}

vidmm_status vidmm_entry_leave(const struct vidmm_adapter *a, vidmm_status st)
{
#ifdef VIDMM_DEBUG
    /* The boundary of the outermost entry: the state must be whole. */
    if (a->entry.lock_depth == 1 && !vidmm_entry_reset_flagged(a, NULL) && a->up.debug_check) {
        char msg[512];
        msg[0] = 0;
        if (a->up.debug_check(a, msg, sizeof(msg)) > 0)
            (void)vidmm_bug(a, msg, "an entry boundary", 0);
    }
#endif
    vidmm_adapter_unlock(a);
    return st;
}

int vidmm_bug(const struct vidmm_adapter *a, const char *what, const char *file, int line)
{
#ifdef VIDMM_DEBUG
    (void)a;
    fprintf(stderr, "vidmm: BUG at %s:%d: %s\n", file, line, what);
    abort();
#else
    struct vidmm_adapter *m = (struct vidmm_adapter *)a;   /* diagnostics, not logical state */
    if (m) {
        if (!m->entry.bugs++)
            snprintf(m->entry.bug_msg, sizeof(m->entry.bug_msg), "%s:%d: %s", file, line, what);
    }
    return 1;
#endif
}

int vidmm_bug_msg(const struct vidmm_adapter *a, const char *cond, const char *file, int line, const char *fmt, ...)
{
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    struct vidmm_adapter *m = (struct vidmm_adapter *)a;   /* diagnostics, not logical state */
    return vidmm_bug_note(m ? &m->entry.bugs : NULL, m ? m->entry.bug_msg : NULL, m ? sizeof(m->entry.bug_msg) : 0,
                          cond, file, line, "%s", what);
}

uint32_t vidmm_entry_depth(const struct vidmm_adapter *a)
{
    return a->entry.lock_depth;
}

void vidmm_entry_set_depth(struct vidmm_adapter *a, uint32_t depth)
{
    a->entry.lock_depth = depth;
}

void vidmm_entry_carry_reset(struct vidmm_adapter *a, int on)
{
    a->entry.reset_carried = on;
}

uint64_t vidmm_entry_bugs(const struct vidmm_adapter *a, const char **first)
{
    *first = a->entry.bug_msg;
    return a->entry.bugs;
}
