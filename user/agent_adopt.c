// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What outlives an agent: the effects it left (re-adopted from the store,
 * their cgroups and the pinned meter), and each effect's life window by
 * window (sampled from the meter for event streams and the stored
 * timeline).
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

#include "agent.h"
#include "common.h"
#include "policy_yaml.h"

/* An effect's series: at most this many points, however long it lives (40 kB): 2 to 4 per timeline point */
#define SERIES_POINTS 2048
#define TIMELINE_POINTS 1000

void ag_sample(struct bm_agent *a, struct ag_effect *e)
{
	uint64_t x, now_win;
	double v[BM_DIM__MAX];
	struct bm_meter m;
	json_t *line;
	int d;

	if (!e->sup.metered)
		return;
	/* before the read: an event after it marks the meter again */
	if (e->series_next_win)
		bm_loader__unmark(a->loader, e->slot);
	a->meter_reads++;
	if (bm_loader__read(a->loader, e->sup.cg, &m))
		return;
	now_win = bm_now_ns() / m.window_ns;
	/* an ended effect's timeline stops at its last window, as its totals do */
	if (e->sup.end_ns && bm_window_last(&m, e->sup.end_ns) + 1 < now_win)
		now_win = bm_window_last(&m, e->sup.end_ns) + 1;
	if (!e->series_next_win) {
		e->series_next_win = m.first_win;
		e->series.window_ns = m.window_ns;
		e->series.max = SERIES_POINTS;
	}
	/*
	 * Windows older than the ring are gone. Idle since the last read, they
	 * had no event: the levels it stood at, nothing flowing. Otherwise (a
	 * read came too late) they are lost; start where the ring does.
	 */
	if (e->series_next_win + BM_RING <= now_win) {
		x = now_win - BM_RING + 1;
		if (e->idle)
			bm_series_push_n(&e->series, e->idle_v, x - e->series_next_win);
		e->series_next_win = x;
	}
	for (x = e->series_next_win; x < now_win; x++) {
		for (d = 0; d < BM_FLOWS; d++)
			v[d] = bm_window_display(d, bm_window_flow(&m, d, x), m.window_ns);
		/* levels: this window's peak if it is the level window, else where it stands */
		v[BM_DIM_MEM] = x == m.lvl_win ? (double)m.lvl_max[BM_DIM_MEM] : (double)(m.rss_bytes > 0 ? m.rss_bytes : 0);
		v[BM_DIM_PIDS] = x == m.lvl_win ? (double)m.lvl_max[BM_DIM_PIDS] : (double)(m.tasks > 0 ? m.tasks : 0);
		if (bm_series_push(&e->series, v))
			break;
		if (e->streams) {
			line = json_pack("{s:s, s:I, s:f, s:f, s:f, s:f, s:f, s:f}", "type", "window", "window",
					 (json_int_t)(x - m.first_win), "t_ms",
					 (double)(x - m.first_win) * m.window_ns / 1e6, "cpu_cores", v[BM_DIM_CPU],
					 "memory_bytes", v[BM_DIM_MEM], "pids", v[BM_DIM_PIDS], "net_tx_bytes_per_s",
					 v[BM_DIM_NET], "runq_delay_ms", v[BM_DIM_RUNQ]);
			ag_stream_push(e, line);
		}
	}
	e->series_next_win = x;
	e->slot = m.slot;
	e->idle = m.last_win < now_win;
	memset(e->idle_v, 0, sizeof(e->idle_v));
	e->idle_v[BM_DIM_MEM] = (double)(m.rss_bytes > 0 ? m.rss_bytes : 0);
	e->idle_v[BM_DIM_PIDS] = (double)(m.tasks > 0 ? m.tasks : 0);
}

/*
 * Is an awake effect due for a read? Once a quarter ring has closed (40 ms
 * at 10 ms windows): that loses none of the kernel's last BM_RING windows
 * and leaves three quarters of a ring for a late tick (a slow emulated VM
 * lost one with half). A reader of its events gets every tick.
 */
static bool due(const struct ag_effect *e, uint64_t now)
{
	uint64_t w = e->series.window_ns;

	if (e->streams || !w || !e->series_next_win)
		return true;
	return now / w >= e->series_next_win + BM_RING / 4;
}

