// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/base/podcgroup.h bm_pod_cgroup_parse(): the pod and container a
 * caller is in, from its cgroup path. Both kubelet drivers, the three
 * runtimes and the three QoS classes, as the kubelet and the runtimes
 * write their names; the prefixes a node may put above them; and the paths
 * it must refuse (malformed, hostile, in no pod) without guessing.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/podcgroup.h"

#define UID "1b2c3d4e-5f60-4172-8394-a5b6c7d8e9f0"
#define UID_ "1b2c3d4e_5f60_4172_8394_a5b6c7d8e9f0"	/* as the systemd driver writes it */
#define UID2_ "99999999_8888_7777_6666_555555555555"
#define STATIC_UID "0e5d1a3b2c4f6e8d9a7b5c3d1e2f4a6b"	/* a static pod's: md5 hex */
#define ID "4f1c2a9e8d7b6c5a4f3e2d1c0b9a8f7e6d5c4b3a29180716f5e4d3c2b1a09f8e"
#define ID2 "0000000000000000000000000000000000000000000000000000000000000001"
#define N(a) (sizeof(a) / sizeof((a)[0]))

struct want {
	enum bm_cg_driver driver;
	enum bm_pod_qos qos;
	enum bm_runtime runtime;
	const char *uid, *id, *pod_dir;
	size_t root_len;
};

static void expect_ok(const char *path, const struct want *w)
{
	struct bm_pod_cgroup pc;
	int err = bm_pod_cgroup_parse(path, &pc);

	if (err)
		fail_msg("%s: %d (%s)", path, err, strerror(-err));
	assert_string_equal(bm_cg_driver_name(pc.driver), bm_cg_driver_name(w->driver));
	assert_string_equal(bm_pod_qos_name(pc.qos), bm_pod_qos_name(w->qos));
	assert_string_equal(bm_runtime_name(pc.runtime), bm_runtime_name(w->runtime));
	assert_string_equal(pc.pod_uid, w->uid);
	assert_string_equal(pc.container_id, w->id);
	assert_string_equal(pc.pod_dir, w->pod_dir);
	assert_int_equal(pc.root_len, w->root_len);
}

/* err, and *out left all zero (no half-filled identity to trust by mistake). */
static void expect_err(const char *path, int want)
{
	static const struct bm_pod_cgroup zero;
	struct bm_pod_cgroup pc;
	int err;

	memset(&pc, 0xa5, sizeof(pc));
	err = bm_pod_cgroup_parse(path, &pc);
	if (err != want)
		fail_msg("%s: %d, expected %d", path, err, want);
	assert_memory_equal(&pc, &zero, sizeof(pc));
}

static void test_podcgroup_systemd_each_qos_and_runtime(void **state)
{
	static const struct {
		const char *qos_dirs;	/* the QoS and pod levels */
		enum bm_pod_qos qos;
	} q[] = {
		{ "/kubepods.slice/kubepods-pod" UID_ ".slice", BM_QOS_GUARANTEED },
		{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice",
		  BM_QOS_BURSTABLE },
		{ "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice",
		  BM_QOS_BESTEFFORT },
	};
	static const struct {
		const char *scope;
		enum bm_runtime rt;
	} r[] = {
		{ "cri-containerd-" ID ".scope", BM_RT_CONTAINERD },
		{ "crio-" ID ".scope", BM_RT_CRIO },
		{ "docker-" ID ".scope", BM_RT_DOCKER },
	};
	char path[512];
	size_t i, j;

	for (i = 0; i < N(q); i++) {
		for (j = 0; j < N(r); j++) {
			struct want w = { BM_CGD_SYSTEMD, q[i].qos, r[j].rt, UID, ID,
					  q[i].qos_dirs, 0 };

			snprintf(path, sizeof(path), "%s/%s", q[i].qos_dirs, r[j].scope);
			expect_ok(path, &w);
		}
	}
}

static void test_podcgroup_cgroupfs_each_qos(void **state)
{
	static const struct {
		const char *pod_dir;
		enum bm_pod_qos qos;
	} q[] = {
		{ "/kubepods/pod" UID, BM_QOS_GUARANTEED },
		{ "/kubepods/burstable/pod" UID, BM_QOS_BURSTABLE },
		{ "/kubepods/besteffort/pod" UID, BM_QOS_BESTEFFORT },
	};
	char path[512];
	size_t i;

	for (i = 0; i < N(q); i++) {
		/* containerd and docker both name the directory by the bare id */
		struct want w = { BM_CGD_CGROUPFS, q[i].qos, BM_RT_UNKNOWN, UID, ID, q[i].pod_dir,
				  0 };

		snprintf(path, sizeof(path), "%s/%s", q[i].pod_dir, ID);
		expect_ok(path, &w);
		w.runtime = BM_RT_CRIO;
		snprintf(path, sizeof(path), "%s/crio-%s", q[i].pod_dir, ID);
		expect_ok(path, &w);
	}
}

static void test_podcgroup_static_pod_uid(void **state)
{
	struct want w = { BM_CGD_SYSTEMD, BM_QOS_BURSTABLE, BM_RT_CONTAINERD, STATIC_UID, ID,
			  "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
			  STATIC_UID ".slice", 0 };
	struct want f = { BM_CGD_CGROUPFS, BM_QOS_GUARANTEED, BM_RT_UNKNOWN, STATIC_UID, ID,
			  "/kubepods/pod" STATIC_UID, 0 };

	expect_ok("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" STATIC_UID
		  ".slice/cri-containerd-" ID ".scope", &w);
	expect_ok("/kubepods/pod" STATIC_UID "/" ID, &f);
}

/* A hybrid host's v2 mount before the path: part of pod_dir, counted in root_len. */
static void test_podcgroup_hybrid_unified_prefix(void **state)
{
	struct want w = { BM_CGD_SYSTEMD, BM_QOS_BESTEFFORT, BM_RT_CONTAINERD, UID, ID,
			  "/sys/fs/cgroup/unified/kubepods.slice/kubepods-besteffort.slice/"
			  "kubepods-besteffort-pod" UID_ ".slice",
			  strlen("/sys/fs/cgroup/unified") };
	struct want f = { BM_CGD_CGROUPFS, BM_QOS_BURSTABLE, BM_RT_UNKNOWN, UID, ID,
			  "/sys/fs/cgroup/memory/kubepods/burstable/pod" UID,
			  strlen("/sys/fs/cgroup/memory") };

	expect_ok("/sys/fs/cgroup/unified/kubepods.slice/kubepods-besteffort.slice/"
		  "kubepods-besteffort-pod" UID_ ".slice/cri-containerd-" ID ".scope", &w);
	expect_ok("/sys/fs/cgroup/memory/kubepods/burstable/pod" UID "/" ID, &f);
}

/*
 * A node that is itself a container (kind): the kubelet's --cgroup-root
 * "kubelet" prefixes every systemd slice name, all below the node's own
 * scope. cgroupfs: the same tree below /docker/<node>/kubelet.
 */
static void test_podcgroup_nested_container_prefix(void **state)
{
	static const char root[] = "/system.slice/docker-" ID2 ".scope/kubelet.slice";
	static const char froot[] = "/docker/" ID2 "/kubelet";
	struct want w = { BM_CGD_SYSTEMD, BM_QOS_BURSTABLE, BM_RT_CONTAINERD, UID, ID,
			  "/system.slice/docker-" ID2 ".scope/kubelet.slice/kubelet-kubepods.slice/"
			  "kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod" UID_
			  ".slice", strlen(root) };
	struct want g = { BM_CGD_SYSTEMD, BM_QOS_GUARANTEED, BM_RT_CRIO, UID, ID,
			  "/system.slice/docker-" ID2 ".scope/kubelet.slice/kubelet-kubepods.slice/"
			  "kubelet-kubepods-pod" UID_ ".slice", strlen(root) };
	struct want f = { BM_CGD_CGROUPFS, BM_QOS_BESTEFFORT, BM_RT_UNKNOWN, UID, ID,
			  "/docker/" ID2 "/kubelet/kubepods/besteffort/pod" UID, strlen(froot) };

	expect_ok("/system.slice/docker-" ID2 ".scope/kubelet.slice/kubelet-kubepods.slice/"
		  "kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod" UID_
		  ".slice/cri-containerd-" ID ".scope", &w);
	expect_ok("/system.slice/docker-" ID2 ".scope/kubelet.slice/kubelet-kubepods.slice/"
		  "kubelet-kubepods-pod" UID_ ".slice/crio-" ID ".scope", &g);
	expect_ok("/docker/" ID2 "/kubelet/kubepods/besteffort/pod" UID "/" ID, &f);
	/* the prefix is the slice's own: an unprefixed QoS slice below it is not the kubelet's */
	expect_err("/kubelet.slice/kubelet-kubepods.slice/kubepods-burstable.slice/"
		   "kubepods-burstable-pod" UID_ ".slice/cri-containerd-" ID ".scope", -EINVAL);
	/* "mykubepods.slice" is no kubepods slice: the name must be <prefix>-kubepods */
	expect_err("/mykubepods.slice/mykubepods-pod" UID_ ".slice/cri-containerd-" ID ".scope",
		   -ENOENT);
}

/* The container's own cgroups (an effect's, made below it by the agent): still that container. */
static void test_podcgroup_below_the_container(void **state)
{
	struct want w = { BM_CGD_SYSTEMD, BM_QOS_GUARANTEED, BM_RT_CONTAINERD, UID, ID,
			  "/kubepods.slice/kubepods-pod" UID_ ".slice", 0 };
	struct want f = { BM_CGD_CGROUPFS, BM_QOS_BURSTABLE, BM_RT_UNKNOWN, UID, ID,
			  "/kubepods/burstable/pod" UID, 0 };

	expect_ok("/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID
		  ".scope/burstmeter.uid-1000.tc-42", &w);
	expect_ok("/kubepods/burstable/pod" UID "/" ID "/a/b/c", &f);
}

/*
 * A container that may make cgroups below its own (cgroupns with a writable
 * cgroupfs) builds a second kubepods tree naming another pod: the first
 * kubepods level decides, so it stays itself.
 */
static void test_podcgroup_fake_pod_below_a_container(void **state)
{
	struct want w = { BM_CGD_SYSTEMD, BM_QOS_BURSTABLE, BM_RT_CONTAINERD, UID, ID,
			  "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
			  ".slice", 0 };

	expect_ok("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
		  ".slice/cri-containerd-" ID ".scope/kubepods.slice/kubepods-pod" UID2_
		  ".slice/cri-containerd-" ID2 ".scope", &w);
	expect_ok("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
		  ".slice/cri-containerd-" ID ".scope/kubepods/pod" UID "/" ID2, &w);
}

static void test_podcgroup_in_no_pod(void **state)
{
	static const char *const paths[] = {
		"/",
		"/system.slice/containerd.service",
		"/user.slice/user-1000.slice/session-3.scope",
		"/init.scope",
		"/docker/" ID,				/* a plain docker container */
		"/system.slice/docker-" ID ".scope",
		/* the kubepods, QoS and pod levels themselves */
		"/kubepods.slice",
		"/kubepods.slice/kubepods-burstable.slice",
		"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice",
		"/kubepods.slice/kubepods-pod" UID_ ".slice",
		"/kubepods",
		"/kubepods/besteffort",
		"/kubepods/burstable/pod" UID,
		"/kubepods/pod" UID,
		/* CRI-O's conmon: beside the container, not in it */
		"/kubepods.slice/kubepods-pod" UID_ ".slice/crio-conmon-" ID ".scope",
		"/kubepods/burstable/pod" UID "/crio-conmon-" ID,
	};
	size_t i;

	for (i = 0; i < N(paths); i++)
		expect_err(paths[i], -ENOENT);
}

static void test_podcgroup_malformed_levels(void **state)
{
	static const char *const paths[] = {
		/* the UID: systemd writes '_', cgroupfs '-'; lowercase hex; 36 or 32 long */
		"/kubepods.slice/kubepods-pod" UID ".slice/cri-containerd-" ID ".scope",
		"/kubepods/pod" UID_ "/" ID,
		"/kubepods.slice/kubepods-pod1B2C3D4E_5f60_4172_8394_a5b6c7d8e9f0.slice/crio-" ID
		".scope",
		"/kubepods.slice/kubepods-pod1b2c3d4e_5f60_4172_8394_a5b6c7d8e9f.slice/crio-" ID
		".scope",
		"/kubepods.slice/kubepods-pod1b2c3d4e_5f60_4172_8394_a5b6c7d8e9f00.slice/crio-" ID
		".scope",
		"/kubepods.slice/kubepods-pod1b2c3d4e5_f60_4172_8394_a5b6c7d8e9f0.slice/crio-" ID
		".scope",
		"/kubepods.slice/kubepods-pod1b2c3d4g_5f60_4172_8394_a5b6c7d8e9f0.slice/crio-" ID
		".scope",
		"/kubepods/pod0e5d1a3b2c4f6e8d9a7b5c3d1e2f4a6/" ID,
		"/kubepods/pod/" ID,
		"/kubepods.slice/kubepods-pod.slice/docker-" ID ".scope",
		/* QoS level and pod level disagree; a level that is neither */
		"/kubepods.slice/kubepods-burstable.slice/kubepods-besteffort-pod" UID_
		".slice/docker-" ID ".scope",
		"/kubepods.slice/kubepods-burstable.slice/kubepods-pod" UID_ ".slice/docker-" ID
		".scope",
		"/kubepods/burstable/besteffort/pod" UID "/" ID,
		"/kubepods.slice/kubepods-guaranteed.slice/kubepods-guaranteed-pod" UID_
		".slice/docker-" ID ".scope",
		"/kubepods.slice/system.slice/kubepods-pod" UID_ ".slice/docker-" ID ".scope",
		"/kubepods/kube-proxy",
		/* the drivers mixed */
		"/kubepods.slice/pod" UID "/" ID,
		"/kubepods/kubepods-pod" UID_ ".slice/cri-containerd-" ID ".scope",
		"/kubepods.slice/kubepods-pod" UID_ ".slice/" ID,
		"/kubepods/pod" UID "/cri-containerd-" ID ".scope",
		"/kubepods/pod" UID "/docker-" ID,
		/* the container: 64 lowercase hex digits, a runtime's scope */
		"/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID,
		"/kubepods.slice/kubepods-pod" UID_ ".slice/runc-" ID ".scope",
		"/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID "0.scope",
		"/kubepods.slice/kubepods-pod" UID_
		".slice/cri-containerd-"
		"4F1C2A9E8D7B6C5A4F3E2D1C0B9A8F7E6D5C4B3A29180716F5E4D3C2B1A09F8E.scope",
		"/kubepods/pod" UID "/4f1c2a",
		"/kubepods/pod" UID "/crio-" ID ".scope",
		"/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-.scope",
	};
	size_t i;

	for (i = 0; i < N(paths); i++)
		expect_err(paths[i], -EINVAL);
}

