/*
 * device.h - devices, contexts, process teardown and page faults (internal, never installed).
 */
#ifndef VIDMM_DEVICE_DEVICE_H
#define VIDMM_DEVICE_DEVICE_H

#include "model/objects.h"

void vidmm_process_destroy_all(struct vidmm_adapter *a);

/* The root moved (a resizable root grew): bind it again everywhere. */
void vidmm_process_rebind_root(struct vidmm_adapter *a, struct vidmm_process *p);

void vidmm_device_destroy_all(struct vidmm_adapter *a, struct vidmm_process *p);

/* A page fault for a context token: the context's device, or with a
 * process token every device of it, enters the error state.  Called with
 * the fence lock held. Returns the process, or NULL for an unknown token. */
struct vidmm_process *vidmm_device_fault_locked(struct vidmm_adapter *a, uint64_t token, uint64_t va,
                                                uint32_t flags);

int vidmm_device_check(const struct vidmm_adapter *a, char *msg, size_t n);

#endif
