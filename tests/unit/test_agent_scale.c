// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What 10,000 effects at once cost the agent: the size of an effect's
 * record, and the timeline the store keeps packed, which must unpack to
 * the bytes json_dumps() writes of ag_timeline_json().
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agent/state.h"
#include "agent/timeline.h"
#include "meter/window.h"

/*
 * Issue 20 asks for at most 20 kB of the agent's memory per live effect,
 * all of it counted. The record is 14,696 bytes here (x86-64): the v1 twin
 * paths (16 kB), the status path (4 kB), the request's intent, cwd and
 * sandbox.workspace (4 kB each) and the cgroup's path (4 kB) went to the
 * heap, sized to content. This bound stops any path-sized member coming
 * back.
 */
#define AG_EFFECT_MAX_BYTES (20 * 1024)

static void test_effect_record_is_small(void **state)
{
	print_message("sizeof: ag_effect %zu, bm_sup %zu, bm_request %zu, bm_sandbox %zu, "
		      "bm_ceilings %zu, bm_outcome %zu, bm_summary %zu\n", sizeof(struct ag_effect),
		      sizeof(struct bm_sup), sizeof(struct bm_request), sizeof(struct bm_sandbox),
		      sizeof(struct bm_ceilings), sizeof(struct bm_outcome), sizeof(struct bm_summary));
	assert_true(sizeof(struct ag_effect) <= AG_EFFECT_MAX_BYTES);
	/* the ceilings hold no path: they were 16 kB of empty v1_dir[][PATH_MAX] on a v2 host */
	assert_true(sizeof(struct bm_ceilings) < 1024);
	/*
	 * the supervisor's state: ceilings, ladder, outcome, summary; no path
	 * either (12.0 kB with two CPU sets in the ceilings: a path would add 4)
	 */
	assert_true(sizeof(struct bm_sup) < 13 * 1024);
}

static void push(struct bm_series *s, double base, uint64_t i)
{
	double v[BM_DIM__MAX];
	int d;

	for (d = 0; d < BM_DIM__MAX; d++)
		v[d] = base * (d + 1);
	/* whole numbers, fractions, the tiny and the huge (exponents), zeros */
	v[BM_DIM_CPU] = (double)(i % 7) / 3.0;
	v[BM_DIM_MEM] = (double)(4096 * (i % 1000));
	v[BM_DIM_PIDS] = (double)(i % 5);
	v[BM_DIM_NET] = i % 11 == 0 ? 1.5e12 * (double)i : 0;
	v[BM_DIM_RUNQ] = i % 13 == 0 ? 1.25e-7 * (double)(i + 1) : 0;
	v[BM_DIM_IO_READ] = i % 17 == 0 ? 999999999.0 + (double)i : 0;
	v[BM_DIM_IO_WRITE] = i == 3 ? 3.4e38 * 10 : 1e9;
	assert_int_equal(bm_series_push(s, v), 0);
}

/* Each point of j is the largest of its windows, read through bm_series_at(). */
static void points_are_maxima(const struct bm_series *s, json_t *j)
{
	size_t n = bm_series_len(s), step = (n + 999) / 1000, i, k;
	int d;

	step = step ? step : 1;
	assert_int_equal(json_integer_value(json_object_get(j, "step_windows")),
			 (json_int_t)(step * bm_series_step(s)));
	for (d = 0; d < BM_DIM__MAX; d++) {
		json_t *arr = json_object_get(j, bm_window_dim_name(d));
		size_t at = 0;

		for (i = 0; i < n; i += step) {
			float mx = 0;

			for (k = i; k < i + step && k < n; k++)
				mx = bm_series_at(s, d, k) > mx ? bm_series_at(s, d, k) : mx;
			/* json_real() takes no infinity: such a point is left out */
			if (!isfinite(mx))
				continue;
			assert_true(json_real_value(json_array_get(arr, at++)) == (double)mx);
		}
		assert_int_equal(json_array_size(arr), at);
	}
}

/* Packed and unpacked, the timeline is what ag_timeline_json() gives, to the byte. */
static size_t same_as_json(struct bm_series *s)
{
	json_t *j = ag_timeline_json(s), *back;
	char *want = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(9)), *got;
	size_t len;
	void *blob;

	points_are_maxima(s, j);

	assert_int_equal(ag_timeline_pack(s, &blob, &len), 0);
	back = ag_timeline_unpack(blob, len);
	got = json_dumps(back, JSON_COMPACT | JSON_REAL_PRECISION(9));
	assert_non_null(want);
	assert_non_null(got);
	assert_string_equal(got, want);
	free(want);
	free(got);
	free(blob);
	json_decref(back);
	json_decref(j);
	return len;
}

static void test_timeline_packs_to_its_json(void **state)
{
	struct bm_series s = { .window_ns = 10 * 1000 * 1000, .max = 2048 };
	struct bm_series odd = { .window_ns = 1234567 };
	struct bm_series quiet = { .window_ns = 10 * 1000 * 1000, .max = 2048 };
	double zero[BM_DIM__MAX] = { 0 };
	size_t len;
	void *blob;
	uint64_t i;

	/* nothing; one point; then fewer points than the timeline's; then folded, several each */
	assert_int_equal(ag_timeline_pack(&s, &blob, &len), 0);
	assert_null(blob);
	assert_int_equal(len, 0);
	push(&s, 0.5, 0);
	same_as_json(&s);
	for (i = 1; i < 700; i++)
		push(&s, 0.001 * (double)i, i);
	same_as_json(&s);
	for (; i < 50000; i++)
		push(&s, i % 97 ? 0 : 12345.678, i);
	assert_true(bm_series_step(&s) > 1);
	same_as_json(&s);
	/* an odd window and an unbounded series */
	for (i = 0; i < 2500; i++)
		push(&odd, 1.0 / (double)(i + 1), i);
	same_as_json(&odd);
	/* a sleeper's 1,000 points a dimension of zeros: ~35 kB as JSON text */
	for (i = 0; i < 1500; i++)
		assert_int_equal(bm_series_push(&quiet, zero), 0);
	assert_true(same_as_json(&quiet) < 1024);
	bm_series_free(&s);
	bm_series_free(&odd);
	bm_series_free(&quiet);
}

/* What is not a packed timeline (cut short, another format, a forged size) unpacks to nothing. */
static void test_timeline_unpack_refuses_others(void **state)
{
	struct bm_series s = { .window_ns = 10 * 1000 * 1000, .max = 2048 };
	unsigned char *b;
	size_t len, cut;
	void *blob;
	uint64_t i;

	for (i = 0; i < 300; i++)
		push(&s, 0.25, i);
	assert_int_equal(ag_timeline_pack(&s, &blob, &len), 0);
	b = blob;
	for (cut = 0; cut < len; cut++)
		assert_null(ag_timeline_unpack(b, cut));
	assert_null(ag_timeline_unpack(NULL, len));
	b[0] = 'X';
	assert_null(ag_timeline_unpack(b, len));
	b[0] = 'B';
	b[8] ^= 0x40;	/* points: the inflated size no longer matches */
	assert_null(ag_timeline_unpack(b, len));
	free(blob);
	bm_series_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_effect_record_is_small),
		cmocka_unit_test(test_timeline_packs_to_its_json),
		cmocka_unit_test(test_timeline_unpack_refuses_others),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
