// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `burstmeter top`: the running effects, one row each, with the last full
 * window and the peak of every dimension, sortable, refreshed 10 times a
 * second in a plain ncurses screen (fine over ssh), or printed once as a
 * table (--once) or as JSON (--json). The data comes from user/views/view.h.
 */
#include <curses.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/config.h"
#include "base/common.h"
#include "base/parse.h"
#include "effect/name.h"
#include "meter/window.h"
#include "views/histfmt.h"
#include "views/top.h"
#include "views/view.h"

#define TABLE_ROW 3		/* screen lines above the first effect */

struct eff {
	char path[PATH_MAX];
	char tenant[BM_NAME_MAX + 1], id_buf[BM_NAME_MAX + 1];
	const char *id;			/* id_buf */
	struct bm_cgroup *cg;
	struct bm_loader *l;		/* NULL: could not be metered */
	bool priv, seen;
	bool ok;			/* the last sample worked */
	struct bm_view_sample s;
};

struct top {
	struct bm_view_meter vm;
	char root[PATH_MAX];
	struct eff **e;
	size_t n, cap, scroll;
	int sort;			/* enum bm_dim: by its peak, largest first */
	bool once, json;
	uint64_t interval_ms, started_wall_ns;
	const char *pin_dir;
	const char *failed;		/* what a refresh could not do, for the error line */
};

static void eff_free(struct top *t, struct eff *e)
{
	/* the private meter forgets it (hash meters); the agent's entries are the agent's */
	if (e->l && e->priv)
		(void)bm_loader__del(e->l, e->cg);
	bm_cgroup__free(e->cg);
	free(e);
}

