build-dbg/fuzz/cmdbuf.o: fuzz/cmdbuf.c fuzz/fuzz.h \
 include/vidmm/host_alloc.h include/vidmm/softgpu.h \
 include/vidmm/adapter.h include/vidmm/driver.h include/vidmm/status.h \
 include/vidmm/vidmm.h include/vidmm/segment.h include/vidmm/allocation.h \
 include/vidmm/gpummu.h include/vidmm/process.h include/vidmm/device.h \
 include/vidmm/policy.h include/vidmm/residency.h include/vidmm/submit.h \
 include/vidmm/tdr.h include/vidmm/power.h include/vidmm/rules.h \
 tests/harness/softgpu_cmds.h softgpu/softgpu_int.h
fuzz/fuzz.h:
include/vidmm/host_alloc.h:
include/vidmm/softgpu.h:
include/vidmm/adapter.h:
include/vidmm/driver.h:
include/vidmm/status.h:
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
softgpu/softgpu_int.h:
