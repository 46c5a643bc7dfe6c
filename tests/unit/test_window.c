// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/meter/window.h: closing what the kernel left open. The meters here are
 * built by hand in the states bpf/lib/window.bpf.h leaves behind (closed
 * windows in hist/wsum/peak, open flow slots per lane, the open level
 * window), so every expected figure follows from the model, not from a run.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <linux/types.h>
#include "meter/window.h"
/* The kernel's own bucket function, compiled here to hold it to the userspace one. */
#include "../../bpf/lib/bucket.bpf.h"

#define W_NS 10000000ULL	/* the default 10 ms window */
#define FIRST 1000		/* any window index > 0: 0 tags an empty slot */
#define MIB (1024ULL * 1024)

/* Bit length by the definition, a loop: independent of both implementations. */
static unsigned int ref_bucket(uint64_t v)
{
	unsigned int k = 0;

	while (v) {
		k++;
		v >>= 1;
	}
	return k;
}

/* A meter as the loader creates it: every window starts at first_win. */
static void meter_init(struct bm_meter *m, uint64_t first)
{
	memset(m, 0, sizeof(*m));
	m->window_ns = W_NS;
	m->first_win = m->last_win = m->lvl_win = first;
}

/* Open flow slot for window x, with lane values for dimension d. */
static void slot_set(struct bm_meter *m, uint64_t x, int d, uint64_t l0, uint64_t l1, uint64_t l2,
		     uint64_t l3)
{
	unsigned int s = x & (BM_RING - 1);

	if (d >= BM_FLOWS) {
		/* the I/O ring */
		m->io_slot_win[s] = x;
		m->io_lane[0].v[s][d - BM_FLOWS] = l0;
		m->io_lane[1].v[s][d - BM_FLOWS] = l1;
		m->io_lane[2].v[s][d - BM_FLOWS] = l2;
		m->io_lane[3].v[s][d - BM_FLOWS] = l3;
		return;
	}
	m->slot_win[s] = x;
	m->lane[0].v[s][d] = l0;
	m->lane[1].v[s][d] = l1;
	m->lane[2].v[s][d] = l2;
	m->lane[3].v[s][d] = l3;
	if (x > m->last_win)
		m->last_win = x;
}

/* The bucket of a window value: CPU as cores x 2^BM_CPU_HIST_SHIFT, the others raw. */
static unsigned int dim_bucket(int d, uint64_t v)
{
	return ref_bucket(d == BM_DIM_CPU ? (v << BM_CPU_HIST_SHIFT) / W_NS : v);
}

/* What bm_close() in the kernel does for n windows at value v. */
static void kclose(struct bm_meter *m, int d, uint64_t v, uint32_t n)
{
	m->hist[d][dim_bucket(d, v)] += n;
	m->wsum[d] += v * n;
	if (v > m->peak[d])
		m->peak[d] = v;
}

static uint64_t hist_sum(const struct bm_summary *s, int d)
{
	uint64_t n = 0;
	int b;

	for (b = 0; b < BM_HIST_BUCKETS; b++)
		n += s->hist[d][b];
	return n;
}

static void assert_every_hist_sums_to_windows(const struct bm_summary *s)
{
	int d;

	for (d = 0; d < BM_DIM__MAX; d++)
		if (hist_sum(s, d) != s->windows)
			fail_msg("dim %d: histogram holds %llu windows, summary has %llu",
				 d, (unsigned long long)hist_sum(s, d),
				 (unsigned long long)s->windows);
}

static void test_finalize_idle_meter_is_all_zero_windows(void **state)
{
	struct bm_meter m;
	struct bm_summary s;
	int d;

	meter_init(&m, FIRST);
	assert_int_equal(bm_window_finalize(&m, FIRST + 9, &s), 0);
	assert_int_equal(s.windows, 10);
	assert_int_equal(s.window_ns, W_NS);
	for (d = 0; d < BM_DIM__MAX; d++) {
		assert_int_equal(s.hist[d][0], 10);
		assert_int_equal(s.peak[d], 0);
		assert_int_equal(s.wsum[d], 0);
	}
	assert_int_equal(s.cpu_ns, 0);
	assert_int_equal(s.net_bytes, 0);
	assert_every_hist_sums_to_windows(&s);
}

