// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * burstmeter advise: the store's outcomes, per tool kind, as percentiles
 * and as the ceilings and requests to ask for next time (advise.h says
 * how). The store is read directly, so it works with the agent stopped;
 * the agent may be running (SQLite WAL: a reader does not stop it).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agent/podspec.h"
#include "base/common.h"
#include "cli/advise.h"

enum fig {
	F_CPU, F_MEM, F_PIDS, F_NET, F_WALL, F_IO_READ, F_IO_WRITE, F_IO_OPS, F_DIRTY, F_NET_TOTAL, F_STORAGE,
	F__MAX
};

/*
 * What is read of each run: the figure's name in the report, where it is in
 * the outcome, the ceiling reason that stops it, the limit. held: a limit
 * that slows a run down (cpu.max, io.max), never ends it: a run this close
 * to it was held there. A policy's I/O level is reads plus writes, its
 * io_ceiling the read or the write figure, whichever was the larger.
 */
static const struct {
	const char *name, *key, *sect, *reason, *limit;
	bool held;
} figs[F__MAX] = {
	[F_CPU] = { "cpu_cores", "cpu_cores", "peak", "cpu_ceiling", "cpu_cores", true },
	[F_MEM] = { "memory_bytes", "memory_bytes", "peak", "memory_ceiling", "memory_bytes" },
	[F_PIDS] = { "pids", "pids", "peak", "pids_ceiling", "pids" },
	[F_NET] = { "net_tx_bytes_per_s", "net_tx_bytes_per_s", "peak", "net_ceiling", NULL },
	[F_WALL] = { "wall_seconds", "wall_seconds", NULL, "deadline", "timeout_seconds" },
	[F_IO_READ] = { "io_read_bytes_per_s", "io_read_bytes_per_s", "peak", "io_ceiling", "io_read_bps", true },
	[F_IO_WRITE] = { "io_write_bytes_per_s", "io_write_bytes_per_s", "peak", "io_ceiling", "io_write_bps",
			 true },
	[F_IO_OPS] = { "io_ops_per_s", "io_ops_per_s", "peak", NULL, "io_iops", true },
	[F_DIRTY] = { "dirty_bytes_per_s", "dirty_bytes_per_s", "peak", NULL, NULL },
	[F_NET_TOTAL] = { "net_tx_bytes", "net_tx_bytes", "totals", NULL, NULL },
	/* measured only where it had a limit (its /tmp of a size): runs without one are no sample */
	[F_STORAGE] = { "ephemeral_storage_bytes", "peak_bytes", "storage", "storage_ceiling",
			"ephemeral_storage_bytes" },
};

/* A held limit (figs[].held): a run this close to it was held there. */
#define HELD_AT_CEILING 0.95

struct vec {
	double *v;
	size_t n, cap;
};

struct group {
	char tool[256];
	unsigned int runs;
	json_t *reasons;		/* termination.reason -> runs */
	struct vec fig[F__MAX];		/* of the runs that ran (a window or more) */
	struct vec avg_cpu, avg_mem;
	unsigned int hits[F__MAX];	/* runs stopped (or held) at that ceiling */
	double hit_at[F__MAX];		/* the highest ceiling hit */
};

struct collect {
	struct group *g;
	size_t n, cap;
	const char *tool;
};

static int push(struct vec *a, double v)
{
	double *p;

	if (a->n == a->cap) {
		p = realloc(a->v, (a->cap ? 2 * a->cap : 64) * sizeof(*p));
		if (!p)
			return -ENOMEM;
		a->v = p;
		a->cap = a->cap ? 2 * a->cap : 64;
	}
	a->v[a->n++] = v;
	return 0;
}

static struct group *group_of(struct collect *c, const char *tool)
{
	struct group *p;
	size_t i;

	for (i = 0; i < c->n; i++)
		if (!strcmp(c->g[i].tool, tool))
			return &c->g[i];
	if (c->n == c->cap) {
		p = realloc(c->g, (c->cap ? 2 * c->cap : 16) * sizeof(*p));
		if (!p)
			return NULL;
		c->g = p;
		c->cap = c->cap ? 2 * c->cap : 16;
	}
	p = &c->g[c->n];
	memset(p, 0, sizeof(*p));
	snprintf(p->tool, sizeof(p->tool), "%s", tool);
	p->reasons = json_object();
	if (!p->reasons)
		return NULL;
	c->n++;
	return p;
}

