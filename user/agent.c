// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The node agent's core: the effect registry, admission, the lives of the
 * effects (start under a shim, ladder, drain, outcome), re-adoption after
 * a restart, and the one event loop everything runs in (single-threaded,
 * so forking a shim is safe).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "common.h"
#include "export.h"
#include "policy_yaml.h"
#include "preflight.h"
#include "egress.h"
#include "spawner.h"

/* Streams and timelines are sampled this often: well inside the meter's 16-window ring. */

static void ag_watch(struct bm_agent *a, int fd, struct ag_tag *t, enum ag_kind kind, void *ptr)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = t };

	t->kind = kind;
	t->ptr = ptr;
	if (fd >= 0 && epoll_ctl(a->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		bm_warn("failed to watch fd %d: %s", fd, strerror(errno));
}

static void ag_unwatch(struct bm_agent *a, int fd)
{
	if (fd >= 0)
		epoll_ctl(a->epfd, EPOLL_CTL_DEL, fd, NULL);
}

static int64_t wall_ms(void)
{
	return (int64_t)(bm_wall_ns() / BM_NSEC_PER_MSEC);
}

static void set_state(struct bm_agent *a, struct ag_effect *e, enum bm_state st)
{
	json_t *line;

	if (e->state == st)
		return;
	e->state = st;
	if (!bm_state_final(st))
		bm_store__transition(a->store, e->tenant, e->req.id, st, wall_ms());
	line = json_pack("{s:s, s:s, s:I}", "type", "state", "state", bm_state_name(st), "at_ms",
			 (json_int_t)wall_ms());
	ag_stream_push(e, line);
}

/* The ladder's current step, as a lifecycle state. */
static void track_ladder(struct bm_agent *a, struct ag_effect *e)
{
	enum bm_state st = BM_ST_RUNNING;
	json_t *line;

	if (e->sup.act.frozen || (e->sup.act.duty && e->sup.act.duty_frozen && !e->sup.act.throttled))
		st = BM_ST_FROZEN;
	else if (e->sup.act.throttled)
		st = BM_ST_THROTTLED;
	if (e->state == BM_ST_RUNNING || e->state == BM_ST_THROTTLED || e->state == BM_ST_FROZEN)
		set_state(a, e, st);
	while (e->actions_sent < e->sup.out.n_actions) {
		const struct bm_action *x = &e->sup.out.actions[e->actions_sent++];

		line = json_pack("{s:s, s:f, s:s, s:s, s:f, s:f}", "type", "action", "at_ms", x->at_ms, "action",
				 x->action, "reason", x->reason, "observed", x->observed, "threshold", x->threshold);
		ag_stream_push(e, line);
		bm_export__action(a->exp, e->tenant, e->tool, x->action, x->reason);
	}
}

/* Mirror of report.c's exit status: which final state an outcome is. */
static enum bm_state final_state(const struct bm_outcome *o)
{
	switch (o->reason) {
	case BM_REASON_COMPLETED:
		return BM_ST_SUCCEEDED;
	case BM_REASON_CANCELLED:
		return BM_ST_CANCELLED;
	case BM_REASON_DEADLINE:
		return BM_ST_DEADLINE_EXCEEDED;
	case BM_REASON_MEMORY_CEILING:
	case BM_REASON_PIDS_CEILING:
	case BM_REASON_CPU_CEILING:
	case BM_REASON_NET_CEILING:
		return BM_ST_KILLED;
	default:
		return BM_ST_FAILED;
	}
}

static void free_effect(struct bm_agent *a, struct ag_effect *e)
{
	unsigned int i;

	for (i = 0; i < a->n_eff; i++) {
		if (a->eff[i] == e) {
			a->eff[i] = a->eff[--a->n_eff];
			break;
		}
	}
	ag_index_del(a, e);
	ag_streams_end(a, e);
	bm_request_free(&e->req);
	bm_series_free(&e->series);
	free(e);
}

/* The effect is done: outcome, store, metrics, streams; then forget it. */
void ag_finish_effect(struct bm_agent *a, struct ag_effect *e)
{
	struct bm_outcome *o = &e->sup.out;
	enum bm_state st;
	char *text;
	json_t *j;
	int err;

	ag_sample(a, e);
	bm_sup__finish(&e->sup);
	ag_egress_forget(a, e);
	track_ladder(a, e);
	ag_retry_backoff(a, e);
	j = bm_outcome_json(o);
	if (j && bm_series_len(&e->series))
		json_object_set_new(j, "timeline", ag_timeline_json(&e->series));
	text = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
	st = final_state(o);
	err = text ? bm_store__finish(a->store, e->tenant, e->req.id, text, st, wall_ms()) : -ENOMEM;
	if (err)
		bm_err("failed to store the outcome of %s/%s: %s", e->tenant, e->req.id, strerror(-err));
	ag_export_outcome(a, e);
	set_state(a, e, st);
	if (j)
		ag_stream_push(e, json_pack("{s:s, s:O}", "type", "outcome", "outcome", j));
	json_decref(j);
	free(text);
	ag_unwatch(a, e->shim.pidfd);
	err = bm_sup__release(&e->sup);
	if (err)
		bm_err("failed to remove the cgroup of %s/%s: %s", e->tenant, e->req.id, strerror(-err));
	if (e->shim.pidfd >= 0)
		close(e->shim.pidfd);
	unlink(e->status_path);
	if (e->started)
		a->running--;
	free_effect(a, e);
	/* what freed room may start now (unless this is a start that failed, inside the scheduler) */
	if (!a->scheduling)
		ag_schedule(a);
}

/* A shim ended: the command's status is in its file (or lost, if the shim was killed). */
static void on_shim(struct bm_agent *a, struct ag_effect *e)
{
	siginfo_t si = { 0 };
	int status = -1;

	ag_set_shim_id(a, e, 0);
	if (e->shim.pidfd >= 0) {
		/* reaps it where it is ours (forked without a spawner) */
		waitid(P_PIDFD, (id_t)e->shim.pidfd, &si, WEXITED | WNOHANG);
		ag_unwatch(a, e->shim.pidfd);
	}
	if (e->req.mode == BM_REQ_ATTACH) {
		/* its status is the caller's, who reaps it: give the caller a moment to say */
		e->exit_wait_ns = bm_now_ns() + 2 * BM_NSEC_PER_SEC;
		return;
	}
	if (bm_effect_shim_status(e->status_path, &status))
		status = -1;
	bm_sup__exited(&e->sup, status);
}

static void on_effect_timer(struct bm_agent *a, struct ag_effect *e)
{
	bm_sup__tick(&e->sup);
	track_ladder(a, e);
	if (bm_sup__done(&e->sup))
		ag_finish_effect(a, e);
}

static void on_event(const struct bm_event *ev, void *ctx)
{
	struct bm_agent *a = ctx;
	struct ag_effect *e = ag_find_cg(a, ev->cgid);

	if (e)
		bm_sup__event(&e->sup, ev);
}

void ag_watch_effect(struct bm_agent *a, struct ag_effect *e)
{
	ag_watch(a, e->shim.pidfd, &e->t_shim, AG_EFF_SHIM, e);
}

void ag_spawner_gone(struct bm_agent *a)
{
	struct bm_spawner_msg died = { .ret = -ECONNRESET };
	unsigned int i;

	bm_warn("the spawner is gone: the agent forks its shims itself from now on");
	ag_unwatch(a, bm_spawner__fd(a->spawner));
	bm_spawner__free(a->spawner);
	a->spawner = NULL;
	/* downward: a launch that fails here frees its effect, swapped for the last (seen already) */
	for (i = a->n_eff; i-- > 0;) {
		struct ag_effect *e;

		if (i >= a->n_eff)
			continue;
		e = a->eff[i];
		/* unanswered: whatever it started dies with its cgroup */
		if (e->launching) {
			ag_launched(a, e, &died);
			continue;
		}
		if (!e->shim_id)
			continue;
		ag_set_shim_id(a, e, 0);
		/* not ours to reap: gone already (ESRCH), or watched from here on */
		e->shim.pidfd = (int)syscall(SYS_pidfd_open, e->shim.pid, 0);
		if (e->shim.pidfd < 0)
			on_shim(a, e);
		else
			ag_watch_effect(a, e);
	}
}

/*
 * What the spawner says: launches answered (by their effect's seq), shims
 * ended (by their id). A slice at a time: when thousands end together, the
 * ring buffer and the API get their turns between slices (the socket stays
 * readable for the rest).
 */
static void spawner_msgs(struct bm_agent *a, unsigned int max)
{
	struct bm_spawner_msg m;
	struct ag_effect *e;
	int r = 0;

	while (max-- && a->spawner && (r = bm_spawner__next(a->spawner, &m)) > 0) {
		e = m.exited ? ag_find_shim(a, m.shim_id) : ag_find_seq(a, m.tag);
		if (e && !m.exited && !e->launching)
			e = NULL;
		if (e && m.exited)
			on_shim(a, e);
		else if (e)
			ag_launched(a, e, &m);
	}
	if (a->spawner && r < 0)
		ag_spawner_gone(a);
}

/*
 * Launches under way are answered before we go: an effect the next agent
 * finds in the store is queued (never started) or running, not both. A
 * spawner that does not answer in time leaves them queued.
 */
static void drain_launches(struct bm_agent *a)
{
	uint64_t until = bm_now_ns() + 5 * BM_NSEC_PER_SEC;
	struct pollfd p = { .events = POLLIN };
	unsigned int i, n;

	while (a->spawner && bm_now_ns() < until) {
		for (i = n = 0; i < a->n_eff; i++)
			n += a->eff[i]->launching;
		if (!n)
			break;
		p.fd = bm_spawner__fd(a->spawner);
		poll(&p, 1, 100);
		spawner_msgs(a, UINT_MAX);
	}
}

/*
 * Run the effects' timers that are due, the earliest first (a->heap). Those
 * due now are taken by their seq first: running one may end it, or start
 * another, which is due at once and runs with the next arming.
 */
static void run_timers(struct bm_agent *a)
{
	uint64_t now = bm_now_ns(), due[AG_SLICE];
	struct ag_effect *e;
	unsigned int n = 0, i;

	/* a slice: the rest stay due, and the timer fires again at once */
	while (n < AG_SLICE && (e = ag_heap_top(a)) && ag_due(e) <= now) {
		due[n++] = e->seq;
		/* out of the heap while it runs: moving its timers puts it back */
		ag_heap_pop(a);
	}
	for (i = 0; i < n; i++) {
		e = ag_find_seq(a, due[i]);
		if (!e)
			continue;
		if (e->sup.deadline_at <= now)
			bm_sup__on_deadline(&e->sup);
		if (e->sup.timer_at <= now)
			on_effect_timer(a, e);	/* may free e */
	}
}

/* Arm the one timer at the earliest of the effects' (no syscall if it did not move). */
static void arm_timers(struct bm_agent *a)
{
	struct ag_effect *e = ag_heap_top(a);
	uint64_t at = e ? ag_due(e) : UINT64_MAX;

	if (at == a->timers_at)
		return;
	a->timers_at = at;
	bm_timerfd_at(a->timers_fd, at);
}

static void dispatch(struct bm_agent *a, struct ag_tag *t)
{
	struct signalfd_siginfo si;
	uint64_t ticks;

	switch (t->kind) {
	case AG_SIGNAL:
		while (read(a->sigfd, &si, sizeof(si)) == sizeof(si))
			if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
				a->stopping = true;
		break;
	case AG_RINGBUF:
		bm_loader__poll(a->loader, 0);
		break;
	case AG_API:
	case AG_METRICS:
		ag_api_run(a);
		break;
	case AG_TICK:
		if (read(a->tick_fd, &ticks, sizeof(ticks)) > 0)
			ag_tick(a);
		break;
	case AG_TIMERS:
		if (read(a->timers_fd, &ticks, sizeof(ticks)) > 0) {
			/* it fired: whatever arms it next must set it again */
			a->timers_at = UINT64_MAX;
			run_timers(a);
		}
		break;
	case AG_SPAWNER:
		spawner_msgs(a, AG_SLICE);
		break;
	case AG_EFF_SHIM:
		on_shim(a, t->ptr);
		break;
	}
}

/* state_dir (and its parents) and its run/ (shim status files) and logs/ (effects' output). */
static int make_dirs(const char *state)
{
	static const char *const sub[] = { "", "/run", "/logs" };
	char path[PATH_MAX], *p;
	unsigned int i;

	if (snprintf(path, sizeof(path), "%s", state) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	for (p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	for (i = 0; i < BM_ARRAY_SIZE(sub); i++) {
		if (snprintf(path, sizeof(path), "%s%s", state, sub[i]) >= (int)sizeof(path))
			return -ENAMETOOLONG;
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return -errno;
	}
	return 0;
}

/* bm-shim beside our binary, or our binary itself (it runs `bm-shim --ready` too, slower to start). */
static const char *shim_exe(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - sizeof("/" BM_SHIM_ARGV0));
	char *slash;

	if (n <= 0)
		return "/proc/self/exe";
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash)
		return "/proc/self/exe";
	strcpy(slash + 1, BM_SHIM_ARGV0);
	if (!access(buf, X_OK))
		return buf;
	bm_warn("no %s: shims start from the agent's own binary, ~4x slower (install %s beside it)",
		buf, BM_SHIM_ARGV0);
	return "/proc/self/exe";
}

static int setup(struct bm_agent *a)
{
	/*
	 * 1 MiB of ring buffer (~18,700 records): 10,000 effects ending together
	 * send one each within a few hundred ms, and 256 KiB lost half of them
	 * while the agent finished the first ones.
	 */
	struct bm_loader_opts lo = { .on_event = on_event, .ctx = a, .pin_dir = a->cfg.pin_dir,
				     .ring_bytes = 1u << 20 };
	struct itimerspec its = { .it_interval.tv_nsec = AG_TICK_NS, .it_value.tv_nsec = AG_TICK_NS };
	char err[512], exe[PATH_MAX];
	sigset_t mask;
	int ret;

	ret = bm_meter_preflight(err, sizeof(err));
	if (!ret)
		ret = bm_cgroup_preflight(&a->env, a->parent, sizeof(a->parent), err, sizeof(err));
	if (ret)
		return bm_err("%s", err), ret;
	ret = bm_bpffs_prepare(a->cfg.pin_dir, err, sizeof(err));
	if (ret < 0)
		return bm_err("%s", err), ret;
	if (ret)
		bm_info("mounted a BPF filesystem at %s (none was mounted)", BM_BPFFS_ROOT);
	/* first, while we are small: see spawner.h */
	a->spawner = bm_spawner__start(shim_exe(exe, sizeof(exe)));
	if (!a->spawner)
		bm_warn("no spawner (%s): the agent forks its shims itself", strerror(errno));
	ret = make_dirs(a->cfg.state_dir);
	if (ret)
		return bm_err("failed to create %s: %s", a->cfg.state_dir, strerror(-ret)), ret;
	a->store = bm_store__open(a->cfg.state_dir, err, sizeof(err));
	if (!a->store)
		return bm_err("failed to open the state store: %s", err), -EINVAL;
	a->loader = bm_loader__open(&lo);
	if (!a->loader)
		return bm_err("failed to load the meter: %s (-v shows why)", strerror(errno)), -errno;
	a->egress = bm_egress__open();
	if (!a->egress)
		bm_warn("no egress filter (%s): effects with network_policy egress_restricted or "
			"egress_allow_list will not start", strerror(errno));
	if (a->cfg.policy[0]) {
		struct bm_policy pol;

		ret = bm_policy_load_file(a->cfg.policy, "-", "-", &pol, err, sizeof(err));
		if (ret)
			return bm_err("invalid policy: %s", ret == -EINVAL ? err : strerror(-ret)), ret;
	}
	a->exp = bm_export__new(a->cfg.max_metric_tenants, a->cfg.max_tools);
	a->epfd = epoll_create1(EPOLL_CLOEXEC);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGPIPE);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	a->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	a->tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	a->timers_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	a->timers_at = UINT64_MAX;
	if (!a->exp || a->epfd < 0 || a->sigfd < 0 || a->tick_fd < 0 || a->timers_fd < 0)
		return bm_err("failed to set up the event loop: %s", strerror(errno)), -errno;
	timerfd_settime(a->tick_fd, 0, &its, NULL);
	ag_watch(a, a->sigfd, &a->t_sig, AG_SIGNAL, NULL);
	ag_watch(a, bm_loader__event_fd(a->loader), &a->t_rb, AG_RINGBUF, NULL);
	ag_watch(a, a->tick_fd, &a->t_tick, AG_TICK, NULL);
	ag_watch(a, a->timers_fd, &a->t_timers, AG_TIMERS, NULL);
	if (a->spawner)
		ag_watch(a, bm_spawner__fd(a->spawner), &a->t_spawner, AG_SPAWNER, NULL);
	return ag_api_start(a);
}

