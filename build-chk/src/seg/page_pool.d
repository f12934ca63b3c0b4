build-chk/src/seg/page_pool.o: src/seg/page_pool.c src/seg/page_pool.h \
 src/seg/range_alloc.h include/vidmm/host_alloc.h include/vidmm/status.h \
 src/core/alloc_sites.h src/core/alloc_sites.def
src/seg/page_pool.h:
src/seg/range_alloc.h:
include/vidmm/host_alloc.h:
include/vidmm/status.h:
src/core/alloc_sites.h:
src/core/alloc_sites.def:
