// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The agent's effects from their submission to their start: admission (a
 * bounded queue shared fairly, tenants' budgets, fair order across tenants
 * and priority within one, the node's own pressure), the start under a shim
 * (or the attach of a caller's process),
 * the spawner's answer, cancellation and an attached effect's exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/admit.h"
#include "agent/backoff.h"
#include "agent/finish.h"
#include "agent/identity.h"
#include "agent/index.h"
#include "agent/intent.h"
#include "agent/shim.h"
#include "agent/spawner.h"
#include "agent/tenant.h"
#include "agent/watch.h"
#include "base/common.h"
#include "effect/egress.h"
#include "effect/sandbox_exec.h"
#include "effect/policy_yaml.h"
#include "effect/trace.h"

int ag_eff_room(struct bm_agent *a)
{
	unsigned int cap = a->cap_eff ? 2 * a->cap_eff : 64;
	struct ag_effect **p;

	if (a->n_eff < a->cap_eff)
		return 0;
	if (cap <= a->cap_eff)
		return -ENOMEM;
	p = realloc(a->eff, (size_t)cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	a->eff = p;
	a->cap_eff = cap;
	return 0;
}

static const char *const default_env[] = {
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/", "LANG=C.UTF-8", NULL,
};

/*
 * Execution options from the request: who it runs as (decided at submit,
 * ag_run_as()), and its sandbox, as `burstmeter run` turns its flags into
 * them (bm_sandbox_exec()). Every launched effect gets PID, mount and
 * cgroup namespaces of its own: it sees no other effect's processes, cannot
 * reach the agent's socket, and writes no cgroup (they are read-only in it).
 */
static void exec_opts(const struct bm_agent *a, struct ag_effect *e, struct bm_exec *x,
		      int log_fd, int null_fd)
{
	const struct bm_sandbox_ctx c = {
		/* an effect inherits nothing of the agent's environment */
		.envp = e->req.env ? e->req.env : (char **)default_env,
		.clean_env = true,
		.cwd = e->req.cwd ? e->req.cwd : "/",
		.stdio = { null_fd, log_fd, log_fd },
		.set_ids = e->uid != 0,
		.uid = e->uid,
		.gid = e->gid,
		.isolate = true,
		.hide = a->cfg.socket,
		.log_max = a->cfg.max_log_bytes,
	};

	bm_sandbox_exec(&e->req.sandbox, &c, x, &e->sup.out.sbx);
}

/* What the kernel says to a launch that asks for what its uid may not have (a cwd, an id). */
static bool refusal(int err)
{
	return err == -EACCES || err == -EPERM || err == -ENOENT || err == -ENOTDIR ||
	       err == -ELOOP || err == -ENAMETOOLONG;
}

/*
 * The command could not even start: it still gets an outcome and a final
 * state, now. exec_errno: exec refused it (126, 127); launch and refused
 * before exec (its cwd not its uid's to enter, ...): the request's failure,
 * failed 125 as run says it; else a step of burstmeter's own (meter_error).
 */
static void start_failed(struct bm_agent *a, struct ag_effect *e, int exec_errno, bool launch,
			 const char *what, int err)
{
	if (exec_errno) {
		bm_outcome_classify(&e->sup.out, 0, false, exec_errno);
		e->sup.exec_errno = exec_errno;
	} else {
		bm_warn("failed to %s for %s/%s: %s", what, e->tenant, e->req.id, strerror(-err));
		bm_sup__never_ran(&e->sup, what, err);
		if (launch && refusal(err)) {
			e->sup.out.reason = BM_REASON_FAILED;
			e->sup.out.exit_code = 125;
			e->sup.out.start_errno = -err;
		}
	}
	/* what is said here stands: the meter's finish must not judge a command that never ran */
	e->sup.not_run = true;
	e->sup.end_ns = e->sup.start_ns = bm_now_ns();
	e->sup.phase = BM_SUP_DONE;
	ag_finish_effect(a, e);
}

static int launch(struct bm_agent *a, struct ag_effect *e)
{
	char log[PATH_MAX], **traced = NULL;
	struct bm_exec x;
	const int *join;
	int n, log_fd, null_fd, ret;
	pid_t pid = 0;

	ret = ag_effect_status(a, e, log);
	if (ret)
		return ret;
	/* where it runs, before anything can: a restart adopts it (shim.c), never runs it twice */
	ret = bm_store__set_runtime(a->store, e->tenant, e->req.id, e->sup.cg->path, 0, 0);
	if (ret)
		return ret;
	bm_fault("launch-stored");
	log_fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	exec_opts(a, e, &x, log_fd, null_fd);
	/* the caller's trace context, for the command's own spans: copied by the launch below */
	if (e->req.traceparent[0] && (traced = bm_trace_env(x.envp, e->req.traceparent)))
		x.envp = traced;
	join = bm_ceilings_join_fds(&e->sup.ceil, &n);
	ret = e->req.traceparent[0] && !traced ? -ENOMEM : -EPIPE;
	if (a->spawner && ret != -ENOMEM) {
		/* the fds went with the request: the answer comes later (ag_launched()) */
		ret = bm_spawner__send(a->spawner, e->seq, e->sup.cg->dirfd, join, n, e->req.argv, &x,
				       e->status_path);
		e->launching = !ret;
		bm_fault("launch-sent");
		if (ret == -EPIPE || ret == -ECONNRESET)
			ag_spawner_gone(a);
	}
	if (!a->spawner && ret != -ENOMEM) {
		ret = bm_effect_shim(e->sup.cg->dirfd, join, n, e->req.argv, &x, e->status_path, &e->shim,
				     &pid);
		e->sup.child.pid = pid;
	}
	if (log_fd >= 0)
		close(log_fd);
	if (null_fd >= 0)
		close(null_fd);
	free(traced);
	return ret;
}

static bool owns(pid_t caller, uid_t uid, pid_t pid);

/* An attach that names its process later (POST .../attach) has this long to, or ends. */
#define ATTACH_WAIT_NS (10 * BM_NSEC_PER_SEC)

/*
 * Attach: move the caller's (paused) process and its v1 twins' membership
 * into the effect; one the caller cloned into the effect's cgroup already
 * is not moved (a move waits for an RCU grace period).
 */
static int attach(struct bm_agent *a, struct ag_effect *e)
{
	char pid[24];
	const int *join;
	int n, i, err = 0;

	snprintf(pid, sizeof(pid), "%d", (int)e->req.attach_pid);
	if (!bm_cgroup_has_pid(a->env.v2_mount, e->sup.cg->path, e->req.attach_pid))
		err = bm_write_file(e->sup.cg->dirfd, "cgroup.procs", pid);
	join = bm_ceilings_join_fds(&e->sup.ceil, &n);
	for (i = 0; !err && i < n; i++)
		if (join[i] >= 0 && write(join[i], pid, strlen(pid)) < 0)
			err = -errno;
	if (err)
		return err;
	/* not our child: its exit is seen, its status is the caller's */
	e->shim.pidfd = (int)syscall(SYS_pidfd_open, e->req.attach_pid, 0);
	e->sup.child.pid = e->req.attach_pid;
	free(e->status_path);
	e->status_path = NULL;
	return e->shim.pidfd < 0 ? -errno : 0;
}

void ag_sup_opts(struct bm_agent *a, const struct ag_effect *e, struct bm_sup_opts *so)
{
	char err[512];

	memset(so, 0, sizeof(*so));
	so->id = e->req.id;
	so->tenant = e->tenant;
	so->intent = e->req.intent;
	so->argv = e->req.argv;
	so->expect = &e->req.expect;
	so->traceparent = e->req.traceparent;
	so->window_ns = e->req.window_ns;
	bm_limits_from_sandbox(&so->limits, &e->req.sandbox);
	so->sandbox = &e->req.sandbox;
	/* its tenant's CPU budget, or the node's pressure, may cap it: a controller to do it with */
	so->cpu_cap = ag_tenant_may_cap(a, e->tenant);
	/* and over its fair share of the CPUs, beside another tenant, it yields */
	so->cpu_yield = a->cfg.fair_cpu_yield;
	/* its /tmp a tmpfs of max_ephemeral_storage (ours; run's for an attach), its workspace */
	bm_sup_places(so, &e->req.sandbox, e->req.cwd ? e->req.cwd : "/");
	so->meter_only = a->cfg.meter_only;
	so->shared_timers = true;
	so->timers_moved = ag_timers_moved;
	so->timers_ctx = (void *)e;
	/* the ladder's repeated looks ride the tick, while a look can still take every window since the last */
	so->look_grid_ns = AG_TICK_NS <= BM_RING / 2 * so->window_ns ? AG_TICK_NS : 0;
	bm_policy_default(&so->policy);
	/* the policy was checked when the agent started; a file changed since falls back */
	if (a->cfg.policy[0] && bm_policy_load_file(a->cfg.policy, e->tenant, e->tool, &so->policy, err, sizeof(err))) {
		bm_warn("policy for %s/%s: %s; using the default", e->tenant, e->req.id, err);
		bm_policy_default(&so->policy);
	}
}

/* Its network policy, where it restricts egress: before anything runs in the cgroup (attached too). */
static int egress(struct bm_agent *a, struct ag_effect *e)
{
	int ret = bm_sandbox_egress(a->egress, &e->req.sandbox, e->sup.cg->dirfd, e->sup.cg->id,
				    &e->sup.out.sbx);

	if (ret > 0)
		e->egress_cgid = e->sup.cg->id;
	return ret < 0 ? ret : 0;
}

/* Its command runs: say so in the store (the shim, or an attached process, by pid and start), watch it. */
static void running(struct bm_agent *a, struct ag_effect *e)
{
	pid_t pid = e->req.mode == BM_REQ_ATTACH ? e->req.attach_pid : e->shim.pid;

	bm_fault("launch-answered");
	(void)bm_store__set_runtime(a->store, e->tenant, e->req.id, e->sup.cg->path, pid > 0 ? pid : 0,
				    pid > 0 ? bm_pid_start(pid) : 0);
	e->state = BM_ST_QUEUED;
	ag_watch_effect(a, e);
	ag_wake(a, e);
	(void)bm_store__transition(a->store, e->tenant, e->req.id, BM_ST_RUNNING, (int64_t)(bm_wall_ns() / BM_NSEC_PER_MSEC));
	e->state = BM_ST_RUNNING;
}

static void start(struct bm_agent *a, struct ag_effect *e)
{
	struct bm_sup_opts so;
	int ret;

	bm_fault("launch-start");
	ag_started(a, e);
	ag_sup_opts(a, e, &so);
	/* a pod's call in the pod's cgroup, beside its containers: the pod's limits hold it */
	ret = bm_sup__start(&e->sup, a->loader, &a->env, e->pod ? e->pod->dir : a->parent, &so);
	if (ret)
		return start_failed(a, e, 0, false, e->sup.failed_step, ret);
	bm_fault("launch-cgroup");
	ag_set_cg(a, e);
	ag_tenant_cap_start(a, e);
	ret = egress(a, e);
	if (ret)
		return start_failed(a, e, 0, false, "filter its egress", ret);
	/* an attach without its pid waits for it (ag_attach()) */
	ret = e->req.mode == BM_REQ_LAUNCH ? launch(a, e) : e->req.attach_pid ? attach(a, e) : 0;
	if (ret)
		return start_failed(a, e, ret > 0 ? ret : 0, true, "start the command", ret);
	if (e->launching)
		return;
	running(a, e);
	if (e->req.mode == BM_REQ_ATTACH && !e->req.attach_pid)
		e->exit_wait_ns = bm_now_ns() + ATTACH_WAIT_NS;
}

int ag_attach(struct bm_agent *a, struct ag_effect *e, pid_t caller, uid_t uid, pid_t pid)
{
	int err;

	if (e->req.mode != BM_REQ_ATTACH || !e->started || !e->sup.cg || e->sup.phase != BM_SUP_RUNNING)
		return -EALREADY;
	if (ag_caller_pid(caller, pid, &pid) || !owns(caller, uid, pid))
		return -EPERM;
	/* the same again (a caller that lost our answer, an agent restarted): done already */
	if (e->req.attach_pid)
		return e->req.attach_pid == pid ? 0 : -EALREADY;
	e->req.attach_pid = pid;
	err = attach(a, e);
	if (err) {
		e->req.attach_pid = 0;
		return err;
	}
	/* it is watched, and its pid kept for an agent that adopts it */
	e->exit_wait_ns = 0;
	ag_watch_effect(a, e);
	(void)bm_store__set_runtime(a->store, e->tenant, e->req.id, e->sup.cg->path, pid, bm_pid_start(pid));
	return 0;
}

void ag_launched(struct bm_agent *a, struct ag_effect *e, const struct bm_spawner_msg *m)
{
	e->launching = false;
	/* they answer from the store, once this is done */
	if (a->hooks.launched)
		a->hooks.launched(a->hooks.ctx, e->seq);
	if (m->ret)
		return start_failed(a, e, m->ret > 0 ? m->ret : 0, true, "start the command", m->ret);
	e->shim.pid = m->shim_pid;
	ag_set_shim_id(a, e, m->shim_id);
	/* its end would not be found (no memory to index it): watched here instead */
	if (!e->shim_id)
		e->shim.pidfd = (int)syscall(SYS_pidfd_open, e->shim.pid, 0);
	e->sup.child.pid = m->effect_pid;
	running(a, e);
	if (e->cancel_pending)
		(void)ag_cancel(a, e);
}

/*
 * Start queued effects while the node has room: the next one is fair
 * admission's choice (agent/fair.h), among the tenants not held (an
 * exhausted budget, the node's pressure, tenant_max_running).
 */
void ag_schedule(struct bm_agent *a)
{
	struct bm_fair_tenant *ft = NULL;
	struct bm_fair_item *it = NULL;
	uint64_t now = bm_now_ns();
	struct ag_effect *e;
	unsigned int i, n, ti;
	long k;

	if (a->scheduling || !a->queue.n || a->running >= a->cfg.max_running || a->stopping ||
	    !ag_node_room(a))
		return;
	a->scheduling = true;
	it = calloc(a->queue.n, sizeof(*it));
	for (i = n = 0; it && i < a->queue.n; i++) {
		e = a->queue.v[i];
		/* its tenant was looked up when it was queued; not found (no memory): it waits */
		if (ag_tenant_of(a, e))
			it[n++] = (struct bm_fair_item){ e->tenant_i - 1, e->req.priority, e->seq };
	}
	ft = calloc(a->n_tenants ? a->n_tenants : 1, sizeof(*ft));
	/* no memory: nothing starts now, the next tick tries again */
	for (i = 0; ft && i < a->n_tenants; i++)
		ag_tenant_fair(a, &a->tenants[i], now, &ft[i]);
	while (ft && it && n && a->running < a->cfg.max_running && !a->stopping &&
	       ag_node_room(a)) {
		k = bm_fair_pick(it, n, ft);
		if (k < 0)
			break;
		ti = it[k].tenant;
		e = ag_find_seq(a, it[k].seq);
		it[k] = it[--n];
		if (!e || e->started || !e->queue_i)
			continue;
		start(a, e);
		/* its tenant's view moves with the start: one more running, held at its max */
		ag_tenant_fair(a, &a->tenants[ti], now, &ft[ti]);
	}
	free(ft);
	free(it);
	a->scheduling = false;
}

/* Is pid the caller's own descendant (and, for a non-root caller, of its uid)? */
static bool owns(pid_t caller, uid_t uid, pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned int depth;
	int ppid, owner;

	for (depth = 0; pid > 1 && depth < 64; depth++) {
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
		if (bm_read_file(AT_FDCWD, path, buf, sizeof(buf)) < 0)
			return false;
		p = strstr(buf, "\nUid:");
		if (!p || sscanf(p + 5, "%d", &owner) != 1 || (uid && (uid_t)owner != uid))
			return false;
		p = strstr(buf, "\nPPid:");
		if (!p || sscanf(p + 6, "%d", &ppid) != 1)
			return false;
		if (ppid == caller)
			return true;
		pid = ppid;
	}
	return false;
}

/* The pod as the store keeps it (a new string), NULL on allocation failure. */
static char *pod_json(const struct ag_pod *pod)
{
	json_t *j = json_pack("{s:s, s:s, s:s, s:s}", "uid", pod->uid, "container", pod->container,
			      "qos", pod->qos, "dir", pod->dir);
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	return text;
}

int ag_pod_from_json(const char *text, struct ag_pod **out)
{
	json_t *j = json_loads(text, 0, NULL);
	const char *uid = json_string_value(json_object_get(j, "uid"));
	const char *cid = json_string_value(json_object_get(j, "container"));
	const char *qos = json_string_value(json_object_get(j, "qos"));
	const char *dir = json_string_value(json_object_get(j, "dir"));
	struct ag_pod *p = uid && cid && qos && dir ? calloc(1, sizeof(*p)) : NULL;

	if (p) {
		snprintf(p->uid, sizeof(p->uid), "%s", uid);
		snprintf(p->container, sizeof(p->container), "%s", cid);
		snprintf(p->qos, sizeof(p->qos), "%s", qos);
		snprintf(p->dir, sizeof(p->dir), "%s", dir);
	}
	json_decref(j);
	*out = p;
	return p ? 0 : -EINVAL;
}

int ag_submit(struct bm_agent *a, struct bm_request *req, const char *tenant, uid_t uid, gid_t gid,
	      pid_t caller, const char *parent, const struct ag_pod *pod, struct ag_effect **out,
	      unsigned int *retry_after_s, const char **budget)
{
	uid_t run_uid = uid;
	gid_t run_gid = gid;
	struct bm_effect_row row = { 0 };
	char own[BM_NAME_MAX + 1], tool[sizeof(req->tool)];
	struct ag_tenant_count *t;
	struct ag_effect *e;
	uint64_t until;
	json_t *canon;
	int err;

	/* tenant and the tool may point into *req, which is taken over (and zeroed) below */
	snprintf(tool, sizeof(tool), "%s", ag_request_tool(req));
	snprintf(own, sizeof(own), "%s", tenant);
	tenant = own;
	*out = ag_find(a, tenant, req->id);
	if (*out)
		return -EEXIST;
	if (!bm_store__get(a->store, tenant, req->id, &row)) {
		bm_effect_row_clear(&row);
		return -EEXIST;
	}
	until = ag_backoff_until(a, tenant, tool);
	if (until) {
		*retry_after_s = (unsigned int)((until - bm_now_ns()) / BM_NSEC_PER_SEC) + 1;
		return -EBUSY;
	}
	/* the pid as the caller numbers it (a pod has its own namespace), as ours */
	if (req->mode == BM_REQ_ATTACH && req->attach_pid &&
	    (ag_caller_pid(caller, req->attach_pid, &req->attach_pid) || !owns(caller, uid, req->attach_pid)))
		return -EPERM;
	/* a pod's tool calls run in the pod, attached; the node launches none for it */
	if (pod && req->mode == BM_REQ_LAUNCH)
		return -EOPNOTSUPP;
	/*
	 * An attached process runs as whoever it is: the caller's own, checked
	 * above, and so it is stored (adoption checks it). Asked to run as
	 * non-root, it is told the uid the agent gives (ag_effect's, "run_as"),
	 * which `burstmeter run` takes at its gate.
	 */
	if (req->mode == BM_REQ_LAUNCH || req->sandbox.run_as_non_root) {
		err = ag_run_as(a, tenant, uid, gid, req->sandbox.run_as_non_root, &run_uid, &run_gid);
		if (err)
			return err == -ENOSPC ? -ENOSPC : -EIO;
	}
	/* its budgets over time, and its share of the queue, before the node's queue */
	t = ag_tenant(a, tenant);
	if (!t)
		return -ENOMEM;
	err = ag_tenant_admit(a, t, retry_after_s, budget);
	if (err)
		return err;
	if (a->queue.n >= a->cfg.max_queued) {
		*retry_after_s = 1;
		return -EAGAIN;
	}
	e = calloc(1, sizeof(*e));
	canon = bm_request_json(req);
	row.request_json = canon ? json_dumps(canon, JSON_COMPACT) : NULL;
	json_decref(canon);
	row.pod_json = pod ? pod_json(pod) : NULL;
	if (e && pod)
		e->pod = malloc(sizeof(*e->pod));
	if (!e || !row.request_json || (pod && (!row.pod_json || !e->pod)) ||
	    ag_eff_room(a) || ag_index_reserve(a)) {
		if (e)
			free(e->pod);
		free(e);
		free(row.request_json);
		free(row.pod_json);
		return -ENOMEM;
	}
	if (pod)
		*e->pod = *pod;
	snprintf(row.id, sizeof(row.id), "%s", req->id);
	snprintf(row.tenant, sizeof(row.tenant), "%s", tenant);
	snprintf(row.tool, sizeof(row.tool), "%s", tool);
	row.state = BM_ST_QUEUED;
	row.priority = req->priority;
	row.uid = req->mode == BM_REQ_LAUNCH ? run_uid : uid;
	row.gid = req->mode == BM_REQ_LAUNCH ? run_gid : gid;
	snprintf(row.parent, sizeof(row.parent), "%s", parent ? parent : "");
	row.created_ms = row.updated_ms = (int64_t)(bm_wall_ns() / BM_NSEC_PER_MSEC);
	err = bm_store__insert(a->store, &row);
	free(row.request_json);
	free(row.pod_json);
	if (err) {
		free(e->pod);
		free(e);
		return err == -EEXIST ? -EEXIST : -EIO;
	}
	bm_sup__init(&e->sup);
	e->shim.pidfd = -1;
	e->req = *req;
	memset(req, 0, sizeof(*req));
	snprintf(e->tenant, sizeof(e->tenant), "%s", tenant);
	snprintf(e->tool, sizeof(e->tool), "%s", tool);
	e->uid = run_uid;
	e->gid = run_gid;
	snprintf(e->parent, sizeof(e->parent), "%s", parent ? parent : "");
	e->seq = ++a->seq;
	e->state = BM_ST_QUEUED;
	e->agent = a;
	e->tenant_i = (unsigned int)(t - a->tenants) + 1;
	ag_tenant_admitted(a, t);
	/* reserved above: cannot fail */
	(void)ag_index_add(a, e);
	ag_queue_add(a, e);
	a->eff[a->n_eff++] = e;
	e->eff_i = a->n_eff;
	ag_schedule(a);
	/* an effect that could not start has ended already: it is in the store, not here */
	*out = ag_find(a, tenant, row.id);
	return 0;
}

void ag_end_unstarted(struct bm_agent *a, struct ag_effect *e, enum bm_reason reason,
		      const char *advice)
{
	struct bm_sup_opts so;

	ag_sup_opts(a, e, &so);
	bm_sup__prepare(&e->sup, a->loader, &so);
	e->sup.cancelled = reason == BM_REASON_CANCELLED;
	e->sup.out.reason = reason;
	e->sup.out.by = reason == BM_REASON_CANCELLED ? "api" : "burstmeter";
	e->sup.out.exit_code = -1;
	if (advice)
		snprintf(e->sup.out.advice, sizeof(e->sup.out.advice), "%s", advice);
	e->sup.end_ns = e->sup.start_ns = bm_now_ns();
	e->sup.phase = BM_SUP_DONE;
	ag_finish_effect(a, e);
}

/*
 * Cancellation is a transition of every state: queued ends now; launching
 * once its command runs; running by SIGTERM, then cgroup.kill after the
 * grace; ended: -EALREADY. The wish is stored first: a restart honours it.
 * A store that refuses it (a full disk) leaves the effect as it was and
 * says so (-ENOSPC, -EIO): a cancel answered is never lost to a restart.
 */
int ag_cancel(struct bm_agent *a, struct ag_effect *e)
{
	int err;

	if (bm_state_final(e->state) || e->sup.phase > BM_SUP_RUNNING)
		return -EALREADY;
	err = bm_store__cancel(a->store, e->tenant, e->req.id,
			       (int64_t)(bm_wall_ns() / BM_NSEC_PER_MSEC));
	if (err) {
		bm_warn("failed to store the cancel of %s@%s: %s: not cancelled", e->tenant,
			e->req.id, strerror(-err));
		return err;
	}
	return ag_cancel_stored(a, e);
}

int ag_cancel_stored(struct bm_agent *a, struct ag_effect *e)
{
	if (bm_state_final(e->state) || e->sup.phase > BM_SUP_RUNNING)
		return -EALREADY;
	if (!e->started) {
		ag_end_unstarted(a, e, BM_REASON_CANCELLED, NULL);
		return 0;
	}
	/* its command is being started: cancelled once it runs (ag_launched()) */
	if (e->launching) {
		e->cancel_pending = true;
		return 0;
	}
	/* SIGTERM now, cgroup.kill after the policy's grace */
	bm_sup__terminate(&e->sup, e->sup.o.policy.cancel_grace_ms * BM_NSEC_PER_MSEC);
	return 0;
}

int ag_exit(struct bm_agent *a, struct ag_effect *e, int wait_status,
	    const struct bm_sandbox_enf *caller)
{
	(void)a;
	if (e->req.mode != BM_REQ_ATTACH)
		return -EINVAL;
	if (e->sup.phase != BM_SUP_RUNNING)
		return -EALREADY;
	if (caller)
		bm_sandbox_enf_take_caller(&e->sup.out.sbx, caller);
	bm_sup__exited(&e->sup, wait_status);
	return 0;
}

void ag_spawner_gone(struct bm_agent *a)
{
	struct bm_spawner_msg died = { .ret = -ECONNRESET };
	unsigned int i;

	bm_warn("the spawner is gone: the agent forks its shims itself from now on");
	ag_unwatch(a, bm_spawner__fd(a->spawner));
	bm_spawner__free(a->spawner);
	a->spawner = NULL;
	/* downward: a launch that fails here frees its effect, swapped for the last (seen already) */
	for (i = a->n_eff; i-- > 0;) {
		struct ag_effect *e;

		if (i >= a->n_eff)
			continue;
		e = a->eff[i];
		/* unanswered: whatever it started dies with its cgroup */
		if (e->launching) {
			ag_launched(a, e, &died);
			continue;
		}
		if (!e->shim_id)
			continue;
		ag_set_shim_id(a, e, 0);
		/* not ours to reap: gone already (ESRCH), or watched from here on */
		e->shim.pidfd = (int)syscall(SYS_pidfd_open, e->shim.pid, 0);
		if (e->shim.pidfd < 0)
			ag_shim_ended(a, e);
		else
			ag_watch_effect(a, e);
	}
}
