// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/effect/sandbox_exec.h bm_sandbox_exec(): the one conversion of a
 * sandbox into exec options, for the agent's launches and `burstmeter run`.
 * The agent's context (isolation, the socket hidden, a log cap, its uid)
 * and run's (none of those unless asked) from the same sandbox; what each
 * part is held by, in the outcome's words; the workspace in the request's
 * form and in bm_sandbox_looser(). Pure: nothing here needs root.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "effect/sandbox_exec.h"

#define MIB (1024ULL * 1024)

static char *env_clean[] = { "PATH=/bin", "HOME=/", NULL };

static struct bm_sandbox sandbox(void)
{
	struct bm_sandbox sb;

	memset(&sb, 0, sizeof(sb));
	sb.network_policy = BM_NET_FULL;
	return sb;
}

/* What the agent passes for a launch (admit.c): everything of its own. */
static struct bm_sandbox_ctx agent_ctx(void)
{
	struct bm_sandbox_ctx c = {
		.envp = env_clean, .clean_env = true, .cwd = "/", .stdio = { 3, 4, 4 },
		.set_ids = true, .uid = 900001, .gid = 900001, .isolate = true,
		.hide = "/run/burstmeter/api.sock", .log_max = 16 * MIB,
	};

	return c;
}

/* What run passes with no flag: as it is. */
static struct bm_sandbox_ctx run_ctx(void)
{
	struct bm_sandbox_ctx c = { .stdio = { -1, -1, -1 } };

	return c;
}

static void test_sandbox_exec_agent_launch(void **state)
{
	struct bm_sandbox sb = sandbox();
	struct bm_sandbox_ctx c = agent_ctx();
	struct bm_sandbox_enf enf = { 0 };
	struct bm_exec x;

	sb.network_policy = BM_NET_NONE;
	sb.read_only_root_fs = sb.drop_all_capabilities = true;
	sb.memory_limit = 128 * MIB;
	sb.workspace = "/srv/ws";
	bm_sandbox_exec(&sb, &c, &x, &enf);
	assert_ptr_equal(x.envp, env_clean);
	assert_string_equal(x.cwd, "/");
	assert_int_equal(x.stdio[0], 3);
	assert_int_equal(x.stdio[2], 4);
	assert_true(x.set_ids && x.uid == 900001 && x.gid == 900001);
	assert_true(x.drop_caps && x.no_new_privs && x.new_netns);
	assert_true(x.pid_ns && x.cgroup_ns && x.mnt.proc && x.mnt.ro_cgroup && x.mnt.ro_root);
	/* a read-only root gets a private /tmp; /dev/shm is no bigger than the memory ceiling */
	assert_int_equal(x.mnt.tmp_bytes, BM_SANDBOX_TMP_DEFAULT);
	assert_int_equal(x.mnt.shm_bytes, 128 * MIB);
	assert_string_equal(x.mnt.hide, "/run/burstmeter/api.sock");
	assert_string_equal(x.mnt.workspace, "/srv/ws");
	assert_int_equal(x.log_max, 16 * MIB);
	assert_string_equal(enf.mech[BM_SBX_NETWORK], "netns (loopback only)");
	assert_non_null(strstr(enf.mech[BM_SBX_RO_ROOT], "mount_setattr"));
	assert_string_equal(enf.mech[BM_SBX_TMP], "tmpfs 64 MiB on /tmp");
	assert_non_null(strstr(enf.mech[BM_SBX_WORKSPACE], "/srv/ws"));
	assert_non_null(strstr(enf.mech[BM_SBX_USER], "setuid 900001:900001"));
	assert_non_null(strstr(enf.mech[BM_SBX_CAPS], "no_new_privs"));
	assert_string_equal(enf.mech[BM_SBX_ENV], "clean: 2 variables");
	assert_non_null(strstr(enf.mech[BM_SBX_NAMESPACES], "pid"));
	assert_string_equal(enf.mech[BM_SBX_SHM], "tmpfs 128 MiB on /dev/shm");
	assert_non_null(strstr(enf.mech[BM_SBX_SOCKET], "/run/burstmeter/api.sock"));
}

static void test_sandbox_exec_run_without_flags_is_as_before(void **state)
{
	struct bm_sandbox sb = sandbox();
	struct bm_sandbox_ctx c = run_ctx();
	struct bm_sandbox_enf enf = { 0 };
	struct bm_exec x;
	int k;

	/* a socket to hide without isolation: no mount namespace is made for it */
	c.hide = "/run/burstmeter/api.sock";
	bm_sandbox_exec(&sb, &c, &x, &enf);
	assert_null(x.envp);
	assert_null(x.cwd);
	assert_int_equal(x.stdio[1], -1);
	assert_false(x.set_ids || x.drop_caps || x.no_new_privs || x.new_netns || x.pid_ns ||
		     x.cgroup_ns);
	assert_false(bm_mounts_wanted(&x.mnt));
	assert_int_equal(x.log_max, 0);
	for (k = 0; k < BM_SBX__MAX; k++)
		assert_string_equal(enf.mech[k], "");
}

static void test_sandbox_exec_each_part_alone(void **state)
{
	struct bm_sandbox sb = sandbox();
	struct bm_sandbox_ctx c = run_ctx();
	struct bm_exec x;

	/* a /tmp size alone: a private /tmp, the root stays writable */
	sb.max_ephemeral_storage = 8 * MIB;
	bm_sandbox_exec(&sb, &c, &x, NULL);
	assert_int_equal(x.mnt.tmp_bytes, 8 * MIB);
	assert_false(x.mnt.ro_root);
	assert_true(bm_mounts_wanted(&x.mnt));
	/* another uid: no setuid binary may give it more (no_new_privs) */
	sb = sandbox();
	c.set_ids = true;
	c.uid = c.gid = 65534;
	bm_sandbox_exec(&sb, &c, &x, NULL);
	assert_true(x.set_ids && x.no_new_privs);
	assert_false(x.drop_caps);
	/* the egress filter is not the exec's */
	sb = sandbox();
	c = run_ctx();
	sb.network_policy = BM_NET_EGRESS_RESTRICTED;
	bm_sandbox_exec(&sb, &c, &x, NULL);
	assert_false(x.new_netns);
	assert_true(bm_sandbox_filters_egress(&sb));
	sb.network_policy = BM_NET_EGRESS_ALLOW_LIST;
	assert_true(bm_sandbox_filters_egress(&sb));
	sb.network_policy = BM_NET_NONE;
	assert_false(bm_sandbox_filters_egress(&sb));
	sb.network_policy = BM_NET_FULL;
	assert_false(bm_sandbox_filters_egress(&sb));
}

static void test_sandbox_egress_without_a_filter(void **state)
{
	struct bm_sandbox sb = sandbox();
	struct bm_sandbox_enf enf = { 0 };

	/* nothing to filter: nothing asked of the filter, nothing said */
	assert_int_equal(bm_sandbox_egress(NULL, &sb, -1, 1, &enf), 0);
	assert_string_equal(enf.mech[BM_SBX_NETWORK], "");
	/* to filter, with none loaded: refused, nothing said to hold it */
	sb.network_policy = BM_NET_EGRESS_RESTRICTED;
	assert_int_equal(bm_sandbox_egress(NULL, &sb, -1, 1, &enf), -ENOENT);
	assert_string_equal(enf.mech[BM_SBX_NETWORK], "");
}

static void test_sandbox_enforcement_json_keeps_what_is_there(void **state)
{
	struct bm_sandbox_enf enf = { 0 };
	json_t *o = json_pack("{s:s}", "network", "cgroup bpf egress filter: its own host only");

	snprintf(enf.mech[BM_SBX_NETWORK], BM_SBX_MECH_LEN, "netns (loopback only)");
	snprintf(enf.mech[BM_SBX_CAPS], BM_SBX_MECH_LEN, "none");
	assert_int_equal(bm_sandbox_enf_json(&enf, o), 0);
	/* the agent said it first (its filter): ours does not overwrite it */
	assert_string_equal(json_string_value(json_object_get(o, "network")),
			    "cgroup bpf egress filter: its own host only");
	assert_string_equal(json_string_value(json_object_get(o, "caps")), "none");
	assert_int_equal(json_object_size(o), 2);
	json_decref(o);
	assert_string_equal(bm_sbx_name(BM_SBX_RO_ROOT), "read_only_root");
	assert_null(bm_sbx_name(BM_SBX__MAX));
}

/*
 * An attach's caller's word (POST .../exit "enforcement"): parsed back from
 * what bm_sandbox_enf_json() writes, taken only where the agent held
 * nothing itself, and said to be the caller's ("by"); anything else refused.
 */
static void test_sandbox_enforcement_of_the_caller(void **state)
{
	struct bm_sandbox_enf mine = { 0 }, agent = { 0 }, got;
	char long_s[BM_SBX_MECH_LEN + 1];
	json_t *o = json_object(), *bad;
	const char *key = NULL;

	snprintf(mine.mech[BM_SBX_CAPS], BM_SBX_MECH_LEN, "bounding set empty");
	snprintf(mine.mech[BM_SBX_NETWORK], BM_SBX_MECH_LEN, "netns (loopback only)");
	assert_int_equal(bm_sandbox_enf_json(&mine, o), 0);
	assert_null(json_object_get(o, "by"));
	assert_int_equal(bm_sandbox_enf_parse(o, &got, &key), 0);
	assert_null(key);
	assert_string_equal(got.mech[BM_SBX_CAPS], "bounding set empty");
	assert_string_equal(got.mech[BM_SBX_NETWORK], "netns (loopback only)");
	assert_false(got.by_caller[BM_SBX_CAPS]);
	json_decref(o);
	/* the agent's filter stands; the caller's capabilities are its word */
	snprintf(agent.mech[BM_SBX_NETWORK], BM_SBX_MECH_LEN, "cgroup bpf egress filter");
	bm_sandbox_enf_take_caller(&agent, &got);
	assert_string_equal(agent.mech[BM_SBX_NETWORK], "cgroup bpf egress filter");
	assert_false(agent.by_caller[BM_SBX_NETWORK]);
	assert_string_equal(agent.mech[BM_SBX_CAPS], "bounding set empty");
	assert_true(agent.by_caller[BM_SBX_CAPS]);
	o = json_pack("{s:s}", "cpu", "cgroup v2 cpu.max");
	assert_int_equal(bm_sandbox_enf_json(&agent, o), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(o, "by"), "caps")),
			    "caller");
	assert_null(json_object_get(json_object_get(o, "by"), "network"));
	assert_int_equal(json_object_size(json_object_get(o, "by")), 1);
	/* an outcome's enforcement is not a caller's word: "by" and "cpu" are not its to say */
	assert_int_equal(bm_sandbox_enf_parse(o, &got, &key), -EINVAL);
	assert_non_null(key);
	json_decref(o);
	memset(long_s, 'x', sizeof(long_s) - 1);
	long_s[sizeof(long_s) - 1] = '\0';
	bad = json_pack("[{s:i}, {s:s}, {s:s}, {s:s}, {s:s}]", "caps", 1, "caps", "", "caps", long_s,
			"caps", "a\nb", "nope", "x");
	for (size_t i = 0; i < json_array_size(bad); i++) {
		key = NULL;
		assert_int_equal(bm_sandbox_enf_parse(json_array_get(bad, i), &got, &key), -EINVAL);
		assert_non_null(key);
	}
	json_decref(bad);
	bad = json_array();
	assert_int_equal(bm_sandbox_enf_parse(bad, &got, &key), -EINVAL);
	json_decref(bad);
}

static void test_sandbox_workspace_in_json_and_looser(void **state)
{
	struct bm_sandbox p = sandbox(), c = sandbox();
	json_t *j;

	p.workspace = "/srv/ws";
	j = bm_sandbox_json(&p);
	assert_string_equal(json_string_value(json_object_get(j, "workspace")), "/srv/ws");
	json_decref(j);
	j = bm_sandbox_json(&c);
	assert_null(json_object_get(j, "workspace"));
	json_decref(j);
	/* a writable root: any workspace is no looser */
	c.workspace = "/etc";
	assert_null(bm_sandbox_looser(&c, &p));
	/* read-only: inside the parent's workspace only */
	p.read_only_root_fs = c.read_only_root_fs = true;
	assert_string_equal(bm_sandbox_looser(&c, &p), "sandbox.workspace");
	c.workspace = "/srv/ws/sub";
	assert_null(bm_sandbox_looser(&c, &p));
	c.workspace = "/srv/ws";
	assert_null(bm_sandbox_looser(&c, &p));
	c.workspace = "/srv/wsx";
	assert_string_equal(bm_sandbox_looser(&c, &p), "sandbox.workspace");
	c.workspace = NULL;
	assert_null(bm_sandbox_looser(&c, &p));
	p.workspace = NULL;
	c.workspace = "/srv/ws";
	assert_string_equal(bm_sandbox_looser(&c, &p), "sandbox.workspace");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sandbox_exec_agent_launch),
		cmocka_unit_test(test_sandbox_exec_run_without_flags_is_as_before),
		cmocka_unit_test(test_sandbox_exec_each_part_alone),
		cmocka_unit_test(test_sandbox_egress_without_a_filter),
		cmocka_unit_test(test_sandbox_enforcement_json_keeps_what_is_there),
		cmocka_unit_test(test_sandbox_enforcement_of_the_caller),
		cmocka_unit_test(test_sandbox_workspace_in_json_and_looser),
	};

	return cmocka_run_group_tests_name("sandbox_exec", tests, NULL, NULL);
}
