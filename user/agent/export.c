// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * /metrics, written by hand. A cell per (tenant, tool) pair holds all its
 * histograms and counters in flat arrays; cells and label values sit in
 * open-addressing tables, so a scrape walks arrays into one growing buffer:
 * no allocation per sample, label values escaped once, when first seen.
 *
 * Series bound. T = max_tenants + 1, K = max_tools + 1 ("other" included),
 * P = T * K pairs, R = MAX_REASONS + 1 = 17 reasons, S = MAX_STEPS + 1 = 9
 * steps, B = 214 buckets (+Inf included) over the nine dimensions; each
 * bucket, _sum and _count is a series:
 *   window and peak histograms     P * 2 * (B + 2 * 9) = 464 P
 *   effects_total, actions_total   P * (R + S * R)     = 170 P
 *   per tenant (budgets, use)      T * 38: 5 use counters, 5 x 3 per budget
 *                                  (remaining, exhausted, exhaustions), 6
 *                                  refusal reasons, 6 throttle causes, 5 gauges,
 *                                  fair yields
 *   node-wide                      11, and one per pod container running
 *   total <= 634 * (max_tenants + 1) * (max_tools + 1) + 38 * (max_tenants + 1) + 11
 *            + max_running
 * Run-queue delay is in seconds, not bm_window_display()'s ms: promtool's
 * linter rejects non-base time units.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/export.h"
#include "meter/window.h"

#define NB_TOTAL 214		/* sum over fams[] of hi - lo + 2 (+Inf included) */
#define LABEL_MAX 255		/* escaped label values are cut here, on a UTF-8 boundary */
#define EX_ID_MAX 64		/* escaped; ids are BM_NAME_MAX (64); OpenMetrics allows 128 */
#define MAX_REASONS 16		/* distinct reasons (both counters) before "other" */
#define MAX_STEPS 8		/* distinct ladder steps before "other" */

/* Exported bounds of each dimension: 2^lo .. 2^hi in the family's unit, then +Inf. */
static const struct fam {
	const char *unit, *help;
	int lo, hi;
} fams[BM_DIM__MAX] = {
	[BM_DIM_CPU] = { "cpu_cores", "CPU use, in cores (CPU time / window)", -7, 7 },
	[BM_DIM_NET] = { "net_tx_bytes_per_second", "inet bytes sent, per second", 10, 36 },
	[BM_DIM_RUNQ] = { "runq_delay_seconds", "run-queue wait, in seconds", -14, 0 },
	[BM_DIM_IO_READ] = { "io_read_bytes_per_second", "block I/O read, bytes per second", 10, 36 },
	[BM_DIM_IO_WRITE] = { "io_write_bytes_per_second", "block I/O written, bytes per second",
			      10, 36 },
	[BM_DIM_IO_OPS] = { "io_ops_per_second", "block I/O operations (bios), per second", 0, 20 },
	[BM_DIM_DIRTY] = { "dirty_bytes_per_second", "page cache dirtied, bytes per second", 10, 36 },
	[BM_DIM_MEM] = { "memory_bytes", "resident memory, in bytes", 12, 40 },
	[BM_DIM_PIDS] = { "pids", "live tasks", 0, 16 },
};

/* The tables: label values (escaped; [0] is "other"), then cells. */
enum { T_TENANT, T_TOOL, T_REASON, T_STEP, T_CELLS, T__MAX };

struct ktab {			/* u64 key -> dense index, values in insertion order */
	uint64_t *key;
	void **val;		/* owned */
	uint32_t n, cap, mask;
	uint32_t *slot;		/* index + 1, 0 = free; 2 * cap of them: at most half full */
};

struct hist {
	uint64_t b[NB_TOTAL];	/* per bucket, not cumulative; dimension d from off[d] */
	double sum[BM_DIM__MAX];
	uint64_t count[BM_DIM__MAX];	/* 0: dimension d is not written */
};

struct cell {			/* everything of one (tenant, tool) pair */
	struct hist h[2];	/* [0] windows, [1] effect peaks */
	double ex_v[NB_TOTAL];	/* the last effect that fell in each peak bucket, */
	char ex_id[NB_TOTAL][EX_ID_MAX + 1];	/* its peak and its escaped id */
	uint64_t ended[MAX_REASONS + 1];
	uint64_t acts[MAX_STEPS + 1][MAX_REASONS + 1];
	char lab[];		/* tenant="...",tool="..." */
};

struct buf {
	char *p;		/* NULL once out of memory */
	size_t len, cap;
};

/* A tenant's budgets and use, by its label's index (T_TENANT); seen: set since the last reset. */
struct tenant_row {
	struct bm_export_tenant v;
	bool seen;
};

struct bm_export {
	struct ktab t[T__MAX];		/* cells: tenant << 32 | tool -> struct cell */
	struct tenant_row *ten;	/* by tenant label index */
	uint32_t n_ten;
	uint32_t max_tenants, max_tools;
	struct bm_export_node node;
	uint64_t dropped;		/* updates not recorded: no memory, or invalid */
	unsigned int off[BM_DIM__MAX + 1];
	double le[NB_TOTAL];
	char le_str[2][NB_TOTAL][40];	/* [openmetrics]: "1" or "1.0" */
};

/* Double the arrays of t, its slots emptied. */
static int ktab_grow(struct ktab *t)
{
	uint32_t cap = t->cap ? t->cap * 2 : 16;
	uint64_t *key = realloc(t->key, cap * sizeof(*key));
	void **val = key ? realloc(t->val, cap * sizeof(*val)) : NULL;
	uint32_t *slot = val ? calloc(2 * cap, sizeof(*slot)) : NULL;

	t->key = key ? key : t->key;
	t->val = val ? val : t->val;
	if (!slot)
		return -ENOMEM;
	free(t->slot);
	t->slot = slot;
	t->mask = 2 * cap - 1;
	t->cap = cap;
	return 0;
}

/*
 * Index of k (Fibonacci hashing, linear probing): if absent, -1, or with v
 * the index v was added at, or -ENOMEM.
 */
static long ktab_get(struct ktab *t, uint64_t k, void *v)
{
	uint32_t h, i, n = t->n;

	if (v && n == t->cap) {
		if (ktab_grow(t))
			return -ENOMEM;
		for (t->n = 0, i = 0; i < n; i++)	/* back in at the same indexes */
			ktab_get(t, t->key[i], t->val[i]);
	}
	h = (uint32_t)((k ^ k >> 29) * 0x9e3779b97f4a7c15ULL >> 32) & t->mask;
	for (; t->slot && t->slot[h]; h = (h + 1) & t->mask)
		if (t->key[t->slot[h] - 1] == k)
			return t->slot[h] - 1;
	if (!v)
		return -1;
	t->key[t->n] = k;
	t->val[t->n] = v;
	t->slot[h] = ++t->n;
	return t->n - 1;
}

/*
 * Escape s (NULL: "") as a label value into dst, at most max bytes (and a
 * NUL); invalid UTF-8 (RFC 3629: overlongs, surrogates, past U+10FFFF, cut
 * short) as '?': one bad label value fails the whole scrape.
 */
static size_t label(char *dst, const char *s, size_t max)
{
	const unsigned char *u = (const unsigned char *)(s ? s : "");
	unsigned int c, n, i, esc, lo, hi;
	char *o = dst;

	for (; (c = *u); u += n ? n : 1) {
		n = c < 0x80 ? 1 : c < 0xc2 ? 0 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : c < 0xf5 ? 4 : 0;
		lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
		hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
		if (n > 1 && (u[1] < lo || u[1] > hi))
			n = 0;
		for (i = 2; i < n; i++)
			if ((u[i] & 0xc0) != 0x80)
				n = 0;
		esc = c == '\\' || c == '"' || c == '\n';
		if ((size_t)(o - dst) + (n ? n + esc : 1) > max)
			break;
		if (!n) {
			*o++ = '?';
		} else if (esc) {
			*o++ = '\\';
			*o++ = c == '\n' ? 'n' : c;
		} else {
			memcpy(o, u, n);
			o += n;
		}
	}
	*o = '\0';
	return o - dst;
}

/* Index of label value raw in t; "other" (0) past limit values, on a hash collision or ENOMEM. */
static uint32_t name_get(struct bm_export *e, struct ktab *t, uint32_t limit, const char *raw)
{
	uint64_t k = 0xcbf29ce484222325ULL;	/* FNV-1a */
	char x[LABEL_MAX + 1], *v;
	long i;

	label(x, raw, LABEL_MAX);
	for (i = 0; x[i]; i++)
		k = (k ^ (unsigned char)x[i]) * 0x100000001b3ULL;
	i = ktab_get(t, k, NULL);
	if (i >= 0)
		return strcmp(t->val[i], x) ? 0 : i;
	if (t->n > limit)
		return 0;
	v = strdup(x);
	i = v ? ktab_get(t, k, v) : -ENOMEM;
	if (i >= 0)
		return i;
	free(v);
	e->dropped++;
	return 0;
}

/* The cell of (tenant, tool) after folding, created on first use; NULL on no memory. */
static struct cell *cell_get(struct bm_export *e, const char *tenant, const char *tool)
{
	uint32_t ti = name_get(e, &e->t[T_TENANT], e->max_tenants, tenant);
	uint32_t ki = name_get(e, &e->t[T_TOOL], e->max_tools, tool);
	const char *a = e->t[T_TENANT].val[ti], *b = e->t[T_TOOL].val[ki];
	uint64_t k = (uint64_t)ti << 32 | ki;
	long i = ktab_get(&e->t[T_CELLS], k, NULL);
	struct cell *c;

	if (i >= 0)
		return e->t[T_CELLS].val[i];
	c = calloc(1, sizeof(*c) + strlen(a) + strlen(b) + sizeof("tenant=\"\",tool=\"\""));
	if (c)
		sprintf(c->lab, "tenant=\"%s\",tool=\"%s\"", a, b);
	if (c && ktab_get(&e->t[T_CELLS], k, c) >= 0)
		return c;
	free(c);
	e->dropped++;
	return NULL;
}

/* The cell an update goes to, or NULL; an invalid update (!ok) is counted in dropped. */
static struct cell *cell_for(struct bm_export *e, const char *tenant, const char *tool, bool ok)
{
	if (e && !ok)
		e->dropped++;
	return e && ok ? cell_get(e, tenant, tool) : NULL;
}

/*
 * A log2 bucket's exclusive upper edge 2^k goes to the smallest bound le at
 * or above it, compared as edge * num <= le * den in raw units: powers of two
 * times integers below 2^53, exact doubles, so rounding never shows a window
 * below its value. Bucket 62 also holds all values from 2^62 up: +Inf.
 */
void bm_export__windows(struct bm_export *e, const char *tenant, const char *tool, enum bm_dim d,
			const uint64_t hist[BM_HIST_BUCKETS], uint64_t window_ns, double sum_raw)
{
	struct cell *c = cell_for(e, tenant, tool, hist && window_ns && d < BM_DIM__MAX);
	bool rate = d == BM_DIM_NET || d == BM_DIM_IO_READ || d == BM_DIM_IO_WRITE ||
		    d == BM_DIM_IO_OPS || d == BM_DIM_DIRTY;
	double num = rate ? 1e9 : 1, den = d == BM_DIM_RUNQ ? 1e9 : 1;
	struct hist *h = c ? &c->h[0] : NULL;
	unsigned int k, j;

	if (!c)
		return;
	/* CPU buckets are cores x 2^BM_CPU_HIST_SHIFT already; bytes per window become per second */
	if (d == BM_DIM_CPU)
		den = (double)(1U << BM_CPU_HIST_SHIFT);
	else if (rate)
		den = (double)window_ns;
	for (k = 0, j = e->off[d]; k < BM_HIST_BUCKETS; k++) {
		if (!hist[k])
			continue;
		while (j < e->off[d + 1] - 1 &&
		       (k >= 62 || bm_window_bucket_upper(k) * num > e->le[j] * den))
			j++;	/* only ever up: the edges grow with k */
		h->b[j] += hist[k];
		h->count[d] += hist[k];
	}
	h->sum[d] += bm_window_display(d, sum_raw, window_ns) / (d == BM_DIM_RUNQ ? 1e3 : 1);
}

void bm_export__peak(struct bm_export *e, const char *tenant, const char *tool, enum bm_dim d,
		     double peak, const char *effect_id)
{
	struct cell *c = cell_for(e, tenant, tool, !isnan(peak) && d < BM_DIM__MAX);
	unsigned int j;

	if (!c)
		return;
	peak = peak > 0 ? peak / (d == BM_DIM_RUNQ ? 1e3 : 1) : 0;	/* runq: ms in, s out */
	for (j = e->off[d]; j < e->off[d + 1] - 1 && peak > e->le[j]; j++)
		;
	c->h[1].b[j]++;
	c->h[1].count[d]++;
	c->h[1].sum[d] += peak;
	c->ex_v[j] = peak;
	label(c->ex_id[j], effect_id, EX_ID_MAX);
}

void bm_export__ended(struct bm_export *e, const char *tenant, const char *tool, const char *reason)
{
	struct cell *c = cell_for(e, tenant, tool, true);

	if (c)
		c->ended[name_get(e, &e->t[T_REASON], MAX_REASONS, reason)]++;
}

void bm_export__action(struct bm_export *e, const char *tenant, const char *tool, const char *step,
		       const char *reason)
{
	struct cell *c = cell_for(e, tenant, tool, true);

	if (c)
		c->acts[name_get(e, &e->t[T_STEP], MAX_STEPS, step)]
		       [name_get(e, &e->t[T_REASON], MAX_REASONS, reason)]++;
}

void bm_export__node(struct bm_export *e, const struct bm_export_node *n)
{
	if (e && n)
		e->node = *n;
}

void bm_export__tenants_reset(struct bm_export *e)
{
	uint32_t i;

	for (i = 0; e && i < e->n_ten; i++)
		e->ten[i].seen = false;
}

static double lowest(double x, double y)
{
	return isnan(x) ? y : isnan(y) || x < y ? x : y;
}

void bm_export__tenant(struct bm_export *e, const char *tenant, const struct bm_export_tenant *v)
{
	struct tenant_row *r, *p;
	uint32_t i;
	int d;

	if (!e || !v)
		return;
	i = name_get(e, &e->t[T_TENANT], e->max_tenants, tenant);
	if (i >= e->n_ten) {
		p = realloc(e->ten, (i + 1) * sizeof(*p));
		if (!p) {
			e->dropped++;
			return;
		}
		memset(p + e->n_ten, 0, (i + 1 - e->n_ten) * sizeof(*p));
		e->ten = p;
		e->n_ten = i + 1;
	}
	r = &e->ten[i];
	if (!r->seen) {
		r->v = *v;
		r->seen = true;
		return;
	}
	/* folded into "other": counters and counts add up */
	for (d = 0; d < BM_BUD__MAX; d++) {
		r->v.used[d] += v->used[d];
		r->v.remaining[d] = lowest(r->v.remaining[d], v->remaining[d]);
		r->v.exhausted[d] =
			r->v.exhausted[d] > v->exhausted[d] ? r->v.exhausted[d] : v->exhausted[d];
		r->v.exhaustions[d] += v->exhaustions[d];
	}
	for (d = 0; d <= BM_BUD__MAX; d++) {
		r->v.refused[d] += v->refused[d];
		r->v.throttles[d] += v->throttles[d];
	}
	r->v.throttled = r->v.throttled > v->throttled ? r->v.throttled : v->throttled;
	r->v.yielding = r->v.yielding > v->yielding ? r->v.yielding : v->yielding;
	r->v.fair_yields += v->fair_yields;
	r->v.running += v->running;
	r->v.queued += v->queued;
	r->v.pressure_share += v->pressure_share;
}

static void put(struct buf *b, const char *s, size_t n)
{
	char *p;

	while (b->p && b->len + n + 1 > b->cap) {
		p = realloc(b->p, b->cap *= 2);
		if (!p)
			free(b->p);
		b->p = p;
	}
	if (!b->p)
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

/* Append strings up to NULL: the exposition is concatenation, so no printf. */
static void __attribute__((sentinel)) cat(struct buf *b, ...)
{
	const char *s;
	va_list ap;

	va_start(ap, b);
	while ((s = va_arg(ap, const char *)))
		put(b, s, strlen(s));
	va_end(ap);
}

static char *u64s(char s[24], uint64_t v)
{
	char *p = s + 23;

	*p = '\0';
	do
		*--p = '0' + v % 10;
	while (v /= 10);
	return p;
}

/* Shortest of %.15g/%.17g that reads back; OpenMetrics wants "1.0", not "1". */
static char *dbls(char s[40], double v, bool om)
{
	if (isinf(v))
		return strcpy(s, v > 0 ? "+Inf" : "-Inf");
	snprintf(s, 40, "%.15g", v);
	if (strtod(s, NULL) != v)
		snprintf(s, 40, "%.17g", v);
	if (om && !strpbrk(s, ".en"))
		strcat(s, ".0");
	return s;
}

/* # HELP and # TYPE; a counter is declared as name_total in 0.0.4, as name in OpenMetrics. */
static void head(struct buf *b, const char *name, const char *type, const char *help, bool om)
{
	const char *sfx = !om && !strcmp(type, "counter") ? "_total" : "";

	cat(b, "# HELP ", name, sfx, " ", help, "\n# TYPE ", name, sfx, " ", type, "\n", NULL);
}

static void render_hist(struct bm_export *e, struct buf *b, bool peak, enum bm_dim d, bool om)
{
	char name[64], v[40], n[24];
	const struct hist *h;
	const struct cell *c;
	unsigned int i, j;
	uint64_t cum;

	snprintf(name, sizeof(name), "burstmeter_%s_%s", peak ? "effect_peak" : "window",
		 fams[d].unit);
	cat(b, "# HELP ", name,
	    peak ? " Peak window of each effect: " : " Windows of effects: ", fams[d].help,
	    ".\n# TYPE ", name, " histogram\n", NULL);
	for (i = 0; i < e->t[T_CELLS].n; i++) {
		c = e->t[T_CELLS].val[i];
		h = &c->h[peak];
		if (!h->count[d])
			continue;
		for (cum = 0, j = e->off[d]; j < e->off[d + 1]; j++) {
			cat(b, name, "_bucket{", c->lab, ",le=\"", e->le_str[om][j], "\"} ",
			    u64s(n, cum += h->b[j]), NULL);
			if (om && peak && c->ex_id[j][0])
				cat(b, " # {effect_id=\"", c->ex_id[j], "\"} ",
				    dbls(v, c->ex_v[j], om), NULL);
			put(b, "\n", 1);
		}
		cat(b, name, "_sum{", c->lab, "} ", dbls(v, h->sum[d], om), "\n", name, "_count{",
		    c->lab, "} ", u64s(n, h->count[d]), "\n", NULL);
	}
}

static void render_counters(struct bm_export *e, struct buf *b, bool om)
{
	char **steps = (char **)e->t[T_STEP].val, **reasons = (char **)e->t[T_REASON].val;
	unsigned int i, s, r;
	const struct cell *c;
	char n[24];

	head(b, "burstmeter_effects", "counter", "Effects that ended, by termination reason.", om);
	for (i = 0; i < e->t[T_CELLS].n; i++)
		for (c = e->t[T_CELLS].val[i], r = 0; r < e->t[T_REASON].n; r++)
			if (c->ended[r])
				cat(b, "burstmeter_effects_total{", c->lab, ",reason=\"",
				    reasons[r], "\"} ", u64s(n, c->ended[r]), "\n", NULL);
	head(b, "burstmeter_actions", "counter", "Steps the ladder took, by step and reason.", om);
	for (i = 0; i < e->t[T_CELLS].n; i++)
		for (c = e->t[T_CELLS].val[i], s = 0; s < e->t[T_STEP].n; s++)
			for (r = 0; r < e->t[T_REASON].n; r++)
				if (c->acts[s][r])
					cat(b, "burstmeter_actions_total{", c->lab, ",step=\"",
					    steps[s], "\",reason=\"", reasons[r], "\"} ",
					    u64s(n, c->acts[s][r]), "\n", NULL);
}

/* Where a tenant family's value is, and its label (budget, reason, cause) if one per budget. */
static const struct tfam {
	const char *name, *type, *help, *label;
	size_t off;		/* of a double, or of the first of BM_BUD__MAX (+ 1 with extra) */
	int dim;		/* >= 0: used[dim] alone; -1: one per budget */
	const char *extra;	/* label value of [BM_BUD__MAX], NULL: none */
} tfams[] = {
#define TOFF(m) offsetof(struct bm_export_tenant, m)
	{ "tenant_cpu_seconds", "counter",
	  "CPU time of the tenant's effects, charged as windows close.", NULL, TOFF(used),
	  BM_BUD_CPU, NULL },
	{ "tenant_memory_byte_seconds", "counter",
	  "Resident memory the tenant's effects held, times seconds.", NULL, TOFF(used), BM_BUD_MEM,
	  NULL },
	{ "tenant_net_tx_bytes", "counter", "Bytes the tenant's effects sent on inet sockets.",
	  NULL, TOFF(used), BM_BUD_NET, NULL },
	{ "tenant_io_bytes", "counter",
	  "Bytes the tenant's effects read and wrote on block devices (bios).", NULL, TOFF(used),
	  BM_BUD_IO, NULL },
	{ "tenant_launches", "counter", "Effects of the tenant admitted.", NULL, TOFF(used),
	  BM_BUD_LAUNCH, NULL },
	{ "tenant_budget_remaining_ratio", "gauge",
	  "Tokens left in a budget's bucket over its burst (below 0: debt).", "budget",
	  TOFF(remaining), -1, NULL },
	{ "tenant_budget_exhausted", "gauge",
	  "1 while a budget is exhausted: queued calls held, POSTs refused.", "budget",
	  TOFF(exhausted), -1, NULL },
	{ "tenant_budget_exhaustions", "counter", "Times a budget became exhausted.", "budget",
	  TOFF(exhaustions), -1, NULL },
	{ "tenant_refusals", "counter",
	  "Submissions refused with 429, by the budget or the queue share.", "reason",
	  TOFF(refused), -1, "queue_share" },
	{ "tenant_throttles", "counter", "CPU caps put on the tenant's running effects, by cause.",
	  "cause", TOFF(throttles), -1, "node_pressure" },
	{ "tenant_throttled", "gauge",
	  "1 while the tenant's running effects are held to a CPU cap.", NULL, TOFF(throttled), -2,
	  NULL },
	{ "tenant_yielding", "gauge",
	  "1 while the tenant's running effects are in the idle CPU class (over their fair share "
	  "or their budget).",
	  NULL, TOFF(yielding), -2, NULL },
	{ "tenant_fair_yields", "counter",
	  "Times the tenant went over its fair share of the CPUs while others ran, and yielded.",
	  NULL, TOFF(fair_yields), -2, NULL },
	{ "tenant_running", "gauge", "Effects of the tenant running now.", NULL, TOFF(running), -2,
	  NULL },
	{ "tenant_queued", "gauge", "Effects of the tenant waiting for admission.", NULL,
	  TOFF(queued), -2, NULL },
	{ "tenant_pressure_share", "gauge",
	  "The tenant's share of what the node is short of: memory held, else CPU of the last "
	  "second.",
	  NULL, TOFF(pressure_share), -2, NULL },
#undef TOFF
};

static void render_tenants(struct bm_export *e, struct buf *b, bool om)
{
	char name[64], v[40];
	const struct tfam *f;
	const double *x;
	unsigned int k, i;
	int d;

	for (k = 0; k < sizeof(tfams) / sizeof(tfams[0]); k++) {
		f = &tfams[k];
		snprintf(name, sizeof(name), "burstmeter_%s", f->name);
		head(b, name, f->type, f->help, om);
		for (i = 0; i < e->n_ten; i++) {
			const char *t = e->t[T_TENANT].val[i],
				   *sfx = *f->type == 'c' ? "_total" : "";

			if (!e->ten[i].seen)
				continue;
			x = (const double *)((const char *)&e->ten[i].v + f->off);
			if (f->dim != -1) {
				cat(b, name, sfx, "{tenant=\"", t, "\"} ",
				    dbls(v, x[f->dim < 0 ? 0 : f->dim], 0), "\n", NULL);
				continue;
			}
			for (d = 0; d < BM_BUD__MAX + (f->extra ? 1 : 0); d++)
				if (!isnan(x[d]))
					cat(b, name, sfx, "{tenant=\"", t, "\",", f->label, "=\"",
					    d < BM_BUD__MAX ? bm_budget_name(d) : f->extra, "\"} ",
					    dbls(v, x[d], 0), "\n", NULL);
		}
	}
}

/* Node-wide values, as doubles: counts stay exact below 2^53 and print without ".0". */
static void render_node(struct bm_export *e, struct buf *b, bool om)
{
	const struct bm_export_node *n = &e->node;
	const struct {
		const char *name, *type, *help;
		double v;
	} m[] = {
		{ "effects_running", "gauge", "Effects running now.", n->running },
		{ "effects_queued", "gauge", "Effects waiting for admission.", n->queued },
		{ "meter_lost_records", "counter", "Ring-buffer records lost.", n->lost_records },
		{ "meter_map_full", "counter", "Map updates that found it full.", n->map_full },
		{ "meter_late", "counter", "Contributions older than the window ring.", n->late },
		{ "meter_reads", "counter",
		  "Meters read for timelines and streams (idle ones are not).", n->meter_reads },
		{ "bpf_run_seconds", "counter", "CPU time of our BPF code.", n->bpf_run_ns / 1e9 },
		{ "bpf_runs", "counter", "Runs of our BPF programs.", n->bpf_run_cnt },
		{ "export_dropped", "counter", "Updates invalid or lost (ENOMEM).", e->dropped },
		{ "node_over_pressure", "gauge", "1 while the node is beyond its admission bounds.",
		  n->over_pressure },
		{ "node_pressure_episodes", "counter",
		  "Times the node went beyond its admission bounds.", n->pressure_episodes },
	};
	char name[64], v[40];
	unsigned int i;

	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		snprintf(name, sizeof(name), "burstmeter_%s", m[i].name);
		head(b, name, m[i].type, m[i].help, om);
		cat(b, name, *m[i].type == 'c' ? "_total " : " ", dbls(v, m[i].v, 0), "\n", NULL);
	}
	head(b, "burstmeter_pod_effects_running", "gauge",
	     "Tool calls running now, by the pod container that made them.", om);
	for (i = 0; i < n->n_pods; i++) {
		char t[LABEL_MAX + 1], u[LABEL_MAX + 1], c[LABEL_MAX + 1];

		label(t, n->pods[i].tenant, LABEL_MAX);
		label(u, n->pods[i].uid, LABEL_MAX);
		label(c, n->pods[i].container, LABEL_MAX);
		cat(b, "burstmeter_pod_effects_running{tenant=\"", t, "\",pod_uid=\"", u,
		    "\",container_id=\"", c, "\"} ", dbls(v, n->pods[i].running, 0), "\n", NULL);
	}
}

int bm_export__render(struct bm_export *e, bool openmetrics, char **out, size_t *len)
{
	struct buf b = { .cap = 1 << 16 };
	unsigned int i;

	if (!e || !out || !len)
		return -EINVAL;
	b.p = malloc(b.cap);
	for (i = 0; i < 2 * BM_DIM__MAX; i++)
		render_hist(e, &b, i >= BM_DIM__MAX, i % BM_DIM__MAX, openmetrics);
	render_counters(e, &b, openmetrics);
	render_tenants(e, &b, openmetrics);
	render_node(e, &b, openmetrics);
	if (openmetrics)
		put(&b, "# EOF\n", 6);
	if (!b.p)
		return -ENOMEM;
	*out = b.p;
	*len = b.len;
	return 0;
}

struct bm_export *bm_export__new(unsigned int max_tenants, unsigned int max_tools)
{
	struct bm_export *e = calloc(1, sizeof(*e));
	unsigned int d, o;
	int x;

	if (!e)
		return NULL;
	e->max_tenants = max_tenants;
	e->max_tools = max_tools;
	for (d = 0, o = 0; d < BM_DIM__MAX; d++) {
		e->off[d] = o;
		for (x = fams[d].lo; x <= fams[d].hi + 1 && o < NB_TOTAL; x++, o++) {
			e->le[o] = x <= fams[d].hi ? ldexp(1, x) : INFINITY;
			dbls(e->le_str[0][o], e->le[o], false);
			dbls(e->le_str[1][o], e->le[o], true);
		}
	}
	e->off[d] = o;
	for (d = 0; d < T_CELLS; d++)
		name_get(e, &e->t[d], 0, "other");	/* index 0 */
	if (o != NB_TOTAL || x != fams[BM_DIM__MAX - 1].hi + 2 || e->dropped) {
		errno = e->dropped ? ENOMEM : EINVAL;
		bm_export__free(e);
		return NULL;
	}
	return e;
}

void bm_export__free(struct bm_export *e)
{
	unsigned int i;

	for (i = 0; e && i < T__MAX; i++) {
		while (e->t[i].n)
			free(e->t[i].val[--e->t[i].n]);	/* names and cells are owned */
		free(e->t[i].key);
		free(e->t[i].val);
		free(e->t[i].slot);
	}
	if (e)
		free(e->ten);
	free(e);
}
