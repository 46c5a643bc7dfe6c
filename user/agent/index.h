/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The agent's effects by (tenant, id), admission number, shim and cgroup;
 * the queue, the timer heap, the awake set and the sleepers by meter slot;
 * running and queued effects per tenant (agent/tenant.h keeps the rest of
 * a tenant). Lookups only: nothing here starts or ends an effect.
 */
#ifndef BM_AGENT_INDEX_H
#define BM_AGENT_INDEX_H

#include "agent/state.h"

struct ag_effect *ag_find(struct bm_agent *a, const char *tenant, const char *id);
struct ag_effect *ag_find_seq(struct bm_agent *a, uint64_t seq);
struct ag_effect *ag_find_shim(struct bm_agent *a, uint64_t shim_id);
/* The effect whose cgroup has this id (a meter event's), or NULL. */
struct ag_effect *ag_find_cg(struct bm_agent *a, uint64_t cg_id);
/* Index e by its cgroup (e->sup.cg), once it has one. */
void ag_set_cg(struct bm_agent *a, struct ag_effect *e);
/* Index e (after its tenant, id and seq are set): 0 or -ENOMEM; not after ag_index_reserve(). */
int ag_index_add(struct bm_agent *a, struct ag_effect *e);
int ag_index_reserve(struct bm_agent *a);
/* Out of every index, and out of its tenant's count if it started. */
void ag_index_del(struct bm_agent *a, struct ag_effect *e);
/* The spawner's id of e's shim (0: none), indexed. */
void ag_set_shim_id(struct bm_agent *a, struct ag_effect *e, uint64_t id);
/* Started effects of tenant, after adding delta. */
unsigned int ag_tenant_count(struct bm_agent *a, const char *tenant, int delta);
/* Queued (not started) effects: in when admitted. */
void ag_queue_add(struct bm_agent *a, struct ag_effect *e);
/* It starts (or ends before it could): out of the queue, counted as running, for its tenant too. */
void ag_started(struct bm_agent *a, struct ag_effect *e);
/* It has ended: no longer counted as running, nor for its tenant. */
void ag_stopped(struct bm_agent *a, struct ag_effect *e);
/* bm_sup's timers of e (ctx) moved: its place in the heap follows. */
void ag_timers_moved(void *ctx);
/* Looked at every tick (ag_tick()), or asleep until its meter moves. */
void ag_wake(struct bm_agent *a, struct ag_effect *e);
void ag_sleep(struct bm_agent *a, struct ag_effect *e);
/* The sleeping effect of a meter slot, or NULL. */
struct ag_effect *ag_slot_sleeper(const struct bm_agent *a, uint32_t slot);
/* The effect due first, or NULL; when it is due. */
struct ag_effect *ag_heap_top(const struct bm_agent *a);
void ag_heap_pop(struct bm_agent *a);
uint64_t ag_due(const struct ag_effect *e);
void ag_index_free(struct bm_agent *a);

#endif /* BM_AGENT_INDEX_H */
