// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bm-netburst BYTES [QUIET_MS]: loopback TCP, exactly BYTES of payload sent
 * in one burst (see wl_netburst()). QUIET_MS (default 0) of sleep before and
 * after the burst make the burst a known, small part of the process's life,
 * so that its peak rate must stand well above its average.
 */
#include "wl.h"

int main(int argc, char **argv)
{
	uint64_t bytes, quiet = 0;

	if ((argc != 2 && argc != 3) || !wl_parse_u64(argv[1], 1, 1ULL << 34, &bytes) ||
	    (argc == 3 && !wl_parse_u64(argv[2], 0, WL_MS_MAX, &quiet)))
		return wl_usage("bm-netburst", "BYTES [QUIET_MS]  (BYTES <= 16 GiB)");
	wl_sleep_ms(quiet);
	wl_netburst(bytes);
	wl_sleep_ms(quiet);
	return 0;
}
