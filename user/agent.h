/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The node agent: one meter (pinned, so a restart loses nothing) for every
 * effect of the node, an HTTP/JSON API on a Unix socket, a SQLite store,
 * admission with a bounded priority queue, and /metrics. Internal to
 * agent.c and api.c; the front end calls bm_agent_run().
 */
#ifndef BM_AGENT_H
#define BM_AGENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent_cfg.h"
#include "request.h"
#include "series.h"
#include "store.h"
#include "sup.h"

struct bm_agent;
struct MHD_Connection;

/* What an epoll event is about. */
enum ag_kind { AG_SIGNAL, AG_RINGBUF, AG_API, AG_METRICS, AG_TICK, AG_TIMERS, AG_SPAWNER, AG_EFF_SHIM };

struct ag_tag {
	enum ag_kind kind;
	void *ptr;
};

/* A client of GET /v1/effects/{id}/events: NDJSON lines wait in buf until MHD takes them. */
struct ag_stream {
	struct ag_stream *next;
	struct MHD_Connection *conn;
	char *buf;
	size_t len, cap, off;
	bool suspended, ended;
};

struct ag_conn;
struct bm_egress;
struct bm_spawner;
struct bm_spawner_msg;

struct ag_effect {
	struct bm_sup sup;
	struct bm_request req;
	char tenant[BM_NAME_MAX + 1], tool[256];
	enum bm_state state;
	uint64_t seq;			/* admission order among equal priorities */
	uid_t uid;
	gid_t gid;
	struct bm_child shim;		/* its pidfd: only where no spawner tells its end */
	uint64_t shim_id;		/* the spawner's name for the shim, 0: none */
	uint64_t cg_id;			/* its cgroup's id as indexed (events name it), 0: not */
	bool cg_scan;			/* the index could not take it: found by a scan */
	/* asked of the spawner, not answered yet (the answer is tagged with seq) */
	bool launching, cancel_pending;
	struct bm_agent *agent;
	/* its place + 1 in a->queue, a->heap and a->awake (0: not there) */
	unsigned int queue_i, heap_i, awake_i;
	char status_path[PATH_MAX];
	bool started;
	uint64_t egress_cgid;		/* its allow-list is in the egress filter (0: none) */
	uint64_t exit_wait_ns;		/* attached: the process is gone; its status may still come */
	struct ag_tag t_shim;
	struct bm_series series;	/* window by window, for streams and the timeline */
	uint64_t series_next_win;	/* next window to record */
	/*
	 * At the last read no event had touched the open window: until one
	 * does (its meter's slot in bm_moved), every window is idle_v, and the
	 * meter is not read.
	 */
	bool idle;
	uint32_t slot;
	double idle_v[BM_DIM__MAX];
	unsigned int actions_sent;	/* actions already streamed */
	struct ag_stream *streams;
};

/* At most this many effects' timers, or spawner messages, between two looks at everything else. */
#define AG_SLICE 64

/* The agent's tick: effects sampled (timelines, event streams), the queue looked at. */
#define AG_TICK_NS (20 * BM_NSEC_PER_MSEC)
/*
 * At most this many meter reads per tick. When thousands of sleepers wake
 * together (they all ended), reading them all in one tick held the loop
 * for seconds: the ring buffer overflowed and /metrics waited. The rest
 * are read in the ticks that follow; a meter's ring keeps BM_RING windows,
 * 6 ticks past a read's due time.
 */
#define AG_TICK_READS 256

/* Effects by a 64-bit key (agent_index.c). */
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

struct ag_tenant_count {
	char name[BM_NAME_MAX + 1];
	unsigned int running;
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
	struct MHD_Daemon *api, *metrics;
	int epfd, sigfd, tick_fd, listen_fd, metrics_fd;
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
	 * its slot in bm_moved, so a tick costs the awake ones and a scan of
	 * the marks, however many sleep.
	 */
	struct ag_set awake;
	unsigned int tick_next;		/* awake.v[] index the next tick reads down from */
	struct ag_effect **by_slot;
	struct ag_tenant_count *tenants;	/* started effects per tenant */
	unsigned int n_tenants;
	uint64_t meter_reads;		/* by ag_sample(), for /metrics */
	struct ag_conn *waiters;	/* POSTs whose answer waits for their effect's launch */
	uint64_t seq;
	bool stopping, scheduling;
	struct ag_tag t_sig, t_rb, t_api, t_metrics, t_tick, t_timers, t_spawner;
};

/* Run the agent until SIGTERM/SIGINT. Returns the exit status (0, 1 runtime failure). */
int bm_agent_run(const struct bm_agent_cfg *cfg);

