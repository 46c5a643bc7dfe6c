/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef BM_SPAWNER_H
#define BM_SPAWNER_H

#include "effect.h"

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
 * reaped by the kernel (SIGCHLD ignored), and outlive it as they outlive
 * the agent. The request goes over an AF_UNIX socket: its fds (cgroup,
 * v1 twins, stdio) as SCM_RIGHTS, its strings (argv, env, cwd, status path,
 * up to the API's body limit) in a memfd; the reply brings the shim's pidfd.
 */
struct bm_spawner;

/* Fork the spawner: NULL on failure (errno set). Call it before anything big is mapped. */
struct bm_spawner *bm_spawner__start(void);
/*
 * bm_effect_shim(), through the spawner: the shim is the spawner's child,
 * not ours (shim->pidfd still says when it ends; waitid() on it cannot).
 * Returns 0, a positive exec errno, or -errno: -EPIPE (-ECONNRESET) if the
 * spawner is gone, and then nothing was started.
 */
int bm_spawner__shim(struct bm_spawner *sp, int cgroup_fd, const int *join_fds, int n_join,
		     char *const argv[], const struct bm_exec *x, const char *status_path,
		     struct bm_child *shim, pid_t *effect_pid);
/* Close the socket and reap the spawner (its shims run on). NULL is fine. */
void bm_spawner__free(struct bm_spawner *sp);

#endif /* BM_SPAWNER_H */
