/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A fake cgroupfs for unit tests, in the manner of oomd's and systemd-oomd's
 * fixtures: a temporary directory tree the test builds, with knob files the
 * code under test writes for real and the test reads back. What a plain
 * directory cannot do, the helpers do: fake_v2_knobs() creates the files a
 * mkdir on cgroupfs brings with it, and fake_cgfs (user/effect/ceiling.h
 * struct bm_cgfs) does the same for the v1 twins and takes them away again
 * before the rmdir.
 *
 * bm_write_file() opens knobs O_WRONLY without O_TRUNC (cgroupfs needs no
 * more), so in a plain file a short write leaves the tail of a longer one:
 * knob_take() empties a knob after reading it, and each read sees exactly
 * what was written since the last one.
 *
 * Include after <cmocka.h>.
 */
#ifndef BM_TEST_FAKECG_H
#define BM_TEST_FAKECG_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "effect/ceiling.h"

#define FAKECG_FN static __attribute__((unused))

/* v2 files every cgroup has, and those a controller brings (when its parent delegates it). */
static const char *const fake_v2_core[] = {
	"cgroup.events", "cgroup.freeze", "cgroup.kill", "cgroup.procs", "cgroup.controllers",
	"cgroup.subtree_control", "cpu.stat", "cpu.pressure", "memory.pressure", "io.pressure",
	NULL,
};
static const char *const fake_v2_cpu[] = { "cpu.max", "cpu.weight", "cpu.idle", NULL };
static const char *const fake_v2_cpuset[] = { "cpuset.cpus", NULL };
static const char *const fake_v2_memory[] = {
	"memory.max", "memory.high", "memory.oom.group", "memory.events", "memory.peak",
	"memory.current", NULL,
};
static const char *const fake_v2_pids[] = { "pids.max", "pids.events", "pids.current", NULL };

/* The v1 hierarchies, indexed by enum bm_v1: what a mkdir in each brings. */
static const char *const fake_v1_files[BM_V1__MAX][6] = {
	[BM_V1_MEMORY] = { "memory.limit_in_bytes", "memory.oom_control",
			   "memory.max_usage_in_bytes", "memory.usage_in_bytes", NULL },
	[BM_V1_PIDS] = { "pids.max", "pids.events", "pids.current", NULL },
	[BM_V1_CPU] = { "cpu.cfs_period_us", "cpu.cfs_quota_us", "cpu.shares", "cpu.idle", NULL },
	[BM_V1_BLKIO] = { "blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device",
			  "blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device", NULL },
	[BM_V1_CPUSET] = { "cpuset.cpus", "cpuset.mems", NULL },
};
static const char *const fake_v1_core[] = { "cgroup.procs", "tasks", "notify_on_release", NULL };

/*
 * The fake v1 mounts (set by the test; "" where there is none), a knob to
 * create as a directory so that writing it fails (EISDIR), and the log of
 * what fake_cgfs made and removed.
 */
static char fake_v1_mount[BM_V1__MAX][PATH_MAX];
static const char *fake_broken;
static char fake_made[8][PATH_MAX], fake_removed[8][PATH_MAX];
static int fake_n_made, fake_n_removed;

/* A path from a format, in one of 8 rotating buffers (several may be live in one call). */
FAKECG_FN const char *fake_path(const char *fmt, ...)
{
	static char bufs[8][PATH_MAX];
	static int next;
	char *b = bufs[next++ % 8];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b, PATH_MAX, fmt, ap);
	va_end(ap);
	return b;
}

FAKECG_FN void fake_mkdirs(const char *path)
{
	char p[PATH_MAX], *s;

	snprintf(p, sizeof(p), "%s", path);
	for (s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) && errno != EEXIST)
			fail_msg("mkdir %s: %s", p, strerror(errno));
		*s = '/';
	}
	if (mkdir(p, 0755) && errno != EEXIST)
		fail_msg("mkdir %s: %s", p, strerror(errno));
}

/* Write dir/file from scratch (created, truncated), as the kernel would present it. */
FAKECG_FN void fake_put(const char *dir, const char *file, const char *content)
{
	const char *p = fake_path("%s/%s", dir, file);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		fail_msg("create %s: %s", p, strerror(errno));
	if (write(fd, content, strlen(content)) != (ssize_t)strlen(content))
		fail_msg("write %s: %s", p, strerror(errno));
	close(fd);
}

/* A knob as the kernel would create it: empty, or a directory if it is the broken one. */
static void fake_knob(const char *dir, const char *file)
{
	if (fake_broken && !strcmp(file, fake_broken))
		fake_mkdirs(fake_path("%s/%s", dir, file));
	else
		fake_put(dir, file, "");
}

static const char *knob_read(const char *dir, const char *file, int take)
{
	static char bufs[4][4096];
	static int next;
	char *b = bufs[next++ % 4];
	const char *p = fake_path("%s/%s", dir, file);
	int fd = open(p, O_RDWR | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return "<missing>";
	n = read(fd, b, sizeof(bufs[0]) - 1);
	b[n > 0 ? n : 0] = '\0';
	if (take && ftruncate(fd, 0))
		fail_msg("truncate %s: %s", p, strerror(errno));
	close(fd);
	return b;
}

/* What the code wrote into dir/file since the last take ("" if nothing), emptying it. */
FAKECG_FN const char *knob_take(const char *dir, const char *file)
{
	return knob_read(dir, file, 1);
}

/* dir/file as it is now, "<missing>" if it does not exist. */
FAKECG_FN const char *knob_peek(const char *dir, const char *file)
{
	return knob_read(dir, file, 0);
}

/* tests/fixtures/cgroupfs/<name>: through $BM_FIXTURES, else beside this header's folder. */
FAKECG_FN const char *fake_fixture(const char *name)
{
	const char *env = getenv("BM_FIXTURES");
	char src[] = __FILE__, *slash;
	const char *p;

	if (env && *env) {
		p = fake_path("%s/cgroupfs/%s", env, name);
	} else {
		/* strip "unit/fakecg.h" to reach tests/ */
		slash = strrchr(src, '/');
		if (slash)
			*slash = '\0';
		slash = strrchr(src, '/');
		if (slash)
			*slash = '\0';
		p = slash ? fake_path("%s/fixtures/cgroupfs/%s", src, name)
			  : fake_path("tests/fixtures/cgroupfs/%s", name);
	}
	if (access(p, R_OK))
		fail_msg("fixture %s not found: run from the repository root or set BM_FIXTURES",
			 p);
	return p;
}

/* Copy fixture name into dir/file. */
FAKECG_FN void fake_put_fixture(const char *dir, const char *file, const char *name)
{
	char buf[4096];
	const char *p = fake_fixture(name);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		fail_msg("open %s: %s", p, strerror(errno));
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	fake_put(dir, file, buf);
}

/* Is w one of the space-separated words of list? ("cpu" is not in "cpuset io") */
static int fake_has_word(const char *list, const char *w)
{
	size_t n = strlen(w);
	const char *p;

	for (p = list; (p = strstr(p, w)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || !p[n]))
			return 1;
	return 0;
}

static void fake_files(const char *dir, const char *const *files)
{
	for (; *files; files++)
		fake_knob(dir, *files);
}

/*
 * The knobs of a v2 cgroup at dir (made if need be) whose parent delegates
 * ctrls ("cpu memory pids", any subset); it is empty and not frozen.
 */
FAKECG_FN void fake_v2_knobs(const char *dir, const char *ctrls)
{
	fake_mkdirs(dir);
	fake_files(dir, fake_v2_core);
	fake_put(dir, "cgroup.events", "populated 0\nfrozen 0\n");
	if (fake_has_word(ctrls, "cpu"))
		fake_files(dir, fake_v2_cpu);
	if (fake_has_word(ctrls, "memory"))
		fake_files(dir, fake_v2_memory);
	if (fake_has_word(ctrls, "pids"))
		fake_files(dir, fake_v2_pids);
	if (fake_has_word(ctrls, "cpuset"))
		fake_files(dir, fake_v2_cpuset);
}

/*
 * cgroup.subtree_control of dir as the kernel shows it once ctrls are
 * enabled. A write of "+ctrl" cannot add to a plain file's set, and
 * without O_TRUNC it only overwrites the start: so the file begins with
 * room (spaces) for those writes, and the enabled set follows it. The
 * code's read-back finds the set; the test finds the last write at the
 * start.
 */
FAKECG_FN void fake_delegated(const char *dir, const char *ctrls)
{
	fake_put(dir, "cgroup.subtree_control", fake_path("%16s%s\n", "", ctrls));
}

FAKECG_FN void fake_populated(const char *dir, int populated)
{
	fake_put(dir, "cgroup.events", populated ? "populated 1\nfrozen 0\n"
						  : "populated 0\nfrozen 0\n");
}

static void fake_unlink(int dfd, const char *const *files)
{
	for (; *files; files++)
		if (unlinkat(dfd, *files, 0) && errno == EISDIR)
			(void)unlinkat(dfd, *files, AT_REMOVEDIR);
}

/* Take away every knob a cgroupfs mkdir would have brought (what rmdir does on cgroupfs). */
FAKECG_FN void fake_unknob(const char *dir)
{
	int v, dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return;
	fake_unlink(dfd, fake_v2_core);
	fake_unlink(dfd, fake_v2_cpu);
	fake_unlink(dfd, fake_v2_memory);
	fake_unlink(dfd, fake_v2_pids);
	fake_unlink(dfd, fake_v2_cpuset);
	fake_unlink(dfd, fake_v1_core);
	for (v = 0; v < BM_V1__MAX; v++)
		fake_unlink(dfd, fake_v1_files[v]);
	close(dfd);
}

/* struct bm_cgfs: a mkdir in a fake v1 hierarchy brings that controller's files. */
static int fake_make_dir(const char *path, mode_t mode)
{
	size_t n;
	int v;

	if (mkdir(path, mode))
		return -1;
	if (fake_n_made < 8)
		snprintf(fake_made[fake_n_made++], PATH_MAX, "%s", path);
	fake_files(path, fake_v1_core);
	for (v = 0; v < BM_V1__MAX; v++) {
		n = strlen(fake_v1_mount[v]);
		if (n && !strncmp(path, fake_v1_mount[v], n) && path[n] == '/')
			fake_files(path, fake_v1_files[v]);
	}
	return 0;
}

static int fake_remove_dir(const char *path)
{
	if (fake_n_removed < 8)
		snprintf(fake_removed[fake_n_removed++], PATH_MAX, "%s", path);
	fake_unknob(path);
	return rmdir(path);
}

static const struct bm_cgfs fake_cgfs __attribute__((unused)) = {
	.make_dir = fake_make_dir,
	.remove_dir = fake_remove_dir,
};

/* A fresh temporary root for one test's tree, under $TMPDIR (or /tmp). */
FAKECG_FN void fake_root(char *root, size_t len)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(root, len, "%s/bm-fakecg-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(root))
		fail_msg("mkdtemp %s: %s", root, strerror(errno));
	memset(fake_v1_mount, 0, sizeof(fake_v1_mount));
	fake_broken = NULL;
	fake_n_made = fake_n_removed = 0;
}

static int fake_rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(p) ? -1 : 0;
}

/* Remove the tree; nothing a test made is left behind. */
FAKECG_FN void fake_rmtree(const char *root)
{
	if (root[0])
		(void)nftw(root, fake_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* How many entries dir holds (besides . and ..): to show that nothing was made above us. */
FAKECG_FN int fake_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

#endif /* BM_TEST_FAKECG_H */
