// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <string.h>

#include "meter/window.h"

#define BM_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const char *const dim_names[BM_DIM__MAX] = {
	[BM_DIM_CPU] = "cpu_cores",
	[BM_DIM_MEM] = "memory_bytes",
	[BM_DIM_PIDS] = "pids",
	[BM_DIM_NET] = "net_tx_bytes_per_s",
	[BM_DIM_RUNQ] = "runq_delay_ms",
	[BM_DIM_IO_READ] = "io_read_bytes_per_s",
	[BM_DIM_IO_WRITE] = "io_write_bytes_per_s",
	[BM_DIM_IO_OPS] = "io_ops_per_s",
	[BM_DIM_DIRTY] = "dirty_bytes_per_s",
};

static const char *const dim_short[BM_DIM__MAX] = {
	[BM_DIM_CPU] = "cpu", [BM_DIM_MEM] = "mem", [BM_DIM_PIDS] = "pids",
	[BM_DIM_NET] = "net", [BM_DIM_RUNQ] = "runq", [BM_DIM_IO_READ] = "ior",
	[BM_DIM_IO_WRITE] = "iow", [BM_DIM_IO_OPS] = "iops", [BM_DIM_DIRTY] = "dirty",
};

const enum bm_dim bm_dim_order[BM_DIM__MAX] = {
	BM_DIM_CPU, BM_DIM_MEM, BM_DIM_PIDS, BM_DIM_NET, BM_DIM_RUNQ,
	BM_DIM_IO_READ, BM_DIM_IO_WRITE, BM_DIM_IO_OPS, BM_DIM_DIRTY,
};

unsigned int bm_window_bucket(uint64_t v)
{
	if (v >= 1ULL << 62)
		return 62;
	return v ? 64 - __builtin_clzll(v) : 0;
}

double bm_window_bucket_upper(unsigned int k)
{
	return k ? (double)(1ULL << (k < 63 ? k : 63)) : 0.0;
}

static uint64_t level_of(const struct bm_meter *m, int d)
{
	int64_t v = d == BM_DIM_MEM ? m->rss_bytes : m->tasks;

	return v > 0 ? (uint64_t)v : 0;
}

static void close_n(struct bm_summary *s, int d, uint64_t v, uint64_t n)
{
	uint64_t hv = d == BM_DIM_CPU ? (v << BM_CPU_HIST_SHIFT) / s->window_ns : v;

	if (!n)
		return;
	s->hist[d][bm_window_bucket(hv)] += n;
	s->wsum[d] += v * n;
	if (v > s->peak[d])
		s->peak[d] = v;
}

static const int flows[] = {
	BM_DIM_CPU, BM_DIM_NET, BM_DIM_RUNQ, BM_DIM_IO_READ, BM_DIM_IO_WRITE, BM_DIM_IO_OPS, BM_DIM_DIRTY,
};
static const int levels[] = { BM_DIM_MEM, BM_DIM_PIDS };

/* Value of flow d in slot i: the sum of its lanes, in the ring d belongs to. */
static uint64_t slot_value(const struct bm_meter *m, int d, unsigned int i)
{
	uint64_t v = 0;
	unsigned int l;

	for (l = 0; l < BM_LANES; l++)
		v += d < BM_FLOWS ? m->lane[l].v[i][d] : m->io_lane[l].v[i][d - BM_FLOWS];
	return v;
}

/* Close ring io's slots still open in [first_win, end_win], then its untouched windows at 0. */
static void close_ring(const struct bm_meter *m, uint64_t end_win, uint64_t total,
		       struct bm_summary *s, int io)
{
	const __u64 *tags = io ? m->io_slot_win : m->slot_win;
	uint64_t flow_windows = io ? m->io_closed_flow : m->closed_flow, x;
	int lo = io ? BM_FLOWS : 0, n = io ? BM_IO_FLOWS : BM_FLOWS, d;
	unsigned int i;

	for (i = 0; i < BM_RING; i++) {
		x = tags[i];
		if (!x || x < m->first_win || x > end_win)
			continue;
		for (d = lo; d < lo + n; d++)
			close_n(s, d, slot_value(m, d, i), 1);
		flow_windows++;
	}
	for (d = lo; d < lo + n; d++)
		close_n(s, d, 0, total > flow_windows ? total - flow_windows : 0);
}

uint64_t bm_window_last(const struct bm_meter *m, uint64_t end_ns)
{
	uint64_t end = end_ns / m->window_ns;

	end = end > m->last_win ? end : m->last_win;
	return end > m->lvl_win ? end : m->lvl_win;
}

int bm_window_finalize(const struct bm_meter *m, uint64_t end_win, struct bm_summary *s)
{
	uint64_t total;
	unsigned int f;
	int d, b;

	if (!m->window_ns || end_win < m->first_win || end_win < m->lvl_win)
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	s->window_ns = m->window_ns;
	for (d = 0; d < BM_DIM__MAX; d++) {
		for (b = 0; b < BM_HIST_BUCKETS; b++)
			s->hist[d][b] = m->hist[d][b];
		s->peak[d] = m->peak[d];
		s->wsum[d] = m->wsum[d];
	}
	total = end_win - m->first_win + 1;
	s->windows = total;

	/* flows, per ring: the slots still open, then every window no event touched, at 0 */
	close_ring(m, end_win, total, s, 0);
	close_ring(m, end_win, total, s, 1);

	/* levels: lvl_win with its maxima, then the level that held until the end */
	for (f = 0; f < BM_ARRAY_LEN(levels); f++) {
		close_n(s, levels[f], m->lvl_max[levels[f]], 1);
		close_n(s, levels[f], level_of(m, levels[f]), end_win - m->lvl_win);
	}

	/* a flow's total is the sum of its windows, and what came too late for one */
	for (f = 0; f < BM_ARRAY_LEN(flows); f++)
		s->total[flows[f]] = s->wsum[flows[f]] + m->late[flows[f]];
	s->cpu_ns = s->total[BM_DIM_CPU];
	s->runq_ns = s->total[BM_DIM_RUNQ];
	s->net_bytes = s->total[BM_DIM_NET];
	s->late_ns = m->late[BM_DIM_CPU] + m->late[BM_DIM_RUNQ];
	memcpy(s->io_via, m->io_via, sizeof(s->io_via));
	s->stall_ns = m->stall_ns;
	s->forks = m->forks;
	s->tasks_entered = m->entered;
	return 0;
}

double bm_window_flow(const struct bm_meter *m, int d, uint64_t x)
{
	uint32_t slot = x % BM_RING;

	if (d < 0 || d >= BM_ALL_FLOWS || (d < BM_FLOWS ? m->slot_win : m->io_slot_win)[slot] != x)
		return 0;
	return (double)slot_value(m, d, slot);
}

double bm_window_bucket_edge(enum bm_dim d, unsigned int k, uint64_t window_ns)
{
	double up = bm_window_bucket_upper(k);

	/* CPU buckets are already cores x 2^BM_CPU_HIST_SHIFT, whatever the window */
	if (d == BM_DIM_CPU)
		return up / (double)(1U << BM_CPU_HIST_SHIFT);
	return bm_window_display(d, up, window_ns);
}

double bm_window_display(enum bm_dim d, double raw, uint64_t window_ns)
{
	switch (d) {
	case BM_DIM_CPU:
		return raw / (double)window_ns;
	case BM_DIM_NET:
	case BM_DIM_IO_READ:
	case BM_DIM_IO_WRITE:
	case BM_DIM_IO_OPS:
	case BM_DIM_DIRTY:
		return raw * 1e9 / (double)window_ns;
	case BM_DIM_RUNQ:
		return raw / 1e6;
	default:
		return raw;
	}
}

const char *bm_window_dim_name(enum bm_dim d)
{
	return d < BM_DIM__MAX ? dim_names[d] : "?";
}

const char *bm_window_dim_short(enum bm_dim d)
{
	return d < BM_DIM__MAX ? dim_short[d] : "?";
}
