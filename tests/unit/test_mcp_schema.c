// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/cli/mcp_schema.c and mcp_result.c: every structuredContent run_command
 * returns validates against the outputSchema tools/list sends (a client such
 * as the MCP SDK's throws on one that does not), for every reason the
 * outcome table has and for an outcome that names none; the retry advice is
 * in the tool's own terms.
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
#include <cmocka.h>

#include "cli/mcp_result.h"
#include "cli/mcp_schema.h"
#include "effect/outcome.h"

/* JSON Schema's type names of v ("integer" is a "number" too). */
static bool is_type(const json_t *v, const char *t)
{
	if (!strcmp(t, "object"))
		return json_is_object(v);
	if (!strcmp(t, "array"))
		return json_is_array(v);
	if (!strcmp(t, "string"))
		return json_is_string(v);
	if (!strcmp(t, "boolean"))
		return json_is_boolean(v);
	if (!strcmp(t, "null"))
		return json_is_null(v);
	if (!strcmp(t, "number"))
		return json_is_number(v);
	if (!strcmp(t, "integer"))
		return json_is_integer(v) || (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)));
	fail_msg("the schema names a type this check does not know: %s", t);
	return false;
}

/*
 * The keywords the tools' schemas use (type, enum, const, required,
 * properties, additionalProperties, items, minimum, maximum, minItems); a
 * keyword it does not know fails the test, so that none is skipped unseen.
 * Returns NULL or a new string saying where v is wrong.
 */
static char *invalid(const json_t *schema, const json_t *v, const char *at)
{
	static const char *const known[] = { "type", "enum", "const", "required", "properties",
					     "additionalProperties", "items", "minimum", "maximum",
					     "minItems", "description", NULL };
	const json_t *t = json_object_get(schema, "type"), *x, *sub;
	const char *key;
	char *why = NULL, *where;
	size_t i;
	bool ok;

	json_object_foreach((json_t *)schema, key, x) {
		for (i = 0; known[i] && strcmp(known[i], key); i++)
			;
		if (!known[i])
			fail_msg("%s: the schema uses %s, which this check does not know", at, key);
	}
	if (t) {
		ok = false;
		if (json_is_string(t))
			ok = is_type(v, json_string_value(t));
		json_array_foreach(t, i, x)
			ok |= is_type(v, json_string_value(x));
		if (!ok)
			return strdup(at);
	}
	if ((x = json_object_get(schema, "enum"))) {
		ok = false;
		json_array_foreach(x, i, sub)
			ok |= json_equal(sub, (json_t *)v);
		if (!ok)
			return asprintf(&why, "%s: not in the enum", at) < 0 ? NULL : why;
	}
	if ((x = json_object_get(schema, "const")) && !json_equal(x, (json_t *)v))
		return strdup(at);
	if ((x = json_object_get(schema, "minimum")) && json_number_value(v) < json_number_value(x))
		return strdup(at);
	if ((x = json_object_get(schema, "maximum")) && json_number_value(v) > json_number_value(x))
		return strdup(at);
	if (json_is_array(v) && (x = json_object_get(schema, "minItems")) &&
	    json_array_size(v) < (size_t)json_integer_value(x))
		return strdup(at);
	if (json_is_array(v) && (x = json_object_get(schema, "items")))
		json_array_foreach(v, i, sub) {
			if (asprintf(&where, "%s[%zu]", at, i) < 0)
				return NULL;
			why = invalid(x, sub, where);
			free(where);
			if (why)
				return why;
		}
	if (!json_is_object(v))
		return NULL;
	json_array_foreach(json_object_get(schema, "required"), i, x)
		if (!json_object_get(v, json_string_value(x)))
			return asprintf(&why, "%s.%s: required", at, json_string_value(x)) < 0 ? NULL : why;
	json_object_foreach((json_t *)v, key, sub) {
		x = json_object_get(json_object_get(schema, "properties"), key);
		if (!x)
			x = json_object_get(schema, "additionalProperties");
		if (json_is_false(x))
			return asprintf(&why, "%s.%s: not allowed", at, key) < 0 ? NULL : why;
		if (!json_is_object(x))
			continue;
		if (asprintf(&where, "%s.%s", at, key) < 0)
			return NULL;
		why = invalid(x, sub, where);
		free(where);
		if (why)
			return why;
	}
	return NULL;
}

static json_t *run_command_tool(void)
{
	json_t *tools = bm_mcp_tools(), *run = json_incref(json_array_get(tools, 0));

	json_decref(tools);
	assert_non_null(run);
	assert_string_equal(json_string_value(json_object_get(run, "name")), "run_command");
	return run;
}

