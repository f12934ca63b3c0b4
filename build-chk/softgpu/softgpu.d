build-chk/softgpu/softgpu.o: softgpu/softgpu.c softgpu/softgpu_int.h \
 include/vidmm/softgpu.h include/vidmm/adapter.h include/vidmm/driver.h \
 include/vidmm/status.h include/vidmm/host_alloc.h
softgpu/softgpu_int.h:
include/vidmm/softgpu.h:
include/vidmm/adapter.h:
include/vidmm/driver.h:
include/vidmm/status.h:
include/vidmm/host_alloc.h:
