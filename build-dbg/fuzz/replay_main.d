build-dbg/fuzz/replay_main.o: fuzz/replay_main.c fuzz/fuzz.h \
 include/vidmm/host_alloc.h
fuzz/fuzz.h:
include/vidmm/host_alloc.h:
