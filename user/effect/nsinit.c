// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "effect/nsinit.h"

/* mount_setattr(2) (5.12+); glibc 2.36's <sys/mount.h> and <linux/mount.h> cannot meet */
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
struct bm_mount_attr {
	uint64_t attr_set, attr_clr, propagation, userns_fd;
};
/* open_tree(2) and move_mount(2) (5.2+), from <linux/mount.h> likewise */
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif

#define NS_TMPFS_FLAGS (MS_NOSUID | MS_NODEV)

bool bm_mounts_wanted(const struct bm_mounts *m)
{
	return m->ro_root || m->ro_cgroup || m->proc || m->tmp_bytes || m->shm_bytes || m->hide[0];
}

static int ro_tree(const char *path)
{
	struct bm_mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY };

	return syscall(SYS_mount_setattr, AT_FDCWD, path, AT_RECURSIVE, &attr, sizeof(attr)) < 0
	       ? -errno : 0;
}

/* Every mount of a cgroup filesystem read-only, each with whatever is mounted below it. */
static int ro_cgroups(void)
{
	char line[4096], mnt[4096], type[64];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int err = 0;

	if (!f)
		return -errno;
	while (!err && fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");

		if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
		    sscanf(sep + 3, "%63s", type) != 1 || strncmp(type, "cgroup", 6))
			continue;
		/* mount points with spaces are escaped (\040): none of cgroupfs's are */
		err = ro_tree(mnt);
	}
	fclose(f);
	return err;
}

static int tmpfs(const char *at, uint64_t bytes, unsigned long flags, const char *mode)
{
	char opts[64];

	snprintf(opts, sizeof(opts), "size=%llu,mode=%s", (unsigned long long)bytes, mode);
	return mount("tmpfs", at, "tmpfs", flags, opts) < 0 ? -errno : 0;
}

/* Every missing directory of path, as root 0755 (in a tmpfs of ours: /tmp hid them). */
static int mkdir_p(const char *path)
{
	char p[PATH_MAX], *s;
	bool last;

	snprintf(p, sizeof(p), "%s", path);
	for (s = p + 1;; s++) {
		if (*s && *s != '/')
			continue;
		last = !*s;
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return -errno;
		if (last)
			return 0;
		*s = '/';
	}
}

/*
 * The workspace, cloned (with what is mounted below it) while it is still
 * writable, then put back at its path once the read-only root and the
 * private /tmp are in place: a workspace under /tmp stays the host's.
 */
static int workspace_put(int tree, const char *path)
{
	int err;

	if (access(path, F_OK) < 0 && (err = mkdir_p(path)))
		return err;
	if (syscall(SYS_move_mount, tree, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return -errno;
	return 0;
}

void bm_ns_reenter(void)
{
	char cwd[PATH_MAX];

	if (!getcwd(cwd, sizeof(cwd)) || !chdir(cwd))
		return;
	fprintf(stderr, "burstmeter: the current directory %s is not in the sandbox (%s): "
		"running in /\n", cwd, strerror(errno));
	(void)!chdir("/");
}

int bm_ns_mount(const struct bm_mounts *m)
{
	int err = 0, tree = -1;

	/* nothing mounted here reaches the host, nor the host's later mounts here */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	if (m->workspace[0]) {
		tree = (int)syscall(SYS_open_tree, AT_FDCWD, m->workspace,
				    OPEN_TREE_CLONE | AT_RECURSIVE | O_CLOEXEC);
		if (tree < 0)
			return -errno;
	}
	/* read-only first: the writable places are mounted on top, and stay writable */
	if (m->ro_root)
		err = ro_tree("/");
	else if (m->ro_cgroup)
		err = ro_cgroups();
	if (!err && m->proc &&
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		err = -errno;
	if (!err && m->tmp_bytes)
		err = tmpfs("/tmp", m->tmp_bytes, NS_TMPFS_FLAGS, "1777");
	/* a dir the host lacks (a container without /dev/shm) is none to be private */
	if (!err && m->shm_bytes && !access("/dev/shm", F_OK))
		err = tmpfs("/dev/shm", m->shm_bytes, NS_TMPFS_FLAGS | MS_NOEXEC, "1777");
	if (!err && tree >= 0)
		err = workspace_put(tree, m->workspace);
	if (tree >= 0)
		close(tree);
	/* /dev/null over it: a connect() finds no socket there, and nothing else of the dir goes */
	if (!err && m->hide[0] && !access(m->hide, F_OK) &&
	    mount("/dev/null", m->hide, NULL, MS_BIND, NULL) < 0)
		err = -errno;
	return err;
}

int bm_ns_loopback_up(void)
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

struct pump {
	int in, out;
	uint64_t max, written, dropped;
};

/* Copy what waits on in: up to max to out, the rest counted. Returns false at its end. */
static bool pump_some(struct pump *p)
{
	char buf[65536];
	ssize_t n = read(p->in, buf, sizeof(buf)), off = 0, w;

	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return false;
	while (off < n && p->written < p->max) {
		size_t room = p->max - p->written, len = (size_t)(n - off);

		w = write(p->out, buf + off, len < room ? len : room);
		if (w <= 0)
			break;
		off += w;
		p->written += (uint64_t)w;
	}
	p->dropped += (uint64_t)(n - off);
	return true;
}

/* Reap what ended; cmd's status to status_fd once. Returns false when no child is left. */
static bool reap(pid_t cmd, int *status_fd)
{
	int status;
	pid_t pid;

	for (;;) {
		pid = waitpid(-1, &status, WNOHANG);
		if (pid < 0)
			return errno != ECHILD;
		if (pid == 0)
			return true;
		if (pid == cmd && *status_fd >= 0) {
			if (write(*status_fd, &status, sizeof(status)) != sizeof(status))
				status = -1;	/* the shim is gone: nobody to tell */
			close(*status_fd);
			*status_fd = -1;
		}
	}
}

void bm_ns_init(pid_t cmd, int status_fd, int log_in, int log_out, uint64_t log_max)
{
	struct pump p = { log_in, log_out, log_max, 0, 0 };
	struct pollfd pfd[2];
	bool children = true, logging = log_in >= 0;
	char note[160];
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	(void)sigprocmask(SIG_BLOCK, &mask, NULL);
	pfd[0].fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	pfd[0].events = POLLIN;
	pfd[1].events = POLLIN;
	/* a command that ended before SIGCHLD was blocked left no signal to wake us: look first */
	children = reap(cmd, &status_fd);
	while (children || logging) {
		struct signalfd_siginfo si;

		pfd[1].fd = logging ? log_in : -1;
		/* without a signalfd, look again every 50 ms */
		if (poll(pfd, 2, pfd[0].fd < 0 ? 50 : -1) < 0 && errno != EINTR)
			break;
		while (pfd[0].fd >= 0 && read(pfd[0].fd, &si, sizeof(si)) == sizeof(si))
			;
		children = reap(cmd, &status_fd);
		if (logging && pfd[1].revents)
			logging = pump_some(&p);
	}
	if (p.dropped) {
		snprintf(note, sizeof(note), "\n[burstmeter: output past %llu bytes dropped: %llu bytes]\n",
			 (unsigned long long)p.max, (unsigned long long)p.dropped);
		(void)!write(log_out, note, strlen(note));
	}
}