/*
 * Every tick: the effects whose meters the kernel marked wake up, the awake
 * ones are read when due, and one found idle (ag_effect.idle) goes to
 * sleep. 10,000 sleeping effects then cost a scan of 16 kB of marks per
 * tick, not a map lookup each (~5 us here; 1,000 of them kept the agent at
 * 28 % of a CPU), nor a visit each.
 */
void ag_tick(struct bm_agent *a)
{
	const volatile uint8_t *marks = bm_loader__marks(a->loader);
	unsigned int i, j, k, n, start, reads = AG_TICK_READS;
	uint64_t now = bm_now_ns();
	struct ag_effect *e;
	uint64_t word;

	for (i = 0; marks && i < BM_MOVED_SLOTS; i += 8) {
		memcpy(&word, (const uint8_t *)marks + i, sizeof(word));
		if (!word)
			continue;
		for (k = i; k < i + 8; k++)
			if (marks[k] && (e = ag_slot_sleeper(a, k)))
				ag_wake(a, e);
	}
	/*
	 * Downward from where the last tick's reads stopped, around to it: one
	 * that sleeps or ends is swapped out by the last (seen already, or, in
	 * the first stretch, seen next tick).
	 */
	n = a->awake.n;
	start = a->tick_next < n ? a->tick_next : n;
	a->tick_next = UINT_MAX;
	for (j = 0; j < n; j++) {
		i = j < start ? start - 1 - j : n - 1 - (j - start);
		if (i >= a->awake.n)
			continue;
		e = a->awake.v[i];
		if (e->sup.phase != BM_SUP_RUNNING)
			continue;
		if (due(e, now)) {
			if (!reads) {
				a->tick_next = i + 1;
				break;
			}
			reads--;
			ag_sample(a, e);
		}
		/* an attached process ended and its caller never said how */
		if (e->exit_wait_ns && now >= e->exit_wait_ns)
			bm_sup__exited(&e->sup, -1);
		else if (e->idle && !e->streams && !e->exit_wait_ns)
			ag_sleep(a, e);
	}
	if (a->queue.n)
		ag_schedule(a);
	bm_loader__forget_stale(a->loader);
}

json_t *ag_timeline_json(const struct bm_series *s)
{
	size_t n = bm_series_len(s), step = (n + TIMELINE_POINTS - 1) / TIMELINE_POINTS, i, j;
	json_t *t = json_object();
	int d;

	step = step ? step : 1;
	json_object_set_new(t, "window_ms", json_real(s->window_ns / 1e6));
	/* each point is the largest of its windows: a one-window burst still shows */
	json_object_set_new(t, "step_windows", json_integer((json_int_t)(step * bm_series_step(s))));
	for (d = 0; d < BM_DIM__MAX; d++) {
		json_t *arr = json_array();

		for (i = 0; i < n; i += step) {
			float mx = 0;

			for (j = i; j < i + step && j < n; j++)
				mx = bm_series_at(s, d, j) > mx ? bm_series_at(s, d, j) : mx;
			json_array_append_new(arr, json_real(mx));
		}
		json_object_set_new(t, bm_window_dim_name(d), arr);
	}
	return t;
}

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
	struct adopt_ctx c = { a, 0 };
	struct ag_effect **p;

	/* room for every effect an earlier agent may have left */
	p = realloc(a->eff, 65536 * sizeof(*p));
	if (!p)
		return;
	a->eff = p;
	a->cap_eff = 65536;
	/* by state, through the state index: however many have ended, no live one is missed */
	bm_store__list(a->store, NULL, BM_ST_QUEUED, UINT_MAX, adopt_row, &c);
	bm_store__list(a->store, NULL, BM_ST_RUNNING, UINT_MAX, adopt_row, &c);
	bm_store__list(a->store, NULL, BM_ST_THROTTLED, UINT_MAX, adopt_row, &c);
	bm_store__list(a->store, NULL, BM_ST_FROZEN, UINT_MAX, adopt_row, &c);
	if (c.n)
		bm_info("re-adopted %u effects (%u queued)", c.n, a->queue.n);
	sweep(a);
}
