// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/common.h"
#include "cli/mcp_child.h"

void bm_mcp_child_resolve(const char *cmd, char *const envp[], char *path, size_t len)
{
	const char *dirs = "/usr/local/bin:/usr/bin:/bin", *p, *end;
	size_t i;

	snprintf(path, len, "%s", cmd);
	if (strchr(cmd, '/'))
		return;
	for (i = 0; envp && envp[i]; i++)
		if (!strncmp(envp[i], "PATH=", 5))
			dirs = envp[i] + 5;
	for (p = dirs; *p; p = *end ? end + 1 : end) {
		end = strchrnul(p, ':');
		/* an empty entry is the current directory, as execvp has it */
		if (end == p)
			snprintf(path, len, "./%s", cmd);
		else
			snprintf(path, len, "%.*s/%s", (int)(end - p), p, cmd);
		if (!access(path, X_OK))
			return;
	}
	snprintf(path, len, "%s", cmd);
}

/* In the child: only async-signal-safe calls from here on. */
static int loopback_up(void)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", 3);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		err = -1;
	ifr.ifr_flags |= IFF_UP;
	if (!err && ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		err = -1;
	close(fd);
	return err;
}

static void say(const char *what)
{
	static const char pre[] = "burstmeter: failed to ";
	const char *why = strerrordesc_np(errno);	/* a static table: no locale, no allocation */

	if (write(STDERR_FILENO, pre, sizeof(pre) - 1) < 0 || write(STDERR_FILENO, what, strlen(what)) < 0 ||
	    write(STDERR_FILENO, ": ", 2) < 0 || write(STDERR_FILENO, why, strlen(why)) < 0 ||
	    write(STDERR_FILENO, "\n", 1) < 0)
		return;
}

static void __attribute__((noreturn)) child(const char *path, char *const argv[], char *const envp[],
					    const char *cwd, bool netns, int go, const int io[3])
{
	sigset_t none;
	char c;
	int i;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (i = 0; i < 3; i++)
		if (dup2(io[i], i) < 0)
			_exit(BM_EXIT_INTERNAL);
	for (i = 1; i < 32; i++)
		if (i != SIGKILL && i != SIGSTOP)
			signal(i, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (go >= 0 && read(go, &c, 1) != 1)
		_exit(BM_EXIT_INTERNAL);
	if (cwd && chdir(cwd) < 0) {
		say("enter cwd");
		_exit(BM_EXIT_INTERNAL);
	}
	if (netns && (unshare(CLONE_NEWNET) < 0 || loopback_up() < 0)) {
		say("give it a network namespace (network_policy none)");
		_exit(BM_EXIT_INTERNAL);
	}
	execve(path, argv, envp);
	_exit(errno == ENOENT || errno == ENOTDIR ? BM_EXIT_NOTFOUND : BM_EXIT_NOEXEC);
}

int bm_mcp_child__start(struct bm_mcp_child *c, const char *path, char *const argv[], char *const envp[],
			const char *cwd, bool netns, bool paused)
{
	int out[2] = { -1, -1 }, err[2] = { -1, -1 }, go[2] = { -1, -1 }, null_fd, io[3], ret = 0;
	pid_t pid;

	memset(c, 0, sizeof(*c));
	c->pidfd = c->out_fd = c->err_fd = c->go_fd = -1;
	/* every fd close-on-exec: a sibling call's command must not hold our pipes open */
	null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null_fd < 0 || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) || (paused && pipe2(go, O_CLOEXEC))) {
		ret = -errno;
		goto out;
	}
	io[0] = null_fd;
	io[1] = out[1];
	io[2] = err[1];
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		goto out;
	}
	if (!pid)
		child(path, argv, envp, cwd, netns, go[0], io);
	c->pid = pid;
	c->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	c->out_fd = out[0];
	c->err_fd = err[0];
	c->go_fd = go[1];
	out[0] = err[0] = go[1] = -1;
	fcntl(c->out_fd, F_SETFL, O_NONBLOCK);
	fcntl(c->err_fd, F_SETFL, O_NONBLOCK);
out:
	if (null_fd >= 0)
		close(null_fd);
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (err[i] >= 0)
			close(err[i]);
		if (go[i] >= 0)
			close(go[i]);
	}
	return ret;
}

int bm_mcp_child__release(struct bm_mcp_child *c)
{
	int ret = 0;

	if (c->go_fd < 0)
		return 0;
	if (write(c->go_fd, "g", 1) != 1)
		ret = -errno;
	close(c->go_fd);
	c->go_fd = -1;
	return ret;
}

/* Read what fd has now into o; closes it at EOF. */
static void drain(int *fd, struct bm_mcp_out *o)
{
	char buf[16384];
	ssize_t n;

	while (*fd >= 0) {
		n = read(*fd, buf, sizeof(buf));
		if (n > 0) {
			bm_mcp_out__add(o, buf, (size_t)n);
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		close(*fd);
		*fd = -1;
	}
}

int bm_mcp_child__pump(struct bm_mcp_child *c, struct bm_mcp_out *out, struct bm_mcp_out *err,
		       int extra_fd, int timeout_ms)
{
	struct pollfd p[4] = {
		{ .fd = c->out_fd, .events = POLLIN }, { .fd = c->err_fd, .events = POLLIN },
		{ .fd = c->reaped ? -1 : c->pidfd, .events = POLLIN }, { .fd = extra_fd, .events = POLLIN },
	};

	if (poll(p, 4, timeout_ms) <= 0)
		return 0;
	if (p[0].revents)
		drain(&c->out_fd, out);
	if (p[1].revents)
		drain(&c->err_fd, err);
	return (p[3].revents & POLLIN) ? 1 : 0;
}

bool bm_mcp_child__exited(struct bm_mcp_child *c)
{
	int st;

	if (c->reaped)
		return true;
	if (c->pid <= 0 || waitpid(c->pid, &st, WNOHANG) != c->pid)
		return false;
	c->reaped = true;
	c->wait_status = st;
	return true;
}

void bm_mcp_child__close(struct bm_mcp_child *c)
{
	if (c->go_fd >= 0)
		close(c->go_fd);	/* a paused child reads EOF and exits */
	if (c->pid > 0 && !c->reaped) {
		if (!bm_mcp_child__exited(c)) {
			kill(c->pid, SIGKILL);
			while (waitpid(c->pid, &c->wait_status, 0) < 0 && errno == EINTR)
				;
			c->reaped = true;
		}
	}
	if (c->pidfd >= 0)
		close(c->pidfd);
	if (c->out_fd >= 0)
		close(c->out_fd);
	if (c->err_fd >= 0)
		close(c->err_fd);
	c->pidfd = c->out_fd = c->err_fd = c->go_fd = -1;
}
