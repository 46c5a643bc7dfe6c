// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The agent's state store on SQLite. WAL + synchronous=NORMAL: readers never block the
 * writer, a crash loses at most the last commits. Triggers log every transition and keep
 * final states final whoever writes, so each call is one atomic statement. migrations[N]
 * takes version N to N+1 and sets user_version itself: no value is formatted into SQL.
 * Checkpoints run on a thread of their own (ckpt_main()), so a commit waits for the
 * WAL's copy into state.db and its two fsyncs only under writes that never pause.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/store.h"

#define BUSY_TIMEOUT_MS 5000	/* outwaits another agent's migration, a CLI's checkpoint */
#define CKPT_PAGES 1000		/* SQLite's own autocheckpoint's: a checkpoint once the WAL has this many */
#define CKPT_HARD (4 * CKPT_PAGES)	/* past this, the writer checkpoints itself (ckpt_main()) */

#define FINALS "'succeeded', 'failed', 'cancelled', 'killed', 'deadline_exceeded')"
#define STATES "('queued', 'running', 'throttled', 'frozen', " FINALS
#define LOG "INSERT INTO transitions VALUES (NULL, NEW.tenant, NEW.id, NEW.state, "
_Static_assert(BM_ST__MAX == 9, "a state was added: extend STATES (and migrate the CHECKs)");
_Static_assert(BM_STORE_APPLICATION_ID == 1651340148, "migrations[0] sets it");

static const char *const migrations[] = {
	/* 0 -> 1: the first schema */
	"CREATE TABLE effects (tenant TEXT NOT NULL, id TEXT NOT NULL, tool TEXT NOT NULL"
	" CHECK (tool <> ''), state TEXT NOT NULL CHECK (state IN " STATES "), priority INTEGER"
	" NOT NULL CHECK (priority BETWEEN 1 AND 10), created_ms INTEGER NOT NULL, updated_ms"
	" INTEGER NOT NULL, cgroup TEXT NOT NULL DEFAULT '', pid INTEGER NOT NULL DEFAULT 0"
	" CHECK (pid >= 0), pid_start INTEGER NOT NULL DEFAULT 0, request TEXT NOT NULL"
	" CHECK (json_valid(request)), outcome TEXT CHECK (outcome IS NULL OR json_valid(outcome)),"
	" PRIMARY KEY (tenant, id)) STRICT;"
	"CREATE TABLE transitions (seq INTEGER PRIMARY KEY, tenant TEXT NOT NULL, id TEXT NOT NULL,"
	" state TEXT NOT NULL CHECK (state IN " STATES "), at_ms INTEGER NOT NULL,"
	" FOREIGN KEY (tenant, id) REFERENCES effects (tenant, id) ON DELETE CASCADE) STRICT;"
	"CREATE INDEX transitions_by_effect ON transitions (tenant, id, seq);"
	/* one per bm_store__list filter, each in its ORDER BY: no sort step */
	"CREATE INDEX effects_by_created ON effects (created_ms DESC, id);"
	"CREATE INDEX effects_by_tenant ON effects (tenant, created_ms DESC, id);"
	"CREATE INDEX effects_by_state ON effects (state, created_ms DESC, id);"
	"CREATE INDEX effects_by_tenant_state ON effects (tenant, state, created_ms DESC, id);"
	"CREATE TRIGGER effects_first AFTER INSERT ON effects BEGIN " LOG "NEW.created_ms); END;"
	"CREATE TRIGGER effects_moved AFTER UPDATE OF state ON effects"
	" WHEN NEW.state <> OLD.state BEGIN " LOG "NEW.updated_ms); END;"
	"CREATE TRIGGER effects_final BEFORE UPDATE ON effects WHEN OLD.state IN (" FINALS
	" BEGIN SELECT RAISE(ABORT, 'the effect has ended'); END;"
	"PRAGMA application_id = 1651340148; PRAGMA user_version = 1;",
	/* 1 -> 2: bm_store__recent (retry backoff) counts by the outcome's termination.reason */
	"CREATE INDEX effects_recent ON effects"
	" (tenant, tool, json_extract(outcome, '$.termination.reason'), updated_ms);"
	"PRAGMA user_version = 2;",
	/*
	 * 2 -> 3: who an effect runs as (-1: not known, an older agent's: never run), the
	 * effect that asked for it, ended effects by age (retention), and a uid per tenant
	 */
	"ALTER TABLE effects ADD COLUMN uid INTEGER NOT NULL DEFAULT -1;"
	"ALTER TABLE effects ADD COLUMN gid INTEGER NOT NULL DEFAULT -1;"
	"ALTER TABLE effects ADD COLUMN parent TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE effects ADD COLUMN cancel_ms INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE effects ADD COLUMN pod TEXT CHECK (pod IS NULL OR json_valid(pod));"
	"CREATE INDEX effects_ended ON effects (updated_ms) WHERE state IN (" FINALS ";"
	"CREATE TABLE tenant_uids (tenant TEXT PRIMARY KEY, uid INTEGER NOT NULL UNIQUE) STRICT;"
	"PRAGMA user_version = 3;",
	/* 3 -> 4: an ended effect's timeline packed beside its outcome (agent/timeline.h) */
	"ALTER TABLE effects ADD COLUMN timeline BLOB;"
	"PRAGMA user_version = 4;",
};
_Static_assert(sizeof(migrations) / sizeof(char *) == BM_STORE_SCHEMA_VERSION, "one per version");

enum stmt_id {
	S_INSERT, S_SET_STATE, S_SET_RUNTIME, S_GET, S_TRANSITIONS, S_RECENT, S_EXPIRED, S_DELETE,
	S_UID_GET, S_UID_PUT, S_UID_MAX, S_CANCEL,
	S_LIST, S_LIST_TENANT, S_LIST_STATE, S_LIST_BOTH, S__MAX, /* S_LIST + tenant?1 + state?2 */
};

#define COLS "SELECT tenant, id, tool, state, priority, created_ms, updated_ms, cgroup, pid, " \
	     "pid_start, request, outcome, uid, gid, parent, cancel_ms, pod, timeline FROM effects"
#define LIST(where) COLS where " ORDER BY created_ms DESC, id LIMIT ?3"

static const char *const stmt_sql[S__MAX] = {
	[S_INSERT] = "INSERT INTO effects (tenant, id, tool, state, priority, created_ms,"
		     " updated_ms, cgroup, pid, pid_start, request, uid, gid, parent, pod)"
		     " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
	/* re-asserting the state (re-adoption after a restart) keeps updated_ms and logs nothing */
	[S_SET_STATE] = "UPDATE effects SET state = ?3, updated_ms = iif(state = ?3, updated_ms,"
			" ?4), outcome = coalesce(?5, outcome), timeline = coalesce(?6, timeline)"
			" WHERE tenant = ?1 AND id = ?2",
	[S_SET_RUNTIME] = "UPDATE effects SET cgroup = ?3, pid = ?4, pid_start = ?5"
			  " WHERE tenant = ?1 AND id = ?2",
	[S_GET] = COLS " WHERE tenant = ?1 AND id = ?2",
	[S_TRANSITIONS] = "SELECT state, at_ms FROM transitions WHERE tenant = ?1 AND id = ?2"
			  " ORDER BY seq",
	/* spelled as in effects_recent, or the index does not serve it */
	[S_RECENT] = "SELECT count(*) FROM effects WHERE tenant = ?1 AND tool = ?2"
		     " AND json_extract(outcome, '$.termination.reason') = ?3 AND updated_ms >= ?4",
	/* ended before ?1, or no later than the first past the ?2 newest ended (effects_ended) */
	[S_EXPIRED] = "SELECT tenant, id FROM effects WHERE state IN (" FINALS " AND (updated_ms < ?1"
		      " OR updated_ms <= coalesce((SELECT updated_ms FROM effects WHERE state IN ("
		      FINALS " ORDER BY updated_ms DESC LIMIT 1 OFFSET ?2), -1)) LIMIT ?3",
	/* its transitions go with it (ON DELETE CASCADE) */
	[S_DELETE] = "DELETE FROM effects WHERE tenant = ?1 AND id = ?2 AND state IN (" FINALS,
	/* the first cancel counts; an ended effect is not cancelled (effects_final) */
	[S_CANCEL] = "UPDATE effects SET cancel_ms = ?3 WHERE tenant = ?1 AND id = ?2 AND cancel_ms = 0",
	[S_UID_GET] = "SELECT uid FROM tenant_uids WHERE tenant = ?1",
	[S_UID_PUT] = "INSERT INTO tenant_uids VALUES (?1, ?2)",
	[S_UID_MAX] = "SELECT coalesce(max(uid), -1) FROM tenant_uids WHERE uid BETWEEN ?1 AND ?2",
	[S_LIST] = LIST(""), [S_LIST_TENANT] = LIST(" WHERE tenant = ?1"),
	[S_LIST_STATE] = LIST(" WHERE state = ?2"),
	[S_LIST_BOTH] = LIST(" WHERE tenant = ?1 AND state = ?2"),
};

struct bm_store {
	sqlite3 *db;
	sqlite3_stmt *stmt[S__MAX];
	struct bm_effect_row row;	/* lent to bm_store__list's fn: 4 KiB kept off the stack */
	char *err;			/* bm_store__open's, while it runs */
	size_t errlen;
	char path[PATH_MAX];
	/* the checkpointer: started at the first commit that fills the WAL, with its own connection */
	pthread_mutex_t ck_mu;
	pthread_cond_t ck_cv;
	pthread_t ck_thread;
	bool ck_started, ck_want, ck_stop;
	unsigned long ck_runs;
};

static const char *const state_names[BM_ST__MAX] = {
	"queued", "running", "throttled", "frozen", "succeeded", "failed", "cancelled", "killed",
	"deadline_exceeded",	/* in enum bm_state's order */
};

const char *bm_state_name(enum bm_state s)
{
	return (unsigned int)s < BM_ST__MAX ? state_names[s] : "unknown";
}

int bm_state_parse(const char *name, enum bm_state *s)
{
	unsigned int i;

	for (i = 0; name && i < BM_ST__MAX; i++)
		if (!strcmp(name, state_names[i]))
			break;
	if (!name || i == BM_ST__MAX)
		return -EINVAL;
	*s = i;
	return 0;
}

bool bm_state_final(enum bm_state s)
{
	return s >= BM_ST_SUCCEEDED && s < BM_ST__MAX;
}

void bm_effect_row_clear(struct bm_effect_row *row)
{
	if (!row)
		return;
	free(row->request_json);
	free(row->outcome_json);
	free(row->pod_json);
	free(row->timeline);
	memset(row, 0, sizeof(*row));
}

static int sql_err(int rc)
{
	/* a constraint: a CHECK (JSON, priority), effects_final, or the primary key */
	if ((rc & 0xff) == SQLITE_CONSTRAINT)
		return rc == SQLITE_CONSTRAINT_PRIMARYKEY ? -EEXIST : -EINVAL;
	rc &= 0xff;
	return rc == SQLITE_BUSY ? -EBUSY : rc == SQLITE_NOMEM ? -ENOMEM :
	       rc == SQLITE_FULL ? -ENOSPC : -EIO;
}

/* Step s to its end (rc: how binding its parameters went) and make it ready for reuse. */
static int run_bound(sqlite3_stmt *s, int rc)
{
	if (rc == SQLITE_OK)
		rc = sqlite3_step(s);
	sqlite3_reset(s);
	/* bindings point into the caller's memory (SQLITE_STATIC): drop them */
	sqlite3_clear_bindings(s);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : sql_err(rc);
}

/* SQLITE_STATIC: no copy, valid until run_bound() clears it */
#define bind_text(s, i, v) sqlite3_bind_text((s), (i), (v), -1, SQLITE_STATIC)
#define bind_i64(s, i, v) sqlite3_bind_int64((s), (i), (v))
#define bind_key(s, tenant, id) (bind_text((s), 1, (tenant)) ?: bind_text((s), 2, (id)))

/* Arrays must hold their NUL: bm_valid_name() would read past an unterminated one. */
#define TERMINATED(a) (memchr((a), '\0', sizeof(a)) != NULL)

int bm_store__insert(struct bm_store *st, const struct bm_effect_row *r)
{
	sqlite3_stmt *s;

	if (!st || !r || !TERMINATED(r->tenant) || !TERMINATED(r->id) || !TERMINATED(r->tool) ||
	    !TERMINATED(r->cgroup) || !TERMINATED(r->parent) || !bm_valid_name(r->tenant) ||
	    !bm_valid_name(r->id) ||
	    (r->state != BM_ST_QUEUED && r->state != BM_ST_RUNNING))
		return -EINVAL;
	s = st->stmt[S_INSERT];
	/* tool, priority, pid and the JSON fail a CHECK (-EINVAL), leaving nothing behind */
	return run_bound(s, bind_key(s, r->tenant, r->id) ?: bind_text(s, 3, r->tool) ?:
			   bind_text(s, 4, bm_state_name(r->state)) ?: bind_text(s, 7, r->cgroup) ?:
			   bind_i64(s, 5, r->priority) ?: bind_i64(s, 6, r->created_ms) ?:
			   bind_i64(s, 8, r->pid) ?: bind_i64(s, 9, (int64_t)r->pid_start) ?:
			   bind_text(s, 10, r->request_json) ?: bind_i64(s, 11, r->uid) ?:
			   bind_i64(s, 12, r->gid) ?: bind_text(s, 13, r->parent) ?:
			   bind_text(s, 14, r->pod_json));
}

/* Copy a TEXT column into a fixed array; NULL or too long only from a hand-edited file. */
static int col_copy(sqlite3_stmt *s, int col, char *dst, size_t size)
{
	const char *v = (const char *)sqlite3_column_text(s, col);

	return v && snprintf(dst, size, "%s", v) < (int)size ? 0 : -EIO;
}

/* Fill r from a COLS result; the JSON is copied if own, else lent until the next step. */
static int fill_row(sqlite3_stmt *s, struct bm_effect_row *r, bool own)
{
	const char *req = (const char *)sqlite3_column_text(s, 10);
	const char *out = (const char *)sqlite3_column_text(s, 11);
	const char *pod = (const char *)sqlite3_column_text(s, 16);

	memset(r, 0, sizeof(*r));
	if (!req || col_copy(s, 0, r->tenant, sizeof(r->tenant)) ||
	    col_copy(s, 1, r->id, sizeof(r->id)) || col_copy(s, 2, r->tool, sizeof(r->tool)) ||
	    col_copy(s, 7, r->cgroup, sizeof(r->cgroup)) ||
	    col_copy(s, 14, r->parent, sizeof(r->parent)) ||
	    bm_state_parse((const char *)sqlite3_column_text(s, 3), &r->state))
		return -EIO;
	r->uid = sqlite3_column_int64(s, 12);
	r->gid = sqlite3_column_int64(s, 13);
	r->cancel_ms = sqlite3_column_int64(s, 15);
	r->priority = sqlite3_column_int(s, 4);
	r->created_ms = sqlite3_column_int64(s, 5);
	r->updated_ms = sqlite3_column_int64(s, 6);
	r->pid = sqlite3_column_int64(s, 8);
	r->pid_start = (uint64_t)sqlite3_column_int64(s, 9);
	r->request_json = own ? strdup(req) : (char *)req;
	r->outcome_json = own && out ? strdup(out) : (char *)out;
	r->pod_json = own && pod ? strdup(pod) : (char *)pod;
	/* rows lent to bm_store__list's fn go without it: what reads one by one shows it */
	r->timeline_len = own ? (size_t)sqlite3_column_bytes(s, 17) : 0;
	r->timeline = r->timeline_len ? malloc(r->timeline_len) : NULL;
	if (r->timeline)
		memcpy(r->timeline, sqlite3_column_blob(s, 17), r->timeline_len);
	if (own && (!r->request_json || (out && !r->outcome_json) || (pod && !r->pod_json) ||
		    (r->timeline_len && !r->timeline))) {
		bm_effect_row_clear(r);
		return -ENOMEM;
	}
	return 0;
}

int bm_store__get(struct bm_store *st, const char *tenant, const char *id,
		  struct bm_effect_row *out)
{
	sqlite3_stmt *s;
	int ret, rc;

	if (out)
		memset(out, 0, sizeof(*out));
	if (!st || !tenant || !id || !out)
		return -EINVAL;
	s = st->stmt[S_GET];
	rc = bind_key(s, tenant, id) ?: sqlite3_step(s);
	ret = rc == SQLITE_ROW ? fill_row(s, out, true) : rc == SQLITE_DONE ? -ENOENT : sql_err(rc);
	run_bound(s, SQLITE_DONE);
	return ret;
}

/* transition and finish; outcome (timeline) NULL keeps the stored one */
static int set_state(struct bm_store *st, const char *tenant, const char *id, enum bm_state to,
		     int64_t at_ms, const char *outcome, const void *tl, size_t tl_len)
{
	sqlite3_stmt *s;

	if (!st || !tenant || !id || (unsigned int)to >= BM_ST__MAX)
		return -EINVAL;
	s = st->stmt[S_SET_STATE];
	/* effects_final refuses to touch an ended effect: -EINVAL */
	return run_bound(s, bind_key(s, tenant, id) ?: bind_text(s, 3, bm_state_name(to)) ?:
			    bind_i64(s, 4, at_ms) ?: bind_text(s, 5, outcome) ?:
			    sqlite3_bind_blob64(s, 6, tl_len ? tl : NULL, tl_len, SQLITE_STATIC)) ?:
	       sqlite3_changes(st->db) ? 0 : -ENOENT;
}

int bm_store__transition(struct bm_store *st, const char *tenant, const char *id, enum bm_state to,
			 int64_t at_ms)
{
	return set_state(st, tenant, id, to, at_ms, NULL, NULL, 0);
}

int bm_store__finish(struct bm_store *st, const char *tenant, const char *id,
		     const char *outcome_json, const void *timeline, size_t timeline_len,
		     enum bm_state final, int64_t at_ms)
{
	if (!outcome_json || !bm_state_final(final))
		return -EINVAL;
	return set_state(st, tenant, id, final, at_ms, outcome_json, timeline, timeline_len);
}

static int exec_sql(struct bm_store *st, const char *sql)
{
	int rc;

	if (!st)
		return -EINVAL;
	rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);
	return rc == SQLITE_OK ? 0 : sql_err(rc);
}

int bm_store__begin(struct bm_store *st)
{
	return exec_sql(st, "BEGIN IMMEDIATE");
}

int bm_store__commit(struct bm_store *st)
{
	int err = exec_sql(st, "COMMIT");

	/* a failed COMMIT may leave the transaction open: nothing of it is stored */
	if (err)
		bm_store__rollback(st);
	return err;
}

void bm_store__rollback(struct bm_store *st)
{
	if (st && !sqlite3_get_autocommit(st->db))
		(void)sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
}

int bm_store__set_runtime(struct bm_store *st, const char *tenant, const char *id,
			  const char *cgroup, int64_t pid, uint64_t pid_start)
{
	sqlite3_stmt *s;

	if (!st || !tenant || !id || !cgroup || strlen(cgroup) >= PATH_MAX)
		return -EINVAL;
	s = st->stmt[S_SET_RUNTIME];
	/* an ended effect runs nowhere: effects_final refuses, so re-adoption never finds it */
	return run_bound(s, bind_key(s, tenant, id) ?: bind_text(s, 3, cgroup) ?:
			    bind_i64(s, 4, pid) ?: bind_i64(s, 5, (int64_t)pid_start)) ?:
	       sqlite3_changes(st->db) ? 0 : -ENOENT;
}

int bm_store__list(struct bm_store *st, const char *tenant, int state, unsigned int limit,
		   bm_row_fn fn, void *ctx)
{
	sqlite3_stmt *s;
	int ret = 0, rc;

	if (!st || !fn || state < -1 || state >= BM_ST__MAX)
		return -EINVAL;
	s = st->stmt[S_LIST + (tenant ? 1 : 0) + (state >= 0 ? 2 : 0)];
	/* a nested walk would reset this one under its caller, which would start over */
	if (sqlite3_stmt_busy(s))
		return -EBUSY;
	rc = bind_text(s, 1, tenant) ?: bind_text(s, 2, state >= 0 ? bm_state_name(state) : NULL) ?:
	     bind_i64(s, 3, limit);
	for (; rc == SQLITE_OK && !ret && (rc = sqlite3_step(s)) == SQLITE_ROW; rc = SQLITE_OK)
		ret = fill_row(s, &st->row, false) ?: fn(&st->row, ctx);
	/* rc is SQLITE_OK here only if fn (or a row) stopped the walk */
	rc = run_bound(s, rc ?: SQLITE_DONE);
	return ret ?: rc;
}

int bm_store__transitions(struct bm_store *st, const char *tenant, const char *id,
			  bm_transition_fn fn, void *ctx)
{
	enum bm_state to;
	sqlite3_stmt *s;
	int ret = 0, rc, n = 0;

	if (!st || !tenant || !id || !fn)
		return -EINVAL;
	s = st->stmt[S_TRANSITIONS];
	if (sqlite3_stmt_busy(s))
		return -EBUSY;
	rc = bind_key(s, tenant, id);
	for (; rc == SQLITE_OK && !ret && (rc = sqlite3_step(s)) == SQLITE_ROW; rc = SQLITE_OK, n++)
		ret = bm_state_parse((const char *)sqlite3_column_text(s, 0), &to) ? -EIO :
		      fn(to, sqlite3_column_int64(s, 1), ctx);
	rc = run_bound(s, rc ?: SQLITE_DONE);
	/* effects_first logs every effect's first state: none means no such effect (here) */
	return ret ?: rc ?: n ? 0 : -ENOENT;
}

int bm_store__recent(struct bm_store *st, const char *tenant, const char *tool, const char *reason,
		     int64_t since_ms, unsigned int *count)
{
	sqlite3_stmt *s;
	int rc;

	if (!st || !tenant || !tool || !reason || !count)
		return -EINVAL;
	s = st->stmt[S_RECENT];
	/* an ended effect's updated_ms is its end: effects_final keeps it */
	rc = bind_key(s, tenant, tool) ?: bind_text(s, 3, reason) ?:
	     bind_i64(s, 4, since_ms) ?: sqlite3_step(s);
	*count = rc == SQLITE_ROW ? (unsigned int)sqlite3_column_int64(s, 0) : 0;
	return run_bound(s, rc);
}

/* bm_store__open's err: "PATH: what", one line (paths and SQLite messages may hold newlines). */
static int __attribute__((format(printf, 3, 4)))
fail(struct bm_store *st, int ret, const char *fmt, ...)
{
	char msg[512], *p;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (st->err)
		snprintf(st->err, st->errlen, "%s: %s", st->path, msg);
	while (st->err && (p = strpbrk(st->err, "\r\n")))
		*p = ' ';
	return ret;
}

