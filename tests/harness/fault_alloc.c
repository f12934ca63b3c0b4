/*
 * fault_alloc.c - see fault_alloc.h.
 */
#include "fault_alloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t header_pad(size_t alignment)
{
    return alignment > 16 ? alignment : 16;
}

static void *fa_alloc_common(struct fault_alloc *fa, size_t size, size_t alignment, uint32_t site)
{
    fa->calls++;
    fa->last_site = site;
    if (site < FAULT_ALLOC_MAX_SITES)
        fa->site_hits[site]++;
    else
        fa->plain_calls++;
    if (fa->fail_at && (fa->calls == fa->fail_at || (fa->fail_forever && fa->calls > fa->fail_at))) {
        fa->failures++;
        fa->last_fail_site = site;
        if (site < FAULT_ALLOC_MAX_SITES)
            fa->site_fails[site]++;
        return NULL;
    }
    /* The site goes in a header just before the block; the block keeps
     * its alignment. */
    size_t pad = header_pad(alignment);
    if (size > SIZE_MAX - pad)
        return NULL;
    const struct vidmm_host_allocator *d = vidmm_default_host_allocator();
    char *p = d->alloc(d->user_data, size + pad, pad);
    if (!p)
        return NULL;
    uint32_t slot = site < FAULT_ALLOC_MAX_SITES ? site : FAULT_ALLOC_MAX_SITES;
    memcpy(p + pad - sizeof slot, &slot, sizeof slot);
    fa->site_live[slot]++;
    fa->site_live_bytes[slot] += (int64_t)size;
    fa->live_blocks++;
    fa->live_bytes += (int64_t)size;
    return p + pad;
}

static void *fa_alloc(void *ud, size_t size, size_t alignment)
{
    return fa_alloc_common(ud, size, alignment, FAULT_ALLOC_NO_SITE);
}

static void *fa_alloc_site(void *ud, size_t size, size_t alignment, unsigned site)
{
    return fa_alloc_common(ud, size, alignment, site < FAULT_ALLOC_MAX_SITES ? (uint32_t)site : FAULT_ALLOC_NO_SITE);
}

static void fa_free(void *ud, void *ptr, size_t size, size_t alignment)
{
    struct fault_alloc *fa = ud;
    fa->live_blocks--;
    fa->live_bytes -= (int64_t)size;
    size_t pad = header_pad(alignment);
    char *p = (char *)ptr - pad;
    uint32_t slot;
    memcpy(&slot, p + pad - sizeof slot, sizeof slot);
    if (slot <= FAULT_ALLOC_MAX_SITES) {
        fa->site_live[slot]--;
        fa->site_live_bytes[slot] -= (int64_t)size;
    }
    const struct vidmm_host_allocator *d = vidmm_default_host_allocator();
    d->free(d->user_data, p, size + pad, pad);
}

void fault_alloc_init(struct fault_alloc *fa)
{
    memset(fa, 0, sizeof *fa);
    fa->ha.alloc = fa_alloc;
    fa->ha.free = fa_free;
    fa->ha.user_data = fa;
    fa->ha.alloc_site = fa_alloc_site;
    fa->last_site = fa->last_fail_site = FAULT_ALLOC_NO_SITE;
    if (vidmm_host_alloc_site_count() > FAULT_ALLOC_MAX_SITES)
        fprintf(stderr, "fault_alloc: %u allocation sites, raise FAULT_ALLOC_MAX_SITES\n",
                vidmm_host_alloc_site_count());
}

void fault_alloc_arm(struct fault_alloc *fa, uint64_t n, int forever)
{
    fa->fail_at = fa->calls + (n ? n : 1);
    fa->fail_forever = forever;
}

void fault_alloc_disarm(struct fault_alloc *fa)
{
    fa->fail_at = 0;
    fa->fail_forever = 0;
}
