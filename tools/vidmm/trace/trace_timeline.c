/*
 * trace_timeline.c - the timeline: Chrome trace-event JSON (for Perfetto
 * or chrome://tracing) built from the calls the writer records.
 *
 * The clock is simulated, so a replay's timeline is the run's.  Each call
 * takes 1 us plus the time its paging would take at 16 KiB/us (about
 * 16 GB/s); the paging it caused is read as the change of
 * vidmm_adapter_query_info's per-operation counters across the call.  The
 * same per-call numbers go to an observer (tr_set_observer: the HTML
 * report's series), so its charts share the timeline's clock.
 */
#include "trace_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void json_escape(struct tr_buf *b, const char *s)
{
    char e[8];
    for (; *s; s++)
        tr_buf_printf(b, "%s", tr_json_char(*s, e));
}

void tl_meta(struct tr *t, const char *what, uint32_t pid, uint32_t tid, const char *name)
{
    if (!t->timeline)
        return;
    tr_buf_printf(t->timeline, ",\n{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%u,\"tid\":%u,\"args\":{\"name\":\"", what, pid,
                  tid);
    json_escape(t->timeline, name);
    tr_buf_printf(t->timeline, "\"}}");
}

void tr_enable_timeline(struct tr *t, struct tr_buf *buf)
{
    t->timeline = buf;
    tr_buf_printf(buf, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\"adapter (softgpu %s)\"}}",
                  t->hdr.preset);
    tl_meta(t, "thread_name", 0, 0, "calls");
    tl_meta(t, "thread_name", 0, 1, "paging engine");
    tl_meta(t, "thread_name", 0, 2, "residency");
    tl_meta(t, "thread_name", 0, 3, "display");
}

void tr_set_observer(struct tr *t, tr_observer_fn fn, void *ctx)
{
    t->observer = fn;
    t->observer_ctx = ctx;
}

void tr_start(struct tr *t)
{
    /* Opening the adapter already paged (the paging buffers' aperture
     * mapping): a first slice accounts for it, so the paging events add
     * up to the adapter's counters.  It is taken whether or not anything
     * is collected, so every output sees the same clock. */
    t->line_len = (size_t)snprintf(t->line, t->line_cap, "adapter open");
    t->track_pid = 0;
    t->track_tid = 0;
    memset(&t->last_ai, 0, sizeof t->last_ai);
    memset(&t->last_rs, 0, sizeof t->last_rs);
    tl_call(t, "adapter-open", "setup");
}

static void tl_counters(struct tr *t, uint64_t ts)
{
    /* Per process: local and non-local usage against budget. */
    if (t->counters_cap < t->nobj[TR_PROC] + 1) {
        uint32_t nc = t->nobj[TR_PROC] + 64;
        struct tr_counter_state *n = realloc(t->counters, (size_t)nc * sizeof(*n));
        if (!n)
            return;
        memset(n + t->counters_cap, 0, (size_t)(nc - t->counters_cap) * sizeof(*n));
        t->counters = n;
        t->counters_cap = nc;
    }
    for (uint32_t p = 1; p <= t->nobj[TR_PROC]; p++) {
        struct tr_obj *o = &t->obj[TR_PROC][p];
        if (!o->alive)
            continue;
        struct tr_counter_state *c = &t->counters[p];
        for (int g = 0; g < 2; g++) {
            struct vidmm_video_memory_info vi;
            if (vidmm_query_video_memory_info(t->adapter, o->h, (enum vidmm_segment_group)g, &vi) < 0)
                continue;
            if (c->valid && c->usage[g] == vi.current_usage && c->budget[g] == vi.budget)
                continue;
            c->usage[g] = vi.current_usage;
            c->budget[g] = vi.budget;
            tr_buf_printf(t->timeline,
                          ",\n{\"ph\":\"C\",\"name\":\"%s memory\",\"pid\":%u,\"tid\":0,\"ts\":%" PRIu64
                          ",\"args\":{\"usage\":%" PRIu64 ",\"budget\":%" PRIu64 "}}",
                          tr_group_name((enum vidmm_segment_group)g), p, ts, vi.current_usage, vi.budget);
        }
        c->valid = 1;
    }
}

/* Emit the events of the call just finished: the call slice on its track,
 * the paging it caused on the paging-engine track, evictions and restores
 * as instants, and counters that changed.  Also advances the clock. */
void tl_call(struct tr *t, const char *name, const char *cat)
{
    struct vidmm_adapter_info ai;
    struct vidmm_residency_stats rs;
    if (vidmm_adapter_query_info(t->adapter, &ai) < 0 || vidmm_residency_get_stats(t->adapter, &rs) < 0)
        return;
    uint64_t ts = t->clock_us, dur = 1, pd[17];
    for (int k = 0; k < 17; k++) {
        uint64_t ops = ai.paging_ops[k] - t->last_ai.paging_ops[k];
        uint64_t bytes = ai.paging_bytes[k] - t->last_ai.paging_bytes[k];
        pd[k] = ops ? (bytes / 16384 ? bytes / 16384 : 1) : 0;
        dur += pd[k];
    }
    if (t->timeline) {
        struct tr_buf *b = t->timeline;
        tr_buf_printf(b, ",\n{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"%s\",\"pid\":%u,\"tid\":%u,\"ts\":%" PRIu64
                         ",\"dur\":%" PRIu64 ",\"args\":{\"call\":\"",
                      name, cat, t->track_pid, t->track_tid, ts, dur);
        /* Long residency lists are cut: the trace has them in full. */
        char shortened[512];
        size_t n = t->line_len < sizeof shortened - 1 ? t->line_len : sizeof shortened - 1;
        memcpy(shortened, t->line, n);
        shortened[n] = '\0';
        json_escape(b, shortened);
        tr_buf_printf(b, "\"}}");
        uint64_t at = ts + 1;
        for (int k = 0; k < 17; k++) {
            if (!pd[k])
                continue;
            tr_buf_printf(b, ",\n{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"paging\",\"pid\":0,\"tid\":1,\"ts\":%" PRIu64
                             ",\"dur\":%" PRIu64 ",\"args\":{\"ops\":%" PRIu64 ",\"bytes\":%" PRIu64 "}}",
                          tr_paging_op_name(k) ? tr_paging_op_name(k) : "other", at, pd[k],
                          ai.paging_ops[k] - t->last_ai.paging_ops[k],
                          ai.paging_bytes[k] - t->last_ai.paging_bytes[k]);
            at += pd[k];
        }
        struct {
            const char *name;
            uint64_t n, bytes;
        } inst[3] = {
            { "evict", rs.evictions - rs.discards - (t->last_rs.evictions - t->last_rs.discards),
              rs.bytes_evicted - t->last_rs.bytes_evicted },
            { "discard", rs.discards - t->last_rs.discards, rs.bytes_discarded - t->last_rs.bytes_discarded },
            { "restore", rs.restores - t->last_rs.restores, rs.bytes_restored - t->last_rs.bytes_restored },
        };
        for (int i = 0; i < 3; i++)
            if (inst[i].n)
                tr_buf_printf(b, ",\n{\"ph\":\"i\",\"s\":\"t\",\"name\":\"%s\",\"pid\":0,\"tid\":2,\"ts\":%" PRIu64
                                 ",\"args\":{\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 "}}",
                              inst[i].name, ts, inst[i].n, inst[i].bytes);
        if (t->verb == TV_FLIP)
            tr_buf_printf(b, ",\n{\"ph\":\"i\",\"s\":\"t\",\"name\":\"flip\",\"pid\":0,\"tid\":3,\"ts\":%" PRIu64 "}",
                          ts + dur);
        tl_counters(t, ts + dur);
        /* Segment commitment, one counter per segment. */
        for (uint32_t id = 1; id < ai.segment_count && id < 9; id++) {
            struct vidmm_segment_info si;
            if (vidmm_segment_query(t->adapter, id, &si) == VIDMM_OK && (ts == 0 || pd[0] || pd[1] || pd[2] ||
                                                                         t->verb == TV_CREATE ||
                                                                         t->verb == TV_CREATE2 ||
                                                                         t->verb == TV_DESTROY))
                tr_buf_printf(b, ",\n{\"ph\":\"C\",\"name\":\"segment %u committed\",\"pid\":0,\"tid\":0,\"ts\":%" PRIu64
                                 ",\"args\":{\"bytes\":%" PRIu64 "}}",
                              id, ts + dur, si.committed);
        }
    }
    if (t->observer) {
        struct tr_tick k;
        memset(&k, 0, sizeof k);
        k.ts = ts;
        k.dur = dur;
        k.verb = t->verb;
        k.setup = !strcmp(cat, "setup");
        uint64_t at = ts + 1;
        for (int i = 0; i < 17; i++) {
            if (!pd[i])
                continue;
            k.paging_at[i] = at;
            k.paging_dur[i] = pd[i];
            k.paging_bytes[i] = ai.paging_bytes[i] - t->last_ai.paging_bytes[i];
            at += pd[i];
        }
        t->observer(t, &k, t->observer_ctx);
    }
    t->last_ai = ai;
    t->last_rs = rs;
    t->clock_us += dur;
}
