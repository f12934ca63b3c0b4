build-dbg/tests/unit/page_pool_test.o: tests/unit/page_pool_test.c \
 tests/harness/fault_alloc.h include/vidmm/host_alloc.h \
 tests/harness/test.h tests/harness/splitmix.h src/seg/page_pool.h \
 src/seg/range_alloc.h include/vidmm/status.h tests/unit/ra_layout.h
tests/harness/fault_alloc.h:
include/vidmm/host_alloc.h:
tests/harness/test.h:
tests/harness/splitmix.h:
src/seg/page_pool.h:
src/seg/range_alloc.h:
include/vidmm/status.h:
tests/unit/ra_layout.h:
