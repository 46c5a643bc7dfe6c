// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/parse.h"
#include "base/yamldoc.h"
#include "effect/policy_yaml.h"

#define MS_MAX (3600ULL * 1000)
#define POLICY_MAX_BYTES (256 * 1024)

struct y_dim {
	char *soft, *hard, *hold_ms;
	uint32_t steps;
};

struct y_match {
	char *tenant, *tool;
};

struct y_dims {
	struct y_dim *dim[BM_P__MAX];
};

struct y_rule {
	struct y_match *match;
	struct y_dims d;
};

struct y_policy {
	char *cooldown_ms, *freeze_timeout_ms, *cancel_grace_ms, *expect_widens_soft;
	struct y_dims *defaults;
	struct y_rule *rules;
	unsigned int rules_count;
};

static const cyaml_strval_t step_names[] = {
	{ "throttle", BM_STEP_BIT(BM_STEP_THROTTLE) },
	{ "freeze", BM_STEP_BIT(BM_STEP_FREEZE) },
	{ "cancel", BM_STEP_BIT(BM_STEP_CANCEL) },
	{ "kill", BM_STEP_BIT(BM_STEP_KILL) },
};


static const cyaml_schema_field_t dim_fields[] = {
	CYAML_FIELD_STRING_PTR("soft", CYAML_FLAG_OPTIONAL, struct y_dim, soft, 1, 32),
	CYAML_FIELD_STRING_PTR("hard", CYAML_FLAG_OPTIONAL, struct y_dim, hard, 1, 32),
	CYAML_FIELD_STRING_PTR("hold_ms", CYAML_FLAG_OPTIONAL, struct y_dim, hold_ms, 1, 32),
	CYAML_FIELD_FLAGS("steps", CYAML_FLAG_OPTIONAL | CYAML_FLAG_STRICT, struct y_dim, steps,
			  step_names, CYAML_ARRAY_LEN(step_names)),
	CYAML_FIELD_END,
};

#define DIM_FIELD(name, idx, type)                                                         \
	CYAML_FIELD_MAPPING_PTR(name, CYAML_FLAG_OPTIONAL, type, d.dim[idx], dim_fields)

static const cyaml_schema_field_t dims_fields[] = {
	CYAML_FIELD_MAPPING_PTR("cpu", CYAML_FLAG_OPTIONAL, struct y_dims, dim[BM_P_CPU], dim_fields),
	CYAML_FIELD_MAPPING_PTR("memory", CYAML_FLAG_OPTIONAL, struct y_dims, dim[BM_P_MEM], dim_fields),
	CYAML_FIELD_MAPPING_PTR("pids", CYAML_FLAG_OPTIONAL, struct y_dims, dim[BM_P_PIDS], dim_fields),
	CYAML_FIELD_MAPPING_PTR("net", CYAML_FLAG_OPTIONAL, struct y_dims, dim[BM_P_NET], dim_fields),
	CYAML_FIELD_MAPPING_PTR("io", CYAML_FLAG_OPTIONAL, struct y_dims, dim[BM_P_IO], dim_fields),
	CYAML_FIELD_END,
};

static const cyaml_schema_field_t match_fields[] = {
	CYAML_FIELD_STRING_PTR("tenant", CYAML_FLAG_OPTIONAL, struct y_match, tenant, 1, BM_NAME_MAX),
	CYAML_FIELD_STRING_PTR("tool", CYAML_FLAG_OPTIONAL, struct y_match, tool, 1, 255),
	CYAML_FIELD_END,
};

static const cyaml_schema_field_t rule_fields[] = {
	CYAML_FIELD_MAPPING_PTR("match", CYAML_FLAG_DEFAULT, struct y_rule, match, match_fields),
	DIM_FIELD("cpu", BM_P_CPU, struct y_rule),
	DIM_FIELD("memory", BM_P_MEM, struct y_rule),
	DIM_FIELD("pids", BM_P_PIDS, struct y_rule),
	DIM_FIELD("net", BM_P_NET, struct y_rule),
	DIM_FIELD("io", BM_P_IO, struct y_rule),
	CYAML_FIELD_END,
};

static const cyaml_schema_value_t rule_schema = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, struct y_rule, rule_fields),
};

