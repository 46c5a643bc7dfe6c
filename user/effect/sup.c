// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/common.h"
#include "base/du.h"
#include "effect/cpuplace.h"
#include "effect/name.h"
#include "effect/sup.h"

/* A freed task is reported an RCU grace period after its exit; this is plenty. */
#define DRAIN_TIMEOUT_NS (1000 * BM_NSEC_PER_MSEC)
#define KILL_TIMEOUT_NS (2000 * BM_NSEC_PER_MSEC)
/*
 * While leftovers die and the meter drains, look after 2 ms, then twice as
 * long each time up to 32 ms (the DRAINED record ends the wait at once).
 * Every 2 ms for each of 10,000 effects ending together was 5 million
 * looks a second: the agent did little else and took 69 s to finish them.
 */
#define PHASE_POLL_NS (2 * BM_NSEC_PER_MSEC)
#define PHASE_POLL_MAX_NS (32 * BM_NSEC_PER_MSEC)

static const enum bm_reason pdim_reason[BM_P__MAX] = {
	[BM_P_CPU] = BM_REASON_CPU_CEILING, [BM_P_MEM] = BM_REASON_MEMORY_CEILING,
	[BM_P_PIDS] = BM_REASON_PIDS_CEILING, [BM_P_NET] = BM_REASON_NET_CEILING,
	[BM_P_IO] = BM_REASON_IO_CEILING,
};

static const int pdim_dim[BM_P__MAX] = {
	[BM_P_CPU] = BM_DIM_CPU, [BM_P_MEM] = BM_DIM_MEM, [BM_P_PIDS] = BM_DIM_PIDS,
	[BM_P_NET] = BM_DIM_NET, [BM_P_IO] = BM_DIM_IO_WRITE,
};

/* How often its ephemeral storage is looked at: a statfs, cheap; tmpfs fills at GB/s. */
#define STORAGE_POLL_NS (20 * BM_NSEC_PER_MSEC)
/* Its workspace is walked (du) at most this often, and never more than a tenth of the time. */
#define WS_POLL_NS (100 * BM_NSEC_PER_MSEC)
/* A walk looks at this many entries at most (on its own thread: a walk costs a CPU). */
#define WS_MAX_ENTRIES (1U << 20)
#define TMPFS_MAGIC_ 0x01021994

static void ws_walk(struct bm_sup *s);

const struct bm_sup_ops bm_sup_kernel = {
	.now_ns = bm_now_ns,
	.cg_create = bm_cgroup__create,
	.cg_remove = bm_cgroup__remove,
	.cg_remove_try = bm_cgroup__remove_try,
	.add = bm_loader__add,
	.arm = bm_loader__arm,
	.read = bm_loader__read,
	.claim = bm_loader__claim,
	.watch = bm_loader__watch,
	.del = bm_loader__del,
	.stats = bm_loader__stats,
	.features = bm_loader__features,
	.alias = bm_loader__alias,
};

void bm_sup_places(struct bm_sup_opts *so, const struct bm_sandbox *sb, const char *cwd)
{
	int n = 0;

	so->limits.storage_bytes = sb->max_ephemeral_storage;
	so->workspace = sb->max_ephemeral_storage && *bm_sandbox_workspace(sb) ? sb->workspace : NULL;
	so->io_paths[n++] = cwd;
	if (*bm_sandbox_workspace(sb))
		so->io_paths[n++] = sb->workspace;
	if (!sb->read_only_root_fs && !sb->max_ephemeral_storage)
		so->io_paths[n++] = "/tmp";
	so->io_paths[n] = NULL;
}

void bm_sup__init(struct bm_sup *s)
{
	int i;

	memset(s, 0, sizeof(*s));
	s->ops = &bm_sup_kernel;
	s->deadline_fd = s->timer_fd = s->child.pidfd = s->child.status_fd = -1;
	s->deadline_at = s->timer_at = UINT64_MAX;
	for (i = 0; i < BM_V1__MAX; i++)
		s->ceil.join_fd[i] = -1;
	s->ceil.v1_cpu_dirfd = s->ceil.v1_mem_dirfd = s->ceil.v2_dirfd = s->ceil.v1_blkio_dirfd = -1;
	s->ceil.cpuset_dirfd = -1;
	s->out.psi_cpu_us = s->out.psi_mem_us = s->out.psi_io_us = -1;
	s->out.storage_peak_bytes = -1;
	for (i = 0; i < BM_MEMEV__MAX; i++)
		s->out.mem_events[i] = -1;
}

/* The ladder's (and the drain's) timer and the deadline: the due time, and the timerfd if there is one. */
static void arm_timer(struct bm_sup *s, uint64_t at_ns)
{
	s->timer_at = at_ns;
	if (s->timer_fd >= 0)
		bm_timerfd_at(s->timer_fd, at_ns);
	if (s->o.timers_moved)
		s->o.timers_moved(s->o.timers_ctx);
}

static void arm_deadline(struct bm_sup *s, uint64_t at_ns)
{
	s->deadline_at = at_ns;
	if (s->deadline_fd >= 0)
		bm_timerfd_at(s->deadline_fd, at_ns);
	if (s->o.timers_moved)
		s->o.timers_moved(s->o.timers_ctx);
}

static int make_timers(struct bm_sup *s);

/* A v1 blkio twin's I/O is the effect's: tell the meter, which cannot see it from the bio. */
static void tell_twin(struct bm_sup *s)
{
	uint64_t id;

	if (s->ceil.v1_blkio_dirfd < 0 || !s->ops->alias || bm_cgroup_id(s->ceil.v1_blkio_dirfd, &id))
		return;
	if (!s->ops->alias(s->loader, id, s->cg->id))
		s->blkio_twin_id = id;
	else
		s->out.io_attribution = "submitter";
}

/* The level (display units) at which the kernel wakes the ladder for p: its soft level, or near its ceiling. */
static double wake_level(const struct bm_sup *s, int p)
{
	const struct bm_dim_rule *r = &s->o.policy.dim[p];
	double lvl = r->soft && (!r->hard || r->soft < r->hard) ? r->soft : r->hard;

	/* wake near a ceiling: from there on the ladder looks every window */
	return r->ceiling && lvl == r->hard ? 0.9 * r->hard : lvl;
}

/* Crossing thresholds (per window) and kernel kill levels from the policy. */
static void kernel_levels(struct bm_sup *s, uint64_t thresh[BM_DIM__MAX], uint64_t kill_at[BM_DIM__MAX])
{
	double W = (double)s->o.window_ns, t;
	int p;

	memset(thresh, 0, sizeof(uint64_t) * BM_DIM__MAX);
	memset(kill_at, 0, sizeof(uint64_t) * BM_DIM__MAX);
	for (p = 0; p < BM_P__MAX; p++) {
		const struct bm_dim_rule *r = &s->o.policy.dim[p];
		double lvl = wake_level(s, p);
		int d = pdim_dim[p];

		if (!lvl)
			continue;
		t = p == BM_P_CPU ? lvl * W : p == BM_P_NET || p == BM_P_IO ? lvl * W / 1e9 : lvl;
		/*
		 * Rounded up: what crosses it is at the level, so evaluate() finds
		 * it near. Rounded down, 28 tasks crossed 28.8 (0.9 of 32), looked
		 * not near, and a fork bomb that reached 32 inside that window,
		 * where the pids controller held it, was never looked at again.
		 */
		thresh[d] = (uint64_t)t;
		if ((double)thresh[d] < t || !thresh[d])
			thresh[d]++;
		/* I/O is reads plus writes: either alone at the level wakes the ladder */
		if (p == BM_P_IO)
			thresh[BM_DIM_IO_READ] = thresh[d];
		/* past a ceiling no controller holds, the kernel kills on the spot */
		if (r->ceiling && !s->ceil.controller[p] && !s->o.no_fast_path)
			kill_at[d] = (uint64_t)r->hard + 1;
	}
}

static void init_outcome(struct bm_sup *s)
{
	struct bm_outcome *out = &s->out;

	out->id = s->o.id;
	out->tenant = s->o.tenant;
	out->intent = s->o.intent;
	out->argv = s->o.argv;
	out->expect = s->o.expect;
	out->traceparent = s->o.traceparent;
	out->limits = s->o.limits;
	out->sandbox = s->o.sandbox;
	out->started_wall_ns = bm_wall_ns();
}

void bm_sup__prepare(struct bm_sup *s, struct bm_loader *l, const struct bm_sup_opts *o)
{
	int p;

	s->o = *o;
	s->loader = l;
	/* soft levels up to what the call declared (where the policy lets it), before the ceilings */
	bm_expect_widen(o->expect, &s->o.policy);
	bm_policy_ceilings(&s->o.policy, o->limits.cpu_milli / 1000.0, (double)o->limits.memory_bytes,
			   (double)o->limits.pids);
	if (o->limits.storage_bytes) {
		s->out.storage_where = "/tmp";
		s->out.storage_places[s->out.n_storage_places++] =
			(struct bm_storage_place){ .where = "/tmp", .peak_bytes = -1 };
	}
	if (o->limits.storage_bytes && o->workspace)
		s->out.storage_places[s->out.n_storage_places++] =
			(struct bm_storage_place){ .where = o->workspace, .peak_bytes = -1 };
	for (p = 0; p < BM_P__MAX; p++)
		s->acting |= s->o.policy.dim[p].soft > 0 || s->o.policy.dim[p].hard > 0;
	bm_ladder_init(&s->lad);
	init_outcome(s);
	/* ids and tenants were checked as names: this fits */
	(void)bm_effect_name(o->tenant, o->id, s->name, sizeof(s->name));
}

int bm_sup__start(struct bm_sup *s, struct bm_loader *l, const struct bm_cgroup_env *env,
		  const char *parent_dir, const struct bm_sup_opts *o)
{
	const struct bm_limits none = { 0 }, *lim = o->meter_only ? &none : &o->limits;
	uint64_t thresh[BM_DIM__MAX], kill_at[BM_DIM__MAX];
	unsigned int cpu_flags = 0;
	char list[32];
	bool io_throttle;
	int err, p;

	bm_sup__prepare(s, l, o);
	s->failed_step = "create the cgroup";
	s->cg = s->ops->cg_create(parent_dir, s->name);
	if (!s->cg)
		return -errno;
	s->out.cgroup = s->cg->path;
	s->failed_step = "set the ceilings";
	if (!o->meter_only && (s->o.policy.dim[BM_P_CPU].steps & BM_STEP_BIT(BM_STEP_THROTTLE)))
		cpu_flags |= BM_CEIL_CPU_THROTTLE;
	if (!o->meter_only && o->cpu_cap)
		cpu_flags |= BM_CEIL_CPU_CAP;
	else if (!o->meter_only && o->cpu_yield)
		cpu_flags |= BM_CEIL_CPU_THROTTLE;
	err = bm_ceilings_apply(env, s->cg, s->name, lim, cpu_flags, s->ops->cgfs, &s->ceil);
	if (err)
		return err;
	/* "1 (cgroup v1 cpuset.cpus)": where its ceiling confined it */
	if (s->ceil.cpus_held && !bm_cpulist_format(&s->ceil.cpus, list, sizeof(list)))
		(void)snprintf(s->out.cpus, sizeof(s->out.cpus), "%s (%s)", list, s->ceil.cpus_mech);
	io_throttle = !o->meter_only && (s->o.policy.dim[BM_P_IO].steps & BM_STEP_BIT(BM_STEP_THROTTLE));
	err = bm_ceilings_io_apply(env, s->cg, s->name, lim, io_throttle, s->o.io_paths, &s->ceil);
	if (err)
		return err;
	for (p = 0; o->meter_only && p < BM_P__MAX; p++)
		s->ceil.mech[p] = s->o.policy.dim[p].hard ? "meter" : NULL;
	memcpy(s->out.ceiling_mech, s->ceil.mech, sizeof(s->out.ceiling_mech));
	memcpy(s->out.io_mech, s->ceil.io_mech, sizeof(s->out.io_mech));
	s->out.io_attribution = s->ceil.io_attribution;
	if (o->limits.storage_bytes)
		s->out.storage_mech = o->workspace ? "tmpfs size (ENOSPC) on /tmp + the workspace's growth "
						     "walked (du): storage_ceiling when together full"
						   : "tmpfs size (ENOSPC) + meter: storage_ceiling when full";
	/*
	 * Its workspace's first walk, begun now, is the base: what it writes
	 * there from then on is the growth (what it writes while that first
	 * walk runs, a tree's worth of fstatat, counts as the base).
	 */
	ws_walk(s);
	s->out.net_source = bm_net_source_name(s->ops->features(l)->net);

	s->failed_step = "register with the meter";
	s->start_ns = s->ops->now_ns();
	err = s->ops->add(l, s->cg, o->window_ns, s->start_ns, NULL);
	if (err)
		return err;
	s->metered = true;
	tell_twin(s);
	kernel_levels(s, thresh, kill_at);
	err = s->ops->arm(l, s->cg, thresh, kill_at);
	if (err)
		return err;
	bm_act_init(&s->act, s->cg, &s->ceil, &s->o.policy, &s->o.limits, &s->out, s->start_ns,
		    o->window_ns);

	s->failed_step = "create timers";
	err = make_timers(s);
	if (err)
		return err;
	s->failed_step = NULL;
	s->phase = BM_SUP_RUNNING;
	return 0;
}

static int make_timers(struct bm_sup *s)
{
	if (!s->o.shared_timers) {
		s->deadline_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		s->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (s->deadline_fd < 0 || s->timer_fd < 0)
			return -errno;
	}
	if (s->o.limits.timeout_ns)
		arm_deadline(s, s->start_ns + s->o.limits.timeout_ns);
	/* look once now: whatever happened while nobody watched */
	arm_timer(s, 0);
	return 0;
}

int bm_sup__adopt(struct bm_sup *s, struct bm_loader *l, const struct bm_cgroup_env *env,
		  const char *cgroup_path, const struct bm_sup_opts *o)
{
	struct bm_meter m;
	int err;

	bm_sup__prepare(s, l, o);
	s->failed_step = "open the cgroup";
	s->cg = bm_cgroup__open(cgroup_path);
	if (!s->cg)
		return -errno;
	s->out.cgroup = s->cg->path;
	/* its twins bear its own name, which an older burstmeter may have spelled otherwise */
	snprintf(s->name, sizeof(s->name), "%s", strrchr(s->cg->path, '/') + 1);
	bm_ceilings_adopt(env, s->cg, s->name, &s->ceil);
	s->ceil.v2_io = !faccessat(s->cg->dirfd, "io.max", F_OK, 0);
	s->out.io_attribution = s->ceil.v2_io ? "blkcg" : s->ceil.v1_blkio_dirfd >= 0 ? "v1_twin"
											  : "submitter";
	s->failed_step = "find its meter";
	err = s->ops->read(l, s->cg, &m);
	if (err)
		return err;
	s->ops->claim(l, m.slot);
	s->metered = true;
	tell_twin(s);
	/* the effect's clock started with its first window */
	s->o.window_ns = m.window_ns;
	s->start_ns = m.first_win * m.window_ns;
	s->out.started_wall_ns = bm_wall_ns() - (s->ops->now_ns() - s->start_ns);
	s->out.net_source = bm_net_source_name(s->ops->features(l)->net);
	bm_act_init(&s->act, s->cg, &s->ceil, &s->o.policy, &s->o.limits, &s->out, s->start_ns,
		    m.window_ns);
	s->failed_step = "create timers";
	err = make_timers(s);
	if (err)
		return err;
	s->failed_step = NULL;
	s->phase = BM_SUP_RUNNING;
	return 0;
}

int bm_sup__spawn(struct bm_sup *s)
{
	int n;
	const int *join = bm_ceilings_join_fds(&s->ceil, &n);

	return bm_effect_spawn_ex(s->cg->dirfd, join, n, s->o.argv, s->o.exec, &s->child);
}

/* The OOM killer chose a task of ours (the loader checked the record's length). */
static void oom_victim(struct bm_sup *s, const struct bm_oom_event *e)
{
	struct bm_oom_victim *v;

	s->out.oom_victims++;
	if (s->out.n_oom >= BM_MAX_OOM_VICTIMS)
		return;
	v = &s->out.oom[s->out.n_oom++];
	v->at_ms = e->ev.time_ns > s->start_ns ? (double)(e->ev.time_ns - s->start_ns) / 1e6 : 0;
	v->pid = e->pid;
	v->oom_score_adj = e->oom_score_adj;
	memcpy(v->comm, e->comm, sizeof(v->comm));
	v->comm[sizeof(v->comm) - 1] = '\0';
	v->rss_bytes = e->rss_bytes;
	v->anon_bytes = e->anon_bytes;
	v->total_vm_bytes = e->total_vm_bytes;
}

void bm_sup__event(struct bm_sup *s, const struct bm_event *e)
{
	struct bm_verdict_action va = { .act = BM_ACT_KILL };

	switch (e->type) {
	case BM_EV_DRAINED:
		s->drained = true;
		/* waiting for it: done now, not at the next look */
		if (s->phase == BM_SUP_DRAINING)
			arm_timer(s, 0);
		break;
	case BM_EV_OOM:
		oom_victim(s, (const struct bm_oom_event *)e);
		break;
	case BM_EV_KILLED:
		/* the kernel stopped the offender; cgroup.kill ends the rest */
		va.dim = e->dim == BM_DIM_MEM ? BM_P_MEM : BM_P_PIDS;
		va.observed = (double)e->value;
		va.threshold = (double)e->thresh - 1;
		if (!s->act.ended) {
			(void)bm_act_do(&s->act, &va, "kernel", s->ops->now_ns());
			s->lad.step = BM_STEP_KILL;
		}
		break;
	default:
		break;
	}
	/* a crossing (or anything else) is a reason to look now */
	if (s->phase == BM_SUP_RUNNING)
		arm_timer(s, 0);
}

/* Dimension p has a ceiling that a controller holds. */
static bool held(const struct bm_sup *s, int p)
{
	return s->o.policy.dim[p].ceiling && s->ceil.controller[p];
}

/* What the ladder sees: levels (or their peak in this window), flows at their highest window since the last look. */
static void sample(struct bm_sup *s, const struct bm_meter *m, uint64_t now, struct bm_sample *sm)
{
	uint64_t W = m->window_ns, x = now / W, ooms, refused, y;
	/* looks may be windows apart (bm_sup_opts.look_grid_ns), never more than half the ring */
	uint64_t from = s->look_win && s->look_win < x ? s->look_win : x - 1;
	double cur, top;
	int p;

	if (x - from > BM_RING / 2)
		from = x - BM_RING / 2;

	memset(sm, 0, sizeof(*sm));
	for (p = 0; p < BM_P__MAX; p++) {
		int d = pdim_dim[p];

		if (d == BM_DIM_MEM || d == BM_DIM_PIDS) {
			int64_t v = d == BM_DIM_MEM ? m->rss_bytes : m->tasks;

			sm->value[p] = v > 0 ? (double)v : 0;
			if (m->lvl_win == x && m->lvl_max[d] > sm->value[p])
				sm->value[p] = (double)m->lvl_max[d];
			/*
			 * A memory ceiling a controller holds is breached when it OOM-kills:
			 * resident bytes count a shared page twice and a page charged to
			 * another cgroup too, so they may pass a charge that stays under
			 * it. Its OOM killer then acts, and the outcome names its victim.
			 */
			if (p == BM_P_MEM && held(s, p) && sm->value[p] > s->o.policy.dim[p].hard)
				sm->value[p] = s->o.policy.dim[p].hard;
			continue;
		}
		/* a fresh window looks empty: the full ones since the last look count too */
		for (y = from, top = 0; y <= x; y++) {
			cur = bm_window_flow(m, d, y);
			if (p == BM_P_IO)
				cur += bm_window_flow(m, BM_DIM_IO_READ, y);
			top = cur > top ? cur : top;
		}
		sm->value[p] = bm_window_display(d, top, W);
	}
	s->look_win = x;
	/* what a controller refused at a ceiling it holds: files to read, so only where there is one */
	if (!held(s, BM_P_MEM) && !held(s, BM_P_PIDS))
		return;
	bm_ceilings_events(&s->ceil, &ooms, &refused);
	sm->breach[BM_P_MEM] = held(s, BM_P_MEM) && ooms > 0;
	sm->breach[BM_P_PIDS] = held(s, BM_P_PIDS) && refused > 0;
}