/* SQLite failed on the file: a foreign or broken file is -EINVAL, the rest as sql_err(). */
static int sql_fail(struct bm_store *st, int rc, const char *what)
{
	if ((rc & 0xff) == SQLITE_NOTADB)
		return fail(st, -EINVAL, "not an SQLite database");
	if ((rc & 0xff) == SQLITE_CORRUPT)
		return fail(st, -EINVAL, "database is corrupt: %s", sqlite3_errmsg(st->db));
	return fail(st, sql_err(rc), "%s: %s", what, sqlite3_errmsg(st->db));
}

/* Run one statement of open; its first row's first column goes to num and/or str. */
static int query(struct bm_store *st, const char *sql, int64_t *num, char *str, size_t size)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) ?: sqlite3_step(s);

	if (rc == SQLITE_ROW && num)
		*num = sqlite3_column_int64(s, 0);
	if (rc == SQLITE_ROW && str)
		snprintf(str, size, "%s", (const char *)sqlite3_column_text(s, 0) ?: "");
	sqlite3_finalize(s);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : sql_fail(st, rc, sql);
}

/* Fresh (empty), ours, or not ours? *version (0 on entry): where to migrate from. */
static int check_format(struct bm_store *st, int64_t *version)
{
	int64_t app = 0, objects = 0;
	int ret = query(st, "PRAGMA application_id", &app, NULL, 0) ?:
		  query(st, "PRAGMA user_version", version, NULL, 0) ?:
		  query(st, "SELECT count(*) FROM sqlite_schema", &objects, NULL, 0);

	if (ret || (!app && !*version && !objects))
		return ret;
	if (app != BM_STORE_APPLICATION_ID || *version < 1)
		return fail(st, -EINVAL, "not a burstmeter store (application_id %lld, user_version"
			    " %lld), not touching it", (long long)app, (long long)*version);
	if (*version > BM_STORE_SCHEMA_VERSION)
		return fail(st, -EPROTO, "schema version %lld is newer than this burstmeter (%d)",
			    (long long)*version, BM_STORE_SCHEMA_VERSION);
	return 0;
}

/* From version v, foreign keys off as SQLite's ALTER TABLE recipe says: no cascades. */
static int migrate(struct bm_store *st, int64_t v)
{
	char bad[128] = "";
	int ret = 0, rc;

	for (; !ret && v < BM_STORE_SCHEMA_VERSION; v++) {
		rc = sqlite3_exec(st->db, migrations[v], NULL, NULL, NULL);
		if (rc)
			ret = sql_fail(st, rc, v ? "migration failed" : "cannot create the schema");
	}
	ret = ret ?: query(st, "PRAGMA foreign_key_check", NULL, bad, sizeof(bad));
	return ret ?: bad[0] ? fail(st, -EINVAL, "migration breaks foreign keys in %s", bad) : 0;
}

/*
 * The checkpointer: PASSIVE checkpoints (they wait for no reader or writer) from a
 * connection of its own, one whenever a commit left CKPT_PAGES or more in the WAL.
 * The commit that asked goes on at once; the next writer after a complete one
 * restarts the WAL from its start (one fsync of its header, in that writer). Under
 * writes that never pause (a drain of thousands), no run ends with nothing new
 * behind it and the WAL would grow without end: at CKPT_HARD pages the writer
 * checkpoints itself, which completes, copying what the thread has not yet.
 */
static void *ckpt_main(void *arg)
{
	struct bm_store *st = arg;
	sqlite3 *db = NULL;
	bool ok;
	int rc;

	rc = sqlite3_open_v2(st->path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX |
				  SQLITE_OPEN_EXRESCODE, NULL);
	pthread_mutex_lock(&st->ck_mu);
	while (!st->ck_stop) {
		if (!st->ck_want) {
			pthread_cond_wait(&st->ck_cv, &st->ck_mu);
			continue;
		}
		st->ck_want = false;
		pthread_mutex_unlock(&st->ck_mu);
		/* SQLITE_BUSY: another checkpoint (a CLI's) runs; the next commit asks again */
		ok = rc == SQLITE_OK &&
		     sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL) == SQLITE_OK;
		pthread_mutex_lock(&st->ck_mu);
		st->ck_runs += ok;
	}
	pthread_mutex_unlock(&st->ck_mu);
	sqlite3_close_v2(db);
	return NULL;
}

/* Signals go to the threads that wait for them (the agent's signalfd), never to this one. */
static int ckpt_start(struct bm_store *st)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&st->ck_thread, NULL, ckpt_main, st);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -err;
}

