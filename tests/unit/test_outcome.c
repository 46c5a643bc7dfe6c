// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/effect/outcome.h: the outcome is a contract (docs/DESIGN.md, schema
 * burstmeter.outcome/v1) that harnesses parse, so the JSON is checked the
 * way they read it: dumped, parsed back, every field at its type and value.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "effect/expect.h"
#include "effect/outcome.h"

#define MIB (1024ULL * 1024)
#define W_NS 10000000ULL

static char *argv_pytest[] = { "pytest", "-x", NULL };

/* A wait status the kernel really produced: a child that exits with code or dies of sig. */
static int wait_status_of(int code, int sig)
{
	int status = 0;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		if (sig) {
			signal(sig, SIG_DFL);
			raise(sig);
		}
		_exit(code);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

struct classify_case {
	int code, sig;		/* how the child ends */
	bool cancelled;
	int exec_errno;
	enum bm_reason reason;
	int exit_code, exit_signal;	/* -1: no exit code, the JSON's null */
	const char *by;
};

static void test_classify_every_ending(void **state)
{
	static const struct classify_case c[] = {
		{ 0, 0, false, 0, BM_REASON_COMPLETED, 0, 0, "process" },
		{ 3, 0, false, 0, BM_REASON_FAILED, 3, 0, "process" },
		{ 0, SIGKILL, false, 0, BM_REASON_SIGNALED, -1, SIGKILL, "process" },
		/* the cancel signal killed it, or it caught it and exited as a shell does */
		{ 0, SIGTERM, true, 0, BM_REASON_CANCELLED, -1, SIGTERM, "signal" },
		{ 128 + SIGTERM, 0, true, 0, BM_REASON_CANCELLED, 128 + SIGTERM, 0, "signal" },
		/* never started: the shell's 127 not found, 126 not executable */
		{ 0, 0, false, ENOENT, BM_REASON_FAILED, 127, 0, "burstmeter" },
		{ 0, 0, false, EACCES, BM_REASON_FAILED, 126, 0, "burstmeter" },
	};
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct bm_outcome o = { .exit_code = 99, .exit_signal = 99 };
		int status = c[i].exec_errno ? 0 : wait_status_of(c[i].code, c[i].sig);

		bm_outcome_classify(&o, status, c[i].cancelled, c[i].exec_errno);
		if (o.reason != c[i].reason || o.exit_code != c[i].exit_code ||
		    o.exit_signal != c[i].exit_signal || !o.by || strcmp(o.by, c[i].by))
			fail_msg("case %zu: reason %s code %d signal %d by %s, want %s %d %d %s",
				 i, bm_reason_name(o.reason), o.exit_code, o.exit_signal,
				 o.by ? o.by : "(null)", bm_reason_name(c[i].reason),
				 c[i].exit_code, c[i].exit_signal, c[i].by);
	}
}

/* Does w appear in s as a whole (no digit or '.' beside it: "45" is not in "45.2")? */
static bool has_word(const char *s, const char *w)
{
	size_t len = strlen(w);
	const char *p;

	for (p = strstr(s, w); p; p = strstr(p + 1, w)) {
		bool before = p > s && ((p[-1] >= '0' && p[-1] <= '9') || p[-1] == '.');
		bool after = (p[len] >= '0' && p[len] <= '9') || p[len] == '.';

		if (!before && !after)
			return true;
	}
	return false;
}

