// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The shim (exec.h: bm_effect_shim(), bm_effect_shim_main() and its files):
 * a process of its own that starts the command with bm_effect_spawn_ex(),
 * waits for it and keeps its exit status past a crash of the agent. Apart
 * from exec.c, which spawns and knows nothing of it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/common.h"
#include "effect/exec.h"

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

/*
 * Whole or not at all (the rename), for an agent that reads it after a
 * crash of its own. Not fsync'ed: a crash of the machine ends the command
 * too, and thousands of effects ending at once queued on the journal.
 */
static void write_whole(const char *path, const char *suffix, const char *line)
{
	char tmp[PATH_MAX + 32], dst[PATH_MAX + 16];
	int fd;

	snprintf(dst, sizeof(dst), "%s%s", path, suffix);
	snprintf(tmp, sizeof(tmp), "%s.tmp", dst);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0 && write(fd, line, strlen(line)) > 0 && !close(fd))
		(void)rename(tmp, dst);
}

/*
 * Who we are, where an agent killed before it stored it finds it: on the
 * effect's cgroup, an xattr that lives in memory as long as the cgroup
 * does (a few us), else (no CAP_SYS_ADMIN, no xattrs) in a file beside
 * the status file (a create, a write and a rename: ~170 us of a launch's
 * serial path on the bench's ext4, traced in the shim).
 */
static void tell_pid(int cgroup_fd, const char *status_path, const char *line)
{
	if (fsetxattr(cgroup_fd, BM_SHIM_XATTR, line, strlen(line), 0))
		write_whole(status_path, BM_SHIM_PID_SUFFIX, line);
}

/* Our pid's and start time's, once bm_effect_shim_ready() has read them. */
static pid_t ready_pid;
static uint64_t ready_start;

void bm_effect_shim_ready(void)
{
	setsid();
	/* its own name in ps and top, not its parent's ("burstmeter", "bm-spawner") */
	prctl(PR_SET_NAME, "bm-shim");
	/* a spawner's child: it lets the kernel reap its shims, a shim waits for its command */
	signal(SIGCHLD, SIG_DFL);
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	ready_pid = getpid();
	ready_start = bm_pid_start(ready_pid);
}

void bm_effect_shim_main(int cgroup_fd, const int *join_fds, int n_join, char *const argv[],
			 const struct bm_exec *x, const char *status_path, int report_fd,
			 struct bm_warm *warm)
{
	struct bm_shim_report r = { 0, 0 };
	struct bm_child c = { 0, -1, -1 };
	char line[64];
	int keep[11], nk = 0, i, status = 0;

	/* a fork's (bm_effect_shim()) is done here; a ready shim's was done ahead */
	if (ready_pid != getpid())
		bm_effect_shim_ready();
	keep[nk++] = report_fd;
	keep[nk++] = cgroup_fd;
	for (i = 0; i < n_join && nk < 5; i++)
		keep[nk++] = join_fds[i];
	for (i = 0; x && i < 3 && nk < 8; i++)
		keep[nk++] = x->stdio[i];
	if (warm && warm->init > 0) {
		keep[nk++] = warm->chan;
		keep[nk++] = warm->st;
		keep[nk++] = warm->pidfd;
	}
	shim_close_fds(keep, nk);
	/* who we are, before the command can run: an agent killed now finds us, not a second run */
	snprintf(line, sizeof(line), "P %d %llu\n", (int)ready_pid, (unsigned long long)ready_start);
	tell_pid(cgroup_fd, status_path, line);
	/* found from now on: it outlives the agent and the spawner */
	(void)prctl(PR_SET_PDEATHSIG, 0);
	r.ret = bm_effect_spawn_warm(warm, cgroup_fd, join_fds, n_join, argv, x, &c);
	r.pid = c.pid;
	if (write(report_fd, &r, sizeof(r)) != sizeof(r) || r.ret)
		_exit(1);
	close(report_fd);
	if (bm_child_wait(&c, &status))
		status = -1;
	snprintf(line, sizeof(line), "W %d\n", status);
	/*
	 * As tell_pid(): on the cgroup, in memory. A file was a create and a
	 * rename in the one directory every shim writes to: 10,000 commands
	 * ending at once had their shims spin on its lock (rwsem, osq_lock),
	 * a CPU and a half for seconds (perf, bench scale).
	 */
	if (fsetxattr(cgroup_fd, BM_SHIM_XATTR_STATUS, line, strlen(line), 0))
		write_whole(status_path, "", line);
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
		bm_effect_shim_main(cgroup_fd, join_fds, n_join, argv, x, status_path, pipefd[1], NULL);
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

int bm_effect_shim_pid(const char *cgroup, const char *status_path, pid_t *pid, uint64_t *start)
{
	char path[PATH_MAX + 8], buf[64];
	unsigned long long st;
	ssize_t n;
	int p;

	n = cgroup ? getxattr(cgroup, BM_SHIM_XATTR, buf, sizeof(buf) - 1) : -1;
	if (n >= 0) {
		buf[n] = '\0';
	} else {
		snprintf(path, sizeof(path), "%s" BM_SHIM_PID_SUFFIX, status_path);
		n = bm_read_file(AT_FDCWD, path, buf, sizeof(buf));
		if (n < 0)
			return (int)n;
	}
	if (sscanf(buf, "P %d %llu", &p, &st) != 2 || p <= 0)
		return -EINVAL;
	*pid = p;
	*start = st;
	return 0;
}

int bm_effect_shim_status(int cgroup_fd, const char *status_path, int *wait_status, bool *on_cgroup)
{
	char buf[32];
	ssize_t n = cgroup_fd >= 0 ? fgetxattr(cgroup_fd, BM_SHIM_XATTR_STATUS, buf, sizeof(buf) - 1) : -1;

	*on_cgroup = n >= 0;
	if (n >= 0)
		buf[n] = '\0';
	else if ((n = bm_read_file(AT_FDCWD, status_path, buf, sizeof(buf))) < 0)
		return (int)n;
	if (sscanf(buf, "W %d", wait_status) != 1)
		return -EINVAL;
	return 0;
}
