/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The graduated response, as a pure function: a policy and the ladder's
 * state in, the next actions out; time is an argument. The event loop owns
 * the I/O (cgroup.freeze, cpu.max, signals, cgroup.kill) and feeds back
 * what it did.
 *
 *   observe -> throttle -> freeze -> cancel (SIGTERM, grace) -> kill
 *
 * A value over a dimension's soft level for hold_ms, or any window over its
 * hard level, moves the effect one allowed step up (a hard crossing goes at
 * least to freeze), at most once per cooldown, so one burst is one action.
 * A ceiling is breached above its level (reaching it is allowed), or when a
 * controller enforcing it refused a fork or OOM-killed a task.
 * A freeze thaws once every dimension has been under its soft level for a
 * cooldown, and never lasts longer than freeze_timeout_ms: then it
 * escalates. A ceiling (--memory, --pids, --cpu) is a hard level whose
 * breach ends the effect with that ceiling as the reason.
 */
#ifndef BM_POLICY_H
#define BM_POLICY_H

#include <stdbool.h>
#include <stdint.h>

/* The dimensions a policy speaks of, in display units. */
enum bm_pdim {
	BM_P_CPU,	/* cores */
	BM_P_MEM,	/* bytes */
	BM_P_PIDS,	/* tasks */
	BM_P_NET,	/* bytes sent per second */
	BM_P_IO,	/* block I/O, bytes read plus written per second */
	BM_P__MAX,
};

enum bm_step {
	BM_STEP_OBSERVE,
	BM_STEP_THROTTLE,
	BM_STEP_FREEZE,
	BM_STEP_CANCEL,
	BM_STEP_KILL,
	BM_STEP__MAX,
};

/* Actions the event loop carries out; THAW and UNTHROTTLE step back down. */
enum bm_act {
	BM_ACT_THROTTLE,
	BM_ACT_UNTHROTTLE,
	BM_ACT_FREEZE,
	BM_ACT_THAW,
	BM_ACT_CANCEL,
	BM_ACT_KILL,
	BM_ACT__MAX,
};

#define BM_STEP_BIT(s) (1U << (s))
#define BM_STEPS_ALL (BM_STEP_BIT(BM_STEP_THROTTLE) | BM_STEP_BIT(BM_STEP_FREEZE) | \
		      BM_STEP_BIT(BM_STEP_CANCEL) | BM_STEP_BIT(BM_STEP_KILL))

struct bm_dim_rule {
	double soft;		/* 0 = none */
	double hard;		/* 0 = none */
	uint64_t hold_ms;	/* how long over soft before acting */
	uint32_t steps;		/* BM_STEP_BIT()s allowed; 0 = observe only */
	bool ceiling;		/* hard is a ceiling: its breach is the termination reason */
};

struct bm_policy {
	struct bm_dim_rule dim[BM_P__MAX];
	uint64_t cooldown_ms;		/* between two actions, and under soft before a thaw */
	uint64_t freeze_timeout_ms;	/* the longest a freeze may last */
	uint64_t cancel_grace_ms;	/* SIGTERM to kill */
	/* a request's declared expect raises soft levels up to it, for that effect (effect/expect.h) */
	bool expect_widens;
};

struct bm_ladder {
	enum bm_step step;
	enum bm_pdim cause;		/* the dimension that drove the last escalation */
	uint64_t step_at_ns;		/* when the current step was taken */
	uint64_t action_at_ns;		/* last action of any kind */
	uint64_t above_since_ns[BM_P__MAX];	/* over soft since; 0 = not over */
	uint64_t calm_since_ns;		/* every dimension under soft since; 0 = not calm */
	bool throttled;			/* a throttle is in force (it outlives a thaw) */
};

struct bm_sample {
	double value[BM_P__MAX];	/* the latest window, display units */
	bool breach[BM_P__MAX];		/* a controller refused or killed at this ceiling */
	bool gone;			/* the effect has no task left */
};

struct bm_verdict_action {
	enum bm_act act;
	enum bm_pdim dim;
	double observed;
	double threshold;
};

#define BM_VERDICT_MAX 4
struct bm_verdict {
	struct bm_verdict_action a[BM_VERDICT_MAX];
	unsigned int n;
};

const char *bm_act_name(enum bm_act a);
const char *bm_pdim_name(enum bm_pdim d);
/* The termination reason a cancel or kill for dimension d carries: "memory_ceiling", ... */
const char *bm_pdim_reason(enum bm_pdim d);

/* The embedded default: observe everything, act on nothing but ceilings. */
void bm_policy_default(struct bm_policy *p);
/* Add CLI ceilings (0 = none): hard levels that end the effect. */
void bm_policy_ceilings(struct bm_policy *p, double cpu_cores, double memory_bytes, double pids);
/* Check ranges and coherence (soft <= hard, ...). Returns 0 or -EINVAL with *why set. */
int bm_policy_check(const struct bm_policy *p, const char **why);

void bm_ladder_init(struct bm_ladder *l);

/*
 * One evaluation at now_ns. Fills v with what to do now (possibly nothing)
 * and advances l as if it were done. Returns the number of actions.
 */
int bm_policy_step(const struct bm_policy *p, struct bm_ladder *l, const struct bm_sample *s,
		   uint64_t now_ns, struct bm_verdict *v);

/* The earliest time a timer-driven transition (thaw, escalation, kill after grace) may fire. */
uint64_t bm_policy_next_deadline(const struct bm_policy *p, const struct bm_ladder *l);

#endif /* BM_POLICY_H */
