// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bm-launch: time plain fork + exec + wait of several commands, alternated.
 *
 *   bm-launch ROUNDS CMD1 [ARG...] [::: CMD2 [ARG...]]...
 *
 * Each round runs every command once; the order rotates by one each round so
 * no command always runs first or after the same neighbour. One untimed
 * warm-up run of each command comes first. The children's stdout and stderr
 * go to /dev/null. Prints one line per timed run:  CMDINDEX ROUND NS STATUS
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXCMDS 16

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int run_one(char **argv, int devnull, long long *ns)
{
	long long t0 = now_ns();
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(devnull, 1);
		dup2(devnull, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	*ns = now_ns() - t0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
	char **cmds[MAXCMDS];
	int ncmds = 0, rounds, devnull, r, k, i;
	long long ns;

	if (argc < 3 || (rounds = atoi(argv[1])) < 1) {
		fprintf(stderr, "usage: bm-launch ROUNDS CMD [ARG...] [::: CMD [ARG...]]...\n");
		return 2;
	}
	cmds[ncmds++] = &argv[2];
	for (i = 2; i < argc; i++) {
		if (strcmp(argv[i], ":::"))
			continue;
		argv[i] = NULL;
		if (i + 1 >= argc || ncmds == MAXCMDS) {
			fprintf(stderr, "bm-launch: empty command or too many commands\n");
			return 2;
		}
		cmds[ncmds++] = &argv[i + 1];
	}
	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (devnull < 0)
		return 1;
	for (k = 0; k < ncmds; k++)
		run_one(cmds[k], devnull, &ns);
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < ncmds; i++) {
			int st;

			k = (i + r) % ncmds;
			st = run_one(cmds[k], devnull, &ns);
			printf("%d %d %lld %d\n", k, r, ns, st);
		}
	}
	fflush(stdout);
	return 0;
}
