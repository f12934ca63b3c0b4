/*
 * rmv_int.h - what the RMV decoder (rmv_decode.c, rmv_stream.c) hands the
 * replay (rmv.c): the replayable events.  Not for the rest of the tool.
 */
#ifndef VIDMM_TOOL_RMV_INT_H
#define VIDMM_TOOL_RMV_INT_H

#include <stddef.h>
#include <stdint.h>

enum {
    RMV_TK_TIMESTAMP = 0, RMV_TK_RESOURCE_UPDATE = 1, RMV_TK_RESERVED = 2, RMV_TK_PAGE_TABLE_UPDATE = 3,
    RMV_TK_USERDATA = 4, RMV_TK_MISC = 5, RMV_TK_RESOURCE_REFERENCE = 6, RMV_TK_RESOURCE_BIND = 7,
    RMV_TK_PROCESS_EVENT = 8, RMV_TK_PAGE_REFERENCE = 9, RMV_TK_CPU_MAP = 10, RMV_TK_VIRTUAL_FREE = 11,
    RMV_TK_VIRTUAL_ALLOCATE = 12, RMV_TK_RESOURCE_CREATE = 13, RMV_TK_TIME_DELTA = 14, RMV_TK_RESOURCE_DESTROY = 15
};

enum { RMV_HEAP_LOCAL = 0, RMV_HEAP_INVISIBLE = 1, RMV_HEAP_SYSTEM = 2, RMV_HEAP_NONE = 3 };

/* One replayable event. */
struct rmv_ev {
    uint64_t ts;
    uint32_t seq;                /* file order, to keep the sort stable */
    uint8_t type, heap_count, unmap, page_size;
    uint8_t pref[4];
    uint8_t owner;               /* VirtualAllocate: application, PAL, client driver, KMD */
    uint8_t update_type;         /* PageTableUpdate: discard, update, transfer */
    uint64_t pid;
    uint64_t va, size, pa;       /* size: bytes (allocate), pages (page-table update) */
};

struct rmv_evs {
    struct rmv_ev *e;
    size_t n, cap;
};

extern const char *const rmv_token_name[16];

#endif