/*
 * While the ladder looks by itself, the kernel need not wake it for each
 * window over again: it is told up to which window it looks (a run of
 * windows over is then one record, not one per window: a CPU storm held at
 * its ceiling woke the agent every window).
 */
static void watch(struct bm_sup *s, uint32_t slot, uint64_t until_win)
{
	if (until_win == s->watch_win || !s->ops->watch)
		return;
	s->watch_win = until_win;
	s->ops->watch(s->loader, slot, until_win);
}

/* One turn of the ladder: sample, decide, act; returns when to look again. */
static uint64_t evaluate(struct bm_sup *s, uint64_t now)
{
	uint64_t next, duty, look;
	struct bm_verdict v;
	struct bm_sample sm;
	bool watching = false;
	struct bm_meter m;
	unsigned int i;
	int p;

	if (!s->acting || s->ops->read(s->loader, s->cg, &m))
		return UINT64_MAX;
	sample(s, &m, now, &sm);
	(void)bm_policy_step(&s->o.policy, &s->lad, &sm, now, &v);
	for (i = 0; i < v.n; i++)
		/* a controller's refusal is the kernel's decision; a level's is ours */
		(void)bm_act_do(&s->act, &v.a[i], sm.breach[v.a[i].dim] ? "kernel" : "policy", now);
	next = bm_policy_next_deadline(&s->o.policy, &s->lad);
	duty = bm_act_tick(&s->act, now);
	next = duty < next ? duty : next;
	/*
	 * Look again every window while anything is at the level the kernel
	 * wakes at or over its soft level, or a step is in force. That covers
	 * a level near a ceiling a controller holds: a refused fork or an OOM
	 * kill changes no level, so no crossing would say so.
	 */
	look = now + m.window_ns;
	if (s->o.look_grid_ns)
		look += s->o.look_grid_ns - 1 - (look - 1) % s->o.look_grid_ns;
	for (p = 0; p < BM_P__MAX; p++) {
		double lvl = wake_level(s, p);

		if ((lvl && sm.value[p] >= lvl) || s->lad.above_since_ns[p] || s->lad.step != BM_STEP_OBSERVE)
			watching = true;
	}
	/* once stopped, one more look: what crossed between this read and the stop was not reported */
	if (watching || s->watch_win)
		next = look < next ? look : next;
	watch(s, m.slot, watching ? look / m.window_ns : 0);
	return next;
}

/* The next look at a phase: PHASE_POLL_NS after entering it, backing off to PHASE_POLL_MAX_NS. */
static uint64_t next_look(struct bm_sup *s, uint64_t now)
{
	uint64_t at = now + s->poll_ns;

	s->poll_ns = 2 * s->poll_ns < PHASE_POLL_MAX_NS ? 2 * s->poll_ns : PHASE_POLL_MAX_NS;
	return at;
}

static void enter_phase(struct bm_sup *s, enum bm_sup_phase phase, uint64_t deadline_ns)
{
	s->phase = phase;
	s->phase_deadline_ns = deadline_ns;
	s->poll_ns = PHASE_POLL_NS;
}

/* After the command: leftovers die, then the kernel frees every task; then done. */
static uint64_t advance_phase(struct bm_sup *s, uint64_t now)
{
	struct bm_meter m;

	if (s->phase == BM_SUP_LEFTOVERS) {
		if (bm_cgroup__populated(s->cg) > 0 && now < s->phase_deadline_ns)
			return next_look(s, now);
		/* the effect lasted until its last task was gone */
		s->end_ns = now;
		bm_act_finish(&s->act, now);
		enter_phase(s, BM_SUP_DRAINING, now + DRAIN_TIMEOUT_NS);
	}
	if (s->phase == BM_SUP_DRAINING) {
		if (s->drained || now >= s->phase_deadline_ns ||
		    (!s->ops->read(s->loader, s->cg, &m) && (m.flags & BM_F_DRAINED)))
			s->phase = BM_SUP_DONE;
		else
			return next_look(s, now);
	}
	return UINT64_MAX;
}

/*
 * Its workspace walked (du) on a thread of its own (base/du.h): the first
 * walk is its base, each later one what it grew by since (net: what it
 * deletes of the base is credited). The loop only reads the last result.
 */
static void ws_walk(struct bm_sup *s)
{
	uint64_t bytes, walks;

	if (!s->o.workspace || !s->o.limits.storage_bytes)
		return;
	if (!s->ws_watch) {
		if (s->ws_failed)
			return;
		s->ws_watch = bm_du_watch_start(s->o.workspace, WS_MAX_ENTRIES, WS_POLL_NS);
		if (!s->ws_watch) {
			s->ws_failed = true;
			bm_warn("cannot watch the workspace of %s (%s): only its /tmp is bounded",
				s->name, strerror(errno));
		}
		return;
	}
	walks = bm_du_watch_read(s->ws_watch, &bytes);
	if (!walks || walks == s->ws_walks)
		return;
	s->ws_walks = walks;
	if (!s->ws_based) {
		s->ws_base = bytes;
		s->ws_based = true;
	}
	s->ws_used = bytes > s->ws_base ? bytes - s->ws_base : 0;
}

/* Its private /tmp, a tmpfs of its mount namespace, through /proc/PID/root of a task of it. */
static bool tmp_look(struct bm_sup *s, bool *full)
{
	char procs[64], path[64];
	struct statfs st;
	long pid;

	if (!s->cg || bm_read_file(s->cg->dirfd, "cgroup.procs", procs, sizeof(procs)) <= 0)
		return false;
	pid = strtol(procs, NULL, 10);
	snprintf(path, sizeof(path), "/proc/%ld/root/tmp", pid);
	if (pid <= 0 || statfs(path, &st) < 0 || st.f_type != TMPFS_MAGIC_)
		return false;
	s->tmp_used = (uint64_t)(st.f_blocks - st.f_bfree) * (uint64_t)st.f_bsize;
	/* a write got ENOSPC, or the next one will */
	*full = !st.f_bavail;
	return true;
}

static void peak(int64_t *at, uint64_t used)
{
	if ((int64_t)used > *at)
		*at = (int64_t)used;
}

/*
 * Its ephemeral storage: its /tmp (statfs, every look) and what its
 * workspace grew by (walked, less often), together under the ceiling.
 * The peaks are sampled; once they are full (the tmpfs refused a write,
 * or the two hold the limit) the effect ends with storage_ceiling: a
 * sandbox that cannot write goes nowhere.
 */
static void look_at_storage(struct bm_sup *s, uint64_t now)
{
	struct bm_outcome *out = &s->out;
	bool full = false, seen = tmp_look(s, &full);
	uint64_t used;

	ws_walk(s);
	if (!seen && !s->ws_based)
		return;
	used = s->tmp_used + s->ws_used;
	peak(&out->storage_peak_bytes, used);
	peak(&out->storage_places[0].peak_bytes, s->tmp_used);
	if (out->n_storage_places > 1 && s->ws_based)
		peak(&out->storage_places[1].peak_bytes, s->ws_used);
	if ((!full && used < s->o.limits.storage_bytes) || s->act.ended)
		return;
	/* the place that holds the most of it is where it filled */
	if (out->n_storage_places > 1 && s->ws_used > s->tmp_used)
		out->storage_where = out->storage_places[1].where;
	s->storage_full = true;
	s->act.ended = true;
	s->act.by = "policy";
	(void)bm_cgroup__kill(s->cg);
	if (out->n_actions < BM_MAX_ACTIONS)
		out->actions[out->n_actions++] = (struct bm_action){
			.at_ms = (double)(now - s->start_ns) / 1e6, .action = "kill",
			.reason = "storage_ceiling", .observed = (double)used,
			.threshold = (double)s->o.limits.storage_bytes,
		};
}

