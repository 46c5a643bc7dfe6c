// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `burstmeter run --keep-meter`: a meter loaded once, pinned, and reused by
 * the runs after it as a guest (a ring of their own), metering as one
 * loaded for the run would, fast path included; and gone, pins and reaper,
 * once its time has passed. The pins go under a bpffs directory of this
 * test's own ($BURSTMETER_KEEP_DIR), never the host's.
 */
#include "runner.h"

static char keep_dir[PATH_MAX];

static bool pinned(void)
{
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/bm_meta", keep_dir);
	return !access(path, F_OK);
}

/*
 * Within timeout_ms the kept meter is unpinned and its directory gone (its
 * reaper, our child by then, is reaped later). Both are waited for: the
 * reaper removes bm_meta first and the directory last, and a look between
 * the two (CI of 2026-12-07, the 6.1 VM) is not a meter left behind.
 */
static bool unpinned_within(int timeout_ms)
{
	uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000ULL;

	while ((pinned() || !access(keep_dir, F_OK)) && now_ns() < end)
		usleep(20000);
	return !pinned() && access(keep_dir, F_OK);
}

/*
 * Reapers of a dropped meter look every second: wait for them (our
 * children by now) up to timeout_ms; check_clean() then fails on any left.
 */
static void reap_within(int timeout_ms)
{
	uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000ULL;
	siginfo_t si;

	while (now_ns() < end) {
		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG) < 0)
			return;
		if (!si.si_pid)
			usleep(20000);
	}
}

static void check_said(struct res *r, const char *what)
{
	if (!memmem(r->err.p ? r->err.p : "", r->err.len, what, strlen(what)))
		fail_msg("stderr does not say '%s':\n%.*s", what, (int)r->err.len,
			 r->err.p ? r->err.p : "");
}

/*
 * The first run loads and keeps the meter; the next ones reuse it (-v says
 * so) and meter bm-spike 40 100 2 (80 ms of CPU) in full, and a fork bomb
 * under --pids 32 --meter-only dies by the meter's in-kernel kill as ever.
 * --keep-meter 0 drops it as that run ends.
 */
static void test_keep_reuse(void **state)
{
	struct fx *f = *state;
	char said[PATH_MAX + 64];
	struct res *r;
	double cpu;

	assert_false(pinned());
	r = run_bm(f, R_STD, "-v", "--keep-meter", "60s", "--", "/bin/true", NULL);
	check_completed(f, r);
	snprintf(said, sizeof(said), "meter kept in %s", keep_dir);
	check_said(r, said);
	assert_true(pinned());

	r = run_bm(f, R_STD, "-v", "--keep-meter", "60s", "--", wl("bm-spike"), "40", "100", "2",
		   NULL);
	check_completed(f, r);
	snprintf(said, sizeof(said), "reusing the meter pinned in %s", keep_dir);
	check_said(r, said);
	cpu = jnum(r->o, "totals.cpu_seconds");
	assert_between(cpu, 0.08, 0.08 + 2 * integ_startup_cpu_s());
	assert_between(cpu - jnum(r->o, "meter.cgroup_cpu_seconds"), -0.002, 0.002);
	check_metered(f, r->o, 10);

	/* without the flag it is reused all the same, not extended */
	r = run_bm(f, R_STD, "-v", "--meter-only", "--pids", "32", "--", wl("bm-forkbomb"), "10",
		   NULL);
	check_said(r, said);
	assert_int_equal(r->status, 137);
	assert_non_null(r->o);
	assert_string_equal(jstr(r->o, "termination.reason"), "pids_ceiling");
	assert_between((double)jint(r->o, "peak.pids"), 32, getenv("BM_VM") ? 40 : 34);

	r = run_bm(f, R_STD, "-v", "--keep-meter", "0", "--", "/bin/true", NULL);
	check_completed(f, r);
	check_said(r, said);
	assert_true(unpinned_within(5000));
	reap_within(3000);
	assert_clean(f);
}

/*
 * Kept for 5 s: pinned after the run, unpinned (and its reaper gone) within
 * a few seconds more; when not, it says how long after the run it looked.
 * (Not 1 s: under the VM's emulation a run spends most of a second after its
 * meter's time starts, and the pin was gone before we looked; 3 s failed
 * once in CI's VM, which did not say where.)
 */
static void test_keep_expires(void **state)
{
	struct fx *f = *state;
	uint64_t ended;
	struct res *r;

	assert_false(pinned());
	r = run_bm(f, R_STD, "--keep-meter", "5s", "--", "/bin/true", NULL);
	ended = now_ns();
	check_completed(f, r);
	if (!pinned())
		fail_msg("a meter kept for 5 s was gone %.2f s after its run ended",
			 (now_ns() - ended) / 1e9);
	if (!unpinned_within(10000))
		fail_msg("a meter kept for 5 s was still pinned %.2f s after its run ended",
			 (now_ns() - ended) / 1e9);
	reap_within(3000);
	assert_clean(f);
}

/* A bad duration is one line and exit 125, and nothing is pinned. */
static void test_keep_bad_input(void **state)
{
	struct fx *f = *state;
	struct res *r;

	r = run_bm(f, R_STD, "--keep-meter", "soon", "--", "/bin/true", NULL);
	assert_int_equal(r->status, 125);
	check_said(r, "invalid --keep-meter 'soon'");
	assert_false(pinned());
	assert_clean(f);
}

/*
 * A kept meter is pinned: on a node just booted (no bpffs at /sys/fs/bpf)
 * run mounts one, as the agent does (the VM boots without one); a keep dir
 * on another filesystem is one line naming it, exit 125, nothing made.
 */
static void test_keep_not_bpffs(void **state)
{
	struct fx *f = *state;
	char dir[PATH_MAX], said[PATH_MAX + 64];
	struct res *r;

	snprintf(dir, sizeof(dir), "/tmp/bm-%s-keep/meter", token);
	setenv("BURSTMETER_KEEP_DIR", dir, 1);
	r = run_bm(f, R_STD, "--keep-meter", "60s", "--", "/bin/true", NULL);
	setenv("BURSTMETER_KEEP_DIR", keep_dir, 1);
	assert_int_equal(r->status, 125);
	snprintf(said, sizeof(said), "pin dir %s is on", dir);
	check_said(r, said);
	check_said(r, "not a BPF filesystem");
	assert_int_equal(access(dir, F_OK), -1);
	assert_clean(f);
}

static int group_teardown(void **state)
{
	(void)state;
	/* a failed test may have left the meter: its pins go with the directory */
	if (pinned() || !access(keep_dir, F_OK)) {
		char cmd[PATH_MAX + 16];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", keep_dir);
		if (system(cmd))
			print_error("failed to remove %s\n", keep_dir);
	}
	return 0;
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_keep_bad_input, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keep_not_bpffs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keep_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keep_expires, setup, teardown),
	};
	size_t n;
	int rc = runner_init("test_keep");

	if (rc)
		return rc;
	snprintf(keep_dir, sizeof(keep_dir), "/sys/fs/bpf/%s-keep", token);
	setenv("BURSTMETER_KEEP_DIR", keep_dir, 1);
	n = integ_filter(tests, sizeof(tests) / sizeof(tests[0]));
	return _cmocka_run_group_tests("keep", tests, n, NULL, group_teardown);
}
