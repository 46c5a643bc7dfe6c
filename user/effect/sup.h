/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The supervision of one effect, shared by `burstmeter run` (one effect)
 * and the agent (many): its cgroup and ceilings, its meter, the ladder and
 * the deadline while it runs, then the drain and the outcome. The caller
 * owns the event loop: it polls the fds this hands out, routes ring-buffer
 * records by cgroup id, and calls in; nothing here blocks.
 *
 *   start -> spawn | attach -> (events, timers) -> exited -> ... -> done
 *
 * Between exited and done: what the command left behind is killed, and
 * the kernel is given time to free every task, so that the last slices are
 * charged before the meter is read (bm_sup__done()).
 */
#ifndef BM_SUP_H
#define BM_SUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/cgroup.h"
#include "base/parse.h"
#include "effect/act.h"
#include "effect/ceiling.h"
#include "effect/exec.h"
#include "effect/expect.h"
#include "effect/outcome.h"
#include "effect/policy.h"
#include "effect/sandbox.h"
#include "meter/loader.h"
#include "meter/window.h"

struct bm_sup_opts {
	const char *id, *tenant, *intent;
	char *const *argv;		/* the command (also for attach: what the outcome names) */
	const struct bm_expect *expect;	/* declared intent (NULL: none): widens soft levels, reported */
	const char *traceparent;	/* W3C trace context (NULL/"": none), for the outcome */
	struct bm_limits limits;
	uint64_t window_ns;
	struct bm_policy policy;	/* levels and steps; the ceilings are added from limits */
	const struct bm_exec *exec;	/* how bm_sup__spawn() starts it (NULL: as we are) */
	const struct bm_sandbox *sandbox; /* what the outcome says was asked (NULL: nothing) */
	bool meter_only;		/* no controllers: the meter holds every ceiling */
	bool cpu_cap;			/* a CPU controller even without a ceiling: bm_sup__cap() */
	bool cpu_yield;			/* one for its weight alone (no cpuset): bm_sup__cap(0, w) */
	/* Where it does I/O (NULL-terminated): the disks behind these get the I/O ceilings. */
	const char *io_paths[4];
	/* Its workspace (a host directory bound read-write), whose growth the storage ceiling counts. */
	const char *workspace;
	bool no_fast_path;		/* no in-kernel kill at ceilings */
	/*
	 * No timerfds: the caller watches timer_at and deadline_at (one timer
	 * for many effects) and calls bm_sup__tick() / bm_sup__on_deadline()
	 * when they are due.
	 */
	bool shared_timers;
	/* With shared_timers: called (with timers_ctx) whenever timer_at or deadline_at moves. */
	void (*timers_moved)(void *ctx);
	void *timers_ctx;
	/*
	 * With shared_timers, 0 or at most BM_RING / 2 windows: the ladder's
	 * repeated looks (a window after the last) go up to the next multiple
	 * of this on the monotonic clock, where the caller wakes anyway (the
	 * agent's tick). Each look then takes every window since the last.
	 */
	uint64_t look_grid_ns;
};

/*
 * The kernel side of supervision: the clock, the effect cgroup's making and
 * removal, and the meter. bm_sup__init() points s->ops at bm_sup_kernel (the
 * functions of the same signatures: bm_now_ns(), bm_cgroup__create(),
 * bm_loader__add(), ...); a unit test puts fakes there instead, over a
 * temporary directory for a cgroup and a struct bm_meter of its own making.
 */
struct bm_sup_ops {
	uint64_t (*now_ns)(void);
	struct bm_cgroup *(*cg_create)(const char *parent_dir, const char *name);
	int (*cg_remove)(struct bm_cgroup *cg);
	int (*cg_remove_try)(struct bm_cgroup *cg);	/* once, never waiting */
	const struct bm_cgfs *cgfs;	/* for bm_ceilings_apply(): NULL, mkdir(2) */
	int (*add)(struct bm_loader *l, const struct bm_cgroup *cg, uint64_t window_ns,
		   uint64_t start_ns, const uint64_t thresh[BM_DIM__MAX]);
	int (*arm)(struct bm_loader *l, const struct bm_cgroup *cg,
		   const uint64_t thresh[BM_DIM__MAX], const uint64_t kill_at[BM_DIM__MAX]);
	int (*read)(struct bm_loader *l, const struct bm_cgroup *cg, struct bm_meter *out);
	void (*claim)(struct bm_loader *l, uint32_t slot);
	void (*watch)(struct bm_loader *l, uint32_t slot, uint64_t until_win);	/* NULL: never watched */
	int (*del)(struct bm_loader *l, const struct bm_cgroup *cg);
	int (*stats)(struct bm_loader *l, uint64_t out[BM_STAT__MAX]);
	const struct bm_features *(*features)(const struct bm_loader *l);
	int (*alias)(struct bm_loader *l, uint64_t v1_cgid, uint64_t v2_cgid);	/* may be NULL */
};

extern const struct bm_sup_ops bm_sup_kernel;

enum bm_sup_phase { BM_SUP_NEW, BM_SUP_RUNNING, BM_SUP_LEFTOVERS, BM_SUP_DRAINING, BM_SUP_DONE };

struct bm_sup {
	struct bm_sup_opts o;
	const struct bm_sup_ops *ops;	/* &bm_sup_kernel, or a test's fakes */
	struct bm_loader *loader;
	struct bm_cgroup *cg;
	struct bm_ceilings ceil;
	struct bm_ladder lad;
	struct bm_actuator act;
	struct bm_child child;		/* pid/pidfd of the command (attach: of the attached process) */
	int deadline_fd, timer_fd;	/* timerfds: the deadline; the ladder's and the drain's */
	uint64_t deadline_at, timer_at;	/* when they fire (bm_now_ns()), UINT64_MAX: disarmed */
	enum bm_sup_phase phase;
	uint64_t start_ns, end_ns, phase_deadline_ns;
	uint64_t poll_ns;		/* the next look at the phase is this far off */
	uint64_t look_win;		/* the window of the ladder's last look (0: none yet) */
	uint64_t watch_win;		/* the kernel is told it looks up to this window (0: not watching) */
	int wait_status;
	int exec_errno;			/* the command could not be started (126/127) */
	bool not_run;			/* it never started: the outcome its caller wrote stands */
	bool cancelled, deadline, drained, acting, metered, terminating;
	bool storage_full;		/* its ephemeral storage filled up: storage_ceiling */
	uint64_t blkio_twin_id;		/* its v1 blkio twin, told to the meter (0: none) */
	uint64_t storage_at;		/* the next look at its storage (bm_now_ns()) */
	struct bm_du_watch *ws_watch;	/* its workspace walked, on a thread (base/du.h) */
	uint64_t ws_walks;		/* the walks of it taken in */
	uint64_t ws_base, ws_used;	/* what its workspace held at the start; what it grew by */
	uint64_t tmp_used;		/* what its /tmp held at the last look */
	bool ws_based, ws_failed;	/* ws_base is known; no thread could be made */
	const char *failed_step;	/* what bm_sup__start() was doing when it failed */
	char name[3 * BM_NAME_MAX];	/* the cgroup's directory name */
	struct bm_outcome out;
	struct bm_summary sum;
};

/*
 * Where it may write, from its sandbox, alike for the agent's launches and
 * attaches and for run: max_ephemeral_storage bounds its private /tmp (a
 * tmpfs of that size) and its workspace's growth, together; the disks
 * behind cwd, its workspace and /tmp (unless a tmpfs) get the I/O ceilings.
 */
void bm_sup_places(struct bm_sup_opts *so, const struct bm_sandbox *sb, const char *cwd);

/* Zero s, mark every fd closed, ops = &bm_sup_kernel: bm_sup__release() is then always safe. */
void bm_sup__init(struct bm_sup *s);

/*
 * What starting and adopting share: the options, the policy with its
 * ceilings, the name and the outcome's header. Alone, for an effect that
 * ends before it starts (cancelled while queued).
 */
void bm_sup__prepare(struct bm_sup *s, struct bm_loader *l, const struct bm_sup_opts *o);
/*
 * Create the effect's cgroup under parent_dir, put the ceilings on it and
 * register it with the meter. Returns 0 or -errno (s->failed_step names
 * the step); on error bm_sup__release() removes what was made.
 */
int bm_sup__start(struct bm_sup *s, struct bm_loader *l, const struct bm_cgroup_env *env,
		  const char *parent_dir, const struct bm_sup_opts *o);

/*
 * Take over an effect an earlier agent started (its cgroup at cgroup_path
 * and its meter still there): the ladder starts afresh, the meter's counts
 * go on. Returns 0 or -errno (s->failed_step names the step).
 */
int bm_sup__adopt(struct bm_sup *s, struct bm_loader *l, const struct bm_cgroup_env *env,
		  const char *cgroup_path, const struct bm_sup_opts *o);

/* Start the command in the cgroup with o->exec: bm_effect_spawn_ex()'s (0, >0 exec errno, -errno). */
int bm_sup__spawn(struct bm_sup *s);

/* A ring-buffer record for this effect's cgroup. */
void bm_sup__event(struct bm_sup *s, const struct bm_event *e);
/* Call when timer_fd is readable (timer_at is due), or after events: runs the ladder and phases. */
void bm_sup__tick(struct bm_sup *s);
/* Deadline timer fired (deadline_fd readable, or deadline_at due). */
void bm_sup__on_deadline(struct bm_sup *s);
/* Pass a signal to the command, as a cancel (SIGINT/SIGTERM sent to burstmeter, or the API). */
void bm_sup__cancel(struct bm_sup *s, int sig);
/* Cancel from outside (the API): SIGTERM to every process, cgroup.kill after grace_ns. */
void bm_sup__terminate(struct bm_sup *s, uint64_t grace_ns);
/*
 * Cap a running effect's CPU and set its weight from outside its ladder (the
 * agent's tenant budgets, the node's pressure): bm_act_cap(), then a look at once, so
 * that the caller sees the step (its state, the action) as it sees the
 * ladder's. cpus, if not NULL, are the CPUs it shares with the rest of its
 * group (bm_ceilings_cpus_within()); NULL places it alone. Returns its 0 or
 * -errno; -ESRCH if the effect is not running.
 */
int bm_sup__cap(struct bm_sup *s, double cores, unsigned int weight, const cpu_set_t *cpus,
		const char *reason, double observed);
/* The command exited (its wait status, when known; -1 if not ours to reap). */
void bm_sup__exited(struct bm_sup *s, int wait_status);
/*
 * It never ran: a meter_error outcome saying it failed to <what> (err,
 * negative errno) is what stands, whatever the finish finds.
 */
void bm_sup__never_ran(struct bm_sup *s, const char *what, int err);
/* True once the outcome can be built: the cgroup is empty and the meter drained (or timed out). */
bool bm_sup__done(const struct bm_sup *s);
/* Read the meter, classify, fill s->out (s->out.sum may stay NULL: meter_error). */
void bm_sup__finish(struct bm_sup *s);
/* Unregister, kill and remove the cgroups, close fds. Idempotent. Returns the cgroup removal's 0 or -errno. */
int bm_sup__release(struct bm_sup *s);
/*
 * The same without waiting: 0 once all is released, or -EBUSY while a task
 * of the cgroup has not died yet (killed again) or it is still held: call
 * again later. Never blocks, for an event loop.
 */
int bm_sup__release_try(struct bm_sup *s);

#endif /* BM_SUP_H */
