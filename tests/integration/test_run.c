// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `burstmeter run` end to end: the real binary ($BM_BIN, default
 * build/burstmeter) with real BPF and real cgroups, metering workloads whose
 * use is known exactly ($BM_WORKLOADS, default build/workloads). The
 * outcome is read from --outcome with jansson. Every bound below comes from
 * what the workload does, not from what earlier runs showed.
 *
 * After every test nothing may be left: no burstmeter.* cgroup of ours
 * anywhere in the v2 tree, no process (this binary is a child subreaper, so
 * whatever burstmeter leaves running becomes our child and is seen), and no
 * file beside the outcome file. What is found is removed, and the test fails.
 */
#include "runner.h"

/*
 * bm-spike 40 500 4: one thread, 40 ms of CPU every 500 ms, 4 times.
 * Truth: 160 ms of CPU over ~2 s; each spike covers at least three whole
 * 10 ms windows at one core (0.9 leaves room for an interrupt), and one
 * thread can never exceed one core. The process's own start and exit add
 * a few ms (integ_startup_cpu_s() each). Both meters count the same
 * se.sum_exec_runtime as cpu.stat, so they agree within 2 ms.
 */
static void check_spike(struct fx *f, bool hash)
{
	struct res *r;
	double wall, cpu;
	long long windows;
	int attempt;

	for (attempt = 0;; attempt++) {
		if (hash)
			r = run_bm(f, R_STD, "--meter-hash", "--", wl("bm-spike"), "40", "500", "4", NULL);
		else
			r = run_bm(f, R_STD, "--", wl("bm-spike"), "40", "500", "4", NULL);
		check_completed(f, r);
		wall = jnum(r->o, "wall_seconds");
		cpu = jnum(r->o, "totals.cpu_seconds");
		windows = jint(r->o, "totals.windows");
		assert_between(wall, 1.5, 10);
		assert_true(jnum(r->o, "average.cpu_cores") < 0.3);
		assert_between(cpu, 0.16, 0.16 + 2 * integ_startup_cpu_s());
		assert_between(cpu - jnum(r->o, "meter.cgroup_cpu_seconds"), -0.002, 0.002);
		assert_int_equal(hist_sum(r->o, "cpu_cores"), windows);
		assert_between((double)windows, wall / 0.010 - 3, wall / 0.010 + 3);
		/* each spike fills at least 3 windows; the quiet between them is most of the run */
		assert_between((double)hist_nonzero(r->o, "cpu_cores"), 12, windows / 2.0);
		assert_true(jnum(r->o, "peak.cpu_cores") <= 1.001);
		assert_int_equal(jint(r->o, "peak.pids"), 1);
		assert_int_equal(jint(r->o, "totals.forks"), 0);
		assert_int_equal(jint(r->o, "totals.net_tx_bytes"), 0);
		assert_clean(f);
		if (!retry_busy(attempt, "peak.cpu_cores", jnum(r->o, "peak.cpu_cores"), 0.9, 1.001))
			break;
	}
}

static void test_run_spike(void **state)
{
	check_spike(*state, false);
}

/* The hash meter map (kernels without cgroup storage) must give the same figures. */
static void test_run_spike_meter_hash(void **state)
{
	check_spike(*state, true);
}

/*
 * bm-threads 2 200: two threads released together, 200 ms of CPU each.
 * Truth: min(2, CPUs) cores busy for ~200 ms, 3 tasks (the main thread
 * waits in join); 400 ms of CPU in all, plus start-up.
 */
static void test_run_threads(void **state)
{
	struct fx *f = *state;
	double cores = ncpu < 2 ? (double)ncpu : 2.0;
	struct res *r;
	int attempt;

	for (attempt = 0;; attempt++) {
		r = run_bm(f, R_STD, "--", wl("bm-threads"), "2", "200", NULL);
		check_completed(f, r);
		assert_true(jnum(r->o, "peak.cpu_cores") <= cores + 0.001);
		assert_between(jnum(r->o, "totals.cpu_seconds"), 0.4, 0.4 * 1.25);
		assert_between(jnum(r->o, "totals.cpu_seconds") - jnum(r->o, "meter.cgroup_cpu_seconds"),
			       -0.002, 0.002);
		assert_int_equal(jint(r->o, "peak.pids"), 3);
		assert_clean(f);
		if (!retry_busy(attempt, "peak.cpu_cores", jnum(r->o, "peak.cpu_cores"), 0.9 * cores,
				cores + 0.001))
			break;
	}
}

/*
 * A CPU ceiling of one core on a node of more is one CPU at every instant,
 * not two for half of each quota period (docs/DESIGN.md, "CPU placement"):
 * bm-threads 4 300 (four threads, 300 ms of CPU each) under --cpu 1 never
 * has a 10 ms window over one core, where the quota alone gave ~2. Its tasks
 * are allowed one CPU, and a task that asks for all of them (taskset) still
 * gets that one only. With one CPU there is nothing to confine.
 */
static void test_run_cpu_ceiling_confines(void **state)
{
	struct fx *f = *state;
	char all[32], want[96], one[32];
	const char *cpus;
	struct res *r;

	r = run_bm(f, R_STD, "--cpu", "1", "--", wl("bm-threads"), "4", "300", NULL);
	check_completed(f, r);
	cpus = json_string_value(jget(r->o, "enforcement.cpus"));
	printf("# enforcement.cpus \"%s\", peak %.3f cores, %.3f CPU-s in %.2f s\n", cpus ? cpus : "",
	       jnum(r->o, "peak.cpu_cores"), jnum(r->o, "totals.cpu_seconds"), jnum(r->o, "wall_seconds"));
	if (ncpu < 2) {
		assert_null(cpus);
		assert_clean(f);
		return;
	}
	assert_non_null(cpus);
	/* "1 (cgroup v1 cpuset.cpus)": its CPU, kept (the next run frees this outcome) */
	snprintf(one, sizeof(one), "%.*s", (int)strcspn(cpus, " "), cpus);
	/*
	 * One CPU's windows, as the meter splits them at switches and ticks: 1.002
	 * here, 1.035 in the emulated 6.1 VM, and once 1.112 there (CI of
	 * 2026-12-07: its ticks come late on a slow host). The quota alone gives
	 * ~1.99, so 1.2 still tells one CPU from two.
	 */
	assert_true(jnum(r->o, "peak.cpu_cores") <= 1.2);
	assert_between(jnum(r->o, "totals.cpu_seconds"), 1.2, 1.2 * 1.25);
	assert_true(jnum(r->o, "wall_seconds") >= 1.15);
	assert_clean(f);
	/* a task of the effect cannot widen its CPUs: the cpuset bounds its affinity */
	snprintf(all, sizeof(all), "0-%ld", ncpu - 1);
	r = run_bm(f, R_STD, "--cpu", "1", "--", "taskset", "-c", all, "grep", "Cpus_allowed_list",
		   "/proc/self/status", NULL);
	check_completed(f, r);
	snprintf(want, sizeof(want), "Cpus_allowed_list:\t%s\n", one);
	assert_string_equal(r->out.p, want);
	assert_clean(f);
}

/*
 * bm-sleeper 300: nothing but exec, a 300 ms sleep and exit. Truth: the
 * CPU it uses is its start (exec, dynamic linking) and its exit, a few ms
 * in at most two windows each; every other window is exactly 0. (A bound on
 * peak.cpu_cores itself would have to allow the exec: at 10 ms windows a
 * 3 ms exec is 0.3 cores.) One task, no forks, no network, and on an idle
 * run queue only a wake-up's worth of waiting.
 */
static void test_run_sleeper(void **state)
{
	struct fx *f = *state;
	struct res *r;
	double cpu;
	int attempt;

	for (attempt = 0;; attempt++) {
		r = run_bm(f, R_STD, "--", wl("bm-sleeper"), "300", NULL);
		check_completed(f, r);
		cpu = jnum(r->o, "totals.cpu_seconds");
		assert_between(cpu, 0, integ_startup_cpu_s());
		assert_true(jnum(r->o, "peak.cpu_cores") * 0.010 <= cpu + 1e-9);
		assert_true(hist_nonzero(r->o, "cpu_cores") >= 1);
		assert_true(jint(r->o, "totals.windows") >= 30);
		assert_int_equal(jint(r->o, "peak.pids"), 1);
		assert_int_equal(jint(r->o, "totals.forks"), 0);
		assert_int_equal(jint(r->o, "totals.net_tx_bytes"), 0);
		assert_between(jnum(r->o, "peak.net_tx_bytes_per_s"), 0, 0);
		assert_clean(f);
		/* a start or an exit that is preempted spreads over more windows, and waits */
		/* start and exit each span at most two windows, or as many as their CPU fills */
		if (retry_busy(attempt, "windows with CPU", (double)hist_nonzero(r->o, "cpu_cores"), 1,
			       4 + 2 * floor(integ_startup_cpu_s() / 0.010) * (getenv("BM_VM") != NULL)) ||
		    /* the emulated 6.1 VM on a slow host: 6-9 ms over three runs (2026-12-07) */
		    retry_busy(attempt, "totals.runq_delay_seconds",
			       jnum(r->o, "totals.runq_delay_seconds"), 0, getenv("BM_VM") ? 0.015 : 0.005))
			continue;
		break;
	}
}

/* --window-ms 50: the windows are 50 ms, and there are wall / 50 ms of them (+0..2 edges). */
static void test_run_window_ms(void **state)
{
	struct fx *f = *state;
	struct res *r;
	double wall, n;

	r = run_bm(f, R_STD, "--window-ms", "50", "--", wl("bm-sleeper"), "300", NULL);
	assert_int_equal(r->status, 0);
	check_metered(f, r->o, 50);
	wall = jnum(r->o, "wall_seconds");
	n = (double)jint(r->o, "totals.windows");
	/* first_win = start / W and end_win = end / W: wall/W < n < wall/W + 2 */
	assert_between(n, wall / 0.050, wall / 0.050 + 2);
	/* a 300 ms sleep and the process's start and exit */
	assert_between(n, 6, (0.3 + 2 * integ_startup_cpu_s()) / 0.050 + 2);
	assert_clean(f);
}

/* ------------------------------------------------ ground truth: the others */

/*
 * bm-memtouch 300 30, five times: 300 MiB made resident and held 30 ms,
 * three windows at least. Truth: the peak is 300 MiB plus the process's
 * own few MiB, every run; 10 % above allows for that and nothing more.
 */
static void test_run_memtouch(void **state)
{
	struct fx *f = *state;
	struct res *r;
	int i;

	for (i = 0; i < 5; i++) {
		r = run_bm(f, R_STD, "--", wl("bm-memtouch"), "300", "30", NULL);
		check_completed(f, r);
		assert_between(jnum(r->o, "peak.memory_bytes") / MIB, 300, 330);
		/* it falls back before the exit: the last window holds only the process */
		assert_true(jnum(r->o, "average.memory_bytes") < 300 * MIB);
		assert_clean(f);
	}
}

/* bm-fanout 16 100: 16 children alive together for 100 ms. Truth: 17 tasks, 16 forks. */
static void test_run_fanout(void **state)
{
	struct fx *f = *state;
	struct res *r;

	r = run_bm(f, R_STD, "--", wl("bm-fanout"), "16", "100", NULL);
	check_completed(f, r);
	assert_int_equal(jint(r->o, "peak.pids"), 17);
	assert_int_equal(jint(r->o, "totals.forks"), 16);
	assert_clean(f);
}

/*
 * bm-netburst 33554432 150: exactly 32 MiB of payload through sendmsg() on
 * loopback, between two quiet 150 ms. Truth: 33554432 bytes, to the byte.
 * The burst lasts well under 60 ms while the effect lives over 300 ms, so
 * its best window carries at least 1/6 of the bytes at 5x+ the average rate.
 */
static void test_run_netburst(void **state)
{
	struct fx *f = *state;
	struct res *r;

	r = run_bm(f, R_STD, "--", wl("bm-netburst"), "33554432", "150", NULL);
	check_completed(f, r);
	assert_int_equal(jint(r->o, "totals.net_tx_bytes"), 33554432);
	assert_true(jnum(r->o, "average.net_tx_bytes_per_s") > 0);
	if (!(jnum(r->o, "peak.net_tx_bytes_per_s") >= 5 * jnum(r->o, "average.net_tx_bytes_per_s")))
		fail_msg("peak %.0f B/s is not 5x the average %.0f B/s",
			 jnum(r->o, "peak.net_tx_bytes_per_s"), jnum(r->o, "average.net_tx_bytes_per_s"));
	/* the receiver is the one fork; the sender is the only one that sends */
	assert_int_equal(jint(r->o, "totals.forks"), 1);
	assert_int_equal(jint(r->o, "peak.pids"), 2);
	assert_clean(f);
}

/* ------------------------------------------------ exit statuses and reasons */

static void test_run_exit_failed(void **state)
{
	struct fx *f = *state;
	struct res *r = run_bm(f, R_STD, "--", "false", NULL);

	assert_int_equal(r->status, 1);
	assert_non_null(r->o);
	assert_string_equal(jstr(r->o, "termination.reason"), "failed");
	assert_int_equal(jint(r->o, "exit.code"), 1);
	assert_true(json_is_null(jget(r->o, "exit.signal")));
	check_metered(f, r->o, 10);
	assert_clean(f);
}

static void test_run_exit_signaled(void **state)
{
	struct fx *f = *state;
	struct res *r = run_bm(f, R_STD, "--", "sh", "-c", "kill -9 $$", NULL);

	assert_int_equal(r->status, 137);
	assert_non_null(r->o);
	assert_string_equal(jstr(r->o, "termination.reason"), "signaled");
	assert_int_equal(jint(r->o, "exit.signal"), 9);
	assert_true(json_is_null(jget(r->o, "exit.code")));
	assert_clean(f);
}

/* Not found: 127, and since nothing can run, no cgroup is made at all (not even briefly). */
static void test_run_exit_not_found(void **state)
{
	struct fx *f = *state;
	struct res *r;

	cgroups_created(f);
	r = run_bm(f, R_STD, "--", "/nonexistent", NULL);
	assert_int_equal(r->status, 127);
	assert_int_equal(cgroups_created(f), 0);
	assert_non_null(r->o);
	assert_string_equal(jstr(r->o, "termination.reason"), "failed");
	assert_int_equal(jint(r->o, "exit.code"), 127);
	assert_true(json_is_null(jget(r->o, "cgroup")));
	assert_false(json_is_true(jget(r->o, "retry.eligible")));
	assert_clean(f);
}

static void test_run_exit_not_executable(void **state)
{
	struct fx *f = *state;
	char path[700];
	struct res *r;
	int fd;

	snprintf(f->own, sizeof(f->own), "not-executable");
	snprintf(path, sizeof(path), "%s/%s", f->dir, f->own);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_true(write(fd, "#!/bin/sh\nexit 0\n", 17) == 17);
	close(fd);
	cgroups_created(f);
	r = run_bm(f, R_STD, "--", path, NULL);
	assert_int_equal(r->status, 126);
	assert_int_equal(cgroups_created(f), 0);
	assert_non_null(r->o);
	assert_int_equal(jint(r->o, "exit.code"), 126);
	assert_clean(f);
}

/*
 * --timeout 1 on sleep 10: SIGTERM at 1 s ends sleep at once, so the effect
 * lasts 1 s and a little; exit 124, reason deadline. The 1.5 s bound is on
 * the effect (wall_seconds); the process also loads the BPF first.
 */
static void test_run_deadline(void **state)
{
	struct fx *f = *state;
	struct res *r = run_bm(f, R_STD, "--timeout", "1", "--", "sleep", "10", NULL);

	assert_int_equal(r->status, 124);
	assert_non_null(r->o);
	assert_string_equal(jstr(r->o, "termination.reason"), "deadline");
	assert_between(jnum(r->o, "wall_seconds"), 1.0, 1.5);
	assert_between(jnum(r->o, "limits.timeout_seconds"), 1.0, 1.0);
	/* sleep 10 did not run on (the rest is the meter's load: seconds under emulation) */
	assert_true(r->elapsed_s < 10);
	assert_false(json_is_true(jget(r->o, "retry.eligible")));
	check_metered(f, r->o, 10);
	assert_clean(f);
}

/* Wait until the effect's cgroup holds a process: signals are forwarded from then on. */
static void wait_effect_running(struct fx *f)
{
	char path[PATH_MAX + 128], buf[64];
	uint64_t deadline = now_ns() + 10000000000ULL;
	ssize_t n = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/burstmeter.%s@%s/cgroup.procs", cg_parent, token, f->id);
	while (now_ns() < deadline) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		n = fd >= 0 ? read(fd, buf, sizeof(buf)) : 0;
		if (fd >= 0)
			close(fd);
		if (n > 0)
			return;
		usleep(10000);
	}
	fail_msg("the effect never started in %s", path);
}

/* SIGTERM to burstmeter goes to the command: sleep dies of it, 143, reason cancelled. */
static void test_run_sigterm_cancels(void **state)
{
	struct fx *f = *state;
	struct proc p = start_bm(f, R_STD, "--", "sleep", "10", NULL);
	struct res *r;

	wait_effect_running(f);
	usleep(100000);
	assert_int_equal(kill(p.pid, SIGTERM), 0);
	r = finish_bm(f, &p);
	assert_int_equal(r->status, 143);
	/* sleep 10 ended at the signal, not at its end */
	assert_true(r->elapsed_s < 10);
	assert_non_null(r->o);
	assert_true(jnum(r->o, "wall_seconds") < 3);
	assert_string_equal(jstr(r->o, "termination.reason"), "cancelled");
	assert_int_equal(jint(r->o, "exit.signal"), 15);
	assert_clean(f);
}

/*
 * The command exits 0 but leaves a process running in its cgroup (it prints
 * its pid): burstmeter must not wait for it, must kill it, must say so, and
 * must still meter the effect, whose tasks then end after the command did.
 */
static void check_leftover(struct fx *f, const char *window_ms, const char *script, int forks)
{
	struct res *r;
	long pid;

	r = run_bm(f, R_STD, "--window-ms", window_ms, "--", "sh", "-c", script, NULL);
	pid = r->out.p ? strtol(r->out.p, NULL, 10) : 0;
	assert_true(pid > 1);
	sweep_processes();	/* reap it if it came to us as a zombie */
	if (!kill((pid_t)pid, 0))
		fail_msg("the leftover (pid %ld) is still there", pid);
	assert_int_equal(r->status, 0);
	assert_true(r->elapsed_s < 5);
	assert_non_null(r->o);
	assert_between(jnum(r->o, "wall_seconds"), 0, 2);
	assert_true(jint(r->o, "meter.leftover_tasks_killed") >= 1);
	if (strcmp(jstr(r->o, "termination.reason"), "completed"))
		fail_msg("--window-ms %s: termination.reason is %s, stderr: %s", window_ms,
			 jstr(r->o, "termination.reason"), r->err.p ? r->err.p : "");
	check_metered(f, r->o, strtod(window_ms, NULL));
	assert_true(jint(r->o, "totals.windows") >= 1);
	/* sh forked each command of the script, and all were alive together */
	assert_int_equal(jint(r->o, "totals.forks"), forks);
	assert_int_equal(jint(r->o, "peak.pids"), forks + 1);
	assert_clean(f);
}

/* sleep 100 left behind: the command exits at once, and so must burstmeter. */
static void test_run_leftover_killed(void **state)
{
	check_leftover(*state, "10", "sleep 100 >/dev/null 2>&1 & echo $!; exit 0", 1);
}

/*
 * A leftover with 64 MiB resident: killing it takes its teardown (the
 * unmapping, each step an rss_stat event) past the command's exit, into
 * later windows; with 1 ms windows, always. Its meter must still be read
 * (burstmeter 864bb25 failed here: "failed to read the meter", reason
 * meter_error, for every effect whose leftovers died in a later window).
 * Two forks: the leftover and sleep.
 */
static void test_run_leftover_killed_late(void **state)
{
	char script[PATH_MAX + 128];

	snprintf(script, sizeof(script), "%s 64 100000 >/dev/null & echo $!; sleep 0.3; exit 0",
		 wl("bm-memtouch"));
	check_leftover(*state, "1", script, 2);
}

/* ------------------------------------------------------------- bad input */

struct bad {
	const char *flag;	/* what the one line on stderr must name */
	const char *args[4];	/* options before "-- true" (or instead of it) */
	int std;		/* our standard options around them, R_NOCMD */
};

static char intent_5000[5001];
static char name_65[66];

static const struct bad bad_inputs[] = {
	{ "--id", { "--id", "" }, R_TENANT | R_OUTCOME },
	{ "--id", { "--id", "../x" }, R_TENANT | R_OUTCOME },
	{ "--id", { "--id", ".a" }, R_TENANT | R_OUTCOME },
	{ "--id", { "--id", name_65 }, R_TENANT | R_OUTCOME },
	{ "--id", { "--id", "a/b" }, R_TENANT | R_OUTCOME },
	{ "--tenant", { "--tenant", "" }, R_ID | R_OUTCOME },
	{ "--tenant", { "--tenant", "../x" }, R_ID | R_OUTCOME },
	{ "--tenant", { "--tenant", ".." }, R_ID | R_OUTCOME },
	{ "--tenant", { "--tenant", "a b" }, R_ID | R_OUTCOME },
	{ "--tenant", { "--tenant", name_65 }, R_ID | R_OUTCOME },
	{ "--memory", { "--memory", "0" }, R_STD },
	{ "--memory", { "--memory", "-1" }, R_STD },
	{ "--memory", { "--memory", "1P" }, R_STD },
	{ "--memory", { "--memory", "abc" }, R_STD },
	{ "--pids", { "--pids", "0" }, R_STD },
	{ "--pids", { "--pids", "99999999" }, R_STD },
	{ "--cpu", { "--cpu", "0" }, R_STD },
	{ "--cpu", { "--cpu", "abc" }, R_STD },
	{ "--timeout", { "--timeout", "0" }, R_STD },
	{ "--timeout", { "--timeout", "99999999" }, R_STD },
	{ "--timeout", { "--timeout", "abc" }, R_STD },
	{ "--window-ms", { "--window-ms", "0" }, R_STD },
	{ "--window-ms", { "--window-ms", "2000" }, R_STD },
	{ "--window-ms", { "--window-ms", "5x" }, R_STD },
	{ "--intent", { "--intent", intent_5000 }, R_STD },
	{ "--outcome", { "--outcome", "/nonexistent/dir/o.json" }, R_TENANT | R_ID },
	{ "--bogus", { "--bogus" }, R_STD },
	{ "command", { NULL }, R_STD | R_NOCMD },
	{ "command", { "--" }, R_STD | R_NOCMD },
};

static int count_lines(const char *s)
{
	int n = 0;

	for (; s && *s; s++)
		n += *s == '\n';
	return n;
}

/*
 * Every bad value: exit 125 before anything exists, with exactly one line
 * on stderr that names the flag. No cgroup is created even for a moment
 * (inotify on the parent sees every mkdir), and no outcome is written.
 */
static void test_run_bad_input(void **state)
{
	struct fx *f = *state;
	unsigned int i;

	memset(intent_5000, 'i', sizeof(intent_5000) - 1);
	memset(name_65, 'n', sizeof(name_65) - 1);
	cgroups_created(f);
	for (i = 0; i < sizeof(bad_inputs) / sizeof(bad_inputs[0]); i++) {
		const struct bad *b = &bad_inputs[i];
		const char *a0 = b->args[0], *a1 = b->args[1];
		struct res *r;

		if (b->std & R_NOCMD)
			r = run_bm(f, b->std & R_STD, a0, NULL);
		else if (!a1)
			r = run_bm(f, b->std & R_STD, a0, "--", "true", NULL);
		else
			r = run_bm(f, b->std & R_STD, a0, a1, "--", "true", NULL);
		if (r->status != 125 || count_lines(r->err.p) != 1 || !strstr(r->err.p, b->flag) ||
		    r->out.len || r->o)
			fail_msg("%s '%.20s': exit %d (want 125), stdout %zu bytes, outcome %s, "
				 "stderr (want one line naming %s):\n%s",
				 a0 ? a0 : "(none)", a1 ? a1 : "", r->status, r->out.len,
				 r->o ? "written" : "none", b->flag, r->err.p ? r->err.p : "");
		if (cgroups_created(f))
			fail_msg("%s '%.20s' created a cgroup", a0 ? a0 : "(none)", a1 ? a1 : "");
		assert_clean(f);
	}
}

/* ------------------------------------------------------------ output modes */

/* --outcome -: the outcome is the one line on stdout (the command writes nothing). */
static void test_run_outcome_stdout(void **state)
{
	struct fx *f = *state;
	json_error_t jerr;
	struct res *r;
	json_t *o;

	r = run_bm(f, R_TENANT | R_ID | R_QUIET, "--outcome", "-", "--", "true", NULL);
	assert_int_equal(r->status, 0);
	assert_null(r->o);
	assert_int_equal(count_lines(r->out.p), 1);
	o = json_loads(r->out.p, JSON_REJECT_DUPLICATES, &jerr);
	if (!o)
		fail_msg("stdout is not JSON: %s\n%s", jerr.text, r->out.p);
	r->o = o;	/* freed with the result */
	assert_string_equal(jstr(o, "termination.reason"), "completed");
	check_metered(f, o, 10);
	assert_clean(f);
}

/* --json: the last line of stderr is the outcome, the same as the one in the file. */
static void test_run_json_stderr(void **state)
{
	struct fx *f = *state;
	json_error_t jerr;
	struct res *r;
	char *last;
	json_t *j;
	bool same;

	r = run_bm(f, R_TENANT | R_ID | R_OUTCOME, "--json", "--", "true", NULL);
	assert_int_equal(r->status, 0);
	assert_non_null(r->o);
	assert_true(r->err.len > 1 && r->err.p[r->err.len - 1] == '\n');
	r->err.p[r->err.len - 1] = '\0';
	last = strrchr(r->err.p, '\n');
	last = last ? last + 1 : r->err.p;
	j = json_loads(last, JSON_REJECT_DUPLICATES, &jerr);
	if (!j)
		fail_msg("the last stderr line is not JSON: %s\n%s", jerr.text, last);
	same = json_equal(j, r->o);
	json_decref(j);
	assert_true(same);
	assert_clean(f);
}

/* ------------------------------------------------------------------- main */

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_run_bad_input, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_outcome_stdout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_json_stderr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_exit_failed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_exit_signaled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_exit_not_found, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_exit_not_executable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_sigterm_cancels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_leftover_killed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_leftover_killed_late, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_spike, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_spike_meter_hash, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_cpu_ceiling_confines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_sleeper, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_window_ms, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_memtouch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_fanout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_netburst, setup, teardown),
	};
	size_t n;
	int rc = runner_init("test_run");

	if (rc)
		return rc;
	/* cmocka_run_group_tests_name() would take the whole array: pass what the filter left */
	n = integ_filter(tests, sizeof(tests) / sizeof(tests[0]));
	return _cmocka_run_group_tests("run", tests, n, NULL, NULL);
}
