/*
 * memory.c - backing store of softgpu's memory segments.
 *
 * Each memory segment is an anonymous memfd truncated to the segment size
 * (sparse: no RAM is used until a page is touched) and mapped once
 * MAP_SHARED|MAP_NORESERVE.  That mapping is the segment's "VRAM": the
 * copy engine reads and writes it, a CPU-visible segment hands it out as
 * its BAR, and the CPU host aperture maps windows onto the same memfd.
 * "prefault" populates every page up front: posix_fallocate allocates the
 * file's pages (about 3x faster on shmem than faulting them in), then
 * MADV_POPULATE_WRITE maps them (one write per 4 KiB page on kernels
 * without it); softgpu_create refuses a prefault larger than the RAM the
 * host has available.
 */
#include "softgpu_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001u
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

uint64_t softgpu_available_ram(void)
{
    long pages = sysconf(_SC_AVPHYS_PAGES);
    long psz = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || psz <= 0)
        return 0;
    return (uint64_t)pages * (uint64_t)psz;
}

static int softgpu_memfd(uint32_t id)
{
    char name[32];
    snprintf(name, sizeof name, "softgpu-seg%u", (unsigned)id);
#ifdef SYS_memfd_create
    return (int)syscall(SYS_memfd_create, name, (unsigned)MFD_CLOEXEC);
#else
    (void)name;
    errno = ENOSYS;
    return -1;
#endif
}

static void softgpu_prefault(uint8_t *p, uint64_t size)
{
    if (madvise(p, size, MADV_POPULATE_WRITE) == 0)
        return;
    /* Older kernel: write one byte per 4 KiB page. */
    for (uint64_t o = 0; o < size; o += SOFTGPU_PAGE_4K) {
        volatile uint8_t *b = p + o;
        *b = 0; /* fresh segment: already zero */
    }
}

vidmm_status softgpu_memory_create(struct softgpu_segment *s, uint32_t id, int prefault)
{
    s->memfd = softgpu_memfd(id);
    if (s->memfd < 0)
        return VIDMM_E_NO_HOST_MEMORY;
    if (ftruncate(s->memfd, (off_t)s->size) != 0) {
        close(s->memfd);
        s->memfd = -1;
        return VIDMM_E_NO_HOST_MEMORY;
    }
    if (prefault && posix_fallocate(s->memfd, 0, (off_t)s->size) != 0) {
        close(s->memfd);
        s->memfd = -1;
        return VIDMM_E_NO_HOST_MEMORY;
    }
    void *p = mmap(NULL, (size_t)s->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, s->memfd, 0);
    if (p == MAP_FAILED) {
        close(s->memfd);
        s->memfd = -1;
        return VIDMM_E_NO_HOST_MEMORY;
    }
    s->mem = p;
    s->prefaulted = prefault;
    if (prefault)
        softgpu_prefault(s->mem, s->size);
    return VIDMM_OK;
}

void softgpu_memory_destroy(struct softgpu_segment *s)
{
    if (s->mem)
        munmap(s->mem, (size_t)s->size);
    if (s->memfd >= 0)
        close(s->memfd);
    s->mem = NULL;
    s->memfd = -1;
}
