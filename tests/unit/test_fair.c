// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/agent/fair.c, fair admission's choice as a pure function: the
 * tenant with the smallest tag (recent use plus what it runs, over its
 * weight) starts first; within a tenant, priority then order; a tenant's
 * own priority does not jump another's smaller tag; held tenants wait; and
 * with equal use, starts take turns. Fair CPU's share and its hysteresis.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "agent/fair.h"

#define ITEM(t, p, s) ((struct bm_fair_item){ (t), (p), (s) })

/* A quiet tenant's call starts before a bursting one's, though it came later. */
static void test_fair_quiet_before_bursting(void **state)
{
	struct bm_fair_tenant t[2] = { { .usage = 5, .weight = 1 }, { .usage = 0.1, .weight = 1 } };
	struct bm_fair_item v[] = { ITEM(0, 5, 1), ITEM(0, 5, 2), ITEM(1, 5, 3) };

	(void)state;
	assert_int_equal(bm_fair_pick(v, 3, t), 2);
}

/* Use is weighed against the share: 2 node-s at weight 4 is less than 1 at weight 1. */
static void test_fair_weights(void **state)
{
	struct bm_fair_tenant t[2] = { { .usage = 2, .weight = 4 }, { .usage = 1, .weight = 1 } };
	struct bm_fair_item v[] = { ITEM(1, 5, 1), ITEM(0, 5, 2) };

	(void)state;
	assert_true(bm_fair_tag(&t[0]) == 0.5);
	assert_true(bm_fair_tag(&t[1]) == 1);
	assert_int_equal(bm_fair_pick(v, 2, t), 1);
	/* no weight counts as 1 */
	t[1].weight = 0;
	assert_true(bm_fair_tag(&t[1]) == 1);
}

/* Within a tenant: priority first, then submission order. */
static void test_fair_priority_within_a_tenant(void **state)
{
	struct bm_fair_tenant t[1] = { { .usage = 3, .weight = 1 } };
	struct bm_fair_item v[] = { ITEM(0, 3, 1), ITEM(0, 8, 4), ITEM(0, 8, 2), ITEM(0, 1, 0) };

	(void)state;
	assert_int_equal(bm_fair_pick(v, 4, t), 2);
}

/* Across tenants priority is self-assigned: it breaks a tie of tags, never jumps a smaller one. */
static void test_fair_priority_does_not_jump_the_share(void **state)
{
	struct bm_fair_tenant t[2] = { { .usage = 1, .weight = 1 }, { .usage = 0, .weight = 1 } };
	struct bm_fair_item v[] = { ITEM(0, 10, 1), ITEM(1, 1, 2) };

	(void)state;
	assert_int_equal(bm_fair_pick(v, 2, t), 1);
	/* equal tags: the higher priority, then the earlier one */
	t[0].usage = 0;
	assert_int_equal(bm_fair_pick(v, 2, t), 0);
	v[0].priority = 1;
	assert_int_equal(bm_fair_pick(v, 2, t), 0);
	v[0].seq = 3;
	assert_int_equal(bm_fair_pick(v, 2, t), 1);
}

/* Held tenants (a budget, pressure, their max running) wait; nobody left: -1. */
static void test_fair_held_wait(void **state)
{
	struct bm_fair_tenant t[2] = { { .usage = 0, .weight = 1, .held = true },
				       { .usage = 9, .weight = 1 } };
	struct bm_fair_item v[] = { ITEM(0, 10, 1), ITEM(1, 1, 2) };

	(void)state;
	assert_int_equal(bm_fair_pick(v, 2, t), 1);
	t[1].held = true;
	assert_int_equal(bm_fair_pick(v, 2, t), -1);
	assert_int_equal(bm_fair_pick(v, 0, t), -1);
}

/*
 * No use yet on either side: what each already runs decides, so starts
 * alternate instead of the first tenant taking every free slot.
 */
static void test_fair_starts_take_turns(void **state)
{
	struct bm_fair_tenant t[2] = { { .weight = 1 }, { .weight = 1 } };
	struct bm_fair_item v[8];
	unsigned int n = 8, i, last = 2;
	long k;

	(void)state;
	for (i = 0; i < 4; i++) {
		v[i] = ITEM(0, 5, i); /* tenant 0 submitted first, all four */
		v[4 + i] = ITEM(1, 5, 4 + i);
	}
	for (i = 0; i < 8; i++) {
		k = bm_fair_pick(v, n, t);
		assert_true(k >= 0);
		assert_true(v[k].tenant != last);
		last = v[k].tenant;
		t[last].running++;
		v[k] = v[--n];
	}
	assert_int_equal(t[0].running, 4);
	assert_int_equal(t[1].running, 4);
}

/*
 * Three tenants, one bursting: every time a slot frees, the steady ones'
 * calls go first while the burster's use is above theirs, though it has
 * ten calls waiting from before theirs.
 */
static void test_fair_three_tenants(void **state)
{
	struct bm_fair_tenant t[3] = { { .usage = 20, .weight = 1 },
				       { .usage = 0.5, .weight = 1 },
				       { .usage = 0.8, .weight = 1 } };
	struct bm_fair_item v[12];
	unsigned int n = 0, i;
	long k;

	(void)state;
	for (i = 0; i < 10; i++)
		v[n++] = ITEM(0, 10, i);
	v[n++] = ITEM(1, 5, 100);
	v[n++] = ITEM(2, 5, 101);
	k = bm_fair_pick(v, n, t);
	assert_int_equal(v[k].tenant, 1);
	v[k] = v[--n];
	t[1].running++;
	k = bm_fair_pick(v, n, t);
	assert_int_equal(v[k].tenant, 2);
	v[k] = v[--n];
	/* only then the burster's, the first it submitted */
	k = bm_fair_pick(v, n, t);
	assert_int_equal(v[k].tenant, 0);
	assert_int_equal(v[k].seq, 0);
}

/* Fair CPU: the weights of the tenants there share the CPUs; alone, nothing to be over. */
static void test_fair_cpu_share(void **state)
{
	(void)state;
	assert_true(bm_fair_cpu_share(2, 1, true, 1, 1) == 0);
	assert_true(bm_fair_cpu_share(2, 1, false, 0, 0) == 0);
	assert_true(bm_fair_cpu_share(2, 1, true, 2, 2) == 1);
	assert_true(bm_fair_cpu_share(3, 2, true, 3, 2) == 2);
	assert_true(bm_fair_cpu_share(3, 1, true, 3, 2) == 1);
	/* one not there yet (a tenant's view before it runs): its share were it to come */
	assert_true(bm_fair_cpu_share(2, 1, false, 1, 1) == 1);
	assert_true(bm_fair_cpu_share(4, 1, false, 3, 3) == 1);
}

/* Over 1.2 x its share it yields, and goes on yielding until under the share / 1.2. */
static void test_fair_over_share_hysteresis(void **state)
{
	(void)state;
	assert_false(bm_fair_over_share(1.15, 1, false));
	assert_true(bm_fair_over_share(1.25, 1, false));
	assert_true(bm_fair_over_share(1.0, 1, true));
	assert_true(bm_fair_over_share(0.85, 1, true));
	assert_false(bm_fair_over_share(0.8, 1, true));
	assert_false(bm_fair_over_share(5, 0, false));
	assert_false(bm_fair_over_share(5, 0, true));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fair_quiet_before_bursting),
		cmocka_unit_test(test_fair_weights),
		cmocka_unit_test(test_fair_priority_within_a_tenant),
		cmocka_unit_test(test_fair_priority_does_not_jump_the_share),
		cmocka_unit_test(test_fair_held_wait),
		cmocka_unit_test(test_fair_starts_take_turns),
		cmocka_unit_test(test_fair_three_tenants),
		cmocka_unit_test(test_fair_cpu_share),
		cmocka_unit_test(test_fair_over_share_hysteresis),
	};

	return cmocka_run_group_tests_name("fair", tests, NULL, NULL);
}
