build-chk/src/core/host_alloc.o: src/core/host_alloc.c \
 include/vidmm/host_alloc.h src/core/alloc_sites.h \
 src/core/alloc_sites.def
include/vidmm/host_alloc.h:
src/core/alloc_sites.h:
src/core/alloc_sites.def:
