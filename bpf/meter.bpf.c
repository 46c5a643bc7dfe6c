// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The burst meter: per-cgroup, per-window CPU, run-queue wait, resident
 * memory, tasks, bytes sent, block I/O and page cache dirtied, for the
 * cgroups registered as effects; and the OOM killer's victims among them.
 * Every other cgroup costs one failed storage lookup per event.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "bm_abi.h"
#include "lib/window.bpf.h"
#include "lib/core_compat.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define AF_INET 2
#define AF_INET6 10
#define E2BIG 7

/* Load-time knobs, written by the loader between open and load. */
const volatile __u8 cfg_cgrp_storage = 1;	/* meters in cgroup storage (6.2+), else bm_cghash */
const volatile __u8 cfg_cgroup_kfuncs = 1;	/* bpf_cgroup_from_id() and _release() (6.2+) */
const volatile __u8 cfg_rdonly_cast = 1;	/* bpf_rdonly_cast() (6.2+) */
__u64 bm_tick_fn;			/* address of the tick's hrtimer function (bm_find_tick) */
const volatile __u32 cfg_page_shift = 12;

/* The meters: cgroup local storage where the kernel has it, a hash by cgroup id where not. */
struct {
	__uint(type, BPF_MAP_TYPE_CGRP_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct bm_meter);
} bm_cgst SEC(".maps");

/*
 * Not preallocated: a meter is 6.7 KB, and 16384 of them made up front
 * would hold 110 MB of kernel memory on every 6.1 node. Only userspace
 * adds meters (a syscall, never a program), so no program allocates.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct bm_meter);
} bm_cghash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct bm_task_state);
} bm_task SEC(".maps");

/*
 * Where a task first seen in sched_switch is kept: a preallocated hash by
 * tid, because task storage is allocated on first use, and there the
 * allocation may wake kswapd under this CPU's run-queue lock, which on 6.1
 * (no bpf_mem_alloc for local storage) deadlocks the CPU. Tasks born in an
 * effect or moved into one get task storage at fork or attach; this holds
 * those that were there before the meter, until they are freed.
 */
#define BM_TASK_EARLY_MAX 4096

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BM_TASK_EARLY_MAX);
	__type(key, __u32);
	__type(value, struct bm_task_state);
} bm_task_early SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u64);		/* struct mm_struct * */
	__type(value, struct bm_mm_state);
} bm_mm SEC(".maps");

/*
 * 256 KiB (~4,700 records of 56 bytes) for one effect (`burstmeter run`).
 * The agent asks for more (bm_loader_opts.ring_bytes): every effect sends
 * a record when its last task has gone, and 10,000 that end together send
 * them within a few hundred ms.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} bm_events SEC(".maps");

/*
 * Where records go, by bm_meter.ring: slot 0 is bm_events (the loader's
 * own, set at load); a run that reuses a pinned meter (user/meter/loader.c:
 * a guest) puts a ring of its own in another slot and names it in the
 * meters it adds, so that its records reach it and not the owner.
 */
#define BM_RINGS 64

struct bm_ringbuf {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, BM_RINGS);
	__type(key, __u32);
	__array(values, struct bm_ringbuf);
} bm_rings SEC(".maps");

/* The ring of m's records: its guest's, or bm_events. */
static __always_inline void *ring_of(struct bm_meter *m)
{
	__u32 r = m->ring;
	void *rb;

	if (!r)
		return &bm_events;
	rb = bpf_map_lookup_elem(&bm_rings, &r);
	return rb ? rb : (void *)&bm_events;
}

/* Not used by the programs: read by a restarted agent deciding whether to adopt the pins. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bm_meta);
} bm_meta SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BM_STAT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} bm_stats SEC(".maps");

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&bm_stats, &idx);

	if (v)
		*v += 1;
}

extern struct cgroup *bpf_cgroup_from_id(__u64 cgid) __ksym __weak;
extern void bpf_cgroup_release(struct cgroup *cgrp) __ksym __weak;
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

static __always_inline struct cgroup *cgroup_of(struct task_struct *t)
{
	return t->cgroups->dfl_cgrp;
}

/*
 * t's cgroup for a comparison only: walked through an untrusted cast (a move,
 * once verified) where the kernel has one, for bm_cur_meter()'s reason;
 * directly on 6.1, whose verifier makes no such searches.
 */
static __always_inline struct cgroup *cgroup_of_untrusted(struct task_struct *t)
{
	if (cfg_rdonly_cast)
		t = bpf_rdonly_cast(t, bpf_core_type_id_kernel(struct task_struct));
	return t->cgroups->dfl_cgrp;
}

