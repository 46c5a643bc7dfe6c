// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The agent's config (user/agent/config.c) from a buffer, as the fuzzer
 * (tests/fuzz/fuzz_config.c) drives it: what loads, and that a malformed
 * value is refused with one printable line NAME:LINE:COLUMN, whatever the
 * value holds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent/config.h"
#include "base/common.h"

static struct bm_agent_cfg c;
static char err[512];

static int parse(const char *yaml)
{
	err[0] = '\0';
	bm_agent_cfg_default(&c);
	return bm_agent_cfg_parse(&c, yaml, strlen(yaml), "c.yaml", err, sizeof(err));
}

static void assert_error_at(const char *yaml, unsigned int line, unsigned int col, const char *what)
{
	char where[64];
	const char *p;

	assert_int_equal(parse(yaml), -EINVAL);
	snprintf(where, sizeof(where), "c.yaml:%u:%u: ", line, col);
	if (strncmp(err, where, strlen(where)))
		fail_msg("expected '%s...', got '%s'", where, err);
	if (!strstr(err, what))
		fail_msg("expected '%s' in '%s'", what, err);
	for (p = err; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			fail_msg("control character 0x%02x in '%s'", (unsigned char)*p, err);
}

static void test_config_loads(void **state)
{
	assert_int_equal(parse("socket: /tmp/a.sock\nsocket_mode: '0600'\nwindow_ms: 20\n"
			       "max_running: 3\nadmit_mem_available: 1.5Gi\nmetrics: \"\"\n"
			       "tenants:\n  - { uid: 1000, tenant: acme }\n"),
			 0);
	assert_string_equal(c.socket, "/tmp/a.sock");
	assert_int_equal(c.socket_mode, 0600);
	assert_int_equal(c.window_ns, 20 * BM_NSEC_PER_MSEC);
	assert_int_equal(c.max_running, 3);
	assert_int_equal(c.admit_mem_available, 1536ULL << 20);
	assert_string_equal(c.metrics, "");
	assert_int_equal(c.n_tenants, 1);
	assert_int_equal(c.tenants[0].uid, 1000);
	assert_string_equal(c.tenants[0].tenant, "acme");
	/* an empty document is the defaults */
	assert_int_equal(parse(""), 0);
	assert_int_equal(c.max_running, 64);
}

static void test_config_socket_mode(void **state)
{
	assert_int_equal(parse("socket_mode: 0777\n"), 0);
	assert_int_equal(c.socket_mode, 0777);
	assert_error_at("socket_mode: 01000\n", 1, 14, "invalid socket_mode '01000'");
	/* 2^32 + 0660: once taken as 0660, as an unsigned int dropped the bits over 32 */
	assert_error_at("socket_mode: 040000000660\n", 1, 14, "invalid socket_mode");
	assert_int_equal(c.socket_mode, 0660); /* the default, untouched */
	assert_error_at("socket_mode: 0660x\n", 1, 14, "invalid socket_mode");
	assert_error_at("socket_mode: ''\n", 1, 14, "invalid socket_mode");
}

/* a value quoted in a message may hold a newline or an escape: never in the line */
static void test_config_error_is_one_printable_line(void **state)
{
	assert_error_at("socket: \"run\\napi.sock\"\n", 1, 9, "invalid socket 'run?api.sock'");
	assert_error_at("max_tools: \"1\\e[2J\"\n", 1, 12, "invalid max_tools '1?[2J'");
	assert_error_at("tenants:\n  - { uid: \"1\\r2\", tenant: x }\n", 2, 12,
			"invalid tenants[0].uid '1?2'");
	assert_error_at("window_ms: 1001\n", 1, 12, "invalid window_ms '1001'");
	assert_error_at("max_runing: 3\n", 1, 1, "Unexpected key: max_runing");
}

/* budgets: the defaults, and a tenant's own over them (what it does not name, it inherits) */
static void test_config_budgets(void **state)
{
	const struct bm_budget_cfg *b;

	assert_int_equal(parse("pressure_action: throttle_top\n"
			       "admit_meminfo_file: /run/test/meminfo\n"
			       "budgets:\n"
			       "  half_life: 30s\n"
			       "  fair_cpu: off\n"
			       "  default:\n"
			       "    cpu_seconds: { rate: 0.5, burst: 10 }\n"
			       "    memory_gib_seconds: { rate: 2, burst: 120.5 }\n"
			       "    net_tx_bytes: { rate: 10Mi, burst: 100Mi }\n"
			       "    launches: { rate: 5, burst: 20 }\n"
			       "  tenants:\n"
			       "    - tenant: acme\n"
			       "      weight: 2.5\n"
			       "      cpu_seconds: { rate: 2, burst: 40 }\n"
			       "    - { tenant: globex, io_bytes: { rate: 1Gi, burst: 1Gi } }\n"),
			 0);
	assert_int_equal(c.pressure_action, BM_PRESSURE_THROTTLE_TOP);
	assert_string_equal(c.admit_meminfo_file, "/run/test/meminfo");
	assert_true(c.fair_half_life_ns == 30 * BM_NSEC_PER_SEC);
	assert_false(c.fair_cpu_yield);
	b = bm_agent_cfg_budget(&c, "someone");
	assert_true(b == &c.budget);
	assert_true(b->weight == 1);
	assert_true(b->b[BM_BUD_CPU].rate == 0.5 && b->b[BM_BUD_CPU].burst == 10);
	assert_true(b->b[BM_BUD_MEM].rate == 2 && b->b[BM_BUD_MEM].burst == 120.5);
	assert_true(b->b[BM_BUD_NET].rate == 10 << 20 && b->b[BM_BUD_NET].burst == 100 << 20);
	assert_true(b->b[BM_BUD_IO].rate == 0);
	assert_true(b->b[BM_BUD_LAUNCH].rate == 5 && b->b[BM_BUD_LAUNCH].burst == 20);
	b = bm_agent_cfg_budget(&c, "acme");
	assert_true(b->weight == 2.5);
	assert_true(b->b[BM_BUD_CPU].rate == 2 && b->b[BM_BUD_CPU].burst == 40);
	assert_true(b->b[BM_BUD_MEM].rate == 2); /* inherited */
	b = bm_agent_cfg_budget(&c, "globex");
	assert_true(b->b[BM_BUD_IO].rate == 1 << 30 && b->b[BM_BUD_CPU].rate == 0.5);
	/* the embedded defaults: no budget at all, weight 1, pause */
	assert_int_equal(parse(""), 0);
	assert_int_equal(c.pressure_action, BM_PRESSURE_PAUSE);
	assert_string_equal(c.admit_meminfo_file, "/proc/meminfo");
	assert_true(c.budget.weight == 1 && c.budget.b[BM_BUD_CPU].rate == 0 && !c.n_budgets);
}

static void test_config_budget_errors_say_where(void **state)
{
	assert_error_at("budgets:\n  default:\n    cpu_seconds: { rate: fast, burst: 10 }\n", 3, 26,
			"invalid budgets.default.cpu_seconds.rate 'fast': expected CPU-seconds");
	assert_error_at("budgets:\n  default:\n    cpu_seconds: { rate: 1 }\n", 3, 18,
			"invalid budgets.default.cpu_seconds: expected both a rate and a burst");
	assert_error_at("budgets:\n  default:\n    cpu_seconds: { rate: 2, burst: 1 }\n", 3, 36,
			"invalid budgets.default.cpu_seconds.burst '1': expected at least one second");
	assert_error_at("budgets:\n  default:\n    net_tx_bytes: { rate: -1, burst: 1 }\n", 3, 27,
			"invalid budgets.default.net_tx_bytes.rate '-1': expected a size");
	assert_error_at("budgets:\n  tenants:\n    - { tenant: a }\n    - { tenant: a }\n", 4, 17,
			"invalid budgets.tenants.#1.tenant 'a': named twice");
	assert_error_at("budgets:\n  tenants:\n    - { weight: 2 }\n", 3, 7,
			"invalid budgets.tenants.#0: expected a tenant: NAME");
	assert_error_at("budgets:\n  tenants:\n    - { tenant: ../x }\n", 3, 17,
			"invalid budgets.tenants.#0.tenant '../x': expected the tenant's name");
	assert_error_at("budgets:\n  tenants:\n    - { tenant: a, weight: 0 }\n", 3, 28,
			"invalid budgets.tenants.#0.weight '0': expected a decimal");
	assert_error_at("budgets:\n  default: { tenant: a }\n", 2, 22,
			"only an entry of budgets.tenants names a tenant");
	assert_error_at("budgets:\n  half_life: 0s\n", 2, 14, "invalid budgets.half_life '0s'");
	assert_error_at("budgets:\n  fair_cpu: maybe\n", 2, 13,
			"invalid budgets.fair_cpu 'maybe': expected yield or off");
	assert_error_at("budgets:\n  default:\n    cpu: { rate: 1, burst: 1 }\n", 3, 5,
			"Unexpected key: cpu");
	assert_error_at("pressure_action: kill\n", 1, 18, "invalid pressure_action 'kill'");
	assert_error_at("admit_meminfo_file: \"\"\n", 1, 21, "invalid admit_meminfo_file ''");
}

/* The API's connections all told (an eighth each for root and newcomers), and who holds ceilings. */
static void test_config_conns_and_enforcement(void **state)
{
	assert_int_equal(parse(""), 0);
	assert_int_equal(c.max_conns, 512);
	assert_int_equal(c.max_conns_per_uid, 64);
	assert_false(c.meter_only);
	assert_int_equal(parse("max_conns: 16\nmax_conns_per_uid: 4\nenforcement: meter\n"), 0);
	assert_int_equal(c.max_conns, 16);
	assert_int_equal(c.max_conns_per_uid, 4);
	assert_true(c.meter_only);
	assert_int_equal(parse("enforcement: controllers\n"), 0);
	assert_false(c.meter_only);
	assert_error_at("max_conns: 7\n", 1, 12, "invalid max_conns '7'");
	assert_error_at("enforcement: none\n", 1, 14, "invalid enforcement 'none'");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_conns_and_enforcement),
		cmocka_unit_test(test_config_loads),
		cmocka_unit_test(test_config_socket_mode),
		cmocka_unit_test(test_config_error_is_one_printable_line),
		cmocka_unit_test(test_config_budgets),
		cmocka_unit_test(test_config_budget_errors_say_where),
	};

	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
