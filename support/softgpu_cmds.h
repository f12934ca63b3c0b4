/*
 * softgpu_cmds.h - the commands of softgpu's command-buffer language
 * (SOFTGPU_CMD_* in vidmm/softgpu.h) as a table: name, operand count and
 * which operands are addresses.
 *
 * One table for everything outside softgpu that writes or mutates command
 * buffers: the tool's trace format names and formats commands with it,
 * the command-buffer fuzzer sizes and relocates them with it.  A command
 * is an 8-byte header followed by 8 bytes per operand.
 */
#ifndef VIDMM_HARNESS_SOFTGPU_CMDS_H
#define VIDMM_HARNESS_SOFTGPU_CMDS_H

#include "vidmm/softgpu.h"

#include <stddef.h>
#include <stdint.h>

struct cmd_kind {
    uint32_t op;                 /* SOFTGPU_CMD_* */
    const char *name;            /* as the trace format writes it */
    int operands;
    unsigned addr_mask;          /* bit n set: operand n is an address */
};

/* All the commands; *n gets their count.  (A function, so the table is
 * one object per program that uses it and none in those that do not.) */
static inline const struct cmd_kind *cmd_kinds(size_t *n)
{
    static const struct cmd_kind kinds[] = {
        { SOFTGPU_CMD_NOP, "nop", 0, 0 },
        { SOFTGPU_CMD_WRITE32, "write32", 2, 1 },
        { SOFTGPU_CMD_WRITE64, "write64", 2, 1 },
        { SOFTGPU_CMD_COPY, "copy", 3, 3 },
        { SOFTGPU_CMD_FILL, "fill", 3, 1 },
        { SOFTGPU_CMD_CHECKSUM, "checksum", 3, 5 },
        { SOFTGPU_CMD_COMPARE, "compare", 4, 11 },
        { SOFTGPU_CMD_SIGNAL, "signal", 2, 1 },
        { SOFTGPU_CMD_WAIT, "wait", 2, 1 },
    };
    *n = sizeof kinds / sizeof kinds[0];
    return kinds;
}

/* The entry of opcode op, NULL if softgpu has no such command. */
static inline const struct cmd_kind *cmd_kind_of(uint32_t op)
{
    size_t n;
    const struct cmd_kind *k = cmd_kinds(&n);
    for (size_t i = 0; i < n; i++)
        if (k[i].op == op)
            return &k[i];
    return NULL;
}

/* Bytes of a command with opcode op, 0 if unknown. */
static inline uint32_t cmd_kind_size(uint32_t op)
{
    const struct cmd_kind *k = cmd_kind_of(op);
    return k ? 8u + 8u * (uint32_t)k->operands : 0;
}

#endif
