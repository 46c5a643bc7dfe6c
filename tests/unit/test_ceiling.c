// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/effect/ceiling.c on a fake cgroupfs (tests/unit/fakecg.h): a v2
 * parent that delegates some controllers, and v1 hierarchies as other
 * directories of the same temporary tree, where fake_cgfs makes the twins
 * with their knob files. Ceilings are written for real and read back;
 * what no controller takes falls to the meter; nothing is made above our
 * own cgroups, and what was made is removed again, on error too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/sysmacros.h>

#include "fakecg.h"
#include "effect/ceiling.h"
#include "effect/cpuplace.h"

#define MIB (1024ULL * 1024)
#define NAME "burstmeter.unit.e1"

static struct {
	char root[256];		/* short: the paths built from it fit PATH_MAX */
	char parent[512], eff[1024];	/* our v2 cgroup and the effect's */
	char twin[BM_V1__MAX][PATH_MAX];	/* where the v1 twins belong */
	struct bm_cgroup_env env;
	struct bm_cgroup cg;
	struct bm_limits lim;
	struct bm_ceilings c;
	bool applied;
} f;

static const char *const v1_name[BM_V1__MAX] = { "memory", "pids", "cpu", "blkio", "cpuset" };
/* our own v1 cgroups, as /proc/self/cgroup would say: one below the root, one at it */
static const char *const v1_self[BM_V1__MAX] = { "/job", "/", "/user.slice", "/", "/" };

static int setup(void **state)
{
	int v;

	memset(&f, 0, sizeof(f));
	fake_root(f.root, sizeof(f.root));
	snprintf(f.parent, sizeof(f.parent), "%s/v2/job", f.root);
	snprintf(f.eff, sizeof(f.eff), "%s/%s", f.parent, NAME);
	f.env.mode = BM_CG_V2;
	snprintf(f.env.v2_mount, PATH_MAX, "%s/v2", f.root);
	snprintf(f.env.v2_self, PATH_MAX, "/job");
	for (v = 0; v < BM_V1__MAX; v++)
		snprintf(f.twin[v], PATH_MAX, "%s/v1/%s%s/%s", f.root, v1_name[v],
			 strcmp(v1_self[v], "/") ? v1_self[v] : "", NAME);
	f.cg.dirfd = -1;
	return 0;
}

static int teardown(void **state)
{
	if (f.applied)
		bm_ceilings_release(&f.c);
	if (f.cg.dirfd >= 0)
		close(f.cg.dirfd);
	fake_rmtree(f.root);
	return 0;
}

/*
 * The v2 side: our cgroup offers ctrls to its children (cgroup.controllers)
 * and shows enabled in cgroup.subtree_control once asked ("": none, NULL: it
 * refuses every write, as with EBUSY); the effect has the files of eff_ctrls
 * (NULL: of ctrls).
 */
