// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The agent's promises against a hostile tenant, each one a defect seen
 * before it was fixed: a cancelled effect never runs, not even after a
 * restart; a tenant's work never runs as root, not even after a restart;
 * effects see no other effect, write nowhere outside their own places,
 * cannot leave their cgroup, cannot reach the agent or ask it for more
 * than they have; one user cannot lock the API; one agent owns a state
 * dir; ended effects go after their retention, and output past its cap.
 */
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "runner.h"
#include "agent_fx.h"
#include "base/common.h"

static void agent_start(const char *max_running, const char *extra)
{
	/* the second tenant is another uid (NOBODY): it must reach the socket and the workloads */
	agent_start_cfg("", "max_running: %s\nmax_queued: 64\ntenant_max_running: 100\n"
			"admit_cpu_pressure: 100\nadmit_mem_available: 0\nsocket_mode: \"0666\"\n"
			"tenants:\n  - { uid: 0, tenant: %s }\n  - { uid: %d, tenant: %s-other }\n%s",
			max_running, token, NOBODY, token, extra ? extra : "");
}

static int setup_h(void **state)
{
	return agent_fx_setup(state, "harden", "bmit-harden");
}

/* {id, argv: [/bin/sh, -c, script], intent} with an optional sandbox (a new reference). */
static json_t *sh_req(const char *id, const char *script, json_t *sandbox)
{
	json_t *r = json_pack("{s:s, s:[s, s, s], s:s, s:{s:s}}", "id", id, "argv", "/bin/sh", "-c",
			      script, "intent", "hardening", "env", "PATH",
			      "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin");

	if (sandbox)
		json_object_set_new(r, "sandbox", sandbox);
	return r;
}

static int post(json_t *req)
{
	json_t *e = NULL;
	int st = call("POST", "/v1/effects", req, &e);

	json_decref(e);
	return st;
}

static void expect_state(const char *id, const char *want, int timeout_ms)
{
	json_t *e = wait_final(id, timeout_ms);

	if (strcmp(jstr(e, "state"), want))
		fail_msg("%s ended %s (%s), expected %s", id, jstr(e, "state"),
			 jstr(e, "outcome.termination.reason"), want);
	json_decref(e);
}

/* Ever running? Its transitions say. */
static bool ever_ran(const char *id)
{
	char path[128];
	json_t *e = NULL, *t;
	bool ran = false;
	size_t i;

	snprintf(path, sizeof(path), "/v1/effects/%s", id);
	assert_int_equal(call("GET", path, NULL, &e), 200);
	json_array_foreach(json_object_get(e, "transitions"), i, t)
		ran |= !strcmp(json_string_value(json_object_get(t, "state")), "running");
	json_decref(e);
	return ran;
}

/*
 * Cancelled while queued: it ends cancelled at once and gives its slot back
 * (the old agent counted it running for ever: max_running cancels and
 * nothing started again), and a restart does not run it.
 */
static void test_harden_cancel_queued(void **state)
{
	static const char *const q[] = { "q1", "q2", "q3" };
	char path[64];
	json_t *e = NULL;
	unsigned int i;

	agent_start("1", NULL);
	assert_int_equal(post(launch_req("hold", "bm-sleeper", "60000", NULL)), 201);
	for (i = 0; i < 3; i++)
		assert_int_equal(post(launch_req(q[i], "bm-sleeper", "100", NULL)), 202);
	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "/v1/effects/%s/cancel", q[i]);
		assert_int_equal(call("POST", path, NULL, &e), 202);
		assert_string_equal(jstr(e, "state"), "cancelled");
		assert_string_equal(jstr(e, "outcome.termination.reason"), "cancelled");
		json_decref(e);
		e = NULL;
	}
	assert_int_equal(call("POST", "/v1/effects/hold/cancel", NULL, &e), 202);
	json_decref(e);
	e = NULL;
	expect_state("hold", "cancelled", 20000);
	/* the one slot is free again: the next effect starts */
	assert_int_equal(post(launch_req("after", "bm-sleeper", "100", NULL)), 201);
	expect_state("after", "succeeded", 20000);
	/* a restart: nothing cancelled comes back */
	assert_int_equal(post(launch_req("hold2", "bm-sleeper", "60000", NULL)), 201);
	assert_int_equal(post(launch_req("q4", "bm-sleeper", "100", NULL)), 202);
	assert_int_equal(call("POST", "/v1/effects/q4/cancel", NULL, &e), 202);
	json_decref(e);
	e = NULL;
	assert_true(WIFSIGNALED(agent_stop(SIGKILL)));
	agent_start("1", NULL);
	assert_int_equal(call("POST", "/v1/effects/hold2/cancel", NULL, &e), 202);
	json_decref(e);
	expect_state("hold2", "cancelled", 20000);
	for (i = 0; i < 3; i++)
		assert_false(ever_ran(q[i]));
	expect_state("q4", "cancelled", 1000);
	assert_false(ever_ran("q4"));
	agent_fx_finish(state);
}

/*
 * A non-root tenant's queued effect, across kill -9 of the agent: it runs
 * as that tenant's uid (the old store kept none: it ran as root).
 */
static void test_harden_identity_after_restart(void **state)
{
	char tenant[64];
	json_t *e = NULL;

	agent_start("1", NULL);
	assert_int_equal(post(launch_req("blocker", "bm-sleeper", "60000", NULL)), 201);
	assert_int_equal(call_as(NOBODY, "POST", "/v1/effects", sh_req("nb1", "id -u", NULL)), 202);
	assert_true(WIFSIGNALED(agent_stop(SIGKILL)));
	agent_start("1", NULL);
	assert_int_equal(call("POST", "/v1/effects/blocker/cancel", NULL, &e), 202);
	json_decref(e);
	snprintf(tenant, sizeof(tenant), "%s-other", token);
	e = wait_final_as(tenant, "nb1", 20000);
	assert_string_equal(jstr(e, "state"), "succeeded");
	json_decref(e);
	assert_string_equal(effect_log(tenant, "nb1"), "65534\n");
	expect_state("blocker", "cancelled", 5000);
	agent_fx_finish(state);
}

/* Tenants root acts for get a uid each, for good: never root, never another tenant's. */
static void test_harden_tenant_uids(void **state)
{
	static const char *const who[] = { "ta", "tb", "ta" };
	char id[16], tenant[64];
	long uid[3];
	unsigned int i;
	json_t *r, *e;

	agent_start("8", NULL);
	for (i = 0; i < 3; i++) {
		snprintf(id, sizeof(id), "u%u", i);
		snprintf(tenant, sizeof(tenant), "%s-%s", token, who[i]);
		r = sh_req(id, "id -u", NULL);
		json_object_set_new(r, "tenant", json_string(tenant));
		assert_int_equal(post(r), 201);
		e = wait_final_as(tenant, id, 20000);
		assert_string_equal(jstr(e, "state"), "succeeded");
		json_decref(e);
		uid[i] = atol(effect_log(tenant, id));
		integ_note("tenant %s runs as uid %ld", tenant, uid[i]);
		assert_between(uid[i], 900000, 965535);
	}
	assert_true(uid[0] != uid[1]);
	assert_true(uid[0] == uid[2]);
	agent_fx_finish(state);
}

/*
 * Effects see each other not: a PID namespace each (its shell is pid 2,
 * after the init), a /proc of its own; a private /dev/shm; with a read-only
 * root every mount is read-only but /tmp and /dev/shm; the cgroup
 * filesystems read-only; the agent's socket not there; cwd entered as the
 * effect's uid.
 */
static void test_harden_isolation(void **state)
{
	char script[PATH_MAX * 3], shm[64];
	const char *out;

	agent_start("8", NULL);
	snprintf(shm, sizeof(shm), "/dev/shm/bm-%s-probe", token);
	snprintf(script, sizeof(script),
		 "echo pid=$$; echo init=$(cat /proc/1/comm); echo procs=$(ls -d /proc/[0-9]* | wc -l);"
		 "touch %s && echo shm=rw; touch /tmp/x && echo tmp=rw;"
		 "touch /var/tmp/bm-probe 2>/dev/null && echo vartmp=rw || echo vartmp=ro;"
		 "touch /dev/bm-probe 2>/dev/null && echo dev=rw || echo dev=ro;"
		 "echo $$ > %s/cgroup.procs 2>/dev/null && echo escape=yes || echo escape=no;"
		 "cat /proc/self/cgroup | grep '^0::' ;"
		 "test -e %s && echo sock=seen || echo sock=hidden",
		 shm, v2_mount, ag.sock);
	assert_int_equal(post(sh_req("iso", script,
				     json_pack("{s:b, s:b}", "read_only_root_fs", 1,
					       "drop_all_capabilities", 1))), 201);
	expect_state("iso", "succeeded", 20000);
	out = effect_log(token, "iso");
	integ_note("the effect said: %s", out);
	assert_non_null(strstr(out, "pid=2\n"));
	assert_non_null(strstr(out, "init=bm-init\n"));
	/* its shell, ls, wc and a subshell at most: the host's hundreds are not there */
	assert_between(atof(strstr(out, "procs=") + 6), 2, 8);
	assert_non_null(strstr(out, "shm=rw\n"));
	assert_non_null(strstr(out, "tmp=rw\n"));
	assert_non_null(strstr(out, "vartmp=ro\n"));
	assert_non_null(strstr(out, "dev=ro\n"));
	assert_non_null(strstr(out, "escape=no\n"));
	assert_non_null(strstr(out, "0::/\n"));
	assert_non_null(strstr(out, "sock=hidden\n"));
	/* what it wrote in its /dev/shm went with it */
	assert_int_equal(access(shm, F_OK), -1);
	/* a directory its uid cannot enter is never entered for it */
	{
		json_t *r = sh_req("cwd", "pwd", NULL), *e;
		char priv[PATH_MAX + 16];

		snprintf(priv, sizeof(priv), "%s/private", ag.dir);
		assert_int_equal(mkdir(priv, 0700), 0);
		json_object_set_new(r, "cwd", json_string(priv));
		assert_int_equal(call_as(NOBODY, "POST", "/v1/effects", r), 201);
		snprintf(script, sizeof(script), "%s-other", token);
		e = wait_final_as(script, "cwd", 20000);
		integ_note("cwd /root as nobody: %s (%s)", jstr(e, "state"),
			   jstr(e, "outcome.termination.reason"));
		integ_note("its output: '%s'", effect_log(script, "cwd"));
		/* the request's refusal (125 as run says it, by burstmeter, EACCES), not a meter error */
		integ_note("advice: %s", jstr(e, "outcome.retry.advice"));
		assert_string_equal(jstr(e, "state"), "failed");
		assert_string_equal(jstr(e, "outcome.termination.reason"), "failed");
		assert_string_equal(jstr(e, "outcome.termination.by"), "burstmeter");
		assert_int_equal(jint(e, "outcome.exit.code"), 125);
		assert_non_null(strstr(jstr(e, "outcome.retry.advice"), strerror(EACCES)));
		assert_true(jget(e, "outcome.retry.eligible") == json_false());
		json_decref(e);
		assert_string_equal(effect_log(script, "cwd"), "");
	}
	agent_fx_finish(state);
}

/*
 * Code inside an effect that reaches the socket (a pod mounts it): its
 * effect's tenant, nothing looser than its effect's sandbox, and only the
 * effects it asked for. The test puts a child of its own into the effect's
 * cgroup, as a harness in a pod would be.
 */
