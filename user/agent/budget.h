/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A tenant's budgets over time, pure: a token bucket (a rate and a burst)
 * per dimension, charged with what its effects used as their windows
 * close, and decayed sums of its recent use (for fair admission and for
 * naming who caused the node's pressure). Time is an argument (ns of one
 * monotonic clock); nothing here reads a clock, a file or the agent.
 *
 * Use is known only after the fact (a window closes, then it is read), so
 * a bucket may go below zero: that is debt, repaid at the rate. A bucket
 * at or below zero is exhausted until it has refilled to BM_BUDGET_RESUME
 * of its burst: without that margin a tenant held near its rate would flap
 * between held and free every window.
 */
#ifndef BM_AGENT_BUDGET_H
#define BM_AGENT_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

/* The dimensions a tenant is budgeted in, each in the unit its name says. */
enum bm_bud {
	BM_BUD_CPU,	/* CPU-seconds (rate: cores) */
	BM_BUD_MEM,	/* GiB-seconds of resident memory (rate: GiB held) */
	BM_BUD_NET,	/* bytes sent (rate: bytes per second) */
	BM_BUD_IO,	/* bytes read and written to block devices (rate: bytes/s) */
	BM_BUD_LAUNCH,	/* effects admitted (rate: per second) */
	BM_BUD__MAX,
};

/*
 * An exhausted bucket frees its tenant again once it holds this share of
 * its burst: held at BM_BUDGET_CAP of its rate, it gets there in 1.25 x
 * burst / rate seconds, so a tenant that always wants more alternates that
 * long held with a quarter of its burst at full speed.
 */
#define BM_BUDGET_RESUME 0.25
/* Its running effects are held to this share of its CPU rate, so that the bucket refills. */
#define BM_BUDGET_CAP 0.8
/*
 * And they yield (the lowest CPU weight against their siblings) until the
 * bucket is back at this share of its burst: once free again, a tenant that
 * still wants more than its rate spends the margin on CPU nobody else asks
 * for, instead of taking it from its neighbours' calls.
 */
#define BM_BUDGET_YIELD 0.5
/* The half-life of the recent use that names the node's top contributors: the last windows. */
#define BM_BUDGET_FAST_NS (1000000000ULL)

struct bm_bucket_cfg {
	double rate;	/* units per second; 0: no budget in this dimension */
	double burst;	/* units the bucket holds when full (>= rate's one second when set) */
};

struct bm_budget_cfg {
	struct bm_bucket_cfg b[BM_BUD__MAX];
	double weight;	/* its share in fair admission and of the queue, > 0 (1: everyone's) */
};

struct bm_bucket {
	double level;		/* tokens: burst when full, below 0 in debt */
	bool exhausted;		/* reached 0; until it refills to BM_BUDGET_RESUME x burst */
	uint64_t exhaustions;	/* times it became exhausted */
	double used;		/* everything charged, with a budget or without */
};

struct bm_budget {
	struct bm_budget_cfg cfg;
	struct bm_bucket b[BM_BUD__MAX];
	/* recent use: decayed sums, half-lives slow_ns (fair admission) and BM_BUDGET_FAST_NS */
	double slow[BM_BUD__MAX], fast[BM_BUD__MAX];
	uint64_t slow_ns;
	uint64_t at_ns;	/* refilled and decayed up to here */
};

/* The name of a dimension: "cpu_seconds", "memory_gib_seconds", ..., "launches". */
const char *bm_budget_name(enum bm_bud d);
/* The dimension of a name, or -1. */
int bm_budget_parse(const char *name);

/* Full buckets at now_ns; recent use decays with half-life slow_ns (0: 10 s). */
void bm_budget_init(struct bm_budget *b, const struct bm_budget_cfg *c, uint64_t slow_ns,
		    uint64_t now_ns);
/* Refill and decay up to now_ns (a time before the last one changes nothing). */
void bm_budget_advance(struct bm_budget *b, uint64_t now_ns);
/* Charge amount (>= 0, in d's unit) at now_ns: from the bucket, into the recent use. */
void bm_budget_charge(struct bm_budget *b, enum bm_bud d, double amount, uint64_t now_ns);
/* Does d have a budget? */
bool bm_budget_limited(const struct bm_budget *b, enum bm_bud d);
/* The first exhausted dimension of use (not launches) at now_ns, or -1. */
int bm_budget_over(struct bm_budget *b, uint64_t now_ns);
/*
 * May one more effect be admitted at now_ns? 0 (nothing is taken: charge
 * BM_BUD_LAUNCH once it is), or -EDQUOT with *d the budget that refuses.
 */
int bm_budget_admit(struct bm_budget *b, uint64_t now_ns, int *d);
/*
 * How long until d frees its tenant: until an exhausted bucket is back at
 * BM_BUDGET_RESUME x burst, refilling at its rate less use_rate (what the
 * tenant is expected to go on using meanwhile, units per second; the net
 * at least a tenth of the rate), or until launches hold one token. 0: now.
 */
uint64_t bm_budget_retry_ns(struct bm_budget *b, enum bm_bud d, uint64_t now_ns, double use_rate);
/* Recent use of d in units per second: over the last second or so, or over slow_ns. */
double bm_budget_rate_fast(struct bm_budget *b, enum bm_bud d, uint64_t now_ns);
double bm_budget_rate_slow(struct bm_budget *b, enum bm_bud d, uint64_t now_ns);

#endif /* BM_AGENT_BUDGET_H */
