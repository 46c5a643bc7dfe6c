// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/cli/advise.h: a synthetic store (a real SQLite file of the agent's
 * schema, rows of known peaks), so that every percentile, ceiling count and
 * recommendation can be worked out by hand and compared exactly.
 */
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/store.h"
#include "cli/advise.h"
#include "cli/advise_cmd.h"

#define MIB (1024.0 * 1024.0)

struct fx {
	char root[64], dir[96];
	struct bm_store *st;
	unsigned int seq;
};

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(path);
}

/* One run's outcome: the fields advise reads, the rest of the contract left out. */
static json_t *outcome(double cpu, double mem, double pids, double net, double wall, double avg_cpu,
		       double avg_mem, int windows, const char *reason, json_t *limits)
{
	return json_pack("{s:s, s:f, s:o, s:{s:f, s:I, s:I, s:f}, s:{s:f, s:I}, s:{s:i}, s:{s:s, s:s}, s:[]}",
			 "schema", "burstmeter.outcome/v1", "wall_seconds", wall, "limits",
			 limits ? limits : json_pack("{s:n, s:n, s:n, s:n}", "cpu_cores", "memory_bytes",
						     "pids", "timeout_seconds"),
			 "peak", "cpu_cores", cpu, "memory_bytes", (json_int_t)mem, "pids", (json_int_t)pids,
			 "net_tx_bytes_per_s", net, "average", "cpu_cores", avg_cpu, "memory_bytes",
			 (json_int_t)avg_mem, "totals", "windows", windows, "termination", "reason", reason,
			 "by", "process", "actions");
}

/*
 * o with I/O: peaks of read and write (MiB/s), ops/s and dirtied (MiB/s), the
 * bytes it sent in all, its /tmp's peak (MiB; < 0: it had no /tmp of a size);
 * limits (may be NULL) and actions (may be NULL) over the outcome's.
 */
static json_t *with_io(json_t *o, double rd, double wr, double ops, double dirty, double net_total,
		       double storage, json_t *limits, json_t *actions)
{
	json_t *p = json_object_get(o, "peak");

	json_object_set_new(p, "io_read_bytes_per_s", json_real(rd * MIB));
	json_object_set_new(p, "io_write_bytes_per_s", json_real(wr * MIB));
	json_object_set_new(p, "io_ops_per_s", json_real(ops));
	json_object_set_new(p, "dirty_bytes_per_s", json_real(dirty * MIB));
	json_object_set_new(json_object_get(o, "totals"), "net_tx_bytes", json_integer((json_int_t)net_total));
	json_object_set_new(o, "storage", json_pack("{s:o}", "peak_bytes", storage < 0 ? json_null() :
						    json_integer((json_int_t)(storage * MIB))));
	if (limits)
		json_object_update(json_object_get(o, "limits"), limits);
	json_decref(limits);
	if (actions)
		json_object_set_new(o, "actions", actions);
	return o;
}

static void add(struct fx *fx, const char *tenant, const char *tool, json_t *o)
{
	struct bm_effect_row r = { .state = BM_ST_QUEUED, .priority = 5, .uid = 0, .gid = 0 };
	char *text = json_dumps(o, JSON_COMPACT);

	snprintf(r.id, sizeof(r.id), "e%u", ++fx->seq);
	snprintf(r.tenant, sizeof(r.tenant), "%s", tenant);
	snprintf(r.tool, sizeof(r.tool), "%s", tool);
	r.created_ms = 1000 + fx->seq;
	r.request_json = "{}";
	assert_int_equal(bm_store__insert(fx->st, &r), 0);
	assert_int_equal(bm_store__finish(fx->st, tenant, r.id, text, NULL, 0,
					  strcmp(json_string_value(json_object_get(json_object_get(o,
						 "termination"), "reason")), "completed") ? BM_ST_KILLED
											  : BM_ST_SUCCEEDED,
					  2000 + fx->seq), 0);
	free(text);
	json_decref(o);
}

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	char err[256];
	int i;

	snprintf(fx->root, sizeof(fx->root), "/tmp/bm-advise.XXXXXX");
	if (!fx || !mkdtemp(fx->root))
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "%s/state", fx->root);
	fx->st = bm_store__open(fx->dir, err, sizeof(err));
	if (!fx->st)
		return -1;
	/* pytest, acme: run i of 100 peaks at i/50 cores, i MiB, i tasks, i kB/s, and lasts i/10 s */
	for (i = 1; i <= 100; i++)
		add(fx, "acme", "pytest", outcome(i / 50.0, i * MIB, i, i * 1000.0, i / 10.0, i / 100.0,
						  i * MIB / 2, 10 * i, "completed", NULL));
	/* five more of another tenant's, far bigger: seen only without --tenant */
	for (i = 1; i <= 5; i++)
		add(fx, "other", "pytest", outcome(8, 4096 * MIB, 900, 0, 100, 4, 2048 * MIB, 9000,
						   "completed", NULL));
	/* make: 7 runs at 20-26 MiB, 3 stopped at their 64 MiB ceiling, one that never ran */
	for (i = 0; i < 7; i++)
		add(fx, "acme", "make", outcome(0.5, (20 + i) * MIB, 4, 0, 1, 0.25, 10 * MIB, 100,
						"completed", NULL));
	for (i = 0; i < 3; i++)
		add(fx, "acme", "make", outcome(0.5, 64 * MIB, 4, 0, 0.5, 0.25, 30 * MIB, 50, "memory_ceiling",
						json_pack("{s:n, s:I, s:n, s:n}", "cpu_cores", "memory_bytes",
							  (json_int_t)(64 * MIB), "pids", "timeout_seconds")));
	add(fx, "acme", "make", outcome(0, 0, 0, 0, 0, 0, 0, 0, "failed", NULL));
	/*
	 * dd, of tenant io: run i of 10 reads at i MiB/s, writes at 2i, 10i ops/s, dirties i/2 MiB/s,
	 * sends 1000 i bytes in all, fills its 64 MiB /tmp to i MiB; none at a ceiling
	 */
	for (i = 1; i <= 10; i++)
		add(fx, "io", "dd", with_io(outcome(0.2, 8 * MIB, 2, 0, 1, 0.1, 4 * MIB, 100, "completed", NULL),
					    i, 2 * i, 10 * i, i / 2.0, 1000 * i, i,
					    json_pack("{s:I}", "ephemeral_storage_bytes", (json_int_t)(64 * MIB)),
					    NULL));
	/*
	 * cp, of tenant io: 6 that complete (reads of 1-6 MiB/s, writes of 10-15), 2 killed at the
	 * policy's I/O level of 100 MiB/s by their writes (one with an io_write_bps limit of 200
	 * it never came near), one by its reads, one that filled its 16 MiB /tmp; and one held at its io.max
	 * read limit of 8 MiB/s (7.9: within 5% of it) that completed all the same
	 */
	for (i = 0; i < 6; i++)
		add(fx, "io", "cp", with_io(outcome(0.2, 8 * MIB, 2, 0, 1, 0.1, 4 * MIB, 100, "completed", NULL),
					    1 + i, 10 + i, 50, 0, 0, -1, NULL, NULL));
	for (i = 0; i < 2; i++)
		add(fx, "io", "cp", with_io(outcome(0.2, 8 * MIB, 2, 0, 1, 0.1, 4 * MIB, 100, "io_ceiling", NULL),
					    5, 120, 50, 0, 0, -1,
					    i ? json_pack("{s:I}", "io_write_bps", (json_int_t)(200 * MIB)) : NULL,
					    json_pack("[{s:s, s:s, s:f, s:f}]", "action", "kill", "reason",
						      "io_ceiling", "observed", 120 * MIB, "threshold", 100 * MIB)));
	add(fx, "io", "cp", with_io(outcome(0.2, 8 * MIB, 2, 0, 1, 0.1, 4 * MIB, 100, "io_ceiling", NULL),
				    110, 50, 50, 0, 0, -1, NULL,
				    json_pack("[{s:s, s:s, s:f, s:f}]", "action", "kill", "reason", "io_ceiling",
					      "observed", 160 * MIB, "threshold", 100 * MIB)));
	add(fx, "io", "cp", with_io(outcome(0.2, 8 * MIB, 2, 0, 1, 0.1, 4 * MIB, 100, "storage_ceiling", NULL),
				    1, 10, 50, 0, 0, 16,
				    json_pack("{s:I}", "ephemeral_storage_bytes", (json_int_t)(16 * MIB)), NULL));
	add(fx, "io", "cp", with_io(outcome(0.2, 8 * MIB, 2, 0, 1, 0.1, 4 * MIB, 100, "completed", NULL),
				    7.9, 10, 50, 0, 0, -1, json_pack("{s:I}", "io_read_bps", (json_int_t)(8 * MIB)),
				    NULL));
	/* a tool that never once ran (its name mistyped): counted, but no figure */
	add(fx, "acme", "pytset", outcome(0, 0, 0, 0, 0, 0, 0, 0, "failed", NULL));
	/* one that is still running: no outcome, not counted */
	{
		struct bm_effect_row r = { .state = BM_ST_RUNNING, .priority = 5, .created_ms = 5000,
					   .request_json = "{}" };

		snprintf(r.id, sizeof(r.id), "live");
		snprintf(r.tenant, sizeof(r.tenant), "acme");
		snprintf(r.tool, sizeof(r.tool), "make");
		assert_int_equal(bm_store__insert(fx->st, &r), 0);
	}
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	bm_store__free(fx->st);
	nftw(fx->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(fx);
	return 0;
}

static json_t *tool_of(json_t *rep, const char *tool)
{
	size_t i;
	json_t *t;

	json_array_foreach(json_object_get(rep, "tools"), i, t)
		if (!strcmp(json_string_value(json_object_get(t, "tool")), tool))
			return t;
	fail_msg("no tool %s in the report", tool);
	return NULL;
}

static double dnum(json_t *t, const char *a, const char *b, const char *c)
{
	json_t *v = json_object_get(json_object_get(json_object_get(t, a), b), c);

	if (!json_is_number(v))
		fail_msg("%s.%s.%s is not a number", a, b, c);
	return json_number_value(v);
}

static void assert_close(double got, double want)
{
	if (got < want - 1e-9 * (want > 1 ? want : 1) || got > want + 1e-9 * (want > 1 ? want : 1))
		fail_msg("got %.12g, want %.12g", got, want);
}

static void test_advise_percentiles_and_recommendation(void **state)
{
	struct fx *fx = *state;
	json_t *rep = bm_advise_report(fx->st, "acme", NULL), *t, *r, *flags;
	static const char *const want_flags[] = { "--cpu", "2.5", "--memory", "128M", "--pids", "124",
						  "--timeout", "13" };
	char *sb;
	size_t i;

	assert_non_null(rep);
	/* most runs first */
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(rep, "tools"), 0),
							      "tool")), "pytest");
	t = tool_of(rep, "pytest");
	assert_int_equal(json_integer_value(json_object_get(t, "runs")), 100);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(t, "reasons"), "completed")), 100);
	/* nearest rank: p50 of 1..100 is the 50th, p95 the 95th, p99 the 99th */
	assert_close(dnum(t, "dims", "cpu_cores", "p50"), 1.0);
	assert_close(dnum(t, "dims", "cpu_cores", "p99"), 1.98);
	assert_close(dnum(t, "dims", "memory_bytes", "p95"), 95 * MIB);
	assert_close(dnum(t, "dims", "memory_bytes", "max"), 100 * MIB);
	assert_close(dnum(t, "dims", "pids", "p99"), 99);
	assert_close(dnum(t, "dims", "net_tx_bytes_per_s", "p50"), 50000);
	assert_close(dnum(t, "dims", "wall_seconds", "p99"), 9.9);
	assert_close(dnum(t, "dims", "memory_bytes", "runs"), 100);
	assert_close(dnum(t, "dims", "memory_bytes", "ceiling_hits"), 0);
	r = json_object_get(t, "recommend");
	assert_int_equal(json_integer_value(json_object_get(r, "runs")), 100);
	/* 1.98 x 1.25 = 2.475 -> 2.5 cores; 99 MiB x 1.25 -> 128 MiB; 99 x 1.25 -> 124; 9.9 s -> 13 s */
	assert_close(dnum(t, "recommend", "cpu_milli", "limit"), 2500);
	assert_close(dnum(t, "recommend", "memory_bytes", "limit"), 128 * MIB);
	assert_int_equal(json_integer_value(json_object_get(r, "pids_limit")), 124);
	assert_int_equal(json_integer_value(json_object_get(r, "timeout_seconds")), 13);
	/* requests: p95 of the averages, 0.95 cores and 47.5 MiB -> 48 MiB */
	assert_close(dnum(t, "recommend", "cpu_milli", "request"), 950);
	assert_close(dnum(t, "recommend", "memory_bytes", "request"), 48 * MIB);
	flags = json_object_get(r, "run_flags");
	assert_int_equal(json_array_size(flags), 8);
	for (i = 0; i < 8; i++)
		assert_string_equal(json_string_value(json_array_get(flags, i)), want_flags[i]);
	sb = json_dumps(json_object_get(r, "sandbox"), JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(sb, "{\"cpu_limit\":\"2500m\",\"cpu_request\":\"950m\",\"memory_limit\":\"128Mi\","
			    "\"memory_request\":\"48Mi\",\"pids_limit\":124,\"timeout_seconds\":13}");
	free(sb);
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(r, "pod"),
							     "limits"), "memory")), "128Mi");
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(r, "pod"),
							     "requests"), "cpu")), "950m");
	/* 100 runs: the p99 is the 99th, not the largest: nothing to say */
	assert_int_equal(json_array_size(json_object_get(r, "notes")), 0);
	json_decref(rep);
}

