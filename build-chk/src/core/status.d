build-chk/src/core/status.o: src/core/status.c include/vidmm/status.h
include/vidmm/status.h:
