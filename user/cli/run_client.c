// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `burstmeter run` through the agent: the command stays our child (stdio,
 * signals and its exit status are ours), paused until the agent has
 * attached it to a fresh effect cgroup; the agent meters it, runs the
 * ladder and stores the outcome, which we then print as the standalone
 * path would. Same flags, same outcome, same exit statuses.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/config.h"
#include "base/cgroup.h"
#include "base/common.h"
#include "cli/client.h"
#include "cli/run_client.h"
#include "effect/outcome.h"
#include "effect/policy_yaml.h"
#include "effect/trace.h"
#include "views/report.h"

#define CALL_MS 10000
#define OUTCOME_WAIT_MS 30000

/*
 * A child that waits for one byte on fd before it execs argv (EOF means
 * never), born in the cgroup of cgroup_fd when it is not -1 (it is -1 and
 * errno when the kernel refuses that: the caller may fork it instead).
 */
static pid_t fork_paused(char *const argv[], int *go_fd, int cgroup_fd)
{
	int p[2], pidfd = -1;
	char c;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid = cgroup_fd >= 0 ? (pid_t)bm_clone_into(cgroup_fd, 0, &pidfd) : fork();
	if (pid > 0 && pidfd >= 0)
		close(pidfd);
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (!pid) {
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(BM_EXIT_INTERNAL);
		execvp(argv[0], argv);
		_exit(errno == ENOENT ? BM_EXIT_NOTFOUND : BM_EXIT_NOEXEC);
	}
	close(p[0]);
	*go_fd = p[1];
	return pid;
}

/* As the agent takes a tool kind (agent/request_intent.h). */
static bool tool_ok(const char *t)
{
	const unsigned char *p;

	for (p = (const unsigned char *)t; p && *p; p++)
		if (*p <= ' ' || *p == 0x7f)
			return false;
	return t && *t && strlen(t) <= 255 && strcmp(t, ".") && strcmp(t, "..");
}

/*
 * What the attached process runs, for its tool kind (policy rules, backoff,
 * /metrics) and the outcome's command: argv where the agent takes it whole
 * (at most 256 non-empty arguments of 4096 bytes), the tool alone if not.
 */
static void describe(json_t *r, char *const argv[])
{
	const char *tool = bm_policy_tool(argv[0]), *why;
	const char *tp = getenv(BM_TRACE_ENV);
	json_t *a = json_array();
	size_t i;

	for (i = 0; a && argv[i]; i++)
		if (i >= 256 || !*argv[i] || strlen(argv[i]) > 4096 ||
		    json_array_append_new(a, json_string(argv[i]))) {
			json_decref(a);
			a = NULL;
		}
	if (a)
		json_object_set_new(r, "argv", a);
	if (tool_ok(tool))
		json_object_set_new(r, "tool", json_string(tool));
	/* our own trace context, if we run in one: the command inherits it, the outcome keeps it */
	if (tp && !bm_traceparent_check(tp, &why))
		json_object_set_new(r, "traceparent", json_string(tp));
	else if (tp)
		bm_warn("ignoring $%s '%.64s': %s", BM_TRACE_ENV, tp, why);
}

/* The attach request; pid 0: none yet (named by POST .../attach once the cgroup is made). */
static json_t *request_json(const struct bm_run_opts *o, pid_t pid)
{
	json_t *r = json_pack("{s:s, s:s, s:s, s:I}", "id", o->id, "mode", "attach", "intent",
			      o->intent ? o->intent : "", "window_ms",
			      (json_int_t)(o->window_ns / BM_NSEC_PER_MSEC));
	json_t *sb = json_object();

	if (pid)
		json_object_set_new(r, "pid", json_integer(pid));
	describe(r, o->argv);
	if (strcmp(o->tenant, "default"))
		json_object_set_new(r, "tenant", json_string(o->tenant));
	if (o->limits.cpu_milli)
		json_object_set_new(sb, "cpu_limit", json_real(o->limits.cpu_milli / 1000.0));
	if (o->limits.memory_bytes)
		json_object_set_new(sb, "memory_limit", json_integer((json_int_t)o->limits.memory_bytes));
	if (o->limits.pids)
		json_object_set_new(sb, "pids_limit", json_integer((json_int_t)o->limits.pids));
	if (o->limits.timeout_ns)
		json_object_set_new(sb, "timeout_seconds", json_real(o->limits.timeout_ns / 1e9));
	json_object_set_new(r, "sandbox", sb);
	return r;
}