/* 3 of 10 runs at their memory ceiling: what they needed is unknown, so no memory limit is advised. */
static void test_advise_ceiling_hits_leave_the_limit_unknown(void **state)
{
	struct fx *fx = *state;
	json_t *rep = bm_advise_report(fx->st, NULL, "make"), *t, *r, *flags, *x;
	const char *note;
	size_t i;

	assert_non_null(rep);
	assert_int_equal(json_array_size(json_object_get(rep, "tools")), 1);
	t = tool_of(rep, "make");
	/* 11 ended (the one still running is not), 10 of them ran */
	assert_int_equal(json_integer_value(json_object_get(t, "runs")), 11);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(t, "reasons"), "memory_ceiling")), 3);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(t, "reasons"), "failed")), 1);
	assert_close(dnum(t, "dims", "memory_bytes", "runs"), 10);
	assert_close(dnum(t, "dims", "memory_bytes", "ceiling_hits"), 3);
	assert_close(dnum(t, "dims", "memory_bytes", "ceiling"), 64 * MIB);
	r = json_object_get(t, "recommend");
	assert_true(json_is_null(json_object_get(json_object_get(r, "memory_bytes"), "limit")));
	assert_null(json_object_get(json_object_get(r, "sandbox"), "memory_limit"));
	assert_null(json_object_get(json_object_get(json_object_get(r, "pod"), "limits"), "memory"));
	/* the other figures stand */
	assert_int_equal(json_integer_value(json_object_get(r, "pids_limit")), 5);
	flags = json_object_get(r, "run_flags");
	json_array_foreach(flags, i, x)
		assert_string_not_equal(json_string_value(x), "--memory");
	assert_int_equal(json_array_size(json_object_get(r, "notes")), 2);
	assert_string_equal(json_string_value(json_array_get(json_object_get(r, "notes"), 0)),
			    "10 runs: with fewer than 100, each p99 is the largest of them");
	note = json_string_value(json_array_get(json_object_get(r, "notes"), 1));
	assert_non_null(strstr(note, "memory: 3 of 10 runs hit their memory ceiling of 64 MiB"));
	assert_non_null(strstr(note, "no limit is recommended"));
	json_decref(rep);
}

static void test_advise_filters_and_text(void **state)
{
	struct fx *fx = *state;
	json_t *rep = bm_advise_report(fx->st, NULL, "pytest");
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	/* both tenants' pytest: 105 runs, and the other tenant's 900 tasks are the max */
	assert_non_null(rep);
	assert_int_equal(json_integer_value(json_object_get(tool_of(rep, "pytest"), "runs")), 105);
	assert_close(dnum(tool_of(rep, "pytest"), "dims", "pids", "max"), 900);
	json_decref(rep);
	rep = bm_advise_report(fx->st, "acme", "pytest");
	f = open_memstream(&text, &len);
	bm_advise_print(f, rep);
	fclose(f);
	assert_non_null(strstr(text, "pytest: 100 runs (completed 100)"));
	assert_non_null(strstr(text, "recommended, from 100 runs"));
	assert_non_null(strstr(text, "run       --cpu 2.5 --memory 128M --pids 124 --timeout 13\n"));
	assert_non_null(strstr(text, "memory_bytes"));
	free(text);
	json_decref(rep);
	/* runs that never ran: no percentile, no recommendation */
	rep = bm_advise_report(fx->st, "acme", "pytset");
	assert_int_equal(json_integer_value(json_object_get(tool_of(rep, "pytset"), "runs")), 1);
	assert_close(dnum(tool_of(rep, "pytset"), "dims", "memory_bytes", "runs"), 0);
	assert_true(json_is_null(json_object_get(json_object_get(json_object_get(tool_of(rep, "pytset"),
				 "recommend"), "memory_bytes"), "limit")));
	assert_int_equal(json_array_size(json_object_get(json_object_get(tool_of(rep, "pytset"), "recommend"),
							 "run_flags")), 0);
	json_decref(rep);
	/* nothing of that kind: an empty list, said so */
	rep = bm_advise_report(fx->st, "acme", "nosuch");
	assert_int_equal(json_array_size(json_object_get(rep, "tools")), 0);
	f = open_memstream(&text, &len);
	bm_advise_print(f, rep);
	fclose(f);
	assert_string_equal(text, "no ended effects of tool nosuch of tenant acme\n");
	free(text);
	json_decref(rep);
}

