/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A sandbox (effect/sandbox.h) turned into what holds it: the exec options
 * of its command and the egress filter of its cgroup. The one conversion
 * the agent's launches and `burstmeter run` (standalone, and through the
 * agent) share: a fix here is a fix to both.
 */
#ifndef BM_SANDBOX_EXEC_H
#define BM_SANDBOX_EXEC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "effect/egress.h"
#include "effect/exec.h"
#include "effect/sandbox.h"

/* What the caller adds to a sandbox to start a command under it: who, where, and what it keeps. */
struct bm_sandbox_ctx {
	char *const *envp;	/* the environment (NULL: the caller's own) */
	const char *cwd;	/* NULL: the caller's own; entered as uid */
	int stdio[3];		/* -1: inherit */
	bool set_ids;		/* run as uid/gid, no supplementary groups */
	uid_t uid;
	gid_t gid;
	/*
	 * PID, mount (a /proc of its own, the cgroup filesystems read-only, a
	 * private /dev/shm) and cgroup namespaces: it sees no other effect's
	 * processes and writes no cgroup. The agent's launches all have them.
	 */
	bool isolate;
	const char *hide;	/* with isolate: a file covered by /dev/null (the agent's socket) */
	uint64_t log_max;	/* with isolate: output through the init, capped (0: direct) */
	bool clean_env;		/* envp is all it gets (for the enforcement's wording) */
};

/* A private /tmp and /dev/shm where the sandbox sizes neither: docker's /dev/shm, a small /tmp. */
#define BM_SANDBOX_TMP_DEFAULT (64ULL << 20)
#define BM_SANDBOX_SHM_DEFAULT (64ULL << 20)

/*
 * The exec options (effect/exec.h) that hold sb, with the caller's c, and
 * (enf not NULL) what holds each part, by name. Pure: nothing is made.
 * The egress filter of network policies egress_* is bm_sandbox_egress()'s.
 */
void bm_sandbox_exec(const struct bm_sandbox *sb, const struct bm_sandbox_ctx *c, struct bm_exec *x,
		     struct bm_sandbox_enf *enf);
/* Does sb's network policy need the egress filter (egress_restricted, egress_allow_list)? */
bool bm_sandbox_filters_egress(const struct bm_sandbox *sb);
/*
 * Attach the egress filter eg to cgroup cgid (cgroup_fd) for sb's policy,
 * before anything runs in it, and (enf) say so. Returns 1 if it was
 * attached, 0 if sb needs none, -errno (-ENOENT: no filter loaded).
 */
int bm_sandbox_egress(struct bm_egress *eg, const struct bm_sandbox *sb, int cgroup_fd, uint64_t cgid,
		      struct bm_sandbox_enf *enf);
/* The effect ended: its entries out of the allow-list (its cgroup's removal detaches the filter). */
void bm_sandbox_egress_forget(struct bm_egress *eg, const struct bm_sandbox *sb, uint64_t cgid);

#endif /* BM_SANDBOX_EXEC_H */
