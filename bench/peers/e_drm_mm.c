/*
 * e_drm_mm.c - Linux drm_mm and drm_mm_scan behind the bench's workload E
 * hook (struct bench_evict_peer, bench/peers.h), as i915 drives them:
 * insert with DRM_MM_INSERT_BEST; on no space, drm_mm_scan_init_with_range
 * (BEST), blocks added from the LRU head onto an eviction list until
 * drm_mm_scan_add_block finds a hole, every block taken off again in
 * reverse order with drm_mm_scan_remove_block (the ones it keeps are the
 * victims), then the insert retried with DRM_MM_INSERT_EVICT.
 *
 * Not part of the project build: it includes the kernel's drm_mm.h, so it
 * is compiled against the peer kit's kernel tree and shim (see
 * bench/peers/build.sh), and only linked into the benchmark.
 */
#include <drm/drm_mm.h>

#include "peers.h"

struct em_block {
	struct drm_mm_node node;
	struct list_head link; /* on the eviction list during a scan */
};

struct em {
	struct drm_mm mm;
	struct drm_mm_scan scan;
	struct list_head roster;
	struct em_block *b; /* by id */
	uint64_t range;
};

static void *em_create(uint64_t range, uint64_t chunk, uint32_t max_ids)
{
	struct em *e = calloc(1, sizeof(*e));
	(void)chunk;
	if (!e)
		return NULL;
	e->b = calloc(max_ids, sizeof(*e->b));
	if (!e->b) {
		free(e);
		return NULL;
	}
	e->range = range;
	drm_mm_init(&e->mm, 0, range);
	INIT_LIST_HEAD(&e->roster);
	return e;
}

static void em_destroy(void *p)
{
	struct em *e = p;
	struct drm_mm_node *n, *next;
	drm_mm_for_each_node_safe(n, next, &e->mm)
		drm_mm_remove_node(n);
	drm_mm_takedown(&e->mm);
	free(e->b);
	free(e);
}

static int em_alloc(void *p, uint32_t id, uint64_t size, uint64_t align, int after_scan)
{
	struct em *e = p;
	memset(&e->b[id].node, 0, sizeof(e->b[id].node)); /* drm_mm wants a cleared node */
	return drm_mm_insert_node_in_range(&e->mm, &e->b[id].node, size, align, 0, 0, e->range,
					   after_scan ? DRM_MM_INSERT_EVICT : DRM_MM_INSERT_BEST) != 0;
}

static void em_free(void *p, uint32_t id)
{
	struct em *e = p;
	drm_mm_remove_node(&e->b[id].node);
}

static void em_scan_begin(void *p, uint64_t size, uint64_t align)
{
	struct em *e = p;
	INIT_LIST_HEAD(&e->roster);
	drm_mm_scan_init_with_range(&e->scan, &e->mm, size, align, 0, 0, e->range, DRM_MM_INSERT_BEST);
}

static int em_scan_add(void *p, uint32_t id)
{
	struct em *e = p;
	list_add(&e->b[id].link, &e->roster);
	return drm_mm_scan_add_block(&e->scan, &e->b[id].node);
}

static void em_scan_end(void *p, void (*victim)(void *ctx, uint32_t id), void *ctx)
{
	struct em *e = p;
	struct em_block *b, *next;
	/* list_add prepends: walking from the head is the reverse order
	 * drm_mm_scan_remove_block requires. */
	list_for_each_entry_safe(b, next, &e->roster, link) {
		list_del(&b->link);
		if (drm_mm_scan_remove_block(&e->scan, &b->node))
			victim(ctx, (uint32_t)(b - e->b));
	}
}

static const struct bench_evict_peer peer_e_drm_mm = {
	"drm_mm", em_create, em_destroy, em_alloc, em_free, em_scan_begin, em_scan_add, em_scan_end
};

const struct bench_evict_peer *const bench_evict_peers[] = { &peer_e_drm_mm, NULL };
