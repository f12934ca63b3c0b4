/*
 * report.c - the run/replay summary in text, JSON and CSV, and the
 * timeline file (see report.h).
 *
 * The numbers are gathered once into struct summary and then formatted,
 * so the formats (text, JSON, CSV, the HTML report's tables) always agree.  Every number is either a vidmm
 * query after the last call or a counter of the recording layer; the
 * replay of a synchronous run has the same calls and therefore the same
 * numbers.
 */
#include "report.h"

#include "cli/cli.h"
#include "html.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct sum_segment {
    struct vidmm_segment_info si;
    uint64_t traced_allocations, traced_bytes;   /* the tool's allocations placed here */
};

struct sum_process {
    uint32_t id;
    const char *name;
    int alive;
    struct vidmm_video_memory_info vmi[2];
    uint64_t faults;             /* GPU page faults vidmm attributed to it */
    uint32_t devices, devices_lost;
    uint64_t allocations;        /* allocations it owns (accounting owner) */
};

struct summary {
    struct vidmm_adapter_info ai;
    struct vidmm_residency_stats rs;
    struct sum_segment seg[16];
    uint32_t nseg;
    struct sum_process *proc;
    uint32_t nproc;
    uint64_t live_allocations, resident_allocations, evicted_allocations, offered_allocations;
    uint64_t process_faults, devices_lost;
    int final_check;             /* violations found by a check after the last call */
    struct vidmm_submit_stats ss;
};

static void gather(struct tr *t, struct summary *s)
{
    memset(s, 0, sizeof(*s));
    vidmm_adapter_query_info(t->adapter, &s->ai);
    vidmm_residency_get_stats(t->adapter, &s->rs);
    vidmm_submit_get_stats(t->adapter, &s->ss);
    s->nseg = s->ai.segment_count < 16 ? s->ai.segment_count : 16;
    for (uint32_t id = 0; id < s->nseg; id++)
        vidmm_segment_query(t->adapter, id, &s->seg[id].si);
    s->nproc = t->nobj[TR_PROC];
    s->proc = calloc(s->nproc + 1, sizeof(*s->proc));
    for (uint32_t p = 1; s->proc && p <= s->nproc; p++) {
        struct sum_process *sp = &s->proc[p - 1];
        struct tr_obj *o = &t->obj[TR_PROC][p];
        sp->id = p;
        sp->name = o->name;
        sp->alive = o->alive;
        if (!o->alive)
            continue;
        for (int g = 0; g < 2; g++)
            vidmm_query_video_memory_info(t->adapter, o->h, (enum vidmm_segment_group)g, &sp->vmi[g]);
        for (uint32_t d = 1; d <= t->nobj[TR_DEV]; d++) {
            struct tr_obj *dv = &t->obj[TR_DEV][d];
            struct vidmm_device_info di;
            if (dv->parent != p || !dv->alive || vidmm_device_query(t->adapter, dv->h, &di) < 0)
                continue;
            sp->devices++;
            sp->devices_lost += di.lost != 0;
            sp->faults += di.faults;
        }
        struct vidmm_process_info pi;
        if (vidmm_process_query(t->adapter, o->h, &pi) == VIDMM_OK && pi.faults > sp->faults)
            sp->faults = pi.faults;
        s->process_faults += sp->faults;
        s->devices_lost += sp->devices_lost;
    }
    for (uint32_t a = 1; a <= t->nobj[TR_ALLOC]; a++) {
        struct tr_obj *o = &t->obj[TR_ALLOC][a];
        if (!o->alive)
            continue;
        s->live_allocations++;
        struct vidmm_residency_state rs;
        struct vidmm_allocation_state as;
        if (vidmm_allocation_residency(t->adapter, o->h, &rs) == VIDMM_OK) {
            if (rs.resident)
                s->resident_allocations++;
            else
                s->evicted_allocations++;
            s->offered_allocations += rs.offered != 0;
            for (uint32_t p = 1; s->proc && p <= s->nproc; p++)
                if (rs.owner && t->obj[TR_PROC][p].alive && t->obj[TR_PROC][p].h == rs.owner)
                    s->proc[p - 1].allocations++;
        }
        if (vidmm_allocation_query(t->adapter, o->h, &as) == VIDMM_OK && as.segment_id < s->nseg) {
            s->seg[as.segment_id].traced_allocations++;
            s->seg[as.segment_id].traced_bytes += as.size;
        }
    }
    s->final_check = vidmm_adapter_check(t->adapter, NULL, 0) + (t->gpu ? softgpu_check(t->gpu) : 0);
}

