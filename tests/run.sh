#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Run the test suites and say how many tests passed in each.
# Usage: tests/run.sh BUILD_DIR [unit|san|podspec|fuzz|integration|harness|deploy|vm]...
#        (default: all of them)
#
# Unit tests need nothing. Integration tests need root and BTF: outside CI
# they are skipped (exit 77) when either is missing; under CI=true a skip is
# a failure, in every suite (a test's own cmocka skip too). podspec checks
# `burstmeter podspec`'s manifests against the
# Kubernetes schema (npm, into BUILD_DIR/npm); fuzz is a short run of each
# libFuzzer target (tests/fuzz/run.sh); harness (tests/harness/run.sh) drives
# burstmeter mcp under the MCP SDKs, the clients and the example; deploy
# (root) runs the image under podman and checks the Kubernetes manifests; the
# same rule holds for them. The VM suite boots Debian's 6.1 kernel under qemu.
set -u

O=${1:?usage: tests/run.sh BUILD_DIR [unit|san|podspec|fuzz|integration|harness|deploy|vm]...}
shift
suites=${*:-unit san podspec fuzz integration harness deploy vm}
failed=0
summary=""
# what failed, again after the summary: a log's tail is often all that is kept of it
failures=""

# failed_lines LABEL: each "not ok" line on stdin and the diagnostics after it (6 at most),
# and the last 8 lines a script quotes of a failed command's stderr ("#   stderr: ...")
failed_lines() {
	awk -v l="$1" '/^not ok / && !/# SKIP/ { d = 6; print "  [" l "] " $0; next }
		d > 0 && /^#/ { d--; print "  [" l "]   " substr($0, 1, 300); next } { d = 0 }
		/^#   stderr: / { e[n++ % 8] = substr($0, 1, 300) }
		END { for (i = (n > 8 ? n - 8 : 0); i < n; i++) print "  [" l "] " e[i % 8] }'
}
# the integration tests run what this build made, not build/'s (make test O=...)
BM_BIN=${BM_BIN:-$O/burstmeter} BM_WORKLOADS=${BM_WORKLOADS:-$O/workloads}
export BM_BIN BM_WORKLOADS

# Effects run as their tenant's uid: a checkout under a private directory (/root is 0700)
# keeps the workloads from them. Then a copy the tests can reach, removed at the end.
wl_copy=""
reach_workloads() {
	[ -n "$wl_copy" ] && return 0
	[ "$(id -u)" = 0 ] || return 0
	BM_WORKLOADS=$(cd "$BM_WORKLOADS" && pwd) || return 1
	setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$BM_WORKLOADS/bm-spike" 2>/dev/null &&
		return 0
	wl_copy=$(mktemp -d /var/tmp/bm-workloads.XXXXXX) || return 1
	cp -a "$BM_WORKLOADS/." "$wl_copy/" && chmod 0755 "$wl_copy" || return 1
	echo "  (workloads copied to $wl_copy: $BM_WORKLOADS is out of reach of the effects' uids)"
	BM_WORKLOADS=$wl_copy
}
trap '[ -z "$wl_copy" ] || rm -rf "$wl_copy"' EXIT

# run_dir LABEL DIR [WRAPPER]: every test_* binary in DIR, TAP output counted
run_dir() {
	label=$1 dir=$2 wrap=${3:-}
	pass=0 fail=0 skip=0
	for t in "$dir"/test_*; do
		[ -x "$t" ] || continue
		out=$(CMOCKA_MESSAGE_OUTPUT=TAP $wrap "$t" 2>&1)
		rc=$?
		printf '%s\n' "$out" | sed "s|^|  [$label] |"
		p=$(printf '%s\n' "$out" | grep -c '^ok ')
		f=$(printf '%s\n' "$out" | grep -c '^not ok [0-9]* -')
		s=$(printf '%s\n' "$out" | grep -c '^not ok .*# SKIP')
		pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
		[ "$f" = 0 ] || failures="$failures
$(printf '%s\n' "$out" | failed_lines "$label $(basename "$t")")"
		if [ "${CI:-}" = true ] && [ "$s" != 0 ]; then
			echo "  [$label] $(basename "$t"): $s skipped under CI=true:" \
				"that is a failure" >&2
			fail=$((fail + s))
		fi
		if [ "$rc" = 77 ]; then
			skip=$((skip + 1))
			if [ "${CI:-}" = true ]; then
				echo "  [$label] $(basename "$t") skipped under CI=true: that is a failure" >&2
				fail=$((fail + 1))
			fi
		elif [ "$rc" != 0 ] && [ "$f" = 0 ]; then
			echo "  [$label] $(basename "$t") exited $rc" >&2
			fail=$((fail + 1))
		fi
	done
	summary="$summary
  $label: $pass passed, $fail failed, $skip skipped"
	[ "$fail" = 0 ] || failed=1
}

# run_tap LABEL CMD...: one script's TAP output counted; its exit 77 is a skip (a failure under CI)
run_tap() {
	label=$1
	shift
	out=$("$@" 2>&1)
	rc=$?
	printf '%s\n' "$out" | sed "s|^|  [$label] |"
	pass=$(printf '%s\n' "$out" | grep -c '^ok ')
	fail=$(printf '%s\n' "$out" | grep -c '^not ok ')
	[ "$fail" = 0 ] || failures="$failures
$(printf '%s\n' "$out" | failed_lines "$label")"
	skip=0
	if [ "$rc" = 77 ]; then
		skip=1
		if [ "${CI:-}" = true ]; then
			echo "  [$label] skipped under CI=true: that is a failure" >&2
			fail=$((fail + 1))
		fi
	elif [ "$rc" != 0 ] && [ "$fail" = 0 ]; then
		echo "  [$label] $1 exited $rc" >&2
		fail=1
	fi
	summary="$summary
  $label: $pass passed, $fail failed, $skip skipped"
	[ "$fail" = 0 ] || failed=1
}

for s in $suites; do
	case "$s" in
	unit) run_dir unit "$O/tests/unit" ;;
	san) run_dir san "$O/san/tests/unit" ;;
	podspec) run_tap podspec tests/k8s/podspec-schema.sh "$O" ;;
	integration) reach_workloads && run_dir integration "$O/tests/integration" tools/as-root.sh ;;
	fuzz) run_tap fuzz tests/fuzz/run.sh "$O" short ;;
	harness) run_tap harness tools/as-root.sh tests/harness/run.sh "$O" ;;
	deploy) BM_BUILD=$O && export BM_BUILD && run_dir deploy tests/deploy tools/as-root.sh ;;
	vm)
		if tools/as-root.sh tests/vm/run-suite.sh "$O"; then
			summary="$summary
  vm: $(cat "$O/vm/summary" 2>/dev/null || echo 'no summary')"
		else
			summary="$summary
  vm: FAILED ($(cat "$O/vm/summary" 2>/dev/null || echo 'no summary'))"
			failed=1
		fi
		;;
	*) echo "tests/run.sh: unknown suite '$s'" >&2; exit 2 ;;
	esac
done
echo "test summary:$summary"
[ -z "$failures" ] || printf 'failed tests (the first 40 lines):%s\n' "$failures" | head -41
exit $failed
