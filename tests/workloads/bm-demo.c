// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bm-demo: the workload of `make run`, about 3 s, bursty in every
 * dimension with quiet between the bursts, so that each one stands out as
 * a peak over a low average: CPU (2 threads x 150 ms), memory (256 MiB for
 * 50 ms), tasks (8 children for 100 ms), network (32 MiB over loopback).
 */
#include "wl.h"

/* Long enough that every burst is many 10 ms windows away from the next. */
#define QUIET_MS 500

int main(int argc, char **argv)
{
	(void)argv;
	if (argc != 1)
		return wl_usage("bm-demo", "(no arguments)");
	wl_sleep_ms(300);
	wl_threads(2, 150);
	wl_sleep_ms(QUIET_MS);
	wl_touch(256, 50);
	wl_sleep_ms(QUIET_MS);
	wl_fanout(8, 100);
	wl_sleep_ms(QUIET_MS);
	wl_netburst(32ULL << 20);
	wl_sleep_ms(300);
	return 0;
}
