# vidmm build.  Plain GNU make; no configure step.
#
#   make              libvidmm.a, libvidmm.so, libsoftgpu.a, the vidmm tool
#   make test         build and run every test (prints "N passed, M failed")
#   make html-check   the HTML report rendered by headless Chromium (skipped
#                     when `chromium` is not installed; installs nothing)
#   make demo         build and run the demo and the default scenario (desktop) on softgpu
#   make docs-refresh rewrite the docs' excerpts of program output (tests/docs_test.py)
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
# The release, from the header (include/vidmm/version.h); the SONAME
# follows the major version (docs/ABI.md).
VERSION := $(shell sed -n 's/^\#define VIDMM_VERSION_STRING "\(.*\)"/\1/p' include/vidmm/version.h)
MAJOR   := $(firstword $(subst ., ,$(VERSION)))
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

# No -Isrc here: only the library's own objects and the white-box tests
# (tests/unit, WHITEBOX_BENCH_OBJ) see src/ (tests/layering.sh checks it).
CFLAGS_ALL  = $(CSTD) $(WARN) $(OPT) $(SANFLAGS) $(DBGFLAGS) -fPIC -Iinclude $(CFLAGS)
LDFLAGS_ALL = $(SANFLAGS) $(LDFLAGS)
LIBS        = -lpthread -lm

LIB_SRC     := $(sort $(wildcard src/*/*.c))
SOFTGPU_SRC := $(sort $(wildcard softgpu/*.c))
TOOL_SRC    := $(sort $(wildcard tools/vidmm/*.c tools/vidmm/*/*.c))
SUPPORT_SRC := $(sort $(wildcard support/*.c))
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
SUPPORT_OBJ := $(SUPPORT_SRC:%.c=$(BUILD)/%.o)
TEST_OBJ    := $(TEST_SRC:%.c=$(BUILD)/%.o)
BENCH_OBJ   := $(BENCH_SRC:%.c=$(BUILD)/%.o)

MINIDRV_OBJ  := $(BUILD)/examples/minidrv/minidrv.o
DRVCHECK_OBJ := $(BUILD)/examples/drvcheck/drvcheck.o
HELLO        := $(BUILD)/examples/minidrv/hello
MINIDRV_SO   := $(BUILD)/examples/minidrv/minidrv.so
EXAMPLES     := $(HELLO) $(MINIDRV_SO)

STATIC  := $(BUILD)/libvidmm.a
SHARED  := $(BUILD)/libvidmm.so.$(VERSION)
SOFTGPU := $(BUILD)/libsoftgpu.a
SUPPORT := $(BUILD)/libvidmm-support.a
TOOL    := $(BUILD)/vidmm
TESTS   := $(BUILD)/vidmm-tests
BENCH   := $(BUILD)/vidmm-bench

.PHONY: same-behaviour d3dkmt uninstall install-check all examples test html-check docs-refresh demo bench install clean check-headers tsan tsan-stress long
all: $(STATIC) $(SHARED) $(SOFTGPU) $(TOOL)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(STATIC): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# Hidden by default: only what the public headers mark VIDMM_API is
# exported, under the version script's node.
$(LIB_OBJ): CFLAGS_ALL += -Isrc -fvisibility=hidden -DVIDMM_BUILDING_LIBRARY
# `make shared`: the shared library alone (CI builds it with SAN=1 for the
# daemon's plug-in loader test, which loads it as a library without an entry).
.PHONY: shared
shared: $(SHARED)
$(SHARED): $(LIB_OBJ) src/libvidmm.map
	$(CC) -shared -Wl,-soname,libvidmm.so.$(MAJOR) -Wl,--version-script=src/libvidmm.map $(LDFLAGS_ALL) -o $@ $(LIB_OBJ) $(LIBS)
	ln -sf libvidmm.so.$(VERSION) $(BUILD)/libvidmm.so

$(SOFTGPU): $(SOFTGPU_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# The support library (support/, not installed): what the tool, the tests,
# the fuzzers and the explorer share - the WDDM rules checker, the failing
# driver (`vidmm run --fail-driver` wraps softgpu with it), the seeded
# generator and softgpu's command helpers.  Public headers, plus softgpu's
# internal header for the rules checker's white-box reads.
$(SUPPORT_OBJ): CFLAGS_ALL += -Isoftgpu
$(SUPPORT): $(SUPPORT_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# The tool: public headers, its own folders (tools/vidmm/FOLDER/x.h), the
# support library and the conformance kit; nothing of src/ or tests/.
$(TOOL_OBJ): CFLAGS_ALL += -Itools/vidmm -Isupport
$(TOOL_OBJ): CFLAGS_ALL += -Iexamples/drvcheck
$(TOOL): $(TOOL_OBJ) $(SUPPORT) $(DRVCHECK_OBJ) $(SOFTGPU) $(STATIC)
	$(CC) $(LDFLAGS_ALL) -o $@ $(TOOL_OBJ) $(DRVCHECK_OBJ) $(SUPPORT) $(SOFTGPU) $(CLIENT_LIB) $(STATIC) $(LIBS) -ldl

$(TEST_OBJ): CFLAGS_ALL += -Itests -Isoftgpu -Isupport
# The white-box unit tests read the library's internals.
$(filter $(BUILD)/tests/unit/%,$(TEST_OBJ)): CFLAGS_ALL += -Isrc
$(TESTS): $(TEST_OBJ) $(SUPPORT) $(SOFTGPU) $(STATIC)
	$(CC) $(LDFLAGS_ALL) -o $@ $(TEST_OBJ) $(SUPPORT) $(SOFTGPU) $(STATIC) $(LIBS)

$(BENCH_OBJ): CFLAGS_ALL += -Isoftgpu -Itests -Isupport
# The benchmarks that time the library's internal structures directly
# (range allocator, eviction scan, VA space) are white-box.
WHITEBOX_BENCH_OBJ := $(addprefix $(BUILD)/bench/,alloc_bench.o evict_bench.o va_bench.o)
$(WHITEBOX_BENCH_OBJ): CFLAGS_ALL += -Isrc
# Peer sources are compiled here, with the project's flags, except that a
# peer written for the six-member struct bench_allocator (positional
# initializers, before the workloads member) must still compile.
$(BENCH): $(BENCH_OBJ) $(SUPPORT) $(SOFTGPU) $(STATIC) $(PEERS)
	$(CC) $(CFLAGS_ALL) -Wno-missing-field-initializers -Ibench $(LDFLAGS_ALL) -o $@ $(BENCH_OBJ) $(PEERS) $(SUPPORT) $(SOFTGPU) $(STATIC) $(LIBS) $(PEER_LIBS)

# ---- examples (docs/WRITING_A_DRIVER.md) ---------------------------------
# The example driver and the driver conformance kit are clients of the
# public headers only: no -Isrc, no -Isoftgpu.
EX_CFLAGS    = $(CSTD) $(WARN) $(OPT) $(SANFLAGS) $(DBGFLAGS) -fPIC -Iinclude $(CFLAGS)

$(BUILD)/examples/%.o: examples/%.c
	@mkdir -p $(dir $@)
	$(CC) $(EX_CFLAGS) -MMD -MP -c $< -o $@

$(HELLO): $(BUILD)/examples/minidrv/hello.o $(MINIDRV_OBJ) $(STATIC)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS)

# A plug-in for `vidmm drvcheck --driver`: the driver and its
# vidmm_driver_entry, nothing of libvidmm (callbacks come from the host).
$(MINIDRV_SO): $(MINIDRV_OBJ) $(BUILD)/examples/minidrv/entry.o
	$(CC) -shared $(LDFLAGS_ALL) -o $@ $^ -lpthread

examples: $(EXAMPLES)

# ---- a driver whose VRAM the CPU cannot reach (tests/drvcheck_test.sh) ----
# Written from docs/WRITING_A_DRIVER.md as a plug-in of the kit; public
# headers only.
INVISIBLE_SO := $(BUILD)/tests/drvcheck/invisible_vram.so
$(INVISIBLE_SO): tests/drvcheck/invisible_vram.c
	@mkdir -p $(dir $@)
	$(CC) $(EX_CFLAGS) -shared -o $@ $< -lpthread
test: $(INVISIBLE_SO)
# ---- end of the invisible-VRAM driver ----

# ---- the D3DKMT front end (docs/D3DKMT.md) -------------------------------
# libvidmm-d3dkmt: the D3DKMT thunks over the public vidmm API only (no
# -Isrc); its tests and the sample client are separate programs.
D3DKMT_SRC   := $(sort $(wildcard d3dkmt/*.c))
D3DKMT_OBJ   := $(D3DKMT_SRC:%.c=$(BUILD)/%.o)
D3DKMT_LIB   := $(BUILD)/libvidmm-d3dkmt.a
D3DKMT_TESTS := $(BUILD)/vidmm-d3dkmt-tests
D3DKMT_CLIENT := $(BUILD)/examples/d3dkmt_client/d3dkmt_client
D3DKMT_TEST_OBJ := $(BUILD)/tests/d3dkmt/d3dkmt_test.o $(BUILD)/tests/d3dkmt/main.o $(BUILD)/tests/harness/test.o $(BUILD)/tests/harness/fault_alloc.o

$(D3DKMT_OBJ): $(BUILD)/d3dkmt/%.o: d3dkmt/%.c
	@mkdir -p $(dir $@)
	$(CC) $(EX_CFLAGS) -MMD -MP -c $< -o $@

$(D3DKMT_LIB): $(D3DKMT_OBJ)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/tests/d3dkmt/%.o: tests/d3dkmt/%.c
	@mkdir -p $(dir $@)
	$(CC) $(EX_CFLAGS) -Itests -Isupport -MMD -MP -c $< -o $@

# Both also reach vidmmd through the remote backend (d3dkmt/backend_client.c),
# hence libvidmm-client (its rule is in the vidmmd section below).
$(D3DKMT_TESTS): $(D3DKMT_TEST_OBJ) $(D3DKMT_LIB) $(SOFTGPU) $(STATIC)
	$(CC) $(LDFLAGS_ALL) -o $@ $(D3DKMT_TEST_OBJ) $(D3DKMT_LIB) $(CLIENT_LIB) $(SOFTGPU) $(STATIC) $(LIBS)

$(D3DKMT_CLIENT): $(BUILD)/examples/d3dkmt_client/d3dkmt_client.o $(D3DKMT_LIB) $(SOFTGPU) $(STATIC)
	$(CC) $(LDFLAGS_ALL) -o $@ $(BUILD)/examples/d3dkmt_client/d3dkmt_client.o $(D3DKMT_LIB) $(CLIENT_LIB) $(SOFTGPU) $(STATIC) $(LIBS)

d3dkmt: $(D3DKMT_LIB) $(D3DKMT_TESTS) $(D3DKMT_CLIENT)
all: $(D3DKMT_LIB)

test: $(TESTS) $(TOOL) $(EXAMPLES) $(SHARED) $(D3DKMT_TESTS) $(D3DKMT_CLIENT)
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

# A refactor changes no behaviour: the tool built at BASE (a git revision,
# default HEAD~1, built in a throw-away worktree) and this tree's tool must
# write byte-identical traces, reports and snapshots for the same runs
# (tests/same_behaviour.sh; docs/TESTING.md "Refactors").
BASE ?= HEAD~1
same-behaviour: $(TOOL)
	rm -rf $(BUILD)/base-tree
	git worktree add --detach $(BUILD)/base-tree $(BASE)
	$(MAKE) -C $(BUILD)/base-tree BUILD=build build/vidmm || { git worktree remove --force $(BUILD)/base-tree; exit 1; }
	sh tests/same_behaviour.sh $(BUILD)/base-tree/build/vidmm $(TOOL) $(SEEDS); rc=$$?; \
	  git worktree remove --force $(BUILD)/base-tree; exit $$rc

tsan-stress:
	$(MAKE) tsan TSAN_FILTER=stress

# Not part of `make test`: it needs a browser (Debian's chromium package)
# and takes about 15 s; .ci/run installs chromium and runs it.
html-check: $(TOOL)
	sh tests/html_render_test.sh $(TOOL)

# Rewrite the README's demo excerpts from `vidmm demo`, and every
# <!-- output: ARGS --> excerpt in README.md and docs/*.md from what
# `vidmm ARGS` prints (tests/docs_test.py checks them in `make test`);
# review the diff before committing.
docs-refresh: $(TOOL)
	python3 tests/docs_test.py $(TOOL) --refresh

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
	@for h in include/vidmm/*.h include/d3dkmt/*.h; do \
	  printf "#include \"%s\"\ntypedef int check_headers_nonempty;\n" "$${h#include/}" | $(CC) -std=c11 -pedantic-errors -Wall -Wextra -Werror -Iinclude -x c -fsyntax-only - || exit 1; \
	done; echo "headers ok"

# Installation (docs/ABI.md "Packaging"): DESTDIR stages, PREFIX, LIBDIR,
# INCLUDEDIR, BINDIR and MANDIR place; the .pc and CMake files name the
# final places (not DESTDIR), relative to the prefix where they can be
# (see "shared libraries and packaging" below).
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR     ?= $(PREFIX)/bin
MANDIR     ?= $(PREFIX)/share/man
# vidmmd's systemd units (docs/DAEMON.md "Installing the service"); a
# distribution packaging for /usr sets it to /usr/lib/systemd/system.
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
MINOR      := $(word 2,$(subst ., ,$(VERSION)))
SUBST       = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@BINDIR@|$(BINDIR)|g' \
                  -e 's|@VERSION@|$(VERSION)|g' -e 's|@MAJOR@|$(MAJOR)|g' -e 's|@MINOR@|$(MINOR)|g'
PUBLIC_H   := $(sort $(wildcard include/vidmm/*.h))

install: all
	install -d $(DESTDIR)$(INCLUDEDIR)/vidmm $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(LIBDIR)/cmake/vidmm \
	  $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 644 $(PUBLIC_H) $(DESTDIR)$(INCLUDEDIR)/vidmm/
	install -m 644 $(STATIC) $(SOFTGPU) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(SHARED) $(DESTDIR)$(LIBDIR)/
	ln -sf libvidmm.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libvidmm.so.$(MAJOR)
	ln -sf libvidmm.so.$(MAJOR) $(DESTDIR)$(LIBDIR)/libvidmm.so
	install -m 755 $(TOOL) $(DESTDIR)$(BINDIR)/
	install -m 644 docs/vidmm.1 $(DESTDIR)$(MANDIR)/man1/
	$(SUBST_PKG) vidmm.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/vidmm.pc
	$(SUBST_PKG) softgpu.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/softgpu.pc
	$(SUBST_PKG) cmake/vidmmConfig.cmake.in > $(DESTDIR)$(LIBDIR)/cmake/vidmm/vidmmConfig.cmake
	$(SUBST) cmake/vidmmConfigVersion.cmake.in > $(DESTDIR)$(LIBDIR)/cmake/vidmm/vidmmConfigVersion.cmake
	install -d $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(INCLUDEDIR)/vidmm-client
	install -m 755 $(VIDMMD) $(DESTDIR)$(BINDIR)/
	install -m 644 $(CLIENT_LIB) $(DESTDIR)$(LIBDIR)/
	install -m 644 include/vidmm-client/client.h $(DESTDIR)$(INCLUDEDIR)/vidmm-client/
	$(SUBST) daemon/systemd/vidmmd.service.in > $(DESTDIR)$(SYSTEMDUNITDIR)/vidmmd.service
	$(SUBST) daemon/systemd/vidmmd.socket.in > $(DESTDIR)$(SYSTEMDUNITDIR)/vidmmd.socket

# Removes exactly what install put there (and the folders it made, when
# they are left empty).
uninstall:
	rm -f $(addprefix $(DESTDIR)$(INCLUDEDIR)/vidmm/,$(notdir $(PUBLIC_H)))
	rm -f $(DESTDIR)$(LIBDIR)/libvidmm.a $(DESTDIR)$(LIBDIR)/libsoftgpu.a $(DESTDIR)$(LIBDIR)/libvidmm.so.$(VERSION) \
	  $(DESTDIR)$(LIBDIR)/libvidmm.so.$(MAJOR) $(DESTDIR)$(LIBDIR)/libvidmm.so
	rm -f $(DESTDIR)$(BINDIR)/vidmm $(DESTDIR)$(MANDIR)/man1/vidmm.1
	rm -f $(DESTDIR)$(LIBDIR)/pkgconfig/vidmm.pc $(DESTDIR)$(LIBDIR)/pkgconfig/softgpu.pc
	rm -f $(DESTDIR)$(LIBDIR)/cmake/vidmm/vidmmConfig.cmake $(DESTDIR)$(LIBDIR)/cmake/vidmm/vidmmConfigVersion.cmake
	rm -f $(DESTDIR)$(BINDIR)/vidmmd $(DESTDIR)$(LIBDIR)/libvidmm-client.a $(DESTDIR)$(INCLUDEDIR)/vidmm-client/client.h
	rm -f $(DESTDIR)$(SYSTEMDUNITDIR)/vidmmd.service $(DESTDIR)$(SYSTEMDUNITDIR)/vidmmd.socket
	-rmdir $(DESTDIR)$(INCLUDEDIR)/vidmm $(DESTDIR)$(LIBDIR)/cmake/vidmm $(DESTDIR)$(INCLUDEDIR)/vidmm-client 2>/dev/null
	-rmdir $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(PREFIX)/lib/systemd 2>/dev/null

# A consumer built against a staged install with pkg-config (shared and
# static) and with CMake's find_package, and run; then uninstall leaves
# nothing behind (tests/install_test.sh; CI runs it).
install-check: all
	sh tests/install_test.sh

clean:
	rm -rf build build-san build-bench build-clang build-tsan build-fuzz

# (Not build/lavapipe-backports: its unpacked tree has directories named *.d.)
-include $(filter-out $(BUILD)/lavapipe-backports/%,$(wildcard $(BUILD)/*/*.d $(BUILD)/*/*/*.d $(BUILD)/*/*/*/*.d $(BUILD)/*/*/*/*/*.d))

