# phc: the Phobos tile-language compiler.
#   make            build build/bin/phc and build/libphc.a
#   make demo       install what is missing, build, compile the attention tutorial and check it
#   make check      install what is missing, build, run every test and example check
#   make attention-check   the tutorial's check (on the GPU when there is one, else the interpreter)
#   make bench      benchmarks: the front end; on a GPU, attention and GEMM beside PyTorch, one table
#   make pytest-check   the Python package (python/phobos) on the interpreter, with pytest
#   make tutorial-check docs/tutorial.md's commands, run as written, their output compared
#   make ptx-identical  phc's output for every .ph file and 300 generated programs, against recorded hashes
#   make layers-check   the folders keep their layers (tests/layers.py, docs/architecture.md)
#   make wgmma-hazards  no register a wgmma may still use is touched in phc's sm_90a PTX
#   make gpu-bundle     build/gpu: what make gpucheck and make bench need on a GPU machine without LLVM
#   make install    phc, libphobos.so.N, phobos.h and phobos.pc under PREFIX (default /usr/local;
#                   DESTDIR honoured); make uninstall removes them
# Debian packages are installed on first use when missing (as root, or via sudo).

CC      ?= cc
BUILD   ?= build
OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
ALL_CFLAGS = -std=c11 -Wall -Wextra -fPIC -D_POSIX_C_SOURCE=200809L -Idsl -Icompiler -Iruntime -Iruntime/include -I$(BUILD)/gen $(CFLAGS)
LDFLAGS ?=
LDLIBS  = -lm
SAN_FLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
export ASAN_OPTIONS = detect_leaks=1:abort_on_error=0
export LSAN_OPTIONS = suppressions=$(CURDIR)/tests/lsan.supp
export UBSAN_OPTIONS = print_stacktrace=1:halt_on_error=1

DEB_PACKAGES = build-essential re2c libcriterion-dev pkg-config llvm-19-dev zlib1g-dev libzstd-dev
# What the Python package's tests need; a machine that cannot have them skips those tests.
PY_DEB_PACKAGES = python3-pytest python3-numpy
PYTHON ?= python3

# LLVM, linked statically (NVPTX only) so the binaries run where LLVM is not installed.
LLVM_CONFIG ?= /usr/lib/llvm-19/bin/llvm-config
LLVM_INC  = $(shell $(LLVM_CONFIG) --includedir 2>/dev/null)
LLVM_LIBS = $(shell $(LLVM_CONFIG) --ldflags 2>/dev/null) $(shell $(LLVM_CONFIG) --link-static --libs nvptx passes 2>/dev/null) -lstdc++ -lz -lzstd -lpthread -ldl

# Sources by folder (docs/architecture.md has the layers). The code
# generator (compiler/codegen), the targets' files that plug into it (those
# that include codegen/cg.h, dot.h or target.h: the table of targets,
# compiler/driver/targets.c, among them), the driver's files that run it
# (those that call codegen_emit) and the runtime build with LLVM's headers
# and link LLVM; the rest (base, ir, passes, layout, the front end, the
# driver's front half, the targets' assembler tools) go into libphc.a,
# without LLVM.
TARGET_SRCS  = $(wildcard compiler/nvidia/*.c)
DRIVER_SRCS  = $(wildcard compiler/driver/*.c)
CG_SRCS      = $(sort $(wildcard compiler/codegen/*.c) \
               $(shell grep -l '^\#include "codegen/\(cg\|dot\|target\)\.h"' $(TARGET_SRCS) $(DRIVER_SRCS)) \
               $(shell grep -lw codegen_emit $(DRIVER_SRCS)))
CG_OBJS      = $(patsubst %.c,$(BUILD)/obj/%.o,$(CG_SRCS))
CODEGEN_SRCS = $(CG_SRCS) $(wildcard runtime/*.c)
LIB_SRCS  = $(wildcard dsl/*.c $(patsubst %,compiler/%/*.c,base ir passes layout)) $(filter-out $(CG_SRCS),$(TARGET_SRCS) $(DRIVER_SRCS))
CODEGEN_OBJS = $(patsubst %.c,$(BUILD)/obj/%.o,$(CODEGEN_SRCS))
LIB_OBJS  = $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRCS)) $(BUILD)/obj/gen/lexer.o
HEADERS   = $(wildcard dsl/*.h compiler/*/*.h runtime/*.h runtime/include/*.h)

# The version has one home, phobos.h (PH_VERSION_MAJOR, _MINOR, _PATCH);
# the library's soname carries the major number.
version_part = $(shell sed -n 's/^\#define PH_VERSION_$(1) *\([0-9][0-9]*\)$$/\1/p' runtime/include/phobos.h)
VERSION_MAJOR := $(call version_part,MAJOR)
VERSION_MINOR := $(call version_part,MINOR)
VERSION_PATCH := $(call version_part,PATCH)
VERSION       := $(VERSION_MAJOR).$(VERSION_MINOR).$(VERSION_PATCH)
LIBPHOBOS_SONAME = libphobos.so.$(VERSION_MAJOR)
LIBPHOBOS_REAL   = libphobos.so.$(VERSION)
TEST_SRCS = $(wildcard tests/test_*.c)
TESTS     = $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
# The CPU executor's suites run JIT-compiled code on ucontext fibers, whose
# stack switches AddressSanitizer cannot follow (and the JIT code is not
# instrumented anyway): sanitized builds leave those suites out.
ifneq ($(findstring -fsanitize,$(CFLAGS)),)
TESTS := $(filter-out $(BUILD)/tests/test_cpusim% $(BUILD)/tests/test_scalarops,$(TESTS))
endif
EXAMPLE_SRCS = $(wildcard examples/*/*_check.c)
EXAMPLES  = $(patsubst %.c,$(BUILD)/examples/%,$(notdir $(EXAMPLE_SRCS)))
PHC       = $(BUILD)/bin/phc
GPU_BENCHES = $(BUILD)/bench/attention_bench $(BUILD)/bench/gemm_bench

