build-dbg/tests/main.o: tests/main.c tests/harness/test.h \
 tests/harness/splitmix.h tests/suites.def
tests/harness/test.h:
tests/harness/splitmix.h:
tests/suites.def:
