/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A run's state from its pod, so that a client never reads raw pod phases
 * (`burstmeter podstate`). Pure: pod objects (JSON, as the API server and
 * kubectl write them) in, a state and a reason out.
 *
 *   queued      Pending: pending, unschedulable, scheduled, initializing
 *               (init containers), starting (no sandbox yet), image_pulling
 *               (sandbox up, container still creating), image_pull_failed,
 *               create_failed
 *   running     started
 *   succeeded   completed
 *   failed      exited / init_failed (with the exit code), deleted (before
 *               it ended, not by an eviction), rejected (by the kubelet's
 *               admission), error
 *   timed_out   deadline_exceeded (activeDeadlineSeconds)
 *   oom_killed  memory_limit (a container's OOMKilled)
 *   evicted     node_pressure, node_shutdown, preempted, eviction_api,
 *               node_taint, node_gone, disrupted (the DisruptionTarget
 *               condition and the kubelet's Evicted)
 *   unknown     the raw phase ("Unknown", or "none" when there is none)
 */
#ifndef BM_PODSTATE_H
#define BM_PODSTATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum bm_run_state {
	BM_RUN_QUEUED,
	BM_RUN_RUNNING,
	BM_RUN_SUCCEEDED,
	BM_RUN_FAILED,
	BM_RUN_TIMED_OUT,
	BM_RUN_OOM_KILLED,
	BM_RUN_EVICTED,
	BM_RUN_UNKNOWN,
};

struct bm_podstate {
	enum bm_run_state state;
	char reason[40];	/* one of the words above; for unknown the phase ([A-Za-z0-9_-]) */
	int exit_code;		/* the container's, where the reason has one; else -1 */
	char container[64];	/* the container the reason is about, or "" */
	char message[256];	/* the API's words (scheduler, kubelet), control bytes blanked */
	char phase[32];		/* the raw phase, as for unknown */
};

/* "queued", "running", ...; NULL if out of range. */
const char *bm_run_state_name(enum bm_run_state s);
/* succeeded, failed, timed_out, oom_killed, evicted: a pod never leaves them. */
bool bm_run_state_terminal(enum bm_run_state s);

/*
 * The state of pod (a Pod object). deleted: it was seen in a DELETED watch
 * event (metadata.deletionTimestamp counts the same). Returns 0, or -EINVAL
 * when pod is not a Pod.
 */
int bm_podstate_of(json_t *pod, bool deleted, struct bm_podstate *out);

#endif /* BM_PODSTATE_H */
