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

/* What the child reports on the pipe: the stage that failed and its errno. */
struct child_err {
	int join;
	int err;
};

static void child_exec(const int *join_fds, int n_join, char *const argv[], int errfd)
{
	struct child_err ce = { 0, 0 };
	sigset_t none;
	int i;

	for (i = 0; i < n_join; i++) {
		if (join_fds[i] >= 0 && write(join_fds[i], "0", 1) != 1) {
			ce.join = 1;
			ce.err = errno;
			goto fail;
		}
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execvp(argv[0], argv);
	ce.err = errno;
fail:
	if (write(errfd, &ce, sizeof(ce)) < 0)
		_exit(127);
	_exit(127);
}

int bm_effect_spawn(int cgroup_fd, const int *join_fds, int n_join, char *const argv[],
		    struct bm_child *child)
{
	struct clone_args args = { 0 };
	struct child_err ce = { 0, 0 };
	int pipefd[2], pidfd = -1, err = 0;
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
		child_exec(join_fds, n_join, argv, pipefd[1]);
	}
	close(pipefd[1]);
	/* EOF means the exec closed the pipe (O_CLOEXEC): the command is running */
	do
		n = read(pipefd[0], &ce, sizeof(ce));
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	if (n == sizeof(ce)) {
		waitpid((pid_t)pid, NULL, 0);
		close(pidfd);
		if (ce.join)
			return ce.err ? -ce.err : -EIO;
		return ce.err ? ce.err : EIO;
	}
	child->pid = (pid_t)pid;
	child->pidfd = pidfd;
	return 0;
}
