#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The VM suite: the host's own burstmeter, workloads and integration tests, run on
# Debian's 6.1 kernel under qemu by vm.sh, with vm-tests.sh as the payload.
# Usage: tests/vm/run-suite.sh BUILD_DIR   (after 'make all integ-bins'; env: CI, VM_TIMEOUT,
#        VM_TESTS="test_keep test_io" to run only those integration tests, e.g. to retry one)
# Writes BUILD_DIR/vm/summary (one line), BUILD_DIR/vm/run.log (everything vm.sh
# printed) and BUILD_DIR/vm/smoke-verbose.log ('burstmeter run -v' inside the VM).
# Exit status: 0 all passed, 1 a test failed or the VM did not finish, 2 not built.
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: tests/vm/run-suite.sh BUILD_DIR" >&2; exit 2; }
O=${1%/}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
vm=$O/vm
payload=$vm/payload
summary=$vm/summary
mkdir -p "$vm"
rm -f "$summary"

# not_built WHAT: one line on stderr and in the summary, exit 2
not_built() {
	echo "run-suite.sh: $1 is missing: run 'make all integ-bins' first" >&2
	echo "not run: $1 is missing (make all integ-bins)" >"$summary"
	exit 2
}
[ -x "$O/burstmeter" ] || not_built "$O/burstmeter"
[ -x "$O/bm-agent" ] || not_built "$O/bm-agent"
[ -x "$O/bm-shim" ] || not_built "$O/bm-shim"
# Every workload and integration test that has a source must have been built.
shopt -s nullglob
for src in "$repo"/tests/workloads/*.c; do
	b=$(basename "$src" .c)
	[ -x "$O/workloads/$b" ] || not_built "$O/workloads/$b"
done
for src in "$repo"/tests/integration/test_*.c; do
	b=$(basename "$src" .c)
	[ -x "$O/tests/integration/$b" ] || not_built "$O/tests/integration/$b"
done

# The payload: the very binaries the host tests run (vm.sh adds their libraries via ldd).
# Only executables: the build dirs hold make's .d files next to them.
rm -rf "$payload"
mkdir -p "$payload/workloads" "$payload/tests"
cp -p "$O/burstmeter" "$O/bm-agent" "$O/bm-shim" "$payload/"
for f in "$O"/workloads/* "$O"/tests/integration/test_*; do
	[ -f "$f" ] && [ -x "$f" ] || continue
	case $f in
	"$O"/workloads/*) cp -p "$f" "$payload/workloads/" ;;
	*)
		if [ -n "${VM_TESTS:-}" ] && ! grep -qw -- "$(basename "$f")" <<<"$VM_TESTS"; then
			continue
		fi
		cp -p "$f" "$payload/tests/"
		;;
	esac
done
[ -z "${VM_TESTS:-}" ] || [ -n "$(ls "$payload/tests")" ] ||
	{ echo "run-suite.sh: VM_TESTS names no built test: $VM_TESTS" >&2; exit 2; }
install -m 755 "$here/vm-tests.sh" "$payload/vm-tests.sh"
# the policies the tests use (tools/policies), as BM_POLICIES
cp -rp "$repo/tools/policies" "$payload/policies"
# The guest kills a test that would outlast the VM, so the others still report. Its
# budget: VM_TIMEOUT less a margin for boot and poweroff, as seconds of guest uptime
# and as a host epoch deadline from now (which also covers vm.sh's setup and the boot).
vm_timeout=${VM_TIMEOUT:-900}
margin=$((vm_timeout > 60 ? 12 : vm_timeout / 5))
echo "$((vm_timeout - margin)) $(($(date +%s) + vm_timeout - margin))" >"$payload/vm-budget"

# Run it; the terminal gets everything but the long -v log, which goes to a file.
log=$vm/run.log
t0=$(date +%s)
set +e
"$here/vm.sh" "$O" "$payload" 2>&1 | tee "$log" |
	awk '{ sub(/\r$/, ""); gsub(/\033(\[[0-9;?]*[A-Za-z]|c)/, "") } /BM_VM_LOG_BEGIN/ { hide = 1 } !hide || /vm\.sh: / { print; fflush() } /BM_VM_LOG_END/ { hide = 0 }'
rc=${PIPESTATUS[0]}
set -e
secs=$(($(date +%s) - t0))

clean=$(tr -d '\r' <"$log")
field() { sed -n "s/.*$1=\(.*\)/\1/p" <<<"$clean" | tail -n1; }
awk '/BM_VM_LOG_END smoke/ { exit } on { print } /BM_VM_LOG_BEGIN smoke/ { on = 1 }' <<<"$clean" \
	>"$vm/smoke-verbose.log"
kernel=$(field BM_VM_KERNEL)
ctrls=$(field BM_VM_CGROUP_CONTROLLERS)
[ -n "$ctrls" ] || ctrls=$(field BM_VM_CONTROLLERS)
counts=$(sed -n 's/.*BM_VM_SUMMARY passed=\([0-9]*\) failed=\([0-9]*\) skipped=\([0-9]*\).*/\1 \2 \3/p' <<<"$clean" | tail -n1)
failures=$(sed -n 's/.*BM_VM_FAILED //p' <<<"$clean" | paste -sd, - | sed 's/,/, /g')
where="in ${secs} s"
[ -z "$kernel" ] || where="on $kernel (cgroup v2: ${ctrls:-none}) $where"

if [ -n "$counts" ]; then
	read -r p f s <<<"$counts"
	line="$p passed, $f failed, $s skipped $where"
	[ -z "$failures" ] || line+="; failed: $failures"
	[ "$rc" = 0 ] || [ "$f" != 0 ] || line+="; vm-tests.sh exited $rc"
	ok=$([ "$rc" = 0 ] && [ "$f" = 0 ] && echo yes || echo no)
else
	# No summary from the guest: vm.sh says why (timeout, panic, boot failure).
	reason=$(sed -n 's/.*vm\.sh: //; T; s/; see .*//; p' <<<"$clean" | tail -n1)
	last=$(sed -n 's/^# \(test_[A-Za-z0-9_]*\), limit.*/\1/p; s/^# smoke: burstmeter run.*/smoke/p' <<<"$clean" | tail -n1)
	line="VM failed (${reason:-no BM_VM_SUMMARY, vm.sh exited $rc}) $where${last:+; last started: $last}"
	[ -z "$failures" ] || line+="; failed before that: $failures"
	line+="; see $vm/console.log"
	ok=no
fi
echo "$line" >"$summary"
# A failed test's own words, again at the end, where a CI log's tail shows them: the
# lines of its binary since the test before it (what it printed to stderr), its "not ok",
# and the "# " lines after it (cmocka's TAP output puts the failed assertion there).
if [ -n "$failures" ]; then
	echo "vm: what the failed tests said:"
	awk '{ sub(/\r$/, "") }
	     match($0, /^  \[test_[A-Za-z0-9_]*\] /) {
		bin = substr($0, 4, RLENGTH - 5); text = substr($0, RLENGTH + 1)
		if (bin != cur) { cur = bin; n = 0; after = 0 }
		if (after && text ~ /^# / && text !~ /^# (not )?ok - /) { print "  [" bin "] " text; next }
		after = 0
		if (text ~ /^ok [0-9]+ -/) { n = 0; next }
		if (n < 40) buf[n++] = text
		if (text ~ /^not ok [0-9]+ -/) {
			for (i = 0; i < n; i++) print "  [" bin "] " buf[i]
			n = 0; after = 1
		}
	     }' "$log"
fi
echo "vm: $line"
[ "$ok" = yes ]
