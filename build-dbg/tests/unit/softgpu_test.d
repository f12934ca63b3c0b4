build-dbg/tests/unit/softgpu_test.o: tests/unit/softgpu_test.c \
 tests/harness/test.h tests/harness/splitmix.h softgpu/softgpu_int.h \
 include/vidmm/softgpu.h include/vidmm/adapter.h include/vidmm/driver.h \
 include/vidmm/status.h include/vidmm/host_alloc.h
tests/harness/test.h:
tests/harness/splitmix.h:
softgpu/softgpu_int.h:
include/vidmm/softgpu.h:
include/vidmm/adapter.h:
include/vidmm/driver.h:
include/vidmm/status.h:
include/vidmm/host_alloc.h:
