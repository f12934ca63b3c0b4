/*
 * html_draw.c - drawing the HTML report (see html.h, docs/OUTPUTS.md "The
 * HTML report") from the series html.c collected: text, geometry, the
 * charts, the memory maps and the page.
 *
 * Drawing.  Plain SVG inside HTML: no script, no external reference, so
 * the file opens from file:// and prints.  Coordinates are computed in
 * integer tenths of a pixel, never in floating point, so the bytes do not
 * depend on the compiler or optimisation level.  Levels are drawn as
 * steps (a value holds until the next sample); each chart has an id, a
 * <title> and an aria-label.
 */
#include "html_int.h"

#include "cli/cli.h"
#include "report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- text ------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at p (0 if invalid): overlong forms,
 * surrogates and code points past U+10FFFF are invalid. */
static int utf8_len(const unsigned char *p)
{
    unsigned c = p[0];
    int n;
    unsigned min, cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2; cp = c & 0x1f; min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3; cp = c & 0x0f; min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4; cp = c & 0x07; min = 0x10000;
    } else {
        return 0;
    }
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

void html_escape(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        switch (c) {
        case '&': fputs("&amp;", f); p++; continue;
        case '<': fputs("&lt;", f); p++; continue;
        case '>': fputs("&gt;", f); p++; continue;
        case '"': fputs("&quot;", f); p++; continue;
        case '\'': fputs("&#39;", f); p++; continue;
        default: break;
        }
        /* Control characters are parse errors in HTML; invalid UTF-8
         * would make the whole file undecodable for strict readers. */
        if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) {
            fputs("&#xFFFD;", f);
            p++;
            continue;
        }
        int n = utf8_len(p);
        if (!n) {
            fputs("&#xFFFD;", f);
            p++;
            continue;
        }
        fwrite(p, 1, (size_t)n, f);
        p += n;
    }
}

static const char *size_str(uint64_t v, char *buf, size_t n)
{
    cli_format_size(v, buf, n);
    return buf;
}

/* A duration of the simulated clock: "750 us", "1.5 ms", "2 s". */
static const char *time_str(uint64_t us, char *buf, size_t n)
{
    static const struct { uint64_t unit; const char *name; } u[] = {
        { 1000000, "s" }, { 1000, "ms" }, { 1, "&#181;s" },
    };
    for (int i = 0; i < 3; i++) {
        if (us < u[i].unit && i < 2)
            continue;
        uint64_t whole = us / u[i].unit, frac = us % u[i].unit;
        if (!frac) {
            snprintf(buf, n, "%" PRIu64 " %s", whole, u[i].name);
        } else {
            /* Up to three decimals, trailing zeros dropped. */
            uint64_t milli = frac * 1000 / u[i].unit;
            char d[24];              /* room for any uint64_t: the compiler cannot see milli < 1000 */
            snprintf(d, sizeof d, "%03" PRIu64, milli);
            for (int j = 2; j > 0 && d[j] == '0'; j--)
                d[j] = '\0';
            snprintf(buf, n, "%" PRIu64 ".%s %s", whole, d, u[i].name);
        }
        return buf;
    }
    return buf;
}

/* ---- geometry: tenths of a pixel, integers only ----------------------- */

#define W 960                        /* chart width */
#define PLOT_L 78                    /* plot area left, right */
#define PLOT_R 948
#define PLOT_T 12                    /* plot area top */

/* a * b / c without overflow for b below 2^20 (a span in tenths). */
static uint64_t muldiv(uint64_t a, uint64_t b, uint64_t c)
{
    if (!c)
        return 0;
    uint64_t q = a / c, r = a % c;
    while (c > (UINT64_MAX >> 21)) {
        r >>= 1;
        c >>= 1;
    }
    return q * b + r * b / c;
}

static void px(FILE *f, uint64_t v10)
{
    if (v10 % 10)
        fprintf(f, "%" PRIu64 ".%" PRIu64, v10 / 10, v10 % 10);
    else
        fprintf(f, "%" PRIu64, v10 / 10);
}

struct frame {
    uint32_t h;                      /* chart height */
    uint32_t bottom;                 /* plot area bottom */
    uint64_t tmax, vmax;
};

static uint64_t xt(const struct frame *fr, uint64_t t)
{
    if (t > fr->tmax)
        t = fr->tmax;
    return PLOT_L * 10 + muldiv(t, (PLOT_R - PLOT_L) * 10, fr->tmax);
}

static uint64_t yv(const struct frame *fr, uint64_t v)
{
    if (v > fr->vmax)
        v = fr->vmax;
    return fr->bottom * 10 - muldiv(v, (fr->bottom - PLOT_T) * 10, fr->vmax);
}

/* A path pen that writes H and V only when the position changes. */
struct pen {
    FILE *f;
    uint64_t x, y;
    int pending_x;                   /* x moved, not written yet */
};

static void pen_move(struct pen *p, uint64_t x, uint64_t y)
{
    fputc('M', p->f);
    px(p->f, x);
    fputc(' ', p->f);
    px(p->f, y);
    p->x = x;
    p->y = y;
    p->pending_x = 0;
}

static void pen_h(struct pen *p, uint64_t x)
{
    if (x != p->x) {
        p->x = x;
        p->pending_x = 1;
    }
}

static void pen_v(struct pen *p, uint64_t y)
{
    if (y == p->y)
        return;
    if (p->pending_x) {
        fputc('H', p->f);
        px(p->f, p->x);
        p->pending_x = 0;
    }
    fputc('V', p->f);
    px(p->f, y);
    p->y = y;
}

static void pen_flush(struct pen *p)
{
    if (p->pending_x) {
        fputc('H', p->f);
        px(p->f, p->x);
        p->pending_x = 0;
    }
}

/* ---- colours and names ---------------------------------------------- */

/* Tableau 10: distinguishable, and readable in grey print. */
static const char *const palette[10] = {
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
};

static const char *slot_colour(uint32_t slot)
{
    if (slot == SLOT_UNOWNED)
        return "#c9c9a3";
    if (slot == SLOT_OTHER)
        return "#17becf";
    if (slot == SLOT_VIDMM)
        return "#6b6b6b";
    return palette[(slot - 1) % 10];
}

static void slot_label(FILE *f, const struct tr *t, uint32_t slot)
{
    if (slot == SLOT_UNOWNED)
        fputs("not referenced yet", f);
    else if (slot == SLOT_OTHER)
        fprintf(f, "processes P%u and later", HTML_PROCS + 1);
    else if (slot == SLOT_VIDMM)
        fputs("vidmm itself (page tables, paging buffers)", f);
    else {
        fprintf(f, "P%u ", slot);
        html_escape(f, t->obj[TR_PROC][slot].name);
    }
}

static const char *const op_colour[NOPS] = {
    "#4e79a7", "#59a14f", "#e15759", "#f28e2b", "#edc948", "#76b7b2", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac", "#17becf", "#bcbd22", "#8c564b", "#e377c2", "#7f7f7f", "#aec7e8", "#98df8a",
};

static const char *op_name(int op)
{
    const char *n = tr_paging_op_name(op);
    return n ? n : "other";
}

static void swatch(FILE *f, const char *colour, int dashed)
{
    if (dashed)
        fprintf(f, "<svg class=\"sw\" width=\"22\" height=\"10\" aria-hidden=\"true\"><path d=\"M1 5H21\" "
                   "stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"4 3\"/></svg>",
                colour);
    else
        fprintf(f, "<svg class=\"sw\" width=\"12\" height=\"12\" aria-hidden=\"true\"><rect width=\"12\" "
                   "height=\"12\" fill=\"%s\"/></svg>",
                colour);
}

/* ---- chart scaffolding ----------------------------------------------- */

/* Smallest power of two >= v / 4 (at least 1): byte axes get 1, 2, 4, 8
 * MiB ... steps, which read as sizes. */
static uint64_t byte_step(uint64_t v)
{
    uint64_t want = v / 4 + (v % 4 != 0), step = 1;
    while (step < want && step < (UINT64_MAX >> 1))
        step <<= 1;
    return step;
}

/* 1, 2, 5 x 10^k, about six ticks over [0, tmax]. */
static uint64_t time_step(uint64_t tmax)
{
    uint64_t step = 1;
    for (;;) {
        static const uint64_t m[3] = { 1, 2, 5 };
        for (int i = 0; i < 3; i++)
            if (tmax / (step * m[i]) <= 6)
                return step * m[i];
        step *= 10;
    }
}

static void svg_open(FILE *f, const char *id, const struct frame *fr, const char *title)
{
    fprintf(f, "<svg id=\"%s\" class=\"chart\" role=\"img\" aria-label=\"", id);
    html_escape(f, title);
    fprintf(f, "\" viewBox=\"0 0 %d %u\" width=\"%d\" height=\"%u\" xmlns=\"http://www.w3.org/2000/svg\">\n<title>",
            W, fr->h, W, fr->h);
    html_escape(f, title);
    fprintf(f, "</title>\n");
}

/* Axes, grid lines and tick labels: bytes up y; along x simulated time,
 * or with `calls` call numbers. */
static void axes(FILE *f, const struct frame *fr, uint64_t ystep, int calls)
{
    char b[48];
    fprintf(f, "<rect class=\"plot\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%u\"/>\n", PLOT_L, PLOT_T,
            PLOT_R - PLOT_L, fr->bottom - PLOT_T);
    fprintf(f, "<g class=\"grid\">");
    for (uint64_t v = ystep; v <= fr->vmax; v += ystep) {
        fprintf(f, "<path d=\"M%d ", PLOT_L);
        px(f, yv(fr, v));
        fprintf(f, "H%d\"/>", PLOT_R);
    }
    fprintf(f, "</g>\n<g class=\"ylab\">");
    for (uint64_t v = 0; v <= fr->vmax; v += ystep) {
        fprintf(f, "<text x=\"%d\" y=\"", PLOT_L - 4);
        px(f, yv(fr, v) + 35);
        fprintf(f, "\">%s</text>", size_str(v, b, sizeof b));
    }
    fprintf(f, "</g>\n<g class=\"xlab\">");
    uint64_t ts = time_step(fr->tmax);
    for (uint64_t v = 0; v <= fr->tmax; v += ts) {
        fprintf(f, "<path class=\"tick\" d=\"M");
        px(f, xt(fr, v));
        fprintf(f, " %uV%u\"/><text x=\"", fr->bottom, fr->bottom + 4);
        px(f, xt(fr, v));
        /* A label near the right edge ends at its tick, inside the chart. */
        fprintf(f, "\" y=\"%u\"%s>%s</text>", fr->bottom + 15,
                xt(fr, v) + 300 > (uint64_t)W * 10 ? " class=\"end\"" : "",
                calls ? (snprintf(b, sizeof b, "%" PRIu64, v), b) : time_str(v, b, sizeof b));
    }
    fprintf(f, "</g>\n<text class=\"axis-title\" x=\"%d\" y=\"%u\">%s</text>\n", PLOT_R, fr->h - 2,
            calls ? "calls" : "simulated time");
}

/* ---- occupancy: stacked steps per segment ------------------------------ */

static uint64_t point_total(const uint64_t *occ)
{
    uint64_t sum = 0;
    for (int k = 0; k < NSLOT; k++)
        sum += occ[k];
    return sum;
}

static void occupancy_chart(FILE *f, struct tr *t, const struct html_series *s, uint32_t id, uint64_t tmax)
{
    const struct vidmm_segment_info *si = &s->seg[id];
    char a[32], title[160], idbuf[32];
    uint64_t peak = 0;
    for (uint32_t i = 0; i < s->npts; i++) {
        uint64_t tot = point_total(occ_of(s->val + (size_t)i * s->stride, id));
        if (tot > peak)
            peak = tot;
    }
    struct frame fr = { 220, 192, tmax, 0 };
    /* A memory segment is drawn against its size, so fullness shows;
     * system memory and apertures are far larger than what is used. */
    uint64_t ystep;
    if (si->kind == VIDMM_SEGMENT_KIND_MEMORY && si->size) {
        fr.vmax = si->size;
        ystep = byte_step(fr.vmax);
    } else {
        ystep = byte_step(peak ? peak : si->page_size ? si->page_size : 4096);
        fr.vmax = (peak + ystep - 1) / ystep * ystep;
        if (!fr.vmax)
            fr.vmax = ystep * 4;
    }
    snprintf(idbuf, sizeof idbuf, "occupancy-seg%u", id);
    snprintf(title, sizeof title, "Segment %u (%s, %s): bytes placed over time, by owning process", id,
             vidmm_segment_kind_str(si->kind), size_str(si->size, a, sizeof a));
    fprintf(f, "<figure>\n");
    svg_open(f, idbuf, &fr, title);
    axes(f, &fr, ystep, 0);

    /* Layers bottom-up: processes, then unreferenced allocations, then
     * vidmm's own bytes; a layer that stays empty is not drawn. */
    static const uint32_t order_tail[3] = { SLOT_OTHER, SLOT_UNOWNED, SLOT_VIDMM };
    uint32_t order[NSLOT], no = 0;
    for (uint32_t k = 1; k <= HTML_PROCS; k++)
        order[no++] = k;
    for (int k = 0; k < 3; k++)
        order[no++] = order_tail[k];
    int drawn = 0;
    for (uint32_t li = 0; li < no; li++) {
        uint32_t slot = order[li];
        int any = 0;
        for (uint32_t i = 0; i < s->npts && !any; i++)
            any = occ_of(s->val + (size_t)i * s->stride, id)[slot] != 0;
        if (!any)
            continue;
        /* Top edge left to right, bottom edge (the layers below) back. */
        fprintf(f, "<path class=\"series\" fill=\"%s\" d=\"", slot_colour(slot));
        struct pen p = { f, 0, 0, 0 };
        pen_move(&p, xt(&fr, 0), yv(&fr, 0));
        for (uint32_t i = 0; i < s->npts; i++) {
            const uint64_t *occ = occ_of(s->val + (size_t)i * s->stride, id);
            uint64_t top = 0;
            for (uint32_t j = 0; j <= li; j++)
                top += occ[order[j]];
            pen_h(&p, xt(&fr, s->time[i]));
            pen_v(&p, yv(&fr, top));
        }
        pen_h(&p, xt(&fr, tmax));
        for (uint32_t i = s->npts; i-- > 0;) {
            const uint64_t *occ = occ_of(s->val + (size_t)i * s->stride, id);
            uint64_t bot = 0;
            for (uint32_t j = 0; j < li; j++)
                bot += occ[order[j]];
            pen_v(&p, yv(&fr, bot));
            pen_h(&p, xt(&fr, s->time[i]));
            /* Before point i the state was point i-1's (or empty). */
            uint64_t prev = 0;
            if (i) {
                const uint64_t *po = occ_of(s->val + (size_t)(i - 1) * s->stride, id);
                for (uint32_t j = 0; j < li; j++)
                    prev += po[order[j]];
            }
            pen_v(&p, yv(&fr, prev));
        }
        pen_h(&p, xt(&fr, 0));
        pen_flush(&p);
        fprintf(f, "Z\"><title>");
        slot_label(f, t, slot);
        fprintf(f, "</title></path>\n");
        drawn = 1;
    }
    if (!drawn)
        fprintf(f, "<text class=\"empty\" x=\"%d\" y=\"%u\">nothing placed here during the run</text>\n",
                (PLOT_L + PLOT_R) / 2, (PLOT_T + fr.bottom) / 2);
    fprintf(f, "</svg>\n<figcaption>Segment %u (%s, %s): peak %s", id, vidmm_segment_kind_str(si->kind),
            size_str(si->size, a, sizeof a), size_str(peak, title, sizeof title));
    fprintf(f, "%s.</figcaption>\n</figure>\n",
            si->kind == VIDMM_SEGMENT_KIND_MEMORY ? "; the axis spans the whole segment" : "");
}

/* ---- usage against budget: lines per process ------------------------- */

/* Values of process p's usage (k 0) or budget (k 1) in group g. */
static uint64_t use_at(const struct html_series *s, uint32_t i, uint32_t p, int g, int k)
{
    return use_of(s, s->val + (size_t)i * s->stride, p)[2 * g + k];
}

static void usage_chart(FILE *f, struct tr *t, const struct html_series *s, int g, uint64_t tmax)
{
    static const char *const gname[2] = { "local", "non-local" };
    uint32_t nproc = t->nobj[TR_PROC] < HTML_PROCS ? t->nobj[TR_PROC] : HTML_PROCS;
    uint64_t peak[2] = { 0, 0 };     /* usage, budget */
    for (uint32_t i = 0; i < s->npts; i++)
        for (uint32_t p = 1; p <= nproc; p++)
            for (int k = 0; k < 2; k++) {
                uint64_t v = use_at(s, i, p, g, k);
                if (v != ABSENT && v > peak[k])
                    peak[k] = v;
            }
    char id[32], title[128], b[32];
    if (!peak[0] && !peak[1]) {
        /* An IoMmu adapter has no local memory: say so, no empty chart. */
        fprintf(f, "<p class=\"note\">No process had %s memory usage or budget during the run.</p>\n", gname[g]);
        return;
    }
    if (!peak[0]) {
        /* Budgets alone (every process has a non-local one on a discrete
         * GPU) would draw flat zero lines under a budget line: a chart
         * that looks like data and has none. */
        fprintf(f, "<p class=\"note\">No process used %s memory during the run (budgets up to %s).</p>\n",
                gname[g], size_str(peak[1], b, sizeof b));
        return;
    }
    /* The axis follows usage: a budget far above it (the default 4 GiB
     * of non-local memory) would flatten every usage line, so budgets
     * above four times the highest usage are left off and named. */
    uint64_t top = peak[0];
    uint64_t bud_keep = 0;
    for (uint32_t i = 0; i < s->npts; i++)
        for (uint32_t p = 1; p <= nproc; p++) {
            uint64_t v = use_at(s, i, p, g, 1);
            if (v != ABSENT && (!peak[0] || v / 4 <= peak[0]) && v > bud_keep)
                bud_keep = v;
        }
    if (bud_keep > top)
        top = bud_keep;
    struct frame fr = { 240, 212, tmax, 0 };
    uint64_t ystep = byte_step(top ? top : 1u << 20);
    fr.vmax = top ? (top + ystep - 1) / ystep * ystep : 4 * ystep;
    snprintf(id, sizeof id, "usage-%s", gname[g]);
    snprintf(title, sizeof title, "%s memory: usage (solid) against budget (dashed) per process over time",
             g ? "Non-local" : "Local");
    fprintf(f, "<figure>\n");
    svg_open(f, id, &fr, title);
    axes(f, &fr, ystep, 0);
    for (uint32_t p = 1; p <= nproc; p++) {
        for (int k = 1; k >= 0; k--) {   /* budget under usage */
            int any = 0;
            for (uint32_t i = 0; i < s->npts && !any; i++)
                any = use_at(s, i, p, g, k) <= fr.vmax;
            if (!any)
                continue;
            fprintf(f, "<path class=\"series %s\" fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s d=\"",
                    k ? "budget" : "usage", slot_colour(p), k ? "1.5" : "2",
                    k ? " stroke-dasharray=\"6 4\"" : "");
            /* Steps; the line lifts where the process does not exist
             * or the value is above the axis. */
            struct pen pn = { f, 0, 0, 0 };
            int down = 0;
            for (uint32_t i = 0; i < s->npts; i++) {
                uint64_t v = use_at(s, i, p, g, k);
                uint64_t x = xt(&fr, s->time[i]);
                if (v > fr.vmax) {
                    if (down) {
                        pen_h(&pn, x);
                        pen_flush(&pn);
                    }
                    down = 0;
                    continue;
                }
                if (!down) {
                    pen_move(&pn, x, yv(&fr, v));
                    down = 1;
                } else {
                    pen_h(&pn, x);
                    pen_v(&pn, yv(&fr, v));
                }
            }
            if (down) {
                pen_h(&pn, xt(&fr, tmax));
                pen_flush(&pn);
            }
            fprintf(f, "\"><title>");
            slot_label(f, t, p);
            fprintf(f, " %s</title></path>\n", k ? "budget" : "usage");
        }
    }
    fprintf(f, "</svg>\n<figcaption>%s memory (vidmm_query_video_memory_info, segment group %s): highest usage %s",
            g ? "Non-local" : "Local", gname[g], size_str(peak[0], b, sizeof b));
    /* Name the budgets left off the axis, once per process. */
    int first = 1;
    for (uint32_t p = 1; p <= nproc; p++) {
        uint64_t high = 0;
        for (uint32_t i = 0; i < s->npts; i++) {
            uint64_t v = use_at(s, i, p, g, 1);
            if (v != ABSENT && v > fr.vmax && v > high)
                high = v;
        }
        if (!high)
            continue;
        fprintf(f, "%s", first ? "; budgets above the axis: " : ", ");
        slot_label(f, t, p);
        fprintf(f, " %s", size_str(high, b, sizeof b));
        first = 0;
    }
    if (t->nobj[TR_PROC] > HTML_PROCS)
        fprintf(f, "; processes after P%u are not drawn", HTML_PROCS);
    fprintf(f, ".</figcaption>\n</figure>\n");
}

/* ---- paging traffic: stacked bars per interval of calls ---------------- */

static void paging_chart(FILE *f, const struct html_series *s)
{
    uint64_t ncalls = s->ncalls ? s->ncalls : 1;
    uint64_t nb = (ncalls + s->pwidth - 1) / s->pwidth;
    if (nb > HTML_MAX_POINTS)
        nb = HTML_MAX_POINTS;
    /* Bars of a power of two of buckets, so intervals are round numbers
     * of calls like the buckets. */
    uint64_t group = 1;
    while (nb > group * PAGING_BARS)
        group *= 2;
    uint64_t nbars = (nb + group - 1) / group, interval = group * s->pwidth;
    uint64_t peak = 0, busy = 0;
    for (uint64_t j = 0; j < nbars; j++) {
        uint64_t sum = 0;
        for (uint64_t b = j * group; b < (j + 1) * group && b < nb; b++)
            for (int k = 0; k < NOPS; k++)
                sum += s->paging[b][k];
        if (sum > peak)
            peak = sum;
        busy += sum != 0;
    }
    char title[160], b1[32], b2[32];
    snprintf(title, sizeof title, "Paging traffic: bytes per %" PRIu64 " call%s, by paging operation", interval,
             interval == 1 ? "" : "s");
    /* The x axis counts calls to the last one, so the bars span the run. */
    struct frame fr = { 240, 212, ncalls, 0 };
    uint64_t ystep = byte_step(peak ? peak : 1u << 20);
    fr.vmax = peak ? (peak + ystep - 1) / ystep * ystep : 4 * ystep;
    fprintf(f, "<figure>\n");
    svg_open(f, "paging-bandwidth", &fr, title);
    axes(f, &fr, ystep, 1);
    int drawn = 0;
    for (int k = 0; k < NOPS; k++) {
        if (!s->ops_seen[k])
            continue;
        fprintf(f, "<path class=\"series\" fill=\"%s\" d=\"", op_colour[k]);
        for (uint64_t j = 0; j < nbars; j++) {
            uint64_t below = 0, mine = 0;
            for (uint64_t b = j * group; b < (j + 1) * group && b < nb; b++)
                for (int o = 0; o < NOPS; o++) {
                    if (o < k)
                        below += s->paging[b][o];
                    else if (o == k)
                        mine += s->paging[b][o];
                }
            if (!mine)
                continue;
            uint64_t yb = yv(&fr, below), yt = yv(&fr, below + mine);
            if (yt == yb)
                yt = yb - 1;         /* a tenth of a pixel: still there */
            fputc('M', f);
            px(f, xt(&fr, j * interval));
            fputc(' ', f);
            px(f, yb);
            fputc('H', f);
            px(f, xt(&fr, (j + 1) * interval));
            fputc('V', f);
            px(f, yt);
            fputc('H', f);
            px(f, xt(&fr, j * interval));
            fputc('Z', f);
        }
        fprintf(f, "\"><title>%s: %s</title></path>\n", op_name(k), size_str(s->ops_seen[k], b2, sizeof b2));
        drawn = 1;
    }
    if (!drawn)
        fprintf(f, "<text class=\"empty\" x=\"%d\" y=\"%u\">nothing paged</text>\n", (PLOT_L + PLOT_R) / 2,
                (PLOT_T + fr.bottom) / 2);
    fprintf(f, "</svg>\n<figcaption>Bytes each paging operation moved or wrote per %" PRIu64 " call%s (the "
               "adapter opening is call 0); %" PRIu64 " of %" PRIu64 " intervals paged, the busiest %s. Counted "
               "per call rather than per simulated time: the simulated clock charges paging by its bytes, so a "
               "rate over it would be the same whenever the engine is busy.</figcaption>\n</figure>\n",
            interval, interval == 1 ? "" : "s", busy, nbars, size_str(peak, b1, sizeof b1));
}

/* ---- memory maps ------------------------------------------------------ */

struct extent {
    uint32_t segment, alloc, slot;
    uint64_t offset, size;
};

static int extent_cmp(const void *pa, const void *pb)
{
    const struct extent *a = pa, *b = pb;
    if (a->segment != b->segment)
        return a->segment < b->segment ? -1 : 1;
    if (a->offset != b->offset)
        return a->offset < b->offset ? -1 : 1;
    return a->alloc < b->alloc ? -1 : a->alloc > b->alloc;
}

/* The accounting owner's slot of allocation a after the last call. */
static uint32_t owner_slot(struct tr *t, uint32_t a)
{
    struct vidmm_residency_state rs;
    if (vidmm_allocation_residency(t->adapter, t->obj[TR_ALLOC][a].h, &rs) < 0 || !rs.owner)
        return SLOT_UNOWNED;
    for (uint32_t p = 1; p <= t->nobj[TR_PROC]; p++)
        if (t->obj[TR_PROC][p].alive && t->obj[TR_PROC][p].h == rs.owner)
            return proc_slot(p);
    return SLOT_UNOWNED;
}

/* Every extent of every live allocation with its owner's slot, sorted by
 * segment and offset. */
static struct extent *extents(struct tr *t, size_t *count)
{
    size_t n;
    struct tr_extent *te = tr_extents(t, &n);
    struct extent *ex = te ? malloc((n ? n : 1) * sizeof(*ex)) : NULL;
    if (!ex) {
        free(te);
        *count = 0;
        return NULL;
    }
    /* tr_extents lists an allocation's extents together: one owner
     * query per allocation. */
    uint32_t last = 0, slot = SLOT_UNOWNED;
    for (size_t i = 0; i < n; i++) {
        if (te[i].alloc != last) {
            last = te[i].alloc;
            slot = owner_slot(t, last);
        }
        ex[i] = (struct extent){ te[i].segment, te[i].alloc, slot, te[i].offset, te[i].size };
    }
    free(te);
    qsort(ex, n, sizeof(*ex), extent_cmp);
    *count = n;
    return ex;
}

#define MAP_ROWS 8
#define MAP_ROW_H 20
#define MAP_ROW_GAP 6
#define MAP_TOP 6

/* [off, off + size) of the segment as rectangles, one per row it spans. */
static void map_rects(FILE *f, uint64_t off, uint64_t size, uint64_t row_bytes, const char *cls, const char *fill,
                      uint64_t min_w10)
{
    uint64_t end = off + size;
    while (off < end) {
        uint64_t row = off / row_bytes, row_end = (row + 1) * row_bytes;
        uint64_t e = end < row_end ? end : row_end;
        uint64_t x0 = PLOT_L * 10 + muldiv(off - row * row_bytes, (PLOT_R - PLOT_L) * 10, row_bytes);
        uint64_t x1 = PLOT_L * 10 + muldiv(e - row * row_bytes, (PLOT_R - PLOT_L) * 10, row_bytes);
        uint64_t w = x1 - x0 < min_w10 ? min_w10 : x1 - x0;
        fprintf(f, "<rect class=\"%s\" x=\"", cls);
        px(f, x0);
        fprintf(f, "\" y=\"%" PRIu64 "\" width=\"", (uint64_t)(MAP_TOP + row * (MAP_ROW_H + MAP_ROW_GAP)));
        px(f, w);
        fprintf(f, "\" height=\"%d\"%s%s%s/>", MAP_ROW_H, fill ? " fill=\"" : "", fill ? fill : "", fill ? "\"" : "");
        off = e;
    }
}

/* Rectangles carry their tooltip in a <g><title>, so one title serves an
 * extent that wraps over two rows. */
static void map_free(FILE *f, uint64_t off, uint64_t size, uint64_t row_bytes)
{
    char b[32];
    fprintf(f, "<g><title>free or vidmm&#39;s own: 0x%" PRIx64 ", %s</title>", off, size_str(size, b, sizeof b));
    map_rects(f, off, size, row_bytes, "free", NULL, 0);
    fprintf(f, "</g>\n");
}

static void memory_map(FILE *f, struct tr *t, uint32_t id, const struct extent *ex, size_t n)
{
    struct vidmm_segment_info si;
    if (vidmm_segment_query(t->adapter, id, &si) < 0 || !si.size)
        return;
    char a[32], b[32], c[32], title[160], idbuf[32];
    uint64_t page = si.page_size ? si.page_size : 4096;
    uint64_t row_bytes = (si.size / MAP_ROWS + page - 1) / page * page;
    uint32_t h = MAP_TOP + MAP_ROWS * (MAP_ROW_H + MAP_ROW_GAP);
    snprintf(idbuf, sizeof idbuf, "memmap-seg%u", id);
    snprintf(title, sizeof title, "Segment %u (%s, %s) after the last call: allocations along its address range",
             id, vidmm_segment_kind_str(si.kind), size_str(si.size, a, sizeof a));
    struct frame fr = { h, h, 1, 1 };
    fprintf(f, "<figure>\n");
    svg_open(f, idbuf, &fr, title);
    fprintf(f, "<g class=\"ylab\">");
    for (uint32_t r = 0; r < MAP_ROWS && r * row_bytes < si.size; r++)
        fprintf(f, "<text x=\"%d\" y=\"%u\">0x%" PRIx64 "</text>", PLOT_L - 4,
                MAP_TOP + r * (MAP_ROW_H + MAP_ROW_GAP) + 14, r * row_bytes);
    fprintf(f, "</g>\n");
    /* Gaps between the tool's allocations, then the allocations (an
     * allocation of several contiguous extents is one rectangle). */
    uint64_t at = 0, tool = 0, count = 0;
    for (size_t i = 0; i < n; i++) {
        if (ex[i].segment != id)
            continue;
        if (ex[i].offset > at)
            map_free(f, at, ex[i].offset - at, row_bytes);
        if (ex[i].offset + ex[i].size > at)
            at = ex[i].offset + ex[i].size;
    }
    if (at < si.size)
        map_free(f, at, si.size - at, row_bytes);
    for (size_t i = 0; i < n; i++) {
        if (ex[i].segment != id)
            continue;
        uint64_t off = ex[i].offset, size = ex[i].size;
        while (i + 1 < n && ex[i + 1].segment == id && ex[i + 1].alloc == ex[i].alloc &&
               ex[i + 1].offset == off + size)
            size += ex[++i].size;
        const struct tr_obj *o = &t->obj[TR_ALLOC][ex[i].alloc];
        fprintf(f, "<g class=\"series\"><title>A%u ", ex[i].alloc);
        html_escape(f, o->name);
        fprintf(f, " (");
        slot_label(f, t, ex[i].slot);
        fprintf(f, "): 0x%" PRIx64 ", %s</title>", off, size_str(size, b, sizeof b));
        /* Half a pixel at least, so a page in a large segment shows. */
        map_rects(f, off, size, row_bytes, "alloc", slot_colour(ex[i].slot), 5);
        fprintf(f, "</g>\n");
        tool += size;
        count++;
    }
    fprintf(f, "</svg>\n<figcaption>Segment %u: %" PRIu64 " allocation extents of the tool, %s; free %s (largest "
               "range %s); each row is %s. Gaps are free or hold what vidmm uses itself.</figcaption>\n</figure>\n",
            id, count, size_str(tool, a, sizeof a), size_str(si.free_bytes, b, sizeof b),
            size_str(si.largest_free, c, sizeof c), size_str(row_bytes, title, sizeof title));
}

/* System memory has no GPU address range to draw: its allocations are
 * shown packed, one band per owning process, as shares of the bytes. */
static void system_map(FILE *f, struct tr *t, const struct extent *ex, size_t n)
{
    uint64_t by_slot[NSLOT] = { 0 }, cnt[NSLOT] = { 0 }, total = 0;
    uint32_t last = 0;
    for (size_t i = 0; i < n; i++) {
        if (ex[i].segment != 0)
            continue;
        by_slot[ex[i].slot] += ex[i].size;
        if (ex[i].alloc != last)
            cnt[ex[i].slot]++;
        last = ex[i].alloc;
        total += ex[i].size;
    }
    char b[32];
    struct frame fr = { MAP_TOP + MAP_ROW_H + MAP_ROW_GAP, 0, 1, 1 };
    fprintf(f, "<figure>\n");
    svg_open(f, "memmap-seg0", &fr,
             "Segment 0 (system memory) after the last call: bytes of the allocations there, by owning process");
    uint64_t at = 0;
    for (uint32_t slot = 0; slot < NSLOT; slot++) {
        if (!by_slot[slot])
            continue;
        uint64_t x0 = PLOT_L * 10 + muldiv(at, (PLOT_R - PLOT_L) * 10, total);
        at += by_slot[slot];
        uint64_t x1 = PLOT_L * 10 + muldiv(at, (PLOT_R - PLOT_L) * 10, total);
        fprintf(f, "<rect class=\"alloc series\" x=\"");
        px(f, x0);
        fprintf(f, "\" y=\"%d\" width=\"", MAP_TOP);
        px(f, x1 - x0 ? x1 - x0 : 5);
        fprintf(f, "\" height=\"%d\" fill=\"%s\"><title>", MAP_ROW_H, slot_colour(slot));
        slot_label(f, t, slot);
        fprintf(f, ": %" PRIu64 " allocations, %s</title></rect>\n", cnt[slot], size_str(by_slot[slot], b, sizeof b));
    }
    if (!total)
        fprintf(f, "<rect class=\"free\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"><title>no allocation in system "
                   "memory</title></rect>\n",
                PLOT_L, MAP_TOP, PLOT_R - PLOT_L, MAP_ROW_H);
    fprintf(f, "</svg>\n<figcaption>Segment 0 (system memory): %s in the tool&#39;s allocations there (evicted ones "
               "and those that live in system memory), packed by process: system memory has no GPU address range "
               "to lay them along.</figcaption>\n</figure>\n",
            size_str(total, b, sizeof b));
}

/* ---- the page ------------------------------------------------------- */

static const char css[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:1.5em auto;max-width:980px;"
    "padding:0 1em;color:#222;background:#fff}\n"
    "h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}\n"
    "nav a{margin-right:1em}figure{margin:1em 0}figcaption{font-size:.85em;color:#555}\n"
    "svg.chart{display:block;max-width:100%;height:auto;font-size:11px}\n"
    "svg .plot{fill:#fafafa;stroke:#bbb}svg .grid path{stroke:#e4e4e4}svg .tick{stroke:#999}\n"
    "svg .ylab text{text-anchor:end;fill:#555}svg .xlab text{text-anchor:middle;fill:#555}"
    "svg .xlab text.end{text-anchor:end}\n"
    "svg .axis-title{text-anchor:end;fill:#777;font-style:italic}svg .empty{text-anchor:middle;fill:#999}\n"
    "svg .free{fill:#efefef;stroke:#d0d0d0;stroke-width:.5}svg .alloc{stroke:#fff;stroke-width:.3}\n"
    ".legend{font-size:.85em;margin:.3em 0}.legend span{display:inline-block;margin-right:1.2em;white-space:nowrap}\n"
    ".legend svg.sw{vertical-align:middle;margin-right:.3em}\n"
    "table{border-collapse:collapse;font-size:.85em;margin:.6em 0}th,td{border:1px solid #ddd;padding:.2em .6em}\n"
    "th{background:#f3f3f3;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}\n"
    "caption{text-align:left;font-weight:600;padding:.2em 0}.note{color:#555;font-style:italic}\n";

/* Legend of the owner slots that appear anywhere in the series or map. */
static void slot_legend(FILE *f, struct tr *t, const struct html_series *s, const struct extent *ex, size_t n)
{
    int used[NSLOT] = { 0 };
    for (uint32_t i = 0; i < s->npts; i++)
        for (uint32_t id = 0; id < s->nseg; id++)
            for (int k = 0; k < NSLOT; k++)
                used[k] |= occ_of(s->val + (size_t)i * s->stride, id)[k] != 0;
    for (size_t i = 0; i < n; i++)
        used[ex[i].slot] = 1;
    /* Every process, so the colours read the same in every section. */
    for (uint32_t k = 1; k <= HTML_PROCS && k <= t->nobj[TR_PROC]; k++)
        used[k] = 1;
    fprintf(f, "<p class=\"legend\">");
    static const uint32_t order[NSLOT] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, SLOT_OTHER, SLOT_UNOWNED,
                                           SLOT_VIDMM };
    for (int i = 0; i < NSLOT; i++) {
        uint32_t k = order[i];
        if (!used[k])
            continue;
        fprintf(f, "<span>");
        swatch(f, slot_colour(k), 0);
        slot_label(f, t, k);
        fprintf(f, "</span>");
    }
    fprintf(f, "</p>\n");
}

void html_write(struct tr *t, const struct html_series *s, FILE *f)
{
    uint64_t tmax = t->clock_us ? t->clock_us : 1;
    char b[32];
    size_t nex = 0;
    struct extent *ex = extents(t, &nex);

    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
               "<meta name=\"generator\" content=\"vidmm %s\">\n<title>vidmm report: ",
            VIDMM_VERSION_STRING);
    html_escape(f, t->hdr.scenario);
    fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>vidmm: scenario ", css);
    html_escape(f, t->hdr.scenario);
    fprintf(f, "</h1>\n<p>softgpu &#39;");
    html_escape(f, t->hdr.preset);
    fprintf(f, "&#39;, policy ");
    html_escape(f, t->hdr.policy);
    fprintf(f, ", seed %" PRIu64 "; %" PRIu64 " calls over %s of simulated time (1 &#181;s per call plus paging "
               "at 16 KiB per &#181;s, the clock of the --timeline file).</p>\n",
            t->hdr.seed, t->calls, time_str(tmax, b, sizeof b));
    fprintf(f, "<nav><a href=\"#occupancy\">occupancy</a><a href=\"#usage\">usage against budget</a>"
               "<a href=\"#paging\">paging traffic</a><a href=\"#memory-map\">memory maps</a>"
               "<a href=\"#summary\">summary</a></nav>\n");

    fprintf(f, "<section id=\"occupancy\">\n<h2>Segment occupancy over time</h2>\n");
    slot_legend(f, t, s, ex, nex);
    for (uint32_t id = 0; id < s->nseg; id++)
        occupancy_chart(f, t, s, id, tmax);
    fprintf(f, "</section>\n");

    fprintf(f, "<section id=\"usage\">\n<h2>Usage against budget</h2>\n<p class=\"legend\">");
    uint32_t nproc = t->nobj[TR_PROC] < HTML_PROCS ? t->nobj[TR_PROC] : HTML_PROCS;
    for (uint32_t p = 1; p <= nproc; p++) {
        fprintf(f, "<span>");
        swatch(f, slot_colour(p), 0);
        slot_label(f, t, p);
        fprintf(f, "</span>");
    }
    fprintf(f, "<span>");
    swatch(f, "#555", 1);
    fprintf(f, "budget</span></p>\n");
    for (int g = 0; g < 2; g++)
        usage_chart(f, t, s, g, tmax);
    fprintf(f, "</section>\n");

    fprintf(f, "<section id=\"paging\">\n<h2>Paging traffic</h2>\n<p class=\"legend\">");
    for (int k = 0; k < NOPS; k++)
        if (s->ops_seen[k]) {
            fprintf(f, "<span>");
            swatch(f, op_colour[k], 0);
            fprintf(f, "%s</span>", op_name(k));
        }
    fprintf(f, "</p>\n");
    paging_chart(f, s);
    fprintf(f, "</section>\n");

    fprintf(f, "<section id=\"memory-map\">\n<h2>Memory map after the last call</h2>\n");
    slot_legend(f, t, s, ex, nex);
    for (uint32_t id = 0; id < s->nseg; id++) {
        if (id == 0)
            system_map(f, t, ex, nex);
        else
            memory_map(f, t, id, ex, nex);
    }
    fprintf(f, "</section>\n");

    report_write_html(t, f);
    fprintf(f, "</body>\n</html>\n");
    free(ex);
}
