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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/config.h"
#include "base/common.h"
#include "cli/client.h"
#include "cli/run_client.h"
#include "effect/outcome.h"
#include "views/report.h"

#define CALL_MS 10000
#define OUTCOME_WAIT_MS 30000

/* A child that waits for one byte on fd before it execs argv: EOF means never. */
static pid_t fork_paused(char *const argv[], int *go_fd)
{
	int p[2];
	char c;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
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

static json_t *request_json(const struct bm_run_opts *o, pid_t pid)
{
	json_t *r = json_pack("{s:s, s:s, s:s, s:i, s:I}", "id", o->id, "mode", "attach", "intent",
			      o->intent ? o->intent : "", "pid", (int)pid, "window_ms",
			      (json_int_t)(o->window_ns / BM_NSEC_PER_MSEC));
	json_t *sb = json_object();

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
	if (o->limits.io_read_bps)
		json_object_set_new(sb, "io_read_bps", json_integer((json_int_t)o->limits.io_read_bps));
	if (o->limits.io_write_bps)
		json_object_set_new(sb, "io_write_bps", json_integer((json_int_t)o->limits.io_write_bps));
	if (o->limits.io_iops)
		json_object_set_new(sb, "io_iops", json_integer((json_int_t)o->limits.io_iops));
	json_object_set_new(r, "sandbox", sb);
	return r;
}

static const char *state_of(const json_t *eff)
{
	const char *s = json_string_value(json_object_get(eff, "state"));

	return s ? s : "";
}

static bool final(const char *s)
{
	return !strcmp(s, "succeeded") || !strcmp(s, "failed") || !strcmp(s, "cancelled") ||
	       !strcmp(s, "killed") || !strcmp(s, "deadline_exceeded");
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

int bm_run_client(const struct bm_run_opts *o, const char *sock)
{
	char path[256], body[256];
	json_t *req, *eff = NULL, *exitj;
	int st, go = -1, status, ret = BM_EXIT_INTERNAL;
	sigset_t mask, old;
	pid_t pid;

	pid = fork_paused(o->argv, &go);
	if (pid < 0) {
		(void)bm_err_errno(-errno, "failed to start '%s'", o->argv[0]);
		return BM_EXIT_INTERNAL;
	}
	req = request_json(o, pid);
	st = bm_client_call(sock, "POST", "/v1/effects", req, &eff, CALL_MS);
	json_decref(req);
	/* root runs for a tenant it names; the agent takes that only from root */
	snprintf(path, sizeof(path), "/v1/effects/%s%s%s", o->id, strcmp(o->tenant, "default") ? "?tenant=" : "",
		 strcmp(o->tenant, "default") ? o->tenant : "");
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
			bm_err("the agent at %s refused %s: %d %s", sock, o->id, st,
			       eff && json_string_value(json_object_get(eff, "error")) ?
			       json_string_value(json_object_get(eff, "error")) : strerror(st < 0 ? -st : EPROTO));
		close(go);
		waitpid(pid, NULL, 0);
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
	snprintf(body, sizeof(body), "/v1/effects/%s/exit%s%s", o->id, strcmp(o->tenant, "default") ? "?tenant=" : "",
		 strcmp(o->tenant, "default") ? o->tenant : "");
	exitj = json_pack("{s:i}", "wait_status", status);
	(void)bm_client_call(sock, "POST", body, exitj, &eff, CALL_MS);
	json_decref(exitj);
	json_decref(eff);
	eff = wait_state(sock, path, final, OUTCOME_WAIT_MS);
	if (eff && json_is_object(json_object_get(eff, "outcome")))
		ret = bm_report_json(&(struct bm_report_opts){ o->outcome, o->json, o->hist, o->quiet },
				     o->id, json_object_get(eff, "outcome"));
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
