// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_cfg.h"
#include "common.h"
#include "view.h"
#include "window.h"

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

int bm_view_meter_attach(struct bm_view_meter *vm, const struct bm_cgroup *cg, struct bm_loader **out)
{
	struct bm_meter m;
	int err;

	if (vm->pinned && !bm_loader__read(vm->pinned, cg, &m)) {
		*out = vm->pinned;
		return 0;
	}
	/* not the agent's (a standalone `burstmeter run`): meter it ourselves from now */
	if (!vm->priv) {
		vm->priv = bm_loader__open(NULL);
		if (!vm->priv)
			return -errno;
		vm->priv_since_ns = bm_now_ns();
	}
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

/* burstmeter.<tenant>.<id>: both parts present (a directory merely named so is not ours). */
static bool effect_name(const char *name)
{
	const char *dot;

	if (strncmp(name, PREFIX, PREFIX_LEN))
		return false;
	dot = strchr(name + PREFIX_LEN, '.');
	return dot && dot > name + PREFIX_LEN && dot[1];
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
	int err = bm_cgroup_env_detect("/proc/self/mountinfo", "/proc/self/cgroup", &env);

	if (!err)
		snprintf(buf, len, "%s", env.v2_mount);
	return err;
}

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

int bm_view_dim(const char *s)
{
	int d;

	for (d = 0; d < BM_DIM__MAX; d++)
		if (!strcmp(s, bm_window_dim_short(d)))
			return d;
	return -EINVAL;
}

uint64_t bm_view_window_value(const struct bm_meter *m, int d, uint64_t x)
{
	int64_t level = d == BM_DIM_MEM ? m->rss_bytes : m->tasks;
	uint64_t v = 0;
	int l;

	if (d >= BM_FLOWS)
		return x == m->lvl_win ? m->lvl_max[d] : level > 0 ? (uint64_t)level : 0;
	if (m->slot_win[x % BM_RING] != x)
		return 0;
	for (l = 0; l < BM_LANES; l++)
		v += m->lane[l].v[x % BM_RING][d];
	return v;
}

bool bm_view_sleep(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / BM_NSEC_PER_SEC), .tv_nsec = (long)(ns % BM_NSEC_PER_SEC) };

	return !nanosleep(&ts, NULL);
}

int bm_view_getopt_error(const char *cmd, int c, char **argv)
{
	char opt[3] = { '-', (char)optopt, '\0' };
	const char *name = optopt ? opt : argv[optind - 1];

	if (c == ':')
		bm_err("option '%s' needs a value (see 'burstmeter %s --help')", name, cmd);
	else
		bm_err("unknown option '%s' (see 'burstmeter %s --help')", name, cmd);
	return 2;
}

int bm_view_bad_value(const char *cmd, const char *flag, const char *val, const char *expected)
{
	bm_err("invalid %s '%s' (expected %s; see 'burstmeter %s --help')", flag, val, expected, cmd);
	return 2;
}
