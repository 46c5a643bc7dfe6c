// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/agent/index.c: the agent's effects by (tenant, id), by admission
 * number, by shim and by cgroup id, held to a plain scan. Deletion shifts entries back
 * (no tombstones), the part that is easy to get wrong: thousands of
 * effects come and go in a shuffled order, and after every step each one
 * is found by all four keys exactly while it is in, and never after.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agent/index.h"

#define N 3000

static struct bm_cgroup cgs[N];

static struct ag_effect *make(unsigned int i)
{
	struct ag_effect *e = calloc(1, sizeof(*e));

	assert_non_null(e);
	/* cgroup ids as the kernel hands them out: close together */
	cgs[i].id = 70000 + i;
	e->sup.cg = &cgs[i];
	/* three tenants, ids that share prefixes and lengths */
	snprintf(e->tenant, sizeof(e->tenant), "t%u", i % 3);
	snprintf(e->req.id, sizeof(e->req.id), "eff-%u", i / 3);
	e->seq = 1000 + i;
	return e;
}

static void check(struct bm_agent *a, struct ag_effect **eff, const bool *in)
{
	unsigned int i;

	for (i = 0; i < N; i++) {
		struct ag_effect *want = in[i] ? eff[i] : NULL;

		assert_ptr_equal(ag_find(a, eff[i]->tenant, eff[i]->req.id), want);
		assert_ptr_equal(ag_find_seq(a, eff[i]->seq), want);
		assert_ptr_equal(ag_find_shim(a, 500000 + i), want);
		assert_ptr_equal(ag_find_cg(a, 70000 + i), want);
	}
	assert_null(ag_find_cg(a, 69999));
	assert_null(ag_find(a, "t0", "eff-999999"));
	assert_null(ag_find_shim(a, 0));
}

static void test_agent_index_follows_adds_and_deletes(void **state)
{
	static struct ag_effect *eff[N];
	static unsigned int order[N];
	static bool in[N];
	struct bm_agent *a = calloc(1, sizeof(*a));
	unsigned int i, j, k, round;

	(void)state;
	assert_non_null(a);
	srand(7);
	for (i = 0; i < N; i++) {
		eff[i] = make(i);
		order[i] = i;
	}
	for (round = 0; round < 3; round++) {
		/* in, shuffled */
		for (i = N - 1; i > 0; i--) {
			j = (unsigned int)rand() % (i + 1);
			k = order[i];
			order[i] = order[j];
			order[j] = k;
		}
		for (i = 0; i < N; i++) {
			k = order[i];
			if (in[k])
				continue;
			assert_int_equal(ag_index_reserve(a), 0);
			assert_int_equal(ag_index_add(a, eff[k]), 0);
			ag_set_shim_id(a, eff[k], 500000 + k);
			ag_set_cg(a, eff[k]);
			in[k] = true;
		}
		check(a, eff, in);
		/* two thirds out, in another order, checked as they go */
		for (i = 0; i < N; i++) {
			k = order[(i * 7919) % N];
			if (!in[k] || k % 3 == round)
				continue;
			ag_index_del(a, eff[k]);
			eff[k]->shim_id = 0;
			in[k] = false;
			if (i % 500 == 0)
				check(a, eff, in);
		}
		check(a, eff, in);
		assert_int_equal(a->by_name.n, a->by_seq.n);
		assert_int_equal(a->by_name.n, a->by_cg.n);
		assert_true(a->by_name.n * 2 <= a->by_name.cap);
	}
	ag_index_free(a);
	for (i = 0; i < N; i++)
		free(eff[i]);
	free(a);
}

/*
 * The timer heap: effects whose due times move (up, down, away) in a
 * random order come off it earliest first, and one without a due time is
 * not on it.
 */
static void test_agent_timer_heap_orders_moving_dues(void **state)
{
	static struct ag_effect *eff[N];
	struct bm_agent *a = calloc(1, sizeof(*a));
	struct ag_effect *e;
	uint64_t last = 0, n_due = 0;
	unsigned int i, round;

	(void)state;
	assert_non_null(a);
	srand(11);
	for (i = 0; i < N; i++) {
		eff[i] = make(i);
		eff[i]->agent = a;
		eff[i]->sup.timer_at = eff[i]->sup.deadline_at = UINT64_MAX;
	}
	for (round = 0; round < 4; round++) {
		for (i = 0; i < N; i++) {
			e = eff[(i * 7919 + round) % N];
			/* a third without timers, the rest by the ladder, the deadline, or both */
			e->sup.timer_at = rand() % 3 ? 1000 + (uint64_t)(rand() % 100000) : UINT64_MAX;
			e->sup.deadline_at = rand() % 2 ? 1000 + (uint64_t)(rand() % 100000) : UINT64_MAX;
			ag_timers_moved(e);
		}
	}
	for (i = 0; i < N; i++)
		n_due += ag_due(eff[i]) != UINT64_MAX;
	assert_int_equal(a->heap.n, n_due);
	for (i = 0; (e = ag_heap_top(a)); i++) {
		assert_true(ag_due(e) >= last && ag_due(e) != UINT64_MAX);
		last = ag_due(e);
		ag_heap_pop(a);
		assert_int_equal(e->heap_i, 0);
	}
	assert_int_equal(i, n_due);
	ag_index_free(a);
	for (i = 0; i < N; i++)
		free(eff[i]);
	free(a);
}

/* Started effects per tenant: counted up and down, never below zero. */
static void test_agent_tenant_counts(void **state)
{
	struct bm_agent *a = calloc(1, sizeof(*a));

	(void)state;
	assert_non_null(a);
	assert_int_equal(ag_tenant_count(a, "acme", 0), 0);
	assert_int_equal(ag_tenant_count(a, "acme", 1), 1);
	assert_int_equal(ag_tenant_count(a, "acme", 1), 2);
	assert_int_equal(ag_tenant_count(a, "globex", 1), 1);
	assert_int_equal(ag_tenant_count(a, "acme", -1), 1);
	assert_int_equal(ag_tenant_count(a, "globex", -1), 0);
	assert_int_equal(ag_tenant_count(a, "globex", -1), 0);
	assert_int_equal(ag_tenant_count(a, "nobody", -1), 0);
	assert_int_equal(a->n_tenants, 2);
	ag_index_free(a);
	free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_agent_index_follows_adds_and_deletes),
		cmocka_unit_test(test_agent_timer_heap_orders_moving_dues),
		cmocka_unit_test(test_agent_tenant_counts),
	};

	return cmocka_run_group_tests_name("agent_index", tests, NULL, NULL);
}