static void v2(const char *ctrls, const char *enabled, const char *eff_ctrls)
{
	fake_mkdirs(f.parent);
	fake_put(f.parent, "cgroup.controllers", fake_path("%s\n", ctrls));
	if (!enabled)
		fake_mkdirs(fake_path("%s/cgroup.subtree_control", f.parent));
	else if (*enabled)
		fake_delegated(f.parent, enabled);
	else
		fake_put(f.parent, "cgroup.subtree_control", "");
	fake_v2_knobs(f.eff, eff_ctrls ? eff_ctrls : ctrls);
	f.cg.path = f.eff;
	f.cg.dirfd = open(f.eff, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(f.cg.dirfd >= 0);
}

/* A hybrid host: the v1 hierarchies of mask (bits of enum bm_v1), our cgroups in them. */
static void hybrid(unsigned int mask)
{
	int v;

	f.env.mode = BM_CG_HYBRID;
	for (v = 0; v < BM_V1__MAX; v++) {
		if (!(mask & (1U << v)))
			continue;
		snprintf(f.env.v1_mount[v], PATH_MAX, "%s/v1/%s", f.root, v1_name[v]);
		snprintf(f.env.v1_self[v], PATH_MAX, "%s", v1_self[v]);
		snprintf(fake_v1_mount[v], PATH_MAX, "%s", f.env.v1_mount[v]);
		fake_mkdirs(fake_path("%s%s", f.env.v1_mount[v],
				      strcmp(v1_self[v], "/") ? v1_self[v] : ""));
	}
}

#define ALL_V1 ((1U << BM_V1_MEMORY) | (1U << BM_V1_PIDS) | (1U << BM_V1_CPU))

static int apply(unsigned int flags)
{
	int err = bm_ceilings_apply(&f.env, &f.cg, NAME, &f.lim, flags, &fake_cgfs, &f.c);

	f.applied = !err;
	return err;
}

static void limits(uint64_t cpu_milli, uint64_t mem, uint64_t pids)
{
	f.lim = (struct bm_limits){ .cpu_milli = cpu_milli, .memory_bytes = mem, .pids = pids };
}

static bool exists(const char *path)
{
	struct stat st;

	return !stat(path, &st);
}

/* The last "+ctrl" written to our subtree_control (see fake_delegated()), "" if none. */
static const char *last_enabled(void)
{
	const char *sub = knob_peek(f.parent, "cgroup.subtree_control");

	return fake_path("%.*s", *sub == '+' ? (int)strcspn(sub, " ") : 0, sub);
}

static void assert_mech(enum bm_pdim d, const char *mech, bool controller)
{
	if (mech)
		assert_string_equal(f.c.mech[d], mech);
	else
		assert_null(f.c.mech[d]);
	assert_int_equal(f.c.controller[d], controller);
}

static void test_ceiling_v2_delegable_writes_controllers(void **state)
{
	int v;

	v2("cpuset cpu io memory hugetlb pids", "cpu memory pids", NULL);
	limits(1500, 256 * MIB, 64);
	assert_int_equal(apply(false), 0);
	assert_string_equal(knob_take(f.eff, "cpu.max"), "150000 100000");
	assert_string_equal(knob_take(f.eff, "memory.max"), "268435456");
	assert_string_equal(knob_take(f.eff, "memory.oom.group"), "1");
	assert_string_equal(knob_take(f.eff, "pids.max"), "64");
	/* memory.high is the ladder's, not a ceiling */
	assert_string_equal(knob_take(f.eff, "memory.high"), "");
	assert_mech(BM_P_CPU, "cgroup v2 cpu.max", true);
	assert_mech(BM_P_MEM, "cgroup v2 memory.max", true);
	assert_mech(BM_P_PIDS, "cgroup v2 pids.max", true);
	assert_mech(BM_P_NET, NULL, false);
	assert_true(f.c.v2_cpu && f.c.v2_mem);
	assert_int_equal(f.c.v2_dirfd, f.cg.dirfd);
	/* a v2 host makes no v1 twins */
	for (v = 0; v < BM_V1__MAX; v++) {
		assert_null(f.c.v1_dir[v]);
		assert_int_equal(f.c.join_fd[v], -1);
	}
	assert_int_equal(fake_n_made, 0);
}

static void test_ceiling_v2_delegates_from_parent(void **state)
{
	/* the parent offers memory and pids; only the one a limit needs is enabled */
	v2("memory pids", "pids", NULL);
	limits(0, 0, 10);
	assert_int_equal(apply(false), 0);
	assert_string_equal(last_enabled(), "+pids");
	assert_string_equal(knob_take(f.eff, "pids.max"), "10");
	assert_mech(BM_P_PIDS, "cgroup v2 pids.max", true);
	assert_mech(BM_P_MEM, NULL, false);
	assert_false(f.c.v2_cpu || f.c.v2_mem);
}

static void test_ceiling_cpuset_is_not_cpu(void **state)
{
	/* cpuset delegated, cpu not offered: no cpu.max to write, the meter holds the CPU */
	v2("cpuset memory", "cpuset", NULL);
	limits(500, 0, 0);
	assert_int_equal(apply(true), 0);
	assert_false(f.c.v2_cpu);
	assert_mech(BM_P_CPU, "meter", false);
	/* cpuset is asked for (the ceiling confines it to a CPU where there are two), never cpu */
	assert_string_not_equal(last_enabled(), "+cpu");
	assert_int_equal(bm_ceilings_cpu(&f.c, &f.lim, 0.25), -EOPNOTSUPP);
}

static void test_ceiling_undelegable_falls_back_to_meter(void **state)
{
	/* nothing offered: every ceiling is the meter's, no knob is touched */
	v2("", "", "cpu memory pids");
	limits(1000, 64 * MIB, 32);
	assert_int_equal(apply(true), 0);
	assert_mech(BM_P_CPU, "meter", false);
	assert_mech(BM_P_MEM, "meter", false);
	assert_mech(BM_P_PIDS, "meter", false);
	assert_string_equal(knob_take(f.eff, "cpu.max"), "");
	assert_string_equal(knob_take(f.eff, "memory.max"), "");
	assert_string_equal(knob_take(f.eff, "pids.max"), "");
	assert_string_equal(knob_take(f.parent, "cgroup.subtree_control"), "");
	assert_int_equal(bm_ceilings_cpu(&f.c, &f.lim, 0.5), -EOPNOTSUPP);
	assert_int_equal(bm_ceilings_mem_high(&f.c, 1e6), -EOPNOTSUPP);
}

static void test_ceiling_delegation_refused_falls_back(void **state)
{
	/* offered, but our cgroup holds processes: enabling it fails, the meter holds it */
	v2("memory", NULL, NULL);
	limits(0, 64 * MIB, 0);
	assert_int_equal(apply(false), 0);
	assert_mech(BM_P_MEM, "meter", false);
	assert_false(f.c.v2_mem);
	assert_string_equal(knob_take(f.eff, "memory.max"), "");
}

static void test_ceiling_no_limits_no_mech(void **state)
{
	int d;

	v2("cpu memory pids", "cpu", NULL);
	limits(0, 0, 0);
	/* throttling wanted: the cpu controller is enabled, but no ceiling is written */
	assert_int_equal(apply(true), 0);
	for (d = 0; d < BM_P__MAX; d++)
		assert_mech(d, NULL, false);
	assert_true(f.c.v2_cpu);
	assert_false(f.c.v2_mem);
	assert_string_equal(knob_take(f.eff, "cpu.max"), "");
	assert_int_equal(bm_ceilings_cpu(&f.c, &f.lim, 0.5), 0);
	assert_string_equal(knob_take(f.eff, "cpu.max"), "50000 100000");
	assert_int_equal(bm_ceilings_cpu(&f.c, &f.lim, 0), 0);
	assert_string_equal(knob_take(f.eff, "cpu.max"), "max 100000");
}

static void test_ceiling_cpu_throttle_round_trip_v2(void **state)
{
	v2("cpu", "cpu", NULL);
	limits(1500, 0, 0);
	assert_int_equal(apply(false), 0);
	knob_take(f.eff, "cpu.max");
	assert_int_equal(bm_ceilings_cpu(&f.c, &f.lim, 0.4), 0);
	assert_string_equal(knob_take(f.eff, "cpu.max"), "40000 100000");
	/* 0 restores the ceiling, not "no limit" */
	assert_int_equal(bm_ceilings_cpu(&f.c, &f.lim, 0), 0);
	assert_string_equal(knob_take(f.eff, "cpu.max"), "150000 100000");
}

static void test_ceiling_memory_high_round_trip(void **state)
{
	v2("memory", "memory", NULL);
	limits(0, 256 * MIB, 0);
	assert_int_equal(apply(false), 0);
	assert_int_equal(bm_ceilings_mem_high(&f.c, 1.5e8), 0);
	assert_string_equal(knob_take(f.eff, "memory.high"), "150000000");
	assert_int_equal(bm_ceilings_mem_high(&f.c, 0), 0);
	assert_string_equal(knob_take(f.eff, "memory.high"), "max");
	/* memory.max stays the ceiling throughout */
	assert_string_equal(knob_take(f.eff, "memory.max"), "268435456");
}

/*
 * A directory on a block device, for the disks the I/O ceilings are for:
 * $BM_IO_DIR (the VM suite's ramdisk), /var/tmp or /. The fake tree may be
 * on a tmpfs; a host with no disk at all is a broken setup, not a pass.
 */
static const char *disk_path(void)
{
	const char *env = getenv("BM_IO_DIR"), *cand[] = { env && *env ? env : "/var/tmp", "/var/tmp",
							   "/" };
	struct stat st;
	unsigned int i;

	for (i = 0; i < sizeof(cand) / sizeof(cand[0]); i++)
		if (!stat(cand[i], &st) && major(st.st_dev))
			return cand[i];
	fail_msg("no directory on a block device for the I/O ceilings (set BM_IO_DIR)");
	return NULL;
}

/* The disk behind it is a whole disk ("MAJ:MIN" that sysfs knows, not a partition). */
static void assert_whole_disk(const char *dev)
{
	unsigned int ma, mi;
	char sys[96];

	assert_int_equal(sscanf(dev, "%u:%u", &ma, &mi), 2);
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", ma, mi);
	assert_true(exists(sys));
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u/partition", ma, mi);
	assert_false(exists(sys));
}

/*
 * I/O ceilings on v2: io delegated (memory beside it, for cgroup
 * writeback), one io.max line per disk with every key: the ceilings, "max"
 * for none; the ladder's throttle lowers bps and keeps the iops.
 */
static void test_ceiling_v2_io_max(void **state)
{
	const char *paths[] = { disk_path(), "/proc", NULL };
	char want[160];
	int i;

	v2("cpu io memory pids", "io memory", NULL);
	fake_knob(f.eff, "io.max");
	limits(0, 0, 0);
	f.lim.io_read_bps = 4 * MIB;
	f.lim.io_write_bps = 8 * MIB;
	f.lim.io_iops = 100;
	assert_int_equal(apply(false), 0);
	assert_int_equal(bm_ceilings_io_apply(&f.env, &f.cg, NAME, &f.lim, false, paths, &f.c), 0);
	assert_true(f.c.v2_io);
	assert_string_equal(f.c.io_attribution, "blkcg");
	/* memory asked for after io, for cgroup writeback */
	assert_string_equal(last_enabled(), "+memory");
	/* /proc is on no block device: one disk */
	assert_int_equal(f.c.n_io_dev, 1);
	assert_whole_disk(f.c.io_dev[0]);
	for (i = 0; i < BM_IO_CEIL__MAX; i++)
		assert_string_equal(f.c.io_mech[i], "cgroup v2 io.max");
	snprintf(want, sizeof(want), "%s rbps=4194304 wbps=8388608 riops=100 wiops=100", f.c.io_dev[0]);
	assert_string_equal(knob_take(f.eff, "io.max"), want);
	assert_int_equal(bm_ceilings_io(&f.c, &f.lim, 2 * MIB), 0);
	snprintf(want, sizeof(want), "%s rbps=2097152 wbps=2097152 riops=100 wiops=100", f.c.io_dev[0]);
	assert_string_equal(knob_take(f.eff, "io.max"), want);
	/* the throttle lifted, only an iops ceiling: max for the rest */
	f.lim.io_read_bps = f.lim.io_write_bps = 0;
	assert_int_equal(bm_ceilings_io(&f.c, &f.lim, 0), 0);
	snprintf(want, sizeof(want), "%s rbps=max wbps=max riops=100 wiops=100", f.c.io_dev[0]);
	assert_string_equal(knob_take(f.eff, "io.max"), want);
}

/*
 * I/O ceilings on a hybrid host: a blkio twin beside the others, with the
 * throttle files of the disk behind a path on a disk (disk_path()).
 */
static void test_ceiling_hybrid_io_twin(void **state)
{
	const char *paths[] = { disk_path(), NULL };
	char want[64];

	v2("", "", "");
	hybrid(ALL_V1 | (1U << BM_V1_BLKIO));
	limits(0, 0, 0);
	f.lim.io_write_bps = 8 * MIB;
	f.lim.io_iops = 100;
	assert_int_equal(apply(false), 0);
	assert_int_equal(bm_ceilings_io_apply(&f.env, &f.cg, NAME, &f.lim, false, paths, &f.c), 0);
	assert_string_equal(f.c.v1_dir[BM_V1_BLKIO], f.twin[BM_V1_BLKIO]);
	assert_true(f.c.v1_blkio_dirfd >= 0);
	assert_string_equal(f.c.io_attribution, "v1_twin");
	assert_null(f.c.io_mech[BM_IO_CEIL_READ_BPS]);
	assert_int_equal(f.c.n_io_dev, 1);
	assert_whole_disk(f.c.io_dev[0]);
	assert_string_equal(f.c.io_mech[BM_IO_CEIL_WRITE_BPS], "cgroup v1 blkio.throttle.write_bps_device");
	snprintf(want, sizeof(want), "%s 8388608", f.c.io_dev[0]);
	assert_string_equal(knob_take(f.twin[BM_V1_BLKIO], "blkio.throttle.write_bps_device"), want);
	snprintf(want, sizeof(want), "%s 100", f.c.io_dev[0]);
	assert_string_equal(knob_take(f.twin[BM_V1_BLKIO], "blkio.throttle.write_iops_device"), want);
	/* the ladder's throttle: the lower of it and the ceiling, each way; 0 gives the ceilings back */
	assert_int_equal(bm_ceilings_io(&f.c, &f.lim, 4 * MIB), 0);
	snprintf(want, sizeof(want), "%s 4194304", f.c.io_dev[0]);
	assert_string_equal(knob_take(f.twin[BM_V1_BLKIO], "blkio.throttle.read_bps_device"), want);
	assert_string_equal(knob_take(f.twin[BM_V1_BLKIO], "blkio.throttle.write_bps_device"), want);
	assert_int_equal(bm_ceilings_io(&f.c, &f.lim, 0), 0);
	snprintf(want, sizeof(want), "%s 0", f.c.io_dev[0]);
	assert_string_equal(knob_take(f.twin[BM_V1_BLKIO], "blkio.throttle.read_bps_device"), want);
}

static void test_ceiling_hybrid_twins_under_our_cgroups(void **state)
{
	const int *join;
	int v, n;

	v2("", "", "");
	hybrid(ALL_V1);
	limits(1500, 256 * MIB, 64);
	assert_int_equal(apply(false), 0);
	assert_string_equal(knob_take(f.twin[BM_V1_MEMORY], "memory.limit_in_bytes"), "268435456");
	assert_string_equal(knob_take(f.twin[BM_V1_PIDS], "pids.max"), "64");
	assert_string_equal(knob_take(f.twin[BM_V1_CPU], "cpu.cfs_period_us"), "100000");
	assert_string_equal(knob_take(f.twin[BM_V1_CPU], "cpu.cfs_quota_us"), "150000");
	assert_mech(BM_P_MEM, "cgroup v1 memory.limit_in_bytes", true);
	assert_mech(BM_P_PIDS, "cgroup v1 pids.max", true);
	assert_mech(BM_P_CPU, "cgroup v1 cpu.cfs_quota_us", true);
	/* each twin beside nothing else, under our own cgroup of its hierarchy, never above */
	assert_int_equal(fake_n_made, 3);
	/* (the blkio twin comes with I/O ceilings: bm_ceilings_io_apply()) */
	for (v = 0; v < BM_V1_BLKIO; v++) {
		assert_string_equal(f.c.v1_dir[v], f.twin[v]);
		assert_true(exists(f.twin[v]));
	}
	assert_int_equal(fake_entries(fake_path("%s/v1/memory", f.root)), 1);
	assert_int_equal(fake_entries(fake_path("%s/v1/memory/job", f.root)), 1);
	assert_int_equal(fake_entries(fake_path("%s/v1/pids", f.root)), 1);
	assert_int_equal(fake_entries(fake_path("%s/v1/cpu", f.root)), 1);
	assert_int_equal(fake_entries(fake_path("%s/v1/cpu/user.slice", f.root)), 1);

	/* the child writes into each twin's own cgroup.procs */
	join = bm_ceilings_join_fds(&f.c, &n);
	assert_int_equal(n, BM_V1__MAX);
	assert_int_equal(join[BM_V1_BLKIO], -1);
	for (v = 0; v < BM_V1_BLKIO; v++) {
		char pid[16];

		snprintf(pid, sizeof(pid), "%d", 4200 + v);
		assert_int_equal(write(join[v], pid, strlen(pid)), (ssize_t)strlen(pid));
		assert_string_equal(knob_take(f.twin[v], "cgroup.procs"), pid);
	}

	bm_ceilings_release(&f.c);
	f.applied = false;
	assert_int_equal(fake_n_removed, 3);
	for (v = 0; v < BM_V1__MAX; v++) {
		assert_false(exists(f.twin[v]));
		assert_int_equal(f.c.join_fd[v], -1);
		assert_null(f.c.v1_dir[v]);
	}
	assert_int_equal(f.c.v1_cpu_dirfd, -1);
	assert_int_equal(f.c.v1_mem_dirfd, -1);
	/* our own cgroups stay */
	assert_true(exists(fake_path("%s/v1/memory/job", f.root)));
	assert_true(exists(fake_path("%s/v1/cpu/user.slice", f.root)));
}

static void test_ceiling_hybrid_prefers_v2(void **state)
{
	/* memory and pids on v2, cpu only on v1: one twin, for cpu */
	v2("memory pids", "memory pids", NULL);
	hybrid(ALL_V1);
	limits(2000, 128 * MIB, 16);
	assert_int_equal(apply(false), 0);
	assert_mech(BM_P_MEM, "cgroup v2 memory.max", true);
	assert_mech(BM_P_PIDS, "cgroup v2 pids.max", true);
	assert_mech(BM_P_CPU, "cgroup v1 cpu.cfs_quota_us", true);
	assert_int_equal(fake_n_made, 1);
	assert_false(exists(f.twin[BM_V1_MEMORY]));
	assert_false(exists(f.twin[BM_V1_PIDS]));
	assert_string_equal(knob_take(f.twin[BM_V1_CPU], "cpu.cfs_quota_us"), "200000");
	assert_int_equal(f.c.join_fd[BM_V1_MEMORY], -1);
	assert_true(f.c.join_fd[BM_V1_CPU] >= 0);
}

static void test_ceiling_hybrid_all_on_v2_makes_no_twin(void **state)
{
	/* v2 delegates all three: the v1 hierarchies are not touched, throttling is v2's */
	v2("cpu memory pids", "cpu memory pids", NULL);
	hybrid(ALL_V1);
	limits(1000, 128 * MIB, 16);
	assert_int_equal(apply(true), 0);
	assert_int_equal(fake_n_made, 0);
	assert_mech(BM_P_CPU, "cgroup v2 cpu.max", true);
	assert_int_equal(f.c.v1_cpu_dirfd, -1);
	assert_string_equal(knob_take(f.eff, "cpu.max"), "100000 100000");
	assert_int_equal(bm_ceilings_cpu(&f.c, &f.lim, 0.5), 0);
	assert_string_equal(knob_take(f.eff, "cpu.max"), "50000 100000");
}

static void test_ceiling_hybrid_cpu_throttle_round_trip(void **state)
{
	/* no CPU ceiling, but the ladder may throttle: a cpu twin without a quota */
	v2("", "", "");
	hybrid(1U << BM_V1_CPU);
	limits(0, 0, 0);
	assert_int_equal(apply(true), 0);
	assert_mech(BM_P_CPU, NULL, false);
	assert_string_equal(knob_take(f.twin[BM_V1_CPU], "cpu.cfs_quota_us"), "-1");
	assert_int_equal(bm_ceilings_cpu(&f.c, &f.lim, 0.25), 0);
	assert_string_equal(knob_take(f.twin[BM_V1_CPU], "cpu.cfs_quota_us"), "25000");
	assert_int_equal(bm_ceilings_cpu(&f.c, &f.lim, 0), 0);
	assert_string_equal(knob_take(f.twin[BM_V1_CPU], "cpu.cfs_quota_us"), "-1");
	/* memory.high is v2 only */
	assert_int_equal(bm_ceilings_mem_high(&f.c, 1e6), -EOPNOTSUPP);
	/* and without throttling or a ceiling, no twin at all */
	bm_ceilings_release(&f.c);
	assert_int_equal(apply(false), 0);
	assert_int_equal(fake_n_made, 1);
	assert_int_equal(bm_ceilings_cpu(&f.c, &f.lim, 0.25), -EOPNOTSUPP);
}

/* Our own CPUs: the placement confines an effect only where it leaves some out. */
static unsigned int our_cpus(cpu_set_t *s)
{
	assert_int_equal(sched_getaffinity(0, sizeof(*s), s), 0);
	return (unsigned int)CPU_COUNT(s);
}

/* The highest CPU of ours: the first one a placement picks. */
static const char *highest_cpu(void)
{
	static char buf[16];
	cpu_set_t s;
	int cpu;

	our_cpus(&s);
	for (cpu = CPU_SETSIZE - 1; cpu >= 0 && !CPU_ISSET(cpu, &s); cpu--)
		;
	snprintf(buf, sizeof(buf), "%d", cpu);
	return buf;
}

static void test_ceiling_v2_cpuset_confines_a_ceiling(void **state)
{
	cpu_set_t all;
	unsigned int n = our_cpus(&all);
	char list[256];

	/* a ceiling of one core on a node of more: one CPU, counted until released */
	v2("cpu cpuset", "cpu cpuset", NULL);
	limits(1000, 0, 0);
	assert_int_equal(apply(false), 0);
	assert_int_equal(bm_cpulist_format(&all, list, sizeof(list)), 0);
	if (n < 2) {
		assert_false(f.c.cpus_held);
		return;
	}
	assert_true(f.c.cpus_held);
	assert_string_equal(f.c.cpus_mech, "cgroup v2 cpuset.cpus");
	assert_string_equal(knob_take(f.eff, "cpuset.cpus"), highest_cpu());
	assert_int_equal(bm_cpuplace_load((unsigned int)atoi(highest_cpu())), 1);
	/* a throttle to fewer cores keeps the CPU; the ceiling's own cores, too */
	assert_int_equal(bm_ceilings_cpu(&f.c, &f.lim, 0.5), 0);
	assert_string_equal(knob_take(f.eff, "cpuset.cpus"), "");
	assert_int_equal(bm_ceilings_cpu(&f.c, &f.lim, 0), 0);
	assert_string_equal(knob_take(f.eff, "cpuset.cpus"), "");
	bm_ceilings_release(&f.c);
	f.applied = false;
	assert_int_equal(bm_cpuplace_load((unsigned int)atoi(highest_cpu())), 0);
	/* a ceiling as large as the node: no cpuset written */
	limits(1000ULL * n, 0, 0);
	assert_int_equal(apply(false), 0);
	assert_false(f.c.cpus_held);
	assert_string_equal(knob_take(f.eff, "cpuset.cpus"), "");
}

static void test_ceiling_hybrid_cpuset_twin_for_a_cap(void **state)
{
	cpu_set_t all;
	unsigned int n = our_cpus(&all);
	char list[256];

	/* no ceiling, but a cap may come: a cpuset twin with every CPU and the parent's nodes */
	v2("", "", "");
	hybrid((1U << BM_V1_CPU) | (1U << BM_V1_CPUSET));
	fake_put(f.env.v1_mount[BM_V1_CPUSET], "cpuset.mems", "0\n");
	limits(0, 0, 0);
	assert_int_equal(apply(BM_CEIL_CPU_CAP), 0);
	assert_int_equal(bm_cpulist_format(&all, list, sizeof(list)), 0);
	assert_string_equal(knob_take(f.twin[BM_V1_CPUSET], "cpuset.mems"), "0\n");
	assert_string_equal(knob_take(f.twin[BM_V1_CPUSET], "cpuset.cpus"), list);
	assert_false(f.c.cpus_held);
	/* the cap confines it, and the end of the cap gives its CPUs back */
	assert_int_equal(bm_ceilings_cpu(&f.c, &f.lim, 0.4), 0);
	assert_string_equal(knob_take(f.twin[BM_V1_CPU], "cpu.cfs_quota_us"), "40000");
	if (n >= 2) {
		assert_true(f.c.cpus_held);
		assert_string_equal(knob_take(f.twin[BM_V1_CPUSET], "cpuset.cpus"), highest_cpu());
	}
	assert_int_equal(bm_ceilings_cpu(&f.c, &f.lim, 0), 0);
	assert_false(f.c.cpus_held);
	if (n >= 2)
		assert_string_equal(knob_take(f.twin[BM_V1_CPUSET], "cpuset.cpus"), list);
	/* confined again, released: the twin goes and the CPU is free */
	assert_int_equal(bm_ceilings_cpu(&f.c, &f.lim, 0.4), 0);
	bm_ceilings_release(&f.c);
	f.applied = false;
	assert_false(exists(f.twin[BM_V1_CPUSET]));
	assert_int_equal(bm_cpuplace_load((unsigned int)atoi(highest_cpu())), 0);
	/* without a cap or a ceiling that confines: no cpuset twin is made */
	assert_int_equal(apply(true), 0);
	assert_false(exists(f.twin[BM_V1_CPUSET]));
	assert_int_equal(f.c.cpuset_dirfd, -1);
}

static void test_ceiling_cap_within_a_group(void **state)
{
	cpu_set_t all, group;
	unsigned int n = our_cpus(&all);
	char list[256], low[16];
	int cpu;

	/* a cap may come; its tenant's effects share one CPU, not the one it would pick alone */
	v2("cpu cpuset", "cpu cpuset", NULL);
	limits(0, 0, 0);
	assert_int_equal(apply(BM_CEIL_CPU_CAP), 0);
	assert_int_equal(bm_cpulist_format(&all, list, sizeof(list)), 0);
	if (n < 2)
		return;
	for (cpu = 0; !CPU_ISSET(cpu, &all); cpu++)
		;
	CPU_ZERO(&group);
	CPU_SET(cpu, &group);
	snprintf(low, sizeof(low), "%d", cpu);
	assert_int_equal(bm_ceilings_cpus_within(&f.c, &group), 0);
	assert_string_equal(knob_take(f.eff, "cpuset.cpus"), low);
	assert_true(f.c.cpus_held);
	assert_int_equal(bm_cpuplace_load((unsigned int)cpu), 1);
	/* the same group again, then the cap: it stays where it is, nothing written */
	assert_int_equal(bm_ceilings_cpus_within(&f.c, &group), 0);
	assert_int_equal(bm_ceilings_cpu(&f.c, &f.lim, 0.1), 0);
	assert_string_equal(knob_take(f.eff, "cpuset.cpus"), "");
	assert_string_equal(knob_take(f.eff, "cpu.max"), "10000 100000");
	/* out of the group, still capped: one CPU is right, so it stays put */
	assert_int_equal(bm_ceilings_cpus_within(&f.c, NULL), 0);
	assert_string_equal(knob_take(f.eff, "cpuset.cpus"), "");
	/* the cap lifts: every CPU again, none held */
	assert_int_equal(bm_ceilings_cpu(&f.c, &f.lim, 0), 0);
	assert_string_equal(knob_take(f.eff, "cpuset.cpus"), list);
	assert_false(f.c.cpus_held);
	assert_int_equal(bm_cpuplace_load((unsigned int)cpu), 0);
	/* a group with none of our CPUs is no group */
	CPU_ZERO(&group);
	CPU_SET(CPU_SETSIZE - 1, &group);
	if (!CPU_ISSET(CPU_SETSIZE - 1, &all)) {
		assert_int_equal(bm_ceilings_cpus_within(&f.c, &group), 0);
		assert_string_equal(knob_take(f.eff, "cpuset.cpus"), "");
		assert_false(f.c.cpus_held);
	}
}

static void test_ceiling_missing_hierarchy_falls_back(void **state)
{
	/* hybrid, but only a cpu hierarchy: memory and pids are the meter's */
	v2("", "", "");
	hybrid(1U << BM_V1_CPU);
	limits(1000, 64 * MIB, 8);
	assert_int_equal(apply(false), 0);
	assert_mech(BM_P_MEM, "meter", false);
	assert_mech(BM_P_PIDS, "meter", false);
	assert_mech(BM_P_CPU, "cgroup v1 cpu.cfs_quota_us", true);
	assert_int_equal(fake_n_made, 1);
}

static void test_ceiling_existing_twin_is_not_taken(void **state)
{
	/* a directory of that name is there already: not ours to write or remove */
	v2("", "", "");
	hybrid(1U << BM_V1_MEMORY);
	fake_mkdirs(f.twin[BM_V1_MEMORY]);
	limits(0, 64 * MIB, 0);
	assert_int_equal(apply(false), 0);
	assert_mech(BM_P_MEM, "meter", false);
	assert_null(f.c.v1_dir[BM_V1_MEMORY]);
	bm_ceilings_release(&f.c);
	f.applied = false;
	assert_int_equal(fake_n_removed, 0);
	assert_true(exists(f.twin[BM_V1_MEMORY]));
}

static void test_ceiling_write_failure_removes_what_was_made(void **state)
{
	int v;

	/* the third twin's quota cannot be written: all three twins go again */
	v2("", "", "");
	hybrid(ALL_V1);
	fake_broken = "cpu.cfs_quota_us";
	limits(1000, 64 * MIB, 8);
	assert_int_equal(apply(false), -EISDIR);
	assert_int_equal(fake_n_made, 3);
	assert_int_equal(fake_n_removed, 3);
	for (v = 0; v < BM_V1__MAX; v++) {
		assert_false(exists(f.twin[v]));
		assert_int_equal(f.c.join_fd[v], -1);
	}
	assert_int_equal(f.c.v1_cpu_dirfd, -1);
	assert_int_equal(f.c.v1_mem_dirfd, -1);
	assert_int_equal(fake_entries(fake_path("%s/v1/memory/job", f.root)), 0);
	assert_int_equal(fake_entries(fake_path("%s/v1/pids", f.root)), 0);
}

static void test_ceiling_v2_write_failure_is_an_error(void **state)
{
	/* memory delegated but memory.oom.group will not take a write: no half a ceiling */
	fake_broken = "memory.oom.group";
	v2("memory", "memory", NULL);
	hybrid(ALL_V1);
	limits(0, 64 * MIB, 0);
	assert_int_equal(apply(false), -EISDIR);
	assert_int_equal(fake_n_made, 0);
}

static void test_ceiling_events_from_fixtures(void **state)
{
	uint64_t ooms, refused;

	/* kills and refusals counted on both sides of a hybrid host */
	v2("", "", "memory pids");
	hybrid((1U << BM_V1_MEMORY) | (1U << BM_V1_PIDS));
	limits(0, 64 * MIB, 8);
	assert_int_equal(apply(false), 0);
	bm_ceilings_events(&f.c, &ooms, &refused);
	assert_true(ooms == 0 && refused == 0);
	fake_put_fixture(f.eff, "memory.events", "v2/memory.events");
	fake_put_fixture(f.eff, "pids.events", "v2/pids.events");
	bm_ceilings_events(&f.c, &ooms, &refused);
	assert_true(ooms == 1);		/* oom_kill, not oom_group_kill or oom */
	assert_true(refused == 7);
	fake_put_fixture(f.twin[BM_V1_MEMORY], "memory.oom_control", "v1/memory.oom_control");
	fake_put_fixture(f.twin[BM_V1_PIDS], "pids.events", "v1/pids.events");
	bm_ceilings_events(&f.c, &ooms, &refused);
	assert_true(ooms == 1 + 2);
	assert_true(refused == 7 + 3);
	/* files at 0, as a fresh cgroup has them */
	fake_put_fixture(f.eff, "memory.events", "v2/memory.events.none");
	fake_put_fixture(f.twin[BM_V1_MEMORY], "memory.oom_control", "v1/memory.oom_control.none");
	bm_ceilings_events(&f.c, &ooms, &refused);
	assert_true(ooms == 0);
}

static void test_ceiling_mem_peak(void **state)
{
	uint64_t peak = 1;

	v2("memory", "memory", NULL);
	limits(0, 256 * MIB, 0);
	assert_int_equal(apply(false), 0);
	fake_put_fixture(f.eff, "memory.peak", "v2/memory.peak");
	assert_int_equal(bm_ceilings_mem_peak(&f.c, &peak), 0);
	assert_true(peak == 209715200);
	fake_put(f.eff, "memory.peak", "12ab\n");
	assert_int_equal(bm_ceilings_mem_peak(&f.c, &peak), -EINVAL);
	/* on a hybrid host, the v1 twin's high-water mark */
	teardown(state);
	setup(state);
	v2("", "", "");
	hybrid(1U << BM_V1_MEMORY);
	limits(0, 256 * MIB, 0);
	assert_int_equal(apply(false), 0);
	fake_put_fixture(f.twin[BM_V1_MEMORY], "memory.max_usage_in_bytes",
			 "v1/memory.max_usage_in_bytes");
	assert_int_equal(bm_ceilings_mem_peak(&f.c, &peak), 0);
	assert_true(peak == 104857600);
	/* no memory controller on the effect: no peak */
	bm_ceilings_release(&f.c);
	limits(0, 0, 0);
	assert_int_equal(apply(false), 0);
	assert_int_equal(bm_ceilings_mem_peak(&f.c, &peak), -ENOENT);
}

static void test_ceiling_adopt_finds_twins(void **state)
{
	uint64_t ooms, refused;
	int v;

	/* an earlier agent made memory and cpu twins of this effect */
	v2("", "", "");
	hybrid(ALL_V1);
	assert_int_equal(fake_make_dir(f.twin[BM_V1_MEMORY], 0755), 0);
	assert_int_equal(fake_make_dir(f.twin[BM_V1_CPU], 0755), 0);
	fake_put_fixture(f.twin[BM_V1_MEMORY], "memory.oom_control", "v1/memory.oom_control");
	bm_ceilings_adopt(&f.env, &f.cg, NAME, &f.c);
	f.applied = true;
	assert_string_equal(f.c.v1_dir[BM_V1_MEMORY], f.twin[BM_V1_MEMORY]);
	assert_string_equal(f.c.v1_dir[BM_V1_CPU], f.twin[BM_V1_CPU]);
	assert_null(f.c.v1_dir[BM_V1_PIDS]);
	for (v = 0; v < BM_V1__MAX; v++)
		assert_int_equal(f.c.join_fd[v], -1);
	bm_ceilings_events(&f.c, &ooms, &refused);
	assert_true(ooms == 2 && refused == 0);
	/* the ladder can throttle through the adopted cpu twin */
	assert_int_equal(bm_ceilings_cpu(&f.c, &f.lim, 0.5), 0);
	assert_string_equal(knob_take(f.twin[BM_V1_CPU], "cpu.cfs_quota_us"), "50000");
	f.c.fs = &fake_cgfs;
	bm_ceilings_release(&f.c);
	f.applied = false;
	assert_false(exists(f.twin[BM_V1_MEMORY]));
	assert_false(exists(f.twin[BM_V1_CPU]));
	/* a v2 host has no twins to find, whatever directories there are */
	assert_int_equal(fake_make_dir(f.twin[BM_V1_MEMORY], 0755), 0);
	f.env.mode = BM_CG_V2;
	bm_ceilings_adopt(&f.env, &f.cg, NAME, &f.c);
	assert_null(f.c.v1_dir[BM_V1_MEMORY]);
	assert_int_equal(f.c.v1_mem_dirfd, -1);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_ceiling_v2_delegable_writes_controllers),
		T(test_ceiling_v2_delegates_from_parent),
		T(test_ceiling_cpuset_is_not_cpu),
		T(test_ceiling_undelegable_falls_back_to_meter),
		T(test_ceiling_delegation_refused_falls_back),
		T(test_ceiling_no_limits_no_mech),
		T(test_ceiling_cpu_throttle_round_trip_v2),
		T(test_ceiling_memory_high_round_trip),
		T(test_ceiling_hybrid_twins_under_our_cgroups),
		T(test_ceiling_hybrid_io_twin),
		T(test_ceiling_v2_io_max),
		T(test_ceiling_hybrid_prefers_v2),
		T(test_ceiling_hybrid_all_on_v2_makes_no_twin),
		T(test_ceiling_hybrid_cpu_throttle_round_trip),
		T(test_ceiling_v2_cpuset_confines_a_ceiling),
		T(test_ceiling_hybrid_cpuset_twin_for_a_cap),
		T(test_ceiling_cap_within_a_group),
		T(test_ceiling_missing_hierarchy_falls_back),
		T(test_ceiling_existing_twin_is_not_taken),
		T(test_ceiling_write_failure_removes_what_was_made),
		T(test_ceiling_v2_write_failure_is_an_error),
		T(test_ceiling_events_from_fixtures),
		T(test_ceiling_mem_peak),
		T(test_ceiling_adopt_finds_twins),
	};
#undef T

	return cmocka_run_group_tests_name("ceiling", tests, NULL, NULL);
}
