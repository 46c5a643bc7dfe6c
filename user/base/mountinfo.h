/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The cgroup mounts a process can reach, read from a mountinfo file. A
 * mount hides every earlier one at or below its mount point: a container
 * given the node's /sys/fs/cgroup (a hostPath) over the runtime's own
 * cgroup mount sees the node's, and so do we.
 */
#ifndef BM_MOUNTINFO_H
#define BM_MOUNTINFO_H

#include <limits.h>
#include <stdbool.h>

#define BM_CG_MOUNTS_MAX 64

struct bm_cg_mount {
	char mnt[PATH_MAX];	/* mount point, unescaped */
	char root[PATH_MAX];	/* the cgroup shown at it, as our cgroup namespace sees it */
	char opts[512];		/* super options: the v1 controllers, name=... */
	bool v2;
};

struct bm_cg_mounts {
	unsigned int n;
	struct bm_cg_mount m[BM_CG_MOUNTS_MAX];
};

/* Read the visible cgroup and cgroup2 mounts of file, in its order. Returns 0 or -errno. */
int bm_cg_mounts_read(const char *file, struct bm_cg_mounts *out);

/* Is word one of the comma-separated words of list? */
bool bm_has_word(const char *list, const char *word);

/*
 * Does root show the top of its hierarchy: "/" (our cgroup namespace's
 * root) or only "/.." parts (a root above our namespace's, i.e. the node's)?
 */
bool bm_cg_root_is_top(const char *root);

#endif /* BM_MOUNTINFO_H */
