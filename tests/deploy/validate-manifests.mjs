// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// Validate rendered Kubernetes manifests offline: every object against the Kubernetes
// OpenAPI schema (npm kubernetes-models; the ServiceMonitor against the Prometheus
// Operator CRD's schema, @kubernetes-models/prometheus-operator), then what the agent needs
// from its DaemonSet, checked field by field. TAP lines on stdout.
//
// Usage: node validate-manifests.mjs --version VERSION [--podspec BURSTMETER REQUEST.json]
//          RENDERED.yaml [EXTRA.yaml...]
//        (VERSION: `burstmeter --version`'s, which the images' tag must be;
//        --podspec: the PriorityClasses are the ones `burstmeter podspec` names for priority 1..10)
//        node validate-manifests.mjs --expect-invalid FILE.yaml   (the validator's own check)
// Run with NODE_PATH-free resolution from build/npm (the test copies this file there).
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

const models = {
  "v1/Namespace": ["kubernetes-models/v1", "Namespace"],
  "v1/ConfigMap": ["kubernetes-models/v1", "ConfigMap"],
  "v1/Service": ["kubernetes-models/v1", "Service"],
  "v1/Pod": ["kubernetes-models/v1", "Pod"],
  "apps/v1/DaemonSet": ["kubernetes-models/apps/v1", "DaemonSet"],
  "scheduling.k8s.io/v1/PriorityClass": ["kubernetes-models/scheduling.k8s.io/v1", "PriorityClass"],
  "v1/ServiceAccount": ["kubernetes-models/v1", "ServiceAccount"],
  "rbac.authorization.k8s.io/v1/ClusterRole": ["kubernetes-models/rbac.authorization.k8s.io/v1", "ClusterRole"],
  "rbac.authorization.k8s.io/v1/ClusterRoleBinding": [
    "kubernetes-models/rbac.authorization.k8s.io/v1", "ClusterRoleBinding"],
  "networking.k8s.io/v1/NetworkPolicy": ["kubernetes-models/networking.k8s.io/v1", "NetworkPolicy"],
  "monitoring.coreos.com/v1/ServiceMonitor": [
    "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1", "ServiceMonitor"],
};

let n = 0, failed = 0;
function check(what, ok, why = "") {
  n++;
  if (!ok) failed++;
  console.log(`${ok ? "ok" : "not ok"} ${n} - ${what}${ok || !why ? "" : ` (${why})`}`);
}

function load(file) {
  return parseAllDocuments(readFileSync(file, "utf8"))
    .map((d) => d.toJS())
    .filter((o) => o);
}

async function validate(obj) {
  const key = `${obj.apiVersion}/${obj.kind}`;
  const m = models[key];
  if (!m) return `no schema known for ${key}`;
  const mod = await import(m[0]);
  try {
    new mod[m[1]](obj).validate();
    return "";
  } catch (e) {
    return String(e.message).split("\n")[0];
  }
}

let args = process.argv.slice(2);
let version = "";
if (args[0] === "--version") {
  version = args[1] || "";
  args = args.slice(2);
}
let podspec = null;
if (args[0] === "--podspec") podspec = args.splice(0, 3).slice(1);
if (args[0] === "--expect-invalid") {
  // a broken object must be refused, or the checks above prove nothing
  for (const o of load(args[1])) {
    const why = await validate(o);
    check(`the validator refuses a broken ${o.kind} (${why || "it passed"})`, why !== "");
  }
  process.exit(failed ? 1 : 0);
}

const objs = args.flatMap(load);
for (const o of objs) {
  const why = await validate(o);
  check(`${o.kind} ${o.metadata?.name} passes the ${o.kind === "ServiceMonitor" ? "Prometheus Operator CRD" : "Kubernetes OpenAPI"} schema`, why === "", why);
}

const find = (kind, name) => objs.find((o) => o.kind === kind && (!name || o.metadata?.name === name));
const ns = find("Namespace"), ds = find("DaemonSet", "burstmeter-agent"), cm = find("ConfigMap");
const svc = find("Service"), sm = find("ServiceMonitor"), np = find("NetworkPolicy");
check("one each: Namespace, DaemonSet, ConfigMap, Service, ServiceMonitor, NetworkPolicy",
  ns && ds && cm && svc && sm && np);
if (!(ns && ds && cm && svc && sm && np)) {
  console.log(`# validate-manifests: ${n - failed} passed, ${failed} failed`);
  process.exit(1);
}
const pod = ds.spec.template.spec;
const agent = pod.containers.find((c) => c.name === "agent");
const init = (pod.initContainers || []).find((c) => c.name === "preflight");
const labels = ds.spec.template.metadata.labels;
const sub = (sel, l) => Object.entries(sel || {}).every(([k, v]) => l?.[k] === v);

check("the namespace is labelled for privileged Pod Security",
  ns.metadata.labels?.["pod-security.kubernetes.io/enforce"] === "privileged");
check("every object is in that namespace",
  objs.filter((o) => !["Namespace", "Pod", "PriorityClass", "ClusterRole", "ClusterRoleBinding"].includes(o.kind)).every((o) => o.metadata.namespace === ns.metadata.name));
check("hostPID, pod network (not hostNetwork)", pod.hostPID === true && !pod.hostNetwork);
check("system-node-critical", pod.priorityClassName === "system-node-critical");
check("tolerates every taint", (pod.tolerations || []).some((t) => t.operator === "Exists" && !t.key && !t.effect));
check("RollingUpdate, one node at a time, no surge (one agent per node)",
  ds.spec.updateStrategy?.type === "RollingUpdate" && ds.spec.updateStrategy.rollingUpdate?.maxSurge === 0);
check("the selector matches the pod template", sub(ds.spec.selector.matchLabels, labels));

const vol = (name) => pod.volumes.find((v) => v.name === name);
const mountOf = (c, path) => (c?.volumeMounts || []).find((m) => m.mountPath === path);
const hostPath = (c, path) => vol(mountOf(c, path)?.name)?.hostPath?.path;
check("/sys/fs/bpf: the node's, Bidirectional in the privileged init step, HostToContainer in the agent",
  hostPath(init, "/sys/fs/bpf") === "/sys/fs/bpf" && mountOf(init, "/sys/fs/bpf").mountPropagation === "Bidirectional" &&
  init.securityContext?.privileged === true && hostPath(agent, "/sys/fs/bpf") === "/sys/fs/bpf" &&
  ["HostToContainer", "Bidirectional"].includes(mountOf(agent, "/sys/fs/bpf").mountPropagation));
check("/sys/fs/cgroup: the node's", hostPath(agent, "/sys/fs/cgroup") === "/sys/fs/cgroup");
check("/sys/kernel/btf: the node's, read-only",
  hostPath(agent, "/sys/kernel/btf") === "/sys/kernel/btf" && mountOf(agent, "/sys/kernel/btf").readOnly === true);
check("/run/burstmeter (the API socket) and /var/lib/burstmeter (the state) are hostPaths",
  hostPath(agent, "/run/burstmeter") === "/run/burstmeter" && hostPath(agent, "/var/lib/burstmeter") === "/var/lib/burstmeter");
check("the init step is burstmeter agent --preflight", init?.args?.includes("--preflight") && init.args[0] === "agent");
const probe = (p) => p?.exec?.command?.join(" ") === "/usr/local/bin/burstmeter health";
check("liveness and readiness probes exec burstmeter health", probe(agent.livenessProbe) && probe(agent.readinessProbe));
check("requests and limits for CPU and memory",
  ["cpu", "memory"].every((r) => agent.resources?.requests?.[r] && agent.resources?.limits?.[r]));
const caps = agent.securityContext?.capabilities;
check("the agent: privileged, or ALL dropped and SYS_ADMIN added",
  agent.securityContext?.privileged === true || (caps?.drop?.includes("ALL") && caps?.add?.includes("SYS_ADMIN")));
check("/metrics on the pod's own address, port named metrics",
  agent.args.join(" ").includes("--metrics $(POD_IP):9477") &&
  agent.env.some((e) => e.name === "POD_IP" && e.valueFrom?.fieldRef?.fieldPath === "status.podIP") &&
  agent.ports.some((p) => p.name === "metrics" && p.containerPort === 9477));

// kustomization.yaml's newTag is the version make image tags the image with: every container
// and init step of every DaemonSet here runs that image
const tags = objs.filter((o) => o.kind === "DaemonSet")
  .flatMap((d) => [...d.spec.template.spec.containers, ...(d.spec.template.spec.initContainers || [])])
  .map((c) => String(c.image).split(":").pop());
check(`every DaemonSet container's image tag is burstmeter --version's (${version || "not given"})`,
  version !== "" && tags.length > 0 && tags.every((t) => t === version), `tags ${tags.join(", ")}`);

const cfgVol = vol("config")?.configMap?.name;
check("the ConfigMap the pod mounts is the generated one", cfgVol === cm.metadata.name);
check("the ConfigMap has agent.yaml (cgroup_parent, policy) and policy.yaml",
  /^cgroup_parent: \//m.test(cm.data?.["agent.yaml"] || "") &&
  /^policy: \/etc\/burstmeter\/policy.yaml/m.test(cm.data["agent.yaml"]) && cm.data["policy.yaml"]);
check("the Service selects the agent pods, headless, port metrics",
  sub(svc.spec.selector, labels) && svc.spec.clusterIP === "None" &&
  svc.spec.ports.some((p) => p.name === "metrics" && p.targetPort === "metrics"));
check("the ServiceMonitor selects the Service and scrapes /metrics on its port",
  sub(sm.spec.selector.matchLabels, svc.metadata.labels) &&
  sm.spec.namespaceSelector?.matchNames?.includes(ns.metadata.name) &&
  sm.spec.endpoints.some((e) => e.port === "metrics" && e.path === "/metrics"));
check("the NetworkPolicy takes the agent pods, lets only the metrics port in, nothing out",
  sub(np.spec.podSelector.matchLabels, labels) && np.spec.policyTypes.includes("Ingress") &&
  np.spec.policyTypes.includes("Egress") && (np.spec.egress || []).length === 0 &&
  np.spec.ingress.every((r) => r.ports.every((p) => p.port === "metrics")));

// --- pod_tenants: kept by podtenants' DaemonSet on a hostPath the agent mounts read-only
const pt = find("DaemonSet", "burstmeter-podtenants");
const ptPod = pt?.spec.template.spec, ptc = ptPod?.containers?.[0];
const ptFile = (cm.data["agent.yaml"].match(/^pod_tenants: (\S+)/m) || [])[1] || "";
const ptDir = ptFile.replace(/\/[^/]+$/, "");
const ptVol = (p, c) => p?.volumes?.find((v) => v.name === (c?.volumeMounts || []).find((m) => m.mountPath === ptDir)?.name);
const ptOut = ptc?.args?.[ptc.args.indexOf("--out") + 1];
check("pod_tenants is on a hostPath (not the ConfigMap), the agent's mount read-only",
  ptDir !== "" && !ptDir.startsWith("/etc/burstmeter") && ptVol(pod, agent)?.hostPath?.path === ptDir &&
  mountOf(agent, ptDir).readOnly === true, `pod_tenants: ${ptFile}`);
check("burstmeter podtenants writes that file, on the same hostPath, from a watch of its node's pods",
  ptc?.args?.[0] === "podtenants" && ptOut === ptFile && ptVol(ptPod, ptc)?.hostPath?.path === ptDir &&
  ptc.args.includes("--watch") && ptc.args.some((a) => a === "--field-selector=spec.nodeName=$(NODE_NAME)") &&
  ptc.env?.some((e) => e.name === "NODE_NAME" && e.valueFrom?.fieldRef?.fieldPath === "spec.nodeName"));
const role = find("ClusterRole", "burstmeter-podtenants"), bind = find("ClusterRoleBinding", "burstmeter-podtenants");
check("its ClusterRole only reads pods, bound to its ServiceAccount; the agent's pods are not its",
  role?.rules?.length === 1 && role.rules[0].resources.join() === "pods" &&
  role.rules[0].verbs.every((v) => ["get", "list", "watch"].includes(v)) &&
  bind?.subjects?.some((x) => x.kind === "ServiceAccount" && x.name === ptPod?.serviceAccountName &&
    x.namespace === ns.metadata.name) &&
  !sub(np.spec.podSelector.matchLabels, pt.spec.template.metadata.labels) && !pod.serviceAccountName);

// --- the classes the runs' pods name: three, below the agent's, each one podspec names
const classes = objs.filter((o) => o.kind === "PriorityClass");
const sysNodeCritical = 2000001000, userMax = 1000000000;
check("PriorityClasses: burstmeter-low < -normal < -high, all <= 1000000000 (user classes), below system-node-critical",
  classes.length === 3 && ["burstmeter-low", "burstmeter-normal", "burstmeter-high"].every((name, i, a) => {
    const c = classes.find((x) => x.metadata.name === name);
    const prev = i && classes.find((x) => x.metadata.name === a[i - 1]);
    return c && c.value <= userMax && c.value < sysNodeCritical && (!prev || prev.value < c.value) &&
      !c.globalDefault && !c.metadata.namespace;
  }), classes.map((c) => `${c.metadata.name}=${c.value}`).join(" "));
check("PriorityClasses: low and normal never preempt; high preempts only lower classes",
  classes.every((c) => (c.metadata.name === "burstmeter-high" ? "PreemptLowerPriority" : "Never") ===
    (c.preemptionPolicy || "PreemptLowerPriority")));
if (podspec) {
  const [bin, reqFile] = podspec;
  const req = JSON.parse(readFileSync(reqFile, "utf8"));
  const named = new Set(), missing = [];
  for (let p = 1; p <= 10; p++) {
    const out = execFileSync(bin, ["podspec", "--json", "-"],
      { input: JSON.stringify({ ...req, priority: p }), encoding: "utf8" });
    const name = JSON.parse(out).items[0].spec.priorityClassName;
    named.add(name);
    if (!classes.some((c) => c.metadata.name === name)) missing.push(`${p}: ${name}`);
  }
  check(`burstmeter podspec names, for priority 1..10, only classes defined here (${[...named].join(", ")})`,
    missing.length === 0 && named.size === classes.length, `not defined: ${missing.join(", ")}`);
}

const sandbox = objs.find((o) => o.kind === "Pod");
if (sandbox) {
  const c = sandbox.spec.containers[0];
  const v = sandbox.spec.volumes.find((x) => x.name === c.volumeMounts?.find((m) => m.mountPath === "/run/burstmeter")?.name);
  check("the example sandbox pod mounts the node's /run/burstmeter read-only",
    v?.hostPath?.path === "/run/burstmeter" && c.volumeMounts.find((m) => m.mountPath === "/run/burstmeter").readOnly === true);
}
console.log(`# validate-manifests: ${n - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
