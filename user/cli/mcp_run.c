// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A run_command, in a thread of its own. Through the agent: our child,
 * paused, is attached to a fresh effect (POST /v1/effects, mode "attach"),
 * released, read to its end, its wait status handed back (POST .../exit),
 * and the outcome taken from the agent; its events feed the progress
 * notifications. Standalone: `burstmeter run --standalone` is the child and
 * writes the outcome to a file of ours. Either way the output comes from
 * the pipes and the answer goes out from this thread.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "agent/request_intent.h"
#include "base/common.h"
#include "cli/client.h"
#include "cli/mcp_child.h"
#include "cli/mcp_progress.h"
#include "cli/mcp_result.h"
#include "cli/mcp_run.h"

#define CALL_MS 10000
#define OUTCOME_WAIT_MS 30000
#define DRAIN_MS 2000		/* output of what outlived the command, after its end */
#define MAX_CALLS 64
#define KEEP_OUTCOMES 64

struct run {
	struct run *next;
	struct bm_mcp_req req;
	const struct bm_mcp_cfg *cfg;
	char sock[PATH_MAX];
	int cancel_fd;			/* eventfd: a cancel was asked for */
	bool silent;			/* its request was cancelled: nothing more is sent */
	bool cancel_sent;
	struct bm_mcp_child child;
	struct bm_mcp_out out, err;
	struct bm_mcp_progress prog;
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reg_cond = PTHREAD_COND_INITIALIZER;
static struct run *runs;
static unsigned int n_runs;
static json_t *kept;		/* standalone outcomes by id, oldest first */

static void ask_cancel(struct run *r)
{
	uint64_t one = 1;

	if (write(r->cancel_fd, &one, sizeof(one)) < 0)
		bm_dbg("failed to signal a cancel: %s", strerror(errno));
}

void bm_mcp_run_cancel_request(const json_t *rpc_id)
{
	struct run *r;

	pthread_mutex_lock(&reg_lock);
	for (r = runs; r; r = r->next) {
		if (json_equal(r->req.rpc_id, (json_t *)rpc_id)) {
			r->silent = true;
			ask_cancel(r);
		}
	}
	pthread_mutex_unlock(&reg_lock);
}

int bm_mcp_run_cancel_effect(const char *effect_id)
{
	int ret = -ENOENT;
	struct run *r;

	pthread_mutex_lock(&reg_lock);
	for (r = runs; r; r = r->next) {
		if (!r->sock[0] && !strcmp(r->req.id, effect_id)) {
			ask_cancel(r);
			ret = 0;
		}
	}
	pthread_mutex_unlock(&reg_lock);
	return ret;
}

json_t *bm_mcp_run_outcome(const char *effect_id)
{
	json_t *o;

	pthread_mutex_lock(&reg_lock);
	o = json_incref(json_object_get(kept, effect_id));
	pthread_mutex_unlock(&reg_lock);
	return o;
}

static void keep_outcome(const char *id, const json_t *o)
{
	const char *first;

	pthread_mutex_lock(&reg_lock);
	if (!kept)
		kept = json_object();
	if (json_object_size(kept) >= KEEP_OUTCOMES && (first = json_object_iter_key(json_object_iter(kept))))
		json_object_del(kept, first);
	json_object_set(kept, id, (json_t *)o);
	pthread_mutex_unlock(&reg_lock);
}

static bool silent(struct run *r)
{
	bool s;

	pthread_mutex_lock(&reg_lock);
	s = r->silent;
	pthread_mutex_unlock(&reg_lock);
	return s;
}

/* A cancel asked for (by request or by cancel_effect): stop the command once. */
static void on_cancel(struct run *r)
{
	char path[256];
	uint64_t v;
	json_t *j = NULL;

	if (read(r->cancel_fd, &v, sizeof(v)) < 0 || r->cancel_sent)
		return;
	r->cancel_sent = true;
	if (!r->sock[0]) {
		/* `burstmeter run` passes it on and calls the effect cancelled */
		kill(r->child.pid, SIGTERM);
		return;
	}
	snprintf(path, sizeof(path), "/v1/effects/%s/cancel", r->req.id);
	bm_client_call(r->sock, "POST", path, NULL, &j, CALL_MS);
	json_decref(j);
}

/* Read the child's output until it exits, cancelling and reporting progress on the way. */
static void pump(struct run *r)
{
	while (!bm_mcp_child__exited(&r->child)) {
		if (bm_mcp_child__pump(&r->child, &r->out, &r->err, r->cancel_fd, bm_mcp_progress_wait_ms(&r->prog)))
			on_cancel(r);
		if (!silent(r))
			bm_mcp_progress_tick(&r->prog);
	}
}

/* What outlives the command may still write: read until the pipes close, for a while. */
static void drain(struct run *r)
{
	uint64_t end = bm_now_ns() + DRAIN_MS * BM_NSEC_PER_MSEC;

	while ((r->child.out_fd >= 0 || r->child.err_fd >= 0) && bm_now_ns() < end)
		bm_mcp_child__pump(&r->child, &r->out, &r->err, -1, 100);
}

static const char *state_of(const json_t *eff)
{
	const char *s = json_string_value(json_object_get(eff, "state"));

	return s ? s : "";
}

static bool final(const char *s)
{
	return !strcmp(s, "succeeded") || !strcmp(s, "failed") || !strcmp(s, "cancelled") ||
	       !strcmp(s, "killed") || !strcmp(s, "deadline_exceeded");
}

/* GET the effect until it has started (started) or ended with its outcome; NULL after timeout_ms. */
static json_t *wait_effect(struct run *r, bool started, int timeout_ms)
{
	uint64_t end = bm_now_ns() + (uint64_t)timeout_ms * BM_NSEC_PER_MSEC;
	char path[256];
	json_t *eff = NULL;
	const char *s;

	snprintf(path, sizeof(path), "/v1/effects/%s", r->req.id);
	while (bm_now_ns() < end) {
		if (bm_client_call(r->sock, "GET", path, NULL, &eff, CALL_MS) == 200) {
			s = state_of(eff);
			if ((started && strcmp(s, "queued")) ||
			    (final(s) && json_is_object(json_object_get(eff, "outcome"))))
				return eff;
		}
		json_decref(eff);
		eff = NULL;
		/* a queued effect can be cancelled before it starts */
		if (bm_mcp_child__pump(&r->child, &r->out, &r->err, r->cancel_fd, 50))
			on_cancel(r);
	}
	return NULL;
}

static json_t *attach_request(const struct run *r)
{
	json_t *q = json_pack("{s:s, s:s, s:i, s:{s:s}, s:O}", "id", r->req.id, "mode", "attach", "pid",
			      (int)r->child.pid, "labels", "via", "mcp", "sandbox", r->req.sandbox);
	json_t *argv = json_array();
	size_t i;

	if (q && r->req.intent && *r->req.intent)
		json_object_set_new(q, "intent", json_string(r->req.intent));
	/* what it runs: its tool kind (rules, backoff, /metrics) and the outcome's command */
	for (i = 0; argv && r->req.argv[i]; i++)
		json_array_append_new(argv, json_string(r->req.argv[i]));
	if (q)
		json_object_set_new(q, "argv", argv);
	else
		json_decref(argv);
	if (q && r->req.tool[0])
		json_object_set_new(q, "tool", json_string(r->req.tool));
	if (q && r->req.expect.set)
		json_object_set_new(q, "expect", bm_expect_request_json(&r->req.expect));
	if (q && r->req.traceparent[0])
		json_object_set_new(q, "traceparent", json_string(r->req.traceparent));
	return q;
}

/* The agent said no (or did not answer): why, in a line. */
static json_t *refused(struct run *r, int st, const json_t *eff, unsigned int retry)
{
	const char *msg = json_string_value(json_object_get(eff, "error"));
	char why[PATH_MAX + 512];

	if (st < 0)
		snprintf(why, sizeof(why), "the agent at %s did not answer: %s", r->sock, strerror(-st));
	else if (st == 200)
		snprintf(why, sizeof(why), "this tenant has an effect %s already (%s): ids are not reused; leave id out",
			 r->req.id, state_of(eff));
	else if (st == 429 && msg && strstr(msg, "backing off"))
		snprintf(why, sizeof(why), "the agent is backing off: this command keeps hitting the same ceiling; "
			 "change the call (less parallelism, a smaller working set, higher limits) before retrying");
	else
		snprintf(why, sizeof(why), "the agent answered %d: %s", st, msg ? msg : "no reason given");
	return bm_mcp_result_refused(&r->req, "agent", st < 0 ? 0 : st, why, json_object_get(eff, "fields"), retry);
}

static json_t *via_agent(struct run *r)
{
	char path[PATH_MAX], exit_path[256];
	unsigned int retry = 0;
	json_t *q, *eff = NULL, *j = NULL, *res;
	int st, err;

	bm_mcp_child_resolve(r->req.argv[0], r->req.envp, path, sizeof(path));
	err = bm_mcp_child__start(&r->child, path, r->req.argv, r->req.envp, r->req.cwd, r->req.netns, true);
	if (err)
		return bm_mcp_result_refused(&r->req, "agent", 0, strerror(-err), NULL, 0);
	q = attach_request(r);
	st = bm_client_call_retry(r->sock, "POST", "/v1/effects", q, &eff, CALL_MS, &retry);
	json_decref(q);
	if (st == 202) {
		json_decref(eff);
		bm_mcp_progress_note(&r->prog, "queued by the agent: waiting for room on the node");
		eff = wait_effect(r, true, 24 * 3600 * 1000);
	}
	if ((st != 201 && st != 202) || !eff || (final(state_of(eff)) && !json_object_get(eff, "outcome"))) {
		res = refused(r, st, eff, retry);
		json_decref(eff);
		return res;
	}
	if (final(state_of(eff))) {
		/* it ended before it ran (cancelled while queued, or not attached): its outcome says why */
		res = bm_mcp_result_ran(&r->req, "agent", state_of(eff), json_object_get(eff, "outcome"), &r->out,
					&r->err);
		json_decref(eff);
		return res;
	}
	json_decref(eff);
	eff = NULL;
	bm_mcp_progress_follow(&r->prog, r->sock, r->req.id);
	err = bm_mcp_child__release(&r->child);
	if (err)
		bm_warn("failed to release the command of %s: %s", r->req.id, strerror(-err));
	pump(r);
	snprintf(exit_path, sizeof(exit_path), "/v1/effects/%s/exit", r->req.id);
	q = json_pack("{s:i}", "wait_status", r->child.wait_status);
	bm_client_call(r->sock, "POST", exit_path, q, &j, CALL_MS);
	json_decref(q);
	json_decref(j);
	drain(r);
	eff = wait_effect(r, false, OUTCOME_WAIT_MS);
	bm_mcp_progress_stop(&r->prog);
	if (!eff)
		return bm_mcp_result_refused(&r->req, "agent", 0, "the agent did not report the outcome in time",
					     NULL, 0);
	res = bm_mcp_result_ran(&r->req, "agent", state_of(eff), json_object_get(eff, "outcome"), &r->out, &r->err);
	json_decref(eff);
	return res;
}

/* `burstmeter run --standalone` for this call, its outcome into outcome_path. */
static char **standalone_argv(const struct run *r, const char *outcome_path)
{
	const struct bm_limits *l = &r->req.limits;
	char **v = calloc(32 + 256 + 1, sizeof(*v));
	char num[64];
	size_t n = 0, i;

#define ARG(s) (v[n++] = strdup(s))
	if (!v)
		return NULL;
	ARG(r->cfg->self_exe), ARG("run"), ARG("--standalone"), ARG("-q"), ARG("--id"), ARG(r->req.id);
	ARG("--outcome"), ARG(outcome_path);
	if (r->req.intent && *r->req.intent)
		ARG("--intent"), ARG(r->req.intent);
	if (l->cpu_milli)
		snprintf(num, sizeof(num), "%llum", (unsigned long long)l->cpu_milli), ARG("--cpu"), ARG(num);
	if (l->memory_bytes)
		snprintf(num, sizeof(num), "%llu", (unsigned long long)l->memory_bytes), ARG("--memory"), ARG(num);
	if (l->pids)
		snprintf(num, sizeof(num), "%llu", (unsigned long long)l->pids), ARG("--pids"), ARG(num);
	if (l->timeout_ns)
		snprintf(num, sizeof(num), "%.9f", l->timeout_ns / 1e9), ARG("--timeout"), ARG(num);
	ARG("--");
	for (i = 0; r->req.argv[i]; i++)
		ARG(r->req.argv[i]);
#undef ARG
	for (i = 0; i < n; i++)
		if (!v[i])
			return NULL;	/* leaks on ENOMEM only, and the call fails */
	return v;
}

static json_t *standalone(struct run *r)
{
	char dir[] = "/tmp/bm-mcp.XXXXXX", path[sizeof(dir) + 16], why[512], **argv, *tail;
	json_t *o = NULL, *res;
	bool cut;
	int err;
	size_t i;

	if (geteuid())
		return bm_mcp_result_refused(&r->req, "standalone", 0,
					     "no agent is running and metering standalone needs root: start "
					     "`burstmeter agent`, or run `burstmeter mcp` as root", NULL, 0);
	if (r->req.egress_filter)
		return bm_mcp_result_refused(&r->req, "standalone", 0,
					     "network_policy egress_restricted and egress_allow_list need the agent's "
					     "filter, and no agent is running", NULL, 0);
	if (!mkdtemp(dir))
		return bm_mcp_result_refused(&r->req, "standalone", 0, strerror(errno), NULL, 0);
	snprintf(path, sizeof(path), "%s/outcome.json", dir);
	argv = standalone_argv(r, path);
	err = argv ? bm_mcp_child__start(&r->child, r->cfg->self_exe, argv, r->req.envp, r->req.cwd, r->req.netns,
					 false) : -ENOMEM;
	for (i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
	if (!err) {
		pump(r);
		drain(r);
		o = json_load_file(path, 0, NULL);
	}
	unlink(path);
	rmdir(dir);
	/* what the agent writes in its outcomes, written here for `run`'s: one report, one shape */
	if (o && r->req.expect.set && !json_object_get(o, "expect"))
		json_object_set_new(o, "expect", bm_expect_json(&r->req.expect, o));
	if (o && r->req.traceparent[0] && !json_object_get(o, "trace"))
		json_object_set_new(o, "trace", json_pack("{s:s}", "traceparent", r->req.traceparent));
	if (o) {
		keep_outcome(r->req.id, o);
		res = bm_mcp_result_ran(&r->req, "standalone", "ended", o, &r->out, &r->err);
		json_decref(o);
		return res;
	}
	/* `run` failed before an outcome: its own line is the end of stderr */
	tail = bm_mcp_out__text(&r->err, &cut);
	snprintf(why, sizeof(why), "burstmeter run failed (%s): %s", err ? strerror(-err) : "no outcome",
		 tail ? tail : "");
	free(tail);
	return bm_mcp_result_refused(&r->req, "standalone", 0, why, NULL, 0);
}

static void *run_main(void *arg)
{
	struct run *r = arg, **pp;
	json_t *res = r->sock[0] ? via_agent(r) : standalone(r);

	bm_mcp_progress_stop(&r->prog);
	bm_mcp_child__close(&r->child);
	/* a cancelled request is answered by nothing at all */
	if (!silent(r))
		bm_mcp_result(r->req.rpc_id, res, &r->req.era);
	else
		json_decref(res);
	pthread_mutex_lock(&reg_lock);
	for (pp = &runs; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	n_runs--;
	pthread_cond_broadcast(&reg_cond);
	pthread_mutex_unlock(&reg_lock);
	bm_mcp_progress_free(&r->prog);
	bm_mcp_out__free(&r->out);
	bm_mcp_out__free(&r->err);
	close(r->cancel_fd);
	bm_mcp_req_free(&r->req);
	free(r);
	return NULL;
}

int bm_mcp_run_start(const struct bm_mcp_cfg *cfg, struct bm_mcp_req *req)
{
	const char *sock = bm_mcp_agent_socket(cfg);
	struct run *r = calloc(1, sizeof(*r));
	pthread_attr_t attr;
	pthread_t t;
	int err = -ENOMEM;

	if (!r)
		goto fail;
	r->cancel_fd = -1;
	r->cfg = cfg;
	r->req = *req;
	memset(req, 0, sizeof(*req));
	snprintf(r->sock, sizeof(r->sock), "%s", sock ? sock : "");
	/* the progress first: what fails after it is undone by the same frees */
	if (bm_mcp_progress_init(&r->prog, r->req.progress_token, r->req.limits.timeout_ns) |
	    bm_mcp_out__init(&r->out, r->req.max_output) | bm_mcp_out__init(&r->err, r->req.max_output))
		goto fail;
	r->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->cancel_fd < 0)
		goto fail;
	pthread_mutex_lock(&reg_lock);
	if (n_runs >= MAX_CALLS) {
		pthread_mutex_unlock(&reg_lock);
		err = -EBUSY;
		goto fail;
	}
	r->next = runs;
	runs = r;
	n_runs++;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = -pthread_create(&t, &attr, run_main, r);
	pthread_attr_destroy(&attr);
	if (err) {
		runs = r->next;
		n_runs--;
	}
	pthread_mutex_unlock(&reg_lock);
	if (!err)
		return 0;
fail:
	if (r) {
		bm_mcp_progress_free(&r->prog);
		bm_mcp_out__free(&r->out);
		bm_mcp_out__free(&r->err);
		if (r->cancel_fd >= 0)
			close(r->cancel_fd);
		bm_mcp_req_free(&r->req);
		free(r);
	}
	bm_mcp_req_free(req);
	return err;
}

void bm_mcp_run_shutdown(int timeout_ms)
{
	struct timespec end;
	struct run *r;

	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += timeout_ms / 1000;
	pthread_mutex_lock(&reg_lock);
	for (r = runs; r; r = r->next) {
		r->silent = true;
		ask_cancel(r);
	}
	while (n_runs && pthread_cond_timedwait(&reg_cond, &reg_lock, &end) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&reg_lock);
}
