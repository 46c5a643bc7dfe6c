// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/place.h"
#include "agent/spawner.h"
#include "base/cgroup_node.h"
#include "base/common.h"
#include "meter/preflight.h"

int ag_place_effects(struct bm_agent *a, char *why, size_t len)
{
	if (a->cfg.cgroup_parent[0])
		return bm_cgroup_node_preflight(a->cfg.cgroup_parent, &a->env, a->parent,
						sizeof(a->parent), why, len);
	return bm_cgroup_preflight(&a->env, a->parent, sizeof(a->parent), why, len);
}

/* Pure v2: a cgroup with processes cannot enable controllers for its children, the root aside. */
static void enter_leaf(struct bm_agent *a)
{
	char events[PATH_MAX + 32];
	int ret;

	snprintf(events, sizeof(events), "%s/cgroup.events", a->parent);
	if (a->env.mode != BM_CG_V2 || access(events, F_OK))
		return;
	ret = bm_cgroup_enter_leaf(a->parent, BM_CGROUP_LEAF);
	if (ret > 0) {
		a->in_leaf = true;
		bm_info("moved into %s/%s, so that %s can hand controllers to the effects", a->parent,
			BM_CGROUP_LEAF, a->parent);
	} else if (ret < 0) {
		bm_warn("failed to move into %s/%s: %s, ignoring (ceilings fall to the meter)",
			a->parent, BM_CGROUP_LEAF, strerror(-ret));
	}
}

int ag_place_spawner(struct bm_agent *a, const char *exe)
{
	char why[512];
	int fds[16], n, i, err;

	if (!a->cfg.cgroup_parent[0]) {
		enter_leaf(a);
		a->spawner = bm_spawner__start(exe);
		if (!a->spawner)
			bm_warn("no spawner (%s): the agent forks its shims itself", strerror(errno));
		return 0;
	}
	n = bm_cgroup_leaf_open(a->cfg.cgroup_parent, fds, BM_ARRAY_SIZE(fds), why, sizeof(why));
	if (n < 0)
		return bm_err("%s", why), n;
	a->spawner = bm_spawner__start_in(exe, fds, n);
	err = a->spawner ? 0 : -errno;
	for (i = 0; i < n; i++)
		close(fds[i]);
	/* shims forked by the agent would die with its container, and their effects with them */
	if (err)
		return bm_err_errno(err, "failed to start the spawner in %s/%s", a->cfg.cgroup_parent,
				    BM_CGROUP_LEAF);
	return 0;
}

/* rmdir, while the last shims (the spawner's ready ones) are still leaving: up to ~1 s. */
static void remove_dir(const char *path)
{
	struct timespec ts = { 0, 2 * 1000 * 1000 };
	int i;

	for (i = 0; i < 500 && rmdir(path) < 0 && errno == EBUSY; i++)
		nanosleep(&ts, NULL);
}

void ag_place_release(struct bm_agent *a)
{
	struct bm_cg_hier h[16];
	char path[PATH_MAX + 300];
	int n, i;

	if (a->in_leaf) {
		/* back where we came from (handing no controller down again), so that the leaf can go */
		n = bm_cgroup_leave_leaf(a->parent, BM_CGROUP_LEAF);
		if (n) {
			bm_warn("failed to move back from %s/%s: %s, leaving it", a->parent,
				BM_CGROUP_LEAF, strerror(-n));
			return;
		}
		snprintf(path, sizeof(path), "%s/%s", a->parent, BM_CGROUP_LEAF);
		remove_dir(path);
		return;
	}
	if (!a->cfg.cgroup_parent[0])
		return;
	n = bm_cgroup_hierarchies("/proc/self/mountinfo", "/proc/self/cgroup", h, BM_ARRAY_SIZE(h));
	for (i = 0; i < n; i++) {
		if (!h[i].mount[0])
			continue;
		snprintf(path, sizeof(path), "%s%s/%s", h[i].mount, a->cfg.cgroup_parent, BM_CGROUP_LEAF);
		remove_dir(path);
		/* and the parent, unless another agent's or a run's effects are in it */
		snprintf(path, sizeof(path), "%s%s", h[i].mount, a->cfg.cgroup_parent);
		(void)rmdir(path);
	}
}
