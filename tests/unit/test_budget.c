// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/agent/budget.c, the token buckets, with time as an argument: every
 * figure below follows from the now_ns given (rates of 1 and 2 and powers
 * of two keep the doubles exact). Refill up to the burst, debt below zero,
 * exhaustion with its margin before the tenant goes free, the retry time
 * from the bucket, launches by whole tokens, and the decayed recent use.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "agent/budget.h"

#define S 1000000000ULL
#define MS 1000000ULL
#define T0 (100 * S)

static struct bm_budget b;

/* A CPU budget of rate cores and burst CPU-seconds; nothing else limited. */
static void cpu_budget(double rate, double burst)
{
	struct bm_budget_cfg c = { .weight = 1 };

	c.b[BM_BUD_CPU] = (struct bm_bucket_cfg){ rate, burst };
	bm_budget_init(&b, &c, 10 * S, T0);
}

static void test_budget_refills_to_its_burst(void **state)
{
	(void)state;
	cpu_budget(1, 10);
	assert_true(b.b[BM_BUD_CPU].level == 10);
	bm_budget_charge(&b, BM_BUD_CPU, 4, T0);
	assert_true(b.b[BM_BUD_CPU].level == 6);
	bm_budget_advance(&b, T0 + 2 * S);
	assert_true(b.b[BM_BUD_CPU].level == 8);
	/* never past the burst, however long it waits */
	bm_budget_advance(&b, T0 + 3600 * S);
	assert_true(b.b[BM_BUD_CPU].level == 10);
	/* time that goes back changes nothing */
	bm_budget_advance(&b, T0);
	assert_true(b.b[BM_BUD_CPU].level == 10);
	assert_true(b.b[BM_BUD_CPU].used == 4);
	assert_false(b.b[BM_BUD_CPU].exhausted);
	assert_int_equal(bm_budget_over(&b, T0 + 3600 * S), -1);
}

/* Use is known after the fact: debt, exhaustion, and the margin before the tenant goes free. */
static void test_budget_exhausts_then_frees_at_its_margin(void **state)
{
	(void)state;
	cpu_budget(1, 10);
	bm_budget_charge(&b, BM_BUD_CPU, 10.5, T0);
	assert_true(b.b[BM_BUD_CPU].level == -0.5);
	assert_true(b.b[BM_BUD_CPU].exhausted);
	assert_int_equal(b.b[BM_BUD_CPU].exhaustions, 1);
	assert_int_equal(bm_budget_over(&b, T0), BM_BUD_CPU);
	/* back at 0, and at 2: still held (the margin is a quarter of the burst, 2.5 CPU-s) */
	assert_int_equal(bm_budget_over(&b, T0 + 500 * MS), BM_BUD_CPU);
	assert_int_equal(bm_budget_over(&b, T0 + 2500 * MS), BM_BUD_CPU);
	assert_int_equal(bm_budget_over(&b, T0 + 2999 * MS), BM_BUD_CPU);
	assert_int_equal(bm_budget_over(&b, T0 + 3000 * MS), -1);
	assert_true(b.b[BM_BUD_CPU].level == 2.5);
	/* a second exhaustion is counted as one more */
	bm_budget_charge(&b, BM_BUD_CPU, 2.5, T0 + 3000 * MS);
	assert_true(b.b[BM_BUD_CPU].exhausted);
	assert_int_equal(b.b[BM_BUD_CPU].exhaustions, 2);
	/* more use while exhausted is more debt, not more exhaustions */
	bm_budget_charge(&b, BM_BUD_CPU, 3, T0 + 3000 * MS);
	assert_true(b.b[BM_BUD_CPU].level == -3);
	assert_int_equal(b.b[BM_BUD_CPU].exhaustions, 2);
}

/* Retry-After: the time to the margin, at the rate less what the tenant goes on using. */
static void test_budget_retry_from_the_bucket(void **state)
{
	(void)state;
	cpu_budget(1, 10);
	assert_true(bm_budget_retry_ns(&b, BM_BUD_CPU, T0, 0) == 0);
	bm_budget_charge(&b, BM_BUD_CPU, 10.5, T0);
	/* -0.5 to +2.5 at 1 CPU-s per second */
	assert_true(bm_budget_retry_ns(&b, BM_BUD_CPU, T0, 0) == 3 * S);
	/* its running effects held at 0.75 cores: it refills at a quarter of the rate */
	assert_true(bm_budget_retry_ns(&b, BM_BUD_CPU, T0, 0.75) == 12 * S);
	/* using more than its rate: the floor, a tenth of the rate (a throttle holds it there) */
	assert_true(bm_budget_retry_ns(&b, BM_BUD_CPU, T0, 2) == 30 * S);
	/* half a second later, with nothing used: 2.5 s to go */
	assert_true(bm_budget_retry_ns(&b, BM_BUD_CPU, T0 + 500 * MS, 0) == 2500 * MS);
	/* a dimension without a budget never waits */
	assert_true(bm_budget_retry_ns(&b, BM_BUD_MEM, T0, 0) == 0);
}

