build-dbg/tools/vidmm/trace_write.o: tools/vidmm/trace_write.c \
 tools/vidmm/trace_int.h tools/vidmm/trace.h tests/harness/rules_check.h \
 include/vidmm/softgpu.h include/vidmm/adapter.h include/vidmm/driver.h \
 include/vidmm/status.h include/vidmm/host_alloc.h include/vidmm/vidmm.h \
 include/vidmm/segment.h include/vidmm/allocation.h \
 include/vidmm/gpummu.h include/vidmm/process.h include/vidmm/device.h \
 include/vidmm/policy.h include/vidmm/residency.h include/vidmm/submit.h \
 include/vidmm/tdr.h include/vidmm/power.h include/vidmm/rules.h \
 tests/harness/softgpu_cmds.h tests/harness/splitmix.h
tools/vidmm/trace_int.h:
tools/vidmm/trace.h:
tests/harness/rules_check.h:
include/vidmm/softgpu.h:
include/vidmm/adapter.h:
include/vidmm/driver.h:
include/vidmm/status.h:
include/vidmm/host_alloc.h:
include/vidmm/vidmm.h:
include/vidmm/segment.h:
include/vidmm/allocation.h:
include/vidmm/gpummu.h:
include/vidmm/process.h:
include/vidmm/device.h:
include/vidmm/policy.h:
include/vidmm/residency.h:
include/vidmm/submit.h:
include/vidmm/tdr.h:
include/vidmm/power.h:
include/vidmm/rules.h:
tests/harness/softgpu_cmds.h:
tests/harness/splitmix.h:
