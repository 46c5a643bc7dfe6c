/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What every integration test binary shares: the root/BTF gate (STYLE.md
 * section 8), where the workloads are, and range assertions that print the
 * value that failed. Included once per test binary, after <cmocka.h>.
 */
#ifndef BM_INTEG_H
#define BM_INTEG_H

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <linux/magic.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <unistd.h>

/* cmocka's TAP output passes lines starting with '#' through as comments. */
#define integ_note(fmt, ...) print_message("# " fmt "\n", ##__VA_ARGS__)

/* Floating-point range check that says what it got; cmocka 1.1.5 has none. */
#define assert_between(v, lo, hi)                                                          \
	do {                                                                                \
		double v_ = (v), lo_ = (lo), hi_ = (hi);                                    \
		if (!(v_ >= lo_ && v_ <= hi_))                                              \
			fail_msg("%s = %.9g, expected within [%.9g, %.9g]", #v, v_, lo_, hi_); \
	} while (0)

/*
 * Integration tests need root and kernel BTF. Outside CI a missing one is a
 * skip (exit 77, saying why); under CI=true it is a failure, because CI
 * runs as root on a kernel with BTF and a silent skip would hide a broken
 * runner. Returns 0 to go on, else the exit status for main().
 */
static inline int integ_gate(const char *prog)
{
	const char *why = NULL;

	if (geteuid() != 0)
		why = "not root";
	else if (access("/sys/kernel/btf/vmlinux", R_OK))
		why = "no /sys/kernel/btf/vmlinux (kernel without BTF)";
	if (!why)
		return 0;
	if (getenv("CI") && !strcmp(getenv("CI"), "true")) {
		fprintf(stderr, "%s: %s, and CI=true: every integration test must run\n", prog, why);
		return 1;
	}
	printf("# %s: skipped: %s\n", prog, why);
	return 77;
}

/*
 * Run at nice -20, and so does everything we start. The CPU truths ("a
 * spinning thread holds a whole core for a window") hold only when nothing
 * else takes that core; on a shared machine (a compiler, a qemu guest) a
 * nice-0 neighbour then gets ~1 % of it instead of half. With autogroup
 * scheduling, nice only ranks tasks within one session's group and every
 * session's group weighs the same, so we start our own session (when we
 * are not a process group leader, as under tests/run.sh) and raise its
 * group too. This changes which task runs, never what the meter sees of it.
 */
static inline void integ_favour(const char *prog)
{
	int fd;

	if (setsid() >= 0) {
		fd = open("/proc/self/autogroup", O_WRONLY | O_CLOEXEC);
		if (fd >= 0 && write(fd, "-20", 3) != 3)
			printf("# %s: cannot raise our autogroup (%s)\n", prog, strerror(errno));
		if (fd >= 0)
			close(fd);
	} else {
		printf("# %s: no session of our own (%s): other sessions share the CPUs equally\n",
		       prog, strerror(errno));
	}
	if (setpriority(PRIO_PROCESS, 0, -20))
		printf("# %s: cannot raise priority (%s): CPU peaks may suffer from other load\n",
		       prog, strerror(errno));
}

/*
 * Leave out the tests that $BM_TEST_FILTER names (space-separated names or
 * globs): the VM harness (tests/vm/vm-tests.sh) uses it for the ground
 * truths that emulation cannot keep. cmocka 1.1.5 takes one pattern only,
 * so the array is compacted here. Returns how many tests are left.
 */
static inline size_t integ_filter(struct CMUnitTest *tests, size_t n)
{
	const char *filter = getenv("BM_TEST_FILTER");
	char pat[256];
	size_t i, kept = 0;

	for (i = 0; i < n; i++) {
		const char *p = filter;
		bool out = false;
		int len;

		while (p && *p && !out) {
			p += strspn(p, " \t");
			len = (int)strcspn(p, " \t");
			snprintf(pat, sizeof(pat), "%.*s", len, p);
			out = len && !fnmatch(pat, tests[i].name, 0);
			p += len;
		}
		if (out)
			printf("# left out by BM_TEST_FILTER: %s\n", tests[i].name);
		else
			tests[kept++] = tests[i];
	}
	return kept;
}

/*
 * The CPU a process spends starting (exec, dynamic linking) and exiting:
 * a few ms natively; under qemu's emulation (BM_VM=1) several times that,
 * and time the host takes a vCPU away is charged to the guest as CPU too.
 */
static inline double integ_startup_cpu_s(void)
{
	return getenv("BM_VM") ? 0.3 : 0.02;
}

/*
 * How late a step of the ladder may come after its timer: a window or so
 * natively; under emulation the host takes the vCPU away for longer.
 */
static inline double integ_timer_slack_ms(void)
{
	return getenv("BM_VM") ? 300 : 100;
}

/* A policy file shipped in tools/policies ($BM_POLICIES where the tests run elsewhere). */
static inline const char *integ_policy(char *buf, size_t len, const char *name)
{
	const char *dir = getenv("BM_POLICIES");

	snprintf(buf, len, "%s/%s", dir && *dir ? dir : "tools/policies", name);
	return buf;
}

/* Path of workload name: $BM_WORKLOADS (default build/workloads) + name, into buf. */
static inline const char *integ_workload(char *buf, size_t len, const char *name)
{
	const char *dir = getenv("BM_WORKLOADS");

	snprintf(buf, len, "%s/%s", dir && *dir ? dir : "build/workloads", name);
	return buf;
}

/*
 * Every mount of fstype at or under path `under` in our mount namespace
 * (make it private first), detached. Returns how many, or -errno.
 */
static inline int integ_umount_all(const char *fstype, const char *under)
{
	char line[4096], mnt[PATH_MAX], type[64];
	int n = 0, again = 1;

	while (again) {
		FILE *f = fopen("/proc/self/mountinfo", "re");

		if (!f)
			return -errno;
		again = 0;
		while (fgets(line, sizeof(line), f)) {
			char *sep = strstr(line, " - ");

			if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
			    sscanf(sep + 3, "%63s", type) != 1 || strcmp(type, fstype) ||
			    strncmp(mnt, under, strlen(under)))
				continue;
			if (umount2(mnt, MNT_DETACH)) {
				fclose(f);
				return -errno;
			}
			n++;
			again = 1;
		}
		fclose(f);
	}
	return n;
}

