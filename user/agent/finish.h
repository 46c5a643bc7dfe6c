/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* An effect's states as the store and its readers see them, and its end. */
#ifndef BM_AGENT_FINISH_H
#define BM_AGENT_FINISH_H

#include "agent/state.h"

/* e is in st now: stored (unless final: ag_finish_effect() stores that) and told to readers. */
void ag_set_state(struct bm_agent *a, struct ag_effect *e, enum bm_state st);
/* The ladder's step as a state (running, throttled, frozen), and its new actions told. */
void ag_track_ladder(struct bm_agent *a, struct ag_effect *e);
/*
 * The effect is done: outcome (retry advice, backoff), store, /metrics,
 * readers, cgroups removed; then it is freed. Sets a->resched: what its
 * end made room for starts once the current event is handled.
 */
void ag_finish_effect(struct bm_agent *a, struct ag_effect *e);
/*
 * A batch of ends (a slice of timers): the outcomes of ag_finish_effect()
 * between the two are stored in one transaction at ag_finish_end() (or
 * at ag_finish_store(), which a failure's backoff calls to count them),
 * and their effects freed then; what the store refuses is kept as ever.
 */
void ag_finish_begin(struct bm_agent *a);
void ag_finish_store(struct bm_agent *a);
void ag_finish_end(struct bm_agent *a);
/* Out of the registry and every index, its readers told, freed; nothing else (teardown). */
void ag_free_effect(struct bm_agent *a, struct ag_effect *e);
/* Every tick: store the outcomes and remove the cgroups of ended effects that could not yet. */
void ag_tend_remains(struct bm_agent *a);
/* An ended effect still kept (its outcome unstored, or its cgroup held), or NULL. */
const struct ag_effect *ag_remains_find(const struct bm_agent *a, const char *tenant,
					const char *id);
/* What is left is left to the next agent (its sweep removes the cgroups of ended effects). */
void ag_free_remains(struct bm_agent *a);

#endif /* BM_AGENT_FINISH_H */
