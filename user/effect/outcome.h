/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The outcome of an effect (schema burstmeter.outcome/v1, docs/DESIGN.md): how
 * it ended, why, what it used at its peaks, and whether a retry can work.
 * Building it is pure; bm_outcome_write() is the only I/O.
 */
#ifndef BM_OUTCOME_H
#define BM_OUTCOME_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "bm_abi.h"
#include "effect/sandbox.h"
#include "meter/window.h"

#define BM_OUTCOME_SCHEMA "burstmeter.outcome/v1"
#define BM_MAX_ACTIONS 64

enum bm_reason {
	BM_REASON_COMPLETED,
	BM_REASON_FAILED,
	BM_REASON_SIGNALED,
	BM_REASON_DEADLINE,
	BM_REASON_MEMORY_CEILING,
	BM_REASON_PIDS_CEILING,
	BM_REASON_CPU_CEILING,
	BM_REASON_NET_CEILING,
	BM_REASON_CANCELLED,
	BM_REASON_METER_ERROR,
	BM_REASON_STORAGE_CEILING,
	BM_REASON_IO_CEILING,
	BM_REASON__MAX,
};

struct bm_action {
	double at_ms;		/* since the effect started */
	const char *action;	/* throttle, freeze, thaw, cancel, kill */
	const char *reason;	/* memory_ceiling, ... */
	double observed, threshold;
};

struct bm_limits {
	uint64_t cpu_milli;	/* 0 = none */
	uint64_t memory_bytes;
	uint64_t pids;
	uint64_t timeout_ns;
	uint64_t io_read_bps, io_write_bps, io_iops;	/* per device behind its paths; 0 = none */
	uint64_t storage_bytes;	/* what it may write to its ephemeral storage (/tmp); 0 = none */
};

/* The ceilings a request's sandbox asks for, as limits (storage_bytes left to the caller). */
void bm_limits_from_sandbox(struct bm_limits *l, const struct bm_sandbox *sb);
/* The limits in a sandbox's terms (the request's form), the rest of sb left as it is. */
void bm_limits_to_sandbox(const struct bm_limits *l, struct bm_sandbox *sb);

struct bm_expect;
/* The I/O ceilings, in the order of bm_outcome.io_mech[]. */
enum bm_io_ceiling { BM_IO_CEIL_READ_BPS, BM_IO_CEIL_WRITE_BPS, BM_IO_CEIL_IOPS, BM_IO_CEIL__MAX };

/* A task the OOM killer chose (oom:mark_victim). */
struct bm_oom_victim {
	double at_ms;		/* since the effect started */
	uint32_t pid;		/* as the node sees it */
	int32_t oom_score_adj;
	char comm[16];
	uint64_t rss_bytes, anon_bytes, total_vm_bytes;
};

#define BM_MAX_OOM_VICTIMS 8

/* memory.events keys (v2), in this order; v1 gives oom_kill and max (failcnt) only. */
enum bm_mem_event { BM_MEMEV_OOM, BM_MEMEV_OOM_KILL, BM_MEMEV_HIGH, BM_MEMEV_MAX, BM_MEMEV__MAX };

struct bm_outcome {
	const char *id, *tenant, *intent;
	char *const *argv;
	const struct bm_expect *expect;	/* declared intent, or NULL: "expect" {declared, observed} */
	const char *traceparent;	/* W3C trace context, or NULL/"": "trace" {traceparent} */
	const char *cgroup;		/* NULL if none was created */
	uint64_t started_wall_ns;
	uint64_t wall_ns;
	struct bm_limits limits;
	const struct bm_summary *sum;	/* NULL if it never ran */
	struct bm_action actions[BM_MAX_ACTIONS];
	unsigned int n_actions;
	double throttled_s, frozen_s;
	int exit_code;			/* -1 if killed by a signal or never started */
	int start_errno;		/* its launch refused before exec (exit_code 125): why */
	int exit_signal;		/* 0 if none */
	enum bm_reason reason;
	const char *by;			/* process, signal, deadline, policy, kernel, burstmeter */
	bool retry_eligible;
	uint64_t retry_after_ms;
	char advice[256];
	const char *ceiling_mech[5];	/* cpu, memory, pids, net, io: what enforced each ceiling */
	const char *io_mech[BM_IO_CEIL__MAX];	/* read bps, write bps, iops */
	const char *storage_mech;	/* what bounded its ephemeral storage */
	char cpus[64];			/* the CPUs it was confined to at its start, and how; "": none */
	const char *storage_where;	/* the place it filled, else its first ("/tmp") */
	int64_t storage_peak_bytes;	/* the most it held in its places at once, sampled; -1 unknown */
	/* each place the ceiling bounds: /tmp, its workspace (what that grew by); peak -1 unknown */
	struct bm_storage_place {
		const char *where;
		int64_t peak_bytes;
	} storage_places[2];
	unsigned int n_storage_places;
	struct bm_oom_victim oom[BM_MAX_OOM_VICTIMS];
	unsigned int n_oom;		/* victims named (more are counted in oom_victims) */
	uint64_t oom_victims;		/* every victim marked */
	const char *oom_limit;		/* "memory_ceiling" (its own) or "node" (any other) */
	int64_t mem_events[BM_MEMEV__MAX];	/* counts since it started; -1 unknown */
	const char *io_attribution;	/* how its I/O is found: "blkcg", "submitter", "none" */
	const struct bm_sandbox *sandbox;	/* as asked: the outcome's "sandbox" (NULL: none) */
	struct bm_sandbox_enf sbx;	/* what held each part of it, in "enforcement" too */
	/* meter health */
	uint64_t stats[BM_STAT__MAX];
	const char *net_source;
	uint64_t leftover_killed;	/* tasks still running when the command ended */
	int64_t psi_cpu_us, psi_mem_us, psi_io_us;	/* "some" totals; -1 unknown */
	uint64_t cgroup_cpu_us;		/* cpu.stat usage_usec, the kernel's own count */
	int64_t cgroup_mem_peak;	/* the memory controller's peak (charge), -1 if none held it */
	/* whose tool call it was, when a pod's: its uid, container and QoS class (NULL: none) */
	const char *pod_uid, *pod_container, *pod_qos;
};

const char *bm_reason_name(enum bm_reason r);

/*
 * Decide reason and `by` for an effect that was not stopped by a ceiling or
 * a deadline: wait status, whether a cancel signal was passed on to it, and
 * whether it could not be started (exec errno, 0 if it was).
 */
void bm_outcome_classify(struct bm_outcome *o, int wait_status, bool cancelled, int exec_errno);

/* Fill retry_eligible, retry_after_ms and advice from reason, limits and peaks. */
void bm_outcome_retry(struct bm_outcome *o);

/* The outcome as JSON (a new reference), or NULL on allocation failure. */
json_t *bm_outcome_json(const struct bm_outcome *o);

/*
 * Write JSON to path ("-" for stdout) on one line, atomically (temporary file
 * beside it, then rename); a path that is there and no regular file
 * (/dev/null, a FIFO) is written in place. Returns 0 or -errno.
 */
int bm_outcome_write(const json_t *j, const char *path);

#endif /* BM_OUTCOME_H */
