// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Tenants over time (tenant.h): budgets charged window by window, caps on
 * the running effects of a tenant held, the queue's shares, the node's
 * pressure and its top contributors, and their views for the API and
 * /metrics.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/export.h"
#include "agent/tenant.h"
#include "base/common.h"
#include "effect/cpuplace.h"

#define GIB (1024.0 * 1024 * 1024)
/* After the node is back under its bounds this long, its top contributors go free again. */
#define PRESSURE_CALM_NS (2 * BM_NSEC_PER_SEC)
/* While over, one more contributor is throttled at most this often. */
#define PRESSURE_STEP_NS (BM_NSEC_PER_SEC)
/* The top contributors are named again this often while the node stays over. */
#define PRESSURE_NAME_NS (5 * BM_NSEC_PER_SEC)

static const char *const cap_reason[BM_BUD__MAX + 1] = {
	[BM_BUD_CPU] = "cpu_seconds_budget",
	[BM_BUD__MAX] = "node_pressure",
};

struct ag_tenant_count *ag_tenant_find(struct bm_agent *a, const char *name)
{
	unsigned int i;

	for (i = 0; i < a->n_tenants; i++)
		if (!strcmp(a->tenants[i].name, name))
			return &a->tenants[i];
	return NULL;
}

struct ag_tenant_count *ag_tenant(struct bm_agent *a, const char *name)
{
	struct ag_tenant_count *t = ag_tenant_find(a, name);

	if (t)
		return t;
	t = realloc(a->tenants, (a->n_tenants + 1) * sizeof(*t));
	if (!t)
		return NULL;
	a->tenants = t;
	t = &a->tenants[a->n_tenants++];
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->held_by = -1;
	bm_budget_init(&t->bud, bm_agent_cfg_budget(&a->cfg, name), a->cfg.fair_half_life_ns,
		       bm_now_ns());
	return t;
}

struct ag_tenant_count *ag_tenant_of(struct bm_agent *a, struct ag_effect *e)
{
	struct ag_tenant_count *t;

	/* entries are never removed: its place stays its tenant's */
	if (e->tenant_i && e->tenant_i <= a->n_tenants)
		return &a->tenants[e->tenant_i - 1];
	t = ag_tenant(a, e->tenant);
	if (t)
		e->tenant_i = (unsigned int)(t - a->tenants) + 1;
	return t;
}

/* ---------------------------------------------------------------- charging */

/*
 * The budget a flow dimension of the meter is charged to, and the factor
 * from its raw unit to the budget's: io_bytes is the bytes read and written
 * to block devices (bios are counted where io.max counts them, dirtied page
 * cache is not: it is written, and charged, when its bios are queued).
 */
static int flow_budget(int d, double *unit)
{
	switch (d) {
	case BM_DIM_CPU:
		*unit = 1e-9;
		return BM_BUD_CPU;
	case BM_DIM_NET:
		*unit = 1;
		return BM_BUD_NET;
	case BM_DIM_IO_READ:
	case BM_DIM_IO_WRITE:
		*unit = 1;
		return BM_BUD_IO;
	default:
		return -1;
	}
}

/* Flow d in every window before now_win: closed into wsum, too late for one, or in the ring. */
static uint64_t closed_total(const struct bm_meter *m, int d, uint64_t now_win)
{
	uint64_t v = m->wsum[d] + m->late[d];
	unsigned int i, l;

	for (i = 0; i < BM_RING; i++)
		if (d < BM_FLOWS && m->slot_win[i] && m->slot_win[i] < now_win)
			for (l = 0; l < BM_LANES; l++)
				v += m->lane[l].v[i][d];
		else if (d >= BM_FLOWS && m->io_slot_win[i] && m->io_slot_win[i] < now_win)
			for (l = 0; l < BM_LANES; l++)
				v += m->io_lane[l].v[i][d - BM_FLOWS];
	return v;
}

static double decayed(double v, uint64_t since_ns, uint64_t now_ns, uint64_t half_life_ns)
{
	return now_ns > since_ns ? v * exp2(-(double)(now_ns - since_ns) / (double)half_life_ns) :
				   v;
}

void ag_tenant_charge(struct bm_agent *a, struct ag_effect *e, const struct bm_meter *m,
		      uint64_t now_win, double level_bytes)
{
	struct ag_tenant_count *t = ag_tenant_of(a, e);
	uint64_t now = bm_now_ns(), total;
	double unit;
	int d, b;

	for (d = 0; d < BM_ALL_FLOWS; d++) {
		total = closed_total(m, d, now_win);
		/* adopted: what it used before this agent was charged to none of its buckets */
		if (e->charge_base || total <= e->charged[d]) {
			e->charged[d] = total > e->charged[d] ? total : e->charged[d];
			continue;
		}
		b = flow_budget(d, &unit);
		if (b >= 0 && t)
			bm_budget_charge(&t->bud, b, (double)(total - e->charged[d]) * unit, now);
		if (d == BM_DIM_CPU) {
			e->cpu_fast = decayed(e->cpu_fast, e->cpu_fast_ns, now, BM_BUDGET_FAST_NS) +
				      (double)(total - e->charged[d]) * 1e-9;
			e->cpu_fast_ns = now;
		}
		e->charged[d] = total;
	}
	e->charge_base = false;
	if (t)
		t->mem_held += level_bytes - e->mem_held;
	e->mem_held = level_bytes;
}