static void test_retry_eligibility_for_every_reason(void **state)
{
	/* false exactly where the same call would hit the same wall again */
	static const bool eligible[BM_REASON__MAX] = {
		[BM_REASON_COMPLETED] = true, [BM_REASON_FAILED] = true,
		[BM_REASON_SIGNALED] = true, [BM_REASON_DEADLINE] = false,
		[BM_REASON_MEMORY_CEILING] = false, [BM_REASON_PIDS_CEILING] = false,
		[BM_REASON_CPU_CEILING] = false, [BM_REASON_NET_CEILING] = false,
		[BM_REASON_CANCELLED] = true, [BM_REASON_METER_ERROR] = true,
		[BM_REASON_STORAGE_CEILING] = false, [BM_REASON_IO_CEILING] = false,
	};
	struct bm_summary s = { .window_ns = W_NS };
	int r;

	for (r = 0; r < BM_REASON__MAX; r++) {
		struct bm_outcome o = {
			.argv = argv_pytest, .sum = &s, .exit_code = r == BM_REASON_FAILED ? 1 : 0,
			.reason = r, .retry_eligible = !eligible[r], .retry_after_ms = 77,
			.limits = { .memory_bytes = 256 * MIB, .pids = 64,
				    .timeout_ns = 45000000000ULL },
		};

		strcpy(o.advice, "stale advice from an earlier call");
		bm_outcome_retry(&o);
		if (o.retry_eligible != eligible[r])
			fail_msg("%s: eligible %d, want %d", bm_reason_name(r), o.retry_eligible,
				 eligible[r]);
		/* whoever cannot retry unchanged is told what to change */
		if (!eligible[r] && !o.advice[0])
			fail_msg("%s: not eligible and no advice", bm_reason_name(r));
		if (r == BM_REASON_METER_ERROR) {
			assert_true(o.retry_after_ms > 0);
			assert_true(o.advice[0] != '\0');
		} else if (eligible[r]) {
			assert_int_equal(o.retry_after_ms, 0);
			assert_string_equal(o.advice, "");
		}
	}
}

struct advice_case {
	enum bm_reason reason;
	int exec_errno;
	char *cmd;
	uint64_t mem_peak, mem_limit, pids, timeout_ns, wall_ns;
	const char *want[3];	/* what the advice must name */
};

static void test_retry_advice_names_what_to_change(void **state)
{
	static const struct advice_case c[] = {
		{ BM_REASON_MEMORY_CEILING, 0, "make", 300 * MIB, 256 * MIB, 0, 0, 0,
		  { "300", "256", "MiB" } },
		{ BM_REASON_DEADLINE, 0, "make", 0, 0, 0, 45000000000ULL, 45250000000ULL,
		  { "45", "--timeout" } },
		{ BM_REASON_PIDS_CEILING, 0, "make", 0, 0, 64, 0, 0, { "64", "--pids" } },
		{ BM_REASON_FAILED, ENOENT, "pytset", 0, 0, 0, 0, 0, { "pytset", "not found" } },
		{ BM_REASON_FAILED, EACCES, "./build.sh", 0, 0, 0, 0, 0, { "./build.sh" } },
	};
	size_t i, k;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char *argv[] = { c[i].cmd, "-x", NULL };
		struct bm_summary s = { .window_ns = W_NS, .peak[BM_DIM_MEM] = c[i].mem_peak };
		struct bm_outcome o = {
			.argv = argv, .sum = &s, .reason = c[i].reason, .wall_ns = c[i].wall_ns,
			.limits = { 0, c[i].mem_limit, c[i].pids, c[i].timeout_ns },
		};

		if (c[i].exec_errno)
			bm_outcome_classify(&o, 0, false, c[i].exec_errno);
		bm_outcome_retry(&o);
		assert_false(o.retry_eligible);
		for (k = 0; k < 3 && c[i].want[k]; k++)
			if (!has_word(o.advice, c[i].want[k]))
				fail_msg("%s: advice '%s' does not name '%s'",
					 bm_reason_name(c[i].reason), o.advice, c[i].want[k]);
	}
}

/* A launch refused before exec (its cwd, its identity): failed 125, said why, not retried as is. */
static void test_retry_launch_refused(void **state)
{
	char *argv[] = { "pwd", NULL };
	struct bm_outcome o = { .argv = argv, .reason = BM_REASON_FAILED, .exit_code = 125,
				.start_errno = EACCES };

	(void)state;
	bm_outcome_retry(&o);
	assert_false(o.retry_eligible);
	assert_non_null(strstr(o.advice, strerror(EACCES)));
	assert_non_null(strstr(o.advice, "cwd"));
	/* 125 from the command itself is its own failure: nothing said for it */
	o.start_errno = 0;
	bm_outcome_retry(&o);
	assert_true(o.retry_eligible);
	assert_string_equal(o.advice, "");
}

static void test_reason_names_match_the_contract(void **state)
{
	static const char *const want[BM_REASON__MAX] = {
		"completed", "failed", "signaled", "deadline", "memory_ceiling", "pids_ceiling",
		"cpu_ceiling", "net_ceiling", "cancelled", "meter_error", "storage_ceiling", "io_ceiling",
	};
	int r;

	for (r = 0; r < BM_REASON__MAX; r++)
		assert_string_equal(bm_reason_name(r), want[r]);
}

