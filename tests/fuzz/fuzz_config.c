// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for the agent's config (user/agent/config.c through
 * base/yamldoc.c and libcyaml): the input is the YAML text, parsed over the
 * defaults with bm_agent_cfg_parse(). A config that loads keeps every
 * field in the range config.c promises; one that does not is -EINVAL with
 * one line "c.yaml:LINE:COL: what".
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config.h"
#include "base/common.h"
#include "fuzz.h"

static void check_path(const char *key, const char *p, size_t size)
{
	CHECK(strnlen(p, size) < size, "%s not terminated", key);
	CHECK(!*p || *p == '/', "%s '%s' is not absolute", key, p);
}

/* A budget as the agent may use it: a weight > 0, and each bucket none, or a rate within its burst. */
static void check_budget(const char *who, const struct bm_budget_cfg *b)
{
	int d;

	CHECK(b->weight > 0 && b->weight <= 1000, "%s: weight %g", who, b->weight);
	for (d = 0; d < BM_BUD__MAX; d++)
		CHECK(b->b[d].rate == 0 ? b->b[d].burst == 0
					: b->b[d].rate > 0 && b->b[d].burst >= b->b[d].rate,
		      "%s: %s rate %g burst %g", who, bm_budget_name(d), b->b[d].rate, b->b[d].burst);
}

static void check_cfg(const struct bm_agent_cfg *c)
{
	unsigned int i;

	check_path("socket", c->socket, sizeof(c->socket));
	check_path("state_dir", c->state_dir, sizeof(c->state_dir));
	check_path("pin_dir", c->pin_dir, sizeof(c->pin_dir));
	check_path("policy", c->policy, sizeof(c->policy));
	CHECK(strnlen(c->metrics, sizeof(c->metrics)) < sizeof(c->metrics),
	      "metrics not terminated");
	CHECK(!c->metrics[0] || strchr(c->metrics, ':'), "metrics '%s' without a port", c->metrics);
	CHECK(c->socket_mode <= 0777, "socket_mode %o", (unsigned int)c->socket_mode);
	CHECK(c->window_ns >= BM_NSEC_PER_MSEC && c->window_ns <= 1000 * BM_NSEC_PER_MSEC &&
		      !(c->window_ns % BM_NSEC_PER_MSEC),
	      "window_ns %llu", (unsigned long long)c->window_ns);
	CHECK(c->max_running >= 1 && c->max_running <= 100000, "max_running %u", c->max_running);
	CHECK(c->max_queued <= 1000000, "max_queued %u", c->max_queued);
	CHECK(c->tenant_max_running >= 1 && c->tenant_max_running <= 100000,
	      "tenant_max_running %u", c->tenant_max_running);
	CHECK(c->admit_cpu_pressure >= 1 && c->admit_cpu_pressure <= 100, "admit_cpu_pressure %g",
	      c->admit_cpu_pressure);
	CHECK(c->admit_mem_available <= 1ULL << 50, "admit_mem_available %llu",
	      (unsigned long long)c->admit_mem_available);
	CHECK(c->max_tools >= 1 && c->max_tools <= 1000, "max_tools %u", c->max_tools);
	CHECK(c->max_metric_tenants >= 1 && c->max_metric_tenants <= 1000, "max_metric_tenants %u",
	      c->max_metric_tenants);
	CHECK(c->n_tenants <= BM_AGENT_MAX_TENANTS, "n_tenants %u", c->n_tenants);
	for (i = 0; i < c->n_tenants; i++)
		CHECK(bm_valid_name(c->tenants[i].tenant) && c->tenants[i].uid != (uid_t)-1,
		      "tenants[%u]: uid %u, '%s'", i, (unsigned int)c->tenants[i].uid,
		      c->tenants[i].tenant);
	CHECK(c->pressure_action == BM_PRESSURE_PAUSE || c->pressure_action == BM_PRESSURE_THROTTLE_TOP,
	      "pressure_action %d", (int)c->pressure_action);
	check_path("admit_cpu_pressure_file", c->admit_cpu_pressure_file,
		   sizeof(c->admit_cpu_pressure_file));
	check_path("admit_meminfo_file", c->admit_meminfo_file, sizeof(c->admit_meminfo_file));
	CHECK(c->n_budgets <= BM_AGENT_MAX_TENANTS, "n_budgets %u", c->n_budgets);
	check_budget("budgets.default", &c->budget);
	for (i = 0; i < c->n_budgets; i++) {
		CHECK(bm_valid_name(c->budgets[i].tenant), "budgets[%u] '%s'", i, c->budgets[i].tenant);
		check_budget(c->budgets[i].tenant, &c->budgets[i].b);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a copy of exactly size bytes: ASan sees any read past the text */
	char *text = malloc(size ? size : 1), err[512] = "";
	static struct bm_agent_cfg c; /* 20 KiB: off the stack */
	unsigned int line, col;
	int ret, n = 0;

	CHECK(text, "out of memory");
	memcpy(text, data, size);
	bm_agent_cfg_default(&c);
	ret = bm_agent_cfg_parse(&c, text, size, "c.yaml", err, sizeof(err));
	if (ret) {
		CHECK(ret == -EINVAL, "error %d", ret);
		CHECK(sscanf(err, "c.yaml:%u:%u: %n", &line, &col, &n) == 2 && n && err[n],
		      "error without NAME:LINE:COL: what: '%s'", err);
		CHECK(fuzz_one_line(err),
		      "error of more than one line, or with control characters: "
		      "'%s'",
		      err);
	} else {
		check_cfg(&c);
	}
	free(text);
	return 0;
}
