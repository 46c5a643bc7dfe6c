// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/cgroup_node.h"
#include "base/common.h"
#include "base/mountinfo.h"
#include "meter/preflight.h"

#define BTF_VMLINUX "/sys/kernel/btf/vmlinux"

static bool have_cap(int cap)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = { 0 };

	if (syscall(SYS_capget, &h, d) < 0)
		return false;
	return d[cap / 32].effective & (1u << (cap % 32));
}

int bm_meter_preflight(char *why, size_t len)
{
	if (access(BTF_VMLINUX, R_OK) < 0) {
		int err = -errno;

		snprintf(why, len, "this kernel has no BTF (%s: %s): the meter is CO-RE and needs a "
			 "kernel built with CONFIG_DEBUG_INFO_BTF=y", BTF_VMLINUX, strerror(-err));
		return err;
	}
	/* CAP_BPF and CAP_PERFMON load tracing programs, but libbpf 1.1 walks the BTF objects */
	if (!have_cap(CAP_SYS_ADMIN)) {
		snprintf(why, len, "the meter needs CAP_SYS_ADMIN, which this process lacks (libbpf 1.1 "
			 "reads the kernel's BTF objects with it; CAP_BPF and CAP_PERFMON alone do not "
			 "load the meter): run it as root (sudo)");
		return -EPERM;
	}
	return 0;
}

static const char *fs_name(unsigned long type)
{
	switch (type) {
	case TMPFS_MAGIC: return "tmpfs";
	case SYSFS_MAGIC: return "sysfs";
	case EXT4_SUPER_MAGIC: return "ext4";
	case XFS_SUPER_MAGIC: return "xfs";
	case BTRFS_SUPER_MAGIC: return "btrfs";
	case OVERLAYFS_SUPER_MAGIC: return "overlayfs";
	case PROC_SUPER_MAGIC: return "proc";
	case CGROUP2_SUPER_MAGIC: return "cgroup2";
	default: return "a filesystem that is not bpffs";
	}
}

/* The nearest ancestor of path (itself included) that exists, into buf. */
static int existing_ancestor(const char *path, char *buf, size_t len, struct statfs *st)
{
	char *slash;

	if (snprintf(buf, len, "%s", path) >= (int)len)
		return -ENAMETOOLONG;
	for (;;) {
		if (!statfs(buf, st))
			return 0;
		if (errno != ENOENT)
			return -errno;
		slash = strrchr(buf, '/');
		if (!slash)
			return -ENOENT;
		/* "/x" falls back to "/", which exists */
		slash[slash == buf] = '\0';
	}
}

static int mount_bpffs(const char *at, char *why, size_t len)
{
	int err;

	/* as systemd mounts it at boot */
	if (!mount("bpf", at, "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700"))
		return 0;
	err = -errno;
	snprintf(why, len, "failed to mount a BPF filesystem at %s: %s (needs CAP_SYS_ADMIN; in a "
		 "container, give it the host's %s with Bidirectional mount propagation)", at,
		 strerror(-err), at);
	return err;
}

