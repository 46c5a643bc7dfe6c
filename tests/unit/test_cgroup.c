// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/base/cgroup.h bm_cgroup_env_detect(): where cgroup v2 is and which
 * cgroup we are in, read from mountinfo and /proc/self/cgroup fixtures
 * (tests/fixtures/cgroup/) of the layouts burstmeter meets: this build
 * machine's hybrid, Debian's systemd hybrid, a pure v2 node, a container,
 * escaped mount points, no v2 at all and garbage.
 *
 * Fixtures are found through $BM_FIXTURES, else beside this source file
 * (__FILE__ is tests/unit/test_cgroup.c as make passes it), else
 * tests/fixtures relative to the working directory.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/cgroup.h"

static void fixture(char *buf, size_t len, const char *name)
{
	const char *env = getenv("BM_FIXTURES");
	char src[] = __FILE__, *slash;

	if (env && *env) {
		snprintf(buf, len, "%s/cgroup/%s", env, name);
		return;
	}
	/* strip "unit/test_cgroup.c" to reach tests/ */
	slash = strrchr(src, '/');
	if (slash)
		*slash = '\0';
	slash = strrchr(src, '/');
	if (slash) {
		*slash = '\0';
		snprintf(buf, len, "%s/fixtures/cgroup/%s", src, name);
	} else {
		snprintf(buf, len, "tests/fixtures/cgroup/%s", name);
	}
	/* a missing fixture would pass for "no cgroup2" (-ENOENT): say so instead */
	if (access(buf, R_OK))
		fail_msg("fixture %s not found: run from the repository root or set BM_FIXTURES",
			 buf);
}

/* Detect from fixtures <mi>.mountinfo and <cg>.cgroup (or any two names with a '.'). */
static int detect(const char *mi, const char *cg, struct bm_cgroup_env *env)
{
	char mpath[4096], cpath[4096], mname[256], cname[256];

	snprintf(mname, sizeof(mname), strchr(mi, '.') ? "%s" : "%s.mountinfo", mi);
	snprintf(cname, sizeof(cname), strchr(cg, '.') ? "%s" : "%s.cgroup", cg);
	fixture(mpath, sizeof(mpath), mname);
	fixture(cpath, sizeof(cpath), cname);
	return bm_cgroup_env_detect(mpath, cpath, env);
}

static struct bm_cgroup_env env;	/* 3 x 2 x PATH_MAX + 2 x PATH_MAX: keep it off the stack */

static void test_detect_this_machines_hybrid(void **state)
{
	assert_int_equal(detect("hybrid", "hybrid", &env), 0);
	assert_int_equal(env.mode, BM_CG_HYBRID);
	assert_string_equal(env.v2_mount, "/sys/fs/cgroup/unified");
	assert_string_equal(env.v2_self, "/");
	assert_string_equal(env.v1_mount[BM_V1_MEMORY], "/sys/fs/cgroup/memory");
	assert_string_equal(env.v1_self[BM_V1_MEMORY],
			    "/process_api/80281185ea7d272e579a952db3169aae");
	assert_string_equal(env.v1_mount[BM_V1_PIDS], "/sys/fs/cgroup/pids");
	assert_string_equal(env.v1_self[BM_V1_PIDS], "/");
	/* cpu alone here, beside separate cpuacct and cpuset hierarchies */
	assert_string_equal(env.v1_mount[BM_V1_CPU], "/sys/fs/cgroup/cpu");
	assert_string_equal(env.v1_self[BM_V1_CPU], "/");
}

static void test_detect_debian_systemd_hybrid(void **state)
{
	assert_int_equal(detect("debian-hybrid", "debian-hybrid", &env), 0);
	assert_int_equal(env.mode, BM_CG_HYBRID);
	assert_string_equal(env.v2_mount, "/sys/fs/cgroup/unified");
	assert_string_equal(env.v2_self, "/user.slice/user-1000.slice/session-2.scope");
	assert_string_equal(env.v1_mount[BM_V1_MEMORY], "/sys/fs/cgroup/memory");
	assert_string_equal(env.v1_self[BM_V1_MEMORY],
			    "/user.slice/user-1000.slice/session-2.scope");
	assert_string_equal(env.v1_mount[BM_V1_PIDS], "/sys/fs/cgroup/pids");
	assert_string_equal(env.v1_self[BM_V1_PIDS], "/user.slice/user-1000.slice/session-2.scope");
	/* "cpu" is a word of "cpu,cpuacct", never a prefix of the cpuset mounted before it */
	assert_string_equal(env.v1_mount[BM_V1_CPU], "/sys/fs/cgroup/cpu,cpuacct");
	assert_string_equal(env.v1_self[BM_V1_CPU], "/user.slice");
}

