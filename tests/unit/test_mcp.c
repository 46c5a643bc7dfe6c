// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/cli/mcp_text.h and mcp_req.h: what `burstmeter mcp` tells the model
 * (the first line of a result, from outcomes as the agent writes them; the
 * output capped to head and tail, always UTF-8) and how it checks
 * run_command's arguments (every bad field, under the tool's own names).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cli/mcp_req.h"
#include "cli/mcp_text.h"

#define MIB (1024.0 * 1024.0)

/* An outcome as the agent writes it, with what the summary reads. */
static json_t *outcome(const char *reason, const char *by, double wall, json_t *exitj, json_t *limits, double mem,
		       double pids, const char *advice)
{
	return json_pack("{s:s, s:f, s:o, s:o, s:{s:f, s:f, s:f, s:f}, s:{s:s, s:s}, s:{s:b, s:i, s:s}, s:f, s:f}",
			 "schema", "burstmeter.outcome/v1", "wall_seconds", wall, "exit", exitj, "limits", limits, "peak",
			 "cpu_cores", 0.5, "memory_bytes", mem, "pids", pids, "net_tx_bytes_per_s", 0.0, "termination",
			 "reason", reason, "by", by, "retry", "eligible", strcmp(reason, "completed") == 0, "after_ms", 0,
			 "advice", advice, "throttled_seconds", 0.0, "frozen_seconds", 0.0);
}

static json_t *no_limits(void)
{
	return json_pack("{s:n, s:n, s:n, s:n}", "cpu_cores", "memory_bytes", "pids", "timeout_seconds");
}

/* expect: the outcome's "expect" member (declared, observed, exceeded), or NULL. */
static void expect_summary(json_t *o, const json_t *expect, const char *want)
{
	char buf[1024];

	if (expect)
		json_object_set(o, "expect", (json_t *)expect);
	bm_mcp_summary(o, buf, sizeof(buf));
	json_decref(o);
	if (strcmp(buf, want))
		fail_msg("summary\n  got:  %s\n  want: %s", buf, want);
}

static void test_mcp_summary_reasons(void **state)
{
	json_t *lim, *o;

	(void)state;
	expect_summary(outcome("completed", "process", 1.234, json_pack("{s:i, s:n}", "code", 0, "signal"),
			       no_limits(), 12 * MIB, 3, ""), NULL,
		       "completed in 1.23 s (exit 0); peak cpu 0.50 cores, mem 12 MiB, 3 tasks");
	lim = json_pack("{s:n, s:I, s:n, s:n}", "cpu_cores", "memory_bytes", (json_int_t)(512 * MIB), "pids",
			"timeout_seconds");
	expect_summary(outcome("memory_ceiling", "kernel", 3.1, json_pack("{s:n, s:i}", "code", "signal", 9), lim,
			       513 * MIB, 1, "memory reached 513 MiB against a 512 MiB ceiling"), NULL,
		       "killed: memory_ceiling at 512 MiB after 3.10 s; retry with a smaller working set or "
		       "limits.memory >= 768Mi; peak cpu 0.50 cores, mem 513 MiB, 1 tasks");
	lim = json_pack("{s:n, s:n, s:i, s:n}", "cpu_cores", "memory_bytes", "pids", 8, "timeout_seconds");
	expect_summary(outcome("pids_ceiling", "kernel", 0.42, json_pack("{s:n, s:i}", "code", "signal", 9), lim,
			       4 * MIB, 8, "it tried to run more than 8 tasks; raise --pids or reduce parallelism; "
			       "1 earlier attach effect hit pids_ceiling in the last 10 min: wait 2 s"), NULL,
		       "killed: pids_ceiling at 8 tasks after 0.42 s; retry with less parallelism (fewer jobs or "
		       "workers) or limits.pids >= 12; peak cpu 0.50 cores, mem 4.0 MiB, 8 tasks; 1 earlier attach "
		       "effect hit pids_ceiling in the last 10 min: wait 2 s");
	o = outcome("failed", "process", 0.31, json_pack("{s:i, s:n}", "code", 127, "signal"), no_limits(), 1 * MIB, 1,
		    "'' was not found; fix the command");
	json_object_set_new(o, "command", json_pack("[s]", "nosuch"));
	expect_summary(o, NULL, "failed: exit 127: 'nosuch' was not found; fix the command; peak cpu 0.50 cores, "
		       "mem 1.0 MiB, 1 tasks");
	expect_summary(outcome("failed", "process", 0.31, json_pack("{s:i, s:n}", "code", 2, "signal"), no_limits(),
			       1 * MIB, 1, ""), NULL,
		       "failed: exit 2 after 0.31 s; peak cpu 0.50 cores, mem 1.0 MiB, 1 tasks");
	expect_summary(outcome("signaled", "signal", 0.5, json_pack("{s:n, s:i}", "code", "signal", 11), no_limits(),
			       2 * MIB, 1, ""), NULL,
		       "signaled: killed by SIGSEGV after 0.50 s; peak cpu 0.50 cores, mem 2.0 MiB, 1 tasks");
	lim = json_pack("{s:n, s:n, s:n, s:f}", "cpu_cores", "memory_bytes", "pids", "timeout_seconds", 10.0);
	expect_summary(outcome("deadline", "deadline", 10.2, json_pack("{s:n, s:i}", "code", "signal", 15), lim,
			       2 * MIB, 1, "it ran 10.2 s"), NULL,
		       "deadline: stopped at its 10.0 s timeout; raise timeout_seconds or split the work; peak cpu "
		       "0.50 cores, mem 2.0 MiB, 1 tasks");
	expect_summary(outcome("cancelled", "api", 2.1, json_pack("{s:n, s:i}", "code", "signal", 15), no_limits(),
			       2 * MIB, 1, ""), NULL,
		       "cancelled after 2.10 s (by api); peak cpu 0.50 cores, mem 2.0 MiB, 1 tasks");
}

static void test_mcp_summary_expectations(void **state)
{
	json_t *o = outcome("completed", "process", 1.0, json_pack("{s:i, s:n}", "code", 0, "signal"), no_limits(),
			    100 * MIB, 1, "");
	/* what the agent writes (effect/expect.h) for memory_bytes 64 MiB and wall_seconds 5 */
	struct bm_expect x = { BM_X_BIT(BM_X_MEM) | BM_X_BIT(BM_X_WALL), { [BM_X_MEM] = 64 * MIB,
								       [BM_X_WALL] = 5000000000ULL } };
	json_t *expect = bm_expect_json(&x, o), *rep;

	(void)state;
	assert_null(bm_mcp_expect_report(o));
	json_object_set(o, "expect", expect);
	rep = bm_mcp_expect_report(o);
	assert_true(json_is_true(json_object_get(json_object_get(rep, "memory_bytes"), "exceeded")));
	assert_true(json_is_false(json_object_get(json_object_get(rep, "wall_seconds"), "exceeded")));
	assert_true(json_number_value(json_object_get(json_object_get(rep, "memory_bytes"), "observed")) ==
		    100 * MIB);
	assert_true(json_number_value(json_object_get(json_object_get(rep, "wall_seconds"), "expected")) == 5.0);
	json_decref(rep);
	expect_summary(o, expect, "completed in 1.00 s (exit 0); peak cpu 0.50 cores, mem 100 MiB, 1 tasks; beyond "
		       "what was expected: memory_bytes 100 MiB against 64 MiB expected");
	json_decref(expect);
}

static void test_mcp_out_head_tail(void **state)
{
	struct bm_mcp_out o;
	char line[16], *text;
	bool cut;
	int i;

	(void)state;
	assert_int_equal(bm_mcp_out__init(&o, 20), 0);
	bm_mcp_out__add(&o, "short\n", 6);
	text = bm_mcp_out__text(&o, &cut);
	assert_string_equal(text, "short\n");
	assert_false(cut);
	free(text);
	/* 10 lines of 4 bytes: the first 10 bytes and the last 10 survive, as they were */
	for (i = 0; i < 10; i++) {
		snprintf(line, sizeof(line), "L%02d\n", i);
		bm_mcp_out__add(&o, line, 4);
	}
	text = bm_mcp_out__text(&o, &cut);
	assert_true(cut);
	assert_int_equal(o.total, 46);
	assert_string_equal(text, "short\nL00\n[... 26 bytes left out ...]\n7\nL08\nL09\n");
	free(text);
	bm_mcp_out__free(&o);
}

static void test_mcp_utf8(void **state)
{
	char *s;

	(void)state;
	s = bm_mcp_utf8("ok \xc3\xa9 \xff \xe2\x82", 10);
	assert_string_equal(s, "ok \xc3\xa9 \xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd");
	free(s);
	s = bm_mcp_utf8("a\0b", 3);
	assert_string_equal(s, "a\xef\xbf\xbd" "b");
	free(s);
	/* overlong and surrogate forms are not UTF-8 */
	s = bm_mcp_utf8("\xc0\xaf\xed\xa0\x80", 5);
	assert_int_equal(strlen(s), 15);
	free(s);
}

static struct bm_mcp_cfg cfg = { .max_output = BM_MCP_OUTPUT_DEFAULT };

/* The fields of the errors of args, sorted by the parser's order. */
static void expect_fields(const char *args_json, const char *const *want)
{
	json_t *args = json_loads(args_json, 0, NULL), *errs = NULL, *e;
	struct bm_mcp_req r;
	size_t i;

	assert_non_null(args);
	assert_int_equal(bm_mcp_req_parse(args, &cfg, &r, &errs), -EINVAL);
	json_array_foreach(errs, i, e) {
		if (!want[i])
			fail_msg("more errors than expected: %s", json_string_value(json_object_get(e, "field")));
		assert_string_equal(json_string_value(json_object_get(e, "field")), want[i]);
	}
	assert_null(want[json_array_size(errs)]);
	json_decref(errs);
	json_decref(args);
}

static void test_mcp_req_errors(void **state)
{
	(void)state;
	expect_fields("{\"argv\": [\"x\"], \"limits\": {\"memory\": \"12x\", \"pids\": 0}, \"bogus\": 1}",
		      (const char *[]){ "bogus", "limits.memory", "limits.pids", NULL });
	expect_fields("{\"command\": \"true\", \"argv\": [\"true\"]}", (const char *[]){ "command", NULL });
	expect_fields("{}", (const char *[]){ "argv", NULL });
	expect_fields("{\"command\": \"\"}", (const char *[]){ "command", NULL });
	expect_fields("{\"argv\": [\"x\"], \"cwd\": \"/no/such/dir\", \"timeout_seconds\": -1, "
		      "\"network_policy\": \"sometimes\", \"expectations\": {\"memory\": \"lots\"}, \"id\": \"a b\"}",
		      (const char *[]){ "cwd", "id", "timeout_seconds", "network_policy", "expectations.memory",
					NULL });
	/* the agent's checks of an expectation, under the tool's names */
	expect_fields("{\"argv\": [\"x\"], \"limits\": {\"memory\": \"64Mi\"}, \"expectations\": {\"memory\": \"128Mi\", "
		      "\"wall_seconds\": 0, \"nope\": 1}, \"traceparent\": \"00-00\"}",
		      (const char *[]){ "expectations.nope", "expectations.wall_seconds", "expectations.memory",
					"traceparent", NULL });
}

static void test_mcp_req_valid(void **state)
{
	json_t *args = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:i}, s:f, s:s, s:{s:s}, s:i}", "command",
				 "echo hi", "cwd", "/tmp", "env", "BM_TEST_VAR", "x", "limits", "cpu", "500m", "memory",
				 "256Mi", "pids", 64, "timeout_seconds", 1.5, "network_policy", "none", "expectations",
				 "memory", "100M", "max_output_bytes", 100);
	json_t *errs = NULL;
	struct bm_mcp_req r;
	bool found = false;
	char **p;

	(void)state;
	assert_int_equal(bm_mcp_req_parse(args, &cfg, &r, &errs), 0);
	assert_string_equal(r.argv[0], "/bin/sh");
	assert_string_equal(r.argv[2], "echo hi");
	assert_null(r.argv[3]);
	assert_string_equal(r.cwd, "/tmp");
	assert_int_equal(r.limits.cpu_milli, 500);
	assert_int_equal(r.limits.memory_bytes, 256 * 1024 * 1024);
	assert_int_equal(r.limits.pids, 64);
	assert_int_equal(r.limits.timeout_ns, 1500000000ULL);
	assert_true(r.netns);
	assert_false(r.egress_filter);
	assert_int_equal(r.max_output, 100);
	assert_int_equal(r.expect.set, BM_X_BIT(BM_X_MEM));
	assert_int_equal(r.expect.v[BM_X_MEM], 100 * 1024 * 1024);
	/* a shell line's tool kind is its first word's */
	assert_string_equal(r.tool, "echo");
	/* the agent's own form: it parses back there */
	assert_int_equal(json_integer_value(json_object_get(r.sandbox, "pids_limit")), 64);
	assert_true(!strncmp(r.id, "mcp-", 4));
	for (p = r.envp; *p; p++)
		found |= !strcmp(*p, "BM_TEST_VAR=x");
	assert_true(found);
	bm_mcp_req_free(&r);
	json_decref(args);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mcp_summary_reasons),
		cmocka_unit_test(test_mcp_summary_expectations),
		cmocka_unit_test(test_mcp_out_head_tail),
		cmocka_unit_test(test_mcp_utf8),
		cmocka_unit_test(test_mcp_req_errors),
		cmocka_unit_test(test_mcp_req_valid),
	};

	return cmocka_run_group_tests_name("mcp", tests, NULL, NULL);
}
