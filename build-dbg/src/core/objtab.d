build-dbg/src/core/objtab.o: src/core/objtab.c src/core/objtab.h \
 include/vidmm/host_alloc.h include/vidmm/status.h src/core/alloc_sites.h \
 src/core/alloc_sites.def
src/core/objtab.h:
include/vidmm/host_alloc.h:
include/vidmm/status.h:
src/core/alloc_sites.h:
src/core/alloc_sites.def:
