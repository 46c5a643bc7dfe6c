// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/effect/sup.c with its kernel side faked through struct bm_sup_ops:
 * a clock the test sets, the effect cgroup made in a fake cgroupfs
 * (tests/unit/fakecg.h), and a meter that is a struct bm_meter the test
 * fills as the BPF side would. The lifecycle runs as the event loops of
 * `run` and the agent drive it (start, events, ticks when timer_at is due,
 * exited, done, finish, release), and each ending is checked for its
 * reason; so are the times timer_at and deadline_at move to.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <sys/wait.h>

#include "fakecg.h"
#include "effect/sup.h"

#define MS 1000000ULL
#define W_NS (10 * MS)
#define T0 (1000 * W_NS)	/* the effect starts at the start of window 1000 */
#define MIB (1024ULL * 1024)
#define NEVER UINT64_MAX

static struct {
	char root[256];		/* short: the paths built from it fit PATH_MAX */
	char parent[512], eff[1024];
	struct bm_cgroup_env env;
	struct bm_sup_opts o;
	struct bm_sup s;
	char *argv[2];
	pid_t child;
	/* the fake kernel side */
	uint64_t now;
	uint64_t watch;			/* the last window the kernel was told the ladder looks at */
	unsigned int watches;
	struct bm_meter m;
	struct bm_features feat;
	uint64_t stats[BM_STAT__MAX];
	uint64_t thresh[BM_DIM__MAX], kill_at[BM_DIM__MAX];
	uint64_t add_window, add_start;
	int add_err, arm_err, read_err;
	int creates, removes, adds, arms, dels, moved;
} f;

static uint64_t fake_now(void)
{
	return f.now;
}

/* mkdir on cgroupfs: the knobs of what our cgroup offers come with it. */
static struct bm_cgroup *fake_create(const char *parent_dir, const char *name)
{
	struct bm_cgroup *cg;

	f.creates++;
	snprintf(f.eff, sizeof(f.eff), "%s/%s", parent_dir, name);
	if (mkdir(f.eff, 0755))
		return NULL;
	fake_v2_knobs(f.eff, knob_peek(parent_dir, "cgroup.controllers"));
	cg = calloc(1, sizeof(*cg) + PATH_MAX);
	assert_non_null(cg);
	cg->path = (char *)(cg + 1);
	snprintf(cg->path, PATH_MAX, "%s", f.eff);
	cg->dirfd = open(f.eff, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cg->id = 4242;
	return cg;
}

static int fake_remove(struct bm_cgroup *cg)
{
	f.removes++;
	fake_unknob(cg->path);
	return rmdir(cg->path) ? -errno : 0;
}

/* The meter as the loader starts it: every window index at the start's. */
static int fake_add(struct bm_loader *l, const struct bm_cgroup *cg, uint64_t window_ns,
		    uint64_t start_ns, const uint64_t thresh[BM_DIM__MAX])
{
	f.adds++;
	f.add_window = window_ns;
	f.add_start = start_ns;
	if (f.add_err)
		return f.add_err;
	memset(&f.m, 0, sizeof(f.m));
	f.m.window_ns = window_ns;
	f.m.first_win = f.m.last_win = f.m.lvl_win = start_ns / window_ns;
	f.m.slot = BM_SLOT_NONE;
	return 0;
}

static int fake_arm(struct bm_loader *l, const struct bm_cgroup *cg,
		    const uint64_t thresh[BM_DIM__MAX], const uint64_t kill_at[BM_DIM__MAX])
{
	f.arms++;
	if (thresh)
		memcpy(f.thresh, thresh, sizeof(f.thresh));
	if (kill_at)
		memcpy(f.kill_at, kill_at, sizeof(f.kill_at));
	return f.arm_err;
}

static int fake_read(struct bm_loader *l, const struct bm_cgroup *cg, struct bm_meter *out)
{
	if (f.read_err)
		return f.read_err;
	*out = f.m;
	return 0;
}

static void fake_claim(struct bm_loader *l, uint32_t slot)
{
}

static int fake_del(struct bm_loader *l, const struct bm_cgroup *cg)
{
	f.dels++;
	return 0;
}

static void fake_watch(struct bm_loader *l, uint32_t slot, uint64_t until_win)
{
	f.watch = until_win;
	f.watches++;
}

static int fake_stats(struct bm_loader *l, uint64_t out[BM_STAT__MAX])
{
	memcpy(out, f.stats, sizeof(f.stats));
	return 0;
}

static const struct bm_features *fake_features(const struct bm_loader *l)
{
	return &f.feat;
}

static const struct bm_sup_ops fake_ops = {
	.now_ns = fake_now,
	.cg_create = fake_create,
	.cg_remove = fake_remove,
	.cg_remove_try = fake_remove,
	.cgfs = &fake_cgfs,
	.add = fake_add,
	.arm = fake_arm,
	.read = fake_read,
	.claim = fake_claim,
	.watch = fake_watch,
	.del = fake_del,
	.stats = fake_stats,
	.features = fake_features,
};

static void timers_moved(void *ctx)
{
	f.moved++;
}

static int setup(void **state)
{
	memset(&f, 0, sizeof(f));
	fake_root(f.root, sizeof(f.root));
	snprintf(f.parent, sizeof(f.parent), "%s/v2/job", f.root);
	fake_mkdirs(f.parent);
	f.env.mode = BM_CG_V2;
	snprintf(f.env.v2_mount, PATH_MAX, "%s/v2", f.root);
	snprintf(f.env.v2_self, PATH_MAX, "/job");
	f.argv[0] = "true";
	f.o = (struct bm_sup_opts){
		.id = "e1", .tenant = "unit", .intent = "a unit test", .argv = f.argv,
		.window_ns = W_NS, .shared_timers = true, .timers_moved = timers_moved,
	};
	bm_policy_default(&f.o.policy);
	f.feat.net = BM_NET_SRC_TP;
	f.now = T0;
	bm_sup__init(&f.s);
	f.s.ops = &fake_ops;
	return 0;
}

static int teardown(void **state)
{
	int st;

	if (f.child > 0) {
		kill(f.child, SIGKILL);
		waitpid(f.child, &st, 0);
	}
	if (f.s.cg)
		fake_populated(f.s.cg->path, 0);
	bm_sup__release(&f.s);
	fake_rmtree(f.root);
	return 0;
}

/* Our cgroup offers ctrls to the effect and enables them when asked. */
static void offers(const char *ctrls)
{
	fake_put(f.parent, "cgroup.controllers", fake_path("%s\n", ctrls));
	if (*ctrls)
		fake_delegated(f.parent, ctrls);
	else
		fake_put(f.parent, "cgroup.subtree_control", "");
}

static uint64_t at(uint64_t ms)
{
	return T0 + ms * MS;
}

static int start(void)
{
	return bm_sup__start(&f.s, NULL, &f.env, f.parent, &f.o);
}

/* The meter saw cores of CPU in the window of t (an open flow slot). */
static void cpu(uint64_t t, double cores)
{
	uint64_t x = t / W_NS;
	unsigned int slot = x % BM_RING;

	f.m.slot_win[slot] = x;
	f.m.lane[0].v[slot][BM_DIM_CPU] = (uint64_t)(cores * W_NS);
	if (x > f.m.last_win)
		f.m.last_win = x;
}

static void event(enum bm_ev_type type, enum bm_dim d, uint64_t value, uint64_t thresh)
{
	struct bm_event e = { .cgid = 4242, .time_ns = f.now, .win = f.now / W_NS, .value = value,
			      .thresh = thresh, .type = type, .dim = d };

	bm_sup__event(&f.s, &e);
}

/* The event loop's part: at t, if the timer is due, tick. */
static void tick_at(uint64_t t)
{
	f.now = t;
	assert_true(f.s.timer_at <= t);
	bm_sup__tick(&f.s);
}

/* Tick whenever the timer says, up to and including t; returns how many times. */
static int run_until(uint64_t t)
{
	int n = 0;

	while (f.s.timer_at <= t && !bm_sup__done(&f.s) && n < 1000) {
		tick_at(f.s.timer_at > f.now ? f.s.timer_at : f.now);
		n++;
	}
	return n;
}

/* The command exited at t; drain at once (the DRAINED record) and build the outcome. */
static void exit_and_finish(uint64_t t, int status)
{
	f.now = t;
	bm_sup__exited(&f.s, status);
	event(BM_EV_DRAINED, 0, 0, 0);
	tick_at(t);
	assert_true(bm_sup__done(&f.s));
	bm_sup__finish(&f.s);
}

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
	fake_put(f.eff, "cgroup.procs", pid);
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
	/* reaped: its pid may be anyone's now, so no later signal may find it listed */
	fake_put(f.eff, "cgroup.procs", "");
	return WIFSIGNALED(st) ? WTERMSIG(st) : 0;
}

static void assert_reason(enum bm_reason r, const char *by)
{
	assert_string_equal(bm_reason_name(f.s.out.reason), bm_reason_name(r));
	assert_string_equal(f.s.out.by, by);
}

static void test_sup_start_registers_and_arms(void **state)
{
	offers("cpu memory pids");
	f.o.limits = (struct bm_limits){ .cpu_milli = 500, .memory_bytes = 64 * MIB, .pids = 32,
					 .timeout_ns = 2000 * MS };
	assert_int_equal(start(), 0);
	assert_null(f.s.failed_step);
	assert_int_equal(f.s.phase, BM_SUP_RUNNING);
	assert_int_equal(f.creates, 1);
	assert_string_equal(f.eff, fake_path("%s/burstmeter.unit@e1", f.parent));
	assert_string_equal(f.s.out.cgroup, f.eff);
	/* the ceilings, on the controllers our cgroup delegates */
	assert_string_equal(knob_take(f.eff, "cpu.max"), "50000 100000");
	assert_string_equal(knob_take(f.eff, "memory.max"), "67108864");
	assert_string_equal(knob_take(f.eff, "pids.max"), "32");
	assert_string_equal(f.s.out.ceiling_mech[BM_P_CPU], "cgroup v2 cpu.max");
	assert_string_equal(f.s.out.ceiling_mech[BM_P_MEM], "cgroup v2 memory.max");
	assert_string_equal(f.s.out.ceiling_mech[BM_P_PIDS], "cgroup v2 pids.max");
	assert_string_equal(f.s.out.net_source, "sock_send_length");
	/* metered from now, crossings near each ceiling; the controllers kill, not the meter */
	assert_int_equal(f.adds, 1);
	assert_true(f.add_window == W_NS && f.add_start == T0 && f.s.start_ns == T0);
	assert_int_equal(f.arms, 1);
	assert_true(f.thresh[BM_DIM_CPU] == 5000000);		/* 0.5 cores of 10 ms */
	assert_true(f.thresh[BM_DIM_MEM] == 60397978);		/* 0.9 x 64 MiB, rounded up */
	assert_true(f.thresh[BM_DIM_PIDS] == 29);		/* 0.9 x 32 = 28.8 */
	assert_true(f.thresh[BM_DIM_NET] == 0);
	assert_true(f.kill_at[BM_DIM_MEM] == 0 && f.kill_at[BM_DIM_PIDS] == 0);
	/* a first look at once; the deadline at the timeout */
	assert_true(f.s.timer_at == 0);
	assert_true(f.s.deadline_at == at(2000));
	assert_true(f.moved >= 2);
	assert_int_equal(f.s.timer_fd, -1);
	assert_int_equal(f.s.deadline_fd, -1);
}

static void test_sup_kernel_levels_without_controllers(void **state)
{
	/* nothing delegated: past a ceiling the kernel kills, one above it */
	offers("");
	f.o.limits = (struct bm_limits){ .memory_bytes = 64 * MIB, .pids = 32 };
	f.o.policy.dim[BM_P_CPU] = (struct bm_dim_rule){ .soft = 0.3, .steps = BM_STEPS_ALL };
	f.o.policy.dim[BM_P_NET] = (struct bm_dim_rule){ .soft = 1e6, .steps = BM_STEPS_ALL };
	assert_int_equal(start(), 0);
	assert_string_equal(f.s.out.ceiling_mech[BM_P_MEM], "meter");
	assert_string_equal(f.s.out.ceiling_mech[BM_P_PIDS], "meter");
	assert_true(f.kill_at[BM_DIM_MEM] == 64 * MIB + 1);
	assert_true(f.kill_at[BM_DIM_PIDS] == 33);
	assert_true(f.thresh[BM_DIM_CPU] == 3000000);		/* soft 0.3 cores */
	assert_true(f.thresh[BM_DIM_NET] == 10000);		/* 1 MB/s over 10 ms */
	/* no fast path: crossings only */
	teardown(state);
	setup(state);
	offers("");
	f.o.limits = (struct bm_limits){ .memory_bytes = 64 * MIB, .pids = 32 };
	f.o.no_fast_path = true;
	assert_int_equal(start(), 0);
	assert_true(f.kill_at[BM_DIM_MEM] == 0 && f.kill_at[BM_DIM_PIDS] == 0);
	assert_true(f.thresh[BM_DIM_MEM] == 60397978);
}

static void test_sup_meter_only_touches_no_controller(void **state)
{
	offers("cpu memory pids");
	f.o.limits = (struct bm_limits){ .cpu_milli = 500, .memory_bytes = 64 * MIB, .pids = 32 };
	f.o.meter_only = true;
	assert_int_equal(start(), 0);
	assert_string_equal(knob_take(f.eff, "cpu.max"), "");
	assert_string_equal(knob_take(f.eff, "memory.max"), "");
	assert_string_equal(knob_take(f.eff, "pids.max"), "");
	assert_string_equal(f.s.out.ceiling_mech[BM_P_CPU], "meter");
	assert_string_equal(f.s.out.ceiling_mech[BM_P_MEM], "meter");
	assert_string_equal(f.s.out.ceiling_mech[BM_P_PIDS], "meter");
	assert_null(f.s.out.ceiling_mech[BM_P_NET]);
	assert_true(f.kill_at[BM_DIM_MEM] == 64 * MIB + 1);
}

