/*
 * vidmm/driver.h - the driver interface: what a GPU kernel-mode driver
 * implements so vidmm can manage its memory.
 *
 * It mirrors the WDDM display-miniport DDI (DxgkDdi*): a table of
 * function pointers, each taking one argument structure, so fields can be
 * added without breaking the ABI.  docs/DRIVER_INTERFACE.md maps every op
 * to its DxgkDdi* counterpart.  The flag values and enumerators keep the
 * bit positions and numbers of the WDK headers (DXGK_SEGMENTFLAGS,
 * DXGK_ALLOCATIONINFOFLAGS_WDDM2_0, D3DDDI_SEGMENTPREFERENCE,
 * DXGK_BUILDPAGINGBUFFER_OPERATION, ...), so a WDDM engineer can read them
 * off a debugger dump.
 *
 * Required ops: query_adapter_info, build_paging_buffer, submit_command.
 * Optional ops (NULL = vidmm's default, see each member): describe_allocation,
 * destroy_allocation, map_cpu_host_aperture, unmap_cpu_host_aperture,
 * set_root_page_table, get_root_page_table_size, submit_command_virtual,
 * submit_command_physical and patch (command submission).
 *
 * Threading: vidmm calls the ops of one adapter from one thread at a time.
 * The driver reports completed paging buffers with vidmm_cb_notify_fence(),
 * from any thread.
 *
 * User-space model: a "CPU physical address" (a BAR, a CPU host aperture)
 * is a host pointer here; a memory descriptor list (MDL) of system pages
 * is a host pointer to page-aligned memory plus a page count.
 */
#ifndef VIDMM_DRIVER_H
#define VIDMM_DRIVER_H

#include "vidmm/export.h"
#include "vidmm/version.h"

#include "vidmm/status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vidmm_adapter;

/* ------------------------------------------------------------------ */
/* Segment ids and sets                                                */
/* ------------------------------------------------------------------ */

/* Segment 0 is the implicit system-memory segment; driver segments are
 * numbered from 1 in the order of the descriptor array.  In a segment set
 * bit n means segment n+1.  Ids are 5 bits wide in the DDI, so a driver
 * reports at most 31 segments. */
#define VIDMM_SEGMENT_ID_SYSTEM 0u
#define VIDMM_MAX_SEGMENTS 31u
#define VIDMM_SEGMENT_BIT(id) (1u << ((id) - 1u))

/* ------------------------------------------------------------------ */
/* Adapter queries (DxgkDdiQueryAdapterInfo)                           */
/* ------------------------------------------------------------------ */

enum vidmm_query_type {
    VIDMM_QAI_DRIVERCAPS = 1,      /* DXGKQAITYPE_DRIVERCAPS: output struct vidmm_driver_caps */
    VIDMM_QAI_QUERYSEGMENT = 11,   /* DXGKQAITYPE_QUERYSEGMENT4: input vidmm_query_segment_in, output vidmm_query_segment_out */
    VIDMM_QAI_GPUMMUCAPS = 13,     /* DXGKQAITYPE_GPUMMUCAPS: output struct vidmm_gpummu_caps */
    VIDMM_QAI_PAGETABLELEVELDESC = 14 /* DXGKQAITYPE_PAGETABLELEVELDESC: input vidmm_query_page_table_level_in,
                                         output vidmm_page_table_level_desc */
};

/* DXGK_VIDMMCAPS bits (DXGK_DRIVERCAPS.MemoryManagementCaps). */
#define VIDMM_CAPS_VIRTUAL_ADDRESSING 0x20u   /* VirtualAddressingSupported */
#define VIDMM_CAPS_GPUMMU             0x40u   /* GpuMmuSupported */
#define VIDMM_CAPS_IOMMU              0x80u   /* IoMmuSupported */

/* DXGK_PHYSICALADAPTERFLAGS bits. */
#define VIDMM_ADAPTER_MOVE_PAGING_SUPPORTED 0x4u /* can move content inside one memory segment */

#define VIDMM_MAX_NODES 64u
#define VIDMM_PAGING_ENGINE 0xFFFFFFFFu   /* query_engine_status: the paging engine */

struct vidmm_driver_caps {
    uint32_t wddm_version;              /* DXGK_WDDMVERSION, e.g. 0x2000 for WDDM 2.0 */
    uint32_t memory_management_caps;    /* VIDMM_CAPS_* */
    uint32_t physical_adapter_flags;    /* VIDMM_ADAPTER_* */
    uint32_t node_count;                /* engines (DXGK_DRIVERCAPS node count); 0 means 1, at most VIDMM_MAX_NODES */
    /* Global cap on system memory mapped through aperture segments
     * (ApertureSegmentCommitLimit); 0 = no cap beyond the segments' own. */
    uint64_t aperture_segment_commit_limit;
};

