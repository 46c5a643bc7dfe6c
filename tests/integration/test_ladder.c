// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The graduated response end to end: ceilings (through whatever controller
 * this host has, and through the meter alone with --meter-only), the ladder
 * under policy files, and typed terminations, on hostile workloads. Every
 * run also checks that nothing is left: no cgroup in the v2 tree, and no v1
 * twin of the effect cgroup under our own v1 cgroups.
 */
#include "runner.h"

#define RUN_MS(r) ((r)->elapsed_s * 1000)

static char policy[PATH_MAX];

/* Write a policy file into the fixture's private directory. */
static const char *write_policy(struct fx *f, const char *yaml)
{
	FILE *fp;

	snprintf(policy, sizeof(policy), "%s/policy.yaml", f->dir);
	fp = fopen(policy, "we");
	assert_non_null(fp);
	assert_true(fputs(yaml, fp) >= 0);
	assert_int_equal(fclose(fp), 0);
	snprintf(f->own, sizeof(f->own), "policy.yaml");
	return policy;
}

/* No v1 twin (burstmeter.<tenant>.<id>) of ours is left in any v1 hierarchy. */
static void assert_no_v1_twins(void)
{
	static const char *const ctrl[BM_V1__MAX] = { "memory", "pids", "cpu", "blkio", "cpuset" };
	struct bm_cgroup_env env;
	char dir[PATH_MAX], cmd[2 * PATH_MAX + 64];
	unsigned int i;

	assert_int_equal(bm_cgroup_env_detect("/proc/self/mountinfo", "/proc/self/cgroup", &env), 0);
	for (i = 0; i < BM_V1__MAX; i++) {
		FILE *p;
		char line[PATH_MAX];

		if (!env.v1_mount[i][0])
			continue;
		snprintf(dir, sizeof(dir), "%s%s", env.v1_mount[i],
			 strcmp(env.v1_self[i], "/") ? env.v1_self[i] : "");
		snprintf(cmd, sizeof(cmd), "ls -d '%s'/burstmeter.%s@* 2>/dev/null", dir, token);
		p = popen(cmd, "r");
		assert_non_null(p);
		if (fgets(line, sizeof(line), p))
			fail_msg("a v1 %s cgroup was left behind: %s", ctrl[i], line);
		pclose(p);
	}
}

static void print_actions(struct res *r)
{
	json_t *a = jget(r->o, "actions"), *e;
	size_t i;

	json_array_foreach(a, i, e)
		integ_note("action %s at %.1f ms: %s observed %g threshold %g",
			   json_string_value(json_object_get(e, "action")),
			   json_number_value(json_object_get(e, "at_ms")),
			   json_string_value(json_object_get(e, "reason")),
			   json_number_value(json_object_get(e, "observed")),
			   json_number_value(json_object_get(e, "threshold")));
}

/* The last action's name, or "" if there was none. */
static const char *last_action(struct res *r)
{
	json_t *a = jget(r->o, "actions");
	size_t n = json_array_size(a);

	return n ? json_string_value(json_object_get(json_array_get(a, n - 1), "action")) : "";
}

static bool has_action(struct res *r, const char *what)
{
	json_t *a = jget(r->o, "actions"), *e;
	size_t i;

	json_array_foreach(a, i, e)
		if (!strcmp(json_string_value(json_object_get(e, "action")), what))
			return true;
	return false;
}

/*
 * A fork bomb under --pids 32: the ceiling ends it (pids_ceiling, killed by
 * SIGKILL: 137) in well under a second of its life, and not one of its
 * processes survives (the harness is their subreaper: any left is seen).
 */
static void check_forkbomb(struct fx *f, bool meter_only)
{
	struct res *r;

	if (meter_only)
		r = run_bm(f, R_STD, "--meter-only", "--pids", "32", "--", wl("bm-forkbomb"), "10", NULL);
	else
		r = run_bm(f, R_STD, "--pids", "32", "--", wl("bm-forkbomb"), "10", NULL);
	print_actions(r);
	assert_int_equal(r->status, 137);
	assert_non_null(r->o);
	assert_string_equal(jstr(r->o, "termination.reason"), "pids_ceiling");
	assert_string_equal(last_action(r), "kill");
	assert_true(jnum(r->o, "wall_seconds") < 0.5);
	/*
	 * A controller never lets it pass 32. The meter kills the task that makes
	 * the 33rd, and every task of the cgroup at its next fork or fault; forks
	 * already inside the kernel then complete: one per CPU here, more under
	 * emulation (BM_VM), where a task is often preempted in the middle of one.
	 */
	assert_between((double)jint(r->o, "peak.pids"), 32, meter_only ? (getenv("BM_VM") ? 40 : 34) : 32);
	assert_false(jget(r->o, "retry.eligible") == json_true());
	assert_non_null(strstr(jstr(r->o, "retry.advice"), "--pids"));
	check_metered(f, r->o, 10);
	assert_clean(f);
	assert_no_v1_twins();
}

static void test_ladder_forkbomb(void **state)
{
	check_forkbomb(*state, false);
}

static void test_ladder_forkbomb_meter_only(void **state)
{
	check_forkbomb(*state, true);
}

/*
 * A balloon growing as fast as it can (asked for 1.6 GiB/s) under --memory
 * 128M: memory_ceiling, and the meter's peak at most 16 MiB past the
 * ceiling, with the controller or with only the meter's kernel fast path.
 */
static void check_balloon(struct fx *f, const char *mode)
{
	const double ceiling = 128 * MIB;
	struct res *r;

	if (mode)
		r = run_bm(f, R_STD, mode, "--memory", "128M", "--", wl("bm-balloon"), "1600", "1024", "100", NULL);
	else
		r = run_bm(f, R_STD, "--memory", "128M", "--", wl("bm-balloon"), "1600", "1024", "100", NULL);
	print_actions(r);
	assert_int_equal(r->status, 137);
	assert_non_null(r->o);
	assert_string_equal(jstr(r->o, "termination.reason"), "memory_ceiling");
	assert_between(jnum(r->o, "peak.memory_bytes"), 64 * MIB, ceiling + 16 * MIB);
	assert_false(jget(r->o, "retry.eligible") == json_true());
	assert_non_null(strstr(jstr(r->o, "retry.advice"), "128 MiB"));
	check_metered(f, r->o, 10);
	assert_clean(f);
	assert_no_v1_twins();
}

static void test_ladder_balloon(void **state)
{
	check_balloon(*state, NULL);
}

static void test_ladder_balloon_meter_only(void **state)
{
	check_balloon(*state, "--meter-only");
	assert_string_equal(jstr(((struct fx *)*state)->r.o, "enforcement.memory"), "meter");
}

/*
 * Two spinning threads for 1.5 s under a soft CPU level of 0.5 cores with
 * only throttling allowed: throttled (by a controller or by a freeze duty
 * cycle), never killed; it completes, and over its life it gets about half a
 * core, far from the two it asked for.
 */
static void test_ladder_cpu_hog_throttled(void **state)
{
	struct fx *f = *state;
	const char *p = write_policy(f, "defaults:\n  cpu: { soft: 0.5, hold_ms: 50, steps: [throttle] }\n");
	struct res *r;
	int attempt;

	for (attempt = 0;; attempt++) {
		r = run_bm(f, R_STD, "--policy", p, "--", wl("bm-hog"), "1.5", "2", NULL);
		print_actions(r);
		check_completed(f, r);
		assert_true(has_action(r, "throttle"));
		assert_false(has_action(r, "kill") || has_action(r, "cancel"));
		assert_true(jnum(r->o, "throttled_seconds") > 0.5);
		assert_clean(f);
		if (!retry_busy(attempt, "average.cpu_cores", jnum(r->o, "average.cpu_cores"), 0.2, 1.0))
			break;
	}
}

/*
 * A freeze that does not clear: memory held over a hard level is frozen,
 * still over when the freeze times out (500 ms), cancelled (SIGTERM, which
 * it ignores), and killed when the grace (300 ms) is up: the whole ladder
 * in about 800 ms after the freeze, never stuck.
 */
static void test_ladder_freeze_escalates(void **state)
{
	struct fx *f = *state;
	const char *p = write_policy(f, "freeze_timeout_ms: 500\ncancel_grace_ms: 300\n"
					"defaults:\n  memory: { hard: 64M, steps: [freeze, cancel, kill] }\n");
	char script[PATH_MAX + 64];
	json_t *a;
	struct res *r;
	double frz, can, kil;

	snprintf(script, sizeof(script), "trap '' TERM; exec %s 1600 128 20000", wl("bm-balloon"));
	r = run_bm(f, R_STD, "--policy", p, "--", "sh", "-c", script, NULL);
	print_actions(r);
	assert_int_equal(r->status, 137);
	assert_string_equal(jstr(r->o, "termination.reason"), "memory_ceiling");
	a = jget(r->o, "actions");
	assert_int_equal(json_array_size(a), 4);
	frz = json_number_value(json_object_get(json_array_get(a, 0), "at_ms"));
	can = json_number_value(json_object_get(json_array_get(a, 2), "at_ms"));
	kil = json_number_value(json_object_get(json_array_get(a, 3), "at_ms"));
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "action")), "freeze");
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 1), "action")), "thaw");
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 2), "action")), "cancel");
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 3), "action")), "kill");
	assert_between(can - frz, 500, 500 + integ_timer_slack_ms());
	assert_between(kil - can, 300, 300 + integ_timer_slack_ms());
	assert_between(jnum(r->o, "frozen_seconds"), 0.5, 0.5 + integ_timer_slack_ms() / 1000);
	assert_clean(f);
}

