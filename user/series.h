/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * An effect's life at window resolution, for the timeline picture: one
 * value per window and dimension (display units), sampled from the meter
 * as windows complete, and rendered as a self-contained SVG.
 */
#ifndef BM_SERIES_H
#define BM_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

struct bm_series_mark {
	double at_ms;			/* since the start */
	const char *label;		/* "freeze (memory_ceiling)" */
};

struct bm_timeline {
	const char *title;		/* effect id and intent */
	const struct bm_series *s;
	const struct bm_series_mark *marks;
	size_t n_marks;
	double ceiling[BM_DIM__MAX];	/* display units, 0 = none */
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
/* Windows per point (1 for an unbounded series). */
uint64_t bm_series_step(const struct bm_series *s);

/*
 * Write the timeline as one SVG document: a panel per dimension (CPU cores,
 * memory, tasks, send rate, run-queue wait) over time, ceilings as dashed
 * lines, actions as marked vertical lines with their labels. Valid XML
 * (names and labels escaped; bytes that are not UTF-8 become U+FFFD). More
 * windows than pixel columns are drawn as the maximum of each column, so a
 * one-window spike stays visible. Marks and t->s may be NULL; no windows
 * renders a small document saying "no windows". Returns 0, -EINVAL (f or t
 * NULL), -ENOMEM, or the write error (-EIO if the stream did not say).
 */
int bm_series_svg(FILE *f, const struct bm_timeline *t);

#endif /* BM_SERIES_H */
