// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bm-detect: the workloads of the bench's detection-latency section, with
 * the instants the bench needs written down on CLOCK_MONOTONIC.
 *
 *   bm-detect pids  STAMP FIFO CEIL SECONDS
 *   bm-detect mem   STAMP FIFO CEIL_MIB MAX_MIB
 *   bm-detect cpu   STAMP SECONDS THREADS WINDOW_MS
 *   bm-detect stamp FILE
 *
 * pids: tests/workloads/bm-forkbomb's loop (every process forks as fast as it
 * can, a refused fork is retried after 1 ms, everyone gives up after
 * SECONDS), counting its forks in a shared page: the process about to make
 * the task count CEIL + 1 (the first level past the ceiling) writes the
 * time just before that fork ("cross"); the first refused fork writes
 * "refused".
 * mem: tests/workloads/bm-balloon at its fastest (no rate limit), but on
 * MADV_HUGEPAGE memory (bench/memspike.c says why: in these VMs 4 KiB pages
 * the guest freed come back at ~100-250 MiB/s, a ramp; huge pages are
 * reused at GB/s). Before each 2 MiB step it knows its resident size
 * (/proc/self/statm near the ceiling); the step that will carry it past
 * CEIL_MIB writes "cross" first. Grows to MAX_MIB, holds 100 ms, exits.
 * cpu: tests/workloads/bm-hog, THREADS threads spinning, started on a
 * metering-window edge (windows are multiples of WINDOW_MS on
 * CLOCK_MONOTONIC), so their first window is full: "edge". "cross" is the
 * first instant the threads' CPU time within one window passed the window
 * (over 1.0 core; a busy machine may never let it); "cpu_max_us" the most
 * they had in one window. When the first two
 * threads both stop for over 20 ms after that, at the same time, the effect
 * was frozen: "frozen" and "thawed". Spins until SECONDS after the edge.
 * stamp: writes CLOCK_MONOTONIC ns into FILE and exits 0 (launch section).
 *
 * pids and mem hold FIFO open for writing (every process of theirs has it):
 * the bench reads the other end and sees EOF when the last one is gone.
 * STAMP is a file of at least 4 KiB made by the bench; it is mapped shared,
 * so what is written into it survives a SIGKILL. Fields (int64, ns, 0 = not
 * seen): exec, cross, refused, edge, frozen, thawed, then counters.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

struct stamp {
	int64_t exec, cross, refused, edge, frozen, thawed;
	int64_t forks;		/* pids: forks started and not refused */
	int64_t done;		/* pids: forks made */
	int64_t rss_at_cross;	/* mem: resident bytes known before the crossing step */
	int64_t mib_per_s;	/* mem: fill rate from exec to the crossing */
	int64_t cpu_max_us;	/* cpu: the most CPU time the threads had in one window */
};

static struct stamp *st;

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void once(int64_t *slot, int64_t v)
{
	int64_t zero = 0;

	__atomic_compare_exchange_n(slot, &zero, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

static int map_stamp(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		perror("bm-detect: stamp file");
		return -1;
	}
	st = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (st == MAP_FAILED) {
		perror("bm-detect: mmap stamp");
		return -1;
	}
	st->exec = now_ns();
	return 0;
}

/* The write end of the bench's FIFO, kept (and inherited by forks) until death. */
static int hold_fifo(const char *path)
{
	if (open(path, O_WRONLY | O_CLOEXEC) < 0) {
		perror("bm-detect: fifo");
		return -1;
	}
	return 0;
}

/* SCHED_FIFO for the one step that crosses, so that no preemption comes between its stamp and it. */
static void realtime(bool on)
{
	struct sched_param sp = { .sched_priority = on ? 1 : 0 };

	sched_setscheduler(0, on ? SCHED_FIFO | SCHED_RESET_ON_FORK : SCHED_OTHER, &sp);
}

static int pids(long ceil, double seconds)
{
	struct timespec ms = { 0, 1000000 };
	int64_t end = now_ns() + (int64_t)(seconds * 1e9);

	while (now_ns() < end) {
		/* tasks after this fork = 1 (us) + forks made: the CEIL-th fork is the first past the ceiling */
		int64_t n = __atomic_add_fetch(&st->forks, 1, __ATOMIC_SEQ_CST);
		bool crossing = false;
		pid_t pid;

		if (n == ceil && !st->cross) {
			/*
			 * The crossing fork comes after every earlier one has been made
			 * (none is still pending in a preempted process), and runs at
			 * once after its stamp; the forks past it wait for the stamp.
			 */
			while (__atomic_load_n(&st->done, __ATOMIC_SEQ_CST) < ceil - 1 && now_ns() < end)
				sched_yield();
			realtime(true);
			crossing = true;
			st->cross = now_ns();
		} else if (n > ceil) {
			while (!__atomic_load_n(&st->cross, __ATOMIC_SEQ_CST) && now_ns() < end)
				sched_yield();
		}
		pid = fork();
		if (crossing)
			realtime(false);
		if (pid < 0) {
			once(&st->refused, now_ns());
			__atomic_sub_fetch(&st->forks, 1, __ATOMIC_SEQ_CST);
			nanosleep(&ms, NULL);
		} else if (pid > 0) {
			__atomic_add_fetch(&st->done, 1, __ATOMIC_SEQ_CST);
		}
	}
	return 0;
}

static long resident_bytes(int fd)
{
	char buf[128];
	long size, res;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (sscanf(buf, "%ld %ld", &size, &res) != 2)
		return -1;
	return res * sysconf(_SC_PAGESIZE);
}

#define HUGE (2UL << 20)

static int mem(long ceil_mib, long max_mib)
{
	size_t max = (size_t)max_mib << 20, ceil = (size_t)ceil_mib << 20, done, page = 4096;
	int statm = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	long base, res;
	char *raw, *p;
	bool crossing = false;
	int64_t t;

	raw = mmap(NULL, max + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED || statm < 0) {
		perror("bm-detect: mmap");
		return 1;
	}
	p = (char *)(((uintptr_t)raw + HUGE - 1) & ~(HUGE - 1));
	madvise(p, max, MADV_HUGEPAGE);
	base = resident_bytes(statm);
	for (done = 0; done < max; done += HUGE) {
		size_t off;

		/* near the ceiling, ask the kernel what is resident; far from it, count */
		res = (long)(base + done);
		if (res + (long)(8 * HUGE) > (long)ceil)
			res = resident_bytes(statm);
		if (!st->cross && res + (long)HUGE > (long)ceil) {
			t = now_ns();
			st->rss_at_cross = res;
			st->mib_per_s = (int64_t)((double)done / 1048576.0 / ((t - st->exec) / 1e9));
			realtime(true);
			st->cross = now_ns();
			crossing = true;
		}
		for (off = 0; off < HUGE && done + off < max; off += page)
			p[done + off] = 1;
		if (crossing) {
			realtime(false);
			crossing = false;
		}
	}
	t = now_ns() + 100000000LL;
	while (now_ns() < t) {
		struct timespec ms = { 0, 1000000 };

		nanosleep(&ms, NULL);
	}
	return 0;
}

static int64_t cpu_end, cpu_window;
static int64_t gap_from[2], gap_to[2];
/* per thread: (window since the edge << 32) | CPU microseconds used in it */
static int64_t used[64];

static int64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * Spin from the edge to cpu_end. Each thread follows its own CPU time in the
 * current window, from its last reading before the window began (a thread
 * that was not running at the edge has the exact value: its clock stood
 * still), and publishes it; the first instant the sum over the threads
 * passes the window is "cross", the breach of 1.0 core. After it, each of
 * the first two threads notes its first clock gap over 20 ms: when both
 * have one and they overlap, the effect was frozen, from the later start.
 */
static int nthreads;

static void *spin(void *arg)
{
	struct timespec edge = { (time_t)(st->edge / 1000000000LL), (long)(st->edge % 1000000000LL) };
	int id = (int)(intptr_t)arg, j;
	int64_t last, t, w, win = -1, c, c_prev = -1, c_win = 0, sum;

	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &edge, NULL);
	last = now_ns();
	while ((t = now_ns()) < cpu_end) {
		if (id < 2 && st->cross && !gap_from[id] && t - last > 20000000LL) {
			gap_from[id] = last;
			gap_to[id] = t;
		}
		c = thread_cpu_ns();
		w = (t - st->edge) / cpu_window;
		if (w != win) {
			win = w;
			c_win = c_prev >= 0 ? c_prev : c;
		}
		__atomic_store_n(&used[id], w << 32 | (c - c_win) / 1000, __ATOMIC_RELAXED);
		for (sum = 0, j = 0; j < nthreads; j++) {
			int64_t u = __atomic_load_n(&used[j], __ATOMIC_RELAXED);

			if (u >> 32 == w)
				sum += u & 0xffffffffLL;
		}
		if (sum * 1000 > cpu_window)
			once(&st->cross, t);
		if (sum > st->cpu_max_us)
			st->cpu_max_us = sum;	/* (racy: a close enough maximum) */
		c_prev = c;
		last = t;
	}
	return arg;
}

static int cpu(double seconds, int threads, long window_ms)
{
	int64_t w = window_ms * 1000000LL, t = now_ns() + 1000000LL;
	pthread_t th[64];
	int i;

	if (threads < 1 || threads > 64)
		return 2;
	cpu_window = w;
	nthreads = threads;
	/* the next window edge at least 1 ms away: time enough to start the threads */
	st->edge = (t + w - 1) / w * w;
	cpu_end = st->edge + (int64_t)(seconds * 1e9);
	for (i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, spin, (void *)(intptr_t)i))
			return 1;
	for (i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	if (threads >= 2 && gap_from[0] && gap_from[1] &&
	    (gap_from[0] > gap_from[1] ? gap_from[0] : gap_from[1]) < (gap_to[0] < gap_to[1] ? gap_to[0] : gap_to[1])) {
		st->frozen = gap_from[0] > gap_from[1] ? gap_from[0] : gap_from[1];
		st->thawed = gap_to[0] < gap_to[1] ? gap_to[0] : gap_to[1];
	}
	return 0;
}

static int stamp(const char *path)
{
	char buf[32];
	int64_t t = now_ns();
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int n = snprintf(buf, sizeof(buf), "%lld\n", (long long)t);

	if (fd < 0 || write(fd, buf, (size_t)n) != n)
		return 1;
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "stamp"))
		return stamp(argv[2]);
	if (argc == 6 && !strcmp(argv[1], "pids")) {
		if (map_stamp(argv[2]) || hold_fifo(argv[3]))
			return 1;
		return pids(atol(argv[4]), atof(argv[5]));
	}
	if (argc == 6 && !strcmp(argv[1], "mem")) {
		if (map_stamp(argv[2]) || hold_fifo(argv[3]))
			return 1;
		return mem(atol(argv[4]), atol(argv[5]));
	}
	if (argc == 6 && !strcmp(argv[1], "cpu")) {
		if (map_stamp(argv[2]))
			return 1;
		return cpu(atof(argv[3]), atoi(argv[4]), atol(argv[5]));
	}
	fprintf(stderr, "usage: bm-detect pids STAMP FIFO CEIL SECONDS | mem STAMP FIFO CEIL_MIB MAX_MIB |\n"
			"       cpu STAMP SECONDS THREADS WINDOW_MS | stamp FILE\n");
	return 2;
}
