// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The Pod and NetworkPolicy of one agent run (podspec.h). Everything the
 * request could get wrong was refused by bm_run_request_parse(); what is
 * left here is layout. json_pack() steals its "o" arguments even when it
 * fails, so a NULL anywhere comes out as one NULL at the top (ENOMEM).
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config.h"
#include "agent/podspec.h"
#include "agent/request.h"
#include "base/common.h"

#define LABEL_TENANT "burstmeter.io/tenant"
#define LABEL_AGENT "burstmeter.io/agent"
#define LABEL_RUN "burstmeter.io/run"

const char *bm_podspec_priority_class(int priority)
{
	return priority <= 3 ? "burstmeter-low" : priority <= 7 ? "burstmeter-normal"
								 : "burstmeter-high";
}

char *bm_k8s_cpu(uint64_t milli, char *buf, size_t len)
{
	if (milli % 1000)
		snprintf(buf, len, "%llum", (unsigned long long)milli);
	else
		snprintf(buf, len, "%llu", (unsigned long long)(milli / 1000));
	return buf;
}

/* bytes as mantissa + suffix in the largest unit of units (powers of base) that divides them */
static int k8s_unit(uint64_t bytes, uint64_t base, const char *const *units, unsigned int n,
		    uint64_t *mant)
{
	uint64_t div = 1;
	int best = -1;
	unsigned int i;

	for (i = 0; bytes && i < n && div <= UINT64_MAX / base; i++) {
		div *= base;
		if (bytes % div)
			break;
		best = (int)i;
		*mant = bytes / div;
	}
	return best;
}

char *bm_k8s_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const bin[] = { "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
	static const char *const dec[] = { "k", "M", "G", "T", "P", "E" };
	uint64_t mb = 0, md = 0;
	int b = k8s_unit(bytes, 1024, bin, BM_ARRAY_SIZE(bin), &mb);
	int d = k8s_unit(bytes, 1000, dec, BM_ARRAY_SIZE(dec), &md);

	/* decimal from M up, where it is shorter ("2G", not "1953125Ki"); else binary, or plain */
	if (d >= 1 && (b < 0 || md < mb))
		snprintf(buf, len, "%llu%s", (unsigned long long)md, dec[d]);
	else if (b >= 0)
		snprintf(buf, len, "%llu%s", (unsigned long long)mb, bin[b]);
	else
		snprintf(buf, len, "%llu", (unsigned long long)bytes);
	return buf;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The request's labels and ours, sorted by key: the request's cannot be ours (reserved). */
static json_t *pod_labels(const struct bm_run_request *r)
{
	const char *keys[BM_REQ_MAX_LABELS + 3], *key;
	json_t *all, *o = json_object(), *v;
	size_t n = 0, i;

	all = json_pack("{s:s, s:s, s:s}", LABEL_TENANT, r->tenant_id, LABEL_AGENT, r->agent_id,
			LABEL_RUN, r->run_id);
	if (!all || json_object_update(all, r->labels))
		goto fail;
	json_object_foreach(all, key, v)
		if (n < BM_ARRAY_SIZE(keys))
			keys[n++] = key;
	qsort(keys, n, sizeof(*keys), cmp_str);
	for (i = 0; o && i < n; i++)
		if (json_object_set(o, keys[i], json_object_get(all, keys[i])))
			goto fail;
	json_decref(all);
	return o;
fail:
	json_decref(all);
	json_decref(o);
	return NULL;
}

static json_t *metadata(const char *name, const struct bm_podspec_opts *o, json_t *labels)
{
	return json_pack("{s:s, s:s*, s:o}", "name", name, "namespace", o->namespace, "labels",
			 labels);
}

/* BURSTMETER_SOCKET first, then the request's variables in its order. */
static json_t *env_list(const struct bm_run_request *r, const char *socket_name)
{
	char path[PATH_MAX];
	const char *key;
	json_t *a, *v;

	snprintf(path, sizeof(path), "%s/%s", BM_POD_SOCKET_DIR, socket_name);
	a = json_pack("[{s:s, s:s}]", "name", BM_RUN_SOCKET_ENV, "value", path);
	json_object_foreach(r->env, key, v) {
		if (!a || json_array_append_new(a, json_pack("{s:s, s:O}", "name", key, "value",
							     v))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *resources(const struct bm_sandbox *s)
{
	char rc[32], rm[32], lc[32], lm[32];

	return json_pack("{s:{s:s, s:s}, s:{s:s, s:s}}",
			 "requests", "cpu", bm_k8s_cpu(s->cpu_request_milli, rc, sizeof(rc)),
			 "memory", bm_k8s_bytes(s->memory_request, rm, sizeof(rm)),
			 "limits", "cpu", bm_k8s_cpu(s->cpu_limit_milli, lc, sizeof(lc)),
			 "memory", bm_k8s_bytes(s->memory_limit, lm, sizeof(lm)));
}

static json_t *container(const struct bm_run_request *r, const char *socket_name)
{
	return json_pack("{s:s, s:s, s:O*, s:s, s:o, s:o, s:{s:b, s:b, s:b, s:{s:[s]}}, "
			 "s:[{s:s, s:s}, {s:s, s:s}, {s:s, s:s, s:b}]}",
			 "name", BM_POD_CONTAINER, "image", r->image, "command", r->command,
			 "workingDir", BM_POD_WORKSPACE, "env", env_list(r, socket_name),
			 "resources", resources(&r->sandbox),
			 "securityContext", "allowPrivilegeEscalation", 0,
			 "readOnlyRootFilesystem", 1, "runAsNonRoot", 1,
			 "capabilities", "drop", "ALL",
			 "volumeMounts", "name", "workspace", "mountPath", BM_POD_WORKSPACE,
			 "name", "tmp", "mountPath", "/tmp",
			 "name", "burstmeter-socket", "mountPath", BM_POD_SOCKET_DIR,
			 "readOnly", 1);
}

static json_t *volumes(const struct bm_run_request *r, const char *socket_dir)
{
	char ws[32], tmp[32];

	return json_pack("[{s:s, s:{s:s}}, {s:s, s:{s:s}}, {s:s, s:{s:s, s:s}}]",
			 "name", "workspace", "emptyDir", "sizeLimit",
			 bm_k8s_bytes(r->workspace_bytes, ws, sizeof(ws)),
			 "name", "tmp", "emptyDir", "sizeLimit",
			 bm_k8s_bytes(r->sandbox.max_ephemeral_storage, tmp, sizeof(tmp)),
			 "name", "burstmeter-socket", "hostPath", "path", socket_dir,
			 "type", "Directory");
}

static json_t *pod_security(const struct bm_podspec_opts *o)
{
	json_t *sc = json_pack("{s:b, s:i, s:i, s:i, s:{s:s}}", "runAsNonRoot", 1,
			       "runAsUser", BM_POD_UID, "runAsGroup", BM_POD_UID,
			       "fsGroup", BM_POD_UID, "seccompProfile", "type", "RuntimeDefault");

	if (sc && o->socket_gid >= 0 &&
	    json_object_set_new(sc, "supplementalGroups", json_pack("[I]", o->socket_gid))) {
		json_decref(sc);
		return NULL;
	}
	return sc;
}

static json_t *pod(const struct bm_run_request *r, const struct bm_podspec_opts *o)
{
	const char *sock = o->agent_socket ? o->agent_socket : BM_AGENT_SOCKET;
	char dir[PATH_MAX], base[PATH_MAX];
	/* whole seconds, rounded up: the deadline is never shorter than asked */
	json_int_t deadline = (json_int_t)((r->sandbox.timeout_ns + BM_NSEC_PER_SEC - 1) /
					   BM_NSEC_PER_SEC);

	snprintf(dir, sizeof(dir), "%s", sock);
	snprintf(base, sizeof(base), "%s", sock);
	return json_pack("{s:s, s:s, s:o, s:{s:s, s:s, s:I, s:b, s:b, s:o, s:[o], s:o}}",
			 "apiVersion", "v1", "kind", "Pod",
			 "metadata", metadata(r->run_id, o, pod_labels(r)),
			 "spec", "priorityClassName", bm_podspec_priority_class(r->priority),
			 "restartPolicy", "Never", "activeDeadlineSeconds", deadline,
			 "automountServiceAccountToken", 0, "enableServiceLinks", 0,
			 "securityContext", pod_security(o),
			 "containers", container(r, basename(base)),
			 "volumes", volumes(r, dirname(dir)));
}

/* To the kube-dns pods only: a name lookup goes nowhere else. */
static json_t *dns_rule(void)
{
	return json_pack("{s:[{s:{s:{s:s}}, s:{s:{s:s}}}], s:[{s:s, s:i}, {s:s, s:i}]}",
			 "to", "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name",
			 "kube-system", "podSelector", "matchLabels", "k8s-app", "kube-dns",
			 "ports", "protocol", "UDP", "port", 53, "protocol", "TCP", "port", 53);
}

static json_t *cidr_rule(const struct bm_cidr *c, unsigned int n)
{
	char buf[BM_CIDR_STRLEN];
	json_t *to = json_array();
	unsigned int i;

	for (i = 0; to && i < n; i++)
		if (bm_cidr_format(&c[i], buf, sizeof(buf)) ||
		    json_array_append_new(to, json_pack("{s:{s:s}}", "ipBlock", "cidr", buf))) {
			json_decref(to);
			return NULL;
		}
	return json_pack("{s:o}", "to", to);
}

static json_t *netpol(const struct bm_run_request *r, const struct bm_podspec_opts *o)
{
	const struct bm_sandbox *s = &r->sandbox;
	char name[BM_K8S_LABEL_MAX + 16];
	json_t *np, *egress = NULL;

	snprintf(name, sizeof(name), "%s-egress", r->run_id);
	if (s->network_policy == BM_NET_EGRESS_RESTRICTED && o->n_cluster_cidrs)
		egress = json_pack("[o, o]", dns_rule(),
				   cidr_rule(o->cluster_cidrs, o->n_cluster_cidrs));
	else if (s->network_policy == BM_NET_EGRESS_RESTRICTED)
		egress = json_pack("[o]", dns_rule());
	else if (s->network_policy == BM_NET_EGRESS_ALLOW_LIST)
		egress = json_pack("[o, o]", dns_rule(), cidr_rule(s->cidrs, s->n_cidrs));
	if (s->network_policy != BM_NET_NONE && !egress)
		return NULL;
	/* no egress rule at all, with policyTypes Egress: nothing leaves (none) */
	np = json_pack("{s:s, s:s, s:o, s:{s:{s:{s:s}}, s:[s], s:o*}}",
		       "apiVersion", "networking.k8s.io/v1", "kind", "NetworkPolicy",
		       "metadata", metadata(name, o, json_pack("{s:s, s:s, s:s}", LABEL_AGENT,
							       r->agent_id, LABEL_RUN, r->run_id,
							       LABEL_TENANT, r->tenant_id)),
		       "spec", "podSelector", "matchLabels", LABEL_RUN, r->run_id,
		       "policyTypes", "Egress", "egress", egress);
	return np;
}

json_t *bm_podspec_build(const struct bm_run_request *r, const struct bm_podspec_opts *o)
{
	json_t *list = json_pack("{s:s, s:s, s:[o]}", "apiVersion", "v1", "kind", "List", "items",
				 pod(r, o));
	json_t *items = json_object_get(list, "items");

	if (list && r->sandbox.network_policy != BM_NET_FULL &&
	    json_array_append_new(items, netpol(r, o))) {
		json_decref(list);
		list = NULL;
	}
	if (!list)
		errno = ENOMEM;
	return list;
}