/* --- agent_index.c */
struct ag_effect *ag_find(struct bm_agent *a, const char *tenant, const char *id);
struct ag_effect *ag_find_seq(struct bm_agent *a, uint64_t seq);
struct ag_effect *ag_find_shim(struct bm_agent *a, uint64_t shim_id);
/* The effect whose cgroup has this id (a meter event's), or NULL. */
struct ag_effect *ag_find_cg(struct bm_agent *a, uint64_t cg_id);
/* Index e by its cgroup (e->sup.cg), once it has one. */
void ag_set_cg(struct bm_agent *a, struct ag_effect *e);
/* Index e (after its tenant, id and seq are set): 0 or -ENOMEM; not after ag_index_reserve(). */
int ag_index_add(struct bm_agent *a, struct ag_effect *e);
int ag_index_reserve(struct bm_agent *a);
/* Out of every index, and out of its tenant's count if it started. */
void ag_index_del(struct bm_agent *a, struct ag_effect *e);
/* The spawner's id of e's shim (0: none), indexed. */
void ag_set_shim_id(struct bm_agent *a, struct ag_effect *e, uint64_t id);
/* Started effects of tenant, after adding delta. */
unsigned int ag_tenant_count(struct bm_agent *a, const char *tenant, int delta);
/* Queued (not started) effects: in when admitted. */
void ag_queue_add(struct bm_agent *a, struct ag_effect *e);
/* It starts (or ends before it could): out of the queue, counted as running, for its tenant too. */
void ag_started(struct bm_agent *a, struct ag_effect *e);
/* bm_sup's timers of e (ctx) moved: its place in the heap follows. */
void ag_timers_moved(void *ctx);
/* Looked at every tick (ag_tick()), or asleep until its meter moves. */
void ag_wake(struct bm_agent *a, struct ag_effect *e);
void ag_sleep(struct bm_agent *a, struct ag_effect *e);
/* The sleeping effect of a meter slot, or NULL. */
struct ag_effect *ag_slot_sleeper(const struct bm_agent *a, uint32_t slot);
/* The effect due first, or NULL; when it is due. */
struct ag_effect *ag_heap_top(const struct bm_agent *a);
void ag_heap_pop(struct bm_agent *a);
uint64_t ag_due(const struct ag_effect *e);
void ag_index_free(struct bm_agent *a);

/* --- agent.c, for api.c */
/*
 * Take a validated request from caller (uid, gid, pid). Returns the HTTP
 * status (201 running, 202 queued, 200 the same id already exists, 429 the
 * queue is full or the tool is backing off (*retry_after_s set), 403 attach
 * to a process that is not the caller's) and the effect in *out; on 4xx
 * *why says what is wrong. The request is consumed on success.
 */
int ag_submit(struct bm_agent *a, struct bm_request *req, const char *tenant, uid_t uid, gid_t gid,
	      pid_t caller, struct ag_effect **out, unsigned int *retry_after_s, const char **why);
/* Cancel an effect (SIGTERM, then kill after the grace): 0, or -ENOENT / -EALREADY. */
int ag_cancel(struct bm_agent *a, struct ag_effect *e);
/* An attached effect's caller reports its exit (wait status). 0, or -EALREADY / -EINVAL. */
int ag_exit(struct bm_agent *a, struct ag_effect *e, int wait_status);
/* Append a line to every stream of e (a JSON object, consumed). */
void ag_stream_push(struct ag_effect *e, json_t *line);

/* The effect is done: outcome, store, metrics, streams; then it is freed. */
void ag_finish_effect(struct bm_agent *a, struct ag_effect *e);
/* Its entries out of the egress filter's allow-list (the effect has ended). */
void ag_egress_forget(struct bm_agent *a, struct ag_effect *e);
/* The supervision options of an effect: its request's limits and the agent's policy. */
void ag_sup_opts(struct bm_agent *a, const struct ag_effect *e, struct bm_sup_opts *so);
/* Start effects while the node has room, in priority order. */
void ag_schedule(struct bm_agent *a);
/* Re-adopt the effects an earlier agent left running or queued. */
void ag_adopt(struct bm_agent *a);
/* Every TICK: sample running effects into their series and streams. */
void ag_tick(struct bm_agent *a);
void ag_sample(struct bm_agent *a, struct ag_effect *e);
/* A downsampled copy of the series for the stored outcome ("timeline"). */
json_t *ag_timeline_json(const struct bm_series *s);
/* Before the outcome is stored: back off a tool that keeps hitting the same wall. */
void ag_retry_backoff(struct bm_agent *a, struct ag_effect *e);
/* The ended effect's windows, peaks and reason into /metrics. */
void ag_export_outcome(struct bm_agent *a, struct ag_effect *e);
/* Watch an effect's fds in the event loop (agent.c). */
void ag_watch_effect(struct bm_agent *a, struct ag_effect *e);
/* The spawner died: its shims are watched by pidfd from now on, and the agent forks its own. */
void ag_spawner_gone(struct bm_agent *a);
/* The spawner's answer to e's launch: running, or failed to start (and then finished). */
void ag_launched(struct bm_agent *a, struct ag_effect *e, const struct bm_spawner_msg *m);

/* --- api.c */
/* Serve whatever MHD has to do now. */
void ag_api_run(struct bm_agent *a);
/* How long the event loop may sleep for MHD's sake (-1: forever). */
int ag_api_timeout_ms(struct bm_agent *a);
/* End and release every stream of e. */
void ag_streams_end(struct bm_agent *a, struct ag_effect *e);
/* The launch tagged seq is answered: the POSTs that wait for it may answer now. */
void ag_api_launched(struct bm_agent *a, uint64_t seq);
int ag_api_start(struct bm_agent *a);
void ag_api_stop(struct bm_agent *a);
/* JSON view of an effect for the API (state, transitions, outcome). */
json_t *ag_effect_json(struct bm_agent *a, const char *tenant, const char *id);

#endif /* BM_AGENT_H */