static void gather_free(struct summary *s)
{
    free(s->proc);
}

static const char *sync_name(const struct tr *t)
{
    return t->hdr.synchronous ? "synchronous" : "asynchronous";
}

static const char *va_model(const struct tr *t)
{
    return t->gpummu ? "GpuMmu" : t->iommu ? "IoMmu" : "physical";
}

/* ---- text ----------------------------------------------------------- */

static const char *sz(uint64_t v, char *buf, size_t n)
{
    cli_format_size(v, buf, n);
    return buf;
}

static void write_text(struct tr *t, const struct summary *s, FILE *f)
{
    char a[32], b[32], c[32], d[32], e[32], g[32];
    fprintf(f, "== vidmm: scenario %s ==\n", t->hdr.scenario);
    if (t->hdr.plugin)   /* a plug-in: its own segments, sized from the scenario's (docs/VKGPU.md) */
        fprintf(f, "adapter: driver %s (options %s; scenario written for softgpu '%s') (%s), policy %s, seed %" PRIu64
                   ", system memory %s\n",
                t->hdr.driver, t->hdr.driver_options[0] ? t->hdr.driver_options : "-", t->hdr.preset, va_model(t),
                t->hdr.policy, t->hdr.seed, sz(t->hdr.system_memory, a, sizeof a));
    else
        fprintf(f, "adapter: softgpu '%s' (%s), %s paging, policy %s, seed %" PRIu64 ", system memory %s\n",
                t->hdr.preset, va_model(t), sync_name(t), t->hdr.policy, t->hdr.seed,
                sz(t->hdr.system_memory, a, sizeof a));
    fprintf(f, "calls: %" PRIu64 " (%" PRIu64 " failed), %" PRIu64 " frames\n", t->calls, t->failed_calls, t->frames);
    int any = 0;
    for (int i = 0; i < 128; i++) {
        vidmm_status st = (vidmm_status)(i - 110);
        if (!t->by_status[i] || st >= 0)
            continue;
        fprintf(f, "%s%s %" PRIu64, any ? ", " : "  failures by status: ", tr_status_name(st), t->by_status[i]);
        any = 1;
    }
    if (any)
        fputc('\n', f);

    fprintf(f, "\n== segments ==\n");
    fprintf(f, "%-3s %-9s %10s %7s %10s %10s %10s %12s %6s\n", "id", "kind", "size", "page", "committed", "free",
            "largest", "allocations", "tool");
    for (uint32_t id = 0; id < s->nseg; id++) {
        const struct vidmm_segment_info *si = &s->seg[id].si;
        char page[16];
        fprintf(f, "%-3u %-9s %10s %7s %10s %10s %10s %12" PRIu64 " %6" PRIu64 "\n", id,
                vidmm_segment_kind_str(si->kind), sz(si->size, a, sizeof a), sz(si->page_size, page, sizeof page),
                sz(si->committed, b, sizeof b), id ? sz(si->free_bytes, c, sizeof c) : "-",
                id ? sz(si->largest_free, d, sizeof d) : "-", si->allocations, s->seg[id].traced_allocations);
    }
    fprintf(f, "allocations: %" PRIu64 " live (%" PRIu64 " resident, %" PRIu64 " evicted, %" PRIu64 " offered)\n",
            s->live_allocations, s->resident_allocations, s->evicted_allocations, s->offered_allocations);

    fprintf(f, "\n== processes: usage against budget ==\n");
    fprintf(f, "%-18s %10s %10s %10s %10s %10s %6s %6s\n", "process", "local", "budget", "reserved", "non-local",
            "budget", "allocs", "faults");
    for (uint32_t i = 0; i < s->nproc; i++) {
        const struct sum_process *p = &s->proc[i];
        char label[48];
        snprintf(label, sizeof label, "P%u %s", p->id, p->name);
        if (!p->alive) {
            fprintf(f, "%-18s (destroyed)\n", label);
            continue;
        }
        fprintf(f, "%-18s %10s %10s %10s %10s %10s %6" PRIu64 " %6" PRIu64 "%s\n", label,
                sz(p->vmi[0].current_usage, a, sizeof a), sz(p->vmi[0].budget, b, sizeof b),
                sz(p->vmi[0].current_reservation, c, sizeof c), sz(p->vmi[1].current_usage, d, sizeof d),
                sz(p->vmi[1].budget, e, sizeof e), p->allocations, p->faults, p->devices_lost ? " LOST" : "");
    }

    const struct vidmm_residency_stats *r = &s->rs;
    fprintf(f, "\n== residency ==\n");
    fprintf(f, "make-resident: %" PRIu64 " calls (%" PRIu64 " pending, %" PRIu64 " over budget), %" PRIu64
               " trim notifications\n",
            r->make_resident_calls, t->pending, r->over_budget, r->trim_notifications);
    fprintf(f, "evictions: %" PRIu64 " (%s transferred), of them discarded clean: %" PRIu64 " (%s)\n", r->evictions,
            sz(r->bytes_evicted, a, sizeof a), r->discards, sz(r->bytes_discarded, b, sizeof b));
    fprintf(f, "restores: %" PRIu64 " (%s), relocations: %" PRIu64 " (%s)\n", r->restores,
            sz(r->bytes_restored, c, sizeof c), r->relocations, sz(r->bytes_relocated, d, sizeof d));

    fprintf(f, "\n== paging ==\n");
    fprintf(f, "buffers: %" PRIu64 " submitted, %" PRIu64 " restarts, fence %" PRIu64 "/%" PRIu64 "\n",
            s->ai.paging_buffers_submitted, s->ai.paging_restarts, s->ai.last_fence_completed,
            s->ai.last_fence_submitted);
    for (int k = 0; k < 17; k++) {
        if (!s->ai.paging_ops[k])
            continue;
        const char *name = tr_paging_op_name(k);
        fprintf(f, "  %-18s %8" PRIu64 " ops %12s\n", name ? name : "other", s->ai.paging_ops[k],
                sz(s->ai.paging_bytes[k], a, sizeof a));
    }
    fprintf(f, "fence waits: %" PRIu64 "\n", t->fence_waits);

    fprintf(f, "\n== submission ==\n");
    fprintf(f, "submissions: %" PRIu64 " virtual, %" PRIu64 " physical, %" PRIu64 " failed; %" PRIu64
               " commands built\n",
            t->submits_virtual, t->submits_physical, t->submit_failed, t->commands_built);
    fprintf(f, "patch locations: %" PRIu64 " written, %" PRIu64 " skipped (not moved)\n",
            s->ss.patch_locations_written, s->ss.patch_locations_skipped);
    fprintf(f, "context fence waits: %" PRIu64 "; eviction waits for GPU work: %" PRIu64 "\n", t->context_waits,
            s->ss.eviction_waits);
    fprintf(f, "GPU results checked: %" PRIu64 ", %" PRIu64 " mismatches\n", t->gpu_results,
            t->gpu_result_failures);

    fprintf(f, "\n== faults ==\n");
    fprintf(f, "GPU accesses that faulted: %" PRIu64 "; page faults reported by processes: %" PRIu64
               "; devices lost: %" PRIu64 "\n",
            t->gpu_faults, s->process_faults, s->devices_lost);

    fprintf(f, "\n== integrity ==\n");
    fprintf(f, "read-backs: %" PRIu64 " (%s checked), %" PRIu64 " mismatches\n", t->checks,
            sz(t->check_bytes, g, sizeof g), t->check_failures);
    fprintf(f, "adapter checks: %" PRIu64 ", %" PRIu64 " failed; after the last call: %s\n", t->adapter_checks,
            t->adapter_check_failures, s->final_check ? "FAILED" : "clean");
}

/* ---- JSON ----------------------------------------------------------- */

static void json_str(FILE *f, const char *s)
{
    char e[8];
    fputc('"', f);
    for (; *s; s++)
        fputs(tr_json_char(*s, e), f);
    fputc('"', f);
}

static void write_json(struct tr *t, const struct summary *s, FILE *f)
{
    fprintf(f, "{\n  \"format\": \"vidmm-report/1\",\n  \"vidmm_version\": \"%s\",\n  \"scenario\": ",
            VIDMM_VERSION_STRING);
    json_str(f, t->hdr.scenario);
    fprintf(f, ",\n  \"adapter\": {\"preset\": ");
    json_str(f, t->hdr.preset);
    fprintf(f, ", \"va_model\": \"%s\", \"synchronous\": %s, \"policy\": ", va_model(t),
            t->hdr.synchronous ? "true" : "false");
    json_str(f, t->hdr.policy);
    fprintf(f, ", \"seed\": %" PRIu64 ", \"system_memory\": %" PRIu64 "},\n", t->hdr.seed, t->hdr.system_memory);

    fprintf(f, "  \"calls\": {\"total\": %" PRIu64 ", \"failed\": %" PRIu64 ", \"frames\": %" PRIu64 ",\n",
            t->calls, t->failed_calls, t->frames);
    fprintf(f, "    \"by_verb\": {");
    int first = 1;
    for (int v = 0; v < TV_COUNT; v++) {
        if (!t->verb_calls[v])
            continue;
        fprintf(f, "%s\"%s\": {\"calls\": %" PRIu64 ", \"failed\": %" PRIu64 "}", first ? "" : ", ", tr_verb_names[v],
                t->verb_calls[v], t->verb_failed[v]);
        first = 0;
    }
    fprintf(f, "},\n    \"by_status\": {");
    first = 1;
    for (int i = 0; i < 128; i++) {
        if (!t->by_status[i])
            continue;
        fprintf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ", tr_status_name((vidmm_status)(i - 110)), t->by_status[i]);
        first = 0;
    }
    fprintf(f, "}},\n");

    fprintf(f, "  \"segments\": [\n");
    for (uint32_t id = 0; id < s->nseg; id++) {
        const struct vidmm_segment_info *si = &s->seg[id].si;
        fprintf(f,
                "    {\"id\": %u, \"kind\": \"%s\", \"size\": %" PRIu64 ", \"page_size\": %u, \"commit_limit\": %" PRIu64
                ", \"committed\": %" PRIu64 ", \"free\": %" PRIu64 ", \"largest_free\": %" PRIu64
                ", \"allocations\": %" PRIu64 ", \"tool_allocations\": %" PRIu64 ", \"tool_bytes\": %" PRIu64 "}%s\n",
                id, vidmm_segment_kind_str(si->kind), si->size, si->page_size, si->commit_limit, si->committed,
                si->free_bytes, si->largest_free, si->allocations, s->seg[id].traced_allocations,
                s->seg[id].traced_bytes, id + 1 < s->nseg ? "," : "");
    }
    fprintf(f, "  ],\n  \"allocations\": {\"live\": %" PRIu64 ", \"resident\": %" PRIu64 ", \"evicted\": %" PRIu64
               ", \"offered\": %" PRIu64 "},\n",
            s->live_allocations, s->resident_allocations, s->evicted_allocations, s->offered_allocations);

    fprintf(f, "  \"processes\": [\n");
    for (uint32_t i = 0; i < s->nproc; i++) {
        const struct sum_process *p = &s->proc[i];
        fprintf(f, "    {\"id\": \"P%u\", \"name\": ", p->id);
        json_str(f, p->name);
        fprintf(f, ", \"alive\": %s", p->alive ? "true" : "false");
        if (p->alive) {
            static const char *const gn[2] = { "local", "non_local" };
            for (int g = 0; g < 2; g++)
                fprintf(f,
                        ", \"%s\": {\"budget\": %" PRIu64 ", \"usage\": %" PRIu64 ", \"reservation\": %" PRIu64
                        ", \"available_for_reservation\": %" PRIu64 "}",
                        gn[g], p->vmi[g].budget, p->vmi[g].current_usage, p->vmi[g].current_reservation,
                        p->vmi[g].available_for_reservation);
            fprintf(f, ", \"allocations\": %" PRIu64 ", \"devices\": %u, \"devices_lost\": %u, \"faults\": %" PRIu64,
                    p->allocations, p->devices, p->devices_lost, p->faults);
        }
        fprintf(f, "}%s\n", i + 1 < s->nproc ? "," : "");
    }
    fprintf(f, "  ],\n");

    const struct vidmm_residency_stats *r = &s->rs;
    fprintf(f,
            "  \"residency\": {\"make_resident_calls\": %" PRIu64 ", \"pending\": %" PRIu64 ", \"over_budget\": %" PRIu64
            ", \"trim_notifications\": %" PRIu64 ",\n    \"evictions\": %" PRIu64 ", \"bytes_evicted\": %" PRIu64
            ", \"discards\": %" PRIu64 ", \"bytes_discarded\": %" PRIu64 ", \"restores\": %" PRIu64
            ", \"bytes_restored\": %" PRIu64 ", \"relocations\": %" PRIu64 ", \"bytes_relocated\": %" PRIu64 "},\n",
            r->make_resident_calls, t->pending, r->over_budget, r->trim_notifications, r->evictions, r->bytes_evicted,
            r->discards, r->bytes_discarded, r->restores, r->bytes_restored, r->relocations, r->bytes_relocated);

    fprintf(f, "  \"paging\": {\"buffers\": %" PRIu64 ", \"restarts\": %" PRIu64 ", \"fence_submitted\": %" PRIu64
               ", \"fence_completed\": %" PRIu64 ", \"operations\": {",
            s->ai.paging_buffers_submitted, s->ai.paging_restarts, s->ai.last_fence_submitted,
            s->ai.last_fence_completed);
    first = 1;
    for (int k = 0; k < 17; k++) {
        if (!s->ai.paging_ops[k])
            continue;
        const char *name = tr_paging_op_name(k);
        fprintf(f, "%s\"%s\": {\"ops\": %" PRIu64 ", \"bytes\": %" PRIu64 "}", first ? "" : ", ",
                name ? name : "other", s->ai.paging_ops[k], s->ai.paging_bytes[k]);
        first = 0;
    }
    fprintf(f, "}},\n");
    fprintf(f, "  \"fence_waits\": %" PRIu64 ",\n", t->fence_waits);
    fprintf(f, "  \"submission\": {\"virtual\": %" PRIu64 ", \"physical\": %" PRIu64 ", \"failed\": %" PRIu64
               ", \"commands_built\": %" PRIu64 ", \"patch_locations_written\": %" PRIu64
               ", \"patch_locations_skipped\": %" PRIu64 ", \"context_fence_waits\": %" PRIu64
               ", \"eviction_waits\": %" PRIu64 ", \"gpu_results\": %" PRIu64 ", \"gpu_result_mismatches\": %" PRIu64
               "},\n",
            t->submits_virtual, t->submits_physical, t->submit_failed, t->commands_built,
            s->ss.patch_locations_written, s->ss.patch_locations_skipped, t->context_waits, s->ss.eviction_waits,
            t->gpu_results, t->gpu_result_failures);
    fprintf(f, "  \"faults\": {\"gpu_accesses_faulted\": %" PRIu64 ", \"process_page_faults\": %" PRIu64
               ", \"devices_lost\": %" PRIu64 "},\n",
            t->gpu_faults, s->process_faults, s->devices_lost);
    fprintf(f, "  \"integrity\": {\"read_backs\": %" PRIu64 ", \"bytes_checked\": %" PRIu64 ", \"mismatches\": %" PRIu64
               ", \"adapter_checks\": %" PRIu64 ", \"adapter_check_failures\": %" PRIu64 ", \"final_check\": \"%s\"}\n",
            t->checks, t->check_bytes, t->check_failures, t->adapter_checks, t->adapter_check_failures,
            s->final_check ? "failed" : "clean");
    fprintf(f, "}\n");
}

/* ---- CSV ------------------------------------------------------------ */

/* One row per number: section,object,metric,value.  Long rather than
 * wide, so every section fits one header and a spreadsheet pivots it. */
static void row(FILE *f, const char *section, const char *object, const char *metric, uint64_t v)
{
    fprintf(f, "%s,%s,%s,%" PRIu64 "\n", section, object, metric, v);
}

static void write_csv(struct tr *t, const struct summary *s, FILE *f)
{
    fprintf(f, "section,object,metric,value\n");
    row(f, "run", t->hdr.scenario, "calls", t->calls);
    row(f, "run", t->hdr.scenario, "failed_calls", t->failed_calls);
    row(f, "run", t->hdr.scenario, "frames", t->frames);
    for (int v = 0; v < TV_COUNT; v++)
        if (t->verb_calls[v]) {
            row(f, "calls", tr_verb_names[v], "calls", t->verb_calls[v]);
            row(f, "calls", tr_verb_names[v], "failed", t->verb_failed[v]);
        }
    for (int i = 0; i < 128; i++)
        if (t->by_status[i])
            row(f, "status", tr_status_name((vidmm_status)(i - 110)), "calls", t->by_status[i]);
    for (uint32_t id = 0; id < s->nseg; id++) {
        char obj[32];
        const struct vidmm_segment_info *si = &s->seg[id].si;
        snprintf(obj, sizeof obj, "segment%u", id);
        row(f, "segment", obj, "size", si->size);
        row(f, "segment", obj, "committed", si->committed);
        row(f, "segment", obj, "free", si->free_bytes);
        row(f, "segment", obj, "largest_free", si->largest_free);
        row(f, "segment", obj, "allocations", si->allocations);
    }
    for (uint32_t i = 0; i < s->nproc; i++) {
        const struct sum_process *p = &s->proc[i];
        char obj[48];
        snprintf(obj, sizeof obj, "P%u:%s", p->id, p->name);
        if (!p->alive)
            continue;
        row(f, "process", obj, "local_usage", p->vmi[0].current_usage);
        row(f, "process", obj, "local_budget", p->vmi[0].budget);
        row(f, "process", obj, "local_reservation", p->vmi[0].current_reservation);
        row(f, "process", obj, "non_local_usage", p->vmi[1].current_usage);
        row(f, "process", obj, "non_local_budget", p->vmi[1].budget);
        row(f, "process", obj, "allocations", p->allocations);
        row(f, "process", obj, "faults", p->faults);
    }
    const struct vidmm_residency_stats *r = &s->rs;
    row(f, "residency", "adapter", "make_resident_calls", r->make_resident_calls);
    row(f, "residency", "adapter", "pending", t->pending);
    row(f, "residency", "adapter", "over_budget", r->over_budget);
    row(f, "residency", "adapter", "trim_notifications", r->trim_notifications);
    row(f, "residency", "adapter", "evictions", r->evictions);
    row(f, "residency", "adapter", "bytes_evicted", r->bytes_evicted);
    row(f, "residency", "adapter", "discards", r->discards);
    row(f, "residency", "adapter", "bytes_discarded", r->bytes_discarded);
    row(f, "residency", "adapter", "restores", r->restores);
    row(f, "residency", "adapter", "bytes_restored", r->bytes_restored);
    row(f, "paging", "adapter", "buffers", s->ai.paging_buffers_submitted);
    row(f, "paging", "adapter", "restarts", s->ai.paging_restarts);
    for (int k = 0; k < 17; k++)
        if (s->ai.paging_ops[k]) {
            const char *name = tr_paging_op_name(k);
            row(f, "paging", name ? name : "other", "ops", s->ai.paging_ops[k]);
            row(f, "paging", name ? name : "other", "bytes", s->ai.paging_bytes[k]);
        }
    row(f, "fences", "adapter", "waits", t->fence_waits);
    row(f, "submission", "adapter", "virtual", t->submits_virtual);
    row(f, "submission", "adapter", "physical", t->submits_physical);
    row(f, "submission", "adapter", "failed", t->submit_failed);
    row(f, "submission", "adapter", "commands_built", t->commands_built);
    row(f, "submission", "adapter", "patch_locations_written", s->ss.patch_locations_written);
    row(f, "submission", "adapter", "patch_locations_skipped", s->ss.patch_locations_skipped);
    row(f, "submission", "adapter", "context_fence_waits", t->context_waits);
    row(f, "submission", "adapter", "eviction_waits", s->ss.eviction_waits);
    row(f, "submission", "adapter", "gpu_results", t->gpu_results);
    row(f, "submission", "adapter", "gpu_result_mismatches", t->gpu_result_failures);
    row(f, "faults", "adapter", "gpu_accesses_faulted", t->gpu_faults);
    row(f, "faults", "adapter", "process_page_faults", s->process_faults);
    row(f, "faults", "adapter", "devices_lost", s->devices_lost);
    row(f, "integrity", "adapter", "read_backs", t->checks);
    row(f, "integrity", "adapter", "bytes_checked", t->check_bytes);
    row(f, "integrity", "adapter", "mismatches", t->check_failures);
    row(f, "integrity", "adapter", "adapter_checks", t->adapter_checks);
    row(f, "integrity", "adapter", "adapter_check_failures", t->adapter_check_failures);
    row(f, "integrity", "adapter", "final_check_violations", (uint64_t)s->final_check);
}

/* ---- HTML tables (the HTML report's summary) ------------------------ */

/* A size cell: readable, with the exact byte count as its tooltip. */
static void td_size(FILE *f, uint64_t v)
{
    char b[32];
    fprintf(f, "<td class=\"n\" title=\"%" PRIu64 " bytes\">%s</td>", v, sz(v, b, sizeof b));
}

static void td_num(FILE *f, uint64_t v)
{
    fprintf(f, "<td class=\"n\">%" PRIu64 "</td>", v);
}

static void kv_num(FILE *f, const char *k, uint64_t v)
{
    fprintf(f, "<tr><th>%s</th>", k);
    td_num(f, v);
    fprintf(f, "</tr>\n");
}

static void kv_size(FILE *f, const char *k, uint64_t v)
{
    fprintf(f, "<tr><th>%s</th>", k);
    td_size(f, v);
    fprintf(f, "</tr>\n");
}

static void write_html(struct tr *t, const struct summary *s, FILE *f)
{
    char a[32];
    fprintf(f, "<section id=\"summary\">\n<h2>Summary</h2>\n<p>Adapter: softgpu &#39;");
    html_escape(f, t->hdr.preset);
    fprintf(f, "&#39; (%s), %s paging, policy ", va_model(t), sync_name(t));
    html_escape(f, t->hdr.policy);
    fprintf(f, ", seed %" PRIu64 ", system memory %s.</p>\n", t->hdr.seed, sz(t->hdr.system_memory, a, sizeof a));

    fprintf(f, "<table id=\"summary-calls\">\n<caption>Calls</caption>\n");
    kv_num(f, "calls", t->calls);
    kv_num(f, "failed", t->failed_calls);
    kv_num(f, "frames", t->frames);
    for (int i = 0; i < 128; i++) {
        vidmm_status st = (vidmm_status)(i - 110);
        if (!t->by_status[i] || st >= 0)
            continue;
        fprintf(f, "<tr><th>failed with %s</th>", tr_status_name(st));
        td_num(f, t->by_status[i]);
        fprintf(f, "</tr>\n");
    }
    fprintf(f, "</table>\n");

    fprintf(f, "<table id=\"summary-segments\">\n<caption>Segments</caption>\n<tr><th>id</th><th>kind</th>"
               "<th>size</th><th>page</th><th>commit limit</th><th>committed</th><th>free</th><th>largest free</th>"
               "<th>allocations</th><th>of them the tool&#39;s</th></tr>\n");
    for (uint32_t id = 0; id < s->nseg; id++) {
        const struct vidmm_segment_info *si = &s->seg[id].si;
        fprintf(f, "<tr><td class=\"n\">%u</td><td>%s</td>", id, vidmm_segment_kind_str(si->kind));
        td_size(f, si->size);
        td_size(f, si->page_size);
        td_size(f, si->commit_limit);
        td_size(f, si->committed);
        if (id) {
            td_size(f, si->free_bytes);
            td_size(f, si->largest_free);
        } else {
            fprintf(f, "<td class=\"n\">-</td><td class=\"n\">-</td>");
        }
        td_num(f, si->allocations);
        td_num(f, s->seg[id].traced_allocations);
        fprintf(f, "</tr>\n");
    }
    fprintf(f, "</table>\n<p>Allocations: %" PRIu64 " live (%" PRIu64 " resident, %" PRIu64 " evicted, %" PRIu64
               " offered).</p>\n",
            s->live_allocations, s->resident_allocations, s->evicted_allocations, s->offered_allocations);

    fprintf(f, "<table id=\"summary-processes\">\n<caption>Processes: usage against budget</caption>\n<tr>"
               "<th>process</th><th>local</th><th>budget</th><th>reserved</th><th>non-local</th><th>budget</th>"
               "<th>allocations</th><th>faults</th><th>devices lost</th></tr>\n");
    for (uint32_t i = 0; s->proc && i < s->nproc; i++) {
        const struct sum_process *p = &s->proc[i];
        fprintf(f, "<tr><td>P%u ", p->id);
        html_escape(f, p->name);
        fprintf(f, "</td>");
        if (!p->alive) {
            fprintf(f, "<td colspan=\"8\">destroyed</td></tr>\n");
            continue;
        }
        td_size(f, p->vmi[0].current_usage);
        td_size(f, p->vmi[0].budget);
        td_size(f, p->vmi[0].current_reservation);
        td_size(f, p->vmi[1].current_usage);
        td_size(f, p->vmi[1].budget);
        td_num(f, p->allocations);
        td_num(f, p->faults);
        td_num(f, p->devices_lost);
        fprintf(f, "</tr>\n");
    }
    fprintf(f, "</table>\n");

    const struct vidmm_residency_stats *r = &s->rs;
    fprintf(f, "<table id=\"summary-residency\">\n<caption>Residency</caption>\n");
    kv_num(f, "make-resident calls", r->make_resident_calls);
    kv_num(f, "pending answers", t->pending);
    kv_num(f, "over-budget answers", r->over_budget);
    kv_num(f, "trim notifications", r->trim_notifications);
    kv_num(f, "evictions", r->evictions);
    kv_size(f, "bytes transferred by evictions", r->bytes_evicted);
    kv_num(f, "of them discarded clean", r->discards);
    kv_size(f, "bytes discarded", r->bytes_discarded);
    kv_num(f, "restores", r->restores);
    kv_size(f, "bytes restored", r->bytes_restored);
    kv_num(f, "relocations", r->relocations);
    kv_size(f, "bytes relocated", r->bytes_relocated);
    fprintf(f, "</table>\n");

    fprintf(f, "<table id=\"summary-paging\">\n<caption>Paging: %" PRIu64 " buffers submitted, %" PRIu64
               " restarts, fence %" PRIu64 "/%" PRIu64 ", %" PRIu64 " fence waits</caption>\n"
               "<tr><th>operation</th><th>ops</th><th>bytes</th></tr>\n",
            s->ai.paging_buffers_submitted, s->ai.paging_restarts, s->ai.last_fence_completed,
            s->ai.last_fence_submitted, t->fence_waits);
    for (int k = 0; k < 17; k++) {
        if (!s->ai.paging_ops[k])
            continue;
        const char *name = tr_paging_op_name(k);
        fprintf(f, "<tr><td>%s</td>", name ? name : "other");
        td_num(f, s->ai.paging_ops[k]);
        td_size(f, s->ai.paging_bytes[k]);
        fprintf(f, "</tr>\n");
    }
    fprintf(f, "</table>\n");

    fprintf(f, "<table id=\"summary-submission\">\n<caption>Command submission</caption>\n");
    kv_num(f, "virtual submissions", t->submits_virtual);
    kv_num(f, "physical submissions", t->submits_physical);
    kv_num(f, "failed submissions", t->submit_failed);
    kv_num(f, "commands built", t->commands_built);
    kv_num(f, "patch locations written", s->ss.patch_locations_written);
    kv_num(f, "patch locations skipped", s->ss.patch_locations_skipped);
    kv_num(f, "context fence waits", t->context_waits);
    kv_num(f, "eviction waits for GPU work", s->ss.eviction_waits);
    kv_num(f, "GPU results checked", t->gpu_results);
    kv_num(f, "GPU result mismatches", t->gpu_result_failures);
    fprintf(f, "</table>\n");

    fprintf(f, "<table id=\"summary-integrity\">\n<caption>Faults and integrity</caption>\n");
    kv_num(f, "GPU accesses that faulted", t->gpu_faults);
    kv_num(f, "page faults reported by processes", s->process_faults);
    kv_num(f, "devices lost", s->devices_lost);
    kv_num(f, "read-backs", t->checks);
    kv_size(f, "bytes checked", t->check_bytes);
    kv_num(f, "mismatches", t->check_failures);
    kv_num(f, "adapter checks", t->adapter_checks);
    kv_num(f, "adapter checks failed", t->adapter_check_failures);
    fprintf(f, "<tr><th>after the last call</th><td>%s</td></tr>\n</table>\n</section>\n",
            s->final_check ? "FAILED" : "clean");
}

void report_write_html(struct tr *t, FILE *f)
{
    struct summary s;
    gather(t, &s);
    write_html(t, &s, f);
    gather_free(&s);
}

void report_write(struct tr *t, enum report_format fmt, FILE *f)
{
    struct summary s;
    gather(t, &s);
    if (fmt == REPORT_JSON)
        write_json(t, &s, f);
    else if (fmt == REPORT_CSV)
        write_csv(t, &s, f);
    else
        write_text(t, &s, f);
    gather_free(&s);
}

/* ---- timeline ------------------------------------------------------- */

void timeline_write(const struct tr *t, const struct tr_buf *events, FILE *f)
{
    fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"format\":\"vidmm-timeline/1\",\"scenario\":");
    json_str(f, t->hdr.scenario);
    fprintf(f, ",\"clock\":\"simulated microseconds: 1 per call plus paging bytes at 16 KiB/us\"},\n\"traceEvents\":[\n");
    if (events->p)
        fwrite(events->p, 1, events->len, f);
    fprintf(f, "\n]}\n");
}
