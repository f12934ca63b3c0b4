/*
 * submit.h - command submission (internal, never installed).
 */
#ifndef VIDMM_SUBMIT_SUBMIT_H
#define VIDMM_SUBMIT_SUBMIT_H

#include "model/objects.h"

/* A context goes: wait for its work, forget its patch cache. */
void vidmm_submit_context_gone(struct vidmm_adapter *a, struct vidmm_context *c);

int vidmm_submit_check(const struct vidmm_adapter *a, char *msg, size_t n);

#endif
