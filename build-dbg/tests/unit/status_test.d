build-dbg/tests/unit/status_test.o: tests/unit/status_test.c \
 tests/harness/test.h tests/harness/splitmix.h include/vidmm/status.h
tests/harness/test.h:
tests/harness/splitmix.h:
include/vidmm/status.h:
