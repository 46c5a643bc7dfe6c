// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An effect's end: its outcome (with retry advice and backoff), the store,
 * /metrics, its readers' last lines, its cgroups removed; then it is freed.
 * And the states it goes through on the way, as the store and readers see.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/backoff.h"
#include "agent/export.h"
#include "agent/finish.h"
#include "agent/index.h"
#include "agent/sample.h"
#include "agent/timeline.h"
#include "agent/watch.h"
#include "base/common.h"
#include "effect/exec.h"
#include "effect/sandbox_exec.h"

/* Failures of one tool on one wall within this long back off its next submissions. */
#define BACKOFF_WINDOW_MS (10 * 60 * 1000LL)
#define BACKOFF_MAX_MS (10 * 60 * 1000ULL)

static int64_t wall_ms(void)
{
	return (int64_t)(bm_wall_ns() / BM_NSEC_PER_MSEC);
}

void ag_set_state(struct bm_agent *a, struct ag_effect *e, enum bm_state st)
{
	json_t *line;

	if (e->state == st)
		return;
	e->state = st;
	if (!bm_state_final(st))
		(void)bm_store__transition(a->store, e->tenant, e->req.id, st, wall_ms());
	line = json_pack("{s:s, s:s, s:I}", "type", "state", "state", bm_state_name(st), "at_ms",
			 (json_int_t)wall_ms());
	ag_emit(a, e, line);
}

/* The ladder's current step, as a lifecycle state. */
void ag_track_ladder(struct bm_agent *a, struct ag_effect *e)
{
	enum bm_state st = BM_ST_RUNNING;
	json_t *line;

	if (e->sup.act.frozen || (e->sup.act.duty && e->sup.act.duty_frozen && !e->sup.act.throttled))
		st = BM_ST_FROZEN;
	else if (e->sup.act.throttled || e->sup.act.capped)
		st = BM_ST_THROTTLED;
	if (e->state == BM_ST_RUNNING || e->state == BM_ST_THROTTLED || e->state == BM_ST_FROZEN)
		ag_set_state(a, e, st);
	while (e->actions_sent < e->sup.out.n_actions) {
		const struct bm_action *x = &e->sup.out.actions[e->actions_sent++];

		line = json_pack("{s:s, s:f, s:s, s:s, s:f, s:f}", "type", "action", "at_ms", x->at_ms, "action",
				 x->action, "reason", x->reason, "observed", x->observed, "threshold", x->threshold);
		ag_emit(a, e, line);
		bm_export__action(a->exp, e->tenant, e->tool, x->action, x->reason);
	}
}

/* Mirror of report.c's exit status: which final state an outcome is. */
static enum bm_state final_state(const struct bm_outcome *o)
{
	switch (o->reason) {
	case BM_REASON_COMPLETED:
		return BM_ST_SUCCEEDED;
	case BM_REASON_CANCELLED:
		return BM_ST_CANCELLED;
	case BM_REASON_DEADLINE:
		return BM_ST_DEADLINE_EXCEEDED;
	case BM_REASON_MEMORY_CEILING:
	case BM_REASON_PIDS_CEILING:
	case BM_REASON_CPU_CEILING:
	case BM_REASON_NET_CEILING:
	case BM_REASON_STORAGE_CEILING:
	case BM_REASON_IO_CEILING:
		return BM_ST_KILLED;
	default:
		return BM_ST_FAILED;
	}
}

/* Out of the registry, every index and its readers' sight. */
static void detach(struct bm_agent *a, struct ag_effect *e)
{
	unsigned int i = e->eff_i;

	/* its place, not a scan: 10,000 ending at once scanned 10,000 each */
	if (i && i <= a->n_eff && a->eff[i - 1] == e) {
		a->eff[i - 1] = a->eff[--a->n_eff];
		a->eff[i - 1]->eff_i = i;
		e->eff_i = 0;
	}
	ag_index_del(a, e);
	if (e->readers && a->hooks.gone)
		a->hooks.gone(a->hooks.ctx, e);
	e->readers = NULL;
}

static void release(struct ag_effect *e)
{
	bm_request_free(&e->req);
	bm_series_free(&e->series);
	free(e->unstored);
	free(e->unstored_tl);
	free(e->status_path);
	free(e->pod);
	free(e);
}

void ag_free_effect(struct bm_agent *a, struct ag_effect *e)
{
	detach(a, e);
	release(e);
}

/*
 * What says the effect still runs to an agent that restarts: its status
 * files and its cgroup. Gone only once its outcome is stored, so that a
 * kill -9 in between leaves it to be adopted, not lost. 0, or -EBUSY: the
 * cgroup is still held (a task stuck in the kernel).
 */
static void forget_status(struct ag_effect *e)
{
	char pid_file[PATH_MAX + 8];

	/* told on its cgroup, as its pid was: no file to remove (an unlink locks the directory) */
	if (!e->status_path || e->status_on_cgroup)
		return;
	snprintf(pid_file, sizeof(pid_file), "%s" BM_SHIM_PID_SUFFIX, e->status_path);
	(void)unlink(pid_file);
	(void)unlink(e->status_path);
}

static int let_go(struct ag_effect *e)
{
	int err;

	forget_status(e);
	/* never waited for here: a task stuck in the kernel would hold the loop */
	err = bm_sup__release_try(&e->sup);
	if (err)
		bm_warn("the cgroup of %s/%s is still held (a task stuck in the kernel?): it is "
			"removed once it lets go", e->tenant, e->req.id);
	return err;
}

/* Ended with something left to do: kept in a->remains (no memory: left to the next agent's sweep). */
static void keep(struct bm_agent *a, struct ag_effect *e)
{
	struct ag_effect **p = realloc(a->remains, (a->n_remains + 1) * sizeof(*p));

	if (!p) {
		bm_warn("no memory to keep %s/%s: its cgroup is left to the next agent", e->tenant,
			e->req.id);
		release(e);
		return;
	}
	a->remains = p;
	e->remains_since_ns = bm_now_ns();
	p[a->n_remains++] = e;
}

static void remain(struct bm_agent *a, struct ag_effect *e)
{
	detach(a, e);
	keep(a, e);
}

/* One more try at what is left of e: true once all is done. */
static bool tend(struct bm_agent *a, struct ag_effect *e)
{
	int err;

	if (e->unstored) {
		err = bm_store__finish(a->store, e->tenant, e->req.id, e->unstored, e->unstored_tl,
				       e->unstored_tl_len, e->unstored_state, e->unstored_ms);
		if (err && err != -EINVAL)
			return false;
		bm_info("stored the outcome of %s/%s after %.1f s", e->tenant, e->req.id,
			(double)(bm_now_ns() - e->remains_since_ns) / 1e9);
		free(e->unstored);
		free(e->unstored_tl);
		e->unstored = NULL;
		e->unstored_tl = NULL;
		forget_status(e);
	}
	if (e->sup.cg) {
		if (bm_sup__release_try(&e->sup) == -EBUSY)
			return false;
		bm_info("removed the cgroup of %s/%s after %.1f s", e->tenant, e->req.id,
			(double)(bm_now_ns() - e->remains_since_ns) / 1e9);
	}
	return true;
}

void ag_tend_remains(struct bm_agent *a)
{
	unsigned int i;

	for (i = a->n_remains; i-- > 0;) {
		if (!tend(a, a->remains[i]))
			continue;
		release(a->remains[i]);
		a->remains[i] = a->remains[--a->n_remains];
	}
}

const struct ag_effect *ag_remains_find(const struct bm_agent *a, const char *tenant,
					const char *id)
{
	unsigned int i;

	for (i = 0; i < a->n_remains; i++)
		if (!strcmp(a->remains[i]->tenant, tenant) && !strcmp(a->remains[i]->req.id, id))
			return a->remains[i];
	return NULL;
}

void ag_free_remains(struct bm_agent *a)
{
	unsigned int i;

	for (i = 0; i < a->n_remains; i++)
		release(a->remains[i]);
	free(a->remains);
	a->remains = NULL;
	a->n_remains = 0;
	free(a->pending);	/* empty: every batch ends stored (ag_finish_end()) */
	a->pending = NULL;
	a->cap_pending = 0;
}

/* Its entries out of the egress filter's allow-list (the effect has ended). */
static void egress_forget(struct bm_agent *a, struct ag_effect *e)
{
	if (!e->egress_cgid)
		return;
	bm_sandbox_egress_forget(a->egress, &e->req.sandbox, e->egress_cgid);
	e->egress_cgid = 0;
}

/* e's outcome into the open batch (owned by it from now on): 0, or -ENOMEM (store it now). */
static int pend(struct bm_agent *a, struct ag_effect *e, char *text, void *tl, size_t tl_len,
		enum bm_state st)
{
	struct ag_pending *p = a->pending;

	if (a->n_pending == a->cap_pending) {
		unsigned int cap = a->cap_pending ? 2 * a->cap_pending : AG_SLICE;

		p = realloc(a->pending, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		a->pending = p;
		a->cap_pending = cap;
	}
	p[a->n_pending++] = (struct ag_pending){ .e = e, .text = text, .tl = tl, .tl_len = tl_len,
						 .st = st, .ms = wall_ms() };
	return 0;
}

void ag_finish_begin(struct bm_agent *a)
{
	a->batch = true;
}

static int store_pending(struct bm_agent *a, const struct ag_pending *p)
{
	return bm_store__finish(a->store, p->e->tenant, p->e->req.id, p->text, p->tl, p->tl_len,
				p->st, p->ms);
}

void ag_finish_store(struct bm_agent *a)
{
	unsigned int i, n = a->n_pending;
	struct ag_pending *p;
	int err = n > 1 ? bm_store__begin(a->store) : -EALREADY;
	bool txn = !err;

	if (!n)
		return;
	a->n_pending = 0;
	/* one transaction for them all; if any of it fails, each again on its own, as without one */
	for (i = 0; txn && i < n; i++)
		if (store_pending(a, &a->pending[i]))
			break;
	if (txn && (i < n || bm_store__commit(a->store))) {
		bm_store__rollback(a->store);
		txn = false;
	}
	for (i = 0; i < n; i++) {
		p = &a->pending[i];
		err = txn ? 0 : store_pending(a, p);
		if (!err) {
			free(p->text);
			free(p->tl);
			if (!p->kept && let_go(p->e))
				keep(a, p->e);
			else if (!p->kept)
				release(p->e);
			continue;
		}
		/* a full disk: kept like any outcome the store refused (ag_tend_remains()) */
		bm_err("failed to store the outcome of %s/%s: %s; kept, and stored again every tick",
		       p->e->tenant, p->e->req.id, strerror(-err));
		p->e->unstored = p->text;
		p->e->unstored_tl = p->tl;
		p->e->unstored_tl_len = p->tl_len;
		p->e->unstored_state = p->st;
		p->e->unstored_ms = p->ms;
		if (!p->kept)
			keep(a, p->e);
	}
}

void ag_finish_end(struct bm_agent *a)
{
	a->batch = false;
	ag_finish_store(a);
}

/* Before the outcome is stored: back off a tool that keeps hitting the same wall. */
static void retry_backoff(struct bm_agent *a, struct ag_effect *e)
{
	struct bm_outcome *o = &e->sup.out;
	unsigned int n = 0;
	uint64_t after;
	size_t len;

	bm_outcome_retry(o);
	if (o->reason == BM_REASON_COMPLETED || o->reason == BM_REASON_CANCELLED)
		return;
	/* the count includes the failures of this batch (stored by now, in order) */
	ag_finish_store(a);
	if (bm_store__recent(a->store, e->tenant, e->tool, bm_reason_name(o->reason),
			     (int64_t)(bm_wall_ns() / BM_NSEC_PER_MSEC) - BACKOFF_WINDOW_MS, &n) || !n)
		return;
	/* 2 s, 4 s, 8 s ... for each earlier failure of this tool on this wall, up to 10 min */
	after = 1000ULL << (n < 9 ? n : 9);
	after = after > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : after;
	o->retry_after_ms = after > o->retry_after_ms ? after : o->retry_after_ms;
	len = strlen(o->advice);
	snprintf(o->advice + len, sizeof(o->advice) - len, "%s%u earlier %s effect%s hit %s in the last 10 min: wait %.0f s",
		 len ? "; " : "", n, e->tool, n == 1 ? "" : "s", bm_reason_name(o->reason), after / 1000.0);
	if (ag_backoff_set(a, e->tenant, e->tool, bm_now_ns() + after * BM_NSEC_PER_MSEC))
		bm_warn("no memory to back %s/%s off: its next submissions do not wait", e->tenant,
			e->tool);
}

/* The ended effect's windows, peaks and reason into /metrics. */
static void export_outcome(struct bm_agent *a, struct ag_effect *e)
{
	const struct bm_summary *s = e->sup.out.sum;
	int d;

	bm_export__ended(a->exp, e->tenant, e->tool, bm_reason_name(e->sup.out.reason));
	for (d = 0; s && d < BM_DIM__MAX; d++) {
		bm_export__windows(a->exp, e->tenant, e->tool, d, s->hist[d], s->window_ns, (double)s->wsum[d]);
		bm_export__peak(a->exp, e->tenant, e->tool, d, bm_window_display(d, (double)s->peak[d], s->window_ns),
				e->req.id);
	}
}

/*
 * Before the first effect of a tick to read its cpu.stat: its parent's, which
 * flushes the kernel's pending CPU times of every child at once. Each child
 * read alone unlinks itself from its parent's list of children updated since
 * the last flush, a singly linked list walked from the head (css_rstat_flush()
 * in kernel/cgroup/rstat.c), and the first to exit are the last in it: when
 * 10,000 effects ended together their reads were O(n^2), a quarter of the
 * agent's CPU in the drain. After the flush a child's walk only passes the
 * siblings updated since, a tick's worth.
 */
static void flush_stats(struct bm_agent *a, struct ag_effect *e)
{
	uint64_t *at = e->pod ? &e->pod->stats_flushed_ns : &a->stats_flushed_ns, now = bm_now_ns();
	char path[PATH_MAX + 16], buf[1024];

	if (!e->sup.cg || now - *at < AG_TICK_NS)
		return;
	*at = now;
	snprintf(path, sizeof(path), "%s/cpu.stat", e->pod ? e->pod->dir : a->parent);
	(void)bm_read_file(AT_FDCWD, path, buf, sizeof(buf));
}

/* The effect is done: outcome, store, metrics, streams; then forget it. */
void ag_finish_effect(struct bm_agent *a, struct ag_effect *e)
{
	struct bm_outcome *o = &e->sup.out;
	bool pending;
	enum bm_state st;
	size_t tl_len = 0;
	void *tl = NULL;
	char *text;
	json_t *j;
	int err;

	ag_sample(a, e);
	flush_stats(a, e);
	bm_sup__finish(&e->sup);
	egress_forget(a, e);
	ag_track_ladder(a, e);
	retry_backoff(a, e);
	if (e->pod) {
		o->pod_uid = e->pod->uid;
		o->pod_container = e->pod->container;
		o->pod_qos = e->pod->qos;
	}
	j = bm_outcome_json(o);
	text = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
	if (text && ag_timeline_pack(&e->series, &tl, &tl_len)) {
		free(text);
		text = NULL;
	}
	st = final_state(o);
	pending = text && a->batch && !pend(a, e, text, tl, tl_len, st);
	err = pending ? 0 : text ? bm_store__finish(a->store, e->tenant, e->req.id, text, tl, tl_len, st,
						    wall_ms()) : -ENOMEM;
	if (err && text) {
		/* a full disk: nothing is lost, it is stored once there is room (ag_tend_remains()) */
		bm_err("failed to store the outcome of %s/%s: %s; kept, and stored again every tick",
		       e->tenant, e->req.id, strerror(-err));
		e->unstored = text;
		e->unstored_tl = tl;
		e->unstored_tl_len = tl_len;
		e->unstored_state = st;
		e->unstored_ms = wall_ms();
		text = NULL;
		tl = NULL;
	} else if (err) {
		bm_err("failed to store the outcome of %s/%s: %s", e->tenant, e->req.id, strerror(-err));
	}
	export_outcome(a, e);
	ag_set_state(a, e, st);
	if (j && e->readers) {
		/* what was stored, as an object: only an effect someone streams needs one */
		if (bm_series_len(&e->series))
			json_object_set_new(j, "timeline", ag_timeline_json(&e->series));
		ag_emit(a, e, json_pack("{s:s, s:O}", "type", "outcome", "outcome", j));
	}
	json_decref(j);
	if (!pending) {
		free(text);
		free(tl);
	}
	ag_unwatch(a, e->shim.pidfd);
	if (e->shim.pidfd >= 0)
		close(e->shim.pidfd);
	e->shim.pidfd = -1;
	/* in a batch, once it is stored (ag_finish_store()); an unstored one keeps them too */
	err = pending || e->unstored ? 0 : let_go(e);
	/* its tenant's count too: that one frees its share of tenant_max_running */
	ag_stopped(a, e);
	if (err || e->unstored) {
		remain(a, e);
		if (pending)
			a->pending[a->n_pending - 1].kept = true;
	} else if (pending) {
		detach(a, e);	/* let go once its outcome is stored (ag_finish_end()) */
	} else {
		ag_free_effect(a, e);
	}
	/* what freed room may start once this event is handled (agent.c) */
	a->resched = true;
}
