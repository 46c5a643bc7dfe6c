// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bm-spike SPIN_MS PERIOD_MS COUNT: COUNT periods of PERIOD_MS, each one
 * single-threaded spin of SPIN_MS thread CPU time, then sleep for the rest
 * of the period. Truth: CPU = COUNT x SPIN_MS, never more than one core,
 * and (SPIN_MS < PERIOD_MS) idle between the spikes.
 */
#include "wl.h"

int main(int argc, char **argv)
{
	uint64_t spin, period, count, i, t0;

	if (argc != 4 || !wl_parse_u64(argv[1], 0, WL_MS_MAX, &spin) ||
	    !wl_parse_u64(argv[2], 1, WL_MS_MAX, &period) ||
	    !wl_parse_u64(argv[3], 0, 1000000, &count) || spin > period)
		return wl_usage("bm-spike", "SPIN_MS PERIOD_MS COUNT  (SPIN_MS <= PERIOD_MS)");
	for (i = 0; i < count; i++) {
		/* periods are anchored to their own start, so a slow spin never shifts the next */
		t0 = wl_clock_ns(CLOCK_MONOTONIC);
		wl_spin_ms(spin);
		wl_sleep_until(t0 + period * WL_NSEC_PER_MSEC);
	}
	return 0;
}
