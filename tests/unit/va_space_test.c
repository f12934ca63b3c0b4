/*
 * va_space_test.c - GPU VA bookkeeping: every split/merge/overlap case of
 * reserve, map, unmap, free and update as named table rows (resulting
 * range list and emitted steps), the bad-input table, a seeded random
 * differential test against a page-granular model (which also replays the
 * emitted steps), a host-allocation fault sweep and unmap_object.
 * vidmm_va_space_check() runs after every step.
 *
 * Addresses and sizes in the tables are in KiB, so "64" is the first
 * usable VA (the guard granule is [0, 64 KiB)).
 */
#include "harness/fault_alloc.h"
#include "harness/test.h"
#include "va/va_space.h"
#include "va/va_int.h"

#include <stdlib.h>
#include <string.h>

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

/* ---- formatting ranges and steps as short strings ----------------------------- */

static void fmt_desc(char *buf, size_t cap, const struct vidmm_va_desc *d)
{
    size_t n = strlen(buf);
    if (d->state == VIDMM_VA_RESERVED) {
        snprintf(buf + n, cap - n, "R%c %" PRIu64 "+%" PRIu64, d->mode ? 'z' : 'n', d->va / KiB, d->size / KiB);
    } else {
        snprintf(buf + n, cap - n, "M %" PRIu64 "+%" PRIu64 " o%" PRIu64 "@%" PRIu64 "%s%s%s%s", d->va / KiB,
                 d->size / KiB, d->object, d->object_offset / KiB,
                 d->in_reservation ? (d->mode ? " rz" : " rn") : "", (d->prot & VIDMM_VA_PROT_READ_ONLY) ? " ro" : "",
                 (d->prot & VIDMM_VA_PROT_NO_EXECUTE) ? " nx" : "",
                 d->driver_protection ? " dp" : "");
    }
}

static void fmt_ranges(const struct vidmm_va_space *vs, char *buf, size_t cap)
{
    buf[0] = 0;
    for (const struct vidmm_va_range *r = vidmm_va_first(vs); r; r = vidmm_va_next(vs, r)) {
        if (buf[0])
            strncat(buf, ", ", cap - strlen(buf) - 1);
        fmt_desc(buf, cap, &r->d);
    }
}

struct step_log {
    char text[2048];
    int count;
};

static void log_step(void *ctx, const struct vidmm_va_step *s)
{
    struct step_log *l = ctx;
    size_t cap = sizeof l->text, n;
    if (l->text[0])
        strncat(l->text, "; ", cap - strlen(l->text) - 1);
    n = strlen(l->text);
    switch (s->op) {
    case VIDMM_VA_STEP_MAP:
        snprintf(l->text + n, cap - n, "map(");
        fmt_desc(l->text, cap, &s->new);
        break;
    case VIDMM_VA_STEP_UNMAP:
        snprintf(l->text + n, cap - n, "unmap(");
        fmt_desc(l->text, cap, &s->old);
        break;
    case VIDMM_VA_STEP_REMAP:
        snprintf(l->text + n, cap - n, "remap(");
        fmt_desc(l->text, cap, &s->old);
        n = strlen(l->text);
        snprintf(l->text + n, cap - n, " prev %" PRIu64 " next %" PRIu64, s->prev_size / KiB, s->next_size / KiB);
        break;
    }
    strncat(l->text, ")", cap - strlen(l->text) - 1);
    l->count++;
}

/* ---- a tiny script language for the tables --------------------------------------
 *   res A S n|z          reserve at A (KiB), S KiB
 *   resany MIN MAX S n|z reserve anywhere
 *   map A S OBJ OFF [ro] [nx]
 *   mapany MIN MAX S OBJ OFF
 *   unmap A S | free A S | uobj OBJ
 *   upd OP OP ...        OP = m:A:S:OBJ:OFF  u:A:S:n|z  c:DST:S:SRC
 * Commands are separated by ';'.  Returns the status of the last one and
 * the VA it produced in *out (if any). */
static vidmm_status run_cmd(struct vidmm_va_space *vs, char *cmd, uint64_t *out)
{
    char w[8][32];
    memset(w, 0, sizeof w);
    int nw = sscanf(cmd, "%31s %31s %31s %31s %31s %31s %31s %31s", w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]);
    uint64_t a[8] = {0}, va = 0;
    for (int i = 1; i < nw; i++)
        a[i] = strtoull(w[i], NULL, 0);
    vidmm_status st = VIDMM_E_INVALID_ARG;
    if (!strcmp(w[0], "res")) {
        st = vidmm_va_reserve(vs, a[1] * KiB, 0, 0, a[2] * KiB, w[3][0] == 'z', &va);
    } else if (!strcmp(w[0], "resany")) {
        st = vidmm_va_reserve(vs, 0, a[1] * KiB, a[2] * KiB, a[3] * KiB, w[4][0] == 'z', &va);
    } else if (!strcmp(w[0], "map")) {
        unsigned prot = 0;
        for (int i = 5; i < nw; i++)
            prot |= !strcmp(w[i], "ro") ? VIDMM_VA_PROT_READ_ONLY : !strcmp(w[i], "nx") ? VIDMM_VA_PROT_NO_EXECUTE : 0;
        st = vidmm_va_map(vs, a[1] * KiB, 0, 0, a[2] * KiB, a[3], a[4] * KiB, prot, 0, &va);
    } else if (!strcmp(w[0], "mapany")) {
        st = vidmm_va_map(vs, 0, a[1] * KiB, a[2] * KiB, a[3] * KiB, a[4], a[5] * KiB, 0, 0, &va);
    } else if (!strcmp(w[0], "unmap")) {
        st = vidmm_va_unmap(vs, a[1] * KiB, a[2] * KiB);
    } else if (!strcmp(w[0], "free")) {
        st = vidmm_va_free(vs, a[1] * KiB, a[2] * KiB);
    } else if (!strcmp(w[0], "uobj")) {
        st = vidmm_va_unmap_object(vs, a[1]);
    } else if (!strcmp(w[0], "upd")) {
        struct vidmm_va_update_op ops[7];
        memset(ops, 0, sizeof ops);
        for (int i = 1; i < nw; i++) {
            char kind = w[i][0], *p = w[i] + 2;
            uint64_t v[4] = {0};
            for (int k = 0; k < 4 && *p; k++) {
                if (k == 2 && kind == 'u') {
                    v[2] = *p == 'z';
                    break;
                }
                v[k] = strtoull(p, &p, 0);
                if (*p == ':')
                    p++;
            }
            ops[i - 1].type = kind == 'm' ? VIDMM_VA_UPDATE_MAP : kind == 'u' ? VIDMM_VA_UPDATE_UNMAP
                            : kind == 'c' ? VIDMM_VA_UPDATE_COPY : 9;
            ops[i - 1].va = v[0] * KiB;
            ops[i - 1].size = v[1] * KiB;
            if (kind == 'm') {
                ops[i - 1].object = v[2];
                ops[i - 1].object_offset = v[3] * KiB;
            } else if (kind == 'u') {
                ops[i - 1].mode = (uint32_t)v[2];
            } else {
                ops[i - 1].src = v[2] * KiB;
            }
        }
        st = vidmm_va_update(vs, ops, (size_t)(nw - 1));
    }
    if (out)
        *out = va;
    return st;
}

static vidmm_status run_script(struct vidmm_va_space *vs, const char *script, uint64_t *out)
{
    char buf[512];
    vidmm_status st = VIDMM_OK;
    snprintf(buf, sizeof buf, "%s", script);
    for (char *save = NULL, *c = strtok_r(buf, ";", &save); c; c = strtok_r(NULL, ";", &save)) {
        st = run_cmd(vs, c, out);
        if (st != VIDMM_OK)
            break;
    }
    return st;
}

/* ---- the split / merge / overlap table --------------------------------------------- */

struct va_case {
    const char *name;
    const char *setup;   /* must succeed */
    const char *op;
    vidmm_status want;
    const char *ranges;  /* afterwards (for a failure: the setup's, unchanged) */
    const char *steps;   /* emitted by op */
};

