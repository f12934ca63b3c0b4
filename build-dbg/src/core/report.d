build-dbg/src/core/report.o: src/core/report.c src/core/report.h
src/core/report.h:
