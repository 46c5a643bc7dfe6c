// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/agent/identity.h ag_caller_pid(): a caller in a pid namespace of its
 * own (a pod's harness) names a process by that namespace's number; the agent
 * finds ours among the caller's descendants, however many there are: here
 * 600 children of the namespace's init (their pids overflow a page of its
 * children file), the process named a grandchild under the last of them.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/identity.h"
#include "base/common.h"

#define WIDE 600

struct msg {
	int tag;	/* 'I': the init's pid (ours), 'G': the grandchild's (the namespace's) */
	pid_t pid;
};

struct tree {
	pid_t outer;	/* our child: it unshares, forks the init and waits for it */
	pid_t init;	/* pid 1 of the new namespace, as we number it */
	pid_t leaf_ns;	/* the grandchild, as the namespace numbers it */
};

static void say(int fd, int tag, pid_t pid)
{
	struct msg m = { tag, pid };

	if (write(fd, &m, sizeof(m)) != sizeof(m))
		_exit(3);
}

/* The namespace's init: WIDE children, the last of them with one child; all wait to be killed. */
static void init_main(int fd)
{
	pid_t c, g;
	int i;

	for (i = 0; i < WIDE; i++) {
		c = fork();
		if (c < 0)
			_exit(4);
		if (c)
			continue;
		if (i == WIDE - 1) {
			g = fork();
			if (g < 0)
				_exit(5);
			if (!g)
				for (;;)
					pause();
			say(fd, 'G', g);
		}
		for (;;)
			pause();
	}
	for (;;)
		pause();
}

static void make_tree(struct tree *t)
{
	struct msg m;
	int fds[2], i, status;
	pid_t init;

	assert_int_equal(pipe(fds), 0);
	t->outer = fork();
	assert_true(t->outer >= 0);
	if (!t->outer) {
		close(fds[0]);
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);	/* nothing outlives a test killed midway */
		/* root may unshare a pid namespace; anyone else in a user namespace of its own */
		if (unshare(getuid() ? CLONE_NEWUSER | CLONE_NEWPID : CLONE_NEWPID))
			_exit(2);
		init = fork();
		if (init < 0)
			_exit(2);
		if (!init) {
			(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
			init_main(fds[1]);
		}
		say(fds[1], 'I', init);
		waitpid(init, &status, 0);
		_exit(0);
	}
	close(fds[1]);
	t->init = t->leaf_ns = 0;
	for (i = 0; i < 2 && read(fds[0], &m, sizeof(m)) == sizeof(m); i++) {
		if (m.tag == 'I')
			t->init = m.pid;
		else
			t->leaf_ns = m.pid;
	}
	close(fds[0]);
	if (!t->init || !t->leaf_ns) {
		waitpid(t->outer, &status, 0);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 2)
			skip();	/* no pid namespace here: under CI a failure (tests/run.sh) */
		fail_msg("the tree's processes did not start (exit status %d)", status);
	}
}

static void kill_tree(struct tree *t)
{
	int status;

	kill(t->init, SIGKILL);	/* the init's death ends its namespace */
	assert_int_equal(waitpid(t->outer, &status, 0), t->outer);
}

/* Our pid and the namespace's of pid, from its NSpid line; how many levels. */
static int nspid(pid_t pid, long *outer, long *inner)
{
	char path[64], buf[2048], *p;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (bm_read_file(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		return 0;
	p = strstr(buf, "\nNSpid:");
	if (!p)
		return 0;
	return sscanf(p + 7, "%ld %ld", outer, inner);
}

static void test_identity_same_namespace(void **state)
{
	pid_t out = 0;

	/* a caller in our namespace: its number is ours, unchecked here (the caller's owns() is) */
	assert_int_equal(ag_caller_pid(getpid(), 12345, &out), 0);
	assert_int_equal(out, 12345);
	assert_int_equal(ag_caller_pid(0, 12345, &out), -ESRCH);
}

static void test_identity_wide_tree(void **state)
{
	struct tree t;
	long outer = 0, inner = 0;
	pid_t out = 0;
	int err, lvl;

	make_tree(&t);
	err = ag_caller_pid(t.init, t.leaf_ns, &out);
	lvl = err ? 0 : nspid(out, &outer, &inner);
	/* a number nobody in the namespace has: all WIDE + 1 descendants walked, none found */
	assert_int_equal(ag_caller_pid(t.init, 4000000, &(pid_t){ 0 }), -ESRCH);
	kill_tree(&t);
	assert_int_equal(err, 0);
	assert_int_equal(lvl, 2);
	assert_int_equal(outer, out);
	assert_int_equal(inner, t.leaf_ns);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_identity_same_namespace),
		cmocka_unit_test(test_identity_wide_tree),
	};

	return cmocka_run_group_tests_name("identity", tests, NULL, NULL);
}
