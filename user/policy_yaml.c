// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <cyaml/cyaml.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "parse.h"
#include "policy_yaml.h"

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
	char *cooldown_ms, *freeze_timeout_ms, *cancel_grace_ms;
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
	CYAML_FIELD_END,
};

static const cyaml_schema_value_t rule_schema = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, struct y_rule, rule_fields),
};

static const cyaml_schema_field_t policy_fields[] = {
	CYAML_FIELD_STRING_PTR("cooldown_ms", CYAML_FLAG_OPTIONAL, struct y_policy, cooldown_ms, 1, 32),
	CYAML_FIELD_STRING_PTR("freeze_timeout_ms", CYAML_FLAG_OPTIONAL, struct y_policy, freeze_timeout_ms, 1, 32),
	CYAML_FIELD_STRING_PTR("cancel_grace_ms", CYAML_FLAG_OPTIONAL, struct y_policy, cancel_grace_ms, 1, 32),
	CYAML_FIELD_MAPPING_PTR("defaults", CYAML_FLAG_OPTIONAL, struct y_policy, defaults, dims_fields),
	CYAML_FIELD_SEQUENCE("rules", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, struct y_policy, rules,
			     &rule_schema, 0, 256),
	CYAML_FIELD_END,
};

static const cyaml_schema_value_t policy_schema = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, struct y_policy, policy_fields),
};

/* libcyaml reports through its log: keep the first error and the innermost line/column. */
struct log_ctx {
	char msg[256];
	unsigned int line, col;
};

static void on_log(cyaml_log_t level, void *ctx, const char *fmt, va_list ap)
{
	struct log_ctx *lc = ctx;
	char buf[256];
	unsigned int line, col;
	char *p;

	if (level < CYAML_LOG_ERROR)
		return;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = '\0';
	p = strstr(buf, "(line: ");
	if (p && sscanf(p, "(line: %u, column: %u)", &line, &col) == 2) {
		if (!lc->line) {
			lc->line = line;
			lc->col = col;
		}
		return;
	}
	if (!lc->msg[0]) {
		p = strncmp(buf, "Load: ", 6) ? buf : buf + 6;
		snprintf(lc->msg, sizeof(lc->msg), "%s", p);
	}
}

/*
 * Where a value sits in the text: follow path (mapping keys, or "#N" for
 * the Nth item of a sequence) through libyaml's events. 1-based line and
 * column of the node; 0 and 0 if it is not there.
 */
struct frame {
	bool map, want_key;
	int idx;
	char key[64];
};

static bool at_path(const struct frame *f, int depth, const char *const *path, int want)
{
	char item[16];
	int i;

	if (depth != want)
		return false;
	for (i = 0; i < depth; i++) {
		snprintf(item, sizeof(item), "#%d", f[i].idx);
		if (strcmp(f[i].map ? f[i].key : item, path[i]))
			return false;
	}
	return true;
}

/* A value node ended: its parent now wants a key (mapping) or its next item (sequence). */
static void value_done(struct frame *f, int depth)
{
	if (!depth)
		return;
	if (f[depth - 1].map)
		f[depth - 1].want_key = true;
	else
		f[depth - 1].idx++;
}

static void locate(const char *text, size_t len, const char *const *path, int want,
		   const char *key, unsigned int *line, unsigned int *col)
{
	struct frame f[16];
	yaml_parser_t parser;
	yaml_event_t ev;
	int depth = 0;
	bool done = false;

	*line = *col = 0;
	if (!yaml_parser_initialize(&parser))
		return;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	while (!done && yaml_parser_parse(&parser, &ev)) {
		bool start = ev.type == YAML_SCALAR_EVENT || ev.type == YAML_MAPPING_START_EVENT ||
			     ev.type == YAML_SEQUENCE_START_EVENT;

		if (ev.type == YAML_STREAM_END_EVENT) {
			done = true;
		} else if (start && depth && f[depth - 1].map && f[depth - 1].want_key) {
			if (ev.type == YAML_SCALAR_EVENT)
				snprintf(f[depth - 1].key, sizeof(f[0].key), "%s", ev.data.scalar.value);
			f[depth - 1].want_key = false;
			/* looking for a key by name: the first one that has it */
			if (key && ev.type == YAML_SCALAR_EVENT && !strcmp((char *)ev.data.scalar.value, key)) {
				*line = ev.start_mark.line + 1;
				*col = ev.start_mark.column + 1;
				done = true;
			}
		} else if (start) {
			if (!key && at_path(f, depth, path, want)) {
				*line = ev.start_mark.line + 1;
				*col = ev.start_mark.column + 1;
				done = true;
			} else if (ev.type == YAML_SCALAR_EVENT) {
				value_done(f, depth);
			} else if (depth < 16) {
				f[depth].map = ev.type == YAML_MAPPING_START_EVENT;
				f[depth].want_key = true;
				f[depth].idx = 0;
				f[depth].key[0] = '\0';
				depth++;
			}
		} else if ((ev.type == YAML_MAPPING_END_EVENT || ev.type == YAML_SEQUENCE_END_EVENT) && depth) {
			depth--;
			value_done(f, depth);
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
}

struct loader {
	const char *text, *name;
	size_t len;
	char *err;
	size_t errlen;
};

static int fail(struct loader *ld, const char *const *path, int depth, const char *fmt, ...)
{
	unsigned int line, col;
	char what[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	locate(ld->text, ld->len, path, depth, NULL, &line, &col);
	snprintf(ld->err, ld->errlen, "%s:%u:%u: %s", ld->name, line, col, what);
	return -EINVAL;
}

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

int bm_policy_load(const char *text, size_t len, const char *name, const char *tenant,
		   const char *tool, struct bm_policy *out, char *err, size_t errlen)
{
	struct loader ld = { text, name, len, err, errlen };
	struct log_ctx lc = { 0 };
	const cyaml_config_t cfg = {
		.log_fn = on_log, .log_ctx = &lc, .mem_fn = cyaml_mem,
		.log_level = CYAML_LOG_ERROR, .flags = CYAML_CFG_NO_ALIAS,
	};
	const char *path[8] = { 0 };
	struct y_policy *y = NULL;
	char idx[16];
	bool matched = false;
	unsigned int i;
	cyaml_err_t cerr;
	int ret = 0;

	bm_policy_default(out);
	cerr = cyaml_load_data((const uint8_t *)text, len, &cfg, &policy_schema, (cyaml_data_t **)&y, NULL);
	if (cerr != CYAML_OK) {
		/* libcyaml places an unknown key at its mapping; find the key itself */
		if (!strncmp(lc.msg, "Unexpected key: ", 16))
			locate(text, len, NULL, 0, lc.msg + 16, &lc.line, &lc.col);
		snprintf(err, errlen, "%s:%u:%u: %s", name, lc.line, lc.col,
			 lc.msg[0] ? lc.msg : cyaml_strerror(cerr));
		return -EINVAL;
	}
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
	cyaml_free(&cfg, &policy_schema, y, 0);
	return ret;
}

int bm_policy_load_file(const char *path, const char *tenant, const char *tool,
			struct bm_policy *out, char *err, size_t errlen)
{
	char *buf;
	size_t n;
	FILE *f;
	int ret;

	f = fopen(path, "re");
	if (!f)
		return -errno;
	buf = malloc(POLICY_MAX_BYTES + 1);
	if (!buf) {
		fclose(f);
		return -ENOMEM;
	}
	n = fread(buf, 1, POLICY_MAX_BYTES + 1, f);
	ret = ferror(f) ? -EIO : 0;
	fclose(f);
	if (!ret && n > POLICY_MAX_BYTES) {
		snprintf(err, errlen, "%s:1:1: larger than %d bytes", path, POLICY_MAX_BYTES);
		ret = -EINVAL;
	}
	if (!ret)
		ret = bm_policy_load(buf, n, path, tenant, tool, out, err, errlen);
	free(buf);
	return ret;
}

const char *bm_policy_tool(const char *argv0)
{
	const char *slash = argv0 ? strrchr(argv0, '/') : NULL;

	return slash ? slash + 1 : argv0;
}
