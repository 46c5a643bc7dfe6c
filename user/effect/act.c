// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "base/common.h"
#include "effect/act.h"

void bm_act_init(struct bm_actuator *a, struct bm_cgroup *cg, struct bm_ceilings *ceil,
		 const struct bm_policy *pol, const struct bm_limits *lim, struct bm_outcome *out,
		 uint64_t start_ns, uint64_t window_ns)
{
	memset(a, 0, sizeof(*a));
	a->cg = cg;
	a->ceil = ceil;
	a->pol = pol;
	a->lim = lim;
	a->out = out;
	a->start_ns = start_ns;
	/* four windows: fine-grained, yet long enough for a freeze to settle */
	a->duty_period_ns = 4 * window_ns;
	a->duty_run_ns = a->duty_period_ns / 2;
}

static void record_as(struct bm_actuator *a, const char *action, const char *reason,
		      double observed, double threshold, uint64_t now)
{
	struct bm_outcome *o = a->out;

	if (o->n_actions >= BM_MAX_ACTIONS)
		return;
	o->actions[o->n_actions++] = (struct bm_action){
		.at_ms = (double)(now - a->start_ns) / 1e6,
		.action = action,
		.reason = reason,
		.observed = observed,
		.threshold = threshold,
	};
}

static void record(struct bm_actuator *a, const char *action, const struct bm_verdict_action *va,
		   uint64_t now)
{
	record_as(a, action, bm_pdim_reason(va->dim), va->observed, va->threshold, now);
}

/* The lower of two CPU limits in cores, 0 being none. */
static double lower(double x, double y)
{
	return x <= 0 ? y : y <= 0 || x < y ? x : y;
}

/* The cap's time is counted only while the ladder does not throttle: never twice. */
static void cap_clock(struct bm_actuator *a, bool run, uint64_t now)
{
	if (a->capped_at_ns && !run) {
		a->capped_ns += now - a->capped_at_ns;
		a->capped_at_ns = 0;
	} else if (!a->capped_at_ns && run) {
		a->capped_at_ns = now;
	}
}

static int set_frozen(struct bm_actuator *a, bool on)
{
	return bm_cgroup__freeze(a->cg, on);
}

/* Throttle through the dimension's controller if it has one, else a freeze duty cycle. */
static int throttle(struct bm_actuator *a, const struct bm_verdict_action *va, uint64_t now)
{
	int err = -EOPNOTSUPP;

	if (va->dim == BM_P_CPU) {
		err = bm_ceilings_cpu(a->ceil, a->lim, lower(va->threshold, a->cap_cores));
		a->throttle_cores = err ? 0 : va->threshold;
	} else if (va->dim == BM_P_MEM)
		err = bm_ceilings_mem_high(a->ceil, va->threshold);
	else if (va->dim == BM_P_IO)
		err = bm_ceilings_io(a->ceil, a->lim, va->threshold);
	a->duty = err == -EOPNOTSUPP;
	if (a->duty) {
		/* run for the share of the period the target allows: 0.5 of 2 cores runs a quarter */
		double share = va->observed > 0 ? va->threshold / va->observed : 0.5;

		share = share < 0.1 ? 0.1 : share > 0.9 ? 0.9 : share;
		a->duty_run_ns = (uint64_t)(share * a->duty_period_ns);
		a->duty_frozen = false;
		a->duty_next_ns = now;
		err = 0;
	}
	a->throttled = true;
	a->throttled_at_ns = now;
	cap_clock(a, false, now);
	return err;
}

static int unthrottle(struct bm_actuator *a, uint64_t now)
{
	int err = 0;

	if (!a->throttled)
		return 0;
	if (a->duty) {
		if (a->duty_frozen && !a->frozen)
			err = set_frozen(a, false);
	} else {
		/* back to the ceiling, or to the cap from outside where one holds */
		(void)bm_ceilings_cpu(a->ceil, a->lim,
				      lower(a->cap_cores, a->lim->cpu_milli / 1000.0));
		(void)bm_ceilings_mem_high(a->ceil, 0);
		(void)bm_ceilings_io(a->ceil, a->lim, 0);
	}
	a->throttled_ns += now - a->throttled_at_ns;
	a->throttled = a->duty = a->duty_frozen = false;
	a->throttle_cores = 0;
	cap_clock(a, a->capped, now);
	return err;
}

