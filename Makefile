# vidmm build.  Plain GNU make; no configure step.
#
#   make              libvidmm.a, libvidmm.so, libsoftgpu.a, the vidmm tool
#   make test         build and run every test (prints "N passed, M failed")
#   make html-check   the HTML report rendered by headless Chromium (skipped
#                     when `chromium` is not installed; installs nothing)
#   make demo         build and run the demo and the default scenario (desktop) on softgpu
#   make bench        build (-O2 -DNDEBUG) and run the benchmarks
#   make install PREFIX=/usr/local
#   make SAN=1 test   the same tests under ASan+UBSan (objects in build-san/)
#   make DEBUG=1 test the same tests with invariant assertions and the checkers
#                     run at every public entry (objects in build-dbg/)
#   make CC=clang     any C11 compiler with gcc-style flags
#   make tsan         the library tests under ThreadSanitizer (objects in build-tsan/;
#                     TSAN_FILTER=suite runs one suite)
#   make tsan-stress  the stress suite alone under ThreadSanitizer (CI runs it)
#   make long         the long-run tier (tests/long.sh; about 27 minutes on 2 cores; docs/TESTING.md)

CC      ?= cc
PREFIX  ?= /usr/local
VERSION := 0.1.0
SAN     ?= 0

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla
CSTD    := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
OPT     ?= -O2 -g

# DEBUG=1: VIDMM_BUG_ON stops at the first violated invariant, and every
# public entry runs the structure and rules checkers as it returns
# (src/model/entry.h); objects in build-dbg/.
DEBUG   ?= 0
ifeq ($(DEBUG),1)
BUILD   := build-dbg
DBGFLAGS := -DVIDMM_DEBUG
OPT     := -O1 -g
else
DBGFLAGS :=
endif

ifeq ($(SAN),1)
BUILD   := build-san
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
OPT     := -O1 -g
else
BUILD   ?= build
SANFLAGS :=
endif

CFLAGS_ALL  = $(CSTD) $(WARN) $(OPT) $(SANFLAGS) $(DBGFLAGS) -fPIC -Iinclude -Isrc $(CFLAGS)
LDFLAGS_ALL = $(SANFLAGS) $(LDFLAGS)
LIBS        = -lpthread -lm

LIB_SRC     := $(sort $(wildcard src/*/*.c))
SOFTGPU_SRC := $(sort $(wildcard softgpu/*.c))
TOOL_SRC    := $(sort $(wildcard tools/vidmm/*.c))
TEST_SRC    := $(sort $(wildcard tests/*.c tests/harness/*.c tests/unit/*.c))
# PEERS="a.c b.o": link other allocators into the benchmark (bench/peers.h);
# PEER_LIBS: the libraries they need (e.g. -lstdc++ for C++ peers);
# BENCH_ARGS: the arguments of the `make bench` run (e.g. --only A,C).
PEERS       ?=
PEER_LIBS   ?=
BENCH_ARGS  ?=
BENCH_SRC   := $(sort $(wildcard bench/*.c))
ifneq ($(strip $(PEERS)),)
BENCH_SRC   := $(filter-out bench/peers_none.c,$(BENCH_SRC))
endif

LIB_OBJ     := $(LIB_SRC:%.c=$(BUILD)/%.o)
SOFTGPU_OBJ := $(SOFTGPU_SRC:%.c=$(BUILD)/%.o)
TOOL_OBJ    := $(TOOL_SRC:%.c=$(BUILD)/%.o)
TEST_OBJ    := $(TEST_SRC:%.c=$(BUILD)/%.o)
BENCH_OBJ   := $(BENCH_SRC:%.c=$(BUILD)/%.o)

STATIC  := $(BUILD)/libvidmm.a
SHARED  := $(BUILD)/libvidmm.so.$(VERSION)
SOFTGPU := $(BUILD)/libsoftgpu.a
TOOL    := $(BUILD)/vidmm
TESTS   := $(BUILD)/vidmm-tests
BENCH   := $(BUILD)/vidmm-bench

.PHONY: all test html-check demo bench install clean check-headers tsan tsan-stress long
all: $(STATIC) $(SHARED) $(SOFTGPU) $(TOOL)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(STATIC): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(SHARED): $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,libvidmm.so.0 $(LDFLAGS_ALL) -o $@ $^ $(LIBS)
	ln -sf libvidmm.so.$(VERSION) $(BUILD)/libvidmm.so

$(SOFTGPU): $(SOFTGPU_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# The harness side of the rules checker (tests/harness/rules_check.c):
# one object linked into the tool, the tests and the fuzzers.
RULES_OBJ   := $(BUILD)/tests/harness/rules_check.o
$(TOOL_OBJ): CFLAGS_ALL += -Itests
$(TOOL): $(TOOL_OBJ) $(RULES_OBJ) $(SOFTGPU) $(STATIC)
	$(CC) $(LDFLAGS_ALL) -o $@ $(TOOL_OBJ) $(RULES_OBJ) $(SOFTGPU) $(STATIC) $(LIBS)

$(TEST_OBJ): CFLAGS_ALL += -Itests -Isoftgpu
$(TESTS): $(TEST_OBJ) $(SOFTGPU) $(STATIC)
	$(CC) $(LDFLAGS_ALL) -o $@ $(TEST_OBJ) $(SOFTGPU) $(STATIC) $(LIBS)

$(BENCH_OBJ): CFLAGS_ALL += -Isoftgpu -Itests
# Peer sources are compiled here, with the project's flags, except that a
# peer written for the six-member struct bench_allocator (positional
# initializers, before the workloads member) must still compile.
$(BENCH): $(BENCH_OBJ) $(SOFTGPU) $(STATIC) $(PEERS)
	$(CC) $(CFLAGS_ALL) -Wno-missing-field-initializers -Ibench $(LDFLAGS_ALL) -o $@ $(BENCH_OBJ) $(PEERS) $(SOFTGPU) $(STATIC) $(LIBS) $(PEER_LIBS)

test: $(TESTS) $(TOOL)
	sh tests/run.sh $(BUILD)

# ThreadSanitizer: softgpu's engine threads, fence and fault callbacks,
# and submissions from several threads (docs/TESTING.md).
tsan:
	$(MAKE) BUILD=build-tsan OPT="-O1 -g" CFLAGS=-fsanitize=thread LDFLAGS=-fsanitize=thread build-tsan/vidmm-tests
	TSAN_OPTIONS=halt_on_error=1 build-tsan/vidmm-tests $(TSAN_FILTER)

# Many threads on one adapter (tests/unit/stress_test.c, docs/THREADING.md):
# the part of `make tsan` short enough for CI.
long: all $(TESTS)
	sh tests/long.sh $(BUILD)

tsan-stress:
	$(MAKE) tsan TSAN_FILTER=stress

# Not part of `make test`: it needs a browser (Debian's chromium package)
# and takes about 15 s; .ci/run installs chromium and runs it.
html-check: $(TOOL)
	sh tests/html_render_test.sh $(TOOL)

demo: $(TOOL)
	$(TOOL) demo
	@echo
	@echo "== vidmm run desktop (the default scenario) =="
	$(TOOL) run desktop

# Pinned to CPU 1 when taskset can do it; otherwise a visible warning and
# an unpinned run.  Either way the benchmark's own exit status is make's
# (a --check violation or a failed run fails `make bench`).
bench:
	rm -f build-bench/vidmm-bench
	$(MAKE) BUILD=build-bench OPT="-O2 -DNDEBUG" PEERS="$(PEERS)" PEER_LIBS="$(PEER_LIBS)" build-bench/vidmm-bench
	@if command -v taskset >/dev/null 2>&1 && taskset -c 1 true; then \
	    echo "taskset -c 1 build-bench/vidmm-bench $(BENCH_ARGS)"; \
	    taskset -c 1 build-bench/vidmm-bench $(BENCH_ARGS); \
	else \
	    echo "WARNING: cannot pin with taskset -c 1 (see above); running unpinned, figures are noisier" >&2; \
	    build-bench/vidmm-bench $(BENCH_ARGS); \
	fi

# Every public header must compile on its own as strict C11 (no extensions).
check-headers:
	@for h in include/vidmm/*.h; do \
	  echo "#include \"$${h#include/}\"" | $(CC) -std=c11 -pedantic-errors -Wall -Wextra -Werror -Iinclude -x c -fsyntax-only - || exit 1; \
	done; echo "headers ok"

install: all
	install -d $(DESTDIR)$(PREFIX)/include/vidmm $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin
	install -m 644 include/vidmm/*.h $(DESTDIR)$(PREFIX)/include/vidmm/
	install -m 644 $(STATIC) $(SOFTGPU) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(SHARED) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libvidmm.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libvidmm.so.0
	ln -sf libvidmm.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libvidmm.so
	install -m 755 $(TOOL) $(DESTDIR)$(PREFIX)/bin/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' vidmm.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/vidmm.pc

clean:
	rm -rf build build-san build-bench build-clang build-tsan build-fuzz

-include $(wildcard $(BUILD)/*/*.d $(BUILD)/*/*/*.d)

# ---- fuzzing (fuzz/, docs/FUZZING.md) -------------------------------------
# `make test` builds the replayers (plain main(), any compiler) and replays
# every checked-in corpus; `make fuzz` builds the libFuzzer harnesses with
# clang (objects in build-fuzz/) and runs each for FUZZ_SECONDS.
FUZZ_HARNESSES := api_stream driver_desc cmdbuf
FUZZ_SECONDS   ?= 60
FUZZ_OBJ       := $(FUZZ_HARNESSES:%=$(BUILD)/fuzz/%.o) $(BUILD)/fuzz/replay_main.o
FUZZ_REPLAY    := $(FUZZ_HARNESSES:%=$(BUILD)/fuzz/%-replay)
FUZZ_DEPS      := $(RULES_OBJ) $(SOFTGPU) $(STATIC)
$(FUZZ_OBJ): CFLAGS_ALL += -Itests -Isoftgpu -Ifuzz

$(BUILD)/fuzz/%-replay: $(BUILD)/fuzz/%.o $(BUILD)/fuzz/replay_main.o $(FUZZ_DEPS)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS)

$(BUILD)/fuzz/%-fuzzer: $(BUILD)/fuzz/%.o $(FUZZ_DEPS)
	$(CC) $(LDFLAGS_ALL) -fsanitize=fuzzer -o $@ $^ $(LIBS)

test: $(FUZZ_REPLAY)
fuzz-replay: $(FUZZ_REPLAY)
	sh tests/fuzz_replay.sh $(BUILD)

FUZZ_CFLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
fuzz:
	$(MAKE) BUILD=build-fuzz CC=clang OPT="-O1 -g" CFLAGS="$(FUZZ_CFLAGS)" \
	  LDFLAGS="-fsanitize=address,undefined" $(FUZZ_HARNESSES:%=build-fuzz/fuzz/%-fuzzer)
	sh fuzz/run.sh build-fuzz $(FUZZ_SECONDS) $(FUZZ_HARNESSES)

.PHONY: fuzz fuzz-replay
