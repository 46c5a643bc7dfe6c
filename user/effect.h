/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Starting an effect's command inside its cgroup, with no instruction run outside it. */
#ifndef BM_EFFECT_H
#define BM_EFFECT_H

#include <limits.h>
#include <sys/types.h>

/*
 * Find cmd as execvp() would (PATH unless it has a '/') and check it can be
 * executed. Returns 0 with the path in buf, -ENOENT or -EACCES (and the
 * like) otherwise: what exec would fail with.
 */
int bm_effect_resolve(const char *cmd, char *buf, size_t len);

struct bm_child {
	pid_t pid;
	int pidfd;
};

/*
 * clone3(CLONE_INTO_CGROUP | CLONE_PIDFD) into cgroup_fd; the child writes
 * "0" into each of join_fds[0..n_join) (cgroup.procs of v1 twins; -1
 * skipped), then execs argv with an empty signal mask. Returns 0 once the
 * exec succeeded; a positive errno if the exec failed (the child has been
 * reaped); -errno if the clone or a join failed.
 */
int bm_effect_spawn(int cgroup_fd, const int *join_fds, int n_join, char *const argv[],
		    struct bm_child *child);

#endif /* BM_EFFECT_H */
