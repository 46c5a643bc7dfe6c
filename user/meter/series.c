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

/*
 * Room for at least need points in every dimension: 0 or -ENOMEM. 256 at
 * first, a bounded series 32 (an agent's effect that sleeps holds a few
 * points: 10,000 of them held 9 kB each at 256); a bounded series then goes
 * straight to its bound (one realloc per dimension, not several: 10,000
 * effects that had slept grew together).
 */
static int grow(struct bm_series *s, size_t need)
{
	size_t cap = s->cap ? s->cap : s->max ? 32 : 256;
	int d;

	if (s->max && s->cap && need <= s->max + (s->max & 1))
		cap = s->max + (s->max & 1);
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

static int append(struct bm_series *s, const double v[BM_DIM__MAX])
{
	int d;

	if (s->n == s->cap && grow(s, s->n + 1))
		return -ENOMEM;
	for (d = 0; d < BM_DIM__MAX; d++)
		s->v[d][s->n] = (float)bm_series_clean(v[d]);
	s->n++;
	return 0;
}

/* Points i.. of the series (i <= n, room for them) all v, cleaned: one pass per dimension. */
static void fill(struct bm_series *s, const double v[BM_DIM__MAX], size_t m)
{
	size_t i;
	int d;

	for (d = 0; d < BM_DIM__MAX; d++) {
		float x = (float)bm_series_clean(v[d]);

		for (i = s->n; i < s->n + m; i++)
			s->v[d][i] = x;
	}
	s->n += m;
}

/* Full (max points, an odd max taken as the even one above it): pairs merge, a point covers twice the windows. */
static void fold_if_full(struct bm_series *s)
{
	size_t i;
	int d;

	if (s->n < s->max + (s->max & 1))
		return;
	for (d = 0; d < BM_DIM__MAX; d++)
		for (i = 0; i < s->n / 2; i++)
			s->v[d][i] = s->v[d][2 * i] > s->v[d][2 * i + 1] ? s->v[d][2 * i] : s->v[d][2 * i + 1];
	s->n /= 2;
	s->step *= 2;
}

/*
 * n windows of v. An idle stretch of thousands of windows (an effect that
 * slept) is whole points written a dimension at a time, not n pushes: when
 * 10,000 sleepers woke together, one tick of the agent filled them all.
 */
int bm_series_push_n(struct bm_series *s, const double v[BM_DIM__MAX], uint64_t n)
{
	double p[BM_DIM__MAX];
	uint64_t k, m;
	int d, err;

	while (n) {
		if (!s->max || (s->step <= 1 && !s->part_n)) {
			/* whole points of one window each, as many as fit before a fold */
			s->step = s->max ? 1 : s->step;
			m = s->max ? s->max + (s->max & 1) - s->n : n;
			m = m < n ? m : n;
			if (s->n + m > s->cap && grow(s, s->n + m))
				return -ENOMEM;
			fill(s, v, m);
			n -= m;
			if (s->max)
				fold_if_full(s);
			continue;
		}
		if (!s->part_n && n >= s->step) {
			/* whole points of step windows each */
			m = s->max + (s->max & 1) - s->n;
			m = m < n / s->step ? m : n / s->step;
			if (s->n + m > s->cap && grow(s, s->n + m))
				return -ENOMEM;
			fill(s, v, m);
			n -= m * s->step;
			fold_if_full(s);
			continue;
		}
		/* as many as the open point still takes: they all had v */
		k = s->step - s->part_n < n ? s->step - s->part_n : n;
		for (d = 0; d < BM_DIM__MAX; d++)
			if (!s->part_n || bm_series_clean(v[d]) > s->part[d])
				s->part[d] = (float)bm_series_clean(v[d]);
		s->part_n += k;
		n -= k;
		if (s->part_n < s->step)
			continue;
		for (d = 0; d < BM_DIM__MAX; d++)
			p[d] = s->part[d];
		err = append(s, p);
		if (err)
			return err;
		s->part_n = 0;
		fold_if_full(s);
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
	return i < s->n ? s->v[d][i] : s->part[d];
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
	s->n = s->cap = 0;
	s->step = s->part_n = 0;
}