void bm_sup__tick(struct bm_sup *s)
{
	uint64_t ticks, now = s->ops->now_ns(), next = UINT64_MAX;

	if (s->timer_fd >= 0 && read(s->timer_fd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		return;
	arm_timer(s, UINT64_MAX);
	if (s->phase == BM_SUP_RUNNING)
		next = evaluate(s, now);
	if (s->phase == BM_SUP_RUNNING && s->o.limits.storage_bytes) {
		if (now >= s->storage_at) {
			look_at_storage(s, now);
			s->storage_at = now + STORAGE_POLL_NS;
		}
		next = s->storage_at < next ? s->storage_at : next;
	} else if (s->phase == BM_SUP_LEFTOVERS || s->phase == BM_SUP_DRAINING) {
		next = advance_phase(s, now);
	}
	if (s->phase != BM_SUP_DONE)
		arm_timer(s, next);
}

/* To the command by its pidfd when we are its parent, else to every process of the effect. */
static void send_child(struct bm_sup *s, int sig)
{
	if (s->child.pidfd >= 0)
		syscall(SYS_pidfd_send_signal, s->child.pidfd, sig, NULL, 0);
	else if (s->cg)
		(void)bm_cgroup__signal(s->cg, sig);
}

int bm_sup__cap(struct bm_sup *s, double cores, unsigned int weight, const cpu_set_t *cpus,
		const char *reason, double observed)
{
	int err;

	if (s->phase != BM_SUP_RUNNING)
		return -ESRCH;
	/* where first: a cap then keeps CPUs of the right count where they are */
	err = bm_ceilings_cpus_within(&s->ceil, cpus);
	if (err && err != -EOPNOTSUPP)
		return err;
	err = bm_act_cap(&s->act, cores, weight, reason, observed, s->ops->now_ns());
	if (!err)
		arm_timer(s, 0);
	return err;
}

void bm_sup__cancel(struct bm_sup *s, int sig)
{
	s->cancelled = true;
	if (s->phase == BM_SUP_RUNNING && sig)
		send_child(s, sig);
}

void bm_sup__terminate(struct bm_sup *s, uint64_t grace_ns)
{
	if (s->phase != BM_SUP_RUNNING)
		return;
	s->cancelled = true;
	s->terminating = true;
	send_child(s, SIGTERM);
	/* the deadline timer turns into the grace: when it fires, the whole cgroup dies */
	arm_deadline(s, s->ops->now_ns() + grace_ns);
}

/* The deadline: SIGTERM first, then after a grace of a tenth of the timeout, the whole cgroup. */
void bm_sup__on_deadline(struct bm_sup *s)
{
	uint64_t ticks, grace;

	if (s->deadline_fd >= 0 && read(s->deadline_fd, &ticks, sizeof(ticks)) < 0)
		return;
	arm_deadline(s, UINT64_MAX);
	if (s->phase != BM_SUP_RUNNING)
		return;
	if (s->terminating) {
		(void)bm_cgroup__kill(s->cg);
		return;
	}
	if (!s->deadline) {
		s->deadline = true;
		send_child(s, SIGTERM);
		grace = s->o.limits.timeout_ns / 10;
		grace = grace < 100 * BM_NSEC_PER_MSEC ? 100 * BM_NSEC_PER_MSEC
			: grace > 5 * BM_NSEC_PER_SEC ? 5 * BM_NSEC_PER_SEC : grace;
		arm_deadline(s, s->ops->now_ns() + grace);
		return;
	}
	(void)bm_cgroup__kill(s->cg);
}

void bm_sup__exited(struct bm_sup *s, int wait_status)
{
	struct bm_meter m;
	uint64_t now = s->ops->now_ns();

	if (s->phase != BM_SUP_RUNNING)
		return;
	s->wait_status = wait_status;
	s->end_ns = now;
	arm_deadline(s, UINT64_MAX);
	/* tasks the command left behind are not allowed to outlive the effect */
	if (bm_cgroup__populated(s->cg) > 0) {
		if (!s->ops->read(s->loader, s->cg, &m) && !s->act.ended)
			s->out.leftover_killed = m.tasks > 0 ? (uint64_t)m.tasks : 1;
		(void)bm_cgroup__kill(s->cg);
		enter_phase(s, BM_SUP_LEFTOVERS, now + KILL_TIMEOUT_NS);
	} else {
		bm_act_finish(&s->act, now);
		enter_phase(s, BM_SUP_DRAINING, now + DRAIN_TIMEOUT_NS);
	}
	arm_timer(s, 0);
}

void bm_sup__never_ran(struct bm_sup *s, const char *what, int err)
{
	s->out.reason = BM_REASON_METER_ERROR;
	s->out.by = "burstmeter";
	s->out.exit_code = -1;
	snprintf(s->out.advice, sizeof(s->out.advice), "it never ran: failed to %.96s: %.96s", what,
		 strerror(-err));
	s->not_run = true;
}

bool bm_sup__done(const struct bm_sup *s)
{
	return s->phase == BM_SUP_DONE;
}

static void read_cgroup_stats(struct bm_sup *s)
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
	/* the memory controller's own peak, where one charged the effect: a cross-check of ours */
	s->out.cgroup_mem_peak = -1;
	if (bm_ceilings_mem_peak(&s->ceil, &v) == 0)
		s->out.cgroup_mem_peak = (int64_t)v;
	/* its cgroup is its own since it started: the counts are the deltas */
	bm_ceilings_mem_events(&s->ceil, s->out.mem_events);
	if (s->out.oom_victims)
		s->out.oom_limit = s->out.mem_events[BM_MEMEV_OOM] > 0 ||
					   s->out.mem_events[BM_MEMEV_OOM_KILL] > 0
				   ? "memory_ceiling" : "node";
}

/* How it ended: the ladder or the kernel at a ceiling, the deadline, or the command itself. */
static void classify(struct bm_sup *s)
{
	uint64_t ooms, refused;

	if (s->not_run)
		return;
	bm_outcome_classify(&s->out, s->wait_status < 0 ? 0 : s->wait_status, s->cancelled, s->exec_errno);
	if (s->exec_errno)
		return;
	if (s->wait_status < 0) {
		/* re-adopted: the exit status went to whoever reaped it */
		s->out.exit_code = -1;
		s->out.by = "process";
	}
	bm_ceilings_events(&s->ceil, &ooms, &refused);
	if (s->deadline) {
		s->out.reason = BM_REASON_DEADLINE;
		s->out.by = "deadline";
	} else if (s->storage_full) {
		s->out.reason = BM_REASON_STORAGE_CEILING;
		s->out.by = "policy";
	} else if (s->act.ended) {
		s->out.reason = pdim_reason[s->act.cause];
		s->out.by = s->act.by;
	} else if (ooms && s->out.exit_signal == SIGKILL) {
		/* the memory controller's OOM killer got there first */
		s->out.reason = BM_REASON_MEMORY_CEILING;
		s->out.by = "kernel";
	} else if (s->out.oom_victims && s->out.exit_signal == SIGKILL) {
		/* the node's OOM killer (or an ancestor's limit): not its own wall */
		s->out.by = "kernel";
	} else if (refused && s->out.reason == BM_REASON_FAILED) {
		/* the pids controller refused a fork and the command gave up before the ladder looked */
		s->out.reason = BM_REASON_PIDS_CEILING;
		s->out.by = "kernel";
	}
}

void bm_sup__finish(struct bm_sup *s)
{
	struct bm_meter m;
	int err;

	bm_du_watch_stop(s->ws_watch);
	s->ws_watch = NULL;
	/* it never got as far as a cgroup and a meter: what the caller put in out stands */
	if (!s->cg || !s->metered) {
		s->out.sum = NULL;
		return;
	}
	read_cgroup_stats(s);
	s->out.wall_ns = s->end_ns - s->start_ns;
	classify(s);
	err = s->ops->read(s->loader, s->cg, &m);
	if (!err)
		err = bm_window_finalize(&m, bm_window_last(&m, s->end_ns), &s->sum);
	if (err) {
		s->out.reason = BM_REASON_METER_ERROR;
		s->out.by = "burstmeter";
	}
	s->out.sum = err ? NULL : &s->sum;
	(void)s->ops->stats(s->loader, s->out.stats);
}

/* Close what a released effect still holds (its cgroup is gone by then). */
static void close_fds(struct bm_sup *s)
{
	bm_du_watch_stop(s->ws_watch);
	s->ws_watch = NULL;
	s->metered = false;
	if (s->child.pidfd >= 0)
		close(s->child.pidfd);
	if (s->child.status_fd >= 0)
		close(s->child.status_fd);
	if (s->deadline_fd >= 0)
		close(s->deadline_fd);
	if (s->timer_fd >= 0)
		close(s->timer_fd);
	s->child.pidfd = s->child.status_fd = s->deadline_fd = s->timer_fd = -1;
	s->deadline_at = s->timer_at = UINT64_MAX;
}

static void forget_twin(struct bm_sup *s)
{
	if (s->blkio_twin_id && s->ops->alias)
		(void)s->ops->alias(s->loader, s->blkio_twin_id, 0);
	s->blkio_twin_id = 0;
}

int bm_sup__release_try(struct bm_sup *s)
{
	forget_twin(s);
	if (s->cg) {
		if (s->metered)
			(void)s->ops->del(s->loader, s->cg);
		s->metered = false;
		/* a task stuck in the kernel dies when it leaves it: the caller comes back */
		if (bm_cgroup__populated(s->cg) > 0) {
			(void)bm_cgroup__kill(s->cg);
			return -EBUSY;
		}
		if (bm_ceilings_release_try(&s->ceil) || s->ops->cg_remove_try(s->cg) == -EBUSY)
			return -EBUSY;
		bm_cgroup__free(s->cg);
		s->cg = NULL;
		s->out.cgroup = NULL;
	}
	close_fds(s);
	if (s->o.timers_moved)
		s->o.timers_moved(s->o.timers_ctx);
	return 0;
}

int bm_sup__release(struct bm_sup *s)
{
	int err = 0;

	forget_twin(s);
	if (s->cg) {
		if (s->metered)
			(void)s->ops->del(s->loader, s->cg);
		if (bm_cgroup__populated(s->cg) > 0 && !bm_cgroup__kill(s->cg))
			(void)bm_cgroup__wait_empty(s->cg, KILL_TIMEOUT_NS / BM_NSEC_PER_MSEC);
		bm_ceilings_release(&s->ceil);
		err = s->ops->cg_remove(s->cg);
		bm_cgroup__free(s->cg);
		s->cg = NULL;
		s->out.cgroup = NULL;
	}
	close_fds(s);
	if (s->o.timers_moved)
		s->o.timers_moved(s->o.timers_ctx);
	return err;
}
