// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The spawner: a process forked early that forks the agent's shims (spawner.h
 * says why). One request at a time, in order; the agent waits for each reply,
 * as it waited for the shim's report when it forked the shim itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "spawner.h"

#define SP_MAX_JOIN 8
#define SP_MAX_FDS (2 + SP_MAX_JOIN + 3)	/* memfd, cgroup, join slots, stdio */
#define SP_INHERIT UINT32_MAX			/* envc: the spawner's own environment */
#define SP_MAX_LEN (16u << 20)			/* the API takes 1 MiB bodies */

struct bm_spawner {
	int sock;
	pid_t pid;
};

/* What the memfd holds: status path, cwd (if has_cwd), argv, env, each NUL-terminated. */
struct sp_req {
	struct bm_exec x;	/* as given; its pointers and fds are replaced on arrival */
	uint32_t has_x, has_cwd, argc, envc, n_join;
	uint32_t fd_bits;	/* bit i: join slot i has an fd; bit SP_MAX_JOIN + k: stdio k */
	uint64_t len;
};

struct sp_rep {
	int32_t ret;
	int32_t shim_pid;
	int32_t effect_pid;
};

static int send_fds(int sock, const void *buf, size_t len, const int *fds, int n)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * SP_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { (void *)buf, len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;

	if (n) {
		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * n);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
	}
	while (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

/* One message and up to SP_MAX_FDS fds (*n of them, CLOEXEC): its length, 0 at EOF, or -errno. */
static ssize_t recv_fds(int sock, void *buf, size_t len, int *fds, int *n)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * SP_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { buf, len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	ssize_t r;

	*n = 0;
	do
		r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		*n = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		memcpy(fds, CMSG_DATA(c), sizeof(int) * *n);
	}
	if (msg.msg_flags & (MSG_CTRUNC | MSG_TRUNC))
		return -EMSGSIZE;
	return r;
}

/*
 * Split the memfd's strings: *status_path, x.cwd, then argv (NULL-terminated)
 * and env (likewise, from (*argv)[argc + 1]), all pointing into buf. 0 or -errno.
 */
static int unpack(struct sp_req *q, char *buf, const char **status_path, char ***argv)
{
	uint32_t n = q->argc + (q->envc == SP_INHERIT ? 0 : q->envc), i;
	char *p = buf, *end = buf + q->len, **v;

	if (!q->argc || q->argc > q->len || (q->envc != SP_INHERIT && q->envc > q->len))
		return -EINVAL;
	v = calloc(n + 2, sizeof(*v));
	if (!v)
		return -ENOMEM;
	*argv = v;
	q->x.envp = q->envc == SP_INHERIT ? NULL : v + q->argc + 1;
	q->x.cwd = NULL;
	for (i = 0; i < 1 + q->has_cwd + n; i++) {
		char *z = memchr(p, '\0', (size_t)(end - p));

		if (!z)
			return -EINVAL;
		if (i == 0)
			*status_path = p;
		else if (i == 1 && q->has_cwd)
			q->x.cwd = p;
		else if (i - 1 - q->has_cwd < q->argc)
			v[i - 1 - q->has_cwd] = p;
		else
			v[i - q->has_cwd] = p;	/* past argv's NULL */
		p = z + 1;
	}
	return 0;
}

/* Fork the shim for one request (fds: memfd, cgroup, join, stdio; the caller closes them). */
static struct sp_rep serve_one(struct sp_req *q, const int *fds, int nfds, int *shim_pidfd)
{
	struct sp_rep rep = { -EINVAL, 0, 0 };
	struct clone_args ca = { 0 };
	struct bm_shim_report r;
	int join[SP_MAX_JOIN], pipefd[2], k = 2, i, err;
	char *buf = NULL, **argv = NULL;
	const char *status_path = NULL;
	ssize_t n;
	long pid;

	*shim_pidfd = -1;
	if (q->n_join > SP_MAX_JOIN || nfds < 2 || q->len > SP_MAX_LEN)
		return rep;
	buf = malloc(q->len + 1);
	if (!buf || pread(fds[0], buf, q->len, 0) != (ssize_t)q->len)
		goto out;
	buf[q->len] = '\0';
	err = unpack(q, buf, &status_path, &argv);
	for (i = 0; i < (int)q->n_join; i++)
		join[i] = q->fd_bits & (1u << i) && k < nfds ? fds[k++] : -1;
	for (i = 0; i < 3; i++)
		q->x.stdio[i] = q->fd_bits & (1u << (SP_MAX_JOIN + i)) && k < nfds ? fds[k++] : -1;
	if (err || k != nfds) {
		rep.ret = err ?: -EINVAL;
		goto out;
	}
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		rep.ret = -errno;
		goto out;
	}
	ca.flags = CLONE_PIDFD;
	ca.pidfd = (uint64_t)(uintptr_t)shim_pidfd;
	ca.exit_signal = SIGCHLD;
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0) {
		close(pipefd[0]);
		bm_effect_shim_main(fds[1], join, (int)q->n_join, argv, q->has_x ? &q->x : NULL,
				    status_path, pipefd[1]);
	}
	rep.ret = pid < 0 ? -errno : 0;
	close(pipefd[1]);
	if (pid > 0) {
		do
			n = read(pipefd[0], &r, sizeof(r));
		while (n < 0 && errno == EINTR);
		/* a failed shim exits at once, and the kernel reaps it (SIGCHLD ignored) */
		rep.ret = n != sizeof(r) ? -EIO : r.ret;
		rep.shim_pid = rep.ret ? 0 : (int32_t)pid;
		rep.effect_pid = rep.ret ? 0 : r.pid;
	}
	close(pipefd[0]);
