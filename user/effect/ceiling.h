/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Hard ceilings through the kernel's controllers, where they are:
 * cgroup v2 (cpu.max, memory.max + memory.high + memory.oom.group,
 * pids.max) when our cgroup can delegate them, else the v1 hierarchies of a
 * hybrid host (cpu.cfs_quota_us, memory.limit_in_bytes, pids.max) in child
 * cgroups of our own v1 cgroups. A ceiling no controller takes is left to
 * the meter (kernel fast path and the ladder); mech[] says which acted.
 */
#ifndef BM_CEILING_H
#define BM_CEILING_H

#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/types.h>

#include "base/cgroup.h"
#include "effect/outcome.h"
#include "effect/policy.h"

/*
 * How the v1 twins are made and removed; NULL means mkdir(2) and rmdir(2).
 * On cgroupfs a mkdir brings the knob files with it and an rmdir takes them
 * away; a plain directory does neither, so a test's fake cgroupfs (a
 * temporary tree) passes functions that do. Contract of the system calls:
 * 0, or -1 with errno set.
 */
struct bm_cgfs {
	int (*make_dir)(const char *path, mode_t mode);
	int (*remove_dir)(const char *path);
};

#define BM_IO_DEVS 4

struct bm_ceilings {
	const char *mech[BM_P__MAX];	/* "cgroup v2 memory.max", ..., "meter", NULL = no ceiling */
	bool controller[BM_P__MAX];	/* a controller enforces it */
	char *v1_dir[BM_V1__MAX];	/* v1 cgroups we created, owned (NULL = none): most hosts have none */
	int join_fd[BM_V1__MAX];	/* their cgroup.procs, for the child to enter before exec */
	int v2_dirfd;			/* the effect's v2 cgroup */
	bool v2_cpu, v2_mem;		/* v2 cpu / memory controllers enabled for it */
	int v1_cpu_dirfd, v1_mem_dirfd;	/* for throttling through v1, -1 if none */
	bool v2_io;			/* v2 io controller enabled for it */
	int v1_blkio_dirfd;		/* its v1 blkio twin, -1 if none */
	char io_dev[BM_IO_DEVS][24];	/* "MAJ:MIN" of the disks behind its paths */
	unsigned int n_io_dev;
	const char *io_mech[BM_IO_CEIL__MAX];	/* what held each I/O ceiling */
	const char *io_attribution;	/* "blkcg", "v1_twin", "submitter" */
	char io_why[160];		/* why an I/O ceiling is not held, for its mech */
	const struct bm_cgfs *fs;	/* makes and removes the v1 twins (NULL: syscalls) */
	/* CPU placement (effect/cpuplace.h): the effect's CPUs, where they are set */
	cpu_set_t cpus;
	bool cpus_held;			/* cpus is counted in the placement table */
	cpu_set_t within;		/* the CPUs its group shares (a tenant's), if within_set */
	bool within_set;
	double cores;			/* what it was last placed for (0: no limit) */
	int cpuset_dirfd;		/* the v2 cgroup (v2 cpuset) or the v1 twin; -1: none */
	const char *cpus_mech;		/* "cgroup v2 cpuset.cpus", ..., NULL: not confined */
};

/* What bm_ceilings_apply() prepares beyond the limits, for bm_ceilings_cpu() later. */
#define BM_CEIL_CPU_THROTTLE (1U << 0)	/* a CPU controller: the ladder's throttle, a fair yield */
#define BM_CEIL_CPU_CAP (1U << 1)	/* a cpuset too: a cap (a budget, the node's pressure) confines it */

/*
 * Put the limits on the effect cgroup cg (name is its directory name, used
 * for the v1 twins); flags (BM_CEIL_*) ask for a CPU controller even without a
 * CPU ceiling, for the ladder to throttle with, and for a cpuset to confine a
 * cap with; a CPU ceiling of fewer cores than the CPUs we may use confines
 * the effect to that many (effect/cpuplace.h); fs makes the v1 twins (NULL:
 * mkdir(2)). Never writes above our own cgroups. Returns 0 (what
 * could not be applied falls back to the meter) or -errno if something we
 * created could not be configured (everything created is removed again).
 */
int bm_ceilings_apply(const struct bm_cgroup_env *env, const struct bm_cgroup *cg, const char *name,
		      const struct bm_limits *lim, unsigned int flags, const struct bm_cgfs *fs,
		      struct bm_ceilings *c);