/* A cancel the effect obeys: SIGTERM ends it within the grace, with the ceiling's reason. */
static void test_ladder_cancel_obeyed(void **state)
{
	struct fx *f = *state;
	const char *p = write_policy(f, "freeze_timeout_ms: 200\ncancel_grace_ms: 5000\n"
					"defaults:\n  memory: { hard: 64M, steps: [freeze, cancel] }\n");
	struct res *r;

	r = run_bm(f, R_STD, "--policy", p, "--", wl("bm-balloon"), "1600", "128", "20000", NULL);
	print_actions(r);
	assert_int_equal(r->status, 143);
	assert_string_equal(jstr(r->o, "termination.reason"), "memory_ceiling");
	assert_string_equal(jstr(r->o, "termination.by"), "policy");
	assert_string_equal(last_action(r), "cancel");
	assert_true(jnum(r->o, "wall_seconds") < 3);
	assert_clean(f);
}

/*
 * Under a memory ceiling a controller charges the effect too: its own peak
 * (v2 memory.peak, v1 max_usage_in_bytes) and the meter's RSS peak of a
 * 200 MiB anonymous touch agree within 10 %.
 */
static void test_ladder_memory_peak_cross_check(void **state)
{
	struct fx *f = *state;
	double ours, theirs;
	struct res *r;

	r = run_bm(f, R_STD, "--memory", "512M", "--", wl("bm-memtouch"), "200", "50", NULL);
	check_completed(f, r);
	ours = jnum(r->o, "peak.memory_bytes");
	theirs = jnum(r->o, "meter.cgroup_memory_peak_bytes");
	integ_note("peak: meter %.1f MiB, memory controller %.1f MiB", ours / MIB, theirs / MIB);
	assert_between(ours, 200 * MIB, 220 * MIB);
	assert_between(ours / theirs, 0.9, 1.1);
	assert_clean(f);
}

/* A well-behaved effect under every ceiling and the example policy is never acted on. */
static void test_ladder_well_behaved_untouched(void **state)
{
	struct fx *f = *state;
	char example[PATH_MAX];
	struct res *r;

	r = run_bm(f, R_STD, "--cpu", "2", "--memory", "512M", "--pids", "64", "--timeout", "30",
		   "--policy", integ_policy(example, sizeof(example), "example.yaml"), "--",
		   wl("bm-spike"), "20", "100", "5", NULL);
	check_completed(f, r);
	assert_int_equal(json_array_size(jget(r->o, "actions")), 0);
	assert_true(jnum(r->o, "throttled_seconds") == 0 && jnum(r->o, "frozen_seconds") == 0);
	assert_true(jget(r->o, "retry.eligible") == json_true());
	assert_clean(f);
	assert_no_v1_twins();
}

/* An invalid policy: exit 125, one line with FILE:LINE:COLUMN, and nothing created. */
static void test_ladder_bad_policy(void **state)
{
	struct fx *f = *state;
	const char *p = write_policy(f, "defaults:\n  cpu: { soft: 1.5x }\n");
	char want[PATH_MAX + 16];
	struct res *r;

	r = run_bm(f, R_STD, "--policy", p, "--", "true", NULL);
	assert_int_equal(r->status, 125);
	snprintf(want, sizeof(want), "%s:2:16: ", p);
	assert_non_null(strstr(r->err.p, want));
	/* one line: its only newline is the last character */
	assert_true(strchr(r->err.p, '\n') == r->err.p + strlen(r->err.p) - 1);
	assert_null(r->o);
	assert_int_equal(cgroups_created(f), 0);
	assert_clean(f);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ladder_bad_policy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ladder_forkbomb, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ladder_forkbomb_meter_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ladder_balloon, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ladder_balloon_meter_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ladder_cpu_hog_throttled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ladder_freeze_escalates, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ladder_cancel_obeyed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ladder_well_behaved_untouched, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ladder_memory_peak_cross_check, setup, teardown),
	};
	size_t n;
	int rc = runner_init("test_ladder");

	if (rc)
		return rc;
	n = integ_filter(tests, sizeof(tests) / sizeof(tests[0]));
	return _cmocka_run_group_tests("ladder", tests, n, NULL, NULL);
}