static void test_detect_docker_hybrid_roots(void **state)
{
	/* every hierarchy mounted at the container's cgroup: paths are relative to it */
	assert_int_equal(detect("docker-hybrid", "docker-hybrid", &env), 0);
	assert_int_equal(env.mode, BM_CG_HYBRID);
	assert_string_equal(env.v2_mount, "/sys/fs/cgroup/unified");
	assert_string_equal(env.v2_self, "/");
	assert_string_equal(env.v1_mount[BM_V1_MEMORY], "/sys/fs/cgroup/memory");
	assert_string_equal(env.v1_self[BM_V1_MEMORY], "/job");
	assert_string_equal(env.v1_self[BM_V1_CPU], "/");
	/* our pids cgroup is outside the mounted subtree: no pids ceiling from v1 */
	assert_string_equal(env.v1_mount[BM_V1_PIDS], "");
}

static void test_detect_pure_v2(void **state)
{
	int i;

	assert_int_equal(detect("v2", "v2", &env), 0);
	assert_int_equal(env.mode, BM_CG_V2);
	assert_string_equal(env.v2_mount, "/sys/fs/cgroup");
	assert_string_equal(env.v2_self, "/kubepods.slice/pod1/ctr");
	for (i = 0; i < BM_V1__MAX; i++)
		assert_string_equal(env.v1_mount[i], "");
}

static void test_detect_container_mount_root(void **state)
{
	/* the mount shows the container's own cgroup as its root: we are at "/" in it */
	assert_int_equal(detect("container", "container", &env), 0);
	assert_int_equal(env.mode, BM_CG_V2);
	assert_string_equal(env.v2_mount, "/sys/fs/cgroup");
	assert_string_equal(env.v2_self, "/");
	/* and below the root, the rest of the path */
	assert_int_equal(detect("container", "container-nested", &env), 0);
	assert_string_equal(env.v2_self, "/worker");
}

static void test_detect_container_self_outside_mount(void **state)
{
	/* outside what is mounted, or a sibling sharing a prefix: no directory to use */
	assert_int_equal(detect("container", "container-outside", &env), -EINVAL);
	assert_int_equal(detect("container", "container-prefix", &env), -EINVAL);
	/* a namespace root below the mount root ("/../.."): unknowable, not guessed */
	assert_int_equal(detect("cgroupns-above", "cgroupns-above", &env), -EINVAL);
}

static void test_detect_unescapes_mount_point(void **state)
{
	char dir[PATH_MAX];

	assert_int_equal(detect("escaped", "escaped", &env), 0);
	assert_string_equal(env.v2_mount, "/run/my cgroup\tv2");
	assert_string_equal(env.v2_self, "/build.slice/job-7");
	assert_int_equal(bm_cgroup_env_self_dir(&env, dir, sizeof(dir)), 0);
	assert_string_equal(dir, "/run/my cgroup\tv2/build.slice/job-7");
}

static void test_detect_self_path_with_a_space(void **state)
{
	/* the kernel prints cgroup paths raw (seq_puts), so a space is part of the path */
	assert_int_equal(detect("v2", "v2-space", &env), 0);
	assert_string_equal(env.v2_self, "/kubepods.slice/pod1/my job");
}

static void test_detect_no_cgroup2_is_enoent(void **state)
{
	assert_int_equal(detect("v1only", "v1only", &env), -ENOENT);
	assert_int_equal(detect("empty", "v2", &env), -ENOENT);
}

static void test_detect_missing_files(void **state)
{
	char mpath[4096];

	fixture(mpath, sizeof(mpath), "v2.mountinfo");
	assert_int_equal(bm_cgroup_env_detect("/nonexistent-bm/mountinfo", mpath, &env), -ENOENT);
	assert_int_equal(bm_cgroup_env_detect(mpath, "/nonexistent-bm/cgroup", &env), -ENOENT);
}