static const cyaml_schema_field_t policy_fields[] = {
	CYAML_FIELD_STRING_PTR("cooldown_ms", CYAML_FLAG_OPTIONAL, struct y_policy, cooldown_ms, 1, 32),
	CYAML_FIELD_STRING_PTR("freeze_timeout_ms", CYAML_FLAG_OPTIONAL, struct y_policy, freeze_timeout_ms, 1, 32),
	CYAML_FIELD_STRING_PTR("cancel_grace_ms", CYAML_FLAG_OPTIONAL, struct y_policy, cancel_grace_ms, 1, 32),
	CYAML_FIELD_STRING_PTR("expect_widens_soft", CYAML_FLAG_OPTIONAL, struct y_policy, expect_widens_soft, 1, 8),
	CYAML_FIELD_MAPPING_PTR("defaults", CYAML_FLAG_OPTIONAL, struct y_policy, defaults, dims_fields),
	CYAML_FIELD_SEQUENCE("rules", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, struct y_policy, rules,
			     &rule_schema, 0, 256),
	CYAML_FIELD_END,
};

static const cyaml_schema_value_t policy_schema = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, struct y_policy, policy_fields),
};

struct loader {
	const char *text, *name;
	size_t len;
	char *err;
	size_t errlen;
};

#define fail(ld, path, depth, ...) \
	bm_yaml_fail((ld)->text, (ld)->len, (ld)->name, path, depth, (ld)->err, (ld)->errlen, __VA_ARGS__)

/* A level in the dimension's unit: cores, bytes, tasks, bytes per second. */
static int parse_level(enum bm_pdim d, const char *s, double *out)
{
	uint64_t v;
	int err;

	switch (d) {
	case BM_P_CPU:
		err = bm_parse_cores(s, 1, 1024000, &v);
		*out = v / 1000.0;
		return err;
	case BM_P_PIDS:
		err = bm_parse_u64(s, 1, 4194304, &v);
		*out = (double)v;
		return err;
	default:
		err = bm_parse_size(s, 1, 1ULL << 50, &v);
		*out = (double)v;
		return err;
	}
}

static const char *const level_forms[BM_P__MAX] = {
	[BM_P_CPU] = "cores, e.g. 1.5 or 500m", [BM_P_MEM] = "a size, e.g. 512M or 2G",
	[BM_P_PIDS] = "a task count in 1-4194304", [BM_P_NET] = "bytes per second, e.g. 50M",
	[BM_P_IO] = "bytes read plus written per second, e.g. 100M",
};

/* Lay one YAML dimension block over a rule; path[0..depth) locates the block. */
static int apply_dim(struct loader *ld, const struct y_dim *y, enum bm_pdim d, struct bm_dim_rule *r,
		     const char **path, int depth)
{
	path[depth] = bm_pdim_name(d);
	if (y->soft) {
		path[depth + 1] = "soft";
		if (parse_level(d, y->soft, &r->soft))
			return fail(ld, path, depth + 2, "invalid %s.soft '%s': expected %s",
				    bm_pdim_name(d), y->soft, level_forms[d]);
	}
	if (y->hard) {
		path[depth + 1] = "hard";
		if (parse_level(d, y->hard, &r->hard))
			return fail(ld, path, depth + 2, "invalid %s.hard '%s': expected %s",
				    bm_pdim_name(d), y->hard, level_forms[d]);
	}
	if (y->hold_ms) {
		path[depth + 1] = "hold_ms";
		if (bm_parse_u64(y->hold_ms, 0, MS_MAX, &r->hold_ms))
			return fail(ld, path, depth + 2, "invalid %s.hold_ms '%s': expected 0-3600000",
				    bm_pdim_name(d), y->hold_ms);
	}
	if (y->steps)
		r->steps = y->steps;
	if (r->soft && r->hard && r->soft > r->hard)
		return fail(ld, path, depth + 1, "%s: soft (%s) exceeds hard (%s)", bm_pdim_name(d),
			    y->soft ? y->soft : "inherited", y->hard ? y->hard : "inherited");
	return 0;
}

