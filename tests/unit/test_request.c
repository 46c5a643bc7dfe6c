// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/agent/request.h: an execution request is checked completely before any
 * resource is used, so each rule is pinned here from both sides (the last
 * value accepted, the first refused), errors are checked by the field they
 * name, several at once, and the canonical form must parse back unchanged.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "agent/request.h"
#include "agent/request_field.h"
#include "agent/request_sandbox.h"

#define MIB (1024ULL * 1024)
#define GIB (MIB * 1024)
#define TIB (GIB * 1024)
#define NS_PER_S 1000000000ULL
#define NS_PER_MS 1000000ULL
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* The smallest valid request: the base every single-rule test changes one field of. */
static json_t *base(void)
{
	json_t *req = json_pack("{s:s, s:[s, s]}", "id", "tc-42", "argv", "pytest", "-x");

	assert_non_null(req);
	return req;
}

/* Set "key" or "sandbox.key" of req to v (stolen); a NULL v removes the key. */
static json_t *set(json_t *req, const char *path, json_t *v)
{
	json_t *obj = req;

	if (!strncmp(path, "sandbox.", 8)) {
		obj = json_object_get(req, "sandbox");
		if (!obj) {
			obj = json_object();
			json_object_set_new(req, "sandbox", obj);
		}
		path += 8;
	}
	if (v)
		json_object_set_new(obj, path, v);
	else
		json_object_del(obj, path);
	return req;
}

static json_t *with(const char *path, json_t *v)
{
	return set(base(), path, v);
}

/* A string of n copies of c (the caller frees it). */
static char *repeat(char c, size_t n)
{
	char *s = malloc(n + 1);

	assert_non_null(s);
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

static json_t *str_of(char c, size_t n)
{
	char *s = repeat(c, n);
	json_t *v = json_string(s);

	free(s);
	return v;
}

static char *dump(json_t *j)
{
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

	return s ? s : strdup("(null)");
}

static char *dump_free(json_t *j)
{
	char *s = dump(j);

	json_decref(j);
	return s;
}

/* Parse req (consumed) the way the agent gets it: as text. */
static int parse_json(json_t *req, struct bm_request *r, json_t **errs)
{
	char *text = json_dumps(req, JSON_COMPACT);
	int err;

	assert_non_null(text);
	err = bm_request_parse(text, strlen(text), r, errs);
	free(text);
	json_decref(req);
	return err;
}

static void expect_ok(json_t *req, struct bm_request *r)
{
	json_t *errs = NULL;
	int err = parse_json(req, r, &errs);

	if (err)
		fail_msg("want a valid request, got %d: %s", err, dump(errs));
	assert_null(errs);
	assert_non_null(r->labels);
}

/* A failed parse leaves nothing owned in r and a well-formed list of errors. */
static void check_failed(int err, const struct bm_request *r, json_t *errs)
{
	json_t *e;
	size_t i;

	assert_int_equal(err, -EINVAL);
	assert_null(r->argv);
	assert_null(r->env);
	assert_null(r->labels);
	assert_true(json_is_array(errs));
	assert_true(json_array_size(errs) >= 1);
	json_array_foreach(errs, i, e) {
		assert_int_equal(json_object_size(e), 2);
		assert_true(json_is_string(json_object_get(e, "field")));
		assert_true(json_is_string(json_object_get(e, "error")));
	}
}

static const char *field_at(json_t *errs, size_t i)
{
	return json_string_value(json_object_get(json_array_get(errs, i), "field"));
}

static const char *error_at(json_t *errs, size_t i)
{
	return json_string_value(json_object_get(json_array_get(errs, i), "error"));
}

/* Exactly one error, on field, its message containing want. */
static void expect_errs(int err, struct bm_request *r, json_t *errs, const char *field,
			const char *want)
{
	check_failed(err, r, errs);
	if (json_array_size(errs) != 1 || strcmp(field_at(errs, 0), field) ||
	    !strstr(error_at(errs, 0), want))
		fail_msg("want one error on \"%s\" containing \"%s\", got %s", field, want,
			 dump(errs));
	bm_request_free(r);	/* harmless after a failure */
	json_decref(errs);
}

static void expect_bad(json_t *req, const char *field, const char *want)
{
	struct bm_request r;
	json_t *errs = NULL;
	int err = parse_json(req, &r, &errs);

	expect_errs(err, &r, errs, field, want);
}

static void expect_bad_text(const char *body, size_t len, const char *field, const char *want)
{
	struct bm_request r;
	json_t *errs = NULL;
	int err = bm_request_parse(body, len, &r, &errs);

	expect_errs(err, &r, errs, field, want);
}

static void expect_bad_str(const char *body, const char *field, const char *want)
{
	expect_bad_text(body, strlen(body), field, want);
}

/* Exactly these fields have errors, each once, in any order. */
static void expect_fields(json_t *req, const char *const *fields, size_t n)
{
	struct bm_request r;
	json_t *errs = NULL;
	size_t i, j, hits;
	int err = parse_json(req, &r, &errs);

	check_failed(err, &r, errs);
	for (i = 0; i < n; i++) {
		for (j = 0, hits = 0; j < json_array_size(errs); j++)
			hits += !strcmp(field_at(errs, j), fields[i]);
		if (hits != 1)
			fail_msg("want one error on \"%s\", got %s", fields[i], dump(errs));
	}
	if (json_array_size(errs) != n)
		fail_msg("want %zu errors, got %s", n, dump(errs));
	json_decref(errs);
}

static void test_request_minimal_launch_gets_defaults(void **state)
{
	struct bm_request r;

	expect_ok(base(), &r);
	assert_string_equal(r.id, "tc-42");
	assert_string_equal(r.tenant, "");
	assert_string_equal(r.intent, "");
	assert_int_equal(r.mode, BM_REQ_LAUNCH);
	assert_int_equal(r.attach_pid, 0);
	assert_string_equal(r.argv[0], "pytest");
	assert_string_equal(r.argv[1], "-x");
	assert_null(r.argv[2]);
	assert_null(r.env);
	assert_null(r.cwd);	/* / */
	assert_int_equal(r.priority, 5);
	assert_int_equal(json_object_size(r.labels), 0);
	assert_int_equal(r.window_ns, 10 * NS_PER_MS);
	assert_int_equal(r.sandbox.network_policy, BM_NET_FULL);
	assert_int_equal(r.sandbox.cpu_request_milli, 0);
	assert_int_equal(r.sandbox.memory_limit, 0);
	assert_int_equal(r.sandbox.timeout_ns, 0);
	assert_int_equal(r.sandbox.n_cidrs, 0);
	assert_false(r.sandbox.read_only_root_fs || r.sandbox.run_as_non_root ||
		     r.sandbox.drop_all_capabilities);
	bm_request_free(&r);
	bm_request_free(&r);	/* twice is harmless */
	bm_request_free(NULL);
}

static const char full_body[] =
	"{\"id\": \"tc-42\", \"tenant\": \"acme\", \"intent\": \"run the tests\","
	" \"mode\": \"launch\", \"argv\": [\"pytest\", \"-x\"],"
	" \"env\": {\"PATH\": \"/usr/bin\", \"_X1\": \"a=b\"}, \"cwd\": \"/work\","
	" \"priority\": 7, \"labels\": {\"team\": \"infra\", \"app.kubernetes.io/name\": \"ci\"},"
	" \"window_ms\": 50, \"sandbox\": {\"cpu_request\": \"500m\", \"cpu_limit\": 2,"
	" \"memory_request\": \"256Mi\", \"memory_limit\": 1073741824,"
	" \"timeout_seconds\": 600, \"max_ephemeral_storage\": \"1Gi\","
	" \"network_policy\": \"egress_allow_list\","
	" \"allowed_egress_cidrs\": [\"10.0.0.0/8\", \"2001:DB8:0:0::/32\"],"
	" \"read_only_root_fs\": true, \"run_as_non_root\": false,"
	" \"drop_all_capabilities\": true}}";

static void test_request_full_launch_every_field(void **state)
{
	const struct bm_sandbox *sb;
	struct bm_request r;
	char buf[BM_CIDR_STRLEN];
	json_t *errs = NULL;

	assert_int_equal(bm_request_parse(full_body, strlen(full_body), &r, &errs), 0);
	assert_null(errs);
	assert_string_equal(r.tenant, "acme");
	assert_string_equal(r.intent, "run the tests");
	assert_string_equal(r.env[0], "PATH=/usr/bin");
	assert_string_equal(r.env[1], "_X1=a=b");
	assert_null(r.env[2]);
	assert_string_equal(r.cwd, "/work");
	assert_int_equal(r.priority, 7);
	assert_string_equal(json_string_value(json_object_get(r.labels, "app.kubernetes.io/name")),
			    "ci");
	assert_int_equal(json_object_size(r.labels), 2);
	assert_int_equal(r.window_ns, 50 * NS_PER_MS);
	sb = &r.sandbox;
	assert_int_equal(sb->cpu_request_milli, 500);
	assert_int_equal(sb->cpu_limit_milli, 2000);
	assert_int_equal(sb->memory_request, 256 * MIB);
	assert_int_equal(sb->memory_limit, GIB);
	assert_int_equal(sb->timeout_ns, 600 * NS_PER_S);
	assert_int_equal(sb->max_ephemeral_storage, GIB);
	assert_int_equal(sb->network_policy, BM_NET_EGRESS_ALLOW_LIST);
	assert_int_equal(sb->n_cidrs, 2);
	assert_int_equal(sb->cidrs[0].family, AF_INET);
	assert_int_equal(sb->cidrs[0].prefix, 8);
	assert_int_equal(bm_cidr_format(&sb->cidrs[1], buf, sizeof(buf)), 0);
	assert_string_equal(buf, "2001:db8::/32");
	assert_true(sb->read_only_root_fs);
	assert_false(sb->run_as_non_root);
	assert_true(sb->drop_all_capabilities);
	bm_request_free(&r);
}

static void test_request_id_and_tenant_are_names(void **state)
{
	static const char *const bad[] = { "../x", ".", "..", ".hidden", "a/b", "", "a b", "é" };
	struct bm_request r;
	size_t i;

	for (i = 0; i < N(bad); i++) {
		expect_bad(with("id", json_string(bad[i])), "id", "invalid id");
		expect_bad(with("tenant", json_string(bad[i])), "tenant", "invalid tenant");
	}
	expect_bad(with("id", str_of('a', BM_NAME_MAX + 1)), "id", "invalid id");
	expect_bad(with("id", json_integer(42)), "id", "must be a string");
	expect_bad(with("id", json_null()), "id", "must be a string");
	expect_bad(with("id", NULL), "id", "required");
	expect_bad(with("tenant", json_stringn("ac\0me", 5)), "tenant", "NUL");
	expect_ok(set(with("id", str_of('a', BM_NAME_MAX)), "tenant", json_string("a.b_c-9")),
		  &r);
	assert_int_equal(strlen(r.id), BM_NAME_MAX);
	assert_string_equal(r.tenant, "a.b_c-9");
	bm_request_free(&r);
}

static void test_request_intent_is_bounded_in_bytes(void **state)
{
	struct bm_request r;
	char *s = repeat('x', 4096);
	size_t i;

	/* 2048 two-byte characters: the limit is 4096 bytes, not characters */
	for (i = 0; i < 2048; i++)
		memcpy(s + 2 * i, "\xc3\xa9", 2);
	expect_ok(with("intent", json_string(s)), &r);
	assert_int_equal(strlen(r.intent), 4096);
	bm_request_free(&r);
	free(s);
	expect_bad(with("intent", str_of('x', 4097)), "intent", "4097 bytes");
	expect_bad(with("intent", json_false()), "intent", "must be a string");
	expect_bad(with("intent", json_stringn("a\0b", 3)), "intent", "NUL");
}

static void test_request_attach_mode_takes_a_pid(void **state)
{
	struct bm_request r;

	expect_ok(set(set(with("mode", json_string("attach")), "argv", NULL), "pid",
		      json_integer(1234)), &r);
	assert_int_equal(r.mode, BM_REQ_ATTACH);
	assert_int_equal(r.attach_pid, 1234);
	assert_null(r.argv);
	bm_request_free(&r);
	expect_ok(set(set(with("mode", json_string("attach")), "argv", NULL), "pid",
		      json_integer(4194304)), &r);
	assert_int_equal(r.attach_pid, 4194304);
	bm_request_free(&r);
	expect_ok(set(set(with("mode", json_string("attach")), "argv", NULL), "pid",
		      json_integer(1)), &r);
	bm_request_free(&r);
	/* no pid: named later (POST .../attach), and the canonical form keeps it out */
	expect_ok(set(with("mode", json_string("attach")), "argv", NULL), &r);
	assert_int_equal(r.mode, BM_REQ_ATTACH);
	assert_int_equal(r.attach_pid, 0);
	{
		json_t *c = bm_request_json(&r);

		assert_null(json_object_get(c, "pid"));
		json_decref(c);
	}
	bm_request_free(&r);
	expect_ok(with("mode", json_string("launch")), &r);
	assert_int_equal(r.mode, BM_REQ_LAUNCH);
	bm_request_free(&r);
}

static void test_request_pid_and_argv_follow_the_mode(void **state)
{
	static const char *const bad_pid[] = { "0", "4194305", "-1", "\"1234\"", "1234.0", "true" };
	char body[128];
	size_t i;

	for (i = 0; i < N(bad_pid); i++) {
		snprintf(body, sizeof(body), "{\"id\": \"a\", \"mode\": \"attach\", \"pid\": %s}",
			 bad_pid[i]);
		expect_bad_text(body, strlen(body), "pid", "must be an integer 1..4194304");
	}
	expect_bad(with("pid", json_integer(1)), "pid", "not allowed with mode \"launch\"");
	expect_bad(with("argv", NULL), "argv", "required with mode \"launch\"");
	/* an unknown mode: only the mode is wrong, pid/argv cannot be judged */
	expect_bad(with("mode", json_string("run")), "mode", "expected \"launch\" or \"attach\"");
	expect_bad(set(with("mode", json_string("ATTACH")), "pid", json_integer(9)), "mode",
		   "\"ATTACH\"");
	expect_bad(with("mode", json_integer(1)), "mode", "must be a string");
}

static void test_request_argv_limits(void **state)
{
	json_t *argv = json_array();
	struct bm_request r;
	int i;

	for (i = 0; i < BM_REQ_MAX_ARGS; i++)
		json_array_append_new(argv, json_string("a"));
	expect_ok(with("argv", json_deep_copy(argv)), &r);
	assert_non_null(r.argv[BM_REQ_MAX_ARGS - 1]);
	assert_null(r.argv[BM_REQ_MAX_ARGS]);
	bm_request_free(&r);
	json_array_append_new(argv, json_string("a"));
	expect_bad(with("argv", argv), "argv", "257 arguments, expected 1..256");
	expect_bad(with("argv", json_array()), "argv", "0 arguments");
	expect_bad(with("argv", json_string("pytest -x")), "argv", "must be an array");
	expect_bad(with("argv", json_pack("[s, i]", "a", 1)), "argv[1]", "must be a string");
	expect_bad(with("argv", json_pack("[s, s]", "a", "")), "argv[1]", "must not be empty");
	expect_bad(with("argv", json_pack("[s, o]", "a", str_of('x', 4097))), "argv[1]",
		   "4097 bytes long, at most 4096");
	expect_ok(with("argv", json_pack("[o]", str_of('x', 4096))), &r);
	assert_int_equal(strlen(r.argv[0]), 4096);
	bm_request_free(&r);
}

static void test_request_argv_rejects_nul_by_field(void **state)
{
	static const char body[] = "{\"id\": \"a\", \"argv\": [\"sh\", \"a\\u0000b\"]}";

	/* JSON_ALLOW_NUL lets it through the parser so that the error can name argv[1] */
	expect_bad_text(body, strlen(body), "argv[1]", "NUL");
}

static void test_request_env_becomes_k_equals_v(void **state)
{
	struct bm_request r;
	json_t *env = json_object();
	char name[16];
	int i;

	expect_ok(with("env", json_pack("{s:s, s:s, s:s}", "PATH", "/usr/bin", "_a9", "",
					"LC_ALL", "C=D")), &r);
	assert_string_equal(r.env[0], "PATH=/usr/bin");	/* order kept */
	assert_string_equal(r.env[1], "_a9=");
	assert_string_equal(r.env[2], "LC_ALL=C=D");
	assert_null(r.env[3]);
	bm_request_free(&r);
	/* {} is an empty environment, not an inherited one */
	expect_ok(with("env", json_object()), &r);
	assert_non_null(r.env);
	assert_null(r.env[0]);
	bm_request_free(&r);
	for (i = 0; i < BM_REQ_MAX_ENV; i++) {
		snprintf(name, sizeof(name), "V%d", i);
		json_object_set_new(env, name, json_string("x"));
	}
	expect_ok(with("env", json_deep_copy(env)), &r);
	assert_non_null(r.env[BM_REQ_MAX_ENV - 1]);
	bm_request_free(&r);
	json_object_set_new(env, "ONE_MORE", json_string("x"));
	expect_bad(with("env", env), "env", "257 variables, at most 256");
}

static void test_request_env_rejects_bad_names_and_values(void **state)
{
	static const char *const bad[] = { "1A", "A-B", "A B", "A=B", "", "É", "a.b" };
	char field[32];
	size_t i;

	for (i = 0; i < N(bad); i++) {
		snprintf(field, sizeof(field), "env.%s", bad[i]);
		expect_bad(with("env", json_pack("{s:s}", bad[i], "v")), field,
			   "invalid variable name");
	}
	expect_bad(with("env", json_pack("{s:i}", "A", 1)), "env.A", "must be a string");
	expect_bad(with("env", json_pack("{s:n}", "A")), "env.A", "must be a string");
	expect_bad(with("env", json_pack("{s:o}", "A", json_stringn("x\0y", 3))), "env.A",
		   "NUL");
	expect_bad(with("env", json_pack("[s]", "A=B")), "env", "must be an object");
	/* execve() refuses a "K=V" string of 128 KiB or more */
	expect_bad(with("env", json_pack("{s:o}", "AB", str_of('v', 131071 - 2))), "env.AB",
		   "at most 131068");
}

static void test_request_cwd_is_absolute_without_dotdot(void **state)
{
	static const char *const ok[] = { "/", "/work", "/a/..b", "/a/b..", "/..a", "/a/./b" };
	static const char *const dotdot[] = { "/..", "/a/..", "/a/../b", "//../", "/a/b/.." };
	struct bm_request r;
	size_t i;

	for (i = 0; i < N(ok); i++) {
		expect_ok(with("cwd", json_string(ok[i])), &r);
		assert_string_equal(r.cwd, ok[i]);
		bm_request_free(&r);
	}
	for (i = 0; i < N(dotdot); i++)
		expect_bad(with("cwd", json_string(dotdot[i])), "cwd", "\"..\" component");
	expect_bad(with("cwd", json_string("work")), "cwd", "not an absolute path");
	expect_bad(with("cwd", json_string("")), "cwd", "not an absolute path");
	expect_bad(with("cwd", json_string("../etc")), "cwd", "not an absolute path");
	expect_bad(with("cwd", json_stringn("/a\0/b", 5)), "cwd", "NUL");
	expect_bad(with("cwd", json_integer(1)), "cwd", "must be a string");
	/* < PATH_MAX: the last length that fits with its NUL, then one more */
	expect_ok(with("cwd", str_of('/', PATH_MAX - 1)), &r);
	assert_int_equal(strlen(r.cwd), PATH_MAX - 1);
	bm_request_free(&r);
	expect_bad(with("cwd", str_of('/', PATH_MAX)), "cwd", "at most 4095");
}

static void test_request_priority_and_window_are_strict_integers(void **state)
{
	static const char *const bad_prio[] = { "0", "11", "-5", "\"5\"", "5.0", "true", "null" };
	static const char *const bad_win[] = { "0", "1001", "10.5", "\"10ms\"", "\"10\"" };
	struct bm_request r;
	char body[128];
	size_t i;

	for (i = 0; i < N(bad_prio); i++) {
		snprintf(body, sizeof(body), "{\"id\":\"a\",\"argv\":[\"x\"],\"priority\":%s}",
			 bad_prio[i]);
		expect_bad_text(body, strlen(body), "priority", "must be an integer 1..10");
	}
	for (i = 0; i < N(bad_win); i++) {
		snprintf(body, sizeof(body), "{\"id\":\"a\",\"argv\":[\"x\"],\"window_ms\":%s}",
			 bad_win[i]);
		expect_bad_text(body, strlen(body), "window_ms", "must be an integer 1..1000");
	}
	expect_ok(set(with("priority", json_integer(1)), "window_ms", json_integer(1)), &r);
	assert_int_equal(r.priority, 1);
	assert_int_equal(r.window_ns, NS_PER_MS);
	bm_request_free(&r);
	expect_ok(set(with("priority", json_integer(10)), "window_ms", json_integer(1000)), &r);
	assert_int_equal(r.priority, 10);
	assert_int_equal(r.window_ns, 1000 * NS_PER_MS);
	bm_request_free(&r);
}

static void test_request_labels_keys_values_and_count(void **state)
{
	static const char *const bad_keys[] = { "App", "", "a b", "a:b", "é", "a@b" };
	json_t *labels = json_object();
	struct bm_request r;
	char key[80], *k63 = repeat('k', 63), *k64 = repeat('k', 64);
	size_t i;

	for (i = 0; i < N(bad_keys); i++) {
		snprintf(key, sizeof(key), "labels.%s", bad_keys[i]);
		expect_bad(with("labels", json_pack("{s:s}", bad_keys[i], "v")), key,
			   "invalid label key");
	}
	snprintf(key, sizeof(key), "labels.%s", k64);
	expect_bad(with("labels", json_pack("{s:s}", k64, "v")), key, "invalid label key");
	expect_ok(with("labels", json_pack("{s:s, s:o}", "a-b_c./9", "", k63, str_of('v', 255))),
		  &r);
	assert_int_equal(json_object_size(r.labels), 2);
	assert_int_equal(json_string_length(json_object_get(r.labels, k63)), 255);
	bm_request_free(&r);
	snprintf(key, sizeof(key), "labels.%s", k63);
	expect_bad(with("labels", json_pack("{s:o}", k63, str_of('v', 256))), key,
		   "256 bytes long, at most 255");
	expect_bad(with("labels", json_pack("{s:i}", "k", 1)), "labels.k", "must be a string");
	expect_bad(with("labels", json_pack("{s:o}", "k", json_stringn("\0", 1))), "labels.k",
		   "NUL");
	expect_bad(with("labels", json_pack("[s]", "k")), "labels", "must be an object");
	for (i = 0; i < BM_REQ_MAX_LABELS; i++) {
		snprintf(key, sizeof(key), "l%zu", i);
		json_object_set_new(labels, key, json_string("v"));
	}
	expect_ok(with("labels", json_deep_copy(labels)), &r);
	assert_int_equal(json_object_size(r.labels), BM_REQ_MAX_LABELS);
	bm_request_free(&r);
	json_object_set_new(labels, "one-more", json_string("v"));
	expect_bad(with("labels", labels), "labels", "33 labels, at most 32");
	free(k63);
	free(k64);
}

struct qty_ok {
	const char *json;	/* the value as JSON text: a number or a string */
	uint64_t want;
};

/* Each value of field given as JSON text parses to want (read back through get). */
static void check_quantities(const char *field, const struct qty_ok *c, size_t n,
			     size_t off)
{
	struct bm_request r;
	json_t *errs = NULL;
	char body[256];
	uint64_t got;
	size_t i;

	for (i = 0; i < n; i++) {
		snprintf(body, sizeof(body),
			 "{\"id\":\"a\",\"argv\":[\"x\"],\"sandbox\":{\"%s\":%s}}", field,
			 c[i].json);
		if (bm_request_parse(body, strlen(body), &r, &errs))
			fail_msg("%s: %s refused: %s", field, c[i].json, dump(errs));
		memcpy(&got, (char *)&r.sandbox + off, sizeof(got));
		if (got != c[i].want)
			fail_msg("%s: %s gave %llu, want %llu", field, c[i].json,
				 (unsigned long long)got, (unsigned long long)c[i].want);
		bm_request_free(&r);
	}
}

/* Each value of field given as JSON text is refused with a message containing want. */
static void check_bad_quantities(const char *field, const char *const *in, size_t n,
				 const char *want)
{
	char body[256], name[64];
	size_t i;

	snprintf(name, sizeof(name), "sandbox.%s", field);
	for (i = 0; i < n; i++) {
		snprintf(body, sizeof(body),
			 "{\"id\":\"a\",\"argv\":[\"x\"],\"sandbox\":{\"%s\":%s}}", field, in[i]);
		expect_bad_text(body, strlen(body), name, want);
	}
}

static void test_request_cpu_in_cores_or_millicores(void **state)
{
	static const struct qty_ok ok[] = {
		{ "\"500m\"", 500 }, { "\"0.5\"", 500 }, { "0.5", 500 }, { "2", 2000 },
		{ "\"2\"", 2000 }, { "0.001", 1 }, { "\"1m\"", 1 }, { "1024", 1024000 },
		{ "\"1024000m\"", 1024000 }, { "1.25", 1250 }, { "2.0", 2000 }, { "1e2", 100000 },
		/* Kubernetes quantities: exponents, and finer than a millicore rounds up as there */
		{ "\"1e3\"", 1000000 }, { "\"5e-1\"", 500 }, { "\"1k\"", 1000000 },
		{ "0.0001", 1 }, { "\"0.0001\"", 1 }, { "\"1.0005\"", 1001 },
	};
	static const char *const range[] = {
		"0", "\"0\"", "1025", "\"1025\"", "\"1024001m\"", "-1", "-0.5", "-0.0",
		"1e300", "\"99999999999999999999\"", "\"2k\"", "\"2Ki\"", "\"0e5\"",
	};
	static const char *const invalid[] = {
		"\"abc\"", "\"1e3m\"", "\"500 m\"", "\"-1\"", "\"\"", "\"1c\"", "\"m\"",
	};
	static const char *const type[] = { "true", "null", "[1]", "{}" };
	size_t off = offsetof(struct bm_sandbox, cpu_request_milli);

	check_quantities("cpu_request", ok, N(ok), off);
	check_quantities("cpu_limit", ok, N(ok), offsetof(struct bm_sandbox, cpu_limit_milli));
	check_bad_quantities("cpu_request", range, N(range), "out of range: expected cores");
	check_bad_quantities("cpu_limit", range, N(range), "out of range");
	check_bad_quantities("cpu_request", invalid, N(invalid), "invalid");
	check_bad_quantities("cpu_limit", type, N(type), "must be a number or a string");
}

static void test_request_memory_and_storage_sizes(void **state)
{
	static const struct qty_ok ok[] = {
		{ "\"256Mi\"", 256 * MIB }, { "268435456", 256 * MIB }, { "\"1Mi\"", MIB },
		{ "1048576", MIB }, { "\"64Ti\"", 64 * TIB }, { "\"1.5Gi\"", GIB + GIB / 2 },
		{ "70368744177664", 64 * TIB }, { "2.5e8", 250000000 },
		/* Kubernetes quantities: decimal suffixes are powers of 1000, exponents exact */
		{ "\"2G\"", 2000000000 }, { "\"1.5G\"", 1500000000 }, { "\"500M\"", 500000000 },
		{ "\"1e9\"", 1000000000 }, { "\"2.5E8\"", 250000000 }, { "\"1048576k\"", 1048576000 },
		{ "\"70T\"", 70000000000000ULL }, { "\"65T\"", 65000000000000ULL }, { "\"+1Gi\"", GIB }, { "\"0.5Gi\"", GIB / 2 },
		{ "\"1048576000m\"", MIB },
	};
	static const char *const range[] = {
		"1048575", "\"1k\"", "0", "\"65Ti\"", "70368744177665", "-1", "1e300",
		"\"1M\"", "\"1P\"", "\"1Pi\"", "\"1e6\"", "\"1E\"", "\"71T\"",
	};
	static const char *const invalid[] = {
		"\"big\"", "\"1 G\"", "\"-1M\"", "\"1K\"", "\"1GB\"", "\"1g\"", "\"1e\"", "\"1Q\"", "\"1.5.5\"",
		"\"e9\"", "\"1KiB\"",
	};

	check_quantities("memory_request", ok, N(ok), offsetof(struct bm_sandbox, memory_request));
	check_quantities("memory_limit", ok, N(ok), offsetof(struct bm_sandbox, memory_limit));
	check_quantities("max_ephemeral_storage", ok, N(ok),
			 offsetof(struct bm_sandbox, max_ephemeral_storage));
	check_bad_quantities("memory_request", range, N(range), "out of range: expected a size");
	check_bad_quantities("memory_limit", invalid, N(invalid), "invalid");
	check_bad_quantities("max_ephemeral_storage", range, N(range), "out of range");
	check_bad_quantities("max_ephemeral_storage", (const char *const[]){ "false" }, 1,
			     "must be a number or a string");
}

/* I/O ceilings: bytes per second 4Ki..1Ti, operations per second 1..1000000. */
static void test_request_io_ceilings(void **state)
{
	static const struct qty_ok bps[] = {
		{ "\"50Mi\"", 50 * MIB }, { "52428800", 50 * MIB }, { "4096", 4096 },
		{ "\"1Ti\"", MIB * MIB },
	};
	static const struct qty_ok iops[] = { { "1", 1 }, { "\"1000\"", 1000 }, { "1000000", 1000000 } };
	static const char *const bps_range[] = { "4095", "0", "\"2Ti\"", "-1" };
	static const char *const iops_range[] = { "0", "1000001", "-5" };

	check_quantities("io_read_bps", bps, N(bps), offsetof(struct bm_sandbox, io_read_bps));
	check_quantities("io_write_bps", bps, N(bps), offsetof(struct bm_sandbox, io_write_bps));
	check_quantities("io_iops", iops, N(iops), offsetof(struct bm_sandbox, io_iops));
	check_bad_quantities("io_read_bps", bps_range, N(bps_range), "out of range");
	check_bad_quantities("io_write_bps", (const char *const[]){ "\"fast\"" }, 1, "invalid");
	check_bad_quantities("io_iops", iops_range, N(iops_range), "out of range");
}

static void test_request_timeout_in_seconds_or_duration(void **state)
{
	static const struct qty_ok ok[] = {
		{ "600", 600 * NS_PER_S }, { "\"10m\"", 600 * NS_PER_S }, { "0.001", NS_PER_MS },
		{ "\"1ms\"", NS_PER_MS }, { "604800", 604800 * NS_PER_S },
		{ "\"168h\"", 604800 * NS_PER_S }, { "\"1.5\"", 1500 * NS_PER_MS },
		{ "1.5", 1500 * NS_PER_MS }, { "\"250ms\"", 250 * NS_PER_MS },
		{ "\"0.001000001\"", NS_PER_MS + 1 },
	};
	static const char *const range[] = {
		"0", "0.0009", "\"999us\"", "604801", "\"169h\"", "-1", "1e300",
	};
	static const char *const invalid[] = { "\"10 m\"", "\"1d\"", "\"soon\"" };

	check_quantities("timeout_seconds", ok, N(ok), offsetof(struct bm_sandbox, timeout_ns));
	check_bad_quantities("timeout_seconds", range, N(range), "out of range: expected seconds");
	check_bad_quantities("timeout_seconds", invalid, N(invalid), "invalid");
}

/* timeout_ns: how the canonical form keeps the timeout exactly. */
static void test_request_timeout_ns_is_the_canonical_spelling(void **state)
{
	static const struct qty_ok ok[] = {
		{ "1000000", NS_PER_MS }, { "604800000000000", 604800 * NS_PER_S },
	};
	static const char *const bad[] = {
		"999999", "604800000000001", "\"10m\"", "1.5e9", "true",
	};
	static const char both[] =
		"{\"id\":\"a\",\"argv\":[\"x\"],\"sandbox\":{\"timeout_ns\":1000000,"
		"\"timeout_seconds\":1}}";

	check_quantities("timeout_ns", ok, N(ok), offsetof(struct bm_sandbox, timeout_ns));
	check_bad_quantities("timeout_ns", bad, N(bad), "must be an integer 1000000..");
	expect_bad_text(both, strlen(both), "sandbox.timeout_ns", "not both");
}

static void test_request_request_above_limit_names_both(void **state)
{
	struct bm_request r;

	expect_bad(set(with("sandbox.cpu_request", json_string("3")), "sandbox.cpu_limit",
		       json_integer(2)), "sandbox.cpu_request",
		   "cpu_request 3000m is above cpu_limit 2000m");
	expect_bad(set(with("sandbox.memory_request", json_string("2Gi")), "sandbox.memory_limit",
		       json_string("1Gi")), "sandbox.memory_request",
		   "memory_request 2147483648 bytes is above memory_limit 1073741824 bytes");
	/* equal is fine; so is either one alone */
	expect_ok(set(set(set(with("sandbox.cpu_request", json_string("2")), "sandbox.cpu_limit",
			      json_string("2000m")), "sandbox.memory_request", json_string("1Gi")),
		      "sandbox.memory_limit", json_integer(GIB)), &r);
	bm_request_free(&r);
	expect_ok(set(with("sandbox.cpu_request", json_integer(8)), "sandbox.memory_limit",
		      json_string("1Mi")), &r);
	assert_int_equal(r.sandbox.cpu_request_milli, 8000);
	assert_int_equal(r.sandbox.cpu_limit_milli, 0);
	bm_request_free(&r);
}

static void test_request_network_policy_and_cidrs_go_together(void **state)
{
	static const char *const names[] = { "none", "egress_restricted", "full" };
	static const char cidrs[] = "sandbox.allowed_egress_cidrs";
	struct bm_request r;
	size_t i;

	for (i = 0; i < N(names); i++) {
		expect_ok(with("sandbox.network_policy", json_string(names[i])), &r);
		assert_string_equal(bm_netpol_name(r.sandbox.network_policy), names[i]);
		bm_request_free(&r);
		/* forbidden, even empty, with any policy but the allow list */
		expect_bad(set(with("sandbox.network_policy", json_string(names[i])),
			       "sandbox.allowed_egress_cidrs", json_pack("[s]", "10.0.0.0/8")), cidrs,
			   "only allowed with network_policy \"egress_allow_list\"");
		expect_bad(set(with("sandbox.network_policy", json_string(names[i])),
			       "sandbox.allowed_egress_cidrs", json_array()), cidrs, "only allowed");
	}
	expect_bad(with("sandbox.allowed_egress_cidrs", json_pack("[s]", "10.0.0.0/8")), cidrs,
		   "only allowed");	/* the default policy is full */
	expect_bad(with("sandbox.network_policy", json_string("egress_allow_list")), cidrs,
		   "at least one CIDR required");
	expect_bad(set(with("sandbox.network_policy", json_string("egress_allow_list")),
		       "sandbox.allowed_egress_cidrs", json_array()), cidrs, "at least one CIDR");
	expect_bad(with("sandbox.network_policy", json_string("deny")), "sandbox.network_policy",
		   "\"deny\": expected \"none\"");
	expect_bad(with("sandbox.network_policy", json_integer(0)), "sandbox.network_policy",
		   "must be a string");
	/* an unknown policy: the CIDRs cannot be judged required or forbidden */
	expect_bad(set(with("sandbox.network_policy", json_string("allow")),
		       "sandbox.allowed_egress_cidrs", json_pack("[s]", "10.0.0.0/8")),
		   "sandbox.network_policy", "\"allow\"");
	expect_bad(set(with("sandbox.network_policy", json_string("egress_allow_list")),
		       "sandbox.allowed_egress_cidrs", json_string("10.0.0.0/8")), cidrs,
		   "must be an array");
}

/* A request allowing egress to exactly these CIDRs (a NULL-ended list). */
static json_t *allow(const char *const *cidrs)
{
	json_t *a = json_array();

	for (; *cidrs; cidrs++)
		json_array_append_new(a, json_string(*cidrs));
	return set(with("sandbox.network_policy", json_string("egress_allow_list")),
		   "sandbox.allowed_egress_cidrs", a);
}

static void test_request_cidrs_are_normalised(void **state)
{
	static const char *const in[] = {
		"10.0.0.0/8", "0.0.0.0/0", "192.168.1.7/32", "10.0.0.0/08", "2001:DB8:0:0::/32",
		"::/0", "fe80::1/128", "::ffff:10.0.0.0/104", "2001:db8:ff00::/40", NULL,
	};
	static const char *const want[] = {
		"10.0.0.0/8", "0.0.0.0/0", "192.168.1.7/32", "10.0.0.0/8", "2001:db8::/32",
		"::/0", "fe80::1/128", "::ffff:10.0.0.0/104", "2001:db8:ff00::/40",
	};
	char buf[BM_CIDR_STRLEN];
	struct bm_request r;
	size_t i;

	expect_ok(allow(in), &r);
	assert_int_equal(r.sandbox.n_cidrs, N(want));
	for (i = 0; i < N(want); i++) {
		assert_int_equal(bm_cidr_format(&r.sandbox.cidrs[i], buf, sizeof(buf)), 0);
		assert_string_equal(buf, want[i]);
	}
	assert_int_equal(r.sandbox.cidrs[4].family, AF_INET6);
	assert_int_equal(r.sandbox.cidrs[4].prefix, 32);
	assert_memory_equal(r.sandbox.cidrs[4].addr, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\0",
			    16);
	bm_request_free(&r);
}

static void test_request_cidr_errors_name_the_index(void **state)
{
	static const struct {
		const char *cidr, *want;
	} bad[] = {
		{ "10.0.0.1/8", "host bits set in \"10.0.0.1/8\": did you mean \"10.0.0.0/8\"?" },
		{ "2001:db8::1/32", "did you mean \"2001:db8::/32\"?" },
		{ "10.128.0.0/9", "" } /* fine: the ninth bit is in the prefix */,
		{ "10.192.0.0/9", "did you mean \"10.128.0.0/9\"?" },
		{ "10.0.0.0/33", "prefix length out of range in \"10.0.0.0/33\": 0..32" },
		{ "::/129", "0..128" },
		{ "10.0.0.0", "invalid CIDR" }, { "10.0.0.0/", "invalid CIDR" },
		{ "10.0.0.0/-1", "invalid CIDR" }, { "10.0.0.0/8 ", "invalid CIDR" },
		{ "300.0.0.0/8", "invalid CIDR" }, { "10.0.0/8", "invalid CIDR" },
		{ "/8", "invalid CIDR" }, { "fe80::1%eth0/64", "invalid CIDR" },
		{ "example.com/32", "invalid CIDR" },
	};
	const char *list[4] = { "10.0.0.0/8", "192.168.0.0/16", NULL, NULL };
	struct bm_request r;
	size_t i;

	for (i = 0; i < N(bad); i++) {
		list[2] = bad[i].cidr;
		if (!*bad[i].want) {
			expect_ok(allow(list), &r);
			bm_request_free(&r);
			continue;
		}
		expect_bad(allow(list), "sandbox.allowed_egress_cidrs[2]", bad[i].want);
	}
	expect_bad(set(allow(list), "sandbox.allowed_egress_cidrs", json_pack("[s, i]", "::/0", 8)),
		   "sandbox.allowed_egress_cidrs[1]", "must be a string");
	expect_bad(set(allow(list), "sandbox.allowed_egress_cidrs",
		       json_pack("[o]", json_stringn("10.0.0.0/8\0x", 12))),
		   "sandbox.allowed_egress_cidrs[0]", "NUL");
}

static void test_request_cidr_count_is_bounded(void **state)
{
	const char *list[BM_REQ_MAX_CIDRS + 2] = { NULL };
	char cidrs[BM_REQ_MAX_CIDRS + 1][24];
	struct bm_request r;
	int i;

	for (i = 0; i <= BM_REQ_MAX_CIDRS; i++) {
		snprintf(cidrs[i], sizeof(cidrs[i]), "10.%d.0.0/16", i);
		list[i] = cidrs[i];
	}
	list[BM_REQ_MAX_CIDRS] = NULL;
	expect_ok(allow(list), &r);
	assert_int_equal(r.sandbox.n_cidrs, BM_REQ_MAX_CIDRS);
	bm_request_free(&r);
	list[BM_REQ_MAX_CIDRS] = cidrs[BM_REQ_MAX_CIDRS];
	expect_bad(allow(list), "sandbox.allowed_egress_cidrs", "65 CIDRs, at most 64");
}

static void test_request_cidr_parse_and_format_directly(void **state)
{
	struct bm_cidr c;
	char buf[BM_CIDR_STRLEN];

	assert_int_equal(bm_cidr_parse("172.16.5.4/12", &c), -EDOM);
	assert_int_equal(bm_cidr_format(&c, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "172.16.0.0/12");
	assert_int_equal(bm_cidr_parse("172.16.0.0/12", &c), 0);
	assert_int_equal(bm_cidr_parse("1.2.3.4/0", &c), -EDOM);
	assert_int_equal(bm_cidr_parse("1.2.3.4/33", &c), -ERANGE);
	assert_int_equal(bm_cidr_parse("1.2.3.4/x", &c), -EINVAL);
	assert_int_equal(bm_cidr_parse(NULL, &c), -EINVAL);
	assert_int_equal(bm_cidr_format(&c, buf, 5), -EINVAL);	/* c was cleared */
	assert_int_equal(bm_cidr_parse("2001:db8::/32", &c), 0);
	assert_int_equal(bm_cidr_format(&c, buf, 5), -ENOSPC);
	assert_null(bm_netpol_name((enum bm_netpol)4));
}

static void test_request_sandbox_flags_are_booleans(void **state)
{
	static const char *const flags[] = {
		"read_only_root_fs", "run_as_non_root", "drop_all_capabilities",
	};
	char path[64];
	struct bm_request r;
	size_t i;

	for (i = 0; i < N(flags); i++) {
		snprintf(path, sizeof(path), "sandbox.%s", flags[i]);
		expect_bad(with(path, json_string("true")), path, "must be true or false");
		expect_bad(with(path, json_integer(1)), path, "must be true or false");
		expect_bad(with(path, json_null()), path, "must be true or false");
	}
	expect_ok(set(set(with("sandbox.read_only_root_fs", json_true()),
			  "sandbox.run_as_non_root", json_false()),
		      "sandbox.drop_all_capabilities", json_true()), &r);
	assert_true(r.sandbox.read_only_root_fs);
	assert_false(r.sandbox.run_as_non_root);
	assert_true(r.sandbox.drop_all_capabilities);
	bm_request_free(&r);
	expect_bad(with("sandbox", json_array()), "sandbox", "must be an object");
	expect_bad(with("sandbox", json_null()), "sandbox", "must be an object");
}

/* sandbox.workspace: an absolute path without "..", not "/"; it round-trips; its existence is the host's to check */
static void test_request_workspace_is_an_absolute_directory(void **state)
{
	static const char *const ok[] = { "/work", "/tmp/ws", "/a/..b", "/a/./b" };
	static const char *const dotdot[] = { "/..", "/a/..", "/a/../b" };
	char msg[256];
	const char *field = NULL, *parsed;
	struct bm_request r;
	json_t *j;
	size_t i;

	for (i = 0; i < N(ok); i++) {
		expect_ok(with("sandbox.workspace", json_string(ok[i])), &r);
		assert_string_equal(r.sandbox.workspace, ok[i]);
		j = bm_request_json(&r);
		assert_string_equal(json_string_value(json_object_get(json_object_get(j, "sandbox"),
								      "workspace")), ok[i]);
		json_decref(j);
		bm_request_free(&r);
	}
	for (i = 0; i < N(dotdot); i++)
		expect_bad(with("sandbox.workspace", json_string(dotdot[i])), "sandbox.workspace",
			   "\"..\" component");
	expect_bad(with("sandbox.workspace", json_string("work")), "sandbox.workspace",
		   "not an absolute path");
	expect_bad(with("sandbox.workspace", json_string("/")), "sandbox.workspace", "whole filesystem");
	expect_bad(with("sandbox.workspace", json_integer(1)), "sandbox.workspace", "must be a string");
	expect_bad(with("sandbox.workspace", str_of('/', PATH_MAX)), "sandbox.workspace", "at most 4095");
	/* not in the parse (a stored request must read back whatever became of it): at submission */
	expect_ok(with("sandbox.workspace", json_string("/nonexistent-bm-ws")), &r);
	assert_int_equal(bm_sandbox_check_host(&r.sandbox, &field, msg, sizeof(msg)), -ENOENT);
	assert_string_equal(field, "sandbox.workspace");
	assert_non_null(strstr(msg, "/nonexistent-bm-ws"));
	parsed = r.sandbox.workspace;
	r.sandbox.workspace = "/etc/passwd";
	assert_int_equal(bm_sandbox_check_host(&r.sandbox, &field, msg, sizeof(msg)), -ENOTDIR);
	assert_non_null(strstr(msg, "not a directory"));
	r.sandbox.workspace = "/tmp";
	assert_int_equal(bm_sandbox_check_host(&r.sandbox, &field, msg, sizeof(msg)), 0);
	r.sandbox.workspace = NULL;
	assert_int_equal(bm_sandbox_check_host(&r.sandbox, &field, msg, sizeof(msg)), 0);
	r.sandbox.workspace = parsed;
	bm_request_free(&r);
}

static void test_request_unknown_fields_anywhere(void **state)
{
	static const char *const f1[] = { "Id", "sandbox.cpu", "sandbox.timeout" };
	static const char *const f2[] = { "timeout_seconds", "sandbox.memory" };
	char key[128], field[64];
	int i;

	expect_bad(with("argv0", json_string("x")), "argv0", "unknown field");
	expect_bad(with("sandbox.network", json_string("none")), "sandbox.network",
		   "unknown field");
	expect_fields(set(set(with("Id", json_string("x")), "sandbox.cpu", json_integer(1)),
			  "sandbox.timeout", json_integer(1)), f1, N(f1));
	/* sandbox fields do not belong at the top, nor top fields in the sandbox */
	expect_fields(set(with("timeout_seconds", json_integer(1)), "sandbox.memory",
			  json_string("1Gi")), f2, N(f2));
	/* an absurd key is quoted in part only (64 bytes), never cut inside a character */
	memcpy(key, "x", 2);
	for (i = 0; i < 40; i++)
		strcat(key, "\xc3\xa9");
	memcpy(field, key, 63);
	field[63] = '\0';
	expect_bad(with(key, json_true()), field, "unknown field");
}

static void test_request_bad_json_is_one_error(void **state)
{
	static const char dup[] = "{\"id\":\"a\",\"argv\":[\"x\"],\"id\":\"b\"}";
	static const char dup2[] =
		"{\"id\":\"a\",\"argv\":[\"x\"],\"env\":{\"A\":\"1\",\"A\":\"2\"}}";
	static const char nul[] = "{\"id\":\"a\",\0\"argv\":[\"x\"]}";

	expect_bad_str("{", "", "invalid JSON: string or '}' expected near end of file "
		       "at line 1, column 1");
	expect_bad_str("{\"id\": \"a\",\n \"argv\": [\"x\",]}", "",
		       "near ']' at line 2, column 15");
	expect_bad_str("[]", "", "the request must be a JSON object");
	expect_bad_str("5", "", "invalid JSON");
	expect_bad_str("\"x\"", "", "invalid JSON");
	expect_bad_text("", 0, "", "empty request body");
	expect_bad_text(NULL, 0, "", "empty request body");
	expect_bad_text(dup, strlen(dup), "", "duplicate object key");
	expect_bad_text(dup2, strlen(dup2), "", "duplicate object key");
	expect_bad_str("{\"id\":\"a\",\"argv\":[\"x\"],\"priority\":1e400}", "",
		       "real number overflow");
	expect_bad_str("{\"id\":\"a\",\"argv\":[\"x\"],\"priority\":99999999999999999999}", "",
		       "too big integer");
	expect_bad_str("{\"id\":\"a\",\"argv\":[\"x\"],\"priority\":NaN}", "", "invalid token");
	expect_bad_str("{\"id\":\"a\",\"argv\":[\"x\"]} {}", "", "end of file expected");
	expect_bad_text(nul, sizeof(nul) - 1, "", "invalid JSON");
	expect_bad_str("{\"id\":\"\xff\",\"argv\":[\"x\"]}", "", "unable to decode byte");
	expect_bad_str("{\"\\u0000\":1}", "", "NUL byte in object key");
}

static void test_request_body_size_is_capped(void **state)
{
	static const char req[] = "{\"id\":\"a\",\"argv\":[\"x\"]}";
	char *body = repeat(' ', BM_REQ_MAX_BODY + 1);
	struct bm_request r;
	json_t *errs = NULL;

	/* exactly the limit (padded with blanks) is fine, one byte more is not */
	memcpy(body, req, strlen(req));
	assert_int_equal(bm_request_parse(body, BM_REQ_MAX_BODY, &r, &errs), 0);
	bm_request_free(&r);
	expect_bad_text(body, BM_REQ_MAX_BODY + 1, "", "request body of 1048577 bytes is over "
			"the 1048576-byte limit");
	free(body);
}

static void test_request_every_error_is_reported_together(void **state)
{
	static const char body[] =
		"{\"id\": \"../x\", \"mode\": \"attach\", \"argv\": [\"a\", 7], \"priority\": 11,"
		" \"labels\": {\"Bad\": \"v\", \"ok\": \"v\"}, \"window_ms\": 0, \"extra\": 1,"
		" \"env\": {\"A\": 1, \"B\": \"x\"}, \"cwd\": \"/a/../b\","
		" \"sandbox\": {\"cpu_request\": \"3\", \"cpu_limit\": \"2\","
		" \"memory_limit\": \"1K\","
		" \"network_policy\": \"egress_allow_list\", \"nope\": true,"
		" \"allowed_egress_cidrs\": [\"10.0.0.0/8\", \"bad\", \"10.0.0.1/8\"],"
		" \"read_only_root_fs\": \"yes\"}}";
	static const char *const fields[] = {
		"extra", "id", "argv[1]", "env.A", "cwd", "priority",
		"labels.Bad", "window_ms", "sandbox.nope", "sandbox.cpu_request",
		"sandbox.memory_limit", "sandbox.allowed_egress_cidrs[1]",
		"sandbox.allowed_egress_cidrs[2]", "sandbox.read_only_root_fs",
	};
	json_error_t jerr;

	expect_fields(json_loads(body, 0, &jerr), fields, N(fields));
}

static void test_request_errors_without_errs_and_cap(void **state)
{
	struct bm_request r;
	json_t *req = base(), *errs = NULL;
	char key[16];
	int i;

	/* the caller may not want the list: still refused */
	assert_int_equal(bm_request_parse("{}", 2, &r, NULL), -EINVAL);
	assert_null(r.labels);
	/* a hostile body does not get an unbounded list: the rest are counted */
	for (i = 0; i < 2000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		json_object_set_new(req, key, json_true());
	}
	assert_int_equal(parse_json(req, &r, &errs), -EINVAL);
	check_failed(-EINVAL, &r, errs);
	assert_int_equal(json_array_size(errs), BM_REQ_MAX_ERRORS + 1);
	assert_string_equal(field_at(errs, BM_REQ_MAX_ERRORS - 1), "k1023");
	assert_string_equal(field_at(errs, BM_REQ_MAX_ERRORS), "");
	assert_string_equal(error_at(errs, BM_REQ_MAX_ERRORS), "976 more errors not listed");
	json_decref(errs);
}

static void assert_strv_equal(char **a, char **b)
{
	if (!a || !b) {
		assert_ptr_equal(a, b);
		return;
	}
	for (; *a && *b; a++, b++)
		assert_string_equal(*a, *b);
	assert_null(*a);
	assert_null(*b);
}

static void assert_request_equal(const struct bm_request *a, const struct bm_request *b)
{
	const struct bm_sandbox *x = &a->sandbox, *y = &b->sandbox;
	unsigned int i;

	assert_string_equal(a->id, b->id);
	assert_string_equal(a->tenant, b->tenant);
	assert_string_equal(a->intent, b->intent);
	assert_int_equal(a->mode, b->mode);
	assert_int_equal(a->attach_pid, b->attach_pid);
	assert_strv_equal(a->argv, b->argv);
	assert_strv_equal(a->env, b->env);
	assert_true(!a->cwd == !b->cwd);
	if (a->cwd)
		assert_string_equal(a->cwd, b->cwd);
	assert_int_equal(a->priority, b->priority);
	assert_true(json_equal(a->labels, b->labels));
	assert_int_equal(a->window_ns, b->window_ns);
	assert_int_equal(x->cpu_request_milli, y->cpu_request_milli);
	assert_int_equal(x->cpu_limit_milli, y->cpu_limit_milli);
	assert_int_equal(x->memory_request, y->memory_request);
	assert_int_equal(x->memory_limit, y->memory_limit);
	assert_int_equal(x->timeout_ns, y->timeout_ns);
	assert_int_equal(x->max_ephemeral_storage, y->max_ephemeral_storage);
	assert_int_equal(x->network_policy, y->network_policy);
	assert_int_equal(x->n_cidrs, y->n_cidrs);
	for (i = 0; i < x->n_cidrs; i++) {
		assert_int_equal(x->cidrs[i].family, y->cidrs[i].family);
		assert_int_equal(x->cidrs[i].prefix, y->cidrs[i].prefix);
		assert_memory_equal(x->cidrs[i].addr, y->cidrs[i].addr, 16);
	}
	assert_int_equal(x->read_only_root_fs, y->read_only_root_fs);
	assert_int_equal(x->run_as_non_root, y->run_as_non_root);
	assert_int_equal(x->drop_all_capabilities, y->drop_all_capabilities);
	assert_string_equal(a->tool, b->tool);
	assert_int_equal(a->expect.set, b->expect.set);
	assert_memory_equal(a->expect.v, b->expect.v, sizeof(a->expect.v));
	assert_string_equal(a->traceparent, b->traceparent);
}

/* body -> request -> canonical JSON text -> request: equal, and canonical again. */
static json_t *round_trip(const char *body)
{
	struct bm_request a, b;
	json_t *ja, *jb, *errs = NULL;
	char *text;

	if (bm_request_parse(body, strlen(body), &a, &errs))
		fail_msg("refused: %s", dump(errs));
	ja = bm_request_json(&a);
	assert_non_null(ja);
	text = json_dumps(ja, JSON_COMPACT);
	assert_non_null(text);
	if (bm_request_parse(text, strlen(text), &b, &errs))
		fail_msg("canonical %s refused: %s", text, dump(errs));
	assert_request_equal(&a, &b);
	jb = bm_request_json(&b);
	if (!json_equal(ja, jb))
		fail_msg("canonical form changed: %s then %s", text, dump(jb));
	free(text);
	json_decref(jb);
	bm_request_free(&a);
	bm_request_free(&b);
	return ja;
}

static void test_request_canonical_form_round_trips(void **state)
{
	static const char *const bodies[] = {
		"{\"id\":\"a\",\"argv\":[\"x\"]}",
		"{\"id\":\"a\",\"mode\":\"attach\",\"pid\":4194304,\"tenant\":\"t\","
		"\"sandbox\":{\"network_policy\":\"none\",\"timeout_seconds\":\"0.001000001\"}}",
		"{\"id\":\"a\",\"argv\":[\"x\"],\"env\":{},\"labels\":{},\"intent\":\"\","
		"\"sandbox\":{\"cpu_limit\":0.0015,\"memory_limit\":1.5e9,"
		"\"timeout_seconds\":604799.999999999,\"max_ephemeral_storage\":\"1.5Ti\"}}",
		"{\"id\":\"b\",\"argv\":[\"é\",\"\\\"q\\\"\"],\"intent\":\"\\u00e9\\n\\t\","
		"\"env\":{\"Z\":\"1=2\",\"A\":\"\"},\"sandbox\":{\"network_policy\":"
		"\"egress_allow_list\","
		"\"allowed_egress_cidrs\":[\"::FFFF:10.0.0.0/104\",\"0.0.0.0/0\"]}}",
		"{\"id\":\"c\",\"mode\":\"attach\",\"pid\":9,\"argv\":[\"/bin/sh\",\"-c\",\"x\"],"
		"\"tool\":\"pytest\",\"traceparent\":"
		"\"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\","
		"\"expect\":{\"cpu_cores\":0.0015,\"memory_bytes\":\"1.5Gi\",\"pids\":3,"
		"\"net_tx_bytes_per_s\":0,\"net_tx_bytes\":1e3,\"wall_seconds\":604799.999999999}}",
		"{\"id\":\"d\",\"argv\":[\"x\"],\"expect\":{\"wall_seconds\":\"0.001000001\"}}",
		"{\"id\":\"c\",\"argv\":[\"x\"],\"sandbox\":{\"read_only_root_fs\":true,"
		"\"workspace\":\"/srv/ws\"}}",
	};
	json_t *sb, *j = round_trip(full_body);
	size_t i;

	/* the canonical units: integer bytes, "<n>m" millicores, integer ns, inet_ntop text */
	sb = json_object_get(j, "sandbox");
	assert_string_equal(json_string_value(json_object_get(sb, "cpu_request")), "500m");
	assert_string_equal(json_string_value(json_object_get(sb, "cpu_limit")), "2000m");
	assert_int_equal(json_integer_value(json_object_get(sb, "memory_request")), 256 * MIB);
	assert_int_equal(json_integer_value(json_object_get(sb, "timeout_ns")), 600 * NS_PER_S);
	assert_null(json_object_get(sb, "timeout_seconds"));
	assert_int_equal(json_integer_value(json_object_get(sb, "max_ephemeral_storage")), GIB);
	assert_string_equal(json_string_value(json_array_get(json_object_get(sb,
				"allowed_egress_cidrs"), 1)), "2001:db8::/32");
	assert_string_equal(json_string_value(json_object_get(j, "mode")), "launch");
	assert_int_equal(json_integer_value(json_object_get(j, "window_ms")), 50);
	json_decref(j);
	for (i = 0; i < N(bodies); i++)
		json_decref(round_trip(bodies[i]));
}


/* Attach may say what the process runs: argv (its tool kind, the outcome's command) or tool. */
static void test_request_attach_describes_what_it_runs(void **state)
{
	static const char *const bad_tools[] = { "", "a/b", "py test", "tab\\t", ".", "..", "\\u007f" };
	struct bm_request r;
	char body[256];
	size_t i;

	expect_ok(set(set(with("mode", json_string("attach")), "pid", json_integer(7)), "tool",
		      json_string("pytest")), &r);
	assert_int_equal(r.mode, BM_REQ_ATTACH);
	assert_string_equal(r.argv[0], "pytest");
	assert_string_equal(r.tool, "pytest");
	bm_request_free(&r);
	expect_ok(set(set(set(base(), "mode", json_string("attach")), "pid", json_integer(7)), "argv",
		      NULL), &r);
	assert_null(r.argv);
	assert_string_equal(r.tool, "");
	bm_request_free(&r);
	/* a tool kind is a command's basename: 255 bytes, no '/', no blanks */
	expect_ok(set(set(set(with("mode", json_string("attach")), "pid", json_integer(7)), "argv", NULL),
		      "tool", str_of('t', 255)), &r);
	bm_request_free(&r);
	expect_bad(set(set(set(with("mode", json_string("attach")), "pid", json_integer(7)), "argv", NULL),
		       "tool", str_of('t', 256)), "tool", "256 bytes long, at most 255");
	for (i = 0; i < N(bad_tools); i++) {
		snprintf(body, sizeof(body), "{\"id\": \"a\", \"mode\": \"attach\", \"pid\": 7, "
			 "\"tool\": \"%s\"}", bad_tools[i]);
		expect_bad_str(body, "tool", "expected a tool kind");
	}
	/* a launch's tool kind is its argv[0]'s: it cannot be named otherwise */
	expect_bad(with("tool", json_string("make")), "tool", "only with mode \"attach\"");
	expect_bad(set(set(set(with("mode", json_string("attach")), "pid", json_integer(7)), "argv",
			   json_pack("[s, s]", "x", "")), "tool", json_string("x")), "argv[1]",
		   "must not be empty");
}

/* expect: each declaration a quantity in the outcome's terms, never above the request's own limits. */
static void test_request_expect_declarations(void **state)
{
	struct bm_request r;
	json_t *x;

	x = json_pack("{s:s, s:s, s:i, s:i, s:s, s:s}", "cpu_cores", "1500m", "memory_bytes", "256Mi",
		      "pids", 64, "net_tx_bytes_per_s", 0, "net_tx_bytes", "10M", "wall_seconds", "2m");
	expect_ok(with("expect", x), &r);
	assert_int_equal(r.expect.set, (1U << BM_X__MAX) - 1);
	assert_int_equal(r.expect.v[BM_X_CPU], 1500);
	assert_int_equal(r.expect.v[BM_X_MEM], 256 * MIB);
	assert_int_equal(r.expect.v[BM_X_PIDS], 64);
	/* "sends nothing" is a declaration too */
	assert_int_equal(r.expect.v[BM_X_NET_RATE], 0);
	assert_true(r.expect.set & BM_X_BIT(BM_X_NET_RATE));
	assert_int_equal(r.expect.v[BM_X_NET_BYTES], 10 * MIB);
	assert_int_equal(r.expect.v[BM_X_WALL], 120 * NS_PER_S);
	bm_request_free(&r);
	expect_ok(with("expect", json_pack("{s:f, s:f}", "cpu_cores", 0.001, "wall_seconds", 0.001)), &r);
	assert_int_equal(r.expect.v[BM_X_CPU], 1);
	assert_int_equal(r.expect.v[BM_X_WALL], NS_PER_MS);
	bm_request_free(&r);
	expect_ok(base(), &r);
	assert_int_equal(r.expect.set, 0);
	bm_request_free(&r);
	expect_bad(with("expect", json_pack("{s:f}", "cpu_cores", 0.0001)), "expect.cpu_cores",
		   "out of range");
	expect_bad(with("expect", json_pack("{s:i}", "pids", 0)), "expect.pids", "out of range");
	expect_bad(with("expect", json_pack("{s:s}", "memory_bytes", "lots")), "expect.memory_bytes",
		   "invalid \"lots\"");
	expect_bad(with("expect", json_pack("{s:b}", "wall_seconds", 1)), "expect.wall_seconds",
		   "must be a number or a string");
	expect_bad(with("expect", json_pack("{s:i}", "memory", 1)), "expect.memory", "unknown field");
	expect_bad(with("expect", json_string("small")), "expect", "must be an object");
	/* at its limit is fine, past it the call could never have it */
	x = json_pack("{s:s, s:s, s:i, s:s}", "cpu_cores", "2", "memory_bytes", "1Gi", "pids", 64,
		      "wall_seconds", "600");
	expect_ok(set(set(set(set(with("expect", x), "sandbox.cpu_limit", json_string("2")),
			      "sandbox.memory_limit", json_string("1Gi")), "sandbox.pids_limit",
			  json_integer(64)), "sandbox.timeout_seconds", json_integer(600)), &r);
	bm_request_free(&r);
	expect_bad(set(with("expect", json_pack("{s:s}", "memory_bytes", "1025Mi")),
		       "sandbox.memory_limit", json_string("1Gi")), "expect.memory_bytes",
		   "declared 1074790400 bytes, above sandbox.memory_limit 1073741824 bytes");
	expect_bad(set(with("expect", json_pack("{s:f}", "cpu_cores", 2.5)), "sandbox.cpu_limit",
		       json_string("2")), "expect.cpu_cores", "declared 2.5 cores, above sandbox.cpu_limit 2");
	expect_bad(set(with("expect", json_pack("{s:i}", "pids", 65)), "sandbox.pids_limit",
		       json_integer(64)), "expect.pids", "above sandbox.pids_limit 64 tasks");
	expect_bad(set(with("expect", json_pack("{s:s}", "wall_seconds", "601")),
		       "sandbox.timeout_seconds", json_integer(600)), "expect.wall_seconds",
		   "declared 601 s, above sandbox.timeout 600 s");
}

/* traceparent: the W3C format, as a field or a header, and one trace, not two. */
static void test_request_traceparent_field_and_header(void **state)
{
	static const char tp[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
	static const char *const bad[] = {
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",	/* short */
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",	/* uppercase */
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",	/* zero trace */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",	/* zero parent */
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",	/* version ff */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",	/* 00 is 55 long */
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",	/* no '-' after */
		"00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
	};
	struct bm_request r;
	json_t *errs = NULL;
	char *text;
	size_t i;
	int err;

	expect_ok(with("traceparent", json_string(tp)), &r);
	assert_string_equal(r.traceparent, tp);
	bm_request_free(&r);
	/* a later version may carry more, after a '-' */
	expect_ok(with("traceparent",
		       json_string("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-abcd")), &r);
	bm_request_free(&r);
	for (i = 0; i < N(bad); i++)
		expect_bad(with("traceparent", json_string(bad[i])), "traceparent",
			   "invalid traceparent");
	expect_bad(with("traceparent", json_integer(1)), "traceparent", "must be a string");
	/* the header alone, the header and an equal field, then two different traces */
	text = dump_free(base());
	assert_int_equal(bm_request_parse_with(text, strlen(text), tp, &r, &errs), 0);
	assert_string_equal(r.traceparent, tp);
	bm_request_free(&r);
	free(text);
	text = dump_free(with("traceparent", json_string(tp)));
	assert_int_equal(bm_request_parse_with(text, strlen(text), tp, &r, &errs), 0);
	bm_request_free(&r);
	err = bm_request_parse_with(text, strlen(text), bad[0], &r, &errs);
	expect_errs(err, &r, errs, "traceparent", "invalid traceparent");
	errs = NULL;
	err = bm_request_parse_with(text, strlen(text),
				    "00-4bf92f3577b34da6a3ce929d0e0e4737-00f067aa0ba902b7-01", &r, &errs);
	expect_errs(err, &r, errs, "traceparent", "the traceparent header and field differ");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_minimal_launch_gets_defaults),
		cmocka_unit_test(test_request_full_launch_every_field),
		cmocka_unit_test(test_request_id_and_tenant_are_names),
		cmocka_unit_test(test_request_intent_is_bounded_in_bytes),
		cmocka_unit_test(test_request_attach_mode_takes_a_pid),
		cmocka_unit_test(test_request_attach_describes_what_it_runs),
		cmocka_unit_test(test_request_expect_declarations),
		cmocka_unit_test(test_request_traceparent_field_and_header),
		cmocka_unit_test(test_request_pid_and_argv_follow_the_mode),
		cmocka_unit_test(test_request_argv_limits),
		cmocka_unit_test(test_request_argv_rejects_nul_by_field),
		cmocka_unit_test(test_request_env_becomes_k_equals_v),
		cmocka_unit_test(test_request_env_rejects_bad_names_and_values),
		cmocka_unit_test(test_request_cwd_is_absolute_without_dotdot),
		cmocka_unit_test(test_request_priority_and_window_are_strict_integers),
		cmocka_unit_test(test_request_labels_keys_values_and_count),
		cmocka_unit_test(test_request_cpu_in_cores_or_millicores),
		cmocka_unit_test(test_request_memory_and_storage_sizes),
		cmocka_unit_test(test_request_io_ceilings),
		cmocka_unit_test(test_request_timeout_in_seconds_or_duration),
		cmocka_unit_test(test_request_timeout_ns_is_the_canonical_spelling),
		cmocka_unit_test(test_request_request_above_limit_names_both),
		cmocka_unit_test(test_request_network_policy_and_cidrs_go_together),
		cmocka_unit_test(test_request_cidrs_are_normalised),
		cmocka_unit_test(test_request_cidr_errors_name_the_index),
		cmocka_unit_test(test_request_cidr_count_is_bounded),
		cmocka_unit_test(test_request_cidr_parse_and_format_directly),
		cmocka_unit_test(test_request_sandbox_flags_are_booleans),
		cmocka_unit_test(test_request_workspace_is_an_absolute_directory),
		cmocka_unit_test(test_request_unknown_fields_anywhere),
		cmocka_unit_test(test_request_bad_json_is_one_error),
		cmocka_unit_test(test_request_body_size_is_capped),
		cmocka_unit_test(test_request_every_error_is_reported_together),
		cmocka_unit_test(test_request_errors_without_errs_and_cap),
		cmocka_unit_test(test_request_canonical_form_round_trips),
	};

	return cmocka_run_group_tests_name("request", tests, NULL, NULL);
}
