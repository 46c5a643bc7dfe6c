/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A run_command's process: our child, stdin /dev/null, stdout and stderr on
 * pipes of ours, optionally paused before exec until the agent has attached
 * it to its effect cgroup. Forked from a threaded process, so the child
 * calls only async-signal-safe functions: everything it needs (the resolved
 * path, argv, envp) is made before the fork.
 */
#ifndef BM_MCP_CHILD_H
#define BM_MCP_CHILD_H

#include <stdbool.h>
#include <sys/types.h>

#include "cli/mcp_text.h"

struct bm_mcp_child {
	pid_t pid;
	int pidfd;		/* readable once it has exited */
	int out_fd, err_fd;	/* -1 once at EOF */
	int go_fd;		/* paused: a byte releases it, EOF ends it */
	bool reaped;
	int wait_status;
};

/*
 * Resolve argv[0] on envp's PATH (as execvp would) into path (len bytes);
 * a name that is not found stays as it is, so that exec fails with 127.
 */
void bm_mcp_child_resolve(const char *cmd, char *const envp[], char *path, size_t len);

/*
 * Fork path with argv and envp, in cwd (NULL: ours), in a network namespace
 * of its own with its loopback up if netns; paused until released if paused.
 * Returns 0 or -errno. The child dies with us (PR_SET_PDEATHSIG).
 */
int bm_mcp_child__start(struct bm_mcp_child *c, const char *path, char *const argv[], char *const envp[],
			const char *cwd, bool netns, bool paused);
/* Let a paused child exec. Returns 0 or -errno. */
int bm_mcp_child__release(struct bm_mcp_child *c);
/*
 * Read what its pipes have into out and err, waiting at most timeout_ms for
 * something (its output, its exit, or extra_fd readable, -1 for none).
 * Returns 1 if extra_fd is readable, else 0.
 */
int bm_mcp_child__pump(struct bm_mcp_child *c, struct bm_mcp_out *out, struct bm_mcp_out *err,
		       int extra_fd, int timeout_ms);
/* Has it exited? Reaps it (wait_status) the first time. */
bool bm_mcp_child__exited(struct bm_mcp_child *c);
/* Close everything; a child that was never released or has not exited is killed and reaped. */
void bm_mcp_child__close(struct bm_mcp_child *c);

#endif /* BM_MCP_CHILD_H */
