// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/agent/export.h, the acceptance test of its cardinality: 5,000 effects with
 * distinct ids, 50 tool kinds and 5 tenants, under max_tenants 3 and
 * max_tools 20, render exactly the series bound documented in export.c,
 *
 *   634 * (max_tenants + 1) * (max_tools + 1) + 38 * (max_tenants + 1) + 11
 *     =  634 * 4 * 21 + 38 * 4 + 11  =  53,419,
 *
 * no more after 5,000 more effects of new tenants, tools and ids, and
 * the effect ids appear only as OpenMetrics exemplars, never as labels.
 *
 * The input is the worst case: every label value set is pushed past its
 * cap (tenants, tools; reasons past 16 and ladder steps past 8 with names
 * beyond the real ones), and every (tenant, tool) pair after folding gets
 * every dimension, every reason and every (step, reason) pair, and every
 * tenant a budget in each dimension, so each term of the bound is
 * reached. The render time is printed, not asserted (sanitizers and loaded
 * machines vary; the agent's scrape time is in the bench).
 */
#include <errno.h>
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

#define W_NS 10000000ULL	/* the default 10 ms window */
#define MAX_TENANTS 3
#define MAX_TOOLS 20
#define EFFECTS 5000
#define TOOLS 50
/* export.c's caps of the reason and step label values ("other" excluded) */
#define MAX_REASONS 16
#define MAX_STEPS 8

/* Distinct label values fed, each set past its cap. */
static const char *const tenants[] = { "acme", "globex", "initech", "umbrella", "hooli" };
#define TENANTS (sizeof(tenants) / sizeof(tenants[0]))
/* termination reasons: the ten of outcome.c, then more up to 20 */
static const char *const reasons[20] = {
	"completed", "failed", "signaled", "deadline", "memory_ceiling", "pids_ceiling",
	"cpu_ceiling", "net_ceiling", "cancelled", "meter_error", "reason-10", "reason-11",
	"reason-12", "reason-13", "reason-14", "reason-15", "reason-16", "reason-17", "reason-18",
	"reason-19",
};
/* ladder steps: the six of policy.c, then more up to 10 */
static const char *const steps[10] = { "throttle", "unthrottle", "freeze", "thaw", "cancel",
				       "kill", "step-6", "step-7", "step-8", "step-9" };

/* Exported buckets per dimension, +Inf included: export.c's fams[] (2^lo .. 2^hi, +Inf). */
static const struct {
	const char *unit;
	unsigned int buckets;
} dims[BM_DIM__MAX] = {
	[BM_DIM_CPU] = { "cpu_cores", 7 + 7 + 1 + 1 },
	[BM_DIM_NET] = { "net_tx_bytes_per_second", 36 - 10 + 1 + 1 },
	[BM_DIM_RUNQ] = { "runq_delay_seconds", 14 + 0 + 1 + 1 },
	[BM_DIM_IO_READ] = { "io_read_bytes_per_second", 36 - 10 + 1 + 1 },
	[BM_DIM_IO_WRITE] = { "io_write_bytes_per_second", 36 - 10 + 1 + 1 },
	[BM_DIM_IO_OPS] = { "io_ops_per_second", 20 + 1 + 1 },
	[BM_DIM_DIRTY] = { "dirty_bytes_per_second", 36 - 10 + 1 + 1 },
	[BM_DIM_MEM] = { "memory_bytes", 40 - 12 + 1 + 1 },
	[BM_DIM_PIDS] = { "pids", 16 + 1 + 1 },
};

/* The documented bound: 634 * (max_tenants + 1) * (max_tools + 1) + 38 * (max_tenants + 1) + 11. */
static unsigned long bound(unsigned int max_tenants, unsigned int max_tools)
{
	return 634UL * (max_tenants + 1) * (max_tools + 1) + 38UL * (max_tenants + 1) + 11;
}

/*
 * Every tenant of a stream (prefix) with a budget in every dimension, as
 * before a scrape; reset: the scrape's first (the agent sets every tenant
 * it knows each time).
 */
static void feed_tenants(struct bm_export *e, const char *prefix, bool reset)
{
	char tenant[32];
	unsigned int i, d;

	if (reset)
		bm_export__tenants_reset(e);
	for (i = 0; i < TENANTS; i++) {
		struct bm_export_tenant v = { .running = i, .queued = 1, .throttled = i & 1 };

		for (d = 0; d < BM_BUD__MAX; d++) {
			v.used[d] = 1e3 * (i + d);
			v.remaining[d] = 0.5 - 0.25 * i;
			v.exhausted[d] = i > 1;
			v.exhaustions[d] = i;
		}
		for (d = 0; d <= BM_BUD__MAX; d++)
			v.refused[d] = v.throttles[d] = i + d;
		snprintf(tenant, sizeof(tenant), "%s%s", prefix, tenants[i]);
		bm_export__tenant(e, tenant, &v);
	}
}

/*
 * Effect `i` of a stream starting at `base`: tool i % 50, tenant (i / 50) % 5
 * and j = (i / 250) % 20, so each (tenant, tool) pair meets every j once
 * per 5,000 effects: it ends with reason j, after the ladder took every
 * step for reason j.
 */
static void feed(struct bm_export *e, unsigned int base, unsigned int n, const char *prefix)
{
	uint64_t h[BM_HIST_BUCKETS];
	char tool[32], tenant[32], id[48];
	unsigned int i, d, k, s;

	for (i = base; i < base + n; i++) {
		const char *reason = reasons[(i / 250) % 20];

		snprintf(tool, sizeof(tool), "%stool-%02u", prefix, i % TOOLS);
		snprintf(tenant, sizeof(tenant), "%s%s", prefix, tenants[(i / TOOLS) % TENANTS]);
		snprintf(id, sizeof(id), "eff-%s%05u", prefix, i);
		for (d = 0; d < BM_DIM__MAX; d++) {
			memset(h, 0, sizeof(h));
			for (k = 0; k < 5; k++)
				h[(i * 7 + d * 5 + k * 3) % 40] += k + 1;
			bm_export__windows(e, tenant, tool, d, h, W_NS, 1e6 * (i % 97));
			bm_export__peak(e, tenant, tool, d, (double)(i % 1000) * (d + 1) * 0.37, id);
		}
		for (s = 0; s < 10; s++)
			bm_export__action(e, tenant, tool, steps[s], reason);
		bm_export__ended(e, tenant, tool, reason);
	}
}

static char *render(struct bm_export *e, bool om, double *ms)
{
	struct timespec a, b;
	size_t len;
	char *out;

	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(bm_export__render(e, om, &out, &len), 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	*ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	assert_int_equal(strlen(out), len);
	return out;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct census {
	unsigned long series, exemplars;
	unsigned long hist[2][BM_DIM__MAX];	/* [peak][dim]: _bucket, _sum and _count */
	unsigned long effects, actions, tenant, node;
};

/*
 * Count the series of an exposition, each once (duplicates fail), by family;
 * check that no label set holds an effect id and, in OpenMetrics, that ids
 * appear only as exemplars of the peak histograms' buckets.
 */
static void census(char *text, bool om, struct census *c)
{
	char **keys = NULL, *line, *next, *ex, *sp, name[96];
	size_t n = 0, cap = 0, i;
	unsigned int d, p;

	memset(c, 0, sizeof(*c));
	for (line = text; *line; line = next) {
		next = strchr(line, '\n');
		assert_non_null(next);
		*next++ = '\0';
		if (*line == '#')
			continue;
		ex = strstr(line, " # {");
		if (ex) {
			assert_true(om);
			if (strncmp(ex, " # {effect_id=\"eff-", 19) || !strstr(line, "_effect_peak_") ||
			    !strstr(line, "_bucket{"))
				fail_msg("an exemplar that is not an effect id on a peak bucket: %s", line);
			*ex = '\0';
			c->exemplars++;
		}
		/* what is left is the series and its value: no effect id in it */
		if (strstr(line, "eff-") || strstr(line, "effect_id"))
			fail_msg("an effect id outside an exemplar: %s", line);
		sp = strrchr(line, ' ');
		assert_non_null(sp);
		*sp = '\0';
		if (n == cap) {
			cap = cap ? 2 * cap : 65536;
			keys = realloc(keys, cap * sizeof(*keys));
			assert_non_null(keys);
		}
		keys[n++] = line;
		for (p = 0; p < 2; p++)
			for (d = 0; d < BM_DIM__MAX; d++) {
				snprintf(name, sizeof(name), "burstmeter_%s_%s_", p ? "effect_peak" : "window",
					 dims[d].unit);
				if (!strncmp(line, name, strlen(name)))
					c->hist[p][d]++;
			}
		c->effects += !strncmp(line, "burstmeter_effects_total{", 25);
		c->actions += !strncmp(line, "burstmeter_actions_total{", 25);
		c->tenant += !strncmp(line, "burstmeter_tenant_", 18);
		c->node += !strchr(line, '{');
	}
	qsort(keys, n, sizeof(*keys), cmp_str);
	for (i = 1; i < n; i++)
		if (!strcmp(keys[i - 1], keys[i]))
			fail_msg("series %s appears twice", keys[i]);
	c->series = n;
	free(keys);
}

/* Every term of the bound, family by family, and the total. */
static void check_census(const struct census *c, bool om)
{
	const unsigned long pairs = (MAX_TENANTS + 1) * (MAX_TOOLS + 1);
	unsigned int d, p;

	for (p = 0; p < 2; p++)
		for (d = 0; d < BM_DIM__MAX; d++)
			if (c->hist[p][d] != pairs * (dims[d].buckets + 2))
				fail_msg("%s %s: %lu series, want %lu pairs x (%u buckets + _sum + _count)",
					 p ? "peak" : "window", dims[d].unit, c->hist[p][d], pairs,
					 dims[d].buckets);
	assert_int_equal(c->effects, pairs * (MAX_REASONS + 1));
	assert_int_equal(c->actions, pairs * (MAX_STEPS + 1) * (MAX_REASONS + 1));
	assert_int_equal(c->tenant, 38 * (MAX_TENANTS + 1));
	assert_int_equal(c->node, 11);
	assert_int_equal(c->series, bound(MAX_TENANTS, MAX_TOOLS));
	/* at most one exemplar per peak bucket, and none in 0.0.4 text */
	if (om)
		assert_true(c->exemplars > 0 && c->exemplars <= pairs * 214);
	else
		assert_int_equal(c->exemplars, 0);
}

/* Directory of this file, where check_metrics.py lives (builds run from the tree's top). */
static const char *checker(void)
{
	static char path[512];
	const char *env = getenv("BM_CHECK_METRICS"), *slash = strrchr(__FILE__, '/');

	if (env)
		return env;
	snprintf(path, sizeof(path), "%.*scheck_metrics.py", slash ? (int)(slash - __FILE__ + 1) : 0,
		 __FILE__);
	return path;
}

/* check_metrics.py on the text, then (0.0.4 only) promtool check metrics when installed. */
static void check_text(const char *text, bool om)
{
	char file[] = "/tmp/bm-card-XXXXXX", cmd[1024];
	const char *py = getenv("BM_PYTHON") ? getenv("BM_PYTHON") : "python3";
	int fd = mkstemp(file), rc;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	snprintf(cmd, sizeof(cmd), "%s %s %s %s", py, checker(), file, om ? "openmetrics" : "prometheus");
	rc = system(cmd);
	if (rc == 0 && !om && system("command -v promtool >/dev/null 2>&1") == 0) {
		snprintf(cmd, sizeof(cmd), "promtool check metrics < %s", file);
		rc = system(cmd);
	}
	unlink(file);
	if (rc)
		fail_msg("%s rejected the %s exposition (status %#x)", cmd, om ? "OpenMetrics" : "0.0.4", rc);
}

static void test_export_cardinality_bound(void **state)
{
	struct bm_export *e = bm_export__new(MAX_TENANTS, MAX_TOOLS);
	double ms, first[2], best[2];
	struct census c;
	size_t bytes;
	char *out;
	int om, r;

	assert_non_null(e);
	feed(e, 0, EFFECTS, "");
	feed_tenants(e, "", true);
	for (om = 0; om < 2; om++) {
		best[om] = INFINITY;
		for (r = 0; r < 5; r++) {
			out = render(e, om, &ms);
			first[om] = r ? first[om] : ms;
			best[om] = ms < best[om] ? ms : best[om];
			if (r < 4)
				free(out);
		}
		/* folded: tool-00..19 kept, tool-20..49 in "other"; three tenants kept */
		assert_non_null(strstr(out, "tool=\"tool-19\""));
		assert_null(strstr(out, "tool=\"tool-20\""));
		assert_non_null(strstr(out, "tool=\"other\""));
		assert_non_null(strstr(out, "tenant=\"initech\""));
		assert_null(strstr(out, "tenant=\"umbrella\""));
		assert_null(strstr(out, "tenant=\"hooli\""));
		assert_non_null(strstr(out, "tenant=\"other\""));
		assert_non_null(strstr(out, "reason=\"other\""));
		assert_non_null(strstr(out, "step=\"other\""));
		if (om)
			assert_non_null(strstr(out, "# {effect_id=\"eff-"));
		check_text(out, om);
		printf("# %s: %d effects, %d tools, %zu tenants, caps %d/%d: "
		       "bound 634 x %d x %d + 36 x %d + 11 = %lu\n",
		       om ? "openmetrics" : "prometheus 0.0.4", EFFECTS, TOOLS, TENANTS,
		       MAX_TENANTS, MAX_TOOLS, MAX_TENANTS + 1, MAX_TOOLS + 1, MAX_TENANTS + 1,
		       bound(MAX_TENANTS, MAX_TOOLS));
		bytes = strlen(out);
		census(out, om, &c);	/* cuts out into lines */
		check_census(&c, om);
		printf("# %s: %lu series (%lu exemplars), %zu bytes; render first %.2f ms, best of 5 %.2f ms\n",
		       om ? "openmetrics" : "prometheus 0.0.4", c.series, c.exemplars, bytes, first[om],
		       best[om]);
		free(out);
	}
	/*
	 * 5,000 more effects, every label value new (tenants, tools, ids): all
	 * fold into "other", and the count does not move.
	 */
	feed(e, EFFECTS, EFFECTS, "new-");
	feed_tenants(e, "", true);
	feed_tenants(e, "new-", false);
	for (om = 0; om < 2; om++) {
		out = render(e, om, &ms);
		assert_null(strstr(out, "new-tool"));
		assert_null(strstr(out, "tenant=\"new-"));
		census(out, om, &c);
		check_census(&c, om);
		printf("# after 10,000 effects: %s %lu series, render %.2f ms\n",
		       om ? "openmetrics" : "prometheus 0.0.4", c.series, ms);
		free(out);
	}
	bm_export__free(e);
}

/* The bound holds at other caps too: the smallest, where everything but the first pair folds. */
static void test_export_cardinality_smallest_caps(void **state)
{
	struct bm_export *e = bm_export__new(0, 0);
	struct census c;
	double ms;
	char *out;

	assert_non_null(e);
	feed(e, 0, EFFECTS, "");
	feed_tenants(e, "", true);
	out = render(e, false, &ms);
	/* with no slot, every value is "other": one pair */
	assert_null(strstr(out, "tenant=\"acme\""));
	census(out, false, &c);
	assert_int_equal(c.series, bound(0, 0));
	free(out);
	bm_export__free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_export_cardinality_bound),
		cmocka_unit_test(test_export_cardinality_smallest_caps),
	};

	return cmocka_run_group_tests_name("export_cardinality", tests, NULL, NULL);
}
