// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * /metrics as a real Prometheus sees it: the agent ($BM_BIN agent) with
 * --metrics on a free loopback port, a private Prometheus (Debian's 2.42,
 * $BM_PROMETHEUS) scraping it every second with tools/dashboards/rules.yaml
 * loaded, bursty effects and one killed at a pids ceiling launched through
 * the agent's socket, then PromQL over the HTTP API: the 0.99 quantile of
 * per-window CPU shows the bursts that the mean hides, the counters moved,
 * the recording rules produce series, the exemplars carry effect ids, and
 * every expression of tools/dashboards/burstmeter.json evaluates. /metrics
 * fetched directly passes promtool and tests/unit/check_metrics.py in both
 * formats. A second test holds the rules and the dashboard to promtool on
 * their own: check rules, and unit tests of every alert.
 *
 * Prometheus and the agent are children of the test: both are stopped, the
 * temporary directory and the agent's pins removed, on every path.
 */
#include <sys/sysmacros.h>

#include "runner.h"
#include "agent_fx.h"
#include "prom_fx.h"

/* The agent (ag) and Prometheus (prom) beside it share ag.dir; this is the rest. */
struct stack {
	int metrics_port;				/* the agent's --metrics */
	char rules[PATH_MAX], dashboard[PATH_MAX];	/* absolute */
};

static struct stack st;
static const char *promtool, *python;
static char checker[PATH_MAX];

/* ------------------------------------------------------------------ helpers */

/*
 * Exit status of a shell command (128 + signal if it did not exit); what it
 * prints is kept out of the TAP stream, and shown when it fails.
 */
static int run_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run_sh(const char *fmt, ...)
{
	char cmd[4 * PATH_MAX], out[PATH_MAX + 16];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	snprintf(out, sizeof(out), "%s/cmd.out", ag.dir);
	assert_true(strlen(cmd) + strlen(out) + 16 < sizeof(cmd));
	strcat(strcat(strcat(cmd, " >"), out), " 2>&1");
	rc = system(cmd);
	rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + (WIFSIGNALED(rc) ? WTERMSIG(rc) : 0);
	if (rc) {
		print_error("%s: exit %d\n", cmd, rc);
		dump_file("output", out);
	}
	unlink(out);
	return rc;
}

/* ------------------------------------------------------------------ agent */

/* The agent with --metrics on st.metrics_port; root's tenant is our token. */
static void agent_start(void)
{
	char listen[32];

	snprintf(listen, sizeof(listen), "127.0.0.1:%d", st.metrics_port);
	/* max_tools 20: the cap the cardinality test holds the series bound to */
	agent_start_cfg(listen, "max_running: 8\nmax_queued: 16\ntenant_max_running: 100\n"
			"admit_cpu_pressure: 100\nadmit_mem_available: 0\nmax_tools: 20\n"
			"tenants:\n  - { uid: 0, tenant: %s }\n", token);
}

/* Launch a workload (NULL-terminated arguments) with an optional sandbox; it must be 201. */
static void launch(const char *id, json_t *sandbox, const char *wl_name, ...)
{
	json_t *req, *e = NULL;
	va_list ap;
	int s;

	va_start(ap, wl_name);
	req = vlaunch_req(id, wl_name, ap);
	va_end(ap);
	json_object_set_new(req, "intent", json_string("prometheus integration"));
	if (sandbox)
		json_object_set_new(req, "sandbox", sandbox);
	s = call("POST", "/v1/effects", req, &e);
	if (s != 201)
		fail_msg("launch %s: status %d", id, s);
	json_decref(e);
}

/* --------------------------------------------------------------- fixtures */

static const char *dashboards_dir(void)
{
	const char *dir = getenv("BM_DASHBOARDS");

	return dir && *dir ? dir : "tools/dashboards";
}

static int setup_stack(void **state)
{
	char path[PATH_MAX];
	int err;

	memset(&st, 0, sizeof(st));
	snprintf(path, sizeof(path), "%s/rules.yaml", dashboards_dir());
	if (!realpath(path, st.rules)) {
		print_error("%s: %s\n", path, strerror(errno));
		return -1;
	}
	snprintf(path, sizeof(path), "%s/burstmeter.json", dashboards_dir());
	if (!realpath(path, st.dashboard)) {
		print_error("%s: %s\n", path, strerror(errno));
		return -1;
	}
	if (setup(state))
		return -1;
	err = agent_fx_init("prom", "burstmeter-test");
	if (err) {
		print_error("mkdtemp: %s\n", strerror(-err));
		teardown(state);
		return -1;
	}
	prom_init(ag.dir);
	return 0;
}

/* Whatever happened: Prometheus and the agent stopped, pins and the directory removed. */
static int teardown_stack(void **state)
{
	int found;

	stop_child(&prom.pid, SIGTERM, 10000);
	found = agent_leftovers();
	if (found || getenv("BM_AGENT_LOG"))
		dump_file("prometheus", prom.log);
	rm_rf(ag.dir);
	return teardown(state) || found ? -1 : 0;
}

/* ------------------------------------------------------------ the checks */

/* /metrics straight from the agent, in both formats, through promtool and check_metrics.py. */
static void check_direct_scrape(const char *const ids[], size_t n_ids)
{
	char file[PATH_MAX + 32], ctype[128], needle[128], *text, *p;
	uint64_t t0 = now_ns();
	size_t i;
	int s;

	s = http_get(st.metrics_port, "/metrics", NULL, &text, ctype, sizeof(ctype));
	assert_int_equal(s, 200);
	integ_note("GET /metrics (0.0.4): %zu bytes in %.1f ms", strlen(text), (double)(now_ns() - t0) / 1e6);
	assert_non_null(strstr(ctype, "text/plain; version=0.0.4"));
	snprintf(needle, sizeof(needle), "tenant=\"%s\"", token);
	assert_non_null(strstr(text, needle));
	for (i = 0; i < n_ids; i++)	/* no effect id anywhere in 0.0.4 text */
		if (strstr(text, ids[i]))
			fail_msg("effect id %s in the 0.0.4 exposition", ids[i]);
	snprintf(file, sizeof(file), "%s/metrics.prom", ag.dir);
	write_file(file, text);
	free(text);
	if (run_sh("%s check metrics < %s", promtool, file))
		fail_msg("promtool check metrics refused %s", file);
	if (run_sh("%s %s %s prometheus", python, checker, file))
		fail_msg("check_metrics.py refused %s (prometheus)", file);

	s = http_get(st.metrics_port, "/metrics", "application/openmetrics-text; version=1.0.0; charset=utf-8",
		     &text, ctype, sizeof(ctype));
	assert_int_equal(s, 200);
	assert_non_null(strstr(ctype, "application/openmetrics-text"));
	/* ids only as exemplars: every occurrence right after `# {effect_id="` */
	for (i = 0; i < n_ids; i++) {
		snprintf(needle, sizeof(needle), "\"%s\"", ids[i]);
		for (p = strstr(text, needle); p; p = strstr(p + 1, needle))
			if (p - text < 13 || strncmp(p - 13, "# {effect_id=", 13))
				fail_msg("effect id %s outside an exemplar", ids[i]);
	}
	snprintf(needle, sizeof(needle), "# {effect_id=\"%s-", token);
	assert_non_null(strstr(text, needle));
	snprintf(file, sizeof(file), "%s/metrics.om", ag.dir);
	write_file(file, text);
	free(text);
	if (run_sh("%s %s %s openmetrics", python, checker, file))
		fail_msg("check_metrics.py refused %s (openmetrics)", file);
}

/* Every rule loaded and healthy; every recording rule has series; no alert fires. */
static void check_rules(void)
{
	json_t *data = NULL, *g, *r, *res;
	unsigned int records = 0, alerts = 0, t;
	size_t i, j;
	bool pending;

	/* a rule not yet evaluated is "unknown": wait for a full round */
	for (t = 0, pending = true; pending && t < 10000; t += 200) {
		json_decref(data);
		data = prom_api("/api/v1/rules");
		pending = false;
		json_array_foreach(json_object_get(data, "groups"), i, g)
			json_array_foreach(json_object_get(g, "rules"), j, r)
				pending |= !strcmp(json_string_value(json_object_get(r, "health")) ?: "", "unknown");
		if (pending)
			usleep(200000);
	}
	json_array_foreach(json_object_get(data, "groups"), i, g) {
		json_array_foreach(json_object_get(g, "rules"), j, r) {
			const char *name = json_string_value(json_object_get(r, "name")) ?: "?";
			const char *type = json_string_value(json_object_get(r, "type")) ?: "?";
			const char *health = json_string_value(json_object_get(r, "health")) ?: "?";

			if (strcmp(health, "ok"))
				fail_msg("rule %s: health %s: %s", name, health,
					 json_string_value(json_object_get(r, "lastError")) ?: "");
			if (!strcmp(type, "recording")) {
				records++;
				res = query("%s{tenant=\"%s\"}", name, token);
				if (!json_array_size(res))
					fail_msg("recording rule %s produces no series for tenant %s", name, token);
				json_decref(res);
			} else {
				alerts++;
				if (!strcmp(json_string_value(json_object_get(r, "state")) ?: "", "firing"))
					fail_msg("alert %s fires", name);
			}
		}
	}
	json_decref(data);
	integ_note("rules: %u recording rules with series, %u alerts healthy and quiet", records, alerts);
	assert_true(records >= 4);
	assert_true(alerts >= 4);
}

/* Replace every `from` in s (in place, size bytes) by `to`. */
static void replace_all(char *s, size_t size, const char *from, const char *to)
{
	size_t fl = strlen(from), tl = strlen(to);
	char *p;

	for (p = strstr(s, from); p; p = strstr(p + tl, from)) {
		assert_true(strlen(s) - fl + tl < size);
		memmove(p + tl, p + fl, strlen(p + fl) + 1);
		memcpy(p, to, tl);
	}
}

/* A dashboard expression with its template variables set: our tenant, every node and tool. */
static void expand(char *dst, size_t size, const char *expr)
{
	snprintf(dst, size, "%s", expr);
	replace_all(dst, size, "$__rate_interval", "1m");
	replace_all(dst, size, "$instance", ".*");
	replace_all(dst, size, "$tool", ".*");
	replace_all(dst, size, "$tenant", token);
}

static unsigned int walk_panels(json_t *panels, unsigned int *heatmaps)
{
	char expr[4096];
	unsigned int n = 0;
	json_t *p, *t, *res;
	size_t i, j;

	json_array_foreach(panels, i, p) {
		n += walk_panels(json_object_get(p, "panels"), heatmaps);
		json_array_foreach(json_object_get(p, "targets"), j, t) {
			const char *title = json_string_value(json_object_get(p, "title")) ?: "?";
			const char *e = json_string_value(json_object_get(t, "expr"));

			if (!e)
				fail_msg("panel %s: a target without expr", title);
			expand(expr, sizeof(expr), e);
			res = query("%s", expr);
			if (!json_array_size(res))
				fail_msg("panel %s: no data for %s", title, expr);
			json_decref(res);
			if (!strcmp(json_string_value(json_object_get(p, "type")) ?: "", "heatmap")) {
				assert_string_equal(json_string_value(json_object_get(t, "format")) ?: "", "heatmap");
				assert_non_null(strstr(e, "_bucket{"));
				(*heatmaps)++;
			}
			n++;
		}
	}
	return n;
}

/* Every expression of the dashboard (panels, template variables) evaluates, with data. */
static void check_dashboard(void)
{
	char sel[2048], label[64], expr[4096], *comma;
	unsigned int n, heatmaps = 0, vars = 0;
	json_error_t jerr;
	json_t *d, *v, *res;
	size_t i;

	d = json_load_file(st.dashboard, JSON_REJECT_DUPLICATES, &jerr);
	if (!d)
		fail_msg("%s: %s (line %d)", st.dashboard, jerr.text, jerr.line);
	n = walk_panels(json_object_get(d, "panels"), &heatmaps);
	json_array_foreach(jget(d, "templating.list"), i, v) {
		const char *q = json_string_value(jget(v, "query.query"));

		if (!q || strncmp(q, "label_values(", 13))
			continue;
		/* label_values(SELECTOR, LABEL): the values are those of count by (LABEL) (SELECTOR) */
		snprintf(sel, sizeof(sel), "%s", q + 13);
		comma = strrchr(sel, ',');
		if (!comma || sel[strlen(sel) - 1] != ')')
			fail_msg("variable query %s", q);
		sel[strlen(sel) - 1] = '\0';
		*comma = '\0';
		snprintf(label, sizeof(label), "%s", comma + 1 + strspn(comma + 1, " "));
		expand(expr, sizeof(expr), sel);
		res = query("count by (%s) (%s)", label, expr);
		if (!json_array_size(res))
			fail_msg("variable %s: no values for %s", json_string_value(json_object_get(v, "name")), q);
		json_decref(res);
		vars++;
	}
	json_decref(d);
	integ_note("dashboard: %u panel expressions (%u heatmaps) and %u variable queries with data", n, heatmaps,
		   vars);
	assert_true(heatmaps >= 4);
	assert_true(vars >= 3);
}

/* Prometheus keeps exemplars of the peak buckets: effect ids, and nothing else. */
static void check_exemplars(const char *const ids[], size_t n_ids, double t_start)
{
	char expr[256], enc[1024], path[1200];
	json_t *data, *s, *x;
	size_t i, j, k, found = 0;

	snprintf(expr, sizeof(expr), "burstmeter_effect_peak_cpu_cores_bucket{tenant=\"%s\"}", token);
	urlenc(enc, sizeof(enc), expr);
	snprintf(path, sizeof(path), "/api/v1/query_exemplars?query=%s&start=%.3f&end=%.3f", enc, t_start - 60,
		 t_start + 3600);
	data = prom_api(path);
	json_array_foreach(data, i, s) {
		json_array_foreach(json_object_get(s, "exemplars"), j, x) {
			json_t *labels = json_object_get(x, "labels");
			const char *id = json_string_value(json_object_get(labels, "effect_id"));

			if (json_object_size(labels) != 1 || !id)
				fail_msg("an exemplar with other labels than effect_id");
			for (k = 0; k < n_ids; k++)
				found += !strcmp(id, ids[k]);
		}
	}
	json_decref(data);
	integ_note("exemplars: %zu carry the ids of our effects", found);
	assert_true(found >= 1);
}

/* ------------------------------------------------------------------ tests */

/*
 * Bursty effects through the agent, scraped every second: what Prometheus
 * computes from the histograms is the burst, not the average.
 */
static void test_prometheus_scrapes_bursts(void **state)
{
	char ids[4][64], sel[256];
	const char *const idp[4] = { ids[0], ids[1], ids[2], ids[3] };
	const char *spike_count[3] = { "3", "10", "20" };
	long long windows = 0;
	double window_s = 0, cpu_s = 0, q99, q99_rule, mean, count, sum, n0, t_start;
	uint64_t t0 = now_ns();
	json_t *e;
	int i;

	free_ports(&st.metrics_port, &prom.port);
	/* Prometheus first: its target discovery takes ~5 s, while the agent loads the meter */
	prom_start(st.rules, st.metrics_port);
	agent_start();
	integ_note("agent up %.1f s after the start", (double)(now_ns() - t0) / 1e9);
	/* a first scrape, before anything ended: the node-wide series only */
	wait_value(1, 15000, "up{job=\"burstmeter\"}");
	integ_note("first scrape %.1f s after the start", (double)(now_ns() - t0) / 1e9);
	t_start = (double)time(NULL);

	/*
	 * Three bursty effects (40 ms at one core every 200 ms: a fifth of a
	 * core on average), ending 0.6, 2 and 4 s in, so the histograms grow
	 * over several scrapes; and a fork bomb under pids_limit 16, killed.
	 */
	snprintf(ids[3], sizeof(ids[3]), "%s-fork", token);
	launch(ids[3], json_pack("{s:i}", "pids_limit", 16), "bm-forkbomb", "5", NULL);
	for (i = 0; i < 3; i++) {
		snprintf(ids[i], sizeof(ids[i]), "%s-spike%d", token, i);
		launch(ids[i], NULL, "bm-spike", "40", "200", spike_count[i], NULL);
	}
	integ_note("launched %.1f s after the start", (double)(now_ns() - t0) / 1e9);
	for (i = 0; i < 3; i++) {
		e = wait_final(ids[i], 20000);
		integ_note("%s ended at %.1f s after %.2f s", ids[i], (double)(now_ns() - t0) / 1e9,
			   jnum(e, "outcome.wall_seconds"));
		if (strcmp(jstr(e, "state"), "succeeded"))
			fail_msg("%s ended %s (%s)", ids[i], jstr(e, "state"), jstr(e, "outcome.termination.reason"));
		windows += jint(e, "outcome.totals.windows");
		window_s = jnum(e, "outcome.window_ms") / 1e3;
		cpu_s += jnum(e, "outcome.totals.cpu_seconds");
		json_decref(e);
	}
	e = wait_final(ids[3], 20000);
	integ_note("%s ended at %.1f s after %.2f s", ids[3], (double)(now_ns() - t0) / 1e9,
		   jnum(e, "outcome.wall_seconds"));
	assert_string_equal(jstr(e, "outcome.termination.reason"), "pids_ceiling");
	assert_true(json_array_size(jget(e, "outcome.actions")) >= 1);
	json_decref(e);
	integ_note("effects ended %.1f s after the start: %lld spike windows, %.3f CPU s",
		   (double)(now_ns() - t0) / 1e9, windows, cpu_s);

	/* Prometheus has all four, then two more scrapes */
	snprintf(sel, sizeof(sel), "tenant=\"%s\"", token);
	wait_value(4, 15000, "sum(burstmeter_effects_total{%s})", sel);
	n0 = value("count_over_time(up{job=\"burstmeter\"}[1h])");
	wait_value(n0 + 2, 10000, "count_over_time(up{job=\"burstmeter\"}[1h])");

	/* the counters: three completed spikes, one fork bomb killed at its ceiling, by the ladder */
	assert_between(value("sum(burstmeter_effects_total{%s,tool=\"bm-spike\",reason=\"completed\"})", sel), 3, 3);
	assert_between(value("sum(burstmeter_effects_total{%s,tool=\"bm-forkbomb\",reason=\"pids_ceiling\"})", sel),
		       1, 1);
	assert_true(value("sum(burstmeter_actions_total{%s,tool=\"bm-forkbomb\"})", sel) >= 1);
	assert_true(value("sum(burstmeter_actions_total{%s,step=\"kill\",reason=\"pids_ceiling\"})", sel) >= 1);
	assert_between(value("sum(burstmeter_effects_running)"), 0, 0);
	assert_between(value("sum(burstmeter_effects_queued)"), 0, 0);
	assert_between(value("sum(burstmeter_meter_lost_records_total)"), 0, 0);

	/*
	 * The burst: every window of the spikes is in the histogram (to the
	 * outcomes' count), a fifth of them at a full core. The 0.99 quantile is
	 * at least half a core; the mean (_sum / _count) is about a fifth.
	 */
	count = value("sum(burstmeter_window_cpu_cores_count{%s,tool=\"bm-spike\"})", sel);
	sum = value("sum(burstmeter_window_cpu_cores_sum{%s,tool=\"bm-spike\"})", sel);
	assert_between(count, (double)windows, (double)windows);
	mean = sum / count;
	q99 = value("histogram_quantile(0.99, sum by (le) (burstmeter_window_cpu_cores_bucket{%s,tool=\"bm-spike\"}))",
		    sel);
	integ_note("per-window CPU of the spikes: p99 %.3f cores, mean %.3f cores (%.0f windows, %.3f CPU s)", q99,
		   mean, count, cpu_s);
	assert_true(q99 >= 0.5);
	assert_between(mean, 0.05, 0.4);
	assert_true(q99 >= 2 * mean);
	/* _sum is the CPU time over the window length: the outcomes' CPU seconds / window */
	assert_between(sum * window_s, cpu_s * 0.9 - 0.01, cpu_s * 1.1 + 0.01);
	/* over the last minute, from the counters' increase (the later spikes) */
	assert_true(value("histogram_quantile(0.99, sum by (le) (increase(burstmeter_window_cpu_cores_bucket{%s,"
			  "tool=\"bm-spike\"}[1m])))", sel) >= 0.5);

	/* the recording rules: the tenant's p99 over 5m shows the burst too */
	q99_rule = wait_value(0.5, 10000, "tenant:burstmeter_window_cpu_cores:p99_5m{%s}", sel);
	integ_note("tenant:burstmeter_window_cpu_cores:p99_5m = %.3f cores", q99_rule);
	check_rules();
	check_exemplars(idp, 4, t_start);
	check_dashboard();
	check_direct_scrape(idp, 4);
	integ_note("Prometheus's scrape of /metrics: %.1f ms, %.0f samples",
		   value("scrape_duration_seconds{job=\"burstmeter\"}") * 1e3,
		   value("scrape_samples_scraped{job=\"burstmeter\"}"));

	/* the end: both stop cleanly, the agent removes its pins, nothing is left */
	stop_child(&prom.pid, SIGTERM, 10000);
	agent_finish();
	assert_clean(*state);
	integ_note("end to end in %.1f s", (double)(now_ns() - t0) / 1e9);
}

/* Every panel expression (rows' panels too) into f as a recording rule; returns n + how many. */
static size_t write_expr_rules(FILE *f, json_t *panels, size_t n)
{
	char expr[4096], *q;
	json_t *p, *t, *js;
	size_t i, j;

	json_array_foreach(panels, i, p) {
		n = write_expr_rules(f, json_object_get(p, "panels"), n);
		json_array_foreach(json_object_get(p, "targets"), j, t) {
			expand(expr, sizeof(expr), json_string_value(json_object_get(t, "expr")) ?: "");
			/* a JSON string is a YAML double-quoted scalar */
			js = json_string(expr);
			q = json_dumps(js, JSON_ENCODE_ANY);
			assert_non_null(q);
			json_decref(js);
			fprintf(f, "      - record: dashboard:expr_%zu\n        expr: %s\n", n++, q);
			free(q);
		}
	}
	return n;
}

/*
 * The rules and the dashboard by promtool alone: `check rules`, every
 * dashboard expression as a recording rule, and unit tests of the alerts
 * (which fire on what, after how long) on synthetic series.
 */
static void test_prometheus_rules_and_dashboard_promtool(void **state)
{
	static const char *const series[][2] = {
		/* tenant "burst": 100 windows a minute, all between 4 and 8 cores */
		{ "burstmeter_window_cpu_cores_bucket{tenant=\"burst\",tool=\"x\",le=\"4\"}", "0+0x40" },
		{ "burstmeter_window_cpu_cores_bucket{tenant=\"burst\",tool=\"x\",le=\"8\"}", "0+100x40" },
		{ "burstmeter_window_cpu_cores_bucket{tenant=\"burst\",tool=\"x\",le=\"+Inf\"}", "0+100x40" },
		/* tenant "calm": 100 windows a minute, all below a quarter core */
		{ "burstmeter_window_cpu_cores_bucket{tenant=\"calm\",tool=\"x\",le=\"0.25\"}", "0+100x40" },
		{ "burstmeter_window_cpu_cores_bucket{tenant=\"calm\",tool=\"x\",le=\"+Inf\"}", "0+100x40" },
		/* "burst" killed at a ceiling twice a minute, "calm" once in 40 minutes */
		{ "burstmeter_effects_total{tenant=\"burst\",tool=\"x\",reason=\"memory_ceiling\"}", "0+2x40" },
		{ "burstmeter_effects_total{tenant=\"calm\",tool=\"x\",reason=\"pids_ceiling\"}", "0 0 0 1+0x38" },
		{ "burstmeter_effects_total{tenant=\"calm\",tool=\"x\",reason=\"completed\"}", "0+50x40" },
		/* five records lost at 3 min; the agent down from 20 min */
		{ "burstmeter_meter_lost_records_total{job=\"burstmeter\",instance=\"n1\"}", "0 0 0 5+0x38" },
		{ "up{job=\"burstmeter\",instance=\"n1\"}", "1+0x19 0+0x21" },
	};
	static const char *const checks =
		/* the p99 rule of "burst" is in (4, 8]; of "calm" below 0.25 */
		"      - expr: tenant:burstmeter_window_cpu_cores:p99_5m > bool 4\n"
		"        eval_time: 10m\n"
		"        exp_samples:\n"
		"          - labels: '{tenant=\"burst\"}'\n            value: 1\n"
		"          - labels: '{tenant=\"calm\"}'\n            value: 0\n"
		"      - expr: round(tenant:burstmeter_ceiling_kills:rate5m{tenant=\"burst\"} * 60)\n"
		"        eval_time: 10m\n"
		"        exp_samples:\n"
		"          - labels: '{tenant=\"burst\",reason=\"memory_ceiling\"}'\n            value: 2\n"
		/* CPU bursts: pending before 10 min, firing after, only for "burst" */
		"      - expr: ALERTS{alertname=\"BurstmeterTenantCPUBursts\"}\n"
		"        eval_time: 6m\n"
		"        exp_samples:\n"
		"          - labels: '{__name__=\"ALERTS\",alertname=\"BurstmeterTenantCPUBursts\","
		"alertstate=\"pending\",severity=\"warning\",tenant=\"burst\"}'\n            value: 1\n"
		"      - expr: ALERTS{alertname=\"BurstmeterTenantCPUBursts\"}\n"
		"        eval_time: 15m\n"
		"        exp_samples:\n"
		"          - labels: '{__name__=\"ALERTS\",alertname=\"BurstmeterTenantCPUBursts\","
		"alertstate=\"firing\",severity=\"warning\",tenant=\"burst\"}'\n            value: 1\n"
		/* ceiling kills: "burst" (30 in 15 min), not "calm" (one) */
		"      - expr: ALERTS{alertname=\"BurstmeterCeilingKills\",alertstate=\"firing\"}\n"
		"        eval_time: 16m\n"
		"        exp_samples:\n"
		"          - labels: '{__name__=\"ALERTS\",alertname=\"BurstmeterCeilingKills\","
		"alertstate=\"firing\",severity=\"warning\",tenant=\"burst\"}'\n            value: 1\n"
		/* lost records: firing at 5 min, over 10 min after the loss */
		"      - expr: ALERTS{alertname=\"BurstmeterLostRecords\",alertstate=\"firing\"}\n"
		"        eval_time: 5m\n"
		"        exp_samples:\n"
		"          - labels: '{__name__=\"ALERTS\",alertname=\"BurstmeterLostRecords\","
		"alertstate=\"firing\",severity=\"warning\",instance=\"n1\",job=\"burstmeter\"}'\n"
		"            value: 1\n"
		"      - expr: ALERTS{alertname=\"BurstmeterLostRecords\",alertstate=\"firing\"}\n"
		"        eval_time: 15m\n"
		"        exp_samples: []\n"
		/* the agent down: quiet while up, firing 2 min after it went down */
		"      - expr: ALERTS{alertname=\"BurstmeterAgentDown\"}\n"
		"        eval_time: 19m\n"
		"        exp_samples: []\n"
		"      - expr: ALERTS{alertname=\"BurstmeterAgentDown\",alertstate=\"firing\"}\n"
		"        eval_time: 23m\n"
		"        exp_samples:\n"
		"          - labels: '{__name__=\"ALERTS\",alertname=\"BurstmeterAgentDown\","
		"alertstate=\"firing\",severity=\"critical\",instance=\"n1\",job=\"burstmeter\"}'\n"
		"            value: 1\n";
	char file[PATH_MAX + 32];
	json_error_t jerr;
	json_t *d, *v;
	FILE *f;
	size_t i;

	(void)state;
	if (run_sh("%s check rules %s", promtool, st.rules))
		fail_msg("promtool check rules refused %s", st.rules);

	/* the dashboard: schema, variables, and every expression through promtool as a rule */
	d = json_load_file(st.dashboard, JSON_REJECT_DUPLICATES, &jerr);
	if (!d)
		fail_msg("%s: %s (line %d)", st.dashboard, jerr.text, jerr.line);
	assert_true(json_integer_value(json_object_get(d, "schemaVersion")) >= 36);
	{
		bool ds = false, tenant = false, tool = false;

		json_array_foreach(jget(d, "templating.list"), i, v) {
			const char *name = json_string_value(json_object_get(v, "name")) ?: "";
			const char *type = json_string_value(json_object_get(v, "type")) ?: "";
			const char *q = json_string_value(jget(v, "query.query")) ?: "";

			ds |= !strcmp(name, "datasource") && !strcmp(type, "datasource");
			tenant |= !strcmp(name, "tenant") && !strncmp(q, "label_values(", 13);
			tool |= !strcmp(name, "tool") && !strncmp(q, "label_values(", 13);
		}
		assert_true(ds && tenant && tool);
	}
	snprintf(file, sizeof(file), "%s/dashboard-exprs.yaml", ag.dir);
	f = fopen(file, "we");
	assert_non_null(f);
	fprintf(f, "groups:\n  - name: dashboard\n    rules:\n");
	assert_true(write_expr_rules(f, json_object_get(d, "panels"), 0) >= 10);
	assert_int_equal(fclose(f), 0);
	json_decref(d);
	if (run_sh("%s check rules %s", promtool, file))
		fail_msg("promtool refused a dashboard expression (%s)", file);

	/* the alerts, on synthetic series */
	snprintf(file, sizeof(file), "%s/rules-test.yaml", ag.dir);
	f = fopen(file, "we");
	assert_non_null(f);
	fprintf(f, "rule_files:\n  - %s\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n",
		st.rules);
	for (i = 0; i < sizeof(series) / sizeof(series[0]); i++)
		fprintf(f, "      - series: '%s'\n        values: '%s'\n", series[i][0], series[i][1]);
	fprintf(f, "    promql_expr_test:\n%s", checks);
	assert_int_equal(fclose(f), 0);
	if (run_sh("%s test rules %s", promtool, file)) {
		dump_file("rules-test", file);
		fail_msg("promtool test rules failed on %s", st.rules);
	}
}

