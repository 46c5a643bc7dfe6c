#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# deploy/kubernetes, offline: `kubectl kustomize` renders it; every object passes the
# Kubernetes OpenAPI schema (npm kubernetes-models, installed into BUILD_DIR/npm) and the
# ServiceMonitor its CRD's (@kubernetes-models/prometheus-operator); the DaemonSet has what
# the agent needs (tests/deploy/validate-manifests.mjs), the PriorityClasses are the ones
# `burstmeter podspec` names; the validator refuses a broken
# object; and the ConfigMap's agent.yaml and policy.yaml are what the agent accepts: its
# init step (burstmeter agent --preflight) passes with them, its paths moved to this test's.
# TAP output.
#
# Usage: tests/deploy/test_kubernetes.sh [BUILD_DIR]   (or $BM_BUILD; default build)
set -u

O=${1:-${BM_BUILD:-build}}
n=0
failed=0
tmp=""
id=bmk8s-$$

ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
check() { _what=$1; shift; if "$@"; then ok "$_what"; else not_ok "$_what"; fi; }
# tap_of COMMAND...: the command's own TAP lines, renumbered into ours
tap_of() {
	out=$("$@" 2>&1)
	rc=$?
	echo "$out" | while IFS= read -r l; do
		case $l in
		"ok "*|"not ok "*) echo "$l" ;;
		*) echo "# $l" ;;
		esac
	done >"$tmp/tap"
	while IFS= read -r l; do
		case $l in
		"ok "*) ok "${l#ok * - }" ;;
		"not ok "*) not_ok "${l#not ok * - }" ;;
		*) echo "$l" ;;
		esac
	done <"$tmp/tap"
	return $rc
}

tools/deps.sh deploy || { echo "not ok 1 - tools/deps.sh deploy failed"; exit 1; }
tmp=$(mktemp -d /tmp/bm-k8s.XXXXXX)
cleanup() {
	# what --preflight made: the test's cgroup_parent in every hierarchy
	if [ -n "$tmp" ] && [ -f "$tmp/made" ]; then
		sort -r "$tmp/made" | while read -r d; do rmdir "$d" 2>/dev/null; done
	fi
	[ -n "$tmp" ] && rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT PIPE TERM

# --- render
if kubectl kustomize deploy/kubernetes >"$tmp/rendered.yaml" 2>"$tmp/err"; then
	ok "kubectl kustomize deploy/kubernetes renders ($(grep -c '^kind:' "$tmp/rendered.yaml") objects)"
else
	not_ok "kubectl kustomize deploy/kubernetes renders: $(head -1 "$tmp/err")"
fi

# --- the schemas: npm packages into the build directory, once
npm=$O/npm
if [ ! -d "$npm/node_modules/@kubernetes-models/prometheus-operator" ] || [ ! -d "$npm/node_modules/yaml" ]; then
	npm install --prefix "$npm" --no-audit --no-fund --loglevel=error \
		kubernetes-models@5 @kubernetes-models/prometheus-operator@6 yaml@2 >"$tmp/npm.log" 2>&1
fi
check "npm kubernetes-models and @kubernetes-models/prometheus-operator are installed in $npm" \
	test -d "$npm/node_modules/kubernetes-models" -a -d "$npm/node_modules/@kubernetes-models/prometheus-operator"
# resolved from $npm: the script runs from there
cp tests/deploy/validate-manifests.mjs "$npm/validate-manifests.mjs"
version=$("$O/burstmeter" --version | awk '{print $2}')
tap_of node "$npm/validate-manifests.mjs" --version "$version" --podspec "$(cd "$O" && pwd)/burstmeter" \
	"$(pwd)/tests/fixtures/pods/spec/seed.request.json" "$tmp/rendered.yaml" \
	deploy/kubernetes/examples/sandbox-pod.yaml
check "validate-manifests passed" [ "$rc" = 0 ]

# --- the validator refuses what the API server would: a wrong type, a missing field
cat >"$tmp/broken.yaml" <<'EOF'
apiVersion: apps/v1
kind: DaemonSet
metadata: { name: broken }
spec:
  selector: { matchLabels: { a: b } }
  template:
    metadata: { labels: { a: b } }
    spec:
      hostPID: "yes"
      containers: [{ name: agent, image: x }]
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: { name: broken }
spec:
  endpoints: [{ port: metrics, interval: 15 }]
---
apiVersion: v1
kind: Service
metadata: { name: broken }
spec:
  ports: [{ name: metrics }]
EOF
tap_of node "$npm/validate-manifests.mjs" --expect-invalid "$tmp/broken.yaml"

# --- the ConfigMap's files, as the agent reads them: its init step with them
awk '/^  agent.yaml: \|/ { on = 1; next } on && !/^    / && !/^$/ { on = 0 } on { sub(/^    /, ""); print }' \
	"$tmp/rendered.yaml" >"$tmp/agent.yaml"
awk '/^  policy.yaml: \|/ { on = 1; next } on && !/^    / && !/^$/ { on = 0 } on { sub(/^    /, ""); print }' \
	"$tmp/rendered.yaml" >"$tmp/policy.yaml"
check "the rendered ConfigMap carries agent.yaml and policy.yaml" \
	sh -c "grep -q '^cgroup_parent:' '$tmp/agent.yaml' && grep -q '^defaults:' '$tmp/policy.yaml'"
if [ "$(id -u)" = 0 ] && [ -r /sys/kernel/btf/vmlinux ]; then
	# our own cgroup: the deepest of ours, when it holds the others (tests make none elsewhere)
	base=""
	for p in $(cut -d: -f3- /proc/self/cgroup); do [ ${#p} -gt ${#base} ] && base=$p; done
	for p in $(cut -d: -f3- /proc/self/cgroup); do case $base/ in "${p%/}"/*) ;; *) base=/ ;; esac; done
	parent=${base%/}/$id
	# every directory --preflight may make, shallowest first, for cleanup to remove what is new
	for m in $(awk '{ for (s = 1; $s != "-"; s++) ; if ($(s + 1) ~ /^cgroup2?$/) print $5 }' /proc/self/mountinfo); do
		d=$m
		rest=${parent#/}
		while [ -n "$rest" ]; do
			d=$d/${rest%%/*}
			[ -d "$d" ] || echo "$d" >>"$tmp/made"
			case $rest in */*) rest=${rest#*/} ;; *) rest="" ;; esac
		done
	done
	sed -e "s|^cgroup_parent: .*|cgroup_parent: $parent|" -e "s|^policy: .*|policy: $tmp/policy.yaml|" \
		-e "s|^pin_dir: .*|pin_dir: /sys/fs/bpf/$id|" -e "s|^state_dir: .*|state_dir: $tmp/state|" \
		-e "s|^socket: .*|socket: $tmp/api.sock|" "$tmp/agent.yaml" >"$tmp/agent-test.yaml"
	check "burstmeter agent --preflight accepts the ConfigMap's agent.yaml and policy.yaml" \
		"$O/burstmeter" agent --config "$tmp/agent-test.yaml" --preflight
	check "... and made the effects' parent cgroup on the node's hierarchy" \
		[ -d "$(awk '{ for (s = 1; $s != "-"; s++) ; if ($(s + 1) == "cgroup2") { print $5; exit } }' /proc/self/mountinfo)$parent" ]
	# a bad cgroup_parent: one line naming it, exit 125, nothing made
	printf 'cgroup_parent: relative/path\n' >"$tmp/bad.yaml"
	out=$("$O/burstmeter" agent --config "$tmp/bad.yaml" --preflight 2>&1)
	rc=$?
	check "a relative cgroup_parent is refused: exit 125, one line ($out)" \
		test "$rc" = 125 -a "$(echo "$out" | wc -l)" = 1 -a -n "$(echo "$out" | grep "cgroup_parent 'relative/path'")"
elif [ "${CI:-}" = true ]; then
	not_ok "burstmeter agent --preflight with the ConfigMap's files needs root and BTF (CI=true: no skip)"
else
	echo "# SKIP burstmeter agent --preflight with the ConfigMap's files: needs root and BTF"
fi

echo "# test_kubernetes: $((n - failed)) passed, $failed failed"
[ "$failed" = 0 ]
