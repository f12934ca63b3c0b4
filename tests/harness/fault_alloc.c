/*
 * fault_alloc.c - see fault_alloc.h.
 */
#include "fault_alloc.h"

#include <stdlib.h>

static void *fa_alloc(void *ud, size_t size, size_t alignment)
{
    struct fault_alloc *fa = ud;
    fa->calls++;
    if (fa->fail_at && fa->calls == fa->fail_at) {
        fa->failures++;
        return NULL;
    }
    const struct vidmm_host_allocator *d = vidmm_default_host_allocator();
    void *p = d->alloc(d->user_data, size, alignment);
    if (p) {
        fa->live_blocks++;
        fa->live_bytes += (int64_t)size;
    }
    return p;
}

static void fa_free(void *ud, void *ptr, size_t size, size_t alignment)
{
    struct fault_alloc *fa = ud;
    fa->live_blocks--;
    fa->live_bytes -= (int64_t)size;
    const struct vidmm_host_allocator *d = vidmm_default_host_allocator();
    d->free(d->user_data, ptr, size, alignment);
}

void fault_alloc_init(struct fault_alloc *fa)
{
    fa->ha.alloc = fa_alloc;
    fa->ha.free = fa_free;
    fa->ha.user_data = fa;
    fa->calls = fa->fail_at = fa->failures = 0;
    fa->live_blocks = fa->live_bytes = 0;
}