static int eff_new(struct top *t, const char *path, const char *name)
{
	struct eff *e, **grown;
	int ret;

	if (t->n == t->cap) {
		grown = realloc(t->e, (t->cap + 16) * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		t->e = grown;
		t->cap += 16;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	snprintf(e->path, sizeof(e->path), "%s", path);
	/* an older burstmeter's "<tenant>.<id>" is split at its first dot */
	if (bm_effect_name_split(name, e->tenant, e->id_buf) < 0) {
		free(e);
		return 0;
	}
	e->id = e->id_buf;
	e->cg = bm_cgroup__open(path);
	if (!e->cg) {
		free(e);
		return 0;	/* gone between readdir and open */
	}
	ret = bm_view_meter_attach(&t->vm, e->cg, &e->l);
	/* without a private meter nothing unpinned can be metered: a runtime failure */
	if (ret < 0 && !t->vm.priv) {
		t->failed = "load a meter of its own";
		eff_free(t, e);
		return ret;
	}
	e->priv = ret == 1;
	e->seen = true;
	t->e[t->n++] = e;
	return 0;
}

/*
 * One effect directory found by the scan. A linear search: a node runs tens
 * of effects at once, and a 10 Hz scan of those costs far less than a map.
 */
static int on_dir(const char *path, const char *name, void *ctx)
{
	struct top *t = ctx;
	size_t i;

	for (i = 0; i < t->n; i++) {
		if (!strcmp(t->e[i]->path, path)) {
			t->e[i]->seen = true;
			return 0;
		}
	}
	return eff_new(t, path, name);
}

static int cmp_peak(const void *a, const void *b, void *ctx)
{
	const struct eff *x = *(struct eff *const *)a, *y = *(struct eff *const *)b;
	int d = *(int *)ctx;

	if (x->s.peak[d] != y->s.peak[d])
		return x->s.peak[d] < y->s.peak[d] ? 1 : -1;
	return strcmp(x->path, y->path);
}

static void top_sort(struct top *t)
{
	/* an empty table may have no array yet, and qsort wants one */
	if (t->n)
		qsort_r(t->e, t->n, sizeof(*t->e), cmp_peak, &t->sort);
}

/*
 * Rescan the tree: new effects opened (and metered), gone ones closed; then
 * read them all. The whole tree every refresh: an effect lives a second or
 * two, and one that appears between two scans must show at the next.
 */
static int top_refresh(struct top *t)
{
	uint64_t now;
	size_t i, kept = 0;
	int err;

	for (i = 0; i < t->n; i++)
		t->e[i]->seen = false;
	err = bm_view_scan(t->root, on_dir, t);
	if (err) {
		t->failed = t->failed ? t->failed : "read the cgroup tree";
		return err;
	}
	now = bm_now_ns();
	for (i = 0; i < t->n; i++) {
		if (!t->e[i]->seen) {
			eff_free(t, t->e[i]);
			continue;
		}
		t->e[i]->ok = !bm_view_sample(t->e[i]->l, t->e[i]->cg, now, &t->e[i]->s);
		t->e[kept++] = t->e[i];
	}
	t->n = kept;
	top_sort(t);
	return 0;
}

static const char *fmt_runtime(double s, char *buf, size_t len)
{
	unsigned int t = (unsigned int)s;

	if (s < 60)
		snprintf(buf, len, "%.1fs", s);
	else if (s < 3600)
		snprintf(buf, len, "%um%02us", t / 60, t % 60);
	else
		snprintf(buf, len, "%uh%02um", t / 3600, t / 60 % 60);
	return buf;
}

#define ROW_FMT "%-24s %-12s %7s %6s %6s %7s %7s %6s %6s %8s %8s %7s %7s %8s %8s %8s %8s  %s"

/* Column order: what people look at first (CPU, memory) leftmost; disk read and write last. */
#define N_COLS 7
static const int cols[N_COLS] = {
	BM_DIM_CPU, BM_DIM_MEM, BM_DIM_PIDS, BM_DIM_NET, BM_DIM_RUNQ, BM_DIM_IO_READ, BM_DIM_IO_WRITE,
};

static void fmt_row(const struct eff *e, char *buf, size_t len)
{
	char v[N_COLS][2][24], rt[16], st[16];
	const char *state;
	int i;

	for (i = 0; i < N_COLS; i++) {
		bm_fmt_value(cols[i], e->s.cur[cols[i]], v[i][0], sizeof(v[i][0]));
		bm_fmt_value(cols[i], e->s.peak[cols[i]], v[i][1], sizeof(v[i][1]));
	}
	/* '*': counted by top's own meter, from when top saw it (the header says so) */
	state = !e->ok ? "unmetered" : e->s.frozen ? "frozen" : e->s.ended ? "ended" : "running";
	snprintf(st, sizeof(st), "%s%s", state, e->ok && e->priv ? "*" : "");
	snprintf(buf, len, ROW_FMT, e->id, e->tenant[0] ? e->tenant : "-",
		 e->ok ? fmt_runtime(e->s.runtime_s, rt, sizeof(rt)) : "-", v[0][0], v[0][1],
		 v[1][0], v[1][1], v[2][0], v[2][1], v[3][0], v[3][1], v[4][0], v[4][1], v[5][0],
		 v[5][1], v[6][0], v[6][1], st);
}

/* The first line: time, count, sort, and whose counts these are (they may start late). */
static void fmt_header(const struct top *t, char *buf, size_t len)
{
	char clock[16], since[16], meter[PATH_MAX + 128];
	time_t now = time(NULL), start = (time_t)(t->started_wall_ns / BM_NSEC_PER_SEC);
	struct tm tm;

	strftime(clock, sizeof(clock), "%H:%M:%S", localtime_r(&now, &tm));
	strftime(since, sizeof(since), "%H:%M:%S", localtime_r(&start, &tm));
	if (!t->vm.pinned)
		snprintf(meter, sizeof(meter),
			 "top's own meter (none pinned at %s): counts start when top started (%s)",
			 t->vm.pin_dir, since);
	else if (t->vm.priv)
		snprintf(meter, sizeof(meter),
			 "meter pinned at %s; * not the agent's: counted since top started (%s)",
			 t->vm.pin_dir, since);
	else
		snprintf(meter, sizeof(meter), "meter pinned at %s", t->vm.pin_dir);
	snprintf(buf, len, "burstmeter top %s | %zu effect%s | sort: %s peak | %s", clock, t->n,
		 t->n == 1 ? "" : "s", bm_window_dim_short(t->sort), meter);
}

static void fmt_columns(char *buf, size_t len)
{
	snprintf(buf, len, ROW_FMT, "ID", "TENANT", "TIME", "CPU", "peak", "MEM", "peak", "TASKS",
		 "peak", "NET", "peak", "RUNQ", "peak", "READ", "peak", "WRITE", "peak", "STATE");
}

#define VALUES_NOTE \
	"each: last full window, then peak; CPU in cores, NET sent per s, RUNQ in ms waited, " \
	"READ/WRITE disk bytes per s"

static void print_table(const struct top *t)
{
	char buf[PATH_MAX + 512];
	size_t i;

	fmt_header(t, buf, sizeof(buf));
	printf("%s\n%s\n", buf, VALUES_NOTE);
	fmt_columns(buf, sizeof(buf));
	printf("%s\n", buf);
	for (i = 0; i < t->n; i++) {
		fmt_row(t->e[i], buf, sizeof(buf));
		printf("%s\n", buf);
	}
}

static json_t *dims_json(const double v[BM_DIM__MAX])
{
	json_t *o = json_object();
	int d;

	for (d = 0; d < BM_DIM__MAX; d++)
		json_object_set_new(o, bm_window_dim_name(d), json_real(v[d]));
	return o;
}

/*
 * One effect, with the outcome's names for the dimensions. "meter" says who
 * counted it: the agent ("agent"), top itself from when it saw it ("top"),
 * or nobody (null: the values are missing, not zero).
 */
static json_t *eff_json(const struct eff *e)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s?, s:b, s:b, s:b}", "id", e->id, "tenant",
			      e->tenant, "cgroup", e->path, "meter",
			      e->ok ? (e->priv ? "top" : "agent") : NULL,
			      "counts_since_top", e->priv, "frozen", e->s.frozen, "ended",
			      e->s.ended);

	if (o && e->ok) {
		json_object_set_new(o, "runtime_seconds", json_real(e->s.runtime_s));
		json_object_set_new(o, "window_ms", json_real(e->s.window_ns / 1e6));
		json_object_set_new(o, "current", dims_json(e->s.cur));
		json_object_set_new(o, "peak", dims_json(e->s.peak));
	}
	return o;
}

static int print_json(struct top *t)
{
	json_t *root, *arr = json_array();
	size_t i;
	int err;

	for (i = 0; arr && i < t->n; i++)
		json_array_append_new(arr, eff_json(t->e[i]));
	root = json_pack("{s:{s:s, s:b, s:b}, s:o}", "meter", "pin_dir", t->vm.pin_dir, "pinned",
			 t->vm.pinned != NULL, "private", t->vm.priv != NULL, "effects", arr);
	err = !root || json_dumpf(root, stdout, JSON_COMPACT | JSON_REAL_PRECISION(9)) ||
	      putchar('\n') == EOF;
	json_decref(root);
	t->failed = err ? "write JSON" : t->failed;
	return err ? -EIO : 0;
}

static int snapshot(struct top *t)
{
	uint64_t step = t->interval_ms * BM_NSEC_PER_MSEC, start = bm_now_ns(), since;
	int err;

	/*
	 * Top's own meter has seen nothing yet: it meters a while (from when it
	 * loaded), rescanning at the interval so that an effect that starts
	 * meanwhile is metered from then on.
	 */
	for (;;) {
		err = top_refresh(t);
		since = t->vm.priv ? t->vm.priv_since_ns : start;
		if (err || (t->vm.pinned && !t->vm.priv) ||
		    bm_now_ns() >= since + BM_VIEW_SAMPLE_NS)
			break;
		bm_view_sleep(step);
	}
	if (err || t->json)
		return err ? err : print_json(t);
	print_table(t);
	return 0;
}

/* ------------------------------------------------------------------ live */

static void draw(struct top *t)
{
	size_t rows = LINES > TABLE_ROW ? (size_t)(LINES - TABLE_ROW) : 0, i;
	char buf[PATH_MAX + 512];
	int y;

	if (t->scroll + rows > t->n)
		t->scroll = t->n > rows ? t->n - rows : 0;
	erase();
	fmt_header(t, buf, sizeof(buf));
	mvaddnstr(0, 0, buf, COLS);
	mvaddnstr(1, 0, VALUES_NOTE "   keys: c m p n r sort, j/k or arrows scroll, q quit", COLS);
	fmt_columns(buf, sizeof(buf));
	mvaddnstr(2, 0, buf, COLS);
	mvchgat(2, 0, -1, A_REVERSE, 0, NULL);
	for (i = t->scroll, y = TABLE_ROW; i < t->n && y < LINES; i++, y++) {
		fmt_row(t->e[i], buf, sizeof(buf));
		mvaddnstr(y, 0, buf, COLS);
	}
	refresh();
}

/* A key: true to quit. Sort keys are the first letters of the dimensions' short names. */
static bool on_key(struct top *t, int ch)
{
	size_t page = LINES > TABLE_ROW ? (size_t)(LINES - TABLE_ROW) : 1;
	int d;

	if (ch == 'q' || ch == 'Q')
		return true;
	if (ch == 'j' || ch == KEY_DOWN)
		t->scroll++;
	else if ((ch == 'k' || ch == KEY_UP) && t->scroll)
		t->scroll--;
	else if (ch == KEY_NPAGE || ch == ' ')
		t->scroll += page;
	else if (ch == KEY_PPAGE)
		t->scroll = t->scroll > page ? t->scroll - page : 0;
	for (d = 0; d < BM_DIM__MAX; d++) {
		if (ch == bm_window_dim_short(d)[0]) {
			t->sort = d;
			top_sort(t);
		}
	}
	return false;
}

static int live(struct top *t)
{
	uint64_t period = t->interval_ms * BM_NSEC_PER_MSEC, next = 0, now;
	/* newterm, not initscr: initscr exits the process on an unknown TERM */
	SCREEN *scr = isatty(0) && isatty(1) ? newterm(NULL, stdout, stdin) : NULL;
	int err = 0, ch;

	if (!scr) {
		t->failed = "start the screen (it needs a terminal and a known TERM; try --once)";
		return -ENOTTY;
	}
	/* cbreak, not raw: Ctrl-C and Ctrl-Z stay signals (SIGINT is caught, SIGTSTP ncurses') */
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	while (!bm_view_stopped()) {
		now = bm_now_ns();
		if (now >= next) {
			err = top_refresh(t);
			if (err)
				break;
			draw(t);
			/* a fixed beat; after a stall (suspended, slow tree) start over from now */
			next = next && next + period > now ? next + period : now + period;
		}
		/* getch() returns early on a key, a resize or a signal (no SA_RESTART) */
		timeout((int)((next - now + BM_NSEC_PER_MSEC - 1) / BM_NSEC_PER_MSEC));
		ch = getch();
		if (ch != ERR && on_key(t, ch))
			break;
		if (ch != ERR)
			draw(t);
	}
	endwin();
	delscreen(scr);
	return err;
}

