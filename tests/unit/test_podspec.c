// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `burstmeter podspec` (user/cli/pod_cmds.c over user/agent/podspec.h and
 * run_request.h): golden files. Each tests/fixtures/pods/spec/CASE.request.json
 * with the options of CASE.args (one per line) must print CASE.yaml, and
 * with --json CASE.json, byte for byte; the YAML must read back (libyaml,
 * yamlcheck.h) as the JSON's items. A bad request must print nothing on
 * stdout, CASE.errors on stderr (every bad field) and exit 125.
 * BM_UPDATE_GOLDEN=1 rewrites the golden files instead (review the diff).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/podspec.h"
#include "base/common.h"
#include "cli/pod_cmds.h"
#include "yamlcheck.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define OUT_MAX (1 << 20)

static char out_buf[OUT_MAX], err_buf[OUT_MAX];

/* tests/fixtures/pods/spec/NAME, found beside this source file as test_cgroup.c does. */
static void fixture(char *buf, size_t len, const char *name)
{
	char src[] = __FILE__, *slash;

	slash = strrchr(src, '/');
	if (slash)
		*slash = '\0';
	slash = strrchr(src, '/');
	if (slash) {
		*slash = '\0';
		snprintf(buf, len, "%s/fixtures/pods/spec/%s", src, name);
	} else {
		snprintf(buf, len, "tests/fixtures/pods/spec/%s", name);
	}
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *b = malloc(OUT_MAX);
	size_t n;

	if (!f)
		fail_msg("fixture %s: %s (run from the repository root)", path, strerror(errno));
	assert_non_null(b);
	n = fread(b, 1, OUT_MAX - 1, f);
	b[n] = '\0';
	fclose(f);
	if (len)
		*len = n;
	return b;
}

static void read_back(FILE *f, char *buf, size_t len)
{
	size_t n;

	fflush(f);
	rewind(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/* bm_cmd_podspec(argv) with stdout and stderr captured. */
static int run_v(char **argv)
{
	FILE *out = tmpfile(), *err = tmpfile();
	int argc = 0, so, se, rc;

	assert_non_null(out);
	assert_non_null(err);
	while (argv[argc])
		argc++;
	fflush(stdout);
	fflush(stderr);
	so = dup(STDOUT_FILENO);
	se = dup(STDERR_FILENO);
	dup2(fileno(out), STDOUT_FILENO);
	dup2(fileno(err), STDERR_FILENO);
	rc = bm_cmd_podspec(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(so, STDOUT_FILENO);
	dup2(se, STDERR_FILENO);
	close(so);
	close(se);
	read_back(out, out_buf, sizeof(out_buf));
	read_back(err, err_buf, sizeof(err_buf));
	bm_log_set_json(false);		/* --json sets it for the process */
	return rc;
}

#define RUN(...) run_v((char *[]){ "podspec", __VA_ARGS__, NULL })

/* argv: "podspec", CASE.args' lines, extra (or nothing), CASE.request.json. */
static int run_case(const char *name, const char *extra)
{
	char path[512], req[512], *args, *line, *save = NULL, *argv[32];
	int argc = 0, rc;

	snprintf(path, sizeof(path), "%s.args", name);
	fixture(req, sizeof(req), path);
	args = slurp(req, NULL);
	argv[argc++] = "podspec";
	line = strtok_r(args, "\n", &save);
	for (; line && argc < 28; line = strtok_r(NULL, "\n", &save))
		argv[argc++] = line;
	if (extra)
		argv[argc++] = (char *)extra;
	snprintf(path, sizeof(path), "%s.request.json", name);
	fixture(req, sizeof(req), path);
	argv[argc++] = req;
	argv[argc] = NULL;
	rc = run_v(argv);
	free(args);
	return rc;
}

/* got against the golden file NAME (or, with BM_UPDATE_GOLDEN=1, into it). */
static void golden(const char *name, const char *got)
{
	char path[512], *want;
	FILE *f;

	fixture(path, sizeof(path), name);
	if (getenv("BM_UPDATE_GOLDEN")) {
		f = fopen(path, "w");
		assert_non_null(f);
		fputs(got, f);
		fclose(f);
		return;
	}
	want = slurp(path, NULL);
	if (strcmp(want, got))
		fail_msg("%s differs from the golden file; got:\n%s", path, got);
	free(want);
}

static const char *const cases[] = {
	"seed", "none-minimal", "allow-list", "full-hostile-env", "restricted-dns-only",
	"decimal-si",
};

static void test_podspec_golden_yaml_and_json(void **state)
{
	char name[128];
	size_t i;

	for (i = 0; i < N(cases); i++) {
		if (run_case(cases[i], NULL))
			fail_msg("%s: exit status not 0: %s", cases[i], err_buf);
		assert_string_equal(err_buf, "");
		snprintf(name, sizeof(name), "%s.yaml", cases[i]);
		golden(name, out_buf);
		assert_int_equal(run_case(cases[i], "--json"), 0);
		assert_string_equal(err_buf, "");
		snprintf(name, sizeof(name), "%s.json", cases[i]);
		golden(name, out_buf);
	}
}

/* The YAML documents are the JSON List's items, value for value. */
static void test_podspec_yaml_reads_back_as_the_json(void **state)
{
	json_t *list, *docs;
	json_error_t jerr;
	size_t i;

	for (i = 0; i < N(cases); i++) {
		assert_int_equal(run_case(cases[i], "--json"), 0);
		list = json_loads(out_buf, 0, &jerr);
		assert_non_null(list);
		assert_int_equal(run_case(cases[i], NULL), 0);
		docs = yc_load(out_buf, strlen(out_buf));
		if (!docs || !json_equal(docs, json_object_get(list, "items")))
			fail_msg("%s: the YAML does not read back as the JSON:\n%s", cases[i],
				 out_buf);
		json_decref(docs);
		json_decref(list);
	}
}

/* What the issue asks of every pod, checked on the objects rather than the text. */
static void test_podspec_pod_is_hardened(void **state)
{
	json_t *list, *pod, *spec, *c, *sc, *psc, *items;
	json_error_t jerr;

	assert_int_equal(run_case("seed", "--json"), 0);
	list = json_loads(out_buf, 0, &jerr);
	assert_non_null(list);
	items = json_object_get(list, "items");
	assert_int_equal(json_array_size(items), 2);
	pod = json_array_get(items, 0);
	spec = json_object_get(pod, "spec");
	c = json_array_get(json_object_get(spec, "containers"), 0);
	sc = json_object_get(c, "securityContext");
	psc = json_object_get(spec, "securityContext");
	assert_true(json_is_true(json_object_get(psc, "runAsNonRoot")));
	assert_true(json_integer_value(json_object_get(psc, "runAsUser")) > 0);
	assert_true(json_integer_value(json_object_get(psc, "runAsGroup")) > 0);
	assert_true(json_integer_value(json_object_get(psc, "fsGroup")) > 0);
	assert_string_equal(json_string_value(json_object_get(
		json_object_get(psc, "seccompProfile"), "type")), "RuntimeDefault");
	assert_true(json_is_false(json_object_get(sc, "allowPrivilegeEscalation")));
	assert_true(json_is_true(json_object_get(sc, "readOnlyRootFilesystem")));
	assert_string_equal(json_string_value(json_array_get(json_object_get(
		json_object_get(sc, "capabilities"), "drop"), 0)), "ALL");
	assert_true(json_is_false(json_object_get(spec, "automountServiceAccountToken")));
	assert_string_equal(json_string_value(json_object_get(spec, "restartPolicy")), "Never");
	assert_int_equal(json_integer_value(json_object_get(spec, "activeDeadlineSeconds")), 600);
	assert_string_equal(json_string_value(json_object_get(spec, "priorityClassName")),
			    "burstmeter-normal");
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(c,
		"resources"), "limits"), "cpu")), "2");
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(c,
		"resources"), "requests"), "memory")), "1Gi");
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(
		json_object_get(spec, "volumes"), 1), "emptyDir"), "sizeLimit")), "512Mi");
	json_decref(list);
}

static void expect_bad_request(const char *name)
{
	char file[128], req[512];
	json_t *o;
	size_t lines = 0;
	char *p;

	assert_int_equal(run_case(name, NULL), 125);
	assert_string_equal(out_buf, "");
	snprintf(file, sizeof(file), "%s.errors", name);
	golden(file, err_buf);
	for (p = err_buf; (p = strchr(p, '\n')); p++)
		lines++;
	/* --json: the same errors, one object on stderr, nothing on stdout */
	snprintf(file, sizeof(file), "%s.request.json", name);
	fixture(req, sizeof(req), file);
	assert_int_equal(RUN("--json", req), 125);
	assert_string_equal(out_buf, "");
	o = json_loads(err_buf, 0, NULL);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "error")), "invalid request");
	assert_int_equal(json_array_size(json_object_get(o, "fields")), lines);
	json_decref(o);
}

static void test_podspec_bad_requests_every_field(void **state)
{
	expect_bad_request("bad-everything");
	expect_bad_request("bad-missing");
}

static void test_podspec_bad_input(void **state)
{
	assert_int_equal(RUN("/nonexistent/run.json"), 125);
	assert_string_equal(out_buf, "");
	assert_non_null(strstr(err_buf, "cannot read /nonexistent/run.json"));
	assert_int_equal(RUN("/dev/null"), 125);
	assert_string_equal(err_buf, "burstmeter: invalid request: empty request body\n");
	assert_int_equal(RUN("a.json", "b.json"), 125);
	assert_non_null(strstr(err_buf, "more than one REQUEST"));
}

