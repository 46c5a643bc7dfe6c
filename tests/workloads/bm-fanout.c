// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bm-fanout N HOLD_MS: fork N children that all live at the same time for
 * at least HOLD_MS, then reap them. Truth: N forks, N + 1 tasks at the peak.
 */
#include "wl.h"

int main(int argc, char **argv)
{
	uint64_t n, hold;

	if (argc != 3 || !wl_parse_u64(argv[1], 0, 4096, &n) ||
	    !wl_parse_u64(argv[2], 0, WL_MS_MAX, &hold))
		return wl_usage("bm-fanout", "N HOLD_MS  (N <= 4096)");
	wl_fanout(n, hold);
	return 0;
}
