// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The timeline of an effect, as JSON and as the store keeps it. Packed, it
 * is a header and the points as floats, dimension by dimension, deflated:
 * most points of most effects are zero, and 2,000 sleepers' timelines as
 * JSON text (~35 kB each) were most of what the agent did, and wrote, when
 * they all ended at once; packed, each is a few hundred bytes.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "agent/timeline.h"
#include "meter/window.h"

#define TIMELINE_POINTS 1000
#define PACK_MAGIC "BMT1"

/* in the host's byte order: the store is the node's own */
struct pack_head {
	char magic[4];
	uint32_t dims, points;		/* dims * points floats follow, deflated */
	uint32_t zero;
	uint64_t window_ns, step_windows;
};

/* Windows a point covers: at most TIMELINE_POINTS points. */
static size_t point_step(const struct bm_series *s)
{
	size_t n = bm_series_len(s), step = (n + TIMELINE_POINTS - 1) / TIMELINE_POINTS;

	return step ? step : 1;
}

/* Each point is the largest of its windows: a one-window burst still shows. */
static float point_at(const struct bm_series *s, int d, size_t i, size_t step)
{
	size_t j, n = bm_series_len(s);
	float mx = 0;

	for (j = i * step; j < (i + 1) * step && j < n; j++)
		mx = bm_series_at(s, d, j) > mx ? bm_series_at(s, d, j) : mx;
	return mx;
}

/* The object of window_ms, step_windows and dims arrays of points (NULL: not one). */
static json_t *timeline_object(uint64_t window_ns, uint64_t step_windows, unsigned int dims,
			       size_t points, const float *pt)
{
	json_t *t = json_object();
	unsigned int d;
	size_t i;

	if (!t)
		return NULL;
	json_object_set_new(t, "window_ms", json_real((double)window_ns / 1e6));
	json_object_set_new(t, "step_windows", json_integer((json_int_t)step_windows));
	for (d = 0; d < dims && d < BM_DIM__MAX; d++) {
		json_t *arr = json_array();

		/* json_real() takes no infinity: such a point is left out */
		for (i = 0; i < points; i++)
			json_array_append_new(arr, json_real(pt[d * points + i]));
		json_object_set_new(t, bm_window_dim_name(d), arr);
	}
	return t;
}

/* The points, dimension by dimension (malloc'd), and their count; NULL on no memory. */
static float *points_of(const struct bm_series *s, size_t *points, size_t *step)
{
	size_t n = bm_series_len(s), i;
	float *pt;
	int d;

	*step = point_step(s);
	*points = (n + *step - 1) / *step;
	pt = malloc((*points ? *points : 1) * BM_DIM__MAX * sizeof(*pt));
	for (d = 0; pt && d < BM_DIM__MAX; d++)
		for (i = 0; i < *points; i++)
			pt[d * *points + i] = point_at(s, d, i, *step);
	return pt;
}

json_t *ag_timeline_json(const struct bm_series *s)
{
	size_t points, step;
	float *pt = points_of(s, &points, &step);
	json_t *t;

	if (!pt)
		return NULL;
	t = timeline_object(s->window_ns, step * bm_series_step(s), BM_DIM__MAX, points, pt);
	free(pt);
	return t;
}

int ag_timeline_pack(const struct bm_series *s, void **blob, size_t *len)
{
	size_t points, step;
	float *pt;
	uLongf zlen;
	uLong raw;
	struct pack_head h = { .magic = PACK_MAGIC, .dims = BM_DIM__MAX };
	unsigned char *out;

	*blob = NULL;
	*len = 0;
	if (!bm_series_len(s))
		return 0;
	pt = points_of(s, &points, &step);
	if (!pt)
		return -ENOMEM;
	h.points = (uint32_t)points;
	h.window_ns = s->window_ns;
	h.step_windows = step * bm_series_step(s);
	raw = (uLong)(points * BM_DIM__MAX * sizeof(*pt));
	zlen = compressBound(raw);
	out = malloc(sizeof(h) + zlen);
	if (out && compress2(out + sizeof(h), &zlen, (const Bytef *)pt, raw, Z_BEST_SPEED) != Z_OK) {
		free(out);
		out = NULL;
	}
	free(pt);
	if (!out)
		return -ENOMEM;
	memcpy(out, &h, sizeof(h));
	*blob = out;
	*len = sizeof(h) + zlen;
	return 0;
}

json_t *ag_timeline_unpack(const void *blob, size_t len)
{
	struct pack_head h;
	uLongf raw;
	float *pt;
	json_t *t = NULL;

	if (!blob || len < sizeof(h))
		return NULL;
	memcpy(&h, blob, sizeof(h));
	/* a store another build wrote, or one edited by hand: bounded before anything is made */
	if (memcmp(h.magic, PACK_MAGIC, sizeof(h.magic)) || !h.dims || h.dims > 64 ||
	    h.points > 1u << 20)
		return NULL;
	raw = (uLongf)h.dims * h.points * sizeof(*pt);
	pt = malloc(raw ? raw : 1);
	if (pt && uncompress((Bytef *)pt, &raw, (const Bytef *)blob + sizeof(h), len - sizeof(h)) == Z_OK &&
	    raw == (uLongf)h.dims * h.points * sizeof(*pt))
		t = timeline_object(h.window_ns, h.step_windows, h.dims, h.points, pt);
	free(pt);
	return t;
}
