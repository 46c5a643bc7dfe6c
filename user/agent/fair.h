/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which queued effect starts next, as a pure function: weighted fair
 * queueing on measured use. Each tenant's tag is the node share it used
 * recently (decayed, its dominant dimension), plus a small charge per
 * effect it runs now, over its weight; the tenant with the smallest tag
 * goes first, and within a tenant its calls go by priority, then in
 * order. A tenant that has been quiet has decayed to a small tag and
 * starts before one that has been bursting.
 *
 * Why not deficit round robin: DRR charges a cost known when an item is
 * dequeued (a packet's length); a call's cost is known only while and
 * after it runs, window by window. Charging what was measured, as it is
 * measured, and decaying it (like CFS's vruntime or a fair-share batch
 * scheduler's usage) needs no estimate, sees bursts that happened outside
 * the queue, and forgets them at a known half-life.
 *
 * Priority is the tenant's own (1-10, self-assigned): across tenants it
 * only breaks a tie of tags, or every tenant would ask for 10.
 */
#ifndef BM_AGENT_FAIR_H
#define BM_AGENT_FAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * What an effect that started costs in the tag before any of its windows
 * closed: one window of the whole node (node-seconds), so that tenants
 * with no use yet take turns instead of one taking every free slot.
 */
#define BM_FAIR_START_COST 0.01

struct bm_fair_tenant {
	double usage;		/* recent use, in node-seconds (its dominant dimension's share) */
	double weight;		/* > 0 */
	unsigned int running;	/* effects it runs now */
	bool held; /* none of its calls may start (a budget, its max running, pressure) */
};

struct bm_fair_item {
	unsigned int tenant;	/* index into the tenants */
	int priority;		/* 1-10, higher first */
	uint64_t seq;		/* submission order, lower first */
};

/* A tenant's tag: (usage + running x BM_FAIR_START_COST) / weight; lower starts first. */
double bm_fair_tag(const struct bm_fair_tenant *t);
/*
 * The item of v[0..n) to start next: the smallest (tag of its tenant,
 * -priority, seq) among those whose tenant is not held. Returns its index,
 * or -1 when none may start.
 */
long bm_fair_pick(const struct bm_fair_item *v, size_t n, const struct bm_fair_tenant *t);

/*
 * Fair CPU (docs/BUDGETS.md, "Fair CPU"): a tenant's share of the node's
 * cpus is its weight's part of the weights of the tenants there
 * (weight_there over n_there of them, itself included when there); 0 when
 * no other is there, and any use is fair.
 */
double bm_fair_cpu_share(double cpus, double weight, bool there, double weight_there,
			 unsigned int n_there);
/*
 * Is a tenant that used `use` cores recently over its share, and so to
 * yield? Over BM_FAIR_OVER x the share it is; once over (was_over), it is
 * until it is under the share / BM_FAIR_OVER. Never with no share.
 */
#define BM_FAIR_OVER 1.2
bool bm_fair_over_share(double use, double share, bool was_over);

#endif /* BM_AGENT_FAIR_H */
