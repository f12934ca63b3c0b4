build-dbg/src/seg/ring.o: src/seg/ring.c src/seg/ring.h \
 include/vidmm/host_alloc.h include/vidmm/status.h src/core/alloc_sites.h \
 src/core/alloc_sites.def
src/seg/ring.h:
include/vidmm/host_alloc.h:
include/vidmm/status.h:
src/core/alloc_sites.h:
src/core/alloc_sites.def:
