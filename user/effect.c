// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "effect.h"

static int check_exec(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EACCES;
	if (access(path, X_OK) < 0)
		return -errno;
	return 0;
}

int bm_effect_resolve(const char *cmd, char *buf, size_t len)
{
	const char *path = getenv("PATH"), *p, *end;
	int err, first = -ENOENT;

	if (!*cmd)
		return -ENOENT;
	if (strchr(cmd, '/')) {
		snprintf(buf, len, "%s", cmd);
		return check_exec(cmd);
	}
	if (!path)
		path = "/usr/local/bin:/bin:/usr/bin";
	for (p = path; p; p = *end ? end + 1 : NULL) {
		int n;

		end = strchrnul(p, ':');
		n = snprintf(buf, len, "%.*s%s%s", (int)(end - p), p, end == p ? "" : "/", cmd);
		if (n < 0 || (size_t)n >= len)
			continue;
		err = check_exec(buf);
		if (!err)
			return 0;
		/* like execvp: a found-but-unrunnable file beats not found */
		if (err != -ENOENT && err != -ENOTDIR)
			first = err;
	}
	return first;
}

static void child_exec(char *const argv[], int errfd)
{
	sigset_t none;
	int err;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execvp(argv[0], argv);
	err = errno;
	if (write(errfd, &err, sizeof(err)) < 0)
		_exit(127);
	_exit(127);
}

int bm_effect_spawn(int cgroup_fd, char *const argv[], struct bm_child *child)
{
	struct clone_args args = { 0 };
	int pipefd[2], pidfd = -1, err = 0, exec_err = 0;
	ssize_t n;
	long pid;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	args.flags = CLONE_INTO_CGROUP | CLONE_PIDFD;
	args.pidfd = (uint64_t)(uintptr_t)&pidfd;
	args.exit_signal = SIGCHLD;
	args.cgroup = (uint64_t)cgroup_fd;
	pid = syscall(SYS_clone3, &args, sizeof(args));
	if (pid < 0) {
		err = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		return err;
	}
	if (pid == 0) {
		close(pipefd[0]);
		child_exec(argv, pipefd[1]);
	}
	close(pipefd[1]);
	/* EOF means the exec closed the pipe (O_CLOEXEC): the command is running */
	do
		n = read(pipefd[0], &exec_err, sizeof(exec_err));
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	if (n == sizeof(exec_err)) {
		waitpid((pid_t)pid, NULL, 0);
		close(pidfd);
		return exec_err ? exec_err : EIO;
	}
	child->pid = (pid_t)pid;
	child->pidfd = pidfd;
	return 0;
}
