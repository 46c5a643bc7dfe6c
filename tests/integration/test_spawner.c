// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/agent/spawner.c through the library: real shims, a real cgroup, /bin/true.
 * The agent and its spawner talk over one socket both ways; the agent sends
 * launches while the spawner says which shims started and ended. When
 * thousands of effects end together while the agent is still sending, each
 * side's sends fill the socket; if the spawner then waits to be heard and
 * stops reading, both wait for ever (seen at 3,000 sleepers in `make bench`).
 * Every cgroup, shim and file made here is removed, failure or not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cgroup.h"
#include "base/common.h"
#include "effect/exec.h"
#include "agent/spawner.h"

#include "integ.h"

/* Far past what the socket holds either way (~200 messages each) */
#define N_LAUNCH 800
/* One at a time: the old spawner lost ~2 % of these ends (bm-shim exec'd) */
#define N_SEQ 400
#define SEND_TIMEOUT_S 20
#define READ_TIMEOUT_MS 30000

struct sfx {
	struct bm_spawner *sp;
	struct bm_cgroup *cg;
	char dir[64];
	uint64_t shim_id[N_LAUNCH + 1];	/* by tag */
	bool exited[N_LAUNCH + 1];
};

static char parent[PATH_MAX];
static char shim_exe[PATH_MAX];	/* bm-shim beside $BM_BIN, as the agent finds it; "": none */

static void status_path(const struct sfx *f, int tag, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%d", f->dir, tag);
}

static int teardown(void **state)
{
	struct sfx *f = *state;
	char path[128];
	int i, ret = 0;

	if (!f)
		return 0;
	/* the socket closed, the spawner exits; shims left would end with the cgroup */
	bm_spawner__free(f->sp);
	if (f->cg) {
		if (bm_cgroup__populated(f->cg) > 0 && !bm_cgroup__kill(f->cg))
			bm_cgroup__wait_empty(f->cg, 5000);
		if (bm_cgroup__remove(f->cg))
			print_error("cannot remove %s\n", f->cg->path);
		bm_cgroup__free(f->cg);
	}
	if (f->dir[0]) {
		for (i = 1; i <= N_LAUNCH; i++) {
			status_path(f, i, path, sizeof(path));
			unlink(path);
			/* and the shim's own, beside it (BM_SHIM_PID_SUFFIX) */
			strncat(path, BM_SHIM_PID_SUFFIX, sizeof(path) - strlen(path) - 1);
			unlink(path);
		}
		if (rmdir(f->dir)) {
			print_error("cannot remove %s: %s\n", f->dir, strerror(errno));
			ret = -1;
		}
	}
	free(f);
	*state = NULL;
	return ret;
}

/* The fixture in *state (teardown() undoes it): a status dir, and the cgroup bmtest.PID.SUFFIX. */
static struct sfx *fixture(void **state, const char *suffix)
{
	struct sfx *f = *state = calloc(1, sizeof(*f));
	char name[64];

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/bmtest-spawner.XXXXXX");
	if (!mkdtemp(f->dir)) {
		f->dir[0] = '\0';
		fail_msg("mkdtemp: %s", strerror(errno));
	}
	snprintf(name, sizeof(name), "bmtest.%d.%s", (int)getpid(), suffix);
	f->cg = bm_cgroup__create(parent, name);
	if (!f->cg)
		fail_msg("cannot create cgroup %s/%s: %s", parent, name, strerror(errno));
	return f;
}

/* An end m of one of launches 1..n: marked once, after its answer; its launch. */
static int mark_end(struct sfx *f, const struct bm_spawner_msg *m, int n)
{
	int i;

	for (i = 1; i <= n && f->shim_id[i] != m->shim_id; i++)
		;
	if (!m->shim_id || i > n)
		fail_msg("shim %llu said to end before its launch was answered", (unsigned long long)m->shim_id);
	if (f->exited[i])
		fail_msg("launch %d's shim said to end twice", i);
	f->exited[i] = true;
	return i;
}

/*
 * N_LAUNCH launches sent before a single message is read, as an agent busy
 * with a burst of POSTs does, while the first shims already end. Every send
 * must go through (the spawner keeps reading while its own messages wait),
 * then every launch is answered once, started, and said to end once, after
 * its answer, with exit status 0 told (on the cgroup they share here).
 */
static void test_spawner_never_blocks_the_agent(void **state)
{
	struct timeval tv = { .tv_sec = SEND_TIMEOUT_S };
	char *argv[] = { "/bin/true", NULL }, path[128];
	int i, ret, replies = 0, exits = 0, st;
	struct bm_spawner_msg m;
	struct pollfd pfd;
	struct sfx *f;
	bool on_cg;

	f = fixture(state, "spawner");
	f->sp = bm_spawner__start(NULL);
	if (!f->sp)
		fail_msg("bm_spawner__start: %s", strerror(errno));
	pfd = (struct pollfd){ .fd = bm_spawner__fd(f->sp), .events = POLLIN };
	assert_int_equal(setsockopt(pfd.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)), 0);

	for (i = 1; i <= N_LAUNCH; i++) {
		status_path(f, i, path, sizeof(path));
		ret = bm_spawner__send(f->sp, (uint64_t)i, f->cg->dirfd, NULL, 0, argv, NULL, path);
		if (ret == -EAGAIN)
			fail_msg("launch %d of %d waited %d s to be sent: the spawner stopped reading "
				 "while its own messages were unread", i, N_LAUNCH, SEND_TIMEOUT_S);
		if (ret)
			fail_msg("launch %d: %s", i, strerror(-ret));
	}

	while (replies < N_LAUNCH || exits < N_LAUNCH) {
		ret = bm_spawner__next(f->sp, &m);
		if (ret < 0)
			fail_msg("the spawner is gone (%s) after %d answers, %d ends", strerror(-ret), replies,
				 exits);
		if (!ret) {
			if (poll(&pfd, 1, READ_TIMEOUT_MS) == 0)
				fail_msg("nothing said for %d s after %d answers, %d ends of %d", READ_TIMEOUT_MS / 1000,
					 replies, exits, N_LAUNCH);
			continue;
		}
		if (m.exited) {
			mark_end(f, &m, N_LAUNCH);
			exits++;
			continue;
		}
		if (m.tag < 1 || m.tag > N_LAUNCH || f->shim_id[m.tag])
			fail_msg("answer for tag %llu: unknown or twice", (unsigned long long)m.tag);
		if (m.ret || !m.shim_id || m.effect_pid <= 0)
			fail_msg("launch %llu: ret %d, shim id %llu, pid %d", (unsigned long long)m.tag, m.ret,
				 (unsigned long long)m.shim_id, (int)m.effect_pid);
		f->shim_id[m.tag] = m.shim_id;
		replies++;
	}
	for (i = 1; i <= N_LAUNCH; i++) {
		status_path(f, i, path, sizeof(path));
		ret = bm_effect_shim_status(f->cg->dirfd, path, &st, &on_cg);
		if (ret || st)
			fail_msg("launch %d: status file %s, wait status %d", i, ret ? strerror(-ret) : "ok",
				 ret ? -1 : st);
	}
	assert_int_equal(bm_cgroup__populated(f->cg), 0);
}

/* The next message within READ_TIMEOUT_MS, or a failure that says what was awaited. */
static void next_msg(struct sfx *f, struct bm_spawner_msg *m, const char *what, int i)
{
	struct pollfd pfd = { .fd = bm_spawner__fd(f->sp), .events = POLLIN };
	int ret;

	while (!(ret = bm_spawner__next(f->sp, m)))
		if (poll(&pfd, 1, READ_TIMEOUT_MS) == 0)
			fail_msg("launch %d: %s never told in %d s", i, what, READ_TIMEOUT_MS / 1000);
	if (ret < 0)
		fail_msg("launch %d: the spawner is gone (%s)", i, strerror(-ret));
}

