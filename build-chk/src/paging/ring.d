build-chk/src/paging/ring.o: src/paging/ring.c src/paging/ring.h \
 include/vidmm/host_alloc.h include/vidmm/status.h src/core/alloc_sites.h \
 src/core/alloc_sites.def
src/paging/ring.h:
include/vidmm/host_alloc.h:
include/vidmm/status.h:
src/core/alloc_sites.h:
src/core/alloc_sites.def:
