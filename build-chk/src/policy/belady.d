build-chk/src/policy/belady.o: src/policy/belady.c src/policy/avl.h \
 include/vidmm/policy.h include/vidmm/host_alloc.h include/vidmm/status.h \
 src/policy/policy_int.h
src/policy/avl.h:
include/vidmm/policy.h:
include/vidmm/host_alloc.h:
include/vidmm/status.h:
src/policy/policy_int.h:
