build-chk/src/policy/avl.o: src/policy/avl.c src/policy/avl.h \
 include/vidmm/policy.h include/vidmm/host_alloc.h include/vidmm/status.h
src/policy/avl.h:
include/vidmm/policy.h:
include/vidmm/host_alloc.h:
include/vidmm/status.h:
