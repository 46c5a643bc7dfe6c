// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bpf/meter.bpf.c through the library, without the command: load and
 * attach, register one cgroup, start a workload of known CPU in it and in
 * an unregistered sibling, then hold the meter and the ring buffer against
 * the truth. Both meter maps (cgroup storage, and the hash used on kernels
 * without it) are tested. Every cgroup made here is removed, failure or not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>

#include "base/cgroup.h"
#include "base/common.h"
#include "effect/exec.h"
#include "meter/loader.h"
#include "meter/window.h"

#include "integ.h"

#define MS BM_NSEC_PER_MSEC
#define MAX_EVENTS 1024
/* Crossing threshold: half a core in a 10 ms window; a spinning thread is at one core. */
#define CPU_THRESH_NS (5 * MS)
#define ATTEMPTS 3

struct mfx {
	struct bm_loader *l;
	struct bm_cgroup *a;	/* registered with the meter */
	struct bm_cgroup *b;	/* its sibling, never registered */
	struct bm_event ev[MAX_EVENTS];
	unsigned int n_ev, dropped_here;
	pid_t pid_a, pid_b;
};

static char parent[PATH_MAX];

static void on_event(const struct bm_event *e, void *ctx)
{
	struct mfx *f = ctx;

	if (f->n_ev < MAX_EVENTS)
		f->ev[f->n_ev++] = *e;
	else
		f->dropped_here++;
}

static struct bm_cgroup *make_cgroup(const char *suffix)
{
	char name[64];
	struct bm_cgroup *cg;

	snprintf(name, sizeof(name), "bmtest.%d.%s", (int)getpid(), suffix);
	cg = bm_cgroup__create(parent, name);
	if (!cg)
		fail_msg("cannot create cgroup %s/%s: %s", parent, name, strerror(errno));
	return cg;
}

/* Kill what is left, wait until empty, remove and free. NULL-safe. */
static void drop_cgroup(struct bm_cgroup *cg)
{
	int err;

	if (!cg)
		return;
	if (bm_cgroup__populated(cg) > 0 && !bm_cgroup__kill(cg))
		bm_cgroup__wait_empty(cg, 2000);
	err = bm_cgroup__remove(cg);
	if (err)
		print_error("cannot remove %s: %s\n", cg->path, strerror(-err));
	bm_cgroup__free(cg);
}

static void reap(pid_t *pid)
{
	if (*pid > 0) {
		kill(*pid, SIGKILL);	/* only ever a pid we started */
		waitpid(*pid, NULL, 0);
	}
	*pid = 0;
}

static int teardown(void **state)
{
	struct mfx *f = *state;

	if (!f)
		return 0;
	reap(&f->pid_a);
	reap(&f->pid_b);
	if (f->l && f->a)
		bm_loader__del(f->l, f->a);
	drop_cgroup(f->a);
	drop_cgroup(f->b);
	bm_loader__free(f->l);
	free(f);
	*state = NULL;
	return 0;
}

static struct mfx *open_meter(void **state, bool force_hash)
{
	struct mfx *f = calloc(1, sizeof(*f));
	struct bm_loader_opts lo = { .force_hash = force_hash, .on_event = on_event };

	assert_non_null(f);
	*state = f;
	lo.ctx = f;
	f->l = bm_loader__open(&lo);
	if (!f->l)
		fail_msg("bm_loader__open(force_hash=%d): %s", force_hash, strerror(errno));
	return f;
}

/* The verifier takes every program, they attach, and the probes chose something sane. */
static void test_meter_loads(void **state)
{
	const struct bm_features *ft;
	struct mfx *f = open_meter(state, false);
	uint64_t stats[BM_STAT__MAX];

	ft = bm_loader__features(f->l);
	integ_note("features: cgrp_storage=%d tick=%d reclaim=%d net=%s", ft->cgrp_storage,
		   ft->tick, ft->reclaim, bm_net_source_name(ft->net));
	/* both kernels tested meter sends: 6.3+ by the tracepoint, 6.1 by fexit */
	assert_true(ft->net == BM_NET_SRC_TP || ft->net == BM_NET_SRC_FEXIT);
	assert_int_equal(bm_loader__stats(f->l, stats), 0);
	assert_true(bm_loader__event_fd(f->l) >= 0);
	teardown(state);

	/* forcing the hash map must work on every kernel, and be reported */
	f = open_meter(state, true);
	assert_false(bm_loader__features(f->l)->cgrp_storage);
}

/* Start a workload of tests/workloads inside cg: argv[0] is its name. */
static pid_t spawn_in(struct bm_cgroup *cg, char **argv)
{
	char path[PATH_MAX];
	struct bm_child child;
	int err;

	argv[0] = (char *)integ_workload(path, sizeof(path), argv[0]);
	err = bm_effect_spawn(cg->dirfd, NULL, 0, argv, &child);
	if (err)
		fail_msg("cannot start %s in %s: %s", path, cg->path, strerror(err < 0 ? -err : err));
	close(child.pidfd);
	return child.pid;
}

/* bm-spike 40 40 1: one 40 ms spin, then exit. */
static pid_t spawn_spike(struct bm_cgroup *cg)
{
	char *argv[] = { "bm-spike", "40", "40", "1", NULL };

	return spawn_in(cg, argv);
}

/*
 * Wait for pid to exit, draining the ring buffer meanwhile, but leave it a
 * zombie (WNOWAIT): a task is freed only after it is reaped.
 */
static void wait_exit(struct mfx *f, pid_t pid)
{
	uint64_t deadline = bm_now_ns() + 10000 * MS;
	siginfo_t si;

	for (;;) {
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT))
			fail_msg("waitid %d: %s", (int)pid, strerror(errno));
		if (si.si_pid == pid)
			break;
		if (bm_now_ns() > deadline)
			fail_msg("workload %d did not exit", (int)pid);
		bm_loader__poll(f->l, 10);
	}
	if (si.si_code != CLD_EXITED || si.si_status != 0)
		fail_msg("workload %d ended with code %d status %d", (int)pid, si.si_code, si.si_status);
}

static void reap_exited(pid_t *pid)
{
	assert_int_equal(waitpid(*pid, NULL, 0), *pid);
	*pid = 0;
}

static unsigned int count_events(const struct mfx *f, uint64_t cgid, uint32_t type)
{
	unsigned int i, n = 0;

	for (i = 0; i < f->n_ev; i++)
		n += f->ev[i].cgid == cgid && f->ev[i].type == type;
	return n;
}

/*
 * The spike in b (never registered), then in a (registered, CPU threshold
 * 5 ms), each to its end; then wait for a's drained record.
 */
static void drive(struct mfx *f)
{
	uint64_t thresh[BM_DIM__MAX] = { [BM_DIM_CPU] = CPU_THRESH_NS };
	uint64_t deadline;

	f->a = make_cgroup("a");
	f->b = make_cgroup("b");
	assert_int_equal(bm_loader__add(f->l, f->a, 10 * MS, bm_now_ns(), thresh), 0);
	/*
	 * The sibling first, while a is registered: anything of b charged to a
	 * would show in a's totals. One after the other, so that neither spin
	 * takes a CPU from the other.
	 */
	f->pid_b = spawn_spike(f->b);
	wait_exit(f, f->pid_b);
	reap_exited(&f->pid_b);
	f->pid_a = spawn_spike(f->a);
	wait_exit(f, f->pid_a);
	/*
	 * A zombie has made its last switch, its last slice charged: drained
	 * before it is reaped (and freed, a grace period after), once.
	 */
	deadline = bm_now_ns() + 3000 * MS;
	while (!count_events(f, f->a->id, BM_EV_DRAINED) && bm_now_ns() < deadline)
		bm_loader__poll(f->l, 10);
	assert_int_equal(count_events(f, f->a->id, BM_EV_DRAINED), 1);
	reap_exited(&f->pid_a);
	deadline = bm_now_ns() + 100 * MS;
	while (bm_now_ns() < deadline)
		bm_loader__poll(f->l, 10);
	if (count_events(f, f->a->id, BM_EV_DRAINED) != 1)
		fail_msg("%u BM_EV_DRAINED records for a, expected exactly 1",
			 count_events(f, f->a->id, BM_EV_DRAINED));
	bm_loader__poll(f->l, 0);
}

/* a's meter holds the 40 ms spin, exactly what the kernel's own cpu.stat saw; b has none. */
static void check_totals(struct mfx *f, struct bm_meter *m, struct bm_summary *sum)
{
	uint64_t usage_us, end;
	unsigned int i;

	assert_int_not_equal(bm_loader__read(f->l, f->b, m), 0);
	for (i = 0; i < f->n_ev; i++)
		if (f->ev[i].cgid != f->a->id)
			fail_msg("a record (type %u dim %u) for cgroup %llu, not ours (%llu)",
				 f->ev[i].type, f->ev[i].dim, (unsigned long long)f->ev[i].cgid,
				 (unsigned long long)f->a->id);
	/* b really ran its spin: it was not metered, not idle */
	assert_int_equal(bm_cgroup__read_key(f->b, "cpu.stat", "usage_usec", &usage_us), 0);
	assert_true(usage_us >= 40000);

	assert_int_equal(bm_loader__read(f->l, f->a, m), 0);
	assert_true(m->flags & BM_F_DRAINED);
	end = m->last_win > m->lvl_win ? m->last_win : m->lvl_win;
	assert_int_equal(bm_window_finalize(m, end, sum), 0);
	/* the spin, plus the exec, start-up and exit of the workload */
	assert_between((double)sum->cpu_ns / MS, 40, 40 + 2 * integ_startup_cpu_s() * 1000);
	assert_int_equal(bm_cgroup__read_key(f->a, "cpu.stat", "usage_usec", &usage_us), 0);
	assert_between((double)sum->cpu_ns / MS - usage_us / 1000.0, -2, 2);
	assert_int_equal(sum->tasks_entered, 1);
	assert_int_equal(sum->forks, 0);
	integ_note("cpu %.3f ms (cpu.stat %.3f ms)", sum->cpu_ns / 1e6, usage_us / 1e3);
}

/*
 * Crossings: CPU only (no other threshold is set), at or over the
 * threshold, at most one per window, and exactly the windows that reached
 * 5 ms: at least every window of 8.4 ms or more (log2 buckets from 2^23
 * ns), at most those of 4.2 ms or more (from 2^22 ns), 5 ms lying between.
 * Returns how many there were.
 */
static unsigned int check_crossings(struct mfx *f, const struct bm_meter *m,
				    const struct bm_summary *sum)
{
	unsigned int i, k, b, n = 0, over_lo = 0, over_hi = 0;
	uint64_t seen[BM_RING * 8];

	for (i = 0; i < f->n_ev; i++) {
		const struct bm_event *e = &f->ev[i];

		assert_true(e->type == BM_EV_CROSS || e->type == BM_EV_DRAINED);
		if (e->type != BM_EV_CROSS)
			continue;
		assert_int_equal(e->dim, BM_DIM_CPU);
		assert_int_equal(e->thresh, CPU_THRESH_NS);
		assert_true(e->value >= CPU_THRESH_NS);
		assert_true(e->win >= m->first_win && e->win <= m->last_win);
		for (k = 0; k < n; k++)
			if (seen[k] == e->win)
				fail_msg("two crossings for CPU in window %llu", (unsigned long long)e->win);
		if (n < BM_ARRAY_SIZE(seen))
			seen[n++] = e->win;
	}
	/*
	 * CPU windows are bucketed as cores x 2^BM_CPU_HIST_SHIFT: bucket b holds
	 * [2^(b-1), 2^b). Windows surely at or over the threshold are in buckets
	 * starting at or above it; windows maybe over it, in buckets ending above.
	 */
	for (b = 1; b < BM_HIST_BUCKETS; b++) {
		double lo = bm_window_bucket_upper(b - 1), hi = bm_window_bucket_upper(b);
		double t = (double)CPU_THRESH_NS * (1 << BM_CPU_HIST_SHIFT) / sum->window_ns;

		over_lo += hi > t ? sum->hist[BM_DIM_CPU][b] : 0;
		over_hi += b > 1 && lo >= t ? sum->hist[BM_DIM_CPU][b] : 0;
	}
	integ_note("%u crossings, %u windows maybe over the threshold, %u surely", n, over_lo, over_hi);
	assert_in_range(n, over_hi, over_lo);
	return n;
}

/*
 * One run of the spike in b and a. Returns the number of crossings a
 * raised, for the caller's scheduling-dependent check; everything exact is
 * asserted here.
 */
static unsigned int run_spike(struct mfx *f)
{
	uint64_t stats[BM_STAT__MAX];
	struct bm_summary sum;
	struct bm_meter m;
	unsigned int n;

	drive(f);
	check_totals(f, &m, &sum);
	n = check_crossings(f, &m, &sum);
	assert_int_equal(bm_loader__stats(f->l, stats), 0);
	assert_int_equal(stats[BM_STAT_RB_DROPS], 0);
	assert_int_equal(f->dropped_here, 0);
	return n;
}

static void check_meter(void **state, bool force_hash)
{
	unsigned int n_cross;
	int attempt;

	for (attempt = 0;; attempt++) {
		struct mfx *f = open_meter(state, force_hash);

		n_cross = run_spike(f);
		teardown(state);
		/* 40 ms on one core fills at least 3 whole windows, if the scheduler lets it run */
		if (n_cross >= 3)
			break;
		if (attempt + 1 >= ATTEMPTS)
			fail_msg("%u CPU crossings, expected >= 3 (%d runs)", n_cross, ATTEMPTS);
		integ_note("%u CPU crossings, expected >= 3; is the machine busy? running again", n_cross);
	}
}

static void test_meter_cgroup_storage(void **state)
{
	check_meter(state, false);
}

static void test_meter_hash(void **state)
{
	check_meter(state, true);
}

/* Crossings of cg (a flow's or a level's) among the records so far. */
static unsigned int crossings(struct mfx *f, const struct bm_cgroup *cg, uint32_t dim)
{
	unsigned int i, n = 0;

	bm_loader__poll(f->l, 0);
	for (i = 0; i < f->n_ev; i++)
		n += f->ev[i].cgid == cg->id && f->ev[i].type == BM_EV_CROSS && f->ev[i].dim == dim;
	return n;
}

/* Run argv in cg to its end, the ring drained meanwhile; argv[0] is a workload's name. */
static void run_in(struct mfx *f, struct bm_cgroup *cg, const char *const *argv)
{
	char *v[8];
	unsigned int i;

	for (i = 0; argv[i] && i < BM_ARRAY_SIZE(v) - 1; i++)
		v[i] = (char *)argv[i];
	v[i] = NULL;
	f->pid_a = spawn_in(cg, v);
	wait_exit(f, f->pid_a);
	reap_exited(&f->pid_a);
	usleep(30 * 1000);
}

/*
 * bm_marks.watch: while the ladder says it looks at a meter's windows by
 * itself, the kernel marks their crossings in the meter and reports none;
 * with the watch back at 0 it reports them again. A CPU threshold of 5 ms
 * under bm-spike 30 60 2 (two spins, each over it in two windows or more),
 * and a tasks threshold of 5 under bm-fanout 8 100 (9 tasks for 100 ms).
 */
static void test_meter_watch(void **state)
{
	const char *const spike[] = { "bm-spike", "30", "60", "2", NULL };
	const char *const fan[] = { "bm-fanout", "8", "100", NULL };
	uint64_t thresh[BM_DIM__MAX] = { [BM_DIM_CPU] = CPU_THRESH_NS, [BM_DIM_PIDS] = 5 };
	struct mfx *f = open_meter(state, false);
	unsigned int cpu, pids, k, marked = 0;
	struct bm_meter m;

	f->a = make_cgroup("a");
	assert_int_equal(bm_loader__add(f->l, f->a, 10 * MS, bm_now_ns(), thresh), 0);
	assert_int_equal(bm_loader__read(f->l, f->a, &m), 0);
	assert_true(m.slot < BM_MOVED_SLOTS);
	/* watched for the next minute: nothing reported, every crossing marked */
	bm_loader__watch(f->l, m.slot, bm_now_ns() / (10 * MS) + 6000);
	run_in(f, f->a, spike);
	run_in(f, f->a, fan);
	cpu = crossings(f, f->a, BM_DIM_CPU);
	pids = crossings(f, f->a, BM_DIM_PIDS);
	assert_int_equal(bm_loader__read(f->l, f->a, &m), 0);
	for (k = 0; k < BM_RING; k++)
		marked += !!(m.crossed[k] & (1U << BM_DIM_CPU));
	integ_note("watched: %u CPU and %u tasks crossings reported, %u CPU windows marked", cpu, pids,
		   marked);
	assert_int_equal(cpu, 0);
	assert_int_equal(pids, 0);
	assert_true(marked >= 1);
	/* not watched: reported again, every window over */
	bm_loader__watch(f->l, m.slot, 0);
	run_in(f, f->a, spike);
	run_in(f, f->a, fan);
	cpu = crossings(f, f->a, BM_DIM_CPU);
	pids = crossings(f, f->a, BM_DIM_PIDS);
	integ_note("not watched: %u CPU and %u tasks crossings reported", cpu, pids);
	assert_true(cpu >= 4);
	assert_true(pids >= 1);
}

/* The newest window an event touched, from a fresh read of cg's meter. */
static uint64_t last_win(struct mfx *f, struct bm_cgroup *cg, uint32_t *slot)
{
	struct bm_meter m;

	assert_int_equal(bm_loader__read(f->l, cg, &m), 0);
	*slot = m.slot;
	return m.last_win;
}

