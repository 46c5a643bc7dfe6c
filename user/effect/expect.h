/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Declared intent: what a call says it will need (a request's "expect"),
 * set against what it used. The policy holds a declaration against its
 * hard levels before the call runs (the agent refuses one above), may widen
 * its soft levels up to the declared values for that effect only, and the
 * outcome reports declared against observed. Pure.
 */
#ifndef BM_EXPECT_H
#define BM_EXPECT_H

#include <jansson.h>
#include <stdint.h>

#include "effect/policy.h"

/* What may be declared, each in the outcome's terms. */
enum bm_xdim {
	BM_X_CPU,		/* peak.cpu_cores: millicores */
	BM_X_MEM,		/* peak.memory_bytes */
	BM_X_PIDS,		/* peak.pids: live tasks */
	BM_X_NET_RATE,		/* peak.net_tx_bytes_per_s */
	BM_X_NET_BYTES,		/* totals.net_tx_bytes */
	BM_X_WALL,		/* wall_seconds: ns */
	BM_X__MAX,
};

#define BM_X_BIT(d) (1U << (d))

struct bm_expect {
	uint32_t set;			/* BM_X_BIT()s of what was declared */
	uint64_t v[BM_X__MAX];		/* in the units above */
};

/* "cpu_cores", "memory_bytes", "pids", "net_tx_bytes_per_s", "net_tx_bytes", "wall_seconds" */
const char *bm_expect_key(enum bm_xdim d);
/* The declared value in the outcome's units (cores, bytes, tasks, bytes/s, bytes, seconds). */
double bm_expect_value(const struct bm_expect *x, enum bm_xdim d);
/* The policy dimension a declaration is held against, BM_P__MAX: none (totals, duration). */
enum bm_pdim bm_expect_pdim(enum bm_xdim d);

/*
 * Where a policy allows it (p->expect_widens), each soft level below a
 * declared value rises to it, never above the dimension's hard level:
 * soft = min(max(soft, declared), hard). A level of 0 (none) stays none.
 * x may be NULL.
 */
void bm_expect_widen(const struct bm_expect *x, struct bm_policy *p);

/*
 * Declared against observed, from the outcome's JSON (its peak, totals and
 * wall_seconds): {"declared": {key: v}, "observed": {key: v}, "exceeded":
 * [key, ...]}, one key per declaration. A new reference, NULL on ENOMEM.
 */
json_t *bm_expect_json(const struct bm_expect *x, const json_t *outcome);

#endif /* BM_EXPECT_H */