/*
 * Find the ceilings an earlier agent put on cg (its v1 twins by name), to read and remove them.
 * c->fs is NULL afterwards (rmdir(2)); a test may set it before bm_ceilings_release().
 */
void bm_ceilings_adopt(const struct bm_cgroup_env *env, const struct bm_cgroup *cg, const char *name,
		       struct bm_ceilings *c);

/* The fds the child writes "0" into before exec (-1 entries skipped); count in *n. */
const int *bm_ceilings_join_fds(const struct bm_ceilings *c, int *n);

/*
 * Throttle CPU to cores (0 restores the ceiling or no limit), and confine it to as many CPUs
 * where it has a cpuset. Returns 0, -EOPNOTSUPP, -errno.
 */
int bm_ceilings_cpu(struct bm_ceilings *c, const struct bm_limits *lim, double cores);
/*
 * Place it within set from now on (NULL: anywhere we may run), at the cores
 * it is held to now: the capped effects of a tenant share the CPUs their
 * total cap needs (docs/DESIGN.md, "CPU placement"). Returns 0, -EOPNOTSUPP
 * (no cpuset), -errno.
 */
int bm_ceilings_cpus_within(struct bm_ceilings *c, const cpu_set_t *set);
/*
 * The effect's CPU weight against its siblings, in cgroup v2's units
 * (1-10000; 0 is the default, 100): cpu.weight, or a v1 twin's cpu.shares
 * (weight x 1024 / 100, at least 2). BM_CPU_IDLE, below them all, is the
 * idle class (cpu.idle 1, v2 or v1, since 5.15): it runs on CPUs nothing
 * else wants and a waking neighbour preempts it at once, where weight 1
 * still takes a slice first (a kernel without cpu.idle gets weight 1).
 * Returns 0, -EOPNOTSUPP, -errno.
 */
#define BM_CPU_IDLE UINT_MAX
int bm_ceilings_cpu_weight(struct bm_ceilings *c, unsigned int weight);
/* Ask the kernel to reclaim above bytes (v2 memory.high; 0 = max). Returns 0, -EOPNOTSUPP, -errno. */
int bm_ceilings_mem_high(struct bm_ceilings *c, double bytes);

/*
 * The I/O controller, for ceilings (lim->io_*) and the ladder's throttle
 * (io_throttle): v2 io.max where the io controller is delegable (then
 * writeback is attributed to the effect too: the memory controller is
 * enabled beside it for cgroup writeback), else v1 blkio.throttle.* in a
 * twin, for the whole disks behind paths (NULL-terminated; a partition
 * stands for its disk; a path on no block device, tmpfs, has none).
 * Call after bm_ceilings_apply(). Returns 0 (what no controller takes is
 * said in io_mech) or -errno if a file we made could not be written.
 */
int bm_ceilings_io_apply(const struct bm_cgroup_env *env, const struct bm_cgroup *cg,
			 const char *name, const struct bm_limits *lim, bool io_throttle,
			 const char *const *paths, struct bm_ceilings *c);
/* Throttle I/O to bps each way on its disks (0 restores the ceilings). 0, -EOPNOTSUPP, -errno. */
int bm_ceilings_io(struct bm_ceilings *c, const struct bm_limits *lim, double bps);
/* The effect's memory.events counts (v2; v1: oom_kill and failcnt as max), -1 where unknown. */
void bm_ceilings_mem_events(const struct bm_ceilings *c, int64_t ev[BM_MEMEV__MAX]);

/* Did a controller refuse the effect: OOM kills, forks refused? Counts from *.events. */
void bm_ceilings_events(const struct bm_ceilings *c, uint64_t *oom_kills, uint64_t *forks_refused);

/* The memory controller's peak of the effect (v2 memory.peak, v1 max_usage_in_bytes): 0 or -errno. */
int bm_ceilings_mem_peak(const struct bm_ceilings *c, uint64_t *bytes);

/* Remove the v1 cgroups (empty by then; ~1 s of retries while they are busy) and close fds. */
void bm_ceilings_release(struct bm_ceilings *c);
/* The same, once, never waiting: 0, or -EBUSY while a twin is still busy (call again). */
int bm_ceilings_release_try(struct bm_ceilings *c);

#endif /* BM_CEILING_H */
