// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Where an agent in a container puts its effects and shims (agent/place.h),
 * on this machine's real hierarchies, under the test's own cgroups: a
 * process alone in a v2 cgroup moves into its leaf (and does not when it is
 * not alone); the leaf of a parent in every hierarchy we are in is made
 * (a v1 cpuset one with CPUs and memory nodes, or no task could join it) and
 * a spawner started in it lives there, in every hierarchy, with its shims;
 * a join that fails starts nothing. Everything made is removed.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "integ.h"
#include "agent/spawner.h"
#include "base/cgroup.h"
#include "base/cgroup_node.h"
#include "base/common.h"
#include "meter/preflight.h"

static char parent[256];	/* under the deepest of our cgroups, in every hierarchy */
static struct bm_cgroup_env env;
static char v2_self_dir[PATH_MAX];

/* Our cgroups' paths: the deepest, if it holds all the others ("/" otherwise). */
static void pick_parent(void)
{
	char line[4096], paths[16][1024], *p;
	size_t best = 0;
	int n = 0, i;
	FILE *f = fopen("/proc/self/cgroup", "re");

	assert_non_null(f);
	while (n < 16 && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		p = strchr(strchr(line, ':') + 1, ':') + 1;
		snprintf(paths[n], sizeof(paths[n]), "%s", strcmp(p, "/") ? p : "");
		if (strlen(paths[n]) > strlen(paths[best]))
			best = (size_t)n;
		n++;
	}
	fclose(f);
	for (i = 0; i < n; i++)
		if (strncmp(paths[best], paths[i], strlen(paths[i])))
			paths[best][0] = '\0';
	snprintf(parent, sizeof(parent), "%s/bmit-place-%d", paths[best], (int)getpid());
}

/* Per hierarchy: the first directory of parent's path that did not exist before the test. */
static char first_new[16][PATH_MAX + 300];
static int n_hier;

static void note_new_dirs(void)
{
	struct bm_cg_hier h[16];
	char *p;
	int i;

	n_hier = bm_cgroup_hierarchies("/proc/self/mountinfo", "/proc/self/cgroup", h, 16);
	assert_true(n_hier > 0);
	for (i = 0; i < n_hier; i++) {
		snprintf(first_new[i], sizeof(first_new[i]), "%s%s", h[i].mount, parent);
		/* climb while the parent of first_new[i] does not exist either */
		for (;;) {
			p = strrchr(first_new[i], '/');
			*p = '\0';
			if (!access(first_new[i], F_OK)) {
				*p = '/';
				break;
			}
		}
	}
}

/* rmdir parent/agent, parent, and what above it the test made, in every hierarchy. */
static void remove_parent(void)
{
	struct bm_cg_hier h[16];
	char path[PATH_MAX + 300], *p;
	int n = bm_cgroup_hierarchies("/proc/self/mountinfo", "/proc/self/cgroup", h, 16), i, t;

	for (i = 0; i < n && i < n_hier; i++) {
		snprintf(path, sizeof(path), "%s%s/%s", h[i].mount, parent, BM_CGROUP_LEAF);
		for (t = 0; t < 100 && rmdir(path) && errno == EBUSY; t++)
			usleep(10000);
		snprintf(path, sizeof(path), "%s%s", h[i].mount, parent);
		while (strlen(path) >= strlen(first_new[i]) && !rmdir(path) && (p = strrchr(path, '/')))
			*p = '\0';
	}
}

static int setup(void **state)
{
	pick_parent();
	note_new_dirs();
	assert_int_equal(bm_cgroup_env_detect("/proc/self/mountinfo", "/proc/self/cgroup", &env), 0);
	assert_int_equal(bm_cgroup_env_self_dir(&env, v2_self_dir, sizeof(v2_self_dir)), 0);
	return 0;
}

static int teardown(void **state)
{
	remove_parent();
	return 0;
}

/* A child that moves into dir's cgroup, then waits for a byte on its pipe; pid into *pid. */
static int park_child(const char *dir, pid_t *pid)
{
	int p[2], q[2];
	char c;

	assert_int_equal(pipe(p), 0);
	assert_int_equal(pipe(q), 0);
	*pid = fork();
	assert_true(*pid >= 0);
	if (!*pid) {
		char procs[PATH_MAX + 32];
		int ret;

		snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
		ret = bm_write_file(AT_FDCWD, procs, "0");
		if (write(q[1], &ret, sizeof(ret)) != sizeof(ret))
			_exit(1);
		(void)!read(p[0], &c, 1);
		_exit(0);
	}
	close(p[0]);
	close(q[1]);
	{
		int ret = -1;

		assert_int_equal(read(q[0], &ret, sizeof(ret)), sizeof(ret));
		assert_int_equal(ret, 0);
	}
	close(q[0]);
	return p[1];
}

