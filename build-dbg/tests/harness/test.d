build-dbg/tests/harness/test.o: tests/harness/test.c tests/harness/test.h \
 tests/harness/splitmix.h
tests/harness/test.h:
tests/harness/splitmix.h:
