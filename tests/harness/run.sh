#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The harness suites: `burstmeter mcp` under the official MCP TypeScript SDK, the Python and
# TypeScript clients, and the worked example, each against a real agent of its own.
# Usage: tests/harness/run.sh BUILD_DIR [mcp|python|typescript|example]...  (default: all)
# Installs its npm packages into BUILD_DIR/npm (never the source tree). Prints TAP lines.
# Needs root and BTF (the agent): outside CI it skips (exit 77) without them; under CI=true
# that is a failure, as for the integration tests.
set -u

[ $# -ge 1 ] || { echo "usage: tests/harness/run.sh BUILD_DIR [SUITE]..." >&2; exit 2; }
O=$(cd "$1" && pwd) || exit 2
shift
suites=${*:-mcp python typescript example}
src=$(cd "$(dirname "$0")/../.." && pwd)
npm_pkgs="@modelcontextprotocol/sdk@1.32.2 @modelcontextprotocol/client@2.4.0 typescript@5.9.3 @types/node@20"

cant() {
	if [ "${CI:-}" = true ]; then
		echo "not ok 1 - harness: $1 (under CI=true that is a failure)"
		exit 1
	fi
	echo "harness: skipped: $1" >&2
	exit 77
}
[ "$(id -u)" = 0 ] || cant "needs root (the agent loads BPF)"
[ -r /sys/kernel/btf/vmlinux ] || cant "needs BTF (/sys/kernel/btf/vmlinux)"
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || "$src/tools/deps.sh" node ||
	cant "node and npm could not be installed"
command -v python3 >/dev/null 2>&1 || cant "needs python3"
# @modelcontextprotocol/sdk@1 declares node >= 18, @modelcontextprotocol/client@2.4.0 >= 20; the
# suites pass on Debian 12's 18.20 all the same (tools/deps.sh), so below 20 it is said, not refused
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 18 ]; then
	echo "not ok 1 - harness: node $(node --version 2>/dev/null) is too old: the MCP SDKs need node >= 18 (>= 20 declared by @modelcontextprotocol/client)"
	exit 1
fi
[ "$node_major" -ge 20 ] || echo "harness: node $(node --version) is below the >= 20 @modelcontextprotocol/client@2.4.0 declares (the suites pass on 18.20)" >&2

# the packages, once per set of versions, and again if another install pruned one
# (podspec's npm install into the same BUILD_DIR/npm removes what it did not ask for)
stamp="$O/npm/.installed-$(echo "$npm_pkgs" | cksum | cut -d' ' -f1)"
missing=0
for p in $npm_pkgs; do
	[ -f "$O/npm/node_modules/${p%@*}/package.json" ] || missing=1
done
if [ ! -f "$stamp" ] || [ "$missing" = 1 ]; then
	mkdir -p "$O/npm"
	npm install --prefix "$O/npm" --no-audit --no-fund --no-save --loglevel=error $npm_pkgs >&2 ||
		cant "npm install of $npm_pkgs failed"
	touch "$stamp"
fi
# the tests run from BUILD_DIR/harness, where Node finds the packages
mkdir -p "$O/harness"
cp "$src"/tests/harness/*.mjs "$O/harness/"
ln -sfn ../npm/node_modules "$O/harness/node_modules"
export BM_BIN="$O/burstmeter" BM_WORKLOADS="$O/workloads" BM_NPM="$O/npm" BM_SRC="$src"

status=0
for s in $suites; do
	case "$s" in
	mcp) node --test --test-reporter=tap "$O/harness/test_mcp.mjs" || status=1 ;;
	python) python3 "$src/tests/harness/test_python_client.py" || status=1 ;;
	typescript)
		"$O/npm/node_modules/.bin/tsc" -p "$src/clients/typescript/tsconfig.json" \
			--typeRoots "$O/npm/node_modules/@types" --outDir "$O/ts-client" >&2 &&
			cp "$src/clients/typescript/package.json" "$O/ts-client/" &&
			node --test --test-reporter=tap "$O/harness/test_ts_client.mjs" || status=1
		;;
	example) python3 "$src/examples/agent-loop/test_agent_loop.py" || status=1 ;;
	*) echo "tests/harness/run.sh: unknown suite '$s'" >&2; exit 2 ;;
	esac
done
exit $status
