// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Bad days, injected: the agent killed (SIGKILL, at a named point:
 * BURSTMETER_FAULT) at each step of a launch; stopped (SIGSTOP) for 5 s; its
 * state dir full; its ring buffer flooded; an effect's cgroup that cannot be
 * removed (rmdir EBUSY). For each: nothing lost, no effect run twice, none
 * left unaccounted, and the loop never waits.
 */
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/statfs.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "runner.h"
#include "agent_fx.h"
#include "base/common.h"
#include "bm_abi.h"

/* The agent with max_running running slots, and extra config lines (or NULL). */
static void agent_start_n(int max_running, const char *extra)
{
	agent_start_cfg("", "max_running: %d\nmax_queued: 64\ntenant_max_running: 100\n"
			"admit_cpu_pressure: 100\nadmit_mem_available: 0\nsocket_mode: \"0666\"\n"
			"tenants:\n  - { uid: 0, tenant: %s }\n%s", max_running, token,
			extra ? extra : "");
}

static void agent_start(const char *extra)
{
	agent_start_n(16, extra);
}

static int setup_f(void **state)
{
	return agent_fx_setup(state, "faults", "bmit-faults");
}

static json_t *sh_req(const char *id, const char *script)
{
	return json_pack("{s:s, s:[s, s, s], s:s, s:{s:s}}", "id", id, "argv", "/bin/sh", "-c",
			 script, "intent", "faults", "env", "PATH", "/usr/bin:/bin:/usr/sbin:/sbin");
}

/* Lines in a file (0 if it is not there). */
static int lines_of(const char *path)
{
	char buf[4096];
	int n = 0, i, len = bm_read_file(AT_FDCWD, path, buf, sizeof(buf));

	for (i = 0; i < len; i++)
		n += buf[i] == '\n';
	return n;
}

/*
 * kill -9 at each step of a launch: before its cgroup, after it, once the
 * store knows where it runs, once the spawner has it, once it runs. After a
 * restart each effect ends, having run exactly once.
 */
static void test_faults_kill9_at_each_launch_step(void **state)
{
	static const char *const points[] = { "launch-start", "launch-cgroup", "launch-stored",
					      "launch-sent", "launch-answered" };
	char script[PATH_MAX + 128], runs[PATH_MAX + 32];
	json_t *e = NULL;
	unsigned int i;
	int status;

	for (i = 0; i < BM_ARRAY_SIZE(points); i++) {
		snprintf(runs, sizeof(runs), "%s/runs-%u", ag.dir, i);
		snprintf(script, sizeof(script), "echo ran >> %s; sleep 0.3", runs);
		setenv("BURSTMETER_FAULT", points[i], 1);
		agent_start(NULL);
		unsetenv("BURSTMETER_FAULT");
		/* the agent dies on this request: no answer */
		(void)call("POST", "/v1/effects", sh_req(points[i], script), &e);
		json_decref(e);
		e = NULL;
		status = agent_stop(SIGKILL);
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
			fail_msg("%s: the agent did not die there (status %#x)", points[i], status);
		agent_start(NULL);
		e = wait_final(points[i], 20000);
		integ_note("killed at %s: after a restart %s, ran %d time(s)", points[i],
			   jstr(e, "state"), lines_of(runs));
		assert_string_equal(jstr(e, "state"), "succeeded");
		json_decref(e);
		e = NULL;
		assert_int_equal(lines_of(runs), 1);
		assert_int_equal(agent_stop(SIGTERM), 0);
	}
	agent_start(NULL);
	agent_fx_finish(state);
}

/* Tasks in a cgroup (its cgroup.procs lines), -1 if it is gone. */
static int procs_in(const char *cg)
{
	char path[PATH_MAX + 16], buf[8192];
	int n = 0, i, len;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	len = bm_read_file(AT_FDCWD, path, buf, sizeof(buf));
	if (len < 0)
		return -1;
	for (i = 0; i < len; i++)
		n += buf[i] == '\n';
	return n;
}

