// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/agent/store.h: the agent's memory across restarts. Every test gets a fresh
 * directory under a mkdtemp() root and a store opened in it; files that are
 * not ours (random bytes, a truncated store, another app's database, a newer
 * or older schema) are written with raw SQLite, as they would be found.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/store.h"

#define REQ "{\"command\":[\"pytest\",\"-x\"],\"priority\":5}"
#define OUTCOME(reason) \
	"{\"schema\":\"burstmeter.outcome/v1\",\"termination\":{\"reason\":\"" reason "\"}}"

struct fx {
	char root[64];		/* mkdtemp'd, removed by teardown */
	char dir[128];		/* root/state: not there until the store makes it */
	char db[PATH_MAX];	/* dir/state.db */
	char err[512];
	struct bm_store *st;
};

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int fx_setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	const char *tmp = getenv("TMPDIR");

	if (!fx)
		return -1;
	if (!tmp || strlen(tmp) >= 40)
		tmp = "/tmp";
	snprintf(fx->root, sizeof(fx->root), "%s/bm-store-XXXXXX", tmp);
	if (!mkdtemp(fx->root)) {
		free(fx);
		return -1;
	}
	snprintf(fx->dir, sizeof(fx->dir), "%s/state", fx->root);
	snprintf(fx->db, sizeof(fx->db), "%s/state.db", fx->dir);
	*state = fx;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *fx = *state;

	bm_store__free(fx->st);
	nftw(fx->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(fx);
	return 0;
}

/* the fixture plus an open store */
static int fx_setup_open(void **state)
{
	struct fx *fx;

	if (fx_setup(state))
		return -1;
	fx = *state;
	fx->st = bm_store__open(fx->dir, fx->err, sizeof(fx->err));
	if (fx->st)
		return 0;
	fprintf(stderr, "setup: %s\n", fx->err);
	fx_teardown(state);	/* cmocka skips teardown when setup fails */
	return -1;
}

static void reopen(struct fx *fx)
{
	bm_store__free(fx->st);
	fx->st = bm_store__open(fx->dir, fx->err, sizeof(fx->err));
	if (!fx->st)
		fail_msg("reopen: %s", fx->err);
}

static struct bm_effect_row row_of(const char *tenant, const char *id, const char *tool,
				   int64_t created_ms)
{
	struct bm_effect_row r;

	memset(&r, 0, sizeof(r));
	snprintf(r.tenant, sizeof(r.tenant), "%s", tenant);
	snprintf(r.id, sizeof(r.id), "%s", id);
	snprintf(r.tool, sizeof(r.tool), "%s", tool);
	r.state = BM_ST_QUEUED;
	r.priority = 5;
	r.created_ms = created_ms;
	r.request_json = REQ;
	return r;
}

static void add(struct bm_store *st, const char *tenant, const char *id, const char *tool,
		int64_t created_ms)
{
	struct bm_effect_row r = row_of(tenant, id, tool, created_ms);

	assert_int_equal(bm_store__insert(st, &r), 0);
}

/* in a forked child: no cmocka asserts there, an exit code instead */
static void add_or_exit(struct bm_store *st, const char *id)
{
	struct bm_effect_row r = row_of("acme", id, "pytest", 100);

	if (!st)
		_exit(2);
	if (bm_store__insert(st, &r))
		_exit(3);
}

static enum bm_state state_of(struct bm_store *st, const char *tenant, const char *id)
{
	struct bm_effect_row r;
	enum bm_state s;

	assert_int_equal(bm_store__get(st, tenant, id, &r), 0);
	s = r.state;
	bm_effect_row_clear(&r);
	return s;
}

/* bm_store__finish with an outcome whose termination.reason is reason */
static int finish(struct bm_store *st, const char *tenant, const char *id, const char *reason,
		  enum bm_state final, int64_t at_ms)
{
	char json[256];

	snprintf(json, sizeof(json), OUTCOME("%s"), reason);
	return bm_store__finish(st, tenant, id, json, NULL, 0, final, at_ms);
}

/* raw SQLite on a file, as another program (or an older burstmeter) would write it */
static void raw_exec(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	char *msg = NULL;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s: %s", sql, msg);
	sqlite3_close(db);
}

static int64_t raw_int(const char *path, const char *sql)
{
	sqlite3_stmt *s;
	sqlite3 *db = NULL;
	int64_t v;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return v;
}

static void *slurp(const char *path, size_t *len)
{
	struct stat sb;
	void *buf;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &sb), 0);
	buf = malloc(sb.st_size + 1);
	assert_non_null(buf);
	assert_int_equal(read(fd, buf, sb.st_size), sb.st_size);
	close(fd);
	*len = sb.st_size;
	return buf;
}

