/*
 * names.c - the words for segment kinds and DXGK_SEGMENTFLAGS bits.
 *
 * One table, here in the lowest layer, so the statistics JSON (observe/),
 * the adapter's public query and the command-line tool print the same
 * names; the public side is vidmm/segment.h.
 */
#include "vidmm/driver.h"
#include "vidmm/segment.h"

#include <stddef.h>

const char *vidmm_segment_kind_str(enum vidmm_segment_kind kind)
{
    switch (kind) {
    case VIDMM_SEGMENT_KIND_SYSTEM: return "system";
    case VIDMM_SEGMENT_KIND_MEMORY: return "memory";
    case VIDMM_SEGMENT_KIND_APERTURE: return "aperture";
    case VIDMM_SEGMENT_KIND_AGP: return "agp";
    }
    return "unknown";
}

/* The DXGK_SEGMENTFLAGS field names of the flags a segment reports, in
 * bit order.  Bits vidmm rejects (UseBanking, PitchAlignment) or never
 * reports (PartiallyPreservedDuringHibernate, the system's
 * ReservedSysMem) have no entry. */
static const struct {
    uint32_t bit;
    const char *name;
} segment_flag_names[] = {
    { VIDMM_SEGMENT_APERTURE, "Aperture" },
    { VIDMM_SEGMENT_AGP, "Agp" },
    { VIDMM_SEGMENT_CPU_VISIBLE, "CpuVisible" },
    { VIDMM_SEGMENT_CACHE_COHERENT, "CacheCoherent" },
    { VIDMM_SEGMENT_POPULATED_FROM_SYSTEM, "PopulatedFromSystemMemory" },
    { VIDMM_SEGMENT_PRESERVED_DURING_STANDBY, "PreservedDuringStandby" },
    { VIDMM_SEGMENT_PRESERVED_DURING_HIBERNATE, "PreservedDuringHibernate" },
    { VIDMM_SEGMENT_DIRECT_FLIP, "DirectFlip" },
    { VIDMM_SEGMENT_USE_64KB_PAGES, "Use64KBPages" },
    { VIDMM_SEGMENT_SUPPORTS_CPU_HOST_APERTURE, "SupportsCpuHostAperture" },
    { VIDMM_SEGMENT_SUPPORTS_CACHED_CPU_HOST_APERTURE, "SupportsCachedCpuHostAperture" },
    { VIDMM_SEGMENT_LOCAL_BUDGET_GROUP, "LocalBudgetGroup" },
    { VIDMM_SEGMENT_NON_LOCAL_BUDGET_GROUP, "NonLocalBudgetGroup" },
};

const char *vidmm_segment_flag_name(uint32_t flag)
{
    for (size_t i = 0; i < sizeof segment_flag_names / sizeof segment_flag_names[0]; i++)
        if (segment_flag_names[i].bit == flag)
            return segment_flag_names[i].name;
    return NULL;
}
