#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Install the Debian 12 packages burstmeter needs, if any is missing.
# Usage: tools/deps.sh [build|test|bench|node|deploy]...   (default: build test)
set -eu

build="make gcc clang llvm pkg-config libbpf-dev bpftool libelf-dev zlib1g-dev libjansson-dev libcyaml-dev libyaml-dev libsqlite3-dev libmicrohttpd-dev libncurses-dev"
test="libcmocka-dev libclang-rt-14-dev qemu-system-x86 busybox-static cpio iproute2 libxml2-utils librsvg2-bin python3-prometheus-client tmux prometheus"
bench="libbpf-tools bubblewrap stress-ng linux-perf util-linux"
# the harness tests' (tests/harness/run.sh asks for it only where node or npm is missing).
# Debian 12's nodejs is 18.20; @modelcontextprotocol/client@2.4.0 declares node >= 20, yet every
# harness suite passes on 18.20.4 (checked 2026-12-02); run.sh refuses a node below 18 (the sdk's)
node="nodejs npm"
# make image and tests/deploy: the image (buildah, podman, runc: crun refuses hybrid cgroups), the manifests
deploy="buildah podman runc jq curl kubectl nodejs python3-yaml"

want=""
for set in ${@:-build test}; do
	case "$set" in
	build) want="$want $build" ;;
	test) want="$want $test" ;;
	bench) want="$want $build $bench" ;;
	node) want="$want $node" ;;
	deploy) want="$want $deploy" ;;
	*) echo "burstmeter: unknown package set '$set' (build, test, bench, node, deploy)" >&2; exit 2 ;;
	esac
done

missing=""
for p in $want; do
	dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

echo "burstmeter: installing$missing" >&2
if [ "$(id -u)" = 0 ]; then
	run=""
elif command -v sudo >/dev/null 2>&1; then
	run="sudo"
else
	echo "burstmeter: root is needed to install$missing (no sudo here): run 'make deps' as root" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# a fresh machine may have no package lists yet; refresh only when install fails
$run apt-get install -y -q --no-install-recommends $missing >/dev/null ||
	{ $run apt-get update -q >/dev/null && $run apt-get install -y -q --no-install-recommends $missing >/dev/null; }