/*
 * A fork bomb that starts while the agent is stopped, its pids ceiling
 * held by the meter alone (enforcement: meter): the kernel kills every
 * task of it at its next fork, with no agent to ask. Under a controller it
 * would sit at its ceiling until the agent came back.
 */
static void kernel_kill_while_stopped(void)
{
	char script[PATH_MAX + 64], bomb[PATH_MAX], cg[PATH_MAX];
	json_t *e = NULL, *r;
	int during;

	if (!realpath(wl("bm-forkbomb"), bomb))
		fail_msg("bm-forkbomb: %s", strerror(errno));
	agent_start("enforcement: meter\n");
	snprintf(script, sizeof(script), "sleep 1; exec %s 10", bomb);
	r = sh_req("bomb", script);
	json_object_set_new(r, "sandbox", json_pack("{s:i}", "pids_limit", 16));
	assert_int_equal(call("POST", "/v1/effects", r, &e), 201);
	snprintf(cg, sizeof(cg), "%s", jstr(e, "cgroup"));
	json_decref(e);
	e = NULL;
	assert_int_equal(kill(ag.pid, SIGSTOP), 0);
	/* it forks from 1 s on; at 3 s the kernel has killed what forked */
	sleep(3);
	during = procs_in(cg);
	assert_int_equal(kill(ag.pid, SIGCONT), 0);
	e = wait_final("bomb", 20000);
	integ_note("bomb, forking while the agent was stopped: %d tasks left 2 s in, %s (%s, by %s), "
		   "peak %lld tasks, pids held by %s", during, jstr(e, "state"),
		   jstr(e, "outcome.termination.reason"), jstr(e, "outcome.termination.by"),
		   jint(e, "outcome.peak.pids"), jstr(e, "outcome.enforcement.pids"));
	assert_string_equal(jstr(e, "outcome.enforcement.pids"), "meter");
	assert_int_equal(during, 0);
	assert_string_equal(jstr(e, "outcome.termination.reason"), "pids_ceiling");
	/* the kernel's kill at the 17th: forks already inside the kernel complete, one per CPU */
	assert_between((double)jint(e, "outcome.peak.pids"), 16, getenv("BM_VM") ? 24 : 18);
	json_decref(e);
}

/*
 * The agent stopped for 5 s: a memory ceiling still holds (the controller,
 * or the meter's kernel kill), and the meter goes on counting a spinner,
 * to the kernel's own cpu.stat. Then a kernel kill while it is stopped
 * (kernel_kill_while_stopped()).
 */
static void test_faults_sigstop(void **state)
{
	json_t *e = NULL, *r;

	agent_start(NULL);
	r = launch_req("balloon", "bm-balloon", "400", "512", "3000", NULL);
	json_object_set_new(r, "sandbox", json_pack("{s:s}", "memory_limit", "64Mi"));
	assert_int_equal(call("POST", "/v1/effects", r, &e), 201);
	json_decref(e);
	e = NULL;
	assert_int_equal(call("POST", "/v1/effects", launch_req("spin", "bm-spike", "100", "100",
								 "30", NULL), &e), 201);
	json_decref(e);
	e = NULL;
	assert_int_equal(kill(ag.pid, SIGSTOP), 0);
	sleep(5);
	assert_int_equal(kill(ag.pid, SIGCONT), 0);
	e = wait_final("balloon", 20000);
	integ_note("balloon: %s (%s), peak %.0f MiB", jstr(e, "state"),
		   jstr(e, "outcome.termination.reason"), jnum(e, "outcome.peak.memory_bytes") / MIB);
	assert_string_equal(jstr(e, "outcome.termination.reason"), "memory_ceiling");
	/* it never held much more than its ceiling, agent or none */
	assert_true(jnum(e, "outcome.peak.memory_bytes") < 96 * MIB);
	json_decref(e);
	e = wait_final("spin", 30000);
	integ_note("spin: %s, cpu %.3f s, the kernel's %.3f s", jstr(e, "state"),
		   jnum(e, "outcome.totals.cpu_seconds"), jnum(e, "outcome.meter.cgroup_cpu_seconds"));
	assert_string_equal(jstr(e, "state"), "succeeded");
	assert_true(jnum(e, "outcome.totals.cpu_seconds") >= 2.9);
	assert_between(jnum(e, "outcome.totals.cpu_seconds") - jnum(e, "outcome.meter.cgroup_cpu_seconds"),
		       -0.002, 0.002);
	json_decref(e);
	assert_int_equal(agent_stop(SIGTERM), 0);
	kernel_kill_while_stopped();
	agent_fx_finish(state);
}

/* Take every block of the file system of path's directory: path grows until it is full. */
static void fill(const char *path)
{
	static char blk[65536];
	struct statfs st;
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	while (write(fd, blk, sizeof(blk)) > 0)
		;
	close(fd);
	assert_int_equal(statfs(ag.state, &st), 0);
	integ_note("state dir full: %llu blocks free", (unsigned long long)st.f_bavail);
}

/*
 * A cancel the full store cannot keep is refused (503), and the effect
 * stays as it was: a cancel answered 202 and then lost to a kill -9 would
 * let a cancelled effect run. Asked again with room, it holds across
 * kill -9: the effect never runs.
 */
static void cancel_while_full(const char *filler)
{
	char script[PATH_MAX + 64], runs[PATH_MAX + 32];
	json_t *e = NULL;

	snprintf(runs, sizeof(runs), "%s/runs-queued", ag.dir);
	snprintf(script, sizeof(script), "echo ran >> %s", runs);
	/* one slot, held: the second effect waits in the queue */
	agent_start_n(1, NULL);
	assert_int_equal(call("POST", "/v1/effects", sh_req("hold", "sleep 60"), &e), 201);
	json_decref(e);
	e = NULL;
	assert_int_equal(call("POST", "/v1/effects", sh_req("queued", script), &e), 202);
	json_decref(e);
	e = NULL;
	fill(filler);
	assert_int_equal(call("POST", "/v1/effects/queued/cancel", NULL, &e), 503);
	integ_note("cancel while full: 503 (%s)", jstr(e, "error"));
	json_decref(e);
	e = NULL;
	assert_int_equal(call("GET", "/v1/effects/queued", NULL, &e), 200);
	assert_string_equal(jstr(e, "state"), "queued");
	json_decref(e);
	e = NULL;
	/* what it was told is what a restart finds: queued, not cancelled */
	assert_int_equal(WTERMSIG(agent_stop(SIGKILL)), SIGKILL);
	assert_int_equal(unlink(filler), 0);
	agent_start_n(1, NULL);
	assert_int_equal(call("GET", "/v1/effects/queued", NULL, &e), 200);
	assert_string_equal(jstr(e, "state"), "queued");
	json_decref(e);
	e = NULL;
	/* with room the cancel is stored before 202: a kill -9 right after loses nothing */
	assert_int_equal(call("POST", "/v1/effects/queued/cancel", NULL, &e), 202);
	json_decref(e);
	e = NULL;
	assert_int_equal(WTERMSIG(agent_stop(SIGKILL)), SIGKILL);
	agent_start_n(16, NULL);
	e = wait_final("queued", 5000);
	assert_string_equal(jstr(e, "state"), "cancelled");
	json_decref(e);
	e = NULL;
	assert_int_equal(call("POST", "/v1/effects/hold/cancel", NULL, &e), 202);
	json_decref(e);
	e = wait_final("hold", 20000);
	json_decref(e);
	/* a while for a wrongly queued one to have started and written */
	usleep(300 * 1000);
	integ_note("the cancelled effect ran %d time(s)", lines_of(runs));
	assert_int_equal(lines_of(runs), 0);
}

