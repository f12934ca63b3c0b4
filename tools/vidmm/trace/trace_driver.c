/*
 * trace_driver.c - the recording layer on a driver other than softgpu
 * (`vidmm run|replay --driver vkgpu`, or any driver plug-in).
 *
 * Scenarios and traces describe allocations in the tool's own words: a
 * softgpu allocation kind (texture, constant, staging, primary, ring,
 * explicit, heap), a size and whether the CPU locks it.  On softgpu that
 * description is the private data itself.  On another driver it has to
 * be said in that driver's private data, as a user-mode driver would:
 *
 *   vkgpu        texture, primary -> VKGPU_ALLOC_LOCAL (cpu as given);
 *                constant -> LOCAL, CPU-visible; staging -> UPLOAD;
 *                ring -> PHYSICAL (AccessedPhysically); a heap by its
 *                type and pool (default and L1 local, the others upload);
 *   any other    the plug-in's own description of a CPU-visible
 *                allocation of that size (drvcheck_driver.private_data).
 *
 * kind=explicit names softgpu's segment sets and cannot be translated:
 * such a create is not made (TR_NOT_APPLICABLE), as are the calls that
 * need softgpu itself (its MMU walker for gpu-read / gpu-write, its
 * command set for command buffers).  Each is said once per verb on
 * stderr with its reason and counted in the report (docs/DECISIONS.md
 * D80): a scenario keeps running, and what it checks through the CPU
 * (write, check) and the rules checker still holds it to account.  A
 * feature the driver declares absent is refused by vidmm itself (GPU VA
 * calls without GpuMmu: E_NOT_SUPPORTED), and said once by name here.
 */
#include "trace.h"
#include "vidmm/vkgpu.h"

#include <string.h>

const char *tr_driver_name(const struct tr *t)
{
    return t->hdr.plugin ? t->hdr.plugin->name : "softgpu";
}

vidmm_status tr_not_applicable(struct tr *t, const char *why)
{
    if (t->not_applicable[t->verb]++ == 0)
        fprintf(stderr, "vidmm: %s not made on driver %s: %s (counted in the report)\n", tr_verb_names[t->verb],
                tr_driver_name(t), why);
    return TR_NOT_APPLICABLE;
}

void tr_driver_refused(struct tr *t, vidmm_status st)
{
    int va_verb = t->verb == TV_RESERVE || t->verb == TV_MAP || t->verb == TV_PLACE || t->verb == TV_UNMAP ||
                  t->verb == TV_FREE;
    if (!t->hdr.plugin || st != VIDMM_E_NOT_SUPPORTED || !va_verb || t->gpummu || t->iommu)
        return;
    if (t->va_refused++ == 0)
        fprintf(stderr, "vidmm: %s refused on driver %s: it declares no GPU virtual addressing (neither GpuMmu nor "
                        "IoMmu: physical mode; vkgpu declares GpuMmu with gpummu=1 on a device with sparse binding); "
                        "every GPU VA call is refused alike, counted in the report by status\n",
                tr_verb_names[t->verb], tr_driver_name(t));
}

/* The vkgpu kind for a heap: where Direct3D 12 would put it. */
static uint32_t vk_heap_kind(const struct softgpu_heap_properties *h)
{
    if (h->type == SOFTGPU_HEAP_DEFAULT)
        return VKGPU_ALLOC_LOCAL;
    if (h->type == SOFTGPU_HEAP_CUSTOM)
        return h->memory_pool == SOFTGPU_MEMORY_POOL_L0 ? VKGPU_ALLOC_UPLOAD : VKGPU_ALLOC_LOCAL;
    return VKGPU_ALLOC_UPLOAD;   /* upload, readback, GPU upload: CPU-visible */
}

static size_t vk_desc(const struct softgpu_alloc_desc *d, void *buf, size_t cap, const char **why)
{
    struct vkgpu_alloc_desc v = { VKGPU_ALLOC_LOCAL, d->cpu_visible ? 1u : 0u, d->size };
    switch (d->kind) {
    case SOFTGPU_ALLOC_TEXTURE:
    case SOFTGPU_ALLOC_PRIMARY: break;
    case SOFTGPU_ALLOC_CONSTANT: v.cpu_visible = 1; break;
    case SOFTGPU_ALLOC_STAGING: v.kind = VKGPU_ALLOC_UPLOAD; v.cpu_visible = 1; break;
    case SOFTGPU_ALLOC_RING: v.kind = VKGPU_ALLOC_PHYSICAL; break;
    case SOFTGPU_ALLOC_HEAP:
        v.kind = vk_heap_kind(&d->heap);
        v.cpu_visible = v.kind == VKGPU_ALLOC_UPLOAD;
        break;
    default:
        *why = "kind=explicit gives softgpu's own segment sets, which vkgpu's private data cannot say";
        return 0;
    }
    if (cap < sizeof v) {
        *why = "no room for vkgpu's private data";
        return 0;
    }
    memcpy(buf, &v, sizeof v);
    return sizeof v;
}

size_t tr_driver_desc(const struct tr *t, const struct softgpu_alloc_desc *d, void *buf, size_t cap,
                      const char **why)
{
    const struct drvcheck_driver *p = t->hdr.plugin;
    *why = "";
    if (!p) {
        if (cap < sizeof *d)
            return 0;
        memcpy(buf, d, sizeof *d);
        return sizeof *d;
    }
    if (!strcmp(p->name, "vkgpu"))
        return vk_desc(d, buf, cap, why);
    if (d->kind == SOFTGPU_ALLOC_EXPLICIT) {
        *why = "kind=explicit gives softgpu's own segment sets, which another driver's private data cannot say";
        return 0;
    }
    size_t n = p->private_data ? p->private_data(p->driver, d->size, buf, cap) : 0;
    if (!n)
        *why = "the plug-in describes no allocation (no private_data)";
    return n;
}