/* Launch i of argv, then its answer and its end, in that order. */
static void launch_one(struct sfx *f, int i, char *argv[])
{
	struct bm_spawner_msg m;
	char path[128];
	int ret;

	status_path(f, i, path, sizeof(path));
	ret = bm_spawner__send(f->sp, (uint64_t)i, f->cg->dirfd, NULL, 0, argv, NULL, path);
	if (ret)
		fail_msg("launch %d: %s", i, strerror(-ret));
	next_msg(f, &m, "its start", i);
	if (m.exited || m.tag != (uint64_t)i || m.ret || !m.shim_id)
		fail_msg("launch %d: first word %s, tag %llu, ret %d, shim id %llu", i,
			 m.exited ? "an end" : "an answer", (unsigned long long)m.tag, m.ret,
			 (unsigned long long)m.shim_id);
	f->shim_id[i] = m.shim_id;
	next_msg(f, &m, "its shim's end", i);
	if (!m.exited || m.shim_id != f->shim_id[i])
		fail_msg("launch %d: second word %s for shim %llu, not the end of shim %llu", i,
			 m.exited ? "an end" : "an answer", (unsigned long long)m.shim_id,
			 (unsigned long long)f->shim_id[i]);
}

/*
 * One launch of /bin/true at a time, each answered and then said to end
 * before the next. A shim whose command ends at once can end before the
 * spawner has made the next ready shim; the spawner used to take that end
 * for its ready shim's and say nothing, and the agent waited for ever on
 * ~2 % of quick commands (`bm-agentc rate 300`: 4 to 6 never ended).
 */
static void test_spawner_tells_every_end(void **state)
{
	char *argv[] = { "/bin/true", NULL };
	cpu_set_t one, all;
	struct sfx *f;
	int i, err;

	f = fixture(state, "spawner-seq");
	/*
	 * The spawner and its shims on one CPU: a shim's report and its end
	 * then often come before the spawner runs again, as on a busy node.
	 */
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu() > 0 ? sched_getcpu() : 0, &one);
	assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	f->sp = bm_spawner__start(shim_exe[0] ? shim_exe : NULL);
	err = errno;
	sched_setaffinity(0, sizeof(all), &all);
	if (!f->sp)
		fail_msg("bm_spawner__start: %s", strerror(err));
	for (i = 1; i <= N_SEQ; i++)
		launch_one(f, i, argv);
}

/* /proc/PID/stat's comm and ppid; false if it is gone. */
static bool stat_of(const char *pid, char *comm, size_t len, int *ppid)
{
	char path[300], buf[512], *p;
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	r = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (r <= 0)
		return false;
	buf[r] = '\0';
	p = strrchr(buf, ')');
	if (!p || !strchr(buf, '(') || sscanf(p, ") %*c %d", ppid) != 1)
		return false;
	*p = '\0';
	snprintf(comm, len, "%s", strchr(buf, '(') + 1);
	return true;
}

/* parent's children, zombies too (pids into pids, at most n; their names into comms). */
static int children_of(pid_t parent, pid_t *pids, int n, char *comms, size_t len)
{
	char comm[64];
	struct dirent *de;
	int found = 0, ppid;
	size_t used = 0;
	DIR *d = opendir("/proc");

	comms[0] = '\0';
	while (d && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9' || !stat_of(de->d_name, comm, sizeof(comm), &ppid) ||
		    ppid != parent)
			continue;
		if (found < n)
			pids[found] = atoi(de->d_name);
		found++;
		if (used < len)
			used += (size_t)snprintf(comms + used, len - used, "%s%s", used ? ", " : "", comm);
	}
	if (d)
		closedir(d);
	return found;
}

static int children_of_ours(pid_t *pids, int n, char *comms, size_t len)
{
	return children_of(getpid(), pids, n, comms, len);
}

/* Is there a bm-init whose parent's parent is spawner (the ready shim's warm init)? */
static bool warm_init_below(pid_t spawner)
{
	char comm[64], parent[32];
	struct dirent *de;
	int ppid, gp;
	bool yes = false;
	DIR *d = opendir("/proc");

	while (!yes && d && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9' || !stat_of(de->d_name, comm, sizeof(comm), &ppid) ||
		    strcmp(comm, "bm-init"))
			continue;
		snprintf(parent, sizeof(parent), "%d", ppid);
		yes = stat_of(parent, comm, sizeof(comm), &gp) && gp == spawner;
	}
	if (d)
		closedir(d);
	return yes;
}

/*
 * N_REV shims at once, whose commands end in the reverse of their order
 * (sleep N_REV - i steps): the spawner reaps each by its pidfd as it ends
 * (no wait for any child, which walks them all), so every end is told
 * once, after its answer, however the ends and the shims' slots interleave;
 * and nothing of the spawner's is left a zombie.
 */
#define N_REV 24

static void test_spawner_reaps_each_as_it_ends(void **state)
{
	char path[128], secs[N_REV + 1][16], *argv[3];
	int i, n, st, ret, replies = 0, exits = 0, last_end = N_REV + 1, reversed = 0;
	bool on_cg;
	char comms[256];
	pid_t pids[4];
	struct bm_spawner_msg m;
	struct sfx *f;

	f = fixture(state, "spawner-rev");
	f->sp = bm_spawner__start(shim_exe[0] ? shim_exe : NULL);
	if (!f->sp)
		fail_msg("bm_spawner__start: %s", strerror(errno));
	for (i = 1; i <= N_REV; i++) {
		snprintf(secs[i], sizeof(secs[i]), "%.2f", 0.5 + 0.05 * (N_REV - i));
		argv[0] = "/bin/sleep";
		argv[1] = secs[i];
		argv[2] = NULL;
		status_path(f, i, path, sizeof(path));
		ret = bm_spawner__send(f->sp, (uint64_t)i, f->cg->dirfd, NULL, 0, argv, NULL, path);
		if (ret)
			fail_msg("launch %d: %s", i, strerror(-ret));
	}
	while (replies < N_REV || exits < N_REV) {
		next_msg(f, &m, "an answer or an end", replies + exits);
		if (!m.exited) {
			if (m.tag < 1 || m.tag > N_REV || f->shim_id[m.tag] || m.ret || !m.shim_id)
				fail_msg("answer for tag %llu: unknown, twice or failed (%d)",
					 (unsigned long long)m.tag, m.ret);
			f->shim_id[m.tag] = m.shim_id;
			replies++;
			continue;
		}
		i = mark_end(f, &m, N_REV);
		exits++;
		reversed += i < last_end;
		last_end = i;
	}
	integ_note("%d of %d ends came after a later launch's", reversed, N_REV);
	/* the commands' order, give or take the spawner's pace: most ends come last-launched first */
	assert_true(reversed >= N_REV / 2);
	for (i = 1; i <= N_REV; i++) {
		status_path(f, i, path, sizeof(path));
		ret = bm_effect_shim_status(f->cg->dirfd, path, &st, &on_cg);
		if (ret || !WIFEXITED(st) || WEXITSTATUS(st))
			fail_msg("launch %d: status %s, wait status %d", i, ret ? strerror(-ret) : "ok", st);
		/* on the cgroup (theirs is one here: the last told), not in a file of a shared directory */
		if (!on_cg)
			fail_msg("launch %d: its status was told in a file, not on its cgroup", i);
	}
	/* every shim reaped as it ended: below the spawner, its ready shim at most */
	assert_int_equal(children_of_ours(pids, 4, comms, sizeof(comms)), 1);
	n = children_of(pids[0], pids + 1, 3, comms, sizeof(comms));
	if (n > 1)
		fail_msg("%d children of the spawner left after every end was told", n);
}

/*
 * A ready shim that cannot be exec'd (its binary gone since the agent
 * started): the spawner sees the child's error, reaps it, and forks the
 * ready shim instead; the launch is answered and ends as any other.
 */
static void test_spawner_exec_fails_forks(void **state)
{
	char *argv[] = { "/bin/true", NULL };
	struct sfx *f;

	f = fixture(state, "spawner-noexe");
	f->sp = bm_spawner__start("/nonexistent/bm-shim");
	if (!f->sp)
		fail_msg("bm_spawner__start: %s", strerror(errno));
	launch_one(f, 1, argv);
}

/*
 * The agent's clean stop (bm_spawner__free()) leaves nothing of its own
 * behind: the spawner waits for its ready shim, which waits for the init
 * it made ahead. They used to be left to end on their own: killed by the
 * spawner's death and orphaned, under load the init could still be there
 * a second later (test_intent_traceparent: "left behind: process
 * (bm-init)"). As a subreaper, we would be handed whatever is left.
 */
static void test_spawner_stop_leaves_nothing(void **state)
{
	pid_t pids[16], spawner = 0;
	char comms[512];
	int i, n, t, round;

	*state = calloc(1, sizeof(struct sfx));
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	for (round = 0; round < 3; round++) {
		struct sfx *f = *state;

		f->sp = bm_spawner__start(shim_exe[0] ? shim_exe : NULL);
		if (!f->sp)
			fail_msg("bm_spawner__start: %s", strerror(errno));
		/* the spawner is our only child; its ready shim makes its init ahead, at once */
		assert_int_equal(children_of_ours(pids, 16, comms, sizeof(comms)), 1);
		spawner = pids[0];
		for (t = 0; t < 1000 && !warm_init_below(spawner); t++)
			usleep(10000);
		if (t == 1000)
			fail_msg("no ready shim with its init below the spawner %d after 10 s", (int)spawner);
		bm_spawner__free(f->sp);
		f->sp = NULL;
		/* at once: nothing is left to be handed to us, not even a zombie */
		n = children_of_ours(pids, 16, comms, sizeof(comms));
		for (i = 0; i < n && i < 16; i++) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
		}
		if (n)
			fail_msg("round %d: %d process(es) of the stopped spawner left: %s", round, n, comms);
	}
	prctl(PR_SET_CHILD_SUBREAPER, 0);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_spawner_never_blocks_the_agent, teardown),
		cmocka_unit_test_teardown(test_spawner_tells_every_end, teardown),
		cmocka_unit_test_teardown(test_spawner_reaps_each_as_it_ends, teardown),
		cmocka_unit_test_teardown(test_spawner_exec_fails_forks, teardown),
		cmocka_unit_test_teardown(test_spawner_stop_leaves_nothing, teardown),
	};
	const char *bin = getenv("BM_BIN") && *getenv("BM_BIN") ? getenv("BM_BIN") : "build/burstmeter";
	char *slash;
	struct bm_cgroup_env env;
	size_t n;
	int rc = integ_gate("test_spawner"), err;

	if (rc)
		return rc;
	err = bm_cgroup_env_detect("/proc/self/mountinfo", "/proc/self/cgroup", &env);
	if (!err)
		err = bm_cgroup_env_self_dir(&env, parent, sizeof(parent));
	if (err) {
		fprintf(stderr, "test_spawner: cannot find our cgroup v2 directory: %s\n", strerror(-err));
		return 1;
	}
	/* the agent's way (user/agent/agent.c): bm-shim beside the binary, else forks of the spawner */
	snprintf(shim_exe, sizeof(shim_exe), "%s", bin);
	slash = strrchr(shim_exe, '/');
	snprintf(slash ? slash + 1 : shim_exe, sizeof(shim_exe) - (size_t)(slash ? slash + 1 - shim_exe : 0), "%s",
		 BM_SHIM_ARGV0);
	if (access(shim_exe, X_OK)) {
		fprintf(stderr, "test_spawner: %s is missing: run make first\n", shim_exe);
		return 1;
	}
	n = integ_filter(tests, sizeof(tests) / sizeof(tests[0]));
	return _cmocka_run_group_tests("spawner", tests, n, NULL, NULL);
}
