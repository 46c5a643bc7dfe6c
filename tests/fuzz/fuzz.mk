# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# libFuzzer targets, one per parser of outside input (tests/fuzz/README.md). The archives
# are gcc's and uninstrumented, so each target is linked with the library sources it
# fuzzes, compiled again by clang with ASan, UBSan and libFuzzer's coverage, in $(O)/fuzz.
#   make fuzz-bins    build them
#   make fuzz         regressions, then FUZZ_SECONDS (60) of fuzzing each; corpus kept
#   tests/run.sh $(O) fuzz    make test's short run: regressions, then 10 s each

FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_PKGS := jansson libcyaml yaml-0.1
FUZZ_CFLAGS := -g -O1 -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE \
	-Iinclude -Iuser -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer $(shell $(PKG_CONFIG) --cflags $(FUZZ_PKGS) 2>/dev/null)
FUZZ_LIBS := $(shell $(PKG_CONFIG) --libs $(FUZZ_PKGS) 2>/dev/null) -lm

# one target per tests/fuzz/fuzz_TARGET.c (run.sh runs the same list), each with its sources
FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
fuzz_src_request := agent/request agent/request_sandbox agent/request_field base/parse base/cidr \
	effect/sandbox agent/request_intent effect/trace
fuzz_src_parse := base/parse
fuzz_src_cidr := base/cidr base/parse
fuzz_src_policy := effect/policy_yaml effect/policy base/yamldoc base/parse
fuzz_src_config := agent/config agent/budget base/yamldoc base/parse base/cgroup_node \
	base/mountinfo base/cgroup base/common
fuzz_src_client := cli/client
fuzz_src_run_request := agent/run_request agent/podspec agent/request_sandbox agent/request_field \
	base/k8sname base/parse base/cidr effect/sandbox
fuzz_src_podstate := agent/podwatch agent/podstate base/common
fuzz_src_mcp_req := cli/mcp_req $(fuzz_src_request) effect/expect base/common
FUZZ_BINS := $(patsubst %,$(O)/fuzz/fuzz_%,$(FUZZ_TARGETS))

.PHONY: fuzz fuzz-bins
fuzz-bins: $(FUZZ_BINS)

fuzz: fuzz-bins
	$(Q)FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh $(O) long

$(O)/fuzz/obj/%.o: user/%.c
	$(call msg,FUZZCC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

fuzz_objs = $(addprefix $(O)/fuzz/obj/,$(addsuffix .o,$(fuzz_src_$(1))))
$(O)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $$(call fuzz_objs,$$*)
	$(call msg,FUZZ,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -MMD -MP -o $@ $< $(filter %.o,$^) \
		$(FUZZ_LIBS)

-include $(wildcard $(O)/fuzz/*.d $(O)/fuzz/obj/*/*.d)
