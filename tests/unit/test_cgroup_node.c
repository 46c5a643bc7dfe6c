// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/base/mountinfo.h and cgroup_node.h: the node's hierarchies as a
 * container sees them (tests/fixtures/cgroup/): a mount hiding the one
 * under it, the node's root shown as "/.." from a private cgroup namespace,
 * a subtree that is not the node's, the parent paths accepted, every
 * hierarchy we are in, and mkdir -p of cgroup paths.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/cgroup.h"
#include "base/cgroup_node.h"
#include "base/mountinfo.h"
#include "meter/preflight.h"

/* $BM_FIXTURES, else tests/fixtures beside this file (__FILE__ is tests/unit/...). */
static const char *fx(const char *name)
{
	static char buf[8][4096];
	static int k;
	const char *env = getenv("BM_FIXTURES");
	char src[] = __FILE__, *slash;
	char *b = buf[k++ % 8];

	if (env && *env) {
		snprintf(b, 4096, "%s/cgroup/%s", env, name);
	} else {
		slash = strrchr(src, '/');
		if (slash)
			*slash = '\0';
		slash = strrchr(src, '/');
		if (slash)
			*slash = '\0';
		snprintf(b, 4096, "%s/fixtures/cgroup/%s", slash ? src : "tests", name);
	}
	if (access(b, R_OK))
		fail_msg("fixture %s not found: run from the repository root or set BM_FIXTURES", b);
	return b;
}

static struct bm_cgroup_env env;
static struct bm_cg_mounts mounts;

static void test_root_is_top(void **state)
{
	assert_true(bm_cg_root_is_top("/"));
	assert_true(bm_cg_root_is_top("/.."));
	assert_true(bm_cg_root_is_top("/../../../.."));
	assert_false(bm_cg_root_is_top("/..x"));
	assert_false(bm_cg_root_is_top("/../x"));
	assert_false(bm_cg_root_is_top("/kubepods/.."));
	assert_false(bm_cg_root_is_top("/docker/4f1c2a"));
	assert_false(bm_cg_root_is_top(""));
}

static void test_later_mount_hides_earlier(void **state)
{
	/* the hostPath over the runtime's cgroup2: one mount left at /sys/fs/cgroup, the node's */
	assert_int_equal(bm_cg_mounts_read(fx("k8s-hostpath.mountinfo"), &mounts), 0);
	assert_int_equal(mounts.n, 1);
	assert_string_equal(mounts.m[0].mnt, "/sys/fs/cgroup");
	assert_string_equal(mounts.m[0].root, "/../../../..");
	assert_true(mounts.m[0].v2);
	/* a tmpfs over a tmpfs hides the cgroups mounted in the first one */
	assert_int_equal(bm_cg_mounts_read(fx("docker-hybrid-hostpath.mountinfo"), &mounts), 0);
	assert_int_equal(mounts.n, 3);
	assert_string_equal(mounts.m[0].mnt, "/sys/fs/cgroup/unified");
	assert_string_equal(mounts.m[0].root, "/");
	assert_string_equal(mounts.m[1].opts, "rw,memory");
	/* nothing to hide: every cgroup mount of this build machine's hybrid */
	assert_int_equal(bm_cg_mounts_read(fx("podman-private.mountinfo"), &mounts), 0);
	assert_int_equal(mounts.n, 10);
	assert_int_equal(bm_cg_mounts_read("/nonexistent-bm/mountinfo", &mounts), -ENOENT);
}

static void test_detect_sees_the_mount_on_top(void **state)
{
	/* before the hiding, the runtime's "/" was taken for our place; now it is unknowable */
	assert_int_equal(bm_cgroup_env_detect(fx("k8s-hostpath.mountinfo"), fx("cgroupns-above.cgroup"),
					      &env), -EINVAL);
	/* host cgroup namespace, the node's tree mounted over docker's: our own full path */
	assert_int_equal(bm_cgroup_env_detect(fx("docker-hybrid-hostpath.mountinfo"),
					      fx("docker-hybrid-hostpath.cgroup"), &env), 0);
	assert_int_equal(env.mode, BM_CG_HYBRID);
	assert_string_equal(env.v2_self, "/docker/4f1c2a");
	assert_string_equal(env.v1_self[BM_V1_MEMORY], "/docker/4f1c2a");
	assert_string_equal(env.v1_self[BM_V1_PIDS], "/docker/4f1c2a");
}

static void test_valid_parent(void **state)
{
	assert_true(bm_cgroup_valid_parent("/burstmeter"));
	assert_true(bm_cgroup_valid_parent("/a/b.c/d-e_f"));
	assert_false(bm_cgroup_valid_parent("/"));
	assert_false(bm_cgroup_valid_parent(""));
	assert_false(bm_cgroup_valid_parent("burstmeter"));
	assert_false(bm_cgroup_valid_parent("/a//b"));
	assert_false(bm_cgroup_valid_parent("/a/"));
	assert_false(bm_cgroup_valid_parent("/a/../b"));
	assert_false(bm_cgroup_valid_parent("/./a"));
	assert_true(bm_cgroup_valid_parent("/..a/b.."));
}

static void test_node_env_private_namespace(void **state)
{
	char dir[PATH_MAX];

	/* pure v2 pod with the node's /sys/fs/cgroup: effects under /burstmeter of the node */
	assert_int_equal(bm_cgroup_env_node(fx("k8s-hostpath.mountinfo"), "/burstmeter", &env), 0);
	assert_int_equal(env.mode, BM_CG_V2);
	assert_string_equal(env.v2_mount, "/sys/fs/cgroup");
	assert_string_equal(env.v2_self, "/burstmeter");
	assert_int_equal(bm_cgroup_env_self_dir(&env, dir, sizeof(dir)), 0);
	assert_string_equal(dir, "/sys/fs/cgroup/burstmeter");
	/* this machine's hybrid from podman --cgroupns=private: the v1 twins under the parent too */
	assert_int_equal(bm_cgroup_env_node(fx("podman-private.mountinfo"), "/x/burstmeter", &env), 0);
	assert_int_equal(env.mode, BM_CG_HYBRID);
	assert_string_equal(env.v2_mount, "/sys/fs/cgroup/unified");
	assert_string_equal(env.v1_mount[BM_V1_MEMORY], "/sys/fs/cgroup/memory");
	assert_string_equal(env.v1_mount[BM_V1_CPU], "/sys/fs/cgroup/cpu");
	assert_string_equal(env.v1_self[BM_V1_PIDS], "/x/burstmeter");
	assert_string_equal(env.v2_self, "/x/burstmeter");
}

static void test_node_env_needs_the_nodes_root(void **state)
{
	/* only the pod's own namespace root ("/"): passes here; preflight's cgroup.events check
	 * is what tells a namespace's root from the node's */
	assert_int_equal(bm_cgroup_env_node(fx("k8s-own.mountinfo"), "/burstmeter", &env), 0);
	/* docker's subtrees only: not the node's */
	assert_int_equal(bm_cgroup_env_node(fx("docker-hybrid.mountinfo"), "/burstmeter", &env), -EXDEV);
	assert_int_equal(bm_cgroup_env_node(fx("v1only.mountinfo"), "/burstmeter", &env), -ENOENT);
	assert_int_equal(bm_cgroup_env_node(fx("v2.mountinfo"), "/", &env), -EINVAL);
	assert_int_equal(bm_cgroup_env_node(fx("v2.mountinfo"), "burstmeter", &env), -EINVAL);
	/* the node's tree over docker's: v1 controllers found at the top */
	assert_int_equal(bm_cgroup_env_node(fx("docker-hybrid-hostpath.mountinfo"), "/bm", &env), 0);
	assert_int_equal(env.mode, BM_CG_HYBRID);
	assert_string_equal(env.v1_mount[BM_V1_MEMORY], "/sys/fs/cgroup/memory");
	assert_string_equal(env.v1_mount[BM_V1_CPU], "");
}

/*
 * nsdelegate on the node's cgroup2 (systemd mounts it so): an agent that
 * could not join pid 1's cgroup namespace is refused with one line that
 * names the join's error, the mount and the fix; it passes when it joined,
 * had nothing to join, or where the mount has no nsdelegate.
 */
static void test_nsdelegate_refusal(void **state)
{
	char why[512] = "";

	/* the hostPath cgroup2 of a Kubernetes node: nsdelegate, and the join refused */
	assert_int_equal(bm_cgroup_nsdelegate_check(fx("k8s-hostpath.mountinfo"), "/sys/fs/cgroup",
						    "/burstmeter", -EPERM, why, sizeof(why)), -EPERM);
	assert_string_equal(why, "cgroup_parent /burstmeter: cannot join the node's cgroup namespace "
			    "(/proc/1/ns/cgroup: Operation not permitted), and cgroup2 at "
			    "/sys/fs/cgroup has nsdelegate, so no process could leave ours: give "
			    "the agent hostPID and CAP_SYS_ADMIN");
	assert_null(strchr(why, '\n'));
	/* joined (1) or already in the node's namespace (0): nothing to refuse */
	why[0] = '\0';
	assert_int_equal(bm_cgroup_nsdelegate_check(fx("k8s-hostpath.mountinfo"), "/sys/fs/cgroup",
						    "/burstmeter", 1, why, sizeof(why)), 0);
	assert_int_equal(bm_cgroup_nsdelegate_check(fx("v2.mountinfo"), "/sys/fs/cgroup",
						    "/burstmeter", 0, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	/* no nsdelegate (this build machine's hybrid, under podman): a failed join may go on */
	assert_int_equal(bm_cgroup_nsdelegate_check(fx("podman-private.mountinfo"),
						    "/sys/fs/cgroup/unified", "/burstmeter", -EPERM, why,
						    sizeof(why)), 0);
	assert_string_equal(why, "");
	/* the mount asked about is not the one with nsdelegate: not refused */
	assert_int_equal(bm_cgroup_nsdelegate_check(fx("k8s-hostpath.mountinfo"), "/elsewhere",
						    "/burstmeter", -EPERM, why, sizeof(why)), 0);
}

static void test_hierarchies(void **state)
{
	struct bm_cg_hier h[16];
	int n;

	n = bm_cgroup_hierarchies(fx("podman-private.mountinfo"), fx("podman-private.cgroup"), h, 16);
	assert_int_equal(n, 10);
	assert_string_equal(h[0].name, "name=systemd");
	assert_string_equal(h[0].mount, "/sys/fs/cgroup/systemd");
	assert_string_equal(h[4].name, "devices");
	assert_string_equal(h[4].mount, "/sys/fs/cgroup/devices");
	assert_true(h[9].v2);
	assert_string_equal(h[9].mount, "/sys/fs/cgroup/unified");
	/* a hierarchy not mounted here: no mount, so the caller can say which */
	n = bm_cgroup_hierarchies(fx("podman-private.mountinfo"), fx("podman-private-perf.cgroup"), h, 16);
	assert_int_equal(n, 3);
	assert_string_equal(h[0].name, "perf_event");
	assert_string_equal(h[0].mount, "");
	assert_string_equal(h[1].mount, "/sys/fs/cgroup/memory");
	/* "cpu,cpuacct" matches by its first word; subtrees do not count */
	n = bm_cgroup_hierarchies(fx("debian-hybrid.mountinfo"), fx("debian-hybrid.cgroup"), h, 16);
	assert_true(n > 3);
	n = bm_cgroup_hierarchies(fx("docker-hybrid.mountinfo"), fx("docker-hybrid.cgroup"), h, 16);
	assert_true(n > 0);
	assert_string_equal(h[n - 1].mount, "");
	assert_int_equal(bm_cgroup_hierarchies(fx("v2.mountinfo"), "/nonexistent-bm/cgroup", h, 16), -ENOENT);
	/* at most max */
	assert_int_equal(bm_cgroup_hierarchies(fx("podman-private.mountinfo"), fx("podman-private.cgroup"), h, 2), 2);
}

static void test_mkdirs(void **state)
{
	char base[] = "/tmp/bm-test-mkdirs-XXXXXX", path[PATH_MAX];
	struct stat st;

	assert_non_null(mkdtemp(base));
	assert_int_equal(bm_cgroup_mkdirs(base, "/a/b/c"), 0);
	snprintf(path, sizeof(path), "%s/a/b/c", base);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	/* again: what exists is fine */
	assert_int_equal(bm_cgroup_mkdirs(base, "/a/b/c"), 0);
	assert_int_equal(bm_cgroup_mkdirs(base, "a/b"), -EINVAL);
	assert_int_equal(bm_cgroup_mkdirs("/nonexistent-bm", "/a"), -ENOENT);
	assert_int_equal(rmdir(path), 0);
	snprintf(path, sizeof(path), "%s/a/b", base);
	assert_int_equal(rmdir(path), 0);
	snprintf(path, sizeof(path), "%s/a", base);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(rmdir(base), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_root_is_top),
		cmocka_unit_test(test_later_mount_hides_earlier),
		cmocka_unit_test(test_detect_sees_the_mount_on_top),
		cmocka_unit_test(test_valid_parent),
		cmocka_unit_test(test_node_env_private_namespace),
		cmocka_unit_test(test_node_env_needs_the_nodes_root),
		cmocka_unit_test(test_nsdelegate_refusal),
		cmocka_unit_test(test_hierarchies),
		cmocka_unit_test(test_mkdirs),
	};

	return cmocka_run_group_tests_name("cgroup_node", tests, NULL, NULL);
}
