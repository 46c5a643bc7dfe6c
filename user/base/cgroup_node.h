/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Effects on the node's own cgroup hierarchies, outside the cgroup of the
 * process that makes them: an agent in a container puts its effects (and
 * the shims that watch them) under a parent such as /burstmeter, so that
 * they outlive its container. The node's hierarchies are those mounted here
 * with their root in view (the node's /sys/fs/cgroup, a hostPath), whatever
 * our cgroup namespace. Paths are arguments so that tests can use fixtures.
 */
#ifndef BM_CGROUP_NODE_H
#define BM_CGROUP_NODE_H

#include <limits.h>
#include <stdbool.h>

#include "base/cgroup.h"

/* Below the effects' parent: the cgroup of the agent's own processes (its spawner, shims). */
#define BM_CGROUP_LEAF "agent"

/* A parent for effects: absolute, below the root, no empty, "." or ".." component. */
bool bm_cgroup_valid_parent(const char *parent);

/*
 * env for effects under parent (a path from the node's root), from the
 * mounts of mountinfo that show a hierarchy's top (bm_cg_root_is_top()):
 * v2_self and each v1_self are parent; a v1 controller mounted only as a
 * subtree is left out (its ceilings fall to the meter). Returns 0, -ENOENT
 * (no cgroup2), -EXDEV (cgroup2 mounted as a subtree only: the node's
 * /sys/fs/cgroup is not mounted here), -EINVAL (bad parent) or -errno.
 */
int bm_cgroup_env_node(const char *mountinfo, const char *parent, struct bm_cgroup_env *env);

/* A hierarchy we are in: its name in /proc/self/cgroup ("" for v2) and where its top is mounted. */
struct bm_cg_hier {
	char name[128];
	char mount[PATH_MAX];	/* "" if no mount here shows its top */
	bool v2;
};

/* Every hierarchy self_cgroup lists, at most max. Returns how many, or -errno. */
int bm_cgroup_hierarchies(const char *mountinfo, const char *self_cgroup, struct bm_cg_hier *h,
			  int max);

/*
 * mkdir -p mount + rel (rel absolute). A new v1 cpuset cgroup gets its
 * parent's cpuset.cpus and cpuset.mems, or no task could join it.
 * Returns 0 or -errno.
 */
int bm_cgroup_mkdirs(const char *mount, const char *rel);

/*
 * A new v1 cpuset cgroup (fd) starts with no CPUs and no memory nodes: each
 * of cpuset.cpus and cpuset.mems still empty gets its parent's. Nothing on v2
 * or outside a cpuset hierarchy. Returns 0 or -errno.
 */
int bm_cgroup_cpuset_init(int parent_fd, int fd);

/*
 * On cgroup v2 a cgroup that holds processes cannot hand controllers to its
 * children. If we are the only process in dir, move into dir/leaf (made).
 * Returns 1 if we moved, 0 if others are there too, -errno.
 */
int bm_cgroup_enter_leaf(const char *dir, const char *leaf);

/*
 * Back from dir/leaf into dir. dir may not hold a process while it hands
 * controllers down, so those enabled in its cgroup.subtree_control go
 * first: only when no cgroup but leaf is under dir (-EBUSY otherwise, and
 * nothing changed). The caller removes leaf. Returns 0 or -errno.
 */
int bm_cgroup_leave_leaf(const char *dir, const char *leaf);

#endif /* BM_CGROUP_NODE_H */