void ag_tenant_release(struct bm_agent *a, struct ag_effect *e)
{
	struct ag_tenant_count *t = ag_tenant_of(a, e);

	if (t)
		t->mem_held = t->mem_held > e->mem_held ? t->mem_held - e->mem_held : 0;
	e->mem_held = 0;
}

/* ---------------------------------------------------------------- the node */

/*
 * The node's size, as the last look at its pressure found it (CPUs and memory
 * may be hotplugged). Every path here looks at the pressure first: the
 * scheduler through ag_node_room(), the tick, ag_tenant_json(); 1 before.
 */
static unsigned int node_cpus(const struct bm_agent *a)
{
	return a->pressure.node_cpus ? a->pressure.node_cpus : 1;
}

static double node_mem_gib(const struct bm_agent *a)
{
	return a->pressure.node_mem_gib > 0 ? a->pressure.node_mem_gib : 1;
}

/*
 * PSI cpu some (avg10, and over the last second from total=), MemAvailable
 * (admit_meminfo_file: /proc/meminfo, or a stand-in); their bounds.
 */
static void pressure_read(struct bm_agent *a, uint64_t now)
{
	struct ag_pressure *p = &a->pressure;
	char buf[4096], *s;
	unsigned long long total;
	long ncpu;

	p->read_ns = now;
	if (bm_reread_file(&p->cpu_fd, a->cfg.admit_cpu_pressure_file, buf, sizeof(buf)) > 0) {
		if ((s = strstr(buf, "avg10=")))
			p->cpu_avg10 = atof(s + 6);
		if ((s = strstr(buf, "total="))) {
			total = strtoull(s + 6, NULL, 10);
			if (!p->cpu_total_ns) {
				p->cpu_total_ns = now;
				p->cpu_total_us = total;
				p->cpu_now = p->cpu_avg10;
			} else if (now - p->cpu_total_ns >= BM_NSEC_PER_SEC) {
				p->cpu_now = total > p->cpu_total_us ?
						     (double)(total - p->cpu_total_us) * 1e5 /
							     (double)(now - p->cpu_total_ns) :
						     0;
				p->cpu_total_ns = now;
				p->cpu_total_us = total;
			}
		}
	}
	/* CPUs come and go rarely: sysconf() opens a sysfs file each time */
	if (!p->node_cpus || now - p->cpus_ns >= BM_NSEC_PER_SEC) {
		ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		p->node_cpus = ncpu > 0 ? (unsigned int)ncpu : 1;
		p->cpus_ns = now;
	}
	p->mem_available = 0;
	if (bm_reread_file(&p->mem_fd, a->cfg.admit_meminfo_file, buf, sizeof(buf)) > 0) {
		if ((s = strstr(buf, "MemAvailable:")))
			p->mem_available = strtoull(s + 13, NULL, 10) * 1024;
		if ((s = strstr(buf, "MemTotal:")))
			p->node_mem_gib = (double)strtoull(s + 9, NULL, 10) * 1024 / GIB;
	}
	p->over_cpu = p->cpu_avg10 > a->cfg.admit_cpu_pressure;
	p->over_mem = p->mem_available && p->mem_available < a->cfg.admit_mem_available;
}

/* Is t held for the node's CPU pressure, and so capped? (For memory it is only held.) */
static bool pressure_cpu(const struct ag_tenant_count *t)
{
	return t->pressure && !t->pressure_mem;
}

bool ag_node_room(struct bm_agent *a)
{
	struct ag_pressure *p = &a->pressure;
	uint64_t now = bm_now_ns();
	unsigned int i;
	bool top = false;

	/* between ticks (a submission) the tick's look stands */
	if (!p->read_ns || now - p->read_ns >= AG_TICK_NS)
		pressure_read(a, now);
	if (p->over_mem)
		return false;
	if (!p->over_cpu)
		return true;
	for (i = 0; i < a->n_tenants; i++)
		top |= pressure_cpu(&a->tenants[i]);
	return a->cfg.pressure_action == BM_PRESSURE_THROTTLE_TOP && top &&
	       p->cpu_now <= a->cfg.admit_cpu_pressure;
}

/* What t contributes to the pressure: recent CPU (cores) or the memory it holds (bytes). */
static double contribution(struct ag_tenant_count *t, bool mem, uint64_t now)
{
	return mem ? t->mem_held : bm_budget_rate_fast(&t->bud, BM_BUD_CPU, now);
}

/*
 * What all tenants contribute to the dimension the node is short of (or,
 * not over, to CPU): the sum t's share of the pressure is taken over.
 */
