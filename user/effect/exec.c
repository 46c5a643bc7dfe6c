// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/common.h"
#include "effect/exec.h"

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

static int set_loopback_up(void)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		err = -errno;
	ifr.ifr_flags |= IFF_UP;
	if (!err && ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		err = -errno;
	close(fd);
	return err;
}

/*
 * The bounding and ambient sets: while we still have CAP_SETPCAP, that is
 * before setuid() to a non-root uid takes every capability away.
 */
static int drop_bounding(void)
{
	int cap;

	for (cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	return 0;
}

/* Permitted, effective and inheritable emptied (lowering needs no privilege). */
static int drop_caps(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { { 0 } };

	return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

/* Namespaces first (they need the privileges), then where and who, then what it may do. */
static int apply_exec(const struct bm_exec *x)
{
	char opts[64];
	int i, err;

	if (x->new_netns && (unshare(CLONE_NEWNET) < 0 || set_loopback_up()))
		return errno ? -errno : -EIO;
	if (x->ro_root) {
		if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			return -errno;
		if (x->tmpfs_bytes) {
			snprintf(opts, sizeof(opts), "size=%llu,mode=1777", (unsigned long long)x->tmpfs_bytes);
			if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
				return -errno;
		}
		if (mount("/", "/", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0)
			return -errno;
	}
	for (i = 0; i < 3; i++)
		if (x->stdio[i] >= 0 && dup2(x->stdio[i], i) < 0)
			return -errno;
	if (x->cwd && chdir(x->cwd) < 0)
		return -errno;
	if (x->drop_caps && (err = drop_bounding()))
		return err;
	if (x->set_ids && (setgroups(0, NULL) < 0 || setgid(x->gid) < 0 || setuid(x->uid) < 0))
		return -errno;
	if (x->drop_caps && (err = drop_caps()))
		return err;
	if (x->no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	return 0;
}

static void child_exec(const int *join_fds, int n_join, char *const argv[], const struct bm_exec *x,
		       int errfd)
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
	if (x && (ce.err = -apply_exec(x))) {
		ce.join = 1;
		goto fail;
	}
	/* a shim ignores SIGTERM for itself; the command must not inherit that */
	for (i = 1; i < 32; i++)
		if (i != SIGKILL && i != SIGSTOP)
			signal(i, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (x && x->envp)
		execvpe(argv[0], argv, x->envp);
	else
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
	return bm_effect_spawn_ex(cgroup_fd, join_fds, n_join, argv, NULL, child);
}

int bm_effect_spawn_ex(int cgroup_fd, const int *join_fds, int n_join, char *const argv[],
		       const struct bm_exec *x, struct bm_child *child)
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
		child_exec(join_fds, n_join, argv, x, pipefd[1]);
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

/* The shim keeps only the fds it needs: a crashed agent's sockets and BPF links must not live on in it. */
static void shim_close_fds(const int *keep, int n)
{
	int lo = 3, fd, i;

	for (;;) {
		/* the smallest kept fd at or above lo; close what lies below it */
		fd = INT_MAX;
		for (i = 0; i < n; i++)
			if (keep[i] >= lo && keep[i] < fd)
				fd = keep[i];
		if (fd == INT_MAX)
			break;
		if (fd > lo)
			syscall(SYS_close_range, lo, fd - 1, 0);
		lo = fd + 1;
	}
	syscall(SYS_close_range, lo, ~0U, 0);
}

void bm_effect_shim_main(int cgroup_fd, const int *join_fds, int n_join, char *const argv[],
			 const struct bm_exec *x, const char *status_path, int report_fd)
{
	struct bm_shim_report r = { 0, 0 };
	struct bm_child c = { 0, -1 };
	char tmp[PATH_MAX + 8], line[32];
	int keep[8], nk = 0, i, status = 0, fd;

	setsid();
	/* its own name in ps and top, not its parent's ("burstmeter", "bm-spawner") */
	prctl(PR_SET_NAME, "bm-shim");
	/* a spawner's child: it lets the kernel reap its shims, a shim waits for its command */
	signal(SIGCHLD, SIG_DFL);
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	keep[nk++] = report_fd;
	keep[nk++] = cgroup_fd;
	for (i = 0; i < n_join && nk < 5; i++)
		keep[nk++] = join_fds[i];
	for (i = 0; x && i < 3 && nk < 8; i++)
		keep[nk++] = x->stdio[i];
	shim_close_fds(keep, nk);
	r.ret = bm_effect_spawn_ex(cgroup_fd, join_fds, n_join, argv, x, &c);
	r.pid = c.pid;
	if (write(report_fd, &r, sizeof(r)) != sizeof(r) || r.ret)
		_exit(1);
	close(report_fd);
	while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR)
		;
	/*
	 * Whole or not at all (the rename), for an agent that reads it after a
	 * crash of its own. Not fsync'ed: a crash of the machine ends the
	 * command too, and thousands of effects ending at once queued on the
	 * journal, one flush each.
	 */
	snprintf(tmp, sizeof(tmp), "%s.tmp", status_path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	snprintf(line, sizeof(line), "W %d\n", status);
	if (fd >= 0 && write(fd, line, strlen(line)) > 0 && !close(fd))
		rename(tmp, status_path);
	_exit(0);
}

int bm_effect_shim(int cgroup_fd, const int *join_fds, int n_join, char *const argv[],
		   const struct bm_exec *x, const char *status_path, struct bm_child *shim,
		   pid_t *effect_pid)
{
	struct bm_shim_report r;
	int pipefd[2], err;
	ssize_t n;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		return err;
	}
	if (!pid) {
		close(pipefd[0]);
		bm_effect_shim_main(cgroup_fd, join_fds, n_join, argv, x, status_path, pipefd[1]);
	}
	close(pipefd[1]);
	do
		n = read(pipefd[0], &r, sizeof(r));
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	if (n != sizeof(r) || r.ret) {
		waitpid(pid, NULL, 0);
		return n != sizeof(r) ? -EIO : r.ret;
	}
	shim->pid = pid;
	/* our own unreaped child: its pid cannot be reused under us */
	shim->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (shim->pidfd < 0)
		return -errno;
	*effect_pid = r.pid;
	return 0;
}

int bm_effect_shim_status(const char *status_path, int *wait_status)
{
	char buf[32];
	int n = bm_read_file(AT_FDCWD, status_path, buf, sizeof(buf));

	if (n < 0)
		return n;
	if (sscanf(buf, "W %d", wait_status) != 1)
		return -EINVAL;
	return 0;
}