static const struct va_case cases[] = {
    /* --- map outside reservations (drm_gpuvm sm_map cases) --- */
    {"map.into_hole", "", "map 128 16 1 0", VIDMM_OK, "M 128+16 o1@0", "map(M 128+16 o1@0)"},
    {"map.same_range_replaces", "map 128 16 1 0", "map 128 16 2 8", VIDMM_OK, "M 128+16 o2@8",
     "unmap(M 128+16 o1@0); map(M 128+16 o2@8)"},
    {"map.inside_splits", "map 128 64 1 0", "map 144 16 2 0", VIDMM_OK,
     "M 128+16 o1@0, M 144+16 o2@0, M 160+32 o1@32",
     "remap(M 128+64 o1@0 prev 16 next 32); map(M 144+16 o2@0)"},
    {"map.covers_head", "map 128 64 1 0", "map 128 16 2 0", VIDMM_OK, "M 128+16 o2@0, M 144+48 o1@16",
     "remap(M 128+64 o1@0 prev 0 next 48); map(M 128+16 o2@0)"},
    {"map.covers_tail", "map 128 64 1 0", "map 176 16 2 0", VIDMM_OK, "M 128+48 o1@0, M 176+16 o2@0",
     "remap(M 128+64 o1@0 prev 48 next 0); map(M 176+16 o2@0)"},
    {"map.cuts_two", "map 128 32 1 0; map 160 32 2 0", "map 144 32 3 0", VIDMM_OK,
     "M 128+16 o1@0, M 144+32 o3@0, M 176+16 o2@16",
     "remap(M 128+32 o1@0 prev 16 next 0); remap(M 160+32 o2@0 prev 0 next 16); map(M 144+32 o3@0)"},
    {"map.superset_with_holes", "map 132 8 1 0; map 160 4 2 0", "map 128 64 3 0", VIDMM_OK, "M 128+64 o3@0",
     "unmap(M 132+8 o1@0); unmap(M 160+4 o2@0); map(M 128+64 o3@0)"},
    {"map.hole_then_head", "map 160 32 1 0", "map 128 48 2 0", VIDMM_OK, "M 128+48 o2@0, M 176+16 o1@16",
     "remap(M 160+32 o1@0 prev 0 next 16); map(M 128+48 o2@0)"},
    {"map.adjacent_not_merged", "map 128 16 1 0", "map 144 16 1 16", VIDMM_OK, "M 128+16 o1@0, M 144+16 o1@16",
     "map(M 144+16 o1@16)"},
    {"map.prot_kept", "", "map 128 16 1 0 ro nx", VIDMM_OK, "M 128+16 o1@0 ro nx", "map(M 128+16 o1@0 ro nx)"},
    {"map.anywhere_lowest_hole", "map 64 8 1 0; map 80 16 1 0", "mapany 0 0 8 2 0", VIDMM_OK,
     "M 64+8 o1@0, M 72+8 o2@0, M 80+16 o1@0", "map(M 72+8 o2@0)"},
    {"map.anywhere_in_window", "map 64 8 1 0", "mapany 1024 2048 8 2 0", VIDMM_OK, "M 64+8 o1@0, M 1024+8 o2@0",
     "map(M 1024+8 o2@0)"},
    /* --- map into reservations --- */
    {"map.res_middle", "res 128 192 n", "map 192 64 1 0", VIDMM_OK, "Rn 128+64, M 192+64 o1@0 rn, Rn 256+64",
     "remap(Rn 128+192 prev 64 next 64); map(M 192+64 o1@0 rn)"},
    {"map.res_head", "res 128 192 z", "map 128 4 1 0", VIDMM_OK, "M 128+4 o1@0 rz, Rz 132+188",
     "remap(Rz 128+192 prev 0 next 188); map(M 128+4 o1@0 rz)"},
    {"map.res_whole", "res 128 64 n", "map 128 64 1 0", VIDMM_OK, "M 128+64 o1@0 rn",
     "unmap(Rn 128+64); map(M 128+64 o1@0 rn)"},
    {"map.res_over_mapping", "res 128 192 n; map 192 64 1 0", "map 160 64 2 0", VIDMM_OK,
     "Rn 128+32, M 160+64 o2@0 rn, M 224+32 o1@32 rn, Rn 256+64",
     "remap(Rn 128+64 prev 32 next 0); remap(M 192+64 o1@0 rn prev 0 next 32); map(M 160+64 o2@0 rn)"},
    {"map.res_two_modes_takes_first", "res 128 64 z; res 192 64 n", "map 176 32 1 0", VIDMM_OK,
     "Rz 128+48, M 176+32 o1@0 rz, Rn 208+48",
     "remap(Rz 128+64 prev 48 next 0); remap(Rn 192+64 prev 0 next 48); map(M 176+32 o1@0 rz)"},
    {"map.res_and_hole_busy", "res 128 64 n", "map 176 32 1 0", VIDMM_E_BUSY, "Rn 128+64", ""},
    {"map.res_and_plain_busy", "res 128 64 n; map 192 16 1 0", "map 176 32 2 0", VIDMM_E_BUSY,
     "Rn 128+64, M 192+16 o1@0", ""},
    {"map.anywhere_skips_reservations", "res 64 64 n", "mapany 0 0 4 1 0", VIDMM_OK, "Rn 64+64, M 128+4 o1@0",
     "map(M 128+4 o1@0)"},
    /* --- unmap --- */
    {"unmap.whole", "map 128 16 1 0", "unmap 128 16", VIDMM_OK, "", "unmap(M 128+16 o1@0)"},
    {"unmap.middle", "map 128 64 1 0", "unmap 144 16", VIDMM_OK, "M 128+16 o1@0, M 160+32 o1@32",
     "remap(M 128+64 o1@0 prev 16 next 32)"},
    {"unmap.head", "map 128 64 1 4", "unmap 128 16", VIDMM_OK, "M 144+48 o1@20",
     "remap(M 128+64 o1@4 prev 0 next 48)"},
    {"unmap.tail", "map 128 64 1 0", "unmap 176 16", VIDMM_OK, "M 128+48 o1@0",
     "remap(M 128+64 o1@0 prev 48 next 0)"},
    {"unmap.across_two_and_hole", "map 128 32 1 0; map 176 32 2 0", "unmap 144 48", VIDMM_OK,
     "M 128+16 o1@0, M 192+16 o2@16",
     "remap(M 128+32 o1@0 prev 16 next 0); remap(M 176+32 o2@0 prev 0 next 16)"},
    {"unmap.res_whole_merges_back", "res 128 192 n; map 192 64 1 0", "unmap 192 64", VIDMM_OK, "Rn 128+192",
     "unmap(M 192+64 o1@0 rn); map(Rn 192+64)"},
    {"unmap.res_part", "res 64 192 n; map 128 64 1 0", "unmap 128 16", VIDMM_OK,
     "Rn 64+80, M 144+48 o1@16 rn, Rn 192+64", "remap(M 128+64 o1@0 rn prev 0 next 48); map(Rn 128+16)"},
    {"unmap.res_middle", "res 64 192 z; map 128 64 1 0", "unmap 144 16", VIDMM_OK,
     "Rz 64+64, M 128+16 o1@0 rz, Rz 144+16, M 160+32 o1@32 rz, Rz 192+64",
     "remap(M 128+64 o1@0 rz prev 16 next 32); map(Rz 144+16)"},
    {"unmap.only_reserved_noop", "res 128 64 n", "unmap 128 64", VIDMM_OK, "Rn 128+64", ""},
    {"unmap.hole_noop", "", "unmap 128 64", VIDMM_OK, "", ""},
    /* --- reserve --- */
    {"res.fixed", "", "res 128 64 n", VIDMM_OK, "Rn 128+64", "map(Rn 128+64)"},
    {"res.adjacent_same_mode_merges", "res 128 64 n", "res 192 64 n", VIDMM_OK, "Rn 128+128", "map(Rn 192+64)"},
    {"res.adjacent_other_mode", "res 128 64 n", "res 192 64 z", VIDMM_OK, "Rn 128+64, Rz 192+64", "map(Rz 192+64)"},
    {"res.overlap_busy", "res 128 128 n", "res 192 128 n", VIDMM_E_BUSY, "Rn 128+128", ""},
    {"res.over_mapping_busy", "map 200 4 1 0", "res 192 64 n", VIDMM_E_BUSY, "M 200+4 o1@0", ""},
    {"res.anywhere_lowest", "res 64 64 n; map 132 4 1 0", "resany 0 0 64 z", VIDMM_OK,
     "Rn 64+64, M 132+4 o1@0, Rz 192+64", "map(Rz 192+64)"},
    {"res.anywhere_window", "", "resany 1024 4096 128 n", VIDMM_OK, "Rn 1024+128", "map(Rn 1024+128)"},
    {"res.anywhere_too_big", "", "resany 1024 1088 128 n", VIDMM_E_NO_SEGMENT_SPACE, "", ""},
    /* --- free --- */
    {"free.reservation", "res 128 64 n", "free 128 64", VIDMM_OK, "", "unmap(Rn 128+64)"},
    {"free.res_middle", "res 128 192 n", "free 192 64", VIDMM_OK, "Rn 128+64, Rn 256+64",
     "remap(Rn 128+192 prev 64 next 64)"},
    {"free.res_with_mapping", "res 128 128 n; map 160 32 1 0", "free 128 128", VIDMM_OK, "",
     "unmap(Rn 128+32); unmap(M 160+32 o1@0 rn); unmap(Rn 192+64)"},
    {"free.plain_mapping_4k", "map 128 64 1 0", "free 132 4", VIDMM_OK, "M 128+4 o1@0, M 136+56 o1@8",
     "remap(M 128+64 o1@0 prev 4 next 56)"},
    {"free.hole_invalid", "res 128 64 n", "free 128 128", VIDMM_E_INVALID_ARG, "Rn 128+64", ""},
    {"free.res_unaligned", "res 128 64 n", "free 132 4", VIDMM_E_ALIGNMENT, "Rn 128+64", ""},
    /* --- update --- */
    {"upd.map_unmap", "res 128 256 n", "upd m:192:64:1:0 u:208:16:z", VIDMM_OK,
     "Rn 128+64, M 192+16 o1@0 rn, Rz 208+16, M 224+32 o1@32 rn, Rn 256+128",
     "remap(Rn 128+256 prev 64 next 128); map(M 192+64 o1@0 rn); "
     "remap(M 192+64 o1@0 rn prev 16 next 32); map(Rz 208+16)"},
    {"upd.copy", "res 128 256 n; map 128 32 5 64 ro", "upd c:256:64:128", VIDMM_OK,
     "M 128+32 o5@64 rn ro, Rn 160+96, M 256+32 o5@64 rn ro, Rn 288+96",
     "remap(Rn 160+224 prev 96 next 96); map(M 256+32 o5@64 rn ro)"},
    {"upd.copy_overlapping", "res 128 128 n; map 128 32 5 0", "upd c:144:64:128", VIDMM_OK,
     "M 128+16 o5@0 rn, M 144+32 o5@0 rn, Rn 176+80",
     "remap(M 128+32 o5@0 rn prev 16 next 0); remap(Rn 160+96 prev 0 next 80); map(M 144+32 o5@0 rn)"},
    {"upd.in_order", "res 128 128 n", "upd m:128:64:1:0 m:160:64:2:0 u:128:16:n", VIDMM_OK,
     "Rn 128+16, M 144+16 o1@16 rn, M 160+64 o2@0 rn, Rn 224+32",
     "remap(Rn 128+128 prev 0 next 64); map(M 128+64 o1@0 rn); remap(M 128+64 o1@0 rn prev 32 next 0); "
     "remap(Rn 192+64 prev 0 next 32); map(M 160+64 o2@0 rn); remap(M 128+32 o1@0 rn prev 0 next 16); "
     "map(Rn 128+16)"},
    {"upd.outside_reservation", "res 128 64 n", "upd m:128:16:1:0 m:192:16:1:0", VIDMM_E_INVALID_ARG,
     "Rn 128+64", ""},
    {"upd.two_reservations", "res 128 64 n; res 256 64 n", "upd m:128:16:1:0 m:256:16:1:0",
     VIDMM_E_INVALID_ARG, "Rn 128+64, Rn 256+64", ""},
    {"upd.bad_op_nothing_applied", "res 128 64 n", "upd m:128:16:1:0 m:132:6:1:0", VIDMM_E_ALIGNMENT,
     "Rn 128+64", ""},
    {"upd.plain_mapping_invalid", "map 128 64 1 0", "upd u:128:16:n", VIDMM_E_INVALID_ARG, "M 128+64 o1@0", ""},
    /* --- unmap_object --- */
    {"uobj.in_and_out", "res 128 128 n; map 160 16 7 0; map 512 8 7 4; map 520 8 8 0", "uobj 7", VIDMM_OK,
     "Rn 128+128, M 520+8 o8@0", NULL},
    {"uobj.unknown", "map 128 16 1 0", "uobj 9", VIDMM_OK, "M 128+16 o1@0", ""},
};