/*
 * A 12.41 s effect in 10 ms windows: 1241 windows. Histograms hold the
 * windows at distinct buckets so a dropped bucket shows in the sums.
 */
static void full_outcome(struct bm_outcome *o, struct bm_summary *s)
{
	*s = (struct bm_summary){
		.window_ns = W_NS, .windows = 1241,
		/* bucket k holds [2^(k-1), 2^k): 19.7 ms is in 25, 100 MiB in 27, 384 MiB in 29 */
		.hist = { [BM_DIM_CPU] = { [0] = 1000, [25] = 241 },
			  [BM_DIM_MEM] = { [27] = 1240, [29] = 1 }, [BM_DIM_PIDS] = { [5] = 1241 },
			  [BM_DIM_NET] = { [0] = 1240, [20] = 1 },
			  [BM_DIM_RUNQ] = { [0] = 1240, [22] = 1 },
			  /* 8 MiB read in one window (bucket 24), 64 MiB written over 32 (22) */
			  [BM_DIM_IO_READ] = { [0] = 1240, [24] = 1 },
			  [BM_DIM_IO_WRITE] = { [0] = 1209, [22] = 32 },
			  [BM_DIM_IO_OPS] = { [0] = 1209, [5] = 32 },
			  [BM_DIM_DIRTY] = { [0] = 1241 } },
		.peak = { [BM_DIM_CPU] = 19700000, [BM_DIM_MEM] = 384 * MIB, [BM_DIM_PIDS] = 23,
			  [BM_DIM_NET] = 734003, [BM_DIM_RUNQ] = 4100000,
			  [BM_DIM_IO_READ] = 8 * MIB, [BM_DIM_IO_WRITE] = 2 * MIB,
			  [BM_DIM_IO_OPS] = 16 },
		.total = { [BM_DIM_IO_READ] = 8 * MIB, [BM_DIM_IO_WRITE] = 64 * MIB,
			   [BM_DIM_IO_OPS] = 512 },
		.wsum = { [BM_DIM_MEM] = 1240 * 100 * MIB + 384 * MIB, [BM_DIM_PIDS] = 1241 * 20 },
		.cpu_ns = 3850000000ULL, .net_bytes = 9437184, .runq_ns = 80000000, .forks = 22,
	};
	*o = (struct bm_outcome){
		.id = "tc-42", .tenant = "acme", .intent = "run the test suite",
		.argv = argv_pytest,
		.cgroup = "/sys/fs/cgroup/unified/burstmeter/tc-42",
		.started_wall_ns = 1000000000123456789ULL,	/* 2001-09-09T01:46:40.123Z */
		.wall_ns = 12410000000ULL,
		.limits = { 2000, 512 * MIB, 64, 600000000000ULL }, .sum = s,
		.actions = { { 3120.0, "freeze", "memory_ceiling", 402653184.0, 402653184.0 } },
		.n_actions = 1, .frozen_s = 0.21, .exit_code = 0, .reason = BM_REASON_COMPLETED,
		.by = "process", .retry_eligible = true, .stats = { [BM_STAT_RB_DROPS] = 3 },
		.net_source = "sock_send_length", .psi_cpu_us = 1500, .psi_mem_us = -1,
		.psi_io_us = -1,
	};
}

/* Dump and parse back: what a harness sees. */
static json_t *round_trip(const struct bm_outcome *o)
{
	json_error_t jerr;
	json_t *j = bm_outcome_json(o), *back;
	char *text;

	assert_non_null(j);
	text = json_dumps(j, JSON_COMPACT);
	assert_non_null(text);
	back = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (!back)
		fail_msg("outcome does not parse back: %s: %s", jerr.text, text);
	free(text);
	json_decref(j);
	return back;
}

/* The value at a dotted path ("limits.cpu_cores"); fails the test if absent. */
static json_t *at(json_t *root, const char *path)
{
	char buf[128], *key, *save = NULL;
	json_t *v = root;

	snprintf(buf, sizeof(buf), "%s", path);
	for (key = strtok_r(buf, ".", &save); key; key = strtok_r(NULL, ".", &save)) {
		v = json_is_object(v) ? json_object_get(v, key) : NULL;
		if (!v)
			fail_msg("outcome has no %s", path);
	}
	return v;
}

static void expect_num(json_t *root, const char *path, double want)
{
	json_t *v = at(root, path);

	if (!json_is_number(v) || json_number_value(v) < want - 1e-9 * (want > 1 ? want : 1) ||
	    json_number_value(v) > want + 1e-9 * (want > 1 ? want : 1))
		fail_msg("%s: want the number %.12g", path, want);
}

static void expect_int(json_t *root, const char *path, json_int_t want)
{
	json_t *v = at(root, path);

	if (!json_is_integer(v) || json_integer_value(v) != want)
		fail_msg("%s: want the integer %lld", path, (long long)want);
}

static void expect_str(json_t *root, const char *path, const char *want)
{
	json_t *v = at(root, path);

	if (!json_is_string(v) || strcmp(json_string_value(v), want))
		fail_msg("%s: want the string '%s'", path, want);
}

static void expect_null(json_t *root, const char *path)
{
	if (!json_is_null(at(root, path)))
		fail_msg("%s: want null", path);
}

static void test_json_identity_and_limits(void **state)
{
	struct bm_summary s;
	struct bm_outcome o;
	json_t *j, *cmd;

	full_outcome(&o, &s);
	j = round_trip(&o);
	expect_str(j, "schema", "burstmeter.outcome/v1");
	expect_str(j, "id", "tc-42");
	expect_str(j, "tenant", "acme");
	expect_str(j, "intent", "run the test suite");
	cmd = at(j, "command");
	assert_true(json_is_array(cmd));
	assert_int_equal(json_array_size(cmd), 2);
	assert_string_equal(json_string_value(json_array_get(cmd, 0)), "pytest");
	assert_string_equal(json_string_value(json_array_get(cmd, 1)), "-x");
	expect_str(j, "cgroup", "/sys/fs/cgroup/unified/burstmeter/tc-42");
	/* ISO-8601, UTC, milliseconds: 10^9 s after the epoch plus 123.456789 ms */
	expect_str(j, "started_at", "2001-09-09T01:46:40.123Z");
	expect_num(j, "wall_seconds", 12.41);
	expect_num(j, "window_ms", 10);
	expect_num(j, "limits.cpu_cores", 2);
	expect_int(j, "limits.memory_bytes", 536870912);
	expect_int(j, "limits.pids", 64);
	expect_num(j, "limits.timeout_seconds", 600);
	json_decref(j);

	/* no ceiling is null, not 0 (0 would read as "nothing allowed") */
	o.limits = (struct bm_limits){ 0 };
	o.cgroup = NULL;
	j = round_trip(&o);
	expect_null(j, "limits.cpu_cores");
	expect_null(j, "limits.memory_bytes");
	expect_null(j, "limits.pids");
	expect_null(j, "limits.timeout_seconds");
	expect_null(j, "cgroup");
	json_decref(j);
}

static void test_json_peaks_averages_totals(void **state)
{
	struct bm_summary s;
	struct bm_outcome o;
	json_t *j;

	full_outcome(&o, &s);
	j = round_trip(&o);
	expect_num(j, "peak.cpu_cores", 19700000.0 / W_NS);
	expect_int(j, "peak.memory_bytes", 384 * MIB);
	expect_int(j, "peak.pids", 23);
	expect_num(j, "peak.net_tx_bytes_per_s", 734003.0 * 1e9 / W_NS);
	expect_num(j, "peak.runq_delay_ms", 4.1);
	expect_num(j, "average.cpu_cores", 3.85 / 12.41);
	expect_num(j, "average.memory_bytes", (double)((1240 * 100 * MIB + 384 * MIB) / 1241));
	expect_num(j, "totals.cpu_seconds", 3.85);
	expect_int(j, "totals.forks", 22);
	expect_int(j, "totals.net_tx_bytes", 9437184);
	expect_num(j, "totals.runq_delay_seconds", 0.08);
	expect_num(j, "totals.mem_stall_seconds", 0);
	expect_int(j, "totals.windows", 1241);
	json_decref(j);
}

static void test_json_histograms_hold_every_window(void **state)
{
	struct bm_summary s;
	struct bm_outcome o;
	json_t *j, *h, *le, *count;
	int d;
	size_t k;

	full_outcome(&o, &s);
	j = round_trip(&o);
	h = at(j, "histograms");
	assert_int_equal(json_object_size(h), BM_DIM__MAX);
	for (d = 0; d < BM_DIM__MAX; d++) {
		json_int_t sum = 0;

		le = json_object_get(json_object_get(h, bm_window_dim_name(d)), "le");
		count = json_object_get(json_object_get(h, bm_window_dim_name(d)), "count");
		assert_true(json_is_array(le));
		assert_true(json_is_array(count));
		assert_int_equal(json_array_size(le), json_array_size(count));
		for (k = 0; k < json_array_size(count); k++) {
			assert_true(json_is_integer(json_array_get(count, k)));
			assert_true(json_is_number(json_array_get(le, k)));
			assert_int_equal(json_integer_value(json_array_get(count, k)),
					 s.hist[d][k]);
			/* bounds rise: a harness bins with them */
			if (k)
				assert_true(json_number_value(json_array_get(le, k)) >
					    json_number_value(json_array_get(le, k - 1)));
			sum += json_integer_value(json_array_get(count, k));
		}
		if (sum != 1241)
			fail_msg("histograms.%s counts %lld windows, want 1241",
				 bm_window_dim_name(d), (long long)sum);
	}
	/*
	 * The upper bound of bucket k is 2^k in raw units, shown in the
	 * dimension's unit; CPU is bucketed as cores x 2^BM_CPU_HIST_SHIFT.
	 */
	le = at(j, "histograms.memory_bytes.le");
	assert_int_equal(json_integer_value(json_array_get(le, 29)), 1LL << 29);
	le = at(j, "histograms.cpu_cores.le");
	assert_float_equal(json_number_value(json_array_get(le, 25)),
			   (double)(1 << 25) / (1 << BM_CPU_HIST_SHIFT), 1e-12);
	json_decref(j);
}

static void test_json_actions_exit_termination_retry_meter(void **state)
{
	struct bm_summary s;
	struct bm_outcome o;
	json_t *j, *a;

	full_outcome(&o, &s);
	j = round_trip(&o);
	a = at(j, "actions");
	assert_true(json_is_array(a));
	assert_int_equal(json_array_size(a), 1);
	a = json_array_get(a, 0);
	expect_num(a, "at_ms", 3120.0);
	expect_str(a, "action", "freeze");
	expect_str(a, "reason", "memory_ceiling");
	expect_num(a, "observed", 402653184.0);
	expect_num(a, "threshold", 402653184.0);
	expect_num(j, "throttled_seconds", 0);
	expect_num(j, "frozen_seconds", 0.21);
	expect_int(j, "exit.code", 0);
	expect_null(j, "exit.signal");
	expect_str(j, "termination.reason", "completed");
	expect_str(j, "termination.by", "process");
	assert_true(json_is_true(at(j, "retry.eligible")));
	expect_int(j, "retry.after_ms", 0);
	expect_str(j, "retry.advice", "");
	expect_int(j, "meter.lost_records", 3);
	expect_str(j, "meter.net_source", "sock_send_length");
	expect_int(j, "meter.psi_cpu_some_us", 1500);
	expect_null(j, "meter.psi_memory_some_us");
	json_decref(j);

	/* killed by a signal: no exit code, the signal number instead */
	o.exit_code = -1;
	o.exit_signal = SIGKILL;
	o.reason = BM_REASON_SIGNALED;
	j = round_trip(&o);
	expect_null(j, "exit.code");
	expect_int(j, "exit.signal", SIGKILL);
	expect_str(j, "termination.reason", "signaled");
	json_decref(j);
}

/* The I/O part: limits and mechanisms, totals, storage, the OOM victims, attribution. */
static void test_json_io_storage_oom(void **state)
{
	struct bm_summary s;
	struct bm_outcome o;
	json_t *j, *v;

	full_outcome(&o, &s);
	s.io_via[BM_IO_VIA_BLKCG] = 500;
	s.io_via[BM_IO_VIA_TASK] = 12;
	o.limits.io_write_bps = 20 * MIB;
	o.limits.storage_bytes = 16 * MIB;
	o.io_mech[BM_IO_CEIL_WRITE_BPS] = "cgroup v2 io.max";
	o.storage_mech = "tmpfs size (ENOSPC) + meter: storage_ceiling when full";
	o.storage_where = "/tmp";
	o.storage_peak_bytes = 16 * MIB;
	o.io_attribution = "blkcg";
	o.oom_victims = 2;
	o.n_oom = 1;
	o.oom[0] = (struct bm_oom_victim){ .at_ms = 812.5, .pid = 4242, .oom_score_adj = 200,
					   .comm = "python3", .rss_bytes = 60 * MIB,
					   .anon_bytes = 58 * MIB, .total_vm_bytes = 300 * MIB };
	o.oom_limit = "memory_ceiling";
	o.mem_events[BM_MEMEV_OOM] = 1;
	o.mem_events[BM_MEMEV_OOM_KILL] = 2;
	o.mem_events[BM_MEMEV_HIGH] = -1;
	o.mem_events[BM_MEMEV_MAX] = 37;
	o.reason = BM_REASON_STORAGE_CEILING;
	bm_outcome_retry(&o);
	j = round_trip(&o);
	expect_int(j, "limits.io_write_bps", 20 * MIB);
	expect_null(j, "limits.io_read_bps");
	expect_null(j, "limits.io_iops");
	expect_int(j, "limits.ephemeral_storage_bytes", 16 * MIB);
	expect_str(j, "enforcement.io_write_bps", "cgroup v2 io.max");
	assert_null(json_object_get(at(j, "enforcement"), "io_read_bps"));
	expect_str(j, "enforcement.ephemeral_storage", o.storage_mech);
	expect_int(j, "totals.io_read_bytes", 8 * MIB);
	expect_int(j, "totals.io_write_bytes", 64 * MIB);
	expect_int(j, "totals.io_ops", 512);
	expect_num(j, "peak.io_read_bytes_per_s", 8 * MIB * 100.0);
	/* 64 MiB over 12.41 s of windows */
	expect_num(j, "average.io_write_bytes_per_s", 64 * MIB / 12.41);
	expect_str(j, "storage.where", "/tmp");
	expect_int(j, "storage.peak_bytes", 16 * MIB);
	expect_int(j, "oom.victims_total", 2);
	v = json_array_get(at(j, "oom.victims"), 0);
	assert_non_null(v);
	assert_string_equal(json_string_value(json_object_get(v, "command")), "python3");
	assert_int_equal(json_integer_value(json_object_get(v, "pid")), 4242);
	assert_int_equal(json_integer_value(json_object_get(v, "rss_bytes")), 60 * MIB);
	assert_int_equal(json_integer_value(json_object_get(v, "oom_score_adj")), 200);
	expect_str(j, "oom.limit", "memory_ceiling");
	expect_int(j, "oom.memory_events.oom_kill", 2);
	expect_null(j, "oom.memory_events.high");
	expect_str(j, "meter.io_attribution", "blkcg");
	expect_int(j, "meter.io_bios_by.blkcg", 500);
	expect_int(j, "meter.io_bios_by.submitter", 12);
	expect_str(j, "termination.reason", "storage_ceiling");
	assert_true(json_is_false(at(j, "retry.eligible")));
	assert_non_null(strstr(json_string_value(at(j, "retry.advice")), "max_ephemeral_storage"));
	json_decref(j);
}

static void test_json_never_ran(void **state)
{
	static char *argv_typo[] = { "pytset", NULL };
	struct bm_outcome o = { .id = "tc-43", .tenant = "default", .argv = argv_typo };
	json_t *j;

	/* exec failed: no summary, no cgroup; the contract's fields are still all there */
	bm_outcome_classify(&o, 0, false, ENOENT);
	bm_outcome_retry(&o);
	j = round_trip(&o);
	expect_str(j, "schema", "burstmeter.outcome/v1");
	expect_null(j, "cgroup");
	expect_int(j, "totals.windows", 0);
	expect_num(j, "peak.cpu_cores", 0);
	assert_true(json_is_object(at(j, "histograms")));
	assert_true(json_is_array(at(j, "actions")));
	expect_int(j, "exit.code", 127);
	expect_null(j, "exit.signal");
	expect_str(j, "termination.reason", "failed");
	expect_str(j, "termination.by", "burstmeter");
	assert_true(json_is_false(at(j, "retry.eligible")));
	json_decref(j);
}


/* Declared intent against what was used, and the trace context: only where the request had them. */
static void test_json_expect_and_trace(void **state)
{
	static const char tp[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
	struct bm_expect x = {
		BM_X_BIT(BM_X_CPU) | BM_X_BIT(BM_X_MEM) | BM_X_BIT(BM_X_PIDS) |
			BM_X_BIT(BM_X_NET_BYTES) | BM_X_BIT(BM_X_WALL),
		{ [BM_X_CPU] = 1500, [BM_X_MEM] = 512 * MIB, [BM_X_PIDS] = 23,
		  [BM_X_NET_BYTES] = MIB, [BM_X_WALL] = 20000000000ULL },
	};
	struct bm_summary s;
	struct bm_outcome o;
	json_t *j, *over;

	full_outcome(&o, &s);
	j = round_trip(&o);
	assert_null(json_object_get(j, "expect"));
	assert_null(json_object_get(j, "trace"));
	json_decref(j);
	o.expect = &x;
	o.traceparent = tp;
	j = round_trip(&o);
	expect_num(j, "expect.declared.cpu_cores", 1.5);
	expect_int(j, "expect.declared.memory_bytes", 512 * MIB);
	expect_int(j, "expect.declared.pids", 23);
	expect_int(j, "expect.declared.net_tx_bytes", MIB);
	expect_num(j, "expect.declared.wall_seconds", 20);
	assert_null(json_object_get(at(j, "expect.declared"), "net_tx_bytes_per_s"));
	/* observed: the peaks, the total and the duration written beside it */
	expect_num(j, "expect.observed.cpu_cores", 1.97);
	expect_int(j, "expect.observed.memory_bytes", 384 * MIB);
	expect_int(j, "expect.observed.pids", 23);
	expect_int(j, "expect.observed.net_tx_bytes", 9437184);
	expect_num(j, "expect.observed.wall_seconds", 12.41);
	/* above, not at: 23 tasks against 23 declared is as said */
	over = at(j, "expect.exceeded");
	assert_int_equal(json_array_size(over), 2);
	assert_string_equal(json_string_value(json_array_get(over, 0)), "cpu_cores");
	assert_string_equal(json_string_value(json_array_get(over, 1)), "net_tx_bytes");
	expect_str(j, "trace.traceparent", tp);
	/* the contract's keys are all still there */
	expect_str(j, "termination.reason", "completed");
	expect_int(j, "peak.pids", 23);
	json_decref(j);
	/* nothing declared, an empty trace: neither key */
	x.set = 0;
	o.traceparent = "";
	j = round_trip(&o);
	assert_null(json_object_get(j, "expect"));
	assert_null(json_object_get(j, "trace"));
	json_decref(j);
}

/* ---- bm_outcome_write */

static int tmpdir_setup(void **state)
{
	char *dir = strdup("/tmp/bm-test-outcome-XXXXXX");

	if (!dir || !mkdtemp(dir))
		return -1;
	*state = dir;
	return 0;
}

static int tmpdir_teardown(void **state)
{
	char *dir = *state, path[4096];
	struct dirent *e;
	DIR *d = opendir(dir);

	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			if (unlink(path))
				rmdir(path);	/* left by a test that failed midway */
		}
	if (d)
		closedir(d);
	rmdir(dir);
	free(dir);
	return 0;
}

/* Names in dir, comma-separated into buf; returns how many. */
static int list_dir(const char *dir, char *buf, size_t len)
{
	struct dirent *e;
	DIR *d = opendir(dir);
	int n = 0;

	assert_non_null(d);
	buf[0] = '\0';
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", n++ ? "," : "",
				 e->d_name);
	closedir(d);
	return n;
}

static int write_outcome(const struct bm_outcome *o, const char *path)
{
	json_t *j = bm_outcome_json(o);
	int err;

	assert_non_null(j);
	err = bm_outcome_write(j, path);
	json_decref(j);
	return err;
}

/* The file must hold one JSON document on one line, with this id. */
static void check_written(const char *path, const char *id)
{
	char buf[1 << 16], *nl;
	json_error_t jerr;
	FILE *f = fopen(path, "re");
	size_t n;
	json_t *j;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	nl = strchr(buf, '\n');
	assert_non_null(nl);
	assert_int_equal(nl[1], '\0');
	j = json_loads(buf, 0, &jerr);
	if (!j)
		fail_msg("written outcome does not parse: %s", jerr.text);
	expect_str(j, "schema", "burstmeter.outcome/v1");
	expect_str(j, "id", id);
	json_decref(j);
}

