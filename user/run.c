// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The event loop of `burstmeter run`: validate and set up (policy, meter,
 * cgroup, ceilings, command), then wait on the command, signals, the
 * deadline, the ring buffer and the ladder's timer; then drain, report and
 * clean up. Every path out removes what it made.
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

#include "act.h"
#include "ceiling.h"
#include "cgroup.h"
#include "common.h"
#include "effect.h"
#include "loader.h"
#include "policy_yaml.h"
#include "report.h"
#include "run.h"
#include "window.h"

/* A freed task is reported an RCU grace period after its exit; this is plenty. */
#define BM_DRAIN_TIMEOUT_MS 1000
#define BM_KILL_TIMEOUT_MS 2000

struct run_state {
	struct bm_run_opts *o;
	struct bm_loader *loader;
	struct bm_cgroup_env env;
	struct bm_cgroup *cg;
	struct bm_ceilings ceil;
	struct bm_policy pol;
	struct bm_ladder lad;
	struct bm_actuator act;
	struct bm_child child;
	int sigfd, deadline_fd, policy_fd;
	uint64_t start_ns, end_ns;
	int wait_status;
	bool exited, cancelled, deadline, drained, wake, acting;
	struct bm_outcome out;
	struct bm_summary sum;
	char name[3 * BM_NAME_MAX];
};

static const enum bm_reason pdim_reason[BM_P__MAX] = {
	[BM_P_CPU] = BM_REASON_CPU_CEILING, [BM_P_MEM] = BM_REASON_MEMORY_CEILING,
	[BM_P_PIDS] = BM_REASON_PIDS_CEILING, [BM_P_NET] = BM_REASON_NET_CEILING,
};

static const int pdim_dim[BM_P__MAX] = {
	[BM_P_CPU] = BM_DIM_CPU, [BM_P_MEM] = BM_DIM_MEM, [BM_P_PIDS] = BM_DIM_PIDS,
	[BM_P_NET] = BM_DIM_NET,
};

static void on_event(const struct bm_event *e, void *ctx)
{
	struct run_state *s = ctx;
	struct bm_verdict_action va = { .act = BM_ACT_KILL };

	if (!s->cg || e->cgid != s->cg->id)
		return;
	switch (e->type) {
	case BM_EV_DRAINED:
		s->drained = true;
		break;
	case BM_EV_CROSS:
		s->wake = true;
		break;
	case BM_EV_KILLED:
		/* the kernel stopped the offender; cgroup.kill ends the rest */
		va.dim = e->dim == BM_DIM_MEM ? BM_P_MEM : BM_P_PIDS;
		va.observed = (double)e->value;
		va.threshold = (double)e->thresh - 1;
		if (!s->act.ended) {
			bm_act_do(&s->act, &va, "kernel", bm_now_ns());
			s->lad.step = BM_STEP_KILL;
		}
		break;
	}
}

/* The value of flow d in window x: the sum of its lanes, 0 if the slot holds another window. */
static double flow_value(const struct bm_meter *m, int d, uint64_t x)
{
	uint32_t slot = x % BM_RING;
	uint64_t v = 0;
	int l;

	if (m->slot_win[slot] != x)
		return 0;
	for (l = 0; l < BM_LANES; l++)
		v += m->lane[l].v[slot][d];
	return (double)v;
}

/* What the ladder sees: the current and the last full window (a fresh window looks empty). */
static void sample(struct run_state *s, const struct bm_meter *m, uint64_t now, struct bm_sample *sm)
{
	uint64_t W = m->window_ns, x = now / W, ooms, refused;
	double cur, prev;
	int p;

	memset(sm, 0, sizeof(*sm));
	for (p = 0; p < BM_P__MAX; p++) {
		int d = pdim_dim[p];

		if (d == BM_DIM_MEM || d == BM_DIM_PIDS) {
			int64_t v = d == BM_DIM_MEM ? m->rss_bytes : m->tasks;

			/* the level now, or its peak in this window if it has fallen since */
			sm->value[p] = v > 0 ? (double)v : 0;
			if (m->lvl_win == x && m->lvl_max[d] > sm->value[p])
				sm->value[p] = (double)m->lvl_max[d];
			continue;
		}
		cur = flow_value(m, d, x);
		prev = flow_value(m, d, x - 1);
		sm->value[p] = bm_window_display(d, cur > prev ? cur : prev, W);
	}
	bm_ceilings_events(&s->ceil, &ooms, &refused);
	sm->breach[BM_P_MEM] = ooms > 0;
	sm->breach[BM_P_PIDS] = refused > 0;
	sm->gone = s->exited && bm_cgroup__populated(s->cg) <= 0;
}

