build-dbg/tests/unit/ring_test.o: tests/unit/ring_test.c \
 tests/harness/fault_alloc.h include/vidmm/host_alloc.h \
 tests/harness/test.h tests/harness/splitmix.h src/seg/ring.h \
 include/vidmm/status.h
tests/harness/fault_alloc.h:
include/vidmm/host_alloc.h:
tests/harness/test.h:
tests/harness/splitmix.h:
src/seg/ring.h:
include/vidmm/status.h:
