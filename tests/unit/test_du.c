// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/base/du.h: what a workspace holds, as its storage ceiling counts it.
 * Truth: the st_blocks of what is made here, each counted once; a symlink
 * to a file outside (the test's own big file) adds nothing, a hard link
 * shares its file's blocks, and a walk stops at its budget.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/du.h"

static char root[64], outside[96];

static uint64_t blocks(const char *path)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	return (uint64_t)st.st_blocks * 512;
}

/* A file of n bytes written (not sparse), synced so that its blocks are allocated. */
static void put(const char *path, size_t n)
{
	char buf[4096];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	memset(buf, 1, sizeof(buf));
	for (; n; n -= n > sizeof(buf) ? sizeof(buf) : n)
		assert_true(write(fd, buf, n > sizeof(buf) ? sizeof(buf) : n) > 0);
	assert_int_equal(fsync(fd), 0);
	close(fd);
}

static void at(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", root, name);
}

static void test_du_counts(void **state)
{
	char a[128], d[128], b[128], l[128], s[128];
	uint64_t got, want;

	(void)state;
	at(a, sizeof(a), "a");
	at(d, sizeof(d), "d");
	at(b, sizeof(b), "d/b");
	at(l, sizeof(l), "d/link");
	at(s, sizeof(s), "d/sym");
	put(a, 1 << 20);
	assert_int_equal(mkdir(d, 0700), 0);
	put(b, 300000);
	assert_int_equal(link(b, l), 0);
	assert_int_equal(symlink(outside, s), 0);
	want = blocks(root) + blocks(a) + blocks(d) + blocks(b) + blocks(s);
	assert_int_equal(bm_du(root, 1000, &got), 0);
	assert_int_equal(got, want);
	/* a budget of two entries: it stops, says so, and counts what it saw */
	assert_int_equal(bm_du(root, 2, &got), -E2BIG);
	assert_true(got < want);
	assert_int_equal(bm_du(a, 10, &got), -ENOTDIR);
	unlink(s);
	unlink(l);
	unlink(b);
	rmdir(d);
	unlink(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_du_counts) };
	const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	int rc;

	snprintf(root, sizeof(root), "%.40s/du.XXXXXX", tmp);
	snprintf(outside, sizeof(outside), "%.40s/du-outside.XXXXXX", tmp);
	if (!mkdtemp(root))
		return 1;
	rc = mkstemp(outside);
	if (rc < 0)
		return 1;
	close(rc);
	put(outside, 4 << 20);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(outside);
	rmdir(root);
	return rc;
}
