/*
 * iso_common.c - see iso_common.h.
 */
#include "iso_common.h"

#include "softgpu_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


int iso_open(struct iso_fx *f, const char *preset, uint32_t seg, uint64_t seg_size, int sync)
{
    uint64_t sizes[SOFTGPU_MAX_SEGMENTS + 1] = { 0 };
    if (seg <= SOFTGPU_MAX_SEGMENTS)
        sizes[seg] = seg_size;
    return iso_open_sizes(f, preset, sizes, sync);
}

int iso_open_sizes(struct iso_fx *f, const char *preset, const uint64_t *sizes, int sync)
{
    memset(f, 0, sizeof(*f));
    struct softgpu_config cfg;
    softgpu_fixture_config(&cfg, preset, 0, 0, sync);
    for (uint32_t i = 1; i <= SOFTGPU_MAX_SEGMENTS; i++)
        cfg.segment_size[i] = sizes[i];
    if (softgpu_open(&f->fa, &cfg, NULL, 256 * MIB, &f->sg, &f->a))
        return -1;
    struct vidmm_adapter_info ai;
    T_ST(vidmm_adapter_query_info(f->a, &ai), VIDMM_OK);
    f->ap = ai.aperture_segment_id;
    struct vidmm_gpummu_info gi;
    f->gpummu = vidmm_adapter_query_gpummu(f->a, &gi) == VIDMM_OK;
    return 0;
}

int iso_checked(struct iso_fx *f)
{
    return softgpu_checked(f->a, f->sg);
}

void iso_close(struct iso_fx *f)
{
    T_EQ(softgpu_check(f->sg), 0);
    softgpu_close(&f->fa, f->sg, f->a);
}

/* ---- processes ---------------------------------------------------------- */


void iso_mr(struct iso_fx *f, struct iso_proc *p, const vidmm_handle *l, uint32_t n, vidmm_status want)
{
    T_ST(softgpu_try_make_resident(f->a, p->dev, p->queue, l, n), want);
}

/* A private allocation of p: segments set, AccessedPhysically when ap,
 * CPU-visible when cpu; resident = created resident. */
vidmm_handle iso_palloc(struct iso_fx *f, struct iso_proc *p, uint32_t set, uint64_t size, int ap, int cpu,
                        int resident, vidmm_status want)
{
    struct softgpu_alloc_desc d;
    softgpu_desc(&d, SOFTGPU_ALLOC_EXPLICIT, set, size,
            (ap ? VIDMM_ALLOC_ACCESSED_PHYSICALLY : 0) | (cpu ? VIDMM_ALLOC_CPU_VISIBLE : 0));
    vidmm_handle h = 0;
    T_ST(vidmm_device_allocation_create(f->a, p->dev, &d, sizeof(d), resident ? VIDMM_CREATE_RESIDENT : 0, &h),
         want);
    return h;
}

uint64_t iso_map(struct iso_fx *f, struct iso_proc *p, vidmm_handle h, uint64_t size)
{
    uint64_t va = 0;
    T_ST(vidmm_gpuva_map(f->a, p->proc, 0, 0, 0, h, 0, size, 0, 0, &va), VIDMM_OK);
    return va;
}

void iso_new_proc(struct iso_fx *f, struct iso_proc *p)
{
    memset(p, 0, sizeof(*p));
    T_ST(vidmm_process_create(f->a, &p->proc), VIDMM_OK);
    T_ST(vidmm_device_create(f->a, p->proc, &p->dev), VIDMM_OK);
    T_ST(vidmm_paging_queue_create(f->a, p->dev, VIDMM_PAGING_QUEUE_NORMAL, &p->queue), VIDMM_OK);
    struct vidmm_context_desc cd = { SOFTGPU_NODE_COPY, VIDMM_CONTEXT_PHYSICAL, 0, 0 };
    T_ST(vidmm_context_create(f->a, p->dev, &cd, &p->pctx), VIDMM_OK);
    if (f->gpummu) {
        struct vidmm_context_desc vd = { SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL, 0, 0 };
        T_ST(vidmm_context_create(f->a, p->dev, &vd, &p->vctx), VIDMM_OK);
    }
    p->aux = iso_palloc(f, p, VIDMM_SEGMENT_BIT(f->ap), AUX_SIZE, 1, 1, 1, VIDMM_OK);
    iso_mr(f, p, &p->aux, 1, VIDMM_OK);
    if (f->gpummu)
        p->aux_va = iso_map(f, p, p->aux, AUX_SIZE);
}

uint64_t iso_aux_read(struct iso_fx *f, struct iso_proc *p, uint64_t off)
{
    void *c = NULL;
    uint64_t v = 0;
    T_ST(vidmm_device_lock(f->a, p->dev, p->aux, &c), VIDMM_OK);
    if (c)
        memcpy(&v, (char *)c + off, 8);
    T_ST(vidmm_device_unlock(f->a, p->dev, p->aux), VIDMM_OK);
    return v;
}

void iso_aux_write(struct iso_fx *f, struct iso_proc *p, uint64_t off, const void *src, size_t n)
{
    void *c = NULL;
    T_ST(vidmm_device_lock(f->a, p->dev, p->aux, &c), VIDMM_OK);
    if (c)
        memcpy((char *)c + off, src, n);
    T_ST(vidmm_device_unlock(f->a, p->dev, p->aux), VIDMM_OK);
}

/* Run a command buffer in p's virtual context (copied into its aux
 * allocation) and wait for it. */
void iso_run_virtual(struct iso_fx *f, struct iso_proc *p, const struct softgpu_cmdbuf *cb)
{
    iso_aux_write(f, p, 0, cb->data, cb->size);
    uint64_t fence = 0;
    T_ST(vidmm_submit_virtual(f->a, p->vctx, p->aux_va, cb->size, &fence), VIDMM_OK);
    if (fence)
        T_ST(vidmm_context_wait(f->a, p->vctx, fence, UINT64_MAX), VIDMM_OK);
}

uint64_t iso_zero_sum(uint64_t size)
{
    void *z = calloc(1, size);
    uint64_t h = z ? softgpu_checksum(z, size) : 0;
    free(z);
    return h;
}

uint64_t iso_fill_sum(uint64_t size, uint32_t pattern)
{
    uint32_t *w = malloc(size);
    for (uint64_t i = 0; w && i < size / 4; i++)
        w[i] = pattern;
    uint64_t h = w ? softgpu_checksum(w, size) : 0;
    free(w);
    return h;
}

/* CHECKSUM of each of h[0..n) (size bytes each) in p's contexts: virtual
 * at va[i] when va is given, physical through patched segment addresses
 * when phys (the allocations must be AccessedPhysically).  Each result
 * must equal want. */
void iso_gpu_sums(struct iso_fx *f, struct iso_proc *p, const vidmm_handle *h, const uint64_t *va, uint32_t n,
                  uint64_t size, int phys, uint64_t want)
{
    uint8_t buf[MAX_ALLOCS * 32 + 64];
    if (va) {
        iso_aux_write(f, p, AUX_RES, (uint8_t[8 * MAX_ALLOCS]){ 0 }, 8 * n);
        struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
        for (uint32_t i = 0; i < n; i++)
            T_ST(softgpu_cmd_checksum(&cb, va[i], size, p->aux_va + AUX_RES + 8 * i), VIDMM_OK);
        iso_run_virtual(f, p, &cb);
        for (uint32_t i = 0; i < n; i++)
            T_EQ_U64(iso_aux_read(f, p, AUX_RES + 8 * i), want);
    }
    if (phys) {
        iso_aux_write(f, p, AUX_RES, (uint8_t[8 * MAX_ALLOCS]){ 0 }, 8 * n);
        struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
        struct vidmm_submit_allocation al[MAX_ALLOCS + 1];
        struct vidmm_patch_location pl[2 * MAX_ALLOCS];
        memset(al, 0, sizeof(al));
        memset(pl, 0, sizeof(pl));
        al[0].allocation = p->aux;
        al[0].flags = VIDMM_SUBMIT_WRITE;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t at = cb.size;
            T_ST(softgpu_cmd_checksum(&cb, 0, size, 0), VIDMM_OK);
            al[1 + i].allocation = h[i];
            pl[2 * i] = (struct vidmm_patch_location){ 1 + i, 0, 0, 0, at + SOFTGPU_CMD_OPERAND(0), 0 };
            pl[2 * i + 1] =
                (struct vidmm_patch_location){ 0, 0, 0, (uint32_t)(AUX_RES + 8 * i), at + SOFTGPU_CMD_OPERAND(2), 0 };
        }
        struct vidmm_submit_physical_args pa;
        memset(&pa, 0, sizeof(pa));
        pa.buffer = buf;
        pa.size = cb.size;
        pa.allocations = al;
        pa.allocation_count = n + 1;
        pa.patches = pl;
        pa.patch_count = 2 * n;
        T_ST(vidmm_submit_physical(f->a, p->pctx, &pa), VIDMM_OK);
        if (pa.fence)
            T_ST(vidmm_context_wait(f->a, p->pctx, pa.fence, UINT64_MAX), VIDMM_OK);
        for (uint32_t i = 0; i < n; i++)
            T_EQ_U64(iso_aux_read(f, p, AUX_RES + 8 * i), want);
    }
}

/* Every byte of h reads zero through p's CPU lock. */
void iso_cpu_zero(struct iso_fx *f, struct iso_proc *p, vidmm_handle h, uint64_t size)
{
    void *c = NULL;
    T_ST(vidmm_device_lock(f->a, p->dev, h, &c), VIDMM_OK);
    if (!c)
        return;
    const uint8_t *b = c;
    uint64_t bad = 0;
    for (uint64_t i = 0; i < size; i++)
        bad += b[i] != 0;
    T_EQ_U64(bad, 0);
    T_ST(vidmm_device_unlock(f->a, p->dev, h), VIDMM_OK);
}