static void table(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct va_case *c = &cases[i];
        struct vidmm_va_space vs;
        struct step_log log;
        char got[2048], before[2048];
        memset(&log, 0, sizeof log);
        T_ST(vidmm_va_space_init(&vs, vidmm_default_host_allocator(), 32), VIDMM_OK);
        vidmm_status st = run_script(&vs, c->setup, NULL);
        if (st != VIDMM_OK)
            fprintf(stderr, "  case %s: setup failed\n", c->name);
        T_ST(st, VIDMM_OK);
        fmt_ranges(&vs, before, sizeof before);
        vidmm_va_space_set_step_fn(&vs, log_step, &log);
        st = run_script(&vs, c->op, NULL);
        fmt_ranges(&vs, got, sizeof got);
        int bad = st != c->want || strcmp(got, c->ranges) || (c->steps && strcmp(log.text, c->steps)) ||
                  vidmm_va_space_check(&vs) != 0 || (st != VIDMM_OK && strcmp(got, before));
        if (bad)
            fprintf(stderr, "  case %s: status %s (want %s)\n    ranges %s\n    want   %s\n    steps  %s\n    want   %s\n",
                    c->name, vidmm_status_str(st), vidmm_status_str(c->want), got, c->ranges, log.text,
                    c->steps ? c->steps : "(any)");
        T_CHECK(!bad);
        vidmm_va_space_fini(&vs);
    }
}

/* ---- bad inputs: exact status, nothing changed ------------------------------------- */

static void bad_inputs(void)
{
    struct vidmm_va_space vs;
    const struct vidmm_host_allocator *ha = vidmm_default_host_allocator();
    uint64_t va = 0;
    char before[1024], after[1024];
    T_ST(vidmm_va_space_init(NULL, ha, 32), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_va_space_init(&vs, ha, 19), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_va_space_init(&vs, ha, 64), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_va_space_init(&vs, ha, 32), VIDMM_OK);
    T_ST(run_script(&vs, "res 128 128 n; map 160 16 1 0; map 1024 64 2 0", NULL), VIDMM_OK);
    fmt_ranges(&vs, before, sizeof before);
    const uint64_t top = UINT64_C(1) << 32;
    /* reserve */
    T_ST(vidmm_va_reserve(&vs, 512 * KiB, 0, 0, 0, 0, &va), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_va_reserve(&vs, 512 * KiB, 0, 0, 64 * KiB, 2, &va), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_va_reserve(&vs, 512 * KiB, 0, 0, 64 * KiB, 0, NULL), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_va_reserve(&vs, 516 * KiB, 0, 0, 64 * KiB, 0, &va), VIDMM_E_ALIGNMENT);
    T_ST(vidmm_va_reserve(&vs, 512 * KiB, 0, 0, 60 * KiB, 0, &va), VIDMM_E_ALIGNMENT);
    T_ST(vidmm_va_reserve(&vs, 0, 0, 0, 60 * KiB, 0, &va), VIDMM_E_ALIGNMENT);
    T_ST(vidmm_va_reserve(&vs, 0, 4 * KiB, 0, 64 * KiB, 0, &va), VIDMM_E_ALIGNMENT);
    T_ST(vidmm_va_reserve(&vs, top - 64 * KiB, 0, 0, UINT64_MAX - 0xFFFF, 0, &va), VIDMM_E_OVERFLOW);
    T_ST(vidmm_va_reserve(&vs, top, 0, 0, 64 * KiB, 0, &va), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_va_reserve(&vs, top - 64 * KiB, 0, 0, 128 * KiB, 0, &va), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_va_reserve(&vs, 192 * KiB, 0, 0, 64 * KiB, 0, &va), VIDMM_E_BUSY);
    T_ST(vidmm_va_reserve(&vs, 0, 2 * MiB, 1 * MiB, 64 * KiB, 0, &va), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_va_reserve(&vs, 0, 0, 0, top, 0, &va), VIDMM_E_NO_SEGMENT_SPACE);
    T_ST(vidmm_va_reserve(&vs, 0, 128 * KiB, 256 * KiB, 64 * KiB, 0, &va), VIDMM_E_NO_SEGMENT_SPACE);
    /* VA page 0 / the guard granule is never valid */
    T_ST(vidmm_va_map(&vs, 0x1000, 0, 0, 4 * KiB, 1, 0, 0, 0, &va), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_va_reserve(&vs, 0, 0, 64 * KiB, 64 * KiB, 0, &va), VIDMM_E_INVALID_ARG);
    /* map */
    T_ST(vidmm_va_map(&vs, 512 * KiB, 0, 0, 0, 1, 0, 0, 0, &va), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_va_map(&vs, 512 * KiB, 0, 0, 4 * KiB, 0, 0, 0, 0, &va), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_va_map(&vs, 512 * KiB, 0, 0, 4 * KiB, 1, 0, 4, 0, &va), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_va_map(&vs, 512 * KiB + 1, 0, 0, 4 * KiB, 1, 0, 0, 0, &va), VIDMM_E_ALIGNMENT);
    T_ST(vidmm_va_map(&vs, 512 * KiB, 0, 0, 4 * KiB + 2, 1, 0, 0, 0, &va), VIDMM_E_ALIGNMENT);
    T_ST(vidmm_va_map(&vs, 512 * KiB, 0, 0, 4 * KiB, 1, 100, 0, 0, &va), VIDMM_E_ALIGNMENT);
    T_ST(vidmm_va_map(&vs, 0, 100, 0, 4 * KiB, 1, 0, 0, 0, &va), VIDMM_E_ALIGNMENT);
    T_ST(vidmm_va_map(&vs, 512 * KiB, 0, 0, 4 * KiB, 1, UINT64_MAX & ~UINT64_C(0xFFF), 0, 0, &va),
         VIDMM_E_OVERFLOW);
    T_ST(vidmm_va_map(&vs, top - 4 * KiB, 0, 0, 8 * KiB, 1, 0, 0, 0, &va), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_va_map(&vs, 240 * KiB, 0, 0, 32 * KiB, 1, 0, 0, 0, &va), VIDMM_E_BUSY); /* reserved + hole */
    T_ST(vidmm_va_map(&vs, 0, 128 * KiB, 256 * KiB, 4 * KiB, 1, 0, 0, 0, &va), VIDMM_E_NO_SEGMENT_SPACE);
    /* unmap / free */
    T_ST(vidmm_va_unmap(&vs, 160 * KiB, 0), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_va_unmap(&vs, 162 * KiB, 4 * KiB), VIDMM_E_ALIGNMENT);
    T_ST(vidmm_va_unmap(&vs, 0, 4 * KiB), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_va_unmap(&vs, top - 4 * KiB, UINT64_MAX & ~UINT64_C(0xFFF)), VIDMM_E_OVERFLOW);
    T_ST(vidmm_va_unmap(NULL, 160 * KiB, 4 * KiB), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_va_free(&vs, 128 * KiB, 0), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_va_free(&vs, 128 * KiB, 192 * KiB), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_va_free(&vs, 160 * KiB, 16 * KiB), VIDMM_E_ALIGNMENT);
    T_ST(vidmm_va_free(&vs, 0, 64 * KiB), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_va_unmap_object(&vs, 0), VIDMM_E_INVALID_ARG);
    /* update */
    struct vidmm_va_update_op op;
    memset(&op, 0, sizeof op);
    T_ST(vidmm_va_update(&vs, NULL, 1), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_va_update(&vs, NULL, 0), VIDMM_OK);
    op.type = 7, op.va = 128 * KiB, op.size = 4 * KiB;
    T_ST(vidmm_va_update(&vs, &op, 1), VIDMM_E_INVALID_ARG);
    op.type = VIDMM_VA_UPDATE_MAP; /* object 0 */
    T_ST(vidmm_va_update(&vs, &op, 1), VIDMM_E_INVALID_ARG);
    op.object = 1, op.prot = 8;
    T_ST(vidmm_va_update(&vs, &op, 1), VIDMM_E_INVALID_ARG);
    op.prot = 0, op.object_offset = 12;
    T_ST(vidmm_va_update(&vs, &op, 1), VIDMM_E_ALIGNMENT);
    op.object_offset = 0, op.size = 0;
    T_ST(vidmm_va_update(&vs, &op, 1), VIDMM_E_INVALID_ARG);
    op.type = VIDMM_VA_UPDATE_UNMAP, op.size = 4 * KiB, op.mode = 5;
    T_ST(vidmm_va_update(&vs, &op, 1), VIDMM_E_INVALID_ARG);
    op.type = VIDMM_VA_UPDATE_COPY, op.src = 1024 * KiB; /* source not reserved */
    T_ST(vidmm_va_update(&vs, &op, 1), VIDMM_E_INVALID_ARG);
    op.src = 0;
    T_ST(vidmm_va_update(&vs, &op, 1), VIDMM_E_INVALID_ARG);
    fmt_ranges(&vs, after, sizeof after);
    T_CHECK(!strcmp(before, after));
    T_EQ(vidmm_va_space_check(&vs), 0);
    vidmm_va_space_fini(&vs);
}

/* ---- lookup, iteration, anywhere placement at scale ---------------------------------- */

static void lookup_and_placement(void)
{
    struct vidmm_va_space vs;
    uint64_t va;
    T_ST(vidmm_va_space_init(&vs, vidmm_default_host_allocator(), 40), VIDMM_OK);
    T_CHECK(vidmm_va_lookup(&vs, 64 * KiB) == NULL);
    T_CHECK(vidmm_va_first(&vs) == NULL);
    /* 2000 reservations of 64 KiB, then free every other: the holes are all
     * 64 KiB, so a 128 KiB request must go past all of them. */
    for (int i = 0; i < 2000; i++) {
        T_ST(vidmm_va_reserve(&vs, 0, 0, 0, 64 * KiB, 0, &va), VIDMM_OK);
        T_EQ_U64(va, 64 * KiB * (uint64_t)(i + 1));
    }
    T_EQ(vidmm_va_space_check(&vs), 0);
    T_EQ_U64(vs.range_count, 1); /* one mode, adjacent: merged */
    for (int i = 0; i < 2000; i += 2)
        T_ST(vidmm_va_free(&vs, 64 * KiB * (uint64_t)(i + 1), 64 * KiB), VIDMM_OK);
    T_EQ_U64(vs.range_count, 1000);
    T_EQ(vidmm_va_space_check(&vs), 0);
    T_ST(vidmm_va_reserve(&vs, 0, 0, 0, 128 * KiB, 1, &va), VIDMM_OK);
    T_EQ_U64(va, 64 * KiB * 2001);
    T_ST(vidmm_va_reserve(&vs, 0, 640 * KiB, 0, 64 * KiB, 1, &va), VIDMM_OK);
    T_EQ_U64(va, 640 * KiB + 64 * KiB);  /* first hole at or above min */
    /* A 4 KiB-granular hole too misaligned for 64 KiB: map leaves 60 KiB holes. */
    T_ST(vidmm_va_map(&vs, 0, 0, 0, 4 * KiB, 9, 0, 0, 0, &va), VIDMM_OK);
    T_EQ_U64(va, 64 * KiB);
    T_ST(vidmm_va_reserve(&vs, 0, 0, 0, 64 * KiB, 0, &va), VIDMM_OK);
    T_EQ_U64(va, 64 * KiB * 3); /* [68 KiB, 128 KiB) holds no aligned 64 KiB */
    const struct vidmm_va_range *r = vidmm_va_lookup(&vs, 64 * KiB + 100);
    T_CHECK(r && r->d.state == VIDMM_VA_MAPPED && r->d.object == 9);
    T_CHECK(vidmm_va_lookup(&vs, 68 * KiB) == NULL);
    r = vidmm_va_first_from(&vs, 68 * KiB);
    T_CHECK(r && r->d.va == 128 * KiB);
    uint64_t n = 0, last = 0;
    for (r = vidmm_va_first(&vs); r; r = vidmm_va_next(&vs, r), n++) {
        T_CHECK(r->d.va >= last);
        last = r->d.va + r->d.size;
    }
    T_EQ_U64(n, vs.range_count);
    T_EQ_U64(vidmm_va_object_mapping_count(&vs, 9), 1);
    T_EQ(vidmm_va_space_check(&vs), 0);
    vidmm_va_space_fini(&vs);
}

