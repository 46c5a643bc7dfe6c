#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# `burstmeter podspec`'s Pods and NetworkPolicies against the Kubernetes OpenAPI schema,
# offline (tests/k8s/podspec-schema.mjs says what is checked). npm's kubernetes-models and
# yaml are installed into BUILD_DIR/npm by this script, never into the source tree; node and
# npm themselves by tools/deps.sh node where either is missing.
# Usage: tests/k8s/podspec-schema.sh BUILD_DIR   (TAP on stdout; exit 77: skipped)
set -u
O=${1:?usage: tests/k8s/podspec-schema.sh BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
npm_dir=$O/npm
pkgs="kubernetes-models@5.1.0 yaml@2.9.1"

skip() {
	if [ "${CI:-}" = true ]; then
		echo "not ok 1 - $* (under CI=true a skip is a failure)"
		exit 1
	fi
	echo "1..0 # SKIP $*"
	exit 77
}

# a fresh machine: installed as the harness suites install them (tools/deps.sh node)
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || "$src/tools/deps.sh" node ||
	skip "node and npm could not be installed (tools/deps.sh node)"
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 ||
	skip "node and npm are not on PATH after tools/deps.sh node"
[ -x "$O/burstmeter" ] || { echo "not ok 1 - $O/burstmeter is not built"; exit 1; }
mkdir -p "$npm_dir" || exit 1
# installed once per build dir, again only when a version here changes
have=$(cd "$npm_dir" && node -e 'for (const p of process.argv.slice(1)) {
	const [n, v] = p.split(/@(?=[^@]*$)/);
	try { if (require(`./node_modules/${n}/package.json`).version !== v) process.exit(1); }
	catch { process.exit(1); } }' $pkgs && echo yes)
if [ "$have" != yes ]; then
	echo "# installing $pkgs into $npm_dir"
	npm install --prefix "$npm_dir" --no-audit --no-fund --no-save --loglevel=error $pkgs \
		>"$npm_dir/install.log" 2>&1 ||
		{ echo "not ok 1 - npm install $pkgs failed:"; sed 's/^/# /' "$npm_dir/install.log"; exit 1; }
fi
# run from the install dir: an ES module finds its packages from where it lies
cp "$src/tests/k8s/podspec-schema.mjs" "$npm_dir/" || exit 1
bin=$(cd "$O" && pwd)/burstmeter
cd "$npm_dir" && exec node podspec-schema.mjs "$bin" "$src/tests/fixtures/pods/spec" \
	"$(pwd)/node_modules"
