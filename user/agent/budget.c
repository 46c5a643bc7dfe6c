// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Token buckets and decayed recent use per tenant, with time as an argument (budget.h). */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "agent/budget.h"

#define NS 1e9
#define SLOW_DEFAULT_NS (10 * 1000000000ULL)

static const char *const names[BM_BUD__MAX] = {
	[BM_BUD_CPU] = "cpu_seconds",  [BM_BUD_MEM] = "memory_gib_seconds",
	[BM_BUD_NET] = "net_tx_bytes", [BM_BUD_IO] = "io_bytes",
	[BM_BUD_LAUNCH] = "launches",
};

const char *bm_budget_name(enum bm_bud d)
{
	return d < BM_BUD__MAX ? names[d] : "?";
}

int bm_budget_parse(const char *name)
{
	int d;

	for (d = 0; name && d < BM_BUD__MAX; d++)
		if (!strcmp(name, names[d]))
			return d;
	return -1;
}

bool bm_budget_limited(const struct bm_budget *b, enum bm_bud d)
{
	return d < BM_BUD__MAX && b->cfg.b[d].rate > 0;
}

/* Where a bucket frees its tenant again: a margin above 0; a launch needs one whole token. */
static double resume_level(const struct bm_budget *b, enum bm_bud d)
{
	return d == BM_BUD_LAUNCH ? 1 : BM_BUDGET_RESUME * b->cfg.b[d].burst;
}

static bool empty(const struct bm_budget *b, enum bm_bud d)
{
	return d == BM_BUD_LAUNCH ? b->b[d].level < 1 : b->b[d].level <= 0;
}

void bm_budget_init(struct bm_budget *b, const struct bm_budget_cfg *c, uint64_t slow_ns,
		    uint64_t now_ns)
{
	int d;

	memset(b, 0, sizeof(*b));
	b->cfg = *c;
	if (!(b->cfg.weight > 0))
		b->cfg.weight = 1;
	b->slow_ns = slow_ns ? slow_ns : SLOW_DEFAULT_NS;
	b->at_ns = now_ns;
	for (d = 0; d < BM_BUD__MAX; d++)
		b->b[d].level = bm_budget_limited(b, d) ? b->cfg.b[d].burst : 0;
}

void bm_budget_advance(struct bm_budget *b, uint64_t now_ns)
{
	double dt, ks, kf;
	int d;

	if (now_ns <= b->at_ns)
		return;
	dt = (double)(now_ns - b->at_ns) / NS;
	ks = exp2(-(double)(now_ns - b->at_ns) / (double)b->slow_ns);
	kf = exp2(-(double)(now_ns - b->at_ns) / (double)BM_BUDGET_FAST_NS);
	b->at_ns = now_ns;
	for (d = 0; d < BM_BUD__MAX; d++) {
		struct bm_bucket *k = &b->b[d];

		b->slow[d] *= ks;
		b->fast[d] *= kf;
		if (!bm_budget_limited(b, d))
			continue;
		k->level += b->cfg.b[d].rate * dt;
		if (k->level > b->cfg.b[d].burst)
			k->level = b->cfg.b[d].burst;
		if (k->exhausted && k->level >= resume_level(b, d))
			k->exhausted = false;
	}
}

void bm_budget_charge(struct bm_budget *b, enum bm_bud d, double amount, uint64_t now_ns)
{
	struct bm_bucket *k;

	if (d >= BM_BUD__MAX || !(amount > 0))
		return;
	bm_budget_advance(b, now_ns);
	k = &b->b[d];
	k->used += amount;
	b->slow[d] += amount;
	b->fast[d] += amount;
	if (!bm_budget_limited(b, d))
		return;
	k->level -= amount;
	if (!k->exhausted && empty(b, d)) {
		k->exhausted = true;
		k->exhaustions++;
	}
}

int bm_budget_over(struct bm_budget *b, uint64_t now_ns)
{
	int d;

	bm_budget_advance(b, now_ns);
	for (d = 0; d < BM_BUD_LAUNCH; d++)
		if (bm_budget_limited(b, d) && b->b[d].exhausted)
			return d;
	return -1;
}

int bm_budget_admit(struct bm_budget *b, uint64_t now_ns, int *d)
{
	int over = bm_budget_over(b, now_ns);

	if (over < 0 && bm_budget_limited(b, BM_BUD_LAUNCH) && empty(b, BM_BUD_LAUNCH))
		over = BM_BUD_LAUNCH;
	if (over < 0)
		return 0;
	*d = over;
	return -EDQUOT;
}

/* A decayed sum as a rate: a steady rate r sums to r x half-life / ln 2. */
static double rate_of(double sum, uint64_t half_life_ns)
{
	return sum * M_LN2 / ((double)half_life_ns / NS);
}

double bm_budget_rate_fast(struct bm_budget *b, enum bm_bud d, uint64_t now_ns)
{
	bm_budget_advance(b, now_ns);
	return d < BM_BUD__MAX ? rate_of(b->fast[d], BM_BUDGET_FAST_NS) : 0;
}

double bm_budget_rate_slow(struct bm_budget *b, enum bm_bud d, uint64_t now_ns)
{
	bm_budget_advance(b, now_ns);
	return d < BM_BUD__MAX ? rate_of(b->slow[d], b->slow_ns) : 0;
}

uint64_t bm_budget_retry_ns(struct bm_budget *b, enum bm_bud d, uint64_t now_ns, double use_rate)
{
	double need, net, rate;

	bm_budget_advance(b, now_ns);
	if (!bm_budget_limited(b, d))
		return 0;
	rate = b->cfg.b[d].rate;
	if (d == BM_BUD_LAUNCH) {
		need = 1 - b->b[d].level;
		net = rate;
	} else {
		if (!b->b[d].exhausted)
			return 0;
		need = resume_level(b, d) - b->b[d].level;
		/* what its effects go on using slows the refill; a throttle keeps it positive */
		net = rate - (use_rate > 0 ? use_rate : 0);
		net = net > rate / 10 ? net : rate / 10;
	}
	return need > 0 ? (uint64_t)ceil(need / net * NS) : 0;
}
