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

#include "base/cgroup.h"
#include "base/common.h"
#include "effect/exec.h"
#include "effect/seccomp.h"

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

/* What the children report on the channel: the stage that failed and its errno. */
struct child_err {
	int join;
	int err;
};

bool bm_exec_can_drop_bounding(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { { 0 } };

	return !syscall(SYS_capget, &h, d) && (d[0].effective & (1u << CAP_SETPCAP));
}

/*
 * The bounding and ambient sets: while we still have CAP_SETPCAP, that is
 * before setuid() to a non-root uid takes every capability away. Without
 * it (a caller that is not root) the bounding set stays: it holds nothing
 * then, and no_new_privs keeps an exec from filling the other sets from it.
 */
static int drop_bounding(void)
{
	int cap;

	if (!bm_exec_can_drop_bounding())
		return prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL
		       ? -errno : 0;
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

/*
 * The namespaces a command without an init gets (its own, made here);
 * with pid_ns the init made them before it cloned the command.
 */
static int own_namespaces(const struct bm_exec *x)
{
	int err;

	if (x->new_netns) {
		if (unshare(CLONE_NEWNET) < 0)
			return -errno;
		err = bm_ns_loopback_up();
		if (err)
			return err;
	}
	if (bm_mounts_wanted(&x->mnt)) {
		if (unshare(CLONE_NEWNS) < 0)
			return -errno;
		err = bm_ns_mount(&x->mnt);
		if (err)
			return err;
	}
	return 0;
}

/* In the cgroup already: its cgroup namespace, then who, where, and what it may do. */
static int apply_exec(const struct bm_exec *x)
{
	int i, err;

	if (!x->pid_ns && (err = own_namespaces(x)))
		return err;
	/* rooted at the cgroup it is in: no cgroup above it can be named, or joined */
	if (x->cgroup_ns && unshare(CLONE_NEWCGROUP) < 0)
		return -errno;
	for (i = 0; i < 3; i++)
		if (x->stdio[i] >= 0 && dup2(x->stdio[i], i) < 0)
			return -errno;
	if (x->drop_caps && (err = drop_bounding()))
		return err;
	if (x->set_ids && (setgroups(0, NULL) < 0 || setgid(x->gid) < 0 || setuid(x->uid) < 0))
		return -errno;
	/* as the effect's uid: no directory it could not reach itself */
	if (x->cwd && chdir(x->cwd) < 0)
		return -errno;
	/* its own directory, again: a workspace may be mounted over it now */
	if (!x->cwd && bm_mounts_wanted(&x->mnt))
		bm_ns_reenter();
	if (x->drop_caps && (err = drop_caps()))
		return err;
	if (x->no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	/* in a user namespace of its own it would hold every capability again */
	if (x->drop_caps && (err = bm_seccomp_no_userns()))
		return err;
	return 0;
}

static void report(int fd, int join, int err)
{
	struct child_err ce = { join, err };

	if (write(fd, &ce, sizeof(ce)) < 0)
		_exit(127);
}

/*
 * Held at the gate (gate >= 0) until its holder says go, with the identity
 * to take then (bm_effect_release()); EOF: it never runs. Returns the exec
 * options to go on with (x, or *own with the identity replaced).
 */
static const struct bm_exec *wait_gate(int gate, const struct bm_exec *x, struct bm_exec *own)
{
	struct bm_ids ids;
	ssize_t n;

	if (gate < 0)
		return x;
	do
		n = read(gate, &ids, sizeof(ids));
	while (n < 0 && errno == EINTR);
	if (n != sizeof(ids))
		_exit(BM_EXIT_INTERNAL);
	close(gate);
	if (!ids.set || !x)
		return x;
	*own = *x;
	own->set_ids = true;
	own->uid = ids.uid;
	own->gid = ids.gid;
	own->no_new_privs = true;
	return own;
}

static void child_exec(const int *join_fds, int n_join, char *const argv[], const struct bm_exec *x,
		       int errfd, int gate)
{
	struct bm_exec own;
	sigset_t none;
	int i, err = 0;

	x = wait_gate(gate, x, &own);
	for (i = 0; i < n_join; i++) {
		if (join_fds[i] >= 0 && write(join_fds[i], "0", 1) != 1) {
			report(errfd, 1, errno);
			_exit(127);
		}
	}
	if (x && (err = -apply_exec(x))) {
		report(errfd, 1, err);
		_exit(127);
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
	report(errfd, 0, errno);
	_exit(127);
}

static int send_fd(int sock, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u = { { 0 } };
	struct child_err ce = { -1, 0 };	/* join -1: "here is its pidfd" */
	struct iovec iov = { &ce, sizeof(ce) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &msg, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

/*
 * The init's namespaces made up (loopback, mounts) and the pipe its
 * command's output goes through (x->log_max): all of it before the command
 * may run, none of it the command's, so a warm init does it while the shim
 * still says who it is. *cx: x with the command's stdout and stderr the pipe's.
 */
static int init_prepare(const struct bm_exec *x, struct bm_exec *cx, int logp[2])
{
	int err;

	*cx = *x;
	logp[0] = logp[1] = -1;
	prctl(PR_SET_NAME, "bm-init");
	if (x->new_netns && (err = bm_ns_loopback_up()))
		return err;
	err = bm_ns_mount(&x->mnt);
	if (err)
		return err;
	if (x->log_max) {
		if (pipe2(logp, O_CLOEXEC) < 0)
			return -errno;
		cx->stdio[1] = cx->stdio[2] = logp[1];
	}
	return 0;
}

/*
 * The init of the command's PID namespace, prepared (init_prepare(), err
 * its answer): pid 1 there, in our cgroup; it clones the command. Never returns.
 */
static void __attribute__((noreturn))
init_main(int cgroup_fd, const int *join_fds, int n_join, char *const argv[], const struct bm_exec *x,
	  const struct bm_exec *cx, const int logp[2], int err, int chan, int status_fd, int gate)
{
	int pidfd = -1;
	sigset_t chld;
	long pid;

	if (err)
		goto fail;
	/* its SIGCHLD kept for bm_ns_init()'s signalfd, however soon it ends (the child unblocks) */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	(void)sigprocmask(SIG_BLOCK, &chld, NULL);
	pid = bm_clone_into(cgroup_fd, 0, &pidfd);
	if (pid < 0) {
		err = -errno;
		goto fail;
	}
	if (pid == 0)
		child_exec(join_fds, n_join, argv, cx, chan, gate);
	/* the gate is the command's alone: its end comes from its holder, never from us */
	if (gate >= 0)
		close(gate);
	/* ours closed: the shim sees the end once the command has exec'd (or said why not) */
	err = send_fd(chan, pidfd);
	close(chan);
	close(pidfd);
	if (logp[1] >= 0)
		close(logp[1]);
	(void)err;
	bm_ns_init((pid_t)pid, status_fd, logp[0], x->stdio[1], x->log_max);
	_exit(0);
fail:
	report(chan, 1, -err);
	_exit(127);
}

/*
 * What the children say on chan: an error, and (pid_ns) the command's
 * pidfd. Until it closes (the exec), or with held until the pidfd came
 * (the command waits at its gate). Returns 0, else as bm_effect_spawn_ex().
 */
static int collect(int chan, int *pidfd, bool held)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct child_err ce;
	struct iovec iov = { &ce, sizeof(ce) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	int ret = 0;
	ssize_t n;

	for (;;) {
		msg.msg_control = u.buf;
		msg.msg_controllen = sizeof(u.buf);
		n = recvmsg(chan, &msg, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : ret;
		c = CMSG_FIRSTHDR(&msg);
		if (c && c->cmsg_type == SCM_RIGHTS)
			memcpy(pidfd, CMSG_DATA(c), sizeof(int));
		if (n == sizeof(ce) && ce.join >= 0 && !ret)
			ret = ce.join ? (ce.err ? -ce.err : -EIO) : (ce.err ? ce.err : EIO);
		if (held && *pidfd >= 0)
			return ret;
	}
}

/* The host's pid of the process a pidfd refers to (its fdinfo's "Pid:"), 0 if it is gone. */
static pid_t pidfd_pid(int pidfd)
{
	char path[64], buf[512], *p;
	int pid = 0;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	if (bm_read_file(AT_FDCWD, path, buf, sizeof(buf)) > 0 && (p = strstr(buf, "\nPid:")))
		sscanf(p + 5, "%d", &pid);
	return pid > 0 ? (pid_t)pid : 0;
}

int bm_effect_spawn(int cgroup_fd, const int *join_fds, int n_join, char *const argv[],
		    struct bm_child *child)
{
	return bm_effect_spawn_ex(cgroup_fd, join_fds, n_join, argv, NULL, child);
}

/*
 * The start both spawns share, up to the command's pid: with gate >= 0 it
 * waits there (h->go is the other end), else until it exec'd. On success
 * *child is filled; h (held) keeps the channel, and the init to reap.
 */
static int spawn(int cgroup_fd, const int *join_fds, int n_join, char *const argv[],
		 const struct bm_exec *x, int gate, struct bm_child *child, struct bm_held *h)
{
	bool pidns = x && x->pid_ns;
	int chan[2], st[2] = { -1, -1 }, pidfd = -1, cmd_fd = -1, ret;
	uint64_t flags = 0;
	long pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, chan) < 0)
		return -errno;
	if (pidns && pipe2(st, O_CLOEXEC) < 0) {
		ret = -errno;
		goto out;
	}
	if (pidns)
		flags = CLONE_NEWPID | CLONE_NEWNS | (x->new_netns ? CLONE_NEWNET : 0);
	pid = bm_clone_into(pidns ? -1 : cgroup_fd, flags, &pidfd);
	if (pid < 0) {
		ret = -errno;
		goto out;
	}
	if (pid == 0) {
		close(chan[0]);
		if (h)
			close(h->go);
		if (pidns) {
			struct bm_exec cx;
			int logp[2], err;

			close(st[0]);
			err = init_prepare(x, &cx, logp);
			init_main(cgroup_fd, join_fds, n_join, argv, x, &cx, logp, err, chan[1], st[1], gate);
		}
		child_exec(join_fds, n_join, argv, x, chan[1], gate);
	}
	close(chan[1]);
	chan[1] = -1;
	if (pidns) {
		close(st[1]);
		st[1] = -1;
	}
	/* the end of the channel: the exec closed it (O_CLOEXEC), the command runs */
	ret = 0;
	/* held, our own child is at its gate already: there is nothing to wait for */
	if (!h || pidns)
		ret = collect(chan[0], &cmd_fd, h != NULL);
	if (ret) {
		/* the init, having reaped a command that never ran, ends too */
		waitpid((pid_t)pid, NULL, 0);
		goto out;
	}
	if (pidns) {
		child->pidfd = cmd_fd;
		child->pid = cmd_fd >= 0 ? pidfd_pid(cmd_fd) : 0;
		child->status_fd = st[0];
		cmd_fd = st[0] = -1;
		/* the init is not waited for here: it outlives the command, to reap what it left */
	} else {
		child->pid = (pid_t)pid;
		child->pidfd = pidfd;
		child->status_fd = -1;
		pidfd = -1;
	}
	if (h) {
		h->chan = chan[0];
		h->init = pidns ? (pid_t)pid : 0;
		chan[0] = -1;
	}
out:
	if (pidfd >= 0)
		close(pidfd);
	if (cmd_fd >= 0)
		close(cmd_fd);
	if (st[0] >= 0)
		close(st[0]);
	if (st[1] >= 0)
		close(st[1]);
	if (chan[0] >= 0)
		close(chan[0]);
	if (chan[1] >= 0)
		close(chan[1]);
	return ret;
}

int bm_effect_spawn_ex(int cgroup_fd, const int *join_fds, int n_join, char *const argv[],
		       const struct bm_exec *x, struct bm_child *child)
{
	return spawn(cgroup_fd, join_fds, n_join, argv, x, -1, child, NULL);
}

int bm_effect_warm(struct bm_warm *w)
{
	int chan[2], st[2];
	long pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, chan) < 0)
		return -errno;
	if (pipe2(st, O_CLOEXEC) < 0) {
		close(chan[0]);
		close(chan[1]);
		return -errno;
	}
	pid = bm_clone_into(-1, CLONE_NEWPID | CLONE_NEWNS, &w->pidfd);
	if (pid == 0) {
		close(chan[0]);
		close(st[0]);
		*w = (struct bm_warm){ 0, -1, chan[1], st[1] };
		prctl(PR_SET_NAME, "bm-init");
		/* as bm_ns_mount() begins: nothing mounted here goes back to the host */
		(void)mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
		return 0;
	}
	close(chan[1]);
	close(st[1]);
	if (pid < 0) {
		close(chan[0]);
		close(st[0]);
		return -errno;
	}
	w->init = (pid_t)pid;
	w->chan = chan[0];
	w->st = st[0];
	return 1;
}

void bm_effect_warm_init(struct bm_warm *w, int cgroup_fd, const int *join_fds, int n_join,
			 char *const argv[], const struct bm_exec *x)
{
	int logp[2] = { -1, -1 }, err;
	struct bm_exec cx;
	ssize_t n;
	char go;

	/* made up before the go, while the shim writes who it is: nothing of the command's runs */
	err = x->new_netns && unshare(CLONE_NEWNET) < 0 ? -errno : 0;
	if (!err)
		err = init_prepare(x, &cx, logp);
	do
		n = read(w->chan, &go, 1);
	while (n < 0 && errno == EINTR);
	/* EOF: the shim ended, or started the command without us */
	if (n != 1)
		_exit(0);
	init_main(cgroup_fd, join_fds, n_join, argv, x, &cx, logp, err, w->chan, w->st, -1);
}

void bm_effect_warm_drop(struct bm_warm *w)
{
	if (w->init <= 0)
		return;
	close(w->chan);
	close(w->st);
	/* it reads EOF and ends at once */
	waitpid(w->init, NULL, 0);
	close(w->pidfd);
	w->init = 0;
}

int bm_effect_spawn_warm(struct bm_warm *w, int cgroup_fd, const int *join_fds, int n_join,
			 char *const argv[], const struct bm_exec *x, struct bm_child *child)
{
	int cmd_fd = -1, ret;

	if (!w || w->init <= 0 || !x || !x->pid_ns) {
		if (w)
			bm_effect_warm_drop(w);
		return bm_effect_spawn_ex(cgroup_fd, join_fds, n_join, argv, x, child);
	}
	ret = write(w->chan, "g", 1) == 1 ? collect(w->chan, &cmd_fd, false) : -errno;
	close(w->chan);
	close(w->pidfd);
	if (ret) {
		/* the init, having reaped a command that never ran, ends too */
		close(w->st);
		if (cmd_fd >= 0)
			close(cmd_fd);
		waitpid(w->init, NULL, 0);
		w->init = 0;
		return ret;
	}
	/* as spawn(): the init outlives the command, to reap what it left */
	child->pidfd = cmd_fd;
	child->pid = cmd_fd >= 0 ? pidfd_pid(cmd_fd) : 0;
	child->status_fd = w->st;
	w->init = 0;
	return 0;
}

int bm_effect_spawn_held(int cgroup_fd, char *const argv[], const struct bm_exec *x,
			 struct bm_child *child, struct bm_held *h)
{
	int gate[2], ret;

	h->chan = h->go = -1;
	h->init = 0;
	if (pipe2(gate, O_CLOEXEC) < 0)
		return -errno;
	h->go = gate[1];
	ret = spawn(cgroup_fd, NULL, 0, argv, x, gate[0], child, h);
	close(gate[0]);
	if (ret) {
		close(h->go);
		h->go = -1;
	}
	return ret;
}

int bm_effect_release(struct bm_held *h, const struct bm_ids *ids)
{
	struct bm_ids none = { 0 };
	int ret, fd = -1;
	ssize_t n;

	do
		n = write(h->go, ids ? ids : &none, sizeof(none));
	while (n < 0 && errno == EINTR);
	ret = n == sizeof(none) ? 0 : -EPIPE;
	close(h->go);
	h->go = -1;
	if (!ret)
		ret = collect(h->chan, &fd, false);
	if (fd >= 0)
		close(fd);
	close(h->chan);
	h->chan = -1;
	return ret;
}

void bm_effect_held_drop(struct bm_held *h, struct bm_child *child)
{
	/* EOF at the gate: the command exits unrun, then its init too */
	if (h->go >= 0)
		close(h->go);
	if (h->chan >= 0)
		close(h->chan);
	h->go = h->chan = -1;
	while (waitpid(h->init ? h->init : child->pid, NULL, 0) < 0 && errno == EINTR)
		;
	h->init = 0;
	if (child->pidfd >= 0)
		close(child->pidfd);
	if (child->status_fd >= 0)
		close(child->status_fd);
	child->pidfd = child->status_fd = -1;
}

int bm_child_wait(struct bm_child *c, int *wait_status)
{
	siginfo_t si;
	ssize_t n;

	if (c->status_fd >= 0) {
		do
			n = read(c->status_fd, wait_status, sizeof(*wait_status));
		while (n < 0 && errno == EINTR);
		/* its init died first (killed): the status went with it */
		if (n != sizeof(*wait_status))
			*wait_status = -1;
		return 0;
	}
	memset(&si, 0, sizeof(si));
	while (waitid(P_PID, (id_t)c->pid, &si, WEXITED) < 0)
		if (errno != EINTR)
			return -errno;
	*wait_status = si.si_code == CLD_EXITED ? W_EXITCODE(si.si_status, 0)
					       : W_EXITCODE(0, si.si_status);
	return 0;
}
