// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Declared intent, tool kinds and trace context through a real agent: a
 * declaration above the policy's hard level refused before anything runs,
 * soft levels widened up to one, declared against observed in the outcome;
 * an attached `burstmeter run` named by its command, so that one tool
 * backing off leaves another alone; a traceparent (header or field) in the
 * command's environment and the outcome, across a kill -9 of the agent;
 * and `burstmeter advise` on the store those runs made.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include "runner.h"
#include "agent_fx.h"
#include "base/common.h"

#define TP1 "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
#define TP2 "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"

static char policy[PATH_MAX + 16];

/* The agent with a policy of the test's own (policy_yaml: its text). */
static void agent_start(const char *policy_yaml)
{
	FILE *f;

	snprintf(policy, sizeof(policy), "%s/policy.yaml", ag.dir);
	f = fopen(policy, "we");
	assert_non_null(f);
	assert_true(fputs(policy_yaml, f) >= 0);
	assert_int_equal(fclose(f), 0);
	agent_start_cfg("", "max_running: 16\nmax_queued: 64\ntenant_max_running: 100\n"
			"admit_cpu_pressure: 100\nadmit_mem_available: 0\npolicy: %s\n"
			"tenants:\n  - { uid: 0, tenant: %s }\n", policy, token);
}

static int setup_i(void **state)
{
	return agent_fx_setup(state, "intent", "bmit-intent");
}

static json_t *sh_req(const char *id, const char *script)
{
	return json_pack("{s:s, s:[s, s, s], s:s}", "id", id, "argv", "/bin/sh", "-c", script, "intent", "intent");
}

/* The first field a 400 names, and its message (static strings of the answer, kept until the next call). */
static const char *field0(json_t *e, const char *key)
{
	return json_string_value(json_object_get(json_array_get(json_object_get(e, "fields"), 0), key)) ?: "";
}

/*
 * POST /v1/effects with a traceparent header, over a socket of our own
 * (the client sends no custom headers): the HTTP status, *out the answer.
 */
static int post_with_header(json_t *body, const char *traceparent, json_t **out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char *text = json_dumps(body, JSON_COMPACT), req[8192], resp[65536], *p;
	ssize_t n, got = 0;
	int fd, st = -1;

	json_decref(body);
	assert_non_null(text);
	assert_true(strlen(ag.sock) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, ag.sock, strlen(ag.sock) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	n = snprintf(req, sizeof(req), "POST /v1/effects HTTP/1.1\r\nHost: b\r\nConnection: close\r\n"
		     "Content-Type: application/json\r\ntraceparent: %s\r\nContent-Length: %zu\r\n\r\n%s",
		     traceparent, strlen(text), text);
	free(text);
	assert_int_equal(write(fd, req, (size_t)n), n);
	while ((n = read(fd, resp + got, sizeof(resp) - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	resp[got] = '\0';
	assert_int_equal(sscanf(resp, "HTTP/1.1 %d", &st), 1);
	p = strstr(resp, "\r\n\r\n");
	*out = p ? json_loads(p + 4, 0, NULL) : NULL;
	return st;
}

/* A declaration above the policy's hard level is refused before anything runs; one below is reported. */
static void test_intent_declared_against_policy_and_observed(void **state)
{
	json_t *e = NULL, *req, *over;

	agent_start("defaults:\n  memory: { hard: 256M, steps: [kill] }\n");
	req = launch_req("x1", "bm-memtouch", "8", "10", NULL);
	json_object_set_new(req, "expect", json_pack("{s:s}", "memory_bytes", "512Mi"));
	assert_int_equal(call("POST", "/v1/effects", req, &e), 400);
	assert_string_equal(field0(e, "field"), "expect.memory_bytes");
	assert_non_null(strstr(field0(e, "error"), "above the hard memory level"));
	integ_note("refused: %s", field0(e, "error"));
	json_decref(e);
	e = NULL;
	/* nothing of it was made: not in the store */
	assert_int_equal(call("GET", "/v1/effects/x1", NULL, &e), 404);
	json_decref(e);
	e = NULL;
	/* above its own limit: the parser's refusal, the same field */
	req = launch_req("x2", "bm-memtouch", "8", "10", NULL);
	json_object_set_new(req, "expect", json_pack("{s:s}", "memory_bytes", "200Mi"));
	json_object_set_new(req, "sandbox", json_pack("{s:s}", "memory_limit", "100Mi"));
	assert_int_equal(call("POST", "/v1/effects", req, &e), 400);
	assert_string_equal(field0(e, "field"), "expect.memory_bytes");
	json_decref(e);
	e = NULL;
	/* 64 MiB used against 32 MiB declared: run, and said */
	req = launch_req("x3", "bm-memtouch", "64", "200", NULL);
	json_object_set_new(req, "expect", json_pack("{s:s, s:i, s:i, s:i}", "memory_bytes", "32Mi", "wall_seconds",
						     30, "net_tx_bytes", 0, "pids", 4));
	assert_int_equal(call("POST", "/v1/effects", req, &e), 201);
	json_decref(e);
	e = wait_final("x3", 20000);
	assert_string_equal(jstr(e, "state"), "succeeded");
	assert_int_equal(jint(e, "outcome.expect.declared.memory_bytes"), 32 * 1024 * 1024);
	assert_true(jnum(e, "outcome.expect.observed.memory_bytes") >= 64 * MIB);
	assert_true(jnum(e, "outcome.expect.observed.memory_bytes") == jnum(e, "outcome.peak.memory_bytes"));
	assert_int_equal(jint(e, "outcome.expect.observed.net_tx_bytes"), 0);
	assert_true(jnum(e, "outcome.expect.observed.wall_seconds") < 30);
	over = jget(e, "outcome.expect.exceeded");
	assert_int_equal(json_array_size(over), 1);
	assert_string_equal(json_string_value(json_array_get(over, 0)), "memory_bytes");
	/* the stored request keeps it (canonical form) */
	assert_string_equal(jstr(e, "request.expect.wall_seconds"), "30");
	integ_note("declared 32 MiB, observed %.1f MiB", jnum(e, "outcome.expect.observed.memory_bytes") / MIB);
	json_decref(e);
	agent_fx_finish(state);
}

/* A soft level under what the call declared rises to it, for that effect only. */
static void test_intent_widens_soft_levels(void **state)
{
	json_t *e = NULL, *req;

	agent_start("freeze_timeout_ms: 300\ndefaults:\n  pids: { soft: 4, hold_ms: 0, steps: [freeze] }\n");
	/* 9 tasks, 4 allowed softly: frozen, and killed when the freeze does not clear it */
	assert_int_equal(call("POST", "/v1/effects", launch_req("w1", "bm-fanout", "8", "600", NULL), &e), 201);
	json_decref(e);
	e = wait_final("w1", 20000);
	assert_true(json_array_size(jget(e, "outcome.actions")) >= 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(jget(e, "outcome.actions"), 0),
							      "action")), "freeze");
	integ_note("undeclared: %s, %zu actions", jstr(e, "state"), json_array_size(jget(e, "outcome.actions")));
	json_decref(e);
	e = NULL;
	/* the same call, 16 tasks declared: the soft level is 16 for it, nothing to do */
	req = launch_req("w2", "bm-fanout", "8", "600", NULL);
	json_object_set_new(req, "expect", json_pack("{s:i}", "pids", 16));
	assert_int_equal(call("POST", "/v1/effects", req, &e), 201);
	json_decref(e);
	e = wait_final("w2", 20000);
	assert_string_equal(jstr(e, "state"), "succeeded");
	assert_int_equal(json_array_size(jget(e, "outcome.actions")), 0);
	assert_int_equal(jint(e, "outcome.peak.pids"), 9);
	json_decref(e);
	e = NULL;
	/* and the next undeclared one is held to 4 again */
	assert_int_equal(call("POST", "/v1/effects", launch_req("w3", "bm-fanout", "8", "600", NULL), &e), 201);
	json_decref(e);
	e = wait_final("w3", 20000);
	assert_true(json_array_size(jget(e, "outcome.actions")) >= 1);
	json_decref(e);
	agent_fx_finish(state);
}

/* A traceparent header or field: the command's TRACEPARENT, the outcome's trace, across a kill -9. */
static void test_intent_traceparent(void **state)
{
	json_t *e = NULL, *req;

	agent_start("defaults: {}\n");
	/* the command checks its own environment: exit 0 only if TRACEPARENT is the header's */
	assert_int_equal(post_with_header(sh_req("t1", "test \"$TRACEPARENT\" = " TP1), TP1, &e), 201);
	json_decref(e);
	e = wait_final("t1", 20000);
	assert_string_equal(jstr(e, "state"), "succeeded");
	assert_string_equal(jstr(e, "outcome.trace.traceparent"), TP1);
	assert_string_equal(jstr(e, "request.traceparent"), TP1);
	json_decref(e);
	e = NULL;
	/* a bad header is a bad field */
	assert_int_equal(post_with_header(sh_req("t2", "true"), "00-abc", &e), 400);
	assert_string_equal(field0(e, "field"), "traceparent");
	json_decref(e);
	e = NULL;
	/* the field, kept in the store: a restarted agent writes it in the outcome */
	req = sh_req("t3", "sleep 1.5; test \"$TRACEPARENT\" = " TP2);
	json_object_set_new(req, "traceparent", json_string(TP2));
	json_object_set_new(req, "expect", json_pack("{s:i}", "wall_seconds", 60));
	json_object_set_new(req, "env", json_pack("{s:s, s:s}", "TRACEPARENT", "overridden", "PATH", "/usr/bin:/bin"));
	assert_int_equal(call("POST", "/v1/effects", req, &e), 201);
	json_decref(e);
	assert_true(WIFSIGNALED(agent_stop(SIGKILL)));
	agent_start("defaults: {}\n");
	e = wait_final("t3", 20000);
	assert_string_equal(jstr(e, "state"), "succeeded");
	assert_string_equal(jstr(e, "outcome.trace.traceparent"), TP2);
	assert_true(jnum(e, "outcome.expect.declared.wall_seconds") == 60);
	json_decref(e);
	agent_fx_finish(state);
}

/*
 * `burstmeter run` through the agent says what it runs: two runs of one
 * tool at their memory ceiling back that tool off, and another tool goes
 * on (as every attached call was "attach", it was refused too).
 */
static void test_intent_attached_runs_are_their_tool(void **state)
{
	struct fx *f = *state;
	struct res *r;
	char path[128];
	json_t *e = NULL;
	int i;

	agent_start("defaults: {}\n");
	for (i = 0; i < 2; i++) {
		r = run_bm(f, R_ID | R_QUIET, "--socket", ag.sock, "--memory", "32M", "--", wl("bm-balloon"), "512",
			   "128", "100", NULL);
		assert_int_equal(r->status, 128 + SIGKILL);
	}
	snprintf(path, sizeof(path), "/v1/effects/%s", f->id);
	assert_int_equal(call("GET", path, NULL, &e), 200);
	assert_string_equal(jstr(e, "tool"), "bm-balloon");
	assert_string_equal(jstr(e, "outcome.termination.reason"), "memory_ceiling");
	assert_string_equal(json_string_value(json_array_get(jget(e, "outcome.command"), 0)), wl("bm-balloon"));
	assert_string_equal(json_string_value(json_array_get(jget(e, "outcome.command"), 3)), "100");
	assert_non_null(strstr(jstr(e, "outcome.retry.advice"), "1 earlier bm-balloon effect"));
	json_decref(e);
	/* the same tool again: backing off */
	r = run_bm(f, R_ID | R_QUIET, "--socket", ag.sock, "--memory", "32M", "--", wl("bm-balloon"), "512", "128",
		   "100", NULL);
	assert_int_equal(r->status, 125);
	assert_non_null(strstr(r->err.p, "429"));
	/* another tool is not */
	r = run_bm(f, R_ID | R_QUIET, "--socket", ag.sock, "--", wl("bm-sleeper"), "10", NULL);
	assert_int_equal(r->status, 0);
	e = wait_final(f->id, 5000);
	assert_string_equal(jstr(e, "tool"), "bm-sleeper");
	json_decref(e);
	agent_fx_finish(state);
}

/* Run a command of ours to its end: its exit status, its stdout in *out (a new string). */
static int run_out(char *const argv[], char **out)
{
	struct buf b = { 0 };
	bool eof = false;
	int p[2], status;
	pid_t pid;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		dup2(p[1], 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	while (!eof)
		buf_read(&b, p[0], &eof);
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	*out = b.p ? b.p : strdup("");
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static json_t *tool_in(json_t *rep, const char *tool)
{
	json_t *t;
	size_t i;

	json_array_foreach(jget(rep, "tools"), i, t)
		if (!strcmp(jstr(t, "tool"), tool))
			return t;
	fail_msg("advise names no %s", tool);
	return NULL;
}

/* advise on the store of a real agent: the runs it made, and recommendations that follow from them. */
static void test_intent_advise_on_a_real_store(void **state)
{
	char id[32], *text, *sb;
	double p99, lim;
	json_t *e = NULL, *rep, *t;
	int i;

	agent_start("defaults: {}\n");
	for (i = 0; i < 6; i++) {
		snprintf(id, sizeof(id), "m%d", i);
		assert_int_equal(call("POST", "/v1/effects", launch_req(id, "bm-memtouch", "48", "100", NULL), &e), 201);
		json_decref(e);
		e = NULL;
	}
	for (i = 0; i < 3; i++) {
		snprintf(id, sizeof(id), "f%d", i);
		assert_int_equal(call("POST", "/v1/effects", launch_req(id, "bm-fanout", "6", "100", NULL), &e), 201);
		json_decref(e);
		e = NULL;
	}
	for (i = 0; i < 6; i++) {
		snprintf(id, sizeof(id), "m%d", i);
		json_decref(wait_final(id, 20000));
	}
	for (i = 0; i < 3; i++) {
		snprintf(id, sizeof(id), "f%d", i);
		json_decref(wait_final(id, 20000));
	}
	/* while the agent runs: a reader beside it */
	assert_int_equal(run_out((char *[]){ (char *)bm_bin, "advise", "--state-dir", ag.state, "--tenant", token,
					    "--json", NULL }, &text), 0);
	rep = json_loads(text, 0, NULL);
	if (!rep)
		fail_msg("advise --json printed no JSON: %s", text);
	free(text);
	t = tool_in(rep, "bm-memtouch");
	assert_int_equal(jint(t, "runs"), 6);
	assert_int_equal(jint(t, "dims.memory_bytes.runs"), 6);
	assert_int_equal(jint(t, "reasons.completed"), 6);
	/* 48 MiB touched, plus the process's own pages */
	p99 = jnum(t, "dims.memory_bytes.p99");
	assert_between(p99, 48 * MIB, 56 * MIB);
	lim = jnum(t, "recommend.memory_bytes.limit");
	assert_true(lim == ceil(p99 * 1.25 / (16 * MIB)) * 16 * MIB);
	sb = json_dumps(jget(t, "recommend.sandbox"), JSON_COMPACT);
	integ_note("bm-memtouch 48: p99 %.1f MiB, limit %.0f MiB, sandbox %s", p99 / MIB, lim / MIB, sb);
	free(sb);
	t = tool_in(rep, "bm-fanout");
	assert_int_equal(jint(t, "runs"), 3);
	/* 6 children and their parent: 7 tasks, 7 x 1.25 -> 9 */
	assert_int_equal(jint(t, "dims.pids.p99"), 7);
	assert_int_equal(jint(t, "recommend.pids_limit"), 9);
	json_decref(rep);
	/* the text form, one tool */
	assert_int_equal(run_out((char *[]){ (char *)bm_bin, "advise", "--state-dir", ag.state, "--tool",
					    "bm-fanout", NULL }, &text), 0);
	integ_note("advise --tool bm-fanout:\n%s", text);
	assert_non_null(strstr(text, "bm-fanout: 3 runs (completed 3)"));
	assert_non_null(strstr(text, "--pids 9"));
	assert_null(strstr(text, "bm-memtouch"));
	free(text);
	/* bad usage, and no store */
	assert_int_equal(run_out((char *[]){ (char *)bm_bin, "advise", "--tenant", "../x", NULL }, &text), 125);
	free(text);
	assert_int_equal(run_out((char *[]){ (char *)bm_bin, "advise", "--state-dir", ag.dir, NULL }, &text), 1);
	free(text);
	agent_fx_finish(state);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_intent_declared_against_policy_and_observed, setup_i, agent_fx_teardown),
		cmocka_unit_test_setup_teardown(test_intent_widens_soft_levels, setup_i, agent_fx_teardown),
		cmocka_unit_test_setup_teardown(test_intent_traceparent, setup_i, agent_fx_teardown),
		cmocka_unit_test_setup_teardown(test_intent_attached_runs_are_their_tool, setup_i, agent_fx_teardown),
		cmocka_unit_test_setup_teardown(test_intent_advise_on_a_real_store, setup_i, agent_fx_teardown),
	};
	size_t n;
	int rc = runner_init("test_intent");

	if (rc)
		return rc;
	n = integ_filter(tests, sizeof(tests) / sizeof(tests[0]));
	return _cmocka_run_group_tests("intent", tests, n, NULL, NULL);
}
