// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/effect/cpuplace.c: how many CPUs a ceiling needs, which ones it
 * gets (the least held, the highest on a tie), giving them back, and the
 * kernel's cpu-list form both ways.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "effect/cpuplace.h"

static cpu_set_t cpus(const char *list)
{
	cpu_set_t s;

	assert_int_equal(bm_cpulist_parse(list, &s), 0);
	return s;
}

static const char *fmt(const cpu_set_t *s)
{
	static char buf[256];

	assert_int_equal(bm_cpulist_format(s, buf, sizeof(buf)), 0);
	return buf;
}

static void test_cpuplace_confines_fewer_than_all(void **state)
{
	cpu_set_t four = cpus("0-3");
	unsigned int k = 0;

	assert_true(bm_cpuplace_confines(0.1, &four, &k));
	assert_int_equal(k, 1);
	assert_true(bm_cpuplace_confines(1.0, &four, &k));
	assert_int_equal(k, 1);
	assert_true(bm_cpuplace_confines(1.5, &four, &k));
	assert_int_equal(k, 2);
	assert_true(bm_cpuplace_confines(3.0, &four, &k));
	assert_int_equal(k, 3);
	/* all of them, more, or no ceiling: nothing to confine */
	assert_false(bm_cpuplace_confines(3.5, &four, &k));
	assert_false(bm_cpuplace_confines(8, &four, &k));
	assert_false(bm_cpuplace_confines(0, &four, &k));
}

static void test_cpuplace_spreads_highest_first(void **state)
{
	cpu_set_t allowed = cpus("0-3"), a, b, c, d;

	bm_cpuplace_pick(&allowed, 1, &a);
	assert_string_equal(fmt(&a), "3");
	bm_cpuplace_pick(&allowed, 2, &b);
	assert_string_equal(fmt(&b), "1-2");
	bm_cpuplace_pick(&allowed, 1, &c);
	assert_string_equal(fmt(&c), "0");
	/* every CPU holds one: the highest again */
	bm_cpuplace_pick(&allowed, 1, &d);
	assert_string_equal(fmt(&d), "3");
	assert_int_equal(bm_cpuplace_load(3), 2);
	/* given back, 1 and 2 are the least held */
	bm_cpuplace_put(&b);
	bm_cpuplace_put(&d);
	assert_int_equal(bm_cpuplace_load(3), 1);
	bm_cpuplace_pick(&allowed, 2, &b);
	assert_string_equal(fmt(&b), "1-2");
	bm_cpuplace_put(&a);
	bm_cpuplace_put(&b);
	bm_cpuplace_put(&c);
	for (int cpu = 0; cpu < 4; cpu++)
		assert_int_equal(bm_cpuplace_load((unsigned int)cpu), 0);
	/* only the allowed ones, and a put of nothing held stays at 0 */
	allowed = cpus("4,6");
	bm_cpuplace_pick(&allowed, 1, &a);
	assert_string_equal(fmt(&a), "6");
	bm_cpuplace_put(&a);
	bm_cpuplace_put(&a);
	assert_int_equal(bm_cpuplace_load(6), 0);
}

static void test_cpulist_both_ways(void **state)
{
	cpu_set_t s;
	char small[4];

	s = cpus("0-3,6,8-9\n");
	assert_int_equal(CPU_COUNT(&s), 7);
	assert_string_equal(fmt(&s), "0-3,6,8-9");
	s = cpus("");
	assert_int_equal(CPU_COUNT(&s), 0);
	assert_string_equal(fmt(&s), "");
	s = cpus("5");
	assert_string_equal(fmt(&s), "5");
	assert_int_equal(bm_cpulist_parse("3-1", &s), -EINVAL);
	assert_int_equal(bm_cpulist_parse("1,,2", &s), -EINVAL);
	assert_int_equal(bm_cpulist_parse("a", &s), -EINVAL);
	assert_int_equal(bm_cpulist_parse("1-", &s), -EINVAL);
	assert_int_equal(bm_cpulist_parse("99999", &s), -EINVAL);
	assert_int_equal(CPU_COUNT(&s), 0);
	s = cpus("0-3,6");
	assert_int_equal(bm_cpulist_format(&s, small, sizeof(small)), -ENOSPC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpuplace_confines_fewer_than_all),
		cmocka_unit_test(test_cpuplace_spreads_highest_first),
		cmocka_unit_test(test_cpulist_both_ways),
	};

	return cmocka_run_group_tests_name("cpuplace", tests, NULL, NULL);
}
