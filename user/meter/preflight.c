// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/common.h"
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
	if (err)
		snprintf(why, len, "failed to find our cgroup v2 directory: %s", strerror(-err));
	return err;
}