/* An outcome as the agent writes one; reason "": its termination names none. */
static json_t *outcome(const char *reason, const char *advice)
{
	json_t *o = json_pack("{s:s, s:s, s:f, s:{s:n, s:I, s:i, s:n}, s:{s:f, s:f, s:f, s:f, s:f}, s:{s:n, s:i},"
			      " s:[s, s]}",
			      "schema", "burstmeter.outcome/v1", "id", "e-1", "wall_seconds", 0.25, "limits",
			      "cpu_cores", "memory_bytes", (json_int_t)(64 << 20), "pids", 8, "timeout_seconds",
			      "peak", "cpu_cores", 0.5, "memory_bytes", 1e6, "pids", 8.0, "net_tx_bytes_per_s", 0.0,
			      "io_write_bytes_per_s", 1e8, "exit", "code", "signal", 9, "command", "/bin/sh", "x");

	json_object_set_new(o, "termination", *reason ? json_pack("{s:s, s:s}", "reason", reason, "by", "kernel")
							: json_pack("{s:s}", "by", "kernel"));
	json_object_set_new(o, "retry", json_pack("{s:b, s:i, s:s}", "eligible", 0, "after_ms", 0, "advice", advice));
	return o;
}

/* run_command's result from o, its structuredContent checked against the outputSchema. */
static json_t *result(const json_t *schema, const json_t *o)
{
	struct bm_mcp_req req = { .id = "e-1" };
	struct bm_mcp_out out, err;
	json_t *r, *sc;
	char *why;

	assert_int_equal(bm_mcp_out__init(&out, 64), 0);
	assert_int_equal(bm_mcp_out__init(&err, 64), 0);
	bm_mcp_out__add(&out, "hello\n", 6);
	r = bm_mcp_result_ran(&req, "agent", "killed", o, &out, &err);
	bm_mcp_out__free(&out);
	bm_mcp_out__free(&err);
	sc = json_incref(json_object_get(r, "structuredContent"));
	json_decref(r);
	assert_non_null(sc);
	why = invalid(schema, sc, "structuredContent");
	if (why)
		fail_msg("%s does not validate: %s", json_string_value(json_object_get(sc, "reason")), why);
	return sc;
}

static void test_mcp_schema_every_reason(void **state)
{
	json_t *run = run_command_tool(), *schema = json_object_get(run, "outputSchema");
	const json_t *e = json_object_get(json_object_get(json_object_get(schema, "properties"), "reason"), "enum");
	const char *desc = json_string_value(json_object_get(run, "description"));
	json_t *o, *sc;
	char *why;
	int r;

	(void)state;
	assert_int_equal(json_array_size(e), BM_REASON__MAX);
	for (r = 0; r < BM_REASON__MAX; r++) {
		assert_non_null(strstr(desc, bm_reason_name(r)));
		o = outcome(bm_reason_name(r), "");
		sc = result(schema, o);
		assert_string_equal(json_string_value(json_object_get(sc, "reason")), bm_reason_name(r));
		json_decref(sc);
		json_decref(o);
	}
	/* the two the enum once lacked */
	o = outcome("io_ceiling", "it exceeded its I/O ceiling; raise it or do less per call");
	json_decref(result(schema, o));
	json_decref(o);
	o = outcome("storage_ceiling", "it filled its 16 MiB of ephemeral storage (/tmp)");
	json_decref(result(schema, o));
	json_decref(o);
	/* a reason the table does not have is what the schema refuses: the check can fail */
	sc = json_pack("{s:s, s:s, s:s, s:s, s:s}", "effect_id", "e", "via", "agent", "state", "x", "summary", "",
		       "reason", "");
	why = invalid(schema, sc, "sc");
	assert_non_null(why);
	free(why);
	json_decref(sc);
	json_decref(run);
}

static void test_mcp_schema_no_reason(void **state)
{
	json_t *run = run_command_tool(), *o = outcome("", ""), *sc;

	(void)state;
	sc = result(json_object_get(run, "outputSchema"), o);
	assert_null(json_object_get(sc, "reason"));
	assert_true(json_object_get(json_object_get(sc, "outcome"), "schema") != NULL);
	json_decref(sc);
	json_decref(o);
	json_decref(run);
}

/* run_command's retry.advice for an outcome of reason and advice (checked against schema). */
static void advice_is(const json_t *schema, const char *reason, const char *advice, const char *want)
{
	json_t *o = outcome(reason, advice), *sc = result(schema, o);

	assert_string_equal(json_string_value(json_object_get(json_object_get(sc, "retry"), "advice")), want);
	/* the outcome's own, as the structured part carries it, reads the same */
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(sc, "outcome"),
									       "retry"), "advice")), want);
	/* the outcome given is not changed */
	assert_string_equal(json_string_value(json_object_get(json_object_get(o, "retry"), "advice")), advice);
	json_decref(sc);
	json_decref(o);
}

static void test_mcp_advice_in_tool_terms(void **state)
{
	json_t *run = run_command_tool();
	const json_t *schema = json_object_get(run, "outputSchema");

	(void)state;
	advice_is(schema, "pids_ceiling", "it tried to run more than 8 tasks; raise --pids or reduce parallelism",
		  "it tried to run more than 8 tasks; raise limits.pids or reduce parallelism");
	advice_is(schema, "deadline", "it ran 2.0 s and did not finish; raise --timeout above 1 s or split the work",
		  "it ran 2.0 s and did not finish; raise timeout_seconds above 1 s or split the work");
	/* a flag of another name is left as it is */
	advice_is(schema, "failed", "see --pids-max and --cpu", "see --pids-max and limits.cpu");
	json_decref(run);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mcp_schema_every_reason),
		cmocka_unit_test(test_mcp_schema_no_reason),
		cmocka_unit_test(test_mcp_advice_in_tool_terms),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