static double pressure_sum(struct bm_agent *a, uint64_t now)
{
	double sum = 0;
	unsigned int i;

	for (i = 0; i < a->n_tenants; i++)
		sum += contribution(&a->tenants[i], a->pressure.over_mem, now);
	return sum;
}

static double pressure_share(struct bm_agent *a, struct ag_tenant_count *t, double sum,
			     uint64_t now)
{
	return sum > 0 ? contribution(t, a->pressure.over_mem, now) / sum : 0;
}

static double effect_contribution(const struct ag_effect *e, bool mem, uint64_t now)
{
	return mem ? e->mem_held :
		     decayed(e->cpu_fast, e->cpu_fast_ns, now, BM_BUDGET_FAST_NS) * M_LN2;
}

/* Keep the AG_TOP largest values (sorted down) with their ids. */
static void top_k(double *val, unsigned int *idx, unsigned int *n, double v, unsigned int id)
{
	unsigned int i;

	if (!(v > 0))
		return;
	for (i = *n; i > 0 && val[i - 1] < v; i--) {
		if (i < AG_TOP) {
			val[i] = val[i - 1];
			idx[i] = idx[i - 1];
		}
	}
	if (i >= AG_TOP)
		return;
	val[i] = v;
	idx[i] = id;
	*n += *n < AG_TOP;
}

/* Who contributed most in the last windows: the top tenants and effects, said once per look. */
static void name_top(struct bm_agent *a, uint64_t now, bool say)
{
	struct ag_pressure *p = &a->pressure;
	double tv[AG_TOP], ev[AG_TOP], sum = 0;
	unsigned int ti[AG_TOP], ei[AG_TOP], i;
	bool mem = p->over_mem;
	char line[1024];
	size_t len;

	p->n_top_tenants = p->n_top_effects = 0;
	p->named_ns = now;
	for (i = 0; i < a->n_tenants; i++) {
		sum += contribution(&a->tenants[i], mem, now);
		top_k(tv, ti, &p->n_top_tenants, contribution(&a->tenants[i], mem, now), i);
	}
	for (i = 0; i < a->n_eff; i++)
		if (a->eff[i]->started)
			top_k(ev, ei, &p->n_top_effects, effect_contribution(a->eff[i], mem, now),
			      i);
	for (i = 0; i < p->n_top_tenants; i++) {
		struct ag_tenant_count *t = &a->tenants[ti[i]];

		snprintf(p->top_tenants[i].tenant, sizeof(p->top_tenants[i].tenant), "%s", t->name);
		p->top_tenants[i].id[0] = '\0';
		p->top_tenants[i].cpu_cores = bm_budget_rate_fast(&t->bud, BM_BUD_CPU, now);
		p->top_tenants[i].memory_bytes = t->mem_held;
		p->top_tenants[i].share = sum > 0 ? tv[i] / sum : 0;
	}
	for (i = 0; i < p->n_top_effects; i++) {
		const struct ag_effect *e = a->eff[ei[i]];

		snprintf(p->top_effects[i].tenant, sizeof(p->top_effects[i].tenant), "%s",
			 e->tenant);
		snprintf(p->top_effects[i].id, sizeof(p->top_effects[i].id), "%s", e->req.id);
		p->top_effects[i].cpu_cores = effect_contribution(e, false, now);
		p->top_effects[i].memory_bytes = e->mem_held;
		p->top_effects[i].share = sum > 0 ? ev[i] / sum : 0;
	}
	if (!say)
		return;
	len = (size_t)snprintf(line, sizeof(line), "node pressure: %s; top tenants",
			       mem ? "MemAvailable below admit_mem_available" :
				     "cpu some avg10 above admit_cpu_pressure");
	for (i = 0; i < p->n_top_tenants && len < sizeof(line); i++)
		len += (size_t)snprintf(
			line + len, sizeof(line) - len, "%s %s %.2f cores %.0f MiB (%.0f%%)",
			i ? "," : "", p->top_tenants[i].tenant, p->top_tenants[i].cpu_cores,
			p->top_tenants[i].memory_bytes / (1 << 20), 100 * p->top_tenants[i].share);
	for (i = 0; i < p->n_top_effects && len < sizeof(line); i++)
		len += (size_t)snprintf(
			line + len, sizeof(line) - len, "%s %s/%s %.2f cores %.0f MiB",
			i ? "," : "; top effects", p->top_effects[i].tenant, p->top_effects[i].id,
			p->top_effects[i].cpu_cores, p->top_effects[i].memory_bytes / (1 << 20));
	bm_warn("%s (cpu avg10 %.1f%%, MemAvailable %llu MiB)", line, p->cpu_avg10,
		(unsigned long long)(p->mem_available >> 20));
}

/*
 * pressure_action throttle_top: the top contributor above its weighted
 * share (among the tenants that run something) of the dimension the node
 * is short of is held, one more each PRESSURE_STEP_NS while the node stays
 * over; all go free once it has been under its bounds for PRESSURE_CALM_NS.
 * For CPU, its running effects are capped too (want_cap()); for memory they
 * are not: a cap frees no memory, and memory.high would make them thrash.
 */
