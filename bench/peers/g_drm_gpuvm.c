/*
 * g_drm_gpuvm.c - Linux drm_gpuvm behind the bench's workload G hook
 * (struct bench_va_peer, bench/peers.h): a map is drm_gpuvm_sm_map, an
 * unmap drm_gpuvm_sm_unmap, and the driver callbacks apply each step at
 * once, as nouveau and xe do (a drm_gpuva from an object cache per new
 * mapping, drm_gpuva_map / drm_gpuva_remap / drm_gpuva_unmap, the old one
 * back to the cache).
 *
 * "drm_gpuvm" maps without a GEM object (VA bookkeeping only);
 * "drm_gpuvm_gem" gives every map its own GEM object and drm_gpuvm_bo and
 * links each drm_gpuva to it, as vidmm_va_map links every mapping to the
 * object handle it is given.
 *
 * Not part of the project build: compiled against the peer kit's kernel
 * tree and shim (bench/peers/build.sh), only linked into the benchmark.
 */
#include <drm/drm_gpuvm.h>

#include "peers.h"

struct gv {
	struct drm_gpuvm vm;
	struct drm_device dev;
	struct drm_gem_object r_obj;
	struct kmem_cache *va_cache, *obj_cache;
	struct drm_gpuvm_bo *cur; /* vm_bo of the map in progress (gem), else NULL */
	uint64_t live;
	int gem;
};

static struct drm_gpuva *va_new(struct gv *g)
{
	struct drm_gpuva *va = kmem_cache_zalloc(g->va_cache, GFP_KERNEL);
	BUG_ON(!va);
	return va;
}

static int step_map(struct drm_gpuva_op *op, void *priv)
{
	struct gv *g = priv;
	struct drm_gpuva *va = va_new(g);
	drm_gpuva_map(&g->vm, va, &op->map);
	if (g->cur)
		drm_gpuva_link(va, g->cur);
	g->live++;
	return 0;
}

static int step_remap(struct drm_gpuva_op *op, void *priv)
{
	struct gv *g = priv;
	struct drm_gpuva *old = op->remap.unmap->va;
	struct drm_gpuvm_bo *vm_bo = old->vm_bo;
	struct drm_gpuva *prev = op->remap.prev ? va_new(g) : NULL;
	struct drm_gpuva *next = op->remap.next ? va_new(g) : NULL;
	drm_gpuva_remap(prev, next, &op->remap);
	if (vm_bo) {
		if (prev)
			drm_gpuva_link(prev, vm_bo);
		if (next)
			drm_gpuva_link(next, vm_bo);
		drm_gpuva_unlink(old);
	}
	kmem_cache_free(g->va_cache, old);
	g->live += (prev != NULL) + (next != NULL);
	g->live--;
	return 0;
}

static int step_unmap(struct drm_gpuva_op *op, void *priv)
{
	struct gv *g = priv;
	struct drm_gpuva *va = op->unmap.va;
	drm_gpuva_unmap(&op->unmap);
	drm_gpuva_unlink(va);
	kmem_cache_free(g->va_cache, va);
	g->live--;
	return 0;
}

static void vm_free(struct drm_gpuvm *vm) { (void)vm; }

/* GEM objects come from one object cache, as drm_gpuvas do (the kit's
 * g_drm_gpuvm harness does the same). */
static struct kmem_cache *obj_cache;

static void obj_free(struct drm_gem_object *obj)
{
	kmem_cache_free(obj_cache, obj);
}

static const struct drm_gem_object_funcs obj_funcs = { .free = obj_free };

static const struct drm_gpuvm_ops gv_ops = {
	.vm_free = vm_free,
	.sm_step_map = step_map,
	.sm_step_remap = step_remap,
	.sm_step_unmap = step_unmap,
};

static void *gv_create_any(unsigned va_bits, int gem)
{
	struct gv *g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->gem = gem;
	if (gem && !obj_cache)
		obj_cache = KMEM_CACHE(drm_gem_object, 0);
	g->va_cache = KMEM_CACHE(drm_gpuva, 0);
	drm_gem_private_object_init(&g->dev, &g->r_obj, 0);
	drm_gpuvm_init(&g->vm, "g", 0, &g->dev, &g->r_obj, 0, 1ull << va_bits, 0, 0, &gv_ops);
	return g;
}

static void *gv_create(unsigned va_bits) { return gv_create_any(va_bits, 0); }
static void *gv_create_gem(unsigned va_bits) { return gv_create_any(va_bits, 1); }

static int gv_unmap(void *p, uint64_t va, uint64_t size)
{
	struct gv *g = p;
	return drm_gpuvm_sm_unmap(&g->vm, g, va, size);
}

static void gv_destroy(void *p)
{
	struct gv *g = p;
	(void)drm_gpuvm_sm_unmap(&g->vm, g, g->vm.mm_start, g->vm.mm_range);
	/* The VM itself is left to the process exit: drm_gpuvm's teardown
	 * expects the driver's reference counting around it. */
	kmem_cache_destroy(g->va_cache);
}

static int gv_map(void *p, uint64_t va, uint64_t size, uint64_t obj_handle)
{
	struct gv *g = p;
	(void)obj_handle;
	if (!g->gem)
		return drm_gpuvm_sm_map(&g->vm, g, va, size, NULL, 0);
	struct drm_gem_object *obj = kmem_cache_zalloc(obj_cache, GFP_KERNEL);
	BUG_ON(!obj);
	drm_gem_private_object_init(&g->dev, obj, size);
	obj->funcs = &obj_funcs;
	obj->resv = g->vm.r_obj->resv; /* a VM-private object shares the VM's resv */
	struct drm_gpuvm_bo *vm_bo = drm_gpuvm_bo_obtain(&g->vm, obj);
	BUG_ON(IS_ERR(vm_bo));
	g->cur = vm_bo;
	int ret = drm_gpuvm_sm_map(&g->vm, g, va, size, obj, 0);
	g->cur = NULL;
	drm_gpuvm_bo_put(vm_bo);
	drm_gem_object_put(obj);
	return ret;
}

static uint64_t gv_live(void *p)
{
	return ((struct gv *)p)->live;
}

static const struct bench_va_peer peer_g_drm_gpuvm = {
	"drm_gpuvm", gv_create, gv_destroy, gv_map, gv_unmap, gv_live
};
static const struct bench_va_peer peer_g_drm_gpuvm_gem = {
	"drm_gpuvm_gem", gv_create_gem, gv_destroy, gv_map, gv_unmap, gv_live
};

const struct bench_va_peer *const bench_va_peers[] = { &peer_g_drm_gpuvm, &peer_g_drm_gpuvm_gem, NULL };