/*
 * bm_marks.moved: a meter whose mark stays clear had no event since it was
 * cleared. a runs bm-spike 5 300 4 (5 ms of CPU every 300 ms), b a sleeper.
 * Polled every 5 ms: read the meter, then look at the mark; a clear mark
 * must find the meter as the last read left it (no move unmarked), a set
 * one is cleared before the next read. a must be marked at each spike and
 * quiet between them; b, asleep, never.
 */
static void test_meter_moved(void **state)
{
	char *spike[] = { "bm-spike", "5", "300", "4", NULL }, *sleeper[] = { "bm-sleeper", "8000", NULL };
	struct mfx *f = open_meter(state, false);
	uint64_t la, lb, x, end, quiet_since = 0;
	unsigned int marks = 0, quiet = 0, i;
	uint32_t sa, sb;

	f->a = make_cgroup("a");
	f->b = make_cgroup("b");
	assert_int_equal(bm_loader__add(f->l, f->a, 10 * MS, bm_now_ns(), NULL), 0);
	assert_int_equal(bm_loader__add(f->l, f->b, 10 * MS, bm_now_ns(), NULL), 0);
	last_win(f, f->a, &sa);
	last_win(f, f->b, &sb);
	assert_true(sa < BM_MOVED_SLOTS && sb < BM_MOVED_SLOTS && sa != sb);
	f->pid_b = spawn_in(f->b, sleeper);
	/* b asleep: its exec done, no mark for 200 ms (an emulated VM takes its time) */
	end = bm_now_ns() + 5000 * MS;
	do {
		bm_loader__unmark(f->l, sb);
		usleep(200 * 1000);
	} while (bm_loader__marks(f->l)[sb] && bm_now_ns() < end);
	assert_false(bm_loader__marks(f->l)[sb]);
	/* from here b sleeps, a spins 5 ms at 0, 300, 600 and 900 ms */
	f->pid_a = spawn_in(f->a, spike);
	usleep(20 * 1000);
	bm_loader__unmark(f->l, sa);
	la = last_win(f, f->a, &sa);
	lb = last_win(f, f->b, &sb);
	end = bm_now_ns() + 1200 * MS;
	while (bm_now_ns() < end) {
		usleep(5 * 1000);
		x = last_win(f, f->a, &sa);
		if (!bm_loader__marks(f->l)[sa]) {
			if (x != la)
				fail_msg("a moved from window %llu to %llu unmarked", (unsigned long long)la,
					 (unsigned long long)x);
			/* 100 ms without a mark: the sleep between two spikes */
			if (quiet_since && bm_now_ns() - quiet_since > 100 * MS) {
				quiet++;
				quiet_since = 0;
			}
			continue;
		}
		marks++;
		quiet_since = bm_now_ns();
		bm_loader__unmark(f->l, sa);
		la = last_win(f, f->a, &sa);
	}
	x = last_win(f, f->b, &sb);
	assert_false(bm_loader__marks(f->l)[sb]);
	assert_int_equal(x, lb);
	integ_note("a marked %u times, quiet %u times between; b never", marks, quiet);
	/* each spike marks at least once (its first window), and a rests between them */
	assert_true(marks >= 3);
	assert_true(quiet >= 3);
	for (i = 0; i < 2; i++)
		reap(i ? &f->pid_a : &f->pid_b);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_meter_loads, teardown),
		cmocka_unit_test_teardown(test_meter_cgroup_storage, teardown),
		cmocka_unit_test_teardown(test_meter_hash, teardown),
		cmocka_unit_test_teardown(test_meter_moved, teardown),
		cmocka_unit_test_teardown(test_meter_watch, teardown),
	};
	struct bm_cgroup_env env;
	char probe[PATH_MAX];
	size_t n;
	int rc = integ_gate("test_meter"), err;

	if (rc)
		return rc;
	if (access(integ_workload(probe, sizeof(probe), "bm-spike"), X_OK)) {
		fprintf(stderr, "test_meter: %s is missing: run make first\n", probe);
		return 1;
	}
	err = bm_cgroup_env_detect("/proc/self/mountinfo", "/proc/self/cgroup", &env);
	if (!err)
		err = bm_cgroup_env_self_dir(&env, parent, sizeof(parent));
	if (err) {
		fprintf(stderr, "test_meter: cannot find our cgroup v2 directory: %s\n", strerror(-err));
		return 1;
	}
	bm_log_libbpf();
	integ_favour("test_meter");
	/* cmocka_run_group_tests_name() would take the whole array: pass what the filter left */
	n = integ_filter(tests, sizeof(tests) / sizeof(tests[0]));
	return _cmocka_run_group_tests("meter", tests, n, NULL, NULL);
}