/* Set by integ_fresh_node(): no agent has mounted a bpffs in our namespace yet. */
static bool integ_no_bpffs_yet;

/*
 * A node just booted has no BPF filesystem at /sys/fs/bpf, and the agent
 * mounts one (README). The host may have one (made by hand, or by an
 * earlier test): from here on this process and its children are in a
 * private mount namespace where every bpffs under /sys/fs/bpf is detached,
 * so the first agent started finds none; the host keeps its mounts.
 * Returns 0 to go on, else the exit status for main().
 */
static inline int integ_fresh_node(const char *prog)
{
	struct statfs st;
	int n;

	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		fprintf(stderr, "%s: failed to make a private mount namespace: %s\n", prog,
			strerror(errno));
		return 1;
	}
	n = integ_umount_all("bpf", "/sys/fs/bpf");
	if (n < 0 || (!statfs("/sys/fs/bpf", &st) && st.f_type == BPF_FS_MAGIC)) {
		fprintf(stderr, "%s: failed to unmount bpffs at /sys/fs/bpf: %s\n", prog,
			n < 0 ? strerror(-n) : "still mounted");
		return 1;
	}
	integ_no_bpffs_yet = true;
	printf("# %s: a fresh node: no bpffs at /sys/fs/bpf (%d detached in our mount namespace)\n",
	       prog, n);
	return 0;
}

#endif /* BM_INTEG_H */
