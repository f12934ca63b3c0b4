/*
 * rmv.c - Radeon Memory Visualizer trace import: loading, replay and
 * summary (see rmv.h; the decoding is rmv_decode.c).
 *
 * Replay.  Events of every stream are merged in timestamp order.  The
 * application's VirtualAllocate becomes a resident allocation whose
 * segment preferences follow the heap preferences (LOCAL -> the
 * CPU-visible memory segment, INVISIBLE -> the invisible one, SYSTEM ->
 * the aperture), VirtualFree a destroy, ResourceReference add/remove a
 * make-resident / evict (only if necessary, as WDDM's Evict promises) of
 * the allocation holding the resource's address.  At each page-table
 * update of type "update" that maps pages of a replayed allocation (the
 * discard and transfer types are not mappings; AMD's page table skips
 * them too), the heap the driver mapped (by physical address: in the
 * trace's local or invisible heap, or system memory, which the driver
 * records as address 0) is compared with where vidmm has the allocation
 * then.
 */
#include "rmv.h"
#include "rmv_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { HEAP_LOCAL = RMV_HEAP_LOCAL, HEAP_INVISIBLE = RMV_HEAP_INVISIBLE, HEAP_SYSTEM = RMV_HEAP_SYSTEM,
       HEAP_NONE = RMV_HEAP_NONE };
static const char *const heap_name[4] = { "local", "invisible", "system", "none" };
static const char *const placement_name[4] = { "local", "invisible", "system", "not-resident" };

static uint8_t *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *buf = NULL;
    size_t cap = 0, len = 0;
    for (;;) {
        if (len == cap) {
            size_t nc = cap ? cap * 2 : 1 << 20;
            uint8_t *nb = realloc(buf, nc);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
            cap = nc;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    *n = len;
    return buf;
}

int rmv_is_rmv_file(const char *path)
{
    /* Only a regular file is sniffed: reading a pipe's first bytes would
     * take them from the trace reader. */
    struct stat sb;
    if (stat(path, &sb) || !S_ISREG(sb.st_mode))
        return 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    uint8_t m[8];
    size_t got = fread(m, 1, 8, f);
    fclose(f);
    return (got == 8 && !memcmp(m, "AMD_RDF ", 8)) ||
           (got >= 4 && (m[0] | m[1] << 8 | m[2] << 16 | (uint32_t)m[3] << 24) == 0x494e494du);
}

int rmv_load(const char *path, int lenient, struct rmv_import *imp, struct tr_header *h, void **state)
{
    size_t n = 0;
    uint8_t *d = read_all(path, &n);
    if (!d) {
        fprintf(stderr, "vidmm: cannot read '%s'\n", path);
        return 1;
    }
    int rc = rmv_decode(d, n, path, imp, state, stderr, lenient);
    free(d);
    if (rc)
        return 1;
    tr_header_defaults(h);
    snprintf(h->scenario, sizeof h->scenario, "rmv");
    snprintf(h->preset, sizeof h->preset, "dgpu");
    /* The trace's heaps become the segments: LOCAL the CPU-visible one,
     * INVISIBLE the other (64 KiB multiples; softgpu reserves lazily). */
    h->segment_size[1] = imp->local_size & ~0xffffull;
    h->segment_size[2] = imp->invisible_size & ~0xffffull;
    if (!h->segment_size[1])
        h->segment_size[1] = 256ull << 20;
    if (!h->segment_size[2])
        h->segment_size[2] = 4ull << 30;
    h->system_memory = 16ull << 30;
    return 0;
}

/* ---- replay --------------------------------------------------------- */

struct live {
    uint64_t va, size;
    uint32_t a;                  /* allocation id in the recording layer */
};

/* Index of the live allocation holding va, or -1 (sorted by va). */
static long find(const struct live *l, size_t n, uint64_t va)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (l[mid].va <= va)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    const struct live *c = &l[lo - 1];
    return va - c->va < c->size ? (long)(lo - 1) : -1;
}

static int placement_of(struct tr *t, uint32_t a, uint32_t seg_local, uint32_t seg_invisible)
{
    struct vidmm_residency_state rs;
    struct vidmm_allocation_state as;
    vidmm_handle h = tr_handle(t, TR_ALLOC, a);
    if (vidmm_allocation_residency(t->adapter, h, &rs) < 0 || !rs.resident ||
        vidmm_allocation_query(t->adapter, h, &as) < 0)
        return 3;
    if (as.segment_id == seg_local)
        return HEAP_LOCAL;
    if (as.segment_id == seg_invisible)
        return HEAP_INVISIBLE;
    return HEAP_SYSTEM;
}

int rmv_replay(struct tr *t, struct rmv_import *imp, void *state)
{
    struct rmv_evs *v = state;
    if (!t) {
        /* The session could not start: only free the events. */
        free(v ? v->e : NULL);
        free(v);
        return 1;
    }
    size_t nlive = 0, cap = 1024;
    struct live *live = malloc(cap * sizeof(*live));
    uint32_t p = 0, d = 0, q = 0;
    int bad = !live;
    struct vidmm_adapter_info ai;
    vidmm_adapter_query_info(t->adapter, &ai);
    const uint32_t seg_local = 1, seg_invisible = 2, seg_system = ai.aperture_segment_id;
    if (!bad) {
        char name[32];
        snprintf(name, sizeof name, "pid%" PRIu64, imp->app_pid);
        if (tr_process_create(t, name, &p) < 0 || tr_device_create(t, p, &d) < 0 ||
            tr_queue_create(t, d, VIDMM_PAGING_QUEUE_NORMAL, &q) < 0) {
            fprintf(stderr, "rmv: cannot create the replay process\n");
            bad = 1;
        }
    }
    for (size_t i = 0; !bad && i < v->n; i++) {
        const struct rmv_ev *e = &v->e[i];
        if (e->type == RMV_TK_VIRTUAL_ALLOCATE && e->pid == imp->app_pid) {
            struct softgpu_alloc_desc desc;
            memset(&desc, 0, sizeof desc);
            desc.kind = SOFTGPU_ALLOC_EXPLICIT;
            desc.info.size = e->size;
            desc.info.supported_write_segment_set =
                VIDMM_SEGMENT_BIT(seg_local) | VIDMM_SEGMENT_BIT(seg_invisible) | VIDMM_SEGMENT_BIT(seg_system);
            uint32_t pref = 0, slot = 0, seen = 0;
            for (int k = 0; k < 4 && e->pref[k] != HEAP_NONE && slot < VIDMM_PREF_SLOTS; k++) {
                uint32_t id = e->pref[k] == HEAP_LOCAL ? seg_local : e->pref[k] == HEAP_INVISIBLE ? seg_invisible
                                                                                                   : seg_system;
                if (seen & (1u << id))
                    continue;
                seen |= 1u << id;
                pref |= VIDMM_PREF(slot, id, 0);
                slot++;
            }
            desc.info.preferred_segment = pref;
            desc.info.flags = e->pref[0] == HEAP_LOCAL || e->pref[0] == HEAP_SYSTEM ? VIDMM_ALLOC_CPU_VISIBLE : 0;
            imp->pref_first[e->pref[0] < 4 ? e->pref[0] : 3]++;
            char name[32];
            snprintf(name, sizeof name, "va-%" PRIx64, e->va);
            uint32_t a;
            vidmm_status st = tr_create(t, &desc, 1, VIDMM_CREATE_RESIDENT, name, &a);
            imp->allocations++;
            if (st < 0) {
                imp->alloc_failed++;
                continue;
            }
            imp->alloc_bytes += e->size;
            if (nlive == cap) {
                struct live *nl = realloc(live, cap * 2 * sizeof(*live));
                if (!nl) {
                    bad = 1;
                    break;
                }
                live = nl;
                cap *= 2;
            }
            size_t at = 0;
            while (at < nlive && live[at].va < e->va)
                at++;
            memmove(live + at + 1, live + at, (nlive - at) * sizeof(*live));
            live[at] = (struct live){ e->va, e->size, a };
            nlive++;
        } else if (e->type == RMV_TK_VIRTUAL_FREE && e->pid == imp->app_pid) {
            long k = find(live, nlive, e->va);
            if (k < 0 || live[k].va != e->va)
                continue;
            tr_destroy(t, live[k].a);
            imp->frees++;
            memmove(live + k, live + k + 1, (nlive - (size_t)k - 1) * sizeof(*live));
            nlive--;
        } else if (e->type == RMV_TK_RESOURCE_REFERENCE && e->pid == imp->app_pid) {
            long k = find(live, nlive, e->va);
            if (k < 0) {
                imp->reference_unmatched++;
                continue;
            }
            if (!e->unmap) {
                uint64_t fence = 0;
                vidmm_status st = tr_make_resident(t, d, q, &live[k].a, 1, VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER,
                                                   &fence, NULL);
                if (st == VIDMM_PENDING)
                    st = tr_wait(t, q, fence);
                imp->references_add++;
                imp->make_resident_failed += st < 0;
            } else {
                vidmm_status st = tr_evict(t, d, &live[k].a, 1, VIDMM_EVICT_ONLY_IF_NECESSARY, NULL);
                imp->references_remove++;
                imp->evict_failed += st < 0;
            }
        } else if (e->type == RMV_TK_PAGE_TABLE_UPDATE && !e->unmap && e->update_type != 1) {
            imp->pte_not_update++;
        } else if (e->type == RMV_TK_PAGE_TABLE_UPDATE && !e->unmap) {
            /* The kernel driver reports page-table updates from its own
             * stream under the system process's id (4 on Windows), so
             * they are matched by address alone. */
            if (e->pid != imp->app_pid)
                imp->pte_maps_other_process++;
            long k = find(live, nlive, e->va);
            if (k < 0) {
                imp->pte_maps_unmatched++;
                continue;
            }
            /* Physical address 0 is what the driver records for system
             * memory pages (their host addresses are not traced): every
             * such mapping in the sample lies in an allocation whose
             * first preference is SYSTEM. */
            int heap = e->pa == 0 ? HEAP_SYSTEM
                       : e->pa >= imp->local_base && e->pa - imp->local_base < imp->local_size ? HEAP_LOCAL
                       : e->pa >= imp->invisible_base && e->pa - imp->invisible_base < imp->invisible_size
                           ? HEAP_INVISIBLE
                           : HEAP_SYSTEM;
            int got = placement_of(t, live[k].a, seg_local, seg_invisible);
            static const uint64_t page_bytes[8] = { 0, 4096, 65536, 262144, 1 << 20, 2 << 20, 0, 0 };
            imp->pte_maps_matched++;
            imp->agree[heap][got]++;
            imp->agree_bytes[heap][got] += e->size * page_bytes[e->page_size & 7];
        }
    }
    free(live);
    free(v->e);
    free(v);
    return bad;
}

/* ---- summary -------------------------------------------------------- */

static uint64_t agreed(const struct rmv_import *imp, int bytes)
{
    uint64_t s = 0;
    for (int h = 0; h < 3; h++)
        s += bytes ? imp->agree_bytes[h][h] : imp->agree[h][h];
    return s;
}

static uint64_t total(const struct rmv_import *imp, int bytes)
{
    uint64_t s = 0;
    for (int h = 0; h < 3; h++)
        for (int g = 0; g < 4; g++)
            s += bytes ? imp->agree_bytes[h][g] : imp->agree[h][g];
    return s;
}

void rmv_report(const struct rmv_import *imp, enum report_format fmt, FILE *f)
{
    uint64_t n = total(imp, 0), ok = agreed(imp, 0), nb = total(imp, 1), okb = agreed(imp, 1);
    if (fmt == REPORT_CSV) {
        for (uint32_t s = 0; s < imp->streams; s++)
            for (int k = 0; k < RMV_TOKEN_TYPES; k++)
                if (imp->stream[s].tokens[k])
                    fprintf(f, "rmv,stream%u,%s,%" PRIu64 "\n", s, rmv_token_name[k], imp->stream[s].tokens[k]);
        fprintf(f, "rmv,replay,allocations,%" PRIu64 "\nrmv,replay,frees,%" PRIu64 "\nrmv,replay,references_add,%" PRIu64
                   "\nrmv,replay,references_remove,%" PRIu64 "\nrmv,agreement,page_table_maps,%" PRIu64
                   "\nrmv,agreement,agree,%" PRIu64 "\n",
                imp->allocations, imp->frees, imp->references_add, imp->references_remove, n, ok);
        return;
    }
    if (fmt == REPORT_JSON) {
        fprintf(f, "\"import\": {\"container\": \"%s\", \"adapter\": \"%s\", \"app_pid\": %" PRIu64
                   ",\n  \"heaps\": {\"local\": {\"base\": %" PRIu64 ", \"size\": %" PRIu64 "}, \"invisible\": {\"base\": %" PRIu64
                   ", \"size\": %" PRIu64 "}},\n  \"streams\": [",
                imp->container, imp->adapter, imp->app_pid, imp->local_base, imp->local_size, imp->invisible_base,
                imp->invisible_size);
        for (uint32_t s = 0; s < imp->streams; s++) {
            const struct rmv_stream_info *si = &imp->stream[s];
            fprintf(f, "%s\n    {\"process_id\": %u, \"version\": \"%u.%u\", \"bytes\": %" PRIu64 ", \"page_table_unmaps\": %" PRIu64
                       ", \"tokens\": {",
                    s ? "," : "", si->process_id, si->major, si->minor, si->bytes, si->unmaps);
            int first = 1;
            for (int k = 0; k < RMV_TOKEN_TYPES; k++)
                if (si->tokens[k]) {
                    fprintf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ", rmv_token_name[k], si->tokens[k]);
                    first = 0;
                }
            fprintf(f, "}}");
        }
        fprintf(f, "],\n  \"replay\": {\"allocations\": %" PRIu64 ", \"allocation_failures\": %" PRIu64
                   ", \"allocated_bytes\": %" PRIu64 ", \"frees\": %" PRIu64 ", \"references_add\": %" PRIu64
                   ", \"references_remove\": %" PRIu64 ", \"references_unmatched\": %" PRIu64
                   ", \"make_resident_failures\": %" PRIu64 ", \"evict_failures\": %" PRIu64 "},\n",
                imp->allocations, imp->alloc_failed, imp->alloc_bytes, imp->frees, imp->references_add,
                imp->references_remove, imp->reference_unmatched, imp->make_resident_failed, imp->evict_failed);
        fprintf(f, "  \"chunks\": {");
    for (uint32_t i = 0; i < imp->chunk_kinds; i++)
        fprintf(f, "%s\"%s\": {\"count\": %u, \"bytes\": %" PRIu64 ", \"read\": %s}", i ? ", " : "", imp->chunk[i].id,
                imp->chunk[i].count, imp->chunk[i].bytes, imp->chunk[i].skipped ? "false" : "true");
    fprintf(f, "},\n  \"anomalies\": {\"free_unknown\": %" PRIu64 ", \"alloc_duplicate\": %" PRIu64
               ", \"destroy_unknown\": %" PRIu64 ", \"bind_unknown\": %" PRIu64 ", \"create_duplicate\": %" PRIu64 "},\n",
            imp->anomalies.free_unknown, imp->anomalies.alloc_duplicate, imp->anomalies.destroy_unknown,
            imp->anomalies.bind_unknown, imp->anomalies.create_duplicate);
    fprintf(f, "  \"agreement\": {\"page_table_maps\": %" PRIu64 ", \"agree\": %" PRIu64 ", \"bytes\": %" PRIu64
                   ", \"bytes_agree\": %" PRIu64 ", \"unmatched_maps\": %" PRIu64 ", \"other_process_maps\": %" PRIu64 ", \"not_update_maps\": %" PRIu64
                   ", \"matrix\": {",
                n, ok, nb, okb, imp->pte_maps_unmatched, imp->pte_maps_other_process, imp->pte_not_update);
        for (int h = 0; h < 3; h++) {
            fprintf(f, "%s\"%s\": {", h ? ", " : "", heap_name[h]);
            for (int g = 0; g < 4; g++)
                fprintf(f, "%s\"%s\": %" PRIu64, g ? ", " : "", placement_name[g], imp->agree[h][g]);
            fprintf(f, "}");
        }
        fprintf(f, "}}},\n");
        return;
    }
    fprintf(f, "== RMV import ==\n");
    rmv_decode_report(imp, f);
    fprintf(f, "replayed (process %" PRIu64 "): %" PRIu64 " allocations (%" PRIu64 " failed, %" PRIu64
               " MiB), first preference local %" PRIu64 " / invisible %" PRIu64 " / system %" PRIu64 "; %" PRIu64
               " frees; references: %" PRIu64 " add -> make-resident (%" PRIu64 " failed), %" PRIu64
               " remove -> evict (%" PRIu64 " failed), %" PRIu64 " outside any allocation\n",
            imp->app_pid, imp->allocations, imp->alloc_failed, imp->alloc_bytes >> 20, imp->pref_first[0],
            imp->pref_first[1], imp->pref_first[2], imp->frees, imp->references_add, imp->make_resident_failed,
            imp->references_remove, imp->evict_failed, imp->reference_unmatched);
    fprintf(f, "placement agreement: %" PRIu64 " of %" PRIu64 " page-table mappings (%.1f%%), %" PRIu64 " of %" PRIu64
               " MiB (%.1f%%)\n",
            ok, n, n ? 100.0 * (double)ok / (double)n : 0.0, okb >> 20, nb >> 20,
            nb ? 100.0 * (double)okb / (double)nb : 0.0);
    fprintf(f, "  %-14s %10s %10s %10s %13s\n", "trace \\ vidmm", "local", "invisible", "system", "not-resident");
    for (int h = 0; h < 3; h++)
        fprintf(f, "  %-14s %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %13" PRIu64 "\n", heap_name[h], imp->agree[h][0],
                imp->agree[h][1], imp->agree[h][2], imp->agree[h][3]);
    fprintf(f, "  (%" PRIu64 " mappings outside the replayed allocations; %" PRIu64 " reported by another process id; %" PRIu64
               " discard/transfer updates not counted as mappings)\n\n",
            imp->pte_maps_unmatched, imp->pte_maps_other_process, imp->pte_not_update);
}