.PHONY: deps-python pytest-check fuzz fuzz-build fuzz-regress fuzz-deps docs-check build-tests all deps demo check test examples-check attention-check gpucheck sanitize bench clean \
        install uninstall install-check tutorial-check
.DELETE_ON_ERROR:

all: $(PHC) $(BUILD)/libphc.a $(BUILD)/libphobos.so

# $(call install_missing,PACKAGES): installs those of the Debian packages that are missing.
define install_missing
	@missing=""; for p in $(1); do \
	    dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	    echo "installing Debian packages:$$missing"; \
	    SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	    $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null || exit 1; \
	fi
endef

# Installs the Debian packages that are missing; does nothing when all are there.
deps:
	$(call install_missing,$(DEB_PACKAGES))
	-@$(MAKE) --no-print-directory deps-python

deps-python:
	$(call install_missing,$(PY_DEB_PACKAGES))

# The Python package's tests (tests/python) on the CPU interpreter, against
# the library just built; the first of $(PYTHON) and Debian's python3 that
# has pytest and NumPy runs them, and with neither the target says so and
# passes.
pytest-check: $(BUILD)/libphobos.so
	@py=""; for p in $(PYTHON) /usr/bin/python3; do \
	    if $$p -c 'import pytest, numpy' 2>/dev/null; then py=$$p; break; fi; \
	done; \
	if [ -z "$$py" ]; then echo "pytest-check: skipped: no python3 with pytest and numpy (make deps-python installs $(PY_DEB_PACKAGES))"; exit 0; fi; \
	PYTHONPATH=python PHOBOS_LIBRARY=$(abspath $(BUILD))/$(LIBPHOBOS_SONAME) PHOBOS_CACHE_DIR=off \
	    $$py -B -m pytest -q -p no:cacheprovider tests/python

$(BUILD)/gen/lexer.c: dsl/lexer.re
	@mkdir -p $(dir $@)
	re2c -W --no-generation-date -o $@ $<

$(BUILD)/obj/gen/lexer.o: $(BUILD)/gen/lexer.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Idsl -c $< -o $@

$(BUILD)/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(CODEGEN_OBJS): $(BUILD)/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -I$(LLVM_INC) -c $< -o $@

$(BUILD)/libphc.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# The runtime library a host links: front end, code generator, runtime and
# LLVM in one shared object; the CUDA driver is loaded at run time. The real
# file is libphobos.so.MAJOR.MINOR.PATCH; libphobos.so.MAJOR (its soname,
# what programs load) and libphobos.so (what -lphobos finds) are links.
# It exports phobos.h's functions and nothing else (runtime/phobos.map).
PHOBOS_OBJS = $(CODEGEN_OBJS) $(LIB_OBJS)
$(BUILD)/$(LIBPHOBOS_REAL): $(PHOBOS_OBJS) runtime/phobos.map
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,$(LIBPHOBOS_SONAME) -Wl,--version-script=runtime/phobos.map -Wl,--exclude-libs,ALL \
	    -o $@ $(PHOBOS_OBJS) $(LDFLAGS) $(LLVM_LIBS) $(LDLIBS)

$(BUILD)/$(LIBPHOBOS_SONAME): $(BUILD)/$(LIBPHOBOS_REAL)
	ln -sf $(LIBPHOBOS_REAL) $@

$(BUILD)/libphobos.so: $(BUILD)/$(LIBPHOBOS_SONAME)
	ln -sf $(LIBPHOBOS_SONAME) $@

# The same library with every symbol of its own exported (LLVM's stay
# hidden), for the suites and tools that reach past phobos.h: the code
# generator, the runtime's test hooks. Never installed. It keeps the
# soname, so the GPU machine's build/gpulibs holds one libphobos.so.0, this
# one, which serves the programs of either kind.
$(BUILD)/internal/$(LIBPHOBOS_SONAME): $(PHOBOS_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,$(LIBPHOBOS_SONAME) -Wl,--exclude-libs,ALL -o $@ $^ $(LDFLAGS) $(LLVM_LIBS) $(LDLIBS)

$(BUILD)/internal/libphobos.so: $(BUILD)/internal/$(LIBPHOBOS_SONAME)
	ln -sf $(LIBPHOBOS_SONAME) $@

# Programs of phobos.h link libphobos.so, found next to them by rpath;
# those that need the compiler's internals too link libphc.a before it.
LINK_PHOBOS = -L$(BUILD) -lphobos -Wl,-rpath,'$$ORIGIN/..'
# Programs that reach the code generator or the runtime's internals.
LINK_PHOBOS_INTERNAL = -L$(BUILD)/internal -lphobos -Wl,-rpath,'$$ORIGIN/../internal'

# phc: the pipeline's stages from libphc.a but the last, code generation
# (driver_emit), which libphobos.so exports with LLVM inside it (so phc
# stays small); it finds the library in ../lib (installed) or .. (the build).
PHC_OBJS = $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard compiler/cli/*.c))
$(PHC): $(PHC_OBJS) $(BUILD)/libphc.a $(BUILD)/libphobos.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(PHC_OBJS) $(BUILD)/libphc.a -o $@ $(LDFLAGS) -L$(BUILD) -lphobos -Wl,-rpath,'$$ORIGIN/../lib:$$ORIGIN/..' $(LDLIBS)

# Suites of the runtime's API link libphobos.so (the interpreter from libphc.a).
PHOBOS_TESTS = $(BUILD)/tests/test_gpu $(BUILD)/tests/test_gpu_ops
$(PHOBOS_TESTS): $(BUILD)/tests/%: tests/%.c tests/testutil.h tests/opsharness.h tests/atomicharness.h $(BUILD)/libphc.a \
                 $(BUILD)/libphobos.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests $< $(BUILD)/libphc.a -o $@ $(LDFLAGS) -lcriterion $(LINK_PHOBOS) $(LDLIBS)

# Suites of the code generator and of the runtime's insides link the internal build;
# the runtime's suites (tests/test_runtime*.c) share tests/test_runtime.h.
RUNTIME_TESTS  = $(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/test_runtime*.c))
INTERNAL_TESTS = $(BUILD)/tests/test_codegen $(RUNTIME_TESTS)
$(INTERNAL_TESTS): $(BUILD)/tests/%: tests/%.c tests/testutil.h tests/opsharness.h tests/test_runtime.h \
                   $(BUILD)/internal/libphobos.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests $< -o $@ $(LDFLAGS) -lcriterion $(LINK_PHOBOS_INTERNAL) $(LDLIBS)

# The CPU executor of generated code (tests/cpusim/) needs LLVM's host
# target and MCJIT besides NVPTX: its suites link the code generator and the
# shared libLLVM (a small binary; libphobos.so stays NVPTX-only).
CPUSIM_LLVM = $(shell $(LLVM_CONFIG) --ldflags 2>/dev/null) $(shell $(LLVM_CONFIG) --link-shared --libs 2>/dev/null) \
              -Wl,-rpath,$(shell $(LLVM_CONFIG) --libdir 2>/dev/null)
CPUSIM_SRCS   = $(wildcard tests/cpusim/*.c)
CPUSIM_DEPS   = $(CPUSIM_SRCS) $(wildcard tests/cpusim/*.h)
# Its suites (tests/test_cpusim*.c), each built the same way.
CPUSIM_SUITES = $(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/test_cpusim*.c))
$(CPUSIM_SUITES): $(BUILD)/tests/%: tests/%.c $(CPUSIM_DEPS) tests/opsharness.h tests/testutil.h \
                  tests/atomicharness.h \
                  examples/host.h examples/attention/attention_host.h $(CG_OBJS) $(BUILD)/libphc.a \
                  tests/difftest/difftest.c tests/difftest/difftest.h tests/difftest/difftest_cpusim.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests -Itests/cpusim -Itests/difftest -Iexamples -I$(LLVM_INC) $< $(CPUSIM_SRCS) \
	    tests/difftest/difftest.c tests/difftest/difftest_cpusim.c \
	    $(CG_OBJS) $(BUILD)/libphc.a -o $@ $(LDFLAGS) -lcriterion $(CPUSIM_LLVM) $(LDLIBS)

# The targets' suite registers a row of its own: it links the code
# generator's objects, whose engines and rows libphobos.so keeps hidden.
$(BUILD)/tests/test_target: tests/test_target.c tests/testutil.h $(CG_OBJS) $(BUILD)/libphc.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests -I$(LLVM_INC) $< $(CG_OBJS) $(BUILD)/libphc.a -o $@ $(LDFLAGS) -lcriterion $(CPUSIM_LLVM) $(LDLIBS)

# Scalar ops at their edges: the interpreter, fold and the executor of generated code.
$(BUILD)/tests/test_scalarops: tests/test_scalarops.c $(CPUSIM_DEPS) tests/testutil.h \
                               $(CG_OBJS) $(BUILD)/libphc.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests -Itests/cpusim -I$(LLVM_INC) tests/test_scalarops.c $(CPUSIM_SRCS) \
	    $(CG_OBJS) $(BUILD)/libphc.a -o $@ $(LDFLAGS) -lcriterion $(CPUSIM_LLVM) $(LDLIBS)

# ---- differential testing (tests/difftest/): random programs, back end vs interpreter ----
DIFFTEST_SRCS = $(filter-out tests/difftest/phgen_dump.c,$(wildcard tests/difftest/phgen*.c)) tests/difftest/difftest.c
DIFFTEST_DEPS = $(DIFFTEST_SRCS) $(wildcard tests/difftest/phgen*.h) tests/difftest/difftest.h tests/testutil.h
$(BUILD)/tests/test_phgen: tests/test_phgen.c $(DIFFTEST_DEPS) $(BUILD)/libphc.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests -Itests/difftest $< $(DIFFTEST_SRCS) $(BUILD)/libphc.a -o $@ $(LDFLAGS) -lcriterion $(LDLIBS)
# The generator's programs as files, for tests/ptx/identical.sh.
$(BUILD)/tests/phgen_dump: tests/difftest/phgen_dump.c $(DIFFTEST_DEPS) $(BUILD)/libphc.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests -Itests/difftest $< $(DIFFTEST_SRCS) $(BUILD)/libphc.a -o $@ $(LDFLAGS) $(LDLIBS)
# The layout suite checks the layouts of generated programs too.
$(BUILD)/tests/test_layout: tests/test_layout.c $(DIFFTEST_DEPS) $(BUILD)/libphc.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests -Itests/difftest $< $(DIFFTEST_SRCS) $(BUILD)/libphc.a -o $@ $(LDFLAGS) -lcriterion $(LDLIBS)
# The masks suite checks the pass on generated programs too.
$(BUILD)/tests/test_masks: tests/test_masks.c $(DIFFTEST_DEPS) $(BUILD)/libphc.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests -Itests/difftest $< $(DIFFTEST_SRCS) $(BUILD)/libphc.a -o $@ $(LDFLAGS) -lcriterion $(LDLIBS)
# gpufuzz is no Criterion suite (it is not in TESTS): make gpufuzz and make gpucheck run it.
$(BUILD)/tests/gpufuzz: tests/difftest/gpufuzz.c tests/difftest/difftest_gpu.c $(DIFFTEST_DEPS) $(BUILD)/internal/libphobos.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests -Itests/difftest $< tests/difftest/difftest_gpu.c $(DIFFTEST_SRCS) -o $@ $(LDFLAGS) $(LINK_PHOBOS_INTERNAL) $(LDLIBS)

# cpufuzz: the same driver over the CPU executor of generated code (linked
# like test_cpusim), to fuzz the code generator without a GPU:
#   build/tests/cpufuzz --seconds N [--seed S]
# make cpufuzz-check (part of make check) and make cpufuzz run it.
$(BUILD)/tests/cpufuzz: tests/difftest/gpufuzz.c tests/difftest/difftest_cpusim.c $(CPUSIM_DEPS) \
                        $(DIFFTEST_DEPS) $(CG_OBJS) $(BUILD)/libphc.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DGPUFUZZ_CPUSIM -Itests -Itests/difftest -Itests/cpusim -I$(LLVM_INC) $< tests/difftest/difftest_cpusim.c \
	    $(CPUSIM_SRCS) $(DIFFTEST_SRCS) $(CG_OBJS) $(BUILD)/libphc.a -o $@ $(LDFLAGS) $(CPUSIM_LLVM) $(LDLIBS)

# Random programs on the GPU against the interpreter, from a build folder
# made elsewhere (builds nothing; make all build-tests first), for
# GPUFUZZ_SECONDS or GPUFUZZ_COUNT programs; reduced mismatches go to
# $(BUILD)/gpufuzz/mismatch-SEED.ph (docs/testing.md).
GPUFUZZ_SECONDS ?= 600
GPUFUZZ_SEED    ?= $$(date +%s)
.PHONY: gpufuzz
gpufuzz:
	LD_LIBRARY_PATH="$(BUILD)/gpulibs$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH}" $(BUILD)/tests/gpufuzz --backend gpu \
	    --seed $(GPUFUZZ_SEED) $(if $(GPUFUZZ_COUNT),--count $(GPUFUZZ_COUNT),--seconds $(GPUFUZZ_SECONDS)) --out $(BUILD)/gpufuzz

# The regressions and a fixed batch of 200 programs (about a minute each) on the
# CPU executor of generated code, against the interpreter, for sm_90 (Ampere's
# instructions) and sm_90a (wgmma, TMA); all run, and any failing fails the target. Plain build only: the executor runs JIT-compiled
# code, which the sanitizers do not follow.
.PHONY: cpufuzz-check cpufuzz
cpufuzz-check: $(BUILD)/tests/cpufuzz
	@status=0; \
	for arch in sm_90 sm_90a; do \
	    echo "cpufuzz-check: $$arch"; \
	    PHOBOS_ARCH=$$arch $(BUILD)/tests/cpufuzz --out $(BUILD)/cpufuzz --regress tests/difftest/regressions/*.ph || status=1; \
	    PHOBOS_ARCH=$$arch $(BUILD)/tests/cpufuzz --seed 1 --count 200 --no-reduce --out $(BUILD)/cpufuzz || status=1; \
	done; \
	exit $$status

# Random seeds for CPUFUZZ_SECONDS (or CPUFUZZ_COUNT programs), findings
# reduced into $(BUILD)/cpufuzz/ (docs/testing.md).
CPUFUZZ_SECONDS ?= 600
CPUFUZZ_SEED    ?= $$(date +%s)
cpufuzz: $(BUILD)/tests/cpufuzz
	$(BUILD)/tests/cpufuzz --seed $(CPUFUZZ_SEED) \
	    $(if $(CPUFUZZ_COUNT),--count $(CPUFUZZ_COUNT),--seconds $(CPUFUZZ_SECONDS)) --out $(BUILD)/cpufuzz

$(BUILD)/tests/%: tests/%.c tests/testutil.h $(BUILD)/libphc.a
$(BUILD)/tests/%: tests/%.c tests/testutil.h tests/opsharness.h $(BUILD)/libphc.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests $< $(BUILD)/libphc.a -o $@ $(LDFLAGS) -lcriterion $(LDLIBS)

$(BUILD)/examples/%: $(BUILD)/libphc.a $(BUILD)/libphobos.so $(wildcard examples/*/*.c examples/*/*.h examples/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Iexamples $(wildcard examples/*/$*.c) $(BUILD)/libphc.a -o $@ $(LDFLAGS) $(LINK_PHOBOS) $(LDLIBS)

