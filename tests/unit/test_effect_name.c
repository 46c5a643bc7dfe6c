// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/effect/name.h: an effect's name on the node. Two effects never share
 * one (tenant "team" with id "a.x" and tenant "team.a" with id "x" did,
 * when a dot joined them), and every name splits back into the tenant and
 * id it was made of; an older agent's dotted names split as they can.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "base/parse.h"
#include "effect/name.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Pairs that a dot between them would have made one name. */
static const char *const pairs[][2] = {
	{ "team", "a.x" }, { "team.a", "x" }, { "a", "b.c.d" }, { "a.b", "c.d" },
	{ "a.b.c", "d" },  { "x-y", "z" },    { "x", "-y.z" },  { "t_1", "1.2" },
};

static void test_names_never_collide(void **state)
{
	char a[BM_EFFECT_NAME_MAX], b[BM_EFFECT_NAME_MAX];
	size_t i, j;

	(void)state;
	for (i = 0; i < N(pairs); i++) {
		assert_int_equal(bm_effect_name(pairs[i][0], pairs[i][1], a, sizeof(a)), 0);
		for (j = i + 1; j < N(pairs); j++) {
			assert_int_equal(bm_effect_name(pairs[j][0], pairs[j][1], b, sizeof(b)), 0);
			if (!strcmp(a, b))
				fail_msg("%s@%s and %s@%s are both %s", pairs[i][0], pairs[i][1],
					 pairs[j][0], pairs[j][1], a);
		}
	}
	assert_int_equal(bm_effect_name("team", "a.x", a, sizeof(a)), 0);
	assert_string_equal(a, "burstmeter.team@a.x");
	assert_int_equal(bm_effect_name("team.a", "x", a, sizeof(a)), 0);
	assert_string_equal(a, "burstmeter.team.a@x");
}

static void test_names_split_back(void **state)
{
	char name[BM_EFFECT_NAME_MAX], t[BM_NAME_MAX + 1], id[BM_NAME_MAX + 1];
	char lt[BM_NAME_MAX + 1], lid[BM_NAME_MAX + 1];
	size_t i;

	(void)state;
	for (i = 0; i < N(pairs); i++) {
		assert_int_equal(bm_effect_name(pairs[i][0], pairs[i][1], name, sizeof(name)), 0);
		assert_int_equal(bm_effect_name_split(name, t, id), 0);
		assert_string_equal(t, pairs[i][0]);
		assert_string_equal(id, pairs[i][1]);
	}
	/* the longest names fit, both ways */
	memset(lt, 'a', BM_NAME_MAX);
	lt[BM_NAME_MAX] = '\0';
	memset(lid, 'b', BM_NAME_MAX);
	lid[BM_NAME_MAX] = '\0';
	assert_int_equal(bm_effect_name(lt, lid, name, sizeof(name)), 0);
	assert_int_equal(bm_effect_name_split(name, t, id), 0);
	assert_string_equal(t, lt);
	assert_string_equal(id, lid);
	/* an older agent's: split at the first dot, and said to be so */
	assert_int_equal(bm_effect_name_split("burstmeter.team.a.x", t, id), 1);
	assert_string_equal(t, "team");
	assert_string_equal(id, "a.x");
}

static void test_names_refused(void **state)
{
	char name[BM_EFFECT_NAME_MAX], t[BM_NAME_MAX + 1], id[BM_NAME_MAX + 1];
	char big[BM_NAME_MAX + 2];

	(void)state;
	/* not names: '@' (it would make two splits), '/', empty */
	assert_int_equal(bm_effect_name("te@m", "x", name, sizeof(name)), -EINVAL);
	assert_int_equal(bm_effect_name("team", "a@x", name, sizeof(name)), -EINVAL);
	assert_int_equal(bm_effect_name("team", "a/x", name, sizeof(name)), -EINVAL);
	assert_int_equal(bm_effect_name("", "x", name, sizeof(name)), -EINVAL);
	assert_int_equal(bm_effect_name("team", "a.x", name, 10), -ENAMETOOLONG);
	/* no effect's */
	assert_int_equal(bm_effect_name_split("other.team@x", t, id), -EINVAL);
	assert_int_equal(bm_effect_name_split("burstmeter.", t, id), -EINVAL);
	assert_int_equal(bm_effect_name_split("burstmeter.team", t, id), -EINVAL);
	assert_int_equal(bm_effect_name_split("burstmeter.@x", t, id), -EINVAL);
	assert_int_equal(bm_effect_name_split("burstmeter.team@", t, id), -EINVAL);
	assert_int_equal(bm_effect_name_split("burstmeter.team@a@x", t, id), -EINVAL);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	snprintf(name, sizeof(name), "burstmeter.%s@x", big);
	assert_int_equal(bm_effect_name_split(name, t, id), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_never_collide),
		cmocka_unit_test(test_names_split_back),
		cmocka_unit_test(test_names_refused),
	};

	return cmocka_run_group_tests_name("effect_name", tests, NULL, NULL);
}
