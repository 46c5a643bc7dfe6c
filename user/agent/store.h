/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The agent's state store: SQLite (WAL, STRICT tables, a schema version
 * with migrations) holding every effect, its lifecycle transitions and its
 * outcome. Effects are keyed by (tenant, id): a tenant sees only its own.
 * Every function returns 0 or -errno (-ENOENT: no such effect, -EEXIST:
 * the (tenant, id) exists, -EIO: SQLite failed); pointer functions return
 * NULL and set errno. Also -EINVAL: a bad argument or a schema CHECK (invalid
 * JSON, priority), -EBUSY: still locked after the busy timeout, -ENOSPC/-ENOMEM.
 * A struct bm_store is one connection with cached statements: one thread at a
 * time; other threads and processes open their own. (Its checkpointer is a
 * thread of its own, with its own connection: see bm_store__checkpoints().)
 */
#ifndef BM_STORE_H
#define BM_STORE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/parse.h"

/* PRAGMA application_id ("bmst") and user_version of the schema this build writes */
#define BM_STORE_APPLICATION_ID 1651340148
#define BM_STORE_SCHEMA_VERSION 4

enum bm_state {
	BM_ST_QUEUED,
	BM_ST_RUNNING,
	BM_ST_THROTTLED,
	BM_ST_FROZEN,
	BM_ST_SUCCEEDED,
	BM_ST_FAILED,
	BM_ST_CANCELLED,
	BM_ST_KILLED,
	BM_ST_DEADLINE_EXCEEDED,
	BM_ST__MAX,
};

/* "queued", "running", ..., "deadline_exceeded"; "unknown" out of range, never NULL */
const char *bm_state_name(enum bm_state s);
/* Returns 0 and sets *s, or -EINVAL for an unknown name. */
int bm_state_parse(const char *name, enum bm_state *s);
/* succeeded, failed, cancelled, killed, deadline_exceeded */
bool bm_state_final(enum bm_state s);

struct bm_effect_row {
	char id[BM_NAME_MAX + 1];
	char tenant[BM_NAME_MAX + 1];
	char tool[256];			/* tool kind: argv[0]'s basename */
	enum bm_state state;
	int priority;			/* 1-10 */
	int64_t created_ms, updated_ms;	/* CLOCK_REALTIME ms */
	char cgroup[PATH_MAX];		/* "" until it runs */
	int64_t pid;			/* supervising process, 0 if none */
	uint64_t pid_start;		/* its start time (/proc/PID/stat field 22): pid reuse guard */
	int64_t uid, gid;		/* who it runs as; -1: not known (never run then) */
	char parent[BM_NAME_MAX + 1];	/* the effect of its tenant that asked for it, "" none */
	int64_t cancel_ms;		/* when it was asked to be cancelled, 0: never */
	char *request_json;		/* the validated request, canonical JSON (owned) */
	char *outcome_json;		/* burstmeter.outcome/v1, NULL until it ended (owned) */
	char *pod_json;			/* {"uid", "container", "qos", "dir"}: whose call it is; NULL */
	void *timeline;			/* the outcome's timeline packed (agent/timeline.h), or NULL: */
	size_t timeline_len;		/* bm_store__get's only (owned) */
};

struct bm_store;

/*
 * Open (create) dir/state.db. A database of a newer schema, or one that is
 * not a burstmeter store or is corrupt, is refused with one line in err
 * naming the file and what is wrong (errno EINVAL/EPROTO). An older schema
 * is migrated in one transaction. A file that is not ours (by PRAGMA
 * application_id) is never written to. The dir is created 0700 if missing,
 * state.db 0600.
 */
struct bm_store *bm_store__open(const char *dir, char *err, size_t errlen);
void bm_store__free(struct bm_store *st);
/*
 * Checkpoints run so far by st's checkpointer: a thread with its own
 * connection, started by the first commit that leaves 1,000 pages in the
 * WAL, so that no commit waits for a checkpoint's copy and fsyncs.
 */
unsigned long bm_store__checkpoints(struct bm_store *st);

/*
 * Insert a new effect (request_json required, outcome_json ignored). -EEXIST if (tenant, id)
 * exists. state must be queued or running: it is the first transition, at created_ms, and
 * updated_ms is set to created_ms (whatever row->updated_ms says).
 */
