// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bm-memspike: one short memory spike with a known size and duration.
 *
 *   bm-memspike DELAY_MS SIZE_MIB HOLD_MS TOTAL_MS
 *
 * Sleeps DELAY_MS, maps SIZE_MIB and writes every page (so all of it is
 * resident), holds it HOLD_MS, unmaps it, then sleeps until TOTAL_MS after
 * its start. Prints the spike's timing (ms since start) on stdout:
 *   touch_start=.. touched=.. freed=..
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_until(double t_ms)
{
	double d = t_ms - now_ms();
	struct timespec ts;

	if (d <= 0)
		return;
	ts.tv_sec = (time_t)(d / 1e3);
	ts.tv_nsec = (long)((d - ts.tv_sec * 1e3) * 1e6);
	while (nanosleep(&ts, &ts))
		;
}

int main(int argc, char **argv)
{
	double t0 = now_ms(), t1, t2, t3;
	long delay, hold, total, page = sysconf(_SC_PAGESIZE);
	size_t size, off;
	char *p;

	if (argc != 5) {
		fprintf(stderr, "usage: bm-memspike DELAY_MS SIZE_MIB HOLD_MS TOTAL_MS\n");
		return 2;
	}
	delay = atol(argv[1]);
	size = (size_t)atol(argv[2]) << 20;
	hold = atol(argv[3]);
	total = atol(argv[4]);
	sleep_until(t0 + delay);
	t1 = now_ms();
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("bm-memspike: mmap");
		return 1;
	}
	for (off = 0; off < size; off += page)
		p[off] = 1;
	t2 = now_ms();
	sleep_until(t2 + hold);
	munmap(p, size);
	t3 = now_ms();
	printf("touch_start=%.1f touched=%.1f freed=%.1f\n", t1 - t0, t2 - t0, t3 - t0);
	fflush(stdout);
	sleep_until(t0 + total);
	return 0;
}
