// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The spawner: a process forked early that forks the agent's shims (spawner.h
 * says why). A request goes to a shim forked (and exec'd) before it came,
 * waiting on a socket for it; the next ready shim is made at once, and the
 * request's reply (its command started, or why not) goes back when its
 * shim reports, so several launches are under way at a time and the agent
 * waits for none. The spawner reaps its shims and tells the agent which
 * one ended: each by its pidfd, as it ends, since a wait for any child
 * walks every child there is (10,000 shims ending at once took the spawner
 * two CPU-seconds in wait_consider_task() alone).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/spawner.h"
#include "base/common.h"

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
	uint64_t tag;		/* the agent's, for the reply */
	uint32_t has_x, has_cwd, argc, envc, n_join;
	uint32_t fd_bits;	/* bit i: join slot i has an fd; bit SP_MAX_JOIN + k: stdio k */
	uint64_t len;
};

/* What the spawner says: the reply to the request, or that one of its shims ended. */
enum { SP_REPLY = 1, SP_EXIT = 2 };

struct sp_rep {
	int32_t type;
	int32_t ret;
	int32_t shim_pid;
	int32_t effect_pid;
	uint64_t tag;		/* SP_REPLY: the request's */
	uint64_t shim_id;	/* the spawner's number for the shim, never reused */
};

/*
 * The spawner's shims: started (their end is told by id), or handed a
 * request whose report has not come yet (sock >= 0, tag). pidfd, in the
 * spawner's epoll, says when it ended; -1 (out of fds): a wait for any
 * child finds it.
 */
struct sp_shim {
	pid_t pid;
	int sock, pidfd;
	uint64_t id, tag;
};

static int send_fds(int sock, const void *buf, size_t len, const int *fds, int n, int flags)
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
	while (sendmsg(sock, &msg, MSG_NOSIGNAL | flags) < 0)
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

/* Everything but fd closed: what a shim must not keep of the agent's or the spawner's. */
static void close_all_but(int fd)
{
	if (fd > 3)
		syscall(SYS_close_range, 3, fd - 1, 0);
	syscall(SYS_close_range, fd + 1, ~0U, 0);
}

/*
 * A request as it came on sock: q, its fds (*nfds of them), and what they
 * hold unpacked (join slots, stdio, the strings). 0, -errno for one that
 * is wrong, or 1 at EOF or a short message (there is nobody to tell).
 */
static int take_request(int sock, struct sp_req *q, int *fds, int *nfds, int *join,
			const char **status_path, char ***argv)
{
	int k = 2, i, err;
	char *buf;
	ssize_t n;

	n = recv_fds(sock, q, sizeof(*q), fds, nfds);
	if (n != sizeof(*q))
		return 1;
	if (q->n_join > SP_MAX_JOIN || *nfds < 2 || q->len > SP_MAX_LEN)
		return -EINVAL;
	buf = malloc(q->len + 1);
	if (!buf || pread(fds[0], buf, q->len, 0) != (ssize_t)q->len)
		return -ENOMEM;
	buf[q->len] = '\0';
	err = unpack(q, buf, status_path, argv);
	for (i = 0; i < (int)q->n_join; i++)
		join[i] = q->fd_bits & (1u << i) && k < *nfds ? fds[k++] : -1;
	for (i = 0; i < 3; i++)
		q->x.stdio[i] = q->fd_bits & (1u << (SP_MAX_JOIN + i)) && k < *nfds ? fds[k++] : -1;
	return err ?: k != *nfds ? -EINVAL : 0;
}

/*
 * The init a ready shim made ahead (bm_effect_warm()): the request comes
 * to it too, forwarded by the shim as it came; it starts the command on
 * the shim's go, or ends (EOF, or a command without a PID namespace).
 */
static void warm_init_main(struct bm_warm *w)
{
	int fds[SP_MAX_FDS], join[SP_MAX_JOIN], nfds;
	const char *status_path = NULL;
	char **argv = NULL;
	struct sp_req q;

	if (take_request(w->chan, &q, fds, &nfds, join, &status_path, &argv) || !q.has_x ||
	    !q.x.pid_ns)
		_exit(0);
	close(fds[0]);
	bm_effect_warm_init(w, fds[1], join, (int)q.n_join, argv, &q.x);
}

/*
 * A ready shim: forked ahead (and exec'd, see make_ready()), it makes the
 * namespaces of its command ahead too (bm_effect_warm()), waits on sock for
 * one request (the agent's message, forwarded as it came), unpacks it, and
 * becomes the effect's shim, reporting on sock (bm_effect_shim_main()).
 */
void bm_spawner__ready_main(int sock)
{
	struct bm_shim_report r = { -EINVAL, 0 };
	int fds[SP_MAX_FDS], join[SP_MAX_JOIN], nfds, warm;
	const char *status_path = NULL;
	char **argv = NULL;
	struct bm_warm w;
	struct sp_req q;
	sigset_t none;
	pid_t ppid;

	close_all_but(sock);
	/*
	 * Until the shim has said who it is (its .pid file, written before the
	 * command can run), it dies with the spawner, which dies with the agent:
	 * a launch an agent killed mid-way sent either runs, and is found, or
	 * never runs, and is run by the next agent; never both. Its init waits
	 * for the go the shim gives once it has said so, and ends with it.
	 */
	ppid = getppid();
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != ppid)
		_exit(1);
	/* the spawner's dispositions and mask back to the defaults: these cannot fail */
	(void)signal(SIGCHLD, SIG_DFL);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	warm = bm_effect_warm(&w);
	if (warm == 0) {
		close(sock);
		warm_init_main(&w);
	}
	/* the shim's own setup, while nothing waits for it */
	bm_effect_shim_ready();
	r.ret = take_request(sock, &q, fds, &nfds, join, &status_path, &argv);
	/*
	 * No request (the spawner stops: the agent's clean stop) or a bad one:
	 * our init ends before we do, so that nothing of ours outlives the
	 * spawner's wait for us.
	 */
	if (r.ret && warm > 0)
		bm_effect_warm_drop(&w);
	if (r.ret > 0)
		_exit(1);
	if (r.ret)
		goto fail;
	/* the same message to the init, which unpacks it while we say who we are */
	if (warm > 0 && send_fds(w.chan, &q, sizeof(q), fds, nfds, 0))
		bm_effect_warm_drop(&w);
	close(fds[0]);
	bm_effect_shim_main(fds[1], join, (int)q.n_join, argv, q.has_x ? &q.x : NULL, status_path, sock,
			    warm > 0 ? &w : NULL);
fail:
	if (write(sock, &r, sizeof(r)) < 0)
		_exit(1);
	_exit(1);
}

struct spawner {
	int sock, sigfd, epfd;
	int null_fd, slot;		/* /dev/null twice, low: slot takes a ready shim's socket (spawn_ready()) */
	const char *exe;		/* what a ready shim execs, NULL: none */
	int ready_sock;			/* to the ready shim, -1: none */
	pid_t ready_pid;
	uint64_t next_id;
	struct sp_shim *shims;
	size_t n_shims, cap_shims;
	size_t n_blind;			/* shims without a pidfd */
	struct sp_rep *out;		/* said but not yet sent: out[out_head..n_out) */
	size_t out_head, n_out, cap_out;
};

/*
 * The ready shim as a fresh image: a fork's anonymous memory stays tied to
 * ours (anon_vma), so thousands of shims forked from one spawner made every
 * rmap walk of its pages (reclaim, DAMON) and every later fork visit
 * thousands of mappings. The child shares our memory until the exec
 * (vfork), so no page table is copied either; and our fd table, of which
 * it keeps a copy of the first fds only, up to the slot its socket is put
 * in: we hold a pidfd for each shim (ended()), and a copy of all of them at
 * each spawn, closed again by the exec, made the 10,000th launch 10,000
 * times dearer than the first (posix_spawn(): dup_fd(), then
 * do_close_on_exec(), a third of the spawner's CPU while effects piled up).
 */
struct sp_spawn {
	const char *exe;
	int slot;
	int err;	/* the child's, if it could not exec: ours to read once clone() returns */
};

static int ready_child(void *arg)
{
	struct sp_spawn *w = arg;
	char *argv[] = { BM_SHIM_ARGV0, "--ready", NULL };
	sigset_t none;

	/* fds 0..slot our own, the rest never copied: only the CLOEXEC among those close at the exec */
	if (syscall(SYS_close_range, w->slot + 1, ~0U, CLOSE_RANGE_UNSHARE) < 0 ||
	    (w->slot == BM_SHIM_READY_FD ? fcntl(w->slot, F_SETFD, 0) : dup2(w->slot, BM_SHIM_READY_FD)) < 0) {
		w->err = errno;
		_exit(127);
	}
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	execve(w->exe, argv, environ);
	w->err = errno;
	_exit(127);
}