static void throttle_top(struct bm_agent *a, uint64_t now, bool over)
{
	struct ag_pressure *p = &a->pressure;
	struct ag_tenant_count *top = NULL;
	double sum = 0, wsum = 0, best = 0, v;
	uint64_t last = 0;
	unsigned int i;
	bool any = false;

	for (i = 0; i < a->n_tenants; i++) {
		struct ag_tenant_count *t = &a->tenants[i];

		any |= t->pressure;
		last = t->pressure && t->pressure_at_ns > last ? t->pressure_at_ns : last;
	}
	if (!over) {
		if (!any || now - p->under_ns < PRESSURE_CALM_NS)
			return;
		for (i = 0; any && i < a->n_tenants; i++) {
			struct ag_tenant_count *t = &a->tenants[i];

			if (t->pressure)
				bm_info("node pressure is over: tenant %s %s again", t->name,
					t->pressure_mem ? "may start effects" : "runs unthrottled");
			t->pressure = t->pressure_mem = false;
		}
		return;
	}
	if (a->cfg.pressure_action != BM_PRESSURE_THROTTLE_TOP ||
	    (any && now - last < PRESSURE_STEP_NS) ||
	    (any && !p->over_mem && p->cpu_now <= a->cfg.admit_cpu_pressure))
		return;
	for (i = 0; i < a->n_tenants; i++) {
		struct ag_tenant_count *t = &a->tenants[i];

		sum += contribution(t, p->over_mem, now);
		wsum += t->running ? t->bud.cfg.weight : 0;
	}
	for (i = 0; i < a->n_tenants; i++) {
		struct ag_tenant_count *t = &a->tenants[i];

		v = contribution(t, p->over_mem, now);
		/*
		 * only one above its share: a node that is simply full pauses, as
		 * without; one held for memory may yet be capped for CPU
		 */
		if ((t->pressure && (p->over_mem || !t->pressure_mem)) || !t->running ||
		    !(sum > 0) || v / sum <= t->bud.cfg.weight / wsum || v <= best)
			continue;
		best = v;
		top = t;
	}
	if (!top)
		return;
	top->pressure = true;
	top->pressure_mem = p->over_mem;
	top->pressure_at_ns = now;
	if (p->over_mem)
		bm_warn("node pressure: holding tenant %s's queue, its top contributor (%.0f%% of "
			"the memory effects hold, its share %.0f%%)",
			top->name, 100 * best / sum, 100 * top->bud.cfg.weight / wsum);
	else
		bm_warn("node pressure: throttling tenant %s, its top contributor (%.0f%% of the "
			"CPU effects use, its share %.0f%%)",
			top->name, 100 * best / sum, 100 * top->bud.cfg.weight / wsum);
}

static void pressure_tick(struct bm_agent *a, uint64_t now)
{
	struct ag_pressure *p = &a->pressure;
	bool over;

	pressure_read(a, now);
	over = p->over_cpu || p->over_mem;
	if (over && !p->since_ns) {
		p->since_ns = now;
		p->under_ns = 0;
		p->episodes++;
		name_top(a, now, true);
	} else if (over && now - p->named_ns >= PRESSURE_NAME_NS) {
		name_top(a, now, false);
	} else if (!over && !p->under_ns) {
		p->since_ns = 0;
		p->under_ns = now;
	}
	throttle_top(a, now, over);
}

/* ---------------------------------------------------------------- caps */

/* The cap each running effect of t gets now (0: none), and why. */
static double want_cap(const struct bm_agent *a, struct ag_tenant_count *t, int *cause)
{
	double cap = 0, wsum = 0, share;
	unsigned int i, n = t->running ? t->running : 1;

	*cause = -1;
	if (bm_budget_limited(&t->bud, BM_BUD_CPU) && t->bud.b[BM_BUD_CPU].exhausted) {
		cap = t->bud.cfg.b[BM_BUD_CPU].rate * BM_BUDGET_CAP / n;
		*cause = BM_BUD_CPU;
	}
	if (pressure_cpu(t)) {
		for (i = 0; i < a->n_tenants; i++)
			wsum += a->tenants[i].running ? a->tenants[i].bud.cfg.weight : 0;
		share = node_cpus(a) * BM_BUDGET_CAP * t->bud.cfg.weight / (wsum > 0 ? wsum : 1) /
			n;
		if (!cap || share < cap) {
			cap = share;
			*cause = BM_BUD__MAX;
		}
	}
	return cap;
}

/*
 * The CPU weight of an effect that yields: the idle class, which a waking
 * neighbour preempts at once. Beside a burster held to 0.4 cores on 2 CPUs, a
 * 40 ms call's worst case was 4-8 ms over alone at weight 1, 3-4 ms in the
 * idle class (README, fairness).
 */
