/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef BM_SPAWNER_H
#define BM_SPAWNER_H

#include <stdbool.h>
#include <stdint.h>

#include "effect/exec.h"

/*
 * A spawner forks the agent's shims so that the agent never forks itself.
 * A fork write-protects every private page of the parent; each first write
 * after it is a fault, and in a VM a fault is a trip to the hypervisor. The
 * agent (SQLite page cache, heap, BPF maps' mmaps) took ~190 of them per
 * launch here, ~7 ms of its only thread between the exec and the 201. The
 * spawner is forked before the agent grows (no BPF object, no store, no
 * heap to speak of), so its forks are cheap and nobody pays after them.
 *
 * It lives as long as the socket to it: the agent's end closed (or the agent
 * dead: PR_SET_PDEATHSIG), it exits. The shims it forks are its children,
 * and outlive it as they outlive the agent. A shim is forked before its
 * request comes and waits for it, so that a launch does not wait for that
 * fork. The request goes over an AF_UNIX socket: its fds (cgroup, v1 twins,
 * stdio) as SCM_RIGHTS, its strings (argv, env, cwd, status path, up to the
 * API's body limit) in a memfd. The spawner reaps its shims and says which
 * ended on the same socket, so that the agent holds no fd per shim.
 */
struct bm_spawner;

/*
 * Fork the spawner: NULL on failure (errno set). Call it before anything
 * big is mapped. exe: a program whose main() hands `BM_SHIM_ARGV0 --ready`
 * to bm_spawner__ready_main(BM_SHIM_READY_FD) (burstmeter's does), exec'd
 * by every shim before it waits for its request; NULL: shims are forks of
 * the spawner.
 */
struct bm_spawner *bm_spawner__start(const char *exe);
/*
 * The same, and the spawner first writes "0" into each of join_fds
 * (cgroup.procs files): it and every shim it forks live in those cgroups,
 * not in ours. NULL with errno set if a join failed (nothing is left).
 */
struct bm_spawner *bm_spawner__start_in(const char *exe, const int *join_fds, int n_join);

#define BM_SHIM_ARGV0 "bm-shim"
#define BM_SHIM_READY_FD 3
/* A ready shim: wait on sock for one request and become its shim. Does not return. */
void bm_spawner__ready_main(int sock) __attribute__((noreturn));
/*
 * Ask for bm_effect_shim(), through the spawner: the shim will be the
 * spawner's child, not ours. The answer comes later, as a message tagged
 * with tag (bm_spawner__next()). Returns 0, or -errno: -EPIPE
 * (-ECONNRESET) if the spawner is gone, and then nothing was started.
 */
int bm_spawner__send(struct bm_spawner *sp, uint64_t tag, int cgroup_fd, const int *join_fds, int n_join,
		     char *const argv[], const struct bm_exec *x, const char *status_path);

/* What the spawner says. */
struct bm_spawner_msg {
	bool exited;		/* a shim ended (shim_id); else a request's answer (tag) */
	uint64_t tag;
	int ret;		/* 0, a positive exec errno, or -errno (nothing runs) */
	pid_t shim_pid, effect_pid;
	uint64_t shim_id;	/* names the shim when it ends; 0: its end will not be told */
};

/* Readable when the spawner has said something (or is gone). */
int bm_spawner__fd(const struct bm_spawner *sp);
/* The next message, without waiting: 1, 0 if none yet, or -errno (-ECONNRESET: it is gone). */
int bm_spawner__next(struct bm_spawner *sp, struct bm_spawner_msg *m);
/* Close the socket and reap the spawner (its shims run on). NULL is fine. */
void bm_spawner__free(struct bm_spawner *sp);

#endif /* BM_SPAWNER_H */
