// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <string.h>

#include "effect/policy.h"

#define NS_PER_MS 1000000ULL

static const char *const act_names[BM_ACT__MAX] = {
	[BM_ACT_THROTTLE] = "throttle", [BM_ACT_UNTHROTTLE] = "unthrottle",
	[BM_ACT_FREEZE] = "freeze", [BM_ACT_THAW] = "thaw",
	[BM_ACT_CANCEL] = "cancel", [BM_ACT_KILL] = "kill",
};

static const char *const pdim_names[BM_P__MAX] = {
	[BM_P_CPU] = "cpu", [BM_P_MEM] = "memory", [BM_P_PIDS] = "pids", [BM_P_NET] = "net",
	[BM_P_IO] = "io",
};

static const char *const pdim_reasons[BM_P__MAX] = {
	[BM_P_CPU] = "cpu_ceiling", [BM_P_MEM] = "memory_ceiling",
	[BM_P_PIDS] = "pids_ceiling", [BM_P_NET] = "net_ceiling", [BM_P_IO] = "io_ceiling",
};

const char *bm_act_name(enum bm_act a)
{
	return a < BM_ACT__MAX ? act_names[a] : "?";
}

const char *bm_pdim_name(enum bm_pdim d)
{
	return d < BM_P__MAX ? pdim_names[d] : "?";
}

const char *bm_pdim_reason(enum bm_pdim d)
{
	return d < BM_P__MAX ? pdim_reasons[d] : "?";
}

void bm_policy_default(struct bm_policy *p)
{
	memset(p, 0, sizeof(*p));
	/* long enough that one 10 ms burst is one action, short enough to matter */
	p->cooldown_ms = 250;
	p->freeze_timeout_ms = 2000;
	p->cancel_grace_ms = 1000;
	p->expect_widens = true;
}

void bm_policy_ceilings(struct bm_policy *p, double cpu_cores, double memory_bytes, double pids)
{
	struct bm_dim_rule *r;

	/* memory and tasks past their ceiling end the effect: nothing gentler helps */
	if (memory_bytes > 0) {
		r = &p->dim[BM_P_MEM];
		r->hard = memory_bytes;
		r->ceiling = true;
		r->steps |= BM_STEP_BIT(BM_STEP_KILL);
	}
	if (pids > 0) {
		r = &p->dim[BM_P_PIDS];
		r->hard = pids;
		r->ceiling = true;
		r->steps |= BM_STEP_BIT(BM_STEP_KILL);
	}
	/* CPU over its ceiling is slowed down, never ended for that alone */
	if (cpu_cores > 0) {
		r = &p->dim[BM_P_CPU];
		r->hard = cpu_cores;
		r->steps |= BM_STEP_BIT(BM_STEP_THROTTLE);
	}
}

int bm_policy_check(const struct bm_policy *p, const char **why)
{
	int d;

	for (d = 0; d < BM_P__MAX; d++) {
		const struct bm_dim_rule *r = &p->dim[d];

		if (r->soft < 0 || r->hard < 0) {
			*why = "levels must not be negative";
			return -EINVAL;
		}
		if (r->soft && r->hard && r->soft > r->hard) {
			*why = "soft must not exceed hard";
			return -EINVAL;
		}
		if (r->steps & ~BM_STEPS_ALL) {
			*why = "unknown step";
			return -EINVAL;
		}
		if (r->hold_ms > 3600 * 1000) {
			*why = "hold_ms must be at most an hour";
			return -EINVAL;
		}
	}
	if (!p->freeze_timeout_ms || p->freeze_timeout_ms > 3600 * 1000) {
		*why = "freeze_timeout_ms must be in 1..3600000";
		return -EINVAL;
	}
	if (p->cooldown_ms > 3600 * 1000 || p->cancel_grace_ms > 3600 * 1000) {
		*why = "cooldown_ms and cancel_grace_ms must be at most an hour";
		return -EINVAL;
	}
	return 0;
}

void bm_ladder_init(struct bm_ladder *l)
{
	memset(l, 0, sizeof(*l));
}

static void emit(struct bm_verdict *v, enum bm_act act, enum bm_pdim d, double observed,
		 double threshold)
{
	if (v->n >= BM_VERDICT_MAX)
		return;
	v->a[v->n++] = (struct bm_verdict_action){ act, d, observed, threshold };
}

/* The next allowed step above cur: at least min when one is allowed, else the best below it. */
static enum bm_step next_step(const struct bm_dim_rule *r, enum bm_step cur, enum bm_step min)
{
	int s;

	if (r->ceiling)
		return BM_STEP_KILL;
	for (s = cur + 1; s < BM_STEP__MAX; s++)
		if (s >= (int)min && (r->steps & BM_STEP_BIT(s)))
			return s;
	for (s = cur + 1; s < (int)min; s++)
		if (r->steps & BM_STEP_BIT(s))
			return s;
	return cur;
}

/* Move the ladder to step `to`, emitting what it takes to get there from where it is. */
static void go(struct bm_ladder *l, enum bm_step to, enum bm_pdim d, double obs, double thr,
	       uint64_t now, struct bm_verdict *v)
{
	switch (to) {
	case BM_STEP_THROTTLE:
		emit(v, BM_ACT_THROTTLE, d, obs, thr);
		l->throttled = true;
		break;
	case BM_STEP_FREEZE:
		emit(v, BM_ACT_FREEZE, d, obs, thr);
		break;
	case BM_STEP_CANCEL:
		/* a frozen task cannot act on SIGTERM */
		if (l->step == BM_STEP_FREEZE)
			emit(v, BM_ACT_THAW, d, obs, thr);
		emit(v, BM_ACT_CANCEL, d, obs, thr);
		break;
	case BM_STEP_KILL:
		emit(v, BM_ACT_KILL, d, obs, thr);
		break;
	default:
		return;
	}
	l->step = to;
	l->cause = d;
	l->step_at_ns = now;
	l->action_at_ns = now;
}