#define YIELD_WEIGHT BM_CPU_IDLE

/*
 * Fair CPU (docs/BUDGETS.md, "Fair CPU"): a tenant is there while it runs an
 * effect or used CPU in the last seconds (a steady tenant between two calls
 * still counts). Its share of the node's CPUs is its weight's part of the
 * weights of the tenants there; 0 when it is alone, and any use is fair.
 * It yields once its recent use is over BM_FAIR_OVER x that share, and until
 * it is under 1 / BM_FAIR_OVER of it, or alone: a burster then gets only what
 * the others leave, and all of it when they are quiet. (Out at the share,
 * it would leave as soon as a neighbour took its own, and come back.)
 */
#define ACTIVE_CORES 0.01

static bool cpu_active(struct ag_tenant_count *t, uint64_t now)
{
	return t->running || bm_budget_rate_fast(&t->bud, BM_BUD_CPU, now) > ACTIVE_CORES;
}

/* The tenants there and their weights, summed once a tick: a share is then O(1). */
struct fair_sum {
	double weight;
	unsigned int n;
};

static struct fair_sum fair_sum(const struct bm_agent *a, uint64_t now)
{
	struct fair_sum s = { 0, 0 };
	unsigned int i;

	for (i = 0; i < a->n_tenants; i++)
		if (cpu_active(&a->tenants[i], now)) {
			s.weight += a->tenants[i].bud.cfg.weight;
			s.n++;
		}
	return s;
}

static double fair_share(const struct bm_agent *a, struct ag_tenant_count *t,
			 const struct fair_sum *s, uint64_t now)
{
	return bm_fair_cpu_share(node_cpus(a), t->bud.cfg.weight, cpu_active(t, now), s->weight,
				 s->n);
}

static bool want_fair_yield(const struct bm_agent *a, struct ag_tenant_count *t,
			    const struct fair_sum *s, uint64_t now)
{
	/* with no controllers (enforcement: meter) nothing could lower its weight */
	if (!a->cfg.fair_cpu_yield || a->cfg.meter_only || !t->running)
		return false;
	return bm_fair_over_share(bm_budget_rate_fast(&t->bud, BM_BUD_CPU, now),
				  fair_share(a, t, s, now), t->over_share);
}

/*
 * Does t yield? While it is over its fair share of the CPUs; from the moment
 * its CPU budget is exhausted (or the node's CPU pressure throttles it)
 * until its bucket is back at BM_BUDGET_YIELD of its burst.
 */
static bool want_yield(struct ag_tenant_count *t)
{
	const struct bm_bucket *k = &t->bud.b[BM_BUD_CPU];

	if (t->over_share || pressure_cpu(t) ||
	    (bm_budget_limited(&t->bud, BM_BUD_CPU) && k->exhausted))
		return true;
	return t->yielding && bm_budget_limited(&t->bud, BM_BUD_CPU) &&
	       k->level < BM_BUDGET_YIELD * t->bud.cfg.b[BM_BUD_CPU].burst;
}

/*
 * How many CPUs t's capped effects share (0: all, no confinement): as many
 * as their total cap needs. Each placed alone, four effects held to 0.1
 * cores would sit on four CPUs and wake beside every neighbour there.
 */
static unsigned int want_cpus(const struct ag_tenant_count *t, double cap, cpu_set_t *affinity)
{
	unsigned int k;

	if (!cap || sched_getaffinity(0, sizeof(*affinity), affinity) < 0 ||
	    !bm_cpuplace_confines(cap * (t->running ? t->running : 1), affinity, &k))
		return 0;
	return k;
}

/* Hold e as t is held now: its cap (0: none), its CPUs and, yielding, the lowest weight. */
static void cap_effect(struct ag_tenant_count *t, struct ag_effect *e, uint64_t now)
{
	int err = bm_sup__cap(&e->sup, t->cap_cores, t->yielding ? YIELD_WEIGHT : 0,
			      CPU_COUNT(&t->cpus) ? &t->cpus : NULL, cap_reason[t->cap_cause],
			      t->cap_cause == BM_BUD_CPU ? t->bud.b[BM_BUD_CPU].level
							 : bm_budget_rate_fast(&t->bud, BM_BUD_CPU, now));

	if (err == -EOPNOTSUPP && !e->cap_cores && !e->yielding)
		bm_warn("tenant %s: no CPU controller for %s to hold it to its budget: "
			"only its queue waits", t->name, e->req.id);
	e->cap_cores = t->cap_cores;
	e->yielding = t->yielding;
	e->cpus_gen = t->cpus_gen;
}

