// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What outlives an agent: the effects it left, re-adopted from the store
 * (their cgroups and the pinned meter), and the leftovers of one killed
 * mid-way (cgroups of ended effects, shim status files), swept.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/admit.h"
#include "agent/adopt.h"
#include "agent/index.h"
#include "agent/shim.h"
#include "agent/watch.h"
#include "base/common.h"
#include "effect/name.h"
#include "effect/policy_yaml.h"

/* Is pid still the process that started at start, and (uid > 0) owned by uid? */
static bool same_process(pid_t pid, uint64_t start, int64_t uid)
{
	char path[64], buf[1024], *p;
	int owner;

	if (pid <= 0 || !start || bm_pid_start(pid) != start)
		return false;
	if (uid <= 0)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	return bm_read_file(AT_FDCWD, path, buf, sizeof(buf)) > 0 && (p = strstr(buf, "\nUid:")) &&
	       sscanf(p + 5, "%d", &owner) == 1 && (int64_t)owner == uid;
}

/*
 * The process that tells its end: an attached one (the same process, still
 * its owner's), or the shim (the same process: pid and start time, from the
 * store or, if the agent died before it stored them, from what the shim
 * told on its cgroup or in its file). Returns its pidfd, -1 if it is gone,
 * or -ENOENT if no shim ever got the launch (the command never ran).
 */
static int find_teller(struct ag_effect *e, const struct bm_effect_row *row)
{
	uint64_t start = row->pid_start;
	pid_t pid = (pid_t)row->pid;

	if (e->req.mode == BM_REQ_ATTACH)
		return same_process(pid, start, row->uid) ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
	if (!pid && (!e->status_path ||
		     bm_effect_shim_pid(row->cgroup[0] ? row->cgroup : NULL, e->status_path, &pid, &start)))
		return -ENOENT;
	return same_process(pid, start, 0) ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
}

/*
 * An earlier agent's cgroup at path that nothing runs in, removed with its
 * v1 twins (named as it is) and its meter, if it was registered: 0, or
 * -errno (-ENOENT: it is gone already).
 */
static int release_left(struct bm_agent *a, const char *path)
{
	const char *name = strrchr(path, '/');
	struct bm_sup s;

	bm_sup__init(&s);
	s.cg = bm_cgroup__open(path);
	if (!s.cg)
		return errno ? -errno : -ENOENT;
	s.loader = a->loader;
	bm_ceilings_adopt(&a->env, s.cg, name ? name + 1 : path, &s.ceil);
	s.metered = true;
	return bm_sup__release(&s);
}

/* A launch that never reached a shim: its cgroup goes, and it waits in the queue again. */
static void requeue(struct bm_agent *a, struct ag_effect *e, const struct bm_effect_row *row)
{
	if (row->cgroup[0])
		(void)release_left(a, row->cgroup);
	(void)bm_store__set_runtime(a->store, e->tenant, e->req.id, "", 0, 0);
	ag_queue_add(a, e);
}

static void adopt_running(struct bm_agent *a, struct ag_effect *e, const struct bm_effect_row *row)
{
	struct bm_sup_opts so;
	int fd;

	(void)ag_effect_status(a, e, NULL);
	fd = find_teller(e, row);
	if (fd == -ENOENT)
		return requeue(a, e, row);
	ag_sup_opts(a, e, &so);
	ag_started(a, e);
	if (bm_sup__adopt(&e->sup, a->loader, &a->env, row->cgroup, &so)) {
		bm_warn("effect %s/%s could not be re-adopted (%s): its cgroup or meter is gone", e->tenant,
			e->req.id, e->sup.failed_step);
		if (fd >= 0)
			close(fd);
		e->sup.out.reason = BM_REASON_METER_ERROR;
		e->sup.out.by = "burstmeter";
		e->sup.phase = BM_SUP_DONE;
		/* due at once: the agent's timers finish it (outcome, store) */
		e->sup.timer_at = 0;
		ag_timers_moved(e);
		return;
	}
	ag_set_cg(a, e);
	/* what it used before this agent is charged to no budget */
	e->charge_base = true;
	e->shim.pidfd = fd;
	e->state = row->state == BM_ST_QUEUED ? BM_ST_RUNNING : row->state;
	ag_watch_effect(a, e);
	ag_wake(a, e);
	/* its shim (or attached process) gone while no agent ran: as if it had just ended */
	if (e->shim.pidfd < 0)
		ag_shim_ended(a, e);
}

struct adopt_ctx {
	struct bm_agent *a;
	unsigned int n;		/* adopted */
	unsigned int skipped;	/* left in the store: their request does not parse */
};

static int adopt_row(const struct bm_effect_row *row, void *ctx)
{
	struct adopt_ctx *c = ctx;
	struct bm_agent *a = c->a;
	struct ag_effect *e;
	json_t *errs = NULL;

	if (bm_state_final(row->state))
		return 0;
	if (ag_eff_room(a))
		return -ENOMEM;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	bm_sup__init(&e->sup);
	e->shim.pidfd = -1;
	if (bm_request_parse(row->request_json, strlen(row->request_json), &e->req, &errs)) {
		char *why = errs ? json_dumps(errs, JSON_COMPACT) : NULL;

		/* left in the store, never run (another version's?): said at each start */
		bm_warn("failed to re-adopt %s/%s: its stored request does not parse: %s",
			row->tenant, row->id, why ? why : "out of memory");
		free(why);
		json_decref(errs);
		free(e);
		c->skipped++;
		return 0;
	}
	snprintf(e->tenant, sizeof(e->tenant), "%s", row->tenant);
	snprintf(e->tool, sizeof(e->tool), "%s", row->tool);
	snprintf(e->parent, sizeof(e->parent), "%s", row->parent);
	if (row->pod_json)
		(void)ag_pod_from_json(row->pod_json, &e->pod);
	/* who it runs as, as stored; an older agent stored nobody: it is never run */
	e->uid = row->uid >= 0 ? (uid_t)row->uid : (uid_t)-1;
	e->gid = row->gid >= 0 ? (gid_t)row->gid : (gid_t)-1;
	e->seq = ++a->seq;
	e->state = BM_ST_QUEUED;
	e->agent = a;
	if (ag_index_add(a, e) || ag_index_reserve(a)) {
		bm_request_free(&e->req);
		free(e);
		return -ENOMEM;
	}
	a->eff[a->n_eff++] = e;
	e->eff_i = a->n_eff;
	c->n++;
	/* the store is being walked: ending it (a store write) waits until the walk is done */
	e->adopt_cancel = row->cancel_ms != 0;
	if (row->cgroup[0])
		adopt_running(a, e, row);
	else if (!e->adopt_cancel && row->uid >= 0)
		ag_queue_add(a, e);
	return 0;
}

/* What adoption found that must end, or be cancelled, now that the store is not walked. */
static void settle(struct bm_agent *a)
{
	unsigned int i;

	/* downward: an effect that ends is swapped for the last, seen already */
	for (i = a->n_eff; i-- > 0;) {
		struct ag_effect *e;

		if (i >= a->n_eff)
			continue;
		e = a->eff[i];
		if (e->started || e->queue_i) {
			if (e->adopt_cancel && e->started)
				(void)ag_cancel_stored(a, e);
			e->adopt_cancel = false;
			continue;
		}
		if (e->adopt_cancel)
			ag_end_unstarted(a, e, BM_REASON_CANCELLED, NULL);
		else
			ag_end_unstarted(a, e, BM_REASON_METER_ERROR,
					 "it was queued by an older burstmeter that stored no identity to "
					 "run it as: not run; submit it again");
	}
}

/* Is (tenant, id) in our store? Its live entry in *live (NULL if none). */
static bool stored(struct bm_agent *a, const char *tenant, const char *id, struct ag_effect **live)
{
	struct bm_effect_row row;

	memset(&row, 0, sizeof(row));
	if (bm_store__get(a->store, tenant, id, &row))
		return false;
	bm_effect_row_clear(&row);
	*live = ag_find(a, tenant, id);
	return true;
}

/*
 * Is the cgroup named name one of our effects'? An older burstmeter's name
 * ("burstmeter.<tenant>.<id>", both may hold dots) is ours under the split
 * our store knows. True and the effect's live entry in *live (NULL if none),
 * or false: not one of ours (another agent's, a run's).
 */
static bool ours(struct bm_agent *a, const char *name, struct ag_effect **live)
{
	char tenant[BM_NAME_MAX + 1], id[BM_NAME_MAX + 1];
	const char *rest = name + strlen(BM_EFFECT_PREFIX), *dot;
	int how = bm_effect_name_split(name, tenant, id);

	if (how == 0)
		return stored(a, tenant, id, live);
	if (how < 0 && strncmp(name, BM_EFFECT_PREFIX, strlen(BM_EFFECT_PREFIX)))
		return false;
	for (dot = strchr(rest, '.'); dot; dot = strchr(dot + 1, '.')) {
		if (dot - rest > BM_NAME_MAX)
			break;
		snprintf(tenant, sizeof(tenant), "%.*s", (int)(dot - rest), rest);
		if (bm_valid_name(tenant) && bm_valid_name(dot + 1) && stored(a, tenant, dot + 1, live))
			return true;
	}
	return false;
}

/* The cgroups in dir that our store names and no live effect holds, removed; how many. */
static unsigned int sweep_in(struct bm_agent *a, const char *dir)
{
	char path[PATH_MAX];
	struct ag_effect *live;
	struct dirent *de;
	unsigned int n = 0;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d))) {
		int err;

		if (de->d_type != DT_DIR || !ours(a, de->d_name, &live) || (live && live->sup.cg))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
			continue;
		err = release_left(a, path);
		if (err && err != -ENOENT)
			bm_warn("failed to remove %s, left by an earlier agent", path);
		else if (!err)
			n++;
	}
	if (d)
		closedir(d);
	return n;
}

/*
 * The same in every pod's cgroup under the kubelet's root: the pod level is
 * at most three below it (kubepods, QoS, pod); containers are not entered.
 * A cgroup left there would keep the kubelet from removing the pod's.
 */
static unsigned int sweep_pods(struct bm_agent *a, const char *dir, int depth)
{
	char path[PATH_MAX];
	struct dirent *de;
	unsigned int n = 0;
	DIR *d;

	if (depth > 0)
		n += sweep_in(a, dir);
	if (depth == 3 || !(d = opendir(dir)))
		return n;
	while ((de = readdir(d))) {
		const char *m = de->d_name;

		if (de->d_type != DT_DIR ||
		    !(strstr(m, "kubepods") || (depth && (!strncmp(m, "pod", 3) ||
							   !strcmp(m, "burstable") || !strcmp(m, "besteffort")))) ||
		    snprintf(path, sizeof(path), "%s/%s", dir, m) >= (int)sizeof(path))
			continue;
		n += sweep_pods(a, path, depth + 1);
	}
	closedir(d);
	return n;
}

/*
 * What an agent killed mid-way left behind: the cgroup of an effect it had
 * finished (stored) but not yet removed, or had made but not yet recorded,
 * in our parent or in a pod's; and shim status files. Nothing an adopted
 * effect holds, and only cgroups our store names: the same parent may hold
 * another agent's or a run's.
 */
static void sweep(struct bm_agent *a)
{
	char path[PATH_MAX], file[PATH_MAX];
	struct dirent *de;
	unsigned int n;
	DIR *d;

	n = sweep_in(a, a->parent);
	if (snprintf(path, sizeof(path), "%s%s", a->env.v2_mount, a->cfg.kubepods_root) < (int)sizeof(path))
		n += sweep_pods(a, path, 0);
	d = snprintf(path, sizeof(path), "%s/run", a->cfg.state_dir) < (int)sizeof(path) ? opendir(path) : NULL;
	while (d && (de = readdir(d))) {
		bool keep = false;
		unsigned int i;
		size_t len;

		if (de->d_type != DT_REG || snprintf(file, sizeof(file), "%s/%s", path, de->d_name) >= (int)sizeof(file))
			continue;
		/* an adopted effect's status file, or the shim's .tmp of it */
		for (i = 0; i < a->n_eff && !keep; i++) {
			len = a->eff[i]->status_path ? strlen(a->eff[i]->status_path) : 0;
			keep = len && !strncmp(file, a->eff[i]->status_path, len) &&
			       (!file[len] || !strcmp(file + len, ".tmp") ||
				!strcmp(file + len, BM_SHIM_PID_SUFFIX) ||
				!strcmp(file + len, BM_SHIM_PID_SUFFIX ".tmp"));
		}
		if (!keep)
			(void)unlink(file);	/* one left is tried again at the next start */
	}
	if (d)
		closedir(d);
	if (n)
		bm_info("removed %u cgroups of ended effects that an earlier agent left", n);
}

void ag_adopt(struct bm_agent *a)
{
	static const enum bm_state live[] = { BM_ST_QUEUED, BM_ST_RUNNING, BM_ST_THROTTLED,
					      BM_ST_FROZEN };
	struct adopt_ctx c = { a, 0, 0 };
	unsigned int i;
	int err;

	/* by state, through the state index: however many have ended, no live one is missed */
	for (i = 0; i < BM_ARRAY_SIZE(live); i++) {
		err = bm_store__list(a->store, NULL, live[i], UINT_MAX, adopt_row, &c);
		if (err)
			bm_warn("failed to re-adopt the %s effects: %s", bm_state_name(live[i]),
				strerror(-err));
	}
	settle(a);
	if (c.n)
		bm_info("re-adopted %u effects (%u queued)", c.n, a->queue.n);
	if (c.skipped)
		bm_warn("%u stored effects were not re-adopted: their requests do not parse",
			c.skipped);
	sweep(a);
}