static __always_inline struct bm_meter *meter_of(struct task_struct *t)
{
	__u64 id;

	if (cfg_cgrp_storage)
		return bpf_cgrp_storage_get(&bm_cgst, cgroup_of(t), 0, 0);
	id = cgroup_of(t)->kn->id;
	return bpf_map_lookup_elem(&bm_cghash, &id);
}

/*
 * bm_open_cur()'s lookup (once per window of a cgroup, in most programs) goes
 * by the current cgroup's id (meter_by_id()): no pointer walked. Each pointer a program
 * loads from a trusted one costs the verifier linear searches of the
 * kernel's BTF (btf_nested_type_is_trusted(), 6.5+: ~1.7 ms a load on 6.18),
 * more than the rest of a small program; the kfunc's lookup by id, taken
 * once a window, does not show at run time.
 */
static __always_inline struct bm_meter *meter_by_id(__u64 id)
{
	struct bm_meter *m = NULL;
	struct cgroup *cg;

	if (!cfg_cgrp_storage)
		return bpf_map_lookup_elem(&bm_cghash, &id);
	cg = bpf_cgroup_from_id(id);
	if (cg) {
		m = bpf_cgrp_storage_get(&bm_cgst, cg, 0, 0);
		bpf_cgroup_release(cg);
	}
	return m;
}

/*
 * Also the rare events' (reclaim's end, in metered tasks only), where a lookup
 * by id (~0.9 us: bpf_cgroup_from_id() takes references and checks the
 * cgroup namespace) costs nothing that shows; never on a path every task of
 * the node takes (fork, exit, a bio), which keep the walk.
 */
static __always_inline struct bm_meter *bm_cur_meter(void)
{
	if (cfg_cgrp_storage && !cfg_cgroup_kfuncs)
		return meter_of(bpf_get_current_task_btf());
	return meter_by_id(bpf_get_current_cgroup_id());
}

/* A record of m's cgroup: its id is in the meter, so no pointer is walked for it. */
static __always_inline void emit_ev(struct bm_meter *m, __u32 type, __u32 dim, __u64 win,
				    __u64 value, __u64 thresh)
{
	struct bm_event *e;

	e = bpf_ringbuf_reserve(ring_of(m), sizeof(*e), 0);
	if (!e) {
		stat_inc(BM_STAT_RB_DROPS);
		return;
	}
	e->cgid = m->cgid;
	e->time_ns = bpf_ktime_get_ns();
	e->win = win;
	e->value = value;
	e->thresh = thresh;
	e->type = type;
	e->dim = dim;
	bpf_ringbuf_submit(e, 0);
}

static __always_inline void emit(struct bm_meter *m, __u32 type, const struct bm_cross *c)
{
	emit_ev(m, type, c->dim, c->win, c->value, c->thresh);
}

static __always_inline void bm_flow_crossed(struct bm_meter *m, __u32 d, __u64 x, __u64 v,
					    __u64 thresh)
{
	emit_ev(m, BM_EV_CROSS, d, x, v, thresh);
}

/*
 * Charge t's CPU time and run-queue wait since the last charge. The kernel
 * keeps both per task (se.sum_exec_runtime, sched_info.run_delay), so all we
 * store is what was charged already: no per-CPU timestamps, no wakeup hook.
 * The wait is charged to the window in which the current slice began.
 * t is the current task (sched_switch's prev, the tick's current): its
 * meter's slots open in bm_open_cur(); both run with interrupts off.
 */
static __always_inline void charge(struct task_struct *t, struct bm_meter *m, __u64 now)
{
	struct bm_task_state *ts;
	__u64 sum, rd, prev_sum, cpu, wait, slice, start, lost = 0, lost2 = 0;
	__u32 lane;

	sum = t->se.sum_exec_runtime;
	rd = t->sched_info.run_delay;
	prev_sum = t->se.prev_sum_exec_runtime;
	ts = bpf_task_storage_get(&bm_task, t, 0, 0);
	if (!ts) {
		/*
		 * A task that was there before the meter (a cgroup metered while it
		 * runs) is charged from its first sight on, from bm_task_early: no
		 * allocation here (see there). Born in the effect, it has run nothing.
		 */
		struct bm_task_state init = { .charged_ns = sum, .run_delay_ns = rd, .until_ns = now };
		__u32 tid = t->pid;

		ts = bpf_map_lookup_elem(&bm_task_early, &tid);
		if (!ts) {
			if (t->start_time >= m->first_win * m->window_ns)
				init = (struct bm_task_state){};
			bpf_map_update_elem(&bm_task_early, &tid, &init, BPF_NOEXIST);
			ts = bpf_map_lookup_elem(&bm_task_early, &tid);
			if (!ts) {
				stat_inc(BM_STAT_TASK_FULL);
				return;
			}
		}
	}
	cpu = sum - ts->charged_ns;
	wait = rd - ts->run_delay_ns;
	ts->charged_ns = sum;
	ts->run_delay_ns = rd;
	if (cpu > now)
		return;
	lane = bm_lane();
	if (cpu) {
		/*
		 * The kernel counted sum_exec_runtime a moment before now (at the
		 * tick, by the length of the tick's work), so back-to-back
		 * intervals would overlap by that lag: start no earlier than where
		 * the last one ended, and keep the sliver in the totals only.
		 */
		start = now - cpu;
		if (start < ts->until_ns)
			start = ts->until_ns < now ? ts->until_ns : now;
		lost = bm_add_interval(m, BM_DIM_CPU, start, now, lane);
		if (lost + cpu - (now - start))
			__sync_fetch_and_add(&m->late[BM_DIM_CPU], lost + cpu - (now - start));
	}
	ts->until_ns = now;
	if (wait) {
		/* the wait ended where the current slice began: usually in now's window */
		slice = sum - prev_sum;
		slice = slice < now ? now - slice : 0;
		lost2 = bm_flow_add_irqoff(m, BM_DIM_RUNQ, bm_window_of(m, slice), wait, lane);
		if (lost2)
			__sync_fetch_and_add(&m->late[BM_DIM_RUNQ], lost2);
	}
	if (lost || lost2)
		stat_inc(BM_STAT_LATE);
}

static __always_inline void gone(struct bm_meter *m);

/*
 * The time at a switch without a clock read: bpf_ktime_get_ns() is most of
 * the switch path's cost (~100 ns where the clocksource read is an indirect
 * call behind mitigations). The scheduler has just stamped prev with its
 * run-queue clock (se.exec_start, at update_curr()); each CPU keeps one
 * pair (ktime, exec_start) taken together, at the tick or at a switch, and
 * a switch within BM_CLK_SPAN of it reads the time off its own stamp. The
 * run-queue clock leaves out interrupt and steal time, so the estimate is
 * short by what of those fell since the pair (bounded by the span); a CPU
 * with no pair that recent (idle, no tick) reads the clock and makes one.
 */
#define BM_CLK_CPUS 1024
#define BM_CLK_SPAN (4 * 1000 * 1000ULL)

struct bm_clk bm_clk[BM_CLK_CPUS];

static __always_inline void clk_sync(__u32 cpu, __u64 k, __u64 c)
{
	if (cpu < BM_CLK_CPUS) {
		bm_clk[cpu].k = k;
		bm_clk[cpu].c = c;
	}
}

static __always_inline __u64 switch_now(struct task_struct *t)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u64 c = t->se.exec_start, now;

	if (cpu < BM_CLK_CPUS) {
		struct bm_clk *k = &bm_clk[cpu];

		if (k->k && c >= k->c && c - k->c < BM_CLK_SPAN)
			return k->k + (c - k->c);
	}
	now = bpf_ktime_get_ns();
	clk_sync(cpu, now, c);
	return now;
}

/* TASK_DEAD: prev_state at a task's last switch (do_task_dead()); it never runs again */
#define BM_TASK_DEAD 0x0080

SEC("tp_btf/sched_switch")
int BPF_PROG(bm_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct bm_meter *m;

	/* the idle task (pid 0) is in no effect: half the switches of a quiet CPU */
	if (!prev->pid)
		return 0;
	/*
	 * Found once, here: the verifier looks up the BTF of every pointer a
	 * program loads (linearly, at each path through it), the bulk of its time.
	 */
	m = meter_of(prev);
	if (!m)
		return 0;
	charge(prev, m, switch_now(prev));
	if (prev_state == BM_TASK_DEAD)
		gone(m);
	return 0;
}

/* The scheduler tick charges running tasks, so a task that never switches still shows. */
SEC("tp_btf/hrtimer_expire_exit")
int BPF_PROG(bm_tick, struct hrtimer *timer)
{
	struct task_struct *cur;
	struct bm_meter *m;

	__u64 now;

	if ((__u64)timer->function != bm_tick_fn)
		return 0;
	cur = bpf_get_current_task_btf();
	/* the tick has just run update_curr(): its clock and the current task's stamp are a pair */
	now = bpf_ktime_get_ns();
	if (cur->pid)
		clk_sync(bpf_get_smp_processor_id(), now, cur->se.exec_start);
	m = meter_of(cur);
	if (m)
		charge(cur, m, now);
	return 0;
}