static const char top_usage[] =
"Usage: burstmeter top [--pin-dir DIR] [--once] [--json] [--sort DIM] [--interval MS]\n"
"The running effects (burstmeter.* cgroups): last full window and peak of CPU, memory,\n"
"tasks, send rate and run-queue wait, how long each has run, whether it is frozen. Reads\n"
"the agent's pinned meter; top meters the effects it does not (all, with no agent) itself.\n"
"\n"
"  --pin-dir DIR   the agent's pinned meter (default " BM_AGENT_PIN_DIR ")\n"
"  --once          print one table and exit (with top's own meter: after 1 s of metering)\n"
"  --json          print one JSON object {\"effects\": [...]} and exit\n"
"  --sort DIM      cpu, mem, pids, net, runq, ior, iow, iops or dirty: by its peak (default cpu)\n"
"  --interval MS   refresh period in ms, 10 to 60000 (default 100)\n"
"Keys: c m p n r sort by that peak, j/k or arrows scroll, q quits.\n"
"\n"
"EXAMPLES\n"
"  burstmeter top\n"
"  burstmeter top --once\n"
"  burstmeter top --json | jq '.effects[] | {id, peak}'\n";

/* Returns -1 to go on, else the exit status (0 after --help, 2 on bad usage). */
static int top_args(int argc, char **argv, struct top *t)
{
	static const struct option opts[] = {
		{ "pin-dir", required_argument, NULL, 'p' }, { "once", no_argument, NULL, '1' },
		{ "json", no_argument, NULL, 'j' }, { "sort", required_argument, NULL, 's' },
		{ "interval", required_argument, NULL, 'i' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
		if (c == 'h')
			return fputs(top_usage, stdout), 0;
		if (c == 'p' && optarg[0] != '/')
			return bm_view_bad_value("top", "--pin-dir", optarg, "an absolute path");
		if (c == 's' && (t->sort = bm_view_dim(optarg)) < 0)
			return bm_view_bad_value("top", "--sort", optarg,
						 "cpu, mem, pids, net, runq, ior, iow, iops or dirty");
		if (c == 'i' && bm_parse_u64(optarg, 10, 60000, &t->interval_ms))
			return bm_view_bad_value("top", "--interval", optarg,
						 "milliseconds, 10 to 60000");
		if (c == ':' || c == '?')
			return bm_view_getopt_error("top", c, argv);
		t->pin_dir = c == 'p' ? optarg : t->pin_dir;
		t->once |= c == '1';
		t->json |= c == 'j';
		/* from --json on, errors are {"error": ...}: scripts never parse prose */
		bm_log_set_json(t->json);
	}
	if (optind < argc) {
		bm_err("unexpected argument '%s' (see 'burstmeter top --help')", argv[optind]);
		return BM_EXIT_USAGE;
	}
	return -1;
}

int bm_cmd_top(int argc, char **argv)
{
	struct top t = { .sort = BM_DIM_CPU, .interval_ms = 100 };
	int err;
	size_t i;

	err = top_args(argc, argv, &t);
	if (err >= 0)
		return err;
	bm_log_libbpf();
	err = bm_view_root(t.root, sizeof(t.root));
	if (err) {
		bm_err("failed to find cgroup v2: %s", strerror(-err));
		return 1;
	}
	err = bm_view_meter_open(&t.vm, t.pin_dir);
	if (err) {
		bm_err("failed to adopt the meter pinned in %s: %s", t.vm.pin_dir, strerror(-err));
		return 1;
	}
	t.started_wall_ns = bm_wall_ns();
	/* the screen is put back on q, SIGINT, SIGTERM, a lost ssh session (SIGHUP), errors */
	bm_view_catch_stop();
	err = t.once || t.json ? snapshot(&t) : live(&t);
	if (err && t.vm.why[0])
		bm_err("%s", t.vm.why);
	else if (err)
		bm_err("failed to %s: %s", t.failed ? t.failed : "show the effects",
		       strerror(-err));
	for (i = 0; i < t.n; i++)
		eff_free(&t, t.e[i]);
	free(t.e);
	bm_view_meter_close(&t.vm);
	return err ? 1 : 0;
}
