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

struct bm_series {
	uint64_t window_ns;		/* one window */
	size_t n, cap;			/* points recorded */
	float *v[BM_DIM__MAX];		/* v[d][i]: point i of dimension d, display units */
	/*
	 * Bounded (max > 0, even): a point is the maximum of `step` windows.
	 * When max points are full, neighbours merge in pairs and step doubles,
	 * so however long the effect lives it costs at most max points, and a
	 * one-window burst stays in its point. The windows of the point still
	 * open are in part (part_n of them). Unbounded (max 0): step stays 1.
	 */
	size_t max;
	uint64_t step, part_n;
	float part[BM_DIM__MAX];
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
/* Points, the open one of a bounded series included; point i of dimension d. */
size_t bm_series_len(const struct bm_series *s);
float bm_series_at(const struct bm_series *s, int d, size_t i);
/* A value that is not a size (NaN, inf, negative) as 0: nothing happened. */
double bm_series_clean(double v);
/* Windows per point (1 for an unbounded series). */
uint64_t bm_series_step(const struct bm_series *s);

#endif /* BM_SERIES_H */
