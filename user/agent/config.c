// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config.h"
#include "base/cgroup_node.h"
#include "base/common.h"
#include "base/yamldoc.h"
#include "bm_abi.h"

#define CFG_MAX_BYTES (64 * 1024)

void bm_agent_cfg_default(struct bm_agent_cfg *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->socket, sizeof(c->socket), "%s", BM_AGENT_SOCKET);
	c->socket_mode = 0660;
	snprintf(c->state_dir, sizeof(c->state_dir), "%s", BM_AGENT_STATE_DIR);
	snprintf(c->pin_dir, sizeof(c->pin_dir), "%s", BM_AGENT_PIN_DIR);
	snprintf(c->metrics, sizeof(c->metrics), "%s", BM_AGENT_METRICS);
	c->window_ns = BM_WINDOW_NS_DEFAULT;
	/* a 2-core node runs a few effects at once; more would only queue in the run queue */
	c->max_running = 64;
	c->max_queued = 256;
	c->tenant_max_running = 16;
	c->admit_cpu_pressure = 80;
	snprintf(c->admit_cpu_pressure_file, sizeof(c->admit_cpu_pressure_file), "/proc/pressure/cpu");
	c->admit_mem_available = 256ULL << 20;
	snprintf(c->admit_meminfo_file, sizeof(c->admit_meminfo_file), "/proc/meminfo");
	/* /metrics series <= 406 x (tenants + 1) x (tools + 1) + 9: 16 x 16 keeps it near 117k */
	c->max_tools = 16;
	c->max_metric_tenants = 16;
	/* outside systemd's dynamic (61184-65519) and container (1879048192+) ranges */
	c->uid_min = 900000;
	c->uid_max = 965535;
	c->max_log_bytes = 16ULL << 20;
	c->retention_ns = 7 * 24 * 3600 * BM_NSEC_PER_SEC;
	c->retention_effects = 10000;
	/* a local user holds a few connections at once: more is one starving the others */
	c->max_conns_per_uid = 64;
	c->max_conns = 512;
	/*
	 * 1 MiB of ring buffer (~18,700 records): 10,000 effects ending together
	 * send one each within a few hundred ms, and 256 KiB lost half of them
	 * while the agent finished the first ones.
	 */
	c->ring_bytes = 1u << 20;
	c->idle_timeout_s = 30;
	/* no budget until one is configured; every tenant weighs the same */
	c->budget.weight = 1;
	c->fair_half_life_ns = 10 * BM_NSEC_PER_SEC;
	c->fair_cpu_yield = true;
}

struct y_tenant {
	char *uid, *tenant;
};

struct y_bucket {
	char *rate, *burst;
};

/* budgets.default, and each of budgets.tenants (which alone names a tenant) */
struct y_budget {
	char *tenant, *weight;
	struct y_bucket *dim[BM_BUD__MAX];
};

struct y_budgets {
	char *half_life;
	char *fair_cpu;
	struct y_budget *def;
	struct y_budget *tenants;
	unsigned int tenants_count;
};

struct y_cfg {
	char *socket, *socket_mode, *state_dir, *pin_dir, *metrics, *policy, *cgroup_parent;
	char *kubepods_root, *pod_tenants;
	char *window_ms, *max_running, *max_queued, *tenant_max_running;
	char *admit_cpu_pressure, *admit_cpu_pressure_file, *admit_mem_available, *max_tools;
	char *admit_meminfo_file;
	char *max_metric_tenants;
	char *uid_min, *uid_max, *max_log_bytes, *retention, *retention_effects, *max_conns_per_uid;
	char *max_conns, *idle_timeout, *ring_buffer, *pressure_action, *enforcement;
	struct y_tenant *tenants;
	unsigned int tenants_count;
	struct y_budgets *budgets;
};

#define STR(name) CYAML_FIELD_STRING_PTR(#name, CYAML_FLAG_OPTIONAL, struct y_cfg, name, 0, PATH_MAX - 1)

static const cyaml_schema_field_t tenant_fields[] = {
	CYAML_FIELD_STRING_PTR("uid", CYAML_FLAG_DEFAULT, struct y_tenant, uid, 1, 16),
	CYAML_FIELD_STRING_PTR("tenant", CYAML_FLAG_DEFAULT, struct y_tenant, tenant, 1, 64),
	CYAML_FIELD_END,
};

static const cyaml_schema_value_t tenant_schema = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, struct y_tenant, tenant_fields),
};

static const cyaml_schema_field_t bucket_fields[] = {
	CYAML_FIELD_STRING_PTR("rate", CYAML_FLAG_OPTIONAL, struct y_bucket, rate, 0, 64),
	CYAML_FIELD_STRING_PTR("burst", CYAML_FLAG_OPTIONAL, struct y_bucket, burst, 0, 64),
	CYAML_FIELD_END,
};

#define BUCKET(d, name)                                                                          \
	CYAML_FIELD_MAPPING_PTR(name, CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, struct y_budget, \
				dim[d], bucket_fields)

static const cyaml_schema_field_t budget_fields[] = {
	CYAML_FIELD_STRING_PTR("tenant", CYAML_FLAG_OPTIONAL, struct y_budget, tenant, 0, 64),
	CYAML_FIELD_STRING_PTR("weight", CYAML_FLAG_OPTIONAL, struct y_budget, weight, 0, 64),
	BUCKET(BM_BUD_CPU, "cpu_seconds"),
	BUCKET(BM_BUD_MEM, "memory_gib_seconds"),
	BUCKET(BM_BUD_NET, "net_tx_bytes"),
	BUCKET(BM_BUD_IO, "io_bytes"),
	BUCKET(BM_BUD_LAUNCH, "launches"),
	CYAML_FIELD_END,
};

static const cyaml_schema_value_t budget_schema = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, struct y_budget, budget_fields),
};

static const cyaml_schema_field_t budgets_fields[] = {
	CYAML_FIELD_STRING_PTR("half_life", CYAML_FLAG_OPTIONAL, struct y_budgets, half_life, 0,
			       64),
	CYAML_FIELD_STRING_PTR("fair_cpu", CYAML_FLAG_OPTIONAL, struct y_budgets, fair_cpu, 0, 64),
	CYAML_FIELD_MAPPING_PTR("default", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL,
				struct y_budgets, def, budget_fields),
	CYAML_FIELD_SEQUENCE("tenants", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, struct y_budgets,
			     tenants, &budget_schema, 0, BM_AGENT_MAX_TENANTS),
	CYAML_FIELD_END,
};

static const cyaml_schema_field_t cfg_fields[] = {
	STR(socket), STR(socket_mode), STR(state_dir), STR(pin_dir), STR(metrics), STR(policy),
	STR(cgroup_parent), STR(kubepods_root), STR(pod_tenants),
	STR(window_ms), STR(max_running), STR(max_queued), STR(tenant_max_running),
	STR(admit_cpu_pressure), STR(admit_cpu_pressure_file), STR(admit_mem_available), STR(max_tools),
	STR(admit_meminfo_file), STR(max_metric_tenants),
	STR(uid_min), STR(uid_max), STR(max_log_bytes), STR(retention), STR(retention_effects),
	STR(max_conns_per_uid), STR(max_conns), STR(idle_timeout), STR(ring_buffer),
	STR(pressure_action), STR(enforcement),
	CYAML_FIELD_SEQUENCE("tenants", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, struct y_cfg, tenants,
			     &tenant_schema, 0, BM_AGENT_MAX_TENANTS),
	CYAML_FIELD_MAPPING_PTR("budgets", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, struct y_cfg,
				budgets, budgets_fields),
	CYAML_FIELD_END,
};

static const cyaml_schema_value_t cfg_schema = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, struct y_cfg, cfg_fields),
};

struct ctx {
	const char *text, *name;
	size_t len;
	char *err;
	size_t errlen;
};

#define FAIL(x, key, ...)                                                                 \
	bm_yaml_fail((x)->text, (x)->len, (x)->name, (const char *const[]){ key }, 1, (x)->err, \
		     (x)->errlen, __VA_ARGS__)

static int path_field(struct ctx *x, const char *key, const char *v, char *out, size_t len)
{
	if (!v)
		return 0;
	if ((*v && *v != '/') || strlen(v) >= len)
		return FAIL(x, key, "invalid %s '%s': expected an absolute path", key, v);
	snprintf(out, len, "%s", v);
	return 0;
}

static int uint_field(struct ctx *x, const char *key, const char *v, uint64_t min, uint64_t max,
		      unsigned int *out)
{
	uint64_t n;

	if (!v)
		return 0;
	if (bm_parse_u64(v, min, max, &n))
		return FAIL(x, key, "invalid %s '%s': expected an integer in %llu-%llu", key, v,
			    (unsigned long long)min, (unsigned long long)max);
	*out = (unsigned int)n;
	return 0;
}

