// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Re-adoption of what an agent killed -9 left in its store: more effects
 * than the agent's first table holds (64) all come back, queued as they
 * were; one whose stored request this agent cannot parse (as a newer
 * agent's could be) is left in the store, named in the log, and counted.
 * A running one whose shim the store never learnt (the agent died between
 * the go and storing it) is found by what its shim told on its cgroup.
 */
#include <sqlite3.h>
#include <sys/xattr.h>

#include "runner.h"
#include "agent_fx.h"
#include "base/common.h"

#define QUEUED 99
#define BAD "q50"

static int setup_a(void **state)
{
	return agent_fx_setup(state, "adopt", "bmit-adopt");
}

static void agent_start(void)
{
	agent_start_cfg("", "max_running: 1\nmax_queued: 200\ntenant_max_running: 100\n"
			"admit_cpu_pressure: 100\nadmit_mem_available: 0\n"
			"tenants:\n  - { uid: 0, tenant: %s }\n", token);
}

static sqlite3 *db_open(void)
{
	char db[PATH_MAX + 32];
	sqlite3 *s = NULL;

	snprintf(db, sizeof(db), "%s/state.db", ag.state);
	assert_int_equal(sqlite3_open_v2(db, &s, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	return s;
}

/* One row of the store changed behind the agent's back. */
static void db_update(const char *sql)
{
	sqlite3 *s = db_open();
	char *err = NULL;

	if (sqlite3_exec(s, sql, NULL, NULL, &err) != SQLITE_OK)
		fail_msg("%s: %s", sql, err ? err : sqlite3_errmsg(s));
	assert_int_equal(sqlite3_changes(s), 1);
	assert_int_equal(sqlite3_close(s), SQLITE_OK);
}

/* The stored request of BAD made one this agent refuses (a priority out of 1..10). */
static void spoil_request(void)
{
	db_update("UPDATE effects SET request = json_set(request, '$.priority', 99) WHERE id = '" BAD "'");
}

/* id's cgroup and its shim's pid and start time, as the store has them */
static void stored_shim(const char *id, char cg[PATH_MAX], long long *pid, long long *start)
{
	sqlite3 *s = db_open();
	sqlite3_stmt *q = NULL;

	assert_int_equal(sqlite3_prepare_v2(s, "SELECT cgroup, pid, pid_start FROM effects WHERE id = ?1",
					    -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	snprintf(cg, PATH_MAX, "%s", (const char *)sqlite3_column_text(q, 0));
	*pid = sqlite3_column_int64(q, 1);
	*start = sqlite3_column_int64(q, 2);
	sqlite3_finalize(q);
	assert_int_equal(sqlite3_close(s), SQLITE_OK);
}

/*
 * r0's shim told its pid and start time on r0's cgroup, and wrote no pid
 * file (an ext4 create on the launch's serial path). Returns r0's
 * command, the one process in its cgroup.
 */
static pid_t shim_told(char cg[PATH_MAX])
{
	char want[64], got[64], path[2 * PATH_MAX], buf[64];
	long long pid, start;
	ssize_t n;
	int cmd = 0;

	stored_shim("r0", cg, &pid, &start);
	assert_true(pid > 0 && start > 0);
	snprintf(want, sizeof(want), "P %lld %lld\n", pid, start);
	n = getxattr(cg, "trusted.burstmeter.shim", got, sizeof(got) - 1);
	if (n < 0)
		fail_msg("%s: no trusted.burstmeter.shim: %s", cg, strerror(errno));
	got[n] = '\0';
	assert_string_equal(got, want);
	snprintf(path, sizeof(path), "%s/run/%s@r0.status.pid", ag.state, token);
	if (!access(path, F_OK))
		fail_msg("%s: a pid file beside the xattr", path);
	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	assert_true(bm_read_file(AT_FDCWD, path, buf, sizeof(buf)) > 0);
	assert_int_equal(sscanf(buf, "%d", &cmd), 1);
	integ_note("r0's shim told on its cgroup: %.*s; its command is pid %d", (int)strcspn(got, "\n"),
		   got, cmd);
	return (pid_t)cmd;
}

/* As if the agent had died between the go and storing r0's shim. */
static void forget_shim(void)
{
	db_update("UPDATE effects SET pid = 0, pid_start = 0 WHERE id = 'r0'");
}

/* r0 runs on in the same cgroup as the same command: adopted, not queued and run again */
static void same_run(const char *cg, pid_t cmd)
{
	char path[PATH_MAX + 16], buf[64];
	json_t *e = NULL;
	int now = 0;

	assert_int_equal(call("GET", "/v1/effects/r0", NULL, &e), 200);
	assert_string_equal(jstr(e, "state"), "running");
	json_decref(e);
	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	assert_true(bm_read_file(AT_FDCWD, path, buf, sizeof(buf)) > 0);
	assert_int_equal(sscanf(buf, "%d", &now), 1);
	assert_int_equal(now, cmd);
}

static void test_adopt_many_and_one_unparsable(void **state)
{
	static char log[1 << 20];
	char id[64], want[256];
	char cg[PATH_MAX];
	json_t *e = NULL, *h = NULL, *req;
	pid_t cmd;
	int i;

	agent_start();
	req = launch_req("r0", "bm-sleeper", "60000", NULL);
	assert_int_equal(call("POST", "/v1/effects", req, &e), 201);
	json_decref(e);
	cmd = shim_told(cg);
	for (i = 1; i <= QUEUED; i++) {
		e = NULL;
		snprintf(id, sizeof(id), "q%d", i);
		req = launch_req(id, "bm-sleeper", "10", NULL);
		assert_int_equal(call("POST", "/v1/effects", req, &e), 202);
		assert_string_equal(jstr(e, "state"), "queued");
		json_decref(e);
	}
	assert_true(WIFSIGNALED(agent_stop(SIGKILL)));
	spoil_request();
	forget_shim();
	agent_start();
	same_run(cg, cmd);
	assert_int_equal(call("GET", "/v1/healthz", NULL, &h), 200);
	assert_true(jget(h, "adopted") == json_true());
	json_decref(h);

	assert_true(bm_read_file(AT_FDCWD, ag.log, log, sizeof(log)) > 0);
	snprintf(want, sizeof(want), "failed to re-adopt %s/" BAD ": its stored request does not "
		 "parse: [{\"field\":\"priority\"", token);
	if (!strstr(log, want) || !strstr(log, "1 stored effects were not re-adopted") ||
	    !strstr(log, "re-adopted 99 effects (98 queued)"))
		fail_msg("the agent's log does not say what it adopted and what not:\n%s", log);
	integ_note("%.*s", (int)strcspn(strstr(log, want), "\n"), strstr(log, want));

	/* every other one is back as it was, queued behind r0, and goes when cancelled */
	for (i = 1; i <= QUEUED; i++) {
		if (i == 50)
			continue;
		e = NULL;
		snprintf(id, sizeof(id), "/v1/effects/q%d", i);
		assert_int_equal(call("GET", id, NULL, &e), 200);
		assert_string_equal(jstr(e, "state"), "queued");
		json_decref(e);
		e = NULL;
		snprintf(id, sizeof(id), "/v1/effects/q%d/cancel", i);
		assert_int_equal(call("POST", id, NULL, &e), 202);
		json_decref(e);
	}
	e = NULL;
	assert_int_equal(call("POST", "/v1/effects/r0/cancel", NULL, &e), 202);
	json_decref(e);
	e = wait_final("r0", 10000);
	assert_string_equal(jstr(e, "state"), "cancelled");
	json_decref(e);
	e = wait_final("q1", 10000);
	assert_string_equal(jstr(e, "state"), "cancelled");
	json_decref(e);
	agent_fx_finish(state);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_adopt_many_and_one_unparsable, setup_a,
						agent_fx_teardown),
	};
	size_t n;
	int rc = runner_init("test_adopt");

	if (rc)
		return rc;
	n = integ_filter(tests, sizeof(tests) / sizeof(tests[0]));
	return _cmocka_run_group_tests("adopt", tests, n, NULL, NULL);
}