/* Timer-driven moves: a cancel's grace, a freeze's timeout or thaw, a throttle's end. */
static void timers(const struct bm_policy *p, struct bm_ladder *l, const struct bm_sample *s,
		   uint64_t now, struct bm_verdict *v)
{
	const struct bm_dim_rule *r = &p->dim[l->cause];
	bool calm = l->calm_since_ns && now - l->calm_since_ns >= p->cooldown_ms * NS_PER_MS;
	double obs = s->value[l->cause];

	switch (l->step) {
	case BM_STEP_CANCEL:
		if (now - l->step_at_ns >= p->cancel_grace_ms * NS_PER_MS)
			go(l, BM_STEP_KILL, l->cause, obs, r->hard ? r->hard : r->soft, now, v);
		break;
	case BM_STEP_FREEZE:
		if (calm) {
			emit(v, BM_ACT_THAW, l->cause, obs, r->soft ? r->soft : r->hard);
			l->step = l->throttled ? BM_STEP_THROTTLE : BM_STEP_OBSERVE;
			l->step_at_ns = l->action_at_ns = now;
		} else if (now - l->step_at_ns >= p->freeze_timeout_ms * NS_PER_MS) {
			/* frozen and still over: the freeze did not clear it */
			enum bm_step to = r->steps & BM_STEP_BIT(BM_STEP_CANCEL) ? BM_STEP_CANCEL
										 : BM_STEP_KILL;
			go(l, to, l->cause, obs, r->hard ? r->hard : r->soft, now, v);
		}
		break;
	case BM_STEP_THROTTLE:
		if (calm && l->throttled) {
			emit(v, BM_ACT_UNTHROTTLE, l->cause, obs, r->soft ? r->soft : r->hard);
			l->throttled = false;
			l->step = BM_STEP_OBSERVE;
			l->step_at_ns = l->action_at_ns = now;
		}
		break;
	default:
		break;
	}
}

int bm_policy_step(const struct bm_policy *p, struct bm_ladder *l, const struct bm_sample *s,
		   uint64_t now, struct bm_verdict *v)
{
	int d, trig = -1, trig_hard = 0;
	bool over = false;

	v->n = 0;
	if (s->gone || l->step == BM_STEP_KILL)
		return 0;
	for (d = 0; d < BM_P__MAX; d++) {
		const struct bm_dim_rule *r = &p->dim[d];
		double x = s->value[d];
		bool hard = r->ceiling ? s->breach[d] || (r->hard > 0 && x > r->hard)
				       : r->hard > 0 && x >= r->hard;
		bool soft = r->soft > 0 && x >= r->soft;

		if (!soft) {
			l->above_since_ns[d] = 0;
		} else if (!l->above_since_ns[d]) {
			l->above_since_ns[d] = now;
		}
		over |= soft || hard;
		/* a ceiling outranks any other hard crossing, which outranks a soft one */
		if (hard && (trig < 0 || !trig_hard || (r->ceiling && !p->dim[trig].ceiling))) {
			trig = d;
			trig_hard = 1;
		} else if (soft && trig < 0 && now - l->above_since_ns[d] >= r->hold_ms * NS_PER_MS) {
			trig = d;
		}
	}
	if (over)
		l->calm_since_ns = 0;
	else if (!l->calm_since_ns)
		l->calm_since_ns = now;

	timers(p, l, s, now, v);
	if (trig >= 0 && l->step < BM_STEP_KILL) {
		const struct bm_dim_rule *r = &p->dim[trig];
		bool cooled = !l->action_at_ns || now - l->action_at_ns >= p->cooldown_ms * NS_PER_MS;
		enum bm_step to = next_step(r, l->step, trig_hard ? BM_STEP_FREEZE : BM_STEP_THROTTLE);

		bool ceiling = trig_hard && r->ceiling;

		/*
		 * Ceilings act at once. Anything else waits for the cool-down, and
		 * once frozen or cancelled the timers decide: a freeze gets its full
		 * timeout to clear, a cancel its full grace.
		 */
		if (to > l->step && !v->n && (ceiling || (cooled && l->step < BM_STEP_FREEZE)))
			go(l, to, trig, s->value[trig], trig_hard ? r->hard : r->soft, now, v);
	}
	return (int)v->n;
}

uint64_t bm_policy_next_deadline(const struct bm_policy *p, const struct bm_ladder *l)
{
	uint64_t t = UINT64_MAX, c;
	int d;

	switch (l->step) {
	case BM_STEP_CANCEL:
		t = l->step_at_ns + p->cancel_grace_ms * NS_PER_MS;
		break;
	case BM_STEP_FREEZE:
		t = l->step_at_ns + p->freeze_timeout_ms * NS_PER_MS;
		/* a freeze also ends when it has been calm for a cool-down */
		__attribute__((fallthrough));
	case BM_STEP_THROTTLE:
		if (l->calm_since_ns) {
			c = l->calm_since_ns + p->cooldown_ms * NS_PER_MS;
			t = c < t ? c : t;
		}
		break;
	default:
		break;
	}
	/* holds matter only while a soft level can still move the ladder */
	for (d = 0; d < BM_P__MAX && l->step < BM_STEP_FREEZE; d++) {
		if (!l->above_since_ns[d] || !p->dim[d].steps)
			continue;
		c = l->above_since_ns[d] + p->dim[d].hold_ms * NS_PER_MS;
		t = c < t ? c : t;
	}
	return t;
}
