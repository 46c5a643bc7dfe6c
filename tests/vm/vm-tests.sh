#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The test payload inside the 6.1 VM (busybox ash, run by /init as /payload/vm-tests.sh).
# First a smoke run of 'burstmeter run -v --json' (does the CO-RE object load and
# attach on this kernel, and which fallbacks did it take), then every
# /payload/tests/test_* with TAP output. run-suite.sh parses the BM_VM_* lines.
# Exit status: 0 when nothing failed, 1 otherwise (under CI=true a skip is a failure).

P=${BM_VM_PAYLOAD:-/payload} # another dir only to try this script outside the VM
export BM_BIN=$P/burstmeter BM_WORKLOADS=$P/workloads CMOCKA_MESSAGE_OUTPUT=TAP CI="${CI:-}"

# Tests left out under TCG emulation: vm_filter NAME prints the BM_TEST_FILTER that
# test NAME gets here (as the tests define it: a cmocka glob of the tests to run).
# Nothing printed: BM_TEST_FILTER stays unset and every test of NAME runs.
vm_filter() {
	case $1 in
	*) ;;
	esac
}

# Seconds the payload may take, written by run-suite.sh (VM_TIMEOUT less the boot and
# a margin), so that a hung test is killed here and the rest still report.
budget=150
[ -r $P/vm-budget ] && read -r budget <$P/vm-budget
now() { read -r up _ </proc/uptime; echo "${up%.*}"; }
t0=$(now)

passed=0 failed=0 skipped=0
W=$(mktemp -d /tmp/vm-tests.XXXXXX) || exit 1

# record NAME STATUS: count one result (ok, fail, skip) and name the failures
record() {
	case $2 in
	ok) passed=$((passed + 1)) ;;
	skip)
		skipped=$((skipped + 1))
		if [ "$CI" = true ]; then
			failed=$((failed + 1))
			echo "BM_VM_FAILED $1 (skipped under CI=true)"
		fi
		;;
	*)
		failed=$((failed + 1))
		echo "BM_VM_FAILED $1"
		;;
	esac
}

echo "BM_VM_KERNEL=$(uname -r)"
echo "BM_VM_CGROUP_CONTROLLERS=$(cat /sys/fs/cgroup/cgroup.subtree_control)"
echo "# vm-tests: CI=$CI budget=${budget}s cpus=$(nproc) mem=$(awk '/MemTotal/ {print $2 / 1024 " MiB"}' /proc/meminfo)"

# --- smoke: one metered run; proves that the object loads and attaches on 6.1
smoke() {
	if [ -x "$BM_WORKLOADS/bm-sleeper" ]; then
		set -- "$BM_WORKLOADS/bm-sleeper" 100
	else
		set -- sleep 0.1
	fi
	echo "# smoke: burstmeter run -v --json -- $*"
	s0=$(now)
	cd /tmp && timeout -k 3 60 "$BM_BIN" run -v --json -- "$@" >$W/smoke.out 2>$W/smoke.log
	rc=$?
	json=$(grep '^{' $W/smoke.log | tail -n1)
	net=$(printf '%s\n' "$json" | sed -n 's/.*"net_source":"\([a-z_]*\)".*/\1/p')

	# What the kernel offers, from its BTF, and what burstmeter chose (its -v log).
	have() { grep -q "$1" /sys/kernel/btf/vmlinux && echo yes || echo no; }
	left_out=$(sed -n "s/.*prog '\([a-z0-9_]*\)': skipped loading.*/\1/p" $W/smoke.log | tr '\n' ' ')
	echo "# smoke: kernel BTF: BPF_MAP_TYPE_CGRP_STORAGE $(have BPF_MAP_TYPE_CGRP_STORAGE)," \
		"bpf_cgrp_storage_get $(have BPF_FUNC_cgrp_storage_get)," \
		"btf_trace_sock_send_length $(have btf_trace_sock_send_length)"
	echo "# smoke: net_source=${net:-?}; programs not loaded: ${left_out:-none}"
	# Its -v log without libbpf's routine steps: what is left are the loader's own
	# messages, libbpf's warnings and choices ("skipped loading"), the summary line.
	grep -v '^{' $W/smoke.log | grep -v "libbpf: \(.*relo #\|.*CO-RE relocat\|.*insns from sub-prog\|.*relocated, imm\|elf: \|sec '\|.*found \(data \)\{0,1\}map\|map '[^']*': \(at sec_idx\|found\|created successfully\)\|map '[^']*' (global data)\|map [0-9]* is\|loading \|collected\|looking for\|license\)" |
		sed 's/^/  [smoke] | /'
	echo "# smoke: exit $rc in $(($(now) - s0)) s"

	echo "BM_VM_LOG_BEGIN smoke"
	cat $W/smoke.log
	echo "BM_VM_LOG_END smoke"

	case $json in
	*'"schema":"burstmeter.outcome/v1"'*) ok=$rc ;;
	*) ok=no-outcome ;;
	esac
	if [ "$ok" = 0 ]; then
		echo "  [smoke] ok 1 - burstmeter run loads, attaches and reports on $(uname -r) (net=$net)"
		echo "  [smoke] # outcome: $json"
		record smoke ok
	else
		echo "  [smoke] not ok 1 - burstmeter run: exit $rc, outcome: ${json:-none}"
		echo "  [smoke] # full -v log:"
		sed 's/^/  [smoke] | /' $W/smoke.log
		record smoke fail
	fi
}
smoke

# --- the integration tests, built for the host and copied as they are
for t in $P/tests/test_*; do
	[ -x "$t" ] || continue
	name=${t##*/}
	left=$((budget - ($(now) - t0)))
	if [ "$left" -lt 10 ]; then
		echo "  [$name] not ok - not run: the ${budget}s budget is spent"
		record "$name" fail
		continue
	fi
	filter=$(vm_filter "$name")
	echo "# $name${filter:+ (BM_TEST_FILTER=$filter)}, limit ${left}s"
	s0=$(now)
	(
		cd /tmp || exit 1
		[ -n "$filter" ] && export BM_TEST_FILTER="$filter"
		exec timeout -k 3 "$left" "$t"
	) >$W/out.tap 2>&1
	rc=$?
	secs=$(($(now) - s0))
	sed "s/^/  [$name] /" $W/out.tap
	# cmocka's TAP: "ok N - x", "not ok N - x", "not ok N # SKIP x"; a "# not ok" summary line is not a test
	p=$(grep -c '^ok [0-9][0-9]* -' $W/out.tap)
	f=$(grep -c '^not ok [0-9][0-9]* -' $W/out.tap)
	i=0
	while [ $i -lt "$p" ]; do record "$name" ok; i=$((i + 1)); done
	sed -n 's/^not ok [0-9][0-9]* - *//p' $W/out.tap >$W/names
	while read -r tn; do record "$name:$tn" fail; done <$W/names
	sed -n 's/^\(not \)\{0,1\}ok [0-9][0-9]* *# *SKIP *//p' $W/out.tap >$W/names
	while read -r tn; do record "$name:$tn" skip; done <$W/names
	if [ "$rc" = 77 ]; then
		echo "  [$name] # skipped (exit 77)"
		record "$name" skip
	elif [ "$rc" -ge 124 ] && [ "$secs" -ge $((left - 1)) ]; then
		echo "  [$name] not ok - killed after ${secs}s (limit ${left}s)"
		record "$name (killed after ${secs}s)" fail
	elif [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		echo "  [$name] not ok - exited $rc"
		record "$name (exited $rc)" fail
	fi
	echo "# $name: exit $rc in ${secs}s"
done

echo "# vm-tests: done in $(($(now) - t0)) s"
echo "BM_VM_SUMMARY passed=$passed failed=$failed skipped=$skipped"
rm -rf "$W"
[ "$failed" = 0 ]