static void test_enter_leaf_when_alone(void **state)
{
	char dir[PATH_MAX + 300], leaf[PATH_MAX + 400], procs[PATH_MAX + 500], self_cg[4096];
	pid_t pid, other;
	int go, go2, st, n;

	snprintf(dir, sizeof(dir), "%s/bmit-leaf-%d", v2_self_dir, (int)getpid());
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(leaf, sizeof(leaf), "%s/%s", dir, BM_CGROUP_LEAF);
	/* a child alone in dir: it moves into dir/agent, and dir holds no process after */
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		char procs[PATH_MAX + 320];

		snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
		if (bm_write_file(AT_FDCWD, procs, "0"))
			_exit(10);
		_exit(bm_cgroup_enter_leaf(dir, BM_CGROUP_LEAF) == 1 ? 0 : 11);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	/* not alone: with two other processes in dir, nobody moves */
	go = park_child(dir, &other);
	go2 = park_child(dir, &pid);
	assert_int_equal(bm_cgroup_enter_leaf(dir, BM_CGROUP_LEAF), 0);
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", leaf);
	assert_int_equal(bm_read_file(AT_FDCWD, procs, self_cg, sizeof(self_cg)), 0);
	(void)!write(go, "x", 1);
	(void)!write(go2, "x", 1);
	close(go);
	close(go2);
	waitpid(other, NULL, 0);
	waitpid(pid, NULL, 0);
	assert_int_equal(rmdir(leaf), 0);
	for (n = 0; n < 100 && rmdir(dir) && errno == EBUSY; n++)
		usleep(10000);
	assert_int_equal(access(dir, F_OK), -1);
}

/* Does /proc/PID/cgroup put pid in parent/agent in every hierarchy? */
static bool in_leaf_everywhere(pid_t pid)
{
	char path[64], line[4096], want[512];
	bool all = true;
	int lines = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	snprintf(want, sizeof(want), "%s/%s", parent, BM_CGROUP_LEAF);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		lines++;
		if (strcmp(strchr(strchr(line, ':') + 1, ':') + 1, want)) {
			integ_note("pid %d: %s, not %s", (int)pid, line, want);
			all = false;
		}
	}
	fclose(f);
	return all && lines > 0;
}

static void test_spawner_in_the_leaf_everywhere(void **state)
{
	char why[512], path[PATH_MAX + 300];
	int fds[16], n, i;
	struct bm_spawner *sp;
	struct bm_cg_hier h[16];
	int nh = bm_cgroup_hierarchies("/proc/self/mountinfo", "/proc/self/cgroup", h, 16);

	n = bm_cgroup_leaf_open(parent, fds, 16, why, sizeof(why));
	if (n < 0)
		fail_msg("bm_cgroup_leaf_open(%s): %s", parent, why);
	assert_int_equal(n, nh);
	integ_note("the leaf %s/%s in %d hierarchies", parent, BM_CGROUP_LEAF, n);
	/* a new v1 cpuset cgroup has CPUs and memory nodes (it could not take a task else) */
	for (i = 0; i < nh; i++) {
		char buf[256];

		snprintf(path, sizeof(path), "%s%s/%s/cpuset.cpus", h[i].mount, parent, BM_CGROUP_LEAF);
		if (!bm_read_file(AT_FDCWD, path, buf, sizeof(buf)))
			fail_msg("%s is empty", path);
	}
	sp = bm_spawner__start_in(NULL, fds, n);
	for (i = 0; i < n; i++)
		close(fds[i]);
	assert_non_null(sp);
	/* the spawner's pid: the one process in the v2 leaf */
	snprintf(path, sizeof(path), "%s%s/%s/cgroup.procs", env.v2_mount, parent, BM_CGROUP_LEAF);
	{
		char buf[256];
		long pid;

		assert_true(bm_read_file(AT_FDCWD, path, buf, sizeof(buf)) > 0);
		pid = strtol(buf, NULL, 10);
		assert_true(pid > 0);
		assert_true(in_leaf_everywhere((pid_t)pid));
	}
	bm_spawner__free(sp);
}

static void test_spawner_join_failure_starts_nothing(void **state)
{
	int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
	struct bm_spawner *sp;

	/* writing to a read-only fd fails: the spawner says so and is gone */
	assert_true(fd >= 0);
	errno = 0;
	sp = bm_spawner__start_in(NULL, &fd, 1);
	close(fd);
	assert_null(sp);
	assert_int_equal(errno, EBADF);
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_enter_leaf_when_alone),
		cmocka_unit_test(test_spawner_in_the_leaf_everywhere),
		cmocka_unit_test(test_spawner_join_failure_starts_nothing),
	};
	int rc = integ_gate("test_place");

	if (rc)
		return rc;
	return cmocka_run_group_tests_name("place", tests, setup, teardown);
}