/*
 * The tick's function, found by bm_find_tick() right after the load, from
 * the kernel's own symbol table: no read of /proc/kallsyms (5 MB the kernel
 * formats as it is read) at every load.
 */
const char bm_tick_names[2][24] = { "tick_nohz_handler", "tick_sched_timer" };

SEC("syscall")
int bm_find_tick(void *ctx)
{
	__u64 addr = 0;

	/* tick_nohz_handler since 6.9, tick_sched_timer before */
	if (bpf_kallsyms_lookup_name(bm_tick_names[0], sizeof(bm_tick_names[0]), 0, &addr) || !addr)
		bpf_kallsyms_lookup_name(bm_tick_names[1], sizeof(bm_tick_names[1]), 0, &addr);
	bm_tick_fn = addr;
	return 0;
}

/*
 * The fast path for ceilings that must hold within microseconds: a task
 * that adds to a level at or past kill_at (the one forking, the one
 * faulting) gets SIGKILL right here, every time, so a fork bomb's other
 * branches die at their next fork instead of waiting for userspace; the
 * first such kill raises one record, and userspace finishes with
 * cgroup.kill.
 */
static __always_inline void fast_kill(struct bm_meter *m, int d, __u64 level, __u32 flag)
{
	struct bm_cross c = { .dim = d, .value = level, .thresh = m->kill_at[d] };

	if (!m->kill_at[d] || level < m->kill_at[d])
		return;
	bpf_send_signal(9);
	if (__sync_fetch_and_or(&m->flags, flag) & flag)
		return;
	c.win = m->last_win;
	emit(m, BM_EV_KILLED, &c);
}

static __always_inline void tasks_add(struct bm_meter *m, __s64 delta, __u64 forked)
{
	struct bm_cross c = {};
	__u64 now = bpf_ktime_get_ns();
	__s64 tasks;

	bpf_spin_lock(&m->lock);
	if (delta > 0) {
		m->entered++;
		m->forks += forked;
	}
	bm_level_add(m, BM_DIM_PIDS, now / m->window_ns, delta, &c);
	tasks = m->tasks;
	bpf_spin_unlock(&m->lock);
	if (c.found)
		emit(m, BM_EV_CROSS, &c);
	if (delta > 0 && tasks > 0)
		fast_kill(m, BM_DIM_PIDS, tasks, BM_F_KILLED_PIDS);
}

/* Fires for threads too; CLONE_INTO_CGROUP children are already in their cgroup here. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(bm_fork, struct task_struct *parent, struct task_struct *child)
{
	/* every fork of the node comes here: the child's meter by the walk, the cheapest at run time */
	struct cgroup *cg = cgroup_of(child);
	struct bm_task_state init = {};
	struct bm_meter *m;
	__u64 forked;

	forked = cgroup_of_untrusted(parent) == cg;
	if (cfg_cgrp_storage) {
		m = bpf_cgrp_storage_get(&bm_cgst, cg, 0, 0);
	} else {
		__u64 id = cg->kn->id;

		m = bpf_map_lookup_elem(&bm_cghash, &id);
	}
	if (!m)
		return 0;
	/* its storage now, not at its first switch (charge() says why); it has run nothing yet */
	if (!bpf_task_storage_get(&bm_task, child, &init, BPF_LOCAL_STORAGE_GET_F_CREATE))
		stat_inc(BM_STAT_TASK_FULL);
	tasks_add(m, 1, forked);
	return 0;
}

/* A task moved into a metered cgroup (attach): it counts from now on, as if forked in. */
SEC("tp_btf/cgroup_attach_task")
int BPF_PROG(bm_attach, struct cgroup *dst, const char *path, struct task_struct *task)
{
	struct bm_meter *m;

	struct bm_task_state init = {}, *ts;

	/*
	 * v1 hierarchies fire this too: only a move in the default (v2)
	 * hierarchy counts, into dst, the task's cgroup then.
	 */
	if (cgroup_of_untrusted(task) != dst)
		return 0;
	if (cfg_cgrp_storage) {
		m = bpf_cgrp_storage_get(&bm_cgst, dst, 0, 0);
	} else {
		__u64 id = BPF_CORE_READ(dst, kn, id);

		m = bpf_map_lookup_elem(&bm_cghash, &id);
	}
	if (!m)
		return 0;
	/* what it ran before the move is not the effect's: charge from here */
	init.charged_ns = task->se.sum_exec_runtime;
	init.run_delay_ns = task->sched_info.run_delay;
	init.until_ns = bpf_ktime_get_ns();
	ts = bpf_task_storage_get(&bm_task, task, &init, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (ts && ts->charged_ns < init.charged_ns) {
		/* it had storage from an earlier effect: start over all the same */
		*ts = init;
	}
	tasks_add(m, 1, 0);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(bm_exit, struct task_struct *p)
{
	/* every exit of the node: the walk, not a lookup by id (~0.9 us a call here) */
	struct bm_meter *m = meter_of(p);

	if (m)
		tasks_add(m, -1, 0);
	return 0;
}

/*
 * A task's last switch charged its last slice (charge() ran just before),
 * so once every task that entered has made its last switch, the meter is
 * final: that is when userspace may read it. (Its free, an RCU grace
 * period later, ~10-20 ms, is too late to wait for.)
 */
static __always_inline void gone(struct bm_meter *m)
{
	struct bm_cross c = {};
	int drained = 0;

	bpf_spin_lock(&m->lock);
	m->freed++;
	if (m->freed >= m->entered && m->tasks <= 0 && !(m->flags & BM_F_DRAINED))
		drained = 1;
	c.win = m->last_win;
	bpf_spin_unlock(&m->lock);
	/* flags is also or-ed without the lock (fast_kill): never a plain store */
	if (drained && !(__sync_fetch_and_or(&m->flags, BM_F_DRAINED) & BM_F_DRAINED))
		emit(m, BM_EV_DRAINED, &c);
}

SEC("tp_btf/sched_process_free")
int BPF_PROG(bm_free, struct task_struct *p)
{
	__u32 tid = p->pid;

	/* wherever it is now: it may have left the metered cgroup since */
	bpf_map_delete_elem(&bm_task_early, &tid);
	return 0;
}

/*
 * Fires on every change of an mm's counters (each page fault on 6.2+), so
 * the unmetered path is one lookup. An mm is tracked from its first event in
 * its own context; later events, the teardown in exit or exec included, may
 * come from wherever, and the absolute counters make a missed one harmless.
 */
SEC("tp_btf/rss_stat")
int BPF_PROG(bm_rss, struct mm_struct *mm, int member)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct bm_mm_state *st, fresh = {};
	struct bm_cross c = {};
	__u64 key = (__u64)mm, old, bytes, x;
	struct bm_meter *m;
	__s64 pages, rss;

	if (member == MM_SWAPENTS)
		return 0;
	m = meter_of(cur);
	if (!m)
		return 0;
	/*
	 * Once the kernel has killed at a ceiling, a task of the cgroup dies at
	 * its first fault: the child a fork bomb made just before its parent was
	 * killed writes to its stack before it can fork again.
	 */
	if (m->flags & (BM_F_KILLED_PIDS | BM_F_KILLED_MEM))
		bpf_send_signal(9);
	st = bpf_map_lookup_elem(&bm_mm, &key);
	if (!st) {
		if (mm != cur->mm)
			return 0;
		fresh.cgid = m->cgid;
		if (bpf_map_update_elem(&bm_mm, &key, &fresh, BPF_NOEXIST) == -E2BIG)
			stat_inc(BM_STAT_MM_FULL);
		st = bpf_map_lookup_elem(&bm_mm, &key);
		if (!st)
			return 0;
	}
	pages = bm_mm_resident_pages(mm);
	bytes = pages > 0 ? (__u64)pages << cfg_page_shift : 0;
	/* the central counts move once per per-CPU batch: most events change nothing */
	old = *(volatile __u64 *)&st->bytes;
	if (bytes != old)
		old = __sync_lock_test_and_set(&st->bytes, bytes);
	if (!bytes)
		bpf_map_delete_elem(&bm_mm, &key);
	if (bytes == old)
		return 0;

	x = bpf_ktime_get_ns() / m->window_ns;
	bpf_spin_lock(&m->lock);
	bm_level_add(m, BM_DIM_MEM, x, (__s64)(bytes - old), &c);
	rss = m->rss_bytes;
	bpf_spin_unlock(&m->lock);
	if (c.found)
		emit(m, BM_EV_CROSS, &c);
	if (bytes > old && rss > 0)
		fast_kill(m, BM_DIM_MEM, rss, BM_F_KILLED_MEM);
	return 0;
}

static __always_inline void reclaim_begin(void)
{
	struct bm_task_state *ts;

	/*
	 * Only tasks with storage (born in or moved into an effect) are timed;
	 * one that left its effect since is told apart at the end. No allocation
	 * while the allocator reclaims.
	 */
	ts = bpf_task_storage_get(&bm_task, bpf_get_current_task_btf(), 0, 0);
	if (ts)
		ts->reclaim_ns = bpf_ktime_get_ns();
}

static __always_inline void reclaim_end(void)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct bm_task_state *ts;
	struct bm_meter *m;

	ts = bpf_task_storage_get(&bm_task, cur, 0, 0);
	if (!ts || !ts->reclaim_ns)
		return;
	m = bm_cur_meter();
	if (m)
		__sync_fetch_and_add(&m->stall_ns, bpf_ktime_get_ns() - ts->reclaim_ns);
	ts->reclaim_ns = 0;
}

SEC("tp_btf/mm_vmscan_direct_reclaim_begin")
int BPF_PROG(bm_dreclaim_beg)
{
	reclaim_begin();
	return 0;
}

SEC("tp_btf/mm_vmscan_direct_reclaim_end")
int BPF_PROG(bm_dreclaim_end)
{
	reclaim_end();
	return 0;
}

SEC("tp_btf/mm_vmscan_memcg_reclaim_begin")
int BPF_PROG(bm_mreclaim_beg)
{
	reclaim_begin();
	return 0;
}

SEC("tp_btf/mm_vmscan_memcg_reclaim_end")
int BPF_PROG(bm_mreclaim_end)
{
	reclaim_end();
	return 0;
}

/* Bytes the current task sent on an inet socket; unix and netlink sockets are not network. */
static __always_inline void net_charge(struct sock *sk, int bytes)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct bm_meter *m;
	__u64 lost, x;
	__u16 family;

	if (bytes <= 0 || !sk)
		return;
	family = BPF_CORE_READ(sk, __sk_common.skc_family);
	if (family != AF_INET && family != AF_INET6)
		return;
	m = meter_of(cur);
	if (!m)
		return;
	x = bm_window_of(m, bpf_ktime_get_ns());
	lost = bm_flow_add_cur(m, BM_DIM_NET, x, bytes, bm_lane());
	if (lost) {
		__sync_fetch_and_add(&m->late[BM_DIM_NET], lost);
		stat_inc(BM_STAT_LATE);
	}
}

/* 6.3+: every sendmsg of every family passes this tracepoint with its result. */
SEC("tp_btf/sock_send_length")
int BPF_PROG(bm_net_send, struct sock *sk, int ret, int flags)
{
	net_charge(sk, ret);
	return 0;
}

/* Older kernels: the inet sendmsg entry points, where fexit is available. */
SEC("fexit/inet_sendmsg")
int BPF_PROG(bm_net_inet, struct socket *sock, struct msghdr *msg, size_t size, int ret)
{
	net_charge(BPF_CORE_READ(sock, sk), ret);
	return 0;
}

SEC("fexit/inet6_sendmsg")
int BPF_PROG(bm_net_inet6, struct socket *sock, struct msghdr *msg, size_t size, int ret)
{
	net_charge(BPF_CORE_READ(sock, sk), ret);
	return 0;
}

/*
 * I/O. A bio is charged once, when it is queued (block_bio_queue: after
 * blk-throttle, so a throttled bio counts when the throttle lets it go),
 * to the first metered cgroup of: the blkcg it carries, where that is a v2
 * cgroup (its submitter's; for buffered writeback the cgroup whose pages
 * dirtied the inode, v2 cgroup writeback); the v2 cgroup a v1 blkio twin
 * stands for (bm_blkalias, hybrid hosts); the task that queued it unless
 * that is a kernel thread (direct I/O, reads, the writeback an fsync does
 * itself). What none claims and a kernel thread queued is counted
 * (BM_STAT_IO_UNKNOWN): the flusher's writeback of a cgroup that the
 * kernel cannot tell (v1 writeback is not cgroup-aware).
 */
#define BM_PF_KTHREAD 0x00200000
#define BM_REQ_OP_MASK 0xff
#define BM_REQ_OP_READ 0
#define BM_REQ_OP_WRITE 1

/* v1 blkio twin (kernfs id) -> the effect's v2 cgroup id; written by userspace. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u64);
} bm_blkalias SEC(".maps");

static __always_inline void io_add(struct bm_meter *m, __u32 d, __u64 x, __u64 v, __u32 lane)
{
	__u64 lost = bm_flow_add_cur(m, d, x, v, lane);

	if (lost) {
		__sync_fetch_and_add(&m->late[d], lost);
		stat_inc(BM_STAT_LATE);
	}
}

/*
 * A bio's bytes and its one operation, to m. One path for reads and writes:
 * the dimension is arithmetic, not a branch (io_counts() let only those two
 * by, READ 0 and WRITE 1), and both flows go in one add (bm_flow_add2()).
 */
