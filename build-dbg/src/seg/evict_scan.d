build-dbg/src/seg/evict_scan.o: src/seg/evict_scan.c src/seg/evict_scan.h \
 src/seg/range_alloc.h include/vidmm/host_alloc.h include/vidmm/status.h \
 src/core/alloc_sites.h src/core/alloc_sites.def
src/seg/evict_scan.h:
src/seg/range_alloc.h:
include/vidmm/host_alloc.h:
include/vidmm/status.h:
src/core/alloc_sites.h:
src/core/alloc_sites.def:
