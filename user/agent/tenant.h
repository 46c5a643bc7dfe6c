/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Tenants over time: each one's budgets (agent/budget.h) charged from its
 * effects' meters as their windows close, and the memory they hold every
 * tick; what holds a tenant (an exhausted budget, the node's pressure) and
 * the CPU cap its running effects get then; its share of the queue; fair
 * admission's view of it; the node's pressure and who caused it; and how
 * the API and /metrics see all this. Below the index in the agent's chain:
 * it reads the agent's state and acts on effects only through effect/.
 */
#ifndef BM_AGENT_TENANT_H
#define BM_AGENT_TENANT_H

#include <jansson.h>

#include "agent/fair.h"
#include "agent/state.h"

/* The tenant named, or NULL; ag_tenant() adds it (budgets from the config), NULL: no memory. */
struct ag_tenant_count *ag_tenant_find(struct bm_agent *a, const char *name);
struct ag_tenant_count *ag_tenant(struct bm_agent *a, const char *name);
/* e's tenant, added if need be, found by its place after the first time; NULL: no memory. */
struct ag_tenant_count *ag_tenant_of(struct bm_agent *a, struct ag_effect *e);

/*
 * A read of e's meter m, closed up to now_win: the flows of the windows
 * before now_win charged to its tenant (CPU-seconds, bytes sent, bytes read
 * and written to block devices), and level_bytes, the memory it holds, kept
 * for the tick to charge.
 */
void ag_tenant_charge(struct bm_agent *a, struct ag_effect *e, const struct bm_meter *m,
		      uint64_t now_win, double level_bytes);
/* e no longer runs: the memory it held is its tenant's no more. */
void ag_tenant_release(struct bm_agent *a, struct ag_effect *e);
/*
 * A new effect of a tenant that is capped or yields starts so, before its
 * command: the tick would reach it up to AG_TICK_NS later, a time its
 * threads ran at full weight beside the neighbours the cap protects.
 */
void ag_tenant_cap_start(struct bm_agent *a, struct ag_effect *e);

/*
 * Every tick: the memory each tenant holds charged (sleeping effects too:
 * they hold their level), the budgets looked at, the node's pressure read
 * and its top contributors named, CPU caps put on and lifted.
 */
void ag_tenants_tick(struct bm_agent *a, uint64_t now_ns);

/*
 * May t submit one more effect now? 0, or -EDQUOT: a budget refuses
 * (*budget names it, *retry_after_s from its bucket), or -EAGAIN: its
 * share of the queue is full (*budget "queue_share").
 */
int ag_tenant_admit(struct bm_agent *a, struct ag_tenant_count *t, unsigned int *retry_after_s,
		    const char **budget);
/* One of t's submissions was admitted: its launch is charged. */
void ag_tenant_admitted(struct bm_agent *a, struct ag_tenant_count *t);
/* t's share of max_queued now (at least 1). */
unsigned int ag_tenant_queue_share(const struct bm_agent *a, const struct ag_tenant_count *t);

/* May tenant's running effects be capped (a CPU budget, pressure_action throttle_top)? */
bool ag_tenant_may_cap(const struct bm_agent *a, const char *tenant);
/* May nothing of t start: an exhausted budget, the node's pressure, or its max running? */
bool ag_tenant_held(const struct bm_agent *a, const struct ag_tenant_count *t);
/* Fair admission's view of t at now_ns. */
void ag_tenant_fair(const struct bm_agent *a, struct ag_tenant_count *t, uint64_t now_ns,
		    struct bm_fair_tenant *out);
/*
 * Has the node room to start anything (of tenants not held)? Under its
 * admission bounds; or, with pressure_action throttle_top, over the CPU
 * bound while its top contributor is throttled and the last second's
 * pressure is under it again.
 */
bool ag_node_room(struct bm_agent *a);

/* GET /v1/tenants/self: the tenant's budgets, use, share and what holds it (a new reference). */
json_t *ag_tenant_json(struct bm_agent *a, const char *name);
/* The node's pressure; names: with its top tenants and effects (for root). A new reference. */
json_t *ag_pressure_json(struct bm_agent *a, bool names);
/* Every tenant's series into a->exp, before a scrape. */
void ag_tenants_export(struct bm_agent *a);

#endif /* BM_AGENT_TENANT_H */