static void test_podspec_bad_options(void **state)
{
	static const char *const bad[][2] = {
		{ "--cluster-cidr", "10.0.0.0/33" }, { "--cluster-cidr", "ten" },
		{ "--namespace", "Agents" }, { "--namespace", "a.b" }, { "--namespace", "" },
		{ "--agent-socket", "/api.sock" }, { "--agent-socket", "run/api.sock" },
		{ "--agent-socket", "/run/../etc/api.sock" }, { "--agent-socket", "/run/bm/" },
		{ "--agent-socket", "/run//api.sock" }, { "--agent-socket", "/run/bm/.." },
		/* a directory holding other daemons' sockets would be mounted into every pod */
		{ "--agent-socket", "/run/api.sock" }, { "--agent-socket", "/tmp/api.sock" },
		{ "--agent-socket", "/var/run/api.sock" },
		{ "--agent-socket", "/run/containerd/api.sock" },
		{ "--agent-socket", "/var/lib/kubelet/api.sock" },
		{ "--agent-socket", "/proc/self/api.sock" },
		{ "--agent-socket", "/etc/bm/api.sock" },
		{ "--socket-group", "-1" }, { "--socket-group", "4294967295" },
		{ "--socket-group", "12x" }, { "--bogus", "x" },
	};
	size_t i;

	for (i = 0; i < N(bad); i++) {
		if (RUN((char *)bad[i][0], (char *)bad[i][1], "/dev/null") != 125 || out_buf[0] ||
		    !strstr(err_buf, "burstmeter: ") ||
		    strchr(err_buf, '\n') != strrchr(err_buf, '\n'))
			fail_msg("%s %s: expected one line and 125, got '%s'", bad[i][0], bad[i][1],
				 err_buf);
	}
	/* a directory of its own, at any depth */
	assert_int_equal(RUN("--agent-socket", "/run/bm/agent.sock", "/dev/null"), 125);
	assert_string_equal(err_buf, "burstmeter: invalid request: empty request body\n");
	assert_int_equal(RUN("--agent-socket", "/var/lib/burstmeter/sock/api.sock", "/dev/null"),
			 125);
	assert_string_equal(err_buf, "burstmeter: invalid request: empty request body\n");
	/* host bits: the network it meant is suggested */
	assert_int_equal(RUN("--cluster-cidr", "10.96.0.1/12", "/dev/null"), 125);
	assert_non_null(strstr(err_buf, "did you mean '10.96.0.0/12'"));
}

static void test_podspec_help(void **state)
{
	assert_int_equal(RUN("--help"), 0);
	assert_non_null(strstr(out_buf, "Usage: burstmeter podspec"));
	assert_non_null(strstr(out_buf, "EXAMPLES\n"));
	assert_non_null(strstr(out_buf, "burstmeter-low"));
	assert_string_equal(err_buf, "");
}

static void test_podspec_quantities_and_classes(void **state)
{
	static const struct {
		uint64_t v;
		const char *cpu, *bytes;
	} q[] = {
		{ 1, "1m", "1" }, { 500, "500m", "500" }, { 1000, "1", "1000" },
		{ 1024, "1024m", "1Ki" },
		{ 1500, "1500m", "1500" }, { 2000, "2", "2000" }, { 1048576, "1048576m", "1Mi" },
		{ 805306368, "805306368m", "768Mi" }, { 1610612736, "1610612736m", "1536Mi" },
		{ 2147483648ULL, "2147483648m", "2Gi" },
		{ 1099511627776ULL, "1099511627776m", "1Ti" },
		{ 1048577, "1048577m", "1048577" },
		/* decimal from M up where shorter: a request's "2G", "1.5e9", "1M" print back so */
		{ 2000000000ULL, "2000000", "2G" }, { 1500000000ULL, "1500000", "1500M" },
		{ 1000000, "1000", "1M" }, { 1024000, "1024", "1000Ki" },
		{ 1000000000000000000ULL, "1000000000000000", "1E" },
		{ 1ULL << 60, "1152921504606846976m", "1Ei" }, { 5000, "5", "5000" },
	};
	char a[32], b[32];
	size_t i;

	for (i = 0; i < N(q); i++) {
		assert_string_equal(bm_k8s_cpu(q[i].v, a, sizeof(a)), q[i].cpu);
		assert_string_equal(bm_k8s_bytes(q[i].v, b, sizeof(b)), q[i].bytes);
	}
	assert_string_equal(bm_podspec_priority_class(1), "burstmeter-low");
	assert_string_equal(bm_podspec_priority_class(3), "burstmeter-low");
	assert_string_equal(bm_podspec_priority_class(4), "burstmeter-normal");
	assert_string_equal(bm_podspec_priority_class(7), "burstmeter-normal");
	assert_string_equal(bm_podspec_priority_class(8), "burstmeter-high");
	assert_string_equal(bm_podspec_priority_class(10), "burstmeter-high");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_podspec_golden_yaml_and_json),
		cmocka_unit_test(test_podspec_yaml_reads_back_as_the_json),
		cmocka_unit_test(test_podspec_pod_is_hardened),
		cmocka_unit_test(test_podspec_bad_requests_every_field),
		cmocka_unit_test(test_podspec_bad_input),
		cmocka_unit_test(test_podspec_bad_options),
		cmocka_unit_test(test_podspec_help),
		cmocka_unit_test(test_podspec_quantities_and_classes),
	};

	return cmocka_run_group_tests_name("podspec", tests, NULL, NULL);
}
