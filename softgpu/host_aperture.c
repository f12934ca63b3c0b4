/*
 * host_aperture.c - the CPU host aperture of an invisible memory segment.
 *
 * A segment flagged SUPPORTS_CPU_HOST_APERTURE has a host window of
 * host_ap_pages segment pages (64 KiB on dgpu/big), reserved PROT_NONE.
 * map_cpu_host_aperture points window page a at segment page p by mapping
 * the segment's memfd at offset p * page_size over the window page
 * (MAP_FIXED|MAP_SHARED), so CPU reads and writes through the window
 * reach the very bytes the copy engine sees.  Unmapping puts a PROT_NONE
 * anonymous page back, so a stale CPU access faults as on hardware.
 *
 * The copy engine never uses the window (it reaches the memfd through
 * the segment mapping), so map/unmap do not wait for it; they take
 * softgpu's lock only so that softgpu_check and softgpu_get_stats, maybe
 * on another thread, see the window table and its counter agree.
 */
#include "softgpu_int.h"

#include <stdlib.h>
#include <sys/mman.h>

vidmm_status softgpu_host_aperture_create(struct softgpu_segment *s)
{
    size_t bytes = (size_t)s->host_ap_pages * s->page_size;
    void *p = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return VIDMM_E_NO_HOST_MEMORY;
    s->host_ap = p;
    s->host_ap_map = malloc(s->host_ap_pages * sizeof(int64_t));
    if (!s->host_ap_map) {
        softgpu_host_aperture_destroy(s);
        return VIDMM_E_NO_HOST_MEMORY;
    }
    for (uint32_t i = 0; i < s->host_ap_pages; i++)
        s->host_ap_map[i] = -1;
    return VIDMM_OK;
}

void softgpu_host_aperture_destroy(struct softgpu_segment *s)
{
    if (s->host_ap)
        munmap(s->host_ap, (size_t)s->host_ap_pages * s->page_size);
    free(s->host_ap_map);
    s->host_ap = NULL;
    s->host_ap_map = NULL;
}

static struct softgpu_segment *softgpu_host_ap_segment(struct softgpu *sg, uint32_t id)
{
    if (!sg || id == 0 || id > sg->nb_segment)
        return NULL;
    struct softgpu_segment *s = &sg->seg[id];
    return s->host_ap ? s : NULL;
}

vidmm_status softgpu_map_cpu_host_aperture(void *driver, const struct vidmm_map_cpu_host_aperture_args *args)
{
    struct softgpu *sg = driver;
    if (!args)
        return VIDMM_E_INVALID_ARG;
    struct softgpu_segment *s = softgpu_host_ap_segment(sg, args->segment_id);
    if (!s || args->number_of_pages == 0 || !args->cpu_host_aperture_pages || !args->memory_segment_pages ||
        args->number_of_pages > s->host_ap_pages)
        return VIDMM_E_INVALID_ARG;
    uint64_t seg_pages = s->size / s->page_size;
    for (uint64_t i = 0; i < args->number_of_pages; i++)
        if (args->cpu_host_aperture_pages[i] >= s->host_ap_pages || args->memory_segment_pages[i] >= seg_pages)
            return VIDMM_E_INVALID_ARG;
    vidmm_status st = VIDMM_OK;
    softgpu_lock(sg);
    for (uint64_t i = 0; i < args->number_of_pages; i++) {
        uint32_t a = args->cpu_host_aperture_pages[i];
        uint64_t p = args->memory_segment_pages[i];
        void *r = mmap(s->host_ap + (size_t)a * s->page_size, s->page_size, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_FIXED, s->memfd, (off_t)(p * s->page_size));
        if (r == MAP_FAILED) {
            st = VIDMM_E_NO_HOST_MEMORY;
            break;
        }
        if (s->host_ap_map[a] < 0)
            sg->stats.host_aperture_pages_mapped++;
        s->host_ap_map[a] = (int64_t)p;
    }
    softgpu_unlock(sg);
    return st;
}

vidmm_status softgpu_unmap_cpu_host_aperture(void *driver, const struct vidmm_unmap_cpu_host_aperture_args *args)
{
    struct softgpu *sg = driver;
    if (!args)
        return VIDMM_E_INVALID_ARG;
    struct softgpu_segment *s = softgpu_host_ap_segment(sg, args->segment_id);
    if (!s || args->number_of_pages == 0 || !args->cpu_host_aperture_pages ||
        args->number_of_pages > s->host_ap_pages)
        return VIDMM_E_INVALID_ARG;
    for (uint64_t i = 0; i < args->number_of_pages; i++)
        if (args->cpu_host_aperture_pages[i] >= s->host_ap_pages)
            return VIDMM_E_INVALID_ARG;
    vidmm_status st = VIDMM_OK;
    softgpu_lock(sg);
    for (uint64_t i = 0; i < args->number_of_pages; i++) {
        uint32_t a = args->cpu_host_aperture_pages[i];
        if (s->host_ap_map[a] < 0)
            continue; /* already unmapped: nothing to do */
        void *r = mmap(s->host_ap + (size_t)a * s->page_size, s->page_size, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
        if (r == MAP_FAILED) {
            st = VIDMM_E_NO_HOST_MEMORY;
            break;
        }
        s->host_ap_map[a] = -1;
        sg->stats.host_aperture_pages_mapped--;
    }
    softgpu_unlock(sg);
    return st;
}

/* Every mapped window page must show its segment page: compare one word
 * read through the window with the same word of the segment mapping. */
int softgpu_host_aperture_check(const struct softgpu_segment *s, uint64_t *mapped)
{
    int bad = 0;
    uint64_t seg_pages = s->size / s->page_size;
    for (uint32_t a = 0; a < s->host_ap_pages; a++) {
        int64_t p = s->host_ap_map[a];
        if (p < 0)
            continue;
        (*mapped)++;
        if ((uint64_t)p >= seg_pages) {
            bad++;
            continue;
        }
        const volatile uint64_t *w = (const volatile uint64_t *)(s->host_ap + (size_t)a * s->page_size);
        const volatile uint64_t *m = (const volatile uint64_t *)(s->mem + (uint64_t)p * s->page_size);
        if (*w != *m)
            bad++;
    }
    return bad;
}

const void *softgpu_host_aperture_base(const struct softgpu *sg, uint32_t segment_id)
{
    if (!sg || segment_id == 0 || segment_id > sg->nb_segment)
        return NULL;
    return sg->seg[segment_id].host_ap;
}
