/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Per-cgroup windows: the arithmetic every hook shares. Within a window an
 * event is one atomic add to its CPU's lane, without the lock; the meter's
 * spin lock is taken only to open a window's slot (bm_slot_open(), and the
 * level updates), and what runs under it calls no helper and no function
 * (6.1 refuses bpf-to-bpf calls under a lock), so it is __always_inline.
 * Outside the lock: bpf_get_smp_processor_id() for the lane, and one loop,
 * bpf_loop() over the windows of a long CPU interval (bm_add_interval()).
 * Two functions are not inlined, so that the verifier checks each once: the
 * loop's body (bm_split_one(); an unrolled loop multiplied into millions of
 * states) and bm_open_cur(), a global function that opens a slot of the
 * current task's meter under its lock (the longest code there is).
 * Flow slots close lazily when a newer window needs them; a level closes
 * the windows since its last event in one bulk add. Windows no event
 * touched are counted by userspace (user/meter/window.c) from the effect's
 * length, so an idle cgroup costs nothing.
 */
#ifndef BM_WINDOW_BPF_H
#define BM_WINDOW_BPF_H

#include "lib/bucket.bpf.h"

/*
 * Every CPU has a lane of its own (no more CPUs than lanes; set by the
 * loader): then an add from a program that runs with interrupts off (the
 * switch, the tick) cannot race another on its lane, and needs no atomic.
 */
const volatile __u8 cfg_plain_lanes;

/* A byte and a watch per meter slot: see struct bm_marks. Global data, so using it is no helper call. */
struct bm_marks bm_marks SEC(".data.moved");

/* The ladder looks at window x of m by itself (bm_marks.watch): a crossing there is no news. */
static __always_inline bool bm_watched(struct bm_meter *m, __u64 x)
{
	__u32 slot = m->slot;

	return slot < BM_MOVED_SLOTS && bm_marks.watch[slot] >= x;
}

/* An event touched window x: if no event touched a newer one, x is the newest, and the meter moved. */
static __always_inline void bm_touch(struct bm_meter *m, __u64 x)
{
	__u32 slot = m->slot;

	if (x <= m->last_win)
		return;
	m->last_win = x;
	if (slot < BM_MOVED_SLOTS)
		bm_marks.moved[slot] = 1;
}

/* A level's crossing, found under the lock and emitted after it is dropped. */
struct bm_cross {
	__u64 win;
	__u64 value;
	__u64 thresh;
	__u32 dim;
	__u32 found;
};

/* Close n windows that all had value v in dimension d. */
static __always_inline void bm_close(struct bm_meter *m, int d, __u64 v, __u64 n)
{
	__u64 hv = d == BM_DIM_CPU ? (v << BM_CPU_HIST_SHIFT) / m->window_ns : v;

	m->hist[d][bm_bucket(hv)] += n;
	m->wsum[d] += v * n;
	if (v > m->peak[d])
		m->peak[d] = v;
}

static __always_inline void bm_crossed(struct bm_meter *m, int d, __u64 x, __u64 v,
				       struct bm_cross *c)
{
	c->win = x;
	c->value = v;
	c->thresh = m->thresh[d];
	c->dim = d;
	c->found = 1;
}

/*
 * A flow's crossing: window x of d reached v, at or over thresh.
 * The program that includes this file defines it; the flow adds call it
 * without the lock, once per window and dimension, from the task whose
 * event it is (current), so that a charge spanning several windows reports
 * every one of them.
 */
static void bm_flow_crossed(struct bm_meter *m, __u32 d, __u64 x, __u64 v, __u64 thresh);

/*
 * The two rings (bm_abi.h): d below BM_FLOWS is the scheduler's, the rest
 * I/O's, at index d - BM_FLOWS there. d is a constant wherever these are
 * inlined, so each call site holds only its own ring's code.
 */
static __always_inline __u64 *bm_tag(struct bm_meter *m, __u32 d, __u32 s)
{
	return d < BM_FLOWS ? &m->slot_win[s] : &m->io_slot_win[s];
}