static void test_harden_effect_caller(void **state)
{
	char cg[PATH_MAX + 32], pid[16];
	json_t *e = NULL, *sb;
	int p[2], st[4] = { 0 };
	pid_t child;

	agent_start("8", NULL);
	assert_int_equal(post(launch_req("outer", "bm-sleeper", "60000", NULL)), 201);
	/* the caller's effect: network none, 256 MiB */
	sb = json_pack("{s:s, s:s}", "network_policy", "none", "memory_limit", "256Mi");
	{
		json_t *r = launch_req("outer2", "bm-sleeper", "60000", NULL);

		json_object_set_new(r, "sandbox", sb);
		assert_int_equal(call("POST", "/v1/effects", r, &e), 201);
	}
	snprintf(cg, sizeof(cg), "%s/cgroup.procs", jstr(e, "cgroup"));
	json_decref(e);
	e = NULL;
	assert_int_equal(pipe(p), 0);
	child = fork();
	assert_true(child >= 0);
	if (!child) {
		json_t *r;

		close(p[0]);
		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		if (bm_write_file(AT_FDCWD, cg, pid))
			_exit(1);
		/* looser: a network it has not */
		r = sh_req("in1", "true", json_pack("{s:s, s:s}", "network_policy", "full",
						     "memory_limit", "128Mi"));
		st[0] = bm_client_call(ag.sock, "POST", "/v1/effects", r, &e, 10000);
		json_decref(r);
		/* looser: no memory ceiling at all */
		r = sh_req("in2", "true", json_pack("{s:s}", "network_policy", "none"));
		st[1] = bm_client_call(ag.sock, "POST", "/v1/effects", r, &e, 10000);
		json_decref(r);
		/* as tight, or tighter: taken, as its effect's tenant */
		r = sh_req("in3", "true", json_pack("{s:s, s:s}", "network_policy", "none",
						     "memory_limit", "64Mi"));
		st[2] = bm_client_call(ag.sock, "POST", "/v1/effects", r, &e, 10000);
		json_decref(r);
		/* another effect of the tenant, not asked for by it: not there */
		st[3] = bm_client_call(ag.sock, "GET", "/v1/effects/outer", NULL, &e, 10000);
		_exit(write(p[1], st, sizeof(st)) == sizeof(st) ? 0 : 1);
	}
	close(p[1]);
	assert_int_equal(read(p[0], st, sizeof(st)), sizeof(st));
	close(p[0]);
	waitpid(child, NULL, 0);
	integ_note("from inside: full network %d, no memory ceiling %d, tighter %d, a sibling %d",
		   st[0], st[1], st[2], st[3]);
	assert_int_equal(st[0], 403);
	assert_int_equal(st[1], 403);
	assert_int_equal(st[2], 201);
	assert_int_equal(st[3], 404);
	expect_state("in3", "succeeded", 20000);
	assert_int_equal(call("POST", "/v1/effects/outer2/cancel", NULL, &e), 202);
	json_decref(e);
	e = NULL;
	expect_state("outer2", "cancelled", 20000);
	assert_int_equal(call("POST", "/v1/effects/outer/cancel", NULL, &e), 202);
	json_decref(e);
	expect_state("outer", "cancelled", 20000);
	agent_fx_finish(state);
}

/* Was fd (just connected) refused with a 429? Accepted idle ones say nothing in 300 ms. */
static bool refused(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };
	char buf[512];
	ssize_t n;

	if (poll(&p, 1, 300) != 1)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strstr(buf, " 429 ") != NULL;
}

/*
 * A child as uid that opens want connections and holds them; how many
 * were taken comes back on *pipe_r (one byte). Ended by SIGKILL.
 */
static pid_t hold_conns_as(uid_t uid, int want, int *pipe_r)
{
	int p[2], i;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		unsigned char taken = 0;

		close(p[0]);
		if (setgid(uid) || setuid(uid))
			_exit(1);
		for (i = 0; i < want; i++)
			taken += !refused(agent_conn());
		if (write(p[1], &taken, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	*pipe_r = p[0];
	return pid;
}

/*
 * Uids together (each under its own cap) cannot take every connection the
 * agent has: an eighth stays root's, and the eighth before it is for uids
 * that hold none. With 16 in all and 4 a uid: four uids get 4, 4, 4 and 1
 * (12 taken, the rest reserved), a fifth that holds none gets in, and root
 * is served. Before, four such uids held all 16 and root was locked out.
 */
static void colluding_uids(void)
{
	enum { COLLUDERS = 4 };
	int fd[COLLUDERS], i, total = 0;
	pid_t pid[COLLUDERS];
	unsigned char taken;
	json_t *h = NULL;

	agent_start("8", "max_conns: 16\nmax_conns_per_uid: 4\nidle_timeout: 30\n");
	for (i = 0; i < COLLUDERS; i++) {
		/* one after another: each sees what the ones before it hold */
		pid[i] = hold_conns_as(70000 + i, 4, &fd[i]);
		assert_int_equal(read(fd[i], &taken, 1), 1);
		integ_note("uid %d: %u of 4 connections taken", 70000 + i, taken);
		total += taken;
	}
	integ_note("%d colluding uids hold %d of 16", COLLUDERS, total);
	assert_int_equal(total, 13);
	/* a uid that holds none, then root: served */
	assert_int_equal(call_as(NOBODY, "GET", "/v1/healthz", NULL), 200);
	assert_int_equal(call("GET", "/v1/healthz", NULL, &h), 200);
	json_decref(h);
	for (i = 0; i < COLLUDERS; i++) {
		kill(pid[i], SIGKILL);
		waitpid(pid[i], NULL, 0);
		close(fd[i]);
	}
	assert_int_equal(agent_stop(SIGTERM), 0);
}

/*
 * One user holding idle connections: past its share it is told 429, the
 * others are served; idle ones are closed after the idle timeout.
 */
static void test_harden_connection_caps(void **state)
{
	int fd[4], i, extra;
	char buf[512];
	ssize_t n;

	agent_start("8", "max_conns_per_uid: 4\nidle_timeout: 2\n");
	for (i = 0; i < 4; i++)
		fd[i] = agent_conn();
	usleep(100000);
	extra = agent_conn();
	n = read(extra, buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	integ_note("the fifth: %.40s...", buf);
	assert_non_null(strstr(buf, "429"));
	close(extra);
	/* another uid is served meanwhile */
	assert_int_equal(call_as(NOBODY, "GET", "/v1/healthz", NULL), 200);
	/* the idle ones are closed by the agent: EOF */
	for (i = 0; i < 4; i++) {
		struct timeval tv = { 6, 0 };

		setsockopt(fd[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		assert_int_equal(read(fd[i], buf, sizeof(buf)), 0);
		close(fd[i]);
	}
	/* and root is served again */
	{
		json_t *h = NULL;

		assert_int_equal(call("GET", "/v1/healthz", NULL, &h), 200);
		json_decref(h);
	}
	assert_int_equal(agent_stop(SIGTERM), 0);
	colluding_uids();
	agent_start("8", NULL);
	agent_fx_finish(state);
}

/* One agent owns a state dir; a live socket is never taken from its agent. */
static void test_harden_one_agent(void **state)
{
	char *argv[] = { (char *)bm_bin, "agent", "--config", ag.cfg, "--socket", NULL, "--state-dir",
			 ag.state, "--pin-dir", ag.pins, "--metrics", "", NULL };
	char sock2[PATH_MAX + 16], state2[PATH_MAX + 16], log2[PATH_MAX + 16], line[512];
	json_t *h = NULL;
	pid_t pid;
	int status;
	FILE *f;

	agent_start("8", NULL);
	snprintf(sock2, sizeof(sock2), "%s/other.sock", ag.dir);
	snprintf(state2, sizeof(state2), "%s/state2", ag.dir);
	snprintf(log2, sizeof(log2), "%s/second.log", ag.dir);
	/* the same state dir */
	argv[5] = sock2;
	pid = spawn_logged(log2, NICE_OURS, argv);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	/* the same socket, another state dir */
	argv[5] = ag.sock;
	argv[7] = state2;
	pid = spawn_logged(log2, NICE_OURS, argv);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	f = fopen(log2, "re");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	integ_note("%s", strtok(line, "\n"));
	assert_non_null(strstr(line, "another agent (pid"));
	assert_non_null(fgets(line, sizeof(line), f));
	integ_note("%s", strtok(line, "\n"));
	assert_non_null(strstr(line, "another agent answers on"));
	fclose(f);
	/* the first one goes on */
	assert_int_equal(call("GET", "/v1/healthz", NULL, &h), 200);
	json_decref(h);
	rm_rf(state2);
	agent_fx_finish(state);
}

/* Retention by count and age, with their files; an effect's output past its cap is dropped. */
static void test_harden_retention_and_log_cap(void **state)
{
	char id[16], path[PATH_MAX + 64];
	json_t *e = NULL;
	const char *out;
	int i;

	agent_start("8", "retention: 3s\nretention_effects: 2\nmax_log_bytes: 64Ki\n");
	for (i = 0; i < 4; i++) {
		snprintf(id, sizeof(id), "r%d", i);
		assert_int_equal(post(sh_req(id, "echo hi", NULL)), 201);
		expect_state(id, "succeeded", 20000);
	}
	assert_int_equal(post(sh_req("big", "yes | head -c 1000000", NULL)), 201);
	expect_state("big", "succeeded", 20000);
	out = effect_log(token, "big");
	integ_note("the log kept %zu bytes of 1000000", strlen(out));
	assert_between((double)strlen(out), 65536, 65536 + 200);
	assert_non_null(strstr(out, "[burstmeter: output past 65536 bytes dropped: 934464 bytes]"));
	/* a restart prunes: the 2 newest of 5 stay (count) */
	assert_int_equal(agent_stop(SIGTERM), 0);
	agent_start("8", "retention: 3s\nretention_effects: 2\nmax_log_bytes: 64Ki\n");
	assert_int_equal(call("GET", "/v1/effects/r0", NULL, &e), 404);
	json_decref(e);
	e = NULL;
	snprintf(path, sizeof(path), "%s/logs/%s@r0.log", ag.state, token);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(call("GET", "/v1/effects/r3", NULL, &e), 200);
	json_decref(e);
	e = NULL;
	/* and by age: 3 s later, none */
	sleep(4);
	assert_int_equal(agent_stop(SIGTERM), 0);
	agent_start("8", "retention: 3s\nretention_effects: 2\nmax_log_bytes: 64Ki\n");
	assert_int_equal(call("GET", "/v1/effects/big", NULL, &e), 404);
	json_decref(e);
	agent_fx_finish(state);
}

/*
 * A tenant's slots come back: with tenant_max_running 2, a third effect
 * waits while two run and starts when one ends, and forty effects one after
 * another all start at once (an ended effect once kept its tenant's slot:
 * the sixteenth of a tenant, at the default cap, queued for ever).
 */
static void test_harden_tenant_slots_come_back(void **state)
{
	char id[32];
	json_t *e = NULL;
	int i;

	agent_start_cfg("", "max_running: 16\nmax_queued: 64\ntenant_max_running: 2\n"
			"admit_cpu_pressure: 100\nadmit_mem_available: 0\n");
	assert_int_equal(post(launch_req("hold1", "bm-sleeper", "600", NULL)), 201);
	assert_int_equal(post(launch_req("hold2", "bm-sleeper", "600", NULL)), 201);
	assert_int_equal(post(launch_req("third", "bm-sleeper", "10", NULL)), 202);
	expect_state("third", "succeeded", 10000);
	assert_true(ever_ran("third"));
	expect_state("hold1", "succeeded", 10000);
	expect_state("hold2", "succeeded", 10000);
	for (i = 0; i < 40; i++) {
		snprintf(id, sizeof(id), "seq-%d", i);
		assert_int_equal(call("POST", "/v1/effects", launch_req(id, "bm-sleeper", "1", NULL), &e), 201);
		json_decref(e);
		e = NULL;
		expect_state(id, "succeeded", 10000);
	}
	integ_note("a third waited for a slot; 40 in a row each started at once");
	agent_fx_finish(state);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_harden_cancel_queued, setup_h, agent_fx_teardown),
		cmocka_unit_test_setup_teardown(test_harden_identity_after_restart, setup_h, agent_fx_teardown),
		cmocka_unit_test_setup_teardown(test_harden_tenant_uids, setup_h, agent_fx_teardown),
		cmocka_unit_test_setup_teardown(test_harden_isolation, setup_h, agent_fx_teardown),
		cmocka_unit_test_setup_teardown(test_harden_effect_caller, setup_h, agent_fx_teardown),
		cmocka_unit_test_setup_teardown(test_harden_connection_caps, setup_h, agent_fx_teardown),
		cmocka_unit_test_setup_teardown(test_harden_one_agent, setup_h, agent_fx_teardown),
		cmocka_unit_test_setup_teardown(test_harden_retention_and_log_cap, setup_h, agent_fx_teardown),
		cmocka_unit_test_setup_teardown(test_harden_tenant_slots_come_back, setup_h, agent_fx_teardown),
	};
	size_t n;
	int rc = runner_init("test_hardening");

	if (rc)
		return rc;
	n = integ_filter(tests, sizeof(tests) / sizeof(tests[0]));
	return _cmocka_run_group_tests("hardening", tests, n, NULL, NULL);
}