# The embedding example of docs/runtime.md, extracted, compiled and run.
$(BUILD)/docs/embed: docs/runtime.md runtime/include/phobos.h $(BUILD)/libphobos.so
	@mkdir -p $(dir $@)
	sed -n '/^```c$$/,/^```$$/p' $< | sed '1d;$$d' > $@.c
	$(CC) -std=c11 -Wall -Wextra -Werror -Iruntime/include $@.c -o $@ $(LDFLAGS) $(LINK_PHOBOS) -lm

# The embedding example runs; the tutorial's files are the ones it shows
# (tests/doc_blocks.sh).
docs-check: $(BUILD)/docs/embed
	$(BUILD)/docs/embed
	sh tests/doc_blocks.sh docs/tutorial.md

# The tutorial's commands, as docs/tutorial.md writes them, from make install
# into a temporary HOME to its C and Python programs on the interpreter.
tutorial-check: all
	sh tests/doc_blocks.sh --run docs/tutorial.md

build-tests: $(TESTS) $(BUILD)/internal/libphobos.so $(BUILD)/tests/gpufuzz $(EXAMPLES) $(PHC) $(BUILD)/docs/embed $(BUILD)/bench/frontend_bench $(GPU_BENCHES)
	@mkdir -p $(BUILD)/gpulibs
	@# the test binaries' libraries that the GPU machine lacks travel with the build
	@ldd $(BUILD)/tests/test_gpu | awk '$$3 ~ /^\// {print $$3}' \
	    | grep -v 'libc\.so\|libm\.so\|libstdc++\|libgcc_s\|ld-linux\|libphobos\|libz\.so\|libzstd' \
	    | xargs -r cp -L -t $(BUILD)/gpulibs
	@# and libphobos.so.MAJOR, the name programs load, without its static symbol
	@# table (9 MB of LLVM's): found first through LD_LIBRARY_PATH, so the
	@# libraries in $(BUILD) need not travel. It is the internal build, which
	@# exports what phobos.h's programs need and what the others reach besides.
	rm -f $(BUILD)/gpulibs/libphobos.so*
	strip --strip-unneeded $(BUILD)/internal/$(LIBPHOBOS_SONAME) -o $(BUILD)/gpulibs/$(LIBPHOBOS_SONAME)

