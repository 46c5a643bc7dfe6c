// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Policy files (user/effect/policy_yaml.c): what loads, how rules apply, and that
 * every malformed document is refused with FILE:LINE:COLUMN pointing at
 * the offending node.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "effect/policy_yaml.h"

static struct bm_policy p;
static char err[512];

static int load(const char *yaml, const char *tenant, const char *tool)
{
	err[0] = '\0';
	return bm_policy_load(yaml, strlen(yaml), "p.yaml", tenant, tool, &p, err, sizeof(err));
}

/* The error must name the file, the line and the column, and say what is wrong. */
static void assert_error_at(const char *yaml, unsigned int line, unsigned int col, const char *what)
{
	char where[64];

	assert_int_equal(load(yaml, "t", "sh"), -EINVAL);
	snprintf(where, sizeof(where), "p.yaml:%u:%u: ", line, col);
	if (strncmp(err, where, strlen(where)))
		fail_msg("expected '%s...', got '%s'", where, err);
	if (!strstr(err, what))
		fail_msg("expected '%s' in '%s'", what, err);
	assert_null(strchr(err, '\n'));
}

static void test_yaml_full_document(void **state)
{
	const char *y = "cooldown_ms: 100\n"
			"freeze_timeout_ms: 700\n"
			"cancel_grace_ms: 50\n"
			"defaults:\n"
			"  cpu: { soft: 1.5, hard: 2, hold_ms: 200, steps: [throttle, freeze] }\n"
			"  memory: { soft: 512M, hard: 1Gi, steps: [freeze, cancel, kill] }\n"
			"  pids: { hard: 64, steps: [kill] }\n"
			"  net: { soft: 50M, hard: 200M }\n"
			"  io: { soft: 100M, hold_ms: 0, steps: [throttle, freeze] }\n";

	assert_int_equal(load(y, "t", "sh"), 0);
	assert_int_equal(p.cooldown_ms, 100);
	assert_int_equal(p.freeze_timeout_ms, 700);
	assert_int_equal(p.cancel_grace_ms, 50);
	assert_true(p.dim[BM_P_CPU].soft == 1.5 && p.dim[BM_P_CPU].hard == 2);
	assert_int_equal(p.dim[BM_P_CPU].hold_ms, 200);
	assert_int_equal(p.dim[BM_P_CPU].steps, BM_STEP_BIT(BM_STEP_THROTTLE) | BM_STEP_BIT(BM_STEP_FREEZE));
	assert_true(p.dim[BM_P_MEM].soft == 512.0 * 1024 * 1024);
	assert_true(p.dim[BM_P_MEM].hard == 1024.0 * 1024 * 1024);
	assert_true(p.dim[BM_P_PIDS].hard == 64);
	assert_true(p.dim[BM_P_NET].soft == 50.0 * 1024 * 1024);
	assert_int_equal(p.dim[BM_P_NET].steps, 0);
	assert_true(p.dim[BM_P_IO].soft == 100.0 * 1024 * 1024 && p.dim[BM_P_IO].hard == 0);
	assert_int_equal(p.dim[BM_P_IO].steps, BM_STEP_BIT(BM_STEP_THROTTLE) | BM_STEP_BIT(BM_STEP_FREEZE));
}

static void test_yaml_defaults_when_absent(void **state)
{
	struct bm_policy d;

	bm_policy_default(&d);
	assert_int_equal(load("defaults: {}\n", "t", "sh"), 0);
	assert_int_equal(p.cooldown_ms, d.cooldown_ms);
	assert_int_equal(p.freeze_timeout_ms, d.freeze_timeout_ms);
	assert_true(p.dim[BM_P_CPU].soft == 0 && p.dim[BM_P_MEM].hard == 0);
}

static void test_yaml_first_matching_rule_applies(void **state)
{
	const char *y = "defaults:\n"
			"  cpu: { soft: 1, hard: 2 }\n"
			"rules:\n"
			"  - match: { tenant: acme, tool: pytest }\n"
			"    cpu: { soft: 3, hard: 4 }\n"
			"  - match: { tenant: acme }\n"
			"    cpu: { hard: 8 }\n"
			"  - match: { tool: '*' }\n"
			"    cpu: { hard: 16 }\n";

	assert_int_equal(load(y, "acme", "pytest"), 0);
	assert_true(p.dim[BM_P_CPU].soft == 3 && p.dim[BM_P_CPU].hard == 4);
	assert_int_equal(load(y, "acme", "make"), 0);
	assert_true(p.dim[BM_P_CPU].soft == 1 && p.dim[BM_P_CPU].hard == 8);
	assert_int_equal(load(y, "other", "make"), 0);
	assert_true(p.dim[BM_P_CPU].hard == 16);
}

static void test_yaml_rules_are_checked_even_if_they_do_not_match(void **state)
{
	assert_error_at("rules:\n  - match: { tenant: nobody }\n    pids: { hard: lots }\n", 3, 19,
			"invalid pids.hard 'lots'");
}

