// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bm-empty: load and attach bench/empty.bpf.c, print "ready" on stdout, hold
 * the program until SIGINT/SIGTERM or until stdin reaches end of file.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "empty.skel.h"

static volatile sig_atomic_t stop;

static void on_sig(int sig)
{
	(void)sig;
	stop = 1;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_sig };
	struct empty_bpf *skel;
	struct pollfd pfd = { .fd = 0, .events = POLLIN };
	char buf[64];
	int err;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	skel = empty_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "bm-empty: load failed: %s\n", strerror(errno));
		return 1;
	}
	err = empty_bpf__attach(skel);
	if (err) {
		fprintf(stderr, "bm-empty: attach failed: %s\n", strerror(-err));
		empty_bpf__destroy(skel);
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (!stop) {
		if (poll(&pfd, 1, 200) > 0) {
			ssize_t n = read(0, buf, sizeof(buf));

			if (n <= 0)
				break;
		}
	}
	empty_bpf__destroy(skel);
	return 0;
}
