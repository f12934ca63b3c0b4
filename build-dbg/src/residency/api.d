build-dbg/src/residency/api.o: src/residency/api.c src/model/objects.h \
 include/vidmm/allocation.h include/vidmm/adapter.h \
 include/vidmm/driver.h include/vidmm/status.h include/vidmm/host_alloc.h \
 include/vidmm/gpummu.h include/vidmm/process.h include/vidmm/device.h \
 include/vidmm/policy.h include/vidmm/residency.h include/vidmm/segment.h \
 include/vidmm/tdr.h include/vidmm/power.h src/core/objtab.h \
 src/seg/evict_scan.h src/seg/range_alloc.h src/seg/page_pool.h \
 src/seg/ring.h src/va/va_space.h src/core/alloc_sites.h \
 src/core/alloc_sites.def src/model/entry.h src/alloc/alloc.h \
 src/fence/hang.h src/paging/paging.h src/residency/residency.h \
 src/residency/res_state.h
src/model/objects.h:
include/vidmm/allocation.h:
include/vidmm/adapter.h:
include/vidmm/driver.h:
include/vidmm/status.h:
include/vidmm/host_alloc.h:
include/vidmm/gpummu.h:
include/vidmm/process.h:
include/vidmm/device.h:
include/vidmm/policy.h:
include/vidmm/residency.h:
include/vidmm/segment.h:
include/vidmm/tdr.h:
include/vidmm/power.h:
src/core/objtab.h:
src/seg/evict_scan.h:
src/seg/range_alloc.h:
src/seg/page_pool.h:
src/seg/ring.h:
src/va/va_space.h:
src/core/alloc_sites.h:
src/core/alloc_sites.def:
src/model/entry.h:
src/alloc/alloc.h:
src/fence/hang.h:
src/paging/paging.h:
src/residency/residency.h:
src/residency/res_state.h:
