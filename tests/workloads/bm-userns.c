// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bm-userns: each way a process could make a user namespace (and hold every
 * capability in it), tried in a child of its own, one line each: "unshare
 * ok CapEff:<hex>" or "unshare E<name>", likewise "clone", "clone3"; then
 * what must still work beside them: "thread ok" (glibc's pthread_create
 * falls back from clone3 to clone) and "fork ok". Truth: whether a sandbox
 * without capabilities lets them be regained. Exit 0 once all were tried,
 * 2 on bad usage.
 */
#include <errno.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wl.h"

#ifndef SYS_clone3
#define SYS_clone3 435
#endif

static const char *name(int err)
{
	switch (err) {
	case 0: return "ok";
	case EPERM: return "EPERM";
	case ENOSYS: return "ENOSYS";
	case EINVAL: return "EINVAL";
	case ENOSPC: return "ENOSPC";
	default: return strerror(err);
	}
}

/* In the new namespace: its effective capabilities, from /proc/self/status. */
static void say_caps(const char *how)
{
	char line[256], caps[64] = "?";
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %63s", caps) == 1)
			break;
	if (f)
		fclose(f);
	printf("%s ok CapEff:%s\n", how, caps);
	fflush(stdout);
}

/* The child's word (ok + caps) or the parent's (the errno of the call). */
static void reap(const char *how, long pid)
{
	if (pid < 0) {
		printf("%s %s\n", how, name(errno));
		return;
	}
	if (pid == 0) {
		say_caps(how);
		_exit(0);
	}
	waitpid((pid_t)pid, NULL, 0);
}

static void *thread(void *arg)
{
	return arg;
}

int main(int argc, char **argv)
{
	struct clone_args ca = { .flags = CLONE_NEWUSER, .exit_signal = SIGCHLD };
	pthread_t t;
	pid_t pid;
	int err;

	if (argc != 1)
		return wl_usage(argv[0], "");
	setvbuf(stdout, NULL, _IOLBF, 0);
	pid = fork();
	if (pid == 0) {
		if (unshare(CLONE_NEWUSER)) {
			printf("unshare %s\n", name(errno));
			_exit(0);
		}
		say_caps("unshare");
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
	/* fork's semantics (no stack given): the child goes on where we are */
	reap("clone", syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0));
	reap("clone3", syscall(SYS_clone3, &ca, sizeof(ca)));
	err = pthread_create(&t, NULL, thread, NULL);
	if (!err)
		pthread_join(t, NULL);
	printf("thread %s\n", name(err));
	pid = fork();
	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	printf("fork %s\n", pid > 0 ? "ok" : name(errno));
	return 0;
}
