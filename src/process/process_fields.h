/*
 * process_fields.h - the process module's members of the shared objects
 * (process/process.c): which processes map an allocation (its `va_map`
 * member), the spare links a process keeps for that list (its
 * `va_spares` member) and a process's error state (its `fault` member).  model/objects.h embeds them; only src/process/
 * names the members (others call process/process.h).  Types only.
 */
#ifndef VIDMM_PROCESS_PROCESS_FIELDS_H
#define VIDMM_PROCESS_PROCESS_FIELDS_H

#include <stdint.h>

struct vidmm_process;

/* One process that maps an allocation: a link of the allocation's
 * va_map.users list.  The process keeps spares, obtained when a change is
 * prepared, so the commit that maps a new allocation never allocates. */
struct vidmm_va_user {
    struct vidmm_process *process;
    struct vidmm_va_user *prev, *next;
};

/* The processes whose VA space maps an allocation, and how many (the VA
 * spaces' object index tells each first and last mapping): a move or a
 * destroy visits those, not every process. */
struct vidmm_alloc_va_map {
    struct vidmm_va_user *users;
    uint32_t processes;
};

/* Spare vidmm_va_user links (through next) for allocations the process
 * will map first in the change being prepared. */
struct vidmm_process_va_spares {
    struct vidmm_va_user *users;
    uint32_t count;
};

/* Device error state after a GPU page fault (guarded by the fence lock:
 * the report may come from a driver thread): the first fault, and how
 * many there were. */
struct vidmm_process_fault {
    int faulted;
    uint32_t fault_flags;
    uint64_t fault_va;
    uint64_t faults;
};

#endif
