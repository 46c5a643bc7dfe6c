/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * /metrics: the node's burst histograms and counters in the Prometheus text
 * format (0.0.4), or OpenMetrics 1.0 when the scraper asks for it (then with
 * exemplars linking a bucket to the effect id that last fell in it). Labels
 * are bounded: tenant, tool kind and dimension only, never an effect id or
 * a cgroup path; tenants and tools past their caps fold into "other". The
 * one exception is bounded by the node: the pods (uid, container id) whose
 * tool calls run now, at most max_running series, gone when they end.
 * Written by hand: Debian has no C client.
 */
#ifndef BM_EXPORT_H
#define BM_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/budget.h"
#include "bm_abi.h"

struct bm_export;

/* max_tenants, max_tools: distinct label values kept before folding into "other". */
struct bm_export *bm_export__new(unsigned int max_tenants, unsigned int max_tools);
void bm_export__free(struct bm_export *e);

/*
 * Add an effect's windows: hist[] is its per-window log2 histogram of
 * dimension d in raw units (enum bm_dim), window_ns its window; sum_raw is
 * the sum of its window values (raw). Each log2 bucket is counted in the
 * smallest exported bucket whose bound is at or above the log2 bucket's
 * upper edge, in display units (cores, bytes, tasks, bytes/s, ms), so a
 * window is never shown below its value.
 */
void bm_export__windows(struct bm_export *e, const char *tenant, const char *tool, enum bm_dim d,
			const uint64_t hist[BM_HIST_BUCKETS], uint64_t window_ns, double sum_raw);
/* An effect's peak of dimension d (display units), with its id as the exemplar. */
void bm_export__peak(struct bm_export *e, const char *tenant, const char *tool, enum bm_dim d,
		     double peak, const char *effect_id);
/* An effect ended with termination reason `reason` (completed, memory_ceiling, ...). */
void bm_export__ended(struct bm_export *e, const char *tenant, const char *tool, const char *reason);
/* The ladder acted: step (throttle, freeze, ...) for reason. */
void bm_export__action(struct bm_export *e, const char *tenant, const char *tool, const char *step,
		       const char *reason);
/* A pod container's tool calls running now (bm_export_node.pods). */
struct bm_export_pod {
	const char *tenant, *uid, *container;
	unsigned int running;
};

/* Node-wide gauges and counters the agent sets before a scrape. */
struct bm_export_node {
	uint64_t running, queued;
	uint64_t lost_records, map_full, late;	/* from the kernel's per-CPU counters */
	uint64_t bpf_run_ns, bpf_run_cnt;	/* sum over our programs, when bpf_stats is on */
	uint64_t meter_reads;			/* meters the agent read for timelines and streams */
	bool over_pressure;			/* beyond the admission bounds now */
	uint64_t pressure_episodes;		/* times the node went beyond them */
	const struct bm_export_pod *pods;	/* the caller's: valid while it renders */
	unsigned int n_pods;
};
void bm_export__node(struct bm_export *e, const struct bm_export_node *n);

/*
 * A tenant's budgets and use, set before a scrape (after
 * bm_export__tenants_reset()); tenants past max_tenants add up in "other"
 * (counters and counts summed, the lowest remaining share, any exhausted).
 */
struct bm_export_tenant {
	double used[BM_BUD__MAX];		/* counters in base units (s, byte-s, bytes) */
	double remaining[BM_BUD__MAX];		/* level / burst; NAN: no budget there */
	double exhausted[BM_BUD__MAX];		/* 0 or 1 */
	double exhaustions[BM_BUD__MAX];	/* times each became exhausted */
	double refused[BM_BUD__MAX + 1];	/* 429s per budget, [BM_BUD__MAX]: queue share */
	double throttles[BM_BUD__MAX + 1];	/* caps per budget, [BM_BUD__MAX]: node pressure */
	double throttled, yielding, running, queued;	/* now */
	double fair_yields;			/* times over its fair CPU share */
	double pressure_share;			/* its share of effects' CPU, last second */
};
void bm_export__tenants_reset(struct bm_export *e);
void bm_export__tenant(struct bm_export *e, const char *tenant, const struct bm_export_tenant *v);

/*
 * Render everything into a new malloc'd buffer (*out, *len). Returns 0 or
 * -ENOMEM. openmetrics selects the OpenMetrics text format (# EOF, _total,
 * exemplars).
 */
int bm_export__render(struct bm_export *e, bool openmetrics, char **out, size_t *len);

#endif /* BM_EXPORT_H */