/* ---- unmap_object ------------------------------------------------------------------- */

static void unmap_object(void)
{
    struct vidmm_va_space vs;
    uint64_t va;
    T_ST(vidmm_va_space_init(&vs, vidmm_default_host_allocator(), 32), VIDMM_OK);
    /* 300 objects, each mapped 1..4 times, some in reservations. */
    T_ST(vidmm_va_reserve(&vs, 64 * MiB, 0, 0, 64 * MiB, 1, &va), VIDMM_OK);
    uint64_t expect[301] = {0};
    uint64_t seed = t_seed() ^ 0x55;
    for (int i = 0; i < 900; i++) {
        uint64_t obj = 1 + t_rand_range(&seed, 300);
        uint64_t at = 64 * MiB + (uint64_t)i * 64 * KiB;
        if (i & 1)
            T_ST(vidmm_va_map(&vs, at, 0, 0, 16 * KiB, obj, 0, 0, 0, &va), VIDMM_OK);
        else
            T_ST(vidmm_va_map(&vs, 0, 0, 0, 8 * KiB, obj, 4 * KiB, 0, 0, &va), VIDMM_OK);
        expect[obj]++;
    }
    T_EQ(vidmm_va_space_check(&vs), 0);
    for (uint64_t o = 1; o <= 300; o++)
        T_EQ_U64(vidmm_va_object_mapping_count(&vs, o), expect[o]);
    /* Split one mapping: the tail joins the object's list. */
    const struct vidmm_va_range *r = vidmm_va_lookup(&vs, 64 * MiB + 64 * KiB);
    uint64_t obj = r->d.object;
    T_ST(vidmm_va_unmap(&vs, 64 * MiB + 68 * KiB, 4 * KiB), VIDMM_OK);
    T_EQ_U64(vidmm_va_object_mapping_count(&vs, obj), expect[obj] + 1);
    for (uint64_t o = 1; o <= 300; o++) {
        T_ST(vidmm_va_unmap_object(&vs, o), VIDMM_OK);
        T_EQ_U64(vidmm_va_object_mapping_count(&vs, o), 0);
        if (o % 50 == 0)
            T_EQ(vidmm_va_space_check(&vs), 0);
    }
    T_EQ_U64(vs.mapped_count, 0);
    T_EQ_U64(vs.range_count, 1); /* the reservation is whole again */
    T_EQ(vidmm_va_space_check(&vs), 0);
    vidmm_va_space_fini(&vs);
}

/* ---- per-object iteration ----------------------------------------------------------------- */

/* Objects 1..nobj (and one never mapped): vidmm_va_object_first/next must
 * visit exactly the MAPPED ranges of the object that an address-order scan
 * finds, each once, as the very records lookup returns.  Returns the
 * number of disagreements. */
static int obj_iter_agrees(const struct vidmm_va_space *vs, uint64_t nobj)
{
    int bad = 0;
    if (vidmm_va_object_first(vs, 0) != NULL)
        bad++;
    for (uint64_t o = 1; o <= nobj + 1; o++) {
        uint64_t scan = 0, seen = 0, sum = 0, scan_sum = 0;
        for (const struct vidmm_va_range *r = vidmm_va_first(vs); r; r = vidmm_va_next(vs, r))
            if (r->d.state == VIDMM_VA_MAPPED && r->d.object == o) {
                scan++;
                scan_sum += r->d.va;
            }
        for (const struct vidmm_va_range *r = vidmm_va_object_first(vs, o); r && seen <= scan;
             r = vidmm_va_object_next(vs, r)) {
            seen++;
            sum += r->d.va;
            if (r->d.state != VIDMM_VA_MAPPED || r->d.object != o || vidmm_va_lookup(vs, r->d.va) != r)
                bad++;
        }
        /* Distinct ranges of one object have distinct starts, so with
         * equal counts and every visit a live range of the object, equal
         * sums of starts rule out a repeat standing in for a miss. */
        if (seen != scan || sum != scan_sum || vidmm_va_object_mapping_count(vs, o) != scan)
            bad++;
        if (!scan && vidmm_va_object_first(vs, o) != NULL)
            bad++;
    }
    return bad;
}

static void object_iteration(void)
{
    struct vidmm_va_space vs;
    uint64_t va;
    T_ST(vidmm_va_space_init(&vs, vidmm_default_host_allocator(), 32), VIDMM_OK);
    T_CHECK(vidmm_va_object_first(&vs, 1) == NULL);
    /* A reservation, and plain mappings outside it. */
    T_ST(vidmm_va_reserve(&vs, 64 * MiB, 0, 0, 16 * MiB, 0, &va), VIDMM_OK);
    for (uint64_t i = 0; i < 40; i++)
        T_ST(vidmm_va_map(&vs, 4 * MiB + i * 128 * KiB, 0, 0, 64 * KiB, 1 + i % 4, i * 4 * KiB, 0, 0, &va),
             VIDMM_OK);
    for (uint64_t i = 0; i < 20; i++)
        T_ST(vidmm_va_map(&vs, 64 * MiB + i * 256 * KiB, 0, 0, 128 * KiB, 1 + i % 5, 0, 0, 0, &va), VIDMM_OK);
    T_EQ(obj_iter_agrees(&vs, 5), 0);
    /* Splits: cut the middle of several mappings (their tails join the lists). */
    for (uint64_t i = 0; i < 40; i += 3)
        T_ST(vidmm_va_unmap(&vs, 4 * MiB + i * 128 * KiB + 16 * KiB, 8 * KiB), VIDMM_OK);
    T_EQ(obj_iter_agrees(&vs, 5), 0);
    /* A map across two mappings cuts both; an exact map replaces one. */
    T_ST(vidmm_va_map(&vs, 4 * MiB + 32 * KiB, 0, 0, 128 * KiB, 2, 0, 0, 0, &va), VIDMM_OK);
    T_ST(vidmm_va_map(&vs, 4 * MiB + 10 * 128 * KiB, 0, 0, 64 * KiB, 3, 0, 0, 0, &va), VIDMM_OK);
    T_EQ(obj_iter_agrees(&vs, 5), 0);
    /* Whole unmaps, an update inside the reservation, a free, unmap_object. */
    T_ST(vidmm_va_unmap(&vs, 4 * MiB + 20 * 128 * KiB, 8 * 128 * KiB), VIDMM_OK);
    struct vidmm_va_update_op op[2];
    memset(op, 0, sizeof op);
    op[0].type = VIDMM_VA_UPDATE_COPY, op[0].va = 64 * MiB + 8 * MiB, op[0].size = 1 * MiB, op[0].src = 64 * MiB;
    op[1].type = VIDMM_VA_UPDATE_UNMAP, op[1].va = 64 * MiB + 64 * KiB, op[1].size = 8 * KiB;
    T_ST(vidmm_va_update(&vs, op, 2), VIDMM_OK);
    T_EQ(obj_iter_agrees(&vs, 5), 0);
    T_ST(vidmm_va_free(&vs, 64 * MiB, 1 * MiB), VIDMM_OK);
    T_EQ(obj_iter_agrees(&vs, 5), 0);
    T_ST(vidmm_va_unmap_object(&vs, 4), VIDMM_OK);
    T_CHECK(vidmm_va_object_first(&vs, 4) == NULL);
    T_EQ(obj_iter_agrees(&vs, 5), 0);
    /* Iterating while nothing changes, then changing from a collected list. */
    const struct vidmm_va_range *got[64];
    int n = 0;
    for (const struct vidmm_va_range *r = vidmm_va_object_first(&vs, 1); r && n < 64; r = vidmm_va_object_next(&vs, r))
        got[n++] = r;
    T_EQ_U64((uint64_t)n, vidmm_va_object_mapping_count(&vs, 1));
    uint64_t spans[64][2];
    for (int i = 0; i < n; i++)
        spans[i][0] = got[i]->d.va, spans[i][1] = got[i]->d.size;
    for (int i = 0; i < n; i++)
        T_ST(vidmm_va_unmap(&vs, spans[i][0], spans[i][1]), VIDMM_OK);
    T_CHECK(vidmm_va_object_first(&vs, 1) == NULL);
    T_EQ(obj_iter_agrees(&vs, 5), 0);
    T_EQ(vidmm_va_space_check(&vs), 0);
    vidmm_va_space_fini(&vs);
}

/* ---- a deep tree: splits, merges and rebalancing at every level --------------------------- */

#define S_PAGES (UINT64_C(512) * MiB / VIDMM_VA_PAGE) /* the region [1 GiB, 1.5 GiB) */

static uint32_t s_obj[S_PAGES], s_off[S_PAGES]; /* per page: object (0 = free), offset in pages */

static int s_compare(const struct vidmm_va_space *vs)
{
    static uint32_t got[S_PAGES];
    int bad = 0;
    uint64_t prev_end = 0;
    memset(got, 0, sizeof got);
    for (const struct vidmm_va_range *r = vidmm_va_first(vs); r; r = vidmm_va_next(vs, r)) {
        if (r->d.state != VIDMM_VA_MAPPED || r->d.va < GiB || r->d.va + r->d.size > GiB + S_PAGES * VIDMM_VA_PAGE ||
            r->d.va < prev_end)
            return 1;
        prev_end = r->d.va + r->d.size;
        for (uint64_t p = (r->d.va - GiB) / VIDMM_VA_PAGE, i = 0; i < r->d.size / VIDMM_VA_PAGE; i++, p++) {
            got[p] = 1;
            bad += s_obj[p] != r->d.object || s_off[p] != r->d.object_offset / VIDMM_VA_PAGE + i;
        }
    }
    for (uint64_t p = 0; p < S_PAGES; p++)
        bad += !got[p] && s_obj[p];
    return bad;
}