/* I/O, dirtied bytes, bytes sent and /tmp: figures, and limits in run flags and the sandbox. */
static void test_advise_io_and_storage(void **state)
{
	struct fx *fx = *state;
	json_t *rep = bm_advise_report(fx->st, "io", "dd"), *t, *r, *flags;
	static const char *const want_flags[] = { "--cpu", "0.3", "--memory", "16M", "--pids", "3",
						  "--timeout", "2", "--io-read-bps", "13M", "--io-write-bps",
						  "25M", "--io-iops", "125", "--tmp-size", "16M" };
	char *sb, *text = NULL;
	size_t i, len = 0;
	FILE *f;

	assert_non_null(rep);
	t = tool_of(rep, "dd");
	/* nearest rank over 10: p50 the 5th, p95 and p99 the 10th */
	assert_close(dnum(t, "dims", "io_read_bytes_per_s", "p50"), 5 * MIB);
	assert_close(dnum(t, "dims", "io_read_bytes_per_s", "p99"), 10 * MIB);
	assert_close(dnum(t, "dims", "io_write_bytes_per_s", "p95"), 20 * MIB);
	assert_close(dnum(t, "dims", "io_ops_per_s", "max"), 100);
	assert_close(dnum(t, "dims", "dirty_bytes_per_s", "p50"), 2.5 * MIB);
	assert_close(dnum(t, "dims", "net_tx_bytes", "p50"), 5000);
	assert_close(dnum(t, "dims", "ephemeral_storage_bytes", "p99"), 10 * MIB);
	assert_close(dnum(t, "dims", "ephemeral_storage_bytes", "runs"), 10);
	assert_close(dnum(t, "dims", "io_write_bytes_per_s", "ceiling_hits"), 0);
	r = json_object_get(t, "recommend");
	/* 10 x 1.25 = 12.5 -> 13 MiB/s; 20 -> 25 MiB/s; 100 -> 125 ops/s; 10 MiB x 1.25 -> 16 MiB */
	assert_int_equal(json_integer_value(json_object_get(r, "io_read_bps")), 13 * 1048576);
	assert_int_equal(json_integer_value(json_object_get(r, "io_write_bps")), 25 * 1048576);
	assert_int_equal(json_integer_value(json_object_get(r, "io_iops")), 125);
	assert_int_equal(json_integer_value(json_object_get(r, "max_ephemeral_storage_bytes")), 16 * 1048576);
	flags = json_object_get(r, "run_flags");
	assert_int_equal(json_array_size(flags), 16);
	for (i = 0; i < 16; i++)
		assert_string_equal(json_string_value(json_array_get(flags, i)), want_flags[i]);
	sb = json_dumps(json_object_get(r, "sandbox"), JSON_COMPACT | JSON_SORT_KEYS);
	assert_non_null(strstr(sb, "\"io_iops\":125,\"io_read_bps\":\"13Mi\",\"io_write_bps\":\"25Mi\","
			       "\"max_ephemeral_storage\":\"16Mi\""));
	free(sb);
	f = open_memstream(&text, &len);
	bm_advise_print(f, rep);
	fclose(f);
	assert_non_null(strstr(text, "  io_write_bytes_per_s        10    10.0Mi    20.0Mi    20.0Mi    20.0Mi  0\n"));
	assert_non_null(strstr(text, "  io_ops_per_s                10        50       100       100       100  0\n"));
	assert_non_null(strstr(text, "--io-read-bps 13M --io-write-bps 25M --io-iops 125 --tmp-size 16M\n"));
	free(text);
	json_decref(rep);

	/* cp: what the ceilings hid is unknown; io_ceiling goes to reads or writes, whichever crossed */
	rep = bm_advise_report(fx->st, "io", "cp");
	t = tool_of(rep, "cp");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(t, "reasons"), "io_ceiling")), 3);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(t, "reasons"), "storage_ceiling")), 1);
	assert_close(dnum(t, "dims", "io_write_bytes_per_s", "ceiling_hits"), 2);
	/* the policy's level, from the actions, not the io_write_bps limit of 200 one of them had */
	assert_close(dnum(t, "dims", "io_write_bytes_per_s", "ceiling"), 100 * MIB);
	/* the read-heavy kill, and the one held within 5% of its io.max read limit */
	assert_close(dnum(t, "dims", "io_read_bytes_per_s", "ceiling_hits"), 2);
	assert_close(dnum(t, "dims", "io_read_bytes_per_s", "ceiling"), 100 * MIB);
	assert_close(dnum(t, "dims", "ephemeral_storage_bytes", "runs"), 1);
	assert_close(dnum(t, "dims", "ephemeral_storage_bytes", "ceiling_hits"), 1);
	assert_close(dnum(t, "dims", "ephemeral_storage_bytes", "ceiling"), 16 * MIB);
	assert_close(dnum(t, "dims", "io_ops_per_s", "ceiling_hits"), 0);
	r = json_object_get(t, "recommend");
	assert_true(json_is_null(json_object_get(r, "io_read_bps")));
	assert_true(json_is_null(json_object_get(r, "io_write_bps")));
	assert_true(json_is_null(json_object_get(r, "max_ephemeral_storage_bytes")));
	/* ops hit no ceiling: 50 x 1.25 -> 63 */
	assert_int_equal(json_integer_value(json_object_get(r, "io_iops")), 63);
	assert_null(json_object_get(json_object_get(r, "sandbox"), "io_write_bps"));
	sb = json_dumps(json_object_get(r, "notes"), JSON_COMPACT);
	assert_non_null(strstr(sb, "io write: 2 of 11 runs hit their io write ceiling of 100 MiB/s"));
	assert_non_null(strstr(sb, "io read: 2 of 11 runs hit their io read ceiling of 100 MiB/s"));
	assert_non_null(strstr(sb, "ephemeral storage: 1 of 1 runs hit their ephemeral storage ceiling of 16 MiB"));
	free(sb);
	json_decref(rep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_advise_percentiles_and_recommendation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_advise_ceiling_hits_leave_the_limit_unknown, setup, teardown),
		cmocka_unit_test_setup_teardown(test_advise_filters_and_text, setup, teardown),
		cmocka_unit_test_setup_teardown(test_advise_io_and_storage, setup, teardown),
	};

	return cmocka_run_group_tests_name("advise", tests, NULL, NULL);
}