static void arm_timer(int fd, uint64_t at_ns)
{
	struct itimerspec its = { 0 };

	if (at_ns != UINT64_MAX) {
		its.it_value.tv_sec = at_ns / BM_NSEC_PER_SEC;
		its.it_value.tv_nsec = at_ns % BM_NSEC_PER_SEC;
		/* 0 would disarm: a time already past fires at once */
		if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
			its.it_value.tv_nsec = 1;
	}
	timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* One turn of the ladder: sample, decide, act, and say when to look again. */
static void evaluate(struct run_state *s)
{
	uint64_t now = bm_now_ns(), next, duty;
	struct bm_verdict v;
	struct bm_sample sm;
	struct bm_meter m;
	unsigned int i;
	int p;

	s->wake = false;
	if (!s->acting || bm_loader__read(s->loader, s->cg, &m))
		return;
	sample(s, &m, now, &sm);
	bm_policy_step(&s->pol, &s->lad, &sm, now, &v);
	for (i = 0; i < v.n; i++) {
		/* a controller's refusal is the kernel's decision; a level's is ours */
		const char *by = sm.breach[v.a[i].dim] ? "kernel" : "policy";
		int err = bm_act_do(&s->act, &v.a[i], by, now);

		if (err)
			bm_warn("failed to %s %s: %s", bm_act_name(v.a[i].act), s->o->id, strerror(-err));
	}
	next = bm_policy_next_deadline(&s->pol, &s->lad);
	duty = bm_act_tick(&s->act, now);
	next = duty < next ? duty : next;
	/*
	 * Look again every window while anything is over its soft level or a
	 * step is in force, and while a level sits near a ceiling a controller
	 * holds: a refused fork or an OOM kill changes no level, so no crossing
	 * would say so.
	 */
	for (p = 0; p < BM_P__MAX; p++) {
		const struct bm_dim_rule *r = &s->pol.dim[p];
		bool near = r->ceiling && s->ceil.controller[p] && sm.value[p] >= 0.9 * r->hard;

		if (near || s->lad.above_since_ns[p] || s->lad.step != BM_STEP_OBSERVE)
			next = now + m.window_ns < next ? now + m.window_ns : next;
	}
	arm_timer(s->policy_fd, next);
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

static void send_child(struct run_state *s, int sig)
{
	syscall(SYS_pidfd_send_signal, s->child.pidfd, sig, NULL, 0);
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
static void on_deadline(struct run_state *s)
{
	uint64_t ticks, grace;

	if (read(s->deadline_fd, &ticks, sizeof(ticks)) < 0)
		return;
	if (!s->deadline) {
		s->deadline = true;
		send_child(s, SIGTERM);
		grace = s->o->limits.timeout_ns / 10;
		grace = grace < 100 * BM_NSEC_PER_MSEC ? 100 * BM_NSEC_PER_MSEC
			: grace > 5 * BM_NSEC_PER_SEC ? 5 * BM_NSEC_PER_SEC : grace;
		arm_timer(s->deadline_fd, bm_now_ns() + grace);
		return;
	}
	bm_cgroup__kill(s->cg);
}

static int wait_loop(struct run_state *s)
{
	struct pollfd pfd[5] = {
		{ .fd = s->child.pidfd, .events = POLLIN },
		{ .fd = s->sigfd, .events = POLLIN },
		{ .fd = s->deadline_fd, .events = POLLIN },
		{ .fd = bm_loader__event_fd(s->loader), .events = POLLIN },
		{ .fd = s->policy_fd, .events = POLLIN },
	};
	uint64_t ticks;

	while (!s->exited) {
		if (poll(pfd, BM_ARRAY_SIZE(pfd), -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (pfd[3].revents)
			bm_loader__poll(s->loader, 0);
		if (pfd[4].revents && read(s->policy_fd, &ticks, sizeof(ticks)) > 0)
			s->wake = true;
		if (s->wake)
			evaluate(s);
		if (pfd[0].revents)
			reap(s);
		if (pfd[1].revents)
			on_signal(s);
		if (pfd[2].revents)
			on_deadline(s);
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
	int err;

	if (bm_cgroup__populated(s->cg) > 0) {
		if (!bm_loader__read(s->loader, s->cg, m) && !s->act.ended)
			s->out.leftover_killed = m->tasks > 0 ? (uint64_t)m->tasks : 1;
		err = bm_cgroup__kill(s->cg);
		if (!err)
			err = bm_cgroup__wait_empty(s->cg, BM_KILL_TIMEOUT_MS);
		if (err)
			bm_warn("failed to kill what %s left behind: %s", s->o->id, strerror(-err));
		/* the effect lasted until its last task was gone */
		s->end_ns = bm_now_ns();
	}
	bm_act_finish(&s->act, bm_now_ns());
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

	if (!bm_cgroup__read_key(s->cg, "cpu.pressure", "some", &v))
		s->out.psi_cpu_us = (int64_t)v;
	if (!bm_cgroup__read_key(s->cg, "memory.pressure", "some", &v))
		s->out.psi_mem_us = (int64_t)v;
	if (!bm_cgroup__read_key(s->cg, "io.pressure", "some", &v))
		s->out.psi_io_us = (int64_t)v;
	if (!bm_cgroup__read_key(s->cg, "cpu.stat", "usage_usec", &v))
		s->out.cgroup_cpu_us = v;
}

/* Crossing thresholds (per window) and kernel kill levels from the policy. */
static void kernel_levels(struct run_state *s, uint64_t thresh[BM_DIM__MAX], uint64_t kill_at[BM_DIM__MAX])
{
	double W = (double)s->o->window_ns;
	int p;

	memset(thresh, 0, sizeof(uint64_t) * BM_DIM__MAX);
	memset(kill_at, 0, sizeof(uint64_t) * BM_DIM__MAX);
	for (p = 0; p < BM_P__MAX; p++) {
		const struct bm_dim_rule *r = &s->pol.dim[p];
		double lvl = r->soft && (!r->hard || r->soft < r->hard) ? r->soft : r->hard;
		int d = pdim_dim[p];

		/* wake near a ceiling: from there on evaluate() looks every window */
		if (r->ceiling && lvl == r->hard)
			lvl = 0.9 * r->hard;
		if (!lvl)
			continue;
		thresh[d] = (uint64_t)(p == BM_P_CPU ? lvl * W : p == BM_P_NET ? lvl * W / 1e9 : lvl);
		if (!thresh[d])
			thresh[d] = 1;
		/* past a ceiling no controller holds, the kernel kills on the spot */
		if (r->ceiling && !s->ceil.controller[p] && !s->o->no_fast_path)
			kill_at[d] = (uint64_t)r->hard + 1;
	}
}

static int load_policy(struct run_state *s)
{
	const struct bm_limits *lim = &s->o->limits;
	char err[512];
	int ret, p;

	bm_policy_default(&s->pol);
	if (s->o->policy) {
		ret = bm_policy_load_file(s->o->policy, s->o->tenant, bm_policy_tool(s->o->argv[0]),
					  &s->pol, err, sizeof(err));
		if (ret) {
			if (ret == -EINVAL)
				bm_err("invalid --policy: %s", err);
			else
				bm_err("invalid --policy '%s': %s", s->o->policy, strerror(-ret));
			return ret;
		}
	}
	bm_policy_ceilings(&s->pol, lim->cpu_milli / 1000.0, (double)lim->memory_bytes, (double)lim->pids);
	bm_ladder_init(&s->lad);
	for (p = 0; p < BM_P__MAX; p++)
		s->acting |= s->pol.dim[p].soft > 0 || s->pol.dim[p].hard > 0;
	return 0;
}

static int start(struct run_state *s)
{
	struct bm_loader_opts lo = { .force_hash = s->o->meter_hash, .on_event = on_event, .ctx = s };
	uint64_t thresh[BM_DIM__MAX], kill_at[BM_DIM__MAX];
	const struct bm_limits no_limits = { 0 };
	char parent[PATH_MAX];
	int err, p;

	s->loader = bm_loader__open(&lo);
	if (!s->loader) {
		err = -errno;
		bm_err("failed to load the meter: %s%s", strerror(-err),
		       geteuid() ? " (burstmeter needs root, or CAP_BPF with CAP_PERFMON and cgroup delegation)" : " (-v shows why)");
		return err;
	}
	err = bm_cgroup_env_detect("/proc/self/mountinfo", "/proc/self/cgroup", &s->env);
	if (!err)
		err = bm_cgroup_env_self_dir(&s->env, parent, sizeof(parent));
	if (err) {
		bm_err("failed to find our cgroup v2 directory: %s", strerror(-err));
		return err;
	}
	snprintf(s->name, sizeof(s->name), "burstmeter.%s.%s", s->o->tenant, s->o->id);
	s->cg = bm_cgroup__create(parent, s->name);
	if (!s->cg) {
		err = -errno;
		bm_err("failed to create cgroup %s/%s: %s", parent, s->name,
		       err == -EEXIST ? "an effect with this id is running" : strerror(-err));
		return err;
	}
	err = bm_ceilings_apply(&s->env, s->cg, s->name, s->o->meter_only ? &no_limits : &s->o->limits,
				!s->o->meter_only && (s->pol.dim[BM_P_CPU].steps & BM_STEP_BIT(BM_STEP_THROTTLE)),
				&s->ceil);
	for (p = 0; s->o->meter_only && p < BM_P__MAX; p++)
		s->ceil.mech[p] = s->pol.dim[p].hard ? "meter" : NULL;
	if (err) {
		bm_err("failed to set the ceilings of %s: %s", s->cg->path, strerror(-err));
		return err;
	}
	s->start_ns = bm_now_ns();
	err = bm_loader__add(s->loader, s->cg, s->o->window_ns, s->start_ns, NULL);
	if (!err) {
		kernel_levels(s, thresh, kill_at);
		err = bm_loader__arm(s->loader, s->cg, thresh, kill_at);
	}
	if (err) {
		bm_err("failed to register %s with the meter: %s", s->cg->path, strerror(-err));
		return err;
	}
	bm_act_init(&s->act, s->cg, &s->ceil, &s->pol, &s->o->limits, &s->out, s->start_ns, s->o->window_ns);
	s->deadline_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	s->policy_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (s->deadline_fd < 0 || s->policy_fd < 0)
		return -errno;
	if (s->o->limits.timeout_ns)
		arm_timer(s->deadline_fd, s->start_ns + s->o->limits.timeout_ns);
	return 0;
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

/* How it ended: the ladder or the kernel at a ceiling, the deadline, or the command itself. */
static void classify(struct run_state *s)
{
	uint64_t ooms, refused;

	bm_outcome_classify(&s->out, s->wait_status, s->cancelled, 0);
	bm_ceilings_events(&s->ceil, &ooms, &refused);
	if (s->deadline) {
		s->out.reason = BM_REASON_DEADLINE;
		s->out.by = "deadline";
	} else if (s->act.ended) {
		s->out.reason = pdim_reason[s->act.cause];
		s->out.by = s->act.by;
	} else if (ooms && s->out.exit_signal == SIGKILL) {
		/* the memory controller's OOM killer got there first */
		s->out.reason = BM_REASON_MEMORY_CEILING;
		s->out.by = "kernel";
	}
}

/* The command could not be found or run: report it without creating anything. */
static int not_runnable(struct run_state *s, int err)
{
	bm_err("cannot run '%s': %s", s->o->argv[0], strerror(err));
	bm_outcome_classify(&s->out, 0, false, err);
	bm_report(s->o, &s->out);
	return s->out.exit_code;
}

static void finish(struct run_state *s)
{
	struct bm_meter m;
	int err;

	drain(s, &m);
	read_cgroup_stats(s);
	s->out.wall_ns = s->end_ns - s->start_ns;
	classify(s);
	err = bm_loader__read(s->loader, s->cg, &m);
	if (!err) {
		/* exits and frees after the end are still events of the effect */
		uint64_t end = s->end_ns / m.window_ns;

		end = end > m.last_win ? end : m.last_win;
		err = bm_window_finalize(&m, end > m.lvl_win ? end : m.lvl_win, &s->sum);
	}
	if (err) {
		bm_err("failed to read the meter of %s: %s", s->o->id, strerror(-err));
		s->out.reason = BM_REASON_METER_ERROR;
		s->out.by = "burstmeter";
	}
	s->out.sum = err ? NULL : &s->sum;
	bm_loader__stats(s->loader, s->out.stats);
	memcpy(s->out.ceiling_mech, s->ceil.mech, sizeof(s->out.ceiling_mech));
	bm_report(s->o, &s->out);
}

static void cleanup(struct run_state *s, const sigset_t *old)
{
	int err;

	if (s->cg) {
		bm_loader__del(s->loader, s->cg);
		if (bm_cgroup__populated(s->cg) > 0 && !bm_cgroup__kill(s->cg))
			bm_cgroup__wait_empty(s->cg, BM_KILL_TIMEOUT_MS);
		bm_ceilings_release(&s->ceil);
		err = bm_cgroup__remove(s->cg);
		if (err)
			bm_err("failed to remove cgroup %s: %s", s->cg->path, strerror(-err));
		bm_cgroup__free(s->cg);
	}
	if (s->child.pidfd >= 0)
		close(s->child.pidfd);
	if (s->deadline_fd >= 0)
		close(s->deadline_fd);
	if (s->policy_fd >= 0)
		close(s->policy_fd);
	if (s->sigfd >= 0) {
		close(s->sigfd);
		sigprocmask(SIG_SETMASK, old, NULL);
	}
	bm_loader__free(s->loader);
}

int bm_run(struct bm_run_opts *o)
{
	struct run_state *s;
	char path[PATH_MAX];
	sigset_t old;
	int err, n, ret = BM_EXIT_INTERNAL;
	const int *join;

	sigemptyset(&old);
	bm_log_set_level(o->verbose ? BM_LOG_DEBUG : BM_LOG_INFO);
	bm_log_libbpf();
	s = calloc(1, sizeof(*s));
	if (!s) {
		bm_err("failed to start: out of memory");
		return BM_EXIT_INTERNAL;
	}
	s->o = o;
	s->sigfd = s->deadline_fd = s->policy_fd = s->child.pidfd = -1;
	for (n = 0; n < BM_V1__MAX; n++)
		s->ceil.join_fd[n] = -1;
	s->ceil.v1_cpu_dirfd = s->ceil.v1_mem_dirfd = s->ceil.v2_dirfd = -1;
	init_outcome(s);
	if (load_policy(s))
		goto out;
	err = bm_effect_resolve(o->argv[0], path, sizeof(path));
	if (err) {
		ret = not_runnable(s, -err);
		goto out;
	}
	if (setup_signals(s, &old) < 0 || prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		bm_err("failed to set up signal handling: %s", strerror(errno));
		goto out;
	}
	if (start(s))
		goto out;
	s->out.cgroup = s->cg->path;
	s->out.net_source = bm_loader__features(s->loader)->net;
	join = bm_ceilings_join_fds(&s->ceil, &n);
	err = bm_effect_spawn(s->cg->dirfd, join, n, o->argv, &s->child);
	if (err < 0) {
		bm_err("failed to start '%s' in %s: %s", o->argv[0], s->cg->path, strerror(-err));
		goto out;
	}
	if (err > 0) {
		ret = not_runnable(s, err);
		goto out;
	}
	err = wait_loop(s);
	if (err)
		bm_err("failed waiting for '%s': %s", o->argv[0], strerror(-err));
	finish(s);
	ret = bm_report_exit_status(&s->out);
out:
	cleanup(s, &old);
	free(s);
	return ret;
}
