// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * More of the agent's promises against hostile tenants and bad days, each
 * a fix that had no test: names that cannot collide (tenant "team" with id
 * "a.x" beside tenant "team.a" with id "x"); a reader that never reads its
 * events stream is cut and costs the agent bounded memory; an attached
 * process is re-adopted only if it is the same process (pid and start
 * time); ended effects go after their retention without a restart; and a
 * tenant's uid is the same after a restart.
 */
#include <sqlite3.h>

#include "runner.h"
#include "agent_fx.h"
#include "base/common.h"

static void agent_start(const char *extra)
{
	agent_start_cfg("", "max_running: 8\nmax_queued: 64\ntenant_max_running: 100\n"
			"admit_cpu_pressure: 100\nadmit_mem_available: 0\nsocket_mode: \"0666\"\n"
			"tenants:\n  - { uid: 0, tenant: %s }\n%s", token, extra ? extra : "");
}

static int setup_p(void **state)
{
	return agent_fx_setup(state, "promises", "bmit-promises");
}

/* {id, argv: [/bin/sh, -c, script], intent, tenant (NULL: the caller's)}: a new reference. */
static json_t *sh_req(const char *tenant, const char *id, const char *script)
{
	json_t *r = json_pack("{s:s, s:[s, s, s], s:s, s:{s:s}}", "id", id, "argv", "/bin/sh", "-c",
			      script, "intent", "promises", "env", "PATH",
			      "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin");

	if (tenant)
		json_object_set_new(r, "tenant", json_string(tenant));
	return r;
}

/* GET of tenant's effect id (a new reference). */
static json_t *get_as(const char *tenant, const char *id)
{
	char path[256];
	json_t *e = NULL;

	snprintf(path, sizeof(path), "/v1/effects/%s?tenant=%s", id, tenant);
	assert_int_equal(call("GET", path, NULL, &e), 200);
	return e;
}

static void cancel_as(const char *tenant, const char *id)
{
	char path[256];
	json_t *e = NULL;

	snprintf(path, sizeof(path), "/v1/effects/%s/cancel?tenant=%s", id, tenant);
	assert_int_equal(call("POST", path, NULL, &e), 202);
	json_decref(e);
	e = wait_final_as(tenant, id, 20000);
	assert_string_equal(jstr(e, "state"), "cancelled");
	json_decref(e);
}

/*
 * Tenant T with id "a.x" and tenant "T.a" with id "x" (once both
 * "burstmeter.T.a.x"): both run at once, each in a cgroup and a log of its
 * own.
 */
static void test_promises_names_collide_not(void **state)
{
	char t2[64], cg1[PATH_MAX], cg2[PATH_MAX];
	json_t *e = NULL, *g;

	agent_start(NULL);
	snprintf(t2, sizeof(t2), "%s.a", token);
	assert_int_equal(call("POST", "/v1/effects", sh_req(token, "a.x", "echo one; sleep 60"), &e),
			 201);
	snprintf(cg1, sizeof(cg1), "%s", jstr(e, "cgroup"));
	json_decref(e);
	e = NULL;
	assert_int_equal(call("POST", "/v1/effects", sh_req(t2, "x", "echo two; sleep 60"), &e), 201);
	snprintf(cg2, sizeof(cg2), "%s", jstr(e, "cgroup"));
	json_decref(e);
	integ_note("%s@a.x in %s; %s@x in %s", token, cg1, t2, cg2);
	assert_string_not_equal(cg1, cg2);
	assert_int_equal(access(cg1, F_OK), 0);
	assert_int_equal(access(cg2, F_OK), 0);
	g = get_as(token, "a.x");
	assert_string_equal(jstr(g, "state"), "running");
	json_decref(g);
	g = get_as(t2, "x");
	assert_string_equal(jstr(g, "state"), "running");
	json_decref(g);
	/* and each one's output is its own */
	usleep(300 * 1000);
	assert_string_equal(effect_log(token, "a.x"), "one\n");
	assert_string_equal(effect_log(t2, "x"), "two\n");
	cancel_as(token, "a.x");
	/* cancelling one left the other running */
	g = get_as(t2, "x");
	assert_string_equal(jstr(g, "state"), "running");
	json_decref(g);
	cancel_as(t2, "x");
	agent_fx_finish(state);
}

/* The agent's resident memory, KiB. */
static long agent_rss_kib(void)
{
	char path[64], buf[4096], *p;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)ag.pid);
	assert_true(bm_read_file(AT_FDCWD, path, buf, sizeof(buf)) > 0);
	p = strstr(buf, "\nVmRSS:");
	assert_non_null(p);
	return atol(p + 7);
}

/*
 * Readers that never read their events streams: each is held to a MiB
 * (lines past it dropped), then cut once it stays full for idle_timeout;
 * the agent's memory grows by little more than that, and the effect runs
 * on.
 */
static void test_promises_slow_reader_cut(void **state)
{
	static const char req[] = "GET /v1/effects/slow/events HTTP/1.1\r\nHost: agent\r\n"
				  "Connection: close\r\n\r\n";
	enum { READERS = 4 };
	long rss0, rss1, got = 0;
	int fd[READERS], i, t;
	char buf[65536];
	json_t *e = NULL;
	ssize_t n;

	agent_start("idle_timeout: 2\n");
	/* a busy effect: its windows say a lot */
	assert_int_equal(call("POST", "/v1/effects", launch_req("slow", "bm-spike", "20", "20",
								 "120000", NULL), &e), 201);
	json_decref(e);
	e = NULL;
	usleep(500 * 1000);
	rss0 = agent_rss_kib();
	for (i = 0; i < READERS; i++) {
		fd[i] = agent_conn();
		assert_int_equal(write(fd[i], req, sizeof(req) - 1), (ssize_t)sizeof(req) - 1);
	}
	/* never read: a MiB each behind what the socket holds, then full for 2 s */
	for (t = 0; t < 180 && !agent_log_has("events stream of"); t++)
		sleep(1);
	rss1 = agent_rss_kib();
	integ_note("cut after %d s; the agent's memory %ld -> %ld KiB with %d readers that never "
		   "read", t, rss0, rss1, READERS);
	assert_true(agent_log_has("left 1 MiB unread"));
	assert_true(rss1 - rss0 < READERS * 3 * 1024 + 8 * 1024);
	/* each stream ends (what it held, then the end), while the effect runs on */
	for (i = 0; i < READERS; i++) {
		struct timeval tv = { 10, 0 };

		setsockopt(fd[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		while ((n = read(fd[i], buf, sizeof(buf))) > 0)
			got += n;
		assert_int_equal(n, 0);
		close(fd[i]);
	}
	integ_note("the readers got %ld bytes, then the end of their streams", got);
	e = NULL;
	assert_int_equal(call("GET", "/v1/effects/slow", NULL, &e), 200);
	assert_string_equal(jstr(e, "state"), "running");
	json_decref(e);
	e = NULL;
	assert_int_equal(call("POST", "/v1/effects/slow/cancel", NULL, &e), 202);
	json_decref(e);
	e = wait_final("slow", 20000);
	json_decref(e);
	agent_fx_finish(state);
}

/* A child of ours that sleeps (an attached process); it is ended by the test. */
static pid_t sleeper(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		execl("/bin/sleep", "sleep", "120", (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Run sql on the agent's store (the agent is down). */
static void store_exec(const char *sql)
{
	char path[PATH_MAX + 32];
	sqlite3 *db;
	char *err = NULL;

	snprintf(path, sizeof(path), "%s/state.db", ag.state);
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
		fail_msg("%s: %s", sql, err);
	assert_int_equal(sqlite3_changes(db), 1);
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
}

/*
 * Attached processes across kill -9 of the agent: the one whose stored
 * start time is not its own (its pid now another process's, as after pid
 * reuse) is not re-attached: the effect ends while the process lives on.
 * The other, the same process, is adopted again and still running.
 */
static void test_promises_attach_same_process(void **state)
{
	static const char *const ids[] = { "reused", "same" };
	pid_t pid[2];
	char sql[256];
	json_t *e = NULL;
	int i;

	agent_start(NULL);
	for (i = 0; i < 2; i++) {
		pid[i] = sleeper();
		assert_int_equal(call("POST", "/v1/effects",
				      json_pack("{s:s, s:s, s:i}", "id", ids[i], "mode", "attach", "pid",
						(int)pid[i]), &e), 201);
		json_decref(e);
		e = NULL;
	}
	assert_true(WIFSIGNALED(agent_stop(SIGKILL)));
	/* what the store says of "reused": its pid, started at another time */
	snprintf(sql, sizeof(sql), "UPDATE effects SET pid_start = pid_start + 1 WHERE tenant = '%s'"
		 " AND id = 'reused' AND pid = %d AND pid_start > 0", token, (int)pid[0]);
	store_exec(sql);
	agent_start(NULL);
	e = wait_final("reused", 10000);
	integ_note("reused: %s (%s); its process %s", jstr(e, "state"),
		   jstr(e, "outcome.termination.reason"), kill(pid[0], 0) ? "gone" : "alive");
	json_decref(e);
	e = NULL;
	/* not watched, and not touched: the process is not the effect's */
	assert_int_equal(kill(pid[0], 0), 0);
	assert_int_equal(call("GET", "/v1/effects/same", NULL, &e), 200);
	integ_note("same: %s", jstr(e, "state"));
	assert_string_equal(jstr(e, "state"), "running");
	json_decref(e);
	e = NULL;
	/* the same process: what it does is watched again */
	assert_int_equal(kill(pid[1], SIGKILL), 0);
	assert_int_equal(waitpid(pid[1], NULL, 0), pid[1]);
	e = wait_final("same", 10000);
	integ_note("same, once its process was killed: %s", jstr(e, "state"));
	json_decref(e);
	kill(pid[0], SIGKILL);
	waitpid(pid[0], NULL, 0);
	agent_fx_finish(state);
}

/* Ended effects past their retention go while the agent runs, with their logs. */
static void test_promises_retention_periodic(void **state)
{
	char path[PATH_MAX + 64];
	json_t *e = NULL;
	pid_t pid;
	int st = 200, t;

	agent_start("retention: 2s\n");
	pid = ag.pid;
	assert_int_equal(call("POST", "/v1/effects", sh_req(NULL, "old", "echo hi"), &e), 201);
	json_decref(e);
	e = wait_final("old", 20000);
	assert_string_equal(jstr(e, "state"), "succeeded");
	json_decref(e);
	snprintf(path, sizeof(path), "%s/logs/%s@old.log", ag.state, token);
	assert_int_equal(access(path, F_OK), 0);
	for (t = 0; t < 150 && st == 200; t++) {
		usleep(100 * 1000);
		e = NULL;
		st = call("GET", "/v1/effects/old", NULL, &e);
		json_decref(e);
	}
	integ_note("gone %.1f s after it ended, the same agent (no restart)", t / 10.0);
	assert_int_equal(st, 404);
	assert_int_equal(ag.pid, pid);
	assert_int_equal(access(path, F_OK), -1);
	agent_fx_finish(state);
}

/* The uid tenant's effect runs as (root submits for it). */
static long uid_of(const char *tenant, const char *id)
{
	json_t *e = NULL;
	long uid;

	assert_int_equal(call("POST", "/v1/effects", sh_req(tenant, id, "id -u"), &e), 201);
	json_decref(e);
	e = wait_final_as(tenant, id, 20000);
	assert_string_equal(jstr(e, "state"), "succeeded");
	json_decref(e);
	uid = atol(effect_log(tenant, id));
	integ_note("tenant %s: uid %ld", tenant, uid);
	assert_between(uid, 900000, 965535);
	return uid;
}

/*
 * A tenant's uid is its own for good: after kill -9 and a restart, asked
 * for first, it is the one it had (not the first free one), and a new
 * tenant gets another.
 */
static void test_promises_uid_after_restart(void **state)
{
	char ta[64], tb[64], tc[64];
	long a, b, a2, c;

	snprintf(ta, sizeof(ta), "%s-ua", token);
	snprintf(tb, sizeof(tb), "%s-ub", token);
	snprintf(tc, sizeof(tc), "%s-uc", token);
	agent_start(NULL);
	b = uid_of(tb, "u1");
	a = uid_of(ta, "u2");
	assert_true(a != b);
	assert_true(WIFSIGNALED(agent_stop(SIGKILL)));
	agent_start(NULL);
	a2 = uid_of(ta, "u3");
	c = uid_of(tc, "u4");
	assert_true(a2 == a);
	assert_true(c != a && c != b);
	agent_fx_finish(state);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_promises_names_collide_not, setup_p, agent_fx_teardown),
		cmocka_unit_test_setup_teardown(test_promises_slow_reader_cut, setup_p, agent_fx_teardown),
		cmocka_unit_test_setup_teardown(test_promises_attach_same_process, setup_p, agent_fx_teardown),
		cmocka_unit_test_setup_teardown(test_promises_retention_periodic, setup_p, agent_fx_teardown),
		cmocka_unit_test_setup_teardown(test_promises_uid_after_restart, setup_p, agent_fx_teardown),
	};
	size_t n;
	int rc = runner_init("test_promises");

	if (rc)
		return rc;
	n = integ_filter(tests, sizeof(tests) / sizeof(tests[0]));
	return _cmocka_run_group_tests("promises", tests, n, NULL, NULL);
}
