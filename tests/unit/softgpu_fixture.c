/*
 * softgpu_fixture.c - see softgpu_fixture.h.
 */
#include "softgpu_fixture.h"

#include "gpuva_common.h"
#include "harness/test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void softgpu_fixture_config(struct softgpu_config *cfg, const char *preset, uint64_t seg1, uint64_t seg2, int sync)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->preset = preset;
    cfg->segment_size[1] = seg1;
    cfg->segment_size[2] = seg2;
    cfg->synchronous = sync;
}

int softgpu_open(struct fault_alloc *fa, const struct softgpu_config *cfg, const struct vidmm_driver_ops *ops,
            uint64_t system_memory_limit, struct softgpu **sg, struct vidmm_adapter **a)
{
    return softgpu_open_bounded(fa, cfg, ops, system_memory_limit, 0, sg, a);
}

int softgpu_open_bounded(struct fault_alloc *fa, const struct softgpu_config *cfg, const struct vidmm_driver_ops *ops,
                    uint64_t system_memory_limit, uint32_t max_processes, struct softgpu **sg,
                    struct vidmm_adapter **a)
{
    fault_alloc_init(fa);
    *sg = NULL;
    *a = NULL;
    T_ST(softgpu_create(cfg, sg), VIDMM_OK);
    if (!*sg)
        return -1;
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof(ci));
    softgpu_fill_adapter_create_info(*sg, &ci);
    if (ops)
        ci.ops = ops;
    ci.host_allocator = &fa->ha;
    if (system_memory_limit)
        ci.system_memory_limit = system_memory_limit;
    ci.max_processes = max_processes;
    T_ST(vidmm_adapter_open(&ci, a), VIDMM_OK);
    if (!*a) {
        softgpu_destroy(*sg);
        *sg = NULL;
        return -1;
    }
    return 0;
}

int softgpu_fx_open(struct softgpu_fx *f, uint64_t seg1, uint64_t seg2, int sync)
{
    memset(f, 0, sizeof(*f));
    struct softgpu_config cfg;
    softgpu_fixture_config(&cfg, "dgpu", seg1, seg2, sync);
    return softgpu_open(&f->fa, &cfg, NULL, 0, &f->sg, &f->a);
}

int softgpu_fx_open_preset(struct softgpu_fx *f, const char *preset)
{
    int igpu = !strcmp(preset, "igpu");
    memset(f, 0, sizeof(*f));
    struct softgpu_config cfg;
    softgpu_fixture_config(&cfg, preset, igpu ? 0 : 64ull << 20, igpu ? 0 : 128ull << 20, 0);
    return softgpu_open(&f->fa, &cfg, NULL, 0, &f->sg, &f->a);
}

int softgpu_checked(struct vidmm_adapter *a, struct softgpu *sg)
{
    char rep[2048];
    int e = vidmm_adapter_check(a, rep, sizeof rep);
    if (e)
        fprintf(stderr, "adapter check: %s\n", rep);
    if (sg)
        e += softgpu_check(sg);
    return e;
}

void softgpu_close(struct fault_alloc *fa, struct softgpu *sg, struct vidmm_adapter *a)
{
    T_EQ(softgpu_checked(a, NULL), 0);
    vidmm_adapter_close(a);
    T_EQ(fa->live_blocks, 0);
    T_EQ(fa->live_bytes, 0);
    softgpu_destroy(sg);
}

void softgpu_fx_close(struct softgpu_fx *f)
{
    softgpu_close(&f->fa, f->sg, f->a);
}

void softgpu_new_proc(struct vidmm_adapter *a, struct softgpu_proc *p, uint32_t node, uint32_t mode)
{
    memset(p, 0, sizeof(*p));
    T_ST(vidmm_process_create(a, &p->proc), VIDMM_OK);
    T_ST(vidmm_device_create(a, p->proc, &p->dev), VIDMM_OK);
    T_ST(vidmm_paging_queue_create(a, p->dev, VIDMM_PAGING_QUEUE_NORMAL, &p->queue), VIDMM_OK);
    struct vidmm_context_desc cd = { node, mode, 0, 0 };
    T_ST(vidmm_context_create(a, p->dev, &cd, &p->ctx), VIDMM_OK);
}

void softgpu_desc(struct softgpu_alloc_desc *d, enum softgpu_alloc_kind kind, uint32_t set, uint64_t size,
             uint32_t flags)
{
    memset(d, 0, sizeof(*d));
    d->kind = kind;
    d->size = size;
    d->info.size = size;
    d->info.supported_write_segment_set = set;
    d->info.flags = flags;
}

void softgpu_cpu_desc(struct softgpu_alloc_desc *d, enum softgpu_alloc_kind kind, uint32_t set, uint64_t size)
{
    softgpu_desc(d, kind, set, size, VIDMM_ALLOC_CPU_VISIBLE);
    d->cpu_visible = 1;
}