/* The lowest page-aligned fit of `pages` free pages at or above page lo. */
static int s_find(uint64_t lo, uint64_t pages, uint64_t *out)
{
    for (uint64_t p = lo, run = 0; p < S_PAGES; p++) {
        run = s_obj[p] ? 0 : run + 1;
        if (run == pages) {
            *out = p + 1 - pages;
            return 1;
        }
    }
    return 0;
}

static void tree_shape(void)
{
    struct vidmm_va_space vs;
    uint64_t seed = t_seed() ^ 0x7ee, va, obj = 1;
    const uint64_t region = S_PAGES * VIDMM_VA_PAGE;
    T_ST(vidmm_va_space_init(&vs, vidmm_default_host_allocator(), 40), VIDMM_OK);
    memset(s_obj, 0, sizeof s_obj);
    memset(s_off, 0, sizeof s_off);
    int bad = 0;
    /* Grow to ~20 K ranges (a tree four or five levels deep), churning. */
    for (int i = 0; i < 60000 && !bad; i++) {
        uint64_t pages = 1 + t_rand_range(&seed, 8), p = t_rand_range(&seed, S_PAGES - pages + 1);
        unsigned k = (unsigned)t_rand_range(&seed, 10);
        if (i > 30000 && k == 0) { /* map anywhere above a random floor: the lowest fit */
            uint64_t at, lo = t_rand_range(&seed, S_PAGES / 2);
            int fit = s_find(lo, pages, &at);
            vidmm_status st = vidmm_va_map(&vs, 0, GiB + lo * VIDMM_VA_PAGE, GiB + region, pages * VIDMM_VA_PAGE,
                                           obj, 0, 0, 0, &va);
            if (st != (fit ? VIDMM_OK : VIDMM_E_NO_SEGMENT_SPACE) || (fit && va != GiB + at * VIDMM_VA_PAGE))
                bad++;
            p = at;
            if (!fit)
                continue;
        } else if (k < 7) {
            bad += vidmm_va_map(&vs, GiB + p * VIDMM_VA_PAGE, 0, 0, pages * VIDMM_VA_PAGE, obj, 0, 0, 0, &va) !=
                   VIDMM_OK;
        } else {
            bad += vidmm_va_unmap(&vs, GiB + p * VIDMM_VA_PAGE, pages * VIDMM_VA_PAGE) != VIDMM_OK;
            for (uint64_t q = p; q < p + pages; q++)
                s_obj[q] = 0;
            continue;
        }
        for (uint64_t q = 0; q < pages; q++) {
            s_obj[p + q] = (uint32_t)obj;
            s_off[p + q] = (uint32_t)q;
        }
        obj++;
        if (i % 5000 == 4999) {
            bad += vidmm_va_space_check(&vs) != 0;
            bad += s_compare(&vs) != 0;
        }
    }
    T_EQ(bad, 0);
    T_CHECK(vs.height >= 3);
    T_CHECK(vs.range_count > 10000);
    /* Big unmaps drain whole subtrees from one side, next to untouched
     * full ones (inner nodes then borrow children), and refill. */
    for (int i = 0; i < 24 && !bad; i++) {
        uint64_t pages = S_PAGES / 64 + t_rand_range(&seed, S_PAGES / 8), p = t_rand_range(&seed, S_PAGES - pages);
        bad += vidmm_va_unmap(&vs, GiB + p * VIDMM_VA_PAGE, pages * VIDMM_VA_PAGE) != VIDMM_OK;
        for (uint64_t q = p; q < p + pages; q++)
            s_obj[q] = 0;
        bad += vidmm_va_space_check(&vs) != 0;
        for (int j = 0; j < 3000; j++) {
            uint64_t n = 1 + t_rand_range(&seed, 4), at = t_rand_range(&seed, S_PAGES - n + 1);
            bad += vidmm_va_map(&vs, GiB + at * VIDMM_VA_PAGE, 0, 0, n * VIDMM_VA_PAGE, obj, 0, 0, 0, &va) != VIDMM_OK;
            for (uint64_t q = 0; q < n; q++) {
                s_obj[at + q] = (uint32_t)obj;
                s_off[at + q] = (uint32_t)q;
            }
            obj++;
        }
        bad += vidmm_va_space_check(&vs) != 0;
    }
    bad += s_compare(&vs) != 0;
    T_EQ(bad, 0);
    /* Shrink: unmap growing random spans, then sweep, back to one leaf. */
    for (int i = 0; i < 40000 && !bad && vs.range_count; i++) {
        uint64_t pages = 1 + t_rand_range(&seed, 1 + (uint64_t)i / 100), p = t_rand_range(&seed, S_PAGES);
        if (p + pages > S_PAGES)
            pages = S_PAGES - p;
        bad += vidmm_va_unmap(&vs, GiB + p * VIDMM_VA_PAGE, pages * VIDMM_VA_PAGE) != VIDMM_OK;
        for (uint64_t q = p; q < p + pages; q++)
            s_obj[q] = 0;
        if (i % 2000 == 1999) {
            bad += vidmm_va_space_check(&vs) != 0;
            bad += s_compare(&vs) != 0;
        }
    }
    T_EQ(bad, 0);
    T_EQ(vidmm_va_space_check(&vs), 0);
    T_EQ(s_compare(&vs), 0);
    T_ST(vidmm_va_unmap(&vs, GiB, region), VIDMM_OK);
    T_EQ_U64(vs.range_count, 0);
    T_EQ_U64(vs.height, 0);
    T_EQ(vidmm_va_space_check(&vs), 0);
    vidmm_va_space_fini(&vs);
}

/* ---- the leaf-local replace and the object hash --------------------------------------------- */

/* The page-table side of leaf_local: steps replayed onto pages. */
static uint32_t s_pte_obj[S_PAGES], s_pte_off[S_PAGES];
static int s_step_bad;

static void s_pte_set(uint64_t va, uint64_t size, const struct vidmm_va_desc *d)
{
    for (uint64_t p = (va - GiB) / VIDMM_VA_PAGE, i = 0; i < size / VIDMM_VA_PAGE; i++, p++) {
        s_pte_obj[p] = d ? (uint32_t)d->object : 0;
        s_pte_off[p] = d ? (uint32_t)(d->object_offset / VIDMM_VA_PAGE + i) : 0;
    }
}

static void s_step(void *ctx, const struct vidmm_va_step *s)
{
    const struct vidmm_va_space *vs = ctx;
    if (s->op == VIDMM_VA_STEP_MAP) {
        /* A MAP goes out once the range is in the space, its record filled. */
        const struct vidmm_va_range *r = vidmm_va_lookup(vs, s->new.va);
        if (!r || memcmp(&r->d, &s->new, sizeof r->d) != 0)
            s_step_bad++;
        s_pte_set(s->new.va, s->new.size, &s->new);
    } else if (s->op == VIDMM_VA_STEP_UNMAP) {
        s_pte_set(s->old.va, s->old.size, NULL);
    } else {
        s_pte_set(s->old.va + s->prev_size, s->old.size - s->prev_size - s->next_size, NULL);
    }
}

/* Workload G in small: random maps (replacing what they cover) and unmaps
 * of 1..32 pages over ~2 K ranges, so nearly every change takes the
 * leaf-local path and its edge cases (spans that reach a leaf's end, with
 * the next leaf starting right at or past them; a full leaf or one about
 * to underflow falls back; head and tail cuts, splits, superset maps).
 * check() after every change, the pages and the replayed steps against
 * a model every 64. */
static void leaf_local(void)
{
    struct vidmm_va_space vs;
    uint64_t seed = t_seed() ^ 0x1eaf, va, obj = 1;
    const uint64_t pages_used = S_PAGES / 4; /* 128 MiB of the region: ~2 K ranges */
    T_ST(vidmm_va_space_init(&vs, vidmm_default_host_allocator(), 40), VIDMM_OK);
    vidmm_va_space_set_step_fn(&vs, s_step, &vs);
    memset(s_obj, 0, sizeof s_obj);
    memset(s_off, 0, sizeof s_off);
    memset(s_pte_obj, 0, sizeof s_pte_obj);
    memset(s_pte_off, 0, sizeof s_pte_off);
    s_step_bad = 0;
    int bad = 0, ops = 20000 * (int)t_scale();
    for (int i = 0; i < ops && !bad; i++) {
        uint64_t pages = 1 + t_rand_range(&seed, 32), p = t_rand_range(&seed, pages_used - pages + 1);
        uint64_t off = t_rand_range(&seed, 4);
        if (t_rand_range(&seed, 100) < 55) {
            bad += vidmm_va_map(&vs, GiB + p * VIDMM_VA_PAGE, 0, 0, pages * VIDMM_VA_PAGE, obj, off * VIDMM_VA_PAGE, 0,
                                0, &va) != VIDMM_OK;
            for (uint64_t q = 0; q < pages; q++) {
                s_obj[p + q] = (uint32_t)obj;
                s_off[p + q] = (uint32_t)(off + q);
            }
            obj++;
        } else {
            bad += vidmm_va_unmap(&vs, GiB + p * VIDMM_VA_PAGE, pages * VIDMM_VA_PAGE) != VIDMM_OK;
            for (uint64_t q = p; q < p + pages; q++)
                s_obj[q] = 0;
        }
        bad += vidmm_va_space_check(&vs) != 0;
        if (i % 64 == 63) {
            bad += s_compare(&vs) != 0;
            bad += memcmp(s_pte_obj, s_obj, sizeof s_obj) != 0;
            for (uint64_t q = 0; q < pages_used; q++)
                bad += s_obj[q] && s_pte_off[q] != s_off[q];
        }
    }
    T_EQ(bad, 0);
    T_EQ(s_step_bad, 0);
    T_CHECK(vs.height >= 2);
    T_CHECK(vs.range_count > 1000);
    vidmm_va_space_fini(&vs);
}

/* Reservations in one leaf: reserve (at an address and anywhere) and
 * free 64 KiB granules at random, two modes, ~2 K ranges, so reserves
 * land in holes next to equal reservations on the left, the right, both
 * or neither, in the same leaf and across a leaf boundary.  check() after
 * every change (it also rejects unmerged equal neighbours); the ranges and
 * the replayed steps against a granule model every 64. */
#define R_GRANS 8192u /* 512 MiB at 1 GiB */
static uint8_t r_model[R_GRANS], r_ptes[R_GRANS]; /* 0 free, 1 + mode */

static void r_set(uint8_t *m, uint64_t va, uint64_t size, uint8_t v)
{
    for (uint64_t g = (va - GiB) / VIDMM_VA_GRANULE, i = 0; i < size / VIDMM_VA_GRANULE; i++)
        m[g + i] = v;
}