static double num(const json_t *o, const char *sect, const char *key)
{
	return json_number_value(json_object_get(sect ? json_object_get(o, sect) : o, key));
}

/*
 * The ceiling a run was stopped at: the outcome's limit, else the highest
 * threshold its actions name; for a policy's I/O level (io_ceiling: not
 * io.max, which is a limit) the actions' first.
 */
static double ceiling_of(const json_t *o, int f, bool by_reason)
{
	double at = figs[f].limit ? num(o, "limits", figs[f].limit) : 0, act = 0;
	const json_t *x;
	size_t i;

	json_array_foreach(json_object_get(o, "actions"), i, x)
		if (!strcmp(json_string_value(json_object_get(x, "reason")) ?: "", figs[f].reason ?: "") &&
		    num(x, NULL, "threshold") > act)
			act = num(x, NULL, "threshold");
	if (by_reason && (f == F_IO_READ || f == F_IO_WRITE) && act > 0)
		return act;
	return at > 0 ? at : act;
}

static int take_run(struct group *g, const json_t *o)
{
	const char *reason = json_string_value(json_object_get(json_object_get(o, "termination"), "reason"));
	json_t *n = json_object_get(g->reasons, reason ? reason : "unknown"), *v;
	double lim, peak;
	int f, err = 0;
	bool hit, by_reason;

	g->runs++;
	if (json_object_set_new(g->reasons, reason ? reason : "unknown",
				json_integer(json_integer_value(n) + 1)))
		return -ENOMEM;
	/* one that never ran (not found, cancelled while queued) used nothing: not a sample */
	if (num(o, "totals", "windows") < 1)
		return 0;
	for (f = 0; f < F__MAX && !err; f++) {
		v = json_object_get(figs[f].sect ? json_object_get(o, figs[f].sect) : o, figs[f].key);
		if (f == F_STORAGE && !json_is_number(v))
			continue;
		peak = json_number_value(v);
		err = push(&g->fig[f], peak);
		lim = figs[f].limit ? num(o, "limits", figs[f].limit) : 0;
		by_reason = reason && figs[f].reason && !strcmp(reason, figs[f].reason);
		/* reads plus writes: the larger of the two was what crossed */
		if (by_reason && f == F_IO_READ)
			by_reason = peak > num(o, "peak", figs[F_IO_WRITE].key);
		else if (by_reason && f == F_IO_WRITE)
			by_reason = peak >= num(o, "peak", figs[F_IO_READ].key);
		hit = by_reason || (figs[f].held && lim > 0 && peak >= HELD_AT_CEILING * lim);
		if (!hit)
			continue;
		g->hits[f]++;
		lim = ceiling_of(o, f, by_reason);
		g->hit_at[f] = lim > g->hit_at[f] ? lim : g->hit_at[f];
	}
	err = err ?: push(&g->avg_cpu, num(o, "average", "cpu_cores"));
	return err ?: push(&g->avg_mem, num(o, "average", "memory_bytes"));
}

