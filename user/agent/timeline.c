// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The timeline of an effect, as JSON and as the store keeps it. Packed, it
 * is a header and the points as floats, dimension by dimension, in runs:
 * most points of most effects are zero or repeat, and 2,000 sleepers'
 * timelines as JSON text (~35 kB each) were most of what the agent did,
 * and wrote, when they all ended at once; packed, a sleeper's is ~100 bytes.
 * Runs, not zlib: deflate's state (~270 kB) made and freed at each end cost
 * more than the text it replaced.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/timeline.h"
#include "meter/window.h"

#define TIMELINE_POINTS 1000
#define PACK_MAGIC "BMT1"

/*
 * In the host's byte order (the store is the node's own). The dims * points
 * floats follow as runs, each a u16 word: bit 15 set, a repeat of the one
 * float after it (bits 0-14 + 1 times); clear, that many + 1 floats as they are.
 */
struct pack_head {
	char magic[4];
	uint32_t dims, points;
	uint32_t zero;
	uint64_t window_ns, step_windows;
};

#define RUN_REPEAT 0x8000u
#define RUN_MAX 0x8000u		/* floats in one run */

/* Windows a point covers: at most TIMELINE_POINTS points. */
static size_t point_step(const struct bm_series *s)
{
	size_t n = bm_series_len(s), step = (n + TIMELINE_POINTS - 1) / TIMELINE_POINTS;

	return step ? step : 1;
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

/*
 * The points, dimension by dimension (malloc'd), and their count; NULL on no
 * memory. Each is the largest of its windows: a one-window burst still shows.
 */
static float *points_of(const struct bm_series *s, size_t *points, size_t *step)
{
	size_t n = bm_series_len(s), i, j, end;
	float *pt, *out, *v, mx;
	int d;

	*step = point_step(s);
	*points = (n + *step - 1) / *step;
	pt = malloc((*points ? *points : 1) * BM_DIM__MAX * sizeof(*pt));
	v = malloc((n ? n : 1) * sizeof(*v));
	for (d = 0; pt && v && d < BM_DIM__MAX; d++) {
		bm_series_dim(s, d, v);
		out = pt + (size_t)d * *points;
		for (i = 0; i < n; i += *step) {
			end = i + *step < n ? i + *step : n;
			for (mx = 0, j = i; j < end; j++)
				mx = v[j] > mx ? v[j] : mx;
			*out++ = mx;
		}
	}
	if (!v) {
		free(pt);
		pt = NULL;
	}
	free(v);
	return pt;
}

/* Runs of pt[0..n) into out (room for n + n / RUN_MAX + 1 words and floats): its bytes. */
static size_t runs_put(const float *pt, size_t n, unsigned char *out)
{
	unsigned char *o = out;
	size_t i = 0, k, lit;
	uint16_t w;

	while (i < n) {
		for (k = 1; i + k < n && k < RUN_MAX && !memcmp(&pt[i + k], &pt[i], sizeof(*pt)); k++)
			;
		if (k > 1) {
			w = (uint16_t)(RUN_REPEAT | (k - 1));
			memcpy(o, &w, sizeof(w));
			memcpy(o + sizeof(w), &pt[i], sizeof(*pt));
			o += sizeof(w) + sizeof(*pt);
			i += k;
			continue;
		}
		/* floats as they are, up to the next pair that repeats */
		for (lit = 1; i + lit < n && lit < RUN_MAX &&
			      (i + lit + 1 >= n || memcmp(&pt[i + lit], &pt[i + lit + 1], sizeof(*pt)));
		     lit++)
			;
		w = (uint16_t)(lit - 1);
		memcpy(o, &w, sizeof(w));
		memcpy(o + sizeof(w), &pt[i], lit * sizeof(*pt));
		o += sizeof(w) + lit * sizeof(*pt);
		i += lit;
	}
	return (size_t)(o - out);
}

/* The n floats of the runs in in[0..len) into pt: 0, or -EINVAL if they are not exactly that. */
static int runs_get(const unsigned char *in, size_t len, float *pt, size_t n)
{
	size_t i = 0, k, j;
	uint16_t w;

	while (len) {
		if (len < sizeof(w) + sizeof(*pt))
			return -EINVAL;
		memcpy(&w, in, sizeof(w));
		k = (size_t)(w & ~RUN_REPEAT) + 1;
		if (k > n - i)
			return -EINVAL;
		in += sizeof(w);
		len -= sizeof(w);
		if (w & RUN_REPEAT) {
			for (j = 0; j < k; j++)
				memcpy(&pt[i + j], in, sizeof(*pt));
			in += sizeof(*pt);
			len -= sizeof(*pt);
		} else {
			if (len < k * sizeof(*pt))
				return -EINVAL;
			memcpy(&pt[i], in, k * sizeof(*pt));
			in += k * sizeof(*pt);
			len -= k * sizeof(*pt);
		}
		i += k;
	}
	return i == n ? 0 : -EINVAL;
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
	struct pack_head h = { .magic = PACK_MAGIC, .dims = BM_DIM__MAX };
	size_t points, step, n;
	unsigned char *out;
	float *pt;

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
	n = points * BM_DIM__MAX;
	/* at worst every float as it is, and a word for each RUN_MAX of them */
	out = malloc(sizeof(h) + n * sizeof(*pt) + (n / RUN_MAX + 1) * sizeof(uint16_t));
	if (out) {
		memcpy(out, &h, sizeof(h));
		*len = sizeof(h) + runs_put(pt, n, out + sizeof(h));
		*blob = out;
	}
	free(pt);
	return out ? 0 : -ENOMEM;
}

json_t *ag_timeline_unpack(const void *blob, size_t len)
{
	struct pack_head h;
	json_t *t = NULL;
	float *pt;
	size_t n;

	if (!blob || len < sizeof(h))
		return NULL;
	memcpy(&h, blob, sizeof(h));
	/* a store another build wrote, or one edited by hand: bounded before anything is made */
	if (memcmp(h.magic, PACK_MAGIC, sizeof(h.magic)) || !h.dims || h.dims > 64 ||
	    h.points > 1u << 20)
		return NULL;
	n = (size_t)h.dims * h.points;
	pt = malloc((n ? n : 1) * sizeof(*pt));
	if (pt && !runs_get((const unsigned char *)blob + sizeof(h), len - sizeof(h), pt, n))
		t = timeline_object(h.window_ns, h.step_windows, h.dims, h.points, pt);
	free(pt);
	return t;
}