static void test_sup_lifecycle_throttle_completed(void **state)
{
	offers("cpu");
	f.o.limits.cpu_milli = 500;
	f.stats[BM_STAT_LATE] = 3;
	assert_int_equal(start(), 0);
	knob_take(f.eff, "cpu.max");
	/* the first look: nothing yet, no timer until something happens */
	tick_at(T0);
	assert_true(f.s.timer_at == NEVER);
	assert_int_equal(f.s.out.n_actions, 0);
	/* 0.9 cores in window 1003 crosses 0.5: look now, and throttle */
	f.now = at(35);
	cpu(at(35), 0.9);
	event(BM_EV_CROSS, BM_DIM_CPU, 9000000, 5000000);
	assert_true(f.s.timer_at == 0);
	tick_at(at(35));
	assert_int_equal(f.s.out.n_actions, 1);
	assert_true(f.s.out.actions[0].at_ms == 35);
	assert_string_equal(f.s.out.actions[0].action, "throttle");
	assert_string_equal(f.s.out.actions[0].reason, "cpu_ceiling");
	assert_true(f.s.out.actions[0].observed == 0.9);
	assert_true(f.s.out.actions[0].threshold == 0.5);
	assert_string_equal(knob_take(f.eff, "cpu.max"), "50000 100000");
	/* a step in force: the ladder looks every window */
	assert_true(f.s.timer_at == at(45));

	/* exited at 60 ms: the throttle is closed there, the drain begins */
	f.now = at(60);
	bm_sup__exited(&f.s, W_EXITCODE(0, 0));
	assert_int_equal(f.s.phase, BM_SUP_DRAINING);
	assert_true(f.s.timer_at == 0);
	assert_true(f.s.deadline_at == NEVER);
	assert_true(f.s.out.throttled_s == 0.025);
	tick_at(at(61));
	assert_true(f.s.timer_at == at(63));
	tick_at(at(63));
	assert_true(f.s.timer_at == at(67));
	event(BM_EV_DRAINED, 0, 0, 0);
	assert_true(f.s.timer_at == 0);
	tick_at(at(68));
	assert_true(bm_sup__done(&f.s));
	assert_true(f.s.timer_at == NEVER);

	fake_put_fixture(f.eff, "cpu.pressure", "v2/cpu.pressure");
	fake_put_fixture(f.eff, "memory.pressure", "v2/memory.pressure");
	fake_put_fixture(f.eff, "io.pressure", "v2/io.pressure");
	fake_put_fixture(f.eff, "cpu.stat", "v2/cpu.stat");
	bm_sup__finish(&f.s);
	assert_reason(BM_REASON_COMPLETED, "process");
	assert_int_equal(f.s.out.exit_code, 0);
	assert_true(f.s.out.wall_ns == 60 * MS);
	assert_non_null(f.s.out.sum);
	assert_true(f.s.out.sum->windows == 7);		/* 1000 ... 1006 */
	assert_true(f.s.out.sum->cpu_ns == 9000000);
	assert_true(f.s.out.stats[BM_STAT_LATE] == 3);
	assert_true(f.s.out.psi_cpu_us == 206690874);
	assert_true(f.s.out.psi_mem_us == 2573);
	assert_true(f.s.out.psi_io_us == 11633154);
	assert_true(f.s.out.cgroup_cpu_us == 3212250507ULL);
	assert_true(f.s.out.cgroup_mem_peak == -1);

	assert_int_equal(bm_sup__release(&f.s), 0);
	assert_int_equal(f.dels, 1);
	assert_int_equal(f.removes, 1);
	assert_int_equal(access(f.eff, F_OK), -1);
	assert_null(f.s.cg);
	assert_true(f.s.timer_at == NEVER && f.s.deadline_at == NEVER);
	/* released twice: nothing more */
	assert_int_equal(bm_sup__release(&f.s), 0);
	assert_int_equal(f.dels, 1);
}

static void test_sup_hold_acts_at_the_right_time(void **state)
{
	int looks = 0;

	/* over 0.5 cores for 100 ms before a throttle */
	offers("cpu");
	f.o.policy.dim[BM_P_CPU] = (struct bm_dim_rule){ .soft = 0.5, .hold_ms = 100,
							 .steps = BM_STEP_BIT(BM_STEP_THROTTLE) };
	assert_int_equal(start(), 0);
	tick_at(T0);
	f.now = at(20);
	cpu(at(20), 0.8);
	event(BM_EV_CROSS, BM_DIM_CPU, 8000000, 5000000);
	tick_at(at(20));
	/* over soft: a look every window (each at 0.8 cores), no action during the hold */
	assert_true(f.s.timer_at == at(30));
	while (f.s.timer_at <= at(110)) {
		cpu(f.s.timer_at, 0.8);
		tick_at(f.s.timer_at);
		looks++;
	}
	assert_int_equal(looks, 9);
	assert_int_equal(f.s.out.n_actions, 0);
	assert_true(f.s.timer_at == at(120));
	cpu(at(120), 0.8);
	tick_at(at(120));
	assert_int_equal(f.s.out.n_actions, 1);
	assert_true(f.s.out.actions[0].at_ms == 120);
	assert_string_equal(f.s.out.actions[0].action, "throttle");
	assert_true(f.s.out.actions[0].observed == 0.8);
	assert_true(f.s.out.actions[0].threshold == 0.5);
	assert_string_equal(knob_take(f.eff, "cpu.max"), "50000 100000");
}

/* Window 1003 at 0.9 cores; the look comes at t. How many actions did it take? */
static int look_after_window(uint64_t t)
{
	offers("cpu");
	f.o.limits.cpu_milli = 500;
	assert_int_equal(start(), 0);
	tick_at(T0);
	cpu(at(30), 0.9);
	f.now = t;
	event(BM_EV_CROSS, BM_DIM_CPU, 9000000, 5000000);
	tick_at(t);
	return (int)f.s.out.n_actions;
}

static void test_sup_fresh_window_counts_the_last_full_one(void **state)
{
	/* 1 ms into window 1004, still empty: 1003 is what the ladder sees */
	assert_int_equal(look_after_window(at(41)), 1);
	assert_true(f.s.out.actions[0].observed == 0.9);
	/* no look since window 1000: two windows on, 1003 still counts */
	teardown(state);
	setup(state);
	assert_int_equal(look_after_window(at(51)), 1);
	/* a window a look took whole (1004, empty then; charged late) is not taken again */
	teardown(state);
	setup(state);
	offers("cpu");
	f.o.limits.cpu_milli = 500;
	assert_int_equal(start(), 0);
	tick_at(at(51));
	cpu(at(45), 0.9);
	f.now = at(61);
	event(BM_EV_CROSS, BM_DIM_CPU, 9000000, 5000000);
	tick_at(at(61));
	assert_int_equal(f.s.out.n_actions, 0);
}

/*
 * The agent's ladder looks on the grid of its tick (look_grid_ns 20 ms):
 * every look takes each window since the one before, so a window over
 * between two looks still keeps the throttle in force.
 */
static void test_sup_looks_on_the_grid(void **state)
{
	offers("cpu");
	f.o.limits.cpu_milli = 500;
	f.o.look_grid_ns = 20 * MS;
	assert_int_equal(start(), 0);
	tick_at(T0);
	cpu(at(35), 0.9);
	f.now = at(35);
	event(BM_EV_CROSS, BM_DIM_CPU, 9000000, 5000000);
	tick_at(at(35));
	assert_int_equal(f.s.out.n_actions, 1);
	/* a window on is 45 ms: up to the grid, and the kernel is told the ladder looks to there */
	assert_true(f.s.timer_at == at(60));
	assert_true(f.watch == at(60) / W_NS);
	/* 1004 over, 1005 quiet, 1006 just begun: 1004 is not calm */
	cpu(at(45), 0.9);
	tick_at(at(60));
	assert_true(f.s.lad.calm_since_ns == 0);
	assert_true(f.s.timer_at == at(80));
	/* 1006 to 1008 quiet: calm from here */
	tick_at(at(80));
	assert_true(f.s.lad.calm_since_ns == at(80));
	assert_true(f.s.timer_at == at(100));
}

static void test_sup_failed_exit(void **state)
{
	offers("");
	assert_int_equal(start(), 0);
	exit_and_finish(at(500), W_EXITCODE(3, 0));
	assert_reason(BM_REASON_FAILED, "process");
	assert_int_equal(f.s.out.exit_code, 3);
	assert_int_equal(f.s.out.exit_signal, 0);
	assert_true(f.s.out.wall_ns == 500 * MS);
}

static void test_sup_kernel_kill_event_memory_ceiling(void **state)
{
	offers("");
	f.o.limits.memory_bytes = 64 * MIB;
	assert_int_equal(start(), 0);
	/* the BPF fast path killed at 70 MiB: cgroup.kill ends the rest, the kernel decided */
	f.now = at(80);
	event(BM_EV_KILLED, BM_DIM_MEM, 70 * MIB, 64 * MIB + 1);
	assert_string_equal(knob_take(f.eff, "cgroup.kill"), "1");
	assert_int_equal(f.s.out.n_actions, 1);
	assert_true(f.s.out.actions[0].at_ms == 80);
	assert_string_equal(f.s.out.actions[0].action, "kill");
	assert_string_equal(f.s.out.actions[0].reason, "memory_ceiling");
	assert_true(f.s.out.actions[0].observed == 70 * MIB);
	assert_true(f.s.out.actions[0].threshold == 64 * MIB);
	assert_int_equal(f.s.lad.step, BM_STEP_KILL);
	assert_true(f.s.timer_at == 0);
	/* a second record of the same kill is not a second action */
	event(BM_EV_KILLED, BM_DIM_MEM, 71 * MIB, 64 * MIB + 1);
	assert_int_equal(f.s.out.n_actions, 1);
	exit_and_finish(at(90), W_EXITCODE(0, SIGKILL));
	assert_reason(BM_REASON_MEMORY_CEILING, "kernel");
	assert_int_equal(f.s.out.exit_signal, SIGKILL);
}

static void test_sup_oom_kill_is_the_kernels(void **state)
{
	/* the memory controller's OOM killer ended the command */
	offers("memory");
	f.o.limits.memory_bytes = 64 * MIB;
	assert_int_equal(start(), 0);
	fake_put_fixture(f.eff, "memory.events", "v2/memory.events");
	fake_put_fixture(f.eff, "memory.peak", "v2/memory.peak");
	exit_and_finish(at(300), W_EXITCODE(0, SIGKILL));
	assert_reason(BM_REASON_MEMORY_CEILING, "kernel");
	assert_true(f.s.out.cgroup_mem_peak == 209715200);
	/* one of its children was killed, the command itself went on and succeeded */
	teardown(state);
	setup(state);
	offers("memory");
	f.o.limits.memory_bytes = 64 * MIB;
	assert_int_equal(start(), 0);
	fake_put_fixture(f.eff, "memory.events", "v2/memory.events");
	exit_and_finish(at(300), W_EXITCODE(0, 0));
	assert_reason(BM_REASON_COMPLETED, "process");
}

static void test_sup_controller_breach_kills_by_kernel(void **state)
{
	/* the pids controller refused forks: a breach the ladder answers at once */
	offers("pids");
	f.o.limits.pids = 32;
	assert_int_equal(start(), 0);
	/* 30 tasks, near the ceiling: the next look is a window away */
	f.m.tasks = 30;
	tick_at(T0);
	assert_string_equal(knob_take(f.eff, "cgroup.kill"), "");
	assert_true(f.s.timer_at == at(10));
	fake_put_fixture(f.eff, "pids.events", "v2/pids.events");
	tick_at(at(10));
	assert_string_equal(knob_take(f.eff, "cgroup.kill"), "1");
	assert_int_equal(f.s.out.n_actions, 1);
	assert_string_equal(f.s.out.actions[0].action, "kill");
	assert_string_equal(f.s.out.actions[0].reason, "pids_ceiling");
	assert_true(f.s.out.actions[0].at_ms == 10);
	exit_and_finish(at(20), W_EXITCODE(0, SIGKILL));
	assert_reason(BM_REASON_PIDS_CEILING, "kernel");
}

/* 29 tasks under a held ceiling of 32 at 5 ms, 20 at 15 ms: the ladder looks, then stops. */
static void near_then_away(void)
{
	offers("pids");
	f.o.limits.pids = 32;
	assert_int_equal(start(), 0);
	f.m.tasks = 29;
	tick_at(at(5));
	assert_true(f.s.timer_at == at(15));
	/* the kernel is told: no record for these windows, the ladder looks */
	assert_true(f.watch == at(15) / W_NS);
	f.m.tasks = 20;
	tick_at(at(15));
	/* stopped; one more look for what crossed between the read and the stop */
	assert_true(f.watch == 0);
	assert_true(f.s.timer_at == at(25));
}

static void test_sup_near_ceiling_looks_every_window(void **state)
{
	/* a refused fork changes no level: near a held ceiling, look every window */
	near_then_away();
	tick_at(at(25));
	assert_true(f.s.timer_at == NEVER);
	assert_int_equal(f.watches, 2);
}

/*
 * The stop's last look: a window that came over between the look that
 * stopped and the stop was not reported; the look after finds it, and
 * the ladder watches again.
 */
static void test_sup_watch_stop_looks_once_more(void **state)
{
	near_then_away();
	f.m.tasks = 30;
	tick_at(at(25));
	assert_true(f.watch == at(35) / W_NS);
	assert_true(f.s.timer_at == at(35));
}

static void test_sup_deadline_then_kill(void **state)
{
	offers("");
	f.o.limits.timeout_ns = 2000 * MS;
	assert_int_equal(start(), 0);
	child_in_cgroup();
	assert_true(f.s.deadline_at == at(2000));
	/* SIGTERM at the deadline, then a tenth of the timeout's grace */
	f.now = at(2000);
	bm_sup__on_deadline(&f.s);
	assert_int_equal(child_signal(), SIGTERM);
	assert_true(f.s.deadline);
	assert_true(f.s.deadline_at == at(2200));
	assert_string_equal(knob_take(f.eff, "cgroup.kill"), "");
	/* still there after the grace: the whole cgroup */
	f.now = at(2200);
	bm_sup__on_deadline(&f.s);
	assert_string_equal(knob_take(f.eff, "cgroup.kill"), "1");
	assert_true(f.s.deadline_at == NEVER);
	exit_and_finish(at(2201), W_EXITCODE(0, SIGKILL));
	assert_reason(BM_REASON_DEADLINE, "deadline");
	assert_true(f.s.out.wall_ns == 2201 * MS);
}

static void test_sup_deadline_grace_clamps(void **state)
{
	/* a tenth of the timeout, but at least 100 ms and at most 5 s */
	offers("");
	f.o.limits.timeout_ns = 500 * MS;
	assert_int_equal(start(), 0);
	f.now = at(500);
	bm_sup__on_deadline(&f.s);
	assert_true(f.s.deadline_at == at(600));
	teardown(state);
	setup(state);
	offers("");
	f.o.limits.timeout_ns = 100000 * MS;
	assert_int_equal(start(), 0);
	f.now = at(100000);
	bm_sup__on_deadline(&f.s);
	assert_true(f.s.deadline_at == at(105000));
	/* after the command exited, the deadline does nothing */
	teardown(state);
	setup(state);
	offers("");
	f.o.limits.timeout_ns = 500 * MS;
	assert_int_equal(start(), 0);
	f.now = at(100);
	bm_sup__exited(&f.s, 0);
	assert_true(f.s.deadline_at == NEVER);
	f.now = at(500);
	bm_sup__on_deadline(&f.s);
	assert_false(f.s.deadline);
	assert_string_equal(knob_take(f.eff, "cgroup.kill"), "");
}

static void test_sup_cancel_passes_signal(void **state)
{
	int st;

	offers("");
	assert_int_equal(start(), 0);
	child_in_cgroup();
	/* Ctrl-C reached the command already: noted, nothing sent */
	bm_sup__cancel(&f.s, 0);
	assert_true(f.s.cancelled);
	assert_int_equal(waitpid(f.child, &st, WNOHANG), 0);
	/* a SIGINT sent to burstmeter is passed on */
	bm_sup__cancel(&f.s, SIGINT);
	assert_int_equal(child_signal(), SIGINT);
	exit_and_finish(at(40), W_EXITCODE(0, SIGINT));
	assert_reason(BM_REASON_CANCELLED, "signal");
	assert_int_equal(f.s.out.exit_signal, SIGINT);
}

static void test_sup_terminate_grace_then_kill(void **state)
{
	offers("");
	f.o.limits.timeout_ns = 5000 * MS;
	assert_int_equal(start(), 0);
	child_in_cgroup();
	/* the API cancels: SIGTERM now, the deadline timer becomes the grace */
	f.now = at(50);
	bm_sup__terminate(&f.s, 300 * MS);
	assert_int_equal(child_signal(), SIGTERM);
	assert_true(f.s.cancelled && f.s.terminating);
	assert_true(f.s.deadline_at == at(350));
	f.now = at(350);
	bm_sup__on_deadline(&f.s);
	assert_string_equal(knob_take(f.eff, "cgroup.kill"), "1");
	assert_false(f.s.deadline);
	exit_and_finish(at(351), W_EXITCODE(0, SIGKILL));
	assert_reason(BM_REASON_CANCELLED, "signal");
	/* once it is over, a terminate changes nothing */
	bm_sup__terminate(&f.s, 300 * MS);
	assert_true(f.s.deadline_at == NEVER);
}

static void test_sup_leftovers_killed_then_drain_times_out(void **state)
{
	offers("");
	assert_int_equal(start(), 0);
	/* the command exits at 100 ms, leaving 3 tasks behind */
	f.m.tasks = 3;
	fake_populated(f.eff, 1);
	f.now = at(100);
	bm_sup__exited(&f.s, W_EXITCODE(0, 0));
	assert_int_equal(f.s.phase, BM_SUP_LEFTOVERS);
	assert_true(f.s.out.leftover_killed == 3);
	assert_string_equal(knob_take(f.eff, "cgroup.kill"), "1");
	assert_true(f.s.timer_at == 0);
	/* looks after 2 ms, then twice as long each time, up to 32 ms */
	tick_at(at(100));
	assert_true(f.s.timer_at == at(102));
	tick_at(at(102));
	assert_true(f.s.timer_at == at(106));
	tick_at(at(106));
	assert_true(f.s.timer_at == at(114));
	tick_at(at(114));
	assert_true(f.s.timer_at == at(130));
	tick_at(at(130));
	assert_true(f.s.timer_at == at(162));
	tick_at(at(162));
	assert_true(f.s.timer_at == at(194));
	/* the last task is gone at 200 ms: that is when the effect ended */
	fake_populated(f.eff, 0);
	tick_at(at(200));
	assert_int_equal(f.s.phase, BM_SUP_DRAINING);
	assert_true(f.s.end_ns == at(200));
	assert_true(f.s.timer_at == at(202));
	/* no DRAINED record: every 32 ms, done at the first look past the drain's second */
	run_until(at(1199));
	assert_false(bm_sup__done(&f.s));
	assert_true(f.s.timer_at == at(1222));
	tick_at(at(1222));
	assert_true(bm_sup__done(&f.s));
	bm_sup__finish(&f.s);
	assert_true(f.s.out.wall_ns == 200 * MS);
	assert_reason(BM_REASON_COMPLETED, "process");
}

static void test_sup_leftovers_give_up_after_kill_timeout(void **state)
{
	offers("");
	assert_int_equal(start(), 0);
	fake_populated(f.eff, 1);
	f.now = at(100);
	bm_sup__exited(&f.s, W_EXITCODE(0, 0));
	/* they do not die: the first look past the 2 s kill timeout moves on without them */
	run_until(at(2099));
	assert_int_equal(f.s.phase, BM_SUP_LEFTOVERS);
	assert_true(f.s.timer_at == at(2114));
	tick_at(at(2114));
	assert_int_equal(f.s.phase, BM_SUP_DRAINING);
	assert_true(f.s.end_ns == at(2114));
	/* the meter says every task was freed: done at the next look */
	f.m.flags |= BM_F_DRAINED;
	assert_true(f.s.timer_at == at(2116));
	tick_at(at(2116));
	assert_true(bm_sup__done(&f.s));
}

static void test_sup_start_failures_leave_nothing(void **state)
{
	/* no parent: no cgroup */
	assert_int_equal(bm_sup__start(&f.s, NULL, &f.env, fake_path("%s/none", f.root), &f.o),
			 -ENOENT);
	assert_string_equal(f.s.failed_step, "create the cgroup");
	bm_sup__finish(&f.s);
	assert_null(f.s.out.sum);
	assert_int_equal(bm_sup__release(&f.s), 0);
	assert_int_equal(f.removes, 0);

	/* the meter refuses: the cgroup goes, there is nothing to unregister */
	offers("");
	f.add_err = -ENOSPC;
	bm_sup__init(&f.s);
	f.s.ops = &fake_ops;
	assert_int_equal(start(), -ENOSPC);
	assert_string_equal(f.s.failed_step, "register with the meter");
	assert_int_equal(bm_sup__release(&f.s), 0);
	assert_int_equal(f.dels, 0);
	assert_int_equal(f.removes, 1);
	assert_int_equal(access(f.eff, F_OK), -1);

	/* registered, then arming fails: unregistered again */
	f.add_err = 0;
	f.arm_err = -E2BIG;
	bm_sup__init(&f.s);
	f.s.ops = &fake_ops;
	assert_int_equal(start(), -E2BIG);
	assert_string_equal(f.s.failed_step, "register with the meter");
	assert_int_equal(bm_sup__release(&f.s), 0);
	assert_int_equal(f.dels, 1);
	assert_int_equal(access(f.eff, F_OK), -1);

	/* a ceiling that cannot be written: never metered, the cgroup removed */
	f.arm_err = 0;
	offers("memory");
	f.o.limits.memory_bytes = 64 * MIB;
	fake_broken = "memory.oom.group";
	bm_sup__init(&f.s);
	f.s.ops = &fake_ops;
	assert_int_equal(start(), -EISDIR);
	assert_string_equal(f.s.failed_step, "set the ceilings");
	assert_int_equal(bm_sup__release(&f.s), 0);
	assert_int_equal(f.adds, 2);
	assert_int_equal(access(f.eff, F_OK), -1);
}

static void test_sup_meter_error_at_finish(void **state)
{
	offers("");
	assert_int_equal(start(), 0);
	f.now = at(10);
	bm_sup__exited(&f.s, 0);
	event(BM_EV_DRAINED, 0, 0, 0);
	tick_at(at(10));
	f.read_err = -EIO;
	bm_sup__finish(&f.s);
	assert_reason(BM_REASON_METER_ERROR, "burstmeter");
	assert_null(f.s.out.sum);
}

static void test_sup_own_timerfds(void **state)
{
	int dfd, tfd;

	/* not shared: timerfds of its own, closed on release */
	offers("");
	f.o.shared_timers = false;
	f.o.limits.timeout_ns = 1000 * MS;
	assert_int_equal(start(), 0);
	dfd = f.s.deadline_fd;
	tfd = f.s.timer_fd;
	assert_true(dfd >= 0 && tfd >= 0);
	assert_true(f.s.deadline_at == at(1000));
	assert_int_equal(bm_sup__release(&f.s), 0);
	assert_int_equal(f.s.deadline_fd, -1);
	assert_int_equal(f.s.timer_fd, -1);
	assert_int_equal(fcntl(dfd, F_GETFD), -1);
	assert_int_equal(fcntl(tfd, F_GETFD), -1);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_sup_start_registers_and_arms),
		T(test_sup_kernel_levels_without_controllers),
		T(test_sup_meter_only_touches_no_controller),
		T(test_sup_lifecycle_throttle_completed),
		T(test_sup_hold_acts_at_the_right_time),
		T(test_sup_fresh_window_counts_the_last_full_one),
		T(test_sup_looks_on_the_grid),
		T(test_sup_watch_stop_looks_once_more),
		T(test_sup_failed_exit),
		T(test_sup_kernel_kill_event_memory_ceiling),
		T(test_sup_oom_kill_is_the_kernels),
		T(test_sup_controller_breach_kills_by_kernel),
		T(test_sup_near_ceiling_looks_every_window),
		T(test_sup_deadline_then_kill),
		T(test_sup_deadline_grace_clamps),
		T(test_sup_cancel_passes_signal),
		T(test_sup_terminate_grace_then_kill),
		T(test_sup_leftovers_killed_then_drain_times_out),
		T(test_sup_leftovers_give_up_after_kill_timeout),
		T(test_sup_start_failures_leave_nothing),
		T(test_sup_meter_error_at_finish),
		T(test_sup_own_timerfds),
	};
#undef T

	return cmocka_run_group_tests_name("sup", tests, NULL, NULL);
}
