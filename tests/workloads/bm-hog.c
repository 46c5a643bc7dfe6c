// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* bm-hog SECONDS THREADS: THREADS threads spin for SECONDS of wall time, then exit 0. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *spin(void *arg)
{
	double end = now_s() + seconds;
	volatile unsigned long n = 0;

	while (now_s() < end)
		n++;
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t t[64];
	int n, i;

	if (argc != 3 || (seconds = atof(argv[1])) <= 0 || (n = atoi(argv[2])) < 1 || n > 64) {
		fprintf(stderr, "usage: bm-hog SECONDS THREADS (1-64)\n");
		return 2;
	}
	for (i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, spin, NULL))
			return 1;
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}