/* burstmeter_meter_reads_total, straight from the agent. */
static double meter_reads(void)
{
	char *text, *p;
	double v = -1;

	assert_int_equal(http_get(st.metrics_port, "/metrics", NULL, &text, NULL, 0), 200);
	p = strstr(text, "\nburstmeter_meter_reads_total ");
	if (!p || sscanf(p + 30, "%lf", &v) != 1)
		fail_msg("no burstmeter_meter_reads_total in /metrics");
	free(text);
	return v;
}

/*
 * The agent reads a meter only when the kernel says it moved (bm_marks.moved):
 * six sleeping effects cost no reads at all, where one read each per
 * 40 ms was 150 a second; a spiking one (5 ms every 50 ms) is read.
 */
static void test_prometheus_idle_effects_are_not_read(void **state)
{
	double r0, r1, r2;
	char id[7][64];
	json_t *e;
	int i;

	(void)state;
	free_ports(&st.metrics_port, &prom.port);
	agent_start();
	for (i = 0; i < 6; i++) {
		snprintf(id[i], sizeof(id[i]), "%s-sleep%d", token, i);
		launch(id[i], NULL, "bm-sleeper", "3000", NULL);
	}
	/* past their execs and first reads */
	usleep(500 * 1000);
	r0 = meter_reads();
	usleep(1000 * 1000);
	r1 = meter_reads();
	snprintf(id[6], sizeof(id[6]), "%s-spike", token);
	launch(id[6], NULL, "bm-spike", "5", "50", "24", NULL);
	usleep(1000 * 1000);
	r2 = meter_reads();
	integ_note("meter reads in 1 s: %.0f with 6 sleepers, %.0f with a spiking effect beside them", r1 - r0,
		   r2 - r1);
	assert_true(r1 - r0 <= 1);
	assert_true(r2 - r1 >= 10 && r2 - r1 <= 80);
	for (i = 0; i < 7; i++) {
		e = wait_final(id[i], 10000);
		assert_string_equal(jstr(e, "state"), "succeeded");
		json_decref(e);
	}
	agent_finish();
}

/* Does the label set of the sample at p (up to its "} ") hold needle? */
static bool labels_have(const char *p, const char *sp, const char *needle)
{
	const char *q = strstr(p, needle);

	return q && q < sp;
}

/* The sum of name{...} samples whose labels hold both needles, from /metrics text; *n of them. */
static double sum_of(const char *text, const char *name, const char *needle, const char *also,
		     int *n)
{
	size_t len = strlen(name);
	const char *p, *sp;
	double v, sum = 0;

	*n = 0;
	for (p = strstr(text, name); p; p = strstr(p + len, name)) {
		if ((p != text && p[-1] != '\n') || p[len] != '{')
			continue;
		sp = strstr(p, "} ");
		if (!sp || (strchr(p, '\n') && sp > strchr(p, '\n')) || !labels_have(p, sp, needle) ||
		    !labels_have(p, sp, also) || sscanf(sp + 2, "%lf", &v) != 1)
			continue;
		sum += v;
		(*n)++;
	}
	return sum;
}

/*
 * Real I/O in the window histograms: an O_DIRECT writer (bm-io steady,
 * 32 MiB under sandbox.io_write_bps 32Mi, about 1 s) launched through the
 * agent in a directory on a disk; once it is done, /metrics holds windows
 * of it for its tenant: _count > 0, _sum > 0, and windows above 1 MiB/s;
 * the tenant's I/O counter holds the 32 MiB it wrote.
 */
static void test_prometheus_io_windows(void **state)
{
	const char *env = getenv("BM_IO_DIR");
	char dir[PATH_MAX], file[PATH_MAX + 16], tr[PATH_MAX + 16], id[64], sel[96], *text;
	const char *fam = "burstmeter_window_io_write_bytes_per_second";
	double count, sum, low, tenant_io;
	char name[128];
	struct stat sb;
	json_t *req, *e = NULL;
	int n, k;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/bm-prom.XXXXXX", env && *env ? env : "/var/tmp");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(stat(dir, &sb), 0);
	if (!major(sb.st_dev)) {
		rmdir(dir);
		fail_msg("%s is on no block device: set BM_IO_DIR", dir);
	}
	/* the effect runs as its tenant's uid */
	assert_int_equal(chmod(dir, 0777), 0);
	snprintf(file, sizeof(file), "%s/data", dir);
	snprintf(tr, sizeof(tr), "%s/truth", dir);
	free_ports(&st.metrics_port, &prom.port);
	agent_start();
	snprintf(id, sizeof(id), "%s-io", token);
	req = launch_req(id, "bm-io", "steady", file, "32", tr, NULL);
	json_object_set_new(req, "cwd", json_string(dir));
	json_object_set_new(req, "sandbox", json_pack("{s:s}", "io_write_bps", "32Mi"));
	assert_int_equal(call("POST", "/v1/effects", req, &e), 201);
	json_decref(e);
	e = wait_final(id, 30000);
	assert_string_equal(jstr(e, "state"), "succeeded");
	json_decref(e);
	assert_int_equal(http_get(st.metrics_port, "/metrics", NULL, &text, NULL, 0), 200);
	snprintf(sel, sizeof(sel), "tenant=\"%s\"", token);
	snprintf(name, sizeof(name), "%s_count", fam);
	count = sum_of(text, name, sel, sel, &n);
	snprintf(name, sizeof(name), "%s_sum", fam);
	sum = sum_of(text, name, sel, sel, &k);
	snprintf(name, sizeof(name), "%s_bucket", fam);
	/* the windows at or below 1 MiB/s (2^20, a bound of the family): the rest wrote */
	low = sum_of(text, name, sel, "le=\"1048576\"", &k);
	/* and the tenant's I/O counter: every byte it wrote */
	tenant_io = sum_of(text, "burstmeter_tenant_io_bytes_total", sel, sel, &k);
	integ_note("/metrics: %s_count %.0f, _sum %.0f, %.0f windows at or below 2^20 B/s (%d series); "
		   "tenant_io_bytes_total %.0f", fam, count, sum, low, n, tenant_io);
	free(text);
	unlink(file);
	unlink(tr);
	rmdir(dir);
	assert_true(count > 0);
	assert_true(sum > 0);
	assert_true(n > 0);
	assert_int_equal(k, n);	/* a bucket of 2^20 in each series */
	assert_true(count - low > 0);
	assert_between(tenant_io, 32 * 1024 * 1024, 33 * 1024 * 1024);
	agent_finish();
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_prometheus_rules_and_dashboard_promtool, setup_stack,
						teardown_stack),
		cmocka_unit_test_setup_teardown(test_prometheus_scrapes_bursts, setup_stack, teardown_stack),
		cmocka_unit_test_setup_teardown(test_prometheus_idle_effects_are_not_read, setup_stack,
						teardown_stack),
		cmocka_unit_test_setup_teardown(test_prometheus_io_windows, setup_stack, teardown_stack),
	};
	const char *ci = getenv("CI");
	char rules[PATH_MAX];
	size_t n;
	int rc = runner_init("test_prometheus");

	if (rc)
		return rc;
	prometheus = getenv("BM_PROMETHEUS") && *getenv("BM_PROMETHEUS") ? getenv("BM_PROMETHEUS")
									    : "/usr/bin/prometheus";
	promtool = getenv("BM_PROMTOOL") && *getenv("BM_PROMTOOL") ? getenv("BM_PROMTOOL") : "/usr/bin/promtool";
	python = getenv("BM_PYTHON") && *getenv("BM_PYTHON") ? getenv("BM_PYTHON") : "python3";
	snprintf(checker, sizeof(checker), "%s",
		 getenv("BM_CHECK_METRICS") && *getenv("BM_CHECK_METRICS") ? getenv("BM_CHECK_METRICS")
									   : "tests/unit/check_metrics.py");
	snprintf(rules, sizeof(rules), "%s/rules.yaml", dashboards_dir());
	if (access(prometheus, X_OK) || access(promtool, X_OK) || access(rules, R_OK)) {
		/* the VM guest carries the binaries and workloads, not Prometheus nor the tree */
		if (getenv("BM_VM")) {
			printf("# test_prometheus: left out in the VM: no %s or no %s here\n", prometheus, rules);
			return 0;
		}
		if (ci && !strcmp(ci, "true")) {
			fprintf(stderr, "test_prometheus: %s, %s or %s is missing, and CI=true (tools/deps.sh test)\n",
				prometheus, promtool, rules);
			return 1;
		}
		printf("# test_prometheus: skipped: %s, %s or %s is missing (tools/deps.sh test installs "
		       "prometheus)\n", prometheus, promtool, rules);
		return 77;
	}
	n = integ_filter(tests, sizeof(tests) / sizeof(tests[0]));
	return _cmocka_run_group_tests("prometheus", tests, n, NULL, NULL);
}
