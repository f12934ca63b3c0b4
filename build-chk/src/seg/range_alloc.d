build-chk/src/seg/range_alloc.o: src/seg/range_alloc.c \
 src/seg/range_alloc.h include/vidmm/host_alloc.h include/vidmm/status.h \
 src/core/alloc_sites.h src/core/alloc_sites.def
src/seg/range_alloc.h:
include/vidmm/host_alloc.h:
include/vidmm/status.h:
src/core/alloc_sites.h:
src/core/alloc_sites.def:
