// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "base/cgroup_node.h"
#include "base/common.h"
#include "base/parse.h"
#include "effect/ceiling.h"
#include "effect/cpuplace.h"

#define CFS_PERIOD_US 100000ULL

/* Is ctrl a word of a controller list? "cpu" is not in "cpuset io". */
static bool has_ctrl(const char *list, const char *ctrl)
{
	size_t n = strlen(ctrl);
	const char *p;

	for (p = list; (p = strstr(p, ctrl)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || !p[n]))
			return true;
	return false;
}

/* v2: can the effect's parent hand these controllers down? Enable them if it can. */
static bool v2_delegate(const struct bm_cgroup *cg, const char *ctrl)
{
	char parent[PATH_MAX], buf[512], want[32];
	const char *slash = strrchr(cg->path, '/');
	int fd, n;

	if (!slash)
		return false;
	snprintf(parent, sizeof(parent), "%.*s", (int)(slash - cg->path), cg->path);
	fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = bm_read_file(fd, "cgroup.controllers", buf, sizeof(buf));
	if (n > 0 && has_ctrl(buf, ctrl)) {
		snprintf(want, sizeof(want), "+%s", ctrl);
		/* EBUSY: our cgroup holds processes, so v2 forbids delegating from it */
		(void)bm_write_file(fd, "cgroup.subtree_control", want);
	}
	n = bm_read_file(fd, "cgroup.subtree_control", buf, sizeof(buf));
	close(fd);
	return n > 0 && has_ctrl(buf, ctrl);
}

static int write_u64(int dirfd, const char *file, unsigned long long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", v);
	return bm_write_file(dirfd, file, buf);
}

static int write_cpu_max(int dirfd, double cores)
{
	char buf[48];

	if (cores <= 0)
		return bm_write_file(dirfd, "cpu.max", "max 100000");
	snprintf(buf, sizeof(buf), "%llu %llu", (unsigned long long)(cores * CFS_PERIOD_US),
		 CFS_PERIOD_US);
	return bm_write_file(dirfd, "cpu.max", buf);
}

static int write_cfs_quota(int dirfd, double cores)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", cores > 0 ? (long long)(cores * CFS_PERIOD_US) : -1LL);
	return bm_write_file(dirfd, "cpu.cfs_quota_us", buf);
}

static int apply_v2(const struct bm_cgroup *cg, const struct bm_limits *lim, struct bm_ceilings *c)
{
	int err;

	if (lim->memory_bytes && v2_delegate(cg, "memory")) {
		c->v2_mem = true;
		err = write_u64(cg->dirfd, "memory.max", lim->memory_bytes);
		if (!err)
			err = bm_write_file(cg->dirfd, "memory.oom.group", "1");
		if (err)
			return err;
		c->controller[BM_P_MEM] = true;
		c->mech[BM_P_MEM] = "cgroup v2 memory.max";
	}
	if (lim->pids && v2_delegate(cg, "pids")) {
		err = write_u64(cg->dirfd, "pids.max", lim->pids);
		if (err)
			return err;
		c->controller[BM_P_PIDS] = true;
		c->mech[BM_P_PIDS] = "cgroup v2 pids.max";
	}
	if (v2_delegate(cg, "cpu")) {
		c->v2_cpu = true;
		if (lim->cpu_milli) {
			err = write_cpu_max(cg->dirfd, lim->cpu_milli / 1000.0);
			if (err)
				return err;
			c->controller[BM_P_CPU] = true;
			c->mech[BM_P_CPU] = "cgroup v2 cpu.max";
		}
	}
	return 0;
}

static int make_dir(const struct bm_ceilings *c, const char *path)
{
	return c->fs ? c->fs->make_dir(path, 0755) : mkdir(path, 0755);
}

static int remove_dir(const struct bm_ceilings *c, const char *path)
{
	return c->fs ? c->fs->remove_dir(path) : rmdir(path);
}

static void v1_forget(struct bm_ceilings *c, enum bm_v1 v)
{
	free(c->v1_dir[v]);
	c->v1_dir[v] = NULL;
}

