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

void vidmm_adapter_lock(const struct vidmm_adapter *a)
{
    struct vidmm_adapter *m = (struct vidmm_adapter *)a;   /* the lock is not part of the state */
    pthread_mutex_lock(&m->lock);
    m->lock_depth++;
}

void vidmm_adapter_unlock(const struct vidmm_adapter *a)
{
    struct vidmm_adapter *m = (struct vidmm_adapter *)a;
    /* The outermost entry unwinds: nothing above it holds adapter state,
     * so an adapter reset found below it runs now. */
    if (m->lock_depth == 1 && m->tdr.reset_pending)
        m->up.run_pending(m);
    m->lock_depth--;
    pthread_mutex_unlock(&m->lock);
}

int vidmm_adapter_trylock(struct vidmm_adapter *a)
{
    int r = pthread_mutex_trylock(&a->lock);
    if (r == 0)
        a->lock_depth++;
    return r;
}
