build-chk/src/policy/registry.o: src/policy/registry.c \
 src/policy/policy_int.h include/vidmm/policy.h \
 include/vidmm/host_alloc.h include/vidmm/status.h src/core/alloc_sites.h \
 src/core/alloc_sites.def
src/policy/policy_int.h:
include/vidmm/policy.h:
include/vidmm/host_alloc.h:
include/vidmm/status.h:
src/core/alloc_sites.h:
src/core/alloc_sites.def:
