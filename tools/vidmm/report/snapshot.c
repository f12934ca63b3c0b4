/*
 * snapshot.c - the statistics snapshot (--snapshot) and the per-process
 * fdinfo text (--fdinfo) after the last call: both are the library's
 * (vidmm_adapter_stats_json, vidmm_process_fdinfo; docs/OBSERVABILITY.md),
 * written as they come.  The allocations carry the names the recording
 * layer gave them at creation ("A<id> <name>", trace_write_calls.c).
 */
#include "report.h"

#include <stdlib.h>

/* One text of the library's two-call pattern into f; the adapter does
 * not change between the calls here (one thread), but loop anyway. */
static void write_text(FILE *f, vidmm_status (*get)(struct tr *t, vidmm_handle h, char *buf, size_t size,
                                                    size_t *needed),
                       struct tr *t, vidmm_handle h)
{
    size_t n = 0;
    char *s = NULL;
    vidmm_status st = get(t, h, NULL, 0, &n);
    while (st == VIDMM_OK || st == VIDMM_E_BUFFER_TOO_SMALL) {
        char *ns = realloc(s, n);
        if (!ns)
            break;
        s = ns;
        st = get(t, h, s, n, &n);
        if (st == VIDMM_OK) {
            fputs(s, f);
            break;
        }
    }
    if (st < 0)
        fprintf(stderr, "vidmm: %s\n", vidmm_status_str(st));
    free(s);
}

static vidmm_status stats(struct tr *t, vidmm_handle h, char *buf, size_t size, size_t *needed)
{
    (void)h;
    return vidmm_adapter_stats_json(t->adapter, buf, size, needed);
}

static vidmm_status fdinfo(struct tr *t, vidmm_handle h, char *buf, size_t size, size_t *needed)
{
    return vidmm_process_fdinfo(t->adapter, h, buf, size, needed);
}

void snapshot_write(struct tr *t, FILE *f)
{
    write_text(f, stats, t, VIDMM_HANDLE_NULL);
}

void fdinfo_write(struct tr *t, FILE *f)
{
    for (uint32_t p = 1; p <= t->nobj[TR_PROC]; p++) {
        const struct tr_obj *o = &t->obj[TR_PROC][p];
        if (!o->alive)
            continue;
        fprintf(f, "# P%u %s\n", p, o->name);
        write_text(f, fdinfo, t, o->h);
        fputc('\n', f);
    }
}
