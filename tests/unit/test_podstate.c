// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/agent/podstate.h, podwatch.h and `burstmeter podstate`: a run's
 * state from pod objects shaped as the API server writes them
 * (tests/fixtures/pods/state/: one per case, and watch streams as
 * `kubectl get pod -w -o json` prints them, with and without
 * --output-watch-events), including init containers and a pod deleted
 * mid-run; then objects no API server would send.
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

#include "agent/podstate.h"
#include "agent/podwatch.h"
#include "base/common.h"
#include "cli/pod_cmds.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static char out_buf[1 << 16], err_buf[1 << 16];

static void fixture(char *buf, size_t len, const char *name)
{
	char src[] = __FILE__, *slash;

	slash = strrchr(src, '/');
	if (slash)
		*slash = '\0';
	slash = strrchr(src, '/');
	if (slash) {
		*slash = '\0';
		snprintf(buf, len, "%s/fixtures/pods/state/%s", src, name);
	} else {
		snprintf(buf, len, "tests/fixtures/pods/state/%s", name);
	}
}

static json_t *load(const char *name)
{
	char path[512];
	json_error_t jerr;
	json_t *j;

	fixture(path, sizeof(path), name);
	j = json_load_file(path, 0, &jerr);
	if (!j)
		fail_msg("fixture %s: %s (run from the repository root)", path, jerr.text);
	return j;
}

static const struct {
	const char *file;
	enum bm_run_state state;
	const char *reason, *container, *message;	/* message: a prefix; NULL: none */
	int exit_code;
} cases[] = {
	{ "pending.json", BM_RUN_QUEUED, "pending", "", NULL, -1 },
	{ "unschedulable.json", BM_RUN_QUEUED, "unschedulable", "",
	  "0/3 nodes are available: 3 Insufficient cpu.", -1 },
	{ "scheduled.json", BM_RUN_QUEUED, "scheduled", "", NULL, -1 },
	{ "starting.json", BM_RUN_QUEUED, "starting", "", NULL, -1 },
	{ "image-pulling.json", BM_RUN_QUEUED, "image_pulling", "", NULL, -1 },
	{ "image-pull-backoff.json", BM_RUN_QUEUED, "image_pull_failed", "agent",
	  "Back-off pulling image", -1 },
	{ "err-image-pull.json", BM_RUN_QUEUED, "image_pull_failed", "agent",
	  "failed to pull and unpack", -1 },
	{ "create-config-error.json", BM_RUN_QUEUED, "create_failed", "agent",
	  "secret \"agent-token\" not found", -1 },
	{ "init-running.json", BM_RUN_QUEUED, "initializing", "fetch-workspace", NULL, -1 },
	{ "running.json", BM_RUN_RUNNING, "started", "", NULL, -1 },
	{ "succeeded.json", BM_RUN_SUCCEEDED, "completed", "", NULL, 0 },
	{ "failed-exit.json", BM_RUN_FAILED, "exited", "agent", NULL, 3 },
	{ "init-failed.json", BM_RUN_FAILED, "init_failed", "fetch-workspace", NULL, 128 },
	{ "deadline-exceeded.json", BM_RUN_TIMED_OUT, "deadline_exceeded", "",
	  "Pod was active on the node longer", -1 },
	{ "oom-killed.json", BM_RUN_OOM_KILLED, "memory_limit", "agent", NULL, 137 },
	{ "evicted.json", BM_RUN_EVICTED, "node_pressure", "",
	  "The node was low on resource: memory.", -1 },
	{ "rejected.json", BM_RUN_FAILED, "rejected", "",
	  "Pod was rejected: Node didn't have enough", -1 },
	{ "unknown.json", BM_RUN_UNKNOWN, "Unknown", "", NULL, -1 },
};

static void test_podstate_each_case(void **state)
{
	struct bm_podstate st;
	const char *want;
	json_t *pod;
	size_t i;

	for (i = 0; i < N(cases); i++) {
		pod = load(cases[i].file);
		assert_int_equal(bm_podstate_of(pod, false, &st), 0);
		if (st.state != cases[i].state || strcmp(st.reason, cases[i].reason) ||
		    st.exit_code != cases[i].exit_code || strcmp(st.container, cases[i].container))
			fail_msg("%s: %s %s exit %d container '%s'", cases[i].file,
				 bm_run_state_name(st.state), st.reason, st.exit_code,
				 st.container);
		want = cases[i].message;
		if (want ? strncmp(st.message, want, strlen(want)) : st.message[0] != '\0')
			fail_msg("%s: message '%s'", cases[i].file, st.message);
		json_decref(pod);
	}
}

/* A DELETED event, or deletionTimestamp, before the pod ended: failed, deleted. */
static void test_podstate_deleted(void **state)
{
	json_t *pod = load("running.json");
	struct bm_podstate st;

	assert_int_equal(bm_podstate_of(pod, true, &st), 0);
	assert_int_equal(st.state, BM_RUN_FAILED);
	assert_string_equal(st.reason, "deleted");
	json_object_set_new(json_object_get(pod, "metadata"), "deletionTimestamp",
			    json_string("2026-11-30T14:04:41Z"));
	assert_int_equal(bm_podstate_of(pod, false, &st), 0);
	assert_string_equal(st.reason, "deleted");
	json_decref(pod);
	/* an ended pod deleted afterwards keeps its ending */
	pod = load("succeeded.json");
	assert_int_equal(bm_podstate_of(pod, true, &st), 0);
	assert_int_equal(st.state, BM_RUN_SUCCEEDED);
	json_decref(pod);
	pod = load("oom-killed.json");
	assert_int_equal(bm_podstate_of(pod, true, &st), 0);
	assert_int_equal(st.state, BM_RUN_OOM_KILLED);
	json_decref(pod);
}

static void test_podstate_names(void **state)
{
	static const char *const names[] = {
		"queued", "running", "succeeded", "failed", "timed_out", "oom_killed", "evicted",
		"unknown",
	};
	size_t i;

	for (i = 0; i < N(names); i++)
		assert_string_equal(bm_run_state_name((enum bm_run_state)i), names[i]);
	assert_null(bm_run_state_name((enum bm_run_state)N(names)));
	assert_false(bm_run_state_terminal(BM_RUN_QUEUED));
	assert_false(bm_run_state_terminal(BM_RUN_RUNNING));
	assert_false(bm_run_state_terminal(BM_RUN_UNKNOWN));
	for (i = BM_RUN_SUCCEEDED; i <= BM_RUN_EVICTED; i++)
		assert_true(bm_run_state_terminal((enum bm_run_state)i));
}

/* What no API server sends: refused, or read without trusting a byte of it. */
static void test_podstate_hostile_objects(void **state)
{
	static const char *const not_pods[] = {
		"[]", "\"Pod\"", "{}", "{\"kind\":\"Service\",\"metadata\":{}}",
		"{\"kind\":\"Pod\",\"metadata\":[]}", "{\"kind\":7,\"metadata\":{}}",
	};
	struct bm_podstate st;
	char big[2048];
	json_t *pod;
	size_t i;

	for (i = 0; i < N(not_pods); i++) {
		pod = json_loads(not_pods[i], JSON_DECODE_ANY, NULL);
		assert_non_null(pod);
		if (bm_podstate_of(pod, false, &st) != -EINVAL)
			fail_msg("%s taken for a pod", not_pods[i]);
		json_decref(pod);
	}
	/* wrong types everywhere: still a pod, of an unknown phase */
	pod = json_pack("{s:s, s:{}, s:{s:i, s:s, s:s}}", "kind", "Pod", "metadata", "status",
			"phase", 3, "conditions", "x", "containerStatuses", "y");
	assert_int_equal(bm_podstate_of(pod, false, &st), 0);
	assert_int_equal(st.state, BM_RUN_UNKNOWN);
	assert_string_equal(st.reason, "none");
	json_decref(pod);
	/* a phase with bytes a terminal would act on: never printed raw */
	pod = json_pack("{s:{}, s:{s:s}}", "metadata", "status", "phase", "Run\x1b[2J ning\n");
	assert_int_equal(bm_podstate_of(pod, false, &st), 0);
	assert_string_equal(st.reason, "Run__2J_ning_");
	json_decref(pod);
	/* a long message with control bytes: cut at a character, blanked */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big + 254, "\xc3\xa9", 2);	/* é across the cut */
	big[10] = '\n';
	pod = json_pack("{s:{}, s:{s:s, s:[{s:s, s:s, s:s}]}}", "metadata", "status", "phase",
			"Pending", "conditions", "type", "PodScheduled", "status", "False",
			"message", big);
	assert_int_equal(bm_podstate_of(pod, false, &st), 0);
	assert_string_equal(st.reason, "unschedulable");
	assert_int_equal(strlen(st.message), 254);
	assert_int_equal(st.message[10], ' ');
	json_decref(pod);
	/* terminated states with no exit code, a code that is not an integer */
	pod = json_pack("{s:{}, s:{s:s, s:[{s:s, s:{s:{s:s, s:s}}}]}}", "metadata", "status",
			"phase", "Failed", "containerStatuses", "name", "agent", "state",
			"terminated", "reason", "OOMKilled", "exitCode", "137");
	assert_int_equal(bm_podstate_of(pod, false, &st), 0);
	assert_int_equal(st.state, BM_RUN_OOM_KILLED);
	assert_int_equal(st.exit_code, -1);
	json_decref(pod);
}

struct seen {
	char lines[32][160];
	int n;
};

static int collect(const char *pod, const char *run, const struct bm_podstate *st, void *ctx)
{
	struct seen *s = ctx;

	if (s->n < 32)
		snprintf(s->lines[s->n++], sizeof(s->lines[0]), "%s %s %s %s %d", run, pod,
			 bm_run_state_name(st->state), st->reason, st->exit_code);
	return 0;
}

/* Feed a fixture file of concatenated objects, as the command reads them. */
static int feed_file(struct bm_podwatch *w, const char *name, struct seen *s)
{
	char path[512], err[256];
	json_error_t jerr;
	json_t *doc;
	FILE *f;
	int rc = 0, c;

	fixture(path, sizeof(path), name);
	f = fopen(path, "r");
	assert_non_null(f);
	while ((c = getc(f)) != EOF) {
		if (c == ' ' || c == '\n')
			continue;
		ungetc(c, f);
		doc = json_loadf(f, JSON_DISABLE_EOF_CHECK, &jerr);
		assert_non_null(doc);
		rc = bm_podwatch__feed(w, doc, collect, s, err, sizeof(err));
		json_decref(doc);
		if (rc < 0)
			break;
	}
	fclose(f);
	return rc;
}

static void expect_stream(const char *name, const char *const *want, int n)
{
	struct bm_podwatch *w = bm_podwatch__new();
	struct seen s = { .n = 0 };
	int i;

	assert_non_null(w);
	assert_true(feed_file(w, name, &s) >= 0);
	for (i = 0; i < n && i < s.n; i++)
		if (strcmp(s.lines[i], want[i]))
			fail_msg("%s, change %d: '%s', expected '%s'", name, i, s.lines[i],
				 want[i]);
	if (s.n != n)
		fail_msg("%s: %d changes, expected %d", name, s.n, n);
	bm_podwatch__free(w);
}

#define STREAM(name, ...) do { \
	static const char *const w_[] = { __VA_ARGS__ }; \
	expect_stream(name, w_, (int)N(w_)); \
} while (0)

static void test_podwatch_streams(void **state)
{
	/* from creation to success, through the scheduler and an init container */
	STREAM("watch-init-succeeded.json", "run-42 run-42 queued pending -1",
	       "run-42 run-42 queued unschedulable -1", "run-42 run-42 queued scheduled -1",
	       "run-42 run-42 queued initializing -1", "run-42 run-42 queued image_pulling -1",
	       "run-42 run-42 running started -1", "run-42 run-42 succeeded completed 0");
	/* deleted mid-run: the deletion decides, not the SIGTERM exit that follows */
	STREAM("watch-deleted.json", "run-42 run-42 queued image_pulling -1",
	       "run-42 run-42 running started -1", "run-42 run-42 failed deleted -1");
	STREAM("events-deleted.json", "run-42 run-42 queued image_pulling -1",
	       "run-42 run-42 running started -1", "run-42 run-42 failed deleted -1");
	STREAM("events-deleted-pending.json", "run-42 run-42 queued image_pull_failed -1",
	       "run-42 run-42 failed deleted -1");
	STREAM("events-preempted.json", "run-42 run-42 running started -1",
	       "run-42 run-42 evicted preempted -1");
	STREAM("watch-drained.json", "run-42 run-42 running started -1",
	       "run-42 run-42 evicted eviction_api -1");
	STREAM("watch-oom.json", "run-42 run-42 queued image_pulling -1",
	       "run-42 run-42 running started -1", "run-42 run-42 oom_killed memory_limit 137");
	STREAM("watch-evicted.json", "run-42 run-42 running started -1",
	       "run-42 run-42 evicted node_pressure -1");
	STREAM("watch-deadline.json", "run-42 run-42 running started -1",
	       "run-42 run-42 timed_out deadline_exceeded -1");
	STREAM("list.json", "run-42 run-42 running started -1", "run-43 run-43 failed exited 3");
}