static __always_inline void io_charge(struct bm_meter *m, struct bio *bio)
{
	__u32 d = BM_DIM_IO_READ + (bio->bi_opf & BM_REQ_OP_WRITE), lane = bm_lane();
	__u64 bytes = bio->bi_iter.bi_size;

	if (bm_flow_add2(m, d, bytes, BM_DIM_IO_OPS, 1, bm_window_of(m, bpf_ktime_get_ns()), lane)) {
		__sync_fetch_and_add(&m->late[d], bytes);
		__sync_fetch_and_add(&m->late[BM_DIM_IO_OPS], 1);
		stat_inc(BM_STAT_LATE);
		stat_inc(BM_STAT_LATE);
	}
}

/* How the bio's cgroup was found, counted where that is known: no path after it depends on it. */
static __always_inline void io_via(struct bm_meter *m, __u32 via)
{
	if (via < BM_IO_VIA__MAX)
		__sync_fetch_and_add(&m->io_via[via], 1);
}

/* Read and write bios with data; flushes, discards and the like are not I/O of its own. */
static __always_inline bool io_counts(struct bio *bio)
{
	__u32 op = bio->bi_opf & BM_REQ_OP_MASK;

	return (op == BM_REQ_OP_READ || op == BM_REQ_OP_WRITE) && bio->bi_iter.bi_size;
}

/*
 * The v2 cgroup id the bio names: its blkcg's cgroup when that is of the
 * default hierarchy (id 0), else a v1 blkio twin's alias; 0 if neither.
 * The pointers walked here are not trusted: only their ids are used.
 */
static __always_inline __u64 bio_cgid(struct bio *bio, __u32 *via)
{
	struct blkcg_gq *blkg = bio->bi_blkg;
	struct cgroup *cg;
	__u64 id, *v2;

	if (!blkg || !blkg->blkcg)
		return 0;
	cg = blkg->blkcg->css.cgroup;
	if (!cg)
		return 0;
	id = cg->kn->id;
	*via = BM_IO_VIA_BLKCG;
	if (cg->root->hierarchy_id == 0)
		return id;
	v2 = bpf_map_lookup_elem(&bm_blkalias, &id);
	*via = BM_IO_VIA_ALIAS;
	return v2 ? *v2 : 0;
}

/* What is left: the task that queued it, unless that is a kernel thread (writeback, a worker). */
static __always_inline struct bm_meter *io_by_task(__u32 *via)
{
	struct task_struct *cur = bpf_get_current_task_btf();

	*via = BM_IO_VIA_TASK;
	if (cur->flags & BM_PF_KTHREAD) {
		stat_inc(BM_STAT_IO_UNKNOWN);
		return NULL;
	}
	/* most of a node's bios come here: the walk, not a lookup by id (bm_cur_meter()) */
	return meter_of(cur);
}

/* Meters in the hash (6.1): a cgroup id is the meter's key. */
SEC("tp_btf/block_bio_queue")
int BPF_PROG(bm_bio_queue, struct bio *bio)
{
	struct bm_meter *m = NULL;
	__u32 via = 0;
	__u64 id;

	if (!io_counts(bio))
		return 0;
	id = bio_cgid(bio, &via);
	if (id > 1 && !cfg_cgrp_storage)
		m = bpf_map_lookup_elem(&bm_cghash, &id);
	if (!m)
		m = io_by_task(&via);
	if (!m)
		return 0;
	io_via(m, via);
	io_charge(m, bio);
	return 0;
}

/*
 * Meters in cgroup storage (6.2+): the id becomes the cgroup through
 * bpf_cgroup_from_id() (6.2+ too, as bpf_rdonly_cast()), a pointer the
 * storage helper trusts.
 * Loaded instead of bm_bio_queue where the kernel has both.
 */
