#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# `make run` on a node just booted: no BPF filesystem at /sys/fs/bpf. The README's first
# command, as it is (the Makefile's run target: deps, the standalone demo, then the agent in
# the foreground with its embedded defaults), in mount and network namespaces of the test's
# own: every bpffs unmounted there, a tmpfs over the agent's default socket and state
# directories (another agent may use the host's), a loopback of its own for the default
# metrics address. The demo must print its outcome; the agent must mount bpffs itself, answer
# `burstmeter health` on its default socket within a minute, and stop cleanly on SIGINT (what
# Ctrl-C sends), leaving no pins. TAP output; exit 77 (skip) only outside CI.
#
# Usage: tests/deploy/test_make_run.sh [BUILD_DIR]   (or $BM_BUILD; default build)
set -u

O=${1:-${BM_BUILD:-build}}
skip() { echo "# SKIP test_make_run: $*"; exit 77; }

[ "$(id -u)" = 0 ] || skip "needs root (BPF, cgroups, namespaces)"
[ -r /sys/kernel/btf/vmlinux ] || skip "no BTF at /sys/kernel/btf/vmlinux"

# --- outside: the directories the tmpfs mounts need, made here only if the node has none
if [ "${BM_MAKE_RUN_INSIDE:-}" != 1 ]; then
	made=""
	for d in /run/burstmeter /var/lib/burstmeter; do
		[ -d "$d" ] && continue
		mkdir -p "$d" && made="$made $d"
	done
	BM_MAKE_RUN_INSIDE=1 unshare --mount --net --propagation private "$0" "$O"
	rc=$?
	left=""
	for d in $made; do
		rmdir "$d" 2>/dev/null || left="$left $d"
	done
	if [ -n "$left" ]; then
		echo "# test_make_run: could not remove$left from the host (not empty)"
		exit 1
	fi
	exit $rc
fi

# --- inside the namespaces
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
check() { _what=$1; shift; if "$@"; then ok "$_what"; else not_ok "$_what"; fi; }
note() { echo "# $*"; }

# every bpf mount at or under /sys/fs/bpf, detached (a node just booted has none)
i=0
while grep -q ' /sys/fs/bpf[ /].* - bpf ' /proc/self/mountinfo && [ $i -lt 64 ]; do
	umount -l "$(awk '$5 ~ "^/sys/fs/bpf(/|$)" { for (s = 7; $s != "-"; s++) ; if ($(s + 1) == "bpf") { print $5; exit } }' /proc/self/mountinfo)"
	i=$((i + 1))
done
check "no BPF filesystem at /sys/fs/bpf in the test's mount namespace ($i unmounted)" \
	sh -c '[ "$(stat -f -c %T /sys/fs/bpf)" != bpf_fs ]'
mount -t tmpfs -o size=64m,mode=0755 bm-run /run/burstmeter &&
	mount -t tmpfs -o size=64m,mode=0700 bm-state /var/lib/burstmeter &&
	ip link set lo up
check "the agent's default directories are the test's own (tmpfs), loopback is up" \
	sh -c '[ "$(stat -f -c %T /run/burstmeter)" = tmpfs ] && [ "$(stat -f -c %T /var/lib/burstmeter)" = tmpfs ] &&
	       [ -z "$(ls -A /var/lib/burstmeter)" ] && ip -o link show lo | grep -q "[<,]UP[,>]"'

tmp=$(mktemp -d /tmp/bm-makerun.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
make --no-print-directory run O="$O" >"$tmp/out" 2>"$tmp/err" &
mk=$!

# the agent: make's child once the demo has ended (the recipe line has no shell in between:
# as-root.sh execs burstmeter, which execs bm-agent), healthy on the default socket
agent=""
i=0
while [ $i -lt 600 ] && kill -0 $mk 2>/dev/null; do
	if "$O/burstmeter" health >/dev/null 2>&1; then
		agent=$(ps -o pid= --ppid $mk | tr -d ' ')
		break
	fi
	i=$((i + 1))
	sleep 0.2
done
outcome=$(grep '^{"schema":"burstmeter.outcome/v1"' "$tmp/out" | head -1)
note "demo: $(echo "$outcome" | jq -c '{id, wall: .wall_seconds, exit: .exit, peak_cpu: .peak.cpu_cores, peak_mem: .peak.memory_bytes, windows: .totals.windows}' 2>/dev/null)"
check "the standalone demo ran and printed its outcome (exit 0, metered)" sh -c "
	echo '$outcome' | jq -e '.id == \"demo\" and .exit.code == 0 and .totals.windows > 100 and .peak.cpu_cores > 0.5' >/dev/null"
check "the agent answered burstmeter health on /run/burstmeter/api.sock, $((i / 5)) s after make run began (pid ${agent:-none})" \
	[ -n "$agent" ]
check "the agent mounted a BPF filesystem at /sys/fs/bpf itself and pinned its meter there" \
	sh -c "is_bpffs() { [ \"\$(stat -f -c %T \"\$1\")\" = bpf_fs ]; }; is_bpffs /sys/fs/bpf && [ -d /sys/fs/bpf/burstmeter ]"
check "... and said so" grep -q 'mounted a BPF filesystem at /sys/fs/bpf' "$tmp/err"
[ -n "$agent" ] && kill -INT "$agent"
i=0
while [ $i -lt 150 ] && kill -0 $mk 2>/dev/null; do
	i=$((i + 1))
	sleep 0.1
done
if kill -0 $mk 2>/dev/null; then
	not_ok "make run ends once the agent is sent SIGINT (it did not in 15 s)"
	kill -KILL $mk ${agent:+"$agent"} 2>/dev/null
	wait $mk
else
	wait $mk
	rc=$?
	check "make run ends with status 0 once the agent is sent SIGINT (status $rc)" [ "$rc" = 0 ]
fi
check "the agent stopped cleanly: its pins are gone" sh -c '[ ! -e /sys/fs/bpf/burstmeter ]'
if [ "$failed" != 0 ]; then
	sed 's/^/#   stderr: /' "$tmp/err" | tail -40
fi
echo "1..$n"
echo "# test_make_run: $((n - failed)) passed, $failed failed"
[ "$failed" = 0 ]
