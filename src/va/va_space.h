/*
 * va_space.h - per-process GPU virtual address bookkeeping (internal, never
 * installed).
 *
 * One struct vidmm_va_space describes the GPU VA space of one process in
 * the GpuMmu model: which spans are reserved (D3DKMTReserveGpuVirtualAddress),
 * which are mapped to which allocation (D3DKMTMapGpuVirtualAddress and the
 * MAP/UNMAP/COPY operations of D3DKMTUpdateGpuVirtualAddress), and which are
 * free.  It writes no page tables and calls no driver: every change is
 * reported as a stream of drm_gpuvm-style steps (MAP, REMAP, UNMAP) through
 * the step callback, so the page-table code knows which PTE spans to write.
 *
 * The space is a sorted set of non-overlapping ranges in a B+-tree keyed
 * by start address: leaves hold up to 16 ranges (starts and ends in
 * contiguous arrays), inner nodes up to 16 children with, per child, the
 * least start, the largest hole and the largest 64 KiB-aligned piece of a
 * hole under it, so "anywhere in [min, max]" placement is O(log n) and
 * exact (Linux's vm_area rb_subtree_gap is the model).  Tree nodes are
 * 32-bit indices into arrays grown through the host allocator; each
 * range's public record (struct vidmm_va_range) sits in a chunk that
 * never moves.  The allocations mapped are found through a small hash of
 * per-object mapping lists so destroying an allocation costs O(its
 * mappings), not O(all ranges).
 *
 * Every change is a prepare half, which validates, places, and obtains
 * anything it may need (records, nodes, hash slots, scratch) and changes
 * nothing when it fails, and a commit half, which cannot fail; both are
 * public (vidmm_va_*_prepare, vidmm_va_commit) so that the caller can make
 * its page tables in between.  See docs/VA_SPACE.md for the rules of every
 * overlap case, with diagrams.  The implementation is split by concept
 * over the .c files of src/va; va_int.h, private to the folder, lists
 * them.
 */
#ifndef VIDMM_VA_SPACE_H
#define VIDMM_VA_SPACE_H

#include "core/error.h"
#include "vidmm/host_alloc.h"
#include "vidmm/status.h"

#include <stddef.h>
#include <stdint.h>

#define VIDMM_VA_PAGE    UINT64_C(0x1000)   /* mapping granularity (CPU page, WDDM "4 KB aligned") */
#define VIDMM_VA_GRANULE UINT64_C(0x10000)  /* reservation granularity; also the guard at VA 0 */

/* What a span of VA is.  FREE is never stored; it names holes in steps. */
enum vidmm_va_state {
    VIDMM_VA_FREE = 0,
    VIDMM_VA_RESERVED = 1,  /* from reserve (or unmapped inside a reservation): no memory behind it */
    VIDMM_VA_MAPPED = 2     /* points at an allocation */
};

/* D3DDDIGPUVIRTUALADDRESS_RESERVATION_TYPE: what the GPU sees in a reserved span. */
enum vidmm_va_mode {
    VIDMM_VA_NO_ACCESS = 0, /* D3DDDIGPUVA_RESERVE_NO_ACCESS: invalid PTEs, access faults */
    VIDMM_VA_ZERO = 1       /* D3DDDIGPUVA_RESERVE_ZERO: reads return 0, writes are dropped */
};

/* Mapping protection (D3DDDIGPUVIRTUALADDRESS_PROTECTION_TYPE, inverted so
 * that 0 is the common read/write/execute mapping). */
#define VIDMM_VA_PROT_READ_ONLY  0x1u  /* !Write */
#define VIDMM_VA_PROT_NO_EXECUTE 0x2u  /* !Execute */
#define VIDMM_VA_PROT_MASK       0x3u

/* One range (or, in a step, one span) as the caller sees it. */
struct vidmm_va_desc {
    uint64_t va, size;
    uint64_t object;            /* MAPPED: the allocation handle (never 0); else 0 */
    uint64_t object_offset;     /* MAPPED: byte offset in the object that va maps */
    uint64_t driver_protection; /* MAPPED: opaque to vidmm, handed to the driver with the PTEs */
    uint8_t state;              /* enum vidmm_va_state */
    uint8_t mode;               /* RESERVED: its mode.  MAPPED in a reservation: the mode unmap restores */
    uint8_t prot;               /* MAPPED: VIDMM_VA_PROT_* */
    uint8_t in_reservation;     /* MAPPED: 1 if it replaced reserved VA (unmap gives it back as RESERVED) */
};

/* One range as the caller sees it: a 64-byte record holding the public
 * descriptor d.  Fields other than d are private to src/va/.  The
 * record stays at one address for as long as the range lives (the tree
 * holds copies of its start and end, see va_tree.c). */
struct vidmm_va_range {
    struct vidmm_va_desc d;
    uint32_t obj_prev, obj_next; /* MAPPED: the object's mapping list (node indices, 0 = none) */
    uint32_t node;               /* this record's own index */
    uint32_t leaf;               /* the tree leaf holding this range */
};

/* Change steps, the drm_gpuvm way (drm_gpuva_op_map / _remap / _unmap).
 * One call emits its UNMAP/REMAP steps for the ranges it cuts, in address
 * order, then the MAP of the range it creates, if any.  Applied in order
 * to the old range list they give the new one, except that adjacent
 * RESERVED ranges of one mode are then merged silently (merging changes
 * no PTE).  The callback may read the space (lookup, iteration): at a MAP
 * step the new range is in it (a reservation possibly merged with equal
 * neighbours already); at an UNMAP or REMAP step the cut may or
 * may not be applied yet, so what it reads over the released span is
 * either the old or the new state. */
enum vidmm_va_step_op {
    VIDMM_VA_STEP_MAP = 0,   /* new: a range appears (RESERVED or MAPPED) */
    VIDMM_VA_STEP_REMAP = 1, /* old is split: [old.va, old.va+prev_size) and the last next_size
                              * bytes stay (the kept tail's object_offset advances with it); the
                              * middle is released */
    VIDMM_VA_STEP_UNMAP = 2  /* old disappears entirely */
};

struct vidmm_va_step {
    enum vidmm_va_step_op op;
    struct vidmm_va_desc old;  /* REMAP, UNMAP: the range before the step */
    struct vidmm_va_desc new;  /* MAP: the range created */
    uint64_t prev_size;        /* REMAP: bytes kept at the start of old (0 = none) */
    uint64_t next_size;        /* REMAP: bytes kept at the end of old (0 = none) */
};

typedef void (*vidmm_va_step_fn)(void *ctx, const struct vidmm_va_step *step);
/* An object gained its first mapping in the space (delta +1) or lost its
 * last one (-1, also for every object still mapped when the space is
 * finalised).  Called during commit; must not change the space. */
typedef void (*vidmm_va_object_fn)(void *ctx, uint64_t object, int delta);

/* Operations of vidmm_va_update (D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION_TYPE). */
enum vidmm_va_update_type {
    VIDMM_VA_UPDATE_MAP = 0,
    VIDMM_VA_UPDATE_UNMAP = 1,
    VIDMM_VA_UPDATE_COPY = 2
};

struct vidmm_va_update_op {
    uint32_t type;              /* enum vidmm_va_update_type */
    uint64_t va, size;          /* the target (COPY: the destination) */
    uint64_t object;            /* MAP */
    uint64_t object_offset;     /* MAP, bytes */
    uint32_t prot;              /* MAP: VIDMM_VA_PROT_* */
    uint64_t driver_protection; /* MAP */
    uint32_t mode;              /* UNMAP: the end state, enum vidmm_va_mode */
    uint64_t src;               /* COPY: the source */
};

/* VA [lo, hi). */
struct vidmm_va_span {
    uint64_t lo, hi;
};

struct vidmm_va_leaf;     /* private to src/va (va_int.h): up to 16 ranges' starts, ends and record indices */
struct vidmm_va_inner;    /* private to src/va (va_int.h): up to 16 children with their keys and hole maxima */
struct vidmm_va_chunk;    /* private to src/va (va_int.h): one chunk of range records */
struct vidmm_va_objrec;   /* private to src/va (va_int.h): one object index slot */

struct vidmm_va_space {
    const struct vidmm_host_allocator *ha;
    uint64_t base, limit;         /* managed VA [base, limit); base >= VIDMM_VA_GRANULE */
    uint64_t range_count;         /* live ranges (RESERVED + MAPPED) */
    uint64_t mapped_count;        /* live MAPPED ranges */
    vidmm_va_step_fn step_fn;     /* NULL: no steps */
    void *step_ctx;
    vidmm_va_object_fn obj_fn;    /* NULL: not told */
    void *obj_ctx;
    /* Implementation state; see va_int.h.  A B+-tree: leaves[] and
     * inners[] are arrays indexed by 32-bit numbers (0 = none); the public
     * records live in fixed chunks reached through cold[], numbered the
     * same way ("nodes"). */
    struct vidmm_va_leaf *leaves;
    struct vidmm_va_inner *inners;
    struct vidmm_va_chunk *cold;  /* chunk directory */
    uint64_t node_cap;            /* records in the chunks */
    uint64_t cold_chunks, cold_dir_cap;
    uint32_t leaf_cap, inner_cap; /* entries of leaves[] / inners[] */
    uint32_t free_leaves, free_inners;
    uint32_t free_leaf_count, free_inner_count;
    uint32_t leaf_used, inner_used;
    uint32_t root, height;        /* height: inner levels above the leaves (0: the root is a leaf) */
    uint32_t end;                 /* sentinel record [limit, limit): the last entry, carries the last hole */
    uint32_t free_nodes;
    uint64_t free_node_count;
    uint64_t inres_count;         /* live MAPPED ranges with in_reservation */
    uint32_t eager;               /* summary refreshes still done at once after the last hole search (va_int.h: va_dirty) */
    struct vidmm_va_objrec *objs; /* open-addressed hash: object -> mapping list */
    uint64_t obj_cap, obj_count;
    struct vidmm_va_desc *scratch; /* COPY source snapshots */
    uint64_t scratch_cap;
    /* UPDATE prepare (va_update.c): the spans that will hold valid
     * entries, each op's first span, the unresolved COPY source pieces
     * (two lists) and the hull of each prefix of the batch's targets;
     * kept for later calls. */
    struct vidmm_va_span *upd_spans, *upd_work[2], *upd_hull;
    uint64_t *upd_first;
    uint64_t upd_span_n, upd_span_cap, upd_work_cap[2], upd_first_cap, upd_hull_cap;
    /* Internal invariants found broken where the space changes
     * (core/error.h); vidmm_va_space_check counts them. */
    struct vidmm_bug_log bugs;
};

/* Manage [64 KiB, 2^va_bits); va_bits in [20, 63].  VA [0, 64 KiB) is the
 * guard: WDDM says VA page 0 is never valid, and since reservations are
 * 64 KiB granular the whole first granule is kept out.  VIDMM_E_INVALID_ARG
 * for a bad va_bits or NULL, VIDMM_E_NO_HOST_MEMORY if the first slab
 * cannot be had. */
vidmm_status vidmm_va_space_init(struct vidmm_va_space *vs, const struct vidmm_host_allocator *ha,
                                 unsigned va_bits);
/* Release everything (ranges need not be freed first; no steps). */
void vidmm_va_space_fini(struct vidmm_va_space *vs);
/* Steps of every later change go to fn(ctx, step), during the change. */
void vidmm_va_space_set_step_fn(struct vidmm_va_space *vs, vidmm_va_step_fn fn, void *ctx);
/* Later changes tell fn(ctx, object, +1/-1) when an object enters or
 * leaves the object index (O(1) per change). */
void vidmm_va_space_set_object_fn(struct vidmm_va_space *vs, vidmm_va_object_fn fn, void *ctx);

/* Reserve size bytes (a multiple of 64 KiB) at `at` (64 KiB aligned), or,
 * with at == 0, at the lowest 64 KiB-aligned free address in
 * [min, max] (0 = from base / to limit) such that va + size <= max.
 * Statuses: INVALID_ARG (NULL, size 0, bad mode, out of the space,
 * min >= max), ALIGNMENT (at/min/max/size), OVERFLOW (at + size wraps),
 * BUSY (at given and any byte of it is reserved or mapped),
 * NO_SEGMENT_SPACE (no hole fits), NO_HOST_MEMORY. */
vidmm_status vidmm_va_reserve(struct vidmm_va_space *vs, uint64_t at, uint64_t min, uint64_t max,
                              uint64_t size, unsigned mode, uint64_t *va);

/* Map [object_offset, object_offset + size) of object at `at` (4 KiB
 * aligned), or with at == 0 in the lowest free hole in [min, max].  At a
 * fixed address the target must be uniform: all free (a plain mapping),
 * all reservation-backed (RESERVED or mapped inside a reservation: the
 * mapping replaces what is there and goes back to RESERVED on unmap), or
 * all mappings made outside reservations (replaced).  A mix is BUSY.
 * Statuses as reserve, plus ALIGNMENT for object_offset, INVALID_ARG for
 * object 0 or unknown prot bits, OVERFLOW for object_offset + size. */
vidmm_status vidmm_va_map(struct vidmm_va_space *vs, uint64_t at, uint64_t min, uint64_t max,
                          uint64_t size, uint64_t object, uint64_t object_offset, unsigned prot,
                          uint64_t driver_protection, uint64_t *va);

/* Unmap every mapped byte of [va, va + size) (4 KiB aligned), splitting
 * the mappings cut by the edges.  Mapped parts made inside a reservation
 * become RESERVED again (in the mode they remember), the others free.
 * Holes and RESERVED spans inside are left alone (as drm_gpuvm's
 * sm_unmap).  INVALID_ARG, ALIGNMENT, OVERFLOW, NO_HOST_MEMORY. */
vidmm_status vidmm_va_unmap(struct vidmm_va_space *vs, uint64_t va, uint64_t size);

/* Free [va, va + size) (4 KiB aligned, D3DKMTFreeGpuVirtualAddress): every
 * byte must be reserved or mapped (INVALID_ARG otherwise); all of it,
 * mappings included, becomes free.  If it touches a reservation-backed
 * range, va and size must be 64 KiB aligned (ALIGNMENT), so reservations
 * stay 64 KiB granular. */
vidmm_status vidmm_va_free(struct vidmm_va_space *vs, uint64_t va, uint64_t size);

/* Apply ops[0..n) in order (D3DKMTUpdateGpuVirtualAddress).  Every target
 * (MAP, UNMAP, COPY destination) must lie in one reservation-backed run of
 * ranges, every COPY source in one (possibly another).  MAP maps like
 * vidmm_va_map into the reservation; UNMAP makes the target RESERVED in
 * op.mode; COPY makes the destination, range by range, what the source is
 * at that point (same object, offset, protection and unmap mode; or
 * RESERVED in the same mode).  The whole batch is validated first: one bad op and nothing
 * changes.  Statuses as map/unmap; INVALID_ARG for a target or source not
 * in one reservation, or ops NULL with n > 0. */
vidmm_status vidmm_va_update(struct vidmm_va_space *vs, const struct vidmm_va_update_op *ops,
                             size_t n);

/* Unmap every mapping of object (the allocation is being destroyed), as
 * vidmm_va_unmap would.  O(m log n) for m mappings of the object.
 * INVALID_ARG for object 0; OK when it has no mapping. */
vidmm_status vidmm_va_unmap_object(struct vidmm_va_space *vs, uint64_t object);

/* Prepare and commit (docs/VA_SPACE.md, "Prepare and commit").  Each
 * change above is the pair *_prepare + vidmm_va_commit.  Prepare
 * validates (same statuses as the one-call entry), resolves the address
 * (op->va, op->size: the span the change creates or cuts; UPDATE: the
 * hull of its targets, and op->spans: the targets that need tables) and obtains from the host allocator every record,
 * tree node, hash slot and scratch entry the change can need; it changes
 * no range and emits no step.  Commit applies the change, emitting its
 * steps; it cannot fail.  Between the two the caller may read the space
 * (to prepare page tables for op->va..op->size) but must not change it;
 * an UPDATE's ops must stay alive until commit.  A prepared op that is
 * not committed needs no release (the reserve is kept for later calls). */
enum vidmm_va_prep_kind {
    VIDMM_VA_PREP_NONE = 0,   /* nothing to do (update of 0 ops, unmap_object of an unmapped object) */
    VIDMM_VA_PREP_RESERVE,
    VIDMM_VA_PREP_MAP,
    VIDMM_VA_PREP_UNMAP,
    VIDMM_VA_PREP_FREE,
    VIDMM_VA_PREP_UPDATE,
    VIDMM_VA_PREP_UNMAP_OBJECT
};

struct vidmm_va_prep {
    uint32_t kind;                        /* enum vidmm_va_prep_kind */
    uint32_t first;                       /* MAP/FREE at a fixed place: the first range it cuts (0 = none) */
    uint32_t first_leaf, first_slot;      /* ... and its place in the tree (va/va_int.h: struct va_pos) */
    uint64_t va, size;                    /* the resolved target (UPDATE: the targets' hull) */
    struct vidmm_va_desc d;               /* RESERVE/MAP/FREE: what commit puts at [va, va + size);
                                           * UNMAP_OBJECT: d.object names the object */
    const struct vidmm_va_update_op *ops; /* UPDATE: the batch (the caller's) */
    size_t n;
    /* UPDATE: the target spans that will hold valid entries (mapped, or
     * zero) after the batch's op that writes them - the only ones that
     * need page tables; held by the space until its next UPDATE prepare.
     * Sum of sizes bounded by the bytes the batch maps, zeroes or copies
     * from valid source, never by the hull. */
    const struct vidmm_va_span *spans;
    size_t nspans;
};

vidmm_status vidmm_va_reserve_prepare(struct vidmm_va_space *vs, uint64_t at, uint64_t min, uint64_t max,
                                      uint64_t size, unsigned mode, struct vidmm_va_prep *op);
vidmm_status vidmm_va_map_prepare(struct vidmm_va_space *vs, uint64_t at, uint64_t min, uint64_t max,
                                  uint64_t size, uint64_t object, uint64_t object_offset, unsigned prot,
                                  uint64_t driver_protection, struct vidmm_va_prep *op);
vidmm_status vidmm_va_unmap_prepare(struct vidmm_va_space *vs, uint64_t va, uint64_t size, struct vidmm_va_prep *op);
vidmm_status vidmm_va_free_prepare(struct vidmm_va_space *vs, uint64_t va, uint64_t size, struct vidmm_va_prep *op);
vidmm_status vidmm_va_update_prepare(struct vidmm_va_space *vs, const struct vidmm_va_update_op *ops, size_t n,
                                     struct vidmm_va_prep *op);
vidmm_status vidmm_va_unmap_object_prepare(struct vidmm_va_space *vs, uint64_t object, struct vidmm_va_prep *op);
/* Apply a prepared change: emits its steps; cannot fail.  op must come
 * from a *_prepare on vs that returned VIDMM_OK, with no change to vs
 * since. */
void vidmm_va_commit(struct vidmm_va_space *vs, const struct vidmm_va_prep *op);

/* The range holding va, or NULL in a hole. */
const struct vidmm_va_range *vidmm_va_lookup(const struct vidmm_va_space *vs, uint64_t va);
/* The first range ending after va (the one holding va, or the next). */
const struct vidmm_va_range *vidmm_va_first_from(const struct vidmm_va_space *vs, uint64_t va);
/* Address-order iteration: first, then next until NULL. */
const struct vidmm_va_range *vidmm_va_first(const struct vidmm_va_space *vs);
const struct vidmm_va_range *vidmm_va_next(const struct vidmm_va_space *vs,
                                           const struct vidmm_va_range *r);
/* Number of live mappings of object: a walk of its list, O(its mappings)
 * (one hash probe to find it). */
uint64_t vidmm_va_object_mapping_count(const struct vidmm_va_space *vs, uint64_t object);
/* Per-object iteration: every MAPPED range of object, first then next
 * until NULL, each step O(1) (first: one hash probe).  The order is
 * unspecified (not address order).  The ranges must not change during the
 * iteration: no reserve, map, unmap, free, update or unmap_object on vs
 * until it ends (to change them, collect first, or restart from first).
 * NULL for object 0 or an object with no mapping; next(vs, r) requires r
 * to be a MAPPED range of vs. */
const struct vidmm_va_range *vidmm_va_object_first(const struct vidmm_va_space *vs, uint64_t object);
const struct vidmm_va_range *vidmm_va_object_next(const struct vidmm_va_space *vs,
                                                  const struct vidmm_va_range *r);

/* Verify every invariant: ranges sorted, non-overlapping, non-empty, 4 KiB
 * aligned and inside [base, limit); reservation-backed runs start and end
 * 64 KiB aligned; no two adjacent RESERVED ranges of one mode; B+-tree
 * shape (uniform depth, fill, keys, leaf chain, back-pointers) and the
 * cached hole maxima; counts; per-object lists and the object hash agree
 * with the MAPPED ranges.  Returns the number of
 * violations (0 = sound); prints nothing.  O(n). */
int vidmm_va_space_check(const struct vidmm_va_space *vs);

/* Verify that a prepared change can be committed without failing: a
 * known kind; a span inside the space, aligned as its kind requires; the
 * position hint (first, first_leaf, first_slot) naming that range's real
 * place in the tree; enough free records, and for a MAP a free object
 * slot at the hash's load bound, for the commit's worst case; an UPDATE
 * with its ops.  Returns the number of violations (0 = sound); prints
 * nothing.  O(1) except UPDATE (O(its ops)). */
int vidmm_va_prep_check(const struct vidmm_va_space *vs, const struct vidmm_va_prep *op);

#endif
