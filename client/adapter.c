/*
 * client/adapter.c - libvidmm-client's view of the adapter: its
 * information, its segments, and the administration requests (the
 * adapter and the processes connected) that vidmm ps, top and info
 * --socket show.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <string.h>

/* ---- adapter and segments --------------------------------------------------- */

vidmm_status vidmm_client_adapter_query_info(struct vidmm_client *c, struct vidmm_adapter_info *out)
{
    if (!out)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vidmm_status st = vmmc_call(c, VMMD_OP_ADAPTER_INFO, 0);
    struct vmmd_rep_adapter_info m;
    if (st >= 0 && GET_REP(c, ADAPTER_INFO, adapter_info, &m)) {
        memset(out, 0, sizeof *out);
        out->wddm_version = m.wddm_version;
        out->memory_management_caps = m.memory_management_caps;
        out->physical_adapter_flags = m.physical_adapter_flags;
        out->segment_count = m.segment_count;
        out->aperture_segment_id = m.aperture_segment_id;
        out->agp_segment_id = m.agp_segment_id;
        out->paging_buffer_segment_id = m.paging_buffer_segment_id;
        out->paging_buffer_size = m.paging_buffer_size;
        out->aperture_segment_commit_limit = m.aperture_segment_commit_limit;
        out->live_allocations = m.live_allocations;
        out->paging_buffers_submitted = m.paging_buffers_submitted;
        out->paging_restarts = m.paging_restarts;
        out->last_fence_submitted = m.last_fence_submitted;
        out->last_fence_completed = m.last_fence_completed;
        for (int i = 0; i < 17; i++) {
            out->paging_ops[i] = m.paging_ops[i];
            out->paging_bytes[i] = m.paging_bytes[i];
        }
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_segment_query(struct vidmm_client *c, uint32_t id, struct vidmm_segment_info *out)
{
    if (!out)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    struct vmmd_req_segment_query q = { id, 0 };
    vidmm_status st = PUT_REQ(c, SEGMENT_QUERY, segment_query, &q, 0);
    struct vmmd_rep_segment_query m;
    if (st >= 0 && GET_REP(c, SEGMENT_QUERY, segment_query, &m)) {
        memset(out, 0, sizeof *out);
        out->id = m.id;
        out->kind = (enum vidmm_segment_kind)m.kind;
        out->flags = m.flags;
        out->page_size = m.page_size;
        out->base_address = m.base_address;
        out->size = m.size;
        out->commit_limit = m.commit_limit;
        out->committed = m.committed;
        out->free_bytes = m.free_bytes;
        out->largest_free = m.largest_free;
        out->allocations = m.allocations;
        out->cpu_visible = (int)m.cpu_visible;
        out->cpu_host_aperture = (int)m.cpu_host_aperture;
        out->host_aperture_pages = m.host_aperture_pages;
        out->host_aperture_free = m.host_aperture_free;
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

vidmm_status vidmm_client_admin_adapter(struct vidmm_client *c, struct vidmm_client_admin_adapter *out)
{
    if (!out)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    vidmm_status st = vmmc_call(c, VMMD_OP_ADMIN_ADAPTER, 0);
    if (st >= 0 && vmmc_need(c, VMMD_ADMIN_ADAPTER_FIXED)) {
        const uint8_t *r = c->rp;
        struct vmmd_rep_admin_adapter m;
        vmmd_get_rep_admin_adapter(r, &m);
        memset(out, 0, sizeof *out);
        out->daemon_pid = m.daemon_pid;
        out->daemon_uid = m.daemon_uid;
        out->clients = m.clients;
        uint32_t nseg = m.segments;
        out->connections = m.connections;
        out->requests = m.requests;
        out->protocol_errors = m.protocol_errors;
        out->locks = m.locks;
        out->host_blocks = m.host_blocks;
        out->host_bytes = m.host_bytes;
        out->live_allocations = m.live_allocations;
        out->make_resident_calls = m.make_resident_calls;
        out->evictions = m.evictions;
        out->restores = m.restores;
        out->bytes_evicted = m.bytes_evicted;
        out->bytes_restored = m.bytes_restored;
        out->paging_buffers_submitted = m.paging_buffers_submitted;
        out->uptime_ns = m.uptime_ns;
        out->max_alloc_bytes = m.max_alloc_bytes;
        out->max_locked_bytes = m.max_locked_bytes;
        out->max_handles = m.max_handles;
        out->max_requests = m.max_requests;
        out->max_connections_per_uid = m.max_connections_per_uid;
        out->wddm_version = m.wddm_version;
        out->quota_refusals = m.quota_refusals;
        if (nseg > VIDMM_CLIENT_ADMIN_MAX_SEGMENTS ||
            !vmmc_need(c, VMMD_ADMIN_ADAPTER_FIXED + (size_t)nseg * VMMD_ADMIN_SEGMENT_SIZE))
            LEAVE(c, VIDMM_E_DEVICE_LOST);
        out->segment_count = nseg;
        for (uint32_t i = 0; i < nseg; i++) {
            struct vmmd_rec_admin_segment w;
            vmmd_get_rec_admin_segment(r + VMMD_ADMIN_ADAPTER_FIXED + (size_t)i * VMMD_ADMIN_SEGMENT_SIZE, &w);
            struct vidmm_client_admin_segment *g = &out->segment[i];
            g->id = w.id;
            g->kind = w.kind;
            g->size = w.size;
            g->committed = w.committed;
            g->free_bytes = w.free_bytes;
            g->commit_limit = w.commit_limit;
            g->flags = w.flags;
            g->page_size = w.page_size;
            memcpy(g->region, w.name, 15);
            g->region[15] = 0;
        }
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}

/* One ADMIN_CLIENTS record into the client's structure. */
static void admin_process_get(const uint8_t *p, struct vidmm_client_admin_process *o)
{
    struct vmmd_rec_admin_client w;
    vmmd_get_rec_admin_client(p, &w);
    memset(o, 0, sizeof *o);
    o->connection = w.connection;
    o->pid = w.pid;
    o->uid = w.uid;
    o->gid = w.gid;
    memcpy(o->comm, w.comm, 15);
    o->comm[15] = 0;
    o->process = w.process;
    o->allocated_bytes = w.allocated_bytes;
    o->allocations = w.allocations;
    o->handles = w.handles;
    o->locked_bytes = w.locked_bytes;
    o->budget[0] = w.local_budget;
    o->usage[0] = w.local_usage;
    o->budget[1] = w.nonlocal_budget;
    o->usage[1] = w.nonlocal_usage;
    o->evictions = w.evictions;
    o->restores = w.restores;
    o->requests = w.requests;
    o->in_flight = w.in_flight;
    o->flags = w.flags;
}

vidmm_status vidmm_client_admin_processes(struct vidmm_client *c, uint32_t first,
                                          struct vidmm_client_admin_process *out, uint32_t max, uint32_t *count,
                                          uint32_t *total)
{
    if (max && !out)
        return VIDMM_E_INVALID_ARG;
    ENTER(c);
    struct vmmd_req_admin_clients q = { first, 0 };
    vidmm_status st = PUT_REQ(c, ADMIN_CLIENTS, admin_clients, &q, 0);
    struct vmmd_rep_admin_clients m;
    if (st >= 0 && GET_REP(c, ADMIN_CLIENTS, admin_clients, &m)) {
        const uint8_t *recs = c->rp + VMMD_REP_ADMIN_CLIENTS_SIZE;
        uint32_t n = m.count;
        if (n > VMMD_ADMIN_CLIENTS_PER_REPLY ||
            !vmmc_need(c, VMMD_REP_ADMIN_CLIENTS_SIZE + (size_t)n * VMMD_ADMIN_CLIENT_SIZE))
            LEAVE(c, VIDMM_E_DEVICE_LOST);
        if (total)
            *total = m.total;
        if (n > max)
            n = max;
        for (uint32_t i = 0; i < n; i++)
            admin_process_get(recs + (size_t)i * VMMD_ADMIN_CLIENT_SIZE, &out[i]);
        if (count)
            *count = n;
    }
    LEAVE(c, c->broken ? VIDMM_E_DEVICE_LOST : st);
}