static int apply_tenants(struct ctx *x, const struct y_cfg *y, struct bm_agent_cfg *c)
{
	char idx[16];
	uint64_t uid;
	unsigned int i;

	for (i = 0; i < y->tenants_count; i++) {
		const struct y_tenant *t = &y->tenants[i];

		snprintf(idx, sizeof(idx), "#%u", i);
		if (bm_parse_u64(t->uid, 0, 4294967294ULL, &uid))
			return bm_yaml_fail(x->text, x->len, x->name, (const char *const[]){ "tenants", idx, "uid" },
					    3, x->err, x->errlen, "invalid tenants[%u].uid '%s'", i, t->uid);
		if (!bm_valid_name(t->tenant))
			return bm_yaml_fail(x->text, x->len, x->name,
					    (const char *const[]){ "tenants", idx, "tenant" }, 3, x->err, x->errlen,
					    "invalid tenants[%u].tenant '%s': expected [A-Za-z0-9._-], 1-64", i,
					    t->tenant);
		c->tenants[i].uid = (uid_t)uid;
		snprintf(c->tenants[i].tenant, sizeof(c->tenants[i].tenant), "%s", t->tenant);
	}
	c->n_tenants = y->tenants_count;
	return 0;
}

/* Where a budget's key is: budgets.default.KEY..., or budgets.tenants.#N.KEY... */
struct bpath {
	const char *p[6];
	int n;
};

