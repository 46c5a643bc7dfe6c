// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The node agent's top: what it needs from the node, its one event loop
 * (single-threaded: the spawner forks, never this process) and what each
 * event is about, the effects' shared timer, and its teardown, which leaves
 * running effects metered for the next agent.
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
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "agent/admit.h"
#include "agent/adopt.h"
#include "agent/agent.h"
#include "agent/backoff.h"
#include "agent/export.h"
#include "agent/finish.h"
#include "agent/index.h"
#include "agent/place.h"
#include "agent/retain.h"
#include "agent/sample.h"
#include "agent/shim.h"
#include "agent/spawner.h"
#include "agent/watch.h"
#include "base/common.h"
#include "effect/egress.h"
#include "effect/policy_yaml.h"
#include "meter/preflight.h"

static void on_effect_timer(struct bm_agent *a, struct ag_effect *e)
{
	bm_sup__tick(&e->sup);
	ag_track_ladder(a, e);
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
			ag_shim_ended(a, e);
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
	ag_finish_begin(a);
	for (i = 0; i < n; i++) {
		e = ag_find_seq(a, due[i]);
		if (!e)
			continue;
		if (e->sup.deadline_at <= now)
			bm_sup__on_deadline(&e->sup);
		if (e->sup.timer_at <= now)
			on_effect_timer(a, e);	/* may free e */
	}
	/* the slice's outcomes in one transaction */
	ag_finish_end(a);
}

/*
 * Arm the one timer at the earliest of the effects' (no syscall if it did
 * not move). One due on the tick's grid, still ahead, is the tick's to run:
 * the ladder's looks (look_grid_ns) wake nothing of their own.
 */
static void arm_timers(struct bm_agent *a)
{
	struct ag_effect *e = ag_heap_top(a);
	uint64_t at = e ? ag_due(e) : UINT64_MAX;

	if (at != UINT64_MAX && at % AG_TICK_NS == 0 && at > bm_now_ns())
		at = UINT64_MAX;
	if (at == a->timers_at)
		return;
	a->timers_at = at;
	bm_timerfd_at(a->timers_fd, at);
}

/*
 * Ended effects past their retention are deleted at the start, then once a
 * minute, or once each retention if that is shorter: none outlives it by
 * more than that.
 */
#define RETAIN_TICKS (60 * BM_NSEC_PER_SEC / AG_TICK_NS)

static uint64_t retain_ticks(const struct bm_agent *a)
{
	uint64_t n = a->cfg.retention_ns / AG_TICK_NS;

	return n < 1 ? 1 : n > RETAIN_TICKS ? RETAIN_TICKS : n;
}

/* What an end made room for starts now, outside whatever ended it. */
static void dispatch_done(struct bm_agent *a)
{
	if (a->resched && !a->scheduling) {
		a->resched = false;
		ag_schedule(a);
	}
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
		(void)bm_loader__poll(a->loader, 0);
		break;
	case AG_TICK:
		if (read(a->tick_fd, &ticks, sizeof(ticks)) > 0) {
			ag_tick(a);
			run_timers(a);
			/* the node's room may have come back: the queue is looked at again */
			a->resched |= a->queue.n > 0;
			if (a->n_remains)
				ag_tend_remains(a);
			if (++a->ticks % retain_ticks(a) == 0)
				ag_retain(a);
		}
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
		ag_shim_ended(a, t->ptr);
		break;
	case AG_HOOK:
		t->fn(t->ptr);
		break;
	}
	dispatch_done(a);
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

/*
 * One agent owns a state dir: a second one would adopt the same effects.
 * The lock (flock) goes with the process, whatever kills it.
 */
