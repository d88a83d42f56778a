# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# execgate: one Makefile, every output under .output/. `make V=1` shows commands.

OUTPUT   ?= .output
export OUTPUT

# Parallel by default, one job per CPU (an explicit -jN wins).
ifeq ($(filter -j% j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
endif
CLANG    ?= clang
CC       ?= gcc
BPFTOOL  ?= bpftool
ARCH     := x86
VMLINUX  := vmlinux/$(ARCH)/vmlinux.h

LIBS     := libbpf libelf zlib yaml-0.1 libpcre2-8 libseccomp libcrypto jansson libwebsockets
PKG_CFLAGS := $(shell pkg-config --cflags $(LIBS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(LIBS) 2>/dev/null || echo -lbpf -lelf -lz -lyaml -lpcre2-8 -lseccomp -lcrypto -ljansson -lwebsockets)

OPTFLAGS ?= -O2 -g
CFLAGS   := $(OPTFLAGS) -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE -fno-strict-aliasing \
            -I$(OUTPUT) -Ibpf -Iuserspace $(PKG_CFLAGS)
LDLIBS   += $(PKG_LIBS) -lm
# BPF_EXTRA: more clang flags for the BPF side, for experiments (make BPF_EXTRA=-DFOO OUTPUT=.output-foo)
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -Wall -Werror $(BPF_EXTRA) \
              -I$(OUTPUT) -Ibpf -Ivmlinux/$(ARCH)

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_OBJS  := $(patsubst bpf/%.bpf.c,$(OUTPUT)/bpf/%.bpf.o,$(BPF_SRCS))
SKELS     := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))
# userspace/<layer>/<concern>.c: cli/ holds main() and the verbs, the rest is the library
# userspace/shim/ is the shell shim, a program of its own (libc only); the
# binary shares its pure part, shimlib.c
USER_SRCS := $(filter-out userspace/shim/shim.c,$(wildcard userspace/*/*.c))
USER_OBJS := $(patsubst userspace/%.c,$(OUTPUT)/obj/%.o,$(USER_SRCS))
LIB_OBJS  := $(filter-out $(OUTPUT)/obj/cli/%,$(USER_OBJS))
CLI_OBJS  := $(filter $(OUTPUT)/obj/cli/%,$(USER_OBJS))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUTPUT)/tests/%,$(UNIT_SRCS))
HELPER_SRCS := $(wildcard tests/helpers/*.c)
HELPER_BINS := $(patsubst tests/helpers/%.c,$(OUTPUT)/tests/helpers/%,$(HELPER_SRCS))
BENCH_SRCS  := $(filter-out %.bpf.c,$(wildcard tools/bench/*.c))
BENCH_BINS  := $(patsubst tools/bench/%.c,$(OUTPUT)/bench/%,$(BENCH_SRCS))
# BPF programs of the benchmarks (the floor under the tracer's cost): tools/bench/NAME.bpf.c
BENCH_SKELS := $(patsubst tools/bench/%.bpf.c,$(OUTPUT)/bench/%.skel.h,$(wildcard tools/bench/*.bpf.c))
FUZZ_SRCS   := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS   := $(patsubst tests/fuzz/%.c,$(OUTPUT)/fuzz/%,$(FUZZ_SRCS))

.DELETE_ON_ERROR:
.SECONDARY:
.PHONY: all deps run test soak test-unit test-integration test-vm check-asan asan-build asan-tests asan-daemon build-tests bench fuzz fuzz-build clean vmlinux

all: $(OUTPUT)/execgate $(OUTPUT)/execgate-shim

# stdout belongs to what a target prints (make run | jq .): chatter to stderr
deps:
	$(Q)tools/install-deps.sh >&2

$(OUTPUT) $(OUTPUT)/bpf $(OUTPUT)/obj $(OUTPUT)/tests $(OUTPUT)/tests/helpers $(OUTPUT)/bench $(OUTPUT)/fuzz:
	$(Q)mkdir -p $@

# BPF objects and their skeletons.
$(OUTPUT)/bpf/%.bpf.o: bpf/%.bpf.c $(VMLINUX) | $(OUTPUT)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MMD -MP -c $< -o $@
	$(Q)llvm-strip -g $@ 2>/dev/null || true

$(OUTPUT)/%.skel.h: $(OUTPUT)/bpf/%.bpf.o | $(OUTPUT)
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $*_bpf > $@

# Userspace. Header dependencies come from the compiler (-MMD); skeletons are
# generated headers, so objects wait for them (order only: -MMD tracks the rest).
# The daemon is linked with link-time optimisation (its per-record path
# calls across files: the output buffer, the JSON writer, the decoder):
# 10-20% less CPU per record in the spawn loop (docs/bench.md). The objects
# carry machine code too, so the unit tests link them without it. LTO=
# turns it off (the ASan build does), and so does clang (by what $(CC)
# says it is), whose objects would be bitcode only (no -ffat-lto-objects
# before clang 18).
CC_IS_CLANG := $(shell $(CC) --version 2>/dev/null | grep -q clang && echo 1)
LTO ?= $(if $(CC_IS_CLANG),,-flto=auto)
LTO_CFLAGS := $(if $(LTO),$(LTO) -ffat-lto-objects)

$(OUTPUT)/obj/%.o: userspace/%.c | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LTO_CFLAGS) -MMD -MP -c $< -o $@

$(OUTPUT)/execgate: $(USER_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LTO) $^ -o $@ $(LDLIBS)

# The shell shim: every shell on a shimmed machine starts here, so libc only.
$(OUTPUT)/execgate-shim: userspace/shim/shim.c userspace/shim/shimlib.c userspace/shim/shimlib.h | $(OUTPUT)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(OPTFLAGS) -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE -Iuserspace \
		userspace/shim/shim.c userspace/shim/shimlib.c -o $@

$(OUTPUT)/tests/%: tests/unit/%.c $(LIB_OBJS) | $(OUTPUT)/tests $(SKELS)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -MMD -MP -Itests/unit $< $(LIB_OBJS) -o $@ $(LDLIBS)

# static_*: statically linked, for chroots and containers with no libc
$(OUTPUT)/tests/helpers/static_%: tests/helpers/static_%.c | $(OUTPUT)/tests/helpers
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -MMD -MP -static $< -o $@

# preload_*: shared objects for LD_PRELOAD
$(OUTPUT)/tests/helpers/preload_%: tests/helpers/preload_%.c | $(OUTPUT)/tests/helpers
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -MMD -MP -shared -fPIC $< -o $@

# a pinned map of the older task-storage layout (tests of the carry-over): libbpf's BTF writer
$(OUTPUT)/tests/helpers/old_tasks: tests/helpers/old_tasks.c | $(OUTPUT)/tests/helpers
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -MMD -MP $< -o $@ $(LDLIBS)

$(OUTPUT)/tests/helpers/%: tests/helpers/%.c | $(OUTPUT)/tests/helpers
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -MMD -MP -pthread $< -o $@

$(OUTPUT)/bench/%.bpf.o: tools/bench/%.bpf.c $(VMLINUX) | $(OUTPUT)/bench
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MMD -MP -c $< -o $@
	$(Q)llvm-strip -g $@ 2>/dev/null || true

$(OUTPUT)/bench/%.skel.h: $(OUTPUT)/bench/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $*_bpf > $@

$(OUTPUT)/bench/%: tools/bench/%.c $(LIB_OBJS) | $(OUTPUT)/bench $(SKELS) $(BENCH_SKELS)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -I$(OUTPUT)/bench -MMD -MP -pthread $< $(LIB_OBJS) -o $@ $(LDLIBS)

# libFuzzer targets link the userspace objects rebuilt with sanitizers.
FUZZ_CFLAGS := -g -O1 -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE -I$(OUTPUT) -Ibpf -Iuserspace \
               $(PKG_CFLAGS) -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
$(OUTPUT)/fuzz/%.o: userspace/%.c | $(OUTPUT)/fuzz $(SKELS)
	$(call msg,CC-FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@
$(OUTPUT)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(patsubst $(OUTPUT)/obj/%,$(OUTPUT)/fuzz/%,$(LIB_OBJS))
	$(call msg,LINK,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $^ -o $@ $(LDLIBS)

# AddressSanitizer builds of the unit tests and of the daemon (`make test`
# runs both; the session suite runs against that daemon). One sub-make for
# both: two over the same $(OUTPUT)/asan would race on its skeletons.
ASAN_CFLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
asan-build:
	$(Q)$(MAKE) --no-print-directory OUTPUT=$(OUTPUT)/asan OPTFLAGS="$(ASAN_CFLAGS)" LTO= \
		$(patsubst $(OUTPUT)/%,$(OUTPUT)/asan/%,$(UNIT_BINS)) $(OUTPUT)/asan/execgate
asan-tests asan-daemon: asan-build

check-asan: deps asan-tests
	$(Q)tests/run.sh --unit-only --unit-dir $(OUTPUT)/asan/tests

build-tests: all $(UNIT_BINS) $(HELPER_BINS) $(BENCH_BINS)

fuzz-build: $(FUZZ_BINS)

# Long fuzzing runs; `make test` gives all the targets 15 s in all (tests/fuzz/run.sh).
FUZZ_SECONDS ?= 600
fuzz: fuzz-build
	$(Q)FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh

# Audit mode with the example host policy. RUN_ARGS adds options to these
# (RUN_ARGS="--output events.jsonl"; a --policy there replaces this one).
# Only the daemon writes to stdout, so `make run | jq .` reads JSON lines.
RUN_POLICY ?= policy/host-audit.yaml
run: deps
	$(Q)$(MAKE) --no-print-directory all >&2
	$(Q)printf '  %-8s %s\n' RUN "execgate daemon --policy $(RUN_POLICY) $(RUN_ARGS)" >&2
	$(Q)exec ./$(OUTPUT)/execgate daemon --policy $(RUN_POLICY) $(RUN_ARGS)

test: deps
	$(Q)$(MAKE) --no-print-directory build-tests asan-build
	$(Q)tests/run.sh

test-unit: build-tests
	$(Q)tests/run.sh --unit-only

test-integration: build-tests
	$(Q)tests/run.sh --integration-only

# The races and differentials of the integration suite with many times the
# tries `make test` gives them (minutes, not seconds): the kernel's verdict
# against the policy's, reloads under execs, argv and path flips.
SOAK_ENV ?= EG_DIFF_EXECS=30000 EG_RELOADS=5000 EG_RELOAD_EXECS=8000 EG_SCRIPT_EXECS=6000 EG_RACE_TRIES=50000
soak: build-tests
	$(Q)env $(SOAK_ENV) python3 tests/integration/run.py test_enforce.test_kernel_verdict \
		test_enforce.test_reload_is_atomic test_enforce.test_reload_never_mixes test_enforce.test_argv_flipped \
		test_sessions.test_racing

# The BPF LSM suite alone: Debian's 6.1 kernel under qemu (tests/vm/README.md).
test-vm: deps
	$(Q)$(MAKE) --no-print-directory build-tests
	$(Q)tests/vm/run.sh

bench: deps
	$(Q)tools/install-deps.sh bench
	$(Q)$(MAKE) --no-print-directory build-tests
	$(Q)tools/bench/run.sh
	$(Q)tools/bench/stages.py
	$(Q)tools/bench/enforce.py
	$(Q)tools/bench/sessions.py
	$(Q)tools/bench/workloads.py
	$(Q)tools/bench/lifetimes.py
	$(Q)tools/bench/query.py

vmlinux:
	$(Q)tools/gen-vmlinux.sh

# install, uninstall, deb: mk/install.mk; image: mk/image.mk
include mk/install.mk
include mk/image.mk

# Header dependencies written by -MMD.
DEPS := $(shell find $(OUTPUT) -path '$(OUTPUT)/deb' -prune -o -type f -name '*.d' -print 2>/dev/null)
-include $(DEPS)

clean:
	$(call msg,CLEAN,$(OUTPUT))
	$(Q)rm -rf $(OUTPUT)
