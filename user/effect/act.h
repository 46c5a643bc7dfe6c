/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Carrying out the ladder's actions on an effect: throttle through a
 * controller (cpu.max, cfs_quota, memory.high) or, where there is none, a
 * freeze duty cycle; freeze and thaw through cgroup.freeze; cancel with
 * SIGTERM to every process of the effect; kill with cgroup.kill. Only the
 * effect's cgroup is ever touched, never burstmeter or its parent. Every
 * action is recorded in the outcome with its time, observed value and
 * threshold.
 */
#ifndef BM_ACT_H
#define BM_ACT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/cgroup.h"
#include "effect/ceiling.h"
#include "effect/outcome.h"
#include "effect/policy.h"

struct bm_actuator {
	struct bm_cgroup *cg;
	struct bm_ceilings *ceil;
	const struct bm_policy *pol;
	const struct bm_limits *lim;
	struct bm_outcome *out;
	uint64_t start_ns;
	uint64_t duty_period_ns;	/* the freeze duty cycle's period */
	uint64_t duty_run_ns;		/* and the part of it the effect runs */

	bool frozen;			/* by a FREEZE step */
	uint64_t frozen_at_ns, frozen_ns;
	bool throttled;
	uint64_t throttled_at_ns, throttled_ns;
	bool duty;			/* throttling by freeze duty cycle */
	bool duty_frozen;
	uint64_t duty_next_ns;

	/*
	 * A CPU cap from outside the ladder (the agent's tenant budgets, the
	 * node's pressure): cpu.max never above it, whatever the ladder does.
	 */
	double cap_cores;		/* 0: none */
	unsigned int cap_weight;	/* its CPU weight meanwhile (cgroup v2 units, BM_CPU_IDLE), 0: the default */
	bool capped;
	uint64_t capped_at_ns, capped_ns;	/* time capped while the ladder did not throttle */
	double throttle_cores;		/* the ladder's own CPU throttle (controller), 0: none */

	bool ended;			/* a cancel or kill was sent */
	enum bm_pdim cause;
	const char *by;			/* "policy" or "kernel" */
};

void bm_act_init(struct bm_actuator *a, struct bm_cgroup *cg, struct bm_ceilings *ceil,
		 const struct bm_policy *pol, const struct bm_limits *lim, struct bm_outcome *out,
		 uint64_t start_ns, uint64_t window_ns);

/* Carry out one action at now_ns; by is recorded as who decided. Returns 0 or -errno. */
int bm_act_do(struct bm_actuator *a, const struct bm_verdict_action *va, const char *by,
	      uint64_t now_ns);

/*
 * Cap the effect's CPU at cores (0 lifts the cap) and set its CPU weight
 * against its siblings (cgroup v2 units, BM_CPU_IDLE yields to them all; 0 is the
 * default) through its controller, for reason (a static string, e.g.
 * "cpu_seconds_budget"), observed being what moved the caller. A cap put
 * on or lifted is recorded in the outcome as a throttle or an unthrottle
 * with that reason (a new level or weight is not). The ceiling and the
 * ladder's own throttle still hold where they are lower. Returns 0,
 * -EOPNOTSUPP (no CPU controller for the effect: nothing is done),
 * -EALREADY (it has ended) or -errno.
 */
int bm_act_cap(struct bm_actuator *a, double cores, unsigned int weight, const char *reason,
	       double observed, uint64_t now_ns);

/* Toggle the duty cycle if it is due. Returns the next time it needs a call, or UINT64_MAX. */
uint64_t bm_act_tick(struct bm_actuator *a, uint64_t now_ns);

/* The effect is over: close open freeze/throttle intervals and thaw. */
void bm_act_finish(struct bm_actuator *a, uint64_t now_ns);

#endif /* BM_ACT_H */
