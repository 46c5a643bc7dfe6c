// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bm-sleeper MS: sleep MS and exit. Truth: no CPU beyond starting and
 * exiting, one task, no forks, no network.
 */
#include "wl.h"

int main(int argc, char **argv)
{
	uint64_t ms;

	if (argc != 2 || !wl_parse_u64(argv[1], 0, WL_MS_MAX, &ms))
		return wl_usage("bm-sleeper", "MS");
	wl_sleep_ms(ms);
	return 0;
}
