/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One agent run as Kubernetes objects: the Pod (the run's blast radius:
 * requests = what it is scheduled by, limits = what it may burst to, a
 * deadline, hardened, no API token) and the NetworkPolicy of its network
 * policy. The tool calls inside the pod go to the node's agent through
 * its socket, mounted from the host. Pure: a request in, JSON out.
 *
 * priorityClassName by priority: 1-3 burstmeter-low, 4-7 burstmeter-normal,
 * 8-10 burstmeter-high (deploy/kubernetes/priorityclasses.yaml defines them).
 * network_policy: none -> all egress denied; egress_restricted -> DNS
 * (kube-dns pods in kube-system, UDP and TCP 53) and the cluster CIDRs of
 * the options (pod CIDRs: most plugins check policy after service translation); egress_allow_list -> DNS and the request's CIDRs; full ->
 * no NetworkPolicy.
 */
#ifndef BM_PODSPEC_H
#define BM_PODSPEC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/run_request.h"
#include "base/cidr.h"

#define BM_POD_UID 65532		/* runAsUser, runAsGroup, fsGroup: distroless' "nonroot" */
#define BM_POD_CONTAINER "agent"
#define BM_POD_WORKSPACE "/workspace"
#define BM_POD_SOCKET_DIR "/run/burstmeter"	/* where the pod sees the agent's socket */
#define BM_POD_MAX_CLUSTER_CIDRS 64

struct bm_podspec_opts {
	const char *namespace;		/* NULL: none written (kubectl -n decides) */
	const char *agent_socket;	/* the agent's socket on the node: its dir is mounted */
	long long socket_gid;		/* >= 0: a supplemental group, to reach the socket */
	const struct bm_cidr *cluster_cidrs;	/* egress_restricted's destinations */
	unsigned int n_cluster_cidrs;
};

/*
 * A v1 List of the Pod and, unless the policy is full, its NetworkPolicy
 * (kubectl apply takes it as it is). Keys in a fixed order, labels sorted,
 * so that the same request always gives the same bytes. NULL + errno.
 */
json_t *bm_podspec_build(const struct bm_run_request *r, const struct bm_podspec_opts *o);

/* "burstmeter-low", "-normal", "-high" for priority 1-10. */
const char *bm_podspec_priority_class(int priority);

/*
 * Kubernetes quantities: CPU as millicores ("500m"), whole cores plain
 * ("2"); bytes in the largest binary unit that holds them exactly
 * ("2Gi", "1536Mi", "1000"), or a decimal one from M up where that has
 * fewer digits ("2G", "1500M": what a request's "2G" or "1.5e9" was), so
 * that a quantity read with bm_parse_k8s_bytes() prints back as written
 * or as the API server would canonicalize it. Return buf.
 */
char *bm_k8s_cpu(uint64_t milli, char *buf, size_t len);
char *bm_k8s_bytes(uint64_t bytes, char *buf, size_t len);

#endif /* BM_PODSPEC_H */