/* "/v1/effects/ID/SUB?tenant=" (SUB "": the effect), for root's named tenant. */
static const char *effect_path(const struct bm_run_opts *o, const char *sub, char *buf, size_t len)
{
	bool named = strcmp(o->tenant, "default");

	snprintf(buf, len, "/v1/effects/%s%s%s%s%s", o->id, *sub ? "/" : "", sub, named ? "?tenant=" : "",
		 named ? o->tenant : "");
	return buf;
}

static const char *state_of(const json_t *eff)
{
	const char *s = json_string_value(json_object_get(eff, "state"));

	return s ? s : "";
}

/* Poll the effect until pred(state) holds or timeout_ms passes; returns it (new reference) or NULL. */
static json_t *wait_state(const char *sock, const char *path, bool (*pred)(const char *), int timeout_ms)
{
	struct timespec ms20 = { 0, 20 * 1000 * 1000 };
	uint64_t end = bm_now_ns() + (uint64_t)timeout_ms * BM_NSEC_PER_MSEC;
	json_t *eff = NULL;

	while (bm_now_ns() < end) {
		if (bm_client_call(sock, "GET", path, NULL, &eff, CALL_MS) == 200 && pred(state_of(eff)))
			return eff;
		json_decref(eff);
		eff = NULL;
		nanosleep(&ms20, NULL);
	}
	return NULL;
}

static int outcome_line(json_t *line, void *ctx)
{
	json_t **out = ctx;
	const char *type = json_string_value(json_object_get(line, "type"));

	if (!type || strcmp(type, "outcome") || !json_is_object(json_object_get(line, "outcome")))
		return 0;
	*out = json_incref(json_object_get(line, "outcome"));
	return 1;
}

/*
 * The effect's outcome (a new reference), from its event stream: the line
 * comes the moment the agent has it, with no polling; NULL after
 * timeout_ms or if the stream ends without one.
 */
static json_t *outcome_of(const char *sock, const struct bm_run_opts *o, int timeout_ms)
{
	struct itimerspec its = { .it_value = { timeout_ms / 1000, (timeout_ms % 1000) * 1000000L } };
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	char path[256];
	json_t *out = NULL;

	effect_path(o, "events", path, sizeof(path));
	if (tfd >= 0 && !timerfd_settime(tfd, 0, &its, NULL))
		(void)bm_client_follow(sock, path, tfd, outcome_line, &out);
	if (tfd >= 0)
		close(tfd);
	return out;
}

static bool started(const char *s)
{
	return strcmp(s, "queued");
}

/* Our command runs under the agent: pass signals on while we wait for it (mask already blocked). */
static int wait_child(pid_t pid, const sigset_t *mask)
{
	siginfo_t si;
	int status = 0;

	while (waitpid(pid, &status, WNOHANG) != pid) {
		if (sigwaitinfo(mask, &si) < 0 || si.si_signo == SIGCHLD)
			continue;
		/* a terminal's Ctrl-C reached the command already */
		if (si.si_code != SI_KERNEL)
			kill(pid, si.si_signo);
	}
	return status;
}

/* What the agent said when it refused: its error, then each field's ("tenant: not the caller's"). */
static const char *refusal(json_t *answer, int st, char *buf, size_t len)
{
	const char *err = json_string_value(json_object_get(answer, "error"));
	size_t i, n;
	json_t *f;

	if (!err)
		return strerror(st < 0 ? -st : EPROTO);
	n = (size_t)snprintf(buf, len, "%s", err);
	json_array_foreach(json_object_get(answer, "fields"), i, f) {
		if (n >= len)
			break;
		n += (size_t)snprintf(buf + n, len - n, "%s%s: %s", i ? "; " : ": ",
				      json_string_value(json_object_get(f, "field")) ?: "?",
				      json_string_value(json_object_get(f, "error")) ?: "?");
	}
	return buf;
}

/*
 * The command, paused, for an effect whose cgroup the agent has made (eff):
 * cloned into it when we may (root: no migration, no grace period to wait
 * for), else forked here for the agent to move; then named to the agent.
 * Its pid, or -1 (said; the child is gone).
 */
static pid_t start_in(const char *sock, const struct bm_run_opts *o, const json_t *eff, int *go)
{
	const char *cg = json_string_value(json_object_get(eff, "cgroup"));
	int fd = cg ? open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1, st;
	char path[256], why[512];
	json_t *body, *out = NULL;
	pid_t pid = fd >= 0 ? fork_paused(o->argv, go, fd) : -1;

	if (fd >= 0)
		close(fd);
	if (pid < 0)
		pid = fork_paused(o->argv, go, -1);
	if (pid < 0) {
		(void)bm_err_errno(-errno, "failed to start '%s'", o->argv[0]);
		return -1;
	}
	body = json_pack("{s:i}", "pid", (int)pid);
	st = bm_client_call(sock, "POST", effect_path(o, "attach", path, sizeof(path)), body, &out, CALL_MS);
	json_decref(body);
	if (st != 200) {
		bm_err("the agent at %s did not attach %s: %d %s", sock, o->id, st, refusal(out, st, why, sizeof(why)));
		close(*go);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	json_decref(out);
	return pid;
}

int bm_run_client(const struct bm_run_opts *o, const char *sock)
{
	char path[256], body[256], why[512];
	json_t *req, *eff = NULL, *exitj;
	int st, go = -1, status, ret = BM_EXIT_INTERNAL;
	/* root clones the command into the cgroup the agent makes first; others are moved there */
	bool later = geteuid() == 0;
	sigset_t mask, old;
	pid_t pid = 0;

	if (!later && (pid = fork_paused(o->argv, &go, -1)) < 0) {
		(void)bm_err_errno(-errno, "failed to start '%s'", o->argv[0]);
		return BM_EXIT_INTERNAL;
	}
	req = request_json(o, pid);
	st = bm_client_call(sock, "POST", "/v1/effects", req, &eff, CALL_MS);
	json_decref(req);
	/* root runs for a tenant it names; the agent takes that only from root */
	effect_path(o, "", path, sizeof(path));
	if (st == 202) {
		/* queued: the agent attaches it when it starts it */
		json_decref(eff);
		eff = wait_state(sock, path, started, 24 * 3600 * 1000);
	}
	if ((st != 201 && st != 202) || !eff || !strcmp(state_of(eff), "failed")) {
		if (st == 200)
			bm_err("--id %s: this tenant has an effect of that id already (%s): ids are not reused",
			       o->id, state_of(eff));
		else
			bm_err("the agent at %s refused %s: %d %s", sock, o->id, st, refusal(eff, st, why, sizeof(why)));
		if (pid > 0) {
			close(go);
			waitpid(pid, NULL, 0);
		}
		json_decref(eff);
		return BM_EXIT_INTERNAL;
	}
	if (later && (pid = start_in(sock, o, eff, &go)) < 0) {
		json_decref(eff);
		eff = NULL;
		/* the effect waits for a process that will not come: it ends now, not in 10 s */
		(void)bm_client_call(sock, "POST", effect_path(o, "cancel", body, sizeof(body)), NULL, &eff, CALL_MS);
		json_decref(eff);
		return BM_EXIT_INTERNAL;
	}
	json_decref(eff);
	/* block before the release, so that the child's SIGCHLD cannot come first */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, &old);
	if (write(go, "g", 1) != 1)
		(void)bm_err_errno(-errno, "failed to release '%s'", o->argv[0]);
	close(go);
	status = wait_child(pid, &mask);
	sigprocmask(SIG_SETMASK, &old, NULL);
	exitj = json_pack("{s:i}", "wait_status", status);
	(void)bm_client_call(sock, "POST", effect_path(o, "exit", body, sizeof(body)), exitj, &eff, CALL_MS);
	json_decref(exitj);
	json_decref(eff);
	eff = outcome_of(sock, o, OUTCOME_WAIT_MS);
	if (eff)
		ret = bm_report_json(&(struct bm_report_opts){ o->outcome, o->json, o->hist, o->quiet },
				     o->id, eff);
	else
		bm_err("the agent did not report the outcome of %s in time", o->id);
	json_decref(eff);
	return ret;
}

const char *bm_run_agent_socket(const struct bm_run_opts *o)
{
	static char sock[PATH_MAX];
	struct stat st;
	const char *env = getenv("BURSTMETER_SOCKET");

	/* what the agent cannot honour for one effect keeps the run standalone */
	if (o->standalone || o->policy || o->meter_hash || o->meter_only || o->no_fast_path || o->hist)
		return NULL;
	snprintf(sock, sizeof(sock), "%s", o->socket ? o->socket : env && *env ? env : BM_AGENT_SOCKET);
	return !stat(sock, &st) && S_ISSOCK(st.st_mode) ? sock : NULL;
}
