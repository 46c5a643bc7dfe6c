// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/config.h"
#include "base/common.h"
#include "meter/preflight.h"
#include "meter/window.h"
#include "views/view.h"

#define PREFIX BM_VIEW_PREFIX
#define PREFIX_LEN (sizeof(PREFIX) - 1)
/* A CPU slice is charged at the next tick (4 ms at 250 Hz): 10 ms covers 100 Hz too. */
#define SETTLE_NS (10 * BM_NSEC_PER_MSEC)

int bm_view_meter_open(struct bm_view_meter *vm, const char *pin_dir)
{
	struct bm_loader_opts lo = { .adopt_only = true, .pin_dir = vm->pin_dir };

	memset(vm, 0, sizeof(*vm));
	snprintf(vm->pin_dir, sizeof(vm->pin_dir), "%s", pin_dir ? pin_dir : BM_AGENT_PIN_DIR);
	vm->pinned = bm_loader__open(&lo);
	/* nothing pinned (no agent since boot) is the ordinary case of a standalone host */
	if (!vm->pinned && errno != ENOENT)
		return -errno;
	return 0;
}

int bm_view_meter_attach(struct bm_view_meter *vm, const struct bm_cgroup *cg,
			 struct bm_loader **out)
{
	struct bm_meter m;
	int err;

	if (vm->pinned && !bm_loader__read(vm->pinned, cg, &m)) {
		*out = vm->pinned;
		return 0;
	}
	/* not the agent's (a standalone `burstmeter run`): meter it ourselves from now */
	if (!vm->priv) {
		err = bm_meter_preflight(vm->why, sizeof(vm->why));
		if (err)
			return err;
		vm->priv = bm_loader__open(NULL);
		if (!vm->priv) {
			err = -errno;
			snprintf(vm->why, sizeof(vm->why), "failed to load a meter: %s (-v shows why)",
				 strerror(-err));
			return err;
		}
		vm->priv_since_ns = bm_now_ns();
	}
	/* no thresholds: a view only reads; -EEXIST: registered already (a second look) */
	err = bm_loader__add(vm->priv, cg, BM_WINDOW_NS_DEFAULT, bm_now_ns(), NULL);
	if (err && err != -EEXIST)
		return err;
	*out = vm->priv;
	return 1;
}

void bm_view_meter_close(struct bm_view_meter *vm)
{
	bm_loader__free(vm->pinned);
	bm_loader__free(vm->priv);
	vm->pinned = vm->priv = NULL;
}

/*
 * burstmeter.<tenant>@<id> (an older burstmeter's burstmeter.<tenant>.<id>)
 * with an id after the separator; a directory merely named burstmeter.x is
 * not ours.
 */
static bool effect_name(const char *name)
{
	const char *sep;

	if (strncmp(name, PREFIX, PREFIX_LEN))
		return false;
	sep = strpbrk(name + PREFIX_LEN, "@.");
	return sep && sep[1];
}

static int scan_dir(char *path, size_t len, int depth, bm_view_fn fn, void *ctx)
{
	size_t base = strlen(path);
	struct dirent *de;
	int ret = 0;
	DIR *d;

	d = opendir(path);
	/* a cgroup removed while we walk is no error; only the root must be there */
	if (!d)
		return depth ? 0 : -errno;
	while (!ret && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(path + base, len - base, "/%s", de->d_name) >= len - base)
			continue;
		/* an effect's own children are its tasks' business: the meter keys on the effect */
		if (effect_name(de->d_name))
			ret = fn(path, de->d_name, ctx);
		else if (depth < BM_VIEW_DEPTH && strncmp(de->d_name, PREFIX, PREFIX_LEN))
			ret = scan_dir(path, len, depth + 1, fn, ctx);
		path[base] = '\0';
	}
	closedir(d);
	return ret;
}

int bm_view_scan(const char *root, bm_view_fn fn, void *ctx)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s", root);
	return scan_dir(path, sizeof(path), 0, fn, ctx);
}

int bm_view_root(char *buf, size_t len)
{
	struct bm_cgroup_env env;
	int err;

	err = bm_cgroup_env_detect("/proc/self/mountinfo", "/proc/self/cgroup", &env);
	if (!err)
		snprintf(buf, len, "%s", env.v2_mount);
	return err;
}

