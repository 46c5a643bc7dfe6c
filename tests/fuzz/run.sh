#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Run the libFuzzer targets built in BUILD_DIR/fuzz (make fuzz-bins).
# Usage: tests/fuzz/run.sh BUILD_DIR short|long [TARGET...]
#
# For each target: every input of tests/fuzz/regress/TARGET once, then fuzzing from the
# committed seeds (tests/fuzz/corpus/TARGET) and the regressions: short for
# FUZZ_SHORT_SECONDS (10) from a fresh scratch corpus, long for FUZZ_SECONDS (60) into the
# corpus kept in BUILD_DIR/fuzz/corpus/TARGET. A crash, leak, timeout or broken property
# fails the target: its input is in BUILD_DIR/fuzz/crash/TARGET, its log printed.
# One line per target: "ok N - TARGET: ..." or "not ok N - TARGET: ...".
set -u

O=${1:?usage: tests/fuzz/run.sh BUILD_DIR short|long [TARGET...]}
mode=${2:?usage: tests/fuzz/run.sh BUILD_DIR short|long [TARGET...]}
shift 2
src=$(dirname "$0")
# every target there is (fuzz.mk builds the same list: one per fuzz_TARGET.c)
targets=${*:-$(cd "$src" && ls fuzz_*.c | sed 's/^fuzz_\(.*\)\.c$/\1/')}
case "$mode" in
short) secs=${FUZZ_SHORT_SECONDS:-10} ;;
long) secs=${FUZZ_SECONDS:-60} ;;
*) echo "tests/fuzz/run.sh: unknown mode '$mode' (short, long)" >&2; exit 2 ;;
esac

# the longest input worth trying, per target
max_len() {
	case "$1" in
	parse | cidr) echo 128 ;;
	request | run_request) echo 8192 ;;
	podstate) echo 16384 ;;	# a watch stream of several pods
	*) echo 4096 ;;
	esac
}

# the last stat:: value NAME of a libFuzzer log
stat() {
	sed -n "s/^stat::$1: *//p" "$2" | tail -n 1
}

n=0 failed=0
for t in $targets; do
	n=$((n + 1))
	bin=$O/fuzz/fuzz_$t
	log=$O/fuzz/log/$t.log
	crash=$O/fuzz/crash/$t
	if [ ! -x "$bin" ]; then
		echo "not ok $n - $t: $bin is not built (make fuzz-bins)"
		failed=1
		continue
	fi
	mkdir -p "$O/fuzz/log" "$crash"
	: >"$log"
	regress=$(find "$src/regress/$t" -type f 2>/dev/null | sort)
	nreg=$(printf '%s' "$regress" | grep -c .)
	# libFuzzer runs each file named on its command line once
	# shellcheck disable=SC2086 # one argument per file: the names have no spaces
	if [ -n "$regress" ] && ! "$bin" $regress >>"$log" 2>&1; then
		echo "not ok $n - $t: a regression input fails again"
		tail -n 40 "$log" | sed 's/^/    /'
		failed=1
		continue
	fi
	if [ "$mode" = short ]; then
		work=$O/fuzz/scratch/$t
		rm -rf "$work"
	else
		work=$O/fuzz/corpus/$t
	fi
	mkdir -p "$work"
	dict="" regdir=""
	[ -f "$src/dict/$t.dict" ] && dict="-dict=$src/dict/$t.dict"
	[ -d "$src/regress/$t" ] && regdir=$src/regress/$t
	start=$(date +%s)
	# shellcheck disable=SC2086 # dict is one option or none
	"$bin" -max_total_time="$secs" -max_len="$(max_len "$t")" -timeout=10 \
		-print_final_stats=1 -artifact_prefix="$crash/" $dict \
		"$work" "$src/corpus/$t" ${regdir:+"$regdir"} \
		>>"$log" 2>&1
	rc=$?
	took=$(($(date +%s) - start))
	runs=$(stat number_of_executed_units "$log")
	rate=$(stat average_exec_per_sec "$log")
	seeds=$(find "$src/corpus/$t" -type f | wc -l)
	kept=$(find "$work" -type f | wc -l)
	what="$nreg regressions, $seeds seeds; ${runs:-?} runs in ${took} s (${rate:-?}/s), corpus $kept"
	if [ "$rc" = 0 ]; then
		echo "ok $n - $t: $what"
	else
		echo "not ok $n - $t: exit $rc after $what; input in $crash/"
		grep -A 30 -m 1 '^==[0-9]*==\|fuzz_.*\.c: \|^SUMMARY' "$log" | head -n 40 | sed 's/^/    /'
		tail -n 5 "$log" | sed 's/^/    /'
		failed=1
	fi
done
exit $failed