static void apply_caps(struct bm_agent *a, uint64_t now)
{
	struct fair_sum there = fair_sum(a, now);
	bool change = false, yield;
	cpu_set_t affinity;
	unsigned int i, k;
	int cause;

	for (i = 0; i < a->n_tenants; i++) {
		struct ag_tenant_count *t = &a->tenants[i];
		double cap = want_cap(a, t, &cause);

		if (want_fair_yield(a, t, &there, now) != t->over_share) {
			t->over_share = !t->over_share;
			t->fair_yields += t->over_share;
			if (t->over_share)
				bm_info("tenant %s is over its fair share of the CPUs (%.2f cores "
					"recently, %.2f its share): its effects yield",
					t->name, bm_budget_rate_fast(&t->bud, BM_BUD_CPU, now),
					fair_share(a, t, &there, now));
		}
		yield = want_yield(t);
		k = want_cpus(t, cap, &affinity);
		if (cap == t->cap_cores && yield == t->yielding &&
		    k == (unsigned int)CPU_COUNT(&t->cpus) && (!cap || t->cap_n == t->running))
			continue;
		/* the CPUs chosen anew only when their count changes: the effects stay put */
		if (k != (unsigned int)CPU_COUNT(&t->cpus)) {
			CPU_ZERO(&t->cpus);
			if (k)
				bm_cpuplace_least(&affinity, k, &t->cpus);
			t->cpus_gen++;
		}
		if (cap && !t->cap_cores)
			t->throttles[cause]++;
		if (cap && !t->cap_cores && cause < BM_BUD__MAX)
			bm_info("tenant %s is over its %s budget: its %u running effects held to "
				"%.2f cores each", t->name, bm_budget_name(cause), t->running, cap);
		t->cap_cores = cap;
		t->cap_n = t->running;
		t->yielding = yield;
		/* lifted: the last cause says why it was there */
		t->cap_cause = cap ? cause : t->cap_cause;
		change = true;
	}
	for (i = 0; change && i < a->n_eff; i++) {
		struct ag_effect *e = a->eff[i];
		struct ag_tenant_count *t;

		if (!e->started || e->sup.phase != BM_SUP_RUNNING || !(t = ag_tenant_of(a, e)) ||
		    (t->cap_cores == e->cap_cores && t->yielding == e->yielding &&
		     t->cpus_gen == e->cpus_gen))
			continue;
		cap_effect(t, e, now);
	}
}

void ag_tenant_cap_start(struct bm_agent *a, struct ag_effect *e)
{
	struct ag_tenant_count *t = ag_tenant_of(a, e);

	/* held as its running siblings are (the tick shares the cap out anew with it counted) */
	if (t && (t->cap_cores || t->yielding))
		cap_effect(t, e, bm_now_ns());
}

void ag_tenants_tick(struct bm_agent *a, uint64_t now)
{
	uint64_t dt = a->tenants_at_ns && now > a->tenants_at_ns ? now - a->tenants_at_ns : 0;
	unsigned int i;

	a->tenants_at_ns = now;
	for (i = 0; i < a->n_tenants; i++) {
		struct ag_tenant_count *t = &a->tenants[i];

		/* a level held for dt: sleeping effects are not read, yet hold theirs */
		if (t->mem_held > 0 && dt)
			bm_budget_charge(&t->bud, BM_BUD_MEM, t->mem_held / GIB * (double)dt / 1e9,
					 now);
		t->held_by = bm_budget_over(&t->bud, now);
	}
	pressure_tick(a, now);
	apply_caps(a, now);
}

/* ---------------------------------------------------------------- admission */

unsigned int ag_tenant_queue_share(const struct bm_agent *a, const struct ag_tenant_count *t)
{
	/* the tenants waiting, t, and room for one more of the default weight */
	double w = t->bud.cfg.weight, sum = w + a->cfg.budget.weight;
	unsigned int i, share;

	for (i = 0; i < a->n_tenants; i++)
		if (&a->tenants[i] != t && a->tenants[i].queued)
			sum += a->tenants[i].bud.cfg.weight;
	share = (unsigned int)floor(a->cfg.max_queued * w / sum);
	return share ? share : 1;
}

/*
 * What t goes on using of d while it waits, for its Retry-After: the memory
 * it holds (exact while it holds it); its CPU, at the cap it is held to (or
 * will be, at the next tick): what the kernel lets it use at most, so that
 * a retry at Retry-After finds the bucket refilled; what it sent or wrote
 * in the last second while it runs (an estimate: nothing holds those).
 */
static double use_rate(const struct bm_agent *a, struct ag_tenant_count *t, int d,
		       uint64_t now)
{
	double cap;
	int cause;

	if (!t->running)
		return 0;
	if (d == BM_BUD_MEM)
		return t->mem_held / GIB;
	if (d == BM_BUD_CPU && (cap = want_cap(a, t, &cause)) > 0)
		return cap * t->running;
	return bm_budget_rate_fast(&t->bud, d, now);
}

int ag_tenant_admit(struct bm_agent *a, struct ag_tenant_count *t, unsigned int *retry_after_s,
		    const char **budget)
{
	uint64_t now = bm_now_ns(), ns;
	int d;

	if (bm_budget_admit(&t->bud, now, &d)) {
		ns = bm_budget_retry_ns(&t->bud, d, now, use_rate(a, t, d, now));
		*retry_after_s = (unsigned int)((ns + BM_NSEC_PER_SEC - 1) / BM_NSEC_PER_SEC);
		*retry_after_s = *retry_after_s ? *retry_after_s : 1;
		*budget = bm_budget_name(d);
		t->refused[d]++;
		return -EDQUOT;
	}
	if (t->queued >= ag_tenant_queue_share(a, t)) {
		*retry_after_s = 1;
		*budget = "queue_share";
		t->refused[BM_BUD__MAX]++;
		return -EAGAIN;
	}
	return 0;
}

void ag_tenant_admitted(struct bm_agent *a, struct ag_tenant_count *t)
{
	(void)a;
	bm_budget_charge(&t->bud, BM_BUD_LAUNCH, 1, bm_now_ns());
}

bool ag_tenant_may_cap(const struct bm_agent *a, const char *tenant)
{
	return a->cfg.pressure_action == BM_PRESSURE_THROTTLE_TOP ||
	       bm_agent_cfg_budget(&a->cfg, tenant)->b[BM_BUD_CPU].rate > 0;
}

bool ag_tenant_held(const struct bm_agent *a, const struct ag_tenant_count *t)
{
	return t->held_by >= 0 || t->pressure || t->running >= a->cfg.tenant_max_running;
}

void ag_tenant_fair(const struct bm_agent *a, struct ag_tenant_count *t, uint64_t now,
		    struct bm_fair_tenant *out)
{
	double cpu, mem;

	bm_budget_advance(&t->bud, now);
	/* its dominant share: node-seconds of CPU or of memory, whichever it used more of */
	cpu = t->bud.slow[BM_BUD_CPU] / node_cpus(a);
	mem = t->bud.slow[BM_BUD_MEM] / node_mem_gib(a);
	out->usage = cpu > mem ? cpu : mem;
	out->weight = t->bud.cfg.weight;
	out->running = t->running;
	out->held = ag_tenant_held(a, t);
}

/* ---------------------------------------------------------------- views */

static json_t *num_or_null(bool ok, double v)
{
	return ok ? json_real(v) : json_null();
}

json_t *ag_tenant_json(struct bm_agent *a, const char *name)
{
	struct ag_tenant_count fresh, *t = ag_tenant_find(a, name);
	uint64_t now = bm_now_ns();
	struct bm_fair_tenant f;
	json_t *j, *buds, *cpus = NULL;
	struct fair_sum there;
	double share;
	char list[256];
	int d;

	if (!t) {
		/* not seen yet: what it would start with, without adding it */
		memset(&fresh, 0, sizeof(fresh));
		snprintf(fresh.name, sizeof(fresh.name), "%s", name);
		fresh.held_by = -1;
		bm_budget_init(&fresh.bud, bm_agent_cfg_budget(&a->cfg, name),
			       a->cfg.fair_half_life_ns, now);
		t = &fresh;
	}
	if (!a->pressure.read_ns)
		pressure_read(a, now);	/* the node's size, before the first tick */
	ag_tenant_fair(a, t, now, &f);
	there = fair_sum(a, now);
	share = fair_share(a, t, &there, now);	/* 0: alone */
	buds = json_object();
	for (d = 0; d < BM_BUD__MAX; d++) {
		bool lim = bm_budget_limited(&t->bud, d);
		const struct bm_bucket *k = &t->bud.b[d];

		json_object_set_new(
			buds, bm_budget_name(d),
			json_pack("{s:b, s:o, s:o, s:o, s:b, s:I, s:I, s:f, s:f}", "limited", lim,
				  "rate", num_or_null(lim, t->bud.cfg.b[d].rate), "burst",
				  num_or_null(lim, t->bud.cfg.b[d].burst), "level",
				  num_or_null(lim, k->level), "exhausted", lim && k->exhausted,
				  "retry_after_s",
				  (json_int_t)((bm_budget_retry_ns(&t->bud, d, now,
								   use_rate(a, t, d, now)) +
						BM_NSEC_PER_SEC - 1) /
					       BM_NSEC_PER_SEC),
				  "exhaustions", (json_int_t)k->exhaustions, "used", k->used,
				  "recent_per_second", bm_budget_rate_fast(&t->bud, d, now)));
	}
	if (CPU_COUNT(&t->cpus) && !bm_cpulist_format(&t->cpus, list, sizeof(list)))
		cpus = json_string(list);
	j = json_pack("{s:s, s:f, s:i, s:i, s:i, s:b, s:o, s:f, s:o, s:b, s:{s:f, s:f, s:o, s:b, s:I}, "
		      "s:{s:b, s:b, s:o, s:f, s:f, s:f}, s:o}",
		      "tenant", t->name, "weight", t->bud.cfg.weight, "running", t->running,
		      "queued", t->queued, "queue_share", ag_tenant_queue_share(a, t), "held",
		      ag_tenant_held(a, t), "held_by",
		      t->held_by >= 0 ? json_string(bm_budget_name(t->held_by)) : json_null(),
		      "cap_cores", t->cap_cores, "cap_cpus", cpus ? cpus : json_null(), "yielding",
		      t->yielding, "fair",
		      "usage_node_seconds", f.usage, "tag", bm_fair_tag(&f), "share_cores",
		      num_or_null(share > 0, share), "over_share", t->over_share, "yields",
		      (json_int_t)t->fair_yields, "pressure", "held",
		      t->pressure, "throttled", pressure_cpu(t), "dimension",
		      t->pressure ? json_string(t->pressure_mem ? "memory" : "cpu") : json_null(),
		      "share", pressure_share(a, t, pressure_sum(a, now), now), "cpu_cores",
		      bm_budget_rate_fast(&t->bud, BM_BUD_CPU, now), "memory_bytes", t->mem_held,
		      "budgets", buds);
	return j;
}

