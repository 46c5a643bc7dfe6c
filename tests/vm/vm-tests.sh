#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The test payload inside the 6.1 VM (busybox ash, run by /init as /payload/vm-tests.sh).
# First a smoke run of 'burstmeter run -v --json' (does the CO-RE object load and
# attach on this kernel, and which fallbacks did it take), then every
# /payload/tests/test_* with TAP output. run-suite.sh parses the BM_VM_* lines.
# Exit status: 0 when nothing failed, 1 otherwise (under CI=true a skip is a failure).

P=${BM_VM_PAYLOAD:-/payload} # another dir only to try this script outside the VM
export BM_BIN=$P/burstmeter BM_WORKLOADS=$P/workloads BM_POLICIES=$P/policies
export CMOCKA_MESSAGE_OUTPUT=TAP CI="${CI:-}"

# Tests left out under TCG emulation: vm_filter NAME prints the BM_TEST_FILTER that
# test binary NAME gets here: space-separated cmocka test names (or globs with * and ?)
# that it must not run. Nothing printed: BM_TEST_FILTER stays unset and all of it runs.
# Left-out tests are not counted (a skip would fail CI=true); the log names them.
vm_filter() {
	case $1 in
	test_run)
		# Two threads at two full cores for 200 ms: under TCG the two vCPUs take turns
		# on one host thread (vm.sh says why), so two cores at once never happen.
		# (The CPU ground truths that allow for start-up read BM_VM=1.)
		echo 'test_run_threads'
		;;
	test_agent)
		# Userspace only, and the VM part must stay under 3 minutes: how the agent
		# folds a long series (9 s; the unit test and the host run it) and its
		# deadlines (3 s; the host runs it, and test_run_deadline here); an attach never named
		# waits 10 s to end (test_agent_run_client clones into the cgroup here too)
		echo 'test_agent_long_timeline test_agent_deadlines test_agent_attach_later'
		;;
	test_spawner)
		# Userspace only (the agent<->spawner socket), and hundreds of launches, two process
		# starts each, take minutes under TCG; the host runs it
		echo 'test_spawner_*'
		;;
	test_budgets)
		# promtool checks the fleet rules: the guest has no promtool (the host runs it). A CPU
		# budget spent and refilled within a second is the agent's arithmetic against the
		# tick, which TCG stretches; the kernel's part, a cap through v2 cpu.max, runs here
		# in test_budgets_pressure_attributed. Fair CPU needs a tenant over its share of two
		# CPUs, and the guest's two vCPUs never run at once
		echo 'test_budgets_fleet_rules_promtool test_budgets_cpu_over_budget' \
			'test_budgets_over_share_yields'
		;;
	test_views)
		# top in tmux: the VM has no tmux (the plain --once/--json views still run)
		echo 'test_top_tmux*'
		;;
	test_hardening)
		# What depends on the kernel runs here: the namespaces of every effect (mount_setattr,
		# cgroupns, pidns on 6.1) and a caller inside an effect's cgroup. The rest is the
		# agent's own bookkeeping (cancels, uids, connections, locks, retention), the same on
		# any kernel, and restarts that take minutes under TCG; the host runs all of it.
		echo 'test_harden_cancel_queued test_harden_identity_after_restart test_harden_tenant_uids' \
			'test_harden_connection_caps test_harden_one_agent test_harden_retention_and_log_cap' \
			'test_harden_tenant_slots_come_back'
		;;
	test_faults)
		# The agent stopped while a v2 memory controller holds a ceiling runs here; kill -9 at
		# each step of a launch, a full state dir, a ring storm and a held cgroup are the
		# agent's own logic, and their restarts take minutes under TCG; the host runs them.
		echo 'test_faults_kill9_at_each_launch_step test_faults_full_state_dir' \
			'test_faults_ring_storm test_faults_cgroup_busy'
		;;
	test_promises)
		# Two tenants' names side by side are cgroups: they run here. A stream that is never
		# read (a minute of windows), re-adoption, retention and uids are the agent's own
		# logic, with restarts that take minutes under TCG; the host runs them.
		echo 'test_promises_slow_reader_cut test_promises_attach_same_process' \
			'test_promises_retention_periodic test_promises_uid_after_restart'
		;;
	test_sandbox)
		# What depends on the kernel runs here: the mounts (mount_setattr; open_tree and
		# move_mount for the workspace, run's and the agent's) and the network (a netns of
		# its own, the egress filter on an attached process). Identities, capabilities, the
		# environment and the refusals are the same on any kernel: the host runs them.
		echo 'test_sbx_user test_sbx_drop_caps test_sbx_env_cwd test_sbx_refused_before_anything'
		;;
	test_place)
		# (deploy's) leaf placement needs the pure-v2 root this VM has: it runs here
		;;
	test_leaf)
		# the agent's own leaf, end to end, needs pure v2 too (the host is hybrid): all of it
		;;
	test_pods)
		# A pod's memory.max bounding its calls needs the v2 memory controller: it runs here,
		# with the calls in their pods (moves between v2 cgroups that have controllers, pid
		# namespaces). Who may call, and adoption after kill -9, are the agent's own logic,
		# with restarts that take minutes under TCG; the host runs them.
		echo 'test_pod_callers test_pod_calls_adopted_and_swept'
		;;
	esac
}

# What the payload may take, written by run-suite.sh: seconds of uptime, and the host's
# epoch second by which the VM must be done (the RTC gives the guest the host's clock
# at boot; it also counts the time vm.sh and the boot took). A test that would outlast
# either is killed here, so that the VM stays up and the others still report.
budget=150 deadline=0
[ -r $P/vm-budget ] && read -r budget deadline <$P/vm-budget
now() { read -r up _ </proc/uptime; echo "${up%.*}"; }
t0=$(now)
# seconds_left: the smaller of the two budgets' remains
seconds_left() {
	l=$((budget - ($(now) - t0)))
	e=$(date +%s)
	[ "${deadline:-0}" -gt 0 ] && [ "$e" -gt 1000000000 ] && [ $((deadline - e)) -lt "$l" ] && l=$((deadline - e))
	echo "$l"
}

# A block device for test_io: a 192 MiB ramdisk (brd, from the kernel package) with ext2 on
# it, mounted with the ext4 driver; BM_IO_DIR tells the test where. Without it the test fails.
if [ -r /lib/brd.ko ] && insmod /lib/brd.ko rd_nr=1 rd_size=196608 2>/dev/null &&
	mke2fs -q /dev/ram0 >/dev/null 2>&1 && mkdir -p /mnt/bm-io &&
	mount -t ext4 /dev/ram0 /mnt/bm-io 2>/dev/null; then
	export BM_IO_DIR=/mnt/bm-io
	echo "# block device for test_io: /dev/ram0 (ext2) at $BM_IO_DIR"
else
	echo "# no block device for test_io (brd.ko: $([ -r /lib/brd.ko ] && echo present || echo missing))"
fi

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
echo "# vm-tests: CI=$CI budget=${budget}s deadline=$deadline clock=$(date +%s) uptime=${t0}s left=$(seconds_left)s cpus=$(nproc) mem=$(awk '/MemTotal/ {print $2 / 1024 " MiB"}' /proc/meminfo)"

# --- smoke: one metered run; proves that the object loads and attaches on 6.1
smoke() {
	if [ -x "$BM_WORKLOADS/bm-sleeper" ]; then
		set -- "$BM_WORKLOADS/bm-sleeper" 100
	else
		set -- sleep 0.1
	fi
	echo "# smoke: burstmeter run -v --json -- $*"
	s0=$(now)
	limit=$(seconds_left)
	[ "$limit" -le 60 ] || limit=60
	[ "$limit" -ge 5 ] || limit=5
	cd /tmp && timeout -k 3 "$limit" "$BM_BIN" run -v --json -- "$@" >$W/smoke.out 2>$W/smoke.log
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
	left=$(seconds_left)
	if [ "$left" -lt 10 ]; then
		echo "  [$name] not ok - not run: ${left}s left before the VM's deadline"
		record "$name" fail
		continue
	fi
	filter=$(vm_filter "$name")
	echo "# $name, limit ${left}s"
	[ -z "$filter" ] || echo "# $name: left out under emulation (BM_TEST_FILTER): $filter"
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
	p=$(grep '^ok [0-9][0-9]* -' $W/out.tap | grep -vc '# *SKIP')
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
