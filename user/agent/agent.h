/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The node agent: one meter (pinned, so a restart loses nothing) for every
 * effect of the node, the effects' lives from admission to outcome, a
 * SQLite store, and the event loop they all run in. It knows no HTTP: the
 * API layer (user/api/) registers its fds and hooks (state.h) and maps the
 * agent's -errno to statuses.
 */
#ifndef BM_AGENT_H
#define BM_AGENT_H

#include "agent/config.h"

struct bm_agent;

/* Check the node, load or adopt the meter, open the store. NULL on failure (logged). */
struct bm_agent *bm_agent_new(const struct bm_agent_cfg *cfg);
/*
 * What the agent needs from the node, checked and made, then nothing more:
 * BTF and the capability, a BPF filesystem (mounted where none is), the
 * effects' parent cgroup, the policy file. For an init step that runs before the agent.
 * Returns 0 or -errno (logged, one line).
 */
int bm_agent_preflight(const struct bm_agent_cfg *cfg);
/*
 * Adopt what an earlier agent left, then run until SIGTERM or SIGINT; the
 * launches under way are answered before it returns. Returns 0 or -errno.
 */
int bm_agent_loop(struct bm_agent *a);
/* Stop: running effects stay metered (pinned) for the next agent. NULL-safe. */
void bm_agent_free(struct bm_agent *a);

#endif /* BM_AGENT_H */
