// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The ladder (user/effect/policy.c) driven by synthetic samples and an explicit
 * clock: hysteresis, cool-down, escalation, thaw, ceilings and timers.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "effect/policy.h"

#define MS 1000000ULL

struct fixture {
	struct bm_policy p;
	struct bm_ladder l;
	struct bm_sample s;
	struct bm_verdict v;
};

static struct fixture f;

static int setup(void **state)
{
	memset(&f, 0, sizeof(f));
	bm_policy_default(&f.p);
	f.p.cooldown_ms = 100;
	f.p.freeze_timeout_ms = 1000;
	f.p.cancel_grace_ms = 300;
	bm_ladder_init(&f.l);
	*state = &f;
	return 0;
}

/* One step at t ms with dimension d at value x (others at 0). */
static int step(enum bm_pdim d, double x, uint64_t t_ms)
{
	memset(&f.s, 0, sizeof(f.s));
	f.s.value[d] = x;
	return bm_policy_step(&f.p, &f.l, &f.s, 1000 * MS + t_ms * MS, &f.v);
}

static void test_ladder_observes_below_soft(void **state)
{
	f.p.dim[BM_P_CPU] = (struct bm_dim_rule){ .soft = 1, .hard = 2, .steps = BM_STEPS_ALL };
	assert_int_equal(step(BM_P_CPU, 0.9, 0), 0);
	assert_int_equal(step(BM_P_CPU, 0.99, 500), 0);
	assert_int_equal(f.l.step, BM_STEP_OBSERVE);
}

static void test_ladder_soft_needs_hold(void **state)
{
	f.p.dim[BM_P_CPU] = (struct bm_dim_rule){ .soft = 1, .hold_ms = 200, .steps = BM_STEPS_ALL };
	assert_int_equal(step(BM_P_CPU, 1.5, 0), 0);
	assert_int_equal(step(BM_P_CPU, 1.5, 199), 0);
	assert_int_equal(step(BM_P_CPU, 1.5, 200), 1);
	assert_int_equal(f.v.a[0].act, BM_ACT_THROTTLE);
	assert_int_equal(f.v.a[0].dim, BM_P_CPU);
	assert_true(f.v.a[0].observed == 1.5);
	assert_true(f.v.a[0].threshold == 1);
}

static void test_ladder_dip_resets_hold(void **state)
{
	f.p.dim[BM_P_NET] = (struct bm_dim_rule){ .soft = 100, .hold_ms = 200, .steps = BM_STEPS_ALL };
	step(BM_P_NET, 150, 0);
	step(BM_P_NET, 50, 150);	/* back under: the hold starts over */
	assert_int_equal(step(BM_P_NET, 150, 200), 0);
	assert_int_equal(step(BM_P_NET, 150, 399), 0);
	assert_int_equal(step(BM_P_NET, 150, 400), 1);
}

static void test_ladder_hard_skips_throttle(void **state)
{
	f.p.dim[BM_P_MEM] = (struct bm_dim_rule){ .soft = 100, .hard = 200, .steps = BM_STEPS_ALL };
	assert_int_equal(step(BM_P_MEM, 250, 0), 1);
	assert_int_equal(f.v.a[0].act, BM_ACT_FREEZE);
	assert_true(f.v.a[0].threshold == 200);
}

static void test_ladder_hard_without_freeze_throttles(void **state)
{
	f.p.dim[BM_P_CPU] = (struct bm_dim_rule){ .hard = 2, .steps = BM_STEP_BIT(BM_STEP_THROTTLE) };
	assert_int_equal(step(BM_P_CPU, 2.5, 0), 1);
	assert_int_equal(f.v.a[0].act, BM_ACT_THROTTLE);
	/* nothing above throttle is allowed: it stays there however long it lasts */
	assert_int_equal(step(BM_P_CPU, 2.5, 5000), 0);
	assert_int_equal(f.l.step, BM_STEP_THROTTLE);
}

static void test_ladder_cooldown_spaces_actions(void **state)
{
	f.p.dim[BM_P_CPU] = (struct bm_dim_rule){ .soft = 1, .steps = BM_STEP_BIT(BM_STEP_THROTTLE) |
								 BM_STEP_BIT(BM_STEP_FREEZE) };
	f.p.dim[BM_P_NET] = (struct bm_dim_rule){ .soft = 1, .steps = BM_STEPS_ALL };
	assert_int_equal(step(BM_P_CPU, 2, 0), 1);	/* throttle */
	memset(&f.s, 0, sizeof(f.s));
	f.s.value[BM_P_CPU] = 2;
	f.s.value[BM_P_NET] = 2;
	/* a second dimension over soft within the cool-down: one burst, one action */
	assert_int_equal(bm_policy_step(&f.p, &f.l, &f.s, 1000 * MS + 50 * MS, &f.v), 0);
	assert_int_equal(bm_policy_step(&f.p, &f.l, &f.s, 1000 * MS + 100 * MS, &f.v), 1);
	assert_int_equal(f.v.a[0].act, BM_ACT_FREEZE);
}

static void test_ladder_freeze_thaws_when_calm(void **state)
{
	f.p.dim[BM_P_CPU] = (struct bm_dim_rule){ .soft = 1, .hard = 2, .steps = BM_STEPS_ALL };
	assert_int_equal(step(BM_P_CPU, 3, 0), 1);
	assert_int_equal(f.l.step, BM_STEP_FREEZE);
	assert_int_equal(step(BM_P_CPU, 0, 10), 0);	/* calm starts */
	assert_int_equal(step(BM_P_CPU, 0, 109), 0);
	assert_int_equal(step(BM_P_CPU, 0, 110), 1);	/* calm for a cool-down */
	assert_int_equal(f.v.a[0].act, BM_ACT_THAW);
	assert_int_equal(f.l.step, BM_STEP_OBSERVE);
}

static void test_ladder_thaw_returns_to_throttle(void **state)
{
	f.p.dim[BM_P_CPU] = (struct bm_dim_rule){ .soft = 1, .hard = 2, .steps = BM_STEPS_ALL };
	step(BM_P_CPU, 1.5, 0);				/* throttle */
	step(BM_P_CPU, 3, 100);				/* freeze, after the cool-down */
	assert_int_equal(f.l.step, BM_STEP_FREEZE);
	step(BM_P_CPU, 0, 110);
	assert_int_equal(step(BM_P_CPU, 0, 210), 1);
	assert_int_equal(f.v.a[0].act, BM_ACT_THAW);
	assert_int_equal(f.l.step, BM_STEP_THROTTLE);
	/* and the throttle lifts after another calm cool-down */
	assert_int_equal(step(BM_P_CPU, 0, 310), 1);
	assert_int_equal(f.v.a[0].act, BM_ACT_UNTHROTTLE);
	assert_int_equal(f.l.step, BM_STEP_OBSERVE);
}

static void test_ladder_freeze_escalates_at_timeout(void **state)
{
	f.p.dim[BM_P_MEM] = (struct bm_dim_rule){ .hard = 100, .steps = BM_STEPS_ALL };
	assert_int_equal(step(BM_P_MEM, 150, 0), 1);
	/* still over while frozen: no earlier escalation, whatever the cool-down */
	assert_int_equal(step(BM_P_MEM, 150, 500), 0);
	assert_int_equal(step(BM_P_MEM, 150, 999), 0);
	assert_int_equal(step(BM_P_MEM, 150, 1000), 2);
	assert_int_equal(f.v.a[0].act, BM_ACT_THAW);	/* SIGTERM needs a running task */
	assert_int_equal(f.v.a[1].act, BM_ACT_CANCEL);
	assert_int_equal(step(BM_P_MEM, 150, 1299), 0);
	assert_int_equal(step(BM_P_MEM, 150, 1300), 1);
	assert_int_equal(f.v.a[0].act, BM_ACT_KILL);
	/* after a kill the ladder has nothing more to say */
	assert_int_equal(step(BM_P_MEM, 150, 5000), 0);
}

static void test_ladder_freeze_escalates_to_kill_without_cancel(void **state)
{
	f.p.dim[BM_P_NET] = (struct bm_dim_rule){ .hard = 10, .steps = BM_STEP_BIT(BM_STEP_FREEZE) |
								BM_STEP_BIT(BM_STEP_KILL) };
	step(BM_P_NET, 20, 0);
	assert_int_equal(step(BM_P_NET, 20, 1000), 1);
	assert_int_equal(f.v.a[0].act, BM_ACT_KILL);
}

static void test_ladder_ceiling_kills_at_once(void **state)
{
	bm_policy_ceilings(&f.p, 0, 128.0 * 1024 * 1024, 32);
	/* reaching a ceiling is allowed, passing it is not */
	assert_int_equal(step(BM_P_PIDS, 32, 0), 0);
	assert_int_equal(step(BM_P_PIDS, 33, 1), 1);
	assert_int_equal(f.v.a[0].act, BM_ACT_KILL);
	assert_int_equal(f.v.a[0].dim, BM_P_PIDS);
	assert_string_equal(bm_pdim_reason(f.v.a[0].dim), "pids_ceiling");
}

static void test_ladder_ceiling_breach_by_controller(void **state)
{
	bm_policy_ceilings(&f.p, 0, 0, 32);
	memset(&f.s, 0, sizeof(f.s));
	f.s.value[BM_P_PIDS] = 32;
	f.s.breach[BM_P_PIDS] = true;	/* pids.max refused a fork */
	assert_int_equal(bm_policy_step(&f.p, &f.l, &f.s, 1000 * MS, &f.v), 1);
	assert_int_equal(f.v.a[0].act, BM_ACT_KILL);
}

static void test_ladder_ceiling_ignores_cooldown(void **state)
{
	f.p.dim[BM_P_CPU] = (struct bm_dim_rule){ .soft = 1, .steps = BM_STEPS_ALL };
	bm_policy_ceilings(&f.p, 0, 100, 0);
	step(BM_P_CPU, 2, 0);	/* throttle: the cool-down starts */
	memset(&f.s, 0, sizeof(f.s));
	f.s.value[BM_P_MEM] = 101;
	assert_int_equal(bm_policy_step(&f.p, &f.l, &f.s, 1000 * MS + 1 * MS, &f.v), 1);
	assert_int_equal(f.v.a[0].act, BM_ACT_KILL);
	assert_int_equal(f.v.a[0].dim, BM_P_MEM);
}

static void test_ladder_cpu_ceiling_only_throttles(void **state)
{
	bm_policy_ceilings(&f.p, 1.5, 0, 0);
	assert_int_equal(step(BM_P_CPU, 1.9, 0), 1);
	assert_int_equal(f.v.a[0].act, BM_ACT_THROTTLE);
	assert_int_equal(step(BM_P_CPU, 1.9, 10000), 0);
}

static void test_ladder_gone_does_nothing(void **state)
{
	bm_policy_ceilings(&f.p, 0, 100, 0);
	memset(&f.s, 0, sizeof(f.s));
	f.s.value[BM_P_MEM] = 1000;
	f.s.gone = true;
	assert_int_equal(bm_policy_step(&f.p, &f.l, &f.s, 1000 * MS, &f.v), 0);
}

static void test_ladder_next_deadline(void **state)
{
	f.p.dim[BM_P_CPU] = (struct bm_dim_rule){ .soft = 1, .hard = 2, .hold_ms = 300, .steps = BM_STEPS_ALL };
	assert_int_equal(bm_policy_next_deadline(&f.p, &f.l), UINT64_MAX);
	step(BM_P_CPU, 1.5, 0);
	assert_int_equal(bm_policy_next_deadline(&f.p, &f.l), 1000 * MS + 300 * MS);
	step(BM_P_CPU, 3, 10);	/* hard: freeze */
	assert_int_equal(bm_policy_next_deadline(&f.p, &f.l), 1000 * MS + 10 * MS + 1000 * MS);
}

static void test_policy_check(void **state)
{
	const char *why = NULL;

	assert_int_equal(bm_policy_check(&f.p, &why), 0);
	f.p.dim[BM_P_CPU].soft = 3;
	f.p.dim[BM_P_CPU].hard = 2;
	assert_int_equal(bm_policy_check(&f.p, &why), -EINVAL);
	assert_non_null(why);
	f.p.dim[BM_P_CPU].soft = 1;
	f.p.freeze_timeout_ms = 0;
	assert_int_equal(bm_policy_check(&f.p, &why), -EINVAL);
}

static void test_policy_names(void **state)
{
	assert_string_equal(bm_act_name(BM_ACT_FREEZE), "freeze");
	assert_string_equal(bm_act_name(BM_ACT_KILL), "kill");
	assert_string_equal(bm_pdim_reason(BM_P_MEM), "memory_ceiling");
	assert_string_equal(bm_pdim_reason(BM_P_NET), "net_ceiling");
	assert_string_equal(bm_pdim_reason(BM_P_CPU), "cpu_ceiling");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_ladder_observes_below_soft, setup),
		cmocka_unit_test_setup(test_ladder_soft_needs_hold, setup),
		cmocka_unit_test_setup(test_ladder_dip_resets_hold, setup),
		cmocka_unit_test_setup(test_ladder_hard_skips_throttle, setup),
		cmocka_unit_test_setup(test_ladder_hard_without_freeze_throttles, setup),
		cmocka_unit_test_setup(test_ladder_cooldown_spaces_actions, setup),
		cmocka_unit_test_setup(test_ladder_freeze_thaws_when_calm, setup),
		cmocka_unit_test_setup(test_ladder_thaw_returns_to_throttle, setup),
		cmocka_unit_test_setup(test_ladder_freeze_escalates_at_timeout, setup),
		cmocka_unit_test_setup(test_ladder_freeze_escalates_to_kill_without_cancel, setup),
		cmocka_unit_test_setup(test_ladder_ceiling_kills_at_once, setup),
		cmocka_unit_test_setup(test_ladder_ceiling_breach_by_controller, setup),
		cmocka_unit_test_setup(test_ladder_ceiling_ignores_cooldown, setup),
		cmocka_unit_test_setup(test_ladder_cpu_ceiling_only_throttles, setup),
		cmocka_unit_test_setup(test_ladder_gone_does_nothing, setup),
		cmocka_unit_test_setup(test_ladder_next_deadline, setup),
		cmocka_unit_test_setup(test_policy_check, setup),
		cmocka_unit_test_setup(test_policy_names, setup),
	};

	return cmocka_run_group_tests_name("policy", tests, NULL, NULL);
}