static pid_t spawn_ready(struct spawner *sp, int sock)
{
	static char stack[64 << 10] __attribute__((aligned(16)));
	struct sp_spawn w = { sp->exe, sp->slot, 0 };
	pid_t pid;

	if (sp->slot < 0 || dup3(sock, sp->slot, O_CLOEXEC) < 0)
		return -1;
	/* back once it has exec'd or died trying (vfork): its stack and w are ours again */
	pid = clone(ready_child, stack + sizeof(stack), CLONE_VM | CLONE_VFORK | CLONE_FILES | SIGCHLD, &w);
	(void)dup3(sp->null_fd, sp->slot, O_CLOEXEC);
	if (pid > 0 && w.err) {
		/* it could not exec (an old kernel, a binary gone): reaped, and the caller forks instead */
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		return -1;
	}
	return pid;
}

/* Make the next ready shim, if there is none. On failure the next request tries again. */
static void make_ready(struct spawner *sp)
{
	int sv[2];
	pid_t pid;

	if (sp->ready_sock >= 0)
		return;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return;
	pid = sp->exe ? spawn_ready(sp, sv[1]) : -1;
	if (pid < 0)
		pid = fork();
	if (pid == 0) {
		close(sv[0]);
		bm_spawner__ready_main(sv[1]);
	}
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		return;
	}
	sp->ready_sock = sv[0];
	sp->ready_pid = pid;
}

static struct sp_shim *add_shim(struct spawner *sp)
{
	struct sp_shim *n;

	if (sp->n_shims == sp->cap_shims) {
		n = realloc(sp->shims, (sp->cap_shims ? 2 * sp->cap_shims : 64) * sizeof(*n));
		if (!n)
			return NULL;
		sp->shims = n;
		sp->cap_shims = sp->cap_shims ? 2 * sp->cap_shims : 64;
	}
	return &sp->shims[sp->n_shims++];
}

static void drop_shim(struct spawner *sp, struct sp_shim *h)
{
	if (h->pidfd >= 0)
		close(h->pidfd);	/* out of the epoll with it */
	else
		sp->n_blind--;
	*h = sp->shims[--sp->n_shims];
}

/* Its end, as the epoll's: its pidfd there, by pid. */
static void watch_shim(struct spawner *sp, struct sp_shim *h)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)h->pid };

	h->pidfd = sp->epfd >= 0 ? (int)syscall(SYS_pidfd_open, h->pid, 0) : -1;
	if (h->pidfd >= 0 && epoll_ctl(sp->epfd, EPOLL_CTL_ADD, h->pidfd, &ev) < 0) {
		close(h->pidfd);
		h->pidfd = -1;
	}
	if (h->pidfd < 0)
		sp->n_blind++;
}

static struct sp_shim *find_shim(struct spawner *sp, pid_t pid)
{
	size_t i;

	for (i = 0; i < sp->n_shims; i++)
		if (sp->shims[i].pid == pid)
			return &sp->shims[i];
	return NULL;
}

/* What is queued, in order, as far as the socket takes it: 0, or -errno if the agent is gone. */
static int flush(struct spawner *sp)
{
	int ret;

	for (; sp->out_head < sp->n_out; sp->out_head++) {
		ret = send_fds(sp->sock, &sp->out[sp->out_head], sizeof(*sp->out), NULL, 0, MSG_DONTWAIT);
		if (ret == -EAGAIN)
			return 0;
		if (ret)
			return ret;
	}
	sp->out_head = sp->n_out = 0;
	return 0;
}

/*
 * Tell the agent, never waiting for it: the agent may itself be blocked
 * sending us requests, and we must go on reading them. What the socket
 * does not take now is queued (at most two messages per shim) and sent when
 * it drains. Only when the queue cannot grow do we wait. 0, or -errno if the
 * agent is gone.
 */