static void test_yaml_tool_kind(void **state)
{
	assert_string_equal(bm_policy_tool("/usr/bin/python3"), "python3");
	assert_string_equal(bm_policy_tool("make"), "make");
	assert_string_equal(bm_policy_tool("./a/b/run.sh"), "run.sh");
}

static void test_yaml_malformed(void **state)
{
	assert_error_at("defaults:\n  cpu: { soft: 1.5x }\n", 2, 16, "invalid cpu.soft '1.5x'");
	assert_error_at("defaults:\n  memory:\n    hard: -1G\n", 3, 11, "invalid memory.hard '-1G'");
	assert_error_at("defaults:\n  net: { soft: 0 }\n", 2, 16, "invalid net.soft '0'");
	assert_error_at("defaults:\n  io: { hard: fast }\n", 2, 15, "invalid io.hard 'fast'");
	assert_error_at("defaults:\n  pids: { hard: 5000000 }\n", 2, 17, "invalid pids.hard");
	assert_error_at("defaults:\n  cpux: { soft: 1 }\n", 2, 3, "Unexpected key: cpux");
	assert_error_at("defaults:\n  cpu: { soft: 1, typo: 2 }\n", 2, 19, "Unexpected key: typo");
	assert_error_at("defaults:\n  cpu: { steps: [throttle, explode] }\n", 2, 17, "explode");
	assert_error_at("defaults:\n  cpu: { soft: 3, hard: 2 }\n", 2, 8, "soft (3) exceeds hard (2)");
	assert_error_at("cooldown_ms: -5\n", 1, 14, "invalid cooldown_ms '-5'");
	assert_error_at("freeze_timeout_ms: 0\n", 1, 20, "invalid freeze_timeout_ms '0'");
	assert_error_at("cancel_grace_ms: 99999999\n", 1, 18, "invalid cancel_grace_ms");
	assert_error_at("defaults:\n  cpu: { hold_ms: soon }\n", 2, 19, "invalid cpu.hold_ms 'soon'");
	assert_error_at("rules:\n  - cpu: { soft: 1 }\n", 2, 10, "Missing required mapping field: match");
	assert_error_at("defaults: [1, 2]\n", 1, 11, "Expecting MAPPING");
	assert_error_at("defaults:\n  cpu: [1\n", 2, 8, "Expecting MAPPING");
	assert_error_at("defaults:\n  cpu: { soft: 1\n", 2, 16, "did not find expected");
}

static void test_yaml_empty_and_non_mapping(void **state)
{
	assert_error_at("", 1, 1, "empty policy");
	assert_error_at("# only a comment\n", 1, 1, "empty policy");
	assert_int_equal(load("just a string\n", "t", "sh"), -EINVAL);
	assert_int_equal(load("- a\n- b\n", "t", "sh"), -EINVAL);
}

static void test_yaml_aliases_refused(void **state)
{
	/* billion-laughs style documents never expand */
	assert_int_equal(load("defaults:\n  cpu: &c { soft: 1 }\n  net: *c\n", "t", "sh"), -EINVAL);
	assert_non_null(strstr(err, "p.yaml:"));
}

static void test_yaml_file(void **state)
{
	char path[] = "/tmp/bm-policy-XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "defaults:\n  pids: { hard: 10 }\n", 31), 31);
	close(fd);
	assert_int_equal(bm_policy_load_file(path, "t", "sh", &p, err, sizeof(err)), 0);
	assert_true(p.dim[BM_P_PIDS].hard == 10);
	unlink(path);
	assert_int_equal(bm_policy_load_file(path, "t", "sh", &p, err, sizeof(err)), -ENOENT);
}

static void test_yaml_too_large(void **state)
{
	char path[] = "/tmp/bm-policy-XXXXXX";
	int fd = mkstemp(path);
	char *big = malloc(300 * 1024);

	assert_true(fd >= 0 && big);
	memset(big, '#', 300 * 1024);
	assert_int_equal(write(fd, big, 300 * 1024), 300 * 1024);
	close(fd);
	assert_int_equal(bm_policy_load_file(path, "t", "sh", &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "larger than"));
	unlink(path);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_yaml_full_document),
		cmocka_unit_test(test_yaml_defaults_when_absent),
		cmocka_unit_test(test_yaml_first_matching_rule_applies),
		cmocka_unit_test(test_yaml_rules_are_checked_even_if_they_do_not_match),
		cmocka_unit_test(test_yaml_tool_kind),
		cmocka_unit_test(test_yaml_malformed),
		cmocka_unit_test(test_yaml_empty_and_non_mapping),
		cmocka_unit_test(test_yaml_aliases_refused),
		cmocka_unit_test(test_yaml_file),
		cmocka_unit_test(test_yaml_too_large),
	};

	return cmocka_run_group_tests_name("policy_yaml", tests, NULL, NULL);
}