static int row_fn(const struct bm_effect_row *row, void *ctx)
{
	struct collect *c = ctx;
	struct group *g;
	json_t *o;
	int err;

	if (!bm_state_final(row->state) || !row->outcome_json || (c->tool && strcmp(row->tool, c->tool)))
		return 0;
	o = json_loads(row->outcome_json, 0, NULL);
	if (!json_is_object(o)) {
		json_decref(o);
		return 0;	/* the store checks json_valid: not ours to judge further */
	}
	g = group_of(c, row->tool);
	err = g ? take_run(g, o) : -ENOMEM;
	json_decref(o);
	return err;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank: the ceil(p/100 n)-th smallest of n sorted values. */
static double pct(const struct vec *a, double p)
{
	size_t k = (size_t)ceil(p / 100.0 * (double)a->n);

	return a->n ? a->v[(k ? k : 1) - 1] : 0;
}

static json_t *number(double v, int f)
{
	return f == F_MEM || f == F_PIDS || f == F_NET_TOTAL || f == F_STORAGE ? json_integer((json_int_t)v)
										 : json_real(v);
}

static json_t *fig_json(struct group *g, int f)
{
	struct vec *a = &g->fig[f];

	if (a->n)
		qsort(a->v, a->n, sizeof(*a->v), cmp_double);
	return json_pack("{s:I, s:o, s:o, s:o, s:o, s:I, s:o}", "runs", (json_int_t)a->n,
			 "p50", number(pct(a, 50), f), "p95", number(pct(a, 95), f), "p99",
			 number(pct(a, 99), f), "max", number(pct(a, 100), f), "ceiling_hits",
			 (json_int_t)g->hits[f], "ceiling",
			 g->hits[f] && g->hit_at[f] > 0 ? number(g->hit_at[f], f) : json_null());
}

static uint64_t round_up(double v, uint64_t step)
{
	uint64_t n = (uint64_t)ceil(v / (double)step);

	return (n ? n : 1) * step;
}

/* Enough runs at a ceiling that their p99 is the ceiling's, not their need. */
static bool censored(const struct group *g, int f)
{
	return g->hits[f] && 100.0 * g->hits[f] >= BM_ADVISE_CENSORED_PCT * (double)g->fig[f].n;
}

#define MIB (1024ULL * 1024)

struct rec {
	uint64_t cpu_lim, cpu_req, mem_lim, mem_req, pids, timeout_s;	/* 0: unknown */
	uint64_t io_read_bps, io_write_bps, io_iops, storage;		/* 0: unknown or none used */
	json_t *notes;
};

static void note_hits(struct rec *r, const struct group *g, int f, const char *what, const char *unit,
		      double scale)
{
	char buf[256];

	if (!g->hits[f])
		return;
	snprintf(buf, sizeof(buf), "%s: %u of %zu runs hit their %s ceiling%s%.6g%s; what they needed above "
		 "it is unknown%s", what, g->hits[f], g->fig[f].n, what, g->hit_at[f] > 0 ? " of " : "",
		 g->hit_at[f] / scale, g->hit_at[f] > 0 ? unit : "",
		 censored(g, f) ? ": no limit is recommended; raise it and run again to measure" :
		 ": the limit is from the runs below it");
	json_array_append_new(r->notes, json_string(buf));
}

static void recommend(const struct group *g, struct rec *r)
{
	memset(r, 0, sizeof(*r));
	r->notes = json_array();
	if (!g->fig[F_CPU].n)
		return;
	if (!censored(g, F_CPU))
		r->cpu_lim = round_up(pct(&g->fig[F_CPU], 99) * BM_ADVISE_HEADROOM * 1000, 100);
	r->cpu_req = round_up(pct(&g->avg_cpu, 95) * 1000, 10);
	if (!censored(g, F_MEM))
		r->mem_lim = round_up(pct(&g->fig[F_MEM], 99) * BM_ADVISE_HEADROOM, 16 * MIB);
	r->mem_req = round_up(pct(&g->avg_mem, 95), 4 * MIB);
	if (!censored(g, F_PIDS))
		r->pids = round_up(pct(&g->fig[F_PIDS], 99) * BM_ADVISE_HEADROOM, 1);
	if (!censored(g, F_WALL))
		r->timeout_s = round_up(pct(&g->fig[F_WALL], 99) * BM_ADVISE_HEADROOM, 1);
	/* I/O and storage only where the runs did any: a limit on none is no advice */
	if (!censored(g, F_IO_READ) && pct(&g->fig[F_IO_READ], 99) > 0)
		r->io_read_bps = round_up(pct(&g->fig[F_IO_READ], 99) * BM_ADVISE_HEADROOM, MIB);
	if (!censored(g, F_IO_WRITE) && pct(&g->fig[F_IO_WRITE], 99) > 0)
		r->io_write_bps = round_up(pct(&g->fig[F_IO_WRITE], 99) * BM_ADVISE_HEADROOM, MIB);
	if (!censored(g, F_IO_OPS) && pct(&g->fig[F_IO_OPS], 99) > 0)
		r->io_iops = round_up(pct(&g->fig[F_IO_OPS], 99) * BM_ADVISE_HEADROOM, 1);
	r->io_iops = r->io_iops > 1000000 ? 1000000 : r->io_iops;
	if (g->fig[F_STORAGE].n && !censored(g, F_STORAGE) && pct(&g->fig[F_STORAGE], 99) > 0)
		r->storage = round_up(pct(&g->fig[F_STORAGE], 99) * BM_ADVISE_HEADROOM, 16 * MIB);
	/* a request above its limit could never be granted */
	r->cpu_req = r->cpu_lim && r->cpu_req > r->cpu_lim ? r->cpu_lim : r->cpu_req;
	r->mem_req = r->mem_lim && r->mem_req > r->mem_lim ? r->mem_lim : r->mem_req;
	/* nearest rank: ceil(0.99 n) is n itself below 100 runs */
	if (g->fig[F_CPU].n < 100) {
		char buf[128];

		snprintf(buf, sizeof(buf), "%zu runs: with fewer than 100, each p99 is the largest of them",
			 g->fig[F_CPU].n);
		json_array_append_new(r->notes, json_string(buf));
	}
	note_hits(r, g, F_CPU, "cpu", " cores", 1);
	note_hits(r, g, F_MEM, "memory", " MiB", MIB);
	note_hits(r, g, F_PIDS, "pids", " tasks", 1);
	note_hits(r, g, F_WALL, "timeout", " s", 1);
	note_hits(r, g, F_NET, "net", " B/s", 1);
	note_hits(r, g, F_IO_READ, "io read", " MiB/s", MIB);
	note_hits(r, g, F_IO_WRITE, "io write", " MiB/s", MIB);
	note_hits(r, g, F_IO_OPS, "io ops", " ops/s", 1);
	note_hits(r, g, F_STORAGE, "ephemeral storage", " MiB", MIB);
}

/* The same figures as `run` flags, the request's sandbox and the pod's resources. */
static json_t *forms(const struct rec *r)
{
	json_t *flags = json_array(), *sb = json_object(), *req = json_object(), *lim = json_object();
	char a[64], b[64];

#define FLAG(f, ...) (snprintf(a, sizeof(a), __VA_ARGS__), json_array_append_new(flags, json_string(f)), \
		      json_array_append_new(flags, json_string(a)))
	if (r->cpu_lim) {
		FLAG("--cpu", "%.1f", r->cpu_lim / 1000.0);
		json_object_set_new(sb, "cpu_limit", json_string(bm_k8s_cpu(r->cpu_lim, b, sizeof(b))));
		json_object_set_new(lim, "cpu", json_string(b));
	}
	if (r->mem_lim) {
		FLAG("--memory", "%lluM", (unsigned long long)(r->mem_lim / MIB));
		json_object_set_new(sb, "memory_limit", json_string(bm_k8s_bytes(r->mem_lim, b, sizeof(b))));
		json_object_set_new(lim, "memory", json_string(b));
	}
	if (r->pids) {
		FLAG("--pids", "%llu", (unsigned long long)r->pids);
		json_object_set_new(sb, "pids_limit", json_integer((json_int_t)r->pids));
	}
	if (r->timeout_s) {
		FLAG("--timeout", "%llu", (unsigned long long)r->timeout_s);
		json_object_set_new(sb, "timeout_seconds", json_integer((json_int_t)r->timeout_s));
	}
	if (r->io_read_bps) {
		FLAG("--io-read-bps", "%lluM", (unsigned long long)(r->io_read_bps / MIB));
		json_object_set_new(sb, "io_read_bps", json_string(bm_k8s_bytes(r->io_read_bps, b, sizeof(b))));
	}
	if (r->io_write_bps) {
		FLAG("--io-write-bps", "%lluM", (unsigned long long)(r->io_write_bps / MIB));
		json_object_set_new(sb, "io_write_bps", json_string(bm_k8s_bytes(r->io_write_bps, b, sizeof(b))));
	}
	if (r->io_iops) {
		FLAG("--io-iops", "%llu", (unsigned long long)r->io_iops);
		json_object_set_new(sb, "io_iops", json_integer((json_int_t)r->io_iops));
	}
	if (r->storage) {
		FLAG("--tmp-size", "%lluM", (unsigned long long)(r->storage / MIB));
		json_object_set_new(sb, "max_ephemeral_storage", json_string(bm_k8s_bytes(r->storage, b, sizeof(b))));
	}
#undef FLAG
	if (r->cpu_req) {
		json_object_set_new(sb, "cpu_request", json_string(bm_k8s_cpu(r->cpu_req, b, sizeof(b))));
		json_object_set_new(req, "cpu", json_string(b));
	}
	if (r->mem_req) {
		json_object_set_new(sb, "memory_request",
				    json_string(bm_k8s_bytes(r->mem_req, b, sizeof(b))));
		json_object_set_new(req, "memory", json_string(b));
	}
	/* the pod: what `burstmeter podspec` reads of the sandbox (no pids field; a run's own deadline) */
	return json_pack("{s:o, s:o, s:{s:o, s:o, s:[s, s, s, s, s]}}", "run_flags", flags, "sandbox", sb,
			 "pod", "requests", req, "limits", lim, "podspec_fields", "sandbox.cpu_request",
			 "sandbox.cpu_limit", "sandbox.memory_request", "sandbox.memory_limit",
			 "sandbox.max_ephemeral_storage");
}