/* DXGK_SEGMENTFLAGS bits. */
#define VIDMM_SEGMENT_APERTURE                   0x1u
#define VIDMM_SEGMENT_AGP                        0x2u
#define VIDMM_SEGMENT_CPU_VISIBLE                0x4u
#define VIDMM_SEGMENT_USE_BANKING                0x8u   /* not supported by vidmm: rejected */
#define VIDMM_SEGMENT_CACHE_COHERENT             0x10u
#define VIDMM_SEGMENT_PITCH_ALIGNMENT            0x20u  /* not supported by vidmm: rejected */
#define VIDMM_SEGMENT_POPULATED_FROM_SYSTEM      0x40u
#define VIDMM_SEGMENT_PRESERVED_DURING_STANDBY   0x80u
#define VIDMM_SEGMENT_PRESERVED_DURING_HIBERNATE 0x100u
#define VIDMM_SEGMENT_PARTIALLY_PRESERVED_DURING_HIBERNATE 0x200u
#define VIDMM_SEGMENT_DIRECT_FLIP                0x400u
#define VIDMM_SEGMENT_USE_64KB_PAGES             0x800u
#define VIDMM_SEGMENT_RESERVED_SYSMEM            0x1000u /* system use; a driver must not set it */
#define VIDMM_SEGMENT_SUPPORTS_CPU_HOST_APERTURE 0x2000u
#define VIDMM_SEGMENT_SUPPORTS_CACHED_CPU_HOST_APERTURE 0x4000u
#define VIDMM_SEGMENT_LOCAL_BUDGET_GROUP         0x80000u
#define VIDMM_SEGMENT_NON_LOCAL_BUDGET_GROUP     0x100000u
#define VIDMM_SEGMENT_KNOWN_FLAGS                0x1FFFFFu

/* DXGK_SEGMENTDESCRIPTOR4, in host terms. */
struct vidmm_segment_descriptor {
    uint32_t flags;                 /* VIDMM_SEGMENT_* */
    /* Page size in bytes: 0 = implied by the flags (64 KiB with
     * USE_64KB_PAGES, else 4 KiB).  If given it must be 4096 or 65536 and
     * agree with USE_64KB_PAGES.  (Not in DXGK_SEGMENTDESCRIPTOR4, where
     * the flag alone says it; kept so a driver's intent is checked.) */
    uint32_t page_size;
    uint64_t base_address;          /* GPU physical base; address of offset o is base_address + o */
    uint64_t size;                  /* bytes; a multiple of the page size (4 KiB, or 64 KiB with USE_64KB_PAGES) */
    uint64_t commit_limit;          /* aperture: bytes of system memory it may hold (0 = size); memory segments: ignored (= size) */
    uint64_t system_memory_end_address;
    /* CPU_VISIBLE memory segment: host address of offset 0 (the BAR). */
    void *cpu_translated_address;
    /* SUPPORTS_CPU_HOST_APERTURE: a host window of size_in_pages segment
     * pages that map_cpu_host_aperture can point at any segment page. */
    struct {
        void *cpu_address;
        uint32_t size_in_pages;
        uint32_t reserved;
    } cpu_host_aperture;
};

/* DXGK_QUERYSEGMENTIN (AGP part) + DXGK_QUERYSEGMENTIN4. */
struct vidmm_query_segment_in {
    uint64_t agp_aperture_base;     /* 0/0 when no AGP aperture (or no GART driver) exists */
    uint64_t agp_aperture_size;
    uint32_t agp_flags;
    uint32_t physical_adapter_index;
};

/* DXGK_QUERYSEGMENTOUT4.  First call: segment_descriptor == NULL, the
 * driver fills nb_segment only.  Second call: segment_descriptor points
 * at nb_segment records, segment_descriptor_stride bytes apart, and the
 * driver fills them and the paging-buffer fields. */
struct vidmm_query_segment_out {
    uint32_t nb_segment;
    uint32_t paging_buffer_segment_id;   /* an aperture segment, or 0 = system memory */
    uint32_t paging_buffer_size;         /* bytes per paging buffer */
    uint32_t paging_buffer_private_data_size;
    struct vidmm_segment_descriptor *segment_descriptor;
    size_t segment_descriptor_stride;    /* set by vidmm: sizeof(struct vidmm_segment_descriptor) */
};

struct vidmm_query_adapter_info_args {
    enum vidmm_query_type type;
    const void *input;
    size_t input_size;
    void *output;
    size_t output_size;
};


/* ------------------------------------------------------------------ */
/* GpuMmu: page-table geometry and the neutral PTE (DXGK_GPUMMUCAPS,   */
/* DXGK_PAGE_TABLE_LEVEL_DESC, DXGK_PTE)                               */
/* ------------------------------------------------------------------ */

/* DXGK_GPUMMUCAPS flag bits. */
#define VIDMM_GPUMMU_READ_ONLY_MEMORY_SUPPORTED   0x1u
#define VIDMM_GPUMMU_NO_EXECUTE_MEMORY_SUPPORTED  0x2u
#define VIDMM_GPUMMU_ZERO_IN_PTE_SUPPORTED        0x4u
#define VIDMM_GPUMMU_EXPLICIT_PAGE_TABLE_INVALIDATION 0x8u
#define VIDMM_GPUMMU_CACHE_COHERENT_MEMORY_SUPPORTED 0x10u
#define VIDMM_GPUMMU_UPDATE_REQUIRES_IDLE         0x20u
#define VIDMM_GPUMMU_LARGE_PAGE_SUPPORTED         0x40u
#define VIDMM_GPUMMU_DUAL_PTE_SUPPORTED           0x80u
/* Not a DXGK_GPUMMUCAPS bit (kept in the unused high bits, like
 * VIDMM_ALLOC_PRIMARY): the driver encodes TRANSFER_VIRTUAL and
 * FILL_VIRTUAL.  vidmm then runs every content move in the system paging
 * process through its scratch VA window; without it content moves stay
 * physical TRANSFER / FILL (docs/DECISIONS.md D27). */
#define VIDMM_GPUMMU_VIRTUAL_PAGING_OPS           0x80000000u

/* DXGK_PAGETABLEUPDATEMODE. */
enum vidmm_page_table_update_mode {
    VIDMM_PAGE_TABLE_UPDATE_CPU_VIRTUAL = 0,
    VIDMM_PAGE_TABLE_UPDATE_GPU_VIRTUAL = 1,
    VIDMM_PAGE_TABLE_UPDATE_GPU_PHYSICAL = 2
};

#define VIDMM_MIN_PAGE_TABLE_LEVELS 2u
#define VIDMM_MAX_PAGE_TABLE_LEVELS 6u

struct vidmm_gpummu_caps {
    uint32_t flags;                        /* VIDMM_GPUMMU_* */
    uint32_t page_table_update_mode;       /* enum vidmm_page_table_update_mode */
    uint32_t virtual_address_bit_count;    /* = 12 + the index bits of every level */
    uint32_t page_table_level_count;       /* 2..6 */
    uint32_t leaf_page_table_size_for_64k_pages_in_bytes; /* multiple of 4096 */
    uint32_t reserved;
};

struct vidmm_query_page_table_level_in {
    uint16_t level_index;                  /* 0 = leaf */
    uint16_t physical_adapter_index;
};

struct vidmm_page_table_level_desc {
    uint32_t page_table_index_bit_count;   /* VA bits indexing this level */
    uint32_t page_table_segment_id;        /* where this level's tables live (0 = system memory) */
    uint32_t paging_process_page_table_segment_id;
    uint32_t reserved;
    uint64_t page_table_size_in_bytes;     /* multiple of 4096 */
    uint64_t page_table_alignment_in_bytes; /* 0 = the segment's page size */
};

/* DXGK_PTE: the neutral page-table entry vidmm hands the driver, which
 * writes its own hardware format.  16 bytes: flags, then the page (or
 * page-table) address as a 4 KiB frame number - the byte offset inside
 * the segment >> 12, or for segment 0 the host address >> 12. */
#define VIDMM_PTE_VALID          0x1ull
#define VIDMM_PTE_ZERO           0x2ull
#define VIDMM_PTE_CACHE_COHERENT 0x4ull
#define VIDMM_PTE_READ_ONLY      0x8ull
#define VIDMM_PTE_NO_EXECUTE     0x10ull
#define VIDMM_PTE_SEGMENT_SHIFT  5u          /* bits 5-9: segment id */
#define VIDMM_PTE_SEGMENT_MASK   (0x1Full << VIDMM_PTE_SEGMENT_SHIFT)
#define VIDMM_PTE_LARGE_PAGE     0x400ull
#define VIDMM_PTE_PAGE_TABLE_64KB (1ull << 17) /* level-1 entries: the leaf it points at holds 64 KB entries */
#define VIDMM_PTE_SEGMENT(pte)   ((uint32_t)(((pte)->flags & VIDMM_PTE_SEGMENT_MASK) >> VIDMM_PTE_SEGMENT_SHIFT))

struct vidmm_pte {
    uint64_t flags;
    uint64_t page_address;                 /* 4 KiB frame number */
};

/* A page table's physical address (D3DGPU_PHYSICAL_ADDRESS). */
struct vidmm_physical_address {
    uint32_t segment_id;
    uint32_t reserved;
    uint64_t segment_offset;               /* for segment 0: the host address */
};

/* ------------------------------------------------------------------ */
/* Allocation description (DxgkDdiCreateAllocation)                    */
/* ------------------------------------------------------------------ */

/* DXGK_ALLOCATIONINFOFLAGS_WDDM2_0 bits vidmm acts on. */
#define VIDMM_ALLOC_CPU_VISIBLE          0x1u
#define VIDMM_ALLOC_PERMANENT_SYS_MEM    0x2u
#define VIDMM_ALLOC_CACHED               0x4u
#define VIDMM_ALLOC_FROM_END_OF_SEGMENT  0x40u
#define VIDMM_ALLOC_DISABLE_LARGE_PAGE_MAPPING 0x80u   /* never mapped with 64 KB entries */
#define VIDMM_ALLOC_OVERLAY              0x100u
#define VIDMM_ALLOC_ACCESSED_PHYSICALLY  0x8000u
#define VIDMM_ALLOC_EXPLICIT_RESIDENCY_NOTIFICATION 0x10000u
/* Not a DXGK allocation flag: the allocation is a primary surface
 * (DXGKARG_CREATEALLOCATION says so through the resource; here the driver
 * sets this bit).  Kept in the reserved high bits. */
#define VIDMM_ALLOC_PRIMARY              0x80000000u
#define VIDMM_ALLOC_KNOWN_FLAGS          (0x1FFFFu | VIDMM_ALLOC_PRIMARY)