static void spew(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* Opening must fail with errno and one line in err that starts with the file's name. */
static void assert_refused(struct fx *fx, int err_no, const char *what)
{
	assert_null(fx->st = bm_store__open(fx->dir, fx->err, sizeof(fx->err)));
	assert_int_equal(errno, err_no);
	assert_int_equal(strncmp(fx->err, fx->db, strlen(fx->db)), 0);
	assert_non_null(strstr(fx->err, what));
	assert_null(strchr(fx->err, '\n'));
}

struct seen {
	int n, stop_after, stop_with;
	char id[16][BM_NAME_MAX + 1];
	char tenant[16][BM_NAME_MAX + 1];
	enum bm_state state[16];
	int64_t at_ms[16];
	struct bm_store *st;	/* for callbacks that call the store */
};

static int see_row(const struct bm_effect_row *r, void *ctx)
{
	struct seen *s = ctx;

	assert_true(s->n < 16);
	assert_string_equal(r->request_json, REQ);
	strcpy(s->id[s->n], r->id);
	strcpy(s->tenant[s->n], r->tenant);
	s->state[s->n] = r->state;
	s->n++;
	return s->n == s->stop_after ? s->stop_with : 0;
}

static int see_transition(enum bm_state st, int64_t at_ms, void *ctx)
{
	struct seen *s = ctx;

	assert_true(s->n < 16);
	s->state[s->n] = st;
	s->at_ms[s->n] = at_ms;
	s->n++;
	return s->n == s->stop_after ? s->stop_with : 0;
}

static int transitions(struct bm_store *st, const char *tenant, const char *id, struct seen *s)
{
	memset(s, 0, sizeof(*s));
	return bm_store__transitions(st, tenant, id, see_transition, s);
}

static int list(struct bm_store *st, const char *tenant, int state, unsigned int limit,
		struct seen *s)
{
	memset(s, 0, sizeof(*s));
	return bm_store__list(st, tenant, state, limit, see_row, s);
}

static void test_store_state_names(void **state)
{
	static const char *const names[BM_ST__MAX] = {
		"queued", "running", "throttled", "frozen", "succeeded",
		"failed", "cancelled", "killed", "deadline_exceeded",
	};
	enum bm_state s;
	int i;

	for (i = 0; i < BM_ST__MAX; i++) {
		assert_string_equal(bm_state_name(i), names[i]);
		s = BM_ST__MAX;
		assert_int_equal(bm_state_parse(names[i], &s), 0);
		assert_int_equal(s, i);
		assert_int_equal(bm_state_final(i), i >= BM_ST_SUCCEEDED);
	}
	assert_string_equal(bm_state_name(BM_ST__MAX), "unknown");
	assert_string_equal(bm_state_name((enum bm_state)-1), "unknown");
	assert_false(bm_state_final(BM_ST__MAX));
	assert_int_equal(bm_state_parse("Running", &s), -EINVAL);
	assert_int_equal(bm_state_parse("", &s), -EINVAL);
	assert_int_equal(bm_state_parse("running ", &s), -EINVAL);
	assert_int_equal(bm_state_parse(NULL, &s), -EINVAL);
}

static void test_store_creates_private_files(void **state)
{
	struct fx *fx = *state;
	struct stat sb;
	char path[PATH_MAX + 8];

	assert_int_equal(stat(fx->dir, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0700);
	assert_int_equal(stat(fx->db, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);
	add(fx->st, "acme", "tc-1", "pytest", 1000);
	/* WAL: the log and its index exist while the store is open, just as private */
	snprintf(path, sizeof(path), "%s-wal", fx->db);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);
	snprintf(path, sizeof(path), "%s-shm", fx->db);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);
	assert_int_equal(raw_int(fx->db, "PRAGMA user_version"), BM_STORE_SCHEMA_VERSION);
	assert_int_equal(raw_int(fx->db, "PRAGMA application_id"), BM_STORE_APPLICATION_ID);
	assert_int_equal(raw_int(fx->db, "SELECT count(*) FROM pragma_journal_mode"
					 " WHERE journal_mode = 'wal'"), 1);
	/* no parent directory: refused, naming it */
	snprintf(path, sizeof(path), "%s/no/such", fx->root);
	assert_null(bm_store__open(path, fx->err, sizeof(fx->err)));
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(fx->err, path));
	assert_null(bm_store__open(NULL, fx->err, sizeof(fx->err)));
	assert_int_equal(errno, EINVAL);
	assert_null(bm_store__open("", NULL, 0));
	assert_int_equal(errno, EINVAL);
}

static void test_store_insert_get_round_trip(void **state)
{
	struct fx *fx = *state;
	struct bm_effect_row in = row_of("acme", "tc-42", "pytest", 1764496800123LL), out;

	in.state = BM_ST_RUNNING;
	in.priority = 10;
	in.updated_ms = 5;	/* ignored: an effect is updated when created */
	snprintf(in.cgroup, sizeof(in.cgroup), "/sys/fs/cgroup/burstmeter.slice/acme/tc-42");
	in.pid = 4242;
	in.pid_start = UINT64_MAX - 7;	/* beyond INT64_MAX: stored as its bits */
	in.uid = 900001;
	in.gid = 900002;
	snprintf(in.parent, sizeof(in.parent), "tc-41");
	in.outcome_json = "{\"ignored\":true}";
	assert_int_equal(bm_store__insert(fx->st, &in), 0);
	assert_int_equal(bm_store__get(fx->st, "acme", "tc-42", &out), 0);
	assert_string_equal(out.tenant, "acme");
	assert_string_equal(out.id, "tc-42");
	assert_string_equal(out.tool, "pytest");
	assert_int_equal(out.state, BM_ST_RUNNING);
	assert_int_equal(out.priority, 10);
	assert_int_equal(out.created_ms, 1764496800123LL);
	assert_int_equal(out.updated_ms, 1764496800123LL);
	assert_string_equal(out.cgroup, in.cgroup);
	assert_int_equal(out.pid, 4242);
	assert_true(out.pid_start == UINT64_MAX - 7);
	assert_int_equal(out.uid, 900001);
	assert_int_equal(out.gid, 900002);
	assert_string_equal(out.parent, "tc-41");
	assert_string_equal(out.request_json, REQ);
	assert_ptr_not_equal(out.request_json, in.request_json);
	assert_null(out.outcome_json);
	bm_effect_row_clear(&out);
	assert_null(out.request_json);
	assert_string_equal(out.id, "");
	bm_effect_row_clear(NULL);
	/* not found: -ENOENT, and *out is left empty so clearing it is harmless */
	assert_int_equal(bm_store__get(fx->st, "acme", "tc-43", &out), -ENOENT);
	assert_null(out.request_json);
	bm_effect_row_clear(&out);
}