static void test_podwatch_events(void **state)
{
	struct bm_podwatch *w = bm_podwatch__new();
	struct seen s = { .n = 0 };
	char err[256];
	json_t *pod = load("running.json"), *ev;

	/* the same pod again: no change; a BOOKMARK: nothing */
	ev = json_pack("{s:s, s:O}", "type", "ADDED", "object", pod);
	assert_int_equal(bm_podwatch__feed(w, ev, collect, &s, err, sizeof(err)), 1);
	assert_int_equal(bm_podwatch__feed(w, pod, collect, &s, err, sizeof(err)), 0);
	json_decref(ev);
	ev = json_pack("{s:s, s:{s:s, s:{s:s}}}", "type", "BOOKMARK", "object", "kind", "Pod",
		       "metadata", "resourceVersion", "918400");
	assert_int_equal(bm_podwatch__feed(w, ev, collect, &s, err, sizeof(err)), 0);
	json_decref(ev);
	/* an unknown event type, a non-pod object in an event */
	ev = json_pack("{s:s, s:O}", "type", "RENAMED", "object", pod);
	assert_int_equal(bm_podwatch__feed(w, ev, collect, &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "RENAMED"));
	json_decref(ev);
	ev = json_pack("{s:s, s:{s:s, s:{}}}", "type", "MODIFIED", "object", "kind", "Node",
		       "metadata");
	assert_int_equal(bm_podwatch__feed(w, ev, collect, &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "Node"));
	json_decref(ev);
	ev = json_pack("{s:s, s:[]}", "kind", "List", "items");
	assert_int_equal(bm_podwatch__feed(w, ev, collect, &s, err, sizeof(err)), 0);
	json_decref(ev);
	ev = json_pack("{s:s, s:s}", "kind", "List", "items", "x");
	assert_int_equal(bm_podwatch__feed(w, ev, collect, &s, err, sizeof(err)), -EINVAL);
	json_decref(ev);
	/* DELETED forgets the pod: the same uid seen again is new */
	ev = json_pack("{s:s, s:O}", "type", "DELETED", "object", pod);
	assert_int_equal(bm_podwatch__feed(w, ev, collect, &s, err, sizeof(err)), 1);
	assert_int_equal(bm_podwatch__feed(w, pod, collect, &s, err, sizeof(err)), 1);
	json_decref(ev);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.lines[1], "run-42 run-42 failed deleted -1");
	/* a pod with no uid: told apart by namespace/name, run by name without the label */
	json_object_del(json_object_get(pod, "metadata"), "uid");
	json_object_del(json_object_get(pod, "metadata"), "labels");
	assert_int_equal(bm_podwatch__feed(w, pod, collect, &s, err, sizeof(err)), 1);
	assert_string_equal(s.lines[3], "run-42 run-42 running started -1");
	json_decref(pod);
	bm_podwatch__free(w);
	bm_podwatch__free(NULL);
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

/* bm_cmd_podstate(argv) with stdin from a string (or NULL: /dev/null), stdout/stderr captured. */
static int run_v(const char *in, char **argv)
{
	FILE *out = tmpfile(), *err = tmpfile(), *inf = tmpfile();
	int argc = 0, so, se, si, rc;

	assert_non_null(out);
	assert_non_null(err);
	assert_non_null(inf);
	if (in)
		fputs(in, inf);
	rewind(inf);
	while (argv[argc])
		argc++;
	fflush(stdout);
	fflush(stderr);
	so = dup(STDOUT_FILENO);
	se = dup(STDERR_FILENO);
	si = dup(STDIN_FILENO);
	dup2(fileno(out), STDOUT_FILENO);
	dup2(fileno(err), STDERR_FILENO);
	dup2(fileno(inf), STDIN_FILENO);
	clearerr(stdin);
	rc = bm_cmd_podstate(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(so, STDOUT_FILENO);
	dup2(se, STDERR_FILENO);
	dup2(si, STDIN_FILENO);
	clearerr(stdin);
	close(so);
	close(se);
	close(si);
	fclose(inf);
	read_back(out, out_buf, sizeof(out_buf));
	read_back(err, err_buf, sizeof(err_buf));
	bm_log_set_json(false);
	return rc;
}

#define RUN(in, ...) run_v((in), (char *[]){ "podstate", __VA_ARGS__, NULL })

static void test_podstate_command(void **state)
{
	char path[512];

	fixture(path, sizeof(path), "watch-oom.json");
	assert_int_equal(RUN(NULL, path), 0);
	assert_string_equal(out_buf, "queued image_pulling\nrunning started\n"
				     "oom_killed memory_limit exit_code=137\n");
	assert_string_equal(err_buf, "");
	fixture(path, sizeof(path), "succeeded.json");
	assert_int_equal(RUN(NULL, "--json", path), 0);
	assert_string_equal(out_buf, "{\"pod\":\"run-42\",\"run\":\"run-42\","
				     "\"state\":\"succeeded\",\"reason\":\"completed\","
				     "\"exit_code\":0,\"phase\":\"Succeeded\"}\n");
	/* stdin, '-' or nothing: objects one after another, on one line or several */
	assert_int_equal(RUN("{\"metadata\":{\"uid\":\"1\",\"name\":\"p\"},\"status\":{\"phase\":"
			     "\"Running\"}}{\"metadata\":{\"uid\":\"1\",\"name\":\"p\"},\"status\":"
			     "{\"phase\":\"Failed\",\"containerStatuses\":[{\"name\":\"c\","
			     "\"state\":"
			     "{\"terminated\":{\"exitCode\":2}}}]}}\n\n", "-"), 0);
	assert_string_equal(out_buf, "running started\nfailed exited exit_code=2\n");
}

static void test_podstate_command_bad_input(void **state)
{
	char path[512];

	assert_int_equal(RUN("{\"kind\":\"Pod\",\"metadata\":{},\"status\":{\"phase\":\"Running\"}}"
			     " {\"kind\":", "-"), 125);
	assert_string_equal(out_buf, "running started\n");
	assert_non_null(strstr(err_buf, "invalid input: object 2 of stdin"));
	assert_int_equal(RUN("{\"kind\":\"Service\",\"metadata\":{}}", "-"), 125);
	assert_string_equal(err_buf, "burstmeter: invalid input: object 1 of stdin: not a Pod "
				     "object (kind \"Service\")\n");
	assert_int_equal(RUN("", "-"), 125);
	assert_string_equal(err_buf, "burstmeter: invalid input: no pod object in stdin\n");
	assert_int_equal(RUN("42", "-"), 125);
	assert_int_equal(RUN(NULL, "/nonexistent"), 125);
	assert_int_equal(RUN(NULL, "a", "b"), 125);
	assert_int_equal(RUN(NULL, "--bogus"), 125);
	/* the watch failing (410 Gone) is the API's failure, not bad input: 1 */
	fixture(path, sizeof(path), "events-error.json");
	assert_int_equal(RUN(NULL, path), 1);
	assert_string_equal(out_buf, "running started\n");
	assert_string_equal(err_buf, "burstmeter: the watch failed: too old resource version: "
				     "918273 (918399)\n");
	assert_int_equal(RUN(NULL, "--help"), 0);
	assert_non_null(strstr(out_buf, "EXAMPLES\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_podstate_each_case),
		cmocka_unit_test(test_podstate_deleted),
		cmocka_unit_test(test_podstate_names),
		cmocka_unit_test(test_podstate_hostile_objects),
		cmocka_unit_test(test_podwatch_streams),
		cmocka_unit_test(test_podwatch_events),
		cmocka_unit_test(test_podstate_command),
		cmocka_unit_test(test_podstate_command_bad_input),
	};

	return cmocka_run_group_tests_name("podstate", tests, NULL, NULL);
}
