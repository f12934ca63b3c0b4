/*
 * daemon/req_admin.c - the adapter as a whole: ADAPTER_INFO,
 * SEGMENT_QUERY, DEBUG_CHECK (the structure and rules checkers), and the
 * administration requests (docs/PROTOCOL.md "Administration") that only
 * root and the daemon's own uid may send.
 */
#define _GNU_SOURCE
#include "server_internal.h"

#include <unistd.h>

vidmm_status vmmd_serve_adapter_info(struct req *x)
{
    struct vidmm_adapter_info ai;
    memset(&ai, 0, sizeof ai);
    vidmm_status st = vidmm_adapter_query_info(x->a, &ai);
    struct vmmd_rep_adapter_info rm = {
        .wddm_version = ai.wddm_version, .memory_management_caps = ai.memory_management_caps,
        .physical_adapter_flags = ai.physical_adapter_flags, .segment_count = ai.segment_count,
        .aperture_segment_id = ai.aperture_segment_id, .agp_segment_id = ai.agp_segment_id,
        .paging_buffer_segment_id = ai.paging_buffer_segment_id, .paging_buffer_size = ai.paging_buffer_size,
        .aperture_segment_commit_limit = ai.aperture_segment_commit_limit, .live_allocations = ai.live_allocations,
        .paging_buffers_submitted = ai.paging_buffers_submitted, .paging_restarts = ai.paging_restarts,
        .last_fence_submitted = ai.last_fence_submitted, .last_fence_completed = ai.last_fence_completed,
    };
    for (int i = 0; i < 17; i++) {
        rm.paging_ops[i] = ai.paging_ops[i];
        rm.paging_bytes[i] = ai.paging_bytes[i];
    }
    vmmd_put_rep_adapter_info(x->out, &rm);
    x->n = VMMD_REP_ADAPTER_INFO_SIZE;
    return st;
}

vidmm_status vmmd_serve_segment_query(struct req *x)
{
    const struct vmmd_req_segment_query *m = &x->r->m.segment_query;
    struct vidmm_segment_info si;
    memset(&si, 0, sizeof si);
    if (m->reserved)
        return VIDMM_E_INVALID_ARG;
    vidmm_status st = vidmm_segment_query(x->a, m->segment_id, &si);
    struct vmmd_rep_segment_query rm = {
        .id = si.id, .kind = (uint32_t)si.kind, .flags = si.flags, .page_size = si.page_size,
        .base_address = si.base_address, .size = si.size, .commit_limit = si.commit_limit,
        .committed = si.committed, .free_bytes = si.free_bytes, .largest_free = si.largest_free,
        .allocations = si.allocations, .cpu_visible = (uint32_t)si.cpu_visible,
        .cpu_host_aperture = (uint32_t)si.cpu_host_aperture, .host_aperture_pages = si.host_aperture_pages,
        .host_aperture_free = si.host_aperture_free,
    };
    vmmd_put_rep_segment_query(x->out, &rm);
    x->n = VMMD_REP_SEGMENT_QUERY_SIZE;
    return st;
}

vidmm_status vmmd_serve_debug_check(struct req *x)
{
    struct vmmd_server *s = x->s;
    char report[2048] = "";
    int v = vidmm_adapter_check(x->a, report, sizeof report);
    struct vidmm_adapter_info ai;
    memset(&ai, 0, sizeof ai);
    vidmm_adapter_query_info(x->a, &ai);
    LOG(s, 1, "check (asked by client %u): %d violations, %zu clients, %llu live allocations%s%s\n", x->c->id, v,
        s->nclients, (unsigned long long)ai.live_allocations, v ? "\n" : "", v ? report : "");
    struct vmmd_rep_debug_check rm = { (uint32_t)v, (uint32_t)s->nclients, ai.live_allocations };
    vmmd_put_rep_debug_check(x->out, &rm);
    x->n = VMMD_REP_DEBUG_CHECK_SIZE;
    return VIDMM_OK;
}

/* ---- administration (docs/PROTOCOL.md "Administration") ------------------ */

static void put_name16(char *p, const char *name)
{
    memset(p, 0, 16);
    size_t k = strlen(name);
    memcpy(p, name, k < 15 ? k : 15);
}

/* Only the daemon's own uid or root may ask; anyone else gets
 * VMMD_E_ACCESS_DENIED and the connection goes on. */
static int admin_allowed(struct req *x)
{
    struct vmmd_client *c = x->c;
    if (c->uid == 0 || c->uid == x->s->cfg.admin_uid)
        return 1;
    LOG(x->s, 1, "client %u (pid %ld uid %ld): %s refused: not the daemon's uid or root\n", c->id, (long)c->pid,
        (long)c->uid, vmmd_op_name(x->r->h.opcode));
    return 0;
}

static void admin_segment_record(struct vidmm_adapter *a, uint32_t id, uint8_t *p)
{
    struct vidmm_segment_info si;
    memset(&si, 0, sizeof si);
    vidmm_segment_query(a, id, &si);
    char region[16] = "";
    vidmm_segment_region_name(a, id, region, sizeof region);
    struct vmmd_rec_admin_segment m = {
        .id = id, .kind = (uint32_t)si.kind, .size = si.size, .committed = si.committed,
        .free_bytes = si.free_bytes, .commit_limit = si.commit_limit, .flags = si.flags, .page_size = si.page_size,
    };
    put_name16(m.name, region);
    vmmd_put_rec_admin_segment(p, &m);
}

vidmm_status vmmd_serve_admin_adapter(struct req *x)
{
    struct vmmd_server *s = x->s;
    if (!admin_allowed(x))
        return (vidmm_status)VMMD_E_ACCESS_DENIED;
    struct vidmm_adapter_info ai;
    struct vidmm_residency_stats rs;
    memset(&ai, 0, sizeof ai);
    memset(&rs, 0, sizeof rs);
    vidmm_adapter_query_info(x->a, &ai);
    vidmm_residency_get_stats(x->a, &rs);
    int64_t blocks = 0, bytes = 0;
    if (s->cfg.host_usage)
        s->cfg.host_usage(s->cfg.host_usage_user, &blocks, &bytes);
    uint32_t nseg = ai.segment_count < VMMD_ADMIN_MAX_SEGMENTS ? ai.segment_count : VMMD_ADMIN_MAX_SEGMENTS;
    uint8_t out[VMMD_ADMIN_ADAPTER_FIXED + VMMD_ADMIN_MAX_SEGMENTS * VMMD_ADMIN_SEGMENT_SIZE];
    memset(out, 0, sizeof out);
    struct vmmd_rep_admin_adapter m = {
        .daemon_pid = (uint32_t)getpid(), .daemon_uid = (uint32_t)geteuid(), .clients = (uint32_t)s->nclients,
        .segments = nseg, .connections = s->st.connections, .requests = s->st.requests,
        .protocol_errors = s->st.protocol_errors, .locks = s->st.locks, .host_blocks = blocks,
        .host_bytes = bytes, .live_allocations = ai.live_allocations, .make_resident_calls = rs.make_resident_calls,
        .evictions = rs.evictions, .restores = rs.restores, .bytes_evicted = rs.bytes_evicted,
        .bytes_restored = rs.bytes_restored, .paging_buffers_submitted = ai.paging_buffers_submitted,
        .uptime_ns = now_ns() - s->start_ns, .max_alloc_bytes = s->cfg.max_alloc_bytes,
        .max_locked_bytes = s->cfg.max_locked_bytes, .max_handles = s->cfg.max_objects,
        .max_requests = s->cfg.max_requests, .max_connections_per_uid = s->cfg.max_connections_per_uid,
        .wddm_version = ai.wddm_version, .quota_refusals = s->st.quota_refusals,
    };
    vmmd_put_rep_admin_adapter(out, &m);
    for (uint32_t id = 0; id < nseg; id++)
        admin_segment_record(x->a, id, out + VMMD_ADMIN_ADAPTER_FIXED + (size_t)id * VMMD_ADMIN_SEGMENT_SIZE);
    vmmd_reply(x->c, x->r->h.opcode, x->r->h.request_id, VIDMM_OK, out,
          VMMD_ADMIN_ADAPTER_FIXED + (size_t)nseg * VMMD_ADMIN_SEGMENT_SIZE, -1);
    x->answered = 1;
    return VIDMM_OK;
}

static void admin_client_record(struct vmmd_server *s, const struct vmmd_client *asker, const struct vmmd_client *c,
                                uint8_t *p)
{
    struct vidmm_adapter *a = s->cfg.adapter;
    struct vmmd_rec_admin_client m = {
        .connection = c->id, .pid = (uint32_t)c->pid, .uid = (uint32_t)c->uid, .gid = (uint32_t)c->gid,
        .process = c->process, .allocated_bytes = c->alloc_bytes, .allocations = c->nallocs, .handles = c->live,
        .locked_bytes = c->locked_bytes, .evictions = c->retired_evictions, .restores = c->retired_restores,
        .requests = c->requests, .in_flight = (uint32_t)(c->nwaits + c->out_count),
        .flags = (c->refused < 0 ? 1u : 0u) | (c->closing ? 2u : 0u) | (c == asker ? 4u : 0u),
    };
    put_name16(m.comm, c->comm);
    if (c->process) {
        struct vidmm_video_memory_info vi[2];
        memset(vi, 0, sizeof vi);
        for (int g = 0; g < 2; g++)
            vidmm_query_video_memory_info(a, c->process, (enum vidmm_segment_group)g, &vi[g]);
        m.local_budget = vi[0].budget;
        m.local_usage = vi[0].current_usage;
        m.nonlocal_budget = vi[1].budget;
        m.nonlocal_usage = vi[1].current_usage;
    }
    for (uint32_t i = 1; i < c->nobj; i++)
        if (c->objs[i].type == OBJ_ALLOC) {
            struct vidmm_residency_state rs;
            memset(&rs, 0, sizeof rs);
            if (vidmm_allocation_residency(a, c->objs[i].lib, &rs) >= 0) {
                m.evictions += rs.evictions;
                m.restores += rs.restores;
            }
        }
    vmmd_put_rec_admin_client(p, &m);
}

vidmm_status vmmd_serve_admin_clients(struct req *x)
{
    struct vmmd_server *s = x->s;
    const struct vmmd_req_admin_clients *m = &x->r->m.admin_clients;
    if (!admin_allowed(x))
        return (vidmm_status)VMMD_E_ACCESS_DENIED;
    if (m->reserved)
        return VIDMM_E_INVALID_ARG;
    /* The records from index first on (connection order), as many as fit. */
    size_t first = m->first, total = s->nclients;
    size_t count = first < total ? total - first : 0;
    if (count > VMMD_ADMIN_CLIENTS_PER_REPLY)
        count = VMMD_ADMIN_CLIENTS_PER_REPLY;
    size_t n = VMMD_REP_ADMIN_CLIENTS_SIZE + count * VMMD_ADMIN_CLIENT_SIZE;
    uint8_t *out = malloc(n);
    if (!out)
        return VIDMM_E_NO_HOST_MEMORY;
    struct vmmd_rep_admin_clients rm = { (uint32_t)total, (uint32_t)count };
    vmmd_put_rep_admin_clients(out, &rm);
    for (size_t i = 0; i < count; i++)
        admin_client_record(s, x->c, s->clients[first + i], out + VMMD_REP_ADMIN_CLIENTS_SIZE + i * VMMD_ADMIN_CLIENT_SIZE);
    vmmd_reply(x->c, x->r->h.opcode, x->r->h.request_id, VIDMM_OK, out, n, -1);
    free(out);
    x->answered = 1;
    return VIDMM_OK;
}
