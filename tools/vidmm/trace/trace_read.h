/*
 * trace_read.h - the reader's pieces that executing a line (replay.c)
 * uses: the next line, its tokens, and the parsers of the argument
 * syntax (docs/TRACE_FORMAT.md).  Every parser that fails reports the
 * line (file:line: what) on stderr and returns non-zero, so a handler only
 * has to pass the failure on.  Not for the rest of the tool: its interface
 * is replay.h.
 */
#ifndef VIDMM_TOOL_TRACE_READ_H
#define VIDMM_TOOL_TRACE_READ_H

#include "replay.h"

/* At most this many tokens on a line (a longer one is refused). */
#define RD_MAX_TOKENS 64

/* Which of a line's key=value tokens its handler read, and every key it
 * asked for: a key no handler asks for is a typo (rd_unknown_keys). */
struct rd_seen {
    uint64_t used;               /* bit i: tok[i] was read */
    const char *asked[32];       /* the keys the handler knows, in the order asked */
    int nasked;
};

/* A call line's key=value arguments: tok[1..n-1] (n stops before "="). */
struct rd_args {
    char **tok;
    int n;                       /* call tokens (before "=") */
    struct replay *r;
    struct rd_seen *seen;        /* NULL: nothing tracked */
};

/* After a handler ran: a key=value token it did not read is reported
 * with the keys the verb takes ("file:line: unknown key 'cpuu' for
 * create2 (its keys: kind, flags, size, ...)"); returns 1, else 0. */
int rd_unknown_keys(const struct rd_args *a, const char *verb);

/* Report a bad line ("what: tok"); returns 1. */
int rd_bad(struct replay *r, const char *what, const char *tok);
/* Split s in place at blanks into at most max tokens; -1 when there are more. */
int rd_tokenize(char *s, char **tok, int max);
/* The next non-blank, non-comment line, stripped of its newline and of a
 * trailing comment; NULL at the end of the file or on a fault (then
 * r->failed is set and the fault reported). */
char *rd_next_line(struct replay *r);

/* Ids: file ids (as the trace names objects) to the recording layer's. */
int rd_map_set(struct replay *r, enum tr_kind k, uint32_t fid, uint32_t id);
/* The recording-layer id of an existing object named by token s. */
int rd_ref(struct replay *r, enum tr_kind k, const char *s, uint32_t *id);
/* A new object's file id (must not be in use). */
int rd_def(struct replay *r, enum tr_kind k, const char *s, uint32_t *fid);

/* key=value: the value of key (NULL if absent); numbers with a default
 * when absent and not required; addresses (V<n>[+off] or a number). */
const char *rd_kv(const struct rd_args *a, const char *key);
int rd_kv_u64(const struct rd_args *a, const char *key, uint64_t def_value, int required, uint64_t *out);
int rd_kv_u32(const struct rd_args *a, const char *key, uint32_t def_value, int required, uint32_t *out);
int rd_kv_addr(const struct rd_args *a, const char *key, int required, struct tr_addr *out);
/* The positional (non key=value) tokens after the verb; their count. */
int rd_positional(const struct rd_args *a, const char **pos, int max);
/* At least want positional tokens, else the usage line is reported. */
int rd_want_pos(struct replay *r, int have, int want, const char *usage);

/* Flags: "-", a number, or names joined by ','. */
int rd_flags(struct replay *r, const char *s, const char *const names[2], uint32_t *out);
/* An allocation list: "-" or A<n>,A<m>,... into a malloc'ed array. */
int rd_list(struct replay *r, const char *s, uint32_t **out, uint32_t *n);
/* A softgpu allocation kind; a segment group (local, non-local). */
int rd_kind(struct replay *r, const char *s, enum softgpu_alloc_kind *k);
int rd_group(struct replay *r, const char *s, enum vidmm_segment_group *g);
/* A queue's last pending fence, for "wait Q<n> fence=last". */
void rd_remember_fence(struct replay *r, uint32_t q, uint64_t fence);
/* A command list: "-" or OP[:OPERAND...],... (malloc'ed). */
int rd_cmds(struct replay *r, const char *s, struct tr_cmd **out, uint32_t *n);
/* A physical allocation list: "-" or A<n>[:write],... */
int rd_submit_allocs(struct replay *r, const char *s, uint32_t **ids, uint32_t **flags, uint32_t *n);
/* Patch locations: "-" or INDEX+ALLOCATION_OFFSET@PATCH_OFFSET,... */
int rd_patches(struct replay *r, const char *s, struct tr_patch **out, uint32_t *n);
/* The default size of a GPU access at va: the rest of the VA range. */
uint64_t rd_range_rest(struct tr *t, struct tr_addr va);

#endif