static void r_step(void *ctx, const struct vidmm_va_step *s)
{
    (void)ctx;
    if (s->op == VIDMM_VA_STEP_MAP)
        r_set(r_ptes, s->new.va, s->new.size, (uint8_t)(1 + s->new.mode));
    else if (s->op == VIDMM_VA_STEP_UNMAP)
        r_set(r_ptes, s->old.va, s->old.size, 0);
    else
        r_set(r_ptes, s->old.va + s->prev_size, s->old.size - s->prev_size - s->next_size, 0);
}

static int r_compare(const struct vidmm_va_space *vs)
{
    static uint8_t img[R_GRANS];
    memset(img, 0, sizeof img);
    for (const struct vidmm_va_range *r = vidmm_va_first(vs); r; r = vidmm_va_next(vs, r)) {
        if (r->d.state != VIDMM_VA_RESERVED || r->d.va < GiB || r->d.va + r->d.size > GiB + R_GRANS * VIDMM_VA_GRANULE)
            return 1;
        r_set(img, r->d.va, r->d.size, (uint8_t)(1 + r->d.mode));
    }
    return memcmp(img, r_model, sizeof img) != 0 || memcmp(r_ptes, r_model, sizeof img) != 0;
}

static void reserve_merge(void)
{
    struct vidmm_va_space vs;
    uint64_t seed = t_seed() ^ 0x7e5, va;
    T_ST(vidmm_va_space_init(&vs, vidmm_default_host_allocator(), 40), VIDMM_OK);
    vidmm_va_space_set_step_fn(&vs, r_step, NULL);
    memset(r_model, 0, sizeof r_model);
    memset(r_ptes, 0, sizeof r_ptes);
    int bad = 0, ops = 20000 * (int)t_scale();
    for (int i = 0; i < ops && !bad; i++) {
        uint64_t g = t_rand_range(&seed, R_GRANS), n = 1 + t_rand_range(&seed, 4);
        unsigned mode = (unsigned)t_rand_range(&seed, 2), k = (unsigned)t_rand_range(&seed, 10);
        if (g + n > R_GRANS)
            n = R_GRANS - g;
        if (k < 4) { /* at g, as far as it is free */
            uint64_t m = 0;
            while (m < n && !r_model[g + m])
                m++;
            if (!m)
                continue;
            bad += vidmm_va_reserve(&vs, GiB + g * VIDMM_VA_GRANULE, 0, 0, m * VIDMM_VA_GRANULE, mode, &va) !=
                   VIDMM_OK;
            memset(&r_model[g], 1 + (int)mode, m);
        } else if (k < 6) { /* anywhere in the region: the lowest fit */
            uint64_t at = 0, run = 0, found = 0;
            for (uint64_t q = 0; q < R_GRANS && !found; q++) {
                run = r_model[q] ? 0 : run + 1;
                if (run == n) {
                    at = q + 1 - n;
                    found = 1;
                }
            }
            vidmm_status st = vidmm_va_reserve(&vs, 0, GiB, GiB + R_GRANS * VIDMM_VA_GRANULE,
                                               n * VIDMM_VA_GRANULE, mode, &va);
            if (!found) {
                bad += st != VIDMM_E_NO_SEGMENT_SPACE;
                continue;
            }
            bad += st != VIDMM_OK || va != GiB + at * VIDMM_VA_GRANULE;
            memset(&r_model[at], 1 + (int)mode, n);
        } else { /* free the reserved granules from g on */
            uint64_t m = 0;
            while (m < n && r_model[g + m])
                m++;
            if (!m)
                continue;
            bad += vidmm_va_free(&vs, GiB + g * VIDMM_VA_GRANULE, m * VIDMM_VA_GRANULE) != VIDMM_OK;
            memset(&r_model[g], 0, m);
        }
        bad += vidmm_va_space_check(&vs) != 0;
        if (i % 64 == 63)
            bad += r_compare(&vs);
    }
    T_EQ(bad, 0);
    T_EQ(r_compare(&vs), 0);
    T_CHECK(vs.height >= 1);
    T_CHECK(vs.range_count > 1000);
    vidmm_va_space_fini(&vs);
}

/* va_space.c's object hash (a copy: the test needs two objects whose
 * 32-bit tags, and so home slots, are equal). */
static uint32_t h_tag(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    return (uint32_t)x;
}

/* Two objects with one tag: each keeps its own list, found by comparing
 * the object in the head record; deleting one slot keeps the other
 * findable. */
static void object_hash_tags(void)
{
    /* Birthday search over 1, 2, 3, ...: a collision within ~2^17. */
    enum { HB = 1 << 20 };
    uint32_t *tab = calloc(HB, sizeof *tab); /* tag -> object + 1 hint, open addressed on the tag */
    uint64_t *obj_of = calloc(HB, sizeof *obj_of);
    T_CHECK(tab && obj_of);
    uint64_t a = 0, b = 0;
    for (uint64_t o = 1; o < 4 * HB && !a && tab && obj_of; o++) {
        uint32_t t = h_tag(o);
        for (uint32_t i = t & (HB - 1);; i = (i + 1) & (HB - 1)) {
            if (!obj_of[i]) {
                tab[i] = t;
                obj_of[i] = o;
                break;
            }
            if (tab[i] == t) {
                a = obj_of[i];
                b = o;
                break;
            }
        }
    }
    free(tab);
    free(obj_of);
    T_CHECK(a && b && a != b && h_tag(a) == h_tag(b));
    if (!a)
        return;
    struct vidmm_va_space vs;
    uint64_t va;
    T_ST(vidmm_va_space_init(&vs, vidmm_default_host_allocator(), 40), VIDMM_OK);
    T_ST(vidmm_va_map(&vs, 1 * MiB, 0, 0, 64 * KiB, a, 0, 0, 0, &va), VIDMM_OK);
    T_ST(vidmm_va_map(&vs, 2 * MiB, 0, 0, 64 * KiB, b, 0, 0, 0, &va), VIDMM_OK);
    T_ST(vidmm_va_map(&vs, 3 * MiB, 0, 0, 64 * KiB, a, 64 * KiB, 0, 0, &va), VIDMM_OK);
    T_ST(vidmm_va_map(&vs, 4 * MiB, 0, 0, 64 * KiB, b, 64 * KiB, 0, 0, &va), VIDMM_OK);
    T_EQ(vidmm_va_space_check(&vs), 0);
    T_EQ_U64(vidmm_va_object_mapping_count(&vs, a), 2);
    T_EQ_U64(vidmm_va_object_mapping_count(&vs, b), 2);
    for (const struct vidmm_va_range *r = vidmm_va_object_first(&vs, a); r; r = vidmm_va_object_next(&vs, r))
        T_EQ_U64(r->d.object, a);
    for (const struct vidmm_va_range *r = vidmm_va_object_first(&vs, b); r; r = vidmm_va_object_next(&vs, r))
        T_EQ_U64(r->d.object, b);
    /* a's slot comes first on the shared probe sequence: empty it, then b
     * must still be found, and a mapped anew gets a slot of its own. */
    T_ST(vidmm_va_unmap_object(&vs, a), VIDMM_OK);
    T_EQ(vidmm_va_space_check(&vs), 0);
    T_EQ_U64(vidmm_va_object_mapping_count(&vs, a), 0);
    T_CHECK(vidmm_va_object_first(&vs, a) == NULL);
    T_EQ_U64(vidmm_va_object_mapping_count(&vs, b), 2);
    T_ST(vidmm_va_map(&vs, 5 * MiB, 0, 0, 64 * KiB, a, 0, 0, 0, &va), VIDMM_OK);
    T_EQ_U64(vidmm_va_object_mapping_count(&vs, a), 1);
    /* Unlink b's head, then its last mapping; a stays. */
    T_ST(vidmm_va_unmap(&vs, vidmm_va_object_first(&vs, b)->d.va, 64 * KiB), VIDMM_OK);
    T_EQ_U64(vidmm_va_object_mapping_count(&vs, b), 1);
    T_EQ(vidmm_va_space_check(&vs), 0);
    T_ST(vidmm_va_unmap(&vs, vidmm_va_object_first(&vs, b)->d.va, 64 * KiB), VIDMM_OK);
    T_EQ_U64(vidmm_va_object_mapping_count(&vs, b), 0);
    T_EQ_U64(vidmm_va_object_mapping_count(&vs, a), 1);
    T_EQ_U64(vs.obj_count, 1);
    T_EQ(vidmm_va_space_check(&vs), 0);
    vidmm_va_space_fini(&vs);
}

/* ---- differential test against a page-granular model -------------------------------------- */

#define M_BITS 26                          /* 64 MiB space: [64 KiB, 64 MiB) */
#define M_PAGES ((UINT64_C(1) << M_BITS) / VIDMM_VA_PAGE)

struct mpage {
    uint8_t state, mode, prot, in_res;
    uint64_t object, offset;
};

static struct mpage model[M_PAGES], ptes[M_PAGES];

static void m_set(struct mpage *m, uint64_t va, uint64_t size, const struct vidmm_va_desc *d)
{
    for (uint64_t p = va / VIDMM_VA_PAGE, i = 0; i < size / VIDMM_VA_PAGE; i++) {
        struct mpage *x = &m[p + i];
        memset(x, 0, sizeof *x);
        if (!d)
            continue;
        x->state = d->state;
        x->mode = d->mode;
        if (d->state == VIDMM_VA_MAPPED) {
            x->prot = d->prot;
            x->in_res = d->in_reservation;
            x->object = d->object;
            x->offset = d->object_offset + i * VIDMM_VA_PAGE;
        }
    }
}

/* The page-table side: replay steps onto ptes[]. */
static void pte_step(void *ctx, const struct vidmm_va_step *s)
{
    (void)ctx;
    if (s->op == VIDMM_VA_STEP_MAP)
        m_set(ptes, s->new.va, s->new.size, &s->new);
    else if (s->op == VIDMM_VA_STEP_UNMAP)
        m_set(ptes, s->old.va, s->old.size, NULL);
    else
        m_set(ptes, s->old.va + s->prev_size, s->old.size - s->prev_size - s->next_size, NULL);
}

static int m_backed(const struct mpage *x)
{
    return x->state == VIDMM_VA_RESERVED || (x->state == VIDMM_VA_MAPPED && x->in_res);
}

static int m_equal(const struct mpage *a, const struct mpage *b)
{
    return a->state == b->state && a->mode == b->mode && a->prot == b->prot && a->in_res == b->in_res &&
           a->object == b->object && a->offset == b->offset;
}

/* Compare the tree with the model, page by page. */
static int m_compare(const struct vidmm_va_space *vs)
{
    static struct mpage img[M_PAGES];
    memset(img, 0, sizeof img);
    for (const struct vidmm_va_range *r = vidmm_va_first(vs); r; r = vidmm_va_next(vs, r))
        m_set(img, r->d.va, r->d.size, &r->d);
    int bad = 0;
    for (uint64_t p = 0; p < M_PAGES; p++)
        bad += !m_equal(&img[p], &model[p]) || !m_equal(&ptes[p], &model[p]);
    return bad;
}