static void test_podcgroup_hostile_paths(void **state)
{
	static const char *const paths[] = {
		"",
		/* relative */
		"kubepods.slice/kubepods-pod" UID_ ".slice/docker-" ID ".scope",
		"//kubepods.slice/kubepods-pod" UID_ ".slice/docker-" ID ".scope",
		"/kubepods.slice//kubepods-pod" UID_ ".slice/docker-" ID ".scope",
		"/kubepods.slice/kubepods-pod" UID_ ".slice/docker-" ID ".scope/",
		"/kubepods.slice/./kubepods-pod" UID_ ".slice/docker-" ID ".scope",
		/* outside the reader's cgroup namespace, /proc/PID/cgroup climbs with ".." */
		"/../../kubepods.slice/kubepods-pod" UID_ ".slice/docker-" ID ".scope",
		"/kubepods.slice/kubepods-pod" UID_ ".slice/docker-" ID ".scope/../../other",
		"/kubepods.slice/kubepods-pod" UID_ ".slice/docker-" ID ".scope\n",
		"/kubepods.slice/kubepods-pod" UID_ ".slice/docker-" ID ".scope/\x1b[2J",
		"/kubepods.slice/kubepods-pod" UID_ ".slice/docker-" ID ".scope/a\x7f",
		/* a removed cgroup, as /proc/PID/cgroup shows it */
		"/kubepods.slice/kubepods-pod" UID_ ".slice/docker-" ID ".scope (deleted)",
		"/kubepods/pod" UID "/" ID "/x (deleted)",
	};
	char *big, name[NAME_MAX + 3];
	size_t i;

	for (i = 0; i < N(paths); i++)
		expect_err(paths[i], -EINVAL);
	/* a component longer than kernfs allows */
	name[0] = '/';
	memset(name + 1, 'a', NAME_MAX + 1);
	name[NAME_MAX + 2] = '\0';
	expect_err(name, -EINVAL);
	name[NAME_MAX + 1] = '\0';
	expect_err(name, -ENOENT);
	/* PATH_MAX bytes, or far more: refused without reading past it */
	big = malloc(3 * PATH_MAX);
	assert_non_null(big);
	for (i = 0; i + 2 < 3 * PATH_MAX; i += 2)
		memcpy(big + i, "/a", 2);
	big[i] = '\0';
	expect_err(big, -ENAMETOOLONG);
	big[PATH_MAX] = '\0';
	expect_err(big, -ENAMETOOLONG);
	big[PATH_MAX - 1] = '\0';
	expect_err(big, big[PATH_MAX - 2] == '/' ? -EINVAL : -ENOENT);
	free(big);
}

static void test_podcgroup_names(void **state)
{
	assert_string_equal(bm_cg_driver_name(BM_CGD_SYSTEMD), "systemd");
	assert_string_equal(bm_cg_driver_name(BM_CGD_CGROUPFS), "cgroupfs");
	assert_null(bm_cg_driver_name((enum bm_cg_driver)7));
	assert_string_equal(bm_pod_qos_name(BM_QOS_GUARANTEED), "guaranteed");
	assert_string_equal(bm_pod_qos_name(BM_QOS_BURSTABLE), "burstable");
	assert_string_equal(bm_pod_qos_name(BM_QOS_BESTEFFORT), "besteffort");
	assert_null(bm_pod_qos_name((enum bm_pod_qos)3));
	assert_string_equal(bm_runtime_name(BM_RT_UNKNOWN), "unknown");
	assert_string_equal(bm_runtime_name(BM_RT_CONTAINERD), "containerd");
	assert_string_equal(bm_runtime_name(BM_RT_CRIO), "crio");
	assert_string_equal(bm_runtime_name(BM_RT_DOCKER), "docker");
	assert_null(bm_runtime_name((enum bm_runtime)4));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_podcgroup_systemd_each_qos_and_runtime),
		cmocka_unit_test(test_podcgroup_cgroupfs_each_qos),
		cmocka_unit_test(test_podcgroup_static_pod_uid),
		cmocka_unit_test(test_podcgroup_hybrid_unified_prefix),
		cmocka_unit_test(test_podcgroup_nested_container_prefix),
		cmocka_unit_test(test_podcgroup_below_the_container),
		cmocka_unit_test(test_podcgroup_fake_pod_below_a_container),
		cmocka_unit_test(test_podcgroup_in_no_pod),
		cmocka_unit_test(test_podcgroup_malformed_levels),
		cmocka_unit_test(test_podcgroup_hostile_paths),
		cmocka_unit_test(test_podcgroup_names),
	};

	return cmocka_run_group_tests_name("podcgroup", tests, NULL, NULL);
}
