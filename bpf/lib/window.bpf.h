/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Per-cgroup windows: the arithmetic every hook shares. All of it runs with
 * the meter's spin lock held, so nothing here calls a helper and every
 * function is __always_inline (6.1 refuses bpf-to-bpf calls under a lock).
 *
 * Nothing here loops over windows: the verifier walks every iteration of a
 * loop, and loops whose exits leave different ranges behind multiply into
 * millions of states. Flow slots close lazily when a newer window needs
 * them; a level closes the windows since its last event in one bulk add.
 * Windows no event touched are counted by userspace (user/window.c) from
 * the effect's length, so an idle cgroup costs nothing.
 */
#ifndef BM_WINDOW_BPF_H
#define BM_WINDOW_BPF_H

/* A crossing found under the lock, emitted after it is dropped. */
struct bm_cross {
	__u64 win;
	__u64 value;
	__u64 thresh;
	__u32 dim;
	__u32 found;
};

/*
 * Bit length of v (0 for 0, k for [2^(k-1), 2^k)), without branches, so
 * that each call adds no paths for the verifier. (x - v) >> 63 is 1 exactly
 * when v > x, for v < 2^62.
 */
static __always_inline __u32 bm_bucket(__u64 v)
{
	__u64 r, s, nz;

	v &= (1ULL << 62) - 1;
	nz = (0 - v) >> 63;
	v |= 1;
	r = ((0xFFFFFFFFULL - v) >> 63) << 5;
	v >>= r;
	s = ((0xFFFFULL - v) >> 63) << 4;
	v >>= s;
	r |= s;
	s = ((0xFFULL - v) >> 63) << 3;
	v >>= s;
	r |= s;
	s = ((0xFULL - v) >> 63) << 2;
	v >>= s;
	r |= s;
	s = ((0x3ULL - v) >> 63) << 1;
	v >>= s;
	r |= s;
	r |= v >> 1;
	return (__u32)(r + nz) & (BM_HIST_BUCKETS - 1);
}

/* Close n windows that all had value v in dimension d. */
static __always_inline void bm_close(struct bm_meter *m, int d, __u64 v, __u64 n)
{
	m->hist[d][bm_bucket(v)] += n;
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
 * Add v to window x of flow dimension d. Returns v if window x has left the
 * ring already (its slot holds a newer window), 0 if v was placed.
 */
static __always_inline __u64 bm_flow_add(struct bm_meter *m, int d, __u64 x, __u64 v,
					 struct bm_cross *c)
{
	__u32 s = x & (BM_RING - 1);
	__u64 tag = m->slot_win[s];

	if (tag != x) {
		if (tag > x)
			return v;
		if (tag) {
			bm_close(m, BM_DIM_CPU, m->ring[s][BM_DIM_CPU], 1);
			bm_close(m, BM_DIM_NET, m->ring[s][BM_DIM_NET], 1);
			bm_close(m, BM_DIM_RUNQ, m->ring[s][BM_DIM_RUNQ], 1);
			m->closed_flow++;
		}
		m->ring[s][BM_DIM_CPU] = 0;
		m->ring[s][BM_DIM_NET] = 0;
		m->ring[s][BM_DIM_RUNQ] = 0;
		m->crossed[s] = 0;
		m->slot_win[s] = x;
	}
	m->ring[s][d] += v;
	if (x > m->last_win)
		m->last_win = x;
	if (m->thresh[d] && m->ring[s][d] >= m->thresh[d] && !(m->crossed[s] & (1U << d))) {
		m->crossed[s] |= 1U << d;
		bm_crossed(m, d, x, m->ring[s][d], c);
	}
	return 0;
}

/*
 * Charge [start, end) to flow dimension d, split at window edges so that
 * no window holds more than it lasted. Returns the ns that found no window
 * (older than BM_SPLIT windows, or than the ring).
 */
static __always_inline __u64 bm_add_interval(struct bm_meter *m, int d, __u64 start, __u64 end,
					     struct bm_cross *c)
{
	__u64 W = m->window_ns, ws, we, x, lo, hi, lost = 0;
	int i;

	if (end <= start)
		return 0;
	ws = start / W;
	we = end / W;
	if (we - ws >= BM_SPLIT) {
		ws = we - BM_SPLIT + 1;
		lost = ws * W - start;
		start = ws * W;
	}
	if (ws < m->first_win) {
		ws = m->first_win;
		if (start < ws * W)
			start = ws * W;
	}
	for (i = 0; i < BM_SPLIT; i++) {
		x = ws + i;
		if (x > we)
			break;
		lo = x == ws ? start : x * W;
		hi = x == we ? end : (x + 1) * W;
		if (hi > lo)
			lost += bm_flow_add(m, d, x, hi - lo, c);
	}
	return lost;
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
	if (x > m->last_win)
		m->last_win = x;
	if (d == BM_DIM_MEM)
		m->rss_bytes += delta;
	else
		m->tasks += delta;
	v = bm_level(m, d);
	if (v > m->lvl_max[d])
		m->lvl_max[d] = v;
	if (m->thresh[d] && v >= m->thresh[d] && !(m->lvl_crossed & (1U << d))) {
		m->lvl_crossed |= 1U << d;
		bm_crossed(m, d, m->lvl_win, v, c);
	}
}

#endif /* BM_WINDOW_BPF_H */