static void test_store_insert_rejects_bad_rows(void **state)
{
	struct fx *fx = *state;
	struct bm_effect_row r;
	struct seen s;

#define REJECT(field_change)                                                         \
	do {                                                                         \
		r = row_of("acme", "tc-1", "pytest", 1000);                          \
		field_change;                                                        \
		assert_int_equal(bm_store__insert(fx->st, &r), -EINVAL);             \
	} while (0)
	REJECT(r.priority = 0);
	REJECT(r.priority = 11);
	REJECT(strcpy(r.tenant, "../x"));
	REJECT(strcpy(r.tenant, ""));
	REJECT(strcpy(r.id, ".hidden"));
	REJECT(memset(r.id, 'a', sizeof(r.id)));	/* no NUL at all */
	REJECT(r.tool[0] = '\0');
	REJECT(r.state = BM_ST_THROTTLED);
	REJECT(r.state = BM_ST_SUCCEEDED);
	REJECT(r.pid = -1);
	REJECT(r.request_json = NULL);
	REJECT(r.request_json = "{oops");
	REJECT(r.request_json = "");
	REJECT(r.request_json = "{\"a\":1}}");
#undef REJECT
	assert_int_equal(bm_store__insert(NULL, &r), -EINVAL);
	assert_int_equal(bm_store__insert(fx->st, NULL), -EINVAL);
	/* nothing of any of them was left behind, not even a first transition */
	assert_int_equal(list(fx->st, NULL, -1, UINT_MAX, &s), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(raw_int(fx->db, "SELECT count(*) FROM transitions"), 0);
}

static void test_store_duplicates_and_tenants(void **state)
{
	struct fx *fx = *state;
	struct bm_effect_row r = row_of("acme", "tc-1", "pytest", 1000), out;
	struct seen s;

	assert_int_equal(bm_store__insert(fx->st, &r), 0);
	r.priority = 9;
	r.created_ms = 2000;
	assert_int_equal(bm_store__insert(fx->st, &r), -EEXIST);
	/* the same id in another tenant is another effect */
	strcpy(r.tenant, "globex");
	assert_int_equal(bm_store__insert(fx->st, &r), 0);
	assert_int_equal(bm_store__get(fx->st, "acme", "tc-1", &out), 0);
	assert_int_equal(out.priority, 5);	/* the duplicate changed nothing */
	assert_int_equal(out.created_ms, 1000);
	bm_effect_row_clear(&out);
	assert_int_equal(bm_store__get(fx->st, "globex", "tc-1", &out), 0);
	assert_int_equal(out.priority, 9);
	bm_effect_row_clear(&out);
	assert_int_equal(transitions(fx->st, "acme", "tc-1", &s), 0);
	assert_int_equal(s.n, 1);
	/* what one tenant does is invisible to the other */
	assert_int_equal(bm_store__transition(fx->st, "globex", "tc-1", BM_ST_RUNNING, 2100), 0);
	assert_int_equal(state_of(fx->st, "acme", "tc-1"), BM_ST_QUEUED);
	add(fx->st, "globex", "tc-2", "make", 3000);
	assert_int_equal(bm_store__get(fx->st, "acme", "tc-2", &out), -ENOENT);
	assert_int_equal(bm_store__transition(fx->st, "acme", "tc-2", BM_ST_RUNNING, 1), -ENOENT);
	assert_int_equal(bm_store__set_runtime(fx->st, "acme", "tc-2", "/x", 1, 1), -ENOENT);
	assert_int_equal(finish(fx->st, "acme", "tc-2", "completed", BM_ST_SUCCEEDED, 1), -ENOENT);
	assert_int_equal(transitions(fx->st, "acme", "tc-2", &s), -ENOENT);
	assert_int_equal(list(fx->st, "acme", -1, UINT_MAX, &s), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.tenant[0], "acme");
	assert_int_equal(list(fx->st, "globex", -1, UINT_MAX, &s), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(list(fx->st, "initech", -1, UINT_MAX, &s), 0);
	assert_int_equal(s.n, 0);
}

static void test_store_transitions_in_order(void **state)
{
	static const enum bm_state want[] = { BM_ST_QUEUED, BM_ST_RUNNING, BM_ST_THROTTLED,
					      BM_ST_FROZEN, BM_ST_RUNNING, BM_ST_SUCCEEDED };
	static const int64_t at[] = { 100, 200, 300, 400, 350, 500 };
	struct fx *fx = *state;
	struct bm_effect_row r;
	struct seen s;
	size_t i;

	add(fx->st, "acme", "tc-1", "pytest", 100);
	for (i = 1; i < 5; i++)
		assert_int_equal(bm_store__transition(fx->st, "acme", "tc-1", want[i], at[i]), 0);
	/* re-asserting the state is no transition: nothing logged, updated_ms kept */
	assert_int_equal(bm_store__transition(fx->st, "acme", "tc-1", BM_ST_RUNNING, 450), 0);
	assert_int_equal(bm_store__get(fx->st, "acme", "tc-1", &r), 0);
	assert_int_equal(r.updated_ms, 350);
	bm_effect_row_clear(&r);
	assert_int_equal(finish(fx->st, "acme", "tc-1", "completed", BM_ST_SUCCEEDED, 500), 0);
	/* recording order, even where the wall clock stepped back (400 -> 350) */
	assert_int_equal(transitions(fx->st, "acme", "tc-1", &s), 0);
	assert_int_equal(s.n, 6);
	for (i = 0; i < 6; i++) {
		assert_int_equal(s.state[i], want[i]);
		assert_int_equal(s.at_ms[i], at[i]);
	}
	assert_int_equal(bm_store__get(fx->st, "acme", "tc-1", &r), 0);
	assert_int_equal(r.state, BM_ST_SUCCEEDED);
	assert_int_equal(r.created_ms, 100);
	assert_int_equal(r.updated_ms, 500);
	bm_effect_row_clear(&r);
	/* the walk stops when fn says so, and returns what fn said */
	memset(&s, 0, sizeof(s));
	s.stop_after = 2;
	s.stop_with = 42;
	assert_int_equal(bm_store__transitions(fx->st, "acme", "tc-1", see_transition, &s), 42);
	assert_int_equal(s.n, 2);
	/* and the next walk starts over */
	assert_int_equal(transitions(fx->st, "acme", "tc-1", &s), 0);
	assert_int_equal(s.n, 6);
	assert_int_equal(bm_store__transition(fx->st, "acme", "tc-1", BM_ST__MAX, 1), -EINVAL);
	assert_int_equal(bm_store__transitions(fx->st, "acme", "tc-1", NULL, NULL), -EINVAL);
}

static void test_store_final_states_are_sticky(void **state)
{
	struct fx *fx = *state;
	struct bm_effect_row r;
	struct seen s;
	char id[16];
	int f, to;

	for (f = BM_ST_SUCCEEDED; f < BM_ST__MAX; f++) {
		snprintf(id, sizeof(id), "tc-%d", f);
		add(fx->st, "acme", id, "pytest", 1000);
		assert_int_equal(bm_store__transition(fx->st, "acme", id, BM_ST_RUNNING, 1100), 0);
		/* half end by transition (cancelled before any outcome), half by finish */
		if (f % 2)
			assert_int_equal(bm_store__transition(fx->st, "acme", id, f, 1200), 0);
		else
			assert_int_equal(finish(fx->st, "acme", id, "completed", f, 1200), 0);
		for (to = 0; to < BM_ST__MAX; to++)
			assert_int_equal(bm_store__transition(fx->st, "acme", id, to, 1300),
					 -EINVAL);
		assert_int_equal(finish(fx->st, "acme", id, "failed", f, 1300), -EINVAL);
		assert_int_equal(bm_store__set_runtime(fx->st, "acme", id, "/cg", 7, 7), -EINVAL);
		assert_int_equal(bm_store__get(fx->st, "acme", id, &r), 0);
		assert_int_equal(r.state, f);
		assert_int_equal(r.updated_ms, 1200);
		assert_string_equal(r.cgroup, "");
		if (f % 2)
			assert_null(r.outcome_json);
		else
			assert_string_equal(r.outcome_json, OUTCOME("completed"));
		bm_effect_row_clear(&r);
		assert_int_equal(transitions(fx->st, "acme", id, &s), 0);
		assert_int_equal(s.n, 3);
	}
}

static void test_store_finish_and_recent(void **state)
{
	struct fx *fx = *state;
	struct bm_effect_row r;
	unsigned int n = 99;
	struct seen s;

	add(fx->st, "acme", "a", "pytest", 100);
	add(fx->st, "acme", "b", "pytest", 200);
	add(fx->st, "acme", "c", "pytest", 300);
	add(fx->st, "acme", "d", "make", 400);
	add(fx->st, "globex", "e", "pytest", 500);
	add(fx->st, "acme", "f", "pytest", 600);	/* still running: not counted */
	assert_int_equal(finish(fx->st, "acme", "a", "memory_ceiling", BM_ST_KILLED, 1000), 0);
	assert_int_equal(finish(fx->st, "acme", "b", "memory_ceiling", BM_ST_KILLED, 2000), 0);
	assert_int_equal(finish(fx->st, "acme", "c", "completed", BM_ST_SUCCEEDED, 2500), 0);
	assert_int_equal(finish(fx->st, "acme", "d", "memory_ceiling", BM_ST_KILLED, 2600), 0);
	assert_int_equal(finish(fx->st, "globex", "e", "memory_ceiling", BM_ST_KILLED, 2700), 0);
	assert_int_equal(bm_store__transition(fx->st, "acme", "f", BM_ST_RUNNING, 2800), 0);
	assert_int_equal(bm_store__get(fx->st, "acme", "a", &r), 0);
	assert_string_equal(r.outcome_json, OUTCOME("memory_ceiling"));
	assert_int_equal(r.state, BM_ST_KILLED);
	bm_effect_row_clear(&r);
	assert_int_equal(bm_store__recent(fx->st, "acme", "pytest", "memory_ceiling", 0, &n), 0);
	assert_int_equal(n, 2);
	/* since is inclusive, and measured at the end */
	assert_int_equal(bm_store__recent(fx->st, "acme", "pytest", "memory_ceiling", 2000, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(bm_store__recent(fx->st, "acme", "pytest", "memory_ceiling", 2001, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(bm_store__recent(fx->st, "acme", "pytest", "completed", 0, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(bm_store__recent(fx->st, "acme", "make", "memory_ceiling", 0, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(bm_store__recent(fx->st, "globex", "pytest", "memory_ceiling", 0, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(bm_store__recent(fx->st, "initech", "pytest", "memory_ceiling", 0, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(bm_store__recent(fx->st, "acme", "pytest", NULL, 0, &n), -EINVAL);
	/* refused: not final, no or invalid JSON; each leaves the effect as it was */
	assert_int_equal(finish(fx->st, "acme", "f", "completed", BM_ST_RUNNING, 3000), -EINVAL);
	assert_int_equal(bm_store__finish(fx->st, "acme", "f", NULL, NULL, 0, BM_ST_SUCCEEDED, 3000),
			 -EINVAL);
	assert_int_equal(bm_store__finish(fx->st, "acme", "f", "{\"termination\":", NULL, 0,
					  BM_ST_SUCCEEDED, 3000), -EINVAL);
	assert_int_equal(bm_store__finish(fx->st, "acme", "f", "", NULL, 0, BM_ST_SUCCEEDED, 3000), -EINVAL);
	assert_int_equal(bm_store__get(fx->st, "acme", "f", &r), 0);
	assert_int_equal(r.state, BM_ST_RUNNING);
	assert_int_equal(r.updated_ms, 2800);
	assert_null(r.outcome_json);
	bm_effect_row_clear(&r);
	assert_int_equal(transitions(fx->st, "acme", "f", &s), 0);
	assert_int_equal(s.n, 2);
}

/* list_fn: the row's timeline as it was lent */
static int lent_timeline(const struct bm_effect_row *r, void *arg)
{
	*(size_t *)arg += r->timeline_len + (r->timeline != NULL);
	return 0;
}

/* The packed timeline is kept beside the outcome, byte for byte; a list lends rows without it. */
static void test_store_keeps_the_timeline(void **state)
{
	static const unsigned char tl[] = { 'B', 'M', 'T', '1', 0, 1, 2, 0, 255 };
	struct fx *fx = *state;
	struct bm_effect_row r;
	size_t lent = 0;

	add(fx->st, "acme", "a", "pytest", 100);
	add(fx->st, "acme", "b", "pytest", 200);
	assert_int_equal(bm_store__finish(fx->st, "acme", "a", OUTCOME("completed"), tl, sizeof(tl),
					  BM_ST_SUCCEEDED, 1000), 0);
	assert_int_equal(finish(fx->st, "acme", "b", "completed", BM_ST_SUCCEEDED, 1000), 0);
	assert_int_equal(bm_store__get(fx->st, "acme", "a", &r), 0);
	assert_string_equal(r.outcome_json, OUTCOME("completed"));
	assert_int_equal(r.timeline_len, sizeof(tl));
	assert_memory_equal(r.timeline, tl, sizeof(tl));
	bm_effect_row_clear(&r);
	assert_int_equal(bm_store__get(fx->st, "acme", "b", &r), 0);
	assert_null(r.timeline);
	assert_int_equal(r.timeline_len, 0);
	bm_effect_row_clear(&r);
	assert_int_equal(bm_store__list(fx->st, "acme", -1, 10, lent_timeline, &lent), 0);
	assert_int_equal(lent, 0);
}

static void test_store_set_runtime(void **state)
{
	struct fx *fx = *state;
	struct bm_effect_row r;
	char big[PATH_MAX + 1];

	add(fx->st, "acme", "tc-1", "pytest", 100);
	assert_int_equal(bm_store__set_runtime(fx->st, "acme", "tc-1", "/sys/fs/cgroup/bm/tc-1", 77,
					       123456), 0);
	assert_int_equal(bm_store__get(fx->st, "acme", "tc-1", &r), 0);
	assert_string_equal(r.cgroup, "/sys/fs/cgroup/bm/tc-1");
	assert_int_equal(r.pid, 77);
	assert_int_equal(r.pid_start, 123456);
	assert_int_equal(r.state, BM_ST_QUEUED);	/* where it runs, not whether */
	assert_int_equal(r.updated_ms, 100);
	bm_effect_row_clear(&r);
	memset(big, 'x', PATH_MAX);
	big[PATH_MAX] = '\0';
	assert_int_equal(bm_store__set_runtime(fx->st, "acme", "tc-1", big, 1, 1), -EINVAL);
	assert_int_equal(bm_store__set_runtime(fx->st, "acme", "tc-1", "/x", -1, 1), -EINVAL);
	assert_int_equal(bm_store__set_runtime(fx->st, "acme", "tc-1", NULL, 1, 1), -EINVAL);
}

static void test_store_list_order_filters_limit(void **state)
{
	struct fx *fx = *state;
	struct seen s;

	add(fx->st, "acme", "old", "pytest", 100);
	add(fx->st, "acme", "tie-b", "pytest", 300);
	add(fx->st, "acme", "tie-a", "pytest", 300);
	add(fx->st, "globex", "mid", "pytest", 200);
	add(fx->st, "acme", "new", "pytest", 400);
	assert_int_equal(bm_store__transition(fx->st, "acme", "tie-b", BM_ST_RUNNING, 500), 0);
	assert_int_equal(bm_store__transition(fx->st, "globex", "mid", BM_ST_RUNNING, 500), 0);
	/* newest first; equal times by id */
	assert_int_equal(list(fx->st, NULL, -1, UINT_MAX, &s), 0);
	assert_int_equal(s.n, 5);
	assert_string_equal(s.id[0], "new");
	assert_string_equal(s.id[1], "tie-a");
	assert_string_equal(s.id[2], "tie-b");
	assert_string_equal(s.id[3], "mid");
	assert_string_equal(s.id[4], "old");
	assert_int_equal(list(fx->st, "acme", -1, UINT_MAX, &s), 0);
	assert_int_equal(s.n, 4);
	assert_string_equal(s.id[3], "old");
	assert_int_equal(list(fx->st, NULL, BM_ST_RUNNING, UINT_MAX, &s), 0);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.id[0], "tie-b");
	assert_string_equal(s.id[1], "mid");
	assert_int_equal(s.state[1], BM_ST_RUNNING);
	assert_int_equal(list(fx->st, "acme", BM_ST_RUNNING, UINT_MAX, &s), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.id[0], "tie-b");
	assert_int_equal(list(fx->st, "acme", BM_ST_QUEUED, 2, &s), 0);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.id[0], "new");
	assert_string_equal(s.id[1], "tie-a");
	assert_int_equal(list(fx->st, NULL, -1, 0, &s), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(list(fx->st, NULL, BM_ST_KILLED, UINT_MAX, &s), 0);
	assert_int_equal(s.n, 0);
	/* fn stops the walk: its value comes back, and the next walk starts over */
	memset(&s, 0, sizeof(s));
	s.stop_after = 2;
	s.stop_with = 7;
	assert_int_equal(bm_store__list(fx->st, NULL, -1, UINT_MAX, see_row, &s), 7);
	assert_int_equal(s.n, 2);
	s.n = 0;
	s.stop_with = -ECANCELED;
	assert_int_equal(bm_store__list(fx->st, NULL, -1, UINT_MAX, see_row, &s), -ECANCELED);
	assert_int_equal(list(fx->st, NULL, -1, UINT_MAX, &s), 0);
	assert_int_equal(s.n, 5);
	assert_int_equal(list(fx->st, NULL, BM_ST__MAX, 1, &s), -EINVAL);
	assert_int_equal(list(fx->st, NULL, -2, 1, &s), -EINVAL);
	assert_int_equal(bm_store__list(fx->st, NULL, -1, 1, NULL, NULL), -EINVAL);
}

/* Re-adoption: walk the running effects and act on each from inside the walk. */
static int freeze_it(const struct bm_effect_row *r, void *ctx)
{
	struct seen *s = ctx, inner;

	s->n++;
	assert_int_equal(bm_store__transition(s->st, r->tenant, r->id, BM_ST_FROZEN, 900), 0);
	assert_int_equal(bm_store__set_runtime(s->st, r->tenant, r->id, "/cg", 1, 2), 0);
	assert_int_equal(transitions(s->st, r->tenant, r->id, &inner), 0);
	assert_int_equal(inner.n, 3);
	/* the same walk, nested, would restart this one: refused */
	assert_int_equal(bm_store__list(s->st, NULL, BM_ST_RUNNING, 10, see_row, &inner), -EBUSY);
	assert_int_equal(list(s->st, "acme", -1, 10, &inner), 0);
	return 0;
}

static void test_store_list_callback_may_use_the_store(void **state)
{
	struct fx *fx = *state;
	struct seen s = { .st = fx->st };
	char id[16];
	int i;

	for (i = 0; i < 5; i++) {
		snprintf(id, sizeof(id), "tc-%d", i);
		add(fx->st, "acme", id, "pytest", 100 + i);
		assert_int_equal(bm_store__transition(fx->st, "acme", id, BM_ST_RUNNING, 200), 0);
	}
	assert_int_equal(bm_store__list(fx->st, NULL, BM_ST_RUNNING, UINT_MAX, freeze_it, &s), 0);
	assert_int_equal(s.n, 5);
	assert_int_equal(list(fx->st, NULL, BM_ST_FROZEN, UINT_MAX, &s), 0);
	assert_int_equal(s.n, 5);
}

static void test_store_persists_across_reopen(void **state)
{
	struct fx *fx = *state;
	struct bm_effect_row r;
	struct seen s;

	add(fx->st, "acme", "tc-1", "pytest", 100);
	assert_int_equal(bm_store__transition(fx->st, "acme", "tc-1", BM_ST_RUNNING, 200), 0);
	assert_int_equal(bm_store__set_runtime(fx->st, "acme", "tc-1", "/cg/tc-1", 9, 99), 0);
	assert_int_equal(finish(fx->st, "acme", "tc-1", "cpu_ceiling", BM_ST_CANCELLED, 300), 0);
	add(fx->st, "acme", "tc-2", "make", 400);
	reopen(fx);
	assert_int_equal(bm_store__get(fx->st, "acme", "tc-1", &r), 0);
	assert_int_equal(r.state, BM_ST_CANCELLED);
	assert_string_equal(r.cgroup, "/cg/tc-1");
	assert_int_equal(r.pid, 9);
	assert_int_equal(r.pid_start, 99);
	assert_string_equal(r.outcome_json, OUTCOME("cpu_ceiling"));
	bm_effect_row_clear(&r);
	assert_int_equal(transitions(fx->st, "acme", "tc-1", &s), 0);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.at_ms[2], 300);
	assert_int_equal(state_of(fx->st, "acme", "tc-2"), BM_ST_QUEUED);
	/* and it goes on: final still final, new effects still insert */
	assert_int_equal(bm_store__transition(fx->st, "acme", "tc-1", BM_ST_RUNNING, 500), -EINVAL);
	add(fx->st, "acme", "tc-3", "make", 600);
}

/*
 * A writer that dies without closing: one commit in the WAL, never
 * checkpointed, and one transaction torn mid-way (its pages spilled into the
 * WAL without a commit). The store is closed before the fork: an SQLite
 * connection must not cross fork(), and it is the child's crash under test.
 */
static void test_store_survives_a_crashed_writer(void **state)
{
	struct fx *fx = *state;
	char wal[PATH_MAX + 8];
	struct bm_effect_row r;
	struct stat sb;
	int status;
	pid_t pid;

	add(fx->st, "acme", "before", "pytest", 100);
	bm_store__free(fx->st);
	fx->st = NULL;
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct bm_store *st = bm_store__open(fx->dir, NULL, 0);
		struct bm_effect_row c = row_of("acme", "child", "pytest", 200);
		sqlite3 *db;

		if (!st || bm_store__insert(st, &c) ||
		    bm_store__transition(st, "acme", "child", BM_ST_RUNNING, 300))
			_exit(2);
		if (sqlite3_open(fx->db, &db) ||
		    sqlite3_exec(db, "PRAGMA cache_size = 1; BEGIN IMMEDIATE;"
				 " WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL"
				 " SELECT i + 1 FROM n WHERE i < 200)"
				 " INSERT INTO effects (tenant, id, tool, state, priority,"
				 " created_ms, updated_ms, request)"
				 " SELECT 'acme', 'torn-' || i, 't', 'queued', 1, 1, 1,"
				 " json_object('pad', printf('%.2000c', 'x')) FROM n;",
				 NULL, NULL, NULL))
			_exit(3);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	snprintf(wal, sizeof(wal), "%s-wal", fx->db);
	assert_int_equal(stat(wal, &sb), 0);
	assert_true(sb.st_size > 0);	/* the commit lives only in the WAL */
	fx->st = bm_store__open(fx->dir, fx->err, sizeof(fx->err));
	assert_non_null(fx->st);
	assert_int_equal(state_of(fx->st, "acme", "before"), BM_ST_QUEUED);
	assert_int_equal(bm_store__get(fx->st, "acme", "child", &r), 0);
	assert_int_equal(r.state, BM_ST_RUNNING);
	assert_int_equal(r.updated_ms, 300);
	bm_effect_row_clear(&r);
	assert_int_equal(bm_store__get(fx->st, "acme", "torn-1", &r), -ENOENT);
	assert_int_equal(raw_int(fx->db, "SELECT count(*) FROM effects"), 2);
}

static void xorshift_fill(unsigned char *buf, size_t len)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	size_t i;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (unsigned char)x;
	}
}

static void test_store_refuses_garbage(void **state)
{
	struct fx *fx = *state;
	unsigned char junk[8192];
	size_t len;
	void *after;

	assert_int_equal(mkdir(fx->dir, 0700), 0);
	xorshift_fill(junk, sizeof(junk));
	spew(fx->db, junk, sizeof(junk));
	assert_refused(fx, EINVAL, ": not an SQLite database");
	after = slurp(fx->db, &len);
	assert_int_equal(len, sizeof(junk));
	assert_memory_equal(after, junk, sizeof(junk));	/* refused, untouched */
	free(after);
	spew(fx->db, "hello, world\n", 13);
	assert_refused(fx, EINVAL, ": not an SQLite database");
	/* the magic, then nothing */
	spew(fx->db, "SQLite format 3", 16);
	assert_refused(fx, EINVAL, "");
}

static void test_store_refuses_a_truncated_store(void **state)
{
	struct fx *fx = *state;
	struct bm_effect_row r;
	struct stat sb;
	char id[16];
	int i;

	r = row_of("acme", "x", "pytest", 1);
	r.request_json = malloc(2048 + 16);
	assert_non_null(r.request_json);
	sprintf(r.request_json, "{\"pad\":\"%02000d\"}", 0);
	for (i = 0; i < 200; i++) {
		snprintf(id, sizeof(id), "tc-%d", i);
		strcpy(r.id, id);
		assert_int_equal(bm_store__insert(fx->st, &r), 0);
	}
	free(r.request_json);
	bm_store__free(fx->st);	/* checkpoints everything into state.db */
	fx->st = NULL;
	assert_int_equal(stat(fx->db, &sb), 0);
	assert_true(sb.st_size > 200 * 2048);
	assert_int_equal(truncate(fx->db, sb.st_size / 2), 0);
	assert_refused(fx, EINVAL, "corrupt");
	assert_int_equal(truncate(fx->db, 50), 0);
	assert_refused(fx, EINVAL, "");
}

static void test_store_refuses_a_newer_schema(void **state)
{
	struct fx *fx = *state;
	char want[PATH_MAX + 128];

	bm_store__free(fx->st);
	fx->st = NULL;
	raw_exec(fx->db, "PRAGMA user_version = 99");
	snprintf(want, sizeof(want), "%s: schema version 99 is newer than this burstmeter (%d)",
		 fx->db, BM_STORE_SCHEMA_VERSION);
	assert_refused(fx, EPROTO, "newer");
	assert_string_equal(fx->err, want);
	assert_int_equal(raw_int(fx->db, "PRAGMA user_version"), 99);
}

static void test_store_refuses_a_foreign_database(void **state)
{
	struct fx *fx = *state;
	char side[PATH_MAX + 8];
	void *before, *after;
	size_t n1, n2;

	assert_int_equal(mkdir(fx->dir, 0700), 0);
	/* someone else's app: user_version 0 like every fresh SQLite file, but tables */
	raw_exec(fx->db, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);"
			 "INSERT INTO notes (body) VALUES ('keep me');");
	before = slurp(fx->db, &n1);
	assert_refused(fx, EINVAL, "not a burstmeter store");
	after = slurp(fx->db, &n2);
	assert_int_equal(n1, n2);
	assert_memory_equal(before, after, n1);	/* not even switched to WAL */
	free(before);
	free(after);
	snprintf(side, sizeof(side), "%s-wal", fx->db);
	assert_false(exists(side));
	snprintf(side, sizeof(side), "%s-journal", fx->db);
	assert_false(exists(side));
	/* one that uses user_version too, even with tables named like ours */
	raw_exec(fx->db, "PRAGMA user_version = 1;"
			 " CREATE TABLE effects (x); CREATE TABLE transitions (y);");
	assert_refused(fx, EINVAL, "not a burstmeter store");
	assert_int_equal(raw_int(fx->db, "SELECT count(*) FROM notes"), 1);
}

/* Schema version 1 as the first burstmeter wrote it: frozen here, never from store.c. */
#define V1_STATES "('queued', 'running', 'throttled', 'frozen', 'succeeded', 'failed', " \
		  "'cancelled', 'killed', 'deadline_exceeded')"
#define V1_FINALS "('succeeded', 'failed', 'cancelled', 'killed', 'deadline_exceeded')"
#define V1_LOG "INSERT INTO transitions (tenant, id, state, at_ms)" \
	       " VALUES (NEW.tenant, NEW.id, NEW.state, "
static const char v1_schema[] =
	"CREATE TABLE effects (tenant TEXT NOT NULL, id TEXT NOT NULL,"
	" tool TEXT NOT NULL CHECK (tool <> ''),"
	" state TEXT NOT NULL CHECK (state IN " V1_STATES "),"
	" priority INTEGER NOT NULL CHECK (priority BETWEEN 1 AND 10),"
	" created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL,"
	" cgroup TEXT NOT NULL DEFAULT '',"
	" pid INTEGER NOT NULL DEFAULT 0 CHECK (pid >= 0), pid_start INTEGER NOT NULL DEFAULT 0,"
	" request TEXT NOT NULL CHECK (json_valid(request)),"
	" outcome TEXT CHECK (outcome IS NULL OR json_valid(outcome)),"
	" PRIMARY KEY (tenant, id)) STRICT;"
	"CREATE TABLE transitions (seq INTEGER PRIMARY KEY, tenant TEXT NOT NULL, id TEXT NOT NULL,"
	" state TEXT NOT NULL CHECK (state IN " V1_STATES "), at_ms INTEGER NOT NULL,"
	" FOREIGN KEY (tenant, id) REFERENCES effects (tenant, id) ON DELETE CASCADE) STRICT;"
	"CREATE INDEX transitions_by_effect ON transitions (tenant, id, seq);"
	"CREATE INDEX effects_by_created ON effects (created_ms DESC, id);"
	"CREATE INDEX effects_by_tenant ON effects (tenant, created_ms DESC, id);"
	"CREATE INDEX effects_by_state ON effects (state, created_ms DESC, id);"
	"CREATE INDEX effects_by_tenant_state ON effects (tenant, state, created_ms DESC, id);"
	"CREATE TRIGGER effects_first AFTER INSERT ON effects BEGIN " V1_LOG "NEW.created_ms); END;"
	"CREATE TRIGGER effects_moved AFTER UPDATE OF state ON effects"
	" WHEN NEW.state <> OLD.state BEGIN " V1_LOG "NEW.updated_ms); END;"
	"CREATE TRIGGER effects_final BEFORE UPDATE ON effects WHEN OLD.state IN " V1_FINALS
	" BEGIN SELECT RAISE(ABORT, 'the effect has ended'); END;"
	"PRAGMA application_id = 1651340148;"
	"PRAGMA user_version = 1;"
	"INSERT INTO effects (tenant, id, tool, state, priority, created_ms, updated_ms, request)"
	" VALUES ('acme', 'old', 'pytest', 'queued', 3, 100, 100, '{}');"
	"UPDATE effects SET state = 'running', updated_ms = 200;";

static void test_store_migrates_v1(void **state)
{
	struct fx *fx = *state;
	unsigned int n;
	struct seen s;

	assert_int_equal(mkdir(fx->dir, 0700), 0);
	raw_exec(fx->db, v1_schema);
	assert_int_equal(raw_int(fx->db, "SELECT count(*) FROM sqlite_schema"
					 " WHERE name = 'effects_recent'"), 0);
	fx->st = bm_store__open(fx->dir, fx->err, sizeof(fx->err));
	if (!fx->st)
		fail_msg("open v1: %s", fx->err);
	assert_int_equal(raw_int(fx->db, "PRAGMA user_version"), BM_STORE_SCHEMA_VERSION);
	assert_int_equal(raw_int(fx->db, "SELECT count(*) FROM sqlite_schema WHERE type = 'index'"
					 " AND name = 'effects_recent'"), 1);
	/* who an older agent's effect ran as is not known: -1, never "root" */
	assert_int_equal(raw_int(fx->db, "SELECT uid FROM effects WHERE id = 'old'"), -1);
	/* the data came along, history included, and works with the new index */
	assert_int_equal(transitions(fx->st, "acme", "old", &s), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.state[1], BM_ST_RUNNING);
	assert_int_equal(finish(fx->st, "acme", "old", "pids_ceiling", BM_ST_KILLED, 300), 0);
	assert_int_equal(bm_store__recent(fx->st, "acme", "pytest", "pids_ceiling", 300, &n), 0);
	assert_int_equal(n, 1);
	reopen(fx);	/* now current: opens without migrating */
	assert_int_equal(state_of(fx->st, "acme", "old"), BM_ST_KILLED);
}

static void test_store_failed_migration_changes_nothing(void **state)
{
	struct fx *fx = *state;

	assert_int_equal(mkdir(fx->dir, 0700), 0);
	raw_exec(fx->db, v1_schema);
	/* something already holds the name v2's index needs: step 1 -> 2 fails */
	raw_exec(fx->db, "CREATE TABLE effects_recent (x INTEGER)");
	assert_refused(fx, EIO, "migration failed");
	assert_int_equal(raw_int(fx->db, "PRAGMA user_version"), 1);
	assert_int_equal(raw_int(fx->db, "SELECT count(*) FROM sqlite_schema WHERE type = 'index'"
					 " AND name = 'effects_recent'"), 0);
	assert_int_equal(raw_int(fx->db, "SELECT count(*) FROM effects"), 1);
}

/* Agents racing to create the same store: one creates it, the others find it made. */
static void test_store_concurrent_first_open(void **state)
{
	struct fx *fx = *state;
	struct seen s;
	pid_t pid[8];
	int i, status;

	for (i = 0; i < 8; i++) {
		pid[i] = fork();
		assert_true(pid[i] >= 0);
		if (!pid[i]) {
			struct bm_store *st = bm_store__open(fx->dir, NULL, 0);
			char id[16];

			snprintf(id, sizeof(id), "tc-%d", i);
			add_or_exit(st, id);
			bm_store__free(st);
			_exit(0);
		}
	}
	for (i = 0; i < 8; i++) {
		assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	fx->st = bm_store__open(fx->dir, fx->err, sizeof(fx->err));
	assert_non_null(fx->st);
	assert_int_equal(list(fx->st, "acme", -1, UINT_MAX, &s), 0);
	assert_int_equal(s.n, 8);
	assert_int_equal(raw_int(fx->db, "PRAGMA user_version"), BM_STORE_SCHEMA_VERSION);
}

static void note_key(const char *tenant, const char *id, void *ctx)
{
	char *seen = ctx;

	strcat(seen, tenant);
	strcat(seen, "/");
	strcat(seen, id);
	strcat(seen, " ");
}

/* Retention: ended effects go by age and beyond a count, live ones never; transitions with them. */
static void test_store_expire_by_age_and_count(void **state)
{
	struct fx *fx = *state;
	char seen[256] = "";
	char id[16];
	int i;

	for (i = 0; i < 6; i++) {
		snprintf(id, sizeof(id), "e%d", i);
		add(fx->st, "acme", id, "make", 100 + i);
		/* e0..e4 end at 1000, 2000, ...; e5 stays queued */
		if (i < 5)
			assert_int_equal(finish(fx->st, "acme", id, "completed", BM_ST_SUCCEEDED,
						1000 * (i + 1)), 0);
	}
	/* older than 2500: e0, e1 */
	assert_int_equal(bm_store__expire(fx->st, 2500, 100, 100, note_key, seen), 2);
	assert_non_null(strstr(seen, "acme/e0 "));
	assert_non_null(strstr(seen, "acme/e1 "));
	assert_int_equal(state_of(fx->st, "acme", "e2"), BM_ST_SUCCEEDED);
	/* keep the 2 newest ended (e3, e4): e2 goes; e5 is live and stays */
	seen[0] = '\0';
	assert_int_equal(bm_store__expire(fx->st, 0, 2, 100, note_key, seen), 1);
	assert_string_equal(seen, "acme/e2 ");
	assert_int_equal(state_of(fx->st, "acme", "e3"), BM_ST_SUCCEEDED);
	assert_int_equal(state_of(fx->st, "acme", "e5"), BM_ST_QUEUED);
	assert_int_equal(raw_int(fx->db, "SELECT count(*) FROM transitions WHERE id IN"
					 " ('e0', 'e1', 'e2')"), 0);
	/* nothing more to do */
	assert_int_equal(bm_store__expire(fx->st, 0, 2, 100, NULL, NULL), 0);
	assert_int_equal(bm_store__expire(fx->st, 0, 2, 0, NULL, NULL), -EINVAL);
}

/* A uid per tenant: given once, for good, never to two tenants. */
static void test_store_tenant_uids(void **state)
{
	struct fx *fx = *state;
	int64_t uid = 0, max = 0;

	assert_int_equal(bm_store__tenant_uid(fx->st, "acme", &uid), -ENOENT);
	assert_int_equal(bm_store__tenant_uid_max(fx->st, 900000, 965535, &max), 0);
	assert_int_equal(max, -1);
	assert_int_equal(bm_store__tenant_uid_put(fx->st, "acme", 900000), 0);
	assert_int_equal(bm_store__tenant_uid_put(fx->st, "globex", 900000), -EEXIST);
	assert_int_equal(bm_store__tenant_uid_put(fx->st, "acme", 900001), -EEXIST);
	assert_int_equal(bm_store__tenant_uid_put(fx->st, "globex", 900001), 0);
	assert_int_equal(bm_store__tenant_uid(fx->st, "acme", &uid), 0);
	assert_int_equal(uid, 900000);
	assert_int_equal(bm_store__tenant_uid_max(fx->st, 900000, 965535, &max), 0);
	assert_int_equal(max, 900001);
	reopen(fx);
	assert_int_equal(bm_store__tenant_uid(fx->st, "globex", &uid), 0);
	assert_int_equal(uid, 900001);
}

static void test_store_two_connections(void **state)
{
	struct fx *fx = *state;
	struct bm_store *other = bm_store__open(fx->dir, fx->err, sizeof(fx->err));
	struct seen s;

	/* the CLI reading while the agent writes: each sees the other's commits */
	assert_non_null(other);
	add(fx->st, "acme", "tc-1", "pytest", 100);
	assert_int_equal(state_of(other, "acme", "tc-1"), BM_ST_QUEUED);
	assert_int_equal(bm_store__transition(other, "acme", "tc-1", BM_ST_RUNNING, 200), 0);
	assert_int_equal(transitions(fx->st, "acme", "tc-1", &s), 0);
	assert_int_equal(s.n, 2);
	bm_store__free(other);
	bm_store__free(NULL);
}

/*
 * Checkpoints run on the store's own thread: 3,000 effects write ~27,000 pages to
 * the WAL, ~110 MB were it never checkpointed (the hook replaces SQLite's own
 * autocheckpoint). Written back to back, the thread never catches up, so the
 * writer completes one itself at 4,000 pages: the WAL stays within a few thousand
 * (8,000 allows for a slow disk, whose fsyncs hold the thread longer).
 * Nothing is lost on the way: every row is there after a reopen.
 */
static void test_store_checkpoints_off_the_writer(void **state)
{
	struct fx *fx = *state;
	char wal[PATH_MAX + 8], id[32];
	struct stat sb;
	int i;

	assert_int_equal(bm_store__checkpoints(fx->st), 0);
	for (i = 0; i < 3000; i++) {
		snprintf(id, sizeof(id), "tc-%d", i);
		add(fx->st, "acme", id, "pytest", 100 + i);
	}
	assert_true(bm_store__checkpoints(fx->st) >= 2);
	snprintf(wal, sizeof(wal), "%s-wal", fx->db);
	assert_int_equal(stat(wal, &sb), 0);
	assert_true(sb.st_size < 8000 * (4096 + 24));
	bm_store__free(fx->st);
	fx->st = bm_store__open(fx->dir, fx->err, sizeof(fx->err));
	assert_non_null(fx->st);
	assert_int_equal(state_of(fx->st, "acme", "tc-0"), BM_ST_QUEUED);
	assert_int_equal(state_of(fx->st, "acme", "tc-2999"), BM_ST_QUEUED);
	assert_int_equal(bm_store__checkpoints(fx->st), 0);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup_open, fx_teardown)
#define T_BARE(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_store_state_names),
		T(test_store_creates_private_files),
		T(test_store_insert_get_round_trip),
		T(test_store_insert_rejects_bad_rows),
		T(test_store_duplicates_and_tenants),
		T(test_store_transitions_in_order),
		T(test_store_final_states_are_sticky),
		T(test_store_finish_and_recent),
		T(test_store_keeps_the_timeline),
		T(test_store_set_runtime),
		T(test_store_list_order_filters_limit),
		T(test_store_list_callback_may_use_the_store),
		T(test_store_persists_across_reopen),
		T(test_store_survives_a_crashed_writer),
		T_BARE(test_store_refuses_garbage),
		T(test_store_refuses_a_truncated_store),
		T(test_store_refuses_a_newer_schema),
		T_BARE(test_store_refuses_a_foreign_database),
		T_BARE(test_store_migrates_v1),
		T_BARE(test_store_failed_migration_changes_nothing),
		T_BARE(test_store_concurrent_first_open),
		T(test_store_expire_by_age_and_count),
		T(test_store_tenant_uids),
		T(test_store_two_connections),
		T(test_store_checkpoints_off_the_writer),
	};

	return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
