/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the agent's one event loop watches (each fd with a tag saying what
 * it is about), and what it tells the layer above through its hooks.
 */
#ifndef BM_AGENT_WATCH_H
#define BM_AGENT_WATCH_H

#include <jansson.h>

#include "agent/state.h"

/* Watch fd (-1: nothing) for input; its events come back tagged t. */
void ag_watch(struct bm_agent *a, int fd, struct ag_tag *t, enum ag_kind kind, void *ptr);
void ag_unwatch(struct bm_agent *a, int fd);
/* The layer above's own fd: fn(ptr) runs in the loop when it is readable. Returns 0 or -errno. */
int ag_watch_fd(struct bm_agent *a, int fd, struct ag_tag *t, void (*fn)(void *ptr), void *ptr);
/* An effect's shim pidfd, where no spawner tells its end. */
void ag_watch_effect(struct bm_agent *a, struct ag_effect *e);
/* A line for e's readers, if it has any (line consumed either way). */
void ag_emit(struct bm_agent *a, struct ag_effect *e, json_t *line);

#endif /* BM_AGENT_WATCH_H */
