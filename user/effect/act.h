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

/* Toggle the duty cycle if it is due. Returns the next time it needs a call, or UINT64_MAX. */
uint64_t bm_act_tick(struct bm_actuator *a, uint64_t now_ns);

/* The effect is over: close open freeze/throttle intervals and thaw. */
void bm_act_finish(struct bm_actuator *a, uint64_t now_ns);

#endif /* BM_ACT_H */
