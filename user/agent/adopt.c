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
#include "agent/watch.h"
#include "base/common.h"
#include "effect/policy_yaml.h"

/* The start time of pid (field 22 of /proc/PID/stat), 0 if it is gone. */
static uint64_t pid_start(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (bm_read_file(AT_FDCWD, path, buf, sizeof(buf)) < 0 || !(p = strrchr(buf, ')')))
		return 0;
	/* after "(comm)": fields 3.. ; the start time is field 22 */
	for (i = 3; i < 22 && p; i++)
		p = strchr(p + 1, ' ');
	if (p)
		sscanf(p + 1, "%llu", &start);
	return start;
}

static void adopt_running(struct bm_agent *a, struct ag_effect *e, const struct bm_effect_row *row)
{
	struct bm_sup_opts so;
	int status = -1;

	ag_sup_opts(a, e, &so);
	ag_started(a, e);
	if (snprintf(e->status_path, sizeof(e->status_path), "%s/run/%s.%s.status", a->cfg.state_dir,
		     e->tenant, e->req.id) >= (int)sizeof(e->status_path))
		e->status_path[0] = '\0';
	if (bm_sup__adopt(&e->sup, a->loader, &a->env, row->cgroup, &so)) {
		bm_warn("effect %s/%s could not be re-adopted (%s): its cgroup or meter is gone", e->tenant,
			e->req.id, e->sup.failed_step);
		e->sup.out.reason = BM_REASON_METER_ERROR;
		e->sup.out.by = "burstmeter";
		e->sup.phase = BM_SUP_DONE;
		/* due at once: the agent's timers finish it (outcome, store) */
		e->sup.timer_at = 0;
		ag_timers_moved(e);
		return;
	}
	ag_set_cg(a, e);
	/* the shim, if it still runs (and is the same process), says when the command ends */
	if (row->pid > 0 && (!row->pid_start || pid_start((pid_t)row->pid) == row->pid_start))
		e->shim.pidfd = (int)syscall(SYS_pidfd_open, (pid_t)row->pid, 0);
	e->state = row->state;
	ag_watch_effect(a, e);
	ag_wake(a, e);
	if (e->shim.pidfd < 0) {
		if (bm_effect_shim_status(e->status_path, &status))
			status = -1;
		bm_sup__exited(&e->sup, status);
	}
}

struct adopt_ctx {
	struct bm_agent *a;
	unsigned int n;
};

static int adopt_row(const struct bm_effect_row *row, void *ctx)
{
	struct adopt_ctx *c = ctx;
	struct bm_agent *a = c->a;
	struct ag_effect *e;
	json_t *errs = NULL;

	if (bm_state_final(row->state) || a->n_eff >= a->cap_eff)
		return 0;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	bm_sup__init(&e->sup);
	e->shim.pidfd = -1;
	if (bm_request_parse(row->request_json, strlen(row->request_json), &e->req, &errs)) {
		json_decref(errs);
		free(e);
		return 0;
	}
	snprintf(e->tenant, sizeof(e->tenant), "%s", row->tenant);
	snprintf(e->tool, sizeof(e->tool), "%s", row->tool);
	e->seq = ++a->seq;
	e->state = BM_ST_QUEUED;
	e->agent = a;
	if (ag_index_add(a, e) || ag_index_reserve(a)) {
		bm_request_free(&e->req);
		free(e);
		return -ENOMEM;
	}
	a->eff[a->n_eff++] = e;
	c->n++;
	if (row->cgroup[0]) {
		adopt_running(a, e, row);
	} else {
		ag_queue_add(a, e);
	}
	return 0;
}

/*
 * name is "burstmeter.<tenant>.<id>" and both may hold dots: the split whose
 * (tenant, id) is in our store. True and the effect's live entry in *live
 * (NULL if none), or false: not one of ours (another agent's, a run's).
 */
static bool ours(struct bm_agent *a, const char *name, struct ag_effect **live)
{
	char tenant[BM_NAME_MAX + 1];
	struct bm_effect_row row;
	const char *rest, *dot;
	bool found = false;

	if (strncmp(name, "burstmeter.", 11))
		return false;
	rest = name + 11;
	for (dot = strchr(rest, '.'); dot && !found; dot = strchr(dot + 1, '.')) {
		if (dot - rest > BM_NAME_MAX)
			break;
		snprintf(tenant, sizeof(tenant), "%.*s", (int)(dot - rest), rest);
		if (!bm_valid_name(tenant) || !bm_valid_name(dot + 1))
			continue;
		memset(&row, 0, sizeof(row));
		if (bm_store__get(a->store, tenant, dot + 1, &row))
			continue;
		bm_effect_row_clear(&row);
		*live = ag_find(a, tenant, dot + 1);
		found = true;
	}
	return found;
}

/*
 * What an agent killed mid-way left behind: the cgroup of an effect it had
 * finished (stored) but not yet removed, or had made but not yet recorded,
 * and shim status files. Nothing an adopted effect holds, and only cgroups
 * our store names: the same parent may hold another agent's or a run's.
 */
static void sweep(struct bm_agent *a)
{
	char path[PATH_MAX], file[PATH_MAX];
	struct ag_effect *live;
	struct dirent *de;
	unsigned int n = 0;
	DIR *d;

	d = opendir(a->parent);
	while (d && (de = readdir(d))) {
		struct bm_sup s;

		if (de->d_type != DT_DIR || !ours(a, de->d_name, &live) || (live && live->sup.cg))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", a->parent, de->d_name) >= (int)sizeof(path))
			continue;
		bm_sup__init(&s);
		s.cg = bm_cgroup__open(path);
		if (!s.cg)
			continue;
		s.loader = a->loader;
		bm_ceilings_adopt(&a->env, s.cg, de->d_name, &s.ceil);
		s.metered = true;	/* its meter, if any, goes too */
		if (bm_sup__release(&s))
			bm_warn("failed to remove %s, left by an earlier agent", path);
		else
			n++;
	}
	if (d)
		closedir(d);
	d = snprintf(path, sizeof(path), "%s/run", a->cfg.state_dir) < (int)sizeof(path) ? opendir(path) : NULL;
	while (d && (de = readdir(d))) {
		bool keep = false;
		unsigned int i;
		size_t len;

		if (de->d_type != DT_REG || snprintf(file, sizeof(file), "%s/%s", path, de->d_name) >= (int)sizeof(file))
			continue;
		/* an adopted effect's status file, or the shim's .tmp of it */
		for (i = 0; i < a->n_eff && !keep; i++) {
			len = strlen(a->eff[i]->status_path);
			keep = len && !strncmp(file, a->eff[i]->status_path, len) &&
			       (!file[len] || !strcmp(file + len, ".tmp"));
		}
		if (!keep)
			unlink(file);
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
	struct adopt_ctx c = { a, 0 };
	struct ag_effect **p;
	unsigned int i;
	int err;

	/* room for every effect an earlier agent may have left */
	p = realloc(a->eff, 65536 * sizeof(*p));
	if (!p)
		return;
	a->eff = p;
	a->cap_eff = 65536;
	/* by state, through the state index: however many have ended, no live one is missed */
	for (i = 0; i < BM_ARRAY_SIZE(live); i++) {
		err = bm_store__list(a->store, NULL, live[i], UINT_MAX, adopt_row, &c);
		if (err)
			bm_warn("failed to re-adopt the %s effects: %s", bm_state_name(live[i]),
				strerror(-err));
	}
	if (c.n)
		bm_info("re-adopted %u effects (%u queued)", c.n, a->queue.n);
	sweep(a);
}
