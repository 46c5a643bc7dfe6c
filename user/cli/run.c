// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `burstmeter run`: one effect, supervised by user/effect/sup.c, in an event loop
 * of its own: the command's pidfd, signals, the ring buffer, and the
 * effect's timers. burstmeter is the command's parent (and a subreaper:
 * orphans of the effect come back to it), so it reaps and knows the exit
 * status. Every path out removes what it made.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/config.h"
#include "base/common.h"
#include "cli/run.h"
#include "cli/run_client.h"
#include "effect/policy_yaml.h"
#include "effect/sandbox_exec.h"
#include "effect/sup.h"
#include "meter/preflight.h"
#include "views/report.h"

struct run_state {
	struct bm_run_opts *o;
	struct bm_loader *loader;
	struct bm_sup sup;
	struct bm_sandbox sb;		/* the flags in the request's form, ceilings included */
	struct bm_exec x;		/* what holds it (bm_sandbox_exec(), as the agent's launches) */
	char **envp;			/* --clean-env, --env: ours to free */
	struct bm_egress *egress;	/* --network restricted, --allow-egress: loaded here */
	uint64_t egress_cgid;		/* the cgroup its allow-list holds (0: none) */
	int sigfd;
	bool exited;
};

static void on_event(const struct bm_event *e, void *ctx)
{
	struct run_state *s = ctx;

	if (s->sup.cg && e->cgid == s->sup.cg->id)
		bm_sup__event(&s->sup, e);
}

static int setup_signals(struct run_state *s, sigset_t *old)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sigaddset(&mask, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &mask, old) < 0)
		return -errno;
	s->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	return s->sigfd < 0 ? -errno : 0;
}

/*
 * In a PID namespace of its own the command is its init's child, not ours:
 * the init tells its wait status (status_fd readable).
 */
static void on_status(struct run_state *s)
{
	int status;

	if (s->exited || bm_child_wait(&s->sup.child, &status))
		return;
	s->exited = true;
	bm_sup__exited(&s->sup, status);
}

/* Reap whatever exited: the command, its init, or orphans handed to us as subreaper. */
static void reap(struct run_state *s)
{
	siginfo_t si;

	for (;;) {
		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG) < 0 || !si.si_pid)
			return;
		if (si.si_pid != s->sup.child.pid || s->exited || s->sup.child.status_fd >= 0)
			continue;
		s->exited = true;
		bm_sup__exited(&s->sup, si.si_code == CLD_EXITED ? W_EXITCODE(si.si_status, 0)
								  : W_EXITCODE(0, si.si_status));
	}
}

/*
 * A signal sent to burstmeter is passed on to the command. One the terminal
 * generated (Ctrl-C) reached the whole foreground process group already, so
 * it is only noted.
 */
static void on_signal(struct run_state *s)
{
	struct signalfd_siginfo si;

	while (read(s->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD)
			reap(s);
		else
			bm_sup__cancel(&s->sup, si.ssi_code == SI_KERNEL ? 0 : (int)si.ssi_signo);
	}
}

static int wait_loop(struct run_state *s)
{
	bool pidns = s->sup.child.status_fd >= 0;
	struct pollfd pfd[5] = {
		{ .fd = pidns ? s->sup.child.status_fd : s->sup.child.pidfd, .events = POLLIN },
		{ .fd = s->sigfd, .events = POLLIN },
		{ .fd = s->sup.deadline_fd, .events = POLLIN },
		{ .fd = bm_loader__event_fd(s->loader), .events = POLLIN },
		{ .fd = s->sup.timer_fd, .events = POLLIN },
	};

	while (!bm_sup__done(&s->sup)) {
		if (poll(pfd, BM_ARRAY_SIZE(pfd), -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (pfd[3].revents)
			(void)bm_loader__poll(s->loader, 0);
		if (pfd[0].revents) {
			if (pidns)
				on_status(s);
			else
				reap(s);
			pfd[0].fd = -1;
		}
		if (pfd[1].revents)
			on_signal(s);
		if (pfd[2].revents)
			bm_sup__on_deadline(&s->sup);
		if (pfd[4].revents)
			bm_sup__tick(&s->sup);
	}
	return 0;
}

static int load_policy(struct run_state *s, struct bm_policy *pol)
{
	char err[512];
	int ret;

	bm_policy_default(pol);
	if (!s->o->policy)
		return 0;
	ret = bm_policy_load_file(s->o->policy, s->o->tenant, bm_policy_tool(s->o->argv[0]), pol, err,
				  sizeof(err));
	if (ret == -EINVAL)
		bm_err("invalid --policy: %s", err);
	else if (ret)
		bm_err("invalid --policy '%s': %s", s->o->policy, strerror(-ret));
	return ret;
}

static int start(struct run_state *s, const struct bm_sup_opts *so)
{
	/* $BURSTMETER_KEEP_DIR: another place for kept meters (tests) */
	const char *keep_dir = getenv("BURSTMETER_KEEP_DIR");
	/* an agent's meter, else a kept one: reused where there is one (not to test the hash) */
	const char *reuse[] = { BM_AGENT_PIN_DIR,
				keep_dir && *keep_dir ? keep_dir : BM_KEEP_PIN_DIR, NULL };
	struct bm_loader_opts lo = { .force_hash = s->o->meter_hash, .on_event = on_event, .ctx = s,
				     .keep_ns = s->o->keep_meter_ns, .keep_dir = reuse[1] };
	struct bm_cgroup_env env;
	char parent[PATH_MAX], why[512];
	int err;

	err = bm_meter_preflight(why, sizeof(why));
	if (!err)
		err = bm_cgroup_preflight(&env, parent, sizeof(parent), why, sizeof(why));
	if (err) {
		bm_err("%s", why);
		return err;
	}
	/* --keep-meter keeps one of run's own: the agent's is not ours to keep */
	if (!s->o->meter_hash && !s->o->fresh_meter)
		lo.reuse_dirs = s->o->keep_meter ? reuse + 1 : reuse;
	/* --keep-meter 0: the kept meter goes as this run ends */
	if (s->o->keep_meter && !lo.keep_ns)
		lo.keep_ns = 1;
	/* a meter kept is pinned: on a node just booted, a bpffs is mounted for it (as the agent does) */
	if (s->o->keep_meter && s->o->keep_meter_ns) {
		err = bm_bpffs_prepare(lo.keep_dir, why, sizeof(why));
		if (err < 0) {
			bm_err("%s", why);
			return err;
		}
		if (err)
			bm_dbg("mounted a BPF filesystem for %s", lo.keep_dir);
	}
	s->loader = bm_loader__open(&lo);
	if (!s->loader) {
		err = -errno;
		bm_err("failed to load the meter: %s (-v shows why)", strerror(-err));
		return err;
	}
	err = bm_sup__start(&s->sup, s->loader, &env, parent, so);
	if (err)
		bm_err("failed to %s for %s under %s: %s", s->sup.failed_step, so->id, parent,
		       err == -EEXIST ? "an effect with this id is running" : strerror(-err));
	return err;
}

static void report(struct run_state *s)
{
	struct bm_report_opts ro = { s->o->outcome, s->o->json, s->o->hist, s->o->quiet };

	bm_report(&ro, &s->sup.out);
}

/*
 * Find the command as its exec will: a relative path with a slash from
 * --cwd, where it is run (as execvp() does once there); else as ever.
 */
static int resolve(const struct bm_run_opts *o, char *path, size_t len)
{
	const char *cmd = o->argv[0];
	char rel[PATH_MAX * 2];

	if (!o->sb.cwd[0] || cmd[0] == '/' || !strchr(cmd, '/'))
		return bm_effect_resolve(cmd, path, len);
	snprintf(rel, sizeof(rel), "%s/%s", o->sb.cwd, cmd);
	return bm_effect_resolve(rel, path, len);
}

/* The command could not be found or run: report it (nothing of it ran). */
static int not_runnable(struct run_state *s, int err)
{
	bm_err("cannot run '%s': %s", s->o->argv[0], strerror(err));
	bm_outcome_classify(&s->sup.out, 0, false, err);
	s->sup.out.sum = NULL;
	report(s);
	return s->sup.out.exit_code;
}

/*
 * The flags as the agent would hold them: the request's sandbox (with the
 * ceilings), and the exec options bm_sandbox_exec() makes of it, with the
 * enforcement in the outcome. Nothing is made here.
 */
static int sandbox(struct run_state *s, struct bm_sup_opts *so)
{
	const struct bm_run_opts *o = s->o;
	struct bm_sandbox_ctx c;
	int err;

	s->sb = o->sb.sb;
	s->sb.cpu_limit_milli = o->limits.cpu_milli;
	s->sb.memory_limit = o->limits.memory_bytes;
	s->sb.pids_limit = o->limits.pids;
	s->sb.timeout_ns = o->limits.timeout_ns;
	so->sandbox = &s->sb;
	/* --tmp-size bounds its /tmp as the agent's max_ephemeral_storage does (one code path) */
	bm_sup_places(so, &s->sb, o->sb.cwd[0] ? o->sb.cwd : ".");
	err = bm_run_sandbox_envp(&o->sb, &s->envp);
	if (err)
		return bm_err_errno(err, "failed to set up the environment");
	bm_run_sandbox_ctx(&o->sb, s->envp, o->sb.isolate, &c);
	bm_sandbox_exec(&s->sb, &c, &s->x, &s->sup.out.sbx);
	/* no flag of the sandbox: the command starts as we are, as before */
	if (o->sb.isolate || s->envp || c.cwd)
		so->exec = &s->x;
	return 0;
}

/* Its network policy, where it restricts egress: our own filter, before anything runs in the cgroup. */
static int egress(struct run_state *s)
{
	int err;

	if (!bm_sandbox_filters_egress(&s->sb))
		return 0;
	s->egress = bm_egress__open();
	if (!s->egress)
		return bm_err_errno(-errno, "failed to load the egress filter for --network %s",
				    s->sb.n_cidrs ? "restricted --allow-egress" : "restricted");
	err = bm_sandbox_egress(s->egress, &s->sb, s->sup.cg->dirfd, s->sup.cg->id, &s->sup.out.sbx);
	if (err < 0)
		return bm_err_errno(err, "failed to filter the egress of %s", s->sup.cg->path);
	s->egress_cgid = s->sup.cg->id;
	return 0;
}

static int run(struct run_state *s, struct bm_sup_opts *so)
{
	char path[PATH_MAX];
	int err;

	s->sup.o.id = so->id;
	s->sup.out.id = so->id;
	s->sup.out.tenant = so->tenant;
	s->sup.out.intent = so->intent;
	s->sup.out.argv = so->argv;
	s->sup.out.limits = so->limits;
	s->sup.out.started_wall_ns = bm_wall_ns();
	s->sup.out.sandbox = so->sandbox;
	err = resolve(s->o, path, sizeof(path));
	if (err)
		return not_runnable(s, -err);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0 || start(s, so) || egress(s))
		return BM_EXIT_INTERNAL;
	err = bm_sup__spawn(&s->sup);
	if (err < 0) {
		bm_err("failed to start '%s' in %s: %s", so->argv[0], s->sup.cg->path, strerror(-err));
		return BM_EXIT_INTERNAL;
	}
	if (err > 0)
		return not_runnable(s, err);
	err = wait_loop(s);
	if (err)
		bm_err("failed waiting for '%s': %s", so->argv[0], strerror(-err));
	bm_sup__finish(&s->sup);
	if (!s->sup.out.sum)
		bm_err("failed to read the meter of %s", so->id);
	report(s);
	return bm_report_exit_status(&s->sup.out);
}

int bm_run(struct bm_run_opts *o)
{
	char path[PATH_MAX];
	const char *sock;
	struct run_state *s;
	struct bm_sup_opts so = {
		.id = o->id, .tenant = o->tenant, .intent = o->intent, .argv = o->argv,
		.limits = o->limits, .window_ns = o->window_ns, .meter_only = o->meter_only,
		.no_fast_path = o->no_fast_path,
	};
	sigset_t old;
	int ret = BM_EXIT_INTERNAL, err;

	sigemptyset(&old);
	bm_log_set_level(o->verbose ? BM_LOG_DEBUG : BM_LOG_INFO);
	bm_log_libbpf();
	if (resolve(o, path, sizeof(path)) == 0 && (sock = bm_run_agent_socket(o)))
		return bm_run_client(o, sock);
	s = calloc(1, sizeof(*s));
	if (!s) {
		bm_err("failed to start: out of memory");
		return BM_EXIT_INTERNAL;
	}
	s->o = o;
	s->sigfd = -1;
	bm_sup__init(&s->sup);
	if (!load_policy(s, &so.policy) && !sandbox(s, &so)) {
		err = setup_signals(s, &old);
		if (err)
			(void)bm_err_errno(err, "failed to set up signal handling");
		else
			ret = run(s, &so);
	}
	err = bm_sup__release(&s->sup);
	if (err)
		bm_err("failed to remove the cgroup of %s: %s", o->id, strerror(-err));
	if (s->egress_cgid)
		bm_sandbox_egress_forget(s->egress, &s->sb, s->egress_cgid);
	bm_egress__free(s->egress);
	free(s->envp);
	if (s->sigfd >= 0) {
		close(s->sigfd);
		sigprocmask(SIG_SETMASK, &old, NULL);
	}
	bm_loader__free(s->loader);
	free(s);
	return ret;
}