out:
	if (rep.ret && *shim_pidfd >= 0) {
		close(*shim_pidfd);
		*shim_pidfd = -1;
	}
	free(argv);
	free(buf);
	return rep;
}

static void __attribute__((noreturn)) serve(int sock, pid_t agent)
{
	struct sp_req q;
	struct sp_rep rep;
	int fds[SP_MAX_FDS], nfds, pidfd, i;
	ssize_t n;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != agent)
		_exit(0);
	prctl(PR_SET_NAME, "bm-spawner");
	/* the kernel reaps the shims; Ctrl-C on the agent's terminal is for the agent */
	signal(SIGCHLD, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	if (sock > 3)
		syscall(SYS_close_range, 3, sock - 1, 0);
	syscall(SYS_close_range, sock + 1, ~0U, 0);
	for (;;) {
		n = recv_fds(sock, &q, sizeof(q), fds, &nfds);
		if (n == 0 || (n < 0 && n != -EMSGSIZE))
			_exit(0);
		pidfd = -1;
		if (n == sizeof(q))
			rep = serve_one(&q, fds, nfds, &pidfd);
		else
			rep = (struct sp_rep){ n < 0 ? (int32_t)n : -EINVAL, 0, 0 };
		for (i = 0; i < nfds; i++)
			close(fds[i]);
		if (send_fds(sock, &rep, sizeof(rep), &pidfd, pidfd >= 0))
			_exit(0);
		if (pidfd >= 0)
			close(pidfd);
	}
}

struct bm_spawner *bm_spawner__start(void)
{
	struct bm_spawner *sp = calloc(1, sizeof(*sp));
	pid_t agent = getpid();
	int sv[2], err;

	if (!sp)
		return NULL;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		err = errno;
		free(sp);
		errno = err;
		return NULL;
	}
	sp->pid = fork();
	if (sp->pid == 0) {
		close(sv[0]);
		serve(sv[1], agent);
	}
	err = errno;
	close(sv[1]);
	if (sp->pid < 0) {
		close(sv[0]);
		free(sp);
		errno = err;
		return NULL;
	}
	sp->sock = sv[0];
	return sp;
}

int bm_spawner__shim(struct bm_spawner *sp, int cgroup_fd, const int *join_fds, int n_join,
		     char *const argv[], const struct bm_exec *x, const char *status_path,
		     struct bm_child *shim, pid_t *effect_pid)
{
	struct sp_req q = { 0 };
	struct sp_rep rep;
	int fds[SP_MAX_FDS], nfds = 0, mfd, i, ret;
	size_t len = strlen(status_path) + 1;
	char *buf, *p;
	ssize_t n;

	if (!sp || n_join > SP_MAX_JOIN || !argv || !argv[0])
		return -EINVAL;
	if (x)
		q.x = *x;
	q.has_x = !!x;
	q.has_cwd = x && x->cwd;
	q.n_join = (uint32_t)n_join;
	q.envc = x && x->envp ? 0 : SP_INHERIT;
	len += q.has_cwd ? strlen(x->cwd) + 1 : 0;
	for (q.argc = 0; argv[q.argc]; q.argc++)
		len += strlen(argv[q.argc]) + 1;
	for (; q.envc != SP_INHERIT && x->envp[q.envc]; q.envc++)
		len += strlen(x->envp[q.envc]) + 1;
	q.len = len;
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	p = stpcpy(buf, status_path) + 1;
	if (q.has_cwd)
		p = stpcpy(p, x->cwd) + 1;
	for (i = 0; argv[i]; i++)
		p = stpcpy(p, argv[i]) + 1;
	for (i = 0; q.envc != SP_INHERIT && x->envp[i]; i++)
		p = stpcpy(p, x->envp[i]) + 1;
	mfd = memfd_create("bm-spawn", MFD_CLOEXEC);
	ret = mfd < 0 ? -errno : write(mfd, buf, len) == (ssize_t)len ? 0 : -EIO;
	free(buf);
	if (ret)
		goto out;
	fds[nfds++] = mfd;
	fds[nfds++] = cgroup_fd;
	for (i = 0; i < n_join; i++)
		if (join_fds[i] >= 0) {
			q.fd_bits |= 1u << i;
			fds[nfds++] = join_fds[i];
		}
	for (i = 0; x && i < 3; i++)
		if (x->stdio[i] >= 0) {
			q.fd_bits |= 1u << (SP_MAX_JOIN + i);
			fds[nfds++] = x->stdio[i];
		}
	ret = send_fds(sp->sock, &q, sizeof(q), fds, nfds);
	if (ret)
		goto out;
	n = recv_fds(sp->sock, &rep, sizeof(rep), fds, &nfds);
	if (n != sizeof(rep)) {
		for (i = 0; i < nfds; i++)
			close(fds[i]);
		ret = n == 0 ? -ECONNRESET : n < 0 ? (int)n : -EIO;
		goto out;
	}
	ret = rep.ret;
	if (!ret && nfds != 1)
		ret = -EIO;
	if (!ret) {
		shim->pid = rep.shim_pid;
		shim->pidfd = fds[0];
		*effect_pid = rep.effect_pid;
	} else {
		for (i = 0; i < nfds; i++)
			close(fds[i]);
	}
out:
	if (mfd >= 0)
		close(mfd);
	return ret;
}

void bm_spawner__free(struct bm_spawner *sp)
{
	if (!sp)
		return;
	close(sp->sock);
	while (waitpid(sp->pid, NULL, 0) < 0 && errno == EINTR)
		;
	free(sp);
}