static json_t *opt_int(uint64_t v)
{
	return v ? json_integer((json_int_t)v) : json_null();
}

static json_t *group_json(struct group *g)
{
	json_t *dims = json_object(), *rec, *o;
	struct rec r;
	int f;

	/* fig_json() sorts each dimension's values: recommend() reads them sorted */
	for (f = 0; f < F__MAX; f++)
		json_object_set_new(dims, figs[f].name, fig_json(g, f));
	if (g->avg_cpu.n) {
		qsort(g->avg_cpu.v, g->avg_cpu.n, sizeof(double), cmp_double);
		qsort(g->avg_mem.v, g->avg_mem.n, sizeof(double), cmp_double);
	}
	recommend(g, &r);
	rec = json_pack("{s:s, s:I, s:{s:o, s:o}, s:{s:o, s:o}, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "method",
			"limits: p99 of the runs' peaks (timeout: of their wall time) x 1.25, rounded up "
			"(CPU 0.1 core, memory 16 MiB, tasks 1, 1 s, I/O 1 MiB/s and 1 op/s, storage 16 MiB); "
			"requests: p95 of their averages, rounded up (CPU 0.01 core, memory 4 MiB)",
			"runs", (json_int_t)g->fig[F_CPU].n,
			"cpu_milli", "limit", opt_int(r.cpu_lim), "request", opt_int(r.cpu_req),
			"memory_bytes", "limit", opt_int(r.mem_lim), "request", opt_int(r.mem_req),
			"pids_limit", opt_int(r.pids), "timeout_seconds", opt_int(r.timeout_s),
			"io_read_bps", opt_int(r.io_read_bps), "io_write_bps", opt_int(r.io_write_bps),
			"io_iops", opt_int(r.io_iops), "max_ephemeral_storage_bytes", opt_int(r.storage),
			"notes", r.notes);
	if (rec)
		json_object_update_new(rec, forms(&r));
	o = json_pack("{s:s, s:I, s:O, s:o, s:o}", "tool", g->tool, "runs", (json_int_t)g->runs, "reasons",
		      g->reasons, "dims", dims, "recommend", rec);
	return o;
}

static int cmp_runs(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	return x->runs != y->runs ? (x->runs < y->runs ? 1 : -1) : strcmp(x->tool, y->tool);
}

json_t *bm_advise_report(struct bm_store *st, const char *tenant, const char *tool)
{
	struct collect c = { .tool = tool };
	json_t *tools = json_array(), *g;
	size_t i;
	int f, err;

	err = tools ? bm_store__list(st, tenant, -1, UINT_MAX, row_fn, &c) : -ENOMEM;
	if (!err && c.n)
		qsort(c.g, c.n, sizeof(*c.g), cmp_runs);
	for (i = 0; i < c.n; i++) {
		if (!err) {
			g = group_json(&c.g[i]);
			err = !g || json_array_append_new(tools, g) ? -ENOMEM : 0;
		}
		for (f = 0; f < F__MAX; f++)
			free(c.g[i].fig[f].v);
		free(c.g[i].avg_cpu.v);
		free(c.g[i].avg_mem.v);
		json_decref(c.g[i].reasons);
	}
	free(c.g);
	if (err) {
		json_decref(tools);
		errno = -err;
		return NULL;
	}
	return json_pack("{s:o, s:o, s:o}", "tenant", tenant ? json_string(tenant) : json_null(), "tool",
			 tool ? json_string(tool) : json_null(), "tools", tools);
}
