/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Ground-truth workloads: small programs whose use of CPU, memory, tasks and
 * network is known exactly, so that the integration tests can hold the
 * meter's figures against the truth instead of against earlier runs.
 *
 * Every building block lives here (static inline, so a program that does not
 * use one gets no unused-function error); each bm-<name>.c only parses its
 * arguments and calls them. bm-demo chains the same blocks.
 *
 * Contract of every workload: nothing on stdout or stderr on success, exit 0;
 * bad arguments print a usage line on stderr and exit 2; a failing system
 * call prints one line on stderr and exits 1.
 */
#ifndef BM_WL_H
#define BM_WL_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WL_NSEC_PER_MSEC 1000000ULL
#define WL_NSEC_PER_SEC 1000000000ULL
/* One hour: long enough for any test, short enough that a typo cannot hang CI for a day. */
#define WL_MS_MAX 3600000ULL

static inline int wl_usage(const char *prog, const char *synopsis)
{
	fprintf(stderr, "usage: %s %s\n", prog, synopsis);
	return 2;
}

/* Fail with one line naming the call; exit 1 so a broken workload never passes as a result. */
static inline void wl_die(const char *what)
{
	fprintf(stderr, "workload: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Strict decimal: digits only (no sign, no blanks, no suffix), within [min, max]. */
static inline bool wl_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static inline uint64_t wl_clock_ns(clockid_t clk)
{
	struct timespec ts;

	if (clock_gettime(clk, &ts))
		wl_die("clock_gettime");
	return (uint64_t)ts.tv_sec * WL_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* Sleep until CLOCK_MONOTONIC reaches t_ns; signals do not cut it short. */
static inline void wl_sleep_until(uint64_t t_ns)
{
	struct timespec ts = { .tv_sec = t_ns / WL_NSEC_PER_SEC, .tv_nsec = t_ns % WL_NSEC_PER_SEC };
	int err;

	while ((err = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) == EINTR)
		;
	if (err) {
		errno = err;
		wl_die("clock_nanosleep");
	}
}

static inline void wl_sleep_ms(uint64_t ms)
{
	wl_sleep_until(wl_clock_ns(CLOCK_MONOTONIC) + ms * WL_NSEC_PER_MSEC);
}

/*
 * Burn ms of this thread's own CPU time. Counting thread CPU time, not wall
 * time, makes the amount exact even when the thread is preempted: the meter
 * must then see exactly ms, just spread over more windows.
 */
static inline void wl_spin_ms(uint64_t ms)
{
	uint64_t end = wl_clock_ns(CLOCK_THREAD_CPUTIME_ID) + ms * WL_NSEC_PER_MSEC;
	volatile uint64_t sink = 0;
	int i;

	while (wl_clock_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		for (i = 0; i < 2000; i++)	/* ~1 us of work between clock reads */
			sink += (uint64_t)i;
}

/*
 * Map mib MiB of private anonymous memory and write one byte in every page,
 * so that all of it becomes resident; hold it hold_ms, then unmap it.
 */
static inline void wl_touch(uint64_t mib, uint64_t hold_ms)
{
	size_t len = (size_t)mib << 20, page = (size_t)sysconf(_SC_PAGESIZE), off;
	volatile unsigned char *p;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		wl_die("mmap");
	for (off = 0; off < len; off += page)
		p[off] = 1;
	wl_sleep_ms(hold_ms);
	if (munmap((void *)p, len))
		wl_die("munmap");
}

/*
 * Fork n children that are all alive at once: each blocks reading a pipe
 * whose write end only the parent holds, and the parent closes it after the
 * last fork plus hold_ms. Then every child sees EOF, exits 0 and is reaped.
 */
static inline void wl_fanout(uint64_t n, uint64_t hold_ms)
{
	int fds[2], status;
	uint64_t i, made = 0, bad = 0;
	char c;

	if (pipe(fds))
		wl_die("pipe");
	for (i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			break;
		if (pid == 0) {
			close(fds[1]);
			while (read(fds[0], &c, 1) < 0 && errno == EINTR)
				;
			_exit(0);
		}
		made++;
	}
	if (made == n)
		wl_sleep_ms(hold_ms);
	close(fds[1]);
	close(fds[0]);
	/* reap what was made even after a failed fork: leave no zombie behind */
	for (i = 0; i < made; i++)
		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			bad++;
	if (made != n) {
		errno = EAGAIN;
		wl_die("fork");
	}
	if (bad) {
		errno = ECHILD;
		wl_die("a fanout child failed");
	}
}

/* Receiver: connect, read until EOF, exit 0 only if exactly bytes arrived. */
static inline void wl_receiver(const struct sockaddr_in *addr, uint64_t bytes)
{
	static char buf[1 << 20];
	uint64_t got = 0;
	ssize_t n;
	int fd;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (const struct sockaddr *)addr, sizeof(*addr)))
		_exit(1);
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			_exit(1);
		got += (uint64_t)n;
	}
	_exit(got == bytes ? 0 : 1);
}

/*
 * Loopback TCP burst: the sender (this process) listens on 127.0.0.1, port
 * 0; a receiver child connects and reads until EOF, sending nothing; the
 * sender accept()s and sends bytes from one large buffer as fast as the
 * socket takes them. So exactly bytes of payload go through sendmsg() in
 * this workload, all of them from the sender. connect(), FIN and ACKs are
 * not sendmsg(), so they add nothing.
 */
static inline void wl_netburst(uint64_t bytes)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(addr);
	size_t chunk = bytes < (64ULL << 20) ? (size_t)bytes : (size_t)(64ULL << 20);
	uint64_t sent = 0;
	int lfd, cfd, status;
	char *buf;
	pid_t pid;

	buf = malloc(chunk);
	if (!buf)
		wl_die("malloc");
	memset(buf, 'x', chunk);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		wl_die("socket");
	if (bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&addr, &alen))
		wl_die("listen on 127.0.0.1");
	pid = fork();
	if (pid < 0)
		wl_die("fork");
	if (pid == 0)
		wl_receiver(&addr, bytes);
	cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (cfd < 0)
		wl_die("accept");
	while (sent < bytes) {
		size_t want = bytes - sent < chunk ? (size_t)(bytes - sent) : chunk;
		ssize_t n = send(cfd, buf, want, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			wl_die("send");
		sent += (uint64_t)n;
	}
	if (shutdown(cfd, SHUT_WR))
		wl_die("shutdown");
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			wl_die("waitpid");
	close(cfd);
	close(lfd);
	free(buf);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		errno = EIO;
		wl_die("the receiver did not get every byte");
	}
}

struct wl_spinner {
	pthread_barrier_t *start;
	uint64_t ms;
};

static inline void *wl_spinner_main(void *arg)
{
	struct wl_spinner *s = arg;

	pthread_barrier_wait(s->start);
	wl_spin_ms(s->ms);
	return NULL;
}

/* n threads, released together by a barrier, each burning ms of its own CPU time. */
static inline void wl_threads(uint64_t n, uint64_t ms)
{
	pthread_barrier_t start;
	struct wl_spinner s = { .start = &start, .ms = ms };
	pthread_t *t = calloc(n, sizeof(*t));
	uint64_t i;
	int err;

	if (!t)
		wl_die("calloc");
	err = pthread_barrier_init(&start, NULL, (unsigned int)n);
	for (i = 0; !err && i < n; i++)
		err = pthread_create(&t[i], NULL, wl_spinner_main, &s);
	if (err) {
		/* threads already made wait at the barrier forever: exiting ends them */
		errno = err;
		wl_die("pthread_create");
	}
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&start);
	free(t);
}

#endif /* BM_WL_H */