SEC("tp_btf/block_bio_queue")
int BPF_PROG(bm_bio_queue_kf, struct bio *bio)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct bm_meter *m = NULL, *mine;
	struct cgroup *cg;
	__u32 via = 0;
	__u64 id;

	if (!io_counts(bio))
		return 0;
	/*
	 * The submitter's meter, looked up first, on one path: its walk costs
	 * the verifier once (bm_cur_meter() says what a walk costs), not once
	 * per way to the fallback below; a storage lookup at run time.
	 */
	mine = cur->flags & BM_PF_KTHREAD ? NULL : meter_of(cur);
	/* walked untrusted (bpf_rdonly_cast(), 6.2+ as the rest): bm_cur_meter() says why */
	id = bio_cgid(bpf_rdonly_cast(bio, bpf_core_type_id_kernel(struct bio)), &via);
	/* the root cgroup (1) is no effect: most of a node's bios need no lookup */
	if (id > 1) {
		cg = bpf_cgroup_from_id(id);
		if (cg) {
			m = bpf_cgrp_storage_get(&bm_cgst, cg, 0, 0);
			bpf_cgroup_release(cg);
		}
	}
	/* via counted on each way here, so that the ways meet before the charge (verified once) */
	if (m) {
		io_via(m, via);
	} else {
		/* what is left: the task that queued it, unless a kernel thread (writeback, a worker) */
		if (cur->flags & BM_PF_KTHREAD)
			stat_inc(BM_STAT_IO_UNKNOWN);
		m = mine;
		if (!m)
			return 0;
		io_via(m, BM_IO_VIA_TASK);
	}
	io_charge(m, bio);
	return 0;
}

/*
 * Page cache dirtied, in the dirtier's context (write(2), a write fault):
 * how much writeback it has coming, whoever later writes it back. A large
 * folio (PG_head) has its order in the first tail page: 6.1 names it
 * _folio_order, later kernels keep it in the low byte of _flags_1.
 * Each read goes through a flavour that matches one kernel's types, behind
 * a field-exists check, so the other kernel's relocation is dead code.
 */
struct folio___61 {
	unsigned long flags;
	unsigned char _folio_order;
} __attribute__((preserve_access_index));

static __always_inline __u64 folio_bytes(struct folio *folio)
{
	__u64 flags = 0, order = 0;
	int head = bpf_core_enum_value(enum pageflags, PG_head);

	/* 6.1: unsigned long flags; since 6.17 a memdesc_flags_t around it */
	if (bpf_core_field_exists(struct folio___61, flags))
		flags = BPF_CORE_READ((struct folio___61 *)folio, flags);
	else
		flags = BPF_CORE_READ(folio, flags.f);
	if (!(flags & (1ULL << (head & 63))))
		return 1ULL << cfg_page_shift;
	if (bpf_core_field_exists(struct folio___61, _folio_order))
		order = BPF_CORE_READ((struct folio___61 *)folio, _folio_order);
	else
		order = BPF_CORE_READ(folio, _flags_1) & 0xff;
	return (1ULL << cfg_page_shift) << (order & 31);
}

SEC("tp_btf/writeback_dirty_folio")
int BPF_PROG(bm_dirty, struct folio *folio, struct address_space *mapping)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct bm_meter *m;

	if (cur->flags & BM_PF_KTHREAD)
		return 0;
	m = meter_of(cur);
	if (!m)
		return 0;
	io_add(m, BM_DIM_DIRTY, bm_window_of(m, bpf_ktime_get_ns()), folio_bytes(folio), bm_lane());
	return 0;
}

/*
 * The OOM killer chose a victim (before it sends SIGKILL): a record that
 * names it, for the outcome. Every member of a memory.oom.group is marked
 * in turn, so one OOM may send several.
 */
SEC("tp_btf/mark_victim")
int BPF_PROG(bm_oom_victim, struct task_struct *task)
{
	/* rare: by id, read and not walked (bm_cur_meter() says why) */
	struct bm_meter *m = cfg_cgrp_storage && !cfg_cgroup_kfuncs ?
				     meter_of(task) :
				     meter_by_id(BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id));
	struct bm_oom_event *e;
	struct mm_struct *mm;
	__s64 pages;

	if (!m)
		return 0;
	e = bpf_ringbuf_reserve(ring_of(m), sizeof(*e), 0);
	if (!e) {
		stat_inc(BM_STAT_RB_DROPS);
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->ev.cgid = m->cgid;
	e->ev.time_ns = bpf_ktime_get_ns();
	e->ev.win = m->last_win;
	e->ev.type = BM_EV_OOM;
	e->pid = task->pid;
	e->oom_score_adj = BPF_CORE_READ(task, signal, oom_score_adj);
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), task->comm);
	mm = BPF_CORE_READ(task, mm);
	if (mm) {
		pages = bm_mm_resident_pages(mm);
		e->rss_bytes = pages > 0 ? (__u64)pages << cfg_page_shift : 0;
		pages = bm_mm_counter(mm, MM_ANONPAGES);
		e->anon_bytes = pages > 0 ? (__u64)pages << cfg_page_shift : 0;
		e->total_vm_bytes = BPF_CORE_READ(mm, total_vm) << cfg_page_shift;
	}
	e->ev.value = e->rss_bytes;
	bpf_ringbuf_submit(e, 0);
	return 0;
}