static __always_inline __u64 *bm_val(struct bm_meter *m, __u32 d, __u32 l, __u32 s)
{
	return d < BM_FLOWS ? &m->lane[l].v[s][d] : &m->io_lane[l].v[s][(d - BM_FLOWS) & 3];
}

static __always_inline __u32 *bm_crossed_of(struct bm_meter *m, __u32 d, __u32 s)
{
	return d < BM_FLOWS ? &m->crossed[s] : &m->io_crossed[s];
}

/* Value of flow slot s in dimension d: the sum of its lanes. */
static __always_inline __u64 bm_slot_sum(struct bm_meter *m, __u32 s, __u32 d)
{
	return *bm_val(m, d, 0, s) + *bm_val(m, d, 1, s) + *bm_val(m, d, 2, s) + *bm_val(m, d, 3, s);
}

/*
 * With the lock held: make slot s of dimension d's ring hold window x,
 * closing the window it held before (every dimension of that ring).
 * Returns 0, or -1 if the slot holds a newer window already (x has left
 * the ring). The tag is published with an atomic exchange, a full
 * barrier, so a reader that sees the new tag also sees the zeroed values.
 */
static __always_inline int bm_slot_open(struct bm_meter *m, __u32 d0, __u32 s, __u64 x)
{
	__u32 lo = d0 < BM_FLOWS ? 0 : BM_FLOWS, n = d0 < BM_FLOWS ? BM_FLOWS : BM_IO_FLOWS;
	__u64 *tagp = bm_tag(m, d0, s), tag = *tagp;
	__u32 d, l;

	if (tag == x)
		return 0;
	if (tag > x)
		return -1;
	if (tag) {
		for (d = 0; d < n; d++)
			bm_close(m, lo + d, bm_slot_sum(m, s, lo + d), 1);
		if (d0 < BM_FLOWS)
			m->closed_flow++;
		else
			m->io_closed_flow++;
	}
	for (l = 0; l < BM_LANES; l++)
		for (d = 0; d < n; d++)
			*bm_val(m, lo + d, l, s) = 0;
	*bm_crossed_of(m, d0, s) = 0;
	__sync_lock_test_and_set(tagp, x);
	bm_touch(m, x);
	return 0;
}

/*
 * The meter of the current task, for bm_open_cur(). The program that
 * includes this file defines it.
 */
static __always_inline struct bm_meter *bm_cur_meter(void);

/*
 * bm_slot_open() for the current task's meter, under its lock. A global
 * function: the verifier checks it once, on its own, instead of once per
 * inlined flow add and path to it (the close of a window is the longest
 * code there is). It cannot be handed the meter (a global function sees
 * memory, not a map value, and takes no lock in it), so it looks it up
 * again: once per window and ring of a cgroup, not per event.
 */
__attribute__((noinline)) int bm_open_cur(__u32 d, __u64 x)
{
	struct bm_meter *m = bm_cur_meter();
	int err;

	if (!m)
		return -1;
	bpf_spin_lock(&m->lock);
	err = bm_slot_open(m, d, x & (BM_RING - 1), x);
	bpf_spin_unlock(&m->lock);
	return err;
}

/*
 * With a threshold set on flow d, sum slot s's lanes: the first add that
 * finds the sum at or over it reports the crossing (the fetch-or on
 * crossed[] lets exactly one win), unless the ladder is watching that
 * window already. The fetch-or orders the read of the watch after the
 * mark, and the ladder reads the meter after it stops watching, so a
 * crossing is either reported or seen (effect/sup.c, watch()).
 */
static __always_inline void bm_flow_check(struct bm_meter *m, __u32 d, __u64 x, __u32 s)
{
	__u64 t = m->thresh[d], sum;

	if (!t)
		return;
	sum = bm_slot_sum(m, s, d);
	if (sum >= t && !(__sync_fetch_and_or(bm_crossed_of(m, d, s), 1U << d) & (1U << d)) &&
	    !bm_watched(m, x))
		bm_flow_crossed(m, d, x, sum, t);
}

