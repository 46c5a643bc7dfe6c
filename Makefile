# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# burstmeter: clang -> bpftool gen object -> bpftool gen skeleton -> one binary.
# Every artefact goes to $(O) (default build/); V=1 shows the commands.

O ?= build
ARCH ?= $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
VMLINUX_H ?= vmlinux/$(ARCH)/vmlinux.h
CLANG ?= clang
BPFTOOL ?= bpftool
CC ?= gcc
PKG_CONFIG ?= pkg-config
prefix ?= /usr/local

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-5s %s\n' "$(1)" "$(2)";
endif

PKGS := libbpf jansson libcyaml yaml-0.1 sqlite3 libmicrohttpd ncursesw
CFLAGS ?= -O2 -g
BM_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE \
	-Iinclude -Iuser -I$(O)/gen $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
LDLIBS := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null) -lelf -lz -lm
ifeq ($(SAN),1)
BM_CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=address,undefined
endif
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -Wall -Wextra \
	-Wno-unused-parameter -Werror -I$(dir $(VMLINUX_H)) -Iinclude -Ibpf

BPF_NAMES := meter egress
SKELS := $(patsubst %,$(O)/gen/%.skel.h,$(BPF_NAMES))
# The library's layers, lowest first (docs/DESIGN.md): each may call its own and those
# before it. One archive each, linked highest first, so a call that goes up does not link;
# `make check-layers` (part of check and test) names any such call or #include.
LAYERS := base meter effect agent views api cli
layer_objs = $(patsubst user/%.c,$(O)/user/%.o,$(wildcard user/$(1)/*.c))
LIB_OBJS := $(foreach l,$(LAYERS),$(call layer_objs,$(l)))
reverse = $(if $(1),$(call reverse,$(wordlist 2,$(words $(1)),$(1))) $(firstword $(1)))
LIBS := $(foreach l,$(call reverse,$(LAYERS)),$(O)/lib/libbm-$(l).a)
BIN := $(O)/burstmeter
SHIM := $(O)/bm-shim
AGENT := $(O)/bm-agent
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(O)/tests/unit/%,$(UNIT_SRCS))
INTEG_SRCS := $(wildcard tests/integration/test_*.c)
INTEG_BINS := $(patsubst tests/integration/%.c,$(O)/tests/integration/%,$(INTEG_SRCS))
WORKLOAD_SRCS := $(wildcard tests/workloads/*.c)
WORKLOADS := $(patsubst tests/workloads/%.c,$(O)/workloads/%,$(WORKLOAD_SRCS))

.DELETE_ON_ERROR:
.SECONDARY:
.SECONDEXPANSION:
.PHONY: all deps run check check-layers check-san check-integ test test-vm bench vmlinux install \
	clean unit-bins integ-bins image

all: $(BIN) $(AGENT) $(SHIM) $(WORKLOADS)

# --- BPF: compile, strip DWARF and link (gen object), embed (gen skeleton)
$(O)/bpf/%.tmp.o: bpf/%.bpf.c $(VMLINUX_H) | $(O)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MMD -MP -MT $@ -MF $(@:.o=.d) -c $< -o $@

$(O)/bpf/%.bpf.o: $(O)/bpf/%.tmp.o
	$(call msg,GENOBJ,$@)
	$(Q)$(BPFTOOL) gen object $@ $<

$(O)/gen/%.skel.h: $(O)/bpf/%.bpf.o | $(O)/gen
	$(call msg,GENSKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name bm_$*_bpf > $@

# --- userspace: the skeletons are order-only for the first build; -MMD takes over after
$(O)/user/%.o: user/%.c | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(BM_CFLAGS) -MMD -MP -c $< -o $@

$(O)/lib/libbm-%.a: $$(call layer_objs,$$*)
	$(call msg,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(O)/tools/%.o: tools/%.c | $(SKELS) $(O)/tools
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(BM_CFLAGS) -MMD -MP -c $< -o $@

# every command but the agent: what it does not call (the HTTP server, SQLite) it does not load
$(BIN): $(O)/tools/burstmeter.o $(LIBS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) -Wl,--as-needed -o $@ $^ $(LDLIBS)

$(AGENT): $(O)/tools/bm-agent.o $(LIBS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# what the spawner execs for each shim: static, libc only, so that it starts fast
$(SHIM): $(O)/tools/bm-shim.o $(LIBS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $(if $(filter 1,$(SAN)),,-static) -o $@ $^

$(O)/workloads/%: tests/workloads/%.c | $(O)/workloads
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -MMD -MP -o $@ $< -lpthread

$(O)/tests/unit/%: tests/unit/%.c $(LIBS) | $(O)/tests/unit
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(BM_CFLAGS) $(LDFLAGS) -MMD -MP -o $@ $< $(LIBS) $(LDLIBS) -lcmocka

$(O)/tests/integration/%: tests/integration/%.c $(LIBS) | $(O)/tests/integration
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(BM_CFLAGS) $(LDFLAGS) -MMD -MP -o $@ $< $(LIBS) $(LDLIBS) -lcmocka

$(O)/bpf $(O)/gen $(O)/tools $(O)/workloads $(O)/tests/unit $(O)/tests/integration:
	$(Q)mkdir -p $@

# --- the two commands of the README
deps:
	$(Q)tools/deps.sh

# the main job: one bursty demo effect metered standalone, then the node agent in the
# foreground with its embedded defaults (Ctrl-C stops it)
run: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tools/as-root.sh $(BIN) run --standalone --id demo --intent "bursty demo workload" --hist \
		--outcome - -- $(O)/workloads/bm-demo
	$(Q)tools/as-root.sh $(BIN) agent

unit-bins: $(UNIT_BINS)
integ-bins: $(INTEG_BINS)

# layers + unit + ASan/UBSan unit + integration (root) + a short fuzz run + 6.1 under qemu
test: deps
	$(Q)$(MAKE) --no-print-directory all unit-bins integ-bins fuzz-bins
	$(Q)$(MAKE) --no-print-directory check-layers
	$(Q)$(MAKE) --no-print-directory O=$(O)/san SAN=1 unit-bins
	$(Q)tests/run.sh $(O)

check: unit-bins check-layers
	$(Q)$(MAKE) --no-print-directory O=$(O)/san SAN=1 unit-bins
	$(Q)tests/run.sh $(O) unit san

# calls go down only: no #include or symbol of a higher layer, no cycle between modules;
# then the checker's self-test (each fault planted must fail it)
check-layers: $(LIB_OBJS)
	$(Q)tools/check-layers.py $(O) $(LAYERS)
	$(Q)tests/unit/check_layers_selftest.py $(O) $(LAYERS)

check-integ: all integ-bins
	$(Q)tests/run.sh $(O) integration

test-vm: all integ-bins
	$(Q)tests/run.sh $(O) vm

bench: deps all
	$(Q)tools/as-root.sh bench/run.sh $(O)

# the OCI image (FROM scratch, offline), tagged with the version: deploy/README.md
image: all
	$(Q)tools/deps.sh deploy
	$(Q)tools/image.sh $(O)

vmlinux:
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux/$(ARCH)/vmlinux.h

install: $(BIN) $(AGENT) $(SHIM)
	install -D -m 0755 $(BIN) $(DESTDIR)$(prefix)/sbin/burstmeter
	install -D -m 0755 $(AGENT) $(DESTDIR)$(prefix)/sbin/bm-agent
	install -D -m 0755 $(SHIM) $(DESTDIR)$(prefix)/sbin/bm-shim

clean:
	rm -rf $(O)

# the fuzz targets and make fuzz (tests/fuzz/)
include tests/fuzz/fuzz.mk

-include $(wildcard $(O)/bpf/*.d $(O)/user/*/*.d $(O)/tools/*.d $(O)/workloads/*.d \
	$(O)/tests/unit/*.d $(O)/tests/integration/*.d)
