/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The node agent as a fixture of the tests that drive it: the real binary
 * ($BM_BIN agent) with a config of the test's own, on a private socket,
 * state directory and bpffs pin directory, a child of the test; requests
 * through its socket; and its stop, checked or forced. One agent per test
 * binary (the global ag); the process helpers serve other children too.
 * Includes runner.h; everything is static.
 */
#ifndef BM_AGENT_FX_H
#define BM_AGENT_FX_H

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "runner.h"
#include "base/common.h"
#include "cli/client.h"

/*
 * How long the agent may take to answer (loading the meter: well under a
 * second here, seconds under TCG, more on a busy host), or to stop after a
 * signal before SIGKILL.
 */
#define AGENT_READY_MS (getenv("BM_VM") ? 40000 : 10000)
#define AGENT_GRACE_MS 10000

struct agent_fx {
	pid_t pid;		/* 0 when no agent of ours runs */
	char dir[PATH_MAX];	/* private: everything of the agent, and a test's own files */
	char sock[PATH_MAX + 16], state[PATH_MAX + 16], log[PATH_MAX + 16], cfg[PATH_MAX + 16];
	char pins[PATH_MAX];	/* under /sys/fs/bpf */
};

static struct agent_fx ag;

/* rm -rf path; a failure is said, not fatal (cleanup goes on). */
static void rm_rf(const char *path)
{
	char cmd[PATH_MAX + 32];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd))
		print_error("failed to remove %s\n", path);
}

/* Every line of a file to stderr, each as "  who: line" (a log, when something went wrong). */
static void dump_file(const char *who, const char *path)
{
	char line[2048];
	FILE *f = fopen(path, "re");

	while (f && fgets(line, sizeof(line), f))
		print_error("  %s: %s", who, line);
	if (f)
		fclose(f);
}

/* Does a log (its first 64 KiB) hold needle? */
static bool log_has(const char *log, const char *needle)
{
	static char buf[1 << 16];

	return bm_read_file(AT_FDCWD, log, buf, sizeof(buf)) > 0 && strstr(buf, needle);
}

/*
 * Stop a child of ours: sig, then SIGKILL if it is not gone in grace_ms.
 * Returns its wait status (0 if there was none) and sets *pid to 0.
 */
static int stop_child(pid_t *pid, int sig, int grace_ms)
{
	int status = 0, t;
	pid_t r;

	if (*pid <= 0)
		return 0;
	kill(*pid, sig);
	for (t = 0;; t += 10) {
		r = waitpid(*pid, &status, WNOHANG);
		/* an error (ECHILD: reaped elsewhere) would otherwise poll forever */
		if (r == *pid || (r < 0 && errno != EINTR))
			break;
		if (t == grace_ms) {
			print_error("pid %d did not stop in %d ms: SIGKILL\n", (int)*pid, grace_ms);
			kill(*pid, SIGKILL);
		}
		usleep(10000);
	}
	*pid = 0;
	return status;
}

/* spawn_logged()'s nice: keep ours (the test's nice -20, see integ_favour()). */
#define NICE_OURS INT_MIN

/*
 * Start argv[0] (a path) with argv (NULL-terminated), stdout and stderr
 * appended to log; at nice (setpriority) unless NICE_OURS. Returns its pid.
 */
static pid_t spawn_logged(const char *log, int nice, char *const argv[])
{
	pid_t pid = fork();
	int fd;

	assert_true(pid >= 0);
	if (!pid) {
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		if (nice != NICE_OURS && setpriority(PRIO_PROCESS, 0, nice))
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/*
 * While waiting for a child of ours (who, logging to log) to be ready: if
 * it has exited instead, sets *pid to 0 and fails with its log.
 */
static void assert_alive(pid_t *pid, const char *who, const char *log)
{
	if (waitpid(*pid, NULL, WNOHANG) != *pid)
		return;
	*pid = 0;
	dump_file(who, log);
	fail_msg("%s exited before it was ready (log %s)", who, log);
}

/*
 * The fixture's paths: a new directory /tmp/bm-<tag>.XXXXXX holding the
 * socket, state, log and config; pins in /sys/fs/bpf/<pin_prefix>-<our pid>.
 * Nothing runs yet. Returns 0, or -errno if the directory cannot be made.
 */
static int agent_fx_init(const char *tag, const char *pin_prefix)
{
	memset(&ag, 0, sizeof(ag));
	snprintf(ag.dir, sizeof(ag.dir), "/tmp/bm-%s.XXXXXX", tag);
	if (!mkdtemp(ag.dir)) {
		ag.dir[0] = '\0';
		return -errno;
	}
	snprintf(ag.sock, sizeof(ag.sock), "%s/api.sock", ag.dir);
	snprintf(ag.state, sizeof(ag.state), "%s/state", ag.dir);
	snprintf(ag.log, sizeof(ag.log), "%s/agent.log", ag.dir);
	snprintf(ag.cfg, sizeof(ag.cfg), "%s/agent.yaml", ag.dir);
	snprintf(ag.pins, sizeof(ag.pins), "/sys/fs/bpf/%s-%d", pin_prefix, (int)getpid());
	return 0;
}

/*
 * Write the config (printf-style) and start the agent on it, its stdout and
 * stderr appended to ag.log; metrics is --metrics ("" for none, or
 * host:port). Returns once GET /v1/healthz answers 200; fails, with the
 * log, if the agent exits first or does not answer in AGENT_READY_MS.
 */
/*
 * Until the agent started as ag.pid answers GET /v1/healthz with 200; fails,
 * with its log, if it exits first or does not answer in AGENT_READY_MS.
 */
static void agent_wait_ready(void)
{
	int t;

	for (t = 0; t < AGENT_READY_MS; t += 10) {
		json_t *out = NULL;

		if (bm_client_call(ag.sock, "GET", "/v1/healthz", NULL, &out, 1000) == 200) {
			json_decref(out);
			return;
		}
		assert_alive(&ag.pid, "agent", ag.log);
		usleep(10000);
	}
	fail_msg("the agent did not answer on %s (log %s)", ag.sock, ag.log);
}

static void agent_start_cfg(const char *metrics, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void agent_start_cfg(const char *metrics, const char *fmt, ...)
{
	char *argv[] = { (char *)bm_bin, "agent", "--config", ag.cfg, "--socket", ag.sock,
			 "--state-dir", ag.state, "--pin-dir", ag.pins, "--metrics",
			 (char *)metrics, NULL };
	va_list ap;
	FILE *f;

	f = fopen(ag.cfg, "we");
	assert_non_null(f);
	va_start(ap, fmt);
	assert_true(vfprintf(f, fmt, ap) >= 0);
	va_end(ap);
	assert_int_equal(fclose(f), 0);
	ag.pid = spawn_logged(ag.log, NICE_OURS, argv);
	agent_wait_ready();
}

/* Stop the agent with sig (SIGKILL after AGENT_GRACE_MS); its wait status, 0 if none ran. */
static int agent_stop(int sig)
{
	return stop_child(&ag.pid, sig, AGENT_GRACE_MS);
}

/* End of a test: the agent stops cleanly on SIGTERM and, with no effect left, removes its pins. */
static void agent_finish(void)
{
	int status = agent_stop(SIGTERM);

	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		dump_file("agent", ag.log);
		fail_msg("the agent did not stop cleanly (status %#x)", status);
	}
	if (access(ag.pins, F_OK) == 0)
		fail_msg("the agent left its pins in %s", ag.pins);
}

/*
 * After any test, passed or failed: stop the agent, remove pins it left
 * (and count them), count an exit status other than 0, and dump its log
 * when something was found or $BM_AGENT_LOG is set. The directory stays
 * (the caller may dump more from it): rm_rf(ag.dir) last. Returns what
 * was found.
 */
static int agent_leftovers(void)
{
	int status = agent_stop(SIGTERM), found = 0;

	if (ag.pins[0] && access(ag.pins, F_OK) == 0) {
		print_error("pins left behind in %s\n", ag.pins);
		rm_rf(ag.pins);
		found++;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status)) {
		print_error("the agent exited %d\n", WEXITSTATUS(status));
		found++;
	}
	if (ag.dir[0] && (found || getenv("BM_AGENT_LOG")))
		dump_file("agent", ag.log);
	return found;
}

/*
 * setup() and the fixture's paths (agent_fx_init(tag, pin_prefix)), the
 * directory open to all (a second tenant is another uid: it must reach
 * the socket and the workloads). For cmocka's setup of each test.
 */
static int agent_fx_setup(void **state, const char *tag, const char *pin_prefix)
{
	int ret = setup(state);

	if (ret)
		return ret;
	if (agent_fx_init(tag, pin_prefix)) {
		teardown(state);
		return -1;
	}
	chmod(ag.dir, 0755);
	return 0;
}

/* cmocka's teardown: whatever a test left (the agent, its pins, its dir), then the harness's sweep. */
static int agent_fx_teardown(void **state)
{
	int found = agent_leftovers();

	rm_rf(ag.dir);
	return teardown(state) || found ? -1 : 0;
}

/* End of a test: the agent stops cleanly (and, with no effect left, removes its pins); nothing is left. */
static void agent_fx_finish(void **state)
{
	agent_finish();
	assert_clean(*state);
}

/* A request to the agent (body taken over, out as bm_client_call); the HTTP status or -errno. */
static int call(const char *method, const char *path, json_t *body, json_t **out)
{
	int st = bm_client_call(ag.sock, method, path, body, out, 10000);

	json_decref(body);
	return st;
}

/*
 * A launch request {id, argv, intent "integration"}: the workload wl_name,
 * made absolute (the agent runs it with cwd /), then its arguments up to a
 * NULL. A new reference; callers add or replace fields.
 */
static json_t *vlaunch_req(const char *id, const char *wl_name, va_list ap)
{
	char path[PATH_MAX];
	const char *a;
	json_t *argv;

	if (!realpath(wl(wl_name), path))
		fail_msg("workload %s: %s", wl_name, strerror(errno));
	argv = json_pack("[s]", path);
	while ((a = va_arg(ap, const char *)))
		json_array_append_new(argv, json_string(a));
	return json_pack("{s:s, s:o, s:s}", "id", id, "argv", argv, "intent", "integration");
}

static json_t *launch_req(const char *id, const char *wl_name, ...) __attribute__((sentinel));
static json_t *launch_req(const char *id, const char *wl_name, ...)
{
	json_t *req;
	va_list ap;

	va_start(ap, wl_name);
	req = vlaunch_req(id, wl_name, ap);
	va_end(ap);
	return req;
}

/*
 * Poll an effect every 20 ms until it is in a final state; returns it (a
 * new reference), or fails after timeout_ms. tenant: NULL for the caller's
 * own, else the tenant named (root may look at another tenant's effect).
 */
static json_t *wait_final_as(const char *tenant, const char *id, int timeout_ms)
{
	static const char *const final[] = { "succeeded", "failed", "cancelled", "killed",
					     "deadline_exceeded" };
	char path[128];
	json_t *e = NULL;
	unsigned int i;
	int t;

	snprintf(path, sizeof(path), "/v1/effects/%s%s%s", id, tenant ? "?tenant=" : "",
		 tenant ? tenant : "");
	for (t = 0; t < timeout_ms; t += 20) {
		json_decref(e);
		e = NULL;
		assert_int_equal(call("GET", path, NULL, &e), 200);
		for (i = 0; i < sizeof(final) / sizeof(final[0]); i++)
			if (!strcmp(jstr(e, "state"), final[i]))
				return e;
		usleep(20000);
	}
	fail_msg("%s did not end in %d ms (state %s)", id, timeout_ms, jstr(e, "state"));
	return NULL;
}

static json_t *wait_final(const char *id, int timeout_ms)
{
	return wait_final_as(NULL, id, timeout_ms);
}

/* An effect's output, as the agent kept it ("" if none); valid until the next call. */
static const char *effect_log(const char *tenant, const char *id)
{
	static char buf[1 << 20];
	char path[PATH_MAX + 256];

	snprintf(path, sizeof(path), "%s/logs/%.64s@%.64s.log", ag.state, tenant, id);
	if (bm_read_file(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		buf[0] = '\0';
	return buf;
}

/* A connection to the agent's socket (that says nothing yet). */
static int agent_conn(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(strlen(ag.sock) < sizeof(sun.sun_path));
	memcpy(sun.sun_path, ag.sock, strlen(ag.sock) + 1);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	return fd;
}

/* Does the agent's log hold needle (on one line)? */
static bool agent_log_has(const char *needle)
{
	char line[4096];
	bool found = false;
	FILE *f = fopen(ag.log, "re");

	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	if (f)
		fclose(f);
	return found;
}

/* A uid no test file belongs to: a second tenant, and a non-root caller. */
#define NOBODY 65534

/*
 * The call made by another uid: a forked child that setuid()s first and
 * writes back the status, and (out not NULL) the answer's JSON text.
 */
static int call_as_json(uid_t uid, const char *method, const char *path, json_t *body,
			json_t **out)
{
	static char text[1 << 16];
	int p[2], st = -1;
	ssize_t n, got = 0;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	if (!pid) {
		json_t *o = NULL;
		char *t;

		close(p[0]);
		if (setgid(uid) || setuid(uid))
			_exit(1);
		st = bm_client_call(ag.sock, method, path, body, &o, 10000);
		t = o ? json_dumps(o, JSON_COMPACT) : NULL;
		if (write(p[1], &st, sizeof(st)) != sizeof(st) ||
		    (t && write(p[1], t, strlen(t)) != (ssize_t)strlen(t)))
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	json_decref(body);
	if (read(p[0], &st, sizeof(st)) != sizeof(st))
		st = -1;
	while ((n = read(p[0], text + got, sizeof(text) - 1 - (size_t)got)) > 0)
		got += n;
	text[got] = '\0';
	close(p[0]);
	waitpid(pid, NULL, 0);
	if (out)
		*out = got ? json_loads(text, 0, NULL) : NULL;
	return st;
}

static int call_as(uid_t uid, const char *method, const char *path, json_t *body)
{
	return call_as_json(uid, method, path, body, NULL);
}

#endif /* BM_AGENT_FX_H */
