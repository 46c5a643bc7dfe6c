// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bm-agentc: effects through the agent's API, timed from C (user/cli/client.c,
 * the client the front ends use), so that the client's own cost is what a
 * real caller pays and not an interpreter's.
 *
 *   bm-agentc SOCK launch ROUNDS PREFIX STAMP_BIN STAMP_FILE
 *     Each round, in a rotating order, one of each:
 *       0 fork/exec /bin/true, waitpid                      (ns to the reap)
 *       1 POST /bin/true, then its event stream until the outcome line
 *       2 fork/exec STAMP_BIN stamp FILE                    (ns to the stamp)
 *       3 POST STAMP_BIN stamp FILE                         (ns to the stamp)
 *     One untimed warm-up of each first. Prints: KIND ROUND NS STATUS,
 *     and for 1 and 3 also "post ROUND NS" (the POST's own round trip).
 *   bm-agentc SOCK rate N PREFIX
 *     POST N effects of /bin/true one after the other as fast as the agent
 *     answers, then poll /v1/healthz until nothing runs or waits. Prints
 *     "rate N POSTED_NS DONE_NS OK REFUSED".
 *   bm-agentc SOCK submit N PREFIX TARGET_NS HOLD_MS SPIKE_EVERY SLEEPER SPIKE DEADLINE_NS [JOBS]
 *     POST up to N effects, until DEADLINE (CLOCK_MONOTONIC ns): SLEEPER MS,
 *     with MS = max(HOLD_MS, TARGET - now), so that they all overlap until
 *     about TARGET; every SPIKE_EVERY-th is SPIKE 2 100 COUNT instead (2 ms
 *     on one core every 100 ms, as long). JOBS clients (default 1) post at
 *     once, as an orchestrator with several calls in flight would. Prints
 *     "submit TRIED POSTED_NS OK REFUSED" and "progress K NS" each 100.
 * Ids are PREFIX-KIND-N. Exit status 0, or 1 when the agent could not be
 * reached or a request was malformed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/client.h"
#include "base/common.h"

#define CALL_MS 30000

static const char *sock;

/* CLOCK_MONOTONIC, signed: the figures are differences */
static long long now_ns(void)
{
	return (long long)bm_now_ns();
}

static int fork_exec(char *const argv[])
{
	int st, fd;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		fd = open("/dev/null", O_RDWR);
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static long long read_stamp(const char *path)
{
	char buf[64];

	return bm_read_file(AT_FDCWD, path, buf, sizeof(buf)) > 0 ? atoll(buf) : 0;
}

static int post(const char *id, json_t *argv, long long *rtt)
{
	json_t *req = json_pack("{s:s, s:o}", "id", id, "argv", argv), *out = NULL;
	long long t0 = now_ns();
	int st = bm_client_call(sock, "POST", "/v1/effects", req, &out, CALL_MS);

	if (rtt)
		*rtt = now_ns() - t0;
	json_decref(req);
	json_decref(out);
	return st;
}

struct wait_ctx {
	const char *state;
};

static int on_line(json_t *line, void *ctx)
{
	struct wait_ctx *w = ctx;
	const char *type = json_string_value(json_object_get(line, "type"));

	if (type && !strcmp(type, "outcome")) {
		json_t *o = json_object_get(line, "outcome");
		const char *r = json_string_value(json_object_get(json_object_get(o, "termination"), "reason"));

		w->state = r && !strcmp(r, "completed") ? "ok" : "bad";
		return 1;
	}
	return 0;
}

/* Follow the effect's events until its outcome: 0 completed, 1 anything else, -1 no outcome. */
static int wait_outcome(const char *id)
{
	char path[256];
	struct wait_ctx w = { NULL };

	snprintf(path, sizeof(path), "/v1/effects/%s/events", id);
	bm_client_stream(sock, path, on_line, &w);
	return !w.state ? -1 : !strcmp(w.state, "ok") ? 0 : 1;
}

static int launch(int rounds, const char *prefix, const char *stamp_bin, const char *stamp_file)
{
	char *const tru[] = { "/bin/true", NULL };
	char *const stamp[] = { (char *)stamp_bin, "stamp", (char *)stamp_file, NULL };
	char id[128];
	long long t0, ns, rtt;
	int r, i, k, st, n = 0;

	for (r = -1; r < rounds; r++) {
		for (i = 0; i < 4; i++) {
			k = r < 0 ? i : (i + r) % 4;
			unlink(stamp_file);
			rtt = -1;
			t0 = now_ns();
			switch (k) {
			case 0:
				st = fork_exec(tru);
				ns = now_ns() - t0;
				break;
			case 2:
				st = fork_exec(stamp);
				ns = read_stamp(stamp_file) - t0;
				break;
			default:
				snprintf(id, sizeof(id), "%s-%d-%d", prefix, k, n++);
				st = post(id, k == 1 ? json_pack("[s]", "/bin/true")
						     : json_pack("[s, s, s]", stamp_bin, "stamp", stamp_file), &rtt);
				if (st != 201 && st != 202) {
					fprintf(stderr, "bm-agentc: POST %s: %d\n", id, st);
					return 1;
				}
				st = wait_outcome(id);
				ns = k == 1 ? now_ns() - t0 : read_stamp(stamp_file) - t0;
				break;
			}
			if (r < 0)
				continue;
			printf("%d %d %lld %d\n", k, r, ns, st);
			if (rtt >= 0)
				printf("post %d %lld\n", r, rtt);
		}
	}
	return 0;
}

/* Nothing runs and nothing waits (or timeout_s passed): 0, else -1. */
static int wait_idle(int timeout_s)
{
	struct timespec ms5 = { 0, 5000000 };
	long long end = now_ns() + timeout_s * 1000000000LL;
	json_t *h = NULL;
	int st;

	while (now_ns() < end) {
		st = bm_client_call(sock, "GET", "/v1/healthz", NULL, &h, CALL_MS);
		if (st == 200 && !json_integer_value(json_object_get(h, "running")) &&
		    !json_integer_value(json_object_get(h, "queued"))) {
			json_decref(h);
			return 0;
		}
		json_decref(h);
		h = NULL;
		nanosleep(&ms5, NULL);
	}
	return -1;
}

static int rate(int n, const char *prefix)
{
	long long t0 = now_ns(), posted, done;
	char id[128];
	int i, st, ok = 0, bad = 0;

	for (i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "%s-r-%d", prefix, i);
		st = post(id, json_pack("[s]", "/bin/true"), NULL);
		if (st == 201 || st == 202)
			ok++;
		else
			bad++;
	}
	posted = now_ns() - t0;
	if (wait_idle(300))
		fprintf(stderr, "bm-agentc: effects still running after 300 s\n");
	done = now_ns() - t0;
	printf("rate %d %lld %lld %d %d\n", n, posted, done, ok, bad);
	return 0;
}

/* What the submitting clients share: the next index, and the counts. */
struct tally {
	int next, done, ok, bad;
};

static void submit_one(struct tally *t, int n, const char *prefix, long long t0, long long target,
		       long long hold_ms, int spike_every, const char *sleeper, const char *spike, long long deadline)
{
	char id[128], a1[32], a2[32];
	long long ms;
	json_t *argv;
	int i, st, d;

	while (now_ns() < deadline && (i = __atomic_fetch_add(&t->next, 1, __ATOMIC_SEQ_CST)) < n) {
		ms = (target - now_ns()) / 1000000LL;
		ms = ms < hold_ms ? hold_ms : ms;
		snprintf(id, sizeof(id), "%s-s-%d", prefix, i);
		if (spike_every && i % spike_every == spike_every - 1) {
			snprintf(a1, sizeof(a1), "%lld", ms / 100 > 0 ? ms / 100 : 1);
			argv = json_pack("[s, s, s, s]", spike, "2", "100", a1);
		} else {
			snprintf(a2, sizeof(a2), "%lld", ms);
			argv = json_pack("[s, s]", sleeper, a2);
		}
		st = post(id, argv, NULL);
		if (st == 201 || st == 202)
			__atomic_fetch_add(&t->ok, 1, __ATOMIC_SEQ_CST);
		else if (__atomic_fetch_add(&t->bad, 1, __ATOMIC_SEQ_CST) < 5)
			fprintf(stderr, "bm-agentc: POST %s: %d\n", id, st);
		d = __atomic_add_fetch(&t->done, 1, __ATOMIC_SEQ_CST);
		if (d % 100 == 0)
			printf("progress %d %lld\n", d, now_ns() - t0);
	}
}

static int submit(int n, const char *prefix, long long target, long long hold_ms, int spike_every,
		  const char *sleeper, const char *spike, long long deadline, int jobs)
{
	struct tally *t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	long long t0 = now_ns();
	int j;

	if (t == MAP_FAILED)
		return 1;
	jobs = jobs < 1 ? 1 : jobs > 64 ? 64 : jobs;
	for (j = 0; j < jobs; j++) {
		pid_t pid = fork();

		if (pid < 0)
			break;
		if (!pid) {
			submit_one(t, n, prefix, t0, target, hold_ms, spike_every, sleeper, spike, deadline);
			_exit(0);
		}
	}
	while (wait(NULL) > 0)
		;
	printf("submit %d %lld %d %d\n", t->done, now_ns() - t0, t->ok, t->bad);
	return 0;
}

int main(int argc, char **argv)
{
	int ret = 2;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3)
		goto usage;
	sock = argv[1];
	if (!strcmp(argv[2], "launch") && argc == 7)
		ret = launch(atoi(argv[3]), argv[4], argv[5], argv[6]);
	else if (!strcmp(argv[2], "rate") && argc == 5)
		ret = rate(atoi(argv[3]), argv[4]);
	else if (!strcmp(argv[2], "submit") && (argc == 11 || argc == 12))
		ret = submit(atoi(argv[3]), argv[4], atoll(argv[5]), atoll(argv[6]), atoi(argv[7]), argv[8], argv[9],
			     atoll(argv[10]), argc == 12 ? atoi(argv[11]) : 1);
	else
		goto usage;
	return ret;
usage:
	fprintf(stderr, "usage: bm-agentc SOCK launch ROUNDS PREFIX STAMP_BIN STAMP_FILE\n"
			"       bm-agentc SOCK rate N PREFIX\n"
			"       bm-agentc SOCK submit N PREFIX TARGET_NS HOLD_MS SPIKE_EVERY SLEEPER SPIKE DEADLINE_NS [JOBS]\n");
	return 2;
}