/* The smallest quota cpu.max takes: 1 ms in a 100 ms period. */
#define CAP_MIN_CORES 0.01

int bm_act_cap(struct bm_actuator *a, double cores, unsigned int weight, const char *reason,
	       double observed, uint64_t now)
{
	double limit;
	bool on;
	int err;

	if (a->ended)
		return -EALREADY;
	if (!a->ceil->v2_cpu && a->ceil->v1_cpu_dirfd < 0)
		return -EOPNOTSUPP;
	cores = cores > 0 && cores < CAP_MIN_CORES ? CAP_MIN_CORES : cores > 0 ? cores : 0;
	if (weight != a->cap_weight) {
		err = bm_ceilings_cpu_weight(a->ceil, weight);
		if (err)
			return err;
		a->cap_weight = weight;
	}
	if (cores == a->cap_cores)
		return 0;
	/* under the ceiling and under the ladder's throttle, whichever is lower */
	limit = lower(lower(cores, a->throttle_cores), a->lim->cpu_milli / 1000.0);
	err = bm_ceilings_cpu(a->ceil, a->lim, limit);
	if (err)
		return err;
	on = cores > 0;
	if (on != a->capped)
		record_as(a, on ? "throttle" : "unthrottle", reason, observed, on ? cores : a->cap_cores,
			  now);
	a->cap_cores = cores;
	a->capped = on;
	cap_clock(a, a->capped && !a->throttled, now);
	return 0;
}

static void end_freeze(struct bm_actuator *a, uint64_t now)
{
	if (!a->frozen)
		return;
	a->frozen_ns += now - a->frozen_at_ns;
	a->frozen = false;
}

int bm_act_do(struct bm_actuator *a, const struct bm_verdict_action *va, const char *by,
	      uint64_t now)
{
	int err = 0;

	switch (va->act) {
	case BM_ACT_THROTTLE:
		err = throttle(a, va, now);
		break;
	case BM_ACT_UNTHROTTLE:
		err = unthrottle(a, now);
		break;
	case BM_ACT_FREEZE:
		err = set_frozen(a, true);
		if (!err && !a->frozen) {
			a->frozen = true;
			a->frozen_at_ns = now;
		}
		break;
	case BM_ACT_THAW:
		/* a duty cycle in its frozen half stays frozen until its next toggle */
		if (!(a->duty && a->duty_frozen))
			err = set_frozen(a, false);
		end_freeze(a, now);
		break;
	case BM_ACT_CANCEL:
		err = bm_cgroup__signal(a->cg, SIGTERM);
		err = err < 0 ? err : 0;
		a->ended = true;
		a->cause = va->dim;
		a->by = by;
		break;
	case BM_ACT_KILL:
		err = bm_cgroup__kill(a->cg);
		a->ended = true;
		a->cause = va->dim;
		a->by = by;
		break;
	default:
		return -EINVAL;
	}
	record(a, bm_act_name(va->act), va, now);
	return err;
}

uint64_t bm_act_tick(struct bm_actuator *a, uint64_t now)
{
	if (!a->duty || a->ended)
		return UINT64_MAX;
	if (now >= a->duty_next_ns) {
		a->duty_frozen = !a->duty_frozen;
		/* a FREEZE step overrides the duty cycle's running part */
		if (!a->frozen)
			set_frozen(a, a->duty_frozen);
		a->duty_next_ns = now + (a->duty_frozen ? a->duty_period_ns - a->duty_run_ns : a->duty_run_ns);
	}
	return a->duty_next_ns;
}

void bm_act_finish(struct bm_actuator *a, uint64_t now)
{
	if (a->frozen || (a->duty && a->duty_frozen))
		set_frozen(a, false);
	end_freeze(a, now);
	unthrottle(a, now);
	cap_clock(a, false, now);
	a->out->frozen_s = a->frozen_ns / 1e9;
	a->out->throttled_s = (a->throttled_ns + a->capped_ns) / 1e9;
}
