/*
 * submit.h - command submission (internal, never installed).
 */
#ifndef VIDMM_SUBMIT_SUBMIT_H
#define VIDMM_SUBMIT_SUBMIT_H

#include "model/objects.h"

/* A context goes: wait for its work, forget the command buffers last
 * submitted on it. */
void vidmm_submit_context_gone(struct vidmm_adapter *a, struct vidmm_context *c);

/* The adapter closes (no submission follows): release what the
 * submission layer keeps - the known physical-mode command buffers. */
void vidmm_submit_fini(struct vidmm_adapter *a);

int vidmm_submit_check(const struct vidmm_adapter *a, char *msg, size_t n);

#endif