static void test_finalize_single_window(void **state)
{
	struct bm_meter m;
	struct bm_summary s;

	/* an effect that lived within one window still has exactly one */
	meter_init(&m, FIRST);
	slot_set(&m, FIRST, BM_DIM_CPU, 3000000, 0, 0, 0);
	m.lvl_max[BM_DIM_PIDS] = 1;
	assert_int_equal(bm_window_finalize(&m, FIRST, &s), 0);
	assert_int_equal(s.windows, 1);
	assert_int_equal(s.hist[BM_DIM_CPU][dim_bucket(BM_DIM_CPU, 3000000)], 1);
	assert_int_equal(s.hist[BM_DIM_PIDS][1], 1);
	assert_int_equal(s.peak[BM_DIM_CPU], 3000000);
	assert_every_hist_sums_to_windows(&s);
}

static void test_finalize_open_slot_sums_its_four_lanes(void **state)
{
	uint64_t cpu = 1000000 + 2000000 + 3000000 + 4000000, net = 1 + 10 + 100 + 1000;
	struct bm_meter m;
	struct bm_summary s;

	meter_init(&m, FIRST);
	slot_set(&m, FIRST + 2, BM_DIM_CPU, 1000000, 2000000, 3000000, 4000000);
	slot_set(&m, FIRST + 2, BM_DIM_NET, 1, 10, 100, 1000);
	assert_int_equal(bm_window_finalize(&m, FIRST + 4, &s), 0);
	assert_int_equal(s.windows, 5);
	/* one window at the lanes' sum, never at any single lane */
	assert_int_equal(s.hist[BM_DIM_CPU][dim_bucket(BM_DIM_CPU, cpu)], 1);
	assert_int_equal(s.hist[BM_DIM_CPU][0], 4);
	assert_int_equal(s.peak[BM_DIM_CPU], cpu);
	assert_int_equal(s.hist[BM_DIM_NET][ref_bucket(net)], 1);
	assert_int_equal(s.peak[BM_DIM_NET], net);
	/* the slot had no run-queue wait: that window is a zero one too */
	assert_int_equal(s.hist[BM_DIM_RUNQ][0], 5);
	assert_int_equal(s.total[BM_DIM_CPU], cpu);
	assert_int_equal(s.cpu_ns, cpu);
	assert_int_equal(s.net_bytes, net);
	assert_every_hist_sums_to_windows(&s);
}

static void test_finalize_untouched_flow_windows_count_as_zero(void **state)
{
	struct bm_meter m;
	struct bm_summary s;

	/* 3 windows closed from the ring, 2 open, 100 in all: 95 nobody touched */
	meter_init(&m, FIRST);
	kclose(&m, BM_DIM_CPU, 5000000, 2);	/* 0.5 cores: bucket 10 */
	kclose(&m, BM_DIM_CPU, 0, 1);
	kclose(&m, BM_DIM_NET, 0, 3);
	kclose(&m, BM_DIM_RUNQ, 0, 3);
	kclose(&m, BM_DIM_IO_READ, 0, 3);
	kclose(&m, BM_DIM_IO_WRITE, 0, 3);
	kclose(&m, BM_DIM_IO_OPS, 0, 3);
	kclose(&m, BM_DIM_DIRTY, 0, 3);
	m.closed_flow = 3;
	m.io_closed_flow = 3;
	slot_set(&m, FIRST + 50, BM_DIM_CPU, 1500000, 0, 0, 0);	/* 0.15: bucket 8 */
	slot_set(&m, FIRST + 51, BM_DIM_CPU, 0, 19000000, 0, 0);	/* 1.9 (two CPUs): bucket 11 */
	assert_int_equal(bm_window_finalize(&m, FIRST + 99, &s), 0);
	assert_int_equal(s.windows, 100);
	assert_int_equal(s.hist[BM_DIM_CPU][dim_bucket(BM_DIM_CPU, 5000000)], 2);
	assert_int_equal(s.hist[BM_DIM_CPU][dim_bucket(BM_DIM_CPU, 1500000)], 1);
	assert_int_equal(s.hist[BM_DIM_CPU][dim_bucket(BM_DIM_CPU, 19000000)], 1);
	assert_int_equal(s.hist[BM_DIM_CPU][0], 1 + 95);
	assert_int_equal(s.hist[BM_DIM_NET][0], 100);
	assert_int_equal(s.hist[BM_DIM_RUNQ][0], 100);
	assert_int_equal(s.peak[BM_DIM_CPU], 19000000);
	assert_int_equal(s.wsum[BM_DIM_CPU], 2 * 5000000 + 1500000 + 19000000);
	assert_every_hist_sums_to_windows(&s);
}