static int wal_hook(void *ctx, sqlite3 *db, const char *name, int pages)
{
	struct bm_store *st = ctx;

	bool here = pages >= CKPT_HARD;

	(void)name;
	if (pages < CKPT_PAGES)
		return SQLITE_OK;
	if (!here) {
		pthread_mutex_lock(&st->ck_mu);
		if (!st->ck_started)
			st->ck_started = !ckpt_start(st);
		st->ck_want = st->ck_started;
		pthread_cond_signal(&st->ck_cv);
		pthread_mutex_unlock(&st->ck_mu);
		/* no thread (no memory for one): here, as SQLite's own autocheckpoint would */
		here = !st->ck_started;
	}
	/* SQLITE_BUSY: the thread is in one; the next commit tries again */
	if (here)
		(void)sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	return SQLITE_OK;
}

static void ckpt_stop(struct bm_store *st)
{
	pthread_mutex_lock(&st->ck_mu);
	st->ck_stop = true;
	pthread_cond_signal(&st->ck_cv);
	pthread_mutex_unlock(&st->ck_mu);
	if (st->ck_started)
		pthread_join(st->ck_thread, NULL);
	st->ck_started = false;
}

unsigned long bm_store__checkpoints(struct bm_store *st)
{
	unsigned long n;

	if (!st)
		return 0;
	pthread_mutex_lock(&st->ck_mu);
	n = st->ck_runs;
	pthread_mutex_unlock(&st->ck_mu);
	return n;
}

/*
 * Everything that reads the format or migrates it runs under the write lock
 * (another agent may be migrating the same file) and before journal_mode=WAL,
 * which rewrites the header: a refused file stays byte for byte as it was.
 */
static int setup(struct bm_store *st)
{
	char res[256] = "";
	int64_t version = 0;
	int ret, i;

	ret = query(st, "BEGIN IMMEDIATE", NULL, NULL, 0) ?: check_format(st, &version) ?:
	      /* corruption found now is one clear refusal, later an -EIO mid-effect: ~1 s/100 MB */
	      query(st, "PRAGMA quick_check(1)", NULL, res, sizeof(res));
	if (!ret && strcmp(res, "ok"))
		ret = fail(st, -EINVAL, "database is corrupt: %s", res);
	/* on failure, bm_store__free's close rolls the transaction back */
	ret = ret ?: migrate(st, version) ?: query(st, "COMMIT", NULL, NULL, 0) ?:
	      query(st, "PRAGMA journal_mode = WAL", NULL, res, sizeof(res));
	if (!ret && strcmp(res, "wal"))
		ret = fail(st, -EIO, "cannot use WAL (journal mode stays %s)", res);
	ret = ret ?: query(st, "PRAGMA synchronous = NORMAL", NULL, NULL, 0) ?:
	      query(st, "PRAGMA foreign_keys = ON", NULL, NULL, 0);
	/* replaces the autocheckpoint (sqlite3_wal_autocheckpoint() is this hook) */
	if (!ret)
		sqlite3_wal_hook(st->db, wal_hook, st);
	for (i = 0; !ret && i < S__MAX; i++) {
		ret = sqlite3_prepare_v3(st->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
					 &st->stmt[i], NULL);
		if (ret)
			ret = sql_fail(st, ret, "schema does not match this burstmeter");
	}
	return ret;
}

/* dir is created 0700 and state.db 0600: they hold every tenant's requests. */
static int create_file(struct bm_store *st, const char *dir)
{
	int fd;

	if (!dir || !*dir)
		return fail(st, -EINVAL, "no state directory given");
	if (mkdir(dir, 0700) && errno != EEXIST)
		return fail(st, -errno, "cannot create the state directory: %s", strerror(errno));
	if ((size_t)snprintf(st->path, sizeof(st->path), "%s/state.db", dir) >= sizeof(st->path))
		return fail(st, -ENAMETOOLONG, "path too long");
	/* SQLite would create it 0644; its -wal and -shm copy the file's mode */
	fd = open(st->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return fail(st, -errno, "cannot open: %s", strerror(errno));
	close(fd);
	return 0;
}

struct bm_store *bm_store__open(const char *dir, char *err, size_t errlen)
{
	struct bm_store *st = calloc(1, sizeof(*st));
	int ret, rc, lock_fd;

	if (err && errlen)
		snprintf(err, errlen, "%s", st ? "" : strerror(ENOMEM));
	if (!st)
		return NULL;
	st->err = errlen ? err : NULL;
	st->errlen = errlen;
	pthread_mutex_init(&st->ck_mu, NULL);
	pthread_cond_init(&st->ck_cv, NULL);
	snprintf(st->path, sizeof(st->path), "%s", dir ?: "(null)");
	ret = create_file(st, dir);
	/*
	 * One setup at a time on a dir (its own flock, not SQLite's locks): run
	 * at once, a first open's switch to WAL met another's BEGIN IMMEDIATE
	 * and SQLite answered one of them "locked" or "disk I/O error" without
	 * waiting (test_store_concurrent_first_open, ~1 run in 100 beside another).
	 */
	lock_fd = ret ? -1 : open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lock_fd >= 0 && flock(lock_fd, LOCK_EX) < 0)
		ret = fail(st, -errno, "cannot lock the state directory: %s", strerror(errno));
	rc = ret ? SQLITE_OK : sqlite3_open_v2(st->path, &st->db, SQLITE_OPEN_READWRITE |
					       SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, NULL);
	if (rc)
		ret = sql_fail(st, rc, "cannot open");
	if (!ret) {
		sqlite3_busy_timeout(st->db, BUSY_TIMEOUT_MS);
		/* no statement may corrupt the file on purpose (writable_schema & co.) */
		sqlite3_db_config(st->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
		ret = setup(st);
	}
	if (lock_fd >= 0)
		close(lock_fd);
	st->err = NULL;
	if (!ret)
		return st;
	bm_store__free(st);
	errno = -ret;
	return NULL;
}

void bm_store__free(struct bm_store *st)
{
	int i;

	if (!st)
		return;
	ckpt_stop(st);
	for (i = 0; i < S__MAX; i++)
		sqlite3_finalize(st->stmt[i]);
	/* the last connection's close checkpoints the WAL into state.db */
	sqlite3_close_v2(st->db);
	pthread_cond_destroy(&st->ck_cv);
	pthread_mutex_destroy(&st->ck_mu);
	free(st);
}

int bm_store__expire(struct bm_store *st, int64_t before_ms, unsigned int keep, unsigned int max,
		     bm_key_fn fn, void *ctx)
{
	char (*keys)[2][BM_NAME_MAX + 1];
	sqlite3_stmt *s;
	unsigned int n = 0, i;
	int rc, ret = 0;

	if (!st || !max)
		return -EINVAL;
	keys = calloc(max, sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	/* the keys first, then each row: fn runs between no two steps of a walk */
	s = st->stmt[S_EXPIRED];
	rc = bind_i64(s, 1, before_ms) ?: bind_i64(s, 2, keep) ?: bind_i64(s, 3, max);
	for (; rc == SQLITE_OK && n < max && (rc = sqlite3_step(s)) == SQLITE_ROW; rc = SQLITE_OK)
		if (!col_copy(s, 0, keys[n][0], sizeof(keys[n][0])) &&
		    !col_copy(s, 1, keys[n][1], sizeof(keys[n][1])))
			n++;
	ret = run_bound(s, rc ?: SQLITE_DONE);
	for (i = 0; !ret && i < n; i++) {
		s = st->stmt[S_DELETE];
		ret = run_bound(s, bind_key(s, keys[i][0], keys[i][1]));
		if (!ret && fn)
			fn(keys[i][0], keys[i][1], ctx);
	}
	free(keys);
	return ret ?: (int)n;
}

int bm_store__tenant_uid(struct bm_store *st, const char *tenant, int64_t *uid)
{
	sqlite3_stmt *s;
	int rc;

	if (!st || !tenant || !uid)
		return -EINVAL;
	s = st->stmt[S_UID_GET];
	rc = bind_text(s, 1, tenant) ?: sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*uid = sqlite3_column_int64(s, 0);
	return run_bound(s, rc) ?: rc == SQLITE_ROW ? 0 : -ENOENT;
}

int bm_store__tenant_uid_put(struct bm_store *st, const char *tenant, int64_t uid)
{
	sqlite3_stmt *s;
	int err;

	if (!st || !tenant || uid < 0)
		return -EINVAL;
	s = st->stmt[S_UID_PUT];
	err = run_bound(s, bind_text(s, 1, tenant) ?: bind_i64(s, 2, uid));
	/* the uid (UNIQUE) or the tenant (PRIMARY KEY) is taken */
	return err == -EINVAL ? -EEXIST : err;
}

int bm_store__tenant_uid_max(struct bm_store *st, int64_t lo, int64_t hi, int64_t *max)
{
	sqlite3_stmt *s;
	int rc;

	if (!st || !max)
		return -EINVAL;
	s = st->stmt[S_UID_MAX];
	rc = bind_i64(s, 1, lo) ?: bind_i64(s, 2, hi) ?: sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*max = sqlite3_column_int64(s, 0);
	return run_bound(s, rc);
}

int bm_store__cancel(struct bm_store *st, const char *tenant, const char *id, int64_t at_ms)
{
	sqlite3_stmt *s;

	if (!st || !tenant || !id)
		return -EINVAL;
	s = st->stmt[S_CANCEL];
	return run_bound(s, bind_key(s, tenant, id) ?: bind_i64(s, 3, at_ms));
}
