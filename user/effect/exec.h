/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Starting an effect's command inside its cgroup, with no instruction run outside it. */
#ifndef BM_EXEC_H
#define BM_EXEC_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "effect/nsinit.h"

/*
 * Find cmd as execvp() would (PATH unless it has a '/') and check it can be
 * executed. Returns 0 with the path in buf, -ENOENT or -EACCES (and the
 * like) otherwise: what exec would fail with.
 */
int bm_effect_resolve(const char *cmd, char *buf, size_t len);

struct bm_child {
	pid_t pid;
	int pidfd;
	/*
	 * In a PID namespace of its own the command is not our child: its
	 * init writes its wait status here (an int) when it ends. -1: it is
	 * our child, waitid() it.
	 */
	int status_fd;
};

/*
 * How the command is started, beyond argv (NULL to inherit everything):
 * environment, directory, stdio, identity and the sandbox of an execution
 * request. Namespaces are made first, while we hold the privileges; then
 * the identity is taken, the directory entered as it, the capabilities
 * dropped. Sent whole to the spawner: no pointer but envp and cwd.
 */
struct bm_exec {
	char *const *envp;		/* NULL: inherit */
	const char *cwd;		/* NULL: inherit; entered as uid */
	int stdio[3];			/* -1: inherit */
	bool set_ids;			/* run as uid/gid, supplementary groups dropped */
	uid_t uid;
	gid_t gid;
	bool drop_caps;			/* empty capability sets, bounding and ambient too */
	bool no_new_privs;
	bool new_netns;			/* network policy none: only a loopback of its own */
	/*
	 * A PID namespace of its own, whose init (effect/nsinit.h) stays in
	 * our cgroup: the command sees no other effect's processes.
	 */
	bool pid_ns;
	bool cgroup_ns;			/* rooted at its cgroup: it cannot name or join another */
	struct bm_mounts mnt;		/* a mount namespace of its own, if any is asked for */
	/* with pid_ns: stdout and stderr through the init, at most this much to stdio[1] (0: direct) */
	uint64_t log_max;
};

/*
 * Can this process empty its bounding set (does it hold CAP_SETPCAP)? A
 * process that cannot (not root) keeps it with drop_caps: it holds nothing
 * in it, and no_new_privs keeps an exec from taking anything from it.
 */
bool bm_exec_can_drop_bounding(void);

/* Wait for the child started by bm_effect_spawn_ex(): its wait status, or -errno. */
int bm_child_wait(struct bm_child *c, int *wait_status);

/*
 * clone3(CLONE_INTO_CGROUP | CLONE_PIDFD) into cgroup_fd; the child writes
 * "0" into each of join_fds[0..n_join) (cgroup.procs of v1 twins; -1
 * skipped), then execs argv with an empty signal mask. With x->pid_ns, an
 * init is cloned first into new PID and mount namespaces, and clones the
 * command into the cgroup. Returns 0 once the exec succeeded; a positive
 * errno if the exec failed (the child has been reaped); -errno if the clone
 * or a join failed.
 */
int bm_effect_spawn(int cgroup_fd, const int *join_fds, int n_join, char *const argv[],
		    struct bm_child *child);
/* The same, with exec options x (NULL = bm_effect_spawn()). */
int bm_effect_spawn_ex(int cgroup_fd, const int *join_fds, int n_join, char *const argv[],
		       const struct bm_exec *x, struct bm_child *child);

/*
 * A PID and mount namespace made before its command is known: the clone of
 * the init is the dearest step of a launch with x->pid_ns, so a ready shim
 * makes one while it waits for its request. bm_effect_warm() returns 1 in
 * the caller (w filled), 0 in the init, or -errno. The init takes its
 * command from w->chan (the caller sends it there, see spawner.c) and goes
 * on with bm_effect_warm_init(); EOF on w->chan ends it, before or after.
 */
struct bm_warm {
	pid_t init;	/* the caller's child; 0 in the init itself */
	int pidfd;	/* the init's (caller) */
	int chan;	/* caller <-> init: the request, its go, the init's reports */
	int st;		/* the command's wait status: read end (caller), write end (init) */
};
int bm_effect_warm(struct bm_warm *w);
/*
 * In the init, with its command: make its namespaces up (mounts, loopback)
 * while the caller still works, wait for bm_effect_spawn_warm()'s go, then
 * start it as bm_effect_spawn_ex() would from there. Never returns.
 */
void bm_effect_warm_init(struct bm_warm *w, int cgroup_fd, const int *join_fds, int n_join,
			 char *const argv[], const struct bm_exec *x) __attribute__((noreturn));
