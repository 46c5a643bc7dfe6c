// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bm-memtouch MIB HOLD_MS: map MIB MiB of private anonymous memory, write a
 * byte in every page, hold it HOLD_MS, unmap it, sleep 100 ms and exit.
 * Truth: resident memory rises by exactly MIB MiB for at least HOLD_MS,
 * then falls back; the trailing sleep keeps the process alive (and metered)
 * past the fall, so a meter sees the drop and not just the exit.
 */
#include "wl.h"

int main(int argc, char **argv)
{
	uint64_t mib, hold;

	if (argc != 3 || !wl_parse_u64(argv[1], 1, 1ULL << 20, &mib) ||
	    !wl_parse_u64(argv[2], 0, WL_MS_MAX, &hold))
		return wl_usage("bm-memtouch", "MIB HOLD_MS");
	wl_touch(mib, hold);
	wl_sleep_ms(100);
	return 0;
}
