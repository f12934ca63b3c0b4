/*
 * lookup.c - the handle-lookup prologue of the public entries, once per
 * object kind (handle/lookup.h): the table lookup and, on a miss, the
 * reason recorded with the words every entry uses.
 */
#include "handle/lookup.h"

#include "core/error.h"
#include "handle/handle.h"

#include <pthread.h>

vidmm_status vidmm_process_lookup(const struct vidmm_adapter *a, vidmm_handle h, struct vidmm_process **out)
{
    *out = vidmm_objtab_get(&a->processes, h);
    return *out ? VIDMM_OK
                : vidmm_fail(VIDMM_E_INVALID_HANDLE, "process handle 0x%llx: not a live process of this adapter",
                             (unsigned long long)h);
}

vidmm_status vidmm_device_lookup(const struct vidmm_adapter *a, vidmm_handle h, struct vidmm_device **out)
{
    *out = vidmm_objtab_get(&a->devices, h);
    return *out ? VIDMM_OK
                : vidmm_fail(VIDMM_E_INVALID_HANDLE, "device handle 0x%llx: not a live device of this adapter",
                             (unsigned long long)h);
}

vidmm_status vidmm_context_lookup_locked(const struct vidmm_adapter *a, vidmm_handle h, struct vidmm_context **out)
{
    *out = vidmm_objtab_get(&a->contexts, h);
    return *out ? VIDMM_OK
                : vidmm_fail(VIDMM_E_INVALID_HANDLE, "context handle 0x%llx: not a live context of this adapter",
                             (unsigned long long)h);
}

vidmm_status vidmm_context_lookup(struct vidmm_adapter *a, vidmm_handle h, struct vidmm_context **out)
{
    pthread_mutex_lock(&a->fence_lock);
    *out = vidmm_objtab_get(&a->contexts, h);
    pthread_mutex_unlock(&a->fence_lock);
    return *out ? VIDMM_OK
                : vidmm_fail(VIDMM_E_INVALID_HANDLE, "context handle 0x%llx: not a live context of this adapter",
                             (unsigned long long)h);
}

vidmm_status vidmm_allocation_lookup(const struct vidmm_adapter *a, vidmm_handle h, struct vidmm_allocation **out)
{
    *out = vidmm_handle_get(a, h);
    return *out ? VIDMM_OK
                : vidmm_fail(VIDMM_E_INVALID_HANDLE, "allocation handle 0x%llx: not a live allocation of this adapter",
                             (unsigned long long)h);
}

vidmm_status vidmm_allocation_lookup_for(const struct vidmm_adapter *a, vidmm_handle h, vidmm_handle process,
                                         struct vidmm_allocation **out)
{
    *out = vidmm_handle_get_for(a, h, process);
    return *out ? VIDMM_OK
                : vidmm_fail(VIDMM_E_INVALID_HANDLE, "allocation handle 0x%llx: not an allocation this process may name",
                             (unsigned long long)h);
}