static void teardown(struct bm_agent *a)
{
	bool idle;

	drain_launches(a);
	idle = !a->n_eff;
	ag_api_stop(a);
	/* effects still running stay metered (pinned) for the next agent to adopt */
	while (a->n_eff) {
		struct ag_effect *e = a->eff[0];

		if (e->sup.cg) {
			e->sup.cg = NULL;	/* their cgroups are not ours to remove */
			bm_sup__release(&e->sup);
		}
		if (e->shim.pidfd >= 0)
			close(e->shim.pidfd);
		free_effect(a, e);
	}
	ag_index_free(a);
	if (idle && a->loader)
		bm_loader__unpin(a->loader);
	bm_loader__free(a->loader);
	bm_spawner__free(a->spawner);
	/* its filters stay attached to the effects that outlive us */
	bm_egress__free(a->egress);
	bm_store__free(a->store);
	bm_export__free(a->exp);
	if (a->epfd >= 0)
		close(a->epfd);
	if (a->sigfd >= 0)
		close(a->sigfd);
	if (a->tick_fd >= 0)
		close(a->tick_fd);
	if (a->timers_fd >= 0)
		close(a->timers_fd);
	free(a->eff);
}

int bm_agent_run(const struct bm_agent_cfg *cfg)
{
	struct epoll_event ev[64];
	struct bm_agent *a;
	int n, i, ret = 1;

	a = calloc(1, sizeof(*a));
	if (!a)
		return 1;
	a->cfg = *cfg;
	a->epfd = a->sigfd = a->tick_fd = a->timers_fd = a->listen_fd = a->metrics_fd = -1;
	if (setup(a))
		goto out;
	ag_adopt(a);
	ag_schedule(a);
	bm_info("agent ready: API on %s, /metrics on %s, state in %s%s", a->cfg.socket,
		a->cfg.metrics[0] ? a->cfg.metrics : "(off)", a->cfg.state_dir,
		bm_loader__adopted(a->loader) ? " (meter adopted from pins)" : "");
	bm_info("try: curl --unix-socket %s http://localhost/v1/healthz, or "
		"burstmeter run -- CMD (it goes through the agent); Ctrl-C stops it", a->cfg.socket);
	while (!a->stopping) {
		arm_timers(a);
		n = epoll_wait(a->epfd, ev, BM_ARRAY_SIZE(ev), ag_api_timeout_ms(a));
		if (n < 0 && errno != EINTR) {
			bm_err("epoll_wait: %s", strerror(errno));
			goto out;
		}
		for (i = 0; i < n; i++) {
			dispatch(a, ev[i].data.ptr);
			/* between any two slices of work: the ring buffer holds ~18,700 records */
			bm_loader__consume(a->loader);
		}
		/* MHD has timers of its own (timeouts, resumed connections) */
		ag_api_run(a);
	}
	ret = 0;
	bm_info("agent stopping: %u effects running stay metered for the next agent", a->running);
out:
	teardown(a);
	free(a);
	return ret;
}
