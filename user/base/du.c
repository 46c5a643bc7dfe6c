// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/common.h"
#include "base/du.h"

/* Deeper than this is not walked: an fd per level. */
#define DU_MAX_DEPTH 128

struct du {
	dev_t dev;
	uint64_t left, bytes;
};

static uint64_t held(const struct stat *st)
{
	uint64_t b = (uint64_t)st->st_blocks * 512;

	return !S_ISDIR(st->st_mode) && st->st_nlink > 1 ? b / st->st_nlink : b;
}

/* The entries of the directory open at fd (closed here); -E2BIG once the budget is spent. */
static int walk(struct du *d, int fd, int depth)
{
	DIR *dir = fdopendir(fd);
	struct dirent *de;
	struct stat st;
	int sub, err = 0;

	if (!dir) {
		close(fd);
		return 0;
	}
	while (!err && (de = readdir(dir))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!d->left--) {
			err = -E2BIG;
			break;
		}
		/* gone since the readdir, or not ours to see: not counted */
		if (fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != d->dev)
			continue;
		d->bytes += held(&st);
		if (!S_ISDIR(st.st_mode) || depth >= DU_MAX_DEPTH)
			continue;
		/* O_NOFOLLOW: a directory swapped for a symlink since the fstatat is not followed */
		sub = openat(dirfd(dir), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0)
			err = walk(d, sub, depth + 1);
	}
	closedir(dir);
	return err;
}

int bm_du(const char *path, uint64_t max_entries, uint64_t *bytes)
{
	struct du d = { .left = max_entries };
	struct stat st;
	int fd, err;

	*bytes = 0;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	d.dev = st.st_dev;
	d.bytes = held(&st);
	err = walk(&d, fd, 0);
	*bytes = d.bytes;
	return err;
}

/* Shared by the owner and the thread: the last of the two to let go frees it. */
struct bm_du_watch {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int refs;
	bool stop;
	uint64_t bytes, walks;		/* under lock */
	uint64_t max_entries, min_gap_ns;
	char path[];
};

static void put(struct bm_du_watch *w)
{
	bool last;

	pthread_mutex_lock(&w->lock);
	last = !--w->refs;
	pthread_mutex_unlock(&w->lock);
	if (!last)
		return;
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

static void *watch(void *arg)
{
	struct bm_du_watch *w = arg;
	uint64_t t0, took, gap, bytes;
	struct timespec until;
	bool stop = false;
	int err;

	while (!stop) {
		t0 = bm_now_ns();
		err = bm_du(w->path, w->max_entries, &bytes);
		took = bm_now_ns() - t0;
		gap = took * 10 > w->min_gap_ns ? took * 10 : w->min_gap_ns;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += (time_t)(gap / BM_NSEC_PER_SEC);
		until.tv_nsec += (long)(gap % BM_NSEC_PER_SEC);
		if (until.tv_nsec >= (long)BM_NSEC_PER_SEC) {
			until.tv_sec++;
			until.tv_nsec -= (long)BM_NSEC_PER_SEC;
		}
		pthread_mutex_lock(&w->lock);
		/* a tree it could not open is not counted; one cut at max_entries, as far as it went */
		if (!err || err == -E2BIG) {
			w->bytes = bytes;
			w->walks++;
		}
		while (!w->stop && pthread_cond_timedwait(&w->cond, &w->lock, &until) != ETIMEDOUT)
			;
		stop = w->stop;
		pthread_mutex_unlock(&w->lock);
	}
	put(w);
	return NULL;
}

struct bm_du_watch *bm_du_watch_start(const char *path, uint64_t max_entries, uint64_t min_gap_ns)
{
	size_t len = strlen(path) + 1;
	struct bm_du_watch *w = calloc(1, sizeof(*w) + len);
	pthread_condattr_t ca;
	pthread_attr_t at;
	pthread_t t;
	int err;

	if (!w)
		return NULL;
	memcpy(w->path, path, len);
	w->max_entries = max_entries;
	w->min_gap_ns = min_gap_ns;
	w->refs = 2;
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	/* a walk is a loop of readdir and fstatat: a small stack does */
	pthread_attr_setstacksize(&at, 256 * 1024);
	err = pthread_create(&t, &at, watch, w);
	pthread_attr_destroy(&at);
	if (err) {
		pthread_cond_destroy(&w->cond);
		pthread_mutex_destroy(&w->lock);
		free(w);
		errno = err;
		return NULL;
	}
	return w;
}

uint64_t bm_du_watch_read(struct bm_du_watch *w, uint64_t *bytes)
{
	uint64_t walks;

	pthread_mutex_lock(&w->lock);
	*bytes = w->bytes;
	walks = w->walks;
	pthread_mutex_unlock(&w->lock);
	return walks;
}

void bm_du_watch_stop(struct bm_du_watch *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	put(w);
}
