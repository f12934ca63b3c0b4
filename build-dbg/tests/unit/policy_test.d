build-dbg/tests/unit/policy_test.o: tests/unit/policy_test.c \
 tests/harness/fault_alloc.h include/vidmm/host_alloc.h \
 tests/harness/test.h tests/harness/splitmix.h include/vidmm/policy.h \
 include/vidmm/status.h
tests/harness/fault_alloc.h:
include/vidmm/host_alloc.h:
tests/harness/test.h:
tests/harness/splitmix.h:
include/vidmm/policy.h:
include/vidmm/status.h:
