build-chk/src/policy/lru.o: src/policy/lru.c src/policy/policy_int.h \
 include/vidmm/policy.h include/vidmm/host_alloc.h include/vidmm/status.h
src/policy/policy_int.h:
include/vidmm/policy.h:
include/vidmm/host_alloc.h:
include/vidmm/status.h:
