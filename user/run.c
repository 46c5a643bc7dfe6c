// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The event loop of `burstmeter run`: set up (validate, load, cgroup,
 * spawn), wait on the child, signals, the deadline and the ring buffer,
 * then drain, report and clean up. Every path out removes what it made.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "common.h"
#include "effect.h"
#include "histfmt.h"
#include "loader.h"
#include "run.h"
#include "window.h"

/* A freed task is reported an RCU grace period after its exit; this is plenty. */
#define BM_DRAIN_TIMEOUT_MS 1000
#define BM_KILL_TIMEOUT_MS 2000

struct run_state {
	struct bm_run_opts *o;
	struct bm_loader *loader;
	struct bm_cgroup *cg;
	struct bm_child child;
	int sigfd, timerfd;
	uint64_t start_ns, end_ns, start_wall_ns;
	int wait_status;
	bool exited, cancelled, deadline, killed;
	bool drained;
	struct bm_outcome out;
	struct bm_summary sum;
};

static void on_event(const struct bm_event *e, void *ctx)
{
	struct run_state *s = ctx;

	if (!s->cg || e->cgid != s->cg->id)
		return;
	if (e->type == BM_EV_DRAINED)
		s->drained = true;
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

static int send_child(struct run_state *s, int sig)
{
	if (syscall(SYS_pidfd_send_signal, s->child.pidfd, sig, NULL, 0) < 0)
		return -errno;
	return 0;
}

/* Reap whatever exited: the command, or orphans handed to us as subreaper. */
static void reap(struct run_state *s)
{
	siginfo_t si;

	for (;;) {
		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG) < 0 || !si.si_pid)
			return;
		if (si.si_pid != s->child.pid)
			continue;
		s->exited = true;
		s->end_ns = bm_now_ns();
		s->wait_status = si.si_code == CLD_EXITED ? W_EXITCODE(si.si_status, 0)
							: W_EXITCODE(0, si.si_status);
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
		if (si.ssi_signo == SIGCHLD) {
			reap(s);
			continue;
		}
		s->cancelled = true;
		if (si.ssi_code != SI_KERNEL && !s->exited)
			send_child(s, (int)si.ssi_signo);
	}
}

/* The deadline: SIGTERM first, then after a grace of a tenth of the timeout, the whole cgroup. */
static void on_timer(struct run_state *s)
{
	uint64_t ticks, grace;
	struct itimerspec its = { 0 };

	if (read(s->timerfd, &ticks, sizeof(ticks)) < 0)
		return;
	if (!s->deadline) {
		s->deadline = true;
		send_child(s, SIGTERM);
		grace = s->o->limits.timeout_ns / 10;
		grace = grace < 100 * BM_NSEC_PER_MSEC ? 100 * BM_NSEC_PER_MSEC
			: grace > 5 * BM_NSEC_PER_SEC ? 5 * BM_NSEC_PER_SEC : grace;
		its.it_value.tv_sec = grace / BM_NSEC_PER_SEC;
		its.it_value.tv_nsec = grace % BM_NSEC_PER_SEC;
		timerfd_settime(s->timerfd, 0, &its, NULL);
		return;
	}
	s->killed = true;
	bm_cgroup__kill(s->cg);
}

static int arm_deadline(struct run_state *s)
{
	struct itimerspec its = { 0 };
	uint64_t t = s->o->limits.timeout_ns;

	s->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (s->timerfd < 0)
		return -errno;
	if (!t)
		return 0;
	its.it_value.tv_sec = t / BM_NSEC_PER_SEC;
	its.it_value.tv_nsec = t % BM_NSEC_PER_SEC;
	return timerfd_settime(s->timerfd, 0, &its, NULL) < 0 ? -errno : 0;
}

static int wait_loop(struct run_state *s)
{
	struct pollfd pfd[4] = {
		{ .fd = s->child.pidfd, .events = POLLIN },
		{ .fd = s->sigfd, .events = POLLIN },
		{ .fd = s->timerfd, .events = POLLIN },
		{ .fd = bm_loader__event_fd(s->loader), .events = POLLIN },
	};

	while (!s->exited) {
		if (poll(pfd, BM_ARRAY_SIZE(pfd), -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (pfd[0].revents)
			reap(s);
		if (pfd[1].revents)
			on_signal(s);
		if (pfd[2].revents)
			on_timer(s);
		if (pfd[3].revents)
			bm_loader__poll(s->loader, 0);
	}
	return 0;
}

/*
 * The command is gone; tasks it left behind are not allowed to outlive the
 * effect. Then wait until the kernel has freed every task of the cgroup, so
 * that the last slices have been charged before the meter is read.
 */
static void drain(struct run_state *s, struct bm_meter *m)
{
	uint64_t deadline = bm_now_ns() + BM_DRAIN_TIMEOUT_MS * BM_NSEC_PER_MSEC;
	int populated = bm_cgroup__populated(s->cg), err;

	if (populated > 0) {
		if (!bm_loader__read(s->loader, s->cg, m))
			s->out.leftover_killed = m->tasks > 0 ? (uint64_t)m->tasks : 1;
		err = bm_cgroup__kill(s->cg);
		if (!err)
			err = bm_cgroup__wait_empty(s->cg, BM_KILL_TIMEOUT_MS);
		if (err)
			bm_warn("failed to kill what %s left behind: %s", s->o->id, strerror(-err));
	}
	while (!s->drained && bm_now_ns() < deadline) {
		if (!bm_loader__read(s->loader, s->cg, m) && (m->flags & BM_F_DRAINED))
			break;
		bm_loader__poll(s->loader, 5);
		on_signal(s);
	}
}

static void read_cgroup_stats(struct run_state *s)
{
	uint64_t v;

	s->out.psi_cpu_us = s->out.psi_mem_us = s->out.psi_io_us = -1;
	if (!bm_cgroup__read_key(s->cg, "cpu.pressure", "some", &v))
		s->out.psi_cpu_us = (int64_t)v;
	if (!bm_cgroup__read_key(s->cg, "memory.pressure", "some", &v))
		s->out.psi_mem_us = (int64_t)v;
	if (!bm_cgroup__read_key(s->cg, "io.pressure", "some", &v))
		s->out.psi_io_us = (int64_t)v;
	if (!bm_cgroup__read_key(s->cg, "cpu.stat", "usage_usec", &v))
		s->out.cgroup_cpu_us = v;
}

static int start(struct run_state *s)
{
	struct bm_loader_opts lo = { .force_hash = s->o->meter_hash, .on_event = on_event, .ctx = s };
	struct bm_cgroup_env env;
	char parent[PATH_MAX], name[3 * BM_NAME_MAX];
	int err;

	s->loader = bm_loader__open(&lo);
	if (!s->loader) {
		err = -errno;
		bm_err("failed to load the meter: %s%s", strerror(-err),
		       geteuid() ? " (burstmeter needs root, or CAP_BPF with CAP_PERFMON and cgroup delegation)" : " (-v shows why)");
		return err;
	}
	err = bm_cgroup_env_detect("/proc/self/mountinfo", "/proc/self/cgroup", &env);
	if (!err)
		err = bm_cgroup_env_self_dir(&env, parent, sizeof(parent));
	if (err) {
		bm_err("failed to find our cgroup v2 directory: %s", strerror(-err));
		return err;
	}
	snprintf(name, sizeof(name), "burstmeter.%s.%s", s->o->tenant, s->o->id);
	s->cg = bm_cgroup__create(parent, name);
	if (!s->cg) {
		err = -errno;
		bm_err("failed to create cgroup %s/%s: %s", parent, name,
		       err == -EEXIST ? "an effect with this id is running" : strerror(-err));
		return err;
	}
	s->start_ns = bm_now_ns();
	s->start_wall_ns = bm_wall_ns();
	err = bm_loader__add(s->loader, s->cg, s->o->window_ns, s->start_ns, NULL);
	if (err) {
		bm_err("failed to register %s with the meter: %s", s->cg->path, strerror(-err));
		return err;
	}
	return arm_deadline(s);
}

static void report(struct run_state *s, bool metered)
{
	struct bm_outcome *out = &s->out;
	char pc[32], pm[32], pt[32], pn[32], rq[32];
	json_t *j;
	int err, d;

	out->sum = metered ? &s->sum : NULL;
	bm_outcome_retry(out);
	j = bm_outcome_json(out);
	if (!j) {
		bm_err("failed to build the outcome of %s: %s", out->id, strerror(ENOMEM));
		return;
	}
	if (s->o->outcome && (err = bm_outcome_write(j, s->o->outcome)))
		bm_err("failed to write the outcome to %s: %s", s->o->outcome, strerror(-err));
	if (s->o->hist && metered)
		for (d = 0; d < BM_DIM__MAX; d++)
			bm_hist_print(stderr, d, s->sum.hist[d], s->sum.window_ns);
	if (!s->o->quiet && metered)
		fprintf(stderr, "burstmeter: %s %s in %.2f s; peak cpu %s cores, mem %s, tasks %s, net %s, runq %s ms/window\n",
			out->id, bm_reason_name(out->reason), out->wall_ns / 1e9,
			bm_fmt_value(BM_DIM_CPU, bm_window_display(BM_DIM_CPU, s->sum.peak[BM_DIM_CPU], s->sum.window_ns), pc, sizeof(pc)),
			bm_fmt_value(BM_DIM_MEM, s->sum.peak[BM_DIM_MEM], pm, sizeof(pm)),
			bm_fmt_value(BM_DIM_PIDS, s->sum.peak[BM_DIM_PIDS], pt, sizeof(pt)),
			bm_fmt_value(BM_DIM_NET, bm_window_display(BM_DIM_NET, s->sum.peak[BM_DIM_NET], s->sum.window_ns), pn, sizeof(pn)),
			bm_fmt_value(BM_DIM_RUNQ, bm_window_display(BM_DIM_RUNQ, s->sum.peak[BM_DIM_RUNQ], s->sum.window_ns), rq, sizeof(rq)));
	if (s->o->json) {
		char *text = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(9));

		if (text)
			fprintf(stderr, "%s\n", text);
		free(text);
	}
	json_decref(j);
}

static int exit_status(const struct bm_outcome *out)
{
	if (out->reason == BM_REASON_DEADLINE)
		return BM_EXIT_DEADLINE;
	if (out->exit_signal)
		return 128 + out->exit_signal;
	return out->exit_code >= 0 ? out->exit_code : BM_EXIT_INTERNAL;
}

static void init_outcome(struct run_state *s)
{
	struct bm_outcome *out = &s->out;

	out->id = s->o->id;
	out->tenant = s->o->tenant;
	out->intent = s->o->intent;
	out->argv = s->o->argv;
	out->limits = s->o->limits;
	out->psi_cpu_us = out->psi_mem_us = out->psi_io_us = -1;
	out->started_wall_ns = bm_wall_ns();
}

/* The command could not be found or run: report it without creating anything. */
static int not_runnable(struct run_state *s, int err)
{
	bm_err("cannot run '%s': %s", s->o->argv[0], strerror(err));
	bm_outcome_classify(&s->out, 0, false, err);
	report(s, false);
	return s->out.exit_code;
}

int bm_run(struct bm_run_opts *o)
{
	struct run_state s = { .o = o, .sigfd = -1, .timerfd = -1, .child.pidfd = -1 };
	struct bm_meter m;
	char path[PATH_MAX];
	sigset_t old;
	int err, ret = BM_EXIT_INTERNAL;
	bool metered = false;

	bm_log_set_level(o->verbose ? BM_LOG_DEBUG : BM_LOG_INFO);
	bm_log_libbpf();
	init_outcome(&s);
	if (o->policy) {
		bm_err("invalid --policy '%s': policies are not supported by this build yet", o->policy);
		return BM_EXIT_INTERNAL;
	}
	err = bm_effect_resolve(o->argv[0], path, sizeof(path));
	if (err)
		return not_runnable(&s, -err);
	if (setup_signals(&s, &old) < 0 || prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		bm_err("failed to set up signal handling: %s", strerror(errno));
		goto out;
	}
	if (start(&s))
		goto out;
	s.out.cgroup = s.cg->path;
	s.out.net_source = bm_loader__features(s.loader)->net;
	err = bm_effect_spawn(s.cg->dirfd, o->argv, &s.child);
	if (err < 0) {
		bm_err("failed to start '%s' in %s: %s", o->argv[0], s.cg->path, strerror(-err));
		goto out;
	}
	if (err > 0) {
		ret = not_runnable(&s, err);
		goto out;
	}
	err = wait_loop(&s);
	if (err)
		bm_err("failed waiting for '%s': %s", o->argv[0], strerror(-err));
	drain(&s, &m);
	read_cgroup_stats(&s);
	s.out.wall_ns = s.end_ns - s.start_ns;
	bm_outcome_classify(&s.out, s.wait_status, s.cancelled, 0);
	if (s.deadline) {
		s.out.reason = BM_REASON_DEADLINE;
		s.out.by = "deadline";
	}
	err = bm_loader__read(s.loader, s.cg, &m);
	if (!err)
		err = bm_window_finalize(&m, s.end_ns / m.window_ns, &s.sum);
	if (err) {
		bm_err("failed to read the meter of %s: %s", o->id, strerror(-err));
		s.out.reason = BM_REASON_METER_ERROR;
		s.out.by = "burstmeter";
	}
	metered = !err;
	bm_loader__stats(s.loader, s.out.stats);
	report(&s, metered);
	ret = exit_status(&s.out);
out:
	if (s.cg) {
		bm_loader__del(s.loader, s.cg);
		if (bm_cgroup__populated(s.cg) > 0 && !bm_cgroup__kill(s.cg))
			bm_cgroup__wait_empty(s.cg, BM_KILL_TIMEOUT_MS);
		err = bm_cgroup__remove(s.cg);
		if (err)
			bm_err("failed to remove cgroup %s: %s", s.cg->path, strerror(-err));
		bm_cgroup__free(s.cg);
	}
	if (s.child.pidfd >= 0)
		close(s.child.pidfd);
	if (s.timerfd >= 0)
		close(s.timerfd);
	if (s.sigfd >= 0) {
		close(s.sigfd);
		sigprocmask(SIG_SETMASK, &old, NULL);
	}
	bm_loader__free(s.loader);
	return ret;
}