/* Launches go by whole tokens: 3 at once, then one every half second at 2/s. */
static void test_budget_launches_by_whole_tokens(void **state)
{
	struct bm_budget_cfg c = { .weight = 1 };
	int i, d = -1;

	(void)state;
	c.b[BM_BUD_LAUNCH] = (struct bm_bucket_cfg){ 2, 3 };
	bm_budget_init(&b, &c, 0, T0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(bm_budget_admit(&b, T0, &d), 0);
		bm_budget_charge(&b, BM_BUD_LAUNCH, 1, T0);
	}
	assert_int_equal(bm_budget_admit(&b, T0, &d), -EDQUOT);
	assert_int_equal(d, BM_BUD_LAUNCH);
	assert_true(bm_budget_retry_ns(&b, BM_BUD_LAUNCH, T0, 0) == 500 * MS);
	assert_int_equal(bm_budget_admit(&b, T0 + 499 * MS, &d), -EDQUOT);
	assert_int_equal(bm_budget_admit(&b, T0 + 500 * MS, &d), 0);
	/* launches never hold queued calls: they are not use */
	assert_int_equal(bm_budget_over(&b, T0), -1);
	assert_true(b.b[BM_BUD_LAUNCH].used == 3);
}

/* An exhausted budget of use refuses admission, naming itself; the first one counts. */
static void test_budget_admit_names_the_budget(void **state)
{
	struct bm_budget_cfg c = { .weight = 1 };
	int d = -1;

	(void)state;
	c.b[BM_BUD_MEM] = (struct bm_bucket_cfg){ 2, 4 };
	c.b[BM_BUD_NET] = (struct bm_bucket_cfg){ 1024, 4096 };
	bm_budget_init(&b, &c, 0, T0);
	assert_int_equal(bm_budget_admit(&b, T0, &d), 0);
	bm_budget_charge(&b, BM_BUD_NET, 8192, T0);
	assert_int_equal(bm_budget_admit(&b, T0, &d), -EDQUOT);
	assert_int_equal(d, BM_BUD_NET);
	bm_budget_charge(&b, BM_BUD_MEM, 4, T0);
	assert_int_equal(bm_budget_admit(&b, T0, &d), -EDQUOT);
	assert_int_equal(d, BM_BUD_MEM);
	assert_string_equal(bm_budget_name(d), "memory_gib_seconds");
}

/* Without a rate there is no budget: use is counted, nothing is ever held. */
static void test_budget_unlimited_counts_only(void **state)
{
	struct bm_budget_cfg c = { 0 };
	int d;

	(void)state;
	bm_budget_init(&b, &c, 0, T0);
	assert_true(b.cfg.weight == 1); /* no weight: everyone's */
	for (d = 0; d < BM_BUD__MAX; d++) {
		assert_false(bm_budget_limited(&b, d));
		bm_budget_charge(&b, d, 1e12, T0);
		assert_true(b.b[d].used == 1e12);
		assert_true(b.b[d].level == 0);
		assert_false(b.b[d].exhausted);
	}
	assert_int_equal(bm_budget_over(&b, T0), -1);
	assert_int_equal(bm_budget_admit(&b, T0, &d), 0);
	/* nothing negative or NaN is charged */
	bm_budget_charge(&b, BM_BUD_CPU, -5, T0);
	bm_budget_charge(&b, BM_BUD_CPU, NAN, T0);
	assert_true(b.b[BM_BUD_CPU].used == 1e12);
}

/* Recent use halves every half-life: 10 s for fairness, 1 s for pressure. */
static void test_budget_recent_use_decays(void **state)
{
	(void)state;
	cpu_budget(0, 0);
	bm_budget_charge(&b, BM_BUD_CPU, 8, T0);
	bm_budget_advance(&b, T0 + 1 * S);
	assert_true(fabs(b.fast[BM_BUD_CPU] - 4) < 1e-12);
	bm_budget_advance(&b, T0 + 10 * S);
	assert_true(fabs(b.slow[BM_BUD_CPU] - 4) < 1e-12);
	bm_budget_advance(&b, T0 + 20 * S);
	assert_true(fabs(b.slow[BM_BUD_CPU] - 2) < 1e-12);
	/* a steady rate r sums to r x half-life / ln 2, and reads back as r */
	cpu_budget(0, 0);
	for (uint64_t t = T0; t <= T0 + 200 * S; t += 10 * MS)
		bm_budget_charge(&b, BM_BUD_CPU, 0.5 * 0.01, t);
	assert_true(fabs(bm_budget_rate_slow(&b, BM_BUD_CPU, T0 + 200 * S) - 0.5) < 0.01);
	assert_true(fabs(bm_budget_rate_fast(&b, BM_BUD_CPU, T0 + 200 * S) - 0.5) < 0.01);
}

static void test_budget_names(void **state)
{
	int d;

	(void)state;
	for (d = 0; d < BM_BUD__MAX; d++)
		assert_int_equal(bm_budget_parse(bm_budget_name(d)), d);
	assert_int_equal(bm_budget_parse("cpu"), -1);
	assert_int_equal(bm_budget_parse(NULL), -1);
	assert_string_equal(bm_budget_name(BM_BUD_CPU), "cpu_seconds");
	assert_string_equal(bm_budget_name(BM_BUD__MAX), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_budget_refills_to_its_burst),
		cmocka_unit_test(test_budget_exhausts_then_frees_at_its_margin),
		cmocka_unit_test(test_budget_retry_from_the_bucket),
		cmocka_unit_test(test_budget_launches_by_whole_tokens),
		cmocka_unit_test(test_budget_admit_names_the_budget),
		cmocka_unit_test(test_budget_unlimited_counts_only),
		cmocka_unit_test(test_budget_recent_use_decays),
		cmocka_unit_test(test_budget_names),
	};

	return cmocka_run_group_tests_name("budget", tests, NULL, NULL);
}
