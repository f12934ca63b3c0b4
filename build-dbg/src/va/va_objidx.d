build-dbg/src/va/va_objidx.o: src/va/va_objidx.c src/va/va_int.h \
 src/va/va_space.h include/vidmm/host_alloc.h include/vidmm/status.h \
 src/core/alloc_sites.h src/core/alloc_sites.def
src/va/va_int.h:
src/va/va_space.h:
include/vidmm/host_alloc.h:
include/vidmm/status.h:
src/core/alloc_sites.h:
src/core/alloc_sites.def:
