// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bm-forkbomb SECONDS: every process forks as fast as it can; a refused fork
 * (EAGAIN at a pids ceiling) is retried after 1 ms. Every process gives up
 * after SECONDS, so a meter that fails to stop it still ends the test.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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
	struct timespec ms = { 0, 1000000 };
	double end;
	char *e;

	if (argc != 2 || strtod(argv[1], &e) <= 0 || *e) {
		fprintf(stderr, "usage: bm-forkbomb SECONDS\n");
		return 2;
	}
	end = now_s() + strtod(argv[1], NULL);
	while (now_s() < end) {
		pid_t pid = fork();

		if (pid < 0)
			nanosleep(&ms, NULL);
	}
	return 0;
}