json_t *ag_pressure_json(struct bm_agent *a, bool names)
{
	struct ag_pressure *p = &a->pressure;
	json_t *j, *tt, *te;
	unsigned int i;
	bool room;

	/*
	 * room: whether the node's pressure lets an effect start now, and its
	 * bounds. ag_node_room() may read the pressure afresh, so it comes
	 * before the fields are taken: in json_pack()'s arguments the order is
	 * unspecified, and a view could say "room" of one read and show the
	 * figures of the one before.
	 */
	room = ag_node_room(a);
	j = json_pack("{s:b, s:o, s:b, s:f, s:f, s:I, s:s, s:I, s:f, s:I, s:s}", "over",
		      p->over_cpu || p->over_mem, "dimension",
		      p->over_mem ? json_string("memory") :
		      p->over_cpu ? json_string("cpu") : json_null(),
		      "room", room, "cpu_some_avg10", p->cpu_avg10, "cpu_some_1s", p->cpu_now,
		      "mem_available_bytes", (json_int_t)p->mem_available, "action",
		      a->cfg.pressure_action == BM_PRESSURE_THROTTLE_TOP ? "throttle_top" : "pause",
		      "episodes", (json_int_t)p->episodes, "admit_cpu_pressure", a->cfg.admit_cpu_pressure,
		      "admit_mem_available_bytes", (json_int_t)a->cfg.admit_mem_available,
		      "cpu_pressure_file", a->cfg.admit_cpu_pressure_file);
	if (!j || !names)
		return j;
	tt = json_array();
	te = json_array();
	for (i = 0; i < p->n_top_tenants; i++) {
		const struct ag_tenant_count *t = ag_tenant_find(a, p->top_tenants[i].tenant);

		json_array_append_new(
			tt,
			json_pack("{s:s, s:f, s:f, s:f, s:b, s:b}", "tenant",
				  p->top_tenants[i].tenant, "cpu_cores",
				  p->top_tenants[i].cpu_cores, "memory_bytes",
				  p->top_tenants[i].memory_bytes, "share", p->top_tenants[i].share,
				  "held", t && t->pressure, "throttled", t && pressure_cpu(t)));
	}
	for (i = 0; i < p->n_top_effects; i++)
		json_array_append_new(te, json_pack("{s:s, s:s, s:f, s:f}", "tenant",
						    p->top_effects[i].tenant, "id",
						    p->top_effects[i].id, "cpu_cores",
						    p->top_effects[i].cpu_cores, "memory_bytes",
						    p->top_effects[i].memory_bytes));
	json_object_set_new(j, "top_tenants", tt);
	json_object_set_new(j, "top_effects", te);
	return j;
}

void ag_tenants_export(struct bm_agent *a)
{
	uint64_t now = bm_now_ns();
	unsigned int i;
	double sum;
	int d;

	bm_export__tenants_reset(a->exp);
	sum = pressure_sum(a, now);
	for (i = 0; i < a->n_tenants; i++) {
		struct ag_tenant_count *t = &a->tenants[i];
		struct bm_export_tenant v = { 0 };

		bm_budget_advance(&t->bud, now);
		for (d = 0; d < BM_BUD__MAX; d++) {
			bool lim = bm_budget_limited(&t->bud, d);

			v.used[d] = t->bud.b[d].used * (d == BM_BUD_MEM ? GIB : 1);
			v.remaining[d] = lim ? t->bud.b[d].level / t->bud.cfg.b[d].burst : NAN;
			v.exhausted[d] = lim && t->bud.b[d].exhausted;
			v.exhaustions[d] = (double)t->bud.b[d].exhaustions;
		}
		for (d = 0; d <= BM_BUD__MAX; d++) {
			v.refused[d] = (double)t->refused[d];
			v.throttles[d] = (double)t->throttles[d];
		}
		v.throttled = t->cap_cores > 0;
		v.yielding = t->yielding;
		v.fair_yields = (double)t->fair_yields;
		v.running = t->running;
		v.queued = t->queued;
		v.pressure_share = pressure_share(a, t, sum, now);
		bm_export__tenant(a->exp, t->name, &v);
	}
}
