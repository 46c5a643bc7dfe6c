/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * An effect's life at window resolution: one value per window and
 * dimension (display units), sampled from the meter as windows complete,
 * for event streams and the stored timeline (drawn by views/timeline.h).
 */
#ifndef BM_SERIES_H
#define BM_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bm_abi.h"

/* Points of a bounded series that are all alike: n of them, v in each dimension. */
struct bm_series_run {
	uint32_t n;
	float v[BM_DIM__MAX];
};

struct bm_series {
	uint64_t window_ns;		/* one window */
	size_t n, cap;			/* points recorded; room (points, or runs if bounded) */
	float *v[BM_DIM__MAX];		/* unbounded: v[d][i], point i of dimension d, display units */
	/*
	 * Bounded (max > 0, even): a point is the maximum of `step` windows.
	 * When max points are full, neighbours merge in pairs and step doubles,
	 * so however long the effect lives it costs at most max points, and a
	 * one-window burst stays in its point. The windows of the point still
	 * open are in part (part_n of them). Unbounded (max 0): step stays 1.
	 *
	 * A bounded series holds its points as runs of equal points (run[0..runs)),
	 * so an effect that slept for 10,000 windows holds one run, not 10,000
	 * points in every dimension: when 10,000 sleepers ended together, the
	 * agent's drain spent a third of its time filling and faulting in points
	 * of nothing happening. A run costs 4 bytes more than a point.
	 */
	size_t max;
	uint64_t step, part_n;
	float part[BM_DIM__MAX];
	struct bm_series_run *run;
	size_t runs;
};

/*
 * Append the next window's values (display units) for every dimension;
 * grows as needed (a bounded series up to max points). Returns 0 or
 * -ENOMEM. Start from a zeroed struct with window_ns (and max) set. NaN,
 * inf and negative values are stored as 0.
 */
int bm_series_push(struct bm_series *s, const double v[BM_DIM__MAX]);
/* n windows that all had v: as n pushes, at the cost of the points they make. */
int bm_series_push_n(struct bm_series *s, const double v[BM_DIM__MAX], uint64_t n);
/* Free the arrays and zero the counts (window_ns and max are kept); NULL is fine. */
void bm_series_free(struct bm_series *s);
/* Points, the open one of a bounded series included; point i of dimension d (a bounded series: O(runs)). */
size_t bm_series_len(const struct bm_series *s);
float bm_series_at(const struct bm_series *s, int d, size_t i);
/* Every point of dimension d, in order, into out (room for bm_series_len()): O(points). */
void bm_series_dim(const struct bm_series *s, int d, float *out);
/* A value that is not a size (NaN, inf, negative) as 0: nothing happened. */
double bm_series_clean(double v);
/* Windows per point (1 for an unbounded series). */
uint64_t bm_series_step(const struct bm_series *s);

#endif /* BM_SERIES_H */