/*
 * The state dir full (a small tmpfs): the outcome the store refuses is kept
 * and shown (the log says it was refused), and stored once there is room;
 * after a restart it is there. Then a cancel while full (cancel_while_full()).
 */
static void test_faults_full_state_dir(void **state)
{
	char filler[PATH_MAX + 32];
	json_t *e = NULL;

	assert_int_equal(mkdir(ag.state, 0700), 0);
	assert_int_equal(mount("tmpfs", ag.state, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=0700"), 0);
	agent_start(NULL);
	assert_int_equal(call("POST", "/v1/effects", sh_req("early", "true"), &e), 201);
	json_decref(e);
	e = wait_final("early", 20000);
	json_decref(e);
	e = NULL;
	assert_int_equal(call("POST", "/v1/effects", sh_req("full", "sleep 1; echo done"), &e), 201);
	json_decref(e);
	e = NULL;
	/* every block of the tmpfs taken */
	snprintf(filler, sizeof(filler), "%s/filler", ag.state);
	fill(filler);
	e = wait_final("full", 20000);
	integ_note("while full: %s (%s)", jstr(e, "state"), jstr(e, "outcome.termination.reason"));
	assert_string_equal(jstr(e, "state"), "succeeded");
	json_decref(e);
	e = NULL;
	/* room again: it lands within a few ticks, and a restart reads it from the store */
	assert_true(agent_log_has("failed to store the outcome of"));
	assert_int_equal(unlink(filler), 0);
	usleep(500 * 1000);
	assert_int_equal(agent_stop(SIGTERM), 0);
	agent_start(NULL);
	e = wait_final("full", 5000);
	assert_string_equal(jstr(e, "state"), "succeeded");
	assert_string_equal(jstr(e, "outcome.termination.reason"), "completed");
	json_decref(e);
	e = NULL;
	assert_int_equal(agent_stop(SIGTERM), 0);
	cancel_while_full(filler);
	agent_finish();
	assert_int_equal(umount2(ag.state, 0), 0);
	assert_clean(*state);
}

/* The kernel's own count of ring-buffer records lost: the agent's pinned bm_stats, every CPU. */
static long long kernel_lost(void)
{
	char path[PATH_MAX + 16];
	int ncpu = libbpf_num_possible_cpus(), fd, c;
	uint32_t key = BM_STAT_RB_DROPS;
	long long sum = 0;

	assert_true(ncpu > 0);
	uint64_t v[ncpu];

	snprintf(path, sizeof(path), "%s/bm_stats", ag.pins);
	fd = bpf_obj_get(path);
	assert_true(fd >= 0);
	assert_int_equal(bpf_map_lookup_elem(fd, &key, v), 0);
	close(fd);
	for (c = 0; c < ncpu; c++)
		sum += (long long)v[c];
	return sum;
}

/*
 * A ring-buffer storm: effects crossing a threshold every window while the
 * agent is stopped, into a 16 KiB ring. What was lost is counted in every
 * outcome, never silent, and every effect still ends with one.
 */
static void test_faults_ring_storm(void **state)
{
	char pol[PATH_MAX + 32], extra[PATH_MAX + 64], id[16];
	json_t *e = NULL;
	long long lost = 0;
	FILE *f;
	int i;

	snprintf(pol, sizeof(pol), "%s/storm.yaml", ag.dir);
	f = fopen(pol, "we");
	assert_non_null(f);
	fputs("defaults:\n  cpu: { soft: 0.01, hold_ms: 100000, steps: [throttle] }\n", f);
	fclose(f);
	snprintf(extra, sizeof(extra), "ring_buffer: 16Ki\npolicy: %s\n", pol);
	agent_start(extra);
	for (i = 0; i < 4; i++) {
		snprintf(id, sizeof(id), "storm%d", i);
		assert_int_equal(call("POST", "/v1/effects", launch_req(id, "bm-spike", "5", "10", "400",
									 NULL), &e), 201);
		json_decref(e);
		e = NULL;
	}
	assert_int_equal(kill(ag.pid, SIGSTOP), 0);
	sleep(3);
	assert_int_equal(kill(ag.pid, SIGCONT), 0);
	for (i = 0; i < 4; i++) {
		snprintf(id, sizeof(id), "storm%d", i);
		e = wait_final(id, 30000);
		assert_string_equal(jstr(e, "state"), "succeeded");
		lost = jint(e, "outcome.meter.lost_records") > lost ? jint(e, "outcome.meter.lost_records")
								   : lost;
		json_decref(e);
	}
	integ_note("lost ring-buffer records, counted: %lld; the kernel's count: %lld", lost,
		   kernel_lost());
	assert_true(lost > 0);
	/* every loss the kernel saw is in the last outcome: none after, none missed */
	assert_int_equal(lost, kernel_lost());
	agent_fx_finish(state);
}

/*
 * An effect's cgroup that cannot go (rmdir EBUSY: something made a cgroup
 * inside it, as a task stuck in the kernel holds one too): the effect ends,
 * the agent answers all the while (release never waits), and removes the
 * cgroup once it can.
 */
static void test_faults_cgroup_busy(void **state)
{
	char cg[PATH_MAX], child[PATH_MAX + 16];
	uint64_t worst = 0, t0;
	json_t *e = NULL, *h;
	int i;

	agent_start(NULL);
	assert_int_equal(call("POST", "/v1/effects", sh_req("busy", "sleep 0.5"), &e), 201);
	snprintf(cg, sizeof(cg), "%s", jstr(e, "cgroup"));
	json_decref(e);
	e = NULL;
	snprintf(child, sizeof(child), "%s/held", cg);
	assert_int_equal(mkdir(child, 0755), 0);
	/* it ends, and the loop never waits on what it could not remove */
	for (i = 0; i < 40; i++) {
		t0 = now_ns();
		assert_int_equal(call("GET", "/v1/healthz", NULL, &h), 200);
		json_decref(h);
		worst = now_ns() - t0 > worst ? now_ns() - t0 : worst;
		usleep(50000);
	}
	e = wait_final("busy", 1000);
	assert_string_equal(jstr(e, "state"), "succeeded");
	json_decref(e);
	integ_note("slowest answer while its cgroup was held: %.1f ms; its cgroup %s", worst / 1e6,
		   access(cg, F_OK) ? "gone" : "still there");
	assert_true(worst < 200 * BM_NSEC_PER_MSEC);
	assert_int_equal(access(cg, F_OK), 0);
	assert_int_equal(rmdir(child), 0);
	for (i = 0; i < 300 && !access(cg, F_OK); i++)
		usleep(10000);
	integ_note("let go: the cgroup went %.2f s later", i / 100.0);
	assert_int_equal(access(cg, F_OK), -1);
	agent_fx_finish(state);
}

/* agent_fx_teardown(), the tmpfs of a test that failed while it was mounted unmounted first. */
static int teardown_full(void **state)
{
	int found = agent_leftovers();

	(void)umount2(ag.state, MNT_DETACH);
	rm_rf(ag.dir);
	return teardown(state) || found ? -1 : 0;
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_faults_kill9_at_each_launch_step, setup_f, agent_fx_teardown),
		cmocka_unit_test_setup_teardown(test_faults_sigstop, setup_f, agent_fx_teardown),
		cmocka_unit_test_setup_teardown(test_faults_full_state_dir, setup_f, teardown_full),
		cmocka_unit_test_setup_teardown(test_faults_ring_storm, setup_f, agent_fx_teardown),
		cmocka_unit_test_setup_teardown(test_faults_cgroup_busy, setup_f, agent_fx_teardown),
	};
	size_t n;
	int rc = runner_init("test_faults");

	if (rc)
		return rc;
	n = integ_filter(tests, sizeof(tests) / sizeof(tests[0]));
	return _cmocka_run_group_tests("faults", tests, n, NULL, NULL);
}
