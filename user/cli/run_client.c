// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `burstmeter run` through the agent: the command stays our child (stdio,
 * signals and its exit status are ours), held at a gate until the agent
 * has attached it to a fresh effect cgroup; the agent meters it, runs the
 * ladder, filters its egress and stores the outcome, which we then print
 * as the standalone path would. Its sandbox (namespaces, mounts, identity,
 * capabilities) is made here, before the attach, with the functions the
 * agent's launches use (bm_sandbox_exec(), bm_effect_spawn_held()). Same
 * flags, same outcome, same exit statuses.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/config.h"
#include "base/common.h"
#include "cli/client.h"
#include "cli/run_client.h"
#include "effect/exec.h"
#include "effect/outcome.h"
#include "effect/policy_yaml.h"
#include "effect/sandbox_exec.h"
#include "effect/trace.h"
#include "views/report.h"

#define CALL_MS 10000
#define OUTCOME_WAIT_MS 30000

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

/*
 * The request: attach mode, what it runs, the limits and the sandbox in the
 * request's form (what the agent's outcome says was asked); pid 0: none yet
 * (named by POST .../attach once the cgroup is made). The agent filters its
 * egress; the namespaces and the identity are ours to make (the command is
 * our child), with the same functions (bm_sandbox_exec()).
 */
static json_t *request_json(const struct bm_run_opts *o, pid_t pid, const struct bm_sandbox *sb)
{
	json_t *r = json_pack("{s:s, s:s, s:s, s:I}", "id", o->id, "mode", "attach", "intent",
			      o->intent ? o->intent : "", "window_ms",
			      (json_int_t)(o->window_ns / BM_NSEC_PER_MSEC));

	if (!r)
		return NULL;
	if (pid)
		json_object_set_new(r, "pid", json_integer(pid));
	describe(r, o->argv);
	if (strcmp(o->tenant, "default"))
		json_object_set_new(r, "tenant", json_string(o->tenant));
	json_object_set_new(r, "sandbox", bm_sandbox_json(sb));
	return r;
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

static bool started(const char *s)
{
	return strcmp(s, "queued");
}

/*
 * Our command runs under the agent: pass signals on while we wait for it
 * (mask already blocked): its end is its pidfd, or (in a PID namespace of
 * its own) its init's word. Returns its wait status.
 */
static int wait_child(struct bm_child *c, const sigset_t *mask)
{
	struct pollfd pfd[2] = {
		{ .fd = c->status_fd >= 0 ? c->status_fd : c->pidfd, .events = POLLIN },
		{ .fd = signalfd(-1, mask, SFD_CLOEXEC | SFD_NONBLOCK), .events = POLLIN },
	};
	struct signalfd_siginfo si;
	int status = -1;

	while (!(pfd[0].revents & (POLLIN | POLLHUP))) {
		if (poll(pfd, 2, pfd[1].fd < 0 ? 50 : -1) < 0 && errno != EINTR)
			break;
		while (pfd[1].fd >= 0 && read(pfd[1].fd, &si, sizeof(si)) == sizeof(si))
			/* a terminal's Ctrl-C reached the command already */
			if (si.ssi_signo != SIGCHLD && si.ssi_code != SI_KERNEL)
				syscall(SYS_pidfd_send_signal, c->pidfd, si.ssi_signo, NULL, 0);
	}
	if (pfd[1].fd >= 0)
		close(pfd[1].fd);
	if (bm_child_wait(c, &status))
		status = -1;
	return status;
}

/* The init of its PID namespace ends once the agent has killed what the command left: reap it. */
static void reap_init(pid_t init)
{
	struct timespec ms10 = { 0, 10 * 1000 * 1000 };
	int i;

	for (i = 0; init > 0 && i < 300; i++) {
		if (waitpid(init, NULL, WNOHANG) == init)
			return;
		nanosleep(&ms10, NULL);
	}
	if (init > 0) {
		/* ours, and past its time: whatever it still waits for is in the killed cgroup */
		kill(init, SIGKILL);
		waitpid(init, NULL, 0);
	}
}

/* The effect's path with ?tenant= when root names one. */
static void effect_path(const struct bm_run_opts *o, const char *suffix, char *buf, size_t len)
{
	bool named = strcmp(o->tenant, "default");

	snprintf(buf, len, "/v1/effects/%s%s%s%s", o->id, suffix, named ? "?tenant=" : "",
		 named ? o->tenant : "");
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
	struct timespec ms50 = { 0, 50 * 1000 * 1000 };
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	char path[256];
	json_t *out = NULL;

	effect_path(o, "/events", path, sizeof(path));
	if (tfd < 0 || timerfd_settime(tfd, 0, &its, NULL)) {
		if (tfd >= 0)
			close(tfd);
		return NULL;
	}
	/* an agent that restarts (its stream cut, its socket away a moment) is followed again */
	for (;;) {
		int st = bm_client_follow(sock, path, tfd, outcome_line, &out);

		if (out || st == -ECANCELED || (st > 0 && st != 200))
			break;
		nanosleep(&ms50, NULL);
	}
	close(tfd);
	return out;
}

/*
 * POST body to path, again every 50 ms while no agent answers (or one dies
 * answering), for up to timeout_ms; the answer in *out (NULL: not wanted).
 */
static int post_until(const char *sock, const char *path, const json_t *body, json_t **out, int timeout_ms)
{
	struct timespec ms50 = { 0, 50 * 1000 * 1000 };
	uint64_t end = bm_now_ns() + (uint64_t)timeout_ms * BM_NSEC_PER_MSEC;
	json_t *got = NULL;
	int st;

	while ((st = bm_client_call(sock, "POST", path, body, &got, CALL_MS)) < 0 && bm_now_ns() < end) {
		json_decref(got);
		got = NULL;
		nanosleep(&ms50, NULL);
	}
	if (out)
		*out = got;
	else
		json_decref(got);
	return st;
}

/*
 * The uid it takes at its gate: --user as asked; --non-root the one the
 * agent gives the tenant ("run_as"); nothing for a caller that is not root
 * (the agent gives it its own uid, which it is).
 */
static int gate_ids(const struct bm_run_opts *o, const json_t *eff, struct bm_ids *ids)
{
	json_t *ra = json_object_get(eff, "run_as");
	json_int_t uid = json_integer_value(json_object_get(ra, "uid"));
	json_int_t gid = json_integer_value(json_object_get(ra, "gid"));

	memset(ids, 0, sizeof(*ids));
	if (geteuid() || !o->sb.sb.run_as_non_root)
		return 0;
	if (o->sb.user_flag) {
		ids->set = 1;
		ids->uid = o->sb.uid;
		ids->gid = o->sb.gid;
		/* root's own command: the uid asked for stands; the agent's is said beside it */
		if (ra && (uid != (json_int_t)o->sb.uid) && !o->quiet)
			bm_info("--user %u: as asked, not the agent's uid %lld for tenant %s "
				"(--non-root takes the agent's)", (unsigned int)o->sb.uid,
				(long long)uid, o->tenant);
		return 0;
	}
	if (!json_is_integer(json_object_get(ra, "uid")) || uid <= 0) {
		bm_err("the agent gave %s no non-root uid for --non-root", o->id);
		return -EPROTO;
	}
	ids->set = 1;
	ids->uid = (uint32_t)uid;
	ids->gid = (uint32_t)gid;
	return 0;
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

/* Refused, queued for ever, or failed at once: say why. */
static void say_refused(const struct bm_run_opts *o, const char *sock, int st, json_t *eff)
{
	char why[512];

	if (st == 200)
		bm_err("--id %s: this tenant has an effect of that id already (%s): ids are not reused",
		       o->id, state_of(eff));
	else
		bm_err("the agent at %s refused %s: %d %s", sock, o->id, st, refusal(eff, st, why, sizeof(why)));
}

/*
 * POST .../exit: the wait status, and what we made of the sandbox (the
 * namespaces, mounts and identity are ours), which the agent keeps in its
 * record as our word ("by": "caller").
 */
static json_t *exit_report(int status, const struct bm_sandbox_enf *enf)
{
	json_t *r = json_pack("{s:i}", "wait_status", status), *en = json_object();

	if (r && en && !bm_sandbox_enf_json(enf, en) && json_object_size(en))
		json_object_set(r, "enforcement", en);
	json_decref(en);
	return r;
}

/* The agent's outcome (out), with what we held of the sandbox in its "enforcement". */
static int report(const struct bm_run_opts *o, json_t *out, const struct bm_sandbox_enf *enf)
{
	json_t *en;

	if (!json_is_object(out)) {
		bm_err("the agent did not report the outcome of %s in time", o->id);
		return BM_EXIT_INTERNAL;
	}
	en = json_object_get(out, "enforcement");
	if (!json_is_object(en)) {
		en = json_object();
		json_object_set_new(out, "enforcement", en);
	}
	if (en)
		(void)bm_sandbox_enf_json(enf, en);
	return bm_report_json(&(struct bm_report_opts){ o->outcome, o->json, o->hist, o->quiet },
			      o->id, out);
}

/*
 * The sandbox we make for the command: as standalone, minus the egress
 * filter (the agent's); isolation only as root (the namespaces need it).
 */
static int client_sandbox(const struct bm_run_opts *o, const char *sock, struct bm_sandbox *sb,
			  struct bm_sandbox_ctx *c, char ***envp)
{
	const char *flag = bm_run_sandbox_needs_root(&o->sb, geteuid());
	int err;

	if (flag) {
		bm_err("invalid %s through the agent at %s: the command is run's own child, and "
		       "only root can give it that (run it as root, or have the agent launch it)",
		       flag, sock);
		return -EPERM;
	}
	*sb = o->sb.sb;
	bm_limits_to_sandbox(&o->limits, sb);
	err = bm_run_sandbox_envp(&o->sb, envp);
	if (err)
		return bm_err_errno(err, "failed to set up the environment");
	bm_run_sandbox_ctx(&o->sb, *envp, o->sb.isolate && !geteuid(), c);
	/* the identity is the agent's to give: taken at the gate (gate_ids()) */
	c->set_ids = false;
	c->hide = sock;
	return 0;
}

/*
 * Our command held at its gate, in the effect's cgroup: for an attach that
 * named no pid, the agent made the cgroup first (eff); root clones it in
 * (no migration: none of the RCU grace period a move waits for), anyone
 * else starts it here and the agent moves it; then named by POST .../attach.
 * 0, or -1 (said; nothing of ours left running).
 */
static int start_in(const char *sock, const struct bm_run_opts *o, const json_t *eff, const struct bm_exec *x,
		    struct bm_child *child, struct bm_held *held)
{
	const char *cg = json_string_value(json_object_get(eff, "cgroup"));
	int fd = cg ? open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1, st, err = -EBADF;
	char path[256], why[512];
	json_t *body, *out = NULL;

	if (fd >= 0)
		err = bm_effect_spawn_held(fd, o->argv, x, child, held);
	if (fd >= 0)
		close(fd);
	/* a cgroup we may not clone into (delegation, nsdelegate): the agent moves it there */
	if (err)
		err = bm_effect_spawn_held(-1, o->argv, x, child, held);
	if (err) {
		(void)bm_err_errno(err < 0 ? err : -err, "failed to start '%s'", o->argv[0]);
		return -1;
	}
	body = json_pack("{s:i}", "pid", (int)child->pid);
	effect_path(o, "/attach", path, sizeof(path));
	/* again while no agent answers: a restarted one adopts the effect, and takes it then */
	st = post_until(sock, path, body, &out, OUTCOME_WAIT_MS);
	json_decref(body);
	if (st != 200) {
		bm_err("the agent at %s did not attach %s: %d %s", sock, o->id, st, refusal(out, st, why, sizeof(why)));
		bm_effect_held_drop(held, child);
	}
	json_decref(out);
	return st == 200 ? 0 : -1;
}

int bm_run_client(const struct bm_run_opts *o, const char *sock)
{
	char path[256], body[256];
	json_t *req, *eff = NULL, *exitj;
	struct bm_child child = { 0, -1, -1 };
	struct bm_held held = { -1, -1, 0 };
	struct bm_sandbox_enf enf = { 0 };
	struct bm_sandbox_ctx c;
	struct bm_sandbox sb;
	struct bm_exec x;
	struct bm_ids ids;
	char **envp = NULL;
	int st, status, ret = BM_EXIT_INTERNAL, err;
	/* root clones the command into the cgroup the agent makes first; others are moved there */
	bool later = geteuid() == 0;
	sigset_t mask, old;

	if (client_sandbox(o, sock, &sb, &c, &envp))
		return BM_EXIT_INTERNAL;
	bm_sandbox_exec(&sb, &c, &x, NULL);
	err = later ? 0 : bm_effect_spawn_held(-1, o->argv, &x, &child, &held);
	if (err) {
		(void)bm_err_errno(err < 0 ? err : -err, "failed to start '%s'", o->argv[0]);
		free(envp);
		return BM_EXIT_INTERNAL;
	}
	req = request_json(o, later ? 0 : child.pid, &sb);
	st = bm_client_call(sock, "POST", "/v1/effects", req, &eff, CALL_MS);
	json_decref(req);
	effect_path(o, "", path, sizeof(path));
	if (st == 202) {
		/* queued: the agent attaches it (or makes its cgroup) when it starts it */
		json_decref(eff);
		eff = wait_state(sock, path, started, 24 * 3600 * 1000);
	}
	if ((st != 201 && st != 202) || !eff || !strcmp(state_of(eff), "failed") ||
	    gate_ids(o, eff, &ids) || (later && start_in(sock, o, eff, &x, &child, &held))) {
		if (st != 201 && st != 202)
			say_refused(o, sock, st, eff);
		if (child.pid > 0 && !later)
			bm_effect_held_drop(&held, &child);
		json_decref(eff);
		eff = NULL;
		/* an attach that waits for a process that will not come ends now, not in 10 s */
		if (later && (st == 201 || st == 202)) {
			effect_path(o, "/cancel", body, sizeof(body));
			(void)bm_client_call(sock, "POST", body, NULL, &eff, CALL_MS);
			json_decref(eff);
		}
		free(envp);
		return BM_EXIT_INTERNAL;
	}
	json_decref(eff);
	/* what held each part, with the identity it takes now */
	c.set_ids = ids.set;
	c.uid = ids.uid;
	c.gid = ids.gid;
	bm_sandbox_exec(&sb, &c, &x, &enf);
	/* block before the release, so that the child's SIGCHLD cannot come first */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, &old);
	err = bm_effect_release(&held, &ids);
	if (err < 0)
		(void)bm_err_errno(err, "failed to start '%s'", o->argv[0]);
	else if (err > 0)
		bm_err("cannot run '%s': %s", o->argv[0], strerror(err));
	status = wait_child(&child, &mask);
	sigprocmask(SIG_SETMASK, &old, NULL);
	/* as the shell says it: 127 not found, 126 found but not runnable, 125 ours */
	if (err)
		status = W_EXITCODE(err == ENOENT || err == ENOTDIR ? BM_EXIT_NOTFOUND
				    : err > 0 ? BM_EXIT_NOEXEC : BM_EXIT_INTERNAL, 0);
	effect_path(o, "/exit", body, sizeof(body));
	exitj = exit_report(status, &enf);
	/* the agent may be restarting: it adopts the effect and takes the status then */
	if (post_until(sock, body, exitj, NULL, OUTCOME_WAIT_MS) == 400 &&
	    json_object_del(exitj, "enforcement") == 0)
		/* an agent older than the enforcement in an exit report: the status alone */
		(void)post_until(sock, body, exitj, NULL, OUTCOME_WAIT_MS);
	json_decref(exitj);
	/* the outcome line comes the moment the agent has it: no polling */
	eff = outcome_of(sock, o, OUTCOME_WAIT_MS);
	ret = report(o, eff, &enf);
	json_decref(eff);
	reap_init(held.init);
	if (child.pidfd >= 0)
		close(child.pidfd);
	if (child.status_fd >= 0)
		close(child.status_fd);
	free(envp);
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
