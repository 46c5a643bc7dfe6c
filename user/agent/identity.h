/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Who an effect runs as, and who is calling: identities come from the kernel
 * (the caller's uid, its cgroup), never from a request's body.
 */
#ifndef BM_AGENT_IDENTITY_H
#define BM_AGENT_IDENTITY_H

#include <stdbool.h>
#include <sys/types.h>

#include "agent/state.h"

/*
 * The uid and gid tenant's effect runs as, for a caller of caller_uid:
 * a non-root caller's own; for root, root itself only for root's own
 * tenant (and not non_root); a tenant the config maps to a uid runs as it;
 * any other tenant as a uid of its own from [uid_min, uid_max], given once
 * for good (kept in the store, never a user's), like systemd's DynamicUser,
 * so one tenant's effects cannot signal, trace or read another's.
 * Returns 0 or -errno (-ENOSPC: the range is used up).
 */
int ag_run_as(struct bm_agent *a, const char *tenant, uid_t caller_uid, gid_t caller_gid,
	      bool non_root, uid_t *uid, gid_t *gid);

/*
 * The live effect whose cgroup pid is in (at any depth), or NULL: a caller
 * that is code inside an effect. Reads /proc/PID/cgroup only (never blocks
 * on the process).
 */
struct ag_effect *ag_caller_effect(struct bm_agent *a, pid_t pid);

/*
 * The pod pid's cgroup is in, under the node's cfg.kubepods_root (both
 * cgroup drivers, every QoS class), and the tenant it maps to (cfg.pod_tenants,
 * else "pod-<uid>"). Returns 0; -ENOENT: in no pod (uid identity applies;
 * a look-alike tree under someone's own cgroup is no pod); -EBADSLT: below
 * the kubelet's root, in no container we can name (refuse the caller: its
 * uid, root in many a container, says nothing); or -errno.
 */
int ag_caller_pod(struct bm_agent *a, pid_t pid, struct ag_pod *pod, char *tenant, size_t len);

/*
 * Our pid (*out) of the process the caller calls pid: its own pid namespace's
 * number (a pod's `burstmeter run` sends one). Found among the caller's
 * descendants only; the same pid when the caller shares our namespace.
 * Returns 0, -ESRCH (no such descendant), or -errno.
 */
int ag_caller_pid(pid_t caller, pid_t pid, pid_t *out);

#endif /* BM_AGENT_IDENTITY_H */
