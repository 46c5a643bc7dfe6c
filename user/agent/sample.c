// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Each effect's life window by window: read from the meter when the kernel
 * marked it moved, into its series (the stored timeline), its readers'
 * lines and its tenant's budgets; the tick that decides who is read and
 * who sleeps.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/index.h"
#include "agent/sample.h"
#include "agent/tenant.h"
#include "agent/watch.h"
#include "base/common.h"

/* An effect's series: at most this many points, however long it lives (40 kB): 2 to 4 per timeline point */
#define SERIES_POINTS 2048

void ag_sample(struct bm_agent *a, struct ag_effect *e)
{
	uint64_t x, now_win;
	double v[BM_DIM__MAX];
	struct bm_meter m;
	json_t *line;
	int d;

	if (!e->sup.metered)
		return;
	/* before the read: an event after it marks the meter again */
	if (e->series_next_win)
		bm_loader__unmark(a->loader, e->slot);
	a->meter_reads++;
	if (bm_loader__read(a->loader, e->sup.cg, &m))
		return;
	now_win = bm_now_ns() / m.window_ns;
	/*
	 * An ended effect's timeline stops at its last window, as its totals do;
	 * once drained (done), that window is final even while the clock is in it.
	 */
	if (e->sup.end_ns && (e->sup.phase == BM_SUP_DONE || bm_window_last(&m, e->sup.end_ns) + 1 < now_win))
		now_win = bm_window_last(&m, e->sup.end_ns) + 1;
	if (!e->series_next_win) {
		e->series_next_win = m.first_win;
		e->series.window_ns = m.window_ns;
		e->series.max = SERIES_POINTS;
	}
	/*
	 * Windows older than the ring are gone. Idle since the last read, they
	 * had no event: the levels it stood at, nothing flowing. Otherwise (a
	 * read came too late) they are lost; start where the ring does.
	 */
	if (e->series_next_win + BM_RING <= now_win) {
		x = now_win - BM_RING + 1;
		if (e->idle)
			(void)bm_series_push_n(&e->series, e->idle_v, x - e->series_next_win);
		e->series_next_win = x;
	}
	for (x = e->series_next_win; x < now_win; x++) {
		for (d = 0; d < BM_ALL_FLOWS; d++)
			v[d] = bm_window_display(d, bm_window_flow(&m, d, x), m.window_ns);
		/* levels: this window's peak if it is the level window, else where it stands */
		v[BM_DIM_MEM] = x == m.lvl_win ? (double)m.lvl_max[BM_DIM_MEM] : (double)(m.rss_bytes > 0 ? m.rss_bytes : 0);
		v[BM_DIM_PIDS] = x == m.lvl_win ? (double)m.lvl_max[BM_DIM_PIDS] : (double)(m.tasks > 0 ? m.tasks : 0);
		if (bm_series_push(&e->series, v))
			break;
		if (e->readers) {
			line = json_pack("{s:s, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}",
					 "type", "window", "window", (json_int_t)(x - m.first_win), "t_ms",
					 (double)(x - m.first_win) * m.window_ns / 1e6, "cpu_cores", v[BM_DIM_CPU],
					 "memory_bytes", v[BM_DIM_MEM], "pids", v[BM_DIM_PIDS], "net_tx_bytes_per_s",
					 v[BM_DIM_NET], "runq_delay_ms", v[BM_DIM_RUNQ], "io_read_bytes_per_s",
					 v[BM_DIM_IO_READ], "io_write_bytes_per_s", v[BM_DIM_IO_WRITE],
					 "io_ops_per_s", v[BM_DIM_IO_OPS], "dirty_bytes_per_s", v[BM_DIM_DIRTY]);
			ag_emit(a, e, line);
		}
	}
	e->series_next_win = x;
	e->slot = m.slot;
	e->idle = m.last_win < now_win;
	memset(e->idle_v, 0, sizeof(e->idle_v));
	e->idle_v[BM_DIM_MEM] = (double)(m.rss_bytes > 0 ? m.rss_bytes : 0);
	e->idle_v[BM_DIM_PIDS] = (double)(m.tasks > 0 ? m.tasks : 0);
	/* the windows that closed, to its tenant's budgets; the level it holds, for every tick */
	ag_tenant_charge(a, e, &m, now_win, e->idle_v[BM_DIM_MEM]);
}

/*
 * Is an awake effect due for a read? Once a quarter ring has closed (40 ms
 * at 10 ms windows): that loses none of the kernel's last BM_RING windows
 * and leaves three quarters of a ring for a late tick (a slow emulated VM
 * lost one with half). A reader of its events gets every tick.
 */
static bool due(const struct ag_effect *e, uint64_t now)
{
	uint64_t w = e->series.window_ns;

	if (e->readers || !w || !e->series_next_win)
		return true;
	return now / w >= e->series_next_win + BM_RING / 4;
}

/*
 * Every tick: the effects whose meters the kernel marked wake up, the awake
 * ones are read when due, and one found idle (ag_effect.idle) goes to
 * sleep. 10,000 sleeping effects then cost a scan of 16 kB of marks per
 * tick, not a map lookup each (~5 us here; 1,000 of them kept the agent at
 * 28 % of a CPU), nor a visit each.
 */
void ag_tick(struct bm_agent *a)
{
	const volatile uint8_t *marks = bm_loader__marks(a->loader);
	unsigned int i, j, k, n, start, reads = AG_TICK_READS;
	uint64_t now = bm_now_ns();
	struct ag_effect *e;
	uint64_t word;

	for (i = 0; marks && i < BM_MOVED_SLOTS; i += 8) {
		memcpy(&word, (const uint8_t *)marks + i, sizeof(word));
		if (!word)
			continue;
		for (k = i; k < i + 8; k++)
			if (marks[k] && (e = ag_slot_sleeper(a, k)))
				ag_wake(a, e);
	}
	/*
	 * Downward from where the last tick's reads stopped, around to it: one
	 * that sleeps or ends is swapped out by the last (seen already, or, in
	 * the first stretch, seen next tick).
	 */
	n = a->awake.n;
	start = a->tick_next < n ? a->tick_next : n;
	a->tick_next = UINT_MAX;
	for (j = 0; j < n; j++) {
		i = j < start ? start - 1 - j : n - 1 - (j - start);
		if (i >= a->awake.n)
			continue;
		e = a->awake.v[i];
		if (e->sup.phase != BM_SUP_RUNNING)
			continue;
		if (due(e, now)) {
			if (!reads) {
				a->tick_next = i + 1;
				break;
			}
			reads--;
			ag_sample(a, e);
		}
		/*
		 * an attached process ended and its caller never said how; or an
		 * attach never named its process: what the caller cloned in goes
		 */
		if (e->exit_wait_ns && now >= e->exit_wait_ns) {
			if (e->req.mode == BM_REQ_ATTACH && !e->req.attach_pid)
				bm_sup__never_ran(&e->sup, "have its process: none was named (POST .../attach) within 10 s",
						  -ETIMEDOUT);
			bm_sup__exited(&e->sup, -1);
		} else if (e->idle && !e->readers && !e->exit_wait_ns)
			ag_sleep(a, e);
	}
	bm_loader__tend_stale(a->loader);
	ag_tenants_tick(a, now);
}