static int tell(struct spawner *sp, const struct sp_rep *rep)
{
	struct sp_rep *n;
	int ret;

	if (sp->out_head == sp->n_out) {
		ret = send_fds(sp->sock, rep, sizeof(*rep), NULL, 0, MSG_DONTWAIT);
		if (ret != -EAGAIN)
			return ret;
	}
	if (sp->n_out == sp->cap_out) {
		n = realloc(sp->out, (sp->cap_out ? 2 * sp->cap_out : 64) * sizeof(*n));
		if (!n) {
			while (sp->out_head < sp->n_out) {
				ret = send_fds(sp->sock, &sp->out[sp->out_head++], sizeof(*n), NULL, 0, 0);
				if (ret)
					return ret;
			}
			sp->out_head = sp->n_out = 0;
			return send_fds(sp->sock, rep, sizeof(*rep), NULL, 0, 0);
		}
		sp->out = n;
		sp->cap_out = sp->cap_out ? 2 * sp->cap_out : 64;
	}
	sp->out[sp->n_out++] = *rep;
	return 0;
}

/* The request, with its fds, to the ready shim; its report comes on that shim's socket. */
static int hand_over(struct spawner *sp, struct sp_req *q, const int *fds, int nfds)
{
	struct sp_rep rep = { SP_REPLY, -EAGAIN, 0, 0, q->tag, 0 };
	struct sp_shim *h;

	make_ready(sp);
	if (sp->ready_sock >= 0 && (h = add_shim(sp))) {
		*h = (struct sp_shim){ sp->ready_pid, sp->ready_sock, -1, 0, q->tag };
		watch_shim(sp, h);
		/* not ready any more: its end is the effect's, to be told (ended(), reap()) */
		sp->ready_sock = -1;
		sp->ready_pid = 0;
		/* a shim that died waiting: its report reads as EOF, and says so */
		send_fds(h->sock, q, sizeof(*q), fds, nfds, 0);
		return 0;
	}
	return tell(sp, &rep);
}

/* A handed-over shim's report (or its EOF) into the reply; from then on it is known by its id. */
static int reported(struct spawner *sp, struct sp_shim *h)
{
	struct sp_rep rep = { SP_REPLY, -EIO, 0, 0, h->tag, 0 };
	struct bm_shim_report r;
	ssize_t n;

	do
		n = read(h->sock, &r, sizeof(r));
	while (n < 0 && errno == EINTR);
	close(h->sock);
	h->sock = -1;
	if (n == sizeof(r))
		rep.ret = r.ret;
	if (!rep.ret) {
		rep.shim_pid = (int32_t)h->pid;
		rep.effect_pid = r.pid;
		rep.shim_id = h->id = ++sp->next_id;
	} else {
		/* it exits, and is reaped unannounced */
		h->id = 0;
	}
	return tell(sp, &rep);
}

/* h was reaped: the agent is told (its id), and it is forgotten. -1 if the agent is gone. */
static int gone(struct spawner *sp, struct sp_shim *h)
{
	struct sp_rep rep = { SP_EXIT, 0, (int32_t)h->pid, 0, 0, 0 };

	/* ended before we read its report (a quick command): the report first */
	if (h->sock >= 0 && reported(sp, h))
		return -1;
	rep.shim_id = h->id;
	drop_shim(sp, h);
	return rep.shim_id ? tell(sp, &rep) : 0;
}

/* The ready shim died waiting (killed from outside): the next request makes another. */
static void ready_gone(struct spawner *sp)
{
	sp->ready_pid = 0;
	if (sp->ready_sock >= 0)
		close(sp->ready_sock);
	sp->ready_sock = -1;
}

/*
 * SIGCHLD: the ready shim, by its pid; any other child only while a shim
 * has no pidfd (the others are reaped by theirs, ended()). Returns -1 if
 * the agent is gone.
 */
static int reap(struct spawner *sp)
{
	struct signalfd_siginfo si;
	struct sp_shim *h;
	pid_t pid;

	while (read(sp->sigfd, &si, sizeof(si)) == sizeof(si))
		;
	if (sp->ready_pid > 0 && waitpid(sp->ready_pid, NULL, WNOHANG) == sp->ready_pid)
		ready_gone(sp);
	while (sp->n_blind && (pid = waitpid(-1, NULL, WNOHANG)) > 0) {
		if (pid == sp->ready_pid) {
			ready_gone(sp);
			continue;
		}
		h = find_shim(sp, pid);
		if (h && gone(sp, h))
			return -1;
	}
	return 0;
}

/* The shims whose pidfds say they ended: each reaped alone. Returns -1 if the agent is gone. */
static int ended(struct spawner *sp)
{
	struct epoll_event ev[64];
	struct sp_shim *h;
	siginfo_t si;
	int n, i;

	while ((n = epoll_wait(sp->epfd, ev, BM_ARRAY_SIZE(ev), 0)) > 0) {
		for (i = 0; i < n; i++) {
			h = find_shim(sp, (pid_t)ev[i].data.u64);
			si.si_pid = 0;
			if (!h || waitid(P_PIDFD, (id_t)h->pidfd, &si, WEXITED | WNOHANG) < 0 || !si.si_pid)
				continue;
			if (gone(sp, h))
				return -1;
		}
		if (n < (int)BM_ARRAY_SIZE(ev))
			break;
	}
	return 0;
}

/*
 * The agent is gone or stopping: the ready shim is told (EOF), and waited
 * for, as it waits for its init; then nothing of the agent's own is left
 * once the agent has reaped us (bm_spawner__free()). Handed-over shims go
 * on: they outlive the agent by design.
 */
static void __attribute__((noreturn)) leave(struct spawner *sp)
{
	if (sp->ready_sock >= 0)
		close(sp->ready_sock);
	while (sp->ready_pid > 0 && waitpid(sp->ready_pid, NULL, 0) < 0 && errno == EINTR)
		;
	_exit(0);
}

static void __attribute__((noreturn)) serve(int sock, pid_t agent, const char *exe)
{
	struct spawner sp = { .sock = sock, .exe = exe, .ready_sock = -1 };
	enum { P_AGENT, P_SIG, P_ENDS, P_SHIMS };
	struct pollfd *pfd = NULL;
	size_t n_pfd = 0, i, k;
	struct sp_req q;
	struct sp_rep rep;
	int fds[SP_MAX_FDS], nfds, j;
	sigset_t mask;
	ssize_t n;

	/* it must not outlive the agent */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		_exit(1);
	if (getppid() != agent)
		_exit(0);
	(void)prctl(PR_SET_NAME, "bm-spawner");	/* a name for ps: nothing depends on it */
	/* Ctrl-C on the agent's terminal is for the agent; valid signals: these cannot fail */
	(void)signal(SIGINT, SIG_IGN);
	(void)signal(SIGTERM, SIG_IGN);
	(void)signal(SIGHUP, SIG_IGN);
	(void)signal(SIGPIPE, SIG_IGN);
	close_all_but(sock);
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	(void)sigprocmask(SIG_BLOCK, &mask, NULL);	/* cannot fail: a valid how and set */
	sp.sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sp.sigfd < 0)
		_exit(1);
	/* none: every shim is found by a wait for any child, as if out of fds */
	sp.epfd = epoll_create1(EPOLL_CLOEXEC);
	/* opened before any shim's pidfd: the lowest free, so a spawn copies few fds */
	sp.null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	sp.slot = sp.null_fd >= 0 ? fcntl(sp.null_fd, F_DUPFD_CLOEXEC, 0) : -1;
	for (;;) {
		/* the agent, SIGCHLD, the shims' ends, and every shim whose report is due */
		if (n_pfd < P_SHIMS + sp.n_shims) {
			free(pfd);
			n_pfd = P_SHIMS + sp.cap_shims;
			pfd = calloc(n_pfd, sizeof(*pfd));
			if (!pfd)
				_exit(1);
		}
		pfd[P_AGENT] = (struct pollfd){ .fd = sock, .events = POLLIN | (sp.out_head < sp.n_out ? POLLOUT : 0) };
		pfd[P_SIG] = (struct pollfd){ .fd = sp.sigfd, .events = POLLIN };
		pfd[P_ENDS] = (struct pollfd){ .fd = sp.epfd, .events = POLLIN };
		for (i = 0, k = P_SHIMS; i < sp.n_shims; i++)
			if (sp.shims[i].sock >= 0)
				pfd[k++] = (struct pollfd){ .fd = sp.shims[i].sock, .events = POLLIN };
		/*
		 * The next shim, while nobody waits for us: not while a handed-over
		 * shim's report is due, which would wait behind the spawn (~3 ms here).
		 */
		if (k == P_SHIMS)
			make_ready(&sp);
		if (poll(pfd, k, -1) < 0 && errno != EINTR)
			_exit(1);
		for (i = P_SHIMS; i < k; i++) {
			if (!pfd[i].revents)
				continue;
			for (j = 0; j < (int)sp.n_shims && sp.shims[j].sock != pfd[i].fd; j++)
				;
			if (j < (int)sp.n_shims && reported(&sp, &sp.shims[j]))
				leave(&sp);
		}
		if (pfd[P_ENDS].revents && ended(&sp))
			leave(&sp);
		if (pfd[P_SIG].revents && reap(&sp))
			leave(&sp);
		if ((pfd[P_AGENT].revents & POLLOUT) && flush(&sp))
			leave(&sp);
		if (!(pfd[P_AGENT].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = recv_fds(sock, &q, sizeof(q), fds, &nfds);
		if (n == 0 || (n < 0 && n != -EMSGSIZE))
			leave(&sp);
		if (n == sizeof(q)) {
			if (hand_over(&sp, &q, fds, nfds))
				leave(&sp);
		} else {
			rep = (struct sp_rep){ SP_REPLY, n < 0 ? (int32_t)n : -EINVAL, 0, 0, 0, 0 };
			if (tell(&sp, &rep))
				leave(&sp);
		}
		for (j = 0; j < nfds; j++)
			close(fds[j]);
	}
}

/* In the spawner, before anything: join the cgroups of join_fds; tell the agent how it went. */
static void join_cgroups(const int *join_fds, int n_join, int report)
{
	int i, err = 0;

	for (i = 0; i < n_join && !err; i++)
		if (write(join_fds[i], "0", 1) < 0)
			err = errno;
	for (i = 0; i < n_join; i++)
		close(join_fds[i]);
	if (write(report, &err, sizeof(err)) != sizeof(err) || err)
		_exit(1);
	close(report);
}

struct bm_spawner *bm_spawner__start_in(const char *exe, const int *join_fds, int n_join)
{
	struct bm_spawner *sp = calloc(1, sizeof(*sp));
	pid_t agent = getpid();
	int sv[2], pfd[2] = { -1, -1 }, err, joined = 0;

	if (!sp)
		return NULL;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0 ||
	    (n_join && pipe2(pfd, O_CLOEXEC) < 0)) {
		err = errno;
		free(sp);
		errno = err;
		return NULL;
	}
	sp->pid = fork();
	if (sp->pid == 0) {
		close(sv[0]);
		if (n_join) {
			close(pfd[0]);
			join_cgroups(join_fds, n_join, pfd[1]);
		}
		serve(sv[1], agent, exe);
	}
	err = errno;
	close(sv[1]);
	if (pfd[1] >= 0)
		close(pfd[1]);
	if (sp->pid > 0 && n_join) {
		/* its shims are forked from where it is: know that before the first one */
		if (read(pfd[0], &joined, sizeof(joined)) != sizeof(joined))
			joined = EIO;
		if (joined) {
			waitpid(sp->pid, NULL, 0);
			sp->pid = -1;
			err = joined;
		}
	}
	if (pfd[0] >= 0)
		close(pfd[0]);
	if (sp->pid < 0) {
		close(sv[0]);
		free(sp);
		errno = err;
		return NULL;
	}
	sp->sock = sv[0];
	return sp;
}

struct bm_spawner *bm_spawner__start(const char *exe)
{
	return bm_spawner__start_in(exe, NULL, 0);
}

int bm_spawner__send(struct bm_spawner *sp, uint64_t tag, int cgroup_fd, const int *join_fds, int n_join,
		     char *const argv[], const struct bm_exec *x, const char *status_path)
{
	struct sp_req q = { 0 };
	int fds[SP_MAX_FDS], nfds = 0, mfd, i, ret;
	size_t len = strlen(status_path) + 1;
	char *buf, *p;

	if (!sp || n_join > SP_MAX_JOIN || !argv || !argv[0])
		return -EINVAL;
	if (x)
		q.x = *x;
	q.tag = tag;
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
	ret = send_fds(sp->sock, &q, sizeof(q), fds, nfds, 0);
out:
	if (mfd >= 0)
		close(mfd);
	return ret;
}

int bm_spawner__fd(const struct bm_spawner *sp)
{
	return sp ? sp->sock : -1;
}

int bm_spawner__next(struct bm_spawner *sp, struct bm_spawner_msg *m)
{
	struct sp_rep rep;
	ssize_t n;

	do
		n = recv(sp->sock, &rep, sizeof(rep), MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return 0;
	if (n != sizeof(rep))
		return n < 0 ? -errno : -ECONNRESET;
	memset(m, 0, sizeof(*m));
	m->exited = rep.type == SP_EXIT;
	m->tag = rep.tag;
	m->ret = rep.ret;
	m->shim_pid = rep.shim_pid;
	m->effect_pid = rep.effect_pid;
	m->shim_id = rep.shim_id;
	return 1;
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
