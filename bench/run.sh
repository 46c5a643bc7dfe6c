#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# burstmeter against its peers, side by side, alternated, in one run.
# Usage: bench/run.sh [BUILD_DIR] [SECTION...]    (as root; `make bench` runs it)
#   BUILD_DIR  where `make all` put burstmeter (default: build)
#   SECTION    kcost tput launch kload spikes detect scale neighbours kio (default: all)
#   QUICK=1    smaller loads and fewer rounds: < 2 min instead of < 10 min
# Builds its helpers into BUILD_DIR/bench/, prints one table on stdout (progress
# on stderr). See bench/README.md for how to read it.
set -eu

cd "$(dirname "$0")/.."
B=${1:-build}
[ $# -gt 0 ] && shift
case "$B" in /*) ;; *) B="$PWD/$B" ;; esac

if [ "$(id -u)" != 0 ]; then
	echo "bench: needs root (BPF, cgroups, bpf_stats): run it through tools/as-root.sh" >&2
	exit 1
fi
if [ ! -x "$B/burstmeter" ]; then
	echo "bench: $B/burstmeter is missing: run 'make all' first" >&2
	exit 1
fi
# `make bench` installs the build and test packages; the bench's own come from here
# (libbpf-tools, bubblewrap, stress-ng, linux-perf; a no-op when they are there).
[ -x tools/deps.sh ] && tools/deps.sh bench
for t in clang bpftool gcc python3 perf taskset runqlat stdbuf; do
	command -v $t >/dev/null 2>&1 || [ -x /usr/sbin/$t ] || {
		echo "bench: '$t' is missing: run tools/deps.sh bench" >&2
		exit 1
	}
done
export PATH="$PATH:/usr/sbin:/sbin"

ARCH=$(uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
O="$B/bench"
mkdir -p "$O"
# The empty floor program: its own object and skeleton, not through the top Makefile.
clang -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$ARCH -Wall -Werror \
	-I"vmlinux/$ARCH" -c bench/empty.bpf.c -o "$O/empty.tmp.o"
bpftool gen object "$O/empty.bpf.o" "$O/empty.tmp.o"
bpftool gen skeleton "$O/empty.bpf.o" name empty_bpf > "$O/empty.skel.h"
CFLAGS="-O2 -g -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE"
gcc $CFLAGS -I"$O" $(pkg-config --cflags libbpf 2>/dev/null) bench/empty.c -o "$O/bm-empty" \
	$(pkg-config --libs libbpf 2>/dev/null || echo -lbpf) -lelf -lz
gcc $CFLAGS bench/launch.c -o "$O/bm-launch"
gcc $CFLAGS bench/memspike.c -o "$O/bm-memspike"
gcc $CFLAGS bench/detect.c -o "$O/bm-detect" -lpthread
gcc $CFLAGS bench/pingpong.c -o "$O/bm-pingpong" -lpthread
gcc $CFLAGS bench/cgdrain.c -o "$O/bm-cgdrain"
# the agent's API from C, through the client the front ends use (user/cli/client.c), with
# the flags the top Makefile gives user/ (-Wno-unused-parameter)
gcc $CFLAGS -Wno-unused-parameter -Iuser -Iinclude $(pkg-config --cflags jansson libbpf 2>/dev/null) bench/agentc.c \
	user/cli/client.c user/base/common.c -o "$O/bm-agentc" \
	$(pkg-config --libs jansson libbpf 2>/dev/null || echo -ljansson -lbpf)
for w in bm-sleeper bm-spike; do
	[ -x "$B/workloads/$w" ] || { echo "bench: $B/workloads/$w is missing: run 'make all' first" >&2; exit 1; }
	# static copies for the scale section: 10,000 effects start 10,000 of them, and
	# the dynamic loader's work is the workload's cost, not the agent's
	gcc $CFLAGS -static tests/workloads/$w.c -o "$O/$w-static" -lpthread
done

exec python3 bench/bench.py --build "$B" "$@"
