/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * An effect's namespaces from the inside: the mounts of its mount namespace,
 * and the init of its PID namespace. The init is pid 1 there but lives in
 * its shim's cgroup, not the effect's: it is not the command, costs the
 * effect no task, and reaps what the command leaves, so that the command
 * keeps the signals and the exit status it would have as anyone's child.
 */
#ifndef BM_NSINIT_H
#define BM_NSINIT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct bm_mounts {
	bool ro_root;		/* every mount read-only (recursive), before the writable ones below */
	bool ro_cgroup;		/* the cgroup filesystems read-only: no cgroup is written from inside */
	bool proc;		/* a /proc of the PID namespace we are in */
	uint64_t tmp_bytes;	/* a private /tmp tmpfs of this size (0: none) */
	uint64_t shm_bytes;	/* a private /dev/shm tmpfs of this size (0: none) */
	char hide[256];		/* a file (the agent's socket) covered by /dev/null ("": none) */
	/* a directory bound read-write where it is, over the read-only root and /tmp ("": none) */
	char workspace[PATH_MAX];
};

/* Does m ask for a mount namespace of its own? */
bool bm_mounts_wanted(const struct bm_mounts *m);

/*
 * Set up m in the mount namespace we are in (made private first, so that
 * nothing propagates back). Needs CAP_SYS_ADMIN. Returns 0 or -errno.
 */
int bm_ns_mount(const struct bm_mounts *m);
/*
 * Enter the current directory again by its path, so that what was mounted
 * over it (the workspace) is seen; one the sandbox hid (under its private
 * /tmp) is left for "/", and said on stderr.
 */
void bm_ns_reenter(void);

/* Bring the loopback of a new network namespace up. Returns 0 or -errno. */
int bm_ns_loopback_up(void);

/*
 * The init's life, in the PID namespace's pid 1, once it has started the
 * command (cmd, in its namespace): reap every child; when cmd ends, write
 * its wait status (an int) to status_fd and close it; meanwhile copy log_in
 * (the command's output, -1: none) to log_out, at most log_max bytes, the
 * rest dropped and said at the end. Returns when no child is left and
 * log_in is at its end (the caller exits).
 */
void bm_ns_init(pid_t cmd, int status_fd, int log_in, int log_out, uint64_t log_max);

#endif /* BM_NSINIT_H */