static void test_write_file_atomically(void **state)
{
	char path[4096], names[4096];
	struct bm_summary s;
	struct bm_outcome o;

	full_outcome(&o, &s);
	/* a newline in the intent must not break the one-line format */
	o.intent = "first line\nsecond \"quoted\" line";
	snprintf(path, sizeof(path), "%s/o.json", (char *)*state);
	assert_int_equal(write_outcome(&o, path), 0);
	check_written(path, "tc-42");
	/* the temporary file beside it was renamed, not left behind */
	assert_int_equal(list_dir(*state, names, sizeof(names)), 1);
	assert_string_equal(names, "o.json");
	/* a second write replaces the first whole */
	o.id = "tc-43";
	assert_int_equal(write_outcome(&o, path), 0);
	check_written(path, "tc-43");
	assert_int_equal(list_dir(*state, names, sizeof(names)), 1);
}

static void test_write_dash_is_stdout(void **state)
{
	char path[4096];
	struct bm_summary s;
	struct bm_outcome o;
	int fd, saved, err;

	full_outcome(&o, &s);
	snprintf(path, sizeof(path), "%s/stdout", (char *)*state);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	assert_true(saved >= 0);
	assert_int_equal(dup2(fd, STDOUT_FILENO), STDOUT_FILENO);
	err = write_outcome(&o, "-");
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	close(fd);
	assert_int_equal(err, 0);
	check_written(path, "tc-42");
}

/*
 * A path that is no regular file is written, not replaced: a FIFO stays a
 * FIFO and its reader gets the line (so does /dev/null, which a rename had
 * made a file, as root).
 */
static void test_write_fifo_in_place(void **state)
{
	char path[4096], names[4096], buf[1 << 16];
	struct bm_summary s;
	struct bm_outcome o;
	struct stat st;
	ssize_t n;
	int rd;

	full_outcome(&o, &s);
	snprintf(path, sizeof(path), "%s/fifo", (char *)*state);
	assert_int_equal(mkfifo(path, 0600), 0);
	rd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	assert_true(rd >= 0);
	assert_int_equal(write_outcome(&o, path), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	n = read(rd, buf, sizeof(buf) - 1);
	close(rd);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_non_null(strstr(buf, "\"id\":\"tc-42\""));
	assert_int_equal(buf[n - 1], '\n');
	/* nothing beside it */
	assert_int_equal(list_dir(*state, names, sizeof(names)), 1);
	assert_string_equal(names, "fifo");
	/* and /dev/null stays the device it is */
	assert_int_equal(write_outcome(&o, "/dev/null"), 0);
	assert_int_equal(stat("/dev/null", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
}

static void test_write_failure_leaves_nothing(void **state)
{
	char path[4096], missing[1024], names[4096];
	struct bm_summary s;
	struct bm_outcome o;
	struct stat st;

	full_outcome(&o, &s);
	snprintf(missing, sizeof(missing), "%s/missing", (char *)*state);
	snprintf(path, sizeof(path), "%s/o.json", missing);
	assert_int_equal(write_outcome(&o, path), -ENOENT);
	/* nothing created: neither the directory nor a file anywhere */
	assert_int_equal(stat(missing, &st), -1);
	assert_int_equal(list_dir(*state, names, sizeof(names)), 0);
	/* the rename fails (a directory is in the way): the temporary file goes too */
	assert_int_equal(mkdir(missing, 0755), 0);
	assert_int_equal(write_outcome(&o, missing), -EISDIR);
	assert_int_equal(list_dir(*state, names, sizeof(names)), 1);
	assert_string_equal(names, "missing");
	rmdir(missing);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify_every_ending),
		cmocka_unit_test(test_retry_eligibility_for_every_reason),
		cmocka_unit_test(test_retry_advice_names_what_to_change),
		cmocka_unit_test(test_retry_launch_refused),
		cmocka_unit_test(test_reason_names_match_the_contract),
		cmocka_unit_test(test_json_identity_and_limits),
		cmocka_unit_test(test_json_peaks_averages_totals),
		cmocka_unit_test(test_json_histograms_hold_every_window),
		cmocka_unit_test(test_json_actions_exit_termination_retry_meter),
		cmocka_unit_test(test_json_io_storage_oom),
		cmocka_unit_test(test_json_never_ran),
		cmocka_unit_test(test_json_expect_and_trace),
		cmocka_unit_test_setup_teardown(test_write_file_atomically, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_write_dash_is_stdout, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_write_fifo_in_place, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_write_failure_leaves_nothing, tmpdir_setup,
						tmpdir_teardown),
	};

	return cmocka_run_group_tests_name("outcome", tests, NULL, NULL);
}