/* The window that ended at least SETTLE_NS ago: the one before the window of now - SETTLE_NS. */
uint64_t bm_view_settled_win(uint64_t now_ns, uint64_t window_ns)
{
	uint64_t w = now_ns > SETTLE_NS ? (now_ns - SETTLE_NS) / window_ns : 0;

	return w ? w - 1 : 0;
}

uint64_t bm_view_end_win(const struct bm_meter *m, uint64_t now_ns)
{
	uint64_t end = bm_view_settled_win(now_ns, m->window_ns);

	if (end < m->first_win)
		end = m->first_win;
	return end < m->lvl_win ? m->lvl_win : end;
}

int bm_view_sample(struct bm_loader *l, const struct bm_cgroup *cg, uint64_t now_ns,
		   struct bm_view_sample *s)
{
	struct bm_summary sum;
	struct bm_meter m;
	char ev[256] = "";
	double raw;
	uint64_t x;
	int d, err;

	(void)bm_read_file(cg->dirfd, "cgroup.events", ev, sizeof(ev));
	s->frozen = strstr(ev, "frozen 1");
	s->ended = strstr(ev, "populated 0");
	err = l ? bm_loader__read(l, cg, &m) : -ENOENT;
	/* the peaks are finalize's: every window of the life, the open ones included */
	if (!err)
		err = bm_window_finalize(&m, bm_view_end_win(&m, now_ns), &sum);
	if (err)
		return err;
	s->window_ns = m.window_ns;
	/* an effect whose tasks are all gone ran until its last event */
	x = s->ended ? m.last_win + 1 : now_ns / m.window_ns;
	s->runtime_s = x > m.first_win ? (double)(x - m.first_win) * m.window_ns / 1e9 : 0;
	x = bm_view_settled_win(now_ns, m.window_ns);
	for (d = 0; d < BM_DIM__MAX; d++) {
		raw = x < m.first_win ? 0 : bm_view_window_value(&m, d, x);
		s->cur[d] = bm_window_display(d, raw, m.window_ns);
		s->peak[d] = bm_window_display(d, (double)sum.peak[d], m.window_ns);
	}
	return 0;
}

int bm_view_dim(const char *s)
{
	int d;

	for (d = 0; d < BM_DIM__MAX; d++)
		if (!strcmp(s, bm_window_dim_short(d)))
			return d;
	return -EINVAL;
}

double bm_view_window_value(const struct bm_meter *m, int d, uint64_t x)
{
	int64_t level = d == BM_DIM_MEM ? m->rss_bytes : m->tasks;

	if (d < BM_ALL_FLOWS)
		return bm_window_flow(m, d, x);
	if (x == m->lvl_win)
		return (double)m->lvl_max[d];
	/* levels count down on exit: one that started before its meter may read below zero */
	return level > 0 ? (double)level : 0;
}

bool bm_view_sleep(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / BM_NSEC_PER_SEC),
		.tv_nsec = (long)(ns % BM_NSEC_PER_SEC),
	};

	return !nanosleep(&ts, NULL);
}

static volatile sig_atomic_t stop_sig;

static void on_stop(int sig)
{
	stop_sig = sig;
}

void bm_view_catch_stop(void)
{
	/* no SA_RESTART: a blocking wait (getch, nanosleep) returns, and the loop sees the flag */
	struct sigaction sa = { .sa_handler = on_stop };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

bool bm_view_stopped(void)
{
	return stop_sig;
}

int bm_view_getopt_error(const char *cmd, int c, char **argv)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";
	char opt[3] = { '-', (char)optopt, '\0' };
	/*
	 * optopt holds a long option's val too (--once=1): a long option is
	 * named as written; only an unknown short one by its letter.
	 */
	const char *name = optopt && strncmp(arg, "--", 2) ? opt : arg;

	if (c == ':')
		bm_err("option '%s' needs a value (see 'burstmeter %s --help')", name, cmd);
	else
		bm_err("unknown or malformed option '%s' (see 'burstmeter %s --help')", name,
		       cmd);
	return BM_EXIT_USAGE;
}

int bm_view_bad_value(const char *cmd, const char *flag, const char *val, const char *expected)
{
	bm_err("invalid %s '%s' (expected %s; see 'burstmeter %s --help')", flag, val, expected,
	       cmd);
	return BM_EXIT_USAGE;
}
