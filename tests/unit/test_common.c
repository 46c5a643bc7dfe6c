// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/base/common.h: the start time that guards against pid reuse (it was
 * read one field early, and so always 0, which no check can fail against),
 * and the error helper that returns what it was given, whatever errno does.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/common.h"

/* Field 22 of /proc/PID/stat, counted from the start of the line (comm without spaces here). */
static unsigned long long start_by_sscanf(pid_t pid)
{
	unsigned long long v = 0;
	char path[64], buf[1024], *p;
	int i;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	p = strtok(buf, " ");
	for (i = 1; i < 22; i++)
		p = strtok(NULL, " ");
	assert_non_null(p);
	assert_int_equal(sscanf(p, "%llu", &v), 1);
	return v;
}

static void test_common_pid_start(void **state)
{
	uint64_t mine = bm_pid_start(getpid());
	pid_t child;
	int st;

	assert_true(mine > 0);
	assert_true(mine == start_by_sscanf(getpid()));
	child = fork();
	assert_true(child >= 0);
	if (!child) {
		pause();
		_exit(0);
	}
	/* a later process started no earlier; a gone one has none */
	usleep(20000);
	assert_true(bm_pid_start(child) >= mine);
	assert_true(bm_pid_start(child) == start_by_sscanf(child));
	kill(child, SIGKILL);
	waitpid(child, &st, 0);
	assert_true(bm_pid_start(child) == 0);
}

static void test_common_err_errno(void **state)
{
	/* the value given is returned negative, even with errno changed since */
	errno = EPERM;
	assert_int_equal(bm_err_errno(-ENOENT, "failed to find %s", "x"), -ENOENT);
	assert_int_equal(bm_err_errno(EACCES, "failed to open %s", "y"), -EACCES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_common_pid_start),
		cmocka_unit_test(test_common_err_errno),
	};

	return cmocka_run_group_tests_name("common", tests, NULL, NULL);
}