static void m_unmap(uint64_t va, uint64_t size)
{
    for (uint64_t p = va / VIDMM_VA_PAGE; p < (va + size) / VIDMM_VA_PAGE; p++) {
        struct mpage *x = &model[p];
        if (x->state != VIDMM_VA_MAPPED)
            continue;
        uint8_t in_res = x->in_res, mode = x->mode;
        memset(x, 0, sizeof *x);
        if (in_res) {
            x->state = VIDMM_VA_RESERVED;
            x->mode = mode;
        }
    }
}

static unsigned m_cov(uint64_t va, uint64_t size)
{
    unsigned c = 0;
    for (uint64_t p = va / VIDMM_VA_PAGE; p < (va + size) / VIDMM_VA_PAGE; p++)
        c |= model[p].state == VIDMM_VA_FREE ? 1u : m_backed(&model[p]) ? 2u : 4u;
    return c;
}

/* Lowest aligned start in [lo, hi) with size free bytes. */
static int m_find(uint64_t lo, uint64_t hi, uint64_t size, uint64_t align, uint64_t *out)
{
    for (uint64_t s = (lo + align - 1) & ~(align - 1); s + size <= hi; s += align) {
        if (m_cov(s, size) == 1) {
            *out = s;
            return 1;
        }
    }
    return 0;
}

/* Extent of the reservation-backed run holding page p. */
static void m_run(uint64_t p, uint64_t *lo, uint64_t *hi)
{
    uint64_t a = p, b = p;
    while (a > 0 && m_backed(&model[a - 1]))
        a--;
    while (b + 1 < M_PAGES && m_backed(&model[b + 1]))
        b++;
    *lo = a * VIDMM_VA_PAGE;
    *hi = (b + 1) * VIDMM_VA_PAGE;
}

static uint64_t r_size(uint64_t *seed, uint64_t unit, uint64_t max_units)
{
    return unit * (1 + t_rand_range(seed, max_units));
}

static void differential(void)
{
    const uint64_t base = 64 * KiB, limit = UINT64_C(1) << M_BITS;
    struct vidmm_va_space vs;
    uint64_t seed = t_seed();
    T_ST(vidmm_va_space_init(&vs, vidmm_default_host_allocator(), M_BITS), VIDMM_OK);
    vidmm_va_space_set_step_fn(&vs, pte_step, NULL);
    memset(model, 0, sizeof model);
    memset(ptes, 0, sizeof ptes);
    unsigned ops = 3000 * t_scale();
    int fails = 0;
    for (unsigned i = 0; i < ops && fails < 5; i++) {
        unsigned kind = (unsigned)t_rand_range(&seed, 100);
        uint64_t va = 0, got = 0, size;
        vidmm_status st, want = VIDMM_OK;
        /* Addresses cluster in the low 16 MiB so ranges interact. */
        uint64_t span = (i / 500) % 2 ? limit : 16 * MiB;
        if (kind < 15) { /* reserve fixed */
            size = r_size(&seed, 64 * KiB, 16);
            va = base + 64 * KiB * t_rand_range(&seed, span / (64 * KiB));
            unsigned mode = (unsigned)t_rand_range(&seed, 2);
            if (va + size > limit)
                want = VIDMM_E_INVALID_ARG;
            else if (m_cov(va, size) != 1)
                want = VIDMM_E_BUSY;
            st = vidmm_va_reserve(&vs, va, 0, 0, size, mode, &got);
            if (st == VIDMM_OK) {
                struct vidmm_va_desc d = {.state = VIDMM_VA_RESERVED, .mode = (uint8_t)mode};
                m_set(model, va, size, &d);
            }
        } else if (kind < 22) { /* reserve anywhere */
            size = r_size(&seed, 64 * KiB, 8);
            uint64_t lo = 64 * KiB * t_rand_range(&seed, 256), hi = lo + 64 * KiB * (1 + t_rand_range(&seed, 256));
            unsigned mode = (unsigned)t_rand_range(&seed, 2);
            uint64_t at = 0;
            if (hi <= base)
                want = VIDMM_E_INVALID_ARG;   /* the window lies in the guard (rows *_max_in_guard) */
            else if (!m_find(lo > base ? lo : base, hi, size, 64 * KiB, &at))
                want = VIDMM_E_NO_SEGMENT_SPACE;
            st = vidmm_va_reserve(&vs, 0, lo, hi, size, mode, &got);
            if (st == VIDMM_OK) {
                T_EQ_U64(got, at);
                struct vidmm_va_desc d = {.state = VIDMM_VA_RESERVED, .mode = (uint8_t)mode};
                m_set(model, got, size, &d);
            }
        } else if (kind < 50) { /* map fixed */
            size = r_size(&seed, 4 * KiB, 64);
            va = base + 4 * KiB * t_rand_range(&seed, span / (4 * KiB));
            struct vidmm_va_desc d = {.state = VIDMM_VA_MAPPED, .object = 1 + t_rand_range(&seed, 20),
                                      .object_offset = 4 * KiB * t_rand_range(&seed, 100),
                                      .prot = (uint8_t)t_rand_range(&seed, 4)};
            unsigned cov = va + size > limit ? 0 : m_cov(va, size);
            if (va + size > limit)
                want = VIDMM_E_INVALID_ARG;
            else if ((cov & 2) && (cov & 5))
                want = VIDMM_E_BUSY;
            st = vidmm_va_map(&vs, va, 0, 0, size, d.object, d.object_offset, d.prot, 0, &got);
            if (st == VIDMM_OK) {
                if (cov & 2) {
                    d.in_reservation = 1;
                    d.mode = model[va / VIDMM_VA_PAGE].mode;
                }
                m_set(model, va, size, &d);
            }
        } else if (kind < 55) { /* map anywhere */
            size = r_size(&seed, 4 * KiB, 32);
            uint64_t lo = 4 * KiB * t_rand_range(&seed, 4096), hi = lo + 4 * KiB * (1 + t_rand_range(&seed, 4096));
            uint64_t at = 0;
            if (hi <= base)
                want = VIDMM_E_INVALID_ARG;   /* the window lies in the guard */
            else if (!m_find(lo > base ? lo : base, hi, size, 4 * KiB, &at))
                want = VIDMM_E_NO_SEGMENT_SPACE;
            struct vidmm_va_desc d = {.state = VIDMM_VA_MAPPED, .object = 1 + t_rand_range(&seed, 20)};
            st = vidmm_va_map(&vs, 0, lo, hi, size, d.object, 0, 0, 0, &got);
            if (st == VIDMM_OK) {
                T_EQ_U64(got, at);
                m_set(model, got, size, &d);
            }
        } else if (kind < 72) { /* unmap */
            size = r_size(&seed, 4 * KiB, 128);
            va = base + 4 * KiB * t_rand_range(&seed, span / (4 * KiB));
            if (va + size > limit)
                want = VIDMM_E_INVALID_ARG;
            st = vidmm_va_unmap(&vs, va, size);
            if (st == VIDMM_OK)
                m_unmap(va, size);
        } else if (kind < 82) { /* free: usually of a whole run, sometimes random */
            uint64_t p = (base + 4 * KiB * t_rand_range(&seed, (span - base) / (4 * KiB))) / VIDMM_VA_PAGE;
            if (m_backed(&model[p]) && t_rand_range(&seed, 2)) {
                uint64_t lo, hi;
                m_run(p, &lo, &hi);
                va = lo;
                size = hi - lo;
            } else {
                va = p * VIDMM_VA_PAGE;
                size = r_size(&seed, 4 * KiB, 32);
            }
            unsigned cov = va + size > limit ? 0 : m_cov(va, size);
            if (va + size > limit)
                want = VIDMM_E_INVALID_ARG;
            else if (cov & 1)
                want = VIDMM_E_INVALID_ARG;
            else if ((cov & 2) && ((va | size) & (64 * KiB - 1)))
                want = VIDMM_E_ALIGNMENT;
            st = vidmm_va_free(&vs, va, size);
            if (st == VIDMM_OK)
                m_set(model, va, size, NULL);
        } else if (kind < 97) { /* update batch inside one run */
            uint64_t p = (base + 4 * KiB * t_rand_range(&seed, span / (4 * KiB))) / VIDMM_VA_PAGE;
            uint64_t lo = 0, hi = 0, slo = 0, shi = 0, q;
            for (q = p; q < p + 4096 && q < M_PAGES && !m_backed(&model[q]); q++)
                ;
            if (q >= M_PAGES || !m_backed(&model[q]))
                continue;
            m_run(q, &lo, &hi);
            /* A source run: the same, or another found the same way. */
            q = (base + 4 * KiB * t_rand_range(&seed, span / (4 * KiB))) / VIDMM_VA_PAGE;
            while (q < M_PAGES && !m_backed(&model[q]))
                q++;
            if (q < M_PAGES)
                m_run(q, &slo, &shi);
            else
                slo = lo, shi = hi;
            struct vidmm_va_update_op opsv[6];
            size_t n = 1 + (size_t)t_rand_range(&seed, 6);
            memset(opsv, 0, sizeof opsv);
            int poison = t_rand_range(&seed, 10) == 0;
            for (size_t k = 0; k < n; k++) {
                struct vidmm_va_update_op *o = &opsv[k];
                uint64_t pages = (hi - lo) / VIDMM_VA_PAGE;
                uint64_t s0 = t_rand_range(&seed, pages), len = 1 + t_rand_range(&seed, pages - s0 < 32 ? pages - s0 : 32);
                o->type = (uint32_t)t_rand_range(&seed, 3);
                o->va = lo + s0 * VIDMM_VA_PAGE;
                o->size = len * VIDMM_VA_PAGE;
                o->object = 1 + t_rand_range(&seed, 20);
                o->object_offset = 4 * KiB * t_rand_range(&seed, 64);
                o->prot = (uint32_t)t_rand_range(&seed, 4);
                o->mode = (uint32_t)t_rand_range(&seed, 2);
                if (o->type == VIDMM_VA_UPDATE_COPY) {
                    uint64_t sp = (shi - slo) / VIDMM_VA_PAGE;
                    if (len > sp)
                        o->size = sp * VIDMM_VA_PAGE;
                    o->src = slo + VIDMM_VA_PAGE * t_rand_range(&seed, sp - o->size / VIDMM_VA_PAGE + 1);
                }
            }
            if (poison) { /* one op reaches out of the run: nothing may change */
                opsv[n - 1].type = VIDMM_VA_UPDATE_UNMAP;
                opsv[n - 1].va = hi < limit ? hi : lo - VIDMM_VA_PAGE;
                opsv[n - 1].size = VIDMM_VA_PAGE;
                want = VIDMM_E_INVALID_ARG;
            }
            st = vidmm_va_update(&vs, opsv, n);
            if (st == VIDMM_OK) {
                static struct mpage snap[4096];
                for (size_t k = 0; k < n; k++) {
                    const struct vidmm_va_update_op *o = &opsv[k];
                    struct vidmm_va_desc d = {0};
                    if (o->type == VIDMM_VA_UPDATE_MAP) {
                        d.state = VIDMM_VA_MAPPED;
                        d.in_reservation = 1;
                        d.mode = model[o->va / VIDMM_VA_PAGE].mode;
                        d.object = o->object;
                        d.object_offset = o->object_offset;
                        d.prot = (uint8_t)o->prot;
                        m_set(model, o->va, o->size, &d);
                    } else if (o->type == VIDMM_VA_UPDATE_UNMAP) {
                        d.state = VIDMM_VA_RESERVED;
                        d.mode = (uint8_t)o->mode;
                        m_set(model, o->va, o->size, &d);
                    } else {
                        uint64_t np = o->size / VIDMM_VA_PAGE;
                        memcpy(snap, &model[o->src / VIDMM_VA_PAGE], np * sizeof snap[0]);
                        memcpy(&model[o->va / VIDMM_VA_PAGE], snap, np * sizeof snap[0]);
                    }
                }
            }
        } else { /* unmap_object */
            uint64_t obj = 1 + t_rand_range(&seed, 20);
            st = vidmm_va_unmap_object(&vs, obj);
            if (st == VIDMM_OK)
                for (uint64_t p = 0; p < M_PAGES; p++)
                    if (model[p].state == VIDMM_VA_MAPPED && model[p].object == obj)
                        m_unmap(p * VIDMM_VA_PAGE, VIDMM_VA_PAGE);
        }
        int bad = st != want;
        if (bad)
            fprintf(stderr, "  op %u kind %u va 0x%" PRIx64 ": %s, want %s\n", i, kind, va, vidmm_status_str(st),
                    vidmm_status_str(want));
        int errs = vidmm_va_space_check(&vs), diff = m_compare(&vs);
        int iter = (i % 8 == 0) ? obj_iter_agrees(&vs, 20) : 0;
        if (errs || diff || iter)
            fprintf(stderr, "  op %u kind %u: check %d, %d pages differ, %d object-iteration errors\n", i, kind,
                    errs, diff, iter);
        bad |= errs || diff || iter;
        T_CHECK(!bad);
        fails += bad;
    }
    vidmm_va_space_fini(&vs);
}

