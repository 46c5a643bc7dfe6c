// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/effect/act.c on a fake cgroupfs (tests/unit/fakecg.h): each action
 * writes its knob (cpu.max, memory.high, cgroup.freeze, cgroup.kill) or
 * signals what cgroup.procs lists, and is recorded in the outcome; the
 * freeze duty cycle toggles on time; finish closes the intervals. Time is
 * an argument, so every figure follows from the now_ns given.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <sys/wait.h>

#include "fakecg.h"
#include "effect/act.h"

#define MS 1000000ULL
#define W_NS (10 * MS)		/* window: the duty cycle's period is 4 of them, 40 ms */
#define T0 (5000 * MS)		/* the effect started here */

static struct {
	char root[256];		/* short: the paths built from it fit PATH_MAX */
	const char *dir;		/* the effect cgroup */
	struct bm_cgroup cg;
	struct bm_ceilings ceil;
	struct bm_policy pol;
	struct bm_limits lim;
	struct bm_outcome out;
	struct bm_actuator a;
	pid_t child;
} f;

/* An effect cgroup whose parent delegates cpu and memory; act on it from T0. */
static int setup(void **state)
{
	int i;

	memset(&f, 0, sizeof(f));
	fake_root(f.root, sizeof(f.root));
	f.dir = strdup(fake_path("%s/job/burstmeter.unit.e1", f.root));
	fake_v2_knobs(f.dir, "cpu memory");
	f.cg.path = (char *)f.dir;
	f.cg.dirfd = open(f.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(f.cg.dirfd >= 0);
	for (i = 0; i < BM_V1__MAX; i++)
		f.ceil.join_fd[i] = -1;
	f.ceil.v1_cpu_dirfd = f.ceil.v1_mem_dirfd = f.ceil.v1_blkio_dirfd = f.ceil.cpuset_dirfd = -1;
	f.ceil.v2_dirfd = f.cg.dirfd;
	f.ceil.v2_cpu = f.ceil.v2_mem = true;
	bm_policy_default(&f.pol);
	bm_act_init(&f.a, &f.cg, &f.ceil, &f.pol, &f.lim, &f.out, T0, W_NS);
	return 0;
}

static int teardown(void **state)
{
	int st;

	if (f.child > 0) {
		kill(f.child, SIGKILL);
		waitpid(f.child, &st, 0);
	}
	close(f.cg.dirfd);
	fake_rmtree(f.root);
	free((void *)f.dir);
	return 0;
}

/* No controller for the effect: throttling falls to the freeze duty cycle. */
static void no_controllers(void)
{
	f.ceil.v2_cpu = f.ceil.v2_mem = false;
}

static int act(enum bm_act what, enum bm_pdim d, double observed, double threshold,
	       const char *by, uint64_t at)
{
	struct bm_verdict_action va = { what, d, observed, threshold };

	return bm_act_do(&f.a, &va, by, at);
}

/* A child that waits for a signal, listed in the effect's cgroup.procs. */
static void child_in_cgroup(void)
{
	char pid[16];

	f.child = fork();
	assert_true(f.child >= 0);
	if (!f.child) {
		pause();
		_exit(0);
	}
	snprintf(pid, sizeof(pid), "%d\n", f.child);
	fake_put(f.dir, "cgroup.procs", pid);
}

/* The child's end: the signal that ended it (0 if it exited); fails after 2 s of waiting. */
static int child_signal(void)
{
	int st, i;

	for (i = 0; i < 200 && waitpid(f.child, &st, WNOHANG) == 0; i++)
		usleep(10000);
	if (i == 200) {
		kill(f.child, SIGKILL);
		waitpid(f.child, &st, 0);
		f.child = 0;
		fail_msg("the child was not signalled");
	}
	f.child = 0;
	return WIFSIGNALED(st) ? WTERMSIG(st) : 0;
}

static void assert_action(unsigned int i, double at_ms, const char *action, const char *reason,
			  double observed, double threshold)
{
	const struct bm_action *r = &f.out.actions[i];

	assert_true(i < f.out.n_actions);
	assert_true(r->at_ms == at_ms);
	assert_string_equal(r->action, action);
	assert_string_equal(r->reason, reason);
	assert_true(r->observed == observed);
	assert_true(r->threshold == threshold);
}

static void test_act_throttle_cpu_writes_cpu_max(void **state)
{
	assert_int_equal(act(BM_ACT_THROTTLE, BM_P_CPU, 1.8, 0.5, "policy", T0 + 120 * MS), 0);
	assert_string_equal(knob_take(f.dir, "cpu.max"), "50000 100000");
	assert_string_equal(knob_take(f.dir, "cgroup.freeze"), "");
	assert_true(f.a.throttled);
	assert_false(f.a.duty);
	/* a controller holds it: no duty cycle to tick */
	assert_true(bm_act_tick(&f.a, T0 + 200 * MS) == UINT64_MAX);
	assert_int_equal(f.out.n_actions, 1);
	assert_action(0, 120, "throttle", "cpu_ceiling", 1.8, 0.5);
}

static void test_act_throttle_memory_writes_memory_high(void **state)
{
	assert_int_equal(act(BM_ACT_THROTTLE, BM_P_MEM, 3e8, 2.5e8, "policy", T0 + 7 * MS), 0);
	assert_string_equal(knob_take(f.dir, "memory.high"), "250000000");
	assert_string_equal(knob_take(f.dir, "cpu.max"), "");
	assert_action(0, 7, "throttle", "memory_ceiling", 3e8, 2.5e8);
}

static void test_act_unthrottle_restores(void **state)
{
	/* the CPU ceiling (1.5 cores) comes back, memory.high goes back to max */
	f.lim.cpu_milli = 1500;
	act(BM_ACT_THROTTLE, BM_P_CPU, 2, 0.25, "policy", T0 + 100 * MS);
	assert_string_equal(knob_take(f.dir, "cpu.max"), "25000 100000");
	assert_int_equal(act(BM_ACT_UNTHROTTLE, BM_P_CPU, 0.1, 0.25, "policy", T0 + 350 * MS), 0);
	assert_string_equal(knob_take(f.dir, "cpu.max"), "150000 100000");
	assert_string_equal(knob_take(f.dir, "memory.high"), "max");
	assert_false(f.a.throttled);
	assert_true(f.a.throttled_ns == 250 * MS);
	assert_action(1, 350, "unthrottle", "cpu_ceiling", 0.1, 0.25);
	/* and without a ceiling: no limit at all */
	f.lim.cpu_milli = 0;
	act(BM_ACT_THROTTLE, BM_P_CPU, 2, 0.25, "policy", T0 + 400 * MS);
	assert_string_equal(knob_take(f.dir, "cpu.max"), "25000 100000");
	act(BM_ACT_UNTHROTTLE, BM_P_CPU, 0.1, 0.25, "policy", T0 + 410 * MS);
	assert_string_equal(knob_take(f.dir, "cpu.max"), "max 100000");
	assert_true(f.a.throttled_ns == 260 * MS);
	/* unthrottling what is not throttled touches nothing and adds no time */
	act(BM_ACT_UNTHROTTLE, BM_P_CPU, 0.1, 0.25, "policy", T0 + 900 * MS);
	assert_string_equal(knob_take(f.dir, "cpu.max"), "");
	assert_true(f.a.throttled_ns == 260 * MS);
}

static void test_act_duty_cycle_toggles_for_share(void **state)
{
	const uint64_t t = T0 + 100 * MS;

	no_controllers();
	/* 2 cores down to 0.5: run a quarter of the 40 ms period, 10 ms, frozen 30 ms */
	assert_int_equal(act(BM_ACT_THROTTLE, BM_P_CPU, 2, 0.5, "policy", t), 0);
	assert_true(f.a.duty);
	assert_true(f.a.duty_period_ns == 40 * MS);
	assert_true(f.a.duty_run_ns == 10 * MS);
	assert_true(bm_act_tick(&f.a, t) == t + 30 * MS);
	assert_string_equal(knob_take(f.dir, "cgroup.freeze"), "1");
	/* not due yet: nothing written, the same time returned */
	assert_true(bm_act_tick(&f.a, t + 29 * MS) == t + 30 * MS);
	assert_string_equal(knob_take(f.dir, "cgroup.freeze"), "");
	assert_true(bm_act_tick(&f.a, t + 30 * MS) == t + 40 * MS);
	assert_string_equal(knob_take(f.dir, "cgroup.freeze"), "0");
	assert_true(bm_act_tick(&f.a, t + 40 * MS) == t + 70 * MS);
	assert_string_equal(knob_take(f.dir, "cgroup.freeze"), "1");
	/* the next period starts from the late tick, not from the schedule */
	assert_true(bm_act_tick(&f.a, t + 75 * MS) == t + 85 * MS);
	assert_string_equal(knob_take(f.dir, "cgroup.freeze"), "0");
	/* nothing was written to a controller that is not there */
	assert_string_equal(knob_take(f.dir, "cpu.max"), "");
	assert_action(0, 100, "throttle", "cpu_ceiling", 2, 0.5);
}

static void test_act_duty_share_clamps(void **state)
{
	no_controllers();
	/* a hundredfold over runs a tenth, not a hundredth: the effect must make progress */
	act(BM_ACT_THROTTLE, BM_P_CPU, 100, 1, "policy", T0);
	assert_true(f.a.duty_run_ns == 4 * MS);
	/* under its target runs 0.9, never the whole period */
	act(BM_ACT_THROTTLE, BM_P_NET, 1e6, 5e6, "policy", T0);
	assert_true(f.a.duty_run_ns == 36 * MS);
	/* nothing observed: half */
	act(BM_ACT_THROTTLE, BM_P_PIDS, 0, 10, "policy", T0);
	assert_true(f.a.duty_run_ns == 20 * MS);
	/* pids and net have no controller to throttle with, even where cpu and memory do */
	f.ceil.v2_cpu = f.ceil.v2_mem = true;
	act(BM_ACT_THROTTLE, BM_P_NET, 4e6, 1e6, "policy", T0);
	assert_true(f.a.duty);
	assert_true(f.a.duty_run_ns == 10 * MS);
}

static void test_act_freeze_and_thaw(void **state)
{
	assert_int_equal(act(BM_ACT_FREEZE, BM_P_MEM, 7e7, 6e7, "policy", T0 + 80 * MS), 0);
	assert_string_equal(knob_take(f.dir, "cgroup.freeze"), "1");
	assert_true(f.a.frozen);
	/* frozen again: the freeze started at the first one */
	act(BM_ACT_FREEZE, BM_P_MEM, 7e7, 6e7, "policy", T0 + 90 * MS);
	assert_true(f.a.frozen_at_ns == T0 + 80 * MS);
	assert_int_equal(act(BM_ACT_THAW, BM_P_MEM, 1e7, 6e7, "policy", T0 + 580 * MS), 0);
	assert_string_equal(knob_take(f.dir, "cgroup.freeze"), "0");
	assert_false(f.a.frozen);
	assert_true(f.a.frozen_ns == 500 * MS);
	assert_action(0, 80, "freeze", "memory_ceiling", 7e7, 6e7);
	assert_action(2, 580, "thaw", "memory_ceiling", 1e7, 6e7);
}

static void test_act_freeze_while_duty_frozen(void **state)
{
	const uint64_t t = T0;

	no_controllers();
	act(BM_ACT_THROTTLE, BM_P_CPU, 2, 0.5, "policy", t);
	bm_act_tick(&f.a, t);					/* frozen half: 30 ms */
	assert_string_equal(knob_take(f.dir, "cgroup.freeze"), "1");
	act(BM_ACT_FREEZE, BM_P_CPU, 3, 2, "policy", t + 5 * MS);
	assert_string_equal(knob_take(f.dir, "cgroup.freeze"), "1");
	/* the FREEZE step holds through the duty cycle's running half */
	assert_true(bm_act_tick(&f.a, t + 30 * MS) == t + 40 * MS);
	assert_false(f.a.duty_frozen);
	assert_string_equal(knob_take(f.dir, "cgroup.freeze"), "");
	assert_true(bm_act_tick(&f.a, t + 40 * MS) == t + 70 * MS);
	assert_string_equal(knob_take(f.dir, "cgroup.freeze"), "");
	/* a thaw in the duty cycle's frozen half leaves it frozen until the toggle */
	act(BM_ACT_THAW, BM_P_CPU, 0.1, 1, "policy", t + 50 * MS);
	assert_string_equal(knob_take(f.dir, "cgroup.freeze"), "");
	assert_true(f.a.frozen_ns == 45 * MS);
	bm_act_tick(&f.a, t + 70 * MS);
	assert_string_equal(knob_take(f.dir, "cgroup.freeze"), "0");
	/* unthrottled in the running half: nothing to thaw */
	act(BM_ACT_UNTHROTTLE, BM_P_CPU, 0.1, 0.5, "policy", t + 75 * MS);
	assert_string_equal(knob_take(f.dir, "cgroup.freeze"), "");
	assert_false(f.a.duty);
	assert_true(bm_act_tick(&f.a, t + 80 * MS) == UINT64_MAX);
}

static void test_act_unthrottle_thaws_duty_frozen(void **state)
{
	no_controllers();
	act(BM_ACT_THROTTLE, BM_P_CPU, 2, 0.5, "policy", T0);
	bm_act_tick(&f.a, T0);
	assert_string_equal(knob_take(f.dir, "cgroup.freeze"), "1");
	assert_int_equal(act(BM_ACT_UNTHROTTLE, BM_P_CPU, 0.1, 0.5, "policy", T0 + 10 * MS), 0);
	assert_string_equal(knob_take(f.dir, "cgroup.freeze"), "0");
	assert_true(f.a.throttled_ns == 10 * MS);
}

static void test_act_finish_closes_intervals(void **state)
{
	f.lim.cpu_milli = 1000;
	act(BM_ACT_THROTTLE, BM_P_CPU, 1.5, 0.5, "policy", T0 + 100 * MS);
	act(BM_ACT_FREEZE, BM_P_CPU, 2.5, 2, "policy", T0 + 200 * MS);
	knob_take(f.dir, "cpu.max");
	knob_take(f.dir, "cgroup.freeze");
	bm_act_finish(&f.a, T0 + 450 * MS);
	/* thawed, the ceiling back in place, both intervals closed at the end */
	assert_string_equal(knob_take(f.dir, "cgroup.freeze"), "0");
	assert_string_equal(knob_take(f.dir, "cpu.max"), "100000 100000");
	assert_true(f.out.frozen_s == 0.25);
	assert_true(f.out.throttled_s == 0.35);
	/* closed intervals add to what was closed before */
	teardown(state);
	setup(state);
	act(BM_ACT_FREEZE, BM_P_MEM, 2, 1, "policy", T0 + 10 * MS);
	act(BM_ACT_THAW, BM_P_MEM, 0, 1, "policy", T0 + 30 * MS);
	act(BM_ACT_FREEZE, BM_P_MEM, 2, 1, "policy", T0 + 100 * MS);
	bm_act_finish(&f.a, T0 + 105 * MS);
	assert_true(f.out.frozen_s == 0.025);
	assert_true(f.out.throttled_s == 0);
}

static void test_act_finish_thaws_duty_frozen(void **state)
{
	no_controllers();
	act(BM_ACT_THROTTLE, BM_P_CPU, 2, 0.5, "policy", T0);
	bm_act_tick(&f.a, T0);
	knob_take(f.dir, "cgroup.freeze");
	bm_act_finish(&f.a, T0 + 20 * MS);
	assert_string_equal(knob_take(f.dir, "cgroup.freeze"), "0");
	assert_true(f.out.throttled_s == 0.02);
	assert_true(f.out.frozen_s == 0);
	/* the duty cycle is over */
	assert_true(bm_act_tick(&f.a, T0 + 30 * MS) == UINT64_MAX);
}

static void test_act_cancel_signals_and_ends(void **state)
{
	child_in_cgroup();
	assert_int_equal(act(BM_ACT_CANCEL, BM_P_MEM, 7e7, 6.4e7, "policy", T0 + 300 * MS), 0);
	assert_int_equal(child_signal(), SIGTERM);
	assert_true(f.a.ended);
	assert_int_equal(f.a.cause, BM_P_MEM);
	assert_string_equal(f.a.by, "policy");
	/* a cancel is a signal, not cgroup.kill */
	assert_string_equal(knob_take(f.dir, "cgroup.kill"), "");
	assert_action(0, 300, "cancel", "memory_ceiling", 7e7, 6.4e7);
}

static void test_act_kill_writes_cgroup_kill(void **state)
{
	no_controllers();
	act(BM_ACT_THROTTLE, BM_P_CPU, 2, 0.5, "policy", T0);
	assert_int_equal(act(BM_ACT_KILL, BM_P_PIDS, 33, 32, "kernel", T0 + 42 * MS), 0);
	assert_string_equal(knob_take(f.dir, "cgroup.kill"), "1");
	assert_true(f.a.ended);
	assert_int_equal(f.a.cause, BM_P_PIDS);
	assert_string_equal(f.a.by, "kernel");
	assert_action(1, 42, "kill", "pids_ceiling", 33, 32);
	/* an ended effect's duty cycle stops toggling */
	assert_true(bm_act_tick(&f.a, T0 + 50 * MS) == UINT64_MAX);
	assert_string_equal(knob_take(f.dir, "cgroup.freeze"), "");
}

static void test_act_kill_without_cgroup_kill_signals_procs(void **state)
{
	/* before 5.14 there is no cgroup.kill: SIGKILL to what cgroup.procs lists */
	assert_int_equal(unlink(fake_path("%s/cgroup.kill", f.dir)), 0);
	child_in_cgroup();
	act(BM_ACT_KILL, BM_P_MEM, 2, 1, "policy", T0);
	assert_int_equal(child_signal(), SIGKILL);
	assert_true(f.a.ended);
}

static void test_act_write_failure_is_returned(void **state)
{
	/* a knob that cannot be written: the error comes back, and no freeze is counted */
	assert_int_equal(unlink(fake_path("%s/cgroup.freeze", f.dir)), 0);
	assert_int_equal(act(BM_ACT_FREEZE, BM_P_MEM, 2, 1, "policy", T0), -ENOENT);
	assert_false(f.a.frozen);
	bm_act_finish(&f.a, T0 + 100 * MS);
	assert_true(f.out.frozen_s == 0);
	assert_int_equal(unlink(fake_path("%s/cpu.max", f.dir)), 0);
	assert_int_equal(act(BM_ACT_THROTTLE, BM_P_CPU, 2, 1, "policy", T0), -ENOENT);
	/* a controller that fails is not a reason for a duty cycle */
	assert_false(f.a.duty);
}

static void test_act_unknown_action_is_einval(void **state)
{
	assert_int_equal(act(BM_ACT__MAX, BM_P_CPU, 1, 1, "policy", T0), -EINVAL);
	assert_int_equal(f.out.n_actions, 0);
}

static void test_act_records_at_most_max(void **state)
{
	int i;

	for (i = 0; i < BM_MAX_ACTIONS + 6; i++)
		act(i & 1 ? BM_ACT_THAW : BM_ACT_FREEZE, BM_P_CPU, i, 1, "policy",
		    T0 + (uint64_t)i * MS);
	assert_int_equal(f.out.n_actions, BM_MAX_ACTIONS);
	assert_action(BM_MAX_ACTIONS - 1, BM_MAX_ACTIONS - 1, "thaw", "cpu_ceiling",
		      BM_MAX_ACTIONS - 1, 1);
	/* the actions past the record were still carried out */
	assert_false(f.a.frozen);
	assert_true(f.a.frozen_ns == (BM_MAX_ACTIONS + 6) / 2 * MS);
}

/* A cap from outside the ladder (the agent's budgets): cpu.max, recorded, lifted to the ceiling. */
static void test_act_cap_writes_and_lifts(void **state)
{
	f.lim.cpu_milli = 1500;
	assert_int_equal(bm_act_cap(&f.a, 0.4, 1, "cpu_seconds_budget", -2.5, T0 + 100 * MS), 0);
	assert_string_equal(knob_take(f.dir, "cpu.max"), "40000 100000");
	/* and it yields to its siblings, out of the idle class (an adopted one may be in it) */
	assert_string_equal(knob_take(f.dir, "cpu.weight"), "1");
	assert_string_equal(knob_take(f.dir, "cpu.idle"), "0");
	assert_true(f.a.capped);
	assert_action(0, 100, "throttle", "cpu_seconds_budget", -2.5, 0.4);
	/* the same cap again: nothing written, nothing recorded */
	assert_int_equal(bm_act_cap(&f.a, 0.4, 1, "cpu_seconds_budget", -2, T0 + 120 * MS), 0);
	assert_string_equal(knob_take(f.dir, "cpu.max"), "");
	assert_string_equal(knob_take(f.dir, "cpu.weight"), "");
	assert_int_equal(f.out.n_actions, 1);
	/* tighter: a tiny share is still a quota cpu.max takes (1 ms in 100); a new level, no record */
	assert_int_equal(bm_act_cap(&f.a, 0.001, 1, "cpu_seconds_budget", -3, T0 + 150 * MS), 0);
	assert_string_equal(knob_take(f.dir, "cpu.max"), "1000 100000");
	assert_int_equal(f.out.n_actions, 1);
	/* lifted: back to the ceiling, and the unthrottle names the cap it lifts; still yielding */
	assert_int_equal(bm_act_cap(&f.a, 0, 1, "cpu_seconds_budget", 1, T0 + 350 * MS), 0);
	assert_string_equal(knob_take(f.dir, "cpu.max"), "150000 100000");
	assert_string_equal(knob_take(f.dir, "cpu.weight"), "");
	assert_false(f.a.capped);
	assert_action(1, 350, "unthrottle", "cpu_seconds_budget", 1, 0.01);
	/* and back to the default weight */
	assert_int_equal(bm_act_cap(&f.a, 0, 0, "cpu_seconds_budget", 1, T0 + 400 * MS), 0);
	assert_string_equal(knob_take(f.dir, "cpu.weight"), "100");
	assert_int_equal(f.out.n_actions, 2);
	bm_act_finish(&f.a, T0 + 500 * MS);
	assert_true(f.out.throttled_s == 0.25);
}

/*
 * The lowest of all, BM_CPU_IDLE, is the idle class: cpu.idle 1 and no weight
 * (the kernel refuses one there); leaving it writes cpu.idle 0 before the
 * weight. A kernel without cpu.idle (before 5.15) gets weight 1.
 */
static void test_act_cap_idle_class(void **state)
{
	assert_int_equal(bm_act_cap(&f.a, 0.4, BM_CPU_IDLE, "cpu_seconds_budget", -1, T0), 0);
	assert_string_equal(knob_take(f.dir, "cpu.idle"), "1");
	assert_string_equal(knob_take(f.dir, "cpu.weight"), "");
	assert_int_equal(bm_act_cap(&f.a, 0.4, 0, "cpu_seconds_budget", 1, T0 + 10 * MS), 0);
	assert_string_equal(knob_take(f.dir, "cpu.idle"), "0");
	assert_string_equal(knob_take(f.dir, "cpu.weight"), "100");
	assert_int_equal(unlinkat(f.cg.dirfd, "cpu.idle", 0), 0);
	assert_int_equal(bm_act_cap(&f.a, 0.4, BM_CPU_IDLE, "cpu_seconds_budget", -1, T0 + 20 * MS), 0);
	assert_string_equal(knob_take(f.dir, "cpu.weight"), "1");
	assert_int_equal(bm_act_cap(&f.a, 0.4, 0, "cpu_seconds_budget", 1, T0 + 30 * MS), 0);
	assert_string_equal(knob_take(f.dir, "cpu.weight"), "100");
}

/* On a v1 twin: cfs_quota_us and cpu.shares (weight x 1024 / 100, at least 2), cpu.idle. */
static void test_act_cap_on_v1(void **state)
{
	char v1[PATH_MAX];

	/* a copy: fake_path()'s buffers are reused */
	snprintf(v1, sizeof(v1), "%s/v1cpu", f.root);
	fake_mkdirs(v1);
	fake_files(v1, fake_v1_files[BM_V1_CPU]);
	f.ceil.v2_cpu = false;
	f.ceil.v1_cpu_dirfd = open(v1, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(f.ceil.v1_cpu_dirfd >= 0);
	assert_int_equal(bm_act_cap(&f.a, 0.25, 1, "node_pressure", 1.5, T0), 0);
	assert_string_equal(knob_take(v1, "cpu.cfs_quota_us"), "25000");
	assert_string_equal(knob_take(v1, "cpu.shares"), "10");
	assert_int_equal(bm_act_cap(&f.a, 0, 0, "node_pressure", 0.1, T0 + 10 * MS), 0);
	assert_string_equal(knob_take(v1, "cpu.cfs_quota_us"), "-1");
	assert_string_equal(knob_take(v1, "cpu.shares"), "1024");
	assert_int_equal(bm_act_cap(&f.a, 0.25, BM_CPU_IDLE, "node_pressure", 1.5, T0 + 20 * MS), 0);
	assert_string_equal(knob_take(v1, "cpu.idle"), "1");
	assert_string_equal(knob_take(v1, "cpu.shares"), "");
	close(f.ceil.v1_cpu_dirfd);
	f.ceil.v1_cpu_dirfd = -1;
}

/* The cap and the ladder: the lower holds, and the ladder's unthrottle goes back to the cap. */
static void test_act_cap_and_ladder_take_the_lower(void **state)
{
	assert_int_equal(bm_act_cap(&f.a, 0.5, 0, "node_pressure", 1.9, T0), 0);
	assert_string_equal(knob_take(f.dir, "cpu.max"), "50000 100000");
	assert_string_equal(knob_take(f.dir, "cpu.weight"), "");
	act(BM_ACT_THROTTLE, BM_P_CPU, 1.8, 0.25, "policy", T0 + 100 * MS);
	assert_string_equal(knob_take(f.dir, "cpu.max"), "25000 100000");
	act(BM_ACT_UNTHROTTLE, BM_P_CPU, 0.1, 0.25, "policy", T0 + 200 * MS);
	assert_string_equal(knob_take(f.dir, "cpu.max"), "50000 100000");
	/* a ladder throttle above the cap: the cap holds */
	act(BM_ACT_THROTTLE, BM_P_CPU, 1.8, 1.5, "policy", T0 + 300 * MS);
	assert_string_equal(knob_take(f.dir, "cpu.max"), "50000 100000");
	/* the cap lifted while the ladder throttles: the ladder's level, not none */
	assert_int_equal(bm_act_cap(&f.a, 0, 0, "node_pressure", 0.2, T0 + 400 * MS), 0);
	assert_string_equal(knob_take(f.dir, "cpu.max"), "150000 100000");
	act(BM_ACT_UNTHROTTLE, BM_P_CPU, 0.1, 1.5, "policy", T0 + 500 * MS);
	assert_string_equal(knob_take(f.dir, "cpu.max"), "max 100000");
	bm_act_finish(&f.a, T0 + 600 * MS);
	/* throttled from 0 to 500 ms, by one or the other: counted once */
	assert_true(f.out.throttled_s == 0.5);
}

/* No CPU controller for the effect: nothing to cap with, nothing done; and an ended effect. */
static void test_act_cap_without_controller(void **state)
{
	no_controllers();
	assert_int_equal(bm_act_cap(&f.a, 0.5, 1, "cpu_seconds_budget", 0, T0), -EOPNOTSUPP);
	assert_string_equal(knob_take(f.dir, "cpu.max"), "");
	assert_false(f.a.capped);
	assert_int_equal(f.out.n_actions, 0);
	f.ceil.v2_cpu = true;
	f.a.ended = true;
	assert_int_equal(bm_act_cap(&f.a, 0.5, 1, "cpu_seconds_budget", 0, T0), -EALREADY);
}

/*
 * The I/O rung end to end in user space: a policy whose io level is
 * 64 MiB/s with steps throttle and freeze, the ladder (bm_policy_step())
 * fed windows of 200 MiB/s, its verdicts carried out here on an effect
 * with v2 io.max for one disk. Truth: first a throttle (io.max at the
 * level, reads and writes, no iops), still over it past the cooldown a
 * freeze (cgroup.freeze), both recorded as io_ceiling; calm for a
 * cooldown it thaws, and a step later the throttle is lifted (max).
 */
static void test_act_io_throttle_then_freeze(void **state)
{
	const double level = 64.0 * 1024 * 1024, rate = 200.0 * 1024 * 1024;
	struct bm_ladder lad;
	struct bm_sample smp;
	struct bm_verdict v;
	uint64_t t;
	unsigned int i;

	f.ceil.v2_io = true;
	f.ceil.n_io_dev = 1;
	snprintf(f.ceil.io_dev[0], sizeof(f.ceil.io_dev[0]), "8:0");
	fake_knob(f.dir, "io.max");
	f.pol.dim[BM_P_IO] = (struct bm_dim_rule){
		.soft = level, .hold_ms = 0,
		.steps = BM_STEP_BIT(BM_STEP_THROTTLE) | BM_STEP_BIT(BM_STEP_FREEZE),
	};
	f.pol.cooldown_ms = 100;
	f.pol.freeze_timeout_ms = 10000;
	bm_ladder_init(&lad);
	memset(&smp, 0, sizeof(smp));
	for (t = 0; t <= 400; t += 10) {
		/* over the level for 200 ms, then calm */
		smp.value[BM_P_IO] = t < 200 ? rate : 0;
		bm_policy_step(&f.pol, &lad, &smp, T0 + t * MS, &v);
		for (i = 0; i < v.n; i++)
			assert_int_equal(bm_act_do(&f.a, &v.a[i], "policy", T0 + t * MS), 0);
		if (t == 0) {
			assert_string_equal(knob_take(f.dir, "io.max"),
					    "8:0 rbps=67108864 wbps=67108864 riops=max wiops=max");
			assert_string_equal(knob_take(f.dir, "cgroup.freeze"), "");
			assert_true(f.a.throttled);
		}
		/* within the cooldown, no second action; then the freeze */
		if (t == 90)
			assert_int_equal(f.out.n_actions, 1);
		if (t == 100) {
			assert_string_equal(knob_take(f.dir, "cgroup.freeze"), "1");
			assert_true(f.a.frozen);
		}
	}
	assert_int_equal(f.out.n_actions, 4);
	assert_action(0, 0, "throttle", "io_ceiling", rate, level);
	assert_action(1, 100, "freeze", "io_ceiling", rate, level);
	/* calm from 200 ms: thawed after a cooldown, then a step down, the throttle lifted */
	assert_string_equal(f.out.actions[2].action, "thaw");
	assert_true(f.out.actions[2].at_ms == 300);
	assert_string_equal(f.out.actions[3].action, "unthrottle");
	assert_true(f.out.actions[3].at_ms > 300);
	assert_string_equal(knob_take(f.dir, "cgroup.freeze"), "0");
	assert_string_equal(knob_take(f.dir, "io.max"), "8:0 rbps=max wbps=max riops=max wiops=max");
	assert_false(f.a.throttled);
	assert_false(f.a.frozen);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_act_throttle_cpu_writes_cpu_max),
		T(test_act_cap_writes_and_lifts),
		T(test_act_cap_idle_class),
		T(test_act_cap_on_v1),
		T(test_act_cap_and_ladder_take_the_lower),
		T(test_act_cap_without_controller),
		T(test_act_throttle_memory_writes_memory_high),
		T(test_act_io_throttle_then_freeze),
		T(test_act_unthrottle_restores),
		T(test_act_duty_cycle_toggles_for_share),
		T(test_act_duty_share_clamps),
		T(test_act_freeze_and_thaw),
		T(test_act_freeze_while_duty_frozen),
		T(test_act_unthrottle_thaws_duty_frozen),
		T(test_act_finish_closes_intervals),
		T(test_act_finish_thaws_duty_frozen),
		T(test_act_cancel_signals_and_ends),
		T(test_act_kill_writes_cgroup_kill),
		T(test_act_kill_without_cgroup_kill_signals_procs),
		T(test_act_write_failure_is_returned),
		T(test_act_unknown_action_is_einval),
		T(test_act_records_at_most_max),
	};
#undef T

	return cmocka_run_group_tests_name("act", tests, NULL, NULL);
}