vidmm_handle softgpu_new_alloc(struct vidmm_adapter *a, enum softgpu_alloc_kind kind, uint32_t set, uint64_t size,
                          uint64_t seed, int resident)
{
    struct softgpu_alloc_desc d;
    softgpu_cpu_desc(&d, kind, set, size);
    vidmm_handle h = 0;
    T_ST(vidmm_allocation_create2(a, &d, sizeof(d), resident ? VIDMM_CREATE_RESIDENT : 0, &h), VIDMM_OK);
    if (h && seed)
        gv_pattern(a, h, seed);
    return h;
}

uint64_t softgpu_map(struct vidmm_adapter *a, vidmm_handle proc, vidmm_handle h, uint64_t size)
{
    uint64_t va = 0;
    T_ST(vidmm_gpuva_map(a, proc, 0, 0, 0, h, 0, size, 0, 0, &va), VIDMM_OK);
    return va;
}

/* vidmm_make_resident with CantTrimFurther; *fence: its paging fence. */
static vidmm_status make_resident_raw(struct vidmm_adapter *a, vidmm_handle dev, vidmm_handle queue,
                                      const vidmm_handle *l, uint32_t n, uint64_t *fence)
{
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof(mr));
    mr.paging_queue = queue;
    mr.allocations = l;
    mr.count = n;
    mr.flags = VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER;
    vidmm_status st = vidmm_make_resident(a, dev, &mr);
    *fence = mr.paging_fence_value;
    return st;
}

vidmm_status softgpu_make_resident_nowait(struct vidmm_adapter *a, vidmm_handle dev, vidmm_handle queue,
                                     const vidmm_handle *l, uint32_t n, uint64_t *fence)
{
    uint64_t f = 0;
    vidmm_status st = make_resident_raw(a, dev, queue, l, n, &f);
    if (st != VIDMM_OK && st != VIDMM_PENDING)
        fprintf(stderr, "make_resident: %s\n", vidmm_status_str(st));
    T_CHECK(st == VIDMM_OK || st == VIDMM_PENDING);
    if (fence)
        *fence = f;
    return st;
}

vidmm_status softgpu_try_make_resident(struct vidmm_adapter *a, vidmm_handle dev, vidmm_handle queue,
                                  const vidmm_handle *l, uint32_t n)
{
    uint64_t fence = 0;
    vidmm_status st = make_resident_raw(a, dev, queue, l, n, &fence);
    if (st == VIDMM_PENDING)
        st = vidmm_paging_queue_wait(a, queue, fence, UINT64_MAX);
    return st;
}

void softgpu_make_resident(struct vidmm_adapter *a, vidmm_handle dev, vidmm_handle queue, const vidmm_handle *l,
                      uint32_t n)
{
    uint64_t fence = 0;
    if (softgpu_make_resident_nowait(a, dev, queue, l, n, &fence) == VIDMM_PENDING)
        T_ST(vidmm_paging_queue_wait(a, queue, fence, UINT64_MAX), VIDMM_OK);
}

struct vidmm_allocation_state softgpu_alloc_state(struct vidmm_adapter *a, vidmm_handle h)
{
    struct vidmm_allocation_state st;
    memset(&st, 0, sizeof(st));
    T_ST(vidmm_allocation_query(a, h, &st), VIDMM_OK);
    return st;
}

void softgpu_cpu_write(struct vidmm_adapter *a, vidmm_handle h, uint64_t off, const void *src, size_t n)
{
    void *p = NULL;
    T_ST(vidmm_allocation_lock(a, h, &p), VIDMM_OK);
    if (p)
        memcpy((char *)p + off, src, n);
    T_ST(vidmm_allocation_unlock(a, h), VIDMM_OK);
}

uint64_t softgpu_cpu_read64(struct vidmm_adapter *a, vidmm_handle h, uint64_t off)
{
    void *p = NULL;
    uint64_t v = 0;
    T_ST(vidmm_allocation_lock(a, h, &p), VIDMM_OK);
    if (p)
        memcpy(&v, (char *)p + off, 8);
    T_ST(vidmm_allocation_unlock(a, h), VIDMM_OK);
    return v;
}

/* The bytes gv_pattern writes for seed; malloc'ed, NULL when out of memory. */
static uint64_t *pattern_bytes(uint64_t size, uint64_t seed)
{
    uint64_t *w = malloc(size);
    uint64_t s = seed;
    for (uint64_t i = 0; w && i < size / 8; i++)
        w[i] = seed ? t_rand(&s) : 0;
    return w;
}

uint64_t softgpu_pattern_sum(uint64_t size, uint64_t seed)
{
    uint64_t *w = pattern_bytes(size, seed);
    uint64_t h = w ? softgpu_checksum(w, size) : 0;
    free(w);
    return h;
}