static void test_detect_garbage_is_an_error(void **state)
{
	assert_true(detect("garbage", "garbage", &env) < 0);
	assert_int_equal(detect("garbage", "v2", &env), -ENOENT);
	/* mountinfo fine, but no "0::" line to place us in v2 */
	assert_int_equal(detect("v2", "garbage", &env), -EINVAL);
	assert_int_equal(detect("v2", "empty", &env), -EINVAL);
	assert_int_equal(detect("v2", "v1only", &env), -EINVAL);
}

/* splitmix64: reproducible noise */
static uint64_t next_rand(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void test_detect_random_bytes_do_not_crash(void **state)
{
	/* bytes biased toward the parser's separators, NULs and overlong lines included */
	static const char alphabet[] = "0123456789 :-/\\\n,\0cgroup2";
	char mpath[] = "/tmp/bm-test-mi-XXXXXX", cpath[] = "/tmp/bm-test-cg-XXXXXX";
	int mfd = mkstemp(mpath), cfd = mkstemp(cpath), round, i, rc;
	uint64_t seed = 7;
	char buf[9000];

	assert_true(mfd >= 0 && cfd >= 0);
	for (round = 0; round < 300; round++) {
		size_t n = next_rand(&seed) % sizeof(buf);

		for (i = 0; i < (int)n; i++)
			buf[i] = round & 1 ? (char)next_rand(&seed)
					   : alphabet[next_rand(&seed) % (sizeof(alphabet) - 1)];
		assert_int_equal(pwrite(mfd, buf, n, 0), (ssize_t)n);
		assert_int_equal(ftruncate(mfd, n), 0);
		assert_int_equal(pwrite(cfd, buf, n / 2, 0), (ssize_t)(n / 2));
		assert_int_equal(ftruncate(cfd, n / 2), 0);
		rc = bm_cgroup_env_detect(mpath, cpath, &env);
		assert_true(rc == -ENOENT || rc == -EINVAL);
	}
	close(mfd);
	close(cfd);
	unlink(mpath);
	unlink(cpath);
}

static void test_self_dir(void **state)
{
	char dir[PATH_MAX];
	size_t need;

	assert_int_equal(detect("v2", "v2", &env), 0);
	assert_int_equal(bm_cgroup_env_self_dir(&env, dir, sizeof(dir)), 0);
	assert_string_equal(dir, "/sys/fs/cgroup/kubepods.slice/pod1/ctr");
	/* at the root: the mount itself, no trailing slash */
	assert_int_equal(detect("hybrid", "hybrid", &env), 0);
	assert_int_equal(bm_cgroup_env_self_dir(&env, dir, sizeof(dir)), 0);
	assert_string_equal(dir, "/sys/fs/cgroup/unified");
	/* exactly enough room, then one byte short */
	need = strlen("/sys/fs/cgroup/unified") + 1;
	assert_int_equal(bm_cgroup_env_self_dir(&env, dir, need), 0);
	assert_string_equal(dir, "/sys/fs/cgroup/unified");
	assert_int_equal(bm_cgroup_env_self_dir(&env, dir, need - 1), -ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_detect_this_machines_hybrid),
		cmocka_unit_test(test_detect_debian_systemd_hybrid),
		cmocka_unit_test(test_detect_docker_hybrid_roots),
		cmocka_unit_test(test_detect_pure_v2),
		cmocka_unit_test(test_detect_container_mount_root),
		cmocka_unit_test(test_detect_container_self_outside_mount),
		cmocka_unit_test(test_detect_unescapes_mount_point),
		cmocka_unit_test(test_detect_self_path_with_a_space),
		cmocka_unit_test(test_detect_no_cgroup2_is_enoent),
		cmocka_unit_test(test_detect_missing_files),
		cmocka_unit_test(test_detect_garbage_is_an_error),
		cmocka_unit_test(test_detect_random_bytes_do_not_crash),
		cmocka_unit_test(test_self_dir),
	};

	return cmocka_run_group_tests_name("cgroup", tests, NULL, NULL);
}
