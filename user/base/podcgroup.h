/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which Kubernetes pod and container a cgroup path belongs to: the caller's
 * identity as the kernel gives it (SO_PEERCRED pid -> /proc/PID/cgroup),
 * never as a request body claims it. Pure: a path string in, a struct out.
 *
 * The kubelet's two cgroup drivers, with the container runtimes' names:
 *   systemd   /kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<UID_>.slice/
 *             cri-containerd-<ID>.scope | crio-<ID>.scope | docker-<ID>.scope
 *   cgroupfs  /kubepods/<qos>/pod<UID>/<ID> | crio-<ID>
 * where a Guaranteed pod has no <qos> level, systemd writes the UID's dashes
 * as underscores, and a kubelet --cgroup-root adds a prefix ("kubelet-" to
 * each systemd slice). Whatever comes before the kubepods level (a hybrid
 * host's /sys/fs/cgroup/unified, a node that is itself a container) is the
 * root; whatever comes after the container is that container's own.
 */
#ifndef BM_PODCGROUP_H
#define BM_PODCGROUP_H

#include <limits.h>
#include <stddef.h>

#define BM_POD_UID_MAX 36		/* a UUID; a static pod's UID is 32 hex digits */
#define BM_CONTAINER_ID_LEN 64		/* hex, as every CRI runtime names them */

enum bm_cg_driver { BM_CGD_SYSTEMD, BM_CGD_CGROUPFS };
enum bm_pod_qos { BM_QOS_GUARANTEED, BM_QOS_BURSTABLE, BM_QOS_BESTEFFORT };
enum bm_runtime { BM_RT_UNKNOWN, BM_RT_CONTAINERD, BM_RT_CRIO, BM_RT_DOCKER };

struct bm_pod_cgroup {
	enum bm_cg_driver driver;
	enum bm_pod_qos qos;
	enum bm_runtime runtime;	/* unknown: cgroupfs names containerd's, docker's alike */
	char pod_uid[BM_POD_UID_MAX + 1];	/* with dashes, as the API writes metadata.uid */
	char container_id[BM_CONTAINER_ID_LEN + 1];
	char pod_dir[PATH_MAX];		/* the path up to and including the pod's level */
	size_t root_len;		/* bytes of the path before the kubepods level */
};

/*
 * Parse path (absolute, as /proc/PID/cgroup's v2 line or a cgroupfs
 * directory has it). The first kubepods level decides: one a container
 * made below its own cgroup cannot pass for another pod.
 * Returns 0; -ENOENT when the path is in no pod's container (outside
 * kubepods, at the kubepods, QoS or pod level itself, CRI-O's conmon);
 * -EINVAL when it is malformed (relative; a component empty, ".", "..",
 * over NAME_MAX or with a control character; a kubepods level whose pod or
 * container does not parse; " (deleted)"); -ENAMETOOLONG at PATH_MAX or
 * more. On error *out is zeroed.
 *
 * Anyone who may create cgroups (a delegated systemd user subtree) can make
 * a look-alike of the kubepods tree under their own: the caller checks
 * root_len bytes of the path against where the node's kubelet keeps pods.
 */
int bm_pod_cgroup_parse(const char *path, struct bm_pod_cgroup *out);

/* "systemd", "cgroupfs"; "guaranteed", "burstable", "besteffort";
 * "unknown", "containerd", "crio", "docker". NULL if out of range. */
const char *bm_cg_driver_name(enum bm_cg_driver d);
const char *bm_pod_qos_name(enum bm_pod_qos q);
const char *bm_runtime_name(enum bm_runtime r);

#endif /* BM_PODCGROUP_H */
