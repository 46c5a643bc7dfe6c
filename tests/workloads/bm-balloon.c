// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bm-balloon MIB_PER_S MAX_MIB HOLD_MS: grow anonymous memory at MIB_PER_S
 * (touching every page, in 1 ms steps) up to MAX_MIB, hold it HOLD_MS, exit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long page = sysconf(_SC_PAGESIZE);
	double rate, start, hold;
	size_t max, done = 0;
	char *p;

	if (argc != 4 || (rate = atof(argv[1])) <= 0 || atol(argv[2]) <= 0 || atof(argv[3]) < 0) {
		fprintf(stderr, "usage: bm-balloon MIB_PER_S MAX_MIB HOLD_MS\n");
		return 2;
	}
	max = (size_t)atol(argv[2]) << 20;
	hold = atof(argv[3]) / 1e3;
	p = mmap(NULL, max, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		perror("bm-balloon: mmap");
		return 1;
	}
	start = now_s();
	while (done < max) {
		/* where the rate says we should be by now */
		size_t due = (size_t)((now_s() - start) * rate * 1048576.0);

		if (due > max)
			due = max;
		for (; done < due; done += page)
			p[done] = 1;
		if (done < max) {
			struct timespec ms = { 0, 1000000 };

			nanosleep(&ms, NULL);
		}
	}
	start = now_s();
	while (now_s() - start < hold) {
		struct timespec ms = { 0, 1000000 };

		nanosleep(&ms, NULL);
	}
	return 0;
}
