// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/agent/export.h: /metrics text. A tiny registry is held to a golden text
 * written out below; bucket placement is checked against the log2 model
 * (bucket k holds [2^(k-1), 2^k)) by hand for CPU at 10 ms and exhaustively
 * for "never below the value"; realistic registries go through
 * tests/unit/check_metrics.py (prometheus_client's parsers plus the checks
 * they miss) and, when installed, promtool check metrics.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/export.h"
#include "meter/window.h"

#define W_NS 10000000ULL	/* the default 10 ms window */

/* Render e in one format; the caller frees. */
static char *render(struct bm_export *e, bool om)
{
	size_t len;
	char *out;

	assert_int_equal(bm_export__render(e, om, &out, &len), 0);
	assert_int_equal(strlen(out), len);
	return out;
}

/* Value of the sample whose line starts with `prefix` (name{labels} up to the space). */
static double sample(const char *text, const char *prefix)
{
	size_t n = strlen(prefix);
	const char *p;

	for (p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, prefix, n) && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	fail_msg("no sample %s", prefix);
	return NAN;
}

/* Lines that are samples, not comments. */
static unsigned int count_samples(const char *text)
{
	unsigned int n = 0;
	const char *p;

	for (p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		n += *p != '#';
	return n;
}

/* Directory of this file, where check_metrics.py lives (builds run from the tree's top). */
static const char *checker(void)
{
	static char path[512];
	const char *env = getenv("BM_CHECK_METRICS"), *slash = strrchr(__FILE__, '/');

	if (env)
		return env;
	snprintf(path, sizeof(path), "%.*scheck_metrics.py",
		 slash ? (int)(slash - __FILE__ + 1) : 0, __FILE__);
	return path;
}

/* Exit status of a shell command; 128 if it did not exit. */
static int run(const char *cmd)
{
	int rc = system(cmd);

	return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

static bool quiet;	/* failures expected: keep their messages out of the log */

/*
 * Write text to a temp file and run check_metrics.py on it, then (0.0.4 text
 * only: promtool reads no OpenMetrics) promtool check metrics. Returns the
 * checker's exit status, or 10 + promtool's.
 */
static int check_text(const char *text, bool om, bool promtool)
{
	char file[] = "/tmp/bm-metrics-XXXXXX", cmd[1024];
	const char *py = getenv("BM_PYTHON") ? getenv("BM_PYTHON") : "python3";
	int fd = mkstemp(file), rc;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	snprintf(cmd, sizeof(cmd), "%s %s %s %s%s", py, checker(), file,
		 om ? "openmetrics" : "prometheus", quiet ? " 2>/dev/null" : "");
	rc = run(cmd);
	if (!rc && promtool && run("command -v promtool >/dev/null 2>&1")) {
		printf("# note: promtool not installed: 'promtool check metrics' skipped\n");
	} else if (!rc && promtool) {
		snprintf(cmd, sizeof(cmd), "promtool check metrics < %s", file);
		rc = run(cmd);
		rc = rc ? 10 + rc : 0;
	}
	unlink(file);
	return rc;
}

/* acme over its CPU budget: 12.5 CPU-s used, a quarter of its burst in debt, held and capped */
static const struct bm_export_tenant acme = {
	.used = { 12.5, 3221225472.0, 4096, 0, 2 },
	.remaining = { -0.25, NAN, NAN, NAN, NAN },
	.exhausted = { 1 },
	.exhaustions = { 1 },
	.refused = { 3, 0, 0, 0, 0, 1 },
	.throttles = { 1 },
	.throttled = 1, .yielding = 1, .fair_yields = 4, .running = 2, .queued = 1,
	.pressure_share = 0.75,
};

static void tiny_registry(struct bm_export *e)
{
	static const struct bm_export_pod pods[] = {
		{ "pod-\"x\"", "0f0e0d0c-1111-4222-8333-444455556666", "c0ffee", 2 },
	};
	uint64_t h[BM_HIST_BUCKETS] = { 0 };
	struct bm_export_node n = { .running = 3, .queued = 1, .map_full = 2, .late = 5,
				    .bpf_run_ns = 1500000000, .bpf_run_cnt = 42, .pods = pods,
				    .n_pods = 1 };

	h[1] = 2;	/* two windows at 1 task: [1, 2) */
	h[3] = 1;	/* one at 5 tasks: [4, 8) */
	bm_export__windows(e, "acme", "pytest", BM_DIM_PIDS, h, W_NS, 7);
	bm_export__peak(e, "acme", "pytest", BM_DIM_CPU, 1.5, "eff-1");
	bm_export__ended(e, "acme", "pytest", "completed");
	bm_export__ended(e, "acme", "pytest", "completed");
	bm_export__action(e, "acme", "pytest", "throttle", "cpu_ceiling");
	bm_export__node(e, &n);
	bm_export__tenants_reset(e);
	bm_export__tenant(e, "acme", &acme);
}

#define L "{tenant=\"acme\",tool=\"pytest\""
#define HIST(name, help) \
	"# HELP burstmeter_" name " " help "\n# TYPE burstmeter_" name " histogram\n"
#define WIN(name, help) HIST("window_" name, "Windows of effects: " help)
#define PEAK(name, help) HIST("effect_peak_" name, "Peak window of each effect: " help)
#define PIDS(le, v) "burstmeter_window_pids_bucket" L ",le=\"" le "\"} " #v "\n"
#define CPU(le, v) "burstmeter_effect_peak_cpu_cores_bucket" L ",le=\"" le "\"} " #v "\n"
#define NODE(name, type, help, v) "# HELP burstmeter_" name " " help "\n# TYPE burstmeter_" \
	name " " type "\nburstmeter_" name " " v "\n"
#define CPU_HELP "CPU use, in cores (CPU time / window)."
#define THEAD(name, type, help) \
	"# HELP burstmeter_" name " " help "\n# TYPE burstmeter_" name " " type "\n"
#define TEN1(name, type, help, v) \
	THEAD(name, type, help) "burstmeter_" name "{tenant=\"acme\"} " v "\n"
#define TLAB(name, label, lv, v) "burstmeter_" name "{tenant=\"acme\"," label "=\"" lv "\"} " v "\n"
#define BUDGETS(name, label, cpu, mem, net, io, launches) \
	TLAB(name, label, "cpu_seconds", cpu) TLAB(name, label, "memory_gib_seconds", mem) \
	TLAB(name, label, "net_tx_bytes", net) TLAB(name, label, "io_bytes", io) \
	TLAB(name, label, "launches", launches)

static const char golden[] =
	WIN("cpu_cores", CPU_HELP)
	WIN("net_tx_bytes_per_second", "inet bytes sent, per second.")
	WIN("runq_delay_seconds", "run-queue wait, in seconds.")
	WIN("io_read_bytes_per_second", "block I/O read, bytes per second.")
	WIN("io_write_bytes_per_second", "block I/O written, bytes per second.")
	WIN("io_ops_per_second", "block I/O operations (bios), per second.")
	WIN("dirty_bytes_per_second", "page cache dirtied, bytes per second.")
	WIN("memory_bytes", "resident memory, in bytes.")
	WIN("pids", "live tasks.")
	/* 1 task lies in [1, 2): shown at le=2, never below; 5 in [4, 8): at le=8 */
	PIDS("1", 0) PIDS("2", 2) PIDS("4", 2) PIDS("8", 3) PIDS("16", 3) PIDS("32", 3)
	PIDS("64", 3) PIDS("128", 3) PIDS("256", 3) PIDS("512", 3) PIDS("1024", 3)
	PIDS("2048", 3) PIDS("4096", 3) PIDS("8192", 3) PIDS("16384", 3) PIDS("32768", 3)
	PIDS("65536", 3) PIDS("+Inf", 3)
	"burstmeter_window_pids_sum" L "} 7\n"
	"burstmeter_window_pids_count" L "} 3\n"
	PEAK("cpu_cores", CPU_HELP)
	CPU("0.0078125", 0) CPU("0.015625", 0) CPU("0.03125", 0) CPU("0.0625", 0)
	CPU("0.125", 0) CPU("0.25", 0) CPU("0.5", 0) CPU("1", 0) CPU("2", 1) CPU("4", 1)
	CPU("8", 1) CPU("16", 1) CPU("32", 1) CPU("64", 1) CPU("128", 1) CPU("+Inf", 1)
	"burstmeter_effect_peak_cpu_cores_sum" L "} 1.5\n"
	"burstmeter_effect_peak_cpu_cores_count" L "} 1\n"
	PEAK("net_tx_bytes_per_second", "inet bytes sent, per second.")
	PEAK("runq_delay_seconds", "run-queue wait, in seconds.")
	PEAK("io_read_bytes_per_second", "block I/O read, bytes per second.")
	PEAK("io_write_bytes_per_second", "block I/O written, bytes per second.")
	PEAK("io_ops_per_second", "block I/O operations (bios), per second.")
	PEAK("dirty_bytes_per_second", "page cache dirtied, bytes per second.")
	PEAK("memory_bytes", "resident memory, in bytes.")
	PEAK("pids", "live tasks.")
	"# HELP burstmeter_effects_total Effects that ended, by termination reason.\n"
	"# TYPE burstmeter_effects_total counter\n"
	"burstmeter_effects_total" L ",reason=\"completed\"} 2\n"
	"# HELP burstmeter_actions_total Steps the ladder took, by step and reason.\n"
	"# TYPE burstmeter_actions_total counter\n"
	"burstmeter_actions_total" L ",step=\"throttle\",reason=\"cpu_ceiling\"} 1\n"
	TEN1("tenant_cpu_seconds_total", "counter",
	     "CPU time of the tenant's effects, charged as windows close.", "12.5")
	TEN1("tenant_memory_byte_seconds_total", "counter",
	     "Resident memory the tenant's effects held, times seconds.", "3221225472")
	TEN1("tenant_net_tx_bytes_total", "counter",
	     "Bytes the tenant's effects sent on inet sockets.", "4096")
	TEN1("tenant_io_bytes_total", "counter",
	     "Bytes the tenant's effects read and wrote on block devices (bios).", "0")
	TEN1("tenant_launches_total", "counter", "Effects of the tenant admitted.", "2")
	THEAD("tenant_budget_remaining_ratio", "gauge",
	      "Tokens left in a budget's bucket over its burst (below 0: debt).")
	TLAB("tenant_budget_remaining_ratio", "budget", "cpu_seconds", "-0.25")
	THEAD("tenant_budget_exhausted", "gauge",
	      "1 while a budget is exhausted: queued calls held, POSTs refused.")
	BUDGETS("tenant_budget_exhausted", "budget", "1", "0", "0", "0", "0")
	THEAD("tenant_budget_exhaustions_total", "counter", "Times a budget became exhausted.")
	BUDGETS("tenant_budget_exhaustions_total", "budget", "1", "0", "0", "0", "0")
	THEAD("tenant_refusals_total", "counter",
	      "Submissions refused with 429, by the budget or the queue share.")
	BUDGETS("tenant_refusals_total", "reason", "3", "0", "0", "0", "0")
	TLAB("tenant_refusals_total", "reason", "queue_share", "1")
	THEAD("tenant_throttles_total", "counter",
	      "CPU caps put on the tenant's running effects, by cause.")
	BUDGETS("tenant_throttles_total", "cause", "1", "0", "0", "0", "0")
	TLAB("tenant_throttles_total", "cause", "node_pressure", "0")
	TEN1("tenant_throttled", "gauge",
	     "1 while the tenant's running effects are held to a CPU cap.", "1")
	TEN1("tenant_yielding", "gauge",
	     "1 while the tenant's running effects are in the idle CPU class (over their fair share "
	     "or their budget).", "1")
	TEN1("tenant_fair_yields_total", "counter",
	     "Times the tenant went over its fair share of the CPUs while others ran, and yielded.",
	     "4")
	TEN1("tenant_running", "gauge", "Effects of the tenant running now.", "2")
	TEN1("tenant_queued", "gauge", "Effects of the tenant waiting for admission.", "1")
	TEN1("tenant_pressure_share", "gauge",
	     "The tenant's share of what the node is short of: memory held, else CPU of the last "
	     "second.", "0.75")
	NODE("effects_running", "gauge", "Effects running now.", "3")
	NODE("effects_queued", "gauge", "Effects waiting for admission.", "1")
	NODE("meter_lost_records_total", "counter", "Ring-buffer records lost.", "0")
	NODE("meter_map_full_total", "counter", "Map updates that found it full.", "2")
	NODE("meter_late_total", "counter", "Contributions older than the window ring.", "5")
	NODE("meter_reads_total", "counter", "Meters read for timelines and streams (idle ones are not).", "0")
	NODE("bpf_run_seconds_total", "counter", "CPU time of our BPF code.", "1.5")
	NODE("bpf_runs_total", "counter", "Runs of our BPF programs.", "42")
	NODE("export_dropped_total", "counter", "Updates invalid or lost (ENOMEM).", "0")
	NODE("node_over_pressure", "gauge", "1 while the node is beyond its admission bounds.", "0")
	NODE("node_pressure_episodes_total", "counter",
	     "Times the node went beyond its admission bounds.", "0")
	"# HELP burstmeter_pod_effects_running Tool calls running now, by the pod container that made them.\n"
	"# TYPE burstmeter_pod_effects_running gauge\n"
	"burstmeter_pod_effects_running{tenant=\"pod-\\\"x\\\"\",pod_uid=\"0f0e0d0c-1111-4222-8333-444455556666\","
	"container_id=\"c0ffee\"} 2\n";

static void test_export_golden_prometheus_text(void **state)
{
	struct bm_export *e = bm_export__new(4, 4);
	char *out;

	assert_non_null(e);
	tiny_registry(e);
	out = render(e, false);
	assert_string_equal(out, golden);
	assert_null(strstr(out, "eff-1"));	/* effect ids: exemplars only, never labels */
	free(out);
	bm_export__free(e);
}

static void test_export_openmetrics_counters_exemplars_eof(void **state)
{
	struct bm_export *e = bm_export__new(4, 4);
	char *out, *eof;

	tiny_registry(e);
	out = render(e, true);
	assert_non_null(strstr(out, "\n# TYPE burstmeter_effects counter\n"));
	assert_non_null(strstr(out, "\n# TYPE burstmeter_bpf_run_seconds counter\n"
				    "burstmeter_bpf_run_seconds_total 1.5\n"));
	assert_non_null(strstr(out, "\nburstmeter_effects_total" L ",reason=\"completed\"} 2\n"));
	assert_non_null(strstr(out, "\n" "burstmeter_effect_peak_cpu_cores_bucket" L
				    ",le=\"2.0\"} 1 # {effect_id=\"eff-1\"} 1.5\n"));
	/* only the bucket the peak fell in carries it */
	assert_non_null(strstr(out, "\n" "burstmeter_effect_peak_cpu_cores_bucket" L
				    ",le=\"4.0\"} 1\n"));
	assert_non_null(strstr(out, "\n" PIDS("65536.0", 3)));
	assert_non_null(strstr(out, "\nburstmeter_window_pids_sum" L "} 7.0\n"));
	eof = strstr(out, "# EOF\n");
	assert_non_null(eof);
	assert_string_equal(eof, "# EOF\n");
	free(out);
	bm_export__free(e);
}

/*
 * CPU windows come bucketed as cores x 2^10 (BM_CPU_HIST_SHIFT): bucket k
 * holds less than 2^(k-10) cores whatever the window, so it goes to le
 * 2^(k-10), clamped to 2^-7, and +Inf past 2^7 (k >= 18).
 */
static void test_export_cpu_window_buckets_at_10ms(void **state)
{
	static const unsigned int ks[] = {
		0,	/* idle windows                 -> le 2^-7 */
		3,	/* < 2^-7 cores                 -> le 2^-7 */
		4,	/* < 2^-6                       -> le 2^-6 */
		10,	/* < 1 core: a busy thread      -> le 1 */
		11,	/* < 2                          -> le 2 */
		17,	/* < 128                        -> le 128 */
		18,	/* < 256                        -> +Inf */
		62,	/* saturated                    -> +Inf */
	};
	static const struct {
		const char *le;
		uint64_t cum;	/* bit i: ks[i] is at or below le */
	} want[] = {
		{ "0.0078125", 0x03 }, { "0.015625", 0x07 }, { "0.5", 0x07 }, { "1", 0x0f },
		{ "2", 0x1f }, { "64", 0x1f }, { "128", 0x3f }, { "+Inf", 0xff },
	};
	uint64_t h[BM_HIST_BUCKETS] = { 0 };
	struct bm_export *e = bm_export__new(4, 4);
	char *out, line[160];
	unsigned int i;

	for (i = 0; i < sizeof(ks) / sizeof(ks[0]); i++)
		h[ks[i]] = 1ULL << i;	/* a distinct bit per log2 bucket */
	bm_export__windows(e, "t", "x", BM_DIM_CPU, h, W_NS, 0.25e7);
	out = render(e, false);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		snprintf(line, sizeof(line),
			 "burstmeter_window_cpu_cores_bucket{tenant=\"t\",tool=\"x\",le=\"%s\"}",
			 want[i].le);
		if ((uint64_t)sample(out, line) != want[i].cum)
			fail_msg("le %s: %g, want %#" PRIx64, want[i].le, sample(out, line),
				 want[i].cum);
	}
	assert_true(sample(out, "burstmeter_window_cpu_cores_sum{tenant=\"t\",tool=\"x\"}") ==
		    0.25);
	assert_true(sample(out, "burstmeter_window_cpu_cores_count{tenant=\"t\",tool=\"x\"}") ==
		    0xff);
	free(out);
	bm_export__free(e);
}

/* Lowest exported bound holding a window of bucket k alone: its first bucket above 0. */
static double placed_at(enum bm_dim d, unsigned int k, uint64_t window_ns, double *prev)
{
	uint64_t h[BM_HIST_BUCKETS] = { 0 };
	struct bm_export *e = bm_export__new(1, 1);
	double le = NAN, last = -INFINITY;
	char *out, *p;

	h[k] = 1;
	bm_export__windows(e, "t", "x", d, h, window_ns, 0);
	out = render(e, false);
	for (p = strstr(out, "_bucket{"); p; p = strstr(p + 1, "_bucket{")) {
		le = strtod(strstr(p, "le=\"") + 4, NULL);	/* strtod reads "+Inf" too */
		if (strtod(strchr(p, '}') + 2, NULL) == 1)
			break;
		last = le;
	}
	*prev = last;
	free(out);
	bm_export__free(e);
	return le;
}

/* Every log2 bucket lands at or above its upper edge, in the next bound up, never below. */
static void test_export_windows_never_under_report(void **state)
{
	static const uint64_t windows[] = { 1000000, W_NS, 3000000, 1000000000 };
	double edge, le, prev;
	unsigned int d, k, w;

	for (d = 0; d < BM_DIM__MAX; d++)
		for (w = 0; w < sizeof(windows) / sizeof(windows[0]); w++)
			for (k = 0; k < 63; k++) {
				edge = bm_window_bucket_edge(d, k, windows[w]);
				edge /= d == BM_DIM_RUNQ ? 1e3 : 1;	/* ms -> s */
				le = placed_at(d, k, windows[w], &prev);
				if (!(le >= edge) || !(prev < edge * (1 + 1e-12)))
					fail_msg("dim %u k %u window %" PRIu64
						 ": edge %g in (%g, %g]",
						 d, k, windows[w], edge, prev, le);
			}
}

/* A peak on a bound counts in it (le is "at or below"); runq peaks come in ms, leave in s. */
static void test_export_peak_buckets_are_inclusive(void **state)
{
	struct bm_export *e = bm_export__new(1, 1);
	char *out;

	bm_export__peak(e, "t", "x", BM_DIM_CPU, 1.0, "on-the-bound");
	bm_export__peak(e, "t", "x", BM_DIM_CPU, -3, "negative");	/* as 0 */
	bm_export__peak(e, "t", "x", BM_DIM_CPU, 1e300, "huge");
	bm_export__peak(e, "t", "x", BM_DIM_RUNQ, 1000, "one-second");
	bm_export__peak(e, "t", "x", BM_DIM_RUNQ, 2, "two-ms");
	out = render(e, true);
	assert_non_null(strstr(out, "{tenant=\"t\",tool=\"x\",le=\"0.0078125\"} 1 # "
				    "{effect_id=\"negative\"} 0.0\n"));
	assert_non_null(strstr(out, "{tenant=\"t\",tool=\"x\",le=\"0.5\"} 1\n"));
	assert_non_null(strstr(out, "{tenant=\"t\",tool=\"x\",le=\"1.0\"} 2 # "
				    "{effect_id=\"on-the-bound\"} 1.0\n"));
	assert_non_null(strstr(out, "{tenant=\"t\",tool=\"x\",le=\"+Inf\"} 3 # "
				    "{effect_id=\"huge\"} 1e+300\n"));
	/* 2 ms = 0.002 s: above 2^-9 = 0.001953125, so at 2^-8 */
	assert_non_null(strstr(out, "runq_delay_seconds_bucket{tenant=\"t\",tool=\"x\",le="
				    "\"0.001953125\"} 0\n"));
	assert_non_null(strstr(out, "runq_delay_seconds_bucket{tenant=\"t\",tool=\"x\",le="
				    "\"0.00390625\"} 1 # {effect_id=\"two-ms\"} 0.002\n"));
	assert_non_null(strstr(out, "runq_delay_seconds_bucket{tenant=\"t\",tool=\"x\",le="
				    "\"1.0\"} 2 # {effect_id=\"one-second\"} 1.0\n"));
	assert_non_null(strstr(out, "runq_delay_seconds_sum{tenant=\"t\",tool=\"x\"} 1.002\n"));
	assert_int_equal(check_text(out, true, false), 0);
	free(out);
	bm_export__free(e);
}

static void test_export_folds_past_caps_into_other(void **state)
{
	struct bm_export *e = bm_export__new(2, 1);
	char *out;

	bm_export__ended(e, "a", "x", "completed");
	bm_export__ended(e, "other", "x", "completed");	/* takes no cap slot */
	bm_export__ended(e, "b", "x", "completed");
	bm_export__ended(e, "c", "x", "completed");	/* third tenant: folds */
	bm_export__ended(e, "d", "y", "completed");	/* and a second tool */
	bm_export__ended(e, "a", "y", "completed");
	out = render(e, false);
	assert_true(sample(out, "burstmeter_effects_total{tenant=\"a\",tool=\"x\","
				 "reason=\"completed\"}") == 1);
	assert_true(sample(out, "burstmeter_effects_total{tenant=\"b\",tool=\"x\","
				 "reason=\"completed\"}") == 1);
	assert_true(sample(out, "burstmeter_effects_total{tenant=\"other\",tool=\"x\","
				 "reason=\"completed\"}") == 2);
	assert_true(sample(out, "burstmeter_effects_total{tenant=\"other\",tool=\"other\","
				 "reason=\"completed\"}") == 1);
	assert_true(sample(out, "burstmeter_effects_total{tenant=\"a\",tool=\"other\","
				 "reason=\"completed\"}") == 1);
	assert_null(strstr(out, "tenant=\"c\""));
	assert_null(strstr(out, "tool=\"y\""));
	assert_int_equal(count_samples(out), 5 + 11);	/* 5 counters, 11 node-wide */
	free(out);
	bm_export__free(e);
}

/* Tenants past the cap add up in "other": counts summed, the lowest remaining, any exhausted. */
static void test_export_tenant_rows_fold_into_other(void **state)
{
	struct bm_export_tenant v = { .remaining = { 0.5, NAN, NAN, NAN, NAN }, .running = 1 };
	struct bm_export *e = bm_export__new(1, 1);
	char *out;

	v.used[BM_BUD_CPU] = 2;
	bm_export__tenant(e, "a", &v);
	bm_export__tenant(e, "b", &v);	/* past the cap: "other" */
	v.remaining[BM_BUD_CPU] = -1;
	v.exhausted[BM_BUD_CPU] = 1;
	bm_export__tenant(e, "c", &v);	/* and into "other" too */
	out = render(e, false);
	assert_true(sample(out, "burstmeter_tenant_cpu_seconds_total{tenant=\"a\"}") == 2);
	assert_true(sample(out, "burstmeter_tenant_cpu_seconds_total{tenant=\"other\"}") == 4);
	assert_true(sample(out, "burstmeter_tenant_running{tenant=\"other\"}") == 2);
	assert_true(sample(out, "burstmeter_tenant_budget_remaining_ratio{tenant=\"other\","
				 "budget=\"cpu_seconds\"}") == -1);
	assert_true(sample(out, "burstmeter_tenant_budget_exhausted{tenant=\"other\","
				 "budget=\"cpu_seconds\"}") == 1);
	assert_null(strstr(out, "tenant=\"b\""));
	/* every family: 38 series a tenant less the 4 remaining shares without a budget */
	assert_int_equal(count_samples(out), 2 * (38 - 4) + 11);
	free(out);
	/* a scrape sets them afresh: the counters are the agent's, not summed across scrapes */
	bm_export__tenants_reset(e);
	bm_export__tenant(e, "a", &v);
	out = render(e, false);
	assert_true(sample(out, "burstmeter_tenant_cpu_seconds_total{tenant=\"a\"}") == 2);
	assert_null(strstr(out, "tenant=\"other\""));
	assert_int_equal(check_text(out, false, true), 0);
	free(out);
	bm_export__free(e);
}

static void test_export_escapes_label_values(void **state)
{
	struct bm_export *e = bm_export__new(8, 8);
	char zs[400], quotes[201], eacute[401], id[101], want[600], *out;
	unsigned int i;

	memset(zs, 'z', sizeof(zs) - 1);
	zs[sizeof(zs) - 1] = '\0';
	memset(quotes, '"', sizeof(quotes) - 1);
	quotes[sizeof(quotes) - 1] = '\0';
	for (i = 0; i < 200; i++)
		memcpy(eacute + 2 * i, "\xc3\xa9", 2);
	eacute[400] = '\0';
	memset(id, 'i', sizeof(id) - 1);
	id[sizeof(id) - 1] = '\0';
	bm_export__ended(e, "a\"b\\c\nd", "py\xff\xc0\xe2\x82", "completed");
	bm_export__ended(e, "caf\xc3\xa9", zs, "done \"now\"");
	bm_export__ended(e, quotes, eacute, "completed");
	bm_export__peak(e, "x", "y", BM_DIM_MEM, 1e6, "id\"\n\\");
	bm_export__peak(e, "x", "y", BM_DIM_PIDS, 3, id);
	out = render(e, false);
	/* invalid UTF-8 (a stray byte, an overlong lead, a cut sequence) becomes '?' */
	assert_non_null(strstr(out, "{tenant=\"a\\\"b\\\\c\\nd\",tool=\"py????\","
				    "reason=\"completed\"} 1\n"));
	assert_non_null(strstr(out, ",reason=\"done \\\"now\\\"\"} 1\n"));
	/* escaped values are cut at 255 bytes: 255 z, 127 \" (254), 127 e-acute (254) */
	snprintf(want, sizeof(want), "{tenant=\"caf\xc3\xa9\",tool=\"%.255s\",", zs);
	assert_non_null(strstr(out, want));
	for (i = 0; i < 127; i++)
		memcpy(want + 2 * i, "\\\"", 2);
	snprintf(want + 254, sizeof(want) - 254, "\",tool=\"%.254s\",", eacute);
	assert_non_null(strstr(out, want));
	assert_int_equal(check_text(out, false, true), 0);
	free(out);
	out = render(e, true);
	assert_non_null(strstr(out, "# {effect_id=\"id\\\"\\n\\\\\"} 1000000.0\n"));
	/* exemplar ids are cut at 64 bytes: OpenMetrics allows 128 characters of labels */
	snprintf(want, sizeof(want), "# {effect_id=\"%.64s\"} 3.0\n", id);
	assert_non_null(strstr(out, want));
	assert_int_equal(check_text(out, true, false), 0);
	free(out);
	bm_export__free(e);
}

/* Several tenants, tools and dims, effects ended, actions and node gauges: both formats check. */
static void realistic(struct bm_export *e, unsigned int effects, unsigned int tools)
{
	static const char *const tenants[] = { "acme", "globex", "initech", "umbrella" };
	static const char *const reasons[] = { "completed", "failed", "memory_ceiling",
					       "deadline" };
	static const char *const steps[] = { "throttle", "freeze", "thaw", "kill" };
	static const struct bm_export_pod pods[] = {
		{ "acme", "0f0e0d0c-1111-4222-8333-444455556666", "1111aaaa", 2 },
		{ "pod-1a2b3c4d-2222-4333-8444-555566667777", "1a2b3c4d-2222-4333-8444-555566667777",
		  "2222bbbb", 1 },
	};
	struct bm_export_node n = { 7, 2, 1, 0, 3, 123456789, 9999, 4242, true, 3, pods, 2 };
	uint64_t h[BM_HIST_BUCKETS];
	char tool[32], id[32];
	unsigned int i, d, k;

	for (i = 0; i < effects; i++) {
		const char *t = tenants[i % 4];

		snprintf(tool, sizeof(tool), "tool-%u", i % tools);
		snprintf(id, sizeof(id), "eff-%06u", i);
		for (d = 0; d < BM_DIM__MAX; d++) {
			memset(h, 0, sizeof(h));
			for (k = 0; k < 6; k++)
				h[(i * 7 + d * 5 + k * 3) % 40] += k + 1;
			bm_export__windows(e, t, tool, d, h, i % 3 ? W_NS : 50000000,
					   1e6 * (i % 97));
			bm_export__peak(e, t, tool, d, (double)(i % 1000) * (d + 1) * 0.37, id);
		}
		bm_export__ended(e, t, tool, reasons[i % 4]);
		if (i % 5 == 0)
			bm_export__action(e, t, tool, steps[i % 4], reasons[(i / 5) % 4]);
	}
	bm_export__node(e, &n);
	/* each tenant's budgets: past max_tenants they fold into "other" */
	bm_export__tenants_reset(e);
	for (i = 0; i < 4; i++) {
		struct bm_export_tenant v = { .running = i, .queued = 2 * i, .throttled = i == 1,
					      .pressure_share = 0.25 };

		for (d = 0; d < BM_BUD__MAX; d++) {
			v.used[d] = 1.5 * (i + 1) * (d + 1);
			v.remaining[d] = d == BM_BUD_CPU ? 0.5 - i : NAN;
			v.exhausted[d] = d == BM_BUD_CPU && i > 0;
			v.exhaustions[d] = i;
		}
		for (d = 0; d <= BM_BUD__MAX; d++)
			v.refused[d] = v.throttles[d] = i + d;
		bm_export__tenant(e, tenants[i], &v);
	}
}

static void test_export_realistic_registry_passes_checkers(void **state)
{
	struct bm_export *e = bm_export__new(3, 5);
	char *out;

	realistic(e, 200, 8);
	out = render(e, false);
	assert_int_equal(check_text(out, false, true), 0);
	free(out);
	out = render(e, true);
	assert_int_equal(check_text(out, true, false), 0);
	free(out);
	bm_export__free(e);
}

/* The checker itself: each broken exposition must be refused. */
static void test_export_checker_refuses_broken_text(void **state)
{
	static const char *const bad[] = {
		/* not cumulative */
		"# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"2\"} 1\n"
		"h_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 2\n",
		/* +Inf missing */
		"# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_sum 1\nh_count 2\n",
		/* +Inf != _count */
		"# HELP h x\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n",
		/* _sum missing */
		"# HELP h x\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_count 2\n",
		/* le not sorted */
		"# HELP h x\n# TYPE h histogram\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\n"
		"h_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
		/* an effect id as a label */
		"# HELP c_total x\n# TYPE c_total counter\nc_total{effect_id=\"e1\"} 1\n",
	};
	unsigned int i;

	quiet = true;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (check_text(bad[i], false, false) != 1)
			fail_msg("check_metrics.py accepted broken text #%u", i);
	assert_int_equal(check_text("# HELP g x\n# TYPE g gauge\ng 1\n", true, false), 1); /* EOF */
	quiet = false;
}

static void test_export_invalid_updates_are_counted(void **state)
{
	uint64_t h[BM_HIST_BUCKETS] = { 0 };
	struct bm_export *e = bm_export__new(1, 1);
	char *out;
	size_t len;

	bm_export__windows(e, "t", "x", BM_DIM_CPU, NULL, W_NS, 0);
	bm_export__windows(e, "t", "x", BM_DIM_CPU, h, 0, 0);
	bm_export__windows(e, "t", "x", BM_DIM__MAX, h, W_NS, 0);
	bm_export__peak(e, "t", "x", BM_DIM_CPU, NAN, "e");
	bm_export__peak(NULL, "t", "x", BM_DIM_CPU, 1, "e");
	bm_export__ended(NULL, "t", "x", "completed");
	bm_export__action(NULL, "t", "x", "kill", "deadline");
	bm_export__node(NULL, NULL);
	bm_export__tenant(NULL, "t", NULL);
	bm_export__tenants_reset(NULL);
	bm_export__free(NULL);
	out = render(e, false);
	assert_true(sample(out, "burstmeter_export_dropped_total") == 4);
	assert_int_equal(count_samples(out), 11);	/* nothing else was recorded */
	free(out);
	assert_int_equal(bm_export__render(NULL, false, &out, &len), -EINVAL);
	bm_export__free(e);
}

/*
 * 5,000 effects of 50 tool kinds under max_tools 20: the series stay under
 * the bound of export.c, 406 * (max_tenants + 1) * (max_tools + 1) + 9, and
 * the render time is printed, first and best of 5 (not asserted: sanitizers
 * and loaded CI machines vary).
 */
static void test_export_cardinality_and_render_time(void **state)
{
	struct bm_export *e = bm_export__new(8, 20);
	double ms, first = 0, best = INFINITY;
	struct timespec a, b;
	char *out = NULL;
	int om, r;

	realistic(e, 5000, 50);
	for (om = 0; om < 2; om++, best = INFINITY) {
		for (r = 0; r < 5; r++) {
			free(out);
			clock_gettime(CLOCK_MONOTONIC, &a);
			out = render(e, om);
			clock_gettime(CLOCK_MONOTONIC, &b);
			ms = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
			first = r ? first : ms;
			best = ms < best ? ms : best;
		}
		printf("# render %s: %u series, %zu bytes: first %.2f ms, best of 5 %.2f ms\n",
		       om ? "openmetrics" : "prometheus", count_samples(out), strlen(out), first,
		       best);
		assert_true(count_samples(out) <= 406 * 9 * 21 + 9);
		assert_null(strstr(out, "tool=\"tool-20\""));	/* tool-20..49 fold */
		assert_non_null(strstr(out, "tool=\"tool-19\""));
		assert_non_null(strstr(out, "tool=\"other\""));
		assert_int_equal(check_text(out, om, !om), 0);
	}
	free(out);
	bm_export__free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_export_golden_prometheus_text),
		cmocka_unit_test(test_export_openmetrics_counters_exemplars_eof),
		cmocka_unit_test(test_export_cpu_window_buckets_at_10ms),
		cmocka_unit_test(test_export_windows_never_under_report),
		cmocka_unit_test(test_export_peak_buckets_are_inclusive),
		cmocka_unit_test(test_export_folds_past_caps_into_other),
		cmocka_unit_test(test_export_tenant_rows_fold_into_other),
		cmocka_unit_test(test_export_escapes_label_values),
		cmocka_unit_test(test_export_realistic_registry_passes_checkers),
		cmocka_unit_test(test_export_checker_refuses_broken_text),
		cmocka_unit_test(test_export_invalid_updates_are_counted),
		cmocka_unit_test(test_export_cardinality_and_render_time),
	};

	return cmocka_run_group_tests_name("export", tests, NULL, NULL);
}
