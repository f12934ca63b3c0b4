/*
 * policy_int.h - helpers shared by the built-in eviction policies
 * (internal, never installed).
 *
 * The priority classes and the layout of the low bits of entry->flags are
 * common to every built-in policy, so a test or a debugger reads an entry
 * the same way whichever policy filed it:
 *
 *   bit  0      RESIDENT: in the policy's resident structures
 *   bit  1      GHOST: evicted, its history kept in the private fields
 *               (adaptive and reuse; linked nowhere)
 *   bits 2..4   priority class the entry was filed under (0..4)
 *   bits 5..15  policy-specific: AVL height in 5..11 (belady, adaptive, reuse),
 *               adaptive's and reuse's PERIODIC in 12
 *   bits 16..31 segment id the entry was filed under
 *
 * Segment ids therefore fit in 16 bits; create() refuses larger counts
 * (WDDM adapters have a few dozen segments at most).
 */
#ifndef VIDMM_POLICY_INT_H
#define VIDMM_POLICY_INT_H

#include "vidmm/policy.h"

#include <stdint.h>

#define VIDMM_POLICY_CLASSES 5u
#define VIDMM_POLICY_MAX_SEGMENTS (1u << 16)

#define VIDMM_POLICY_F_RESIDENT 0x1u
#define VIDMM_POLICY_F_GHOST 0x2u
#define VIDMM_POLICY_F_CLASS_SHIFT 2
#define VIDMM_POLICY_F_CLASS_MASK (0x7u << VIDMM_POLICY_F_CLASS_SHIFT)
#define VIDMM_POLICY_F_SEG_SHIFT 16

/* Class of a priority: 0 below LOW ... 4 at MAXIMUM and above. */
static inline unsigned vidmm_policy_class(uint32_t priority)
{
    return (priority >= VIDMM_PRIORITY_LOW) + (priority >= VIDMM_PRIORITY_NORMAL) +
           (priority >= VIDMM_PRIORITY_HIGH) + (priority >= VIDMM_PRIORITY_MAXIMUM);
}

static inline uint32_t vidmm_policy_flags_make_class(unsigned c)
{
    return (uint32_t)c << VIDMM_POLICY_F_CLASS_SHIFT;
}

static inline unsigned vidmm_policy_flags_class(uint32_t flags)
{
    return (flags & VIDMM_POLICY_F_CLASS_MASK) >> VIDMM_POLICY_F_CLASS_SHIFT;
}

static inline uint32_t vidmm_policy_flags_make_seg(uint32_t seg)
{
    return seg << VIDMM_POLICY_F_SEG_SHIFT;
}

static inline uint32_t vidmm_policy_flags_seg(uint32_t flags)
{
    return flags >> VIDMM_POLICY_F_SEG_SHIFT;
}

/* create()'s common part (registry.c): validate the arguments and
 * allocate a zeroed state of head bytes plus per_segment bytes for each
 * segment; *size receives the block's size for the matching free. */
vidmm_status vidmm_policy_state_alloc(const struct vidmm_host_allocator *ha, uint32_t segment_count, size_t head,
                                      size_t per_segment, size_t align, void **out, size_t *size);

#endif
