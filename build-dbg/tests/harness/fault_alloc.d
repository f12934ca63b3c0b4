build-dbg/tests/harness/fault_alloc.o: tests/harness/fault_alloc.c \
 tests/harness/fault_alloc.h include/vidmm/host_alloc.h
tests/harness/fault_alloc.h:
include/vidmm/host_alloc.h:
