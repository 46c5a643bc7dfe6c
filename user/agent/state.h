/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The agent's state: its effects and what it keeps of them, the indexes,
 * the loop's fds, and the hooks the layer above (the API) registers. Types
 * only: every module of user/agent/ reads them, each with a header of its
 * own for its functions.
 */
#ifndef BM_AGENT_STATE_H
#define BM_AGENT_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/budget.h"
#include "agent/config.h"
#include "base/podcgroup.h"
#include "agent/request.h"
#include "agent/store.h"
#include "effect/sup.h"
#include "meter/series.h"

struct bm_agent;

/* What an epoll event is about. */
enum ag_kind { AG_SIGNAL, AG_RINGBUF, AG_TICK, AG_TIMERS, AG_SPAWNER, AG_EFF_SHIM, AG_HOOK };

struct ag_tag {
	enum ag_kind kind;
	void *ptr;
	void (*fn)(void *ptr);		/* AG_HOOK: called with ptr */
};

struct bm_egress;
struct bm_spawner;
struct bm_spawner_msg;

/* The pod a caller (and so its effects) belongs to, from the kernel (identity.c). */
struct ag_pod {
	char uid[BM_POD_UID_MAX + 1];
	char container[BM_CONTAINER_ID_LEN + 1];
	char qos[16];			/* guaranteed, burstable, besteffort */
	char dir[PATH_MAX];		/* the pod's cgroup directory: its effects are made there */
	uint64_t stats_flushed_ns;	/* its cpu.stat last read (finish.c: flush_stats()) */
};

struct ag_effect {
	struct bm_sup sup;
	struct bm_request req;
	char tenant[BM_NAME_MAX + 1], tool[256];
	enum bm_state state;
	uint64_t seq;			/* admission order among equal priorities */
	uid_t uid;			/* who its command runs as (ag_run_as()) */
	gid_t gid;
	char parent[BM_NAME_MAX + 1];	/* the effect of its tenant that asked for it, "": none */
	struct ag_pod *pod;		/* the pod whose tool call it is; NULL: none */
	struct bm_child shim;		/* its pidfd: only where no spawner tells its end */
	uint64_t shim_id;		/* the spawner's name for the shim, 0: none */
	uint64_t cg_id;			/* its cgroup's id as indexed (events name it), 0: not */
	bool cg_scan;			/* the index could not take it: found by a scan */
	/* asked of the spawner, not answered yet (the answer is tagged with seq) */
	bool launching, cancel_pending;
	bool adopt_cancel;		/* re-adopted with a cancel stored: honoured once adopted */
	/*
	 * Ended, but not all of it done (a->remains): its outcome, when the store
	 * refused it (a full disk), and its cgroup, while a task of it is stuck
	 * in the kernel. Each tick tries again.
	 */
	char *unstored;
	void *unstored_tl;		/* its timeline, packed (agent/timeline.h) */
	size_t unstored_tl_len;
	enum bm_state unstored_state;
	int64_t unstored_ms;
	uint64_t remains_since_ns;
	struct bm_agent *agent;
	unsigned int eff_i;		/* its place + 1 in a->eff (0: not there) */
	/* its place + 1 in a->queue, a->heap and a->awake (0: not there) */
	unsigned int queue_i, heap_i, awake_i;
	char *status_path;		/* its shim's status file, owned (NULL: none, an attach) */
	bool status_on_cgroup;		/* its shim told its status on its cgroup: no files to remove */
	bool started;
	uint64_t egress_cgid;		/* its allow-list is in the egress filter (0: none) */
	uint64_t exit_wait_ns;		/* attached: the process is gone, its status may still come; or
					 * no pid yet: it may still be named (ag_attach()) */
	struct ag_tag t_shim;
	struct bm_series series;	/* window by window, for streams and the timeline */
	uint64_t series_next_win;	/* next window to record */
	/*
	 * At the last read no event had touched the open window: until one
	 * does (its meter's slot in bm_marks.moved), every window is idle_v, and the
	 * meter is not read.
	 */
	bool idle;
	uint32_t slot;
	double idle_v[BM_DIM__MAX];
	unsigned int actions_sent;	/* actions already streamed */
	void *readers;			/* the layer above's readers of its lines; NULL: none */
	/* its tenant's budgets (agent/tenant.h) */
	unsigned int tenant_i;		/* its place + 1 in a->tenants, 0: not looked up yet */
	uint64_t charged[BM_DIM__MAX];	/* flow totals (raw) charged to its tenant so far */
	bool charge_base;		/* adopted: its first read sets charged[] only */
	double mem_held;		/* bytes at its last read, in its tenant's mem_held */
	double cpu_fast;		/* recent CPU: decayed CPU-seconds, BM_BUDGET_FAST_NS */
	uint64_t cpu_fast_ns;
	double cap_cores;		/* the cap of its tenant's budget or the node's pressure */
	bool yielding;			/* at the lowest CPU weight, as its tenant is */
	unsigned int cpus_gen;		/* its tenant's cpus_gen when last capped */
};

/*
 * An outcome waiting for the batch's one transaction (ag_finish_begin()):
 * stored at ag_finish_end(), its effect let go then.
 */
struct ag_pending {
	struct ag_effect *e;
	char *text;
	void *tl;			/* its timeline, packed (agent/timeline.h) */
	size_t tl_len;
	enum bm_state st;
	int64_t ms;
	bool kept;			/* e is in a->remains already (its cgroup is still held) */
};

/* At most this many effects' timers, or spawner messages, between two looks at everything else. */
#define AG_SLICE 64

/* The agent's tick: effects sampled (timelines, event streams), the queue looked at. */
#define AG_TICK_NS (20 * BM_NSEC_PER_MSEC)
/* How long an attached process's caller has to say how it ended, once it is gone. */
#define AG_EXIT_WAIT_NS (5 * BM_NSEC_PER_SEC)
/*
 * At most this many meter reads per tick. When thousands of sleepers wake
 * together (they all ended), reading them all in one tick held the loop
 * for seconds: the ring buffer overflowed and /metrics waited. The rest
 * are read in the ticks that follow; a meter's ring keeps BM_RING windows,
 * 6 ticks past a read's due time.
 */
#define AG_TICK_READS 256

/* Effects by a 64-bit key (index.c). */
struct ag_index {
	uint64_t *key;
	struct ag_effect **val;
	size_t cap, n;
};

/* Effects in no order (or a heap's), each keeping its place + 1 in a field of its own. */
struct ag_set {
	struct ag_effect **v;
	unsigned int n, cap;
};

/*
 * A tenant: its running count, its budgets and recent use, and what holds
 * it (agent/tenant.h). Entries are added, never removed: an effect keeps
 * its tenant's place (tenant_i).
 */
struct ag_tenant_count {
	char name[BM_NAME_MAX + 1];
	unsigned int running;
	unsigned int queued;		/* submitted, not started */
	struct bm_budget bud;
	double mem_held;		/* bytes its running effects hold: GiB-seconds every tick */
	int held_by;			/* the exhausted budget its queue waits on, -1: none */
	bool pressure;			/* held as the node's top contributor */
	bool pressure_mem;		/* of memory: held, not capped (of CPU: capped too) */
	uint64_t pressure_at_ns;	/* when it was */
	double cap_cores;		/* each of its running effects' CPU cap, 0: none */
	unsigned int cap_n;		/* the running effects it was split among */
	bool yielding;			/* its running effects at the lowest CPU weight */
	bool over_share;		/* over its fair share of the CPUs: yielding for it */
	uint64_t fair_yields;		/* times it went over that share */
	cpu_set_t cpus;			/* the CPUs its capped effects share (none: each alone) */
	unsigned int cpus_gen;		/* counts each new choice of them */
	int cap_cause;			/* why: BM_BUD_CPU, or BM_BUD__MAX (the node's pressure) */
	/* for /metrics: POSTs refused per budget (+ its queue share), throttles per cause */
	uint64_t refused[BM_BUD__MAX + 1];
	uint64_t throttles[BM_BUD__MAX + 1];	/* [BM_BUD__MAX]: the node's pressure */
};

/* The node's pressure as admission sees it, and who caused it (agent/tenant.h). */
#define AG_TOP 3
struct ag_pressure {
	double cpu_avg10;		/* /proc/pressure/cpu some avg10, % */
	double cpu_now;			/* the same over the last second, from its total */
	uint64_t cpu_total_us, cpu_total_ns;	/* the last look at total= and when */
	uint64_t mem_available;		/* MemAvailable, bytes (0: unknown) */
	unsigned int node_cpus;		/* online CPUs (0: not read yet) */
	double node_mem_gib;		/* MemTotal, GiB (0: unknown) */
	uint64_t read_ns, cpus_ns;	/* when read; when node_cpus was */
	int cpu_fd, mem_fd;		/* the two files, kept open (-1: not yet) */
	bool over_cpu, over_mem;	/* beyond admit_cpu_pressure, below admit_mem_available */
	uint64_t since_ns;		/* over since (0: not over) */
	uint64_t under_ns;		/* under its bounds since (0: over) */
	uint64_t named_ns;		/* top contributors named then */
	unsigned int n_top_tenants, n_top_effects;
	struct {
		char tenant[BM_NAME_MAX + 1], id[BM_NAME_MAX + 1];
		double cpu_cores, memory_bytes, share;
	} top_tenants[AG_TOP], top_effects[AG_TOP];
	uint64_t episodes;		/* times the node went over */
};

/* A tool that keeps hitting the same wall: its tenant's next submissions wait until until_ns. */
struct ag_backoff {
	char tenant[BM_NAME_MAX + 1], tool[256];
	uint64_t until_ns;
};

/*
 * What the layer above asks to hear (every member may be NULL), so that
 * the agent calls nothing above it: lines for an effect's readers, the end
 * of an effect, launches answered, and the loop's sleep.
 */
struct ag_hooks {
	void *ctx;
	/* A line (a JSON object, not consumed) for e's readers; only while e->readers. */
	void (*line)(void *ctx, struct ag_effect *e, json_t *line);
	/* e is about to be freed: its readers end. */
	void (*gone)(void *ctx, struct ag_effect *e);
	/* The launch of the effect tagged seq is answered (running, or ended). */
	void (*launched)(void *ctx, uint64_t seq);
	/* Before the loop sleeps: how long it may (-1: forever); after it wakes: run what is due. */
	int (*timeout_ms)(void *ctx);
	void (*run)(void *ctx);
};

struct bm_agent {
	struct bm_agent_cfg cfg;
	struct bm_loader *loader;
	struct bm_store *store;
	struct bm_export *exp;
	struct bm_spawner *spawner;	/* forks the shims; NULL: we fork them (slower) */
	struct bm_egress *egress;	/* network_policy egress_*; NULL: such effects do not start */
	struct bm_cgroup_env env;
	char parent[PATH_MAX];
	uint64_t stats_flushed_ns;	/* parent's cpu.stat last read (finish.c: flush_stats()) */
	bool in_leaf;			/* we moved into parent/BM_CGROUP_LEAF (agent/place.h) */
	int epfd, sigfd, tick_fd, lock_fd;
	uint64_t ticks;
	/*
	 * One timerfd for every effect's ladder and deadline (their timer_at
	 * and deadline_at): an effect holds no timer fd of its own. Armed at
	 * the earliest; timers_at is what it is armed at.
	 */
	int timers_fd;
	uint64_t timers_at;
	struct ag_effect **eff;
	unsigned int n_eff, cap_eff, running;
	struct ag_index by_name, by_seq, by_shim, by_cg;
	unsigned int cg_unindexed;	/* metered effects by_cg could not take (no memory) */
	struct ag_set queue;		/* not started yet: queue.n of them are queued */
	/* effects whose ladder or deadline is due some time: a min-heap by the earliest */
	struct ag_set heap;
	/*
	 * What the tick looks at: the running effects that are not idle; an
	 * idle one waits in by_slot[] (its meter's slot) until the kernel marks
	 * its slot in bm_marks.moved, so a tick costs the awake ones and a scan of
	 * the marks, however many sleep.
	 */
	struct ag_set awake;
	unsigned int tick_next;		/* awake.v[] index the next tick reads down from */
	struct ag_effect **by_slot;
	struct ag_tenant_count *tenants;	/* every tenant seen: counts, budgets */
	unsigned int n_tenants;
	uint64_t tenants_at_ns;		/* their held memory charged up to here */
	struct ag_pressure pressure;
	struct ag_backoff *backoffs;	/* grown as needed; expired ones are reused */
	unsigned int n_backoffs;
	struct ag_effect **remains;	/* ended, out of the registry, something left to do */
	unsigned int n_remains;
	struct ag_pending *pending;	/* outcomes of the open batch, not stored yet */
	unsigned int n_pending, cap_pending;
	bool batch;			/* between ag_finish_begin() and ag_finish_end() */
	uint64_t meter_reads;		/* by ag_sample(), for /metrics */
	struct ag_hooks hooks;
	uint64_t seq;
	/* stopping: SIGTERM seen; scheduling: inside ag_schedule(); resched: an end freed room */
	bool stopping, scheduling, resched;
	struct ag_tag t_sig, t_rb, t_tick, t_timers, t_spawner;
};


#endif /* BM_AGENT_STATE_H */