static int apply_dims(struct loader *ld, const struct y_dims *y, struct bm_policy *p,
		      const char **path, int depth)
{
	int d, err;

	for (d = 0; d < BM_P__MAX; d++) {
		if (!y->dim[d])
			continue;
		err = apply_dim(ld, y->dim[d], d, &p->dim[d], path, depth);
		if (err)
			return err;
	}
	return 0;
}

static bool rule_matches(const struct y_match *m, const char *tenant, const char *tool)
{
	return (!m->tenant || !strcmp(m->tenant, "*") || !strcmp(m->tenant, tenant)) &&
	       (!m->tool || !strcmp(m->tool, "*") || (tool && !strcmp(m->tool, tool)));
}

static int apply_ms(struct loader *ld, const char *v, const char *key, uint64_t min, uint64_t *out)
{
	const char *path[1] = { key };

	if (v && bm_parse_u64(v, min, MS_MAX, out))
		return fail(ld, path, 1, "invalid %s '%s': expected %llu-3600000", key, v,
			    (unsigned long long)min);
	return 0;
}

static int apply_bool(struct loader *ld, const char *v, const char *key, bool *out)
{
	const char *path[1] = { key };

	if (v && strcmp(v, "true") && strcmp(v, "false"))
		return fail(ld, path, 1, "invalid %s '%s': expected true or false", key, v);
	if (v)
		*out = !strcmp(v, "true");
	return 0;
}

int bm_policy_load(const char *text, size_t len, const char *name, const char *tenant,
		   const char *tool, struct bm_policy *out, char *err, size_t errlen)
{
	struct loader ld = { text, name, len, err, errlen };
	const char *path[8] = { 0 };
	struct y_policy *y = NULL;
	bool matched = false;
	char idx[16];
	unsigned int i;
	int ret;

	bm_policy_default(out);
	ret = bm_yaml_load(text, len, name, &policy_schema, (void **)&y, err, errlen);
	if (ret)
		return ret;
	/* an empty document loads as OK with nothing in it */
	if (!y) {
		snprintf(err, errlen, "%s:1:1: empty policy (expected a mapping with defaults or rules)", name);
		return -EINVAL;
	}
	ret = apply_ms(&ld, y->cooldown_ms, "cooldown_ms", 0, &out->cooldown_ms);
	if (!ret)
		ret = apply_ms(&ld, y->freeze_timeout_ms, "freeze_timeout_ms", 1, &out->freeze_timeout_ms);
	if (!ret)
		ret = apply_ms(&ld, y->cancel_grace_ms, "cancel_grace_ms", 0, &out->cancel_grace_ms);
	if (!ret)
		ret = apply_bool(&ld, y->expect_widens_soft, "expect_widens_soft", &out->expect_widens);
	if (!ret && y->defaults) {
		path[0] = "defaults";
		ret = apply_dims(&ld, y->defaults, out, path, 1);
	}
	/* every rule is checked; the first that matches is applied over the defaults */
	for (i = 0; !ret && i < y->rules_count; i++) {
		struct bm_policy scratch = *out;
		bool match = !matched && rule_matches(y->rules[i].match, tenant, tool);

		snprintf(idx, sizeof(idx), "#%u", i);
		path[0] = "rules";
		path[1] = idx;
		ret = apply_dims(&ld, &y->rules[i].d, match ? out : &scratch, path, 2);
		matched |= match;
	}
	bm_yaml_free(&policy_schema, y);
	return ret;
}

int bm_policy_load_file(const char *path, const char *tenant, const char *tool,
			struct bm_policy *out, char *err, size_t errlen)
{
	size_t n;
	char *buf;
	int ret;

	ret = bm_yaml_read(path, POLICY_MAX_BYTES, &buf, &n);
	if (ret == -EFBIG) {
		snprintf(err, errlen, "%s:1:1: larger than %d bytes", path, POLICY_MAX_BYTES);
		return -EINVAL;
	}
	if (ret)
		return ret;
	ret = bm_policy_load(buf, n, path, tenant, tool, out, err, errlen);
	free(buf);
	return ret;
}

const char *bm_policy_tool(const char *argv0)
{
	const char *slash = argv0 ? strrchr(argv0, '/') : NULL;

	return slash ? slash + 1 : argv0;
}
