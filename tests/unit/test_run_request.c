// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/agent/run_request.h: an agent execution request is checked whole
 * before a manifest is printed. Each rule is pinned from both sides (the
 * last value accepted, the first refused), errors are checked by the field
 * they name, and the fields a pod needs are filled in.
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

#include "agent/request.h"
#include "agent/run_request.h"

#define MIB (1024ULL * 1024)
#define GIB (MIB * 1024)
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* The smallest valid request: every single-rule test changes one field of it. */
static json_t *base(void)
{
	json_t *r = json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:s, s:i}}", "agent_image", "agent:1",
			      "agent_id", "a", "run_id", "r", "tenant_id", "t", "sandbox",
			      "cpu_limit", "1", "memory_limit", "1Gi", "timeout_seconds", 60);

	assert_non_null(r);
	return r;
}

/* "key" or "sandbox.key" of a new base() set to v (stolen); NULL v removes it. */
static json_t *with(const char *path, json_t *v)
{
	json_t *r = base(), *obj = r;

	if (!strncmp(path, "sandbox.", 8)) {
		obj = json_object_get(r, "sandbox");
		path += 8;
	}
	if (v)
		json_object_set_new(obj, path, v);
	else
		json_object_del(obj, path);
	return r;
}

static int parse(json_t *req, struct bm_run_request *out, json_t **errs)
{
	char *body = json_dumps(req, JSON_COMPACT);
	int err;

	assert_non_null(body);
	err = bm_run_request_parse(body, strlen(body), out, errs);
	free(body);
	json_decref(req);
	return err;
}

static void expect_ok(json_t *req, struct bm_run_request *r)
{
	json_t *errs = NULL;
	int err = parse(req, r, &errs);

	if (err) {
		char *t = errs ? json_dumps(errs, 0) : NULL;

		fail_msg("expected a valid request, got %d: %s", err, t ? t : "");
	}
}

static void accept(json_t *req)
{
	struct bm_run_request r;

	expect_ok(req, &r);
	bm_run_request_free(&r);
}

/* Refused, with an error naming field whose text contains what. */
static void refuse(json_t *req, const char *field, const char *what)
{
	struct bm_run_request r;
	json_t *errs = NULL, *e;
	size_t i;

	assert_int_equal(parse(req, &r, &errs), -EINVAL);
	assert_null(r.env);
	json_array_foreach(errs, i, e)
		if (!strcmp(json_string_value(json_object_get(e, "field")), field) &&
		    strstr(json_string_value(json_object_get(e, "error")), what)) {
			json_decref(errs);
			return;
		}
	fail_msg("no error for %s with \"%s\" in %s", field, what, json_dumps(errs, 0));
}

static void test_run_request_defaults_and_pairs(void **state)
{
	struct bm_run_request r;

	expect_ok(base(), &r);
	assert_string_equal(r.image, "agent:1");
	assert_string_equal(r.run_id, "r");
	assert_null(r.command);
	assert_int_equal(json_object_size(r.env), 0);
	assert_int_equal(json_object_size(r.labels), 0);
	assert_int_equal(r.priority, 5);
	assert_int_equal(r.workspace_bytes, GIB);
	assert_int_equal(r.sandbox.max_ephemeral_storage, GIB);
	/* the request left out is the limit: both are always set */
	assert_int_equal(r.sandbox.cpu_request_milli, 1000);
	assert_int_equal(r.sandbox.cpu_limit_milli, 1000);
	assert_int_equal(r.sandbox.memory_request, GIB);
	assert_int_equal(r.sandbox.memory_limit, GIB);
	assert_int_equal(r.sandbox.timeout_ns, 60ULL * 1000000000);
	assert_int_equal(r.sandbox.network_policy, BM_NET_FULL);
	assert_true(r.sandbox.read_only_root_fs && r.sandbox.run_as_non_root &&
		    r.sandbox.drop_all_capabilities);
	bm_run_request_free(&r);
	bm_run_request_free(&r);	/* twice: harmless */
	/* and the limit left out is the request */
	{
		json_t *q = base(), *sb = json_object_get(q, "sandbox");

		json_object_del(sb, "cpu_limit");
		json_object_del(sb, "memory_limit");
		json_object_set_new(sb, "cpu_request", json_string("250m"));
		json_object_set_new(sb, "memory_request", json_integer(300 * MIB));
		expect_ok(q, &r);
		assert_int_equal(r.sandbox.cpu_limit_milli, 250);
		assert_int_equal(r.sandbox.memory_limit, 300 * MIB);
		bm_run_request_free(&r);
	}
}

static void test_run_request_required(void **state)
{
	static const char *const keys[] = { "agent_image", "agent_id", "run_id", "tenant_id" };
	size_t i;

	for (i = 0; i < N(keys); i++)
		refuse(with(keys[i], NULL), keys[i], "required");
	refuse(with("sandbox", NULL), "sandbox", "required");
	refuse(with("sandbox.timeout_seconds", NULL), "sandbox.timeout_seconds", "required");
	refuse(with("sandbox.cpu_limit", NULL), "sandbox.cpu_limit", "required");
	refuse(with("sandbox.memory_limit", NULL), "sandbox.memory_limit", "required");
	/* the canonical form's timeout_ns does as well */
	{
		json_t *q = with("sandbox.timeout_seconds", NULL);

		json_object_set_new(json_object_get(q, "sandbox"), "timeout_ns",
				    json_integer(1000000));
		accept(q);
	}
	refuse(with("sandbox", json_string("x")), "sandbox", "must be an object");
}

static void test_run_request_image(void **state)
{
	char big[BM_RUN_IMAGE_MAX + 2];

	accept(with("agent_image", json_string("registry.example:5000/team/agent@sha256:0123")));
	refuse(with("agent_image", json_string("")), "agent_image", "must not be blank");
	refuse(with("agent_image", json_string(" \t")), "agent_image", "must not be blank");
	refuse(with("agent_image", json_string("agent 1")), "agent_image", "white space");
	refuse(with("agent_image", json_string("agent:1\n")), "agent_image", "white space");
	refuse(with("agent_image", json_string("agent\x7f")), "agent_image", "control");
	refuse(with("agent_image", json_integer(1)), "agent_image", "must be a string");
	memset(big, 'a', BM_RUN_IMAGE_MAX);
	big[BM_RUN_IMAGE_MAX] = '\0';
	accept(with("agent_image", json_string(big)));
	big[BM_RUN_IMAGE_MAX] = 'a';
	big[BM_RUN_IMAGE_MAX + 1] = '\0';
	refuse(with("agent_image", json_string(big)), "agent_image", "at most 4096");
}

/* run_id names the pod (a DNS subdomain) and labels it (63 at most). */
static void test_run_request_run_id(void **state)
{
	static const char *const ok[] = { "r", "run-42", "run.2026-11-30.7", "0", "a-b.c-d" };
	static const char *const bad[] = {
		"Run-42", "run_42", "-run", "run-", ".run", "run.", "run..42", "run.-42", "run 42",
		"run/42", "ru\u00efn",
	};
	char id[80];
	size_t i;

	for (i = 0; i < N(ok); i++)
		accept(with("run_id", json_string(ok[i])));
	for (i = 0; i < N(bad); i++)
		refuse(with("run_id", json_string(bad[i])), "run_id", "names the pod");
	refuse(with("run_id", json_string("")), "run_id", "must not be blank");
	memset(id, 'r', 63);
	id[63] = '\0';
	accept(with("run_id", json_string(id)));
	id[63] = 'r';
	id[64] = '\0';
	refuse(with("run_id", json_string(id)), "run_id", "names the pod");
}

/* agent_id and tenant_id are label values: case and '_' allowed, alphanumeric at the ends. */
static void test_run_request_label_ids(void **state)
{
	static const char *const keys[] = { "agent_id", "tenant_id" };
	static const char *const ok[] = { "a", "Acme", "acme_corp", "Globex.Research-2", "9" };
	static const char *const bad[] = { "_a", "a_", "-a", "a.", "a b", "a/b", "a:b" };
	char id[80];
	size_t k, i;

	for (k = 0; k < N(keys); k++) {
		for (i = 0; i < N(ok); i++)
			accept(with(keys[k], json_string(ok[i])));
		for (i = 0; i < N(bad); i++)
			refuse(with(keys[k], json_string(bad[i])), keys[k], "labels the pod");
		memset(id, 'x', 63);
		id[63] = '\0';
		accept(with(keys[k], json_string(id)));
		id[63] = 'x';
		id[64] = '\0';
		refuse(with(keys[k], json_string(id)), keys[k], "labels the pod");
	}
}

static void test_run_request_command_and_env(void **state)
{
	struct bm_run_request r;

	expect_ok(with("entry_command", json_pack("[s, s]", "python", "-m")), &r);
	assert_int_equal(json_array_size(r.command), 2);
	bm_run_request_free(&r);
	refuse(with("entry_command", json_array()), "entry_command", "1..256");
	refuse(with("entry_command", json_string("python")), "entry_command", "array");
	refuse(with("entry_command", json_pack("[s, s]", "python", "")), "entry_command[1]",
	       "must not be empty");
	refuse(with("entry_command", json_pack("[s, i]", "python", 1)), "entry_command[1]",
	       "must be a string");
	expect_ok(with("env_vars", json_pack("{s:s, s:s, s:s}", "B", "2", "A", "", "_x1", "y")),
		  &r);
	assert_int_equal(json_object_size(r.env), 3);
	/* in the request's order */
	assert_string_equal(json_object_iter_key(json_object_iter(r.env)), "B");
	bm_run_request_free(&r);
	refuse(with("env_vars", json_pack("{s:s}", "1A", "x")), "env_vars.1A", "variable name");
	refuse(with("env_vars", json_pack("{s:s}", "A-B", "x")), "env_vars.A-B", "variable name");
	refuse(with("env_vars", json_pack("{s:s}", "", "x")), "env_vars.", "variable name");
	refuse(with("env_vars", json_pack("{s:s}", "BURSTMETER_SOCKET", "/x")),
	       "env_vars.BURSTMETER_SOCKET", "reserved");
	refuse(with("env_vars", json_pack("{s:i}", "A", 1)), "env_vars.A", "must be a string");
	refuse(with("env_vars", json_pack("[s]", "A=1")), "env_vars", "object");
}

static void test_run_request_labels(void **state)
{
	static const char *const ok_keys[] = {
		"team", "app.example.com/budget", "notkubernetes.io/x", "k8s.io.example/x",
		"a_b.c-d",
	};
	static const char *const reserved[] = {
		"burstmeter.io/run", "kubernetes.io/x", "app.kubernetes.io/name", "k8s.io/x",
		"x.k8s.io/y", "node.burstmeter.io/a",
	};
	static const char *const bad_keys[] = { "Bad Key", "-x", "x/", "/x", "Ex.com/x", "a/b/c" };
	static const char *const bad_values[] = { "-x", "x-", "a b", "a/b" };
	char field[128], v[80];
	size_t i;

	for (i = 0; i < N(ok_keys); i++)
		accept(with("labels", json_pack("{s:s}", ok_keys[i], "v")));
	for (i = 0; i < N(reserved); i++) {
		snprintf(field, sizeof(field), "labels.%s", reserved[i]);
		refuse(with("labels", json_pack("{s:s}", reserved[i], "v")), field, "reserved");
	}
	for (i = 0; i < N(bad_keys); i++) {
		snprintf(field, sizeof(field), "labels.%s", bad_keys[i]);
		refuse(with("labels", json_pack("{s:s}", bad_keys[i], "v")), field, "label key");
	}
	for (i = 0; i < N(bad_values); i++)
		refuse(with("labels", json_pack("{s:s}", "k", bad_values[i])), "labels.k",
		       "label value");
	accept(with("labels", json_pack("{s:s}", "k", "")));	/* an empty value is a value */
	memset(v, 'v', 63);
	v[63] = '\0';
	accept(with("labels", json_pack("{s:s}", "k", v)));
	v[63] = 'v';
	v[64] = '\0';
	refuse(with("labels", json_pack("{s:s}", "k", v)), "labels.k", "label value");
	{
		json_t *many = json_object();

		for (i = 0; i <= BM_REQ_MAX_LABELS; i++) {
			snprintf(field, sizeof(field), "k%zu", i);
			json_object_set_new(many, field, json_string("v"));
		}
		refuse(with("labels", many), "labels", "at most 32");
	}
}

static void test_run_request_sizes_and_priority(void **state)
{
	struct bm_run_request r;

	expect_ok(with("workspace_size", json_string("10Gi")), &r);
	assert_int_equal(r.workspace_bytes, 10 * GIB);
	bm_run_request_free(&r);
	accept(with("workspace_size", json_integer(MIB)));
	refuse(with("workspace_size", json_integer(MIB - 1)), "workspace_size", "out of range");
	refuse(with("workspace_size", json_string("5Zi")), "workspace_size", "invalid");
	refuse(with("workspace_size", json_true()), "workspace_size",
	       "must be a number or a string");
	accept(with("priority", json_integer(1)));
	accept(with("priority", json_integer(10)));
	refuse(with("priority", json_integer(0)), "priority", "1..10");
	refuse(with("priority", json_integer(11)), "priority", "1..10");
	refuse(with("priority", json_string("5")), "priority", "1..10");
}

