/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where the agent's effects and shims live. By default under the agent's
 * own cgroup (on a pure v2 node it first moves into a leaf of it, so that
 * its cgroup may hand controllers to the effects). With cgroup_parent,
 * under that cgroup of the node's own hierarchies, and the spawner and its
 * shims in its leaf: outside the agent's container, so that a container
 * killed or replaced leaves them running for the next agent to adopt.
 */
#ifndef BM_AGENT_PLACE_H
#define BM_AGENT_PLACE_H

#include <stddef.h>

#include "agent/state.h"

/* a->env and a->parent: the effects' parent cgroup. Returns 0 or -errno (why says what to do). */
int ag_place_effects(struct bm_agent *a, char *why, size_t len);

/* a->spawner, in the shims' place. Returns 0, or -errno where effects could not outlive us. */
int ag_place_spawner(struct bm_agent *a, const char *exe);

/* Stopping with no effect left: remove the leaf (and cgroup_parent) if empty. */
void ag_place_release(struct bm_agent *a);

#endif /* BM_AGENT_PLACE_H */