/*
 * Add v to window x of flow dimension d; called without the lock. The lock
 * is taken only to open a window's slot, once per window; within a window
 * an event is one atomic add to this CPU's lane (bm_lane(), taken once per
 * event by the caller), then bm_flow_check(). m is the current task's
 * meter, so the slot opens in bm_open_cur() (a bio found by its cgroup goes
 * through bm_flow_add2(), which takes the lock itself).
 * irqoff: the caller runs with interrupts off (see cfg_plain_lanes).
 * Returns v if window x has left the ring (the caller counts it late), or 0.
 */
static __always_inline __u64 __bm_flow_add(struct bm_meter *m, __u32 d, __u64 x, __u64 v,
					   __u32 lane, bool irqoff)
{
	__u32 s;

	if (x < m->first_win)
		x = m->first_win;
	s = x & (BM_RING - 1);
	if (*(volatile __u64 *)bm_tag(m, d, s) != x && bm_open_cur(d, x))
		return v;
	if (irqoff && cfg_plain_lanes)
		*bm_val(m, d, lane, s) += v;
	else
		__sync_fetch_and_add(bm_val(m, d, lane, s), v);
	bm_flow_check(m, d, x, s);
	return 0;
}

/* The current task's meter m (every flow but a bio found by its cgroup). */
static __always_inline __u64 bm_flow_add_cur(struct bm_meter *m, __u32 d, __u64 x, __u64 v,
					     __u32 lane)
{
	return __bm_flow_add(m, d, x, v, lane, false);
}

/* The same, from a program that runs with interrupts off (sched_switch, the tick's hrtimer). */
static __always_inline __u64 bm_flow_add_irqoff(struct bm_meter *m, __u32 d, __u64 x, __u64 v,
						__u32 lane)
{
	return __bm_flow_add(m, d, x, v, lane, true);
}

/*
 * Add v0 to flow d0 and v1 to flow d1 of window x, two flows of one ring
 * (a bio's bytes and its operation), m not the current task's meter: one
 * look at the slot's tag and at most one open, so the verifier walks the
 * open's loops once, not once per flow. Returns -1 if window x has left
 * the ring (nothing added), or 0.
 */
static __always_inline int bm_flow_add2(struct bm_meter *m, __u32 d0, __u64 v0, __u32 d1, __u64 v1,
					__u64 x, __u32 lane)
{
	__u32 s;
	int err;

	if (x < m->first_win)
		x = m->first_win;
	s = x & (BM_RING - 1);
	if (*(volatile __u64 *)bm_tag(m, d0, s) != x) {
		bpf_spin_lock(&m->lock);
		err = bm_slot_open(m, d0, s, x);
		bpf_spin_unlock(&m->lock);
		if (err)
			return -1;
	}
	__sync_fetch_and_add(bm_val(m, d0, lane, s), v0);
	__sync_fetch_and_add(bm_val(m, d1, lane, s), v1);
	bm_flow_check(m, d0, x, s);
	bm_flow_check(m, d1, x, s);
	return 0;
}

/* This CPU's lane. */
static __always_inline __u32 bm_lane(void)
{
	return bpf_get_smp_processor_id() & (BM_LANES - 1);
}

/* Window of time t: no division when it is the newest window, as it nearly always is. */
static __always_inline __u64 bm_window_of(const struct bm_meter *m, __u64 t)
{
	__u64 W = m->window_ns, x = m->last_win;

	if (t >= x * W && t < (x + 1) * W)
		return x;
	return t / W;
}

struct bm_split {
	struct bm_meter *m;
	__u64 start, end, ws, we, lost;
	__u32 lane, d;
};

/* bpf_loop() body: window ws + i of a split interval. */
static long bm_split_one(__u64 i, void *ctx)
{
	struct bm_split *sp = ctx;
	__u64 W = sp->m->window_ns, x = sp->ws + i, lo, hi;
	__u32 d = sp->d, lane = sp->lane;

	/* read back from the caller's stack, they are unknown to 6.1's verifier: bound them */
	if (x > sp->we || d >= BM_FLOWS || lane >= BM_LANES)
		return 1;
	lo = x == sp->ws ? sp->start : x * W;
	hi = x == sp->we ? sp->end : (x + 1) * W;
	if (hi > lo)
		sp->lost += bm_flow_add_irqoff(sp->m, d, x, hi - lo, lane);
	return 0;
}

/*
 * Charge [start, end) to flow dimension d, split at window edges so that
 * no window holds more than it lasted. The common cases, an interval within
 * one window or across one edge, cost no division and no loop; a
 * longer one goes through bpf_loop(), which the verifier checks once rather
 * than once per iteration. m is the current task's meter, and interrupts
 * are off (sched_switch, the tick: bm_flow_add_irqoff()). Returns what
 * found no window (older than BM_SPLIT windows, or than the ring).
 */
static __always_inline __u64 bm_add_interval(struct bm_meter *m, __u32 d, __u64 start, __u64 end,
					     __u32 lane)
{
	struct bm_split sp = { .m = m, .d = d, .start = start, .end = end, .lane = lane };
	__u64 W = m->window_ns, edge;

	if (end <= start)
		return 0;
	sp.ws = bm_window_of(m, start);
	edge = (sp.ws + 1) * W;
	if (end <= edge)
		return bm_flow_add_irqoff(m, d, sp.ws, end - start, lane);
	if (end - edge <= W)
		return bm_flow_add_irqoff(m, d, sp.ws, edge - start, lane) +
		       bm_flow_add_irqoff(m, d, sp.ws + 1, end - edge, lane);
	sp.we = end / W;
	if (sp.we - sp.ws >= BM_SPLIT) {
		sp.ws = sp.we - BM_SPLIT + 1;
		sp.lost = sp.ws * W - start;
		sp.start = sp.ws * W;
	}
	bpf_loop(BM_SPLIT, bm_split_one, &sp, 0);
	return sp.lost;
}

static __always_inline __u64 bm_level(const struct bm_meter *m, int d)
{
	__s64 v = d == BM_DIM_MEM ? m->rss_bytes : m->tasks;

	return v > 0 ? v : 0;
}

/*
 * Move a level dimension (memory, tasks) by delta at window x. The windows
 * from lvl_win up to x close first: lvl_win with its maxima, the ones after
 * it at the level that held since.
 */
static __always_inline void bm_level_add(struct bm_meter *m, int d, __u64 x, __s64 delta,
					 struct bm_cross *c)
{
	__u64 mem, tasks, n, v;

	if (x > m->lvl_win) {
		mem = bm_level(m, BM_DIM_MEM);
		tasks = bm_level(m, BM_DIM_PIDS);
		bm_close(m, BM_DIM_MEM, m->lvl_max[BM_DIM_MEM], 1);
		bm_close(m, BM_DIM_PIDS, m->lvl_max[BM_DIM_PIDS], 1);
		n = x - m->lvl_win - 1;
		if (n) {
			bm_close(m, BM_DIM_MEM, mem, n);
			bm_close(m, BM_DIM_PIDS, tasks, n);
		}
		m->closed_lvl += n + 1;
		m->lvl_win = x;
		m->lvl_max[BM_DIM_MEM] = mem;
		m->lvl_max[BM_DIM_PIDS] = tasks;
		m->lvl_crossed = 0;
	}
	bm_touch(m, x);
	if (d == BM_DIM_MEM)
		m->rss_bytes += delta;
	else
		m->tasks += delta;
	v = bm_level(m, d);
	if (v > m->lvl_max[d])
		m->lvl_max[d] = v;
	if (m->thresh[d] && v >= m->thresh[d] && !(m->lvl_crossed & (1U << d))) {
		m->lvl_crossed |= 1U << d;
		if (!bm_watched(m, m->lvl_win))
			bm_crossed(m, d, m->lvl_win, v, c);
	}
}

#endif /* BM_WINDOW_BPF_H */
