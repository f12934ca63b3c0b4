/*
 * mmu.h - GpuMmu geometry, page tables and root binding (internal, never installed).
 */
#ifndef VIDMM_MMU_MMU_H
#define VIDMM_MMU_MMU_H

#include "model/objects.h"

/* One page table of a process (an implicit allocation with no handle). */
struct vidmm_page_table {
    uint32_t level;                 /* 0 = leaf */
    uint32_t segment_id;            /* where it lives (0 = system memory) */
    uint64_t offset;                /* segment offset, or for segment 0 the host address */
    uint64_t size;
    uint32_t ra_node;               /* in the segment's range allocator (segment != 0) */
    uint32_t entries;               /* 2^index bits of its level (16x fewer in a 64 KB leaf) */
    int is64k;                      /* leaf holding 64 KB entries */
    uint64_t epoch;                 /* the prepare that created it (see vidmm_pt_rollback) */
    void *host;                     /* segment 0: the host block */
    struct vidmm_page_table **child; /* non-leaf: one slot per entry, NULL = invalid entry */
    uint32_t live_children;
    /* Why the table may stay (rule pte.tables_follow_mappings): a leaf
     * that held a valid entry (a mapping, even of an evicted allocation,
     * or the zero page) since it was made; or one a refused rollback left
     * linked (vidmm_pt_rollback). */
    uint8_t held_valid, stranded;
};

vidmm_status vidmm_pt_create_root(struct vidmm_adapter *a, struct vidmm_process *p);

void vidmm_pt_destroy(struct vidmm_adapter *a, struct vidmm_page_table *pt);

/* Make sure every table covering [va, va+size) exists (may allocate).
 * New leaves hold 64 KB entries when want64k; existing 64 KB leaves are
 * switched to 4 KB entries (one way) when !want64k. */
vidmm_status vidmm_pt_ensure(struct vidmm_adapter *a, struct vidmm_process *p, uint64_t va, uint64_t size,
                             int want64k);

/* Undo the tables created since the last vidmm_pt_begin: the change they
 * were prepared for was refused, so nothing must remain of it. */
void vidmm_pt_begin(struct vidmm_process *p);

vidmm_status vidmm_pt_rollback(struct vidmm_adapter *a, struct vidmm_process *p);

/* Switch the existing 64 KB leaves of [va, va+size) to 4 KB entries. */
vidmm_status vidmm_pt_demote(struct vidmm_adapter *a, struct vidmm_process *p, uint64_t va, uint64_t size);

/* Can [va, va+size) map bytes [off, off+size) of al, placed as pl, with
 * 64 KB entries? */
int vidmm_pt_can_use_64k(const struct vidmm_adapter *a, const struct vidmm_allocation *al,
                         const struct vidmm_placement *pl, uint64_t va, uint64_t off, uint64_t size);

/* Write the leaf entries of [va, va+size) for what d says is there
 * (mapped pages, zero, or invalid); tables must exist for valid entries.
 * Never allocates. */
vidmm_status vidmm_pt_write(struct vidmm_adapter *a, struct vidmm_process *p, uint64_t va, uint64_t size,
                            const struct vidmm_va_desc *d);

vidmm_status vidmm_pt_flush(struct vidmm_adapter *a, struct vidmm_process *p);

/* Write every table of p again (all entries invalid, children linked)
 * after its memory lost its content; leaf entries then come from
 * vidmm_process_remap_allocation. */
vidmm_status vidmm_pt_rebuild(struct vidmm_adapter *a, struct vidmm_process *p);

/* Write valid leaf entries mapping [va, va+size) onto bytes
 * [off, off+size) of placement pl (4 KB-aligned; the leaves must exist).
 * Through a 64 KB leaf the range and every page it maps must be 64 KB
 * aligned and contiguous (VIDMM_E_STATE otherwise).  Never allocates. */
vidmm_status vidmm_pt_map_placement(struct vidmm_adapter *a, struct vidmm_process *p, uint64_t va,
                                    const struct vidmm_placement *pl, uint64_t off, uint64_t size,
                                    void *driver_allocation);

/* The leaf covering va: 0 = none, 4 = 4 KB entries, 64 = 64 KB entries. */
int vidmm_pt_leaf_kind(const struct vidmm_adapter *a, const struct vidmm_process *p, uint64_t va);

/* Does every leaf span of [va, va+size) have a leaf of 4 KB entries
 * (is64k 0) or of 64 KB entries (is64k 1)? */
int vidmm_pt_covered(const struct vidmm_adapter *a, const struct vidmm_process *p, uint64_t va, uint64_t size,
                     int is64k);

/* Can this adapter's leaves hold 64 KB entries (the driver gave a 64 KB
 * leaf size and a leaf indexes more than 16 entries)? */
int vidmm_pt_leaf64_supported(const struct vidmm_adapter *a);

/* Walk p's tables: levels, segments (the paging process's own), entry
 * counts, allocator ranges, child counters.  Returns the violations. */
int vidmm_pt_check_tree(const struct vidmm_adapter *a, const struct vidmm_process *p, char *msg, size_t n);

/* Tables of p that nothing needs - a leaf that never held a valid entry
 * (a mapping or the zero page), a lower table without children - other
 * than those a refused rollback stranded; *first_va: the first one's VA.
 * Page-table memory then follows what was mapped (the rules checker). */
uint64_t vidmm_pt_unneeded(const struct vidmm_adapter *a, const struct vidmm_process *p, uint64_t *first_va);

/* Sum the page-table bytes of a tree per segment (for the checker). */
void vidmm_pt_account(const struct vidmm_page_table *pt, uint64_t *bytes_per_segment, uint64_t *tables);

/* Bind (or unbind) p's root page table for a context token. */
void vidmm_process_bind_root(struct vidmm_adapter *a, struct vidmm_process *p, uint64_t token, int bind);

/* query and validate the GpuMmu geometry (after the
 * segment table exists).  VIDMM_E_BAD_DRIVER_DESC with msg on a fault. */
vidmm_status vidmm_gpummu_init(struct vidmm_adapter *a, char *msg, size_t n);

/* A process's MMU state (its `mmu` member, mmu/mmu_fields.h).
 * init: an empty flush span and a PTE buffer of `entries` entries (host
 * allocation at `site`); paging_process: the system paging process,
 * whose tables go in the paging-process segments.  VIDMM_E_NO_HOST_MEMORY
 * with nothing allocated.  fini frees the buffer (the tables go with
 * vidmm_pt_destroy of the root). */
vidmm_status vidmm_pt_process_init(struct vidmm_adapter *a, struct vidmm_process *p, uint32_t entries,
                                   enum vidmm_alloc_site site, int paging_process);
void vidmm_pt_process_fini(struct vidmm_adapter *a, struct vidmm_process *p);

/* p's root table: NULL in IoMmu and no-VA processes, and before
 * vidmm_pt_create_root. */
static inline struct vidmm_page_table *vidmm_pt_root(const struct vidmm_process *p)
{
    return p->mmu.root;
}

/* Times p's resizable root grew (process info). */
static inline uint64_t vidmm_pt_root_grows(const struct vidmm_process *p)
{
    return p->mmu.root_grows;
}

/* Is p the system paging process (marked by vidmm_pt_process_init)? */
static inline int vidmm_pt_is_paging_process(const struct vidmm_process *p)
{
    return p->mmu.paging_process;
}

#endif
