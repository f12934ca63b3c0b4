build-dbg/tests/unit/va_space_test.o: tests/unit/va_space_test.c \
 tests/harness/fault_alloc.h include/vidmm/host_alloc.h \
 tests/harness/test.h tests/harness/splitmix.h src/va/va_space.h \
 include/vidmm/status.h
tests/harness/fault_alloc.h:
include/vidmm/host_alloc.h:
tests/harness/test.h:
tests/harness/splitmix.h:
src/va/va_space.h:
include/vidmm/status.h:
