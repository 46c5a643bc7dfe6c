// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/effect/expect.h and trace.h: a declaration widens a soft level up to
 * it and no further (never past the hard level, never where there is none,
 * never where the policy says not to), and a traceparent is the W3C form
 * and reaches the command's environment once.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "effect/expect.h"
#include "effect/policy_yaml.h"
#include "effect/trace.h"

#define MIB (1024ULL * 1024)

static void load(const char *yaml, struct bm_policy *p)
{
	char err[512];

	if (bm_policy_load(yaml, strlen(yaml), "test.yaml", "acme", "pytest", p, err, sizeof(err)))
		fail_msg("%s", err);
}

static void test_expect_widens_soft_up_to_the_declaration(void **state)
{
	struct bm_expect x = { BM_X_BIT(BM_X_MEM) | BM_X_BIT(BM_X_CPU) | BM_X_BIT(BM_X_PIDS) |
			       BM_X_BIT(BM_X_NET_RATE) | BM_X_BIT(BM_X_WALL),
			       { [BM_X_MEM] = 700 * MIB, [BM_X_CPU] = 1000, [BM_X_PIDS] = 400,
				 [BM_X_NET_RATE] = 10 * MIB, [BM_X_WALL] = 5000000000ULL } };
	struct bm_policy p;

	load("defaults:\n"
	     "  memory: { soft: 512M, hard: 1G, steps: [freeze] }\n"
	     "  cpu: { soft: 1.5, steps: [throttle] }\n"
	     "  pids: { soft: 64, hard: 256, steps: [freeze] }\n"
	     "  net: { hard: 100M, steps: [kill] }\n", &p);
	assert_true(p.expect_widens);
	bm_expect_widen(&x, &p);
	/* up to what was declared */
	assert_true(p.dim[BM_P_MEM].soft == 700.0 * MIB);
	assert_true(p.dim[BM_P_MEM].hard == 1024.0 * MIB);
	/* a declaration under the soft level leaves it: it narrows nothing */
	assert_true(p.dim[BM_P_CPU].soft == 1.5);
	/* never past the wall: 400 declared, the hard level is 256 */
	assert_true(p.dim[BM_P_PIDS].soft == 256);
	assert_true(p.dim[BM_P_PIDS].hard == 256);
	/* no soft level: none is made */
	assert_true(p.dim[BM_P_NET].soft == 0);
	assert_int_equal(bm_policy_check(&p, &(const char *){ NULL }), 0);
	/* NULL and nothing declared change nothing */
	load("defaults:\n  memory: { soft: 512M }\n", &p);
	bm_expect_widen(NULL, &p);
	x.set = 0;
	bm_expect_widen(&x, &p);
	assert_true(p.dim[BM_P_MEM].soft == 512.0 * MIB);
}

static void test_expect_widening_is_the_policys_to_refuse(void **state)
{
	struct bm_expect x = { BM_X_BIT(BM_X_MEM), { [BM_X_MEM] = 700 * MIB } };
	struct bm_policy p;
	char err[512];

	load("expect_widens_soft: false\ndefaults:\n  memory: { soft: 512M, steps: [freeze] }\n", &p);
	assert_false(p.expect_widens);
	bm_expect_widen(&x, &p);
	assert_true(p.dim[BM_P_MEM].soft == 512.0 * MIB);
	assert_int_equal(bm_policy_load("expect_widens_soft: maybe\n", 26, "p.yaml", "a", "b", &p, err,
					sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "p.yaml:1:"));
	assert_non_null(strstr(err, "expected true or false"));
}

static void test_expect_keys_and_units(void **state)
{
	struct bm_expect x = { 0, { [BM_X_CPU] = 1500, [BM_X_WALL] = 2500000000ULL,
				    [BM_X_MEM] = 3 } };

	assert_string_equal(bm_expect_key(BM_X_CPU), "cpu_cores");
	assert_string_equal(bm_expect_key(BM_X_NET_BYTES), "net_tx_bytes");
	assert_true(bm_expect_value(&x, BM_X_CPU) == 1.5);
	assert_true(bm_expect_value(&x, BM_X_WALL) == 2.5);
	assert_true(bm_expect_value(&x, BM_X_MEM) == 3);
	assert_int_equal(bm_expect_pdim(BM_X_NET_RATE), BM_P_NET);
	assert_int_equal(bm_expect_pdim(BM_X_WALL), BM_P__MAX);
}

static void test_traceparent_format(void **state)
{
	static const char *const good[] = {
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
		"cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-abcdef-0123",
	};
	static const char *const bad[] = {
		"", "00", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
		"00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902B7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902g7-01",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
		"cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09x",
		"cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-UP",
	};
	const char *why;
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (bm_traceparent_check(good[i], &why))
			fail_msg("%s refused: %s", good[i], why);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (!bm_traceparent_check(bad[i], &why))
			fail_msg("%s accepted", bad[i]);
		assert_non_null(why);
	}
}

static void test_trace_env_replaces_or_adds(void **state)
{
	static const char tp[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
	char *env[] = { "PATH=/bin", "TRACEPARENT=old", "HOME=/", NULL };
	char **v = bm_trace_env(env, tp);

	assert_non_null(v);
	assert_string_equal(v[0], "PATH=/bin");
	assert_string_equal(v[1], "HOME=/");
	assert_string_equal(v[2], "TRACEPARENT=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
	assert_null(v[3]);
	free(v);
	v = bm_trace_env(NULL, tp);
	assert_non_null(v);
	assert_int_equal(strncmp(v[0], "TRACEPARENT=00-", 15), 0);
	assert_null(v[1]);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_expect_widens_soft_up_to_the_declaration),
		cmocka_unit_test(test_expect_widening_is_the_policys_to_refuse),
		cmocka_unit_test(test_expect_keys_and_units),
		cmocka_unit_test(test_traceparent_format),
		cmocka_unit_test(test_trace_env_replaces_or_adds),
	};

	return cmocka_run_group_tests_name("expect", tests, NULL, NULL);
}