/* ---- host-allocation fault sweep ---------------------------------------------------------- */

static uint64_t layout_hash(const struct vidmm_va_space *vs)
{
    uint64_t h = 1469598103934665603ull;
    for (const struct vidmm_va_range *r = vidmm_va_first(vs); r; r = vidmm_va_next(vs, r)) {
        const uint64_t v[6] = {r->d.va, r->d.size, r->d.object, r->d.object_offset,
                               (uint64_t)r->d.state << 24 | (uint64_t)r->d.mode << 16 | (uint64_t)r->d.prot << 8 |
                                   r->d.in_reservation,
                               r->d.driver_protection};
        for (int i = 0; i < 6; i++)
            h = (h ^ v[i]) * 1099511628211ull;
    }
    return h;
}

static void fault_sweep(void)
{
    int done = 0;
    for (uint64_t fail_at = 1; !done && fail_at < 400; fail_at++) {
        struct fault_alloc fa;
        struct vidmm_va_space vs;
        fault_alloc_init(&fa);
        fa.fail_at = fail_at;
        vidmm_status st = vidmm_va_space_init(&vs, &fa.ha, 36);
        if (st != VIDMM_OK) {
            T_ST(st, VIDMM_E_NO_HOST_MEMORY);
            T_EQ(fa.live_blocks, 0);
            continue;
        }
        /* Enough ranges and objects to grow the slab and the object hash
         * several times, plus batches that need scratch and many nodes.
         * The update of step i works in the reservation of step i - 3: if
         * that reserve was refused, the update must be refused too. */
        static int reserved[700];
        memset(reserved, 0, sizeof reserved);
        for (int i = 0; i < 700; i++) {
            uint64_t va, before = layout_hash(&vs);
            vidmm_status alt = VIDMM_E_NO_HOST_MEMORY;
            uint64_t at = GiB + (uint64_t)i * 256 * KiB;
            switch (i % 5) {
            case 0:
                st = vidmm_va_reserve(&vs, at, 0, 0, 256 * KiB, 0, &va);
                reserved[i] = st == VIDMM_OK;
                break;
            case 1:
                st = vidmm_va_map(&vs, at - 256 * KiB + 64 * KiB, 0, 0, 16 * KiB, 1 + (uint64_t)i, 0, 0, 0, &va);
                break;
            case 2:
                st = vidmm_va_map(&vs, 0, 0, 0, 12 * KiB, 1 + (uint64_t)i, 0, 0, 0, &va);
                break;
            case 3: {
                struct vidmm_va_update_op o[3];
                memset(o, 0, sizeof o);
                uint64_t r0 = GiB + (uint64_t)(i - 3) * 256 * KiB;
                o[0].type = VIDMM_VA_UPDATE_MAP, o[0].va = r0 + 128 * KiB, o[0].size = 32 * KiB;
                o[0].object = 5000 + (uint64_t)i;
                o[1].type = VIDMM_VA_UPDATE_COPY, o[1].va = r0 + 160 * KiB, o[1].size = 96 * KiB;
                o[1].src = r0;
                o[2].type = VIDMM_VA_UPDATE_UNMAP, o[2].va = r0 + 8 * KiB, o[2].size = 4 * KiB, o[2].mode = 1;
                st = vidmm_va_update(&vs, o, 3);
                if (!reserved[i - 3])
                    alt = VIDMM_E_INVALID_ARG;
                break;
            }
            default:
                st = (i % 10 == 4) ? vidmm_va_unmap(&vs, at - 4 * 256 * KiB + 68 * KiB, 4 * KiB)
                                   : vidmm_va_unmap_object(&vs, 1 + (uint64_t)(i - 3));
                break;
            }
            if (st != VIDMM_OK) {
                T_ST(st, alt);
                T_EQ_U64(layout_hash(&vs), before);
            }
            if (i % 50 == 0 || st != VIDMM_OK)
                T_EQ(vidmm_va_space_check(&vs), 0);
        }
        T_EQ(vidmm_va_space_check(&vs), 0);
        vidmm_va_space_fini(&vs);
        T_EQ(fa.live_blocks, 0);
        T_EQ(fa.live_bytes, 0);
        done = fa.failures == 0;
    }
    T_CHECK(done);
}

/* ---- lazy hole summaries ------------------------------------------------------------ */

static uint32_t root_stale(const struct vidmm_va_space *vs)
{
    return vs->height ? vs->inners[vs->root].stale : vs->leaves[vs->root].stale;
}

static uint64_t *root_smax(struct vidmm_va_space *vs)
{
    return vs->height ? &vs->inners[vs->root].smax : &vs->leaves[vs->root].smax;
}

/* Changes at fixed addresses mark summaries stale; a hole search
 * refreshes them and finds the lowest fit; the next changes refresh at
 * once, later ones mark again.  The checker verifies every summary not
 * marked stale: a wrong one in a clean root is caught. */
static void stale_summaries(void)
{
    struct vidmm_va_space vs;
    uint64_t va;
    T_ST(vidmm_va_space_init(&vs, vidmm_default_host_allocator(), 40), VIDMM_OK);
    /* 300 mappings of 64 KiB, 128 KiB apart: holes of 64 KiB below
     * 64 KiB + 600 * 64 KiB, a tree of some levels. */
    for (uint64_t i = 0; i < 300; i++) {
        T_ST(vidmm_va_map(&vs, (2 * i + 2) * 64 * KiB, 0, 0, 64 * KiB, 1 + i, 0, 0, 0, &va), VIDMM_OK);
        T_EQ(vidmm_va_space_check(&vs), 0);
    }
    T_CHECK(vs.height >= 1);
    T_EQ(root_stale(&vs), 1);
    /* Open a 192 KiB hole in the middle (unmap two): the lowest fit of
     * 128 KiB is there. */
    T_ST(vidmm_va_unmap(&vs, 202 * 64 * KiB, 64 * KiB), VIDMM_OK);
    T_ST(vidmm_va_unmap(&vs, 204 * 64 * KiB, 64 * KiB), VIDMM_OK);
    T_EQ(vidmm_va_space_check(&vs), 0);
    T_ST(vidmm_va_reserve(&vs, 0, 0, 0, 128 * KiB, 0, &va), VIDMM_OK);
    T_EQ_U64(va, 201 * 64 * KiB);
    T_EQ(vidmm_va_space_check(&vs), 0);
    /* Clean after the search, and refreshed at once for the next changes. */
    T_ST(vidmm_va_unmap(&vs, 100 * 64 * KiB, 64 * KiB), VIDMM_OK);
    T_EQ(root_stale(&vs), 0);
    T_EQ(vidmm_va_space_check(&vs), 0);
    uint64_t *m = root_smax(&vs), keep = *m;
    *m = keep + 64 * KiB;
    T_CHECK(vidmm_va_space_check(&vs) != 0);
    *m = keep;
    T_EQ(vidmm_va_space_check(&vs), 0);
    /* Past the eager changes: marked again, and still exact after the
     * next search. */
    for (uint64_t i = 0; i < 40; i++) {
        T_ST(vidmm_va_unmap(&vs, (2 * i + 2) * 64 * KiB, 64 * KiB), VIDMM_OK);
        T_EQ(vidmm_va_space_check(&vs), 0);
    }
    T_EQ(root_stale(&vs), 1);
    T_ST(vidmm_va_reserve(&vs, 0, 0, 0, 64 * 64 * KiB, 0, &va), VIDMM_OK);
    T_EQ_U64(va, 64 * KiB);   /* the first 40 mappings went: 80 granules of hole from the base */
    T_EQ(vidmm_va_space_check(&vs), 0);
    vidmm_va_space_fini(&vs);
}

void suite_va_space(void);
void suite_va_space(void)
{
    t_run("va_space.table", table);
    t_run("va_space.bad_inputs", bad_inputs);
    t_run("va_space.lookup_and_placement", lookup_and_placement);
    t_run("va_space.unmap_object", unmap_object);
    t_run("va_space.object_iteration", object_iteration);
    t_run("va_space.differential", differential);
    t_run("va_space.tree_shape", tree_shape);
    t_run("va_space.leaf_local", leaf_local);
    t_run("va_space.reserve_merge", reserve_merge);
    t_run("va_space.object_hash_tags", object_hash_tags);
    t_run("va_space.fault_sweep", fault_sweep);
    t_run("va_space.stale_summaries", stale_summaries);
}
