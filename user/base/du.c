// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
