// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An effect's windows as a series that stays small: bounded series fold
 * neighbours in pairs, keeping each pair's maximum, so a burst one window
 * wide survives however long the effect runs.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meter/series.h"

double bm_series_clean(double v)
{
	return isfinite(v) && v > 0 ? v : 0;
}

/* Room for at least need points in every dimension of an unbounded series (256 at first, doubling): 0 or -ENOMEM. */
static int grow(struct bm_series *s, size_t need)
{
	size_t cap = s->cap ? s->cap : 256;
	int d;

	while (cap < need) {
		if (cap > SIZE_MAX / 2 / sizeof(float))
			return -ENOMEM;
		cap *= 2;
	}
	/* cap is raised only once every array holds it; a grown array is harmless */
	for (d = 0; d < BM_DIM__MAX; d++) {
		float *p = realloc(s->v[d], cap * sizeof(float));

		if (!p)
			return -ENOMEM;
		s->v[d] = p;
	}
	s->cap = cap;
	return 0;
}

/* m points of v (an unbounded series): one pass per dimension. */
static int fill(struct bm_series *s, const double v[BM_DIM__MAX], size_t m)
{
	size_t i;
	int d;

	if (s->n + m > s->cap && grow(s, s->n + m))
		return -ENOMEM;
	for (d = 0; d < BM_DIM__MAX; d++) {
		float x = (float)bm_series_clean(v[d]);

		for (i = s->n; i < s->n + m; i++)
			s->v[d][i] = x;
	}
	s->n += m;
	return 0;
}

/* Points a bounded series holds before it folds: max, an odd max taken as the even one above it. */
static size_t bound(const struct bm_series *s)
{
	return s->max + (s->max & 1);
}

/*
 * Room for one more run (s->cap of them): 8 at first, doubling, never past
 * bound() (a run holds a point at least).
 */
static int runs_room(struct bm_series *s)
{
	size_t cap = s->cap ? 2 * s->cap : 8;
	struct bm_series_run *r;

	if (s->runs < s->cap)
		return 0;
	if (cap > bound(s))
		cap = bound(s);
	r = realloc(s->run, cap * sizeof(*r));
	if (!r)
		return -ENOMEM;
	s->run = r;
	s->cap = cap;
	return 0;
}

/* k points of v (cleaned) at the end of a bounded series: the last run if alike, else a new one. */
static int runs_add(struct bm_series *s, const float v[BM_DIM__MAX], uint64_t k)
{
	struct bm_series_run *r = s->runs ? &s->run[s->runs - 1] : NULL;

	if (!k)
		return 0;
	if (!r || memcmp(r->v, v, sizeof(r->v))) {
		if (runs_room(s))
			return -ENOMEM;
		r = &s->run[s->runs++];
		memcpy(r->v, v, sizeof(r->v));
		r->n = 0;
	}
	r->n += (uint32_t)k;
	s->n += k;
	return 0;
}

/* A run of n points of the larger of a and b in every dimension, after out[0..*o) (merged if alike). */
static void run_put(struct bm_series_run *out, size_t *o, const float *a, const float *b, uint32_t n)
{
	float v[BM_DIM__MAX];
	int d;

	for (d = 0; d < BM_DIM__MAX; d++)
		v[d] = a[d] > b[d] ? a[d] : b[d];
	if (*o && !memcmp(out[*o - 1].v, v, sizeof(v))) {
		out[*o - 1].n += n;
		return;
	}
	memcpy(out[*o].v, v, sizeof(v));
	out[(*o)++].n = n;
}

/*
 * Full (bound() points): pairs merge, a point covers twice the windows; 0 or
 * -ENOMEM. Run by run: a run's own pairs stay one run, a pair across two runs
 * is a point of its own. That can make more runs than it reads (A A A B B B
 * folds to A, AB, B), at most twice as many and at most the points it makes,
 * so they go into a new array (a fold is rare: log2 of a life in windows).
 */
