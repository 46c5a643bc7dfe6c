// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bm-memspike: one short memory spike with a known size and duration.
 *
 *   bm-memspike DELAY_MS SIZE_MIB HOLD_MS TOTAL_MS [WARM_PID]
 *   bm-memspike warm SIZE_MIB
 *
 * Sleeps DELAY_MS, maps SIZE_MIB and writes every page (so all of it is
 * resident), holds it HOLD_MS, unmaps it, then sleeps until TOTAL_MS after
 * its start. Prints the spike's timing (ms since start) on stdout:
 *   t0=.. touch_start=.. at90=.. touched=.. freed=..
 * t0 is the start on CLOCK_MONOTONIC (ms), the others are ms after it; at90
 * is when 90 % of it was resident: from then until freed, the resident size
 * is within 10 % of the peak.
 *
 * Why "warm": in these VMs memory the guest freed is handed back to the host
 * (virtio-balloon free page reporting) a second or two later, and touching it
 * again costs a host fault per page: 256 MiB then takes ~1 s to touch, not
 * the ~50 ms it takes on a host, and the spike is a slow ramp. So the bench
 * runs "bm-memspike warm SIZE" outside the effect first (it touches SIZE,
 * prints "ready" and waits for SIGUSR1); the spike signals it just before it
 * touches, waits for it to unmap and exit, and reuses those pages while they
 * are still backed. Both map with MADV_HUGEPAGE. The warm holder is outside
 * the effect: neither burstmeter nor the 1 s sampler counts it.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define HUGE (2UL << 20)

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

/* Map size bytes on a huge-page boundary (huge pages asked for), write every page. */
static char *touch(size_t size, double *t90, void **map, size_t *mapped)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t off;
	char *p;

	*mapped = size + HUGE;
	*map = mmap(NULL, *mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (*map == MAP_FAILED) {
		perror("bm-memspike: mmap");
		exit(1);
	}
	p = (char *)(((unsigned long)*map + HUGE - 1) & ~(HUGE - 1));
	madvise(p, size, MADV_HUGEPAGE);
	for (off = 0; off < size; off += page) {
		p[off] = 1;
		if (t90 && !*t90 && off >= size / 10 * 9)
			*t90 = now_ms();
	}
	return p;
}

static void on_usr1(int sig)
{
	(void)sig;
}

static int warm(size_t size)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	size_t mapped;
	sigset_t set, old;
	void *map;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, &old);
	sigaction(SIGUSR1, &sa, NULL);
	touch(size, NULL, &map, &mapped);
	printf("ready\n");
	fflush(stdout);
	sigsuspend(&old);
	munmap(map, mapped);
	return 0;
}

/* Signal the warm holder and wait until it has unmapped and exited. */
static void release_warm(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct pollfd pfd;

	if (fd < 0) {
		kill(pid, SIGUSR1);
		return;
	}
	pfd.fd = fd;
	pfd.events = POLLIN;
	kill(pid, SIGUSR1);
	while (poll(&pfd, 1, 2000) < 0 && errno == EINTR)
		;
	close(fd);
}

int main(int argc, char **argv)
{
	double t0 = now_ms(), t1, t90 = 0, t2, t3;
	long delay, hold, total;
	size_t size, mapped;
	void *map;

	if (argc == 3 && !strcmp(argv[1], "warm"))
		return warm((size_t)atol(argv[2]) << 20);
	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: bm-memspike DELAY_MS SIZE_MIB HOLD_MS TOTAL_MS [WARM_PID]\n"
				"       bm-memspike warm SIZE_MIB\n");
		return 2;
	}
	delay = atol(argv[1]);
	size = (size_t)atol(argv[2]) << 20;
	hold = atol(argv[3]);
	total = atol(argv[4]);
	sleep_until(t0 + delay);
	if (argc == 6)
		release_warm((pid_t)atol(argv[5]));
	t1 = now_ms();
	touch(size, &t90, &map, &mapped);
	t2 = now_ms();
	sleep_until(t2 + hold);
	munmap(map, mapped);
	t3 = now_ms();
	printf("t0=%.3f touch_start=%.1f at90=%.1f touched=%.1f freed=%.1f\n", t0, t1 - t0,
	       t90 - t0, t2 - t0, t3 - t0);
	fflush(stdout);
	sleep_until(t0 + total);
	return 0;
}
