// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bm-threads N SPIN_MS: N threads released together, each burning SPIN_MS
 * of its own CPU time. Truth: N x SPIN_MS of CPU, min(N, CPUs) cores busy.
 */
#include "wl.h"

int main(int argc, char **argv)
{
	uint64_t n, spin;

	if (argc != 3 || !wl_parse_u64(argv[1], 1, 1024, &n) ||
	    !wl_parse_u64(argv[2], 0, WL_MS_MAX, &spin))
		return wl_usage("bm-threads", "N SPIN_MS  (1 <= N <= 1024)");
	wl_threads(n, spin);
	return 0;
}
