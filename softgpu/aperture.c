/*
 * aperture.c - the GART of softgpu's aperture and AGP segments.
 *
 * The page table has one host page pointer per 4 KiB aperture page.  It
 * is reserved with mmap(MAP_NORESERVE), so a 2 GiB aperture costs RAM only
 * for the parts of the table ever written; an entry still zero points at
 * softgpu's own dummy page.  MAP_APERTURE_SEGMENT stores MDL page
 * addresses, UNMAP_APERTURE_SEGMENT stores the dummy page vidmm gives (or
 * softgpu's).  A bitmap beside the table says which entries hold MDL
 * pages, so reads through an unmapped range can be refused and the
 * mapped-page count checked.  The table is written by the copy engine
 * (engine.c), while executing MAP/UNMAP commands.
 */
#include "softgpu_int.h"

#include <stdlib.h>
#include <sys/mman.h>

vidmm_status softgpu_gart_create(struct softgpu_segment *s)
{
    s->gart_pages = s->size / SOFTGPU_PAGE_4K;
    s->gart_bytes = (size_t)s->gart_pages * sizeof(void *);
    void *p = mmap(NULL, s->gart_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        s->gart = NULL;
        return VIDMM_E_NO_HOST_MEMORY;
    }
    s->gart = p;
    s->gart_mapped = calloc((size_t)((s->gart_pages + 63) / 64), sizeof(uint64_t));
    if (!s->gart_mapped) {
        softgpu_gart_destroy(s);
        return VIDMM_E_NO_HOST_MEMORY;
    }
    return VIDMM_OK;
}

void softgpu_gart_destroy(struct softgpu_segment *s)
{
    if (s->gart)
        munmap(s->gart, s->gart_bytes);
    free(s->gart_mapped);
    s->gart = NULL;
    s->gart_mapped = NULL;
}

int softgpu_gart_is_mapped(const struct softgpu_segment *s, uint64_t page)
{
    return (int)((s->gart_mapped[page / 64] >> (page % 64)) & 1u);
}

void softgpu_gart_map(struct softgpu *sg, struct softgpu_segment *s, uint64_t first, uint64_t count, uint8_t *pages)
{
    for (uint64_t i = 0; i < count; i++) {
        uint64_t e = first + i;
        uint64_t bit = 1ull << (e % 64);
        s->gart[e] = pages + i * SOFTGPU_PAGE_4K;
        if (!(s->gart_mapped[e / 64] & bit)) {
            s->gart_mapped[e / 64] |= bit;
            sg->stats.aperture_pages_mapped++;
        }
    }
}

void softgpu_gart_unmap(struct softgpu *sg, struct softgpu_segment *s, uint64_t first, uint64_t count, void *dummy)
{
    /* softgpu's own dummy page is stored as NULL, as in a fresh table. */
    void *entry = dummy == sg->dummy_page ? NULL : dummy;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t e = first + i;
        uint64_t bit = 1ull << (e % 64);
        s->gart[e] = entry;
        if (s->gart_mapped[e / 64] & bit) {
            s->gart_mapped[e / 64] &= ~bit;
            sg->stats.aperture_pages_mapped--;
        }
    }
}

/* Mapped entries must hold a 4 KiB-aligned page that is not a dummy. */
int softgpu_gart_check(const struct softgpu *sg, const struct softgpu_segment *s, uint64_t *mapped)
{
    int bad = 0;
    for (uint64_t w = 0; w < (s->gart_pages + 63) / 64; w++) {
        uint64_t bits = s->gart_mapped[w];
        while (bits) {
            unsigned b = (unsigned)__builtin_ctzll(bits);
            bits &= bits - 1;
            uint64_t e = w * 64 + b;
            const void *p = s->gart[e];
            if (e >= s->gart_pages || !p || p == sg->dummy_page || ((uintptr_t)p & (SOFTGPU_PAGE_4K - 1)))
                bad++;
            (*mapped)++;
        }
    }
    return bad;
}

const void *softgpu_aperture_entry(const struct softgpu *sg, uint32_t segment_id, uint64_t page)
{
    if (!sg || segment_id == 0 || segment_id > sg->nb_segment)
        return NULL;
    const struct softgpu_segment *s = &sg->seg[segment_id];
    if (!s->gart || page >= s->gart_pages)
        return NULL;
    /* The engine writes the table: read it between buffers. */
    softgpu_lock_access(sg);
    const void *p = s->gart[page] ? s->gart[page] : sg->dummy_page;
    softgpu_unlock(sg);
    return p;
}

const void *softgpu_dummy_page(const struct softgpu *sg)
{
    return sg ? sg->dummy_page : NULL;
}