int bm_store__insert(struct bm_store *st, const struct bm_effect_row *row);
/* Fill *out (bm_effect_row_clear() it after). */
int bm_store__get(struct bm_store *st, const char *tenant, const char *id, struct bm_effect_row *out);
/*
 * Move to state `to` at at_ms and record the transition. A final state is never left (-EINVAL,
 * even towards itself). Moving to the current (non-final) state is a no-op: 0, nothing recorded.
 * Ending without an outcome (cancelled while queued) is allowed; bm_store__finish stores one.
 */
int bm_store__transition(struct bm_store *st, const char *tenant, const char *id, enum bm_state to,
			 int64_t at_ms);
/* Record where it runs, for re-adoption after a restart. -EINVAL once it ended. */
int bm_store__set_runtime(struct bm_store *st, const char *tenant, const char *id, const char *cgroup,
			  int64_t pid, uint64_t pid_start);
/*
 * Store the outcome (must be valid JSON: checked by SQLite's json_valid) and its timeline,
 * packed (timeline_len 0: none), and move to final state. -EINVAL if `final` is not final,
 * the JSON is invalid or the effect already ended.
 */
int bm_store__finish(struct bm_store *st, const char *tenant, const char *id, const char *outcome_json,
		     const void *timeline, size_t timeline_len, enum bm_state final, int64_t at_ms);
/*
 * One transaction for several writes (outcomes: a commit each was a third
 * of the agent's work when thousands of effects ended at once). When a
 * write in it fails, roll back and write them again one by one; a failed
 * commit rolls back itself (nothing of it stored). 0 or -errno; rollback
 * is a no-op outside a transaction.
 */
int bm_store__begin(struct bm_store *st);
int bm_store__commit(struct bm_store *st);
void bm_store__rollback(struct bm_store *st);

typedef int (*bm_row_fn)(const struct bm_effect_row *row, void *ctx);
/*
 * Effects of tenant (NULL: all tenants) in state (-1: any), newest first (created_ms, then id),
 * at most limit (0: none, UINT_MAX: all). Returns 0, fn's first non-zero return (which stops the
 * walk) or -errno. The row and its strings are lent to fn for the call only. fn may call the
 * store; a nested walk of the same kind returns -EBUSY.
 */
int bm_store__list(struct bm_store *st, const char *tenant, int state, unsigned int limit, bm_row_fn fn,
		   void *ctx);

typedef int (*bm_transition_fn)(enum bm_state s, int64_t at_ms, void *ctx);
/* Transitions of one effect, oldest first (recording order). Returns as bm_store__list does. */
int bm_store__transitions(struct bm_store *st, const char *tenant, const char *id, bm_transition_fn fn,
			  void *ctx);

/*
 * How many effects of (tenant, tool) ended with termination.reason `reason`
 * at or after since_ms: what retry backoff is computed from.
 */
int bm_store__recent(struct bm_store *st, const char *tenant, const char *tool, const char *reason,
		     int64_t since_ms, unsigned int *count);

/* Record that it was asked to end (a restart must not run it): 0 or -errno; the first time counts. */
int bm_store__cancel(struct bm_store *st, const char *tenant, const char *id, int64_t at_ms);

typedef void (*bm_key_fn)(const char *tenant, const char *id, void *ctx);
/*
 * Delete, at most max of them, the ended effects that ended before
 * before_ms or are not among the keep newest ended ones, calling fn (may be
 * NULL) for each deleted. Returns how many were deleted, or -errno.
 */
int bm_store__expire(struct bm_store *st, int64_t before_ms, unsigned int keep, unsigned int max,
		     bm_key_fn fn, void *ctx);

/* The uid given to tenant: 0 and *uid, or -ENOENT if none was. */
int bm_store__tenant_uid(struct bm_store *st, const char *tenant, int64_t *uid);
/* Give tenant uid for good: 0, or -EEXIST if the tenant has one or the uid is another's. */
int bm_store__tenant_uid_put(struct bm_store *st, const char *tenant, int64_t uid);
/* The highest uid in [lo, hi] given to a tenant, -1 if none. */
int bm_store__tenant_uid_max(struct bm_store *st, int64_t lo, int64_t hi, int64_t *max);

/* Free the strings a row owns and zero it. NULL-safe. */
void bm_effect_row_clear(struct bm_effect_row *row);

#endif /* BM_STORE_H */
