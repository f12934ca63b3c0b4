build-dbg/tests/unit/ra_layout.o: tests/unit/ra_layout.c \
 tests/unit/ra_layout.h src/seg/range_alloc.h include/vidmm/host_alloc.h \
 include/vidmm/status.h
tests/unit/ra_layout.h:
src/seg/range_alloc.h:
include/vidmm/host_alloc.h:
include/vidmm/status.h:
