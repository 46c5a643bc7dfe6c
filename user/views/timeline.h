/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* An effect's timeline as a picture: one self-contained SVG document. */
#ifndef BM_TIMELINE_H
#define BM_TIMELINE_H

#include <stddef.h>
#include <stdio.h>

#include "meter/series.h"

struct bm_timeline_mark {
	double at_ms;			/* since the start */
	const char *label;		/* "freeze (memory_ceiling)" */
};

struct bm_timeline {
	const char *title;		/* effect id and intent */
	const struct bm_series *s;
	const struct bm_timeline_mark *marks;
	size_t n_marks;
	double ceiling[BM_DIM__MAX];	/* display units, 0 = none */
};

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
int bm_timeline_svg(FILE *f, const struct bm_timeline *t);

#endif /* BM_TIMELINE_H */