static void test_finalize_ignores_untagged_slots(void **state)
{
	struct bm_meter m;
	struct bm_summary s;
	unsigned int e = (FIRST + 5) & (BM_RING - 1);

	/* lane values left in a slot whose tag is 0 belong to no window */
	meter_init(&m, FIRST);
	m.lane[2].v[e][BM_DIM_CPU] = 123456789;
	m.lane[0].v[e][BM_DIM_NET] = 99;
	assert_int_equal(bm_window_finalize(&m, FIRST + 3, &s), 0);
	assert_int_equal(s.hist[BM_DIM_CPU][0], 4);
	assert_int_equal(s.peak[BM_DIM_CPU], 0);
	assert_int_equal(s.cpu_ns, 0);
	assert_int_equal(s.net_bytes, 0);
	assert_every_hist_sums_to_windows(&s);
}

static void test_finalize_level_after_lvl_win_holds(void **state)
{
	struct bm_meter m;
	struct bm_summary s;

	/*
	 * windows FIRST..FIRST+4 closed by the kernel at 1 MiB/2 tasks; FIRST+5
	 * is open with a maximum of 3 MiB/5 tasks; the level then fell to
	 * 1 MiB/2 tasks and held through FIRST+9.
	 */
	meter_init(&m, FIRST);
	kclose(&m, BM_DIM_MEM, MIB, 5);
	kclose(&m, BM_DIM_PIDS, 2, 5);
	m.closed_lvl = 5;
	m.lvl_win = FIRST + 5;
	m.lvl_max[BM_DIM_MEM] = 3 * MIB;
	m.lvl_max[BM_DIM_PIDS] = 5;
	m.rss_bytes = MIB;
	m.tasks = 2;
	assert_int_equal(bm_window_finalize(&m, FIRST + 9, &s), 0);
	assert_int_equal(s.windows, 10);
	assert_int_equal(s.hist[BM_DIM_MEM][ref_bucket(3 * MIB)], 1);
	assert_int_equal(s.hist[BM_DIM_MEM][ref_bucket(MIB)], 5 + 4);
	assert_int_equal(s.hist[BM_DIM_PIDS][ref_bucket(5)], 1);
	assert_int_equal(s.hist[BM_DIM_PIDS][ref_bucket(2)], 5 + 4);
	assert_int_equal(s.peak[BM_DIM_MEM], 3 * MIB);
	assert_int_equal(s.peak[BM_DIM_PIDS], 5);
	assert_int_equal(s.wsum[BM_DIM_MEM], 9 * MIB + 3 * MIB);
	assert_int_equal(s.wsum[BM_DIM_PIDS], 9 * 2 + 5);
	assert_every_hist_sums_to_windows(&s);
}

static void test_finalize_negative_level_counts_as_zero(void **state)
{
	struct bm_meter m;
	struct bm_summary s;

	/* rss deltas can undershoot (an mm charged before we saw it): never a huge u64 */
	meter_init(&m, FIRST);
	m.rss_bytes = -4096;
	m.tasks = -1;
	assert_int_equal(bm_window_finalize(&m, FIRST + 2, &s), 0);
	assert_int_equal(s.hist[BM_DIM_MEM][0], 3);
	assert_int_equal(s.hist[BM_DIM_PIDS][0], 3);
	assert_int_equal(s.peak[BM_DIM_MEM], 0);
	assert_int_equal(s.wsum[BM_DIM_MEM], 0);
}

static void test_finalize_end_at_lvl_win_closes_only_it(void **state)
{
	struct bm_meter m;
	struct bm_summary s;

	meter_init(&m, FIRST);
	kclose(&m, BM_DIM_MEM, 0, 3);
	kclose(&m, BM_DIM_PIDS, 1, 3);
	m.closed_lvl = 3;
	m.lvl_win = FIRST + 3;
	m.lvl_max[BM_DIM_MEM] = 8 * MIB;
	m.lvl_max[BM_DIM_PIDS] = 4;
	m.rss_bytes = 0;	/* the current level must not add a window */
	assert_int_equal(bm_window_finalize(&m, FIRST + 3, &s), 0);
	assert_int_equal(s.windows, 4);
	assert_int_equal(s.hist[BM_DIM_MEM][ref_bucket(8 * MIB)], 1);
	assert_int_equal(s.hist[BM_DIM_MEM][0], 3);
	assert_int_equal(s.hist[BM_DIM_PIDS][ref_bucket(4)], 1);
	assert_every_hist_sums_to_windows(&s);
}

static void test_finalize_totals_are_wsum_open_and_late(void **state)
{
	struct bm_meter m;
	struct bm_summary s;

	meter_init(&m, FIRST);
	kclose(&m, BM_DIM_CPU, 4000000, 1);
	kclose(&m, BM_DIM_NET, 5000, 1);
	kclose(&m, BM_DIM_RUNQ, 300000, 1);
	kclose(&m, BM_DIM_IO_READ, 4096, 1);
	kclose(&m, BM_DIM_IO_WRITE, 0, 1);
	kclose(&m, BM_DIM_IO_OPS, 1, 1);
	kclose(&m, BM_DIM_DIRTY, 8192, 1);
	m.closed_flow = 1;
	m.io_closed_flow = 1;
	slot_set(&m, FIRST + 1, BM_DIM_IO_WRITE, 0, 1048576, 0, 0);
	m.late[BM_DIM_IO_WRITE] = 512;
	slot_set(&m, FIRST + 1, BM_DIM_CPU, 1000, 0, 0, 2000);
	slot_set(&m, FIRST + 1, BM_DIM_NET, 0, 700, 0, 0);
	slot_set(&m, FIRST + 1, BM_DIM_RUNQ, 0, 0, 40000, 0);
	m.late[BM_DIM_CPU] = 11;
	m.late[BM_DIM_NET] = 30;
	m.late[BM_DIM_RUNQ] = 7;
	m.stall_ns = 123456;
	m.forks = 22;
	m.entered = 23;
	assert_int_equal(bm_window_finalize(&m, FIRST + 2, &s), 0);
	assert_int_equal(s.total[BM_DIM_CPU], 4000000 + 3000 + 11);
	assert_int_equal(s.total[BM_DIM_NET], 5000 + 700 + 30);
	assert_int_equal(s.total[BM_DIM_RUNQ], 300000 + 40000 + 7);
	assert_int_equal(s.total[BM_DIM_IO_READ], 4096);
	assert_int_equal(s.total[BM_DIM_IO_WRITE], 1048576 + 512);
	assert_int_equal(s.peak[BM_DIM_IO_WRITE], 1048576);
	assert_int_equal(s.total[BM_DIM_DIRTY], 8192);
	assert_int_equal(s.cpu_ns, s.total[BM_DIM_CPU]);
	assert_int_equal(s.net_bytes, s.total[BM_DIM_NET]);
	assert_int_equal(s.runq_ns, s.total[BM_DIM_RUNQ]);
	/* late amounts are in the totals, never in a window */
	assert_int_equal(s.wsum[BM_DIM_CPU], 4000000 + 3000);
	assert_int_equal(s.late_ns, 11 + 7);
	assert_int_equal(s.stall_ns, 123456);
	assert_int_equal(s.forks, 22);
	assert_int_equal(s.tasks_entered, 23);
	assert_every_hist_sums_to_windows(&s);
}

static void test_finalize_keeps_closed_peak_over_open_slot(void **state)
{
	struct bm_meter m;
	struct bm_summary s;

	meter_init(&m, FIRST);
	kclose(&m, BM_DIM_NET, 1 << 20, 1);
	m.closed_flow = 1;
	slot_set(&m, FIRST + 1, BM_DIM_NET, 10, 0, 0, 0);
	assert_int_equal(bm_window_finalize(&m, FIRST + 1, &s), 0);
	assert_int_equal(s.peak[BM_DIM_NET], 1 << 20);
}

static void test_finalize_rejects_end_before_meter(void **state)
{
	struct bm_meter m;
	struct bm_summary s;

	meter_init(&m, FIRST);
	assert_int_equal(bm_window_finalize(&m, FIRST - 1, &s), -EINVAL);
	assert_int_equal(bm_window_finalize(&m, 0, &s), -EINVAL);
	/* the open level window is newer than the end: a clock gone backwards */
	m.lvl_win = FIRST + 5;
	m.closed_lvl = 5;
	assert_int_equal(bm_window_finalize(&m, FIRST + 4, &s), -EINVAL);
	assert_int_equal(bm_window_finalize(&m, FIRST + 5, &s), 0);
}

static void test_bucket_small_values(void **state)
{
	assert_int_equal(bm_window_bucket(0), 0);
	assert_int_equal(bm_window_bucket(1), 1);
	assert_int_equal(bm_window_bucket(2), 2);
	assert_int_equal(bm_window_bucket(3), 2);
	assert_int_equal(bm_window_bucket(4), 3);
	assert_int_equal(bm_window_bucket(7), 3);
	assert_int_equal(bm_window_bucket(8), 4);
}

static void test_bucket_powers_of_two(void **state)
{
	unsigned int k;

	/* [k] holds [2^(k-1), 2^k) */
	for (k = 0; k < 62; k++) {
		assert_int_equal(bm_window_bucket(1ULL << k), k + 1);
		assert_int_equal(bm_window_bucket((1ULL << (k + 1)) - 1), k + 1);
	}
	assert_int_equal(bm_window_bucket((1ULL << 62) - 1), 62);
}

static void test_bucket_saturates_at_2_62(void **state)
{
	/* values from 2^62 up saturate into the top bucket, 62 (bucket.bpf.h) */
	assert_int_equal(bm_window_bucket(1ULL << 62), 62);
	assert_int_equal(bm_window_bucket(1ULL << 63), 62);
	assert_int_equal(bm_window_bucket((1ULL << 62) + 5), 62);
	assert_int_equal(bm_window_bucket(UINT64_MAX), 62);
	assert_int_equal(bm_window_bucket((1ULL << 63) | (1ULL << 40)), 62);
}

static void check_same_bucket(uint64_t v)
{
	unsigned int user = bm_window_bucket(v), kern = bm_bucket(v);

	if (user != kern || user != ref_bucket(v >= 1ULL << 62 ? (1ULL << 62) - 1 : v))
		fail_msg("value %#llx: bm_window_bucket %u, kernel bm_bucket %u, definition %u",
			 (unsigned long long)v, user, kern, ref_bucket(v >= 1ULL << 62 ? (1ULL << 62) - 1 : v));
}

static void test_bucket_kernel_matches_userspace_at_edges(void **state)
{
	unsigned int k;

	check_same_bucket(0);
	for (k = 0; k <= 63; k++) {
		check_same_bucket(1ULL << k);
		check_same_bucket((1ULL << k) - 1);
		check_same_bucket((1ULL << k) + 1);
	}
	check_same_bucket(UINT64_MAX);
}

/* splitmix64: a fixed, reproducible stream */
static uint64_t next_rand(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void test_bucket_kernel_matches_userspace_random(void **state)
{
	uint64_t seed = 42, r;
	unsigned int i;

	/* shift by a random amount so that every bit length gets about as many values */
	for (i = 0; i < 4000000; i++) {
		r = next_rand(&seed);
		check_same_bucket(r >> (next_rand(&seed) & 63));
	}
}

static void test_bucket_upper_bound(void **state)
{
	assert_float_equal(bm_window_bucket_upper(0), 0.0, 0);
	assert_float_equal(bm_window_bucket_upper(1), 2.0, 0);
	assert_float_equal(bm_window_bucket_upper(10), 1024.0, 0);
	assert_float_equal(bm_window_bucket_upper(62), 4611686018427387904.0, 0);
}

static void test_display_converts_units(void **state)
{
	/* 5 ms on CPU in a 10 ms window is half a core; 20 ms in it is two */
	assert_float_equal(bm_window_display(BM_DIM_CPU, 5000000, W_NS), 0.5, 1e-12);
	assert_float_equal(bm_window_display(BM_DIM_CPU, 20000000, W_NS), 2.0, 1e-12);
	assert_float_equal(bm_window_display(BM_DIM_CPU, 500000, 1000000), 0.5, 1e-12);
	/* 1000 bytes in 10 ms is 100000 bytes/s; in 1 s it is 1000 bytes/s */
	assert_float_equal(bm_window_display(BM_DIM_NET, 1000, W_NS), 100000.0, 1e-6);
	assert_float_equal(bm_window_display(BM_DIM_NET, 1000, 1000000000), 1000.0, 1e-9);
	/* run-queue wait is shown in ms, whatever the window */
	assert_float_equal(bm_window_display(BM_DIM_RUNQ, 4100000, W_NS), 4.1, 1e-12);
	assert_float_equal(bm_window_display(BM_DIM_RUNQ, 4100000, 50000000), 4.1, 1e-12);
	/* levels are already in their units */
	assert_float_equal(bm_window_display(BM_DIM_MEM, 402653184, W_NS), 402653184.0, 0);
	assert_float_equal(bm_window_display(BM_DIM_PIDS, 23, W_NS), 23.0, 0);
}

static void test_dim_names_match_the_outcome_contract(void **state)
{
	/* the peak{} keys of docs/DESIGN.md and the --dim values of `burstmeter hist` */
	assert_string_equal(bm_window_dim_name(BM_DIM_CPU), "cpu_cores");
	assert_string_equal(bm_window_dim_name(BM_DIM_MEM), "memory_bytes");
	assert_string_equal(bm_window_dim_name(BM_DIM_PIDS), "pids");
	assert_string_equal(bm_window_dim_name(BM_DIM_NET), "net_tx_bytes_per_s");
	assert_string_equal(bm_window_dim_name(BM_DIM_RUNQ), "runq_delay_ms");
	assert_string_equal(bm_window_dim_short(BM_DIM_CPU), "cpu");
	assert_string_equal(bm_window_dim_short(BM_DIM_MEM), "mem");
	assert_string_equal(bm_window_dim_short(BM_DIM_PIDS), "pids");
	assert_string_equal(bm_window_dim_short(BM_DIM_NET), "net");
	assert_string_equal(bm_window_dim_short(BM_DIM_RUNQ), "runq");
	assert_string_equal(bm_window_dim_name(BM_DIM_IO_READ), "io_read_bytes_per_s");
	assert_string_equal(bm_window_dim_name(BM_DIM_IO_WRITE), "io_write_bytes_per_s");
	assert_string_equal(bm_window_dim_name(BM_DIM_IO_OPS), "io_ops_per_s");
	assert_string_equal(bm_window_dim_name(BM_DIM_DIRTY), "dirty_bytes_per_s");
	assert_string_equal(bm_window_dim_short(BM_DIM_IO_READ), "ior");
	assert_string_equal(bm_window_dim_short(BM_DIM_IO_WRITE), "iow");
	assert_string_equal(bm_window_dim_short(BM_DIM_IO_OPS), "iops");
	assert_string_equal(bm_window_dim_short(BM_DIM_DIRTY), "dirty");
	assert_non_null(bm_window_dim_name(BM_DIM__MAX));
	assert_non_null(bm_window_dim_short(BM_DIM__MAX));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_finalize_idle_meter_is_all_zero_windows),
		cmocka_unit_test(test_finalize_single_window),
		cmocka_unit_test(test_finalize_open_slot_sums_its_four_lanes),
		cmocka_unit_test(test_finalize_untouched_flow_windows_count_as_zero),
		cmocka_unit_test(test_finalize_ignores_untagged_slots),
		cmocka_unit_test(test_finalize_level_after_lvl_win_holds),
		cmocka_unit_test(test_finalize_negative_level_counts_as_zero),
		cmocka_unit_test(test_finalize_end_at_lvl_win_closes_only_it),
		cmocka_unit_test(test_finalize_totals_are_wsum_open_and_late),
		cmocka_unit_test(test_finalize_keeps_closed_peak_over_open_slot),
		cmocka_unit_test(test_finalize_rejects_end_before_meter),
		cmocka_unit_test(test_bucket_small_values),
		cmocka_unit_test(test_bucket_powers_of_two),
		cmocka_unit_test(test_bucket_saturates_at_2_62),
		cmocka_unit_test(test_bucket_kernel_matches_userspace_at_edges),
		cmocka_unit_test(test_bucket_kernel_matches_userspace_random),
		cmocka_unit_test(test_bucket_upper_bound),
		cmocka_unit_test(test_display_converts_units),
		cmocka_unit_test(test_dim_names_match_the_outcome_contract),
	};

	return cmocka_run_group_tests_name("window", tests, NULL, NULL);
}
