/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the meter needs from a node, checked before anything is made: BTF,
 * the capability, cgroup v2, and a BPF filesystem for the pins (mounted at
 * /sys/fs/bpf when a node just booted has none, as bpftool and Tetragon do).
 * Each failure fills why with one line that names what is missing and the fix.
 */
#ifndef BM_PREFLIGHT_H
#define BM_PREFLIGHT_H

#include <stddef.h>

#include "base/cgroup.h"

/* The kernel's own place for a BPF filesystem (sysfs makes it empty, for this mount). */
#define BM_BPFFS_ROOT "/sys/fs/bpf"

/* BTF (CO-RE) and CAP_SYS_ADMIN, which loading the meter needs. Returns 0 or -errno. */
int bm_meter_preflight(char *why, size_t len);

/*
 * Make dir's parents on a BPF filesystem (dir itself is the loader's to
 * make). Where its nearest existing ancestor is BM_BPFFS_ROOT with no bpffs
 * on it, mount one there first.
 * Returns 1 if it mounted, 0 if none was needed, -errno (why says what to do).
 */
int bm_bpffs_prepare(const char *dir, char *why, size_t len);

/*
 * Where cgroup v2 is and which cgroup of it we are in (from /proc/self):
 * env, and our own v2 directory into dir. Returns 0 or -errno.
 */
int bm_cgroup_preflight(struct bm_cgroup_env *env, char *dir, size_t dir_len, char *why,
			size_t len);

/*
 * Effects under parent on the node's own hierarchies (base/cgroup_node.h),
 * for an agent whose own cgroup is a container's: env, and parent's v2
 * directory (made, with its v1 twins) into dir. Each hierarchy's mount must
 * show its real top (the node's /sys/fs/cgroup, mounted in), whatever our
 * cgroup namespace. Returns 0 or -errno (why says what to mount).
 */
int bm_cgroup_node_preflight(const char *parent, struct bm_cgroup_env *env, char *dir,
			     size_t dir_len, char *why, size_t len);

/*
 * bm_cgroup_node_preflight()'s refusal: where cgroup2 at v2_mount (as
 * mountinfo lists it) has nsdelegate, no process may leave our cgroup
 * namespace, so an agent that could not join the node's (joined: -errno
 * of that join; 0 or 1 when it did not need to or did) cannot place
 * effects under parent. Returns joined with the one line in why, else 0.
 */
int bm_cgroup_nsdelegate_check(const char *mountinfo, const char *v2_mount, const char *parent,
			       int joined, char *why, size_t len);

/*
 * cgroup.procs of parent/BM_CGROUP_LEAF (made) in every hierarchy we are
 * in, opened for writing into fds: a process that writes "0" into each has
 * left our container's cgroups everywhere (a runtime kills by any of them).
 * Returns how many (at most max) or -errno (why names the hierarchy).
 */
int bm_cgroup_leaf_open(const char *parent, int *fds, int max, char *why, size_t len);

#endif /* BM_PREFLIGHT_H */