static int fold_if_full(struct bm_series *s)
{
	size_t i = 0, o = 0, cap = s->n / 2 < 2 * s->runs ? s->n / 2 : 2 * s->runs;
	struct bm_series_run *out, cur;

	if (s->n < bound(s))
		return 0;
	out = malloc(cap * sizeof(*out));
	if (!out)
		return -ENOMEM;
	cur = s->run[i++];
	for (;;) {
		if (cur.n >= 2) {
			run_put(out, &o, cur.v, cur.v, cur.n / 2);
			cur.n %= 2;
		}
		if (!cur.n) {
			if (i == s->runs)
				break;
			cur = s->run[i++];
			continue;
		}
		/* its last point pairs with the next run's first (there is one: n is even) */
		run_put(out, &o, cur.v, s->run[i].v, 1);
		cur = s->run[i++];
		cur.n--;
	}
	free(s->run);
	s->run = out;
	s->runs = o;
	s->cap = cap;
	s->n /= 2;
	s->step *= 2;
	return 0;
}

/*
 * n windows of v. An idle stretch of thousands of windows (an effect that
 * slept) is a count added to a run, not n pushes or points: when 10,000
 * sleepers woke together, one tick of the agent took them all.
 */
int bm_series_push_n(struct bm_series *s, const double v[BM_DIM__MAX], uint64_t n)
{
	float c[BM_DIM__MAX];
	uint64_t k, m;
	int d, err;

	if (!s->max)
		return n > SIZE_MAX - s->n ? -ENOMEM : fill(s, v, (size_t)n);
	if (!s->step)
		s->step = 1;
	for (d = 0; d < BM_DIM__MAX; d++)
		c[d] = (float)bm_series_clean(v[d]);
	while (n) {
		if (!s->part_n && n >= s->step) {
			/* whole points of step windows each, as many as fit before a fold */
			m = bound(s) - s->n;
			m = m < n / s->step ? m : n / s->step;
			n -= m * s->step;	/* before a fold doubles the step */
			err = runs_add(s, c, m) ?: fold_if_full(s);
			if (err)
				return err;
			continue;
		}
		/* as many as the open point still takes: they all had v */
		k = s->step - s->part_n < n ? s->step - s->part_n : n;
		for (d = 0; d < BM_DIM__MAX; d++)
			if (!s->part_n || c[d] > s->part[d])
				s->part[d] = c[d];
		s->part_n += k;
		n -= k;
		if (s->part_n < s->step)
			continue;
		err = runs_add(s, s->part, 1) ?: fold_if_full(s);
		if (err)
			return err;
		s->part_n = 0;
	}
	return 0;
}

int bm_series_push(struct bm_series *s, const double v[BM_DIM__MAX])
{
	return bm_series_push_n(s, v, 1);
}

size_t bm_series_len(const struct bm_series *s)
{
	return s->n + (s->max && s->part_n ? 1 : 0);
}

float bm_series_at(const struct bm_series *s, int d, size_t i)
{
	size_t r;

	if (!s->max || i >= s->n)
		return i < s->n ? s->v[d][i] : s->part[d];
	for (r = 0; i >= s->run[r].n; r++)
		i -= s->run[r].n;
	return s->run[r].v[d];
}

void bm_series_dim(const struct bm_series *s, int d, float *out)
{
	size_t r;
	uint32_t k;

	if (!s->max) {
		memcpy(out, s->v[d], s->n * sizeof(*out));
		return;
	}
	for (r = 0; r < s->runs; r++)
		for (k = 0; k < s->run[r].n; k++)
			*out++ = s->run[r].v[d];
	if (s->part_n)
		*out = s->part[d];
}

uint64_t bm_series_step(const struct bm_series *s)
{
	return s->max && s->step ? s->step : 1;
}

void bm_series_free(struct bm_series *s)
{
	int d;

	if (!s)
		return;
	for (d = 0; d < BM_DIM__MAX; d++) {
		free(s->v[d]);
		s->v[d] = NULL;
	}
	free(s->run);
	s->run = NULL;
	s->runs = 0;
	s->n = s->cap = 0;
	s->step = s->part_n = 0;
}