/* c->v1_dir[v]: the path of the effect's v1 twin under our own v1 cgroup. 0 or -errno. */
static int v1_path(const struct bm_cgroup_env *env, enum bm_v1 v, const char *name,
		   struct bm_ceilings *c)
{
	const char *self = env->v1_self[v];
	int n;

	v1_forget(c, v);
	n = asprintf(&c->v1_dir[v], "%s%s/%s", env->v1_mount[v], strcmp(self, "/") ? self : "", name);
	if (n < 0) {
		c->v1_dir[v] = NULL;
		return -ENOMEM;
	}
	if (n >= PATH_MAX) {
		v1_forget(c, v);
		return -ENAMETOOLONG;
	}
	return 0;
}

/* A v1 twin of the effect cgroup, under our own v1 cgroup of that controller. */
static int v1_twin(const struct bm_cgroup_env *env, enum bm_v1 v, const char *name,
		   struct bm_ceilings *c, int *dirfd)
{
	int n;

	*dirfd = -1;
	if (!env->v1_mount[v][0])
		return -EOPNOTSUPP;
	n = v1_path(env, v, name, c);
	if (n)
		return n;
	if (make_dir(c, c->v1_dir[v]) < 0) {
		n = -errno;
		v1_forget(c, v);
		return n;
	}
	*dirfd = open(c->v1_dir[v], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*dirfd < 0)
		return -errno;
	c->join_fd[v] = openat(*dirfd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
	return c->join_fd[v] < 0 ? -errno : 0;
}

/* Write the effect's CPUs (c->cpus), where its cpuset is. */
static int write_cpus(struct bm_ceilings *c)
{
	char list[1024];
	int err = bm_cpulist_format(&c->cpus, list, sizeof(list));

	return err ?: bm_write_file(c->cpuset_dirfd, "cpuset.cpus", list);
}

/*
 * Confine the effect to as many CPUs as cores needs of those it may use:
 * the affinity, within its group's CPUs if it has them. All of those when
 * that is all (or cores <= 0). Keeps the CPUs it has while their count is
 * right and they are still allowed; else gives them back and picks anew.
 * Held (counted in the placement table) whenever narrower than the affinity.
 */
static int place_cpus(struct bm_ceilings *c, double cores, const cpu_set_t *affinity)
{
	cpu_set_t allowed = *affinity, kept;
	unsigned int k;

	c->cores = cores;
	if (c->cpuset_dirfd < 0)
		return 0;
	if (c->within_set) {
		CPU_AND(&kept, affinity, &c->within);
		if (CPU_COUNT(&kept))
			allowed = kept;
	}
	if (bm_cpuplace_confines(cores, &allowed, &k)) {
		CPU_AND(&kept, &c->cpus, &allowed);
		if (c->cpus_held && CPU_EQUAL(&kept, &c->cpus) && (unsigned int)CPU_COUNT(&kept) == k)
			return 0;
		if (c->cpus_held)
			bm_cpuplace_put(&c->cpus);
		bm_cpuplace_pick(&allowed, k, &c->cpus);
		c->cpus_held = true;
		return write_cpus(c);
	}
	if (CPU_EQUAL(&c->cpus, &allowed))
		return 0;
	if (c->cpus_held)
		bm_cpuplace_put(&c->cpus);
	c->cpus = allowed;
	c->cpus_held = !CPU_EQUAL(&allowed, affinity);
	if (c->cpus_held)
		bm_cpuplace_hold(&c->cpus);
	return write_cpus(c);
}

/* Placed again for cores with the affinity as it is now: a cap comes long after the start. */
static int place_now(struct bm_ceilings *c, double cores)
{
	cpu_set_t affinity;

	c->cores = cores;
	if (c->cpuset_dirfd < 0 || sched_getaffinity(0, sizeof(affinity), &affinity) < 0)
		return 0;
	return place_cpus(c, cores, &affinity);
}

/*
 * Where its CPUs are set: v2's cpuset.cpus where our cgroup delegates
 * cpuset, else a v1 twin, which starts with every CPU we may use and its
 * parent's memory nodes.
 */
static int cpuset_open(const struct bm_cgroup_env *env, const struct bm_cgroup *cg, const char *name,
		       const cpu_set_t *allowed, struct bm_ceilings *c)
{
	int fd, pfd, err;

	c->cpus = *allowed;
	if (v2_delegate(cg, "cpuset")) {
		c->cpuset_dirfd = cg->dirfd;
		c->cpus_mech = "cgroup v2 cpuset.cpus";
		return 0;
	}
	if (env->mode != BM_CG_HYBRID || v1_twin(env, BM_V1_CPUSET, name, c, &fd))
		return 0;
	c->cpuset_dirfd = fd;
	c->cpus_mech = "cgroup v1 cpuset.cpus";
	err = write_cpus(c);
	if (err)
		return err;
	pfd = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	err = bm_cgroup_cpuset_init(pfd, fd);
	close(pfd);
	return err;
}

static int apply_v1(const struct bm_cgroup_env *env, const char *name, const struct bm_limits *lim,
		    bool cpu_throttle, struct bm_ceilings *c)
{
	int fd, err;

	if (lim->memory_bytes && !c->controller[BM_P_MEM] &&
	    !v1_twin(env, BM_V1_MEMORY, name, c, &c->v1_mem_dirfd)) {
		err = write_u64(c->v1_mem_dirfd, "memory.limit_in_bytes", lim->memory_bytes);
		if (err)
			return err;
		c->controller[BM_P_MEM] = true;
		c->mech[BM_P_MEM] = "cgroup v1 memory.limit_in_bytes";
	}
	if (lim->pids && !c->controller[BM_P_PIDS] && !v1_twin(env, BM_V1_PIDS, name, c, &fd)) {
		err = write_u64(fd, "pids.max", lim->pids);
		close(fd);
		if (err)
			return err;
		c->controller[BM_P_PIDS] = true;
		c->mech[BM_P_PIDS] = "cgroup v1 pids.max";
	}
	if ((lim->cpu_milli || cpu_throttle) && !c->v2_cpu &&
	    !v1_twin(env, BM_V1_CPU, name, c, &c->v1_cpu_dirfd)) {
		err = write_u64(c->v1_cpu_dirfd, "cpu.cfs_period_us", CFS_PERIOD_US);
		if (!err)
			err = write_cfs_quota(c->v1_cpu_dirfd, lim->cpu_milli / 1000.0);
		if (err)
			return err;
		if (lim->cpu_milli) {
			c->controller[BM_P_CPU] = true;
			c->mech[BM_P_CPU] = "cgroup v1 cpu.cfs_quota_us";
		}
	}
	return 0;
}

int bm_ceilings_apply(const struct bm_cgroup_env *env, const struct bm_cgroup *cg, const char *name,
		      const struct bm_limits *lim, unsigned int flags, const struct bm_cgfs *fs,
		      struct bm_ceilings *c)
{
	bool cpu_throttle = flags & (BM_CEIL_CPU_THROTTLE | BM_CEIL_CPU_CAP);
	bool cap = flags & BM_CEIL_CPU_CAP;
	cpu_set_t allowed;
	unsigned int k;
	int i, err;

