// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bm-io MODE FILE ...: block I/O whose amounts and timing are known, for
 * the meter's I/O dimensions. Every mode writes what it did to TRUTH (a
 * file, as "key value" lines) so that a test can hold the meter to it:
 *
 *   bm-io dio FILE MIB BURST_MS QUIET_MS TRUTH
 *	write MIB MiB with O_DIRECT in 256 KiB writes to FILE (cycling over
 *	its first 64 MiB), in bursts of BURST_MS (and at most a quarter of
 *	MIB: a fast disk still gives four bursts) separated by QUIET_MS of
 *	sleep; truth: bytes, and the most bytes one 10 ms window of
 *	CLOCK_MONOTONIC (the meter's windows) holds for sure (writes that
 *	began and ended in it: peak_window_lo) or may hold (began or ended
 *	in it: peak_window_hi).
 *   bm-io buffered FILE MIB TRUTH [syncfs]
 *	write MIB MiB through the page cache, then fsync (or syncfs: the
 *	flusher, a kernel thread, writes it back); truth: bytes.
 *   bm-io read FILE TRUTH
 *	drop FILE's pages from the page cache (it is clean: written and
 *	synced before), then read it whole; truth: bytes read, the rate from
 *	the first read to the last.
 *   bm-io steady FILE MIB TRUTH [KIB]
 *	O_DIRECT writes of MIB MiB (in writes of KIB KiB, 4-256, default
 *	256) as fast as they go (under a ceiling, at its rate); truth: bytes,
 *	writes, first and last write's ns, rate in bytes and writes.
 *   bm-io fill DIR MIB TRUTH [MIB_PER_S]
 *	write DIR/fill in 1 MiB writes until MIB MiB or ENOSPC (at most
 *	MIB_PER_S, if given); at ENOSPC, keep retrying once a second, for
 *	10 s, as a writer that waits for room would; truth: bytes written,
 *	enospc 0/1.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "wl.h"

#define CHUNK (256 * 1024)
#define WIN_NS (10 * WL_NSEC_PER_MSEC)
#define WINS 8192
#define CYCLE (64ULL << 20)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * WL_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static int fail(const char *what)
{
	fprintf(stderr, "bm-io: failed to %s: %s\n", what, strerror(errno));
	return 1;
}

static int truth(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int truth(const char *path, const char *fmt, ...)
{
	va_list ap;
	FILE *f = fopen(path, "w");

	if (!f)
		return fail("open the truth file");
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	return fclose(f) ? fail("write the truth file") : 0;
}

static void *chunk(void)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, CHUNK))
		return NULL;
	memset(p, 0x5a, CHUNK);
	return p;
}

static int dio(const char *file, uint64_t mib, uint64_t burst_ms, uint64_t quiet_ms, const char *out)
{
	static uint64_t lo[WINS], hi[WINS];
	uint64_t total = mib << 20, done = 0, off = 0, t0 = 0, t, e, start, ws, we, burst_end;
	uint64_t peak_lo = 0, peak_hi = 0;
	void *buf = chunk();
	int fd;

	fd = open(file, O_WRONLY | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
	if (fd < 0 || !buf)
		return fail("open the file with O_DIRECT");
	while (done < total) {
		start = now_ns();
		/* a quarter of the total at most, in whole writes: a ramdisk wrote 32 MiB in one burst */
		burst_end = done + (total / 4 / CHUNK ? total / 4 / CHUNK : 1) * CHUNK;
		while (done < total && done < burst_end && now_ns() - start < burst_ms * WL_NSEC_PER_MSEC) {
			t = now_ns();
			if (!t0)
				t0 = t / WIN_NS;
			if (pwrite(fd, buf, CHUNK, (off_t)off) != CHUNK)
				return fail("write");
			e = now_ns();
			/*
			 * Its bios were queued between t and e: a window holds it for sure
			 * if both are in it (lo), and may hold it if either is (hi).
			 */
			ws = t / WIN_NS - t0;
			we = e / WIN_NS - t0;
			if (we < WINS) {
				if (ws == we && (lo[ws] += CHUNK) > peak_lo)
					peak_lo = lo[ws];
				if ((hi[ws] += CHUNK) > peak_hi)
					peak_hi = hi[ws];
				if (we != ws && (hi[we] += CHUNK) > peak_hi)
					peak_hi = hi[we];
			}
			done += CHUNK;
			off = (off + CHUNK) % CYCLE;
		}
		if (done < total)
			wl_sleep_ms(quiet_ms);
	}
	close(fd);
	free(buf);
	return truth(out, "bytes %llu\npeak_window_lo %llu\npeak_window_hi %llu\n",
		     (unsigned long long)done, (unsigned long long)peak_lo, (unsigned long long)peak_hi);
}

static int buffered(const char *file, uint64_t mib, bool by_flusher, const char *out)
{
	uint64_t i;
	void *buf = chunk();
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || !buf)
		return fail("open the file");
	for (i = 0; i < (mib << 20) / CHUNK; i++)
		if (write(fd, buf, CHUNK) != CHUNK)
			return fail("write");
	if (by_flusher ? syncfs(fd) : fsync(fd))
		return fail(by_flusher ? "syncfs" : "fsync");
	close(fd);
	free(buf);
	return truth(out, "bytes %llu\n", (unsigned long long)(mib << 20));
}

static int readall(const char *file, const char *out)
{
	uint64_t got = 0, first, last;
	void *buf = chunk();
	ssize_t n;
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || !buf)
		return fail("open the file");
	/* clean pages go at once: what follows comes from the disk */
	if (fdatasync(fd) || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED))
		return fail("drop the file's pages");
	first = now_ns();
	while ((n = read(fd, buf, CHUNK)) > 0)
		got += (uint64_t)n;
	if (n < 0)
		return fail("read");
	last = now_ns();
	close(fd);
	free(buf);
	return truth(out, "bytes %llu\nbytes_per_s %.0f\n", (unsigned long long)got,
		     (double)got * 1e9 / (double)(last - first));
}

static int steady(const char *file, uint64_t mib, uint64_t kib, const char *out)
{
	uint64_t total = mib << 20, done = 0, first = 0, last = 0, ops = 0, size = kib << 10;
	void *buf = chunk();
	int fd = open(file, O_WRONLY | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);

	if (fd < 0 || !buf)
		return fail("open the file with O_DIRECT");
	first = now_ns();
	while (done < total) {
		if (pwrite(fd, buf, size, (off_t)(done % CYCLE)) != (ssize_t)size)
			return fail("write");
		done += size;
		ops++;
	}
	last = now_ns();
	close(fd);
	free(buf);
	return truth(out, "bytes %llu\nwrites %llu\nfirst_ns %llu\nlast_ns %llu\nbytes_per_s %.0f\n"
		     "writes_per_s %.1f\n", (unsigned long long)done, (unsigned long long)ops,
		     (unsigned long long)first, (unsigned long long)last,
		     (double)done * 1e9 / (double)(last - first),
		     (double)ops * 1e9 / (double)(last - first));
}

static int fill(const char *dir, uint64_t mib, uint64_t pace, const char *out)
{
	char path[4096];
	uint64_t done = 0, t0 = now_ns(), due;
	void *buf;
	int fd, tries = 0, full = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/fill", dir);
	buf = malloc(1 << 20);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || !buf)
		return fail("open the file");
	memset(buf, 0x33, 1 << 20);
	while (done < (mib << 20)) {
		n = write(fd, buf, 1 << 20);
		if (n > 0) {
			done += (uint64_t)n;
			/* paced: the next MiB no sooner than the rate allows */
			due = pace ? t0 + (done >> 20) * WL_NSEC_PER_SEC / pace : 0;
			if (due > now_ns())
				wl_sleep_ms((due - now_ns()) / WL_NSEC_PER_MSEC + 1);
			continue;
		}
		if (errno != ENOSPC && n < 0)
			return fail("write");
		full = 1;
		if (++tries > 10)
			break;
		wl_sleep_ms(1000);
	}
	close(fd);
	free(buf);
	return truth(out, "bytes %llu\nenospc %d\n", (unsigned long long)done, full);
}

int main(int argc, char **argv)
{
	uint64_t mib = 0, burst = 0, quiet = 0, pace = 0, kib = CHUNK >> 10;

	if (argc == 7 && !strcmp(argv[1], "dio") && wl_parse_u64(argv[3], 1, 1 << 20, &mib) &&
	    wl_parse_u64(argv[4], 1, WL_MS_MAX, &burst) && wl_parse_u64(argv[5], 0, WL_MS_MAX, &quiet))
		return dio(argv[2], mib, burst, quiet, argv[6]);
	if ((argc == 5 || (argc == 6 && !strcmp(argv[5], "syncfs"))) && !strcmp(argv[1], "buffered") &&
	    wl_parse_u64(argv[3], 1, 1 << 20, &mib))
		return buffered(argv[2], mib, argc == 6, argv[4]);
	if (argc == 4 && !strcmp(argv[1], "read"))
		return readall(argv[2], argv[3]);
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "steady") &&
	    wl_parse_u64(argv[3], 1, 1 << 20, &mib) &&
	    (argc == 5 || (wl_parse_u64(argv[5], 4, CHUNK >> 10, &kib) && !(kib % 4))))
		return steady(argv[2], mib, kib, argv[4]);
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "fill") &&
	    wl_parse_u64(argv[3], 1, 1 << 20, &mib) &&
	    (argc == 5 || wl_parse_u64(argv[5], 1, 1 << 20, &pace)))
		return fill(argv[2], mib, pace, argv[4]);
	return wl_usage("bm-io", "dio FILE MIB BURST_MS QUIET_MS TRUTH | buffered FILE MIB TRUTH [syncfs] | "
			"read FILE TRUTH | steady FILE MIB TRUTH [KIB] | fill DIR MIB TRUTH [MIB_PER_S]");
}