# What make gpucheck and make bench run, gathered for a GPU machine without
# LLVM: carry $(BUILD)/gpu there and run make gpucheck BUILD=$(BUILD)/gpu.
# (The whole build folder is larger than what travels; phc and the programs
# find libphobos.so.N in gpulibs through LD_LIBRARY_PATH, as gpucheck sets it.)
.PHONY: gpu-bundle
gpu-bundle: all build-tests
	rm -rf $(BUILD)/gpu && mkdir -p $(BUILD)/gpu/tests $(BUILD)/gpu/docs
	cp -r $(BUILD)/bin $(BUILD)/examples $(BUILD)/bench $(BUILD)/gpulibs $(BUILD)/gpu/
	cp $(BUILD)/docs/embed $(BUILD)/gpu/docs/
	cp $(BUILD)/tests/gpufuzz $(wildcard $(BUILD)/tests/test_gpu* $(BUILD)/tests/test_runtime*) $(BUILD)/gpu/tests/
	rm -f $(BUILD)/gpu/tests/*.log
	@# symbols stay here; without them the bundle fits what a device call carries (64 MiB)
	strip --strip-unneeded $(BUILD)/gpu/bin/* $(BUILD)/gpu/examples/* $(BUILD)/gpu/bench/* $(BUILD)/gpu/tests/*
	@du -sh $(BUILD)/gpu

# Each suite's skipped and failed tests are shown with their reasons; the
# failures are shown again at the end, where a log's tail (CI's) shows them.
test: $(TESTS) $(PHC)
	@status=0; failed=; for t in $(TESTS); do \
	    echo "== $$t"; $$t --jobs 2 --verbose > $$t.log 2>&1 || { status=1; failed="$$failed $$t"; }; \
	    grep -v '^\[RUN \]\|^\[PASS\]\|^\[----\]\|^\[====\] Running' $$t.log; \
	done; \
	for t in $$failed; do \
	    echo "== failed: $$t (exit status non-zero; its log: $$t.log)"; \
	    grep -E -A3 '^\[FAIL\]|Assertion Failed|Timed out|signal|Warning! The test' $$t.log | cut -c1-300 | head -60; \
	    tail -3 $$t.log; \
	done; exit $$status

attention-check: $(BUILD)/examples/attention_check
	$(BUILD)/examples/attention_check examples/attention/attention.ph

examples-check: $(EXAMPLES)
	@status=0; for e in $(EXAMPLES); do \
	    name=$$(basename $$e _check); \
	    echo "== $$name"; $$e examples/$$name/$$name.ph || status=1; \
	done; exit $$status

# Everything on the GPU (a driver and a device are required): the example
# checks, the tutorial at the seed's size and at H 4, N_CTX 4096, every config
# of bench/attention_tuned.ph and tests/gpu/attention_shapes.ph, the GPU suites.
# It runs what the build made and builds nothing, so a build folder made
# where LLVM is installed runs as it is on the GPU machine (make all
# build-tests first).
gpucheck:
	BUILD=$(BUILD) sh tests/gpucheck.sh

# compute-sanitizer over the tuned GEMM and attention configs, both paths (tests/gpusanitize.sh).
.PHONY: gpusanitize
gpusanitize:
	BUILD=$(BUILD) sh tests/gpusanitize.sh

check: deps
	$(MAKE) all
	$(MAKE) test
	$(MAKE) examples-check
	$(MAKE) pytest-check
	$(MAKE) docs-check
	$(MAKE) install-check
	$(MAKE) tutorial-check
	$(MAKE) sanitize
	$(MAKE) fuzz-regress
	$(MAKE) ptx-identical
	$(MAKE) wgmma-hazards
	$(MAKE) layers-check
	@# every Criterion suite, plain and sanitized, in one closing line
	@cat $(BUILD)/tests/*.log build/san/tests/*.log | awk '/Synthesis/ { p += $$7; f += $$10 + $$13 } /^\[SKIP\]/ { s++ } \
	    END { printf "check: %d passed, %d failed, %d skipped\n", p, f, s; exit f > 0 }'
	@# last, so that its findings do not hide the suites' results
	$(MAKE) cpufuzz-check

# phc's output for every .ph file of the repository and 300 generated
# programs, byte for byte against tests/ptx/hashes.txt (--record: docs/testing.md).
.PHONY: ptx-identical
ptx-identical: $(PHC) $(BUILD)/tests/phgen_dump
	BUILD=$(BUILD) sh tests/ptx/identical.sh

# A wgmma's A registers and accumulators untouched until its wait, in the
# sm_90a PTX of the attention and GEMM files (tests/ptx/wgmma_hazards.py).
.PHONY: wgmma-hazards
wgmma-hazards: $(PHC)
	BUILD=$(BUILD) sh tests/ptx/wgmma_hazards.sh

# The layers of docs/architecture.md, from includes and the objects'
# symbols; no circle across folders; no source file over 900 lines.
.PHONY: layers-check
layers-check: all
	python3 tests/layers.py $(BUILD)

# The unit tests, phc and the example checks again, built with AddressSanitizer,
# UndefinedBehaviorSanitizer and LeakSanitizer: any report fails the run.
sanitize:
	$(MAKE) BUILD=build/san CFLAGS="-O1 -g $(SAN_FLAGS)" LDFLAGS="$(SAN_FLAGS)" all test examples-check

# ---- fuzzing (tests/fuzz/) ----
# Two libFuzzer targets built with clang's fuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer: fuzz_frontend (lex, parse, sema, passes with
# the verifier, IR round trip) and fuzz_codegen (the same, then LLVM IR).
#   make fuzz FUZZ_SECONDS=N   fuzz both at once for N seconds each; new
#                              inputs go to build/fuzz/corpus-*, findings to
#                              build/fuzz/artifacts/ (then: fix, and add the
#                              input to tests/fuzz/regressions/)
#   make fuzz-regress          run both once over the seed corpus and the
#                              regressions, without fuzzing (part of make check)
FUZZ_CC       ?= clang
FUZZ_PACKAGES  = clang libclang-rt-14-dev
FUZZ_SECONDS  ?= 60
FUZZ_DIR       = build/fuzz
FUZZ_SAN       = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS    = -std=c11 -Wall -Wextra -D_POSIX_C_SOURCE=200809L -Idsl -Icompiler -Iruntime -Iruntime/include -Itests/fuzz \
                 -g -O1 -fsanitize=fuzzer-no-link $(FUZZ_SAN)
FUZZ_OBJS      = $(patsubst %.c,$(FUZZ_DIR)/obj/%.o,$(LIB_SRCS)) $(FUZZ_DIR)/obj/gen/lexer.o
# the code generator's own files (the runtime is not needed)
FUZZ_CG_OBJS   = $(patsubst %.c,$(FUZZ_DIR)/obj/%.o,$(CG_SRCS))
FUZZ_TARGETS   = $(FUZZ_DIR)/fuzz_frontend $(FUZZ_DIR)/fuzz_codegen
# Each input gets 5 s and 2 GB; real programs fit in 8 kB.
FUZZ_OPTS      = -timeout=5 -rss_limit_mb=2048 -max_len=8192 -dict=tests/fuzz/phobos.dict -print_final_stats=1
export UBSAN_OPTIONS

fuzz-deps:
	$(call install_missing,$(FUZZ_PACKAGES))

$(FUZZ_DIR)/gen/lexer.c: dsl/lexer.re
	@mkdir -p $(dir $@)
	re2c -W --no-generation-date -o $@ $<

$(FUZZ_DIR)/obj/gen/lexer.o: $(FUZZ_DIR)/gen/lexer.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

$(FUZZ_DIR)/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

$(FUZZ_CG_OBJS): $(FUZZ_DIR)/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -I$(LLVM_INC) -c $< -o $@

$(FUZZ_DIR)/fuzz_frontend: tests/fuzz/fuzz_frontend.c tests/fuzz/fuzz_common.h $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(FUZZ_OBJS) -o $@ -lm

$(FUZZ_DIR)/fuzz_codegen: tests/fuzz/fuzz_codegen.c tests/fuzz/fuzz_common.h $(FUZZ_OBJS) $(FUZZ_CG_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(FUZZ_OBJS) $(FUZZ_CG_OBJS) -o $@ $(LLVM_LIBS) -lm

fuzz-build: fuzz-deps
	$(MAKE) $(FUZZ_TARGETS)

fuzz: fuzz-build
	@mkdir -p $(FUZZ_DIR)/artifacts
	@status=0; pids=""; for t in frontend codegen; do \
	    mkdir -p $(FUZZ_DIR)/corpus-$$t; \
	    $(FUZZ_DIR)/fuzz_$$t $(FUZZ_OPTS) -max_total_time=$(FUZZ_SECONDS) \
	        -artifact_prefix=$(FUZZ_DIR)/artifacts/$$t- \
	        $(FUZZ_DIR)/corpus-$$t tests/fuzz/corpus tests/fuzz/regressions > $(FUZZ_DIR)/$$t.log 2>&1 & \
	    pids="$$pids $$!"; \
	done; \
	for p in $$pids; do wait $$p || status=1; done; \
	for t in frontend codegen; do \
	    echo "== fuzz_$$t ($(FUZZ_DIR)/$$t.log)"; \
	    grep -E '^#[0-9]+.*(DONE|INITED)|ERROR|SUMMARY|^stat::' $(FUZZ_DIR)/$$t.log | tail -12; \
	done; exit $$status

# Every seed and every past finding, once through each target.
fuzz-regress: fuzz-build
	@status=0; for t in frontend codegen; do \
	    echo "== fuzz_$$t over tests/fuzz/corpus and tests/fuzz/regressions"; \
	    $(FUZZ_DIR)/fuzz_$$t -timeout=5 -rss_limit_mb=2048 $$(find tests/fuzz/corpus tests/fuzz/regressions -type f ! -name README | sort) \
	        > $(FUZZ_DIR)/regress-$$t.log 2>&1 || { status=1; tail -40 $(FUZZ_DIR)/regress-$$t.log; }; \
	    grep -c '^Executed' $(FUZZ_DIR)/regress-$$t.log | sed 's/$$/ inputs/'; \
	done; exit $$status

demo: deps
	$(MAKE) all
	$(PHC) --list examples/attention/attention.ph
	$(PHC) examples/attention/attention.ph -o $(BUILD)/attention.ptx
	@echo "wrote $(BUILD)/attention.ptx: $$(grep -c '.entry ' $(BUILD)/attention.ptx) entries, $$(grep -c mma.sync $(BUILD)/attention.ptx) mma.sync"

	$(MAKE) attention-check

# ---- installing ----
#   make install [PREFIX=/usr/local] [DESTDIR=staging]   phc, libphobos, phobos.h, phobos.pc
#   make uninstall [PREFIX=...] [DESTDIR=...]             removes exactly those files
# phc finds the library in ../lib beside its bin folder (its runpath), so an
# installed tree may be moved or copied whole.
PREFIX       ?= /usr/local
BINDIR        = $(PREFIX)/bin
LIBDIR        = $(PREFIX)/lib
INCLUDEDIR    = $(PREFIX)/include
PKGCONFIGDIR  = $(LIBDIR)/pkgconfig
INSTALLED     = $(BINDIR)/phc $(LIBDIR)/$(LIBPHOBOS_REAL) $(LIBDIR)/$(LIBPHOBOS_SONAME) $(LIBDIR)/libphobos.so \
                $(INCLUDEDIR)/phobos.h $(PKGCONFIGDIR)/phobos.pc

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR)
	install -m 755 $(PHC) $(DESTDIR)$(BINDIR)/phc
	install -m 755 $(BUILD)/$(LIBPHOBOS_REAL) $(DESTDIR)$(LIBDIR)/$(LIBPHOBOS_REAL)
	ln -sf $(LIBPHOBOS_REAL) $(DESTDIR)$(LIBDIR)/$(LIBPHOBOS_SONAME)
	ln -sf $(LIBPHOBOS_SONAME) $(DESTDIR)$(LIBDIR)/libphobos.so
	install -m 644 runtime/include/phobos.h $(DESTDIR)$(INCLUDEDIR)/phobos.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' runtime/phobos.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/phobos.pc
	chmod 644 $(DESTDIR)$(PKGCONFIGDIR)/phobos.pc

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))

# Installs into a temporary prefix and uses what is there (tests/install_check.sh).
install-check: all
	BUILD=$(BUILD) MAKE="$(MAKE)" sh tests/install_check.sh

# Runs what the build made (so it also runs on the GPU machine): make all build-tests first.
# BENCH_PARTS="fused torch" (bench/run.sh) runs some of the GPU benches.
bench:
	BUILD=$(BUILD) sh bench/run.sh

# The GPU benchmarks: the runtime's programs, timed with the driver's events (bench/gpubench.c).
$(GPU_BENCHES): $(BUILD)/bench/%: bench/%.c bench/gpubench.c bench/gpubench.h $(BUILD)/libphobos.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< bench/gpubench.c -o $@ $(LDFLAGS) $(LINK_PHOBOS) $(LDLIBS) -ldl

$(BUILD)/bench/%: bench/%.c $(BUILD)/libphc.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< $(BUILD)/libphc.a -o $@ $(LDFLAGS) $(LDLIBS)

clean:
	rm -rf $(BUILD)