/* D3DDDI_SEGMENTPREFERENCE: five 6-bit slots, each a 5-bit segment id and
 * a direction bit (1 = allocate from the top of the segment).  Slot 0 is
 * the most preferred; an id of 0 ends the list. */
#define VIDMM_PREF_SLOTS 5u
#define VIDMM_PREF(slot, id, top) (((uint32_t)(id) & 31u) << (6u * (slot)) | ((uint32_t)((top) != 0) << (6u * (slot) + 5u)))
#define VIDMM_PREF_ID(pref, slot) (((pref) >> (6u * (slot))) & 31u)
#define VIDMM_PREF_TOP(pref, slot) (((pref) >> (6u * (slot) + 5u)) & 1u)

/* DXGK_ALLOCATIONINFO: the driver fills every field but the private data. */
struct vidmm_allocation_info {
    const void *private_driver_data;   /* in: the user-mode driver's blob */
    size_t private_driver_data_size;   /* in */
    uint64_t size;                     /* out: bytes */
    uint64_t alignment;                /* out: bytes, power of two; 0 = page size */
    uint32_t supported_read_segment_set;  /* out: legacy, ignored by WDDM 2 placement */
    uint32_t supported_write_segment_set; /* out: the segments the allocation may live in */
    uint32_t eviction_segment_set;     /* out: apertures usable to speed up eviction (0 = none) */
    uint32_t preferred_segment;        /* out: VIDMM_PREF(...) | ... */
    uint32_t flags;                    /* out: VIDMM_ALLOC_* */
    uint32_t priority;                 /* out: initial priority, 0 = normal */
    void *driver_allocation;           /* out: the driver's handle (hAllocation), passed back in paging ops */
};

struct vidmm_describe_allocation_args {
    struct vidmm_allocation_info *info;
};

struct vidmm_destroy_allocation_args {
    void *driver_allocation;
};

/* ------------------------------------------------------------------ */
/* Paging buffers (DxgkDdiBuildPagingBuffer, DxgkDdiSubmitCommand)     */
/* ------------------------------------------------------------------ */

/* DXGK_BUILDPAGINGBUFFER_OPERATION (same values). */
enum vidmm_paging_operation {
    VIDMM_PAGING_TRANSFER = 0,
    VIDMM_PAGING_FILL = 1,
    VIDMM_PAGING_DISCARD_CONTENT = 2,
    VIDMM_PAGING_MAP_APERTURE_SEGMENT = 5,
    VIDMM_PAGING_UNMAP_APERTURE_SEGMENT = 6,
    VIDMM_PAGING_TRANSFER_VIRTUAL = 8,       /* DXGK_OPERATION_VIRTUAL_TRANSFER, arm TransferVirtual */
    VIDMM_PAGING_FILL_VIRTUAL = 9,           /* DXGK_OPERATION_VIRTUAL_FILL, arm FillVirtual */
    VIDMM_PAGING_VIRTUAL_TRANSFER = VIDMM_PAGING_TRANSFER_VIRTUAL, /* the WDK's spelling */
    VIDMM_PAGING_VIRTUAL_FILL = VIDMM_PAGING_FILL_VIRTUAL,
    VIDMM_PAGING_UPDATE_PAGE_TABLE = 11,
    VIDMM_PAGING_FLUSH_TLB = 12,
    VIDMM_PAGING_SIGNAL_MONITORED_FENCE = 16
};

/* A list of 4 KiB system pages (an MDL).  Page i is at base + i * 4096. */
struct vidmm_mdl {
    void *base;
    uint64_t page_count;
};

/* One side of a transfer: a memory segment address, or (segment_id 0)
 * system pages. */
struct vidmm_transfer_side {
    uint32_t segment_id;
    uint32_t reserved;
    uint64_t segment_address;          /* base_address + offset, when segment_id != 0 */
    const struct vidmm_mdl *mdl;       /* when segment_id == 0 */
};

/* DXGK_TRANSFERFLAGS bits. */
#define VIDMM_TRANSFER_ALLOCATION_IS_IDLE 0x4u
#define VIDMM_TRANSFER_START 0x8u
#define VIDMM_TRANSFER_END   0x10u

struct vidmm_paging_transfer {
    void *driver_allocation;           /* NULL: plain copy */
    /* Offset of this piece within the allocation.  vidmm moves a page-set
     * allocation as one transfer per contiguous piece, bracketed by
     * TRANSFER_START on the first and TRANSFER_END on the last; the side
     * addresses below already point at the piece, so the offset is
     * information only (for drivers that swizzle).  Constant over a
     * multipass. */
    uint64_t transfer_offset;
    uint64_t transfer_size;            /* bytes */
    struct vidmm_transfer_side source;
    struct vidmm_transfer_side destination;
    uint32_t flags;                    /* VIDMM_TRANSFER_* */
    uint32_t reserved;
    uint64_t mdl_offset;               /* first MDL page used, in pages */
};

struct vidmm_paging_fill {
    void *driver_allocation;
    uint64_t fill_size;                /* bytes */
    uint32_t fill_pattern;             /* 32-bit pattern repeated */
    uint32_t destination_segment_id;   /* a memory segment */
    uint64_t destination_segment_address;
};

#define VIDMM_DISCARD_ALLOCATION_IS_IDLE 0x1u
struct vidmm_paging_discard_content {
    void *driver_allocation;
    uint32_t flags;
    uint32_t segment_id;
    uint64_t segment_address;
    uint64_t size;                     /* bytes (not in the DDI struct; a convenience) */
};

#define VIDMM_MAP_APERTURE_CACHE_COHERENT 0x1u
struct vidmm_paging_map_aperture {
    void *driver_allocation;           /* NULL for paging buffers */
    uint32_t segment_id;               /* the aperture segment */
    uint32_t flags;                    /* VIDMM_MAP_APERTURE_* */
    uint64_t offset_in_pages;          /* first aperture page (4 KiB pages) */
    uint64_t number_of_pages;
    const struct vidmm_mdl *mdl;
    uint64_t mdl_offset;               /* first MDL page mapped */
};

struct vidmm_paging_unmap_aperture {
    void *driver_allocation;
    uint32_t segment_id;
    uint32_t reserved;
    uint64_t offset_in_pages;
    uint64_t number_of_pages;
    void *dummy_page;                  /* unmapped entries must point here */
};

/* DXGK_UPDATEPAGETABLEFLAGS bits. */
#define VIDMM_UPDATE_PT_REPEAT          0x1u   /* entry 0 replicated NumPageTableEntries times */
#define VIDMM_UPDATE_PT_INITIAL_UPDATE  0x2u
#define VIDMM_UPDATE_PT_NOTIFY_EVICTION 0x4u
#define VIDMM_UPDATE_PT_USE_64KB_PAGES  0x8u   /* the entries are 64 KB leaf entries */

/* DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE (GPU_PHYSICAL update mode). */
struct vidmm_paging_update_page_table {
    uint32_t page_table_level;             /* 0 = leaf */
    uint32_t flags;                        /* VIDMM_UPDATE_PT_* */
    void *driver_allocation;               /* the allocation these entries map (NULL for page tables) */
    struct vidmm_physical_address page_table_address;
    const struct vidmm_pte *page_table_entries; /* element 0 goes to start_index; valid until the buffer executes */
    uint32_t start_index;
    uint32_t num_page_table_entries;
    uint64_t driver_protection;
    uint64_t allocation_offset_in_bytes;
    void *driver_process;
    uint64_t first_pte_virtual_address;
};

/* DXGK_BUILDPAGINGBUFFER_FLUSHTLB.  Start = end = 0: the whole space. */
struct vidmm_paging_flush_tlb {
    struct vidmm_physical_address root_page_table_address;
    void *driver_process;
    uint64_t start_virtual_address;
    uint64_t end_virtual_address;
};

/* DXGK_MEMORY_TRANSFER_DIRECTION (same values). */
enum vidmm_memory_transfer_direction {
    VIDMM_TRANSFER_LOCAL_TO_SYSTEM = 0,
    VIDMM_TRANSFER_SYSTEM_TO_LOCAL = 1,
    VIDMM_TRANSFER_LOCAL_TO_LOCAL = 2
};

/* DXGK_TRANSFERVIRTUALFLAGS bits: the source / destination VAs are mapped
 * with 64 KB page-table entries.  vidmm sets each when that side goes
 * through the paging process's 64 KB window (bytes in whole 64 KB pages
 * of a 64 KB-page memory segment), else leaves it 0 (4 KB entries). */
#define VIDMM_TRANSFER_VIRTUAL_SRC_64KB_PAGES 0x1u
#define VIDMM_TRANSFER_VIRTUAL_DST_64KB_PAGES 0x2u

/* DXGK_BUILDPAGINGBUFFER_TRANSFERVIRTUAL.  Both addresses are GPU
 * virtual addresses of the system paging process (its scratch window),
 * translated through root_page_table_address; vidmm maps the source and
 * destination pages there (UPDATE_PAGE_TABLE + FLUSH_TLB) right before.
 * A move larger than the window is several of these, each after its own
 * remapping (docs/DRIVER_INTERFACE.md). */
struct vidmm_paging_transfer_virtual {
    void *driver_allocation;               /* hAllocation; NULL: plain copy */
    uint64_t allocation_offset_in_bytes;   /* where this chunk starts in the allocation: information only,
                                            * never added to the addresses */
    uint64_t transfer_size_in_bytes;
    uint64_t source_virtual_address;
    uint64_t destination_virtual_address;
    /* SourcePageTable / DestinationPageTable: only meaningful with the
     * LegacyBehaviors.SourcePageTableVaInTransfer cap, which vidmm does
     * not model; always 0. */
    uint64_t source_page_table;
    uint64_t destination_page_table;
    uint32_t transfer_direction;           /* enum vidmm_memory_transfer_direction */
    uint32_t flags;                        /* VIDMM_TRANSFER_VIRTUAL_* */
    /* Not in the DDI struct (there the driver knows its system context's
     * root from DxgkDdiSetRootPageTable): the paging process's root. */
    struct vidmm_physical_address root_page_table_address;
};

/* DXGK_BUILDPAGINGBUFFER_FILLVIRTUAL. */
struct vidmm_paging_fill_virtual {
    void *driver_allocation;               /* hAllocation */
    uint64_t allocation_offset_in_bytes;   /* information only, as above */
    uint64_t fill_size_in_bytes;
    uint32_t fill_pattern;                 /* 32-bit pattern repeated */
    uint32_t reserved;
    uint64_t destination_virtual_address;  /* in the paging process's scratch window */
    struct vidmm_physical_address root_page_table_address; /* as in TRANSFER_VIRTUAL */
};

struct vidmm_build_paging_buffer_args {
    void *dma_buffer;                  /* in/out: where to write; the driver advances it past what it wrote */
    uint32_t dma_size;                 /* in/out: bytes left; the driver decreases it */
    uint32_t multipass_offset;         /* zero on the first call of a request, kept by vidmm between restarts */
    void *dma_buffer_private_data;
    uint32_t dma_buffer_private_data_size;
    enum vidmm_paging_operation operation;
    union {
        struct vidmm_paging_transfer transfer;
        struct vidmm_paging_fill fill;
        struct vidmm_paging_transfer_virtual transfer_virtual;
        struct vidmm_paging_fill_virtual fill_virtual;
        struct vidmm_paging_discard_content discard_content;
        struct vidmm_paging_map_aperture map_aperture_segment;
        struct vidmm_paging_unmap_aperture unmap_aperture_segment;
        struct vidmm_paging_update_page_table update_page_table;
        struct vidmm_paging_flush_tlb flush_tlb;
        uint64_t reserved[32];
    } u;
};

struct vidmm_submit_command_args {
    struct vidmm_adapter *adapter;     /* pass back to vidmm_cb_notify_fence */
    const void *dma_buffer;            /* the paging buffer start */
    uint32_t dma_buffer_size;          /* bytes written */
    uint32_t flags;                    /* VIDMM_SUBMIT_PAGING */
    uint64_t fence;                    /* signal this value through vidmm_cb_notify_fence when done */
};
#define VIDMM_SUBMIT_PAGING 0x1u

/* ------------------------------------------------------------------ */
/* CPU host aperture (DxgkDdiMapCpuHostAperture / Unmap)              */
/* ------------------------------------------------------------------ */

struct vidmm_map_cpu_host_aperture_args {
    void *driver_allocation;           /* NULL for implicit allocations */
    uint32_t segment_id;
    uint32_t reserved;
    uint64_t number_of_pages;
    const uint32_t *cpu_host_aperture_pages; /* aperture page indices */
    const uint64_t *memory_segment_pages;    /* segment page indices (offset / segment page size) */
};

struct vidmm_unmap_cpu_host_aperture_args {
    uint32_t segment_id;
    uint32_t reserved;
    uint64_t number_of_pages;
    const uint32_t *cpu_host_aperture_pages;
};

/* ------------------------------------------------------------------ */
/* The ops table                                                       */
/* ------------------------------------------------------------------ */

/* DxgkDdiSetRootPageTable.  WDDM binds a root to each context: vidmm
 * binds the process's root to each of its virtual-mode contexts (token =
 * the context handle) and once for the process itself (token = the
 * process handle: its paging/privileged view, used when no context is
 * named).  context is the token to give back in page-fault reports; an
 * address with segment_id 0 and offset 0 unbinds it. */
struct vidmm_set_root_page_table_args {
    uint64_t context;
    struct vidmm_physical_address address;
    uint32_t num_entries;
    uint32_t reserved;
};

/* Page-fault report flags (DXGK_PAGE_FAULT_FLAGS spirit). */
#define VIDMM_FAULT_WRITE       0x1u
#define VIDMM_FAULT_EXECUTE     0x2u
#define VIDMM_FAULT_NOT_PRESENT 0x4u   /* invalid entry; else a protection violation */

/* ------------------------------------------------------------------ */
/* Command submission (DxgkDdiSubmitCommandVirtual, DxgkDdiSubmitCommand, */
/* DxgkDdiPatch, DXGK_ALLOCATIONLIST, D3DDDI_PATCHLOCATIONLIST)        */
/* ------------------------------------------------------------------ */

/* DXGK_ALLOCATIONLIST flag bits. */
#define VIDMM_ALLOCATION_LIST_WRITE 0x1u   /* WriteOperation: the buffer may write it */

/* DXGK_ALLOCATIONLIST, kernel form, as vidmm hands it to patch: where a
 * listed allocation is now.  segment_id is a memory segment (contiguous
 * there) or the aperture (its mapped range); never 0 - an
 * AccessedPhysically allocation is resident before it is patched. */
struct vidmm_allocation_list_entry {
    void *driver_allocation;           /* hDeviceSpecificAllocation */
    uint32_t flags;                    /* VIDMM_ALLOCATION_LIST_* */
    uint32_t segment_id;               /* SegmentId */
    uint64_t segment_offset;           /* PhysicalAddress, as an offset in the segment */
    uint64_t size;                     /* bytes placed (not in the DDI struct; lets the driver bound patches) */
};

/* D3DDDI_PATCHLOCATIONLIST (24 bytes, same fields and order). */
struct vidmm_patch_location {
    uint32_t allocation_index;         /* into the allocation list */
    uint32_t slot_id;                  /* split tracking (WDDM 1); carried, unused */
    uint32_t driver_id;                /* the driver's tag for this reference */
    uint32_t allocation_offset;        /* byte offset inside the allocation */
    uint32_t patch_offset;             /* byte offset in the DMA buffer where the address goes */
    uint32_t split_offset;             /* carried, unused */
};

/* DXGKARG_PATCH: write the addresses of the listed allocations into the
 * DMA buffer at the patch locations (only the locations that need it:
 * vidmm leaves out those whose allocation has not moved since the last
 * patch of this buffer). */
struct vidmm_patch_args {
    uint64_t context;                  /* hContext token */
    uint32_t node;
    uint32_t reserved;
    void *dma_buffer;
    uint32_t dma_buffer_size;
    uint32_t allocation_list_size;
    const struct vidmm_allocation_list_entry *allocation_list;
    const struct vidmm_patch_location *patch_location_list;
    uint32_t patch_location_list_size;
    uint32_t reserved2;
    uint64_t submission_fence;         /* SubmissionFenceId */
};

/* DXGKARG_SUBMITCOMMANDVIRTUAL / DXGKARG_SUBMITCOMMAND for a context's
 * (not paging) work.  The driver runs the buffer on engine `node` and,
 * once it finished (or stopped at a fault), calls
 * vidmm_cb_notify_context_fence(adapter, context, node, fence). */
struct vidmm_submit_context_args {
    struct vidmm_adapter *adapter;     /* pass back to the callbacks */
    uint64_t context;                  /* hContext token (the one given to set_root_page_table) */
    uint32_t node;                     /* NodeOrdinal */
    uint32_t flags;                    /* reserved, 0 */
    uint64_t dma_buffer_virtual_address; /* virtual: DmaBufferVirtualAddress in the context's address space */
    const void *dma_buffer;            /* physical: the patched buffer, untouched by vidmm until the fence */
    uint32_t dma_buffer_size;
    uint32_t reserved;
    uint64_t fence;                    /* SubmissionFenceId: the context's monitored fence value */
};

/* DXGKARG_RESETENGINE: abandon what engine `node` is stuck on.  The
 * driver stops the buffer at the head of the node's queue if it has not
 * finished, reports its context token and fence (LastAbortedFenceId), and
 * lets the buffers queued behind it run.  context 0 = nothing was
 * aborted (the engine was not stuck after all).  The aborted buffer's
 * fence is not signalled by the driver: vidmm treats it as completed. */
struct vidmm_reset_engine_args {
    uint32_t node;                     /* in */
    uint32_t reserved;
    uint64_t context;                  /* out: token of the aborted buffer's context, 0 = none */
    uint64_t last_aborted_fence;       /* out: that buffer's fence */
};

/* Power states of vidmm_adapter_set_power_state (power.h) as told to the
 * driver (DxgkDdiSetPowerState with the device power state). */
#define VIDMM_POWER_D0          0u     /* working */
#define VIDMM_POWER_STANDBY     1u     /* S3: segments without PRESERVED_DURING_STANDBY lose their content */
#define VIDMM_POWER_HIBERNATE   2u     /* S4 and hybrid sleep: only PRESERVED_DURING_HIBERNATE segments keep it */

struct vidmm_driver_ops {
    /* VIDMM_ABI_VERSION of the headers the driver was compiled with
     * (vidmm/version.h).  Required (0 is refused): an op added later is
     * read only from a table that has it, so an older driver keeps
     * working with a newer library (docs/ABI.md). */
    uint32_t abi_version;

    /* DxgkDdiQueryAdapterInfo.  Required.  Fills args->output for
     * args->type; returns VIDMM_OK, VIDMM_E_NOT_SUPPORTED for an unknown
     * type, or VIDMM_E_INVALID_ARG for a short output buffer. */
    vidmm_status (*query_adapter_info)(void *driver, const struct vidmm_query_adapter_info_args *args);

    /* DxgkDdiCreateAllocation, one allocation at a time.  Optional: the
     * default treats private_driver_data as a complete struct
     * vidmm_allocation_info (a driver with no private format). */
    vidmm_status (*describe_allocation)(void *driver, struct vidmm_describe_allocation_args *args);

    /* DxgkDdiDestroyAllocation.  Optional: default does nothing. */
    void (*destroy_allocation)(void *driver, const struct vidmm_destroy_allocation_args *args);

    /* DxgkDdiBuildPagingBuffer.  Required.  Encodes one operation into the
     * paging buffer.  Returns VIDMM_OK, or VIDMM_E_INSUFFICIENT_DMA_BUFFER
     * when the space left is too small: vidmm then submits what was
     * written, hands a fresh buffer and calls again with the same request
     * and the multipass_offset the driver left.  Any other failure is a
     * driver fault. */
    vidmm_status (*build_paging_buffer)(void *driver, struct vidmm_build_paging_buffer_args *args);

    /* DxgkDdiSubmitCommand for paging buffers.  Required.  Queues the
     * buffer; the driver calls vidmm_cb_notify_fence(adapter, fence) once
     * the GPU finished it (possibly before returning). */
    vidmm_status (*submit_command)(void *driver, const struct vidmm_submit_command_args *args);

    /* DxgkDdiMapCpuHostAperture / DxgkDdiUnmapCpuHostAperture.  Required
     * only when a segment has SUPPORTS_CPU_HOST_APERTURE. */
    vidmm_status (*map_cpu_host_aperture)(void *driver, const struct vidmm_map_cpu_host_aperture_args *args);
    vidmm_status (*unmap_cpu_host_aperture)(void *driver, const struct vidmm_unmap_cpu_host_aperture_args *args);

    /* DxgkDdiSetRootPageTable.  Optional (GpuMmu): without it faults
     * cannot be attributed to a process. */
    void (*set_root_page_table)(void *driver, const struct vidmm_set_root_page_table_args *args);

    /* DxgkDdiGetRootPageTableSize.  Required for a 2-level geometry whose
     * root level reports page_table_size_in_bytes 0 (a resizable root):
     * *number_of_pte is the entries vidmm asks for; the driver may raise
     * it to what the returned size holds.  Returns the root's size in
     * bytes (a multiple of the page-table segment's page), 0 to refuse. */
    uint64_t (*get_root_page_table_size)(void *driver, uint32_t *number_of_pte);

    /* DxgkDdiSubmitCommandVirtual.  Optional (without it virtual-mode
     * submission is VIDMM_E_NOT_SUPPORTED).  VIDMM_E_INVALID_ARG for a
     * malformed request; the buffer is read through the context's root. */
    vidmm_status (*submit_command_virtual)(void *driver, const struct vidmm_submit_context_args *args);
    /* DxgkDdiSubmitCommand (no Paging flag).  Optional, as above, for
     * physical-mode contexts. */
    vidmm_status (*submit_command_physical)(void *driver, const struct vidmm_submit_context_args *args);
    /* DxgkDdiPatch.  Required with submit_command_physical.  Any failure
     * refuses the submission (VIDMM_E_INVALID_ARG to the caller). */
    vidmm_status (*patch)(void *driver, const struct vidmm_patch_args *args);

    /* DxgkDdiResetEngine (per-engine TDR).  Optional: without it, or when
     * it fails or reports a buffer that is not the one vidmm found stuck,
     * a hang escalates to an adapter reset. */
    vidmm_status (*reset_engine)(void *driver, struct vidmm_reset_engine_args *args);
    /* DxgkDdiQueryEngineStatus: *responsive = 0 when engine `node` (or
     * VIDMM_PAGING_ENGINE, the engine running paging buffers) is stuck,
     * 1 when it is making progress however slowly (a long buffer, a host
     * that did not schedule the engine).  vidmm asks before resetting an
     * engine it found without progress for the timeout: a responsive
     * engine is given another timeout.  Optional: without it the timeout
     * alone decides. */
    vidmm_status (*query_engine_status)(void *driver, uint32_t node, uint32_t *responsive);
    /* DxgkDdiResetFromTimeout: stop every engine, drop every queued buffer
     * (paging and contexts; their fences are not signalled), and make the
     * adapter usable again.  Memory segments' content is then undefined.
     * Optional: without it a hang cannot be recovered and every device is
     * put in the error state. */
    vidmm_status (*reset_from_timeout)(void *driver);
    /* DxgkDdiRestartFromTimeout: called once vidmm has released what the
     * aborted work held, before it rebuilds page tables and content.
     * Optional. */
    vidmm_status (*restart_from_timeout)(void *driver);
    /* DxgkDdiSetPowerState: state is VIDMM_POWER_*.  Called with every
     * engine idle; going down, vidmm has already saved what the segments
     * that are not preserved for that state hold.  Optional (the state
     * change then only concerns vidmm). */
    vidmm_status (*set_power_state)(void *driver, uint32_t state);
};

/* DxgkCbNotifyInterrupt + DxgkCbNotifyDpc for a finished paging buffer:
 * record that fence completed.  Thread-safe; may be called from inside
 * submit_command.  A fence at or below the last one reported, or beyond
 * the last one submitted, is a driver bug and is ignored (memory still in
 * use is never released on its word); a NULL adapter is ignored too. */
VIDMM_API void vidmm_cb_notify_fence(struct vidmm_adapter *adapter, uint64_t fence);

/* DxgkCbNotifyInterrupt(DXGK_INTERRUPT_DMA_COMPLETED) for a context's
 * work: the context's monitored fence reached `fence` on engine `node`.
 * Thread-safe; may be called from inside submit_command_*.  Paging
 * buffers keep using vidmm_cb_notify_fence.  A fence of another node or
 * beyond what was submitted is ignored, as is a NULL adapter. */
VIDMM_API void vidmm_cb_notify_context_fence(struct vidmm_adapter *adapter, uint64_t context, uint32_t node, uint64_t fence);

/* DxgkCbNotifyInterrupt(DXGK_INTERRUPT_TYPE_PAGE_FAULTED): the GPU hit an
 * invalid or protected virtual address while running for context (the
 * token of set_root_page_table).  vidmm puts that process's device in the
 * error state.  Thread-safe. */
VIDMM_API void vidmm_cb_notify_page_fault(struct vidmm_adapter *adapter, uint64_t context, uint64_t va, uint32_t flags);

#ifdef __cplusplus
}
#endif
#endif