	memset(c, 0, sizeof(*c));
	c->fs = fs;
	for (i = 0; i < BM_V1__MAX; i++)
		c->join_fd[i] = -1;
	c->v1_cpu_dirfd = c->v1_mem_dirfd = c->v1_blkio_dirfd = c->cpuset_dirfd = -1;
	c->v2_dirfd = cg->dirfd;
	err = apply_v2(cg, lim, c);
	if (!err && env->mode == BM_CG_HYBRID)
		err = apply_v1(env, name, lim, cpu_throttle, c);
	/* a cpuset where its ceiling confines it, or a cap may: a v1 twin costs a mkdir */
	if (!err && (cap || lim->cpu_milli) && !sched_getaffinity(0, sizeof(allowed), &allowed) &&
	    (cap || bm_cpuplace_confines(lim->cpu_milli / 1000.0, &allowed, &k)))
		err = cpuset_open(env, cg, name, &allowed, c) ?:
		      place_cpus(c, lim->cpu_milli / 1000.0, &allowed);
	if (err) {
		bm_ceilings_release(c);
		return err;
	}
	/* what no controller took, the meter enforces */
	if (lim->cpu_milli && !c->mech[BM_P_CPU])
		c->mech[BM_P_CPU] = "meter";
	if (lim->memory_bytes && !c->mech[BM_P_MEM])
		c->mech[BM_P_MEM] = "meter";
	if (lim->pids && !c->mech[BM_P_PIDS])
		c->mech[BM_P_PIDS] = "meter";
	return 0;
}

/* The CPUs an earlier agent confined it to count as held again (the twin, else v2's file). */
static void adopt_cpus(const struct bm_cgroup *cg, struct bm_ceilings *c)
{
	cpu_set_t allowed;
	char list[1024];

	if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0)
		return;
	c->cpus = allowed;
	if (c->v1_dir[BM_V1_CPUSET])
		c->cpuset_dirfd = open(c->v1_dir[BM_V1_CPUSET], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	else if (!faccessat(cg->dirfd, "cpuset.cpus", F_OK, 0))
		c->cpuset_dirfd = cg->dirfd;
	if (c->cpuset_dirfd < 0 || bm_read_file(c->cpuset_dirfd, "cpuset.cpus", list, sizeof(list)) < 0 ||
	    bm_cpulist_parse(list, &c->cpus) || !CPU_COUNT(&c->cpus) ||
	    CPU_EQUAL(&c->cpus, &allowed)) {
		c->cpus = allowed;
		return;
	}
	bm_cpuplace_hold(&c->cpus);
	c->cpus_held = true;
}

void bm_ceilings_adopt(const struct bm_cgroup_env *env, const struct bm_cgroup *cg, const char *name,
		       struct bm_ceilings *c)
{
	struct stat st;
	int i;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < BM_V1__MAX; i++)
		c->join_fd[i] = -1;
	c->v1_cpu_dirfd = c->v1_mem_dirfd = c->v1_blkio_dirfd = c->cpuset_dirfd = -1;
	c->v2_dirfd = cg->dirfd;
	/* the v1 twins have the effect's name: find them to read their events and remove them */
	for (i = 0; env->mode == BM_CG_HYBRID && i < BM_V1__MAX; i++) {
		if (!env->v1_mount[i][0] || v1_path(env, i, name, c))
			continue;
		if (stat(c->v1_dir[i], &st) < 0)
			v1_forget(c, i);
	}
	if (c->v1_dir[BM_V1_MEMORY])
		c->v1_mem_dirfd = open(c->v1_dir[BM_V1_MEMORY], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->v1_dir[BM_V1_CPU])
		c->v1_cpu_dirfd = open(c->v1_dir[BM_V1_CPU], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->v1_dir[BM_V1_BLKIO])
		c->v1_blkio_dirfd = open(c->v1_dir[BM_V1_BLKIO], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	adopt_cpus(cg, c);
}

const int *bm_ceilings_join_fds(const struct bm_ceilings *c, int *n)
{
	*n = BM_V1__MAX;
	return c->join_fd;
}

int bm_ceilings_cpu(struct bm_ceilings *c, const struct bm_limits *lim, double cores)
{
	int err;

	if (cores <= 0 && lim->cpu_milli)
		cores = lim->cpu_milli / 1000.0;
	if (c->v2_cpu)
		err = write_cpu_max(c->v2_dirfd, cores);
	else if (c->v1_cpu_dirfd >= 0)
		err = write_cfs_quota(c->v1_cpu_dirfd, cores);
	else
		return -EOPNOTSUPP;
	return err ?: place_now(c, cores);
}

int bm_ceilings_cpus_within(struct bm_ceilings *c, const cpu_set_t *set)
{
	if (c->cpuset_dirfd < 0)
		return -EOPNOTSUPP;
	if (set ? c->within_set && CPU_EQUAL(set, &c->within) : !c->within_set)
		return 0;
	c->within_set = set;
	if (set)
		c->within = *set;
	return place_now(c, c->cores);
}

int bm_ceilings_cpu_weight(struct bm_ceilings *c, unsigned int weight)
{
	int dirfd = c->v2_cpu ? c->v2_dirfd : c->v1_cpu_dirfd, err;
	unsigned long long shares;

	if (dirfd < 0)
		return -EOPNOTSUPP;
	if (weight == BM_CPU_IDLE) {
		err = bm_write_file(dirfd, "cpu.idle", "1");
		if (err != -ENOENT)
			return err;
		weight = 1;
	} else {
		/* out of the idle class first (it takes no weight: EINVAL), adopted ones too */
		err = bm_write_file(dirfd, "cpu.idle", "0");
		if (err && err != -ENOENT)
			return err;
	}
	weight = !weight ? 100 : weight > 10000 ? 10000 : weight;
	if (c->v2_cpu)
		return write_u64(dirfd, "cpu.weight", weight);
	shares = (unsigned long long)weight * 1024 / 100;
	return write_u64(dirfd, "cpu.shares", shares < 2 ? 2 : shares);
}

int bm_ceilings_mem_high(struct bm_ceilings *c, double bytes)
{
	if (!c->v2_mem)
		return -EOPNOTSUPP;
	if (bytes <= 0)
		return bm_write_file(c->v2_dirfd, "memory.high", "max");
	return write_u64(c->v2_dirfd, "memory.high", (unsigned long long)bytes);
}

/* "key N" from a flat keyed file such as memory.events; 0 when absent. */
static uint64_t keyed(int dirfd, const char *file, const char *key)
{
	char buf[1024], *p;
	size_t klen = strlen(key);
	unsigned long long v;

	if (dirfd < 0 || bm_read_file(dirfd, file, buf, sizeof(buf)) < 0)
		return 0;
	for (p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, key, klen) && p[klen] == ' ' && sscanf(p + klen + 1, "%llu", &v) == 1)
			return v;
	return 0;
}

void bm_ceilings_events(const struct bm_ceilings *c, uint64_t *oom_kills, uint64_t *forks_refused)
{
	int fd;

	*oom_kills = keyed(c->v2_dirfd, "memory.events", "oom_kill") +
		     keyed(c->v1_mem_dirfd, "memory.oom_control", "oom_kill");
	*forks_refused = keyed(c->v2_dirfd, "pids.events", "max");
	if (c->v1_dir[BM_V1_PIDS]) {
		fd = open(c->v1_dir[BM_V1_PIDS], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		*forks_refused += keyed(fd, "pids.events", "max");
		if (fd >= 0)
			close(fd);
	}
}

int bm_ceilings_mem_peak(const struct bm_ceilings *c, uint64_t *bytes)
{
	char buf[64];
	int n = -ENOENT;

	/* v2: memory.peak (5.19+) of the effect cgroup; hybrid: the v1 twin's high-water mark */
	if (c->v2_mem)
		n = bm_read_file(c->v2_dirfd, "memory.peak", buf, sizeof(buf));
	else if (c->v1_mem_dirfd >= 0)
		n = bm_read_file(c->v1_mem_dirfd, "memory.max_usage_in_bytes", buf, sizeof(buf));
	if (n < 0)
		return n;
	return bm_parse_u64(strtok(buf, "\n") ? buf : "", 0, UINT64_MAX, bytes);
}

int bm_ceilings_release_try(struct bm_ceilings *c)
{
	int i, busy = 0;

	/* its CPUs are free for the next effect as soon as it has ended */
	if (c->cpus_held)
		bm_cpuplace_put(&c->cpus);
	c->cpus_held = false;
	if (c->cpuset_dirfd >= 0 && c->cpuset_dirfd != c->v2_dirfd)
		close(c->cpuset_dirfd);
	c->cpuset_dirfd = -1;

	for (i = 0; i < BM_V1__MAX; i++) {
		if (c->join_fd[i] >= 0)
			close(c->join_fd[i]);
		c->join_fd[i] = -1;
		if (!c->v1_dir[i])
			continue;
		if (!remove_dir(c, c->v1_dir[i]) || errno != EBUSY)
			v1_forget(c, i);
		else
			busy = 1;
	}
	if (busy)
		return -EBUSY;
	if (c->v1_cpu_dirfd >= 0)
		close(c->v1_cpu_dirfd);
	if (c->v1_mem_dirfd >= 0)
		close(c->v1_mem_dirfd);
	if (c->v1_blkio_dirfd >= 0)
		close(c->v1_blkio_dirfd);
	c->v1_cpu_dirfd = c->v1_mem_dirfd = c->v1_blkio_dirfd = -1;
	return 0;
}

void bm_ceilings_release(struct bm_ceilings *c)
{
	struct timespec ts = { 0, 2 * 1000 * 1000 };
	int i, tries;

	/* like the v2 cgroup, a v1 one stays busy for a moment after its last task */
	for (tries = 0; bm_ceilings_release_try(c) == -EBUSY && tries < 500; tries++)
		nanosleep(&ts, NULL);
	for (i = 0; i < BM_V1__MAX; i++)
		v1_forget(c, i);
	(void)bm_ceilings_release_try(c);
}

/*
 * The whole disk behind path as "MAJ:MIN": io.max and blkio.throttle take
 * disks, not partitions, so a partition (sysfs has a "partition" file for
 * it) stands for the disk it is on. -ENODEV for a path on no block device
 * (tmpfs, proc, an overlay's anonymous device).
 */
static int disk_of(const char *path, char *out, size_t len)
{
	char sys[96], buf[32];
	unsigned int ma, mi;
	struct stat st;
	int fd, n;

	if (stat(path, &st) < 0)
		return -errno;
	if (!major(st.st_dev))
		return -ENODEV;
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
	fd = open(sys, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENODEV : -errno;
	n = faccessat(fd, "partition", F_OK, 0) ? -1 : bm_read_file(fd, "../dev", buf, sizeof(buf));
	close(fd);
	if (n > 0 && sscanf(buf, "%u:%u", &ma, &mi) == 2)
		snprintf(out, len, "%u:%u", ma, mi);
	else
		snprintf(out, len, "%u:%u", major(st.st_dev), minor(st.st_dev));
	return 0;
}

static void add_disks(struct bm_ceilings *c, const char *const *paths)
{
	char dev[24];
	unsigned int i;
	int err;

	for (; paths && *paths; paths++) {
		err = disk_of(*paths, dev, sizeof(dev));
		if (err) {
			if (!c->io_why[0])
				snprintf(c->io_why, sizeof(c->io_why), "none: %.100s is on no block device",
					 *paths);
			continue;
		}
		for (i = 0; i < c->n_io_dev && strcmp(c->io_dev[i], dev); i++)
			;
		if (i == c->n_io_dev && c->n_io_dev < BM_IO_DEVS)
			snprintf(c->io_dev[c->n_io_dev++], sizeof(c->io_dev[0]), "%s", dev);
	}
}

/* "max" for no limit: what both io.max and (as 0) blkio.throttle take for none. */
static void lim_text(char *buf, size_t len, uint64_t v, bool v2)
{
	if (v)
		snprintf(buf, len, "%llu", (unsigned long long)v);
	else
		snprintf(buf, len, "%s", v2 ? "max" : "0");
}

/* Put read/write bps and iops on every disk of the effect (0 = none). */
static int io_write_limits(struct bm_ceilings *c, uint64_t rbps, uint64_t wbps, uint64_t iops)
{
	static const char *const v1_files[4] = { "blkio.throttle.read_bps_device",
		"blkio.throttle.write_bps_device", "blkio.throttle.read_iops_device",
		"blkio.throttle.write_iops_device" };
	uint64_t v[4] = { rbps, wbps, iops, iops };
	char line[160], a[4][24];
	unsigned int i, k;
	int err = 0;

	for (i = 0; !err && i < c->n_io_dev; i++) {
		for (k = 0; k < 4; k++)
			lim_text(a[k], sizeof(a[k]), v[k], c->v2_io);
		if (c->v2_io) {
			snprintf(line, sizeof(line), "%s rbps=%s wbps=%s riops=%s wiops=%s", c->io_dev[i],
				 a[0], a[1], a[2], a[3]);
			err = bm_write_file(c->v2_dirfd, "io.max", line);
			continue;
		}
		for (k = 0; !err && k < 4; k++) {
			snprintf(line, sizeof(line), "%s %s", c->io_dev[i], a[k]);
			err = bm_write_file(c->v1_blkio_dirfd, v1_files[k], line);
		}
	}
	return err;
}

int bm_ceilings_io_apply(const struct bm_cgroup_env *env, const struct bm_cgroup *cg,
			 const char *name, const struct bm_limits *lim, bool io_throttle,
			 const char *const *paths, struct bm_ceilings *c)
{
	static const char *const v1_names[BM_IO_CEIL__MAX] = {
		"cgroup v1 blkio.throttle.read_bps_device", "cgroup v1 blkio.throttle.write_bps_device",
		"cgroup v1 blkio.throttle.{read,write}_iops_device",
	};
	bool want = lim->io_read_bps || lim->io_write_bps || lim->io_iops;
	uint64_t set[BM_IO_CEIL__MAX] = { lim->io_read_bps, lim->io_write_bps, lim->io_iops };
	int err = 0, fd, i;

	/* v2: io (with memory, for cgroup writeback) is worth having for attribution alone */
	c->v2_io = v2_delegate(cg, "io");
	if (c->v2_io)
		(void)v2_delegate(cg, "memory");
	c->io_attribution = c->v2_io ? "blkcg" : "submitter";
	if (!c->v2_io && (want || io_throttle) && env->mode == BM_CG_HYBRID &&
	    !v1_twin(env, BM_V1_BLKIO, name, c, &fd)) {
		c->v1_blkio_dirfd = fd;
		c->io_attribution = "v1_twin";
	}
	if (!want && !io_throttle)
		return 0;
	/* the ladder's throttle needs the disks too, ceilings or not */
	add_disks(c, paths);
	if (!want)
		return 0;
	if (c->n_io_dev && (c->v2_io || c->v1_blkio_dirfd >= 0))
		err = io_write_limits(c, lim->io_read_bps, lim->io_write_bps, lim->io_iops);
	if (err)
		return err;
	for (i = 0; i < BM_IO_CEIL__MAX; i++) {
		if (!set[i])
			continue;
		if (!c->n_io_dev)
			c->io_mech[i] = c->io_why[0] ? c->io_why : "none: no block device";
		else if (c->v2_io)
			c->io_mech[i] = "cgroup v2 io.max";
		else if (c->v1_blkio_dirfd >= 0)
			c->io_mech[i] = v1_names[i];
		else
			c->io_mech[i] = "none: no io controller";
	}
	return 0;
}

int bm_ceilings_io(struct bm_ceilings *c, const struct bm_limits *lim, double bps)
{
	uint64_t r = lim->io_read_bps, w = lim->io_write_bps, b = bps > 0 ? (uint64_t)bps : 0;

	if (!c->n_io_dev || (!c->v2_io && c->v1_blkio_dirfd < 0))
		return -EOPNOTSUPP;
	/* a throttle never raises a ceiling: the lower of the two holds */
	if (b) {
		r = r && r < b ? r : b;
		w = w && w < b ? w : b;
	}
	return io_write_limits(c, r, w, lim->io_iops);
}

void bm_ceilings_mem_events(const struct bm_ceilings *c, int64_t ev[BM_MEMEV__MAX])
{
	static const char *const keys[BM_MEMEV__MAX] = { "oom", "oom_kill", "high", "max" };
	char buf[64];
	int i;

	for (i = 0; i < BM_MEMEV__MAX; i++)
		ev[i] = -1;
	/* v2: memory.events exists where the memory controller is enabled for the cgroup */
	if (c->v2_dirfd >= 0 && faccessat(c->v2_dirfd, "memory.events", F_OK, 0) == 0) {
		for (i = 0; i < BM_MEMEV__MAX; i++)
			ev[i] = (int64_t)keyed(c->v2_dirfd, "memory.events", keys[i]);
		return;
	}
	if (c->v1_mem_dirfd >= 0) {
		ev[BM_MEMEV_OOM_KILL] = (int64_t)keyed(c->v1_mem_dirfd, "memory.oom_control", "oom_kill");
		if (bm_read_file(c->v1_mem_dirfd, "memory.failcnt", buf, sizeof(buf)) > 0)
			ev[BM_MEMEV_MAX] = strtoll(buf, NULL, 10);
	}
}