# ---- vidmmd and libvidmm-client (docs/DAEMON.md, docs/PROTOCOL.md) ------
# The daemon owns one softgpu adapter and serves processes over a
# Unix-domain socket; libvidmm-client is the API subset over it.  `make
# test` runs tests/daemon/run.sh (a few seconds); the in-process library
# stays what `make demo` and the other tests use.
VIDMMD         := $(BUILD)/vidmmd
CLIENT_LIB     := $(BUILD)/libvidmm-client.a
DAEMON_LIB_OBJ := $(addprefix $(BUILD)/daemon/,server.o dispatch.o handles.o share.o req_device.o req_allocation.o req_admin.o proto.o)
DAEMON_OBJ     := $(BUILD)/daemon/main.o $(DAEMON_LIB_OBJ)
CLIENT_OBJ     := $(addprefix $(BUILD)/client/,client.o device.o allocation.o adapter.o) $(BUILD)/daemon/proto.o
DTEST_SRC      := $(sort $(wildcard tests/daemon/*.c))
DTESTS         := $(DTEST_SRC:tests/daemon/%.c=$(BUILD)/tests/daemon/%)
$(filter $(BUILD)/client/%,$(CLIENT_OBJ)): CFLAGS_ALL += -Idaemon
$(DTEST_SRC:%.c=$(BUILD)/%.o): CFLAGS_ALL += -Idaemon

$(VIDMMD): $(DAEMON_OBJ) $(SUPPORT) $(SOFTGPU) $(STATIC)
	$(CC) $(LDFLAGS_ALL) -o $@ $(DAEMON_OBJ) $(SUPPORT) $(SOFTGPU) $(STATIC) $(LIBS) -ldl

$(CLIENT_LIB): $(CLIENT_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
# vidmm ps, top and info --socket are clients of the daemon.
$(TOOL): $(CLIENT_LIB)

# Test programs: the client library (plus libvidmm for vidmm_status_str,
# libsoftgpu for its command-buffer encoder).
$(BUILD)/tests/daemon/%: $(BUILD)/tests/daemon/%.o $(CLIENT_LIB) $(SOFTGPU) $(STATIC)
	$(CC) $(LDFLAGS_ALL) -o $@ $< $(CLIENT_LIB) $(SOFTGPU) $(STATIC) $(LIBS)

$(D3DKMT_TESTS) $(D3DKMT_CLIENT): $(CLIENT_LIB)

# The tool too: tests/daemon/run.sh runs vidmm ps, top and info --socket.
daemon: $(VIDMMD) $(CLIENT_LIB) $(DTESTS) $(TOOL)
all: $(VIDMMD) $(CLIENT_LIB)
test: $(VIDMMD) $(CLIENT_LIB) $(DTESTS)
# The D3DKMT tests and sample client run there too, through the remote backend.
daemon-test: daemon $(D3DKMT_TESTS) $(D3DKMT_CLIENT)
	sh tests/daemon/run.sh $(BUILD)
long: daemon
daemon-bench: daemon
	$(BUILD)/tests/daemon/rtt_bench $(VIDMMD)
	$(BUILD)/tests/daemon/scale_bench $(VIDMMD)
.PHONY: daemon daemon-test daemon-bench

# ---- fuzzing (fuzz/, docs/FUZZING.md) -------------------------------------
# `make test` builds the replayers (plain main(), any compiler) and replays
# every checked-in corpus; `make fuzz` builds the libFuzzer harnesses with
# clang (objects in build-fuzz/) and runs each for FUZZ_SECONDS.
FUZZ_HARNESSES := api_stream driver_desc cmdbuf rmv trace_reader scenario_reader proto
FUZZ_SECONDS   ?= 60
FUZZ_OBJ       := $(FUZZ_HARNESSES:%=$(BUILD)/fuzz/%.o) $(BUILD)/fuzz/replay_main.o
FUZZ_REPLAY    := $(FUZZ_HARNESSES:%=$(BUILD)/fuzz/%-replay)
FUZZ_DEPS      := $(SUPPORT) $(SOFTGPU) $(STATIC)
$(FUZZ_OBJ): CFLAGS_ALL += -Itests -Isoftgpu -Ifuzz -Itools/vidmm -Idaemon -Isupport
# The RMV harness links the tool's decoder (it needs nothing else of the tool).
$(BUILD)/fuzz/rmv-replay $(BUILD)/fuzz/rmv-fuzzer: $(BUILD)/tools/vidmm/rmv/rmv_decode.o $(BUILD)/tools/vidmm/rmv/rmv_stream.o
# The reader harnesses run the tool's trace layer (reader, replay, writer).
TRACE_LAYER_OBJ := $(addprefix $(BUILD)/tools/vidmm/trace/,trace_read.o replay.o trace_write.o trace_write_calls.o trace_format.o trace_timeline.o \
                   trace_driver.o)
$(BUILD)/fuzz/trace_reader-replay $(BUILD)/fuzz/trace_reader-fuzzer: $(TRACE_LAYER_OBJ)
$(BUILD)/fuzz/scenario_reader-replay $(BUILD)/fuzz/scenario_reader-fuzzer: $(TRACE_LAYER_OBJ)
# The protocol harness links vidmmd's decoder and request handlers.
$(BUILD)/fuzz/proto-replay $(BUILD)/fuzz/proto-fuzzer: $(DAEMON_LIB_OBJ)

# Objects first, then the archives they need.
$(BUILD)/fuzz/%-replay: $(BUILD)/fuzz/%.o $(BUILD)/fuzz/replay_main.o $(FUZZ_DEPS)
	$(CC) $(LDFLAGS_ALL) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(LIBS)

$(BUILD)/fuzz/%-fuzzer: $(BUILD)/fuzz/%.o $(FUZZ_DEPS)
	$(CC) $(LDFLAGS_ALL) -fsanitize=fuzzer -o $@ $(filter %.o,$^) $(filter %.a,$^) $(LIBS)

test: $(FUZZ_REPLAY)
fuzz-replay: $(FUZZ_REPLAY)
	sh tests/fuzz_replay.sh $(BUILD)

FUZZ_CFLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
fuzz:
	$(MAKE) BUILD=build-fuzz CC=clang OPT="-O1 -g" CFLAGS="$(FUZZ_CFLAGS)" \
	  LDFLAGS="-fsanitize=address,undefined" $(FUZZ_HARNESSES:%=build-fuzz/fuzz/%-fuzzer)
	sh fuzz/run.sh build-fuzz $(FUZZ_SECONDS) $(FUZZ_HARNESSES)

.PHONY: fuzz fuzz-replay

# ---- deterministic explorer (tests/sim, docs/TESTING.md "Deterministic exploration") ----
# vidmm-explore links its own build of the core library: the same sources,
# compiled with the simulated OS seam forced in (tests/sim/sim_os.h), so
# vidmm's one blocking wait and its clock go to the explorer's scheduler.
SIM_LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/sim/%.o)
SIM_SRC     := $(sort $(wildcard tests/sim/*.c))
SIM_OBJ     := $(SIM_SRC:%.c=$(BUILD)/%.o)
EXPLORE     := $(BUILD)/vidmm-explore
EXPLORE_DEPS := $(BUILD)/tests/harness/fault_alloc.o $(SUPPORT)
$(BUILD)/sim/src/%.o: src/%.c tests/sim/sim_os.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Isrc -Itests -include sim/sim_os.h -MMD -MP -c $< -o $@
$(SIM_OBJ): CFLAGS_ALL += -Itests -Isupport
$(EXPLORE): $(SIM_OBJ) $(EXPLORE_DEPS) $(SIM_LIB_OBJ) $(SOFTGPU)
	$(CC) $(LDFLAGS_ALL) -o $@ $(SIM_OBJ) $(EXPLORE_DEPS) $(SIM_LIB_OBJ) $(SOFTGPU) $(LIBS)
-include $(SIM_LIB_OBJ:.o=.d)
all: $(EXPLORE)
test: $(EXPLORE)
explore: $(EXPLORE)
	$(EXPLORE) --seconds $(or $(EXPLORE_SECONDS),60)
.PHONY: explore
# ---- end of the deterministic explorer ----

# ---- vkgpu: vidmm on a real Vulkan device (docs/VKGPU.md) -----------------
# Built only where pkg-config finds Vulkan (libvulkan-dev); elsewhere the
# rest builds and this section says loudly what it skipped.  Under CI=true
# a skip is a failure.  libvkgpu.a: the driver; vkgpu.so: the same driver
# as a plug-in (vidmm drvcheck/info --driver vkgpu); vkgpu-tests: its tests
# on whatever Vulkan device is present (lavapipe in CI).
VULKAN_OK     := $(shell pkg-config --exists vulkan 2>/dev/null && echo 1)
VKGPU_SRC     := $(filter-out vkgpu/entry.c,$(sort $(wildcard vkgpu/*.c)))
VKGPU_OBJ     := $(VKGPU_SRC:%.c=$(BUILD)/%.o)
VKGPU         := $(BUILD)/libvkgpu.a
VKGPU_SO      := $(BUILD)/vkgpu.so
VKGPU_TESTS   := $(BUILD)/vkgpu-tests
VKGPU_BENCH   := $(BUILD)/vkgpu-bench
VKGPU_TEST_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(sort $(wildcard tests/vkgpu/*.c)))
VULKAN_CFLAGS := $(shell pkg-config --cflags vulkan 2>/dev/null)
VULKAN_LIBS   := $(shell pkg-config --libs vulkan 2>/dev/null)
.PHONY: vkgpu vkgpu-test vkgpu-skip gpu-check bench-vkgpu lavapipe-backports

# The driver uses the public headers only (no -Isrc), like the examples.
$(BUILD)/vkgpu/%.o: vkgpu/%.c
	@mkdir -p $(dir $@)
	$(CC) $(EX_CFLAGS) $(VULKAN_CFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/tests/vkgpu/%.o: tests/vkgpu/%.c
	@mkdir -p $(dir $@)
	$(CC) $(EX_CFLAGS) $(VULKAN_CFLAGS) -Itests -Isupport -MMD -MP -c $< -o $@

$(VKGPU): $(VKGPU_OBJ)
	rm -f $@ && ar rcs $@ $^
$(VKGPU_SO): $(BUILD)/vkgpu/entry.o $(VKGPU_OBJ)
	$(CC) -shared $(LDFLAGS_ALL) -o $@ $^ $(VULKAN_LIBS) -lpthread
$(VKGPU_TESTS): $(VKGPU_TEST_OBJ) $(BUILD)/tests/harness/test.o $(VKGPU) $(STATIC)
	$(CC) $(LDFLAGS_ALL) -o $@ $(filter %.o,$^) $(VKGPU) $(STATIC) $(VULKAN_LIBS) $(LIBS)

ifeq ($(VULKAN_OK),1)
vkgpu: $(VKGPU) $(VKGPU_SO) $(VKGPU_TESTS)
vkgpu-test: vkgpu $(TOOL)
	sh tests/vkgpu/run.sh $(BUILD)
gpu-check: vkgpu $(TOOL)
	sh tests/vkgpu/gpu_check.sh $(BUILD)
else
vkgpu vkgpu-test gpu-check: vkgpu-skip
endif
vkgpu-skip:
	@echo "########################################################################" >&2
	@echo "# SKIPPED: vkgpu (the Vulkan driver, its tests and gpu-check):          #" >&2
	@echo "# pkg-config finds no 'vulkan' (install libvulkan-dev and a Vulkan      #" >&2
	@echo "# driver, e.g. mesa-vulkan-drivers).                                     #" >&2
	@echo "########################################################################" >&2
	@if [ "$(CI)" = true ]; then echo "CI=true: a skipped vkgpu is a failure" >&2; exit 1; fi
all: vkgpu
# tests/run.sh runs tests/vkgpu/run.sh when the test binary is there.
test: vkgpu

# lavapipe 25 (sparse binding) from bookworm-backports, unpacked under
# build/lavapipe-backports without installing anything.
lavapipe-backports:
	sh tools/lavapipe-backports.sh build/lavapipe-backports
# The tool and the daemon find the installed plug-in here (support/plugin.c).
$(BUILD)/support/plugin.o: CFLAGS_ALL += -DVIDMM_PLUGIN_DIR='"$(LIBDIR)/vidmm"'
# Installed beside softgpu: libvkgpu.a and vkgpu.pc, and the plug-in in
# $(LIBDIR)/vidmm where `vidmm ... --driver vkgpu` looks (vkgpu.h is one
# of the public headers install copies anyway).
.PHONY: install-vkgpu uninstall-vkgpu
install: install-vkgpu
uninstall: uninstall-vkgpu
ifeq ($(VULKAN_OK),1)
install-vkgpu: $(VKGPU) $(VKGPU_SO)
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(LIBDIR)/vidmm
	install -m 644 $(VKGPU) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(VKGPU_SO) $(DESTDIR)$(LIBDIR)/vidmm/
	$(SUBST) vkgpu.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/vkgpu.pc
else
install-vkgpu: vkgpu-skip
endif
uninstall-vkgpu:
	rm -f $(DESTDIR)$(LIBDIR)/libvkgpu.a $(DESTDIR)$(LIBDIR)/vidmm/vkgpu.so $(DESTDIR)$(LIBDIR)/pkgconfig/vkgpu.pc
	-rmdir $(DESTDIR)$(LIBDIR)/vidmm 2>/dev/null
# The vkgpu benchmark (bench/vkgpu): vkgpu's TRANSFER / FILL against raw
# vkCmdCopyBuffer / vkCmdFillBuffer and evict+restore, on the Vulkan
# device present; BENCH_VKGPU_ARGS e.g. "--max 1024 --check 0.9".
BENCH_VKGPU_ARGS ?=
$(BUILD)/bench/vkgpu/%.o: bench/vkgpu/%.c
	@mkdir -p $(dir $@)
	$(CC) $(EX_CFLAGS) $(VULKAN_CFLAGS) -MMD -MP -c $< -o $@
$(VKGPU_BENCH): $(BUILD)/bench/vkgpu/vkgpu_bench.o $(VKGPU) $(SOFTGPU) $(STATIC)
	$(CC) $(LDFLAGS_ALL) -o $@ $< $(VKGPU) $(SOFTGPU) $(STATIC) $(VULKAN_LIBS) $(LIBS)
ifeq ($(VULKAN_OK),1)
bench-vkgpu:
	$(MAKE) BUILD=build-bench OPT="-O2 -DNDEBUG" build-bench/vkgpu-bench
	build-bench/vkgpu-bench $(BENCH_VKGPU_ARGS)
else
bench-vkgpu: vkgpu-skip
endif
# vidmmd --driver vkgpu|FILE.so: the daemon loads driver plug-ins like the tool.
$(BUILD)/daemon/main.o: CFLAGS_ALL += -Isupport
# A vidmmd client on vkgpu (tests/vkgpu/run.sh starts vidmmd --driver vkgpu).
VKGPU_DCLIENT := $(BUILD)/tests/vkgpu/client/daemon_client
$(VKGPU_DCLIENT): $(BUILD)/tests/vkgpu/client/daemon_client.o $(CLIENT_LIB) $(STATIC)
	$(CC) $(LDFLAGS_ALL) -o $@ $< $(CLIENT_LIB) $(STATIC) $(LIBS)
ifeq ($(VULKAN_OK),1)
vkgpu: $(VKGPU_DCLIENT) $(VIDMMD)
endif

# ---- shared libraries and packaging of softgpu, the client and D3DKMT ----
# (docs/ABI.md "Packaging").  Each has its static archive and a shared
# library with the SONAME of the major version; libsoftgpu and
# libvidmm-d3dkmt link libvidmm.so (and the client), so a program takes
# them by name with pkg-config or CMake.
SOFTGPU_SO  := $(BUILD)/libsoftgpu.so.$(VERSION)
CLIENT_SO   := $(BUILD)/libvidmm-client.so.$(VERSION)
D3DKMT_SO   := $(BUILD)/libvidmm-d3dkmt.so.$(VERSION)
SHARED_EXTRA := $(SOFTGPU_SO) $(CLIENT_SO) $(D3DKMT_SO)

$(SOFTGPU_SO): $(SOFTGPU_OBJ) $(SHARED)
	$(CC) -shared -Wl,-soname,libsoftgpu.so.$(MAJOR) $(LDFLAGS_ALL) -o $@ $(SOFTGPU_OBJ) -L$(BUILD) -lvidmm $(LIBS)
	ln -sf libsoftgpu.so.$(VERSION) $(BUILD)/libsoftgpu.so
$(CLIENT_SO): $(CLIENT_OBJ) $(SHARED)
	$(CC) -shared -Wl,-soname,libvidmm-client.so.$(MAJOR) $(LDFLAGS_ALL) -o $@ $(CLIENT_OBJ) -L$(BUILD) -lvidmm $(LIBS)
	ln -sf libvidmm-client.so.$(VERSION) $(BUILD)/libvidmm-client.so
$(D3DKMT_SO): $(D3DKMT_OBJ) $(SOFTGPU_SO) $(CLIENT_SO)
	$(CC) -shared -Wl,-soname,libvidmm-d3dkmt.so.$(MAJOR) $(LDFLAGS_ALL) -o $@ $(D3DKMT_OBJ) -L$(BUILD) -lvidmm-client \
	  -lsoftgpu -lvidmm $(LIBS)
	ln -sf libvidmm-d3dkmt.so.$(VERSION) $(BUILD)/libvidmm-d3dkmt.so
all: $(SHARED_EXTRA)

# The .pc and CMake files find everything from where they lie when the
# install tree moves (pkg-config --define-prefix; CMAKE_CURRENT_LIST_DIR):
# paths under PREFIX are written relative to it.  A LIBDIR or INCLUDEDIR
# outside PREFIX stays absolute.
REL = $(if $(filter $(PREFIX)/%,$(1)),$(patsubst $(PREFIX)/%,%,$(1)),)
PC_LIBDIR     = $(if $(call REL,$(LIBDIR)),$${prefix}/$(call REL,$(LIBDIR)),$(LIBDIR))
PC_INCLUDEDIR = $(if $(call REL,$(INCLUDEDIR)),$${prefix}/$(call REL,$(INCLUDEDIR)),$(INCLUDEDIR))
# From LIBDIR/cmake/vidmm up to PREFIX: one ".." per component of LIBDIR
# below PREFIX, plus two.
CMAKE_UP      = $(shell echo "$(call REL,$(LIBDIR))" | awk -F/ '{ s = ""; for (i = 0; i < NF + 2; i++) s = s "/.."; print s }')
CMAKE_LIBDIR  = $(if $(call REL,$(LIBDIR)),$${_vidmm_prefix}/$(call REL,$(LIBDIR)),$(LIBDIR))
CMAKE_INCDIR  = $(if $(call REL,$(INCLUDEDIR)),$${_vidmm_prefix}/$(call REL,$(INCLUDEDIR)),$(INCLUDEDIR))
SUBST_PKG     = $(SUBST) -e 's|@PC_LIBDIR@|$(PC_LIBDIR)|g' -e 's|@PC_INCLUDEDIR@|$(PC_INCLUDEDIR)|g' \
                  -e 's|@CMAKE_UP@|$(CMAKE_UP)|g' -e 's|@CMAKE_LIBDIR@|$(CMAKE_LIBDIR)|g' -e 's|@CMAKE_INCDIR@|$(CMAKE_INCDIR)|g'
MAN8DIR      ?= $(MANDIR)/man8
D3DKMT_H     := $(sort $(wildcard include/d3dkmt/*.h))

# Run after install's own recipe (a second rule of the same target adds
# prerequisites only, so the extra files are a target of their own).
install: install-extra
install-extra: all
	install -d $(DESTDIR)$(INCLUDEDIR)/d3dkmt $(DESTDIR)$(MAN8DIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(LIBDIR)/cmake/vidmm
	install -m 644 $(D3DKMT_H) $(DESTDIR)$(INCLUDEDIR)/d3dkmt/
	install -m 644 $(D3DKMT_LIB) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(SHARED_EXTRA) $(DESTDIR)$(LIBDIR)/
	for l in softgpu vidmm-client vidmm-d3dkmt; do \
	  ln -sf lib$$l.so.$(VERSION) $(DESTDIR)$(LIBDIR)/lib$$l.so.$(MAJOR) && \
	  ln -sf lib$$l.so.$(MAJOR) $(DESTDIR)$(LIBDIR)/lib$$l.so || exit 1; \
	done
	$(SUBST_PKG) vidmm-client.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/vidmm-client.pc
	$(SUBST_PKG) vidmm-d3dkmt.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/vidmm-d3dkmt.pc
	install -m 644 docs/vidmmd.8 $(DESTDIR)$(MAN8DIR)/
uninstall: uninstall-extra
uninstall-extra:
	rm -f $(addprefix $(DESTDIR)$(INCLUDEDIR)/d3dkmt/,$(notdir $(D3DKMT_H))) $(DESTDIR)$(LIBDIR)/libvidmm-d3dkmt.a
	for l in softgpu vidmm-client vidmm-d3dkmt; do \
	  rm -f $(DESTDIR)$(LIBDIR)/lib$$l.so.$(VERSION) $(DESTDIR)$(LIBDIR)/lib$$l.so.$(MAJOR) $(DESTDIR)$(LIBDIR)/lib$$l.so; \
	done
	rm -f $(DESTDIR)$(LIBDIR)/pkgconfig/vidmm-client.pc $(DESTDIR)$(LIBDIR)/pkgconfig/vidmm-d3dkmt.pc
	rm -f $(DESTDIR)$(MAN8DIR)/vidmmd.8
	-rmdir $(DESTDIR)$(INCLUDEDIR)/d3dkmt $(DESTDIR)$(MAN8DIR) 2>/dev/null
.PHONY: install-extra uninstall-extra
# ---- end of the shared libraries and packaging ----