/* "NAME:LINE:COL: invalid budgets....KEY[.KEY2] " and the rest (fmt), for the node there. */
static int bfail(struct ctx *x, const struct bpath *at, const char *k1, const char *k2,
		 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int bfail(struct ctx *x, const struct bpath *at, const char *k1, const char *k2,
		 const char *fmt, ...)
{
	struct bpath p = *at;
	char where[128], rest[256];
	va_list ap;
	int i;

	p.p[p.n++] = k1;
	if (k2)
		p.p[p.n++] = k2;
	for (i = 0, where[0] = '\0'; i < p.n; i++)
		snprintf(where + strlen(where), sizeof(where) - strlen(where), "%s%s", i ? "." : "",
			 p.p[i]);
	va_start(ap, fmt);
	vsnprintf(rest, sizeof(rest), fmt, ap);
	va_end(ap);
	return bm_yaml_fail(x->text, x->len, x->name, p.p, p.n, x->err, x->errlen, "invalid %s%s",
			    where, rest);
}

/* One bucket's value: bytes as a size for net and I/O, else a decimal (in thousandths). */
static int bucket_value(enum bm_bud d, const char *v, double *out)
{
	uint64_t n;

	if (d == BM_BUD_NET || d == BM_BUD_IO) {
		if (bm_parse_size(v, 1, 1ULL << 50, &n))
			return -EINVAL;
		*out = (double)n;
		return 0;
	}
	if (bm_parse_milli(v, 1, 1000000000000ULL, &n))
		return -EINVAL;
	*out = (double)n / 1000;
	return 0;
}

static const char *const bucket_units[BM_BUD__MAX] = {
	[BM_BUD_CPU] = "CPU-seconds (rate: cores), e.g. 0.5",
	[BM_BUD_MEM] = "GiB-seconds (rate: GiB held), e.g. 2",
	[BM_BUD_NET] = "a size in bytes (rate: per second), e.g. 10Mi",
	[BM_BUD_IO] = "a size in bytes (rate: per second), e.g. 10Mi",
	[BM_BUD_LAUNCH] = "effects (rate: per second), e.g. 5",
};

/* y over out (the defaults, or a tenant's copy of them). */
static int apply_budget(struct ctx *x, const struct bpath *at, const struct y_budget *y,
			struct bm_budget_cfg *out)
{
	const char *name;
	uint64_t w;
	int d;

	if (y->weight) {
		if (bm_parse_milli(y->weight, 1, 1000000, &w))
			return bfail(x, at, "weight", NULL,
				     " '%s': expected a decimal from 0.001 to 1000, e.g. 2",
				     y->weight);
		out->weight = (double)w / 1000;
	}
	for (d = 0; d < BM_BUD__MAX; d++) {
		const struct y_bucket *b = y->dim[d];
		struct bm_bucket_cfg k = { 0 };

		if (!b)
			continue;
		name = bm_budget_name(d);
		if (!b->rate || !b->burst)
			return bfail(x, at, name, NULL, ": expected both a rate and a burst");
		if (bucket_value(d, b->rate, &k.rate))
			return bfail(x, at, name, "rate", " '%s': expected %s", b->rate,
				     bucket_units[d]);
		if (bucket_value(d, b->burst, &k.burst))
			return bfail(x, at, name, "burst", " '%s': expected %s", b->burst,
				     bucket_units[d]);
		/* less than a second of its rate would empty within one read of the meter */
		if (k.burst < k.rate)
			return bfail(x, at, name, "burst",
				     " '%s': expected at least one second of the rate (%s)",
				     b->burst, b->rate);
		out->b[d] = k;
	}
	return 0;
}

static int apply_budgets(struct ctx *x, const struct y_budgets *y, struct bm_agent_cfg *c)
{
	struct bpath at = { { "budgets", "default" }, 2 };
	char idx[BM_AGENT_MAX_TENANTS][16];
	unsigned int i, j;
	int err;

	if (!y)
		return 0;
	if (y->half_life && bm_parse_duration_ns(y->half_life, 100 * BM_NSEC_PER_MSEC,
						 3600 * BM_NSEC_PER_SEC, &c->fair_half_life_ns))
		return bfail(x, &(struct bpath){ { "budgets" }, 1 }, "half_life", NULL,
			     " '%s': expected a duration 100ms..1h, e.g. 10s", y->half_life);
	if (y->fair_cpu && strcmp(y->fair_cpu, "yield") && strcmp(y->fair_cpu, "off"))
		return bfail(x, &(struct bpath){ { "budgets" }, 1 }, "fair_cpu", NULL,
			     " '%s': expected yield or off", y->fair_cpu);
	if (y->fair_cpu)
		c->fair_cpu_yield = !strcmp(y->fair_cpu, "yield");
	if (y->def && y->def->tenant)
		return bfail(x, &at, "tenant", NULL,
			     " '%s': only an entry of budgets.tenants names a tenant",
			     y->def->tenant);
	err = y->def ? apply_budget(x, &at, y->def, &c->budget) : 0;
	for (i = 0; !err && i < y->tenants_count; i++) {
		const struct y_budget *t = &y->tenants[i];
		struct bm_tenant_budget *o = &c->budgets[i];

		snprintf(idx[i], sizeof(idx[i]), "#%u", i);
		at = (struct bpath){ { "budgets", "tenants", idx[i] }, 3 };
		if (!t->tenant)
			return bm_yaml_fail(x->text, x->len, x->name, at.p, at.n, x->err, x->errlen,
					    "invalid budgets.tenants.%s: expected a tenant: NAME",
					    idx[i]);
		if (!bm_valid_name(t->tenant))
			return bfail(x, &at, "tenant", NULL,
				     " '%s': expected the tenant's name, "
				     "[A-Za-z0-9._-], 1-64",
				     t->tenant);
		for (j = 0; j < i; j++)
			if (!strcmp(c->budgets[j].tenant, t->tenant))
				return bfail(x, &at, "tenant", NULL, " '%s': named twice",
					     t->tenant);
		snprintf(o->tenant, sizeof(o->tenant), "%s", t->tenant);
		o->b = c->budget;
		err = apply_budget(x, &at, t, &o->b);
	}
	c->n_budgets = err ? 0 : y->tenants_count;
	return err;
}

static int apply(struct ctx *x, const struct y_cfg *y, struct bm_agent_cfg *c)
{
	unsigned int window_ms = (unsigned int)(c->window_ns / BM_NSEC_PER_MSEC);
	unsigned int pressure = (unsigned int)c->admit_cpu_pressure;
	unsigned long mode;	/* as strtoul() returns it: 040000000660 must not wrap to 0660 */
	int err = 0;
	char *end;

	err = err ?: path_field(x, "socket", y->socket, c->socket, sizeof(c->socket));
	err = err ?: path_field(x, "state_dir", y->state_dir, c->state_dir, sizeof(c->state_dir));
	err = err ?: path_field(x, "pin_dir", y->pin_dir, c->pin_dir, sizeof(c->pin_dir));
	err = err ?: path_field(x, "policy", y->policy, c->policy, sizeof(c->policy));
	if (!err && y->admit_cpu_pressure_file && !*y->admit_cpu_pressure_file)
		err = FAIL(x, "admit_cpu_pressure_file", "invalid admit_cpu_pressure_file '': expected an "
			   "absolute path, e.g. /proc/pressure/cpu");
	err = err ?: path_field(x, "admit_cpu_pressure_file", y->admit_cpu_pressure_file,
				c->admit_cpu_pressure_file, sizeof(c->admit_cpu_pressure_file));
	if (!err && y->admit_meminfo_file && !*y->admit_meminfo_file)
		err = FAIL(x, "admit_meminfo_file", "invalid admit_meminfo_file '': expected an "
			   "absolute path, e.g. /proc/meminfo");
	err = err ?: path_field(x, "admit_meminfo_file", y->admit_meminfo_file,
				c->admit_meminfo_file, sizeof(c->admit_meminfo_file));
	if (!err && y->socket_mode) {
		mode = strtoul(y->socket_mode, &end, 8);
		if (*end || end == y->socket_mode || mode > 0777)
			err = FAIL(x, "socket_mode", "invalid socket_mode '%s': expected octal, e.g. 0660", y->socket_mode);
		else
			c->socket_mode = (mode_t)mode;
	}
	if (!err && y->metrics) {
		if (strlen(y->metrics) >= sizeof(c->metrics) || (*y->metrics && !strchr(y->metrics, ':')))
			err = FAIL(x, "metrics", "invalid metrics '%s': expected HOST:PORT or \"\"", y->metrics);
		snprintf(c->metrics, sizeof(c->metrics), "%s", y->metrics);
	}
	err = err ?: path_field(x, "pod_tenants", y->pod_tenants, c->pod_tenants, sizeof(c->pod_tenants));
	if (!err && y->kubepods_root) {
		if (*y->kubepods_root && !bm_cgroup_valid_parent(y->kubepods_root))
			err = FAIL(x, "kubepods_root", "invalid kubepods_root '%s': expected an absolute "
				   "cgroup path, e.g. /kubelet.slice", y->kubepods_root);
		snprintf(c->kubepods_root, sizeof(c->kubepods_root), "%s", y->kubepods_root);
	}
	if (!err && y->cgroup_parent) {
		/* "" keeps the default: effects under the agent's own cgroup */
		if (*y->cgroup_parent && !bm_cgroup_valid_parent(y->cgroup_parent))
			err = FAIL(x, "cgroup_parent", "invalid cgroup_parent '%s': expected an absolute cgroup "
				   "path below the root, e.g. /burstmeter", y->cgroup_parent);
		snprintf(c->cgroup_parent, sizeof(c->cgroup_parent), "%s", y->cgroup_parent);
	}
	err = err ?: uint_field(x, "window_ms", y->window_ms, 1, 1000, &window_ms);
	err = err ?: uint_field(x, "max_running", y->max_running, 1, 100000, &c->max_running);
	err = err ?: uint_field(x, "max_queued", y->max_queued, 0, 1000000, &c->max_queued);
	err = err ?: uint_field(x, "tenant_max_running", y->tenant_max_running, 1, 100000, &c->tenant_max_running);
	err = err ?: uint_field(x, "admit_cpu_pressure", y->admit_cpu_pressure, 1, 100, &pressure);
	err = err ?: uint_field(x, "max_tools", y->max_tools, 1, 1000, &c->max_tools);
	err = err ?: uint_field(x, "max_metric_tenants", y->max_metric_tenants, 1, 1000, &c->max_metric_tenants);
	if (!err && y->admit_mem_available &&
	    bm_parse_size(y->admit_mem_available, 0, 1ULL << 50, &c->admit_mem_available))
		err = FAIL(x, "admit_mem_available", "invalid admit_mem_available '%s': expected a size, e.g. 256M",
			   y->admit_mem_available);
	err = err ?: uint_field(x, "uid_min", y->uid_min, 1, 4294967294ULL, &c->uid_min);
	err = err ?: uint_field(x, "uid_max", y->uid_max, 1, 4294967294ULL, &c->uid_max);
	if (!err && c->uid_max < c->uid_min)
		err = FAIL(x, "uid_max", "invalid uid_max %u: below uid_min %u", c->uid_max, c->uid_min);
	if (!err && y->max_log_bytes &&
	    bm_parse_size(y->max_log_bytes, 4096, 1ULL << 40, &c->max_log_bytes))
		err = FAIL(x, "max_log_bytes", "invalid max_log_bytes '%s': expected a size 4K..1T, "
			   "e.g. 16Mi", y->max_log_bytes);
	if (!err && y->retention &&
	    bm_parse_duration_ns(y->retention, BM_NSEC_PER_SEC, 3650ULL * 86400 * BM_NSEC_PER_SEC,
				 &c->retention_ns))
		err = FAIL(x, "retention", "invalid retention '%s': expected a duration 1s..3650d, "
			   "e.g. 7d", y->retention);
	err = err ?: uint_field(x, "retention_effects", y->retention_effects, 1, 100000000,
				&c->retention_effects);
	err = err ?: uint_field(x, "max_conns_per_uid", y->max_conns_per_uid, 1, 100000,
				&c->max_conns_per_uid);
	err = err ?: uint_field(x, "max_conns", y->max_conns, 8, 65536, &c->max_conns);
	err = err ?: uint_field(x, "idle_timeout", y->idle_timeout, 1, 3600, &c->idle_timeout_s);
	if (!err && y->ring_buffer) {
		uint64_t rb;

		/* the kernel's rule for a BPF ring buffer: a power of 2, pages */
		if (bm_parse_size(y->ring_buffer, 16384, 1ULL << 30, &rb) || (rb & (rb - 1)))
			err = FAIL(x, "ring_buffer", "invalid ring_buffer '%s': expected a power of 2 "
				   "from 16Ki to 1Gi, e.g. 1Mi", y->ring_buffer);
		else
			c->ring_bytes = (uint32_t)rb;
	}
	if (!err && y->pressure_action) {
		if (!strcmp(y->pressure_action, "pause"))
			c->pressure_action = BM_PRESSURE_PAUSE;
		else if (!strcmp(y->pressure_action, "throttle_top"))
			c->pressure_action = BM_PRESSURE_THROTTLE_TOP;
		else
			err = FAIL(x, "pressure_action",
				   "invalid pressure_action '%s': expected pause or "
				   "throttle_top",
				   y->pressure_action);
	}
	if (!err && y->enforcement) {
		if (!strcmp(y->enforcement, "meter"))
			c->meter_only = true;
		else if (strcmp(y->enforcement, "controllers"))
			err = FAIL(x, "enforcement",
				   "invalid enforcement '%s': expected controllers or meter",
				   y->enforcement);
	}
	c->window_ns = (uint64_t)window_ms * BM_NSEC_PER_MSEC;
	c->admit_cpu_pressure = pressure;
	err = err ?: apply_tenants(x, y, c);
	return err ?: apply_budgets(x, y->budgets, c);
}

int bm_agent_cfg_parse(struct bm_agent_cfg *c, const char *text, size_t len, const char *name,
		       char *err, size_t errlen)
{
	struct ctx x = { .text = text, .len = len, .name = name, .err = err, .errlen = errlen };
	struct y_cfg *y = NULL;
	int ret;

	if (len > CFG_MAX_BYTES) {
		snprintf(err, errlen, "%s:1:1: larger than %d bytes", name, CFG_MAX_BYTES);
		return -EINVAL;
	}
	ret = bm_yaml_load(text, len, name, &cfg_schema, (void **)&y, err, errlen);
	/* an empty config file means the defaults */
	if (!ret && y)
		ret = apply(&x, y, c);
	bm_yaml_free(&cfg_schema, y);
	return ret;
}

int bm_agent_cfg_load(struct bm_agent_cfg *c, const char *path, char *err, size_t errlen)
{
	size_t len;
	char *text;
	int ret;

	ret = bm_yaml_read(path, CFG_MAX_BYTES, &text, &len);
	if (ret == -EFBIG) {
		snprintf(err, errlen, "%s:1:1: larger than %d bytes", path, CFG_MAX_BYTES);
		return -EINVAL;
	}
	if (ret)
		return ret;
	ret = bm_agent_cfg_parse(c, text, len, path, err, errlen);
	free(text);
	return ret;
}

const struct bm_budget_cfg *bm_agent_cfg_budget(const struct bm_agent_cfg *c, const char *tenant)
{
	unsigned int i;

	for (i = 0; i < c->n_budgets; i++)
		if (!strcmp(c->budgets[i].tenant, tenant))
			return &c->budgets[i].b;
	return &c->budget;
}

void bm_agent_cfg_tenant(const struct bm_agent_cfg *c, uid_t uid, char *out, size_t len)
{
	unsigned int i;

	for (i = 0; i < c->n_tenants; i++) {
		if (c->tenants[i].uid == uid) {
			snprintf(out, len, "%s", c->tenants[i].tenant);
			return;
		}
	}
	snprintf(out, len, "uid-%u", (unsigned int)uid);
}