/* mkdir -p of dir's parents below an existing base (the loader makes dir itself), mode 0700. */
static int make_parents(const char *dir, size_t base_len)
{
	char path[PATH_MAX], *p;

	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	for (p = strchr(path + base_len + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

int bm_bpffs_prepare(const char *dir, char *why, size_t len)
{
	char base[PATH_MAX];
	struct statfs st;
	bool mounted = false;
	int err;

	if (dir[0] != '/') {
		snprintf(why, len, "pin dir '%s' is not an absolute path", dir);
		return -EINVAL;
	}
	err = existing_ancestor(dir, base, sizeof(base), &st);
	if (err) {
		snprintf(why, len, "cannot look at pin dir %s: %s", dir, strerror(-err));
		return err;
	}
	if ((unsigned long)st.f_type != BPF_FS_MAGIC) {
		if (strcmp(base, BM_BPFFS_ROOT)) {
			snprintf(why, len, "pin dir %s is on %s (%s), not a BPF filesystem: choose one "
				 "under %s, or mount one first (mount -t bpf bpf DIR)", dir,
				 fs_name(st.f_type), base, BM_BPFFS_ROOT);
			return -ENOTSUP;
		}
		err = mount_bpffs(base, why, len);
		if (err)
			return err;
		mounted = true;
	}
	if (strcmp(base, dir)) {
		err = make_parents(dir, strcmp(base, "/") ? strlen(base) : 0);
		if (err) {
			snprintf(why, len, "failed to create pin dir %s: %s", dir, strerror(-err));
			return err;
		}
	}
	return mounted;
}

int bm_cgroup_preflight(struct bm_cgroup_env *env, char *dir, size_t dir_len, char *why,
			size_t len)
{
	int err = bm_cgroup_env_detect("/proc/self/mountinfo", "/proc/self/cgroup", env);

	if (err == -ENOENT) {
		snprintf(why, len, "cgroup v2 is not mounted (effects need its freeze, kill and ids): "
			 "mount it, e.g. mount -t cgroup2 none /sys/fs/cgroup");
		return err;
	}
	if (!err)
		err = bm_cgroup_env_self_dir(env, dir, dir_len);
	if (err == -EINVAL)
		snprintf(why, len, "failed to find our cgroup v2 directory: the cgroup2 mount at %s does "
			 "not hold our cgroup (a cgroup namespace of our own?): set cgroup_parent, with the "
			 "node's /sys/fs/cgroup mounted", env->v2_mount);
	else if (err)
		snprintf(why, len, "failed to find our cgroup v2 directory: %s", strerror(-err));
	return err;
}

/* Is mnt the top of its hierarchy? The root cgroup alone has no cgroup.events (v2), and only
 * a v1 root has release_agent. A namespace's root looks like "/" in mountinfo too. */
static bool shows_top(const char *mnt, bool v2)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", mnt, v2 ? "cgroup.events" : "release_agent");
	return v2 ? access(path, F_OK) < 0 && errno == ENOENT : !access(path, F_OK);
}

static const char node_fix[] = "mount the node's /sys/fs/cgroup into the container (a hostPath), "
			       "or leave cgroup_parent unset";

/*
 * In a cgroup namespace of our own, the node's (pid 1's, with hostPID), so that the node's
 * cgroups are ours to put processes in. Returns 1 joined, 0 already there, -errno.
 */
static int join_node_cgroupns(void)
{
	char self[64] = "", init[64] = "";
	int fd, err = 0;

	if (readlink("/proc/self/ns/cgroup", self, sizeof(self) - 1) < 0 ||
	    readlink("/proc/1/ns/cgroup", init, sizeof(init) - 1) < 0)
		return -errno;
	if (!strcmp(self, init))
		return 0;
	fd = open("/proc/1/ns/cgroup", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWCGROUP) < 0)
		err = -errno;
	if (fd >= 0)
		close(fd);
	return err ? err : 1;
}

/* Is cgroup2 at mnt mounted with nsdelegate (a namespace's root is a fence for migration)? */
static bool nsdelegate(const char *mountinfo, const char *mnt)
{
	struct bm_cg_mounts *t = malloc(sizeof(*t));
	bool on = false;
	unsigned int k;

	if (t && !bm_cg_mounts_read(mountinfo, t))
		for (k = 0; k < t->n; k++)
			if (t->m[k].v2 && !strcmp(t->m[k].mnt, mnt))
				on = bm_has_word(t->m[k].opts, "nsdelegate");
	free(t);
	return on;
}

int bm_cgroup_nsdelegate_check(const char *mountinfo, const char *v2_mount, const char *parent,
			       int joined, char *why, size_t len)
{
	/* with nsdelegate, not even root may move a process out of its namespace (ENOENT) */
	if (joined >= 0 || !nsdelegate(mountinfo, v2_mount))
		return 0;
	snprintf(why, len, "cgroup_parent %s: cannot join the node's cgroup namespace (/proc/1/ns/"
		 "cgroup: %s), and cgroup2 at %s has nsdelegate, so no process could leave ours: "
		 "give the agent hostPID and CAP_SYS_ADMIN", parent, strerror(-joined), v2_mount);
	return joined;
}

int bm_cgroup_node_preflight(const char *parent, struct bm_cgroup_env *env, char *dir,
			     size_t dir_len, char *why, size_t len)
{
	/* first: the namespace changes how mountinfo shows the cgroup mounts' roots */
	int joined = join_node_cgroupns(), err, i;

	err = bm_cgroup_env_node("/proc/self/mountinfo", parent, env);

	if (err == -EINVAL) {
		snprintf(why, len, "invalid cgroup_parent '%s': expected an absolute cgroup path below "
			 "the root, e.g. /burstmeter", parent);
		return err;
	}
	if (err || !shows_top(env->v2_mount, true)) {
		snprintf(why, len, "cgroup_parent %s: %s: %s", parent,
			 err == -ENOENT ? "cgroup v2 is not mounted here" :
			 err ? "cgroup v2 is mounted here as a subtree only, not the node's root" :
			 "the cgroup v2 mount here is a namespace's root, not the node's", node_fix);
		return err ? err : -EXDEV;
	}
	err = bm_cgroup_nsdelegate_check("/proc/self/mountinfo", env->v2_mount, parent, joined, why,
					 len);
	if (err)
		return err;
	for (i = 0; i < BM_V1__MAX; i++)
		if (env->v1_mount[i][0] && !shows_top(env->v1_mount[i], false))
			env->v1_mount[i][0] = '\0';
	env->mode = BM_CG_V2;
	for (i = 0; i < BM_V1__MAX; i++)
		if (env->v1_mount[i][0])
			env->mode = BM_CG_HYBRID;
	err = bm_cgroup_mkdirs(env->v2_mount, parent);
	for (i = 0; !err && i < BM_V1__MAX; i++)
		if (env->v1_mount[i][0])
			err = bm_cgroup_mkdirs(env->v1_mount[i], parent);
	if (!err)
		err = bm_cgroup_env_self_dir(env, dir, dir_len);
	if (err)
		snprintf(why, len, "failed to create cgroup_parent %s: %s", parent, strerror(-err));
	return err;
}

int bm_cgroup_leaf_open(const char *parent, int *fds, int max, char *why, size_t len)
{
	struct bm_cg_hier h[16];
	char rel[PATH_MAX], path[PATH_MAX];
	int n, i, k = 0, err = 0;

	n = bm_cgroup_hierarchies("/proc/self/mountinfo", "/proc/self/cgroup", h, BM_ARRAY_SIZE(h));
	if (n < 0) {
		snprintf(why, len, "failed to read our cgroups: %s", strerror(-n));
		return n;
	}
	snprintf(rel, sizeof(rel), "%s/%s", parent, BM_CGROUP_LEAF);
	for (i = 0; i < n && !err; i++) {
		const char *name = h[i].v2 ? "cgroup2" : h[i].name;

		if (!h[i].mount[0] || !shows_top(h[i].mount, h[i].v2)) {
			snprintf(why, len, "the top of the %s hierarchy is not mounted here, so the effects "
				 "could not leave this cgroup there: %s", name, node_fix);
			err = -EXDEV;
		} else if (k >= max) {
			snprintf(why, len, "too many cgroup hierarchies (%d)", n);
			err = -E2BIG;
		} else {
			err = bm_cgroup_mkdirs(h[i].mount, rel);
			if (!err && snprintf(path, sizeof(path), "%s%s/cgroup.procs", h[i].mount, rel) >=
					    (int)sizeof(path))
				err = -ENAMETOOLONG;
			if (!err && (fds[k] = open(path, O_WRONLY | O_CLOEXEC)) < 0)
				err = -errno;
			if (err)
				snprintf(why, len, "failed to create %s%s: %s", h[i].mount, rel,
					 strerror(-err));
			else
				k++;
		}
	}
	if (!err)
		return k;
	while (k--)
		close(fds[k]);
	return err;
}