/* The effects API's own sandbox rules, through bm_sandbox_parse(), and the pod's. */
static void test_run_request_sandbox(void **state)
{
	json_t *q;

	refuse(with("sandbox.timeout_seconds", json_integer(0)), "sandbox.timeout_seconds",
	       "out of range");
	refuse(with("sandbox.timeout_seconds", json_integer(-1)), "sandbox.timeout_seconds",
	       "out of range");
	refuse(with("sandbox.cpu_limit", json_string("2x")), "sandbox.cpu_limit", "invalid");
	refuse(with("sandbox.memory_limit", json_string("lots")), "sandbox.memory_limit",
	       "invalid");
	q = with("sandbox.cpu_request", json_string("1500m"));
	refuse(q, "sandbox.cpu_request", "above cpu_limit");
	q = with("sandbox.memory_request", json_string("2Gi"));
	refuse(q, "sandbox.memory_request", "above memory_limit");
	refuse(with("sandbox.pids_limit", json_integer(64)), "sandbox.pids_limit", "not supported");
	refuse(with("sandbox.read_only_root_fs", json_false()), "sandbox.read_only_root_fs",
	       "always hardened");
	refuse(with("sandbox.run_as_non_root", json_false()), "sandbox.run_as_non_root",
	       "always hardened");
	refuse(with("sandbox.drop_all_capabilities", json_false()),
	       "sandbox.drop_all_capabilities", "always hardened");
	accept(with("sandbox.drop_all_capabilities", json_true()));
	refuse(with("sandbox.bogus", json_true()), "sandbox.bogus", "unknown field");
	refuse(with("sandbox.network_policy", json_string("egress_allow_list")),
	       "sandbox.allowed_egress_cidrs", "at least one CIDR");
	q = with("sandbox.network_policy", json_string("egress_allow_list"));
	json_object_set_new(json_object_get(q, "sandbox"), "allowed_egress_cidrs",
			    json_pack("[s]", "10.1.2.3/8"));
	refuse(q, "sandbox.allowed_egress_cidrs[0]", "did you mean \"10.0.0.0/8\"");
}

/* Every bad field at once, each once: one round trip fixes them all. */
static void test_run_request_every_error_at_once(void **state)
{
	json_t *q = json_pack("{s:s, s:s, s:s, s:i, s:{s:s, s:i}, s:i}", "agent_image", "",
			      "agent_id", "_", "run_id", "UP", "priority", 0, "sandbox",
			      "cpu_limit", "x", "timeout_seconds", 0, "extra", 1);
	struct bm_run_request r;
	json_t *errs = NULL;

	assert_int_equal(parse(q, &r, &errs), -EINVAL);
	/* extra, agent_image, agent_id, run_id, tenant_id, priority, cpu_limit, timeout,
	 * memory required */
	assert_int_equal(json_array_size(errs), 9);
	json_decref(errs);
}

static void test_run_request_bad_bodies(void **state)
{
	struct bm_run_request r;
	json_t *errs = NULL;
	char *big;

	assert_int_equal(bm_run_request_parse("", 0, &r, &errs), -EINVAL);
	assert_string_equal(json_string_value(json_object_get(json_array_get(errs, 0), "error")),
			    "empty request body");
	json_decref(errs);
	assert_int_equal(bm_run_request_parse("[1]", 3, &r, &errs), -EINVAL);
	json_decref(errs);
	assert_int_equal(bm_run_request_parse("{\"a\":1,\"a\":2}", 15, &r, NULL), -EINVAL);
	assert_int_equal(bm_run_request_parse("{\"agent_image\":\"a\\u0000b\"}", 26, &r, &errs),
			 -EINVAL);
	assert_string_equal(json_string_value(json_object_get(json_array_get(errs, 0), "field")),
			    "agent_image");
	json_decref(errs);
	big = malloc(BM_REQ_MAX_BODY + 1);
	assert_non_null(big);
	memset(big, ' ', BM_REQ_MAX_BODY + 1);
	assert_int_equal(bm_run_request_parse(big, BM_REQ_MAX_BODY + 1, &r, &errs), -EINVAL);
	assert_non_null(strstr(json_string_value(json_object_get(json_array_get(errs, 0), "error")),
			       "over the 1048576-byte limit"));
	json_decref(errs);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_request_defaults_and_pairs),
		cmocka_unit_test(test_run_request_required),
		cmocka_unit_test(test_run_request_image),
		cmocka_unit_test(test_run_request_run_id),
		cmocka_unit_test(test_run_request_label_ids),
		cmocka_unit_test(test_run_request_command_and_env),
		cmocka_unit_test(test_run_request_labels),
		cmocka_unit_test(test_run_request_sizes_and_priority),
		cmocka_unit_test(test_run_request_sandbox),
		cmocka_unit_test(test_run_request_every_error_at_once),
		cmocka_unit_test(test_run_request_bad_bodies),
	};

	return cmocka_run_group_tests_name("run_request", tests, NULL, NULL);
}