static int lock_state(struct bm_agent *a)
{
	char path[PATH_MAX + 8], pid[32] = "";
	ssize_t n;
	int err;

	snprintf(path, sizeof(path), "%s/lock", a->cfg.state_dir);
	a->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (a->lock_fd < 0)
		return bm_err_errno(-errno, "failed to open %s", path);
	if (flock(a->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		err = -errno;
		if (err != -EWOULDBLOCK)
			return bm_err_errno(err, "failed to lock %s", path);
		n = pread(a->lock_fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		bm_err("another agent (pid %s) owns %s: stop it first, or give this one "
		       "--state-dir and --socket of its own", pid[0] ? pid : "?", a->cfg.state_dir);
		return -EBUSY;
	}
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(a->lock_fd, 0) < 0 || pwrite(a->lock_fd, pid, strlen(pid), 0) < 0)
		bm_warn("failed to write our pid into %s: %s", path, strerror(errno));
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
	struct bm_loader_opts lo = { .on_event = on_event, .ctx = a, .pin_dir = a->cfg.pin_dir,
				     .ring_bytes = a->cfg.ring_bytes };
	/* on the grid of AG_TICK_NS, where the effects' looks are put (arm_timers()) */
	uint64_t first = (bm_now_ns() / AG_TICK_NS + 1) * AG_TICK_NS;
	struct itimerspec its = { .it_interval.tv_nsec = AG_TICK_NS,
				  .it_value = { .tv_sec = first / BM_NSEC_PER_SEC, .tv_nsec = first % BM_NSEC_PER_SEC } };
	char err[512], exe[PATH_MAX];
	sigset_t mask;
	int ret;

	ret = bm_meter_preflight(err, sizeof(err));
	if (!ret)
		ret = ag_place_effects(a, err, sizeof(err));
	if (ret)
		return bm_err("%s", err), ret;
	ret = bm_bpffs_prepare(a->cfg.pin_dir, err, sizeof(err));
	if (ret < 0)
		return bm_err("%s", err), ret;
	if (ret)
		bm_info("mounted a BPF filesystem at %s (none was mounted)", BM_BPFFS_ROOT);
	/* first, while we are small: see spawner.h */
	ret = ag_place_spawner(a, shim_exe(exe, sizeof(exe)));
	if (ret)
		return ret;
	ret = make_dirs(a->cfg.state_dir);
	if (ret)
		return bm_err_errno(ret, "failed to create %s", a->cfg.state_dir);
	ret = lock_state(a);
	if (ret)
		return ret;
	a->store = bm_store__open(a->cfg.state_dir, err, sizeof(err));
	if (!a->store)
		return bm_err("failed to open the state store: %s", err), -EINVAL;
	a->loader = bm_loader__open(&lo);
	if (!a->loader)
		return bm_err_errno(-errno, "failed to load the meter (-v shows why)");
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
	(void)sigprocmask(SIG_BLOCK, &mask, NULL);
	a->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	a->tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	a->timers_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	a->timers_at = UINT64_MAX;
	if (!a->exp || a->epfd < 0 || a->sigfd < 0 || a->tick_fd < 0 || a->timers_fd < 0)
		return bm_err_errno(-errno, "failed to set up the event loop");
	(void)timerfd_settime(a->tick_fd, TFD_TIMER_ABSTIME, &its, NULL);
	ag_watch(a, a->sigfd, &a->t_sig, AG_SIGNAL, NULL);
	ag_watch(a, bm_loader__event_fd(a->loader), &a->t_rb, AG_RINGBUF, NULL);
	ag_watch(a, a->tick_fd, &a->t_tick, AG_TICK, NULL);
	ag_watch(a, a->timers_fd, &a->t_timers, AG_TIMERS, NULL);
	if (a->spawner)
		ag_watch(a, bm_spawner__fd(a->spawner), &a->t_spawner, AG_SPAWNER, NULL);
	return 0;
}

int bm_agent_preflight(const struct bm_agent_cfg *cfg)
{
	struct bm_agent *a = calloc(1, sizeof(*a));
	char err[512];
	int ret;

	if (!a)
		return bm_err("failed to check the node: out of memory"), -ENOMEM;
	a->cfg = *cfg;
	ret = bm_meter_preflight(err, sizeof(err));
	if (!ret)
		ret = ag_place_effects(a, err, sizeof(err));
	if (ret)
		bm_err("%s", err);
	if (!ret && a->cfg.policy[0]) {
		struct bm_policy pol;

		ret = bm_policy_load_file(a->cfg.policy, "-", "-", &pol, err, sizeof(err));
		if (ret)
			bm_err("invalid policy: %s", ret == -EINVAL ? err : strerror(-ret));
	}
	if (!ret) {
		ret = bm_bpffs_prepare(a->cfg.pin_dir, err, sizeof(err));
		if (ret < 0)
			bm_err("%s", err);
		else
			bm_info("node ready: BTF, %s cgroups, effects under %s, a BPF filesystem for %s%s",
				a->env.mode == BM_CG_HYBRID ? "hybrid" : "v2", a->parent, a->cfg.pin_dir,
				ret ? " (mounted now)" : "");
	}
	free(a);
	return ret < 0 ? ret : 0;
}

struct bm_agent *bm_agent_new(const struct bm_agent_cfg *cfg)
{
	struct bm_agent *a = calloc(1, sizeof(*a));

	if (!a) {
		bm_err("failed to start the agent: out of memory");
		return NULL;
	}
	a->cfg = *cfg;
	a->epfd = a->sigfd = a->tick_fd = a->timers_fd = a->lock_fd = -1;
	a->pressure.cpu_fd = a->pressure.mem_fd = -1;
	if (setup(a)) {
		bm_agent_free(a);
		return NULL;
	}
	return a;
}

int bm_agent_loop(struct bm_agent *a)
{
	struct epoll_event ev[64];
	int n, i, err = 0;

	ag_adopt(a);
	ag_retain(a);
	ag_schedule(a);
	bm_info("agent ready: API on %s, /metrics on %s, state in %s%s", a->cfg.socket,
		a->cfg.metrics[0] ? a->cfg.metrics : "(off)", a->cfg.state_dir,
		bm_loader__adopted(a->loader) ? " (meter adopted from pins)" : "");
	bm_info("try: curl --unix-socket %s http://localhost/v1/healthz, or "
		"burstmeter run -- CMD (it goes through the agent); Ctrl-C stops it", a->cfg.socket);
	while (!a->stopping) {
		arm_timers(a);
		n = epoll_wait(a->epfd, ev, BM_ARRAY_SIZE(ev),
			       a->hooks.timeout_ms ? a->hooks.timeout_ms(a->hooks.ctx) : -1);
		if (n < 0 && errno != EINTR) {
			err = bm_err_errno(-errno, "epoll_wait");
			break;
		}
		for (i = 0; i < n; i++) {
			dispatch(a, ev[i].data.ptr);
			/* between any two slices of work: the ring buffer holds ~18,700 records */
			(void)bm_loader__consume(a->loader);
		}
		/* the layer above has timers of its own (MHD: timeouts, resumed connections) */
		if (a->hooks.run) {
			a->hooks.run(a->hooks.ctx);
			dispatch_done(a);
		}
	}
	if (!err)
		bm_info("agent stopping: %u effects running stay metered for the next agent",
			a->running);
	drain_launches(a);
	return err;
}

void bm_agent_free(struct bm_agent *a)
{
	bool idle;

	if (!a)
		return;
	idle = !a->n_eff;
	/* effects still running stay metered (pinned) for the next agent to adopt */
	while (a->n_eff) {
		struct ag_effect *e = a->eff[0];

		if (e->sup.cg) {
			e->sup.cg = NULL;	/* their cgroups are not ours to remove */
			(void)bm_sup__release(&e->sup);
		}
		if (e->shim.pidfd >= 0)
			close(e->shim.pidfd);
		ag_free_effect(a, e);
	}
	ag_index_free(a);
	ag_backoff_free(a);
	ag_free_remains(a);
	if (idle && a->loader)
		(void)bm_loader__unpin(a->loader);
	bm_loader__free(a->loader);
	bm_spawner__free(a->spawner);
	if (idle)
		ag_place_release(a);
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
	if (a->pressure.cpu_fd >= 0)
		close(a->pressure.cpu_fd);
	if (a->pressure.mem_fd >= 0)
		close(a->pressure.mem_fd);
	/* last: the next agent may have the state dir once everything of ours is closed */
	if (a->lock_fd >= 0)
		close(a->lock_fd);
	free(a->eff);
	free(a);
}