/*
 * In the caller: bm_effect_spawn_ex() on the namespace made ahead when x
 * asks for one (x->pid_ns), else after w is dropped; w is used up either way.
 */
int bm_effect_spawn_warm(struct bm_warm *w, int cgroup_fd, const int *join_fds, int n_join,
			 char *const argv[], const struct bm_exec *x, struct bm_child *child);
/* Not used: its init ends (EOF) and is reaped. */
void bm_effect_warm_drop(struct bm_warm *w);

/*
 * Attach mode (the command is the caller's; the agent moves it into its
 * effect's cgroup, or it is born there: cgroup_fd, -1 where we are):
 * start it as bm_effect_spawn_ex() does, with its namespaces made, but
 * held at a gate before anything else of x
 * (its cgroup namespace, identity, directory, capabilities) and its exec.
 * Returns 0 once it waits there, *child filled (with x->pid_ns, the init
 * of its PID namespace is our child, h->init), or -errno. Then exactly one
 * of bm_effect_release() and bm_effect_held_drop().
 */
struct bm_held {
	int chan;	/* what its children report, until the exec closes it */
	int go;		/* its gate: a struct bm_ids written here lets it go */
	pid_t init;	/* with pid_ns: its init, ours to reap (0: none) */
};
/* The identity it takes at the gate (set 0: as x says), decided once it was attached. */
struct bm_ids {
	int32_t set;
	uint32_t uid, gid;
};
int bm_effect_spawn_held(int cgroup_fd, char *const argv[], const struct bm_exec *x,
			 struct bm_child *child, struct bm_held *h);
/*
 * Let it go as ids (NULL: as x says): 0 once it exec'd, a positive errno
 * if the exec failed (it exited 127: wait for it as ever), -errno.
 */
int bm_effect_release(struct bm_held *h, const struct bm_ids *ids);
/* It never runs: it exits at the gate; it (or its init) is reaped, child's fds closed. */
void bm_effect_held_drop(struct bm_held *h, struct bm_child *child);

/* The shim (exec_shim.c). */
/*
 * Start the command under a shim: a forked process of ours, in its own
 * session, that spawns it (as bm_effect_spawn_ex()), waits for it and
 * writes "W <wait status>" to status_path (atomically) before it exits.
 * The shim outlives a crashed agent, so the exit status survives it too.
 * On success shim gets the shim's pid and pidfd, *effect_pid the command's.
 * Returns 0, a positive exec errno, or -errno.
 */
int bm_effect_shim(int cgroup_fd, const int *join_fds, int n_join, char *const argv[],
		   const struct bm_exec *x, const char *status_path, struct bm_child *shim,
		   pid_t *effect_pid);
/*
 * The shim itself, in the child of a fork: spawns the command (on warm,
 * its namespace made ahead, if not NULL), writes a struct bm_shim_report
 * to report_fd (then closes it), waits, writes the status file and exits.
 * Never returns.
 */
struct bm_shim_report {
	int ret;	/* as bm_effect_spawn_ex() */
	pid_t pid;	/* the command's */
};
void bm_effect_shim_main(int cgroup_fd, const int *join_fds, int n_join, char *const argv[],
			 const struct bm_exec *x, const char *status_path, int report_fd,
			 struct bm_warm *warm) __attribute__((noreturn));
/*
 * What bm_effect_shim_main() does first and needs no request for (its
 * session, name, signals, its own start time), done by a ready shim
 * while it waits: a launch then finds it done.
 */
void bm_effect_shim_ready(void);
/*
 * The shim's own pid and start time ("P <pid> <start>"), told before the
 * command runs: as an xattr of the effect's cgroup, or where that fails
 * in a file beside its status file. bm_effect_shim_pid() reads either
 * (cgroup: the effect's cgroup directory, or NULL). 0 or -errno.
 */
#define BM_SHIM_XATTR "trusted.burstmeter.shim"
#define BM_SHIM_PID_SUFFIX ".pid"
int bm_effect_shim_pid(const char *cgroup, const char *status_path, pid_t *pid, uint64_t *start);
/*
 * The command's wait status ("W <status>"), told by its shim as it ends: as
 * an xattr of the effect's cgroup, or where that fails in its status file.
 * bm_effect_shim_status() reads either (cgroup_fd: the effect's cgroup
 * directory, or -1); *on_cgroup says which it was. 0 and *wait_status, or -errno.
 */
#define BM_SHIM_XATTR_STATUS "trusted.burstmeter.status"
int bm_effect_shim_status(int cgroup_fd, const char *status_path, int *wait_status, bool *on_cgroup);

#endif /* BM_EXEC_H */
